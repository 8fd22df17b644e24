#!/bin/bash
# Records what a real kernel file system sends to the device for a trimlab file-operation script
# (issue 22 item 5): DIR/workload.ops, translated to bash by ops_to_shell.py, runs on FS over a
# fresh `trimlab serve --record` of tests/data/discard-patterns/device.toml (nbdfuse + loop, as
# record-discard-patterns.sh). Phases, each a `mark` (lib.sh) that splits the server's metrics:
#   start     attach (the kernel's partition probe)
#   mkfs      mkfs with the tool's own whole-device discard: every mkfs here discards by
#             default, so it is kept whatever DISCARD is (ext4 says -E discard as
#             discard-pattern.sh does; DISCARD is the mount's policy only)
#   mount     mount -o OPTS, then SETTLE seconds (ext4lazyinit zeroes the inode tables)
#   ...       the script's own `phase` lines (its operations before the first one fall in mount)
#   umount    umount (skipped if the script ended unmounted)
# Kept in DIR: kernel.trims and kernel.phases.json (split_recording.py: the TRIM ranges per
# phase, per-phase NBD counters and the fstrim -v lines), versions.txt and meta.toml. The full
# recording (every WRITE) is not kept. RUN=N names them kernel.runN.* instead (repeat runs).
# Usage (root, the packages of .ci/run):
#   tests/realclient/record-workload.sh ext4|xfs|btrfs nodiscard|discard|async DIR [TRIMLAB]
# Environment: SETTLE (seconds after mount), RUN (repeat number), MKFS_EXTRA (mkfs options).
set -eu
usage="usage: record-workload.sh ext4|xfs|btrfs nodiscard|discard|async DIR [TRIMLAB]"
FS=${1:?$usage}
DISCARD=${2:?$usage}
DIR=${3:?$usage}
cd "$(dirname "$0")/../.."
BIN=${4:-target/release/trimlab}
HERE=tests/realclient
case "$FS" in
  ext4) MKFS="mkfs.ext4 -F -q -E discard"; SETTLE=${SETTLE:-10} ;;
  xfs) MKFS="mkfs.xfs -f -q"; SETTLE=${SETTLE:-5} ;;
  btrfs) MKFS="mkfs.btrfs -f -q"; SETTLE=${SETTLE:-5} ;;
  *) echo "$usage (file system \"$FS\")"; exit 2 ;;
esac
# MKFS_EXTRA: more mkfs options, e.g. ext4's "-U UUID -E hash_seed=UUID" to fix the directory
# hash seed that otherwise differs at every mkfs (kept in meta.toml's mkfs).
MKFS="$MKFS${MKFS_EXTRA:+ $MKFS_EXTRA}"
[ -f "$DIR/workload.ops" ] || { echo "no $DIR/workload.ops"; exit 2; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# The translation first: a bad script stops here, before any server or device.
python3 "$HERE/ops_to_shell.py" --fs "$FS" --discard "$DISCARD" "$DIR/workload.ops" > "$W/workload.sh"
OPTS=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import ops_to_shell as o
print(o.MOUNT_OPTIONS[sys.argv[2]][sys.argv[3]])' "$HERE" "$FS" "$DISCARD")

# rig: attach, mkfs, mount, the translated script, umount; run in a subshell so that its
# exit trap (release) unmounts and detaches whatever happens.
rig() {
  . "$HERE/lib.sh"
  mkdir -p "$W/work/mnt"
  trap 'release "$W/work"' EXIT
  attach "$URI" "$W/work/fuse" || exit 1
  echo "loop=$LOOP discard_max_bytes=$(cat /sys/block/${LOOP#/dev/}/queue/discard_max_bytes)" \
    "discard_granularity=$(cat /sys/block/${LOOP#/dev/}/queue/discard_granularity)"
  mark mkfs;  $MKFS "$LOOP" || { echo "MKFS FAILED"; exit 1; }
  mark mount; mount -o "$OPTS" "$LOOP" "$W/work/mnt" || exit 1
  sleep "$SETTLE"
  # A fresh bash so that the script's `set -e` holds (it does not inside a `||` list).
  MNT="$W/work/mnt" DEV="$LOOP" bash -c '. "$1"; . "$2"' rig "$HERE/lib.sh" "$W/workload.sh" \
    || { echo "WORKLOAD FAILED"; exit 1; }
  mark umount
  if mountpoint -q "$W/work/mnt"; then umount "$W/work/mnt"; fi
}

: > "$W/serve.out"  # exists before the server opens it, for the wait below
"$BIN" serve tests/data/discard-patterns/device.toml --listen 127.0.0.1:0 --stats-http 127.0.0.1:0 \
  --record "$W/recording.log" --out "$W/metrics" --quiet >> "$W/serve.out" 2> "$W/serve.err" &
spid=$!
for _ in $(seq 100); do [ "$(grep -c 'listening on\|stats on' "$W/serve.out")" -ge 2 ] && break; sleep 0.1; done
URI="nbd://$(sed -n 's/.*listening on \([^ /]*\).*/\1/p' "$W/serve.out" | head -1)"
[ "$URI" != "nbd://" ] || { echo "trimlab serve did not start: $(cat "$W/serve.err")"; kill "$spid"; exit 1; }
export MARK_HTTP
MARK_HTTP=$(sed -n 's|.*stats on http://\([^ /]*\).*|\1|p' "$W/serve.out" | head -1)
start=$(date +%s)
( rig ) > "$W/script.log" 2>&1 || { cat "$W/script.log" "$W/serve.err"; kill "$spid"; exit 1; }
kill -TERM "$spid"
wait "$spid"
out="$DIR/kernel${RUN:+.run$RUN}"
python3 "$HERE/split_recording.py" "$W/recording.log" "$W/metrics/metrics.json" \
  "$out.trims" "$out.phases.json" "$W/script.log"
cat > "$DIR/meta.toml" <<EOF
# How the kernel recordings here were made: tests/realclient/record-workload.sh $FS $DISCARD $DIR
# (workload.ops through tests/realclient/ops_to_shell.py; device tests/data/discard-patterns/device.toml).
fs = "$FS"
discard = "$DISCARD"
mount_options = "$OPTS"
mkfs = "$MKFS"
settle_s = $SETTLE
EOF
{
  echo "kernel: $(uname -sr)"
  for p in e2fsprogs xfsprogs btrfs-progs libnbd-bin util-linux coreutils; do
    echo "$p: $(dpkg-query -W -f '${Version}' "$p")"
  done
  grep '^loop=' "$W/script.log"
} > "$DIR/versions.txt"
echo "$DIR${RUN:+ run $RUN}: $(grep -c -v '^#' "$out.trims") TRIM ranges, $(($(date +%s) - start)) s"
python3 - "$out.phases.json" <<'EOF'
import json, sys
for p in json.load(open(sys.argv[1]))["phases"]:
    print(f"  {p['name']:<10} {p['trim_commands']:>6} TRIM {p['trim_bytes']:>12} B  "
          f"{p['write_zeroes_commands']:>4} WZ {p['write_zeroes_bytes']:>10} B")
EOF
