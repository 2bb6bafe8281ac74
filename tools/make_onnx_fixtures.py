#!/usr/bin/python3
"""Writes the small hand-made ONNX fixtures of tests/test_onnx.c into tests/data/onnx/.

Run with Debian's python3 (python3-onnx 1.12, python3-torch 1.13):

    /usr/bin/python3 tools/make_onnx_fixtures.py [--out tests/data/onnx]

Three kinds, every one small (kilobytes):
  * transformer blocks exported with torch at opsets 13 and 17: GPT-2 style (MatMul attention,
    causal mask from a buffer slice + Where, or Trilu at opset 17, tanh GELU, tied embedding),
    BERT style (Einsum attention, Erf GELU, additive mask), ViT style (Conv patches, class
    token, position embedding, Gather of the class token). Batch and sequence are symbolic.
  * files built with onnx.helper for one feature each: symbolic dims, weights in an external
    file that is not there, unknown ops with and without value_info, old and new opsets.
  * bad files: truncated, random bytes, a cycle, a missing input, dims <= 0, absurd dims, an
    attribute of the wrong type.
The dims of the transformer blocks are fixed here and restated in tests/test_onnx.c, whose
MAC formulas are written from them.
"""
import argparse
import io
import math
import os
import random
import sys

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import TensorProto, helper

V, D, H, P = 50, 16, 2, 32          # vocabulary, width, heads, positions
DH = D // H


class GPT2Block(nn.Module):
    """One GPT-2 layer with embeddings, final LayerNorm and a tied LM head."""

    def __init__(self, trilu):
        super().__init__()
        self.trilu = trilu
        self.wte, self.wpe = nn.Embedding(V, D), nn.Embedding(P, D)
        self.ln1, self.ln2, self.lnf = nn.LayerNorm(D), nn.LayerNorm(D), nn.LayerNorm(D)
        self.c_attn, self.c_proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.proj = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.register_buffer("bias", torch.tril(torch.ones(P, P)).view(1, 1, P, P))

    def forward(self, ids):
        b, t = ids.shape
        pos = torch.arange(0, t, dtype=torch.long).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        h = self.ln1(x)
        q, k, v = self.c_attn(h).split(D, dim=2)
        q = q.view(b, t, H, DH).transpose(1, 2)
        k = k.view(b, t, H, DH).transpose(1, 2)
        v = v.view(b, t, H, DH).transpose(1, 2)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(DH)
        if self.trilu:
            mask = torch.tril(torch.ones(t, t, dtype=w.dtype)).bool()
        else:
            mask = self.bias[:, :, :t, :t].bool()
        w = torch.where(mask, w, torch.tensor(-1e4, dtype=w.dtype))
        a = torch.matmul(w.softmax(-1), v).transpose(1, 2).contiguous().view(b, t, D)
        x = x + self.c_proj(a)
        h = self.fc(self.ln2(x))
        h = self.proj(0.5 * h * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * torch.pow(h, 3)))))
        x = self.lnf(x + h)
        return F.linear(x, self.wte.weight)


class BertBlock(nn.Module):
    """One BERT layer: Einsum attention, additive mask, Erf GELU, post-LayerNorm, pooler."""

    def __init__(self):
        super().__init__()
        self.word, self.pos = nn.Embedding(V, D), nn.Embedding(P, D)
        self.ln0, self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D), nn.LayerNorm(D)
        self.q, self.k, self.v, self.o = (nn.Linear(D, D) for _ in range(4))
        self.fc, self.proj = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.pool = nn.Linear(D, D)

    def forward(self, ids, mask):
        b, t = ids.shape
        x = self.ln0(self.word(ids) + self.pos(torch.arange(t).unsqueeze(0)))
        q = self.q(x).view(b, t, H, DH).permute(0, 2, 1, 3)
        k = self.k(x).view(b, t, H, DH).permute(0, 2, 1, 3)
        v = self.v(x).view(b, t, H, DH).permute(0, 2, 1, 3)
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(DH)
        s = s + (1.0 - mask[:, None, None, :].to(s.dtype)) * -10000.0
        a = torch.einsum("bhqk,bhkd->bhqd", s.softmax(-1), v)
        a = a.permute(0, 2, 1, 3).reshape(b, t, D)
        x = self.ln1(x + self.o(a))
        x = self.ln2(x + self.proj(F.gelu(self.fc(x))))
        return torch.tanh(self.pool(x[:, 0]))


