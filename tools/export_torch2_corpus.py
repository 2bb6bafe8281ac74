#!/usr/bin/env python3
"""Exports the PyTorch 2.x corpus (tests/data/onnx/torch2/): what today's torch.onnx.export
writes for torchvision's classifiers and HuggingFace transformers, in training mode, and what
PyTorch itself says about each model (parameters, FlopCounterMode's forward and backward FLOPs).

Run with PyPI's current torch, torchvision, transformers and onnxscript in a virtual
environment (CI does not run it; the files it writes are committed):

    python tools/export_torch2_corpus.py [--out DIR] [--variants dyn,dynraw,ts,dynb] [names...]
    python tools/export_torch2_corpus.py --op-fixtures    # torch2_split_seq.onnx, torch2_meta.onnx

Each model is built small (torchvision's real constructors at 64x64 images and 10 classes, or a
2-layer transformer 64 wide with a 1000-word vocabulary built from a config, so no weights are
downloaded), put in training mode (`model.train()`) and exported three ways:

    dyn     torch.onnx.export(..., dynamo=True)                    the default: optimize on
    dynraw  torch.onnx.export(..., dynamo=True, optimize=False)
    dynb    the same with a symbolic batch (dynamic_shapes, dim 0 of every input), for a few
    ts      torch.onnx.export(..., dynamo=False, training=TrainingMode.TRAINING,
                              do_constant_folding=False)          the TorchScript exporter

Float initializers larger than 16 elements lose their payload (dims, dtype and names are kept:
flopmeter never reads weights), and nodes their Python stack trace, class list and namespace
(metadata pkg.torch.onnx.stack_trace, class_hierarchy, namespace; name_scopes, the module path,
and fx_node stay; resnet18's files keep namespace), so the files are small.
Each file NAME.onnx gets NAME.json:
the exporter and its settings, versions, input names and shapes, PyTorch's parameter counts
(all, trainable, and each parameter's state-dict name and size), and FlopCounterMode's forward
and forward+backward FLOPs (backward of the sum of the float outputs), in total and per aten op.
An export that fails writes NAME.json with its error and no .onnx.

FlopCounterMode is known to be wrong in three places, recorded in the manifest's "notes":
a grouped convolution's weight gradient is counted `groups` times too large; SDPA's backward is
counted with the forward's recomputation in it (2.5x the forward, where the math backend does
2x); a MoE's grouped matmul (torch._grouped_mm) is counted as zero.
"""
import argparse
import json
import re
import os
import sys
import tempfile
import time
import traceback

import onnx
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "..", "tests", "data", "onnx", "torch2")
FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
               onnx.TensorProto.BFLOAT16)
DROP_META = ("pkg.torch.onnx.stack_trace", "pkg.torch.onnx.class_hierarchy")
BATCH = 2
SEQ = 16
IMG = 64


# ---- models: each builder returns (module, kwargs of example inputs) ----

def tv(name, **kw):
    def build():
        import torchvision
        m = getattr(torchvision.models, name)(weights=None, num_classes=10, **kw)
        return m, {"x": torch.randn(BATCH, 3, IMG, IMG)}
    return build


def tv_vit():
    import torchvision
    m = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                             num_heads=4, hidden_dim=64, mlp_dim=128,
                                             num_classes=10)
    return m, {"x": torch.randn(BATCH, 3, 32, 32)}


def tv_swin_v2():
    import torchvision
    from torchvision.models.swin_transformer import SwinTransformer, SwinTransformerBlockV2, \
        PatchMergingV2
    # swin_v2_t's architecture at 2 stages: window 4 over a 64x64 image (16x16 patches)
    m = SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4],
                        window_size=[4, 4], stochastic_depth_prob=0.2, num_classes=10,
                        block=SwinTransformerBlockV2, downsample_layer=PatchMergingV2)
    return m, {"x": torch.randn(BATCH, 3, IMG, IMG)}


def tv_swin():
    from torchvision.models.swin_transformer import SwinTransformer
    m = SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4],
                        window_size=[4, 4], stochastic_depth_prob=0.2, num_classes=10)
    return m, {"x": torch.randn(BATCH, 3, IMG, IMG)}


TINY = dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, max_position_embeddings=64)


def ids():
    g = torch.Generator().manual_seed(0)
    return torch.randint(0, 1000, (BATCH, SEQ), generator=g)


def hf_causal(cfg_name, **extra):
    def build():
        import transformers
        cfg = getattr(transformers, cfg_name)(**{**TINY, **extra})
        cfg.use_cache = False
        m = transformers.AutoModelForCausalLM.from_config(cfg)
        return m, {"input_ids": ids()}
    return build


