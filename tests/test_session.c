/* The session (src/analysis/session.c) and the loss policy (src/frontend/loss.c):
 *  - the loss each kind of output gets (classifier, language model, anything else), with exact
 *    counts of the MSE rule; a model's own loss kept; inference without one; several outputs;
 *  - count and measure of the same ONNX file count one graph: for every ONNX export in
 *    tests/data, a count session and a measure session (dry run: the backend is asked what it
 *    can run, nothing runs) report the same loss nodes and the same step FLOPs; through the CLI,
 *    `count --train` and a real `measure` of resnet18 agree on both;
 *  - the device as people name it (table alias, nvidia-smi's names, unknown names as a usage
 *    error; the names nvidia-smi and PyTorch print, with their memory and notes for ambiguous
 *    ones), the precision from the storage dtype and the bytes from the precision (mixed
 *    precision, --dtype, fp64), and one peak: predict, utilization and measure quote
 *    utilization against the same figure;
 *  - the memory check: needed against the device's memory, and the largest batch that fits. */
#include "support.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

#define DATA FM_TEST_DATA "/onnx/"

static uint64_t step_flops(const struct fm_counts *c)
{
    uint64_t f = 0;
    for (int p = 0; p < FM_PHASE_COUNT; p++)
        f += fm_work_flops(&c->total[p]);
    return f;
}

/* ---- the loss policy ---- */

static void test_loss_classifier_zoo_and_onnx(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    const char *models[] = {"resnet18", DATA "resnet18_op13.onnx"};
    for (size_t i = 0; i < 2; i++) {
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_WORK);
        o.model = models[i];
        o.load.zoo.batch = 3;
        o.load.batch_given = true;
        struct fm_session *s = test_session_ok(ctx, &o);
        assert_int_equal(s->loss.n, 1);
        const struct fm_loss *l = &s->loss.loss[0];
        assert_int_equal(l->kind, FM_LOSS_CROSS_ENTROPY);
        assert_true(l->added);
        assert_int_equal(l->classes, 1000);
        assert_int_equal(l->positions, 3);
        const struct fm_node *n = fm_graph_node(s->graph, l->node);
        assert_int_equal(n->op, FM_OP_CROSS_ENTROPY);
        assert_string_equal(n->name, "loss");
        assert_string_equal(fm_graph_tensor(s->graph, n->in[1])->name, "labels");
        assert_non_null(strstr(s->loss.summary, "cross-entropy over 1000 classes"));
        fm_session_free(s);
    }
    fm_ctx_free(ctx);
}

static void test_loss_language_model(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_input_binding b = {"ids", {2, {2, 16}}};
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = DATA "gpt2_block_op13.onnx";
    o.load.bindings = &b;
    o.load.n_bindings = 1;
    struct fm_session *s = test_session_ok(ctx, &o);
    assert_int_equal(s->loss.n, 1);
    const struct fm_loss *l = &s->loss.loss[0];
    /* logits (2, 16, 50) of token ids (2, 16): cross-entropy over 50 words at 32 positions */
    assert_int_equal(l->kind, FM_LOSS_NEXT_TOKEN);
    assert_int_equal(l->classes, 50);
    assert_int_equal(l->positions, 32);
    const struct fm_node *ce = fm_graph_node(s->graph, l->node);
    const struct fm_tensor *logits = fm_graph_tensor(s->graph, ce->in[0]);
    const struct fm_tensor *labels = fm_graph_tensor(s->graph, ce->in[1]);
    assert_int_equal(logits->shape.rank, 2);
    assert_int_equal(logits->shape.dims[0], 32);
    assert_int_equal(logits->shape.dims[1], 50);
    assert_int_equal(labels->shape.dims[0], 32);
    /* the view to (B*S, V) costs nothing */
    const struct fm_node *view = fm_graph_node(s->graph, logits->producer);
    assert_int_equal(view->op, FM_OP_RESHAPE);
    for (int p = 0; p < FM_PHASE_COUNT; p++)
        assert_int_equal(fm_work_flops(&s->counts->nodes[logits->producer].phase[p]), 0);
    /* cross-entropy over E = 32*50 logits, N = 32 rows (src/ops/loss.c):
     * fwd cmp E-N, add E + (E-N) + 3N-1, special E+N, div 1 */
    const uint64_t E = 32 * 50, N = 32;
    const struct fm_work *f = &s->counts->nodes[l->node].phase[FM_PHASE_FWD];
    assert_int_equal(f->prim[FM_PRIM_CMP], E - N);
    assert_int_equal(f->prim[FM_PRIM_ADD], E + (E - N) + 3 * N - 1);
    assert_int_equal(f->prim[FM_PRIM_SPECIAL], E + N);
    assert_int_equal(f->prim[FM_PRIM_DIV], 1);
    fm_session_free(s);
    fm_ctx_free(ctx);
}

/* A conv net whose output is a feature map, not logits: the policy gives it a mean squared
 * error against a random target of the same shape. */
