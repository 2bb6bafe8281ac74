#!/usr/bin/python3
"""Exports networks for `flopmeter measure` to train: torchvision's classification families and
GPT-2, BERT and LLaMA-style language models written here in plain PyTorch.

Run with Debian's python3 (python3-torch 1.13, python3-torchvision 0.14, python3-onnx 1.12):

    /usr/bin/python3 tools/export_train_models.py                # small variants, for make test
    /usr/bin/python3 tools/export_train_models.py --full --out DIR [names...]   # for bench/
    /usr/bin/python3 tools/export_train_models.py --torchvision-all --out DIR   # every one

Small variants (tests/data/onnx/train/, committed): one network per family that the built-in
models and the other fixtures do not cover, at a small input (64x64 images; 16 tokens), so that
tests/test_cpu_train.c trains each in a few seconds on two cores. The torchvision ones are the
real architectures (torchvision's own constructors), only the image is small; ViT is a 2-layer
VisionTransformer (torchvision's class) on 32x32 images. The language models are 2 layers wide
32 with a 128-word vocabulary.

--full writes the sizes bench/ times: GPT-2 small (12 layers, 768 wide, 50257 words), BERT-base,
a LLaMA-style decoder (12 layers, 768 wide, SwiGLU 2048, RoPE, RMSNorm, 32000 words), ViT-B/16,
ConvNeXt-T and DenseNet-121 at 224x224. --torchvision-all writes every classification model of
torchvision (what `bench/train_all_onnx.sh` trains).

Every file is exported in eval mode with training=TrainingMode.PRESERVE and no constant
folding (BatchNorm stays a layer; Dropout, an identity in eval mode, is left out), with a
symbolic batch dim, and its float initializers stripped (the payload dropped, marked external at
a location that does not exist): flopmeter starts every weight from its own generator, so the
files are kilobytes. Language models take int64 token ids (batch, seq), BERT also an attention
mask and token types.
"""
import argparse
import math
import os
import sys
import tempfile

import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.onnx import TrainingMode

HERE = os.path.dirname(os.path.abspath(__file__))
FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
               onnx.TensorProto.BFLOAT16)


# ---- language models ----

class GPT2(nn.Module):
    """GPT-2: learned positions, pre-LayerNorm blocks, tanh GELU, causal mask, tied LM head."""

    def __init__(self, vocab, width, layers, heads, ctx):
        super().__init__()
        self.h = heads
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(ctx, width)
        self.blocks = nn.ModuleList(GPT2Block(width, heads) for _ in range(layers))
        self.lnf = nn.LayerNorm(width)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(t).unsqueeze(0))
        for b in self.blocks:
            x = b(x)
        return F.linear(self.lnf(x), self.wte.weight)


class GPT2Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.h = heads
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.o = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc, self.proj = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.h)
        mask = torch.tril(torch.ones(t, t)).bool()
        w = torch.where(mask, w, torch.tensor(-1e4))
        a = torch.matmul(w.softmax(-1), v).transpose(1, 2).reshape(b, t, d)
        x = x + self.o(a)
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class BERT(nn.Module):
    """BERT: word, position and token-type embeddings, post-LayerNorm blocks, additive padding
    mask, Erf GELU, a masked-language-model head over every position."""

    def __init__(self, vocab, width, layers, heads, ctx):
        super().__init__()
        self.word, self.pos = nn.Embedding(vocab, width), nn.Embedding(ctx, width)
        self.token_type = nn.Embedding(2, width)
        self.ln = nn.LayerNorm(width)
        self.blocks = nn.ModuleList(BERTBlock(width, heads) for _ in range(layers))
        self.head, self.head_ln = nn.Linear(width, width), nn.LayerNorm(width)
        self.decoder = nn.Linear(width, vocab)

    def forward(self, ids, mask, types):
        t = ids.shape[1]
        x = self.ln(self.word(ids) + self.pos(torch.arange(t).unsqueeze(0)) + self.token_type(types))
        add = (1.0 - mask[:, None, None, :].float()) * -10000.0
        for b in self.blocks:
            x = b(x, add)
        return self.decoder(self.head_ln(F.gelu(self.head(x))))


