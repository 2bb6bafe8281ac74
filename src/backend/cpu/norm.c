/* Normalizations and softmax on the CPU backend.
 * LayerNorm: oneDNN layer normalization on a plain (rows, D) view of X, D the product of the
 * normalized dims [axis, rank) (the primitive normalizes the last dim only, and its 2-D plain
 * form is its fastest); scale and shift are passed as their own arguments (oneDNN 2.6's
 * dnnl_use_scale | dnnl_use_shift), none without affine. Forward training keeps mean and
 * variance; one backward primitive gives the input gradient and, when wanted, the scale and
 * shift gradients (reported as bwd_data, as BatchNorm's). Up to LN_SMALL elements, the
 * GroupNorm loops below instead (one group a row).
 * Softmax and LogSoftmax: along the last axis (or one followed only by dims of 1), oneDNN
 * softmax_v2 (accurate, log) on a plain (outer, L) view, its backward from the output and its
 * gradient; along another axis plain loops over blocks of columns (oneDNN 2.6 has only
 * reference code there).
 * GroupNorm and InstanceNorm (GroupNorm with one group per channel): oneDNN 2.6 has no group
 * normalization, so plain loops parallel over (sample, group), each group being contiguous in
 * NCHW order; the forward keeps mean and 1/std per group, the backward is exact:
 *   dx = rstd (g - mean(g) - xhat mean(g xhat)),  g = dy gamma,
 * and dgamma = sum dy xhat, dbeta = sum dy per channel (parallel over channels). */
#include "cpu.h"

#include <math.h>
#include <string.h>

static fm_tid opt_in(const struct fm_node *n, int i)
{
    return i < n->n_in ? n->in[i] : FM_NONE;
}

/* The value (or gradient) of tid seen with md (same element count, row-major order): a view
 * of the tensor's own storage when it is plain, else the copy fm_cpu_input makes. */
static enum fm_status plain_as(struct fm_cpu *s, fm_nid id, enum fm_phase ph, fm_tid tid,
                               bool grad, const dnnl_memory_desc_t *md, dnnl_memory_t *out)
{
    enum fm_status st = fm_cpu_ensure(s, tid);
    if (st)
        return st;
    struct fm_cpu_tensor *t = &s->t[tid];
    void *data = grad ? t->grad : t->val;
    if (data && fm_cpu_md_is_plain(&t->md)) {
        if (fm_cpu_md_equal(&t->md, md)) {
            *out = grad ? t->grad_mem : t->val_mem;
            return FM_OK;
        }
        return fm_cpu_mem(s, md, data, out);
    }
    return fm_cpu_input(s, id, ph, tid, grad, md, out);
}

/* fm_cpu_sink_begin with md (any dims of tid's element count): a view of the gradient itself
 * when it is plain and this is the first delivery, else scratch that fm_cpu_sink_end adds in
 * (in row-major order). NULL in *out when tid needs no gradient. */
static enum fm_status sink_as(struct fm_cpu *s, fm_nid id, enum fm_phase ph, fm_tid tid,
                              const dnnl_memory_desc_t *md, struct fm_cpu_sink *sk,
                              dnnl_memory_t *out)
{
    *sk = (struct fm_cpu_sink){id, ph, FM_NONE, NULL};
    *out = NULL;
    if (tid == FM_NONE || !fm_cpu_wants_grad(s, tid))
        return FM_OK;
    struct fm_cpu_tensor *t = &s->t[tid];
    if (!t->grad_planned && fm_cpu_md_is_plain(&t->md)) {
        dnnl_memory_t direct;
        enum fm_status st = fm_cpu_sink_plain(s, id, ph, tid, sk, &direct);
        if (st)
            return st;
        if (sk->tmp) {   /* scratch after all: deliver through it */
            *out = direct;
            return FM_OK;
        }
        if (fm_cpu_md_equal(&t->md, md)) {
            *out = direct;
            return FM_OK;
        }
        return fm_cpu_mem(s, md, t->grad, out);
    }
    return fm_cpu_sink_begin(s, id, ph, tid, md, sk, out);
}

/* ---- LayerNorm ---- */

struct ln_priv {
    dnnl_primitive_desc_t fwd;
    unsigned flags;
    dnnl_memory_desc_t data_md, w_md;    /* (rows, D) and (D) */
    dnnl_memory_t x, mean, var, scale, shift;
};

/* A LayerNorm's input as (rows, D): D the product of the normalized dims [axis, rank). */
static void ln_dims(const struct fm_cpu *s, fm_nid id, int64_t dims[2])
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const struct fm_shape *xs = &fm_graph_tensor(s->g, n->in[0])->shape;
    int axis = (int)(n->attrs.axis < 0 ? n->attrs.axis + xs->rank : n->attrs.axis);
    dims[0] = dims[1] = 1;
    for (int i = 0; i < xs->rank; i++)
        dims[i < axis ? 0 : 1] *= xs->dims[i];
}

