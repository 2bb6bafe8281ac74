#!/usr/bin/env python3
"""Full-size networks as ONNX files for the CPU benches (bench/slow_paths.py,
bench/calibration_accuracy.py): what users bring from the field rather than the small corpus
of tests/data/onnx/torch2/ (64x64 images, 2-layer transformers 64 wide).

    PY=/root/.cache/flopmeter/venv/bin/python
    $PY bench/export_fullsize.py [--out DIR (default bench/data/fullsize, not committed)] [names...]

Every model is built untrained (torchvision constructors with 1000 classes, HuggingFace models
from their configs: no weights are downloaded), put in training mode and exported with a
symbolic batch dimension, so `flopmeter measure FILE --batch B` binds it; the weights' bytes are
dropped from the file (flopmeter reads shapes only). Two exporters, as users have them:

    ts    torch.onnx.export(dynamo=False, opset 14): PyTorch 1.13's exporter and opset, which
          decomposes LayerNorm into ReduceMean, Sub, Pow, Sqrt and Div (ConvNeXt-T's
          broadcast Sub and Div on (N, H, W, C) against (N, H, W, 1))
    dyn   torch.onnx.export(dynamo=True, optimize=False), PyTorch 2.x's default exporter

Files: NAME.onnx in --out. Existing files are kept (delete one to re-export it).
"""
import argparse
import os
import sys
import warnings

import torch

warnings.filterwarnings("ignore")
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "data", "fullsize")


def tv(name, size=224):
    def build():
        import torchvision
        return torchvision.models.get_model(name), {"x": torch.randn(2, 3, size, size)}
    return build


def gpt2_small():
    import transformers
    cfg = transformers.GPT2Config(use_cache=False)   # 124M: 12 layers, 768 wide, 50257 words
    return (transformers.GPT2LMHeadModel(cfg),
            {"input_ids": torch.randint(0, 50257, (2, 128))})


def bert_base():
    import transformers
    cfg = transformers.BertConfig()                   # 110M: 12 layers, 768 wide
    return (transformers.BertForMaskedLM(cfg),
            {"input_ids": torch.randint(0, 30522, (2, 128))})


# name -> (builder, exporter)
MODELS = {
    "regnet_y_400mf_ts": (tv("regnet_y_400mf"), "ts"),
    "convnext_tiny_ts": (tv("convnext_tiny"), "ts"),
    "mobilenet_v3_large_ts": (tv("mobilenet_v3_large"), "ts"),
    "efficientnet_b0_ts": (tv("efficientnet_b0"), "ts"),
    "vit_b_16_dyn": (tv("vit_b_16"), "dyn"),
    "swin_t_dyn": (tv("swin_t"), "dyn"),
    "convnext_tiny_dyn": (tv("convnext_tiny"), "dyn"),
    "regnet_y_400mf_dyn": (tv("regnet_y_400mf"), "dyn"),
    "gpt2_small_dyn": (gpt2_small, "dyn"),
    "bert_base_dyn": (bert_base, "dyn"),
}


def strip(proto):
    for t in proto.graph.initializer:
        if t.raw_data:
            t.ClearField("raw_data")
        for f in ("float_data", "int64_data", "int32_data", "double_data"):
            if len(getattr(t, f)) > 16:
                t.ClearField(f)


def export(name, path):
    import onnx
    build, how = MODELS[name]
    m, kw = build()
    m.train()
    args = tuple(kw.values())
    names = list(kw)
    if how == "ts":
        tmp = path + ".tmp"
        torch.onnx.export(m, args, tmp, dynamo=False, opset_version=14, input_names=names,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                          dynamic_axes={k: {0: "batch"} for k in names})
        proto = onnx.load(tmp)
        os.remove(tmp)
    else:
        batch = torch.export.Dim("batch", min=1, max=1024)
        prog = torch.onnx.export(m, (), kwargs=kw, dynamo=True, optimize=False,
                                 dynamic_shapes={k: {0: batch} for k in names})
        proto = prog.model_proto
    strip(proto)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    bad = 0
    for name in a.names or MODELS:
        path = os.path.join(a.out, name + ".onnx")
        if os.path.exists(path):
            continue
        try:
            export(name, path)
            print(f"{name}: {os.path.getsize(path) // 1024} KiB", flush=True)
        except Exception as e:   # say which and go on: one exporter bug must not stop the rest
            bad += 1
            print(f"{name}: failed: {type(e).__name__}: {str(e)[:300]}", file=sys.stderr,
                  flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
