/* The constant folder: a node whose inputs are all known constants and whose result is small
 * (at most OX_FOLD_MAX elements) is evaluated at load time instead of becoming a layer. This is
 * how the Shape -> Gather -> Concat -> Reshape subgraphs of exported models give Reshape, Expand
 * and Resize their targets. It reads no payloads (onnx_build.c does) and maps nothing: a node
 * it declines goes to the mappers (onnx_map.c). */
#include "onnx_internal.h"

#include <math.h>
#include <string.h>

/* ---- the evaluator: small dense tensors with shapes ---- */

struct tv {
    struct fm_shape shape;
    enum fm_dtype dtype;
    bool is_float;
    uint64_t n;
    const int64_t *i;
    const double *f;
};

static double tv_f(const struct tv *t, uint64_t k)
{
    return t->is_float ? t->f[k] : (double)t->i[k];
}

/* A float constant as an integer: NaN is 0 and values beyond int64 saturate. A plain cast is
 * undefined there (found by fuzz_onnx: Cast of Reciprocal(0) = inf to int64). */
static int64_t f2i(double v)
{
    if (v != v)
        return 0;
    if (v >= 9223372036854775808.0)
        return INT64_MAX;
    if (v < -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

static int64_t tv_i(const struct tv *t, uint64_t k)
{
    return t->is_float ? f2i(t->f[k]) : t->i[k];
}

static uint64_t shape_n(const struct fm_shape *s)
{
    uint64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->dims[i] < 0 || !fm_mul_ok(n, (uint64_t)s->dims[i], &n))
            return UINT64_MAX;
    }
    return n;
}

/* Offset into t of the element at output coordinate c (numpy broadcasting). */
static uint64_t bcast_offset(const struct tv *t, const struct fm_shape *out, const int64_t *c)
{
    uint64_t off = 0;
    int shift = out->rank - t->shape.rank;
    for (int d = 0; d < t->shape.rank; d++) {
        int64_t x = t->shape.dims[d] == 1 ? 0 : c[d + shift];
        off = off * (uint64_t)t->shape.dims[d] + (uint64_t)x;
    }
    return off;
}

static void coords(const struct fm_shape *s, uint64_t k, int64_t *c)
{
    for (int d = s->rank - 1; d >= 0; d--) {
        c[d] = (int64_t)(k % (uint64_t)s->dims[d]);
        k /= (uint64_t)s->dims[d];
    }
}

struct fold {
    struct ox *ox;
    const Onnx__NodeProto *node;
    struct tv in[FM_MAX_IO];
    int n_in;
    /* the result */
    struct fm_shape shape;
    enum fm_dtype dtype;
    bool is_float;
    int64_t *ri;
    double *rf;
    uint64_t n;
};

/* Not foldable: map the node instead. Not an error, and distinct from every fm_status. */
#define FOLD_NO ((enum fm_status)100)

static enum fm_status result_alloc(struct fold *f, const struct fm_shape *s, enum fm_dtype dt)
{
    f->shape = *s;
    f->dtype = dt;
    f->is_float = fm_dtype_is_float(dt);
    f->n = shape_n(s);
    if (f->n > OX_FOLD_MAX)
        return FOLD_NO;
    void *p = fm_arena_alloc(&f->ox->arena, (size_t)(f->n ? f->n : 1) * 8);
    if (!p)
        return fm_error(f->ox->ctx, FM_ERR_NOMEM, "out of memory evaluating constants");
    if (f->is_float)
        f->rf = p;
    else
        f->ri = p;
    return FM_OK;
}

static void put(struct fold *f, uint64_t k, double fv, int64_t iv, bool from_float)
{
    if (f->is_float)
        f->rf[k] = from_float ? fv : (double)iv;
    else if (f->dtype == FM_DTYPE_BOOL)
        f->ri[k] = from_float ? fv != 0 : iv != 0;
    else
        f->ri[k] = from_float ? f2i(fv) : iv;
}

/* Copies element k of input a to result element j. */
static void copy_el(struct fold *f, uint64_t j, const struct tv *a, uint64_t k)
{
    put(f, j, a->is_float ? a->f[k] : 0, a->is_float ? 0 : a->i[k], a->is_float);
}

static enum fm_status bad(struct fold *f, const char *fmt, const char *a)
{
    return ox_node_error(f->ox, f->node, FM_ERR_SHAPE, fmt, a);
}

static enum fm_status axes_of(struct fold *f, const char *attr, int slot, int64_t *axes, int *n)
{
    *n = 0;
    if (slot < f->n_in && f->in[slot].n != UINT64_MAX && (f->in[slot].i || f->in[slot].f)) {
        if (f->in[slot].n > FM_MAX_DIMS)
            return FOLD_NO;
        for (uint64_t k = 0; k < f->in[slot].n; k++)
            axes[(*n)++] = tv_i(&f->in[slot], k);
        return FM_OK;
    }
    return ox_attr_ints(f->ox, f->node, attr, axes, FM_MAX_DIMS, n);
}

static double binary_f(const char *op, double x, double y)
{
    if (!strcmp(op, "Add")) return x + y;
    if (!strcmp(op, "Sub")) return x - y;
    if (!strcmp(op, "Mul")) return x * y;
    if (!strcmp(op, "Div")) return x / y;
    if (!strcmp(op, "Mod")) return fmod(x, y);
    if (!strcmp(op, "Pow")) return pow(x, y);
    if (!strcmp(op, "Max")) return y > x ? y : x;
    if (!strcmp(op, "Min")) return y < x ? y : x;
    if (!strcmp(op, "Equal")) return x == y;
    if (!strcmp(op, "Less")) return x < y;
    if (!strcmp(op, "Greater")) return x > y;
    if (!strcmp(op, "LessOrEqual")) return x <= y;
    if (!strcmp(op, "GreaterOrEqual")) return x >= y;
    if (!strcmp(op, "And")) return x != 0 && y != 0;
    if (!strcmp(op, "Or")) return x != 0 || y != 0;
    return (x != 0) != (y != 0);   /* Xor */
}

