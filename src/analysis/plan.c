/* The parallel training plan: one LLM config sharded by tensor (T), pipeline (P), data (D),
 * context (C) and expert (E) parallelism, predicted to per-GPU memory, step time and MFU.
 *
 * Work per GPU comes from the config sharded as Megatron-LM shards it: heads, kv heads (one kv
 * head kept per rank when there are fewer than T, as Megatron replicates them), the MLP's
 * intermediate size and the vocabulary by T; experts by E; tokens by C (ring attention: every
 * query still meets the whole sequence's keys); layers by P (and by P x v chunks when
 * interleaved); BERT adds its token-type embeddings and masked-LM head; T5's encoder-decoder
 * (one pipeline stage) is summed per sequence of source and target tokens (t5_layer_cost,
 * below). Multi-head latent
 * attention (DeepSeek-V3) keeps its down-projections and their norms on every rank and splits
 * its up-projections and output by heads, as Megatron-Core does. Matmuls (linear layers,
 * attention's two products, the logits) run on the device's tensor peak at the plan's
 * precision; norms, activations, residuals, rotary and dropout move bytes at the memory
 * bandwidth; both scaled by PALEO's fractions (predict.c); with a calibration, the calibrated
 * times of a layer of each kind, the embedding and the head stand in for that compute
 * (plan_calib.c). Activation memory follows Korthikanti et al. 2022 (34 sbh + 5 a s^2 b per
 * layer for GPT, generalized per tensor below). Communication is NCCL's bus-bandwidth model
 * (plan_comm.c) over the cluster. What it leaves out: kernel launch gaps, load imbalance
 * between experts, stragglers, data loading, the vocabulary-parallel cross-entropy's small
 * all-reduces, NCCL's protocol switch for small messages, and overlap of tensor-parallel
 * communication with compute (Megatron's 2021-22 runs had none). */
#include "plan.h"
#include "../hw/hw.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Optimizer step bytes per parameter on this GPU's shard: Adam reads the fp32 gradient (4),
 * reads and writes the fp32 master, m and v (24), writes the bf16 weight (2). */
#define ADAM_BYTES_PER_PARAM 30.0
#define ACT 2.0   /* bytes of a bf16 activation */

void fm_plan_opts_init(struct fm_plan_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->precision = FM_PREC_BF16;
    o->zero = -1;
    o->recompute = FM_RECOMPUTE_NONE;
    o->grad_bytes = 4;
    /* The fraction of the tensor peak that large transformer GEMMs sustain: one value for
     * every plan, chosen on Narayanan et al. 2021's table 1 (10 runs, 32 to 3,072 A100s) and
     * checked unchanged on Korthikanti et al. 2022's 4 runs (bench/plan_accuracy.py,
     * bench/RESULTS.md). PALEO's 0.62 (fm_predict_opts_init) under-predicts those runs by 14%
     * (median): its figure is a 2017 framework's on every layer, these are large matmuls. Memory
     * and communication keep PALEO's 0.72 (Qi et al. 2017). */
    o->ppp_compute = 0.75;
    o->ppp_memory = 0.72;
    o->ppp_comm = 0.72;
}

double fm_plan_bubble_fraction(int p, int v, int64_t m)
{
    if (p <= 1 || m <= 0)
        return 0.0;
    return (double)(p - 1) / ((double)(v > 0 ? v : 1) * (double)m);
}

void fm_plan_state_bytes(double params, int grad_bytes, int zero, int dp, double *weights,
                         double *grads, double *optimizer)
{
    double d = dp > 0 ? dp : 1;
    *weights = params * 2.0 / (zero >= 3 ? d : 1.0);
    *grads = params * grad_bytes / (zero >= 2 ? d : 1.0);
    *optimizer = params * 12.0 / (zero >= 1 ? d : 1.0);
}

/* ---- the constraints of a plan ---- */

/* The divisors of n nearest to x, below and above (0 when none). */
static void nearest_divisors(int64_t n, int64_t x, int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    for (int64_t d = x; d >= 1; d--) {
        if (n % d == 0) {
            *lo = d;
            break;
        }
    }
    for (int64_t d = x + 1; d <= n; d++) {
        if (n % d == 0) {
            *hi = d;
            break;
        }
    }
}

static enum fm_status not_divisor(struct fm_ctx *ctx, const char *field, int64_t v,
                                  const char *what, int64_t n)
{
    int64_t lo, hi;
    nearest_divisors(n, v, &lo, &hi);
    char near[64];
    if (lo && hi)
        snprintf(near, sizeof(near), "%lld or %lld", (long long)lo, (long long)hi);
    else
        snprintf(near, sizeof(near), "%lld", (long long)(lo ? lo : hi));
    return fm_error(ctx, FM_ERR_INVALID, "fm_plan_opts.%s = %lld does not divide %s (%lld); "
                                         "nearest valid: %s",
                    field, (long long)v, what, (long long)n, near);
}

/* DeepSeek-V3's 61 layers on pp stages that do not divide them: Megatron-Core's DeepSeek-V3
 * layout (pipeline_model_parallel_layout) puts ceil(61 / pp) layers on every stage but the
 * last, which takes the rest with the loss (and the multi-token prediction module, not
 * modelled); 16 stages: 4 x 15 + 1. Other models keep the even split. */
static bool uneven_stages(const struct fm_llm_config *m, const struct fm_plan_cfg *c)
{
    if (m->arch != FM_LLM_DEEPSEEK_V3 || c->v > 1 || c->balance || c->pp < 2)
        return false;
    int64_t per = (m->layers + c->pp - 1) / c->pp;
    return per * (c->pp - 1) < m->layers;
}

