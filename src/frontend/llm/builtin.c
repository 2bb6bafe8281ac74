/* The built-in language-model configs by name. A minimal table (one entry) so that the reader
 * and the builder can be used by name before the full table lands; the numbers are those of
 * the published config.json of each model. */
#include "llm.h"
#include "../../core/internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

struct builtin {
    const char *name, *source;
    void (*fill)(struct fm_llm_config *c);
};

static void llama3_8b(struct fm_llm_config *c)
{
    c->arch = FM_LLM_LLAMA;
    snprintf(c->model_type, sizeof(c->model_type), "llama");
    c->vocab = 128256;
    c->hidden = 4096;
    c->layers = 32;
    c->heads = 32;
    c->kv_heads = 8;
    c->head_dim = 128;
    c->ffn = 14336;
    c->max_pos = 8192;
    c->act = FM_LLM_ACT_SILU;
    c->gated_mlp = true;
    c->rms_norm = true;
    c->norm_eps = 1e-5;
    c->pos = FM_LLM_POS_ROPE;
    c->rotary_pct = 1.0;
}

static const struct builtin table[] = {
    {"llama-3-8b", "meta-llama/Meta-Llama-3-8B config.json", llama3_8b},
};
#define N_BUILTIN (sizeof(table) / sizeof(table[0]))

size_t fm_llm_builtin_count(void)
{
    return N_BUILTIN;
}

const char *fm_llm_builtin_name(size_t i)
{
    return i < N_BUILTIN ? table[i].name : NULL;
}

const char *fm_llm_builtin_source(size_t i)
{
    return i < N_BUILTIN ? table[i].source : NULL;
}

enum fm_status fm_llm_config_builtin(struct fm_ctx *ctx, const char *name,
                                     struct fm_llm_config *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; name && i < N_BUILTIN; i++) {
        if (strcasecmp(name, table[i].name) == 0) {
            table[i].fill(out);
            snprintf(out->name, sizeof(out->name), "%s", table[i].name);
            return FM_OK;
        }
    }
    const char *names[N_BUILTIN];
    for (size_t i = 0; i < N_BUILTIN; i++)
        names[i] = table[i].name;
    const char *near = fm_nearest_name(name ? name : "", names, N_BUILTIN);
    return fm_error(ctx, FM_ERR_NOT_FOUND, "unknown language model '%s'%s%s%s", name ? name : "",
                    near ? ": did you mean " : "", near ? near : "", near ? "?" : "");
}
