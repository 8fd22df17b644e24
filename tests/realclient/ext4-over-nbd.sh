#!/bin/bash
# Run a real Linux ext4 on an NBD export: ext4 -> loop device -> file exposed by nbdfuse -> NBD.
# Usage: ext4-over-nbd.sh NBD_URI WORKDIR
#   NBD_URI  e.g. nbd://127.0.0.1:10809 (any NBD server: trimlab's emulator, or for comparison
#            `nbdkit -i 127.0.0.1 -p 10809 --filter=log memory size=1G logfile=... logappend=true`)
# What reaches the server (seen on this machine's kernel):
#   discard (mkfs, mount -o discard, fstrim) -> loop fallocate(PUNCH_HOLE) -> NBD TRIM
#   ext4 lazy inode-table zeroing just after mount -> PUNCH_HOLE -> NBD TRIM (so trimmed blocks
#   must read back as zeros); mkfs zeroing -> ZERO_RANGE -> NBD WRITE_ZEROES; fsync / journal
#   commit -> NBD FLUSH; FUA never arrives (loop reports fua=0).
# Pitfalls: if the server refuses TRIM once, the loop device turns discard off for good;
#   nbdfuse opens 4 connections when the server advertises multi-conn; use 4 KiB sectors.
# Needs root and the packages from install-packages.sh. Prints a phase marker before each step
# (to stdout) so a server-side log can be split into phases; with MARK_HTTP=HOST:PORT it also
# starts a metrics phase of that name in `trimlab serve --stats-http HOST:PORT`, and with
# MARK_LOG=FILE it appends the marker to FILE (the nbdkit log filter's logfile).
# Copied into trimlab from the team's working recipe; tests/realclient.rs runs it.
set -u
URI=${1:?usage: ext4-over-nbd.sh NBD_URI WORKDIR}
W=${2:?usage: ext4-over-nbd.sh NBD_URI WORKDIR}
NFILES=${NFILES:-50}
mkdir -p "$W/fuse" "$W/mnt"
cleanup() {
  set +e
  mountpoint -q "$W/mnt" && umount "$W/mnt"
  [ -n "${LOOP:-}" ] && losetup -d "$LOOP"
  mountpoint -q "$W/fuse" && fusermount3 -u "$W/fuse"
  [ -n "${FPID:-}" ] && kill "$FPID" 2>/dev/null
}
trap cleanup EXIT
mark() {
  echo "#### MARK $* $(date +%H:%M:%S.%N)"
  [ -n "${MARK_LOG:-}" ] && echo "#### MARK $* $(date +%H:%M:%S.%N)" >> "$MARK_LOG"
  if [ -n "${MARK_HTTP:-}" ]; then
    # Plain bash: no curl needed. The endpoint answers one request per connection.
    exec 9<>"/dev/tcp/${MARK_HTTP%:*}/${MARK_HTTP##*:}" || { echo "mark: cannot reach $MARK_HTTP"; exit 1; }
    printf 'POST /phase/%s HTTP/1.0\r\n\r\n' "$1" >&9
    cat <&9 >/dev/null
    exec 9<&-
  fi
  return 0
}

nbdfuse -P "$W/nbdfuse.pid" "$W/fuse/disk" "$URI" 2> "$W/nbdfuse.err" &
FPID=$!
for i in $(seq 100); do [ -s "$W/nbdfuse.pid" ] && break; sleep 0.1; done
[ -e "$W/fuse/disk" ] || { echo "nbdfuse failed: $(cat "$W/nbdfuse.err")"; exit 1; }
LOOP=$(losetup -f --show --sector-size 4096 "$W/fuse/disk") || exit 1
echo "loop=$LOOP discard_max_bytes=$(cat /sys/block/${LOOP#/dev/}/queue/discard_max_bytes)"

mark mkfs;            mkfs.ext4 -F -q -E discard "$LOOP" || exit 1
mark mount-discard;   mount -o discard "$LOOP" "$W/mnt" || exit 1
sleep "${SETTLE:-8}"  # ext4lazyinit zeroes inode tables shortly after mount
mark write
for i in $(seq "$NFILES"); do dd if=/dev/urandom of="$W/mnt/f$i" bs=1M count=1 status=none; done
sync -f "$W/mnt"
md5sum "$W"/mnt/f1 > "$W/f1.md5"
mark fsync;           dd if=/dev/zero of="$W/mnt/small" bs=4k count=1 conv=fsync status=none
mark rm-discard;      rm -f "$W"/mnt/f[2-9]* ; sync -f "$W/mnt"; sleep 6; sync -f "$W/mnt"
mark fstrim;          fstrim -v "$W/mnt"
mark remount;         umount "$W/mnt"; mount "$LOOP" "$W/mnt" || exit 1
mark verify;          md5sum -c "$W/f1.md5" || { echo "DATA MISMATCH after remount"; exit 1; }
mark write-nodiscard
for i in $(seq "$NFILES"); do dd if=/dev/urandom of="$W/mnt/g$i" bs=1M count=1 status=none; done
sync -f "$W/mnt"
mark rm-nodiscard;    rm -f "$W"/mnt/g*; sync -f "$W/mnt"
mark fstrim-batch;    fstrim -v "$W/mnt"
mark fsck;            umount "$W/mnt"; fsck.ext4 -fn "$LOOP" >/dev/null || { echo "FSCK FAILED"; exit 1; }
mark done