class ViTBlock(nn.Module):
    """Patches of a 3x16x16 image (4x4 conv, 16 patches), class token, one encoder layer."""

    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, D, 4, 4)
        self.cls = nn.Parameter(torch.randn(1, 1, D))
        self.pos = nn.Parameter(torch.randn(1, 17, D))
        self.ln1, self.ln2, self.lnf = nn.LayerNorm(D), nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.o = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.proj = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.head = nn.Linear(D, 10)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        b, n, _ = x.shape
        x = torch.cat([self.cls.expand(b, -1, -1), x], dim=1) + self.pos
        h = self.ln1(x)
        qkv = self.qkv(h).reshape(b, n + 1, 3, H, DH).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = (q @ k.transpose(-2, -1) * DH ** -0.5).softmax(-1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(b, n + 1, D))
        x = x + self.proj(F.gelu(self.fc(self.ln2(x))))
        return self.head(self.lnf(x)[:, 0])


def torch_export(model, args, names, dyn, opset):
    # distinct weights: the exporter merges equal initializers (fresh LayerNorms are all ones)
    with torch.no_grad():
        for t in model.parameters():
            t.copy_(torch.rand_like(t) + 0.5)
    f = io.BytesIO()
    torch.onnx.export(model.eval(), args, f, opset_version=opset, input_names=names,
                      output_names=["out"], dynamic_axes=dyn, do_constant_folding=False)
    return onnx.load_from_string(f.getvalue())


def vi(name, elem, dims):
    return helper.make_tensor_value_info(name, elem, dims)


def weight(name, dims, external=None):
    if not external:
        return helper.make_tensor(name, TensorProto.FLOAT, dims, [0.5] * int(math.prod(dims)))
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims)
    if external:
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", external), ("offset", "0"),
                     ("length", str(4 * math.prod(dims)))):
            e = t.external_data.add()
            e.key, e.value = k, v
    return t


def model(nodes, inputs, outputs, inits=(), value_info=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits), value_info=list(value_info))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="flopmeter-fixtures")


