#!/bin/sh
# Every output of the CLI stays byte-identical across a refactor: each case of tests/golden_cli.txt
# is run from the repository root and its stdout, stderr and exit status compared with
# tests/data/golden_cli/NAME.out, made before the change.
#   sh tests/check_golden_cli.sh FLOPMETER SOURCE_DIR            compare (the ctest entry)
#   sh tests/check_golden_cli.sh FLOPMETER SOURCE_DIR --update   re-make the files (a change that
#                                                                means to change an output)
set -u
cli=$1
src=$2
update=${3:-}
cd "$src" || exit 1
dir=tests/data/golden_cli
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
grep -v '^#' tests/golden_cli.txt | grep -v '^ *$' > "$tmp/cases"
while IFS='|' read -r name args; do
    name=$(echo "$name" | tr -d ' ')
    n=$((n + 1))
    # the args are shell words (quotes keep a device name with spaces together)
    eval "set -- $args"
    {
        "$cli" "$@" > "$tmp/stdout" 2> "$tmp/stderr" < /dev/null
        echo "exit $?"
        echo "--- stdout"
        cat "$tmp/stdout"
        echo "--- stderr"
        cat "$tmp/stderr"
    } > "$tmp/$name.out"
    if [ -n "$update" ]; then
        cp "$tmp/$name.out" "$dir/$name.out"
    elif ! cmp -s "$tmp/$name.out" "$dir/$name.out"; then
        echo "FAIL $name: flopmeter $args"
        diff -u "$dir/$name.out" "$tmp/$name.out" | head -20
        fail=$((fail + 1))
    fi
done < "$tmp/cases"
if [ -n "$update" ]; then
    echo "$n golden outputs written to $dir"
    exit 0
fi
echo "$((n - fail)) passed, $fail failed"
[ "$fail" -eq 0 ]
