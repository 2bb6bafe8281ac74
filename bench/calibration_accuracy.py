#!/usr/bin/python3
"""Leave-one-out accuracy of flopmeter's time prediction on this machine's CPU, cold and
calibrated, against measured training steps. Calibration times single layers only, never a
network; some of its sweep shapes are taken from the layers of known network families, and for
each (network, batch) pair this calibrates without the shapes of that network's own families
(calibrate --leave-out), so every prediction comes from a calibration that never saw the
network, neither its step nor its layer shapes. Then it predicts the step (cold: PALEO's sum
and the roofline bound with PALEO's fixed 62%/72% of peak; calibrated: the fitted layer times,
moved from their warm toward their cold-cache times by the calibration's eviction curve, plus
the per-step overhead; "calibrated, warm only": the same file without its eviction curve,
every layer as fast as the sweep timed it alone) and measures it, with the same thread count.

    /usr/bin/python3 bench/calibration_accuracy.py [--flopmeter build/flopmeter] [--threads 2]
                     [--calibration FILE (one fixed calibration: no leave-out)] [--quick]
                     [--sweep-once | --sweep-per-pass] [--steps 5] [--only NAME ...] [--keep DIR]
                     [--repeat 3]

--sweep-once times one calibration (with its samples) and fits each pair's leave-out set from
those samples (calibrate --from-samples --leave-out), instead of timing one calibration per
set (about 15 sets, 100 s each on 2 cores); the fits are the same model on the same kind of
timings, without the shapes of the pair's families.

--sweep-per-pass spreads that sweep over the run: before each of the --repeat passes over the
pairs' steps, one calibration of one round (calibrate --rounds 1 --samples); then the samples
are merged (each layer-phase the median of its passes, as calibrate's own rounds are), the
eviction curve and the step overhead are the medians of the passes' files, and each pair is
predicted by the merged samples fitted without its families. The sweep and the steps then see
the same minutes of a shared host whose speed drifts 10-30% in twenty (a sweep of 3 rounds at
the start priced dense convolutions 15% faster than the steps after it ran them). The table's
last lines give the calibration of the first pass alone, what one sweep before the steps
predicts.

On a GPU (--device cuda --precision tf32 --calibration FILE): the GPU's pairs (GPU_PAIRS) on
flopmeter's CUDA backend against one calibration made there (calibrate --device cuda); with
--samples CSV each pair is predicted by those samples fitted again without its families
(calibrate --from-samples --leave-out), timing nothing; --torch JSONL adds PyTorch eager's
step of each pair (bench/gpu/torch_bench.py pairs); --measured DIR takes the steps from an
earlier --keep DIR instead of measuring, so the whole table is re-made on a machine without the
GPU from bench/data/h100 (its README has the command).

Every pair is measured --repeat times (default 3), in passes over all pairs minutes apart
(interleaved, so a burst of another process on a shared machine spoils one run of a pair, not
all of them); the measured step is the median of the runs' medians, and the table gives the
spread of every timed step too (min, median, p90).

Output: a Markdown table for bench/RESULTS.md, one row per pair with the measured step, its
spread, the calibrated prediction and the signed error (predicted - measured) / measured of
each prediction, then the median and the largest |error| of each. --keep DIR keeps what each pair ran on, for studying the model without
timing again: the calibrations and their samples (calN.json, calN.csv), and per pair the
prediction (NAME.predict.json), the step (NAME.measure.json) and a per-layer measurement
(NAME.layers.json). The networks are the built-in ones, the small ONNX exports committed in
tests/data/onnx/train/, and the full-size exports of bench/export_fullsize.py (made on the first
run with --python, a virtual environment with PyTorch; no PyTorch is needed once they exist).
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "tests", "data", "onnx", "train")

# (label, model, extra arguments, the families whose sweep shapes the calibration leaves out:
# the network's own and those it is built from; "" where the sweep takes none from it)
PAIRS = [
    ("resnet18 b8", "resnet18", ["--batch", "8"], "resnet"),
    ("resnet50 b4", "resnet50", ["--batch", "4"], "resnet,resnet50"),
    ("resnext50_32x4d b4", "resnext50_32x4d", ["--batch", "4"], "resnet,resnet50,resnext"),
    ("vgg11 b2", "vgg11", ["--batch", "2"], "vgg"),
    ("alexnet b16", "alexnet", ["--batch", "16"], "alexnet"),
    ("googlenet b4", "googlenet", ["--batch", "4"], ""),
    ("mobilenet_v2 b8", "mobilenet_v2", ["--batch", "8"], "mobilenet_v2"),
    ("mobilenet_v3_large b8", "mobilenet_v3_large", ["--batch", "8"], "mobilenet_v3"),
    ("mobilenet_v3_small b16", "mobilenet_v3_small", ["--batch", "16"], "mobilenet_v3"),
    ("efficientnet_b0 b4", "efficientnet_b0", ["--batch", "4"], "efficientnet"),
    ("ConvNeXt-T 64x64 b8 (ONNX)", os.path.join(TRAIN, "convnext_tiny.onnx"), ["--batch", "8"],
     "convnext"),
    ("DenseNet-121 64x64 b8 (ONNX)", os.path.join(TRAIN, "densenet121.onnx"), ["--batch", "8"],
     ""),
    ("ShuffleNetV2 64x64 b16 (ONNX)", os.path.join(TRAIN, "shufflenet_v2_x0_5.onnx"),
     ["--batch", "16"], ""),
    ("RegNetY-400MF 64x64 b16 (ONNX)", os.path.join(TRAIN, "regnet_y_400mf.onnx"),
     ["--batch", "16"], "regnet"),
    ("Swin-T 64x64 b4 (ONNX)", os.path.join(TRAIN, "swin_t.onnx"), ["--batch", "4"], "swin"),
    ("ViT 2x32 32x32 b64 (ONNX)", os.path.join(TRAIN, "vit_small.onnx"), ["--batch", "64"],
     "vit"),
    ("GPT-2 2x32 b16x32 (ONNX)", os.path.join(TRAIN, "gpt2_small.onnx"),
     ["--input", "ids=16x32"], "gpt2"),
]

# Networks nobody tuned for, added 2026-11-28 and chosen BEFORE any of their errors was seen
# (the list was written, then run): batch 1 (where a step is many small kernels), networks
# at 224x224, and full-size transformers from PyTorch 2.x's exporter. The ONNX ones are made by
# bench/export_fullsize.py (full size, symbolic batch, no weights) into FULL; this script runs
# it when a file is missing.
FULL = os.path.join(HERE, "data", "fullsize")
PAIRS += [
    ("resnet18 b1", "resnet18", ["--batch", "1"], "resnet"),
    ("resnet18 b32", "resnet18", ["--batch", "32"], "resnet"),
    ("resnet50 b1", "resnet50", ["--batch", "1"], "resnet,resnet50"),
    ("resnet50 b8", "resnet50", ["--batch", "8"], "resnet,resnet50"),
    ("vgg11 b1", "vgg11", ["--batch", "1"], "vgg"),
    ("inception_v3 b1", "inception_v3", ["--batch", "1"], ""),
    ("mobilenet_v2 b1", "mobilenet_v2", ["--batch", "1"], "mobilenet_v2"),
    ("mobilenet_v3_large b1", "mobilenet_v3_large", ["--batch", "1"], "mobilenet_v3"),
    ("mobilenet_v3_small b32", "mobilenet_v3_small", ["--batch", "32"], "mobilenet_v3"),
    ("efficientnet_b0 b1", "efficientnet_b0", ["--batch", "1"], "efficientnet"),
    ("RegNetY-400MF 224 b1 (ONNX, TorchScript exporter)",
     os.path.join(FULL, "regnet_y_400mf_ts.onnx"), ["--batch", "1"], "regnet"),
    ("RegNetY-400MF 224 b8 (ONNX, dynamo)", os.path.join(FULL, "regnet_y_400mf_dyn.onnx"),
     ["--batch", "8"], "regnet"),
    ("ConvNeXt-T 224 b1 (ONNX, TorchScript exporter, opset 14)",
     os.path.join(FULL, "convnext_tiny_ts.onnx"), ["--batch", "1"], "convnext"),
    ("ConvNeXt-T 224 b2 (ONNX, dynamo)", os.path.join(FULL, "convnext_tiny_dyn.onnx"),
     ["--batch", "2"], "convnext"),
    ("MobileNetV3-Large 224 b2 (ONNX, TorchScript exporter)",
     os.path.join(FULL, "mobilenet_v3_large_ts.onnx"), ["--batch", "2"], "mobilenet_v3"),
    ("EfficientNet-B0 224 b8 (ONNX, TorchScript exporter)",
     os.path.join(FULL, "efficientnet_b0_ts.onnx"), ["--batch", "8"], "efficientnet"),
    ("ViT-B/16 224 b1 (ONNX, dynamo)", os.path.join(FULL, "vit_b_16_dyn.onnx"),
     ["--batch", "1"], "vit"),
    ("Swin-T 224 b1 (ONNX, dynamo)", os.path.join(FULL, "swin_t_dyn.onnx"), ["--batch", "1"],
     "swin"),
    ("GPT-2 small 1x128 (ONNX, dynamo)", os.path.join(FULL, "gpt2_small_dyn.onnx"),
     ["--batch", "1"], "gpt2"),
    ("BERT-base 1x128 (ONNX, dynamo)", os.path.join(FULL, "bert_base_dyn.onnx"),
     ["--batch", "1"], "bert"),
]

# Fourteen more, added 2026-12-01 and, like the twenty above, written down and committed before
# any of them was run: the zoo's other families and depths at batch 1 and 2, and two of the
# full-size transformers at another batch.
PAIRS += [
    ("resnet34 b2", "resnet34", ["--batch", "2"], "resnet"),
    ("resnet101 b1", "resnet101", ["--batch", "1"], "resnet,resnet50"),
    ("wide_resnet50_2 b1", "wide_resnet50_2", ["--batch", "1"], "resnet,resnet50"),
    ("resnext50_32x4d b1", "resnext50_32x4d", ["--batch", "1"], "resnet,resnet50,resnext"),
    ("vgg13 b1", "vgg13", ["--batch", "1"], "vgg"),
    ("alexnet b1", "alexnet", ["--batch", "1"], "alexnet"),
    ("googlenet b1", "googlenet", ["--batch", "1"], ""),
    ("inception_v3 b4", "inception_v3", ["--batch", "4"], ""),
    ("mobilenet_v2 b2", "mobilenet_v2", ["--batch", "2"], "mobilenet_v2"),
    ("mobilenet_v3_small b1", "mobilenet_v3_small", ["--batch", "1"], "mobilenet_v3"),
    ("efficientnet_b1 b2", "efficientnet_b1", ["--batch", "2"], "efficientnet"),
    ("efficientnet_b2 b1", "efficientnet_b2", ["--batch", "1"], "efficientnet"),
    ("ViT-B/16 224 b2 (ONNX, dynamo)", os.path.join(FULL, "vit_b_16_dyn.onnx"),
     ["--batch", "2"], "vit"),
    ("GPT-2 small 2x128 (ONNX, dynamo)", os.path.join(FULL, "gpt2_small_dyn.onnx"),
     ["--batch", "2"], "gpt2"),
]

# Ten more, added 2026-12-01 after the eviction probe became a chain of loads and the cold
# timings were paired with the warm ones, and committed before any of them was run: depths
# and batches of the zoo not yet in the table, and the config-built GPT-2 and BERT-base
# (not ONNX exports) at 1x64.
PAIRS += [
    ("resnet152 b1", "resnet152", ["--batch", "1"], "resnet,resnet50"),
    ("resnet50 b2", "resnet50", ["--batch", "2"], "resnet,resnet50"),
    ("vgg16 b1", "vgg16", ["--batch", "1"], "vgg"),
    ("vgg11_bn b2", "vgg11_bn", ["--batch", "2"], "vgg"),
    ("googlenet b2", "googlenet", ["--batch", "2"], ""),
    ("mobilenet_v2 b4", "mobilenet_v2", ["--batch", "4"], "mobilenet_v2"),
    ("mobilenet_v3_large b4", "mobilenet_v3_large", ["--batch", "4"], "mobilenet_v3"),
    ("efficientnet_b3 b1", "efficientnet_b3", ["--batch", "1"], "efficientnet"),
    ("gpt2 (config) 1x64", "gpt2", ["--batch", "1", "--seq", "64"], "gpt2"),
    ("bert-base (config) 1x64", "bert-base", ["--batch", "1", "--seq", "64"], "bert"),
]

# The GPU's pairs: built-in networks at their ImageNet size, batches a GPU trains at (and two
# small ones, where launches dominate); every one trainable by flopmeter's CUDA backend and by
# torchvision (bench/gpu/torch_bench.py pairs), so PyTorch eager's step sits beside each.
GPU_PAIRS = [
    ("resnet18 b32", "resnet18", ["--batch", "32"], "resnet"),
    ("resnet18 b128", "resnet18", ["--batch", "128"], "resnet"),
    ("resnet34 b64", "resnet34", ["--batch", "64"], "resnet"),
    ("resnet50 b64", "resnet50", ["--batch", "64"], "resnet,resnet50"),
    ("resnext50_32x4d b32", "resnext50_32x4d", ["--batch", "32"], "resnet,resnet50,resnext"),
    ("wide_resnet50_2 b32", "wide_resnet50_2", ["--batch", "32"], "resnet,resnet50"),
    ("vgg11 b32", "vgg11", ["--batch", "32"], "vgg"),
    ("vgg16_bn b32", "vgg16_bn", ["--batch", "32"], "vgg"),
    ("alexnet b128", "alexnet", ["--batch", "128"], "alexnet"),
    ("googlenet b32", "googlenet", ["--batch", "32"], ""),
    ("mobilenet_v2 b16", "mobilenet_v2", ["--batch", "16"], "mobilenet_v2"),
    ("mobilenet_v2 b64", "mobilenet_v2", ["--batch", "64"], "mobilenet_v2"),
    ("mobilenet_v3_large b64", "mobilenet_v3_large", ["--batch", "64"], "mobilenet_v3"),
    ("mobilenet_v3_small b128", "mobilenet_v3_small", ["--batch", "128"], "mobilenet_v3"),
    ("efficientnet_b0 b64", "efficientnet_b0", ["--batch", "64"], "efficientnet"),
    ("efficientnet_b2 b32", "efficientnet_b2", ["--batch", "32", "--input", "3x224x224"],
     "efficientnet"),
]


def run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()[-300:]}")
    return json.loads(r.stdout)


def warm_only(cal):
    """A copy of calibration file cal without its eviction curve (cal.warm.json)."""
    path = cal[:-5] + ".warm.json"
    if not os.path.exists(path):
        with open(cal) as f:
            d = json.load(f)
        d.pop("eviction", None)
        with open(path, "w") as f:
            json.dump(d, f, indent=1)
    return path


def err(pred, meas):
    return (pred - meas) / meas


def table(rows, torch_ms):
    """The Markdown table: per pair the measured step and the signed error of each prediction;
    with PyTorch eager's steps (torch_ms, by (model, batch)), its step and the calibrated
    prediction's error against it; then the median and the largest |error| of each."""
    keys = ("paleo", "roofline", "warm_only", "calibrated")
    head = ("| network, batch | left out of the calibration | measured ms | steps min / median / "
            "p90 ms | calibrated ms | PALEO | roofline | calibrated, warm only | calibrated |")
    rule = "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    if any(r[4] and "first" in r[4] for r in rows):   # --sweep-per-pass
        keys += ("first",)
        head += " calibrated by the first pass's sweep alone |"
        rule += "---:|"
    if torch_ms:
        keys += ("torch",)
        head += " PyTorch eager ms | calibrated vs PyTorch |"
        rule += "---:|---:|"
    lines = [head, rule]
    errs = {k: [] for k in keys}
    for label, out, model, extra, step, meass, failed, steps in rows:
        if failed:
            lines.append(f"| {label} | {out} | failed: {failed} |" + " |" * (len(keys) + 2))
            continue
        meas = statistics.median(meass)
        spread = sorted(steps) or [meas]
        p90 = spread[min(len(spread) - 1, int(0.9 * len(spread)))]
        row = {k: err(step[k], meas) for k in keys if k != "torch"}
        tail = ""
        if torch_ms:
            batch = int(extra[extra.index("--batch") + 1])
            t = torch_ms.get((model, batch))
            if t:
                row["torch"] = err(step["calibrated"], t)
                tail = f" {t * 1e3:.1f} | {row['torch']:+.0%} |"
            else:
                tail = " - | - |"
        for k, v in row.items():
            errs[k].append(v)
        lines.append(f"| {label} | {out} | {meas * 1e3:.1f} | {spread[0] * 1e3:.1f} / "
                     f"{statistics.median(spread) * 1e3:.1f} / {p90 * 1e3:.1f} | "
                     f"{step['calibrated'] * 1e3:.1f} | "
                     + " | ".join(f"{row[k]:+.0%}" for k in keys if k != "torch") + " |" + tail)
    if errs["calibrated"]:
        def stat(fn, k):
            return f"{fn(abs(x) for x in errs[k]):.0%}" if errs[k] else "-"
        cols = [k for k in keys if k != "torch"]
        extra_med = f" | {stat(statistics.median, 'torch')} |" if torch_ms else ""
        extra_max = f" | {stat(max, 'torch')} |" if torch_ms else ""
        lines.append(f"| median abs error ({len(errs['calibrated'])} pairs) | | | | | "
                     + " | ".join(stat(statistics.median, k) for k in cols) + " |" + extra_med)
        lines.append("| largest abs error | | | | | " + " | ".join(stat(max, k) for k in cols)
                     + " |" + extra_max)
    return "\n".join(lines)


