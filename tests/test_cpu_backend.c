/* The oneDNN CPU backend, through the backend interface (prepare, step, read, write):
 *  - every op's backward against central finite differences of the loss, on small shapes;
 *  - a small CNN's starting values (bit for bit), logits, loss, gradients and one SGD step
 *    against PyTorch goldens (tests/data/goldens/cpu_small_cnn.txt, from
 *    tools/make_cpu_goldens.py);
 *  - Dropout's mask, BatchNorm in inference, unsupported ops and precisions rejected before
 *    anything runs, and a resnet18 training step at batch 2 (run under `make sanitize` too).
 * Without oneDNN in the build every test prints a skip. */
#include "support.h"

#include "backend/backend.h"
#include "frontend/zoo/nn.h"
#ifdef FM_HAVE_DNNL
#include "backend/cpu/cpu.h"
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct fm_backend *backend_or_skip(void)
{
    const struct fm_backend *be = fm_backend_cpu();
    if (!be) {
        printf("skipped: this build has no CPU backend (oneDNN not found)\n");
        skip();
    }
    return be;
}

/* ---- small graphs ---- */

static struct fm_shape shape_of(int rank, const int64_t *d)
{
    struct fm_shape s;
    memset(&s, 0, sizeof(s));
    s.rank = rank;
    for (int i = 0; i < rank; i++)
        s.dims[i] = d[i];
    return s;
}
#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define SHAPE(...) shape_of((int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)), DIMS(__VA_ARGS__))

static fm_tid add_param(struct fm_ctx *ctx, struct fm_graph *g, const char *name,
                        struct fm_shape s)
{
    fm_tid t;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, name, FM_ROLE_PARAM, FM_DTYPE_FP32, &s, &t));
    return t;
}

static fm_tid add_op(struct fm_nn *nn, enum fm_op op, const char *name,
                     const struct fm_attrs *a, const fm_tid *in, int n_in)
{
    fm_tid out = FM_NONE;
    FM_ASSERT_OK(nn->ctx, fm_graph_add_node(nn->g, op, name, a, in, n_in, NULL, 1, &out));
    return out;
}

/* Appends flatten (for rank > 2), labels and a cross-entropy loss to y, then finalizes. */
static void add_loss(struct fm_nn *nn, fm_tid y)
{
    const struct fm_tensor *t = fm_graph_tensor(nn->g, y);
    fm_tid logits = t->shape.rank > 2 ? fm_nn_flatten(nn, "flat", y) : y;
    assert_int_equal(nn->st, FM_OK);
    struct fm_shape ls = SHAPE(t->shape.dims[0]);
    fm_tid labels, loss;
    FM_ASSERT_OK(nn->ctx, fm_graph_add_tensor(nn->g, "labels", FM_ROLE_INPUT, FM_DTYPE_INT64, &ls,
                                              &labels));
    fm_tid in[2] = {logits, labels};
    FM_ASSERT_OK(nn->ctx, fm_graph_add_node(nn->g, FM_OP_CROSS_ENTROPY, "loss", NULL, in, 2, NULL,
                                            1, &loss));
    FM_ASSERT_OK(nn->ctx, fm_graph_finalize(nn->g));
}

static uint64_t numel(const struct fm_graph *g, fm_tid t)
{
    uint64_t n;
    assert_int_equal(fm_shape_numel(&fm_graph_tensor(g, t)->shape, &n), FM_OK);
    return n;
}

/* A small deterministic generator for test data (not the library's). */
static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}
static double rng_uniform(uint64_t *s)
{
    return (double)rng_next(s) / 9007199254740992.0;
}
static double rng_normal(uint64_t *s)
{
    double u1 = rng_uniform(s), u2 = rng_uniform(s);
    return sqrt(-2.0 * log(u1 > 1e-300 ? u1 : 1e-300)) * cos(6.283185307179586 * u2);
}

/* ---- finite differences ----
 * For every trainable parameter P (the probe input "x" is one), along two random directions
 * d (uniform in [-1, 1] per element): the central difference (L(P + eps d) - L(P - eps d)) /
 * (2 eps) of the step's loss against the analytic <dL/dP, d>. eps = 1e-3; the loss is summed
 * in double, so float rounding in the forward (~1e-7 relative) adds about 1e-4 to the
 * difference. Tolerance: |fd - an| <= 1e-2 * max(|fd|, |an|) + 2e-4. Steps run with lr = 0, so
 * parameters do not move; BatchNorm in training mode uses batch statistics, so the running
 * statistics the steps update do not enter the loss. Ops with kinks get inputs at least 0.05
 * from every kink (and max pooling distinct values 0.01 apart), so no perturbation crosses one. */

enum values { VAL_NORMAL, VAL_AWAY_FROM_KINKS, VAL_DISTINCT };

typedef fm_tid (*build_fn)(struct fm_nn *nn, fm_tid x);

static float away_from_kinks(double v)
{
    static const double kinks[] = {0.0, -3.0, 3.0, 6.0};
    for (size_t k = 0; k < sizeof(kinks) / sizeof(kinks[0]); k++) {
        if (fabs(v - kinks[k]) < 0.05)
            v = kinks[k] + (v < kinks[k] ? -0.1 : 0.1);
    }
    return (float)v;
}

static void fill_values(float *v, uint64_t n, enum values kind, uint64_t *rng)
{
    for (uint64_t i = 0; i < n; i++) {
        double r = rng_normal(rng);
        v[i] = kind == VAL_AWAY_FROM_KINKS ? away_from_kinks(3.0 * r) : (float)r;
    }
    if (kind == VAL_DISTINCT) {
        for (uint64_t i = 0; i < n; i++)
            v[i] = 0.01f * (float)i - 0.005f * (float)n;
        for (uint64_t i = n; i > 1; i--) {   /* shuffle */
            uint64_t j = rng_next(rng) % i;
            float t = v[i - 1];
            v[i - 1] = v[j];
            v[j] = t;
        }
    }
}

static double step_loss(const struct fm_backend *be, void *state)
{
    struct fm_step_timing t = {0};
    assert_int_equal(be->step(state, &t), FM_OK);
    assert_true(isfinite(t.loss));
    return t.loss;
}

/* The backend's state for g with the optimizer frozen (lr and momentum 0), so that repeated
 * steps see the same parameters; fails the test naming `what` when prepare refuses. */
static void *prepare_frozen(const struct fm_backend *be, struct fm_ctx *ctx, struct fm_graph *g,
                            const char *what)
{
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.lr = 0.0;
    o.momentum = 0.0;
    void *state = NULL;
    if (be->prepare(ctx, g, &o, &state))
        fail_msg("%s: prepare: %s", what, fm_ctx_error(ctx));
    return state;
}

/* The tensor of g named `name`. */
static fm_tid named(const struct fm_graph *g, const char *name)
{
    for (size_t i = 0; i < fm_graph_tensor_count(g); i++)
        if (!strcmp(fm_graph_tensor(g, (fm_tid)i)->name, name))
            return (fm_tid)i;
    fail_msg("no tensor '%s'", name);
    return FM_NONE;
}

/* add_loss's cross-entropy of logits z (rows, cols), in double: the mean loss, and its
 * gradient (softmax - one-hot) / rows into dz. */
static double ref_cross_entropy(const double *z, uint64_t rows, uint64_t cols, const float *lab,
                                double *dz)
{
    double loss = 0.0;
    for (uint64_t r = 0; r < rows; r++) {
        const double *zr = z + r * cols;
        double m = zr[0], sum = 0.0;
        for (uint64_t c = 1; c < cols; c++)
            m = fmax(m, zr[c]);
        for (uint64_t c = 0; c < cols; c++)
            sum += exp(zr[c] - m);
        uint64_t t = (uint64_t)lab[r];
        loss += (log(sum) + m - zr[t]) / (double)rows;
        for (uint64_t c = 0; c < cols; c++)
            dz[r * cols + c] = (exp(zr[c] - m) / sum - (c == t ? 1.0 : 0.0)) / (double)rows;
    }
    return loss;
}

static void fd_check(const char *what, struct fm_shape xs, enum values kind, build_fn build)
{
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, what, &g));
    fm_tid x = add_param(ctx, g, "x", xs);
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    fm_tid y = build(&nn, x);
    assert_int_equal(nn.st, FM_OK);
    add_loss(&nn, y);

    void *state = prepare_frozen(be, ctx, g, what);

    uint64_t rng = 12345;
    /* starting values: the probe from `kind`; other parameters moved off their defaults
     * (BatchNorm's 1 and 0 would hide a wrong scale or shift gradient) */
    for (size_t i = 0; i < fm_graph_tensor_count(g); i++) {
        const struct fm_tensor *t = fm_graph_tensor(g, (fm_tid)i);
        if (t->role != FM_ROLE_PARAM)
            continue;
        uint64_t n = numel(g, (fm_tid)i);
        float *v = malloc(sizeof(float) * n);
        if ((fm_tid)i == x) {
            fill_values(v, n, kind, &rng);
        } else {
            FM_ASSERT_OK(ctx, be->read(state, (fm_tid)i, false, v, n));
            for (uint64_t k = 0; k < n; k++)
                v[k] += (float)(0.3 * rng_normal(&rng));
        }
        FM_ASSERT_OK(ctx, be->write(state, (fm_tid)i, v, n));
        free(v);
    }
    double l0 = step_loss(be, state);
    const double eps = 1e-3;
    int checked = 0;
    for (size_t i = 0; i < fm_graph_tensor_count(g); i++) {
        const struct fm_tensor *t = fm_graph_tensor(g, (fm_tid)i);
        if (t->role != FM_ROLE_PARAM || !fm_graph_needs_grad(g, (fm_tid)i))
            continue;
        uint64_t n = numel(g, (fm_tid)i);
        float *p0 = malloc(sizeof(float) * n), *grad = malloc(sizeof(float) * n);
        float *p = malloc(sizeof(float) * n), *d = malloc(sizeof(float) * n);
        /* the gradients of the base step: rerun it, since probing other tensors ran steps */
        FM_ASSERT_OK(ctx, be->read(state, (fm_tid)i, false, p0, n));
        double lb = step_loss(be, state);
        assert_true(fabs(lb - l0) <= 1e-9 * fabs(l0) + 1e-12);
        FM_ASSERT_OK(ctx, be->read(state, (fm_tid)i, true, grad, n));
        for (int dir = 0; dir < 2; dir++) {
            double an = 0.0;
            for (uint64_t k = 0; k < n; k++) {
                d[k] = (float)(2.0 * rng_uniform(&rng) - 1.0);
                an += (double)grad[k] * d[k];
            }
            for (uint64_t k = 0; k < n; k++)
                p[k] = p0[k] + (float)(eps * d[k]);
            FM_ASSERT_OK(ctx, be->write(state, (fm_tid)i, p, n));
            double lp = step_loss(be, state);
            for (uint64_t k = 0; k < n; k++)
                p[k] = p0[k] - (float)(eps * d[k]);
            FM_ASSERT_OK(ctx, be->write(state, (fm_tid)i, p, n));
            double lm = step_loss(be, state);
            FM_ASSERT_OK(ctx, be->write(state, (fm_tid)i, p0, n));
            /* the perturbation actually applied, after rounding to float */
            double fd = (lp - lm) / (2.0 * eps);
            double tol = 1e-2 * fmax(fabs(fd), fabs(an)) + 2e-4;
            if (!(fabs(fd - an) <= tol) || fabs(an) < 1e-3)
                fail_msg("%s: d loss / d %s along direction %d: analytic %.6g, finite "
                         "difference %.6g (tolerance %.2g; a direction with |analytic| < 1e-3 "
                         "checks nothing)",
                         what, t->name, dir, an, fd, tol);
            checked++;
        }
        free(p0);
        free(grad);
        free(p);
        free(d);
    }
    assert_true(checked >= 2);
    be->release(state);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- the ops ---- */

