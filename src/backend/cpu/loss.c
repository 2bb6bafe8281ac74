/* The losses and the optimizer of the CPU backend, as plain loops (both are a few operations per
 * element, far from the step's cost): cross-entropy of logits (N, K) against class indices,
 * mean over the batch, with its gradient (softmax - onehot) / N; mean squared error against a
 * target, with its gradient 2 (y - t) / E; and SGD with momentum in
 * PyTorch's form, v = momentum * v + g, w = w - lr * v (no dampening, no weight decay, no
 * Nesterov). A graph with several losses minimizes their sum. Not here: other losses, Adam. */
#include "cpu.h"

#include <math.h>

struct ce_priv {
    int64_t rows, classes;
    float *lse;                  /* log-sum-exp per row, kept for the backward */
    const int32_t *labels;
};

enum fm_status fm_cpu_loss_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                 const struct fm_node *n)
{
    const struct fm_tensor *labels = fm_graph_tensor(g, n->in[1]);
    if (labels->producer != FM_NONE)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "layer '%s' (CrossEntropy): labels computed by the network are not "
                        "supported; they must be an input",
                        n->name);
    return FM_OK;
}

/* Rows below this many logits in all run on one thread: the fork and join would cost more */
#define CE_PARALLEL_MIN (1 << 15)
/* The exponentials are summed in float lanes over blocks of this many, each block's sum added
 * in double: a vectorised float sum of 50,257 terms would round at 1e-4 */
#define CE_BLOCK 1024

/* The log-sum-exp of one row, from its maximum. Compiled for AVX-512 and AVX2 too: GPT-2's
 * loss is 50,257 classes times the tokens, where libm's exp per logit took 10 times PyTorch's
 * time. */
FM_CPU_CLONES
static float ce_row_lse(const float *row, int64_t classes)
{
    float mx = row[0];
    FM_CPU_SIMD_REDUCE(max : mx)
    for (int64_t k = 1; k < classes; k++)
        mx = row[k] > mx ? row[k] : mx;
    double sum = 0.0;
    for (int64_t k0 = 0; k0 < classes; k0 += CE_BLOCK) {
        int64_t k1 = k0 + CE_BLOCK < classes ? k0 + CE_BLOCK : classes;
        float part = 0.0f;
        FM_CPU_SIMD_REDUCE(+ : part)
        for (int64_t k = k0; k < k1; k++)
            part += fm_cpu_exp_neg(row[k] - mx);
        sum += part;
    }
    return (float)(mx + log(sum));
}

/* d row = (softmax(row) - onehot(label)) * inv */
FM_CPU_CLONES
static void ce_row_grad(const float *restrict row, float *restrict drow, int64_t classes,
                        float lse, int32_t label, float inv)
{
    FM_CPU_SIMD
    for (int64_t k = 0; k < classes; k++)
        drow[k] = fm_cpu_exp_neg(row[k] - lse) * inv;
    drow[label] -= inv;
}

/* memories: logits (plain N x K), loss (one element); the rows on the step's threads */
static enum fm_status ce_fwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    struct ce_priv *p = arg;
    const float *x = fm_cpu_item_f32(it, 0);
    float *loss = fm_cpu_item_f32(it, 1);
    const int64_t rows = p->rows, classes = p->classes;
    for (int64_t i = 0; i < rows; i++) {
        int32_t label = p->labels[i];
        if (label < 0 || label >= classes)
            return fm_error(s->ctx, FM_ERR_INVALID, "label %d of row %lld is outside [0, %lld)",
                            (int)label, (long long)i, (long long)classes);
    }
    FM_CPU_PARALLEL_IF(rows * classes >= CE_PARALLEL_MIN)
    for (int64_t i = 0; i < rows; i++)
        p->lse[i] = ce_row_lse(x + i * classes, classes);
    double total = 0.0;
    for (int64_t i = 0; i < rows; i++)
        total += (double)p->lse[i] - x[i * classes + p->labels[i]];
    double value = total / (double)rows;
    s->loss = isnan(s->loss) ? value : s->loss + value;
    loss[0] = (float)value;
    return FM_OK;
}

/* memories: logits (plain), d logits (plain): softmax / N, less 1 / N at the label */
static enum fm_status ce_bwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct ce_priv *p = arg;
    const float *x = fm_cpu_item_f32(it, 0);
    float *dx = fm_cpu_item_f32(it, 1);
    const int64_t rows = p->rows, classes = p->classes;
    const float inv = 1.0f / (float)rows;
    FM_CPU_PARALLEL_IF(rows * classes >= CE_PARALLEL_MIN)
    for (int64_t i = 0; i < rows; i++)
        ce_row_grad(x + i * classes, dx + i * classes, classes, p->lse[i], p->labels[i], inv);
    return FM_OK;
}

static void logits_md(const struct fm_cpu *s, const struct fm_node *n, dnnl_memory_desc_t *md)
{
    const struct fm_tensor *x = fm_graph_tensor(s->g, n->in[0]);
    fm_cpu_md_plain(md, 2, x->shape.dims);
}

