/* Dense products too small for a oneDNN primitive: y (rows, n) = x (rows, k) w^T + b, with its
 * input and weight gradients, by hand, for the 1x1 convolutions of a squeeze-excitation block
 * (on a 1x1 map) and the fully connected layers whose product has at most FM_CPU_SMALL_MACS
 * multiply-adds and whose weight at most FM_CPU_SMALL_WEIGHTS elements.
 *
 * Why: oneDNN 2.6 spends 6-30 us running one of its 1x1 convolution or inner product
 * primitives however little they compute (balancing, scratchpad, a parallel region). An
 * EfficientNet-B0 squeeze-excitation fc of 6 -> 144 channels at batch 32 is 28K multiply-adds a
 * phase, under a microsecond of one core's work here, and took 54 us forward and backward; a
 * ResNet-18 fc of 512 -> 10 at batch 8 took 68 us. Each phase is one serial loop whose result
 * is computed in blocks of 4 rows x 16 columns held in registers, at about 50 G multiply-adds
 * a second on one AVX-512 core; FM_CPU_SMALL_MACS (2^20) is about 20 us of that. On 2 cores
 * this is ahead of oneDNN up to about 1.5M multiply-adds (its primitives' fixed cost is not
 * shared out by threads, so more cores move that point little), but not for a weight read from
 * memory at batch 1: MobileNetV3-Small's classifier (576 -> 1024 -> 1000) took 4.1 ms a step
 * here against 3.2 on oneDNN's two threads, hence the weights' limit.
 *
 * Layouts: x and y keep the layouts the primitive they stand in for chose (so neighbours see
 * no change); fm_cpu_small_layout accepts those that put element (r, c) at r * stride + c, which
 * on a 1x1 map is every plain and channel-blocked layout. Padded channels of y and dx are
 * written as zero, as oneDNN keeps them. The weight (n, k) and the bias (n) are plain. */
#include "cpu.h"

/* Below this many rows the forward reads w as it is, however few its inputs (small_fwd_exec) */
#define SMALL_NT_ROWS 8

struct fm_cpu_small {
    int64_t rows, k, n;
    int64_t kpad, npad;            /* channels with the layout's padding */
    int64_t xrs, yrs;              /* row strides of x and y */
    dnnl_memory_desc_t xmd, ymd;   /* x's and y's layouts */
    dnnl_memory_desc_t wmd, bmd;   /* the weight's and the bias's, plain */
    bool bias;                     /* the forward adds one */
    bool dbias;                    /* the weight gradient writes the bias's */
    bool transposed;               /* the forward's gemm runs over wt (small_fwd_exec) */
    float *wt;                     /* k x n: w transposed, where the forward uses it */
    float *tail;                   /* gemm's last columns: (2 max(rows, k, n) + 1) x 16 */
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
    if (rows < 1 || rows * k * n > FM_CPU_SMALL_MACS || k * n > FM_CPU_SMALL_WEIGHTS ||
        !fm_cpu_small_layout(xmd, &xrs) || !fm_cpu_small_layout(ymd, &yrs) ||
        xmd->dims[1] != k || ymd->dims[1] != n || xmd->dims[0] != rows || ymd->dims[0] != rows)
        return NULL;
    struct fm_cpu_small *p = fm_cpu_buf(s, sizeof(*p));
    bool transposed = k < n && rows >= SMALL_NT_ROWS;
    float *wt = transposed ? fm_cpu_buf(s, sizeof(float) * (size_t)(k * n)) : NULL;
    int64_t most = rows > k ? rows : k;
    most = most > n ? most : n;
    float *tail = fm_cpu_buf(s, sizeof(float) * 16 * (size_t)(2 * most + 1));
    if (!p || (transposed && !wt) || !tail)
        return NULL;
    *p = (struct fm_cpu_small){.rows = rows, .k = k, .n = n, .kpad = xmd->padded_dims[1],
                               .npad = ymd->padded_dims[1], .xrs = xrs, .yrs = yrs,
                               .xmd = *xmd, .ymd = *ymd, .bias = bias,
                               .transposed = transposed, .wt = wt, .tail = tail};
    fm_cpu_md_plain(&p->wmd, wrank, wdims);
    fm_cpu_md_plain(&p->bmd, 1, &n);
    return p;
}

/* Sixteen floats: one AVX-512 register, two AVX2 ones, four SSE ones (GCC lowers the vector
 * type to what the clone compiling it has). v16u reads and writes them at any alignment. */
typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4), may_alias));
#define SMALL_INLINE static inline __attribute__((always_inline))
#define V16(p) (*(const v16u *)(p))
#define V16_STORE(p, v) (*(v16u *)(p) = (v))

/* 16 columns of C (m, 16) = A (m, q) B (q, 16) (+ bias (16) on every row), A's element (i, j)
 * at a[i ars + j acs], B's rows brs apart and C's crs apart. Blocks of 4 rows stay in
 * registers while q runs, so each multiply-add loads only B's 16 floats (broadcasting one of
 * A's). */
