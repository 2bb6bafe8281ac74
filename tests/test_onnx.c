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

/* ONNX's backend node tests of LSTM, GRU and RNN (opset 14, written by ONNX's test generator):
 * one node, all operands graph inputs (no parameter, so no backward), default activations.
 * The output dims are those of the tests' test_data_set_0/output_N.pb (Y_h, and Y where the
 * node writes it). Forward counts, per src/ops/rnn.c and docs/counting.md, with S = N*T
 * row-steps (one direction), G gates, b = 1 with B, p = 1 with P:
 *   mac = S*G*H*(I+H)
 *   per hidden unit and row-step (x S*H): the G sums of the two products, 2G bias adds (b),
 *   sigmoid = 1 add + 1 div + 1 special, tanh = 1 special;
 *   LSTM: 3 sigmoid, 2 tanh, 3 mul + 1 add (cell, output), peepholes 3 mul + 3 add (p)
 *   GRU:  2 sigmoid, 1 tanh, 3 mul + 2 add (r*, (1-z)*h~ + z*H)
 *   RNN:  1 tanh
 * test_lstm_with_peepholes binds sequence_lens [1, 1] as a graph input, unknown at load time:
 * full length assumed, which is the same here (T = 1). */
static void test_node_tests_rnn(void **state)
{
    (void)state;
    if (access(FM_ONNX_NODE_TESTS "/test_lstm_defaults/model.onnx", R_OK) != 0) {
        printf("skipped: ONNX's node tests are not installed (Debian's libonnx-testdata)\n");
        skip();
    }
    const struct {
        const char *dir;
        enum fm_op op;
        int64_t t, n, i, h;
        int b, p;
        const char *out;      /* the output the test data holds last */
        int rank;
        int64_t dims[4];      /* its dims, from output_N.pb */
        int64_t y_dims[4];    /* Y's dims (batchwise tests write Y too), rank 4 */
    } cases[] = {
        {"test_lstm_defaults", FM_OP_LSTM, 1, 3, 2, 3, 0, 0, "Y_h", 3, {1, 3, 3}, {0}},
        {"test_lstm_with_initial_bias", FM_OP_LSTM, 1, 3, 3, 4, 1, 0, "Y_h", 3, {1, 3, 4}, {0}},
        {"test_lstm_with_peepholes", FM_OP_LSTM, 1, 2, 4, 3, 1, 1, "Y_h", 3, {1, 2, 3}, {0}},
        {"test_lstm_batchwise", FM_OP_LSTM, 1, 3, 2, 7, 0, 0, "Y_h", 3, {3, 1, 7}, {3, 1, 1, 7}},
        {"test_gru_defaults", FM_OP_GRU, 1, 3, 2, 5, 0, 0, "Y_h", 3, {1, 3, 5}, {0}},
        {"test_gru_with_initial_bias", FM_OP_GRU, 1, 3, 3, 3, 1, 0, "Y_h", 3, {1, 3, 3}, {0}},
        {"test_gru_seq_length", FM_OP_GRU, 2, 3, 3, 5, 1, 0, "Y_h", 3, {1, 3, 5}, {0}},
        {"test_gru_batchwise", FM_OP_GRU, 1, 3, 2, 6, 0, 0, "Y_h", 3, {3, 1, 6}, {3, 1, 1, 6}},
        {"test_rnn_seq_length", FM_OP_RNN, 2, 3, 3, 5, 1, 0, "Y_h", 3, {1, 3, 5}, {0}},
        {"test_simple_rnn_defaults", FM_OP_RNN, 1, 3, 2, 4, 0, 0, "Y_h", 3, {1, 3, 4}, {0}},
        {"test_simple_rnn_with_initial_bias", FM_OP_RNN, 1, 3, 3, 5, 1, 0, "Y_h", 3, {1, 3, 5},
         {0}},
        {"test_simple_rnn_batchwise", FM_OP_RNN, 1, 3, 2, 4, 0, 0, "Y_h", 3, {3, 1, 4},
         {3, 1, 1, 4}},
    };
    struct fm_ctx *ctx = test_ctx();
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s/model.onnx", FM_ONNX_NODE_TESTS, cases[c].dir);
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_WORK);
        o.model = path;
        o.count.mode = FM_MODE_TRAIN;
        struct fm_session *s = NULL;
        if (fm_session_run(ctx, &o, &s))
            fail_msg("%s: %s", cases[c].dir, fm_ctx_error(ctx));
        const struct fm_graph *g = s->graph;
        assert_int_equal(fm_graph_node_count(g), 1);
        assert_int_equal(fm_graph_node(g, 0)->op, cases[c].op);
        assert_int_equal(s->counts->n_uncounted, 0);
        fm_tid yh = fm_graph_find_tensor(g, cases[c].out);
        assert_true(yh != FM_NONE);
        const struct fm_shape *sh = &fm_graph_tensor(g, yh)->shape;
        assert_int_equal(sh->rank, cases[c].rank);
        for (int k = 0; k < sh->rank; k++)
            assert_int_equal(sh->dims[k], cases[c].dims[k]);
        if (cases[c].y_dims[0]) {
            const struct fm_shape *y = &fm_graph_tensor(g, fm_graph_find_tensor(g, "Y"))->shape;
            assert_int_equal(y->rank, 4);
            for (int k = 0; k < 4; k++)
                assert_int_equal(y->dims[k], cases[c].y_dims[k]);
        }
        uint64_t t = (uint64_t)cases[c].t, n = (uint64_t)cases[c].n, i = (uint64_t)cases[c].i,
                 h = (uint64_t)cases[c].h, b = (uint64_t)cases[c].b, p = (uint64_t)cases[c].p;
        uint64_t gates = cases[c].op == FM_OP_LSTM ? 4 : cases[c].op == FM_OP_GRU ? 3 : 1;
        uint64_t sig = cases[c].op == FM_OP_LSTM ? 3 : cases[c].op == FM_OP_GRU ? 2 : 0;
        uint64_t tanh_ = cases[c].op == FM_OP_RNN ? 1 : cases[c].op == FM_OP_GRU ? 1 : 2;
        uint64_t cell_mul = cases[c].op == FM_OP_RNN ? 0 : 3 + 3 * p;
        uint64_t cell_add = cases[c].op == FM_OP_LSTM ? 1 + 3 * p
                            : cases[c].op == FM_OP_GRU ? 2 : 0;
        uint64_t sh_ = n * t * h;   /* S*H */
        const struct fm_work *f = &s->counts->total[FM_PHASE_FWD];
        assert_int_equal(f->prim[FM_PRIM_MAC], n * t * gates * h * (i + h));
        assert_int_equal(f->prim[FM_PRIM_ADD], sh_ * (gates + 2 * gates * b + sig + cell_add));
        assert_int_equal(f->prim[FM_PRIM_MUL], sh_ * cell_mul);
        assert_int_equal(f->prim[FM_PRIM_DIV], sh_ * sig);
        assert_int_equal(f->prim[FM_PRIM_CMP], 0);
        assert_int_equal(f->prim[FM_PRIM_SPECIAL], sh_ * (sig + tanh_));
        for (int ph = FM_PHASE_BWD_DATA; ph < FM_PHASE_COUNT; ph++)
            assert_int_equal(fm_work_flops(&s->counts->total[ph]), 0);
        fm_session_free(s);
    }
    fm_ctx_free(ctx);
}

