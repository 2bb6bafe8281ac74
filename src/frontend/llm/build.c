/* fm_llm_build: the graph of a language model from its config (llm.h), module by module as
 * HF's modeling_<model>.py runs it, parameters named and shaped as HF's state dict so that the
 * parameter count is that of model.parameters() (a tied lm_head is the embedding's tensor, so
 * it counts once). Decoder-only models here; BERT and T5 in build_seq2seq.c; attention and
 * MLP blocks in build_attn.c, mixture-of-experts in build_moe.c.
 *
 * fm_llm_params is the closed form of the same count from the config alone (the plan and the
 * 6ND estimate use it without building); the tests hold the two equal. */
#include "build_nn.h"
#include "../../core/internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void fm_llm_build_opts_init(struct fm_llm_build_opts *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->batch = 1;
    opts->dtype = FM_DTYPE_FP32;
}

/* the rotary tables' width: the dims each head rotates */
static int64_t rotary_dims(const struct fm_llm_config *c)
{
    if (c->arch == FM_LLM_DEEPSEEK_V3)
        return c->qk_rope_dim;
    if (c->arch == FM_LLM_GPT_NEOX)
        return (int64_t)(c->head_dim * c->rotary_pct);
    return c->head_dim;
}

static fm_tid decoder_layer(struct lm *m, int i, fm_tid x)
{
    const struct fm_llm_config *c = m->c;
    bool gemma2 = c->arch == FM_LLM_GEMMA2;
    lm_push(m, "%s.%d", c->arch == FM_LLM_GPT2 ? "transformer.h"
                              : c->arch == FM_LLM_GPT_NEOX ? "gpt_neox.layers"
                                                           : "model.layers", i);
    bool ln_bias = !c->rms_norm;
    if (c->arch == FM_LLM_GPT2) {
        fm_tid h = lm_norm(m, "ln_1", x, false, true);
        lm_push(m, "attn");
        h = lm_self_attention(m, i, h);
        lm_pop(m);
        x = lm_add(m, "add", x, h);
        h = lm_norm(m, "ln_2", x, false, true);
        lm_push(m, "mlp");
        h = lm_conv1d(m, "c_fc", h, c->ffn);
        h = lm_act(m, "act", c->act, h);
        h = lm_conv1d(m, "c_proj", h, c->hidden);
        lm_pop(m);
        x = lm_add(m, "add_1", x, h);
        lm_pop(m);
        return x;
    }
    if (c->arch == FM_LLM_GPT_NEOX) {
        fm_tid h = lm_norm(m, "input_layernorm", x, false, true);
        lm_push(m, "attention");
        fm_tid at = lm_self_attention(m, i, h);
        lm_pop(m);
        fm_tid x2 = c->parallel_residual ? x : lm_add(m, "add", x, at);
        h = lm_norm(m, "post_attention_layernorm", x2, false, true);
        lm_push(m, "mlp");
        h = lm_linear(m, "dense_h_to_4h", h, c->ffn, true);
        h = lm_act(m, "act", c->act, h);
        h = lm_linear(m, "dense_4h_to_h", h, c->hidden, true);
        lm_pop(m);
        if (c->parallel_residual) {   /* x + attn(ln1(x)) + mlp(ln2(x)) */
            fm_tid s = lm_add(m, "add", h, at);
            x = lm_add(m, "add_1", s, x);
        } else {
            x = lm_add(m, "add_1", h, x2);
        }
        lm_pop(m);
        return x;
    }
    fm_tid h = lm_norm(m, "input_layernorm", x, c->rms_norm, ln_bias);
    lm_push(m, "self_attn");
    h = c->arch == FM_LLM_DEEPSEEK_V3 ? lm_mla(m, i, h) : lm_self_attention(m, i, h);
    lm_pop(m);
    if (gemma2)
        h = lm_norm(m, "post_attention_layernorm", h, true, false);
    x = lm_add(m, "add", x, h);
    h = lm_norm(m, gemma2 ? "pre_feedforward_layernorm" : "post_attention_layernorm", x,
                c->rms_norm, ln_bias);
    if (c->experts && c->layer_moe[i])
        h = lm_moe(m, h);
    else
        h = lm_gated_mlp(m, "mlp", h, c->ffn, c->mlp_bias);
    if (gemma2)
        h = lm_norm(m, "post_feedforward_layernorm", h, true, false);
    x = lm_add(m, "add_1", x, h);
    lm_pop(m);
    return x;
}

