/* The ONNX frontend: every built-in architecture exported by torchvision (tools/export_onnx.py)
 * counts exactly like the built-in model, transformer blocks count what their MAC formulas say,
 * symbolic dims, external weights, unknown ops, old and new opsets, and bad files that must fail
 * with a message naming what is wrong (never a crash). Fixtures: tests/data/onnx, made by
 * tools/export_onnx.py and tools/make_onnx_fixtures.py. */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DATA FM_TEST_DATA "/onnx/"
/* ONNX's own backend node tests, as Debian's libonnx-testdata installs them */
#ifndef FM_ONNX_NODE_TESTS
#define FM_ONNX_NODE_TESTS "/usr/share/libonnx-testdata/data/node"
#endif

static enum fm_status load(struct fm_ctx *ctx, const char *file, int64_t batch,
                           const struct fm_input_binding *b, size_t nb, struct fm_graph **g)
{
    struct fm_load_opts o;
    fm_load_opts_init(&o);
    if (batch) {
        o.zoo.batch = batch;
        o.batch_given = true;
    }
    o.bindings = b;
    o.n_bindings = nb;
    char path[512];
    snprintf(path, sizeof(path), DATA "%s", file);
    return fm_onnx_load_file(ctx, path, &o, g);
}

static struct fm_counts *count(struct fm_ctx *ctx, struct fm_graph *g, enum fm_mode mode)
{
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = mode;
    struct fm_counts *c = NULL;
    FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &c));
    return c;
}

static uint64_t fwd_macs(const struct fm_counts *c)
{
    return c->total[FM_PHASE_FWD].prim[FM_PRIM_MAC];
}

static bool has_op(const struct fm_graph *g, enum fm_op op)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        if (fm_graph_node(g, (fm_nid)i)->op == op)
            return true;
    }
    return false;
}

/* ---- every built-in architecture: ONNX counts = built-in counts ---- */

/* Expected differences, per class, phase and kind, added to the built-in's counts (see
 * docs/onnx.md, "What differs from the built-in models"):
 *  - Dropout: an eval-mode export has none; in training the built-in counts E cmp + E mul
 *    forward and E mul for dx.
 *  - SiLU: ONNX has no SiLU op; torch writes x * Sigmoid(x). Forward: the mul moves from the
 *    activation class to elementwise. Backward: Sigmoid's dx (1 add + 2 mul) and Mul's two
 *    input gradients (2 mul) replace SiLU's (3 add, 3 mul, 1 div, 1 special) per element.
 *  - Hardswish below opset 14: x * HardSigmoid(x). Forward: one mul moves to elementwise.
 *    Backward: HardSigmoid's (1 mul, 2 cmp) + Mul's (2 mul) replace Hardswish's (1 add,
 *    2 mul, 2 cmp) per element. */
typedef int64_t delta_t[FM_CLASS_COUNT][FM_PHASE_COUNT][FM_PRIM_COUNT];

static void expected_deltas(const struct fm_graph *g, int opset, bool train, delta_t d)
{
    memset(d, 0, sizeof(delta_t));
    enum { A = FM_CLASS_ACTIVATION, E = FM_CLASS_ELEMENTWISE, F = FM_PHASE_FWD,
           B = FM_PHASE_BWD_DATA };
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        uint64_t e;
        assert_int_equal(fm_shape_numel(&fm_graph_tensor(g, n->out[0])->shape, &e), FM_OK);
        int64_t k = (int64_t)e;
        if (n->op == FM_OP_DROPOUT && train) {
            d[E][F][FM_PRIM_CMP] -= k;
            d[E][F][FM_PRIM_MUL] -= k;
            d[E][B][FM_PRIM_MUL] -= k;
        }
        if (n->op == FM_OP_SILU) {
            d[A][F][FM_PRIM_MUL] -= k;
            d[E][F][FM_PRIM_MUL] += k;
            if (train) {
                d[A][B][FM_PRIM_ADD] -= 2 * k;
                d[A][B][FM_PRIM_MUL] -= k;
                d[A][B][FM_PRIM_DIV] -= k;
                d[A][B][FM_PRIM_SPECIAL] -= k;
                d[E][B][FM_PRIM_MUL] += 2 * k;
            }
        }
        if (n->op == FM_OP_HARDSWISH && opset < 14) {
            d[A][F][FM_PRIM_MUL] -= k;
            d[E][F][FM_PRIM_MUL] += k;
            if (train) {
                d[A][B][FM_PRIM_ADD] -= k;
                d[A][B][FM_PRIM_MUL] -= k;
                d[E][B][FM_PRIM_MUL] += 2 * k;
            }
        }
    }
}

