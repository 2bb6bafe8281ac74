/* Pooling: MaxPool (dilation, ceil mode), AvgPool (padding counted or not), global pooling and
 * AdaptiveAvgPool on oneDNN pooling primitives; an adaptive average whose windows differ in
 * size (input not a multiple of the output) runs as a plain loop over NCHW with PyTorch's
 * windows, start = floor(i*In/Out), end = ceil((i+1)*In/Out). Ceil mode becomes extra right
 * padding. Not here: 1-D and 3-D pooling, ceil-mode averages whose extra windows would count
 * padding (PyTorch clips those divisors; oneDNN does not). */
#include "cpu.h"

#include <string.h>

struct pool_priv {
    dnnl_primitive_desc_t fwd;
    dnnl_alg_kind_t alg;
    dnnl_dims_t strides, kernel, dil, pl, pr;
    dnnl_memory_t ws;            /* max pooling in training: where each maximum came from */
    bool generic;                /* uneven adaptive windows: the loop below */
    int64_t n, c, h, w, oh, ow;
};

/* Geometry of a pooling node for oneDNN; false for uneven adaptive windows. */
static bool pool_geometry(const struct fm_graph *g, const struct fm_node *n, struct pool_priv *p,
                          int64_t *extra_pad)
{
    const struct fm_tensor *x = fm_graph_tensor(g, n->in[0]);
    const struct fm_tensor *y = fm_graph_tensor(g, n->out[0]);
    const struct fm_attrs *a = &n->attrs;
    p->n = x->shape.dims[0];
    p->c = x->shape.dims[1];
    p->h = x->shape.dims[2];
    p->w = x->shape.dims[3];
    p->oh = y->shape.dims[2];
    p->ow = y->shape.dims[3];
    *extra_pad = 0;
    int64_t in[2] = {p->h, p->w}, out[2] = {p->oh, p->ow};
    switch (n->op) {
    case FM_OP_MAXPOOL:
    case FM_OP_AVGPOOL:
        p->alg = n->op == FM_OP_MAXPOOL            ? dnnl_pooling_max
                 : (a->flags & FM_ATTR_COUNT_PAD) ? dnnl_pooling_avg_include_padding
                                                   : dnnl_pooling_avg_exclude_padding;
        for (int i = 0; i < 2; i++) {
            p->kernel[i] = a->kernel[i];
            p->strides[i] = a->stride[i];
            p->dil[i] = a->dilation[i] - 1;
            p->pl[i] = a->pad[i];
            p->pr[i] = a->pad[i + 2];
            /* ceil mode: the last window may start inside the input and run past the given
             * padding; oneDNN sees that as more right padding */
            int64_t span = a->dilation[i] * (a->kernel[i] - 1) + 1;
            int64_t need = (out[i] - 1) * a->stride[i] + span - in[i] - p->pl[i];
            if (need > p->pr[i]) {
                *extra_pad += need - p->pr[i];
                p->pr[i] = need;
            }
        }
        return true;
    case FM_OP_GLOBAL_AVGPOOL:
    case FM_OP_GLOBAL_MAXPOOL:
    case FM_OP_ADAPTIVE_AVGPOOL:
        p->alg = n->op == FM_OP_GLOBAL_MAXPOOL ? dnnl_pooling_max : dnnl_pooling_avg_exclude_padding;
        for (int i = 0; i < 2; i++) {
            if (in[i] % out[i] != 0)
                return false;
            p->kernel[i] = p->strides[i] = in[i] / out[i];
            p->dil[i] = p->pl[i] = p->pr[i] = 0;
        }
        return true;
    default:
        return false;
    }
}

enum fm_status fm_cpu_pool_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                 const struct fm_node *n)
{
    const struct fm_tensor *x = fm_graph_tensor(g, n->in[0]);
    if (x->shape.rank != 4)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "layer '%s' (%s): only 2-D pooling (NCHW input) runs on the CPU backend",
                        n->name, n->op_name);
    if (n->n_out > 1)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "layer '%s' (%s): the argmax indices as an output (ONNX MaxPool's "
                        "second output) do not run on the CPU backend",
                        n->name, n->op_name);
    struct pool_priv p;
    int64_t extra;
    if (pool_geometry(g, n, &p, &extra) && n->op == FM_OP_AVGPOOL &&
        (n->attrs.flags & FM_ATTR_COUNT_PAD) && extra > 0)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "layer '%s' (AvgPool): ceil mode with count_include_pad adds windows "
                        "whose divisor PyTorch clips and oneDNN does not; not supported",
                        n->name);
    return FM_OK;
}

/* ---- uneven adaptive average pooling: plain NCHW loops ---- */

struct adaptive_arg {
    int64_t nc, h, w, oh, ow;
};

static int64_t win_start(int64_t i, int64_t in, int64_t out)
{
    return (i * in) / out;
}

