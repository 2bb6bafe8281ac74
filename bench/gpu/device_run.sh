#!/bin/bash
# One call on a GPU machine, from the repository root: unpack the Debian libraries the machine
# lacks (.deps/*.deb), use the binaries built elsewhere in .gpubin/ (or build here when they do
# not load), then run the phases named on the command line. Logs and JSON lines go to $OUT.
#
#   bench/gpu/device_run.sh [test] [probe] [smoke] [bench MODELS BATCHES PRECISIONS LAYOUTS]
#                           [calib PREC] [accuracy PREC] [torchpairs PREC] [ncu] [trace]
#
# calib, accuracy and torchpairs are the GPU half of the calibration study (docs/calibration.md):
# flopmeter calibrate on the GPU, then bench/calibration_accuracy.py's GPU pairs measured with
# flopmeter (step and per layer, kept) and with PyTorch eager. ncu and trace capture the profile
# readers' fixtures: Nsight Compute's CSV of one flopmeter training step with its NVTX ranges,
# and a PyTorch profiler trace of a CUDA training step. What they write goes to $OUT/gpu_data/
# and, packed after every phase, to $OUT/gpu_data.tgz (the machine returns few files).
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
if [ ! -x $BIN/gpu_bench ] || ldd $BIN/gpu_bench $BIN/flopmeter | grep -q "not found"; then
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
    calib)
        prec=$2
        shift 2
        mkdir -p "$OUT/gpu_data"
        timeout 240 $BIN/flopmeter calibrate --device cuda --precision "$prec" --rounds 2 \
            -o "$OUT/gpu_data/cuda_$prec.calib.json" \
            --samples "$OUT/gpu_data/cuda_$prec.samples.csv" > "$OUT/gpu_data/calib_$prec.txt" 2>&1
        echo "calibrate exit $?"
        tail -c 2500 "$OUT/gpu_data/calib_$prec.txt"
        ;;
    accuracy)
        prec=$2
        shift 2
        timeout 240 python3 bench/calibration_accuracy.py --flopmeter $BIN/flopmeter \
            --device cuda --precision "$prec" --calibration "$OUT/gpu_data/cuda_$prec.calib.json" \
            --keep "$OUT/gpu_data/keep_$prec" --repeat 1 --steps 10 \
            > "$OUT/gpu_data/accuracy_$prec.md" 2> "$OUT/gpu_data/accuracy_$prec.err"
        echo "accuracy exit $?"
        cat "$OUT/gpu_data/accuracy_$prec.md"; tail -c 600 "$OUT/gpu_data/accuracy_$prec.err"
        ;;
    torchpairs)
        prec=$2
        shift 2
        mkdir -p "$OUT/gpu_data"
        timeout 150 python3 bench/gpu/torch_bench.py pairs \
            "$(python3 bench/calibration_accuracy.py --device cuda --print-torch-pairs)" \
            "$prec" nchw 5 20 > "$OUT/gpu_data/torch_$prec.jsonl" 2> "$OUT/gpu_data/torch_$prec.err"
        echo "torch pairs exit $?"
        cut -c1-160 "$OUT/gpu_data/torch_$prec.jsonl"; tail -c 400 "$OUT/gpu_data/torch_$prec.err"
        ;;
    ncu)
        shift
        mkdir -p "$OUT/gpu_data"
        m=sm__sass_thread_inst_executed_op_dadd_pred_on.sum,sm__sass_thread_inst_executed_op_dmul_pred_on.sum
        m=$m,sm__sass_thread_inst_executed_op_dfma_pred_on.sum,sm__sass_thread_inst_executed_op_fadd_pred_on.sum
        m=$m,sm__sass_thread_inst_executed_op_fmul_pred_on.sum,sm__sass_thread_inst_executed_op_ffma_pred_on.sum
        m=$m,sm__sass_thread_inst_executed_op_hadd_pred_on.sum,sm__sass_thread_inst_executed_op_hmul_pred_on.sum
        m=$m,sm__sass_thread_inst_executed_op_hfma_pred_on.sum,sm__inst_executed_pipe_tensor.sum
        m=$m,dram__bytes.sum,gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second
        NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
        ncu_cmd="$BIN/flopmeter measure alexnet --input 3x64x64 --classes 10 --batch 8 --device cuda --steps 1 --warmup 0 --no-per-layer"
        echo "$NCU --csv --nvtx --metrics $m $ncu_cmd" > "$OUT/gpu_data/ncu_alexnet_cmd.txt"
        "$NCU" --version >> "$OUT/gpu_data/ncu_alexnet_cmd.txt" 2>&1
        LC_ALL=C timeout 120 "$NCU" --csv --nvtx --metrics "$m" $ncu_cmd \
            > "$OUT/gpu_data/ncu_alexnet_fm.csv" 2> "$OUT/gpu_data/ncu_alexnet_fm.err"
        echo "ncu exit $?, $(wc -l < "$OUT/gpu_data/ncu_alexnet_fm.csv") lines"
        tail -c 600 "$OUT/gpu_data/ncu_alexnet_fm.err"
        ;;
    trace)
        shift
        mkdir -p "$OUT/gpu_data"
        timeout 90 python3 tests/data/profiles/capture_torch_trace.py kineto \
            "$OUT/gpu_data/alexnet_cuda_kineto.json" --device cuda \
            2> "$OUT/gpu_data/alexnet_cuda_kineto.txt"
        echo "trace exit $?"; cat "$OUT/gpu_data/alexnet_cuda_kineto.txt"
        ls -la "$OUT/gpu_data"/alexnet_cuda_kineto*
        ;;
    *)
        echo "unknown phase $1"; exit 2
        ;;
    esac
    [ -d "$OUT/gpu_data" ] && tar czf "$OUT/gpu_data.tgz" -C "$OUT" gpu_data
done
[ -d "$OUT/gpu_data" ] && rm -rf "$OUT/gpu_data"   # packed: the machine returns few files
if [ -s "$OUT/bench_fm.jsonl" ]; then
    python3 bench/gpu/report.py "$OUT/bench_fm.jsonl" "$OUT/bench_torch.jsonl" > "$OUT/report.md" 2>&1
    cat "$OUT/report.md"
fi
