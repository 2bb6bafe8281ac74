#!/usr/bin/python3
"""Writes the ONNX fixtures of old opsets (1 to 6) for tests/test_onnx.c into tests/data/onnx/.

Run with Debian's python3 (python3-onnx 1.12):

    /usr/bin/python3 tools/make_old_opset_fixtures.py [--out tests/data/onnx]

Built with onnx.helper, one file per behaviour; the forms are those of ONNX's operator
changelog (Reshape-1, Pad-1, Concat-1, Split-1, Upsample-1, Cast-1, Add-1/6 and Mul-1/6 with
broadcast and axis, Tile-1, BatchNormalization-6):
  * old_opset1: every attribute that later became an input, in one graph (the dims are
    restated in tests/test_onnx.c, whose expected shapes and counts follow from them);
  * old_opset6_broadcast: Add and Mul with broadcast=1 and an axis that is not the numpy one;
  * refused: Tile-1 (a count and an axis as inputs), BatchNormalization-6 with spatial=0, Add-6
    of two shapes without broadcast=1, Cast-1 to a name that is no type.
"""
import argparse
import os
import sys

import onnx
from onnx import TensorProto, helper

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


def vi(name, elem, dims):
    return helper.make_tensor_value_info(name, elem, dims)


def weight(name, dims):
    n = 1
    for d in dims:
        n *= d
    return helper.make_tensor(name, F32, dims, [0.5] * n)


def model(nodes, inputs, outputs, inits=(), opset=1):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="flopmeter-fixtures")


def fixtures():
    m = {}
    node = helper.make_node
    # x (2,3,4,4):
    #   Reshape-1 shape=[2,3,16] -> r (2,3,16)
    #   Pad-1 paddings=[0,0,1,0,0,2] -> p (2,3,19)
    #   Concat-1 without axis (default 1): [p, p] -> c (2,6,19)
    #   Split-1 with the sizes as a second input [2,4] on axis 1 -> s1 (2,2,19), s2 (2,4,19)
    #   Upsample-1 height_scale=2 width_scale=3 on x -> u (2,3,8,12)
    #   Cast-1 to="INT64" on x -> k (2,3,4,4) int64
    m["old_opset1"] = model(
        [node("Reshape", ["x"], ["r"], name="reshape", shape=[2, 3, 16]),
         node("Pad", ["r"], ["p"], name="pad", paddings=[0, 0, 1, 0, 0, 2], value=0.0),
         node("Concat", ["p", "p"], ["c"], name="concat"),
         node("Split", ["c", "sizes"], ["s1", "s2"], name="split", axis=1),
         node("Upsample", ["x"], ["u"], name="upsample", height_scale=2.0, width_scale=3.0,
              mode="nearest"),
         node("Cast", ["x"], ["k"], name="cast", to="INT64")],
        [vi("x", F32, [2, 3, 4, 4])],
        [vi("s1", F32, None), vi("s2", F32, None), vi("u", F32, None), vi("k", I64, None)],
        [helper.make_tensor("sizes", I64, [2], [2, 4])])
    # x (2,3,4,5) + b (3,4) at axis 1 -> (2,3,4,5); then * s (2) at axis 0 -> (2,3,4,5)
    m["old_opset6_broadcast"] = model(
        [node("Add", ["x", "b"], ["a"], name="add", broadcast=1, axis=1),
         node("Mul", ["a", "s"], ["y"], name="mul", broadcast=1, axis=0)],
        [vi("x", F32, [2, 3, 4, 5])], [vi("y", F32, None)],
        [weight("b", [3, 4]), weight("s", [2])], opset=6)
    m["bad_old_tile1"] = model(
        [node("Tile", ["x", "tiles", "axis"], ["y"], name="tile")],
        [vi("x", F32, [2, 3])], [vi("y", F32, None)],
        [helper.make_tensor("tiles", I64, [], [2]), helper.make_tensor("axis", I64, [], [1])])
    m["bad_old_bn_spatial"] = model(
        [node("BatchNormalization", ["x", "g", "b", "m", "v"], ["y"], name="bn", spatial=0)],
        [vi("x", F32, [2, 3, 4, 4])], [vi("y", F32, None)],
        [weight(n, [3, 4, 4]) for n in "gbmv"], opset=6)
    m["bad_old_add_shapes"] = model(
        [node("Add", ["x", "b"], ["y"], name="add")],
        [vi("x", F32, [2, 3])], [vi("y", F32, None)], [weight("b", [3])], opset=6)
    m["bad_old_cast_name"] = model(
        [node("Cast", ["x"], ["y"], name="cast", to="REAL")],
        [vi("x", F32, [2, 3])], [vi("y", F32, None)], opset=5)
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests",
                                                  "data", "onnx"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, m in fixtures().items():
        path = os.path.join(args.out, name + ".onnx")
        onnx.save(m, path)
        print(path, os.path.getsize(path), "bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
