#!/usr/bin/env python3
"""Oracle fixtures for flopmeter's language-model builder (src/frontend/llm/), made by
HuggingFace transformers and PyTorch's FlopCounterMode.

For every architecture the builder knows, this builds a SMALL model from a config (never any
weights: `from_config` with random initialization), runs one forward pass with labels (the
model's own loss) and one backward pass at a fixed batch and sequence, and writes
tests/data/llm/<arch>/:

  config.json    the config exactly as transformers writes it (`config.to_json_string()`): a
                 real HF config.json that flopmeter's config reader must read
  expected.json  what transformers and PyTorch report for that model:
                   parameters            sum(p.numel() for p in model.parameters()) (tied once)
                   trainable_parameters  the same over parameters that require a gradient
                   forward_flops         FlopCounterMode's total over the forward pass
                   train_flops           FlopCounterMode's total over forward + backward
                   forward_by_op, train_by_op    the totals by aten op
                   forward_by_module     the forward total by module (FlopCounterMode's
                                         hierarchy; its backward attribution to modules is
                                         not reliable, so none is recorded)
                   odd_shape             the forward and forward + backward totals at batch 1
                                         and an odd sequence (17; T5's target 23)
                   decode_forward_flops  FlopCounterMode's forward FLOPs of one decoding step:
                                         a new token per sequence against a KV cache of
                                         decode_cache tokens (causal LMs: seq; T5: the
                                         decoder_seq target tokens of the self-attention cache,
                                         beside the cross-attention K/V of the encoder output
                                         of decode_encoder_seq = seq tokens, both cached by the
                                         prefill as transformers' EncoderDecoderCache keeps
                                         them: the step runs the decoder only)
                   default               the same totals with transformers' DEFAULT attention
                                         and experts implementations (what a user gets)

The counted run uses attn_implementation="eager" (attention as two matmuls that
FlopCounterMode counts like flopmeter's attention) and, for mixture-of-experts models, the
"eager" experts implementation (a loop over the experts hit, each an F.linear over its routed
tokens; the sum over experts is tokens * top_k rows whatever the routing). Transformers 5's
default experts implementation runs the experts through torch._grouped_mm, which
FlopCounterMode (PyTorch 2.15) has no formula for and counts as 0: the "default" block records
that.

FlopCounterMode counts matrix products only (mm, addmm, bmm, baddbmm, convolution,
scaled_dot_product_attention and their backward): a FLOP is 2 x a multiply-accumulate.
Everything else (norms, activations, softmax, the loss, embedding lookups) counts 0.

Run on the CPU (a few seconds; nothing is downloaded):

    /root/.cache/flopmeter/venv/bin/python tools/make_llm_oracle.py [outdir]
"""
import copy
import json
import os
import sys

import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode
from transformers import (AutoModelForCausalLM, BertConfig, BertForMaskedLM, DeepseekV3Config,
                          Gemma2Config, GemmaConfig, GPT2Config, GPTNeoXConfig, LlamaConfig,
                          MistralConfig, MixtralConfig, Phi3Config, Qwen2Config,
                          Qwen2MoeConfig, Qwen3Config, Qwen3MoeConfig, T5Config,
                          T5ForConditionalGeneration)

BATCH = 2
SEQ = 32
T5_DECODER_SEQ = 16
VOCAB = 320

