/* Reads a HuggingFace config.json into struct fm_llm_config: the field names and the defaults
 * of transformers 5's configuration_<model>.py (a default applies where HF's config class has
 * one), the per-layer attention kinds from `layer_types` when the file has it (else HF's own
 * rule for the class), and the checks a graph needs (heads divide, top-k within the experts).
 *
 * It deliberately does not read what leaves FLOPs and parameters alone (rope_parameters' theta
 * and scaling, dropout, token ids, initializer ranges); a field that would change the graph and
 * that is not read (experts on a dense class, cross-attention in GPT-2 or BERT, an unknown
 * attention kind in layer_types) is refused rather than dropped. The size fields (vocabulary,
 * width, depth, heads, MLP width) are required: HF would fall back to its class defaults, but a
 * config.json without them is a mistake, and counting a default-sized model would hide it. */
#include "llm.h"
#include "../../core/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef FM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

static const struct {
    enum fm_llm_arch arch;
    const char *model_type, *cls;
} archs[] = {
    {FM_LLM_LLAMA, "llama", "LlamaForCausalLM"},
    {FM_LLM_MISTRAL, "mistral", "MistralForCausalLM"},
    {FM_LLM_MIXTRAL, "mixtral", "MixtralForCausalLM"},
    {FM_LLM_QWEN2, "qwen2", "Qwen2ForCausalLM"},
    {FM_LLM_QWEN2_MOE, "qwen2_moe", "Qwen2MoeForCausalLM"},
    {FM_LLM_QWEN3, "qwen3", "Qwen3ForCausalLM"},
    {FM_LLM_QWEN3_MOE, "qwen3_moe", "Qwen3MoeForCausalLM"},
    {FM_LLM_GEMMA, "gemma", "GemmaForCausalLM"},
    {FM_LLM_GEMMA2, "gemma2", "Gemma2ForCausalLM"},
    {FM_LLM_PHI3, "phi3", "Phi3ForCausalLM"},
    {FM_LLM_GPT2, "gpt2", "GPT2LMHeadModel"},
    {FM_LLM_GPT_NEOX, "gpt_neox", "GPTNeoXForCausalLM"},
    {FM_LLM_DEEPSEEK_V3, "deepseek_v3", "DeepseekV3ForCausalLM"},
    {FM_LLM_BERT, "bert", "BertForMaskedLM"},
    {FM_LLM_T5, "t5", "T5ForConditionalGeneration"},
};
#define N_ARCHS (sizeof(archs) / sizeof(archs[0]))

const char *fm_llm_arch_name(enum fm_llm_arch arch)
{
    for (size_t i = 0; i < N_ARCHS; i++) {
        if (archs[i].arch == arch)
            return archs[i].cls;
    }
    return "unknown";
}

#ifndef FM_HAVE_CJSON
enum fm_status fm_llm_config_parse(struct fm_ctx *ctx, const char *text, size_t n,
                                   const char *source, struct fm_llm_config *out)
{
    (void)text;
    (void)n;
    (void)out;
    return fm_error(ctx, FM_ERR_UNSUPPORTED,
                    "%s: this build reads no JSON (flopmeter was built without cJSON)",
                    source ? source : "config");
}
#else

struct rd {
    struct fm_ctx *ctx;
    const char *src;
    const cJSON *root;
    struct fm_llm_config *c;
};

