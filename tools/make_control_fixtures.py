#!/usr/bin/env python3
"""Fixtures for the ONNX frontend's control flow (If, Loop, Scan; src/frontend/onnx/onnx_control.c),
written to tests/data/onnx/control_*.onnx. Run with Debian's python3 (onnx 1.12, torch 1.13):

    /usr/bin/python3 tools/make_control_fixtures.py

Three kinds: ONNX's own backend node tests (test_loop11; test_if's branches are constants, so bound it computes nothing) with the graph inputs that
decide the branch or the trip count turned into initializers holding the values of their
test_data_set_0 (the expected output dims are checked here against output_N.pb); hand-made graphs
(onnx.helper) for outer-scope reads, nesting, Scan axes and directions and the error cases; and
a PyTorch module with an `if` on the batch size, compiled by torch.jit.script."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "onnx")
NODE = "/usr/share/libonnx-testdata/data/node"
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def save(m, name):
    onnx.save(m, os.path.join(OUT, name))


def init(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def vi(name, t, dims):
    return helper.make_tensor_value_info(name, t, dims)


def model(g, opset=13):
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="flopmeter-fixtures")


def bound_node_test(test, names, out):
    """ONNX's node test with the inputs `names` made initializers (values of test_data_set_0)."""
    m = onnx.load(os.path.join(NODE, test, "model.onnx"))
    d = os.path.join(NODE, test, "test_data_set_0")
    g = m.graph
    for k, inp in enumerate(list(g.input)):
        t = onnx.TensorProto()
        with open(os.path.join(d, "input_%d.pb" % k), "rb") as f:
            t.ParseFromString(f.read())
        if inp.name in names:
            t.name = inp.name
            g.initializer.append(t)
    keep = [i for i in g.input if i.name not in names]
    del g.input[:]
    g.input.extend(keep)
    for k, o in enumerate(g.output):
        t = onnx.TensorProto()
        with open(os.path.join(d, "output_%d.pb" % k), "rb") as f:
            t.ParseFromString(f.read())
        print("%s: output %s dims %s" % (out, o.name, list(t.dims)))
    save(m, out)


def if_shape():
    """y = Relu(If(Shape(x)[0] == 1, then: x @ W1 (4x8), else: x @ W2 (4x16))); x is [N, 4]."""
    then_g = helper.make_graph([helper.make_node("MatMul", ["x", "W1"], ["t"])], "then", [],
                               [vi("t", F, None)])
    else_g = helper.make_graph([helper.make_node("MatMul", ["x", "W2"], ["e"])], "else", [],
                               [vi("e", F, None)])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Equal", ["n", "one"], ["c"]),
        helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Relu", ["y"], ["out"]),
    ]
    g = helper.make_graph(nodes, "if_shape", [vi("x", F, ["N", 4])], [vi("out", F, None)],
                          [init("zero", np.int64(0)), init("one", np.int64(1)),
                           init("W1", np.ones((4, 8), np.float32)),
                           init("W2", np.ones((4, 16), np.float32))])
    save(model(g), "control_if_shape.onnx")


def if_data():
    """If on ReduceSum(x) > 0: a condition that follows from data."""
    b = lambda n: helper.make_graph([helper.make_node("Relu", ["x"], [n])], n, [],
                                    [vi(n, F, None)])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=b("t"), else_branch=b("e"))]
    g = helper.make_graph(nodes, "if_data", [vi("x", F, [2, 3])], [vi("y", F, None)],
                          [init("zero", np.float32(0))])
    save(model(g), "bad_control_if_data.onnx")


