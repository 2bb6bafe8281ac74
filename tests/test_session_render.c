/* What the Python package reaches the library through (besides the session itself):
 *  - a session of an ONNX model in memory (fm_session_opts.model_data) counts what the session of
 *    the same file counts: its rendered report is byte for byte the file's, the name it is given
 *    standing for the file's; a name that is also a built-in's stays a name; an empty or
 *    malformed buffer is an error with a message, not a crash;
 *  - fm_session_render gives, for each task, the text its command prints on stdout (count table
 *    and JSON, roofline, predict, utilization), allocated on the context, and refuses to render
 *    without a place to put the text;
 *  - frozen parameters (fm_session_opts.frozen, PyTorch's requires_grad=False) are parameters
 *    without a gradient. */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA FM_TEST_DATA "/onnx/"

static char *render(struct fm_ctx *ctx, const struct fm_session *s, enum fm_format format)
{
    struct fm_report_opts ro;
    fm_report_opts_init(&ro);
    ro.format = format;
    char *text = NULL;
    size_t len = 0;
    FM_ASSERT_OK(ctx, fm_session_render(s, &ro, &text, &len));
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    return text;
}

/* The session of opts rendered in format, against the CLI's stdout for args. */
static void expect_cli(struct fm_ctx *ctx, const struct fm_session_opts *o, enum fm_format format,
                       const char *args)
{
    struct fm_session *s = test_session_ok(ctx, o);
    char *text = render(ctx, s, format);
    char *out = NULL, *err = NULL;
    assert_int_equal(test_run_cli(args, &out, &err), 0);
    assert_string_equal(text, out);
    free(out);
    free(err);
    fm_dealloc(ctx, text);
    fm_session_free(s);
}

static void test_render_as_cli(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = "resnet18";
    expect_cli(ctx, &o, FM_FORMAT_TABLE, "count resnet18");
    expect_cli(ctx, &o, FM_FORMAT_JSON, "count resnet18 --format json");
    o.load.zoo.batch = 4;
    o.load.batch_given = true;
    o.device = "h100";
    expect_cli(ctx, &o, FM_FORMAT_TABLE, "count resnet18 --batch 4 --device h100");

    fm_session_opts_init(&o, FM_TASK_ROOFLINE);
    o.model = "resnet18";
    o.device = "h100";
    expect_cli(ctx, &o, FM_FORMAT_JSON, "roofline resnet18 --device h100 --format json");
    fm_session_opts_init(&o, FM_TASK_PREDICT);
    o.model = "resnet18";
    o.device = "a100";
    expect_cli(ctx, &o, FM_FORMAT_TABLE, "predict resnet18 --device a100");
    fm_session_opts_init(&o, FM_TASK_UTILIZATION);
    o.model = "resnet18";
    o.device = "a100";
    o.step_s = 0.05;
    expect_cli(ctx, &o, FM_FORMAT_JSON,
               "utilization resnet18 --device a100 --step-time 50ms --format json");
    fm_ctx_free(ctx);
}

static void test_render_needs_out(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = "alexnet";
    struct fm_session *s = test_session_ok(ctx, &o);
    size_t len = 7;
    assert_int_equal(fm_session_render(s, NULL, NULL, &len), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "fm_session_render", "out and len");
    assert_int_equal(len, 7);
    /* NULL options: the table */
    char *text = NULL;
    FM_ASSERT_OK(ctx, fm_session_render(s, NULL, &text, &len));
    assert_non_null(strstr(text, "alexnet |"));
    fm_dealloc(ctx, text);
    fm_session_free(s);
    fm_ctx_free(ctx);
}

