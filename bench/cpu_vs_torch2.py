#!/usr/bin/env python3
"""flopmeter's CPU training step against the PyTorch a user installs today (PyPI's torch 2.x,
eager, and torch.compile where it works on the CPU), on ONNX files that same PyTorch exports.

    PY=/root/.cache/flopmeter/venv/bin/python   # torch 2.x, torchvision, transformers, onnx
    $PY bench/cpu_vs_torch2.py [--flopmeter build/flopmeter] [--threads 2] [--steps 5]
                               [--warmup 2] [--rounds 3] [--rows NAME:BATCH ...]
                               [--no-compile] [--optimize auto|on|off]

The full table for bench/RESULTS.md (about an hour on 2 cores; nothing else should run):

    $PY bench/cpu_vs_torch2.py --threads 2 --steps 5 --rounds 3

A quick check that everything works end to end (a minute or two):

    $PY bench/cpu_vs_torch2.py --rows mobilenet_v2:2 gpt2:1 --steps 2 --rounds 1 --no-compile

Every network is built in PyTorch (torchvision's classification models; HuggingFace models from
their configs, no weights downloaded), exported with torch.onnx.export(dynamo=True) in training
mode into a temporary folder, and timed three ways with the same thread count: `flopmeter
measure FILE --device cpu --no-per-layer` (its own warm-up and timed steps), the PyTorch module
in eager mode, and the module under torch.compile (skipped, saying why, where compiling fails).
Runs are interleaved: each round times flopmeter, then eager, then compiled, so that a slower
stretch of a shared machine hits all three alike; the reported figure is the median over rounds
of each round's median step.

A step is forward, the loss flopmeter's policy adds (cross-entropy over the classes for the
classifiers, next-token cross-entropy over every position for the decoders: the logits of all
B x S positions against B x S labels), backward, and SGD with momentum 0.9. The ratio is
PyTorch time / flopmeter time: above 1 flopmeter is faster.

Exports: the image models with optimize=False (optimize=True folds every BatchNorm into its
convolution, which is not the training graph); the transformers with optimize=True, whose
graph is the training graph too (no BatchNorm) and which flopmeter reads with every shape
known. --optimize on/off forces one setting for all rows.

Output: one line saying the machine, threads and versions, then a Markdown table.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import torch
import torch.nn.functional as F

SEQ = 128
IMAGE = 224

# name -> (family, default batch); batches small enough for a 2-core step of a few seconds
ROWS = [("resnet50", 4), ("mobilenet_v2", 8), ("efficientnet_b0", 8), ("convnext_tiny", 4),
        ("vit_b_16", 2), ("gpt2", 2), ("bert_base", 4), ("llama_decoder", 2)]
VISION = {"resnet50", "mobilenet_v2", "efficientnet_b0", "convnext_tiny", "vit_b_16"}


class Logits(torch.nn.Module):
    """A HuggingFace model's logits alone (one output, as the loss policy expects)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, ids):
        return self.m(input_ids=ids).logits


def build(name):
    """(module, example input, number of classes or vocabulary, is a decoder)"""
    if name in VISION:
        import torchvision
        m = getattr(torchvision.models, name)(num_classes=1000)
        return m, "image", 1000, False
    import transformers as tr
    if name == "gpt2":   # GPT-2 small
        cfg = tr.GPT2Config(use_cache=False)
        return Logits(tr.GPT2LMHeadModel(cfg)), "ids", cfg.vocab_size, True
    if name == "bert_base":   # BERT-base, a sequence classifier over 2 classes
        cfg = tr.BertConfig(num_labels=2)
        return Logits(tr.BertForSequenceClassification(cfg)), "ids", 2, False
    if name == "llama_decoder":   # a LLaMA-style decoder of GPT-2 small's size: RoPE, SwiGLU,
        # RMSNorm, grouped-query attention
        cfg = tr.LlamaConfig(hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
                             num_attention_heads=12, num_key_value_heads=4, vocab_size=32000,
                             max_position_embeddings=SEQ, use_cache=False)
        return Logits(tr.LlamaForCausalLM(cfg)), "ids", cfg.vocab_size, True
    raise SystemExit(f"unknown network {name}")


def example(kind, batch, classes):
    if kind == "image":
        return torch.randn(batch, 3, IMAGE, IMAGE)
    return torch.randint(0, 1000 if classes < 1000 else classes, (batch, SEQ))


def export(name, model, x, path, optimize):
    model.train()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), path, dynamo=True, optimize=optimize,
                          external_data=False, verbose=False)