def loop_counted():
    """Loop M=3 (no cond): h = Add(MatMul(h, W), b) with W 4x4 outer, b (4) the body's own
    initializer; scan output Relu(h). h is [1, 4]."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["cin"], ["cout"]),
         helper.make_node("MatMul", ["hin", "W"], ["mm"]),
         helper.make_node("Add", ["mm", "b"], ["hout"]),
         helper.make_node("Relu", ["hout"], ["r"])],
        "body", [vi("i", I64, []), vi("cin", B, []), vi("hin", F, [1, 4])],
        [vi("cout", B, []), vi("hout", F, [1, 4]), vi("r", F, [1, 4])],
        [init("b", np.ones(4, np.float32))])
    nodes = [helper.make_node("Loop", ["M", "", "h0"], ["h", "rs"], body=body)]
    g = helper.make_graph(nodes, "loop", [vi("h0", F, [1, 4])], [vi("h", F, None),
                          vi("rs", F, None)],
                          [init("M", np.int64(3)), init("W", np.ones((4, 4), np.float32))])
    save(model(g), "control_loop.onnx")


def loop_data_cond():
    """Loop M=4 whose condition is ReduceSum(h) > 0: counted as 4 iterations, an upper bound."""
    body = helper.make_graph(
        [helper.make_node("Relu", ["hin"], ["hout"]),
         helper.make_node("ReduceSum", ["hout"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["cout"])],
        "body", [vi("i", I64, []), vi("cin", B, []), vi("hin", F, [1, 4])],
        [vi("cout", B, []), vi("hout", F, [1, 4])])
    nodes = [helper.make_node("Loop", ["M", "c0", "h0"], ["h"], body=body)]
    g = helper.make_graph(nodes, "loop_cond", [vi("h0", F, [1, 4])], [vi("h", F, None)],
                          [init("M", np.int64(4)), init("c0", np.bool_(True)),
                           init("zero", np.float32(0))])
    save(model(g), "control_loop_data_cond.onnx")


def loop_no_trip():
    """Loop without M: a while loop on a data condition."""
    body = helper.make_graph(
        [helper.make_node("Relu", ["hin"], ["hout"]),
         helper.make_node("ReduceSum", ["hout"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["cout"])],
        "body", [vi("i", I64, []), vi("cin", B, []), vi("hin", F, [1, 4])],
        [vi("cout", B, []), vi("hout", F, [1, 4])])
    nodes = [helper.make_node("Loop", ["", "c0", "h0"], ["h"], body=body)]
    g = helper.make_graph(nodes, "loop_while", [vi("h0", F, [1, 4])], [vi("h", F, None)],
                          [init("c0", np.bool_(True)), init("zero", np.float32(0))])
    save(model(g), "bad_control_loop_no_trip.onnx")


def loop_nested_if():
    """Loop M=3 over h [1, 4]; in the body If(i < 1): then h + h, else h * h + h."""
    then_g = helper.make_graph([helper.make_node("Add", ["hin", "hin"], ["t"])], "then", [],
                               [vi("t", F, None)])
    else_g = helper.make_graph([helper.make_node("Mul", ["hin", "hin"], ["sq"]),
                                helper.make_node("Add", ["sq", "hin"], ["e"])], "else", [],
                               [vi("e", F, None)])
    body = helper.make_graph(
        [helper.make_node("Less", ["i", "one"], ["first"]),
         helper.make_node("If", ["first"], ["hout"], then_branch=then_g, else_branch=else_g),
         helper.make_node("Identity", ["cin"], ["cout"])],
        "body", [vi("i", I64, []), vi("cin", B, []), vi("hin", F, [1, 4])],
        [vi("cout", B, []), vi("hout", F, [1, 4])])
    nodes = [helper.make_node("Loop", ["M", "", "h0"], ["h"], body=body)]
    g = helper.make_graph(nodes, "loop_if", [vi("h0", F, [1, 4])], [vi("h", F, None)],
                          [init("M", np.int64(3)), init("one", np.int64(1))])
    save(model(g), "control_loop_if.onnx")


def scan_axes():
    """Scan over axis 1 of x [2, 5, 3], reversed; state s [2, 3]: s = s + x_t, out = s * s
    stacked along axis 1 in reverse: out [2, 5, 3]."""
    body = helper.make_graph(
        [helper.make_node("Add", ["sin", "xt"], ["sout"]),
         helper.make_node("Mul", ["sout", "sout"], ["o"])],
        "body", [vi("sin", F, [2, 3]), vi("xt", F, [2, 3])],
        [vi("sout", F, [2, 3]), vi("o", F, [2, 3])])
    nodes = [helper.make_node("Scan", ["s0", "x"], ["s", "out"], body=body, num_scan_inputs=1,
                              scan_input_axes=[1], scan_input_directions=[1],
                              scan_output_axes=[1], scan_output_directions=[1])]
    g = helper.make_graph(nodes, "scan_axes", [vi("s0", F, [2, 3]), vi("x", F, [2, 5, 3])],
                          [vi("s", F, None), vi("out", F, None)])
    save(model(g, 11), "control_scan_axes.onnx")


def scan_mismatch():
    """Two scan inputs of 3 and 4 steps."""
    body = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["o"])],
        "body", [vi("a", F, [2]), vi("b", F, [2])], [vi("o", F, [2])])
    nodes = [helper.make_node("Scan", ["x", "y"], ["out"], body=body, num_scan_inputs=2)]
    g = helper.make_graph(nodes, "scan_bad", [vi("x", F, [3, 2]), vi("y", F, [4, 2])],
                          [vi("out", F, None)])
    save(model(g, 11), "bad_control_scan_mismatch.onnx")


def malformed():
    """An If with a constant false condition and no else_branch; a Loop whose body has the
    wrong number of inputs; Ifs nested 10 deep (flopmeter's cap is 8)."""
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "then", [],
                               [vi("t", F, None)])
    g = helper.make_graph([helper.make_node("If", ["c"], ["y"], then_branch=then_g)],
                          "if_no_else", [vi("x", F, [2])], [vi("y", F, None)],
                          [init("c", np.bool_(False))])
    save(model(g), "bad_control_if_no_else.onnx")
    body = helper.make_graph([helper.make_node("Relu", ["hin"], ["hout"])], "body",
                             [vi("hin", F, [2])], [vi("hout", F, [2])])
    g = helper.make_graph([helper.make_node("Loop", ["M", "", "h0"], ["h"], body=body)],
                          "loop_bad_body", [vi("h0", F, [2])], [vi("h", F, None)],
                          [init("M", np.int64(2))])
    save(model(g), "bad_control_loop_bad_body.onnx")
    inner = helper.make_graph([helper.make_node("Relu", ["x"], ["r0"])], "g0", [],
                              [vi("r0", F, None)])
    for k in range(1, 11):
        inner = helper.make_graph(
            [helper.make_node("If", ["c"], ["r%d" % k], then_branch=inner,
                              else_branch=helper.make_graph(
                                  [helper.make_node("Relu", ["x"], ["e%d" % k])], "e%d" % k, [],
                                  [vi("e%d" % k, F, None)]))],
            "g%d" % k, [], [vi("r%d" % k, F, None)])
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["xi"])] + list(inner.node),
                          "deep", [vi("x", F, [2])], [vi("r10", F, None)],
                          [init("c", np.bool_(True))])
    save(model(g), "bad_control_if_deep.onnx")


