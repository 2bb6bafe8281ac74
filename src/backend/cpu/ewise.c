/* Elementwise math on the CPU backend: unary functions (Erf, Sqrt, Reciprocal, Neg, Exp, Log,
 * Abs, Sin, Cos, Tan, and the piecewise-constant Floor, Ceil, Round, Sign), binary and variadic
 * ops with numpy broadcasting of every operand (Sub, Div, Pow, Max, Min, Where, PRelu, and Add
 * and Mul when binary.c's oneDNN path cannot take them), Trilu, and the forward-only
 * comparisons and logic (Equal, Less, LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor, Not,
 * IsNaN).
 *
 * Where oneDNN has the operation it runs it: eltwise (exp, log, sqrt, abs, linear for Neg, pow
 * for Reciprocal, round) forward and backward in the input's own layout, and binary (sub, div,
 * max, min) when the first operand has the output's size, as oneDNN broadcasts the second
 * source only. Everything else is a "walk": one C function item over the output's elements in
 * plain row-major order, every operand (fp32, or int32 for integer and bool tensors) read
 * through its broadcasting strides. Dims along which all operands step alike are merged first,
 * so the innermost run is as long as possible and its operands step by 1 or stay put (0); the
 * runs, cut into chunks, are spread over the threads (FM_CPU_PARALLEL) and the inner loops are
 * specialised on the steps so the compiler vectorises them.
 *
 * Backward: an operand's gradient is computed by a walk over the output's shape, straight into
 * the operand's gradient when the operand has the output's size, else into scratch that a
 * oneDNN reduction sums down to the operand's dims (with a linear post-op for a sign). The
 * piecewise-constant ops deliver zeros, as PyTorch does; Max and Min send the gradient to the
 * input that was selected, split evenly between tied inputs (torch.maximum gives each of two
 * tied inputs half). Integer operands get no gradient. */
#include "cpu.h"

#include <math.h>
#include <string.h>

/* GCC keeps a float compare-and-select (the clamps of erf_fast and fm_cpu_exp_neg, Max, Min,
 * ReLU-like selects) as a branch while FP operations may trap, and a loop with a branch does
 * not vectorise: Erf ran at 10-20x a same-sized Add. Nothing here reads the FP exception flags,
 * so the loops may compute both sides; the values are the same. (Nor errno: the CPU backend
 * builds with -fno-math-errno, CMakeLists.txt.) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

#define EW_MAX_IN 8                  /* inputs of a variadic Max or Min */
#define EW_OPS (EW_MAX_IN + 3)       /* a walk's pointers: result, dy, y and the inputs */
#define EW_CHUNK 4096                /* elements of an inner run one thread takes at a time */

enum ew_kind {
    /* forward, fp32 */
    K_ADD, K_SUB, K_MUL, K_DIV, K_POW, K_PRELU, K_MAX, K_MIN, K_WHERE,
    K_ERF, K_SIN, K_COS, K_TAN, K_FLOOR, K_CEIL, K_SIGN,
    K_ASIN, K_ACOS, K_ATAN, K_SINH, K_COSH, K_ASINH, K_ACOSH, K_ATANH, K_SOFTPLUS, K_SOFTSIGN,
    K_MISH, K_SUM,
    /* forward, int32 */
    K_ADD_I, K_SUB_I, K_MUL_I, K_MAX_I, K_MIN_I, K_NEG_I, K_ABS_I,
    K_WHERE_I,   /* condition and X, Y all int32 (T5's relative-position buckets) */
    K_AND, K_OR, K_XOR, K_NOT,
    /* comparisons: operands fp32 (or int32 with _I), result int32 0/1 */
    K_EQ, K_LT, K_LE, K_GT, K_GE, K_EQ_I, K_LT_I, K_LE_I, K_GT_I, K_GE_I,
    K_ISNAN,     /* fp32 operand, result int32 0/1 */
    /* backward, the result is a gradient over the output's shape */
    K_ZERO,      /* (none) */
    K_NEG,       /* dy */
    K_DIV_B,     /* dy, a, b: -dy * a / b^2 */
    K_POW_X,     /* dy, x, p: dy * p * x^(p-1) */
    K_POW_P,     /* dy, x, p, y: dy * y * log(x) */
    K_SEL,       /* dy, y, x0..: dy where x_sel is y, split among ties */
    K_WHERE_X,   /* dy, cond */
    K_WHERE_Y,   /* dy, cond */
    K_PRELU_X,   /* dy, x, slope */
    K_PRELU_S,   /* dy, x */
    K_ERF_B,     /* dy, x */
    K_SIN_B,     /* dy, x */
    K_COS_B,     /* dy, x */
    K_TAN_B,     /* dy, y */
    /* dy, x: the inverse and hyperbolic functions, Softplus, Softsign, Mish */
    K_ASIN_B, K_ACOS_B, K_ATAN_B, K_SINH_B, K_COSH_B, K_ASINH_B, K_ACOSH_B, K_ATANH_B,
    K_SOFTPLUS_B, K_SOFTSIGN_B, K_MISH_B,
};

/* The iteration over an output of `outer` runs of `inner` elements; operand k of the run at
 * outer index (i0, i1, ...) starts at sum i_d * stride[k][d] and steps by inc[k] (0 or 1). */
struct ew_walk {
    int rank;                                /* outer dims */
    int64_t dims[FM_MAX_DIMS];
    int64_t stride[EW_OPS][FM_MAX_DIMS];
    int64_t inner, chunk, nchunks, units;
    int64_t inc[EW_OPS];
};

/* A walk item: slot 0 is the result, then the operands; an operand is an int32 array (ints)
 * or the item's memory mem[k] (fp32, whose data handle is read at run time). */
struct ew_item {
    enum ew_kind kind;
    int nops;
    int sel;                                 /* K_SEL: the operand slot differentiated */
    int32_t *ints[EW_OPS];
    int mem[EW_OPS];
    struct ew_walk w;
};

/* What the backward needs to know about the forward. */
struct ew_priv {
    dnnl_primitive_desc_t fwd;               /* oneDNN eltwise forward, or NULL */
    dnnl_alg_kind_t alg;
    float alpha, beta;
};

/* ---- the walk ---- */

static void walk_init(struct ew_walk *w, const struct fm_shape *out,
                      const struct fm_shape *const *shapes, int nops)
{
    struct fm_cpu_bcast b[EW_OPS];
    int64_t dims[FM_MAX_DIMS], st[EW_OPS][FM_MAX_DIMS];
    int r = 0;
    memset(w, 0, sizeof(*w));
    for (int k = 0; k < nops; k++)
        fm_cpu_bcast_init(&b[k], out, shapes[k]);
    for (int d = 0; d < out->rank; d++) {
        if (out->dims[d] == 1)
            continue;
        /* merge d into the previous dim when every operand walks both as one */
        bool merge = r > 0;
        for (int k = 0; k < nops && merge; k++)
            merge = st[k][r - 1] == b[k].stride[d] * out->dims[d];
        if (merge) {
            dims[r - 1] *= out->dims[d];
            for (int k = 0; k < nops; k++)
                st[k][r - 1] = b[k].stride[d];
            continue;
        }
        dims[r] = out->dims[d];
        for (int k = 0; k < nops; k++)
            st[k][r] = b[k].stride[d];
        r++;
    }
    if (r == 0) {   /* one element */
        dims[0] = 1;
        for (int k = 0; k < nops; k++)
            st[k][0] = 0;
        r = 1;
    }
    w->inner = dims[r - 1];
    for (int k = 0; k < nops; k++)
        w->inc[k] = st[k][r - 1];
    w->rank = r - 1;
    int64_t outer = 1;
    for (int d = 0; d < w->rank; d++) {
        w->dims[d] = dims[d];
        outer *= dims[d];
        for (int k = 0; k < nops; k++)
            w->stride[k][d] = st[k][d];
    }
    w->chunk = w->inner > EW_CHUNK ? EW_CHUNK : w->inner;
    w->nchunks = (w->inner + w->chunk - 1) / w->chunk;
    w->units = outer * w->nchunks;
}

