#!/bin/bash
# Issue 22's workload A on the machine's kernel, traced: ext4 -o discard on a 1 GiB loop device
# (4 KiB sectors, as the NBD rig's), mkfs -E discard, mount, 10 s, 8 directories x 50 files of
# 24 KiB, sync; then `rm -rf d3`, sync, 7 s, sync. ftrace (a private instance) records what ext4
# frees (ext4_mballoc_free: the unlink order, which is readdir's hash order and so differs per
# mkfs) and every discard ext4 issues (ext4_trim_extent: one bio each, as an NBD TRIM command).
# Output (stdout): the kernel, then per freed extent `free FILE GROUP START COUNT` (FILE: the
# file's index in creation order, d*50+f; -1 for the directory's block) and per discard
# `trim GROUP START COUNT`, in order. Usage (root): trace-ext4-rm-dir.sh WORKDIR > FILE
set -eu
W=${1:?usage: trace-ext4-rm-dir.sh WORKDIR}
mkdir -p "$W/mnt"
rm -f "$W/img"; truncate -s 1G "$W/img"
LOOP=$(losetup -f --show --sector-size 4096 "$W/img")
T=/sys/kernel/tracing/instances/trimlab-rm-dir-$$
EV="ext4/ext4_mballoc_free ext4/ext4_trim_extent"
cleanup() {
  for e in $EV; do [ -e "$T/events/$e/enable" ] && echo 0 > "$T/events/$e/enable"; done
  [ -d "$T" ] && rmdir "$T"
  mountpoint -q "$W/mnt" && umount "$W/mnt"
  losetup -d "$LOOP"; rm -f "$W/img"
}
trap cleanup EXIT
mkdir "$T"
mkfs.ext4 -F -q -E discard "$LOOP"
mount -o discard "$LOOP" "$W/mnt"
sleep 10
for d in $(seq 0 7); do
  mkdir "$W/mnt/d$d"
  for f in $(seq 0 49); do head -c 24576 /dev/urandom > "$W/mnt/d$d/f$f"; done
done
sync -f "$W/mnt"
declare -A index
for f in $(seq 0 49); do index[$(stat -c %i "$W/mnt/d3/f$f")]=$((3 * 50 + f)); done
dev=$(stat -c '%Hd,%Ld' "$LOOP" 2>/dev/null || true)
dev=$(( $(stat -c '0x%t' "$LOOP") )),$(( $(stat -c '0x%T' "$LOOP") ))
for e in $EV; do echo 1 > "$T/events/$e/enable"; done
rm -rf "$W/mnt/d3"
sync -f "$W/mnt"; sleep 7; sync -f "$W/mnt"
for e in $EV; do echo 0 > "$T/events/$e/enable"; done
echo "# kernel: $(uname -sr); e2fsprogs $(dpkg-query -W -f '${Version}' e2fsprogs); tests/realclient/trace-ext4-rm-dir.sh"
grep "dev $dev " "$T/trace" | while read -r line; do
  if [[ $line =~ ext4_mballoc_free:.*inode\ ([0-9]+)\ extent\ ([0-9]+)/([0-9]+)/([0-9]+) ]]; then
    echo "free ${index[${BASH_REMATCH[1]}]:--1} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]} ${BASH_REMATCH[4]}"
  elif [[ $line =~ ext4_trim_extent:.*group\ ([0-9]+),\ start\ ([0-9]+),\ len\ ([0-9]+) ]]; then
    echo "trim ${BASH_REMATCH[1]} ${BASH_REMATCH[2]} ${BASH_REMATCH[3]}"
  fi
done
