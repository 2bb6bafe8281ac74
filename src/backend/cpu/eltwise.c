/* Activations on oneDNN eltwise primitives, each output in its input's layout: ReLU, LeakyReLU,
 * Clip (ReLU6), Sigmoid, Tanh, SiLU (swish with alpha 1), GELU (erf or tanh form), Hardswish,
 * and Hardsigmoid (oneDNN 2.6 has none: a linear primitive then an in-place clip forward, and a
 * small loop backward). Not here: Softmax, PReLU. */
#include "cpu.h"

struct act_priv {
    dnnl_primitive_desc_t fwd;
    dnnl_alg_kind_t alg;
    float alpha, beta;
};

/* The oneDNN algorithm and parameters of an activation node. */
static bool act_alg(const struct fm_node *n, dnnl_alg_kind_t *alg, float *alpha, float *beta)
{
    const struct fm_attrs *a = &n->attrs;
    *alpha = 0.0f;
    *beta = 0.0f;
    switch (n->op) {
    case FM_OP_RELU:
        *alg = dnnl_eltwise_relu;
        return true;
    case FM_OP_LEAKY_RELU:
        *alg = dnnl_eltwise_relu;
        *alpha = (float)a->alpha;
        return true;
    case FM_OP_CLIP:
        /* clip_v2 passes the gradient where lo < x < hi, as torch.nn.Hardtanh does */
        *alg = dnnl_eltwise_clip_v2;
        *alpha = (float)a->lo;
        *beta = (float)a->hi;
        return true;
    case FM_OP_SIGMOID:
        *alg = dnnl_eltwise_logistic;
        return true;
    case FM_OP_TANH:
        *alg = dnnl_eltwise_tanh;
        return true;
    case FM_OP_SILU:
        *alg = dnnl_eltwise_swish;   /* x * sigmoid(alpha * x) */
        *alpha = 1.0f;
        return true;
    case FM_OP_GELU:
        *alg = (a->flags & FM_ATTR_GELU_TANH) ? dnnl_eltwise_gelu_tanh : dnnl_eltwise_gelu_erf;
        return true;
    case FM_OP_HARDSWISH:
        *alg = dnnl_eltwise_hardswish;   /* x * relu6(x + 3) / 6 */
        return true;
    case FM_OP_HARDSIGMOID:
        *alg = dnnl_eltwise_linear;      /* alpha * x + beta, then clipped to [0, 1] */
        *alpha = (float)a->alpha;
        *beta = (float)a->beta;
        return true;
    default:
        return false;
    }
}

enum fm_status fm_cpu_act_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                const struct fm_node *n)
{
    (void)g;
    dnnl_alg_kind_t alg;
    float alpha, beta;
    if (!act_alg(n, &alg, &alpha, &beta))
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s': activation %s is not supported",
                        n->name, n->op_name);
    if (n->op == FM_OP_CLIP && n->n_in > 1)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "layer '%s' (Clip): bounds given as tensors are not supported by the CPU "
                        "backend (only as attributes)",
                        n->name);
    if (n->op == FM_OP_CLIP && !(n->attrs.lo < n->attrs.hi))
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (Clip): bounds [%g, %g] are empty",
                        n->name, n->attrs.lo, n->attrs.hi);
    return FM_OK;
}

enum fm_status fm_cpu_act_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct act_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    act_alg(n, &p->alg, &p->alpha, &p->beta);
    const dnnl_memory_desc_t *xmd = &s->t[n->in[0]].md;
    dnnl_eltwise_desc_t d;
    enum fm_status st = FM_OK;
    dnnl_prop_kind_t prop = s->train ? dnnl_forward_training : dnnl_forward_inference;
    FM_DNNL_TRY(s, dnnl_eltwise_forward_desc_init(&d, prop, p->alg, xmd, p->alpha, p->beta));
    st = fm_cpu_pd(s, id, &d, NULL, &p->fwd);
    if (!st)
        st = fm_cpu_place(s, n->out[0], xmd);
    if (st)
        goto out;
    dnnl_memory_t y = s->t[n->out[0]].val_mem;
    {
        struct fm_cpu_arg args[2] = {{DNNL_ARG_SRC, s->t[n->in[0]].val_mem}, {DNNL_ARG_DST, y}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, p->fwd, args, 2);
    }
    if (!st && n->op == FM_OP_HARDSIGMOID) {
        dnnl_primitive_desc_t clip;
        FM_DNNL_TRY(s, dnnl_eltwise_forward_desc_init(&d, prop, dnnl_eltwise_clip_v2, xmd, 0.0f,
                                                      1.0f));
        st = fm_cpu_pd(s, id, &d, NULL, &clip);
        struct fm_cpu_arg args[2] = {{DNNL_ARG_SRC, y}, {DNNL_ARG_DST, y}};
        if (!st)
            st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, clip, args, 2);
    }
out:
    return st;
}

struct hsig_arg {
    size_t n;                    /* elements of the (padded) buffers */
    float alpha, beta;
};