/* Integer arithmetic wraps like the int64 kernels; division truncates (C and ONNX Runtime). */
static int64_t binary_i(const char *op, int64_t x, int64_t y)
{
    uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
    if (!strcmp(op, "Add")) return (int64_t)(ux + uy);
    if (!strcmp(op, "Sub")) return (int64_t)(ux - uy);
    if (!strcmp(op, "Mul")) return (int64_t)(ux * uy);
    if (!strcmp(op, "Div")) return (x == INT64_MIN && y == -1) ? x : x / y;
    if (!strcmp(op, "Mod")) return (x == INT64_MIN && y == -1) ? 0 : x % y;
    if (!strcmp(op, "Pow")) return f2i(pow((double)x, (double)y));
    if (!strcmp(op, "Max")) return y > x ? y : x;
    if (!strcmp(op, "Min")) return y < x ? y : x;
    return f2i(binary_f(op, (double)x, (double)y));
}

static enum fm_status fold_binary(struct fold *f, const char *op)
{
    bool where = !strcmp(op, "Where");
    struct fm_shape s = f->in[0].shape;
    for (int i = 1; i < f->n_in; i++) {
        struct fm_shape r;
        struct fm_node fake = {.name = ox_node_name(f->node), .op_name = op};
        if (f->in[i].n == UINT64_MAX)
            return FOLD_NO;
        enum fm_status st = fm_shape_broadcast(f->ox->ctx, &fake, &s, &f->in[i].shape, &r);
        if (st)
            return st;
        s = r;
    }
    bool cmp = !strcmp(op, "Equal") || !strcmp(op, "Less") || !strcmp(op, "Greater") ||
               !strcmp(op, "LessOrEqual") || !strcmp(op, "GreaterOrEqual") ||
               !strcmp(op, "And") || !strcmp(op, "Or") || !strcmp(op, "Xor");
    bool fl = false;
    for (int i = where ? 1 : 0; i < f->n_in; i++)
        fl |= f->in[i].is_float;
    const struct tv *a = &f->in[where ? 1 : 0];
    /* ONNX's integer Mod takes the divisor's sign (Python's %) unless fmod = 1 (C's %) */
    int64_t fmod_attr = 1;
    enum fm_status st = !strcmp(op, "Mod") ? ox_attr_int(f->ox, f->node, "fmod", 0, &fmod_attr)
                                           : FM_OK;
    if (!st)
        st = result_alloc(f, &s, cmp ? FM_DTYPE_BOOL : a->dtype);
    if (st)
        return st;
    int64_t c[FM_MAX_DIMS];
    for (uint64_t k = 0; k < f->n; k++) {
        coords(&s, k, c);
        if (where) {
            const struct tv *pick = tv_i(&f->in[0], bcast_offset(&f->in[0], &s, c)) ? &f->in[1]
                                                                                    : &f->in[2];
            copy_el(f, k, pick, bcast_offset(pick, &s, c));
            continue;
        }
        uint64_t oa = bcast_offset(a, &s, c);
        double x = tv_f(a, oa);
        int64_t xi = tv_i(a, oa);
        for (int i = 1; i < f->n_in; i++) {
            const struct tv *b = &f->in[i];
            uint64_t ob = bcast_offset(b, &s, c);
            int64_t yi = tv_i(b, ob);
            if (!fl && yi == 0 && (!strcmp(op, "Div") || !strcmp(op, "Mod")))
                return bad(f, "divides by zero while evaluating %s", "a constant");
            if (fl)
                x = binary_f(op, x, tv_f(b, ob));
            else
                xi = binary_i(op, xi, yi);
            if (!fl && !fmod_attr && xi != 0 && (xi < 0) != (yi < 0))
                xi += yi;   /* the remainder moved to the divisor's sign */
        }
        if (cmp)
            put(f, k, 0, fl ? f2i(x) : xi, false);
        else
            put(f, k, x, xi, fl);
    }
    return FM_OK;
}

static enum fm_status fold_unary(struct fold *f, const char *op)
{
    const struct tv *a = &f->in[0];
    enum fm_status st = result_alloc(f, &a->shape, !strcmp(op, "Not") ? FM_DTYPE_BOOL : a->dtype);
    if (st)
        return st;
    for (uint64_t k = 0; k < f->n; k++) {
        double x = tv_f(a, k);
        int64_t xi = tv_i(a, k);
        /* integers wrap as in the int64 kernels: -INT64_MIN is INT64_MIN, not UB (fuzz_onnx) */
        if (!strcmp(op, "Neg")) { x = -x; xi = (int64_t)(0 - (uint64_t)xi); }
        else if (!strcmp(op, "Abs")) { x = fabs(x); xi = xi < 0 ? (int64_t)(0 - (uint64_t)xi) : xi; }
        else if (!strcmp(op, "Not")) xi = !xi;
        else if (!strcmp(op, "Sqrt")) x = sqrt(x);
        else if (!strcmp(op, "Floor")) x = floor(x);
        else if (!strcmp(op, "Ceil")) x = ceil(x);
        else if (!strcmp(op, "Round")) x = nearbyint(x);
        else if (!strcmp(op, "Reciprocal")) x = 1.0 / x;
        else if (!strcmp(op, "Relu")) { x = x > 0 ? x : 0; xi = xi > 0 ? xi : 0; }
        else if (!strcmp(op, "Sign")) { x = (x > 0) - (x < 0); xi = (xi > 0) - (xi < 0); }
        put(f, k, x, xi, a->is_float);
    }
    return FM_OK;
}