enum fm_status fm_plan_check(struct fm_ctx *ctx, const struct fm_plan_env *env,
                             const struct fm_plan_cfg *c)
{
    const struct fm_llm_config *m = env->cfg;
    if (m->arch == FM_LLM_T5) {
        /* what a T5 plan does not model, refused before anything else is checked */
        if (c->pp > 1 && c->v > 1)
            return fm_error(ctx, FM_ERR_INVALID,
                            "fm_plan_opts.interleave = %d: the interleaved schedule is not "
                            "modelled for T5 (%s); nearest valid: interleave = 1", c->v,
                            m->name);
        if (c->pp > 1 && c->balance)
            return fm_error(ctx, FM_ERR_INVALID,
                            "fm_plan_opts.balance_embedding is for decoders; T5 (%s) puts its "
                            "encoder and decoder on stages of their own", m->name);
        if (c->pp > 1 && !fm_plan_t5_split(env, c)) {
            int lo = 0, hi = 0;
            struct fm_plan_cfg t = *c;
            for (t.pp = c->pp - 1; t.pp > 1 && !lo; t.pp--)
                lo = fm_plan_t5_split(env, &t) ? t.pp : 0;
            for (t.pp = c->pp + 1; t.pp <= m->layers + m->decoder_layers && !hi; t.pp++)
                hi = fm_plan_t5_split(env, &t) ? t.pp : 0;
            char near[48];
            if (lo && hi)
                snprintf(near, sizeof(near), "pp = %d or %d", lo, hi);
            else
                snprintf(near, sizeof(near), "pp = %d", hi ? hi : lo ? lo : 1);
            return fm_error(ctx, FM_ERR_INVALID,
                            "fm_plan_opts.pp = %d: T5 (%s) puts its encoder's %lld layers on "
                            "the first stages and its decoder's %lld on the rest, each stack "
                            "evenly (Megatron-LM's split rank); no split of %d stages divides "
                            "both; nearest valid: %s",
                            c->pp, m->name, (long long)m->layers,
                            (long long)m->decoder_layers, c->pp, near);
        }
        if (c->cp > 1)
            return fm_error(ctx, FM_ERR_INVALID,
                            "fm_plan_opts.cp = %d: context parallelism is not modelled for T5 "
                            "(%s; its cross-attention reads the whole source sequence); "
                            "nearest valid: cp = 1", c->cp, m->name);
        if (c->ep > 1)
            return fm_error(ctx, FM_ERR_INVALID,
                            "fm_plan_opts.ep = %d: expert parallelism is not modelled for T5 "
                            "(%s has no experts); nearest valid: ep = 1", c->ep, m->name);
    }
    int64_t prod = (int64_t)c->tp * c->pp * c->cp * c->dp;
    if (prod != env->gpus)
        return fm_error(ctx, FM_ERR_INVALID,
                        "tp x pp x cp x dp = %d x %d x %d x %d = %lld, not fm_plan_opts.gpus "
                        "(%d); with these tp, pp and cp, dp = %d needs %lld GPUs",
                        c->tp, c->pp, c->cp, c->dp, (long long)prod, env->gpus, c->dp,
                        (long long)prod);
    if (m->heads % c->tp)
        return not_divisor(ctx, "tp", c->tp, "the attention heads", m->heads);
    if (m->kv_heads % c->tp && c->tp % m->kv_heads)
        return fm_error(ctx, FM_ERR_INVALID,
                        "fm_plan_opts.tp = %d neither divides nor is a multiple of the %lld kv "
                        "heads", c->tp, (long long)m->kv_heads);
    if (m->ffn && m->ffn % c->tp)
        return not_divisor(ctx, "tp", c->tp, "the MLP's intermediate size", m->ffn);
    if (m->experts > 0 && m->moe_ffn % c->tp)
        return not_divisor(ctx, "tp", c->tp, "the experts' intermediate size", m->moe_ffn);
    if (m->shared_experts > 0 && m->shared_ffn % c->tp)
        return not_divisor(ctx, "tp", c->tp, "the shared experts' intermediate size",
                           m->shared_ffn);
    if (c->pp > FM_LLM_MAX_LAYERS)
        return fm_error(ctx, FM_ERR_INVALID, "fm_plan_opts.pp = %d is more than %d stages",
                        c->pp, FM_LLM_MAX_LAYERS);
    int64_t slots = m->layers + (c->balance ? 2 : 0);
    if (c->balance && c->pp < 2)
        return fm_error(ctx, FM_ERR_INVALID,
                        "fm_plan_opts.balance_embedding moves layers off the first and last "
                        "pipeline stages; it needs pp > 1");
    if (m->arch != FM_LLM_T5 && slots % ((int64_t)c->pp * c->v) && !uneven_stages(m, c)) {
        if (c->v > 1 || c->balance)
            return fm_error(ctx, FM_ERR_INVALID,
                            "pp x interleave = %d x %d does not divide the %lld layers%s",
                            c->pp, c->v, (long long)slots,
                            c->balance ? " (the embedding and the head counted as one each)"
                                       : "");
        return not_divisor(ctx, "pp", c->pp, "the layers", m->layers);
    }
    if (c->ep > 1 && m->experts <= 0)
        return fm_error(ctx, FM_ERR_INVALID,
                        "fm_plan_opts.ep = %d, but %s has no experts (expert parallelism "
                        "needs a mixture-of-experts model)", c->ep, m->name);
    if (m->experts > 0 && m->experts % c->ep)
        return not_divisor(ctx, "ep", c->ep, "the experts", m->experts);
    if (c->dp % c->ep)
        return not_divisor(ctx, "ep", c->ep, "the data-parallel size", c->dp);
    if (c->seq % c->cp)
        return not_divisor(ctx, "cp", c->cp, "the sequence length", c->seq);
    if (c->gb % (c->mb * c->dp)) {
        int64_t unit = c->mb * c->dp, lo = c->gb / unit * unit, hi = lo + unit;
        return fm_error(ctx, FM_ERR_INVALID,
                        "fm_plan_opts.global_batch = %lld is not a multiple of micro_batch x dp "
                        "= %lld x %d; nearest valid: %lld or %lld",
                        (long long)c->gb, (long long)c->mb, c->dp, (long long)(lo ? lo : hi),
                        (long long)(lo ? hi : hi + unit));
    }
    if (c->v > 1 && (c->pp <= 1 || c->m % c->pp))
        return fm_error(ctx, FM_ERR_INVALID,
                        "fm_plan_opts.interleave = %d needs pp > 1 and micro-batches (%lld) a "
                        "multiple of pp (%d), as Megatron-LM's interleaved schedule does",
                        c->v, (long long)c->m, c->pp);
    if (c->zero >= 3 && c->pp > 1)
        return fm_error(ctx, FM_ERR_INVALID,
                        "ZeRO-3 / FSDP with pp = %d: sharded weights are gathered per "
                        "micro-batch, which pipeline schedules do not support (DeepSpeed "
                        "refuses it too); use fm_plan_opts.zero = 1 or pp = 1", c->pp);
    if (c->sp && c->tp <= 1)
        return fm_error(ctx, FM_ERR_INVALID,
                        "fm_plan_opts.sequence_parallel splits along the tensor-parallel "
                        "group; it needs tp > 1");
    return FM_OK;
}

/* ---- one layer on one rank ---- */

/* The heads, kv heads, MLPs and vocabulary by tp, as layer_cost below divides them. */
void fm_plan_shard_config(const struct fm_llm_config *m, int tp, int64_t vocab,
                          struct fm_llm_config *out)
{
    *out = *m;
    out->heads /= tp;
    out->kv_heads = m->kv_heads >= tp ? m->kv_heads / tp : 1;
    out->ffn /= tp;
    out->moe_ffn /= tp;
    out->shared_ffn /= tp;
    out->vocab = vocab / tp;
}


struct layer_cost {
    double mm;          /* linear-layer FLOPs per local token, forward */
    double core;        /* attention's QK^T and AV FLOPs per local token, forward */
    double elt;         /* bytes the other ops move per local token, forward */
    double elt_core;    /* of which the attention softmax (no flash attention) */
    double params;      /* parameters on this rank, dense */
    double params_exp;  /* expert parameters on this rank */
    double act;         /* bytes saved for backward per local token, no recompute */
    double act_sel;     /* with selective recompute */
    double act_full;    /* with full recompute */
    double a2a;         /* all-to-all bytes per local token, one direction, forward */
    double kv;          /* K and V bytes per local token (context parallel exchanges) */
};

