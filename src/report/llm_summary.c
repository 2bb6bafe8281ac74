/* The figures a language model's count is read with (docs/zoo.md, "Language models"), all from
 * the counted graph except the parameter figures and the KV cache, which come from the config:
 *
 *  - attention: the default totals count every score of the S x S matrix, as SDPA with a mask
 *    executes it (and as FlopCounterMode and Megatron-LM's formula count); beside them the
 *    causal half (the (query, key) pairs at or below the diagonal: S(S+1)/2 of S^2) and the
 *    causal half with the sliding windows (what a block-skipping FlashAttention kernel
 *    computes), each Attention node's forward FLOPs scaled by its fraction of pairs;
 *  - model FLOPs: the counted forward and backward, no optimizer; hardware FLOPs add what the
 *    recomputation runs again: full = the forward of every layer, selective = the attention
 *    cores (Korthikanti et al. 2022); FlashAttention's backward recomputing QK^T is a separate
 *    figure (2 x B x H x Sq x Sk x D per attention, what FlopCounterMode's 2.5x includes);
 *  - 6ND: 6 x N x tokens (2 x N x tokens for inference) with N = the non-embedding parameters
 *    a token meets (Kaplan et al. 2020's N; for a mixture of experts the top-k routed experts
 *    of each MoE layer, not all of them) and with every parameter, beside the counted figure;
 *  - activations kept for the backward with each recompute: none is the count's own figure;
 *    selective drops the attention matrices the Attention nodes keep; full keeps the input of
 *    every layer, one layer's activations (recomputed in its backward) and what lies outside
 *    the layers (embeddings, final norm, logits, loss), each kept tensor attributed to the
 *    layer of the node that keeps it;
 *  - the KV cache (inference): K and V of every layer for the tokens seen after this pass
 *    (DeepSeek's MLA: the latent and the rope key; T5: the decoder's self-attention K and V of
 *    the target, decoder_seq tokens after the prefill and decoder_seq + 1 after a decoding
 *    step, and its cross-attention K and V of the encoder output, seq tokens).
 * Weights, gradients and optimizer state are the count's own (the storage dtypes of the
 * precision recipe: fp32 master weights and Adam moments under mixed precision). */
#include "../frontend/llm/llm.h"
#include "../ops/ops.h"
#include "../core/internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const recompute_names[FM_RECOMPUTE_COUNT] = {"none", "selective", "full"};

const char *fm_recompute_name(enum fm_recompute r)
{
    return (unsigned)r < FM_RECOMPUTE_COUNT ? recompute_names[r] : "?";
}

bool fm_recompute_parse(const char *s, enum fm_recompute *out)
{
    for (int i = 0; s && i < FM_RECOMPUTE_COUNT; i++) {
        if (strcasecmp(s, recompute_names[i]) == 0) {
            *out = (enum fm_recompute)i;
            return true;
        }
    }
    return false;
}

#define MAX_STACK (2 * FM_LLM_MAX_LAYERS)

/* The layer a node belongs to (its HF module path's stack and index), or -1 outside them. */
static int layer_of(const char *name)
{
    static const struct {
        const char *prefix;
        int offset;
    } stacks[] = {
        {"model.layers.", 0},        {"transformer.h.", 0},  {"gpt_neox.layers.", 0},
        {"bert.encoder.layer.", 0},  {"encoder.block.", 0},  {"decoder.block.", FM_LLM_MAX_LAYERS},
    };
    for (size_t i = 0; i < sizeof(stacks) / sizeof(stacks[0]); i++) {
        size_t n = strlen(stacks[i].prefix);
        if (strncmp(name, stacks[i].prefix, n) != 0)
            continue;
        char *end;
        long v = strtol(name + n, &end, 10);
        if (end == name + n || v < 0 || v >= FM_LLM_MAX_LAYERS)
            return -1;
        return (int)v + stacks[i].offset;
    }
    return -1;
}

/* (query, key) pairs a kernel skipping masked blocks computes: sq queries at the end of sk keys,
 * causal, each seeing at most window keys (0: no window) */
static double pairs(int64_t sq, int64_t sk, bool causal, int64_t window)
{
    double total = 0;
    if (!causal && !window)
        return (double)sq * (double)sk;
    /* query i (0-based among sq) sits at position sk - sq + i and sees keys up to it */
    int64_t first = sk - sq;
    if (!causal)   /* a window without the causal mask (decoding): the last window keys */
        return (double)sq * (double)(window && window < sk ? window : sk);
    for (int64_t i = 0; i < sq; i++) {
        int64_t seen = first + i + 1;
        if (window && seen > window)
            seen = window;
        total += (double)seen;
    }
    return total;
}

