/* The encoder models: BertForMaskedLM (embeddings of words, positions and token types with a
 * LayerNorm; post-norm layers; the MLM head's transform and the decoder tied to the word
 * embeddings, with its own bias) and T5ForConditionalGeneration (shared embeddings, pre-norm
 * T5LayerNorm blocks, the relative position bias of the first block's self-attention looked
 * up once per stack and added to the scores of every layer, cross-attention in the decoder,
 * the decoder output scaled by d_model^-0.5 before the tied lm_head), module paths as HF's.
 *
 * T5 decoding (fm_llm_build_opts.decode) is one decoder step for one new target token per
 * sequence, as transformers runs it with an EncoderDecoderCache after the prefill: the encoder
 * does not run; the self-attention of each decoder layer projects the new token and reads the
 * K/V of the decoder_seq target positions before it from the cache (graph inputs
 * past_key_values.<layer>.self_attention.{key,value}), the cross-attention projects only the
 * query and reads the K/V of the encoder output (seq positions), projected once at the prefill
 * (past_key_values.<layer>.cross_attention.{key,value}).
 *
 * Not counted: the relative-position bucket arithmetic (integer logs on an Sq x Sk grid) is
 * an input. */
#include "build_nn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static fm_tid heads_of(struct lm *m, const char *name, fm_tid x, int64_t s, int64_t n, int64_t d)
{
    int64_t dims[4] = {m->batch, s, n, d};
    char nm[64];
    snprintf(nm, sizeof(nm), "%s_view", name);
    x = lm_reshape(m, nm, x, 4, dims);
    snprintf(nm, sizeof(nm), "%s_transpose", name);
    return lm_transpose(m, nm, x, 1, 2);
}

static fm_tid merge_heads(struct lm *m, fm_tid x, int64_t s)
{
    const struct fm_shape *sh = lm_shape(m, x);
    int64_t n = sh->dims[1], d = sh->dims[3];
    x = lm_transpose(m, "attn_output_transpose", x, 1, 2);
    int64_t dims[3] = {m->batch, s, n * d};
    return lm_reshape(m, "attn_output_reshape", x, 3, dims);
}

/* a cached K or V (B, heads, len, head_dim), a graph input named <cache>.<what> */
static fm_tid cached(struct lm *m, const char *cache, const char *what, int64_t len)
{
    int64_t dims[4] = {m->batch, m->c->heads, len, m->c->head_dim};
    char nm[96];
    snprintf(nm, sizeof(nm), "%s.%s", cache, what);
    return lm_input(m, nm, m->nn.dtype, 4, dims);
}

/* q from xq (sq tokens), k and v from xkv (sk tokens); bias: an additive score bias or none.
 * With a cache (decoding): xkv FM_NONE reads K and V of sk positions from it (cross-attention
 * to the encoder output, projected at the prefill); otherwise the cache's m->past positions
 * go in front of the sk projected ones (self-attention). */
static fm_tid mha(struct lm *m, fm_tid xq, fm_tid xkv, int64_t sq, int64_t sk, bool causal,
                  fm_tid bias, const char *const names[4], bool proj_bias, double scale,
                  const char *cache)
{
    const struct fm_llm_config *c = m->c;
    int64_t inner = c->heads * c->head_dim;
    fm_tid q = lm_linear(m, names[0], xq, inner, proj_bias);
    q = heads_of(m, "query", q, sq, c->heads, c->head_dim);
    fm_tid k, v;
    if (cache && xkv == FM_NONE) {
        k = cached(m, cache, "key", sk);
        v = cached(m, cache, "value", sk);
    } else {
        k = lm_linear(m, names[1], xkv, inner, proj_bias);
        v = lm_linear(m, names[2], xkv, inner, proj_bias);
        k = heads_of(m, "key", k, sk, c->heads, c->head_dim);
        v = heads_of(m, "value", v, sk, c->heads, c->head_dim);
        if (cache) {
            k = lm_concat2(m, "cache_key", cached(m, cache, "key", m->past), k, 2);
            v = lm_concat2(m, "cache_value", cached(m, cache, "value", m->past), v, 2);
        }
    }
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.scale = scale;
    if (causal)
        a.flags |= FM_ATTR_CAUSAL;
    fm_tid in[4] = {q, k, v, bias};
    fm_tid y = lm_node(m, FM_OP_ATTENTION, "attention", &a, in, bias == FM_NONE ? 3 : 4);
    y = merge_heads(m, y, sq);
    if (!names[3])
        return y;
    return lm_linear(m, names[3], y, c->hidden, proj_bias);
}

