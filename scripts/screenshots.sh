#!/usr/bin/env bash
# Screenshots of a trimlab report with headless Chromium, to look at before publishing:
# every plot (one PNG per SVG) and index.html (the overview, each experiment as the page shows
# it, the references), cut into pages. Installs Debian's chromium (and imagemagick, to cut the
# pages) when missing.
#
#   scripts/screenshots.sh [REPORT_DIR [SHOTS_DIR]]    (defaults: out/reproduce, REPORT_DIR/screenshots)
#   scripts/screenshots.sh --pages [OUT_DIR]           (every page kind and the live dashboard)
#
# Prints one line per PNG. Exits non-zero if Chromium fails or writes an empty image.
set -euo pipefail

# Every page kind (reproduce, run, replay, advise, sweep) and serve's live dashboard:
#   scripts/screenshots.sh --pages [OUT_DIR]
if [ "${1:-}" = "--pages" ]; then
    exec "$(dirname "$0")/page-screenshots.sh" "${2:-out/pages}"
fi

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

# index.html, one experiment at a time: a copy of the page whose CSS hides every other section
# (no script, no scrolling), shot tall, then trimmed and cut into readable 1400 px pages.
# Without ImageMagick the tall shot is kept whole.
cutter=$(command -v /usr/bin/convert || true)
if [ -z "$cutter" ] && command -v apt-get >/dev/null; then
    apt-get install -y -qq imagemagick >/dev/null 2>&1 || true
    cutter=$(command -v /usr/bin/convert || true)
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shoot_part() { # css-to-hide name
    sed "s|</style>|$1 { display: none !important; }</style>|" "$dir/index.html" > "$dir_abs/.screenshot-$2.html"
    local tall="$tmp/$2.png"
    shoot "file://$dir_abs/.screenshot-$2.html" 1280 12000 "$tall" >/dev/null
    rm -f "$dir_abs/.screenshot-$2.html"
    if [ -n "$cutter" ]; then
        "$cutter" "$tall" -trim +repage -bordercolor white -border 16 "$tmp/$2-trimmed.png"
        "$cutter" "$tmp/$2-trimmed.png" -crop 1312x1400 +repage "$shots/index--$2-%02d.png"
        ls "$shots"/index--"$2"-*.png
    else
        cp "$tall" "$shots/index--$2.png"
        echo "$shots/index--$2.png"
    fi
}
shoot_part "section.experiment, #references" "top"
for id in $(grep -o 'section class="experiment" id="exp-[A-Za-z0-9._-]*"' "$dir/index.html" | sed 's/.*id="\(.*\)"/\1/'); do
    shoot_part "header, nav, #references, section.experiment:not(#$id)" "$id"
done
if grep -q 'id="references"' "$dir/index.html"; then
    shoot_part "header, nav, section.experiment" "references"
fi