SMALL_INLINE void gemm16(int64_t m, int64_t q, const float *a, int64_t ars, int64_t acs,
                         const float *b, int64_t brs, float *c, int64_t crs, const float *bias)
{
    v16 init = {0};
    if (bias)
        init = V16(bias);
    int64_t i0 = 0;
    for (; i0 + 4 <= m; i0 += 4) {
        v16 c0 = init, c1 = init, c2 = init, c3 = init;
        const float *ai = a + i0 * ars, *bj = b;
        for (int64_t t = 0; t < q; t++, ai += acs, bj += brs) {
            v16 bv = V16(bj);
            c0 += ai[0] * bv;
            c1 += ai[ars] * bv;
            c2 += ai[2 * ars] * bv;
            c3 += ai[3 * ars] * bv;
        }
        V16_STORE(c + i0 * crs, c0);
        V16_STORE(c + (i0 + 1) * crs, c1);
        V16_STORE(c + (i0 + 2) * crs, c2);
        V16_STORE(c + (i0 + 3) * crs, c3);
    }
    for (; i0 < m; i0++) {
        v16 c0 = init;
        const float *ai = a + i0 * ars, *bj = b;
        for (int64_t t = 0; t < q; t++, ai += acs, bj += brs)
            c0 += ai[0] * V16(bj);
        V16_STORE(c + i0 * crs, c0);
    }
}

/* C (m, p) = A (m, q) B (q, p) (+ bias (p)), in blocks of 16 columns; the last p % 16 columns
 * through `tail` ((q + m + 1) x 16 floats): B's and the bias's columns copied there padded with
 * zeros, the block computed into it, its valid columns copied out. */
SMALL_INLINE void gemm(int64_t m, int64_t p, int64_t q, const float *a, int64_t ars, int64_t acs,
                       const float *b, int64_t brs, float *c, int64_t crs, const float *bias,
                       float *tail)
{
    int64_t p16 = p - p % 16, rem = p - p16;
    for (int64_t j0 = 0; j0 < p16; j0 += 16)
        gemm16(m, q, a, ars, acs, b + j0, brs, c + j0, crs, bias ? bias + j0 : NULL);
    if (!rem)
        return;
    float *bt = tail, *ct = tail + q * 16, *bb = ct + m * 16;
    for (int64_t t = 0; t < q; t++)
        for (int64_t l = 0; l < 16; l++)
            bt[t * 16 + l] = l < rem ? b[t * brs + p16 + l] : 0.0f;
    for (int64_t l = 0; l < 16; l++)
        bb[l] = bias && l < rem ? bias[p16 + l] : 0.0f;
    gemm16(m, q, a, ars, acs, bt, 16, ct, 16, bias ? bb : NULL);
    for (int64_t i = 0; i < m; i++)
        for (int64_t l = 0; l < rem; l++)
            c[i * crs + p16 + l] = ct[i * 16 + l];
}

/* out (cols, rows) = in (rows, cols) transposed, in tiles of 16 x 16: row by row, every
 * write of a wide matrix went to another page (a 1024 x 576 weight took 3 ms, 0.8 GB/s) */
SMALL_INLINE void transpose(float *restrict out, const float *restrict in, int64_t rows,
                            int64_t cols)
{
    for (int64_t r0 = 0; r0 < rows; r0 += 16) {
        int64_t r1 = r0 + 16 < rows ? r0 + 16 : rows;
        for (int64_t c0 = 0; c0 < cols; c0 += 16) {
            int64_t c1 = c0 + 16 < cols ? c0 + 16 : cols;
            for (int64_t c = c0; c < c1; c++)
                for (int64_t r = r0; r < r1; r++)
                    out[c * rows + r] = in[r * cols + c];
        }
    }
}

SMALL_INLINE void zero(float *v, int64_t lo, int64_t hi)
{
    for (int64_t i = lo; i < hi; i++)
        v[i] = 0.0f;
}

/* y (m, n) = x (m, k) w^T + b (or none), w (n, k) as it is: 4 rows of x against 4 of w at a
 * time, each pair's 16 lanes of partial sums in a register while k runs, summed at the end. */
