/* Tests of the built-in architectures: parameters and conv+matmul MACs of every model against
 * torchvision's own count (tests/data/torchvision_reference.csv, made by
 * tools/torchvision_reference.py) and against published figures; exact scaling of every count
 * with the batch size; the backward = 2 x forward relation of conv and linear layers minus the
 * first layer's input gradient; and the problem set's pthflops VGG16 numbers rebuilt from flopmeter's
 * primitive counts. All counts are exact integers from formulas or published values. */
#include "support.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

struct ref_row {
    char model[32];
    int64_t c, h, w;
    uint64_t params, macs;
};

#define MAX_REF 64

/* Reads tests/data/torchvision_reference.csv: model,c,h,w,params,conv_linear_macs. */
static size_t load_reference(struct ref_row *rows)
{
    FILE *f = fopen(FM_TEST_DATA "/torchvision_reference.csv", "r");
    assert_non_null(f);
    char line[256];
    assert_non_null(fgets(line, sizeof(line), f));
    assert_string_equal(line, "model,c,h,w,params,conv_linear_macs\n");
    size_t n = 0;
    while (fgets(line, sizeof(line), f)) {
        assert_true(n < MAX_REF);
        struct ref_row *r = &rows[n];
        long long c, h, w;
        unsigned long long p, m;
        int got = sscanf(line, "%31[^,],%lld,%lld,%lld,%llu,%llu", r->model, &c, &h, &w, &p, &m);
        if (got != 6)
            fail_msg("torchvision_reference.csv: malformed line '%s'", line);
        r->c = c;
        r->h = h;
        r->w = w;
        r->params = p;
        r->macs = m;
        n++;
    }
    fclose(f);
    return n;
}

static const struct ref_row *find_ref(const struct ref_row *rows, size_t n, const char *model)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(rows[i].model, model) == 0)
            return &rows[i];
    }
    return NULL;
}

static uint64_t conv_mm_macs(const struct fm_counts *c, enum fm_phase ph)
{
    return c->by_class[FM_CLASS_CONV][ph].prim[FM_PRIM_MAC] +
           c->by_class[FM_CLASS_MATMUL][ph].prim[FM_PRIM_MAC];
}

static fm_nid find_node(const struct fm_graph *g, const char *name)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        if (strcmp(fm_graph_node(g, (fm_nid)i)->name, name) == 0)
            return (fm_nid)i;
    }
    fail_msg("no layer named '%s' in %s", name, fm_graph_name(g));
    return FM_NONE;
}

static uint64_t numel(const struct fm_graph *g, fm_tid t)
{
    uint64_t n = 0;
    assert_int_equal(fm_shape_numel(&fm_graph_tensor(g, t)->shape, &n), FM_OK);
    return n;
}

/* ---- 1 and 2: every model against torchvision's own count ---- */

/* Each built-in model, at batch 1 and its default input, has torchvision's parameter count and
 * conv+linear forward MACs, and its default input is torchvision's evaluation crop. */