static enum fm_status build_decoder(struct lm *m, fm_tid ids, fm_tid *logits)
{
    const struct fm_llm_config *c = m->c;
    bool gpt2 = c->arch == FM_LLM_GPT2, neox = c->arch == FM_LLM_GPT_NEOX;
    const char *base = gpt2 ? "transformer" : neox ? "gpt_neox" : "model";
    int64_t ed[2] = {c->vocab, c->hidden};
    lm_push(m, "%s", base);
    const char *emb_name = gpt2 ? "wte" : neox ? "embed_in" : "embed_tokens";
    lm_push(m, "%s", emb_name);
    fm_tid wte = lm_param(m, "weight", FM_ROLE_PARAM, 2, ed);
    lm_pop(m);
    fm_tid in[2] = {ids, wte};
    fm_tid x = lm_module_node(m, FM_OP_EMBEDDING, emb_name, NULL, in, 2);
    if (gpt2) {
        int64_t pd[2] = {c->max_pos, c->hidden};
        lm_push(m, "wpe");
        fm_tid wpe = lm_param(m, "weight", FM_ROLE_PARAM, 2, pd);
        lm_pop(m);
        int64_t sd[2] = {1, m->seq};
        fm_tid pos = lm_input(m, "position_ids", FM_DTYPE_INT64, 2, sd);
        fm_tid in2[2] = {pos, wpe};
        fm_tid p = lm_module_node(m, FM_OP_EMBEDDING, "wpe", NULL, in2, 2);
        x = lm_add(m, "add", x, p);
    }
    if (c->arch == FM_LLM_GEMMA || c->arch == FM_LLM_GEMMA2)   /* x * sqrt(hidden) */
        x = lm_scale(m, "normalizer", x, sqrt((double)c->hidden));
    lm_pop(m);
    if (c->pos == FM_LLM_POS_ROPE) {
        int64_t rd[4] = {1, 1, m->seq, rotary_dims(c)};
        m->cos = lm_input(m, "rotary_cos", m->nn.dtype, 4, rd);
        m->sin = lm_input(m, "rotary_sin", m->nn.dtype, 4, rd);
    }
    for (int i = 0; i < c->layers && !m->nn.st; i++)
        x = decoder_layer(m, i, x);
    lm_push(m, "%s", base);
    x = lm_norm(m, gpt2 ? "ln_f" : neox ? "final_layer_norm" : "norm", x, c->rms_norm,
                !c->rms_norm);
    lm_pop(m);
    const char *head = "lm_head";   /* GPT-NeoX too: transformers 5 renamed embed_out */
    if (c->tied_embeddings) {
        fm_tid in3[2] = {x, wte};
        x = lm_module_node(m, FM_OP_LINEAR, head, NULL, in3, 2);
    } else {
        x = lm_linear(m, head, x, c->vocab, false);
    }
    if (c->final_softcap > 0) {   /* Gemma2: tanh(logits / cap) * cap */
        x = lm_scale(m, "final_logit_softcap_div", x, 1.0 / c->final_softcap);
        x = lm_unary(m, FM_OP_TANH, "final_logit_softcap_tanh", x);
        x = lm_scale(m, "final_logit_softcap_mul", x, c->final_softcap);
    }
    *logits = x;
    return m->nn.st;
}

