#!/bin/sh
# The shared library exports flopmeter's API and nothing else: the set of functions and data it
# defines dynamically must be exactly the FM_API declarations of include/flopmeter.h. Anything
# more (an internal fm_cpu_*, a cu_* helper, the CUDA runtime) would become API by accident;
# anything less is a declared function that is missing. And every exported function is
# documented: docs/api.md names it as `name` (its list of every function, one line each), so
# that nothing becomes API without saying what it promises.
# usage: check_exports.sh LIBFLOPMETER.so include/flopmeter.h docs/api.md
set -eu
lib=$1
header=$2
doc=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# declared: the identifier right before the first '(' of every FM_API line
grep '^FM_API ' "$header" | sed -E 's/\(.*//; s/.*[^A-Za-z0-9_]([A-Za-z0-9_]+)$/\1/' | sort -u > "$tmp/declared"
# exported: defined dynamic symbols, leaving out the linker's own (_init, _fini, _edata ...)
nm -D --defined-only "$lib" | awk '{print $NF}' | grep -v '^_' | sort -u > "$tmp/exported"
status=0
extra=$(comm -13 "$tmp/declared" "$tmp/exported")
missing=$(comm -23 "$tmp/declared" "$tmp/exported")
if [ -n "$extra" ]; then
    echo "exported but not declared in flopmeter.h (make them static or internal):"
    echo "$extra" | sed 's/^/  /'
    status=1
fi
if [ -n "$missing" ]; then
    echo "declared in flopmeter.h but not exported (not defined, or not FM_API):"
    echo "$missing" | sed 's/^/  /'
    status=1
fi
# documented: `name` in docs/api.md
undocumented=$(while read -r name; do
    grep -q "\`$name\`" "$doc" || echo "$name"
done < "$tmp/exported")
if [ -n "$undocumented" ]; then
    echo "exported but not documented in $doc (add a line naming it as \`name\`):"
    echo "$undocumented" | sed 's/^/  /'
    status=1
fi
[ $status = 0 ] && echo "exports ok: $(wc -l < "$tmp/exported") symbols, all fm_ API, all documented"
exit $status
