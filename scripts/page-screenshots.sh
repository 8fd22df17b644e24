#!/usr/bin/env bash
# Screenshots of every page kind trimlab writes, to look at before a release: reproduce (one
# experiment at a small scale; scripts/screenshots.sh REPORT_DIR does a whole reproduce run),
# run, replay, advise and sweep pages, and serve's live dashboard with traffic on it.
#
#   scripts/page-screenshots.sh [OUT_DIR]      (default out/pages; run from the repository root)
#
# Uses target/release/trimlab (built when missing) and headless Chromium (installed when
# missing); the dashboard needs qemu-io (qemu-utils) for its traffic. Prints one PNG per line.
set -euo pipefail
out=${1:-out/pages}
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=target/release/trimlab
[ -x "$bin" ] || cargo build --release --quiet
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null
    browser=$(command -v chromium)
fi
shoot() { # page.html out.png
    "$browser" --headless=new --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
        --window-size=1280,2400 --virtual-time-budget=2000 --screenshot="$2" "file://$1" >/dev/null 2>&1
    [ -s "$2" ] || { echo "page-screenshots: chromium wrote nothing for $1" >&2; exit 1; }
    echo "$2"
}
trace=examples/traces/ext4-smallfiles-discard.log
device=examples/traces/device.toml
"$bin" reproduce delayed-trim --scale 0.1 --out "$out/reproduce" >/dev/null 2>&1
"$bin" run examples/quick.toml --log-interval 100ms --html --out "$out/run" >/dev/null
"$bin" replay "$trace" --device "$device" --log-interval 1s --html --out "$out/replay" >/dev/null
"$bin" advise "$trace" --device "$device" --fstrim-periods 10s,60s --out "$out/advise" >/dev/null 2>&1
"$bin" sweep examples/sweeps/small.toml --jobs 2 --html --out "$out/sweep" >/dev/null 2>&1
for kind in reproduce run replay advise sweep; do
    shoot "$out/$kind/index.html" "$out/$kind.png"
done

# The dashboard: serve on free ports, write and discard through qemu-io, mark phases.
if command -v qemu-io >/dev/null; then
    log="$out/serve.log"
    "$bin" serve examples/serve.toml --listen 127.0.0.1:0 --stats-http 127.0.0.1:0 --log-interval 200ms --pace real --out "$out/serve" >"$log" 2>&1 &
    pid=$!
    trap 'kill "$pid" 2>/dev/null || true' EXIT
    for _ in $(seq 50); do grep -q "stats on" "$log" && break; sleep 0.1; done
    nbd=$(sed -n 's/.*listening on \([0-9.:]*\).*/\1/p' "$log" | head -1)
    http=$(sed -n 's|.*stats on http://\([0-9.:]*\)/.*|\1|p' "$log" | head -1)
    phase() { exec 9<>"/dev/tcp/${http%:*}/${http##*:}"; printf 'POST /phase/%s HTTP/1.0\r\n\r\n' "$1" >&9; cat <&9 >/dev/null; exec 9<&-; }
    phase write
    for i in $(seq 0 7); do qemu-io -f raw -c "write -P $i ${i}00M 64M" "nbd://$nbd" >/dev/null; sleep 0.3; done
    phase discard
    for i in $(seq 0 3); do qemu-io -f raw -c "discard ${i}00M 64M" "nbd://$nbd" >/dev/null; sleep 0.3; done
    scripts/dashboard-screenshot.sh "$http" "$out/dashboard" | grep png
    kill "$pid"
else
    echo "page-screenshots: qemu-io missing (apt-get install qemu-utils); no dashboard shot" >&2
fi