static enum fm_status ln_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid gamma = opt_in(n, 1), beta = opt_in(n, 2);
    struct ln_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    int64_t dims[2];
    ln_dims(s, id, dims);
    fm_cpu_md_plain(&p->data_md, 2, dims);
    fm_cpu_md_plain(&p->w_md, 1, &dims[1]);
    dnnl_memory_desc_t stat_md;
    fm_cpu_md_plain(&stat_md, 1, &dims[0]);
    p->flags = (gamma != FM_NONE ? dnnl_use_scale : 0u) | (beta != FM_NONE ? dnnl_use_shift : 0u);
    dnnl_layer_normalization_desc_t d;
    dnnl_memory_t y;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_layer_normalization_forward_desc_init(
                       &d, s->train ? dnnl_forward_training : dnnl_forward_inference, &p->data_md,
                       &stat_md, (float)n->attrs.eps, p->flags));
    st = fm_cpu_pd(s, id, &d, NULL, &p->fwd);
    if (!st)
        st = plain_as(s, id, FM_PHASE_FWD, n->in[0], false, &p->data_md, &p->x);
    if (!st && gamma != FM_NONE)
        st = plain_as(s, id, FM_PHASE_FWD, gamma, false, &p->w_md, &p->scale);
    if (!st && beta != FM_NONE)
        st = plain_as(s, id, FM_PHASE_FWD, beta, false, &p->w_md, &p->shift);
    if (!st)
        st = fm_cpu_mem_new(s, &stat_md, &p->mean);
    if (!st)
        st = fm_cpu_mem_new(s, &stat_md, &p->var);
    if (!st)
        st = fm_cpu_ensure(s, n->out[0]);
    if (!st)
        st = fm_cpu_mem(s, &p->data_md, s->t[n->out[0]].val, &y);
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[6] = {{DNNL_ARG_SRC, p->x},
                                     {DNNL_ARG_DST, y},
                                     {DNNL_ARG_MEAN, p->mean},
                                     {DNNL_ARG_VARIANCE, p->var}};
        int na = 4;
        if (p->scale)
            args[na++] = (struct fm_cpu_arg){DNNL_ARG_SCALE, p->scale};
        if (p->shift)
            args[na++] = (struct fm_cpu_arg){DNNL_ARG_SHIFT, p->shift};
        st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, p->fwd, args, na);
    }
out:
    return st;
}