bool fm_plan_layer_is_moe(const struct fm_llm_config *m, int64_t i)
{
    if (m->experts <= 0 || i < m->first_dense)
        return false;
    for (int64_t j = 0; j < m->layers && j < FM_LLM_MAX_LAYERS; j++) {
        if (m->layer_moe[j])
            return i < FM_LLM_MAX_LAYERS && m->layer_moe[i];
    }
    return true;   /* no per-layer flags: every layer past first_dense */
}

/* T: tensor-parallel size (1 for the unsharded model), E: expert-parallel size. */
static void layer_cost(const struct fm_plan_env *env, int64_t i, int T, int E, bool sp,
                       int64_t seq, struct layer_cost *o)
{
    const struct fm_llm_config *m = env->cfg;
    memset(o, 0, sizeof(*o));
    double h = (double)m->hidden, dh = (double)m->head_dim;
    double q = (double)m->heads * dh / T;
    double kvh = m->kv_heads >= T ? (double)m->kv_heads / T : 1.0;
    double kv = kvh * dh;
    double heads = (double)m->heads / T;
    bool dropout = m->arch == FM_LLM_GPT2 || m->arch == FM_LLM_BERT;
    /* attention */
    double qlr = (double)m->q_lora_rank, kvl = (double)m->kv_lora_rank;
    double rope = (double)m->qk_rope_dim, qk = (double)(m->qk_nope_dim + m->qk_rope_dim);
    double vd = (double)m->v_head_dim;
    bool mla = m->kv_lora_rank > 0;
    if (mla) {
        /* multi-head latent attention (DeepSeek-V2/V3), sharded as Megatron-Core shards it:
         * the down-projections q_a and kv_a (to the q latent, and to the kv latent plus the
         * shared rotary key) and their RMSNorms replicated on every rank; q_b, kv_b and o
         * split by heads. kv_b expands every position's latent to the heads' no-rope keys and
         * values; QK^T runs over qk_nope + qk_rope dims a head, AV over v_head_dim. */
        double b = m->qkv_bias ? 1.0 : 0.0;
        double qin = qlr > 0 ? qlr : h;   /* q_b's input: the q latent, or h (q_proj) */
        double down = (qlr > 0 ? h * qlr : 0) + h * (kvl + rope);
        double up = qin * heads * qk + kvl * heads * (qk - rope + vd) + heads * vd * h;
        o->params = down + up + (qlr > 0 ? qlr + b * qlr : 0) + kvl + b * (kvl + rope) +
                    (m->out_bias ? h : 0);
        o->mm = 2.0 * (down + up);
        o->core = 2.0 * (double)seq * heads * (qk + vd);
        o->kv = heads * (qk + vd) * ACT;   /* the expanded keys and values a rank attends to */
    } else {
        o->params = h * (q + 2 * kv) + q * h + (m->qkv_bias ? q + 2 * kv : 0) +
                    (m->out_bias ? h : 0);
        o->mm = 2.0 * (h * (q + 2 * kv) + q * h);
        o->core = 4.0 * (double)seq * q;
        o->kv = 2.0 * kv * ACT;
    }
    /* MLP */
    double nm = m->gated_mlp ? 3.0 : 2.0, f;
    if (fm_plan_layer_is_moe(m, i)) {
        double ef = (double)m->moe_ffn / T;
        o->params_exp = (double)m->experts / E * h * ef * nm;
        f = (double)m->top_k * ef;
        /* shared_ffn is the shared experts' intermediate size in all (DeepSeek's
         * n_shared_experts x moe_intermediate_size, Qwen2-MoE's shared expert's) */
        double sf = m->shared_experts > 0 ? (double)m->shared_ffn / T : 0.0;
        o->params += h * (double)m->experts + h * sf * nm;
        if (m->shared_gate) {   /* Qwen2-MoE's sigmoid gate of the shared expert (h to 1) */
            o->params += h;
            o->mm += 2.0 * h;
        }
        o->mm += 2.0 * h * (double)m->experts + 2.0 * h * (f + sf) * nm;
        f += sf;
        o->a2a = (double)m->top_k * h * ACT;
    } else {
        f = (double)m->ffn / T;
        o->params += h * f * nm + (m->mlp_bias ? f * (nm - 1) + h : 0);
        o->mm += 2.0 * h * f * nm;
    }
    o->params += m->rms_norm ? 2 * h : 4 * h;
    if (m->arch == FM_LLM_GEMMA2)
        o->params += 2 * h;            /* post-attention and post-MLP norms too */
    if (m->qk_norm)
        o->params += 2 * dh;           /* Qwen3: q and k RMSNorm over a head (replicated) */
    /* the other ops, elements read + written per token: two norms (2h each), two residual adds
     * (3h each), dropouts (2.5h each, with the mask), rotary on q and k, the activation */
    double repl = 10.0 * h + (dropout ? 5.0 * h : 0.0);
    double split = (m->pos == FM_LLM_POS_ROPE ? 2.0 * (q + kv) : 0.0) + (nm == 3.0 ? 3 : 2) * f;
    if (mla) {
        /* the latents' two RMSNorms (replicated, not split by sequence parallelism: the
         * up-projections read the whole sequence's latent), rotary on the heads' q_rope and
         * on the one shared k_rope, and the copies that concatenate no-rope and rope parts
         * of q and k */
        repl = 10.0 * h;
        split = 2.0 * (qlr + kvl) + 2.0 * (heads * rope + rope) +
                2.0 * 2.0 * heads * qk + (nm == 3.0 ? 3 : 2) * f;
    }
    o->elt = (repl / (sp ? T : 1) + split) * ACT;
    if (!env->flash) {
        /* softmax (read and write the scores) and its dropout: 9 bytes per score */
        o->elt_core = 9.0 * heads * (double)seq;
        o->elt += o->elt_core;
    }
    /* saved for backward (Korthikanti et al. 2022, section 4.1, per tensor): inputs of the
     * two norms, of the QKV and MLP-in projections, dropout masks (replicated without sequence
     * parallelism); q, k, v, the output projection's input and the MLP's intermediates
     * (split by T); the scores' softmax, mask and dropout (5 a s bytes), or with flash
     * attention its log-sum-exp (4 bytes a head) */
    double r = 8.0 * h + (dropout ? 2.0 * h : 0.0);
    double s = ACT * (2 * q + 2 * kv + (nm == 3.0 ? 3 : 2) * f);
    if (mla) {
        /* MLA saves, besides the norms' and projections' h-wide inputs (r): the two latents'
         * norm inputs and the up-projections' inputs (2 q_lora + 2 kv_lora, replicated on
         * every tensor-parallel rank), the shared rotary key's input (qk_rope); q and k (qk
         * dims a head), v and the output projection's input (v_head_dim a head), split by
         * heads */
        s = ACT * (2.0 * qlr + 2.0 * kvl + rope +
                   2.0 * heads * qk + 2.0 * heads * vd + (nm == 3.0 ? 3 : 2) * f);
    }
    double core = env->flash ? 4.0 * heads : 5.0 * heads * (double)seq;
    o->act = r / (sp ? T : 1) + s + core;
    o->act_sel = r / (sp ? T : 1) + s + (env->flash ? core : 0.0);
    o->act_full = 2.0 * h / (sp ? T : 1);
}

