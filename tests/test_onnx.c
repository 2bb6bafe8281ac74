/* The ONNX frontend: every built-in architecture exported by torchvision (tools/export_onnx.py)
 * counts exactly like the built-in model, transformer blocks count what their MAC formulas say,
 * an export made for inference said to be one when counted for training, symbolic dims, external
 * weights, unknown ops, old and new opsets, and bad files that must fail with a message naming
 * what is wrong (never a crash). Fixtures: tests/data/onnx, made by
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

/* Skips the calling test when ONNX's node tests (Debian's libonnx-testdata) are not installed:
 * test is one of them, the probe. */
static void need_node_tests(const char *test)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s/model.onnx", FM_ONNX_NODE_TESTS, test);
    if (access(path, R_OK) != 0) {
        printf("skipped: ONNX's node tests are not installed (Debian's libonnx-testdata; make "
               "deps installs it)\n");
        skip();
    }
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
    enum fm_status st = test_load_onnx(ctx, file, opset >= 17 ? batch : 0, NULL, 0, &og);
    if (st)
        fail_msg("%s: %s", file, fm_ctx_error(ctx));
    struct fm_zoo_opts zo;
    fm_zoo_opts_init(&zo);
    zo.batch = batch;
    zo.with_loss = false;
    FM_ASSERT_OK(ctx, fm_zoo_build(ctx, name, &zo, &zg));
    for (int m = 0; m < 2; m++) {
        enum fm_mode mode = m ? FM_MODE_INFER : FM_MODE_TRAIN;
        struct fm_counts *oc = test_count(ctx, og, mode), *zc = test_count(ctx, zg, mode);
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
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "resnet18_fused_op13.onnx", 0, NULL, 0, &g));
    struct fm_counts *c = test_count(ctx, g, FM_MODE_TRAIN);
    assert_int_equal(c->params, 11689512 - 4800);
    assert_int_equal(fwd_macs(c), 1814073344);
    assert_false(c->class_present[FM_CLASS_NORM]);
    assert_false(has_op(g, FM_OP_BATCHNORM));
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* A file exported for inference (convolutions with folded BatchNorm, no Dropout) counted as a
 * training step is said to be one; the training exports count what the built-ins count. */
static void test_inference_export_note(void **state)
{
    (void)state;
#ifndef FM_HAVE_ONNX
    skip();
#endif
    struct fm_ctx *ctx = test_ctx();
    const struct {
        const char *file;
        bool infer;
        const char *note;   /* NULL: none */
    } cases[] = {
        {DATA "resnet18_fused_op13.onnx", false, "20 of its 20 convolutions carry a bias"},
        {DATA "vgg11_op17.onnx", false, "looks exported for inference"},   /* no Dropout */
        {DATA "resnet18_fused_op13.onnx", true, NULL},   /* inference is what it is for */
        {DATA "resnet18_train_op17.onnx", false, NULL},  /* the recipe of docs/pytorch.md */
        {DATA "vgg11_train_op17.onnx", false, NULL},
        {DATA "resnet18_op17.onnx", false, NULL},        /* BatchNorm kept */
        {"vgg11", false, NULL},                          /* a built-in is what it says */
        {DATA "vit_block_op17.onnx", false, NULL},       /* LayerNorm: never had BatchNorm */
        {DATA "train/convnext_tiny.onnx", false, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_WORK);
        o.model = cases[i].file;
        if (cases[i].infer)
            o.count.mode = FM_MODE_INFER;
        struct fm_session *s = test_session_ok(ctx, &o);
        if (cases[i].note)
            test_expect_in(s->export_note, cases[i].note);
        else if (s->export_note[0])
            fail_msg("%s: unexpected note '%s'", cases[i].file, s->export_note);
        fm_session_free(s);
    }
    /* the training exports count exactly what the built-ins count: FLOPs and bytes of every
     * phase, memory */
    const char *pairs[][2] = {{"resnet18", DATA "resnet18_train_op17.onnx"},
                              {"vgg11", DATA "vgg11_train_op17.onnx"}};
    for (size_t i = 0; i < 2; i++) {
        struct fm_session *s[2];
        for (int k = 0; k < 2; k++) {
            struct fm_session_opts o;
            fm_session_opts_init(&o, FM_TASK_WORK);
            o.model = pairs[i][k];
            o.load.zoo.batch = 8;
            o.load.batch_given = true;
            s[k] = test_session_ok(ctx, &o);
        }
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            const struct fm_work *a = &s[0]->counts->total[ph], *b = &s[1]->counts->total[ph];
            assert_true(fm_work_flops(a) == fm_work_flops(b));
            assert_true(a->bytes_read == b->bytes_read && a->bytes_written == b->bytes_written);
        }
        assert_true(s[0]->counts->activation_bytes == s[1]->counts->activation_bytes);
        fm_session_free(s[0]);
        fm_session_free(s[1]);
    }
    char *out, *err;
    assert_int_equal(test_run_cli("count " DATA "resnet18_fused_op13.onnx", &out, &err), 0);
    test_expect_in(out, "  export         resnet18_fused_op13 looks exported for inference");
    test_expect_in(err, "looks exported for inference");
    test_expect_in(err, "docs/pytorch.md");
    test_expect_in(err, "torch.onnx.export(model.train(), ..., dynamo=True, optimize=False)");
    free(out);
    free(err);
    fm_ctx_free(ctx);
}

/* ---- symbolic dims ---- */

static void test_symbolic_batch(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    /* --batch binds the symbolic batch dim "N" */
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "resnet18_op17.onnx", 4, NULL, 0, &g));
    const struct fm_tensor *in = fm_graph_tensor(g, fm_graph_find_tensor(g, "input"));
    assert_int_equal(in->shape.dims[0], 4);
    struct fm_counts *c = test_count(ctx, g, FM_MODE_INFER);
    assert_int_equal(fwd_macs(c), 4ull * 1814073344ull);
    fm_counts_free(c);
    fm_graph_free(g);
    /* --input NAME=DIMS binds the whole shape */
    struct fm_input_binding b = {"input", {4, {2, 3, 224, 224}}};
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "resnet18_op17.onnx", 0, &b, 1, &g));
    c = test_count(ctx, g, FM_MODE_INFER);
    assert_int_equal(fwd_macs(c), 2ull * 1814073344ull);
    fm_counts_free(c);
    fm_graph_free(g);
    /* a symbolic dim other than the batch needs a binding, and the message says so */
    assert_int_equal(test_load_onnx(ctx, "symbolic.onnx", 2, NULL, 0, &g), FM_ERR_SHAPE);
    assert_non_null(strstr(fm_ctx_error(ctx), "'seq'"));
    assert_non_null(strstr(fm_ctx_error(ctx), "fm_load_opts.bindings ids="));
    /* ids (2, 5) -> embedding (2, 5, 16) -> MatMul with (16, 8): 2*5*16*8 MACs */
    struct fm_input_binding ids = {"ids", {2, {2, 5}}};
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "symbolic.onnx", 0, &ids, 1, &g));
    c = test_count(ctx, g, FM_MODE_TRAIN);
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
    assert_int_equal(test_load_onnx(ctx, "symbolic.onnx", 0, &bad, 1, &g), FM_ERR_INVALID);
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
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "external.onnx", 0, NULL, 0, &g));
    struct fm_counts *c = test_count(ctx, g, FM_MODE_TRAIN);
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
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "unknown_vi.onnx", 3, NULL, 0, &g));
    struct fm_counts *c = test_count(ctx, g, FM_MODE_INFER);
    assert_non_null(uncounted(c, "com.example:FancyOp"));
    /* Softplus has a rule (src/ops/act.c) and counts on u's value_info shape (3, 8):
     * log(1 + exp(x)) is 2 special per element, and nothing else in the file is special */
    assert_null(uncounted(c, "Softplus"));
    assert_int_equal(c->total[FM_PHASE_FWD].prim[FM_PRIM_SPECIAL], 2 * 3 * 8);
    assert_int_equal(c->n_uncounted, 1);
    assert_int_equal(fwd_macs(c), 3 * 8 * 4);
    const struct fm_tensor *u = fm_graph_tensor(g, fm_graph_find_tensor(g, "u"));
    assert_true(u->shape_known);
    assert_int_equal(u->shape.rank, 2);
    assert_int_equal(u->shape.dims[0], 3);
    fm_counts_free(c);
    fm_graph_free(g);
    /* no shape, but nothing reads it: listed, not an error */
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "unknown_side.onnx", 0, NULL, 0, &g));
    c = test_count(ctx, g, FM_MODE_TRAIN);
    assert_int_equal(uncounted(c, "com.example:FancyOp")->nodes, 1);
    assert_int_equal(fwd_macs(c), 8 * 4);
    fm_counts_free(c);
    fm_graph_free(g);
    /* a later shape depends on it: loading fails naming the node */
    assert_int_equal(test_load_onnx(ctx, "unknown_needed.onnx", 0, NULL, 0, &g),
                     FM_ERR_UNSUPPORTED);
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
    enum fm_status st = strstr(file, "vit") ? test_load_onnx(ctx, file, b, NULL, 0, &g)
                        : strstr(file, "bert") ? test_load_onnx(ctx, file, 0, bind, 2, &g)
                                               : test_load_onnx(ctx, file, 0, bind, 1, &g);
    if (st)
        fail_msg("%s: %s", file, fm_ctx_error(ctx));
    struct fm_counts *c = test_count(ctx, g, FM_MODE_TRAIN);
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

/* ---- a LLaMA-style decoder at opsets 14 and 17 ----
 * tools/export_train_models.py's llama_small (--opset 14 gives llama_small_op14.onnx; the
 * default, 17, is train/llama_small.onnx): vocabulary V 128, width D 32, L 2 layers of H 2
 * heads, SwiGLU hidden F 86, no biases, untied head. Its rotary tables are built in the graph
 * from the sequence length (Range, Pow, Mul, Cos, Sin), so they must follow the bound length.
 * Parameters: embedding V*D, per layer two RMSNorm weights 2*D, q/k/v/o 4*D*D, gate/up/down
 * 3*D*F; the final RMSNorm D and the head D*V. Forward MACs, for tok = B*T tokens: per layer
 * tok*(4*D*D + 3*D*F) for the projections and 2*B*H*T*T*(D/H) for the two attention
 * products; the head tok*D*V. */
static void test_llama_opsets(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    const uint64_t V = 128, D = 32, L = 2, H = 2, F = 86;
    const uint64_t params = V * D + L * (2 * D + 4 * D * D + 3 * D * F) + D + D * V;
    const char *files[] = {"llama_small_op14.onnx", "train/llama_small.onnx"};
    for (size_t f = 0; f < 2; f++) {
        for (int64_t t = 5; t <= 16; t += 11) {
            const int64_t b = 2;
            const uint64_t tok = (uint64_t)(b * t), tt = (uint64_t)t;
            const uint64_t macs = L * (tok * (4 * D * D + 3 * D * F) +
                                       2 * (uint64_t)b * H * tt * tt * (D / H)) +
                                  tok * D * V;
            struct fm_input_binding bind = {"ids", {2, {b, t}}};
            struct fm_graph *g = NULL;
            enum fm_status st = test_load_onnx(ctx, files[f], 0, &bind, 1, &g);
            if (st)
                fail_msg("%s: %s", files[f], fm_ctx_error(ctx));
            struct fm_counts *c = test_count(ctx, g, FM_MODE_TRAIN);
            if (c->params != params || fwd_macs(c) != macs || c->n_uncounted)
                fail_msg("%s T=%lld: params %llu (want %llu), MACs %llu (want %llu), %zu "
                         "uncounted", files[f], (long long)t, (unsigned long long)c->params,
                         (unsigned long long)params, (unsigned long long)fwd_macs(c),
                         (unsigned long long)macs, c->n_uncounted);
            fm_counts_free(c);
            fm_graph_free(g);
        }
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
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "upsample_op9.onnx", 0, NULL, 0, &g));
    const struct fm_node *n = fm_graph_node(g, 0);
    assert_int_equal(n->op, FM_OP_RESIZE);
    assert_int_equal(fm_graph_tensor(g, n->out[0])->shape.dims[2], 8);
    fm_graph_free(g);
    /* Resize (opset 11) to sizes 1x2x6x8, linear over two axes: 4 taps, 4 mul + 3 add per
     * output element, 96 outputs */
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "resize_op11.onnx", 0, NULL, 0, &g));
    struct fm_counts *c = test_count(ctx, g, FM_MODE_INFER);
    assert_int_equal(c->total[FM_PHASE_FWD].prim[FM_PRIM_MUL], 4 * 96);
    assert_int_equal(c->total[FM_PHASE_FWD].prim[FM_PRIM_ADD], 3 * 96);
    fm_counts_free(c);
    fm_graph_free(g);
    /* opset 21: GroupNormalization with per-channel scale, Gelu (tanh) */
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "opset21.onnx", 0, NULL, 0, &g));
    c = test_count(ctx, g, FM_MODE_TRAIN);
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
    enum fm_status st = test_load_onnx(ctx, file, 0, NULL, 0, &g);
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
    /* bad_dim_zero.onnx (an input dim of 0) is legal ONNX, an empty tensor: test_onnx_bind.c */
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