static void compare_model(struct fm_ctx *ctx, const char *name, int opset, int64_t batch)
{
    char file[128];
    snprintf(file, sizeof(file), "%s_op%d.onnx", name, opset);
    struct fm_graph *og = NULL, *zg = NULL;
    enum fm_status st = load(ctx, file, opset >= 17 ? batch : 0, NULL, 0, &og);
    if (st)
        fail_msg("%s: %s", file, fm_ctx_error(ctx));
    struct fm_zoo_opts zo;
    fm_zoo_opts_init(&zo);
    zo.batch = batch;
    zo.with_loss = false;
    FM_ASSERT_OK(ctx, fm_zoo_build(ctx, name, &zo, &zg));
    for (int m = 0; m < 2; m++) {
        enum fm_mode mode = m ? FM_MODE_INFER : FM_MODE_TRAIN;
        struct fm_counts *oc = count(ctx, og, mode), *zc = count(ctx, zg, mode);
        assert_int_equal(oc->n_uncounted, 0);
        if (oc->params != zc->params || oc->trainable_params != zc->trainable_params)
            fail_msg("%s %s: params %llu (trainable %llu), built-in %llu (%llu)", file,
                     fm_mode_name(mode), (unsigned long long)oc->params,
                     (unsigned long long)oc->trainable_params, (unsigned long long)zc->params,
                     (unsigned long long)zc->trainable_params);
        delta_t d;
        expected_deltas(zg, opset, mode == FM_MODE_TRAIN, d);
        for (int cls = 0; cls < FM_CLASS_COUNT; cls++) {
            for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
                for (int p = 0; p < FM_PRIM_COUNT; p++) {
                    uint64_t got = oc->by_class[cls][ph].prim[p];
                    uint64_t want = zc->by_class[cls][ph].prim[p] + (uint64_t)d[cls][ph][p];
                    if (p == FM_PRIM_MAC)
                        want = zc->by_class[cls][ph].prim[p];   /* MACs: no difference at all */
                    if (got != want)
                        fail_msg("%s %s batch %lld: class %s, %s, %s: ONNX %llu, built-in %llu "
                                 "(+ expected difference %lld)",
                                 file, fm_mode_name(mode), (long long)batch,
                                 fm_class_name((enum fm_class)cls),
                                 fm_phase_name((enum fm_phase)ph), fm_prim_name((enum fm_prim)p),
                                 (unsigned long long)got,
                                 (unsigned long long)zc->by_class[cls][ph].prim[p],
                                 (long long)d[cls][ph][p]);
                }
            }
        }
        fm_counts_free(oc);
        fm_counts_free(zc);
    }
    fm_graph_free(og);
    fm_graph_free(zg);
}

static void test_zoo_equivalence(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    for (size_t i = 0; i < fm_zoo_count(); i++) {
        const char *name = fm_zoo_get(i)->name;
        compare_model(ctx, name, 13, 1);
        compare_model(ctx, name, 17, 3);   /* the symbolic batch dim bound to 3 */
    }
    fm_ctx_free(ctx);
}

/* A torchvision EVAL export folds BatchNorm into the convolutions: each BN's 2C parameters
 * become a conv bias of C. resnet18 has 4,800 BN channels (64 + 4x64 + 5x128 + 5x256 +
 * 5x512), so 11,689,512 - 4,800 parameters; conv+linear MACs stay torchvision's 1,814,073,344. */
static void test_fused_conv_bn(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, load(ctx, "resnet18_fused_op13.onnx", 0, NULL, 0, &g));
    struct fm_counts *c = count(ctx, g, FM_MODE_TRAIN);
    assert_int_equal(c->params, 11689512 - 4800);
    assert_int_equal(fwd_macs(c), 1814073344);
    assert_false(c->class_present[FM_CLASS_NORM]);
    assert_false(has_op(g, FM_OP_BATCHNORM));
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- symbolic dims ---- */

static void test_symbolic_batch(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    /* --batch binds the symbolic batch dim "N" */
    FM_ASSERT_OK(ctx, load(ctx, "resnet18_op17.onnx", 4, NULL, 0, &g));
    const struct fm_tensor *in = fm_graph_tensor(g, fm_graph_find_tensor(g, "input"));
    assert_int_equal(in->shape.dims[0], 4);
    struct fm_counts *c = count(ctx, g, FM_MODE_INFER);
    assert_int_equal(fwd_macs(c), 4ull * 1814073344ull);
    fm_counts_free(c);
    fm_graph_free(g);
    /* --input NAME=DIMS binds the whole shape */
    struct fm_input_binding b = {"input", {4, {2, 3, 224, 224}}};
    FM_ASSERT_OK(ctx, load(ctx, "resnet18_op17.onnx", 0, &b, 1, &g));
    c = count(ctx, g, FM_MODE_INFER);
    assert_int_equal(fwd_macs(c), 2ull * 1814073344ull);
    fm_counts_free(c);
    fm_graph_free(g);
    /* a symbolic dim other than the batch needs a binding, and the message says so */
    assert_int_equal(load(ctx, "symbolic.onnx", 2, NULL, 0, &g), FM_ERR_SHAPE);
    assert_non_null(strstr(fm_ctx_error(ctx), "'seq'"));
    assert_non_null(strstr(fm_ctx_error(ctx), "--input ids="));
    /* ids (2, 5) -> embedding (2, 5, 16) -> MatMul with (16, 8): 2*5*16*8 MACs */
    struct fm_input_binding ids = {"ids", {2, {2, 5}}};
    FM_ASSERT_OK(ctx, load(ctx, "symbolic.onnx", 0, &ids, 1, &g));
    c = count(ctx, g, FM_MODE_TRAIN);
    assert_int_equal(fwd_macs(c), 2 * 5 * 16 * 8);
    assert_int_equal(c->params, 100 * 16 + 16 * 8);
    assert_true(c->class_present[FM_CLASS_EMBEDDING]);
    fm_counts_free(c);
    fm_graph_free(g);
    /* the same from the command line */
    char *out = NULL, *err = NULL;
    assert_int_equal(test_run_cli("count " DATA "symbolic.onnx --input ids=2x5 --format json",
                                  &out, &err), 0);
    assert_non_null(strstr(out, "\"macs\": 1280"));
    free(out);
    free(err);
    /* a binding must name an input */
    struct fm_input_binding bad = {"nope", {2, {2, 5}}};
    assert_int_equal(load(ctx, "symbolic.onnx", 0, &bad, 1, &g), FM_ERR_INVALID);
    assert_non_null(strstr(fm_ctx_error(ctx), "nope"));
    fm_ctx_free(ctx);
}

/* ---- weights in a file that is not there ---- */

static void test_external_data(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    assert_int_not_equal(access(DATA "external_weights.bin", F_OK), 0);
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, load(ctx, "external.onnx", 0, NULL, 0, &g));
    struct fm_counts *c = count(ctx, g, FM_MODE_TRAIN);
    assert_int_equal(c->params, 32 * 64 + 64);
    assert_int_equal(fwd_macs(c), 32 * 64);
    /* dW = x^T dY: the same 32*64 MACs; the input needs no gradient */
    assert_int_equal(c->total[FM_PHASE_BWD_WEIGHT].prim[FM_PRIM_MAC], 32 * 64);
    assert_int_equal(c->total[FM_PHASE_BWD_DATA].prim[FM_PRIM_MAC], 0);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- unknown ops ---- */