enum fm_status fm_cpu_loss_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const struct fm_tensor *x = fm_graph_tensor(s->g, n->in[0]);
    struct ce_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    p->rows = x->shape.dims[0];
    p->classes = x->shape.dims[1];
    p->labels = s->t[n->in[1]].labels;
    p->lse = fm_cpu_buf(s, sizeof(float) * (size_t)p->rows);
    if (!p->lse || !p->labels)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    dnnl_memory_desc_t xmd, lmd;
    int64_t one = 1;
    logits_md(s, n, &xmd);
    fm_cpu_md_plain(&lmd, 1, &one);
    dnnl_memory_t m_x;
    enum fm_status st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[0], false, &xmd, &m_x);
    if (!st)
        st = fm_cpu_place(s, n->out[0], &lmd);
    if (st)
        return st;
    dnnl_memory_t mems[2] = {m_x, s->t[n->out[0]].val_mem};
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, ce_fwd, p, mems, 2);
}

enum fm_status fm_cpu_loss_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    dnnl_memory_desc_t xmd;
    logits_md(s, n, &xmd);
    dnnl_memory_t m_x, m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->in[0], false, &xmd, &m_x);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0], &xmd, &sk, &m_dx);
    if (st || !m_dx)
        return st;
    dnnl_memory_t mems[2] = {m_x, m_dx};
    st = fm_cpu_add_fn(s, id, FM_PHASE_BWD_DATA, ce_bwd, s->nodes[id].priv, mems, 2);
    return st ? st : fm_cpu_sink_end(s, &sk);
}

/* ---- mean squared error ---- */

struct mse_priv {
    uint64_t n;
    bool dy, dt;                 /* which gradients the backward writes (its memories 2, 3) */
};

/* memories: prediction, target (plain, same dims), loss (one element) */
static enum fm_status mse_fwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    const struct mse_priv *p = arg;
    const float *y = fm_cpu_item_f32(it, 0), *t = fm_cpu_item_f32(it, 1);
    float *loss = fm_cpu_item_f32(it, 2);
    double total = 0.0;
    for (uint64_t i = 0; i < p->n; i++) {
        double d = (double)y[i] - (double)t[i];
        total += d * d;
    }
    double value = total / (double)p->n;
    s->loss = isnan(s->loss) ? value : s->loss + value;
    loss[0] = (float)value;
    return FM_OK;
}

/* memories: prediction, target, then d prediction and/or d target (plain), as p says */
static enum fm_status mse_bwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct mse_priv *p = arg;
    const float *y = fm_cpu_item_f32(it, 0), *t = fm_cpu_item_f32(it, 1);
    float *dy = p->dy ? fm_cpu_item_f32(it, 2) : NULL;
    float *dt = p->dt ? fm_cpu_item_f32(it, p->dy ? 3 : 2) : NULL;
    float scale = 2.0f / (float)p->n;
    for (uint64_t i = 0; i < p->n; i++) {
        float g = (y[i] - t[i]) * scale;
        if (dy)
            dy[i] = g;
        if (dt)
            dt[i] = -g;
    }
    return FM_OK;
}

static void plain_md_of(const struct fm_cpu *s, fm_tid tid, dnnl_memory_desc_t *md)
{
    int64_t dims[FM_MAX_DIMS];
    int rank = fm_cpu_dims(fm_graph_tensor(s->g, tid), dims);
    fm_cpu_md_plain(md, rank, dims);
}

enum fm_status fm_cpu_mse_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct mse_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    p->n = s->t[n->in[0]].numel;
    dnnl_memory_desc_t md, lmd;
    int64_t one = 1;
    plain_md_of(s, n->in[0], &md);
    fm_cpu_md_plain(&lmd, 1, &one);
    dnnl_memory_t m_y, m_t;
    enum fm_status st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[0], false, &md, &m_y);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[1], false, &md, &m_t);
    if (!st)
        st = fm_cpu_place(s, n->out[0], &lmd);
    if (st)
        return st;
    dnnl_memory_t mems[3] = {m_y, m_t, s->t[n->out[0]].val_mem};
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, mse_fwd, p, mems, 3);
}

enum fm_status fm_cpu_mse_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    dnnl_memory_desc_t md;
    plain_md_of(s, n->in[0], &md);
    dnnl_memory_t m_y, m_t, m_dy = NULL, m_dt = NULL;
    struct fm_cpu_sink sk_y, sk_t;
    enum fm_status st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->in[0], false, &md, &m_y);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->in[1], false, &md, &m_t);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0], &md, &sk_y, &m_dy);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[1], &md, &sk_t, &m_dt);
    if (st || (!m_dy && !m_dt))
        return st;
    struct mse_priv *p = s->nodes[id].priv;
    p->dy = m_dy != NULL;
    p->dt = m_dt != NULL;
    dnnl_memory_t mems[4] = {m_y, m_t, m_dy ? m_dy : m_dt, m_dt};
    st = fm_cpu_add_fn(s, id, FM_PHASE_BWD_DATA, mse_bwd, p, mems, 2 + p->dy + p->dt);
    if (!st && m_dy)
        st = fm_cpu_sink_end(s, &sk_y);
    if (!st && m_dt)
        st = fm_cpu_sink_end(s, &sk_t);
    return st;
}

