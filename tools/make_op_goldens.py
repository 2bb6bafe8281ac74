#!/usr/bin/python3
"""Golden data for tests/test_backend_ops.c: every op of FM_OP_LIST, one small graph each, run
once through PyTorch (forward, and in training the loss and the gradients).

The test builds each case's graph with flopmeter's graph API, asks every backend built in
whether it supports it, writes the starting values below into the backend, runs one step (lr 0,
so nothing moves but BatchNorm's running statistics) and compares what the backend computed
with what this script computed. An op a backend does not support is listed, not failed; an op
of FM_OP_LIST without a case here fails the test, so a new op cannot come without one.

Each case is one node of one op with its inputs. In training the test appends what both
backends already run: Flatten(axis=1) of the op's output 0 and CrossEntropy against int64
labels (mean), so the loss is the mean cross-entropy over the rows of the flattened output
(output shapes have rank >= 2 and more than one element per row). The CrossEntropy case is
its own loss: it has no labels line. Float inputs that should get a gradient are trainable
PARAMs (backends compute gradients for parameters); BatchNorm's running statistics are BUFFERs;
labels, indices, masks and other operands that take no gradient are INPUTs. Ops whose output
carries no gradient (comparisons, logic, casts to integers, Range, ConstantOfShape) run forward
only (inference). Dropout: ratio 0 in training (the identity; masks are random) and ratio 0.5
in inference (also the identity).

References are computed in float64 from the float32 starting values, so a golden is the exact
answer rounded to float32 and the test's tolerance is all for the backend's float32 arithmetic.
Starting values keep away from the points where an op's derivative jumps (ReLU's 0, Clip's
bounds, Hardswish's +-3 ...) by at least 0.1, max-like ops see distinct values at least 0.05
apart (no ties), and Div, Log, Sqrt, Reciprocal, Pow and ReduceProd see operands away from 0.

Where flopmeter's semantics and PyTorch's differ, or flopmeter's rule leaves something open,
the case follows flopmeter's rule (the family files under src/ops/ and the row comments of
FM_OP_LIST in include/flopmeter.h) and says so next to it. The open points:
  - HardSigmoid: the rule is clip(alpha x + beta, 0, 1) with the attrs as given; the cases give
    alpha and beta explicitly (fm_attrs_init's 1 and 1 would be read literally by the rule).
  - Pad: the rule carries no pad value or mode: constant 0 (ONNX's default).
  - Resize: the rule carries only the mode and the output dims, no coordinate transformation:
    ONNX's defaults, half_pixel (PyTorch's align_corners=False), cubic coefficient -0.75 (both
    defaults agree); nearest only by integer factors, where ONNX's round_prefer_floor and
    PyTorch's floor pick the same source pixels.
  - ConstantOfShape: the fill value is attrs lo (0 by default, ONNX's default). Range: the
    length and dtype in ints, start in lo and delta in beta (fm_attrs_init's 0 and 1: 0, 1, ...).
  - Cast float -> int: truncation toward zero (C's and PyTorch's); values stay away from
    integers and from .5.
  - Attention: a boolean mask keeps the scores where it is true (PyTorch's
    scaled_dot_product_attention, ONNX Attention); a float mask is added to the scaled scores;
    FM_ATTR_CAUSAL masks key j > query i (top-left aligned), run with Sq == Sk only, where every
    convention agrees; scale 0 means 1/sqrt(D).
  - Clip bounds as tensors (ONNX's inputs 1 and 2) are not read by the rule: the cases give
    attrs lo and hi only.
  - Slice: ints are (start, end, step) per dim with start in [0, d] (or [-1, d-1] stepping back)
    and end -1 meaning "before index 0" when stepping back: Python's range(start, end, step).

File format (tests/data/goldens/backend_ops.txt), one record per line, '#' starts a comment:
    case <name> <Op> <train|infer> <outputs>   starts a case; Op as fm_op_name prints it
    attr <field> <values...>                  an fm_attrs field that differs from
                                              fm_attrs_init: kernel, stride, dilation (2 each),
                                              pad (4), output_padding, out_size (2), groups,
                                              axis, ints (any count), alpha, beta, eps, lo, hi,
                                              ratio, scale, flags (names joined by '|':
                                              CEIL_MODE COUNT_PAD TRANS_A TRANS_B CAUSAL
                                              KEEPDIMS GELU_TANH INFER_BN)
    in <name> <PARAM|INPUT|BUFFER> <dtype> <dims>   the op's inputs in slot order; dtype as
                                              fm_dtype_name prints it, dims like 2x3x4
    in -                                      an omitted optional input (FM_NONE)
    value <name> <n> <v...>                   starting value of an input (row-major)
    labels <n> <v...>                         training: the labels of the appended loss
    out <k> <n> <v...>                        the op's output k after the step
    loss <v>                                  training: the loss of the step
    grad <name> <n> <v...>                    training: d loss / d input, every PARAM
    state <name> <n> <v...>                   a BUFFER's value after the step (BatchNorm)
    tol <atol> <rtol>                         this case's tolerance, when not the test's
                                              default (the reason is in this script)
    end
Floats have 9 significant digits (float32 round-trips); ints and bools are printed as
integers.

Run: python3 tools/make_op_goldens.py   (any CPU PyTorch: first made with Debian's python3-torch 1.13,
re-made with PyPI's torch 2.15 with the same values; the header names the version)
"""
import math
import os
import sys
import zlib

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "goldens",
                   "backend_ops.txt")

# enum fm_dtype (include/flopmeter.h): Cast, Range and ConstantOfShape carry it in ints
DT = {"fp32": 0, "fp16": 1, "bf16": 2, "fp64": 3, "fp8": 4, "int64": 5, "int32": 6,
      "int16": 7, "int8": 8, "uint8": 9, "bool": 10}

# fm_attrs_init's values: only fields that differ are written
DEFAULTS = {"kernel": [1, 1], "stride": [1, 1], "dilation": [1, 1], "pad": [0, 0, 0, 0],
            "output_padding": [0, 0], "out_size": [0, 0], "groups": 1, "axis": 0, "ints": [],
            "alpha": 1.0, "beta": 1.0, "eps": 1e-5, "lo": 0.0, "hi": 0.0, "ratio": 0.0,
            "scale": 0.0, "flags": []}
FLAG_NAMES = ["CEIL_MODE", "COUNT_PAD", "TRANS_A", "TRANS_B", "CAUSAL", "KEEPDIMS",
              "GELU_TANH", "INFER_BN"]


# ---- starting values: float32, deterministic per case and input ----

class Values:
    """Random starting values for one case, seeded by the case's name (adding a case does not
    change the others)."""

    def __init__(self, case_name):
        self.g = torch.Generator().manual_seed(zlib.crc32(case_name.encode()))

    def normal(self, shape, scale=1.0):
        return torch.randn(shape, generator=self.g, dtype=torch.float64).float() * scale

    def uniform(self, shape, lo, hi):
        u = torch.rand(shape, generator=self.g, dtype=torch.float64)
        return (lo + (hi - lo) * u).float()

    def away(self, shape, kinks, scale=1.0):
        """Normal values moved at least 0.1 away from every kink."""
        v = self.normal(shape, scale).double()
        for k in kinks:
            near = (v - k).abs() < 0.1
            push = torch.where(v < k, torch.full_like(v, -0.15), torch.full_like(v, 0.15))
            v = torch.where(near, k + push, v)
        return v.float()

    def distinct(self, shape, step=0.05):
        """Distinct values step apart, shuffled: max-like ops see no ties."""
        n = math.prod(shape)
        v = (torch.arange(n, dtype=torch.float64) - n / 2) * step
        return v[torch.randperm(n, generator=self.g)].reshape(shape).float()

    def nonzero(self, shape, lo, hi):
        """Magnitudes uniform in [lo, hi], random signs."""
        m = self.uniform(shape, lo, hi)
        s = torch.randint(0, 2, shape, generator=self.g) * 2 - 1
        return m * s.float()

    def ints(self, shape, lo, hi):
        return torch.randint(lo, hi, shape, generator=self.g, dtype=torch.int64)

    def bools(self, shape):
        return torch.randint(0, 2, shape, generator=self.g).bool()

    def roundish(self, shape, scale=2.0):
        """Small integers as floats (comparisons see equal elements)."""
        return torch.round(self.normal(shape, scale))


# ---- cases ----

class In:
    def __init__(self, name, role, dtype, shape, value):
        self.name, self.role, self.dtype, self.shape = name, role, dtype, list(shape)
        self.value = value


NONE = None   # an omitted optional input


class Case:
    def __init__(self, name, op, mode, inputs, fn, attrs=None, n_out=1, tol=None):
        self.name, self.op, self.mode = name, op, mode
        self.inputs, self.fn = inputs, fn
        self.attrs = attrs or {}
        self.n_out = n_out
        self.tol = tol


CASES = []


def case(name, op, mode, fn, inputs, n_out=1, tol=None, **attrs):
    """One case: op (as fm_op_name prints it) in mode "train" or "infer"; fn maps the inputs
    (float64 tensors, None for an omitted slot) to the list of the op's outputs; attrs are
    fm_attrs fields by name. tol=(atol, rtol) loosens the test's default tolerance for this
    case only: say why next to it."""
    CASES.append(Case(name, op, mode, inputs, fn, attrs, n_out, tol))


# inputs: a trainable parameter (gets a gradient), an input (no gradient), a buffer (state)
def P(name, value):
    return In(name, "PARAM", "fp32", value.shape, value)


def I(name, value, dtype=None):
    if dtype is None:
        dtype = {torch.float32: "fp32", torch.int64: "int64", torch.bool: "bool",
                 torch.int32: "int32", torch.int8: "int8", torch.uint8: "uint8"}[value.dtype]
    return In(name, "INPUT", dtype, value.shape, value)


def B(name, value):
    return In(name, "BUFFER", "fp32", value.shape, value)


# -- conv.c: Conv (2-D; 1-D reads index 1 of the window attributes), ConvTranspose --

def conv2d(a):
    def f(x, w, b=None):
        t, l, bo, r = a.get("pad", [0, 0, 0, 0])
        x = F.pad(x, (l, r, t, bo))   # asymmetric padding: pad first, then a valid conv
        return [F.conv2d(x, w, b, a.get("stride", [1, 1]), 0, a.get("dilation", [1, 1]),
                         a.get("groups", 1))]
    return f


def add_conv_cases():
    v = Values("conv_basic")
    a = dict(kernel=[3, 3], pad=[1, 1, 1, 1])
    case("conv_basic", "Conv", "train", conv2d(a),
         [P("x", v.normal((2, 3, 5, 5))), P("w", v.normal((4, 3, 3, 3), 0.3)),
          P("b", v.normal((4,), 0.3))], **a)
    # grouped, strided, dilated, padded, with bias
    v = Values("conv_grouped_strided_dilated")
    a = dict(kernel=[3, 3], stride=[2, 2], dilation=[2, 2], pad=[2, 2, 2, 2], groups=2)
    case("conv_grouped_strided_dilated", "Conv", "train", conv2d(a),
         [P("x", v.normal((2, 4, 7, 7))), P("w", v.normal((6, 2, 3, 3), 0.3)),
          P("b", v.normal((6,), 0.3))], **a)
    # depthwise, the bias slot given but empty
    v = Values("conv_depthwise")
    a = dict(kernel=[3, 3], pad=[1, 1, 1, 1], groups=4)
    case("conv_depthwise", "Conv", "train", lambda x, w, b, f=conv2d(a): f(x, w),
         [P("x", v.normal((2, 4, 4, 4))), P("w", v.normal((4, 1, 3, 3), 0.3)), NONE], **a)
    # inference: the forward-inference primitives, no bias
    v = Values("conv_infer")
    a = dict(kernel=[3, 3], stride=[2, 2], pad=[1, 1, 1, 1])
    case("conv_infer", "Conv", "infer", conv2d(a),
         [I("x", v.normal((2, 3, 5, 5))), P("w", v.normal((4, 3, 3, 3), 0.3))], **a)
    # asymmetric kernel, stride and padding (top 1, left 0, bottom 0, right 2)
    v = Values("conv_asymmetric")
    a = dict(kernel=[1, 3], stride=[2, 1], pad=[1, 0, 0, 2])
    case("conv_asymmetric", "Conv", "train", conv2d(a),
         [P("x", v.normal((2, 3, 5, 4))), P("w", v.normal((4, 3, 1, 3), 0.3))], **a)
    # 1-D: (N, C, L); the window attributes live at index 1 (pad[1] left, pad[3] right)
    v = Values("conv_1d")
    a = dict(kernel=[1, 3], stride=[1, 2], pad=[0, 1, 0, 1])
    case("conv_1d", "Conv", "train",
         lambda x, w, b: [F.conv1d(x, w, b, stride=2, padding=1)],
         [P("x", v.normal((2, 3, 9))), P("w", v.normal((4, 3, 3), 0.3)),
          P("b", v.normal((4,), 0.3))], **a)

    # ConvTranspose: W (C, Cout/g, kh, kw); out = (in-1)*stride - pads + dil*(k-1) + outpad + 1
    v = Values("conv_transpose_basic")
    a = dict(kernel=[3, 3], stride=[2, 2], pad=[1, 1, 1, 1], output_padding=[1, 1])
    case("conv_transpose_basic", "ConvTranspose", "train",
         lambda x, w, b: [F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1)],
         [P("x", v.normal((2, 4, 3, 3))), P("w", v.normal((4, 3, 3, 3), 0.3)),
          P("b", v.normal((3,), 0.3))], **a)
    v = Values("conv_transpose_grouped_dilated")
    a = dict(kernel=[3, 3], dilation=[2, 2], groups=2)
    case("conv_transpose_grouped_dilated", "ConvTranspose", "train",
         lambda x, w: [F.conv_transpose2d(x, w, None, groups=2, dilation=2)],
         [P("x", v.normal((2, 4, 3, 3))), P("w", v.normal((4, 2, 3, 3), 0.3))], **a)


