#!/usr/bin/env python3
"""The FLOPs-per-token table of docs/zoo.md ("Language models"): every built-in language model
counted by flopmeter's CLI (`flopmeter count NAME --seq S --format json`, batch 1, training, no
optimizer) at sequence 2048 and 8192, per token of the sequence:

  model      forward + backward FLOPs as flopmeter counts them (every op: products, norms,
             activations, softmax, the loss), the work the model's algorithm needs
  products   the matrix products alone (flopmeter's matmul, conv and attention MACs x 2): what
             PaLM's MFU (Chowdhery et al. 2022, appendix B) and FlopCounterMode count
  selective  hardware FLOPs with selective activation recomputation (Korthikanti et al. 2022):
             model + the forward of every attention core (scores, softmax, A V) again
  full       hardware FLOPs with full recomputation: model + the forward of every transformer
             layer again (embeddings, final norm, LM head and loss are not recomputed)
  flash      hardware FLOPs of a FlashAttention backward (Dao et al. 2022), which recomputes
             S = Q K^T and the softmax: model + each attention core's forward less its A V
             product
  6N         the 6 N D rule of thumb (Kaplan et al. 2020) per token, N = the parameters that
             multiply activations (every weight matrix, the LM head even when tied, routed
             experts at top_k / experts; not the embedding tables), and its error against
             `model`

The per-layer forward counts come from the CLI's `layers` (names are transformers' module
paths) and `by_class`. A sequence beyond the model's max_position_embeddings is left out; a
model whose positions end below 2048 (GPT-2, BERT, T5) gets one row at its own maximum.

    /root/.cache/flopmeter/venv/bin/python tools/llm_flops_table.py [path/to/flopmeter]
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_llm_builtins import BUILTINS  # noqa: E402

SEQS = (2048, 8192)
# a transformer layer's module path: decoders' model.layers.N, GPT-2's transformer.h.N,
# GPT-NeoX's gpt_neox.layers.N, BERT's encoder.layer.N, T5's encoder/decoder.block.N
LAYER = re.compile(r"(^|\.)(layers|h|layer|block)\.[0-9]+\.")


def matmul_params(cfg):
    """Parameters that multiply activations, routed experts at top_k / experts (transformers'
    model of the config on the meta device)."""
    import torch
    import transformers
    from transformers import AutoConfig
    kw = {k: v for k, v in cfg.items() if k not in ("architectures", "model_type")}
    c = AutoConfig.for_model(cfg["model_type"], **kw)
    with torch.device("meta"):
        m = getattr(transformers, cfg["architectures"][0])(c)
    experts = cfg.get("num_local_experts") or cfg.get("num_experts") or \
        cfg.get("n_routed_experts") or 0
    top_k = cfg.get("num_experts_per_tok") or 0
    n = 0.0
    seen = set()
    for mod_name, mod in m.named_modules():
        for pname, p in mod.named_parameters(recurse=False):
            if id(p) in seen:
                continue
            seen.add(id(p))
            if isinstance(mod, torch.nn.Embedding) or p.dim() < 2:
                continue   # lookup tables, norms and biases do no products
            frac = top_k / experts if experts and ".experts" in mod_name + "." + pname \
                and "shared" not in mod_name else 1.0
            n += p.numel() * frac
    if getattr(m.config, "tie_word_embeddings", False) and hasattr(m, "get_output_embeddings"):
        out = m.get_output_embeddings()
        if out is not None:
            n += out.weight.numel()   # the tied LM head still multiplies
    return n


def head_dims(cfg):
    """(D, Dv) of the attention products."""
    if cfg["model_type"] == "deepseek_v3":
        return cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    if cfg["model_type"] == "t5":
        return cfg["d_kv"], cfg["d_kv"]
    d = cfg.get("head_dim") or (cfg.get("hidden_size") or cfg.get("n_embd")) // \
        (cfg.get("num_attention_heads") or cfg.get("n_head"))
    return d, d


def max_pos(cfg):
    return cfg.get("max_position_embeddings") or cfg.get("n_positions") or 1 << 62


def count(cli, name, seq):
    out = subprocess.run([cli, "count", name, "--seq", str(seq), "--optimizer", "none",
                          "--by-module", "--format", "json"],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def per_token(cli, name, cfg, seq):
    j = count(cli, name, seq)
    ph = ("fwd", "bwd_data", "bwd_weight")
    model = sum(j["totals"][p]["flops"] for p in ph)
    products = sum(2 * j["by_class"].get(c, {}).get(p, {}).get("macs", 0)
                   for c in ("matmul", "conv", "attention") for p in ph)
    layer_fwd = sum(l["fwd"]["flops"] for l in j["layers"] if LAYER.search(l["name"] + "."))
    attn = [l for l in j["layers"] if l["class"] == "attention"]
    attn_fwd = sum(l["fwd"]["flops"] for l in attn)
    d, dv = head_dims(cfg)
    # an attention core's MACs are P*(D + Dv); its A V product is the P*Dv of them
    av = sum(2 * l["fwd"]["macs"] * dv // (d + dv) for l in attn)
    tokens = j["batch"] * seq
    return dict(model=model / tokens, products=products / tokens,
                selective=(model + attn_fwd) / tokens, full=(model + layer_fwd) / tokens,
                flash=(model + attn_fwd - av) / tokens)


def g(x):
    return f"{x / 1e9:.2f}"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cli = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "flopmeter")
    print("| model | seq | model GFLOPs/token | products | selective | full | flash | "
          "6N | 6N error |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, _, _, _, cfg in BUILTINS:
        n = matmul_params(cfg)
        seqs = [s for s in SEQS if s <= max_pos(cfg)] or [max_pos(cfg)]
        for seq in seqs:
            r = per_token(cli, name, cfg, seq)
            six = 6 * n
            print(f"| {name} | {seq} | {g(r['model'])} | {g(r['products'])} | "
                  f"{g(r['selective'])} | {g(r['full'])} | {g(r['flash'])} | {g(six)} | "
                  f"{100 * (six - r['model']) / r['model']:+.1f}% |", flush=True)


if __name__ == "__main__":
    main()