static void test_every_model_matches_torchvision(void **state)
{
    (void)state;
    struct ref_row rows[MAX_REF];
    size_t nrows = load_reference(rows);
    assert_int_equal(nrows, fm_zoo_count());   /* one row per built-in model, no extra */
    struct fm_ctx *ctx = test_ctx();
    for (size_t i = 0; i < fm_zoo_count(); i++) {
        const struct fm_zoo_entry *e = fm_zoo_get(i);
        const struct ref_row *r = find_ref(rows, nrows, e->name);
        if (!r)
            fail_msg("%s has no row in torchvision_reference.csv", e->name);
        assert_int_equal(e->default_hw, r->h);
        struct fm_graph *g = NULL;
        struct fm_counts *c = test_count_zoo(ctx, e->name, 1, FM_MODE_INFER, &g);
        const struct fm_tensor *in = fm_graph_tensor(g, fm_graph_find_tensor(g, "input"));
        assert_int_equal(in->shape.rank, 4);
        assert_int_equal(in->shape.dims[0], 1);
        assert_int_equal(in->shape.dims[1], r->c);
        assert_int_equal(in->shape.dims[2], r->h);
        assert_int_equal(in->shape.dims[3], r->w);
        if (c->params != r->params || conv_mm_macs(c, FM_PHASE_FWD) != r->macs)
            fail_msg("%s: params %llu (torchvision %llu), conv+matmul MACs %llu (torchvision "
                     "%llu)",
                     e->name, (unsigned long long)c->params, (unsigned long long)r->params,
                     (unsigned long long)conv_mm_macs(c, FM_PHASE_FWD),
                     (unsigned long long)r->macs);
        assert_int_equal(c->n_uncounted, 0);
        fm_counts_free(c);
        fm_graph_free(g);
    }
    fm_ctx_free(ctx);
}

/* Exact values other counters agree on (docs/counting.md, section 4: torchvision
 * definitions, batch 1, 224x224): conv + matmul MACs without bias, and parameters. */
static const struct {
    const char *model;
    uint64_t macs, params;
} counting_exact[] = {
    {"alexnet", 714188480ull, 61100840ull},       {"vgg11", 7609090048ull, 132863336ull},
    {"vgg16", 15470264320ull, 138357544ull},      {"resnet18", 1814073344ull, 11689512ull},
    {"resnet34", 3663761408ull, 21797672ull},     {"resnet50", 4089184256ull, 25557032ull},
    {"resnet101", 7801405440ull, 44549160ull},    {"mobilenet_v2", 300774272ull, 3504872ull},
};

/* Published, rounded GMACs with the number of decimals as published, and exact parameter
 * counts. Rows marked counting.md are the published, rounded figures docs/counting.md lists; rows marked torchvision come from the weight metadata in torchvision's
 * torchvision/models/{mobilenetv3,efficientnet}.py ("num_params"; "_ops", the GFLOPS that
 * torchvision 0.15 and later publish, which are MACs at the weights' crop size). */
static const struct {
    const char *model;
    uint64_t gmacs_scaled;   /* published GMACs x 10^decimals */
    int decimals;
    uint64_t params;
} published[] = {
    /* counting.md */
    {"resnet152", 11514, 3, 60192808ull},
    {"wide_resnet50_2", 11398, 3, 68883240ull},
    {"resnext50_32x4d", 423, 2, 25028904ull},
    {"vgg13", 11308, 3, 133047848ull},
    {"vgg19", 19632, 3, 143667240ull},
    {"vgg11_bn", 7609, 3, 132868840ull},
    {"vgg13_bn", 11308, 3, 133053736ull},
    {"vgg16_bn", 1547, 2, 138365992ull},
    {"vgg19_bn", 19632, 3, 143678248ull},
    {"mobilenet_v3_large", 217, 3, 5483032ull},
    {"efficientnet_b0", 386, 3, 5288548ull},
    {"googlenet", 1498, 3, 6624904ull},
    {"inception_v3", 5713, 3, 23834568ull},   /* without the auxiliary head, see below */
    /* torchvision weight metadata */
    {"mobilenet_v3_small", 57, 3, 2542856ull},
    {"efficientnet_b1", 687, 3, 7794184ull},
    {"efficientnet_b2", 1088, 3, 9109994ull},
    {"efficientnet_b3", 1827, 3, 12233232ull},
    {"efficientnet_b4", 4394, 3, 19341616ull},
    {"efficientnet_b5", 10266, 3, 30389784ull},
    {"efficientnet_b6", 19068, 3, 43040704ull},
    {"efficientnet_b7", 37746, 3, 66347960ull},
};

