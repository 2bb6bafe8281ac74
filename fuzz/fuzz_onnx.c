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

static void load_and_count(const uint8_t *data, size_t size,
                           const struct fm_value_binding *values, size_t n_values)
{
    struct fm_ctx *ctx = NULL;
    if (fm_ctx_new(NULL, &ctx))
        return;
    struct fm_load_opts lo;
    fm_load_opts_init(&lo);
    lo.zoo.batch = 2;          /* binds symbolic batch dims, as --batch 2 would */
    lo.batch_given = true;
    lo.values = values;        /* --value bindings of a recipe's integer inputs */
    lo.n_values = n_values;
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
    /* issue 14's ops */
    "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "IsInf", "IsNaN", "Elu",
    "Selu", "Celu", "Softplus", "Softsign", "Mish", "ThresholdedRelu", "Shrink", "Hardmax",
    "BitShift", "Sum", "Mean", "ReduceL1", "ReduceLogSum", "LpNormalization",
    "MeanVarianceNormalization", "LRN", "LpPool", "GlobalLpPool",
    "LSTM", "GRU", "RNN",
    "GatherElements", "GatherND", "ScatterElements", "Scatter", "ScatterND", "OneHot", "ArgMin",
    "Compress", "Unique", "DepthToSpace", "SpaceToDepth", "ReverseSequence", "MaxUnpool",
    "EyeLike", "CastLike", "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss",
    "ReduceLogSumExp",
    /* random generators (src/ops/random.c) */
    "RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike", "Bernoulli",
    "Multinomial", "NoSuchOp"};
static const char *const attr_names[] = {
    "alpha", "approximate", "auto_pad", "axes", "axis", "beta", "ceil_mode",
    "count_include_pad", "dilations", "epsilon", "equation", "group", "keepdims",
    "kernel_shape", "max", "min", "mode", "noop_with_empty_axes", "num_groups", "num_outputs",
    "output_padding", "output_shape", "pads", "perm", "ratio", "strides", "to", "upper",
    "value", "value_ints", "value_float", "split", "transA", "transB", "exclusive", "reverse",
    "k", "largest", "sorted", "fmod", "scales", "sizes", "coordinate_transformation_mode",
    "stash_type", "training_mode", "momentum", "spatial", "storage_order", "p", "size",
    "lambd", "bias", "gamma", "direction", "detect_negative", "detect_positive",
    "hidden_size", "layout", "linear_before_reset", "clip", "activations",
    "batch_dims", "reduction", "ignore_index", "select_last_index", "blocksize", "batch_axis",
    "time_axis", "dtype", "low", "high", "mean", "scale", "seed", "sample_size",
    /* opsets 1 to 6 */
    "shape", "paddings", "broadcast", "height_scale", "width_scale", "is_test",
    "consumed_inputs"};
static const char *const strings[] = {"", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID",
                                      "add", "mul", "max", "min", "sum", "mean", "DCR", "CRD",
                                      "nearest", "linear", "cubic", "tanh", "none", "ij,jk->ik",
                                      "bij,bjk->bik", "ii->i", "i,i", "...ij->...ji", "constant",
                                      "reflect", "edge", "??", "LEFT", "RIGHT",
                                      "forward", "reverse", "bidirectional",
                                      "FLOAT", "INT64"};

/* ---- control flow: If, Loop and Scan around one node, nested up to 3 deep ---- */

static void attr_graph(struct ow *attrs, const char *name, struct ow *g)
{
    struct ow a = {0};
    ow_str(&a, OW_ATTR_NAME, name);
    ow_int(&a, OW_ATTR_TYPE, OW_AT_GRAPH);
    ow_msg(&a, OW_ATTR_G, g);
    ow_msg(attrs, OW_NODE_ATTR, &a);
}

static void control_node(struct rd *r, struct ow *graph, const char *x, const char *out,
                         int depth);

/* A subgraph reading a (its own input or an outer name) and the outer x; its outputs are
 * outs (n_out of them), declared untyped; inputs ins declared as float vectors. */
static void subgraph(struct rd *r, struct ow *g, const char *a, const char *x,
                     const char *const *ins, int n_in, const char *const *outs, int n_out,
                     int depth)
{
    static const int64_t one[1] = {2};
    for (int i = 0; i < n_in; i++)
        ow_value_info(g, OW_GRAPH_INPUT, ins[i], i == 0 && n_in > 2 ? OW_DT_INT64 : OW_DT_FLOAT,
                      (int)rd_pick(r, 2), one, NULL);
    if (depth < 3 && rd_pick(r, 4) == 0) {
        control_node(r, g, a, outs[0], depth + 1);
    } else {
        const char *in[2] = {a, rd_pick(r, 2) ? x : a};
        const char *o[1] = {outs[0]};
        ow_node(g, ops[rd_pick(r, sizeof(ops) / sizeof(ops[0]))], NULL, in,
                1 + (int)rd_pick(r, 2), o, 1, NULL);
    }
    for (int i = 1; i < n_out; i++) {   /* the rest: copies of the first, or of an input */
        const char *in[1] = {rd_pick(r, 2) || !n_in ? outs[0] : ins[rd_pick(r, (unsigned)n_in)]};
        const char *o[1] = {outs[i]};
        ow_node(g, "Identity", NULL, in, 1, o, 1, NULL);
    }
    for (int i = 0; i < n_out; i++)
        ow_value_info(g, OW_GRAPH_OUTPUT, outs[i], OW_DT_FLOAT, -1, NULL, NULL);
    ow_str(g, OW_GRAPH_NAME, "sub");
}

/* An If, Loop or Scan node reading x and writing out, appended to graph; its conditions and
 * trip counts are constants (cc, mm: made by recipe), graph inputs or absent. */