/* Two operands in slots 1 and 2 of type T, the result's element = EXPR of u and v; the loop
 * is specialised on which operands step so that each version vectorises. */
#define BIN(Y, T, A, B, EXPR)                                                                \
    do {                                                                                     \
        if (inc[1] && inc[2]) {                                                              \
            FM_CPU_SIMD                                                                      \
            for (int64_t i = 0; i < n; i++) {                                                \
                T u = (A)[i], v = (B)[i];                                                    \
                (Y)[i] = (EXPR);                                                             \
            }                                                                                \
        } else if (inc[1]) {                                                                 \
            T v = (B)[0];                                                                    \
            FM_CPU_SIMD                                                                      \
            for (int64_t i = 0; i < n; i++) {                                                \
                T u = (A)[i];                                                                \
                (Y)[i] = (EXPR);                                                             \
            }                                                                                \
        } else if (inc[2]) {                                                                 \
            T u = (A)[0];                                                                    \
            FM_CPU_SIMD                                                                      \
            for (int64_t i = 0; i < n; i++) {                                                \
                T v = (B)[i];                                                                \
                (Y)[i] = (EXPR);                                                             \
            }                                                                                \
        } else {                                                                             \
            T u = (A)[0], v = (B)[0];                                                        \
            FM_CPU_SIMD                                                                      \
            for (int64_t i = 0; i < n; i++)                                                  \
                (Y)[i] = (EXPR);                                                             \
        }                                                                                    \
    } while (0)

/* One operand (slot 1): the result's element = EXPR of u. */
#define UN(Y, T, A, EXPR)                                                                    \
    do {                                                                                     \
        if (inc[1]) {                                                                        \
            FM_CPU_SIMD                                                                      \
            for (int64_t i = 0; i < n; i++) {                                                \
                T u = (A)[i];                                                                \
                (Y)[i] = (EXPR);                                                             \
            }                                                                                \
        } else {                                                                             \
            T u = (A)[0];                                                                    \
            for (int64_t i = 0; i < n; i++)                                                  \
                (Y)[i] = (EXPR);                                                             \
        }                                                                                    \
    } while (0)

/* operand k's element i of the run */
#define AT(k, i) (f[k][(i) * inc[k]])
#define ATI(k, i) (q[k][(i) * inc[k]])

/* Max or Min of the operands 1..nops-1 (fp32 or int32). */
#define FOLD(Y, P, NOPS, BETTER)                                                             \
    do {                                                                                     \
        FM_CPU_SIMD                                                                          \
        for (int64_t i = 0; i < n; i++)                                                      \
            (Y)[i] = (P)[1][i * inc[1]];                                                     \
        for (int k = 2; k < (NOPS); k++) {                                                   \
            FM_CPU_SIMD                                                                      \
            for (int64_t i = 0; i < n; i++) {                                                \
                if ((P)[k][i * inc[k]] BETTER (Y)[i])                                        \
                    (Y)[i] = (P)[k][i * inc[k]];                                             \
            }                                                                                \
        }                                                                                    \
    } while (0)

/* erf as a rational function of x (odd degree 13 over even degree 8, Eigen's
 * generic_fast_erf_float), x clamped to [-4, 4] where erf is +-1 in fp32: no libm call, so
 * the loop vectorises (libm's erff does not; ONNX exports of BERT-like models run GELU as
 * Erf). Largest error 4e-7 (checked against double erf on [-6, 6] in steps of 1e-4). */
FM_CPU_INLINE float erf_fast(float x)
{
    x = x < -4.0f ? -4.0f : x > 4.0f ? 4.0f : x;
    float x2 = x * x;
    float p = -2.72614225801306e-10f;
    p = p * x2 + 2.77068142495902e-08f;
    p = p * x2 - 2.10102402082508e-06f;
    p = p * x2 - 5.69250639462346e-05f;
    p = p * x2 - 7.34990630326855e-04f;
    p = p * x2 - 2.95459980854025e-03f;
    p = p * x2 - 1.60960333262415e-02f;
    float q = -1.45660718464996e-05f;
    q = q * x2 - 2.13374055278905e-04f;
    q = q * x2 - 1.68282697438203e-03f;
    q = q * x2 - 7.37332916720468e-03f;
    q = q * x2 - 1.42647390514189e-02f;
    return x * p / q;
}

/* log(1 + exp(x)) without overflow: x itself past 20, where exp(-x) is below float's epsilon */
FM_CPU_INLINE float softplus_of(float x)
{
    return x > 20.0f ? x : log1pf(expf(x));
}

FM_CPU_INLINE float mish_grad(float x)
{
    float t = tanhf(softplus_of(x)), s = 1.0f / (1.0f + expf(-x));
    return t + x * s * (1.0f - t * t);
}

FM_CPU_INLINE float sign_of(float x)
{
    return (float)((x > 0.0f) - (x < 0.0f));
}

/* n elements of one run; p[k] the first element of slot k. Compiled per instruction set:
 * on the baseline's SSE2 the unsigned clamps of fm_cpu_exp_neg and fm_cpu_tanh (and the
 * float-to-int rounding of fm_cpu_exp_split) have no vector form, so Erf's and Softplus's
 * gradients and every exp-based kernel ran a scalar loop on every CPU. */