/* Reshape-like ops: the values stay, the shape changes. */
static enum fm_status fold_view(struct fold *f, const struct fm_shape *s)
{
    enum fm_status st = result_alloc(f, s, f->in[0].dtype);
    if (st)
        return st;
    if (f->n != f->in[0].n)
        return bad(f, "%s: element counts differ while evaluating a constant", "reshape");
    for (uint64_t k = 0; k < f->n; k++)
        copy_el(f, k, &f->in[0], k);
    return FM_OK;
}

static enum fm_status fold_reshape(struct fold *f)
{
    const struct tv *x = &f->in[0], *t = &f->in[1];
    if (f->n_in < 2 || t->n > FM_MAX_DIMS || (!t->i && !t->f))
        return FOLD_NO;
    int64_t allowzero = 0;
    enum fm_status st = ox_attr_int(f->ox, f->node, "allowzero", 0, &allowzero);
    if (st)
        return st;
    struct fm_shape s = {(int)t->n, {0}};
    int infer = -1;
    uint64_t known = 1;
    for (int i = 0; i < s.rank; i++) {
        int64_t d = tv_i(t, (uint64_t)i);
        if (d == 0 && !allowzero && i < x->shape.rank)
            d = x->shape.dims[i];
        if (d == -1 && infer < 0) {
            infer = i;
            continue;
        }
        if (d <= 0)
            return FOLD_NO;   /* let the Reshape rule say what is wrong */
        s.dims[i] = d;
        if (!fm_mul_ok(known, (uint64_t)d, &known))
            return FOLD_NO;   /* a product past 2^64 must not wrap into a plausible size */
    }
    if (infer >= 0) {
        if (!known || x->n % known)
            return FOLD_NO;
        s.dims[infer] = (int64_t)(x->n / known);
    }
    return fold_view(f, &s);
}

static enum fm_status fold_unsqueeze(struct fold *f, bool squeeze)
{
    int64_t axes[FM_MAX_DIMS];
    int na;
    enum fm_status st = axes_of(f, "axes", 1, axes, &na);
    if (st)
        return st;
    const struct fm_shape *x = &f->in[0].shape;
    int rank = squeeze ? x->rank : x->rank + na;
    if (rank > FM_MAX_DIMS)
        return FOLD_NO;
    bool mark[FM_MAX_DIMS] = {false};
    for (int k = 0; k < na; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
        if (a < 0 || a >= rank)
            return FOLD_NO;
        mark[a] = true;
    }
    struct fm_shape s = {0};
    for (int i = 0, j = 0; i < rank; i++) {
        if (squeeze) {
            bool drop = na ? mark[i] : x->dims[i] == 1;
            if (!drop)
                s.dims[s.rank++] = x->dims[i];
        } else {
            s.dims[s.rank++] = mark[i] ? 1 : x->dims[j++];
        }
    }
    return fold_view(f, &s);
}

static enum fm_status fold_concat(struct fold *f)
{
    int64_t axis;   /* Concat-1 (opsets 1 to 3): optional, default 1 */
    enum fm_status st = ox_attr_int(f->ox, f->node, "axis", f->ox->opset < 4 ? 1 : 0, &axis);
    if (st)
        return st;
    const struct tv *first = NULL;
    for (int i = 0; i < f->n_in && !first; i++) {
        if (f->in[i].n != UINT64_MAX)
            first = &f->in[i];
    }
    if (!first)
        return FOLD_NO;
    int rank = first->shape.rank;
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return FOLD_NO;
    struct fm_shape s = first->shape;
    s.dims[axis] = 0;
    for (int i = 0; i < f->n_in; i++) {
        const struct tv *t = &f->in[i];
        if (t->n == UINT64_MAX)
            continue;   /* an empty input adds nothing */
        if (t->shape.rank != rank)
            return FOLD_NO;
        for (int d = 0; d < rank; d++) {
            if (d != axis && t->shape.dims[d] != first->shape.dims[d])
                return FOLD_NO;
        }
        s.dims[axis] += t->shape.dims[axis];
    }
    st = result_alloc(f, &s, first->dtype);
    if (st)
        return st;
    uint64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= (uint64_t)s.dims[d];
    for (int d = (int)axis + 1; d < rank; d++)
        inner *= (uint64_t)s.dims[d];
    uint64_t j = 0;
    for (uint64_t o = 0; o < outer; o++) {
        for (int i = 0; i < f->n_in; i++) {
            const struct tv *t = &f->in[i];
            if (t->n == UINT64_MAX)
                continue;
            uint64_t block = (uint64_t)t->shape.dims[axis] * inner;
            for (uint64_t k = 0; k < block; k++)
                copy_el(f, j++, t, o * block + k);
        }
    }
    return FM_OK;
}