def hand_made():
    F32, I64 = TensorProto.FLOAT, TensorProto.INT64
    m = {}
    # symbolic dims: "batch" from --batch, "seq" only from --input ids=BxT
    m["symbolic"] = model(
        [helper.make_node("Gather", ["emb", "ids"], ["e"], name="embed"),
         helper.make_node("MatMul", ["e", "w"], ["out"], name="proj")],
        [vi("ids", I64, ["batch", "seq"])], [vi("out", F32, ["batch", "seq", 8])],
        [weight("emb", [100, 16]), weight("w", [16, 8])])
    # the weights live in a file that is not there
    m["external"] = model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
         helper.make_node("Add", ["y", "b"], ["out"], name="bias")],
        [vi("x", F32, [1, 32])], [vi("out", F32, [1, 64])],
        [weight("w", [32, 64], "external_weights.bin"), weight("b", [64], "external_weights.bin")])
    # unknown ops
    fancy = lambda i, o: helper.make_node("FancyOp", [i], [o], name="fancy", domain="com.example")
    m["unknown_vi"] = model(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"), fancy("r", "u"),
         helper.make_node("Softplus", ["u"], ["s"], name="softplus"),
         helper.make_node("MatMul", ["s", "w"], ["out"], name="mm")],
        [vi("x", F32, ["N", 8])], [vi("out", F32, ["N", 4])], [weight("w", [8, 4])],
        value_info=[vi("u", F32, ["N", 8]), vi("s", F32, ["N", 8])])
    m["unknown_side"] = model(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"), fancy("r", "side"),
         helper.make_node("MatMul", ["r", "w"], ["out"], name="mm")],
        [vi("x", F32, [1, 8])], [vi("out", F32, [1, 4]), vi("side", F32, None)],
        [weight("w", [8, 4])])
    m["unknown_needed"] = model(
        [fancy("x", "u"), helper.make_node("MatMul", ["u", "w"], ["out"], name="mm")],
        [vi("x", F32, [1, 8])], [vi("out", F32, [1, 4])], [weight("w", [8, 4])])
    # old and new opsets: Upsample (9) with scales input; Resize (11) with sizes; opset 21 Gelu
    # and GroupNormalization
    m["upsample_op9"] = model(
        [helper.make_node("Upsample", ["x", "scales"], ["out"], name="up", mode="nearest")],
        [vi("x", F32, [1, 2, 4, 4])], [vi("out", F32, [1, 2, 8, 8])],
        [helper.make_tensor("scales", F32, [4], [1, 1, 2, 2])], opset=9)
    m["resize_op11"] = model(
        [helper.make_node("Resize", ["x", "", "", "sizes"], ["out"], name="resize",
                          mode="linear")],
        [vi("x", F32, [1, 2, 4, 4])], [vi("out", F32, [1, 2, 6, 8])],
        [helper.make_tensor("sizes", I64, [4], [1, 2, 6, 8])], opset=11)
    m["opset21"] = model(
        [helper.make_node("GroupNormalization", ["x", "gs", "gb"], ["g"], name="gn",
                          num_groups=2, epsilon=1e-5),
         helper.make_node("Gelu", ["g"], ["out"], name="gelu", approximate="tanh")],
        [vi("x", F32, [1, 4, 3, 3])], [vi("out", F32, [1, 4, 3, 3])],
        [weight("gs", [4]), weight("gb", [4])], opset=21)
    # shapes computed in the graph (folded at load time): x.shape[2:] of a 2-D x is empty and
    # concatenates to nothing; ScatterND writes (or adds) updates into a constant, as Swin's
    # shifted-window mask is built. Both Reshape targets come out as [2, 1, 12].
    i64 = lambda name, dims, vals: helper.make_tensor(name, I64, dims, vals)
    m["shape_scatter"] = model(
        [helper.make_node("Shape", ["x"], ["shp"], name="shape"),
         helper.make_node("Slice", ["shp", "two", "big"], ["tail"], name="tail"),
         helper.make_node("ConstantOfShape", ["three"], ["ones"], name="ones",
                          value=helper.make_tensor("v", I64, [1], [1])),
         helper.make_node("ScatterND", ["ones", "at", "put"], ["t1"], name="scatter"),
         helper.make_node("ScatterND", ["ones", "at", "add"], ["t2"], name="scatter_add",
                          reduction="add"),
         helper.make_node("Concat", ["t1", "tail"], ["target1"], name="cat1", axis=0),
         helper.make_node("Concat", ["tail", "t2"], ["target2"], name="cat2", axis=0),
         helper.make_node("Reshape", ["x", "target1"], ["out"], name="reshape1"),
         helper.make_node("Reshape", ["x", "target2"], ["out2"], name="reshape2")],
        [vi("x", F32, [2, 12])], [vi("out", F32, None), vi("out2", F32, None)],
        [i64("two", [1], [2]), i64("big", [1], [1 << 40]), i64("three", [1], [3]),
         i64("at", [2, 1], [0, 2]), i64("put", [2], [2, 12]), i64("add", [2], [1, 11])])
    bad = onnx.ModelProto()
    bad.CopyFrom(m["shape_scatter"])
    bad.graph.initializer[3].CopyFrom(i64("at", [2, 1], [0, 3]))
    m["bad_scatter_index"] = bad
    # a constant index past the end of an embedding table (4 rows): measure refuses it
    m["bad_token_ids"] = model(
        [helper.make_node("Gather", ["emb", "ids"], ["e"], name="embed"),
         helper.make_node("MatMul", ["e", "w"], ["out"], name="proj")],
        [], [vi("out", F32, [1, 2, 2])],
        [weight("emb", [4, 8]), i64("ids", [1, 2], [0, 5]), weight("w", [8, 2])])
    # bad files
    relu = lambda i, o, n: helper.make_node("Relu", [i], [o], name=n)
    m["bad_cyclic"] = model(
        [relu("c", "a", "A"), relu("a", "b", "B"),
         helper.make_node("Add", ["b", "x"], ["c"], name="C")],
        [vi("x", F32, [1, 4])], [vi("c", F32, [1, 4])])
    m["bad_missing_input"] = model(
        [relu("nowhere", "out", "lost")], [vi("x", F32, [1, 4])], [vi("out", F32, [1, 4])])
    m["bad_dim_zero"] = model(
        [relu("x", "out", "r")], [vi("x", F32, [1, 0])], [vi("out", F32, [1, 0])])
    neg = weight("w", [4, 4])
    neg.dims[0] = -4
    m["bad_dim_negative"] = model(
        [helper.make_node("MatMul", ["x", "w"], ["out"], name="mm")],
        [vi("x", F32, [1, 4])], [vi("out", F32, [1, 4])], [neg])
    m["bad_absurd_dims"] = model(
        [relu("x", "out", "r")], [vi("x", F32, [1 << 50, 1 << 50])], [vi("out", F32, None)])
    m["bad_attr_type"] = model(
        [helper.make_node("Conv", ["x", "w"], ["out"], name="conv_g", group=1.0)],
        [vi("x", F32, [1, 2, 5, 5])], [vi("out", F32, None)], [weight("w", [2, 2, 3, 3])])
    # Mod folded at load time with ONNX's integer rule (fmod 0: the divisor's sign, Python's %):
    # [-10, 12] mod [4, 7] = [2, 5], the shape of a Reshape (C's % would give [-2, 5])
    i64 = lambda name, vals: helper.make_tensor(name, I64, [len(vals)], vals)
    m["mod_shape"] = model(
        [helper.make_node("Mod", ["c", "d"], ["s"], name="mod"),
         helper.make_node("Reshape", ["x", "s"], ["r"], name="reshape"),
         helper.make_node("Relu", ["r"], ["out"], name="relu")],
        [vi("x", F32, [10])], [vi("out", F32, None)], [i64("c", [-10, 12]), i64("d", [4, 7])])
    # secondary outputs: LayerNormalization's Mean omitted (an empty name) and InvStdDev named,
    # Dropout's mask; both graph outputs
    m["secondary_outputs"] = model(
        [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y", "", "istd"], name="ln",
                          axis=-1),
         helper.make_node("Dropout", ["y"], ["out", "mask"], name="drop")],
        [vi("x", F32, [2, 3, 8])],
        [vi("out", F32, None), vi("istd", F32, None), vi("mask", TensorProto.BOOL, None)],
        [weight("g", [8]), weight("b", [8])])
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests",
                                                  "data", "onnx"))
    ap.add_argument("names", nargs="*", help="write only these hand-made fixtures")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.names:
        made = hand_made()
        for name in args.names:
            onnx.save(made[name], os.path.join(args.out, name + ".onnx"))
        return 0
    torch.manual_seed(0)
    out = {}
    ids = torch.randint(0, V, (2, 8))
    seq = {0: "batch", 1: "seq"}
    for opset in (13, 17):
        out[f"gpt2_block_op{opset}"] = torch_export(GPT2Block(trilu=opset >= 17), (ids,),
                                                    ["ids"], {"ids": seq}, opset)
        out[f"bert_block_op{opset}"] = torch_export(
            BertBlock(), (ids, torch.ones(2, 8, dtype=torch.long)), ["ids", "mask"],
            {"ids": seq, "mask": seq}, opset)
        out[f"vit_block_op{opset}"] = torch_export(ViTBlock(), (torch.randn(2, 3, 16, 16),),
                                                   ["img"], {"img": {0: "batch"}}, opset)
    out.update(hand_made())
    for name, m in out.items():
        path = os.path.join(args.out, name + ".onnx")
        onnx.save(m, path)
        print(path, os.path.getsize(path), "bytes")
    # not protobuf at all, and a model cut short
    rnd = random.Random(1234)
    with open(os.path.join(args.out, "bad_random.onnx"), "wb") as f:
        f.write(bytes(rnd.randrange(256) for _ in range(512)))
    data = out["vit_block_op17"].SerializeToString()
    with open(os.path.join(args.out, "bad_truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