static uint64_t kv_cache(const struct fm_llm_config *c, int64_t batch, int64_t sk, int64_t enc,
                         size_t bytes)
{
    uint64_t b = (uint64_t)batch, s = (uint64_t)sk;
    switch (c->arch) {
    case FM_LLM_BERT:
        return 0;
    case FM_LLM_T5:   /* self-attention K, V for the target, cross-attention K, V for the source */
        return (uint64_t)c->decoder_layers * 2 * b * (uint64_t)(c->heads * c->head_dim) *
               (s + (uint64_t)enc) * bytes;
    case FM_LLM_DEEPSEEK_V3:
        return (uint64_t)c->layers * b * s * (uint64_t)(c->kv_lora_rank + c->qk_rope_dim) * bytes;
    default: {   /* a sliding layer keeps its last window - 1 positions, as the graph reads */
        uint64_t total = 0;
        for (int64_t l = 0; l < c->layers && l < FM_LLM_MAX_LAYERS; l++) {
            uint64_t kept = s;
            if (c->layer_sliding[l] && c->window > 0 && kept > (uint64_t)(c->window - 1))
                kept = (uint64_t)(c->window - 1);
            total += 2 * b * kept * (uint64_t)(c->kv_heads * c->head_dim) * bytes;
        }
        return total;
    }
    }
}