static void test_loss_mse_counts(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "features", &g));
    struct fm_shape xs = {4, {2, 3, 8, 8}}, ws = {4, {4, 3, 3, 3}};
    fm_tid in[2];
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "x", FM_ROLE_INPUT, FM_DTYPE_FP32, &xs, &in[0]));
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "w", FM_ROLE_PARAM, FM_DTYPE_FP32, &ws, &in[1]));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.kernel[0] = a.kernel[1] = 3;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_CONV, "conv", &a, in, 2, NULL, 1, NULL));
    struct fm_loss_info li;
    FM_ASSERT_OK(ctx, fm_graph_add_loss(g, FM_NONE, &li));
    assert_int_equal(li.n, 1);
    const struct fm_loss *l = &li.loss[0];
    assert_int_equal(l->kind, FM_LOSS_MSE);
    assert_true(l->added);
    assert_non_null(strstr(li.summary, "mean squared error"));
    const struct fm_node *n = fm_graph_node(g, l->node);
    assert_int_equal(n->op, FM_OP_MSE_LOSS);
    const struct fm_tensor *t = fm_graph_tensor(g, n->in[1]);
    assert_string_equal(t->name, "targets");
    assert_int_equal(t->role, FM_ROLE_INPUT);
    assert_int_equal(t->shape.rank, 4);
    assert_int_equal(t->shape.dims[1], 4);
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    struct fm_counts *c = NULL;
    FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &c));
    /* E = 2*4*8*8 = 512 elements. src/ops/loss.c: fwd d = y - t (E add), d*d (E mul), sum
     * (E-1 add), mean (1 div); bwd to y: d again (E add), times 2/E (E mul); the target is an
     * input: no gradient */
    const uint64_t e = 2 * 4 * 8 * 8;
    const struct fm_node_cost *nc = &c->nodes[l->node];
    assert_int_equal(nc->phase[FM_PHASE_FWD].prim[FM_PRIM_ADD], 2 * e - 1);
    assert_int_equal(nc->phase[FM_PHASE_FWD].prim[FM_PRIM_MUL], e);
    assert_int_equal(nc->phase[FM_PHASE_FWD].prim[FM_PRIM_DIV], 1);
    assert_int_equal(fm_work_flops(&nc->phase[FM_PHASE_FWD]), 3 * e);
    assert_int_equal(nc->phase[FM_PHASE_BWD_DATA].prim[FM_PRIM_ADD], e);
    assert_int_equal(nc->phase[FM_PHASE_BWD_DATA].prim[FM_PRIM_MUL], e);
    assert_int_equal(fm_work_flops(&nc->phase[FM_PHASE_BWD_DATA]), 2 * e);
    assert_int_equal(fm_work_flops(&nc->phase[FM_PHASE_BWD_WEIGHT]), 0);
    /* bytes: fwd reads y and t, writes the fp32 loss; bwd reads dL (4), y and t, writes dy */
    assert_int_equal(nc->phase[FM_PHASE_FWD].bytes_read, 2 * 4 * e);
    assert_int_equal(nc->phase[FM_PHASE_FWD].bytes_written, 4);
    assert_int_equal(nc->phase[FM_PHASE_BWD_DATA].bytes_read, 4 + 2 * 4 * e);
    assert_int_equal(nc->phase[FM_PHASE_BWD_DATA].bytes_written, 4 * e);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* A graph built by hand: x -> Linear(w) -> y, and what the policy gives it. */
static struct fm_graph *two_heads(struct fm_ctx *ctx, bool second_head, bool own_loss)
{
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "heads", &g));
    struct fm_shape xs = {2, {4, 8}}, ws = {2, {3, 8}}, vs = {2, {1, 8}}, ls = {1, {4}};
    fm_tid x, w, v, in[2], y, z, labels;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "x", FM_ROLE_INPUT, FM_DTYPE_FP32, &xs, &x));
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "w", FM_ROLE_PARAM, FM_DTYPE_FP32, &ws, &w));
    in[0] = x;
    in[1] = w;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_LINEAR, "fc", NULL, in, 2, NULL, 1, &y));
    if (second_head) {   /* a (4, 1) regression head next to the (4, 3) classifier */
        FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "v", FM_ROLE_PARAM, FM_DTYPE_FP32, &vs, &v));
        in[1] = v;
        FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_LINEAR, "reg", NULL, in, 2, NULL, 1, &z));
    }
    if (own_loss) {
        FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "y_true", FM_ROLE_INPUT, FM_DTYPE_INT64, &ls,
                                              &labels));
        in[0] = y;
        in[1] = labels;
        FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_CROSS_ENTROPY, "my_loss", NULL, in, 2, NULL,
                                            1, NULL));
    }
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    return g;
}