/* ---- SGD with momentum ---- */

struct sgd_arg {
    size_t n;                    /* elements of the (padded) buffers: padding stays zero */
    float lr, momentum;
};

/* memories: weight, gradient, momentum buffer (one layout). The operations and their order
 * are torch.optim.SGD's: buf.mul_(momentum).add_(grad); param.add_(buf, alpha=-lr). The
 * buffer starts at zero, so the first step sets it to the gradient, as PyTorch's clone does. */
static enum fm_status sgd_step(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct sgd_arg *a = arg;
    float *w = fm_cpu_item_f32(it, 0), *v = fm_cpu_item_f32(it, 2);
    const float *g = fm_cpu_item_f32(it, 1);
    float m = a->momentum, neg_lr = -a->lr;
    for (size_t i = 0; i < a->n; i++) {
        float vi = v[i] * m;
        vi = vi + g[i];
        v[i] = vi;
        float step = neg_lr * vi;
        w[i] = w[i] + step;
    }
    return FM_OK;
}

/* acc = a * src + acc in place on 1-D views of the whole (padded) buffers: a oneDNN binary add
 * with a scale on one source, which runs on every thread. false in *ok when oneDNN cannot
 * (then the loop above does the update). */
static enum fm_status scaled_add(struct fm_cpu *s, fm_nid node, dnnl_memory_t acc, float acc_scale,
                                 dnnl_memory_t src, float src_scale, bool *ok)
{
    const dnnl_memory_desc_t *md = fm_cpu_mem_md(acc);
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_binary_desc_t d;
    enum fm_status st = FM_OK;
    *ok = false;
    FM_DNNL_TRY(s, dnnl_primitive_attr_create(&attr));
    FM_DNNL_TRY(s, dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    FM_DNNL_TRY(s, dnnl_primitive_attr_set_scales(attr, DNNL_ARG_SRC_0, 1, 0, &acc_scale));
    FM_DNNL_TRY(s, dnnl_primitive_attr_set_scales(attr, DNNL_ARG_SRC_1, 1, 0, &src_scale));
    FM_DNNL_TRY(s, dnnl_binary_desc_init(&d, dnnl_binary_add, md, md, md));
    if (dnnl_primitive_desc_create(&pd, &d, attr, s->engine, NULL) != dnnl_success)
        goto out;
    st = fm_cpu_keep_pd(s, pd);
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_SRC_0, acc}, {DNNL_ARG_SRC_1, src},
                                     {DNNL_ARG_DST, acc}};
        st = fm_cpu_add_prim(s, node, FM_PHASE_OPTIMIZER, pd, args, 3);
    }
    *ok = st == FM_OK;
out:
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

enum fm_status fm_cpu_sgd_plan(struct fm_cpu *s, fm_tid param, fm_nid node)
{
    struct fm_cpu_tensor *t = &s->t[param];
    struct sgd_arg *a = fm_cpu_buf(s, sizeof(*a));
    if (!a)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    a->n = t->size / sizeof(float);
    a->lr = (float)s->opts.lr;
    a->momentum = (float)s->opts.momentum;
    dnnl_memory_t v;
    enum fm_status st = fm_cpu_mem_new(s, &t->md, &v);
    if (st)
        return st;
    /* large tensors on oneDNN's threads: v = momentum v + g, then w = w - lr v */
    if (a->n >= 4096) {
        int64_t n = (int64_t)a->n;
        dnnl_memory_desc_t flat;
        fm_cpu_md_plain(&flat, 1, &n);
        dnnl_memory_t w1, g1, v1;
        bool ok1 = false, ok2 = false;
        st = fm_cpu_mem(s, &flat, t->val, &w1);
        if (!st)
            st = fm_cpu_mem(s, &flat, t->grad, &g1);
        if (!st)
            st = fm_cpu_mem(s, &flat, fm_cpu_mem_data(v), &v1);
        if (!st)
            st = scaled_add(s, node, v1, a->momentum, g1, 1.0f, &ok1);
        if (!st && ok1)
            st = scaled_add(s, node, w1, 1.0f, v1, -a->lr, &ok2);
        if (st || (ok1 && ok2))
            return st;
        if (ok1)   /* half planned cannot be undone: keep the planner honest */
            return fm_error(s->ctx, FM_ERR_BACKEND, "oneDNN took one SGD binary, not the other");
    }
    dnnl_memory_t mems[3] = {t->val_mem, t->grad_mem, v};
    return fm_cpu_add_fn(s, node, FM_PHASE_OPTIMIZER, sgd_step, a, mems, 3);
}