static fm_tid b_conv(struct fm_nn *nn, fm_tid x)
{   /* grouped, strided, dilated, padded, with bias */
    return fm_nn_conv_full(nn, "conv", x, 6, 3, 3, 2, 2, 2, 2, 2, 2, true);
}
static fm_tid b_conv_dw(struct fm_nn *nn, fm_tid x)
{
    return fm_nn_conv(nn, "dw", x, 8, 3, 1, 1, 8, false);
}
static fm_tid b_conv_dw_large(struct fm_nn *nn, fm_tid x)
{   /* 20 channels in oneDNN's blocked layout (padded to the block), then depthwise 5x3 strided
     * and 5x5 dilated filters with biases: flopmeter's own weight gradient */
    fm_tid c = fm_nn_conv(nn, "conv", x, 20, 1, 1, 0, 1, false);
    fm_tid a = fm_nn_conv_full(nn, "dw5x3", c, 20, 5, 3, 2, 1, 2, 1, 1, 20, true);
    return fm_nn_conv_full(nn, "dw5", a, 20, 5, 5, 1, 1, 3, 3, 2, 20, true);
}
static fm_tid b_conv_dw_tiny(struct fm_nn *nn, fm_tid x)
{   /* a depthwise 3x3 filter over a 2x2 input padded by 1 (ShuffleNetV2's last stage at 64x64),
     * 20 channels blocked: oneDNN 2.6 declines its vectorized weight gradient for the shape,
     * flopmeter's own runs instead */
    fm_tid c = fm_nn_conv(nn, "conv", x, 20, 1, 1, 0, 1, false);
    return fm_nn_conv_full(nn, "dw3", c, 20, 3, 3, 1, 1, 1, 1, 1, 20, true);
}
static fm_tid b_conv_dw7_tiny(struct fm_nn *nn, fm_tid x)
{   /* ConvNeXt's 7x7 depthwise filter over its last stage's 2x2 planes (64x64 input), padded by
     * 3, 32 channels: oneDNN 2.6 runs its forward through gemm in plain layouts unless asked
     * for blocked ones, and the weight gradient follows the forward's layout */
    fm_tid c = fm_nn_conv(nn, "conv", x, 32, 1, 1, 0, 1, false);
    return fm_nn_conv_full(nn, "dw7", c, 32, 7, 7, 1, 1, 3, 3, 1, 32, true);
}
static fm_tid b_conv_grouped_tiny(struct fm_nn *nn, fm_tid x)
{   /* RegNetY's last stage at 64x64 input: 3x3 grouped filters (8 channels a group) over 2x2
     * planes padded by 1, with a bias: oneDNN 2.6 runs the weight gradient through im2col and
     * gemm, flopmeter's loops run it over the blocked layouts */
    fm_tid c = fm_nn_conv(nn, "conv", x, 32, 1, 1, 0, 1, false);
    return fm_nn_conv(nn, "grouped", c, 32, 3, 1, 1, 4, true);
}
static fm_tid b_conv_grouped4_tiny(struct fm_nn *nn, fm_tid x)
{   /* the same with 4 channels a group, strided: 5x5 planes, 3x3 filters, stride 2 */
    fm_tid c = fm_nn_conv(nn, "conv", x, 32, 1, 1, 0, 1, false);
    return fm_nn_conv(nn, "grouped", c, 32, 3, 2, 1, 8, false);
}
static fm_tid b_conv_grouped4_padded(struct fm_nn *nn, fm_tid x)
{   /* ResNeXt-50 32x4d's first-stage shape, small: 3x3 filters, 4 channels a group, stride 1,
     * with a bias, 20 channels (the last 8-channel block half padded). On AVX2 oneDNN 2.6 runs
     * it through im2col and gemm; flopmeter's kernels (grp_kern.h) run all three phases */
    fm_tid c = fm_nn_conv(nn, "conv", x, 20, 1, 1, 0, 1, false);
    return fm_nn_conv(nn, "grouped", c, 20, 3, 1, 1, 5, true);
}
static fm_tid b_conv_grouped2_dilated(struct fm_nn *nn, fm_tid x)
{   /* 2 channels a group, a 3x5 filter dilated by 2, padding 2 and 3 (the input gradient as a
     * flipped forward), then stride 2 (the input gradient pixel by pixel) */
    fm_tid c = fm_nn_conv(nn, "conv", x, 14, 1, 1, 0, 1, false);
    fm_tid a = fm_nn_conv_full(nn, "grouped", c, 14, 3, 5, 1, 1, 2, 3, 2, 7, true);
    return fm_nn_conv_full(nn, "strided", a, 14, 3, 3, 2, 2, 1, 0, 1, 7, false);
}
static fm_tid b_hardswish_padded(struct fm_nn *nn, fm_tid x)
{   /* Hardswish over 24 channels padded to the 16-channel block: its backward runs over the
     * whole buffer seen as one vector */
    return fm_nn_act(nn, "hs", FM_OP_HARDSWISH, fm_nn_conv(nn, "conv", x, 24, 3, 1, 1, 1, true));
}
static fm_tid b_grouped_bn(struct fm_nn *nn, fm_tid x)
{   /* ResNeXt's grouped convolution, 4 channels per group, writes oneDNN's aBcd4b layout, for
     * which oneDNN's BatchNorm has only reference code: BatchNorm runs on a 16-channel-blocked
     * copy, and its gradients go back through the reorder */
    fm_tid c = fm_nn_conv(nn, "conv", x, 32, 1, 1, 0, 1, false);
    fm_tid g = fm_nn_conv(nn, "grouped", c, 32, 3, 1, 1, 8, false);
    return fm_nn_bn(nn, "bn", g, 1e-5);
}
static fm_tid b_conv_1x1(struct fm_nn *nn, fm_tid x)
{   /* asymmetric kernel and stride */
    return fm_nn_conv_full(nn, "conv", x, 16, 1, 3, 2, 1, 0, 1, 1, 1, false);
}
static fm_tid b_linear(struct fm_nn *nn, fm_tid x)
{
    return fm_nn_linear(nn, "fc", x, 5, true);
}
static fm_tid b_bn(struct fm_nn *nn, fm_tid x)
{
    return fm_nn_bn(nn, "bn", x, 1e-5);
}
static fm_tid b_conv_bn_relu(struct fm_nn *nn, fm_tid x)
{
    fm_tid c = fm_nn_conv(nn, "conv", x, 16, 3, 1, 1, 1, false);
    return fm_nn_act(nn, "relu", FM_OP_RELU, fm_nn_bn(nn, "bn", c, 1e-5));
}
static fm_tid b_relu(struct fm_nn *nn, fm_tid x)
{
    return fm_nn_act(nn, "act", FM_OP_RELU, x);
}
static fm_tid b_leaky(struct fm_nn *nn, fm_tid x)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.alpha = 0.1;
    return add_op(nn, FM_OP_LEAKY_RELU, "act", &a, &x, 1);
}
static fm_tid b_relu6(struct fm_nn *nn, fm_tid x)
{
    return fm_nn_relu6(nn, "act", x);
}
static fm_tid b_sigmoid(struct fm_nn *nn, fm_tid x)
{
    return fm_nn_act(nn, "act", FM_OP_SIGMOID, x);
}
static fm_tid b_tanh(struct fm_nn *nn, fm_tid x)
{
    return fm_nn_act(nn, "act", FM_OP_TANH, x);
}
static fm_tid b_silu(struct fm_nn *nn, fm_tid x)
{
    return fm_nn_act(nn, "act", FM_OP_SILU, x);
}
static fm_tid b_gelu(struct fm_nn *nn, fm_tid x)
{
    return fm_nn_act(nn, "act", FM_OP_GELU, x);
}
static fm_tid b_gelu_tanh(struct fm_nn *nn, fm_tid x)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.flags = FM_ATTR_GELU_TANH;
    return add_op(nn, FM_OP_GELU, "act", &a, &x, 1);
}
static fm_tid b_hardswish(struct fm_nn *nn, fm_tid x)
{
    return fm_nn_act(nn, "act", FM_OP_HARDSWISH, x);
}
static fm_tid b_hardsigmoid(struct fm_nn *nn, fm_tid x)
{
    return fm_nn_act(nn, "act", FM_OP_HARDSIGMOID, x);
}
static fm_tid b_maxpool(struct fm_nn *nn, fm_tid x)
{   /* 7x7 -> ceil((7+2-3)/2)+1 = 4 */
    return fm_nn_maxpool(nn, "pool", x, 3, 2, 1, true);
}
static fm_tid b_avgpool_pad(struct fm_nn *nn, fm_tid x)
{
    return fm_nn_avgpool(nn, "pool", x, 3, 2, 1, false, true);
}
static fm_tid b_avgpool_ceil(struct fm_nn *nn, fm_tid x)
{
    return fm_nn_avgpool(nn, "pool", x, 2, 2, 0, true, false);
}
static fm_tid b_adaptive_uneven(struct fm_nn *nn, fm_tid x)
{   /* 5x7 -> 2x3: windows of different sizes, overlapping */
    return fm_nn_adaptive_avgpool(nn, "pool", x, 2, 3);
}
static fm_tid b_adaptive_even(struct fm_nn *nn, fm_tid x)
{
    return fm_nn_adaptive_avgpool(nn, "pool", x, 3, 3);
}
static fm_tid b_global_avg(struct fm_nn *nn, fm_tid x)
{
    return add_op(nn, FM_OP_GLOBAL_AVGPOOL, "pool", NULL, &x, 1);
}
static fm_tid b_global_max(struct fm_nn *nn, fm_tid x)
{
    return add_op(nn, FM_OP_GLOBAL_MAXPOOL, "pool", NULL, &x, 1);
}
static fm_tid b_add_bcast(struct fm_nn *nn, fm_tid x)
{   /* x (N,C,H,W) + b (C,1,1): numpy broadcasting over a lower rank */
    fm_tid b = add_param(nn->ctx, nn->g, "b", SHAPE(4, 1, 1));
    return fm_nn_add(nn, "add", x, b);
}
static fm_tid b_add_mul_rows(struct fm_nn *nn, fm_tid x)
{   /* (N,C,H,W) + b (W), then * g (H,W): gradients summed over the leading dims */
    fm_tid b = add_param(nn->ctx, nn->g, "b", SHAPE(3));
    fm_tid g = add_param(nn->ctx, nn->g, "g", SHAPE(3, 3));
    return fm_nn_mul(nn, "mul", fm_nn_add(nn, "add", x, b), g);
}
static fm_tid b_sub_rows(struct fm_nn *nn, fm_tid x)
{   /* x - b (W): b's gradient is -dy summed over the leading dims (scaled column sums) */
    fm_tid b = add_param(nn->ctx, nn->g, "b", SHAPE(3));
    fm_tid in[2] = {x, b}, y = FM_NONE;
    nn->st = fm_graph_add_node(nn->g, FM_OP_SUB, "sub", NULL, in, 2, NULL, 1, &y);
    return y;
}
static fm_tid b_add_self(struct fm_nn *nn, fm_tid x)
{   /* one tensor twice: its gradient is delivered twice and must add up */
    return fm_nn_add(nn, "add", x, x);
}
static fm_tid b_mul_se(struct fm_nn *nn, fm_tid x)
{   /* squeeze-excitation: s (N,C,1,1) first, broadcast over x's H and W */
    fm_tid s = add_param(nn->ctx, nn->g, "s", SHAPE(2, 4, 1, 1));
    return fm_nn_mul(nn, "mul", s, x);
}
static fm_tid b_mul_se_blocked(struct fm_nn *nn, fm_tid x)
{   /* x * s with s (N,C,1,1) from the block itself, x a 20-channel convolution's output in
     * oneDNN's blocked layout (channels padded to the block): flopmeter's own plane scaling */
    fm_tid c = fm_nn_conv(nn, "conv", x, 20, 3, 1, 1, 1, true);
    fm_tid p = fm_nn_adaptive_avgpool(nn, "pool", c, 1, 1);
    fm_tid e = fm_nn_act(nn, "sig", FM_OP_SIGMOID, fm_nn_conv(nn, "fc", p, 20, 1, 1, 0, 1, true));
    return fm_nn_mul(nn, "mul", c, e);
}
static fm_tid b_se_block(struct fm_nn *nn, fm_tid x)
{   /* a whole squeeze-excitation block, 20 -> 5 -> 20 channels on the pooled 1x1 map */
    fm_tid c = fm_nn_conv(nn, "conv", x, 20, 3, 1, 1, 1, true);
    fm_tid p = fm_nn_adaptive_avgpool(nn, "pool", c, 1, 1);
    fm_tid q = fm_nn_act(nn, "silu", FM_OP_SILU, fm_nn_conv(nn, "fc1", p, 5, 1, 1, 0, 1, true));
    fm_tid e = fm_nn_act(nn, "sig", FM_OP_SIGMOID, fm_nn_conv(nn, "fc2", q, 20, 1, 1, 0, 1, true));
    return fm_nn_mul(nn, "mul", c, e);
}
/* LayerNorm over the dims from axis on, with its scale and shift: at most 2^14 elements it
 * runs as the GroupNorm loops (one group a row), above as oneDNN's layer normalization */
static fm_tid layernorm(struct fm_nn *nn, fm_tid x, int axis, struct fm_shape ws)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.axis = axis;
    a.eps = 1e-5;
    fm_tid in[3] = {x, add_param(nn->ctx, nn->g, "ln.weight", ws),
                    add_param(nn->ctx, nn->g, "ln.bias", ws)};
    return add_op(nn, FM_OP_LAYERNORM, "ln", &a, in, 3);
}
static fm_tid b_ln_small(struct fm_nn *nn, fm_tid x)
{   /* (2, 3, 4, 6) normalized over its last two dims: 6 rows of 24 */
    return layernorm(nn, x, -2, SHAPE(4, 6));
}
static fm_tid b_ln_large(struct fm_nn *nn, fm_tid x)
{   /* 160 rows of 128: 20,480 elements */
    return layernorm(nn, x, -1, SHAPE(128));
}
static fm_tid b_mul_same(struct fm_nn *nn, fm_tid x)
{
    fm_tid z = add_param(nn->ctx, nn->g, "z", SHAPE(2, 4, 3, 3));
    return fm_nn_mul(nn, "mul", x, z);
}
static fm_tid b_two_users(struct fm_nn *nn, fm_tid x)
{   /* x feeds two nodes: accumulation across nodes */
    fm_tid a = fm_nn_act(nn, "tanh", FM_OP_TANH, x);
    fm_tid b = fm_nn_act(nn, "sig", FM_OP_SIGMOID, x);
    return fm_nn_add(nn, "add", a, b);
}
static fm_tid b_concat_plain(struct fm_nn *nn, fm_tid x)
{   /* channel offsets 4: not a multiple of the 16-channel blocks */
    fm_tid z = add_param(nn->ctx, nn->g, "z", SHAPE(2, 3, 3, 3));
    fm_tid in[2] = {x, z};
    return fm_nn_concat(nn, "cat", in, 2, 1);
}
static fm_tid b_concat_blocked(struct fm_nn *nn, fm_tid x)
{   /* two 16-channel convolutions of x, concatenated in oneDNN's blocked layout */
    fm_tid in[2] = {fm_nn_conv(nn, "a", x, 16, 3, 1, 1, 1, false),
                    fm_nn_conv(nn, "b", x, 16, 1, 1, 0, 1, true)};
    return fm_nn_concat(nn, "cat", in, 2, 1);
}
static fm_tid b_concat_dense(struct fm_nn *nn, fm_tid x)
{   /* DenseNet's pattern: every concat reads all earlier feature maps, so their gradients add
     * up from several concats (blocked, 16 channels each; the last of 8, padded) */
    fm_tid a = fm_nn_conv(nn, "a", x, 16, 3, 1, 1, 1, false);
    fm_tid b = fm_nn_conv(nn, "b", a, 16, 3, 1, 1, 1, false);
    fm_tid in1[2] = {a, b};
    fm_tid c1 = fm_nn_concat(nn, "cat1", in1, 2, 1);
    fm_tid d = fm_nn_conv(nn, "d", c1, 8, 1, 1, 0, 1, false);
    fm_tid in2[3] = {a, b, d};
    return fm_nn_concat(nn, "cat2", in2, 3, 1);
}
static fm_tid b_pad_none(struct fm_nn *nn, fm_tid x)
{   /* DenseNet's transition as the TorchScript exporter writes it: a blocked convolution's
     * output through a Pad of zeros (a view, in the blocked layout), pooled, normalized */
    fm_tid c = fm_nn_conv(nn, "conv", x, 16, 1, 1, 0, 1, false);
    struct fm_attrs pa;
    fm_attrs_init(&pa);
    pa.nints = 8;
    fm_tid p = add_op(nn, FM_OP_PAD, "pad", &pa, &c, 1);
    return fm_nn_bn(nn, "bn", fm_nn_avgpool(nn, "pool", p, 2, 2, 0, false, false), 1e-5);
}
static fm_tid b_flatten_linear(struct fm_nn *nn, fm_tid x)
{   /* a blocked conv output flattened for a linear layer */
    fm_tid c = fm_nn_conv(nn, "conv", x, 16, 3, 2, 1, 1, true);
    return fm_nn_linear(nn, "fc", fm_nn_flatten(nn, "flatten", c), 7, true);
}

/* x, an (11, 4) table, is both an embedding and the output projection's weight (GPT-2's tied
 * wte and lm_head): Embedding(ids, x) @ x^T. The backward reaches the Transpose first, so
 * the embedding's rows are added into the gradient the projection already wrote. */
static fm_tid b_tied_embedding(struct fm_nn *nn, fm_tid x)
{
    struct fm_shape s_ids = SHAPE(2, 3);
    fm_tid ids, e, xt, z;
    FM_ASSERT_OK(nn->ctx, fm_graph_add_tensor(nn->g, "ids", FM_ROLE_INPUT, FM_DTYPE_INT64,
                                              &s_ids, &ids));
    FM_ASSERT_OK(nn->ctx, fm_graph_add_node(nn->g, FM_OP_EMBEDDING, "emb", NULL,
                                            (fm_tid[]){ids, x}, 2, NULL, 1, &e));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.ints[0] = 1;
    a.ints[1] = 0;
    a.nints = 2;
    FM_ASSERT_OK(nn->ctx, fm_graph_add_node(nn->g, FM_OP_TRANSPOSE, "wt", &a, &x, 1, NULL, 1,
                                            &xt));
    FM_ASSERT_OK(nn->ctx, fm_graph_add_node(nn->g, FM_OP_MATMUL, "lm_head", NULL,
                                            (fm_tid[]){e, xt}, 2, NULL, 1, &z));
    return z;
}

/* HF's Conv1D as the exporters write it: Gemm(x (48, 24), W (24, 40), b (40)) with transB = 0
 * and as MatMul of x (2, 24, 24) by W (24, 40) plus b: sgemm with a plain B, 48 rows (the
 * range where gemm_run computes B's first columns apart when B is 64-byte aligned), and the
 * bias gradient a sum over the leading rows (rowsum_run) */