static enum fm_status ln_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct ln_priv *p = s->nodes[id].priv;
    fm_tid gamma = opt_in(n, 1), beta = opt_in(n, 2);
    bool want_scale = gamma != FM_NONE && fm_cpu_wants_grad(s, gamma);
    bool want_shift = beta != FM_NONE && fm_cpu_wants_grad(s, beta);
    bool weights = want_scale || want_shift;
    dnnl_layer_normalization_desc_t d;
    dnnl_primitive_desc_t pd;
    dnnl_memory_t m_dd, m_dx, m_ds = NULL, m_dh = NULL;
    struct fm_cpu_sink skx, sks, skh;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_layer_normalization_backward_desc_init(
                       &d, weights ? dnnl_backward : dnnl_backward_data, &p->data_md, &p->data_md,
                       fm_cpu_mem_md(p->mean), (float)n->attrs.eps, p->flags));
    st = fm_cpu_pd(s, id, &d, p->fwd, &pd);
    if (!st)
        st = plain_as(s, id, FM_PHASE_BWD_DATA, n->out[0], true, &p->data_md, &m_dd);
    if (!st)
        st = sink_as(s, id, FM_PHASE_BWD_DATA, n->in[0], &p->data_md, &skx, &m_dx);
    /* oneDNN always writes the input gradient, and both weight gradients once it writes one */
    if (!st && !m_dx)
        st = fm_cpu_mem_scratch(s, &p->data_md, &m_dx);
    if (!st && weights && p->scale) {
        st = sink_as(s, id, FM_PHASE_BWD_DATA, gamma, &p->w_md, &sks, &m_ds);
        if (!st && !m_ds)
            st = fm_cpu_mem_scratch(s, &p->w_md, &m_ds);
    } else {
        sks = (struct fm_cpu_sink){id, FM_PHASE_BWD_DATA, FM_NONE, NULL};
    }
    if (!st && weights && p->shift) {
        st = sink_as(s, id, FM_PHASE_BWD_DATA, beta, &p->w_md, &skh, &m_dh);
        if (!st && !m_dh)
            st = fm_cpu_mem_scratch(s, &p->w_md, &m_dh);
    } else {
        skh = (struct fm_cpu_sink){id, FM_PHASE_BWD_DATA, FM_NONE, NULL};
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

/* ---- Softmax, LogSoftmax ---- */

#define SM_BLOCK 256   /* columns a strided softmax handles at a time */

struct sm_priv {
    dnnl_primitive_desc_t fwd;           /* oneDNN's forward along the last axis, or NULL */
    dnnl_alg_kind_t alg;
    bool log;
    int64_t outer, len, inner;
    dnnl_memory_desc_t md;               /* (outer, L) */
    dnnl_memory_t y;
};

/* Softmax along an axis that is not the last: oneDNN 2.6 runs its reference code there (half
 * a second for 768 x 8192), so plain loops over (outer, block of inner columns), each column
 * a strided row of L. memories: x, y */
static enum fm_status sm_fwd_run(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct sm_priv *p = arg;
    const float *x = fm_cpu_item_f32(it, 0);
    float *y = fm_cpu_item_f32(it, 1);
    int64_t nb = (p->inner + SM_BLOCK - 1) / SM_BLOCK;
    FM_CPU_PARALLEL
    for (int64_t w = 0; w < p->outer * nb; w++) {
        int64_t o = w / nb, i0 = (w - o * nb) * SM_BLOCK;
        int64_t n = p->inner - i0 < SM_BLOCK ? p->inner - i0 : SM_BLOCK;
        int64_t base = o * p->len * p->inner + i0;
        float m[SM_BLOCK], sum[SM_BLOCK];
        for (int64_t i = 0; i < n; i++) {
            m[i] = -INFINITY;
            sum[i] = 0.0f;
        }
        for (int64_t l = 0; l < p->len; l++) {
            const float *row = x + base + l * p->inner;
            for (int64_t i = 0; i < n; i++)
                m[i] = row[i] > m[i] ? row[i] : m[i];
        }
        for (int64_t l = 0; l < p->len; l++) {
            const float *row = x + base + l * p->inner;
            float *yr = y + base + l * p->inner;
            for (int64_t i = 0; i < n; i++) {
                float e = expf(row[i] - m[i]);
                sum[i] += e;
                if (!p->log)
                    yr[i] = e;
            }
        }
        for (int64_t i = 0; i < n; i++)
            sum[i] = p->log ? m[i] + logf(sum[i]) : 1.0f / sum[i];
        for (int64_t l = 0; l < p->len; l++) {
            const float *row = x + base + l * p->inner;
            float *yr = y + base + l * p->inner;
            if (p->log) {
                for (int64_t i = 0; i < n; i++)
                    yr[i] = row[i] - sum[i];
            } else {
                for (int64_t i = 0; i < n; i++)
                    yr[i] *= sum[i];
            }
        }
    }
    return FM_OK;
}

/* softmax: dx = y (dy - sum(dy y)); log: dx = dy - exp(y) sum(dy). memories: y, dy, dx */
static enum fm_status sm_bwd_run(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct sm_priv *p = arg;
    const float *y = fm_cpu_item_f32(it, 0), *dy = fm_cpu_item_f32(it, 1);
    float *dx = fm_cpu_item_f32(it, 2);
    int64_t nb = (p->inner + SM_BLOCK - 1) / SM_BLOCK;
    FM_CPU_PARALLEL
    for (int64_t w = 0; w < p->outer * nb; w++) {
        int64_t o = w / nb, i0 = (w - o * nb) * SM_BLOCK;
        int64_t n = p->inner - i0 < SM_BLOCK ? p->inner - i0 : SM_BLOCK;
        int64_t base = o * p->len * p->inner + i0;
        float sum[SM_BLOCK];
        for (int64_t i = 0; i < n; i++)
            sum[i] = 0.0f;
        for (int64_t l = 0; l < p->len; l++) {
            const float *yr = y + base + l * p->inner, *dr = dy + base + l * p->inner;
            if (p->log) {
                for (int64_t i = 0; i < n; i++)
                    sum[i] += dr[i];
            } else {
                for (int64_t i = 0; i < n; i++)
                    sum[i] += dr[i] * yr[i];
            }
        }
        for (int64_t l = 0; l < p->len; l++) {
            const float *yr = y + base + l * p->inner, *dr = dy + base + l * p->inner;
            float *xr = dx + base + l * p->inner;
            if (p->log) {
                for (int64_t i = 0; i < n; i++)
                    xr[i] = dr[i] - expf(yr[i]) * sum[i];
            } else {
                for (int64_t i = 0; i < n; i++)
                    xr[i] = yr[i] * (dr[i] - sum[i]);
            }
        }
    }
    return FM_OK;
}

/* One row of the last-axis backward, sums in float per block of 1024 and in double across
 * blocks; log-softmax's y is at most 0, so its exponential vectorises. */
#define SM_SUM_BLOCK 1024
FM_CPU_CLONES
static void sm_bwd_row(const float *y, const float *dy, float *dx, int64_t len, bool log)
{
    double sum = 0.0;
    for (int64_t k0 = 0; k0 < len; k0 += SM_SUM_BLOCK) {
        int64_t k1 = k0 + SM_SUM_BLOCK < len ? k0 + SM_SUM_BLOCK : len;
        float part = 0.0f;
        if (log) {
            FM_CPU_SIMD_REDUCE(+ : part)
            for (int64_t k = k0; k < k1; k++)
                part += dy[k];
        } else {
            FM_CPU_SIMD_REDUCE(+ : part)
            for (int64_t k = k0; k < k1; k++)
                part += dy[k] * y[k];
        }
        sum += part;
    }
    const float s = (float)sum;
    if (log) {
        FM_CPU_SIMD
        for (int64_t k = 0; k < len; k++)
            dx[k] = dy[k] - fm_cpu_exp_neg(y[k]) * s;
    } else {
        FM_CPU_SIMD
        for (int64_t k = 0; k < len; k++)
            dx[k] = y[k] * (dy[k] - s);
    }
}

#define SM_PARALLEL_MIN (1 << 15)   /* elements below which the rows stay on one thread */

/* The backward along the last axis: oneDNN 2.6's softmax backward is its reference code
 * (ref:any), 1.3 ms for GPT-2's attention scores of 1536 x 128, 5 times their calibrated time.
 * memories: y, dy, dx, all (outer, L) plain */
static enum fm_status sm_bwd_last(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct sm_priv *p = arg;
    const float *y = fm_cpu_item_f32(it, 0), *dy = fm_cpu_item_f32(it, 1);
    float *dx = fm_cpu_item_f32(it, 2);
    const int64_t rows = p->outer, len = p->len;
    FM_CPU_PARALLEL_IF(rows * len >= SM_PARALLEL_MIN)
    for (int64_t r = 0; r < rows; r++)
        sm_bwd_row(y + r * len, dy + r * len, dx + r * len, len, p->log);
    return FM_OK;
}

static enum fm_status sm_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    int64_t xd[FM_MAX_DIMS];
    int rank = fm_cpu_dims(fm_graph_tensor(s->g, n->in[0]), xd);
    struct sm_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    p->log = n->op == FM_OP_LOG_SOFTMAX;
    p->alg = p->log ? dnnl_softmax_log : dnnl_softmax_accurate;
    int axis = (int)(n->attrs.axis < 0 ? n->attrs.axis + rank : n->attrs.axis);
    p->outer = p->inner = 1;
    p->len = xd[axis];
    for (int i = 0; i < rank; i++) {
        if (i != axis)
            *(i < axis ? &p->outer : &p->inner) *= xd[i];
    }
    enum fm_status st = fm_cpu_ensure(s, n->out[0]);
    if (st)
        return st;
    if (p->inner > 1) {
        dnnl_memory_t mems[2] = {NULL, s->t[n->out[0]].val_mem};
        p->y = mems[1];
        st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, n->in[0], false, &mems[0]);
        return st ? st : fm_cpu_add_fn(s, id, FM_PHASE_FWD, sm_fwd_run, p, mems, 2);
    }
    int64_t dims[2] = {p->outer, p->len};
    fm_cpu_md_plain(&p->md, 2, dims);
    dnnl_softmax_v2_desc_t d;
    dnnl_memory_t m_x;
    FM_DNNL_TRY(s, dnnl_softmax_v2_forward_desc_init(
                       &d, s->train ? dnnl_forward_training : dnnl_forward_inference, p->alg,
                       &p->md, &p->md, 1));
    st = fm_cpu_pd(s, id, &d, NULL, &p->fwd);
    if (!st)
        st = plain_as(s, id, FM_PHASE_FWD, n->in[0], false, &p->md, &m_x);
    if (!st)
        st = plain_as(s, id, FM_PHASE_FWD, n->out[0], false, &p->md, &p->y);
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[2] = {{DNNL_ARG_SRC, m_x}, {DNNL_ARG_DST, p->y}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, p->fwd, args, 2);
    }
