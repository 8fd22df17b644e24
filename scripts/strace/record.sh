#!/bin/bash
# Records a real program twice at once (issue 23 item 3): its file operations with
# `strace -f -ttt` (the input of [workload] kind = "strace") and what the Linux kernel's ext4
# sent to the device for them (`trimlab serve --record`, ext4 on NBD as
# tests/realclient/record-workload.sh mounts it). The program runs in the mounted file system,
# so both recordings are of the same run.
#   git-build  git clone of a small local C project (made here), make, rm -rf of the clone
#   sqlite     sqlite3 loads 4,200 rows in 7 transactions, indexes, deletes half, vacuums
# Phases marked in the server: mkfs, mount (then SETTLE s: ext4lazyinit), workload, settle
# (sync, 1 s for the discard worker), umount.
# Kept in DIR: trace.strace (the mount point rewritten to /mnt/strace-root), kernel.log (the
# block recording, fio iolog v3 with `# phase` lines), kernel.metrics.json, versions.txt.
# Usage (root, the packages of .ci/run): scripts/strace/record.sh git-build|sqlite DIR [TRIMLAB]
set -eu
usage="usage: record.sh git-build|sqlite DIR [TRIMLAB]"
WORKLOAD=${1:?$usage}
DIR=$(realpath -m "${2:?$usage}")
cd "$(dirname "$0")/../.."
BIN=$(realpath "${3:-target/release/trimlab}")
HERE=tests/realclient
SETTLE=${SETTLE:-10}
TRACE_SET=%file,%desc,%process,write,pwrite64,fsync,fdatasync,ftruncate,fallocate,sync,syncfs
mkdir -p "$DIR"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

# The programs, run with the mounted file system as working directory.
git_build() {
  local src="$W/src"  # the repository cloned: outside the mount, so its reads are skipped
  mkdir -p "$src" && cd "$src"
  git init -q -b main .
  for i in $(seq 1 10); do
    printf '#include "util.h"\nint f%d(int x) { return util(x) + %d; }\n' "$i" "$i" > "f$i.c"
  done
  printf 'int util(int x);\n' > util.h
  printf '#include "util.h"\nint util(int x) { return x * 3; }\n' > util.c
  { printf 'int main(void) { int s = 0;\n'
    for i in $(seq 1 10); do printf '  extern int f%d(int); s += f%d(%d);\n' "$i" "$i" "$i"; done
    printf '  return s == 0; }\n'; } > main.c
  printf 'OBJ := $(patsubst %%.c,%%.o,$(wildcard *.c))\nprog: $(OBJ)\n\t$(CC) -o $@ $^\n%%.o: %%.c util.h\n\t$(CC) -O1 -c $<\n' > Makefile
  git add -A && git -c user.name=t -c user.email=t@t commit -q -m init
  cd "$MNT"
  cat > "$W/run.sh" <<RUN
set -e
git clone -q "$src" proj
make -s -C proj
./proj/prog || true
sync
rm -rf proj
RUN
}

sqlite_load() {
  cd "$MNT"
  { echo "PRAGMA journal_mode=WAL;"
    echo "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, body BLOB);"
    for b in $(seq 0 6); do
      echo "BEGIN;"
      echo "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 600)"
      echo "INSERT INTO t (name, body) SELECT 'row-$b-' || i, randomblob(200 + (i % 7) * 100) FROM c;"
      echo "COMMIT;"
    done
    echo "CREATE INDEX t_name ON t (name);"
    echo "DELETE FROM t WHERE id % 2 = 0;"
    echo "PRAGMA wal_checkpoint(TRUNCATE);"
    echo "VACUUM;"; } > "$W/load.sql"
  cat > "$W/run.sh" <<RUN
set -e
sqlite3 db.sqlite < "$W/load.sql"
sync
RUN
}

rig() {
  . "$HERE/lib.sh"
  mkdir -p "$W/work/mnt"
  trap 'release "$W/work"' EXIT
  attach "$URI" "$W/work/fuse" || exit 1
  mark mkfs; mkfs.ext4 -F -q -E discard "$LOOP" || exit 1
  mark mount; mount -o discard "$LOOP" "$W/work/mnt" || exit 1
  sleep "$SETTLE"
  MNT="$W/work/mnt"
  case "$WORKLOAD" in
    git-build) git_build ;;
    sqlite) sqlite_load ;;
    *) echo "$usage"; exit 2 ;;
  esac
  mark workload
  cd "$MNT"
  strace -f -ttt -e trace=$TRACE_SET -o "$W/trace.strace" -- bash "$W/run.sh" || exit 1
  cd /
  # What the program freed since its last sync reaches ext4's discard worker at the next
  # commit. Were that commit umount's own, the worker would drop most of it: umount clears
  # SB_ACTIVE right after sync_filesystem (fs/super.c generic_shutdown_super) and
  # ext4_discard_work gives up every entry it takes after that (fs/ext4/mballoc.c, "If
  # filesystem is umounting ... give up the discard"), a race that let 1 or 2 of git-build's
  # ~20 entries through. So the recording syncs and lets the worker finish first, and the
  # model's replay.toml does the same (a `sync` phase, then 1 s idle).
  mark settle
  sync
  sleep 1
  mark umount
  umount "$W/work/mnt"
  sed "s|$MNT|/mnt/strace-root|g" "$W/trace.strace" > "$DIR/trace.strace"
}

: > "$W/serve.out"
"$BIN" serve tests/data/discard-patterns/device.toml --listen 127.0.0.1:0 --stats-http 127.0.0.1:0 \
  --record "$W/recording.log" --out "$W/metrics" --quiet >> "$W/serve.out" 2> "$W/serve.err" &
spid=$!
for _ in $(seq 100); do [ "$(grep -c 'listening on\|stats on' "$W/serve.out")" -ge 2 ] && break; sleep 0.1; done
URI="nbd://$(sed -n 's/.*listening on \([^ /]*\).*/\1/p' "$W/serve.out" | head -1)"
[ "$URI" != "nbd://" ] || { echo "trimlab serve did not start: $(cat "$W/serve.err")"; kill "$spid"; exit 1; }
export MARK_HTTP
MARK_HTTP=$(sed -n 's|.*stats on http://\([^ /]*\).*|\1|p' "$W/serve.out" | head -1)
( rig ) > "$W/script.log" 2>&1 || { cat "$W/script.log" "$W/serve.err"; kill "$spid"; exit 1; }
kill -TERM "$spid"
wait "$spid" || true
cp "$W/recording.log" "$DIR/kernel.log"
cp "$W/metrics/metrics.json" "$DIR/kernel.metrics.json"
{
  echo "kernel: $(uname -sr)"
  for p in e2fsprogs strace git gcc sqlite3 libnbd-bin; do
    echo "$p: $(dpkg-query -W -f '${Version}' "$p" 2>/dev/null || echo '?')"
  done
} > "$DIR/versions.txt"
echo "$DIR: $(wc -l < "$DIR/trace.strace") strace lines, $(grep -c -v '^#' "$DIR/kernel.log") device commands"