/* Secondary outputs (tools/make_onnx_fixtures.py: secondary_outputs): LayerNormalization of
 * x [2,3,8] over its last dim (E = 48, G = 6 rows) with Mean omitted and InvStdDev named, then
 * Dropout with its mask; both are graph outputs, found by name. Inference bytes: */
static void test_secondary_outputs(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = DATA "secondary_outputs.onnx";
    o.count.mode = FM_MODE_INFER;
    struct fm_session *s = test_session_ok(ctx, &o);
    const struct fm_graph *g = s->graph;
    fm_tid istd = fm_graph_find_tensor(g, "istd"), mask = fm_graph_find_tensor(g, "mask");
    assert_int_not_equal(istd, FM_NONE);
    assert_int_not_equal(mask, FM_NONE);
    const struct fm_tensor *t = fm_graph_tensor(g, istd);
    assert_int_equal(t->shape.rank, 3);   /* [2, 3, 1], fp32 (stash_type's default) */
    assert_int_equal(t->shape.dims[2], 1);
    assert_int_equal(t->dtype, FM_DTYPE_FP32);
    t = fm_graph_tensor(g, mask);
    assert_int_equal(t->dtype, FM_DTYPE_BOOL);
    assert_int_equal(t->shape.dims[2], 8);
    assert_int_equal(fm_graph_node_count(g), 2);
    /* LayerNorm: reads x (48 fp32), g and b (8 fp32 each); writes Y (48 fp32) and InvStdDev
     * (6 fp32), not the omitted Mean: 256 read, 216 written */
    assert_int_equal(s->counts->nodes[0].phase[FM_PHASE_FWD].bytes_read, 48 * 4 + 2 * 8 * 4);
    assert_int_equal(s->counts->nodes[0].phase[FM_PHASE_FWD].bytes_written, 48 * 4 + 6 * 4);
    /* Dropout in inference: Y is X; the all-true mask, 48 bytes, is written */
    assert_int_equal(s->counts->nodes[1].phase[FM_PHASE_FWD].bytes_read, 0);
    assert_int_equal(s->counts->nodes[1].phase[FM_PHASE_FWD].bytes_written, 48);
    fm_session_free(s);
    fm_ctx_free(ctx);
}

/* Mod of two initializers, folded at load time as ONNX defines integer Mod (fmod 0: the sign
 * of the divisor, Python's %): [-10, 12] mod [4, 7] = [2, 5] reshapes x (10) to (2, 5); C's %
 * would give [-2, 5], which Reshape refuses */
static void test_folded_mod(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = DATA "mod_shape.onnx";
    o.count.mode = FM_MODE_INFER;
    struct fm_session *s = test_session_ok(ctx, &o);
    assert_int_equal(fm_graph_node_count(s->graph), 2);   /* Reshape, Relu */
    const struct fm_node *n = fm_graph_node(s->graph, 1);
    assert_int_equal(n->op, FM_OP_RELU);
    const struct fm_shape *y = &fm_graph_tensor(s->graph, n->out[0])->shape;
    assert_int_equal(y->rank, 2);
    assert_int_equal(y->dims[0], 2);
    assert_int_equal(y->dims[1], 5);
    assert_int_equal(s->counts->total[FM_PHASE_FWD].prim[FM_PRIM_CMP], 10);   /* the Relu */
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
    need_node_tests("test_sin");
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

/* Files other people made: ONNX's node tests of Bernoulli and of its expansion (opset 15),
 * with RandomUniformLike, ten elements. Bernoulli: one draw (special) and one compare per
 * element, the probabilities read and the 0/1 output written (src/ops/random.c): x fp64 -> y
 * fp64 reads 80, writes 80; x fp32 -> y fp64 (dtype 11) reads 40, writes 80; with a seed,
 * fp32 both. The expansion's RandomUniformLike (fp64 or fp32 by its dtype) draws 10 numbers
 * and maps them to [low, high): 10 special, 10 mul, 10 add, its input not read. */
static void test_node_tests_random(void **state)
{
    (void)state;
    need_node_tests("test_bernoulli");
    const struct {
        const char *dir;
        enum fm_op op;   /* the first node */
        uint64_t add, mul, cmp, special, rd, wr;
    } cases[] = {
        {"test_bernoulli", FM_OP_BERNOULLI, 0, 0, 10, 10, 80, 80},
        {"test_bernoulli_double", FM_OP_BERNOULLI, 0, 0, 10, 10, 40, 80},
        {"test_bernoulli_seed", FM_OP_BERNOULLI, 0, 0, 10, 10, 40, 40},
        {"test_bernoulli_expanded", FM_OP_RANDOM_UNIFORM_LIKE, 10, 10, 0, 10, 0, 80},
        {"test_bernoulli_double_expanded", FM_OP_RANDOM_UNIFORM_LIKE, 10, 10, 0, 10, 0, 40},
        {"test_bernoulli_seed_expanded", FM_OP_RANDOM_UNIFORM_LIKE, 10, 10, 0, 10, 0, 40},
    };
    struct fm_ctx *ctx = test_ctx();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s/model.onnx", FM_ONNX_NODE_TESTS, cases[i].dir);
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_WORK);
        o.model = path;
        o.count.mode = FM_MODE_INFER;
        struct fm_session *s = NULL;
        if (fm_session_run(ctx, &o, &s))
            fail_msg("%s: %s", cases[i].dir, fm_ctx_error(ctx));
        assert_int_equal(fm_graph_node(s->graph, 0)->op, cases[i].op);
        assert_int_equal(s->counts->n_uncounted, 0);
        const struct fm_work *f = &s->counts->nodes[0].phase[FM_PHASE_FWD];
        assert_int_equal(f->prim[FM_PRIM_MAC], 0);
        assert_int_equal(f->prim[FM_PRIM_ADD], cases[i].add);
        assert_int_equal(f->prim[FM_PRIM_MUL], cases[i].mul);
        assert_int_equal(f->prim[FM_PRIM_DIV], 0);
        assert_int_equal(f->prim[FM_PRIM_CMP], cases[i].cmp);
        assert_int_equal(f->prim[FM_PRIM_SPECIAL], cases[i].special);
        assert_int_equal(f->bytes_read, cases[i].rd);
        assert_int_equal(f->bytes_written, cases[i].wr);
        fm_session_free(s);
    }
    fm_ctx_free(ctx);
}

/* ---- control flow: If, Loop, Scan (tools/make_control_fixtures.py) ---- */

/* Loads file (an absolute path, or a name under DATA) and counts inference. */
static struct fm_counts *control_count(struct fm_ctx *ctx, const char *file, int64_t batch,
                                       struct fm_graph **g)
{
    enum fm_status st;
    if (file[0] == '/') {
        struct fm_load_opts o;
        fm_load_opts_init(&o);
        st = fm_onnx_load_file(ctx, file, &o, g);
    } else {
        st = test_load_onnx(ctx, file, batch, NULL, 0, g);
    }
    if (st)
        fail_msg("%s: %s", file, fm_ctx_error(ctx));
    return test_count(ctx, *g, FM_MODE_INFER);
}

static void assert_dims(const struct fm_shape *s, int rank, const int64_t *dims)
{
    assert_int_equal(s->rank, rank);
    for (int d = 0; d < rank; d++)
        assert_int_equal(s->dims[d], dims[d]);
}

/* The dims of the tensor called name (a graph output's name finds its tensor too). */
static void expect_dims(const struct fm_graph *g, const char *name, int rank, const int64_t *d)
{
    fm_tid t = fm_graph_find_tensor(g, name);
    if (t == FM_NONE)
        fail_msg("no tensor '%s'", name);
    assert_dims(&fm_graph_tensor(g, t)->shape, rank, d);
}