static const struct fm_uncounted *uncounted(const struct fm_counts *c, const char *op)
{
    for (size_t i = 0; i < c->n_uncounted; i++) {
        if (strcmp(c->uncounted[i].op, op) == 0)
            return &c->uncounted[i];
    }
    return NULL;
}

static void test_unknown_ops(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    /* shapes from value_info (with the symbolic N bound to 3): counted around the unknowns */
    FM_ASSERT_OK(ctx, load(ctx, "unknown_vi.onnx", 3, NULL, 0, &g));
    struct fm_counts *c = count(ctx, g, FM_MODE_INFER);
    assert_non_null(uncounted(c, "com.example:FancyOp"));
    assert_non_null(uncounted(c, "Softplus"));
    assert_int_equal(c->n_uncounted, 2);
    assert_int_equal(fwd_macs(c), 3 * 8 * 4);
    const struct fm_tensor *u = fm_graph_tensor(g, fm_graph_find_tensor(g, "u"));
    assert_true(u->shape_known);
    assert_int_equal(u->shape.rank, 2);
    assert_int_equal(u->shape.dims[0], 3);
    fm_counts_free(c);
    fm_graph_free(g);
    /* no shape, but nothing reads it: listed, not an error */
    FM_ASSERT_OK(ctx, load(ctx, "unknown_side.onnx", 0, NULL, 0, &g));
    c = count(ctx, g, FM_MODE_TRAIN);
    assert_int_equal(uncounted(c, "com.example:FancyOp")->nodes, 1);
    assert_int_equal(fwd_macs(c), 8 * 4);
    fm_counts_free(c);
    fm_graph_free(g);
    /* a later shape depends on it: loading fails naming the node */
    assert_int_equal(load(ctx, "unknown_needed.onnx", 0, NULL, 0, &g), FM_ERR_UNSUPPORTED);
    assert_non_null(strstr(fm_ctx_error(ctx), "'fancy'"));
    assert_non_null(strstr(fm_ctx_error(ctx), "'mm'"));
    fm_ctx_free(ctx);
}

/* ---- transformer blocks: MACs and parameters from their dims (V 50, D 16, H 2, P 32) ---- */

static void check_block(struct fm_ctx *ctx, const char *file, int64_t b, int64_t t,
                        uint64_t params, uint64_t macs, enum fm_op must_have)
{
    struct fm_input_binding bind[2] = {{"ids", {2, {b, t}}}, {"mask", {2, {b, t}}}};
    struct fm_graph *g = NULL;
    enum fm_status st = strstr(file, "vit") ? load(ctx, file, b, NULL, 0, &g)
                        : strstr(file, "bert") ? load(ctx, file, 0, bind, 2, &g)
                                               : load(ctx, file, 0, bind, 1, &g);
    if (st)
        fail_msg("%s: %s", file, fm_ctx_error(ctx));
    struct fm_counts *c = count(ctx, g, FM_MODE_TRAIN);
    if (c->params != params || fwd_macs(c) != macs || c->n_uncounted)
        fail_msg("%s B=%lld T=%lld: params %llu (want %llu), MACs %llu (want %llu), %zu "
                 "uncounted", file, (long long)b, (long long)t, (unsigned long long)c->params,
                 (unsigned long long)params, (unsigned long long)fwd_macs(c),
                 (unsigned long long)macs, c->n_uncounted);
    assert_true(has_op(g, must_have));
    fm_counts_free(c);
    fm_graph_free(g);
}

static void test_transformer_blocks(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    const uint64_t D = 16, V = 50, H = 2, P = 32;
    const uint64_t lin = D * D + D, ln = 2 * D, mlp = (D * 4 * D + 4 * D) + (4 * D * D + D);
    for (int opset = 13; opset <= 17; opset += 4) {
        for (int64_t t = 5; t <= 8; t += 3) {
            const int64_t b = 2;
            uint64_t tok = (uint64_t)(b * t), tt = (uint64_t)t;
            /* GPT-2: qkv, two attention products (H heads of D/H), proj, MLP, tied LM head */
            uint64_t attn = 2 * (uint64_t)b * H * tt * tt * (D / H);
            uint64_t gpt2 = tok * D * 3 * D + attn + tok * D * D + 2 * tok * D * 4 * D +
                            tok * D * V;
            char f[64];
            snprintf(f, sizeof(f), "gpt2_block_op%d.onnx", opset);
            check_block(ctx, f, b, t, V * D + P * D + 3 * ln + (3 * D * D + 3 * D) + lin + mlp,
                        gpt2, opset >= 17 ? FM_OP_TRILU : FM_OP_WHERE);
            /* BERT: q, k, v, o, attention via Einsum, MLP (Erf GELU), pooler on token 0 */
            uint64_t bert = 4 * tok * D * D + attn + 2 * tok * D * 4 * D + (uint64_t)b * D * D;
            snprintf(f, sizeof(f), "bert_block_op%d.onnx", opset);
            check_block(ctx, f, b, t, V * D + P * D + 3 * ln + 4 * lin + mlp + lin, bert,
                        FM_OP_EINSUM);
        }
        /* ViT: 16 patches (4x4 conv on 3x16x16) + class token = 17 tokens, head of 10 */
        const uint64_t b = 2, n = 17, tok = b * n;
        uint64_t vit = b * 16 * D * 3 * 4 * 4 + tok * D * 3 * D + 2 * b * H * n * n * (D / H) +
                       tok * D * D + 2 * tok * D * 4 * D + b * D * 10;
        char f[64];
        snprintf(f, sizeof(f), "vit_block_op%d.onnx", opset);
        check_block(ctx, f, (int64_t)b, 0,
                    (3 * 16 * D + D) + D + n * D + 3 * ln + (3 * D * D + 3 * D) + lin + mlp +
                        (10 * D + 10),
                    vit, FM_OP_ERF);
    }
    fm_ctx_free(ctx);
}

