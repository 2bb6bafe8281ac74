#!/usr/bin/python3
"""Exports the fixed-batch fixtures of tests/test_onnx_bind.c into tests/data/onnx/bind/.

Run with Debian's python3 (python3-torch 1.13, python3-onnx 1.12):

    /usr/bin/python3 tools/export_batch1.py [--out tests/data/onnx/bind]

Files exported as most people export, without dynamic_axes: at batch 1, with constant folding,
so every shape computation of the graph is folded into a constant that carries the batch of 1
(torch writes x.reshape(x.shape[0], ...) as Reshape(x, [1, ...])). `flopmeter --batch N`
must rebind those constants (their leading 1 is the batch) or say it cannot:

  * patch_mixer_b1: a tiny patch-embedding mixer: Conv 3->8 (k4 s4) on 3x16x16 -> (1,8,4,4),
    reshape(B, 8, 16) . transpose -> (1,16,8); Linear 8->8 on the tokens; reshape(B, 16, 2, 4)
    (heads); transpose; reshape(B, -1) -> (1,128); Linear 128->10.
  * merged_b1: reshapes the batch into the rows, x.reshape(B * 16, 8) exported as [16, 8]:
    that constant cannot be told from one that does not carry the batch, so --batch 2 must
    fail naming the node and saying how to re-export.

Weights are stripped like tools/export_onnx.py does (float payloads dropped, marked external
with a location that does not exist); integer shape constants keep their values.
"""
import argparse
import io
import os

import onnx
import torch
import torch.nn as nn

STRIPPED_LOCATION = "stripped-weights.bin"
FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE)


class PatchMixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 8, 4, stride=4)
        self.tok = nn.Linear(8, 8)
        self.head = nn.Linear(128, 10)

    def forward(self, x):
        b = x.shape[0]
        x = self.patch(x).reshape(b, 8, 16).transpose(1, 2)   # (B, 16, 8)
        x = self.tok(x)
        x = x.reshape(b, 16, 2, 4).transpose(1, 2)            # (B, 2, 16, 4)
        return self.head(x.reshape(b, -1))                     # (B, 10)


class Merged(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 8, 4, stride=4)
        self.tok = nn.Linear(8, 8)

    def forward(self, x):
        b = x.shape[0]
        x = self.patch(x).reshape(b, 8, 16).transpose(1, 2)
        return self.tok(x.reshape(b * 16, 8))                 # the batch merged into the rows


def export(model):
    torch.manual_seed(0)
    f = io.BytesIO()
    torch.onnx.export(model.eval(), torch.randn(1, 3, 16, 16), f, opset_version=13,
                      input_names=["input"], output_names=["out"], do_constant_folding=True)
    m = onnx.load_from_string(f.getvalue())
    for t in m.graph.initializer:
        if t.data_type not in FLOAT_TYPES:
            continue
        t.ClearField("raw_data")
        t.ClearField("float_data")
        t.data_location = onnx.TensorProto.EXTERNAL
        del t.external_data[:]
        e = t.external_data.add()
        e.key, e.value = "location", STRIPPED_LOCATION
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests",
                                                  "data", "onnx", "bind"))
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    for name, model in (("patch_mixer_b1", PatchMixer()), ("merged_b1", Merged())):
        m = export(model)
        onnx.save(m, os.path.join(out, name + ".onnx"))
        print("wrote", name, [(n.op_type, list(n.input)) for n in m.graph.node])


if __name__ == "__main__":
    main()
