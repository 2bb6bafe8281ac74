/* Language models from their configs (src/frontend/llm) against HuggingFace transformers and
 * PyTorch's FlopCounterMode: for each architecture, tests/data/llm/<arch>/config.json (a config
 * as transformers writes it) is read by fm_llm_config_parse, built by fm_llm_build at the
 * fixture's batch and sequence with the loss, and counted for training; the parameters must
 * equal transformers' own count exactly, and the MACs of what FlopCounterMode counts (matrix
 * products: flopmeter's matmul, conv and attention classes) must equal its FLOPs / 2 exactly,
 * forward and forward + backward (expected.json, made by tools/make_llm_oracle.py with eager
 * attention and eager experts; docs/counting.md, "Language models vs FlopCounterMode"), and
 * so must every module's forward products, FlopCounterMode's per-module breakdown against
 * flopmeter's nodes named under the same transformers module path; the totals again at a
 * second shape (one sequence of an odd length); for causal LMs and T5 also one
 * decoding step against a KV cache (forward FLOPs; T5: the decoder alone, against its
 * self-attention cache and the cached cross-attention K/V of the encoder output). What FlopCounterMode reports with
 * transformers' default implementations (SDPA, grouped_mm experts) is reproduced from
 * flopmeter's counts too. No PyTorch is needed: the fixtures are committed.
 *
 * Also: the built-in configs (every one read and built, the published sizes), and the config
 * reader's messages on bad input (each names the field and its value). */
#include "support.h"

#include "frontend/llm/llm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the fixtures ---- */

/* A top-level integer of expected.json (json.dump with indent 2: a top-level key is the one
 * indented by two spaces; the "default" block's keys are indented by four). */
static uint64_t expected_u64(const char *text, const char *key)
{
    char pat[96];
    snprintf(pat, sizeof(pat), "\n  \"%s\": ", key);
    const char *p = strstr(text, pat);
    if (!p)
        fail_msg("expected.json has no top-level \"%s\"", key);
    char *end = NULL;
    unsigned long long v = strtoull(p + strlen(pat), &end, 10);
    if (end == p + strlen(pat))
        fail_msg("expected.json: \"%s\" is not an integer", key);
    return (uint64_t)v;
}

/* An integer inside a top-level block of expected.json ("default": what FlopCounterMode
 * reports with transformers' default implementations; "odd_shape"): key with its indentation;
 * 0 when absent. */
static uint64_t block_u64(const char *text, const char *block, const char *indent,
                          const char *key)
{
    char pat[128];
    snprintf(pat, sizeof(pat), "\n  \"%s\": {", block);
    const char *blk = strstr(text, pat);
    if (!blk)
        fail_msg("expected.json has no block \"%s\"", block);
    snprintf(pat, sizeof(pat), "\n%s\"%s\": ", indent, key);
    const char *p = strstr(blk, pat);
    return p ? (uint64_t)strtoull(p + strlen(pat), NULL, 10) : 0;
}

static uint64_t default_u64(const char *text, const char *indent, const char *key)
{
    return block_u64(text, "default", indent, key);
}

/* MACs of the classes FlopCounterMode counts (matrix products) in the phases [from, to]. */
static uint64_t product_macs(const struct fm_counts *c, enum fm_phase from, enum fm_phase to)
{
    static const enum fm_class cls[] = {FM_CLASS_MATMUL, FM_CLASS_CONV, FM_CLASS_ATTENTION};
    uint64_t macs = 0;
    for (size_t i = 0; i < sizeof(cls) / sizeof(cls[0]); i++)
        for (int ph = (int)from; ph <= (int)to; ph++)
            macs += fm_work_macs(&c->by_class[cls[i]][ph]);
    return macs;
}

static void read_fixture_config(struct fm_ctx *ctx, const char *arch_dir,
                                struct fm_llm_config *cfg)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/llm/%s/config.json", FM_TEST_DATA, arch_dir);
    size_t n = 0;
    char *text = test_read_file(path, &n);
    FM_ASSERT_OK(ctx, fm_llm_config_parse(ctx, text, n, path, cfg));
    free(text);
}