# -- matmul.c: Linear, Gemm, MatMul --

def gemm(a):
    fl = a.get("flags", [])

    def f(A, Bm, C=None):
        y = a.get("alpha", 1.0) * ((A.t() if "TRANS_A" in fl else A) @
                                   (Bm.t() if "TRANS_B" in fl else Bm))
        return [y if C is None else y + a.get("beta", 1.0) * C]
    return f


def add_matmul_cases():
    v = Values("linear_2d")
    case("linear_2d", "Linear", "train", lambda x, w, b: [F.linear(x, w, b)],
         [P("x", v.normal((3, 12))), P("w", v.normal((5, 12), 0.3)), P("b", v.normal((5,), 0.3))])
    # no bias: the slot given but empty
    v = Values("linear_no_bias")
    case("linear_no_bias", "Linear", "train", lambda x, w, b: [F.linear(x, w)],
         [P("x", v.normal((4, 7))), P("w", v.normal((6, 7), 0.3)), NONE])
    # a transformer's Linear over (B, S, K)
    v = Values("linear_3d")
    case("linear_3d", "Linear", "train", lambda x, w, b: [F.linear(x, w, b)],
         [P("x", v.normal((2, 3, 8))), P("w", v.normal((5, 8), 0.3)), P("b", v.normal((5,), 0.3))])

    # Gemm: alpha * op(A) op(B) + beta * C, C broadcast to (M, N)
    v = Values("gemm_linear_form")
    a = dict(flags=["TRANS_B"])
    case("gemm_linear_form", "Gemm", "train", gemm(a),
         [P("a", v.normal((3, 8))), P("b", v.normal((5, 8), 0.3)), P("c", v.normal((5,), 0.3))],
         **a)
    v = Values("gemm_trans_a_alpha_beta")
    a = dict(flags=["TRANS_A"], alpha=0.5, beta=2.0)
    case("gemm_trans_a_alpha_beta", "Gemm", "train", gemm(a),
         [P("a", v.normal((6, 3))), P("b", v.normal((6, 4), 0.3)), P("c", v.normal((3, 4), 0.3))],
         **a)
    v = Values("gemm_trans_both_row_c")
    a = dict(flags=["TRANS_A", "TRANS_B"], beta=0.5)
    case("gemm_trans_both_row_c", "Gemm", "train", gemm(a),
         [P("a", v.normal((5, 3))), P("b", v.normal((4, 5), 0.3)), P("c", v.normal((1, 4), 0.3))],
         **a)
    v = Values("gemm_no_c")
    case("gemm_no_c", "Gemm", "train", gemm({}),
         [P("a", v.normal((3, 5))), P("b", v.normal((5, 4), 0.3))])

    # MatMul: numpy semantics (batch broadcasting, 1-D operands)
    v = Values("matmul_2d")
    case("matmul_2d", "MatMul", "train", lambda A, Bm: [A @ Bm],
         [P("a", v.normal((3, 4))), P("b", v.normal((4, 5)))])
    v = Values("matmul_batch_broadcast")
    case("matmul_batch_broadcast", "MatMul", "train", lambda A, Bm: [torch.matmul(A, Bm)],
         [P("a", v.normal((2, 1, 3, 4))), P("b", v.normal((3, 4, 2)))])
    v = Values("matmul_1d_rhs")
    case("matmul_1d_rhs", "MatMul", "train", lambda A, Bm: [torch.matmul(A, Bm)],
         [P("a", v.normal((2, 3, 4))), P("b", v.normal((4,)))])
    v = Values("matmul_1d_lhs")
    case("matmul_1d_lhs", "MatMul", "train", lambda A, Bm: [torch.matmul(A, Bm)],
         [P("a", v.normal((4,))), P("b", v.normal((2, 4, 3)))])
    # GroupedMatMul: each row against its expert's (M, K) matrix, Y[i] = X[i] W[idx[i]]^T
    v = Values("grouped_matmul")
    experts = torch.tensor([2, 0, 2, 1, 0, 2], dtype=torch.int64)
    case("grouped_matmul", "GroupedMatMul", "train",
         lambda X, W, ix: [torch.einsum("nk,nmk->nm", X, W[ix])],
         [P("x", v.normal((6, 4))), P("w", v.normal((3, 5, 4), 0.3)), I("idx", experts)])


# -- norm.c --

def batchnorm(a, train):
    def f(x, w, b, rm, rv):
        batch_stats = train and "INFER_BN" not in a.get("flags", [])
        return [F.batch_norm(x, rm, rv, w, b, training=batch_stats, momentum=0.1,
                             eps=a.get("eps", 1e-5))]
    return f


def add_norm_cases():
    def bn_inputs(v, shape):
        c = shape[1]
        return [P("x", v.normal(shape, 2.0)), P("scale", v.uniform((c,), 0.5, 1.5)),
                P("bias", v.normal((c,), 0.5)), B("running_mean", v.normal((c,), 0.5)),
                B("running_var", v.uniform((c,), 0.5, 2.0))]
    # training: batch statistics; the running statistics move (momentum 0.1, unbiased var)
    v = Values("batchnorm_train")
    case("batchnorm_train", "BatchNorm", "train", batchnorm({}, True), bn_inputs(v, (3, 4, 3, 3)))
    v = Values("batchnorm_train_2d")
    case("batchnorm_train_2d", "BatchNorm", "train", batchnorm({}, True), bn_inputs(v, (6, 5)))
    # inference: the running statistics; eps other than the default, so a backend must read it
    v = Values("batchnorm_infer")
    a = dict(eps=1e-2)
    ins = bn_inputs(v, (2, 3, 4, 4))
    ins[0] = I("x", ins[0].value)
    case("batchnorm_infer", "BatchNorm", "infer", batchnorm(a, False), ins, **a)
    # frozen statistics in training (FM_ATTR_INFER_BN): an affine map with gradients
    v = Values("batchnorm_frozen_train")
    a = dict(flags=["INFER_BN"], eps=1e-3)
    case("batchnorm_frozen_train", "BatchNorm", "train", batchnorm(a, True),
         bn_inputs(v, (2, 3, 3, 3)), **a)

    # LayerNorm normalizes dims [axis, rank); scale and bias have that many elements
    v = Values("layernorm_last")
    a = dict(axis=-1)
    case("layernorm_last", "LayerNorm", "train",
         lambda x, w, b: [F.layer_norm(x, x.shape[-1:], w, b, 1e-5)],
         [P("x", v.normal((2, 3, 8), 2.0)), P("scale", v.uniform((8,), 0.5, 1.5)),
          P("bias", v.normal((8,), 0.5))], **a)
    v = Values("layernorm_axis1")
    a = dict(axis=1, eps=1e-3)
    case("layernorm_axis1", "LayerNorm", "train",
         lambda x, w, b: [F.layer_norm(x, x.shape[1:], w, b, 1e-3)],
         [P("x", v.normal((2, 3, 4), 2.0)), P("scale", v.uniform((3, 4), 0.5, 1.5)),
          P("bias", v.normal((3, 4), 0.5))], **a)
    v = Values("layernorm_no_affine")
    a = dict(axis=-1)
    case("layernorm_no_affine", "LayerNorm", "train",
         lambda x: [F.layer_norm(x, x.shape[-1:], None, None, 1e-5)],
         [P("x", v.normal((3, 6), 2.0))], **a)

    v = Values("groupnorm")
    a = dict(groups=3)
    case("groupnorm", "GroupNorm", "train",
         lambda x, w, b: [F.group_norm(x, 3, w, b, 1e-5)],
         [P("x", v.normal((2, 6, 3, 3), 2.0)), P("scale", v.uniform((6,), 0.5, 1.5)),
          P("bias", v.normal((6,), 0.5))], **a)
    v = Values("instancenorm")
    case("instancenorm", "InstanceNorm", "train",
         lambda x, w, b: [F.instance_norm(x, weight=w, bias=b, eps=1e-5)],
         [P("x", v.normal((2, 3, 4, 4), 2.0)), P("scale", v.uniform((3,), 0.5, 1.5)),
          P("bias", v.normal((3,), 0.5))])


# -- act.c --

def add_act_cases():
    X = (2, 3, 4, 4)

    def act(name, op, fn, x, **a):
        case(name, op, "train", lambda t: [fn(t)], [P("x", x)], **a)

    act("relu", "ReLU", F.relu, Values("relu").away(X, [0.0]))
    act("clip_relu6", "Clip", lambda t: torch.clamp(t, 0.0, 6.0),
        Values("clip_relu6").away(X, [0.0, 6.0], 4.0), lo=0.0, hi=6.0)
    act("clip_custom", "Clip", lambda t: torch.clamp(t, -0.5, 0.75),
        Values("clip_custom").away(X, [-0.5, 0.75]), lo=-0.5, hi=0.75)
    act("leaky_relu", "LeakyReLU", lambda t: F.leaky_relu(t, 0.1),
        Values("leaky_relu").away(X, [0.0]), alpha=0.1)
    act("sigmoid", "Sigmoid", torch.sigmoid, Values("sigmoid").normal(X, 2.0))
    act("tanh", "Tanh", torch.tanh, Values("tanh").normal(X))
    act("silu", "SiLU", F.silu, Values("silu").normal(X, 2.0))
    act("gelu", "GELU", F.gelu, Values("gelu").normal(X, 2.0))
    act("gelu_tanh", "GELU", lambda t: F.gelu(t, approximate="tanh"),
        Values("gelu_tanh").normal(X, 2.0), flags=["GELU_TANH"])
    act("hardswish", "Hardswish", F.hardswish, Values("hardswish").away(X, [-3.0, 3.0], 3.0))
    # ONNX's defaults (0.2, 0.5) and PyTorch's (1/6, 1/2); given explicitly (see the header)
    act("hardsigmoid_onnx", "Hardsigmoid", lambda t: torch.clamp(0.2 * t + 0.5, 0.0, 1.0),
        Values("hardsigmoid_onnx").away(X, [-2.5, 2.5], 3.0), alpha=0.2, beta=0.5)
    act("hardsigmoid_torch", "Hardsigmoid", lambda t: torch.clamp(t / 6.0 + 0.5, 0.0, 1.0),
        Values("hardsigmoid_torch").away(X, [-3.0, 3.0], 3.0), alpha=1.0 / 6.0, beta=0.5)

    # PRelu: y = x > 0 ? x : slope * x, slope broadcast to X
    v = Values("prelu_channel")
    case("prelu_channel", "PRelu", "train", lambda x, s: [torch.where(x > 0, x, s * x)],
         [P("x", v.away(X, [0.0])), P("slope", v.uniform((3, 1, 1), 0.05, 0.5))])
    v = Values("prelu_scalar")
    case("prelu_scalar", "PRelu", "train", lambda x, s: [torch.where(x > 0, x, s * x)],
         [P("x", v.away((3, 5), [0.0])), P("slope", v.uniform((1,), 0.05, 0.5))])

    # Softmax / LogSoftmax along one axis
    case("softmax_last", "Softmax", "train", lambda t: [torch.softmax(t, -1)],
         [P("x", Values("softmax_last").normal((2, 3, 5), 2.0))], axis=-1)
    case("softmax_axis1", "Softmax", "train", lambda t: [torch.softmax(t, 1)],
         [P("x", Values("softmax_axis1").normal((2, 4, 3), 2.0))], axis=1)
    case("log_softmax_last", "LogSoftmax", "train", lambda t: [torch.log_softmax(t, -1)],
         [P("x", Values("log_softmax_last").normal((3, 6), 2.0))], axis=-1)
    case("log_softmax_axis0", "LogSoftmax", "train", lambda t: [torch.log_softmax(t, 0)],
         [P("x", Values("log_softmax_axis0").normal((3, 4), 2.0))], axis=0)


# -- pool.c --

