#!/bin/bash
# Shared pieces of the real-client scripts: attach an NBD export as a loop device through
# nbdfuse (attach / detach / release), and mark phases in `trimlab serve --stats-http` (mark, http_post).
# Sourced, not run. Needs root and the packages of .ci/run's NBD_PACKAGES.

# http_post PATH: POST to MARK_HTTP=HOST:PORT with plain bash (no curl); prints the answer.
http_post() {
  exec 9<>"/dev/tcp/${MARK_HTTP%:*}/${MARK_HTTP##*:}" || { echo "cannot reach $MARK_HTTP"; return 1; }
  printf 'POST %s HTTP/1.0\r\n\r\n' "$1" >&9
  cat <&9
  exec 9<&-
}

mark() {
  echo "#### MARK $* $(date +%H:%M:%S.%N)"
  [ -n "${MARK_LOG:-}" ] && echo "#### MARK $* $(date +%H:%M:%S.%N)" >> "$MARK_LOG"
  if [ -n "${MARK_HTTP:-}" ]; then http_post "/phase/$1" > /dev/null || exit 1; fi
  return 0
}

# attach URI DIR: nbdfuse exposes the export as DIR/disk, a loop device (4 KiB sectors) on
# top; sets LOOP and FPID.
attach() {
  mkdir -p "$2"
  rm -f "$2.pid"
  nbdfuse -P "$2.pid" "$2/disk" "$1" 2> "$2.err" &
  FPID=$!
  for _ in $(seq 100); do [ -s "$2.pid" ] && break; sleep 0.1; done
  [ -e "$2/disk" ] || { echo "nbdfuse failed: $(cat "$2.err")"; return 1; }
  LOOP=$(losetup -f --show --sector-size 4096 "$2/disk") || return 1
}

# detach DIR: undoes attach (after the file system on LOOP is unmounted).
detach() {
  [ -n "${LOOP:-}" ] && losetup -d "$LOOP"
  LOOP=
  mountpoint -q "$1" && { fusermount3 -u "$1" 2>/dev/null || fusermount3 -uz "$1"; }
  [ -n "${FPID:-}" ] && kill "$FPID" 2>/dev/null
  FPID=
  return 0
}

# release W: the scripts' exit trap for a file system mounted on W/mnt over attach's W/fuse:
# unmounts it if still mounted, then detaches.
release() {
  set +e
  mountpoint -q "$1/mnt" && umount "$1/mnt"
  detach "$1/fuse"
}