static const cJSON *get(const struct rd *r, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->root, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static enum fm_status bad(const struct rd *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static enum fm_status bad(const struct rd *r, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return fm_error(r->ctx, FM_ERR_INVALID, "%s: %s", r->src, msg);
}

/* A whole number field: absent (or null) takes def, or is an error when required. */
static enum fm_status int_field(const struct rd *r, const char *key, bool required, int64_t def,
                                int64_t lo, int64_t *out)
{
    const cJSON *v = get(r, key);
    if (!v) {
        if (required)
            return bad(r, "the %s config has no '%s' (required)", r->c->model_type, key);
        *out = def;
        return FM_OK;
    }
    if (!cJSON_IsNumber(v))
        return bad(r, "'%s' must be a whole number >= %lld, got %s", key, (long long)lo,
                   fm_json_type_name(v));
    double d = v->valuedouble;
    if (d != floor(d) || d < (double)lo || d > 1e15)
        return bad(r, "'%s' must be a whole number >= %lld, got %.17g", key, (long long)lo, d);
    *out = (int64_t)d;
    return FM_OK;
}

static enum fm_status num_field(const struct rd *r, const char *key, double def, double *out)
{
    const cJSON *v = get(r, key);
    if (!v) {
        *out = def;
        return FM_OK;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0)
        return bad(r, "'%s' must be a number >= 0, got %s", key,
                   cJSON_IsNumber(v) ? "a negative number" : fm_json_type_name(v));
    *out = v->valuedouble;
    return FM_OK;
}

static enum fm_status bool_field(const struct rd *r, const char *key, bool def, bool *out)
{
    const cJSON *v = get(r, key);
    if (!v) {
        *out = def;
        return FM_OK;
    }
    if (!cJSON_IsBool(v))
        return bad(r, "'%s' must be true or false, got %s", key, fm_json_type_name(v));
    *out = cJSON_IsTrue(v);
    return FM_OK;
}

static const char *str_field(const struct rd *r, const char *key)
{
    const cJSON *v = get(r, key);
    return v && cJSON_IsString(v) ? v->valuestring : NULL;
}

/* hidden_act / activation_function / hidden_activation: the names of HF's ACT2FN that matter */
static enum fm_status act_field(const struct rd *r, const char *key, const char *def,
                                enum fm_llm_act *out)
{
    const char *s = str_field(r, key);
    if (!s && get(r, key))
        return bad(r, "'%s' must be a string", key);
    if (!s)
        s = def;
    static const struct {
        const char *name;
        enum fm_llm_act act;
    } acts[] = {
        {"silu", FM_LLM_ACT_SILU},          {"swish", FM_LLM_ACT_SILU},
        {"gelu", FM_LLM_ACT_GELU},          {"gelu_new", FM_LLM_ACT_GELU_TANH},
        {"gelu_pytorch_tanh", FM_LLM_ACT_GELU_TANH}, {"gelu_fast", FM_LLM_ACT_GELU_TANH},
        {"relu", FM_LLM_ACT_RELU},
    };
    for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++) {
        if (strcmp(s, acts[i].name) == 0) {
            *out = acts[i].act;
            return FM_OK;
        }
    }
    return bad(r, "'%s' = \"%s\" is not an activation flopmeter reads (silu, gelu, gelu_new, "
                  "gelu_pytorch_tanh, gelu_fast, relu)",
               key, s);
}

/* Refuses a field that changes the graph on a class that does not have it. */
static enum fm_status refuse_if_set(const struct rd *r, const char *key)
{
    const cJSON *v = get(r, key);
    if (!v)
        return FM_OK;
    if ((cJSON_IsNumber(v) && v->valuedouble == 0) || cJSON_IsFalse(v))
        return FM_OK;
    return bad(r, "'%s' changes the graph and is not part of %s (model_type \"%s\"): use the "
                  "model_type that has it",
               key, fm_llm_arch_name(r->c->arch), r->c->model_type);
}

/* layer_types, when present: "full_attention" or "sliding_attention" per layer. */
static enum fm_status layer_types(const struct rd *r, bool *present)
{
    const cJSON *lt = get(r, "layer_types");
    *present = false;
    if (!lt)
        return FM_OK;
    if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != (int)r->c->layers)
        return bad(r, "'layer_types' must list %lld strings (one per layer), got %d",
                   (long long)r->c->layers, cJSON_IsArray(lt) ? cJSON_GetArraySize(lt) : -1);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, lt)
    {
        if (!cJSON_IsString(e))
            return bad(r, "'layer_types'[%d] must be a string", i);
        if (strcmp(e->valuestring, "full_attention") == 0)
            r->c->layer_sliding[i] = 0;
        else if (strcmp(e->valuestring, "sliding_attention") == 0)
            r->c->layer_sliding[i] = 1;
        else
            return bad(r, "'layer_types'[%d] = \"%s\": flopmeter reads full_attention and "
                          "sliding_attention",
                       i, e->valuestring);
        i++;
    }
    *present = true;
    return FM_OK;
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        enum fm_status st_ = (x);                                                                  \
        if (st_)                                                                                   \
            return st_;                                                                            \
    } while (0)

