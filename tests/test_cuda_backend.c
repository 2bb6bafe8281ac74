/* The CUDA backend, through the backend interface, on a machine with an NVIDIA GPU:
 *  - one training step of several architectures (two small CNNs that use every op the backend
 *    lowers, vgg11, resnet18, mobilenet_v2, efficientnet_b0) against the CPU backend in fp32
 *    from the same starting values, in NCHW and channels-last, as relative L2 errors; and the
 *    SGD update itself (parameter change = -lr * gradient) within 1e-3.
 *    Shallow networks (the small CNNs, vgg11), every precision: loss, logits and gradients
 *    within fp32 1e-4, tf32 2e-3, fp16 1e-2, bf16 3e-2 (bf16 keeps 8 mantissa bits to fp16's
 *    11: its unit roundoff is 8 times larger).
 *    Deep networks (18 to 53 layers): fp32 as above; tf32 loss 1e-3, logits 3e-3, gradients
 *    5e-3; fp16 and bf16 the loss within 1e-2, their logits and gradients printed but not held
 *    to a bound: rounding error grows with depth (on an H100, 2026-11-23: logits 1.7e-3 fp16 /
 *    1.4e-2 bf16 on resnet18, 3.2e-2 / 1.9e-1 on mobilenet_v2, in the 1:8 ratio of the two unit
 *    roundoffs, while fp32 agrees to 1e-5 on the same networks and kernels).
 *    Gradients are compared by relative error on the smooth networks (SiLU, GELU, tanh,
 *    sigmoid, average pooling: small_smooth, efficientnet_b0). Networks with kinks (ReLU,
 *    ReLU6, max pooling, hardswish) have gradients that jump where an input crosses a kink, and
 *    another precision moves some inputs across: one flipped ReLU among 10^5 elements already
 *    costs 3e-3 of relative error. Their gradients must point the same way instead: cosine
 *    similarity above 1 - 1e-4 in fp32, 1 - 1e-3 in tf32 (0.99 deep), 0.99 in fp16, 0.95 in
 *    bf16 (whose rounding also ties max-pooling windows);
 *  - CUDA-graph replays train like plain steps; per-layer event times tile the step;
 *  - out of memory says the largest batch that fits; an unsupported op is named before
 *    anything runs; the probe returns finite, ordered figures.
 * Without a GPU, or in a build without the CUDA backend, it prints "SKIPPED: no CUDA device"
 * and passes: CI has no GPU. */
#include "support.h"

#include "backend/backend.h"
#include "frontend/zoo/nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- graphs ---- */

static void add_loss(struct fm_ctx *ctx, struct fm_graph *g, fm_tid logits, int64_t batch)
{
    struct fm_shape ls = {1, {batch}};
    fm_tid labels, loss;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "labels", FM_ROLE_INPUT, FM_DTYPE_INT64, &ls, &labels));
    fm_tid in[2] = {logits, labels};
    const char *name = "loss";
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_CROSS_ENTROPY, "loss", NULL, in, 2, &name, 1, &loss));
}

/* Every op family the backend lowers, in one small network (smooth: the kinks replaced by
 * SiLU, GELU and ceil-mode average pooling, so gradients compare strictly): conv with bias, BatchNorm, ReLU6,
 * a depthwise conv, SiLU, a squeeze-excitation block (global pooling, 1x1 convs, sigmoid, a
 * broadcast multiply), ceil-mode max pooling (own kernel), average pooling (cuDNN), hardswish,
 * tanh, GELU, concat, an add whose operand is used twice, uneven adaptive pooling (own
 * kernel), flatten (a transpose in channels-last), dropout and a linear layer. */