out:
    return st;
}

static enum fm_status sm_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct sm_priv *p = s->nodes[id].priv;
    dnnl_memory_t m_dd, m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = FM_OK;
    if (!p->fwd) {
        st = fm_cpu_input_plain(s, id, FM_PHASE_BWD_DATA, n->out[0], true, &m_dd);
        if (!st)
            st = fm_cpu_sink_plain(s, id, FM_PHASE_BWD_DATA, n->in[0], &sk, &m_dx);
        if (st || !m_dx)
            return st;
        dnnl_memory_t mems[3] = {p->y, m_dd, m_dx};
        st = fm_cpu_add_fn(s, id, FM_PHASE_BWD_DATA, sm_bwd_run, p, mems, 3);
        return st ? st : fm_cpu_sink_end(s, &sk);
    }
    st = plain_as(s, id, FM_PHASE_BWD_DATA, n->out[0], true, &p->md, &m_dd);
    if (!st)
        st = sink_as(s, id, FM_PHASE_BWD_DATA, n->in[0], &p->md, &sk, &m_dx);
    if (st || !m_dx)
        return st;
    dnnl_memory_t mems[3] = {p->y, m_dd, m_dx};
    st = fm_cpu_add_fn(s, id, FM_PHASE_BWD_DATA, sm_bwd_last, p, mems, 3);
    return st ? st : fm_cpu_sink_end(s, &sk);
}

