/* Training whole networks on the CPU backend (every op the counter knows):
 *  - the starting values a step draws: token ids below the table they index, masks of ones,
 *    class labels below the class count, constants from the file's own contents;
 *  - every small export of tests/data/onnx/train/ (tools/export_train_models.py: DenseNet,
 *    MnasNet, ShuffleNet, RegNet, SqueezeNet, ConvNeXt, EfficientNetV2, Swin, ViT, GPT-2, BERT,
 *    LLaMA-style) trains: its loss falls over a few steps on a fixed batch;
 *  - a whole training step of the GPT-2-like, BERT-like, ViT-like and LLaMA-like ones against
 *    PyTorch (tests/data/goldens/train_*.txt, tools/make_train_goldens.py): loss, outputs,
 *    gradients;
 *  - the memory check before anything runs: a step larger than --max-memory is refused and
 *    names the largest batch that fits, which is checked by counting it and the next;
 *  - --loss-on, the output a loss is added to when the policy's choice is not wanted;
 *  - sizes as people type them (--max-memory 8G).
 * Without oneDNN in the build the tests that run steps print a skip. */
#include "support.h"

#include "backend/backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct fm_shape dims2(int64_t a, int64_t b)
{
    struct fm_shape s;
    memset(&s, 0, sizeof(s));
    s.rank = 2;
    s.dims[0] = a;
    s.dims[1] = b;
    return s;
}

/* ---- starting values ---- */

/* ids (2, 8) through Unsqueeze into a Gather of a 37-row table; a mask input; a float constant
 * whose contents the graph states; labels of a 5-class loss. */
static void test_start_values(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "values", &g));
    fm_tid ids, mask, table, scale, labels, un, emb, cls;
    struct fm_shape s_ids = dims2(2, 8), s_tab = dims2(37, 5), s_one = {0};
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "ids", FM_ROLE_INPUT, FM_DTYPE_INT64, &s_ids, &ids));
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "attention_mask", FM_ROLE_INPUT, FM_DTYPE_INT64,
                                          &s_ids, &mask));
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "wte", FM_ROLE_PARAM, FM_DTYPE_FP32, &s_tab, &table));
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "scale", FM_ROLE_CONST, FM_DTYPE_FP32, &s_one,
                                          &scale));
    const double eight = 8.0;
    FM_ASSERT_OK(ctx, fm_graph_set_fvalue(g, scale, &eight, 1));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.ints[0] = 1;
    a.nints = 1;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_UNSQUEEZE, "un", &a, (fm_tid[]){ids}, 1,
                                        NULL, 1, &un));
    fm_attrs_init(&a);
    a.axis = 0;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_GATHER, "emb", &a, (fm_tid[]){table, un}, 2,
                                        NULL, 1, &emb));
    (void)emb;
    struct fm_shape s_lab = {1, {4}}, s_log = dims2(4, 5);
    fm_tid logits;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "logits", FM_ROLE_INPUT, FM_DTYPE_FP32, &s_log,
                                          &logits));
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "labels", FM_ROLE_INPUT, FM_DTYPE_INT64, &s_lab,
                                          &labels));
    fm_attrs_init(&a);
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_CROSS_ENTROPY, "loss", &a,
                                        (fm_tid[]){logits, labels}, 2, NULL, 1, &cls));
    (void)mask;
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));

    float v[64];
    /* ids: every one a row of the table, and not all the same */
    FM_ASSERT_OK(ctx, fm_init_values(ctx, g, ids, 1, v, 16));
    float lo = v[0], hi = v[0];
    for (int i = 0; i < 16; i++) {
        assert_true(v[i] >= 0 && v[i] < 37 && v[i] == floorf(v[i]));
        lo = fminf(lo, v[i]);
        hi = fmaxf(hi, v[i]);
    }
    assert_true(hi >= 2 && hi > lo);   /* drawn below 37, not below 2 (the fallback range) */
    /* the mask: all ones */
    FM_ASSERT_OK(ctx, fm_init_values(ctx, g, mask, 1, v, 16));
    for (int i = 0; i < 16; i++)
        assert_true(v[i] == 1.0f);
    /* the constant: the graph's 8, not a random number */
    FM_ASSERT_OK(ctx, fm_init_values(ctx, g, scale, 1, v, 1));
    assert_true(v[0] == 8.0f);
    /* labels: below the 5 classes */
    FM_ASSERT_OK(ctx, fm_init_values(ctx, g, labels, 1, v, 4));
    for (int i = 0; i < 4; i++)
        assert_true(v[i] >= 0 && v[i] < 5);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- whole networks ---- */