static int64_t win_end(int64_t i, int64_t in, int64_t out)
{
    return ((i + 1) * in + out - 1) / out;
}

/* memories: x (plain), y (plain) */
static enum fm_status adaptive_fwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct adaptive_arg *a = arg;
    const float *x = fm_cpu_item_f32(it, 0);
    float *y = fm_cpu_item_f32(it, 1);
    for (int64_t p = 0; p < a->nc; p++) {
        const float *xp = x + p * a->h * a->w;
        float *yp = y + p * a->oh * a->ow;
        for (int64_t i = 0; i < a->oh; i++) {
            int64_t h0 = win_start(i, a->h, a->oh), h1 = win_end(i, a->h, a->oh);
            for (int64_t j = 0; j < a->ow; j++) {
                int64_t w0 = win_start(j, a->w, a->ow), w1 = win_end(j, a->w, a->ow);
                float sum = 0.0f;
                for (int64_t r = h0; r < h1; r++) {
                    for (int64_t q = w0; q < w1; q++)
                        sum += xp[r * a->w + q];
                }
                yp[i * a->ow + j] = sum / (float)((h1 - h0) * (w1 - w0));
            }
        }
    }
    return FM_OK;
}

/* memories: dy (plain), dx (plain); windows may overlap, so dx is cleared and accumulated */
static enum fm_status adaptive_bwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct adaptive_arg *a = arg;
    const float *dy = fm_cpu_item_f32(it, 0);
    float *dx = fm_cpu_item_f32(it, 1);
    memset(dx, 0, sizeof(float) * (size_t)(a->nc * a->h * a->w));
    for (int64_t p = 0; p < a->nc; p++) {
        float *dxp = dx + p * a->h * a->w;
        const float *dyp = dy + p * a->oh * a->ow;
        for (int64_t i = 0; i < a->oh; i++) {
            int64_t h0 = win_start(i, a->h, a->oh), h1 = win_end(i, a->h, a->oh);
            for (int64_t j = 0; j < a->ow; j++) {
                int64_t w0 = win_start(j, a->w, a->ow), w1 = win_end(j, a->w, a->ow);
                float g = dyp[i * a->ow + j] / (float)((h1 - h0) * (w1 - w0));
                for (int64_t r = h0; r < h1; r++) {
                    for (int64_t q = w0; q < w1; q++)
                        dxp[r * a->w + q] += g;
                }
            }
        }
    }
    return FM_OK;
}

static enum fm_status generic_fwd(struct fm_cpu *s, fm_nid id, struct pool_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct adaptive_arg *a = fm_cpu_buf(s, sizeof(*a));
    if (!a)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    *a = (struct adaptive_arg){p->n * p->c, p->h, p->w, p->oh, p->ow};
    int64_t xd[4] = {p->n, p->c, p->h, p->w}, yd[4] = {p->n, p->c, p->oh, p->ow};
    dnnl_memory_desc_t xmd, ymd;
    fm_cpu_md_plain(&xmd, 4, xd);
    fm_cpu_md_plain(&ymd, 4, yd);
    dnnl_memory_t m_x;
    enum fm_status st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[0], false, &xmd, &m_x);
    if (!st)
        st = fm_cpu_place(s, n->out[0], &ymd);
    if (st)
        return st;
    dnnl_memory_t mems[2] = {m_x, s->t[n->out[0]].val_mem};
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, adaptive_fwd, a, mems, 2);
}

static enum fm_status generic_bwd(struct fm_cpu *s, fm_nid id, struct pool_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct adaptive_arg *a = fm_cpu_buf(s, sizeof(*a));
    if (!a)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    *a = (struct adaptive_arg){p->n * p->c, p->h, p->w, p->oh, p->ow};
    int64_t xd[4] = {p->n, p->c, p->h, p->w}, yd[4] = {p->n, p->c, p->oh, p->ow};
    dnnl_memory_desc_t xmd, ymd;
    fm_cpu_md_plain(&xmd, 4, xd);
    fm_cpu_md_plain(&ymd, 4, yd);
    dnnl_memory_t m_dy, m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true, &ymd, &m_dy);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0], &xmd, &sk, &m_dx);
    if (st || !m_dx)
        return st;
    dnnl_memory_t mems[2] = {m_dy, m_dx};
    st = fm_cpu_add_fn(s, id, FM_PHASE_BWD_DATA, adaptive_bwd, a, mems, 2);
    return st ? st : fm_cpu_sink_end(s, &sk);
}

/* ---- oneDNN pooling ---- */

/* Whether oneDNN pools with reference, gemm or its "simple" plain-layout code */
static bool pool_slow(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    return fm_cpu_pd_is_slow(pd) ||
           (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
            impl && strncmp(impl, "simple", 6) == 0);
}