class BERTBlock(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.h = heads
        self.q, self.k, self.v, self.o = (nn.Linear(width, width) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.fc, self.proj = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x, add):
        b, t, d = x.shape
        q, k, v = (f(x).view(b, t, self.h, d // self.h).transpose(1, 2)
                   for f in (self.q, self.k, self.v))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.h) + add
        a = torch.matmul(s.softmax(-1), v).transpose(1, 2).reshape(b, t, d)
        x = self.ln1(x + self.o(a))
        return self.ln2(x + self.proj(F.gelu(self.fc(x))))


class RMSNorm(nn.Module):
    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(width))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LLaMA(nn.Module):
    """A LLaMA-style decoder: RMSNorm, rotary position embedding (its tables computed in the
    graph from the sequence length: Range, Pow, Mul, Cos, Sin), SwiGLU, causal mask, an untied
    head, no biases."""

    def __init__(self, vocab, width, layers, heads, hidden):
        super().__init__()
        self.h = heads
        self.embed = nn.Embedding(vocab, width)
        self.blocks = nn.ModuleList(LLaMABlock(width, heads, hidden) for _ in range(layers))
        self.norm = RMSNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, ids):
        t = ids.shape[1]
        dh = self.embed.weight.shape[1] // self.h
        inv = 1.0 / torch.pow(10000.0, torch.arange(0, dh, 2).float() / dh)
        ang = torch.arange(t).float()[:, None] * inv[None, :]
        cos, sin = torch.cos(ang), torch.sin(ang)
        x = self.embed(ids)
        for b in self.blocks:
            x = b(x, cos, sin)
        return self.head(self.norm(x))


