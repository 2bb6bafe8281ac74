/* BatchNorm on oneDNN. Training: batch statistics from the primitive, then PyTorch's update of
 * the running statistics (momentum 0.1, unbiased variance) in a small loop; backward gives the
 * input gradient and the scale and shift gradients in one primitive (so its time is reported
 * as bwd_data, not split). Inference, or FM_ATTR_INFER_BN: the running statistics (global
 * stats). Not here: fusing the following ReLU, other momenta (ONNX's attribute is not kept). */
#include "cpu.h"

#include <string.h>

struct bn_priv {
    dnnl_primitive_desc_t fwd;
    dnnl_memory_desc_t xmd;      /* the layout BatchNorm runs on (its input's, or a reorder's) */
    dnnl_memory_t x;             /* its input in that layout */
    unsigned flags;
    bool batch_stats;
    dnnl_memory_t mean, var;     /* batch statistics (training) or the running ones */
    dnnl_memory_t scale, shift;
};

/* PyTorch's BatchNorm momentum (torch.nn.BatchNorm2d default). */
#define BN_MOMENTUM 0.1

struct running_arg {
    int64_t channels;
    double n;                    /* elements per channel */
};

/* running = (1 - m) * running + m * batch, with the unbiased variance var * n / (n - 1)
 * (torch.nn.functional.batch_norm in training mode). Memories: batch mean, batch variance
 * (biased: divided by n), running mean, running variance. */
static enum fm_status update_running(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct running_arg *r = arg;
    const float *mean = fm_cpu_item_f32(it, 0), *var = fm_cpu_item_f32(it, 1);
    float *run_mean = fm_cpu_item_f32(it, 2), *run_var = fm_cpu_item_f32(it, 3);
    double unbias = r->n > 1 ? r->n / (r->n - 1) : 1.0;
    for (int64_t c = 0; c < r->channels; c++) {
        run_mean[c] = (float)((1.0 - BN_MOMENTUM) * run_mean[c] + BN_MOMENTUM * mean[c]);
        run_var[c] = (float)((1.0 - BN_MOMENTUM) * run_var[c] + BN_MOMENTUM * var[c] * unbias);
    }
    return FM_OK;
}

enum fm_status fm_cpu_bn_check(struct fm_ctx *ctx, const struct fm_graph *g,
                               const struct fm_node *n)
{
    const struct fm_tensor *x = fm_graph_tensor(g, n->in[0]);
    if (x->shape.rank < 2 || x->shape.rank > 5)
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (BatchNorm): rank %d input",
                        n->name, x->shape.rank);
    if (n->n_in < 5 || n->in[3] == FM_NONE || n->in[4] == FM_NONE)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "layer '%s' (BatchNorm): running mean and variance are required",
                        n->name);
    return FM_OK;
}

static fm_tid opt_in(const struct fm_node *n, int i)
{
    return i < n->n_in ? n->in[i] : FM_NONE;
}

enum fm_status fm_cpu_bn_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const struct fm_tensor *x = fm_graph_tensor(s->g, n->in[0]);
    fm_tid gamma = opt_in(n, 1), beta = opt_in(n, 2);
    struct bn_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    p->batch_stats = s->train && !(n->attrs.flags & FM_ATTR_INFER_BN);
    p->flags = (gamma != FM_NONE ? dnnl_use_scale : 0u) | (beta != FM_NONE ? dnnl_use_shift : 0u) |
               (p->batch_stats ? 0u : dnnl_use_global_stats);
    p->xmd = s->t[n->in[0]].md;
    int64_t c = x->shape.dims[1];
    dnnl_memory_desc_t cmd;
    fm_cpu_md_plain(&cmd, 1, &c);
    dnnl_batch_normalization_desc_t d;
    enum fm_status st = FM_OK;
    p->x = s->t[n->in[0]].val_mem;
    FM_DNNL_TRY(s, dnnl_batch_normalization_forward_desc_init(
                       &d, s->train ? dnnl_forward_training : dnnl_forward_inference, &p->xmd,
                       (float)n->attrs.eps, p->flags));
    st = fm_cpu_pd(s, id, &d, NULL, &p->fwd);
    /* A layout oneDNN has no JIT kernel for (a grouped convolution's aBcd4b output in ResNeXt:
     * 35 ms where 0.35 ms was due) runs on a channel-blocked copy: one reorder per phase costs
     * less than the reference code. */
    int rank = x->shape.rank;
    if (!st && (rank == 4 || rank == 5) && fm_cpu_pd_is_slow(p->fwd)) {
        dnnl_memory_desc_t want;
        dnnl_dims_t dims = {0};
        memcpy(dims, x->shape.dims, sizeof(int64_t) * (size_t)rank);
        FM_DNNL_TRY(s, dnnl_memory_desc_init_by_tag(&want, rank, dims, dnnl_f32,
                                                   rank == 4 ? dnnl_aBcd16b : dnnl_aBcde16b));
        FM_DNNL_TRY(s, dnnl_batch_normalization_forward_desc_init(
                           &d, s->train ? dnnl_forward_training : dnnl_forward_inference, &want,
                           (float)n->attrs.eps, p->flags));
        dnnl_primitive_desc_t pd = NULL;
        st = fm_cpu_pd(s, id, &d, NULL, &pd);
        if (!st && !fm_cpu_pd_is_slow(pd)) {
            p->fwd = pd;
            p->xmd = want;
            st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[0], false, &want, &p->x);
        }
    }
    if (!st && gamma != FM_NONE)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, gamma, false, &cmd, &p->scale);
    if (!st && beta != FM_NONE)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, beta, false, &cmd, &p->shift);
    /* the running statistics: read in inference, updated in training */
    dnnl_memory_t run_mean = NULL, run_var = NULL;
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[3], false, &cmd, &run_mean);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[4], false, &cmd, &run_var);
    if (!st && p->batch_stats) {
        st = fm_cpu_mem_new(s, &cmd, &p->mean);
        if (!st)
            st = fm_cpu_mem_new(s, &cmd, &p->var);
    } else {
        p->mean = run_mean;
        p->var = run_var;
    }
    if (!st)
        st = fm_cpu_place(s, n->out[0], fm_cpu_pd_md(p->fwd, DNNL_ARG_DST));
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[7] = {{DNNL_ARG_SRC, p->x},
                                     {DNNL_ARG_DST, s->t[n->out[0]].val_mem},
                                     {DNNL_ARG_MEAN, p->mean},
                                     {DNNL_ARG_VARIANCE, p->var}};
        int na = 4;
        if (p->scale)
            args[na++] = (struct fm_cpu_arg){DNNL_ARG_SCALE, p->scale};
        if (p->shift)
            args[na++] = (struct fm_cpu_arg){DNNL_ARG_SHIFT, p->shift};
        st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, p->fwd, args, na);
    }
    if (!st && p->batch_stats) {
        struct running_arg *r = fm_cpu_buf(s, sizeof(*r));
        if (!r) {
            st = fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
            goto out;
        }
        r->channels = c;
        r->n = (double)s->t[n->in[0]].numel / (double)c;
        dnnl_memory_t mems[4] = {p->mean, p->var, run_mean, run_var};
        st = fm_cpu_add_fn(s, id, FM_PHASE_FWD, update_running, r, mems, 4);
    }