static void test_loss_own_several_none(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_loss_info li;
    /* a model that brings its loss keeps it, and nothing is added */
    struct fm_graph *g = two_heads(ctx, false, true);
    size_t nodes = fm_graph_node_count(g);
    FM_ASSERT_OK(ctx, fm_graph_add_loss(g, FM_NONE, &li));
    assert_int_equal(li.n, 1);
    assert_int_equal(li.loss[0].kind, FM_LOSS_MODEL);
    assert_false(li.loss[0].added);
    assert_string_equal(fm_graph_node(g, li.loss[0].node)->name, "my_loss");
    assert_int_equal(fm_graph_node_count(g), nodes);
    fm_graph_free(g);
    /* two heads: cross-entropy on the (4, 3) one, MSE on the (4, 1) one */
    g = two_heads(ctx, true, false);
    FM_ASSERT_OK(ctx, fm_graph_add_loss(g, FM_NONE, &li));
    assert_int_equal(li.n, 2);
    int ce = li.loss[0].kind == FM_LOSS_CROSS_ENTROPY ? 0 : 1;
    assert_int_equal(li.loss[ce].kind, FM_LOSS_CROSS_ENTROPY);
    assert_int_equal(li.loss[ce].classes, 3);
    assert_int_equal(li.loss[1 - ce].kind, FM_LOSS_MSE);
    assert_non_null(fm_graph_find_tensor(g, "labels") != FM_NONE ? "" : NULL);
    assert_non_null(fm_graph_find_tensor(g, "targets") != FM_NONE ? "" : NULL);
    assert_string_not_equal(fm_graph_node(g, li.loss[0].node)->name,
                            fm_graph_node(g, li.loss[1].node)->name);
    fm_graph_free(g);
    /* an output no parameter reaches: nothing to train, no loss, and the reason */
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "frozen", &g));
    struct fm_shape xs = {2, {4, 8}};
    fm_tid x, y;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "x", FM_ROLE_INPUT, FM_DTYPE_FP32, &xs, &x));
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_RELU, "relu", NULL, &x, 1, NULL, 1, &y));
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    FM_ASSERT_OK(ctx, fm_graph_add_loss(g, FM_NONE, &li));
    assert_int_equal(li.n, 0);
    assert_non_null(strstr(li.summary, "trainable"));
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

static void test_loss_inference_has_none(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = "resnet18";
    o.count.mode = FM_MODE_INFER;
    struct fm_session *s = test_session_ok(ctx, &o);
    assert_int_equal(s->loss.n, 0);
    for (size_t i = 0; i < fm_graph_node_count(s->graph); i++)
        assert_int_not_equal(fm_op_class(fm_graph_node(s->graph, (fm_nid)i)->op), FM_CLASS_LOSS);
    fm_session_free(s);
    fm_ctx_free(ctx);
}

/* ---- count and measure count one graph ---- */

static bool is_model_fixture(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".onnx") == 0 && strncmp(name, "bad_", 4) != 0 &&
           strncmp(name, "unknown_", 8) != 0 && strcmp(name, "external.onnx") != 0;
}

static void test_count_and_measure_one_graph(void **state)
{
    (void)state;
#ifndef FM_HAVE_ONNX
    skip();
#endif
    struct fm_ctx *ctx = test_ctx();
    DIR *d = opendir(FM_TEST_DATA "/onnx");
    assert_non_null(d);
    struct fm_input_binding ids = {"ids", {2, {2, 16}}};
    int compared = 0, with_loss = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_model_fixture(e->d_name))
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/onnx/%s", FM_TEST_DATA, e->d_name);
        struct fm_session *s[2] = {NULL, NULL};
        for (int k = 0; k < 2; k++) {
            struct fm_session_opts o;
            fm_session_opts_init(&o, k ? FM_TASK_MEASURE : FM_TASK_WORK);
            o.model = path;
            o.load.bindings = &ids;   /* only the files with an 'ids' input read it */
            o.load.n_bindings = strstr(e->d_name, "bert") || strstr(e->d_name, "gpt2") ||
                                strstr(e->d_name, "llama") || strstr(e->d_name, "symbolic");
            o.device = k ? "cpu" : NULL;   /* count on a device would probe it for its memory */
            o.dry_run = true;
            enum fm_status st = fm_session_run(ctx, &o, &s[k]);
            if (st)
                fail_msg("%s (%s): %s", e->d_name, k ? "measure" : "count", fm_ctx_error(ctx));
        }
        /* the same graph: nodes, loss nodes and their names, and the step's FLOPs */
        assert_int_equal(fm_graph_node_count(s[0]->graph), fm_graph_node_count(s[1]->graph));
        assert_int_equal(s[0]->loss.n, s[1]->loss.n);
        with_loss += s[0]->loss.n > 0;   /* a file without parameters has nothing to train */
        for (int i = 0; i < s[0]->loss.n; i++) {
            assert_int_equal(s[0]->loss.loss[i].kind, s[1]->loss.loss[i].kind);
            assert_string_equal(fm_graph_node(s[0]->graph, s[0]->loss.loss[i].node)->name,
                                fm_graph_node(s[1]->graph, s[1]->loss.loss[i].node)->name);
        }
        assert_string_equal(s[0]->loss.summary, s[1]->loss.summary);
        assert_true(step_flops(s[0]->counts) == step_flops(s[1]->counts));
        /* the measure session also knows what the CPU backend can run of it */
        assert_int_equal(s[1]->check.n_nodes, fm_graph_node_count(s[1]->graph));
        assert_true(s[1]->check.n_supported <= s[1]->check.n_nodes);
        assert_int_equal(s[1]->check.n_gaps == 0, s[1]->check.n_supported == s[1]->check.n_nodes);
        print_message("  %-28s %-36.36s %llu FLOP, cpu runs %zu/%zu layers\n", e->d_name,
                      s[0]->loss.summary, (unsigned long long)step_flops(s[0]->counts),
                      s[1]->check.n_supported, s[1]->check.n_nodes);
        fm_session_free(s[0]);
        fm_session_free(s[1]);
        compared++;
    }
    closedir(d);
    /* the torchvision exports at two opsets, and the blocks */
    assert_true(compared >= 60);
    assert_true(with_loss >= 60);
    fm_ctx_free(ctx);
}

#ifdef FM_HAVE_CJSON
static const cJSON *need(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v)
        fail_msg("no \"%s\" in the JSON", key);
    return v;
}
#endif

/* Through the CLI, with a real step on the CPU: the loss and the step FLOPs measure reports are
 * those count reports. */