static fm_tid b_gemm_nn(struct fm_nn *nn, fm_tid x)
{
    fm_tid w = add_param(nn->ctx, nn->g, "w", SHAPE(24, 40));
    fm_tid b = add_param(nn->ctx, nn->g, "b", SHAPE(40));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.alpha = 1.0;
    a.beta = 1.0;
    return add_op(nn, FM_OP_GEMM, "gemm", &a, (fm_tid[]){x, w, b}, 3);
}
static fm_tid b_matmul_rows(struct fm_nn *nn, fm_tid x)
{
    fm_tid w = add_param(nn->ctx, nn->g, "w", SHAPE(24, 40));
    fm_tid b = add_param(nn->ctx, nn->g, "b", SHAPE(40));
    fm_tid y = add_op(nn, FM_OP_MATMUL, "mm", NULL, (fm_tid[]){x, w}, 2);
    return add_op(nn, FM_OP_ADD, "bias", NULL, (fm_tid[]){y, b}, 2);
}

#define FD_TEST(fn, kind, build, ...)                                                       \
    static void fn(void **state)                                                           \
    {                                                                                      \
        (void)state;                                                                       \
        fd_check(#fn, SHAPE(__VA_ARGS__), kind, build);                                    \
    }

FD_TEST(fd_conv_grouped_strided_dilated, VAL_NORMAL, b_conv, 2, 4, 9, 9)
FD_TEST(fd_conv_depthwise, VAL_NORMAL, b_conv_dw, 2, 8, 6, 6)
FD_TEST(fd_conv_depthwise_large, VAL_NORMAL, b_conv_dw_large, 2, 3, 7, 6)
FD_TEST(fd_conv_depthwise_tiny, VAL_NORMAL, b_conv_dw_tiny, 2, 3, 2, 2)
FD_TEST(fd_conv_depthwise7_tiny, VAL_NORMAL, b_conv_dw7_tiny, 2, 3, 2, 2)
FD_TEST(fd_conv_grouped_tiny, VAL_NORMAL, b_conv_grouped_tiny, 2, 3, 2, 2)
FD_TEST(fd_conv_grouped4_strided, VAL_NORMAL, b_conv_grouped4_tiny, 2, 3, 5, 5)
FD_TEST(fd_conv_grouped4_padded, VAL_NORMAL, b_conv_grouped4_padded, 2, 3, 6, 5)
FD_TEST(fd_conv_grouped2_dilated, VAL_NORMAL, b_conv_grouped2_dilated, 2, 3, 7, 9)
FD_TEST(fd_conv_asymmetric, VAL_NORMAL, b_conv_1x1, 2, 3, 5, 6)
FD_TEST(fd_grouped_bn_blocked, VAL_NORMAL, b_grouped_bn, 2, 3, 6, 6)
FD_TEST(fd_linear, VAL_NORMAL, b_linear, 3, 12)
FD_TEST(fd_gemm_plain_b, VAL_NORMAL, b_gemm_nn, 48, 24)
FD_TEST(fd_matmul_rows, VAL_NORMAL, b_matmul_rows, 2, 24, 24)
FD_TEST(fd_tied_embedding, VAL_NORMAL, b_tied_embedding, 11, 4)
FD_TEST(fd_batchnorm, VAL_NORMAL, b_bn, 2, 3, 4, 4)
FD_TEST(fd_conv_bn_relu, VAL_NORMAL, b_conv_bn_relu, 2, 3, 5, 5)
FD_TEST(fd_relu, VAL_AWAY_FROM_KINKS, b_relu, 2, 3, 4, 4)
FD_TEST(fd_leaky_relu, VAL_AWAY_FROM_KINKS, b_leaky, 2, 3, 4, 4)
FD_TEST(fd_relu6, VAL_AWAY_FROM_KINKS, b_relu6, 2, 3, 4, 4)
FD_TEST(fd_sigmoid, VAL_NORMAL, b_sigmoid, 2, 3, 4, 4)
FD_TEST(fd_tanh, VAL_NORMAL, b_tanh, 2, 3, 4, 4)
FD_TEST(fd_silu, VAL_NORMAL, b_silu, 2, 3, 4, 4)
FD_TEST(fd_gelu, VAL_NORMAL, b_gelu, 2, 3, 4, 4)
FD_TEST(fd_gelu_tanh, VAL_NORMAL, b_gelu_tanh, 2, 3, 4, 4)
FD_TEST(fd_hardswish, VAL_AWAY_FROM_KINKS, b_hardswish, 2, 3, 4, 4)
FD_TEST(fd_hardswish_padded, VAL_AWAY_FROM_KINKS, b_hardswish_padded, 2, 3, 4, 4)
FD_TEST(fd_hardsigmoid, VAL_AWAY_FROM_KINKS, b_hardsigmoid, 2, 3, 4, 4)
FD_TEST(fd_maxpool_ceil, VAL_DISTINCT, b_maxpool, 2, 3, 7, 7)
/* 16 channels on a plain input (a parameter's layout): pooled over a channel-blocked copy */
FD_TEST(fd_maxpool_plain_blocked, VAL_DISTINCT, b_maxpool, 2, 16, 7, 7)
FD_TEST(fd_avgpool_count_pad, VAL_NORMAL, b_avgpool_pad, 2, 3, 7, 7)
FD_TEST(fd_avgpool_ceil, VAL_NORMAL, b_avgpool_ceil, 2, 3, 5, 5)
FD_TEST(fd_adaptive_avgpool_uneven, VAL_NORMAL, b_adaptive_uneven, 2, 3, 5, 7)
FD_TEST(fd_adaptive_avgpool_even, VAL_NORMAL, b_adaptive_even, 2, 3, 6, 6)
FD_TEST(fd_global_avgpool, VAL_NORMAL, b_global_avg, 2, 3, 4, 5)
FD_TEST(fd_global_maxpool, VAL_DISTINCT, b_global_max, 2, 3, 4, 5)
FD_TEST(fd_add_broadcast, VAL_NORMAL, b_add_bcast, 2, 4, 3, 3)
FD_TEST(fd_add_mul_rows, VAL_NORMAL, b_add_mul_rows, 2, 4, 3, 3)
FD_TEST(fd_sub_rows, VAL_NORMAL, b_sub_rows, 2, 4, 3, 3)
FD_TEST(fd_add_self, VAL_NORMAL, b_add_self, 2, 4, 3, 3)
FD_TEST(fd_mul_squeeze_excitation, VAL_NORMAL, b_mul_se, 2, 4, 3, 3)
FD_TEST(fd_mul_se_blocked, VAL_NORMAL, b_mul_se_blocked, 3, 3, 5, 5)
FD_TEST(fd_se_block, VAL_NORMAL, b_se_block, 2, 3, 4, 4)
FD_TEST(fd_mul_same_shape, VAL_NORMAL, b_mul_same, 2, 4, 3, 3)
FD_TEST(fd_layernorm_small, VAL_NORMAL, b_ln_small, 2, 3, 4, 6)
FD_TEST(fd_layernorm_large, VAL_NORMAL, b_ln_large, 4, 40, 128)
FD_TEST(fd_two_users, VAL_NORMAL, b_two_users, 2, 4, 3, 3)
FD_TEST(fd_concat_plain, VAL_NORMAL, b_concat_plain, 2, 4, 3, 3)
FD_TEST(fd_concat_blocked, VAL_NORMAL, b_concat_blocked, 2, 3, 4, 4)
FD_TEST(fd_concat_dense, VAL_NORMAL, b_concat_dense, 2, 3, 4, 4)
/* the same with runs shared out among the threads */
FD_TEST(fd_concat_dense_threads, VAL_NORMAL, b_concat_dense, 2, 3, 32, 32)
FD_TEST(fd_pad_none, VAL_NORMAL, b_pad_none, 2, 3, 4, 4)
FD_TEST(fd_flatten_linear, VAL_NORMAL, b_flatten_linear, 2, 3, 6, 6)

/* ---- broadcast binary ops against a plain reference ----
 * y = op(a, b) with numpy broadcasting, at the shapes the CPU backend runs on its own code
 * (a squeeze-excitation's (N, C, 1, 1) at batch 1 with channel counts that do not fill a
 * 16-channel block, a decomposed LayerNorm's (N, H, W, C) - (N, H, W, 1), last-dim and
 * mixed broadcasts through the walk). The full operand is a parameter x, or with `conv` a 1x1
 * convolution of x (so it arrives in oneDNN's blocked layout, channels padded to the block);
 * the broadcast operand is a parameter. After one step the test reads a, b, y, the labels and
 * the loss back and computes in double: y from a and b; the loss (cross-entropy of the
 * flattened y, mean over rows); dy = (softmax - one-hot) / rows; and the gradient of every
 * parameter operand (dy times the other operand, or -dy, or the quotient rule, summed over
 * the dims it was broadcast along). */

static void bidx_dims(const struct fm_shape *out, const struct fm_shape *op, int64_t *d)
{
    for (int i = 0; i < out->rank; i++) {
        int k = i - (out->rank - op->rank);
        d[i] = k >= 0 ? op->dims[k] : 1;
    }
}

/* the flat index into an operand of aligned dims d of the output's multi-index idx */
static uint64_t bidx(int rank, const int64_t *idx, const int64_t *d)
{
    uint64_t o = 0;
    for (int i = 0; i < rank; i++)
        o = o * (uint64_t)d[i] + (uint64_t)(d[i] == 1 ? 0 : idx[i]);
    return o;
}

static double ref_op(enum fm_op op, double u, double v)
{
    switch (op) {
    case FM_OP_ADD: return u + v;
    case FM_OP_SUB: return u - v;
    case FM_OP_MUL: return u * v;
    case FM_OP_POW: return pow(u, v);
    default: return u / v;
    }
}

/* d y / d u and d y / d v */
static void ref_grad(enum fm_op op, double u, double v, double *du, double *dv)
{
    switch (op) {
    case FM_OP_ADD: *du = 1.0; *dv = 1.0; break;
    case FM_OP_SUB: *du = 1.0; *dv = -1.0; break;
    case FM_OP_MUL: *du = v; *dv = u; break;
    case FM_OP_POW: *du = v * pow(u, v - 1.0); *dv = pow(u, v) * log(u); break;
    default: *du = 1.0 / v; *dv = -u / (v * v); break;
    }
}

static void close_to(const char *what, const char *name, const float *got, const double *ref,
                     uint64_t n, double scale)
{
    double tol = 1e-4 * scale + 1e-6;
    for (uint64_t i = 0; i < n; i++) {
        if (!(fabs(got[i] - ref[i]) <= tol))
            fail_msg("%s: %s[%llu] = %.8g, reference %.8g (tolerance %.2g)", what, name,
                     (unsigned long long)i, got[i], ref[i], tol);
    }
}

static double max_abs(const double *v, uint64_t n)
{
    double m = 0.0;
    for (uint64_t i = 0; i < n; i++)
        m = fmax(m, fabs(v[i]));
    return m;
}

/* bval: every element of b (Pow's exponent), or 0: b random */
static void bcast_check(const char *what, enum fm_op op, struct fm_shape as, struct fm_shape bs,
                        bool conv, bool b_first, double bval)
{
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, what, &g));
    struct fm_shape xs = as;
    if (conv)
        xs.dims[1] = 3;
    fm_tid x = add_param(ctx, g, "x", xs), b = add_param(ctx, g, "b", bs);
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    fm_tid a = conv ? fm_nn_conv(&nn, "conv", x, as.dims[1], 1, 1, 0, 1, true) : x;
    assert_int_equal(nn.st, FM_OK);
    fm_tid in[2] = {b_first ? b : a, b_first ? a : b};
    fm_tid y = add_op(&nn, op, "op", NULL, in, 2);
    add_loss(&nn, y);
    void *state = prepare_frozen(be, ctx, g, what);
    uint64_t rng = 777;
    const fm_tid params[2] = {x, b};
    for (int k = 0; k < 2; k++) {
        uint64_t n = numel(g, params[k]);
        float *v = malloc(sizeof(float) * n);
        for (uint64_t i = 0; i < n; i++) {   /* denominators and Pow's bases in [0.5, 1.5] */
            if (params[k] == b && bval != 0.0)
                v[i] = (float)bval;
            else if ((params[k] == b && op == FM_OP_DIV) || (params[k] == x && op == FM_OP_POW))
                v[i] = (float)(0.5 + rng_uniform(&rng));
            else
                v[i] = (float)rng_normal(&rng);
        }
        FM_ASSERT_OK(ctx, be->write(state, params[k], v, n));
        free(v);
    }
    double loss = step_loss(be, state);

    const struct fm_shape *ys = &fm_graph_tensor(g, y)->shape;
    uint64_t na = numel(g, a), nb = numel(g, b), ny = numel(g, y);
    float *va = malloc(sizeof(float) * na), *vb = malloc(sizeof(float) * nb);
    float *vy = malloc(sizeof(float) * ny), *ga = malloc(sizeof(float) * na);
    float *gb = malloc(sizeof(float) * nb);
    double *ry = calloc(ny, sizeof(double)), *dy = calloc(ny, sizeof(double));
    double *rga = calloc(na, sizeof(double)), *rgb = calloc(nb, sizeof(double));
    FM_ASSERT_OK(ctx, be->read(state, a, false, va, na));
    FM_ASSERT_OK(ctx, be->read(state, b, false, vb, nb));
    FM_ASSERT_OK(ctx, be->read(state, y, false, vy, ny));
    FM_ASSERT_OK(ctx, be->read(state, b, true, gb, nb));
    if (!conv)
        FM_ASSERT_OK(ctx, be->read(state, a, true, ga, na));
    int64_t da[FM_MAX_DIMS], db[FM_MAX_DIMS], idx[FM_MAX_DIMS] = {0};
    bidx_dims(ys, &fm_graph_tensor(g, a)->shape, da);
    bidx_dims(ys, &bs, db);
    for (uint64_t i = 0; i < ny; i++) {
        uint64_t r = i;
        for (int d = ys->rank - 1; d >= 0; d--) {
            idx[d] = (int64_t)(r % (uint64_t)ys->dims[d]);
            r /= (uint64_t)ys->dims[d];
        }
        double u = va[bidx(ys->rank, idx, da)], v = vb[bidx(ys->rank, idx, db)];
        ry[i] = b_first ? ref_op(op, v, u) : ref_op(op, u, v);
    }
    close_to(what, "y", vy, ry, ny, max_abs(ry, ny));

    /* the loss and dy from the labels: rows of the flattened y */
    uint64_t rows = (uint64_t)ys->dims[0], cols = ny / rows;
    float *lab = malloc(sizeof(float) * rows);
    FM_ASSERT_OK(ctx, be->read(state, named(g, "labels"), false, lab, rows));
    double ref_loss = ref_cross_entropy(ry, rows, cols, lab, dy);
    if (!(fabs(loss - ref_loss) <= 1e-4 * fabs(ref_loss) + 1e-5))
        fail_msg("%s: loss %.8g, reference %.8g", what, loss, ref_loss);
    for (uint64_t i = 0; i < ny; i++) {
        uint64_t r = i;
        for (int d = ys->rank - 1; d >= 0; d--) {
            idx[d] = (int64_t)(r % (uint64_t)ys->dims[d]);
            r /= (uint64_t)ys->dims[d];
        }
        uint64_t ia = bidx(ys->rank, idx, da), ib = bidx(ys->rank, idx, db);
        double du, dv;
        if (b_first) {
            ref_grad(op, vb[ib], va[ia], &dv, &du);
        } else {
            ref_grad(op, va[ia], vb[ib], &du, &dv);
        }
        rga[ia] += dy[i] * du;
        rgb[ib] += dy[i] * dv;
    }
    close_to(what, "d b", gb, rgb, nb, max_abs(rgb, nb));
    if (!conv)
        close_to(what, "d a", ga, rga, na, max_abs(rga, na));
    free(va); free(vb); free(vy); free(ga); free(gb); free(ry); free(dy); free(rga); free(rgb);
    free(lab);
    be->release(state);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- small dense products against a plain reference ----
 * y = a W^T + b where a is a linear layer's input (rows, k), or with `conv` the squeeze of a
 * squeeze-excitation block: a 1x1 convolution of a global average pool's (rows, k, 1, 1)
 * output, which arrives in oneDNN's channel-blocked layout with its channels padded. Products
 * of at most FM_CPU_SMALL_MACS multiply-adds run on small.c's loops, larger ones on oneDNN;
 * the same check covers both. After one step the test reads a, W, b, y and the labels and
 * computes in double y, the loss, dy = (softmax - one-hot) / rows, dW = dy^T a, db (dy's rows
 * summed) and, for the linear layer, dx = dy W. */
