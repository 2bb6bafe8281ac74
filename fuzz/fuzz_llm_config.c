/* libFuzzer target: a HuggingFace config.json (fm_llm_config_parse), then the graph of an
 * accepted config at batch 1 and 8 tokens, training and decoding. Checks, on top of the
 * sanitizers: a refusal leaves a message; an accepted config has positive sizes and kv heads
 * dividing heads; the graph's parameter count equals the config's closed form (fm_llm_params),
 * whatever the fields, since both must be HF's model.parameters() (a T5 decoding step: fewer,
 * the decoder's alone). */
#include "fuzz_common.h"
#include "../src/frontend/llm/llm.h"

static void build_and_check(struct fm_ctx *ctx, const struct fm_llm_config *c, bool decode)
{
    struct fm_llm_build_opts o;
    fm_llm_build_opts_init(&o);
    o.seq = 8;
    o.with_loss = !decode;
    o.decode = decode;
    struct fm_graph *g = NULL;
    enum fm_status st = fm_llm_build(ctx, c, &o, &g);
    fuzz_check_status(ctx, st);
    if (st)
        return;
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = decode ? FM_MODE_INFER : FM_MODE_TRAIN;
    struct fm_counts *k = NULL;
    st = fm_count(ctx, g, &co, &k);
    fuzz_check_status(ctx, st);
    if (!st) {
        uint64_t total = 0;
        fm_llm_params(c, &total, NULL);
        /* T5's decoding step runs the decoder alone (the encoder's output is cached): a part */
        bool part = decode && c->arch == FM_LLM_T5;
        FUZZ_CHECK(part ? k->params > 0 && k->params < total : k->params == total,
                   "%s: the graph has %llu parameters, the config %llu%s", c->model_type,
                   (unsigned long long)k->params, (unsigned long long)total,
                   part ? " (a T5 decoding step: the decoder's, fewer)" : "");
    }
    fm_counts_free(k);
    fm_graph_free(g);
}

int fm_fuzz_llm_config(const uint8_t *data, size_t size)
{
    struct fm_ctx *ctx = NULL;
    if (fm_ctx_new(NULL, &ctx))
        return 0;
    struct fm_llm_config *c = calloc(1, sizeof(*c));
    if (!c)
        goto out;
    enum fm_status st = fm_llm_config_parse(ctx, (const char *)data, size, "fuzz.json", c);
    fuzz_check_status(ctx, st);
    if (st)
        goto out;
    FUZZ_CHECK(c->vocab > 0 && c->hidden > 0 && c->layers > 0 && c->heads > 0 &&
                   c->kv_heads > 0 && c->head_dim > 0 && c->heads % c->kv_heads == 0,
               "accepted sizes: vocab %lld hidden %lld layers %lld heads %lld/%lld",
               (long long)c->vocab, (long long)c->hidden, (long long)c->layers,
               (long long)c->heads, (long long)c->kv_heads);
    FUZZ_CHECK(!c->experts || (c->top_k > 0 && c->top_k <= c->experts), "top-k %lld of %lld",
               (long long)c->top_k, (long long)c->experts);
    build_and_check(ctx, c, false);
    build_and_check(ctx, c, true);
out:
    free(c);
    fm_ctx_free(ctx);
    return 0;
}

FUZZ_ENTRY(fm_fuzz_llm_config)
