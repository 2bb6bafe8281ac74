#!/bin/sh
# The repaired wheel (`make wheel`: `pip wheel .`, then `auditwheel repair`) stands alone: it is
# installed into a new virtual environment, every shared library that its libflopmeter and its
# CLI need resolves either inside the wheel (flopmeter.libs/: oneDNN, protobuf-c, cJSON, libgomp,
# the OpenCL loader) or to the few system libraries a manylinux tag allows (glibc, libstdc++,
# libgcc_s), and the installed package counts resnet18 with LD_LIBRARY_PATH unset. Where this
# user may make a private mount namespace (`unshare -m`, as root), the same count runs again with
# the system's copies of the vendored libraries made unreadable (/dev/null bound over them, in
# that namespace only): what a Linux without those Debian packages sees.
#   sh tests/check_wheel.sh WHEEL
set -eu
whl=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
case "$whl" in
  *-manylinux_*.whl) ;;
  *) echo "check_wheel: $whl carries no manylinux tag (auditwheel repair makes one)"; exit 1 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q --no-deps "$whl"
py="$tmp/venv/bin/python"
cd "$tmp"
pkg=$(env -u LD_LIBRARY_PATH "$py" -c 'import os, flopmeter; print(os.path.dirname(flopmeter.__file__))')
libs="$pkg.libs"
[ -d "$libs" ] || { echo "check_wheel: no $libs: nothing vendored"; exit 1; }

# ldd: each dependency in the wheel or on the manylinux policy's list of system libraries
fail=0
for elf in "$pkg/lib/libflopmeter.so" "$pkg/bin/flopmeter"; do
  env -u LD_LIBRARY_PATH ldd "$elf" > "$tmp/ldd.txt"
  while read -r name arrow path rest; do
    case "$name" in
      linux-vdso.so.*|/lib*/ld-linux*|ld-linux*) continue ;;
      libc.so.6|libm.so.6|libdl.so.2|librt.so.1|libpthread.so.0|libstdc++.so.6|libgcc_s.so.1)
        continue ;;
    esac
    [ -z "$path" ] || [ "$path" = "not" ] || path=$(readlink -f "$path")
    case "$path" in
      "$libs"/*) ;;
      *) echo "check_wheel: $(basename "$elf") needs $name from ${path:-nowhere}, not the wheel"
         fail=1 ;;
    esac
  done < "$tmp/ldd.txt"
done
[ "$fail" = 0 ] || exit 1

cat > "$tmp/count.py" <<'PY'
import json, os, subprocess, sys
import flopmeter
pkg = os.path.dirname(flopmeter.__file__)
lib = flopmeter._lib.library_path()
assert lib.startswith(pkg), lib
r = flopmeter.count("resnet18")
print(r.params)
assert r.params == 11689512, r.params
# the libraries this process mapped: the vendored ones from the wheel, none from the system
maps = {l.split()[-1] for l in open("/proc/self/maps") if ".so" in l.split()[-1]}
vendored = [m for m in maps if m.startswith(pkg + ".libs/")]
assert any("libdnnl" in m for m in vendored), sorted(maps)
for name in ("libdnnl", "libprotobuf-c", "libcjson", "libgomp"):
    outside = [m for m in maps if os.path.basename(m).startswith(name) and m not in vendored]
    assert not outside, outside
out = subprocess.run([sys.executable, "-m", "flopmeter", "count", "resnet18", "--format", "json"],
                     capture_output=True, text=True, check=True).stdout
assert json.loads(out) == r.to_dict()
PY
env -u LD_LIBRARY_PATH -u FLOPMETER_LIB -u FLOPMETER_CLI "$py" "$tmp/count.py" > /dev/null

# the system's copies of what the wheel vendors (libdnnl-a4f9d805.so.2.6 -> libdnnl.so*)
hide=""
for f in "$libs"/*; do
  stem=$(basename "$f" | sed 's/-[0-9a-f]\{8\}\.so.*//')
  for p in $(ldconfig -p | awk -v s="$stem.so" 'index($1, s) == 1 { print $NF }'); do
    real=$(readlink -f "$p")
    case " $hide " in *" $real "*) ;; *) hide="$hide $real" ;; esac
  done
done
if [ -n "$hide" ] && unshare -m true 2>/dev/null; then
  env -u LD_LIBRARY_PATH -u FLOPMETER_LIB -u FLOPMETER_CLI unshare -m sh -c '
    for f in $1; do mount --bind /dev/null "$f"; done
    exec "$2" "$3"' sh "$hide" "$py" "$tmp/count.py" > /dev/null
  hidden="; again with the system's$hide unreadable"
else
  hidden="; not run with the system's copies hidden (unshare -m is not permitted here)"
fi
echo "wheel: $(basename "$whl") counts resnet18 (11,689,512 parameters) with its own$(cd "$libs" && printf ' %s' *)$hidden"