static void test_published_figures(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    for (size_t i = 0; i < sizeof(counting_exact) / sizeof(counting_exact[0]); i++) {
        struct fm_counts *c = test_count_zoo(ctx, counting_exact[i].model, 1, FM_MODE_INFER,
                                             NULL);
        if (conv_mm_macs(c, FM_PHASE_FWD) != counting_exact[i].macs ||
            c->params != counting_exact[i].params)
            fail_msg("%s: MACs %llu params %llu, counting.md %llu / %llu",
                     counting_exact[i].model,
                     (unsigned long long)conv_mm_macs(c, FM_PHASE_FWD),
                     (unsigned long long)c->params, (unsigned long long)counting_exact[i].macs,
                     (unsigned long long)counting_exact[i].params);
        fm_counts_free(c);
    }
    for (size_t i = 0; i < sizeof(published) / sizeof(published[0]); i++) {
        struct fm_counts *c = test_count_zoo(ctx, published[i].model, 1, FM_MODE_INFER, NULL);
        uint64_t unit = 1;   /* 10^(9 - decimals) MACs */
        for (int d = published[i].decimals; d < 9; d++)
            unit *= 10;
        uint64_t rounded = (conv_mm_macs(c, FM_PHASE_FWD) + unit / 2) / unit;
        if (rounded != published[i].gmacs_scaled || c->params != published[i].params)
            fail_msg("%s: %llu MACs round to %llu (x 10^-%d G), published %llu; params %llu, "
                     "published %llu",
                     published[i].model, (unsigned long long)conv_mm_macs(c, FM_PHASE_FWD),
                     (unsigned long long)rounded, published[i].decimals,
                     (unsigned long long)published[i].gmacs_scaled,
                     (unsigned long long)c->params, (unsigned long long)published[i].params);
        fm_counts_free(c);
    }
    fm_ctx_free(ctx);
}

/* torchvision's published inception_v3 parameter count (27,161,264, counting.md and the weight
 * metadata) includes the auxiliary classifier, which flopmeter leaves out. The difference is
 * exactly that head (torchvision's InceptionAux on 768 channels): conv0 1x1 768->128 without
 * bias + BatchNorm(128), conv1 5x5 128->768 without bias + BatchNorm(768), fc 768->1000. */
static void test_inception_v3_aux_head_difference(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_counts *c = test_count_zoo(ctx, "inception_v3", 1, FM_MODE_INFER, NULL);
    uint64_t aux = 768ull * 128 + 2 * 128 + 128ull * 768 * 5 * 5 + 2 * 768 + 768ull * 1000 + 1000;
    assert_int_equal(c->params + aux, 27161264ull);
    fm_counts_free(c);
    fm_ctx_free(ctx);
}

