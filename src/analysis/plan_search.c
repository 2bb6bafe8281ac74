/* The plan search: every valid combination of tensor (powers of two up to a node), pipeline
 * (divisors of the layers, or of the layers + 2 with the embedding and the head each in a
 * layer's slot, or for DeepSeek-V3 any its uneven layout takes), context (powers of two dividing the sequence) and expert
 * parallelism, micro-batch (1, 2, 4), interleaving (1, 2) and recompute (none, selective, full),
 * data parallelism taking the rest of the GPUs, at the global batch given; at the ZeRO stage
 * given, or, when none is, at the fastest of ZeRO 0, 1, 2 and 3 that fits (3 with pp 1 only,
 * as a plan refuses it otherwise; the lowest stage of equals, since stage 2 takes as long as 1
 * in this model and only saves memory), so that one layout is listed once. With a calibration,
 * each plan's compute is timed by it (plan_calib.c: one timed graph per tp and micro-batch)
 * and context parallelism, which that graph cannot show, is not tried. Each is evaluated
 * analytically (plan.c: a pass over the layers), so thousands of plans take milliseconds.
 * Keeps the fastest plans that fit, each with what costs it time against the best. */
#include "plan.h"

#include <stdio.h>
#include <string.h>

static void consider(struct fm_plan_search *s, const struct fm_plan_eval *e)
{
    int n = s->n_best;
    int at = n;
    while (at > 0 && s->best[at - 1].step_s > e->step_s)
        at--;
    if (at >= FM_PLAN_SEARCH_KEEP)
        return;
    int last = n < FM_PLAN_SEARCH_KEEP ? n : FM_PLAN_SEARCH_KEEP - 1;
    for (int i = last; i > at; i--)
        s->best[i] = s->best[i - 1];
    s->best[at] = *e;
    if (n < FM_PLAN_SEARCH_KEEP)
        s->n_best++;
}

/* What the runner-up spends more time on than the best. */
static void explain(const struct fm_plan_eval *best, const struct fm_plan_eval *e, char *buf,
                    size_t size)
{
    struct {
        const char *what;
        double d;
    } parts[] = {
        {"compute", e->t_compute - best->t_compute},
        {"recompute", e->t_recompute - best->t_recompute},
        {"pipeline bubble", e->t_bubble - best->t_bubble},
        {"tensor-parallel communication",
         e->comm[FM_PLAN_COMM_TP].exposed_s - best->comm[FM_PLAN_COMM_TP].exposed_s},
        {"pipeline send/recv",
         e->comm[FM_PLAN_COMM_PP].exposed_s - best->comm[FM_PLAN_COMM_PP].exposed_s},
        {"context-parallel exchange",
         e->comm[FM_PLAN_COMM_CP].exposed_s - best->comm[FM_PLAN_COMM_CP].exposed_s},
        {"expert all-to-all",
         e->comm[FM_PLAN_COMM_EP].exposed_s - best->comm[FM_PLAN_COMM_EP].exposed_s},
        {"data-parallel communication",
         e->comm[FM_PLAN_COMM_DP].exposed_s + e->comm[FM_PLAN_COMM_DP_GATHER].exposed_s +
             e->comm[FM_PLAN_COMM_ZERO3].exposed_s - best->comm[FM_PLAN_COMM_DP].exposed_s -
             best->comm[FM_PLAN_COMM_DP_GATHER].exposed_s -
             best->comm[FM_PLAN_COMM_ZERO3].exposed_s},
        {"optimizer", e->t_optimizer - best->t_optimizer},
    };
    size_t worst = 0;
    for (size_t i = 1; i < sizeof(parts) / sizeof(parts[0]); i++) {
        if (parts[i].d > parts[worst].d)
            worst = i;
    }
    if (e == best) {
        snprintf(buf, size, "best");
        return;
    }
    char t[FM_FORMAT_SIZE];
    snprintf(buf, size, "+%s %s", fm_format_time(parts[worst].d, t), parts[worst].what);
}

/* One layout (c) at each ZeRO stage searched: counted, checked, timed and evaluated; its
 * fastest stage that fits is considered (the lowest of equals). ti, ai: c's tp and micro-batch
 * as the calibrated timings index them. */