FM_CPU_CLONES
static void run_kernel(const struct ew_item *e, int64_t n, char *const *p)
{
    const int64_t *inc = e->w.inc;
    const float *f[EW_OPS];
    const int32_t *q[EW_OPS];
    for (int k = 0; k < EW_OPS; k++) {
        f[k] = (const float *)p[k];
        q[k] = (const int32_t *)p[k];
    }
    float *y = (float *)p[0];
    int32_t *yi = (int32_t *)p[0];
    switch (e->kind) {
    case K_ADD: BIN(y, float, f[1], f[2], u + v); break;
    case K_SUB: BIN(y, float, f[1], f[2], u - v); break;
    case K_SUM:   /* any number of operands, in order */
        FM_CPU_SIMD
        for (int64_t i = 0; i < n; i++)
            y[i] = f[1][i * inc[1]];
        for (int k = 2; k < e->nops; k++) {
            FM_CPU_SIMD
            for (int64_t i = 0; i < n; i++)
                y[i] += f[k][i * inc[k]];
        }
        break;
    case K_MUL: BIN(y, float, f[1], f[2], u * v); break;
    case K_DIV: BIN(y, float, f[1], f[2], u / v); break;
    case K_PRELU: BIN(y, float, f[1], f[2], u > 0.0f ? u : u * v); break;
    case K_POW:
        if (!inc[2] && f[2][0] == 2.0f)   /* x^2, as in a decomposed LayerNorm */
            UN(y, float, f[1], u * u);
        else if (!inc[2] && f[2][0] == 3.0f)   /* x^3, GELU's tanh form (GPT-2): no powf */
            UN(y, float, f[1], u * u * u);
        else
            BIN(y, float, f[1], f[2], powf(u, v));
        break;
    case K_MAX:
        if (e->nops == 3)
            BIN(y, float, f[1], f[2], u > v ? u : v);
        else
            FOLD(y, f, e->nops, >);
        break;
    case K_MIN:
        if (e->nops == 3)
            BIN(y, float, f[1], f[2], u < v ? u : v);
        else
            FOLD(y, f, e->nops, <);
        break;
    case K_WHERE:
        FM_CPU_SIMD
        for (int64_t i = 0; i < n; i++)
            y[i] = ATI(1, i) ? AT(2, i) : AT(3, i);
        break;
    case K_ERF: UN(y, float, f[1], erf_fast(u)); break;
    case K_SIN: UN(y, float, f[1], sinf(u)); break;
    case K_COS: UN(y, float, f[1], cosf(u)); break;
    case K_TAN: UN(y, float, f[1], tanf(u)); break;
    case K_FLOOR: UN(y, float, f[1], floorf(u)); break;
    case K_CEIL: UN(y, float, f[1], ceilf(u)); break;
    case K_SIGN: UN(y, float, f[1], sign_of(u)); break;
    case K_ASIN: UN(y, float, f[1], asinf(u)); break;
    case K_ACOS: UN(y, float, f[1], acosf(u)); break;
    case K_ATAN: UN(y, float, f[1], atanf(u)); break;
    case K_SINH: UN(y, float, f[1], sinhf(u)); break;
    case K_COSH: UN(y, float, f[1], coshf(u)); break;
    case K_ASINH: UN(y, float, f[1], asinhf(u)); break;
    case K_ACOSH: UN(y, float, f[1], acoshf(u)); break;
    case K_ATANH: UN(y, float, f[1], atanhf(u)); break;
    case K_SOFTPLUS: UN(y, float, f[1], softplus_of(u)); break;
    case K_SOFTSIGN: UN(y, float, f[1], u / (1.0f + fabsf(u))); break;
    case K_MISH: UN(y, float, f[1], u * tanhf(softplus_of(u))); break;
    case K_ADD_I: BIN(yi, int32_t, q[1], q[2], u + v); break;
    case K_SUB_I: BIN(yi, int32_t, q[1], q[2], u - v); break;
    case K_MUL_I: BIN(yi, int32_t, q[1], q[2], u * v); break;
    case K_MAX_I: FOLD(yi, q, e->nops, >); break;
    case K_MIN_I: FOLD(yi, q, e->nops, <); break;
    case K_NEG_I: UN(yi, int32_t, q[1], -u); break;
    case K_WHERE_I:
        FM_CPU_SIMD
        for (int64_t i = 0; i < n; i++)
            yi[i] = ATI(1, i) ? ATI(2, i) : ATI(3, i);
        break;
    case K_ABS_I: UN(yi, int32_t, q[1], u < 0 ? -u : u); break;
    case K_AND: BIN(yi, int32_t, q[1], q[2], (u != 0) & (v != 0)); break;
    case K_OR: BIN(yi, int32_t, q[1], q[2], (u != 0) | (v != 0)); break;
    case K_XOR: BIN(yi, int32_t, q[1], q[2], (u != 0) ^ (v != 0)); break;
    case K_NOT: UN(yi, int32_t, q[1], u == 0); break;
    case K_EQ: BIN(yi, float, f[1], f[2], u == v); break;
    case K_LT: BIN(yi, float, f[1], f[2], u < v); break;
    case K_LE: BIN(yi, float, f[1], f[2], u <= v); break;
    case K_GT: BIN(yi, float, f[1], f[2], u > v); break;
    case K_GE: BIN(yi, float, f[1], f[2], u >= v); break;
    case K_EQ_I: BIN(yi, int32_t, q[1], q[2], u == v); break;
    case K_LT_I: BIN(yi, int32_t, q[1], q[2], u < v); break;
    case K_LE_I: BIN(yi, int32_t, q[1], q[2], u <= v); break;
    case K_GT_I: BIN(yi, int32_t, q[1], q[2], u > v); break;
    case K_GE_I: BIN(yi, int32_t, q[1], q[2], u >= v); break;
    case K_ISNAN: UN(yi, float, f[1], isnan(u) ? 1 : 0); break;
    case K_ZERO: memset(y, 0, sizeof(float) * (size_t)n); break;
    case K_NEG: UN(y, float, f[1], -u); break;
    case K_DIV_B:
        FM_CPU_SIMD
        for (int64_t i = 0; i < n; i++) {
            float b = AT(3, i);
            y[i] = -AT(1, i) * AT(2, i) / (b * b);
        }
        break;
    case K_POW_X:
        /* PyTorch: dy * p * x^(p-1), zero where p == 0; x^2 (a decomposed LayerNorm's
         * variance) without powf, which does not vectorise (8x the calibrated time) */
        if (!inc[3] && f[3][0] == 2.0f) {
            BIN(y, float, f[1], f[2], 2.0f * u * v);
            break;
        }
        if (!inc[3] && f[3][0] == 3.0f) {   /* GELU's tanh form: 17x its calibrated time */
            BIN(y, float, f[1], f[2], 3.0f * u * v * v);
            break;
        }
        FM_CPU_SIMD
        for (int64_t i = 0; i < n; i++) {
            float x = AT(2, i), pw = AT(3, i);
            y[i] = pw == 0.0f ? 0.0f : AT(1, i) * pw * powf(x, pw - 1.0f);
        }
        break;
    case K_POW_P:
        /* PyTorch: dy * x^p * log(x), zero where x == 0 and p >= 0 */
        FM_CPU_SIMD
        for (int64_t i = 0; i < n; i++) {
            float x = AT(2, i);
            y[i] = x == 0.0f && AT(3, i) >= 0.0f ? 0.0f : AT(1, i) * AT(4, i) * logf(x);
        }
        break;
    case K_SEL:
        FM_CPU_SIMD
        for (int64_t i = 0; i < n; i++) {
            float best = AT(2, i);
            int ties = 0;
            for (int k = 3; k < e->nops; k++)
                ties += AT(k, i) == best;
            y[i] = AT(e->sel, i) == best ? AT(1, i) / (float)ties : 0.0f;
        }
        break;
    case K_WHERE_X:
        FM_CPU_SIMD
        for (int64_t i = 0; i < n; i++)
            y[i] = ATI(2, i) ? AT(1, i) : 0.0f;
        break;
    case K_WHERE_Y:
        FM_CPU_SIMD
        for (int64_t i = 0; i < n; i++)
            y[i] = ATI(2, i) ? 0.0f : AT(1, i);
        break;
    case K_PRELU_X:
        FM_CPU_SIMD
        for (int64_t i = 0; i < n; i++)
            y[i] = AT(2, i) > 0.0f ? AT(1, i) : AT(1, i) * AT(3, i);
        break;
    case K_PRELU_S: BIN(y, float, f[1], f[2], v > 0.0f ? 0.0f : u * v); break;
    case K_ERF_B: BIN(y, float, f[1], f[2], u * 1.12837916709551257f * fm_cpu_exp_neg(-v * v)); break;
    case K_SIN_B: BIN(y, float, f[1], f[2], u * cosf(v)); break;
    case K_COS_B: BIN(y, float, f[1], f[2], -u * sinf(v)); break;
    case K_TAN_B: BIN(y, float, f[1], f[2], u * (1.0f + v * v)); break;
    case K_ASIN_B: BIN(y, float, f[1], f[2], u / sqrtf(1.0f - v * v)); break;
    case K_ACOS_B: BIN(y, float, f[1], f[2], -u / sqrtf(1.0f - v * v)); break;
    case K_ATAN_B: BIN(y, float, f[1], f[2], u / (1.0f + v * v)); break;
    case K_SINH_B: BIN(y, float, f[1], f[2], u * coshf(v)); break;
    case K_COSH_B: BIN(y, float, f[1], f[2], u * sinhf(v)); break;
    case K_ASINH_B: BIN(y, float, f[1], f[2], u / sqrtf(v * v + 1.0f)); break;
    case K_ACOSH_B: BIN(y, float, f[1], f[2], u / sqrtf(v * v - 1.0f)); break;
    case K_ATANH_B: BIN(y, float, f[1], f[2], u / (1.0f - v * v)); break;
    case K_SOFTPLUS_B: BIN(y, float, f[1], f[2], u / (1.0f + expf(-v))); break;
    case K_SOFTSIGN_B:
        BIN(y, float, f[1], f[2], u / ((1.0f + fabsf(v)) * (1.0f + fabsf(v))));
        break;
    case K_MISH_B: BIN(y, float, f[1], f[2], u * mish_grad(v)); break;
    }
}

