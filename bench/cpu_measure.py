#!/usr/bin/python3
"""flopmeter's CPU backend against PyTorch, in one run: step time of resnet18 and mobilenet_v2 at
batch 8 and 32, inference (forward only, eval mode, no_grad) and training (forward, cross-entropy,
backward, SGD with momentum 0.9, lr 0.01), with the same thread count, warm-up and timed steps on
both sides; then the CPU probe's figures against their theoretical values.

    /usr/bin/python3 bench/cpu_measure.py [--flopmeter build/flopmeter] [--threads T]
                                          [--steps S] [--warmup W] [--repeat R]

Each configuration runs flopmeter first, then PyTorch, R times alternately (the median of the
R medians is reported), so a change in machine load hits both sides alike. The ratio is
PyTorch time / flopmeter time: above 1 flopmeter is faster. PyTorch is Debian's python3-torch
(1.13, oneDNN inside), eager NCHW as a user runs it; flopmeter runs with --no-per-layer, so it
does not synchronize after every layer. The load average before and after each configuration
and the busiest other processes are printed, because on a small shared machine they decide how
much the figures can be trusted. Output: Markdown for bench/RESULTS.md.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import torch
import torchvision

MODELS = ["resnet18", "mobilenet_v2"]
BATCHES = [8, 32]
MODES = ["infer", "train"]


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def busiest(n=5):
    out = subprocess.run(["ps", "-eo", "pcpu,comm", "--sort=-pcpu"], capture_output=True,
                         text=True).stdout.splitlines()[1:]
    me = {"ps", "python3", "flopmeter"}
    rows = [l.split(None, 1) for l in out if l.strip()]
    return ", ".join("%s %s%%" % (c.strip(), p) for p, c in rows[:n] if c.strip() not in me)


def flopmeter_ms(exe, model, batch, mode, threads, steps, warmup):
    cmd = [exe, "measure", model, "--batch", str(batch), "--" + mode, "--threads", str(threads),
           "--steps", str(steps), "--warmup", str(warmup), "--no-per-layer", "--peak", "1e12",
           "--format", "json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("flopmeter failed: %s\n%s" % (" ".join(cmd), r.stderr))
    return json.loads(r.stdout)["step_ms"]["median"]


def torch_ms(model_name, batch, mode, threads, steps, warmup):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = getattr(torchvision.models, model_name)()
    x = torch.randn(batch, 3, 224, 224)
    y = torch.randint(0, 1000, (batch,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    if mode == "train":
        model.train()

        def step():
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
    else:
        model.eval()

        def step():
            with torch.no_grad():
                model(x)
    times = []
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        step()
        t = (time.perf_counter() - t0) * 1e3
        if i >= warmup:
            times.append(t)
    return statistics.median(times)


def probe_rows(exe, threads):
    r = subprocess.run([exe, "probe", "--threads", str(threads), "--repetitions", "9",
                        "--seconds", "2", "--format", "json"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("flopmeter probe failed:\n" + r.stderr)
    p = json.loads(r.stdout)
    rows = []
    every = "all %d thread%s" % (p["threads"], "" if p["threads"] == 1 else "s")
    for group, label in (("fma_1t", "1 thread"), ("fma_all", every)):
        for prec, s in p[group].items():
            rows.append(("%s FMA, %s" % (prec, label), "GFLOP/s", s, 1e9))
    rows.append(("copy bandwidth", "GB/s", p["bw_copy"], 1e9))
    rows.append(("triad bandwidth", "GB/s", p["bw_triad"], 1e9))
    return p, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flopmeter", default="build/flopmeter")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()

    cpu = platform.processor() or "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    print("date: %s" % datetime.datetime.now().strftime("%Y-%m-%d %H:%M"))
    print("machine: %s, %d CPUs; PyTorch %s (Debian), torchvision %s" %
          (cpu, os.cpu_count(), torch.__version__, torchvision.__version__))
    print("command: /usr/bin/python3 bench/cpu_measure.py --flopmeter %s --threads %d --steps %d "
          "--warmup %d --repeat %d" % (a.flopmeter, a.threads, a.steps, a.warmup, a.repeat))
    print("other load at start: load average %.2f; busiest: %s" % (loadavg(), busiest()))
    print()
    print("| model | batch | mode | flopmeter ms | PyTorch ms | PyTorch / flopmeter | "
          "load avg before / after |")
    print("|---|---|---|---|---|---|---|")
    sys.stdout.flush()
    for model in MODELS:
        for batch in BATCHES:
            for mode in MODES:
                before = loadavg()
                fm, pt = [], []
                for _ in range(a.repeat):
                    fm.append(flopmeter_ms(a.flopmeter, model, batch, mode, a.threads, a.steps,
                                           a.warmup))
                    pt.append(torch_ms(model, batch, mode, a.threads, a.steps, a.warmup))
                f, p = statistics.median(fm), statistics.median(pt)
                print("| %s | %d | %s | %.1f | %.1f | **%.2f** | %.1f / %.1f |" %
                      (model, batch, "training" if mode == "train" else "inference", f, p, p / f,
                       before, loadavg()))
                sys.stdout.flush()
    print()
    p, rows = probe_rows(a.flopmeter, a.threads)
    print("probe (9 repetitions, 2 s per figure): %s; %s; clock %.0f MHz" %
          (p["device"], p["arch"], p["clock_mhz"]))
    print()
    print("| figure | min | median | max | theory | median / theory |")
    print("|---|---|---|---|---|---|")
    for label, unit, s, scale in rows:
        th = s.get("theory")
        print("| %s | %.1f | %.1f | %.1f | %s | %s |" %
              (label + " (" + unit + ")", s["min"] / scale, s["median"] / scale, s["max"] / scale,
               "%.1f" % (th / scale) if th else "?",
               "%.0f%%" % (100 * s["median"] / th) if th else "-"))
    print()
    print("theory: " + p["notes"])
    print("other load at end: load average %.2f; busiest: %s" % (loadavg(), busiest()))


if __name__ == "__main__":
    main()
