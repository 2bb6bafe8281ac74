/* The models `plan` knows by name: the GPT shapes that the Megatron-LM papers trained (Narayanan
 * et al. 2021, table 1; Korthikanti et al. 2022, table 3: vocabulary 51,200, sequence 2,048,
 * GELU MLP of 4h, learned positions, tied embeddings), which no HF config describes; every other
 * name is a built-in config of src/frontend/llm (llama-3.1-405b, mixtral-8x7b, ...). */
#include "plan.h"

#include <string.h>
#include <strings.h>

struct plan_model {
    const char *name;
    int64_t hidden, layers, heads;
};

/* name, hidden, layers, heads */
static const struct plan_model gpts[] = {
    {"megatron-gpt-1.7b", 2304, 24, 24},   {"megatron-gpt-3.6b", 3072, 30, 32},
    {"megatron-gpt-7.5b", 4096, 36, 32},   {"megatron-gpt-18b", 6144, 40, 48},
    {"megatron-gpt-22b", 6144, 48, 64},    {"megatron-gpt-39b", 8192, 48, 64},
    {"megatron-gpt-76b", 10240, 60, 80},   {"megatron-gpt-145b", 12288, 80, 96},
    {"megatron-gpt-175b", 12288, 96, 96},  {"megatron-gpt-310b", 16384, 96, 128},
    {"megatron-gpt-530b", 20480, 105, 128}, {"megatron-gpt-1t", 25600, 128, 160},
};

#define N_GPT (sizeof(gpts) / sizeof(gpts[0]))

size_t fm_plan_model_count(void)
{
    return N_GPT;
}

const char *fm_plan_model_name(size_t i)
{
    return i < N_GPT ? gpts[i].name : NULL;
}

enum fm_status fm_plan_model(struct fm_ctx *ctx, const char *name, struct fm_llm_config *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < N_GPT; i++) {
        if (strcasecmp(name, gpts[i].name))
            continue;
        out->arch = FM_LLM_GPT2;
        snprintf(out->model_type, sizeof(out->model_type), "gpt2");
        snprintf(out->name, sizeof(out->name), "%s", gpts[i].name);
        out->vocab = 51200;
        out->hidden = gpts[i].hidden;
        out->layers = gpts[i].layers;
        out->heads = out->kv_heads = gpts[i].heads;
        out->head_dim = gpts[i].hidden / gpts[i].heads;
        out->ffn = 4 * gpts[i].hidden;
        out->max_pos = 2048;
        out->act = FM_LLM_ACT_GELU;
        out->norm_eps = 1e-5;
        out->qkv_bias = out->out_bias = out->mlp_bias = true;
        out->tied_embeddings = true;
        out->pos = FM_LLM_POS_LEARNED;
        out->rotary_pct = 1.0;
        return FM_OK;
    }
    /* every other name: the built-in configs (src/frontend/llm/builtin.c) */
    enum fm_status st = fm_llm_config_builtin(ctx, name, out);
    if (st != FM_ERR_NOT_FOUND)
        return st;
    char theirs[512];
    snprintf(theirs, sizeof(theirs), "%s", fm_ctx_error(ctx));
    if (strncasecmp(name, "megatron", 8) == 0) {
        const char *names[N_GPT];
        for (size_t i = 0; i < N_GPT; i++)
            names[i] = gpts[i].name;
        const char *near = fm_nearest_name(name, names, N_GPT);
        return fm_error(ctx, FM_ERR_NOT_FOUND,
                        "unknown model '%s' for a plan%s%s%s (the Megatron-LM papers' GPTs: "
                        "megatron-gpt-1.7b ... megatron-gpt-1t)",
                        name, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
    }
    return fm_error(ctx, FM_ERR_NOT_FOUND, "%s (or a Megatron-LM paper's GPT: "
                                           "megatron-gpt-1.7b ... megatron-gpt-1t)", theirs);
}
