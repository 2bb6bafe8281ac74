/* Bad input from anywhere, as the user meets it: every row of the table in docs/robustness.md
 * is a test here. ONNX models are written on the fly with fuzz/onnx_writer.h (or taken from
 * tests/data/onnx), fed to the CLI, and the test asserts the exit code (1 failure, 2 usage,
 * never a signal) and the words of the message; the rows print what the user sees. Further:
 * overflow is an error that names the layer (checked arithmetic in the rules), an absurd
 * adaptive pooling size neither hangs nor wraps, and every committed fuzz regression input
 * runs clean. Whether a count is right is test_ops/test_zoo/test_onnx's business. */
#include "support.h"
#include "ops/ops.h"   /* fm_node_cost: one node's rule on its own */
#include "../fuzz/onnx_writer.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ONNX_DATA FM_TEST_DATA "/onnx/"

/* ---- helpers ---- */

static char *write_temp(const void *data, size_t size, const char *suffix)
{
    char *path = malloc(64);
    snprintf(path, 64, "/tmp/fm_robust_XXXXXX%s", suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, size), (ssize_t)size);
    close(fd);
    return path;
}

/* Runs `flopmeter ARGS`; asserts the exit code and that stderr holds every word; prints what
 * the user sees (the row of docs/robustness.md). */
static void expect_cli_(const char *row, const char *args, int code, const char *const *words,
                        size_t n, const char *file, int line)
{
    char *out = NULL, *err = NULL;
    int rc = test_run_cli(args, &out, &err);
    print_message("[%s] exit %d: %s", row, rc, err);
    if (rc != code) {
        print_error("%s:%d: flopmeter %s: exit %d, expected %d\nstderr: %s\n", file, line, args,
                    rc, code, err);
        _fail(file, line);
    }
    for (size_t i = 0; i < n; i++) {
        if (!strstr(err, words[i])) {
            print_error("%s:%d: flopmeter %s: stderr \"%s\" does not mention \"%s\"\n", file,
                        line, args, err, words[i]);
            _fail(file, line);
        }
    }
    free(out);
    free(err);
}
#define EXPECT_CLI(row, args, code, ...)                                                        \
    expect_cli_(row, args, code, (const char *const[]){__VA_ARGS__},                           \
                sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *), __FILE__, \
                __LINE__)

/* Writes a model to a temporary .onnx file and runs `flopmeter count FILE EXTRA`. */
#define EXPECT_MODEL(row, model, extra, code, ...)                                    \
    do {                                                                              \
        assert_false((model)->oom);                                                   \
        char *path_ = write_temp((model)->buf, (model)->len, ".onnx");               \
        char args_[512];                                                              \
        snprintf(args_, sizeof(args_), "count %s %s", path_, extra);                 \
        EXPECT_CLI(row, args_, code, __VA_ARGS__);                                    \
        unlink(path_);                                                                \
        free(path_);                                                                  \
    } while (0)

static const int64_t img[4] = {1, 3, 8, 8};

/* x (1x3x8x8) -> Relu -> y: the smallest sane model, to be broken row by row. */
static void sane_graph(struct ow *g)
{
    ow_value_info(g, OW_GRAPH_INPUT, "x", OW_DT_FLOAT, 4, img, NULL);
    ow_value_info(g, OW_GRAPH_OUTPUT, "y", OW_DT_FLOAT, -1, NULL, NULL);
    ow_str(g, OW_GRAPH_NAME, "g");
}

static void model_of(struct ow *model, struct ow *graph)
{
    memset(model, 0, sizeof(*model));
    ow_model(model, 8, 13, graph);
}

static void relu(struct ow *g, const char *name, const char *in, const char *out)
{
    ow_node(g, "Relu", name, &in, 1, &out, 1, NULL);
}

/* ---- ONNX files ---- */

static void test_truncated_file(void **state)
{
    (void)state;
    /* the first half of a real export */
    FILE *f = fopen(ONNX_DATA "resnet18_op13.onnx", "rb");
    assert_non_null(f);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    assert_true(n > 100);
    char *path = write_temp(buf, n / 2, ".onnx");
    char args[256];
    snprintf(args, sizeof(args), "count %s", path);
    EXPECT_CLI("truncated file", args, 1, "not an ONNX model", "truncated");
    unlink(path);
    free(path);
}

static void test_random_bytes(void **state)
{
    (void)state;
    uint8_t buf[4096];
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < sizeof(buf); i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (uint8_t)(s >> 56);
    }
    char *path = write_temp(buf, sizeof(buf), ".onnx");
    char args[256];
    snprintf(args, sizeof(args), "count %s", path);
    EXPECT_CLI("random bytes", args, 1, "not an ONNX model");
    unlink(path);
    free(path);
}

static void test_empty_file(void **state)
{
    (void)state;
    char *path = write_temp("", 0, ".onnx");
    char args[256];
    snprintf(args, sizeof(args), "count %s", path);
    EXPECT_CLI("empty file", args, 1, "empty");
    unlink(path);
    free(path);
}

