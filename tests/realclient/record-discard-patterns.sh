#!/bin/bash
# Records the kernel's discard pattern (issue 12 item 7) for ext4, btrfs and XFS: each runs
# tests/realclient/discard-pattern.sh on a fresh `trimlab serve --record` of
# tests/data/discard-patterns/device.toml, and the TRIM commands of the recording are kept,
# split by phase, in tests/data/discard-patterns/FS.trims with FS.phases.json (the server's
# per-phase NBD counters) and versions.txt (kernel and tools).
# Usage (root, the packages of .ci/run): tests/realclient/record-discard-patterns.sh [TRIMLAB] [FS...]
set -eu
cd "$(dirname "$0")/../.."
BIN=${1:-target/release/trimlab}
shift || true
FSS=${*:-ext4 xfs btrfs}
OUT=tests/data/discard-patterns
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
{
  echo "kernel: $(uname -sr)"
  echo "e2fsprogs: $(dpkg-query -W -f '${Version}' e2fsprogs)"
  echo "xfsprogs: $(dpkg-query -W -f '${Version}' xfsprogs)"
  echo "btrfs-progs: $(dpkg-query -W -f '${Version}' btrfs-progs)"
  echo "libnbd-bin (nbdfuse): $(dpkg-query -W -f '${Version}' libnbd-bin)"
  echo "util-linux (losetup, fstrim): $(dpkg-query -W -f '${Version}' util-linux)"
} > "$W/versions.txt"
for fs in $FSS; do
  rm -rf "$W/$fs"; mkdir -p "$W/$fs"
  "$BIN" serve "$OUT/device.toml" --listen 127.0.0.1:0 --stats-http 127.0.0.1:0 \
    --record "$W/$fs/recording.log" --out "$W/$fs/metrics" --quiet > "$W/$fs/serve.out" 2> "$W/$fs/serve.err" &
  spid=$!
  for _ in $(seq 100); do [ "$(grep -c 'listening on\|stats on' "$W/$fs/serve.out")" -ge 2 ] && break; sleep 0.1; done
  addr=$(sed -n 's/.*listening on \([^ /]*\).*/\1/p' "$W/$fs/serve.out" | head -1)
  http=$(sed -n 's|.*stats on http://\([^ /]*\).*|\1|p' "$W/$fs/serve.out" | head -1)
  MARK_HTTP=$http bash tests/realclient/discard-pattern.sh "$fs" "nbd://$addr" "$W/$fs/work" \
    > "$W/$fs/script.log" 2>&1 || { cat "$W/$fs/script.log"; kill "$spid"; exit 1; }
  kill -TERM "$spid"; wait "$spid"
  python3 tests/realclient/split_recording.py "$W/$fs/recording.log" "$W/$fs/metrics/metrics.json" \
    "$OUT/$fs.trims" "$OUT/$fs.phases.json" "$W/$fs/script.log"
  echo "$fs: $(grep -c ' trim ' "$OUT/$fs.trims") TRIM lines"
  grep -E '^(fstrim|loop=)' "$W/$fs/script.log" | sed "s/^/$fs: /" >> "$W/versions.txt"
done
# Keep the lines of the file systems not recorded this time.
if [ -f "$OUT/versions.txt" ]; then
  for fs in ext4 xfs btrfs; do
    case " $FSS " in *" $fs "*) ;; *) grep "^$fs: " "$OUT/versions.txt" >> "$W/versions.txt" || true ;; esac
  done
fi
cp "$W/versions.txt" "$OUT/versions.txt"