def add_pool_cases():
    def pool(name, op, shape, fn, values="distinct", **a):
        v = Values(name)
        x = v.distinct(shape) if values == "distinct" else v.normal(shape)
        case(name, op, "train", lambda t: [fn(t)], [P("x", x)], **a)

    pool("maxpool", "MaxPool", (2, 3, 7, 7),
         lambda t: F.max_pool2d(t, 3, 2, 1), kernel=[3, 3], stride=[2, 2], pad=[1, 1, 1, 1])
    case("maxpool_infer", "MaxPool", "infer", lambda t: [F.max_pool2d(t, 2, 2)],
         [I("x", Values("maxpool_infer").distinct((2, 3, 4, 6)))], kernel=[2, 2], stride=[2, 2])
    pool("maxpool_ceil", "MaxPool", (2, 3, 6, 6),
         lambda t: F.max_pool2d(t, 3, 2, 0, ceil_mode=True), kernel=[3, 3], stride=[2, 2],
         flags=["CEIL_MODE"])
    pool("maxpool_dilated", "MaxPool", (2, 2, 6, 6),
         lambda t: F.max_pool2d(t, 2, 1, 0, dilation=2), kernel=[2, 2], dilation=[2, 2])
    pool("avgpool_exclude_pad", "AvgPool", (2, 3, 7, 7),
         lambda t: F.avg_pool2d(t, 3, 2, 1, count_include_pad=False), values="normal",
         kernel=[3, 3], stride=[2, 2], pad=[1, 1, 1, 1])
    pool("avgpool_count_pad", "AvgPool", (2, 3, 7, 7),
         lambda t: F.avg_pool2d(t, 3, 2, 1, count_include_pad=True), values="normal",
         kernel=[3, 3], stride=[2, 2], pad=[1, 1, 1, 1], flags=["COUNT_PAD"])
    pool("avgpool_ceil", "AvgPool", (2, 3, 5, 5),
         lambda t: F.avg_pool2d(t, 2, 2, 0, ceil_mode=True), values="normal",
         kernel=[2, 2], stride=[2, 2], flags=["CEIL_MODE"])
    # ceil mode whose last window runs past the padding: PyTorch's divisor counts the padding
    # but not what lies beyond it (min(start + k, in + pad) - start)
    pool("avgpool_ceil_count_pad", "AvgPool", (1, 2, 6, 6),
         lambda t: F.avg_pool2d(t, 3, 2, 1, ceil_mode=True, count_include_pad=True),
         values="normal", kernel=[3, 3], stride=[2, 2], pad=[1, 1, 1, 1],
         flags=["CEIL_MODE", "COUNT_PAD"])
    # adaptive: PyTorch's windows [floor(i*in/out), ceil((i+1)*in/out))
    pool("adaptive_avgpool_uneven", "AdaptiveAvgPool", (2, 3, 5, 7),
         lambda t: F.adaptive_avg_pool2d(t, (2, 3)), values="normal", out_size=[2, 3])
    pool("adaptive_avgpool_even", "AdaptiveAvgPool", (2, 3, 6, 6),
         lambda t: F.adaptive_avg_pool2d(t, (3, 3)), values="normal", out_size=[3, 3])
    pool("global_avgpool", "GlobalAvgPool", (2, 3, 4, 5),
         lambda t: t.mean((2, 3), keepdim=True), values="normal")
    pool("global_maxpool", "GlobalMaxPool", (2, 3, 4, 5),
         lambda t: t.amax((2, 3), keepdim=True))


# -- eltwise.c: numpy broadcasting --

def add_eltwise_cases():
    fns = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div}
    for op, fn in fns.items():
        lo = op.lower()
        # Div: denominators away from zero
        den = (lambda v, s: v.nonzero(s, 0.5, 2.0)) if op == "Div" else (lambda v, s: v.normal(s))
        v = Values(lo + "_same")
        case(lo + "_same", op, "train", lambda a, b, fn=fn: [fn(a, b)],
             [P("a", v.normal((2, 3, 4))), P("b", den(v, (2, 3, 4)))])
        # the second operand broadcast over a lower rank (a per-channel bias)
        v = Values(lo + "_broadcast")
        case(lo + "_broadcast", op, "train", lambda a, b, fn=fn: [fn(a, b)],
             [P("a", v.normal((2, 4, 3, 3))), P("b", den(v, (4, 1, 1)))])
    # the second operand broadcast over the first and last dims: (3, 1) against (2, 3, 4)
    v = Values("mul_broadcast_middle")
    case("mul_broadcast_middle", "Mul", "train", lambda a, b: [a * b],
         [P("a", v.normal((2, 3, 4))), P("b", v.normal((3, 1)))])
    # the first operand broadcast (squeeze-excitation's scale)
    v = Values("mul_first_broadcast")
    case("mul_first_broadcast", "Mul", "train", lambda a, b: [a * b],
         [P("a", v.normal((2, 4, 1, 1))), P("b", v.normal((2, 4, 3, 3)))])
    # both operands broadcast: (2,1,3) + (1,4,1) -> (2,4,3)
    v = Values("add_both_broadcast")
    case("add_both_broadcast", "Add", "train", lambda a, b: [a + b],
         [P("a", v.normal((2, 1, 3))), P("b", v.normal((1, 4, 1)))])
    # one tensor in both slots: its two gradients add up
    x = P("x", Values("add_same_tensor").normal((2, 5)))
    case("add_same_tensor", "Add", "train", lambda a, b: [a + b], [x, x])
    # a one-element second operand
    v = Values("sub_scalar_rhs")
    case("sub_scalar_rhs", "Sub", "train", lambda a, b: [a - b],
         [P("a", v.normal((3, 4))), P("b", v.normal((1,)))])


# -- shape.c, dropout.c --

def add_shape_cases():
    v = Values("concat_channels")
    case("concat_channels", "Concat", "train", lambda a, b: [torch.cat([a, b], 1)],
         [P("a", v.normal((2, 3, 2, 2))), P("b", v.normal((2, 2, 2, 2)))], axis=1)
    v = Values("concat_last_three")
    case("concat_last_three", "Concat", "train", lambda a, b, c: [torch.cat([a, b, c], -1)],
         [P("a", v.normal((2, 3, 2))), P("b", v.normal((2, 3, 3))), P("c", v.normal((2, 3, 1)))],
         axis=-1)
    v = Values("flatten_axis1")
    case("flatten_axis1", "Flatten", "train", lambda t: [t.reshape(t.shape[0], -1)],
         [P("x", v.normal((2, 3, 2, 2)))], axis=1)
    v = Values("flatten_axis2")
    case("flatten_axis2", "Flatten", "train", lambda t: [t.reshape(6, -1)],
         [P("x", v.normal((2, 3, 2, 2)))], axis=2)
    v = Values("flatten_axis0")
    case("flatten_axis0", "Flatten", "train", lambda t: [t.reshape(1, -1)],
         [P("x", v.normal((2, 3, 4)))])
    # Reshape: 0 copies the input's dim, -1 is inferred
    v = Values("reshape")
    case("reshape", "Reshape", "train", lambda t: [t.reshape(2, 4, 3)],
         [P("x", v.normal((2, 3, 4)))], ints=[0, 4, -1])
    v = Values("transpose")
    case("transpose", "Transpose", "train", lambda t: [t.permute(0, 2, 3, 1)],
         [P("x", v.normal((2, 3, 2, 4)))], ints=[0, 2, 3, 1])
    v = Values("transpose_reverse")   # no permutation: reverse the dims (ONNX's default)
    case("transpose_reverse", "Transpose", "train", lambda t: [t.permute(1, 0)],
         [P("x", v.normal((3, 4)))])
    # Split: the loss reads output 0; output 1's values are compared, its gradient is zero
    v = Values("split_sizes")
    case("split_sizes", "Split", "train", lambda t: list(torch.split(t, [1, 3], 1)),
         [P("x", v.normal((2, 4, 3)))], n_out=2, axis=1, ints=[1, 3])
    v = Values("split_equal")
    case("split_equal", "Split", "train", lambda t: list(torch.split(t, 2, -1)),
         [P("x", v.normal((2, 6)))], n_out=3, axis=-1)
    case("identity", "Identity", "train", lambda t: [t],
         [P("x", Values("identity").normal((2, 5)))])
    # Dropout: ratio 0 in training is the identity (masks are random); in inference any
    # ratio is the identity
    case("dropout_train_p0", "Dropout", "train", lambda t: [t],
         [P("x", Values("dropout_train_p0").normal((3, 4)))])
    case("dropout_infer", "Dropout", "infer", lambda t: [t],
         [I("x", Values("dropout_infer").normal((3, 4)))], ratio=0.5)


# -- embedding.c, attention.c, loss.c --

def attention(a):
    def f(q, k, v, mask=None):
        d = q.shape[-1]
        scale = a.get("scale", 0.0) or 1.0 / math.sqrt(d)
        s = (q @ k.transpose(-1, -2)) * scale
        if "CAUSAL" in a.get("flags", []):
            sq, sk = s.shape[-2], s.shape[-1]
            keep = torch.ones(sq, sk, dtype=torch.bool).tril()
            s = s.masked_fill(~keep, float("-inf"))
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
        return [torch.softmax(s, -1) @ v]
    return f


def add_misc_cases():
    v = Values("embedding")
    case("embedding", "Embedding", "train", lambda ids, w: [F.embedding(ids, w)],
         [I("ids", v.ints((2, 3), 0, 5)), P("w", v.normal((5, 4)))])

    def qkv(v, b, h, sq, sk, d, dv):
        return [P("q", v.normal((b, h, sq, d))), P("k", v.normal((b, h, sk, d))),
                P("v", v.normal((b, h, sk, dv)))]
    v = Values("attention")
    case("attention", "Attention", "train", attention({}), qkv(v, 2, 2, 3, 4, 4, 3))
    v = Values("attention_causal_scale")
    a = dict(flags=["CAUSAL"], scale=0.3)
    case("attention_causal_scale", "Attention", "train", attention(a), qkv(v, 2, 2, 4, 4, 3, 3),
         **a)
    # a boolean mask broadcast over heads; every query keeps at least one key
    v = Values("attention_bool_mask")
    ins = qkv(v, 2, 2, 3, 4, 4, 3)
    m = v.bools((2, 1, 3, 4))
    m[..., 0] = True
    case("attention_bool_mask", "Attention", "train", attention({}),
         ins + [I("mask", m)])
    # an additive float mask that is learned (a position bias): it gets a gradient too
    v = Values("attention_float_mask")
    ins = qkv(v, 2, 2, 3, 4, 4, 3)
    case("attention_float_mask", "Attention", "train", attention({}),
         ins + [P("mask", v.normal((1, 1, 3, 4)))])

    # CrossEntropy is its own loss: no labels line, the op's output is the loss
    v = Values("cross_entropy")
    case("cross_entropy", "CrossEntropy", "train", lambda x, y: [F.cross_entropy(x, y)],
         [P("logits", v.normal((4, 5), 2.0)), I("labels", v.ints((4,), 0, 5))])

    # MSELoss (torch.nn.MSELoss, mean) is its own loss too; a target that is an input gets no
    # gradient, a learned one gets minus the prediction's
    v = Values("mse_loss")
    case("mse_loss", "MSELoss", "train", lambda y, t: [F.mse_loss(y, t)],
         [P("prediction", v.normal((3, 4))), I("target", v.normal((3, 4)))])
    v = Values("mse_loss_learned_target")
    case("mse_loss_learned_target", "MSELoss", "train", lambda y, t: [F.mse_loss(y, t)],
         [P("prediction", v.normal((2, 3, 2))), P("target", v.normal((2, 3, 2)))])


    # ONNX's SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss: ints = {reduction (0 none,
    # 1 sum, 2 mean), has ignore_index, ignore_index}; their own loss in training (mean or
    # sum), forward only with reduction none (the output is not a scalar)
    v = Values("sce_mean")
    case("sce_mean", "SoftmaxCrossEntropyLoss", "train", lambda x, y: [F.cross_entropy(x, y)],
         [P("scores", v.normal((3, 5), 2.0)), I("labels", v.ints((3,), 0, 5))], ints=[2, 0, 0])
    v = Values("sce_sum_weight_ii")
    case("sce_sum_weight_ii", "SoftmaxCrossEntropyLoss", "train",
         lambda x, y, w: [F.cross_entropy(x, y, weight=w, ignore_index=1, reduction="sum")],
         [P("scores", v.normal((2, 4, 3), 2.0)), I("labels", torch.tensor([[0, 1, 3], [2, 1, 0]])),
          I("weights", v.uniform((4,), 0.5, 1.5))], ints=[1, 1, 1])
    v = Values("sce_none_log_prob")
    case("sce_none_log_prob", "SoftmaxCrossEntropyLoss", "infer",
         lambda x, y: [F.cross_entropy(x, y, reduction="none"), F.log_softmax(x, 1)],
         [I("scores", v.normal((3, 4, 2), 2.0)), I("labels", v.ints((3, 2), 0, 4))], n_out=2,
         ints=[0, 0, 0])
    v = Values("nll_mean_weight")
    case("nll_mean_weight", "NegativeLogLikelihoodLoss", "train",
         lambda x, y, w: [F.nll_loss(x, y, weight=w)],
         [P("log_probs", v.normal((3, 5))), I("labels", v.ints((3,), 0, 5)),
          I("weights", v.uniform((5,), 0.5, 1.5))], ints=[2, 0, 0])
    v = Values("nll_mean_ii")
    case("nll_mean_ii", "NegativeLogLikelihoodLoss", "train",
         lambda x, y: [F.nll_loss(x, y, ignore_index=2)],
         [P("log_probs", v.normal((2, 3, 4))), I("labels", torch.tensor([[0, 2, 1, 2], [1, 0, 2, 2]]))],
         ints=[2, 1, 2])


