/* libFuzzer target: the ONNX loader fed from memory (fm_onnx_load_buffer), then counting the
 * graph it accepts in training and inference and rendering the JSON report. Every input is
 * used twice: as the bytes of a file, and as a recipe for a small model (ops, attributes, dims
 * and constants drawn from tables of valid and absurd values) written with onnx_writer.h, which
 * reaches the shape and cost rules far faster than bit flips in protobuf. Beyond what the
 * sanitizers catch it checks the library's promises: a failure leaves a message and no graph,
 * and the totals equal the checked sum of the layers (a wrong number, not only a crash, is a
 * finding). It does not judge whether a count is right: tests/ do that with goldens. */
#include "fuzz_common.h"
#include "onnx_writer.h"

#include <math.h>
#include <stdio.h>

static void check_totals(const struct fm_counts *c)
{
    for (int p = 0; p < FM_PHASE_COUNT; p++) {
        struct fm_work sum = {{0}, 0, 0};
        bool ovf = false;
        for (size_t i = 0; i < c->n_nodes; i++) {
            const struct fm_work *w = &c->nodes[i].phase[p];
            for (int k = 0; k < FM_PRIM_COUNT; k++)
                ovf |= __builtin_add_overflow(sum.prim[k], w->prim[k], &sum.prim[k]);
            ovf |= __builtin_add_overflow(sum.bytes_read, w->bytes_read, &sum.bytes_read);
            ovf |= __builtin_add_overflow(sum.bytes_written, w->bytes_written, &sum.bytes_written);
        }
        FUZZ_CHECK(!ovf, "a total was accepted although the layer sum overflows");
        FUZZ_CHECK(memcmp(&sum, &c->total[p], sizeof(sum)) == 0,
                   "the %s totals differ from the sum of the layers", fm_phase_name(p));
        if (c->mode == FM_MODE_INFER && p != FM_PHASE_FWD)
            FUZZ_CHECK(fm_work_flops(&c->total[p]) == 0, "inference counted a backward");
    }
}

static void count_and_report(struct fm_ctx *ctx, const struct fm_graph *g, enum fm_mode mode)
{
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = mode;
    struct fm_counts *c = (struct fm_counts *)1;
    enum fm_status st = fm_count(ctx, g, &co, &c);
    fuzz_check_status(ctx, st);
    if (st) {
        FUZZ_CHECK(c == NULL, "a failed fm_count left a result");
        return;
    }
    check_totals(c);
    FILE *f = fopen("/dev/null", "w");
    if (f) {
        struct fm_report_opts ro;
        fm_report_opts_init(&ro);
        ro.format = FM_FORMAT_JSON;
        fm_report_count(f, g, c, &ro);
        fclose(f);
    }
    fm_counts_free(c);
}

static void load_and_count(const uint8_t *data, size_t size)
{
    struct fm_ctx *ctx = NULL;
    if (fm_ctx_new(NULL, &ctx))
        return;
    struct fm_load_opts lo;
    fm_load_opts_init(&lo);
    lo.zoo.batch = 2;          /* binds symbolic batch dims, as --batch 2 would */
    lo.batch_given = true;
    struct fm_graph *g = (struct fm_graph *)1;
    enum fm_status st = fm_onnx_load_buffer(ctx, data, size, "fuzz.onnx", &lo, &g);
    fuzz_check_status(ctx, st);
    if (st) {
        FUZZ_CHECK(g == NULL, "a failed load left a graph");
    } else {
        FUZZ_CHECK(g && fm_graph_topo_order(g), "a loaded graph is not finalized");
        count_and_report(ctx, g, FM_MODE_TRAIN);
        count_and_report(ctx, g, FM_MODE_INFER);
        fm_graph_free(g);
    }
    fm_ctx_free(ctx);
}

/* ---- recipes: fuzz bytes read as choices ---- */

struct rd {
    const uint8_t *p;
    size_t n;
};