static enum fm_status fold_gather(struct fold *f)
{
    int64_t axis;
    enum fm_status st = ox_attr_int(f->ox, f->node, "axis", 0, &axis);
    if (st)
        return st;
    const struct tv *x = &f->in[0], *idx = &f->in[1];
    /* an omitted indices input is n = UINT64_MAX with no values: reading it crashed (fuzz_onnx) */
    if (f->n_in < 2 || idx->n == UINT64_MAX || idx->is_float)
        return FOLD_NO;
    if (axis < 0)
        axis += x->shape.rank;
    if (axis < 0 || axis >= x->shape.rank || x->shape.rank - 1 + idx->shape.rank > FM_MAX_DIMS)
        return FOLD_NO;
    struct fm_shape s = {0};
    for (int d = 0; d < axis; d++)
        s.dims[s.rank++] = x->shape.dims[d];
    for (int d = 0; d < idx->shape.rank; d++)
        s.dims[s.rank++] = idx->shape.dims[d];
    for (int d = (int)axis + 1; d < x->shape.rank; d++)
        s.dims[s.rank++] = x->shape.dims[d];
    st = result_alloc(f, &s, x->dtype);
    if (st)
        return st;
    uint64_t outer = 1, inner = 1, len = (uint64_t)x->shape.dims[axis];
    for (int d = 0; d < axis; d++)
        outer *= (uint64_t)x->shape.dims[d];
    for (int d = (int)axis + 1; d < x->shape.rank; d++)
        inner *= (uint64_t)x->shape.dims[d];
    uint64_t j = 0;
    for (uint64_t o = 0; o < outer; o++) {
        for (uint64_t q = 0; q < idx->n; q++) {
            int64_t v = idx->i[q];
            if (v < 0)
                v += (int64_t)len;
            if (v < 0 || (uint64_t)v >= len)
                return ox_node_error(f->ox, f->node, FM_ERR_SHAPE,
                                     "index %lld is out of range for size %llu",
                                     (long long)idx->i[q], (unsigned long long)len);
            for (uint64_t k = 0; k < inner; k++)
                copy_el(f, j++, x, (o * len + (uint64_t)v) * inner + k);
        }
    }
    return FM_OK;
}

/* ScatterND: a copy of data with the slices that indices name replaced by (or, with a reduction,
 * combined with) updates. Swin's shifted-window mask is built this way from shapes alone. */
static enum fm_status fold_scatter_nd(struct fold *f)
{
    const struct tv *x = &f->in[0], *idx = &f->in[1], *up = &f->in[2];
    if (f->n_in != 3 || idx->n == UINT64_MAX || up->n == UINT64_MAX || idx->is_float ||
        idx->shape.rank < 1)
        return FOLD_NO;
    char red[16];
    enum fm_status st = ox_attr_string(f->ox, f->node, "reduction", "none", red, sizeof(red));
    if (st)
        return st;
    int mode = !strcmp(red, "none") ? 0 : !strcmp(red, "add") ? 1 : !strcmp(red, "mul") ? 2
             : !strcmp(red, "max") ? 3 : !strcmp(red, "min") ? 4 : -1;
    if (mode < 0)
        return bad(f, "has reduction '%s' (none, add, mul, max and min are defined)", red);
    int q = idx->shape.rank, r = x->shape.rank;
    int64_t k = idx->shape.dims[q - 1];
    if (k < 1 || k > r || q - 1 + r - k != up->shape.rank)
        return bad(f, "has indices and updates whose shapes do not fit %s", "data");
    for (int d = 0; d < q - 1; d++) {
        if (up->shape.dims[d] != idx->shape.dims[d])
            return bad(f, "has indices and updates whose shapes do not fit %s", "data");
    }
    uint64_t inner = 1;
    for (int d = (int)k; d < r; d++) {
        if (up->shape.dims[q - 1 + d - (int)k] != x->shape.dims[d])
            return bad(f, "has indices and updates whose shapes do not fit %s", "data");
        inner *= (uint64_t)x->shape.dims[d];
    }
    st = result_alloc(f, &x->shape, x->dtype);
    if (st)
        return st;
    for (uint64_t j = 0; j < f->n; j++)
        copy_el(f, j, x, j);
    uint64_t n_upd = idx->n / (uint64_t)k;
    for (uint64_t u = 0; u < n_upd; u++) {
        uint64_t off = 0;
        for (int64_t d = 0; d < k; d++) {
            int64_t v = idx->i[u * (uint64_t)k + (uint64_t)d], len = x->shape.dims[d];
            if (v < 0)
                v += len;
            if (v < 0 || v >= len)
                return ox_node_error(f->ox, f->node, FM_ERR_SHAPE,
                                     "index %lld is out of range for size %lld",
                                     (long long)idx->i[u * (uint64_t)k + (uint64_t)d],
                                     (long long)len);
            off = off * (uint64_t)len + (uint64_t)v;
        }
        for (uint64_t e = 0; e < inner; e++) {
            uint64_t j = off * inner + e, from = u * inner + e;
            double a = f->is_float ? f->rf[j] : (double)f->ri[j], b = tv_f(up, from);
            if (mode == 0 && !f->is_float) {
                put(f, j, 0, tv_i(up, from), false);
                continue;
            }
            double v = mode == 0 ? b : mode == 1 ? a + b : mode == 2 ? a * b
                     : mode == 3 ? (a > b ? a : b) : (a < b ? a : b);
            put(f, j, v, 0, true);
        }
    }
    return FM_OK;
}

/* Normalized slice: clamps like the ONNX spec (and numpy). */
enum fm_status ox_slice_params(struct ox *ox, const Onnx__NodeProto *node,
                               const struct fm_shape *x, const int64_t *starts,
                               const int64_t *ends, const int64_t *axes, const int64_t *steps,
                               int n, int64_t *triples)
{
    for (int d = 0; d < x->rank; d++) {
        triples[3 * d] = 0;
        triples[3 * d + 1] = x->dims[d];
        triples[3 * d + 2] = 1;
    }
    bool seen[FM_MAX_DIMS] = {false};
    for (int k = 0; k < n; k++) {
        int64_t a = axes ? axes[k] : k;
        if (a < 0)
            a += x->rank;
        if (a < 0 || a >= x->rank || seen[a])
            return ox_node_error(ox, node, FM_ERR_SHAPE, "axis %lld is out of range or repeated "
                                 "for rank %d", (long long)(axes ? axes[k] : k), x->rank);
        seen[a] = true;
        int64_t dim = x->dims[a], step = steps ? steps[k] : 1;
        if (step == 0)
            return ox_node_error(ox, node, FM_ERR_SHAPE, "step 0 on axis %lld", (long long)a);
        int64_t s = starts[k], e = ends[k];
        if (s < 0)
            s = s < -dim ? 0 : s + dim;   /* careful with INT64_MIN: compared first */
        if (e < 0)
            e = e < -dim ? -1 : e + dim;
        if (step > 0) {
            s = s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
        } else {
            s = s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
        }
        triples[3 * a] = s;
        triples[3 * a + 1] = e;
        triples[3 * a + 2] = step;
    }
    return FM_OK;
}

