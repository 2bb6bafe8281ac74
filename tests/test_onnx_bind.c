/* The ONNX loader's bindings: --value (contents of graph inputs), empty tensors (a dim of 0),
 * dims written as -1, and --batch on files exported at a fixed batch. Files other people made
 * where they exist (ONNX's backend node tests, Debian's libonnx-testdata), small fixtures of
 * tests/data/onnx otherwise (tools/make_onnx_fixtures.py, tools/export_batch1.py). */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FM_ONNX_NODE_TESTS
#define FM_ONNX_NODE_TESTS "/usr/share/libonnx-testdata/data/node"
#endif
#define DATA FM_TEST_DATA "/onnx/"

static bool have_node_tests(void)
{
    if (access(FM_ONNX_NODE_TESTS "/test_tile/model.onnx", R_OK) == 0)
        return true;
    printf("skipped: ONNX's node tests are not installed (Debian's libonnx-testdata; make deps "
           "installs it)\n");
    return false;
}

/* Loads a node test's model with value bindings (and shape bindings). */
static enum fm_status load_node(struct fm_ctx *ctx, const char *test,
                                const struct fm_value_binding *v, size_t nv,
                                const struct fm_input_binding *b, size_t nb, struct fm_graph **g)
{
    struct fm_load_opts o;
    fm_load_opts_init(&o);
    o.values = v;
    o.n_values = nv;
    o.bindings = b;
    o.n_bindings = nb;
    char path[512];
    snprintf(path, sizeof(path), "%s/%s/model.onnx", FM_ONNX_NODE_TESTS, test);
    return fm_onnx_load_file(ctx, path, &o, g);
}

static struct fm_counts *count_infer(struct fm_ctx *ctx, struct fm_graph *g)
{
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = FM_MODE_INFER;
    struct fm_counts *c = NULL;
    FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &c));
    return c;
}

static void assert_dims(const struct fm_graph *g, const char *name, int rank, const int64_t *dims)
{
    fm_tid t = fm_graph_find_tensor(g, name);
    assert_int_not_equal(t, FM_NONE);
    const struct fm_tensor *x = fm_graph_tensor(g, t);
    assert_int_equal(x->shape.rank, rank);
    for (int d = 0; d < rank; d++)
        assert_int_equal(x->shape.dims[d], dims[d]);
}

static void assert_error(struct fm_ctx *ctx, enum fm_status st, enum fm_status want,
                         const char *part)
{
    assert_int_equal(st, want);
    if (!strstr(fm_ctx_error(ctx), part))
        fail_msg("error '%s' lacks '%s'", fm_ctx_error(ctx), part);
}

/* --value: Tile's repeats and Resize's scales given as graph inputs (ONNX's test_tile and
 * test_resize_upsample_scales_nearest, opset 13). */
