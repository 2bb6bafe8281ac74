#!/usr/bin/env python3
"""PyTorch eager's side of the GPU benchmark (bench/gpu/README.md), the alternative a user
would run: the same torchvision model, batch, precision and memory format as flopmeter's run,
trained with SGD (lr 0.01, momentum 0.9) on one fixed random batch; warm-up steps discarded,
each timed step between two CUDA events, the median kept. Also PyTorch's own matmul and
device-to-device copy rates, for the probe comparison. One JSON object per line on stdout.

Precision settings, exactly:
  fp32: torch.backends.cuda.matmul.allow_tf32 = False, torch.backends.cudnn.allow_tf32 = False
  tf32: both True
  fp16: torch.autocast("cuda", torch.float16) + torch.amp.GradScaler (what a user runs)
  bf16: torch.autocast("cuda", torch.bfloat16), no scaler
always torch.backends.cudnn.benchmark = True (autotuned convolutions, as flopmeter's search).
efficientnet_b0 is built with stochastic_depth_prob=0: flopmeter's graph has no stochastic
depth (src/frontend/zoo/efficientnet.c).

  torch_bench.py train MODELS BATCHES PRECISIONS LAYOUTS [WARMUP STEPS]
  torch_bench.py pairs MODEL:BATCH[,MODEL:BATCH...] PRECISION LAYOUT [WARMUP STEPS]
  torch_bench.py probe
googlenet is built without its auxiliary heads (aux_logits=False), as flopmeter's.
"""
import json
import statistics
import sys

import torch
import torch.nn.functional as F
import torchvision


def set_precision(prec):
    tf32 = prec == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = True


def build(name, nhwc):
    kwargs = {"num_classes": 1000}
    if name.startswith("efficientnet"):
        kwargs["stochastic_depth_prob"] = 0.0
    if name == "googlenet":
        kwargs["aux_logits"] = False   # flopmeter's GoogLeNet has no auxiliary heads
    model = getattr(torchvision.models, name)(**kwargs).cuda().train()
    if nhwc:
        model = model.to(memory_format=torch.channels_last)
    return model


def train(name, batch, prec, layout, warmup, steps):
    set_precision(prec)
    nhwc = layout == "nhwc"
    torch.manual_seed(0)
    model = build(name, nhwc)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    if nhwc:
        x = x.to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device="cuda")
    amp = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(prec)
    scaler = torch.amp.GradScaler("cuda") if prec == "fp16" else None

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=amp, enabled=amp is not None):
            loss = F.cross_entropy(model(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times, losses = [], []
    for _ in range(steps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        loss = step()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
        losses.append(loss.item())
    ms = statistics.median(times)
    return {"tool": "torch", "model": name, "batch": batch, "precision": prec,
            "layout": layout, "step_ms": ms, "step_ms_min": min(times),
            "step_ms_max": max(times), "img_s": batch / (ms * 1e-3),
            "loss_first": losses[0], "loss_last": losses[-1], "steps": steps,
            "warmup": warmup, "torch": torch.__version__,
            "cudnn": torch.backends.cudnn.version(),
            "device": torch.cuda.get_device_name()}


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e-3)
    return out


def probe(reps=10):
    res = {"tool": "torch", "probe": 1, "device": torch.cuda.get_device_name(),
           "torch": torch.__version__}
    n = 8192
    for prec, dt in (("fp32", torch.float32), ("tf32", torch.float32),
                     ("fp16", torch.float16), ("bf16", torch.bfloat16)):
        torch.backends.cuda.matmul.allow_tf32 = prec == "tf32"
        # random operands: zeros run faster on tensor cores
        a = torch.randn(n, n, device="cuda", dtype=dt)
        b = torch.randn(n, n, device="cuda", dtype=dt)
        rates = [2.0 * n ** 3 / t for t in timed(lambda: torch.mm(a, b), reps)]
        res["gemm_" + prec] = {"min": min(rates), "median": statistics.median(rates),
                               "max": max(rates)}
        del a, b
    nbytes = 1 << 30
    src = torch.randn(nbytes // 4, device="cuda")
    dst = torch.empty_like(src)
    rates = [2.0 * nbytes / t for t in timed(lambda: dst.copy_(src), reps)]
    res["copy_Bps"] = {"min": min(rates), "median": statistics.median(rates), "max": max(rates)}
    return res


def run_one(name, batch, prec, layout, warmup, steps):
    try:
        r = train(name, batch, prec, layout, warmup, steps)
    except Exception as e:  # report and go on, as gpu_bench does
        r = {"tool": "torch", "model": name, "batch": batch, "precision": prec,
             "layout": layout, "error": str(e)}
    print(json.dumps(r), flush=True)
    torch.cuda.empty_cache()


def main(argv):
    if len(argv) >= 4 and argv[0] == "pairs":
        warmup = int(argv[4]) if len(argv) > 4 else 10
        steps = int(argv[5]) if len(argv) > 5 else 30
        for pair in argv[1].split(","):
            name, batch = pair.split(":")
            run_one(name, int(batch), argv[2], argv[3], warmup, steps)
        return 0
    if len(argv) >= 5 and argv[0] == "train":
        warmup = int(argv[5]) if len(argv) > 5 else 10
        steps = int(argv[6]) if len(argv) > 6 else 30
        for name in argv[1].split(","):
            for batch in argv[2].split(","):
                for prec in argv[3].split(","):
                    for layout in argv[4].split(","):
                        run_one(name, int(batch), prec, layout, warmup, steps)
        return 0
    if argv == ["probe"]:
        print(json.dumps(probe()), flush=True)
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