static void test_control_flow(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g;
    struct fm_counts *c;

    /* If on Shape(x)[0] == 1, x [N, 4]: N = 1 takes then, x @ W1 (4x8): 1*4*8 = 32 MACs and
     * W1's 32 parameters; N = 2 takes else, x @ W2 (4x16): 2*4*16 = 128 MACs, W2's 64. The
     * branches read x, W1, W2 from the outer graph. */
    c = control_count(ctx, "control_if_shape.onnx", 1, &g);
    assert_int_equal(fwd_macs(c), 1 * 4 * 8);
    assert_int_equal(c->params, 4 * 8);
    expect_dims(g, "out", 2, (int64_t[]){1, 8});
    fm_counts_free(c);
    fm_graph_free(g);
    c = control_count(ctx, "control_if_shape.onnx", 2, &g);
    assert_int_equal(fwd_macs(c), 2 * 4 * 16);
    assert_int_equal(c->params, 4 * 16);
    expect_dims(g, "out", 2, (int64_t[]){2, 16});
    fm_counts_free(c);
    fm_graph_free(g);

    /* PyTorch (torch.jit.script) `if x.size(0) == 1`: batch 1 -> Linear(8, 16): 1*8*16 = 128
     * MACs, 8*16 + 16 = 144 parameters; batch 2 -> Linear(8, 4): 2*8*4 = 64 MACs, 8*4 + 4 =
     * 36 parameters. */
    c = control_count(ctx, "control_torch_if.onnx", 1, &g);
    assert_int_equal(fwd_macs(c), 1 * 8 * 16);
    assert_int_equal(c->params, 8 * 16 + 16);
    fm_counts_free(c);
    fm_graph_free(g);
    c = control_count(ctx, "control_torch_if.onnx", 2, &g);
    assert_int_equal(fwd_macs(c), 2 * 8 * 4);
    assert_int_equal(c->params, 8 * 4 + 4);
    fm_counts_free(c);
    fm_graph_free(g);

    /* PyTorch (torch.jit.script) `for _ in range(x.size(0))`: h = Relu(Linear(8, 8)(h)), a
     * Loop whose trip count is the batch B: B iterations of B*8*8 MACs, a bias add and a Relu
     * of B*8 each: FLOPs B * (2*B*64 + 2*B*8); Linear's 8*8 + 8 = 72 parameters once. */
    for (int64_t b = 2; b <= 3; b++) {
        c = control_count(ctx, "control_torch_loop.onnx", b, &g);
        assert_int_equal(fwd_macs(c), b * b * 8 * 8);
        assert_int_equal(fm_work_flops(&c->total[FM_PHASE_FWD]), b * (2 * b * 64 + 2 * b * 8));
        assert_int_equal(c->params, 8 * 8 + 8);
        fm_counts_free(c);
        fm_graph_free(g);
    }

    /* Loop M = 3 over h [1, 4]: h = h @ W + b, scan output Relu(h). MACs 3 * (1*4*4) = 48;
     * FLOPs 2*48 + 3*4 adds + 3*4 Relu = 120; parameters W (outer, 16) and b (the body's own
     * initializer, 4) once, not once per iteration: 20. Outputs h [1, 4], the scan [3, 1, 4]. */
    c = control_count(ctx, "control_loop.onnx", 0, &g);
    assert_int_equal(fwd_macs(c), 3 * 1 * 4 * 4);
    assert_int_equal(fm_work_flops(&c->total[FM_PHASE_FWD]), 2 * 48 + 3 * 4 + 3 * 4);
    assert_int_equal(c->params, 16 + 4);
    expect_dims(g, "h/iter2/hout", 2, (int64_t[]){1, 4});
    expect_dims(g, "rs", 3, (int64_t[]){3, 1, 4});
    fm_counts_free(c);
    fm_graph_free(g);

    /* If nested in a Loop (M = 3) on i < 1: iteration 0 takes then (h + h: 4 adds), 1 and 2
     * else (h * h + h: 4 muls + 4 adds): 4 + 2 * 8 = 20 FLOPs. */
    c = control_count(ctx, "control_loop_if.onnx", 0, &g);
    assert_int_equal(fm_work_flops(&c->total[FM_PHASE_FWD]), 4 + 2 * 8);
    fm_counts_free(c);
    fm_graph_free(g);

    /* A condition from data (ReduceSum(h) > 0) cannot stop the Loop at load time: M = 4
     * iterations of Relu (4) + ReduceSum of 4 (3 adds) + Greater (1): 4 * 8 = 32 FLOPs. */
    c = control_count(ctx, "control_loop_data_cond.onnx", 0, &g);
    assert_int_equal(fm_work_flops(&c->total[FM_PHASE_FWD]), 4 * (4 + 3 + 1));
    fm_counts_free(c);
    fm_graph_free(g);

    /* Scan over axis 1 of x [2, 5, 3], reversed, state [2, 3]: 5 * (6 adds + 6 muls) = 60;
     * the scan output stacked on axis 1: [2, 5, 3]. */
    c = control_count(ctx, "control_scan_axes.onnx", 0, &g);
    assert_int_equal(fm_work_flops(&c->total[FM_PHASE_FWD]), 5 * (6 + 6));
    expect_dims(g, "out", 3, (int64_t[]){2, 5, 3});
    expect_dims(g, "s/iter4/sout", 2, (int64_t[]){2, 3});
    fm_counts_free(c);
    fm_graph_free(g);

    /* ONNX's test_loop11, its trip_count (5) and cond (true) bound from test_data_set_0: one
     * Add of 1 element per iteration, 5 FLOPs; output_0.pb is [1], output_1.pb [5, 1]. */
    c = control_count(ctx, "control_node_loop11.onnx", 0, &g);
    assert_int_equal(fm_work_flops(&c->total[FM_PHASE_FWD]), 5);
    expect_dims(g, "res_y/iter4/y_out", 1, (int64_t[]){1});
    expect_dims(g, "res_scan", 2, (int64_t[]){5, 1});
    fm_counts_free(c);
    fm_graph_free(g);

    /* bad files: a clear error naming what to bind or what is wrong */
    expect_fail(ctx, "bad_control_if_data.onnx", FM_ERR_UNSUPPORTED, "condition 'c'", "'x'");
    expect_fail(ctx, "bad_control_loop_no_trip.onnx", FM_ERR_UNSUPPORTED, "no trip count", "'h'");
    expect_fail(ctx, "bad_control_scan_mismatch.onnx", FM_ERR_SHAPE, "'x' 3", "'y' 4");
    expect_fail(ctx, "bad_control_if_no_else.onnx", FM_ERR_PARSE, "else_branch", "'y'");
    expect_fail(ctx, "bad_control_loop_bad_body.onnx", FM_ERR_PARSE, "body has 1 inputs", "Loop");
    expect_fail(ctx, "bad_control_if_deep.onnx", FM_ERR_UNSUPPORTED, "nested more than 8", "If");

    if (access(FM_ONNX_NODE_TESTS "/test_scan9_sum/model.onnx", R_OK) != 0) {
        printf("skipped: ONNX's node tests are not installed\n");
        fm_ctx_free(ctx);
        return;
    }
    /* ONNX's test_scan9_sum: 3 steps of a 2-element Add, 6 FLOPs; output_0.pb [2], output_1.pb
     * [3, 2]. */
    c = control_count(ctx, FM_ONNX_NODE_TESTS "/test_scan9_sum/model.onnx", 0, &g);
    assert_int_equal(fm_work_flops(&c->total[FM_PHASE_FWD]), 3 * 2);
    expect_dims(g, "y/iter2/sum_out", 1, (int64_t[]){2});
    expect_dims(g, "z", 2, (int64_t[]){3, 2});
    fm_counts_free(c);
    fm_graph_free(g);
    /* the others, unbound: the message names what to bind (or why the file is declined) */
    const struct {
        const char *dir, *must1, *must2;
    } bad[] = {
        {"test_if", "condition 'cond'", "fm_load_opts.values"},
        {"test_if_seq", "condition 'cond'", "fm_load_opts.values"},
        {"test_if_opt", "condition 'cond'", "fm_load_opts.values"},
        {"test_loop11", "trip count 'trip_count'", "fm_load_opts.values"},
        {"test_range_float_type_positive_delta_expanded", "trip count", "'delta'"},
        {"test_scan_sum", "opset 8", "opset 9"},
        {"test_loop13_seq", "seq_empty", "not a tensor"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s/model.onnx", FM_ONNX_NODE_TESTS, bad[i].dir);
        struct fm_load_opts o;
        fm_load_opts_init(&o);
        g = NULL;
        enum fm_status st = fm_onnx_load_file(ctx, path, &o, &g);
        assert_int_not_equal(st, FM_OK);
        assert_null(g);
        const char *msg = fm_ctx_error(ctx);
        if (!strstr(msg, bad[i].must1) || !strstr(msg, bad[i].must2))
            fail_msg("%s: '%s' should name '%s' and '%s'", bad[i].dir, msg, bad[i].must1,
                     bad[i].must2);
    }
    fm_ctx_free(ctx);
}

/* The dims and element size of a TensorProto file (test_data_set_0/output_0.pb): field 1 is
 * dims (int64, packed or not), field 2 data_type; every other field is skipped by its wire
 * type. Returns false on a file this small reader does not follow. */
static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

static bool pb_tensor_info(const char *path, int64_t *dims, int *rank, int *elem_bytes)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    static uint8_t buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    const uint8_t *p = buf, *end = buf + n;
    uint64_t dtype = 0;
    *rank = 0;
    while (p < end) {
        uint64_t key, v;
        if (!read_varint(&p, end, &key))
            return false;
        unsigned field = (unsigned)(key >> 3), wire = (unsigned)(key & 7);
        if (wire == 0) {
            if (!read_varint(&p, end, &v))
                return false;
            if (field == 1 && *rank < FM_MAX_DIMS)
                dims[(*rank)++] = (int64_t)v;
            if (field == 2)
                dtype = v;
        } else if (wire == 2) {
            if (!read_varint(&p, end, &v) || v > (uint64_t)(end - p))
                return false;
            const uint8_t *q = p, *qe = p + v;
            while (field == 1 && q < qe && *rank < FM_MAX_DIMS) {   /* packed dims */
                uint64_t d;
                if (!read_varint(&q, qe, &d))
                    return false;
                dims[(*rank)++] = (int64_t)d;
            }
            p += v;
        } else if (wire == 5) {
            p += 4;
        } else if (wire == 1) {
            p += 8;
        } else {
            return false;
        }
    }
    /* ONNX's TensorProto.DataType: FLOAT 1, UINT8 2, INT8 3, UINT16 4, INT16 5, INT32 6,
     * INT64 7, BOOL 9, FLOAT16 10, DOUBLE 11, UINT32 12, UINT64 13 */
    static const int size[] = {0, 4, 1, 1, 2, 2, 4, 8, 0, 1, 2, 8, 4, 8};
    *elem_bytes = dtype < sizeof(size) / sizeof(size[0]) ? size[dtype] : 0;
    return *elem_bytes > 0;
}

/* ONNX's own node tests of the ops of src/ops/trig.c (inverse and hyperbolic), act.c (CELU,
 * ThresholdedRelu, Shrink, Hardmax), compare.c (IsInf, IsNaN, BitShift), eltwise.c (Mod, Sum,
 * Mean), reduce.c (ReduceL1, ReduceLogSum, ReduceLogSumExp), normalize.c (MVN, LRN) and
 * linalg.c (Det). One
 * node on graph inputs: the forward only, each count from the op's formula with the file's
 * shapes (E elements out unless said); the output's shape equals the dims of the test's
 * expected output_0.pb, and the bytes are the inputs read once and the output written once, in
 * the sizes the .pb files give. Training adds nothing: no input needs a gradient and no
 * parameter reaches the output. Files stamped with opsets below 7 (test_elu, test_selu,
 * test_softplus, test_softsign, test_reduce_log_sum) are not read (opset 7 is the oldest
 * flopmeter reads); this Debian release has no node tests of Mish, LpNormalization or LpPool. */
