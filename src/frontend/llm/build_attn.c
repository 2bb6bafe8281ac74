/* Attention and MLP blocks of the decoder-only models, as HF's modeling_<model>.py runs them:
 * projections (Linear; Phi-3's fused qkv_proj split in three; GPT-2's Conv1D as MatMul + bias),
 * the view to heads and the transpose, q/k RMSNorm per head (Qwen3), rotary embeddings as the
 * muls and adds of apply_rotary_pos_emb, the KV cache concatenated in front when decoding,
 * repeat_kv for grouped-query attention (FM_OP_ATTENTION takes as many K/V heads as query
 * heads, so K and V are expanded as HF's eager path does: no FLOPs, bytes), one Attention node
 * (scores, mask, softmax, AV), the transpose back and o_proj. Multi-head latent attention
 * (DeepSeek-V3) follows DeepseekV3Attention: low-rank q (q_a_proj, q_a_layernorm, q_b_proj),
 * the compressed kv latent (kv_a_proj_with_mqa, kv_a_layernorm), the cache holding the latent
 * and the rope key, and kv_b_proj expanding every cached position at each step, as HF does.
 *
 * Gemma 2's soft-capping of the scores (c * tanh(s / c)) is the Attention node's softcap
 * attribute, counted by the op. Not counted: the rotary tables (cos, sin: one
 * outer product per sequence) are graph inputs. */
#include "build_nn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* (B, S, n*d) -> (B, n, S, d) */
static fm_tid to_heads(struct lm *m, const char *name, fm_tid x, int64_t n, int64_t d,
                       bool norm_per_head, const char *norm_name)
{
    int64_t dims[4] = {m->batch, m->seq, n, d};
    char nm[64];
    snprintf(nm, sizeof(nm), "%s_view", name);
    x = lm_reshape(m, nm, x, 4, dims);
    if (norm_per_head)
        x = lm_norm(m, norm_name, x, true, false);
    snprintf(nm, sizeof(nm), "%s_transpose", name);
    return lm_transpose(m, nm, x, 1, 2);
}

/* decode: the cache (B, n, past, d) in front of the new position */
static fm_tid with_cache(struct lm *m, int layer, const char *what, fm_tid x)
{
    if (!m->decode)
        return x;
    const struct fm_shape *s = lm_shape(m, x);
    int64_t kept = m->past;
    /* a sliding layer's cache keeps the last window - 1 positions (Mistral's rolling buffer,
     * transformers' DynamicSlidingWindowLayer): the new token attends to window keys */
    if (layer >= 0 && layer < FM_LLM_MAX_LAYERS && m->c->layer_sliding[layer] && m->c->window &&
        kept > m->c->window - 1)
        kept = m->c->window - 1;
    int64_t dims[4] = {s->dims[0], s->dims[1], kept, s->dims[3]};
    char nm[96];
    snprintf(nm, sizeof(nm), "past_key_values.%d.%s", layer, what);
    fm_tid past = lm_input(m, nm, m->nn.dtype, 4, dims);
    snprintf(nm, sizeof(nm), "cache_%s", what);
    return lm_concat2(m, nm, past, x, 2);
}

static fm_tid attention(struct lm *m, int layer, fm_tid q, fm_tid k, fm_tid v, double scale)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.scale = scale;
    a.softcap = m->c->attn_softcap;   /* Gemma 2; 0 elsewhere */
    if (!m->decode && m->c->arch != FM_LLM_BERT)
        a.flags |= FM_ATTR_CAUSAL;
    /* ints[0]: the sliding window, for the reports' block-skipping figure (counts unchanged) */
    if (layer >= 0 && layer < FM_LLM_MAX_LAYERS && m->c->layer_sliding[layer] && m->c->window) {
        a.nints = 1;
        a.ints[0] = m->c->window;
    }
    fm_tid in[3] = {q, k, v};
    return lm_node(m, FM_OP_ATTENTION, "attention", &a, in, 3);
}

/* (B, n, S, d) -> (B, S, n*d) */
static fm_tid from_heads(struct lm *m, fm_tid x)
{
    const struct fm_shape *s = lm_shape(m, x);
    int64_t n = s->dims[1], d = s->dims[3];
    x = lm_transpose(m, "attn_output_transpose", x, 1, 2);
    int64_t dims[3] = {m->batch, m->seq, n * d};
    return lm_reshape(m, "attn_output_reshape", x, 3, dims);
}