/* ---- opsets 9, 11, 21 ---- */

static void test_opsets(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    /* Upsample (opset 9), scales 1,1,2,2 from an input: 4x4 -> 8x8, nearest: no arithmetic */
    FM_ASSERT_OK(ctx, load(ctx, "upsample_op9.onnx", 0, NULL, 0, &g));
    const struct fm_node *n = fm_graph_node(g, 0);
    assert_int_equal(n->op, FM_OP_RESIZE);
    assert_int_equal(fm_graph_tensor(g, n->out[0])->shape.dims[2], 8);
    fm_graph_free(g);
    /* Resize (opset 11) to sizes 1x2x6x8, linear over two axes: 4 taps, 4 mul + 3 add per
     * output element, 96 outputs */
    FM_ASSERT_OK(ctx, load(ctx, "resize_op11.onnx", 0, NULL, 0, &g));
    struct fm_counts *c = count(ctx, g, FM_MODE_INFER);
    assert_int_equal(c->total[FM_PHASE_FWD].prim[FM_PRIM_MUL], 4 * 96);
    assert_int_equal(c->total[FM_PHASE_FWD].prim[FM_PRIM_ADD], 3 * 96);
    fm_counts_free(c);
    fm_graph_free(g);
    /* opset 21: GroupNormalization with per-channel scale, Gelu (tanh) */
    FM_ASSERT_OK(ctx, load(ctx, "opset21.onnx", 0, NULL, 0, &g));
    c = count(ctx, g, FM_MODE_TRAIN);
    assert_int_equal(c->n_uncounted, 0);
    assert_int_equal(c->params, 8);
    assert_true(has_op(g, FM_OP_GROUPNORM) && has_op(g, FM_OP_GELU));
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- bad files ---- */

static void expect_fail(struct fm_ctx *ctx, const char *file, enum fm_status want,
                        const char *must1, const char *must2)
{
    struct fm_graph *g = NULL;
    enum fm_status st = load(ctx, file, 0, NULL, 0, &g);
    if (st != want)
        fail_msg("%s: status %s, expected %s (%s)", file, fm_status_to_string(st),
                 fm_status_to_string(want), st ? fm_ctx_error(ctx) : "loaded");
    assert_null(g);
    const char *msg = fm_ctx_error(ctx);
    if ((must1 && !strstr(msg, must1)) || (must2 && !strstr(msg, must2)))
        fail_msg("%s: message '%s' should name '%s' and '%s'", file, msg, must1 ? must1 : "",
                 must2 ? must2 : "");
}

static void test_bad_files(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    expect_fail(ctx, "bad_truncated.onnx", FM_ERR_PARSE, "not an ONNX model", NULL);
    expect_fail(ctx, "bad_random.onnx", FM_ERR_PARSE, "not an ONNX model", NULL);
    expect_fail(ctx, "bad_cyclic.onnx", FM_ERR_GRAPH, "cycle", "node '");
    expect_fail(ctx, "bad_missing_input.onnx", FM_ERR_GRAPH, "'lost'", "'nowhere'");
    expect_fail(ctx, "bad_dim_zero.onnx", FM_ERR_PARSE, "input 'x'", "dim 1 is 0");
    expect_fail(ctx, "bad_dim_negative.onnx", FM_ERR_PARSE, "initializer 'w'", "dim 0 is -4");
    expect_fail(ctx, "bad_absurd_dims.onnx", FM_ERR_PARSE, "input 'x'", "absurd");
    expect_fail(ctx, "bad_attr_type.onnx", FM_ERR_PARSE, "'conv_g'", "'group' is FLOAT");
    expect_fail(ctx, "bad_scatter_index.onnx", FM_ERR_SHAPE, "'scatter' (ScatterND)",
                "index 3 is out of range for size 3");
    /* the CLI: exit 1 and the message on stderr */
    char *out = NULL, *err = NULL;
    int rc = test_run_cli("count " DATA "bad_cyclic.onnx", &out, &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "cycle"));
    free(out);
    free(err);
    fm_ctx_free(ctx);
}

/* Shapes computed in the graph are evaluated at load time: the Slice of x.shape[2:] on a 2-D x
 * is empty and adds nothing to a Concat (PyTorch exports write this; Swin's does), and ScatterND
 * writes [2, 12] (or adds [1, 11]) at positions 0 and 2 of [1, 1, 1]. Both Reshape targets are
 * therefore [2, 1, 12], and only the two Reshapes are layers. */
static void test_folded_shapes(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = DATA "shape_scatter.onnx";
    struct fm_session *s = test_session_ok(ctx, &o);
    assert_int_equal(fm_graph_node_count(s->graph), 2);
    for (int i = 0; i < 2; i++) {
        const struct fm_node *n = fm_graph_node(s->graph, i);
        assert_int_equal(n->op, FM_OP_RESHAPE);
        const struct fm_shape *y = &fm_graph_tensor(s->graph, n->out[0])->shape;
        assert_int_equal(y->rank, 3);
        assert_int_equal(y->dims[0], 2);
        assert_int_equal(y->dims[1], 1);
        assert_int_equal(y->dims[2], 12);
    }
    fm_session_free(s);
    fm_ctx_free(ctx);
}

/* Every prefix and many corrupted copies of a real model: each load returns (an error or a
 * graph), none crashes or hangs. Under the sanitizer build this also checks memory. */