/* PyTorch's nn.LSTM, nn.GRU and nn.RNN exported at opset 14 by tools/export_rnn_models.py
 * (T = 5 steps, batch N = 2, input I = 4; the dims below are that script's). The exporter
 * writes one ONNX node per layer, the zero initial states as Expand of a constant, the
 * directions joined by Transpose + Reshape, batch_first by Transposes. Counted in training
 * (MSE loss added, X needs no gradient) and compared, in the MATMUL class (the recurrent nodes
 * only), with the formulas of src/ops/rnn.c, per layer l with I_0 = I, I_l = D*H after, and
 * S = T*N row-steps, G = 4/3/1:
 *   MACs, from PyTorch's documented cells (each gate: W_i* x + b_i* + W_h* h + b_h*):
 *     forward S*D*G*H*(I_l + H); the script runs each cell from those equations on the
 *     module's weights, checks it reproduces the module, and counts the same MACs
 *     bwd_data  S*D*G*H*H (through time) + S*D*G*H*I_l for l > 0 (dX; layer 0 reads the input)
 *     bwd_weight S*D*G*H*(I_l + H) (dW, dR)
 *   per hidden unit and row-step (x S*D*H), B given, default activations, PyTorch's GRU with
 *   linear_before_reset = 1:
 *     forward  LSTM add 4 + 8 + 1 + 3 (sigmoids) = 16, mul 3, div 3, special 5
 *              GRU  add 3 + 6 + 2 + 2 = 13, mul 3, div 2, special 3
 *              RNN  add 3, tanh: special 1 | relu: cmp 1
 *     bwd_data LSTM add 1 + 1 (dC) + tanh' 1 + 3 sigmoid' + tanh' 1 = 7,
 *                   mul 6 + 2 + 3*2 + 2 = 16, special 1 (tanh(C_t) recomputed)
 *              GRU  add 1 + 2 + 1 (lbr 1) + 2 sigmoid' + tanh' 1 = 7, mul 3 + 2 + 4 + 2 = 11
 *              RNN  add 1 + tanh' (1 add, 2 mul) | relu' (1 cmp)
 *              and with D = 2 the two directions' dX summed for l > 0: S*I_l add
 *     bwd_weight dB: S*D*G*H add, GRU (lbr 1) S*D*H more
 *   parameters: PyTorch's own count, D*G*H*(I_l + H + 2) per layer. */
