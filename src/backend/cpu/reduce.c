/* Reductions (ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL2,
 * ReduceSumSquare) and CumSum on the CPU backend, as plain loops over plain fp32 tensors.
 *
 * A reduction is planned once: dims of size 1 are dropped and neighbouring dims that are both
 * reduced or both kept are merged, which leaves at most a few alternating runs. When the last
 * run is reduced (the transformer case, (B*S, D) over D), every output is one contiguous row of
 * L elements (times the offsets of any other reduced runs), and the outputs are split among
 * the threads; when the last run is kept (I contiguous outputs), each output row accumulates
 * whole input rows of I elements, split among the threads by (row, block of columns). Each
 * output's base offset is computed once per output or block, never per element. The same walk
 * gives the backward, which writes every input gradient element exactly once:
 *   sum dy, mean dy/R, sum square 2 x dy, L2 dy x / y (0 where y = 0),
 *   max and min dy / k on the k elements equal to the extreme, 0 elsewhere (torch.amax),
 *   prod dy * (product of the others): dy y / x without zeros, with one zero only that
 *   element gets dy * (product of the rest), with more nothing.
 * oneDNN 2.6's reduction primitive is not used: measured on (8192, 768) fp32, its jit code
 * takes 17 ms for a sum over the last axis (these loops 1 to 1.5 ms on one thread), and it runs
 * reference code (130 to 190 ms) for a sum over the first axis or a sum of squares.
 * CumSum along an axis is an (outer, L, inner) scan, parallel over (outer, block of inner); its
 * backward is the same scan in reverse. Integer inputs (a mask's cumsum into position ids, a
 * count of tokens) are reduced or scanned in 64 bits, forward only, into int32 outputs; their
 * mean and L2 norm are refused. Not here: ONNX CumSum's exclusive and reverse (the
 * graph does not keep them). */
#include "cpu.h"

#include <math.h>
#include <stdint.h>

#define RED_BLOCK 256    /* columns a kept-last reduction or a cumsum handles at a time */
#define CUMSUM_ROWS 8    /* rows a last-axis cumsum scans together */

enum red_kind { RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_PROD, RED_L2, RED_SUMSQ };

struct red_priv {
    enum red_kind kind;
    bool last_reduced;    /* the last run is reduced: outputs are rows of `inner` */
    int64_t inner;        /* L (last run reduced) or I (last run kept) */
    int64_t nout;         /* outputs (case I: output rows of I) */
    int64_t count;        /* input elements per output */
    int64_t nro;          /* reduced offsets outside the inner run */
    int64_t *roff;
    int nk;               /* kept runs outside the inner run: sizes and input strides */
    int64_t kdim[FM_MAX_DIMS], kstride[FM_MAX_DIMS];
    const int32_t *xi;    /* an integer input (forward only): its values and the output's */
    int32_t *yi;
};

static enum red_kind red_kind_of(enum fm_op op)
{
    switch (op) {
    case FM_OP_REDUCE_MEAN:
        return RED_MEAN;
    case FM_OP_REDUCE_MAX:
        return RED_MAX;
    case FM_OP_REDUCE_MIN:
        return RED_MIN;
    case FM_OP_REDUCE_PROD:
        return RED_PROD;
    case FM_OP_REDUCE_L2:
        return RED_L2;
    case FM_OP_REDUCE_SUM_SQUARE:
        return RED_SUMSQ;
    default:
        return RED_SUM;
    }
}

/* The input offset of output row q (kept runs outside the inner one). */
static int64_t red_base(const struct red_priv *p, int64_t q)
{
    int64_t off = 0;
    for (int d = p->nk - 1; d >= 0; d--) {
        int64_t r = q / p->kdim[d];
        off += (q - r * p->kdim[d]) * p->kstride[d];
        q = r;
    }
    return off;
}

static float red_init(enum red_kind k)
{
    return k == RED_MAX ? -INFINITY : k == RED_MIN ? INFINITY : k == RED_PROD ? 1.0f : 0.0f;
}

