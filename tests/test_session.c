/* The session (src/analysis/session.c) and the loss policy (src/frontend/loss.c):
 *  - the loss each kind of output gets (classifier, language model, anything else), with exact
 *    counts of the MSE rule; a model's own loss kept; inference without one; several outputs;
 *  - count and measure of the same ONNX file count one graph: for every ONNX export in
 *    tests/data, a count session and a measure session (dry run: the backend is asked what it
 *    can run, nothing runs) report the same loss nodes and the same step FLOPs; through the CLI,
 *    `count --train` and a real `measure` of resnet18 agree on both;
 *  - the device as people name it (table alias, nvidia-smi's names, unknown names as a usage
 *    error), the precision from the storage dtype, and one peak: predict, utilization and
 *    measure quote utilization against the same figure. */
#include "support.h"

#include <dirent.h>
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
    EXPECT_MESSAGE(ctx, "--device");
    o.device = "cuda:x";
    assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "cuda:x");
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
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_precision_from_dtype),
        cmocka_unit_test(test_one_peak),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
