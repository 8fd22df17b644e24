#!/usr/bin/env bash
# A headless-Chromium look at `trimlab serve`'s live dashboard (GET / on --stats-http): a PNG
# of the page and its DOM after the page's script has read /stats a few times.
#
#   scripts/dashboard-screenshot.sh HOST:PORT [OUT_DIR]      (default OUT_DIR: out/dashboard)
#
# Writes OUT_DIR/dashboard.png and OUT_DIR/dashboard.html; prints both paths. Installs Debian's
# chromium when missing. Exits non-zero if Chromium fails or writes nothing.
set -euo pipefail
addr=${1:?usage: dashboard-screenshot.sh HOST:PORT [OUT_DIR]}
out=${2:-out/dashboard}
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "dashboard-screenshot: installing chromium (Debian package)" >&2
    apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null
    browser=$(command -v chromium)
fi
mkdir -p "$out"
# Virtual time runs the page's one-second polling several times; fetches to the live server
# complete in real time while virtual time waits for them.
flags=(--headless=new --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1
       --window-size=1280,1300 --virtual-time-budget=4000)
"$browser" "${flags[@]}" --dump-dom "http://$addr/" > "$out/dashboard.html" 2>/dev/null
"$browser" "${flags[@]}" --screenshot="$out/dashboard.png" "http://$addr/" >/dev/null 2>&1
for f in "$out/dashboard.html" "$out/dashboard.png"; do
    [ -s "$f" ] || { echo "dashboard-screenshot: chromium wrote nothing to $f" >&2; exit 1; }
    echo "$f"
done