# Every architecture of src/frontend/llm/llm.h, each a small config that still exercises what
# the architecture does differently: grouped-query attention and a head_dim that is not
# hidden / heads where the config allows it, sliding windows shorter than SEQ (so whether a
# count honours the window shows), MoE with shared experts and dense layers.
CASES = [
    ("llama", LlamaConfig, dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=128,
        tie_word_embeddings=False)),
    ("mistral", MistralConfig, dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=128,
        sliding_window=16, tie_word_embeddings=False)),
    ("mixtral", MixtralConfig, dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=128,
        num_local_experts=4, num_experts_per_tok=2, sliding_window=None,
        tie_word_embeddings=False)),
    ("qwen2", Qwen2Config, dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        tie_word_embeddings=True)),
    ("qwen2_moe", Qwen2MoeConfig, dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=160, num_hidden_layers=3,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        num_experts=4, num_experts_per_tok=2, moe_intermediate_size=48,
        shared_expert_intermediate_size=96, decoder_sparse_step=1, mlp_only_layers=[1],
        norm_topk_prob=False, tie_word_embeddings=False)),
    ("qwen3", Qwen3Config, dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=128,
        tie_word_embeddings=False)),
    ("qwen3_moe", Qwen3MoeConfig, dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=128,
        num_experts=8, num_experts_per_tok=2, moe_intermediate_size=48, decoder_sparse_step=1,
        mlp_only_layers=[], norm_topk_prob=True, tie_word_embeddings=False)),
    ("gemma", GemmaConfig, dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, head_dim=32, max_position_embeddings=128,
        hidden_activation="gelu_pytorch_tanh")),
    ("gemma2", Gemma2Config, dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=160, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=128,
        sliding_window=16, query_pre_attn_scalar=32, attn_logit_softcapping=50.0,
        final_logit_softcapping=30.0, hidden_activation="gelu_pytorch_tanh")),
    ("phi3", Phi3Config, dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        original_max_position_embeddings=128, sliding_window=None, pad_token_id=0,
        bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)),
    ("gpt2", GPT2Config, dict(
        vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=128, bos_token_id=1,
        eos_token_id=2)),
    ("gpt_neox", GPTNeoXConfig, dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=128, rotary_pct=0.25,
        use_parallel_residual=True, tie_word_embeddings=False)),
    ("deepseek_v3", DeepseekV3Config, dict(
        vocab_size=VOCAB, hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
        num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=4,
        n_shared_experts=1, n_routed_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1,
        first_k_dense_replace=1, q_lora_rank=32, kv_lora_rank=24, qk_nope_head_dim=16,
        qk_rope_head_dim=8, v_head_dim=16, max_position_embeddings=128, num_mtp_layers=0,
        tie_word_embeddings=False)),
    ("bert", BertConfig, dict(
        vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, max_position_embeddings=128, type_vocab_size=2)),
    ("t5", T5Config, dict(
        vocab_size=VOCAB, d_model=64, d_kv=24, d_ff=128, num_layers=2, num_decoder_layers=3,
        num_heads=4, relative_attention_num_buckets=8, relative_attention_max_distance=32,
        feed_forward_proj="relu", tie_word_embeddings=True, decoder_start_token_id=0,
        pad_token_id=0)),
]

MOE = {"mixtral", "qwen2_moe", "qwen3_moe", "deepseek_v3"}


def build(name, cls, kw, attn, experts):
    torch.manual_seed(0)
    cfg = cls(**kw)
    if name == "bert":
        model = BertForMaskedLM._from_config(cfg, attn_implementation=attn) if attn else \
            BertForMaskedLM(cfg)
    elif name == "t5":
        model = T5ForConditionalGeneration._from_config(cfg, attn_implementation=attn) if attn \
            else T5ForConditionalGeneration(cfg)
    else:
        extra = {}
        if attn:
            extra["attn_implementation"] = attn
        if experts and name in MOE:
            extra["experts_implementation"] = experts
        model = AutoModelForCausalLM.from_config(cfg, **extra)
    model.eval()   # no dropout (FlopCounterMode counts none of it anyway): deterministic
    return cfg, model


def inputs(name, batch=BATCH, seq=SEQ, decoder_seq=T5_DECODER_SEQ):
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, VOCAB, (batch, seq), generator=g)
    if name == "t5":
        labels = torch.randint(3, VOCAB, (batch, decoder_seq), generator=g)
        return dict(input_ids=ids, labels=labels)
    return dict(input_ids=ids, labels=ids.clone())


# a second shape: one sequence of an odd length (T5: a longer target than source)
ODD = dict(batch=1, seq=17, decoder_seq=23)


def count_totals(name, model, **shape):
    """FlopCounterMode's forward and forward + backward totals at another shape."""
    x = inputs(name, **shape)
    model.zero_grad(set_to_none=True)
    with FlopCounterMode(display=False) as fc:
        out = model(**x)
        fwd = fc.get_total_flops()
        out.loss.backward()
    return dict(shape, forward_flops=int(fwd), train_flops=int(fc.get_total_flops()))


def totals(counts):
    """FlopCounterMode.get_flop_counts() -> ({op: flops} of the whole, {module: flops})."""
    by_op = {}
    by_module = {}
    for module, ops in counts.items():
        s = sum(int(v) for v in ops.values())
        if module == "Global":
            by_op = {str(k): int(v) for k, v in sorted(ops.items(), key=lambda kv: str(kv[0]))}
        elif s:
            by_module[module] = s
    return by_op, dict(sorted(by_module.items()))


def count(name, model):
    x = inputs(name)
    model.zero_grad(set_to_none=True)
    with FlopCounterMode(display=False, depth=None) as fc:
        out = model(**x)
        fwd_total = fc.get_total_flops()
        fwd_counts = copy.deepcopy(fc.get_flop_counts())
        out.loss.backward()
    train_total = fc.get_total_flops()
    fwd_by_op, fwd_by_module = totals(fwd_counts)
    train_by_op, train_by_module = totals(fc.get_flop_counts())
    return dict(forward_flops=int(fwd_total), train_flops=int(train_total),
                forward_by_op=fwd_by_op, train_by_op=train_by_op,
                forward_by_module=fwd_by_module, train_by_module=train_by_module,
                loss=float(out.loss.detach()))


