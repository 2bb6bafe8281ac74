/* Matrix products on oneDNN matmul: MatMul (batched, numpy broadcasting of batch dims, 1-D
 * operands), Einsum with one or two operands, fused scaled dot-product Attention, and the Gemm
 * forms linear.c leaves (transposed A, alpha and beta, C broadcast, no C).
 *
 * Everything is said in einsum terms. An operand is a "term": a plain buffer whose dims carry
 * labels, with a stride per dim. A dim of size 1 carries nothing (it is broadcast, or has
 * nothing to sum), so broadcasting falls out of the labels. A two-operand product
 * Y = scale * sum over the contracted labels of A * B (mm_einsum) becomes one oneDNN matmul
 *     src (batch..., M, K) x weights (batch..., K, N) -> dst (batch..., M, N)
 * whose memory descriptors are strided views of the operands' own bytes: transposes and
 * permutations are strides, not copies; every label of Y but the innermost of A's and of B's
 * becomes a batch dim (broadcast, size 1, in the operand that lacks it). Copies happen only
 * where oneDNN's one K dim cannot span several labels in place (they are then gathered into a
 * contiguous scratch buffer by a reorder). A label only one operand has is summed out of it
 * first (oneDNN reduction); a label only Y has is broadcast into Y afterwards. With these, every
 * gradient is again an einsum: dA = einsum(dY, B -> A), dB = einsum(A, dY -> B), which is how
 * MatMul reduces the gradient of a broadcast operand over its batch dims. One-operand einsums
 * (mm_unary) are a reduction, a permuting reorder, or a broadcast copy (their gradient).
 *
 * Attention runs the math algorithm: S = scale * Q K^T (matmul with an output scale), masks
 * (causal, boolean: -inf where masked; float: added) in one pass, softmax in place (oneDNN
 * softmax_v2), O = A V. A (the probabilities) is kept for the backward: dV = A^T dO,
 * dA = dO V^T, dS = softmax backward, dQ = scale dS K, dK = scale dS^T Q, and a learned mask's
 * gradient is dS summed to its shape. Not here: einsum diagonals (a label twice in one term). */
#include "cpu.h"

#include <math.h>
#include <stdint.h>

#define MM_MAXD FM_MAX_DIMS
#define MM_MAX_NDIMS 12   /* oneDNN's DNNL_MAX_NDIMS */

/* ---- terms ---- */

struct term {
    int rank;
    int lab[MM_MAXD];
    int64_t dims[MM_MAXD];
    int64_t strides[MM_MAXD];   /* in elements */
    dnnl_memory_t mem;          /* its bytes (any descriptor: views are made from its data) */
};

static void term_init(struct term *t, int rank, const int *lab, const int64_t *dims,
                      dnnl_memory_t mem)
{
    t->rank = rank;
    int64_t st = 1;
    for (int i = rank - 1; i >= 0; i--) {
        t->lab[i] = lab[i];
        t->dims[i] = dims[i];
        t->strides[i] = st;
        st *= dims[i];
    }
    t->mem = mem;
}

/* A tensor's dims with labels. */
static void term_of(const struct fm_cpu *s, fm_tid tid, const int *lab, dnnl_memory_t mem,
                    struct term *t)
{
    const struct fm_tensor *ft = fm_graph_tensor(s->g, tid);
    term_init(t, ft->shape.rank, lab, ft->shape.dims, mem);
}

/* The dim of t carrying label l (size above 1), or -1. */
static int term_find(const struct term *t, int l)
{
    for (int i = 0; i < t->rank; i++) {
        if (t->lab[i] == l && t->dims[i] > 1)
            return i;
    }
    return -1;
}

static int64_t term_numel(const struct term *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

/* A view of t's bytes with ndims dims and strides (oneDNN wants at least one dim). */
static enum fm_status view_md(struct fm_cpu *s, dnnl_memory_t mem, int nd, const int64_t *dims,
                              const int64_t *strides, dnnl_memory_t *out)
{
    dnnl_dims_t d, st;
    int k = nd ? nd : 1;
    for (int i = 0; i < k; i++) {
        d[i] = nd ? dims[i] : 1;
        st[i] = nd ? strides[i] : 1;
    }
    dnnl_memory_desc_t md;
    dnnl_status_t r = dnnl_memory_desc_init_by_strides(&md, k, d, dnnl_f32, st);
    if (r != dnnl_success)
        return fm_cpu_dnnl_error(s, r, "dnnl_memory_desc_init_by_strides", __FILE__, __LINE__);
    return fm_cpu_mem_view(s, mem, &md, out);
}

/* A new scratch term: t's labels and dims (size-1 where drop says), contiguous. */
static enum fm_status term_scratch(struct fm_cpu *s, const struct term *t, const bool *drop,
                                   struct term *out)
{
    int64_t dims[MM_MAXD];
    for (int i = 0; i < t->rank; i++)
        dims[i] = drop && drop[i] ? 1 : t->dims[i];
    term_init(out, t->rank, t->lab, dims, NULL);
    int64_t n = term_numel(out);
    dnnl_memory_desc_t md;
    fm_cpu_md_plain(&md, 1, &n);
    return fm_cpu_mem_scratch(s, &md, &out->mem);
}

/* ---- items ---- */

/* dst = alpha * src (+ dst when add), src read with a stride per dst dim (0: broadcast). */
struct bcast_arg {
    int rank;
    int64_t dims[MM_MAXD];
    int64_t sstride[MM_MAXD];
    int64_t rows, inner;
    float alpha;
    bool add;
};

static enum fm_status bcast_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct bcast_arg *a = arg;
    const float *src = fm_cpu_item_f32(it, 0);
    float *dst = fm_cpu_item_f32(it, 1);
    int64_t inner = a->inner, is = a->rank ? a->sstride[a->rank - 1] : 0;
    FM_CPU_PARALLEL
    for (int64_t r = 0; r < a->rows; r++) {
        int64_t off = 0, q = r;
        for (int d = a->rank - 2; d >= 0; d--) {
            int64_t qq = q / a->dims[d];
            off += (q - qq * a->dims[d]) * a->sstride[d];
            q = qq;
        }
        const float *sp = src + off;
        float *dp = dst + r * inner;
        if (a->add) {
            for (int64_t j = 0; j < inner; j++)
                dp[j] += a->alpha * sp[j * is];
        } else {
            for (int64_t j = 0; j < inner; j++)
                dp[j] = a->alpha * sp[j * is];
        }
    }
    return FM_OK;
}

/* Appends dst (contiguous over its dims) = alpha * src (+ dst): src's strides are looked up
 * per dst label; a label src lacks is broadcast. */