/* memories: the item's fp32 operands (ew_item.mem). The units (chunks of runs) are cut into
 * EW_BLOCKS contiguous blocks spread over the threads; a block finds its first run's operand
 * offsets by division once and steps to the next run by an odometer, so short runs (a
 * LayerNorm's rows of C, broadcast against one value per row) pay no index division. */
#define EW_BLOCKS 64

static enum fm_status walk_exec(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct ew_item *e = arg;
    const struct ew_walk *w = &e->w;
    char *base[EW_OPS] = {NULL};
    for (int k = 0; k < e->nops; k++)
        base[k] = e->ints[k] ? (char *)e->ints[k] : (char *)fm_cpu_item_f32(it, e->mem[k]);
    const int64_t nblk = w->units < EW_BLOCKS ? w->units : EW_BLOCKS;
    FM_CPU_PARALLEL
    for (int64_t blk = 0; blk < nblk; blk++) {
        int64_t u = w->units * blk / nblk, end = w->units * (blk + 1) / nblk;
        int64_t row = u / w->nchunks, c = u - row * w->nchunks;
        int64_t idx[FM_MAX_DIMS] = {0}, off[EW_OPS] = {0};
        for (int d = w->rank - 1; d >= 0; d--) {
            int64_t qd = row / w->dims[d];
            idx[d] = row - qd * w->dims[d];
            for (int k = 0; k < e->nops; k++)
                off[k] += idx[d] * w->stride[k][d];
            row = qd;
        }
        for (; u < end; u++) {
            int64_t start = c * w->chunk;
            int64_t len = w->inner - start < w->chunk ? w->inner - start : w->chunk;
            char *p[EW_OPS] = {NULL};
            for (int k = 0; k < e->nops; k++)   /* every element is 4 bytes: fp32 or int32 */
                p[k] = base[k] + 4 * (off[k] + start * w->inc[k]);
            run_kernel(e, len, p);
            if (++c < w->nchunks)
                continue;
            c = 0;   /* the next run: the odometer's last outer dim first */
            for (int d = w->rank - 1; d >= 0; d--) {
                for (int k = 0; k < e->nops; k++)
                    off[k] += w->stride[k][d];
                if (++idx[d] < w->dims[d])
                    break;
                for (int k = 0; k < e->nops; k++)
                    off[k] -= idx[d] * w->stride[k][d];
                idx[d] = 0;
            }
        }
    }
    return FM_OK;
}

/* ---- building walk items ---- */

struct ew_build {
    struct ew_item *e;
    const struct fm_shape *shape[EW_OPS];
    dnnl_memory_t mems[EW_OPS];
    int nmems;
};

/* A new item of kind; slot 0 (the result) is set later with set_result. */
static enum fm_status build_new(struct fm_cpu *s, enum ew_kind kind, struct ew_build *b)
{
    memset(b, 0, sizeof(*b));
    b->e = fm_cpu_buf(s, sizeof(*b->e));
    if (!b->e)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    b->e->kind = kind;
    b->e->nops = 1;
    return FM_OK;
}

static void set_slot(struct ew_build *b, int k, dnnl_memory_t m, int32_t *ints,
                     const struct fm_shape *sh)
{
    b->shape[k] = sh;
    b->e->ints[k] = ints;
    if (!ints) {
        b->e->mem[k] = b->nmems;
        b->mems[b->nmems++] = m;
    }
}

static void push_mem(struct ew_build *b, dnnl_memory_t m, const struct fm_shape *sh)
{
    set_slot(b, b->e->nops++, m, NULL, sh);
}

static const struct fm_shape *shape_of(const struct fm_cpu *s, fm_tid tid)
{
    return &fm_graph_tensor(s->g, tid)->shape;
}

/* Operand tid's value: its int32 array, or its fp32 value in the plain layout. */
static enum fm_status push_value(struct fm_cpu *s, fm_nid id, enum fm_phase ph,
                                 struct ew_build *b, fm_tid tid)
{
    if (fm_cpu_is_int(s, tid)) {
        set_slot(b, b->e->nops++, NULL, fm_cpu_ints(s, tid), shape_of(s, tid));
        return FM_OK;
    }
    dnnl_memory_t m;
    enum fm_status st = fm_cpu_input_plain(s, id, ph, tid, false, &m);
    if (!st)
        push_mem(b, m, shape_of(s, tid));
    return st;
}

/* The gradient of the node's output, plain. */
static enum fm_status push_dy(struct fm_cpu *s, fm_nid id, enum fm_phase ph, struct ew_build *b)
{
    fm_tid y = fm_graph_node(s->g, id)->out[0];
    dnnl_memory_t m;
    enum fm_status st = fm_cpu_input_plain(s, id, ph, y, true, &m);
    if (!st)
        push_mem(b, m, shape_of(s, y));
    return st;
}