static float red_finish(const struct red_priv *p, float acc)
{
    if (p->kind == RED_MEAN)
        return acc / (float)p->count;
    if (p->kind == RED_L2)
        return sqrtf(acc);
    return acc;
}

#define RED_LANES 16   /* partial results a row keeps: the loops vectorize without fast-math */

/* acc combined with n contiguous elements of row, in RED_LANES independent partial results
 * (a single accumulator is one long dependency chain that the compiler may not reorder) */
static float red_row(enum red_kind k, float acc, const float *row, int64_t n)
{
    float a[RED_LANES];
    for (int j = 0; j < RED_LANES; j++)
        a[j] = red_init(k);
    int64_t i = 0, m = n - n % RED_LANES;
    switch (k) {
    case RED_MAX:
        for (; i < m; i += RED_LANES)
            for (int j = 0; j < RED_LANES; j++)
                a[j] = row[i + j] > a[j] ? row[i + j] : a[j];
        for (; i < n; i++)
            a[0] = row[i] > a[0] ? row[i] : a[0];
        for (int j = 0; j < RED_LANES; j++)
            acc = a[j] > acc ? a[j] : acc;
        return acc;
    case RED_MIN:
        for (; i < m; i += RED_LANES)
            for (int j = 0; j < RED_LANES; j++)
                a[j] = row[i + j] < a[j] ? row[i + j] : a[j];
        for (; i < n; i++)
            a[0] = row[i] < a[0] ? row[i] : a[0];
        for (int j = 0; j < RED_LANES; j++)
            acc = a[j] < acc ? a[j] : acc;
        return acc;
    case RED_PROD:
        for (; i < m; i += RED_LANES)
            for (int j = 0; j < RED_LANES; j++)
                a[j] *= row[i + j];
        for (; i < n; i++)
            a[0] *= row[i];
        for (int j = 0; j < RED_LANES; j++)
            acc *= a[j];
        return acc;
    case RED_L2:
    case RED_SUMSQ:
        for (; i < m; i += RED_LANES)
            for (int j = 0; j < RED_LANES; j++)
                a[j] += row[i + j] * row[i + j];
        for (; i < n; i++)
            a[0] += row[i] * row[i];
        break;
    default:
        for (; i < m; i += RED_LANES)
            for (int j = 0; j < RED_LANES; j++)
                a[j] += row[i + j];
        for (; i < n; i++)
            a[0] += row[i];
        break;
    }
    for (int w = RED_LANES / 2; w > 0; w /= 2)   /* pairwise: sums of long rows stay accurate */
        for (int j = 0; j < w; j++)
            a[j] += a[j + w];
    return acc + a[0];
}

/* acc[i] combined with row[i], i < n */
static void red_cols(enum red_kind k, float *acc, const float *row, int64_t n)
{
    switch (k) {
    case RED_MAX:
        for (int64_t i = 0; i < n; i++)
            acc[i] = row[i] > acc[i] ? row[i] : acc[i];
        break;
    case RED_MIN:
        for (int64_t i = 0; i < n; i++)
            acc[i] = row[i] < acc[i] ? row[i] : acc[i];
        break;
    case RED_PROD:
        for (int64_t i = 0; i < n; i++)
            acc[i] *= row[i];
        break;
    case RED_L2:
    case RED_SUMSQ:
        for (int64_t i = 0; i < n; i++)
            acc[i] += row[i] * row[i];
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            acc[i] += row[i];
        break;
    }
}

