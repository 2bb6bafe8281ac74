/* Tests of the language models built from HF configs (src/frontend/llm): the parameter count of
 * every architecture against its closed form written out here and against transformers 5's
 * model.parameters() of the same config.json (tools/llm_hf_params.py, from_config on the meta
 * device); the MACs of projections, grouped-query K/V, routed experts (top-k x tokens, capacity),
 * MLA's kv_b_proj and the attention core against formulas; the causal-halved and windowed
 * attention figures; decoding against a KV cache; and each bad config refused with the field
 * named. Every expected number is an exact integer. */
#include "support.h"
#include "frontend/llm/llm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

static void parse_file(struct fm_ctx *ctx, const char *file, struct fm_llm_config *c)
{
    char path[512];
    snprintf(path, sizeof(path), FM_TEST_DATA "/llm/%s", file);
    size_t len = 0;
    char *text = test_read_file(path, &len);
    FM_ASSERT_OK(ctx, fm_llm_config_parse(ctx, text, len, file, c));
    free(text);
}

static struct fm_graph *build(struct fm_ctx *ctx, const struct fm_llm_config *c, int64_t batch,
                              int64_t seq, bool train, bool decode)
{
    struct fm_llm_build_opts o;
    fm_llm_build_opts_init(&o);
    o.batch = batch;
    o.seq = seq;
    o.with_loss = train;
    o.decode = decode;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_llm_build(ctx, c, &o, &g));
    return g;
}

static const struct fm_node_cost *node_cost(const struct fm_graph *g, const struct fm_counts *k,
                                            const char *name)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        if (strcmp(fm_graph_node(g, (fm_nid)i)->name, name) == 0)
            return &k->nodes[i];
    }
    fail_msg("no layer named %s", name);
    return NULL;
}

static uint64_t fwd_macs(const struct fm_graph *g, const struct fm_counts *k, const char *name)
{
    return node_cost(g, k, name)->phase[FM_PHASE_FWD].prim[FM_PRIM_MAC];
}

/* ---- parameters: closed forms, transformers' count, fm_llm_params ---- */

