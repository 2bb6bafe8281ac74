/* Dense products too small for a oneDNN primitive: y (rows, n) = x (rows, k) w^T + b, with its
 * input and weight gradients, by hand, for the 1x1 convolutions of a squeeze-excitation block
 * (on a 1x1 map) and the fully connected layers whose product has at most FM_CPU_SMALL_MACS
 * multiply-adds.
 *
 * Why: oneDNN 2.6 spends 6-30 us running one of its 1x1 convolution or inner product
 * primitives however little they compute (balancing, scratchpad, a parallel region). An
 * EfficientNet-B0 squeeze-excitation fc of 6 -> 144 channels at batch 32 is 28K multiply-adds a
 * phase, about 2 us of one core's work, and took 54 us forward and backward; a ResNet-18 fc of
 * 512 -> 10 at batch 8 took 65 us. Here each phase is one serial loop over contiguous rows.
 *
 * Layouts: x and y keep the layouts the primitive they stand in for chose (so neighbours see
 * no change); fm_cpu_small_layout accepts those that put element (r, c) at r * stride + c, which
 * on a 1x1 map is every plain and channel-blocked layout. Padded channels of y and dx are
 * written as zero, as oneDNN keeps them. The weight (n, k) and the bias (n) are plain. */
#include "cpu.h"

struct fm_cpu_small {
    int64_t rows, k, n;
    int64_t kpad, npad;            /* channels with the layout's padding */
    int64_t xrs, yrs;              /* row strides of x and y */
    dnnl_memory_desc_t xmd, ymd;   /* x's and y's layouts */
    dnnl_memory_desc_t wmd, bmd;   /* the weight's and the bias's, plain */
    bool bias;                     /* the forward adds one */
    bool dbias;                    /* the weight gradient writes the bias's */
    float *wt;                     /* k x n: w transposed, or dw's transpose */
};

bool fm_cpu_small_layout(const dnnl_memory_desc_t *md, int64_t *rs)
{
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    if (md->format_kind != dnnl_blocked || md->data_type != dnnl_f32 || md->ndims < 2 ||
        md->offset0 != 0 || md->padded_dims[0] != md->dims[0])
        return false;
    for (int i = 2; i < md->ndims; i++)
        if (md->dims[i] != 1)
            return false;
    if (b->inner_nblks == 0) {
        if (b->strides[1] != 1)
            return false;
    } else if (b->inner_nblks != 1 || b->inner_idxs[0] != 1 ||
               b->strides[1] != b->inner_blks[0]) {
        return false;
    }
    *rs = b->strides[0];
    return true;
}

struct fm_cpu_small *fm_cpu_small_new(struct fm_cpu *s, int64_t rows, int64_t k, int64_t n,
                                      const dnnl_memory_desc_t *xmd,
                                      const dnnl_memory_desc_t *ymd, int wrank,
                                      const int64_t *wdims, bool bias)
{
    int64_t xrs, yrs;
    if (rows < 1 || rows * k * n > FM_CPU_SMALL_MACS || !fm_cpu_small_layout(xmd, &xrs) ||
        !fm_cpu_small_layout(ymd, &yrs) || xmd->dims[1] != k || ymd->dims[1] != n ||
        xmd->dims[0] != rows || ymd->dims[0] != rows)
        return NULL;
    struct fm_cpu_small *p = fm_cpu_buf(s, sizeof(*p));
    float *wt = fm_cpu_buf(s, sizeof(float) * (size_t)(k * n));
    if (!p || !wt)
        return NULL;
    *p = (struct fm_cpu_small){.rows = rows, .k = k, .n = n, .kpad = xmd->padded_dims[1],
                               .npad = ymd->padded_dims[1], .xrs = xrs, .yrs = yrs,
                               .xmd = *xmd, .ymd = *ymd, .bias = bias, .wt = wt};
    fm_cpu_md_plain(&p->wmd, wrank, wdims);
    fm_cpu_md_plain(&p->bmd, 1, &n);
    return p;
}