enum fm_status fm_llm_summarize(struct fm_ctx *ctx, const char *model,
                                const struct fm_load_opts *load, const struct fm_graph *g,
                                const struct fm_counts *c, enum fm_recompute recompute,
                                struct fm_llm_summary *out)
{
    memset(out, 0, sizeof(*out));
    out->recompute = recompute;
    struct fm_llm_config *cfg = fm_alloc(ctx, sizeof(*cfg));
    uint64_t *layer_kept = fm_alloc(ctx, sizeof(uint64_t) * MAX_STACK);
    size_t nt = fm_graph_tensor_count(g);
    bool *kept = fm_alloc(ctx, nt ? nt : 1);
    enum fm_status st = FM_OK;
    if (!cfg || !layer_kept || !kept) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory summarizing a language model");
        goto done;
    }
    st = fm_llm_config_load(ctx, model, load, cfg);
    if (st)
        goto done;
    bool train = c->mode == FM_MODE_TRAIN;
    int64_t batch = load && load->zoo.batch > 0 ? load->zoo.batch : 1;
    int64_t seq = load && load->seq > 0 ? load->seq
                  : cfg->max_pos > 0 && cfg->max_pos < 2048 ? cfg->max_pos
                                                            : 2048;
    int64_t dec_seq = load && load->decoder_seq > 0 ? load->decoder_seq : seq;
    bool decode = load && load->decode;
    out->tokens = (uint64_t)batch * (uint64_t)(decode ? 1 : seq);
    if (cfg->arch == FM_LLM_T5 && !decode)
        out->tokens = (uint64_t)batch * (uint64_t)(seq + dec_seq);

    /* parameters: all, non-embedding, and the part a token meets */
    fm_llm_params(cfg, &out->params, &out->non_embedding);
    out->active = out->non_embedding;
    if (cfg->experts > cfg->top_k) {
        uint64_t per_expert = 3 * (uint64_t)cfg->hidden * (uint64_t)cfg->moe_ffn;
        for (int64_t i = 0; i < cfg->layers && i < FM_LLM_MAX_LAYERS; i++) {
            if (cfg->layer_moe[i])
                out->active -= (uint64_t)(cfg->experts - cfg->top_k) * per_expert;
        }
    }

    for (int p = 0; p < FM_PHASE_OPTIMIZER; p++)
        out->model_flops += fm_work_flops(&c->total[p]);
    double nd = (double)out->tokens * (train ? 6.0 : 2.0);
    out->six_nd = nd * (double)out->active;
    out->six_nd_all = nd * (double)out->params;

    /* the graph's attention nodes, layers and kept tensors */
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = c->mode;
    co.optimizer = c->optimizer;
    const fm_nid *order = fm_graph_topo_order(g);
    uint64_t nonlayer_kept = 0, layer_fwd = 0, attn_saved = 0;
    size_t act_size = 0;
    int n_layers = 0;
    for (size_t i = 0; i < c->n_nodes; i++) {
        fm_nid id = order[i];
        const struct fm_node *n = fm_graph_node(g, id);
        const struct fm_node_cost *nc = &c->nodes[id];
        uint64_t fwd = fm_work_flops(&nc->phase[FM_PHASE_FWD]);
        int layer = layer_of(n->name);
        if (layer >= 0) {
            layer_fwd += fwd;
            if (layer + 1 > n_layers)
                n_layers = layer + 1;
        }
        if (!act_size && n->op == FM_OP_EMBEDDING)
            act_size = fm_dtype_size(fm_graph_tensor(g, n->out[0])->dtype);
        if (n->op == FM_OP_ATTENTION) {
            const struct fm_shape *q = &fm_graph_tensor(g, n->in[0])->shape;
            const struct fm_shape *k = &fm_graph_tensor(g, n->in[1])->shape;
            int64_t sq = q->dims[2], sk = k->dims[2];
            bool causal = n->attrs.flags & FM_ATTR_CAUSAL;
            int64_t window = n->attrs.nints >= 1 ? n->attrs.ints[0] : 0;
            double full = (double)sq * (double)sk;
            out->attn_full += fwd;
            out->attn_causal += (uint64_t)((double)fwd * pairs(sq, sk, causal, 0) / full);
            out->attn_window += (uint64_t)((double)fwd * pairs(sq, sk, causal, window) / full);
            if (train) {
                out->flash_flops += 2 * (uint64_t)q->dims[0] * (uint64_t)q->dims[1] *
                                    (uint64_t)sq * (uint64_t)sk * (uint64_t)q->dims[3];
                attn_saved += nc->saved_bytes;
            }
        }
        if (!train)
            continue;
        struct fm_node_cost tmp;
        uint64_t sin = 0, sout = 0;
        st = fm_node_cost_kept(ctx, g, id, &co, &tmp, &sin, &sout);
        if (st)
            goto done;
        uint64_t own = nc->saved_bytes;
        for (int k = 0; k < n->n_in + n->n_out && k < 64; k++) {
            bool in = k < n->n_in;
            fm_tid t = in ? n->in[k] : n->out[k - n->n_in];
            bool keep = in ? (sin >> k) & 1u : (sout >> (k - n->n_in)) & 1u;
            if (!keep || t == FM_NONE || kept[t])
                continue;
            const struct fm_tensor *tt = fm_graph_tensor(g, t);
            if (tt->role != FM_ROLE_ACTIVATION)
                continue;
            kept[t] = true;
            uint64_t ne = 0;
            fm_shape_numel(&tt->shape, &ne);
            own += ne * fm_dtype_size(tt->dtype);
        }
        if (layer >= 0)
            layer_kept[layer] += own;
        else
            nonlayer_kept += own;
    }
    if (!act_size)
        act_size = fm_dtype_size(FM_DTYPE_FP32);
    if (train) {
        if (recompute == FM_RECOMPUTE_FULL)
            out->recompute_flops = layer_fwd;
        else if (recompute == FM_RECOMPUTE_SELECTIVE)
            out->recompute_flops = out->attn_full;
        out->act_bytes[FM_RECOMPUTE_NONE] = c->activation_bytes;
        out->act_bytes[FM_RECOMPUTE_SELECTIVE] = c->activation_bytes - attn_saved;
        uint64_t biggest = 0, layers = 0;
        for (int l = 0; l < n_layers && l < MAX_STACK; l++) {
            if (!layer_kept[l])
                continue;
            layers++;
            if (layer_kept[l] > biggest)
                biggest = layer_kept[l];
        }
        /* each layer keeps its input, the residual stream (tokens x hidden) */
        uint64_t stream = (uint64_t)batch * (uint64_t)(cfg->arch == FM_LLM_T5 ? dec_seq : seq) *
                          (uint64_t)cfg->hidden * act_size;
        out->act_bytes[FM_RECOMPUTE_FULL] = nonlayer_kept + layers * stream + biggest;
    } else {
        int64_t sk = decode ? seq + 1 : seq;
        /* T5 decoding: seq is the encoder's length, decoder_seq the target cached before */
        int64_t target = decode ? dec_seq + 1 : dec_seq;
        if (cfg->arch == FM_LLM_T5) {
            out->kv_target = (uint64_t)target;
            out->kv_source = (uint64_t)seq;
        }
        out->kv_cache_bytes = kv_cache(cfg, batch, cfg->arch == FM_LLM_T5 ? target : sk, seq,
                                       act_size);
    }
done:
    fm_dealloc(ctx, kept);
    fm_dealloc(ctx, layer_kept);
    fm_dealloc(ctx, cfg);
    return st;
}