static void small_check(const char *what, int64_t rows, int64_t k, int64_t n, bool conv)
{
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, what, &g));
    fm_tid x = add_param(ctx, g, "x", conv ? SHAPE(rows, 3, 4, 4) : SHAPE(rows, k));
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    fm_tid a = x, y;
    if (conv) {
        fm_tid c = fm_nn_conv(&nn, "conv", x, k, 3, 1, 1, 1, true);
        a = fm_nn_adaptive_avgpool(&nn, "pool", c, 1, 1);
        y = fm_nn_conv(&nn, "fc", a, n, 1, 1, 0, 1, true);
    } else {
        y = fm_nn_linear(&nn, "fc", x, n, true);
    }
    assert_int_equal(nn.st, FM_OK);
    add_loss(&nn, y);
    fm_tid w = named(g, "fc.weight"), b = named(g, "fc.bias"), labels = named(g, "labels");
    void *state = prepare_frozen(be, ctx, g, what);
    uint64_t rng = 4242;
    const fm_tid params[3] = {x, w, b};
    for (int p = 0; p < 3; p++) {
        uint64_t cnt = numel(g, params[p]);
        float *v = malloc(sizeof(float) * cnt);
        for (uint64_t i = 0; i < cnt; i++)
            v[i] = (float)rng_normal(&rng);
        FM_ASSERT_OK(ctx, be->write(state, params[p], v, cnt));
        free(v);
    }
    double loss = step_loss(be, state);

    uint64_t na = (uint64_t)(rows * k), nw = (uint64_t)(n * k), ny = (uint64_t)(rows * n);
    float *va = malloc(sizeof(float) * na), *vw = malloc(sizeof(float) * nw);
    float *vb = malloc(sizeof(float) * n), *vy = malloc(sizeof(float) * ny);
    float *gw = malloc(sizeof(float) * nw), *gb = malloc(sizeof(float) * n);
    float *ga = malloc(sizeof(float) * na), *lab = malloc(sizeof(float) * rows);
    double *ry = calloc(ny, sizeof(double)), *dy = calloc(ny, sizeof(double));
    double *rgw = calloc(nw, sizeof(double)), *rgb = calloc(n, sizeof(double));
    double *rga = calloc(na, sizeof(double));
    FM_ASSERT_OK(ctx, be->read(state, a, false, va, na));
    FM_ASSERT_OK(ctx, be->read(state, w, false, vw, nw));
    FM_ASSERT_OK(ctx, be->read(state, b, false, vb, n));
    FM_ASSERT_OK(ctx, be->read(state, y, false, vy, ny));
    FM_ASSERT_OK(ctx, be->read(state, w, true, gw, nw));
    FM_ASSERT_OK(ctx, be->read(state, b, true, gb, n));
    FM_ASSERT_OK(ctx, be->read(state, labels, false, lab, rows));
    if (!conv)
        FM_ASSERT_OK(ctx, be->read(state, x, true, ga, na));
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < n; j++) {
            ry[r * n + j] = vb[j];
            for (int64_t c = 0; c < k; c++)
                ry[r * n + j] += (double)va[r * k + c] * vw[j * k + c];
        }
    }
    double ref_loss = ref_cross_entropy(ry, (uint64_t)rows, (uint64_t)n, lab, dy);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t j = 0; j < n; j++) {
            double d = dy[r * n + j];
            rgb[j] += d;
            for (int64_t c = 0; c < k; c++) {
                rgw[j * k + c] += d * va[r * k + c];
                rga[r * k + c] += d * vw[j * k + c];
            }
        }
    }
    close_to(what, "y", vy, ry, ny, max_abs(ry, ny));
    if (!(fabs(loss - ref_loss) <= 1e-4 * fabs(ref_loss) + 1e-5))
        fail_msg("%s: loss %.8g, reference %.8g", what, loss, ref_loss);
    close_to(what, "d W", gw, rgw, nw, max_abs(rgw, nw));
    close_to(what, "d b", gb, rgb, n, max_abs(rgb, n));
    if (!conv)
        close_to(what, "d x", ga, rga, na, max_abs(rga, na));
    free(va); free(vw); free(vb); free(vy); free(gw); free(gb); free(ga); free(lab);
    free(ry); free(dy); free(rgw); free(rgb); free(rga);
    be->release(state);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

#define SMALL_TEST(fn, rows, k, n, conv)                                                     \
    static void fn(void **state)                                                           \
    {                                                                                      \
        (void)state;                                                                       \
        small_check(#fn, rows, k, n, conv);                                                \
    }
/* squeeze-excitation fcs: more outputs than inputs (under 8 rows: the forward reads w as it
 * is; from 8: over w transposed) and fewer, channels not filling a block */
SMALL_TEST(small_se_expand, 3, 6, 37, true)
SMALL_TEST(small_se_expand_rows9, 9, 6, 37, true)
SMALL_TEST(small_se_squeeze, 3, 40, 5, true)
SMALL_TEST(small_se_batch1, 1, 24, 24, true)
/* linear layers: wide, narrow, blocks of 4 x 16 with tails on every side (w transposed in
 * tiles of 16 with tails of its own), and two over the sizes small.c takes (oneDNN's path:
 * 128 x 128 x 80 multiply-adds > 2^20; a 1 x 300 x 300 product of 90K weights > 2^16) */
SMALL_TEST(small_linear_wide, 3, 9, 30, false)
SMALL_TEST(small_linear_narrow, 4, 30, 4, false)
SMALL_TEST(small_linear_tails, 37, 33, 50, false)
SMALL_TEST(small_linear_onednn, 128, 128, 80, false)
SMALL_TEST(small_linear_weights_onednn, 1, 300, 300, false)

/* small.c's kernels for each instruction set this CPU runs (the step uses only the widest),
 * against a double reference, on sizes that leave tails everywhere: rows not a multiple of
 * any block's, columns not of 16, k not of any vector's width, and strided operands (A read by
 * columns, as the weight gradient reads dy). Every element within 1e-5 of the sum of its terms'
 * magnitudes (float rounding over at most 75 terms). */
static void small_kern_check(const struct fm_cpu_small_kern *kn, const char *isa)
{
    static const int64_t sizes[][3] = {{1, 1, 1}, {3, 37, 6}, {9, 16, 75}, {5, 33, 17},
                                       {16, 110, 44}, {7, 8, 9}};
    uint64_t rng = 99;
    for (size_t c = 0; c < sizeof(sizes) / sizeof(sizes[0]); c++) {
        int64_t m = sizes[c][0], p = sizes[c][1], q = sizes[c][2];
        int64_t most = m > p ? m : p;
        most = most > q ? most : q;
        float *a = malloc(sizeof(float) * (size_t)(m * q * 2));
        float *b = malloc(sizeof(float) * (size_t)(q * p));
        float *bias = malloc(sizeof(float) * (size_t)p);
        float *out = malloc(sizeof(float) * (size_t)(m * p));
        float *tail = malloc(sizeof(float) * 16 * (size_t)(2 * most + 1));
        assert_non_null(a);
        assert_non_null(b);
        assert_non_null(bias);
        assert_non_null(out);
        assert_non_null(tail);
        for (int64_t i = 0; i < m * q * 2; i++)
            a[i] = (float)rng_normal(&rng);
        for (int64_t i = 0; i < q * p; i++)
            b[i] = (float)rng_normal(&rng);
        for (int64_t i = 0; i < p; i++)
            bias[i] = (float)rng_normal(&rng);
        /* gemm: A (m, q) with row stride 2q (rows apart) or read by columns (ars 1, acs 2m) */
        for (int by_cols = 0; by_cols < 2; by_cols++) {
            int64_t ars = by_cols ? 1 : 2 * q, acs = by_cols ? 2 * m : 1;
            kn->gemm(m, p, q, a, ars, acs, b, p, out, p, bias, tail);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < p; j++) {
                    double ref = bias[j], mag = fabs(bias[j]);
                    for (int64_t t = 0; t < q; t++) {
                        double term = (double)a[i * ars + t * acs] * b[t * p + j];
                        ref += term, mag += fabs(term);
                    }
                    if (fabs(out[i * p + j] - ref) > 1e-5 * mag + 1e-30)
                        fail_msg("%s gemm (%lld, %lld, %lld)%s: C[%lld][%lld] = %.8g, want %.8g",
                                 isa, (long long)m, (long long)p, (long long)q,
                                 by_cols ? " reading A by columns" : "", (long long)i,
                                 (long long)j, out[i * p + j], ref);
                }
        }
        /* gemm_nt: y (m, p) = x (m, q) w^T + bias, w = b read as (p, q), x's rows 2q apart */
        kn->gemm_nt(m, p, q, a, 2 * q, b, out, p, bias);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < p; j++) {
                double ref = bias[j], mag = fabs(bias[j]);
                for (int64_t t = 0; t < q; t++) {
                    double term = (double)a[i * 2 * q + t] * b[j * q + t];
                    ref += term, mag += fabs(term);
                }
                if (fabs(out[i * p + j] - ref) > 1e-5 * mag + 1e-30)
                    fail_msg("%s gemm_nt (%lld, %lld, %lld): y[%lld][%lld] = %.8g, want %.8g", isa,
                             (long long)m, (long long)p, (long long)q, (long long)i,
                             (long long)j, out[i * p + j], ref);
            }
        free(a);
        free(b);
        free(bias);
        free(out);
        free(tail);
    }
}

static void small_kernels_every_isa(void **state)
{
    (void)state;
#ifndef FM_HAVE_DNNL
    backend_or_skip();
#else
    static const struct {
        enum fm_cpu_isa isa;
        const char *name;
    } sets[] = {{FM_CPU_ISA_BASE, "baseline"},
                {FM_CPU_ISA_AVX2, "AVX2"},
                {FM_CPU_ISA_AVX512, "AVX-512"}};
    int ran = 0;
    for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
        const struct fm_cpu_small_kern *kn = fm_cpu_small_kern(sets[i].isa);
        if (!kn) {
            printf("small.c's %s kernels: not on this CPU, not checked\n", sets[i].name);
            continue;
        }
        small_kern_check(kn, sets[i].name);
        ran++;
    }
    assert_true(ran >= 1);   /* the baseline runs everywhere */
#endif
}

#ifdef FM_HAVE_DNNL
/* The kind of the oneDNN primitive of item it: its descriptor in *pd and its implementation's name
 * in *impl. */
static dnnl_primitive_kind_t item_primitive(const struct fm_cpu_item *it,
                                            const_dnnl_primitive_desc_t *pd, const char **impl)
{
    dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
    assert_int_equal(dnnl_primitive_get_primitive_desc(it->prim, pd), dnnl_success);
    assert_int_equal(dnnl_primitive_desc_query(*pd, dnnl_query_primitive_kind, 0, &kind),
                     dnnl_success);
    assert_int_equal(dnnl_primitive_desc_query(*pd, dnnl_query_impl_info_str, 0, impl),
                     dnnl_success);
    return kind;
}
#endif

/* ---- what a step runs ----
 * A Linear layer's weight and its gradient change every step, so a layout mismatch between
 * the products costs a reorder every step. Left to oneDNN's choice, a small batch's products
 * disagree: AlexNet's 4096 x 9216 fc at batch 1 transposed its weight for the input gradient
 * (46 ms against 4.3 ms for the product), and at batch 16 its weight gradient for the update
 * (40 ms against 12.7). For rows x k -> n (too large for small.c), the plan's items of the
 * layer must hold one inner product a phase and no reorder. */
static void linear_no_weight_reorder(const char *what, int64_t rows, int64_t k, int64_t n)
{
#ifndef FM_HAVE_DNNL
    (void)what, (void)rows, (void)k, (void)n;
    backend_or_skip();
#else
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, what, &g));
    fm_tid x = add_param(ctx, g, "x", SHAPE(rows, k));
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    fm_tid y = fm_nn_linear(&nn, "fc", x, n, true);
    assert_int_equal(nn.st, FM_OK);
    add_loss(&nn, y);
    struct fm_cpu *s = prepare_frozen(be, ctx, g, what);
    int products[FM_PHASE_COUNT] = {0}, reorders[FM_PHASE_COUNT] = {0};
    for (size_t i = 0; i < s->n_items; i++) {
        const struct fm_cpu_item *it = &s->items[i];
        if (!it->prim || strcmp(fm_graph_node(g, it->node)->name, "fc") != 0)
            continue;
        const_dnnl_primitive_desc_t pd = NULL;
        const char *impl = NULL;
        dnnl_primitive_kind_t kind = item_primitive(it, &pd, &impl);
        products[it->phase] += kind == dnnl_inner_product;
        reorders[it->phase] += kind == dnnl_reorder;
    }
    const enum fm_phase phases[3] = {FM_PHASE_FWD, FM_PHASE_BWD_DATA, FM_PHASE_BWD_WEIGHT};
    for (int i = 0; i < 3; i++)
        if (products[phases[i]] != 1 || reorders[phases[i]] != 0)
            fail_msg("%s: fc's phase %d: %d inner products, %d reorders (want 1 and 0)", what,
                     (int)phases[i], products[phases[i]], reorders[phases[i]]);
    be->release(s);
    fm_graph_free(g);
    fm_ctx_free(ctx);
#endif
}

/* batch 1: the backward-data product (small_linear_weights_onednn's shape) */
static void linear_b1_bwd_data_no_reorder(void **state)
{
    (void)state;
    linear_no_weight_reorder("fc_b1", 1, 300, 400);
}

/* batch 16: the weight gradient (AlexNet's 4096 x 4096 fc) */
static void linear_b16_no_weight_reorder(void **state)
{
    (void)state;
    linear_no_weight_reorder("fc_b16", 16, 4096, 4096);
}

/* A MaxPool on a plain input of 16 channels (AlexNet's first, after a convolution oneDNN
 * runs in plain layouts): oneDNN's plain-layout code ("simple_nchw") took 30 ms forward at
 * batch 16 where its JIT kernel over a channel-blocked copy takes 5; the plan's pooling
 * primitives (forward and backward) must be neither simple, reference nor gemm code. */