static struct fm_graph *small_cnn(struct fm_ctx *ctx, int64_t batch, bool smooth)
{
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, smooth ? "small_smooth" : "small_cnn", &g));
    struct fm_shape in = {4, {batch, 3, 20, 20}};
    fm_tid x;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "input", FM_ROLE_INPUT, FM_DTYPE_FP32, &in, &x));
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    fm_tid a = fm_nn_conv(&nn, "c1", x, 16, 3, 1, 1, 1, true);
    a = fm_nn_bn(&nn, "bn1", a, 1e-5);
    a = smooth ? fm_nn_act(&nn, "r1", FM_OP_SILU, a) : fm_nn_relu6(&nn, "r1", a);
    fm_tid b = fm_nn_conv(&nn, "dw", a, 16, 3, 2, 1, 16, false);
    b = fm_nn_act(&nn, "silu", FM_OP_SILU, fm_nn_bn(&nn, "bn2", b, 1e-3));
    fm_tid s = fm_nn_adaptive_avgpool(&nn, "se_pool", b, 1, 1);
    s = fm_nn_act(&nn, "se_act", smooth ? FM_OP_GELU : FM_OP_RELU,
                  fm_nn_conv(&nn, "se_fc1", s, 4, 1, 1, 0, 1, true));
    s = fm_nn_act(&nn, "se_gate", FM_OP_SIGMOID, fm_nn_conv(&nn, "se_fc2", s, 16, 1, 1, 0, 1, true));
    b = fm_nn_mul(&nn, "se_mul", b, s);
    fm_tid c = smooth ? fm_nn_avgpool(&nn, "mp", b, 3, 2, 0, true, false)
                      : fm_nn_maxpool(&nn, "mp", b, 3, 2, 0, true);
    fm_tid d = fm_nn_act(&nn, "hswish", smooth ? FM_OP_SILU : FM_OP_HARDSWISH,
                         fm_nn_conv(&nn, "c2", c, 24, 1, 1, 0, 1, false));
    fm_tid e = fm_nn_act(&nn, "tanh", FM_OP_TANH, fm_nn_avgpool(&nn, "ap", b, 2, 2, 0, false, true));
    fm_tid parts[2] = {d, e};
    fm_tid f = fm_nn_concat(&nn, "cat", parts, 2, 1);
    fm_tid h = fm_nn_act(&nn, "gelu", FM_OP_GELU, fm_nn_conv(&nn, "c3", f, 40, 3, 1, 1, 1, false));
    f = fm_nn_add(&nn, "res", f, h);
    f = fm_nn_adaptive_avgpool(&nn, "aap", f, 3, 3);
    f = fm_nn_dropout(&nn, "drop", fm_nn_flatten(&nn, "flat", f), 0.3);
    fm_tid logits = fm_nn_linear(&nn, "fc", f, 10, true);
    FM_ASSERT_OK(ctx, nn.st);
    add_loss(ctx, g, logits, batch);
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    return g;
}

static struct fm_graph *zoo(struct fm_ctx *ctx, const char *name, int64_t batch, int64_t hw)
{
    struct fm_zoo_opts zo;
    fm_zoo_opts_init(&zo);
    zo.batch = batch;
    zo.classes = 10;
    zo.input = (struct fm_shape){3, {3, hw, hw}};
    zo.with_loss = true;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_zoo_build(ctx, name, &zo, &g));
    return g;
}

/* ---- one step on a backend, and what it left ---- */

struct result {
    double loss;
    float *logits;
    uint64_t n_logits;
    float *grads;         /* all trainable parameters' gradients, in tensor order */
    float *params;        /* the parameters after the update, same order */
    uint64_t n_params;
};

static fm_tid logits_of(const struct fm_graph *g)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        if (n->op == FM_OP_CROSS_ENTROPY)
            return n->in[0];
    }
    return FM_NONE;
}

static uint64_t numel_of(const struct fm_graph *g, fm_tid id)
{
    uint64_t n = 0;
    assert_int_equal(fm_shape_numel(&fm_graph_tensor(g, id)->shape, &n), FM_OK);
    return n;
}

static bool trainable(const struct fm_graph *g, fm_tid id)
{
    const struct fm_tensor *t = fm_graph_tensor(g, id);
    return t->role == FM_ROLE_PARAM && t->trainable;
}