static enum fm_status add_bcast(struct fm_cpu *s, fm_nid id, enum fm_phase ph,
                                const struct term *src, const struct term *dst, float alpha,
                                bool add)
{
    struct bcast_arg *a = fm_cpu_buf(s, sizeof(*a));
    if (!a)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    a->rank = dst->rank;
    a->rows = 1;
    a->inner = dst->rank ? dst->dims[dst->rank - 1] : 1;
    for (int i = 0; i < dst->rank; i++) {
        int k = dst->dims[i] > 1 ? term_find(src, dst->lab[i]) : -1;
        a->dims[i] = dst->dims[i];
        a->sstride[i] = k >= 0 ? src->strides[k] : 0;
        if (i < dst->rank - 1)
            a->rows *= dst->dims[i];
    }
    a->alpha = alpha;
    a->add = add;
    dnnl_memory_t mems[2] = {src->mem, dst->mem};
    return fm_cpu_add_fn(s, id, ph, bcast_fn, a, mems, 2);
}

/* ---- sums over leading dims: a bias's gradient ----
 * x (rows, cols) dense, summed over its rows into y (cols): what a Gemm's or a Linear-as-MatMul's
 * bias gradient is. oneDNN 2.6 runs that reduction in its reference code (ref:any): 4.3 ms for
 * GPT-2's (128, 3072), 114 ms of a 1x128 step's 940 over its 48 projections. Columns go to the
 * threads in blocks; each block sums rows in float partials of ROWSUM_CHUNK rows, added in
 * double. */
#define ROWSUM_COLS 128
#define ROWSUM_CHUNK 256

struct rowsum_arg {
    int64_t rows, cols;
};

FM_CPU_CLONES
static void rowsum_block(const float *x, float *y, int64_t rows, int64_t cols, int64_t nc)
{
    double total[ROWSUM_COLS] = {0};
    float part[ROWSUM_COLS];
    for (int64_t r0 = 0; r0 < rows; r0 += ROWSUM_CHUNK) {
        int64_t r1 = r0 + ROWSUM_CHUNK < rows ? r0 + ROWSUM_CHUNK : rows;
        for (int64_t j = 0; j < nc; j++)
            part[j] = 0.0f;
        for (int64_t r = r0; r < r1; r++) {
            const float *row = x + r * cols;
            FM_CPU_SIMD
            for (int64_t j = 0; j < nc; j++)
                part[j] += row[j];
        }
        for (int64_t j = 0; j < nc; j++)
            total[j] += part[j];
    }
    for (int64_t j = 0; j < nc; j++)
        y[j] = (float)total[j];
}

/* memories: x, y */
static enum fm_status rowsum_run(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct rowsum_arg *a = arg;
    const float *x = fm_cpu_item_f32(it, 0);
    float *y = fm_cpu_item_f32(it, 1);
    const int64_t nb = (a->cols + ROWSUM_COLS - 1) / ROWSUM_COLS;
    FM_CPU_PARALLEL_IF(a->rows * a->cols >= (1 << 15))
    for (int64_t b = 0; b < nb; b++) {
        int64_t j0 = b * ROWSUM_COLS;
        int64_t nc = a->cols - j0 < ROWSUM_COLS ? a->cols - j0 : ROWSUM_COLS;
        rowsum_block(x + j0, y + j0, a->rows, a->cols, nc);
    }
    return FM_OK;
}

/* Whether summing t's dims that drop marks is a sum over leading rows: t dense row-major and
 * every dropped dim (of size above 1) outside every kept one. Sets the rows and columns. */
static bool rowsum_form(const struct term *t, const bool *drop, int64_t *rows, int64_t *cols)
{
    int64_t str = 1;
    bool kept_seen = false;
    *rows = *cols = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        if (t->dims[i] <= 1)
            continue;
        if (t->strides[i] != str)
            return false;
        str *= t->dims[i];
        if (drop[i]) {
            *rows *= t->dims[i];
        } else {
            if (*rows > 1)
                return false;   /* a kept dim outside a dropped one */
            kept_seen = true;
            *cols *= t->dims[i];
        }
    }
    return kept_seen && *rows > 1;
}

/* Sums the dims of t that drop marks (into scratch, or into `into`); t becomes the result. */
static enum fm_status reduce_term(struct fm_cpu *s, fm_nid id, enum fm_phase ph, struct term *t,
                                  const bool *drop, const struct term *into)
{
    struct term r;
    enum fm_status st = FM_OK;
    if (into) {
        r = *into;
    } else {
        st = term_scratch(s, t, drop, &r);
        if (st)
            return st;
    }
    int nd = t->rank;
    dnnl_dims_t sd, ss, dd, ds;
    for (int i = 0; i < nd; i++) {
        sd[i] = t->dims[i];
        ss[i] = t->strides[i];
        dd[i] = drop[i] ? 1 : t->dims[i];
    }
    int64_t str = 1;
    for (int i = nd - 1; i >= 0; i--) {
        ds[i] = str;
        str *= dd[i];
    }
    int64_t rows, cols;
    if (rowsum_form(t, drop, &rows, &cols)) {
        struct rowsum_arg *a = fm_cpu_buf(s, sizeof(*a));
        if (!a)
            return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
        a->rows = rows;
        a->cols = cols;
        dnnl_memory_t mems[2] = {t->mem, r.mem};
        st = fm_cpu_add_fn(s, id, ph, rowsum_run, a, mems, 2);
        if (!st)
            term_init(t, nd, t->lab, (const int64_t *)dd, r.mem);
        return st;
    }
    dnnl_memory_desc_t smd, dmd;
    dnnl_reduction_desc_t rd;
    dnnl_primitive_desc_t pd;
    dnnl_memory_t ms, md;
    FM_DNNL_TRY(s, dnnl_memory_desc_init_by_strides(&smd, nd, sd, dnnl_f32, ss));
    FM_DNNL_TRY(s, dnnl_memory_desc_init_by_strides(&dmd, nd, dd, dnnl_f32, ds));
    FM_DNNL_TRY(s, dnnl_reduction_desc_init(&rd, dnnl_reduction_sum, &smd, &dmd, 0.0f, 0.0f));
    st = fm_cpu_pd(s, id, &rd, NULL, &pd);
    if (!st)
        st = fm_cpu_mem_view(s, t->mem, &smd, &ms);
    if (!st)
        st = fm_cpu_mem_view(s, r.mem, &dmd, &md);
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[2] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_DST, md}};
        st = fm_cpu_add_prim(s, id, ph, pd, args, 2);
    }
    if (!st) {
        term_init(t, nd, t->lab, (const int64_t *)dd, r.mem);
    }
