#!/bin/bash
# XFS or btrfs on an NBD export, as ext4-over-nbd.sh does for ext4: mkfs (which discards the
# device), mount -o discard, write, checksums, rm, fstrim, remount, checksums again, and the
# file system's own checker (xfs_repair -n, btrfs check --readonly).
# Usage: fs-over-nbd.sh xfs|btrfs NBD_URI WORKDIR   (MARK_HTTP=HOST:PORT marks trimlab phases)
set -u
FS=${1:?usage: fs-over-nbd.sh xfs|btrfs NBD_URI WORKDIR}
URI=${2:?usage}
W=${3:?usage}
NFILES=${NFILES:-20}
. "$(dirname "$0")/lib.sh"
mkdir -p "$W/mnt"
trap 'release "$W"' EXIT
case "$FS" in
  xfs) MKFS=(mkfs.xfs -f -q); CHECK=(xfs_repair -n) ;;
  btrfs) MKFS=(mkfs.btrfs -f -q); CHECK=(btrfs check --readonly) ;;
  *) echo "unknown file system $FS"; exit 2 ;;
esac
attach "$URI" "$W/fuse" || exit 1

mark mkfs;            "${MKFS[@]}" "$LOOP" || { echo "MKFS FAILED"; exit 1; }
mark mount-discard;   mount -o discard "$LOOP" "$W/mnt" || exit 1
mark write
for i in $(seq "$NFILES"); do dd if=/dev/urandom of="$W/mnt/f$i" bs=1M count=1 status=none; done
sync -f "$W/mnt"
(cd "$W/mnt" && md5sum f1 f2 > "$W/keep.md5")
mark rm-discard;      rm -f "$W"/mnt/f[3-9]* ; sync -f "$W/mnt"; sleep 2; sync -f "$W/mnt"
mark fstrim;          fstrim -v "$W/mnt"
mark remount;         umount "$W/mnt"; mount "$LOOP" "$W/mnt" || exit 1
mark verify;          (cd "$W/mnt" && md5sum -c "$W/keep.md5") || { echo "DATA MISMATCH after remount"; exit 1; }
mark check;           umount "$W/mnt"; "${CHECK[@]}" "$LOOP" > "$W/check.log" 2>&1 || { cat "$W/check.log"; echo "CHECK FAILED"; exit 1; }
mark done
