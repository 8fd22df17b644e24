#!/usr/bin/env bash
# Screenshots of a trimlab report with headless Chromium, to look at before publishing:
# every plot (one PNG per SVG) and index.html (the top, each experiment, each figure in place,
# the references). Installs Debian's chromium when it is missing.
#
#   scripts/screenshots.sh [REPORT_DIR [SHOTS_DIR]]    (defaults: out/reproduce, REPORT_DIR/screenshots)
#
# Prints one line per PNG. Exits non-zero if Chromium fails or writes an empty image.
set -euo pipefail

dir=${1:-out/reproduce}
shots=${2:-$dir/screenshots}
[ -f "$dir/index.html" ] || { echo "screenshots: $dir/index.html not found (run trimlab reproduce first)" >&2; exit 2; }

browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
    echo "screenshots: installing chromium (Debian package)" >&2
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null
    browser=$(command -v chromium)
fi

mkdir -p "$shots"
dir_abs=$(cd "$dir" && pwd)

# One headless screenshot; the fragment (#id) scrolls the page to that element first.
shoot() { # url width height out.png
    "$browser" --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
        --force-device-scale-factor=1 --window-size="$2,$3" --virtual-time-budget=2000 \
        --screenshot="$4" "$1" >/dev/null 2>&1
    [ -s "$4" ] || { echo "screenshots: chromium wrote nothing for $1" >&2; exit 1; }
    echo "$4"
}

# Every plot on its own, at its native 960 x 540.
for svg in "$dir_abs"/*/*.svg; do
    [ -e "$svg" ] || continue
    exp=$(basename "$(dirname "$svg")")
    shoot "file://$svg" 960 540 "$shots/plot--$exp--$(basename "$svg" .svg).png"
done

# index.html: the top, then every experiment and every figure as the page shows them.
index="file://$dir_abs/index.html"
shoot "$index" 1280 1400 "$shots/index--top.png"
for id in $(grep -o 'id="\(exp\|fig\)-[A-Za-z0-9._-]*"' "$dir/index.html" | sed 's/id="\(.*\)"/\1/'); do
    shoot "$index#$id" 1280 1100 "$shots/index--$id.png"
done
if grep -q 'id="references"' "$dir/index.html"; then
    shoot "$index#references" 1280 700 "$shots/index--references.png"
fi