SMALL_INLINE void gemm_nt(int64_t m, int64_t n, int64_t k, const float *x, int64_t xrs,
                          const float *w, float *y, int64_t yrs, const float *b)
{
    int64_t k16 = k - k % 16;
    for (int64_t i0 = 0; i0 < m; i0 += 4) {
        const float *xr[4];   /* past the last row: the last row again, not stored */
        for (int i = 0; i < 4; i++)
            xr[i] = x + (i0 + i < m ? i0 + i : m - 1) * xrs;
        for (int64_t j0 = 0; j0 < n; j0 += 4) {
            const float *wr[4];
            for (int j = 0; j < 4; j++)
                wr[j] = w + (j0 + j < n ? j0 + j : n - 1) * k;
            v16 a00 = {0}, a01 = {0}, a02 = {0}, a03 = {0}, a10 = {0}, a11 = {0}, a12 = {0},
                a13 = {0}, a20 = {0}, a21 = {0}, a22 = {0}, a23 = {0}, a30 = {0}, a31 = {0},
                a32 = {0}, a33 = {0};
            for (int64_t t = 0; t < k16; t += 16) {
                v16 w0 = V16(wr[0] + t), w1 = V16(wr[1] + t), w2 = V16(wr[2] + t);
                v16 w3 = V16(wr[3] + t);
                v16 x0 = V16(xr[0] + t);
                a00 += x0 * w0, a01 += x0 * w1, a02 += x0 * w2, a03 += x0 * w3;
                v16 x1 = V16(xr[1] + t);
                a10 += x1 * w0, a11 += x1 * w1, a12 += x1 * w2, a13 += x1 * w3;
                v16 x2 = V16(xr[2] + t);
                a20 += x2 * w0, a21 += x2 * w1, a22 += x2 * w2, a23 += x2 * w3;
                v16 x3 = V16(xr[3] + t);
                a30 += x3 * w0, a31 += x3 * w1, a32 += x3 * w2, a33 += x3 * w3;
            }
            v16 acc[4][4] = {{a00, a01, a02, a03}, {a10, a11, a12, a13},
                             {a20, a21, a22, a23}, {a30, a31, a32, a33}};
            for (int i = 0; i < 4 && i0 + i < m; i++) {
                for (int j = 0; j < 4 && j0 + j < n; j++) {
                    float sum = b ? b[j0 + j] : 0.0f;
                    for (int l = 0; l < 16; l++)
                        sum += acc[i][j][l];
                    for (int64_t t = k16; t < k; t++)
                        sum += xr[i][t] * wr[j][t];
                    y[(i0 + i) * yrs + j0 + j] = sum;
                }
            }
        }
    }
}

/* Forward: y = x w^T. With k at least n, or fewer than SMALL_NT_ROWS rows, gemm_nt over w as
 * it is; with fewer inputs than outputs (a squeeze-excitation's expanding fc: too few for
 * gemm_nt's 16 lanes) and rows enough to repay the copy, the gemm over a transposed copy of w.
 * Measured on one Zen 4 core: 32 x 480 -> 20 in 9 us (20 by the transposed gemm), 32 x 52 ->
 * 208 in 11 us (35 by gemm_nt). At batch 1 the copy is the whole cost: MobileNetV3-Small's
 * 576 -> 1024 classifier took 3.3 ms forward with it (see bench/RESULTS.md).
 * items: x, w, y, b (or none) */
FM_CPU_CLONES
static enum fm_status small_fwd_exec(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct fm_cpu_small *p = arg;
    const float *x = fm_cpu_item_f32(it, 0), *w = fm_cpu_item_f32(it, 1);
    const float *b = p->bias ? fm_cpu_item_f32(it, 3) : NULL;
    float *y = fm_cpu_item_f32(it, 2);
    if (!p->transposed) {
        gemm_nt(p->rows, p->n, p->k, x, p->xrs, w, y, p->yrs, b);
    } else {
        transpose(p->wt, w, p->n, p->k);
        gemm(p->rows, p->n, p->k, x, p->xrs, 1, p->wt, p->n, y, p->yrs, b, p->tail);
    }
    for (int64_t r = 0; r < p->rows; r++)
        zero(y + r * p->yrs, p->n, p->npad);
    return FM_OK;
}

/* dx (rows, k) = dy (rows, n) w: the gemm over w as it is. items: dy, w, dx */
FM_CPU_CLONES
static enum fm_status small_bwd_data_exec(struct fm_cpu *s, const struct fm_cpu_item *it,
                                          void *arg)
{
    (void)s;
    const struct fm_cpu_small *p = arg;
    const float *dy = fm_cpu_item_f32(it, 0), *w = fm_cpu_item_f32(it, 1);
    float *dx = fm_cpu_item_f32(it, 2);
    gemm(p->rows, p->k, p->n, dy, p->yrs, 1, w, p->k, dx, p->xrs, NULL, p->tail);
    for (int64_t r = 0; r < p->rows; r++)
        zero(dx + r * p->xrs, p->k, p->kpad);
    return FM_OK;
}

/* dw (n, k) = dy^T x, the gemm reading dy by columns; db (n) = the rows of dy summed.
 * items: x, dy, dw, db (or none) */
FM_CPU_CLONES
static enum fm_status small_bwd_weights_exec(struct fm_cpu *s, const struct fm_cpu_item *it,
                                             void *arg)
{
    (void)s;
    const struct fm_cpu_small *p = arg;
    const float *x = fm_cpu_item_f32(it, 0), *dy = fm_cpu_item_f32(it, 1);
    float *dw = fm_cpu_item_f32(it, 2), *db = p->dbias ? fm_cpu_item_f32(it, 3) : NULL;
    gemm(p->n, p->k, p->rows, dy, 1, p->yrs, x, p->xrs, dw, p->k, NULL, p->tail);
    if (db) {
        zero(db, 0, p->n);
        for (int64_t r = 0; r < p->rows; r++) {
            const float *gr = dy + r * p->yrs;
            FM_CPU_SIMD
            for (int64_t j = 0; j < p->n; j++)
                db[j] += gr[j];
        }
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