/* 2 x the forward product MACs of the nodes at a module path (the node of that name, or under
 * it: "model.layers.0.mlp" holds "model.layers.0.mlp.up_proj"). */
static uint64_t module_fwd_flops(const struct fm_graph *g, const struct fm_counts *c,
                                 const char *path, size_t len)
{
    uint64_t macs = 0;
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        enum fm_class k = fm_op_class(n->op);
        if (k != FM_CLASS_MATMUL && k != FM_CLASS_CONV && k != FM_CLASS_ATTENTION)
            continue;
        if (strncmp(n->name, path, len) == 0 &&
            (n->name[len] == '\0' || n->name[len] == '.' || n->name[len] == '/'))
            macs += c->nodes[i].phase[FM_PHASE_FWD].prim[FM_PRIM_MAC];
    }
    return 2 * macs;
}

/* Every module of FlopCounterMode's forward breakdown ("LlamaForCausalLM.model.layers.0.mlp":
 * the class, then the module path) against flopmeter's nodes named under the same path: the
 * layers are named as transformers' modules, and each module's products agree, not only the
 * totals. Returns how many modules were compared. */
static size_t check_modules(const char *exp, const struct fm_graph *g, const struct fm_counts *c)
{
    const char *p = strstr(exp, "\n  \"forward_by_module\": {");
    assert_non_null(p);
    p = strchr(p, '{') + 1;
    const char *end = strchr(p, '}');
    assert_non_null(end);
    size_t compared = 0;
    while (p < end) {
        const char *k = strchr(p, '"');
        if (!k || k > end)
            break;
        const char *ke = strchr(k + 1, '"');
        assert_non_null(ke);
        unsigned long long want = strtoull(ke + 2, NULL, 10);
        p = ke + 1;
        const char *dot = memchr(k + 1, '.', (size_t)(ke - k - 1));
        if (!dot)
            continue;   /* the whole model: the totals above */
        char path[256];
        size_t len = (size_t)(ke - dot - 1);
        assert_true(len < sizeof(path));
        memcpy(path, dot + 1, len);
        path[len] = '\0';
        uint64_t got = module_fwd_flops(g, c, path, len);
        if (got != want)
            fail_msg("module %s: flopmeter %llu forward FLOPs of products, FlopCounterMode %llu",
                     path, (unsigned long long)got, want);
        compared++;
    }
    return compared;
}

