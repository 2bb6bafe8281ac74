/* The mixture-of-experts MLP (MixtralSparseMoeBlock, Qwen2MoeSparseMoeBlock,
 * Qwen3MoeSparseMoeBlock, DeepseekV3MoE): the router (mlp.gate, a Linear without bias to the
 * experts), softmax (sigmoid plus the score-correction bias for DeepSeek-V3), top-k and the
 * renormalization of the top-k weights when the config asks for it; then the routed rows
 * (top_k x tokens of them, or the experts' capacity when a capacity_factor caps them) gathered
 * and sent through two GroupedMatMul nodes against the stacked experts' weights as HF stores
 * them (experts.gate_up_proj (E, 2F, H), experts.down_proj (E, H, F)), weighted and summed back
 * per token; shared experts (DeepSeek-V3) or the shared expert with its sigmoid gate
 * (Qwen2-MoE) on every token. One node per projection kind, never one per expert, so a
 * 256-expert layer is as small a graph as a dense one.
 *
 * Not modelled: DeepSeek-V3's group-limited selection (n_group, topk_group) picks which
 * experts, not how many, so the count is the same; token dropping beyond the capacity is a
 * row count (min(capacity, routed)), not which tokens. */
#include "build_nn.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

fm_tid lm_moe(struct lm *m, fm_tid h)
{
    const struct fm_llm_config *c = m->c;
    int64_t hid = c->hidden, e = c->experts, k = c->top_k, f = c->moe_ffn;
    int64_t t = m->batch * m->seq;
    int64_t routed = t * k, rows = routed;
    if (c->capacity_factor > 0) {   /* GShard/Switch: each expert takes ceil(cf*T*k/E) rows */
        int64_t cap = (int64_t)ceil(c->capacity_factor * (double)routed / (double)e);
        if (cap * e < rows)
            rows = cap * e;
    }
    lm_push(m, "mlp");
    int64_t d2[2] = {t, hid};
    fm_tid x = lm_reshape(m, "tokens", h, 2, d2);
    /* router */
    fm_tid logits = lm_linear(m, "gate", x, e, false);
    fm_tid probs;
    lm_push(m, "gate");
    if (c->arch == FM_LLM_DEEPSEEK_V3) {
        probs = lm_unary(m, FM_OP_SIGMOID, "sigmoid", logits);
        int64_t ed = e;
        fm_tid bias = lm_param(m, "e_score_correction_bias", FM_ROLE_BUFFER, 1, &ed);
        fm_tid in[2] = {probs, bias};
        probs = lm_node(m, FM_OP_ADD, "score_correction", NULL, in, 2);
    } else {
        probs = lm_unary(m, FM_OP_SOFTMAX, "softmax", logits);
    }
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.axis = -1;
    a.nints = 3;
    a.ints[0] = k;
    a.ints[1] = 1;
    a.ints[2] = 1;
    fm_tid tk[2] = {FM_NONE, FM_NONE};
    lm_node_n(m, FM_OP_TOPK, "topk", &a, &probs, 1, tk, 2);
    fm_tid w = tk[0];
    if (c->norm_topk) {
        fm_attrs_init(&a);
        a.nints = 1;
        a.ints[0] = -1;
        a.flags = FM_ATTR_KEEPDIMS;
        fm_tid s = lm_node(m, FM_OP_REDUCE_SUM, "topk_sum", &a, &w, 1);
        fm_tid in[2] = {w, s};
        w = lm_node(m, FM_OP_DIV, "topk_norm", NULL, in, 2);
    }
    lm_pop(m);
    /* dispatch: the routed rows (capped by the capacity) */
    lm_push(m, "experts");
    int64_t r1 = routed;
    fm_tid idx = lm_reshape(m, "expert_index", tk[1], 1, &r1);
    int64_t r2[2] = {routed, 1};
    fm_tid wf = lm_reshape(m, "routing_weights", w, 2, r2);
    if (rows < routed) {
        idx = lm_slice_last(m, "capacity_index", idx, 0, rows);
        struct fm_attrs sa;
        fm_attrs_init(&sa);
        sa.nints = 6;
        int64_t si[6] = {0, rows, 1, 0, 1, 1};
        memcpy(sa.ints, si, sizeof(si));
        wf = lm_node(m, FM_OP_SLICE, "capacity_weights", &sa, &wf, 1);
    }
    fm_attrs_init(&a);
    a.axis = 0;
    /* the rows of the tokens routed (HF indexes hidden_states by the router's choice) */
    fm_tid in[2] = {x, idx};
    fm_tid xr = lm_node(m, FM_OP_GATHER, "dispatch", &a, in, 2);
    int64_t gu_d[3] = {e, 2 * f, hid}, dn_d[3] = {e, hid, f};
    fm_tid gu_w = lm_param(m, "gate_up_proj", FM_ROLE_PARAM, 3, gu_d);
    fm_tid dn_w = lm_param(m, "down_proj", FM_ROLE_PARAM, 3, dn_d);
    fm_tid in3[3] = {xr, gu_w, idx};
    fm_tid gu = lm_node(m, FM_OP_GROUPED_MATMUL, "gate_up_matmul", NULL, in3, 3);
    int64_t sz[2] = {f, f};
    fm_tid o[2];
    lm_split(m, "chunk", gu, -1, 2, sz, o);
    fm_tid g = lm_act(m, "act_fn", c->act, o[0]);
    fm_tid in4[2] = {g, o[1]};
    fm_tid y = lm_node(m, FM_OP_MUL, "mul", NULL, in4, 2);
    fm_tid in5[3] = {y, dn_w, idx};
    y = lm_node(m, FM_OP_GROUPED_MATMUL, "down_matmul", NULL, in5, 3);
    fm_tid in6[2] = {y, wf};
    y = lm_node(m, FM_OP_MUL, "weighted", NULL, in6, 2);
    if (rows < routed) {   /* dropped rows contribute zeros */
        struct fm_attrs pa;
        fm_attrs_init(&pa);
        pa.nints = 4;
        int64_t pi[4] = {0, 0, routed - rows, 0};
        memcpy(pa.ints, pi, sizeof(pi));
        y = lm_node(m, FM_OP_PAD, "dropped", &pa, &y, 1);
    }
    int64_t d3[3] = {t, k, hid};
    y = lm_reshape(m, "per_token", y, 3, d3);
    fm_attrs_init(&a);
    a.nints = 1;
    a.ints[0] = 1;
    y = lm_node(m, FM_OP_REDUCE_SUM, "combine", &a, &y, 1);   /* index_add_ per token */
    lm_pop(m);
    if (c->arch == FM_LLM_DEEPSEEK_V3 && c->shared_experts) {
        fm_tid s = lm_gated_mlp(m, "shared_experts", x, c->shared_ffn, false);
        fm_tid in7[2] = {y, s};
        y = lm_node(m, FM_OP_ADD, "add_shared", NULL, in7, 2);
    } else if (c->shared_experts && c->shared_ffn) {   /* Qwen2-MoE */
        fm_tid s = lm_gated_mlp(m, "shared_expert", x, c->shared_ffn, false);
        fm_tid gate = lm_linear(m, "shared_expert_gate", x, 1, false);
        gate = lm_unary(m, FM_OP_SIGMOID, "shared_expert_sigmoid", gate);
        fm_tid in7[2] = {gate, s};
        s = lm_node(m, FM_OP_MUL, "shared_expert_gated", NULL, in7, 2);
        fm_tid in8[2] = {y, s};
        y = lm_node(m, FM_OP_ADD, "add_shared", NULL, in8, 2);
    }
    int64_t d4[3] = {m->batch, m->seq, hid};
    y = lm_reshape(m, "reshape", y, 3, d4);
    lm_pop(m);
    return y;
}