static enum fm_status fold_slice(struct fold *f)
{
    const struct tv *x = &f->in[0];
    int64_t st_[FM_MAX_DIMS], en[FM_MAX_DIMS], ax[FM_MAX_DIMS], sp[FM_MAX_DIMS];
    int n = 0, na = 0, ns = 0;
    enum fm_status st;
    if (f->ox->opset < 10) {
        int ne = 0;
        st = ox_attr_ints(f->ox, f->node, "starts", st_, FM_MAX_DIMS, &n);
        if (!st)
            st = ox_attr_ints(f->ox, f->node, "ends", en, FM_MAX_DIMS, &ne);
        if (!st)
            st = ox_attr_ints(f->ox, f->node, "axes", ax, FM_MAX_DIMS, &na);
        if (st)
            return st;
        if (ne != n)
            return FOLD_NO;
    } else {
        if (f->n_in < 3 || f->in[1].n > FM_MAX_DIMS || f->in[2].n != f->in[1].n ||
            f->in[1].is_float || f->in[2].is_float)
            return FOLD_NO;
        n = (int)f->in[1].n;
        for (int k = 0; k < n; k++) {
            st_[k] = f->in[1].i[k];
            en[k] = f->in[2].i[k];
        }
        if (f->n_in > 3 && f->in[3].n != UINT64_MAX) {
            if (f->in[3].n != (uint64_t)n || f->in[3].is_float)
                return FOLD_NO;
            na = n;
            for (int k = 0; k < n; k++)
                ax[k] = f->in[3].i[k];
        }
        if (f->n_in > 4 && f->in[4].n != UINT64_MAX) {
            if (f->in[4].n != (uint64_t)n || f->in[4].is_float)
                return FOLD_NO;
            ns = n;
            for (int k = 0; k < n; k++)
                sp[k] = f->in[4].i[k];
        }
    }
    int64_t tr[3 * FM_MAX_DIMS];
    st = ox_slice_params(f->ox, f->node, &x->shape, st_, en, na ? ax : NULL, ns ? sp : NULL, n,
                         tr);
    if (st)
        return st;
    struct fm_shape s = x->shape;
    for (int d = 0; d < x->shape.rank; d++) {
        int64_t a = tr[3 * d], b = tr[3 * d + 1], k = tr[3 * d + 2];
        /* ceil(|b - a| / |k|) without the overflow of b - a + k - 1 or -k for huge steps */
        int64_t len = k > 0 ? (b > a ? (b - a - 1) / k + 1 : 0)
                            : (a > b ? (int64_t)((uint64_t)(a - b - 1) / (0 - (uint64_t)k)) + 1
                                     : 0);
        s.dims[d] = len;   /* 0: an empty result (x.shape[2:] of a 2-D x), no elements */
    }
    st = result_alloc(f, &s, x->dtype);
    if (st)
        return st;
    int64_t c[FM_MAX_DIMS];
    for (uint64_t j = 0; j < f->n; j++) {
        coords(&s, j, c);
        uint64_t off = 0;
        for (int d = 0; d < s.rank; d++)
            off = off * (uint64_t)x->shape.dims[d] + (uint64_t)(tr[3 * d] + c[d] * tr[3 * d + 2]);
        copy_el(f, j, x, off);
    }
    return FM_OK;
}

static enum fm_status fold_transpose(struct fold *f)
{
    const struct tv *x = &f->in[0];
    int64_t perm[FM_MAX_DIMS];
    int np;
    enum fm_status st = ox_attr_ints(f->ox, f->node, "perm", perm, FM_MAX_DIMS, &np);
    if (st)
        return st;
    int r = x->shape.rank;
    if (np == 0) {
        for (int d = 0; d < r; d++)
            perm[d] = r - 1 - d;
        np = r;
    }
    if (np != r)
        return FOLD_NO;
    struct fm_shape s = {r, {0}};
    for (int d = 0; d < r; d++) {
        if (perm[d] < 0 || perm[d] >= r)
            return FOLD_NO;
        s.dims[d] = x->shape.dims[perm[d]];
    }
    st = result_alloc(f, &s, x->dtype);
    if (st)
        return st;
    int64_t c[FM_MAX_DIMS], src[FM_MAX_DIMS];
    for (uint64_t j = 0; j < f->n; j++) {
        coords(&s, j, c);
        for (int d = 0; d < r; d++)
            src[perm[d]] = c[d];
        uint64_t off = 0;
        for (int d = 0; d < r; d++)
            off = off * (uint64_t)x->shape.dims[d] + (uint64_t)src[d];
        copy_el(f, j, x, off);
    }
    return FM_OK;
}

