#!/usr/bin/env python3
"""The built-in language-model configs of src/frontend/llm/builtin.c, in one table, and the
check that each is the published model.

Each built-in is the text of the model's published config.json (the fields that change the
graph, as the model's HuggingFace repository publishes them; fields that change no count, such
as token ids, rope_scaling, dropout and initializer ranges, are left out), so that flopmeter's
one config reader (fm_llm_config_parse) serves files and built-ins alike. GPT-3 has no
HuggingFace config: its row is Brown et al. 2020, table 2.1, written as a GPT-2 config.

This script
  1. builds every config with transformers on the "meta" device (no memory, no weights) and
     checks its parameter count against the size its publisher states (the model card, the
     safetensors index's total, or the paper), and
  2. writes src/frontend/llm/builtin_table.h, the table builtin.c includes.

    /root/.cache/flopmeter/venv/bin/python tools/make_llm_builtins.py [--check] [--markdown]

--check writes nothing; --markdown prints the built-ins' table of docs/zoo.md.
"""
import json
import os
import sys

# (name, source, published parameters, how exact that figure is, config.json fields)
# DeepSeek-V3's checkpoint holds 671,026,419,200 numbers without the MTP module: 58 x 256 of them
# are the MoE layers' e_score_correction_bias, a buffer (not a parameter) in transformers' model
# and in flopmeter's count.
# "exact" figures are the safetensors total of the HF repository (or the count HF's own model
# makes from the published config); "approx" ones are the publisher's rounded size, checked to
# its last published digit.
LLAMA = dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_act="silu",
             rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=False,
             mlp_bias=False)
L2 = dict(LLAMA, vocab_size=32000, max_position_embeddings=4096, rope_theta=10000.0)
L3 = dict(LLAMA, vocab_size=128256, max_position_embeddings=8192, rope_theta=500000.0)
L31 = dict(L3, max_position_embeddings=131072)