/* Sets the result (slot 0, of shape out) and appends the item. */
static enum fm_status build_end(struct fm_cpu *s, fm_nid id, enum fm_phase ph,
                                struct ew_build *b, dnnl_memory_t m, int32_t *ints,
                                const struct fm_shape *out)
{
    set_slot(b, 0, m, ints, out);
    walk_init(&b->e->w, out, b->shape, b->e->nops);
    return fm_cpu_add_fn(s, id, ph, walk_exec, b->e, b->mems, b->nmems);
}

/* ---- gradients of broadcast operands ---- */

static uint64_t numel_of(const struct fm_cpu *s, fm_tid tid)
{
    return s->t[tid].numel;
}

/* tid's dims right-aligned to rank (1 where it has none). */
static void aligned_dims(const struct fm_cpu *s, fm_tid tid, int rank, int64_t *dims)
{
    const struct fm_shape *sh = shape_of(s, tid);
    for (int i = 0; i < rank; i++) {
        int k = i - (rank - sh->rank);
        dims[i] = k >= 0 ? sh->dims[k] : 1;
    }
}

/* tid's gradient += scale * src summed over the dims tid is broadcast along (src plain, of the
 * output's dims): column sums over leading dims, else a oneDNN reduction, the scale a linear
 * post-op. */
static enum fm_status reduce_to(struct fm_cpu *s, fm_nid id, enum fm_phase ph, fm_tid tid,
                                dnnl_memory_t src, float scale)
{
    const dnnl_memory_desc_t *smd = fm_cpu_mem_md(src);
    int64_t dims[FM_MAX_DIMS];
    aligned_dims(s, tid, smd->ndims, dims);
    bool done;
    enum fm_status lst = fm_cpu_sum_leading(s, id, ph, tid, src, dims, scale, &done);
    if (lst || done)
        return lst;
    dnnl_memory_desc_t dst;
    fm_cpu_md_plain(&dst, smd->ndims, dims);
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_reduction_desc_t d;
    dnnl_memory_t m;
    struct fm_cpu_sink sk;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_primitive_attr_create(&attr));
    FM_DNNL_TRY(s, dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    if (scale != 1.0f) {
        FM_DNNL_TRY(s, dnnl_post_ops_create(&po));
        FM_DNNL_TRY(s, dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, scale, 0.0f));
        FM_DNNL_TRY(s, dnnl_primitive_attr_set_post_ops(attr, po));
    }
    FM_DNNL_TRY(s, dnnl_reduction_desc_init(&d, dnnl_reduction_sum, smd, &dst, 0.0f, 0.0f));
    FM_DNNL_TRY(s, dnnl_primitive_desc_create(&pd, &d, attr, s->engine, NULL));
    st = fm_cpu_keep_pd(s, pd);
    if (!st)
        st = fm_cpu_sink_begin(s, id, ph, tid, &dst, &sk, &m);
    if (st || !m)
        goto out;
    {
        struct fm_cpu_arg args[2] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, m}};
        st = fm_cpu_add_prim(s, id, ph, pd, args, 2);
    }
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
out:
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

/* Delivers tid's gradient, which b computes over the output's shape: straight into tid's
 * gradient when tid has the output's size, else into scratch summed down. */
static enum fm_status deliver(struct fm_cpu *s, fm_nid id, enum fm_phase ph, fm_tid tid,
                              struct ew_build *b)
{
    fm_tid y = fm_graph_node(s->g, id)->out[0];
    const struct fm_shape *out = shape_of(s, y);
    enum fm_status st;
    if (numel_of(s, tid) == numel_of(s, y)) {
        struct fm_cpu_sink sk;
        dnnl_memory_t m;
        st = fm_cpu_sink_plain(s, id, ph, tid, &sk, &m);
        if (st || !m)
            return st;
        st = build_end(s, id, ph, b, m, NULL, out);
        return st ? st : fm_cpu_sink_end(s, &sk);
    }
    int64_t dims[FM_MAX_DIMS];
    dnnl_memory_desc_t md;
    dnnl_memory_t tmp;
    fm_cpu_md_plain(&md, fm_cpu_dims(fm_graph_tensor(s->g, y), dims), dims);
    st = fm_cpu_mem_scratch(s, &md, &tmp);
    if (!st)
        st = build_end(s, id, ph, b, tmp, NULL, out);
    return st ? st : reduce_to(s, id, ph, tid, tmp, 1.0f);
}

/* tid's gradient = scale * dy (scale 1 or -1), summed down if tid is broadcast. */
static enum fm_status deliver_dy(struct fm_cpu *s, fm_nid id, fm_tid tid, float scale)
{
    enum fm_phase ph = fm_cpu_grad_phase(s, tid);
    fm_tid y = fm_graph_node(s->g, id)->out[0];
    dnnl_memory_t dy;
    struct ew_build b;
    enum fm_status st = fm_cpu_input_plain(s, id, ph, y, true, &dy);
    if (st)
        return st;
    if (numel_of(s, tid) != numel_of(s, y))
        return reduce_to(s, id, ph, tid, dy, scale);
    if (scale == 1.0f)
        return fm_cpu_sink_from(s, id, ph, tid, dy);
    st = build_new(s, K_NEG, &b);
    if (!st)
        push_mem(&b, dy, shape_of(s, y));
    return st ? st : deliver(s, id, ph, tid, &b);
}

/* A zero gradient (Floor, Ceil, Round, Sign): written only by the first delivery, since the
 * others would add nothing. */
static enum fm_status deliver_zero(struct fm_cpu *s, fm_nid id, fm_tid tid)
{
    if (!fm_cpu_wants_grad(s, tid) || s->t[tid].grad_planned)
        return FM_OK;
    struct ew_build b;
    enum fm_status st = build_new(s, K_ZERO, &b);
    return st ? st : deliver(s, id, fm_cpu_grad_phase(s, tid), tid, &b);
}

/* ---- which op runs how ---- */

/* The unary functions whose gradient is dy times a function of x: their backward kind (K_ZERO
 * for the other ops) */
static enum ew_kind x_grad_kind(enum fm_op op)
{
    switch (op) {
    case FM_OP_ASIN: return K_ASIN_B;
    case FM_OP_ACOS: return K_ACOS_B;
    case FM_OP_ATAN: return K_ATAN_B;
    case FM_OP_SINH: return K_SINH_B;
    case FM_OP_COSH: return K_COSH_B;
    case FM_OP_ASINH: return K_ASINH_B;
    case FM_OP_ACOSH: return K_ACOSH_B;
    case FM_OP_ATANH: return K_ATANH_B;
    case FM_OP_SOFTPLUS: return K_SOFTPLUS_B;
    case FM_OP_SOFTSIGN: return K_SOFTSIGN_B;
    case FM_OP_MISH: return K_MISH_B;
    default: return K_ZERO;
    }
}

static bool is_unary_walk(enum fm_op op)
{
    return op == FM_OP_ERF || op == FM_OP_SIN || op == FM_OP_COS || op == FM_OP_TAN ||
           op == FM_OP_FLOOR || op == FM_OP_CEIL || op == FM_OP_SIGN ||
           x_grad_kind(op) != K_ZERO;
}

