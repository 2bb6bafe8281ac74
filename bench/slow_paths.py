#!/usr/bin/python3
"""Finds the CPU backend's slow paths: every layer whose measured time is more than --ratio
(default 5) times its calibrated time, network by network and batch by batch.

    /usr/bin/python3 bench/slow_paths.py --calibration FILE [--flopmeter build/flopmeter]
        [--threads 2] [--batches 1,2,8,32] [--ratio 5] [--min-ms 0.05] [--steps 3]
        [--zoo | --no-zoo] [--onnx FILE ...] [--only NAME ...] [--skip NAME ...]
        [--compare OLD_FLOPMETER --repeat 5]

The calibration (flopmeter calibrate, this machine, the same thread count) says what a layer of
that kind, shape and phase costs when the backend runs it as fast as its other layers of the
kind; a layer far above that is a slow path of the backend (a reference kernel, a per-element
index computation, a reorder), not a modelling error: the calibration is never fitted to the
networks measured here. Networks: the built-in zoo (flopmeter models) unless --no-zoo, and
every ONNX file given (the full-size exports of bench/export_fullsize.py, the PyTorch 2.x
corpus's files with a symbolic batch, tests/data/onnx/torch2/*_dynb.onnx). A (network, batch)
whose step does not fit in memory, or that the backend refuses, is listed as skipped.

--min-ms: layers that take less than this are left out whatever their ratio (a 0.01 ms layer
at 6x its 0.002 ms calibrated time is the per-layer synchronisation, not a slow path).

--passes N (default 2): every (network, batch) is measured in N passes over all of them, and
each layer keeps the lowest of its medians: another process on a shared machine only slows a
layer down, and a burst that spans one pass rarely spans the next.

--compare OLD: the scan runs OLD (an earlier build of flopmeter), so it finds the slow paths OLD
had; they are then measured again with OLD and with --flopmeter, --repeat times each, interleaved (old, new, old, new, ...: a
burst of another process on a shared machine hits both alike), and the table gets the median
of each, "before" and "after".

Prints a Markdown table: network, batch, layer, op, measured ms, calibrated ms, ratio,
achieved MFLOP/s (the layer's counted FLOPs / its measured time), and with --compare the
before/after medians.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def zoo(exe):
    out = subprocess.run([exe, "models"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines()[1:] if line.strip()]


def measure(exe, model, batch, args, calibrated=True):
    """The measure document of one (network, batch), or (None, why). Without the calibration
    (the before/after runs), a fixed peak spares each run the probe."""
    how = ["--calibration", args.calibration] if calibrated else ["--peak", "1e12"]
    cmd = [exe, "measure", model, "--batch", str(batch), "--threads", str(args.threads),
           "--steps", str(args.steps), "--warmup", "1", *how, "--format", "json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        lines = r.stderr.strip().splitlines()
        return None, (lines[-1] if lines else f"exit {r.returncode}")[:160]
    return json.loads(r.stdout), None


def label(model):
    return os.path.basename(model)[:-5] if model.endswith(".onnx") else model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flopmeter", default=os.path.join(HERE, "..", "build", "flopmeter"))
    ap.add_argument("--calibration", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batches", default="1,2,8,32")
    ap.add_argument("--ratio", type=float, default=5.0)
    ap.add_argument("--min-ms", type=float, default=0.05)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--zoo", dest="zoo", action="store_true", default=True)
    ap.add_argument("--no-zoo", dest="zoo", action="store_false")
    ap.add_argument("--onnx", nargs="*", default=[])
    ap.add_argument("--only", nargs="*", help="networks whose name contains one of these")
    ap.add_argument("--skip", nargs="*", default=[], help="networks whose name contains one")
    ap.add_argument("--compare", metavar="OLD_FLOPMETER")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--passes", type=int, default=2)
    a = ap.parse_args()
    models = (zoo(a.flopmeter) if a.zoo else []) + a.onnx
    models = [m for m in models if (not a.only or any(o in label(m) for o in a.only))
              and not any(s in label(m) for s in a.skip)]
    batches = [int(b) for b in a.batches.split(",")]
    print(f"command: {' '.join(sys.argv)}\n", flush=True)
    # the scan: with --compare, the old build finds the slow paths it had; every pair is
    # measured in --passes passes over all pairs, and each layer keeps its lowest median (on a
    # shared machine another process only ever slows a layer down)
    scan_exe = a.compare or a.flopmeter
    found, skipped = {}, {}
    for p in range(a.passes):
        for model in models:
            for batch in batches:
                if (label(model), batch) in skipped:
                    continue
                doc, why = measure(scan_exe, model, batch, a)
                if doc is None:
                    skipped[(label(model), batch)] = why
                    print(f"{label(model)} b{batch}: skipped: {why}", file=sys.stderr,
                          flush=True)
                    continue
                lays = found.setdefault((model, batch), {})
                for lay in doc.get("layers", []):
                    old = lays.get(lay["name"])
                    if old is None or lay.get("measured_ms", 0.0) < old["measured_ms"]:
                        lays[lay["name"]] = lay
                print(f"{label(model)} b{batch} (pass {p + 1}): step "
                      f"{doc['step_ms']['median']:.1f} ms, calibrated "
                      f"{doc.get('calibrated_step_ms', 0):.1f} ms", file=sys.stderr, flush=True)
    slow = []
    for (model, batch), lays in found.items():
        for lay in lays.values():
            meas, cal = lay.get("measured_ms", 0.0), lay.get("calibrated_ms", 0.0)
            if meas < a.min_ms or cal <= 0.0 or meas <= a.ratio * cal:
                continue
            slow.append({"model": model, "batch": batch, "layer": lay["name"],
                         "op": lay["op"], "meas": meas, "cal": cal,
                         "mflops": lay.get("flops", 0) / (meas * 1e-3) / 1e6})
    scanned = len(found)
    if a.compare and slow:
        # old and new in turns, per (network, batch): each run times every layer of the step
        for model, batch in sorted({(s["model"], s["batch"]) for s in slow}):
            rows = [s for s in slow if s["model"] == model and s["batch"] == batch]
            for r in rows:
                r["before"], r["after"] = [], []
            for _ in range(a.repeat):
                for key, exe in (("before", a.compare), ("after", a.flopmeter)):
                    doc, why = measure(exe, model, batch, a, calibrated=False)
                    if doc is None:
                        continue
                    by = {lay["name"]: lay["measured_ms"] for lay in doc.get("layers", [])}
                    for r in rows:
                        if r["layer"] in by:
                            r[key].append(by[r["layer"]])
    head = ("| network | batch | layer | op | measured ms | calibrated ms | ratio "
            "| MFLOP/s |")
    rule = "|---|---:|---|---|---:|---:|---:|---:|"
    if a.compare:
        head += " before ms (median) | after ms (median) | after / calibrated |"
        rule += "---:|---:|---:|"
    print(head)
    print(rule)
    for s in slow:
        line = (f"| {label(s['model'])} | {s['batch']} | {s['layer']} | {s['op']} | "
                f"{s['meas']:.3f} | {s['cal']:.3f} | {s['meas'] / s['cal']:.1f} | "
                f"{s['mflops']:.0f} |")
        if a.compare:
            b = statistics.median(s["before"]) if s.get("before") else float("nan")
            f = statistics.median(s["after"]) if s.get("after") else float("nan")
            line += f" {b:.3f} | {f:.3f} | {f / s['cal']:.1f} |"
        print(line)
    print(f"\n{len(slow)} layers above {a.ratio:g}x their calibrated time (and {a.min_ms} ms) "
          f"in {scanned} (network, batch) pairs; {len(skipped)} skipped"
          + "".join(f"\n- skipped {m} b{b}: {w}" for (m, b), w in skipped.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
