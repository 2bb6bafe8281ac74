#!/bin/sh
# The library's layering, checked on the compiled objects (the calls that really happen, not
# just the #includes): every call from one object file to a function another defines is an
# edge. Fails when
#   - the files call each other in a circle (tsort finds a loop), or
#   - more than one pair of layers has calls running from a lower layer to a higher one, in the
#     order core < ops < frontend < hw < backend < analysis < report < cli (docs/architecture.md), or
#   - the CLI includes a header from src/ (it may include flopmeter.h and its own headers only),
#     or tools/cli grows past 3,000 lines.
# usage: check_layers.sh BUILD_DIR SOURCE_DIR
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

# objects of sources that still exist (an incremental build keeps those of moved files)
cd "$build/CMakeFiles"
find fm_objects.dir flopmeter.dir -name '*.o' | sort | while read -r o; do
    rel=${o#*.dir/}
    case "$rel" in gen/*) echo "$o" ;; *) if [ -f "$src/${rel%.o}" ]; then echo "$o"; fi ;; esac
done > "$tmp/objs"
# one nm over every object: "object: symbol type ..." lines, defined and undefined
xargs nm -P -A < "$tmp/objs" > "$tmp/nm"
awk '{
    obj = $1; sub(/:$/, "", obj); sub(/^[^\/]*\.dir\//, "", obj); sub(/\.o$/, "", obj)
    if ($3 ~ /^[TDRBVW]$/) print $2, obj > "'"$tmp/defs"'"
    else if ($3 == "U") print $2, obj > "'"$tmp/uses"'"
}' "$tmp/nm"
sort -k1,1 -o "$tmp/defs" "$tmp/defs"
sort -k1,1 -o "$tmp/uses" "$tmp/uses"
# file -> file edges (a file calling itself is no edge)
join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 {print $2, $3}' | sort -u > "$tmp/edges"

# 1. circles between files
if ! tsort "$tmp/edges" > /dev/null 2> "$tmp/loops"; then
    echo "files that call each other in a circle:"
    grep -v 'input contains a loop' "$tmp/loops" | sed 's/^tsort: /  /' | sort -u
    status=1
fi

# 2. calls from a lower layer to a higher one
awk 'function layer(f) {
        if (f ~ /^src\/core\//) return "1 core"
        if (f ~ /^src\/ops\//) return "2 ops"
        if (f ~ /^src\/frontend\// || f ~ /^gen\//) return "3 frontend"
        if (f ~ /^src\/hw\//) return "4 hw"
        if (f ~ /^src\/backend\//) return "5 backend"
        if (f ~ /^src\/analysis\//) return "6 analysis"
        if (f ~ /^src\/report\//) return "7 report"
        if (f ~ /^tools\/cli\//) return "8 cli"
        return "0 other"
     }
     { split(layer($1), a, " "); split(layer($2), b, " ")
       if (a[1] + 0 < b[1] + 0) print a[2], "->", b[2], "(" $1, "->", $2 ")" }' \
    "$tmp/edges" > "$tmp/up"
pairs=$(awk '{print $1, $2, $3}' "$tmp/up" | sort -u)
npairs=$(printf '%s' "$pairs" | grep -c . || true)
if [ "$npairs" -gt 1 ]; then
    echo "calls from a lower layer to a higher one ($npairs pairs of layers; at most 1 is allowed):"
    sed 's/^/  /' "$tmp/up"
    status=1
fi

# 3. the CLI parses, calls the library and prints: no header from src/
if grep -n '#include "[^"]*src/' "$src"/tools/cli/*.c "$src"/tools/cli/*.h; then
    echo "tools/cli includes library-internal headers (above): use flopmeter.h"
    status=1
fi
lines=$(cat "$src"/tools/cli/*.c "$src"/tools/cli/*.h | wc -l)
if [ "$lines" -ge 3000 ]; then
    echo "tools/cli has $lines lines: the CLI holds no policy and renders nothing, keep it under 3000"
    status=1
fi

if [ $status = 0 ]; then
    echo "layers ok: $(wc -l < "$tmp/edges") calls between files, no circle; upward: ${pairs:-none}"
    sed "s/^/  /" "$tmp/up"
    echo "tools/cli: $lines lines, flopmeter.h only"
fi
exit $status