/* ---- GroupNorm, InstanceNorm ---- */

struct gn_priv {
    int64_t n, c, groups, cpg;           /* samples, channels, groups, channels per group */
    int64_t spatial;                     /* elements per channel and sample */
    float eps;
    bool has_scale, has_shift;
    float *mean, *rstd;                  /* per (sample, group), kept for the backward */
    /* backward memories: which of dx, dgamma, dbeta the items write */
    bool dx, dgamma, dbeta;
};

/* One group a row with no spatial extent (a LayerNorm's rows, ln_small): the row's statistics
 * and its normalized values in float, vectorized. The general loops below sum in double
 * and take the scale per channel of `spatial` elements, 2-3 ns an element where a row of a
 * few hundred elements needs under one. */
FM_CPU_CLONES
static void row_fwd(const float *restrict x, float *restrict y, const float *restrict gamma,
                    const float *restrict beta, int64_t d, float eps, float *mean_out,
                    float *rstd_out)
{
    float sum = 0.0f;
    FM_CPU_SIMD_REDUCE(+ : sum)
    for (int64_t j = 0; j < d; j++)
        sum += x[j];
    const float mean = sum / (float)d;
    float sq = 0.0f;
    FM_CPU_SIMD_REDUCE(+ : sq)
    for (int64_t j = 0; j < d; j++)
        sq += (x[j] - mean) * (x[j] - mean);
    const float rstd = 1.0f / sqrtf(sq / (float)d + eps);
    *mean_out = mean;
    *rstd_out = rstd;
    FM_CPU_SIMD
    for (int64_t j = 0; j < d; j++)
        y[j] = (x[j] - mean) * rstd * (gamma ? gamma[j] : 1.0f) + (beta ? beta[j] : 0.0f);
}

/* dx of one row: rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma */
FM_CPU_CLONES
static void row_bwd(const float *restrict x, const float *restrict dy, float *restrict dx,
                    const float *restrict gamma, int64_t d, float mean, float rstd)
{
    float sg = 0.0f, sgx = 0.0f;
#ifdef _OPENMP
    _Pragma("omp simd reduction(+ : sg, sgx)")
#endif
    for (int64_t j = 0; j < d; j++) {
        const float g = dy[j] * (gamma ? gamma[j] : 1.0f);
        sg += g;
        sgx += g * (x[j] - mean) * rstd;
    }
    const float mg = sg / (float)d, mgx = sgx / (float)d;
    FM_CPU_SIMD
    for (int64_t j = 0; j < d; j++) {
        const float xhat = (x[j] - mean) * rstd;
        dx[j] = rstd * (dy[j] * (gamma ? gamma[j] : 1.0f) - mg - xhat * mgx);
    }
}

/* dgamma += dy xhat, dbeta += dy over columns [j0, j1) of one row */
FM_CPU_CLONES
static void row_weights(const float *restrict x, const float *restrict dy, float *restrict dg,
                        float *restrict db, int64_t j0, int64_t j1, float mean, float rstd)
{
    if (dg) {
        FM_CPU_SIMD
        for (int64_t j = j0; j < j1; j++)
            dg[j] += dy[j] * (x[j] - mean) * rstd;
    }
    if (db) {
        FM_CPU_SIMD
        for (int64_t j = j0; j < j1; j++)
            db[j] += dy[j];
    }
}

/* whether p is one group a row with no spatial extent: row_fwd and row_bwd */
static bool gn_rows(const struct gn_priv *p)
{
    return p->groups == 1 && p->spatial == 1;
}