/* A --input too small for a network fails with a shape error naming a layer, not a crash. */
static void test_input_too_small(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_zoo_opts zo;
    fm_zoo_opts_init(&zo);
    assert_int_equal(fm_shape_parse(ctx, "3x32x32", &zo.input), FM_OK);
    struct fm_graph *g = NULL;
    assert_int_equal(fm_zoo_build(ctx, "inception_v3", &zo, &g), FM_ERR_SHAPE);
    assert_null(g);
    assert_non_null(strstr(fm_ctx_error(ctx), "layer '"));
    /* and a non-default size works and changes the count: efficientnet_b7 at 224x224 */
    assert_int_equal(fm_shape_parse(ctx, "3x224x224", &zo.input), FM_OK);
    FM_ASSERT_OK(ctx, fm_zoo_build(ctx, "efficientnet_b7", &zo, &g));
    assert_int_equal(fm_graph_tensor(g, fm_graph_find_tensor(g, "input"))->shape.dims[2], 224);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- 3: counts scale with the batch size ---- */

/* Ops whose cost rules document work that does not grow with the batch: BatchNorm's per-channel
 * statistics and precompute (norm.c) and the loss's batch mean (loss.c). Every other op's
 * primitive counts must be exactly B times their per-sample value. */
static bool has_batch_independent_work(enum fm_op op)
{
    return op == FM_OP_BATCHNORM || op == FM_OP_CROSS_ENTROPY;
}

static bool reads_state(const struct fm_graph *g, const struct fm_node *n)
{
    for (int i = 0; i < n->n_in; i++) {
        if (n->in[i] == FM_NONE)
            continue;
        enum fm_role r = fm_graph_tensor(g, n->in[i])->role;
        if (r == FM_ROLE_PARAM || r == FM_ROLE_BUFFER)
            return true;
    }
    return false;
}

#define NB 4
static const int64_t batches[NB] = {1, 2, 3, 8};

/* Checks one count c(B) at the batch sizes above: linear (c(B) = B*c(1)) when linear, otherwise
 * affine c(B) = B*a + b with b = 0 when zero_const and a = 0 when constant. */
static void check_scaling(const char *model, const char *layer, const char *what,
                          const uint64_t v[NB], bool linear, bool zero_const, bool constant)
{
    int64_t a = (int64_t)v[1] - (int64_t)v[0];
    int64_t b = 2 * (int64_t)v[0] - (int64_t)v[1];
    for (int k = 0; k < NB; k++) {
        int64_t want = linear ? batches[k] * (int64_t)v[0] : batches[k] * a + b;
        if ((int64_t)v[k] != want)
            fail_msg("%s %s %s: at batch %lld %llu, expected %lld (%s in batch)", model, layer,
                     what, (long long)batches[k], (unsigned long long)v[k], (long long)want,
                     linear ? "linear" : "affine");
    }
    if (zero_const && b != 0)
        fail_msg("%s %s %s: %lld per step does not scale with the batch, but the op's cost rule "
                 "documents no such term",
                 model, layer, what, (long long)b);
    if (constant && a != 0)
        fail_msg("%s %s %s: grows by %lld per sample, but should not depend on the batch", model,
                 layer, what, (long long)a);
}

static void check_batch_scaling(const char *model)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g[NB];
    struct fm_counts *c[NB];
    for (int k = 0; k < NB; k++)
        c[k] = test_count_zoo(ctx, model, batches[k], FM_MODE_TRAIN, &g[k]);
    size_t nn = fm_graph_node_count(g[0]);
    for (int k = 1; k < NB; k++)
        assert_int_equal(fm_graph_node_count(g[k]), nn);
    static const char *const field[] = {"mac", "add", "mul", "div", "cmp", "special",
                                        "bytes_read", "bytes_written"};
    _Static_assert(FM_PRIM_COUNT == 6, "field names above follow enum fm_prim");
    uint64_t v[NB];
    char what[64];
    for (size_t id = 0; id < nn; id++) {
        const struct fm_node *n = fm_graph_node(g[0], (fm_nid)id);
        for (int k = 1; k < NB; k++)
            assert_string_equal(fm_graph_node(g[k], (fm_nid)id)->name, n->name);
        bool fixed_work = has_batch_independent_work(n->op);
        bool state = reads_state(g[0], n);
        for (int p = 0; p < FM_PHASE_COUNT; p++) {
            bool optim = p == FM_PHASE_OPTIMIZER;
            for (int f = 0; f < FM_PRIM_COUNT + 2; f++) {
                for (int k = 0; k < NB; k++) {
                    const struct fm_work *w = &c[k]->nodes[id].phase[p];
                    v[k] = f < FM_PRIM_COUNT ? w->prim[f]
                                             : f == FM_PRIM_COUNT ? w->bytes_read
                                                                  : w->bytes_written;
                }
                snprintf(what, sizeof(what), "%s %s", fm_phase_name((enum fm_phase)p), field[f]);
                bool bytes = f >= FM_PRIM_COUNT;
                /* MACs are linear; parameters and buffers are read and written once per step
                 * whatever the batch, so only bytes of nodes that touch no state must be linear */
                bool zero_const = bytes ? !state && !fixed_work : !fixed_work;
                check_scaling(model, n->name, what, v, !optim && f == FM_PRIM_MAC,
                              !optim && zero_const, optim);
            }
        }
        for (int k = 0; k < NB; k++)
            v[k] = c[k]->nodes[id].saved_bytes;
        check_scaling(model, n->name, "saved bytes", v, false, n->op != FM_OP_BATCHNORM, false);
    }
    for (int p = 0; p < FM_PHASE_COUNT; p++) {
        for (int f = 0; f < FM_PRIM_COUNT; f++) {
            for (int k = 0; k < NB; k++)
                v[k] = c[k]->total[p].prim[f];
            snprintf(what, sizeof(what), "%s %s", fm_phase_name((enum fm_phase)p), field[f]);
            check_scaling(model, "total", what, v,
                          p != FM_PHASE_OPTIMIZER && f == FM_PRIM_MAC, false,
                          p == FM_PHASE_OPTIMIZER);
        }
    }
    for (int k = 0; k < NB; k++)
        v[k] = c[k]->activation_bytes;
    check_scaling(model, "total", "activation bytes", v, false, false, false);
    for (int k = 0; k < NB; k++) {
        fm_counts_free(c[k]);
        fm_graph_free(g[k]);
    }
    fm_ctx_free(ctx);
}