/* ---- a stage ---- */

struct stage_cost {
    double mm, core, elt, elt_core, params, params_exp, act, a2a, kv;
    double layers, moe_layers;
    double logits_mm, loss_bytes, logits_act;   /* last stage */
    /* T5 only (decoders: 2 all-reduces of h a token each way per layer): tensor-parallel
     * all-reduces of a micro-batch's forward and backward, and their bytes per local token */
    double tp_fwd_n, tp_fwd_b, tp_bwd_n, tp_bwd_b;
    /* T5 with pipeline stages: the bytes this stage sends forward, per local token (the
     * encoder's hidden states, and on the decoder's stages the encoder output with them) */
    double p2p_out;
};

/* A layer's costs added to its stage's, its activations those the recompute setting keeps. */
static void add_layer(struct stage_cost *s, const struct layer_cost *l, enum fm_recompute rc)
{
    s->mm += l->mm;
    s->core += l->core;
    s->elt += l->elt;
    s->elt_core += l->elt_core;
    s->params += l->params;
    s->params_exp += l->params_exp;
    s->act += rc == FM_RECOMPUTE_FULL ? l->act_full
              : rc == FM_RECOMPUTE_SELECTIVE ? l->act_sel : l->act;
    s->a2a += l->a2a;
    s->kv += l->kv;
    s->layers += 1;
    s->moe_layers += l->a2a > 0;
}

/* ---- T5 ---- */

/* T5 (Raffel et al. 2020, T5ForConditionalGeneration as src/frontend/llm/build_seq2seq.c
 * builds it) on one rank as Megatron-LM shards its encoder-decoder: q, k, v and o of every
 * attention (the encoder's and the decoder's self-attention, the decoder's cross-attention)
 * split by heads, the feed-forward's wi (wi_0 and wi_1 when gated) and wo by d_ff, the shared
 * embedding, tied to the head, by the vocabulary; the relative position bias of the first
 * block of each stack kept for this rank's heads; the T5LayerNorms (a scale, no mean, no bias)
 * replicated. Per sequence, not per token: the encoder runs on seq source tokens (S), the
 * decoder on dseq target tokens (D), and the cross-attention's k and v project the S encoder
 * outputs in every decoder layer. T5 has no 1/sqrt(d) and no biases; its dropout is left out,
 * as the counted graph leaves it out. */
static void t5_layer_cost(const struct fm_plan_env *env, bool dec, int T, bool sp, int64_t seq,
                          int64_t dseq, struct layer_cost *o)
{
    const struct fm_llm_config *m = env->cfg;
    memset(o, 0, sizeof(*o));
    double h = (double)m->hidden, heads = (double)m->heads / T;
    double q = heads * (double)m->head_dim;   /* kv heads = heads in T5 */
    double f = (double)m->ffn / T, nm = m->gated_mlp ? 3.0 : 2.0;
    double S = (double)seq, D = (double)dseq;
    double rs = sp ? T : 1;   /* what sequence parallelism splits */
    /* attention's saved scores per query over sk keys: softmax output, mask and dropout
     * (5 bytes a score, Korthikanti et al. 2022), or flash attention's log-sum-exp */
    double core_s = env->flash ? 4.0 * heads : 5.0 * heads * S;
    double core_d = env->flash ? 4.0 * heads : 5.0 * heads * D;
    if (!dec) {
        /* self-attention (q, k, v, o: 4 h x q) and the feed-forward on S tokens */
        o->params = 4.0 * h * q + h * f * nm + 2.0 * h;
        o->mm = S * (2.0 * 4.0 * h * q + 2.0 * h * f * nm);
        o->core = S * 4.0 * S * q;   /* QK^T and AV over every key: no mask to skip */
        /* two norms and two residual adds (10 h elements), the activation (and the gate) */
        o->elt = S * (10.0 * h / rs + (nm == 3.0 ? 3.0 : 2.0) * f) * ACT;
        if (!env->flash) {
            o->elt_core = S * 9.0 * heads * S;
            o->elt += o->elt_core;
        }
        /* saved: the two norms' and two projections' inputs (8 h bytes), q, k, v, o's input
         * and the feed-forward's intermediates, the scores */
        double keep = S * (8.0 * h / rs + ACT * (4.0 * q + (nm == 3.0 ? 3.0 : 2.0) * f));
        o->act = keep + S * core_s;
        o->act_sel = keep + (env->flash ? S * core_s : 0.0);
        o->act_full = S * 2.0 * h / rs;
        return;
    }
    /* self-attention on D tokens, cross-attention (q and o on D tokens, k and v on the S
     * encoder outputs), the feed-forward on D tokens */
    o->params = 8.0 * h * q + h * f * nm + 3.0 * h;
    o->mm = D * (2.0 * 4.0 * h * q + 2.0 * 2.0 * h * q + 2.0 * h * f * nm) +
            S * 2.0 * 2.0 * h * q;
    o->core = D * 4.0 * D * q + D * 4.0 * S * q;
    /* three norms and three residual adds */
    o->elt = D * (15.0 * h / rs + (nm == 3.0 ? 3.0 : 2.0) * f) * ACT;
    if (!env->flash) {
        o->elt_core = D * 9.0 * heads * (D + S);
        o->elt += o->elt_core;
    }
    /* saved per target token: three norms' inputs and the self-attention's qkv, the
     * cross-attention's q and the feed-forward's inputs (12 h bytes); self-attention's q, k, v
     * and o's input, cross-attention's q and o's input; per source token the cross-attention's
     * k and v (the encoder's output they read is saved once, stage_costs) */
    double keep = D * (12.0 * h / rs + ACT * (6.0 * q + (nm == 3.0 ? 3.0 : 2.0) * f)) +
                  S * ACT * 2.0 * q;
    o->act = keep + D * (core_d + core_s);
    o->act_sel = keep + (env->flash ? D * (core_d + core_s) : 0.0);
    o->act_full = D * 2.0 * h / rs;
}

/* Forward FLOPs of one T5 layer (encoder or decoder) on a rank, per sequence. */
static double t5_layer_flops(const struct fm_plan_env *env, const struct fm_plan_cfg *c,
                             bool dec)
{
    struct layer_cost l;
    t5_layer_cost(env, dec, c->tp, c->sp, c->seq, c->dseq, &l);
    return l.mm + l.core;
}