static bool is_compare(enum fm_op op)
{
    return op == FM_OP_EQUAL || op == FM_OP_LESS || op == FM_OP_LESS_EQUAL ||
           op == FM_OP_GREATER || op == FM_OP_GREATER_EQUAL;
}

/* The oneDNN eltwise algorithm of a float unary op, if it has one. */
static bool eltwise_alg(const struct fm_node *n, dnnl_alg_kind_t *alg, float *alpha,
                        float *beta)
{
    *alpha = 0.0f;
    *beta = 0.0f;
    switch (n->op) {
    case FM_OP_ELU:   /* x > 0 ? x : alpha (exp(x) - 1) */
        *alg = dnnl_eltwise_elu;
        *alpha = (float)n->attrs.alpha;
        return true;
    case FM_OP_EXP: *alg = dnnl_eltwise_exp; return true;
    case FM_OP_LOG: *alg = dnnl_eltwise_log; return true;
    case FM_OP_SQRT: *alg = dnnl_eltwise_sqrt; return true;
    case FM_OP_ABS: *alg = dnnl_eltwise_abs; return true;
    case FM_OP_ROUND: *alg = dnnl_eltwise_round; return true;   /* half to even */
    case FM_OP_NEG:
        *alg = dnnl_eltwise_linear;   /* alpha * x + beta */
        *alpha = -1.0f;
        return true;
    case FM_OP_RECIPROCAL:
        *alg = dnnl_eltwise_pow;      /* alpha * x ^ beta */
        *alpha = 1.0f;
        *beta = -1.0f;
        return true;
    default:
        return false;
    }
}

static enum ew_kind fwd_kind(enum fm_op op, bool ints)
{
    switch (op) {
    case FM_OP_ADD: return ints ? K_ADD_I : K_ADD;
    case FM_OP_SUB: return ints ? K_SUB_I : K_SUB;
    case FM_OP_MUL: return ints ? K_MUL_I : K_MUL;
    case FM_OP_DIV: return K_DIV;
    case FM_OP_POW: return K_POW;
    case FM_OP_PRELU: return K_PRELU;
    case FM_OP_MAX: return ints ? K_MAX_I : K_MAX;
    case FM_OP_MIN: return ints ? K_MIN_I : K_MIN;
    case FM_OP_WHERE: return ints ? K_WHERE_I : K_WHERE;
    case FM_OP_ERF: return K_ERF;
    case FM_OP_SIN: return K_SIN;
    case FM_OP_COS: return K_COS;
    case FM_OP_TAN: return K_TAN;
    case FM_OP_FLOOR: return K_FLOOR;
    case FM_OP_CEIL: return K_CEIL;
    case FM_OP_SIGN: return K_SIGN;
    case FM_OP_ASIN: return K_ASIN;
    case FM_OP_ACOS: return K_ACOS;
    case FM_OP_ATAN: return K_ATAN;
    case FM_OP_SINH: return K_SINH;
    case FM_OP_COSH: return K_COSH;
    case FM_OP_ASINH: return K_ASINH;
    case FM_OP_ACOSH: return K_ACOSH;
    case FM_OP_ATANH: return K_ATANH;
    case FM_OP_SOFTPLUS: return K_SOFTPLUS;
    case FM_OP_SOFTSIGN: return K_SOFTSIGN;
    case FM_OP_MISH: return K_MISH;
    case FM_OP_SUM: return K_SUM;
    case FM_OP_NEG: return K_NEG_I;
    case FM_OP_ABS: return K_ABS_I;
    case FM_OP_AND: return K_AND;
    case FM_OP_OR: return K_OR;
    case FM_OP_XOR: return K_XOR;
    case FM_OP_NOT: return K_NOT;
    case FM_OP_EQUAL: return ints ? K_EQ_I : K_EQ;
    case FM_OP_LESS: return ints ? K_LT_I : K_LT;
    case FM_OP_LESS_EQUAL: return ints ? K_LE_I : K_LE;
    case FM_OP_GREATER: return ints ? K_GT_I : K_GT;
    case FM_OP_ISNAN: return K_ISNAN;
    default: return ints ? K_GE_I : K_GE;
    }
}

/* ---- check ---- */

enum fm_status fm_cpu_ewise_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                  const struct fm_node *n)
{
    int nint = 0;
    for (int i = 0; i < n->n_in; i++) {
        if (n->in[i] == FM_NONE)
            return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (%s): input %d is omitted",
                            n->name, n->op_name, i);
        nint += !fm_dtype_is_float(fm_graph_tensor(g, n->in[i])->dtype);
    }
    if (n->n_in < 1 || n->n_in > EW_MAX_IN)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "layer '%s' (%s): %d inputs; the CPU backend takes 1 to %d", n->name,
                        n->op_name, n->n_in, EW_MAX_IN);
    bool float_out = fm_dtype_is_float(fm_graph_tensor(g, n->out[0])->dtype);
    const char *why = NULL;
    switch (n->op) {
    case FM_OP_WHERE:
        /* float X and Y (masks), or integer ones (T5's relative-position buckets) */
        if (n->n_in != 3 || fm_dtype_is_float(fm_graph_tensor(g, n->in[0])->dtype) ||
            (nint != 1 && nint != 3) || float_out != (nint == 1))
            why = "needs a bool or integer condition and X and Y both float or both integer";
        break;
    case FM_OP_ADD: case FM_OP_SUB: case FM_OP_MUL: case FM_OP_MAX: case FM_OP_MIN:
    case FM_OP_NEG: case FM_OP_ABS:
    case FM_OP_EQUAL: case FM_OP_LESS: case FM_OP_LESS_EQUAL: case FM_OP_GREATER:
    case FM_OP_GREATER_EQUAL:
        if (nint != 0 && nint != n->n_in)
            why = "mixes integer and float operands";
        else if (!is_compare(n->op) && float_out != (nint == 0))
            why = "has an output whose type is not its operands'";
        break;
    case FM_OP_AND: case FM_OP_OR: case FM_OP_XOR: case FM_OP_NOT:
        if (nint != n->n_in)
            why = "takes bool (or integer) operands only";
        break;
    case FM_OP_ISNAN:   /* SDPA's mask handling in PyTorch 2's exports */
        if (nint || float_out)
            why = "takes a float tensor and gives a bool one";
        break;
    case FM_OP_TRILU:
        if (nint || n->attrs.nints != 2)
            why = "takes a float tensor and {k, upper} in ints";
        break;
    default:   /* Div, Pow, PRelu and the float functions */
        if (nint || !float_out)
            why = "takes float operands only";
        break;
    }
    if (!why && n->n_in > 1 && (n->op == FM_OP_NOT || is_unary_walk(n->op) ||
                                n->op == FM_OP_ISNAN ||
                                n->op == FM_OP_NEG || n->op == FM_OP_ABS))
        why = "takes one input";
    if (why)
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (%s) on the CPU backend %s",
                        n->name, n->op_name, why);
    return FM_OK;
}

/* ---- forward ---- */