static void test_cli_count_equals_measure(void **state)
{
    (void)state;
#if !defined(FM_HAVE_CJSON) || !defined(FM_HAVE_ONNX) || !defined(FM_HAVE_DNNL)
    printf("skipped: needs cJSON, ONNX and the CPU backend in the build\n");
    skip();
#else
    char *out[2] = {NULL, NULL}, *err = NULL;
    assert_int_equal(test_run_cli("count " DATA "resnet18_op13.onnx --train --format json",
                                  &out[0], &err), 0);
    free(err);
    assert_int_equal(test_run_cli("measure " DATA "resnet18_op13.onnx --steps 1 --warmup 0 "
                                  "--threads 1 --peak 1e11 --no-per-layer --format json",
                                  &out[1], &err), 0);
    free(err);
    cJSON *c = cJSON_Parse(out[0]), *m = cJSON_Parse(out[1]);
    assert_non_null(c);
    assert_non_null(m);
    double flops = 0;
    for (int p = 0; p < FM_PHASE_COUNT; p++)
        flops += need(need(need(c, "totals"), fm_phase_name((enum fm_phase)p)), "flops")->valuedouble;
    assert_true(flops == need(m, "step_flops")->valuedouble);
    const cJSON *cl = need(c, "loss"), *ml = need(m, "loss");
    assert_string_equal(need(cl, "summary")->valuestring, need(ml, "summary")->valuestring);
    const cJSON *a = need(cl, "losses"), *b = need(ml, "losses");
    assert_int_equal(cJSON_GetArraySize(a), 1);
    assert_int_equal(cJSON_GetArraySize(b), 1);
    assert_string_equal(need(cJSON_GetArrayItem(a, 0), "node")->valuestring,
                        need(cJSON_GetArrayItem(b, 0), "node")->valuestring);
    assert_string_equal(need(cJSON_GetArrayItem(a, 0), "node")->valuestring, "loss");
    cJSON_Delete(c);
    cJSON_Delete(m);
    free(out[0]);
    free(out[1]);
#endif
}

/* ---- devices, precision, peak ---- */

static void test_device_names(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    const struct {
        const char *given, *entry;
    } cases[] = {
        {"a100", "A100 SXM 80GB"},                      /* an alias */
        {"H100 SXM5 80GB", "H100 SXM5 80GB"},           /* the table's name */
        {"NVIDIA H100 80GB HBM3", "H100 SXM5 80GB"},    /* nvidia-smi on an H100 SXM */
        {"NVIDIA H100 PCIe", "H100 PCIe 80GB"},         /* "h100-pcie" beats "h100" */
        {"NVIDIA H800", "H800 SXM5 80GB"},              /* the H800, not the H100 */
        {"NVIDIA H800 80GB HBM3", "H800 SXM5 80GB"},
        {"NVIDIA A100-SXM4-40GB", "A100 SXM 40GB"},     /* "a100-40gb" beats "a100" */
        {"Tesla V100-SXM2-32GB", "V100 SXM2 32GB"},
        {"Tesla K80", "K80 (one die)"},                 /* what nvidia-smi and PyTorch see */
        {"k80", "K80"},                                 /* the short alias: the board */
        {"Tesla P100-PCIE-16GB", "P100 PCIe 16GB"},
        {"NVIDIA L4", "L4"},
        {"NVIDIA GeForce RTX 4090", "RTX 4090"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_ROOFLINE);
        o.model = "alexnet";
        o.device = cases[i].given;
        struct fm_session *s = test_session_ok(ctx, &o);
        if (strcmp(s->device->name, cases[i].entry) != 0)
            fail_msg("'%s' resolved to '%s', expected '%s'", cases[i].given, s->device->name,
                     cases[i].entry);
        fm_session_free(s);
    }
    /* an unknown name is a usage error with suggestions; so is no name */
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_PREDICT);
    o.model = "alexnet";
    o.device = "h1000";
    struct fm_session *s = NULL;
    assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_INVALID);
    assert_null(s);
    EXPECT_MESSAGE(ctx, "h1000", "nearest");
    o.device = NULL;
    assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "fm_session_opts.device");
    o.device = "cuda:x";
    assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "cuda:x");
    fm_ctx_free(ctx);
}

static fm_nid node_named(const struct fm_graph *g, const char *name)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++)
        if (strcmp(fm_graph_node(g, (fm_nid)i)->name, name) == 0)
            return (fm_nid)i;
    fail_msg("no node '%s'", name);
    return FM_NONE;
}

static uint64_t memory_of(struct fm_ctx *ctx, const char *model, int64_t batch, bool infer)
{
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = model;
    o.load.zoo.batch = batch;
    o.load.batch_given = true;
    if (infer)
        o.count.mode = FM_MODE_INFER;
    struct fm_session *s = test_session_ok(ctx, &o);
    uint64_t m = 0;
    FM_ASSERT_OK(ctx, fm_counts_training_memory(s->counts, &m));
    fm_session_free(s);
    return m;
}

static struct fm_session *storage_session(struct fm_ctx *ctx, const char *model,
                                          enum fm_precision prec, bool prec_given, int dtype)
{
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_ROOFLINE);
    o.model = model;
    o.device = "a100";
    o.load.zoo.batch = 4;
    o.load.batch_given = true;
    o.precision = prec;
    o.precision_given = prec_given;
    if (dtype >= 0) {
        o.load.zoo.dtype = (enum fm_dtype)dtype;
        o.load.dtype_given = true;
    }
    return test_session_ok(ctx, &o);
}