static void test_node_tests_math(void **state)
{
    (void)state;
    need_node_tests("test_acos");
#define P6(mac, add, mul, div, cmp, special) {mac, add, mul, div, cmp, special}
    const struct {
        const char *dir;
        enum fm_op op;
        uint64_t prim[FM_PRIM_COUNT];   /* mac, add, mul, div, cmp, special */
    } cases[] = {
        /* each inverse or hyperbolic function: 1 special per element; (3,4,5) and (3) */
        {"test_acos", FM_OP_ACOS, P6(0, 0, 0, 0, 0, 60)},
        {"test_acos_example", FM_OP_ACOS, P6(0, 0, 0, 0, 0, 3)},
        {"test_asin", FM_OP_ASIN, P6(0, 0, 0, 0, 0, 60)},
        {"test_asin_example", FM_OP_ASIN, P6(0, 0, 0, 0, 0, 3)},
        {"test_atan", FM_OP_ATAN, P6(0, 0, 0, 0, 0, 60)},
        {"test_atan_example", FM_OP_ATAN, P6(0, 0, 0, 0, 0, 3)},
        {"test_sinh", FM_OP_SINH, P6(0, 0, 0, 0, 0, 60)},
        {"test_sinh_example", FM_OP_SINH, P6(0, 0, 0, 0, 0, 3)},
        {"test_cosh", FM_OP_COSH, P6(0, 0, 0, 0, 0, 60)},
        {"test_cosh_example", FM_OP_COSH, P6(0, 0, 0, 0, 0, 3)},
        {"test_asinh", FM_OP_ASINH, P6(0, 0, 0, 0, 0, 60)},
        {"test_asinh_example", FM_OP_ASINH, P6(0, 0, 0, 0, 0, 3)},
        {"test_acosh", FM_OP_ACOSH, P6(0, 0, 0, 0, 0, 60)},
        {"test_acosh_example", FM_OP_ACOSH, P6(0, 0, 0, 0, 0, 3)},
        {"test_atanh", FM_OP_ATANH, P6(0, 0, 0, 0, 0, 60)},
        {"test_atanh_example", FM_OP_ATANH, P6(0, 0, 0, 0, 0, 3)},
        /* one comparison per element: (6) and (4) */
        {"test_isinf", FM_OP_ISINF, P6(0, 0, 0, 0, 6, 0)},
        {"test_isinf_negative", FM_OP_ISINF, P6(0, 0, 0, 0, 6, 0)},
        {"test_isinf_positive", FM_OP_ISINF, P6(0, 0, 0, 0, 6, 0)},
        {"test_isnan", FM_OP_ISNAN, P6(0, 0, 0, 0, 4, 0)},
        /* celu (3,3,3,1), E = 27: x/a, exp, -1, a*, select */
        {"test_celu", FM_OP_CELU, P6(0, 27, 27, 27, 27, 27)},
        /* thresholded relu: 1 cmp; (3,4,5), (5) */
        {"test_thresholdedrelu", FM_OP_THRESHOLDED_RELU, P6(0, 0, 0, 0, 60, 0)},
        {"test_thresholdedrelu_default", FM_OP_THRESHOLDED_RELU, P6(0, 0, 0, 0, 60, 0)},
        {"test_thresholdedrelu_example", FM_OP_THRESHOLDED_RELU, P6(0, 0, 0, 0, 5, 0)},
        /* shrink (5): x+b, x-b, two selects */
        {"test_shrink_hard", FM_OP_SHRINK, P6(0, 10, 0, 0, 10, 0)},
        {"test_shrink_soft", FM_OP_SHRINK, P6(0, 10, 0, 0, 10, 0)},
        /* hardmax E - R cmp, R rows along the axis: (3,4,5) axis 0: R = 20, axis 1: 15,
         * axis 2 (and opset 13's default -1): 12; (4,4): 4; (1,4): 1 */
        {"test_hardmax_axis_0", FM_OP_HARDMAX, P6(0, 0, 0, 0, 60 - 20, 0)},
        {"test_hardmax_axis_1", FM_OP_HARDMAX, P6(0, 0, 0, 0, 60 - 15, 0)},
        {"test_hardmax_axis_2", FM_OP_HARDMAX, P6(0, 0, 0, 0, 60 - 12, 0)},
        {"test_hardmax_default_axis", FM_OP_HARDMAX, P6(0, 0, 0, 0, 60 - 12, 0)},
        {"test_hardmax_negative_axis", FM_OP_HARDMAX, P6(0, 0, 0, 0, 60 - 12, 0)},
        {"test_hardmax_example", FM_OP_HARDMAX, P6(0, 0, 0, 0, 16 - 4, 0)},
        {"test_hardmax_one_hot", FM_OP_HARDMAX, P6(0, 0, 0, 0, 4 - 1, 0)},
        /* mod: a/b, round, q*b, a - q*b per element; (3,2,5) mod (1) broadcast: E = 30 */
        {"test_mod_broadcast", FM_OP_MOD, P6(0, 30, 30, 30, 30, 0)},
        {"test_mod_int64_fmod", FM_OP_MOD, P6(0, 6, 6, 6, 6, 0)},
        {"test_mod_mixed_sign_float16", FM_OP_MOD, P6(0, 6, 6, 6, 6, 0)},
        {"test_mod_mixed_sign_float32", FM_OP_MOD, P6(0, 6, 6, 6, 6, 0)},
        {"test_mod_mixed_sign_float64", FM_OP_MOD, P6(0, 6, 6, 6, 6, 0)},
        {"test_mod_mixed_sign_int8", FM_OP_MOD, P6(0, 6, 6, 6, 6, 0)},
        {"test_mod_mixed_sign_int16", FM_OP_MOD, P6(0, 6, 6, 6, 6, 0)},
        {"test_mod_mixed_sign_int32", FM_OP_MOD, P6(0, 6, 6, 6, 6, 0)},
        {"test_mod_mixed_sign_int64", FM_OP_MOD, P6(0, 6, 6, 6, 6, 0)},
        {"test_mod_uint8", FM_OP_MOD, P6(0, 3, 3, 3, 3, 0)},
        {"test_mod_uint16", FM_OP_MOD, P6(0, 3, 3, 3, 3, 0)},
        {"test_mod_uint32", FM_OP_MOD, P6(0, 3, 3, 3, 3, 0)},
        {"test_mod_uint64", FM_OP_MOD, P6(0, 3, 3, 3, 3, 0)},
        /* bitshift (3): one bit operation per element */
        {"test_bitshift_left_uint8", FM_OP_BITSHIFT, P6(0, 0, 0, 0, 3, 0)},
        {"test_bitshift_left_uint16", FM_OP_BITSHIFT, P6(0, 0, 0, 0, 3, 0)},
        {"test_bitshift_left_uint32", FM_OP_BITSHIFT, P6(0, 0, 0, 0, 3, 0)},
        {"test_bitshift_left_uint64", FM_OP_BITSHIFT, P6(0, 0, 0, 0, 3, 0)},
        {"test_bitshift_right_uint8", FM_OP_BITSHIFT, P6(0, 0, 0, 0, 3, 0)},
        {"test_bitshift_right_uint16", FM_OP_BITSHIFT, P6(0, 0, 0, 0, 3, 0)},
        {"test_bitshift_right_uint32", FM_OP_BITSHIFT, P6(0, 0, 0, 0, 3, 0)},
        {"test_bitshift_right_uint64", FM_OP_BITSHIFT, P6(0, 0, 0, 0, 3, 0)},
        /* n inputs of (3): (n-1)*3 adds; Mean 3 divs */
        {"test_mean_example", FM_OP_MEAN, P6(0, 6, 0, 3, 0, 0)},
        {"test_mean_one_input", FM_OP_MEAN, P6(0, 0, 0, 3, 0, 0)},
        {"test_mean_two_inputs", FM_OP_MEAN, P6(0, 3, 0, 3, 0, 0)},
        {"test_sum_example", FM_OP_SUM, P6(0, 6, 0, 0, 0, 0)},
        {"test_sum_one_input", FM_OP_SUM, P6(0, 0, 0, 0, 0, 0)},
        {"test_sum_two_inputs", FM_OP_SUM, P6(0, 3, 0, 0, 0, 0)},
        /* MVN (3,3,3,1) over ONNX's default axes 0, 2, 3: G = 3 groups, E = 27:
         * 3E add, E+G mul, E+2G div, G special */
        {"test_mvn", FM_OP_MVN, P6(0, 81, 30, 33, 0, 3)},
        /* LRN size 3 over C = 5 of (5,5,5,5), E = 625, P = 125 positions: windows of 2, 3, 3, 3,
         * 2 channels, 8 adds per position, W = 1000: E+W add, 2E mul, E div, E special */
        {"test_lrn", FM_OP_LRN, P6(0, 625 + 1000, 1250, 625, 0, 625)},
        {"test_lrn_default", FM_OP_LRN, P6(0, 625 + 1000, 1250, 625, 0, 625)},
        /* ReduceL1 of (3,2,2), E = 12: E cmp + E-O add; all axes O = 1, axis 2 (or -1) O = 6 */
        {"test_reduce_l1_default_axes_keepdims_example", FM_OP_REDUCE_L1, P6(0, 11, 0, 0, 12, 0)},
        {"test_reduce_l1_default_axes_keepdims_random", FM_OP_REDUCE_L1, P6(0, 11, 0, 0, 12, 0)},
        {"test_reduce_l1_do_not_keepdims_example", FM_OP_REDUCE_L1, P6(0, 6, 0, 0, 12, 0)},
        {"test_reduce_l1_do_not_keepdims_random", FM_OP_REDUCE_L1, P6(0, 6, 0, 0, 12, 0)},
        {"test_reduce_l1_keep_dims_example", FM_OP_REDUCE_L1, P6(0, 6, 0, 0, 12, 0)},
        {"test_reduce_l1_keep_dims_random", FM_OP_REDUCE_L1, P6(0, 6, 0, 0, 12, 0)},
        {"test_reduce_l1_negative_axes_keep_dims_example", FM_OP_REDUCE_L1,
         P6(0, 6, 0, 0, 12, 0)},
        {"test_reduce_l1_negative_axes_keep_dims_random", FM_OP_REDUCE_L1,
         P6(0, 6, 0, 0, 12, 0)},
        /* ReduceLogSum of (3,4,5), E = 60: E-O add + O special; axes {0,1}: O = 5, all: 1,
         * {2,1}: 3, {-2}: 15 */
        {"test_reduce_log_sum_asc_axes", FM_OP_REDUCE_LOG_SUM, P6(0, 55, 0, 0, 0, 5)},
        {"test_reduce_log_sum_default", FM_OP_REDUCE_LOG_SUM, P6(0, 59, 0, 0, 0, 1)},
        {"test_reduce_log_sum_desc_axes", FM_OP_REDUCE_LOG_SUM, P6(0, 57, 0, 0, 0, 3)},
        {"test_reduce_log_sum_negative_axes", FM_OP_REDUCE_LOG_SUM, P6(0, 45, 0, 0, 0, 15)},
        /* ReduceLogSumExp of (3,2,2) fp64, E = 12: E-O cmp, 2E add, E+O special; all axes
         * O = 1, axis 1 (or -2) O = 6 */
        {"test_reduce_log_sum_exp_default_axes_keepdims_example", FM_OP_REDUCE_LOG_SUM_EXP,
         P6(0, 24, 0, 0, 11, 13)},
        {"test_reduce_log_sum_exp_default_axes_keepdims_random", FM_OP_REDUCE_LOG_SUM_EXP,
         P6(0, 24, 0, 0, 11, 13)},
        {"test_reduce_log_sum_exp_do_not_keepdims_example", FM_OP_REDUCE_LOG_SUM_EXP,
         P6(0, 24, 0, 0, 6, 18)},
        {"test_reduce_log_sum_exp_do_not_keepdims_random", FM_OP_REDUCE_LOG_SUM_EXP,
         P6(0, 24, 0, 0, 6, 18)},
        {"test_reduce_log_sum_exp_keepdims_example", FM_OP_REDUCE_LOG_SUM_EXP,
         P6(0, 24, 0, 0, 6, 18)},
        {"test_reduce_log_sum_exp_keepdims_random", FM_OP_REDUCE_LOG_SUM_EXP,
         P6(0, 24, 0, 0, 6, 18)},
        {"test_reduce_log_sum_exp_negative_axes_keepdims_example", FM_OP_REDUCE_LOG_SUM_EXP,
         P6(0, 24, 0, 0, 6, 18)},
        {"test_reduce_log_sum_exp_negative_axes_keepdims_random", FM_OP_REDUCE_LOG_SUM_EXP,
         P6(0, 24, 0, 0, 6, 18)},
        /* Det, LU with pivoting per 2 x 2 matrix: 1 cmp, 1 div, 1 mac, 1 mul; one and three */
        {"test_det_2d", FM_OP_DET, P6(1, 0, 1, 1, 1, 0)},
        {"test_det_nd", FM_OP_DET, P6(3, 0, 3, 3, 3, 0)},
    };
#undef P6
    struct fm_ctx *ctx = test_ctx();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[512], pb[512];
        snprintf(path, sizeof(path), "%s/%s/model.onnx", FM_ONNX_NODE_TESTS, cases[i].dir);
        /* what the test's own data says: the inputs' bytes and the expected output */
        uint64_t in_bytes = 0, out_bytes = 0;
        int64_t want[FM_MAX_DIMS];
        int want_rank = 0;
        for (int k = 0;; k++) {
            int64_t d[FM_MAX_DIMS];
            int r, eb;
            snprintf(pb, sizeof(pb), "%s/%s/test_data_set_0/input_%d.pb", FM_ONNX_NODE_TESTS,
                     cases[i].dir, k);
            if (access(pb, R_OK) != 0)
                break;
            if (!pb_tensor_info(pb, d, &r, &eb))
                fail_msg("%s: cannot read %s", cases[i].dir, pb);
            uint64_t n = 1;
            for (int j = 0; j < r; j++)
                n *= (uint64_t)d[j];
            in_bytes += n * (uint64_t)eb;
        }
        int eb;
        snprintf(pb, sizeof(pb), "%s/%s/test_data_set_0/output_0.pb", FM_ONNX_NODE_TESTS,
                 cases[i].dir);
        if (!pb_tensor_info(pb, want, &want_rank, &eb))
            fail_msg("%s: cannot read %s", cases[i].dir, pb);
        out_bytes = (uint64_t)eb;
        for (int j = 0; j < want_rank; j++)
            out_bytes *= (uint64_t)want[j];
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
            const struct fm_node *node = fm_graph_node(s->graph, 0);
            if (node->op != cases[i].op)
                fail_msg("%s: mapped to %s", cases[i].dir, fm_op_name(node->op));
            assert_int_equal(s->counts->n_uncounted, 0);
            const struct fm_shape *y = &fm_graph_tensor(s->graph, node->out[0])->shape;
            if (y->rank != want_rank ||
                memcmp(y->dims, want, sizeof(int64_t) * (size_t)want_rank) != 0)
                fail_msg("%s: output shape differs from output_0.pb's", cases[i].dir);
            const struct fm_work *f = &s->counts->total[FM_PHASE_FWD];
            for (int p = 0; p < FM_PRIM_COUNT; p++) {
                if (f->prim[p] != cases[i].prim[p])
                    fail_msg("%s: fwd %s %llu, expected %llu", cases[i].dir,
                             fm_prim_name((enum fm_prim)p), (unsigned long long)f->prim[p],
                             (unsigned long long)cases[i].prim[p]);
            }
            assert_int_equal(f->bytes_read, in_bytes);
            assert_int_equal(f->bytes_written, out_bytes);
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
            want[FM_PHASE_BWD_DATA][FM_PRIM_MAC] +=
                S * d * g * h * h + (l ? S * d * g * h * il : 0);
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
        if (test_load_onnx(ctx, cases[c].file, 0, NULL, 0, &gr))
            fail_msg("%s: %s", cases[c].file, fm_ctx_error(ctx));
        assert_true(has_op(gr, cases[c].op));
        for (int m = 0; m < 2; m++) {
            struct fm_counts *k = test_count(ctx, gr, m ? FM_MODE_INFER : FM_MODE_TRAIN);
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

/* ---- files made by exporters other than PyTorch: ONNX Runtime's quantizer and transformer
 * optimizer (tools/make_quant_onnx.py), Paddle2ONNX (tests/data/onnx/SOURCES.md) ---- */

/* The node called name, or fail. */
static fm_nid node_named(const struct fm_graph *g, const char *name)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        if (strcmp(fm_graph_node(g, (fm_nid)i)->name, name) == 0)
            return (fm_nid)i;
    }
    fail_msg("no node '%s'", name);
    return FM_NONE;
}