static void run_step(struct fm_ctx *ctx, const struct fm_backend *be, const struct fm_graph *g,
                     const struct fm_measure_opts *o, struct result *r)
{
    memset(r, 0, sizeof(*r));
    void *state = NULL;
    FM_ASSERT_OK(ctx, be->prepare(ctx, g, o, &state));
    struct fm_step_timing t = {0};
    FM_ASSERT_OK(ctx, be->step(state, &t));
    r->loss = t.loss;
    fm_tid lt = logits_of(g);
    r->n_logits = numel_of(g, lt);
    r->logits = malloc(sizeof(float) * r->n_logits);
    FM_ASSERT_OK(ctx, be->read(state, lt, false, r->logits, r->n_logits));
    for (size_t i = 0; i < fm_graph_tensor_count(g); i++)
        if (trainable(g, (fm_tid)i))
            r->n_params += numel_of(g, (fm_tid)i);
    r->grads = malloc(sizeof(float) * r->n_params);
    r->params = malloc(sizeof(float) * r->n_params);
    uint64_t off = 0;
    for (size_t i = 0; i < fm_graph_tensor_count(g); i++) {
        if (!trainable(g, (fm_tid)i))
            continue;
        uint64_t n = numel_of(g, (fm_tid)i);
        FM_ASSERT_OK(ctx, be->read(state, (fm_tid)i, true, r->grads + off, n));
        FM_ASSERT_OK(ctx, be->read(state, (fm_tid)i, false, r->params + off, n));
        off += n;
    }
    be->release(state);
}

static void result_free(struct result *r)
{
    free(r->logits);
    free(r->grads);
    free(r->params);
}

