/* A language model's plan timed by a calibration: the config sharded by tp is built with one
 * layer of each kind (a dense MLP, a mixture of experts) at the plan's micro-batch and
 * sequence, counted as a training step and predicted with the calibration (predict.c, the path
 * a counted graph's plan takes in plan_graph.c); each node-phase's calibrated time goes to its
 * layer's kind, to the embedding (first stage) or to the final norm, head and loss (last
 * stage), and plan.c multiplies a layer's time by the stage's layers of its kind. It times
 * compute only: communication, the bubble and the optimizer keep the plan's formulas. What the
 * graph of a sharded config does not show is not timed: sequence parallelism's split of the
 * norms and residuals (they run replicated here), and context parallelism (refused). */
#include "plan.h"
#include "calibration_internal.h"

#include <stdio.h>
#include <string.h>

/* The layer a node belongs to: the first part of its name between dots or slashes that is all
 * digits ("model.layers.3.mlp.experts.5.up_proj", "model.layers.3/add": 3; HF's module paths
 * put the layer index first), or -1 for a node outside the layers (the embedding, the head,
 * the loss). */
static int64_t layer_of(const char *name)
{
    for (const char *s = name; s && *s;) {
        const char *e = strpbrk(s, "./");
        size_t n = e ? (size_t)(e - s) : strlen(s);
        bool digits = n > 0 && n < 10;
        for (size_t i = 0; i < n && digits; i++)
            digits = s[i] >= '0' && s[i] <= '9';
        if (digits) {
            int64_t v = 0;
            for (size_t i = 0; i < n; i++)
                v = v * 10 + (s[i] - '0');
            return v;
        }
        s = e ? e + 1 : NULL;
    }
    return -1;
}

/* Times c's micro-batch on one GPU (its tp, micro-batch and sequence; the vocabulary padded to
 * vocab) into *tm. */
static enum fm_status time_graph(struct fm_plan *p, const struct fm_plan_cfg *c, int64_t vocab,
                                 struct fm_plan_timing *tm)
{
    struct fm_ctx *ctx = p->ctx;
    const struct fm_plan_opts *o = &p->opts;
    const struct fm_llm_config *m = &p->model;
    memset(tm, 0, sizeof(*tm));
    /* one layer of each kind the model has, in the order they first appear */
    struct fm_llm_config shard;
    fm_plan_shard_config(m, c->tp, vocab, &shard);
    int kind_at[2] = {-1, -1}, layer_kind[2] = {0, 0};   /* graph layer of a kind, and back */
    int64_t k = 0;
    for (int64_t i = 0; i < m->layers && i < FM_LLM_MAX_LAYERS; i++) {
        int kind = fm_plan_layer_is_moe(m, i) ? 1 : 0;
        if (kind_at[kind] >= 0)
            continue;
        kind_at[kind] = (int)k;
        layer_kind[k] = kind;
        shard.layer_moe[k] = (uint8_t)kind;
        shard.layer_sliding[k] = m->layer_sliding[i];
        k++;
    }
    shard.layers = k;