/* Dropout, Linear and AdaptiveAvgPool (alexnet); concat, ceil-mode pooling (googlenet);
 * squeeze-excitation's broadcast Mul, Hardswish, Hardsigmoid, BatchNorm (mobilenet_v3_small);
 * SiLU, Sigmoid and residual adds (efficientnet_b0). */
static void test_batch_scaling(void **state)
{
    (void)state;
    check_batch_scaling("alexnet");
    check_batch_scaling("googlenet");
    check_batch_scaling("mobilenet_v3_small");
    check_batch_scaling("efficientnet_b0");
}

/* ---- 4: backward of convolutions and linear layers ---- */

static fm_tid add_param(struct fm_graph *g, const char *name, int rank, const int64_t *dims)
{
    struct fm_shape s = {rank, {0}};
    memcpy(s.dims, dims, sizeof(int64_t) * (size_t)rank);
    fm_tid t = FM_NONE;
    FM_ASSERT_OK(fm_graph_ctx(g), fm_graph_add_tensor(g, name, FM_ROLE_PARAM, FM_DTYPE_FP32, &s, &t));
    return t;
}

static fm_tid add_conv(struct fm_graph *g, const char *name, fm_tid x, int64_t cin, int64_t cout,
                       int64_t k, int64_t stride, int64_t pad, int64_t groups)
{
    char pname[64];
    int64_t wd[4] = {cout, cin / groups, k, k}, bd[1] = {cout};
    snprintf(pname, sizeof(pname), "%s.weight", name);
    fm_tid w = add_param(g, pname, 4, wd);
    snprintf(pname, sizeof(pname), "%s.bias", name);
    fm_tid b = add_param(g, pname, 1, bd);
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.kernel[0] = a.kernel[1] = k;
    a.stride[0] = a.stride[1] = stride;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = pad;
    a.groups = groups;
    fm_tid in[3] = {x, w, b}, y = FM_NONE;
    FM_ASSERT_OK(fm_graph_ctx(g), fm_graph_add_node(g, FM_OP_CONV, name, &a, in, 3, NULL, 1, &y));
    return y;
}

static fm_tid add_linear(struct fm_graph *g, const char *name, fm_tid x, int64_t in_f,
                         int64_t out_f)
{
    char pname[64];
    int64_t wd[2] = {out_f, in_f}, bd[1] = {out_f};
    snprintf(pname, sizeof(pname), "%s.weight", name);
    fm_tid w = add_param(g, pname, 2, wd);
    snprintf(pname, sizeof(pname), "%s.bias", name);
    fm_tid b = add_param(g, pname, 1, bd);
    fm_tid in[3] = {x, w, b}, y = FM_NONE;
    FM_ASSERT_OK(fm_graph_ctx(g),
                 fm_graph_add_node(g, FM_OP_LINEAR, name, NULL, in, 3, NULL, 1, &y));
    return y;
}