static enum fm_status find_arch(struct rd *r)
{
    struct fm_llm_config *c = r->c;
    const char *mt = str_field(r, "model_type");
    const char *cls = NULL;
    const cJSON *a = get(r, "architectures");
    if (a && cJSON_IsArray(a) && cJSON_GetArraySize(a) > 0 &&
        cJSON_IsString(cJSON_GetArrayItem(a, 0)))
        cls = cJSON_GetArrayItem(a, 0)->valuestring;
    for (size_t i = 0; i < N_ARCHS; i++) {
        if ((mt && strcmp(mt, archs[i].model_type) == 0) ||
            (!mt && cls && strcmp(cls, archs[i].cls) == 0)) {
            c->arch = archs[i].arch;
            snprintf(c->model_type, sizeof(c->model_type), "%s", archs[i].model_type);
            return FM_OK;
        }
    }
    char known[512];
    size_t len = 0;
    for (size_t i = 0; i < N_ARCHS; i++)
        len += (size_t)snprintf(known + len, sizeof(known) - len, "%s%s", i ? ", " : "",
                                archs[i].model_type);
    if (!mt && !cls)
        return bad(r, "no 'model_type' (nor 'architectures'): a HuggingFace config.json names "
                      "its model_type, one of %s",
                   known);
    return bad(r, "model_type \"%s\"%s%s%s is not one flopmeter reads (known: %s)",
               mt ? mt : "", cls ? " (architectures \"" : "", cls ? cls : "", cls ? "\")" : "",
               known);
}

/* The fields most decoder-only classes share (names of LlamaConfig). */
static enum fm_status decoder_common(struct rd *r, int64_t vocab_def, int64_t pos_def,
                                     bool tied_def)
{
    struct fm_llm_config *c = r->c;
    TRY(int_field(r, "vocab_size", true, vocab_def, 1, &c->vocab));
    TRY(int_field(r, "hidden_size", true, 0, 1, &c->hidden));
    TRY(int_field(r, "num_hidden_layers", true, 0, 1, &c->layers));
    TRY(int_field(r, "num_attention_heads", true, 0, 1, &c->heads));
    TRY(int_field(r, "num_key_value_heads", false, c->heads, 1, &c->kv_heads));
    TRY(int_field(r, "max_position_embeddings", false, pos_def, 1, &c->max_pos));
    TRY(bool_field(r, "tie_word_embeddings", tied_def, &c->tied_embeddings));
    TRY(num_field(r, "rms_norm_eps", 1e-6, &c->norm_eps));
    c->rms_norm = true;
    c->gated_mlp = true;
    c->pos = FM_LLM_POS_ROPE;
    c->rotary_pct = 1.0;
    return FM_OK;
}

static enum fm_status head_dim_field(struct rd *r, int64_t def)
{
    struct fm_llm_config *c = r->c;
    if (def == 0) {   /* hidden / heads, which must divide */
        if (!get(r, "head_dim") && c->hidden % c->heads != 0)
            return bad(r, "num_attention_heads = %lld does not divide hidden_size = %lld (and "
                          "there is no head_dim)",
                       (long long)c->heads, (long long)c->hidden);
        def = c->hidden / c->heads;
    }
    return int_field(r, "head_dim", false, def, 1, &c->head_dim);
}

/* Qwen2/Qwen3's rule: sliding layers are those from max_window_layers on, if use_sliding_window */
static enum fm_status qwen_window(struct rd *r, bool qwen2_moe)
{
    struct fm_llm_config *c = r->c;
    bool use = false;
    int64_t mwl = 28;
    TRY(bool_field(r, "use_sliding_window", false, &use));
    TRY(int_field(r, "sliding_window", false, 4096, 0, &c->window));
    TRY(int_field(r, "max_window_layers", false, 28, 0, &mwl));
    if (!use)
        c->window = 0;
    bool present;
    TRY(layer_types(r, &present));
    if (!present) {
        for (int64_t i = 0; i < c->layers; i++) {
            if (qwen2_moe)
                c->layer_sliding[i] = use && (i + 1) % 2 && i < mwl;
            else
                c->layer_sliding[i] = c->window > 0 && i >= mwl;
        }
    }
    return FM_OK;
}

static void all_sliding(struct fm_llm_config *c)
{
    for (int64_t i = 0; i < c->layers; i++)
        c->layer_sliding[i] = c->window > 0;
}

