/* A plan of any model flopmeter counts (a built-in CNN, an ONNX file): data and pipeline
 * parallelism only, on the counted graph itself. The session counts one micro-batch's training
 * step and predicts each node's forward and backward on the device (predict.c, PALEO's sum of
 * compute and memory time); pipeline stages are contiguous runs of the topological order with
 * equal predicted time; what crosses a stage boundary is the tensors produced before it and read
 * after it. Memory per stage: the plan's model-state recipe (plan.c) on the stage's trainable
 * parameters, and the bytes its nodes save for backward times the micro-batches in flight.
 * Tensor, context and expert parallelism need a transformer's shape (an LLM config) and are
 * refused here by name; so are recomputation and interleaving, which this path does not model. */
#include "plan.h"

#include <string.h>

#define MAX_STAGES 512
/* a node-phase's time: the calibration's when one is given, else PALEO's sum */
#define T(pt) (o->calibration ? (pt).t_calibrated : (pt).t_paleo)

enum fm_status fm_plan_graph_eval(struct fm_plan *p, struct fm_plan_cfg *c)
{
    struct fm_ctx *ctx = p->ctx;
    const struct fm_plan_opts *o = &p->opts;
    if (c->tp > 1 || c->cp > 1 || c->ep > 1 || c->sp)
        return fm_error(ctx, FM_ERR_INVALID,
                        "%s is not a language model's config: fm_plan_opts.tp, fm_plan_opts.cp, "
                        "fm_plan_opts.ep and fm_plan_opts.sequence_parallel need one (a built-in "
                        "LLM or fm_plan_opts.config_path); this model takes data and pipeline "
                        "parallelism", o->model);
    if (c->recompute != FM_RECOMPUTE_NONE || c->v > 1)
        return fm_error(ctx, FM_ERR_INVALID,
                        "recompute and interleave are modelled for language models only; %s "
                        "takes neither", o->model);
    if (c->zero >= 3 && c->pp > 1)
        return fm_error(ctx, FM_ERR_INVALID, "ZeRO-3 / FSDP with pp = %d is not supported",
                        c->pp);
    struct fm_session_opts so;
    fm_session_opts_init(&so, FM_TASK_PREDICT);
    so.model = o->model;
    so.load.zoo.batch = c->mb;
    so.load.batch_given = true;
    so.count.mode = FM_MODE_TRAIN;
    so.count.optimizer = FM_OPTIM_ADAM;
    so.device = p->dev->name;
    so.devices_file = o->devices_file;
    so.precision = o->precision;
    so.precision_given = true;
    so.predict.ppp_compute = o->ppp_compute;
    so.predict.ppp_memory = o->ppp_memory;
    so.predict.ppp_comm = o->ppp_comm;
    so.predict.calibration = o->calibration;
    so.force_calibration = o->force_calibration;
    struct fm_session *s = NULL;
    enum fm_status st = fm_session_run(ctx, &so, &s);
    if (st)
        return st;
    const struct fm_graph *g = fm_session_graph(s);
    const struct fm_counts *k = fm_session_counts(s);
    const struct fm_prediction *pr = fm_session_prediction(s);
    const fm_nid *order = fm_graph_topo_order(g);
    size_t n = k->n_nodes;
    if (c->pp > (int)n || c->pp > MAX_STAGES) {
        st = fm_error(ctx, FM_ERR_INVALID, "fm_plan_opts.pp = %d is more than %s's %zu layers",
                      c->pp, o->model, n);
        goto out;
    }
    snprintf(p->model.name, sizeof(p->model.name), "%s", fm_graph_name(g));
    /* stages of equal predicted time */
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        fm_nid id = order[i];
        total += T(pr->nodes[id][FM_PHASE_FWD]) + T(pr->nodes[id][FM_PHASE_BWD_DATA]) +
                 T(pr->nodes[id][FM_PHASE_BWD_WEIGHT]);
    }
    int *stage_of = fm_alloc(ctx, sizeof(int) * (n ? n : 1));
    if (!stage_of) {
        st = FM_ERR_NOMEM;
        goto out;
    }
    double f[MAX_STAGES] = {0}, b[MAX_STAGES] = {0}, par[MAX_STAGES] = {0};
    double saved[MAX_STAGES] = {0}, cross[MAX_STAGES] = {0};
    double acc = 0;
    int cur = 0;
    for (size_t i = 0; i < n; i++) {
        fm_nid id = order[i];
        double t = T(pr->nodes[id][FM_PHASE_FWD]) +
                   T(pr->nodes[id][FM_PHASE_BWD_DATA]) +
                   T(pr->nodes[id][FM_PHASE_BWD_WEIGHT]);
        /* the next stage starts once this one has its share, or when only as many nodes are
         * left as stages after this one */
        if (cur < c->pp - 1 && i > 0 &&
            (acc >= total * (cur + 1) / c->pp || n - i <= (size_t)(c->pp - 1 - cur)))
            cur++;
        acc += t;
        stage_of[id] = cur;
        f[cur] += T(pr->nodes[id][FM_PHASE_FWD]);
        b[cur] += T(pr->nodes[id][FM_PHASE_BWD_DATA]) +
                  T(pr->nodes[id][FM_PHASE_BWD_WEIGHT]);
        par[cur] += (double)k->nodes[id].trainable_params;
        saved[cur] += (double)k->nodes[id].saved_bytes;
    }
    /* the count's activation total also holds tensors no single node owns (shared inputs):
     * spread it over the stages in proportion to what their nodes save */
    double saved_sum = 0;
    for (int s2 = 0; s2 < c->pp; s2++)
        saved_sum += saved[s2];
    if (saved_sum > 0) {
        for (int s2 = 0; s2 < c->pp; s2++)
            saved[s2] *= (double)k->activation_bytes / saved_sum;
    }
    /* what crosses each boundary: a tensor made in one stage and read in a later one, once */
    for (size_t i = 0; i < n; i++) {
        fm_nid id = order[i];
        const struct fm_node *nd = fm_graph_node(g, id);
        for (int j = 0; j < nd->n_in; j++) {
            if (nd->in[j] == FM_NONE)
                continue;
            const struct fm_tensor *t = fm_graph_tensor(g, nd->in[j]);
            if (t->producer == FM_NONE || stage_of[t->producer] >= stage_of[id])
                continue;
            uint64_t numel = 0;
            if (fm_shape_numel(&t->shape, &numel))
                continue;
            double bytes = (double)numel * (double)fm_dtype_size(t->dtype);
            for (int s2 = stage_of[t->producer]; s2 < stage_of[id]; s2++) {
                if (bytes > cross[s2])
                    cross[s2] = bytes;   /* the largest such tensor: a lower bound */
            }
        }
    }
    fm_dealloc(ctx, stage_of);

    struct fm_plan_eval *e = &p->eval;
    memset(e, 0, sizeof(*e));
    e->cfg = *c;
    struct fm_group_link dp_l, pp_l;
    fm_group_link(&p->cluster, c->dp, 1, o->ppp_comm, &dp_l);
    fm_group_link(&p->cluster, 2, c->dp, o->ppp_comm, &pp_l);
    double best = -1, sb = 0, sf = 0, spp = 0, mem_best = -1, pp_bytes = 0;
    for (int s2 = 0; s2 < c->pp; s2++) {
        double in_b = s2 > 0 ? cross[s2 - 1] : 0, out_b = s2 < c->pp - 1 ? cross[s2] : 0;
        double t_pp = fm_coll_time(FM_COLL_P2P, in_b > out_b ? in_b : out_b, 2, pp_l.busbw,
                                   pp_l.lat) * (c->pp > 1 ? 2.0 : 0.0);
        double t = f[s2] + b[s2] + t_pp;
        if (t > best) {
            best = t;
            sf = f[s2];
            sb = b[s2];
            spp = t_pp;
            pp_bytes = 2.0 * (in_b > out_b ? in_b : out_b);
        }
        double w, gr, op;
        fm_plan_state_bytes(par[s2], p->env.grad_bytes, c->zero, c->dp, &w, &gr, &op);
        double inflight = (double)(c->m < c->pp - s2 ? c->m : c->pp - s2);
        double act = saved[s2] * inflight;
        double buf = c->pp > 1 ? 2.0 * (in_b + out_b) : 0.0;
        double tot = w + gr + op + act + buf;
        if (tot > mem_best) {
            mem_best = tot;
            e->mem_weights = w;
            e->mem_grads = gr;
            e->mem_optimizer = op;
            e->mem_activations = act;
            e->mem_buffers = buf;
            e->mem_total = tot;
            e->params_per_gpu = par[s2];
            e->in_flight = inflight;
        }
    }
    e->fits = e->mem_total <= p->dev->mem_bytes;
    double mcount = (double)c->m, params = 0;
    for (int s2 = 0; s2 < c->pp; s2++)
        params = par[s2] > params ? par[s2] : params;
    enum fm_coll coll = c->zero >= 1 ? FM_COLL_REDUCESCATTER : FM_COLL_ALLREDUCE;
    double t_dp = fm_coll_time(coll, params * p->env.grad_bytes, c->dp, dp_l.busbw, dp_l.lat);
    double exp_dp = p->env.overlap ? (t_dp > sb ? t_dp - sb : 0) : t_dp;
    double t_ag = c->zero >= 1 ? fm_coll_time(FM_COLL_ALLGATHER, params * 2, c->dp, dp_l.busbw,
                                              dp_l.lat)
                               : 0;
    double exp_ag = p->env.overlap ? (t_ag > sf ? t_ag - sf : 0) : t_ag;
    e->comm[FM_PLAN_COMM_PP] = (struct fm_plan_comm){"pipeline parallel", FM_COLL_P2P, c->pp,
                                                     pp_l.inter, mcount * pp_bytes,
                                                     mcount * spp, mcount * spp};
    e->comm[FM_PLAN_COMM_DP] = (struct fm_plan_comm){"data parallel gradients", coll, c->dp,
                                                     dp_l.inter, params * p->env.grad_bytes,
                                                     t_dp, exp_dp};
    e->comm[FM_PLAN_COMM_DP_GATHER] = (struct fm_plan_comm){"data parallel weights",
                                                            FM_COLL_ALLGATHER, c->dp, dp_l.inter,
                                                            c->zero >= 1 ? params * 2 : 0, t_ag,
                                                            exp_ag};
    e->t_compute = mcount * (sf + sb);
    e->t_bubble = (double)(c->pp - 1) * best;
    e->t_optimizer = params / (c->zero >= 1 ? c->dp : 1) * 30.0 /
                     (p->dev->mem_bw * o->ppp_memory);
    for (int x = 0; x < FM_PLAN_COMM_COUNT; x++)
        e->t_comm_exposed += e->comm[x].exposed_s;
    e->step_s = e->t_compute + e->t_comm_exposed + e->t_bubble + e->t_optimizer;
    double step_flops = (double)fm_work_flops(&k->total[FM_PHASE_FWD]) +
                        (double)fm_work_flops(&k->total[FM_PHASE_BWD_DATA]) +
                        (double)fm_work_flops(&k->total[FM_PHASE_BWD_WEIGHT]);
    e->model_flops = step_flops / (double)c->mb * (double)c->gb;
    e->hardware_flops = e->model_flops;
    e->mfu = e->hfu = e->model_flops / (e->step_s * p->env.gpus * p->peak);
    e->tokens_per_s = (double)c->gb / e->step_s;   /* samples: a CNN has no tokens */
    p->generic = true;
    p->calibrated = o->calibration != NULL;
out:
    fm_session_free(s);
    return st;
}