static void test_value_bindings(void **state)
{
    (void)state;
    if (!have_node_tests())
        skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;

    /* without the values the load asks for them, naming the input and the option */
    assert_error(ctx, load_node(ctx, "test_tile", NULL, 0, NULL, 0, &g), FM_ERR_UNSUPPORTED,
                 "--value y=");

    /* Tile x (2,3,4,5) fp32 by repeats y = 7,6,4,2 -> z (14,18,16,10): no arithmetic; x read
     * once, 2*3*4*5 = 120 elements * 4 B = 480 B; z written, 14*18*16*10 = 40320 * 4 B =
     * 161280 B */
    static const int64_t reps[] = {7, 6, 4, 2};
    struct fm_value_binding v = {"y", reps, NULL, 4};
    FM_ASSERT_OK(ctx, load_node(ctx, "test_tile", &v, 1, NULL, 0, &g));
    assert_dims(g, "z", 4, (const int64_t[]){14, 18, 16, 10});
    struct fm_counts *c = count_infer(ctx, g);
    assert_int_equal(fm_work_flops(&c->total[FM_PHASE_FWD]), 0);
    assert_int_equal(c->total[FM_PHASE_FWD].bytes_read, 480);
    assert_int_equal(c->total[FM_PHASE_FWD].bytes_written, 161280);
    fm_counts_free(c);
    fm_graph_free(g);

    /* the same repeats written as numbers (the CLI's parse of "7.0,6,4,2") are whole: taken */
    static const double freps[] = {7.0, 6.0, 4.0, 2.0};
    struct fm_value_binding vf = {"y", NULL, freps, 4};
    FM_ASSERT_OK(ctx, load_node(ctx, "test_tile", &vf, 1, NULL, 0, &g));
    assert_dims(g, "z", 4, (const int64_t[]){14, 18, 16, 10});
    fm_graph_free(g);

    /* a float input takes numbers: Resize X (1,1,2,2) by scales 1,1,2,3 -> Y (1,1,4,6);
     * X read 4 * 4 B = 16 B, Y written 24 * 4 B = 96 B */
    static const double scales[] = {1, 1, 2, 3};
    struct fm_value_binding vs = {"scales", NULL, scales, 4};
    FM_ASSERT_OK(ctx, load_node(ctx, "test_resize_upsample_scales_nearest", &vs, 1, NULL, 0, &g));
    assert_dims(g, "Y", 4, (const int64_t[]){1, 1, 4, 6});
    c = count_infer(ctx, g);
    assert_int_equal(c->total[FM_PHASE_FWD].bytes_read, 16);
    assert_int_equal(c->total[FM_PHASE_FWD].bytes_written, 96);
    fm_counts_free(c);
    fm_graph_free(g);

    /* errors: an unknown input (the inputs listed), a count that does not fit the declared
     * shape, a fraction for an integer input, no values at all */
    struct fm_value_binding bad = {"repeats", reps, NULL, 4};
    assert_error(ctx, load_node(ctx, "test_tile", &bad, 1, NULL, 0, &g), FM_ERR_INVALID,
                 "no graph input named 'repeats' (its inputs: x, y)");
    struct fm_value_binding three = {"y", reps, NULL, 3};
    assert_error(ctx, load_node(ctx, "test_tile", &three, 1, NULL, 0, &g), FM_ERR_INVALID,
                 "3 values given; the file declares 4");
    static const double half[] = {7.5, 6, 4, 2};
    struct fm_value_binding frac = {"y", NULL, half, 4};
    assert_error(ctx, load_node(ctx, "test_tile", &frac, 1, NULL, 0, &g), FM_ERR_INVALID,
                 "value 0 (7.5) is not a whole number");
    struct fm_value_binding none = {"y", NULL, NULL, 0};
    assert_error(ctx, load_node(ctx, "test_tile", &none, 1, NULL, 0, &g), FM_ERR_INVALID,
                 "no values given");
    /* a shape given with --input must hold as many elements as values given */
    struct fm_input_binding shp = {"y", {2, {2, 2}}};
    assert_error(ctx, load_node(ctx, "test_tile", &v, 1, &shp, 1, &g), FM_ERR_INVALID,
                 "--input y: the file gives this input 1 dims, the binding 2");
    assert_null(g);
    fm_ctx_free(ctx);
}

/* The CLI's --value: integers, numbers, and what it refuses before loading anything. */
static void test_value_cli(void **state)
{
    (void)state;
    if (!have_node_tests())
        skip();
    char *out = NULL, *err = NULL;
    /* Tile (2,3,4,5) by 7,6,4,2: (14,18,16,10) */
    int rc = test_run_cli("count " FM_ONNX_NODE_TESTS "/test_tile/model.onnx --infer "
                          "--value y=7,6,4,2 --format csv", &out, &err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "14x18x16x10"));
    free(out);
    free(err);
    rc = test_run_cli("count " FM_ONNX_NODE_TESTS "/test_resize_upsample_scales_nearest/"
                      "model.onnx --infer --value scales=1,1,2.0,3 --format csv", &out, &err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "1x1x4x6"));
    free(out);
    free(err);
    static const char *const bad[][2] = {
        {"--value y", "expected NAME=V[,V...]"},
        {"--value =1", "expected NAME=V[,V...]"},
        {"--value y=7,x,4,2", "value 2 is not a number"},
        {"--value y=7,,4,2", "value 2 is not a number"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char args[512];
        snprintf(args, sizeof(args), "count " FM_ONNX_NODE_TESTS "/test_tile/model.onnx %s",
                 bad[i][0]);
        rc = test_run_cli(args, &out, &err);
        assert_int_equal(rc, 2);
        if (!strstr(err, bad[i][1]))
            fail_msg("%s: '%s' lacks '%s'", bad[i][0], err, bad[i][1]);
        assert_string_equal(out, "");
        free(out);
        free(err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_value_bindings),
        cmocka_unit_test(test_value_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