out:
    return st;
}

/* Gathers t into contiguous scratch, its dims nested in the order `order` (outer first). */
static enum fm_status contiguous(struct fm_cpu *s, fm_nid id, enum fm_phase ph, struct term *t,
                                 const int *order)
{
    struct term c;
    enum fm_status st = term_scratch(s, t, NULL, &c);
    if (st)
        return st;
    int64_t str = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        c.strides[order[i]] = str;
        str *= t->dims[order[i]];
    }
    dnnl_memory_t from, to;
    st = view_md(s, t->mem, t->rank, t->dims, t->strides, &from);
    if (!st)
        st = view_md(s, c.mem, c.rank, c.dims, c.strides, &to);
    if (!st)
        st = fm_cpu_add_reorder(s, id, ph, from, to, false);
    if (!st)
        *t = c;
    return st;
}

/* A primitive descriptor with an output scale (1: none). */
static enum fm_status scaled_pd(struct fm_cpu *s, fm_nid id, const void *desc, float scale,
                                const_dnnl_primitive_desc_t hint, dnnl_primitive_desc_t *out)
{
    if (scale == 1.0f)
        return fm_cpu_pd(s, id, desc, hint, out);
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_primitive_attr_create(&attr));
    FM_DNNL_TRY(s, dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    FM_DNNL_TRY(s, dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale));
    dnnl_status_t r = dnnl_primitive_desc_create(&pd, desc, attr, s->engine, hint);
    if (r != dnnl_success) {
        const struct fm_node *n = fm_graph_node(s->g, id);
        st = fm_error(s->ctx, FM_ERR_UNSUPPORTED,
                      "layer '%s' (%s): oneDNN has no implementation for these shapes and "
                      "attributes (status %d)",
                      n->name, n->op_name, (int)r);
        goto out;
    }
    st = fm_cpu_keep_pd(s, pd);
    if (!st)
        *out = pd;
out:
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

/* ---- the two-operand product ---- */

/* One product without batch dims, y (M, N) = scale * a (M, K) b (K, N), on oneDNN's sgemm
 * (BLAS's row-major interface), which reads either operand plain or transposed in place.
 * oneDNN 2.6's matmul primitive ran these at half its sgemm's rate: GPT-2's projections
 * (128 x 768 by 768 x 3072, HF's Conv1D written as Gemm with transB = 0 or as MatMul) at 70-75
 * GFLOP/s forward and weight gradient on 2 Zen 4 cores, where sgemm runs them at 155-185. */
#define GEMM_SPLIT 4   /* columns computed apart when B is 64-byte aligned (gemm_run) */

struct gemm_arg {
    char ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    float alpha;
};

/* memories: a, b, y (views of the operands' bytes) */
static enum fm_status gemm_run(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    const struct gemm_arg *g = arg;
    const float *a = fm_cpu_item_f32(it, 0), *b = fm_cpu_item_f32(it, 1);
    float *y = fm_cpu_item_f32(it, 2);
    int64_t n0 = 0;
    dnnl_status_t r = dnnl_success;
    /* oneDNN 2.6's sgemm runs a plain B whose address is a multiple of 64 bytes at half speed
     * for 32 to 256 rows (GPT-2's 128 x 768 by 768 x 3072: 6.7 ms, against 3.9 with B 16
     * bytes further on; measured on Zen 4 for N of 1024 to 5120, and not for 8 or 512 rows):
     * the first GEMM_SPLIT columns apart, then the rest from an address that is not */
    if (g->tb == 'N' && g->m >= 32 && g->m <= 256 && g->n > 4 * GEMM_SPLIT &&
        ((uintptr_t)b & 63) == 0) {
        r = dnnl_sgemm(g->ta, g->tb, g->m, GEMM_SPLIT, g->k, g->alpha, a, g->lda, b, g->ldb,
                       0.0f, y, g->ldc);
        n0 = GEMM_SPLIT;
    }
    if (r == dnnl_success)
        r = dnnl_sgemm(g->ta, g->tb, g->m, g->n - n0, g->k, g->alpha, a, g->lda, b + n0, g->ldb,
                       0.0f, y + n0, g->ldc);
    return r == dnnl_success ? FM_OK
                             : fm_cpu_dnnl_error(s, r, "dnnl_sgemm", __FILE__, __LINE__);
}

/* An operand of dims (rows, cols) with strides st as sgemm sees it: 'N' with leading dim st[0]
 * (rows apart by st[0], elements adjacent), 'T' with st[1]; false when neither is dense. */
static bool gemm_operand(const int64_t *dims, const int64_t *st, char *t, int64_t *ld)
{
    if (st[1] == 1 && st[0] >= (dims[1] > 1 ? dims[1] : 1)) {
        *t = 'N';
        *ld = st[0];
        return true;
    }
    if (st[0] == 1 && st[1] >= (dims[0] > 1 ? dims[0] : 1)) {
        *t = 'T';
        *ld = st[1];
        return true;
    }
    return false;
}

/* scale * src (batch..., M, K) x weights (batch..., K, N) -> dst on oneDNN's matmul; mems are
 * the three views. */
static enum fm_status mm_prim(struct fm_cpu *s, fm_nid id, enum fm_phase ph, float scale,
                              const dnnl_memory_t *mems)
{
    dnnl_matmul_desc_t d;
    dnnl_primitive_desc_t pd;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_matmul_desc_init(&d, fm_cpu_mem_md(mems[0]), fm_cpu_mem_md(mems[1]),
                                         NULL, fm_cpu_mem_md(mems[2])));
    st = scaled_pd(s, id, &d, scale, NULL, &pd);
    if (!st) {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_SRC, mems[0]}, {DNNL_ARG_WEIGHTS, mems[1]},
                                     {DNNL_ARG_DST, mems[2]}};
        st = fm_cpu_add_prim(s, id, ph, pd, args, 3);
    }
out:
    return st;
}

/* The product of views ms (M, K), mw (K, N), md (M, N) of strides ss, ws, ds: on sgemm when
 * each operand is dense one way or the other and y's rows are, else on oneDNN's matmul. */