static void maxpool_plain_input_jit(void **state)
{
    (void)state;
#ifndef FM_HAVE_DNNL
    backend_or_skip();
#else
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "pool_plain", &g));
    fm_tid x = add_param(ctx, g, "x", SHAPE(4, 16, 27, 27));
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    fm_tid y = fm_nn_maxpool(&nn, "pool", x, 3, 2, 0, false);
    assert_int_equal(nn.st, FM_OK);
    add_loss(&nn, y);
    struct fm_cpu *s = prepare_frozen(be, ctx, g, "pool_plain");
    int pools = 0;
    for (size_t i = 0; i < s->n_items; i++) {
        const struct fm_cpu_item *it = &s->items[i];
        if (!it->prim || strcmp(fm_graph_node(g, it->node)->name, "pool") != 0)
            continue;
        const_dnnl_primitive_desc_t pd = NULL;
        const char *impl = NULL;
        if (item_primitive(it, &pd, &impl) != dnnl_pooling_v2)
            continue;
        if (fm_cpu_pd_is_slow(pd) || strncmp(impl, "simple", 6) == 0)
            fail_msg("pool's phase %d runs oneDNN's %s", (int)it->phase, impl);
        pools++;
    }
    assert_int_equal(pools, 2);   /* forward and backward */
    be->release(s);
    fm_graph_free(g);
    fm_ctx_free(ctx);
#endif
}

/* ResNeXt-50 32x4d's first-stage grouped convolution (32 groups of 4 channels, 3x3, 56x56;
 * here 16 x 16 at batch 2): on AVX2 oneDNN 2.6 ran its three phases through im2col and gemm in
 * plain layouts at 3-5 GFLOP/s (35-39 ms a layer at batch 4) and the BatchNorm after it on
 * plain layouts too. No phase of the layer may run a convolution primitive that is
 * reference or gemm code. */
static void grouped4_conv_not_gemm(void **state)
{
    (void)state;
#ifndef FM_HAVE_DNNL
    backend_or_skip();
#else
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "grouped4", &g));
    fm_tid x = add_param(ctx, g, "x", SHAPE(2, 128, 16, 16));
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    fm_tid c = fm_nn_conv(&nn, "conv", x, 128, 1, 1, 0, 1, false);
    fm_tid y = fm_nn_conv(&nn, "grouped", c, 128, 3, 1, 1, 32, false);
    assert_int_equal(nn.st, FM_OK);
    add_loss(&nn, y);
    struct fm_cpu *s = prepare_frozen(be, ctx, g, "grouped4");
    int phases = 0;
    for (size_t i = 0; i < s->n_items; i++) {
        const struct fm_cpu_item *it = &s->items[i];
        if (strcmp(fm_graph_node(g, it->node)->name, "grouped") != 0)
            continue;
        if (it->fn) {   /* flopmeter's own kernel for a phase */
            phases++;
            continue;
        }
        const_dnnl_primitive_desc_t pd = NULL;
        const char *impl = NULL;
        if (item_primitive(it, &pd, &impl) != dnnl_convolution)
            continue;
        if (fm_cpu_pd_is_slow(pd))
            fail_msg("grouped's phase %d runs oneDNN's %s", (int)it->phase, impl);
        phases++;
    }
    assert_int_equal(phases, 3);   /* forward, input and weight gradients */
    be->release(s);
    fm_graph_free(g);
    fm_ctx_free(ctx);
#endif
}

/* ---- the cross-entropy loss over many classes against a plain reference ----
 * The logits are the parameter itself: a language model's loss, rows of tokens over its
 * vocabulary, on the step's threads from 2^15 logits and summed in blocks of 1,024 classes.
 * Normal logits times 4, and in every third row one at -200 (below the exponential's clamp)
 * and one at +30. After one step: the loss against the double reference, and every element of
 * d logits within 2e-5 of its own size (the float log-sum-exp's rounding). */
static void ce_check(const char *what, int64_t rows, int64_t classes)
{
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, what, &g));
    fm_tid x = add_param(ctx, g, "x", SHAPE(rows, classes));
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    add_loss(&nn, x);
    void *state = prepare_frozen(be, ctx, g, what);
    uint64_t rng = 777, n = (uint64_t)(rows * classes);
    float *v = malloc(sizeof(float) * n), *gx = malloc(sizeof(float) * n);
    float *lab = malloc(sizeof(float) * (size_t)rows);
    double *z = malloc(sizeof(double) * n), *dz = malloc(sizeof(double) * n);
    for (uint64_t i = 0; i < n; i++)
        v[i] = (float)(4.0 * rng_normal(&rng));
    for (int64_t r = 0; r < rows; r += 3) {
        v[r * classes + (r * 7919) % classes] = -200.0f;
        v[r * classes + (r * 104729 + 1) % classes] = 30.0f;
    }
    FM_ASSERT_OK(ctx, be->write(state, x, v, n));
    double loss = step_loss(be, state);
    FM_ASSERT_OK(ctx, be->read(state, x, true, gx, n));
    FM_ASSERT_OK(ctx, be->read(state, named(g, "labels"), false, lab, (uint64_t)rows));
    for (uint64_t i = 0; i < n; i++)
        z[i] = v[i];
    double ref = ref_cross_entropy(z, (uint64_t)rows, (uint64_t)classes, lab, dz);
    if (!(fabs(loss - ref) <= 1e-6 * fabs(ref)))
        fail_msg("%s: loss %.9g, reference %.9g", what, loss, ref);
    for (uint64_t i = 0; i < n; i++) {
        if (!(fabs(gx[i] - dz[i]) <= 2e-5 * fabs(dz[i]) + 1e-30))
            fail_msg("%s: d logits[%llu] = %.8g, reference %.8g", what,
                     (unsigned long long)i, gx[i], dz[i]);
    }
    free(v); free(gx); free(lab); free(z); free(dz);
    be->release(state);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* GPT-2's vocabulary over 12 tokens (threads, 50 blocks and a tail of 81); 3 rows of 2,000
 * classes (one thread, a block and a tail) */
static void ce_gpt2_vocab(void **state)
{
    (void)state;
    ce_check("ce_gpt2_vocab", 12, 50257);
}
static void ce_small_rows(void **state)
{
    (void)state;
    ce_check("ce_small_rows", 3, 2000);
}

/* Softmax or LogSoftmax along the last axis of x (rows, len), then add_loss: the loss and the
 * gradient of x against a double reference (y by the definition, dy by ref_cross_entropy over
 * y, dx = y (dy - sum dy y), or dy - exp(y) sum dy). Entries -60 and +25 in every third row so
 * a row is dominated by one class and its exponentials reach far below 1. */
static void sm_check(const char *what, int64_t rows, int64_t len, bool log_form)
{
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, what, &g));
    fm_tid x = add_param(ctx, g, "x", SHAPE(rows, len));
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.axis = -1;
    fm_tid y = add_op(&nn, log_form ? FM_OP_LOG_SOFTMAX : FM_OP_SOFTMAX, "sm", &a, &x, 1);
    add_loss(&nn, y);
    void *state = prepare_frozen(be, ctx, g, what);
    uint64_t rng = 4242, n = (uint64_t)(rows * len);
    float *v = malloc(sizeof(float) * n), *gx = malloc(sizeof(float) * n);
    float *lab = malloc(sizeof(float) * (size_t)rows);
    double *ry = malloc(sizeof(double) * n), *dy = malloc(sizeof(double) * n);
    for (uint64_t i = 0; i < n; i++)
        v[i] = (float)(3.0 * rng_normal(&rng));
    for (int64_t r = 0; r < rows; r += 3) {
        v[r * len + (r * 7919) % len] = -60.0f;
        v[r * len + (r * 104729 + 1) % len] = 25.0f;
    }
    FM_ASSERT_OK(ctx, be->write(state, x, v, n));
    double loss = step_loss(be, state);
    FM_ASSERT_OK(ctx, be->read(state, x, true, gx, n));
    FM_ASSERT_OK(ctx, be->read(state, named(g, "labels"), false, lab, (uint64_t)rows));
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = v + r * len;
        double m = xr[0], sum = 0.0;
        for (int64_t k = 1; k < len; k++)
            m = fmax(m, xr[k]);
        for (int64_t k = 0; k < len; k++)
            sum += exp(xr[k] - m);
        for (int64_t k = 0; k < len; k++)
            ry[r * len + k] = log_form ? xr[k] - m - log(sum) : exp(xr[k] - m) / sum;
    }
    double ref = ref_cross_entropy(ry, (uint64_t)rows, (uint64_t)len, lab, dy);
    if (!(fabs(loss - ref) <= 1e-5 * fabs(ref)))
        fail_msg("%s: loss %.9g, reference %.9g", what, loss, ref);
    for (int64_t r = 0; r < rows; r++) {
        const double *yr = ry + r * len, *dr = dy + r * len;
        double sum = 0.0, big = 0.0;
        for (int64_t k = 0; k < len; k++)
            sum += log_form ? dr[k] : dr[k] * yr[k];
        /* float32 on the backend's side: dx is a difference of terms of size up to `big`
         * (where one class takes the row, y (dy - sum) cancels to 1e-12 from terms of 1e-4),
         * so the error is measured against the terms, not the difference */
        for (int64_t k = 0; k < len; k++) {
            double t = log_form ? fabs(dr[k]) + exp(yr[k]) * fabs(sum)
                                : fabs(yr[k]) * (fabs(dr[k]) + fabs(sum));
            big = fmax(big, t);
        }
        for (int64_t k = 0; k < len; k++) {
            double dx = log_form ? dr[k] - exp(yr[k]) * sum : yr[k] * (dr[k] - sum);
            double got = gx[r * len + k];
            if (!(fabs(got - dx) <= 1e-5 * big + 1e-4 * fabs(dx)))
                fail_msg("%s: dx[%lld, %lld] = %.8g, reference %.8g (row's largest term %.3g)",
                         what, (long long)r, (long long)k, got, dx, big);
        }
    }
    free(v); free(gx); free(lab); free(ry); free(dy);
    be->release(state);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* GPT-2's attention scores at 1x128 (12 heads x 128 queries of 128 keys: the rows on the
 * threads); LogSoftmax over 3 rows of 3,000 (one thread, two sum blocks and a tail) */
static void softmax_gpt2_scores(void **state)
{
    (void)state;
    sm_check("softmax_gpt2_scores", 1536, 128, false);
}
static void log_softmax_long_rows(void **state)
{
    (void)state;
    sm_check("log_softmax_long_rows", 3, 3000, true);
}
static void softmax_long_rows(void **state)
{
    (void)state;
    sm_check("softmax_long_rows", 5, 2500, false);
}

/* Tanh and GELU's tanh form (the backend's own loops) over (rows, 512): every output and the
 * gradient of x against double references, x drawn 4 N(0, 1) with special values written over
 * the first row (0, tiny and small arguments where 1 - exp(-2|x|) would lose its digits, the
 * reduction's boundary near 0.17, the clamp at 9 and beyond, large negatives where GELU's
 * 1 + tanh cancels). dy is add_loss's, so the gradient check is dx = dy f'(x) on every
 * element; tolerances: y within 1e-6 relative (plus 1e-35 absolute: GELU's tail, where exp is clamped at -87, far below
 * float's normal range), dx within 2e-6 relative of |dy f'| plus 1e-6 of the row's largest;
 * for GELU both relative terms times 1 + 2|u| (u rounded to float enters exp(2u)). */
static double ref_gelu_tanh(double x, double *d)
{
    const double c = sqrt(2.0 / M_PI), a = 0.044715;
    /* 1 + tanh(u) = 2 sigma(2u) and 1 - tanh(u)^2 = 4 sigma(2u) sigma(-2u): in double too,
     * 1 + tanh(u) rounds to 0 from u = -19 on, where GELU is still 1e-16 x */
    double u = c * (x + a * x * x * x), sp = 1.0 / (1.0 + exp(-2.0 * u));
    double sn = 1.0 / (1.0 + exp(2.0 * u));
    *d = sp + 0.5 * x * 4.0 * sp * sn * c * (1.0 + 3.0 * a * x * x);
    return x * sp;
}

static void own_act_check(const char *what, bool gelu, int64_t rows)
{
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    const int64_t cols = 512;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, what, &g));
    fm_tid x = add_param(ctx, g, "x", SHAPE(rows, cols));
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    struct fm_attrs a;
    fm_attrs_init(&a);
    if (gelu)
        a.flags = FM_ATTR_GELU_TANH;
    fm_tid y = add_op(&nn, gelu ? FM_OP_GELU : FM_OP_TANH, "act", &a, &x, 1);
    add_loss(&nn, y);
    void *state = prepare_frozen(be, ctx, g, what);
    static const float special[] = {0.0f, 1e-30f, 1e-6f, 1e-3f, 0.01f, 0.1f, 0.17f, 0.1733f,
                                    0.174f, 0.3466f, 0.5f, 1.0f, 2.5f, 3.0f, 6.0f, 8.99f, 9.0f,
                                    9.5f, 20.0f, 88.0f, 1e3f, 1e20f};
    const int ns = (int)(sizeof(special) / sizeof(special[0]));
    uint64_t rng = 99, n = (uint64_t)(rows * cols);
    float *v = malloc(sizeof(float) * n), *gx = malloc(sizeof(float) * n);
    float *gy = malloc(sizeof(float) * n), *lab = malloc(sizeof(float) * (size_t)rows);
    double *ry = malloc(sizeof(double) * n), *dy = malloc(sizeof(double) * n);
    double *rd = malloc(sizeof(double) * n), *rc = malloc(sizeof(double) * n);
    for (uint64_t i = 0; i < n; i++)
        v[i] = (float)(4.0 * rng_normal(&rng));
    for (int i = 0; i < ns; i++) {
        v[2 * i] = special[i];
        v[2 * i + 1] = -special[i];
    }
    FM_ASSERT_OK(ctx, be->write(state, x, v, n));
    (void)step_loss(be, state);
    FM_ASSERT_OK(ctx, be->read(state, y, false, gy, n));
    FM_ASSERT_OK(ctx, be->read(state, x, true, gx, n));
    FM_ASSERT_OK(ctx, be->read(state, named(g, "labels"), false, lab, (uint64_t)rows));
    for (uint64_t i = 0; i < n; i++) {
        double t = tanh((double)v[i]), e = exp(-2.0 * fabs((double)v[i]));
        ry[i] = gelu ? ref_gelu_tanh(v[i], &rd[i]) : t;
        if (!gelu)
            rd[i] = 4.0 * e / ((1.0 + e) * (1.0 + e));   /* 1 - t^2 without the cancellation */
        /* GELU: u is rounded to float, and exp(2u) carries its rounding times 2|u| */
        double xd = v[i];
        double cond = gelu ? 1.0 + 2.0 * 0.7978845608 * fabs(xd + 0.044715 * xd * xd * xd) : 1.0;
        rc[i] = cond;
        if (!(fabs(gy[i] - ry[i]) <= 1e-6 * cond * fabs(ry[i]) + 1e-35))
            fail_msg("%s: y(%.9g) = %.9g, reference %.9g", what, v[i], gy[i], ry[i]);
    }
    (void)ref_cross_entropy(ry, (uint64_t)rows, (uint64_t)cols, lab, dy);
    for (int64_t r = 0; r < rows; r++) {
        double big = 0.0;
        for (int64_t k = 0; k < cols; k++)
            big = fmax(big, fabs(dy[r * cols + k] * rd[r * cols + k]));
        for (int64_t k = 0; k < cols; k++) {
            uint64_t i = (uint64_t)(r * cols + k);
            double ref = dy[i] * rd[i];
            if (!(fabs(gx[i] - ref) <= 2e-6 * rc[i] * fabs(ref) + 1e-6 * big))
                fail_msg("%s: dx at x = %.9g: %.9g, reference %.9g", what, v[i], gx[i], ref);
        }
    }
    free(v); free(gx); free(gy); free(lab); free(ry); free(dy); free(rd); free(rc);
    be->release(state);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* 2 rows (one thread), 96 rows (49,152 elements: the threads, 12 chunks) */
