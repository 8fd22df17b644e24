#!/bin/bash
# A real ext4 mounted with -o discard on `trimlab serve`, watched through the live dashboard:
# write files, remove them (online discard sends TRIMs at the journal commit), then look at
# GET / in headless Chromium while the file system is still mounted.
# Usage: ext4-dashboard.sh NBD_URI STATS_HOST:PORT WORKDIR    (needs root, nbdfuse, chromium)
# Leaves WORKDIR/shots/dashboard.html (the page's DOM) and dashboard.png.
set -u
URI=${1:?usage: ext4-dashboard.sh NBD_URI STATS_HOST:PORT WORKDIR}
HTTP=${2:?usage}
W=${3:?usage}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$W/fuse" "$W/mnt"
cleanup() {
  set +e
  mountpoint -q "$W/mnt" && umount "$W/mnt"
  [ -n "${LOOP:-}" ] && losetup -d "$LOOP"
  mountpoint -q "$W/fuse" && fusermount3 -u "$W/fuse"
  [ -n "${FPID:-}" ] && kill "$FPID" 2>/dev/null
}
trap cleanup EXIT
mark() { # POST /phase/NAME with plain bash
  exec 9<>"/dev/tcp/${HTTP%:*}/${HTTP##*:}" || { echo "mark: cannot reach $HTTP"; exit 1; }
  printf 'POST /phase/%s HTTP/1.0\r\n\r\n' "$1" >&9
  cat <&9 >/dev/null
  exec 9<&-
}
nbdfuse -P "$W/nbdfuse.pid" "$W/fuse/disk" "$URI" 2> "$W/nbdfuse.err" &
FPID=$!
for i in $(seq 100); do [ -s "$W/nbdfuse.pid" ] && break; sleep 0.1; done
[ -e "$W/fuse/disk" ] || { echo "nbdfuse failed: $(cat "$W/nbdfuse.err")"; exit 1; }
LOOP=$(losetup -f --show --sector-size 4096 "$W/fuse/disk") || exit 1
mark mkfs;   mkfs.ext4 -F -q -E nodiscard,lazy_itable_init=0 "$LOOP" || exit 1
mark mount;  mount -o discard "$LOOP" "$W/mnt" || exit 1
mark write
for i in $(seq 10); do dd if=/dev/urandom of="$W/mnt/f$i" bs=1M count=1 status=none; done
sync -f "$W/mnt"
mark rm;     rm -f "$W"/mnt/f*; sync -f "$W/mnt"; sleep 1; sync -f "$W/mnt"
"$HERE/../../scripts/dashboard-screenshot.sh" "$HTTP" "$W/shots" || exit 1
echo "dashboard: done"