fm_tid lm_self_attention(struct lm *m, int layer, fm_tid h)
{
    const struct fm_llm_config *c = m->c;
    int64_t nh = c->heads, kvh = c->kv_heads, hd = c->head_dim;
    fm_tid q, k, v;
    const char *o_name = "o_proj";
    if (c->arch == FM_LLM_PHI3) {
        fm_tid qkv = lm_linear(m, "qkv_proj", h, (nh + 2 * kvh) * hd, false);
        int64_t sz[3] = {nh * hd, kvh * hd, kvh * hd};
        fm_tid o[3];
        lm_split(m, "qkv_split", qkv, -1, 3, sz, o);
        q = o[0], k = o[1], v = o[2];
    } else if (c->arch == FM_LLM_GPT2) {
        fm_tid qkv = lm_conv1d(m, "c_attn", h, 3 * c->hidden);
        int64_t sz[3] = {c->hidden, c->hidden, c->hidden};
        fm_tid o[3];
        lm_split(m, "qkv_split", qkv, -1, 3, sz, o);
        q = o[0], k = o[1], v = o[2];
        o_name = "c_proj";
    } else if (c->arch == FM_LLM_GPT_NEOX) {
        /* query_key_value (3H, H); viewed (B, S, heads, 3*hd) and split per head */
        fm_tid qkv = lm_linear(m, "query_key_value", h, 3 * c->hidden, c->qkv_bias);
        int64_t dims[4] = {m->batch, m->seq, nh, 3 * hd};
        qkv = lm_reshape(m, "qkv_view", qkv, 4, dims);
        qkv = lm_transpose(m, "qkv_transpose", qkv, 1, 2);
        int64_t sz[3] = {hd, hd, hd};
        fm_tid o[3];
        lm_split(m, "qkv_split", qkv, -1, 3, sz, o);
        q = lm_rotary(m, "rotary_q", o[0], m->cos, m->sin, (int64_t)(hd * c->rotary_pct));
        k = lm_rotary(m, "rotary_k", o[1], m->cos, m->sin, (int64_t)(hd * c->rotary_pct));
        k = with_cache(m, layer, "key", k);
        v = with_cache(m, layer, "value", o[2]);
        fm_tid y = attention(m, layer, q, k, v, 0.0);
        y = from_heads(m, y);
        return lm_linear(m, "dense", y, c->hidden, c->out_bias);
    } else {
        q = lm_linear(m, "q_proj", h, nh * hd, c->qkv_bias);
        k = lm_linear(m, "k_proj", h, kvh * hd, c->qkv_bias);
        v = lm_linear(m, "v_proj", h, kvh * hd, c->qkv_bias);
    }
    q = to_heads(m, "query", q, nh, hd, c->qk_norm, "q_norm");
    k = to_heads(m, "key", k, kvh, hd, c->qk_norm, "k_norm");
    v = to_heads(m, "value", v, kvh, hd, false, NULL);
    if (c->pos == FM_LLM_POS_ROPE) {
        q = lm_rotary(m, "rotary_q", q, m->cos, m->sin, hd);
        k = lm_rotary(m, "rotary_k", k, m->cos, m->sin, hd);
    }
    k = with_cache(m, layer, "key", k);
    v = with_cache(m, layer, "value", v);
    k = lm_repeat_kv(m, "repeat_k", k, nh / kvh);
    v = lm_repeat_kv(m, "repeat_v", v, nh / kvh);
    fm_tid y = attention(m, layer, q, k, v, 0.0);
    y = from_heads(m, y);
    if (c->arch == FM_LLM_GPT2)
        return lm_conv1d(m, o_name, y, c->hidden);
    return lm_linear(m, o_name, y, c->hidden, c->out_bias);
}

