#!/usr/bin/python3
"""Cross-checks the golden cases of the quantized and com.microsoft ops
(tests/data/goldens/backend_ops.txt, computed by tools/make_op_goldens.py with PyTorch) against
ONNX Runtime itself: each case becomes a one-node ONNX model (the op in its domain, flopmeter's
attrs as ONNX attributes), run on ONNX Runtime's CPU provider with the case's starting values.
Integer outputs must agree within 1 (a rounding tie), float outputs within the case's tolerance.

Run: PYTHONPATH=<site with onnxruntime and onnx> /usr/bin/python3 tools/check_quant_goldens_ort.py
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

GOLD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "goldens",
                    "backend_ops.txt")
NP = {"fp32": np.float32, "int64": np.int64, "int32": np.int32, "int8": np.int8,
      "uint8": np.uint8, "bool": np.bool_}
MS = "com.microsoft"
# flopmeter op -> (ONNX op type, domain, attributes from the case's attrs)
OPS = {
    "QuantizeLinear": ("QuantizeLinear", "", lambda a: {"axis": a.get("axis", 1)}),
    "DequantizeLinear": ("DequantizeLinear", "", lambda a: {"axis": a.get("axis", 0)}),
    "DynamicQuantizeLinear": ("DynamicQuantizeLinear", "", lambda a: {}),
    "MatMulInteger": ("MatMulInteger", "", lambda a: {}),
    "ConvInteger": ("ConvInteger", "", lambda a: {"pads": a.get("pad", [0, 0, 0, 0])}),
    "QLinearMatMul": ("QLinearMatMul", "", lambda a: {}),
    "QLinearConv": ("QLinearConv", "", lambda a: {"pads": a.get("pad", [0, 0, 0, 0])}),
    "QGemm": ("QGemm", MS, lambda a: {"transB": int("TRANS_B" in a.get("flags", []))}),
    "MatMulIntegerToFloat": ("MatMulIntegerToFloat", MS, lambda a: {}),
    "DynamicQuantizeMatMul": ("DynamicQuantizeMatMul", MS, lambda a: {}),
    "DynamicQuantizeLSTM": ("DynamicQuantizeLSTM", MS,
                            lambda a: {"hidden_size": a["ints"][0]}),
    "FusedMatMul": ("FusedMatMul", MS, lambda a: {"transB": int("TRANS_B" in a.get("flags", [])),
                                                  "alpha": a.get("alpha", 1.0)}),
    "FastGelu": ("FastGelu", MS, lambda a: {}),
    "BiasGelu": ("BiasGelu", MS, lambda a: {}),
    "QuickGelu": ("QuickGelu", MS, lambda a: {"alpha": a.get("alpha", 1.702)}),
    "BiasAdd": ("BiasAdd", MS, lambda a: {}),
    "SkipLayerNorm": ("SkipLayerNormalization", MS, lambda a: {"epsilon": 1e-5}),
    "SkipSimplifiedLayerNorm": ("SkipSimplifiedLayerNormalization", MS,
                                lambda a: {"epsilon": 1e-5}),
    "SimplifiedLayerNorm": ("SimplifiedLayerNormalization", "",
                            lambda a: {"epsilon": 1e-5, "axis": -1}),
    "EmbedLayerNorm": ("EmbedLayerNormalization", MS, lambda a: {"epsilon": 1e-5}),
    "FusedAttention": ("Attention", MS, lambda a: {"num_heads": a["groups"]}),
    "MultiHeadAttention": ("MultiHeadAttention", MS, lambda a: {"num_heads": a["groups"]}),
    "RotaryEmbedding": ("RotaryEmbedding", MS, lambda a: {}),
    "GroupQueryAttention": ("GroupQueryAttention", MS,
                            lambda a: {"num_heads": a["groups"], "kv_num_heads": a["ints"][0]}),
}


def cases():
    c = None
    for line in open(GOLD):
        w = line.split()
        if not w or w[0].startswith("#"):
            continue
        if w[0] == "case":
            c = {"name": w[1], "op": w[2], "n_out": int(w[4]), "attrs": {}, "ins": [],
                 "vals": {}, "outs": [], "tol": (1e-5, 1e-4)}
        elif w[0] == "attr":
            v = w[2:]
            c["attrs"][w[1]] = (v[0].split("|") if w[1] == "flags" else
                                [int(x) for x in v] if len(v) > 1 or w[1] in ("ints",) else
                                float(v[0]) if "." in v[0] or "e" in v[0] else int(v[0]))
        elif w[0] == "in":
            c["ins"].append(None if w[1] == "-" else (w[1], w[3], w[4]))
        elif w[0] == "value":
            c["vals"][w[1]] = w[3:]
        elif w[0] == "out":
            c["outs"].append(np.array([float(x) for x in w[3:]]))
        elif w[0] == "tol":
            c["tol"] = (float(w[1]), float(w[2]))
        elif w[0] == "end":
            if c["op"] in OPS:
                yield c


def run(c):
    op, domain, attrs = OPS[c["op"]]
    inputs, feeds, names = [], {}, []
    for k, i in enumerate(c["ins"]):
        if i is None:
            names.append("")
            continue
        name, dt, dims = i
        shape = [] if dims == "scalar" else [int(d) for d in dims.split("x")]
        val = np.array([float(x) for x in c["vals"][name]]).astype(NP[dt]).reshape(shape)
        if c["op"] == "RotaryEmbedding" and name == "pos":
            val = val.astype(np.int64)
        feeds[name] = val
        names.append(name)
        inputs.append(helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(val.dtype), shape))
    outs = ["y%d" % k for k in range(c["n_out"])]
    if c["op"] == "EmbedLayerNorm":   # ONNX Runtime requires its mask_index output too
        outs.append("mask_index")
    node = helper.make_node(op, names, outs, domain=domain, **attrs(c["attrs"]))
    graph = helper.make_graph([node], c["name"], inputs,
                              [onnx.ValueInfoProto(name=o) for o in outs])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]
    model = helper.make_model(graph, opset_imports=opsets, ir_version=8)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, feeds)
    bad = []
    for k, (g, want) in enumerate(zip(got, c["outs"])):
        g = np.asarray(g, dtype=np.float64).flatten()
        if g.shape != want.shape:
            bad.append("out %d: %d elements, golden %d" % (k, g.size, want.size))
            continue
        atol, rtol = c["tol"]
        if np.issubdtype(np.asarray(got[k]).dtype, np.integer):
            atol, rtol = 1.0, 0.0
        err = np.abs(g - want) - (atol + rtol * np.abs(want))
        if (err > 0).any():
            bad.append("out %d: max difference %.3g" % (k, np.abs(g - want).max()))
    return bad


# ops ONNX Runtime implements only for CUDA: nothing to compare with on its CPU provider
CUDA_ONLY = {"BiasAdd"}


def main():
    failed = 0
    for c in cases():
        if c["op"] in CUDA_ONLY:
            print("%-28s skipped: ONNX Runtime runs %s on CUDA only" % (c["name"], c["op"]))
            continue
        try:
            bad = run(c)
        except Exception as e:   # an op ONNX Runtime refuses in this form
            bad = ["ONNX Runtime: %s" % str(e).splitlines()[0][:200]]
        print("%-28s %s" % (c["name"], "; ".join(bad) if bad else "ok"))
        failed += bool(bad)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
