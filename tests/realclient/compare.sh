#!/bin/bash
# Side-by-side measurements for `trimlab serve` (not a test; run by hand, as root; it builds
# the release binary first):
#  1. throughput: nbdcopy of a 1 GiB random file into trimlab (--pace none) and into
#     `nbdkit memory`, in one run, printing MB/s for each;
#  2. TRIM accounting: the ext4 script against `nbdkit --filter=log memory` and against trimlab,
#     printing per-phase TRIM counts and bytes from the nbdkit log and from trimlab's metrics.
# Round 1 includes first-touch allocation in both servers; later rounds overwrite in place.
# The servers take turns going first (odd rounds trimlab, even rounds nbdkit), because on a
# shared machine the load drifts; each round prints the ratio trimlab / nbdkit, and the end
# prints the range of the overwrite rounds' ratios with the load average, and the medians of the
# CPU each side spent per copy (server, nbdcopy) and of the machine's idle time: on this 2-core
# machine a copy keeps both cores nearly busy, so the wall ratio is bounded by the ratio of the
# CPU sums plus what idle time there is to win.
# Usage: tests/realclient/compare.sh [--throughput-only] [WORKDIR]   (default /tmp/trimlab-compare)
#   ROUNDS=N   rounds of the throughput part (default 5)
#   CARGO_TARGET_DIR   where the release binary is built (default ./target, as cargo)
#   TRIMLAB=path   measure this trimlab binary instead of building one (e.g. a saved copy of
#                  main's, for a before/after in one sitting)
set -eu
cd "$(dirname "$0")/../.."
ONLY_THROUGHPUT=0
if [ "${1:-}" = --throughput-only ]; then ONLY_THROUGHPUT=1; shift; fi
W=${1:-/tmp/trimlab-compare}
ROUNDS=${ROUNDS:-5}
T=${TRIMLAB:-${CARGO_TARGET_DIR:-$PWD/target}/release/trimlab}
# Built here, not taken as found: a stale binary measures old code.
[ -n "${TRIMLAB:-}" ] || cargo build --release --quiet || { echo "cargo build --release failed"; exit 1; }
rm -rf "$W"; mkdir -p "$W"
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT

wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 not up"; exit 1; }
rate() { python3 -c "import sys; print(f'{1073741824/1e6/float(sys.argv[1]):.0f}')" "$1"; }
now() { date +%s.%N; }

