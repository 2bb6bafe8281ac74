#!/bin/bash
# The whole project on a GPU machine in one call: unpack the Debian libraries the machine lacks
# (.deps/*.deb, carried), build everything (CUDA + oneDNN + ONNX + cJSON), run every test (the
# CUDA test compares against the CPU backend), then a CUDA measurement and the GPU probe through
# the CLI, so the device-table match and the run-time loading of cuDNN/cuBLASLt are exercised.
# Logs go to $OUT. Leaves the card's settings alone.
set -u
OUT=${OUT:-/tmp/fm_out}
mkdir -p "$OUT" /tmp/deps
for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
CMAKE=$(command -v cmake || echo /opt/torch/.venv/bin/cmake)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$OUT/machine.txt"
$CMAKE -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DFM_WITH_CUDA=ON -DFM_WITH_DNNL=ON \
    -DFM_WITH_ONNX=ON -DFM_WITH_CJSON=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCMAKE_PREFIX_PATH=/tmp/deps/usr -DCMAKE_INCLUDE_PATH=/tmp/deps/usr/include \
    -DCMAKE_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu \
    -DCMAKE_PROGRAM_PATH=/tmp/deps/usr/bin > "$OUT/configure.log" 2>&1 || { tail -20 "$OUT/configure.log"; exit 1; }
$CMAKE --build /tmp/b -j16 > "$OUT/build.log" 2>&1 || { grep -E "error" "$OUT/build.log" | head -20; exit 1; }
echo "== ctest"
(cd /tmp/b && ctest -j6 --output-on-failure --timeout 400 > "$OUT/ctest.log" 2>&1); echo "ctest exit $?"
grep -E "tests passed|Failed|\*\*\*|SKIPPED" "$OUT/ctest.log" | head -20
grep -E "rel|cos|loss" /tmp/b/Testing/Temporary/LastTest.log 2>/dev/null | grep -i cuda | head -0
F=/tmp/b/flopmeter
echo "== measure resnet50 fp16 channels-last graph"
$F measure resnet50 --device cuda --batch 64 --precision fp16 --channels-last --graph --steps 20 \
    --no-per-layer > "$OUT/measure_r50.txt" 2>&1; echo "exit $?"; grep -vE "^ +[0-9]+ " "$OUT/measure_r50.txt" | head -30
echo "== measure resnet18 fp32 per layer"
$F measure resnet18 --device cuda --batch 32 --steps 10 > "$OUT/measure_r18.txt" 2>&1; echo "exit $?"
grep -E "peak|step|utilization|device|predict" "$OUT/measure_r18.txt" | head -12
echo "== probe"
$F probe --device cuda > "$OUT/probe.txt" 2>&1; echo "exit $?"; head -30 "$OUT/probe.txt"
echo "== count start-up"
/usr/bin/time -f "%e s %M KB" $F count resnet50 --format json > /dev/null
