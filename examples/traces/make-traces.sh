#!/bin/bash
# Records the sample traces of this folder: a real Linux ext4 on `trimlab serve --record`
# (ext4 -> loop device -> nbdfuse file -> NBD -> trimlab), one trace per scenario.
# Usage (root, with the packages of .ci/run: nbdfuse, e2fsprogs, util-linux):
#   examples/traces/make-traces.sh [TRIMLAB_BINARY]      (default: target/release/trimlab)
# Scenarios (each starts from a fresh drive):
#   ext4-smallfiles-discard    mount -o discard; fill 70 % with 64 KiB files, then rounds of
#                              deleting a random 40 % of them and writing as many new ones
#   ext4-smallfiles-fstrim     the same without discard, fstrim after each round
#   ext4-smallfiles-nodiscard  the same, never trimmed
#   ext4-bigfiles-discard      mount -o discard; rounds of writing 4 MiB files, deleting most
#   ext4-copy                  one large copy, nothing deleted, mounted without discard
#   ext4-mkfs-discard          mkfs.ext4 with its default discard of the whole drive, then a copy
set -eu
cd "$(dirname "$0")/../.."
BIN=${1:-target/release/trimlab}
OUT=examples/traces
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

fill_small() { # $1 = mount point: 70 % of the file system in 64 KiB files
  mkdir -p "$1/d"
  for i in $(seq 1 5600); do head -c 65536 /dev/urandom > "$1/d/f$i"; done
  sync -f "$1"
}

churn_small() { # $1 = mount point, $2 = round: delete a random 40 %, write as many new files
  local files
  mapfile -t files < <(ls "$1/d" | shuf --random-source=<(yes "$2"))
  for f in "${files[@]:0:2240}"; do rm -f "$1/d/$f"; done
  sync -f "$1"
  sleep 6 # one journal commit interval: discards of the deleted files go out (-o discard)
  for i in $(seq 1 2240); do head -c 65536 /dev/urandom > "$1/d/r$2-$i"; done
  sync -f "$1"
}

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

small_discard() {
  "${MKFS_QUIET[@]}" "$LOOP"; mount -o discard "$LOOP" "$W/mnt"
  fill_small "$W/mnt"
  for r in 1 2 3 4 5; do churn_small "$W/mnt" "$r"; done
}
small_fstrim() {
  "${MKFS_QUIET[@]}" "$LOOP"; mount "$LOOP" "$W/mnt"
  fill_small "$W/mnt"
  for r in 1 2 3 4 5; do churn_small "$W/mnt" "$r"; fstrim "$W/mnt"; done
}
small_nodiscard() {
  "${MKFS_QUIET[@]}" "$LOOP"; mount "$LOOP" "$W/mnt"
  fill_small "$W/mnt"
  for r in 1 2 3 4 5; do churn_small "$W/mnt" "$r"; done
}
big_discard() {
  "${MKFS_QUIET[@]}" "$LOOP"; mount -o discard "$LOOP" "$W/mnt"
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

record ext4-smallfiles-discard small_discard
record ext4-smallfiles-fstrim small_fstrim
record ext4-smallfiles-nodiscard small_nodiscard
record ext4-bigfiles-discard big_discard
record ext4-copy copy_only
record ext4-mkfs-discard mkfs_discard