int fm_plan_t5_split(const struct fm_plan_env *env, const struct fm_plan_cfg *c)
{
    const struct fm_llm_config *m = env->cfg;
    if (m->arch != FM_LLM_T5 || c->pp < 2)
        return 0;
    double fe = t5_layer_flops(env, c, false), fd = t5_layer_flops(env, c, true);
    double logits = (double)c->dseq * 2.0 * (double)m->hidden * (double)env->vocab / c->tp;
    int best = 0;
    double best_t = 0;
    for (int r = 1; r < c->pp; r++) {
        int nd = c->pp - r;
        if (m->layers % r || m->decoder_layers % nd)
            continue;
        double te = fe * (double)(m->layers / r);
        double td = fd * (double)(m->decoder_layers / nd) + (nd == 1 ? logits : 0.0);
        double t = te > td ? te : td;
        if (!best || t < best_t) {
            best = r;
            best_t = t;
        }
    }
    return best;
}

/* A T5 plan's stages, per sequence: with pp = 1 one stage holds both stacks; with pipeline
 * stages the encoder's layers lie evenly on the first `split` stages and the decoder's on the
 * rest (fm_plan_t5_split). The shared embedding is on the first stage, and with pipeline
 * stages Megatron-LM keeps copies on the decoder's first stage (its input embedding) and on
 * the last (the head), their gradients all-reduced among the three after the flush
 * (fm_plan_eval's FM_PLAN_COMM_EMB); every decoder stage receives the encoder's output and keeps
 * it for its cross-attentions' backward. */
static void t5_seq_costs(const struct fm_plan_env *env, const struct fm_plan_cfg *c,
                         struct stage_cost *st)
{
    const struct fm_llm_config *m = env->cfg;
    int pp = c->pp > 1 ? c->pp : 1;
    memset(st, 0, sizeof(*st) * (size_t)pp);
    int split = pp > 1 ? fm_plan_t5_split(env, c) : 1;
    if (pp > 1 && split == 0)
        split = 1;   /* refused by fm_plan_check; keeps the indices in range */
    int first_dec = pp > 1 ? split : 0, n_enc = pp > 1 ? split : 1;
    int n_dec = pp > 1 ? pp - split : 1;
    int64_t per_enc = (m->layers + n_enc - 1) / n_enc;
    int64_t per_dec = (m->decoder_layers + n_dec - 1) / n_dec;
    double S = (double)c->seq, D = (double)c->dseq, h = (double)m->hidden;
    for (int64_t i = 0; i < m->layers + m->decoder_layers; i++) {
        bool dec = i >= m->layers;
        struct stage_cost *s = dec ? &st[first_dec + (int)((i - m->layers) / per_dec)]
                                   : &st[(int)(i / per_enc)];
        struct layer_cost l;
        t5_layer_cost(env, dec, c->tp, c->sp, c->seq, c->dseq, &l);
        add_layer(s, &l, c->recompute);
        /* Megatron's row-parallel outputs: attention and MLP (encoder), self-attention,
         * cross-attention and MLP (decoder) all-reduced forward; backward the column-parallel
         * inputs', and in a decoder layer also the gradient of the encoder's output that the
         * cross-attention's k and v read */
        s->tp_fwd_n += dec ? 3.0 : 2.0;
        s->tp_fwd_b += (dec ? 3.0 * D : 2.0 * S) * h * ACT;
        s->tp_bwd_n += dec ? 4.0 : 2.0;
        s->tp_bwd_b += (dec ? 3.0 * D + S : 2.0 * S) * h * ACT;
    }
    double vr = (double)env->vocab / c->tp;
    double bias = (double)m->rel_buckets * (double)m->heads / c->tp;
    struct stage_cost *s0 = &st[0], *sd = &st[first_dec], *se = &st[n_enc - 1];
    struct stage_cost *sl = &st[pp - 1];
    /* the shared embedding (the head's weight too) and the copies above; each stack's relative
     * position bias (this rank's heads) with its first layer; each stack's final norm with
     * its last */
    s0->params += vr * h + bias;
    sd->params += bias + (pp > 1 ? vr * h : 0.0);
    if (pp > 1 && pp - 1 != first_dec)
        sl->params += vr * h;
    se->params += h;
    sl->params += h;
    sl->logits_mm = D * 2.0 * h * vr;
    /* the two embeddings' gathers written, the two final norms, the decoder output's scale */
    s0->elt += S * 2.0 * h * ACT;
    sd->elt += D * 2.0 * h * ACT;
    se->elt += S * 2.0 * h * ACT;
    sl->elt += 2.0 * D * 2.0 * h * ACT;
    /* the encoder's output, read by every cross-attention: kept by each decoder stage */
    for (int k = first_dec; k < pp; k++)
        st[k].act += S * 2.0 * h;
    sl->loss_bytes = D * 12.0 * vr;
    sl->logits_act = D * 8.0 * vr;
    /* sent forward: the encoder's hidden states (its output from its last stage); on the
     * decoder's stages the decoder's hidden states and the encoder's output */
    for (int k = 0; pp > 1 && k < pp - 1; k++)
        st[k].p2p_out = (k < first_dec ? S : D + S) * h * ACT;
}

/* The stages' costs per local token (the plan's unit: tokens = micro-batch x seq, cp = 1) */
static void t5_stage_costs(const struct fm_plan_env *env, const struct fm_plan_cfg *c,
                           struct stage_cost *st)
{
    t5_seq_costs(env, c, st);
    double S = (double)c->seq;
    for (int k = 0; k < (c->pp > 1 ? c->pp : 1); k++) {
        struct stage_cost *s = &st[k];
        double *per[] = {&s->mm,         &s->core,       &s->elt,        &s->elt_core,
                         &s->act,        &s->logits_mm,  &s->loss_bytes, &s->logits_act,
                         &s->tp_fwd_b,   &s->tp_bwd_b,   &s->p2p_out};
        for (size_t i = 0; i < sizeof(per) / sizeof(per[0]); i++)
            *per[i] /= S;
    }
}

/* Every stage's sums in one pass over the layers. */
static void stage_costs(const struct fm_plan_env *env, const struct fm_plan_cfg *c,
                        struct stage_cost *st)
{
    const struct fm_llm_config *m = env->cfg;
    if (m->arch == FM_LLM_T5) {
        t5_stage_costs(env, c, st);
        return;
    }
    memset(st, 0, sizeof(*st) * (size_t)c->pp);
    /* balanced (Llama 3): the embedding and the head each take a layer's slot, so the first
     * and last stages hold one layer fewer */
    int64_t off = c->balance ? 1 : 0;
    int64_t chunk = uneven_stages(m, c) ? (m->layers + c->pp - 1) / c->pp
                                        : (m->layers + 2 * off) / ((int64_t)c->pp * c->v);
    for (int64_t i = 0; i < m->layers; i++) {
        struct stage_cost *s = &st[((i + off) / chunk) % c->pp];
        struct layer_cost l;
        layer_cost(env, i, c->tp, c->ep, c->sp, c->seq, &l);
        add_layer(s, &l, c->recompute);
    }
    double h = (double)m->hidden, vr = (double)env->vocab / c->tp;
    bool bert = m->arch == FM_LLM_BERT;
    st[0].params += vr * h + (m->pos == FM_LLM_POS_LEARNED ? (double)m->max_pos * h : 0);
    st[0].elt += 2.0 * h * ACT;   /* the embedding's gather written */
    if (bert)   /* token-type embeddings and the embeddings' LayerNorm */
        st[0].params += (double)m->type_vocab * h + 2 * h;
    struct stage_cost *s = &st[c->pp - 1];
    /* a decoder's final norm; BERT's masked-LM head instead: its transform (dense h x h with
     * bias, LayerNorm, replicated over tp) and the decoder's bias (split with the vocabulary) */
    s->params += bert ? h * h + h + 2 * h + vr : (m->rms_norm ? h : 2 * h);
    if (!m->tied_embeddings || c->pp > 1)
        s->params += vr * h;   /* the head (Megatron keeps a tied copy on the last stage) */
    s->logits_mm = 2.0 * h * vr + (bert ? 2.0 * h * h : 0.0);
    /* fp32 logits written, read by the softmax, its gradient written */
    s->loss_bytes = 12.0 * vr;
    s->logits_act = 8.0 * vr;   /* fp32 logits and their gradient, one micro-batch */
}