static void test_corrupted_never_crash(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    FILE *f = fopen(DATA "vit_block_op17.onnx", "rb");
    assert_non_null(f);
    static unsigned char data[1 << 16], copy[1 << 16];
    size_t n = fread(data, 1, sizeof(data), f);
    fclose(f);
    assert_true(n > 1000 && n < sizeof(data));
    struct fm_load_opts o;
    fm_load_opts_init(&o);
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_onnx_load_buffer(ctx, data, n, "vit", &o, &g));
    fm_graph_free(g);
    for (size_t len = 0; len < n; len += 97) {
        enum fm_status st = fm_onnx_load_buffer(ctx, data, len, "prefix", &o, &g);
        assert_int_not_equal(st, FM_OK);
    }
    uint64_t seed = 42;
    int failed = 0;
    for (int i = 0; i < 400; i++) {
        memcpy(copy, data, n);
        for (int k = 0; k < 1 + i % 4; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            copy[(seed >> 33) % n] = (unsigned char)(seed >> 17);
        }
        g = NULL;
        if (fm_onnx_load_buffer(ctx, copy, n, "mutant", &o, &g) == FM_OK) {
            struct fm_count_opts co;
            fm_count_opts_init(&co);
            struct fm_counts *c = NULL;
            if (fm_count(ctx, g, &co, &c) == FM_OK)
                fm_counts_free(c);
            fm_graph_free(g);
        } else {
            failed++;
        }
    }
    assert_true(failed > 0);   /* the corruption did reach the parser */
    fm_ctx_free(ctx);
}

/* Files other people made: ONNX's backend node tests of the trigonometric and rounding ops
 * (models written by ONNX's own test generator, opsets 7 to 13). One node on a graph input:
 * the forward only, E elements of fp32: Sin/Cos/Tan 1 special each, Floor/Ceil/Round/Sign 1
 * cmp each (src/ops/trig.c); X read and Y written once. Training adds nothing: the input needs
 * no gradient and no parameter reaches the output, so there is no loss to add either. */
static void test_node_tests_trig(void **state)
{
    (void)state;
    if (access(FM_ONNX_NODE_TESTS "/test_sin/model.onnx", R_OK) != 0) {
        printf("skipped: ONNX's node tests are not installed (Debian's libonnx-testdata; make "
               "deps installs it)\n");
        skip();
    }
    const struct {
        const char *dir;
        enum fm_op op;
        enum fm_prim prim;
        uint64_t elements;
    } cases[] = {
        {"test_sin", FM_OP_SIN, FM_PRIM_SPECIAL, 60},
        {"test_sin_example", FM_OP_SIN, FM_PRIM_SPECIAL, 3},
        {"test_cos", FM_OP_COS, FM_PRIM_SPECIAL, 60},
        {"test_cos_example", FM_OP_COS, FM_PRIM_SPECIAL, 3},
        {"test_tan", FM_OP_TAN, FM_PRIM_SPECIAL, 60},
        {"test_tan_example", FM_OP_TAN, FM_PRIM_SPECIAL, 3},
        {"test_floor", FM_OP_FLOOR, FM_PRIM_CMP, 60},
        {"test_floor_example", FM_OP_FLOOR, FM_PRIM_CMP, 3},
        {"test_ceil", FM_OP_CEIL, FM_PRIM_CMP, 60},
        {"test_ceil_example", FM_OP_CEIL, FM_PRIM_CMP, 2},
        {"test_round", FM_OP_ROUND, FM_PRIM_CMP, 15},
        {"test_sign", FM_OP_SIGN, FM_PRIM_CMP, 11},
    };
    struct fm_ctx *ctx = test_ctx();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s/model.onnx", FM_ONNX_NODE_TESTS, cases[i].dir);
        for (int mode = 0; mode < FM_MODE_COUNT; mode++) {
            struct fm_session_opts o;
            fm_session_opts_init(&o, FM_TASK_WORK);
            o.model = path;
            o.count.mode = (enum fm_mode)mode;
            struct fm_session *s = NULL;
            enum fm_status st = fm_session_run(ctx, &o, &s);
            if (st)
                fail_msg("%s: %s", cases[i].dir, fm_ctx_error(ctx));
            assert_int_equal(fm_graph_node_count(s->graph), 1);
            assert_int_equal(fm_graph_node(s->graph, 0)->op, cases[i].op);
            assert_int_equal(s->counts->n_uncounted, 0);
            const struct fm_work *f = &s->counts->total[FM_PHASE_FWD];
            for (int p = 0; p < FM_PRIM_COUNT; p++)
                assert_int_equal(f->prim[p], p == (int)cases[i].prim ? cases[i].elements : 0);
            assert_int_equal(fm_work_flops(f), cases[i].elements);
            assert_int_equal(f->bytes_read, 4 * cases[i].elements);
            assert_int_equal(f->bytes_written, 4 * cases[i].elements);
            for (int p = FM_PHASE_BWD_DATA; p < FM_PHASE_COUNT; p++)
                assert_int_equal(fm_work_flops(&s->counts->total[p]), 0);
            assert_int_equal(s->loss.n, 0);
            fm_session_free(s);
        }
    }
    fm_ctx_free(ctx);
}

/* ---- opsets 1 to 6 ---- */

static const struct fm_shape *out_shape(const struct fm_graph *g, const char *name)
{
    fm_tid t = fm_graph_find_tensor(g, name);
    if (t == FM_NONE)
        fail_msg("no tensor '%s'", name);
    return &fm_graph_tensor(g, t)->shape;
}

static void assert_dims(const struct fm_shape *s, int rank, const int64_t *dims)
{
    assert_int_equal(s->rank, rank);
    for (int d = 0; d < rank; d++)
        assert_int_equal(s->dims[d], dims[d]);
}

/* Old forms, from ONNX's operator changelog (tools/make_old_opset_fixtures.py): attributes that
 * later became inputs, the binary ops' broadcast axis, and what is refused by op and version.
 * Then files other people made: ONNX's node tests and PyTorch's converted modules stamped
 * opset 1 or 6 (Debian's libonnx-testdata), each output's dims those of its
 * test_data_set_0/output_0.pb. */