static enum fm_status moe_fields(struct rd *r, const char *experts_key, const char *alias,
                                 int64_t experts_def, int64_t topk_def, int64_t moe_ffn_def)
{
    struct fm_llm_config *c = r->c;
    /* transformers' attribute_map: Qwen3-MoE's published configs say num_experts, and
     * transformers 5 writes the same count as num_local_experts */
    if (alias && !get(r, experts_key) && get(r, alias))
        experts_key = alias;
    TRY(int_field(r, experts_key, false, experts_def, 1, &c->experts));
    TRY(int_field(r, "num_experts_per_tok", false, topk_def, 1, &c->top_k));
    if (moe_ffn_def >= 0)
        TRY(int_field(r, "moe_intermediate_size", false, moe_ffn_def, 1, &c->moe_ffn));
    else
        c->moe_ffn = c->ffn;
    TRY(num_field(r, "capacity_factor", 0.0, &c->capacity_factor));
    if (c->top_k > c->experts)
        return bad(r, "num_experts_per_tok = %lld exceeds %s = %lld", (long long)c->top_k,
                   experts_key, (long long)c->experts);
    return FM_OK;
}

/* Qwen2-MoE/Qwen3-MoE: MoE on layers (i+1) % decoder_sparse_step == 0 not in mlp_only_layers */
static enum fm_status qwen_moe_layers(struct rd *r)
{
    struct fm_llm_config *c = r->c;
    int64_t step = 1;
    TRY(int_field(r, "decoder_sparse_step", false, 1, 0, &step));
    for (int64_t i = 0; i < c->layers; i++)
        c->layer_moe[i] = step > 0 && (i + 1) % step == 0;
    const cJSON *m = get(r, "mlp_only_layers");
    if (m) {
        if (!cJSON_IsArray(m))
            return bad(r, "'mlp_only_layers' must be a list of layer indices");
        const cJSON *e;
        cJSON_ArrayForEach(e, m)
        {
            if (!cJSON_IsNumber(e) || e->valuedouble < 0 || e->valuedouble >= (double)c->layers ||
                e->valuedouble != floor(e->valuedouble))
                return bad(r, "'mlp_only_layers' holds %g, not a layer index below %lld",
                           cJSON_IsNumber(e) ? e->valuedouble : -1.0, (long long)c->layers);
            c->layer_moe[(int64_t)e->valuedouble] = 0;
        }
    }
    return FM_OK;
}