/* memories: x, y, then scale and shift when present (all plain) */
static enum fm_status gn_fwd_run(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct gn_priv *p = arg;
    const float *x = fm_cpu_item_f32(it, 0);
    float *y = fm_cpu_item_f32(it, 1);
    int k = 2;
    const float *gamma = p->has_scale ? fm_cpu_item_f32(it, k++) : NULL;
    const float *beta = p->has_shift ? fm_cpu_item_f32(it, k++) : NULL;
    int64_t ng = p->n * p->groups, len = p->cpg * p->spatial;
    if (gn_rows(p)) {
        FM_CPU_PARALLEL_IF(ng * len > 4096)
        for (int64_t r = 0; r < ng; r++)
            row_fwd(x + r * len, y + r * len, gamma, beta, len, p->eps, &p->mean[r], &p->rstd[r]);
        return FM_OK;
    }
    FM_CPU_PARALLEL
    for (int64_t gi = 0; gi < ng; gi++) {
        const float *xg = x + gi * len;
        float *yg = y + gi * len;
        /* two passes in double: groups are thousands of elements */
        double sum = 0.0;
        for (int64_t i = 0; i < len; i++)
            sum += xg[i];
        double mean = sum / (double)len, sq = 0.0;
        for (int64_t i = 0; i < len; i++) {
            double d = xg[i] - mean;
            sq += d * d;
        }
        float rstd = (float)(1.0 / sqrt(sq / (double)len + p->eps));
        float fmean = (float)mean;
        p->mean[gi] = fmean;
        p->rstd[gi] = rstd;
        int64_t c0 = (gi % p->groups) * p->cpg;
        for (int64_t c = 0; c < p->cpg; c++) {
            float a = rstd * (gamma ? gamma[c0 + c] : 1.0f);
            float b = (beta ? beta[c0 + c] : 0.0f) - fmean * a;
            const float *xc = xg + c * p->spatial;
            float *yc = yg + c * p->spatial;
            for (int64_t i = 0; i < p->spatial; i++)
                yc[i] = xc[i] * a + b;
        }
    }
    return FM_OK;
}

/* memories: x, dy, dx, then scale when present */
static enum fm_status gn_bwd_data_run(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct gn_priv *p = arg;
    const float *x = fm_cpu_item_f32(it, 0), *dy = fm_cpu_item_f32(it, 1);
    float *dx = fm_cpu_item_f32(it, 2);
    const float *gamma = p->has_scale ? fm_cpu_item_f32(it, 3) : NULL;
    int64_t ng = p->n * p->groups, len = p->cpg * p->spatial;
    if (gn_rows(p)) {
        FM_CPU_PARALLEL_IF(ng * len > 4096)
        for (int64_t r = 0; r < ng; r++)
            row_bwd(x + r * len, dy + r * len, dx + r * len, gamma, len, p->mean[r], p->rstd[r]);
        return FM_OK;
    }
    FM_CPU_PARALLEL
    for (int64_t gi = 0; gi < ng; gi++) {
        const float *xg = x + gi * len, *dyg = dy + gi * len;
        float *dxg = dx + gi * len;
        float mean = p->mean[gi], rstd = p->rstd[gi];
        int64_t c0 = (gi % p->groups) * p->cpg;
        /* sums of g = dy gamma and of g xhat over the group */
        double sg = 0.0, sgx = 0.0;
        for (int64_t c = 0; c < p->cpg; c++) {
            const float *xc = xg + c * p->spatial, *dyc = dyg + c * p->spatial;
            float sd = 0.0f, sdx = 0.0f;
            for (int64_t i = 0; i < p->spatial; i++) {
                sd += dyc[i];
                sdx += dyc[i] * (xc[i] - mean);
            }
            double gm = gamma ? gamma[c0 + c] : 1.0;
            sg += gm * sd;
            sgx += gm * sdx * rstd;
        }
        float mg = (float)(sg / (double)len), mgx = (float)(sgx / (double)len);
        for (int64_t c = 0; c < p->cpg; c++) {
            float gm = gamma ? gamma[c0 + c] : 1.0f;
            const float *xc = xg + c * p->spatial, *dyc = dyg + c * p->spatial;
            float *dxc = dxg + c * p->spatial;
            for (int64_t i = 0; i < p->spatial; i++) {
                float xhat = (xc[i] - mean) * rstd;
                dxc[i] = rstd * (dyc[i] * gm - mg - xhat * mgx);
            }
        }
    }
    return FM_OK;
}