void fm_plan_rank_work(const struct fm_plan_env *env, const struct fm_plan_cfg *c,
                       double *fwd_flops_per_token, double *params)
{
    struct fm_plan_cfg one = *c;
    struct stage_cost st[FM_LLM_MAX_LAYERS];
    stage_costs(env, &one, st);
    *fwd_flops_per_token = 0;
    *params = 0;
    for (int s = 0; s < c->pp; s++) {
        *fwd_flops_per_token += st[s].mm + st[s].core + st[s].logits_mm;
        *params += st[s].params + st[s].params_exp;
    }
}

void fm_plan_rank_work_seq(const struct fm_plan_env *env, const struct fm_plan_cfg *c,
                           double *fwd_flops_per_seq, double *params)
{
    if (env->cfg->arch == FM_LLM_T5) {
        /* summed per sequence: exact in doubles, where per token x seq would round; the
         * rank's whole work, on one stage */
        struct fm_plan_cfg one = *c;
        one.pp = 1;
        struct stage_cost st;
        t5_seq_costs(env, &one, &st);
        *fwd_flops_per_seq = st.mm + st.core + st.logits_mm;
        *params = st.params;
        return;
    }
    fm_plan_rank_work(env, c, fwd_flops_per_seq, params);
    *fwd_flops_per_seq *= (double)c->seq;
}

/* Forward time of one micro-batch's work on a stage, and its attention core's part. */
static double compute_time(const struct fm_plan_env *env, double flops, double bytes)
{
    double peak = fm_device_ceiling(env->dev, FM_CLASS_MATMUL, env->precision, NULL, NULL);
    return flops / (peak * env->ppp_compute) + bytes / (env->dev->mem_bw * env->ppp_memory);
}

static void set_comm(struct fm_plan_comm *x, const char *what, enum fm_coll coll, int group,
                     bool inter, double bytes, double t, double exposed)
{
    x->what = what;
    x->coll = coll;
    x->group = group;
    x->inter = inter;
    x->bytes = bytes;
    x->time_s = t;
    x->exposed_s = exposed;
}

static double pos(double x)
{
    return x > 0 ? x : 0;
}

void fm_plan_eval(const struct fm_plan_env *env, const struct fm_plan_cfg *c,
                  struct fm_plan_eval *out)
{
    const struct fm_llm_config *m = env->cfg;
    memset(out, 0, sizeof(*out));
    out->cfg = *c;
    double tokens = (double)c->mb * (double)c->seq / c->cp;   /* per GPU per micro-batch */
    double h = (double)m->hidden;
    double mcount = (double)c->m;
    /* where each group sits: TP innermost, then CP, then DP (EP within it), PP outermost */
    struct fm_group_link tp_l, cp_l, ep_l, dp_l, edp_l, pp_l;
    fm_group_link(env->cluster, c->tp, 1, env->ppp_comm, &tp_l);
    fm_group_link(env->cluster, c->cp, c->tp, env->ppp_comm, &cp_l);
    fm_group_link(env->cluster, c->ep, (int64_t)c->tp * c->cp, env->ppp_comm, &ep_l);
    fm_group_link(env->cluster, c->dp, (int64_t)c->tp * c->cp, env->ppp_comm, &dp_l);
    fm_group_link(env->cluster, c->dp / c->ep, (int64_t)c->tp * c->cp * c->ep, env->ppp_comm,
                  &edp_l);
    fm_group_link(env->cluster, 2, (int64_t)c->tp * c->cp * c->dp, env->ppp_comm, &pp_l);