static void test_empty_graph(void **state)
{
    (void)state;
    struct ow g = {0}, m;
    ow_value_info(&g, OW_GRAPH_INPUT, "x", OW_DT_FLOAT, 4, img, NULL);
    ow_str(&g, OW_GRAPH_NAME, "nothing");
    model_of(&m, &g);
    EXPECT_MODEL("empty graph", &m, "", 1, "no nodes");
    ow_free(&m);
}

static void test_no_graph(void **state)
{
    (void)state;
    struct ow m = {0};
    ow_int(&m, OW_MODEL_IR_VERSION, 8);
    EXPECT_MODEL("model without a graph", &m, "", 1, "graph is missing");
    ow_free(&m);
}

static void test_cycle(void **state)
{
    (void)state;
    struct ow g = {0}, m;
    sane_graph(&g);
    const char *ain[2] = {"x", "b"};
    const char *aout = "a";
    ow_node(&g, "Add", "A", ain, 2, &aout, 1, NULL);
    relu(&g, "B", "a", "b");
    relu(&g, "C", "b", "y");
    model_of(&m, &g);
    EXPECT_MODEL("cycle", &m, "", 1, "cycle", "node '");
    ow_free(&m);
}

static void test_self_loop(void **state)
{
    (void)state;
    struct ow g = {0}, m;
    sane_graph(&g);
    const char *in[2] = {"x", "s"};
    const char *out = "s";
    ow_node(&g, "Add", "selfish", in, 2, &out, 1, NULL);
    relu(&g, "r", "s", "y");
    model_of(&m, &g);
    EXPECT_MODEL("self-loop", &m, "", 1, "cycle", "'selfish'");
    ow_free(&m);
}

static void test_missing_input(void **state)
{
    (void)state;
    struct ow g = {0}, m;
    sane_graph(&g);
    relu(&g, "lost", "nowhere", "y");
    model_of(&m, &g);
    EXPECT_MODEL("missing input", &m, "", 1, "'lost'", "'nowhere'");
    ow_free(&m);
}

static void test_duplicate_output_name(void **state)
{
    (void)state;
    struct ow g = {0}, m;
    sane_graph(&g);
    relu(&g, "first", "x", "t");
    relu(&g, "second", "x", "t");   /* a value produced twice */
    relu(&g, "last", "t", "y");
    model_of(&m, &g);
    EXPECT_MODEL("duplicate names (a value produced twice)", &m, "", 1, "'t'");
    ow_free(&m);
}

static void test_duplicate_input_name(void **state)
{
    (void)state;
    struct ow g = {0}, m;
    ow_value_info(&g, OW_GRAPH_INPUT, "x", OW_DT_FLOAT, 4, img, NULL);
    ow_value_info(&g, OW_GRAPH_INPUT, "x", OW_DT_FLOAT, 4, img, NULL);
    ow_value_info(&g, OW_GRAPH_OUTPUT, "y", OW_DT_FLOAT, -1, NULL, NULL);
    relu(&g, "r", "x", "y");
    model_of(&m, &g);
    EXPECT_MODEL("duplicate names (a graph input twice)", &m, "", 1, "'x'");
    ow_free(&m);
}

static void dims_row(const char *row, const int64_t *dims, const char *w1, const char *w2)
{
    struct ow g = {0}, m;
    ow_value_info(&g, OW_GRAPH_INPUT, "x", OW_DT_FLOAT, 4, dims, NULL);
    ow_value_info(&g, OW_GRAPH_OUTPUT, "y", OW_DT_FLOAT, -1, NULL, NULL);
    relu(&g, "r", "x", "y");
    model_of(&m, &g);
    EXPECT_MODEL(row, &m, "", 1, w1, w2);
    ow_free(&m);
}

/* a dim of 0 is legal ONNX, an empty tensor: counted as nothing, not an error */
static void test_zero_dim(void **state)
{
    (void)state;
    struct ow g = {0}, m;
    ow_value_info(&g, OW_GRAPH_INPUT, "x", OW_DT_FLOAT, 4, (const int64_t[]){1, 0, 8, 8}, NULL);
    ow_value_info(&g, OW_GRAPH_OUTPUT, "y", OW_DT_FLOAT, -1, NULL, NULL);
    relu(&g, "r", "x", "y");
    model_of(&m, &g);
    assert_false(m.oom);
    char *path = write_temp(m.buf, m.len, ".onnx");
    char args[512];
    snprintf(args, sizeof(args), "count %s --format csv", path);
    char *out = NULL, *err = NULL;
    int rc = test_run_cli(args, &out, &err);
    print_message("[zero dim] exit %d: %s", rc, err);
    assert_int_equal(rc, 0);
    /* the Relu's output is 1x0x8x8 and every count of the step is 0 */
    assert_non_null(strstr(out, "1,\"r\",ReLU,activation,1x0x8x8,0,1,0,0,0,0,0,0,0,0,0,0,0,0,"
                                "0,0,0,0"));
    assert_non_null(strstr(out, "total,\"total\",,,,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0"));
    unlink(path);
    free(path);
    free(out);
    free(err);
    ow_free(&m);
}

