#!/usr/bin/python3
"""flopmeter's CPU training step of ONNX exports against PyTorch eager, in one run: GPT-2 small
(batch 1, 2 and 4, sequence 128), BERT-base, a LLaMA-style decoder, ViT-B/16, ConvNeXt-T and
DenseNet-121, with the same thread count, warm-up and timed steps on both sides.

    /usr/bin/python3 bench/cpu_train_onnx.py [--flopmeter build/flopmeter] [--threads T]
                                             [--steps S] [--warmup W] [--only NAME ...]
                                             [--rows NAME:BATCH ...]

--rows replaces the table of rows (e.g. `--rows gpt2:2 vit_b_16:2`): the slow PyTorch rows
take minutes per step on a 2-core machine.

The networks are the ones tools/export_train_models.py --full writes (exported here into a
temporary folder): the same PyTorch module is timed by PyTorch and, through its ONNX export, by
`flopmeter measure FILE.onnx --device cpu --no-per-layer`. A step is forward, the loss
flopmeter's policy adds (next-token cross-entropy over every position for the language models,
cross-entropy over 1000 classes for the image models), backward and SGD with momentum 0.9. The
ratio is PyTorch time / flopmeter time: above 1 flopmeter is faster. PyTorch is Debian's
python3-torch (1.13, eager). Output: Markdown rows for bench/RESULTS.md.
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

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import export_train_models as etm  # noqa: E402

ROWS = [("gpt2", 1), ("gpt2", 2), ("gpt2", 4), ("bert_base", 4), ("llama_decoder", 2),
        ("vit_b_16", 8), ("convnext_tiny", 8), ("densenet121", 8)]
SEQ = 128


def flopmeter_ms(exe, path, name, batch, threads, steps, warmup):
    cmd = [exe, "measure", path, "--threads", str(threads), "--steps", str(steps), "--warmup",
           str(warmup), "--no-per-layer", "--peak", "1e12", "--format", "json"]
    spec = etm.FULL[name][1]
    if isinstance(spec, tuple):
        for inp in (["ids", "attention_mask", "token_type_ids"] if name.startswith("bert")
                    else ["ids"]):
            cmd += ["--input", f"{inp}={batch}x{SEQ}"]
    else:
        cmd += ["--batch", str(batch)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1][:300]
    return json.loads(r.stdout)["step_ms"]["median"], ""


def torch_ms(name, batch, threads, steps, warmup):
    torch.set_num_threads(threads)
    model, spec = etm.build(name, etm.FULL)
    model.train()
    if isinstance(spec, tuple):
        vocab = spec[2]
        ids = torch.randint(0, vocab, (batch, SEQ))
        args = [ids]
        if name.startswith("bert"):
            args += [torch.ones(batch, SEQ, dtype=torch.long),
                     torch.zeros(batch, SEQ, dtype=torch.long)]
        labels = torch.randint(0, vocab, (batch * SEQ,))
    else:
        args = [torch.randn(batch, 3, spec, spec)]
        labels = torch.randint(0, 1000, (batch,))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad(set_to_none=True)
        out = model(*args)
        F.cross_entropy(out.reshape(-1, out.shape[-1]), labels).backward()
        opt.step()
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flopmeter", default=os.path.join(HERE, "..", "build", "flopmeter"))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--rows", nargs="*", metavar="NAME:BATCH")
    args = ap.parse_args()
    table = ROWS
    if args.rows:
        table = []
        for r in args.rows:
            name, _, b = r.partition(":")
            if name not in etm.FULL or not b.isdigit() or int(b) < 1:
                ap.error(f"--rows {r}: want NAME:BATCH with NAME one of {', '.join(etm.FULL)}")
            table.append((name, int(b)))
    rows = [r for r in table if not args.only or r[0] in args.only]
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted({r[0] for r in rows}):
            m = etm.export(name, *etm.FULL[name], 17)
            import onnx
            onnx.save(m, os.path.join(tmp, name + ".onnx"))
        print(f"{datetime.date.today()}, {platform.processor() or platform.machine()}, "
              f"{args.threads} threads, torch {torch.__version__}, steps {args.steps} "
              f"(warm-up {args.warmup}); command: {' '.join(sys.argv)}\n")
        print("| network | batch | flopmeter ms | PyTorch ms | ratio |")
        print("|---|---:|---:|---:|---:|")
        for name, batch in rows:
            fm, why = flopmeter_ms(args.flopmeter, os.path.join(tmp, name + ".onnx"), name,
                                   batch, args.threads, args.steps, args.warmup)
            pt = torch_ms(name, batch, args.threads, args.steps, args.warmup)
            if fm is None:
                print(f"| {name} | {batch} | failed: {why} | {pt:.0f} | - |", flush=True)
            else:
                print(f"| {name} | {batch} | {fm:.0f} | {pt:.0f} | {pt / fm:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
