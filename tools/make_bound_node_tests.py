#!/usr/bin/python3
"""ONNX's own backend node tests whose output shape depends on the value of an input (TopK's K,
OneHot's depth, Compress's condition, NonZero's input, MaxUnpool's output_shape), with that
input bound: the same model file, the input turned into an initializer holding the value the
test feeds it (test_data_set_0/input_N.pb). tests/test_onnx.c counts them exactly; the unbound
originals are tested to be declined with a message naming the input.

Run: /usr/bin/python3 tools/make_bound_node_tests.py   (Debian's python3-onnx and
libonnx-testdata); writes tests/data/onnx/node_bound/<test>.onnx
"""
import os

import onnx

NODE = "/usr/share/libonnx-testdata/data/node"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "onnx",
                   "node_bound")

# test -> the graph inputs to bind
BIND = {
    "test_top_k": ["k"],
    "test_top_k_negative_axis": ["k"],
    "test_top_k_smallest": ["k"],
    "test_onehot_negative_indices": ["depth"],
    "test_onehot_with_axis": ["depth"],
    "test_onehot_with_negative_axis": ["depth"],
    "test_onehot_without_axis": ["depth"],
    "test_compress_0": ["condition"],
    "test_compress_1": ["condition"],
    "test_compress_default_axis": ["condition"],
    "test_compress_negative_axis": ["condition"],
    "test_nonzero_example": ["condition"],
    "test_maxunpool_export_with_output_shape": ["output_shape"],
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for test, names in sorted(BIND.items()):
        d = os.path.join(NODE, test)
        m = onnx.load(os.path.join(d, "model.onnx"))
        g = m.graph
        for name in names:
            slot = [i.name for i in g.input].index(name)
            t = onnx.TensorProto()
            with open(os.path.join(d, "test_data_set_0", "input_%d.pb" % slot), "rb") as f:
                t.ParseFromString(f.read())
            t.name = name
            g.initializer.append(t)
            del g.input[slot]
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(OUT, test + ".onnx"))
    print("wrote %d models to %s" % (len(BIND), os.path.normpath(OUT)))


if __name__ == "__main__":
    main()