BUILTINS = [
    ("llama-2-7b", "meta-llama/Llama-2-7b-hf config.json", 6738415616, "exact",
     dict(L2, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
          num_attention_heads=32, num_key_value_heads=32)),
    ("llama-2-13b", "meta-llama/Llama-2-13b-hf config.json", 13015864320, "exact",
     dict(L2, hidden_size=5120, intermediate_size=13824, num_hidden_layers=40,
          num_attention_heads=40, num_key_value_heads=40)),
    ("llama-2-70b", "meta-llama/Llama-2-70b-hf config.json", 68976648192, "exact",
     dict(L2, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
          num_attention_heads=64, num_key_value_heads=8)),
    ("llama-3-8b", "meta-llama/Meta-Llama-3-8B config.json", 8030261248, "exact",
     dict(L3, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
          num_attention_heads=32, num_key_value_heads=8)),
    ("llama-3-70b", "meta-llama/Meta-Llama-3-70B config.json", 70553706496, "exact",
     dict(L3, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
          num_attention_heads=64, num_key_value_heads=8)),
    ("llama-3.1-8b", "meta-llama/Llama-3.1-8B config.json", 8030261248, "exact",
     dict(L31, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
          num_attention_heads=32, num_key_value_heads=8)),
    ("llama-3.1-70b", "meta-llama/Llama-3.1-70B config.json", 70553706496, "exact",
     dict(L31, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
          num_attention_heads=64, num_key_value_heads=8)),
    ("llama-3.1-405b", "meta-llama/Llama-3.1-405B config.json", 405853388800, "exact",
     dict(L31, hidden_size=16384, intermediate_size=53248, num_hidden_layers=126,
          num_attention_heads=128, num_key_value_heads=8, rms_norm_eps=1e-5)),
    ("mistral-7b", "mistralai/Mistral-7B-v0.1 config.json", 7241732096, "exact",
     dict(architectures=["MistralForCausalLM"], model_type="mistral", vocab_size=32000,
          hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
          num_attention_heads=32, num_key_value_heads=8, hidden_act="silu",
          max_position_embeddings=32768, rms_norm_eps=1e-5, rope_theta=10000.0,
          sliding_window=4096, tie_word_embeddings=False)),
    ("mixtral-8x7b", "mistralai/Mixtral-8x7B-v0.1 config.json", 46702792704, "exact",
     dict(architectures=["MixtralForCausalLM"], model_type="mixtral", vocab_size=32000,
          hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
          num_attention_heads=32, num_key_value_heads=8, hidden_act="silu",
          max_position_embeddings=32768, rms_norm_eps=1e-5, rope_theta=1000000.0,
          sliding_window=None, num_local_experts=8, num_experts_per_tok=2,
          tie_word_embeddings=False)),
    ("mixtral-8x22b", "mistralai/Mixtral-8x22B-v0.1 config.json", 140620634112, "exact",
     dict(architectures=["MixtralForCausalLM"], model_type="mixtral", vocab_size=32000,
          hidden_size=6144, intermediate_size=16384, num_hidden_layers=56,
          num_attention_heads=48, num_key_value_heads=8, hidden_act="silu",
          max_position_embeddings=65536, rms_norm_eps=1e-5, rope_theta=1000000.0,
          sliding_window=None, num_local_experts=8, num_experts_per_tok=2,
          tie_word_embeddings=False)),
    ("qwen2.5-7b", "Qwen/Qwen2.5-7B config.json", 7615616512, "exact",
     dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2", vocab_size=152064,
          hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
          num_attention_heads=28, num_key_value_heads=4, hidden_act="silu",
          max_position_embeddings=131072, rms_norm_eps=1e-6, rope_theta=1000000.0,
          use_sliding_window=False, sliding_window=131072, max_window_layers=28,
          tie_word_embeddings=False)),
    ("qwen2.5-72b", "Qwen/Qwen2.5-72B config.json", 72706203648, "exact",
     dict(architectures=["Qwen2ForCausalLM"], model_type="qwen2", vocab_size=152064,
          hidden_size=8192, intermediate_size=29568, num_hidden_layers=80,
          num_attention_heads=64, num_key_value_heads=8, hidden_act="silu",
          max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=1000000.0,
          use_sliding_window=False, sliding_window=131072, max_window_layers=80,
          tie_word_embeddings=False)),
    ("qwen3-8b", "Qwen/Qwen3-8B config.json", 8190735360, "exact",
     dict(architectures=["Qwen3ForCausalLM"], model_type="qwen3", vocab_size=151936,
          hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
          num_attention_heads=32, num_key_value_heads=8, head_dim=128, hidden_act="silu",
          max_position_embeddings=40960, rms_norm_eps=1e-6, rope_theta=1000000.0,
          attention_bias=False, use_sliding_window=False, sliding_window=None,
          max_window_layers=36, tie_word_embeddings=False)),
    ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B config.json", 30532122624, "exact",
     dict(architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe", vocab_size=151936,
          hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768,
          num_hidden_layers=48, num_attention_heads=32, num_key_value_heads=4, head_dim=128,
          hidden_act="silu", max_position_embeddings=40960, rms_norm_eps=1e-6,
          rope_theta=1000000.0, attention_bias=False, num_experts=128,
          num_experts_per_tok=8, norm_topk_prob=True, decoder_sparse_step=1,
          mlp_only_layers=[], use_sliding_window=False, sliding_window=None,
          max_window_layers=48, tie_word_embeddings=False)),
    ("qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B config.json", 235093634560, "exact",
     dict(architectures=["Qwen3MoeForCausalLM"], model_type="qwen3_moe", vocab_size=151936,
          hidden_size=4096, intermediate_size=12288, moe_intermediate_size=1536,
          num_hidden_layers=94, num_attention_heads=64, num_key_value_heads=4, head_dim=128,
          hidden_act="silu", max_position_embeddings=40960, rms_norm_eps=1e-6,
          rope_theta=1000000.0, attention_bias=False, num_experts=128,
          num_experts_per_tok=8, norm_topk_prob=True, decoder_sparse_step=1,
          mlp_only_layers=[], use_sliding_window=False, sliding_window=None,
          max_window_layers=94, tie_word_embeddings=False)),
    ("gemma-2-9b", "google/gemma-2-9b config.json", 9241705984, "exact",
     dict(architectures=["Gemma2ForCausalLM"], model_type="gemma2", vocab_size=256000,
          hidden_size=3584, intermediate_size=14336, num_hidden_layers=42,
          num_attention_heads=16, num_key_value_heads=8, head_dim=256,
          hidden_activation="gelu_pytorch_tanh", hidden_act="gelu_pytorch_tanh",
          max_position_embeddings=8192, rms_norm_eps=1e-6, rope_theta=10000.0,
          sliding_window=4096, query_pre_attn_scalar=256, attn_logit_softcapping=50.0,
          final_logit_softcapping=30.0, attention_bias=False, tie_word_embeddings=True)),
    ("gemma-2-27b", "google/gemma-2-27b config.json", 27227128320, "exact",
     dict(architectures=["Gemma2ForCausalLM"], model_type="gemma2", vocab_size=256000,
          hidden_size=4608, intermediate_size=36864, num_hidden_layers=46,
          num_attention_heads=32, num_key_value_heads=16, head_dim=128,
          hidden_activation="gelu_pytorch_tanh", hidden_act="gelu_pytorch_tanh",
          max_position_embeddings=8192, rms_norm_eps=1e-6, rope_theta=10000.0,
          sliding_window=4096, query_pre_attn_scalar=144, attn_logit_softcapping=50.0,
          final_logit_softcapping=30.0, attention_bias=False, tie_word_embeddings=True)),
    ("phi-3-mini", "microsoft/Phi-3-mini-4k-instruct config.json", 3821079552, "exact",
     dict(architectures=["Phi3ForCausalLM"], model_type="phi3", vocab_size=32064,
          hidden_size=3072, intermediate_size=8192, num_hidden_layers=32,
          num_attention_heads=32, num_key_value_heads=32, hidden_act="silu",
          max_position_embeddings=4096, original_max_position_embeddings=4096,
          rms_norm_eps=1e-5, rope_theta=10000.0, sliding_window=2047,
          tie_word_embeddings=False)),
    ("gpt2", "openai-community/gpt2 config.json (GPT-2 small, 124M)", 124439808, "exact",
     dict(architectures=["GPT2LMHeadModel"], model_type="gpt2", vocab_size=50257, n_embd=768,
          n_layer=12, n_head=12, n_positions=1024, n_ctx=1024, n_inner=None,
          activation_function="gelu_new", layer_norm_epsilon=1e-5)),
    ("gpt2-xl", "openai-community/gpt2-xl config.json (1.5B)", 1557611200, "exact",
     dict(architectures=["GPT2LMHeadModel"], model_type="gpt2", vocab_size=50257, n_embd=1600,
          n_layer=48, n_head=25, n_positions=1024, n_ctx=1024, n_inner=None,
          activation_function="gelu_new", layer_norm_epsilon=1e-5)),
    ("gpt3-175b", "Brown et al. 2020 (arXiv:2005.14165), table 2.1, as a GPT-2 config: 96 "
     "layers, d_model 12288, 96 heads, context 2048, vocabulary 50257; dense attention in every "
     "layer", 175e9, "approx",
     dict(architectures=["GPT2LMHeadModel"], model_type="gpt2", vocab_size=50257,
          n_embd=12288, n_layer=96, n_head=96, n_positions=2048, n_ctx=2048, n_inner=None,
          activation_function="gelu_new", layer_norm_epsilon=1e-5)),
    ("pythia-6.9b", "EleutherAI/pythia-6.9b config.json", 6857302016, "exact",
     dict(architectures=["GPTNeoXForCausalLM"], model_type="gpt_neox", vocab_size=50432,
          hidden_size=4096, intermediate_size=16384, num_hidden_layers=32,
          num_attention_heads=32, hidden_act="gelu", max_position_embeddings=2048,
          rotary_pct=0.25, rotary_emb_base=10000, use_parallel_residual=True,
          layer_norm_eps=1e-5, tie_word_embeddings=False)),
    ("deepseek-v3", "deepseek-ai/DeepSeek-V3 config.json, without the multi-token prediction "
     "module (14B more parameters, not part of the 671B)", 671026419200 - 58 * 256, "exact",
     dict(architectures=["DeepseekV3ForCausalLM"], model_type="deepseek_v3", vocab_size=129280,
          hidden_size=7168, intermediate_size=18432, moe_intermediate_size=2048,
          num_hidden_layers=61, num_attention_heads=128, num_key_value_heads=128,
          n_shared_experts=1, n_routed_experts=256, num_experts_per_tok=8, n_group=8,
          topk_group=4, first_k_dense_replace=3, moe_layer_freq=1, norm_topk_prob=True,
          routed_scaling_factor=2.5, scoring_func="sigmoid", topk_method="noaux_tc",
          q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
          v_head_dim=128, hidden_act="silu", max_position_embeddings=163840,
          rms_norm_eps=1e-6, rope_theta=10000.0, attention_bias=False,
          tie_word_embeddings=False)),
    ("bert-base", "google-bert/bert-base-uncased config.json", 109514298,
     "exact",
     dict(architectures=["BertForMaskedLM"], model_type="bert", vocab_size=30522,
          hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
          intermediate_size=3072, hidden_act="gelu", max_position_embeddings=512,
          type_vocab_size=2, layer_norm_eps=1e-12, position_embedding_type="absolute")),
    ("bert-large", "google-bert/bert-large-uncased config.json",
     335174458, "exact",
     dict(architectures=["BertForMaskedLM"], model_type="bert", vocab_size=30522,
          hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
          intermediate_size=4096, hidden_act="gelu", max_position_embeddings=512,
          type_vocab_size=2, layer_norm_eps=1e-12, position_embedding_type="absolute")),
    ("t5-base", "google-t5/t5-base config.json", 222903552, "exact",
     dict(architectures=["T5ForConditionalGeneration"], model_type="t5", vocab_size=32128,
          d_model=768, d_kv=64, d_ff=3072, num_layers=12, num_decoder_layers=12, num_heads=12,
          relative_attention_num_buckets=32, relative_attention_max_distance=128,
          feed_forward_proj="relu", layer_norm_epsilon=1e-6, n_positions=512,
          tie_word_embeddings=True, is_encoder_decoder=True)),
    ("t5-11b", "google-t5/t5-11b config.json", 11307321344, "exact",
     dict(architectures=["T5ForConditionalGeneration"], model_type="t5", vocab_size=32128,
          d_model=1024, d_kv=128, d_ff=65536, num_layers=24, num_decoder_layers=24,
          num_heads=128, relative_attention_num_buckets=32, relative_attention_max_distance=128,
          feed_forward_proj="relu", layer_norm_epsilon=1e-6, n_positions=512,
          tie_word_embeddings=True, is_encoder_decoder=True)),
]