static enum fm_status mm_gemm(struct fm_cpu *s, fm_nid id, enum fm_phase ph, const int64_t *sd,
                              const int64_t *ss, const int64_t *ws, const int64_t *ds,
                              int64_t nsize, float scale, const dnnl_memory_t *mems)
{
    const int64_t wdims[2] = {sd[1], nsize};
    struct gemm_arg g = {.m = sd[0], .n = nsize, .k = sd[1], .alpha = scale};
    if (gemm_operand(sd, ss, &g.ta, &g.lda) && gemm_operand(wdims, ws, &g.tb, &g.ldb) &&
        ds[1] == 1 && ds[0] >= (nsize > 1 ? nsize : 1)) {
        struct gemm_arg *p = fm_cpu_buf(s, sizeof(*p));
        if (!p)
            return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
        g.ldc = ds[0];
        *p = g;
        return fm_cpu_add_fn(s, id, ph, gemm_run, p, mems, 3);
    }
    return mm_prim(s, id, ph, scale, mems);
}

/* y = scale * einsum(a, b -> y), overwriting y. */
static enum fm_status mm_einsum(struct fm_cpu *s, fm_nid id, enum fm_phase ph, struct term a,
                                struct term b, const struct term *yp, float scale)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct term y = *yp;
    enum fm_status st = FM_OK;
    bool drop[MM_MAXD], any;
    /* labels only one operand has: summed out of it first */
    for (int o = 0; o < 2; o++) {
        struct term *t = o ? &b : &a, *u = o ? &a : &b;
        any = false;
        for (int i = 0; i < t->rank; i++) {
            drop[i] = t->dims[i] > 1 && term_find(u, t->lab[i]) < 0 &&
                      term_find(&y, t->lab[i]) < 0;
            any |= drop[i];
        }
        if (any && (st = reduce_term(s, id, ph, t, drop, NULL)))
            return st;
    }
    /* labels only y has: computed without them, then broadcast */
    any = false;
    for (int i = 0; i < y.rank; i++) {
        drop[i] = y.dims[i] > 1 && term_find(&a, y.lab[i]) < 0 && term_find(&b, y.lab[i]) < 0;
        any |= drop[i];
    }
    if (any) {
        struct term t;
        st = term_scratch(s, &y, drop, &t);
        if (!st)
            st = mm_einsum(s, id, ph, a, b, &t, scale);
        if (!st)
            st = add_bcast(s, id, ph, &t, &y, 1.0f, false);
        return st;
    }
    /* M and N: the innermost label of y from a only, from b only; the rest of y is batch */
    int im = -1, in = -1;
    for (int pass = 0; pass < 2; pass++) {
        im = in = -1;
        for (int i = 0; i < y.rank; i++) {
            if (y.dims[i] <= 1)
                continue;
            bool ina = term_find(&a, y.lab[i]) >= 0, inb = term_find(&b, y.lab[i]) >= 0;
            if (ina && !inb && (im < 0 || y.strides[i] < y.strides[im]))
                im = i;
            if (inb && !ina && (in < 0 || y.strides[i] < y.strides[in]))
                in = i;
        }
        /* oneDNN's fast kernels write rows: y's innermost label should be N. The product is
         * symmetric in a and b, so swapping them transposes the matmul instead of its dst */
        if (pass || im < 0 || (in >= 0 && y.strides[in] < y.strides[im]))
            break;
        struct term t = a;
        a = b;
        b = t;
    }
    /* K: the contracted labels, in a's order (outer first); one oneDNN dim must span them */
    int kl[MM_MAXD], nk = 0;
    for (int i = 0; i < a.rank; i++) {
        if (a.dims[i] > 1 && term_find(&b, a.lab[i]) >= 0 && term_find(&y, a.lab[i]) < 0)
            kl[nk++] = a.lab[i];
    }
    /* by decreasing stride in a */
    for (int i = 1; i < nk; i++) {
        for (int j = i; j > 0 && a.strides[term_find(&a, kl[j])] >
                                     a.strides[term_find(&a, kl[j - 1])]; j--) {
            int t = kl[j];
            kl[j] = kl[j - 1];
            kl[j - 1] = t;
        }
    }
    int64_t ksize = 1;
    for (int i = 0; i < nk; i++)
        ksize *= a.dims[term_find(&a, kl[i])];
    for (int o = 0; o < 2; o++) {
        struct term *t = o ? &b : &a;
        bool ok = true;
        for (int i = 0; i + 1 < nk; i++) {
            int d0 = term_find(t, kl[i]), d1 = term_find(t, kl[i + 1]);
            ok &= t->strides[d0] == t->strides[d1] * t->dims[d1];
        }
        if (ok)
            continue;
        /* gather: the other dims outside in their order, then K in kl's order */
        int order[MM_MAXD], no = 0;
        for (int i = 0; i < t->rank; i++) {
            bool isk = false;
            for (int j = 0; j < nk; j++)
                isk |= t->dims[i] > 1 && t->lab[i] == kl[j];
            if (!isk)
                order[no++] = i;
        }
        for (int j = 0; j < nk; j++)
            order[no++] = term_find(t, kl[j]);
        if ((st = contiguous(s, id, ph, t, order)))
            return st;
    }
    int ka_in = nk ? term_find(&a, kl[nk - 1]) : -1, kb_in = nk ? term_find(&b, kl[nk - 1]) : -1;
    int am = im >= 0 ? term_find(&a, y.lab[im]) : -1, bn = in >= 0 ? term_find(&b, y.lab[in]) : -1;
    int64_t msize = im >= 0 ? y.dims[im] : 1, nsize = in >= 0 ? y.dims[in] : 1;
    /* labels of y from one operand only that lie just outside M (or N) in both y and that
     * operand widen M (N) instead of becoming batch dims: a (8, 2, 2, 768) x (768, 3072)
     * product is one matmul of 32 rows, not 32 broadcast ones of 2 rows (5 times slower) */
    bool merged[MM_MAXD] = {false};
    for (bool grew = true; grew;) {
        grew = false;
        for (int i = 0; i < y.rank; i++) {
            if (y.dims[i] <= 1 || i == im || i == in || merged[i])
                continue;
            int ka = term_find(&a, y.lab[i]), kb = term_find(&b, y.lab[i]);
            if (am >= 0 && ka >= 0 && kb < 0 && y.strides[i] == y.strides[im] * msize &&
                a.strides[ka] == a.strides[am] * msize) {
                msize *= y.dims[i];
                merged[i] = grew = true;
            } else if (bn >= 0 && kb >= 0 && ka < 0 && y.strides[i] == y.strides[in] * nsize &&
                       b.strides[kb] == b.strides[bn] * nsize) {
                nsize *= y.dims[i];
                merged[i] = grew = true;
            }
        }
    }
    /* the matmul's dims: batch (y's labels but M and N, in y's order), M, K, N */
    int64_t sd[MM_MAX_NDIMS], ss[MM_MAX_NDIMS], wd[MM_MAX_NDIMS], ws[MM_MAX_NDIMS],
        dd[MM_MAX_NDIMS], ds[MM_MAX_NDIMS];
    int64_t sa = term_numel(&a), sb = term_numel(&b), sy = term_numel(&y);
    int nd = 0;
    for (int i = 0; i < y.rank; i++) {
        if (y.dims[i] <= 1 || i == im || i == in || merged[i])
            continue;
        if (nd + 2 >= MM_MAX_NDIMS)
            return fm_error(s->ctx, FM_ERR_UNSUPPORTED,
                            "layer '%s' (%s): more than %d batch dims for oneDNN's matmul",
                            n->name, n->op_name, MM_MAX_NDIMS - 2);
        int ka = term_find(&a, y.lab[i]), kb = term_find(&b, y.lab[i]);
        sd[nd] = ka >= 0 ? a.dims[ka] : 1;
        ss[nd] = ka >= 0 ? a.strides[ka] : sa;
        wd[nd] = kb >= 0 ? b.dims[kb] : 1;
        ws[nd] = kb >= 0 ? b.strides[kb] : sb;
        dd[nd] = y.dims[i];
        ds[nd] = y.strides[i];
        nd++;
    }
    sd[nd] = msize;
    ss[nd] = am >= 0 ? a.strides[am] : sa;
    sd[nd + 1] = ksize;
    ss[nd + 1] = ka_in >= 0 ? a.strides[ka_in] : sa;
    wd[nd] = ksize;
    ws[nd] = kb_in >= 0 ? b.strides[kb_in] : sb;
    wd[nd + 1] = nsize;
    ws[nd + 1] = bn >= 0 ? b.strides[bn] : sb;
    dd[nd] = msize;
    ds[nd] = im >= 0 ? y.strides[im] : sy;
    dd[nd + 1] = nsize;
    ds[nd + 1] = in >= 0 ? y.strides[in] : sy;
    nd += 2;
    /* a dim of size 1 gets the stride a dense row-major layout would give it, so that the
     * descriptors read as plain (or plainly transposed) to oneDNN's kernel checks */
    int64_t *strs[3] = {ss, ws, ds};
    const int64_t *dms[3] = {sd, wd, dd};
    for (int o = 0; o < 3; o++) {
        for (int i = nd - 1; i >= 0; i--) {
            if (dms[o][i] == 1)
                strs[o][i] = i == nd - 1 ? 1 : strs[o][i + 1] * dms[o][i + 1];
        }
    }
    dnnl_memory_t ms, mw, md;
    st = view_md(s, a.mem, nd, sd, ss, &ms);
    if (!st)
        st = view_md(s, b.mem, nd, wd, ws, &mw);
    if (!st)
        st = view_md(s, y.mem, nd, dd, ds, &md);
    if (st)
        return st;
    const dnnl_memory_t mems[3] = {ms, mw, md};
    return nd == 2 ? mm_gemm(s, id, ph, sd, ss, ws, ds, wd[1], scale, mems)
                   : mm_prim(s, id, ph, scale, mems);
}