def merge_passes(passes, tmp):
    """One calibration from the passes' (json, csv) pairs (--sweep-per-pass): each sample's
    seconds the median of its passes (the rows must agree on everything else: the same sweep),
    the step overhead and each point of the eviction curve the median of the passes' files (a
    file without a curve counts as 0 there: it prices every layer warm). Returns the merged
    (json, csv)."""
    tables = []
    for _, path in passes:
        with open(path, newline="") as f:
            tables.append(list(csv.reader(f)))
    head = tables[0][0]
    sec = head.index("seconds")
    if any(len(t) != len(tables[0]) or t[0] != head for t in tables):
        raise RuntimeError("the passes' samples differ in rows: not the same sweep")
    out = [head]
    for i in range(1, len(tables[0])):
        rows = [t[i] for t in tables]
        same = [[c for j, c in enumerate(r) if j != sec] for r in rows]
        if any(x != same[0] for x in same):
            raise RuntimeError(f"sample row {i} differs between the passes: {rows}")
        merged = list(rows[0])
        merged[sec] = repr(statistics.median(float(r[sec]) for r in rows))
        out.append(merged)
    files = []
    for path, _ in passes:
        with open(path) as f:
            files.append(json.load(f))
    cal = dict(files[0])
    cal["rounds"] = sum(f.get("rounds", 1) for f in files)
    cal["step_overhead_s"] = statistics.median(f["step_overhead_s"] for f in files)
    curves = [f.get("eviction") for f in files]
    base = next((c for c in curves if c), None)
    cal.pop("eviction", None)
    if base:
        cal["eviction"] = [{"bytes": pt["bytes"],
                            "fraction": statistics.median(c[k]["fraction"] if c else 0.0
                                                          for c in curves)}
                           for k, pt in enumerate(base)]
    jpath, cpath = os.path.join(tmp, "merged.json"), os.path.join(tmp, "merged.csv")
    with open(jpath, "w") as f:
        json.dump(cal, f, indent=1)
    with open(cpath, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(out)
    return jpath, cpath


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flopmeter", default=os.path.join(HERE, "..", "build", "flopmeter"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--calibration")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--keep", metavar="DIR")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sweep-once", action="store_true",
                    help="calibrate once (with --samples) and fit each pair's leave-out from "
                         "those samples (calibrate --from-samples), instead of one timed "
                         "calibration per leave-out set")
    ap.add_argument("--sweep-per-pass", action="store_true",
                    help="one calibration round before each pass over the steps, merged "
                         "(each sample the median of its passes) and fitted per leave-out set: "
                         "the sweep and the steps see the same minutes of the host")
    ap.add_argument("--python", default=os.environ.get(
        "FLOPMETER_PY", "/root/.cache/flopmeter/venv/bin/python"),
                    help="a Python with torch, torchvision, transformers and onnxscript, to "
                         "make the missing files of bench/export_fullsize.py")
    ap.add_argument("--device", default="cpu",
                    help="cuda: the GPU's pairs (GPU_PAIRS) on flopmeter's CUDA backend, with "
                         "one --calibration made there")
    ap.add_argument("--precision", default="fp32", help="measure and predict at this precision")
    ap.add_argument("--torch", metavar="JSONL",
                    help="PyTorch eager's steps of the same pairs (bench/gpu/torch_bench.py "
                         "pairs): a column of the calibrated error against them")
    ap.add_argument("--measured", metavar="DIR",
                    help="each pair's measured step from DIR/NAME.measure.json, kept by an "
                         "earlier --keep run, instead of measuring: re-predicts another "
                         "machine's pairs (a GPU's) here, with --calibration")
    ap.add_argument("--samples", metavar="CSV",
                    help="with --calibration: the samples it was fitted on (calibrate "
                         "--samples); each pair is predicted by a fit of them without its "
                         "families' shapes (calibrate --from-samples --leave-out), nothing is "
                         "timed again")
    ap.add_argument("--print-torch-pairs", action="store_true",
                    help="print the pairs as torch_bench.py pairs takes them, and stop")
    args = ap.parse_args()
    gpu = args.device != "cpu"
    pairs = GPU_PAIRS if gpu else PAIRS
    if args.print_torch_pairs:
        print(",".join(f"{m}:{x[x.index('--batch') + 1]}" for _, m, x, _ in pairs))
        return 0
    if gpu and not args.calibration:
        ap.error("--device cuda needs --calibration FILE (made there by flopmeter calibrate "
                 "--device cuda): one calibration per pair would take the GPU for an hour")
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    exe, thr = args.flopmeter, str(args.threads)
    # where and how each step runs: the CPU's thread count, or the GPU and its precision
    run_opts = (["--device", args.device, "--precision", args.precision] if gpu
                else ["--threads", thr, "--peak", "1e12"])
    pred_opts = ["--precision", args.precision] if gpu else []
    torch_ms = {}
    if args.torch:
        with open(args.torch) as f:
            for line in f:
                r = json.loads(line)
                if "step_ms" in r:
                    torch_ms[(r["model"], r["batch"])] = r["step_ms"] * 1e-3
    labels = {p[0] for p in pairs}

    def picked(label):
        # --only NAME: the pair labelled NAME exactly, else every pair whose label contains it
        return not args.only or any(o == label or (o not in labels and o in label)
                                    for o in args.only)

    chosen = [p for p in pairs if picked(p[0])]
    missing = sorted({os.path.basename(m)[:-5] for _, m, _, _ in chosen
                      if m.startswith(FULL) and not os.path.exists(m)})
    if missing and not args.measured:
        print(f"exporting {', '.join(missing)} (bench/export_fullsize.py)", file=sys.stderr,
              flush=True)
        # the exporter's progress goes to stderr: stdout is the table
        subprocess.run([args.python, os.path.join(HERE, "export_fullsize.py"), *missing],
                       stdout=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = args.keep or tmp
        cals = {}   # leave-out list -> calibration file
        if args.sweep_once and not args.calibration and not gpu:
            # one timed sweep; each leave-out set is then a fit of its samples
            args.calibration = os.path.join(tmp, "sweep.json")
            args.samples = os.path.join(tmp, "sweep.csv")
            cmd = [exe, "calibrate", "--threads", thr, "-o", args.calibration, "--samples",
                   args.samples]
            if args.quick:
                cmd.append("--quick")
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def refit(samples, like, leave_out, cache, tag):
            # the fit re-made from the samples of calibration `like`, times nothing
            if leave_out not in cache:
                path = os.path.join(tmp, f"{tag}{len(cache)}.json")
                cmd = [exe, "calibrate", "--from-samples", samples, "--like", like, "-o", path]
                if leave_out:
                    cmd += ["--leave-out", leave_out]
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
                cache[leave_out] = path
            return cache[leave_out]

        def calibration(leave_out):
            if args.calibration and not args.samples:
                return args.calibration
            if args.samples:
                return refit(args.samples, args.calibration, leave_out, cals, "refit")
            if leave_out not in cals:
                path = os.path.join(tmp, f"cal{len(cals)}.json")
                cmd = [exe, "calibrate", "--threads", thr, "-o", path]
                if args.keep:
                    cmd += ["--samples", path[:-5] + ".csv"]
                if leave_out:
                    cmd += ["--leave-out", leave_out]
                if args.quick:
                    cmd.append("--quick")
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                cals[leave_out] = path
            return cals[leave_out]

        def measure(model, extra, name):
            if args.measured:
                with open(os.path.join(args.measured, f"{name}.measure.json")) as f:
                    m = json.load(f)
                return m, m["step_ms"]["median"] * 1e-3, [x * 1e-3 for x in m["step_ms"]["all"]]
            m = run_json([exe, "measure", model, *extra, *run_opts, "--steps", str(args.steps),
                          "--warmup", "2", "--no-per-layer", "--format", "json"])
            return m, m["step_ms"]["median"] * 1e-3, [x * 1e-3 for x in m["step_ms"]["all"]]

        print(f"command: {' '.join(sys.argv)}\n", flush=True)
        # --sweep-per-pass: every pass's steps right after a calibration round of their own;
        # the pairs are predicted afterwards from the rounds merged
        per_pass = args.sweep_per_pass and not args.calibration and not gpu and not args.measured
        timed, first, first_cals = {}, None, {}
        if per_pass:
            passes = []
            for k in range(args.repeat):
                j, c = os.path.join(tmp, f"pass{k}.json"), os.path.join(tmp, f"pass{k}.csv")
                subprocess.run([exe, "calibrate", "--threads", thr, "-o", j, "--samples", c,
                                *(["--quick"] if args.quick else ["--rounds", "1"])],
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                passes.append((j, c))
                print(f"pass {k + 1} of {args.repeat}: calibrated", file=sys.stderr, flush=True)
                for label, model, extra, _ in pairs:
                    if not picked(label):
                        continue
                    t = timed.setdefault(label, {"medians": [], "steps": [], "json": None,
                                                 "failed": None})
                    if t["failed"]:
                        continue
                    try:
                        m, med, steps = measure(model, extra, None)
                    except RuntimeError as e:
                        t["failed"] = str(e)
                        continue
                    t["medians"].append(med)
                    t["steps"].extend(steps)
                    t["json"] = t["json"] or m
            args.calibration, args.samples = merge_passes(passes, tmp)
            first = passes[0]
        rows = []
        for label, model, extra, leave_out in pairs:
            if not picked(label):
                continue
            out = ("(one file)" if args.calibration and not args.samples
                   else (leave_out or "nothing to leave out"))
            name = "".join(c if c.isalnum() else "_" for c in label)
            try:
                cal = calibration(leave_out)
                # on a GPU the file is the device too (its probed ceilings, no GPU needed)
                how = "--devices" if gpu else "--calibration"
                p = run_json([exe, "predict", model, *extra, *pred_opts, how, cal,
                              "--format", "json"])
                # the same calibration without its eviction curve: every layer as warm as the
                # sweep timed it (the model before cold entries)
                warm_cal = warm_only(cal)
                pw = run_json([exe, "predict", model, *extra, *pred_opts, how, warm_cal,
                               "--format", "json"])
                p["run"]["step_s"]["warm_only"] = pw["run"]["step_s"]["calibrated"]
                if per_pass:
                    t = timed[label]
                    if t["failed"]:
                        raise RuntimeError(t["failed"])
                    m, meas, steps = t["json"], t["medians"], t["steps"]
                    fp = run_json([exe, "predict", model, *extra, how,
                                   refit(first[1], first[0], leave_out, first_cals, "first"),
                                   "--format", "json"])
                    p["run"]["step_s"]["first"] = fp["run"]["step_s"]["calibrated"]
                else:
                    m, meas, steps = measure(model, extra, name)
                    meas = [meas]
                if args.keep and not args.measured:
                    lay_opts = run_opts if gpu else ["--threads", thr]
                    lay_cmd = [exe, "measure", model, *extra, *lay_opts, "--steps",
                               str(args.steps), "--warmup", "2", "--calibration", cal,
                               "--format", "json"]
                    try:
                        lay = run_json(lay_cmd)
                    except RuntimeError as e:   # keep the pair's step: say why, go on
                        print(f"{label}: per-layer measure: {e}", file=sys.stderr, flush=True)
                        lay = run_json(lay_cmd + ["--force-calibration"])
                    for suffix, d in (("predict", p), ("measure", m), ("layers", lay)):
                        with open(os.path.join(tmp, f"{name}.{suffix}.json"), "w") as f:
                            json.dump(d, f)
                    with open(os.path.join(tmp, f"{name}.cal"), "w") as f:
                        f.write(cal)
            except (RuntimeError, subprocess.CalledProcessError) as e:
                rows.append((label, out, None, None, None, None, str(e), []))
                print(f"{label}: failed: {e}", file=sys.stderr, flush=True)
                continue
            rows.append([label, out, model, extra, p["run"]["step_s"], meas, None, steps])
            print(f"{label}: measured {statistics.median(meas) * 1e3:.2f} ms, calibrated "
                  f"{p['run']['step_s']['calibrated'] * 1e3:.2f} ms", file=sys.stderr, flush=True)
        # the steps again, in passes over all pairs minutes apart (interleaved: a burst of
        # another process on the shared machine spoils one run of a pair, not all); the
        # figure is the median of the runs' medians, the spread that of every step
        for _ in range(0 if args.measured or per_pass else args.repeat - 1):
            for r in rows:
                if r[2] is not None and not r[6]:
                    try:
                        _, med, steps = measure(r[2], r[3], None)
                        r[5].append(med)
                        r[7].extend(steps)
                    except RuntimeError as e:
                        r[6] = str(e)
        print(table(rows, torch_ms))
    return 0


if __name__ == "__main__":
    sys.exit(main())