    /* the slowest stage sets the pipeline's pace */
    double best_mb = -1, st_f = 0, st_b = 0, st_rc = 0, st_tp = 0, st_cp = 0, st_ep = 0;
    double st_pp = 0, st_p2p = 0, tp_bytes = 0, cp_bytes = 0, ep_bytes = 0, t_tp_all = 0;
    double t_cp_all = 0;
    double t_ep_all = 0;
    double mem_best = -1;
    double p2p_bytes = tokens * h * ACT / c->tp;   /* Narayanan's scatter/gather: split by T */
    double t_p2p = c->pp > 1 ? fm_coll_time(FM_COLL_P2P, p2p_bytes, 2, pp_l.busbw, pp_l.lat) : 0;
    struct stage_cost stages[FM_LLM_MAX_LAYERS];
    stage_costs(env, c, stages);
    for (int s = 0; s < c->pp; s++) {
        const struct stage_cost sc = stages[s];
        double t_f, t_b, t_core;
        if (env->timing) {
            /* a calibration's times of one layer of each kind, times the stage's layers of
             * that kind, and the embedding's and the head's on the first and last stages */
            const struct fm_plan_timing *tm = env->timing;
            double moe = sc.moe_layers, dense = sc.layers - sc.moe_layers;
            t_f = dense * tm->layer_fwd[0] + moe * tm->layer_fwd[1] +
                  (s == 0 ? tm->first_fwd : 0.0) + (s == c->pp - 1 ? tm->last_fwd : 0.0);
            t_b = dense * tm->layer_bwd[0] + moe * tm->layer_bwd[1] +
                  (s == 0 ? tm->first_bwd : 0.0) + (s == c->pp - 1 ? tm->last_bwd : 0.0);
            t_core = dense * tm->layer_core[0] + moe * tm->layer_core[1];
        } else {
            double f_flops = (sc.mm + sc.core + sc.logits_mm) * tokens;
            double f_bytes = (sc.elt + sc.loss_bytes) * tokens;
            t_f = compute_time(env, f_flops, f_bytes);
            t_b = 2.0 * t_f;
            t_core = compute_time(env, sc.core * tokens, sc.elt_core * tokens);
        }
        double t_rc = c->recompute == FM_RECOMPUTE_FULL ? t_f
                      : c->recompute == FM_RECOMPUTE_SELECTIVE ? t_core : 0.0;
        /* tensor parallel: 2 all-reduces forward and 2 backward per layer (with sequence
         * parallelism an all-gather and a reduce-scatter each, the same volume), 2 more in a
         * full recompute's forward */
        double n_tp = sc.layers * (4.0 + (c->recompute == FM_RECOMPUTE_FULL ? 2.0 : 0.0));
        double b_tp = tokens * h * ACT;
        double t_tp = c->tp > 1 ? n_tp * fm_coll_time(FM_COLL_ALLREDUCE, b_tp, c->tp,
                                                      tp_l.busbw, tp_l.lat)
                                : 0.0;
        double tp_all_bytes = n_tp * b_tp;
        if (m->arch == FM_LLM_T5) {
            /* all-reduces of unequal sizes (source and target tokens): their bytes summed at
             * the bus bandwidth, a latency per step of each */
            double rc = c->recompute == FM_RECOMPUTE_FULL ? 2.0 : 1.0;
            n_tp = rc * sc.tp_fwd_n + sc.tp_bwd_n;
            tp_all_bytes = tokens * (rc * sc.tp_fwd_b + sc.tp_bwd_b);
            t_tp = c->tp > 1 ? fm_coll_time(FM_COLL_ALLREDUCE, tp_all_bytes, c->tp, tp_l.busbw,
                                            0.0) +
                                   n_tp * fm_coll_steps(FM_COLL_ALLREDUCE, c->tp) * tp_l.lat
                             : 0.0;
        }
        /* context parallel: K and V of every chunk go round the ring (an all-gather's volume,
         * one per layer) forward; backward, K and V again and their gradients (twice that);
         * each hidden behind attention's core as far as it lasts */
        double b_cp = sc.kv * tokens * c->cp;   /* the stage's layers summed */
        double nl = sc.layers > 0 ? sc.layers : 1;
        double t_cp1 = c->cp > 1 ? nl * fm_coll_time(FM_COLL_ALLGATHER, b_cp / nl, c->cp,
                                                     cp_l.busbw, cp_l.lat)
                                 : 0.0;
        double t_cp = pos(t_cp1 - t_core) + pos(2.0 * t_cp1 - 2.0 * t_core);
        /* expert parallel: dispatch and combine forward, their gradients backward */
        double n_ep = 4.0 + (c->recompute == FM_RECOMPUTE_FULL ? 2.0 : 0.0);
        double b_ep = sc.a2a * tokens;   /* summed over the stage's MoE layers */
        double t_ep = c->ep > 1 ? n_ep * fm_alltoall_time(&ep_l, b_ep, c->ep) +
                                      n_ep * sc.moe_layers * fm_coll_steps(FM_COLL_ALLTOALL,
                                                                           c->ep) * ep_l.lat
                                : 0.0;
        double p2p_s = p2p_bytes, t_pp = 2.0 * c->v * t_p2p;
        if (m->arch == FM_LLM_T5 && c->pp > 1) {
            /* this stage's larger boundary: what it receives forward, or what it sends */
            double in = s > 0 ? stages[s - 1].p2p_out : 0.0;
            p2p_s = (in > sc.p2p_out ? in : sc.p2p_out) * tokens / c->tp;
            t_pp = 2.0 * fm_coll_time(FM_COLL_P2P, p2p_s, 2, pp_l.busbw, pp_l.lat);
        }
        double t_mb = t_f + t_b + t_rc + t_tp + t_cp + t_ep + t_pp;
        if (t_mb > best_mb) {
            best_mb = t_mb;
            st_f = t_f;
            st_b = t_b;
            st_rc = t_rc;
            st_tp = t_tp;
            st_cp = t_cp;
            st_ep = t_ep;
            st_pp = t_pp;
            st_p2p = p2p_s;
            tp_bytes = tp_all_bytes;
            cp_bytes = 3.0 * b_cp;
            ep_bytes = n_ep * b_ep;
            t_tp_all = t_tp;
            t_cp_all = 3.0 * t_cp1;
            t_ep_all = t_ep;
        }
        /* memory of this stage */
        double w, g, o, we, ge, oe;
        int zero = c->zero;
        fm_plan_state_bytes(sc.params, env->grad_bytes, zero, c->dp, &w, &g, &o);
        fm_plan_state_bytes(sc.params_exp, env->grad_bytes, zero, c->dp / c->ep, &we, &ge, &oe);
        double in_flight = (double)(c->m < c->pp - s ? c->m : c->pp - s);
        if (c->v > 1 && s == 0)
            in_flight *= 1.0 + (double)(c->pp - 1) / ((double)c->pp * c->v);
        double act = sc.act * tokens * in_flight + sc.logits_act * tokens;
        double buffers = 4.0 * p2p_s * (c->pp > 1) + (c->tp > 1 ? b_tp : 0.0);
        if (zero >= 3)
            buffers += 2.0 * 2.0 * (sc.params + sc.params_exp) /
                       (sc.layers > 0 ? sc.layers : 1);   /* two layers gathered ahead */
        double total = w + g + o + we + ge + oe + act + buffers;
        if (total > mem_best) {
            mem_best = total;
            out->mem_weights = w + we;
            out->mem_grads = g + ge;
            out->mem_optimizer = o + oe;
            out->mem_activations = act;
            out->mem_buffers = buffers;
            out->mem_total = total;
            out->params_per_gpu = sc.params + sc.params_exp;
            out->in_flight = in_flight;
        }
    }
    out->fits = out->mem_total <= env->dev->mem_bytes;