/* ||a - b|| / ||b|| in double; NaN anywhere fails it */
static double rel_err(const float *a, const float *b, uint64_t n)
{
    double num = 0.0, den = 0.0;
    for (uint64_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * (double)b[i];
    }
    if (isnan(num) || isnan(den))
        return INFINITY;
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* the parameter tensor (name) whose gradient differs most, relative to its own size */
static const char *worst_tensor(const struct fm_graph *g, const struct result *a,
                                const struct result *b, double *err)
{
    const char *worst = "";
    uint64_t off = 0;
    *err = 0.0;
    for (size_t i = 0; i < fm_graph_tensor_count(g); i++) {
        if (!trainable(g, (fm_tid)i))
            continue;
        uint64_t n = numel_of(g, (fm_tid)i);
        double e = rel_err(a->grads + off, b->grads + off, n);
        if (e > *err) {
            *err = e;
            worst = fm_graph_tensor(g, (fm_tid)i)->name;
        }
        off += n;
    }
    return worst;
}

struct config {
    enum fm_precision prec;
    bool nhwc;
};

/* After a failed comparison: both backends again, every tensor kept (FLOPMETER_CUDA_KEEP), and
 * the first layers whose outputs, then whose input gradients, part from the CPU's. */
static void diagnose(const struct fm_graph *g, const struct config *c, double tol)
{
    struct fm_ctx *ctx = fm_graph_ctx(g);
    setenv("FLOPMETER_CUDA_KEEP", "1", 1);
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    void *cs = NULL, *gs = NULL;
    const struct fm_backend *cpu = fm_backend_cpu(), *gpu = fm_backend_cuda();
    o.device = "cpu";
    enum fm_status st = cpu->prepare(ctx, g, &o, &cs);
    o.device = "cuda";
    o.precision = c->prec;
    o.channels_last = c->nhwc;
    if (!st)
        st = gpu->prepare(ctx, g, &o, &gs);
    struct fm_step_timing t = {0};
    if (!st)
        st = cpu->step(cs, &t);
    if (!st)
        st = gpu->step(gs, &t);
    const fm_nid *topo = fm_graph_topo_order(g);
    for (int grad = 0; grad < 2 && !st; grad++) {
        int shown = 0;
        for (size_t k = 0; k < fm_graph_node_count(g) && shown < 4; k++) {
            size_t i = grad ? fm_graph_node_count(g) - 1 - k : k;
            const struct fm_node *n = fm_graph_node(g, topo[i]);
            fm_tid id = grad ? n->in[0] : n->out[0];
            if (id == FM_NONE || (grad && !fm_graph_needs_grad(g, id)))
                continue;
            uint64_t num = numel_of(g, id);
            float *a = malloc(sizeof(float) * num), *b = malloc(sizeof(float) * num);
            if (cpu->read(cs, id, grad, a, num) == FM_OK && gpu->read(gs, id, grad, b, num) == FM_OK) {
                double e = rel_err(b, a, num), big = 0.0;
                for (uint64_t j = 0; j < num; j++)
                    big = fabs(a[j]) > big ? fabs(a[j]) : big;
                if (e > tol) {
                    printf("    %s of layer %s (%s): rel.err %.2e, max |cpu| %.3g\n",
                           grad ? "input gradient" : "output", n->name, n->op_name, e, big);
                    shown++;
                }
            }
            free(a);
            free(b);
        }
    }
    if (st)
        printf("    diagnosis failed: %s\n", fm_ctx_error(ctx));
    if (gs)
        gpu->release(gs);
    if (cs)
        cpu->release(cs);
    unsetenv("FLOPMETER_CUDA_KEEP");
}

static double tolerance(enum fm_precision p)
{
    switch (p) {
    case FM_PREC_FP32: return 1e-4;
    case FM_PREC_TF32: return 2e-3;
    case FM_PREC_FP16: return 1e-2;
    default: return 3e-2;
    }
}

/* least cosine similarity of the gradients of a network with kinks (see the top) */
static double min_cosine(enum fm_precision p)
{
    switch (p) {
    case FM_PREC_FP32: return 1.0 - 1e-4;
    case FM_PREC_TF32: return 1.0 - 1e-3;
    case FM_PREC_FP16: return 0.99;
    default: return 0.95;
    }
}

static double cosine(const float *a, const float *b, uint64_t n)
{
    double ab = 0.0, aa = 0.0, bb = 0.0;
    for (uint64_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return aa > 0.0 && bb > 0.0 ? ab / sqrt(aa * bb) : 0.0;
}

/* The CPU in fp32 is the reference; each CUDA configuration must match it within its
 * precision's tolerance, and its own update must be -lr times its own gradient. */
/* The bounds of one comparison (see the top of the file); 0 = printed, not held. */
struct bounds {
    double loss, logits, grads, cos;
};

static struct bounds bounds_for(enum fm_precision p, bool smooth, bool deep)
{
    double tol = tolerance(p);
    bool half = p == FM_PREC_FP16 || p == FM_PREC_BF16;
    struct bounds b = {tol, tol, smooth ? tol : 0.0, smooth ? 0.0 : min_cosine(p)};
    if (deep && p == FM_PREC_TF32) {
        b = (struct bounds){1e-3, 3e-3, smooth ? 5e-3 : 0.0, smooth ? 0.0 : 0.99};
    } else if (deep && half) {
        b = (struct bounds){1e-2, 0.0, 0.0, 0.0};
    }
    return b;
}

static void compare_with_cpu(struct fm_graph *g, bool smooth, bool deep,
                             const struct config *cfgs, size_t n_cfg)
{
    struct fm_ctx *ctx = fm_graph_ctx(g);
    const struct fm_backend *cpu = fm_backend_cpu();
    if (!cpu) {
        printf("skipped: this build has no CPU backend to compare with\n");
        fm_graph_free(g);
        skip();
    }
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.device = "cpu";
    struct result ref;
    run_step(ctx, cpu, g, &o, &ref);
    /* the starting values, for the update check */
    float *init = malloc(sizeof(float) * ref.n_params);
    uint64_t off = 0;
    for (size_t i = 0; i < fm_graph_tensor_count(g); i++) {
        if (!trainable(g, (fm_tid)i))
            continue;
        uint64_t n = numel_of(g, (fm_tid)i);
        FM_ASSERT_OK(ctx, fm_init_values(ctx, g, (fm_tid)i, o.seed, init + off, n));
        off += n;
    }
    bool ok = true;
    for (size_t c = 0; c < n_cfg; c++) {
        o.device = "cuda";
        o.precision = cfgs[c].prec;
        o.channels_last = cfgs[c].nhwc;
        struct result r;
        run_step(ctx, fm_backend_cuda(), g, &o, &r);
        assert_int_equal(r.n_params, ref.n_params);
        double tol = tolerance(cfgs[c].prec);
        double e_loss = fabs(r.loss - ref.loss) / fabs(ref.loss);
        double e_logits = rel_err(r.logits, ref.logits, ref.n_logits);
        double e_grads = rel_err(r.grads, ref.grads, ref.n_params);
        double e_worst;
        const char *worst = worst_tensor(g, &r, &ref, &e_worst);
        /* update = p_after - p_init against -lr * grad, both from this run */
        double num = 0.0, den = 0.0;
        for (uint64_t i = 0; i < r.n_params; i++) {
            double upd = (double)r.params[i] - (double)init[i];
            double want = -o.lr * (double)r.grads[i];
            num += (upd - want) * (upd - want);
            den += want * want;
        }
        double e_update = den > 0 ? sqrt(num / den) : sqrt(num);
        double cos = cosine(r.grads, ref.grads, ref.n_params);
        struct bounds bd = bounds_for(cfgs[c].prec, smooth, deep);
        bool finite = isfinite(e_loss) && isfinite(e_logits) && isfinite(e_grads) &&
                      isfinite(e_update);
        bool pass = finite && e_loss <= bd.loss && (!bd.logits || e_logits <= bd.logits) &&
                    (!bd.grads || e_grads <= bd.grads) && (!bd.cos || cos >= bd.cos) &&
                    e_update <= 1e-3;
        printf("%-16s %-4s %-4s loss %.6f vs %.6f  rel.err loss %.2e logits %.2e grads %.2e "
               "(cos %.6f; worst tensor %s %.2e) update %.2e  [bounds loss %.0e logits %.0e "
               "grads %.0e cos %.4g; 0 = printed only] %s\n",
               fm_graph_name(g), fm_precision_name(cfgs[c].prec), cfgs[c].nhwc ? "NHWC" : "NCHW",
               r.loss, ref.loss, e_loss, e_logits, e_grads, cos, worst, e_worst, e_update,
               bd.loss, bd.logits, bd.grads, bd.cos, pass ? "ok" : "FAIL");
        if (!pass)
            diagnose(g, &cfgs[c], tol);
        ok = ok && pass;
        result_free(&r);
    }
    free(init);
    result_free(&ref);
    fm_graph_free(g);
    assert_true(ok);
}

static const struct config all_configs[] = {
    {FM_PREC_FP32, false}, {FM_PREC_FP32, true}, {FM_PREC_TF32, false}, {FM_PREC_TF32, true},
    {FM_PREC_FP16, false}, {FM_PREC_FP16, true}, {FM_PREC_BF16, false}, {FM_PREC_BF16, true},
};
#define N_ALL (sizeof(all_configs) / sizeof(all_configs[0]))

static void test_small_cnn_matches_cpu(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    compare_with_cpu(small_cnn(ctx, 4, false), false, false, all_configs, N_ALL);
    fm_ctx_free(ctx);
}

static void test_small_smooth_matches_cpu(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    compare_with_cpu(small_cnn(ctx, 4, true), true, false, all_configs, N_ALL);
    fm_ctx_free(ctx);
}

static void test_resnet18_matches_cpu(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    compare_with_cpu(zoo(ctx, "resnet18", 8, 128), false, true, all_configs, N_ALL);
    fm_ctx_free(ctx);
}

static void test_mobilenet_v2_matches_cpu(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    static const struct config c[] = {
        {FM_PREC_FP32, false}, {FM_PREC_FP32, true}, {FM_PREC_FP16, true}, {FM_PREC_BF16, true}};
    compare_with_cpu(zoo(ctx, "mobilenet_v2", 8, 128), false, true, c, sizeof(c) / sizeof(c[0]));
    fm_ctx_free(ctx);
}

static void test_efficientnet_b0_matches_cpu(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    static const struct config c[] = {{FM_PREC_FP32, true}, {FM_PREC_TF32, true},
                                      {FM_PREC_FP16, true}, {FM_PREC_FP16, false},
                                      {FM_PREC_BF16, true}};
    compare_with_cpu(zoo(ctx, "efficientnet_b0", 8, 128), true, true, c, sizeof(c) / sizeof(c[0]));
    fm_ctx_free(ctx);
}

static void test_vgg11_matches_cpu(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    static const struct config c[] = {{FM_PREC_FP32, false}, {FM_PREC_FP16, true}};
    compare_with_cpu(zoo(ctx, "vgg11", 2, 32), false, false, c, sizeof(c) / sizeof(c[0]));
    fm_ctx_free(ctx);
}

/* ---- CUDA graphs train like plain steps ---- */

static void losses(struct fm_ctx *ctx, const struct fm_graph *g, bool graph, double *out, int n)
{
    const struct fm_backend *be = fm_backend_cuda();
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.device = "cuda";
    o.cuda_graph = graph;
    void *state = NULL;
    FM_ASSERT_OK(ctx, be->prepare(ctx, g, &o, &state));
    for (int i = 0; i < n; i++) {
        struct fm_step_timing t = {0};
        FM_ASSERT_OK(ctx, be->step(state, &t));
        out[i] = t.loss;
        assert_true(t.step_ms > 0.0);
    }
    be->release(state);
}

static void test_graph_replays_train(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = small_cnn(ctx, 4, false);
    double plain[4], replay[4];
    losses(ctx, g, false, plain, 4);
    losses(ctx, g, true, replay, 4);
    for (int i = 0; i < 4; i++) {
        printf("step %d: loss %.7f plain, %.7f CUDA graph\n", i, plain[i], replay[i]);
        assert_true(fabs(plain[i] - replay[i]) <= 1e-4 * fabs(plain[i]));
    }
    /* the update ran on every replay: the loss moves */
    assert_true(fabs(replay[3] - replay[0]) > 1e-6);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- per-layer events tile the step ---- */

static void test_layer_times_tile_the_step(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = zoo(ctx, "resnet18", 8, 64);
    for (int graph = 0; graph < 2; graph++) {
        struct fm_measure_opts o;
        fm_measure_opts_init(&o);
        o.device = "cuda";
        o.cuda_graph = graph;
        o.steps = 5;
        struct fm_measurement *m = NULL;
        FM_ASSERT_OK(ctx, fm_measure(ctx, g, &o, &m));
        double sum = 0.0;
        for (size_t i = 0; i < m->n_nodes; i++) {
            const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
            for (int p = 0; p < FM_PHASE_COUNT; p++) {
                assert_true(m->nodes[i].ms[p] >= 0.0);
                sum += m->nodes[i].ms[p];
            }
            if (n->op == FM_OP_CONV)
                assert_true(m->nodes[i].ms[FM_PHASE_FWD] > 0.0);
        }
        printf("%s: step median %.3f ms, per-layer sum %.3f ms, clock %.0f MHz, %s\n",
               graph ? "CUDA graph" : "plain", m->step_ms_median, sum, m->clock_mhz,
               m->device_name);
        /* medians of parts need not add up to the median of the whole exactly */
        assert_true(sum > 0.8 * m->step_ms_median && sum < 1.2 * m->step_ms_median);
        assert_true(m->loss_last < m->loss_first);
        fm_measurement_free(m);
    }
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- out of memory: the largest batch that fits ---- */

static void test_oom_says_largest_batch(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = zoo(ctx, "resnet50", 2600, 224);
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.device = "cuda";
    void *st = NULL;
    assert_int_equal(fm_backend_cuda()->prepare(ctx, g, &o, &st), FM_ERR_DEVICE);
    assert_null(st);
    const char *msg = fm_ctx_error(ctx);
    printf("%s\n", msg);
    const char *at = strstr(msg, "try --batch ");
    assert_non_null(at);
    long fits = strtol(at + strlen("try --batch "), NULL, 10);
    assert_true(fits >= 1 && fits < 2600);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- an op the backend cannot run is named before anything runs ---- */

static void test_unsupported_op_named(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "ln", &g));
    struct fm_shape in = {2, {4, 8}};
    fm_tid x, y;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "input", FM_ROLE_INPUT, FM_DTYPE_FP32, &in, &x));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.axis = -1;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_LAYERNORM, "my_norm", &a, &x, 1, NULL, 1, &y));
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.device = "cuda";
    o.mode = FM_MODE_INFER;
    void *st = NULL;
    assert_int_equal(fm_backend_cuda()->prepare(ctx, g, &o, &st), FM_ERR_UNSUPPORTED);
    assert_non_null(strstr(fm_ctx_error(ctx), "my_norm"));
    o.precision = FM_PREC_FP8;
    assert_int_equal(fm_backend_cuda()->prepare(ctx, g, &o, &st), FM_ERR_UNSUPPORTED);
    assert_non_null(strstr(fm_ctx_error(ctx), "fp8"));
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- the probe ---- */

