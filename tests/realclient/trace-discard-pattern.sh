#!/bin/bash
# Runs tests/realclient/discard-pattern.sh once for one file system on a fresh `trimlab serve
# --record` with kernel trace events on (tracefs), to see where the discards' timing comes from:
# transaction commits, btrfs' unused block groups and the cleaner, the discard work item and its
# timer, each discard on the loop device (block_rq_issue/complete) and its FUSE round trip to
# nbdfuse. Analysis only: the kept test data is made by record-discard-patterns.sh.
# tests/realclient/discard-trace-summary.py OUT/trace.txt OUT/FS.trims summarises it.
# Usage (root, tracefs, the packages of .ci/run): trace-discard-pattern.sh FS OUTDIR [TRIMLAB]
set -eu
FS=${1:?usage: trace-discard-pattern.sh ext4|btrfs|xfs OUTDIR [TRIMLAB]}
OUT=${2:?usage}
cd "$(dirname "$0")/../.."
BIN=${3:-target/release/trimlab}
T=/sys/kernel/tracing
[ -d "$T/events" ] || mount -t tracefs nodev "$T"
mkdir -p "$OUT"
W=$(mktemp -d)
cleanup() {
  echo 0 > "$T/tracing_on"
  echo > "$T/set_event"
  rm -rf "$W"
}
trap cleanup EXIT
echo 0 > "$T/tracing_on"
echo > "$T/trace"
echo > "$T/set_event"
echo 65536 > "$T/buffer_size_kb"
echo global > "$T/trace_clock"
for e in workqueue:workqueue_queue_work workqueue:workqueue_execute_start \
  block:block_rq_issue block:block_rq_complete fuse:fuse_request_send fuse:fuse_request_end \
  timer:timer_start timer:timer_expire_entry; do
  echo "$e" >> "$T/set_event"
done
if [ "$FS" = btrfs ]; then
  for e in btrfs_transaction_commit btrfs_add_block_group btrfs_add_unused_block_group \
    btrfs_skip_unused_block_group; do
    echo "btrfs:$e" >> "$T/set_event"
  done
fi
if [ "$FS" = xfs ]; then
  # Deferred inode inactivation (fs/xfs/xfs_icache.c) and the log forces whose checkpoints
  # issue the freed extents' discards (xfs_log_cil.c, xfs_discard.c).
  for e in xfs_destroy_inode xfs_inode_set_need_inactive xfs_inodegc_queue xfs_inodegc_worker \
    xfs_inodegc_throttle xfs_inodegc_push xfs_inodegc_flush xfs_inode_inactivating xfs_fs_sync_fs \
    xfs_log_force xfs_extent_busy xfs_discard_extent xfs_free_extent; do
    echo "xfs:$e" >> "$T/set_event"
  done
  echo 'comm == "rm" || comm == "sync"' > "$T/events/syscalls/sys_enter_unlinkat/filter" 2>/dev/null \
    && echo syscalls:sys_enter_unlinkat >> "$T/set_event" || true
fi
# Only discards, btrfs' work queues and delayed-work timers (the tracing buffer stays small).
echo 'rwbs ~ "*D*"' > "$T/events/block/block_rq_issue/filter"
echo 'rwbs ~ "*D*"' > "$T/events/block/block_rq_complete/filter"
echo 'workqueue ~ "btrfs*" || workqueue ~ "xfs*"' > "$T/events/workqueue/workqueue_queue_work/filter"
echo 'function.function == delayed_work_timer_fn' > "$T/events/timer/timer_start/filter"
echo 'function.function == delayed_work_timer_fn' > "$T/events/timer/timer_expire_entry/filter"
"$BIN" serve tests/data/discard-patterns/device.toml --listen 127.0.0.1:0 --stats-http 127.0.0.1:0 \
  --record "$W/recording.log" --out "$W/metrics" --quiet > "$W/serve.out" 2> "$W/serve.err" &
spid=$!
for _ in $(seq 100); do [ "$(grep -c 'listening on\|stats on' "$W/serve.out")" -ge 2 ] && break; sleep 0.1; done
addr=$(sed -n 's/.*listening on \([^ /]*\).*/\1/p' "$W/serve.out" | head -1)
http=$(sed -n 's|.*stats on http://\([^ /]*\).*|\1|p' "$W/serve.out" | head -1)
echo 1 > "$T/tracing_on"
MARK_HTTP=$http bash tests/realclient/discard-pattern.sh "$FS" "nbd://$addr" "$W/work" > "$OUT/script.log" 2>&1 \
  || { cat "$OUT/script.log"; kill "$spid"; exit 1; }
echo 0 > "$T/tracing_on"
kill -TERM "$spid"; wait "$spid"
cat "$T/trace" > "$OUT/trace.txt"
python3 tests/realclient/split_recording.py "$W/recording.log" "$W/metrics/metrics.json" \
  "$OUT/$FS.trims" "$OUT/$FS.phases.json" "$OUT/script.log"
python3 tests/realclient/discard-trace-summary.py "$OUT/trace.txt" "$OUT/$FS.trims"