static void test_old_opsets(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    /* opset 1, x (2,3,4,4): Reshape-1 shape=[2,3,16]; Pad-1 paddings [0,0,1 | 0,0,2]: 16+1+2 =
     * 19; Concat-1 default axis 1: 3+3 = 6; Split-1 sizes [2,4] from its second input;
     * Upsample-1 height 4*2 = 8, width 4*3 = 12; Cast-1 to "INT64" */
    FM_ASSERT_OK(ctx, load(ctx, "old_opset1.onnx", 0, NULL, 0, &g));
    assert_dims(out_shape(g, "r"), 3, (const int64_t[]){2, 3, 16});
    assert_dims(out_shape(g, "p"), 3, (const int64_t[]){2, 3, 19});
    assert_dims(out_shape(g, "c"), 3, (const int64_t[]){2, 6, 19});
    assert_dims(out_shape(g, "s1"), 3, (const int64_t[]){2, 2, 19});
    assert_dims(out_shape(g, "s2"), 3, (const int64_t[]){2, 4, 19});
    assert_dims(out_shape(g, "u"), 4, (const int64_t[]){2, 3, 8, 12});
    assert_dims(out_shape(g, "k"), 4, (const int64_t[]){2, 3, 4, 4});
    assert_int_equal(fm_graph_tensor(g, fm_graph_find_tensor(g, "k"))->dtype, FM_DTYPE_INT64);
    struct fm_counts *c = count(ctx, g, FM_MODE_INFER);
    assert_int_equal(c->n_uncounted, 0);
    fm_counts_free(c);
    fm_graph_free(g);
    /* opset 6: x (2,3,4,5) + b (3,4) at axis 1, then * s (2) at axis 0: E = 2*3*4*5 = 120 adds
     * and 120 muls forward (numpy's rule would have refused both); params 3*4 + 2 = 14 */
    FM_ASSERT_OK(ctx, load(ctx, "old_opset6_broadcast.onnx", 0, NULL, 0, &g));
    assert_dims(out_shape(g, "y"), 4, (const int64_t[]){2, 3, 4, 5});
    c = count(ctx, g, FM_MODE_TRAIN);
    assert_int_equal(c->n_uncounted, 0);
    assert_int_equal(c->total[FM_PHASE_FWD].prim[FM_PRIM_ADD], 120);
    assert_int_equal(c->total[FM_PHASE_FWD].prim[FM_PRIM_MUL], 120);
    assert_int_equal(c->params, 14);
    fm_counts_free(c);
    fm_graph_free(g);
    /* refused, naming the op and the version */
    expect_fail(ctx, "bad_old_tile1.onnx", FM_ERR_UNSUPPORTED, "'tile' (Tile)", "Tile-1 (opset 1)");
    expect_fail(ctx, "bad_old_bn_spatial.onnx", FM_ERR_UNSUPPORTED, "BatchNormalization-6",
                "spatial=0");
    expect_fail(ctx, "bad_old_add_shapes.onnx", FM_ERR_SHAPE, "Add at opset 6",
                "broadcast=1");
    expect_fail(ctx, "bad_old_cast_name.onnx", FM_ERR_PARSE, "Cast-1 (opset 5)", "'REAL'");

    if (access(FM_ONNX_NODE_TESTS "/test_not_2d/model.onnx", R_OK) != 0) {
        printf("skipped: ONNX's node tests are not installed (Debian's libonnx-testdata; make "
               "deps installs it)\n");
        fm_ctx_free(ctx);
        return;
    }
    const struct {
        const char *dir, *out;   /* under FM_ONNX_NODE_TESTS/.. */
        int rank;
        int64_t dims[4];
    } cases[] = {
        {"node/test_globalaveragepool", "y", 4, {1, 3, 1, 1}},              /* opset 1 */
        {"node/test_globalmaxpool", "y", 4, {1, 3, 1, 1}},                  /* opset 1 */
        {"node/test_not_2d", "not", 2, {3, 4}},                             /* opset 1 */
        {"node/test_hardsigmoid", "y", 3, {3, 4, 5}},                       /* opset 6 */
        {"node/test_instancenorm_epsilon", "y", 4, {2, 3, 4, 5}},           /* opset 6 */
        {"pytorch-converted/test_PReLU_2d_multiparam", "2", 4, {2, 3, 4, 5}},
        {"pytorch-converted/test_PReLU_1d_multiparam", "2", 3, {2, 3, 4}},
        {"pytorch-operator/test_operator_add_size1_broadcast", "2", 2, {2, 3}},
        {"pytorch-converted/test_ConstantPad2d", "1", 4, {2, 3, 11, 7}},    /* Pad-2 pads */
        {"pytorch-converted/test_BatchNorm2d_eval", "5", 4, {2, 3, 6, 6}},  /* is_test */
        {"pytorch-operator/test_operator_chunk", "1", 1, {2}},              /* Split-2 */
        {"pytorch-converted/test_PixelShuffle", "5", 4, {1, 1, 12, 12}},
        {"pytorch-converted/test_ConvTranspose2d", "3", 4, {1, 4, 20, 12}},
        {"pytorch-converted/test_AvgPool2d_stride", "1", 4, {2, 3, 3, 3}},
        {"pytorch-converted/test_Linear", "3", 2, {4, 8}},                  /* Gemm-6 */
        {"pytorch-operator/test_operator_index", "2", 1, {1}},              /* Slice-1 */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/../%s/model.onnx", FM_ONNX_NODE_TESTS, cases[i].dir);
        struct fm_load_opts o;
        fm_load_opts_init(&o);
        g = NULL;
        if (fm_onnx_load_file(ctx, path, &o, &g))
            fail_msg("%s: %s", cases[i].dir, fm_ctx_error(ctx));
        assert_dims(out_shape(g, cases[i].out), cases[i].rank, cases[i].dims);
        c = count(ctx, g, FM_MODE_INFER);
        assert_int_equal(c->n_uncounted, 0);
        if (strstr(cases[i].dir, "PReLU_2d")) {
            /* the slope (3) is per channel at opset 6: E = 2*3*4*5 = 120 cmp and 120 mul */
            assert_int_equal(c->total[FM_PHASE_FWD].prim[FM_PRIM_CMP], 120);
            assert_int_equal(c->total[FM_PHASE_FWD].prim[FM_PRIM_MUL], 120);
        }
        fm_counts_free(c);
        fm_graph_free(g);
    }
    fm_ctx_free(ctx);
}

