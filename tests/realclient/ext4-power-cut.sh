#!/bin/bash
# Power loss under a real ext4: files written with fsync while a second writer keeps unflushed
# O_DIRECT writes in flight, then `POST /power-cut` to trimlab serve mid-workload. The old
# mount only sees I/O errors; a new nbdfuse + loop reconnects, mounting replays the journal,
# every fsync'd file must read back intact and `e2fsck -fn` must find nothing.
# Usage: ext4-power-cut.sh NBD_URI WORKDIR  with MARK_HTTP=HOST:PORT (trimlab serve
#        --stats-http, started with --power-loss). Prints "power-cut: {json}" and "fsynced N".
set -u
URI=${1:?usage: ext4-power-cut.sh NBD_URI WORKDIR}
W=${2:?usage}
NSYNC=${NSYNC:-24}
: "${MARK_HTTP:?MARK_HTTP=HOST:PORT of trimlab serve --stats-http is required}"
. "$(dirname "$0")/lib.sh"
mkdir -p "$W/mnt" "$W/mnt2"
BG=
cleanup() {
  set +e
  [ -n "$BG" ] && kill "$BG" 2>/dev/null && wait "$BG" 2>/dev/null
  mountpoint -q "$W/mnt" && umount -l "$W/mnt"
  mountpoint -q "$W/mnt2" && umount "$W/mnt2"
  detach "$CUR"
}
trap cleanup EXIT
CUR=$W/fuse
attach "$URI" "$CUR" || exit 1
mark mkfs;    mkfs.ext4 -F -q -E discard,lazy_itable_init=0,lazy_journal_init=0 "$LOOP" || exit 1
mark mount;   mount -o discard "$LOOP" "$W/mnt" || exit 1
mkdir "$W/mnt/s" "$W/mnt/bg" && sync -f "$W/mnt"
mark workload
# The unflushed writer: O_DIRECT reaches the drive at once and nothing flushes it; it also
# deletes (discard) what it wrote two rounds before.
( i=0; while :; do
    i=$((i + 1))
    dd if=/dev/urandom of="$W/mnt/bg/b$i" bs=256k count=4 oflag=direct status=none 2>/dev/null || exit 0
    echo "$i" > "$W/bg.done"   # outside the file system under test
    rm -f "$W/mnt/bg/b$((i - 2))"
  done ) &
BG=$!
: > "$W/fsynced.md5"
for i in $(seq "$NSYNC"); do
  dd if=/dev/urandom of="$W/mnt/s/f$i" bs=64k count=$((1 + i % 5)) conv=fsync status=none || break
  sync "$W/mnt/s" || break   # fsync the directory: the new name is durable too
  (cd "$W/mnt" && md5sum "s/f$i") >> "$W/fsynced.md5"
done
# The last fsync flushed the drive's buffer: wait (bounded) until the writer has completed a
# write after it, so the cut always finds unflushed data, however loaded the machine is.
before=$(cat "$W/bg.done" 2>/dev/null || echo 0)
for _ in $(seq 200); do
  [ "$(cat "$W/bg.done" 2>/dev/null || echo 0)" -gt "$before" ] && break
  sleep 0.05
done
mark cut
echo "power-cut: $(http_post /power-cut | tail -n 1)"
echo "fsynced $(wc -l < "$W/fsynced.md5")"
kill "$BG" 2>/dev/null; wait "$BG" 2>/dev/null; BG=
# The old stack goes away as after a real power loss: its I/O fails, nothing is written.
umount -l "$W/mnt"
detach "$W/fuse"
mark reconnect
CUR=$W/fuse2
attach "$URI" "$CUR" || exit 1
mount "$LOOP" "$W/mnt2" || { echo "MOUNT FAILED after the cut"; exit 1; }
(cd "$W/mnt2" && md5sum --quiet -c "$W/fsynced.md5") || { echo "FSYNCED DATA LOST"; exit 1; }
umount "$W/mnt2"
mark fsck
e2fsck -fn "$LOOP" > "$W/fsck.log" 2>&1 || { cat "$W/fsck.log"; echo "FSCK FAILED"; exit 1; }
echo "fsck clean"
mark done