enum fm_status fm_llm_build(struct fm_ctx *ctx, const struct fm_llm_config *cfg,
                            const struct fm_llm_build_opts *opts, struct fm_graph **out)
{
    *out = NULL;
    struct fm_llm_build_opts o;
    if (opts)
        o = *opts;
    else
        fm_llm_build_opts_init(&o);
    if (o.batch <= 0)
        return fm_error(ctx, FM_ERR_INVALID, "fm_llm_build_opts.batch must be positive, got %lld",
                        (long long)o.batch);
    if (o.seq < 0 || o.decoder_seq < 0)
        return fm_error(ctx, FM_ERR_INVALID, "fm_llm_build_opts.seq must be positive, got %lld",
                        (long long)(o.seq < 0 ? o.seq : o.decoder_seq));
    if (o.seq == 0)
        o.seq = cfg->max_pos > 0 && cfg->max_pos < 2048 ? cfg->max_pos : 2048;
    if (o.decoder_seq == 0)
        o.decoder_seq = o.seq;
    if (!fm_dtype_is_float(o.dtype))
        return fm_error(ctx, FM_ERR_INVALID, "dtype %s is not a floating-point type",
                        fm_dtype_name(o.dtype));
    if (cfg->layers <= 0 || cfg->layers + cfg->decoder_layers > FM_LLM_MAX_LAYERS ||
        cfg->hidden <= 0 || cfg->vocab <= 0 || cfg->heads <= 0 || cfg->kv_heads <= 0 ||
        cfg->heads % cfg->kv_heads || cfg->head_dim <= 0)
        return fm_error(ctx, FM_ERR_INVALID, "%s: the config's sizes are incomplete (layers "
                        "%lld, hidden %lld, vocab %lld, heads %lld, kv heads %lld)",
                        cfg->name, (long long)cfg->layers, (long long)cfg->hidden,
                        (long long)cfg->vocab, (long long)cfg->heads, (long long)cfg->kv_heads);
    if (cfg->pos == FM_LLM_POS_LEARNED && o.seq + (o.decode ? 1 : 0) > cfg->max_pos)
        return fm_error(ctx, FM_ERR_INVALID, "%s: fm_load_opts.seq = %lld is beyond the %lld "
                        "learned positions (max_position_embeddings)",
                        cfg->name, (long long)o.seq, (long long)cfg->max_pos);
    if (o.decode && (cfg->arch == FM_LLM_BERT))
        return fm_error(ctx, FM_ERR_INVALID, "%s: BERT is an encoder: there is no decoding "
                        "step to count", cfg->name);
    if (cfg->max_pos > 0 && o.seq > cfg->max_pos)
        fm_log(ctx, "warning: %s: a sequence of %lld tokens is beyond max_position_embeddings "
               "= %lld; counted anyway",
               cfg->name, (long long)o.seq, (long long)cfg->max_pos);
    const char *gname = cfg->name[0] ? cfg->name : fm_llm_arch_name(cfg->arch);
    struct fm_graph *g = NULL;
    enum fm_status st = fm_graph_new(ctx, gname, &g);
    if (st)
        return st;
    struct lm m;
    memset(&m, 0, sizeof(m));
    fm_nn_init(&m.nn, ctx, g, o.dtype);
    m.c = cfg;
    m.batch = o.batch;
    m.decode = o.decode;
    m.seq = o.decode ? 1 : o.seq;
    m.past = o.decode ? o.seq : 0;
    bool t5_decode = cfg->arch == FM_LLM_T5 && o.decode;
    if (t5_decode)   /* the target positions in the self-attention cache (seq: the encoder's) */
        m.past = o.decoder_seq;
    m.cos = m.sin = FM_NONE;
    int64_t idd[2] = {m.batch, m.seq};
    fm_tid ids = lm_input(&m, t5_decode ? "decoder_input_ids" : "input_ids", FM_DTYPE_INT64, 2,
                          idd);
    fm_tid logits = FM_NONE;
    if (cfg->arch == FM_LLM_BERT)
        st = lm_build_bert(&m, ids, &logits);
    else if (cfg->arch == FM_LLM_T5)
        st = lm_build_t5(&m, ids, o.seq, o.decoder_seq, &logits);
    else
        st = build_decoder(&m, ids, &logits);
    if (!st && m.nn.st)
        st = m.nn.st;
    if (st)
        goto fail;
    if (o.with_loss && !o.decode) {
        struct fm_loss_info li;
        st = fm_graph_add_loss(g, logits, &li);
        if (st)
            goto fail;
    }
    st = fm_graph_finalize(g);
    if (st)
        goto fail;
    *out = g;
    return FM_OK;
fail:
    fm_graph_free(g);
    return st;
}

/* ---- the closed form of the parameter count ---- */