static void test_negative_dim(void **state)
{
    (void)state;
    dims_row("negative dim", (const int64_t[]){1, 3, -8, 8}, "'x'", "dim 2 is -8");
}

static void test_absurd_dim(void **state)
{
    (void)state;
    dims_row("absurd dim", (const int64_t[]){1, 3, INT64_MAX, 8}, "'x'", "at most 2^40");
}

/* dims each within bounds whose product does not fit: 2^40 x 2^40 x 1 x 1 */
static void test_dims_product_overflow(void **state)
{
    (void)state;
    dims_row("dims whose product overflows", (const int64_t[]){1LL << 40, 1LL << 40, 1, 1},
             "'x'", "overflow");
}

static void test_wrong_attribute_type(void **state)
{
    (void)state;
    struct ow g = {0}, m, attrs = {0};
    sane_graph(&g);
    const int64_t wd[4] = {4, 3, 3, 3};
    ow_tensor(&g, OW_GRAPH_INIT, "w", OW_DT_FLOAT, 4, wd, NULL, 0);
    ow_attr_string(&attrs, "kernel_shape", "3x3");
    const char *in[2] = {"x", "w"};
    const char *out = "y";
    ow_node(&g, "Conv", "conv_s", in, 2, &out, 1, &attrs);
    model_of(&m, &g);
    EXPECT_MODEL("wrong attribute type", &m, "", 1, "'conv_s'", "'kernel_shape'", "STRING");
    ow_free(&m);
}

/* A NaN that decides a shape is an error; a NaN the count does not depend on is counted. */
static void test_nan_attribute(void **state)
{
    (void)state;
    struct ow g = {0}, m, attrs = {0};
    ow_value_info(&g, OW_GRAPH_INPUT, "x", OW_DT_FLOAT, 4, img, NULL);
    ow_value_info(&g, OW_GRAPH_OUTPUT, "y", OW_DT_FLOAT, -1, NULL, NULL);
    ow_attr_float(&attrs, "alpha", NAN);
    const char *in = "x", *out = "y";
    ow_node(&g, "LeakyRelu", "leaky", &in, 1, &out, 1, &attrs);
    model_of(&m, &g);
    {   /* the count does not depend on alpha: 1*3*8*8 = 192 elements, counted normally */
        struct fm_ctx *ctx = test_ctx();
        struct fm_graph *gr = NULL;
        FM_ASSERT_OK(ctx, fm_onnx_load_buffer(ctx, m.buf, m.len, "nan.onnx", NULL, &gr));
        struct fm_count_opts co;
        fm_count_opts_init(&co);
        co.mode = FM_MODE_INFER;
        struct fm_counts *c = NULL;
        FM_ASSERT_OK(ctx, fm_count(ctx, gr, &co, &c));
        assert_int_equal(c->total[FM_PHASE_FWD].bytes_written, 192 * 4);
        fm_counts_free(c);
        fm_graph_free(gr);
        fm_ctx_free(ctx);
    }
    ow_free(&m);

    /* Resize scales of NaN decide the output size: an error naming the node */
    struct ow g2 = {0}, m2;
    sane_graph(&g2);
    const int64_t one = 4;
    struct ow sc = {0};
    {   /* scales as a float initializer with raw data: 1, 1, NaN, 2 */
        float v[4] = {1.0f, 1.0f, NAN, 2.0f};
        ow_int(&sc, OW_TENSOR_DIMS, one);
        ow_int(&sc, OW_TENSOR_TYPE, OW_DT_FLOAT);
        ow_str(&sc, OW_TENSOR_NAME, "scales");
        ow_bytes(&sc, OW_TENSOR_RAW, v, sizeof(v));
        ow_msg(&g2, OW_GRAPH_INIT, &sc);
    }
    const char *rin[3] = {"x", "", "scales"};
    const char *rout = "y";
    ow_node(&g2, "Resize", "resize_nan", rin, 3, &rout, 1, NULL);
    model_of(&m2, &g2);
    EXPECT_MODEL("NaN attribute deciding a shape", &m2, "", 1, "'resize_nan'", "nan");
    ow_free(&m2);
}

static void test_unknown_opset(void **state)
{
    (void)state;
    struct ow g = {0}, m = {0};
    sane_graph(&g);
    relu(&g, "r", "x", "y");
    ow_model(&m, 8, 1000, &g);
    EXPECT_MODEL("unknown opset", &m, "", 1, "opset", "1000");
    ow_free(&m);
}