fm_tid lm_mla(struct lm *m, int layer, fm_tid h)
{
    const struct fm_llm_config *c = m->c;
    int64_t nh = c->heads, nope = c->qk_nope_dim, rope = c->qk_rope_dim, vd = c->v_head_dim;
    int64_t qk = nope + rope, kvl = c->kv_lora_rank;
    fm_tid q;
    if (c->q_lora_rank) {
        q = lm_linear(m, "q_a_proj", h, c->q_lora_rank, c->qkv_bias);
        q = lm_norm(m, "q_a_layernorm", q, true, false);
        q = lm_linear(m, "q_b_proj", q, nh * qk, false);
    } else {
        q = lm_linear(m, "q_proj", h, nh * qk, false);
    }
    q = to_heads(m, "query", q, nh, qk, false, NULL);
    fm_tid qs[2];
    int64_t qsz[2] = {nope, rope};
    lm_split(m, "q_split", q, -1, 2, qsz, qs);
    fm_tid ckv = lm_linear(m, "kv_a_proj_with_mqa", h, kvl + rope, c->qkv_bias);
    fm_tid kvs[2];
    int64_t kvsz[2] = {kvl, rope};
    lm_split(m, "kv_split", ckv, -1, 2, kvsz, kvs);
    fm_tid kv_nope = lm_norm(m, "kv_a_layernorm", kvs[0], true, false);
    int64_t d1[4] = {m->batch, 1, m->seq, kvl};
    kv_nope = lm_reshape(m, "kv_view", kv_nope, 4, d1);
    int64_t d2[4] = {m->batch, 1, m->seq, rope};
    fm_tid k_rot = lm_reshape(m, "k_rot_view", kvs[1], 4, d2);
    fm_tid q_rot = lm_rotary(m, "rotary_q", qs[1], m->cos, m->sin, rope);
    k_rot = lm_rotary(m, "rotary_k", k_rot, m->cos, m->sin, rope);
    kv_nope = with_cache(m, layer, "kv_latent", kv_nope);
    k_rot = with_cache(m, layer, "k_rot", k_rot);
    q = lm_concat2(m, "query_cat", qs[0], q_rot, -1);
    int64_t sk = m->past + m->seq;
    /* expand_kv: kv_b_proj over every cached position */
    fm_tid kv = lm_linear(m, "kv_b_proj", kv_nope, nh * (nope + vd), false);
    int64_t d3[4] = {m->batch, sk, nh, nope + vd};
    kv = lm_reshape(m, "kv_b_view", kv, 4, d3);
    kv = lm_transpose(m, "kv_b_transpose", kv, 1, 2);
    fm_tid kvp[2];
    int64_t kvpsz[2] = {nope, vd};
    lm_split(m, "kv_b_split", kv, -1, 2, kvpsz, kvp);
    struct fm_attrs a;
    fm_attrs_init(&a);
    int64_t d4[4] = {m->batch, nh, sk, rope};
    a.nints = 4;
    memcpy(a.ints, d4, sizeof(d4));
    k_rot = lm_node(m, FM_OP_EXPAND, "k_rot_expand", &a, &k_rot, 1);
    fm_tid k = lm_concat2(m, "key_cat", kvp[0], k_rot, -1);
    fm_tid y = attention(m, layer, q, k, kvp[1], 1.0 / sqrt((double)qk));
    y = from_heads(m, y);
    return lm_linear(m, "o_proj", y, c->hidden, c->out_bias);
}

fm_tid lm_gated_mlp(struct lm *m, const char *name, fm_tid h, int64_t ffn, bool bias)
{
    const struct fm_llm_config *c = m->c;
    lm_push(m, "%s", name);
    fm_tid y;
    if (c->arch == FM_LLM_PHI3) {
        fm_tid gu = lm_linear(m, "gate_up_proj", h, 2 * ffn, false);
        int64_t sz[2] = {ffn, ffn};
        fm_tid o[2];
        lm_split(m, "chunk", gu, -1, 2, sz, o);
        fm_tid g = lm_act(m, "activation_fn", c->act, o[0]);
        fm_tid in[2] = {o[1], g};
        y = lm_node(m, FM_OP_MUL, "mul", NULL, in, 2);
    } else {
        fm_tid g = lm_linear(m, "gate_proj", h, ffn, bias);
        g = lm_act(m, "act_fn", c->act, g);
        fm_tid u = lm_linear(m, "up_proj", h, ffn, bias);
        fm_tid in[2] = {g, u};
        y = lm_node(m, FM_OP_MUL, "mul", NULL, in, 2);
    }
    y = lm_linear(m, "down_proj", y, c->hidden, bias);
    lm_pop(m);
    return y;
}