#define TRAIN_DIR FM_TEST_DATA "/onnx/train/"

static const struct fm_backend *cpu_or_skip(void)
{
    const struct fm_backend *be = fm_backend_cpu();
#ifndef FM_HAVE_ONNX
    be = NULL;
#endif
    if (!be) {
        printf("skipped: this build has no CPU backend or no ONNX frontend\n");
        skip();
    }
    return be;
}

/* The bindings a small export needs: token ids (and BERT's mask and token types) of 2 x 16;
 * images take --batch 2. */
static size_t bindings_for(const char *name, struct fm_input_binding *b)
{
    const struct fm_shape bs = {2, {2, 16}};
    size_t n = 0;
    if (strstr(name, "gpt2") || strstr(name, "bert") || strstr(name, "llama"))
        b[n++] = (struct fm_input_binding){"ids", bs};
    if (strstr(name, "bert")) {
        b[n++] = (struct fm_input_binding){"attention_mask", bs};
        b[n++] = (struct fm_input_binding){"token_type_ids", bs};
    }
    return n;
}

/* Every small export trains: four steps on one fixed batch (SGD, lr 0.01, momentum 0.9) and
 * the loss of the last is below the first's. Per-layer times are on, so every layer reports
 * forward time and, where a gradient flows, backward time. */
static void test_exports_train(void **unused)
{
    (void)unused;
    cpu_or_skip();
    static const char *const names[] = {
        "gpt2_small", "bert_small", "llama_small", "vit_small", "convnext_tiny",
        "densenet121", "mnasnet0_5", "shufflenet_v2_x0_5", "regnet_y_400mf", "squeezenet1_1",
        "efficientnet_v2_s", "swin_t",
    };
    struct fm_ctx *ctx = test_ctx();
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), TRAIN_DIR "%s.onnx", names[i]);
        struct fm_input_binding b[3];
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_MEASURE);
        o.model = path;
        o.load.bindings = b;
        o.load.n_bindings = bindings_for(names[i], b);
        o.load.zoo.batch = 2;
        o.load.batch_given = o.load.n_bindings == 0;
        o.peak = 1e11;   /* no probe */
        o.run.steps = 4;
        o.run.warmup = 0;
        o.run.threads = 2;
        struct fm_session *s = test_session_ok(ctx, &o);
        const struct fm_measurement *m = s->measurement;
        printf("%-20s loss %.4f -> %.4f, step %.1f ms\n", names[i], m->loss_first, m->loss_last,
               m->step_ms_median);
        if (!(isfinite(m->loss_first) && m->loss_last < m->loss_first))
            fail_msg("%s: the loss did not fall (%g -> %g)", names[i], m->loss_first,
                     m->loss_last);
        fm_session_free(s);
    }
    fm_ctx_free(ctx);
}

/* The per-layer report of a transformer: every layer timed forward; backward timed where a
 * gradient flows, "no grad" (JSON: gradient false) where none does, never a zero time: the
 * causal mask (Trilu of ones, its Cast to bool) and the position ids (Range) have no backward,
 * the attention MatMuls do. */
static void test_no_grad_layers(void **unused)
{
    (void)unused;
    cpu_or_skip();
    char *out = NULL, *err = NULL;
    int rc = test_run_cli("measure " TRAIN_DIR "gpt2_small.onnx --input ids=2x16 --steps 1 "
                          "--warmup 0 --peak 1e11 --format json",
                          &out, &err);
    if (rc != 0)
        fail_msg("measure failed (%d): %s", rc, err);
    int with = 0, without = 0;
    for (const char *p = strstr(out, "\"layers\""); p && (p = strstr(p, "\"name\": \"")); p++) {
        const char *end = strchr(p, '}');
        const char *g = strstr(p, "\"gradient\": ");
        assert_non_null(g);
        assert_true(g < end);
        bool has = strncmp(g + strlen("\"gradient\": "), "true", 4) == 0;
        const char *bwd = strstr(p, "\"bwd_data_ms\": ");
        double bwd_ms = strtod(bwd + strlen("\"bwd_data_ms\": "), NULL);
        const char *op = strstr(p, "\"op\": \"") + strlen("\"op\": \"");
        if (has) {
            with++;
        } else {
            without++;
            assert_true(bwd_ms == 0.0);   /* nothing ran, and the report says why */
            if (strncmp(op, "MatMul", 6) == 0 || strncmp(op, "LayerNorm", 9) == 0)
                fail_msg("a %.9s layer has no gradient", op);
        }
        if (strncmp(op, "Range", 5) == 0 || strncmp(op, "Trilu", 5) == 0)
            assert_false(has);
    }
    assert_true(with >= 20);
    assert_true(without >= 2);
    free(out);
    free(err);
    /* the table says it in words */
    rc = test_run_cli("measure " TRAIN_DIR "gpt2_small.onnx --input ids=2x16 --steps 1 "
                      "--warmup 0 --peak 1e11",
                      &out, &err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "no grad"));
    free(out);
    free(err);
}