echo "== throughput: nbdcopy 1 GiB =="
head -c 1G /dev/urandom > "$W/1g.bin"
"$T" serve examples/serve.toml --listen 127.0.0.1:10911 --pace none --quiet --out "$W/tp-metrics" > /dev/null &
PIDS+=($!); TP=$!
nbdkit -f -i 127.0.0.1 -p 10912 memory size=1G &
PIDS+=($!); NP=$!
wait_port 10911; wait_port 10912
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
# CPU seconds (user + system) a server process has used: less sensitive to the machine's
# load than wall time, so each round prints both.
TICK=$(getconf CLK_TCK)
cpu() { awk -v t="$TICK" '{printf "%.2f", ($14+$15)/t}' "/proc/$1/stat"; }
# Seconds the machine's cores sat idle (idle + iowait in /proc/stat) since boot.
idle() { awk -v t="$TICK" '/^cpu /{printf "%.2f", ($5+$6)/t}' /proc/stat; }
# copy PORT PID: the wall seconds of one nbdcopy, the server's CPU seconds for it, nbdcopy's
# own CPU seconds (bash's `time`: user + system of the child) and the machine's idle seconds.
copy() {
  local t0 t1 c0 c1 i0 i1 k
  c0=$(cpu "$2"); i0=$(idle); t0=$(now)
  k=$( { TIMEFORMAT='%U %S'; time nbdcopy "$W/1g.bin" "nbd://127.0.0.1:$1" 2>&3; } 3>&2 2>&1 )
  t1=$(now); c1=$(cpu "$2"); i1=$(idle)
  python3 -c "import sys; u, s = map(float, sys.argv[1:]); print($t1-$t0, round($c1-$c0, 2), round(u+s, 2), round($i1-$i0, 2))" $k
}
# A 4 KiB copy is almost all connection set-up: the accept, the handshake, nbdcopy's extra
# connections. Its median over a few tries shows a per-connection cost (a 20 ms accept sleep
# was 5 % of a 1 GiB copy) that the MB/s below would otherwise hide.
head -c 4096 /dev/urandom > "$W/4k.bin"
small() { for _ in 1 2 3 4 5 6 7; do local t0; t0=$(now); nbdcopy "$W/4k.bin" "nbd://127.0.0.1:$1"; python3 -c "print(($(now)-$t0)*1000)"; done | sort -n | sed -n 4p; }
echo "4 KiB copy (median of 7): trimlab $(small 10911 | cut -c1-5) ms, nbdkit memory $(small 10912 | cut -c1-5) ms"
RATIOS=(); CPUS=()
for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then A=$(copy 10911 "$TP"); B=$(copy 10912 "$NP"); first=trimlab; else B=$(copy 10912 "$NP"); A=$(copy 10911 "$TP"); first=nbdkit; fi
  read -r a ac ak ai <<< "$A"; read -r b bc bk bi <<< "$B"
  r=$(python3 -c "print(f'{$b/$a:.2f}')")
  [ "$round" -gt 1 ] && RATIOS+=("$r") && CPUS+=("$ac,$ak,$ai,$bc,$bk,$bi")
  echo "round $round ($first first): trimlab $(rate "$a") MB/s ($a s, CPU server $ac + nbdcopy $ak s, idle $ai s), nbdkit memory $(rate "$b") MB/s ($b s, CPU server $bc + nbdcopy $bk s, idle $bi s), ratio $r"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ ${#RATIOS[@]} -gt 0 ] && python3 -c "import sys, statistics; r=[float(x) for x in sys.argv[1:]]; print(f'trimlab / nbdkit memory, overwrite rounds: {min(r):.2f}-{max(r):.2f}x (median {statistics.median(r):.3f}x)')" "${RATIOS[@]}"
[ ${#CPUS[@]} -gt 0 ] && python3 - "${CPUS[@]}" <<'PY'
import sys, statistics
rows = [[float(x) for x in a.split(',')] for a in sys.argv[1:]]
m = [statistics.median(r[i] for r in rows) for i in range(6)]
sums = [r[3] + r[4] for r in rows], [r[0] + r[1] for r in rows]
print(f"CPU per copy, overwrite rounds (medians): trimlab server {m[0]:.2f} + nbdcopy {m[1]:.2f} s, "
      f"nbdkit memory server {m[3]:.2f} + nbdcopy {m[4]:.2f} s; CPU sums nbdkit / trimlab "
      f"{statistics.median(sums[0]) / statistics.median(sums[1]):.3f}x; machine idle per copy {m[2]:.2f} vs {m[5]:.2f} s")
PY
nbdcopy nbd://127.0.0.1:10911 "$W/back.bin"; cmp "$W/1g.bin" "$W/back.bin" && echo "trimlab copy verified byte for byte"
kill -TERM "$TP"; wait "$TP" || true; kill "$NP"; wait "$NP" 2>/dev/null || true
rm -f "$W/1g.bin" "$W/back.bin" "$W/4k.bin"
[ "$ONLY_THROUGHPUT" = 1 ] && exit 0

echo "== ext4: nbdkit --filter=log =="
nbdkit -f -i 127.0.0.1 -p 10913 --filter=log memory size=1G logfile="$W/nbdkit.log" logappend=true &
PIDS+=($!); NP=$!
wait_port 10913
MARK_LOG="$W/nbdkit.log" bash tests/realclient/ext4-over-nbd.sh nbd://127.0.0.1:10913 "$W/ext4-nbdkit" > "$W/ext4-nbdkit.out" 2>&1
kill "$NP"; wait "$NP" 2>/dev/null || true
python3 tests/realclient/nbd_log_summary.py "$W/nbdkit.log"

echo "== ext4: trimlab serve =="
"$T" serve examples/serve.toml --listen 127.0.0.1:10914 --stats-http 127.0.0.1:10915 --quiet --out "$W/ext4-metrics" > /dev/null &
PIDS+=($!); TP=$!
wait_port 10914; wait_port 10915
MARK_HTTP=127.0.0.1:10915 bash tests/realclient/ext4-over-nbd.sh nbd://127.0.0.1:10914 "$W/ext4-trimlab" > "$W/ext4-trimlab.out" 2>&1
kill -TERM "$TP"; wait "$TP" || true
python3 - "$W/ext4-metrics/metrics.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"{'phase':22} {'Write n/MiB':>16} {'Trim n/MiB':>16} {'Zero n/MiB':>16} {'Read n/MiB':>16} {'Flush':>6} | model: TRIM pages, unmapped, WAF, GC victims")
for p in m['stats']['phases']:
    n = p['nbd']
    f = lambda op: f"{n[op + '_commands']}/{n[op + '_bytes'] / 1048576:.2f}"
    print(f"{p['name']:22} {f('write'):>16} {f('trim'):>16} {f('write_zeroes'):>16} {f('read'):>16} {n['flush_commands']:>6} | "
          f"{p['trim_pages_requested']} {p['trim_pages_unmapped']} {p['waf']:.3f} {p['gc_victims']}")
d = m['stats']['device']
print(f"device: WAF {d['waf']:.3f}, TRIM commands {d['trim']['commands']}, pages {d['trim']['pages_requested']}, GC victims {d['gc']['victims']}; model check {m['model_check']}")
PY