enum fm_status lm_build_bert(struct lm *m, fm_tid ids, fm_tid *logits)
{
    const struct fm_llm_config *c = m->c;
    int64_t s = m->seq, h = c->hidden;
    lm_push(m, "bert.embeddings");
    int64_t wd[2] = {c->vocab, h}, pd[2] = {c->max_pos, h}, td[2] = {c->type_vocab, h};
    lm_push(m, "word_embeddings");
    fm_tid wte = lm_param(m, "weight", FM_ROLE_PARAM, 2, wd);
    lm_pop(m);
    lm_push(m, "position_embeddings");
    fm_tid wpe = lm_param(m, "weight", FM_ROLE_PARAM, 2, pd);
    lm_pop(m);
    fm_tid in[2] = {ids, wte};
    fm_tid x = lm_module_node(m, FM_OP_EMBEDDING, "word_embeddings", NULL, in, 2);
    if (c->type_vocab > 0) {
        lm_push(m, "token_type_embeddings");
        fm_tid wtt = lm_param(m, "weight", FM_ROLE_PARAM, 2, td);
        lm_pop(m);
        int64_t idd[2] = {m->batch, s};
        fm_tid tt = lm_input(m, "token_type_ids", FM_DTYPE_INT64, 2, idd);
        fm_tid in2[2] = {tt, wtt};
        fm_tid e = lm_module_node(m, FM_OP_EMBEDDING, "token_type_embeddings", NULL, in2, 2);
        x = lm_add(m, "add", x, e);
    }
    int64_t sd[2] = {1, s};
    fm_tid pos = lm_input(m, "position_ids", FM_DTYPE_INT64, 2, sd);
    fm_tid in3[2] = {pos, wpe};
    fm_tid p = lm_module_node(m, FM_OP_EMBEDDING, "position_embeddings", NULL, in3, 2);
    x = lm_add(m, "add_1", x, p);
    x = lm_norm(m, "LayerNorm", x, false, true);
    lm_pop(m);
    static const char *const qkv[4] = {"query", "key", "value", NULL};
    for (int i = 0; i < c->layers && !m->nn.st; i++) {
        lm_push(m, "bert.encoder.layer.%d", i);
        lm_push(m, "attention");
        lm_push(m, "self");
        fm_tid y = mha(m, x, x, s, s, false, FM_NONE, qkv, true, 0.0, NULL);
        lm_pop(m);
        lm_push(m, "output");
        y = lm_linear(m, "dense", y, h, true);
        y = lm_add(m, "add", y, x);
        x = lm_norm(m, "LayerNorm", y, false, true);
        lm_pop(m);
        lm_pop(m);
        lm_push(m, "intermediate");
        y = lm_linear(m, "dense", x, c->ffn, true);
        y = lm_act(m, "intermediate_act_fn", c->act, y);
        lm_pop(m);
        lm_push(m, "output");
        y = lm_linear(m, "dense", y, h, true);
        y = lm_add(m, "add", y, x);
        x = lm_norm(m, "LayerNorm", y, false, true);
        lm_pop(m);
        lm_pop(m);
    }
    lm_push(m, "cls.predictions");
    lm_push(m, "transform");
    x = lm_linear(m, "dense", x, h, true);
    x = lm_act(m, "transform_act_fn", c->act, x);
    x = lm_norm(m, "LayerNorm", x, false, true);
    lm_pop(m);
    int64_t vd = c->vocab;
    fm_tid bias = lm_param(m, "bias", FM_ROLE_PARAM, 1, &vd);
    /* tie_word_embeddings false: the decoder has a (vocab, hidden) weight of its own */
    fm_tid dec = wte;
    if (!c->tied_embeddings) {
        int64_t dd[2] = {c->vocab, h};
        lm_push(m, "decoder");
        dec = lm_param(m, "weight", FM_ROLE_PARAM, 2, dd);
        lm_pop(m);
    }
    fm_tid in4[3] = {x, dec, bias};
    x = lm_module_node(m, FM_OP_LINEAR, "decoder", NULL, in4, 3);
    lm_pop(m);
    *logits = x;
    return m->nn.st;
}

/* the relative position bias (1, heads, sq, sk): an embedding lookup of the bucket ids */
static fm_tid position_bias(struct lm *m, const char *stack, int64_t sq, int64_t sk)
{
    const struct fm_llm_config *c = m->c;
    char nm[96];
    snprintf(nm, sizeof(nm), "%s.relative_position_bucket", stack);
    int64_t bd[2] = {sq, sk};
    fm_tid buckets = lm_input(m, nm, FM_DTYPE_INT64, 2, bd);
    int64_t wd[2] = {c->rel_buckets, c->heads};
    lm_push(m, "relative_attention_bias");
    fm_tid w = lm_param(m, "weight", FM_ROLE_PARAM, 2, wd);
    lm_pop(m);
    fm_tid in[2] = {buckets, w};
    fm_tid b = lm_module_node(m, FM_OP_EMBEDDING, "relative_attention_bias", NULL, in, 2);
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.nints = 3;
    a.ints[0] = 2;
    a.ints[1] = 0;
    a.ints[2] = 1;
    b = lm_node(m, FM_OP_TRANSPOSE, "position_bias_permute", &a, &b, 1);
    int64_t d4[4] = {1, c->heads, sq, sk};
    return lm_reshape(m, "position_bias", b, 4, d4);
}