static void tanh_values(void **state)
{
    (void)state;
    own_act_check("tanh_values", false, 2);
    own_act_check("tanh_threads", false, 96);
}
static void gelu_tanh_values(void **state)
{
    (void)state;
    own_act_check("gelu_tanh_values", true, 2);
    own_act_check("gelu_tanh_threads", true, 96);
}

#define BCAST_TEST(fn, op, conv, b_first, as, bs)                                            \
    static void fn(void **state)                                                           \
    {                                                                                      \
        (void)state;                                                                       \
        bcast_check(#fn, op, as, bs, conv, b_first, 0.0);                                  \
    }

/* squeeze-excitation at batch 1: channels 8, 24, 56, 232 (none a multiple of 16), the full
 * operand plain or a convolution's blocked output; the scale first or second */
BCAST_TEST(bcast_se_c8_blocked, FM_OP_MUL, true, false, SHAPE(1, 8, 5, 5), SHAPE(1, 8, 1, 1))
BCAST_TEST(bcast_se_c24_blocked, FM_OP_MUL, true, true, SHAPE(1, 24, 5, 5), SHAPE(1, 24, 1, 1))
BCAST_TEST(bcast_se_c56_blocked, FM_OP_MUL, true, false, SHAPE(1, 56, 4, 3),
           SHAPE(1, 56, 1, 1))
BCAST_TEST(bcast_se_c232_blocked, FM_OP_MUL, true, false, SHAPE(1, 232, 3, 3),
           SHAPE(1, 232, 1, 1))
BCAST_TEST(bcast_se_c24_plain, FM_OP_MUL, false, false, SHAPE(1, 24, 5, 5), SHAPE(1, 24, 1, 1))
BCAST_TEST(bcast_se_c56_batch3_blocked, FM_OP_MUL, true, false, SHAPE(3, 56, 3, 3),
           SHAPE(3, 56, 1, 1))
BCAST_TEST(bcast_per_sample_c24_blocked, FM_OP_MUL, true, false, SHAPE(1, 24, 4, 4),
           SHAPE(1, 1, 1, 1))
/* ConvNeXt's layer scale, one (C, 1, 1) scale for every sample, over 2x2 planes (its last
 * stage's at 64x64): plain (after its Transpose) and a convolution's blocked output (20
 * channels: the last block padded), the scale first or second; and a squeeze-excitation's
 * (N, C, 1, 1) at batch 4 over 2x2 planes, blocked (RegNetY's last stage). The scale's
 * gradient is summed in one pass (binary.c's scale_grad) */
BCAST_TEST(bcast_layer_scale_plain, FM_OP_MUL, false, false, SHAPE(3, 20, 2, 2),
           SHAPE(20, 1, 1))
BCAST_TEST(bcast_layer_scale_blocked, FM_OP_MUL, true, true, SHAPE(3, 20, 2, 2),
           SHAPE(1, 20, 1, 1))
BCAST_TEST(bcast_layer_scale_wide_plane, FM_OP_MUL, false, false, SHAPE(2, 5, 7, 6),
           SHAPE(5, 1, 1))
BCAST_TEST(bcast_se_batch4_blocked, FM_OP_MUL, true, false, SHAPE(4, 20, 2, 2),
           SHAPE(4, 20, 1, 1))
/* a per-channel bias or layer scale at batch 1 on a blocked output */
BCAST_TEST(bcast_add_channel_c24_blocked, FM_OP_ADD, true, false, SHAPE(1, 24, 4, 4),
           SHAPE(24, 1, 1))
/* a decomposed LayerNorm over the last dim: (1, H, W, C) against (1, H, W, 1) */
BCAST_TEST(bcast_layernorm_sub, FM_OP_SUB, false, false, SHAPE(1, 4, 5, 24), SHAPE(1, 4, 5, 1))
BCAST_TEST(bcast_layernorm_div, FM_OP_DIV, false, false, SHAPE(1, 4, 5, 24), SHAPE(1, 4, 5, 1))
BCAST_TEST(bcast_layernorm_div_c7, FM_OP_DIV, false, false, SHAPE(2, 3, 7), SHAPE(2, 3, 1))
/* last-dim parameters (LayerNorm's weight and bias), mixed broadcasts, a broadcast first
 * operand of Sub and Div */
BCAST_TEST(bcast_lastdim_mul, FM_OP_MUL, false, false, SHAPE(1, 6, 24), SHAPE(24))
BCAST_TEST(bcast_lastdim_sub, FM_OP_SUB, false, false, SHAPE(1, 6, 24), SHAPE(24))
BCAST_TEST(bcast_mixed_div, FM_OP_DIV, false, false, SHAPE(2, 3, 5, 7), SHAPE(2, 1, 5, 1))
/* 600 rows of 7 over three outer dims: more rows than the walk's blocks, so a block carries
 * its odometer across every outer dim */
BCAST_TEST(bcast_mixed_div_rows, FM_OP_DIV, false, false, SHAPE(3, 5, 40, 7),
           SHAPE(3, 1, 40, 1))
BCAST_TEST(bcast_channel_sub_first, FM_OP_SUB, false, true, SHAPE(1, 24, 3, 3),
           SHAPE(1, 24, 1, 1))
/* Swin's shifted-window mask: (1, 4, 3, 5, 5) + (1, 4, 1, 5, 5), the middle dim broadcast */
BCAST_TEST(bcast_window_mask_add, FM_OP_ADD, false, false, SHAPE(1, 4, 3, 5, 5),
           SHAPE(1, 4, 1, 5, 5))
/* x^2 (a decomposed LayerNorm's variance) and x^3 (GELU's tanh form), which skip powf; and
 * x^2.5 through it */
#define POW_TEST(fn, e)                                                                    \
    static void fn(void **state)                                                           \
    {                                                                                      \
        (void)state;                                                                       \
        bcast_check(#fn, FM_OP_POW, SHAPE(2, 5, 7), SHAPE(1), false, false, e);            \
    }
POW_TEST(pow_square, 2.0)
POW_TEST(pow_cube, 3.0)
POW_TEST(pow_general, 2.5)
BCAST_TEST(bcast_channel_div_plain, FM_OP_DIV, false, false, SHAPE(1, 24, 3, 3),
           SHAPE(1, 24, 1, 1))

/* LayerNorm's forward against a double reference, (rows, d) normalized per row with its scale
 * and shift: small (the GroupNorm loops) and above 2^14 elements (oneDNN's). The gradients are
 * the finite-difference tests' (fd_layernorm_*). */
static void ln_forward_check(const char *what, int64_t rows, int64_t d)
{
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, what, &g));
    fm_tid x = add_param(ctx, g, "x", SHAPE(rows, d));
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    fm_tid y = layernorm(&nn, x, -1, SHAPE(d));
    add_loss(&nn, y);
    void *state = prepare_frozen(be, ctx, g, what);
    const fm_tid params[3] = {x, named(g, "ln.weight"), named(g, "ln.bias")};
    float *v[3];
    uint64_t rng = 4242;
    for (int k = 0; k < 3; k++) {
        uint64_t n = numel(g, params[k]);
        v[k] = malloc(sizeof(float) * n);
        for (uint64_t i = 0; i < n; i++)   /* rows with a mean away from 0 */
            v[k][i] = (float)(k == 0 ? 3.0 + 2.0 * rng_normal(&rng) : rng_normal(&rng));
        FM_ASSERT_OK(ctx, be->write(state, params[k], v[k], n));
    }
    (void)step_loss(be, state);
    uint64_t ny = (uint64_t)(rows * d);
    float *vy = malloc(sizeof(float) * ny);
    double *ry = malloc(sizeof(double) * ny);
    FM_ASSERT_OK(ctx, be->read(state, y, false, vy, ny));
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = v[0] + r * d;
        double mean = 0.0, var = 0.0;
        for (int64_t j = 0; j < d; j++)
            mean += xr[j];
        mean /= (double)d;
        for (int64_t j = 0; j < d; j++)
            var += (xr[j] - mean) * (xr[j] - mean);
        double rstd = 1.0 / sqrt(var / (double)d + 1e-5);
        for (int64_t j = 0; j < d; j++)
            ry[r * d + j] = (xr[j] - mean) * rstd * v[1][j] + v[2][j];
    }
    close_to(what, "y", vy, ry, ny, max_abs(ry, ny));
    for (int k = 0; k < 3; k++)
        free(v[k]);
    free(vy);
    free(ry);
    be->release(state);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* Swin-T's last stage at batch 1: 4 rows of 768 */
static void layernorm_small_forward(void **state)
{
    (void)state;
    ln_forward_check("ln_small", 4, 768);
}

static void layernorm_large_forward(void **state)
{
    (void)state;
    ln_forward_check("ln_large", 64, 384);
}

/* ---- goldens from PyTorch ---- */

struct golden {
    char kind[16];
    char name[96];
    size_t n;
    float *v;
};

static size_t load_goldens(const char *path, struct golden *out, size_t max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s (regenerate with tools/make_cpu_goldens.py)", path);
    size_t k = 0;
    char kind[16], name[96];
    unsigned long n;
    int c;
    while ((c = fgetc(f)) != EOF) {
        if (c == '#') {
            while ((c = fgetc(f)) != EOF && c != '\n')
                ;
            continue;
        }
        ungetc(c, f);
        if (fscanf(f, "%15s %95s %lu", kind, name, &n) != 3)
            break;
        assert_true(k < max);
        struct golden *gd = &out[k++];
        snprintf(gd->kind, sizeof(gd->kind), "%s", kind);
        snprintf(gd->name, sizeof(gd->name), "%s", name);
        gd->n = n;
        gd->v = malloc(sizeof(float) * (n ? n : 1));
        for (unsigned long i = 0; i < n; i++)
            assert_int_equal(fscanf(f, "%f", &gd->v[i]), 1);
    }
    fclose(f);
    return k;
}

static const struct golden *find_golden(const struct golden *gs, size_t n, const char *kind,
                                        const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(gs[i].kind, kind) == 0 && strcmp(gs[i].name, name) == 0)
            return &gs[i];
    }
    fail_msg("no golden %s %s", kind, name);
    return NULL;
}

/* The CNN of tools/make_cpu_goldens.py, built with the same names. */
static struct fm_graph *small_cnn(struct fm_ctx *ctx)
{
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "small_cnn", &g));
    struct fm_shape in = SHAPE(2, 3, 16, 16);
    fm_tid x;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "input", FM_ROLE_INPUT, FM_DTYPE_FP32, &in, &x));
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    x = fm_nn_conv(&nn, "conv1", x, 4, 3, 1, 1, 1, true);
    x = fm_nn_act(&nn, "relu", FM_OP_RELU, fm_nn_bn(&nn, "bn1", x, 1e-5));
    x = fm_nn_maxpool(&nn, "maxpool", x, 3, 2, 1, true);
    x = fm_nn_conv(&nn, "conv2", x, 8, 3, 2, 1, 2, false);
    x = fm_nn_act(&nn, "relu2", FM_OP_RELU, fm_nn_bn(&nn, "bn2", x, 1e-5));
    x = fm_nn_adaptive_avgpool(&nn, "avgpool", x, 2, 2);
    x = fm_nn_linear(&nn, "fc", fm_nn_flatten(&nn, "flatten", x), 10, true);
    assert_int_equal(nn.st, FM_OK);
    add_loss(&nn, x);
    return g;
}

static fm_tid node_output(const struct fm_graph *g, const char *node)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        if (strcmp(n->name, node) == 0)
            return n->out[0];
    }
    fail_msg("no node %s", node);
    return FM_NONE;
}

/* Largest |a - b| - (atol + rtol |b|) over the elements: <= 0 passes. Prints the largest
 * absolute difference, so the log shows how much of the tolerance is used. */
static double excess(const char *what, const float *a, const float *b, size_t n, double atol,
                     double rtol, size_t *worst)
{
    double e = -1e300, dmax = 0.0;
    for (size_t i = 0; i < n; i++) {
        double diff = fabs((double)a[i] - b[i]);
        double d = diff - (atol + rtol * fabs((double)b[i]));
        dmax = diff > dmax ? diff : dmax;
        if (d > e) {
            e = d;
            *worst = i;
        }
    }
    printf("  %-28s max |diff| %.3g\n", what, dmax);
    return e;
}

/* Tolerances (float32 on both sides, different summation orders, PyTorch's float log-softmax
 * against flopmeter's double one): logits and loss atol 1e-5 + rtol 1e-4; gradients atol 1e-6
 * + rtol 1e-3 (BatchNorm's backward subtracts nearly equal sums); the SGD step's change
 * w1 - w0 (= -lr v) atol 1e-8 + rtol 1e-3, which checks lr and momentum handling far below
 * the size of the weights themselves; running statistics atol 1e-6 + rtol 1e-4. */
