/* Fully connected layers on oneDNN inner products: Linear (X (..., K), W (N,K), B (N)) and ONNX
 * Gemm in the same form (transB = 1, alpha = beta = 1, C a bias of N); forward, backward data
 * and backward weights. An input of rank other than 2 (a transformer's (B, S, D)) is viewed as
 * (rows, K) without a copy: the primitive then works on plain layouts, whose bytes are the
 * tensors' own. Other Gemm forms (transposed A, alpha, beta, C broadcast to (M, N)) run as
 * matrix products in matmul.c. */
#include "cpu.h"
#include "../../ops/ops.h"

struct linear_priv {
    dnnl_primitive_desc_t fwd;
    int64_t sdims[2], wdims[2], ddims[2];
    bool flat;   /* the input has rank other than 2: seen as (rows, K) */
    struct fm_cpu_small *small;   /* a product small.c runs (fwd: the layouts only), or NULL */
};

enum fm_status fm_cpu_linear_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                   const struct fm_node *n)
{
    return fm_op_linear_form(g, n) ? FM_OK : fm_cpu_matmul_check(ctx, g, n);
}

/* The dims the inner product sees: X (rows, K), W (N, K), Y (rows, N). Inputs of rank above 2
 * are flattened to rows (a view: the primitive then works in plain layouts). */
static void linear_dims(const struct fm_cpu *s, const struct fm_node *n, struct linear_priv *p)
{
    const struct fm_tensor *x = fm_graph_tensor(s->g, n->in[0]);
    const struct fm_tensor *w = fm_graph_tensor(s->g, n->in[1]);
    int64_t rows = 1;
    for (int i = 0; i < x->shape.rank - 1; i++)
        rows *= x->shape.dims[i];
    p->flat = x->shape.rank != 2;
    p->sdims[0] = rows;
    p->sdims[1] = w->shape.dims[1];
    p->wdims[0] = w->shape.dims[0];
    p->wdims[1] = w->shape.dims[1];
    p->ddims[0] = rows;
    p->ddims[1] = w->shape.dims[0];
}

/* X's and Y's descriptor: oneDNN's choice, or plain for a flattened view. */
static void act_md(const struct linear_priv *p, dnnl_memory_desc_t *md, const int64_t *dims)
{
    if (p->flat)
        fm_cpu_md_plain(md, 2, dims);
    else
        fm_cpu_md_any(md, 2, dims);
}

/* Up to this many rows the weight and its gradient stay plain (plain_weights) */
#define LINEAR_PLAIN_ROWS 256

/* The forward p->fwd over a plain weight, where oneDNN chose another layout for at most
 * LINEAR_PLAIN_ROWS rows. The parameter is kept in the forward's layout and its gradient in
 * the one the weight-gradient product chose; for a few rows the gemm implementation asks for
 * the weight transposed in one and not the other, and the gradient was reordered every step:
 * AlexNet's fcs at batch 16 spent 40 ms (4096 x 9216) and 17 ms (4096 x 4096) a step in
 * those reorders against 12.7 and 5.3 ms in the products. Plain on both sides, nothing moves;
 * from a few hundred rows the products outweigh a pass over the weight, and oneDNN's choice
 * stands. d: the forward's description, its weight descriptor replaced here. */
static enum fm_status plain_weights(struct fm_cpu *s, struct linear_priv *p,
                                    dnnl_inner_product_desc_t *d)
{
    if (p->sdims[0] > LINEAR_PLAIN_ROWS ||
        fm_cpu_md_is_plain(fm_cpu_pd_md(p->fwd, DNNL_ARG_WEIGHTS)))
        return FM_OK;
    fm_cpu_md_plain(&d->weights_desc, 2, p->wdims);
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_primitive_desc_create(&pd, d, s->attr, s->engine, NULL) != dnnl_success)
        return FM_OK;   /* no implementation over it: the layout oneDNN chose */
    enum fm_status st = fm_cpu_keep_pd(s, pd);
    if (!st)
        p->fwd = pd;
    return st;
}

enum fm_status fm_cpu_linear_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    if (!fm_op_linear_form(s->g, n))
        return fm_cpu_matmul_fwd(s, id);
    fm_tid bias = n->n_in > 2 ? n->in[2] : FM_NONE;
    struct linear_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    linear_dims(s, n, p);
    dnnl_memory_desc_t src, wei, bmd, dst;
    act_md(p, &src, p->sdims);
    fm_cpu_md_any(&wei, 2, p->wdims);
    fm_cpu_md_plain(&bmd, 1, &p->wdims[0]);
    act_md(p, &dst, p->ddims);
    dnnl_inner_product_desc_t d;
    enum fm_status st = FM_OK;
    dnnl_memory_t m_src, m_wei, m_bias = NULL, m_dst = NULL;
    FM_DNNL_TRY(s, dnnl_inner_product_forward_desc_init(
                       &d, s->train ? dnnl_forward_training : dnnl_forward_inference, &src, &wei,
                       bias != FM_NONE ? &bmd : NULL, &dst));
    st = fm_cpu_pd(s, id, &d, NULL, &p->fwd);
    if (!st)
        st = plain_weights(s, p, &d);
    if (!st && !p->flat)
        p->small = fm_cpu_small_new(s, p->sdims[0], p->sdims[1], p->ddims[1],
                                    fm_cpu_pd_md(p->fwd, DNNL_ARG_SRC),
                                    fm_cpu_pd_md(p->fwd, DNNL_ARG_DST), 2, p->wdims,
                                    bias != FM_NONE);
    if (!st && p->small)
        return fm_cpu_small_fwd(s, id, p->small, n->in[0], n->in[1], bias, n->out[0]);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[0], false,
                          fm_cpu_pd_md(p->fwd, DNNL_ARG_SRC), &m_src);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[1], false,
                          fm_cpu_pd_md(p->fwd, DNNL_ARG_WEIGHTS), &m_wei);
    if (!st && bias != FM_NONE)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, bias, false, fm_cpu_pd_md(p->fwd, DNNL_ARG_BIAS),
                          &m_bias);
    if (!st && p->flat) {   /* Y (..., N) placed plain, written as (rows, N) */
        st = fm_cpu_place_out(s, n->out[0]);
        if (!st)
            st = fm_cpu_mem_view(s, s->t[n->out[0]].val_mem, fm_cpu_pd_md(p->fwd, DNNL_ARG_DST),
                                 &m_dst);
    } else if (!st) {
        st = fm_cpu_place(s, n->out[0], fm_cpu_pd_md(p->fwd, DNNL_ARG_DST));
        m_dst = s->t[n->out[0]].val_mem;
    }
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[4] = {{DNNL_ARG_SRC, m_src}, {DNNL_ARG_WEIGHTS, m_wei},
                                     {DNNL_ARG_DST, m_dst},
                                     {DNNL_ARG_BIAS, m_bias}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, p->fwd, args, bias != FM_NONE ? 4 : 3);
    }