def hf_gpt2():
    import transformers
    cfg = transformers.GPT2Config(vocab_size=1000, n_embd=64, n_layer=2, n_head=4,
                                  n_positions=64, use_cache=False)
    return transformers.GPT2LMHeadModel(cfg), {"input_ids": ids()}


def hf_masked(cfg_name):
    def build():
        import transformers
        cfg = getattr(transformers, cfg_name)(**TINY, type_vocab_size=2)
        if cfg_name == "RobertaConfig":
            cfg.max_position_embeddings = SEQ + 4
            cfg.pad_token_id = 1
        m = transformers.AutoModelForMaskedLM.from_config(cfg)
        return m, {"input_ids": ids(), "attention_mask": torch.ones(BATCH, SEQ, dtype=torch.long)}
    return build


def hf_t5():
    import transformers
    cfg = transformers.T5Config(vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                                num_decoder_layers=2, num_heads=4, use_cache=False,
                                decoder_start_token_id=0)
    m = transformers.T5ForConditionalGeneration(cfg)
    return m, {"input_ids": ids(), "decoder_input_ids": ids()[:, :8]}


def hf_vit():
    import transformers
    cfg = transformers.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                 intermediate_size=128, image_size=32, patch_size=8, num_labels=10)
    m = transformers.ViTForImageClassification(cfg)
    return m, {"pixel_values": torch.randn(BATCH, 3, 32, 32)}


def hf_clip_vision():
    import transformers
    cfg = transformers.CLIPVisionConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                        num_attention_heads=4, image_size=32, patch_size=8)
    m = transformers.CLIPVisionModel(cfg)
    return m, {"pixel_values": torch.randn(BATCH, 3, 32, 32)}


def hf_whisper_encoder():
    import transformers
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    cfg = transformers.WhisperConfig(vocab_size=1000, d_model=64, encoder_layers=2,
                                     decoder_layers=2, encoder_attention_heads=4,
                                     decoder_attention_heads=4, encoder_ffn_dim=128,
                                     decoder_ffn_dim=128, num_mel_bins=16,
                                     max_source_positions=16, max_target_positions=16)
    m = WhisperEncoder(cfg)
    return m, {"input_features": torch.randn(BATCH, 16, 32)}


# the symbolic-batch export (dynb) of a few: its shapes come from the batch at count time
DYNB_MODELS = ("resnet18", "mobilenet_v2", "llama", "gpt2", "bert", "t5", "vit_b_16")

MODELS = {
    "resnet18": tv("resnet18"),
    "mobilenet_v2": tv("mobilenet_v2"),
    "efficientnet_b0": tv("efficientnet_b0"),
    "convnext_tiny": tv("convnext_tiny"),
    "swin_t": tv_swin,
    "swin_v2_t": tv_swin_v2,
    "vit_b_16": tv_vit,
    "gpt2": hf_gpt2,
    "bert": hf_masked("BertConfig"),
    "roberta": hf_masked("RobertaConfig"),
    "llama": hf_causal("LlamaConfig", num_key_value_heads=2),
    "mistral": hf_causal("MistralConfig", num_key_value_heads=2, sliding_window=8),
    "qwen2": hf_causal("Qwen2Config", num_key_value_heads=2),
    "gemma": hf_causal("GemmaConfig", num_key_value_heads=2, head_dim=16),
    "phi3": hf_causal("Phi3Config", num_key_value_heads=2, pad_token_id=0),
    "t5": hf_t5,
    "vit": hf_vit,
    "clip_vision": hf_clip_vision,
    "whisper_encoder": hf_whisper_encoder,
    # transformers 5 runs MoE experts by torch._grouped_mm by default, which the exporter
    # cannot translate and FlopCounterMode counts as zero; "batched_mm" gathers each token's
    # experts' weights and multiplies in one bmm, which both handle
    "mixtral": hf_causal("MixtralConfig", num_key_value_heads=2, num_local_experts=4,
                         num_experts_per_tok=2, experts_implementation="batched_mm"),
}


# ---- what PyTorch says ----

def float_outputs(out):
    if isinstance(out, torch.Tensor):
        return [out] if out.is_floating_point() else []
    if isinstance(out, dict) or hasattr(out, "values"):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in float_outputs(o)]
    return []