/* Reads, builds and counts one fixture and compares it with transformers and FlopCounterMode. */
static void check_oracle(const char *arch_dir, enum fm_llm_arch arch)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config *cfg = calloc(1, sizeof(*cfg));
    assert_non_null(cfg);
    read_fixture_config(ctx, arch_dir, cfg);
    assert_int_equal(cfg->arch, arch);
    assert_string_equal(fm_llm_arch_name(cfg->arch), fm_llm_arch_name(arch));

    char path[512];
    snprintf(path, sizeof(path), "%s/llm/%s/expected.json", FM_TEST_DATA, arch_dir);
    char *exp = test_read_file(path, NULL);
    test_expect_in(exp, fm_llm_arch_name(arch));   /* "architecture": the same class */

    struct fm_llm_build_opts o;
    fm_llm_build_opts_init(&o);
    o.batch = (int64_t)expected_u64(exp, "batch");
    o.seq = (int64_t)expected_u64(exp, "seq");
    o.decoder_seq = (int64_t)expected_u64(exp, "decoder_seq");
    o.with_loss = true;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_llm_build(ctx, cfg, &o, &g));
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = FM_MODE_TRAIN;
    co.optimizer = FM_OPTIM_NONE;
    struct fm_counts *c = NULL;
    FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &c));

    /* parameters: sum(p.numel() for p in model.parameters()), tied embeddings once */
    uint64_t params = expected_u64(exp, "parameters");
    assert_int_equal(c->params, params);
    assert_int_equal(c->trainable_params, expected_u64(exp, "trainable_parameters"));
    uint64_t total = 0, non_embedding = 0;
    fm_llm_params(cfg, &total, &non_embedding);
    assert_int_equal(total, params);
    assert_true(non_embedding < total);

    /* FlopCounterMode's FLOPs are 2 x the MACs of matrix products */
    uint64_t fwd = product_macs(c, FM_PHASE_FWD, FM_PHASE_FWD);
    uint64_t train = product_macs(c, FM_PHASE_FWD, FM_PHASE_BWD_WEIGHT);
    assert_int_equal(2 * fwd, expected_u64(exp, "forward_flops"));
    assert_int_equal(2 * train, expected_u64(exp, "train_flops"));
    assert_true(check_modules(exp, g, c) >= 10);

    /* FlopCounterMode with transformers' defaults, from flopmeter's counts: the routed experts
     * (grouped_mm) count 0, and attention run as SDPA counts 2.5x its forward in the backward
     * instead of 2x (the SDPA share is the fixture's: which attentions PyTorch's CPU SDPA runs
     * fused depends on their shapes and masks) */
    uint64_t routed_fwd = 0, routed_all = 0, attn_fwd = 0;
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        const struct fm_work *w = c->nodes[i].phase;
        if (fm_op_class(n->op) == FM_CLASS_ATTENTION)
            attn_fwd += 2 * fm_work_macs(&w[FM_PHASE_FWD]);
        if (fm_op_class(n->op) != FM_CLASS_MATMUL || !strstr(n->name, ".experts"))
            continue;
        routed_fwd += 2 * fm_work_macs(&w[FM_PHASE_FWD]);
        for (int ph = FM_PHASE_FWD; ph <= FM_PHASE_BWD_WEIGHT; ph++)
            routed_all += 2 * fm_work_macs(&w[ph]);
    }
    bool grouped = strstr(exp, "\n    \"experts_implementation\": \"grouped_mm\"") != NULL;
    assert_true(grouped == (routed_fwd > 0));
    uint64_t sdpa = default_u64(exp, "      ", "aten._scaled_dot_product_flash_attention_for_cpu");
    assert_true(sdpa <= attn_fwd);
    if (sdpa && arch != FM_LLM_T5)   /* T5's position bias sends some to the math path */
        assert_int_equal(sdpa, attn_fwd);
    assert_int_equal(default_u64(exp, "    ", "forward_flops"), 2 * fwd - routed_fwd);
    assert_int_equal(default_u64(exp, "    ", "train_flops"), 2 * train - routed_all + sdpa / 2);

    fm_counts_free(c);
    fm_graph_free(g);

    /* another shape: one sequence of an odd length (T5: a target longer than the source) */
    fm_llm_build_opts_init(&o);
    o.batch = (int64_t)block_u64(exp, "odd_shape", "    ", "batch");
    o.seq = (int64_t)block_u64(exp, "odd_shape", "    ", "seq");
    o.decoder_seq = (int64_t)block_u64(exp, "odd_shape", "    ", "decoder_seq");
    o.with_loss = true;
    FM_ASSERT_OK(ctx, fm_llm_build(ctx, cfg, &o, &g));
    c = test_count(ctx, g, FM_MODE_TRAIN);
    assert_int_equal(2 * product_macs(c, FM_PHASE_FWD, FM_PHASE_FWD),
                     block_u64(exp, "odd_shape", "    ", "forward_flops"));
    assert_int_equal(2 * product_macs(c, FM_PHASE_FWD, FM_PHASE_BWD_WEIGHT),
                     block_u64(exp, "odd_shape", "    ", "train_flops"));
    fm_counts_free(c);
    fm_graph_free(g);

    /* one decoding step: a new token per sequence against a cache of seq tokens; a sliding
     * layer's cache keeps window - 1 of them, as transformers' does. T5: the decoder alone,
     * its self-attention against decode_cache target tokens, its cross-attention against the
     * cached K/V of the encoder output (decode_encoder_seq tokens) */
    if (!strstr(exp, "\n  \"decode_forward_flops\": null")) {
        fm_llm_build_opts_init(&o);
        o.batch = (int64_t)expected_u64(exp, "batch");
        o.seq = (int64_t)expected_u64(exp, "decode_cache");
        if (arch == FM_LLM_T5) {
            o.decoder_seq = o.seq;
            o.seq = (int64_t)expected_u64(exp, "decode_encoder_seq");
        }
        o.decode = true;
        FM_ASSERT_OK(ctx, fm_llm_build(ctx, cfg, &o, &g));
        c = test_count(ctx, g, FM_MODE_INFER);
        assert_int_equal(2 * product_macs(c, FM_PHASE_FWD, FM_PHASE_FWD),
                         expected_u64(exp, "decode_forward_flops"));
        fm_counts_free(c);
        fm_graph_free(g);
    }
    free(exp);
    free(cfg);
    fm_ctx_free(ctx);
}