/* Expand and Tile: the target is broadcast or repeated. */
static enum fm_status fold_expand(struct fold *f, bool tile)
{
    const struct tv *x = &f->in[0], *t = &f->in[1];
    if (t->n > FM_MAX_DIMS || t->is_float)
        return FOLD_NO;
    struct fm_shape s;
    if (tile) {
        if ((int)t->n != x->shape.rank)
            return FOLD_NO;
        s = x->shape;
        for (int d = 0; d < s.rank; d++) {
            if (t->i[d] <= 0 || t->i[d] > OX_FOLD_MAX)
                return FOLD_NO;
            s.dims[d] *= t->i[d];
        }
    } else {
        struct fm_shape ts = {(int)t->n, {0}};
        for (int d = 0; d < ts.rank; d++)
            ts.dims[d] = t->i[d];
        struct fm_node fake = {.name = ox_node_name(f->node), .op_name = "Expand"};
        enum fm_status st = fm_shape_broadcast(f->ox->ctx, &fake, &x->shape, &ts, &s);
        if (st)
            return st;
    }
    enum fm_status st = result_alloc(f, &s, x->dtype);
    if (st)
        return st;
    int64_t c[FM_MAX_DIMS];
    for (uint64_t j = 0; j < f->n; j++) {
        coords(&s, j, c);
        if (tile) {
            uint64_t off = 0;
            for (int d = 0; d < s.rank; d++)
                off = off * (uint64_t)x->shape.dims[d] + (uint64_t)(c[d] % x->shape.dims[d]);
            copy_el(f, j, x, off);
        } else {
            copy_el(f, j, x, bcast_offset(x, &s, c));
        }
    }
    return FM_OK;
}

static enum fm_status fold_reduce(struct fold *f, const char *op)
{
    const struct tv *x = &f->in[0];
    int64_t axes[FM_MAX_DIMS], keep = 1, noop = 0;
    int na;
    bool input_axes = !strcmp(op, "ReduceSum") ? f->ox->opset >= 13 : f->ox->opset >= 18;
    enum fm_status st = input_axes ? axes_of(f, "", 1, axes, &na)
                                   : ox_attr_ints(f->ox, f->node, "axes", axes, FM_MAX_DIMS, &na);
    if (!st)
        st = ox_attr_int(f->ox, f->node, "keepdims", 1, &keep);
    if (!st)
        st = ox_attr_int(f->ox, f->node, "noop_with_empty_axes", 0, &noop);
    if (st)
        return st;
    if (input_axes && (f->n_in < 2 || f->in[1].n == UINT64_MAX))
        na = 0;
    if (na == 0 && noop)
        return fold_view(f, &x->shape);
    bool red[FM_MAX_DIMS] = {false};
    for (int d = 0; d < x->shape.rank; d++)
        red[d] = na == 0;
    for (int k = 0; k < na; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + x->shape.rank : axes[k];
        if (a < 0 || a >= x->shape.rank)
            return FOLD_NO;
        red[a] = true;
    }
    struct fm_shape s = {0};
    for (int d = 0; d < x->shape.rank; d++) {
        if (!red[d])
            s.dims[s.rank++] = x->shape.dims[d];
        else if (keep)
            s.dims[s.rank++] = 1;
    }
    st = result_alloc(f, &s, x->dtype);
    if (st)
        return st;
    bool *set = fm_arena_alloc(&f->ox->arena, (size_t)f->n + 1);
    double *acc = fm_arena_alloc(&f->ox->arena, ((size_t)f->n + 1) * sizeof(double));
    int64_t *acci = fm_arena_alloc(&f->ox->arena, ((size_t)f->n + 1) * sizeof(int64_t));
    if (!set || !acc || !acci)
        return fm_error(f->ox->ctx, FM_ERR_NOMEM, "out of memory evaluating constants");
    int64_t c[FM_MAX_DIMS];
    for (uint64_t k = 0; k < x->n; k++) {
        coords(&x->shape, k, c);
        uint64_t j = 0;
        for (int d = 0; d < x->shape.rank; d++) {
            if (!red[d])
                j = j * (uint64_t)x->shape.dims[d] + (uint64_t)c[d];
        }
        double v = tv_f(x, k);
        int64_t vi = tv_i(x, k);
        if (!set[j]) {
            acc[j] = v;
            acci[j] = vi;
            set[j] = true;
        } else if (!strcmp(op, "ReduceSum") || !strcmp(op, "ReduceMean")) {
            /* integers wrap as in the binary folds (and ONNX runtimes), never signed overflow */
            acc[j] += v;
            acci[j] = (int64_t)((uint64_t)acci[j] + (uint64_t)vi);
        } else if (!strcmp(op, "ReduceProd")) {
            acc[j] *= v;
            acci[j] = (int64_t)((uint64_t)acci[j] * (uint64_t)vi);
        } else if (!strcmp(op, "ReduceMax")) {
            acc[j] = v > acc[j] ? v : acc[j];
            acci[j] = vi > acci[j] ? vi : acci[j];
        } else {
            acc[j] = v < acc[j] ? v : acc[j];
            acci[j] = vi < acci[j] ? vi : acci[j];
        }
    }
    uint64_t per = f->n ? x->n / f->n : 1;
    for (uint64_t j = 0; j < f->n; j++) {
        if (!strcmp(op, "ReduceMean")) {
            acc[j] /= (double)per;
            acci[j] /= (int64_t)per;
        }
        put(f, j, acc[j], acci[j], x->is_float);
    }
    return FM_OK;
}

enum fm_status ox_cast_to(struct ox *ox, const Onnx__NodeProto *node, int64_t *to)
{
    if (ox->opset >= 6)
        return ox_attr_int(ox, node, "to", 0, to);
    /* Cast-1 names the type: the TensorProto.DataType names, in their enum order */
    static const char *const names[] = {"UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16",
                                        "INT16", "INT32", "INT64", "STRING", "BOOL", "FLOAT16",
                                        "DOUBLE", "UINT32", "UINT64"};
    char name[16];
    enum fm_status st = ox_attr_string(ox, node, "to", "", name, sizeof(name));
    if (st)
        return st;
    for (size_t i = 1; i < sizeof(names) / sizeof(names[0]); i++) {
        if (!strcmp(name, names[i])) {
            *to = (int64_t)i;
            return FM_OK;
        }
    }
    return ox_node_error(ox, node, FM_ERR_PARSE, "Cast-1 (opset %lld): attribute 'to' is '%s', "
                         "not a type name of ONNX's TensorProto", (long long)ox->opset, name);
}

