#!/bin/sh
# Builds bench/gpu/gpu_bench against a flopmeter build directory that has the CUDA backend
# (default build-cuda): the same libraries the CLI links.
#   bench/gpu/build.sh [BUILD_DIR]
set -eu
BUILD=${1:-build-cuda}
LIBS=$(sed -e 's/^ *//' -e 's/"//g' "$BUILD/CMakeFiles/flopmeter.dir/linkLibs.rsp" | sed -e "s|libflopmeter.a|$BUILD/libflopmeter.a|")
g++ -O2 -x c -std=c11 -D_GNU_SOURCE -Iinclude -Isrc bench/gpu/gpu_bench.c -x none \
    -o "$BUILD/gpu_bench" $LIBS -L/usr/local/cuda/targets/x86_64-linux/lib
echo "built $BUILD/gpu_bench"