static unsigned rd_u8(struct rd *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

static unsigned rd_pick(struct rd *r, unsigned n)
{
    return n ? rd_u8(r) % n : 0;
}

/* dims and integer attributes: mostly sensible, sometimes the edges */
static int64_t rd_int(struct rd *r)
{
    static const int64_t v[] = {
        1, 2, 3, 4, 1, 2, 3, 7, 8, 16, 32, 224, 0, -1, -2, 5, 6, 10, 64, 1000,
        (int64_t)1 << 20, (int64_t)1 << 31, (int64_t)1 << 40, (int64_t)1 << 62, INT64_MAX,
        INT64_MIN, -((int64_t)1 << 40), 255, 256, 17};
    unsigned k = rd_u8(r);
    if (k < 200)
        return v[k % 20];
    return v[k % (sizeof(v) / sizeof(v[0]))];
}

static float rd_float(struct rd *r)
{
    static const float v[] = {0.0f, 1.0f, 0.5f, -1.0f, 1e-5f, 2.0f, 6.0f, 1e30f, -1e30f,
                              INFINITY, -INFINITY, NAN, 0.1f, 3.0f};
    return v[rd_pick(r, sizeof(v) / sizeof(v[0]))];
}

static const char *const ops[] = {
    "Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum", "BatchNormalization",
    "LayerNormalization", "InstanceNormalization", "GroupNormalization", "Relu", "LeakyRelu",
    "PRelu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Gelu", "Softmax",
    "LogSoftmax", "Erf", "Sqrt", "Reciprocal", "Neg", "Exp", "Log", "Abs", "Pow", "Add", "Sub",
    "Mul", "Div", "Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or",
    "Xor", "Not", "Where", "Max", "Min", "Trilu", "ReduceMean", "ReduceSum", "ReduceMax",
    "ReduceMin", "ReduceProd", "ReduceSumSquare", "CumSum", "MaxPool", "AveragePool",
    "GlobalAveragePool", "GlobalMaxPool", "Flatten", "Reshape", "Transpose", "Squeeze",
    "Unsqueeze", "Concat", "Split", "Slice", "Gather", "Expand", "Tile", "Pad", "Resize",
    "Upsample", "ConstantOfShape", "Range", "Cast", "Identity", "Dropout", "Constant", "Shape",
    "Size", "ArgMax", "TopK", "NonZero", "Floor", "Ceil", "Round", "Sign", "Mod",
    "ReduceLogSumExp", "NoSuchOp"};
static const char *const attr_names[] = {
    "alpha", "approximate", "auto_pad", "axes", "axis", "beta", "ceil_mode",
    "count_include_pad", "dilations", "epsilon", "equation", "group", "keepdims",
    "kernel_shape", "max", "min", "mode", "noop_with_empty_axes", "num_groups", "num_outputs",
    "output_padding", "output_shape", "pads", "perm", "ratio", "strides", "to", "upper",
    "value", "value_ints", "value_float", "split", "transA", "transB", "exclusive", "reverse",
    "k", "largest", "sorted", "fmod", "scales", "sizes", "coordinate_transformation_mode",
    "stash_type", "training_mode", "momentum", "spatial", "storage_order",
    /* opsets 1 to 6 */
    "shape", "paddings", "broadcast", "height_scale", "width_scale", "is_test",
    "consumed_inputs"};
static const char *const strings[] = {"", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID",
                                      "nearest", "linear", "cubic", "tanh", "none", "ij,jk->ik",
                                      "bij,bjk->bik", "ii->i", "i,i", "...ij->...ji", "constant",
                                      "reflect", "edge", "??", "FLOAT", "INT64"};

#define MAXV 48

static void recipe(const uint8_t *data, size_t size)
{
    struct rd r = {data, size};
    char names[MAXV][16];
    int nv = 0;
    struct ow graph = {0}, model = {0};
    static const int64_t opsets[] = {13, 17, 11, 9, 7, 18, 21, 1, 100, 6, 4};
    int64_t opset = opsets[rd_pick(&r, sizeof(opsets) / sizeof(opsets[0]))];

    int n_inputs = 1 + (int)rd_pick(&r, 2);
    for (int i = 0; i < n_inputs; i++) {
        int rank = (int)rd_pick(&r, 6);
        int64_t dims[8];
        const char *params[8] = {NULL};
        for (int k = 0; k < rank; k++) {
            dims[k] = rd_int(&r);
            if (rd_pick(&r, 8) == 0)
                params[k] = k ? "S" : "N";
        }
        snprintf(names[nv], sizeof(names[nv]), "in%d", i);
        int elem = rd_pick(&r, 6) == 0 ? OW_DT_INT64 : OW_DT_FLOAT;
        ow_value_info(&graph, OW_GRAPH_INPUT, names[nv++], elem, rank, dims, params);
    }
    int n_nodes = 1 + (int)rd_pick(&r, 8);
    for (int i = 0; i < n_nodes && nv < MAXV - 4; i++) {
        const char *op = ops[rd_pick(&r, sizeof(ops) / sizeof(ops[0]))];
        const char *in[4];
        const char *out[2];
        int n_in = (int)rd_pick(&r, 5), n_out = 1 + (int)(rd_pick(&r, 6) == 0);
        for (int k = 0; k < n_in; k++) {
            unsigned how = rd_pick(&r, 8);
            if (how == 0) {
                in[k] = "";
            } else if (how == 1) {   /* a constant: an int64 vector or a float weight */
                int64_t dims[4], vals[8];
                int rank = 1 + (int)rd_pick(&r, 4);
                size_t n = 1;
                for (int d = 0; d < rank; d++) {
                    dims[d] = 1 + (int64_t)rd_pick(&r, 4);
                    n *= (size_t)dims[d];
                }
                snprintf(names[nv], sizeof(names[nv]), "c%d", nv);
                if (rd_pick(&r, 2) && n <= 8) {
                    for (size_t v = 0; v < n; v++)
                        vals[v] = rd_int(&r);
                    ow_tensor(&graph, OW_GRAPH_INIT, names[nv], OW_DT_INT64, rank, dims, vals, n);
                } else {
                    ow_tensor(&graph, OW_GRAPH_INIT, names[nv], OW_DT_FLOAT, rank, dims, NULL, 0);
                }
                in[k] = names[nv++];
            } else if (how == 2) {
                in[k] = "undefined";
            } else {
                in[k] = names[nv - 1 - (int)rd_pick(&r, (unsigned)(nv < 4 ? nv : 4))];
            }
        }
        for (int k = 0; k < n_out; k++) {
            snprintf(names[nv], sizeof(names[nv]), "t%d_%d", i, k);
            out[k] = names[nv++];
        }
        struct ow attrs = {0};
        int n_attr = (int)rd_pick(&r, 4);
        for (int a = 0; a < n_attr; a++) {
            const char *an = attr_names[rd_pick(&r, sizeof(attr_names) / sizeof(attr_names[0]))];
            switch (rd_pick(&r, 4)) {
            case 0:
                ow_attr_int(&attrs, an, rd_int(&r));
                break;
            case 1: {
                int64_t v[8];
                size_t n = rd_pick(&r, 9);
                for (size_t k = 0; k < n; k++)
                    v[k] = rd_int(&r);
                ow_attr_ints(&attrs, an, v, n);
                break;
            }
            case 2:
                ow_attr_float(&attrs, an, rd_float(&r));
                break;
            default:
                ow_attr_string(&attrs, an, strings[rd_pick(&r, sizeof(strings) / sizeof(strings[0]))]);
            }
        }
        char nname[16];
        snprintf(nname, sizeof(nname), "n%d", i);
        ow_node(&graph, op, rd_pick(&r, 16) ? nname : "n0", in, n_in, out, n_out, &attrs);
    }
    /* the last value is the output (with or without a declared type) */
    if (rd_pick(&r, 2))
        ow_value_info(&graph, OW_GRAPH_OUTPUT, names[nv - 1], OW_DT_FLOAT, -1, NULL, NULL);
    else
        ow_value_info(&graph, OW_GRAPH_OUTPUT, names[nv - 1], OW_DT_FLOAT, 0, NULL, NULL);
    ow_str(&graph, OW_GRAPH_NAME, "recipe");
    ow_model(&model, 8, opset, &graph);
    /* FM_FUZZ_DUMP=file keeps the model a recipe made: how a finding becomes a regression
     * file under tests/data/fuzz/regressions/onnx/ */
    const char *dump = getenv("FM_FUZZ_DUMP");
    FILE *f = dump && !model.oom ? fopen(dump, "wb") : NULL;
    if (f) {
        fwrite(model.buf, 1, model.len, f);
        fclose(f);
    }
    if (!model.oom)
        load_and_count(model.buf, model.len);
    ow_free(&model);
}

int fm_fuzz_onnx(const uint8_t *data, size_t size)
{
    load_and_count(data, size);
    recipe(data, size);
    return 0;
}

FUZZ_ENTRY(fm_fuzz_onnx)
