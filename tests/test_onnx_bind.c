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
                 "fm_load_opts.values y=");

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
                 "fm_load_opts.bindings y: the file gives this input 1 dims, the binding 2");
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

/* Empty tensors (a dim of 0): legal ONNX; they flow through shape inference and cost nothing. */
static void test_empty_tensors(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;

    /* x (1, 0) -> Relu: 0 elements, so no work and no bytes, in inference and in training */
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "bad_dim_zero.onnx", 0, NULL, 0, &g));
    assert_dims(g, "out", 2, (const int64_t[]){1, 0});
    for (int mode = 0; mode < FM_MODE_COUNT; mode++) {
        struct fm_counts *c = test_count(ctx, g, (enum fm_mode)mode);
        for (int p = 0; p < FM_PHASE_COUNT; p++) {
            assert_int_equal(fm_work_flops(&c->total[p]), 0);
            assert_int_equal(c->total[p].bytes_read, 0);
            assert_int_equal(c->total[p].bytes_written, 0);
        }
        fm_counts_free(c);
    }
    fm_graph_free(g);

    /* Swin's padding: x (1,7,7,96) sliced [7:7] on dim 1 -> (1,0,7,96), nothing read or
     * written; Concat onto x -> (1,7,7,96): x's 7*7*96 = 4704 fp32 read and written, 18816 B
     * each; Relu: 4704 elements, 1 op each, 18816 B read and written. */
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "bind/empty_slice_concat.onnx", 0, NULL, 0, &g));
    assert_dims(g, "pad", 4, (const int64_t[]){1, 0, 7, 96});
    assert_dims(g, "y", 4, (const int64_t[]){1, 7, 7, 96});
    struct fm_counts *c = test_count(ctx, g, FM_MODE_INFER);
    assert_int_equal(c->n_nodes, 3);
    const struct fm_work *slice = &c->nodes[0].phase[FM_PHASE_FWD];
    assert_int_equal(fm_work_flops(slice), 0);
    assert_int_equal(slice->bytes_read + slice->bytes_written, 0);
    assert_int_equal(c->nodes[1].phase[FM_PHASE_FWD].bytes_read, 18816);
    assert_int_equal(c->nodes[1].phase[FM_PHASE_FWD].bytes_written, 18816);
    assert_int_equal(fm_work_flops(&c->total[FM_PHASE_FWD]), 4704);
    fm_counts_free(c);
    fm_graph_free(g);

    /* Paddle2ONNX's reshape to a scalar: the target is the empty list (an initializer of dims
     * [0]), not an omitted input. s is a scalar; s * y (3,4): 12 multiplies; reads 12 + 1 fp32
     * = 52 B, writes 48 B. */
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "bind/reshape_scalar.onnx", 0, NULL, 0, &g));
    assert_dims(g, "s", 0, NULL);
    assert_dims(g, "out", 2, (const int64_t[]){3, 4});
    c = test_count(ctx, g, FM_MODE_INFER);
    assert_int_equal(c->total[FM_PHASE_FWD].prim[FM_PRIM_MUL], 12);
    assert_int_equal(fm_work_flops(&c->total[FM_PHASE_FWD]), 12);
    assert_int_equal(c->total[FM_PHASE_FWD].bytes_read, 52);
    assert_int_equal(c->total[FM_PHASE_FWD].bytes_written, 48);
    fm_counts_free(c);
    fm_graph_free(g);

    if (have_node_tests()) {
        /* ONNX's own: Reshape allowzero (data (0,3,4), target [3,4,0] -> (3,4,0), nothing
         * moved); a Slice starting past the end ((20,10,5), starts = ends = 1000 on axis 1, clamped
         * to 10 -> (20,0,5)) */
        struct fm_input_binding data = {"data", {3, {0, 3, 4}}};
        static const int64_t tgt[] = {3, 4, 0};
        struct fm_value_binding shape = {"shape", tgt, NULL, 3};
        FM_ASSERT_OK(ctx, load_node(ctx, "test_reshape_allowzero_reordered", &shape, 1, &data,
                                    1, &g));
        assert_dims(g, "reshaped", 3, (const int64_t[]){3, 4, 0});
        c = test_count(ctx, g, FM_MODE_INFER);
        assert_int_equal(c->total[FM_PHASE_FWD].bytes_read, 0);
        assert_int_equal(c->total[FM_PHASE_FWD].bytes_written, 0);
        fm_counts_free(c);
        fm_graph_free(g);
        static const int64_t k1000[] = {1000}, k1[] = {1};
        const struct fm_value_binding sl[] = {{"starts", k1000, NULL, 1}, {"ends", k1000, NULL, 1},
                                              {"axes", k1, NULL, 1}, {"steps", k1, NULL, 1}};
        FM_ASSERT_OK(ctx, load_node(ctx, "test_slice_start_out_of_bounds", sl, 4, NULL, 0, &g));
        assert_dims(g, "y", 3, (const int64_t[]){20, 0, 5});
        fm_graph_free(g);
    }

    /* a graph built through the API (the built-in models) still refuses a dim of 0 */
    struct fm_shape zero = {3, {3, 0, 224}};
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "api", &g));
    fm_tid t;
    assert_error(ctx, fm_graph_add_tensor(g, "x", FM_ROLE_INPUT, FM_DTYPE_FP32, &zero, &t),
                 FM_ERR_SHAPE, "dim 1 is 0; dims must be positive");
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* A dim written as -1 (Paddle2ONNX's dynamic dims): dim 0 is the batch (--batch), any other
 * asks for --input, naming the input and the dim. x (-1, 3, -1, -1) -> Relu. */
static void test_minus1_dims(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    assert_error(ctx, test_load_onnx(ctx, "bind/dyn_minus1.onnx", 0, NULL, 0, &g), FM_ERR_SHAPE,
                 "graph input 'x': dim 2 is written as -1 (dynamic): bind it with fm_load_opts.bindings "
                 "x=DIMS (all 4 dims)");
    /* bound: 2*3*8*8 = 384 elements, one op each */
    struct fm_input_binding b = {"x", {4, {2, 3, 8, 8}}};
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "bind/dyn_minus1.onnx", 0, &b, 1, &g));
    struct fm_counts *c = test_count(ctx, g, FM_MODE_INFER);
    assert_int_equal(fm_work_flops(&c->total[FM_PHASE_FWD]), 384);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