/* Checks one node's forward: mac, add, mul, div, cmp, special */
static void expect_fwd(const struct fm_counts *c, fm_nid id, uint64_t mac, uint64_t add,
                       uint64_t mul, uint64_t div, uint64_t cmp, uint64_t special)
{
    const uint64_t *p = c->nodes[id].phase[FM_PHASE_FWD].prim;
    assert_int_equal(p[FM_PRIM_MAC], mac);
    assert_int_equal(p[FM_PRIM_ADD], add);
    assert_int_equal(p[FM_PRIM_MUL], mul);
    assert_int_equal(p[FM_PRIM_DIV], div);
    assert_int_equal(p[FM_PRIM_CMP], cmp);
    assert_int_equal(p[FM_PRIM_SPECIAL], special);
}

/* quantize_dynamic of a 16 -> 32 -> 8 MLP at batch 2: DynamicQuantizeLinear + MatMulInteger
 * (+ Cast, Mul by the scales, Add of the float bias) per Linear */
static void test_ort_quantize_dynamic(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "ort/mlp_dynamic.onnx", 0, NULL, 0, &g));
    for (int mode = 0; mode < FM_MODE_COUNT; mode++) {
        struct fm_counts *c = test_count(ctx, g, (enum fm_mode)mode);
        assert_int_equal(c->n_uncounted, 0);
        /* DynamicQuantizeLinear of E = 2*16 = 32: E+2 div, E+2 add, 5E+5 cmp */
        fm_nid q1 = node_named(g, "x_QuantizeLinear");
        assert_int_equal(fm_graph_node(g, q1)->op, FM_OP_DYNAMIC_QUANTIZE_LINEAR);
        expect_fwd(c, q1, 0, 34, 0, 34, 165, 0);
        /* MatMulInteger (2,16) x (16,32): 2*16*32 = 1024 int8 MACs; both zero points given:
         * 1 add per element of A (32) and of B (512) */
        fm_nid m1 = node_named(g, "/fc1/Gemm_MatMul_quant");
        assert_int_equal(fm_graph_node(g, m1)->op, FM_OP_MATMUL_INTEGER);
        expect_fwd(c, m1, 1024, 32 + 512, 0, 0, 0, 0);
        assert_true(c->nodes[m1].int8 && c->nodes[m1].no_grad);
        /* bytes: A uint8 32, B int8 512, two 1-byte zero points read; int32 (2,32) written */
        assert_int_equal(c->nodes[m1].phase[FM_PHASE_FWD].bytes_read, 32 + 512 + 1 + 1);
        assert_int_equal(c->nodes[m1].phase[FM_PHASE_FWD].bytes_written, 2 * 32 * 4);
        assert_int_equal(fm_graph_tensor(g, fm_graph_node(g, m1)->out[0])->dtype,
                         FM_DTYPE_INT32);
        /* second layer: E = 2*32 = 64 quantized; (2,32) x (32,8) = 512 MACs, 64 + 256 adds */
        expect_fwd(c, node_named(g, "/Relu_output_0_QuantizeLinear"), 0, 66, 0, 66, 325, 0);
        fm_nid m2 = node_named(g, "/fc2/Gemm_MatMul_quant");
        expect_fwd(c, m2, 512, 64 + 256, 0, 0, 0, 0);
        /* every MAC of the file is an integer one: 1024 + 512 */
        assert_int_equal(fwd_macs(c), 1024 + 512);
        /* training: the quantized layers have no backward; the float bias Add still has one */
        for (int p = FM_PHASE_BWD_DATA; p < FM_PHASE_OPTIMIZER; p++) {
            assert_int_equal(fm_work_flops(&c->nodes[m1].phase[p]), 0);
            assert_int_equal(fm_work_flops(&c->nodes[q1].phase[p]), 0);
        }
        if (mode == FM_MODE_TRAIN)   /* d bias = sum of dy over the batch: 2*8 - 8 adds */
            assert_int_equal(fm_work_flops(&c->nodes[node_named(g, "/fc2/Gemm_Add")]
                                                .phase[FM_PHASE_BWD_WEIGHT]), 8);
        fm_counts_free(c);
    }
    fm_graph_free(g);

    /* quantize_dynamic of an LSTM (8 -> 16, 5 steps, batch 2): DynamicQuantizeLSTM is ONNX's
     * LSTM with W and R transposed and int8 (src/ops/rnn.c's rule): Y (5, 1, 2, 16); over
     * S = 5*2 = 10 row-steps the gate products are S*4H*I = 10*64*8 = 5120 MACs on the input
     * and S*4H*H = 10*64*16 = 10240 on the hidden state, all int8; no backward */
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "ort/lstm_dynamic.onnx", 0, NULL, 0, &g));
    struct fm_counts *c = test_count(ctx, g, FM_MODE_TRAIN);
    assert_int_equal(c->n_uncounted, 0);
    fm_nid l = node_named(g, "/lstm/LSTM_quant");
    assert_int_equal(fm_graph_node(g, l)->op, FM_OP_DYNAMIC_QUANTIZE_LSTM);
    const struct fm_shape *y = &fm_graph_tensor(g, fm_graph_node(g, l)->out[0])->shape;
    assert_int_equal(y->rank, 4);
    assert_true(y->dims[0] == 5 && y->dims[1] == 1 && y->dims[2] == 2 && y->dims[3] == 16);
    assert_true(c->nodes[l].counted && c->nodes[l].int8 && c->nodes[l].no_grad);
    assert_int_equal(c->nodes[l].phase[FM_PHASE_FWD].prim[FM_PRIM_MAC], 5120 + 10240);
    for (int p = FM_PHASE_BWD_DATA; p < FM_PHASE_OPTIMIZER; p++)
        assert_int_equal(fm_work_flops(&c->nodes[l].phase[p]), 0);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* quantize_static of a CNN (3 -> 8 conv 3x3 pad 1, 8 -> 16 conv 3x3 stride 2, FC 256 -> 10;
 * input 2x3x8x8), QOperator format: QuantizeLinear, QLinearConv x2, QGemm, DequantizeLinear */
static void test_ort_quantize_static(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "ort/cnn_qop.onnx", 0, NULL, 0, &g));
    struct fm_counts *c = test_count(ctx, g, FM_MODE_INFER);
    assert_int_equal(c->n_uncounted, 0);
    /* parameters: the int8 weights, 8*3*3*3 + 16*8*3*3 + 10*256, one byte each, never trained
     * (the int32 biases are constants) */
    assert_int_equal(c->params, 216 + 1152 + 2560);
    assert_int_equal(c->trainable_params, 0);
    assert_int_equal(c->param_bytes, 216 + 1152 + 2560);
    /* QuantizeLinear of x: E = 2*3*8*8 = 384: E div, E add, 3E cmp */
    expect_fwd(c, node_named(g, "x_QuantizeLinear"), 0, 384, 0, 384, 3 * 384, 0);
    /* QLinearConv 1: out 2x8x8x8 = 1024, MACs 1024 * 3*3*3 = 27648; zero points: 384 (x) +
     * 216 (w) adds; requantize 1024 mul + 1 (m per scale) mul, 1 div, 1024 add, 3072 cmp;
     * int32 bias: 1024 add */
    fm_nid c1 = node_named(g, "/c1/Conv_quant");
    assert_int_equal(fm_graph_node(g, c1)->op, FM_OP_QLINEAR_CONV);
    expect_fwd(c, c1, 27648, 384 + 216 + 1024 + 1024, 1025, 1, 3072, 0);
    assert_true(c->nodes[c1].int8);
    /* bytes: x 384 + w 216 (1 byte each), 3 float scales, 3 one-byte zero points, bias 8 int32;
     * output 1024 bytes */
    assert_int_equal(c->nodes[c1].phase[FM_PHASE_FWD].bytes_read,
                     384 + 216 + 3 * 4 + 3 * 1 + 8 * 4);
    assert_int_equal(c->nodes[c1].phase[FM_PHASE_FWD].bytes_written, 1024);
    /* QLinearConv 2: out 2x16x4x4 = 512, MACs 512 * 8*3*3 = 36864 */
    expect_fwd(c, node_named(g, "/c2/Conv_quant"), 36864, 1024 + 1152 + 512 + 512, 513, 1,
               1536, 0);
    /* QGemm (2,256) x (10,256)^T: 20 outputs x 256 = 5120 MACs; zero points 512 + 2560 adds,
     * C 20 adds, requantized: 20 + 1 mul, 1 div, 20 add, 60 cmp */
    fm_nid q = node_named(g, "/fc/Gemm_quant");
    assert_int_equal(fm_graph_node(g, q)->op, FM_OP_QGEMM);
    expect_fwd(c, q, 5120, 512 + 2560 + 20 + 20, 21, 1, 60, 0);
    /* every MAC is int8: 27648 + 36864 + 5120 */
    assert_int_equal(fwd_macs(c), 27648 + 36864 + 5120);

    /* the int8 ceiling: on an H100 SXM the quantized layers use its int8 tensor peak */
    struct fm_devices *devs = NULL;
    const struct fm_device *dev = NULL;
    FM_ASSERT_OK(ctx, fm_devices_load(ctx, NULL, &devs));
    FM_ASSERT_OK(ctx, fm_devices_find(ctx, devs, "h100", &dev));
    struct fm_predict_opts po;
    fm_predict_opts_init(&po);
    po.device = dev;
    struct fm_prediction *p = NULL;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &po, &p));
    assert_int_equal(p->nodes[c1][FM_PHASE_FWD].precision, FM_PREC_INT8);
    assert_true(p->nodes[c1][FM_PHASE_FWD].tensor);
    assert_true(p->nodes[c1][FM_PHASE_FWD].peak == dev->peak_tensor[FM_PREC_INT8]);
    assert_true(dev->peak_tensor[FM_PREC_INT8] > 0);
    /* the float QuantizeLinear stays on the run's precision (fp32) */
    assert_int_equal(p->nodes[node_named(g, "x_QuantizeLinear")][FM_PHASE_FWD].precision,
                     FM_PREC_FP32);
    fm_prediction_free(p);
    fm_devices_free(devs);
    fm_counts_free(c);
    fm_graph_free(g);

    /* QDQ format: QuantizeLinear/DequantizeLinear around float Conv/Gemm. Quantized tensors:
     * x 384, relu 1024, relu_1 512, flatten 512, y 20 = 2452 elements; dequantized: those and
     * the weights 216 + 1152 + 2560 and biases 8 + 16 + 10 = 6414 */
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "ort/cnn_qdq.onnx", 0, NULL, 0, &g));
    c = test_count(ctx, g, FM_MODE_INFER);
    assert_int_equal(c->n_uncounted, 0);
    uint64_t qdiv = 0, dqmul = 0, conv_macs = 0;
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        const uint64_t *w = c->nodes[i].phase[FM_PHASE_FWD].prim;
        if (n->op == FM_OP_QUANTIZE_LINEAR)
            qdiv += w[FM_PRIM_DIV];
        if (n->op == FM_OP_DEQUANTIZE_LINEAR)
            dqmul += w[FM_PRIM_MUL];
        if (n->op == FM_OP_CONV || n->op == FM_OP_GEMM)
            conv_macs += w[FM_PRIM_MAC];
    }
    assert_int_equal(qdiv, 2452);
    assert_int_equal(dqmul, 6414);
    /* the float convs and Gemm: the same MACs as the QOperator file's integer ones */
    assert_int_equal(conv_macs, 27648 + 36864 + 5120);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* onnxruntime.transformers.optimizer (bert) on nn.TransformerEncoderLayer(32, 4 heads, FF 64,
 * GELU) at 2x6x32: SkipLayerNormalization x2 and BiasGelu (com.microsoft) */