/* ---- a whole step against PyTorch ---- */

struct record {
    char kind[8], name[160];
    uint64_t n;
    float *v;
};

/* Reads "<kind> <name> <count> <values...>" lines; '#' lines are comments. */
static size_t load_records(const char *path, struct record **out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s (made by tools/make_train_goldens.py)", path);
    size_t n = 0, cap = 64;
    struct record *r = calloc(cap, sizeof(*r));
    char kind[8], name[160];
    unsigned long long count;
    int c;
    while ((c = fgetc(f)) != EOF) {
        if (c == '#' || c == '\n') {
            while (c != '\n' && c != EOF)
                c = fgetc(f);
            continue;
        }
        ungetc(c, f);
        if (fscanf(f, "%7s %159s %llu", kind, name, &count) != 3)
            fail_msg("%s: record %zu is malformed", path, n + 1);
        if (n == cap) {
            cap *= 2;
            r = realloc(r, cap * sizeof(*r));
        }
        snprintf(r[n].kind, sizeof(r[n].kind), "%s", kind);
        snprintf(r[n].name, sizeof(r[n].name), "%s", name);
        r[n].n = count;
        r[n].v = malloc(sizeof(float) * (count ? count : 1));
        for (uint64_t k = 0; k < count; k++) {
            if (fscanf(f, "%f", &r[n].v[k]) != 1)
                fail_msg("%s: '%s' has fewer than %llu values", path, name, count);
        }
        n++;
    }
    fclose(f);
    *out = r;
    return n;
}

/* |got - ref| <= atol + rtol |ref| with atol a fraction of the record's largest |ref|: the
 * networks compute in float32 with sums of up to a few hundred terms in other orders than
 * PyTorch's (1e-6 relative), and the goldens carry 6 significant digits; a wrong mask, scale,
 * epsilon or a gradient delivered twice is off by 1e-2 and more. atol is at least 1e-9: a
 * gradient that is zero in exact arithmetic (a key projection's bias: softmax does not change
 * when every score of a query moves by one constant) is float32 cancellation noise, 1e-11 on
 * both sides with any sign. */
#define STEP_RTOL 1e-3
#define STEP_ATOL_FRACTION 1e-4
#define STEP_ATOL_MIN 1e-9

static void compare(const char *net, const struct record *r, const float *got)
{
    double big = 0;
    for (uint64_t k = 0; k < r->n; k++)
        big = fmax(big, fabs(r->v[k]));
    double atol = fmax(STEP_ATOL_FRACTION * big, STEP_ATOL_MIN);
    for (uint64_t k = 0; k < r->n; k++) {
        double err = fabs((double)got[k] - r->v[k]);
        if (err > atol + STEP_RTOL * fabs(r->v[k]))
            fail_msg("%s: %s '%s'[%llu] = %.7g, PyTorch %.7g (tolerance %.3g)", net, r->kind,
                     r->name, (unsigned long long)k, got[k], r->v[k],
                     atol + STEP_RTOL * fabs(r->v[k]));
    }
}