/* y = alpha * einsum(x -> y): labels x has alone are summed, labels y has alone broadcast. */
static enum fm_status mm_unary(struct fm_cpu *s, fm_nid id, enum fm_phase ph, struct term x,
                               const struct term *y, float alpha)
{
    bool drop[MM_MAXD], any = false, bcast = false, same_order = true;
    for (int i = 0; i < x.rank; i++) {
        drop[i] = x.dims[i] > 1 && term_find(y, x.lab[i]) < 0;
        any |= drop[i];
    }
    /* the labels both keep, in x's order and in y's */
    int kx[MM_MAXD], ky[MM_MAXD], nx = 0, ny = 0;
    for (int i = 0; i < x.rank; i++) {
        if (x.dims[i] > 1 && !drop[i])
            kx[nx++] = x.lab[i];
    }
    for (int i = 0; i < y->rank; i++) {
        if (y->dims[i] <= 1)
            continue;
        if (term_find(&x, y->lab[i]) < 0)
            bcast = true;
        else
            ky[ny++] = y->lab[i];
    }
    same_order = nx == ny;
    for (int i = 0; i < nx && same_order; i++)
        same_order = kx[i] == ky[i];
    enum fm_status st = FM_OK;
    if (any) {
        /* in y's order with nothing to scale or broadcast, the sum lands in y itself */
        bool direct = same_order && !bcast && alpha == 1.0f;
        struct term into = *y;
        if (direct) {
            int64_t dd[MM_MAXD];
            for (int i = 0; i < x.rank; i++)
                dd[i] = drop[i] ? 1 : x.dims[i];
            term_init(&into, x.rank, x.lab, dd, y->mem);
        }
        st = reduce_term(s, id, ph, &x, drop, direct ? &into : NULL);
        if (st || direct)
            return st;
    }
    if (!bcast && alpha == 1.0f) {
        /* a permutation: one reorder from x's strides, in y's dims, to y */
        int64_t d[MM_MAXD], str[MM_MAXD];
        int nd = 0;
        for (int i = 0; i < y->rank; i++) {
            int k = y->dims[i] > 1 ? term_find(&x, y->lab[i]) : -1;
            d[nd] = y->dims[i];
            str[nd++] = k >= 0 ? x.strides[k] : term_numel(&x);
        }
        dnnl_memory_t from, to;
        st = view_md(s, x.mem, nd, d, str, &from);
        if (!st)
            st = view_md(s, y->mem, y->rank, y->dims, y->strides, &to);
        if (!st)
            st = fm_cpu_add_reorder(s, id, ph, from, to, false);
        return st;
    }
    return add_bcast(s, id, ph, &x, y, alpha, false);
}

/* ---- per-op terms ---- */

/* Labels for MatMul and Gemm: batch dims count from 0, then these. */
enum { L_M = 60, L_K, L_N };