static void test_ort_transformer_optimizer(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "ort/encoder_bert_opt.onnx", 0, NULL, 0, &g));
    struct fm_counts *c = test_count(ctx, g, FM_MODE_INFER);
    assert_int_equal(c->n_uncounted, 0);
    /* SkipLayerNorm, E = 2*6*32 = 384, G = 12 rows: skip E add; LayerNorm with beta 4E+G add,
     * 3E mul, 2G div, G special */
    fm_nid s0 = node_named(g, "SkipLayerNorm_0");
    assert_int_equal(fm_graph_node(g, s0)->op, FM_OP_SKIP_LAYERNORM);
    expect_fwd(c, s0, 0, 384 + 4 * 384 + 12, 3 * 384, 24, 0, 12);
    /* with the linear layer's bias folded in: one more add per element */
    expect_fwd(c, node_named(g, "SkipLayerNorm_AddBias_0"), 0, 2 * 384 + 4 * 384 + 12, 3 * 384,
               24, 0, 12);
    /* BiasGelu, E = 2*6*64 = 768: 2E add, 3E mul, E special */
    fm_nid bg = node_named(g, "Gelu_AddBias_0");
    assert_int_equal(fm_graph_node(g, bg)->op, FM_OP_BIAS_GELU);
    expect_fwd(c, bg, 0, 2 * 768, 3 * 768, 0, 0, 768);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* Paddle2ONNX exports (PaddleOCR v2.0 mobile direction classifier and PP-OCRv4 detector, as
 * RapidOCR ships them): -1 and named dynamic dims bound with --input; every Conv counts
 * N*Cout*Ho*Wo*(Cin/g)*kh*kw from the shapes in the graph, nothing is uncounted, and the
 * outputs have the published shapes (2 classes, 0 and 180 degrees; a probability map of the
 * input's size) */
static void test_paddle2onnx(void **state)
{
    (void)state;
    const struct {
        const char *file;
        struct fm_shape in, out;
    } cases[] = {
        {"paddle/ch_ppocr_mobile_v2.0_cls_infer.onnx", {4, {1, 3, 48, 192}}, {2, {1, 2}}},
        {"paddle/ch_PP-OCRv4_det_infer.onnx", {4, {1, 3, 160, 160}}, {4, {1, 1, 160, 160}}},
    };
    struct fm_ctx *ctx = test_ctx();
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct fm_input_binding b = {"x", cases[k].in};
        struct fm_graph *g = NULL;
        FM_ASSERT_OK(ctx, test_load_onnx(ctx, cases[k].file, 0, &b, 1, &g));
        struct fm_counts *c = test_count(ctx, g, FM_MODE_INFER);
        assert_int_equal(c->n_uncounted, 0);
        size_t convs = 0;
        const struct fm_tensor *last = NULL;
        for (size_t i = 0; i < fm_graph_node_count(g); i++) {
            const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
            if (fm_graph_tensor(g, n->out[0])->role == FM_ROLE_ACTIVATION)
                last = fm_graph_tensor(g, n->out[0]);
            if (n->op != FM_OP_CONV)
                continue;
            const struct fm_shape *y = &fm_graph_tensor(g, n->out[0])->shape;
            const struct fm_shape *w = &fm_graph_tensor(g, n->in[1])->shape;
            uint64_t want = (uint64_t)(y->dims[0] * y->dims[1] * y->dims[2] * y->dims[3]) *
                            (uint64_t)(w->dims[1] * w->dims[2] * w->dims[3]);
            assert_int_equal(c->nodes[i].phase[FM_PHASE_FWD].prim[FM_PRIM_MAC], want);
            convs++;
        }
        assert_true(convs > 10);
        assert_int_equal(last->shape.rank, cases[k].out.rank);
        for (int d = 0; d < last->shape.rank; d++)
            assert_int_equal(last->shape.dims[d], cases[k].out.dims[d]);
        fm_counts_free(c);
        fm_graph_free(g);
    }
    fm_ctx_free(ctx);
}

/* tf2onnx (tools/make_tf_onnx.py) of a Keras CNN on NHWC 2x8x8x3: Transpose to NCHW, Conv2D
 * 3x3 same 3 -> 8, ReLU, MaxPool 2, Conv2D 3x3 valid 8 -> 16 (4x4 -> 2x2), global average,
 * Dense 16 -> 10. (Its keras_lstm.onnx, an ONNX LSTM, waits for the LSTM rule of rnn.c.) */
static void test_tf2onnx(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "tf2onnx/keras_cnn.onnx", 0, NULL, 0, &g));
    struct fm_counts *c = test_count(ctx, g, FM_MODE_INFER);
    assert_int_equal(c->n_uncounted, 0);
    uint64_t conv[2] = {0}, pool_cmp = 0, mm = 0;
    int nconv = 0;
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        const uint64_t *w = c->nodes[i].phase[FM_PHASE_FWD].prim;
        if (n->op == FM_OP_CONV && nconv < 2)
            conv[nconv++] = w[FM_PRIM_MAC];
        if (n->op == FM_OP_MAXPOOL)
            pool_cmp += w[FM_PRIM_CMP];
        if (n->op == FM_OP_MATMUL || n->op == FM_OP_GEMM)
            mm += w[FM_PRIM_MAC];
    }
    assert_int_equal(nconv, 2);
    assert_int_equal(conv[0], 2 * 8 * 8 * 8 * (3 * 3 * 3));    /* N Cout Ho Wo (Cin kh kw) */
    assert_int_equal(conv[1], 2 * 16 * 2 * 2 * (8 * 3 * 3));
    assert_int_equal(pool_cmp, 2 * 8 * 4 * 4 * 3);              /* 4 values, 3 comparisons */
    assert_int_equal(mm, 2 * 16 * 10);
    assert_int_equal(fwd_macs(c), 2 * 8 * 8 * 8 * 27 + 2 * 16 * 2 * 2 * 72 + 2 * 16 * 10);
    fm_counts_free(c);
    fm_graph_free(g);

    /* Keras LSTM(16) over 5 steps of 8 features at batch 2, then Dense 4: tf2onnx writes one
     * ONNX LSTM (Keras's two bias vectors as B). Parameters: W 4H*I = 512, R 4H*H = 1024,
     * B 8H = 128; the Dense 16*4 (its bias, zero at initialization, is an Add of zeros that
     * tf2onnx's optimizer removes: the file has none). Forward MACs (src/ops/rnn.c): S = 5*2
     * row-steps,
     * S*4H*(I + H) = 10*64*24 = 15360 in the LSTM, 2*16*4 = 128 in the Dense. */
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "tf2onnx/keras_lstm.onnx", 0, NULL, 0, &g));
    c = test_count(ctx, g, FM_MODE_TRAIN);
    assert_int_equal(c->n_uncounted, 0);
    assert_int_equal(c->params, 512 + 1024 + 128 + 16 * 4);
    fm_nid l = node_named(g, "LSTM__43");
    assert_int_equal(fm_graph_node(g, l)->op, FM_OP_LSTM);
    assert_int_equal(c->nodes[l].phase[FM_PHASE_FWD].prim[FM_PRIM_MAC], 15360);
    assert_int_equal(fwd_macs(c), 15360 + 128);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* The quantized and com.microsoft files, corrupted at random: every mutant loads or fails with
 * a message, and what loads counts (training and inference) without a crash. */
static void test_ort_corrupted_never_crash(void **state)
{
    (void)state;
    const char *files[] = {"ort/mlp_dynamic.onnx", "ort/cnn_qop.onnx", "ort/cnn_qdq.onnx",
                           "ort/lstm_dynamic.onnx", "ort/encoder_bert_opt.onnx"};
    struct fm_ctx *ctx = test_ctx();
    static unsigned char data[1 << 16], copy[1 << 16];
    uint64_t seed = 7;
    for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
        char path[512];
        snprintf(path, sizeof(path), DATA "%s", files[k]);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        size_t n = fread(data, 1, sizeof(data), f);
        fclose(f);
        assert_true(n > 1000 && n < sizeof(data));
        struct fm_load_opts o;
        fm_load_opts_init(&o);
        int failed = 0;
        for (int i = 0; i < 300; i++) {
            memcpy(copy, data, n);
            for (int m = 0; m < 1 + i % 4; m++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                copy[(seed >> 33) % n] = (unsigned char)(seed >> 17);
            }
            struct fm_graph *g = NULL;
            if (fm_onnx_load_buffer(ctx, copy, n, "mutant", &o, &g) != FM_OK) {
                failed++;
                continue;
            }
            for (int mode = 0; mode < FM_MODE_COUNT; mode++) {
                struct fm_count_opts co;
                fm_count_opts_init(&co);
                co.mode = (enum fm_mode)mode;
                struct fm_counts *c = NULL;
                if (fm_count(ctx, g, &co, &c) == FM_OK)
                    fm_counts_free(c);
            }
            fm_graph_free(g);
        }
        assert_true(failed > 0);
    }
    fm_ctx_free(ctx);
}

/* One of ONNX's node tests, counted: the op it maps to, the forward's operations and bytes, and
 * the shape of output 0 as its test_data_set_0/output_0.pb holds it. own_loss: the node is a
 * loss, kept as the model's own in training (no loss added). */
struct node_case {
    const char *dir;
    enum fm_op op;
    uint64_t fwd[FM_PRIM_COUNT];   /* mac, add, mul, div, cmp, special */
    uint64_t rd, wr;               /* forward bytes */
    int rank;
    int64_t dims[8];
    bool own_loss;
};

/* bound: the cases are node tests with an input bound (tests/data/onnx/node_bound/<dir>.onnx,
 * made by tools/make_bound_node_tests.py), not the installed originals */
static void run_node_cases_(const struct node_case *cases, size_t n, bool bound)
{
    if (!bound)
        need_node_tests("test_sin");
    struct fm_ctx *ctx = test_ctx();
    for (size_t i = 0; i < n; i++) {
        char path[512];
        if (bound)
            snprintf(path, sizeof(path), "%snode_bound/%s.onnx", DATA, cases[i].dir);
        else
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
            const struct fm_node *node = fm_graph_node(s->graph, 0);
            assert_int_equal(node->op, cases[i].op);
            const struct fm_shape *y = &fm_graph_tensor(s->graph, node->out[0])->shape;
            if (y->rank != cases[i].rank)
                fail_msg("%s: output rank %d, expected %d", cases[i].dir, y->rank,
                         cases[i].rank);
            for (int d = 0; d < y->rank; d++)
                assert_int_equal(y->dims[d], cases[i].dims[d]);
            assert_int_equal(s->counts->n_uncounted, 0);
            const struct fm_work *f = &s->counts->total[FM_PHASE_FWD];
            for (int p = 0; p < FM_PRIM_COUNT; p++) {
                if (f->prim[p] != cases[i].fwd[p])
                    fail_msg("%s: fwd %s %llu, expected %llu", cases[i].dir,
                             fm_prim_name((enum fm_prim)p), (unsigned long long)f->prim[p],
                             (unsigned long long)cases[i].fwd[p]);
            }
            assert_int_equal(f->bytes_read, cases[i].rd);
            assert_int_equal(f->bytes_written, cases[i].wr);
            for (int p = FM_PHASE_BWD_DATA; p < FM_PHASE_COUNT; p++)
                assert_int_equal(fm_work_flops(&s->counts->total[p]), 0);
            bool train = mode == FM_MODE_TRAIN;
            assert_int_equal(s->loss.n, cases[i].own_loss && train ? 1 : 0);
            if (cases[i].own_loss && train) {
                assert_int_equal(s->loss.loss[0].kind, FM_LOSS_MODEL);
                assert_false(s->loss.loss[0].added);
            }
            fm_session_free(s);
        }
    }
    fm_ctx_free(ctx);
}
#define run_node_cases(c, n) run_node_cases_(c, n, false)
#define NC_PRIMS(mac, add, mul, div, cmp, special) {mac, add, mul, div, cmp, special}
#define NC_COUNT(c) (sizeof(c) / sizeof((c)[0]))

/* ONNX's node tests of GatherElements, GatherND, ScatterElements, Scatter (opset 10) and
 * ScatterND (src/ops/index.c), every operand a graph input, so nothing needs a gradient: the
 * forward only. Gathers: no arithmetic, reading the indices (int64, 8 B) and the E gathered
 * fp32 elements (4 B), writing E. Scatters: reading data X, indices and updates U once and
 * writing X; reduction add U add, mul U mul. */