static void test_llama(void **state) { check_oracle("llama", FM_LLM_LLAMA); }
static void test_mistral(void **state) { check_oracle("mistral", FM_LLM_MISTRAL); }
static void test_mixtral(void **state) { check_oracle("mixtral", FM_LLM_MIXTRAL); }
static void test_qwen2(void **state) { check_oracle("qwen2", FM_LLM_QWEN2); }
static void test_qwen2_moe(void **state) { check_oracle("qwen2_moe", FM_LLM_QWEN2_MOE); }
static void test_qwen3(void **state) { check_oracle("qwen3", FM_LLM_QWEN3); }
static void test_qwen3_moe(void **state) { check_oracle("qwen3_moe", FM_LLM_QWEN3_MOE); }
static void test_gemma(void **state) { check_oracle("gemma", FM_LLM_GEMMA); }
static void test_gemma2(void **state) { check_oracle("gemma2", FM_LLM_GEMMA2); }
static void test_phi3(void **state) { check_oracle("phi3", FM_LLM_PHI3); }
static void test_gpt2(void **state) { check_oracle("gpt2", FM_LLM_GPT2); }
static void test_gpt_neox(void **state) { check_oracle("gpt_neox", FM_LLM_GPT_NEOX); }
static void test_deepseek_v3(void **state) { check_oracle("deepseek_v3", FM_LLM_DEEPSEEK_V3); }
static void test_bert(void **state) { check_oracle("bert", FM_LLM_BERT); }
static void test_t5(void **state) { check_oracle("t5", FM_LLM_T5); }

/* `--peers` on a mixture of experts says that FlopCounterMode's default in transformers 5
 * counts the routed experts as 0; on a dense model it says nothing of experts. */
static void peers_note(const char *arch_dir, bool moe)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config *cfg = calloc(1, sizeof(*cfg));
    assert_non_null(cfg);
    read_fixture_config(ctx, arch_dir, cfg);
    struct fm_llm_build_opts o;
    fm_llm_build_opts_init(&o);
    o.seq = 32;
    o.with_loss = true;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_llm_build(ctx, cfg, &o, &g));
    struct fm_counts *c = test_count(ctx, g, FM_MODE_TRAIN);
    struct fm_peer_figures pf;
    FM_ASSERT_OK(ctx, fm_peers(ctx, g, c, &pf));
    for (int k = FM_PEER_FLOP_COUNTER_FWD; k <= FM_PEER_FLOP_COUNTER_BWD; k++) {
        const char *note = pf.peer[k].note;
        if (moe)
            test_expect_in(note, "grouped_mm");
        else
            assert_null(strstr(note, "grouped_mm"));
    }
    fm_counts_free(c);
    fm_graph_free(g);
    free(cfg);
    fm_ctx_free(ctx);
}

