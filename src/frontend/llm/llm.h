/* Language models from their configs (docs/zoo.md, "Language models"): a HuggingFace
 * config.json (or a built-in config by name) read into one struct, and a graph built from it
 * directly, without ONNX. This header is the contract between the config reader (config.c),
 * the built-in configs (builtin.c), the graph builder (build.c) and the users of the struct
 * (the session, the parallel plan in src/analysis/plan*.c, the oracle tests).
 *
 * Every count comes from the graph: nothing here computes FLOPs by formula except the 6ND rule
 * of thumb that reports print beside the count. */
#ifndef FM_FRONTEND_LLM_H
#define FM_FRONTEND_LLM_H

#include "flopmeter.h"

#define FM_LLM_MAX_LAYERS 512

enum fm_llm_arch {
    FM_LLM_LLAMA = 0,    /* LlamaForCausalLM (Llama 2, 3, 3.1) */
    FM_LLM_MISTRAL,      /* MistralForCausalLM: sliding window */
    FM_LLM_MIXTRAL,      /* MixtralForCausalLM: top-k MoE */
    FM_LLM_QWEN2,        /* Qwen2 / Qwen2.5: q,k,v biases */
    FM_LLM_QWEN2_MOE,    /* Qwen2MoeForCausalLM: shared expert with a sigmoid gate */
    FM_LLM_QWEN3,        /* Qwen3ForCausalLM: q/k RMSNorm per head */
    FM_LLM_QWEN3_MOE,    /* Qwen3MoeForCausalLM */
    FM_LLM_GEMMA,        /* GemmaForCausalLM: tied embeddings, scaled embedding */
    FM_LLM_GEMMA2,       /* Gemma2ForCausalLM: soft-capping, local/global alternation */
    FM_LLM_PHI3,         /* Phi3ForCausalLM: fused qkv and gate_up */
    FM_LLM_GPT2,         /* GPT2LMHeadModel */
    FM_LLM_GPT_NEOX,     /* GPTNeoXForCausalLM: parallel residual, partial rotary */
    FM_LLM_DEEPSEEK_V3,  /* DeepseekV3ForCausalLM: MLA, MoE with shared experts, dense first */
    FM_LLM_BERT,         /* BertForMaskedLM (encoder) */
    FM_LLM_T5,           /* T5ForConditionalGeneration (encoder-decoder) */
    FM_LLM_ARCH_COUNT
};
const char *fm_llm_arch_name(enum fm_llm_arch arch);   /* "LlamaForCausalLM", ... */

enum fm_llm_act { FM_LLM_ACT_SILU = 0, FM_LLM_ACT_GELU, FM_LLM_ACT_GELU_TANH, FM_LLM_ACT_RELU };
enum fm_llm_pos { FM_LLM_POS_ROPE = 0, FM_LLM_POS_LEARNED, FM_LLM_POS_RELATIVE_BIAS };

struct fm_llm_config {
    enum fm_llm_arch arch;
    char model_type[48];          /* config's model_type ("llama") */
    char name[96];                /* the built-in's name or the file's path, for reports */
    int64_t vocab, hidden, layers, heads, kv_heads, head_dim, ffn, max_pos;
    enum fm_llm_act act;
    bool gated_mlp;               /* SwiGLU/GeGLU: gate and up projections */
    bool rms_norm;                /* RMSNorm (else LayerNorm with bias) */
    double norm_eps;
    bool qk_norm;                 /* Qwen3: RMSNorm of q and k per head */
    bool qkv_bias, out_bias, mlp_bias;
    bool tied_embeddings;
    enum fm_llm_pos pos;
    double rotary_pct;            /* GPT-NeoX partial rotary (1.0 = all of head_dim) */
    bool parallel_residual;       /* GPT-NeoX */
    int64_t window;               /* sliding-window length (0: none) */
    double attn_softcap, final_softcap;   /* Gemma2 (0: none) */
    /* MoE (experts == 0: dense) */
    int64_t experts, top_k, moe_ffn;
    int64_t shared_experts, shared_ffn;   /* shared experts and their intermediate size */
    bool shared_gate;             /* Qwen2-MoE: sigmoid gate on the shared expert */
    bool norm_topk;               /* renormalize the top-k weights */
    int64_t first_dense;          /* DeepSeek first_k_dense_replace */
    double capacity_factor;       /* 0: none (every routed token computed) */
    /* multi-head latent attention (DeepSeek-V3); q_lora_rank 0 = a plain q projection */
    int64_t q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim;
    /* encoder-decoder (T5): layers = encoder layers */
    int64_t decoder_layers, rel_buckets;
    int64_t type_vocab;           /* BERT token types */
    /* per layer (decoder's, for T5 the encoder's then the decoder's) */
    uint8_t layer_sliding[FM_LLM_MAX_LAYERS];   /* 1: sliding-window attention */
    uint8_t layer_moe[FM_LLM_MAX_LAYERS];       /* 1: MoE MLP */
};

/* Reads a HuggingFace config.json (text, n bytes; source names it in messages). An unknown
 * model_type or architecture, a field the architecture needs and the file lacks, a field that
 * changes the graph and that flopmeter does not read, or an inconsistent value is
 * FM_ERR_INVALID naming the field and its value. */
enum fm_status fm_llm_config_parse(struct fm_ctx *ctx, const char *text, size_t n,
                                   const char *source, struct fm_llm_config *out);
/* A built-in config by name ("llama-3-8b"); FM_ERR_NOT_FOUND suggesting the nearest. */
enum fm_status fm_llm_config_builtin(struct fm_ctx *ctx, const char *name,
                                     struct fm_llm_config *out);
/* The config of MODEL under opts: the config.json at opts->config, else the built-in named
 * MODEL (src/frontend/model.c). */
enum fm_status fm_llm_config_load(struct fm_ctx *ctx, const char *model,
                                  const struct fm_load_opts *opts, struct fm_llm_config *out);
size_t fm_llm_builtin_count(void);
const char *fm_llm_builtin_name(size_t i);
const char *fm_llm_builtin_source(size_t i);   /* where its numbers come from */

struct fm_llm_build_opts {
    int64_t batch;                /* sequences (default 1) */
    int64_t seq;                  /* tokens per sequence (default: 2048, or max_pos if smaller) */
    int64_t decoder_seq;          /* T5: target length (default seq); decoding: the target
                                     tokens in the self-attention cache */
    enum fm_dtype dtype;          /* storage of activations and parameters (default fp32) */
    bool with_loss;               /* next-token (MLM for BERT) cross-entropy over the vocab */
    bool decode;                  /* inference: one new token per sequence against a KV cache
                                     of seq tokens (the graph reads the cache as inputs);
                                     T5: the decoder alone, the cross-attention K/V of the
                                     seq encoder positions cached */
};
void fm_llm_build_opts_init(struct fm_llm_build_opts *opts);
/* Builds and finalizes the model's graph, layers named as the HF module paths
 * ("model.layers.3.self_attn.q_proj"); parameters exactly the HF model's. */
enum fm_status fm_llm_build(struct fm_ctx *ctx, const struct fm_llm_config *cfg,
                            const struct fm_llm_build_opts *opts, struct fm_graph **out);
/* Parameters by the config (every expert counted): total, and without the embeddings. */
void fm_llm_params(const struct fm_llm_config *cfg, uint64_t *total, uint64_t *non_embedding);

#endif