static void test_node_tests_index(void **state)
{
    (void)state;
    const struct node_case cases[] = {
        /* data 2x2, indices 2x2: E = 4: 4*8 + 4*4 read, 16 written */
        {"test_gather_elements_0", FM_OP_GATHER_ELEMENTS, NC_PRIMS(0, 0, 0, 0, 0, 0),
         32 + 16, 16, 2, {2, 2}, false},
        /* data 3x3, indices 2x3: E = 6: 48 + 24 read, 24 written */
        {"test_gather_elements_1", FM_OP_GATHER_ELEMENTS, NC_PRIMS(0, 0, 0, 0, 0, 0),
         48 + 24, 24, 2, {2, 3}, false},
        {"test_gather_elements_negative_indices", FM_OP_GATHER_ELEMENTS,
         NC_PRIMS(0, 0, 0, 0, 0, 0), 48 + 24, 24, 2, {2, 3}, false},
        /* data 2x2x2, indices 2x1x2 (k = 2): out 2x1 + (2) = 2x1x2, E = 4: 32 + 16, 16 */
        {"test_gathernd_example_float32", FM_OP_GATHER_ND, NC_PRIMS(0, 0, 0, 0, 0, 0),
         32 + 16, 16, 3, {2, 1, 2}, false},
        /* int32 data 2x2, indices 2x2 (k = 2): out (2), E = 2: 32 + 8, 8 */
        {"test_gathernd_example_int32", FM_OP_GATHER_ND, NC_PRIMS(0, 0, 0, 0, 0, 0), 32 + 8, 8,
         1, {2}, false},
        /* int32 data 2x2x2, indices 2x1, batch_dims 1 (k = 1): out (2) + (2), E = 4: 16 + 16 */
        {"test_gathernd_example_int32_batch_dim1", FM_OP_GATHER_ND, NC_PRIMS(0, 0, 0, 0, 0, 0),
         16 + 16, 16, 2, {2, 2}, false},
        /* data 1x5 (20 B), indices 1x2 (16), updates 1x2 (8): 44 read, 20 written */
        {"test_scatter_elements_with_axis", FM_OP_SCATTER_ELEMENTS, NC_PRIMS(0, 0, 0, 0, 0, 0),
         44, 20, 2, {1, 5}, false},
        /* reduction add: U = 2 add */
        {"test_scatter_elements_with_duplicate_indices", FM_OP_SCATTER_ELEMENTS,
         NC_PRIMS(0, 2, 0, 0, 0, 0), 44, 20, 2, {1, 5}, false},
        {"test_scatter_elements_with_negative_indices", FM_OP_SCATTER_ELEMENTS,
         NC_PRIMS(0, 0, 0, 0, 0, 0), 44, 20, 2, {1, 5}, false},
        /* data 3x3 (36 B), indices 2x3 (48), updates 2x3 (24): 108 read, 36 written */
        {"test_scatter_elements_without_axis", FM_OP_SCATTER_ELEMENTS,
         NC_PRIMS(0, 0, 0, 0, 0, 0), 108, 36, 2, {3, 3}, false},
        /* the deprecated Scatter (opset 10) is ScatterElements */
        {"test_scatter_with_axis", FM_OP_SCATTER_ELEMENTS, NC_PRIMS(0, 0, 0, 0, 0, 0), 44, 20,
         2, {1, 5}, false},
        {"test_scatter_without_axis", FM_OP_SCATTER_ELEMENTS, NC_PRIMS(0, 0, 0, 0, 0, 0), 108,
         36, 2, {3, 3}, false},
        /* data 4x4x4 (256 B), indices 2x1 (16), updates 2x4x4 (U = 32, 128 B): 400 read */
        {"test_scatternd", FM_OP_SCATTER_ND, NC_PRIMS(0, 0, 0, 0, 0, 0), 400, 256, 3,
         {4, 4, 4}, false},
        {"test_scatternd_add", FM_OP_SCATTER_ND, NC_PRIMS(0, 32, 0, 0, 0, 0), 400, 256, 3,
         {4, 4, 4}, false},
        {"test_scatternd_multiply", FM_OP_SCATTER_ND, NC_PRIMS(0, 0, 32, 0, 0, 0), 400, 256, 3,
         {4, 4, 4}, false},
    };
    run_node_cases(cases, NC_COUNT(cases));
}

/* ONNX's node tests of SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss (src/ops/loss.c):
 * the graph is the loss, so training keeps it as the model's own (none added); the scores are
 * a graph input, so no backward. M positions, C classes, E = M*C, per the family file:
 *   SCE cmp E-M; add E + (E-M) + M + (log_prob output ? E : M); special E + M
 *   both: weights M mul; ignore_index M cmp; sum M-1 add; mean M-1 add + 1 div, and M-1 add
 *   more with weights or ignore_index
 * Bytes: scores and labels (int64) and weights read; the loss (and log_prob) written. */
static void test_node_tests_losses(void **state)
{
    (void)state;
    const struct node_case cases[] = {
        /* x 3x5: M = 3, C = 5, E = 15; mean: add 15 + 12 + 3 + 3 + 2 = 35, cmp 12, special
         * 18, div 1; reads 60 + 24, writes 4 */
        {"test_sce_mean", FM_OP_SOFTMAX_CE_LOSS, NC_PRIMS(0, 35, 0, 1, 12, 18), 84, 4, 0, {0},
         true},
        /* log_prob output: add 15 + 12 + 3 + 15 + 2 = 47; writes 4 + 60 */
        {"test_sce_mean_log_prob", FM_OP_SOFTMAX_CE_LOSS, NC_PRIMS(0, 47, 0, 1, 12, 18), 84,
         64, 0, {0}, true},
        /* none: add 33, no reduction; writes the 3 losses, 12 */
        {"test_sce_none", FM_OP_SOFTMAX_CE_LOSS, NC_PRIMS(0, 33, 0, 0, 12, 18), 84, 12, 1, {3},
         true},
        /* sum: add 33 + 2 */
        {"test_sce_sum", FM_OP_SOFTMAX_CE_LOSS, NC_PRIMS(0, 35, 0, 0, 12, 18), 84, 4, 0, {0},
         true},
        /* mean, weights (5), ignore_index 0: cmp 12 + 3; add 33 + 2 + 2; mul 3; reads + 20 */
        {"test_sce_mean_weight_ii", FM_OP_SOFTMAX_CE_LOSS, NC_PRIMS(0, 37, 3, 1, 15, 18), 104,
         4, 0, {0}, true},
        /* x 3x5x6x6x5: M = 540, E = 2700; none, ignore_index: cmp 2160 + 540; add 2700 + 2160
         * + 540 + 540; special 3240; reads 10800 + 4320, writes 2160 */
        {"test_sce_NCd1d2d3_none_no_weight_negative_ii", FM_OP_SOFTMAX_CE_LOSS,
         NC_PRIMS(0, 5940, 0, 0, 2700, 3240), 15120, 2160, 4, {3, 6, 6, 5}, true},
        /* x 3x5x6x6x5x3x4: M = 6480, E = 32400; mean, weights, log_prob: cmp 25920; add 32400
         * + 25920 + 6480 + 32400 + 6479 + 6479 = 110158; mul 6480; special 38880; reads
         * 129600 + 51840 + 20, writes 4 + 129600 */
        {"test_sce_NCd1d2d3d4d5_mean_weight_log_prob", FM_OP_SOFTMAX_CE_LOSS,
         NC_PRIMS(0, 110158, 6480, 1, 25920, 38880), 181460, 129604, 0, {0}, true},
        /* NLL 3x5, none: a gather, no arithmetic; reads 60 + 24, writes 12 */
        {"test_nllloss_NC", FM_OP_NLL_LOSS, NC_PRIMS(0, 0, 0, 0, 0, 0), 84, 12, 1, {3}, true},
        /* 3x5x2: M = 6; mean, ignore_index: cmp 6, add 5 + 5, div 1; reads 120 + 48 */
        {"test_nllloss_NCd1_ii", FM_OP_NLL_LOSS, NC_PRIMS(0, 10, 0, 1, 6, 0), 168, 4, 0, {0},
         true},
        /* 3x5x6x6: M = 108; sum, weights, ignore_index: mul 108, cmp 108, add 107; reads 2160
         * + 864 + 20 */
        {"test_nllloss_NCd1d2_with_weight_reduction_sum_ii", FM_OP_NLL_LOSS,
         NC_PRIMS(0, 107, 108, 0, 108, 0), 3044, 4, 0, {0}, true},
        /* 3x5x6x6x5x3x4, none: reads 129600 + 51840, writes 6480 * 4 */
        {"test_nllloss_NCd1d2d3d4d5_none_no_weight", FM_OP_NLL_LOSS,
         NC_PRIMS(0, 0, 0, 0, 0, 0), 181440, 25920, 6, {3, 6, 6, 5, 3, 4}, true},
    };
    run_node_cases(cases, NC_COUNT(cases));
}

/* ONNX's node tests of ArgMax and ArgMin (src/ops/select.c): (n-1) cmp per row of n, E - R;
 * fp32 X read, int64 indices written. select_last_index costs the same. */
static void test_node_tests_argmax(void **state)
{
    (void)state;
    const struct node_case cases[] = {
        /* 2x2, axis 0, keepdims: E = 4, R = 2: 2 cmp; 16 read, 2*8 written */
        {"test_argmax_default_axis_example", FM_OP_ARGMAX, NC_PRIMS(0, 0, 0, 0, 2, 0), 16, 16,
         2, {1, 2}, false},
        {"test_argmax_default_axis_example_select_last_index", FM_OP_ARGMAX,
         NC_PRIMS(0, 0, 0, 0, 2, 0), 16, 16, 2, {1, 2}, false},
        /* 2x3x4 (96 B), axis 1: R = 8: 16 cmp; 64 written */
        {"test_argmax_keepdims_random", FM_OP_ARGMAX, NC_PRIMS(0, 0, 0, 0, 16, 0), 96, 64, 3,
         {2, 1, 4}, false},
        {"test_argmax_no_keepdims_random", FM_OP_ARGMAX, NC_PRIMS(0, 0, 0, 0, 16, 0), 96, 64, 2,
         {2, 4}, false},
        /* axis -1: R = 6: 18 cmp; 48 written */
        {"test_argmax_negative_axis_keepdims_random_select_last_index", FM_OP_ARGMAX,
         NC_PRIMS(0, 0, 0, 0, 18, 0), 96, 48, 3, {2, 3, 1}, false},
        /* axis 0: R = 12: 12 cmp; 96 written */
        {"test_argmin_default_axis_random", FM_OP_ARGMIN, NC_PRIMS(0, 0, 0, 0, 12, 0), 96, 96,
         3, {1, 3, 4}, false},
        /* 2x2, axis 1, no keepdims: 2 cmp */
        {"test_argmin_no_keepdims_example_select_last_index", FM_OP_ARGMIN,
         NC_PRIMS(0, 0, 0, 0, 2, 0), 16, 16, 1, {2}, false},
        {"test_argmin_keepdims_random", FM_OP_ARGMIN, NC_PRIMS(0, 0, 0, 0, 16, 0), 96, 64, 3,
         {2, 1, 4}, false},
    };
    run_node_cases(cases, NC_COUNT(cases));
}

/* ONNX's node tests of TopK, OneHot, Compress and NonZero, whose output shapes depend on an
 * input's value: as installed (the value is a graph input) they are declined with a message
 * naming the input; with the input bound to the value the test feeds it
 * (tools/make_bound_node_tests.py) they are counted exactly (src/ops/select.c). */