static void test_model_in_memory(void **state)
{
    (void)state;
#ifndef FM_HAVE_ONNX
    printf("skipped: needs the ONNX frontend in the build\n");
    skip();
#else
    struct fm_ctx *ctx = test_ctx();
    size_t size = 0;
    char *data = test_read_file(DATA "resnet18_op13.onnx", &size);
    const enum fm_format formats[] = {FM_FORMAT_TABLE, FM_FORMAT_JSON, FM_FORMAT_CSV};
    for (size_t i = 0; i < 3; i++) {
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_WORK);
        o.model = DATA "resnet18_op13.onnx";
        struct fm_session *file = test_session_ok(ctx, &o);
        o.model = "resnet18_op13";
        o.model_data = data;
        o.model_size = size;
        struct fm_session *mem = test_session_ok(ctx, &o);
        char *a = render(ctx, file, formats[i]), *b = render(ctx, mem, formats[i]);
        assert_string_equal(a, b);
        fm_dealloc(ctx, a);
        fm_dealloc(ctx, b);
        fm_session_free(file);
        fm_session_free(mem);
    }
    /* a built-in's name names the buffer: the graph is the file's (ONNX names its layers by
     * their nodes, the built-in by module path), and the export note of a file applies */
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = "resnet18";
    struct fm_session *zoo = test_session_ok(ctx, &o);
    o.model_data = data;
    o.model_size = size;
    struct fm_session *mem = test_session_ok(ctx, &o);
    assert_string_equal(fm_graph_name(mem->graph), "resnet18");
    assert_string_equal(fm_graph_node(zoo->graph, 0)->name, "conv1");
    assert_string_equal(fm_graph_node(mem->graph, 0)->name, "/conv1/Conv");
    assert_int_equal(mem->counts->params, zoo->counts->params);
    fm_session_free(zoo);
    fm_session_free(mem);
    /* no name: "model" */
    o.model = NULL;
    mem = test_session_ok(ctx, &o);
    assert_string_equal(fm_graph_name(mem->graph), "model");
    fm_session_free(mem);
    /* the loader through fm_load_opts alone */
    struct fm_load_opts lo;
    fm_load_opts_init(&lo);
    lo.model_data = data;
    lo.model_size = size;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_model_load(ctx, "in-memory", &lo, &g));
    assert_string_equal(fm_graph_name(g), "in-memory");
    fm_graph_free(g);

    /* empty and malformed buffers */
    struct fm_session *s = NULL;
    o.model = "m";
    o.model_size = 0;
    assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_INVALID);
    assert_null(s);
    EXPECT_MESSAGE(ctx, "m:", "empty");
    o.model_size = size / 3;   /* truncated */
    enum fm_status st = fm_session_run(ctx, &o, &s);
    assert_int_not_equal(st, FM_OK);
    assert_null(s);
    assert_true(strlen(fm_ctx_error(ctx)) > 0);
    static const char junk[] = "this is not an ONNX model";
    o.model_data = junk;
    o.model_size = sizeof(junk);
    assert_int_not_equal(fm_session_run(ctx, &o, &s), FM_OK);
    assert_null(s);
    assert_true(strlen(fm_ctx_error(ctx)) > 0);
    free(data);
    fm_ctx_free(ctx);
#endif
}

/* frozen parameters (requires_grad=False): counted as parameters, not trainable ones, and
 * without a weight gradient; a name the graph lacks is an error */
static void test_frozen(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = "resnet18";
    struct fm_session *all = test_session_ok(ctx, &o);
    const struct fm_node *conv1 = fm_graph_node(all->graph, 0);
    assert_int_equal(conv1->op, FM_OP_CONV);
    const struct fm_tensor *w = fm_graph_tensor(all->graph, conv1->in[1]);
    uint64_t numel;
    FM_ASSERT_OK(ctx, fm_shape_numel(&w->shape, &numel));
    assert_true(fm_work_macs(&all->counts->nodes[0].phase[FM_PHASE_BWD_WEIGHT]) > 0);
    const char *frozen[] = {w->name};
    o.frozen = frozen;
    o.n_frozen = 1;
    struct fm_session *s = test_session_ok(ctx, &o);
    assert_int_equal(s->counts->params, all->counts->params);
    assert_int_equal(s->counts->trainable_params, all->counts->trainable_params - numel);
    assert_int_equal(fm_work_macs(&s->counts->nodes[0].phase[FM_PHASE_BWD_WEIGHT]), 0);
    assert_int_equal(fm_work_macs(&s->counts->nodes[0].phase[FM_PHASE_FWD]),
                     fm_work_macs(&all->counts->nodes[0].phase[FM_PHASE_FWD]));
    fm_session_free(s);
    fm_session_free(all);
    const char *unknown[] = {"no.such.weight"};
    o.frozen = unknown;
    s = NULL;
    assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_INVALID);
    assert_null(s);
    EXPECT_MESSAGE(ctx, "frozen parameter 'no.such.weight'", "resnet18");
    fm_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_as_cli),
        cmocka_unit_test(test_render_needs_out),
        cmocka_unit_test(test_model_in_memory),
        cmocka_unit_test(test_frozen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