/* conv-conv-conv-flatten-linear-linear, batch 2, with a strided and a grouped convolution. The
 * input gradient of each layer and its weight gradient each cost its forward MACs, except that
 * the first layer computes no input gradient (the network input needs none):
 *     bwd_data + bwd_weight = 2 x fwd - fwd(first layer). */
static void test_conv_linear_backward_relation(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "convnet", &g));
    const int64_t n = 2;
    struct fm_shape xs = {4, {n, 3, 32, 32}};
    fm_tid x = FM_NONE;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "input", FM_ROLE_INPUT, FM_DTYPE_FP32, &xs, &x));
    x = add_conv(g, "conv1", x, 3, 8, 3, 1, 1, 1);     /* -> 8x32x32 */
    x = add_conv(g, "conv2", x, 8, 16, 3, 2, 1, 1);    /* strided -> 16x16x16 */
    x = add_conv(g, "conv3", x, 16, 16, 3, 1, 1, 4);   /* 4 groups -> 16x16x16 */
    struct fm_attrs fa;
    fm_attrs_init(&fa);
    fa.axis = 1;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_FLATTEN, "flatten", &fa, &x, 1, NULL, 1, &x));
    x = add_linear(g, "fc1", x, 16 * 16 * 16, 32);
    x = add_linear(g, "fc2", x, 32, 10);
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    struct fm_counts *c = NULL;
    FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &c));

    /* forward MACs: N * Cout * Ho * Wo * (Cin/g) * kh * kw; rows * in * out */
    static const char *const layer[5] = {"conv1", "conv2", "conv3", "fc1", "fc2"};
    const uint64_t fwd[5] = {
        (uint64_t)n * 8 * 32 * 32 * 3 * 3 * 3,
        (uint64_t)n * 16 * 16 * 16 * 8 * 3 * 3,
        (uint64_t)n * 16 * 16 * 16 * (16 / 4) * 3 * 3,
        (uint64_t)n * 4096 * 32,
        (uint64_t)n * 32 * 10,
    };
    uint64_t total = 0;
    for (int i = 0; i < 5; i++) {
        const struct fm_node_cost *nc = &c->nodes[find_node(g, layer[i])];
        assert_int_equal(nc->phase[FM_PHASE_FWD].prim[FM_PRIM_MAC], fwd[i]);
        assert_int_equal(nc->phase[FM_PHASE_BWD_WEIGHT].prim[FM_PRIM_MAC], fwd[i]);
        assert_int_equal(nc->phase[FM_PHASE_BWD_DATA].prim[FM_PRIM_MAC], i == 0 ? 0 : fwd[i]);
        total += fwd[i];
    }
    assert_int_equal(conv_mm_macs(c, FM_PHASE_FWD), total);
    assert_int_equal(conv_mm_macs(c, FM_PHASE_BWD_DATA) + conv_mm_macs(c, FM_PHASE_BWD_WEIGHT),
                     2 * total - fwd[0]);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* The same relation on the conv+matmul classes of two built-in models, with the first layer's
 * forward MACs from its formula. For resnet18 it also reproduces PyTorch's own test
 * (counting.md): forward + backward with the input requiring a gradient is 10,884,440,064
 * FLOPs at 2 per MAC, i.e. flopmeter's three phases plus the first layer's input gradient. */