static void test_node_tests_select(void **state)
{
    (void)state;
    const struct node_case cases[] = {
        /* x 3x4 (48 B), k = 3, axis 1, sorted: R = 3 rows of n = 4: per row 4*ceil(log2 4) = 8
         * + 3*ceil(log2 3) = 6: 42 cmp; values 3x3 fp32 (36) + indices int64 (72) written */
        {"test_top_k", FM_OP_TOPK, NC_PRIMS(0, 0, 0, 0, 42, 0), 48, 108, 2, {3, 3}, false},
        {"test_top_k_negative_axis", FM_OP_TOPK, NC_PRIMS(0, 0, 0, 0, 42, 0), 48, 108, 2,
         {3, 3}, false},
        {"test_top_k_smallest", FM_OP_TOPK, NC_PRIMS(0, 0, 0, 0, 42, 0), 48, 108, 2, {3, 3},
         false},
        /* indices int64 (3) 24 B, depth 10, values fp32 (2) 8 B: E = 30 cmp; 120 written */
        {"test_onehot_negative_indices", FM_OP_ONEHOT, NC_PRIMS(0, 0, 0, 0, 30, 0), 32, 120, 2,
         {3, 10}, false},
        /* indices fp32 2x2 (16 B), depth 10 at axis 1: E = 40 cmp; 160 written */
        {"test_onehot_with_axis", FM_OP_ONEHOT, NC_PRIMS(0, 0, 0, 0, 40, 0), 24, 160, 3,
         {2, 10, 2}, false},
        {"test_onehot_with_negative_axis", FM_OP_ONEHOT, NC_PRIMS(0, 0, 0, 0, 40, 0), 24, 160, 3,
         {2, 10, 2}, false},
        /* depth 12, int32 values: E = 36 cmp; 144 written */
        {"test_onehot_without_axis", FM_OP_ONEHOT, NC_PRIMS(0, 0, 0, 0, 36, 0), 32, 144, 2,
         {3, 12}, false},
        /* input 3x2 fp32; condition [0,1,1] on axis 0 keeps 2 rows: 16 B read and written */
        {"test_compress_0", FM_OP_COMPRESS, NC_PRIMS(0, 0, 0, 0, 0, 0), 16, 16, 2, {2, 2}, false},
        /* [0,1] on axis 1: 3x1, 12 B */
        {"test_compress_1", FM_OP_COMPRESS, NC_PRIMS(0, 0, 0, 0, 0, 0), 12, 12, 2, {3, 1}, false},
        {"test_compress_negative_axis", FM_OP_COMPRESS, NC_PRIMS(0, 0, 0, 0, 0, 0), 12, 12, 2,
         {3, 1}, false},
        /* no axis: the flattened 6, [0,1,0,0,1] keeps 2: 8 B */
        {"test_compress_default_axis", FM_OP_COMPRESS, NC_PRIMS(0, 0, 0, 0, 0, 0), 8, 8, 1, {2},
         false},
        /* condition bool 2x2 [[1,0],[1,1]]: 4 cmp; 4 B read, (2, 3) int64 = 48 written */
        {"test_nonzero_example", FM_OP_NONZERO, NC_PRIMS(0, 0, 0, 0, 4, 0), 4, 48, 2, {2, 3},
         false},
    };
    run_node_cases_(cases, NC_COUNT(cases), true);
    if (access(FM_ONNX_NODE_TESTS "/test_top_k/model.onnx", R_OK) != 0)
        return;
    const struct {
        const char *dir, *input;
    } declined[] = {
        {"test_top_k", "'k'"},
        {"test_onehot_with_axis", "'depth'"},
        {"test_compress_0", "'condition'"},
        {"test_nonzero_example", "'condition'"},
        {"test_unique_sorted_with_axis", "'X'"},
    };
    struct fm_ctx *ctx = test_ctx();
    for (size_t i = 0; i < sizeof(declined) / sizeof(declined[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/%s/model.onnx", FM_ONNX_NODE_TESTS, declined[i].dir);
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_WORK);
        o.model = path;
        struct fm_session *s = NULL;
        assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_UNSUPPORTED);
        assert_null(s);
        EXPECT_MESSAGE(ctx, declined[i].input, "known", "network");
    }
    fm_ctx_free(ctx);
}

/* ONNX's node tests of DepthToSpace, SpaceToDepth, MaxUnpool, EyeLike, ReverseSequence
 * (src/ops/layout.c) and CastLike (Cast to the second input's dtype, src/ops/tensor.c): no
 * arithmetic; every input read once (EyeLike reads only a shape), the output written once. */
static void test_node_tests_layout(void **state)
{
    (void)state;
    const struct node_case cases[] = {
        /* 2x8x3x3 fp32 = 576 B each way; blocksize 2: (2, 8/4, 6, 6) */
        {"test_depthtospace_crd_mode", FM_OP_DEPTH_TO_SPACE, NC_PRIMS(0, 0, 0, 0, 0, 0), 576,
         576, 4, {2, 2, 6, 6}, false},
        {"test_depthtospace_dcr_mode", FM_OP_DEPTH_TO_SPACE, NC_PRIMS(0, 0, 0, 0, 0, 0), 576,
         576, 4, {2, 2, 6, 6}, false},
        /* 1x8x2x3 = 192 B: (1, 2, 4, 6) */
        {"test_depthtospace_example", FM_OP_DEPTH_TO_SPACE, NC_PRIMS(0, 0, 0, 0, 0, 0), 192,
         192, 4, {1, 2, 4, 6}, false},
        {"test_depthtospace_crd_mode_example", FM_OP_DEPTH_TO_SPACE,
         NC_PRIMS(0, 0, 0, 0, 0, 0), 192, 192, 4, {1, 2, 4, 6}, false},
        /* 2x2x6x6 = 576 B: (2, 8, 3, 3); 1x1x4x6 = 96 B: (1, 4, 2, 3) */
        {"test_spacetodepth", FM_OP_SPACE_TO_DEPTH, NC_PRIMS(0, 0, 0, 0, 0, 0), 576, 576, 4,
         {2, 8, 3, 3}, false},
        {"test_spacetodepth_example", FM_OP_SPACE_TO_DEPTH, NC_PRIMS(0, 0, 0, 0, 0, 0), 96, 96,
         4, {1, 4, 2, 3}, false},
        /* X 1x1x2x2 fp32 16 B + indices int64 32 B; kernel 2 stride 2: (2-1)*2 + 2 = 4:
         * 1x1x4x4 = 64 B written */
        {"test_maxunpool_export_without_output_shape", FM_OP_MAX_UNPOOL,
         NC_PRIMS(0, 0, 0, 0, 0, 0), 48, 64, 4, {1, 1, 4, 4}, false},
        /* EyeLike: nothing read; 4x5 fp32 80 B, 3x4 double 96 B, 4x4 int32 64 B written */
        {"test_eyelike_populate_off_main_diagonal", FM_OP_EYELIKE, NC_PRIMS(0, 0, 0, 0, 0, 0),
         0, 80, 2, {4, 5}, false},
        {"test_eyelike_with_dtype", FM_OP_EYELIKE, NC_PRIMS(0, 0, 0, 0, 0, 0), 0, 96, 2, {3, 4},
         false},
        {"test_eyelike_without_dtype", FM_OP_EYELIKE, NC_PRIMS(0, 0, 0, 0, 0, 0), 0, 64, 2,
         {4, 4}, false},
        /* X 4x4 fp32 64 B + sequence_lens 4 int64 32 B read, 64 written */
        {"test_reversesequence_batch", FM_OP_REVERSE_SEQUENCE, NC_PRIMS(0, 0, 0, 0, 0, 0), 96,
         64, 2, {4, 4}, false},
        {"test_reversesequence_time", FM_OP_REVERSE_SEQUENCE, NC_PRIMS(0, 0, 0, 0, 0, 0), 96,
         64, 2, {4, 4}, false},
        /* CastLike 3x4: bf16 24 B -> fp32 48 B; fp32 -> fp16; double 96 B -> fp32 */
        {"test_castlike_BFLOAT16_to_FLOAT", FM_OP_CAST, NC_PRIMS(0, 0, 0, 0, 0, 0), 24, 48, 2,
         {3, 4}, false},
        {"test_castlike_FLOAT_to_FLOAT16", FM_OP_CAST, NC_PRIMS(0, 0, 0, 0, 0, 0), 48, 24, 2,
         {3, 4}, false},
        {"test_castlike_DOUBLE_to_FLOAT", FM_OP_CAST, NC_PRIMS(0, 0, 0, 0, 0, 0), 96, 48, 2,
         {3, 4}, false},
    };
    run_node_cases(cases, NC_COUNT(cases));
    /* output_shape (1,1,5,5) as the test feeds it, bound: 48 B read, 25*4 = 100 written */
    const struct node_case bound[] = {
        {"test_maxunpool_export_with_output_shape", FM_OP_MAX_UNPOOL,
         NC_PRIMS(0, 0, 0, 0, 0, 0), 48, 100, 4, {1, 1, 5, 5}, false},
    };
    run_node_cases_(bound, NC_COUNT(bound), true);
    /* a cast to a string is refused saying so */
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = FM_ONNX_NODE_TESTS "/test_cast_FLOAT_to_STRING/model.onnx";
    struct fm_session *s = NULL;
    assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_UNSUPPORTED);
    EXPECT_MESSAGE(ctx, "(string)", "numeric types only");
    o.model = FM_ONNX_NODE_TESTS "/test_maxunpool_export_with_output_shape/model.onnx";
    assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_UNSUPPORTED);
    EXPECT_MESSAGE(ctx, "'output_shape'", "not known");
    fm_ctx_free(ctx);
}

/* ---- opsets 1 to 6 ---- */

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
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "old_opset1.onnx", 0, NULL, 0, &g));
    expect_dims(g, "r", 3, (const int64_t[]){2, 3, 16});
    expect_dims(g, "p", 3, (const int64_t[]){2, 3, 19});
    expect_dims(g, "c", 3, (const int64_t[]){2, 6, 19});
    expect_dims(g, "s1", 3, (const int64_t[]){2, 2, 19});
    expect_dims(g, "s2", 3, (const int64_t[]){2, 4, 19});
    expect_dims(g, "u", 4, (const int64_t[]){2, 3, 8, 12});
    expect_dims(g, "k", 4, (const int64_t[]){2, 3, 4, 4});
    assert_int_equal(fm_graph_tensor(g, fm_graph_find_tensor(g, "k"))->dtype, FM_DTYPE_INT64);
    struct fm_counts *c = test_count(ctx, g, FM_MODE_INFER);
    assert_int_equal(c->n_uncounted, 0);
    fm_counts_free(c);
    fm_graph_free(g);
    /* opset 6: x (2,3,4,5) + b (3,4) at axis 1, then * s (2) at axis 0: E = 2*3*4*5 = 120 adds
     * and 120 muls forward (numpy's rule would have refused both); params 3*4 + 2 = 14 */
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "old_opset6_broadcast.onnx", 0, NULL, 0, &g));
    expect_dims(g, "y", 4, (const int64_t[]){2, 3, 4, 5});
    c = test_count(ctx, g, FM_MODE_TRAIN);
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
        expect_dims(g, cases[i].out, cases[i].rank, cases[i].dims);
        c = test_count(ctx, g, FM_MODE_INFER);
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
    need_node_tests("test_convtranspose");
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
        struct fm_counts *c = test_count(ctx, g, FM_MODE_INFER);
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

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zoo_equivalence),
        cmocka_unit_test(test_fused_conv_bn),
        cmocka_unit_test(test_inference_export_note),
        cmocka_unit_test(test_symbolic_batch),
        cmocka_unit_test(test_external_data),
        cmocka_unit_test(test_unknown_ops),
        cmocka_unit_test(test_transformer_blocks),
        cmocka_unit_test(test_llama_opsets),
        cmocka_unit_test(test_opsets),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_corrupted_never_crash),
        cmocka_unit_test(test_node_tests_trig),
        cmocka_unit_test(test_node_tests_random),
        cmocka_unit_test(test_node_tests_rnn),
        cmocka_unit_test(test_pytorch_rnns),
        cmocka_unit_test(test_folded_shapes),
        cmocka_unit_test(test_control_flow),
        cmocka_unit_test(test_node_tests_math),
        cmocka_unit_test(test_folded_mod),
        cmocka_unit_test(test_secondary_outputs),
        cmocka_unit_test(test_ort_quantize_dynamic),
        cmocka_unit_test(test_ort_quantize_static),
        cmocka_unit_test(test_ort_transformer_optimizer),
        cmocka_unit_test(test_paddle2onnx),
        cmocka_unit_test(test_tf2onnx),
        cmocka_unit_test(test_ort_corrupted_never_crash),
        cmocka_unit_test(test_node_tests_index),
        cmocka_unit_test(test_node_tests_losses),
        cmocka_unit_test(test_node_tests_argmax),
        cmocka_unit_test(test_node_tests_select),
        cmocka_unit_test(test_node_tests_layout),
        cmocka_unit_test(test_old_opsets),
        cmocka_unit_test(test_node_tests_windows),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