/* the closed form of each tiny config (its numbers in tests/data/llm/<name>.json) */
static uint64_t closed_form(const char *file)
{
    uint64_t V = 1000, H = 128, F = 320;
    if (strcmp(file, "llama_tiny.json") == 0) {   /* H 256, F 688, 4 layers, 8 heads of 32, 2 KV */
        uint64_t h = 256, f = 688, hd = 32;
        uint64_t layer = h * 8 * hd + 2 * h * 2 * hd + 8 * hd * h + 3 * h * f + 2 * h;
        return 2 * V * h + 4 * layer + h;
    }
    uint64_t hd = 32;   /* 4 heads of 32, 2 KV heads unless said */
    uint64_t gqa = H * 4 * hd + 2 * H * 2 * hd + 4 * hd * H;
    if (strcmp(file, "mistral_tiny.json") == 0 || strcmp(file, "phi3_tiny.json") == 0)
        return 2 * V * H + 2 * (gqa + 3 * H * F + 2 * H) + H;
    if (strcmp(file, "qwen2_tiny.json") == 0)   /* tied; q, k, v biases */
        return V * H + 2 * (gqa + (4 * hd + 2 * 2 * hd) + 3 * H * F + 2 * H) + H;
    if (strcmp(file, "qwen3_tiny.json") == 0) {   /* head_dim 48; q_norm, k_norm */
        uint64_t a = H * 4 * 48 + 2 * H * 2 * 48 + 4 * 48 * H + 2 * 48;
        return 2 * V * H + 2 * (a + 3 * H * F + 2 * H) + H;
    }
    if (strcmp(file, "gemma_tiny.json") == 0) {   /* tied; head_dim 64 */
        uint64_t a = H * 4 * 64 + 2 * H * 2 * 64 + 4 * 64 * H;
        return V * H + 2 * (a + 3 * H * F + 2 * H) + H;
    }
    if (strcmp(file, "gemma2_tiny.json") == 0) {   /* 4 layers, four norms each */
        uint64_t a = H * 4 * 64 + 2 * H * 2 * 64 + 4 * 64 * H;
        return V * H + 4 * (a + 3 * H * F + 4 * H) + H;
    }
    if (strcmp(file, "gpt2_tiny.json") == 0) {   /* 256 positions, n_inner 4H, tied */
        uint64_t f = 4 * H;
        uint64_t layer = 4 * H + (3 * H * H + 3 * H) + (H * H + H) + (H * f + f) + (f * H + H);
        return V * H + 256 * H + 2 * layer + 2 * H;
    }
    if (strcmp(file, "gpt_neox_tiny.json") == 0) {   /* F 512, biases, untied */
        uint64_t f = 512;
        uint64_t layer = 4 * H + (3 * H * H + 3 * H) + (H * H + H) + (H * f + f) + (f * H + H);
        return 2 * V * H + 2 * layer + 2 * H;
    }
    if (strcmp(file, "bert_tiny.json") == 0) {   /* F 512, 256 positions, 2 token types */
        uint64_t f = 512;
        uint64_t layer = 4 * (H * H + H) + 4 * H + (H * f + f) + (f * H + H);
        return V * H + 256 * H + 2 * H + 2 * H + 2 * layer + (H * H + H + 2 * H) + V;
    }
    if (strcmp(file, "t5_tiny.json") == 0) {   /* d_kv 32 x 4 heads, d_ff 256 gated, 2 + 3 */
        uint64_t attn = 4 * H * 128, mlp = 3 * H * 256, bias = 32 * 4;
        return V * H + 2 * (attn + mlp + 2 * H) + bias + H + 3 * (2 * attn + mlp + 3 * H) +
               bias + H;
    }
    if (strcmp(file, "mixtral_tiny.json") == 0)   /* 8 experts of F 320, router */
        return 2 * V * H + 2 * (gqa + 2 * H + 8 * H + 8 * 3 * H * F) + H;
    if (strcmp(file, "qwen2_moe_tiny.json") == 0) {
        /* 3 layers, layer 1 dense (mlp_only_layers); 8 experts of 64, shared 256 + its gate */
        uint64_t a = gqa + (4 * hd + 2 * 2 * hd) + 2 * H;
        uint64_t moe = 8 * H + 8 * 3 * H * 64 + 3 * H * 256 + H;
        return 2 * V * H + 3 * a + 2 * moe + 3 * H * F + H;
    }
    if (strcmp(file, "qwen3_moe_tiny.json") == 0) {   /* 16 experts of 64, q_norm and k_norm */
        uint64_t a = gqa + 2 * hd + 2 * H;
        return 2 * V * H + 2 * (a + 16 * H + 16 * 3 * H * 64) + H;
    }
    if (strcmp(file, "deepseek_v3_tiny.json") == 0) {
        /* MLA: q_lora 96, kv_lora 64, nope 32, rope 16, v 32; layer 0 dense (F 384), then 16
         * experts of 64 and one shared expert of 64 */
        uint64_t mla = H * 96 + 96 + 96 * 4 * 48 + H * (64 + 16) + 64 + 64 * 4 * (32 + 32) +
                       4 * 32 * H;
        uint64_t moe = 16 * H + 16 * 3 * H * 64 + 3 * H * 64;
        return 2 * V * H + 3 * (mla + 2 * H) + 3 * H * 384 + 2 * moe + H;
    }
    fail_msg("no closed form for %s", file);
    return 0;
}

static void test_params_every_architecture(void **unused)
{
    (void)unused;
    /* model.parameters() of transformers 5.24 for each file (tools/llm_hf_params.py) */
    static const struct {
        const char *file;
        uint64_t hf;
    } cases[] = {
        {"llama_tiny.json", 3283200},      {"mistral_tiny.json", 600704},
        {"mixtral_tiny.json", 2323072},    {"qwen2_tiny.json", 473216},
        {"qwen2_moe_tiny.json", 1120128},  {"qwen3_tiny.json", 650048},
        {"qwen3_moe_tiny.json", 1145600},  {"gemma_tiny.json", 571008},
        {"gemma2_tiny.json", 1014912},     {"phi3_tiny.json", 600704},
        {"gpt2_tiny.json", 557568},        {"gpt_neox_tiny.json", 652800},
        {"deepseek_v3_tiny.json", 1465696}, {"bert_tiny.json", 575592},
        {"t5_tiny.json", 1145984},
    };
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config c;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        parse_file(ctx, cases[i].file, &c);
        struct fm_graph *g = build(ctx, &c, 1, 8, true, false);
        struct fm_counts *k = test_count(ctx, g, FM_MODE_TRAIN);
        uint64_t formula = closed_form(cases[i].file), by_config = 0;
        fm_llm_params(&c, &by_config, NULL);
        if (k->params != cases[i].hf || formula != cases[i].hf || by_config != cases[i].hf)
            fail_msg("%s: graph %llu, closed form %llu, fm_llm_params %llu, transformers %llu",
                     cases[i].file, (unsigned long long)k->params,
                     (unsigned long long)formula, (unsigned long long)by_config,
                     (unsigned long long)cases[i].hf);
        fm_counts_free(k);
        fm_graph_free(g);
    }
    fm_ctx_free(ctx);
}

