#!/bin/sh
# Runs every libFuzzer target built in BUILD (make fuzz): first the committed regression inputs
# of tests/data/fuzz/regressions/<target>/ once each (all must pass), then fuzzing for SECONDS
# from a working corpus in BUILD/corpus/<target> seeded with fuzz/corpus/<target> (and, for
# ONNX, the fixtures in tests/data/onnx). A finding is saved as BUILD/artifacts/<target>-*;
# the script prints how to replay it and exits 1. One summary line per target goes to stdout
# and to BUILD/fuzz-summary.txt (the totals docs/robustness.md records).
# With FUZZ_SEED set (make test sets 1), every target starts from a fresh working corpus with
# libFuzzer's -seed, so a CI run draws its mutations from the sequence the developer's own run
# drew from and mostly repeats it (not exactly: libFuzzer's choices also follow the speed and
# coverage of the run, so the same seed fuzzed three times longer before submitting is the
# margin). `make fuzz` (no seed, FUZZ_TIME seconds, the corpus kept between runs) is the
# search for new findings.
# usage: fuzz/run.sh BUILD SECONDS [TARGET...]   (targets: onnx device_json args trace ncu llm_config cluster; default all)
set -u
build=${1:?usage: fuzz/run.sh BUILD SECONDS [TARGET...]}
seconds=${2:?usage: fuzz/run.sh BUILD SECONDS [TARGET...]}
shift 2
targets=${*:-onnx device_json args trace ncu llm_config cluster}
src=$(cd "$(dirname "$0")/.." && pwd)
status=0
mkdir -p "$build/artifacts"
summary="$build/fuzz-summary.txt"

for t in $targets; do
    exe="$build/fuzz_$t"
    if [ ! -x "$exe" ]; then
        echo "fuzz: $exe is missing (make fuzz builds it)"
        status=1
        continue
    fi
    opts="-timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024"
    [ -n "${FUZZ_SEED:-}" ] && opts="$opts -seed=$FUZZ_SEED"
    [ -f "$src/fuzz/$t.dict" ] && opts="$opts -dict=$src/fuzz/$t.dict"
    # the CLI parser prints usage errors on every run: keep the log readable
    [ "$t" = args ] && opts="$opts -close_fd_mask=3"
    regs="$src/tests/data/fuzz/regressions/$t"
    log="$build/fuzz_$t.log"

    # 1. every committed regression input, once
    nreg=0
    if [ -d "$regs" ]; then
        for f in "$regs"/*; do
            [ -f "$f" ] || continue
            nreg=$((nreg + 1))
            if ! "$exe" $opts "$f" >"$log.replay" 2>&1; then
                echo "fuzz_$t: regression input $f fails again:"
                tail -n 30 "$log.replay"
                status=1
            fi
        done
    fi

    # 2. fuzzing
    corpus="$build/corpus/$t"
    [ -n "${FUZZ_SEED:-}" ] && rm -rf "$corpus"
    mkdir -p "$corpus"
    seeds=""
    [ -d "$src/fuzz/corpus/$t" ] && seeds="$src/fuzz/corpus/$t"
    [ "$t" = onnx ] && [ -d "$src/tests/data/onnx" ] && seeds="$seeds $src/tests/data/onnx"
    before=$(ls "$build/artifacts" | grep -c "^$t-" || true)
    # shellcheck disable=SC2086
    "$exe" $opts -max_total_time="$seconds" -print_final_stats=1 \
        -artifact_prefix="$build/artifacts/$t-" "$corpus" $seeds >"$log" 2>&1
    rc=$?
    after=$(ls "$build/artifacts" | grep -c "^$t-" || true)
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
    line="fuzz_$t: ${runs:-?} executions in ${took:-?} s, ${cov:-cov: ?}, corpus $(ls "$corpus" | wc -l) inputs, $nreg regression inputs replayed, $((after - before)) finding(s)"
    echo "$line"
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) $line" >>"$summary"
    if [ "$rc" -ne 0 ] || [ "$after" -ne "$before" ]; then
        echo "fuzz_$t found a problem (exit $rc); the end of $log:"
        tail -n 40 "$log"
        echo "replay: $exe <artifact>; for a recipe input, FM_FUZZ_DUMP=x.onnx $exe <artifact>"
        echo "writes the model it built. Fix it, then add the input to $regs/."
        status=1
    fi
done
exit $status