out:
    return st;
}

static enum fm_status linear_bwd_data(struct fm_cpu *s, fm_nid id, struct linear_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    if (p->small)
        return fm_cpu_small_bwd_data(s, id, p->small, n->in[0], n->in[1], n->out[0]);
    /* The weight as the forward holds it: left to oneDNN, a small batch gets the transposed
     * layout, and the weight (it changes every step) would be transposed every step: 46 ms of
     * AlexNet's 4096 x 9216 fc at batch 1 where the product itself takes 4.3 ms. */
    dnnl_memory_desc_t dsrc, wei = *fm_cpu_pd_md(p->fwd, DNNL_ARG_WEIGHTS), ddst;
    act_md(p, &dsrc, p->sdims);
    act_md(p, &ddst, p->ddims);
    dnnl_inner_product_desc_t d;
    dnnl_primitive_desc_t pd;
    dnnl_memory_t m_wei, m_dd, m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_inner_product_backward_data_desc_init(&d, &dsrc, &wei, &ddst));
    st = fm_cpu_pd(s, id, &d, p->fwd, &pd);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->in[1], false,
                          fm_cpu_pd_md(pd, DNNL_ARG_WEIGHTS), &m_wei);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true,
                          fm_cpu_pd_md(pd, DNNL_ARG_DIFF_DST), &m_dd);
    if (!st && p->flat) {   /* dX written as (rows, K) into X's plain gradient */
        dnnl_memory_t whole;
        st = fm_cpu_sink_plain(s, id, FM_PHASE_BWD_DATA, n->in[0], &sk, &whole);
        if (!st)
            st = fm_cpu_mem_view(s, whole, fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SRC), &m_dx);
    } else if (!st) {
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0],
                               fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SRC), &sk, &m_dx);
    }
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

static enum fm_status linear_bwd_weights(struct fm_cpu *s, fm_nid id, struct linear_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid bias = n->n_in > 2 ? n->in[2] : FM_NONE;
    bool want_bias = fm_cpu_wants_grad(s, bias);
    if (p->small)
        return fm_cpu_small_bwd_weights(s, id, p->small, n->in[0], n->in[1], bias, want_bias,
                                        n->out[0]);
    dnnl_memory_desc_t src, dwei, dbias, ddst;
    act_md(p, &src, p->sdims);
    fm_cpu_md_any(&dwei, 2, p->wdims);
    fm_cpu_md_plain(&dbias, 1, &p->wdims[0]);
    act_md(p, &ddst, p->ddims);
    dnnl_inner_product_desc_t d;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_inner_product_backward_weights_desc_init(
                       &d, &src, &dwei, want_bias ? &dbias : NULL, &ddst));
    /* the gradient plain too, as plain_weights keeps the weight (left to oneDNN, AlexNet's
     * 1000 x 4096 classifier at batch 16 then took its gradient transposed: 10 ms a step) */
    if (p->sdims[0] <= LINEAR_PLAIN_ROWS) {
        dnnl_inner_product_desc_t dp = d;
        fm_cpu_md_plain(&dp.diff_weights_desc, 2, p->wdims);
        dnnl_primitive_desc_t pd = NULL;
        if (dnnl_primitive_desc_create(&pd, &dp, s->attr, s->engine, p->fwd) == dnnl_success) {
            dnnl_primitive_desc_destroy(pd);
            d = dp;
        }
    }
    st = fm_cpu_bwd_weights(s, id, &d, p->fwd, bias, want_bias);
out:
    return st;
}

enum fm_status fm_cpu_linear_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    if (!fm_op_linear_form(s->g, n))
        return fm_cpu_matmul_bwd(s, id);
    struct linear_priv *p = s->nodes[id].priv;
    fm_tid bias = n->n_in > 2 ? n->in[2] : FM_NONE;
    enum fm_status st = FM_OK;
    if (fm_cpu_wants_grad(s, n->in[0]))
        st = linear_bwd_data(s, id, p);
    if (!st && (fm_cpu_wants_grad(s, n->in[1]) || fm_cpu_wants_grad(s, bias)))
        st = linear_bwd_weights(s, id, p);
    return st;
}