static void step_against_pytorch(const char *net)
{
    const struct fm_backend *be = cpu_or_skip();
    struct fm_ctx *ctx = test_ctx();
    char path[512];
    snprintf(path, sizeof(path), FM_TEST_DATA "/goldens/train_%s.txt", net);
    struct record *r;
    size_t nr = load_records(path, &r);
    snprintf(path, sizeof(path), TRAIN_DIR "%s.onnx", net);
    struct fm_input_binding b[3];
    struct fm_load_opts lo;
    fm_load_opts_init(&lo);
    lo.bindings = b;
    lo.n_bindings = bindings_for(net, b);
    lo.zoo.batch = 2;
    lo.batch_given = lo.n_bindings == 0;
    struct fm_graph *g;
    struct fm_loss_info loss;
    FM_ASSERT_OK(ctx, fm_model_load(ctx, path, &lo, &g));
    FM_ASSERT_OK(ctx, fm_graph_add_loss(g, FM_NONE, &loss));
    assert_int_equal(loss.n, 1);
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.lr = 0.0;   /* the step leaves the weights as they were */
    o.momentum = 0.0;
    o.threads = 2;
    void *state = NULL;
    FM_ASSERT_OK(ctx, be->prepare(ctx, g, &o, &state));
    int written = 0, params = 0;
    for (size_t i = 0; i < nr; i++) {
        if (strcmp(r[i].kind, "init") && strcmp(r[i].kind, "input"))
            continue;
        fm_tid t = fm_graph_find_tensor(g, r[i].name);
        if (t == FM_NONE)
            fail_msg("%s: the golden's '%s' is not a tensor of the export", net, r[i].name);
        FM_ASSERT_OK(ctx, be->write(state, t, r[i].v, r[i].n));
        written++;
    }
    for (size_t i = 0; i < fm_graph_tensor_count(g); i++)
        params += fm_graph_tensor(g, (fm_tid)i)->role == FM_ROLE_PARAM;
    struct fm_step_timing st = {0};
    FM_ASSERT_OK(ctx, be->step(state, &st));
    int compared = 0;
    for (size_t i = 0; i < nr; i++) {
        float *got = malloc(sizeof(float) * (r[i].n ? r[i].n : 1));
        if (!strcmp(r[i].kind, "loss")) {
            got[0] = (float)st.loss;
            compare(net, &r[i], got);
            compared++;
        } else if (!strcmp(r[i].kind, "out") || !strcmp(r[i].kind, "grad")) {
            fm_tid t = fm_graph_find_tensor(g, r[i].name);
            assert_int_not_equal(t, FM_NONE);
            FM_ASSERT_OK(ctx, be->read(state, t, r[i].kind[0] == 'g', got, r[i].n));
            compare(net, &r[i], got);
            compared++;
        }
        free(got);
    }
    printf("%s: %d values written (%d parameters in the graph), %d records match PyTorch\n", net,
           written, params, compared);
    assert_true(compared >= 5);
    be->release(state);
    fm_graph_free(g);
    for (size_t i = 0; i < nr; i++)
        free(r[i].v);
    free(r);
    fm_ctx_free(ctx);
}

static void test_gpt2_step(void **unused)
{
    (void)unused;
    step_against_pytorch("gpt2_small");
}

static void test_bert_step(void **unused)
{
    (void)unused;
    step_against_pytorch("bert_small");
}

static void test_vit_step(void **unused)
{
    (void)unused;
    step_against_pytorch("vit_small");
}

/* RMSNorm, rotary embeddings (the cos/sin tables built in the graph), SwiGLU, causal mask. */
static void test_llama_step(void **unused)
{
    (void)unused;
    step_against_pytorch("llama_small");
}

/* ---- memory before anything runs ---- */

static uint64_t train_memory(struct fm_ctx *ctx, const char *model, int64_t batch)
{
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = model;
    o.load.zoo.batch = batch;
    o.load.batch_given = true;
    struct fm_session *s = test_session_ok(ctx, &o);
    uint64_t m = 0;
    FM_ASSERT_OK(ctx, fm_counts_training_memory(s->counts, &m));
    fm_session_free(s);
    return m;
}

static void test_memory_refused(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    const double cap = 1e9;
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_MEASURE);
    o.model = "resnet18";
    o.load.zoo.batch = 64;
    o.load.batch_given = true;
    o.memory_cap = cap;
    o.run.steps = 1;
    o.run.warmup = 0;
    struct fm_session *s = NULL;
    assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_NOMEM);
    assert_null(s);
    EXPECT_MESSAGE(ctx, "resnet18", "batch 64", "fm_session_opts.memory_cap", "nothing was run",
                   "the largest batch that fits is");
    const char *at = strstr(fm_ctx_error(ctx), "the largest batch that fits is ");
    long best = strtol(at + strlen("the largest batch that fits is "), NULL, 10);
    assert_true(best > 1 && best < 64);
    /* the batch named fits, the next does not: counted, not extrapolated */
    assert_true((double)train_memory(ctx, "resnet18", best) <= cap);
    assert_true((double)train_memory(ctx, "resnet18", best + 1) > cap);
    assert_true((double)train_memory(ctx, "resnet18", 64) > cap);
    fm_ctx_free(ctx);
}