def flop_counts(model, inputs, backward):
    from torch.utils.flop_counter import FlopCounterMode
    model.zero_grad(set_to_none=True)
    torch.manual_seed(0)
    with FlopCounterMode(display=False) as fc:
        out = model(**inputs)
        if backward:
            sum(o.float().sum() for o in float_outputs(out)).backward()
    per_op = {str(k): int(v) for k, v in fc.get_flop_counts().get("Global", {}).items()}
    return int(fc.get_total_flops()), per_op


def pytorch_facts(model, inputs):
    seen, params = set(), []
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        params.append({"name": name, "numel": p.numel(), "trainable": p.requires_grad})
    # a tied parameter (T5's shared embedding, GPT-2's wte and lm_head) has one entry above,
    # under its first name, and its other names here
    aliases = {}
    first = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in first and first[id(p)] != name:
            aliases.setdefault(first[id(p)], []).append(name)
        first.setdefault(id(p), name)
    fwd, fwd_ops = flop_counts(model, inputs, False)
    fb, fb_ops = flop_counts(model, inputs, True)
    groups = [m.groups for m in model.modules() if isinstance(m, nn.Conv2d) and m.groups > 1]
    notes = []
    if groups:
        notes.append("grouped convolutions: FlopCounterMode counts each one's weight gradient "
                     "groups times too large")
    if any("scaled_dot_product" in k for k in fb_ops):
        notes.append("SDPA: FlopCounterMode's backward counts 5 matmuls where the math backend "
                     "does 4 (it adds the forward's recomputation)")
    if any("grouped_mm" in k for k in fb_ops):
        notes.append("MoE: FlopCounterMode counts torch._grouped_mm as zero")
    return {
        "params": sum(p["numel"] for p in params),
        "params_trainable": sum(p["numel"] for p in params if p["trainable"]),
        "buffers": sum(b.numel() for b in model.buffers()),
        "param_list": params,
        "param_aliases": aliases,
        "flops_fwd": fwd,
        "flops_fwd_bwd": fb,
        "flops_fwd_by_op": fwd_ops,
        "flops_fwd_bwd_by_op": fb_ops,
        "notes": notes,
    }


# ---- export and strip ----

def strip(model_proto, keep_namespace=False):
    """Drops the payload of every float tensor over 16 elements (initializers and Constant
    nodes, in subgraphs too): the dims, dtype and name stay."""
    def strip_tensor(t):
        n = 1
        for d in t.dims:
            n *= d
        if t.data_type in FLOAT_TYPES and n > 16:
            t.ClearField("raw_data")
            for f in ("float_data", "double_data", "int32_data"):
                t.ClearField(f)
            del t.external_data[:]
            t.data_location = onnx.TensorProto.DEFAULT

    def walk(g):
        for t in g.initializer:
            strip_tensor(t)
        for n in g.node:
            # the Python stack of each node, its class list and its namespace (the module
            # path and classes that name_scopes and the class list say again) are most of a
            # file's bytes; name_scopes and fx_node stay, and resnet18's files keep namespace
            drop = DROP_META if keep_namespace else DROP_META + ("namespace",)
            keep = [p for p in n.metadata_props if p.key not in drop]
            del n.metadata_props[:]
            n.metadata_props.extend(keep)
            for a in n.attribute:
                if a.HasField("t"):
                    strip_tensor(a.t)
                if a.HasField("g"):
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)
    walk(model_proto.graph)


def export(model, inputs, variant, path):
    names = list(inputs)
    with tempfile.TemporaryDirectory() as tmp:
        f = os.path.join(tmp, "m.onnx")
        if variant == "ts":
            torch.onnx.export(model, (), f, kwargs=inputs, dynamo=False, input_names=names,
                              training=torch.onnx.TrainingMode.TRAINING,
                              do_constant_folding=False, opset_version=17)
        elif variant == "dynb":
            from torch.export import Dim
            batch = Dim("batch", min=1, max=4096)
            torch.onnx.export(model, (), f, kwargs=inputs, dynamo=True, input_names=names,
                              optimize=False, external_data=False,
                              dynamic_shapes={k: {0: batch} for k in inputs})
        else:
            torch.onnx.export(model, (), f, kwargs=inputs, dynamo=True, input_names=names,
                              optimize=(variant == "dyn"), external_data=False)
        mp = onnx.load(f, load_external_data=True)
    strip(mp, keep_namespace=os.path.basename(path).startswith("resnet18_"))
    onnx.save(mp, path)
    return mp


SETTINGS = {
    "dyn": {"dynamo": True, "optimize": True},
    "dynraw": {"dynamo": True, "optimize": False},
    "dynb": {"dynamo": True, "optimize": False, "dynamic_shapes": "dim 0 of every input"},
    "ts": {"dynamo": False, "training": "TrainingMode.TRAINING", "do_constant_folding": False,
           "opset_version": 17},
}


