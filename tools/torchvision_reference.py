#!/usr/bin/python3
"""Independent reference for flopmeter's built-in architectures, computed by torchvision itself.

For every built-in model, at batch 1 and its default input size (the evaluation crop size of
the model's default weights in torchvision's own metadata: 224 for most, 299 for inception_v3,
240..600 for efficientnet_b1..b7), this builds the torchvision 0.14 model (weights=None, no
auxiliary heads), counts its parameters, and counts the exact forward multiply-accumulates of
every Conv2d and Linear call through forward hooks:

    Conv2d: N * Cout * Ho * Wo * (Cin / groups) * kh * kw     (no bias)
    Linear: rows * in_features * out_features                  (no bias)

It writes tests/data/torchvision_reference.csv (model,c,h,w,params,conv_linear_macs), which
tests/test_zoo.c compares flopmeter against. The hooks see what the modules really compute, so
this shares nothing with flopmeter's builders. Run with Debian's python3-torch 1.13 and
python3-torchvision 0.14:

    /usr/bin/python3 tools/torchvision_reference.py [output.csv]

It does not count anything but conv and linear MACs (no bias, norms, activations, pooling):
those are what torchvision publishes as "GFLOPS" and what the other counters agree on.
"""
import csv
import os
import sys

import torch
import torchvision
from torchvision import models

# The built-in table of src/frontend/zoo/zoo.c, in its order.
MODELS = [
    "alexnet",
    "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn",
    "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "wide_resnet50_2",
    "resnext50_32x4d",
    "mobilenet_v2", "mobilenet_v3_large", "mobilenet_v3_small",
    "efficientnet_b0", "efficientnet_b1", "efficientnet_b2", "efficientnet_b3",
    "efficientnet_b4", "efficientnet_b5", "efficientnet_b6", "efficientnet_b7",
    "googlenet", "inception_v3",
]


def build(name):
    fn = getattr(models, name)
    if name in ("googlenet", "inception_v3"):
        # no auxiliary heads (they only run in training and are not part of the model flopmeter
        # builds); init_weights=False only skips a slow truncated-normal init
        return fn(weights=None, aux_logits=False, init_weights=False)
    return fn(weights=None)


def crop_size(name):
    """The evaluation crop of the model's default weights, from torchvision's metadata."""
    weights = models.get_model_weights(name).DEFAULT
    size = weights.transforms().crop_size
    return size[0] if isinstance(size, (list, tuple)) else size


def conv_linear_macs(model, x):
    total = [0]

    def conv_hook(mod, inp, out):
        n, cout, ho, wo = out.shape
        kh, kw = mod.kernel_size
        total[0] += n * cout * ho * wo * (mod.in_channels // mod.groups) * kh * kw

    def linear_hook(mod, inp, out):
        rows = inp[0].numel() // mod.in_features
        total[0] += rows * mod.in_features * mod.out_features

    handles = []
    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            handles.append(m.register_forward_hook(conv_hook))
        elif isinstance(m, torch.nn.Linear):
            handles.append(m.register_forward_hook(linear_hook))
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return total[0]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "..", "tests", "data", "torchvision_reference.csv")
    torch.manual_seed(0)
    rows = []
    for name in MODELS:
        model = build(name).eval()
        hw = crop_size(name)
        x = torch.randn(1, 3, hw, hw)
        params = sum(p.numel() for p in model.parameters())
        macs = conv_linear_macs(model, x)
        rows.append((name, 3, hw, hw, params, macs))
        print(f"{name:20s} 3x{hw}x{hw} params {params:>12,d}  conv+linear MACs {macs:>16,d}",
              file=sys.stderr)
    with open(out, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["model", "c", "h", "w", "params", "conv_linear_macs"])
        w.writerows(rows)
    print(f"wrote {out} (torch {torch.__version__}, torchvision {torchvision.__version__})",
          file=sys.stderr)


if __name__ == "__main__":
    main()