static void test_unknown_op(void **state)
{
    (void)state;
    struct ow g = {0}, m;
    sane_graph(&g);
    relu(&g, "r", "x", "t");
    const char *in = "t", *out = "y";
    ow_node(&g, "FancyNewOp", "fancy", &in, 1, &out, 1, NULL);
    model_of(&m, &g);
    /* not an error: counted as far as known, and every total says what it misses */
    EXPECT_MODEL("unknown op (output unused)", &m, "--infer", 0, "");
    char *path = write_temp(m.buf, m.len, ".onnx");
    char args[256], *out_text = NULL, *err = NULL;
    snprintf(args, sizeof(args), "count %s --infer", path);
    assert_int_equal(test_run_cli(args, &out_text, &err), 0);
    assert_non_null(strstr(out_text, "FancyNewOp"));
    print_message("[unknown op] stdout mentions: %s", strstr(out_text, "not counted"));
    free(out_text);
    free(err);
    unlink(path);
    free(path);
    ow_free(&m);
}

/* 10^6 nodes: a chain of Relu. Loads and counts exactly (10^6 x 192 max-with-zero). */
static void test_million_nodes(void **state)
{
    (void)state;
    enum { N = 1000000 };
    struct ow g = {0}, m;
    ow_value_info(&g, OW_GRAPH_INPUT, "x", OW_DT_FLOAT, 4, img, NULL);
    char prev[16] = "x", cur[16];
    for (int i = 0; i < N; i++) {
        snprintf(cur, sizeof(cur), i == N - 1 ? "y" : "t%d", i);
        relu(&g, NULL, prev, cur);
        memcpy(prev, cur, sizeof(prev));
    }
    ow_value_info(&g, OW_GRAPH_OUTPUT, "y", OW_DT_FLOAT, -1, NULL, NULL);
    model_of(&m, &g);
    assert_false(m.oom);
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *gr = NULL;
    FM_ASSERT_OK(ctx, fm_onnx_load_buffer(ctx, m.buf, m.len, "million.onnx", NULL, &gr));
    assert_int_equal(fm_graph_node_count(gr), N);
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = FM_MODE_INFER;
    struct fm_counts *c = NULL;
    FM_ASSERT_OK(ctx, fm_count(ctx, gr, &co, &c));
    /* ReLU: one compare per element (test_ops); 192 elements per node */
    assert_int_equal(c->total[FM_PHASE_FWD].prim[FM_PRIM_CMP], (uint64_t)N * 192);
    print_message("[10^6 nodes] %zu bytes of ONNX: loaded and counted\n", m.len);
    fm_counts_free(c);
    fm_graph_free(gr);
    fm_ctx_free(ctx);
    ow_free(&m);
}

/* The bytes of a GraphProto holding an If whose then_branch holds an If ... depth levels deep.
 * Written outside-in from precomputed lengths: nesting with ow_msg would copy the inner
 * message at every level (quadratic). */
static size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void nested_graph(struct ow *out, int depth)
{
    struct ow leaf = {0}, attr_head = {0};
    ow_str(&leaf, OW_GRAPH_NAME, "leaf");
    ow_str(&attr_head, OW_ATTR_NAME, "then_branch");
    ow_int(&attr_head, OW_ATTR_TYPE, OW_AT_GRAPH);
    size_t *len = malloc(sizeof(size_t) * (size_t)(depth + 1));   /* len[k]: graph at level k */
    len[depth] = leaf.len;
    for (int k = depth - 1; k >= 0; k--) {
        size_t attr = attr_head.len + 1 + varint_len(len[k + 1]) + len[k + 1];
        size_t node = 1 + varint_len(attr) + attr + 4;   /* + op_type "If" (tag, len, 2) */
        len[k] = 1 + varint_len(node) + node;
    }
    for (int k = 0; k < depth; k++) {
        size_t attr = attr_head.len + 1 + varint_len(len[k + 1]) + len[k + 1];
        size_t node = 1 + varint_len(attr) + attr + 4;
        ow_tag(out, OW_GRAPH_NODE, 2);
        ow_varint(out, node);
        ow_str(out, OW_NODE_OP, "If");
        ow_tag(out, OW_NODE_ATTR, 2);
        ow_varint(out, attr);
        ow_raw(out, attr_head.buf, attr_head.len);
        ow_tag(out, OW_ATTR_G, 2);
        ow_varint(out, len[k + 1]);
    }
    ow_raw(out, leaf.buf, leaf.len);
    assert_int_equal(out->len, len[0]);
    free(len);
    ow_free(&leaf);
    ow_free(&attr_head);
}

/* Nested subgraphs 100000 deep (about 2.5 MB): protobuf-c unpacks recursively, so a loader
 * that hands such a file to it unchecked overflows the stack. */
