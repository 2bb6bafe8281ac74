#!/usr/bin/python3
"""Captures the PyTorch profiler traces flopmeter's trace reader is tested on (tests/test_trace.c).

Trains a torchvision architecture that flopmeter also has built in for a few steps on this
machine's CPU, under the profiler, and writes the traces export_chrome_trace writes:

  kineto  torch.profiler.profile(schedule=..., record_shapes=True, with_flops=True), one
          ProfilerStep#N annotation per step (prof.step()). A PyTorch built with Kineto writes
          its {"traceEvents": [...]} form; one built without it (Debian's python3-torch 1.13)
          falls back to the legacy profiler and writes the bare list [{...}, ...].
  legacy  torch.autograd.profiler.profile(use_kineto=False, ...): the legacy profiler's bare
          list; it has no ProfilerStep of its own, so each step is wrapped in
          record_function("ProfilerStep#N"), the name the Kineto profiler gives its steps

Next to OUT.json it writes OUT.profiler.json: the FLOPs the profiler itself computed
(prof.key_averages(), with_flops=True: calls and flops per op name, over the whole profile).
No trace export writes these per event; flopmeter recomputes them from the trace's shapes
with the profiler's formulas, and tests/test_trace.c checks that both agree.

usage: python3 tests/data/profiles/capture_torch_trace.py {kineto|legacy} OUT.json
       [--model alexnet] [--batch 8] [--size 64] [--classes 10] [--steps 3] [--threads 1]
       [--device cpu|cuda]
The command, the torch version and the machine are printed to stderr for the fixture's note.
"""
import argparse
import platform
import sys

import torch
import torchvision


def make(args):
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(weights=None, num_classes=args.classes)
    model.train().to(args.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(args.batch, 3, args.size, args.size, device=args.device)
    y = torch.randint(0, args.classes, (args.batch,), device=args.device)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if args.device == "cuda":
            torch.cuda.synchronize()   # each ProfilerStep holds its own kernels
    return step


def save_profiler_flops(prof, out):
    import json
    ops = {}
    for e in prof.key_averages():
        if e.flops:
            ops[e.key] = {"calls": e.count, "flops": int(e.flops)}
    with open(out[:-5] + ".profiler.json" if out.endswith(".json") else out + ".profiler.json",
              "w") as f:
        json.dump({"torch": torch.__version__, "source": "prof.key_averages(), with_flops=True",
                   "ops": ops}, f, indent=1, sort_keys=True)
        f.write("\n")


def kineto(args, step):
    from torch.profiler import ProfilerActivity, profile, schedule
    sched = schedule(wait=1, warmup=1, active=args.steps, repeat=1)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device == "cuda" else [])
    with profile(activities=acts, schedule=sched, record_shapes=True,
                 with_flops=True,
                 on_trace_ready=lambda p: (p.export_chrome_trace(args.out),
                                           save_profiler_flops(p, args.out))) as prof:
        for _ in range(2 + args.steps):
            step()
            prof.step()


def legacy(args, step):
    from torch.autograd.profiler import profile, record_function
    step()                                   # warm-up, outside the profile
    with profile(use_kineto=False, record_shapes=True, with_flops=True) as prof:
        for i in range(args.steps):
            with record_function("ProfilerStep#%d" % i):
                step()
    prof.export_chrome_trace(args.out)
    save_profiler_flops(prof, args.out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("form", choices=["kineto", "legacy"])
    p.add_argument("out")
    p.add_argument("--model", default="alexnet")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="cuda: the model and batch on the GPU, and the profiler records the "
                        "GPU's kernels too (kineto only)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    step = make(args)
    (kineto if args.form == "kineto" else legacy)(args, step)
    print("command: %s %s" % (sys.executable, " ".join(sys.argv)), file=sys.stderr)
    print("torch %s, torchvision %s, python %s, %s, %s, %d thread(s)"
          % (torch.__version__, torchvision.__version__, platform.python_version(),
             platform.machine(), cpu_name(), torch.get_num_threads()), file=sys.stderr)
    if args.device == "cuda":
        print("GPU %s, CUDA %s, cuDNN %s" % (torch.cuda.get_device_name(), torch.version.cuda,
                                            torch.backends.cudnn.version()), file=sys.stderr)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    main()