static void test_backward_relation_resnet18_vgg11(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    static const struct {
        const char *model, *first;
        uint64_t first_macs;
    } cases[] = {
        {"resnet18", "conv1", 64ull * 112 * 112 * 3 * 7 * 7},   /* 7x7 stride 2 */
        {"vgg11", "features.0", 64ull * 224 * 224 * 3 * 3 * 3},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fm_graph *g = NULL;
        struct fm_counts *c = test_count_zoo(ctx, cases[i].model, 1, FM_MODE_TRAIN, &g);
        const struct fm_node_cost *first = &c->nodes[find_node(g, cases[i].first)];
        assert_int_equal(first->phase[FM_PHASE_FWD].prim[FM_PRIM_MAC], cases[i].first_macs);
        assert_int_equal(first->phase[FM_PHASE_BWD_DATA].prim[FM_PRIM_MAC], 0);
        uint64_t fwd = conv_mm_macs(c, FM_PHASE_FWD);
        uint64_t bwd = conv_mm_macs(c, FM_PHASE_BWD_DATA) + conv_mm_macs(c, FM_PHASE_BWD_WEIGHT);
        assert_int_equal(bwd, 2 * fwd - cases[i].first_macs);
        if (strcmp(cases[i].model, "resnet18") == 0)
            assert_int_equal(2 * (fwd + bwd + cases[i].first_macs), 10884440064ull);
        fm_counts_free(c);
        fm_graph_free(g);
    }
    fm_ctx_free(ctx);
}

/* ---- 5: the problem set's pthflops VGG16 numbers from flopmeter's primitive counts ---- */

/* pthflops (1adrianb/pytorch-estimate-flops, pthflops/ops_fx.py) per layer, from flopmeter's
 * forward primitive counts and the graph's shapes:
 *   Conv2d:            mac + bias adds                  (_count_convNd: MACs + Cout per output
 *                                                        position)
 *   Linear:            mac + out_features               (_count_linear: the bias once per
 *                                                        output feature, not once per row)
 *   ReLU:              2 x cmp                          (_count_relu counts the compare twice)
 *   MaxPool:           cmp = (k*k - 1) per output       (_count_maxpool)
 *   AdaptiveAvgPool:   H_in * W_in per output element   (_count_globalavgpool treats every
 *                                                        adaptive pool as global: derived from
 *                                                        the shapes, not from flopmeter's
 *                                                        window sums, which differ)
 *   Dropout, Flatten:  0                                (pthflops runs in eval mode; flatten is
 *                                                        an undefined op)
 * Any other op fails the test: the mapping is only claimed for these. */
static uint64_t pthflops_of(const struct fm_graph *g, const struct fm_node *n,
                            const struct fm_node_cost *nc)
{
    const struct fm_work *w = &nc->phase[FM_PHASE_FWD];
    const struct fm_shape *in = &fm_graph_tensor(g, n->in[0])->shape;
    const struct fm_shape *out = &fm_graph_tensor(g, n->out[0])->shape;
    switch (n->op) {
    case FM_OP_CONV:
        return w->prim[FM_PRIM_MAC] + w->prim[FM_PRIM_ADD];
    case FM_OP_LINEAR: {
        bool bias = n->n_in > 2 && n->in[2] != FM_NONE;
        return w->prim[FM_PRIM_MAC] + (bias ? (uint64_t)out->dims[out->rank - 1] : 0);
    }
    case FM_OP_RELU:
        return 2 * w->prim[FM_PRIM_CMP];
    case FM_OP_MAXPOOL:
        return w->prim[FM_PRIM_CMP];
    case FM_OP_ADAPTIVE_AVGPOOL:
        return numel(g, n->out[0]) * (uint64_t)in->dims[2] * (uint64_t)in->dims[3];
    case FM_OP_DROPOUT:
    case FM_OP_FLATTEN:
        return 0;
    default:
        fail_msg("no pthflops mapping for %s (%s)", n->name, n->op_name);
        return 0;
    }
}

/* A 2022 course problem set on PALEO (docs/roofline.md, reference 4; also in counting.md):
 * pthflops' count_ops(vgg16(), 1x3x224x224), every
 * non-zero layer as pthflops printed it. */