# -- unary.c --

def add_unary_cases():
    X = (2, 3, 4)

    def un(name, op, fn, x):
        case(name, op, "train", lambda t: [fn(t)], [P("x", x)])

    un("erf", "Erf", torch.erf, Values("erf").normal(X))
    un("sqrt", "Sqrt", torch.sqrt, Values("sqrt").uniform(X, 0.5, 3.0))
    un("reciprocal", "Reciprocal", torch.reciprocal, Values("reciprocal").nonzero(X, 0.5, 2.0))
    un("neg", "Neg", torch.neg, Values("neg").normal(X))
    un("exp", "Exp", torch.exp, Values("exp").normal(X))
    un("log", "Log", torch.log, Values("log").uniform(X, 0.5, 3.0))
    un("abs", "Abs", torch.abs, Values("abs").nonzero(X, 0.1, 2.0))
    # Pow: X ^ P broadcast; a constant exponent (no gradient) and a learned one
    v = Values("pow_const_exponent")
    case("pow_const_exponent", "Pow", "train", lambda x, p: [torch.pow(x, p)],
         [P("x", v.uniform(X, 0.5, 2.0)), I("p", torch.tensor([2.5]))])
    v = Values("pow_tensor_exponent")
    case("pow_tensor_exponent", "Pow", "train", lambda x, p: [torch.pow(x, p)],
         [P("x", v.uniform(X, 0.5, 2.0)), P("p", v.uniform((3, 4), -1.5, 2.5))])


# -- trig.c: Sin, Cos, Tan; Floor, Ceil, Round, Sign (their gradient is zero) --

def add_trig_cases():
    X = (2, 3, 4)

    def un(name, op, fn, x):
        case(name, op, "train", lambda t: [fn(t)], [P("x", x)])

    un("sin", "Sin", torch.sin, Values("sin").normal(X, 2.0))
    un("cos", "Cos", torch.cos, Values("cos").normal(X, 2.0))
    un("tan", "Tan", torch.tan, Values("tan").uniform(X, -1.2, 1.2))   # away from the poles
    un("floor", "Floor", torch.floor, Values("floor").normal(X, 3.0))
    un("ceil", "Ceil", torch.ceil, Values("ceil").normal(X, 3.0))
    un("round", "Round", torch.round, Values("round").normal(X, 3.0))   # halves to even: ONNX
    un("sign", "Sign", torch.sign, Values("sign").nonzero(X, 0.1, 2.0))


# -- issue 14's math ops: trig.c (inverse, hyperbolic), act.c (ELU ... Shrink, Hardmax),
# -- compare.c (IsInf, IsNaN, BitShift), eltwise.c (Mod, Sum, Mean), reduce.c (ReduceL1,
# -- ReduceLogSum, ReduceLogSumExp), normalize.c (LpNorm, MVN, LRN), pool.c (LpPool),
# -- linalg.c (Det) --

def add_math_cases():
    X = (2, 3, 4)

    def un(name, op, fn, x, **a):
        case(name, op, "train", lambda t: [fn(t)], [P("x", x)], **a)

    # inverse and hyperbolic functions, inside their domains and away from their poles
    un("asin", "Asin", torch.asin, Values("asin").uniform(X, -0.9, 0.9))
    un("acos", "Acos", torch.acos, Values("acos").uniform(X, -0.9, 0.9))
    un("atan", "Atan", torch.atan, Values("atan").normal(X, 2.0))
    un("sinh", "Sinh", torch.sinh, Values("sinh").normal(X))
    un("cosh", "Cosh", torch.cosh, Values("cosh").normal(X))
    un("asinh", "Asinh", torch.asinh, Values("asinh").normal(X, 2.0))
    un("acosh", "Acosh", torch.acosh, Values("acosh").uniform(X, 1.2, 3.0))
    un("atanh", "Atanh", torch.atanh, Values("atanh").uniform(X, -0.9, 0.9))

    # activations; ONNX's attributes given explicitly (fm_attrs_init's alpha, beta are 1)
    A = (2, 3, 4, 4)
    un("elu", "ELU", lambda t: F.elu(t, 0.7), Values("elu").away(A, [0.0]), alpha=0.7)
    sa, sg = 1.67326319217681884765625, 1.05070102214813232421875   # ONNX's Selu defaults
    un("selu", "SELU", lambda t: sg * torch.where(t > 0, t, sa * (torch.exp(t) - 1)),
       Values("selu").away(A, [0.0]), alpha=sa, beta=sg)
    un("celu", "CELU", lambda t: F.celu(t, 0.8), Values("celu").away(A, [0.0]), alpha=0.8)
    un("softplus", "Softplus", F.softplus, Values("softplus").normal(A, 2.0))
    un("softsign", "Softsign", F.softsign, Values("softsign").away(A, [0.0], 2.0))
    un("mish", "Mish", lambda t: t * torch.tanh(F.softplus(t)), Values("mish").normal(A, 2.0))
    un("thresholded_relu", "ThresholdedReLU", lambda t: torch.where(t > 0.5, t, 0.0 * t),
       Values("thresholded_relu").away(A, [0.5]), alpha=0.5)
    # Shrink: lo = lambd, beta = bias (ONNX's names)
    un("shrink", "Shrink",
       lambda t: torch.where(t < -0.5, t + 0.2, torch.where(t > 0.5, t - 0.2, 0.0 * t)),
       Values("shrink").away(A, [-0.5, 0.5]), lo=0.5, beta=0.2)
    # Hardmax: one-hot of the first maximum along the axis; its derivative is zero: forward only
    v = Values("hardmax")
    case("hardmax", "Hardmax", "infer",
         lambda t: [F.one_hot(t.argmax(1), 4).movedim(-1, 1).to(t.dtype)],
         [I("x", v.distinct((2, 4, 3)))], axis=1)

    # IsInf, IsNaN: bool out, forward only
    vals = torch.tensor([[1.5, float("inf"), -2.0], [float("-inf"), float("nan"), 0.0]])
    case("isinf", "IsInf", "infer", lambda t: [torch.isinf(t)], [I("x", vals)])
    case("isnan", "IsNaN", "infer", lambda t: [torch.isnan(t)], [I("x", vals)])
    # BitShift (uint8, ints = {right}), forward only
    v = Values("bitshift")
    a8, s8 = v.ints((2, 3), 0, 16), v.ints((3,), 0, 4)
    case("bitshift_left", "BitShift", "infer", lambda a, b: [torch.bitwise_left_shift(a, b)],
         [I("a", a8, "uint8"), I("b", s8, "uint8")], ints=[0])
    case("bitshift_right", "BitShift", "infer", lambda a, b: [torch.bitwise_right_shift(a, b)],
         [I("a", a8, "uint8"), I("b", s8, "uint8")], ints=[1])

    # Mod: floats with fmod=1 (C's fmod, the dividend's sign), trained; integers with fmod 0
    # (Python's %, the divisor's sign), forward only. Quotients stay away from integers.
    v = Values("mod_fmod")
    b = v.nonzero((3, 1), 0.7, 1.3)
    q = v.uniform(X, -3.0, 3.0)
    q = torch.where((q - q.round()).abs() < 0.15, q + 0.3, q)
    case("mod_fmod", "Mod", "train", lambda a, b: [torch.fmod(a, b)],
         [P("a", (q * b).float()), P("b", b)], ints=[1])
    v = Values("mod_int")
    case("mod_int", "Mod", "infer", lambda a, b: [torch.remainder(a, b)],
         [I("a", v.ints((2, 5), -20, 20)), I("b", v.nonzero((5,), 1, 6).round().long())])

    # Sum and Mean of three inputs, broadcast
    for op, fn in (("Sum", lambda a, b, c: [a + b + c]),
                   ("Mean", lambda a, b, c: [(a + b + c) / 3])):
        v = Values("variadic_" + op.lower())
        case("variadic_" + op.lower(), op, "train", fn,
             [P("a", v.normal(X)), P("b", v.normal((3, 4))), P("c", v.normal((2, 1, 4)))])

    # reductions, axes in ints
    def red(name, op, fn, x, axes, keep):
        a = dict(ints=list(axes))
        if keep:
            a["flags"] = ["KEEPDIMS"]
        case(name, op, "train", lambda t: [fn(t, tuple(axes), keep)], [P("x", x)], **a)
    red("reduce_l1", "ReduceL1", lambda t, d, k: t.abs().sum(d, keepdim=k),
        Values("rl1").away(X, [0.0]), [2], False)
    red("reduce_log_sum", "ReduceLogSum", lambda t, d, k: t.sum(d, keepdim=k).log(),
        Values("rls").uniform(X, 0.2, 2.0), [1], True)
    red("reduce_log_sum_exp", "ReduceLogSumExp", lambda t, d, k: t.logsumexp(d, keepdim=k),
        Values("rlse").normal((2, 3, 4, 2), 2.0), [1, 3], False)

    # LpNormalization along axis, ints = {p}
    case("lp_norm_2", "LpNorm", "train", lambda t: [t / t.pow(2).sum(1, keepdim=True).sqrt()],
         [P("x", Values("lp_norm_2").normal((2, 3, 4)))], axis=1, ints=[2])
    case("lp_norm_1", "LpNorm", "train", lambda t: [t / t.abs().sum(-1, keepdim=True)],
         [P("x", Values("lp_norm_1").away((3, 5), [0.0]))], axis=-1, ints=[1])

    # MeanVarianceNormalization over ints = axes, ONNX's function body (epsilon 1e-9 added to
    # the standard deviation)
    def mvn(t):
        m = t.mean((0, 2, 3), keepdim=True)
        var = (t * t).mean((0, 2, 3), keepdim=True) - m * m
        return [(t - m) / (var.sqrt() + 1e-9)]
    case("mvn", "MeanVarianceNorm", "train", mvn, [P("x", Values("mvn").normal((2, 3, 2, 2)))],
         ints=[0, 2, 3])

    # LRN, ONNX's window: channels c - floor((size-1)/2) .. c + ceil((size-1)/2) (PyTorch's
    # local_response_norm puts the longer side before c for an even size, ONNX after); ints =
    # {size}, alpha, beta, eps = bias
    def lrn(size, alpha, beta, bias):
        def f(t):
            c = t.shape[1]
            lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
            sq = t * t
            s = torch.stack([sq[:, max(0, i - lo):min(c - 1, i + hi) + 1].sum(1)
                             for i in range(c)], 1)
            return [t / (bias + alpha / size * s).pow(beta)]
        return f
    case("lrn_3", "LRN", "train", lrn(3, 0.02, 0.75, 1.0),
         [P("x", Values("lrn_3").normal((2, 5, 3, 3)))], ints=[3], alpha=0.02, beta=0.75,
         eps=1.0)
    case("lrn_4", "LRN", "train", lrn(4, 0.5, 0.6, 2.0),
         [P("x", Values("lrn_4").normal((2, 5, 2, 3)))], ints=[4], alpha=0.5, beta=0.6, eps=2.0)

    # LpPool (window as AvgPool) and GlobalLpPool, ints = {p}: (sum |x|^p)^(1/p)
    def lppool(p, k, s):
        return lambda t: [(F.avg_pool2d(t.abs().pow(p), k, s) * (k * k)).pow(1.0 / p)]
    case("lppool_2", "LpPool", "train", lppool(2, 2, 2),
         [P("x", Values("lppool_2").away((2, 3, 4, 4), [0.0]))], kernel=[2, 2], stride=[2, 2],
         ints=[2])
    case("lppool_3", "LpPool", "train", lppool(3, 3, 1),
         [P("x", Values("lppool_3").away((2, 2, 4, 5), [0.0]))], kernel=[3, 3], ints=[3])
    case("global_lppool", "GlobalLpPool", "train",
         lambda t: [t.pow(2).sum((2, 3), keepdim=True).sqrt()],
         [P("x", Values("global_lppool").normal((2, 3, 3, 4)))], ints=[2])

    # Det of each 3 x 3 matrix (linalg.c): well-conditioned matrices (identity plus noise)
    m = Values("det").normal((2, 3, 3, 3), 0.4) + torch.eye(3)
    case("det", "Det", "train", lambda t: [torch.linalg.det(t)], [P("x", m)])


# -- quant.c: quantized ops, inference only (no gradient is defined). References in float64 of
#    the integer arithmetic; rounding half to even (ONNX's and torch.round's), saturation to the
#    output type. Float starting values stay away from the .5 rounding boundaries. --

def u8(t):
    return t.to(torch.uint8)


def i8(t):
    return t.to(torch.int8)


def sat(t, dtype):
    lo, hi = (0, 255) if dtype == torch.uint8 else (-128, 127)
    return torch.clamp(torch.round(t), lo, hi).to(dtype)