static enum fm_status walk_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid y = n->out[0];
    bool ints = fm_cpu_is_int(s, n->in[n->op == FM_OP_WHERE ? 1 : 0]);
    struct ew_build b;
    enum fm_status st = fm_cpu_place_out(s, y);
    if (!st)
        st = build_new(s, fwd_kind(n->op, ints), &b);
    for (int i = 0; i < n->n_in && !st; i++)
        st = push_value(s, id, FM_PHASE_FWD, &b, n->in[i]);
    if (st)
        return st;
    bool iy = fm_cpu_is_int(s, y);
    return build_end(s, id, FM_PHASE_FWD, &b, iy ? NULL : s->t[y].val_mem,
                     iy ? fm_cpu_ints(s, y) : NULL, shape_of(s, y));
}

/* Exp, Log, Sqrt, Abs, Neg, Reciprocal, Round of a float: a oneDNN eltwise in x's layout. */
static enum fm_status eltwise_fwd(struct fm_cpu *s, fm_nid id, struct ew_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const dnnl_memory_desc_t *xmd = &s->t[n->in[0]].md;
    dnnl_eltwise_desc_t d;
    enum fm_status st = FM_OK;
    dnnl_prop_kind_t prop = s->train ? dnnl_forward_training : dnnl_forward_inference;
    FM_DNNL_TRY(s, dnnl_eltwise_forward_desc_init(&d, prop, p->alg, xmd, p->alpha, p->beta));
    st = fm_cpu_pd(s, id, &d, NULL, &p->fwd);
    if (!st)
        st = fm_cpu_place(s, n->out[0], xmd);
    if (!st) {
        struct fm_cpu_arg args[2] = {{DNNL_ARG_SRC, s->t[n->in[0]].val_mem},
                                     {DNNL_ARG_DST, s->t[n->out[0]].val_mem}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, p->fwd, args, 2);
    }
out:
    return st;
}

/* Sub, Div, Max, Min of two floats whose first operand (either, for Max and Min) has the
 * output's size and whose other has it too or is one element: a oneDNN binary, all plain.
 * false in *done when the shapes do not suit (the walk then runs it). */
static enum fm_status binary_fwd(struct fm_cpu *s, fm_nid id, bool *done)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid y = n->out[0];
    dnnl_alg_kind_t alg;
    *done = false;
    switch (n->op) {
    case FM_OP_SUB: alg = dnnl_binary_sub; break;
    case FM_OP_DIV: alg = dnnl_binary_div; break;
    case FM_OP_MAX: alg = dnnl_binary_max; break;
    case FM_OP_MIN: alg = dnnl_binary_min; break;
    default: return FM_OK;
    }
    if (n->n_in != 2 || fm_cpu_is_int(s, n->in[0]) || shape_of(s, y)->rank > 6)
        return FM_OK;
    int full = numel_of(s, n->in[0]) == numel_of(s, y) ? 0 : 1;
    if (numel_of(s, n->in[full]) != numel_of(s, y) || (full == 1 && alg != dnnl_binary_max &&
                                                       alg != dnnl_binary_min))
        return FM_OK;
    /* the other operand of the output's size or one element: anything else oneDNN 2.6 may
     * broadcast with its reference code (a decomposed LayerNorm's (N, H, W, C) - (N, H, W, 1)
     * ran at 150 MFLOP/s, 1.4 ms where the walk takes 0.03) */
    if (numel_of(s, n->in[1 - full]) != numel_of(s, y) && numel_of(s, n->in[1 - full]) != 1)
        return FM_OK;
    int64_t dims[FM_MAX_DIMS], odims[FM_MAX_DIMS];
    int rank = fm_cpu_dims(fm_graph_tensor(s->g, y), dims);
    aligned_dims(s, n->in[1 - full], rank, odims);
    dnnl_memory_desc_t ymd, amd, bmd;
    fm_cpu_md_plain(&ymd, rank, dims);
    fm_cpu_md_plain(&bmd, rank, odims);
    amd = ymd;
    dnnl_memory_t ma, mb;
    dnnl_binary_desc_t d;
    dnnl_primitive_desc_t pd;
    enum fm_status st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[full], false, &amd, &ma);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[1 - full], false, &bmd, &mb);
    if (!st)
        st = fm_cpu_place(s, y, &ymd);
    if (st)
        return st;
    FM_DNNL_TRY(s, dnnl_binary_desc_init(&d, alg, &amd, &bmd, &ymd));
    st = fm_cpu_pd(s, id, &d, NULL, &pd);
    if (!st) {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_SRC_0, ma}, {DNNL_ARG_SRC_1, mb},
                                     {DNNL_ARG_DST, s->t[y].val_mem}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, pd, args, 3);
    }
    *done = !st;
out:
    return st;
}

/* dims (..., M, N): every matrix row keeps the columns j with j - i >= k (upper) or
 * j - i <= k (lower), i the row within its matrix, and zeroes the others. */
struct trilu_arg {
    int64_t rows, m, n, k;
    bool upper;
};

/* memories: src, dst (plain) */
static enum fm_status trilu_exec(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct trilu_arg *t = arg;
    const float *x = fm_cpu_item_f32(it, 0);
    float *y = fm_cpu_item_f32(it, 1);
    FM_CPU_PARALLEL
    for (int64_t r = 0; r < t->rows; r++) {
        int64_t i = r % t->m;
        /* the kept columns [lo, hi) */
        int64_t lo = t->upper ? i + t->k : 0, hi = t->upper ? t->n : i + t->k + 1;
        lo = lo < 0 ? 0 : lo > t->n ? t->n : lo;
        hi = hi < lo ? lo : hi > t->n ? t->n : hi;
        const float *xr = x + r * t->n;
        float *yr = y + r * t->n;
        for (int64_t j = 0; j < lo; j++)
            yr[j] = 0.0f;
        for (int64_t j = lo; j < hi; j++)
            yr[j] = xr[j];
        for (int64_t j = hi; j < t->n; j++)
            yr[j] = 0.0f;
    }
    return FM_OK;
}

static enum fm_status trilu_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const struct fm_shape *xs = shape_of(s, n->in[0]);
    struct trilu_arg *t = fm_cpu_buf(s, sizeof(*t));
    if (!t)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = t;
    t->m = xs->dims[xs->rank - 2];
    t->n = xs->dims[xs->rank - 1];
    t->rows = (int64_t)numel_of(s, n->in[0]) / t->n;
    t->k = n->attrs.ints[0];
    t->upper = n->attrs.ints[1] != 0;
    dnnl_memory_t mx;
    enum fm_status st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, n->in[0], false, &mx);
    if (!st)
        st = fm_cpu_place_out(s, n->out[0]);
    if (st)
        return st;
    dnnl_memory_t mems[2] = {mx, s->t[n->out[0]].val_mem};
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, trilu_exec, t, mems, 2);
}

enum fm_status fm_cpu_ewise_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    if (n->op == FM_OP_TRILU)
        return trilu_fwd(s, id);
    struct ew_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    if (!fm_cpu_is_int(s, n->in[0]) && eltwise_alg(n, &p->alg, &p->alpha, &p->beta))
        return eltwise_fwd(s, id, p);
    bool done;
    enum fm_status st = binary_fwd(s, id, &done);
    if (st || done)
        return st;
    return walk_fwd(s, id);
}

/* ---- backward ---- */