/* memories: x, y */
static enum fm_status red_fwd_run(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct red_priv *p = arg;
    const float *x = fm_cpu_item_f32(it, 0);
    float *y = fm_cpu_item_f32(it, 1);
    if (p->last_reduced) {
        FM_CPU_PARALLEL
        for (int64_t o = 0; o < p->nout; o++) {
            const float *xb = x + red_base(p, o);
            float acc = red_init(p->kind);
            for (int64_t r = 0; r < p->nro; r++)
                acc = red_row(p->kind, acc, xb + p->roff[r], p->inner);
            y[o] = red_finish(p, acc);
        }
        return FM_OK;
    }
    int64_t nb = (p->inner + RED_BLOCK - 1) / RED_BLOCK;
    FM_CPU_PARALLEL
    for (int64_t w = 0; w < p->nout * nb; w++) {
        int64_t q = w / nb, i0 = (w - q * nb) * RED_BLOCK;
        int64_t n = p->inner - i0 < RED_BLOCK ? p->inner - i0 : RED_BLOCK;
        const float *xb = x + red_base(p, q) + i0;
        float acc[RED_BLOCK];
        float a0 = red_init(p->kind);
        for (int64_t i = 0; i < n; i++)
            acc[i] = a0;
        for (int64_t r = 0; r < p->nro; r++)
            red_cols(p->kind, acc, xb + p->roff[r], n);
        float *yb = y + q * p->inner + i0;
        for (int64_t i = 0; i < n; i++)
            yb[i] = red_finish(p, acc[i]);
    }
    return FM_OK;
}

/* The gradient of one output's n contiguous inputs (row, drow) given dy g and the output v.
 * For max/min and prod, k and pnz are the output's tie count / zero count and product of its
 * nonzero inputs. */
static void red_grad_row(enum red_kind kind, const float *row, float *drow, int64_t n, float g,
                         float v, float inv_count, float k, float pnz)
{
    switch (kind) {
    case RED_SUM:
        for (int64_t i = 0; i < n; i++)
            drow[i] = g;
        break;
    case RED_MEAN:
        for (int64_t i = 0; i < n; i++)
            drow[i] = g * inv_count;
        break;
    case RED_SUMSQ:
        for (int64_t i = 0; i < n; i++)
            drow[i] = 2.0f * row[i] * g;
        break;
    case RED_L2: {
        float f = v > 0.0f ? g / v : 0.0f;
        for (int64_t i = 0; i < n; i++)
            drow[i] = row[i] * f;
        break;
    }
    case RED_MAX:
    case RED_MIN: {
        float f = g / k;
        for (int64_t i = 0; i < n; i++)
            drow[i] = row[i] == v ? f : 0.0f;
        break;
    }
    default: /* RED_PROD */
        if (k == 0.0f) {
            for (int64_t i = 0; i < n; i++)
                drow[i] = g * v / row[i];
        } else {
            float f = k == 1.0f ? g * pnz : 0.0f;
            for (int64_t i = 0; i < n; i++)
                drow[i] = row[i] == 0.0f ? f : 0.0f;
        }
        break;
    }
}

/* Tie count (max, min) or zero count and product of the nonzero elements (prod) of n
 * contiguous inputs, added to *k and multiplied into *pnz. */
static void red_stats(enum red_kind kind, const float *row, int64_t n, float v, float *k,
                      float *pnz)
{
    if (kind == RED_MAX || kind == RED_MIN) {
        int64_t ties = 0;   /* an integer sum vectorizes, a float one does not */
        for (int64_t i = 0; i < n; i++)
            ties += row[i] == v;
        *k += (float)ties;
    } else if (kind == RED_PROD) {
        for (int64_t i = 0; i < n; i++) {
            if (row[i] == 0.0f)
                *k += 1.0f;
            else
                *pnz *= row[i];
        }
    }
}