static const struct {
    const char *layer;
    uint64_t ops;
} problem_set_vgg16[] = {
    {"features_0", 89915392},     {"features_1", 6422528},      {"features_2", 1852899328},
    {"features_3", 6422528},      {"features_4", 2408448},      {"features_5", 926449664},
    {"features_6", 3211264},      {"features_7", 1851293696},   {"features_8", 3211264},
    {"features_9", 1204224},      {"features_10", 925646848},   {"features_11", 1605632},
    {"features_12", 1850490880},  {"features_13", 1605632},     {"features_14", 1850490880},
    {"features_15", 1605632},     {"features_16", 602112},      {"features_17", 925245440},
    {"features_18", 802816},      {"features_19", 1850089472},  {"features_20", 802816},
    {"features_21", 1850089472},  {"features_22", 802816},      {"features_23", 301056},
    {"features_24", 462522368},   {"features_25", 200704},      {"features_26", 462522368},
    {"features_27", 200704},      {"features_28", 462522368},   {"features_29", 200704},
    {"features_30", 75264},       {"avgpool", 1229312},         {"classifier_0", 102764544},
    {"classifier_1", 8192},       {"classifier_3", 16781312},   {"classifier_4", 8192},
    {"classifier_6", 4097000},
};

static void test_pthflops_vgg16_problem_set(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    struct fm_counts *c = test_count_zoo(ctx, "vgg16", 1, FM_MODE_INFER, &g);
    size_t nrows = sizeof(problem_set_vgg16) / sizeof(problem_set_vgg16[0]);
    bool seen[sizeof(problem_set_vgg16) / sizeof(problem_set_vgg16[0])] = {false};
    uint64_t total = 0, conv_and_avgpool = 0;
    for (size_t id = 0; id < fm_graph_node_count(g); id++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)id);
        uint64_t ops = pthflops_of(g, n, &c->nodes[id]);
        if (ops == 0)
            continue;   /* pthflops prints only layers with a non-zero count */
        char fx[128];   /* torch.fx names modules with '_' where the module path has '.' */
        snprintf(fx, sizeof(fx), "%s", n->name);
        for (char *p = fx; *p; p++)
            *p = *p == '.' ? '_' : *p;
        size_t k = 0;
        while (k < nrows && strcmp(problem_set_vgg16[k].layer, fx) != 0)
            k++;
        if (k == nrows)
            fail_msg("layer %s (%llu ops) is not in the problem set's pthflops output", fx,
                     (unsigned long long)ops);
        if (ops != problem_set_vgg16[k].ops)
            fail_msg("%s: %llu from flopmeter's counts, pthflops printed %llu", fx,
                     (unsigned long long)ops, (unsigned long long)problem_set_vgg16[k].ops);
        seen[k] = true;
        total += ops;
        if (n->op == FM_OP_CONV || n->op == FM_OP_ADAPTIVE_AVGPOOL)
            conv_and_avgpool += ops;
    }
    for (size_t k = 0; k < nrows; k++) {
        if (!seen[k])
            fail_msg("the problem set's %s has no layer in flopmeter's vgg16", problem_set_vgg16[k].layer);
    }
    /* both totals of the problem set: all layers, and its first call, which ignored every non-conv
     * module of features and classifier but not avgpool */
    assert_int_equal(total, 15516752872ull);
    assert_int_equal(conv_and_avgpool, 15361407488ull);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_model_matches_torchvision),
        cmocka_unit_test(test_published_figures),
        cmocka_unit_test(test_inception_v3_aux_head_difference),
        cmocka_unit_test(test_input_too_small),
        cmocka_unit_test(test_batch_scaling),
        cmocka_unit_test(test_conv_linear_backward_relation),
        cmocka_unit_test(test_backward_relation_resnet18_vgg11),
        cmocka_unit_test(test_pthflops_vgg16_problem_set),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
