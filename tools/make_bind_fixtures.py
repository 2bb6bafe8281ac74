#!/usr/bin/python3
"""Writes the fixtures of tests/test_onnx_bind.c into tests/data/onnx/bind/ (kilobytes each).

Run with Debian's python3 (python3-onnx 1.12):

    /usr/bin/python3 tools/make_bind_fixtures.py [--out tests/data/onnx/bind]

Built with onnx.helper, one feature each, as the exporters named write them:
  * empty_slice_concat: Swin's padding logic: a Slice that selects nothing (start 7, end 7 of a
    dim of 7) concatenated back onto its input, then a Relu (torchvision's swin_t exports this).
  * reshape_scalar: Paddle2ONNX's reshape to a scalar: the target is an int64 initializer of
    dims [0] (the empty list), then the scalar scales a (3, 4) input.
  * dyn_minus1: Paddle2ONNX's dynamic dims: graph input x written with dim_value -1 in dims 0,
    2, 3 (a 3-channel image of any batch and size), one Relu.
The dims are restated in tests/test_onnx_bind.c, whose counts are derived from them.
"""
import argparse
import os

import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="flopmeter-fixtures")
    m.ir_version = 7
    return m


def ints(name, values, dims=None):
    a = np.array(values, dtype=np.int64)
    if dims is not None:
        a = a.reshape(dims)
    return numpy_helper.from_array(a, name)


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests",
                                                  "data", "onnx", "bind"))
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    m = {}
    m["empty_slice_concat"] = model(
        [helper.make_node("Slice", ["x", "s", "e", "a"], ["pad"], name="pad_slice"),
         helper.make_node("Concat", ["x", "pad"], ["y"], name="pad_concat", axis=1),
         helper.make_node("Relu", ["y"], ["out"], name="relu")],
        [vi("x", [1, 7, 7, 96])], [vi("out", [1, 7, 7, 96])],
        [ints("s", [7]), ints("e", [7]), ints("a", [1])])
    m["reshape_scalar"] = model(
        [helper.make_node("Reshape", ["x", "shape"], ["s"], name="to_scalar"),
         helper.make_node("Mul", ["s", "y"], ["out"], name="scale")],
        [vi("x", [1]), vi("y", [3, 4])], [vi("out", [3, 4])],
        [ints("shape", [], dims=[0])])
    m["dyn_minus1"] = model(
        [helper.make_node("Relu", ["x"], ["out"], name="relu")],
        [vi("x", [-1, 3, -1, -1])], [vi("out", [-1, 3, -1, -1])])
    for name, mm in m.items():
        onnx.checker.check_model(mm)
        onnx.save(mm, os.path.join(out, name + ".onnx"))
        print("wrote", name)


if __name__ == "__main__":
    main()
