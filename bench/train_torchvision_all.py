#!/usr/bin/python3
"""Trains every classification model of torchvision, exported to ONNX, with `flopmeter measure`
on the CPU: the loss of the first and the last of a few steps on one fixed batch, and the step
time. What "flopmeter measure trains any torchvision export" rests on.

    /usr/bin/python3 bench/train_torchvision_all.py [--flopmeter build/flopmeter] [--batch 2]
                                                    [--steps 3] [--threads T] [--only NAME ...]

Each model is exported by tools/export_train_models.py --torchvision-all (eval mode, BatchNorm
kept, weights stripped: flopmeter draws its own) into a temporary folder, at torchvision's
evaluation size (299 for Inception-v3, 224 for the others). Output: Markdown rows for
bench/RESULTS.md; a model that fails says why in its row.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import export_train_models as etm  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flopmeter", default=os.path.join(HERE, "..", "build", "flopmeter"))
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    table = etm.torchvision_all()
    names = [n for n in table if not args.only or n in args.only]
    print("| model | loss first -> last | step ms | |")
    print("|---|---|---:|---|")
    ok = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            path = os.path.join(tmp, name + ".onnx")
            try:
                import onnx
                onnx.save(etm.export(name, *table[name], 17), path)
            except Exception as e:   # noqa: BLE001 - an export torch cannot make: say so
                print(f"| {name} | export failed: {type(e).__name__} | | |", flush=True)
                continue
            cmd = [args.flopmeter, "measure", path, "--batch", str(args.batch), "--steps",
                   str(args.steps), "--warmup", "0", "--threads", str(args.threads),
                   "--no-per-layer", "--peak", "1e12", "--format", "json"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            os.remove(path)
            if r.returncode:
                why = (r.stderr.strip().splitlines() or ["?"])[-1][:200]
                print(f"| {name} | failed | | {why} |", flush=True)
                continue
            j = json.loads(r.stdout)
            first, last = j["loss"]["first"], j["loss"]["last"]
            falls = last < first
            ok += falls
            print(f"| {name} | {first:.4f} -> {last:.4f} | {j['step_ms']['median']:.0f} | "
                  f"{'falls' if falls else 'DOES NOT FALL'} |", flush=True)
    print(f"\n{ok} of {len(names)} train with a falling loss")
    return 0


if __name__ == "__main__":
    sys.exit(main())