    struct fm_llm_build_opts bo;
    fm_llm_build_opts_init(&bo);
    bo.batch = c->mb;
    bo.seq = c->seq;
    bo.dtype = FM_DTYPE_BF16;
    bo.with_loss = true;
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = FM_MODE_TRAIN;
    co.optimizer = FM_OPTIM_ADAM;
    struct fm_predict_opts po;
    fm_predict_opts_init(&po);
    po.device = p->dev;
    po.precision = o->precision;
    po.ppp_compute = o->ppp_compute;
    po.ppp_memory = o->ppp_memory;
    po.ppp_comm = o->ppp_comm;
    po.calibration = o->calibration;
    struct fm_graph *g = NULL;
    struct fm_counts *cnt = NULL;
    struct fm_prediction *pr = NULL;
    enum fm_status st = fm_llm_build(ctx, &shard, &bo, &g);
    if (st) {
        if (c->tp > 1 && (m->arch == FM_LLM_GPT2 || m->arch == FM_LLM_GPT_NEOX))
            st = fm_error(ctx, FM_ERR_INVALID,
                          "fm_plan_opts.calibration times the graph of the config sharded by "
                          "fm_plan_opts.tp, and %s (%s) fuses q, k and v by the hidden size: "
                          "its config cannot be sharded by heads; time it at tp = 1, or plan "
                          "it without the calibration",
                          m->name, fm_llm_arch_name(m->arch));
        goto out;
    }
    if ((st = fm_count(ctx, g, &co, &cnt)) || (st = fm_predict(ctx, g, cnt, &po, &pr)))
        goto out;
    const fm_nid *order = fm_graph_topo_order(g);
    size_t n = fm_graph_node_count(g);
    bool seen_layer = false;
    for (size_t i = 0; i < n; i++) {
        fm_nid id = order[i];
        const struct fm_node *nd = fm_graph_node(g, id);
        const struct fm_phase_time *t = pr->nodes[id];
        double f = t[FM_PHASE_FWD].t_calibrated;
        double b = t[FM_PHASE_BWD_DATA].t_calibrated + t[FM_PHASE_BWD_WEIGHT].t_calibrated;
        for (int ph = FM_PHASE_FWD; ph <= FM_PHASE_BWD_WEIGHT; ph++) {
            if (t[ph].flops > 0 || t[ph].bytes > 0) {
                tm->node_phases++;
                tm->uncalibrated += !t[ph].calibrated;
            }
        }
        int64_t layer = layer_of(nd->name);
        if (layer >= 0 && layer < k) {
            int kind = layer_kind[layer];
            seen_layer = true;
            tm->layer_fwd[kind] += f;
            tm->layer_bwd[kind] += b;
            if (fm_op_class(nd->op) == FM_CLASS_ATTENTION)
                tm->layer_core[kind] += f;
        } else if (!seen_layer) {
            tm->first_fwd += f;
            tm->first_bwd += b;
        } else {
            tm->last_fwd += f;
            tm->last_bwd += b;
        }
    }
out:
    fm_prediction_free(pr);
    fm_counts_free(cnt);
    fm_graph_free(g);
    return st;
}

void fm_plan_calib_note(struct fm_plan *p, const struct fm_plan_timing *tm)
{
    const struct fm_calibration *cal = p->opts.calibration;
    p->calibrated = true;
    snprintf(p->timing_note, sizeof(p->timing_note),
             "compute by calibration %.200s (%.100s, %s) on the graph of one layer of each "
             "kind%s; %zu of its %zu node-phases have no entry (PALEO's sum)",
             cal->source[0] ? cal->source : "(fitted)", cal->device,
             fm_precision_name(cal->precision),
             p->searched ? " at each plan's tp and micro-batch" : "", tm->uncalibrated,
             tm->node_phases);
}

enum fm_status fm_plan_calib_time(struct fm_plan *p, const struct fm_plan_cfg *c)
{
    enum fm_status st = time_graph(p, c, p->env.vocab, &p->timing);
    if (st)
        return st;
    p->env.timing = &p->timing;
    fm_plan_calib_note(p, &p->timing);
    return FM_OK;
}

enum fm_status fm_plan_calib_lookup(struct fm_plan_timings *ts, const struct fm_plan_cfg *c,
                                    int tp_index, int mb_index, int64_t vocab,
                                    const struct fm_plan_timing **out)
{
    *out = NULL;
    if (tp_index < 0 || tp_index >= FM_PLAN_SEARCH_TP || mb_index < 0 || mb_index >= 3)
        return fm_error(ts->plan->ctx, FM_ERR_INVALID, "no timing slot for tp %d", c->tp);
    uint8_t *state = &ts->state[tp_index][mb_index];
    struct fm_plan_timing *tm = &ts->t[tp_index][mb_index];
    if (*state == 0) {
        enum fm_status st = time_graph(ts->plan, c, vocab, tm);
        enum fm_llm_arch arch = ts->plan->model.arch;
        if (st && !(st == FM_ERR_INVALID && c->tp > 1 &&
                    (arch == FM_LLM_GPT2 || arch == FM_LLM_GPT_NEOX)))
            return st;   /* what no tp can time (a sequence past learned positions) */
        *state = st ? 2 : 1;
    }
    *out = *state == 1 ? tm : NULL;   /* NULL: this tp cannot be timed (fused q, k, v) */
    return FM_OK;
}