/* A constant index past the end of a table (Gather of a 4-row embedding at [0, 5]) is refused
 * when the step is prepared, naming the layer, the constant and the table's size; no step runs
 * (the report would print a step time). */
static void test_index_out_of_range(void **unused)
{
    (void)unused;
    cpu_or_skip();
    char *out = NULL, *err = NULL;
    int rc = test_run_cli("measure " FM_TEST_DATA "/onnx/bad_token_ids.onnx --steps 1 "
                          "--warmup 0 --peak 1e11",
                          &out, &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "layer 'embed': index 5 (constant 'ids', element 1) is outside "
                                "[-4, 4): the table has 4 rows"));
    assert_null(strstr(out, "step "));
    free(out);
    free(err);
}

/* The counted step memory is a floor of what the backend takes (oneDNN's blocked layouts,
 * both gradients of a residual, scratch: DenseNet-121's step at batch 2 counts 117 MB and its
 * buffers take more than 150 MB). A cap between the two passes the counted check and is then
 * refused by the backend while it plans, naming both sizes; no step runs. (ViT-H/14 at batch
 * 2, counted 12.2 GB, took 18 GB and was killed by the kernel before this check existed.) */
static void test_backend_memory_refused(void **unused)
{
    (void)unused;
    cpu_or_skip();
    char *out = NULL, *err = NULL;
    int rc = test_run_cli("measure " TRAIN_DIR "densenet121.onnx --batch 2 --max-memory 125M "
                          "--steps 1 --warmup 0 --peak 1e11",
                          &out, &err);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "the CPU backend's buffers for this step"));
    assert_non_null(strstr(err, "grow past the 125 MB it may use"));
    assert_non_null(strstr(err, "nothing was run"));
    assert_null(strstr(out, "step "));
    free(out);
    free(err);
}

/* --loss-on: the output to train, or an error that lists the outputs */
static void test_loss_on(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_input_binding b = {"ids", {2, {2, 8}}};
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = FM_TEST_DATA "/onnx/gpt2_block_op17.onnx";
    o.load.bindings = &b;
    o.load.n_bindings = 1;
    o.loss_on = "logits";
    struct fm_session *s = NULL;
    assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_INVALID);
    assert_null(s);
    EXPECT_MESSAGE(ctx, "fm_session_opts.loss_on", "'logits'", "its outputs: out");
    o.loss_on = "out";
    s = test_session_ok(ctx, &o);
    assert_int_equal(s->loss.n, 1);
    assert_int_equal(s->loss.loss[0].kind, FM_LOSS_NEXT_TOKEN);
    fm_session_free(s);
    fm_ctx_free(ctx);
}

static void test_bytes_parse(void **unused)
{
    (void)unused;
    const struct {
        const char *text;
        double bytes;
    } ok[] = {{"8G", 8e9}, {"8gb", 8e9}, {"512MB", 512e6}, {"1.5GiB", 1.5 * 1073741824.0},
              {"4096", 4096}, {"2KiB", 2048}, {"3TB", 3e12}, {"100B", 100}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        double b = -1;
        assert_true(fm_bytes_parse(ok[i].text, &b));
        assert_true(b == ok[i].bytes);
    }
    const char *bad[] = {"", "G", "8X", "-1G", "8 GBs", "eight"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        double b;
        assert_false(fm_bytes_parse(bad[i], &b));
    }
    /* the CLI: a bad size is a usage error that says what it expects */
    char *out = NULL, *err = NULL;
    assert_int_equal(test_run_cli("measure resnet18 --max-memory 8X", &out, &err), 2);
    assert_non_null(strstr(err, "--max-memory"));
    free(out);
    free(err);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_values),
        cmocka_unit_test(test_gpt2_step),
        cmocka_unit_test(test_bert_step),
        cmocka_unit_test(test_vit_step),
        cmocka_unit_test(test_llama_step),
        cmocka_unit_test(test_index_out_of_range),
        cmocka_unit_test(test_backend_memory_refused),
        cmocka_unit_test(test_exports_train),
        cmocka_unit_test(test_no_grad_layers),
        cmocka_unit_test(test_memory_refused),
        cmocka_unit_test(test_loss_on),
        cmocka_unit_test(test_bytes_parse),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
