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
                     [--steps 5] [--only NAME ...] [--keep DIR] [--repeat 2]

Every step is measured --repeat times (default 2), in passes over all pairs minutes apart, and
the lower of the medians is the measured step: on a shared machine another process can only
slow a step down, and a burst that spans one measurement (googlenet b4 at 349 ms instead of 197)
spans none of the others.

Output: a Markdown table for bench/RESULTS.md, one row per pair with the measured step and the
signed error (predicted - measured) / measured of each prediction, then the median and the
largest |error| of each. --keep DIR keeps what each pair ran on, for studying the model without
timing again: the calibrations and their samples (calN.json, calN.csv), and per pair the
prediction (NAME.predict.json), the step (NAME.measure.json) and a per-layer measurement
(NAME.layers.json). No PyTorch needed: the networks are the built-in ones and the small
ONNX exports committed in tests/data/onnx/train/.
"""
import argparse
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flopmeter", default=os.path.join(HERE, "..", "build", "flopmeter"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--calibration")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--keep", metavar="DIR")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    exe, thr = args.flopmeter, str(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = args.keep or tmp
        cals = {}   # leave-out list -> calibration file

        def calibration(leave_out):
            if args.calibration:
                return args.calibration
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

        def measure(model, extra):
            m = run_json([exe, "measure", model, *extra, "--threads", thr, "--steps",
                          str(args.steps), "--warmup", "2", "--no-per-layer", "--peak", "1e12",
                          "--format", "json"])
            return m, m["step_ms"]["median"] * 1e-3

        print(f"command: {' '.join(sys.argv)}\n", flush=True)
        rows = []
        for label, model, extra, leave_out in PAIRS:
            if args.only and not any(o in label for o in args.only):
                continue
            out = "(one file)" if args.calibration else (leave_out or "nothing to leave out")
            try:
                cal = calibration(leave_out)
                p = run_json([exe, "predict", model, *extra, "--calibration", cal, "--format",
                              "json"])
                # the same calibration without its eviction curve: every layer as warm as the
                # sweep timed it (the model before cold entries)
                warm_cal = warm_only(cal)
                pw = run_json([exe, "predict", model, *extra, "--calibration", warm_cal,
                               "--format", "json"])
                p["run"]["step_s"]["warm_only"] = pw["run"]["step_s"]["calibrated"]
                m, meas = measure(model, extra)
                if args.keep:
                    name = "".join(c if c.isalnum() else "_" for c in label)
                    lay = run_json([exe, "measure", model, *extra, "--threads", thr, "--steps",
                                    str(args.steps), "--warmup", "2", "--calibration", cal,
                                    "--format", "json"])
                    for suffix, d in (("predict", p), ("measure", m), ("layers", lay)):
                        with open(os.path.join(tmp, f"{name}.{suffix}.json"), "w") as f:
                            json.dump(d, f)
                    with open(os.path.join(tmp, f"{name}.cal"), "w") as f:
                        f.write(cal)
            except (RuntimeError, subprocess.CalledProcessError) as e:
                rows.append((label, out, None, None, None, None, str(e)))
                continue
            rows.append([label, out, model, extra, p["run"]["step_s"], [meas], None])
        # the steps again, minutes later: another process slows a step on a shared machine, it
        # never speeds one up, so the lower of the medians is the machine's own time
        for _ in range(args.repeat - 1):
            for r in rows:
                if r[2] is not None and not r[6]:
                    try:
                        r[5].append(measure(r[2], r[3])[1])
                    except RuntimeError as e:
                        r[6] = str(e)
        print("| network, batch | left out of the calibration | measured ms | PALEO | roofline "
              "| calibrated, warm only | calibrated |")
        print("|---|---|---:|---:|---:|---:|---:|")
        keys = ("paleo", "roofline", "warm_only", "calibrated")
        errs = {k: [] for k in keys}
        for label, out, model, extra, step, meass, failed in rows:
            if failed:
                print(f"| {label} | {out} | failed: {failed} | | | | |")
                continue
            meas = min(meass)
            row = {k: err(step[k], meas) for k in keys}
            for k, v in row.items():
                errs[k].append(v)
            print(f"| {label} | {out} | {meas * 1e3:.1f} | "
                  + " | ".join(f"{row[k]:+.0%}" for k in keys) + " |")
        if errs["calibrated"]:
            med = {k: statistics.median(abs(x) for x in v) for k, v in errs.items()}
            mx = {k: max(abs(x) for x in v) for k, v in errs.items()}
            print(f"| median abs error ({len(errs['calibrated'])} pairs) | | | "
                  + " | ".join(f"{med[k]:.0%}" for k in keys) + " |")
            print("| largest abs error | | | " + " | ".join(f"{mx[k]:.0%}" for k in keys)
                  + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