/* Llama 3 8B (Meta's config.json): 8,030,261,248 parameters, HF's count of the model */
static void test_builtin_llama3_8b(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config c;
    FM_ASSERT_OK(ctx, fm_llm_config_builtin(ctx, "llama-3-8b", &c));
    uint64_t total = 0, non_emb = 0;
    fm_llm_params(&c, &total, &non_emb);
    uint64_t layer = 4096ull * 4096 * 2 + 2ull * 4096 * 1024 + 3ull * 4096 * 14336 + 2 * 4096;
    assert_int_equal(total, 2ull * 128256 * 4096 + 32 * layer + 4096);
    assert_int_equal(total, 8030261248ull);
    assert_int_equal(non_emb, 32 * layer + 4096);
    assert_int_equal(fm_llm_config_builtin(ctx, "llama-3-8", &c), FM_ERR_NOT_FOUND);
    EXPECT_MESSAGE(ctx, "llama-3-8");
    fm_ctx_free(ctx);
}

/* ---- MACs ---- */

static void test_projection_macs_and_gqa(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config c;
    parse_file(ctx, "llama_tiny.json", &c);
    struct fm_graph *g = build(ctx, &c, 2, 16, true, false);
    struct fm_counts *k = test_count(ctx, g, FM_MODE_TRAIN);
    uint64_t t = 2 * 16;
    assert_int_equal(fwd_macs(g, k, "model.layers.0.self_attn.q_proj"), t * 256 * 256);
    /* 2 KV heads of 32 for 8 query heads: K and V a quarter of Q */
    assert_int_equal(fwd_macs(g, k, "model.layers.0.self_attn.k_proj"), t * 256 * 64);
    assert_int_equal(fwd_macs(g, k, "model.layers.3.self_attn.v_proj"), t * 256 * 64);
    assert_int_equal(fwd_macs(g, k, "model.layers.1.mlp.down_proj"), t * 688 * 256);
    assert_int_equal(fwd_macs(g, k, "lm_head"), t * 256 * 1000);
    /* the attention core: Q K^T and A V over all S x S scores, 8 heads */
    assert_int_equal(fwd_macs(g, k, "model.layers.0.self_attn/attention"),
                     2ull * 8 * 16 * 16 * (32 + 32));
    /* the backward of a projection is twice its forward */
    const struct fm_node_cost *q = node_cost(g, k, "model.layers.2.self_attn.q_proj");
    assert_int_equal(q->phase[FM_PHASE_BWD_DATA].prim[FM_PRIM_MAC] +
                         q->phase[FM_PHASE_BWD_WEIGHT].prim[FM_PRIM_MAC],
                     2 * t * 256 * 256);
    fm_counts_free(k);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

static void test_moe_routed_macs(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config c;
    parse_file(ctx, "mixtral_tiny.json", &c);
    struct fm_graph *g = build(ctx, &c, 2, 16, true, false);
    struct fm_counts *k = test_count(ctx, g, FM_MODE_TRAIN);
    uint64_t t = 32, topk = 2, h = 128, f = 320, e = 8;
    /* top_k x tokens rows, each through one expert: not experts x tokens */
    uint64_t gu = fwd_macs(g, k, "model.layers.0.mlp.experts/gate_up_matmul");
    uint64_t dn = fwd_macs(g, k, "model.layers.0.mlp.experts/down_matmul");
    uint64_t router = fwd_macs(g, k, "model.layers.0.mlp.gate");
    assert_int_equal(gu, topk * t * h * 2 * f);
    assert_int_equal(dn, topk * t * f * h);
    assert_int_equal(router, t * h * e);
    uint64_t all = 0;
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const char *n = fm_graph_node(g, (fm_nid)i)->name;
        if (strncmp(n, "model.layers.1.mlp.", 19) == 0)
            all += k->nodes[i].phase[FM_PHASE_FWD].prim[FM_PRIM_MAC];
    }
    assert_int_equal(all, topk * t * 3 * h * f + t * h * e);
    fm_counts_free(k);
    fm_graph_free(g);

    /* a capacity factor of 0.5: each expert takes ceil(0.5 x 64 / 8) = 4 rows, 32 in all */
    c.capacity_factor = 0.5;
    g = build(ctx, &c, 2, 16, true, false);
    k = test_count(ctx, g, FM_MODE_TRAIN);
    assert_int_equal(fwd_macs(g, k, "model.layers.0.mlp.experts/gate_up_matmul"),
                     32 * h * 2 * f);
    assert_int_equal(fwd_macs(g, k, "model.layers.0.mlp.experts/down_matmul"), 32 * f * h);
    fm_counts_free(k);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

static void test_mla_and_shared_experts(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config c;
    parse_file(ctx, "deepseek_v3_tiny.json", &c);
    assert_int_equal(c.layer_moe[0], 0);   /* first_k_dense_replace 1 */
    assert_int_equal(c.layer_moe[1], 1);
    struct fm_graph *g = build(ctx, &c, 1, 16, false, false);
    struct fm_counts *k = test_count(ctx, g, FM_MODE_INFER);
    uint64_t t = 16;
    assert_int_equal(fwd_macs(g, k, "model.layers.0.self_attn.q_a_proj"), t * 128 * 96);
    assert_int_equal(fwd_macs(g, k, "model.layers.0.self_attn.q_b_proj"), t * 96 * 4 * 48);
    assert_int_equal(fwd_macs(g, k, "model.layers.0.self_attn.kv_a_proj_with_mqa"),
                     t * 128 * (64 + 16));
    assert_int_equal(fwd_macs(g, k, "model.layers.0.self_attn.kv_b_proj"), t * 64 * 4 * 64);
    /* scores over the 48-dim q/k heads, values of 32 */
    assert_int_equal(fwd_macs(g, k, "model.layers.0.self_attn/attention"),
                     4ull * 16 * 16 * (48 + 32));
    assert_int_equal(fwd_macs(g, k, "model.layers.0.mlp.gate_proj"), t * 128 * 384);
    assert_int_equal(fwd_macs(g, k, "model.layers.1.mlp.experts/gate_up_matmul"),
                     4 * t * 128 * 2 * 64);
    assert_int_equal(fwd_macs(g, k, "model.layers.2.mlp.shared_experts.up_proj"), t * 128 * 64);
    fm_counts_free(k);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- attention conventions, windows, decoding ---- */

static void test_causal_and_window_figures(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config c;
    parse_file(ctx, "gemma2_tiny.json", &c);
    /* Gemma2Config: even layers slide (window 32 in the file) */
    assert_int_equal(c.window, 32);
    assert_true(c.layer_sliding[0] && !c.layer_sliding[1] && c.layer_sliding[2] &&
                !c.layer_sliding[3]);
    char path[512];
    snprintf(path, sizeof(path), FM_TEST_DATA "/llm/gemma2_tiny.json");
    struct fm_load_opts lo;
    fm_load_opts_init(&lo);
    lo.config = path;
    lo.seq = 64;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_model_load(ctx, "gemma2", &lo, &g));
    struct fm_counts *k = test_count(ctx, g, FM_MODE_INFER);
    struct fm_llm_summary s;
    FM_ASSERT_OK(ctx, fm_llm_summarize(ctx, "gemma2", &lo, g, k, FM_RECOMPUTE_NONE, &s));
    uint64_t per = fm_work_flops(
        &node_cost(g, k, "model.layers.0.self_attn/attention")->phase[FM_PHASE_FWD]);
    assert_int_equal(s.attn_full, 4 * per);
    /* causal: 64 x 65 / 2 = 2080 of 4096 pairs; window 32: 32 x 33 / 2 + 32 x 32 = 1552 */
    uint64_t causal = (uint64_t)((double)per * 2080.0 / 4096.0);
    uint64_t window = (uint64_t)((double)per * 1552.0 / 4096.0);
    assert_int_equal(s.attn_causal, 4 * causal);
    assert_int_equal(s.attn_window, 2 * window + 2 * causal);
    /* the KV cache: K and V x 2 KV heads x 64 dims x 4 bytes, for 64 tokens in the 2 global
     * layers and window - 1 = 31 in the 2 sliding ones (transformers' sliding-window cache) */
    assert_int_equal(s.kv_cache_bytes, 2ull * 2 * 64 * 4 * (2 * 64 + 2 * 31));
    assert_int_equal(s.tokens, 64);
    fm_counts_free(k);
    fm_graph_free(g);

    /* layer_types, when the file has it, wins over the class's rule */
    const char *text = "{\"model_type\": \"gemma2\", \"vocab_size\": 100, \"hidden_size\": 64, "
                       "\"intermediate_size\": 128, \"num_hidden_layers\": 3, "
                       "\"num_attention_heads\": 2, \"head_dim\": 32, \"sliding_window\": 8, "
                       "\"layer_types\": [\"full_attention\", \"full_attention\", "
                       "\"sliding_attention\"]}";
    FM_ASSERT_OK(ctx, fm_llm_config_parse(ctx, text, strlen(text), "lt", &c));
    assert_true(!c.layer_sliding[0] && !c.layer_sliding[1] && c.layer_sliding[2]);
    fm_ctx_free(ctx);
}

/* Gemma 2's soft-capped scores: c * tanh(S / c) costs, per score, a div, a tanh and a mul
 * forward, a div, 3 muls and an add backward, and keeps tanh's output: against the same
 * config without the cap, exactly that and nothing else */
static void test_attention_softcap(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config c, plain;
    parse_file(ctx, "gemma2_tiny.json", &c);
    assert_true(c.attn_softcap > 0);
    plain = c;
    plain.attn_softcap = 0;
    struct fm_graph *g = build(ctx, &c, 2, 16, true, false);
    struct fm_graph *h = build(ctx, &plain, 2, 16, true, false);
    struct fm_counts *k = test_count(ctx, g, FM_MODE_TRAIN);
    struct fm_counts *l = test_count(ctx, h, FM_MODE_TRAIN);
    const char *name = "model.layers.1.self_attn/attention";
    const struct fm_node_cost *a = node_cost(g, k, name), *b = node_cost(h, l, name);
    /* scores: batch 2 x heads x 16 x 16 */
    uint64_t p = 2ull * (uint64_t)c.heads * 16 * 16;
    const struct fm_work *af = &a->phase[FM_PHASE_FWD], *bf = &b->phase[FM_PHASE_FWD];
    assert_int_equal(af->prim[FM_PRIM_DIV] - bf->prim[FM_PRIM_DIV], p);
    assert_int_equal(af->prim[FM_PRIM_SPECIAL] - bf->prim[FM_PRIM_SPECIAL], p);
    assert_int_equal(af->prim[FM_PRIM_MUL] - bf->prim[FM_PRIM_MUL], p);
    assert_int_equal(af->prim[FM_PRIM_MAC], bf->prim[FM_PRIM_MAC]);
    const struct fm_work *ad = &a->phase[FM_PHASE_BWD_DATA], *bd = &b->phase[FM_PHASE_BWD_DATA];
    assert_int_equal(ad->prim[FM_PRIM_DIV] - bd->prim[FM_PRIM_DIV], p);
    assert_int_equal(ad->prim[FM_PRIM_MUL] - bd->prim[FM_PRIM_MUL], 3 * p);
    assert_int_equal(ad->prim[FM_PRIM_ADD] - bd->prim[FM_PRIM_ADD], p);
    assert_int_equal(a->saved_bytes, 2 * b->saved_bytes);
    /* the CPU backend refuses the cap by name rather than running without it */
    struct fm_backend_check chk, chk_plain;
    FM_ASSERT_OK(ctx, fm_measure_check(ctx, g, "cpu", &chk));
    FM_ASSERT_OK(ctx, fm_measure_check(ctx, h, "cpu", &chk_plain));
    bool refused = false;
    for (size_t i = 0; i < chk.n_gaps; i++)
        if (strcmp(chk.gaps[i].op, "Attention") == 0 && strstr(chk.gaps[i].reason, "soft-cap"))
            refused = true;
    assert_true(refused);
    for (size_t i = 0; i < chk_plain.n_gaps; i++)
        assert_string_not_equal(chk_plain.gaps[i].op, "Attention");
    fm_counts_free(k);
    fm_counts_free(l);
    fm_graph_free(g);
    fm_graph_free(h);
    fm_ctx_free(ctx);
}

static void test_decode_against_kv_cache(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config c;
    parse_file(ctx, "llama_tiny.json", &c);
    struct fm_graph *g = build(ctx, &c, 3, 100, false, true);
    const struct fm_tensor *past =
        fm_graph_tensor(g, fm_graph_find_tensor(g, "past_key_values.0.key"));
    assert_non_null(past);
    assert_int_equal(past->role, FM_ROLE_INPUT);
    assert_int_equal(past->shape.dims[0], 3);
    assert_int_equal(past->shape.dims[1], 2);
    assert_int_equal(past->shape.dims[2], 100);
    struct fm_counts *k = test_count(ctx, g, FM_MODE_INFER);
    /* one token per sequence through the projections, 101 keys in the scores */
    assert_int_equal(fwd_macs(g, k, "model.layers.0.self_attn.q_proj"), 3 * 256 * 256);
    assert_int_equal(fwd_macs(g, k, "model.layers.0.self_attn/attention"),
                     3ull * 8 * 1 * 101 * (32 + 32));
    fm_counts_free(k);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

static void test_recompute_figures(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    char path[512];
    snprintf(path, sizeof(path), FM_TEST_DATA "/llm/llama_tiny.json");
    struct fm_load_opts lo;
    fm_load_opts_init(&lo);
    lo.config = path;
    lo.seq = 32;
    lo.zoo.with_loss = true;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_model_load(ctx, "llama", &lo, &g));
    struct fm_counts *k = test_count(ctx, g, FM_MODE_TRAIN);
    struct fm_llm_summary full, sel;
    FM_ASSERT_OK(ctx, fm_llm_summarize(ctx, "llama", &lo, g, k, FM_RECOMPUTE_FULL, &full));
    FM_ASSERT_OK(ctx, fm_llm_summarize(ctx, "llama", &lo, g, k, FM_RECOMPUTE_SELECTIVE, &sel));
    uint64_t model = 0, layers_fwd = 0, attn = 0;
    for (int p = 0; p < FM_PHASE_OPTIMIZER; p++)
        model += fm_work_flops(&k->total[p]);
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        uint64_t f = fm_work_flops(&k->nodes[i].phase[FM_PHASE_FWD]);
        if (strncmp(n->name, "model.layers.", 13) == 0)
            layers_fwd += f;
        if (n->op == FM_OP_ATTENTION)
            attn += f;
    }
    assert_int_equal(full.model_flops, model);
    assert_int_equal(full.recompute_flops, layers_fwd);   /* the forward of every layer again */
    assert_int_equal(sel.recompute_flops, attn);          /* the attention cores again */
    /* FlashAttention's backward: Q K^T again, 2 x B x H x S x S x D per layer */
    assert_int_equal(sel.flash_flops, 4ull * 2 * 8 * 32 * 32 * 32);
    /* activations: selective drops the 4 attention matrices (8 x 32 x 32 fp32 each) */
    assert_int_equal(sel.act_bytes[FM_RECOMPUTE_NONE], k->activation_bytes);
    assert_int_equal(sel.act_bytes[FM_RECOMPUTE_SELECTIVE],
                     k->activation_bytes - 4ull * 8 * 32 * 32 * 4);
    assert_true(full.act_bytes[FM_RECOMPUTE_FULL] < sel.act_bytes[FM_RECOMPUTE_SELECTIVE]);
    /* 6ND: 6 x non-embedding parameters x 32 tokens; all parameters beside it */
    uint64_t non_emb = 4 * (256ull * 256 * 2 + 2 * 256 * 64 + 3 * 256 * 688 + 2 * 256) + 256;
    assert_int_equal(full.non_embedding, non_emb);
    assert_true(full.six_nd == 6.0 * (double)non_emb * 32.0);
    assert_true(full.six_nd_all == 6.0 * 3283200.0 * 32.0);
    fm_counts_free(k);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

static void test_encoders(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config c;
    parse_file(ctx, "t5_tiny.json", &c);
    assert_int_equal(c.layers, 2);
    assert_int_equal(c.decoder_layers, 3);
    assert_true(c.gated_mlp);
    struct fm_llm_build_opts o;
    fm_llm_build_opts_init(&o);
    o.seq = 12;
    o.decoder_seq = 5;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_llm_build(ctx, &c, &o, &g));
    struct fm_counts *k = test_count(ctx, g, FM_MODE_INFER);
    /* cross-attention: 5 target queries against 12 source keys */
    assert_int_equal(fwd_macs(g, k, "decoder.block.1.layer.1.EncDecAttention/attention"),
                     4ull * 5 * 12 * (32 + 32));
    assert_int_equal(fwd_macs(g, k, "encoder.block.0.layer.1.DenseReluDense.wi_0"),
                     12ull * 128 * 256);
    assert_int_equal(fwd_macs(g, k, "lm_head"), 5ull * 128 * 1000);
    fm_counts_free(k);
    fm_graph_free(g);
    /* one decoding step: the decoder alone, 1 new target token against 5 cached ones and the
     * cached K/V of the 12-token encoder output (no encoder, no cross-attention k or v) */
    o.decode = true;
    FM_ASSERT_OK(ctx, fm_llm_build(ctx, &c, &o, &g));
    k = test_count(ctx, g, FM_MODE_INFER);
    assert_int_equal(fwd_macs(g, k, "decoder.block.1.layer.1.EncDecAttention/attention"),
                     4ull * 1 * 12 * (32 + 32));
    assert_int_equal(fwd_macs(g, k, "decoder.block.2.layer.0.SelfAttention/attention"),
                     4ull * 1 * 6 * (32 + 32));
    assert_int_equal(fwd_macs(g, k, "decoder.block.0.layer.1.EncDecAttention.q"), 128ull * 128);
    assert_int_equal(fwd_macs(g, k, "decoder.block.0.layer.0.SelfAttention.k"), 128ull * 128);
    assert_int_equal(fwd_macs(g, k, "lm_head"), 128ull * 1000);
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const char *name = fm_graph_node(g, (fm_nid)i)->name;
        assert_null(strstr(name, "encoder."));
        assert_null(strstr(name, "EncDecAttention.k"));
        assert_null(strstr(name, "EncDecAttention.v"));
    }
    fm_counts_free(k);
    fm_graph_free(g);
    /* its KV cache after the step: K and V x 4 heads x 32 dims x 4 bytes x 3 decoder layers,
     * for the 5 + 1 target tokens and the 12 source tokens */
    char path[512];
    snprintf(path, sizeof(path), FM_TEST_DATA "/llm/t5_tiny.json");
    struct fm_load_opts lo;
    fm_load_opts_init(&lo);
    lo.config = path;
    lo.seq = 12;
    lo.decoder_seq = 5;
    lo.decode = true;
    FM_ASSERT_OK(ctx, fm_model_load(ctx, "t5", &lo, &g));
    k = test_count(ctx, g, FM_MODE_INFER);
    struct fm_llm_summary s;
    FM_ASSERT_OK(ctx, fm_llm_summarize(ctx, "t5", &lo, g, k, FM_RECOMPUTE_NONE, &s));
    assert_int_equal(s.kv_cache_bytes, 3ull * 2 * 4 * 32 * 4 * (6 + 12));
    assert_int_equal(s.kv_target, 6);
    assert_int_equal(s.kv_source, 12);
    assert_int_equal(s.tokens, 1);
    fm_counts_free(k);
    fm_graph_free(g);

    parse_file(ctx, "bert_tiny.json", &c);
    g = build(ctx, &c, 2, 16, true, false);
    k = test_count(ctx, g, FM_MODE_TRAIN);
    /* the MLM decoder is the word embeddings, with its own bias */
    assert_int_equal(fwd_macs(g, k, "cls.predictions.decoder"), 32ull * 128 * 1000);
    assert_int_equal(fwd_macs(g, k, "bert.encoder.layer.1.attention.self.query"),
                     32ull * 128 * 128);
    uint64_t tied = k->params;
    fm_counts_free(k);
    fm_graph_free(g);
    /* tie_word_embeddings false: the decoder's own (vocab, hidden) weight, 1000 x 128 more
     * parameters, the graph's and the closed form's alike (fuzz_llm_config found the graph
     * still reading the word embeddings) */
    c.tied_embeddings = false;
    g = build(ctx, &c, 2, 16, true, false);
    k = test_count(ctx, g, FM_MODE_TRAIN);
    uint64_t by_config = 0;
    fm_llm_params(&c, &by_config, NULL);
    assert_int_equal(k->params, tied + 1000ull * 128);
    assert_int_equal(by_config, tied + 1000ull * 128);
    assert_int_equal(fwd_macs(g, k, "cls.predictions.decoder"), 32ull * 128 * 1000);
    fm_counts_free(k);
    fm_graph_free(g);
    c.tied_embeddings = true;
    /* learned positions end at max_position_embeddings */
    assert_int_equal(fm_llm_build(ctx, &c, &(struct fm_llm_build_opts){1, 300, 0, FM_DTYPE_FP32,
                                                                         false, false},
                                  &g),
                     FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "300", "max_position_embeddings");
    fm_ctx_free(ctx);
}