/* memories: x, y, dy, dx */
static enum fm_status red_bwd_run(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct red_priv *p = arg;
    const float *x = fm_cpu_item_f32(it, 0), *y = fm_cpu_item_f32(it, 1);
    const float *dy = fm_cpu_item_f32(it, 2);
    float *dx = fm_cpu_item_f32(it, 3);
    float inv = 1.0f / (float)p->count;
    bool stats = p->kind == RED_MAX || p->kind == RED_MIN || p->kind == RED_PROD;
    if (p->last_reduced) {
        FM_CPU_PARALLEL
        for (int64_t o = 0; o < p->nout; o++) {
            int64_t base = red_base(p, o);
            float k = 0.0f, pnz = 1.0f;
            for (int64_t r = 0; stats && r < p->nro; r++)
                red_stats(p->kind, x + base + p->roff[r], p->inner, y[o], &k, &pnz);
            for (int64_t r = 0; r < p->nro; r++)
                red_grad_row(p->kind, x + base + p->roff[r], dx + base + p->roff[r], p->inner,
                             dy[o], y[o], inv, k, pnz);
        }
        return FM_OK;
    }
    int64_t nb = (p->inner + RED_BLOCK - 1) / RED_BLOCK;
    FM_CPU_PARALLEL
    for (int64_t w = 0; w < p->nout * nb; w++) {
        int64_t q = w / nb, i0 = (w - q * nb) * RED_BLOCK;
        int64_t n = p->inner - i0 < RED_BLOCK ? p->inner - i0 : RED_BLOCK;
        int64_t base = red_base(p, q) + i0;
        const float *yb = y + q * p->inner + i0, *dyb = dy + q * p->inner + i0;
        /* per column: f multiplies (or, for prod, is divided by) the input, z is prod's
         * gradient of a zero input */
        float f[RED_BLOCK], z[RED_BLOCK];
        for (int64_t i = 0; i < n; i++) {
            f[i] = p->kind == RED_MEAN ? dyb[i] * inv : p->kind == RED_SUMSQ ? 2.0f * dyb[i]
                                                                               : dyb[i];
            z[i] = 0.0f;
        }
        if (p->kind == RED_L2) {
            for (int64_t i = 0; i < n; i++)
                f[i] = yb[i] > 0.0f ? dyb[i] / yb[i] : 0.0f;
        } else if (stats) {
            float k[RED_BLOCK], pnz[RED_BLOCK];
            for (int64_t i = 0; i < n; i++) {
                k[i] = 0.0f;
                pnz[i] = 1.0f;
            }
            for (int64_t r = 0; r < p->nro; r++) {
                const float *row = x + base + p->roff[r];
                if (p->kind == RED_PROD) {
                    for (int64_t i = 0; i < n; i++) {
                        k[i] += row[i] == 0.0f ? 1.0f : 0.0f;
                        pnz[i] *= row[i] == 0.0f ? 1.0f : row[i];
                    }
                } else {
                    for (int64_t i = 0; i < n; i++)
                        k[i] += row[i] == yb[i] ? 1.0f : 0.0f;
                }
            }
            for (int64_t i = 0; i < n; i++) {
                if (p->kind != RED_PROD) {
                    f[i] = dyb[i] / k[i];
                } else {
                    f[i] = k[i] == 0.0f ? dyb[i] * yb[i] : 0.0f;
                    z[i] = k[i] == 1.0f ? dyb[i] * pnz[i] : 0.0f;
                }
            }
        }
        for (int64_t r = 0; r < p->nro; r++) {
            const float *row = x + base + p->roff[r];
            float *drow = dx + base + p->roff[r];
            switch (p->kind) {
            case RED_SUM:
            case RED_MEAN:
                for (int64_t i = 0; i < n; i++)
                    drow[i] = f[i];
                break;
            case RED_MAX:
            case RED_MIN:
                for (int64_t i = 0; i < n; i++)
                    drow[i] = row[i] == yb[i] ? f[i] : 0.0f;
                break;
            case RED_PROD:
                /* the division outside the condition: a conditional one does not vectorize
                 * (it might trap) */
                for (int64_t i = 0; i < n; i++) {
                    float quot = f[i] / (row[i] != 0.0f ? row[i] : 1.0f);
                    drow[i] = row[i] != 0.0f ? quot : z[i];
                }
                break;
            default: /* L2, sum square */
                for (int64_t i = 0; i < n; i++)
                    drow[i] = row[i] * f[i];
                break;
            }
        }
    }
    return FM_OK;
}

/* ---- integer inputs (masks, token counts): forward only, exact in 64 bits ---- */

static int64_t red_int_init(enum red_kind k)
{
    return k == RED_MAX ? INT64_MIN : k == RED_MIN ? INT64_MAX : k == RED_PROD ? 1 : 0;
}

