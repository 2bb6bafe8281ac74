#!/bin/bash
# One call on a GPU machine, from the repository root: unpack the Debian libraries the machine
# lacks (.deps/*.deb), use the binaries built elsewhere in .gpubin/ (or build here when they do
# not load), then run the phases named on the command line. Logs and JSON lines go to $OUT.
#
#   bench/gpu/device_run.sh [test] [probe] [smoke] [bench MODELS BATCHES PRECISIONS LAYOUTS]
#
# The machine's settings are left as found: no clock, power or persistence changes.
set -u
OUT=${OUT:-/tmp/fm_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1

mkdir -p /tmp/deps
for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
# oneDNN's own needs (OpenCL loader, OpenMP) come last: the machine's copies win when present
mkdir -p /tmp/deps_extra
for f in .gpubin/deb/*.deb; do [ -f "$f" ] && dpkg -x "$f" /tmp/deps_extra; done
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64:/tmp/deps_extra/usr/lib/x86_64-linux-gnu

{ date -u; nvidia-smi; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv; } \
    > "$OUT/machine.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())' >> "$OUT/machine.txt" 2>&1

BIN=.gpubin
if [ ! -x $BIN/gpu_bench ] || ldd $BIN/gpu_bench $BIN/test_cuda_backend | grep -q "not found"; then
    echo "building here" | tee -a "$OUT/machine.txt"
    ldd $BIN/gpu_bench 2>&1 | grep "not found" >> "$OUT/machine.txt"
    CMAKE=$(command -v cmake || echo /opt/torch/.venv/bin/cmake)
    $CMAKE -S . -B /tmp/build -DCMAKE_BUILD_TYPE=Release -DFM_WITH_CUDA=ON -DFM_WITH_DNNL=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_PREFIX_PATH=/tmp/deps/usr \
        -DCMAKE_INCLUDE_PATH=/tmp/deps/usr/include \
        -DCMAKE_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu > "$OUT/build.log" 2>&1
    $CMAKE --build /tmp/build -j16 >> "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
    bench/gpu/build.sh /tmp/build >> "$OUT/build.log" 2>&1
    mkdir -p /tmp/bin
    cp /tmp/build/gpu_bench /tmp/build/tests/test_cuda_backend /tmp/build/flopmeter /tmp/bin/
    BIN=/tmp/bin
fi

while [ $# -gt 0 ]; do
    case "$1" in
    test)
        shift
        timeout 300 $BIN/test_cuda_backend > "$OUT/test.log" 2>&1
        echo "test_cuda_backend exit $?" | tee -a "$OUT/test.log"
        grep -E "rel.err|step [0-9]|median|SKIPPED|FAILED|PASSED|try --batch|TFLOP" "$OUT/test.log" | cut -c1-330
        ;;
    probe)
        shift
        $BIN/gpu_bench probe > "$OUT/probe_fm.jsonl" 2>&1
        python3 bench/gpu/torch_bench.py probe > "$OUT/probe_torch.jsonl" 2>&1
        tail -c 1500 "$OUT/probe_fm.jsonl"; tail -c 600 "$OUT/probe_torch.jsonl"
        ;;
    smoke)
        shift
        FLOPMETER_CUDA_HOST_PROFILE=1 $BIN/gpu_bench train resnet50 64 fp16 nhwc 0 5 10 \
            2> "$OUT/hostprof.txt" | tee -a "$OUT/smoke.jsonl" | cut -c1-200
        cat "$OUT/hostprof.txt"
        ;;
    bench)
        models=$2 batches=$3 precs=$4 layouts=$5
        shift 5
        $BIN/gpu_bench train "$models" "$batches" "$precs" "$layouts" 0,1 10 30 \
            >> "$OUT/bench_fm.jsonl" 2>> "$OUT/bench.err"
        python3 bench/gpu/torch_bench.py train "$models" "$batches" "$precs" "$layouts" 10 30 \
            >> "$OUT/bench_torch.jsonl" 2>> "$OUT/bench.err"
        ;;
    *)
        echo "unknown phase $1"; exit 2
        ;;
    esac
done
if [ -s "$OUT/bench_fm.jsonl" ]; then
    python3 bench/gpu/report.py "$OUT/bench_fm.jsonl" "$OUT/bench_torch.jsonl" > "$OUT/report.md" 2>&1
    cat "$OUT/report.md"
fi