def rotate(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class LLaMABlock(nn.Module):
    def __init__(self, width, heads, hidden):
        super().__init__()
        self.h = heads
        self.n1, self.n2 = RMSNorm(width), RMSNorm(width)
        self.q, self.k, self.v, self.o = (nn.Linear(width, width, bias=False) for _ in range(4))
        self.gate, self.up = nn.Linear(width, hidden, bias=False), nn.Linear(width, hidden, bias=False)
        self.down = nn.Linear(hidden, width, bias=False)

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        h = self.n1(x)
        q, k, v = (f(h).view(b, t, self.h, d // self.h).transpose(1, 2)
                   for f in (self.q, self.k, self.v))
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d // self.h)
        w = w.masked_fill(torch.triu(torch.ones(t, t), diagonal=1).bool(), -1e4)
        a = torch.matmul(w.softmax(-1), v).transpose(1, 2).reshape(b, t, d)
        x = x + self.o(a)
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


# ---- what is exported ----

def lm_inputs(name, seq, vocab):
    ids = torch.randint(0, vocab, (1, seq))
    if name.startswith("bert"):
        return (ids, torch.ones(1, seq, dtype=torch.long), torch.zeros(1, seq, dtype=torch.long)), \
            ["ids", "attention_mask", "token_type_ids"]
    return (ids,), ["ids"]


def small_vit():
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                             hidden_dim=32, mlp_dim=64, num_classes=10)


# name: (builder, input: image side or ("lm", seq, vocab))
SMALL = {
    "densenet121": (lambda: torchvision.models.densenet121(), 64),
    "mnasnet0_5": (lambda: torchvision.models.mnasnet0_5(), 64),
    "shufflenet_v2_x0_5": (lambda: torchvision.models.shufflenet_v2_x0_5(), 64),
    "regnet_y_400mf": (lambda: torchvision.models.regnet_y_400mf(), 64),
    "squeezenet1_1": (lambda: torchvision.models.squeezenet1_1(), 64),
    "convnext_tiny": (lambda: torchvision.models.convnext_tiny(), 64),
    "efficientnet_v2_s": (lambda: torchvision.models.efficientnet_v2_s(), 64),
    "swin_t": (lambda: torchvision.models.swin_t(), 64),
    "vit_small": (small_vit, 32),
    "gpt2_small": (lambda: GPT2(128, 32, 2, 2, 32), ("lm", 16, 128)),
    "bert_small": (lambda: BERT(128, 32, 2, 2, 32), ("lm", 16, 128)),
    "llama_small": (lambda: LLaMA(128, 32, 2, 2, 86), ("lm", 16, 128)),
}
FULL = {
    "gpt2": (lambda: GPT2(50257, 768, 12, 12, 1024), ("lm", 128, 50257)),
    "bert_base": (lambda: BERT(30522, 768, 12, 12, 512), ("lm", 128, 30522)),
    "llama_decoder": (lambda: LLaMA(32000, 768, 12, 12, 2048), ("lm", 128, 32000)),
    "vit_b_16": (lambda: torchvision.models.vit_b_16(), 224),
    "convnext_tiny": (lambda: torchvision.models.convnext_tiny(), 224),
    "densenet121": (lambda: torchvision.models.densenet121(), 224),
}
TORCHVISION_SKIP = ("quantized_", "fasterrcnn", "maskrcnn", "keypointrcnn", "retinanet", "fcos",
                    "ssd", "fcn_", "deeplabv3", "lraspp", "raft", "r3d", "r2plus1d", "mc3", "s3d",
                    "mvit")


def torchvision_all():
    out = {}
    for name in torchvision.models.list_models():
        if name.startswith(TORCHVISION_SKIP):
            continue
        kw = dict(aux_logits=False, init_weights=False) if name in ("googlenet", "inception_v3") \
            else {}
        side = 299 if name == "inception_v3" else 224
        out[name] = ((lambda n=name, k=kw: getattr(torchvision.models, n)(weights=None, **k)), side)
    return out


def strip(model):
    """Drops float payloads; marks them external at a location that does not exist."""
    for t in model.graph.initializer:
        if t.data_type not in FLOAT_TYPES:
            continue
        for field in ("raw_data", "float_data", "double_data", "int32_data"):
            t.ClearField(field)
        t.data_location = onnx.TensorProto.EXTERNAL
        del t.external_data[:]
        e = t.external_data.add()
        e.key, e.value = "location", "stripped-weights.bin"
    return model


NORMS = (nn.LayerNorm, nn.GroupNorm, nn.BatchNorm2d, RMSNorm)


def fill_weights(model):
    """Distinct random weights (the exporter merges initializers with equal contents: fresh
    LayerNorms are all ones), of a trainable size: +-0.1, norm scales and BatchNorm variances
    near 1."""
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.dtype.is_floating_point:
                t.copy_((torch.rand_like(t) - 0.5) * 0.2)
        for m in model.modules():
            if isinstance(m, NORMS) and getattr(m, "weight", None) is not None:
                m.weight.add_(1.0)
            if isinstance(m, nn.BatchNorm2d):
                m.running_var.abs_().add_(1.0)


def build(name, table):
    builder, spec = table[name]
    torch.manual_seed(0)
    model = builder().eval()
    fill_weights(model)
    return model, spec


def export(name, builder, spec, opset):
    torch.manual_seed(0)
    model = builder().eval()
    fill_weights(model)
    if isinstance(spec, tuple):
        _, seq, vocab = spec
        args, names = lm_inputs(name, seq, vocab)
        dyn = {n: {0: "batch", 1: "seq"} for n in names}
    else:
        args, names = (torch.randn(1, 3, spec, spec),), ["input"]
        dyn = {"input": {0: "batch"}}
    dyn["out"] = {0: "batch"}
    # into a file, not memory: a model over protobuf's 2 GB (RegNetY-128GF, ViT-H/14) is written
    # with its weights in external files, which strip() drops anyway
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.onnx")
        torch.onnx.export(model, args, path, opset_version=opset, input_names=names,
                          output_names=["out"], dynamic_axes=dyn, do_constant_folding=False,
                          training=TrainingMode.PRESERVE)
        return strip(onnx.load(path, load_external_data=False))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "tests", "data", "onnx", "train"))
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--full", action="store_true", help="the sizes bench/ times")
    ap.add_argument("--torchvision-all", action="store_true",
                    help="every classification model of torchvision")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    table = torchvision_all() if args.torchvision_all else FULL if args.full else SMALL
    os.makedirs(args.out, exist_ok=True)
    failed = []
    for name in args.names or table:
        builder, spec = table[name]
        try:
            m = export(name, builder, spec, args.opset)
        except Exception as e:   # an architecture torch cannot export: say so, go on
            print(f"{name}: export failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
            failed.append(name)
            continue
        path = os.path.join(args.out, f"{name}.onnx")
        onnx.save(m, path)
        print(path, os.path.getsize(path), "bytes", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