static int64_t red_int_add(enum red_kind k, int64_t acc, int64_t v)
{
    switch (k) {
    case RED_MAX:
        return v > acc ? v : acc;
    case RED_MIN:
        return v < acc ? v : acc;
    case RED_PROD:
        return acc * v;
    case RED_SUMSQ:
        return acc + v * v;
    default:
        return acc + v;
    }
}

/* no memories: the integer arrays are in the priv (int32 results wrap as ONNX's int32 do) */
static enum fm_status red_int_run(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    (void)it;
    const struct red_priv *p = arg;
    int64_t n = p->nout * (p->last_reduced ? 1 : p->inner);
    FM_CPU_PARALLEL
    for (int64_t o = 0; o < n; o++) {
        /* last run reduced: output o is a row; kept: column o % inner of output row o / inner */
        int64_t q = p->last_reduced ? o : o / p->inner, col = p->last_reduced ? 0 : o % p->inner;
        int64_t len = p->last_reduced ? p->inner : 1;
        const int32_t *xb = p->xi + red_base(p, q) + col;
        int64_t acc = red_int_init(p->kind);
        for (int64_t r = 0; r < p->nro; r++)
            for (int64_t i = 0; i < len; i++)
                acc = red_int_add(p->kind, acc, xb[p->roff[r] + i]);
        p->yi[o] = (int32_t)acc;
    }
    return FM_OK;
}

/* Runs of the input's dims after dropping size-1 dims and merging neighbours of one kind. */
static enum fm_status red_plan(struct fm_cpu *s, const struct fm_node *n, struct red_priv *p)
{
    const struct fm_shape *xs = &fm_graph_tensor(s->g, n->in[0])->shape;
    bool red[FM_MAX_DIMS] = {false};
    for (int d = 0; d < xs->rank; d++)
        red[d] = n->attrs.nints == 0;
    for (int k = 0; k < n->attrs.nints; k++) {
        int64_t a = n->attrs.ints[k] < 0 ? n->attrs.ints[k] + xs->rank : n->attrs.ints[k];
        if (a >= 0 && a < xs->rank)
            red[a] = true;
    }
    int nr = 0;
    int64_t size[FM_MAX_DIMS];
    bool rflag[FM_MAX_DIMS];
    for (int d = 0; d < xs->rank; d++) {
        if (xs->dims[d] == 1)
            continue;
        if (nr > 0 && rflag[nr - 1] == red[d]) {
            size[nr - 1] *= xs->dims[d];
        } else {
            size[nr] = xs->dims[d];
            rflag[nr++] = red[d];
        }
    }
    if (nr == 0) {   /* one element: a kept run of 1 */
        size[0] = 1;
        rflag[nr++] = false;
    }
    int64_t stride[FM_MAX_DIMS], st = 1;
    for (int d = nr - 1; d >= 0; d--) {
        stride[d] = st;
        st *= size[d];
    }
    p->kind = red_kind_of(n->op);
    p->last_reduced = rflag[nr - 1];
    p->inner = size[nr - 1];
    p->nout = 1;
    p->count = p->last_reduced ? p->inner : 1;
    p->nro = 1;
    p->nk = 0;
    int outer = nr - 1;
    for (int d = 0; d < outer; d++) {
        if (rflag[d]) {
            p->nro *= size[d];
            p->count *= size[d];
        } else {
            p->kdim[p->nk] = size[d];
            p->kstride[p->nk++] = stride[d];
            p->nout *= size[d];
        }
    }
    p->roff = fm_cpu_buf(s, sizeof(int64_t) * (size_t)p->nro);
    if (!p->roff)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    /* the offsets of the reduced runs outside the inner one, in row-major order */
    for (int64_t r = 0; r < p->nro; r++) {
        int64_t q = r, off = 0;
        for (int d = outer - 1; d >= 0; d--) {
            if (!rflag[d])
                continue;
            int64_t t = q / size[d];
            off += (q - t * size[d]) * stride[d];
            q = t;
        }
        p->roff[r] = off;
    }
    return FM_OK;
}