static void golden_small_cnn(void **unused)
{
    (void)unused;
    const struct fm_backend *be = backend_or_skip();
    struct golden gs[64];
    size_t ng = load_goldens(FM_TEST_DATA "/goldens/cpu_small_cnn.txt", gs, 64);
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = small_cnn(ctx);
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.seed = 1;
    o.lr = 0.01;
    o.momentum = 0.9;
    void *state = NULL;
    FM_ASSERT_OK(ctx, be->prepare(ctx, g, &o, &state));

    /* 1. the starting values, bit for bit: the generator is shared, not re-fitted */
    int n_init = 0;
    float *before[64] = {NULL};
    for (size_t i = 0; i < ng; i++) {
        if (strcmp(gs[i].kind, "init") != 0)
            continue;
        fm_tid t = fm_graph_find_tensor(g, gs[i].name);
        assert_int_not_equal(t, FM_NONE);
        assert_int_equal(numel(g, t), gs[i].n);
        before[i] = malloc(sizeof(float) * gs[i].n);
        FM_ASSERT_OK(ctx, be->read(state, t, false, before[i], gs[i].n));
        if (memcmp(before[i], gs[i].v, sizeof(float) * gs[i].n) != 0)
            fail_msg("starting values of '%s' differ from the golden's (fm_init_values and its "
                     "Python twin disagree)",
                     gs[i].name);
        n_init++;
    }
    assert_int_equal(n_init, 15);   /* 9 parameters, 4 BatchNorm buffers, input, labels */

    struct fm_step_timing st = {0};
    assert_int_equal(be->step(state, &st), FM_OK);
    size_t w;
    double e;

    /* 2. logits and loss */
    const struct golden *gl = find_golden(gs, ng, "out", "fc");
    float logits[20];
    FM_ASSERT_OK(ctx, be->read(state, node_output(g, "fc"), false, logits, 20));
    e = excess("logits", logits, gl->v, 20, 1e-5, 1e-4, &w);
    if (e > 0)
        fail_msg("logit %zu: %.8g vs PyTorch %.8g", w, logits[w], gl->v[w]);
    double ref_loss = find_golden(gs, ng, "loss", "loss")->v[0];
    printf("  loss %.9g, PyTorch %.9g\n", st.loss, ref_loss);
    if (!(fabs(st.loss - ref_loss) <= 1e-5 + 1e-4 * fabs(ref_loss)))
        fail_msg("loss %.8g vs PyTorch %.8g", st.loss, ref_loss);

    /* 3. gradients, 4. the step */
    int n_grad = 0, n_step = 0;
    for (size_t i = 0; i < ng; i++) {
        const struct golden *gd = &gs[i];
        bool grad = strcmp(gd->kind, "grad") == 0, stepped = strcmp(gd->kind, "step") == 0;
        if (!grad && !stepped)
            continue;
        fm_tid t = fm_graph_find_tensor(g, gd->name);
        assert_int_not_equal(t, FM_NONE);
        float *v = malloc(sizeof(float) * gd->n);
        FM_ASSERT_OK(ctx, be->read(state, t, grad, v, gd->n));
        if (grad) {
            e = excess(gd->name, v, gd->v, gd->n, 1e-6, 1e-3, &w);
            if (e > 0)
                fail_msg("gradient of %s[%zu]: %.8g vs PyTorch %.8g", gd->name, w, v[w],
                         gd->v[w]);
            n_grad++;
        } else {
            const struct golden *g0 = find_golden(gs, ng, "init", gd->name);
            float *b0 = before[g0 - gs];
            bool buffer = strstr(gd->name, "running_") != NULL;
            float *dv = malloc(sizeof(float) * gd->n), *dref = malloc(sizeof(float) * gd->n);
            for (size_t k = 0; k < gd->n; k++) {
                dv[k] = v[k] - b0[k];
                dref[k] = gd->v[k] - g0->v[k];
            }
            e = buffer ? excess(gd->name, v, gd->v, gd->n, 1e-6, 1e-4, &w)
                       : excess(gd->name, dv, dref, gd->n, 1e-8, 1e-3, &w);
            if (e > 0)
                fail_msg("after one step, %s[%zu]: %.8g (change %.4g) vs PyTorch %.8g (change "
                         "%.4g)",
                         gd->name, w, v[w], dv[w], gd->v[w], dref[w]);
            free(dv);
            free(dref);
            n_step++;
        }
        free(v);
    }
    assert_int_equal(n_grad, 9);
    assert_int_equal(n_step, 13);
    for (size_t i = 0; i < ng; i++) {
        free(before[i]);
        free(gs[i].v);
    }
    be->release(state);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- SGD with momentum over two steps: a weight of 8192 elements (the update runs as oneDNN
 * binaries) and a bias of 128 (a loop). Expected, from the gradients read after each step:
 * w1 = w0 - lr g0; v1 = momentum g0 + g1; w2 = w1 - lr v1. Tolerance on the change w - w_prev:
 * 1e-5 relative + 1e-9 (float rounding of the two multiply-adds). ---- */

static void check_update(const char *what, const float *before, const float *after,
                         const float *v, double lr, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        double want = -lr * v[i], got = (double)after[i] - before[i];
        if (!(fabs(got - want) <= 1e-5 * fabs(want) + 1e-9 + 1e-7 * fabs(before[i])))
            fail_msg("%s[%llu]: changed by %.9g, expected %.9g", what, (unsigned long long)i,
                     got, want);
    }
}

static void sgd_momentum_two_steps(void **unused)
{
    (void)unused;
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "sgd", &g));
    struct fm_shape s = SHAPE(4, 64);
    fm_tid x;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "input", FM_ROLE_INPUT, FM_DTYPE_FP32, &s, &x));
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    add_loss(&nn, fm_nn_linear(&nn, "fc", x, 128, true));
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.lr = 0.05;
    o.momentum = 0.9;
    void *state = NULL;
    FM_ASSERT_OK(ctx, be->prepare(ctx, g, &o, &state));
    const char *names[2] = {"fc.weight", "fc.bias"};
    enum { W = 128 * 64, B = 128 };
    static float w0[W], w1[W], w2[W], g0[W], g1[W], v[W];
    float b0[B], b1[B], b2[B], gb0[B], gb1[B], vb[B];
    fm_tid tw = fm_graph_find_tensor(g, names[0]), tb = fm_graph_find_tensor(g, names[1]);
    struct fm_step_timing t = {0};
    FM_ASSERT_OK(ctx, be->read(state, tw, false, w0, W));
    FM_ASSERT_OK(ctx, be->read(state, tb, false, b0, B));
    assert_int_equal(be->step(state, &t), FM_OK);
    FM_ASSERT_OK(ctx, be->read(state, tw, true, g0, W));
    FM_ASSERT_OK(ctx, be->read(state, tb, true, gb0, B));
    FM_ASSERT_OK(ctx, be->read(state, tw, false, w1, W));
    FM_ASSERT_OK(ctx, be->read(state, tb, false, b1, B));
    check_update("step 1 fc.weight", w0, w1, g0, o.lr, W);
    check_update("step 1 fc.bias", b0, b1, gb0, o.lr, B);
    assert_int_equal(be->step(state, &t), FM_OK);
    FM_ASSERT_OK(ctx, be->read(state, tw, true, g1, W));
    FM_ASSERT_OK(ctx, be->read(state, tb, true, gb1, B));
    FM_ASSERT_OK(ctx, be->read(state, tw, false, w2, W));
    FM_ASSERT_OK(ctx, be->read(state, tb, false, b2, B));
    for (int i = 0; i < W; i++)
        v[i] = (float)(o.momentum * g0[i] + g1[i]);
    for (int i = 0; i < B; i++)
        vb[i] = (float)(o.momentum * gb0[i] + gb1[i]);
    check_update("step 2 fc.weight", w1, w2, v, o.lr, W);
    check_update("step 2 fc.bias", b1, b2, vb, o.lr, B);
    be->release(state);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- Dropout, BatchNorm in inference ---- */

static void dropout_mask(void **unused)
{
    (void)unused;
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "dropout", &g));
    fm_tid x = add_param(ctx, g, "x", SHAPE(4, 256));
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    fm_tid y = fm_nn_dropout(&nn, "drop", x, 0.5);
    fm_tid z = fm_nn_linear(&nn, "fc", y, 8, true);
    add_loss(&nn, z);
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.lr = 0.0;
    void *state = NULL;
    FM_ASSERT_OK(ctx, be->prepare(ctx, g, &o, &state));
    enum { N = 1024 };
    float xv[N], yv[N], dx[N], dy[N], first[N];
    int zeros = 0, changed = 0;
    for (int step = 0; step < 2; step++) {
        struct fm_step_timing t = {0};
        assert_int_equal(be->step(state, &t), FM_OK);
        FM_ASSERT_OK(ctx, be->read(state, x, false, xv, N));
        FM_ASSERT_OK(ctx, be->read(state, y, false, yv, N));
        FM_ASSERT_OK(ctx, be->read(state, x, true, dx, N));
        FM_ASSERT_OK(ctx, be->read(state, y, true, dy, N));
        for (int i = 0; i < N; i++) {
            bool kept = yv[i] != 0.0f;
            /* inverted dropout: kept values and their gradients scaled by 1/(1-p) = 2 */
            assert_true(!kept || fabsf(yv[i] - 2.0f * xv[i]) <= 1e-6f * fabsf(xv[i]));
            assert_true(fabsf(dx[i] - (kept ? 2.0f * dy[i] : 0.0f)) <= 1e-6f * fabsf(dy[i]) + 1e-12f);
            if (step == 0) {
                zeros += !kept;
                first[i] = yv[i];
            } else {
                changed += (first[i] != 0.0f) != kept;
            }
        }
    }
    /* 1024 draws at p = 0.5: the count of zeros is within 512 +- 5 standard deviations (16) */
    assert_in_range(zeros, 512 - 80, 512 + 80);
    assert_true(changed > 100);   /* a new mask each step */
    be->release(state);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* The next number of splitmix64 (Steele et al. 2014), sequentially, as the backend drew
 * Dropout's mask before its draw ran in parallel blocks. */
static uint64_t splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Dropout's mask over more of the kernel's blocks (4096 elements) than it runs serially (8),
 * with 1 and 2 threads:
 * element i of a step is kept exactly when the (i+1)-th number of one sequential splitmix64
 * stream, seeded from the run's seed, the node and the step, is at least p * 2^24 in its top 24
 * bits: the parallel, vectorized draw gives the mask the sequential generator gave. */
static void dropout_mask_sequential(void **unused)
{
    (void)unused;
    const struct fm_backend *be = backend_or_skip();
    enum { N = 9 * 4096 + 100 };
    const double p = 0.1;
    for (int threads = 1; threads <= 2; threads++) {
        struct fm_ctx *ctx = test_ctx();
        struct fm_graph *g = NULL;
        FM_ASSERT_OK(ctx, fm_graph_new(ctx, "dropout", &g));
        fm_tid x = add_param(ctx, g, "x", SHAPE(1, N));
        struct fm_nn nn;
        fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
        fm_tid y = fm_nn_dropout(&nn, "drop", x, p);
        add_loss(&nn, fm_nn_linear(&nn, "fc", y, 2, true));
        fm_nid id = fm_graph_tensor(g, y)->producer;
        struct fm_measure_opts o;
        fm_measure_opts_init(&o);
        o.lr = 0.0;
        o.threads = threads;
        void *state = NULL;
        FM_ASSERT_OK(ctx, be->prepare(ctx, g, &o, &state));
        float *xv = malloc(sizeof(float) * N), *yv = malloc(sizeof(float) * N);
        float *dx = malloc(sizeof(float) * N), *dy = malloc(sizeof(float) * N);
        assert_non_null(xv && yv && dx && dy);
        const uint32_t threshold = (uint32_t)(p * 16777216.0);
        for (uint64_t step = 0; step < 2; step++) {
            struct fm_step_timing t = {0};
            assert_int_equal(be->step(state, &t), FM_OK);
            FM_ASSERT_OK(ctx, be->read(state, x, false, xv, N));
            FM_ASSERT_OK(ctx, be->read(state, y, false, yv, N));
            FM_ASSERT_OK(ctx, be->read(state, x, true, dx, N));
            FM_ASSERT_OK(ctx, be->read(state, y, true, dy, N));
            uint64_t stream = (o.seed * 0x9e3779b97f4a7c15ull + (uint64_t)id) ^
                              (step * 0xd1b54a32d192ed03ull);
            int wrong = 0, dropped = 0;
            for (uint64_t i = 0; i < N; i++) {
                bool keep = (uint32_t)(splitmix64_next(&stream) >> 40) >= threshold;
                float scale = (float)(1.0 / (1.0 - p));
                dropped += !keep;
                wrong += yv[i] != (keep ? xv[i] * scale : 0.0f);
                wrong += dx[i] != (keep ? dy[i] * scale : 0.0f);
            }
            assert_int_equal(wrong, 0);
            assert_in_range(dropped, N / 20, N / 5);   /* p = 0.1 of 36964 */
        }
        free(xv);
        free(yv);
        free(dx);
        free(dy);
        be->release(state);
        fm_graph_free(g);
        fm_ctx_free(ctx);
    }
}

static void batchnorm_inference(void **unused)
{
    (void)unused;
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "bn", &g));
    struct fm_shape s = SHAPE(2, 3, 4, 4);
    fm_tid x, y;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "input", FM_ROLE_INPUT, FM_DTYPE_FP32, &s, &x));
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    y = fm_nn_bn(&nn, "bn", x, 1e-3);
    assert_int_equal(nn.st, FM_OK);
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.mode = FM_MODE_INFER;
    void *state = NULL;
    FM_ASSERT_OK(ctx, be->prepare(ctx, g, &o, &state));
    float mean[3] = {0.5f, -1.0f, 2.0f}, var[3] = {4.0f, 0.25f, 1.0f};
    float gamma[3] = {1.0f, 2.0f, -1.0f}, beta[3] = {0.0f, 1.0f, 0.5f};
    FM_ASSERT_OK(ctx, be->write(state, fm_graph_find_tensor(g, "bn.running_mean"), mean, 3));
    FM_ASSERT_OK(ctx, be->write(state, fm_graph_find_tensor(g, "bn.running_var"), var, 3));
    FM_ASSERT_OK(ctx, be->write(state, fm_graph_find_tensor(g, "bn.weight"), gamma, 3));
    FM_ASSERT_OK(ctx, be->write(state, fm_graph_find_tensor(g, "bn.bias"), beta, 3));
    struct fm_step_timing t = {0};
    assert_int_equal(be->step(state, &t), FM_OK);
    float xv[96], yv[96];
    FM_ASSERT_OK(ctx, be->read(state, x, false, xv, 96));
    FM_ASSERT_OK(ctx, be->read(state, y, false, yv, 96));
    for (int i = 0; i < 96; i++) {
        int c = (i / 16) % 3;
        double ref = (xv[i] - mean[c]) / sqrt(var[c] + 1e-3) * gamma[c] + beta[c];
        assert_true(fabs(yv[i] - ref) <= 1e-5 + 1e-5 * fabs(ref));
    }
    be->release(state);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- refusals ---- */

static void unsupported_op_named(void **unused)
{
    (void)unused;
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "pow", &g));
    struct fm_shape s = SHAPE(2, 8);
    fm_tid x, e, y;
    /* every op runs on the CPU now; Pow of a float by an integer tensor does not (mixed
     * integer and float operands are refused rather than converted silently) */
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "input", FM_ROLE_INPUT, FM_DTYPE_FP32, &s, &x));
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "exponent", FM_ROLE_INPUT, FM_DTYPE_INT64, &s, &e));
    struct fm_attrs a;
    fm_attrs_init(&a);
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_POW, "block.norm", &a, (fm_tid[]){x, e}, 2,
                                        NULL, 1, &y));
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.mode = FM_MODE_INFER;
    void *state = (void *)&o;
    assert_int_equal(be->prepare(ctx, g, &o, &state), FM_ERR_UNSUPPORTED);
    assert_null(state);
    assert_non_null(strstr(fm_ctx_error(ctx), "block.norm"));
    assert_non_null(strstr(fm_ctx_error(ctx), "Pow"));
    /* through the driver: nothing runs, the same message */
    struct fm_measurement *m = NULL;
    assert_int_equal(fm_measure(ctx, g, &o, &m), FM_ERR_UNSUPPORTED);
    assert_null(m);
    assert_non_null(strstr(fm_ctx_error(ctx), "block.norm"));
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* LayerNorm's Mean read by something (here a graph output) is refused, naming the node and
 * the output; an unread Dropout mask (PyTorch's exports name it) is left unwritten and the
 * step runs, Y = X in inference. */
static void secondary_outputs(void **unused)
{
    (void)unused;
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "secondary", &g));
    struct fm_shape s = SHAPE(2, 8);
    fm_tid x, ln[3];
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "input", FM_ROLE_INPUT, FM_DTYPE_FP32, &s, &x));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.axis = -1;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_LAYERNORM, "ln", &a, &x, 1, NULL, 3, ln));
    FM_ASSERT_OK(ctx, fm_graph_mark_output(g, ln[0]));
    FM_ASSERT_OK(ctx, fm_graph_mark_output(g, ln[1]));
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.mode = FM_MODE_INFER;
    void *state = NULL;
    assert_int_equal(be->prepare(ctx, g, &o, &state), FM_ERR_UNSUPPORTED);
    assert_null(state);
    assert_non_null(strstr(fm_ctx_error(ctx), "'ln'"));
    assert_non_null(strstr(fm_ctx_error(ctx), "output 1"));
    fm_graph_free(g);

    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "mask", &g));
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "input", FM_ROLE_INPUT, FM_DTYPE_FP32, &s, &x));
    fm_attrs_init(&a);
    a.ratio = 0.5;
    fm_tid d[2];
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_DROPOUT, "drop", &a, &x, 1, NULL, 2, d));
    FM_ASSERT_OK(ctx, fm_graph_mark_output(g, d[0]));
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    FM_ASSERT_OK(ctx, be->prepare(ctx, g, &o, &state));
    float in[16], out[16];
    for (int i = 0; i < 16; i++)
        in[i] = (float)i - 7.5f;
    FM_ASSERT_OK(ctx, be->write(state, x, in, 16));
    struct fm_step_timing t = {0};
    FM_ASSERT_OK(ctx, be->step(state, &t));
    FM_ASSERT_OK(ctx, be->read(state, d[0], false, out, 16));
    for (int i = 0; i < 16; i++)
        assert_true(out[i] == in[i]);
    be->release(state);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