/* ONNX's own node tests (and PyTorch's converted modules) of ConvTranspose and the windowed
 * pools, in inference mode: the output dims are those of test_data_set_0/output_N.pb, the
 * forward counts follow src/ops/conv.c and src/ops/pool.c:
 *   ConvTranspose: N*Cin*H*W*(Cout/g)*kh*kw MACs, no bias here; X (1,1,3,3), W (1,2,3,3):
 *                  1*1*3*3*2*3*3 = 162 whatever the strides, pads or output_shape
 *   max:  (k-1) cmp per output; avg: (k-1) add + 1 div per output */
static void test_node_tests_windows(void **state)
{
    (void)state;
    if (access(FM_ONNX_NODE_TESTS "/test_convtranspose/model.onnx", R_OK) != 0) {
        printf("skipped: ONNX's node tests are not installed (Debian's libonnx-testdata; make "
               "deps installs it)\n");
        skip();
    }
    const struct {
        const char *dir;        /* under FM_ONNX_NODE_TESTS/.. */
        const char *out[2];     /* the second: MaxPool's Indices, or NULL */
        int rank;
        int64_t dims[5];
        uint64_t mac, add, div, cmp;
    } cases[] = {
        {"node/test_convtranspose", {"Y"}, 4, {1, 2, 5, 5}, 162, 0, 0, 0},
        /* 1-D: 1*1*3 * 2*3 = 18 */
        {"node/test_convtranspose_1d", {"Y"}, 3, {1, 2, 5}, 18, 0, 0, 0},
        /* SAME_UPPER, strides 2: 3*2 = 6 */
        {"node/test_convtranspose_autopad_same", {"Y"}, 4, {1, 2, 6, 6}, 162, 0, 0, 0},
        /* W (1,1,2,2), dilation 2: 1*1*3*3 * 1*2*2 = 36; (3-1) + 2*(2-1) + 1 = 5 */
        {"node/test_convtranspose_dilations", {"Y"}, 4, {1, 1, 5, 5}, 36, 0, 0, 0},
        /* output_shape [10,8], strides [3,2]: total padding 3*2 + 3 - 10 = -1 and 2*2 + 3 - 8
         * = -1, an extra row and column */
        {"node/test_convtranspose_output_shape", {"Y"}, 4, {1, 2, 10, 8}, 162, 0, 0, 0},
        /* output_shape with output_padding [1,1]: total 3*2 + 1 + 3 - 10 = 0 */
        {"node/test_convtranspose_kernel_shape", {"Y"}, 4, {1, 2, 10, 8}, 162, 0, 0, 0},
        {"node/test_convtranspose_with_kernel", {"y"}, 4, {1, 2, 10, 8}, 162, 0, 0, 0},
        /* output_padding [1,1]: 3*2 + 3 + 1 = 10, 2*2 + 3 + 1 = 8 */
        {"node/test_convtranspose_pad", {"Y"}, 4, {1, 2, 10, 8}, 162, 0, 0, 0},
        /* pads [1,2,1,2]: 9 - 2 = 7, 7 - 4 = 3 */
        {"node/test_convtranspose_pads", {"Y"}, 4, {1, 2, 7, 3}, 162, 0, 0, 0},
        /* opset 6, X (2,3,4,5), W (3,3,3,3), strides 3, pads 1, output_padding 2:
         * 3*3 + 3 - 2 + 2 = 12, 3*4 + 3 - 2 + 2 = 15; 2*3*4*5 * 3*3*3 = 3240 MACs */
        {"pytorch-operator/test_operator_convtranspose", {"2"}, 4, {2, 3, 12, 15}, 3240, 0, 0,
         0},
        /* 1-D, X (1,3,32), k=2: 31 outputs per row, O = 93 */
        {"node/test_maxpool_1d_default", {"y"}, 3, {1, 3, 31}, 0, 0, 0, 93},
        {"node/test_averagepool_1d_default", {"y"}, 3, {1, 3, 31}, 0, 93, 93, 0},
        /* opset 6, X (2,10,4), k=4, s=4: O = 20, 3 cmp each */
        {"pytorch-converted/test_MaxPool1d", {"1"}, 3, {2, 10, 1}, 0, 0, 0, 60},
        /* X (1,1,220000), k=200, dilation 10, pads 100, s=10: span 1991,
         * (220000 + 200 - 1991)/10 + 1 = 21821 outputs, 199 cmp each */
        {"pytorch-converted/test_MaxPool1d_stride_padding_dilation", {"Y"}, 3, {1, 1, 21821}, 0,
         0, 0, 21821ull * 199},
        /* pads 2 with k=3: 28 + 4 - 3 + 1 = 30; O = 3*30*30 = 2700, 8 cmp (or add) each */
        {"node/test_maxpool_2d_pads", {"y"}, 4, {1, 3, 30, 30}, 0, 0, 0, 2700 * 8},
        {"node/test_averagepool_2d_pads", {"y"}, 4, {1, 3, 30, 30}, 0, 2700 * 8, 2700, 0},
        {"node/test_averagepool_2d_pads_count_include_pad", {"y"}, 4, {1, 3, 30, 30}, 0,
         2700 * 8, 2700, 0},
        /* k=2, dilation 2 on 4x4: span 3, 2x2 outputs, 3 cmp each */
        {"node/test_maxpool_2d_dilations", {"y"}, 4, {1, 1, 2, 2}, 0, 0, 0, 4 * 3},
        /* ceil mode, k=3, s=2 on 4x4: ceil(1/2) + 1 = 2 */
        {"node/test_maxpool_2d_ceil", {"y"}, 4, {1, 1, 2, 2}, 0, 0, 0, 4 * 8},
        {"node/test_averagepool_2d_ceil", {"y"}, 4, {1, 1, 2, 2}, 0, 4 * 8, 4, 0},
        /* with the argmax: k=5, pads 2 on 5x5: 25 outputs, 24 cmp each, and the indices */
        {"node/test_maxpool_with_argmax_2d_precomputed_pads", {"y", "z"}, 4, {1, 1, 5, 5}, 0, 0,
         0, 25 * 24},
        /* k=2, s=2 on 5x5: 2x2 outputs, 3 cmp each */
        {"node/test_maxpool_with_argmax_2d_precomputed_strides", {"y", "z"}, 4, {1, 1, 2, 2}, 0,
         0, 0, 4 * 3},
        /* 3-D: X (1,1,3,4,5), W (1,2,3,3,3): 1*1*3*4*5 * 2*27 = 3240 */
        {"node/test_convtranspose_3d", {"Y"}, 5, {1, 2, 5, 6, 7}, 3240, 0, 0, 0},
        /* X (1,3,32,32,32), k=2x2x2: O = 3*31^3 = 89373, 7 cmp (or add) each */
        {"node/test_maxpool_3d_default", {"y"}, 5, {1, 3, 31, 31, 31}, 0, 0, 0, 89373 * 7},
        {"node/test_averagepool_3d_default", {"y"}, 5, {1, 3, 31, 31, 31}, 0, 89373 * 7, 89373,
         0},
        /* opset 6, X (2,3,5,5,5), W (4,3,2,2,2), bias: dilation 2, stride 2: (5 - 3)/2 + 1 = 2;
         * O = 2*4*8 = 64, 64 * 3*8 = 1536 MACs, 64 bias adds */
        {"pytorch-converted/test_Conv3d_dilated_strided", {"3"}, 5, {2, 4, 2, 2, 2}, 1536, 64, 0,
         0},
        /* X (2,4,4,5,4), W (6,2,3,3,3), 2 groups: O = 2*6*2*3*2 = 144, 144 * 2*27 = 7776 */
        {"pytorch-converted/test_Conv3d_groups", {"3"}, 5, {2, 6, 2, 3, 2}, 7776, 144, 0, 0},
        /* pads 1, stride 2: (5 + 2 - 2)/2 + 1 = 3; O = 2*4*27 = 216, 216 * 3*8 = 5184 */
        {"pytorch-converted/test_Conv3d_stride_padding", {"3"}, 5, {2, 4, 3, 3, 3}, 5184, 216, 0,
         0},
        /* X (2,3,5,5,5), k=2, s=2: O = 2*3*8 = 48, 7 adds + 1 div each */
        {"pytorch-converted/test_AvgPool3d_stride", {"1"}, 5, {2, 3, 2, 2, 2}, 0, 48 * 7, 48, 0},
        /* pads 1: (5 + 2 - 2)/2 + 1 = 3: O = 2*3*27 = 162, 7 cmp each */
        {"pytorch-converted/test_MaxPool3d_stride_padding", {"1"}, 5, {2, 3, 3, 3, 3}, 0, 0, 0,
         162 * 7},
    };
    struct fm_ctx *ctx = test_ctx();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/../%s/model.onnx", FM_ONNX_NODE_TESTS, cases[i].dir);
        struct fm_load_opts o;
        fm_load_opts_init(&o);
        struct fm_graph *g = NULL;
        if (fm_onnx_load_file(ctx, path, &o, &g))
            fail_msg("%s: %s", cases[i].dir, fm_ctx_error(ctx));
        for (int k = 0; k < 2 && cases[i].out[k]; k++) {
            fm_tid t = fm_graph_find_tensor(g, cases[i].out[k]);
            assert_int_not_equal(t, FM_NONE);
            assert_dims(&fm_graph_tensor(g, t)->shape, cases[i].rank, cases[i].dims);
            if (k == 1)
                assert_int_equal(fm_graph_tensor(g, t)->dtype, FM_DTYPE_INT64);
        }
        struct fm_counts *c = count(ctx, g, FM_MODE_INFER);
        assert_int_equal(c->n_uncounted, 0);
        const struct fm_work *f = &c->total[FM_PHASE_FWD];
        if (f->prim[FM_PRIM_MAC] != cases[i].mac || f->prim[FM_PRIM_ADD] != cases[i].add ||
            f->prim[FM_PRIM_DIV] != cases[i].div || f->prim[FM_PRIM_CMP] != cases[i].cmp ||
            f->prim[FM_PRIM_MUL] || f->prim[FM_PRIM_SPECIAL])
            fail_msg("%s: mac %llu add %llu div %llu cmp %llu", cases[i].dir,
                     (unsigned long long)f->prim[FM_PRIM_MAC],
                     (unsigned long long)f->prim[FM_PRIM_ADD],
                     (unsigned long long)f->prim[FM_PRIM_DIV],
                     (unsigned long long)f->prim[FM_PRIM_CMP]);
        fm_counts_free(c);
        fm_graph_free(g);
    }
    fm_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zoo_equivalence),
        cmocka_unit_test(test_fused_conv_bn),
        cmocka_unit_test(test_symbolic_batch),
        cmocka_unit_test(test_external_data),
        cmocka_unit_test(test_unknown_ops),
        cmocka_unit_test(test_transformer_blocks),
        cmocka_unit_test(test_opsets),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_corrupted_never_crash),
        cmocka_unit_test(test_node_tests_trig),
        cmocka_unit_test(test_folded_shapes),
        cmocka_unit_test(test_old_opsets),
        cmocka_unit_test(test_node_tests_windows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