static uint64_t u(int64_t v)
{
    return (uint64_t)v;
}

void fm_llm_params(const struct fm_llm_config *c, uint64_t *total, uint64_t *non_embedding)
{
    uint64_t h = u(c->hidden), v = u(c->vocab), f = u(c->ffn), hd = u(c->head_dim);
    uint64_t nh = u(c->heads), kv = u(c->kv_heads);
    uint64_t emb = v * h, layers = 0, other = 0;
    uint64_t norm = c->rms_norm ? h : 2 * h;
    switch (c->arch) {
    case FM_LLM_GPT2: {
        uint64_t per = 2 * 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h);
        layers = u(c->layers) * per;
        emb += u(c->max_pos) * h;
        other = 2 * h;
        break;
    }
    case FM_LLM_GPT_NEOX: {
        uint64_t bias = c->qkv_bias ? 1 : 0;
        uint64_t per = 2 * 2 * h + (3 * h * h + bias * 3 * h) + (h * h + bias * h) +
                       (h * f + f) + (f * h + h);
        layers = u(c->layers) * per;
        other = 2 * h;
        break;
    }
    case FM_LLM_BERT: {
        uint64_t per = 4 * (h * h + h) + 2 * 2 * h + (h * f + f) + (f * h + h);
        layers = u(c->layers) * per;
        emb += u(c->max_pos) * h + u(c->type_vocab) * h;
        other = 2 * h                   /* embeddings.LayerNorm */
                + h * h + h + 2 * h     /* cls.predictions.transform: dense, LayerNorm */
                + v;                    /* cls.predictions.bias */
        break;
    }
    case FM_LLM_T5: {
        uint64_t inner = nh * hd, attn = 4 * h * inner;
        uint64_t mlp = (c->gated_mlp ? 3 : 2) * h * f;
        uint64_t rel = u(c->rel_buckets) * nh;
        layers = u(c->layers) * (attn + mlp + 2 * h) + rel + h +
                 u(c->decoder_layers) * (2 * attn + mlp + 3 * h) + rel + h;
        break;
    }
    default: {
        uint64_t attn;
        if (c->arch == FM_LLM_DEEPSEEK_V3) {
            uint64_t qk = u(c->qk_nope_dim + c->qk_rope_dim), kvl = u(c->kv_lora_rank);
            uint64_t b = c->qkv_bias ? 1 : 0;
            uint64_t q = c->q_lora_rank ? h * u(c->q_lora_rank) + b * u(c->q_lora_rank) +
                                              u(c->q_lora_rank) + u(c->q_lora_rank) * nh * qk
                                        : h * nh * qk;
            attn = q + h * (kvl + u(c->qk_rope_dim)) + b * (kvl + u(c->qk_rope_dim)) + kvl +
                   kvl * nh * u(c->qk_nope_dim + c->v_head_dim) +
                   nh * u(c->v_head_dim) * h + b * h;
        } else {
            attn = h * nh * hd + 2 * h * kv * hd + nh * hd * h;
            if (c->qkv_bias)
                attn += nh * hd + 2 * kv * hd;
            if (c->out_bias)
                attn += h;
            if (c->qk_norm)
                attn += 2 * hd;
        }
        uint64_t norms = (c->arch == FM_LLM_GEMMA2 ? 4 : 2) * h;
        uint64_t dense = 3 * h * f + (c->mlp_bias ? 2 * f + h : 0);
        uint64_t moe = 0;
        if (c->experts) {
            uint64_t fe = u(c->moe_ffn), sf = u(c->shared_ffn);
            moe = u(c->experts) * h + u(c->experts) * 3 * h * fe;
            if (sf)
                moe += 3 * h * sf;
            if (c->shared_gate)
                moe += h;
        }
        for (int64_t i = 0; i < c->layers && i < FM_LLM_MAX_LAYERS; i++)
            layers += attn + norms + (c->experts && c->layer_moe[i] ? moe : dense);
        other = h;   /* the final norm */
        break;
    }
    }
    (void)norm;
    uint64_t head = c->tied_embeddings ? 0 : v * h;
    if (non_embedding)
        *non_embedding = layers + other;
    if (total)
        *total = emb + layers + other + head;
}
