/* Convolution on oneDNN: 2-D, grouped and depthwise (weights seen as (g, Cout/g, Cin/g, kh, kw)),
 * strided, dilated, with or without bias; forward, backward data and backward weights as three
 * primitives, every layout left to oneDNN ("any") and reorders inserted only where a
 * neighbour chose differently. Not here: 1-D and 3-D convolutions, transposed convolutions. */
#include "cpu.h"

struct conv_priv {
    dnnl_primitive_desc_t fwd;
    dnnl_dims_t strides, dil, pl, pr;
    int64_t wdims[5];
    int wrank;
};

enum fm_status fm_cpu_conv_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                 const struct fm_node *n)
{
    const struct fm_tensor *x = fm_graph_tensor(g, n->in[0]);
    if (x->shape.rank != 4)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "layer '%s' (Conv): only 2-D convolutions (NCHW input) run on the CPU "
                        "backend, this input has rank %d",
                        n->name, x->shape.rank);
    return FM_OK;
}

/* Forward (training or inference) and, from it, the geometry the backward reuses. */
enum fm_status fm_cpu_conv_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const struct fm_tensor *x = fm_graph_tensor(s->g, n->in[0]);
    const struct fm_tensor *w = fm_graph_tensor(s->g, n->in[1]);
    const struct fm_tensor *y = fm_graph_tensor(s->g, n->out[0]);
    fm_tid bias = n->n_in > 2 ? n->in[2] : FM_NONE;
    const struct fm_attrs *a = &n->attrs;
    struct conv_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    int64_t g = a->groups;
    for (int i = 0; i < 2; i++) {
        p->strides[i] = a->stride[i];
        p->dil[i] = a->dilation[i] - 1;   /* oneDNN counts the gaps: 0 = dense */
        p->pl[i] = a->pad[i];
        p->pr[i] = a->pad[i + 2];
    }
    if (g == 1) {
        p->wrank = 4;
        for (int i = 0; i < 4; i++)
            p->wdims[i] = w->shape.dims[i];
    } else {
        p->wrank = 5;
        p->wdims[0] = g;
        p->wdims[1] = w->shape.dims[0] / g;
        for (int i = 1; i < 4; i++)
            p->wdims[i + 1] = w->shape.dims[i];
    }
    dnnl_memory_desc_t src, wei, bmd, dst;
    int64_t cout = w->shape.dims[0];
    fm_cpu_md_any(&src, 4, x->shape.dims);
    fm_cpu_md_any(&wei, p->wrank, p->wdims);
    fm_cpu_md_plain(&bmd, 1, &cout);
    fm_cpu_md_any(&dst, 4, y->shape.dims);
    dnnl_convolution_desc_t cd;
    enum fm_status st = FM_OK;
    dnnl_memory_t m_src, m_wei, m_bias = NULL;
    FM_DNNL_TRY(s, dnnl_dilated_convolution_forward_desc_init(
                       &cd, s->train ? dnnl_forward_training : dnnl_forward_inference,
                       dnnl_convolution_direct, &src, &wei, bias != FM_NONE ? &bmd : NULL, &dst,
                       p->strides, p->dil, p->pl, p->pr));
    st = fm_cpu_pd(s, id, &cd, NULL, &p->fwd);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[0], false, fm_cpu_pd_md(p->fwd, DNNL_ARG_SRC),
                          &m_src);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[1], false,
                          fm_cpu_pd_md(p->fwd, DNNL_ARG_WEIGHTS), &m_wei);
    if (!st && bias != FM_NONE)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, bias, false, fm_cpu_pd_md(p->fwd, DNNL_ARG_BIAS),
                          &m_bias);
    if (!st)
        st = fm_cpu_place(s, n->out[0], fm_cpu_pd_md(p->fwd, DNNL_ARG_DST));
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[4] = {{DNNL_ARG_SRC, m_src}, {DNNL_ARG_WEIGHTS, m_wei},
                                     {DNNL_ARG_DST, s->t[n->out[0]].val_mem},
                                     {DNNL_ARG_BIAS, m_bias}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, p->fwd, args, bias != FM_NONE ? 4 : 3);
    }
out:
    return st;
}

static enum fm_status conv_bwd_data(struct fm_cpu *s, fm_nid id, struct conv_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const struct fm_tensor *x = fm_graph_tensor(s->g, n->in[0]);
    const struct fm_tensor *y = fm_graph_tensor(s->g, n->out[0]);
    dnnl_memory_desc_t dsrc, wei, ddst;
    fm_cpu_md_any(&dsrc, 4, x->shape.dims);
    fm_cpu_md_any(&wei, p->wrank, p->wdims);
    fm_cpu_md_any(&ddst, 4, y->shape.dims);
    dnnl_convolution_desc_t cd;
    dnnl_primitive_desc_t pd;
    dnnl_memory_t m_wei, m_dd, m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_dilated_convolution_backward_data_desc_init(
                       &cd, dnnl_convolution_direct, &dsrc, &wei, &ddst, p->strides, p->dil,
                       p->pl, p->pr));
    st = fm_cpu_pd(s, id, &cd, p->fwd, &pd);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->in[1], false,
                          fm_cpu_pd_md(pd, DNNL_ARG_WEIGHTS), &m_wei);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true,
                          fm_cpu_pd_md(pd, DNNL_ARG_DIFF_DST), &m_dd);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0],
                               fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SRC), &sk, &m_dx);
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_DIFF_DST, m_dd}, {DNNL_ARG_WEIGHTS, m_wei},
                                     {DNNL_ARG_DIFF_SRC, m_dx}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_BWD_DATA, pd, args, 3);
    }
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
out:
    return st;
}

static enum fm_status conv_bwd_weights(struct fm_cpu *s, fm_nid id, struct conv_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const struct fm_tensor *x = fm_graph_tensor(s->g, n->in[0]);
    const struct fm_tensor *y = fm_graph_tensor(s->g, n->out[0]);
    fm_tid bias = n->n_in > 2 ? n->in[2] : FM_NONE;
    int64_t cout = fm_graph_tensor(s->g, n->in[1])->shape.dims[0];
    dnnl_memory_desc_t src, dwei, dbias, ddst;
    fm_cpu_md_any(&src, 4, x->shape.dims);
    fm_cpu_md_any(&dwei, p->wrank, p->wdims);
    fm_cpu_md_plain(&dbias, 1, &cout);
    fm_cpu_md_any(&ddst, 4, y->shape.dims);
    bool want_bias = fm_cpu_wants_grad(s, bias);
    dnnl_convolution_desc_t cd;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_dilated_convolution_backward_weights_desc_init(
                       &cd, dnnl_convolution_direct, &src, &dwei, want_bias ? &dbias : NULL,
                       &ddst, p->strides, p->dil, p->pl, p->pr));
    st = fm_cpu_bwd_weights(s, id, &cd, p->fwd, bias, want_bias);
out:
    return st;
}

enum fm_status fm_cpu_conv_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct conv_priv *p = s->nodes[id].priv;
    fm_tid bias = n->n_in > 2 ? n->in[2] : FM_NONE;
    enum fm_status st = FM_OK;
    if (fm_cpu_wants_grad(s, n->in[0]))
        st = conv_bwd_data(s, id, p);
    if (!st && (fm_cpu_wants_grad(s, n->in[1]) || fm_cpu_wants_grad(s, bias)))
        st = conv_bwd_weights(s, id, p);
    return st;
}