def count_decode(name, model):
    """FlopCounterMode's forward FLOPs of one decoding step: a new token per sequence against
    the KV cache of SEQ tokens (the cache filled by a forward outside the counter)."""
    x = inputs(name)["input_ids"]
    with torch.no_grad():
        past = model(input_ids=x, use_cache=True).past_key_values
        new = torch.full((BATCH, 1), 5, dtype=torch.long)
        with FlopCounterMode(display=False) as fc:
            model(input_ids=new, past_key_values=past, use_cache=True)
    return int(fc.get_total_flops())


def count_decode_t5(model):
    """The same for T5: the prefill (outside the counter) runs the encoder over SEQ source
    tokens and the decoder over T5_DECODER_SEQ target tokens, filling the EncoderDecoderCache
    (self-attention K/V of the target, cross-attention K/V of the encoder output); the counted
    step feeds one new target token per sequence with the encoder output and that cache, so
    only the decoder runs and the cross-attention reuses its cached K/V."""
    x = inputs("t5")
    with torch.no_grad():
        dec = model._shift_right(x["labels"])
        out = model(input_ids=x["input_ids"], decoder_input_ids=dec, use_cache=True)
        past = out.past_key_values
        enc = transformers.modeling_outputs.BaseModelOutput(
            last_hidden_state=out.encoder_last_hidden_state)
        assert past.get_seq_length() == T5_DECODER_SEQ
        new = torch.full((BATCH, 1), 5, dtype=torch.long)
        with FlopCounterMode(display=False) as fc:
            model(decoder_input_ids=new, encoder_outputs=enc, past_key_values=past,
                  use_cache=True)
    return int(fc.get_total_flops())


LOSS = {
    "bert": "masked-LM cross-entropy over every position (labels = input_ids, none ignored): "
            "batch * seq tokens",
    "t5": "cross-entropy over every decoder position (decoder_input_ids = labels shifted "
          "right inside the model): batch * decoder_seq tokens",
}
CAUSAL_LOSS = ("next-token cross-entropy: the model computes logits at all batch * seq "
               "positions, and the loss shifts the labels by one inside (ForCausalLMLoss), so "
               "it averages over batch * (seq - 1) tokens")


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests", "data", "llm")
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    for name, cls, kw in CASES:
        cfg, model = build(name, cls, kw, "eager", "eager")
        params = sum(p.numel() for p in model.parameters())
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        eager = count(name, model)
        _, dmodel = build(name, cls, kw, None, None)
        dflt = count(name, dmodel)
        d_experts = getattr(dmodel.config, "_experts_implementation", None)
        decode = (count_decode_t5(model) if name == "t5" else
                  count_decode(name, model) if name != "bert" else None)
        odd = count_totals(name, model, **ODD)
        if name != "t5":
            odd["decoder_seq"] = odd["seq"]
        exp = dict(
            architecture=type(model).__name__,
            transformers=transformers.__version__,
            torch=torch.__version__.split("+")[0],
            batch=BATCH, seq=SEQ,
            decoder_seq=T5_DECODER_SEQ if name == "t5" else SEQ,
            parameters=int(params), trainable_parameters=int(trainable),
            attn_implementation=model.config._attn_implementation,
            experts_implementation=("eager" if name in MOE else None),
            loss=LOSS.get(name, CAUSAL_LOSS),
            loss_value=round(eager["loss"], 6),
            forward_flops=eager["forward_flops"], train_flops=eager["train_flops"],
            forward_by_op=eager["forward_by_op"], train_by_op=eager["train_by_op"],
            forward_by_module=eager["forward_by_module"],
            odd_shape=odd,
            decode_cache=(T5_DECODER_SEQ if name == "t5" else
                          SEQ if decode is not None else None),
            **(dict(decode_encoder_seq=SEQ) if name == "t5" else {}),
            decode_forward_flops=decode,
            default=dict(
                attn_implementation=dmodel.config._attn_implementation,
                experts_implementation=(d_experts if name in MOE else None),
                forward_flops=dflt["forward_flops"], train_flops=dflt["train_flops"],
                forward_by_op=dflt["forward_by_op"], train_by_op=dflt["train_by_op"]),
        )
        # a published config.json names its class; a config made in Python has none
        cfg.architectures = [type(model).__name__]
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            f.write(cfg.to_json_string())
        with open(os.path.join(d, "expected.json"), "w") as f:
            json.dump(exp, f, indent=2)
            f.write("\n")
        print(f"{name:12s} params {params:9d}  fwd {eager['forward_flops']:12d}  "
              f"train {eager['train_flops']:12d}  default fwd {dflt['forward_flops']:12d} "
              f"train {dflt['train_flops']:12d} ({exp['default']['attn_implementation']}"
              f"{', ' + str(d_experts) if name in MOE else ''})")


if __name__ == "__main__":
    main()