static enum fm_status red_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct red_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    enum fm_status st = red_plan(s, n, p);
    if (!st && fm_cpu_is_int(s, n->in[0])) {
        st = fm_cpu_place_out(s, n->out[0]);
        if (st)
            return st;
        p->xi = fm_cpu_ints(s, n->in[0]);
        p->yi = fm_cpu_ints(s, n->out[0]);
        return fm_cpu_add_fn(s, id, FM_PHASE_FWD, red_int_run, p, NULL, 0);
    }
    dnnl_memory_t mems[2];
    if (!st)
        st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, n->in[0], false, &mems[0]);
    if (!st)
        st = fm_cpu_place_out(s, n->out[0]);
    if (!st)
        st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, n->out[0], false, &mems[1]);
    if (st)
        return st;
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, red_fwd_run, p, mems, 2);
}

static enum fm_status red_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    enum fm_phase ph = fm_cpu_grad_phase(s, n->in[0]);
    dnnl_memory_t mems[4];
    struct fm_cpu_sink sk;
    enum fm_status st = fm_cpu_input_plain(s, id, ph, n->in[0], false, &mems[0]);
    if (!st)
        st = fm_cpu_input_plain(s, id, ph, n->out[0], false, &mems[1]);
    if (!st)
        st = fm_cpu_input_plain(s, id, ph, n->out[0], true, &mems[2]);
    if (!st)
        st = fm_cpu_sink_plain(s, id, ph, n->in[0], &sk, &mems[3]);
    if (st || !mems[3])
        return st;
    st = fm_cpu_add_fn(s, id, ph, red_bwd_run, s->nodes[id].priv, mems, 4);
    return st ? st : fm_cpu_sink_end(s, &sk);
}

/* ---- CumSum ---- */

struct cumsum_priv {
    int64_t outer, len, inner;
    const int32_t *xi;           /* an integer input (forward only) */
    int32_t *yi;
};

/* memories: src, dst; reverse: the backward (a scan from the end) */
static void cumsum_scan(const struct cumsum_priv *p, const float *x, float *y, bool reverse)
{
    if (p->inner == 1) {
        /* along the last axis: CUMSUM_ROWS rows at once, so the additions of one row, a chain
         * that cannot be reordered, overlap with the other rows' */
        int64_t ng = (p->outer + CUMSUM_ROWS - 1) / CUMSUM_ROWS;
        FM_CPU_PARALLEL
        for (int64_t gi = 0; gi < ng; gi++) {
            int64_t r0 = gi * CUMSUM_ROWS;
            int nr = p->outer - r0 < CUMSUM_ROWS ? (int)(p->outer - r0) : CUMSUM_ROWS;
            const float *xs = x + r0 * p->len;
            float *ys = y + r0 * p->len;
            float acc[CUMSUM_ROWS] = {0.0f};
            for (int64_t l = 0; l < p->len; l++) {
                int64_t at = reverse ? p->len - 1 - l : l;
                for (int r = 0; r < nr; r++) {
                    acc[r] += xs[r * p->len + at];
                    ys[r * p->len + at] = acc[r];
                }
            }
        }
        return;
    }
    int64_t nb = (p->inner + RED_BLOCK - 1) / RED_BLOCK;
    FM_CPU_PARALLEL
    for (int64_t w = 0; w < p->outer * nb; w++) {
        int64_t o = w / nb, i0 = (w - o * nb) * RED_BLOCK;
        int64_t n = p->inner - i0 < RED_BLOCK ? p->inner - i0 : RED_BLOCK;
        int64_t base = o * p->len * p->inner + i0;
        float acc[RED_BLOCK];
        for (int64_t i = 0; i < n; i++)
            acc[i] = 0.0f;
        for (int64_t l = 0; l < p->len; l++) {
            int64_t off = base + (reverse ? p->len - 1 - l : l) * p->inner;
            for (int64_t i = 0; i < n; i++) {
                acc[i] += x[off + i];
                y[off + i] = acc[i];
            }
        }
    }
}

static enum fm_status cumsum_fwd_run(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    cumsum_scan(arg, fm_cpu_item_f32(it, 0), fm_cpu_item_f32(it, 1), false);
    return FM_OK;
}

