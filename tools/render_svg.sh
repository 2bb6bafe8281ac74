#!/bin/sh
# Renders an SVG to PNG with headless Chromium (Debian package "chromium"), so that a chart
# flopmeter wrote can be looked at, or committed next to its SVG for readers.
#   tools/render_svg.sh chart.svg [chart.png]
# The PNG is the SVG's own size (width/height attributes). A documentation step, not a build
# step: nothing in the build or the tests needs Chromium.
set -eu
if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    echo "usage: $0 INPUT.svg [OUTPUT.png]   (needs chromium: apt-get install chromium)" >&2
    exit 2
fi
svg=$1
png=${2:-${svg%.svg}.png}
[ -f "$svg" ] || { echo "$0: no such file: $svg" >&2; exit 1; }
browser=
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
done
[ -n "$browser" ] || { echo "$0: chromium not found (apt-get install chromium)" >&2; exit 1; }
# the page size: the svg element's width and height attributes (pixels)
w=$(sed -n 's/.*<svg[^>]* width="\([0-9.]*\)".*/\1/p' "$svg" | head -n 1)
h=$(sed -n 's/.*<svg[^>]* height="\([0-9.]*\)".*/\1/p' "$svg" | head -n 1)
w=${w%.*}; h=${h%.*}
[ -n "$w" ] && [ -n "$h" ] || { echo "$0: $svg has no width/height on its <svg> element" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
abs=$(cd "$(dirname "$svg")" && pwd)/$(basename "$svg")
# an HTML wrapper with no margins, so the screenshot is exactly the chart
cat > "$tmp/page.html" <<HTML
<!DOCTYPE html><html><head><style>html,body{margin:0;padding:0;background:white}</style></head>
<body><img src="file://$abs" width="$w" height="$h"></body></html>
HTML
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --allow-file-access-from-files \
    --user-data-dir="$tmp/profile" --window-size="$w,$h" --screenshot="$tmp/out.png" \
    "file://$tmp/page.html" >/dev/null 2>&1 || true
[ -s "$tmp/out.png" ] || { echo "$0: chromium did not write a screenshot" >&2; exit 1; }
mv "$tmp/out.png" "$png"
echo "$png"
