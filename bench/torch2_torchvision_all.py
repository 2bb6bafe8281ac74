#!/usr/bin/env python3
"""Every torchvision classification model through PyTorch 2's default exporter: counted and
trained by flopmeter.

    PY=/root/.cache/flopmeter/venv/bin/python
    $PY bench/torch2_torchvision_all.py [--flopmeter build/flopmeter] [--only NAME ...]

Each model of torchvision.models.list_models(torchvision.models) is built untrained with 10
classes (an input of 64x64, or the size the architecture requires), put in training mode and
exported in memory with torch.onnx.export(dynamo=True, optimize=False) at batch 2; the weights'
bytes are dropped before the file is written (flopmeter reads shapes, never weights). Then:
parameters as flopmeter counts them against sum(p.numel()) of the module (exact or not), the
forward FLOPs of its convolutions and matrix products (2 x their MACs) against PyTorch's
FlopCounterMode over one forward of the module (which counts exactly those ops), and one training
step of the file on flopmeter's CPU backend (`measure --steps 1`, loss finite).
Prints one Markdown row per model and a summary line.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings

import torch
import torchvision

warnings.filterwarnings("ignore")
# the input size an architecture needs when 64x64 will not do
SIZE = {"inception_v3": 96, "googlenet": 64, "vit_b_16": 224, "vit_b_32": 224, "vit_l_16": 224,
        "vit_l_32": 224, "vit_h_14": 224, "maxvit_t": 224}


def strip(proto):
    for t in proto.graph.initializer:
        if t.raw_data:
            t.ClearField("raw_data")
        for f in ("float_data", "int64_data", "int32_data", "double_data"):
            if len(getattr(t, f)) > 16:
                t.ClearField(f)


def run(name, cli, tmp):
    size = SIZE.get(name, 64)
    kw = {"num_classes": 10}
    if name.startswith("vit_"):
        kw["image_size"] = size
    if name in ("inception_v3", "googlenet"):
        kw["aux_logits"] = False
        kw["init_weights"] = False
    m = torchvision.models.get_model(name, **kw).train()
    params = sum(p.numel() for p in m.parameters())
    x = torch.randn(2, 3, size, size)
    from torch.utils.flop_counter import FlopCounterMode
    fcm = FlopCounterMode(display=False)
    with torch.no_grad(), fcm:
        m(x)
    fcm_fwd = fcm.get_total_flops()
    t0 = time.perf_counter()
    prog = torch.onnx.export(m, (x,), dynamo=True, optimize=False, verbose=False)
    proto = prog.model_proto
    strip(proto)
    path = os.path.join(tmp, name + ".onnx")
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())
    export_s = time.perf_counter() - t0
    del prog, proto, m
    import json
    c = subprocess.run([cli, "count", path, "--format", "json"], capture_output=True, text=True)
    if c.returncode:
        return params, None, None, export_s, "count: " + c.stderr.strip().splitlines()[-1][:160]
    doc = json.loads(c.stdout)
    counted = doc["totals"]["params"]
    mm = 2 * sum(doc["by_class"].get(k, {}).get("fwd", {}).get("macs", 0)
                 for k in ("conv", "matmul", "attention"))
    flops = (mm, fcm_fwd)
    r = subprocess.run([cli, "measure", path, "--steps", "1", "--warmup", "0", "--threads", "2",
                        "--no-per-layer", "--peak", "1e11"], capture_output=True, text=True)
    os.remove(path)
    if r.returncode:
        return params, counted, flops, export_s, "measure: " + r.stderr.strip().splitlines()[-1][:160]
    return params, counted, flops, export_s, "trains"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--flopmeter", default="build/flopmeter")
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    torch.set_num_threads(2)
    names = a.only or sorted(torchvision.models.list_models(module=torchvision.models))
    print("torch %s, torchvision %s" % (torch.__version__, torchvision.__version__))
    print("| model | parameters (PyTorch) | flopmeter | exact | fwd conv+matmul FLOP | = FlopCounterMode | export s | step |")
    print("|---|---:|---:|---|---:|---|---:|---|")
    exact = same = trains = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            try:
                p, c, fl, s, what = run(name, os.path.abspath(a.flopmeter), tmp)
            except Exception as e:   # the exporter's own failure, reported as a row
                print("| %s | | | | | | | export failed: %s |" % (name, str(e).splitlines()[0][:120]),
                      flush=True)
                continue
            exact += c == p
            same += bool(fl) and fl[0] == fl[1]
            trains += what == "trains"
            print("| %s | %d | %s | %s | %s | %s | %.1f | %s |" % (
                name, p, c, "yes" if c == p else "no", fl[0] if fl else "",
                ("yes" if fl[0] == fl[1] else "no (%d)" % fl[1]) if fl else "", s, what),
                flush=True)
    print("\n%d models: parameters exact on %d, forward conv+matmul FLOPs equal to "
          "FlopCounterMode's on %d, a training step on %d" % (len(names), exact, same, trains))


if __name__ == "__main__":
    sys.exit(main())