/* MatMul's operands and result as terms (mems unset). */
static void matmul_labels(const struct fm_cpu *s, const struct fm_node *n, struct term *a,
                          struct term *b, struct term *y)
{
    const struct fm_tensor *ta = fm_graph_tensor(s->g, n->in[0]);
    const struct fm_tensor *tb = fm_graph_tensor(s->g, n->in[1]);
    const struct fm_tensor *ty = fm_graph_tensor(s->g, n->out[0]);
    int ra = ta->shape.rank, rb = tb->shape.rank, ry = ty->shape.rank;
    int nb = ry - (ra > 1) - (rb > 1);
    int la[MM_MAXD], lb[MM_MAXD], ly[MM_MAXD];
    for (int i = 0; i < ra - 2; i++)
        la[i] = i + nb - (ra - 2);
    for (int i = 0; i < rb - 2; i++)
        lb[i] = i + nb - (rb - 2);
    for (int i = 0; i < nb; i++)
        ly[i] = i;
    if (ra == 1) {
        la[0] = L_K;
    } else {
        la[ra - 2] = L_M;
        la[ra - 1] = L_K;
    }
    if (rb == 1) {
        lb[0] = L_K;
    } else {
        lb[rb - 2] = L_K;
        lb[rb - 1] = L_N;
    }
    int k = nb;
    if (ra > 1)
        ly[k++] = L_M;
    if (rb > 1)
        ly[k++] = L_N;
    term_of(s, n->in[0], la, NULL, a);
    term_of(s, n->in[1], lb, NULL, b);
    term_of(s, n->out[0], ly, NULL, y);
}

/* Gemm: A (M,K) or (K,M), B (K,N) or (N,K), C broadcast to (M,N), right-aligned. */
static void gemm_labels(const struct fm_cpu *s, const struct fm_node *n, struct term *a,
                        struct term *b, struct term *c, struct term *y)
{
    bool ta = n->attrs.flags & FM_ATTR_TRANS_A, tb = n->attrs.flags & FM_ATTR_TRANS_B;
    int la[2] = {ta ? L_K : L_M, ta ? L_M : L_K}, lb[2] = {tb ? L_N : L_K, tb ? L_K : L_N};
    int ly[2] = {L_M, L_N};
    term_of(s, n->in[0], la, NULL, a);
    term_of(s, n->in[1], lb, NULL, b);
    term_of(s, n->out[0], ly, NULL, y);
    if (c && n->n_in > 2 && n->in[2] != FM_NONE) {
        const struct fm_tensor *tc = fm_graph_tensor(s->g, n->in[2]);
        term_of(s, n->in[2], ly + 2 - tc->shape.rank, NULL, c);
    }
}

/* Einsum: attrs.ints = {n_operands, rank_0, labels_0..., [rank_1, labels_1...], out_rank,
 * out_labels...} (src/ops/einsum.c). */
static int einsum_labels(const struct fm_node *n, int lab[3][MM_MAXD], int rank[3])
{
    const int64_t *v = n->attrs.ints;
    int k = 0, nops = (int)v[k++];
    for (int o = 0; o <= nops; o++) {
        int slot = o < nops ? o : 2;
        rank[slot] = (int)v[k++];
        for (int i = 0; i < rank[slot]; i++)
            lab[slot][i] = (int)v[k++];
    }
    return nops;
}

/* ---- check ---- */

static bool repeats(const int *lab, int n)
{
    for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++) {
            if (lab[i] == lab[j])
                return true;
        }
    }
    return false;
}

enum fm_status fm_cpu_matmul_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                   const struct fm_node *n)
{
    (void)g;
    if (n->op == FM_OP_ATTENTION && n->attrs.softcap > 0)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "layer '%s' (Attention): soft-capped scores (Gemma 2's "
                        "attn_logit_softcapping) are not implemented on the CPU backend",
                        n->name);
    if (n->op == FM_OP_EINSUM) {
        int lab[3][MM_MAXD], rank[3];
        int nops = einsum_labels(n, lab, rank);
        for (int o = 0; o < 3; o++) {
            if ((o < nops || o == 2) && repeats(lab[o], rank[o]))
                return fm_error(ctx, FM_ERR_UNSUPPORTED,
                                "layer '%s' (Einsum): a label repeated within one term (a "
                                "diagonal) is not implemented on the CPU backend",
                                n->name);
        }
    }
    return FM_OK;
}

/* ---- MatMul, Gemm, Einsum ---- */

static enum fm_status input_term(struct fm_cpu *s, fm_nid id, enum fm_phase ph, fm_tid tid,
                                 bool grad, struct term *t)
{
    return fm_cpu_input_plain(s, id, ph, tid, grad, &t->mem);
}

/* The labelled terms of a product (t[0], t[1] the operands, t[2] the result; Gemm's C in *c),
 * its scale (Gemm's alpha) and operand count (an Einsum may have one). */
static int product_terms(struct fm_cpu *s, const struct fm_node *n, struct term t[3],
                         struct term *c, float *scale, bool *has_c)
{
    int nops = 2;
    *scale = 1.0f;
    *has_c = false;
    if (n->op == FM_OP_MATMUL) {
        matmul_labels(s, n, &t[0], &t[1], &t[2]);
    } else if (n->op == FM_OP_GEMM) {
        gemm_labels(s, n, &t[0], &t[1], c, &t[2]);
        *scale = (float)n->attrs.alpha;
        *has_c = n->n_in > 2 && n->in[2] != FM_NONE;
    } else {
        int lab[3][MM_MAXD], rank[3];
        nops = einsum_labels(n, lab, rank);
        for (int o = 0; o < nops; o++)
            term_of(s, n->in[o], lab[o], NULL, &t[o]);
        term_of(s, n->out[0], lab[2], NULL, &t[2]);
    }
    return nops;
}

static enum fm_status product_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct term t[3], c;   /* operands, result */
    float scale;
    bool has_c;
    int nops = product_terms(s, n, t, &c, &scale, &has_c);
    enum fm_status st = FM_OK;
    for (int o = 0; o < nops && !st; o++)
        st = input_term(s, id, FM_PHASE_FWD, n->in[o], false, &t[o]);
    if (!st && has_c)
        st = input_term(s, id, FM_PHASE_FWD, n->in[2], false, &c);
    if (!st)
        st = fm_cpu_place_out(s, n->out[0]);
    if (st)
        return st;
    t[2].mem = s->t[n->out[0]].val_mem;
    if (nops == 1)
        return mm_unary(s, id, FM_PHASE_FWD, t[0], &t[2], 1.0f);
    st = mm_einsum(s, id, FM_PHASE_FWD, t[0], t[1], &t[2], scale);
    if (!st && has_c)   /* + beta C, broadcast */
        st = add_bcast(s, id, FM_PHASE_FWD, &c, &t[2], (float)n->attrs.beta, true);
    return st;
}

