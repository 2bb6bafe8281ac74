#!/bin/sh
# `pip install .` as the README's Python section says it: from the repository into a new virtual
# environment (no torch: the package imports without it), then the installed package counts a
# built-in model through the libflopmeter its wheel bundles, and `python -m flopmeter` runs the
# bundled CLI. Run by `make python-test`.
#   sh tests/check_pip_install.sh SOURCE_DIR
set -eu
src=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q "$src"
cd "$tmp"
# the bundled library, not a build tree's: no FLOPMETER_LIB / FLOPMETER_CLI here
env -u FLOPMETER_LIB -u FLOPMETER_CLI "$tmp/venv/bin/python" - <<'PY'
import json, os, subprocess, sys
import flopmeter
lib = flopmeter._lib.library_path()
assert lib.startswith(os.path.dirname(flopmeter.__file__)), lib
r = flopmeter.count("resnet18")
assert r.params == 11689512, r.params
out = subprocess.run([sys.executable, "-m", "flopmeter", "count", "resnet18", "--format", "json"],
                     capture_output=True, text=True, check=True).stdout
assert json.loads(out) == r.to_dict()
print("pip install: the wheel's library and CLI count resnet18 (11,689,512 parameters)")
PY