static enum fm_status try_layout(struct fm_ctx *ctx, struct fm_plan_env *env,
                                 const struct fm_plan_cfg *c, bool search_zero,
                                 struct fm_plan_timings *timings, int ti, int ai,
                                 struct fm_plan_search *out)
{
    int lo = search_zero ? 0 : c->zero, hi = search_zero ? 3 : c->zero;
    struct fm_plan_eval e, fastest;
    bool any = false;
    for (int z = lo; z <= hi; z++) {
        if (search_zero && z >= 3 && c->pp > 1)
            continue;   /* a plan refuses ZeRO-3 with pipeline stages */
        struct fm_plan_cfg cz = *c;
        cz.zero = z;
        out->evaluated++;
        if (fm_plan_check(ctx, env, &cz))
            continue;
        if (timings) {
            enum fm_status st = fm_plan_calib_lookup(timings, &cz, ti, ai, env->vocab,
                                                     &env->timing);
            if (st)
                return st;
            if (!env->timing)
                continue;   /* this tp cannot be timed */
        }
        out->valid++;
        fm_plan_eval(env, &cz, &e);
        if (!e.fits)
            continue;
        out->fitting++;
        if (!any || e.step_s < fastest.step_s)
            fastest = e;
        any = true;
    }
    if (any)
        consider(out, &fastest);
    return FM_OK;
}

bool fm_plan_search_pp(const struct fm_llm_config *m, int pp, bool *balance)
{
    *balance = false;
    if (pp < 1 || pp > m->layers + 2)
        return false;
    if (m->layers % pp == 0)
        return true;
    if (pp >= 2 && (m->layers + 2) % pp == 0) {
        *balance = true;   /* the embedding and the head in a layer's slot each */
        return true;
    }
    /* DeepSeek-V3's own layout: ceil(layers / pp) on every stage but a shorter last */
    int64_t per = (m->layers + pp - 1) / pp;
    return m->arch == FM_LLM_DEEPSEEK_V3 && pp >= 2 && per * (pp - 1) < m->layers;
}

enum fm_status fm_plan_search_run(struct fm_ctx *ctx, const struct fm_plan_env *env0,
                                  const struct fm_plan_cfg *base, bool search_zero,
                                  struct fm_plan_timings *timings, struct fm_plan_search *out)
{
    memset(out, 0, sizeof(*out));
    out->zero_searched = search_zero;
    const struct fm_llm_config *m = env0->cfg;
    struct fm_plan_env env = *env0;
    static const int mbs[] = {1, 2, 4};
    static const enum fm_recompute rcs[] = {FM_RECOMPUTE_NONE, FM_RECOMPUTE_SELECTIVE,
                                            FM_RECOMPUTE_FULL};
    int max_tp = env.cluster->gpus_per_node < env.gpus ? env.cluster->gpus_per_node : env.gpus;
    for (int tp = 1, ti = 0; tp <= max_tp && (!timings || ti < FM_PLAN_SEARCH_TP);
         tp *= 2, ti++) {
        int64_t unit = 128 * (int64_t)tp;
        env.vocab = (m->vocab + unit - 1) / unit * unit;
        for (int pp = 1; pp <= env.gpus / tp && pp <= m->layers + 2; pp++) {
            bool balance;
            if (!fm_plan_search_pp(m, pp, &balance) || (env.gpus / tp) % pp)
                continue;
            for (int cp = 1; cp <= env.gpus / (tp * pp) && cp <= (timings ? 1 : 64); cp *= 2) {
                if (env.gpus % (tp * pp * cp))
                    continue;
                int dp = env.gpus / (tp * pp * cp);
                for (int ep = 1; ep <= dp && ep <= (m->experts > 0 ? m->experts : 1); ep *= 2) {
                    for (size_t a = 0; a < 3; a++) {
                        for (int v = 1; v <= 2; v++) {
                            for (size_t r = 0; r < 3; r++) {
                                for (int sp = 0; sp <= (tp > 1); sp++) {
                                    struct fm_plan_cfg c = *base;
                                    c.tp = tp;
                                    c.pp = pp;
                                    c.cp = cp;
                                    c.dp = dp;
                                    c.ep = ep;
                                    c.v = v;
                                    c.mb = mbs[a];
                                    c.recompute = rcs[r];
                                    c.sp = sp;
                                    c.balance = balance;
                                    if (c.gb % (c.mb * dp))
                                        continue;
                                    c.m = c.gb / (c.mb * dp);
                                    enum fm_status st = try_layout(ctx, &env, &c, search_zero,
                                                                   timings, ti, (int)a, out);
                                    if (st)
                                        return st;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    if (!out->n_best)
        return fm_error(ctx, FM_ERR_INVALID,
                        "no plan of %s on %d GPUs fits %s's memory at global batch %lld (%ld "
                        "plans valid of %ld tried%s); more GPUs or a smaller batch%s may",
                        m->name, env.gpus, env.dev->name, (long long)base->gb, out->valid,
                        out->evaluated, search_zero ? ", ZeRO 0 to 3" : "",
                        search_zero || base->zero >= 3 ? ""
                                                       : ", or ZeRO-3 (fm_plan_opts.zero)");
    for (int i = 0; i < out->n_best; i++)
        explain(&out->best[0], &out->best[i], out->why[i], sizeof(out->why[i]));
    return FM_OK;
}