static enum fm_status parse_arch(struct rd *r)
{
    struct fm_llm_config *c = r->c;
    bool b = false;
    switch (c->arch) {
    case FM_LLM_LLAMA:
        TRY(decoder_common(r, 32000, 2048, false));
        TRY(int_field(r, "intermediate_size", true, 0, 1, &c->ffn));
        TRY(head_dim_field(r, 0));
        TRY(act_field(r, "hidden_act", "silu", &c->act));
        TRY(bool_field(r, "attention_bias", false, &b));
        c->qkv_bias = c->out_bias = b;
        TRY(bool_field(r, "mlp_bias", false, &c->mlp_bias));
        break;
    case FM_LLM_MISTRAL:
    case FM_LLM_MIXTRAL: {
        bool mix = c->arch == FM_LLM_MIXTRAL;
        TRY(decoder_common(r, 32000, 4096 * 32, false));
        if (mix)
            TRY(num_field(r, "rms_norm_eps", 1e-5, &c->norm_eps));
        TRY(int_field(r, "intermediate_size", true, 0, 1, &c->ffn));
        TRY(head_dim_field(r, 0));
        TRY(act_field(r, "hidden_act", "silu", &c->act));
        TRY(int_field(r, "sliding_window", false, mix ? 0 : 4096, 0, &c->window));
        bool present;
        TRY(layer_types(r, &present));
        if (!present)
            all_sliding(c);
        if (mix) {
            TRY(moe_fields(r, "num_local_experts", "num_experts", 8, 2, -1));
            c->norm_topk = true;
            for (int64_t i = 0; i < c->layers; i++)
                c->layer_moe[i] = 1;
        }
        break;
    }
    case FM_LLM_QWEN2:
    case FM_LLM_QWEN3:
        TRY(decoder_common(r, 151936, 32768, false));
        TRY(int_field(r, "intermediate_size", true, 0, 1, &c->ffn));
        TRY(act_field(r, "hidden_act", "silu", &c->act));
        if (c->arch == FM_LLM_QWEN2) {
            TRY(head_dim_field(r, 0));
            c->qkv_bias = true;   /* Qwen2Attention: bias=True on q, k, v */
        } else {
            TRY(head_dim_field(r, 128));
            TRY(bool_field(r, "attention_bias", false, &b));
            c->qkv_bias = c->out_bias = b;
            c->qk_norm = true;
        }
        TRY(qwen_window(r, false));
        break;
    case FM_LLM_QWEN2_MOE:
    case FM_LLM_QWEN3_MOE: {
        bool q2 = c->arch == FM_LLM_QWEN2_MOE;
        TRY(decoder_common(r, 151936, 32768, false));
        TRY(int_field(r, "intermediate_size", true, 0, 1, &c->ffn));
        TRY(act_field(r, "hidden_act", "silu", &c->act));
        TRY(moe_fields(r, "num_experts", "num_local_experts", q2 ? 60 : 128, q2 ? 4 : 8,
                       q2 ? 1408 : 768));
        TRY(bool_field(r, "norm_topk_prob", false, &c->norm_topk));
        TRY(qwen_moe_layers(r));
        if (q2) {
            TRY(head_dim_field(r, 0));
            TRY(bool_field(r, "qkv_bias", true, &c->qkv_bias));
            TRY(int_field(r, "shared_expert_intermediate_size", false, 5632, 0, &c->shared_ffn));
            c->shared_experts = c->shared_ffn > 0;
            c->shared_gate = c->shared_ffn > 0;
            TRY(qwen_window(r, true));
        } else {
            TRY(head_dim_field(r, 0));
            TRY(bool_field(r, "attention_bias", false, &b));
            c->qkv_bias = c->out_bias = b;
            c->qk_norm = true;
            TRY(qwen_window(r, false));
        }
        break;
    }
    case FM_LLM_GEMMA:
    case FM_LLM_GEMMA2:
        TRY(decoder_common(r, 256000, 8192, true));
        TRY(int_field(r, "intermediate_size", true, 0, 1, &c->ffn));
        TRY(head_dim_field(r, 256));
        TRY(bool_field(r, "attention_bias", false, &b));
        c->qkv_bias = c->out_bias = b;
        if (c->arch == FM_LLM_GEMMA) {
            /* GemmaConfig reads hidden_act; hidden_activation (older files) wins when set */
            TRY(act_field(r, get(r, "hidden_activation") ? "hidden_activation" : "hidden_act",
                          "gelu_pytorch_tanh", &c->act));
        } else {
            TRY(act_field(r, "hidden_activation", "gelu_pytorch_tanh", &c->act));
            TRY(num_field(r, "attn_logit_softcapping", 50.0, &c->attn_softcap));
            TRY(num_field(r, "final_logit_softcapping", 30.0, &c->final_softcap));
            TRY(int_field(r, "sliding_window", false, 4096, 0, &c->window));
            bool present;
            TRY(layer_types(r, &present));
            if (!present) {   /* Gemma2Config: even layers (0, 2, ...) slide */
                for (int64_t i = 0; i < c->layers; i++)
                    c->layer_sliding[i] = (i + 1) % 2 != 0;
            }
        }
        break;
    case FM_LLM_PHI3: {
        TRY(decoder_common(r, 32064, 4096, false));
        TRY(num_field(r, "rms_norm_eps", 1e-5, &c->norm_eps));
        TRY(int_field(r, "intermediate_size", true, 0, 1, &c->ffn));
        TRY(head_dim_field(r, 0));
        TRY(act_field(r, "hidden_act", "silu", &c->act));
        TRY(int_field(r, "sliding_window", false, 0, 0, &c->window));
        bool present;
        TRY(layer_types(r, &present));
        if (!present)
            all_sliding(c);
        break;
    }
    case FM_LLM_GPT2:
        TRY(int_field(r, "vocab_size", true, 50257, 1, &c->vocab));
        TRY(int_field(r, "n_embd", true, 768, 1, &c->hidden));
        TRY(int_field(r, "n_layer", true, 12, 1, &c->layers));
        TRY(int_field(r, "n_head", true, 12, 1, &c->heads));
        TRY(int_field(r, "n_positions", false, 1024, 1, &c->max_pos));
        TRY(int_field(r, "n_inner", false, 4 * c->hidden, 1, &c->ffn));
        TRY(act_field(r, "activation_function", "gelu_new", &c->act));
        TRY(num_field(r, "layer_norm_epsilon", 1e-5, &c->norm_eps));
        TRY(bool_field(r, "tie_word_embeddings", true, &c->tied_embeddings));
        TRY(refuse_if_set(r, "add_cross_attention"));
        if (c->hidden % c->heads)
            return bad(r, "n_head = %lld does not divide n_embd = %lld", (long long)c->heads,
                       (long long)c->hidden);
        c->kv_heads = c->heads;
        c->head_dim = c->hidden / c->heads;
        c->qkv_bias = c->out_bias = c->mlp_bias = true;
        c->pos = FM_LLM_POS_LEARNED;
        break;
    case FM_LLM_GPT_NEOX: {
        TRY(int_field(r, "vocab_size", true, 50432, 1, &c->vocab));
        TRY(int_field(r, "hidden_size", true, 0, 1, &c->hidden));
        TRY(int_field(r, "num_hidden_layers", true, 0, 1, &c->layers));
        TRY(int_field(r, "num_attention_heads", true, 0, 1, &c->heads));
        TRY(int_field(r, "intermediate_size", true, 0, 1, &c->ffn));
        TRY(int_field(r, "max_position_embeddings", false, 2048, 1, &c->max_pos));
        TRY(act_field(r, "hidden_act", "gelu", &c->act));
        TRY(num_field(r, "layer_norm_eps", 1e-5, &c->norm_eps));
        TRY(bool_field(r, "tie_word_embeddings", false, &c->tied_embeddings));
        TRY(bool_field(r, "use_parallel_residual", true, &c->parallel_residual));
        TRY(bool_field(r, "attention_bias", true, &b));
        const cJSON *rp = get(r, "rope_parameters");
        const cJSON *prf = rp ? cJSON_GetObjectItemCaseSensitive(rp, "partial_rotary_factor")
                              : NULL;
        if (prf && cJSON_IsNumber(prf))
            c->rotary_pct = prf->valuedouble;
        else
            TRY(num_field(r, "rotary_pct", 0.25, &c->rotary_pct));
        if (c->rotary_pct > 1.0)
            return bad(r, "rotary_pct = %g is above 1", c->rotary_pct);
        if (c->hidden % c->heads)
            return bad(r, "num_attention_heads = %lld does not divide hidden_size = %lld",
                       (long long)c->heads, (long long)c->hidden);
        c->kv_heads = c->heads;
        c->head_dim = c->hidden / c->heads;
        int64_t rot = (int64_t)((double)c->head_dim * c->rotary_pct);
        if (rot < 2 || rot % 2)
            return bad(r, "rotary_pct = %g of head_dim %lld rotates %lld dims: rotary "
                          "embeddings rotate pairs, at least one",
                       c->rotary_pct, (long long)c->head_dim, (long long)rot);
        c->qkv_bias = c->out_bias = b;
        c->mlp_bias = true;
        c->pos = FM_LLM_POS_ROPE;
        break;
    }
    case FM_LLM_DEEPSEEK_V3: {
        TRY(decoder_common(r, 129280, 4096, false));
        TRY(int_field(r, "intermediate_size", true, 0, 1, &c->ffn));
        TRY(act_field(r, "hidden_act", "silu", &c->act));
        TRY(moe_fields(r, "n_routed_experts", "num_local_experts", 256, 8, 2048));
        TRY(int_field(r, "n_shared_experts", false, 1, 0, &c->shared_experts));
        c->shared_ffn = c->shared_experts * c->moe_ffn;
        TRY(int_field(r, "first_k_dense_replace", false, 3, 0, &c->first_dense));
        TRY(bool_field(r, "norm_topk_prob", true, &c->norm_topk));
        TRY(int_field(r, "q_lora_rank", false, 1536, 0, &c->q_lora_rank));
        TRY(int_field(r, "kv_lora_rank", true, 512, 1, &c->kv_lora_rank));
        TRY(int_field(r, "qk_nope_head_dim", false, 128, 0, &c->qk_nope_dim));
        TRY(int_field(r, "qk_rope_head_dim", false, 64, 1, &c->qk_rope_dim));
        TRY(int_field(r, "v_head_dim", false, 128, 1, &c->v_head_dim));
        TRY(bool_field(r, "attention_bias", false, &b));
        c->qkv_bias = c->out_bias = b;   /* q_a_proj, kv_a_proj_with_mqa and o_proj */
        c->head_dim = c->qk_nope_dim + c->qk_rope_dim;
        for (int64_t i = 0; i < c->layers; i++)
            c->layer_moe[i] = i >= c->first_dense;
        break;
    }
    case FM_LLM_BERT: {
        TRY(int_field(r, "vocab_size", true, 30522, 1, &c->vocab));
        TRY(int_field(r, "hidden_size", true, 0, 1, &c->hidden));
        TRY(int_field(r, "num_hidden_layers", true, 0, 1, &c->layers));
        TRY(int_field(r, "num_attention_heads", true, 0, 1, &c->heads));
        TRY(int_field(r, "intermediate_size", true, 0, 1, &c->ffn));
        TRY(int_field(r, "max_position_embeddings", false, 512, 1, &c->max_pos));
        TRY(int_field(r, "type_vocab_size", false, 2, 0, &c->type_vocab));
        TRY(act_field(r, "hidden_act", "gelu", &c->act));
        TRY(num_field(r, "layer_norm_eps", 1e-12, &c->norm_eps));
        TRY(bool_field(r, "tie_word_embeddings", true, &c->tied_embeddings));
        TRY(refuse_if_set(r, "add_cross_attention"));
        const char *pe = str_field(r, "position_embedding_type");
        if (pe && strcmp(pe, "absolute") != 0)
            return bad(r, "position_embedding_type = \"%s\": flopmeter reads \"absolute\"", pe);
        if (c->hidden % c->heads)
            return bad(r, "num_attention_heads = %lld does not divide hidden_size = %lld",
                       (long long)c->heads, (long long)c->hidden);
        c->kv_heads = c->heads;
        c->head_dim = c->hidden / c->heads;
        c->qkv_bias = c->out_bias = c->mlp_bias = true;
        c->pos = FM_LLM_POS_LEARNED;
        break;
    }
    case FM_LLM_T5: {
        TRY(int_field(r, "vocab_size", true, 32128, 1, &c->vocab));
        TRY(int_field(r, "d_model", true, 512, 1, &c->hidden));
        TRY(int_field(r, "d_kv", false, 64, 1, &c->head_dim));
        TRY(int_field(r, "d_ff", true, 2048, 1, &c->ffn));
        TRY(int_field(r, "num_layers", true, 6, 1, &c->layers));
        TRY(int_field(r, "num_decoder_layers", false, c->layers, 1, &c->decoder_layers));
        TRY(int_field(r, "num_heads", true, 8, 1, &c->heads));
        TRY(int_field(r, "relative_attention_num_buckets", false, 32, 1, &c->rel_buckets));
        TRY(num_field(r, "layer_norm_epsilon", 1e-6, &c->norm_eps));
        const char *ff = str_field(r, "feed_forward_proj");
        if (!ff)
            ff = "relu";
        c->gated_mlp = strncmp(ff, "gated-", 6) == 0;
        const char *act = c->gated_mlp ? ff + 6 : ff;
        if (strcmp(act, "relu") == 0)
            c->act = FM_LLM_ACT_RELU;
        else if (strcmp(act, "gelu") == 0)   /* "gated-gelu" is gelu_new in T5Config */
            c->act = c->gated_mlp ? FM_LLM_ACT_GELU_TANH : FM_LLM_ACT_GELU;
        else if (strcmp(act, "gelu_new") == 0)
            c->act = FM_LLM_ACT_GELU_TANH;
        else if (strcmp(act, "silu") == 0)
            c->act = FM_LLM_ACT_SILU;
        else
            return bad(r, "feed_forward_proj = \"%s\": flopmeter reads relu, gelu, gated-gelu, "
                          "gated-silu",
                       ff);
        c->kv_heads = c->heads;
        c->rms_norm = true;   /* T5LayerNorm: scale only, no mean */
        c->tied_embeddings = true;   /* T5Config ties lm_head to shared in transformers 5 */
        c->pos = FM_LLM_POS_RELATIVE_BIAS;
        c->max_pos = 0;
        break;
    }
    default:
        return bad(r, "internal: no reader for the architecture");
    }
    return FM_OK;
}