out:
    return st;
}

/* The backward primitive of a normalization (BatchNorm's, LayerNorm's: the same arguments) and
 * the ends of its three gradient sinks (input, scale, shift). */
enum fm_status fm_cpu_norm_bwd_add(struct fm_cpu *s, fm_nid id, dnnl_primitive_desc_t pd,
                                   const struct fm_cpu_norm_bwd *b, struct fm_cpu_sink *sinks[3])
{
    struct fm_cpu_arg args[9] = {{DNNL_ARG_SRC, b->x},
                                 {DNNL_ARG_MEAN, b->mean},
                                 {DNNL_ARG_VARIANCE, b->var},
                                 {DNNL_ARG_DIFF_DST, b->dy},
                                 {DNNL_ARG_DIFF_SRC, b->dx}};
    int na = 5;
    if (b->scale)
        args[na++] = (struct fm_cpu_arg){DNNL_ARG_SCALE, b->scale};
    if (b->shift)
        args[na++] = (struct fm_cpu_arg){DNNL_ARG_SHIFT, b->shift};
    if (b->dscale)
        args[na++] = (struct fm_cpu_arg){DNNL_ARG_DIFF_SCALE, b->dscale};
    if (b->dshift)
        args[na++] = (struct fm_cpu_arg){DNNL_ARG_DIFF_SHIFT, b->dshift};
    enum fm_status st = fm_cpu_add_prim(s, id, FM_PHASE_BWD_DATA, pd, args, na);
    for (int k = 0; k < 3 && !st; k++)
        st = fm_cpu_sink_end(s, sinks[k]);
    return st;
}

enum fm_status fm_cpu_bn_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct bn_priv *p = s->nodes[id].priv;
    fm_tid gamma = opt_in(n, 1), beta = opt_in(n, 2);
    bool want_scale = fm_cpu_wants_grad(s, gamma), want_shift = fm_cpu_wants_grad(s, beta);
    bool weights = want_scale || want_shift;
    const dnnl_memory_desc_t *xmd = &p->xmd;
    dnnl_batch_normalization_desc_t d;
    dnnl_primitive_desc_t pd;
    dnnl_memory_t m_dd, m_dx, m_ds = NULL, m_dh = NULL;
    struct fm_cpu_sink skx, sks = {id, FM_PHASE_BWD_DATA, FM_NONE, NULL}, skh = sks;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_batch_normalization_backward_desc_init(
                       &d, weights ? dnnl_backward : dnnl_backward_data, xmd, xmd,
                       (float)n->attrs.eps, p->flags));
    st = fm_cpu_pd(s, id, &d, p->fwd, &pd);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true,
                          fm_cpu_pd_md(pd, DNNL_ARG_DIFF_DST), &m_dd);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0],
                               fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SRC), &skx, &m_dx);
    /* oneDNN always writes the input gradient; with no taker it goes to scratch */
    if (!st && !m_dx)
        st = fm_cpu_mem_scratch(s, fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SRC), &m_dx);
    if (!st && weights && p->scale) {
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, gamma,
                               fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SCALE), &sks, &m_ds);
        if (!st && !m_ds)
            st = fm_cpu_mem_scratch(s, fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SCALE), &m_ds);
    }
    if (!st && weights && p->shift) {
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, beta,
                               fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SHIFT), &skh, &m_dh);
        if (!st && !m_dh)
            st = fm_cpu_mem_scratch(s, fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SHIFT), &m_dh);
    }
    if (st)
        goto out;
    {
        const struct fm_cpu_norm_bwd b = {p->x, p->mean, p->var, p->scale,
                                          p->shift, m_dd, m_dx, m_ds, m_dh};
        st = fm_cpu_norm_bwd_add(s, id, pd, &b, (struct fm_cpu_sink *[]){&skx, &sks, &skh});
    }
out:
    return st;
}