static enum fm_status product_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct term t[3], c, dy;
    float scale;
    bool has_c;
    int nops = product_terms(s, n, t, &c, &scale, &has_c);
    dy = t[2];
    enum fm_status st = FM_OK;
    for (int o = 0; o < nops; o++) {
        if (!fm_cpu_wants_grad(s, n->in[o]))
            continue;
        enum fm_phase ph = fm_cpu_grad_phase(s, n->in[o]);
        struct fm_cpu_sink sk;
        struct term dx = t[o], other = nops == 2 ? t[1 - o] : t[0];
        st = input_term(s, id, ph, n->out[0], true, &dy);
        if (!st && nops == 2)
            st = input_term(s, id, ph, n->in[1 - o], false, &other);
        if (!st)
            st = fm_cpu_sink_plain(s, id, ph, n->in[o], &sk, &dx.mem);
        if (st)
            return st;
        if (nops == 1)
            st = mm_unary(s, id, ph, dy, &dx, 1.0f);
        else if (o == 0)
            st = mm_einsum(s, id, ph, dy, other, &dx, scale);
        else
            st = mm_einsum(s, id, ph, other, dy, &dx, scale);
        if (!st)
            st = fm_cpu_sink_end(s, &sk);
        if (st)
            return st;
    }
    if (has_c && fm_cpu_wants_grad(s, n->in[2])) {   /* dC = beta * dY summed to C's shape */
        enum fm_phase ph = fm_cpu_grad_phase(s, n->in[2]);
        struct fm_cpu_sink sk;
        struct term dc = c;
        st = input_term(s, id, ph, n->out[0], true, &dy);
        if (!st)
            st = fm_cpu_sink_plain(s, id, ph, n->in[2], &sk, &dc.mem);
        if (!st)
            st = mm_unary(s, id, ph, dy, &dc, (float)n->attrs.beta);
        if (!st)
            st = fm_cpu_sink_end(s, &sk);
    }
    return st;
}

/* ---- Attention ---- */

enum { L_B = 0, L_H, L_Q, L_KEY, L_D, L_E };

struct attn_priv {
    dnnl_primitive_desc_t softmax;
    dnnl_memory_t probs;    /* A = softmax(scale Q K^T + mask), (B,H,Sq,Sk) */
    float scale;
};

/* The masks on the scores, in one pass over each row: causal (key j > query i), boolean
 * (false: masked), float (added). */
struct mask_arg {
    int64_t rows, sq, sk;          /* rows = B*H*Sq */
    int64_t hdims[3];              /* B, H, Sq */
    int64_t mstride[4];            /* the mask's strides along B, H, Sq, Sk (0: broadcast) */
    const int32_t *bmask;          /* boolean mask, or NULL */
    bool fmask, causal;            /* fmask: a float mask is the item's second memory */
};

static enum fm_status mask_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct mask_arg *a = arg;
    float *p = fm_cpu_item_f32(it, 0);
    const float *fm = a->fmask ? fm_cpu_item_f32(it, 1) : NULL;
    const float ninf = -INFINITY;
    FM_CPU_PARALLEL
    for (int64_t r = 0; r < a->rows; r++) {
        int64_t i = r % a->sq, bh = r / a->sq;
        int64_t h = bh % a->hdims[1], b = bh / a->hdims[1];
        int64_t moff = b * a->mstride[0] + h * a->mstride[1] + i * a->mstride[2];
        int64_t ms = a->mstride[3];
        float *row = p + r * a->sk;
        if (fm) {
            for (int64_t j = 0; j < a->sk; j++)
                row[j] += fm[moff + j * ms];
        }
        if (a->bmask) {
            for (int64_t j = 0; j < a->sk; j++)
                row[j] = a->bmask[moff + j * ms] ? row[j] : ninf;
        }
        if (a->causal) {
            for (int64_t j = i + 1; j < a->sk; j++)
                row[j] = ninf;
        }
    }
    return FM_OK;
}

static void attn_terms(const struct fm_cpu *s, const struct fm_node *n, struct term *q,
                       struct term *k, struct term *v, struct term *p, struct term *o)
{
    static const int lq[4] = {L_B, L_H, L_Q, L_D}, lk[4] = {L_B, L_H, L_KEY, L_D},
                     lv[4] = {L_B, L_H, L_KEY, L_E}, lp[4] = {L_B, L_H, L_Q, L_KEY},
                     lo[4] = {L_B, L_H, L_Q, L_E};
    term_of(s, n->in[0], lq, NULL, q);
    term_of(s, n->in[1], lk, NULL, k);
    term_of(s, n->in[2], lv, NULL, v);
    term_of(s, n->out[0], lo, NULL, o);
    int64_t pd[4] = {q->dims[0], q->dims[1], q->dims[2], k->dims[2]};
    term_init(p, 4, lp, pd, NULL);
}

static fm_tid attn_mask(const struct fm_node *n)
{
    return n->n_in > 3 ? n->in[3] : FM_NONE;
}

static enum fm_status attn_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct attn_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    struct term q, k, v, pr, o;
    attn_terms(s, n, &q, &k, &v, &pr, &o);
    p->scale = n->attrs.scale != 0.0 ? (float)n->attrs.scale : 1.0f / sqrtf((float)q.dims[3]);
    dnnl_memory_desc_t pmd;
    fm_cpu_md_plain(&pmd, 4, pr.dims);
    /* the probabilities are read again by the backward: kept when training */
    enum fm_status st = s->train ? fm_cpu_mem_new(s, &pmd, &p->probs)
                                 : fm_cpu_mem_scratch(s, &pmd, &p->probs);
    pr.mem = p->probs;
    if (!st)
        st = input_term(s, id, FM_PHASE_FWD, n->in[0], false, &q);
    if (!st)
        st = input_term(s, id, FM_PHASE_FWD, n->in[1], false, &k);
    if (!st)
        st = input_term(s, id, FM_PHASE_FWD, n->in[2], false, &v);
    if (!st)
        st = fm_cpu_place_out(s, n->out[0]);
    if (!st)
        st = mm_einsum(s, id, FM_PHASE_FWD, q, k, &pr, p->scale);
    if (st)
        return st;
    fm_tid mask = attn_mask(n);
    bool causal = n->attrs.flags & FM_ATTR_CAUSAL;
    if (mask != FM_NONE || causal) {
        struct mask_arg *a = fm_cpu_buf(s, sizeof(*a));
        if (!a)
            return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
        a->sq = pr.dims[2];
        a->sk = pr.dims[3];
        a->rows = pr.dims[0] * pr.dims[1] * pr.dims[2];
        for (int i = 0; i < 3; i++)
            a->hdims[i] = pr.dims[i];
        a->causal = causal;
        dnnl_memory_t mems[2] = {p->probs, NULL};
        int nm = 1;
        if (mask != FM_NONE) {
            /* numpy broadcasting to (B,H,Sq,Sk): the mask's dims right-aligned */
            const struct fm_tensor *tm = fm_graph_tensor(s->g, mask);
            int r = tm->shape.rank;
            int64_t str = 1;
            for (int i = 3; i >= 0; i--) {
                int mi = i - (4 - r);
                int64_t d = mi >= 0 ? tm->shape.dims[mi] : 1;
                a->mstride[i] = d == 1 ? 0 : str;
                str *= d;
            }
            if (fm_cpu_is_int(s, mask)) {
                a->bmask = fm_cpu_ints(s, mask);
            } else {
                a->fmask = true;
                st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, mask, false, &mems[1]);
                nm = 2;
            }
        }
        if (!st)
            st = fm_cpu_add_fn(s, id, FM_PHASE_FWD, mask_fn, a, mems, nm);
    }
    dnnl_softmax_v2_desc_t sd;
    if (!st) {
        FM_DNNL_TRY(s, dnnl_softmax_v2_forward_desc_init(
                           &sd, s->train ? dnnl_forward_training : dnnl_forward_inference,
                           dnnl_softmax_accurate, &pmd, &pmd, 3));
        st = fm_cpu_pd(s, id, &sd, NULL, &p->softmax);
    }
    if (!st) {
        struct fm_cpu_arg args[2] = {{DNNL_ARG_SRC, p->probs}, {DNNL_ARG_DST, p->probs}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, p->softmax, args, 2);
    }
    o.mem = s->t[n->out[0]].val_mem;
    if (!st)
        st = mm_einsum(s, id, FM_PHASE_FWD, pr, v, &o, 1.0f);