static void test_peers_moe_note(void **state)
{
    peers_note("mixtral", true);
    peers_note("deepseek_v3", true);
    peers_note("llama", false);
}

/* ---- the built-in configs ---- */

/* Every built-in reads and builds, with the parameters that transformers' model of the same
 * config has (tools/make_llm_builtins.py --check, which also checks them against the published
 * sizes). */
static void test_builtins(void **state)
{
    static const struct {
        const char *name;
        uint64_t params;
    } sizes[] = {
        {"llama-2-7b", 6738415616ULL},
        {"llama-2-13b", 13015864320ULL},
        {"llama-2-70b", 68976648192ULL},
        {"llama-3-8b", 8030261248ULL},
        {"llama-3-70b", 70553706496ULL},
        {"llama-3.1-8b", 8030261248ULL},
        {"llama-3.1-70b", 70553706496ULL},
        {"llama-3.1-405b", 405853388800ULL},
        {"mistral-7b", 7241732096ULL},
        {"mixtral-8x7b", 46702792704ULL},
        {"mixtral-8x22b", 140620634112ULL},
        {"qwen2.5-7b", 7615616512ULL},
        {"qwen2.5-72b", 72706203648ULL},
        {"qwen3-8b", 8190735360ULL},
        {"qwen3-30b-a3b", 30532122624ULL},
        {"qwen3-235b-a22b", 235093634560ULL},
        {"gemma-2-9b", 9241705984ULL},
        {"gemma-2-27b", 27227128320ULL},
        {"phi-3-mini", 3821079552ULL},
        {"gpt2", 124439808ULL},
        {"gpt2-xl", 1557611200ULL},
        {"gpt3-175b", 174604259328ULL},
        {"pythia-6.9b", 6857302016ULL},
        {"deepseek-v3", 671026404352ULL},
        {"bert-base", 109514298ULL},
        {"bert-large", 335174458ULL},
        {"t5-base", 222903552ULL},
        {"t5-11b", 11307321344ULL},
    };
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config *cfg = calloc(1, sizeof(*cfg));
    assert_non_null(cfg);
    size_t n = fm_llm_builtin_count();
    assert_int_equal(n, sizeof(sizes) / sizeof(sizes[0]));
    assert_null(fm_llm_builtin_name(n));
    assert_null(fm_llm_builtin_source(n));
    for (size_t i = 0; i < n; i++) {
        const char *name = fm_llm_builtin_name(i);
        assert_non_null(name);
        assert_true(strlen(fm_llm_builtin_source(i)) > 0);
        FM_ASSERT_OK(ctx, fm_llm_config_builtin(ctx, name, cfg));
        assert_string_equal(cfg->name, name);
        /* a short sequence keeps the 28 builds fast; the graph must still build */
        struct fm_llm_build_opts o;
        fm_llm_build_opts_init(&o);
        o.seq = 16;
        o.with_loss = true;
        struct fm_graph *g = NULL;
        FM_ASSERT_OK(ctx, fm_llm_build(ctx, cfg, &o, &g));
        struct fm_counts *c = test_count(ctx, g, FM_MODE_TRAIN);
        uint64_t total = 0, non_embedding = 0;
        fm_llm_params(cfg, &total, &non_embedding);
        assert_int_equal(c->params, total);
        size_t k = 0;
        while (k < sizeof(sizes) / sizeof(sizes[0]) && strcmp(sizes[k].name, name) != 0)
            k++;
        if (k == sizeof(sizes) / sizeof(sizes[0]))
            fail_msg("built-in %s has no reference size here", name);
        assert_int_equal(total, sizes[k].params);
        fm_counts_free(c);
        fm_graph_free(g);
    }
    /* names are case-insensitive; an unknown one suggests the nearest */
    FM_ASSERT_OK(ctx, fm_llm_config_builtin(ctx, "Llama-3-8B", cfg));
    assert_int_equal(cfg->arch, FM_LLM_LLAMA);
    assert_int_equal(cfg->hidden, 4096);
    assert_int_equal(cfg->kv_heads, 8);
    assert_int_equal(fm_llm_config_builtin(ctx, "llama-3-9b", cfg), FM_ERR_NOT_FOUND);
    EXPECT_MESSAGE(ctx, "llama-3-9b", "llama-3-8b");
    assert_int_equal(fm_llm_config_builtin(ctx, NULL, cfg), FM_ERR_NOT_FOUND);
    /* the CLI: a name near a language model's gets the language models' suggestions, a name
     * near an image classifier's keeps the classifiers' */
    char *out = NULL, *err = NULL;
    assert_int_not_equal(test_run_cli("count llama-3-9b", &out, &err), 0);
    test_expect_in(err, "did you mean llama-3-8b");
    free(out);
    free(err);
    assert_int_not_equal(test_run_cli("count resnet5", &out, &err), 0);
    test_expect_in(err, "did you mean resnet50");
    free(out);
    free(err);
    /* what the reader made of a few published fields */
    FM_ASSERT_OK(ctx, fm_llm_config_builtin(ctx, "deepseek-v3", cfg));
    assert_int_equal(cfg->arch, FM_LLM_DEEPSEEK_V3);
    assert_int_equal(cfg->experts, 256);
    assert_int_equal(cfg->top_k, 8);
    assert_int_equal(cfg->shared_experts, 1);
    assert_int_equal(cfg->first_dense, 3);
    assert_int_equal(cfg->q_lora_rank, 1536);
    assert_int_equal(cfg->kv_lora_rank, 512);
    assert_int_equal(cfg->layer_moe[2], 0);
    assert_int_equal(cfg->layer_moe[3], 1);
    FM_ASSERT_OK(ctx, fm_llm_config_builtin(ctx, "gemma-2-9b", cfg));
    assert_int_equal(cfg->window, 4096);
    assert_int_equal(cfg->layer_sliding[0], 1);
    assert_int_equal(cfg->layer_sliding[1], 0);
    assert_true(cfg->tied_embeddings);
    FM_ASSERT_OK(ctx, fm_llm_config_builtin(ctx, "qwen2.5-7b", cfg));
    assert_true(cfg->qkv_bias);
    for (int64_t l = 0; l < cfg->layers; l++)   /* use_sliding_window: false */
        assert_int_equal(cfg->layer_sliding[l], 0);
    free(cfg);
    fm_ctx_free(ctx);
}