static void unsupported_precision(void **unused)
{
    (void)unused;
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = small_cnn(ctx);
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.precision = FM_PREC_FP16;
    void *state = NULL;
    assert_int_equal(be->prepare(ctx, g, &o, &state), FM_ERR_UNSUPPORTED);
    assert_non_null(strstr(fm_ctx_error(ctx), "fp16"));
    fm_measure_opts_init(&o);
    o.cuda_graph = true;
    assert_int_equal(be->prepare(ctx, g, &o, &state), FM_ERR_INVALID);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

static void training_needs_loss(void **unused)
{
    (void)unused;
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_zoo_opts zo;
    fm_zoo_opts_init(&zo);
    zo.input = SHAPE(3, 32, 32);
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_zoo_build(ctx, "resnet18", &zo, &g));
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    void *state = NULL;
    assert_int_equal(be->prepare(ctx, g, &o, &state), FM_ERR_UNSUPPORTED);
    assert_non_null(strstr(fm_ctx_error(ctx), "FM_MODE_INFER"));
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- allocation failures: prepare fails cleanly (FM_ERR_NOMEM, no state, nothing leaked:
 * the sanitizer build checks that) whichever of its allocations fails ---- */

struct failing {
    long count, fail_at;    /* fail the fail_at-th allocation (1-based); 0 = never */
};

static void *fail_malloc(size_t size, void *user)
{
    struct failing *f = user;
    if (++f->count == f->fail_at)
        return NULL;
    return malloc(size);
}
static void *fail_realloc(void *ptr, size_t size, void *user)
{
    struct failing *f = user;
    if (++f->count == f->fail_at)
        return NULL;
    return realloc(ptr, size);
}
static void fail_free(void *ptr, void *user)
{
    (void)user;
    free(ptr);
}

static void prepare_allocation_failures(void **unused)
{
    (void)unused;
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *gctx = test_ctx();
    struct fm_graph *g = small_cnn(gctx);
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    struct failing f = {0, 0};
    struct fm_allocator a = {fail_malloc, fail_realloc, fail_free, &f};
    struct fm_ctx *ctx = NULL;
    assert_int_equal(fm_ctx_new(&a, &ctx), FM_OK);
    void *state = NULL;
    long base = f.count;
    FM_ASSERT_OK(ctx, be->prepare(ctx, g, &o, &state));
    long n = f.count - base;
    be->release(state);
    assert_true(n > 20);
    for (long k = 1; k <= n; k++) {
        f.count = 0;
        f.fail_at = k;
        state = (void *)&f;
        enum fm_status st = be->prepare(ctx, g, &o, &state);
        if (st == FM_OK) {   /* a failure the code could absorb (none today) */
            be->release(state);
            continue;
        }
        if (st != FM_ERR_NOMEM)
            fail_msg("allocation %ld of %ld failing gave %s: %s", k, n, fm_status_to_string(st),
                     fm_ctx_error(ctx));
        assert_null(state);
    }
    fm_ctx_free(ctx);
    fm_graph_free(g);
    fm_ctx_free(gctx);
}

/* ---- a whole network ---- */

static void resnet18_train_step(void **unused)
{
    (void)unused;
    const struct fm_backend *be = backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_zoo_opts zo;
    fm_zoo_opts_init(&zo);
    zo.batch = 2;
    zo.with_loss = true;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_zoo_build(ctx, "resnet18", &zo, &g));
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    void *state = NULL;
    FM_ASSERT_OK(ctx, be->prepare(ctx, g, &o, &state));
    struct fm_step_timing t = {0};
    assert_int_equal(be->step(state, &t), FM_OK);
    /* 1000 classes and small random logits: the first loss is near ln(1000) = 6.91 */
    if (!(t.loss > 5.0 && t.loss < 9.0))
        fail_msg("resnet18 first loss %g, expected near ln(1000) = 6.91", t.loss);
    fm_tid w = fm_graph_find_tensor(g, "conv1.weight");
    uint64_t n = numel(g, w);
    float *gw = malloc(sizeof(float) * n);
    FM_ASSERT_OK(ctx, be->read(state, w, true, gw, n));
    double norm = 0.0;
    for (uint64_t i = 0; i < n; i++) {
        assert_true(isfinite(gw[i]));
        norm += (double)gw[i] * gw[i];
    }
    assert_true(norm > 0.0);
    free(gw);
    be->release(state);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- the measure command ---- */

static void measure_cli(void **unused)
{
    (void)unused;
    backend_or_skip();
    char *out = NULL, *err = NULL;
    int rc = test_run_cli("measure resnet18 --batch 2 --input 3x32x32 --steps 2 --warmup 1 "
                          "--peak 1e11 --format json",
                          &out, &err);
    if (rc != 0)
        fail_msg("measure exited %d: %s", rc, err);
    static const char *const keys[] = {"\"step_ms\"", "\"layers\"", "\"fwd_ms\"",
                                       "\"bwd_weight_ms\"", "\"utilization\"", "\"loss\"",
                                       "\"achieved_flops\"", "\"layer1.0.conv1\""};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!strstr(out, keys[i]))
            fail_msg("measure --format json lacks %s", keys[i]);
    free(out);
    free(err);
    /* inference with an epoch, CSV: one row per layer, then the step row */
    rc = test_run_cli("measure mobilenet_v2 --infer --batch 2 --input 3x32x32 --steps 1 "
                      "--warmup 0 --peak 1e11 --epoch-samples 3 --format csv",
                      &out, &err);
    if (rc != 0)
        fail_msg("measure --infer exited %d: %s", rc, err);
    assert_non_null(strstr(out, "layer,op,fwd_ms"));
    assert_non_null(strstr(out, "\nstep,infer,"));
    free(out);
    free(err);
    /* refusals: what the CPU cannot run fails (1), a bad option is a usage error (2) */
    rc = test_run_cli("measure resnet18 --input 3x32x32 --precision fp16 --peak 1e11", NULL, &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "fp32 only"));
    free(err);
    assert_int_equal(test_run_cli("measure resnet18 --optimizer adam", NULL, NULL), 2);
    assert_int_equal(test_run_cli("measure resnet18 --device tpu", NULL, NULL), 2);
    assert_int_equal(test_run_cli("measure resnet18 --steps 0", NULL, NULL), 2);
    assert_int_equal(test_run_cli("measure --help", NULL, NULL), 0);
}

/* The calibration's cold caches (every timed kernel's data flushed) and other traffic (a
 * buffer written before one layer's kernels) change timings only: the losses of the steps are
 * bit for bit those of a plain run, and the measurement says whether it flushed. A layer to
 * flush before that is not in the graph is refused, naming it. */
static void cold_cache_same_results(void **unused)
{
    (void)unused;
    backend_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = small_cnn(ctx);
    double loss[3];
    for (int k = 0; k < 3; k++) {
        struct fm_measure_opts o;
        fm_measure_opts_init(&o);
        o.device = "cpu";
        o.seed = 1;
        o.warmup = 1;
        o.steps = 2;
        o.threads = 2;
        o.cold_cache = k == 1;
        o.flush_bytes = k == 2 ? 1 << 20 : 0;
        o.flush_node = k == 2 ? "bn1" : NULL;
        struct fm_measurement *m = NULL;
        FM_ASSERT_OK(ctx, fm_measure(ctx, g, &o, &m));
        loss[k] = m->loss_last;
#if defined(__x86_64__) || defined(__i386__)
        assert_int_equal(m->cold_cache, k == 1);
#else
        assert_false(m->cold_cache);
#endif
        fm_measurement_free(m);
    }
    assert_true(isfinite(loss[0]));
    assert_memory_equal(&loss[0], &loss[1], sizeof(double));
    assert_memory_equal(&loss[0], &loss[2], sizeof(double));
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.device = "cpu";
    o.steps = 1;
    o.flush_bytes = 4096;
    o.flush_node = "no_such_layer";
    struct fm_measurement *m = NULL;
    assert_int_equal(fm_measure(ctx, g, &o, &m), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "no_such_layer");
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fd_conv_grouped_strided_dilated),
        cmocka_unit_test(fd_conv_depthwise),
        cmocka_unit_test(fd_conv_depthwise_large),
        cmocka_unit_test(fd_conv_depthwise_tiny),
        cmocka_unit_test(fd_conv_depthwise7_tiny),
        cmocka_unit_test(fd_conv_grouped_tiny),
        cmocka_unit_test(fd_conv_grouped4_strided),
        cmocka_unit_test(fd_conv_grouped4_padded),
        cmocka_unit_test(fd_conv_grouped2_dilated),
        cmocka_unit_test(cold_cache_same_results),
        cmocka_unit_test(fd_conv_asymmetric),
        cmocka_unit_test(fd_grouped_bn_blocked),
        cmocka_unit_test(fd_linear),
        cmocka_unit_test(fd_gemm_plain_b),
        cmocka_unit_test(fd_matmul_rows),
        cmocka_unit_test(fd_tied_embedding),
        cmocka_unit_test(fd_batchnorm),
        cmocka_unit_test(fd_conv_bn_relu),
        cmocka_unit_test(fd_relu),
        cmocka_unit_test(fd_leaky_relu),
        cmocka_unit_test(fd_relu6),
        cmocka_unit_test(fd_sigmoid),
        cmocka_unit_test(fd_tanh),
        cmocka_unit_test(fd_silu),
        cmocka_unit_test(fd_gelu),
        cmocka_unit_test(fd_gelu_tanh),
        cmocka_unit_test(fd_hardswish),
        cmocka_unit_test(fd_hardswish_padded),
        cmocka_unit_test(fd_hardsigmoid),
        cmocka_unit_test(fd_maxpool_ceil),
        cmocka_unit_test(fd_maxpool_plain_blocked),
        cmocka_unit_test(fd_avgpool_count_pad),
        cmocka_unit_test(fd_avgpool_ceil),
        cmocka_unit_test(fd_adaptive_avgpool_uneven),
        cmocka_unit_test(fd_adaptive_avgpool_even),
        cmocka_unit_test(fd_global_avgpool),
        cmocka_unit_test(fd_global_maxpool),
        cmocka_unit_test(fd_add_broadcast),
        cmocka_unit_test(fd_add_mul_rows),
        cmocka_unit_test(fd_sub_rows),
        cmocka_unit_test(fd_add_self),
        cmocka_unit_test(fd_mul_squeeze_excitation),
        cmocka_unit_test(fd_mul_se_blocked),
        cmocka_unit_test(fd_se_block),
        cmocka_unit_test(fd_mul_same_shape),
        cmocka_unit_test(fd_layernorm_small),
        cmocka_unit_test(fd_layernorm_large),
        cmocka_unit_test(layernorm_small_forward),
        cmocka_unit_test(layernorm_large_forward),
        cmocka_unit_test(fd_two_users),
        cmocka_unit_test(fd_concat_plain),
        cmocka_unit_test(fd_concat_blocked),
        cmocka_unit_test(fd_concat_dense),
        cmocka_unit_test(fd_concat_dense_threads),
        cmocka_unit_test(fd_pad_none),
        cmocka_unit_test(fd_flatten_linear),
        cmocka_unit_test(small_se_expand),
        cmocka_unit_test(small_se_expand_rows9),
        cmocka_unit_test(small_se_squeeze),
        cmocka_unit_test(small_se_batch1),
        cmocka_unit_test(small_linear_wide),
        cmocka_unit_test(small_linear_narrow),
        cmocka_unit_test(small_linear_tails),
        cmocka_unit_test(small_linear_onednn),
        cmocka_unit_test(small_linear_weights_onednn),
        cmocka_unit_test(small_kernels_every_isa),
        cmocka_unit_test(linear_b1_bwd_data_no_reorder),
        cmocka_unit_test(linear_b16_no_weight_reorder),
        cmocka_unit_test(maxpool_plain_input_jit),
        cmocka_unit_test(grouped4_conv_not_gemm),
        cmocka_unit_test(ce_gpt2_vocab),
        cmocka_unit_test(ce_small_rows),
        cmocka_unit_test(softmax_gpt2_scores),
        cmocka_unit_test(log_softmax_long_rows),
        cmocka_unit_test(softmax_long_rows),
        cmocka_unit_test(tanh_values),
        cmocka_unit_test(gelu_tanh_values),
        cmocka_unit_test(bcast_se_c8_blocked),
        cmocka_unit_test(bcast_se_c24_blocked),
        cmocka_unit_test(bcast_se_c56_blocked),
        cmocka_unit_test(bcast_se_c232_blocked),
        cmocka_unit_test(bcast_se_c24_plain),
        cmocka_unit_test(bcast_se_c56_batch3_blocked),
        cmocka_unit_test(bcast_per_sample_c24_blocked),
        cmocka_unit_test(bcast_layer_scale_plain),
        cmocka_unit_test(bcast_layer_scale_blocked),
        cmocka_unit_test(bcast_layer_scale_wide_plane),
        cmocka_unit_test(bcast_se_batch4_blocked),
        cmocka_unit_test(bcast_add_channel_c24_blocked),
        cmocka_unit_test(bcast_layernorm_sub),
        cmocka_unit_test(bcast_layernorm_div),
        cmocka_unit_test(bcast_layernorm_div_c7),
        cmocka_unit_test(bcast_lastdim_mul),
        cmocka_unit_test(bcast_lastdim_sub),
        cmocka_unit_test(bcast_mixed_div),
        cmocka_unit_test(bcast_mixed_div_rows),
        cmocka_unit_test(bcast_channel_sub_first),
        cmocka_unit_test(bcast_window_mask_add),
        cmocka_unit_test(bcast_channel_div_plain),
        cmocka_unit_test(pow_square),
        cmocka_unit_test(pow_cube),
        cmocka_unit_test(pow_general),
        cmocka_unit_test(golden_small_cnn),
        cmocka_unit_test(sgd_momentum_two_steps),
        cmocka_unit_test(dropout_mask),
        cmocka_unit_test(dropout_mask_sequential),
        cmocka_unit_test(batchnorm_inference),
        cmocka_unit_test(unsupported_op_named),
        cmocka_unit_test(secondary_outputs),
        cmocka_unit_test(unsupported_precision),
        cmocka_unit_test(training_needs_loss),
        cmocka_unit_test(prepare_allocation_failures),
        cmocka_unit_test(resnet18_train_step),
        cmocka_unit_test(measure_cli),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
