/* The models `plan` knows by name: the GPT shapes that the Megatron-LM papers trained (Narayanan
 * et al. 2021, table 1; Korthikanti et al. 2022, table 3: vocabulary 51,200, sequence 2,048,
 * GELU MLP of 4h, learned positions, tied embeddings) and the Llama 3 family (Dubey et al. 2024,
 * table 3; the HF configs of meta-llama/Llama-3.1-*) and Mixtral 8x7B. The HF config reader and the built-in
 * configs of src/frontend/llm serve every other model; these are the shapes the accuracy bench
 * (bench/plan_accuracy.py) reproduces. */
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

/* name, hidden, layers, heads, kv_heads, ffn */
static const struct {
    const char *name;
    int64_t hidden, layers, heads, kv_heads, ffn;
} llamas[] = {
    {"llama-3.1-8b", 4096, 32, 32, 8, 14336},
    {"llama-3.1-70b", 8192, 80, 64, 8, 28672},
    {"llama-3.1-405b", 16384, 126, 128, 8, 53248},
    /* Mixtral 8x7B (Jiang et al. 2024; mistralai/Mixtral-8x7B-v0.1's config): 8 experts of
     * the intermediate size, top 2 */
    {"mixtral-8x7b", 4096, 32, 32, 8, 14336},
};

#define N_GPT (sizeof(gpts) / sizeof(gpts[0]))
#define N_LLAMA (sizeof(llamas) / sizeof(llamas[0]))

size_t fm_plan_model_count(void)
{
    return N_GPT + N_LLAMA;
}

const char *fm_plan_model_name(size_t i)
{
    return i < N_GPT ? gpts[i].name : i < N_GPT + N_LLAMA ? llamas[i - N_GPT].name : NULL;
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
    for (size_t i = 0; i < N_LLAMA; i++) {
        if (strcasecmp(name, llamas[i].name))
            continue;
        out->arch = FM_LLM_LLAMA;
        snprintf(out->model_type, sizeof(out->model_type), "llama");
        snprintf(out->name, sizeof(out->name), "%s", llamas[i].name);
        out->vocab = 128256;
        out->hidden = llamas[i].hidden;
        out->layers = llamas[i].layers;
        out->heads = llamas[i].heads;
        out->kv_heads = llamas[i].kv_heads;
        out->head_dim = 128;
        out->ffn = llamas[i].ffn;
        out->max_pos = 131072;
        out->act = FM_LLM_ACT_SILU;
        out->gated_mlp = out->rms_norm = true;
        out->norm_eps = 1e-5;
        out->pos = FM_LLM_POS_ROPE;
        out->rotary_pct = 1.0;
        if (strcmp(llamas[i].name, "mixtral-8x7b") == 0) {
            out->arch = FM_LLM_MIXTRAL;
            snprintf(out->model_type, sizeof(out->model_type), "mixtral");
            out->vocab = 32000;
            out->max_pos = 32768;
            out->experts = 8;
            out->top_k = 2;
            out->moe_ffn = llamas[i].ffn;
            out->norm_topk = true;
        }
        return FM_OK;
    }
    const char *names[N_GPT + N_LLAMA];
    for (size_t i = 0; i < fm_plan_model_count(); i++)
        names[i] = fm_plan_model_name(i);
    const char *near = fm_nearest_name(name, names, fm_plan_model_count());
    return fm_error(ctx, FM_ERR_NOT_FOUND,
                    "unknown model '%s' for a plan%s%s%s (known: megatron-gpt-1.7b ... "
                    "megatron-gpt-1t, llama-3.1-8b, llama-3.1-70b, llama-3.1-405b, mixtral-8x7b)",
                    name, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
}