    /* data parallel: the first stage's gradients (it holds the most with the embedding) */
    double dense = stages[0].params, experts = stages[0].params_exp;
    const struct stage_cost *sl = &stages[c->pp - 1];
    if (sl->params + sl->params_exp > dense + experts) {
        dense = sl->params;
        experts = sl->params_exp;
    }
    int edp = c->dp / c->ep;
    double t_dp = 0, t_ag = 0, b_dp = 0, b_ag = 0, exp_dp = 0, exp_ag = 0, t_z3 = 0, b_z3 = 0;
    double exp_z3 = 0;
    if (c->zero >= 3) {
        /* ZeRO-3 / FSDP: weights gathered before each micro-batch's forward and backward, the
         * gradients reduce-scattered after its backward; hidden behind that micro-batch */
        double ag = fm_coll_time(FM_COLL_ALLGATHER, dense * 2.0, c->dp, dp_l.busbw, dp_l.lat) +
                    fm_coll_time(FM_COLL_ALLGATHER, experts * 2.0, edp, edp_l.busbw, edp_l.lat);
        double rs = fm_coll_time(FM_COLL_REDUCESCATTER, dense * env->grad_bytes, c->dp,
                                 dp_l.busbw, dp_l.lat) +
                    fm_coll_time(FM_COLL_REDUCESCATTER, experts * env->grad_bytes, edp,
                                 edp_l.busbw, edp_l.lat);
        t_z3 = mcount * (2.0 * ag + rs);
        b_z3 = mcount * (dense + experts) * (4.0 + env->grad_bytes);
        exp_z3 = env->overlap ? mcount * (pos(ag - st_f) + pos(ag + rs - st_b)) : t_z3;
    } else {
        enum fm_coll coll = c->zero >= 1 ? FM_COLL_REDUCESCATTER : FM_COLL_ALLREDUCE;
        t_dp = fm_coll_time(coll, dense * env->grad_bytes, c->dp, dp_l.busbw, dp_l.lat) +
               fm_coll_time(coll, experts * env->grad_bytes, edp, edp_l.busbw, edp_l.lat);
        b_dp = (dense + experts) * env->grad_bytes;
        /* overlapped with the last micro-batch's backward, bucket by bucket */
        exp_dp = env->overlap ? pos(t_dp - st_b) : t_dp;
        if (c->zero >= 1) {
            /* the distributed optimizer gathers the updated bf16 weights, hidden behind the
             * next step's first forward */
            t_ag = fm_coll_time(FM_COLL_ALLGATHER, dense * 2.0, c->dp, dp_l.busbw, dp_l.lat) +
                   fm_coll_time(FM_COLL_ALLGATHER, experts * 2.0, edp, edp_l.busbw, edp_l.lat);
            b_ag = (dense + experts) * 2.0;
            exp_ag = env->overlap ? pos(t_ag - st_f) : t_ag;
        }
    }
    /* the embedding's copies: with pipeline stages a tied table lives on the first stage (the
     * input embedding) and the last (the head), and T5's also on the decoder's first; after
     * the flush Megatron-LM all-reduces their gradients among those stages, on the critical
     * path (finalize_model_grads) */
    int emb_group = 0;
    if (c->pp > 1 && m->arch == FM_LLM_T5) {
        int split = fm_plan_t5_split(env, c);
        emb_group = split > 0 && split < c->pp - 1 ? 3 : 2;
    } else if (c->pp > 1 && m->tied_embeddings) {
        emb_group = 2;
    }
    double b_emb = 0, t_emb = 0;
    if (emb_group) {
        struct fm_group_link emb_l;
        int64_t stride = (int64_t)c->tp * c->cp * c->dp * (c->pp - 1) / (emb_group - 1);
        fm_group_link(env->cluster, emb_group, stride, env->ppp_comm, &emb_l);
        b_emb = (double)env->vocab / c->tp * h * env->grad_bytes;
        t_emb = fm_coll_time(FM_COLL_ALLREDUCE, b_emb, emb_group, emb_l.busbw, emb_l.lat);
        set_comm(&out->comm[FM_PLAN_COMM_EMB], "embedding copies' gradients",
                 FM_COLL_ALLREDUCE, emb_group, emb_l.inter, b_emb, t_emb, t_emb);
    }
    double t_opt = (dense / (c->zero >= 1 ? c->dp : 1) + experts / (c->zero >= 1 ? edp : 1)) *
                   ADAM_BYTES_PER_PARAM / (env->dev->mem_bw * env->ppp_memory);

    set_comm(&out->comm[FM_PLAN_COMM_TP], "tensor parallel", FM_COLL_ALLREDUCE, c->tp,
             tp_l.inter, mcount * tp_bytes, mcount * t_tp_all, mcount * st_tp);
    if (c->sp)
        out->comm[FM_PLAN_COMM_TP].coll = FM_COLL_REDUCESCATTER;
    set_comm(&out->comm[FM_PLAN_COMM_CP], "context parallel", FM_COLL_ALLGATHER, c->cp,
             cp_l.inter, mcount * cp_bytes, mcount * t_cp_all, mcount * st_cp);
    set_comm(&out->comm[FM_PLAN_COMM_EP], "expert parallel", FM_COLL_ALLTOALL, c->ep,
             ep_l.inter, mcount * ep_bytes, mcount * t_ep_all, mcount * st_ep);
    set_comm(&out->comm[FM_PLAN_COMM_PP], "pipeline parallel", FM_COLL_P2P, c->pp, pp_l.inter,
             mcount * 4.0 * c->v * st_p2p * (c->pp > 1), mcount * st_pp, mcount * st_pp);
    set_comm(&out->comm[FM_PLAN_COMM_DP], "data parallel gradients",
             c->zero >= 1 ? FM_COLL_REDUCESCATTER : FM_COLL_ALLREDUCE, c->dp, dp_l.inter, b_dp,
             t_dp, exp_dp);
    set_comm(&out->comm[FM_PLAN_COMM_DP_GATHER], "data parallel weights", FM_COLL_ALLGATHER,
             c->dp, dp_l.inter, b_ag, t_ag, exp_ag);
    set_comm(&out->comm[FM_PLAN_COMM_ZERO3], "ZeRO-3 / FSDP", FM_COLL_ALLGATHER, c->dp,
             dp_l.inter, b_z3, t_z3, exp_z3);

    out->t_compute = mcount * (st_f + st_b);
    out->t_recompute = mcount * st_rc;
    out->t_bubble = (double)(c->pp - 1) / c->v * best_mb;
    out->t_optimizer = t_opt;
    out->t_comm_exposed = 0;
    for (int k = 0; k < FM_PLAN_COMM_COUNT; k++)
        out->t_comm_exposed += out->comm[k].exposed_s;
    out->step_s = out->t_compute + out->t_recompute + out->t_comm_exposed + out->t_bubble +
                  out->t_optimizer;

    /* FLOPs of the whole model per step, unsharded: forward x 3 (model FLOPs), plus what
     * recomputation runs again (hardware FLOPs) */
    struct fm_plan_env full = *env;
    full.vocab = m->vocab;
    double head = 2.0 * h * (double)m->vocab + (m->arch == FM_LLM_BERT ? 2.0 * h * h : 0.0);
    double fwd = head, core = 0;
    for (int64_t i = 0; i < m->layers && m->arch != FM_LLM_T5; i++) {
        struct layer_cost l;
        layer_cost(&full, i, 1, 1, false, c->seq, &l);
        fwd += l.mm + l.core;
        core += l.core;
    }
    double all_tokens = (double)c->gb * (double)c->seq;
    if (m->arch == FM_LLM_T5) {
        /* per token of the source and the target together: a T5 step's tokens */
        struct fm_plan_cfg one = *c;
        one.tp = 1;
        one.pp = 1;
        struct stage_cost t5;
        t5_seq_costs(&full, &one, &t5);
        double per = (double)(c->seq + c->dseq);
        head = t5.logits_mm / per;
        fwd = (t5.mm + t5.core + t5.logits_mm) / per;
        core = t5.core / per;
        all_tokens = (double)c->gb * per;
    }
    out->model_flops = 3.0 * fwd * all_tokens;
    out->hardware_flops = out->model_flops +
                          (c->recompute == FM_RECOMPUTE_FULL ? fwd - head
                           : c->recompute == FM_RECOMPUTE_SELECTIVE ? core : 0.0) * all_tokens;
    double peak = fm_device_util_peak(env->dev, env->precision, false);
    out->mfu = out->model_flops / (out->step_s * env->gpus * peak);
    out->hfu = out->hardware_flops / (out->step_s * env->gpus * peak);
    out->tokens_per_s = all_tokens / out->step_s;
}