static enum fm_status fold_cast(struct fold *f)
{
    int64_t to;
    enum fm_status st = ox_cast_to(f->ox, f->node, &to);
    if (st)
        return st;
    enum fm_dtype dt;
    if (!ox_dtype((int32_t)to, &dt))
        return ox_node_error(f->ox, f->node, FM_ERR_UNSUPPORTED, "cast to type %lld",
                             (long long)to);
    st = result_alloc(f, &f->in[0].shape, dt);
    if (st)
        return st;
    for (uint64_t k = 0; k < f->n; k++)
        copy_el(f, k, &f->in[0], k);
    return FM_OK;
}

/* CastLike (opset 15): a Cast to the dtype of its second input, whose values are not read;
 * PyTorch 2's exporter writes every scalar of the model's Python code so (Range's bounds,
 * a missing bias's 0), which must fold for a shape to be known. */
static enum fm_status fold_cast_like(struct fold *f, enum fm_dtype dt)
{
    enum fm_status st = result_alloc(f, &f->in[0].shape, dt);
    if (st)
        return st;
    for (uint64_t k = 0; k < f->n; k++)
        copy_el(f, k, &f->in[0], k);
    return FM_OK;
}

static enum fm_status fold_range(struct fold *f)
{
    if (f->n_in != 3 || f->in[0].n != 1 || f->in[1].n != 1 || f->in[2].n != 1)
        return FOLD_NO;
    bool fl = f->in[0].is_float;
    double a = tv_f(&f->in[0], 0), b = tv_f(&f->in[1], 0), d = tv_f(&f->in[2], 0);
    if (d == 0)
        return bad(f, "%s: Range with delta 0", "constant");
    double len = ceil((b - a) / d);
    if (!(len >= 1))
        return FOLD_NO;   /* empty or absurd: the Range op reports it */
    if (len > OX_FOLD_MAX)
        return FOLD_NO;
    struct fm_shape s = {1, {(int64_t)len}};
    enum fm_status st = result_alloc(f, &s, f->in[0].dtype);
    if (st)
        return st;
    for (uint64_t k = 0; k < f->n; k++) {
        if (fl)
            f->rf[k] = a + (double)k * d;
        else
            f->ri[k] = (int64_t)((uint64_t)f->in[0].i[0] + k * (uint64_t)f->in[2].i[0]);
    }
    return FM_OK;
}

static enum fm_status fold_constant_of_shape(struct fold *f)
{
    const struct tv *t = &f->in[0];
    if (t->n > FM_MAX_DIMS || t->is_float)
        return FOLD_NO;
    struct fm_shape s = {(int)t->n, {0}};
    for (int d = 0; d < s.rank; d++) {
        s.dims[d] = t->i[d];
        if (t->i[d] <= 0)
            return FOLD_NO;
    }
    const Onnx__AttributeProto *a = ox_attr(f->node, "value");
    struct ox_val v = {0};
    enum fm_dtype dt = FM_DTYPE_FP32;
    if (a && a->t) {
        if (!ox_dtype(a->t->data_type, &dt))
            return FOLD_NO;
        enum fm_status st = ox_tensor_read(f->ox, a->t, "value", true, &v);
        if (st)
            return st;
        if (!v.known || v.n != 1)
            return FOLD_NO;
    }
    enum fm_status st = result_alloc(f, &s, dt);
    if (st)
        return st;
    for (uint64_t k = 0; k < f->n; k++)
        put(f, k, v.known && v.is_float ? v.f[0] : 0, v.known && !v.is_float ? v.i[0] : 0,
            v.known && v.is_float);
    return FM_OK;
}

static enum fm_status fold_shape(struct fold *f, const struct fm_shape *x)
{
    int64_t start = 0, end = x->rank;
    enum fm_status st = ox_attr_int(f->ox, f->node, "start", 0, &start);
    if (!st)
        st = ox_attr_int(f->ox, f->node, "end", x->rank, &end);
    if (st)
        return st;
    if (start < 0)
        start += x->rank;
    if (end < 0)
        end += x->rank;
    start = start < 0 ? 0 : start > x->rank ? x->rank : start;
    end = end < 0 ? 0 : end > x->rank ? x->rank : end;
    int64_t len = end > start ? end - start : 0;
    struct fm_shape s = {1, {len}};
    st = result_alloc(f, &s, FM_DTYPE_INT64);
    if (st)
        return st;
    for (int64_t k = 0; k < len; k++)
        f->ri[k] = x->dims[start + k];
    return FM_OK;
}

/* The folded result becomes the node's first output, a constant. */
static enum fm_status emit_result(struct fold *f)
{
    const Onnx__NodeProto *node = f->node;
    if (node->n_output < 1)
        return ox_node_error(f->ox, node, FM_ERR_PARSE, "has no output");
    struct ox_name *e = ox_name_find(f->ox, node->output[0]);
    if (!e)
        return FM_OK;   /* an unnamed output: nothing reads it */
    if (f->n == 0) {
        e->empty = true;
        e->empty_shape = f->shape;
        e->empty_dtype = f->dtype;
        return FM_OK;
    }
    struct ox_val v = {true, f->is_float, f->n, f->ri, f->rf};
    return ox_const_tensor(f->ox, node, e->name, FM_ROLE_CONST, f->dtype, &f->shape, &v, &e->tid);
}

static bool one_of(const char *op, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(op, list[i]))
            return true;
    }
    return false;
}