/* memories: x, dy, then dgamma and/or dbeta as p says */
static enum fm_status gn_bwd_weight_run(struct fm_cpu *s, const struct fm_cpu_item *it,
                                        void *arg)
{
    (void)s;
    const struct gn_priv *p = arg;
    const float *x = fm_cpu_item_f32(it, 0), *dy = fm_cpu_item_f32(it, 1);
    int k = 2;
    float *dgamma = p->dgamma ? fm_cpu_item_f32(it, k++) : NULL;
    float *dbeta = p->dbeta ? fm_cpu_item_f32(it, k++) : NULL;
    if (gn_rows(p)) {
        /* columns in chunks shared among the threads, rows in order within a chunk */
        const int64_t d = p->c, chunk = 256, chunks = (d + chunk - 1) / chunk;
        FM_CPU_PARALLEL_IF(p->n * d > 4096)
        for (int64_t q = 0; q < chunks; q++) {
            const int64_t j0 = q * chunk, j1 = j0 + chunk < d ? j0 + chunk : d;
            for (int64_t j = j0; j < j1; j++) {
                if (dgamma)
                    dgamma[j] = 0.0f;
                if (dbeta)
                    dbeta[j] = 0.0f;
            }
            for (int64_t r = 0; r < p->n; r++)
                row_weights(x + r * d, dy + r * d, dgamma, dbeta, j0, j1, p->mean[r],
                            p->rstd[r]);
        }
        return FM_OK;
    }
    FM_CPU_PARALLEL
    for (int64_t c = 0; c < p->c; c++) {
        double sg = 0.0, sb = 0.0;
        int64_t grp = c / p->cpg;
        for (int64_t b = 0; b < p->n; b++) {
            int64_t gi = b * p->groups + grp;
            const float *xc = x + (b * p->c + c) * p->spatial;
            const float *dyc = dy + (b * p->c + c) * p->spatial;
            float mean = p->mean[gi];
            float sd = 0.0f, sdx = 0.0f;
            for (int64_t i = 0; i < p->spatial; i++) {
                sd += dyc[i];
                sdx += dyc[i] * (xc[i] - mean);
            }
            sb += sd;
            sg += (double)sdx * p->rstd[gi];
        }
        if (dgamma)
            dgamma[c] = (float)sg;
        if (dbeta)
            dbeta[c] = (float)sb;
    }
    return FM_OK;
}

/* The forward of a group normalization of x viewed as (n, c, spatial) in groups of c / groups
 * channels, the scale and shift (inputs 1 and 2, optional) per channel. */
static enum fm_status gn_fwd_as(struct fm_cpu *s, fm_nid id, int64_t n_, int64_t c, int64_t groups,
                                int64_t spatial)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid gamma = opt_in(n, 1), beta = opt_in(n, 2);
    struct gn_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    p->n = n_;
    p->c = c;
    p->groups = groups;
    p->cpg = c / groups;
    p->spatial = spatial;
    p->eps = (float)n->attrs.eps;
    p->has_scale = gamma != FM_NONE;
    p->has_shift = beta != FM_NONE;
    p->mean = fm_cpu_buf(s, sizeof(float) * (size_t)(p->n * p->groups));
    p->rstd = fm_cpu_buf(s, sizeof(float) * (size_t)(p->n * p->groups));
    if (!p->mean || !p->rstd)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    dnnl_memory_t mems[4];
    int nm = 0;
    enum fm_status st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, n->in[0], false, &mems[nm++]);
    if (!st)
        st = fm_cpu_ensure(s, n->out[0]);
    if (!st)
        st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, n->out[0], false, &mems[nm++]);
    if (!st && gamma != FM_NONE)
        st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, gamma, false, &mems[nm++]);
    if (!st && beta != FM_NONE)
        st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, beta, false, &mems[nm++]);
    if (st)
        return st;
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, gn_fwd_run, p, mems, nm);
}

static enum fm_status gn_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const struct fm_shape *xs = &fm_graph_tensor(s->g, n->in[0])->shape;
    int64_t c = xs->dims[1], spatial = 1;
    for (int i = 2; i < xs->rank; i++)
        spatial *= xs->dims[i];
    return gn_fwd_as(s, id, xs->dims[0], c, n->op == FM_OP_INSTANCENORM ? c : n->attrs.groups,
                     spatial);
}

/* A LayerNorm of at most LN_SMALL elements runs as a group normalization of one group a row
 * ((rows, D) as (rows, D, 1), the scale and shift per element of the row): oneDNN 2.6's layer
 * normalization spends 20-25 us on its backward however few the rows (Swin-T's last stage at
 * batch 1, 4 rows of 768, 0.05 ms a step against 0.01 calibrated), the loops a few. */
#define LN_SMALL (1 << 14)