static enum fm_status cumsum_bwd_run(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    cumsum_scan(arg, fm_cpu_item_f32(it, 0), fm_cpu_item_f32(it, 1), true);
    return FM_OK;
}

/* no memories: the integer arrays are in the priv */
static enum fm_status cumsum_int_run(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    (void)it;
    const struct cumsum_priv *p = arg;
    FM_CPU_PARALLEL
    for (int64_t c = 0; c < p->outer * p->inner; c++) {
        int64_t o = c / p->inner, i = c - o * p->inner;
        int64_t base = o * p->len * p->inner + i, acc = 0;
        for (int64_t l = 0; l < p->len; l++) {
            acc += p->xi[base + l * p->inner];
            p->yi[base + l * p->inner] = (int32_t)acc;
        }
    }
    return FM_OK;
}

static enum fm_status cumsum_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const struct fm_shape *xs = &fm_graph_tensor(s->g, n->in[0])->shape;
    struct cumsum_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    int64_t axis = n->attrs.axis < 0 ? n->attrs.axis + xs->rank : n->attrs.axis;
    p->outer = p->len = p->inner = 1;
    for (int d = 0; d < xs->rank; d++)
        *(d < axis ? &p->outer : d == axis ? &p->len : &p->inner) *= xs->dims[d];
    if (fm_cpu_is_int(s, n->in[0])) {
        enum fm_status st = fm_cpu_place_out(s, n->out[0]);
        if (st)
            return st;
        p->xi = fm_cpu_ints(s, n->in[0]);
        p->yi = fm_cpu_ints(s, n->out[0]);
        return fm_cpu_add_fn(s, id, FM_PHASE_FWD, cumsum_int_run, p, NULL, 0);
    }
    dnnl_memory_t mems[2];
    enum fm_status st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, n->in[0], false, &mems[0]);
    if (!st)
        st = fm_cpu_place_out(s, n->out[0]);
    if (!st)
        st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, n->out[0], false, &mems[1]);
    if (st)
        return st;
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, cumsum_fwd_run, p, mems, 2);
}

static enum fm_status cumsum_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    enum fm_phase ph = fm_cpu_grad_phase(s, n->in[0]);
    dnnl_memory_t mems[2];
    struct fm_cpu_sink sk;
    enum fm_status st = fm_cpu_input_plain(s, id, ph, n->out[0], true, &mems[0]);
    if (!st)
        st = fm_cpu_sink_plain(s, id, ph, n->in[0], &sk, &mems[1]);
    if (st || !mems[1])
        return st;
    st = fm_cpu_add_fn(s, id, ph, cumsum_bwd_run, s->nodes[id].priv, mems, 2);
    return st ? st : fm_cpu_sink_end(s, &sk);
}

/* ---- dispatch ---- */

enum fm_status fm_cpu_reduce_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                   const struct fm_node *n)
{
    const struct fm_tensor *x = fm_graph_tensor(g, n->in[0]);
    if (!fm_dtype_is_float(x->dtype) &&
        (n->op == FM_OP_REDUCE_MEAN || n->op == FM_OP_REDUCE_L2))
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (%s): %s input; the CPU backend "
                        "takes integer inputs only for sums, products, max, min and CumSum",
                        n->name, n->op_name, fm_dtype_name(x->dtype));
    if (n->n_in > 1 && n->in[1] != FM_NONE)
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (%s): the axes come as a tensor; "
                        "the CPU backend needs them as constants in the node's attributes",
                        n->name, n->op_name);
    return FM_OK;
}

enum fm_status fm_cpu_reduce_fwd(struct fm_cpu *s, fm_nid id)
{
    return fm_graph_node(s->g, id)->op == FM_OP_CUMSUM ? cumsum_fwd(s, id) : red_fwd(s, id);
}

enum fm_status fm_cpu_reduce_bwd(struct fm_cpu *s, fm_nid id)
{
    return fm_graph_node(s->g, id)->op == FM_OP_CUMSUM ? cumsum_bwd(s, id) : red_bwd(s, id);
}