/* Dense classes refuse the fields of MoE classes; no class reads a second graph's fields. */
static enum fm_status refuse_foreign(struct rd *r)
{
    struct fm_llm_config *c = r->c;
    if (c->experts == 0) {
        static const char *moe[] = {"num_experts", "num_local_experts", "n_routed_experts",
                                    "moe_intermediate_size", "num_experts_per_tok"};
        for (size_t i = 0; i < sizeof(moe) / sizeof(moe[0]); i++)
            TRY(refuse_if_set(r, moe[i]));
    }
    if (c->arch != FM_LLM_DEEPSEEK_V3) {
        static const char *mla[] = {"q_lora_rank", "kv_lora_rank"};
        for (size_t i = 0; i < sizeof(mla) / sizeof(mla[0]); i++)
            TRY(refuse_if_set(r, mla[i]));
    }
    return FM_OK;
}

static enum fm_status check(struct rd *r)
{
    struct fm_llm_config *c = r->c;
    int64_t total = c->layers + c->decoder_layers;
    if (total > FM_LLM_MAX_LAYERS)
        return bad(r, "%lld layers: flopmeter builds at most %d", (long long)total,
                   FM_LLM_MAX_LAYERS);
    if (c->kv_heads > c->heads || c->heads % c->kv_heads != 0)
        return bad(r, "num_key_value_heads = %lld does not divide num_attention_heads = %lld",
                   (long long)c->kv_heads, (long long)c->heads);
    if (c->experts && c->top_k > c->experts)
        return bad(r, "num_experts_per_tok = %lld exceeds the %lld experts", (long long)c->top_k,
                   (long long)c->experts);
    if (c->pos == FM_LLM_POS_ROPE && c->arch != FM_LLM_DEEPSEEK_V3 && c->head_dim % 2)
        return bad(r, "head_dim = %lld is odd: rotary embeddings rotate pairs",
                   (long long)c->head_dim);
    /* the sizes multiply into parameter counts: keep every product within 64 bits */
    if (c->hidden > (1 << 20) || c->vocab > (1 << 24) || c->ffn > (1 << 22) ||
        c->heads > 4096 || c->head_dim > 65536 || c->experts > 65536 || c->moe_ffn > (1 << 22))
        return bad(r, "sizes beyond any model flopmeter builds (hidden %lld, vocab %lld, "
                      "intermediate %lld, heads %lld, experts %lld)",
                   (long long)c->hidden, (long long)c->vocab, (long long)c->ffn,
                   (long long)c->heads, (long long)c->experts);
    return FM_OK;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A key given twice in one object: transformers' json.load keeps the last, cJSON the first, so
 * the two would read different models; refused, naming the key (objects nested in arrays and
 * objects too). */
static enum fm_status duplicate_keys(struct fm_ctx *ctx, const char *src, const cJSON *obj)
{
    size_t n = 0;
    for (const cJSON *v = obj->child; v; v = v->next)
        n++;
    const char **names = NULL;
    if (cJSON_IsObject(obj) && n > 1) {
        names = fm_alloc(ctx, n * sizeof(*names));
        if (!names)
            return fm_error(ctx, FM_ERR_NOMEM, "%s: out of memory for the keys of an object",
                            src);
        size_t i = 0;
        for (const cJSON *v = obj->child; v; v = v->next)
            names[i++] = v->string ? v->string : "";
        qsort(names, n, sizeof(*names), cmp_names);
        for (i = 1; i < n; i++) {
            if (strcmp(names[i - 1], names[i]) == 0) {
                enum fm_status st =
                    fm_error(ctx, FM_ERR_INVALID,
                             "%s: key \"%.100s\" is given twice in one object (transformers "
                             "would read the last, so the file is ambiguous): keep one",
                             src, names[i]);
                fm_dealloc(ctx, names);
                return st;
            }
        }
        fm_dealloc(ctx, names);
    }
    for (const cJSON *v = obj->child; v; v = v->next) {
        if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
            enum fm_status st = duplicate_keys(ctx, src, v);
            if (st)
                return st;
        }
    }
    return FM_OK;
}

enum fm_status fm_llm_config_parse(struct fm_ctx *ctx, const char *text, size_t n,
                                   const char *source, struct fm_llm_config *out)
{
    memset(out, 0, sizeof(*out));
    if (!source)
        source = "config";
    cJSON *root = cJSON_ParseWithLength(text, n);
    if (!root || !cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return fm_error(ctx, FM_ERR_PARSE, "%s: not a JSON object (a HuggingFace config.json "
                                           "is one object with model_type, hidden_size, ...)",
                        source);
    }
    struct rd r = {ctx, source, root, out};
    enum fm_status st = duplicate_keys(ctx, source, root);
    if (!st)
        st = find_arch(&r);
    if (!st)
        st = parse_arch(&r);
    if (!st)
        st = refuse_foreign(&r);
    if (!st)
        st = check(&r);
    cJSON_Delete(root);
    if (st) {
        memset(out, 0, sizeof(*out));
        return st;
    }
    snprintf(out->name, sizeof(out->name), "%s", source);
    return FM_OK;
}
#endif /* FM_HAVE_CJSON */