/* Device names as nvidia-smi and PyTorch print them resolve to their entries, with the memory
 * the name states and a note for ambiguous ones (a K80 die, aliases with siblings). */
static void test_device_names_as_drivers_print(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    const struct {
        const char *given, *entry;
        double mem_gb;        /* the memory the session uses */
        const char *note;     /* a word the note must hold; NULL: no note */
    } cases[] = {
        {"NVIDIA H100 80GB HBM3", "H100 SXM5 80GB", 80, NULL},
        {"NVIDIA H800", "H800 SXM5 80GB", 80, NULL},   /* no h100 sibling note either */
        {"NVIDIA H800 80GB HBM3", "H800 SXM5 80GB", 80, NULL},
        {"NVIDIA A100-SXM4-40GB", "A100 SXM 40GB", 40, NULL},
        {"Tesla P100-PCIE-16GB", "P100 PCIe 16GB", 16, NULL},
        {"NVIDIA GeForce RTX 4090", "RTX 4090", 24, NULL},
        {"NVIDIA L4", "L4", 24, NULL},
        /* a V100 with 16 GB: the 32 GB entry's figures, the memory its name states */
        {"Tesla V100-SXM2-16GB", "V100 SXM2 32GB", 16, "16 GB of memory, as its name says"},
        /* PyTorch sees one die of a K80 board; the short alias is the board */
        {"Tesla K80", "K80 (one die)", 12, "fm_session_opts.device k80 takes the whole board"},
        {"k80", "K80", 24, "k80-die"},
        /* the short aliases that have siblings name them */
        {"a100", "A100 SXM 80GB", 80, "a100-40gb"},
        {"h100", "H100 SXM5 80GB", 80, "h100-pcie"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_ROOFLINE);
        o.model = "alexnet";
        o.device = cases[i].given;
        struct fm_session *s = test_session_ok(ctx, &o);
        if (strncmp(s->device->name, cases[i].entry, strlen(cases[i].entry)) != 0)
            fail_msg("'%s' resolved to '%s', expected '%s'", cases[i].given, s->device->name,
                     cases[i].entry);
        if (fabs(s->device->mem_bytes - cases[i].mem_gb * 1e9) > 0.5e9)
            fail_msg("'%s': %g GB of memory, expected %g", cases[i].given,
                     s->device->mem_bytes / 1e9, cases[i].mem_gb);
        if (cases[i].note)
            test_expect_in(s->device_note, cases[i].note);
        else if (s->device_note[0])
            fail_msg("'%s': unexpected note '%s'", cases[i].given, s->device_note);
        fm_session_free(s);
    }
    /* the CLI says the note on stderr, and the report still runs */
    char *out, *err;
    assert_int_equal(test_run_cli("roofline alexnet --device a100", &out, &err), 0);
    test_expect_in(err, "'a100' is the A100 SXM 80GB");
    test_expect_in(err, "a100-40gb (A100 SXM 40GB)");
    free(out);
    free(err);
    fm_ctx_free(ctx);
}

static void test_targets(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_target t;
    FM_ASSERT_OK(ctx, fm_target_parse(ctx, NULL, &t));
    assert_int_equal(t.kind, FM_TARGET_CPU);
    FM_ASSERT_OK(ctx, fm_target_parse(ctx, "cpu", &t));
    assert_int_equal(t.kind, FM_TARGET_CPU);
    FM_ASSERT_OK(ctx, fm_target_parse(ctx, "cuda", &t));
    assert_int_equal(t.kind, FM_TARGET_CUDA);
    assert_int_equal(t.ordinal, 0);
    FM_ASSERT_OK(ctx, fm_target_parse(ctx, "cuda:3", &t));
    assert_int_equal(t.ordinal, 3);
    FM_ASSERT_OK(ctx, fm_target_parse(ctx, "gpu", &t));
    assert_int_equal(t.kind, FM_TARGET_CUDA);
    assert_int_equal(fm_target_parse(ctx, "cuda:", &t), FM_ERR_INVALID);
    assert_int_equal(fm_target_parse(ctx, "cuda:-1", &t), FM_ERR_INVALID);
    assert_int_equal(fm_target_parse(ctx, "cuda:1x", &t), FM_ERR_INVALID);
    assert_int_equal(fm_target_parse(ctx, "a100", &t), FM_ERR_NOT_FOUND);
    assert_int_equal(fm_target_parse(ctx, "tpu", &t), FM_ERR_NOT_FOUND);
    fm_ctx_free(ctx);
}

static void test_precision_from_dtype(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    const struct {
        enum fm_dtype dtype;
        enum fm_precision expect;
    } cases[] = {{FM_DTYPE_FP32, FM_PREC_FP32}, {FM_DTYPE_FP16, FM_PREC_FP16},
                 {FM_DTYPE_BF16, FM_PREC_BF16}, {FM_DTYPE_FP64, FM_PREC_FP64}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_ROOFLINE);
        o.model = "alexnet";
        o.device = "h100";
        o.load.zoo.dtype = cases[i].dtype;
        struct fm_session *s = test_session_ok(ctx, &o);
        assert_int_equal(s->precision, cases[i].expect);
        assert_false(s->torch_default);
        fm_session_free(s);
    }
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_ROOFLINE);
    o.model = "alexnet";
    o.device = "a100";
    o.load.zoo.dtype = FM_DTYPE_FP16;
    o.torch_default = true;
    struct fm_session *s = test_session_ok(ctx, &o);
    assert_true(s->torch_default);
    assert_string_equal(fm_session_precision_label(s), "torch-default");
    fm_session_free(s);
    fm_ctx_free(ctx);
}