static void test_probe(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_probe_opts o;
    memset(&o, 0, sizeof(o));
    o.device = "cuda";
    o.repetitions = 3;
    o.seconds = 0.05;
    struct fm_probe_result r;
    FM_ASSERT_OK(ctx, fm_probe_cuda(ctx, &o, &r));
    printf("%s: FMA fp32 %.1f TFLOP/s, GEMM fp32 %.1f tf32 %.1f fp16 %.1f bf16 %.1f TFLOP/s, "
           "copy %.0f GB/s\n",
           r.device_name, r.fma_all[FM_PREC_FP32].median / 1e12, r.gemm[FM_PREC_FP32].median / 1e12,
           r.gemm[FM_PREC_TF32].median / 1e12, r.gemm[FM_PREC_FP16].median / 1e12,
           r.gemm[FM_PREC_BF16].median / 1e12, r.bw_copy.median / 1e9);
    const struct fm_probe_stat *all[] = {&r.fma_all[FM_PREC_FP32], &r.fma_all[FM_PREC_FP16],
                                         &r.gemm[FM_PREC_FP32], &r.gemm[FM_PREC_TF32],
                                         &r.gemm[FM_PREC_FP16], &r.bw_copy, &r.bw_triad};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        assert_true(isfinite(all[i]->median) && all[i]->median > 0.0);
        assert_true(all[i]->min <= all[i]->median && all[i]->median <= all[i]->max);
    }
    /* tensor cores: half-precision products beat strict fp32 ones on every GPU since Volta */
    assert_true(r.gemm[FM_PREC_FP16].median > r.gemm[FM_PREC_FP32].median);
    fm_ctx_free(ctx);
}