/* ---- bad input: each message names the field and its value ---- */

static enum fm_status parse_text(struct fm_ctx *ctx, const char *text, struct fm_llm_config *cfg)
{
    return fm_llm_config_parse(ctx, text, strlen(text), "bad.json", cfg);
}

#define LLAMA_HEAD                                                                           \
    "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", "               \
    "\"vocab_size\": 320, \"intermediate_size\": 160, \"num_hidden_layers\": 2, "           \
    "\"max_position_embeddings\": 128, \"rms_norm_eps\": 1e-05, \"hidden_act\": \"silu\", "

static void test_bad_missing_field(void **state)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config cfg;
    assert_int_equal(parse_text(ctx, LLAMA_HEAD "\"num_attention_heads\": 4}", &cfg),
                     FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "hidden_size", "bad.json");
    fm_ctx_free(ctx);
}

static void test_bad_heads_divide_hidden(void **state)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config cfg;
    assert_int_equal(parse_text(ctx,
                                LLAMA_HEAD "\"hidden_size\": 64, \"num_attention_heads\": 5, "
                                           "\"num_key_value_heads\": 5}",
                                &cfg),
                     FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "num_attention_heads", "5", "64");
    fm_ctx_free(ctx);
}

static void test_bad_kv_heads_divide_heads(void **state)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config cfg;
    assert_int_equal(parse_text(ctx,
                                LLAMA_HEAD "\"hidden_size\": 64, \"num_attention_heads\": 4, "
                                           "\"num_key_value_heads\": 3}",
                                &cfg),
                     FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "num_key_value_heads", "3", "4");
    fm_ctx_free(ctx);
}

