#!/usr/bin/python3
"""Exports flopmeter's built-in architectures from torchvision to ONNX, for the ONNX tests.

Run with Debian's python3 (python3-torch 1.13, python3-torchvision 0.14, python3-onnx 1.12):

    /usr/bin/python3 tools/export_onnx.py [--out tests/data/onnx] [--opsets 13 17] [names...]

Each model is exported in eval mode with training=TrainingMode.PRESERVE and constant folding
off, so BatchNormalization nodes stay (an EVAL export folds them into the convolutions); Dropout,
an identity in eval mode, is left out. These files are the inference graph with its
BatchNormalization kept, which is what the ONNX tests compare with the built-in models.
--train exports the training graph instead (train mode, training=TrainingMode.TRAINING, no
constant folding), Dropout included, into NAME_train_opN.onnx: what `flopmeter count` of a
training step should be given (docs/pytorch.md).
Weights are drawn at random first: the exporter merges initializers with equal contents (fresh
BatchNorm weights are all ones), and merged weights would count once. Opset 17 files have a
symbolic batch dim "N"; opset 13 files a fixed batch of 1. Then the float initializers are
stripped: payload dropped, data_location EXTERNAL pointing at a file that does not exist (name,
dtype and dims stay, which is all counting needs), so each file is tens of kilobytes.
Integer initializers (shape constants) keep their values.

--fused also writes resnet18_fused_op13.onnx: a default EVAL export, with BatchNorm folded into
the convolutions (biases appear), to check that such files count as what they are.
--embedded NAME PATH writes one model with its weights inside (for bench/).
"""
import argparse
import io
import os
import sys

import onnx
import torch
import torchvision
from torch.onnx import TrainingMode

# Mirrors src/frontend/zoo/zoo.c: the names, and the input sizes other than 224 (torchvision's
# evaluation crops).
SIZES = {"inception_v3": 299, "efficientnet_b1": 240, "efficientnet_b2": 288,
         "efficientnet_b3": 300, "efficientnet_b4": 380, "efficientnet_b5": 456,
         "efficientnet_b6": 528, "efficientnet_b7": 600}
MODELS = [
    "alexnet", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19",
    "vgg19_bn", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "wide_resnet50_2",
    "resnext50_32x4d", "mobilenet_v2", "mobilenet_v3_large", "mobilenet_v3_small",
    "efficientnet_b0", "efficientnet_b1", "efficientnet_b2", "efficientnet_b3",
    "efficientnet_b4", "efficientnet_b5", "efficientnet_b6", "efficientnet_b7", "googlenet",
    "inception_v3",
]
STRIPPED_LOCATION = "stripped-weights.bin"


def build(name, train=False):
    kw = {}
    if name in ("googlenet", "inception_v3"):
        kw = dict(aux_logits=False, init_weights=False)
    model = getattr(torchvision.models, name)(weights=None, **kw).train(train)
    torch.manual_seed(0)
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.dtype.is_floating_point:
                t.copy_(torch.rand_like(t) + 0.5)
    hw = SIZES.get(name, 224)
    return model, torch.randn(1, 3, hw, hw)


def export(model, x, opset, dynamic, fold=False, train=False):
    f = io.BytesIO()
    kw = dict(opset_version=opset, input_names=["input"], output_names=["logits"])
    if dynamic:
        kw["dynamic_axes"] = {"input": {0: "N"}, "logits": {0: "N"}}
    if fold:
        kw.update(training=TrainingMode.EVAL, do_constant_folding=True)
    elif train:
        kw.update(training=TrainingMode.TRAINING, do_constant_folding=False)
    else:
        kw.update(training=TrainingMode.PRESERVE, do_constant_folding=False)
    torch.onnx.export(model, x, f, **kw)
    return onnx.load_from_string(f.getvalue())


FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
               onnx.TensorProto.BFLOAT16)


def strip(model):
    """Drops float payloads; marks them external with a location that does not exist."""
    for t in model.graph.initializer:
        if t.data_type not in FLOAT_TYPES:
            continue
        t.ClearField("raw_data")
        t.ClearField("float_data")
        t.ClearField("double_data")
        t.ClearField("int32_data")
        t.data_location = onnx.TensorProto.EXTERNAL
        del t.external_data[:]
        e = t.external_data.add()
        e.key, e.value = "location", STRIPPED_LOCATION
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests",
                                                  "data", "onnx"))
    ap.add_argument("--opsets", type=int, nargs="+", default=[13, 17])
    ap.add_argument("--fused", action="store_true")
    ap.add_argument("--train", action="store_true",
                    help="export the training graph (train mode, Dropout kept) as NAME_train_opN")
    ap.add_argument("--embedded", nargs=2, metavar=("NAME", "PATH"))
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    if args.embedded:
        model, x = build(args.embedded[0])
        m = export(model, x, 17, dynamic=True)
        onnx.save(m, args.embedded[1])
        print(args.embedded[1], os.path.getsize(args.embedded[1]), "bytes")
        return 0
    os.makedirs(args.out, exist_ok=True)
    tag = "_train" if args.train else ""
    for name in args.names or MODELS:
        model, x = build(name, args.train)
        for opset in args.opsets:
            m = strip(export(model, x, opset, dynamic=opset >= 17, train=args.train))
            path = os.path.join(args.out, f"{name}{tag}_op{opset}.onnx")
            onnx.save(m, path)
            print(path, os.path.getsize(path), "bytes", flush=True)
    if args.fused:
        model, x = build("resnet18")
        m = strip(export(model, x, 13, dynamic=False, fold=True))
        path = os.path.join(args.out, "resnet18_fused_op13.onnx")
        onnx.save(m, path)
        print(path, os.path.getsize(path), "bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