/* ---- is there a GPU? ---- */

static bool cuda_usable(char *why, size_t size)
{
    if (!fm_backend_cuda()) {
        snprintf(why, size, "this build has no CUDA backend");
        return false;
    }
    struct fm_ctx *ctx = NULL;
    if (fm_ctx_new(NULL, &ctx) != FM_OK)
        return false;
    struct fm_graph *g = NULL;
    struct fm_shape in = {2, {2, 4}};
    fm_tid x, y;
    bool ok = fm_graph_new(ctx, "probe", &g) == FM_OK &&
              fm_graph_add_tensor(g, "input", FM_ROLE_INPUT, FM_DTYPE_FP32, &in, &x) == FM_OK &&
              fm_graph_add_node(g, FM_OP_RELU, "relu", NULL, &x, 1, NULL, 1, &y) == FM_OK &&
              fm_graph_finalize(g) == FM_OK;
    if (ok) {
        struct fm_measure_opts o;
        fm_measure_opts_init(&o);
        o.device = "cuda";
        o.mode = FM_MODE_INFER;
        void *st = NULL;
        enum fm_status s = fm_backend_cuda()->prepare(ctx, g, &o, &st);
        if (s == FM_OK)
            fm_backend_cuda()->release(st);
        else
            snprintf(why, size, "%s", fm_ctx_error(ctx));
        ok = s == FM_OK;
    }
    fm_graph_free(g);
    fm_ctx_free(ctx);
    return ok;
}

int main(int argc, char **argv)
{
    char why[1024] = "";
    if (!test_listing(argc, argv) && !cuda_usable(why, sizeof(why))) {
        printf("SKIPPED: no CUDA device (%s)\n", why);
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unsupported_op_named),
        cmocka_unit_test(test_oom_says_largest_batch),
        cmocka_unit_test(test_small_cnn_matches_cpu),
        cmocka_unit_test(test_small_smooth_matches_cpu),
        cmocka_unit_test(test_resnet18_matches_cpu),
        cmocka_unit_test(test_mobilenet_v2_matches_cpu),
        cmocka_unit_test(test_efficientnet_b0_matches_cpu),
        cmocka_unit_test(test_vgg11_matches_cpu),
        cmocka_unit_test(test_graph_replays_train),
        cmocka_unit_test(test_layer_times_tile_the_step),
        cmocka_unit_test(test_probe),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