def hf_params(cfg):
    """The parameter count of transformers' own model for the config, built on the meta
    device (no memory, no weights)."""
    import torch
    import transformers
    from transformers import AutoConfig
    kw = {k: v for k, v in cfg.items() if k not in ("architectures", "model_type")}
    c = AutoConfig.for_model(cfg["model_type"], **kw)
    cls = getattr(transformers, cfg["architectures"][0])
    with torch.device("meta"):
        m = cls(c)
    return sum(p.numel() for p in m.parameters())


def c_string(s, sep=", ", indent="     ", width=92):
    """s as C string literals of at most width characters a line, split after sep."""
    esc = s.replace("\\", "\\\\").replace('"', '\\"')
    parts, cur = [], ""
    for piece in esc.split(sep):
        add = piece if not cur else sep + piece
        if cur and len(indent) + len(cur) + len(add) + 3 > width:
            parts.append(cur + sep.rstrip())
            cur = " " + piece
        else:
            cur += add
    parts.append(cur)
    return ("\n" + indent).join('"' + p + '"' for p in parts)


def write_table(path):
    lines = [
        "/* Generated by tools/make_llm_builtins.py from its table: do not edit. Each built-in",
        " * language model is its published config.json (the fields that change the graph), read",
        " * by the same reader as a file. */",
        "struct llm_builtin_row {",
        "    const char *name, *source, *json;",
        "};",
        "static const struct llm_builtin_row llm_builtins[] = {",
    ]
    for name, source, _, _, cfg in BUILTINS:
        text = json.dumps(cfg, separators=(", ", ": "))
        lines.append("    {%s,\n     %s,\n     %s}," % (c_string(name), c_string(source, " "),
                                                     c_string(text)))
    lines.append("};")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def markdown(counts):
    print("| name | architecture | parameters | source |")
    print("|---|---|---|---|")
    for (name, source, _, _, cfg), got in zip(BUILTINS, counts):
        repo, _, rest = source.partition(" ")
        if "/" in repo and not repo.endswith(","):   # a HuggingFace repository id: link it
            source = f"[{repo}](https://huggingface.co/{repo}) {rest}".strip()
        print(f"| {name} | {cfg['architectures'][0]} | {got:,d} | {source} |")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad = 0
    counts = []
    for name, _, published, how, cfg in BUILTINS:
        got = hf_params(cfg)
        counts.append(got)
        ok = got == published if how == "exact" else abs(got - published) / published < 0.01
        bad += not ok
        print(f"{name:16s} {got:>16,d}  published {int(published):>16,d} ({how})"
              f"{'' if ok else '  MISMATCH'}")
    if "--markdown" in sys.argv:
        markdown(counts)
    if "--check" not in sys.argv:
        write_table(os.path.join(root, "src", "frontend", "llm", "builtin_table.h"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