/* The bytes follow the precision: mixed precision for fp16/bf16 (activations in half, weights
 * in fp32), fp8 as bf16 (Transformer Engine's recipe), --dtype overrides, fp64; the FLOPs stay
 * the same. */
static void test_storage_follows_precision(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session *f32 = storage_session(ctx, "resnet50", FM_PREC_FP32, false, -1);
    assert_int_equal(f32->storage_activations, FM_DTYPE_FP32);
    assert_int_equal(f32->storage_parameters, FM_DTYPE_FP32);
    const struct {
        enum fm_precision prec;
        int dtype;                     /* -1: no --dtype */
        enum fm_dtype act, param;
    } cases[] = {
        {FM_PREC_FP16, -1, FM_DTYPE_FP16, FM_DTYPE_FP32},   /* mixed precision, autocast */
        {FM_PREC_BF16, -1, FM_DTYPE_BF16, FM_DTYPE_FP32},
        {FM_PREC_FP64, -1, FM_DTYPE_FP64, FM_DTYPE_FP64},
        {FM_PREC_FP16, FM_DTYPE_FP32, FM_DTYPE_FP32, FM_DTYPE_FP32},   /* --dtype overrides */
        {FM_PREC_FP16, FM_DTYPE_FP16, FM_DTYPE_FP16, FM_DTYPE_FP16},   /* pure half */
        {FM_PREC_FP64, FM_DTYPE_FP64, FM_DTYPE_FP64, FM_DTYPE_FP64},   /* refused before */
        {FM_PREC_TF32, -1, FM_DTYPE_FP32, FM_DTYPE_FP32},
    };
    /* conv1 of resnet50 at batch 4: input 4x3x224x224, weight 64x3x7x7, output 4x64x112x112 */
    const double in = 4.0 * 3 * 224 * 224, w = 64.0 * 3 * 7 * 7, out = 4.0 * 64 * 112 * 112;
    fm_nid conv1 = node_named(f32->graph, "conv1");
    /* what backward keeps is mostly float, some not (max-pool indices): the float part is
     * what doubles from fp32 to fp64 */
    struct fm_session *f64 = storage_session(ctx, "resnet50", FM_PREC_FP64, true, FM_DTYPE_FP64);
    double kept_float = (double)(f64->counts->activation_bytes - f32->counts->activation_bytes);
    assert_true(kept_float > 0.9 * (double)f32->counts->activation_bytes);
    fm_session_free(f64);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fm_session *s = storage_session(ctx, "resnet50", cases[i].prec, true,
                                               cases[i].dtype);
        assert_int_equal(s->storage_activations, cases[i].act);
        assert_int_equal(s->storage_parameters, cases[i].param);
        double a = (double)fm_dtype_size(cases[i].act), p = (double)fm_dtype_size(cases[i].param);
        const struct fm_work *fw = &s->counts->nodes[conv1].phase[FM_PHASE_FWD];
        assert_true((double)fw->bytes_read == in * a + w * p);
        assert_true((double)fw->bytes_written == out * a);
        /* the counts are the same; weights, gradients and state follow the parameter type,
         * what backward keeps the activation type */
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
            assert_true(fm_work_flops(&s->counts->total[ph]) ==
                        fm_work_flops(&f32->counts->total[ph]));
        assert_true((double)s->counts->param_bytes == (double)f32->counts->param_bytes * p / 4);
        assert_true((double)s->counts->grad_bytes == (double)f32->counts->grad_bytes * p / 4);
        assert_true((double)s->counts->optimizer_state_bytes ==
                    (double)f32->counts->optimizer_state_bytes * p / 4);
        assert_true((double)s->counts->activation_bytes ==
                    (double)f32->counts->activation_bytes + kept_float * (a / 4 - 1));
        fm_session_free(s);
    }
    fm_session_free(f32);

    /* fp8 (a language model's matmuls on an H100's fp8 peak) stores what bf16 stores: bf16
     * activations inside autocast, fp32 weights, gradients and state, the same bytes */
    struct fm_session *by_prec[2] = {NULL, NULL};
    const enum fm_precision lm_prec[2] = {FM_PREC_BF16, FM_PREC_FP8};
    for (int i = 0; i < 2; i++) {
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_ROOFLINE);
        o.model = "gpt2";
        o.device = "h100";
        o.load.seq = 64;
        o.precision = lm_prec[i];
        o.precision_given = true;
        by_prec[i] = test_session_ok(ctx, &o);
        assert_int_equal(by_prec[i]->storage_activations, FM_DTYPE_BF16);
        assert_int_equal(by_prec[i]->storage_parameters, FM_DTYPE_FP32);
    }
    test_expect_in(by_prec[1]->storage_how, "fp8 matmuls");
    assert_true(by_prec[0]->counts->activation_bytes == by_prec[1]->counts->activation_bytes);
    assert_true(by_prec[0]->counts->param_bytes == by_prec[1]->counts->param_bytes);
    assert_true(by_prec[0]->counts->param_bytes == 124439808ull * 4);
    fm_session_free(by_prec[0]);
    fm_session_free(by_prec[1]);

    /* the roofline of the issue: resnet50 at batch 64 on fp16 moves about half the bytes */
    char *o32, *o16;
    assert_int_equal(test_run_cli("roofline resnet50 --device a100 --batch 64 --summary", &o32,
                                  NULL),
                     0);
    assert_int_equal(test_run_cli("roofline resnet50 --device a100 --batch 64 --precision fp16 "
                                  "--summary",
                                  &o16, NULL),
                     0);
    test_expect_in(o32, "storage fp32");
    test_expect_in(o16, "storage fp16 activations, fp32 weights (mixed precision)");
    double oi32 = atof(strstr(o32, "OI ") + 3), oi16 = atof(strstr(o16, "OI ") + 3);
    if (!(oi32 > 26 && oi32 < 27.5 && oi16 > 1.9 * oi32 && oi16 < 2.0 * oi32))
        fail_msg("OI %.1f at fp32, %.1f at fp16", oi32, oi16);
    free(o32);
    free(o16);

