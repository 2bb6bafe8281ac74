#!/usr/bin/env python3
"""Small training fixtures for the CPU backend, written by PyTorch 2's default exporter
(torch.onnx.export(dynamo=True)) in training mode: what a user of PyPI's torch 2.x hands to
`flopmeter measure`. tests/test_cpu_train2.c trains each (the loss falls over a few steps).

    /root/.cache/flopmeter/venv/bin/python tools/export_train2_fixtures.py [--out DIR]

| file | what it holds that the CPU backend must run |
|---|---|
| mobilenet_v2_dyn.onnx | ReLU6 as Clip of CastLike'd constants, training BatchNorm (optimize=False) |
| stochastic_depth_dyn.onnx | torchvision's StochasticDepth (row mode): RandomUniformLike + Less per sample |
| bert_mask_dyn.onnx | BERT with an attention mask: SDPA's mask handling (IsNaN, Where), GatherND |
| llama_mask_dyn.onnx | a LLaMA-style decoder with a mask: RoPE, grouped-query SDPA, causal mask |
| gpt2_dyn.onnx | GPT-2: input_ids.view (an integer Reshape), IsNaN |
| swin_t_dyn.onnx | Swin-T: shifted-window masks built with ScatterND (slice_scatter) |

Models are tiny configurations (HuggingFace models from their configs: no weights are
downloaded), batch 2, shapes static. Float initializers are stripped (payload dropped, marked
external at a location that does not exist: flopmeter starts every weight from its own
generator) and so are the exporter's per-node metadata (stack traces) and its value_info
(flopmeter infers the shapes), so the files are kilobytes. The transformers use optimize=True, whose graph is the training graph (no
BatchNorm to fold); mobilenet_v2, stochastic_depth and swin_t use optimize=False, which
keeps the BatchNormalization nodes and the training graph as written.
"""
import argparse
import os
import tempfile
import warnings

import onnx
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
               onnx.TensorProto.BFLOAT16}


def strip(model):
    for t in model.graph.initializer:
        if t.data_type not in FLOAT_TYPES or t.ByteSize() < 256:
            continue
        for field in ("raw_data", "float_data", "double_data", "int32_data"):
            t.ClearField(field)
        t.data_location = onnx.TensorProto.EXTERNAL
        del t.external_data[:]
        e = t.external_data.add()
        e.key, e.value = "location", "stripped-weights.bin"
    for n in model.graph.node:
        del n.metadata_props[:]
    del model.graph.value_info[:]   # flopmeter infers every shape itself
    return model


class Logits(torch.nn.Module):
    def __init__(self, m, mask):
        super().__init__()
        self.m, self.mask = m, mask

    def forward(self, ids, mask=None):
        if self.mask:
            return self.m(input_ids=ids, attention_mask=mask).logits
        return self.m(input_ids=ids).logits


class SDBlock(torch.nn.Module):
    """A residual block with torchvision's stochastic depth, as EfficientNet and ConvNeXt have."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.body = torch.nn.Sequential(torch.nn.Conv2d(8, 8, 3, padding=1),
                                        torch.nn.BatchNorm2d(8), torch.nn.SiLU())
        self.sd = torchvision.ops.StochasticDepth(0.2, "row")
        self.head = torch.nn.Linear(8, 10)

    def forward(self, x):
        x = self.conv(x)
        x = x + self.sd(self.body(x))
        return self.head(x.mean((2, 3)))


def models():
    import transformers as tr
    ids = torch.randint(0, 100, (2, 16))
    mask = torch.ones(2, 16, dtype=torch.long)
    mask[1, 12:] = 0
    small = dict(vocab_size=100)
    yield ("mobilenet_v2_dyn", torchvision.models.mobilenet_v2(width_mult=0.25, num_classes=10),
           (torch.randn(2, 3, 64, 64),), False)
    yield "stochastic_depth_dyn", SDBlock(), (torch.randn(2, 3, 16, 16),), False
    bert = tr.BertForSequenceClassification(tr.BertConfig(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=32, num_labels=3, **small))
    yield "bert_mask_dyn", Logits(bert, True), (ids, mask), True
    llama = tr.LlamaForCausalLM(tr.LlamaConfig(
        num_hidden_layers=2, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
        intermediate_size=64, max_position_embeddings=32, use_cache=False, **small))
    yield "llama_mask_dyn", Logits(llama, True), (ids, mask), True
    gpt2 = tr.GPT2LMHeadModel(tr.GPT2Config(n_layer=2, n_embd=32, n_head=2, n_positions=32,
                                            use_cache=False, **small))
    yield "gpt2_dyn", Logits(gpt2, False), (ids,), True
    yield ("swin_t_dyn", torchvision.models.swin_t(num_classes=10), (torch.randn(2, 3, 64, 64),),
           False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "..", "tests", "data", "onnx",
                                                  "train2"))
    ap.add_argument("--only", nargs="*", help="write these fixtures only")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    for name, model, inputs, optimize in models():
        if args.only and name not in args.only:
            continue
        model.train()
        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            path = os.path.join(tmp, "m.onnx")
            torch.onnx.export(model, inputs, path, dynamo=True, optimize=optimize,
                              external_data=False, verbose=False)
            m = strip(onnx.load(path))
        out = os.path.join(args.out, name + ".onnx")
        onnx.save(m, out)
        print(f"{out}: {os.path.getsize(out)} bytes")


if __name__ == "__main__":
    main()
