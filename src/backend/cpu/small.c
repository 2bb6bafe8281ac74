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
 * is computed in blocks of rows x 16 columns held in registers, at about 50 G multiply-adds
 * a second on one AVX-512 core (Zen 4) and 25-40 on one AVX2 core (the products of RegNetY's
 * squeeze-excitation, 16 x 440 x 110: 34 us forward, 19 and 20 us backward);
 * FM_CPU_SMALL_MACS (2^20) is 20-40 us of that. On 2 cores
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

/* The kernels, once per instruction set (small_kern.h); fm_cpu_small_new picks the widest the
 * CPU has. */
#if defined(__x86_64__) && defined(__GNUC__)
#define SMALL_X86 1
#define SK_VW 16
#define SK_SUFFIX avx512
#define SK_TARGET __attribute__((target("arch=x86-64-v4")))
#include "small_kern.h"
#define SK_VW 8
#define SK_SUFFIX avx2
#define SK_TARGET __attribute__((target("arch=x86-64-v3")))
#include "small_kern.h"
#endif
#define SK_VW 4
#define SK_SUFFIX base
#define SK_TARGET
#include "small_kern.h"

const struct fm_cpu_small_kern *fm_cpu_small_kern(enum fm_cpu_isa isa)
{
    static const struct fm_cpu_small_kern base = {gemm_base, gemm_nt_base};
    if (isa == FM_CPU_ISA_BASE)
        return &base;
#ifdef SMALL_X86
    static const struct fm_cpu_small_kern avx512 = {gemm_avx512, gemm_nt_avx512};
    static const struct fm_cpu_small_kern avx2 = {gemm_avx2, gemm_nt_avx2};
    dnnl_cpu_isa_t cap = dnnl_get_effective_cpu_isa();
    if (isa == FM_CPU_ISA_AVX512 && (cap & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core &&
        __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return &avx512;
    if (isa == FM_CPU_ISA_AVX2 && (cap & dnnl_cpu_isa_avx2) == dnnl_cpu_isa_avx2 &&
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("bmi2"))   /* the rest of x86-64-v3 (movbe...) comes with these */
        return &avx2;
#endif
    return NULL;
}

static const struct fm_cpu_small_kern *small_kern_pick(void)
{
    const struct fm_cpu_small_kern *k = fm_cpu_small_kern(FM_CPU_ISA_AVX512);
    if (!k)
        k = fm_cpu_small_kern(FM_CPU_ISA_AVX2);
    return k ? k : fm_cpu_small_kern(FM_CPU_ISA_BASE);
}

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
    const struct fm_cpu_small_kern *kern;   /* the widest this CPU runs */
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
                               .transposed = transposed, .wt = wt, .tail = tail,
                               .kern = small_kern_pick()};
    fm_cpu_md_plain(&p->wmd, wrank, wdims);
    fm_cpu_md_plain(&p->bmd, 1, &n);
    return p;
}

#define SMALL_INLINE static inline __attribute__((always_inline))

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
        p->kern->gemm_nt(p->rows, p->n, p->k, x, p->xrs, w, y, p->yrs, b);
    } else {
        transpose(p->wt, w, p->n, p->k);
        p->kern->gemm(p->rows, p->n, p->k, x, p->xrs, 1, p->wt, p->n, y, p->yrs, b, p->tail);
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
    p->kern->gemm(p->rows, p->k, p->n, dy, p->yrs, 1, w, p->k, dx, p->xrs, NULL, p->tail);
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
    p->kern->gemm(p->n, p->k, p->rows, dy, 1, p->yrs, x, p->xrs, dw, p->k, NULL, p->tail);
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