def versions():
    import onnxscript
    import torchvision
    import transformers
    return {"torch": torch.__version__, "torchvision": torchvision.__version__,
            "transformers": transformers.__version__, "onnx": onnx.__version__,
            "onnxscript": onnxscript.__version__}


# ---- small hand-made files: what the exporter writes, a node or two of each ----

def op_fixtures(out):
    """Writes torch2_split_seq.onnx (torch.split as SplitToSequence read by SequenceAt; and
    torch2_bad_split.onnx, whose sizes are more than the axis holds) and
    torch2_meta.onnx (PyTorch 2's node metadata: module paths, parameter and buffer
    placeholders, a folded parameter), small enough for the fuzzer's corpus too."""
    from onnx import TensorProto as T, helper as h, numpy_helper as nh
    import numpy as np

    def meta(node, scopes=None, namespace=None, fx=None):
        for k, v in (("pkg.torch.onnx.name_scopes", scopes), ("namespace", namespace),
                     ("pkg.torch.onnx.fx_node", fx)):
            if v is not None:
                e = node.metadata_props.add()
                e.key, e.value = k, v
        return node

    def save(nodes, inits, inputs, outputs, name):
        g = h.make_graph(nodes, name, inputs, outputs, initializer=inits)
        m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)], producer_name="pytorch",
                         producer_version=torch.__version__)
        m.ir_version = 10
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(out, name + ".onnx"))

    x = h.make_tensor_value_info("x", T.FLOAT, [2, 6, 4])
    nodes = [
        h.make_node("SplitToSequence", ["x", "sizes"], ["seq"], axis=1),
        h.make_node("SequenceAt", ["seq", "zero"], ["first"]),
        h.make_node("SequenceAt", ["seq", "minus1"], ["last"]),
        h.make_node("SplitToSequence", ["x", "four"], ["seq4"], axis=-2),
        h.make_node("SequenceAt", ["seq4", "one"], ["tail"]),
    ]
    inits = [nh.from_array(np.array([2, 4], np.int64), "sizes"),
             nh.from_array(np.array(0, np.int64), "zero"),
             nh.from_array(np.array(-1, np.int64), "minus1"),
             nh.from_array(np.array(4, np.int64), "four"),
             nh.from_array(np.array(1, np.int64), "one")]
    outs = [h.make_tensor_value_info(n, T.FLOAT, d) for n, d in
            (("first", [2, 2, 4]), ("last", [2, 4, 4]), ("tail", [2, 2, 4]))]
    save(nodes, inits, [x], outs, "torch2_split_seq")
    # a bad file: the sizes (4 + 4) are more than the axis holds (6)
    bad = [h.make_node("SplitToSequence", ["x", "sizes"], ["seq"], axis=1),
           h.make_node("SequenceAt", ["seq", "one"], ["second"])]
    save(bad, [nh.from_array(np.array([4, 4], np.int64), "sizes"),
               nh.from_array(np.array(1, np.int64), "one")], [x],
         [h.make_tensor_value_info("second", T.FLOAT, [2, 4, 4])], "torch2_bad_split")

    x = h.make_tensor_value_info("x", T.FLOAT, [2, 3, 8, 8])
    conv = meta(h.make_node("Conv", ["x", "conv.weight", "conv.weight_bias"], ["c"],
                            name="node_Conv_0", pads=[1, 1, 1, 1]),
                scopes="['', 'bn', '_native_batch_norm_legit_functional']",
                fx="%bn_out = call_function[target=torch.ops.aten._native_batch_norm_legit_"
                   "functional.default](args = (%conv2d, %p_bn_weight, %p_bn_bias, "
                   "%b_bn_running_mean, %b_bn_running_var, True, 0.1, 1e-05))")
    flat = meta(h.make_node("Reshape", ["c", "shape"], ["f"], name="node_view"),
                scopes="['', 'view']", fx="%view = call_function[...](args = (%bn_out, [2, -1]))")
    lin = meta(h.make_node("Gemm", ["f", "head.Linear.weight", "head.Linear.bias"], ["y"],
                           name="node_linear", transB=1),
               namespace=": Net/head.Linear: torch.nn.modules.linear.Linear/linear: "
                         "aten.linear.default",
               fx="%linear = call_function[target=torch.ops.aten.linear.default](args = "
                  "(%view, %p_head_linear_weight, %p_head_linear_bias))")
    scale = meta(h.make_node("Mul", ["y", "rope.inv_freq"], ["s"], name="node_mul"),
                 scopes="['', 'rope', 'mul']",
                 fx="%mul = call_function[target=torch.ops.aten.mul.Tensor](args = (%linear, "
                    "%b_rope_inv_freq))")
    table = meta(h.make_node("Add", ["s", "val_7"], ["z"], name="node_add"),
                 scopes="['', 'rope', 'add']",
                 fx="%add = call_function[target=torch.ops.aten.add.Tensor](args = (%mul, %cos))")
    inits = [nh.from_array(np.zeros((4, 3, 3, 3), np.float32), "conv.weight"),
             nh.from_array(np.zeros(4, np.float32), "conv.weight_bias"),
             nh.from_array(np.array([2, -1], np.int64), "shape"),
             nh.from_array(np.zeros((10, 256), np.float32), "head.Linear.weight"),
             nh.from_array(np.zeros(10, np.float32), "head.Linear.bias"),
             nh.from_array(np.ones(10, np.float32), "rope.inv_freq"),
             nh.from_array(np.ones((2, 10), np.float32), "val_7")]
    save([conv, flat, lin, scale, table], inits, [x],
         [h.make_tensor_value_info("z", T.FLOAT, [2, 10])], "torch2_meta")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--variants", default="dyn,dynraw,ts,dynb")
    ap.add_argument("--force", action="store_true", help="re-export files that exist")
    ap.add_argument("--restrip", action="store_true", help="only strip the files in --out again")
    ap.add_argument("--op-fixtures", action="store_true",
                    help="only write the small hand-made files (torch2_*.onnx)")
    ap.add_argument("--facts", action="store_true",
                    help="only recompute what PyTorch says, in the manifests that exist")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.op_fixtures:
        op_fixtures(a.out)
        return 0
    if a.restrip:
        for f in sorted(os.listdir(a.out)):
            if f.endswith(".onnx"):
                mp = onnx.load(os.path.join(a.out, f))
                strip(mp, keep_namespace=f.startswith("resnet18_"))
                onnx.save(mp, os.path.join(a.out, f))
        return 0
    torch.set_num_threads(1)
    ver = versions()
    for name in a.names or list(MODELS):
        variants = [v for v in a.variants.split(",") if a.force or a.facts or not os.path.exists(
            os.path.join(a.out, f"{name}_{v}.json"))]
        if not a.names and name not in DYNB_MODELS:
            variants = [v for v in variants if v != "dynb"]
        if not variants:
            continue
        torch.manual_seed(0)
        model, inputs = MODELS[name]()
        model.train()
        facts = pytorch_facts(model, inputs)
        if a.facts:
            for v in a.variants.split(","):
                path = os.path.join(a.out, f"{name}_{v}.json")
                if os.path.exists(path):
                    with open(path) as f:
                        man = json.load(f)
                    man.update(facts)
                    with open(path, "w") as f:
                        json.dump(man, f, indent=1, sort_keys=True)
                        f.write("\n")
            print(f"{name}: facts", flush=True)
            continue
        for v in variants:
            base = os.path.join(a.out, f"{name}_{v}")
            man = {"model": name, "class": type(model).__name__, "variant": v,
                   "exporter": SETTINGS[v], "versions": ver, "mode": "train",
                   "inputs": {k: {"shape": list(t.shape), "dtype": str(t.dtype).replace(
                       "torch.", "")} for k, t in inputs.items()},
                   **facts}
            t0 = time.time()
            try:
                model.train()
                mp = export(model, inputs, v, base + ".onnx")
                man["file"] = os.path.basename(base) + ".onnx"
                man["nodes"] = len(mp.graph.node)
                man["opset"] = {o.domain or "ai.onnx": o.version for o in mp.opset_import}
            except Exception as e:  # noqa: BLE001 - a failure is what the manifest records
                if os.path.exists(base + ".onnx"):
                    os.remove(base + ".onnx")
                msg = re.sub(r"\x1b\[[0-9;]*m", "", f"{type(e).__name__}: {e}")
                man["error"] = msg.strip().splitlines()[0][:400] if msg.strip() else type(e).__name__
                tb = traceback.format_exc().strip().splitlines()
                man["error_tail"] = [l[:200] for l in tb[-3:]]
            man["export_seconds"] = round(time.time() - t0, 1)
            with open(base + ".json", "w") as f:
                json.dump(man, f, indent=1, sort_keys=True)
                f.write("\n")
            print(f"{name}_{v}: {'FAILED ' + man['error'][:120] if 'error' in man else 'ok'} "
                  f"({man['export_seconds']} s)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