static void test_deep_nesting(void **state)
{
    (void)state;
    struct ow g = {0}, nest = {0}, attr = {0}, m;
    sane_graph(&g);
    relu(&g, "r", "x", "y");
    nested_graph(&nest, 100000);
    ow_str(&attr, OW_ATTR_NAME, "then_branch");
    ow_int(&attr, OW_ATTR_TYPE, OW_AT_GRAPH);
    ow_msg(&attr, OW_ATTR_G, &nest);
    const char *cond = "x", *out = "z";
    struct ow attrs = {0};
    ow_msg(&attrs, OW_NODE_ATTR, &attr);
    ow_node(&g, "If", "deep_if", &cond, 1, &out, 1, &attrs);
    model_of(&m, &g);
    EXPECT_MODEL("deep nesting", &m, "", 1, "nest");
    ow_free(&m);
}

static void test_nonexistent_and_special_files(void **state)
{
    (void)state;
    EXPECT_CLI("missing file", "count /nonexistent/model.onnx", 1, "no such file");
    EXPECT_CLI("not a regular file", "count /dev/zero", 1, "/dev/zero: not a regular file");
    char dir[] = "/tmp/fm_robust_dir_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sub[600], args[700];
    snprintf(sub, sizeof(sub), "%s/model.onnx", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(args, sizeof(args), "count %s", sub);
    EXPECT_CLI("a directory named .onnx", args, 1, "model.onnx: not a regular file");
    rmdir(sub);
    rmdir(dir);
}

/* ---- device files ---- */

static void device_row(const char *row, const char *text, const char *w1, const char *w2)
{
    char *path = write_temp(text, strlen(text), ".json");
    char args[256];
    snprintf(args, sizeof(args), "devices --devices %s", path);
    EXPECT_CLI(row, args, 1, w1, w2);
    unlink(path);
    free(path);
}

static void test_bad_device_files(void **state)
{
    (void)state;
    device_row("device file: not JSON", "{\"devices\": [\n  {\"name\": \"x\",,}\n]}", "not valid JSON",
               "line 2");
    device_row("device file: wrong field type",
               "{\"devices\": [{\"name\": \"g\", \"mem_bw_bytes_per_s\": \"fast\"}]}",
               "\"mem_bw_bytes_per_s\"", "must be a number");
    device_row("device file: negative figure",
               "{\"devices\": [{\"name\": \"g\", \"mem_bw_bytes_per_s\": 1e12, "
               "\"peak_vector_flops\": {\"fp32\": -1}}]}",
               "peak_vector_flops.fp32", ">= 0");
    device_row("device file: absurd figure (1e999 overflows to inf)",
               "{\"devices\": [{\"name\": \"g\", \"mem_bw_bytes_per_s\": 1e999, "
               "\"peak_vector_flops\": {\"fp32\": 1e13}}]}",
               "mem_bw_bytes_per_s", ">= 0");
    device_row("device file: unknown field",
               "{\"devices\": [{\"name\": \"g\", \"mem_bandwidth\": 1e12}]}", "unknown field",
               "mem_bandwidth");
    device_row("device file: empty", "", "not valid JSON", "");
    {
        size_t n = 200000;
        char *deep = malloc(n + 1);
        for (size_t i = 0; i < n; i++)
            deep[i] = i < n / 2 ? '[' : ']';
        deep[n] = '\0';
        device_row("device file: nesting 100000 deep", deep, "not valid JSON", "");
        free(deep);
    }
    EXPECT_CLI("device file: missing", "devices --devices /nonexistent/devs.json", 1,
               "/nonexistent/devs.json");
}

/* ---- CLI values ---- */

static void test_bad_cli_values(void **state)
{
    (void)state;
    EXPECT_CLI("--batch 0", "count resnet18 --batch 0", 2, "--batch must be positive");
    EXPECT_CLI("--batch -1", "count resnet18 --batch -1", 2, "--batch", "whole number");
    EXPECT_CLI("--batch abc", "count resnet18 --batch abc", 2, "--batch", "whole number");
    EXPECT_CLI("--batch 2^70", "count resnet18 --batch 1180591620717411303424", 2, "--batch",
               "at most 2^40");
    EXPECT_CLI("--input 3x0x224", "count resnet18 --input 3x0x224", 2, "dim 1 must be positive");
    EXPECT_CLI("--input 3x-1x224", "count resnet18 --input 3x-1x224", 2, "positive integer");
    EXPECT_CLI("--input 1x2x3x4x5x6x7x8x9", "count resnet18 --input 1x2x3x4x5x6x7x8x9", 2,
               "more than 8 dims");
    EXPECT_CLI("--input 3x224", "count resnet18 --input 3x224", 2, "CxHxW");
    EXPECT_CLI("--input 3x8x8 (too small)", "count alexnet --input 3x8x8", 1, "too small",
               "layer 'features.2'");
    EXPECT_CLI("--dtype int8", "count resnet18 --dtype int8", 2, "dtype int8",
               "not a floating-point type");
    EXPECT_CLI("--dtype fp12", "count resnet18 --dtype fp12", 2, "--dtype", "fp12",
               "fp32|fp16");
    EXPECT_CLI("unknown option", "count resnet18 --batches 4", 2, "unknown option --batches");
    EXPECT_CLI("missing value", "count resnet18 --batch", 2, "--batch needs a value");
    EXPECT_CLI("unknown model", "count resnet51", 1, "unknown model 'resnet51'", "resnet50");
    EXPECT_CLI("--train --infer", "count resnet18 --train --infer", 2, "exclude each other");
    EXPECT_CLI("--input NAME= empty", "count resnet18 --input =1x3", 2, "name before '='");
}

/* ---- overflow is an error naming the layer ---- */

/* Through the CLI: a batch of 2^32 at 512x512 overflows ResNet-50's totals (about 2^34 MACs
 * per sample at 21x the 224x224 count); an input whose own size overflows is named too. */
static void test_overflow_names_layer_cli(void **state)
{
    (void)state;
    EXPECT_CLI("overflowing count", "count resnet50 --batch 4294967296 --input 3x512x512", 1,
               "layer '", "overflow 64 bits");
    EXPECT_CLI("overflowing input", "count resnet50 --batch 1099511627776 --input 3x65536x65536",
               1, "tensor 'input'", "overflows 64 bits");
}

static fm_tid tensor4(struct fm_ctx *ctx, struct fm_graph *g, const char *name, enum fm_role r,
                      int64_t a, int64_t b, int64_t c, int64_t d)
{
    struct fm_shape s = {4, {a, b, c, d}};
    fm_tid t = FM_NONE;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, name, r, FM_DTYPE_FP32, &s, &t));
    return t;
}