static enum fm_status eltwise_bwd(struct fm_cpu *s, fm_nid id, const struct ew_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const dnnl_memory_desc_t *xmd = &s->t[n->in[0]].md;
    dnnl_eltwise_desc_t d;
    dnnl_primitive_desc_t pd;
    dnnl_memory_t m_dd, m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_eltwise_backward_desc_init(&d, p->alg, xmd, xmd, p->alpha, p->beta));
    st = fm_cpu_pd(s, id, &d, p->fwd, &pd);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true,
                          fm_cpu_pd_md(pd, DNNL_ARG_DIFF_DST), &m_dd);
    if (!st)
        st = fm_cpu_sink_begin(s, id, fm_cpu_grad_phase(s, n->in[0]), n->in[0],
                               fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SRC), &sk, &m_dx);
    if (st || !m_dx)
        goto out;
    {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_SRC, s->t[n->in[0]].val_mem},
                                     {DNNL_ARG_DIFF_DST, m_dd}, {DNNL_ARG_DIFF_SRC, m_dx}};
        st = fm_cpu_add_prim(s, id, fm_cpu_grad_phase(s, n->in[0]), pd, args, 3);
    }
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
out:
    return st;
}

static enum fm_status trilu_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid x = n->in[0];
    enum fm_phase ph = fm_cpu_grad_phase(s, x);
    dnnl_memory_t dy, dx;
    struct fm_cpu_sink sk;
    enum fm_status st = fm_cpu_input_plain(s, id, ph, n->out[0], true, &dy);
    if (!st)
        st = fm_cpu_sink_plain(s, id, ph, x, &sk, &dx);
    if (st || !dx)
        return st;
    dnnl_memory_t mems[2] = {dy, dx};
    st = fm_cpu_add_fn(s, id, ph, trilu_exec, s->nodes[id].priv, mems, 2);
    return st ? st : fm_cpu_sink_end(s, &sk);
}

/* The gradient of input `which` by kernel kind over the operands listed (input indices, -1
 * for dy, -2 for the output's value). */
static enum fm_status grad_walk(struct fm_cpu *s, fm_nid id, int which, enum ew_kind kind,
                                const int *opds, int nopds)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid tid = n->in[which];
    if (!fm_cpu_wants_grad(s, tid))
        return FM_OK;
    enum fm_phase ph = fm_cpu_grad_phase(s, tid);
    struct ew_build b;
    enum fm_status st = build_new(s, kind, &b);
    for (int k = 0; k < nopds && !st; k++) {
        if (opds[k] == -1)
            st = push_dy(s, id, ph, &b);
        else
            st = push_value(s, id, ph, &b, opds[k] == -2 ? n->out[0] : n->in[opds[k]]);
    }
    if (!st && kind == K_SEL)
        b.e->sel = 3 + which;
    return st ? st : deliver(s, id, ph, tid, &b);
}

enum fm_status fm_cpu_ewise_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const struct ew_priv *p = s->nodes[id].priv;
    enum fm_status st = FM_OK;
    const int DY = -1, Y = -2;
    switch (n->op) {
    case FM_OP_TRILU:
        return trilu_bwd(s, id);
    case FM_OP_FLOOR: case FM_OP_CEIL: case FM_OP_ROUND: case FM_OP_SIGN:
        return deliver_zero(s, id, n->in[0]);
    case FM_OP_ERF: case FM_OP_SIN: case FM_OP_COS: {
        enum ew_kind k = n->op == FM_OP_ERF ? K_ERF_B : n->op == FM_OP_SIN ? K_SIN_B : K_COS_B;
        return grad_walk(s, id, 0, k, (const int[]){DY, 0}, 2);
    }
    case FM_OP_TAN:
        return grad_walk(s, id, 0, K_TAN_B, (const int[]){DY, Y}, 2);
    case FM_OP_ASIN: case FM_OP_ACOS: case FM_OP_ATAN: case FM_OP_SINH: case FM_OP_COSH:
    case FM_OP_ASINH: case FM_OP_ACOSH: case FM_OP_ATANH: case FM_OP_SOFTPLUS:
    case FM_OP_SOFTSIGN: case FM_OP_MISH:
        return grad_walk(s, id, 0, x_grad_kind(n->op), (const int[]){DY, 0}, 2);
    case FM_OP_ADD:
        st = fm_cpu_wants_grad(s, n->in[0]) ? deliver_dy(s, id, n->in[0], 1.0f) : FM_OK;
        if (!st && fm_cpu_wants_grad(s, n->in[1]))
            st = deliver_dy(s, id, n->in[1], 1.0f);
        return st;
    case FM_OP_SUM:   /* every input gets dy, summed down where it was broadcast */
        for (int i = 0; i < n->n_in && !st; i++) {
            if (fm_cpu_wants_grad(s, n->in[i]))
                st = deliver_dy(s, id, n->in[i], 1.0f);
        }
        return st;
    case FM_OP_SUB:
        st = fm_cpu_wants_grad(s, n->in[0]) ? deliver_dy(s, id, n->in[0], 1.0f) : FM_OK;
        if (!st && fm_cpu_wants_grad(s, n->in[1]))
            st = deliver_dy(s, id, n->in[1], -1.0f);
        return st;
    case FM_OP_MUL:
        st = grad_walk(s, id, 0, K_MUL, (const int[]){DY, 1}, 2);
        return st ? st : grad_walk(s, id, 1, K_MUL, (const int[]){DY, 0}, 2);
    case FM_OP_DIV:
        st = grad_walk(s, id, 0, K_DIV, (const int[]){DY, 1}, 2);
        return st ? st : grad_walk(s, id, 1, K_DIV_B, (const int[]){DY, 0, 1}, 3);
    case FM_OP_POW:
        st = grad_walk(s, id, 0, K_POW_X, (const int[]){DY, 0, 1}, 3);
        return st ? st : grad_walk(s, id, 1, K_POW_P, (const int[]){DY, 0, 1, Y}, 4);
    case FM_OP_PRELU:
        st = grad_walk(s, id, 0, K_PRELU_X, (const int[]){DY, 0, 1}, 3);
        return st ? st : grad_walk(s, id, 1, K_PRELU_S, (const int[]){DY, 0}, 2);
    case FM_OP_WHERE:
        st = grad_walk(s, id, 1, K_WHERE_X, (const int[]){DY, 0}, 2);
        return st ? st : grad_walk(s, id, 2, K_WHERE_Y, (const int[]){DY, 0}, 2);
    case FM_OP_MAX: case FM_OP_MIN: {
        if (n->n_in == 1)
            return fm_cpu_wants_grad(s, n->in[0]) ? deliver_dy(s, id, n->in[0], 1.0f) : FM_OK;
        int opds[EW_MAX_IN + 2] = {DY, Y};
        for (int i = 0; i < n->n_in; i++)
            opds[2 + i] = i;
        for (int i = 0; i < n->n_in && !st; i++)
            st = grad_walk(s, id, i, K_SEL, opds, n->n_in + 2);
        return st;
    }
    default:
        break;
    }
    if (p && p->fwd && fm_cpu_wants_grad(s, n->in[0]))
        return eltwise_bwd(s, id, p);
    return FM_OK;
}
