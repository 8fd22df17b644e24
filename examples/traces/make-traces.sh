#!/bin/bash
# Records the sample traces of this folder: a real Linux ext4 on `trimlab serve --record`
# (ext4 -> loop device -> nbdfuse file -> NBD -> trimlab), one trace per scenario.
# Usage (root, with the packages of .ci/run: nbdfuse, e2fsprogs, util-linux):
#   examples/traces/make-traces.sh [TRIMLAB_BINARY]      (default: target/release/trimlab)
# Scenarios (each starts from a fresh drive):
#   ext4-churn-discard      mount -o discard; rounds of writing 4 MiB files and deleting most
#   ext4-churn-fstrim       the same rounds without discard, fstrim after each round
#   ext4-churn-nodiscard    the same rounds, never trimmed
#   ext4-copy               one large copy, nothing deleted, mounted without discard
#   ext4-mkfs-discard       mkfs.ext4 with its default discard of the whole drive, then a copy
set -eu
cd "$(dirname "$0")/../.."
BIN=${1:-target/release/trimlab}
OUT=examples/traces
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

round_of_churn() { # $1 = mount point, $2 = round number
  for i in $(seq 1 40); do dd if=/dev/urandom of="$1/r$2-f$i" bs=1M count=4 status=none; done
  sync -f "$1"
  # Keep every fourth file of this round; delete the rest.
  for i in $(seq 1 40); do [ $((i % 4)) -eq 0 ] || rm -f "$1/r$2-f$i"; done
  sync -f "$1"
  sleep 6 # one journal commit interval: discards of the deleted files go out (-o discard)
}

record() { # $1 = name, $2 = function doing the work on $LOOP / $W/mnt
  local name=$1 work=$2
  rm -f "$W/sock"
  "$BIN" serve "$OUT/device.toml" --unix "$W/sock" --record "$OUT/$name.log" --out "$W/metrics-$name" \
    --quiet > "$W/serve.out" 2>&1 &
  local spid=$!
  for _ in $(seq 100); do [ -S "$W/sock" ] && break; sleep 0.1; done
  mkdir -p "$W/fuse" "$W/mnt"
  nbdfuse -P "$W/fuse.pid" "$W/fuse/disk" "nbd+unix:///?socket=$W/sock" &
  local fpid=$!
  for _ in $(seq 100); do [ -s "$W/fuse.pid" ] && break; sleep 0.1; done
  LOOP=$(losetup -f --show --sector-size 4096 "$W/fuse/disk")
  "$work"
  mountpoint -q "$W/mnt" && umount "$W/mnt"
  losetup -d "$LOOP"
  fusermount3 -u "$W/fuse"
  wait "$fpid" 2>/dev/null || true
  rm -f "$W/fuse.pid"
  kill -TERM "$spid"
  wait "$spid"
  echo "$name: $(grep -c . "$OUT/$name.log") lines, $(grep -c ' trim ' "$OUT/$name.log") TRIMs"
}

# Lazy inode-table init is off so that no background zeroing lands in the traces at random times.
MKFS_QUIET=(mkfs.ext4 -F -q -E nodiscard,lazy_itable_init=0,lazy_journal_init=0)

churn_discard() {
  "${MKFS_QUIET[@]}" "$LOOP"; mount -o discard "$LOOP" "$W/mnt"
  for r in 1 2 3 4 5 6; do round_of_churn "$W/mnt" "$r"; done
}
churn_fstrim() {
  "${MKFS_QUIET[@]}" "$LOOP"; mount "$LOOP" "$W/mnt"
  for r in 1 2 3 4 5 6; do round_of_churn "$W/mnt" "$r"; fstrim "$W/mnt"; done
}
churn_nodiscard() {
  "${MKFS_QUIET[@]}" "$LOOP"; mount "$LOOP" "$W/mnt"
  for r in 1 2 3 4 5 6; do round_of_churn "$W/mnt" "$r"; done
}
copy_only() {
  "${MKFS_QUIET[@]}" "$LOOP"; mount "$LOOP" "$W/mnt"
  for i in $(seq 1 60); do dd if=/dev/urandom of="$W/mnt/c$i" bs=1M count=4 status=none; done
  sync -f "$W/mnt"
}
mkfs_discard() {
  mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 "$LOOP"; mount "$LOOP" "$W/mnt"
  for i in $(seq 1 60); do dd if=/dev/urandom of="$W/mnt/c$i" bs=1M count=4 status=none; done
  sync -f "$W/mnt"
}

record ext4-churn-discard churn_discard
record ext4-churn-fstrim churn_fstrim
record ext4-churn-nodiscard churn_nodiscard
record ext4-copy copy_only
record ext4-mkfs-discard mkfs_discard