/* Through the graph API: each rule with checked arithmetic fails with the layer's name. */
static void test_overflow_names_layer_api(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "ovf", &g));
    fm_tid x = tensor4(ctx, g, "x", FM_ROLE_INPUT, 1 << 20, 3, 1 << 14, 1 << 14);
    fm_tid w = tensor4(ctx, g, "w", FM_ROLE_PARAM, 1024, 3, 7, 7);
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 3;
    fm_tid in[2] = {x, w}, y;
    /* N x Cout x H x W = 2^20 x 1024 x 2^28 = 2^58 outputs, x 147 MACs each: past 2^64 */
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_CONV, "big_conv", &a, in, 2, NULL, 1, &y));
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    struct fm_counts *c = (struct fm_counts *)1;
    assert_int_equal(fm_count(ctx, g, &co, &c), FM_ERR_OVERFLOW);
    assert_null(c);
    assert_non_null(strstr(fm_ctx_error(ctx), "'big_conv'"));
    print_message("[overflow, API] %s\n", fm_ctx_error(ctx));

    /* ConvTranspose: a stride of 2^62 makes the output size itself overflow */
    fm_tid x2 = tensor4(ctx, g, "x2", FM_ROLE_INPUT, 1, 4, 5, 5);
    fm_tid w2 = tensor4(ctx, g, "w2", FM_ROLE_PARAM, 4, 4, 3, 3);
    fm_attrs_init(&a);
    a.stride[0] = a.stride[1] = (int64_t)1 << 62;
    fm_tid in2[2] = {x2, w2};
    assert_int_equal(fm_graph_add_node(g, FM_OP_CONV_TRANSPOSE, "huge_stride", &a, in2, 2, NULL,
                                       1, NULL),
                     FM_ERR_OVERFLOW);
    assert_non_null(strstr(fm_ctx_error(ctx), "'huge_stride'"));

    /* Conv: groups x weight channels past 2^63 (was signed overflow) */
    fm_attrs_init(&a);
    a.groups = INT64_MAX / 2;
    assert_int_equal(fm_graph_add_node(g, FM_OP_CONV, "huge_groups", &a, in2, 2, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    assert_non_null(strstr(fm_ctx_error(ctx), "'huge_groups'"));

    /* MaxPool: padding near 2^63 (2*pad overflowed) */
    fm_attrs_init(&a);
    a.kernel[0] = a.kernel[1] = 3;
    a.pad[0] = INT64_MAX - 1;
    assert_int_equal(fm_graph_add_node(g, FM_OP_MAXPOOL, "pad_pool", &a, &x2, 1, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    assert_non_null(strstr(fm_ctx_error(ctx), "'pad_pool'"));

    /* Conv: padding near 2^63 makes an output too large to count, not a wrapped size */
    fm_attrs_init(&a);
    a.pad[2] = INT64_MAX - 2;
    assert_int_equal(fm_graph_add_node(g, FM_OP_CONV, "pad_conv", &a, in2, 2, NULL, 1, NULL),
                     FM_ERR_OVERFLOW);
    assert_non_null(strstr(fm_ctx_error(ctx), "'pad_conv'"));

    /* Concat: 64 inputs of 2^58 along the axis sum past 2^63 */
    struct fm_shape big = {1, {(int64_t)1 << 58}};
    fm_tid parts[64];
    for (int i = 0; i < 64; i++) {
        char name[16];
        snprintf(name, sizeof(name), "p%d", i);
        FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, name, FM_ROLE_INPUT, FM_DTYPE_FP32, &big,
                                              &parts[i]));
    }
    fm_attrs_init(&a);
    assert_int_equal(fm_graph_add_node(g, FM_OP_CONCAT, "long_cat", &a, parts, 64, NULL, 1, NULL),
                     FM_ERR_OVERFLOW);
    assert_non_null(strstr(fm_ctx_error(ctx), "'long_cat'"));

    /* Split: sizes whose sum wraps to the axis length */
    fm_attrs_init(&a);
    a.nints = 3;
    a.ints[0] = INT64_MAX;
    a.ints[1] = INT64_MAX;
    a.ints[2] = 8;   /* 2 x (2^63 - 1) + 8 wraps to 6: must not be taken for a split of 6 */
    struct fm_shape six = {1, {6}};
    fm_tid s6;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "six", FM_ROLE_INPUT, FM_DTYPE_FP32, &six, &s6));
    assert_int_not_equal(fm_graph_add_node(g, FM_OP_SPLIT, "wrap_split", &a, &s6, 1, NULL, 3,
                                           NULL),
                         FM_OK);
    assert_non_null(strstr(fm_ctx_error(ctx), "'wrap_split'"));

    /* attrs.nints beyond the array is refused, not read past */
    fm_attrs_init(&a);
    a.nints = FM_MAX_INTS + 1;
    assert_int_equal(fm_graph_add_node(g, FM_OP_TRANSPOSE, "too_many_ints", &a, &s6, 1, NULL, 1,
                                       NULL),
                     FM_ERR_INVALID);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* AdaptiveAvgPool to 2^29 x 2^29 from 1x1: the window total is computed in closed form (the
 * old per-output loop ran 2^29 times per axis and multiplied i*in). Each output averages one
 * input element: 0 adds, 2^58 divisions. */
