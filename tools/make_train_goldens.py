#!/usr/bin/python3
"""Golden data for tests/test_cpu_train.c: one training step of the GPT-2-like, BERT-like,
ViT-like and LLaMA-like networks of tools/export_train_models.py (the committed small exports in
tests/data/onnx/train/), in PyTorch, from the same weights and inputs.

For each network the model is built exactly as export_train_models.py builds it (same seed,
same weight fill), exported again with its weights kept, and every float initializer of that
export is written out under its ONNX name: the committed file has the same names (the export is
deterministic) with the payload stripped, so the test writes these values into flopmeter's
parameters before the step. Inputs are drawn here (token ids below the vocabulary, an attention
mask with the last 3 positions of the second sequence masked, token types 0/1; images standard
normal) and so are the labels of the loss flopmeter adds: next-token cross-entropy over every
position for the language models (logits viewed as (B*S, V), mean over positions), cross-entropy
over the classes for ViT.

Output (tests/data/goldens/train_<name>.txt), one record per line:
    <kind> <name> <count> <v1> <v2> ...
kind: init (a parameter's value, by ONNX initializer name), input (a graph input or the labels),
out (the network's output, row-major), loss, grad (d loss / d parameter, for the parameters whose
ONNX name is the PyTorch parameter's name: every vector and small matrix, and the first two
large ones). The weights are rounded to 4 significant digits before the step, so their records
state them exactly; outputs, the loss and gradients have 6 significant digits (the test's
tolerances are far above that rounding).

Run: /usr/bin/python3 tools/make_train_goldens.py   (Debian's python3-torch 1.13; CPU only)
"""
import io
import os
import sys

import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper
from torch.onnx import TrainingMode

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import export_train_models as etm  # noqa: E402

OUT = os.path.join(HERE, "..", "tests", "data", "goldens")
B, S = 2, 16


def fmt(v, digits=6):
    return " ".join(f"{float(x):.{digits}g}" for x in v)


def build(name):
    """The network as export_train_models.py builds it, its weights rounded to 4 significant
    digits (so that the golden file states them exactly in few characters)."""
    model, spec = etm.build(name, etm.SMALL)
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.dtype.is_floating_point:
                t.copy_(torch.tensor([float(f"{x:.4g}") for x in t.reshape(-1).tolist()])
                        .reshape(t.shape))
    return model, spec


def few(params):
    """The gradients written: every vector and small matrix, and the first two large ones."""
    out, large = [], 0
    for k, p in params.items():
        if p.numel() <= 4096:
            out.append(k)
        elif large < 2:
            out.append(k)
            large += 1
    return out


def main():
    torch.manual_seed(1234)
    for name in ("gpt2_small", "bert_small", "vit_small", "llama_small"):
        model, spec = build(name)
        # the ONNX names of the weights: the export of etm.export, kept unstripped
        if isinstance(spec, tuple):
            _, seq, vocab = spec
            ex_args, names = etm.lm_inputs(name, seq, vocab)
        else:
            ex_args, names = (torch.randn(1, 3, spec, spec),), ["input"]
        dyn = {n: ({0: "batch", 1: "seq"} if isinstance(spec, tuple) else {0: "batch"})
               for n in names}
        dyn["out"] = {0: "batch"}
        f = io.BytesIO()
        torch.onnx.export(model, ex_args, f, opset_version=17, input_names=names,
                          output_names=["out"], dynamic_axes=dyn, do_constant_folding=False,
                          training=TrainingMode.PRESERVE)
        inits = {t.name: numpy_helper.to_array(t) for t in onnx.load_from_string(f.getvalue())
                 .graph.initializer if t.data_type == onnx.TensorProto.FLOAT}
        # inputs of the step: ints written as such
        g = torch.Generator().manual_seed(7)
        if isinstance(spec, tuple):
            vocab = spec[2]
            ids = torch.randint(0, vocab, (B, S), generator=g)
            args, inputs = [ids], [("ids", ids)]
            if name.startswith("bert"):
                mask = torch.ones(B, S, dtype=torch.long)
                mask[1, -3:] = 0
                types = torch.zeros(B, S, dtype=torch.long)
                types[:, S // 2:] = 1
                args += [mask, types]
                inputs += [("attention_mask", mask), ("token_type_ids", types)]
            labels = torch.randint(0, vocab, (B * S,), generator=g)
        else:
            img = torch.randn(B, 3, spec, spec, generator=g)
            img = torch.tensor([float(f"{x:.4g}") for x in img.reshape(-1).tolist()]).reshape(img.shape)
            args, inputs = [img], [("input", img)]
            labels = torch.randint(0, 10, (B,), generator=g)
        inputs.append(("labels", labels))
        model.train()   # no Dropout in these networks: train and eval compute the same
        out = model(*args)
        logits = out.reshape(-1, out.shape[-1])
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        params = dict(model.named_parameters())
        path = os.path.join(OUT, f"train_{name}.txt")
        with open(path, "w") as fh:
            fh.write(f"# generated by tools/make_train_goldens.py with torch {torch.__version__}; "
                     "do not edit\n")
            for k, v in inits.items():
                fh.write(f"init {k} {v.size} {fmt(v.reshape(-1), 4)}\n")
            for k, v in inputs:
                fh.write(f"input {k} {v.numel()} {fmt(v.reshape(-1).tolist(), 4)}\n")
            fh.write(f"out out {out.numel()} {fmt(out.detach().reshape(-1).tolist())}\n")
            fh.write(f"loss loss 1 {loss.item():.9g}\n")
            n_grad = 0
            wanted = few({k: params[k] for k in inits if k in params})
            for k in wanted:
                if params[k].grad is not None:
                    gr = params[k].grad.reshape(-1)
                    fh.write(f"grad {k} {gr.numel()} {fmt(gr.tolist())}\n")
                    n_grad += 1
        print(path, len(inits), "initializers,", n_grad, "gradients, loss", f"{loss.item():.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
