#!/usr/bin/env python3
"""Whole-process time of `flopmeter count MODEL --format json` against counting the same model
with PyTorch's own profiler (torch.profiler.profile(with_flops=True)), in one run.

The PyTorch side is what a user would otherwise run: a fresh python3 process that imports
torch/torchvision, builds the model, and profiles one training step (forward + backward, batch 1)
with with_flops=True, then sums the FLOPs. Both sides are timed as whole processes (start-up
included), each repeated, the median reported, and the ratio printed.

usage: bench/count_vs_profiler.py [--flopmeter build/flopmeter] [--model resnet50] [--reps 5]
Run with Debian's /usr/bin/python3 (python3-torch, python3-torchvision).
"""
import argparse
import json
import platform
import statistics
import subprocess
import sys
import time

PROFILER_SNIPPET = r"""
import sys, torch, torchvision
from torch.profiler import profile, ProfilerActivity
model = getattr(torchvision.models, sys.argv[1])(**({'aux_logits': False, 'init_weights': False}
        if sys.argv[1] in ('googlenet', 'inception_v3') else {}))
hw = 299 if sys.argv[1] == 'inception_v3' else 224
x = torch.randn(1, 3, hw, hw)
y = torch.randint(0, 1000, (1,))
with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
flops = sum(e.flops for e in prof.key_averages() if e.flops)
print(flops)
"""


def time_process(cmd):
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - t0, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flopmeter", default="build/flopmeter")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()

    fm_cmd = [a.flopmeter, "count", a.model, "--format", "json"]
    py_cmd = ["/usr/bin/python3", "-c", PROFILER_SNIPPET, a.model]
    fm_times, py_times = [], []
    fm_out = py_out = ""
    for _ in range(a.reps):   # interleaved, so both see the same machine load
        t, fm_out = time_process(fm_cmd)
        fm_times.append(t)
        t, py_out = time_process(py_cmd)
        py_times.append(t)
    fm = statistics.median(fm_times)
    py = statistics.median(py_times)
    d = json.loads(fm_out)
    t = d["totals"]
    step = sum(t[p]["flops"] for p in ("fwd", "bwd_data", "bwd_weight", "optimizer"))
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}")
    print(f"model {a.model}, batch 1, {a.reps} runs each, median whole-process wall time")
    print(f"flopmeter count --format json : {fm*1e3:9.1f} ms  (step {step:,} FLOP, "
          f"fwd {t['fwd']['flops']:,} FLOP)")
    print(f"torch.profiler with_flops      : {py*1e3:9.1f} ms  (reports {int(py_out.strip()):,} FLOP)")
    print(f"ratio (profiler / flopmeter)   : {py/fm:9.0f}x")


if __name__ == "__main__":
    sys.exit(main())