static void test_adaptive_pool_absurd_size(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "adaptive", &g));
    fm_tid x = tensor4(ctx, g, "x", FM_ROLE_INPUT, 1, 1, 1, 1);
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.out_size[0] = a.out_size[1] = (int64_t)1 << 29;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_ADAPTIVE_AVGPOOL, "up", &a, &x, 1, NULL, 1, NULL));
    /* and 5x5 -> 3x3, against the window sums of PyTorch's rule: 2+3+2 = 7 per axis */
    fm_tid x5 = tensor4(ctx, g, "x5", FM_ROLE_INPUT, 1, 1, 5, 5);
    a.out_size[0] = a.out_size[1] = 3;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_ADAPTIVE_AVGPOOL, "down", &a, &x5, 1, NULL, 1,
                                        NULL));
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = FM_MODE_INFER;
    struct fm_node_cost nc;
    FM_ASSERT_OK(ctx, fm_node_cost(ctx, g, 0, &co, &nc));
    assert_int_equal(nc.phase[FM_PHASE_FWD].prim[FM_PRIM_ADD], 0);
    assert_int_equal(nc.phase[FM_PHASE_FWD].prim[FM_PRIM_DIV], (uint64_t)1 << 58);
    FM_ASSERT_OK(ctx, fm_node_cost(ctx, g, 1, &co, &nc));
    assert_int_equal(nc.phase[FM_PHASE_FWD].prim[FM_PRIM_ADD], 7 * 7 - 9);
    assert_int_equal(nc.phase[FM_PHASE_FWD].prim[FM_PRIM_DIV], 9);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- every committed fuzz finding runs clean ---- */

static size_t replay_dir(const char *sub, void (*fn)(const char *path, const void *data,
                                                     size_t size))
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/fuzz/regressions/%s", FM_TEST_DATA, sub);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        long len = ftell(f);
        fseek(f, 0, SEEK_SET);
        char *buf = malloc((size_t)len + 1);
        assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
        buf[len] = '\0';
        fclose(f);
        fn(path, buf, (size_t)len);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

static void replay_onnx(const char *path, const void *data, size_t size)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_load_opts lo;
    fm_load_opts_init(&lo);
    lo.zoo.batch = 2;
    lo.batch_given = true;
    struct fm_graph *g = NULL;
    enum fm_status st = fm_onnx_load_buffer(ctx, data, size, path, &lo, &g);
    if (st == FM_OK) {
        for (int m = 0; m < FM_MODE_COUNT; m++) {
            struct fm_count_opts co;
            fm_count_opts_init(&co);
            co.mode = (enum fm_mode)m;
            struct fm_counts *c = NULL;
            if (fm_count(ctx, g, &co, &c) != FM_OK)
                assert_true(*fm_ctx_error(ctx));
            fm_counts_free(c);
        }
    } else {
        assert_true(*fm_ctx_error(ctx));
        assert_null(g);
    }
    print_message("[regression %s] %s\n", strrchr(path, '/') + 1,
                  st ? fm_ctx_error(ctx) : "loads and counts");
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