/* ---- bad configs ---- */

static void test_bad_configs(void **unused)
{
    (void)unused;
    static const struct {
        const char *text;
        enum fm_status st;
        const char *words[3];
    } cases[] = {
        {"{\"model_type\": \"mamba\", \"hidden_size\": 8}", FM_ERR_INVALID,
         {"mamba", "llama", "deepseek_v3"}},
        {"{\"hidden_size\": 8}", FM_ERR_INVALID, {"model_type", "llama", NULL}},
        {"{\"model_type\": \"llama\", \"vocab_size\": 10, \"num_hidden_layers\": 1, "
         "\"num_attention_heads\": 2, \"intermediate_size\": 8}",
         FM_ERR_INVALID, {"hidden_size", "required", NULL}},
        {"{\"model_type\": \"llama\", \"vocab_size\": 10, \"hidden_size\": 10, "
         "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"intermediate_size\": 8}",
         FM_ERR_INVALID, {"num_attention_heads = 4", "hidden_size = 10", NULL}},
        {"{\"model_type\": \"mistral\", \"vocab_size\": 10, \"hidden_size\": 16, "
         "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"num_key_value_heads\": 3, "
         "\"intermediate_size\": 8}",
         FM_ERR_INVALID, {"num_key_value_heads = 3", "num_attention_heads = 4", NULL}},
        {"{\"model_type\": \"mixtral\", \"vocab_size\": 10, \"hidden_size\": 16, "
         "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"intermediate_size\": 8, "
         "\"num_local_experts\": 4, \"num_experts_per_tok\": 5}",
         FM_ERR_INVALID, {"num_experts_per_tok = 5", "num_local_experts = 4", NULL}},
        {"{\"model_type\": \"llama\", \"vocab_size\": 10, \"hidden_size\": 16, "
         "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"intermediate_size\": 8, "
         "\"num_experts\": 8}",
         FM_ERR_INVALID, {"num_experts", "LlamaForCausalLM", NULL}},
        {"{\"model_type\": \"gpt2\", \"vocab_size\": 10, \"n_embd\": 16, \"n_layer\": 1, "
         "\"n_head\": 4, \"add_cross_attention\": true}",
         FM_ERR_INVALID, {"add_cross_attention", NULL, NULL}},
        {"{\"model_type\": \"qwen2\", \"vocab_size\": 10, \"hidden_size\": 16, "
         "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"intermediate_size\": 8, "
         "\"layer_types\": [\"full_attention\", \"linear_attention\"]}",
         FM_ERR_INVALID, {"layer_types", "linear_attention", NULL}},
        {"{\"model_type\": \"llama\", \"vocab_size\": 10, \"hidden_size\": 16, "
         "\"num_hidden_layers\": 1.5, \"num_attention_heads\": 4, \"intermediate_size\": 8}",
         FM_ERR_INVALID, {"num_hidden_layers", "1.5", NULL}},
        {"{\"model_type\": \"t5\", \"vocab_size\": 10, \"d_model\": 16, \"d_ff\": 8, "
         "\"num_layers\": 1, \"num_heads\": 2, \"feed_forward_proj\": \"gated-swish2\"}",
         FM_ERR_INVALID, {"feed_forward_proj", "gated-swish2", NULL}},
        {"{\"model_type\": \"llama\", \"vocab_size\": 10, \"hidden_size\": 16, "
         "\"num_hidden_layers\": 600, \"num_attention_heads\": 4, \"intermediate_size\": 8}",
         FM_ERR_INVALID, {"600", NULL, NULL}},
        /* head_dim 6 x rotary_pct 0.25 rotates one dim: no pair to rotate (fuzz_llm_config) */
        {"{\"model_type\": \"gpt_neox\", \"vocab_size\": 10, \"hidden_size\": 24, "
         "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"intermediate_size\": 8}",
         FM_ERR_INVALID, {"rotary_pct = 0.25", "head_dim 6", "rotates 1 dims"}},
        /* json.load keeps the last of a key given twice, cJSON the first (fuzz_llm_config) */
        {"{\"model_type\": \"bert\", \"vocab_size\": 10, \"hidden_size\": 16, "
         "\"tie_word_embeddings\": false, \"num_hidden_layers\": 1, "
         "\"num_attention_heads\": 4, \"intermediate_size\": 8, \"tie_word_embeddings\": true}",
         FM_ERR_INVALID, {"\"tie_word_embeddings\"", "twice", NULL}},
        {"{\"model_type\": \"llama\", \"vocab_size\": 10, \"hidden_size\": 16, "
         "\"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"intermediate_size\": 8, "
         "\"rope_scaling\": {\"factor\": 8.0, \"factor\": 4.0}}",
         FM_ERR_INVALID, {"\"factor\"", "twice", NULL}},
        {"[1, 2]", FM_ERR_PARSE, {"JSON object", NULL, NULL}},
        {"{\"model_type\": \"llama\",", FM_ERR_PARSE, {"JSON object", NULL, NULL}},
    };
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config c;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum fm_status st = fm_llm_config_parse(ctx, cases[i].text, strlen(cases[i].text),
                                                "bad.json", &c);
        if (st != cases[i].st)
            fail_msg("case %zu: status %s, expected %s (%s)", i, fm_status_to_string(st),
                     fm_status_to_string(cases[i].st), fm_ctx_error(ctx));
        test_expect_in(fm_ctx_error(ctx), "bad.json");
        for (int w = 0; w < 3 && cases[i].words[w]; w++)
            test_expect_in(fm_ctx_error(ctx), cases[i].words[w]);
    }
    fm_ctx_free(ctx);
}

/* a sequence beyond max_position_embeddings is a warning and counted anyway */
static void test_long_sequence_warns(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config c;
    parse_file(ctx, "llama_tiny.json", &c);
    c.max_pos = 16;
    struct fm_graph *g = build(ctx, &c, 1, 32, false, false);
    struct fm_counts *k = test_count(ctx, g, FM_MODE_INFER);
    assert_int_equal(fwd_macs(g, k, "model.layers.0.self_attn.q_proj"), 32ull * 256 * 256);
    fm_counts_free(k);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params_every_architecture),
        cmocka_unit_test(test_builtin_llama3_8b),
        cmocka_unit_test(test_projection_macs_and_gqa),
        cmocka_unit_test(test_moe_routed_macs),
        cmocka_unit_test(test_mla_and_shared_experts),
        cmocka_unit_test(test_causal_and_window_figures),
        cmocka_unit_test(test_attention_softcap),
        cmocka_unit_test(test_decode_against_kv_cache),
        cmocka_unit_test(test_recompute_figures),
        cmocka_unit_test(test_encoders),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_long_sequence_warns),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