/* On a plain input with no JIT kernel (AlexNet's first MaxPool, after a convolution oneDNN
 * runs in plain layouts: simple_nchw took 30 ms forward at batch 16, 3x3 over 64 x 55 x 55,
 * where a JIT kernel pools a channel-blocked copy in 3-4), the forward over a copy blocked by
 * 16 or 8 channels, whichever has a JIT kernel: the reorders to and from it cost a pass over
 * the input each. d: the forward's description, its source descriptor replaced here. */
static enum fm_status pool_blocked(struct fm_cpu *s, struct pool_priv *p,
                                   dnnl_pooling_v2_desc_t *d)
{
    static const dnnl_format_tag_t tags[2] = {dnnl_aBcd16b, dnnl_aBcd8b};
    if (!pool_slow(p->fwd) || p->c < 8)
        return FM_OK;
    dnnl_dims_t xd = {p->n, p->c, p->h, p->w};
    for (int k = 0; k < 2; k++) {
        dnnl_pooling_v2_desc_t db = *d;
        if (dnnl_memory_desc_init_by_tag(&db.src_desc, 4, xd, dnnl_f32, tags[k]) !=
            dnnl_success)
            continue;
        dnnl_primitive_desc_t pd = NULL;
        if (dnnl_primitive_desc_create(&pd, &db, s->attr, s->engine, NULL) != dnnl_success)
            continue;
        if (pool_slow(pd)) {
            dnnl_primitive_desc_destroy(pd);
            continue;
        }
        enum fm_status st = fm_cpu_keep_pd(s, pd);
        if (!st) {
            p->fwd = pd;
            *d = db;
        }
        return st;
    }
    return FM_OK;   /* no JIT kernel blocked either: the plain one */
}

enum fm_status fm_cpu_pool_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct pool_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    int64_t extra;
    p->generic = !pool_geometry(s->g, n, p, &extra);
    if (p->generic)
        return generic_fwd(s, id, p);
    const dnnl_memory_desc_t *xmd = &s->t[n->in[0]].md;
    int64_t yd[4] = {p->n, p->c, p->oh, p->ow};
    dnnl_memory_desc_t ymd;
    fm_cpu_md_any(&ymd, 4, yd);
    bool train = s->train;
    dnnl_pooling_v2_desc_t d;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_pooling_v2_forward_desc_init(
                       &d, train ? dnnl_forward_training : dnnl_forward_inference, p->alg, xmd,
                       &ymd, p->strides, p->kernel, p->dil, p->pl, p->pr));
    st = fm_cpu_pd(s, id, &d, NULL, &p->fwd);
    if (!st)
        st = pool_blocked(s, p, &d);
    dnnl_memory_t m_src = NULL;
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[0], false,
                          fm_cpu_pd_md(p->fwd, DNNL_ARG_SRC), &m_src);
    if (!st)
        st = fm_cpu_place(s, n->out[0], fm_cpu_pd_md(p->fwd, DNNL_ARG_DST));
    const dnnl_memory_desc_t *wsmd = st ? NULL : fm_cpu_pd_md(p->fwd, DNNL_ARG_WORKSPACE);
    if (!st && wsmd && dnnl_memory_desc_get_size(wsmd) > 0)
        st = fm_cpu_mem_new(s, wsmd, &p->ws);
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_SRC, m_src},
                                     {DNNL_ARG_DST, s->t[n->out[0]].val_mem},
                                     {DNNL_ARG_WORKSPACE, p->ws}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, p->fwd, args, p->ws ? 3 : 2);
    }
out:
    return st;
}

enum fm_status fm_cpu_pool_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct pool_priv *p = s->nodes[id].priv;
    if (p->generic)
        return generic_bwd(s, id, p);
    /* x as the forward read it: its own layout, or pool_blocked's copy */
    const dnnl_memory_desc_t *xmd = fm_cpu_pd_md(p->fwd, DNNL_ARG_SRC);
    const dnnl_memory_desc_t *ymd = &s->t[n->out[0]].md;
    dnnl_pooling_v2_desc_t d;
    dnnl_primitive_desc_t pd;
    dnnl_memory_t m_dd, m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_pooling_v2_backward_desc_init(&d, p->alg, xmd, ymd, p->strides,
                                                      p->kernel, p->dil, p->pl, p->pr));
    st = fm_cpu_pd(s, id, &d, p->fwd, &pd);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true,
                          fm_cpu_pd_md(pd, DNNL_ARG_DIFF_DST), &m_dd);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0],
                               fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SRC), &sk, &m_dx);
    if (st || !m_dx)
        goto out;
    {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_DIFF_DST, m_dd}, {DNNL_ARG_DIFF_SRC, m_dx},
                                     {DNNL_ARG_WORKSPACE, p->ws}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_BWD_DATA, pd, args, p->ws ? 3 : 2);
    }
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
out:
    return st;
}