def add_quant_cases():
    v = Values("quantize_linear")
    x = v.normal((2, 3), 3.0)
    case("quantize_linear", "QuantizeLinear", "infer",
         lambda x, s, z: [sat(x / s + z.double(), torch.uint8)],
         [I("x", x), I("s", torch.tensor(0.05)), I("z", u8(torch.tensor(128)), "uint8")])
    # per axis (axis 1): one scale and zero point per column, int8
    v = Values("quantize_linear_axis")
    sc = torch.tensor([0.02, 0.05, 0.1])
    case("quantize_linear_axis", "QuantizeLinear", "infer",
         lambda x, s, z: [sat(x / s + z.double(), torch.int8)],
         [I("x", v.normal((2, 3), 2.0)), I("s", sc), I("z", i8(torch.tensor([0, 3, -2])), "int8")],
         axis=1)
    v = Values("dequantize_linear")
    case("dequantize_linear", "DequantizeLinear", "infer",
         lambda x, s, z: [(x.double() - z.double()) * s],
         [I("x", u8(v.ints((2, 3), 0, 256)), "uint8"), I("s", torch.tensor(0.05)),
          I("z", u8(torch.tensor(128)), "uint8")])
    v = Values("dequantize_linear_axis")
    case("dequantize_linear_axis", "DequantizeLinear", "infer",
         lambda x, s, z: [(x.double() - z.double().reshape(3, 1)) * s.reshape(3, 1)],
         [I("x", i8(v.ints((3, 4), -128, 128)), "int8"), I("s", torch.tensor([0.1, 0.2, 0.3])),
          I("z", i8(torch.tensor([1, 0, -1])), "int8")])

    def dynq(x):   # ONNX's DynamicQuantizeLinear: uint8, the range widened to include 0
        lo, hi = min(x.min().item(), 0.0), max(x.max().item(), 0.0)
        s = (hi - lo) / 255
        z = sat(torch.tensor(-lo / s, dtype=torch.float64), torch.uint8)
        return [sat(x / s + z.double(), torch.uint8), torch.tensor(s, dtype=torch.float32), z]
    case("dynamic_quantize_linear", "DynamicQuantizeLinear", "infer", dynq,
         [I("x", Values("dynamic_quantize_linear").normal((2, 3), 2.0))], n_out=3)
    v = Values("matmul_integer")
    case("matmul_integer", "MatMulInteger", "infer",
         lambda a, b, za, zb: [((a.double() - za.double()) @ (b.double() - zb.double()))
                               .to(torch.int32)],
         [I("a", u8(v.ints((2, 3), 0, 256)), "uint8"), I("b", i8(v.ints((3, 4), -128, 128)), "int8"),
          I("za", u8(torch.tensor(100)), "uint8"), I("zb", i8(torch.tensor(3)), "int8")])
    v = Values("conv_integer")
    case("conv_integer", "ConvInteger", "infer",
         lambda x, w, zx: [F.conv2d(x.double() - zx.double(), w.double(), padding=1)
                           .to(torch.int32)],
         [I("x", u8(v.ints((1, 2, 4, 4), 0, 256)), "uint8"),
          I("w", i8(v.ints((3, 2, 3, 3), -128, 128)), "int8"), I("zx", u8(torch.tensor(128)), "uint8")],
         kernel=[3, 3], pad=[1, 1, 1, 1])
    v = Values("qlinear_matmul")
    case("qlinear_matmul", "QLinearMatMul", "infer",
         lambda a, sa, za, b, sb, zb, sy, zy:
         [sat(((a.double() - za.double()) @ (b.double() - zb.double())) * (sa * sb / sy)
              + zy.double(), torch.uint8)],
         [I("a", u8(v.ints((2, 3), 0, 256)), "uint8"), I("sa", torch.tensor(0.02)),
          I("za", u8(torch.tensor(128)), "uint8"), I("b", i8(v.ints((3, 4), -128, 128)), "int8"),
          I("sb", torch.tensor(0.01)), I("zb", i8(torch.tensor(0)), "int8"),
          I("sy", torch.tensor(0.3)), I("zy", u8(torch.tensor(120)), "uint8")])
    v = Values("qlinear_conv")
    case("qlinear_conv", "QLinearConv", "infer",
         lambda x, sx, zx, w, sw, zw, sy, zy, b:
         [sat((F.conv2d(x.double() - zx.double(), w.double() - zw.double().reshape(3, 1, 1, 1))
               + b.double().reshape(1, 3, 1, 1)) * (sx * sw.reshape(1, 3, 1, 1) / sy)
              + zy.double(), torch.uint8)],
         [I("x", u8(v.ints((1, 2, 4, 4), 0, 256)), "uint8"), I("sx", torch.tensor(0.02)),
          I("zx", u8(torch.tensor(128)), "uint8"), I("w", i8(v.ints((3, 2, 3, 3), -128, 128)), "int8"),
          I("sw", torch.tensor([0.01, 0.02, 0.005])), I("zw", i8(torch.tensor([0, 0, 0])), "int8"),
          I("sy", torch.tensor(0.5)), I("zy", u8(torch.tensor(128)), "uint8"),
          I("b", v.ints((3,), -500, 500).to(torch.int32), "int32")],
         kernel=[3, 3])
    v = Values("qgemm")
    case("qgemm", "QGemm", "infer",
         lambda a, sa, za, b, sb, zb, c, sy, zy:
         [sat(((a.double() - za.double()) @ (b.double() - zb.double()).t() + c.double())
              * (sa * sb / sy) + zy.double(), torch.uint8)],
         [I("a", u8(v.ints((2, 3), 0, 256)), "uint8"), I("sa", torch.tensor(0.02)),
          I("za", u8(torch.tensor(128)), "uint8"), I("b", i8(v.ints((4, 3), -128, 128)), "int8"),
          I("sb", torch.tensor(0.01)), I("zb", i8(torch.tensor(0)), "int8"),
          I("c", v.ints((4,), -500, 500).to(torch.int32), "int32"), I("sy", torch.tensor(0.2)),
          I("zy", u8(torch.tensor(128)), "uint8")],
         flags=["TRANS_B"])
    v = Values("matmul_integer_to_float")
    case("matmul_integer_to_float", "MatMulIntegerToFloat", "infer",
         lambda a, b, sa, sb, za, zb, bias:
         [((a.double() - za.double()) @ b.double()) * (sa * sb) + bias],
         [I("a", u8(v.ints((2, 3), 0, 256)), "uint8"), I("b", i8(v.ints((3, 4), -128, 128)), "int8"),
          I("sa", torch.tensor(0.02)), I("sb", torch.tensor([0.01, 0.02, 0.03, 0.04])),
          I("za", u8(torch.tensor(128)), "uint8"), None, I("bias", v.normal((4,)))])

    def dynq_mm(a, b, sb, zb):   # A quantized as DynamicQuantizeLinear, then MatMulIntegerToFloat
        q, sa, za = dynq(a)
        return [((q.double() - za.double()) @ (b.double() - zb.double())) * (sa.double() * sb)]
    v = Values("dynamic_quantize_matmul")
    case("dynamic_quantize_matmul", "DynamicQuantizeMatMul", "infer", dynq_mm,
         [I("a", v.normal((2, 3))), I("b", i8(v.ints((3, 4), -128, 128)), "int8"),
          I("sb", torch.tensor(0.01)), I("zb", i8(torch.tensor(2)), "int8")])

    # DynamicQuantizeLSTM (ONNX Runtime): W (dirs, I, 4H) and R (dirs, H, 4H) int8 with their
    # scales, gates in ONNX's i, o, f, c order, B (dirs, 8H). ONNX Runtime also quantizes X and
    # h to uint8 at every step; the reference uses them unquantized, hence the tolerance: a
    # step of X's and h's scale (about 1/64 here) times the weights it meets.
    v = Values("dynamic_quantize_lstm")
    S, Bn, In_, H = 3, 2, 3, 2
    x = v.normal((S, Bn, In_))
    W = i8(v.ints((1, In_, 4 * H), -128, 128))
    R = i8(v.ints((1, H, 4 * H), -128, 128))
    bias = v.normal((1, 8 * H), 0.1)

    def lstm(x, W, R, b, _seq, _h0, _c0, _p, sw, zw, sr, zr):
        wd = (W.double() - zw.double()) * sw
        rd = (R.double() - zr.double()) * sr
        h = torch.zeros(Bn, H, dtype=torch.float64)
        c = torch.zeros(Bn, H, dtype=torch.float64)
        ys = []
        for t in range(S):
            g = x[t] @ wd[0] + h @ rd[0] + b[0, :4 * H] + b[0, 4 * H:]
            i, o, f, cc = g.split(H, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(cc)
            h = torch.sigmoid(o) * torch.tanh(c)
            ys.append(h)
        return [torch.stack(ys).unsqueeze(1)]
    case("dynamic_quantize_lstm", "DynamicQuantizeLSTM", "infer", lstm,
         [I("x", x), I("w", W, "int8"), I("r", R, "int8"), I("b", bias), None, None, None, None,
          I("sw", torch.tensor([0.004])), I("zw", i8(torch.tensor([0])), "int8"),
          I("sr", torch.tensor([0.004])), I("zr", i8(torch.tensor([0])), "int8")],
         ints=[H, 0, 0, 0, 4], tol=(0.05, 0.05))   # rnn.c's ints: FM_RNN_W_TRANSPOSED = 4


# -- msft.c: ONNX Runtime's fused float ops (com.microsoft), inference only --

def ln(x, eps=1e-5):
    m = x.mean(-1, keepdim=True)
    var = ((x - m) ** 2).mean(-1, keepdim=True)
    return (x - m) / torch.sqrt(var + eps)


def rms(x, eps=1e-5):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def sdpa(q, k, v, causal=False):   # (B, N, S, D) each; scale 1/sqrt(D)
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        sq, sk = s.shape[-2], s.shape[-1]
        mask = torch.ones(sq, sk, dtype=torch.bool).tril(sk - sq)
        s = s.masked_fill(~mask, float("-inf"))
    return torch.softmax(s, -1) @ v


def heads(t, n):   # (B, S, n*d) -> (B, n, S, d)
    b, s, e = t.shape
    return t.reshape(b, s, n, e // n).transpose(1, 2)


def merge(t):      # (B, n, S, d) -> (B, S, n*d)
    b, n, s, d = t.shape
    return t.transpose(1, 2).reshape(b, s, n * d)


def add_msft_cases():
    X = (2, 3, 4)
    v = Values("fused_matmul")
    case("fused_matmul", "FusedMatMul", "infer", lambda a, b: [0.5 * (a @ b.t())],
         [P("a", v.normal(X)), P("b", v.normal((5, 4)))], flags=["TRANS_B"], alpha=0.5)
    v = Values("fast_gelu")
    case("fast_gelu", "FastGelu", "infer",
         lambda x, b: [F.gelu(x + b, approximate="tanh")], [P("x", v.normal(X)), P("b", v.normal((4,)))])
    v = Values("bias_gelu")
    case("bias_gelu", "BiasGelu", "infer", lambda x, b: [F.gelu(x + b)],
         [P("x", v.normal(X)), P("b", v.normal((4,)))])
    case("quick_gelu", "QuickGelu", "infer", lambda x: [x * torch.sigmoid(1.702 * x)],
         [P("x", Values("quick_gelu").normal(X))], alpha=1.702)
    v = Values("bias_add")
    case("bias_add", "BiasAdd", "infer", lambda x, b, s: [x + b + s],
         [P("x", v.normal(X)), P("b", v.normal((4,))), P("s", v.normal(X))])
    v = Values("skip_layernorm")
    case("skip_layernorm", "SkipLayerNorm", "infer",
         lambda x, s, g, b, bias: [ln(x + s + bias) * g + b],
         [P("x", v.normal(X)), P("s", v.normal(X)), P("g", v.normal((4,))), P("b", v.normal((4,))),
          P("bias", v.normal((4,)))])
    v = Values("skip_simplified_layernorm")
    case("skip_simplified_layernorm", "SkipSimplifiedLayerNorm", "infer",
         lambda x, s, g: [rms(x + s) * g],
         [P("x", v.normal(X)), P("s", v.normal(X)), P("g", v.normal((4,)))])
    v = Values("simplified_layernorm")
    case("simplified_layernorm", "SimplifiedLayerNorm", "infer", lambda x, g: [rms(x) * g],
         [P("x", v.normal(X)), P("g", v.normal((4,)))], axis=-1)
    v = Values("embed_layernorm")
    ids, seg = v.ints((2, 3), 0, 10).to(torch.int32), v.ints((2, 3), 0, 2).to(torch.int32)
    case("embed_layernorm", "EmbedLayerNorm", "infer",
         lambda i, sg, w, p, se, g, b:
         [ln(w[i.long()] + p[:3].unsqueeze(0) + se[sg.long()]) * g + b],
         [I("ids", ids, "int32"), I("seg", seg, "int32"), P("word", v.normal((10, 4))),
          P("pos", v.normal((6, 4))), P("segment", v.normal((2, 4))), P("g", v.normal((4,))),
          P("b", v.normal((4,)))])
    v = Values("fused_attention")

    def attn(x, w, b):
        q, k, vv = (x @ w + b).split(4, dim=-1)
        return [merge(sdpa(heads(q, 2), heads(k, 2), heads(vv, 2)))]
    case("fused_attention", "FusedAttention", "infer", attn,
         [P("x", v.normal(X)), P("w", v.normal((4, 12), 0.5)), P("b", v.normal((12,)))],
         groups=2)
    v = Values("multihead_attention")
    case("multihead_attention", "MultiHeadAttention", "infer",
         lambda q, k, vv: [merge(sdpa(heads(q, 2), heads(k, 2), heads(vv, 2)))],
         [P("q", v.normal(X)), P("k", v.normal((2, 5, 4))), P("v", v.normal((2, 5, 6)))],
         groups=2)
    v = Values("rotary_embedding")

    def rot(x, pos, cos, sin):   # non-interleaved (rotate_half), the whole head rotated
        c, s = cos[pos], sin[pos]
        x1, x2 = x[..., :2], x[..., 2:]
        return [torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1)]
    ang = torch.arange(6, dtype=torch.float64).reshape(6, 1) * torch.tensor([1.0, 0.1])
    case("rotary_embedding", "RotaryEmbedding", "infer", rot,
         [P("x", v.normal(X)), I("pos", v.ints((2, 3), 0, 6)), I("cos", torch.cos(ang).float()),
          I("sin", torch.sin(ang).float())])
    v = Values("group_query_attention")

    # 4 query heads share 2 key/value heads, causal; head size 8 (ONNX Runtime's CPU kernel
    # takes multiples of 8); seqlens_k is the total length - 1 per sequence (its convention)
    def gqa(q, k, vv, _pk, _pv, seqlens, total):
        kh = heads(k, 2).repeat_interleave(2, dim=1)
        vh = heads(vv, 2).repeat_interleave(2, dim=1)
        return [merge(sdpa(heads(q, 4), kh, vh, causal=True))]
    case("group_query_attention", "GroupQueryAttention", "infer", gqa,
         [P("q", v.normal((2, 3, 32))), P("k", v.normal((2, 3, 16))), P("v", v.normal((2, 3, 16))),
          None, None, I("seqlens", torch.tensor([2, 2], dtype=torch.int32), "int32"),
          I("total", torch.tensor(3, dtype=torch.int32), "int32")],
         groups=4, ints=[2, 0])


# -- index.c: GatherElements, GatherND, ScatterElements, ScatterND (reduction in ints[0]:
# 0 none, 1 add, 2 mul, 3 max, 4 min); indices are distinct where a reduction of none would
# make the result depend on the order of writes --

def add_index_cases():
    v = Values("gather_elements")
    case("gather_elements", "GatherElements", "train", lambda x, i: [torch.gather(x, 1, i)],
         [P("x", v.normal((3, 4))), I("indices", v.ints((3, 5), -4, 4) % 4)], axis=1)

    def gather_nd(b):
        def f(x, idx):
            k = idx.shape[-1]
            outs = []
            for pos in torch.cartesian_prod(*[torch.arange(d) for d in idx.shape[:-1]]).reshape(
                    -1, idx.dim() - 1).tolist():
                t = x
                for d in range(b):
                    t = t[pos[d]]
                for j in range(k):
                    t = t[idx[tuple(pos)][j]]
                outs.append(t)
            shape = list(idx.shape[:-1]) + list(x.shape[b + k:])
            return [torch.stack(outs).reshape(shape)]
        return f
    v = Values("gather_nd")
    case("gather_nd", "GatherND", "train", gather_nd(0),
         [P("x", v.normal((3, 4, 5))), I("indices", torch.tensor([[[0, 1], [2, 3]], [[1, 0], [0, 1]]]))],
         ints=[0])
    v = Values("gather_nd_batch")
    case("gather_nd_batch", "GatherND", "train", gather_nd(1),
         [P("x", v.normal((2, 3, 4))), I("indices", torch.tensor([[[2], [0]], [[1], [1]]]))],
         ints=[1])

    red = {0: None, 1: "sum", 2: "prod", 3: "amax", 4: "amin"}

    def scatter_el(r):
        def f(x, i, u):
            if r == 0:
                return [x.scatter(0, i, u)]
            return [x.scatter_reduce(0, i, u, red[r], include_self=True)]
        return f
    for r, name in ((0, "none"), (1, "add"), (2, "mul"), (3, "max"), (4, "min")):
        nm = "scatter_elements_" + name
        v = Values(nm)
        x = v.distinct((4, 3)) if r >= 3 else v.uniform((4, 3), 0.5, 1.5) * (1 if r else 1)
        u = v.distinct((2, 3), 0.07) if r >= 3 else v.uniform((2, 3), 0.5, 1.5)
        idx = torch.tensor([[3, 0, 2], [1, 2, 0]])   # distinct per column
        case(nm, "ScatterElements", "train", scatter_el(r),
             [P("data", x), I("indices", idx), P("updates", u)], ints=[r])

    def scatter_nd(r):
        def f(x, i, u):
            y = x.clone()
            for j in range(i.shape[0]):
                p = i[j, 0]
                if r == 0:
                    y = torch.cat([y[:p], u[j:j + 1], y[p + 1:]])
                else:
                    y = torch.cat([y[:p], y[p:p + 1] + u[j:j + 1], y[p + 1:]])
            return [y]
        return f
    for r, name in ((0, "none"), (1, "add")):
        nm = "scatter_nd_" + name
        v = Values(nm)
        case(nm, "ScatterND", "train", scatter_nd(r),
             [P("data", v.normal((4, 3))), I("indices", torch.tensor([[2], [0]])),
              P("updates", v.normal((2, 3)))], ints=[r])


# -- select.c: ArgMax/ArgMin (axis, KEEPDIMS; ints = {select_last_index}), TopK (ints = {k,
# largest, sorted}; values and indices), OneHot (indices, values; ints = {depth}), Compress
# (ints = {kept, flatten}: the rule carries only the count, so the case keeps the first rows),
# NonZero (ints = {count}) --

def add_select_cases():
    v = Values("argmax_keepdims")
    case("argmax_keepdims", "ArgMax", "infer",
         lambda x: [torch.argmax(x, 1, keepdim=True)], [I("x", v.distinct((3, 4, 2)))], axis=1,
         flags=["KEEPDIMS"], ints=[0])
    v = Values("argmin")
    case("argmin", "ArgMin", "infer", lambda x: [torch.argmin(x, -1)],
         [I("x", v.distinct((3, 5)))], axis=-1, ints=[0])

    def topk(k, largest):
        def f(x):
            vals, idx = torch.topk(x, k, dim=-1, largest=largest, sorted=True)
            return [vals, idx]
        return f
    v = Values("topk")
    case("topk", "TopK", "train", topk(3, True), [P("x", v.distinct((3, 5)))], n_out=2,
         axis=-1, ints=[3, 1, 1])
    v = Values("topk_smallest")
    case("topk_smallest", "TopK", "train", topk(2, False), [P("x", v.distinct((2, 6)))],
         n_out=2, axis=-1, ints=[2, 0, 1])

    def onehot(depth):
        def f(i, vals):
            oh = F.one_hot(i, depth).double()
            return [vals[0] + (vals[1] - vals[0]) * oh]
        return f
    v = Values("onehot")
    case("onehot", "OneHot", "train", onehot(3), [I("indices", v.ints((4,), 0, 3)),
                                                  P("values", torch.tensor([-0.5, 2.0]))],
         axis=-1, ints=[3])
    v = Values("compress")
    case("compress", "Compress", "train", lambda x: [x[:2]], [P("x", v.normal((4, 3)))],
         ints=[2, 0])
    x = torch.tensor([[0.0, 1.5, 0.0], [-2.0, 0.5, 3.0]])
    case("nonzero", "NonZero", "infer", lambda t: [torch.nonzero(t).T.contiguous()], [I("x", x)],
         ints=[4])


# -- layout.c: DepthToSpace (ints = {blocksize, mode 0 DCR 1 CRD}), SpaceToDepth ({blocksize}),
# ReverseSequence ({batch_axis, time_axis}), MaxUnpool (ints = the output dims), EyeLike
# ({dtype, k}); the permutations as the ONNX spec writes them --

def add_layout_cases():
    def d2s(b, crd):
        def f(x):
            n, c, h, w = x.shape
            if crd:   # PyTorch's pixel_shuffle
                y = x.reshape(n, c // (b * b), b, b, h, w).permute(0, 1, 4, 2, 5, 3)
            else:
                y = x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
            return [y.reshape(n, c // (b * b), h * b, w * b)]
        return f
    case("depth_to_space_dcr", "DepthToSpace", "train", d2s(2, False),
         [P("x", Values("depth_to_space_dcr").normal((2, 8, 2, 3)))], ints=[2, 0])
    case("depth_to_space_crd", "DepthToSpace", "train", d2s(2, True),
         [P("x", Values("depth_to_space_crd").normal((1, 8, 3, 2)))], ints=[2, 1])

    def s2d(b):
        def f(x):
            n, c, h, w = x.shape
            y = x.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4)
            return [y.reshape(n, c * b * b, h // b, w // b)]
        return f
    case("space_to_depth", "SpaceToDepth", "train", s2d(2),
         [P("x", Values("space_to_depth").normal((2, 2, 4, 6)))], ints=[2])

    def rev(batch_axis, time_axis):
        def f(x, lens):
            y = x.clone()
            for b in range(x.shape[batch_axis]):
                n = int(lens[b])
                idx = torch.arange(n - 1, -1, -1)
                if time_axis == 0:
                    y = torch.cat([y[:, :b], torch.cat([x[:n, b:b + 1].index_select(0, idx),
                                                        x[n:, b:b + 1]]), y[:, b + 1:]], 1)
                else:
                    y = torch.cat([y[:b], torch.cat([x[b:b + 1, :n].index_select(1, idx),
                                                     x[b:b + 1, n:]], 1), y[b + 1:]])
            return [y]
        return f
    case("reverse_sequence_time", "ReverseSequence", "train", rev(1, 0),
         [P("x", Values("reverse_sequence_time").normal((4, 3, 2))),
          I("sequence_lens", torch.tensor([4, 1, 3]))], ints=[1, 0])
    case("reverse_sequence_batch", "ReverseSequence", "train", rev(0, 1),
         [P("x", Values("reverse_sequence_batch").normal((3, 5))),
          I("sequence_lens", torch.tensor([2, 5, 1]))], ints=[0, 1])

    # MaxUnpool: each value written where its index (flat within its (N, C) plane) points
    v = Values("max_unpool")
    idx = torch.stack([torch.randperm(16, generator=v.g)[:4] for _ in range(2)]).reshape(1, 2, 2, 2)
    case("max_unpool", "MaxUnpool", "train",
         lambda x, i: [F.max_unpool2d(x, i, 2, 2, output_size=(4, 4))],
         [P("x", v.normal((1, 2, 2, 2))), I("indices", idx)], ints=[1, 2, 4, 4])
    case("eyelike", "EyeLike", "infer",
         lambda x: [torch.eye(3, 4, dtype=torch.float64).roll(1, 1) * (torch.arange(4) > 0)],
         [I("x", Values("eyelike").normal((3, 4)))], ints=[DT["fp32"], 1])


# -- compare.c --

def add_compare_cases():
    cmp = {"Equal": torch.eq, "Less": torch.lt, "LessOrEqual": torch.le, "Greater": torch.gt,
           "GreaterOrEqual": torch.ge}
    for op, fn in cmp.items():
        name = "compare_" + op.lower()
        v = Values(name)
        # small integers as floats, the second broadcast: equal elements occur
        case(name, op, "infer", lambda a, b, fn=fn: [fn(a, b)],
             [I("a", v.roundish((2, 3, 4))), I("b", v.roundish((3, 4)))])
    v = Values("compare_equal_int")
    case("compare_equal_int", "Equal", "infer", lambda a, b: [torch.eq(a, b)],
         [I("a", v.ints((2, 5), 0, 3)), I("b", v.ints((5,), 0, 3))])
    logic = {"And": torch.logical_and, "Or": torch.logical_or, "Xor": torch.logical_xor}
    for op, fn in logic.items():
        name = "logic_" + op.lower()
        v = Values(name)
        case(name, op, "infer", lambda a, b, fn=fn: [fn(a, b)],
             [I("a", v.bools((2, 3, 4))), I("b", v.bools((3, 4)))])
    v = Values("logic_not")
    case("logic_not", "Not", "infer", lambda a: [torch.logical_not(a)], [I("a", v.bools((3, 4)))])

    # Where: the condition takes no gradient, X and Y do (Y broadcast)
    v = Values("where")
    case("where", "Where", "train", lambda c, x, y: [torch.where(c, x, y)],
         [I("cond", v.bools((2, 3, 4))), P("x", v.normal((2, 3, 4))), P("y", v.normal((3, 4)))])
    # Max / Min of any number of inputs, broadcast; distinct values (no ties)
    for op, fn in (("Max", torch.maximum), ("Min", torch.minimum)):
        name = op.lower() + "_three"
        v = Values(name)
        vals = v.distinct((3, 2, 3, 4))
        case(name, op, "train", lambda a, b, c, fn=fn: [fn(fn(a, b), c)],
             [P("a", vals[0]), P("b", vals[1, 0]), P("c", vals[2])])
        name = op.lower() + "_two"
        v = Values(name)
        vals = v.distinct((2, 3, 4))
        case(name, op, "train", lambda a, b, fn=fn: [fn(a, b)], [P("a", vals[0]), P("b", vals[1])])
    # Trilu: ints = {k, upper}
    v = Values("trilu_upper")
    case("trilu_upper", "Trilu", "train", lambda t: [torch.triu(t, 1)],
         [P("x", v.normal((2, 4, 5)))], ints=[1, 1])
    v = Values("trilu_lower")
    case("trilu_lower", "Trilu", "train", lambda t: [torch.tril(t, -1)],
         [P("x", v.normal((2, 4, 5)))], ints=[-1, 0])


# -- reduce.c: axes in ints (none = all), FM_ATTR_KEEPDIMS --

def add_reduce_cases():
    def red(name, op, fn, x, axes, keep, mode="train"):
        a = dict(ints=list(axes))
        if keep:
            a["flags"] = ["KEEPDIMS"]
        dims = tuple(axes) if axes else tuple(range(len(x.shape)))
        ins = [P("x", x)] if mode == "train" else [I("x", x)]
        case(name, op, mode, lambda t: [fn(t, dims, keep)], ins, **a)

    def rsum(t, d, k):
        return t.sum(d, keepdim=k)

    def rprod(t, d, k):
        for ax in sorted(d, reverse=True):
            t = t.prod(ax, keepdim=k)
        return t
    X = (2, 3, 4)
    red("reduce_sum_keepdims", "ReduceSum", rsum, Values("rs1").normal(X), [2], True)
    red("reduce_sum", "ReduceSum", rsum, Values("rs2").normal(X), [1], False)
    red("reduce_sum_all", "ReduceSum", rsum, Values("rs3").normal(X), [], False, mode="infer")
    red("reduce_mean", "ReduceMean", lambda t, d, k: t.mean(d, keepdim=k),
        Values("rm1").normal(X), [-1], False)
    red("reduce_mean_two_axes", "ReduceMean", lambda t, d, k: t.mean(d, keepdim=k),
        Values("rm2").normal((2, 3, 4, 2)), [1, 3], True)
    red("reduce_max", "ReduceMax", lambda t, d, k: t.amax(d, keepdim=k),
        Values("rmax").distinct(X), [1], False)
    red("reduce_min", "ReduceMin", lambda t, d, k: t.amin(d, keepdim=k),
        Values("rmin").distinct(X), [2], True)
    red("reduce_prod", "ReduceProd", rprod, Values("rp").nonzero(X, 0.5, 1.5), [2], False)
    red("reduce_l2", "ReduceL2", lambda t, d, k: t.pow(2).sum(d, keepdim=k).sqrt(),
        Values("rl2").normal(X), [2], False)
    red("reduce_sum_square", "ReduceSumSquare", lambda t, d, k: t.pow(2).sum(d, keepdim=k),
        Values("rss").normal(X), [1], True)
    # CumSum: inclusive, forward (ONNX's exclusive and reverse are not in the rule)
    case("cumsum_axis1", "CumSum", "train", lambda t: [torch.cumsum(t, 1)],
         [P("x", Values("cumsum_axis1").normal((2, 4, 3)))], axis=1)
    case("cumsum_last", "CumSum", "train", lambda t: [torch.cumsum(t, -1)],
         [P("x", Values("cumsum_last").normal((3, 5)))], axis=-1)


# -- tensor.c: integer operands in ints --

def add_tensor_cases():
    def gather(axis):
        def f(x, idx):
            out = x.index_select(axis, idx.flatten())
            shape = list(x.shape[:axis]) + list(idx.shape) + list(x.shape[axis + 1:])
            return [out.reshape(shape)]
        return f
    v = Values("gather_axis0")
    case("gather_axis0", "Gather", "train", gather(0),
         [P("data", v.normal((4, 5))), I("indices", v.ints((2, 3), 0, 4))])
    v = Values("gather_axis1")
    case("gather_axis1", "Gather", "train", gather(1),
         [P("data", v.normal((2, 5, 3))), I("indices", v.ints((4,), 0, 5))], axis=1)

    def slice_(ints):
        def f(x):
            for d in range(x.dim()):
                s, e, st = ints[3 * d:3 * d + 3]
                x = x.index_select(d, torch.tensor(list(range(s, e, st)), dtype=torch.int64))
            return [x]
        return f
    ints = [0, 2, 1, 1, 4, 1, 0, 6, 2]
    case("slice_steps", "Slice", "train", slice_(ints),
         [P("x", Values("slice_steps").normal((2, 5, 6)))], ints=ints)
    ints = [0, 2, 1, 4, -1, -2, 3, 0, -1]   # stepping back, down to index 0 (end -1)
    case("slice_reverse", "Slice", "train", slice_(ints),
         [P("x", Values("slice_reverse").normal((2, 5, 4)))], ints=ints)

    case("squeeze_axes", "Squeeze", "train", lambda t: [t.reshape(2, 3)],
         [P("x", Values("squeeze_axes").normal((2, 1, 3, 1)))], ints=[1, 3])
    case("squeeze_all_ones", "Squeeze", "train", lambda t: [t.reshape(2, 4)],
         [P("x", Values("squeeze_all_ones").normal((2, 1, 4)))])
    case("unsqueeze", "Unsqueeze", "train", lambda t: [t.reshape(2, 1, 3)],
         [P("x", Values("unsqueeze").normal((2, 3)))], ints=[1])
    case("unsqueeze_two", "Unsqueeze", "train", lambda t: [t.reshape(1, 2, 3, 1)],
         [P("x", Values("unsqueeze_two").normal((2, 3)))], ints=[0, 3])
    # Expand: numpy broadcast of X against the target (a 1 in the target keeps X's dim)
    case("expand", "Expand", "train", lambda t: [t.expand(2, 3, 4)],
         [P("x", Values("expand").normal((3, 1)))], ints=[2, 1, 4])
    case("tile", "Tile", "train", lambda t: [t.repeat(2, 3)],
         [P("x", Values("tile").normal((2, 3)))], ints=[2, 3])
    # Pad: begins for every dim, then ends; negative pads crop; constant 0 (see the header)
    ints = [0, 1, 2, 0, 2, -1]
    case("pad", "Pad", "train", lambda t: [F.pad(t, (2, -1, 1, 2, 0, 0))],
         [P("x", Values("pad").normal((2, 3, 4)))], ints=ints)
    # Resize: {mode, output dims}; only H and W change (see the header for the conventions)
    case("resize_nearest", "Resize", "train",
         lambda t: [F.interpolate(t, size=(6, 6), mode="nearest")],
         [P("x", Values("resize_nearest").normal((1, 2, 3, 3)))], ints=[0, 1, 2, 6, 6])
    case("resize_linear", "Resize", "train",
         lambda t: [F.interpolate(t, size=(5, 7), mode="bilinear", align_corners=False)],
         [P("x", Values("resize_linear").normal((1, 2, 3, 4)))], ints=[1, 1, 2, 5, 7])
    case("resize_cubic", "Resize", "train",
         lambda t: [F.interpolate(t, size=(6, 8), mode="bicubic", align_corners=False)],
         [P("x", Values("resize_cubic").normal((1, 2, 3, 4)))], ints=[2, 1, 2, 6, 8])
    # no inputs: forward only
    case("constant_of_shape", "ConstantOfShape", "infer",
         lambda: [torch.zeros(2, 3, dtype=torch.float64)], [], ints=[DT["fp32"], 2, 3])
    case("range_int64", "Range", "infer", lambda: [torch.arange(5, dtype=torch.int64)], [],
         ints=[5, DT["int64"]])
    case("range_fp32", "Range", "infer", lambda: [torch.arange(4, dtype=torch.float64)], [],
         ints=[4, DT["fp32"]])
    # Cast: to float keeps the gradient; to int (truncation) and from int run forward only
    case("cast_fp32", "Cast", "train", lambda t: [t],
         [P("x", Values("cast_fp32").normal((2, 3)))], ints=[DT["fp32"]])
    x = Values("cast_to_int64").uniform((2, 5), 0.1, 0.4) + torch.arange(-5, 5).reshape(2, 5)
    case("cast_to_int64", "Cast", "infer", lambda t: [t.to(torch.int64)], [I("x", x)],
         ints=[DT["int64"]])
    case("cast_from_int64", "Cast", "infer", lambda t: [t.to(torch.float64)],
         [I("x", Values("cast_from_int64").ints((2, 3), -4, 9))], ints=[DT["fp32"]])


# -- einsum.c: ints = {n_operands, rank_0, labels_0..., [rank_1, labels_1...], out_rank,
#    out_labels...}, labels a-z = 0..25, A-Z = 26..51 (the ONNX importer's encoding) --

def einsum_ints(eq):
    lhs, rhs = eq.split("->")
    ops = lhs.split(",")

    def ids(s):
        return [ord(c) - ord("a") if c.islower() else 26 + ord(c) - ord("A") for c in s]
    ints = [len(ops)]
    for o in ops + [rhs]:
        ints += [len(o)] + ids(o)
    return ints


def add_einsum_cases():
    def ein(name, eq, shapes):
        v = Values(name)
        ins = [P("x%d" % i, v.normal(s)) for i, s in enumerate(shapes)]
        case(name, "Einsum", "train", lambda *t: [torch.einsum(eq, *t)], ins,
             ints=einsum_ints(eq))
    ein("einsum_batched_matmul", "bij,bjk->bik", [(2, 3, 4), (2, 4, 5)])
    ein("einsum_attention_scores", "bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)])
    ein("einsum_hadamard", "ij,ij->ij", [(3, 4), (3, 4)])
    ein("einsum_outer", "i,j->ij", [(3,), (4,)])
    ein("einsum_transpose", "ij->ji", [(3, 4)])
    ein("einsum_sum", "bij->bi", [(2, 3, 4)])


# ---- running the cases ----

def fmt(values, integer=False):
    if integer:
        return " ".join("%d" % int(v) for v in values)
    return " ".join("%.9g" % v for v in values)


def fmt_tensor(t):
    flat = t.detach().flatten()
    if flat.dtype in (torch.bool, torch.int64, torch.int32, torch.int8, torch.uint8):
        return "%d %s" % (flat.numel(), fmt(flat.tolist(), integer=True))
    return "%d %s" % (flat.numel(), fmt(flat.to(torch.float32).tolist()))


def attr_lines(attrs):
    lines = []
    for key in DEFAULTS:
        if key not in attrs:
            continue
        val = attrs[key]
        if val == DEFAULTS[key]:
            continue
        if key == "flags":
            lines.append("attr flags %s" % "|".join(val))
        elif isinstance(val, list):
            lines.append("attr %s %s" % (key, " ".join(str(int(x)) for x in val)))
        elif isinstance(val, float):
            lines.append("attr %s %r" % (key, val))
        else:
            lines.append("attr %s %d" % (key, val))
    for key in attrs:
        if key not in DEFAULTS:
            raise SystemExit("unknown attr %s" % key)
    for f in attrs.get("flags", []):
        if f not in FLAG_NAMES:
            raise SystemExit("unknown flag %s" % f)
    return lines


def run_case(c):
    train = c.mode == "train"
    lines = ["case %s %s %s %d" % (c.name, c.op, c.mode, c.n_out)]
    lines += attr_lines(c.attrs)
    args, tensors, uniq = [], {}, []   # an input named twice is one tensor in two slots
    for inp in c.inputs:
        if inp is None:
            lines.append("in -")
            args.append(None)
            continue
        dims = "x".join(str(d) for d in inp.shape) if inp.shape else "scalar"
        lines.append("in %s %s %s %s" % (inp.name, inp.role, inp.dtype, dims))
        if inp.name not in tensors:
            t = inp.value
            if t.dtype == torch.float32:
                t = t.double().clone()   # references in float64 from the float32 values
                t.requires_grad_(train and inp.role == "PARAM")
            tensors[inp.name] = t
            uniq.append(inp)
        args.append(tensors[inp.name])
    for inp in uniq:
        lines.append("value %s %s" % (inp.name, fmt_tensor(inp.value)))
    outs = c.fn(*args)
    if len(outs) != c.n_out:
        raise SystemExit("%s: %d outputs, %d declared" % (c.name, len(outs), c.n_out))
    if train:
        if c.op in ("CrossEntropy", "MSELoss", "SoftmaxCrossEntropyLoss",
                    "NegativeLogLikelihoodLoss"):   # a loss op: its output is the loss
            loss = outs[0]
        else:
            y = outs[0]
            if y.dim() < 2 or y[0].numel() < 2:
                raise SystemExit("%s: output %s cannot feed the loss" % (c.name, list(y.shape)))
            flat = y.reshape(y.shape[0], -1)
            labels = Values(c.name + ".labels").ints((flat.shape[0],), 0, flat.shape[1])
            lines.append("labels %s" % fmt_tensor(labels))
            loss = F.cross_entropy(flat, labels)
        if loss.requires_grad:   # not after a random draw: no gradient flows back
            loss.backward()
    for k, y in enumerate(outs):
        lines.append("out %d %s" % (k, fmt_tensor(y)))
    if train:
        lines.append("loss %.9g" % loss.item())
        for inp in uniq:
            if inp.role == "PARAM":
                t = tensors[inp.name]
                g = t.grad if t.grad is not None else torch.zeros_like(t)
                lines.append("grad %s %s" % (inp.name, fmt_tensor(g)))
    for inp in uniq:
        if inp.role == "BUFFER":
            lines.append("state %s %s" % (inp.name, fmt_tensor(tensors[inp.name])))
    if c.tol:
        lines.append("tol %r %r" % c.tol)
    lines.append("end")
    return lines


# -- rnn.c: LSTM, GRU, RNN as ONNX defines them (W's gate order: LSTM i o f c, GRU z r h;
# B = [Wb, Rb]; P = [P_i, P_o, P_f]; Y [T, D, N, H], Y_h and Y_c [D, N, H] for layout 0);
# ints = {hidden_size, direction (0 forward, 1 reverse, 2 bidirectional), layout,
# linear_before_reset, flags}; default activations. onnx_rnn reproduces the outputs of ONNX's
# own node tests (test_lstm_with_peepholes, test_gru_seq_length, test_rnn_seq_length ...) to
# 1e-7 --

def onnx_rnn(cell, direction=0, lbr=0):
    def f(x, w, r, b=None, seq=None, h0=None, c0=None, p=None):
        t_len, n, _ = x.shape
        d_n, hid = w.shape[0], r.shape[2]
        ys, hs, cs = [], [], []
        for d in range(d_n):
            rev = direction == 1 or d == 1
            wb = b[d, :b.shape[1] // 2] if b is not None else 0
            rb = b[d, b.shape[1] // 2:] if b is not None else 0
            h = h0[d] if h0 is not None else torch.zeros(n, hid, dtype=x.dtype)
            c = c0[d] if c0 is not None else torch.zeros(n, hid, dtype=x.dtype)
            y = [None] * t_len
            for t in (range(t_len - 1, -1, -1) if rev else range(t_len)):
                gx = x[t] @ w[d].T + wb
                if cell == "LSTM":
                    g = gx + h @ r[d].T + rb
                    gi, go, gf, gc = g.split(hid, 1)
                    if p is not None:
                        pi, po, pf = p[d].split(hid)
                        gi, gf = gi + pi * c, gf + pf * c
                    c = torch.sigmoid(gf) * c + torch.sigmoid(gi) * torch.tanh(gc)
                    if p is not None:
                        go = go + po * c
                    h = torch.sigmoid(go) * torch.tanh(c)
                elif cell == "GRU":
                    xz, xr, xh = gx.split(hid, 1)
                    rz, rr, rh = r[d].split(hid, 0)
                    rbz, rbr, rbh = (rb.split(hid) if b is not None else (0, 0, 0))
                    z = torch.sigmoid(xz + h @ rz.T + rbz)
                    rg = torch.sigmoid(xr + h @ rr.T + rbr)
                    if lbr:
                        hh = torch.tanh(xh + rg * (h @ rh.T + rbh))
                    else:
                        hh = torch.tanh(xh + (rg * h) @ rh.T + rbh)
                    h = (1 - z) * hh + z * h
                else:
                    h = torch.tanh(gx + h @ r[d].T + rb)
                y[t] = h
            ys.append(torch.stack(y))
            hs.append(h)
            cs.append(c)
        out = [torch.stack(ys, 1), torch.stack(hs)]
        return out + [torch.stack(cs)] if cell == "LSTM" else out
    return f


def add_rnn_cases():
    t_len, n, i, hid = 3, 2, 3, 4
    v = Values("lstm")
    case("lstm", "LSTM", "train", onnx_rnn("LSTM"),
         [P("x", v.normal((t_len, n, i))), P("w", v.normal((1, 4 * hid, i), 0.5)),
          P("r", v.normal((1, 4 * hid, hid), 0.5)), P("b", v.normal((1, 8 * hid), 0.3)),
          NONE, P("h0", v.normal((1, n, hid))), P("c0", v.normal((1, n, hid))),
          P("p", v.normal((1, 3 * hid), 0.3))], n_out=3, ints=[hid, 0, 0, 0, 0])
    v = Values("gru_bidirectional")
    case("gru_bidirectional", "GRU", "train", onnx_rnn("GRU", 2, 1),
         [P("x", v.normal((t_len, n, i))), P("w", v.normal((2, 3 * hid, i), 0.5)),
          P("r", v.normal((2, 3 * hid, hid), 0.5)), P("b", v.normal((2, 6 * hid), 0.3))],
         n_out=2, ints=[hid, 2, 0, 1, 0])
    v = Values("gru_reset_before")
    case("gru_reset_before", "GRU", "train", onnx_rnn("GRU", 0, 0),
         [P("x", v.normal((t_len, n, i))), P("w", v.normal((1, 3 * hid, i), 0.5)),
          P("r", v.normal((1, 3 * hid, hid), 0.5)), P("b", v.normal((1, 6 * hid), 0.3))],
         n_out=2, ints=[hid, 0, 0, 0, 0])
    v = Values("rnn_reverse")
    case("rnn_reverse", "RNN", "train", onnx_rnn("RNN", 1),
         [P("x", v.normal((t_len, n, i))), P("w", v.normal((1, hid, i), 0.5)),
          P("r", v.normal((1, hid, hid), 0.5))], n_out=2, ints=[hid, 1, 0, 0, 0])


# -- random.c: ints = {dtype, seed given, seed, then RandomUniform's and RandomNormal's shape or
#    Multinomial's sample_size}; uniform lo/hi, normal alpha (mean) / beta (scale). The draws are
#    random, so every case pins them: low == high, scale 0, probabilities 0 and 1, one class
#    with all the probability (the others' log-probabilities so low that exp gives 0). The
#    statistics of real draws are tests/test_cpu_random.c's. In training no gradient flows
#    through a draw: the parameters' gradients are zero. --

def add_random_cases():
    case("random_uniform", "RandomUniform", "infer",
         lambda: [torch.full((2, 3), 0.5, dtype=torch.float64)], [],
         ints=[DT["fp32"], 0, 0, 2, 3], lo=0.5, hi=0.5)
    case("random_normal", "RandomNormal", "infer",
         lambda: [torch.full((3, 2), -1.25, dtype=torch.float64)], [],
         ints=[DT["fp32"], 1, 7, 3, 2], alpha=-1.25, beta=0.0)
    case("random_uniform_like", "RandomUniformLike", "train",
         lambda t: [torch.full_like(t, 2.0).detach()],
         [P("x", Values("random_uniform_like").normal((2, 3)))], ints=[DT["fp32"], 0, 0],
         lo=2.0, hi=2.0)
    case("random_normal_like", "RandomNormalLike", "infer",
         lambda t: [torch.full_like(t, 0.75)],
         [I("x", Values("random_normal_like").normal((2, 4)))], ints=[DT["fp32"], 0, 0],
         alpha=0.75, beta=0.0)
    p = (Values("bernoulli").uniform((2, 4), 0, 1) > 0.5).float()
    case("bernoulli", "Bernoulli", "train", lambda t: [torch.bernoulli(t).detach()],
         [P("p", p)], ints=[DT["fp32"], 0, 0])
    logits = torch.full((2, 5), -200.0)
    logits[0, 3] = 0.5
    logits[1, 1] = -2.0
    case("multinomial", "Multinomial", "infer",
         lambda t: [torch.multinomial(torch.softmax(t, 1), 4, replacement=True)],
         [I("x", logits)], ints=[DT["int64"], 0, 0, 4])


# -- what PyTorch 2's exporter writes: Clip whose bounds are tensors (ReLU6 as Clip of CastLike'd
#    constants; a bound computed at run time is read by the backend every step). The ONNX
#    frontend leaves lo and hi infinite when the bounds are tensors: an absent one is no bound --

def add_export2_cases():
    v = Values("clip_tensor_bounds")
    case("clip_tensor_bounds", "Clip", "train", lambda t, lo, hi: [torch.clamp(t, lo, hi)],
         [P("x", v.away((2, 3, 4, 4), [-0.5, 0.75])), I("lo", torch.tensor([-0.5])),
          I("hi", torch.tensor([0.75]))], lo=-math.inf, hi=math.inf)
    v = Values("clip_tensor_max_only")
    case("clip_tensor_max_only", "Clip", "train", lambda t, lo, hi: [torch.clamp(t, max=hi)],
         [P("x", v.away((2, 3, 4), [6.0], 4.0)), NONE, I("hi", torch.tensor([6.0]))],
         lo=-math.inf, hi=math.inf)
    # Range with a start and a step (position ids past a prefix), ConstantOfShape of ones (a
    # mask): the values the ONNX frontend reads, written by the backends
    case("range_start_delta", "Range", "infer",
         lambda: [torch.arange(3, 13, 2, dtype=torch.int64)], [], ints=[5, DT["int64"]],
         lo=3.0, beta=2.0)
    case("range_fp32_down", "Range", "infer",
         lambda: [torch.arange(1.5, -0.5, -0.5, dtype=torch.float64)], [],
         ints=[4, DT["fp32"]], lo=1.5, beta=-0.5)
    case("constant_of_shape_ones", "ConstantOfShape", "infer",
         lambda: [torch.ones(2, 3, dtype=torch.float64)], [], ints=[DT["fp32"], 2, 3], lo=1.0)
    # stochastic depth as torchvision draws it: one scale per sample, (N, 1, 1, 1), over an
    # (N, C, H, W) block output; and ConvNeXt's layer scale, a (C, 1, 1) parameter
    v = Values("mul_per_sample")
    case("mul_per_sample", "Mul", "train", lambda a, b: [a * b],
         [P("a", v.normal((3, 20, 5, 6))), P("b", v.normal((3, 1, 1, 1)))])
    v = Values("mul_layer_scale")
    case("mul_layer_scale", "Mul", "train", lambda a, b: [a * b],
         [P("a", v.normal((2, 24, 7, 7))), P("b", v.normal((24, 1, 1)))])
    # token ids viewed as one row (GPT-2's input_ids.view(-1, S)): an integer Reshape
    case("reshape_int64", "Reshape", "infer", lambda t: [t.reshape(2, 6)],
         [I("ids", Values("reshape_int64").ints((3, 4), 0, 50))], ints=[2, 6])
    # T5's relative-position buckets: Where over int64 operands (no gradient), and the index
    # tuples Mixtral's export concatenates for GatherND: an int64 Concat
    v = Values("where_int64")
    case("where_int64", "Where", "infer", lambda c, x, y: [torch.where(c, x, y)],
         [I("cond", v.bools((2, 3, 4))), I("x", v.ints((2, 3, 4), -20, 20)),
          I("y", v.ints((3, 4), 0, 8))])
    v = Values("concat_int64")
    case("concat_int64", "Concat", "infer", lambda a, b: [torch.cat([a, b], 1)],
         [I("a", v.ints((2, 3, 2), 0, 9)), I("b", v.ints((2, 1, 2), 0, 9))], axis=1)
    # Mixtral's expert routing: TopK of the router's softmax over experts, here along a middle
    # axis so the run is strided; values take a gradient, indices none
    v = Values("topk_mid_axis")

    def topk_mid(x):
        vals, idx = torch.topk(x, 2, dim=1, largest=True, sorted=True)
        return [vals, idx]
    case("topk_mid_axis", "TopK", "train", topk_mid, [P("x", v.distinct((2, 4, 3)))], n_out=2,
         axis=1, ints=[2, 1, 1])


def main():
    torch.set_num_threads(1)
    for add in (add_conv_cases, add_matmul_cases, add_norm_cases, add_act_cases, add_pool_cases,
                add_eltwise_cases, add_shape_cases, add_misc_cases, add_unary_cases,
                add_compare_cases, add_reduce_cases, add_tensor_cases, add_einsum_cases,
                add_trig_cases, add_math_cases, add_rnn_cases,
                add_quant_cases, add_msft_cases, add_index_cases, add_select_cases,
                add_layout_cases, add_random_cases, add_export2_cases):
        add()
    names = set()
    out = ["# generated by tools/make_op_goldens.py with torch %s; do not edit" % torch.__version__]
    fmt_doc = "File format" + __doc__.split("File format")[1].split("Run:")[0].rstrip()
    out += ["# " + line if line else "#" for line in fmt_doc.splitlines()]
    for c in CASES:
        if c.name in names:
            raise SystemExit("duplicate case %s" % c.name)
        names.add(c.name)
        out += run_case(c)
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write("\n".join(out) + "\n")
    ops = sorted({c.op for c in CASES})
    print("wrote %s: %d cases of %d ops" % (os.path.relpath(OUT), len(CASES), len(ops)),
          file=sys.stderr)


if __name__ == "__main__":
    main()