/* y[0, len) += a x[0, len) */
static inline void axpy(float *restrict y, float a, const float *restrict x, int64_t len)
{
    FM_CPU_SIMD
    for (int64_t i = 0; i < len; i++)
        y[i] += a * x[i];
}

/* the sum of a[i] b[i] over [0, len), in 16 lanes (each its own sum, so it vectorizes
 * without reassociating) */
static inline float dot(const float *restrict a, const float *restrict b, int64_t len)
{
    float acc[16] = {0};
    int64_t i = 0;
    for (; i + 16 <= len; i += 16)
        for (int l = 0; l < 16; l++)
            acc[l] += a[i + l] * b[i + l];
    float sum = 0.0f;
    for (int l = 0; l < 16; l++)
        sum += acc[l];
    for (; i < len; i++)
        sum += a[i] * b[i];
    return sum;
}

/* out (cols, rows) = in (rows, cols) transposed */
static inline void transpose(float *restrict out, const float *restrict in, int64_t rows,
                             int64_t cols)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++)
            out[c * rows + r] = in[r * cols + c];
}

static inline void zero(float *v, int64_t lo, int64_t hi)
{
    for (int64_t i = lo; i < hi; i++)
        v[i] = 0.0f;
}

/* Each phase's inner loop runs over the longer of the two channel counts: axpy over rows of a
 * (transposed) weight, or dot products along them. items: x, w, y, b (or none) */
FM_CPU_CLONES
static enum fm_status small_fwd_exec(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct fm_cpu_small *p = arg;
    const float *x = fm_cpu_item_f32(it, 0), *w = fm_cpu_item_f32(it, 1);
    const float *b = p->bias ? fm_cpu_item_f32(it, 3) : NULL;
    float *y = fm_cpu_item_f32(it, 2);
    if (p->n >= p->k)
        transpose(p->wt, w, p->n, p->k);
    for (int64_t r = 0; r < p->rows; r++) {
        const float *xr = x + r * p->xrs;
        float *yr = y + r * p->yrs;
        if (p->n >= p->k) {
            for (int64_t j = 0; j < p->n; j++)
                yr[j] = b ? b[j] : 0.0f;
            for (int64_t c = 0; c < p->k; c++)
                axpy(yr, xr[c], p->wt + c * p->n, p->n);
        } else {
            for (int64_t j = 0; j < p->n; j++)
                yr[j] = (b ? b[j] : 0.0f) + dot(w + j * p->k, xr, p->k);
        }
        zero(yr, p->n, p->npad);
    }
    return FM_OK;
}

/* dx (rows, k) = dy (rows, n) w. items: dy, w, dx */
FM_CPU_CLONES
static enum fm_status small_bwd_data_exec(struct fm_cpu *s, const struct fm_cpu_item *it,
                                          void *arg)
{
    (void)s;
    const struct fm_cpu_small *p = arg;
    const float *dy = fm_cpu_item_f32(it, 0), *w = fm_cpu_item_f32(it, 1);
    float *dx = fm_cpu_item_f32(it, 2);
    if (p->k < p->n)
        transpose(p->wt, w, p->n, p->k);
    for (int64_t r = 0; r < p->rows; r++) {
        const float *gr = dy + r * p->yrs;
        float *dr = dx + r * p->xrs;
        if (p->k >= p->n) {
            zero(dr, 0, p->k);
            for (int64_t j = 0; j < p->n; j++)
                axpy(dr, gr[j], w + j * p->k, p->k);
        } else {
            for (int64_t c = 0; c < p->k; c++)
                dr[c] = dot(p->wt + c * p->n, gr, p->n);
        }
        zero(dr, p->k, p->kpad);
    }
    return FM_OK;
}