/* d/dx clip(alpha*x + beta, 0, 1) = alpha inside (0, 1), 0 outside (PyTorch's
 * hardsigmoid_backward uses the open interval -3 < x < 3 for alpha 1/6, beta 1/2). Memories:
 * x, dy, dx, all in x's layout; zero padding stays zero because dy is zero there. */
static enum fm_status hardsigmoid_bwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct hsig_arg *h = arg;
    const float *x = fm_cpu_item_f32(it, 0), *dy = fm_cpu_item_f32(it, 1);
    float *dx = fm_cpu_item_f32(it, 2);
    for (size_t i = 0; i < h->n; i++) {
        float u = h->alpha * x[i] + h->beta;
        dx[i] = (u > 0.0f && u < 1.0f) ? dy[i] * h->alpha : 0.0f;
    }
    return FM_OK;
}

/* Whether md is a blocked layout whose channels are padded to the block (184 channels in
 * blocks of 16): oneDNN 2.6 runs some backward activations (Hardswish's) over such layouts in
 * its reference code, 50 times slower than over dense memory. */
static bool padded(const dnnl_memory_desc_t *md)
{
    for (int i = 0; i < md->ndims; i++) {
        if (md->padded_dims[i] != md->dims[i])
            return true;
    }
    return false;
}

/* The backward of an activation over a padded layout as one over the whole buffer seen as a
 * dense vector: elementwise, so the layout does not matter; the padding of dy is zero, so
 * that of dx is too. */
static enum fm_status bwd_flat(struct fm_cpu *s, fm_nid id, const struct act_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const dnnl_memory_desc_t *xmd = &s->t[n->in[0]].md;
    int64_t len = (int64_t)(s->t[n->in[0]].size / sizeof(float));
    dnnl_memory_desc_t flat;
    fm_cpu_md_plain(&flat, 1, &len);
    dnnl_eltwise_desc_t fd, d;
    dnnl_primitive_desc_t hint, pd;
    dnnl_memory_t m_x, m_dd, m_dx, v_dd, v_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_eltwise_forward_desc_init(&fd, dnnl_forward_training, p->alg, &flat,
                                                  p->alpha, p->beta));
    FM_DNNL_TRY(s, dnnl_eltwise_backward_desc_init(&d, p->alg, &flat, &flat, p->alpha, p->beta));
    st = fm_cpu_pd(s, id, &fd, NULL, &hint);
    if (!st)
        st = fm_cpu_pd(s, id, &d, hint, &pd);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true, xmd, &m_dd);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0], xmd, &sk, &m_dx);
    if (!st)
        st = fm_cpu_mem_view(s, s->t[n->in[0]].val_mem, &flat, &m_x);
    if (!st)
        st = fm_cpu_mem_view(s, m_dd, &flat, &v_dd);
    if (!st)
        st = fm_cpu_mem_view(s, m_dx, &flat, &v_dx);
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_SRC, m_x}, {DNNL_ARG_DIFF_DST, v_dd},
                                     {DNNL_ARG_DIFF_SRC, v_dx}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_BWD_DATA, pd, args, 3);
    }
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
out:
    return st;
}

enum fm_status fm_cpu_act_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct act_priv *p = s->nodes[id].priv;
    const dnnl_memory_desc_t *xmd = &s->t[n->in[0]].md;
    dnnl_memory_t m_dd, m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = FM_OK;
    if (n->op == FM_OP_HARDSIGMOID) {
        struct hsig_arg *h = fm_cpu_buf(s, sizeof(*h));
        if (!h)
            return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true, xmd, &m_dd);
        if (!st)
            st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0], xmd, &sk, &m_dx);
        if (st)
            return st;
        h->n = s->t[n->in[0]].size / sizeof(float);
        h->alpha = p->alpha;
        h->beta = p->beta;
        dnnl_memory_t mems[3] = {s->t[n->in[0]].val_mem, m_dd, m_dx};
        st = fm_cpu_add_fn(s, id, FM_PHASE_BWD_DATA, hardsigmoid_bwd, h, mems, 3);
        if (st)
            return st;
        return fm_cpu_sink_end(s, &sk);
    }
    if (padded(xmd))
        return bwd_flat(s, id, p);
    dnnl_eltwise_desc_t d;
    dnnl_primitive_desc_t pd;
    FM_DNNL_TRY(s, dnnl_eltwise_backward_desc_init(&d, p->alg, xmd, xmd, p->alpha, p->beta));
    st = fm_cpu_pd(s, id, &d, p->fwd, &pd);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true,
                          fm_cpu_pd_md(pd, DNNL_ARG_DIFF_DST), &m_dd);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0],
                               fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SRC), &sk, &m_dx);
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_SRC, s->t[n->in[0]].val_mem},
                                     {DNNL_ARG_DIFF_DST, m_dd}, {DNNL_ARG_DIFF_SRC, m_dx}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_BWD_DATA, pd, args, 3);
    }
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
out:
    return st;
}
