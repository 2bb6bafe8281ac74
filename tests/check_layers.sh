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

layer_of() {   # an object's path relative to its CMakeFiles/<target>.dir -> layer rank and name
    case "$1" in
    src/core/*) echo "1 core" ;;
    src/ops/*) echo "2 ops" ;;
    src/frontend/* | gen/*) echo "3 frontend" ;;
    src/hw/*) echo "4 hw" ;;
    src/backend/*) echo "5 backend" ;;
    src/analysis/*) echo "6 analysis" ;;
    src/report/*) echo "7 report" ;;
    tools/cli/*) echo "8 cli" ;;
    *) echo "0 other" ;;
    esac
}

# objects of sources that still exist (an incremental build keeps those of moved files)
objs=$(cd "$build/CMakeFiles" && find fm_objects.dir flopmeter.dir -name '*.o' | sort | while read -r o; do
    rel=${o#*.dir/}
    case "$rel" in gen/*) echo "$o" ;; *) if [ -f "$src/${rel%.o}" ]; then echo "$o"; fi ;; esac
done)
for o in $objs; do
    rel=${o#*.dir/}
    rel=${rel%.o}
    nm -P --defined-only "$build/CMakeFiles/$o" | awk -v f="$rel" '$2 ~ /^[TDRBVW]$/ {print $1, f}'
done | sort -k1,1 > "$tmp/defs"
for o in $objs; do
    rel=${o#*.dir/}
    rel=${rel%.o}
    nm -P -u "$build/CMakeFiles/$o" | awk -v f="$rel" '{print $1, f}'
done | sort -k1,1 > "$tmp/uses"
# file -> file edges (a file calling itself is no edge)
join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 {print $2, $3}' | sort -u > "$tmp/edges"

# 1. circles between files
if ! tsort "$tmp/edges" > /dev/null 2> "$tmp/loops"; then
    echo "files that call each other in a circle:"
    grep -v 'input contains a loop' "$tmp/loops" | sed 's/^tsort: /  /' | sort -u
    status=1
fi

# 2. calls from a lower layer to a higher one
while read -r from to; do
    set -- $(layer_of "$from")
    fr=$1 fn=$2
    set -- $(layer_of "$to")
    tr=$1 tn=$2
    if [ "$fr" -lt "$tr" ]; then
        echo "$fn -> $tn ($from -> $to)"
    fi
done < "$tmp/edges" > "$tmp/up"
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