#ifdef FM_HAVE_ONNX
    /* an ONNX file at fp16: its weights stay as the file has them, activations halve */
    struct fm_session *file = storage_session(ctx, DATA "resnet18_op17.onnx", FM_PREC_FP16, true,
                                              -1);
    assert_int_equal(file->storage_activations, FM_DTYPE_FP16);
    assert_int_equal(file->storage_parameters, FM_DTYPE_FP32);
    fm_session_free(file);
    file = storage_session(ctx, DATA "resnet18_op17.onnx", FM_PREC_FP32, false, FM_DTYPE_BF16);
    assert_int_equal(file->storage_activations, FM_DTYPE_BF16);
    assert_int_equal(file->storage_parameters, FM_DTYPE_BF16);
    fm_session_free(file);
#endif
    fm_ctx_free(ctx);
}

/* predict, utilization and measure divide by one figure: the conv/matmul ceiling of the
 * precision (the A100 datasheet: 19.5 TFLOP/s fp32 vector, 156 tf32 and 312 fp16 tensor);
 * torch-default: the tf32 one. */
static void test_one_peak(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    const struct {
        enum fm_precision prec;
        bool torch_default;
        double expect;
    } cases[] = {{FM_PREC_FP32, false, 19.5e12}, {FM_PREC_TF32, false, 156e12},
                 {FM_PREC_FP16, false, 312e12}, {FM_PREC_FP32, true, 156e12}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double got[3];
        for (int k = 0; k < 3; k++) {
            enum fm_task task = k == 0 ? FM_TASK_PREDICT : k == 1 ? FM_TASK_UTILIZATION
                                                                  : FM_TASK_MEASURE;
            struct fm_session_opts o;
            fm_session_opts_init(&o, task);
            o.model = "alexnet";
            o.precision = cases[i].prec;
            o.precision_given = true;
            o.torch_default = cases[i].torch_default && task != FM_TASK_MEASURE;
            o.step_s = 0.1;
            if (task == FM_TASK_MEASURE) {
                if (cases[i].torch_default)
                    o.precision = FM_PREC_TF32;   /* measure runs one precision */
                o.device = "cpu";
                o.spec = "a100";
                o.dry_run = true;
            } else {
                o.device = "a100";
            }
            struct fm_session *s = test_session_ok(ctx, &o);
            got[k] = s->peak;
            if (task == FM_TASK_PREDICT)
                assert_true(s->prediction->peak_ref == s->peak);
            if (task == FM_TASK_UTILIZATION)
                assert_true(s->util.peak == s->peak);
            fm_session_free(s);
        }
        for (int k = 0; k < 3; k++) {
            if (got[k] != cases[i].expect)
                fail_msg("case %zu, task %d: peak %g, expected %g", i, k, got[k],
                         cases[i].expect);
        }
    }
    fm_ctx_free(ctx);
}

/* Does the step fit the device: the memory needed against the device's, and the largest batch
 * that fits (it fits, one more does not), in the session, the table, CSV and JSON. */
