#!/bin/sh
# An allocation that fails inside a renderer makes the CLI exit 1 with a message, and print none
# of the report: the test hook FM_TEST_FAIL_ALLOC=N (tools/cli/run.c, read by the CLI only)
# fails the Nth allocation made after the command starts to render. For each case, N runs from 1
# until the render no longer reaches N (then the output must be the whole, unhooked one).
#   sh tests/check_cli_alloc_fail.sh FLOPMETER SOURCE_DIR
set -u
cli=$1
cd "$2" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset FLOPMETER_DEVICES
export XDG_CONFIG_HOME=/nonexistent
fail=0
failed_renders=0
check() {   # NAME MAX_N ARGS...: every N up to MAX_N (or until the render completes)
    name=$1 max=$2
    shift 2
    "$cli" "$@" > "$tmp/ref.out" 2> "$tmp/ref.err"
    ref=$?
    n=1
    while [ "$n" -le "$max" ]; do
        FM_TEST_FAIL_ALLOC=$n "$cli" "$@" > "$tmp/out" 2> "$tmp/err"
        rc=$?
        if [ "$rc" -eq "$ref" ] && cmp -s "$tmp/out" "$tmp/ref.out"; then
            break   # allocation N is past the render's last: the whole report, as without the hook
        fi
        if [ "$rc" -ne 1 ]; then
            echo "FAIL $name: allocation $n of the render failed: exit $rc, not 1"
            fail=$((fail + 1))
        elif [ -s "$tmp/out" ]; then
            echo "FAIL $name: allocation $n of the render failed, yet a report was printed"
            fail=$((fail + 1))
        elif ! grep -q '^flopmeter: .' "$tmp/err"; then
            echo "FAIL $name: allocation $n of the render failed without a message:"
            cat "$tmp/err"
            fail=$((fail + 1))
        fi
        failed_renders=$((failed_renders + 1))
        n=$((n + 1))
    done
    echo "$name: $((n - 1)) failing allocation(s) of the render, each exit 1 with a message"
}
check "devices --format json" 10 devices --format json
check "models" 3 models
check "models --format json" 3 models --format json
# renders that allocate nothing: the hook must leave their output as it is
check "count resnet18 --format json" 3 count resnet18 --format json
check "device h100" 3 device h100
check "plan llama-3.1-8b" 3 plan llama-3.1-8b --gpus 8 --device h100 --format json
# the message as the user reads it
FM_TEST_FAIL_ALLOC=1 "$cli" devices --format json > "$tmp/out" 2> "$tmp/err"
if ! grep -q '^flopmeter: out of memory' "$tmp/err"; then
    echo "FAIL devices --format json: expected 'flopmeter: out of memory ...', got:"
    cat "$tmp/err"
    fail=$((fail + 1))
fi
if [ "$failed_renders" -lt 3 ]; then
    echo "FAIL: only $failed_renders render(s) reached a failing allocation; the hook does nothing?"
    fail=$((fail + 1))
fi
[ "$fail" -eq 0 ]