static void control_node(struct rd *r, struct ow *graph, const char *x, const char *out,
                         int depth)
{
    static const char *const conds[] = {"cc", "cc", "mm", "in0", "", "undefined"};
    struct ow attrs = {0}, g1 = {0}, g2 = {0};
    const char *o1[3] = {"b0", "b1", "b2"};
    switch (rd_pick(r, 3)) {
    case 0: {
        const char *in[1] = {conds[rd_pick(r, 6)]};
        const char *o[1] = {out};
        subgraph(r, &g1, x, x, NULL, 0, o1, 1 + (int)(rd_pick(r, 8) == 0), depth);
        subgraph(r, &g2, x, x, NULL, 0, o1, 1, depth);
        if (rd_pick(r, 8))
            attr_graph(&attrs, "then_branch", &g1);
        else
            ow_free(&g1);
        if (rd_pick(r, 8))
            attr_graph(&attrs, "else_branch", &g2);
        else
            ow_free(&g2);
        ow_node(graph, "If", NULL, in, 1, o, 1, &attrs);
        break;
    }
    case 1: {
        const char *in[3] = {conds[rd_pick(r, 6) & 3 ? 2 : rd_pick(r, 6)],
                             rd_pick(r, 2) ? "" : conds[rd_pick(r, 6)], x};
        const char *o[2] = {out, "scan_out"};
        const char *bi[4] = {"i", "c", "h", "extra"};
        int n_bi = rd_pick(r, 8) ? 3 : 2 + 2 * (int)rd_pick(r, 2);
        int n_bo = 2 + (int)rd_pick(r, 2) - (rd_pick(r, 16) == 0);
        const char *bo[3] = {"co", "ho", "so"};
        subgraph(r, &g1, "h", x, bi, n_bi, bo, n_bo, depth);
        attr_graph(&attrs, "body", &g1);
        ow_node(graph, "Loop", NULL, in, 3, o, n_bo > 2 ? 2 : 1, &attrs);
        break;
    }
    default: {
        const char *in[3] = {x, x, "in0"};
        const char *o[2] = {out, "scan_out"};
        const char *bi[3] = {"s", "e", "f"};
        int n_in = 1 + (int)rd_pick(r, 3);
        int n_bo = 1 + (int)rd_pick(r, 2);
        const char *bo[2] = {"so", "eo"};
        subgraph(r, &g1, rd_pick(r, 2) ? "s" : "e", x, bi, n_in, bo, n_bo, depth);
        attr_graph(&attrs, "body", &g1);
        ow_attr_int(&attrs, "num_scan_inputs", (int64_t)rd_pick(r, 4));
        if (rd_pick(r, 2)) {
            int64_t v[2] = {rd_int(r), rd_int(r)};
            ow_attr_ints(&attrs, rd_pick(r, 2) ? "scan_input_axes" : "scan_output_axes", v,
                         rd_pick(r, 3));
        }
        if (rd_pick(r, 2)) {
            int64_t v[2] = {1, 1};
            ow_attr_ints(&attrs, rd_pick(r, 2) ? "scan_input_directions"
                                               : "scan_output_directions", v, rd_pick(r, 3));
        }
        ow_node(graph, "Scan", NULL, in, n_in, o, n_bo, &attrs);
    }
    }
}

#define MAXV 48

static void recipe(const uint8_t *data, size_t size)
{
    struct rd r = {data, size};
    char names[MAXV][16];
    int nv = 0;
    struct ow graph = {0}, model = {0};
    static const int64_t opsets[] = {13, 17, 11, 9, 7, 18, 21, 1, 100, 6, 4};
    int64_t opset = opsets[rd_pick(&r, sizeof(opsets) / sizeof(opsets[0]))];

    struct fm_value_binding vb[2];
    int64_t vvals[2][8];
    size_t n_vb = 0;
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
        if (elem == OW_DT_INT64 && rank <= 1 && rd_pick(&r, 2) == 0) {
            /* --value: as many values as the dim says, or a count of its own (a mismatch, or
             * 0 values: the empty list) */
            size_t n = rank == 1 && dims[0] >= 0 && dims[0] <= 8 ? (size_t)dims[0]
                                                                 : rd_pick(&r, 5);
            for (size_t k = 0; k < n; k++)
                vvals[n_vb][k] = rd_int(&r);
            vb[n_vb] = (struct fm_value_binding){names[nv], vvals[n_vb], NULL, n};
            n_vb++;
        }
        ow_value_info(&graph, OW_GRAPH_INPUT, names[nv++], elem, rank, dims, params);
    }
    bool ctl = rd_pick(&r, 4) == 0;   /* control flow, on the inputs (no other node to fail) */
    int n_nodes = ctl ? 0 : 1 + (int)rd_pick(&r, 8);
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
    if (ctl) {
        int64_t one = 1, m = rd_pick(&r, 4) ? 1 + (int64_t)rd_pick(&r, 4) : rd_int(&r);
        ow_tensor(&graph, OW_GRAPH_INIT, "cc", OW_DT_INT64, 0, NULL, &one, 1);
        ow_tensor(&graph, OW_GRAPH_INIT, "mm", OW_DT_INT64, 0, NULL, &m, 1);
        snprintf(names[nv], sizeof(names[nv]), "ctl");
        control_node(&r, &graph, names[nv - 1], names[nv], 0);
        nv++;
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
        load_and_count(model.buf, model.len, vb, n_vb);
    ow_free(&model);
}

int fm_fuzz_onnx(const uint8_t *data, size_t size)
{
    load_and_count(data, size, NULL, 0);
    recipe(data, size);
    return 0;
}

FUZZ_ENTRY(fm_fuzz_onnx)