out:
    return st;
}

static enum fm_status attn_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct attn_priv *p = s->nodes[id].priv;
    struct term q, k, v, pr, o, dO;
    attn_terms(s, n, &q, &k, &v, &pr, &o);
    pr.mem = p->probs;
    dO = o;
    fm_tid mask = attn_mask(n);
    bool gq = fm_cpu_wants_grad(s, n->in[0]), gk = fm_cpu_wants_grad(s, n->in[1]),
         gv = fm_cpu_wants_grad(s, n->in[2]), gm = fm_cpu_wants_grad(s, mask);
    enum fm_status st = FM_OK;
    struct fm_cpu_sink sk;
    if (gv) {   /* dV = A^T dO */
        enum fm_phase ph = fm_cpu_grad_phase(s, n->in[2]);
        struct term dv = v;
        st = input_term(s, id, ph, n->out[0], true, &dO);
        if (!st)
            st = fm_cpu_sink_plain(s, id, ph, n->in[2], &sk, &dv.mem);
        if (!st)
            st = mm_einsum(s, id, ph, pr, dO, &dv, 1.0f);
        if (!st)
            st = fm_cpu_sink_end(s, &sk);
    }
    if (st || !(gq || gk || gm))
        return st;
    enum fm_phase ph = fm_cpu_grad_phase(s, n->in[gq ? 0 : gk ? 1 : 3]);
    struct term da = pr, ds = pr;
    dnnl_memory_desc_t pmd;
    fm_cpu_md_plain(&pmd, 4, pr.dims);
    st = input_term(s, id, ph, n->out[0], true, &dO);
    if (!st)
        st = input_term(s, id, ph, n->in[2], false, &v);
    if (!st)
        st = fm_cpu_mem_scratch(s, &pmd, &da.mem);
    if (!st)
        st = fm_cpu_mem_scratch(s, &pmd, &ds.mem);
    if (!st)   /* dA = dO V^T */
        st = mm_einsum(s, id, ph, dO, v, &da, 1.0f);
    if (st)
        return st;
    dnnl_softmax_v2_desc_t sd;
    dnnl_primitive_desc_t pd;
    FM_DNNL_TRY(s, dnnl_softmax_v2_backward_desc_init(&sd, dnnl_softmax_accurate, &pmd, &pmd,
                                                      &pmd, 3));
    st = fm_cpu_pd(s, id, &sd, p->softmax, &pd);
    if (!st) {   /* dS = A (dA - rowsum(dA A)) */
        struct fm_cpu_arg args[3] = {{DNNL_ARG_DST, p->probs}, {DNNL_ARG_DIFF_DST, da.mem},
                                     {DNNL_ARG_DIFF_SRC, ds.mem}};
        st = fm_cpu_add_prim(s, id, ph, pd, args, 3);
    }
    if (!st && gq) {   /* dQ = scale dS K */
        enum fm_phase phq = fm_cpu_grad_phase(s, n->in[0]);
        struct term dq = q;
        st = input_term(s, id, phq, n->in[1], false, &k);
        if (!st)
            st = fm_cpu_sink_plain(s, id, phq, n->in[0], &sk, &dq.mem);
        if (!st)
            st = mm_einsum(s, id, phq, ds, k, &dq, p->scale);
        if (!st)
            st = fm_cpu_sink_end(s, &sk);
    }
    if (!st && gk) {   /* dK = scale dS^T Q */
        enum fm_phase phk = fm_cpu_grad_phase(s, n->in[1]);
        struct term dk = k;
        st = input_term(s, id, phk, n->in[0], false, &q);
        if (!st)
            st = fm_cpu_sink_plain(s, id, phk, n->in[1], &sk, &dk.mem);
        if (!st)
            st = mm_einsum(s, id, phk, ds, q, &dk, p->scale);
        if (!st)
            st = fm_cpu_sink_end(s, &sk);
    }
    if (!st && gm) {   /* a learned additive mask: dS summed to its shape */
        enum fm_phase phm = fm_cpu_grad_phase(s, mask);
        const struct fm_tensor *tm = fm_graph_tensor(s->g, mask);
        static const int lp[4] = {L_B, L_H, L_Q, L_KEY};
        struct term dm;
        term_of(s, mask, lp + 4 - tm->shape.rank, NULL, &dm);
        st = fm_cpu_sink_plain(s, id, phm, mask, &sk, &dm.mem);
        if (!st)
            st = mm_unary(s, id, phm, ds, &dm, 1.0f);
        if (!st)
            st = fm_cpu_sink_end(s, &sk);
    }
out:
    return st;
}

/* ---- entry points ---- */

enum fm_status fm_cpu_matmul_fwd(struct fm_cpu *s, fm_nid id)
{
    if (fm_graph_node(s->g, id)->op == FM_OP_ATTENTION)
        return attn_fwd(s, id);
    return product_fwd(s, id);
}

enum fm_status fm_cpu_matmul_bwd(struct fm_cpu *s, fm_nid id)
{
    if (fm_graph_node(s->g, id)->op == FM_OP_ATTENTION)
        return attn_bwd(s, id);
    return product_bwd(s, id);
}