static void test_bad_top_k_above_experts(void **state)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config cfg;
    const char *text =
        "{\"architectures\": [\"MixtralForCausalLM\"], \"model_type\": \"mixtral\", "
        "\"vocab_size\": 320, \"hidden_size\": 64, \"intermediate_size\": 96, "
        "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
        "\"max_position_embeddings\": 128, \"rms_norm_eps\": 1e-05, \"hidden_act\": \"silu\", "
        "\"num_local_experts\": 4, \"num_experts_per_tok\": 5}";
    assert_int_equal(parse_text(ctx, text, &cfg), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "num_experts_per_tok", "5", "4");
    fm_ctx_free(ctx);
}

static void test_bad_unknown_model_type(void **state)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config cfg;
    assert_int_equal(parse_text(ctx,
                                "{\"model_type\": \"mamba\", \"hidden_size\": 64, "
                                "\"num_hidden_layers\": 2, \"vocab_size\": 320}",
                                &cfg),
                     FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "model_type", "mamba");
    fm_ctx_free(ctx);
}

struct log_capture {
    char text[4096];
    size_t len;
};

static void capture_log(void *user, const char *message)
{
    struct log_capture *lc = user;
    int k = snprintf(lc->text + lc->len, sizeof(lc->text) - lc->len, "%s\n", message);
    if (k > 0)
        lc->len += (size_t)k < sizeof(lc->text) - lc->len ? (size_t)k : 0;
}

/* A sequence beyond max_position_embeddings builds (what it costs is still a count) but warns,
 * naming the field, its value and the sequence. */
static void test_seq_beyond_max_positions_warns(void **state)
{
    struct fm_ctx *ctx = test_ctx();
    struct log_capture lc = {{0}, 0};
    fm_ctx_set_log(ctx, capture_log, &lc);
    struct fm_llm_config *cfg = calloc(1, sizeof(*cfg));
    assert_non_null(cfg);
    read_fixture_config(ctx, "llama", cfg);   /* max_position_embeddings 128 */
    struct fm_llm_build_opts o;
    fm_llm_build_opts_init(&o);
    o.seq = 128;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_llm_build(ctx, cfg, &o, &g));
    assert_null(strstr(lc.text, "max_position_embeddings"));   /* at the limit: no warning */
    fm_graph_free(g);
    o.seq = 300;
    FM_ASSERT_OK(ctx, fm_llm_build(ctx, cfg, &o, &g));
    test_expect_in(lc.text, "max_position_embeddings");
    test_expect_in(lc.text, "128");
    test_expect_in(lc.text, "300");
    fm_graph_free(g);
    free(cfg);
    fm_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_llama),
        cmocka_unit_test(test_mistral),
        cmocka_unit_test(test_mixtral),
        cmocka_unit_test(test_qwen2),
        cmocka_unit_test(test_qwen2_moe),
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_qwen3_moe),
        cmocka_unit_test(test_gemma),
        cmocka_unit_test(test_gemma2),
        cmocka_unit_test(test_phi3),
        cmocka_unit_test(test_gpt2),
        cmocka_unit_test(test_gpt_neox),
        cmocka_unit_test(test_deepseek_v3),
        cmocka_unit_test(test_bert),
        cmocka_unit_test(test_t5),
        cmocka_unit_test(test_peers_moe_note),
        cmocka_unit_test(test_builtins),
        cmocka_unit_test(test_bad_missing_field),
        cmocka_unit_test(test_bad_heads_divide_hidden),
        cmocka_unit_test(test_bad_kv_heads_divide_heads),
        cmocka_unit_test(test_bad_top_k_above_experts),
        cmocka_unit_test(test_bad_unknown_model_type),
        cmocka_unit_test(test_seq_beyond_max_positions_warns),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