def flopmeter_ms(exe, path, threads, steps, warmup):
    cmd = [exe, "measure", path, "--device", "cpu", "--threads", str(threads), "--steps",
           str(steps), "--warmup", str(warmup), "--no-per-layer", "--peak", "1e12",
           "--format", "json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        lines = (r.stderr.strip() or r.stdout.strip() or "no message").splitlines()
        return None, lines[-1][:300]
    return json.loads(r.stdout)["step_ms"]["median"], ""


class TorchStep:
    """One training step of the module, eager or compiled, on a fixed batch."""

    def __init__(self, model, x, classes, decoder, compiled):
        self.model = model.train()
        self.x = x
        n = x.shape[0] * x.shape[1] if decoder else x.shape[0]
        self.labels = torch.randint(0, classes, (n,))
        self.opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        self.fwd = torch.compile(model) if compiled else model

    def __call__(self):
        self.opt.zero_grad(set_to_none=True)
        out = self.fwd(self.x)
        F.cross_entropy(out.reshape(-1, out.shape[-1]), self.labels).backward()
        self.opt.step()

    def time(self, steps, warmup):
        for _ in range(warmup):
            self()
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            self()
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)


def fmt(ms):
    return "-" if ms is None else f"{ms:.0f}" if ms >= 10 else f"{ms:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flopmeter",
                    default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                         "build", "flopmeter"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", nargs="*", metavar="NAME:BATCH")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    ap.add_argument("--optimize", choices=["auto", "on", "off"], default="auto")
    args = ap.parse_args()
    table = ROWS
    names = [r[0] for r in ROWS]
    if args.rows:
        table = []
        for r in args.rows:
            name, _, b = r.partition(":")
            if name not in names or not b.isdigit() or int(b) < 1:
                ap.error(f"--rows {r}: want NAME:BATCH with NAME one of {', '.join(names)}")
            table.append((name, int(b)))
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"{datetime.date.today()}, {platform.processor() or platform.machine()}, "
          f"{args.threads} threads, torch {torch.__version__}, steps {args.steps} "
          f"(warm-up {args.warmup}), {args.rounds} interleaved rounds; command: "
          f"{' '.join(sys.argv)}\n")
    print("| network | batch | export | flopmeter ms | eager ms | eager / flopmeter | "
          "compile ms | compile / flopmeter |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, batch in table:
            model, kind, classes, decoder = build(name)
            x = example(kind, batch, classes)
            opt = (name not in VISION) if args.optimize == "auto" else args.optimize == "on"
            path = os.path.join(tmp, f"{name}_b{batch}.onnx")
            try:
                export(name, model, x, path, opt)
            except Exception as e:   # noqa: BLE001 - the row says why
                print(f"| {name} | {batch} | export failed: {str(e).splitlines()[0][:200]} "
                      "| | | | | |", flush=True)
                continue
            eager = TorchStep(model, x, classes, decoder, False)
            comp, comp_why = None, ""
            if not args.no_compile:
                try:
                    cm, _, _, _ = build(name)
                    cm.load_state_dict(model.state_dict())
                    comp = TorchStep(cm, x, classes, decoder, True)
                    comp()   # compiles now, outside the timed rounds
                except Exception as e:   # noqa: BLE001
                    comp, comp_why = None, str(e).splitlines()[0][:120]
            fm_r, ea_r, co_r, fm_why = [], [], [], ""
            for _ in range(args.rounds):
                ms, why = flopmeter_ms(args.flopmeter, path, args.threads, args.steps,
                                       args.warmup)
                if ms is None:
                    fm_why = why
                else:
                    fm_r.append(ms)
                ea_r.append(eager.time(args.steps, args.warmup))
                if comp:
                    co_r.append(comp.time(args.steps, args.warmup))
            fm = statistics.median(fm_r) if fm_r else None
            ea = statistics.median(ea_r)
            co = statistics.median(co_r) if co_r else None
            export_s = "optimize=True" if opt else "optimize=False"
            fm_s = fmt(fm) if fm is not None else f"failed: {fm_why}"
            co_s = fmt(co) if co is not None else (f"failed: {comp_why}" if comp_why else "-")
            print(f"| {name} | {batch} | {export_s} | {fm_s} | {fmt(ea)} | "
                  f"{'-' if fm is None else f'{ea / fm:.2f}'} | {co_s} | "
                  f"{'-' if fm is None or co is None else f'{co / fm:.2f}'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