static void test_memory_fits_and_largest_batch(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    const struct {
        enum fm_task task;
        const char *model, *device;
        int64_t batch;
        bool infer, fits;
        double device_gb;
    } cases[] = {
        /* the two: 124 GB on an 80 GB card, 88 GB on a 24 GB board */
        {FM_TASK_PREDICT, "efficientnet_b7", "h100", 32, false, false, 80},
        {FM_TASK_PREDICT, "resnet50", "k80", 1024, false, false, 24},
        {FM_TASK_ROOFLINE, "resnet50", "k80", 1024, false, false, 24},
        {FM_TASK_WORK, "resnet50", "k80-die", 256, false, false, 12},
        {FM_TASK_WORK, "resnet50", "a100", 64, false, true, 80},
        {FM_TASK_ROOFLINE, "vgg16", "t4", 256, true, true, 16},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fm_session_opts o;
        fm_session_opts_init(&o, cases[i].task);
        o.model = cases[i].model;
        o.device = cases[i].device;
        o.load.zoo.batch = cases[i].batch;
        o.load.batch_given = true;
        if (cases[i].infer)
            o.count.mode = FM_MODE_INFER;
        struct fm_session *s = test_session_ok(ctx, &o);
        const struct fm_memory_check *m = &s->memory;
        assert_true(m->checked);
        assert_true(m->device_bytes == cases[i].device_gb * 1e9);
        uint64_t needed = memory_of(ctx, cases[i].model, cases[i].batch, cases[i].infer);
        assert_true(m->needed_bytes == needed);
        if (m->fits != cases[i].fits)
            fail_msg("%s batch %lld on %s: fits %d", cases[i].model, (long long)cases[i].batch,
                     cases[i].device, m->fits);
        assert_int_equal(m->fits, (double)needed <= m->device_bytes);
        /* the largest batch is counted: it fits, one more does not */
        assert_true(m->max_batch > 0);
        assert_true((double)memory_of(ctx, cases[i].model, m->max_batch, cases[i].infer) <=
                    m->device_bytes);
        assert_true((double)memory_of(ctx, cases[i].model, m->max_batch + 1, cases[i].infer) >
                    m->device_bytes);
        assert_int_equal(m->fits, m->max_batch >= cases[i].batch);
        fm_session_free(s);
    }
#ifdef FM_HAVE_ONNX
    /* a file whose batch is bound by name (--input ids=2x16): the batch is the bound one, and
     * the largest batch scales that binding */
    {
        struct fm_input_binding ids = {"ids", {2, {2, 16}}};
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_ROOFLINE);
        o.model = DATA "gpt2_block_op17.onnx";
        o.device = "l4";
        o.load.bindings = &ids;
        o.load.n_bindings = 1;
        struct fm_session *s = test_session_ok(ctx, &o);
        assert_int_equal(s->batch, 2);
        assert_int_equal(s->memory.batch, 2);
        int64_t max = s->memory.max_batch;
        assert_true(max > 2);
        for (int k = 0; k < 2; k++) {
            struct fm_input_binding b = {"ids", {2, {max + k, 16}}};
            struct fm_session_opts w;
            fm_session_opts_init(&w, FM_TASK_WORK);
            w.model = o.model;
            w.load.bindings = &b;
            w.load.n_bindings = 1;
            struct fm_session *t = test_session_ok(ctx, &w);
            uint64_t m;
            FM_ASSERT_OK(ctx, fm_counts_training_memory(t->counts, &m));
            assert_int_equal((double)m <= s->memory.device_bytes, k == 0);
            fm_session_free(t);
        }
        fm_session_free(s);
    }
#endif
    /* no device, no check */
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = "alexnet";
    struct fm_session *s = test_session_ok(ctx, &o);
    assert_false(s->memory.checked);
    fm_session_free(s);

    /* the CLI: the warning on stderr, the line in every table, "per GPU" with --gpus */
    char *out, *err;
    assert_int_equal(test_run_cli("predict efficientnet_b7 --device h100 --batch 32 --summary",
                                  &out, &err),
                     0);
    test_expect_in(err, "does not fit; the largest batch that fits is");
    test_expect_in(out, "DOES NOT FIT; largest batch that fits");
    free(out);
    free(err);
    assert_int_equal(test_run_cli("count resnet50 --device k80 --batch 1024", &out, &err), 0);
    char need[FM_FORMAT_SIZE], have[FM_FORMAT_SIZE], line[128];
    snprintf(line, sizeof(line), "K80: %s needed of %s",
             fm_format_bytes((double)memory_of(ctx, "resnet50", 1024, false), need),
             fm_format_bytes(24e9, have));   /* the board's 2 x 12 GB */
    test_expect_in(out, line);
    test_expect_in(err, "does not fit");
    free(out);
    free(err);
    assert_int_equal(test_run_cli("roofline resnet50 --device h100 --batch 256 --gpus 1 "
                                  "--summary",
                                  &out, &err),
                     2);   /* roofline has no --gpus */
    free(out);
    free(err);
    assert_int_equal(test_run_cli("predict resnet50 --device h100 --batch 512 --gpus 8 "
                                  "--summary",
                                  &out, &err),
                     0);
    test_expect_in(out, "needed per GPU of 80.0 GB");
    test_expect_in(out, "per GPU (global");
    test_expect_in(out, "on 8 GPUs)");
    free(out);
    free(err);
#ifdef FM_HAVE_CJSON
    assert_int_equal(test_run_cli("count resnet50 --device k80 --batch 1024 --format json", &out,
                                  NULL),
                     0);
    cJSON *j = cJSON_Parse(out);
    const cJSON *mem = cJSON_GetObjectItem(j, "memory");
    assert_non_null(mem);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(mem, "fits")));
    assert_true(cJSON_GetObjectItem(mem, "needed_bytes")->valuedouble ==
                (double)memory_of(ctx, "resnet50", 1024, false));
    assert_true(cJSON_GetObjectItem(mem, "max_batch")->valuedouble > 0);
    cJSON_Delete(j);
    free(out);
#endif
    fm_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss_classifier_zoo_and_onnx),
        cmocka_unit_test(test_loss_language_model),
        cmocka_unit_test(test_loss_mse_counts),
        cmocka_unit_test(test_loss_own_several_none),
        cmocka_unit_test(test_loss_inference_has_none),
        cmocka_unit_test(test_count_and_measure_one_graph),
        cmocka_unit_test(test_cli_count_equals_measure),
        cmocka_unit_test(test_device_names),
        cmocka_unit_test(test_device_names_as_drivers_print),
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_precision_from_dtype),
        cmocka_unit_test(test_storage_follows_precision),
        cmocka_unit_test(test_one_peak),
        cmocka_unit_test(test_memory_fits_and_largest_batch),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