/* dw (n, k) = dy^T x, db (n) = the rows of dy summed. items: x, dy, dw, db (or none) */
FM_CPU_CLONES
static enum fm_status small_bwd_weights_exec(struct fm_cpu *s, const struct fm_cpu_item *it,
                                             void *arg)
{
    (void)s;
    const struct fm_cpu_small *p = arg;
    const float *x = fm_cpu_item_f32(it, 0), *dy = fm_cpu_item_f32(it, 1);
    float *dw = fm_cpu_item_f32(it, 2), *db = p->dbias ? fm_cpu_item_f32(it, 3) : NULL;
    if (p->k >= p->n) {
        for (int64_t j = 0; j < p->n; j++) {
            float *dj = dw + j * p->k;
            zero(dj, 0, p->k);
            for (int64_t r = 0; r < p->rows; r++)
                axpy(dj, dy[r * p->yrs + j], x + r * p->xrs, p->k);
        }
    } else {
        zero(p->wt, 0, p->k * p->n);
        for (int64_t r = 0; r < p->rows; r++) {
            const float *xr = x + r * p->xrs, *gr = dy + r * p->yrs;
            for (int64_t c = 0; c < p->k; c++)
                axpy(p->wt + c * p->n, xr[c], gr, p->n);
        }
        transpose(dw, p->wt, p->k, p->n);
    }
    if (db) {
        zero(db, 0, p->n);
        for (int64_t r = 0; r < p->rows; r++)
            axpy(db, 1.0f, dy + r * p->yrs, p->n);
    }
    return FM_OK;
}

enum fm_status fm_cpu_small_fwd(struct fm_cpu *s, fm_nid id, const struct fm_cpu_small *p,
                                fm_tid x, fm_tid w, fm_tid b, fm_tid y)
{
    dnnl_memory_t mems[4] = {NULL, NULL, NULL, NULL};
    enum fm_status st = fm_cpu_input(s, id, FM_PHASE_FWD, x, false, &p->xmd, &mems[0]);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, w, false, &p->wmd, &mems[1]);
    if (!st && p->bias)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, b, false, &p->bmd, &mems[3]);
    if (!st)
        st = fm_cpu_place(s, y, &p->ymd);
    if (st)
        return st;
    mems[2] = s->t[y].val_mem;
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, small_fwd_exec, (void *)p, mems, p->bias ? 4 : 3);
}

enum fm_status fm_cpu_small_bwd_data(struct fm_cpu *s, fm_nid id, const struct fm_cpu_small *p,
                                     fm_tid x, fm_tid w, fm_tid y)
{
    dnnl_memory_t mems[3] = {NULL, NULL, NULL};
    struct fm_cpu_sink sk;
    enum fm_status st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, y, true, &p->ymd, &mems[0]);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, w, false, &p->wmd, &mems[1]);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, x, &p->xmd, &sk, &mems[2]);
    if (!st)
        st = fm_cpu_add_fn(s, id, FM_PHASE_BWD_DATA, small_bwd_data_exec, (void *)p, mems, 3);
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
    return st;
}

enum fm_status fm_cpu_small_bwd_weights(struct fm_cpu *s, fm_nid id, struct fm_cpu_small *p,
                                        fm_tid x, fm_tid w, fm_tid b, bool want_bias, fm_tid y)
{
    p->dbias = want_bias;
    enum fm_phase ph = FM_PHASE_BWD_WEIGHT;
    dnnl_memory_t mems[4] = {NULL, NULL, NULL, NULL};
    struct fm_cpu_sink skw, skb = {id, ph, FM_NONE, NULL};
    enum fm_status st = fm_cpu_input(s, id, ph, x, false, &p->xmd, &mems[0]);
    if (!st)
        st = fm_cpu_input(s, id, ph, y, true, &p->ymd, &mems[1]);
    if (!st)
        st = fm_cpu_sink_begin(s, id, ph, w, &p->wmd, &skw, &mems[2]);
    if (!st && !mems[2])   /* a frozen weight with a trainable bias */
        st = fm_cpu_mem_scratch(s, &p->wmd, &mems[2]);
    if (!st && want_bias)
        st = fm_cpu_sink_begin(s, id, ph, b, &p->bmd, &skb, &mems[3]);
    if (!st)
        st = fm_cpu_add_fn(s, id, ph, small_bwd_weights_exec, p, mems, want_bias ? 4 : 3);
    if (!st)
        st = fm_cpu_sink_end(s, &skw);
    if (!st)
        st = fm_cpu_sink_end(s, &skb);
    return st;
}
