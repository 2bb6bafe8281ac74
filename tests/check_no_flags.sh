#!/bin/sh
# The library speaks in its own words: no message under src/ names a command-line flag. A message
# names the field a program sets (fm_session_opts.gpus, fm_load_opts.bindings ...) and the CLI
# turns each field into its flag where it prints (tools/cli/flags.c), so that a program linking
# the library is never told about --gpus. This fails on any string literal under src/ that holds
# "--" followed by a letter, except another tool's own command line quoted in backticks (`ncu
# --csv`, `nsys stats --report ...`) or named as ncu's ("ncu --nvtx adds them"); such a quote
# is checked one string literal at a time, so keep it within one literal.
#   sh tests/check_no_flags.sh SOURCE_DIR
set -u
cd "${1:-.}" || exit 1
found=$(find src \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | sort |
    xargs grep -n -o '"\([^"\\]\|\\.\)*"' |
    sed -e 's/`\(ncu\|nsys\) [^`]*`//g' -e "s/ncu\\('s\\)\\{0,1\\}\\( without\\)\\{0,1\\} --[a-z-]*//g" |
    grep -e '--[a-zA-Z]')
if [ -n "$found" ]; then
    echo "string literals under src/ that name a command-line flag (name the field instead, and"
    echo "map it to its flag in tools/cli/flags.c):"
    echo "$found"
    exit 1
fi
echo "no message under src/ names a command-line flag"
