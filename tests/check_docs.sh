#!/bin/sh
# The repository stands alone: what it gives users cites only what it contains. Fails when
#   - README, docs, sources, the CLI, tests, tools, bench or the fuzz corpus cite a document the
#     repository does not hold (DESIGN.md, STYLE.md, ../reference, ../shared, /work/...), or call
#     a source by a private number ("seed 003") instead of by its publication;
#   - a relative link in README.md or docs/*.md points at a file that does not exist;
#   - a device of the built-in table has no row with a URL in docs/devices.md's sources.
# usage: check_docs.sh SOURCE_DIR FLOPMETER
set -eu
src=$(cd "$1" && pwd)
cli=$2
status=0
cd "$src"

files=$(find README.md docs src include tools tests bench fuzz/corpus .ci -type f \
        \( -name '*.md' -o -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.py' \
           -o -name '*.sh' -o -name '*.json' -o -name '*.txt' -o -name 'run' \) \
        ! -path 'tests/check_docs.sh' ! -path 'tests/data/peers/*' 2>/dev/null)
# shellcheck disable=SC2086
if grep -nE 'DESIGN\.md|STYLE\.md|\.\./reference|\.\./shared|/work/(shared|main)|[Ss]eeds?[ /_]?0[0-9][0-9]' \
        $files; then
    echo "check_docs: the lines above cite what the repository does not contain" >&2
    status=1
fi

# relative links of the Markdown files resolve
for md in README.md docs/*.md; do
    dir=$(dirname "$md")
    grep -oE '\]\([^)#[:space:]]+' "$md" | sed 's/^](//' | while read -r target; do
        case "$target" in
        http://* | https://* | mailto:*) continue ;;
        esac
        if [ ! -e "$dir/$target" ]; then
            echo "check_docs: $md links to $target, which does not exist" >&2
            echo x
        fi
    done
done > /tmp/check_docs.$$
if [ -s /tmp/check_docs.$$ ]; then
    status=1
fi
rm -f /tmp/check_docs.$$

# every built-in device's first alias has a sources row with a URL
"$cli" devices --format json | grep -oE '"aliases": *"[^",]+' | sed 's/.*"//' | while read -r alias; do
    if ! grep -E "^\|.*\(\`$alias\`\).*\]\(https?://" docs/devices.md > /dev/null; then
        echo "check_docs: device '$alias' has no source with a URL in docs/devices.md" >&2
        echo x
    fi
done > /tmp/check_docs_dev.$$
if [ -s /tmp/check_docs_dev.$$ ]; then
    status=1
fi
n=$("$cli" devices --format json | grep -cE '"aliases": *"' || true)
rm -f /tmp/check_docs_dev.$$
if [ "$n" -lt 20 ]; then
    echo "check_docs: only $n devices listed; the check read nothing?" >&2
    status=1
fi
exit $status