enum fm_status ox_fold(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in, int n_in,
                       bool *done)
{
    static const char *const binary[] = {
        "Add", "Sub", "Mul", "Div", "Mod", "Pow", "Max", "Min", "Equal", "Less", "Greater",
        "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Where"};
    static const char *const unary[] = {"Neg", "Abs", "Not", "Sqrt", "Floor", "Ceil", "Round",
                                        "Reciprocal", "Relu", "Sign"};
    static const char *const reduce[] = {"ReduceSum", "ReduceMean", "ReduceProd", "ReduceMax",
                                         "ReduceMin"};
    static const char *const others[] = {
        "Identity", "Cast", "CastLike", "Reshape", "Flatten", "Unsqueeze", "Squeeze", "Concat",
        "Gather", "Slice", "Transpose", "Expand", "Tile", "Range", "ConstantOfShape", "ScatterND"};
    *done = false;
    const char *op = ox_str(node->op_type);
    struct fold f;
    memset(&f, 0, sizeof(f));
    f.ox = ox;
    f.node = node;
    f.n_in = n_in;
    if (!strcmp(op, "Shape") || !strcmp(op, "Size")) {
        if (n_in < 1 || in[0] == FM_NONE)
            return ox_node_error(ox, node, FM_ERR_PARSE, "its input is missing");
        const struct fm_shape *x = &ox->g->tensors[in[0]].shape;
        enum fm_status st;
        if (!strcmp(op, "Size")) {
            struct fm_shape s = {0};
            st = result_alloc(&f, &s, FM_DTYPE_INT64);
            if (!st)
                f.ri[0] = (int64_t)shape_n(x);
        } else {
            st = fold_shape(&f, x);
        }
        if (st)
            return st;
        *done = true;
        return emit_result(&f);
    }
    bool bin = one_of(op, binary, sizeof(binary) / sizeof(binary[0]));
    bool un = one_of(op, unary, sizeof(unary) / sizeof(unary[0]));
    bool red = one_of(op, reduce, sizeof(reduce) / sizeof(reduce[0]));
    if (!bin && !un && !red && !one_of(op, others, sizeof(others) / sizeof(others[0])))
        return FM_OK;
    if (n_in < 1 || (n_in == 0 && strcmp(op, "Range")))
        return FM_OK;
    /* every input present must be known; absent optional inputs are marked n = UINT64_MAX */
    for (int i = 0; i < n_in; i++) {
        struct tv *t = &f.in[i];
        if (in[i] == FM_NONE) {
            t->n = UINT64_MAX;
            continue;
        }
        if (i == 1 && !strcmp(op, "CastLike")) {   /* only its dtype is read */
            t->dtype = ox->g->tensors[in[i]].dtype;
            continue;
        }
        const struct ox_val *v = ox_val_of(ox, in[i]);
        if (!v)
            return FM_OK;
        const struct fm_tensor *tt = &ox->g->tensors[in[i]];
        t->shape = tt->shape;
        t->dtype = tt->dtype;
        t->is_float = v->is_float;
        t->n = v->n;
        t->i = v->i;
        t->f = v->f;
        if (shape_n(&t->shape) != v->n)
            return FM_OK;
    }
    if (f.in[0].n == UINT64_MAX && strcmp(op, "Concat"))
        return FM_OK;
    /* opsets 1 to 6: broadcast=1 with an axis aligns B at that axis, not at the end; the
     * mapper implements that (onnx_map.c) */
    if (bin && ox->opset < 7 && ox_attr(node, "broadcast") && ox_attr(node, "axis"))
        return FM_OK;
    enum fm_status st;
    if (bin)
        st = (!strcmp(op, "Where") && n_in != 3) || n_in < 2 ? FOLD_NO : fold_binary(&f, op);
    else if (un)
        st = fold_unary(&f, op);
    else if (red)
        st = fold_reduce(&f, op);
    else if (!strcmp(op, "Identity"))
        st = fold_view(&f, &f.in[0].shape);
    else if (!strcmp(op, "Cast"))
        st = fold_cast(&f);
    else if (!strcmp(op, "CastLike"))
        st = n_in == 2 && in[1] != FM_NONE ? fold_cast_like(&f, f.in[1].dtype) : FOLD_NO;
    else if (!strcmp(op, "Reshape"))
        st = fold_reshape(&f);
    else if (!strcmp(op, "Flatten")) {
        int64_t axis;
        st = ox_attr_int(ox, node, "axis", 1, &axis);
        const struct fm_shape *x = &f.in[0].shape;
        if (!st) {
            if (axis < 0)
                axis += x->rank;
            if (axis < 0 || axis > x->rank) {
                st = FOLD_NO;
            } else {
                struct fm_shape s = {2, {1, 1}};
                for (int d = 0; d < x->rank; d++)
                    s.dims[d < axis ? 0 : 1] *= x->dims[d];
                st = fold_view(&f, &s);
            }
        }
    } else if (!strcmp(op, "Unsqueeze") || !strcmp(op, "Squeeze"))
        st = fold_unsqueeze(&f, !strcmp(op, "Squeeze"));
    else if (!strcmp(op, "Concat"))
        st = fold_concat(&f);
    else if (!strcmp(op, "Gather"))
        st = n_in == 2 ? fold_gather(&f) : FOLD_NO;
    else if (!strcmp(op, "Slice"))
        st = fold_slice(&f);
    else if (!strcmp(op, "Transpose"))
        st = fold_transpose(&f);
    else if (!strcmp(op, "Expand") || !strcmp(op, "Tile"))
        st = n_in == 2 ? fold_expand(&f, !strcmp(op, "Tile")) : FOLD_NO;
    else if (!strcmp(op, "Range"))
        st = fold_range(&f);
    else if (!strcmp(op, "ScatterND"))
        st = fold_scatter_nd(&f);
    else
        st = fold_constant_of_shape(&f);
    if (st == FOLD_NO)
        return FM_OK;
    if (st)
        return st;
    *done = true;
    return emit_result(&f);
}