static fm_tid t5_ff(struct lm *m, fm_tid x)
{
    const struct fm_llm_config *c = m->c;
    fm_tid y = lm_norm(m, "layer_norm", x, true, false);
    lm_push(m, "DenseReluDense");
    if (c->gated_mlp) {
        fm_tid g = lm_linear(m, "wi_0", y, c->ffn, false);
        g = lm_act(m, "act", c->act, g);
        fm_tid u = lm_linear(m, "wi_1", y, c->ffn, false);
        y = lm_mul(m, "mul", g, u);
    } else {
        y = lm_linear(m, "wi", y, c->ffn, false);
        y = lm_act(m, "act", c->act, y);
    }
    y = lm_linear(m, "wo", y, c->hidden, false);
    lm_pop(m);
    return lm_add(m, "add", x, y);
}

/* Not decoding: ids (B, enc_seq) the source, the target dec_seq tokens. Decoding: ids
 * (B, 1) the new target token, enc_seq the encoder output's length in the cross-attention
 * cache, m->past the target positions in the self-attention cache. */
enum fm_status lm_build_t5(struct lm *m, fm_tid ids, int64_t enc_seq, int64_t dec_seq,
                           fm_tid *logits)
{
    const struct fm_llm_config *c = m->c;
    int64_t s = enc_seq, h = c->hidden;
    static const char *const sa[4] = {"q", "k", "v", "o"};
    int64_t wd[2] = {c->vocab, h};
    fm_tid shared = lm_param(m, "shared.weight", FM_ROLE_PARAM, 2, wd);
    fm_tid bias = FM_NONE, enc = FM_NONE, x = FM_NONE, dids = ids;
    if (!m->decode) {   /* decoding: the encoder ran at the prefill */
        fm_tid in[2] = {ids, shared};
        x = lm_module_node(m, FM_OP_EMBEDDING, "encoder.embed_tokens", NULL, in, 2);
    }
    for (int i = 0; i < c->layers && !m->decode && !m->nn.st; i++) {
        lm_push(m, "encoder.block.%d.layer.0", i);
        fm_tid y = lm_norm(m, "layer_norm", x, true, false);
        lm_push(m, "SelfAttention");
        if (i == 0)
            bias = position_bias(m, "encoder", s, s);
        y = mha(m, y, y, s, s, false, bias, sa, false, 1.0, NULL);   /* T5: no 1/sqrt(d) */
        lm_pop(m);
        x = lm_add(m, "add", x, y);
        lm_pop(m);
        lm_push(m, "encoder.block.%d.layer.1", i);
        x = t5_ff(m, x);
        lm_pop(m);
    }
    if (!m->decode) {
        enc = lm_norm(m, "encoder.final_layer_norm", x, true, false);
        int64_t dd[2] = {m->batch, dec_seq};
        dids = lm_input(m, "decoder_input_ids", FM_DTYPE_INT64, 2, dd);
    }
    /* the new positions and the keys they attend to (decoding: the cache and themselves) */
    int64_t sq = m->decode ? 1 : dec_seq, sk = m->decode ? m->past + 1 : dec_seq;
    fm_tid in2[2] = {dids, shared};
    x = lm_module_node(m, FM_OP_EMBEDDING, "decoder.embed_tokens", NULL, in2, 2);
    char self_cache[64] = "", cross_cache[64] = "";
    for (int i = 0; i < c->decoder_layers && !m->nn.st; i++) {
        if (m->decode) {
            snprintf(self_cache, sizeof(self_cache), "past_key_values.%d.self_attention", i);
            snprintf(cross_cache, sizeof(cross_cache), "past_key_values.%d.cross_attention", i);
        }
        lm_push(m, "decoder.block.%d.layer.0", i);
        fm_tid y = lm_norm(m, "layer_norm", x, true, false);
        lm_push(m, "SelfAttention");
        if (i == 0)
            bias = position_bias(m, "decoder", sq, sk);
        /* decoding: the one query attends to every cached position, no mask to apply */
        y = mha(m, y, y, sq, sq, !m->decode, bias, sa, false, 1.0,
                m->decode ? self_cache : NULL);
        lm_pop(m);
        x = lm_add(m, "add", x, y);
        lm_pop(m);
        lm_push(m, "decoder.block.%d.layer.1", i);
        y = lm_norm(m, "layer_norm", x, true, false);
        lm_push(m, "EncDecAttention");
        y = mha(m, y, enc, sq, s, false, FM_NONE, sa, false, 1.0,
                m->decode ? cross_cache : NULL);
        lm_pop(m);
        x = lm_add(m, "add", x, y);
        lm_pop(m);
        lm_push(m, "decoder.block.%d.layer.2", i);
        x = t5_ff(m, x);
        lm_pop(m);
    }
    x = lm_norm(m, "decoder.final_layer_norm", x, true, false);
    x = lm_scale(m, "decoder_output_scale", x, 1.0 / sqrt((double)h));
    fm_tid in3[2] = {x, shared};
    *logits = lm_module_node(m, FM_OP_LINEAR, "lm_head", NULL, in3, 2);
    return m->nn.st;
}
