#!/bin/bash
# The discard-pattern script of issue 12 item 7, run by a real kernel file system on an NBD
# export (ext4 | btrfs | xfs -> loop device -> nbdfuse file -> NBD), one phase marker per step
# so that `trimlab serve --stats-http` (MARK_HTTP=HOST:PORT) splits its metrics and its
# `--record` trace into phases:
#   mkfs      mkfs with its discard of the whole device (ext4: -E discard)
#   mount     first mount with online discard (ext4/xfs: -o discard, btrfs: -o discard=async),
#             then SETTLE seconds (ext4lazyinit zeroes the inode tables in this time)
#   write     24 files of 1 MiB and 64 of 12 KiB, interleaved, then sync
#   rm        every even 1 MiB file and every odd 12 KiB file; sync; WAIT_RM seconds (one
#             journal commit for ext4 and XFS; btrfs' async discard waits 120 s); sync
#   fstrim    fstrim -v (the kernel's trimmed byte count goes to stdout)
#   remount   umount; mount with the same options
#   fstrim2   fstrim -v again
# Usage: discard-pattern.sh ext4|btrfs|xfs NBD_URI WORKDIR. Needs root and the packages of
# .ci/run. tests/data/discard-patterns/record.sh runs it against `trimlab serve --record`.
set -u
FS=${1:?usage: discard-pattern.sh ext4|btrfs|xfs NBD_URI WORKDIR}
URI=${2:?usage}
W=${3:?usage}
. "$(dirname "$0")/lib.sh"
case "$FS" in
  ext4) MKFS=(mkfs.ext4 -F -q -E discard); OPTS=discard; WAIT_RM=${WAIT_RM:-7} ;;
  xfs) MKFS=(mkfs.xfs -f -q); OPTS=discard; WAIT_RM=${WAIT_RM:-7} ;;
  btrfs) MKFS=(mkfs.btrfs -f -q); OPTS=discard=async; WAIT_RM=${WAIT_RM:-200} ;;
  *) echo "unknown file system $FS"; exit 2 ;;
esac
mkdir -p "$W/mnt"
trap 'release "$W"' EXIT
attach "$URI" "$W/fuse" || exit 1
echo "loop=$LOOP discard_max_bytes=$(cat /sys/block/${LOOP#/dev/}/queue/discard_max_bytes)" \
  "discard_granularity=$(cat /sys/block/${LOOP#/dev/}/queue/discard_granularity)"

mark mkfs;    "${MKFS[@]}" "$LOOP" || { echo "MKFS FAILED"; exit 1; }
mark mount;   mount -o "$OPTS" "$LOOP" "$W/mnt" || exit 1
sleep "${SETTLE:-10}"
mark write
n=0
for i in $(seq 1 64); do
  head -c 12288 /dev/urandom > "$W/mnt/s$i"
  # three 1 MiB files after every eight small ones' first three: 24 in all, interleaved
  if [ $((i % 8)) -lt 3 ]; then n=$((n + 1)); head -c 1048576 /dev/urandom > "$W/mnt/f$n"; fi
done
sync -f "$W/mnt"
ls "$W/mnt" | wc -l
mark rm
for i in $(seq 2 2 24); do rm -f "$W/mnt/f$i"; done
for i in $(seq 1 2 63); do rm -f "$W/mnt/s$i"; done
sync -f "$W/mnt"; sleep "$WAIT_RM"; sync -f "$W/mnt"
mark fstrim;  echo "fstrim: $(fstrim -v "$W/mnt")"
mark remount; umount "$W/mnt"; mount -o "$OPTS" "$LOOP" "$W/mnt" || exit 1
sleep 2
mark fstrim2; echo "fstrim2: $(fstrim -v "$W/mnt")"
mark done;    umount "$W/mnt"