static void keep_log(void *user, const char *message)
{
    char *buf = user;
    size_t len = strlen(buf);
    snprintf(buf + len, 2048 - len, "%s\n", message);
}

/* --batch N on a file torch exported at batch 1 without dynamic axes (tools/export_batch1.py):
 * its Reshape targets are constants [1, 8, 16], [1, 16, 2, 4], [1, -1] whose leading 1 is the
 * batch. MACs per sample: Conv 3->8 k4 s4 on 16x16 -> 4x4: 8*4*4 * 3*4*4 = 6144; token Linear
 * 16 tokens * 8*8 = 1024; head 128*10 = 1280; 8448 in all, so 8448 * N. */
static void test_batch_rebinding(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    char log[2048] = "";
    fm_ctx_set_log(ctx, keep_log, log);
    struct fm_graph *g = NULL;
    const int64_t batches[] = {1, 2, 4};
    for (size_t i = 0; i < 3; i++) {
        log[0] = '\0';
        FM_ASSERT_OK(ctx, test_load_onnx(ctx, "bind/patch_mixer_b1.onnx", batches[i], NULL, 0, &g));
        assert_dims(g, "out", 2, (const int64_t[]){batches[i], 10});
        struct fm_counts *c = test_count(ctx, g, FM_MODE_INFER);
        assert_int_equal(c->total[FM_PHASE_FWD].prim[FM_PRIM_MAC], 8448 * batches[i]);
        fm_counts_free(c);
        fm_graph_free(g);
        /* the rebinding is said, naming the nodes; at the file's own batch there is none */
        if (batches[i] == 1) {
            assert_null(strstr(log, "rebound"));
        } else if (!strstr(log, "the file was exported at batch 1; the batch in the shape "
                                "constants of 3 nodes is rebound") ||
                   !strstr(log, "'/Reshape', '/Reshape_1', '/Reshape_2'")) {
            fail_msg("log: %s", log);
        }
    }
    /* x.reshape(B * 16, 8) exported as [16, 8]: the batch hides in a dim it cannot be told
     * from; the error names the node and says how to re-export */
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, "bind/merged_b1.onnx", 1, NULL, 0, &g));
    fm_graph_free(g);
    enum fm_status st = test_load_onnx(ctx, "bind/merged_b1.onnx", 2, NULL, 0, &g);
    assert_error(ctx, st, FM_ERR_SHAPE, "layer '/Reshape_1' (Reshape)");
    assert_error(ctx, st, FM_ERR_SHAPE, "exported at batch 1 and fm_zoo_opts.batch 2 replaced it");
    assert_error(ctx, st, FM_ERR_SHAPE, "dynamic_axes={'input': {0: 'batch'}}");
    assert_null(g);
    fm_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_value_bindings),
        cmocka_unit_test(test_value_cli),
        cmocka_unit_test(test_empty_tensors),
        cmocka_unit_test(test_minus1_dims),
        cmocka_unit_test(test_batch_rebinding),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