/* Whether LayerNorm node id takes the small path; its (rows, D) in dims either way. */
static bool ln_small(const struct fm_cpu *s, fm_nid id, int64_t dims[2])
{
    ln_dims(s, id, dims);
    return dims[0] * dims[1] <= LN_SMALL;
}

static enum fm_status gn_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct gn_priv *p = s->nodes[id].priv;
    fm_tid gamma = opt_in(n, 1), beta = opt_in(n, 2);
    dnnl_memory_t m_x, m_dy, m_dx, m_dg = NULL, m_db = NULL;
    struct fm_cpu_sink skx, skg, skb;
    enum fm_status st = fm_cpu_input_plain(s, id, FM_PHASE_BWD_DATA, n->in[0], false, &m_x);
    if (!st)
        st = fm_cpu_input_plain(s, id, FM_PHASE_BWD_DATA, n->out[0], true, &m_dy);
    if (!st)
        st = fm_cpu_sink_plain(s, id, fm_cpu_grad_phase(s, n->in[0]), n->in[0], &skx, &m_dx);
    if (!st && m_dx) {
        dnnl_memory_t mems[4] = {m_x, m_dy, m_dx};
        int nm = 3;
        if (gamma != FM_NONE)
            st = fm_cpu_input_plain(s, id, FM_PHASE_BWD_DATA, gamma, false, &mems[nm++]);
        if (!st)
            st = fm_cpu_add_fn(s, id, fm_cpu_grad_phase(s, n->in[0]), gn_bwd_data_run, p, mems,
                               nm);
        if (!st)
            st = fm_cpu_sink_end(s, &skx);
    }
    if (st)
        return st;
    /* the scale and shift gradients: a second item, in the weight phase */
    skg = skb = (struct fm_cpu_sink){id, FM_PHASE_BWD_WEIGHT, FM_NONE, NULL};
    if (gamma != FM_NONE)
        st = fm_cpu_sink_plain(s, id, fm_cpu_grad_phase(s, gamma), gamma, &skg, &m_dg);
    if (!st && beta != FM_NONE)
        st = fm_cpu_sink_plain(s, id, fm_cpu_grad_phase(s, beta), beta, &skb, &m_db);
    if (st || (!m_dg && !m_db))
        return st;
    p->dgamma = m_dg != NULL;
    p->dbeta = m_db != NULL;
    dnnl_memory_t mems[4] = {m_x, m_dy};
    int nm = 2;
    if (m_dg)
        mems[nm++] = m_dg;
    if (m_db)
        mems[nm++] = m_db;
    enum fm_phase ph = fm_cpu_grad_phase(s, m_dg ? gamma : beta);
    if (ph == FM_PHASE_BWD_WEIGHT)
        s->nodes[id].has_bwd_weight = true;
    st = fm_cpu_add_fn(s, id, ph, gn_bwd_weight_run, p, mems, nm);
    if (!st)
        st = fm_cpu_sink_end(s, &skg);
    if (!st)
        st = fm_cpu_sink_end(s, &skb);
    return st;
}

/* ---- dispatch ---- */

enum fm_status fm_cpu_norm_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                 const struct fm_node *n)
{
    const struct fm_shape *x = &fm_graph_tensor(g, n->in[0])->shape;
    if ((n->op == FM_OP_GROUPNORM || n->op == FM_OP_INSTANCENORM) && x->rank < 2)
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (%s): rank %d input; (N, C, ...) "
                        "is needed", n->name, n->op_name, x->rank);
    if (x->rank > 6)
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (%s): rank %d input; the CPU "
                        "backend takes at most 6 dims", n->name, n->op_name, x->rank);
    return FM_OK;
}

enum fm_status fm_cpu_norm_fwd(struct fm_cpu *s, fm_nid id)
{
    switch (fm_graph_node(s->g, id)->op) {
    case FM_OP_LAYERNORM: {
        int64_t dims[2];
        return ln_small(s, id, dims) ? gn_fwd_as(s, id, dims[0], dims[1], 1, 1) : ln_fwd(s, id);
    }
    case FM_OP_SOFTMAX:
    case FM_OP_LOG_SOFTMAX:
        return sm_fwd(s, id);
    default:
        return gn_fwd(s, id);
    }
}

enum fm_status fm_cpu_norm_bwd(struct fm_cpu *s, fm_nid id)
{
    switch (fm_graph_node(s->g, id)->op) {
    case FM_OP_LAYERNORM: {
        int64_t dims[2];
        return ln_small(s, id, dims) ? gn_bwd(s, id) : ln_bwd(s, id);
    }
    case FM_OP_SOFTMAX:
    case FM_OP_LOG_SOFTMAX:
        return sm_bwd(s, id);
    default:
        return gn_bwd(s, id);
    }
}