static void test_pytorch_rnns(void **state)
{
    (void)state;
    enum { T = 5, N = 2, I = 4, S = T * N };
    const struct {
        const char *file;
        enum fm_op op;
        uint64_t h, layers, d;
        bool relu;
    } cases[] = {
        {"rnn_lstm2_bi_op14.onnx", FM_OP_LSTM, 8, 2, 2, false},
        {"rnn_lstm_bf_op14.onnx", FM_OP_LSTM, 8, 1, 1, false},
        {"rnn_gru2_bi_op14.onnx", FM_OP_GRU, 12, 2, 2, false},
        {"rnn_gru_bf_op14.onnx", FM_OP_GRU, 8, 1, 1, false},
        {"rnn_tanh2_op14.onnx", FM_OP_RNN, 8, 2, 1, false},
        {"rnn_relu_bi_bf_op14.onnx", FM_OP_RNN, 8, 1, 2, true},
    };
    struct fm_ctx *ctx = test_ctx();
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        uint64_t h = cases[c].h, d = cases[c].d;
        bool lstm = cases[c].op == FM_OP_LSTM, gru = cases[c].op == FM_OP_GRU;
        uint64_t g = lstm ? 4 : gru ? 3 : 1;
        uint64_t want[FM_PHASE_COUNT][FM_PRIM_COUNT] = {{0}}, params = 0;
        uint64_t fwd_el[FM_PRIM_COUNT] = {0}, bwd_el[FM_PRIM_COUNT] = {0};
        if (lstm) {
            fwd_el[FM_PRIM_ADD] = 16, fwd_el[FM_PRIM_MUL] = 3, fwd_el[FM_PRIM_DIV] = 3;
            fwd_el[FM_PRIM_SPECIAL] = 5;
            bwd_el[FM_PRIM_ADD] = 7, bwd_el[FM_PRIM_MUL] = 16, bwd_el[FM_PRIM_SPECIAL] = 1;
        } else if (gru) {
            fwd_el[FM_PRIM_ADD] = 13, fwd_el[FM_PRIM_MUL] = 3, fwd_el[FM_PRIM_DIV] = 2;
            fwd_el[FM_PRIM_SPECIAL] = 3;
            bwd_el[FM_PRIM_ADD] = 7, bwd_el[FM_PRIM_MUL] = 11;
        } else {
            fwd_el[FM_PRIM_ADD] = 3;
            fwd_el[cases[c].relu ? FM_PRIM_CMP : FM_PRIM_SPECIAL] = 1;
            bwd_el[FM_PRIM_ADD] = cases[c].relu ? 1 : 2;
            bwd_el[cases[c].relu ? FM_PRIM_CMP : FM_PRIM_MUL] = cases[c].relu ? 1 : 2;
        }
        for (uint64_t l = 0; l < cases[c].layers; l++) {
            uint64_t il = l == 0 ? I : d * h, sdh = S * d * h;
            want[FM_PHASE_FWD][FM_PRIM_MAC] += S * d * g * h * (il + h);
            want[FM_PHASE_BWD_DATA][FM_PRIM_MAC] += S * d * g * h * h + (l ? S * d * g * h * il : 0);
            if (l && d == 2)
                want[FM_PHASE_BWD_DATA][FM_PRIM_ADD] += S * il;
            want[FM_PHASE_BWD_WEIGHT][FM_PRIM_MAC] += S * d * g * h * (il + h);
            want[FM_PHASE_BWD_WEIGHT][FM_PRIM_ADD] += sdh * (g + (gru ? 1 : 0));
            for (int p = FM_PRIM_ADD; p < FM_PRIM_COUNT; p++) {
                want[FM_PHASE_FWD][p] += sdh * fwd_el[p];
                want[FM_PHASE_BWD_DATA][p] += sdh * bwd_el[p];
            }
            params += d * g * h * (il + h + 2);
        }
        struct fm_graph *gr = NULL;
        if (load(ctx, cases[c].file, 0, NULL, 0, &gr))
            fail_msg("%s: %s", cases[c].file, fm_ctx_error(ctx));
        assert_true(has_op(gr, cases[c].op));
        for (int m = 0; m < 2; m++) {
            struct fm_counts *k = count(ctx, gr, m ? FM_MODE_INFER : FM_MODE_TRAIN);
            assert_int_equal(k->n_uncounted, 0);
            assert_int_equal(k->params, params);
            for (int ph = 0; ph < FM_PHASE_OPTIMIZER; ph++) {   /* the update is SGD's */
                for (int p = 0; p < FM_PRIM_COUNT; p++) {
                    uint64_t got = k->by_class[FM_CLASS_MATMUL][ph].prim[p];
                    uint64_t w = m && ph != FM_PHASE_FWD ? 0 : want[ph][p];
                    if (got != w)
                        fail_msg("%s %s: %s %s: %llu, expected %llu", cases[c].file,
                                 m ? "inference" : "training", fm_phase_name((enum fm_phase)ph),
                                 fm_prim_name((enum fm_prim)p), (unsigned long long)got,
                                 (unsigned long long)w);
                }
            }
            fm_counts_free(k);
        }
        fm_graph_free(gr);
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
        cmocka_unit_test(test_node_tests_rnn),
        cmocka_unit_test(test_pytorch_rnns),
        cmocka_unit_test(test_folded_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