def torch_if():
    """PyTorch's torch.jit.script of an `if` on the batch size: batch 1 takes Linear(8, 16),
    any other batch Linear(8, 4)."""
    import torch

    class Branchy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(8, 16)
            self.b = torch.nn.Linear(8, 4)

        def forward(self, x):
            if x.size(0) == 1:
                y = self.a(x)
            else:
                y = self.b(x)
            return torch.relu(y)

    torch.manual_seed(0)
    m = torch.jit.script(Branchy().eval())
    path = os.path.join(OUT, "control_torch_if.onnx")
    torch.onnx.export(m, (torch.randn(2, 8),), path, opset_version=13, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}})
    mm = onnx.load(path)
    print("control_torch_if.onnx:", [n.op_type for n in mm.graph.node])


def torch_loop():
    """PyTorch's torch.jit.script of a loop over the batch size: `for i in range(x.size(0))`
    applies Linear(8, 8) and Relu; exported as a Loop whose trip count is Shape(x)[0]."""
    import torch

    class Looped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x):
            h = x
            for _ in range(x.size(0)):
                h = torch.relu(self.lin(h))
            return h

    torch.manual_seed(0)
    m = torch.jit.script(Looped().eval())
    path = os.path.join(OUT, "control_torch_loop.onnx")
    torch.onnx.export(m, (torch.randn(2, 8),), path, opset_version=13, input_names=["x"],
                      output_names=["y"], dynamic_axes={"x": {0: "batch"}})
    mm = onnx.load(path)
    print("control_torch_loop.onnx:", [n.op_type for n in mm.graph.node])


if __name__ == "__main__":
    bound_node_test("test_loop11", {"trip_count", "cond"}, "control_node_loop11.onnx")
    if_shape()
    if_data()
    loop_counted()
    loop_data_cond()
    loop_no_trip()
    loop_nested_if()
    scan_axes()
    scan_mismatch()
    malformed()
    if len(sys.argv) < 2 or sys.argv[1] != "--no-torch":
        torch_if()
        torch_loop()
