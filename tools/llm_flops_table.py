#!/usr/bin/env python3
"""The FLOPs-per-token table of docs/zoo.md ("Language models"): every built-in language model
counted by flopmeter's CLI (`flopmeter count NAME --seq S --optimizer none --recompute R
--format json`, batch 1, a training step without the optimizer) at sequence 2048 and 8192, per
token of the sequence, from the count's JSON (`totals`, `by_class` and the language-model
figures under `llm`, docs/json.md):

  model      forward + backward FLOPs as flopmeter counts them (every op: products, norms,
             activations, softmax, the loss): `llm.model_flops`
  products   the matrix products alone (flopmeter's matmul, conv and attention MACs x 2): what
             PaLM's MFU (Chowdhery et al. 2022, appendix B) and FlopCounterMode count
  selective  `llm.hardware_flops` with --recompute selective (Korthikanti et al. 2022): model +
             every attention core's forward again
  full       `llm.hardware_flops` with --recompute full: model + every transformer layer's
             forward again
  flash      model + `llm.flash_backward_flops`: a FlashAttention backward (Dao et al. 2022)
             recomputes S = Q K^T
  6ND        `llm.nd_estimate` (Kaplan et al. 2020: N = the non-embedding parameters, active
             experts only) and `llm.nd_estimate_all_params` (N = every parameter), each with its
             error against `model`

A sequence beyond the model's max_position_embeddings is left out; a model whose positions end
below 2048 (GPT-2, BERT, T5) gets one row at its own maximum. No PyTorch is needed.

    python3 tools/llm_flops_table.py [path/to/flopmeter]
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_llm_builtins import BUILTINS  # noqa: E402

SEQS = (2048, 8192)


def max_pos(cfg):
    return cfg.get("max_position_embeddings") or cfg.get("n_positions") or 1 << 62


def count(cli, name, seq, recompute):
    out = subprocess.run([cli, "count", name, "--seq", str(seq), "--optimizer", "none",
                          "--recompute", recompute, "--format", "json"],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def per_token(cli, name, seq):
    j = count(cli, name, seq, "none")
    llm = j["llm"]
    ph = ("fwd", "bwd_data", "bwd_weight")
    model = llm["model_flops"]
    assert model == sum(j["totals"][p]["flops"] for p in ph)   # no optimizer: the step's work
    products = sum(2 * j["by_class"].get(c, {}).get(p, {}).get("macs", 0)
                   for c in ("matmul", "conv", "attention") for p in ph)
    hw = {r: count(cli, name, seq, r)["llm"]["hardware_flops"] for r in ("selective", "full")}
    t = llm["tokens"]
    return dict(model=model / t, products=products / t, selective=hw["selective"] / t,
                full=hw["full"] / t, flash=(model + llm["flash_backward_flops"]) / t,
                nd=llm["nd_estimate"] / t, nd_all=llm["nd_estimate_all_params"] / t)


def g(x):
    return f"{x / 1e9:.2f}"


def err(x, ref):
    return f"{100 * (x - ref) / ref:+.1f}%"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cli = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "flopmeter")
    print("| model | seq | model | products | selective | full | flash | 6ND (Kaplan) | "
          "6ND (all parameters) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, _, _, _, cfg in BUILTINS:
        seqs = [s for s in SEQS if s <= max_pos(cfg)] or [max_pos(cfg)]
        for seq in seqs:
            r = per_token(cli, name, seq)
            print(f"| {name} | {seq} | {g(r['model'])} | {g(r['products'])} | "
                  f"{g(r['selective'])} | {g(r['full'])} | {g(r['flash'])} | "
                  f"{g(r['nd'])} ({err(r['nd'], r['model'])}) | "
                  f"{g(r['nd_all'])} ({err(r['nd_all'], r['model'])}) |", flush=True)


if __name__ == "__main__":
    main()