static void replay_device_json(const char *path, const void *data, size_t size)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_devices *devs = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    size_t n0 = fm_devices_count(devs);
    if (fm_devices_add_json(devs, data, size, path) != FM_OK) {
        assert_true(*fm_ctx_error(ctx));
        assert_int_equal(fm_devices_count(devs), n0);
    }
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

/* args inputs are NUL-separated arguments of `flopmeter count` (fuzz/fuzz_args.c) */
static void replay_args(const char *path, const void *data, size_t size)
{
    char cmd[4096] = "count";
    size_t len = strlen(cmd);
    const char *p = data, *end = p + size;
    while (p < end && len < sizeof(cmd) - 8) {
        cmd[len++] = ' ';
        cmd[len++] = '\'';
        for (; p < end && *p && len < sizeof(cmd) - 8; p++) {
            if (*p == '\'') {   /* ' -> '\'' */
                memcpy(cmd + len, "'\\''", 4);
                len += 4;
            } else {
                cmd[len++] = *p;
            }
        }
        cmd[len++] = '\'';
        p++;
    }
    cmd[len] = '\0';
    char *out = NULL, *err = NULL;
    int rc = test_run_cli(cmd, &out, &err);
    print_message("[regression %s] flopmeter %s: exit %d: %s", strrchr(path, '/') + 1, cmd, rc,
                  err);
    assert_true(rc == 0 || rc == 1 || rc == 2);   /* not a signal, not a sanitizer's exit */
    free(out);
    free(err);
}

/* A trace finding: read with its steps and as one whole step; either way a result or a message,
 * and (in the sanitizer build) no undefined behaviour. */
static void replay_trace(const char *path, const void *data, size_t size)
{
    struct fm_ctx *ctx = test_ctx();
    for (int whole = 0; whole < 2; whole++) {
        struct fm_trace_opts o;
        fm_trace_opts_init(&o);
        o.whole = whole != 0;
        struct fm_trace *t = NULL;
        enum fm_status st = fm_trace_parse(ctx, data, size, path, &o, &t);
        if (st)
            assert_true(fm_ctx_error(ctx)[0] != '\0');
        else
            assert_true(t->n_steps > 0);
        fm_trace_free(t);
    }
    fm_ctx_free(ctx);
}

/* An Nsight finding: the first byte chooses the reader as fuzz_ncu does (even: Nsight Compute,
 * odd: Nsight Systems); a result or a message, and no undefined behaviour. */
static void replay_ncu(const char *path, const void *data, size_t size)
{
    struct fm_ctx *ctx = test_ctx();
    const char *text = (const char *)data + (size ? 1 : 0);
    size_t len = size ? size - 1 : 0;
    enum fm_status st;
    if (size && ((const unsigned char *)data)[0] % 2) {
        struct fm_nsys_summary *s = NULL;
        st = fm_nsys_read_buffer(ctx, text, len, path, &s);
        fm_nsys_summary_free(s);
    } else {
        struct fm_ncu_profile *p = NULL;
        st = fm_ncu_read_buffer(ctx, text, len, path, &p);
        fm_ncu_profile_free(p);
    }
    if (st)
        assert_true(fm_ctx_error(ctx)[0] != '\0');
    fm_ctx_free(ctx);
}

static void test_fuzz_regressions(void **state)
{
    (void)state;
    size_t n = replay_dir("onnx", replay_onnx);
    n += replay_dir("device_json", replay_device_json);
    n += replay_dir("args", replay_args);
    n += replay_dir("trace", replay_trace);
    n += replay_dir("ncu", replay_ncu);
    print_message("%zu regression inputs replayed\n", n);
    assert_true(n > 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncated_file),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_empty_graph),
        cmocka_unit_test(test_no_graph),
        cmocka_unit_test(test_cycle),
        cmocka_unit_test(test_self_loop),
        cmocka_unit_test(test_missing_input),
        cmocka_unit_test(test_duplicate_output_name),
        cmocka_unit_test(test_duplicate_input_name),
        cmocka_unit_test(test_zero_dim),
        cmocka_unit_test(test_negative_dim),
        cmocka_unit_test(test_absurd_dim),
        cmocka_unit_test(test_dims_product_overflow),
        cmocka_unit_test(test_wrong_attribute_type),
        cmocka_unit_test(test_nan_attribute),
        cmocka_unit_test(test_unknown_opset),
        cmocka_unit_test(test_unknown_op),
        cmocka_unit_test(test_million_nodes),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_nonexistent_and_special_files),
        cmocka_unit_test(test_bad_device_files),
        cmocka_unit_test(test_bad_cli_values),
        cmocka_unit_test(test_overflow_names_layer_cli),
        cmocka_unit_test(test_overflow_names_layer_api),
        cmocka_unit_test(test_adaptive_pool_absurd_size),
        cmocka_unit_test(test_fuzz_regressions),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
