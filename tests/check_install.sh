#!/bin/sh
# make install works: binary, static and shared library, header and pkg-config file land under
# a prefix, and a program compiled against them with pkg-config counts resnet18 correctly. The
# shared library carries the soname of the header's version (libflopmeter.so.MAJOR.MINOR before
# 1.0, libflopmeter.so.MAJOR after: docs/api.md), and fm_version() is the header's FM_VERSION.
set -eu
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
test -x "$prefix/bin/flopmeter"
test -f "$prefix/include/flopmeter.h"
libdir=$(ls -d "$prefix"/lib* | head -1)
test -f "$libdir/libflopmeter.a"
test -f "$libdir/pkgconfig/flopmeter.pc"
ls "$libdir"/libflopmeter.so* >/dev/null
major=$(sed -n 's/^#define FM_VERSION_MAJOR \([0-9]*\)$/\1/p' "$prefix/include/flopmeter.h")
minor=$(sed -n 's/^#define FM_VERSION_MINOR \([0-9]*\)$/\1/p' "$prefix/include/flopmeter.h")
if [ "$major" = 0 ]; then want=libflopmeter.so.$major.$minor; else want=libflopmeter.so.$major; fi
soname=$(objdump -p "$libdir/libflopmeter.so" | awk '$1 == "SONAME" {print $2}')
test "$soname" = "$want" || { echo "soname is '$soname', expected $want"; exit 1; }
test -e "$libdir/$soname" || { echo "$soname is not installed"; exit 1; }
cat > "$prefix/use.c" <<'C'
#include <flopmeter.h>
#include <stdio.h>
#include <string.h>
int main(void)
{
    struct fm_ctx *ctx;
    struct fm_graph *g;
    struct fm_counts *c;
    struct fm_count_opts o;
    if (fm_ctx_new(NULL, &ctx) || fm_zoo_build(ctx, "resnet18", NULL, &g))
        return 1;
    fm_count_opts_init(&o);
    if (fm_count(ctx, g, &o, &c))
        return 1;
    if (strcmp(fm_version(), FM_VERSION) != 0)
        return 2;
    printf("%s %llu\n", fm_version(), (unsigned long long)c->params);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
    return 0;
}
C
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c11 $(pkg-config --cflags flopmeter) "$prefix/use.c" -o "$prefix/use" \
   $(pkg-config --libs flopmeter) -Wl,-rpath,"$libdir"
out=$("$prefix/use")
# torchvision's resnet18 has 11,689,512 parameters (counting.md); the version is pkg-config's
version=$(pkg-config --modversion flopmeter)
test "$out" = "$version 11689512" || { echo "expected '$version 11689512', got '$out'"; exit 1; }
echo "install ok: $prefix"
