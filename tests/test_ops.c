/* Unit tests of the cost model: each op family's rule, per phase and primitive kind, against
 * counts derived by hand from the formulas in the op files' header comments (the arithmetic is
 * written out next to each expectation, never copied from the program's output); bytes for
 * the main ops; activation memory; the optimizer step; the gradients that must not be counted
 * (network input, frozen parameters, inference); shared weights; overflow; batch scaling. */
#include "support.h"
#include "ops/ops.h"   /* fm_node_cost: one node's rule on its own */

#include <stdio.h>
#include <string.h>

/* ---- building tiny graphs ---- */

struct tg {
    struct fm_ctx *ctx;
    struct fm_graph *g;
};

static struct fm_shape shape_of(const int64_t *d, int rank)
{
    struct fm_shape s;
    memset(&s, 0, sizeof(s));
    s.rank = rank;
    for (int i = 0; i < rank; i++)
        s.dims[i] = d[i];
    return s;
}
#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define SHAPE(...) shape_of(DIMS(__VA_ARGS__), (int)(sizeof(DIMS(__VA_ARGS__)) / sizeof(int64_t)))

static struct tg tg_new(void)
{
    struct tg t;
    t.ctx = test_ctx();
    FM_ASSERT_OK(t.ctx, fm_graph_new(t.ctx, "t", &t.g));
    return t;
}

static void tg_free(struct tg *t)
{
    fm_graph_free(t->g);
    fm_ctx_free(t->ctx);
}

static fm_tid tensor(struct tg *t, const char *name, enum fm_role role, enum fm_dtype dt,
                     struct fm_shape s)
{
    fm_tid id = FM_NONE;
    FM_ASSERT_OK(t->ctx, fm_graph_add_tensor(t->g, name, role, dt, &s, &id));
    return id;
}
#define INPUT(t, name, ...) tensor(t, name, FM_ROLE_INPUT, FM_DTYPE_FP32, SHAPE(__VA_ARGS__))
#define PARAM(t, name, ...) tensor(t, name, FM_ROLE_PARAM, FM_DTYPE_FP32, SHAPE(__VA_ARGS__))
#define BUFFER(t, name, ...) tensor(t, name, FM_ROLE_BUFFER, FM_DTYPE_FP32, SHAPE(__VA_ARGS__))
#define LABELS(t, name, ...) tensor(t, name, FM_ROLE_INPUT, FM_DTYPE_INT64, SHAPE(__VA_ARGS__))

/* An activation that needs a gradient: the Identity (a view, costing nothing) of a trainable
 * parameter, so that the node under test has a bwd_data phase. */
static fm_tid grad_act(struct tg *t, const char *name, struct fm_shape s)
{
    char pname[64], nname[64];
    snprintf(pname, sizeof(pname), "%s.src", name);
    snprintf(nname, sizeof(nname), "%s.id", name);
    fm_tid p = tensor(t, pname, FM_ROLE_PARAM, FM_DTYPE_FP32, s);
    const char *names[1] = {name};
    fm_tid out = FM_NONE;
    FM_ASSERT_OK(t->ctx,
                 fm_graph_add_node(t->g, FM_OP_IDENTITY, nname, NULL, &p, 1, names, 1, &out));
    return out;
}
#define ACT(t, name, ...) grad_act(t, name, SHAPE(__VA_ARGS__))

/* Adds a node with one output (named after the node); returns the node's id. */
static fm_nid node(struct tg *t, enum fm_op op, const char *name, const struct fm_attrs *a,
                   const fm_tid *in, int n_in)
{
    FM_ASSERT_OK(t->ctx, fm_graph_add_node(t->g, op, name, a, in, n_in, NULL, 1, NULL));
    return (fm_nid)fm_graph_node_count(t->g) - 1;
}
#define TIDS(...) ((const fm_tid[]){__VA_ARGS__})
#define NODE(t, op, name, a, ...) \
    node(t, op, name, a, TIDS(__VA_ARGS__), (int)(sizeof(TIDS(__VA_ARGS__)) / sizeof(fm_tid)))

static fm_tid out_of(struct tg *t, fm_nid n)
{
    return fm_graph_node(t->g, n)->out[0];
}

static const struct fm_shape *shape_at(struct tg *t, fm_tid id)
{
    return &fm_graph_tensor(t->g, id)->shape;
}

static void expect_shape_(const struct fm_shape *s, struct fm_shape e, const char *file, int line)
{
    char a[128], b[128];
    if (s->rank != e.rank || memcmp(s->dims, e.dims, sizeof(int64_t) * (size_t)e.rank) != 0) {
        print_error("%s:%d: shape %s, expected %s\n", file, line, fm_shape_format(s, a, sizeof(a)),
                    fm_shape_format(&e, b, sizeof(b)));
        _fail(file, line);
    }
}
#define EXPECT_SHAPE(t, tid, ...) expect_shape_(shape_at(t, tid), SHAPE(__VA_ARGS__), __FILE__, __LINE__)

static struct fm_node_cost cost_mode(struct tg *t, fm_nid n, enum fm_mode mode)
{
    FM_ASSERT_OK(t->ctx, fm_graph_finalize(t->g));
    struct fm_count_opts o;
    fm_count_opts_init(&o);
    o.mode = mode;
    struct fm_node_cost c;
    FM_ASSERT_OK(t->ctx, fm_node_cost(t->ctx, t->g, n, &o, &c));
    return c;
}
#define COST(t, n) cost_mode(t, n, FM_MODE_TRAIN)

static struct fm_counts *count_graph(struct tg *t, enum fm_mode mode, enum fm_optimizer opt)
{
    FM_ASSERT_OK(t->ctx, fm_graph_finalize(t->g));
    struct fm_count_opts o;
    fm_count_opts_init(&o);
    o.mode = mode;
    o.optimizer = opt;
    struct fm_counts *c = NULL;
    FM_ASSERT_OK(t->ctx, fm_count(t->ctx, t->g, &o, &c));
    return c;
}

/* ---- expectations ---- */

#define FWD FM_PHASE_FWD
#define BD FM_PHASE_BWD_DATA
#define BW FM_PHASE_BWD_WEIGHT
#define OPT FM_PHASE_OPTIMIZER

struct prims {
    uint64_t p[FM_PRIM_COUNT];
};
/* In enum fm_prim order: mac, add, mul, div, cmp, special. */
#define PRIMS(mac, add, mul, div, cmp, special) \
    ((struct prims){{(mac), (add), (mul), (div), (cmp), (special)}})

static void expect_work_(const struct fm_work *w, const char *phase, struct prims e,
                         const char *file, int line)
{
    bool bad = false;
    for (int k = 0; k < FM_PRIM_COUNT; k++) {
        if (w->prim[k] != e.p[k]) {
            print_error("%s:%d: %s %s: got %llu, expected %llu\n", file, line, phase,
                        fm_prim_name((enum fm_prim)k), (unsigned long long)w->prim[k],
                        (unsigned long long)e.p[k]);
            bad = true;
        }
    }
    if (bad)
        _fail(file, line);
}

static void expect_bytes_(const struct fm_work *w, const char *phase, uint64_t rd, uint64_t wr,
                          const char *file, int line)
{
    if (w->bytes_read != rd || w->bytes_written != wr) {
        print_error("%s:%d: %s bytes: read %llu written %llu, expected %llu and %llu\n", file,
                    line, phase, (unsigned long long)w->bytes_read,
                    (unsigned long long)w->bytes_written, (unsigned long long)rd,
                    (unsigned long long)wr);
        _fail(file, line);
    }
}

/* EXPECT(cost, phase, mac, add, mul, div, cmp, special) */
#define EXPECT(c, ph, ...) \
    expect_work_(&(c).phase[ph], fm_phase_name((enum fm_phase)(ph)), PRIMS(__VA_ARGS__), __FILE__, __LINE__)
#define EXPECT_BYTES(c, ph, rd, wr) \
    expect_bytes_(&(c).phase[ph], fm_phase_name((enum fm_phase)(ph)), (rd), (wr), __FILE__, __LINE__)
/* A phase with no work at all: no operations, no bytes. */
#define EXPECT_NONE(c, ph)              \
    do {                                \
        EXPECT(c, ph, 0, 0, 0, 0, 0, 0); \
        EXPECT_BYTES(c, ph, 0, 0);      \
    } while (0)
#define EXPECT_TOTAL(cs, ph, ...) \
    expect_work_(&(cs)->total[ph], fm_phase_name((enum fm_phase)(ph)), PRIMS(__VA_ARGS__), __FILE__, __LINE__)
#define EXPECT_TOTAL_BYTES(cs, ph, rd, wr) \
    expect_bytes_(&(cs)->total[ph], fm_phase_name((enum fm_phase)(ph)), (rd), (wr), __FILE__, __LINE__)

static struct fm_attrs attrs(void)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    return a;
}

/* ============================================================================================
 * Convolution: MAC = N*Cout*Ho*Wo*(Cin/g)*kh*kw forward, the same for dX and for dW;
 * bias: one add per output element forward and in its gradient.
 * ========================================================================================= */

static void test_conv_plain_bias_bytes(void **state)
{
    (void)state;
    struct tg t = tg_new();
    fm_tid x = ACT(&t, "x", 2, 4, 7, 7);
    fm_tid w = PARAM(&t, "w", 8, 4, 3, 3), b = PARAM(&t, "b", 8);
    fm_nid n = NODE(&t, FM_OP_CONV, "conv", NULL, x, w, b);
    EXPECT_SHAPE(&t, out_of(&t, n), 2, 8, 5, 5);   /* 7 - 3 + 1 = 5 */
    struct fm_node_cost c = COST(&t, n);
    const uint64_t out = 2 * 8 * 5 * 5;                  /* N*Cout*Ho*Wo */
    const uint64_t mac = out * (4 / 1) * 3 * 3;          /* * (Cin/g)*kh*kw = 14400 */
    EXPECT(c, FWD, mac, out, 0, 0, 0, 0);                /* bias: one add per output */
    EXPECT(c, BD, mac, 0, 0, 0, 0, 0);                   /* dX = convT(dY, W) */
    EXPECT(c, BW, mac, out, 0, 0, 0, 0);                 /* dW = corr(X, dY); dB = sum dY */
    EXPECT_NONE(c, OPT);                                 /* the driver adds the optimizer */
    const uint64_t bx = 2 * 4 * 7 * 7 * 4, bw = 8 * 4 * 3 * 3 * 4, bb = 8 * 4, by = out * 4;
    EXPECT_BYTES(c, FWD, bx + bw + bb, by);              /* X, W, B read; Y written */
    EXPECT_BYTES(c, BD, by + bw, bx);                    /* dY, W read; dX written */
    EXPECT_BYTES(c, BW, by + bx, bw + bb);               /* dY (once, shared with dB), X */
    assert_int_equal(c.params, 8 * 4 * 3 * 3 + 8);
    tg_free(&t);
}

static void test_conv_no_bias_first_layer(void **state)
{
    (void)state;
    struct tg t = tg_new();
    fm_tid x = INPUT(&t, "x", 2, 4, 7, 7);   /* the network input: no gradient */
    fm_tid w = PARAM(&t, "w", 8, 4, 3, 3);
    fm_nid n = NODE(&t, FM_OP_CONV, "conv", NULL, x, w);
    struct fm_node_cost c = COST(&t, n);
    const uint64_t mac = 2 * 8 * 5 * 5 * 4 * 3 * 3;
    EXPECT(c, FWD, mac, 0, 0, 0, 0, 0);      /* no bias: no add */
    EXPECT_NONE(c, BD);                      /* the first layer computes no input gradient */
    EXPECT(c, BW, mac, 0, 0, 0, 0, 0);
    /* inference: forward only */
    struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(ci, FWD, mac, 0, 0, 0, 0, 0);
    EXPECT_NONE(ci, BD);
    EXPECT_NONE(ci, BW);
    EXPECT_NONE(ci, OPT);
    tg_free(&t);
}

static void test_conv_strided_padded_dilated(void **state)
{
    (void)state;
    struct tg t = tg_new();
    /* strided: Ho = floor((9 - 3)/2) + 1 = 4 */
    struct fm_attrs a = attrs();
    a.stride[0] = a.stride[1] = 2;
    fm_nid s = NODE(&t, FM_OP_CONV, "strided", &a, ACT(&t, "x1", 1, 3, 9, 9),
                    PARAM(&t, "w1", 6, 3, 3, 3));
    EXPECT_SHAPE(&t, out_of(&t, s), 1, 6, 4, 4);
    /* padded: Ho = 8 + 1 + 1 - 3 + 1 = 8; padding positions are multiplied too */
    a = attrs();
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    fm_nid p = NODE(&t, FM_OP_CONV, "padded", &a, ACT(&t, "x2", 1, 3, 8, 8),
                    PARAM(&t, "w2", 4, 3, 3, 3));
    EXPECT_SHAPE(&t, out_of(&t, p), 1, 4, 8, 8);
    /* dilated 2: span 2*(3-1)+1 = 5, Ho = 10 - 5 + 1 = 6 */
    a = attrs();
    a.dilation[0] = a.dilation[1] = 2;
    fm_nid d = NODE(&t, FM_OP_CONV, "dilated", &a, ACT(&t, "x3", 1, 2, 10, 10),
                    PARAM(&t, "w3", 3, 2, 3, 3));
    EXPECT_SHAPE(&t, out_of(&t, d), 1, 3, 6, 6);
    /* asymmetric: stride (2,1), pad top 1 only: Ho = floor((5+1-3)/2)+1 = 2, Wo = 6-2+1 = 5 */
    a = attrs();
    a.stride[0] = 2;
    a.pad[0] = 1;
    fm_nid q = NODE(&t, FM_OP_CONV, "asym", &a, ACT(&t, "x4", 1, 1, 5, 6),
                    PARAM(&t, "w4", 2, 1, 3, 2));
    EXPECT_SHAPE(&t, out_of(&t, q), 1, 2, 2, 5);

    const uint64_t ms = 1 * 6 * 4 * 4 * 3 * 3 * 3;   /* 2592 */
    const uint64_t mp = 1 * 4 * 8 * 8 * 3 * 3 * 3;   /* 6912 */
    const uint64_t md = 1 * 3 * 6 * 6 * 2 * 3 * 3;   /* 1944: dilation does not change k */
    const uint64_t mq = 1 * 2 * 2 * 5 * 1 * 3 * 2;   /* 120 */
    struct fm_node_cost c = COST(&t, s);
    EXPECT(c, FWD, ms, 0, 0, 0, 0, 0);
    EXPECT(c, BD, ms, 0, 0, 0, 0, 0);
    EXPECT(c, BW, ms, 0, 0, 0, 0, 0);
    c = COST(&t, p);
    EXPECT(c, FWD, mp, 0, 0, 0, 0, 0);
    EXPECT(c, BD, mp, 0, 0, 0, 0, 0);
    EXPECT(c, BW, mp, 0, 0, 0, 0, 0);
    c = COST(&t, d);
    EXPECT(c, FWD, md, 0, 0, 0, 0, 0);
    EXPECT(c, BD, md, 0, 0, 0, 0, 0);
    EXPECT(c, BW, md, 0, 0, 0, 0, 0);
    c = COST(&t, q);
    EXPECT(c, FWD, mq, 0, 0, 0, 0, 0);
    tg_free(&t);
}

static void test_conv_grouped_depthwise(void **state)
{
    (void)state;
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.groups = 2;
    fm_nid g = NODE(&t, FM_OP_CONV, "grouped", &a, ACT(&t, "x1", 2, 4, 7, 7),
                    PARAM(&t, "w1", 8, 2, 3, 3), PARAM(&t, "b1", 8));
    a = attrs();
    a.groups = 6;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    fm_nid dw = NODE(&t, FM_OP_CONV, "depthwise", &a, ACT(&t, "x2", 1, 6, 6, 6),
                     PARAM(&t, "w2", 6, 1, 3, 3));
    EXPECT_SHAPE(&t, out_of(&t, g), 2, 8, 5, 5);
    EXPECT_SHAPE(&t, out_of(&t, dw), 1, 6, 6, 6);
    /* grouped: N*Cout*Ho*Wo*(Cin/g)*kh*kw = 2*8*5*5*(4/2)*3*3; the weight gradient is the same
     * count, not groups times it (the bug FlopCounterMode had) */
    const uint64_t mg = 2 * 8 * 5 * 5 * (4 / 2) * 3 * 3;   /* 7200 */
    struct fm_node_cost c = COST(&t, g);
    EXPECT(c, FWD, mg, 2 * 8 * 5 * 5, 0, 0, 0, 0);
    EXPECT(c, BD, mg, 0, 0, 0, 0, 0);
    EXPECT(c, BW, mg, 2 * 8 * 5 * 5, 0, 0, 0, 0);
    /* depthwise: Cin/g = 1: 1*6*6*6*1*3*3 */
    const uint64_t md = 1 * 6 * 6 * 6 * 1 * 3 * 3;          /* 1944 */
    c = COST(&t, dw);
    EXPECT(c, FWD, md, 0, 0, 0, 0, 0);
    EXPECT(c, BD, md, 0, 0, 0, 0, 0);
    EXPECT(c, BW, md, 0, 0, 0, 0, 0);
    tg_free(&t);
}

static void test_conv_1d(void **state)
{
    (void)state;
    struct tg t = tg_new();
    /* 1-D: X (N,C,L), W (Cout,C,k); stride and padding at index 1 */
    struct fm_attrs a = attrs();
    a.stride[1] = 2;
    a.pad[1] = a.pad[3] = 1;
    fm_nid n = NODE(&t, FM_OP_CONV, "conv1d", &a, ACT(&t, "x", 2, 4, 10),
                    PARAM(&t, "w", 5, 4, 3), PARAM(&t, "b", 5));
    EXPECT_SHAPE(&t, out_of(&t, n), 2, 5, 5);   /* floor((10 + 2 - 3)/2) + 1 = 5 */
    struct fm_node_cost c = COST(&t, n);
    const uint64_t out = 2 * 5 * 5, mac = out * 4 * 3;   /* N*Cout*Lo * Cin*k = 600 */
    EXPECT(c, FWD, mac, out, 0, 0, 0, 0);
    EXPECT(c, BD, mac, 0, 0, 0, 0, 0);
    EXPECT(c, BW, mac, out, 0, 0, 0, 0);
    tg_free(&t);
}

static void test_conv_transpose(void **state)
{
    (void)state;
    struct tg t = tg_new();
    /* strided, padded, output_padding: Ho = (5-1)*2 - 1 - 1 + 1*(3-1) + 1 + 1 = 10 */
    struct fm_attrs a = attrs();
    a.stride[0] = a.stride[1] = 2;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    a.output_padding[0] = a.output_padding[1] = 1;
    fm_nid n = NODE(&t, FM_OP_CONV_TRANSPOSE, "up", &a, ACT(&t, "x", 1, 4, 5, 5),
                    PARAM(&t, "w", 4, 3, 3, 3), PARAM(&t, "b", 3));
    EXPECT_SHAPE(&t, out_of(&t, n), 1, 3, 10, 10);
    /* every input element scatters into a window: N*Cin*H*W*(Cout/g)*kh*kw = 1*4*5*5*3*3*3 */
    const uint64_t mac = 1 * 4 * 5 * 5 * 3 * 3 * 3;    /* 2700 */
    const uint64_t out = 1 * 3 * 10 * 10;              /* bias adds */
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, mac, out, 0, 0, 0, 0);
    EXPECT(c, BD, mac, 0, 0, 0, 0, 0);
    EXPECT(c, BW, mac, out, 0, 0, 0, 0);

    /* grouped: W (Cin, Cout/g, k, k) = (4, 2, 3, 3), g = 2: Cout = 4; Ho = 4*2 + 2 + 1 = 11 */
    a = attrs();
    a.stride[0] = a.stride[1] = 2;
    a.groups = 2;
    fm_nid gn = NODE(&t, FM_OP_CONV_TRANSPOSE, "upg", &a, ACT(&t, "x2", 1, 4, 5, 5),
                     PARAM(&t, "w2", 4, 2, 3, 3));
    EXPECT_SHAPE(&t, out_of(&t, gn), 1, 4, 11, 11);
    const uint64_t mg = 1 * 4 * 5 * 5 * (4 / 2) * 3 * 3;   /* 1800 */
    c = COST(&t, gn);
    EXPECT(c, FWD, mg, 0, 0, 0, 0, 0);
    EXPECT(c, BD, mg, 0, 0, 0, 0, 0);
    EXPECT(c, BW, mg, 0, 0, 0, 0, 0);
    tg_free(&t);
}

/* 3-D (N, C, D, H, W): the depth's window in the attrs' *_d fields, H and W as in 2-D; the
 * formulas gain Do*kd (conv) or D*kd (transposed) */
static void test_conv_3d(void **state)
{
    (void)state;
    struct tg t = tg_new();
    /* X (1,2,6,7,8), W (4,2,3,3,3); depth stride 2, pads 1/1; H, W stride 1, no pads:
     * Do = floor((6 + 2 - 3)/2) + 1 = 3, Ho = 7 - 3 + 1 = 5, Wo = 8 - 3 + 1 = 6 */
    struct fm_attrs a = attrs();
    a.stride_d = 2;
    a.pad_d[0] = a.pad_d[1] = 1;
    fm_nid n = NODE(&t, FM_OP_CONV, "conv3d", &a, ACT(&t, "x", 1, 2, 6, 7, 8),
                    PARAM(&t, "w", 4, 2, 3, 3, 3), PARAM(&t, "b", 4));
    EXPECT_SHAPE(&t, out_of(&t, n), 1, 4, 3, 5, 6);
    const uint64_t out = 1 * 4 * 3 * 5 * 6, mac = out * 2 * 3 * 3 * 3;   /* 360 * 54 = 19440 */
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, mac, out, 0, 0, 0, 0);
    EXPECT(c, BD, mac, 0, 0, 0, 0, 0);
    EXPECT(c, BW, mac, out, 0, 0, 0, 0);
    /* transposed: X (1,2,2,3,4), W (2,3,2,2,2), depth stride 2 and output_padding 1:
     * Do = (2-1)*2 + (2-1) + 1 + 1 = 5, Ho = 2 + 1 + 1 = 4, Wo = 3 + 1 + 1 = 5;
     * MAC = N*Cin*D*H*W * Cout*kd*kh*kw = 1*2*2*3*4 * 3*2*2*2 = 1152 */
    a = attrs();
    a.stride_d = 2;
    a.output_padding_d = 1;
    fm_nid tn = NODE(&t, FM_OP_CONV_TRANSPOSE, "up3d", &a, ACT(&t, "x2", 1, 2, 2, 3, 4),
                     PARAM(&t, "w2", 2, 3, 2, 2, 2));
    EXPECT_SHAPE(&t, out_of(&t, tn), 1, 3, 5, 4, 5);
    c = COST(&t, tn);
    EXPECT(c, FWD, 1152, 0, 0, 0, 0, 0);
    EXPECT(c, BD, 1152, 0, 0, 0, 0, 0);
    EXPECT(c, BW, 1152, 0, 0, 0, 0, 0);
    /* pools: X (1,1,4,6,6), window 2x3x3, strides 2, 3, 3: Do = 2, Ho = Wo = 2; O = 8,
     * k = 18: max 17 cmp per output; average 17 add + 1 div */
    a = attrs();
    a.kernel_d = 2;
    a.stride_d = 2;
    a.kernel[0] = a.kernel[1] = 3;
    a.stride[0] = a.stride[1] = 3;
    fm_nid mp = NODE(&t, FM_OP_MAXPOOL, "max3d", &a, ACT(&t, "x3", 1, 1, 4, 6, 6));
    fm_nid ap = NODE(&t, FM_OP_AVGPOOL, "avg3d", &a, ACT(&t, "x4", 1, 1, 4, 6, 6));
    EXPECT_SHAPE(&t, out_of(&t, mp), 1, 1, 2, 2, 2);
    EXPECT_SHAPE(&t, out_of(&t, ap), 1, 1, 2, 2, 2);
    c = COST(&t, mp);
    EXPECT(c, FWD, 0, 0, 0, 0, 8 * 17, 0);
    EXPECT(c, BD, 0, 8, 0, 0, 0, 0);
    c = COST(&t, ap);
    EXPECT(c, FWD, 0, 8 * 17, 0, 8, 0, 0);
    EXPECT(c, BD, 0, 8 * 18, 0, 8, 0, 0);
    /* a depth pad as large as the depth kernel: refused */
    a.pad_d[1] = 2;
    fm_tid xb = ACT(&t, "xb", 1, 1, 4, 6, 6);
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_MAXPOOL, "padbig", &a, &xb, 1, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    tg_free(&t);
}

/* ============================================================================================
 * Matrix products: M*K*N MACs per product and per needed gradient.
 * ========================================================================================= */

static void test_linear_2d_3d_bytes(void **state)
{
    (void)state;
    struct tg t = tg_new();
    fm_tid w = PARAM(&t, "w", 4, 5), b = PARAM(&t, "b", 4);
    fm_nid n2 = NODE(&t, FM_OP_LINEAR, "fc2d", NULL, ACT(&t, "x", 3, 5), w, b);
    EXPECT_SHAPE(&t, out_of(&t, n2), 3, 4);
    struct fm_node_cost c = COST(&t, n2);
    const uint64_t mac = 3 * 5 * 4;   /* rows*K*N = 60 */
    EXPECT(c, FWD, mac, 3 * 4, 0, 0, 0, 0);   /* bias: rows*N adds */
    EXPECT(c, BD, mac, 0, 0, 0, 0, 0);        /* dX = dY W */
    EXPECT(c, BW, mac, 3 * 4, 0, 0, 0, 0);    /* dW = dY^T X; dB = sum dY */
    const uint64_t bx = 3 * 5 * 4, bw = 4 * 5 * 4, bb = 4 * 4, by = 3 * 4 * 4;
    EXPECT_BYTES(c, FWD, bx + bw + bb, by);
    EXPECT_BYTES(c, BD, by + bw, bx);
    EXPECT_BYTES(c, BW, by + bx, bw + bb);    /* dY read once for dW and dB */

    /* 3-D input: rows = 2*3 */
    struct tg u = tg_new();
    fm_nid n3 = NODE(&u, FM_OP_LINEAR, "fc3d", NULL, ACT(&u, "x", 2, 3, 5), PARAM(&u, "w", 4, 5),
                     PARAM(&u, "b", 4));
    EXPECT_SHAPE(&u, out_of(&u, n3), 2, 3, 4);
    c = COST(&u, n3);
    EXPECT(c, FWD, 2 * 3 * 5 * 4, 2 * 3 * 4, 0, 0, 0, 0);
    EXPECT(c, BD, 2 * 3 * 5 * 4, 0, 0, 0, 0, 0);
    EXPECT(c, BW, 2 * 3 * 5 * 4, 2 * 3 * 4, 0, 0, 0, 0);
    tg_free(&u);
    tg_free(&t);
}

static void test_gemm(void **state)
{
    (void)state;
    struct tg t = tg_new();
    /* A (K,M) = (5,3) with transA, B (N,K) = (4,5) with transB, C (4) broadcast to (3,4) */
    struct fm_attrs a = attrs();
    a.flags = FM_ATTR_TRANS_A | FM_ATTR_TRANS_B;
    a.alpha = 2.0;
    a.beta = 0.5;
    fm_nid n = NODE(&t, FM_OP_GEMM, "gemm", &a, ACT(&t, "A", 5, 3), PARAM(&t, "B", 4, 5),
                    PARAM(&t, "C", 4));
    EXPECT_SHAPE(&t, out_of(&t, n), 3, 4);
    struct fm_node_cost c = COST(&t, n);
    const uint64_t mac = 3 * 5 * 4, mn = 3 * 4, nc = 4;
    EXPECT(c, FWD, mac, mn, mn + nc, 0, 0, 0);   /* + C; alpha on M*N, beta on C */
    EXPECT(c, BD, mac, 0, mn, 0, 0, 0);           /* dA: one product + alpha */
    /* dB: product + alpha; dC: one add per output element + beta per element of C */
    EXPECT(c, BW, mac, mn, mn + nc, 0, 0, 0);

    /* plain: alpha = beta = 1, no C, no transposes: only the product */
    struct tg u = tg_new();
    fm_nid p = NODE(&u, FM_OP_GEMM, "gemm", NULL, ACT(&u, "A", 3, 5), PARAM(&u, "B", 5, 4));
    c = COST(&u, p);
    EXPECT(c, FWD, 3 * 5 * 4, 0, 0, 0, 0, 0);
    EXPECT(c, BD, 3 * 5 * 4, 0, 0, 0, 0, 0);
    EXPECT(c, BW, 3 * 5 * 4, 0, 0, 0, 0, 0);
    tg_free(&u);
    tg_free(&t);
}

static void test_matmul_batched(void **state)
{
    (void)state;
    struct tg t = tg_new();
    /* activation x activation: both gradients are input gradients (bwd_data) */
    fm_nid n = NODE(&t, FM_OP_MATMUL, "qk", NULL, ACT(&t, "a", 2, 3, 4, 5),
                    ACT(&t, "b", 2, 3, 5, 6));
    EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 4, 6);
    const uint64_t mac = 2 * 3 * 4 * 5 * 6;   /* batch*M*K*N = 720 */
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, mac, 0, 0, 0, 0, 0);
    EXPECT(c, BD, 2 * mac, 0, 0, 0, 0, 0);    /* dA = dC B^T and dB = A^T dC */
    EXPECT_NONE(c, BW);

    /* activation x parameter, the parameter broadcast over the batch (2,3): its gradient is
     * a product over the full batch and then summed: 2*3*5*6 - 5*6 adds */
    fm_nid p = NODE(&t, FM_OP_MATMUL, "proj", NULL, ACT(&t, "a2", 2, 3, 4, 5),
                    PARAM(&t, "w", 5, 6));
    EXPECT_SHAPE(&t, out_of(&t, p), 2, 3, 4, 6);
    c = COST(&t, p);
    EXPECT(c, FWD, mac, 0, 0, 0, 0, 0);
    EXPECT(c, BD, mac, 0, 0, 0, 0, 0);
    EXPECT(c, BW, mac, 2 * 3 * 5 * 6 - 5 * 6, 0, 0, 0, 0);
    tg_free(&t);
}

static void test_matmul_broadcast_and_1d(void **state)
{
    (void)state;
    struct tg t = tg_new();
    /* batch dims (1) and (3) broadcast to (3): A's gradient is summed over it */
    fm_nid n = NODE(&t, FM_OP_MATMUL, "mm", NULL, ACT(&t, "a", 1, 4, 5), ACT(&t, "b", 3, 5, 6));
    EXPECT_SHAPE(&t, out_of(&t, n), 3, 4, 6);
    struct fm_node_cost c = COST(&t, n);
    const uint64_t mac = 3 * 4 * 5 * 6;   /* 360 */
    EXPECT(c, FWD, mac, 0, 0, 0, 0, 0);
    EXPECT(c, BD, 2 * mac, 3 * 4 * 5 - 1 * 4 * 5, 0, 0, 0, 0);

    /* 1-D A (K) is a (1,K) row: (5) @ (2,5,6) -> (2,6); dA summed over the batch of 2 */
    fm_nid v = NODE(&t, FM_OP_MATMUL, "vm", NULL, ACT(&t, "v", 5), ACT(&t, "m", 2, 5, 6));
    EXPECT_SHAPE(&t, out_of(&t, v), 2, 6);
    c = COST(&t, v);
    EXPECT(c, FWD, 2 * 1 * 5 * 6, 0, 0, 0, 0, 0);
    EXPECT(c, BD, 2 * (2 * 1 * 5 * 6), 2 * 5 - 5, 0, 0, 0, 0);

    /* 1-D B (K) is a (K,1) column: (3,4,5) @ (5) -> (3,4); dB summed over the batch of 3 */
    fm_nid mv = NODE(&t, FM_OP_MATMUL, "mv", NULL, ACT(&t, "m2", 3, 4, 5), ACT(&t, "v2", 5));
    EXPECT_SHAPE(&t, out_of(&t, mv), 3, 4);
    c = COST(&t, mv);
    EXPECT(c, FWD, 3 * 4 * 5 * 1, 0, 0, 0, 0, 0);
    EXPECT(c, BD, 2 * (3 * 4 * 5), 3 * 5 - 5, 0, 0, 0, 0);

    /* both 1-D: a dot product, a scalar result */
    fm_nid dot = NODE(&t, FM_OP_MATMUL, "dot", NULL, ACT(&t, "d1", 5), ACT(&t, "d2", 5));
    assert_int_equal(shape_at(&t, out_of(&t, dot))->rank, 0);
    c = COST(&t, dot);
    EXPECT(c, FWD, 5, 0, 0, 0, 0, 0);
    EXPECT(c, BD, 2 * 5, 0, 0, 0, 0, 0);
    tg_free(&t);
}

/* ============================================================================================
 * Normalizations (src/ops/norm.c): E elements, G statistics groups, forward statistics
 * 3E add + E mul + 2G div + G add + G special.
 * ========================================================================================= */

static fm_nid add_bn(struct tg *t, fm_tid x, int64_t c, const struct fm_attrs *a, fm_tid *gamma,
                     fm_tid *beta)
{
    fm_tid g = PARAM(t, "gamma", c), b = PARAM(t, "beta", c);
    fm_tid m = BUFFER(t, "mean", c), v = BUFFER(t, "var", c);
    if (gamma)
        *gamma = g;
    if (beta)
        *beta = b;
    return NODE(t, FM_OP_BATCHNORM, "bn", a, x, g, b, m, v);
}

static void test_batchnorm_train_infer(void **state)
{
    (void)state;
    const uint64_t E = 2 * 3 * 4 * 4, C = 3;
    struct tg t = tg_new();
    fm_nid n = add_bn(&t, ACT(&t, "x", 2, 3, 4, 4), 3, NULL, NULL, NULL);
    struct fm_node_cost c = COST(&t, n);
    /* training: statistics (3E + C add, E mul, 2C div, C special), scale = gamma*istd (C mul),
     * y = d*scale + beta (E mul, E add), running stats (5C mul, 2C add) */
    EXPECT(c, FWD, 0, 3 * E + C + E + 2 * C, E + C + E + 5 * C, 2 * C, 0, C);
    /* dbeta = sum dy (E add); dgamma = sum dy*xhat with xhat recomputed (2E add, 2E mul) */
    EXPECT(c, BW, 0, E + 2 * E, 2 * E, 0, 0, 0);
    /* dx = k*(S*dy - dbeta - xhat*dgamma): 3E mul, 2E add; k = gamma*istd/S: C mul + C div */
    EXPECT(c, BD, 0, 2 * E, 3 * E + C, C, 0, 0);
    assert_int_equal(c.saved_bytes, 2 * 4 * C);   /* batch mean and istd per channel, fp32 */

    /* inference: scale and shift per channel (2C add, 2C mul, C special), y = x*scale+shift */
    struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(ci, FWD, 0, 2 * C + E, 2 * C + E, 0, 0, C);
    EXPECT_NONE(ci, BD);
    EXPECT_NONE(ci, BW);
    tg_free(&t);

    /* frozen affine in training: bwd_data computes both sums itself */
    t = tg_new();
    fm_tid gamma, beta;
    n = add_bn(&t, ACT(&t, "x", 2, 3, 4, 4), 3, NULL, &gamma, &beta);
    fm_graph_set_trainable(t.g, gamma, false);
    fm_graph_set_trainable(t.g, beta, false);
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 3 * E + C + E + 2 * C, E + C + E + 5 * C, 2 * C, 0, C);
    EXPECT_NONE(c, BW);
    EXPECT(c, BD, 0, E + 2 * E + 2 * E, 2 * E + 3 * E + C, C, 0, 0);
    assert_int_equal(c.trainable_params, 0);
    tg_free(&t);

    /* frozen statistics (FM_ATTR_INFER_BN) while training: a fixed affine map per channel;
     * dx = dy*scale (E mul); dgamma, dbeta as above */
    t = tg_new();
    struct fm_attrs a = attrs();
    a.flags = FM_ATTR_INFER_BN;
    n = add_bn(&t, ACT(&t, "x", 2, 3, 4, 4), 3, &a, NULL, NULL);
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 2 * C + E, 2 * C + E, 0, 0, C);
    EXPECT(c, BD, 0, 0, E, 0, 0, 0);
    EXPECT(c, BW, 0, E + 2 * E, 2 * E, 0, 0, 0);
    tg_free(&t);

    /* nothing needs a gradient (input, frozen affine): no backward, nothing kept */
    t = tg_new();
    n = add_bn(&t, INPUT(&t, "x", 2, 3, 4, 4), 3, NULL, &gamma, &beta);
    fm_graph_set_trainable(t.g, gamma, false);
    fm_graph_set_trainable(t.g, beta, false);
    c = COST(&t, n);
    EXPECT_NONE(c, BD);
    EXPECT_NONE(c, BW);
    assert_int_equal(c.saved_bytes, 0);
    tg_free(&t);
}

static void test_layernorm(void **state)
{
    (void)state;
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.axis = -1;   /* normalize the last dim: rows G = 2*3 of S = 8 */
    fm_nid n = NODE(&t, FM_OP_LAYERNORM, "ln", &a, ACT(&t, "x", 2, 3, 8), PARAM(&t, "g", 8),
                    PARAM(&t, "b", 8));
    const uint64_t E = 2 * 3 * 8, G = 2 * 3;
    struct fm_node_cost c = COST(&t, n);
    /* statistics + d*istd (E mul) + *gamma (E mul) + beta (E add) */
    EXPECT(c, FWD, 0, 3 * E + G + E, E + E + E, 2 * G, 0, G);
    EXPECT(c, BW, 0, E + 2 * E, 2 * E, 0, 0, 0);
    /* gamma varies within a row: g = dy*gamma (E mul), sum g (E add), sum g*xhat (E mul +
     * E add; xhat from bwd_weight), dx = istd/S*(S*g - .. - xhat*..): 3E mul, 2E add, G div */
    EXPECT(c, BD, 0, E + E + 2 * E, E + E + 3 * E, G, 0, 0);
    assert_int_equal(c.saved_bytes, 2 * 4 * G);
    tg_free(&t);

    /* no affine parameters: the sums are of dy itself */
    t = tg_new();
    n = NODE(&t, FM_OP_LAYERNORM, "ln", &a, ACT(&t, "x", 2, 3, 8));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 3 * E + G, E + E, 2 * G, 0, G);
    EXPECT_NONE(c, BW);
    /* sum dy (E add), sum dy*xhat with xhat (2E add, 2E mul), dx (3E mul, 2E add, G div) */
    EXPECT(c, BD, 0, E + 2 * E + 2 * E, 2 * E + 3 * E, G, 0, 0);
    tg_free(&t);
}

static void test_groupnorm_instancenorm(void **state)
{
    (void)state;
    const uint64_t E = 2 * 4 * 3 * 3;
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.groups = 2;
    fm_nid gn = NODE(&t, FM_OP_GROUPNORM, "gn", &a, ACT(&t, "x", 2, 4, 3, 3), PARAM(&t, "g", 4),
                     PARAM(&t, "b", 4));
    fm_nid in = NODE(&t, FM_OP_INSTANCENORM, "in", NULL, ACT(&t, "x2", 2, 4, 3, 3),
                     PARAM(&t, "g2", 4), PARAM(&t, "b2", 4));
    /* GroupNorm: G = N*groups = 4; gamma per channel varies within a group of 2 channels */
    uint64_t G = 2 * 2;
    struct fm_node_cost c = COST(&t, gn);
    EXPECT(c, FWD, 0, 3 * E + G + E, 3 * E, 2 * G, 0, G);
    EXPECT(c, BW, 0, 3 * E, 2 * E, 0, 0, 0);
    EXPECT(c, BD, 0, 4 * E, 5 * E, G, 0, 0);
    /* InstanceNorm: G = N*C = 8, gamma constant within a group: the BatchNorm form */
    G = 2 * 4;
    c = COST(&t, in);
    EXPECT(c, FWD, 0, 3 * E + G + E, 3 * E, 2 * G, 0, G);
    EXPECT(c, BW, 0, 3 * E, 2 * E, 0, 0, 0);
    EXPECT(c, BD, 0, 2 * E, 3 * E + G, G, 0, 0);
    tg_free(&t);
}

/* ============================================================================================
 * Activations (src/ops/act.c): per-element counts from each function's plainest formula.
 * ========================================================================================= */

struct act_case {
    enum fm_op op;
    unsigned flags;
    const char *formula;
    struct prims fwd, bwd;   /* per element */
};

static void test_activations_elementwise(void **state)
{
    (void)state;
    const struct act_case cases[] = {
        {FM_OP_RELU, 0, "max(x,0) | dy*(y>0)", PRIMS(0, 0, 0, 0, 1, 0), PRIMS(0, 0, 0, 0, 1, 0)},
        /* ReLU6 = Clip(0, 6): max, min | lo<x, x<hi */
        {FM_OP_CLIP, 0, "min(max(x,0),6)", PRIMS(0, 0, 0, 0, 2, 0), PRIMS(0, 0, 0, 0, 2, 0)},
        {FM_OP_LEAKY_RELU, 0, "x>0 ? x : a*x | dy*(x>0 ? 1 : a)", PRIMS(0, 0, 1, 0, 1, 0),
         PRIMS(0, 0, 1, 0, 1, 0)},
        /* exp(-x), 1+, 1/ | 1-y, y*(1-y), dy* */
        {FM_OP_SIGMOID, 0, "1/(1+exp(-x))", PRIMS(0, 1, 0, 1, 0, 1), PRIMS(0, 1, 2, 0, 0, 0)},
        /* tanh | y*y, 1-, dy* */
        {FM_OP_TANH, 0, "tanh(x)", PRIMS(0, 0, 0, 0, 0, 1), PRIMS(0, 1, 2, 0, 0, 0)},
        /* sigmoid + x*s | sigmoid again, 1-s, x*(), 1+, s*, dy* */
        {FM_OP_SILU, 0, "x*sigmoid(x)", PRIMS(0, 1, 1, 1, 0, 1), PRIMS(0, 3, 3, 1, 0, 1)},
        /* x/sqrt2, erf, 1+, 0.5*x, * | x/sqrt2, erf, 1+, 0.5*; x*x, *-1/2, exp, x*,
         * /sqrt(2pi), +, dy*: 7 mul, 2 add, 2 special */
        {FM_OP_GELU, 0, "0.5x(1+erf(x/sqrt2))", PRIMS(0, 1, 3, 0, 0, 1),
         PRIMS(0, 2, 7, 0, 0, 2)},
        /* u: x*x*x, *0.044715, x+, c* (4 mul 1 add); tanh; 0.5x, 1+t, * (2 mul 1 add) |
         * u, t again (4 mul 1 add 1 special); du/dx (2 mul 1 add, x*x reused);
         * 0.5(1+t) + 0.5x(1-t^2)du/dx (5 mul 3 add); dy* (1 mul) */
        {FM_OP_GELU, FM_ATTR_GELU_TANH, "0.5x(1+tanh(c(x+0.044715x^3)))",
         PRIMS(0, 2, 6, 0, 0, 1), PRIMS(0, 5, 12, 0, 0, 1)},
        /* x+3, max, min, x*, /6 | x<-3, x>3, x/3 + 1/2, dy* */
        {FM_OP_HARDSWISH, 0, "x*min(max(x+3,0),6)/6", PRIMS(0, 1, 2, 0, 2, 0),
         PRIMS(0, 1, 2, 0, 2, 0)},
        /* a*x, +b, max, min | two compares of x, dy*a */
        {FM_OP_HARDSIGMOID, 0, "min(max(a*x+b,0),1)", PRIMS(0, 1, 1, 0, 2, 0),
         PRIMS(0, 0, 1, 0, 2, 0)},
    };
    const uint64_t E = 2 * 3 * 4;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct act_case *k = &cases[i];
        struct tg t = tg_new();
        struct fm_attrs a = attrs();
        a.flags = k->flags;
        a.lo = 0.0;
        a.hi = 6.0;
        a.alpha = 0.1;
        fm_nid n = NODE(&t, k->op, "act", &a, ACT(&t, "x", 2, 3, 4));
        struct fm_node_cost c = COST(&t, n);
        struct prims f, b;
        for (int p = 0; p < FM_PRIM_COUNT; p++) {
            f.p[p] = k->fwd.p[p] * E;
            b.p[p] = k->bwd.p[p] * E;
        }
        print_message("  %s: %s\n", fm_op_name(k->op), k->formula);
        expect_work_(&c.phase[FWD], "fwd", f, __FILE__, __LINE__);
        expect_work_(&c.phase[BD], "bwd_data", b, __FILE__, __LINE__);
        EXPECT_NONE(c, BW);
        /* the first layer: no input gradient, nothing kept */
        struct tg u = tg_new();
        n = NODE(&u, k->op, "act", &a, INPUT(&u, "x", 2, 3, 4));
        c = COST(&u, n);
        expect_work_(&c.phase[FWD], "fwd", f, __FILE__, __LINE__);
        EXPECT_NONE(c, BD);
        tg_free(&u);
        tg_free(&t);
    }
}

/* trig.c: Sin, Cos, Tan, and the piecewise-constant Floor, Ceil, Round, Sign, per element E */
static void test_trig_and_rounding(void **state)
{
    (void)state;
    const struct {
        enum fm_op op;
        const char *formula;
        struct prims fwd, bwd;   /* per element */
        int kept;                /* tensors the backward reads besides dY: 0 or 1 */
        bool zero_grad;          /* the gradient is zeros: written, nothing computed or read */
    } cases[] = {
        /* sin(x) | dy * cos(x): cos, * */
        {FM_OP_SIN, "sin(x) | dy*cos(x)", PRIMS(0, 0, 0, 0, 0, 1), PRIMS(0, 0, 1, 0, 0, 1), 1,
         false},
        /* cos(x) | -dy * sin(x): sin, * (the sign folded into the product) */
        {FM_OP_COS, "cos(x) | -dy*sin(x)", PRIMS(0, 0, 0, 0, 0, 1), PRIMS(0, 0, 1, 0, 0, 1), 1,
         false},
        /* tan(x) | dy * (1 + y*y): y*y, 1+, dy* */
        {FM_OP_TAN, "tan(x) | dy*(1+y*y)", PRIMS(0, 0, 0, 0, 0, 1), PRIMS(0, 1, 2, 0, 0, 0), 1,
         false},
        {FM_OP_FLOOR, "floor(x) | 0", PRIMS(0, 0, 0, 0, 1, 0), PRIMS(0, 0, 0, 0, 0, 0), 0, true},
        {FM_OP_CEIL, "ceil(x) | 0", PRIMS(0, 0, 0, 0, 1, 0), PRIMS(0, 0, 0, 0, 0, 0), 0, true},
        {FM_OP_ROUND, "round(x) | 0", PRIMS(0, 0, 0, 0, 1, 0), PRIMS(0, 0, 0, 0, 0, 0), 0, true},
        {FM_OP_SIGN, "sign(x) | 0", PRIMS(0, 0, 0, 0, 1, 0), PRIMS(0, 0, 0, 0, 0, 0), 0, true},
        /* asin | x*x, 1-, sqrt, dy/ */
        {FM_OP_ASIN, "asin(x) | dy/sqrt(1-x*x)", PRIMS(0, 0, 0, 0, 0, 1),
         PRIMS(0, 1, 1, 1, 0, 1), 1, false},
        /* acos | x*x, 1-, sqrt, -dy/ (the sign folded) */
        {FM_OP_ACOS, "acos(x) | -dy/sqrt(1-x*x)", PRIMS(0, 0, 0, 0, 0, 1),
         PRIMS(0, 1, 1, 1, 0, 1), 1, false},
        /* atan | x*x, 1+, dy/ */
        {FM_OP_ATAN, "atan(x) | dy/(1+x*x)", PRIMS(0, 0, 0, 0, 0, 1), PRIMS(0, 1, 1, 1, 0, 0),
         1, false},
        /* sinh | cosh, dy* */
        {FM_OP_SINH, "sinh(x) | dy*cosh(x)", PRIMS(0, 0, 0, 0, 0, 1), PRIMS(0, 0, 1, 0, 0, 1),
         1, false},
        /* cosh | sinh, dy* */
        {FM_OP_COSH, "cosh(x) | dy*sinh(x)", PRIMS(0, 0, 0, 0, 0, 1), PRIMS(0, 0, 1, 0, 0, 1),
         1, false},
        /* asinh | x*x, +1, sqrt, dy/ */
        {FM_OP_ASINH, "asinh(x) | dy/sqrt(x*x+1)", PRIMS(0, 0, 0, 0, 0, 1),
         PRIMS(0, 1, 1, 1, 0, 1), 1, false},
        /* acosh | x*x, -1, sqrt, dy/ */
        {FM_OP_ACOSH, "acosh(x) | dy/sqrt(x*x-1)", PRIMS(0, 0, 0, 0, 0, 1),
         PRIMS(0, 1, 1, 1, 0, 1), 1, false},
        /* atanh | x*x, 1-, dy/ */
        {FM_OP_ATANH, "atanh(x) | dy/(1-x*x)", PRIMS(0, 0, 0, 0, 0, 1), PRIMS(0, 1, 1, 1, 0, 0),
         1, false},
    };
    const uint64_t E = 2 * 3 * 4, B = E * 4;   /* fp32 */
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tg t = tg_new();
        fm_nid n = NODE(&t, cases[i].op, "f", NULL, ACT(&t, "x", 2, 3, 4));
        struct fm_node_cost c = COST(&t, n);
        struct prims f, b;
        for (int p = 0; p < FM_PRIM_COUNT; p++) {
            f.p[p] = cases[i].fwd.p[p] * E;
            b.p[p] = cases[i].bwd.p[p] * E;
        }
        print_message("  %s: %s\n", fm_op_name(cases[i].op), cases[i].formula);
        expect_work_(&c.phase[FWD], "fwd", f, __FILE__, __LINE__);
        EXPECT_BYTES(c, FWD, B, B);                 /* X read, Y written */
        expect_work_(&c.phase[BD], "bwd_data", b, __FILE__, __LINE__);
        if (cases[i].zero_grad)
            EXPECT_BYTES(c, BD, 0, B);              /* zeros written, nothing read */
        else
            EXPECT_BYTES(c, BD, B + B * (uint64_t)cases[i].kept, B);   /* dY and the kept one */
        EXPECT_NONE(c, BW);
        assert_int_equal(c.saved_bytes, 0);
        /* inference: the same forward, no backward */
        struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
        expect_work_(&ci.phase[FWD], "fwd", f, __FILE__, __LINE__);
        EXPECT_NONE(ci, BD);
        /* the network input needs no gradient */
        struct tg u = tg_new();
        n = NODE(&u, cases[i].op, "f", NULL, INPUT(&u, "x", 2, 3, 4));
        c = COST(&u, n);
        expect_work_(&c.phase[FWD], "fwd", f, __FILE__, __LINE__);
        EXPECT_NONE(c, BD);
        tg_free(&u);
        tg_free(&t);
    }
    /* Sign takes integers (ONNX allows every numeric type); Floor does not */
    struct tg t = tg_new();
    fm_tid xi = tensor(&t, "xi", FM_ROLE_INPUT, FM_DTYPE_INT64, SHAPE(5));
    fm_nid n = NODE(&t, FM_OP_SIGN, "sign", NULL, xi);
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 5, 0);
    EXPECT_BYTES(c, FWD, 5 * 8, 5 * 8);
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_FLOOR, "floor", NULL, &xi, 1, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "floor", "int64", "not a float");
    tg_free(&t);
}

/* act.c: ELU, SELU, CELU, Softplus, Softsign, Mish, ThresholdedReLU, Shrink, per element E;
 * each keeps one tensor (x or y) for its backward */
static void test_activations_more(void **state)
{
    (void)state;
    const struct {
        enum fm_op op;
        const char *formula;
        struct prims fwd, bwd;   /* per element */
    } cases[] = {
        /* x>0 ?, exp, -1, a* | y>0 ?, y+a, dy* */
        {FM_OP_ELU, "x>0 ? x : a(exp(x)-1) | dy*(y>0 ? 1 : y+a)", PRIMS(0, 1, 1, 0, 1, 1),
         PRIMS(0, 1, 1, 0, 1, 0)},
        /* g*x; exp, -1, (g*a)*; select | y>0 ?, y+g*a, dy* */
        {FM_OP_SELU, "x>0 ? g*x : g*a(exp(x)-1) | dy*(y>0 ? g : y+g*a)",
         PRIMS(0, 1, 2, 0, 1, 1), PRIMS(0, 1, 1, 0, 1, 0)},
        /* x/a, exp, -1, a*, select | y>0 ?, y/a, +1, dy* */
        {FM_OP_CELU, "x>0 ? x : a(exp(x/a)-1) | dy*(y>0 ? 1 : y/a+1)", PRIMS(0, 1, 1, 1, 1, 1),
         PRIMS(0, 1, 1, 1, 1, 0)},
        /* exp, 1+, log | exp(-x), 1+, dy/ */
        {FM_OP_SOFTPLUS, "log(1+exp(x)) | dy/(1+exp(-x))", PRIMS(0, 1, 0, 0, 0, 2),
         PRIMS(0, 1, 0, 1, 0, 1)},
        /* |x|, 1+, x/ | |x|, 1+, ()^2, dy/ */
        {FM_OP_SOFTSIGN, "x/(1+|x|) | dy/(1+|x|)^2", PRIMS(0, 1, 0, 1, 1, 0),
         PRIMS(0, 1, 1, 1, 1, 0)},
        /* exp, 1+, log, tanh, x* | e, 1+e, log, tanh (1 add, 3 special); e/(1+e) (1 div);
         * t*t, 1-, x*s, *(1-t^2), t+, dy* (4 mul, 2 add) */
        {FM_OP_MISH, "x*tanh(log(1+exp(x)))", PRIMS(0, 1, 1, 0, 0, 3), PRIMS(0, 3, 4, 1, 0, 3)},
        /* x>a ? | dy*(x>a) as a select */
        {FM_OP_THRESHOLDED_RELU, "x>a ? x : 0 | dy*(x>a)", PRIMS(0, 0, 0, 0, 1, 0),
         PRIMS(0, 0, 0, 0, 1, 0)},
        /* x+b, x-b, two selects | |x|>l: two compares of x */
        {FM_OP_SHRINK, "x<-l ? x+b : x>l ? x-b : 0 | dy*(|x|>l)", PRIMS(0, 2, 0, 0, 2, 0),
         PRIMS(0, 0, 0, 0, 2, 0)},
    };
    const uint64_t E = 2 * 3 * 4, B = E * 4;   /* fp32 */
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct tg t = tg_new();
        fm_nid n = NODE(&t, cases[i].op, "f", NULL, ACT(&t, "x", 2, 3, 4));
        EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 4);
        struct fm_node_cost c = COST(&t, n);
        struct prims f, b;
        for (int p = 0; p < FM_PRIM_COUNT; p++) {
            f.p[p] = cases[i].fwd.p[p] * E;
            b.p[p] = cases[i].bwd.p[p] * E;
        }
        print_message("  %s: %s\n", fm_op_name(cases[i].op), cases[i].formula);
        expect_work_(&c.phase[FWD], "fwd", f, __FILE__, __LINE__);
        EXPECT_BYTES(c, FWD, B, B);                 /* X read, Y written */
        expect_work_(&c.phase[BD], "bwd_data", b, __FILE__, __LINE__);
        EXPECT_BYTES(c, BD, B + B, B);              /* dY and the kept x or y read; dX written */
        EXPECT_NONE(c, BW);
        struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
        expect_work_(&ci.phase[FWD], "fwd", f, __FILE__, __LINE__);
        EXPECT_NONE(ci, BD);
        struct tg u = tg_new();
        n = NODE(&u, cases[i].op, "f", NULL, INPUT(&u, "x", 2, 3, 4));
        c = COST(&u, n);
        expect_work_(&c.phase[FWD], "fwd", f, __FILE__, __LINE__);
        EXPECT_NONE(c, BD);
        tg_free(&u);
        tg_free(&t);
    }
}

/* Hardmax: one-hot of the row's maximum along axis, rows R of L: E-R cmp; zero gradient */
static void test_hardmax(void **state)
{
    (void)state;
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.axis = 1;   /* (2, 3, 4) along axis 1: R = 2*4 = 8 rows of L = 3 */
    fm_nid n = NODE(&t, FM_OP_HARDMAX, "hm", &a, ACT(&t, "x", 2, 3, 4));
    EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 4);
    const uint64_t E = 24, R = 8, B = E * 4;
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, E - R, 0);
    EXPECT_BYTES(c, FWD, B, B);
    EXPECT(c, BD, 0, 0, 0, 0, 0, 0);               /* zeros written, nothing computed or read */
    EXPECT_BYTES(c, BD, 0, B);
    assert_int_equal(c.saved_bytes, 0);
    struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(ci, FWD, 0, 0, 0, 0, E - R, 0);
    EXPECT_NONE(ci, BD);
    a.axis = -1;  /* R = 6 rows of 4, from the network input: no gradient */
    n = NODE(&t, FM_OP_HARDMAX, "hm2", &a, INPUT(&t, "x2", 2, 3, 4));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, E - 6, 0);
    EXPECT_NONE(c, BD);
    tg_free(&t);
}

/* compare.c: IsInf, IsNaN (bool out, E cmp), BitShift (integers, E cmp); no gradient */
static void test_isinf_isnan_bitshift(void **state)
{
    (void)state;
    struct tg t = tg_new();
    const enum fm_op ops[] = {FM_OP_ISINF, FM_OP_ISNAN};
    for (int i = 0; i < 2; i++) {
        fm_nid n = NODE(&t, ops[i], i ? "nan" : "inf", NULL, ACT(&t, i ? "x1" : "x0", 2, 3, 4));
        EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 4);
        assert_int_equal(fm_graph_tensor(t.g, out_of(&t, n))->dtype, FM_DTYPE_BOOL);
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 0, 0, 0, 0, 24, 0);         /* one comparison per element */
        EXPECT_BYTES(c, FWD, 24 * 4, 24 * 1);      /* fp32 read, bool written */
        EXPECT_NONE(c, BD);                        /* a bool result carries no gradient */
    }
    /* BitShift: (2, 3) uint8 << (3) broadcast: 6 shifts, uint8 out */
    fm_tid a = tensor(&t, "a", FM_ROLE_INPUT, FM_DTYPE_UINT8, SHAPE(2, 3));
    fm_tid b = tensor(&t, "b", FM_ROLE_INPUT, FM_DTYPE_UINT8, SHAPE(3));
    fm_nid n = NODE(&t, FM_OP_BITSHIFT, "shl", NULL, a, b);
    EXPECT_SHAPE(&t, out_of(&t, n), 2, 3);
    assert_int_equal(fm_graph_tensor(t.g, out_of(&t, n))->dtype, FM_DTYPE_UINT8);
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 6, 0);
    EXPECT_BYTES(c, FWD, 6 + 3, 6);
    EXPECT_NONE(c, BD);
    /* floats are refused: IsInf of int64, BitShift of fp32 */
    fm_tid xi = tensor(&t, "xi", FM_ROLE_INPUT, FM_DTYPE_INT64, SHAPE(5));
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_ISINF, "badinf", NULL, &xi, 1, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "badinf", "int64", "not a float");
    fm_tid f[2] = {INPUT(&t, "f", 5), xi};
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_BITSHIFT, "badshift", NULL, f, 2, NULL, 1,
                                       NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "badshift", "fp32", "not an integer");
    tg_free(&t);
}

/* eltwise.c: Mod (E div + cmp + mul + add | dB: E div + cmp + mul), Sum and Mean of n inputs */
static void test_mod_sum_mean(void **state)
{
    (void)state;
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.ints[0] = 1;   /* fmod: floats need it */
    a.nints = 1;
    /* A (2,3,4) mod B (3,1): E = 24; B's gradient sums 24 -> 3: 21 adds */
    const uint64_t E = 24, own_b = 3, B4 = 4;
    fm_nid n = NODE(&t, FM_OP_MOD, "mod", &a, ACT(&t, "a", 2, 3, 4), PARAM(&t, "b", 3, 1));
    EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 4);
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, E, E, E, E, 0);               /* q = a/b, round it, q*b, a - q*b */
    EXPECT_BYTES(c, FWD, (E + own_b) * B4, E * B4);
    EXPECT(c, BD, 0, 0, 0, 0, 0, 0);                /* dA = dy */
    EXPECT_BYTES(c, BD, E * B4 + (E + own_b) * B4, E * B4);   /* dY, A and B read; dA */
    /* dB = -dy * q, q recomputed (div, cmp, mul), summed to (3,1) */
    EXPECT(c, BW, 0, E - own_b, E, E, E, 0);
    EXPECT_BYTES(c, BW, 0, own_b * B4);   /* the reads are counted once, with dA's */
    struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(ci, FWD, 0, E, E, E, E, 0);
    EXPECT_NONE(ci, BD);
    EXPECT_NONE(ci, BW);
    /* integers (ONNX's usual Mod), fmod 0: the same forward; no gradient */
    fm_tid ia = tensor(&t, "ia", FM_ROLE_INPUT, FM_DTYPE_INT32, SHAPE(6));
    fm_tid ib = tensor(&t, "ib", FM_ROLE_INPUT, FM_DTYPE_INT32, SHAPE(6));
    n = NODE(&t, FM_OP_MOD, "imod", NULL, ia, ib);
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 6, 6, 6, 6, 0);
    EXPECT_BYTES(c, FWD, 12 * 4, 6 * 4);
    EXPECT_NONE(c, BD);
    /* float Mod with fmod 0 is not ONNX */
    fm_tid fab[2] = {INPUT(&t, "fa", 6), INPUT(&t, "fb", 6)};
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_MOD, "badmod", NULL, fab, 2, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "badmod", "fmod=1");

    /* Sum and Mean of X (2,3,4), P (3,4) a parameter, Z (2,1,4) the network input: E = 24 */
    const enum fm_op vops[] = {FM_OP_SUM, FM_OP_MEAN};
    for (int i = 0; i < 2; i++) {
        bool mean = vops[i] == FM_OP_MEAN;
        char nx[8], np[8], nz[8];
        snprintf(nx, sizeof(nx), "x%d", i);
        snprintf(np, sizeof(np), "p%d", i);
        snprintf(nz, sizeof(nz), "z%d", i);
        n = NODE(&t, vops[i], mean ? "mean" : "sum", NULL, ACT(&t, nx, 2, 3, 4),
                 PARAM(&t, np, 3, 4), INPUT(&t, nz, 2, 1, 4));
        EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 4);
        c = COST(&t, n);
        /* (n-1)E adds; Mean divides by n: E div */
        EXPECT(c, FWD, 0, 2 * E, 0, mean ? E : 0, 0, 0);
        EXPECT_BYTES(c, FWD, (24 + 12 + 8) * B4, E * B4);
        /* dX = dy (Mean: / 3, 24 div); dP = dy summed 24 -> 12 (12 add; Mean: 12 div); Z none */
        EXPECT(c, BD, 0, 0, 0, mean ? 24 : 0, 0, 0);
        EXPECT_BYTES(c, BD, E * B4, 24 * B4);
        EXPECT(c, BW, 0, 12, 0, mean ? 12 : 0, 0, 0);
        EXPECT_BYTES(c, BW, 0, 12 * B4);  /* dY was read once, with dX's */
        ci = cost_mode(&t, n, FM_MODE_INFER);
        EXPECT(ci, FWD, 0, 2 * E, 0, mean ? E : 0, 0, 0);
        EXPECT_NONE(ci, BD);
    }
    tg_free(&t);
}

/* reduce.c: ReduceL1, ReduceLogSum, ReduceLogSumExp; E = 24 in, O = 6 out */
static void test_reduce_l1_logsum(void **state)
{
    (void)state;
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.ints[0] = 2;   /* (2, 3, 4) over axis 2 -> (2, 3) */
    a.nints = 1;
    const uint64_t E = 24, O = 6, B4 = 4;
    fm_nid l1 = NODE(&t, FM_OP_REDUCE_L1, "l1", &a, ACT(&t, "x0", 2, 3, 4));
    fm_nid ls = NODE(&t, FM_OP_REDUCE_LOG_SUM, "ls", &a, ACT(&t, "x1", 2, 3, 4));
    a.flags |= FM_ATTR_KEEPDIMS;
    fm_nid lse = NODE(&t, FM_OP_REDUCE_LOG_SUM_EXP, "lse", &a, ACT(&t, "x2", 2, 3, 4));
    EXPECT_SHAPE(&t, out_of(&t, l1), 2, 3);
    EXPECT_SHAPE(&t, out_of(&t, lse), 2, 3, 1);
    /* l1: |x| (E cmp), E-O adds | dy * sign(x): E cmp + E mul; reads dY and x */
    struct fm_node_cost c = COST(&t, l1);
    EXPECT(c, FWD, 0, E - O, 0, 0, E, 0);
    EXPECT_BYTES(c, FWD, E * B4, O * B4);
    EXPECT(c, BD, 0, 0, E, 0, E, 0);
    EXPECT_BYTES(c, BD, (O + E) * B4, E * B4);
    /* log sum: E-O adds, O logs | dy * exp(-y): O special + O mul; reads dY and y */
    c = COST(&t, ls);
    EXPECT(c, FWD, 0, E - O, 0, 0, 0, O);
    EXPECT(c, BD, 0, 0, O, 0, 0, O);
    EXPECT_BYTES(c, BD, (O + O) * B4, E * B4);
    /* log sum exp: max (E-O cmp), x-m (E add), exp (E special), sum (E-O add), log (O special),
     * +m (O add) | dy * exp(x - y): E add, E special, E mul; reads dY, x and y */
    c = COST(&t, lse);
    EXPECT(c, FWD, 0, E + (E - O) + O, 0, 0, E - O, E + O);
    EXPECT(c, BD, 0, E, E, 0, 0, E);
    EXPECT_BYTES(c, BD, (O + E + O) * B4, E * B4);
    struct fm_node_cost ci = cost_mode(&t, lse, FM_MODE_INFER);
    EXPECT(ci, FWD, 0, 2 * E, 0, 0, E - O, E + O);
    EXPECT_NONE(ci, BD);
    /* from the network input: no backward */
    fm_nid n = NODE(&t, FM_OP_REDUCE_L1, "l1in", &a, INPUT(&t, "xin", 2, 3, 4));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, E - O, 0, 0, E, 0);
    EXPECT_NONE(c, BD);
    tg_free(&t);
}

/* normalize.c: LpNormalization, MeanVarianceNormalization, LRN */
static void test_lp_mvn_lrn(void **state)
{
    (void)state;
    struct tg t = tg_new();
    const uint64_t B4 = 4;
    /* LpNorm p=2 along axis 1 of (2, 3, 4): R = 8 rows of 3, E = 24 */
    struct fm_attrs a = attrs();
    a.axis = 1;
    a.ints[0] = 2;
    a.nints = 1;
    uint64_t E = 24, R = 8;
    fm_nid n = NODE(&t, FM_OP_LP_NORM, "lp2", &a, ACT(&t, "x0", 2, 3, 4));
    EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 4);
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, E - R, E, E, 0, R);           /* x*x, sum, sqrt, x/n */
    EXPECT_BYTES(c, FWD, E * B4, E * B4 + R * 4);   /* + n per row, fp32, kept */
    EXPECT(c, BD, 0, 2 * E - R, 2 * E, E, 0, 0);    /* dy*y, sum, y*s, dy-, /n */
    EXPECT_BYTES(c, BD, (E + E) * B4 + R * 4, E * B4);   /* dY, y, n */
    assert_int_equal(c.saved_bytes, R * 4);
    struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(ci, FWD, 0, E - R, E, E, 0, R);
    EXPECT_BYTES(ci, FWD, E * B4, E * B4);
    EXPECT_NONE(ci, BD);
    /* p=1, last axis: R = 6 rows of 4 */
    a.axis = -1;
    a.ints[0] = 1;
    n = NODE(&t, FM_OP_LP_NORM, "lp1", &a, ACT(&t, "x1", 2, 3, 4));
    R = 6;
    c = COST(&t, n);
    EXPECT(c, FWD, 0, E - R, 0, E, E, 0);           /* |x|, sum, x/n */
    EXPECT(c, BD, 0, 2 * E - R, 2 * E, E, E, 0);    /* dy*y, sum, sign(y)*s, dy-, /n */
    a.ints[0] = 3;
    fm_tid x3 = ACT(&t, "x3", 2, 3);
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_LP_NORM, "lp3", &a, &x3, 1, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "lp3", "1 or 2");

    /* MVN over axes 0, 2, 3 of (2, 3, 2, 2): G = 3 groups of S = 8, E = 24 */
    a = attrs();
    a.ints[0] = 0, a.ints[1] = 2, a.ints[2] = 3;
    a.nints = 3;
    E = 24;
    const uint64_t G = 3;
    n = NODE(&t, FM_OP_MVN, "mvn", &a, ACT(&t, "x4", 2, 3, 2, 2));
    c = COST(&t, n);
    /* add: mean (E-G), mean of x*x (E-G), var (G), +eps (G), x-m (E) = 3E;
     * mul: x*x (E), m*m (G); div: two means (2G), /s (E); special: sqrt (G) */
    EXPECT(c, FWD, 0, 3 * E, E + G, E + 2 * G, 0, G);
    EXPECT_BYTES(c, FWD, E * B4, E * B4 + G * 4);
    /* add: mean(dy) (E-G), mean(dy*y) (E-G), s = sd+eps (G), two subtractions (2E) = 4E-G;
     * mul: dy*y (E), k*mean (G), y*() (E); div: two means (2G), s/sd (G), /s (E) */
    EXPECT(c, BD, 0, 4 * E - G, 2 * E + G, E + 3 * G, 0, 0);
    EXPECT_BYTES(c, BD, (E + E) * B4 + G * 4, E * B4);
    n = NODE(&t, FM_OP_MVN, "mvnin", &a, INPUT(&t, "x5", 2, 3, 2, 2));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 3 * E, E + G, E + 2 * G, 0, G);
    EXPECT_NONE(c, BD);

    /* LRN, size 3 over C = 4 channels of (1, 4, 2, 2): windows [0,1] [0,2] [1,3] [2,3] (lo 1,
     * hi 1) of 2, 3, 3, 2 channels: 1 + 2 + 2 + 1 = 6 adds per position, P = 4 positions */
    a = attrs();
    a.ints[0] = 3;
    a.nints = 1;
    E = 16;
    uint64_t W = 4 * 6;
    n = NODE(&t, FM_OP_LRN, "lrn", &a, ACT(&t, "x6", 1, 4, 2, 2));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, E + W, 2 * E, E, 0, E);       /* x*x, sums, alpha/size*, +bias, pow, / */
    EXPECT_BYTES(c, FWD, E * B4, E * B4 + E * B4);  /* + d, kept */
    /* d^-beta, dy*, dy*y/d (mul, div), window sums, x_i*, *const, difference */
    EXPECT(c, BD, 0, E + W, 4 * E, E, 0, E);
    EXPECT_BYTES(c, BD, (E + E + E + E) * B4, E * B4);   /* dY, x, y, d */
    /* size 4 (lo 1, hi 2) over C = 3: windows [0,2] [0,2] [1,2]: 2 + 2 + 1 = 5 adds per
     * position; (2, 3, 5): P = 2*5 = 10; size 1: no adds */
    a.ints[0] = 4;
    E = 30;
    W = 10 * 5;
    n = NODE(&t, FM_OP_LRN, "lrn4", &a, INPUT(&t, "x7", 2, 3, 5));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, E + W, 2 * E, E, 0, E);
    EXPECT_NONE(c, BD);
    a.ints[0] = 1;
    n = NODE(&t, FM_OP_LRN, "lrn1", &a, INPUT(&t, "x8", 2, 3, 5));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, E, 2 * E, E, 0, E);
    /* a window far wider than C: every window is all C channels, C*(C-1) adds per position */
    a.ints[0] = 1001;
    n = NODE(&t, FM_OP_LRN, "lrnw", &a, INPUT(&t, "x9", 2, 3, 5));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, E + 10 * 3 * 2, 2 * E, E, 0, E);
    tg_free(&t);
}

/* pool.c: LpPool and GlobalLpPool, O outputs of windows of k */
static void test_lppool(void **state)
{
    (void)state;
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.kernel[0] = a.kernel[1] = 2;
    a.stride[0] = a.stride[1] = 2;
    a.ints[0] = 2;
    a.nints = 1;
    /* (1, 2, 4, 4) -> (1, 2, 2, 2): O = 8, k = 4, O*k = 32 window elements */
    fm_nid n = NODE(&t, FM_OP_LPPOOL, "lp", &a, ACT(&t, "x0", 1, 2, 4, 4));
    EXPECT_SHAPE(&t, out_of(&t, n), 1, 2, 2, 2);
    uint64_t O = 8, K = 32;
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, K - O, K, 0, 0, O);            /* x*x, k-1 adds, sqrt */
    EXPECT_BYTES(c, FWD, K * 4, O * 4);
    EXPECT(c, BD, 0, K, K, K, 0, 0);                 /* dy*x/y; the scatter */
    EXPECT_BYTES(c, BD, (O + K + O) * 4, K * 4);     /* dY, x, y */
    /* p = 1: |x| and the sum | dy*sign(x), scatter */
    a.ints[0] = 1;
    n = NODE(&t, FM_OP_LPPOOL, "lp1", &a, ACT(&t, "x1", 1, 2, 4, 4));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, K - O, 0, 0, K, 0);
    EXPECT(c, BD, 0, K, K, 0, K, 0);
    EXPECT_BYTES(c, BD, (O + K) * 4, K * 4);         /* dY, x */
    /* p = 3: pow per element, root per output | |x|^(p-1), y^(p-1) per output, /, sign, dy* */
    a.ints[0] = 3;
    n = NODE(&t, FM_OP_LPPOOL, "lp3", &a, ACT(&t, "x2", 1, 2, 4, 4));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, K - O, 0, 0, 0, K + O);
    EXPECT(c, BD, 0, K, K, K, K, K + O);
    struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(ci, FWD, 0, K - O, 0, 0, 0, K + O);
    EXPECT_NONE(ci, BD);
    /* global, p = 2, from the network input: (2, 3, 4, 5) -> (2, 3, 1, 1): O = 6, E = 120 */
    a = attrs();
    a.ints[0] = 2;
    a.nints = 1;
    n = NODE(&t, FM_OP_GLOBAL_LPPOOL, "glp", &a, INPUT(&t, "x3", 2, 3, 4, 5));
    EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 1, 1);
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 120 - 6, 120, 0, 0, 6);
    EXPECT_NONE(c, BD);
    n = NODE(&t, FM_OP_GLOBAL_LPPOOL, "glp2", &a, ACT(&t, "x4", 2, 3, 4, 5));
    c = COST(&t, n);
    EXPECT(c, BD, 0, 120, 120, 120, 0, 0);
    a.ints[0] = 0;
    fm_tid x5 = ACT(&t, "x5", 2, 3, 4, 5);
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_GLOBAL_LPPOOL, "glp0", &a, &x5, 1, NULL, 1,
                                       NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "glp0", "positive");
    tg_free(&t);
}

/* linalg.c: Det of (2, 3, 3): B = 2 matrices of n = 3 */
static void test_det(void **state)
{
    (void)state;
    struct tg t = tg_new();
    fm_nid n = NODE(&t, FM_OP_DET, "det", NULL, ACT(&t, "x", 2, 3, 3));
    EXPECT_SHAPE(&t, out_of(&t, n), 2);
    /* per matrix, LU with partial pivoting, m = 2, 1 rows below the diagonal of columns 0, 1:
     * pivots 2 + 1 = 3 cmp, multipliers 3 div, updates 2*2 + 1*1 = 5 mac ((n-1)n(2n-1)/6 =
     * 2*3*5/6); det = product of the 3 diagonal elements: 2 mul */
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 2 * 5, 0, 2 * 2, 2 * 3, 2 * 3, 0);
    const uint64_t bx = 2 * 9 * 4, by = 2 * 4, saved = bx + 2 * 3 * 4;   /* LU, int32 pivots */
    EXPECT_BYTES(c, FWD, bx, by + saved);
    assert_int_equal(c.saved_bytes, saved);
    /* X^-1 from LU: 3 columns, each 3 mac forward and 3 mac + 3 div back: 18 mac, 9 div;
     * dy*det (1 mul) times X^-T (9 mul): per matrix */
    EXPECT(c, BD, 2 * 18, 0, 2 * 10, 2 * 9, 0, 0);
    EXPECT_BYTES(c, BD, by + by + saved, bx);   /* dY, Y, LU and pivots; dX */
    EXPECT_NONE(c, BW);
    struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(ci, FWD, 2 * 5, 0, 2 * 2, 2 * 3, 2 * 3, 0);
    EXPECT_BYTES(ci, FWD, bx, by);
    EXPECT_NONE(ci, BD);
    /* one 4 x 4 from the network input: 3 + 2 + 1 = 6 cmp and div, 9 + 4 + 1 = 14 mac, 3 mul */
    n = NODE(&t, FM_OP_DET, "det4", NULL, INPUT(&t, "x4", 4, 4));
    assert_int_equal(shape_at(&t, out_of(&t, n))->rank, 0);   /* a scalar */
    c = COST(&t, n);
    EXPECT(c, FWD, 14, 0, 3, 6, 6, 0);
    EXPECT_NONE(c, BD);
    /* 1 x 1: the element itself */
    n = NODE(&t, FM_OP_DET, "det1", NULL, INPUT(&t, "x1", 5, 1, 1));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 0, 0);
    fm_tid r = INPUT(&t, "r", 2, 3);
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_DET, "rect", NULL, &r, 1, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "rect", "not square");
    tg_free(&t);
}

static void test_relu_bytes(void **state)
{
    (void)state;
    struct tg t = tg_new();
    fm_nid n = NODE(&t, FM_OP_RELU, "relu", NULL, ACT(&t, "x", 2, 3, 4));
    struct fm_node_cost c = COST(&t, n);
    const uint64_t b = 2 * 3 * 4 * 4;
    EXPECT_BYTES(c, FWD, b, b);        /* X read, Y written */
    EXPECT_BYTES(c, BD, b + b, b);     /* dY and the kept Y read, dX written */
    EXPECT_BYTES(c, BW, 0, 0);
    tg_free(&t);
}

static void test_prelu(void **state)
{
    (void)state;
    struct tg t = tg_new();
    /* slope per channel, broadcast over (2, ., 4, 4) */
    fm_nid n = NODE(&t, FM_OP_PRELU, "prelu", NULL, ACT(&t, "x", 2, 3, 4, 4),
                    PARAM(&t, "slope", 3, 1, 1));
    const uint64_t E = 2 * 3 * 4 * 4;
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, E, 0, E, 0);          /* x>0, a*x */
    EXPECT(c, BD, 0, 0, E, 0, E, 0);           /* dy * (x>0 ? 1 : a) */
    EXPECT(c, BW, 0, E - 3, E, 0, E, 0);       /* dy*(x>0 ? 0 : x) summed to 3 slopes */
    tg_free(&t);
}

static void test_softmax_logsoftmax(void **state)
{
    (void)state;
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.axis = -1;   /* rows R = 2*3 of L = 4 */
    fm_nid s = NODE(&t, FM_OP_SOFTMAX, "sm", &a, ACT(&t, "x", 2, 3, 4));
    fm_nid l = NODE(&t, FM_OP_LOG_SOFTMAX, "lsm", &a, ACT(&t, "x2", 2, 3, 4));
    a.axis = 1;    /* rows R = 2*4 of L = 3 */
    fm_nid s1 = NODE(&t, FM_OP_SOFTMAX, "sm1", &a, ACT(&t, "x3", 2, 3, 4));
    const uint64_t E = 24, R = 6, R1 = 8;
    /* max (E-R cmp), x-m (E add), exp (E special), sum (E-R add), /s (E div) */
    struct fm_node_cost c = COST(&t, s);
    EXPECT(c, FWD, 0, E + (E - R), 0, E, E - R, E);
    /* dx = y*(dy - sum(dy*y)): dy*y, y*() (2E mul); sum (E-R add), dy- (E add) */
    EXPECT(c, BD, 0, (E - R) + E, 2 * E, 0, 0, 0);
    c = COST(&t, s1);
    EXPECT(c, FWD, 0, E + (E - R1), 0, E, E - R1, E);
    EXPECT(c, BD, 0, (E - R1) + E, 2 * E, 0, 0, 0);
    /* log-softmax: max, x-m, exp, sum as softmax; log s (R special); x-m-log s (E add) */
    c = COST(&t, l);
    EXPECT(c, FWD, 0, E + (E - R) + E, 0, 0, E - R, E + R);
    /* dx = dy - exp(y)*sum(dy): sum (E-R add), exp (E special), * (E mul), dy- (E add) */
    EXPECT(c, BD, 0, (E - R) + E, E, 0, 0, E);
    tg_free(&t);
}

/* ============================================================================================
 * Pooling (src/ops/pool.c): O outputs, windows of k elements.
 * ========================================================================================= */

static void test_maxpool(void **state)
{
    (void)state;
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.kernel[0] = a.kernel[1] = 3;
    a.stride[0] = a.stride[1] = 2;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    fm_nid n = NODE(&t, FM_OP_MAXPOOL, "pool", &a, ACT(&t, "x", 1, 2, 7, 7));
    EXPECT_SHAPE(&t, out_of(&t, n), 1, 2, 4, 4);   /* floor((7 + 2 - 3)/2) + 1 = 4 */
    const uint64_t O = 1 * 2 * 4 * 4;
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, O * (3 * 3 - 1), 0);   /* k-1 compares per output */
    EXPECT(c, BD, 0, O, 0, 0, 0, 0);                  /* dx[argmax] += dy */
    assert_int_equal(c.saved_bytes, O * 8);           /* int64 indices */
    /* X read; Y and the indices written; backward reads dY and the indices, writes dX */
    EXPECT_BYTES(c, FWD, 1 * 2 * 7 * 7 * 4, O * 4 + O * 8);
    EXPECT_BYTES(c, BD, O * 4 + O * 8, 1 * 2 * 7 * 7 * 4);

    /* ceil_mode: 6 with k=3, s=2: ceil(3/2) + 1 = 3 (floor would give 2) */
    a = attrs();
    a.kernel[0] = a.kernel[1] = 3;
    a.stride[0] = a.stride[1] = 2;
    a.flags = FM_ATTR_CEIL_MODE;
    fm_nid cm = NODE(&t, FM_OP_MAXPOOL, "ceil", &a, ACT(&t, "x2", 1, 1, 6, 6));
    EXPECT_SHAPE(&t, out_of(&t, cm), 1, 1, 3, 3);
    c = COST(&t, cm);
    EXPECT(c, FWD, 0, 0, 0, 0, 3 * 3 * (3 * 3 - 1), 0);
    /* ceil_mode, last window would start in the right padding: 7 + 1 + 1 with k=2, s=3:
     * ceil(7/3) + 1 = 4, but window 4 starts at 9 >= 7 + 1, so 3 (PyTorch's rule) */
    a = attrs();
    a.kernel[0] = a.kernel[1] = 2;
    a.stride[0] = a.stride[1] = 3;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    a.flags = FM_ATTR_CEIL_MODE;
    fm_nid cp = NODE(&t, FM_OP_MAXPOOL, "ceilpad", &a, ACT(&t, "x3", 1, 1, 7, 7));
    EXPECT_SHAPE(&t, out_of(&t, cp), 1, 1, 3, 3);
    c = COST(&t, cp);
    EXPECT(c, FWD, 0, 0, 0, 0, 3 * 3 * (2 * 2 - 1), 0);
    tg_free(&t);
}

static void test_avgpool_adaptive_global(void **state)
{
    (void)state;
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.kernel[0] = a.kernel[1] = 2;
    a.stride[0] = a.stride[1] = 2;
    fm_nid ap = NODE(&t, FM_OP_AVGPOOL, "avg", &a, ACT(&t, "x", 1, 2, 6, 6));
    EXPECT_SHAPE(&t, out_of(&t, ap), 1, 2, 3, 3);
    uint64_t O = 1 * 2 * 3 * 3, k = 2 * 2;
    struct fm_node_cost c = COST(&t, ap);
    EXPECT(c, FWD, 0, O * (k - 1), 0, O, 0, 0);   /* k-1 adds + 1 div per output */
    EXPECT(c, BD, 0, O * k, 0, O, 0, 0);          /* dy/k, scattered into k elements */

    /* padded: 5 + 1 + 1 with k=3, s=2: 3 outputs per axis; padding counts in the window */
    a = attrs();
    a.kernel[0] = a.kernel[1] = 3;
    a.stride[0] = a.stride[1] = 2;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    fm_nid pp = NODE(&t, FM_OP_AVGPOOL, "avgpad", &a, ACT(&t, "x2", 1, 1, 5, 5));
    EXPECT_SHAPE(&t, out_of(&t, pp), 1, 1, 3, 3);
    c = COST(&t, pp);
    EXPECT(c, FWD, 0, 9 * (9 - 1), 0, 9, 0, 0);

    /* adaptive 7 -> 3: windows [0,3) [2,5) [4,7) (start floor(i*7/3), end ceil((i+1)*7/3)),
     * 3 + 3 + 3 = 9 per axis, overlapping; 81 window elements per (n, c) */
    a = attrs();
    a.out_size[0] = a.out_size[1] = 3;
    fm_nid ad = NODE(&t, FM_OP_ADAPTIVE_AVGPOOL, "adapt", &a, ACT(&t, "x3", 1, 2, 7, 7));
    EXPECT_SHAPE(&t, out_of(&t, ad), 1, 2, 3, 3);
    O = 1 * 2 * 3 * 3;
    uint64_t win = 1 * 2 * (3 + 3 + 3) * (3 + 3 + 3);
    c = COST(&t, ad);
    EXPECT(c, FWD, 0, win - O, 0, O, 0, 0);
    EXPECT(c, BD, 0, win, 0, O, 0, 0);
    /* uneven: 5 -> 3 rows: [0,2) [1,4) [3,5) = 2 + 3 + 2; 7 -> 3 columns: 9 */
    a = attrs();
    a.out_size[0] = 3;
    a.out_size[1] = 3;
    fm_nid au = NODE(&t, FM_OP_ADAPTIVE_AVGPOOL, "adapt2", &a, ACT(&t, "x4", 1, 1, 5, 7));
    c = COST(&t, au);
    win = (2 + 3 + 2) * (3 + 3 + 3);
    EXPECT(c, FWD, 0, win - 9, 0, 9, 0, 0);

    /* global: one window of H*W per (n, c) */
    fm_nid gp = NODE(&t, FM_OP_GLOBAL_AVGPOOL, "gap", NULL, ACT(&t, "x5", 2, 3, 4, 4));
    EXPECT_SHAPE(&t, out_of(&t, gp), 2, 3, 1, 1);
    const uint64_t E = 2 * 3 * 4 * 4;
    O = 2 * 3;
    c = COST(&t, gp);
    EXPECT(c, FWD, 0, E - O, 0, O, 0, 0);
    EXPECT(c, BD, 0, E, 0, O, 0, 0);
    tg_free(&t);
}

/* 1-D windows (index 1 of the attrs, kernel[0] = 1), pads up to kernel - 1, dilations, and
 * MaxPool's Indices as a second output (ONNX's form). */
static void test_pool_variants(void **state)
{
    (void)state;
    struct tg t = tg_new();
    /* 1-D max: X (2,3,10), k=3, s=2, pads 1/1: Lo = floor((10 + 2 - 3)/2) + 1 = 5 */
    struct fm_attrs a = attrs();
    a.kernel[1] = 3;
    a.stride[1] = 2;
    a.pad[1] = a.pad[3] = 1;
    fm_nid m1 = NODE(&t, FM_OP_MAXPOOL, "max1d", &a, ACT(&t, "x", 2, 3, 10));
    EXPECT_SHAPE(&t, out_of(&t, m1), 2, 3, 5);
    uint64_t O = 2 * 3 * 5;
    struct fm_node_cost c = COST(&t, m1);
    EXPECT(c, FWD, 0, 0, 0, 0, O * (3 - 1), 0);
    EXPECT(c, BD, 0, O, 0, 0, 0, 0);
    assert_int_equal(c.saved_bytes, O * 8);
    /* 1-D average: X (1,3,32), k=2: Lo = 31; k-1 adds + 1 div per output */
    a = attrs();
    a.kernel[1] = 2;
    fm_nid a1 = NODE(&t, FM_OP_AVGPOOL, "avg1d", &a, ACT(&t, "x1", 1, 3, 32));
    EXPECT_SHAPE(&t, out_of(&t, a1), 1, 3, 31);
    O = 1 * 3 * 31;
    c = COST(&t, a1);
    EXPECT(c, FWD, 0, O * (2 - 1), 0, O, 0, 0);
    EXPECT(c, BD, 0, O * 2, 0, O, 0, 0);
    /* pads of 2 with k=3 (more than half the kernel, as ONNX allows): 28 + 4 - 3 + 1 = 30 */
    a = attrs();
    a.kernel[0] = a.kernel[1] = 3;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 2;
    fm_nid ap = NODE(&t, FM_OP_AVGPOOL, "avgpad2", &a, ACT(&t, "x2", 1, 3, 28, 28));
    EXPECT_SHAPE(&t, out_of(&t, ap), 1, 3, 30, 30);
    O = 1 * 3 * 30 * 30;
    c = COST(&t, ap);
    EXPECT(c, FWD, 0, O * (9 - 1), 0, O, 0, 0);
    /* a pad as large as the kernel would make windows of padding alone: refused */
    a = attrs();
    a.kernel[0] = a.kernel[1] = 2;
    a.pad[0] = 2;
    fm_tid xb = ACT(&t, "xb", 1, 1, 6, 6);
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_MAXPOOL, "padbig", &a, &xb, 1, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    assert_non_null(strstr(fm_ctx_error(t.ctx), "smaller than the kernel"));
    /* dilated max: X (1,1,4,4), k=2, dilation 2: span 3, Ho = 4 - 3 + 1 = 2; k-1 = 3 compares
     * per output (the dilation spreads the window, it does not enlarge it) */
    a = attrs();
    a.kernel[0] = a.kernel[1] = 2;
    a.dilation[0] = a.dilation[1] = 2;
    fm_nid md = NODE(&t, FM_OP_MAXPOOL, "maxdil", &a, ACT(&t, "x3", 1, 1, 4, 4));
    EXPECT_SHAPE(&t, out_of(&t, md), 1, 1, 2, 2);
    c = COST(&t, md);
    EXPECT(c, FWD, 0, 0, 0, 0, 4 * 3, 0);
    tg_free(&t);

    /* the Indices output: X (1,1,5,5), k=5, pads 2: Y and I (1,1,5,5), I int64. The forward
     * writes Y (25 * 4 B) and I (25 * 8 B); the backward reads dY and I, writes dX; no private
     * saved bytes (I is kept as a tensor instead) */
    t = tg_new();
    a = attrs();
    a.kernel[0] = a.kernel[1] = 5;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 2;
    fm_tid xi = ACT(&t, "x4", 1, 1, 5, 5);
    const char *names[2] = {"y", "idx"};
    fm_tid outs[2];
    FM_ASSERT_OK(t.ctx, fm_graph_add_node(t.g, FM_OP_MAXPOOL, "argmax", &a, &xi, 1, names, 2,
                                          outs));
    fm_nid mi = (fm_nid)fm_graph_node_count(t.g) - 1;
    EXPECT_SHAPE(&t, outs[0], 1, 1, 5, 5);
    EXPECT_SHAPE(&t, outs[1], 1, 1, 5, 5);
    assert_int_equal(fm_graph_tensor(t.g, outs[1])->dtype, FM_DTYPE_INT64);
    c = COST(&t, mi);
    EXPECT(c, FWD, 0, 0, 0, 0, 25 * (25 - 1), 0);
    EXPECT_BYTES(c, FWD, 25 * 4, 25 * 4 + 25 * 8);
    EXPECT(c, BD, 0, 25, 0, 0, 0, 0);
    EXPECT_BYTES(c, BD, 25 * 4 + 25 * 8, 25 * 4);
    assert_int_equal(c.saved_bytes, 0);
    /* three outputs: no such pool */
    const char *three[3] = {"p", "q", "r"};
    assert_int_not_equal(fm_graph_add_node(t.g, FM_OP_MAXPOOL, "three", &a, &xi, 1, three, 3,
                                           NULL),
                         FM_OK);
    /* an average pool has no Indices */
    const char *two[2] = {"s", "u"};
    assert_int_not_equal(fm_graph_add_node(t.g, FM_OP_AVGPOOL, "avg2", &a, &xi, 1, two, 2, NULL),
                         FM_OK);
    tg_free(&t);
}

/* ============================================================================================
 * Elementwise arithmetic with broadcasting (src/ops/eltwise.c)
 * ========================================================================================= */

static void test_eltwise_broadcast(void **state)
{
    (void)state;
    const uint64_t E = 2 * 3 * 4, own_b = 3, red = E - own_b;   /* B (3,1) sums 24 -> 3 */
    const enum fm_op ops[] = {FM_OP_ADD, FM_OP_SUB, FM_OP_MUL, FM_OP_DIV};
    /* fwd; then bwd_data of A (2,3,4) and B (3,1), both activations */
    const struct prims fwd[] = {
        PRIMS(0, E, 0, 0, 0, 0), PRIMS(0, E, 0, 0, 0, 0), PRIMS(0, 0, E, 0, 0, 0),
        PRIMS(0, 0, 0, E, 0, 0)};
    const struct prims bwd[] = {
        /* add: dA = dy, dB = sum dy */
        PRIMS(0, red, 0, 0, 0, 0),
        /* sub: dB = -sum dy: E mul for the sign flip */
        PRIMS(0, red, E, 0, 0, 0),
        /* mul: dA = dy*B (E mul), dB = sum dy*A (E mul + red add) */
        PRIMS(0, red, 2 * E, 0, 0, 0),
        /* div: dA = dy/B (E div), dB = -sum dy*y/B (E mul + E div + red add) */
        PRIMS(0, red, E, 2 * E, 0, 0)};
    for (int i = 0; i < 4; i++) {
        struct tg t = tg_new();
        fm_nid n = NODE(&t, ops[i], "op", NULL, ACT(&t, "a", 2, 3, 4), ACT(&t, "b", 3, 1));
        EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 4);
        struct fm_node_cost c = COST(&t, n);
        print_message("  %s\n", fm_op_name(ops[i]));
        expect_work_(&c.phase[FWD], "fwd", fwd[i], __FILE__, __LINE__);
        expect_work_(&c.phase[BD], "bwd_data", bwd[i], __FILE__, __LINE__);
        EXPECT_NONE(c, BW);
        tg_free(&t);
    }
    /* Add bytes: A (96 B) + B (12 B) read, Y (96 B) written; backward reads dY and writes dA
     * and dB in their own shapes */
    struct tg t = tg_new();
    fm_nid n = NODE(&t, FM_OP_ADD, "add", NULL, ACT(&t, "a", 2, 3, 4), ACT(&t, "b", 3, 1));
    struct fm_node_cost c = COST(&t, n);
    EXPECT_BYTES(c, FWD, E * 4 + own_b * 4, E * 4);
    EXPECT_BYTES(c, BD, E * 4, E * 4 + own_b * 4);
    tg_free(&t);
    /* a parameter operand (a bias): its reduction is a weight gradient */
    t = tg_new();
    n = NODE(&t, FM_OP_ADD, "bias", NULL, ACT(&t, "a", 2, 3, 4), PARAM(&t, "b", 3, 1));
    c = COST(&t, n);
    EXPECT(c, BD, 0, 0, 0, 0, 0, 0);
    EXPECT(c, BW, 0, red, 0, 0, 0, 0);
    tg_free(&t);
}

/* ============================================================================================
 * Data movement: no arithmetic; views move no bytes, copies read and write once.
 * ========================================================================================= */

static void test_data_movement(void **state)
{
    (void)state;
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.axis = 1;
    fm_nid cat = NODE(&t, FM_OP_CONCAT, "cat", &a, ACT(&t, "a", 2, 3), ACT(&t, "b", 2, 5));
    EXPECT_SHAPE(&t, out_of(&t, cat), 2, 8);
    fm_nid fl = NODE(&t, FM_OP_FLATTEN, "flat", &a, ACT(&t, "c", 2, 3, 4));
    EXPECT_SHAPE(&t, out_of(&t, fl), 2, 12);
    struct fm_attrs r = attrs();
    r.ints[0] = 4;
    r.ints[1] = -1;
    r.nints = 2;
    fm_nid rs = NODE(&t, FM_OP_RESHAPE, "reshape", &r, ACT(&t, "d", 2, 3, 4));
    EXPECT_SHAPE(&t, out_of(&t, rs), 4, 6);
    struct fm_attrs p = attrs();
    p.ints[0] = 2;
    p.ints[1] = 0;
    p.ints[2] = 1;
    p.nints = 3;
    fm_nid tr = NODE(&t, FM_OP_TRANSPOSE, "perm", &p, ACT(&t, "e", 2, 3, 4));
    EXPECT_SHAPE(&t, out_of(&t, tr), 4, 2, 3);
    struct fm_attrs s = attrs();
    s.axis = 1;
    s.ints[0] = 3;
    s.ints[1] = 5;
    s.nints = 2;
    fm_tid sx = ACT(&t, "f", 2, 8), souts[2];
    FM_ASSERT_OK(t.ctx, fm_graph_add_node(t.g, FM_OP_SPLIT, "split", &s, &sx, 1, NULL, 2, souts));
    fm_nid sp = (fm_nid)fm_graph_node_count(t.g) - 1;
    EXPECT_SHAPE(&t, souts[0], 2, 3);
    EXPECT_SHAPE(&t, souts[1], 2, 5);

    struct fm_node_cost c;
    /* concat: read 2*3 + 2*5 floats, write 2*8; backward the inverse copy */
    c = COST(&t, cat);
    EXPECT(c, FWD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, FWD, (6 + 10) * 4, 16 * 4);
    EXPECT(c, BD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, BD, 16 * 4, (6 + 10) * 4);
    /* flatten, reshape: views */
    const fm_nid views[] = {fl, rs};
    for (int i = 0; i < 2; i++) {
        c = COST(&t, views[i]);
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
            EXPECT_NONE(c, ph);
    }
    /* transpose: a copy */
    c = COST(&t, tr);
    EXPECT(c, FWD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, FWD, 24 * 4, 24 * 4);
    EXPECT_BYTES(c, BD, 24 * 4, 24 * 4);
    /* split: read 16 floats, write 6 + 10; backward reads both dY, writes dX */
    c = COST(&t, sp);
    EXPECT(c, FWD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, FWD, 16 * 4, (6 + 10) * 4);
    EXPECT_BYTES(c, BD, (6 + 10) * 4, 16 * 4);
    tg_free(&t);
}

/* ============================================================================================
 * Dropout, embedding, attention, loss
 * ========================================================================================= */

static void test_dropout(void **state)
{
    (void)state;
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.ratio = 0.5;
    fm_nid n = NODE(&t, FM_OP_DROPOUT, "drop", &a, ACT(&t, "x", 4, 5));
    const uint64_t E = 20;
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, E, 0, E, 0);    /* keep-mask compare, scaled select */
    EXPECT_BYTES(c, FWD, E * 4, E * 4 + E);   /* X read; Y and the 1-byte mask written */
    EXPECT(c, BD, 0, 0, E, 0, 0, 0);     /* dy * mask */
    EXPECT_BYTES(c, BD, E * 4 + E, E * 4);
    assert_int_equal(c.saved_bytes, E);
    /* inference: the identity, costing nothing */
    c = cost_mode(&t, n, FM_MODE_INFER);
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
        EXPECT_NONE(c, ph);
    tg_free(&t);
}

/* ============================================================================================
 * Secondary outputs (ONNX's optional ones): the bytes they are written with, no extra
 * arithmetic (the statistics and the mask are computed anyway).
 * ========================================================================================= */

/* Adds a node with n_out outputs named "<name>:<i>"; returns the node's id. */
static fm_nid node_outs(struct tg *t, enum fm_op op, const char *name, const struct fm_attrs *a,
                        const fm_tid *in, int n_in, int n_out)
{
    FM_ASSERT_OK(t->ctx, fm_graph_add_node(t->g, op, name, a, in, n_in, NULL, n_out, NULL));
    return (fm_nid)fm_graph_node_count(t->g) - 1;
}

static void test_secondary_outputs(void **state)
{
    (void)state;
    /* LayerNorm over the last dim of [2,3,8]: E = 48, G = 6 rows; Y, Mean, InvStdDev */
    const uint64_t E = 2 * 3 * 8, G = 2 * 3;
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.axis = -1;
    fm_tid x = ACT(&t, "x", 2, 3, 8);
    fm_nid n = node_outs(&t, FM_OP_LAYERNORM, "ln", &a,
                         TIDS(x, PARAM(&t, "g", 8), PARAM(&t, "b", 8)), 3, 3);
    const struct fm_node *nd = fm_graph_node(t.g, n);
    EXPECT_SHAPE(&t, nd->out[1], 2, 3, 1);
    EXPECT_SHAPE(&t, nd->out[2], 2, 3, 1);
    assert_int_equal(fm_graph_tensor(t.g, nd->out[1])->dtype, FM_DTYPE_FP32);
    struct fm_node_cost c = COST(&t, n);
    /* the same arithmetic as with Y alone (test_layernorm) */
    EXPECT(c, FWD, 0, 3 * E + G + E, E + E + E, 2 * G, 0, G);
    /* read X, gamma, beta; write Y, and Mean and InvStdDev (G fp32 each): the statistics
     * training keeps are these, written once: the same bytes as Y alone + 2*4*G saved */
    EXPECT_BYTES(c, FWD, E * 4 + 8 * 4 + 8 * 4, E * 4 + G * 4 + G * 4);
    assert_int_equal(c.saved_bytes, 2 * 4 * G);
    /* inference: Y, Mean and InvStdDev written; nothing kept */
    c = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(c, FWD, 0, 3 * E + G + E, E + E + E, 2 * G, 0, G);
    EXPECT_BYTES(c, FWD, E * 4 + 8 * 4 + 8 * 4, E * 4 + 2 * G * 4);
    tg_free(&t);

    /* Mean omitted (ints[0] bit 1), InvStdDev in fp16 (stash type, ints[1]), axis 1 of
     * [2,3,8]: G = 2 groups, statistics of shape [2,1,1] */
    t = tg_new();
    a = attrs();
    a.axis = 1;
    a.ints[0] = 1 << 1;
    a.ints[1] = FM_DTYPE_FP16;
    a.nints = 2;
    x = ACT(&t, "x", 2, 3, 8);
    n = node_outs(&t, FM_OP_LAYERNORM, "ln", &a, TIDS(x), 1, 3);
    nd = fm_graph_node(t.g, n);
    EXPECT_SHAPE(&t, nd->out[2], 2, 1, 1);
    assert_int_equal(fm_graph_tensor(t.g, nd->out[2])->dtype, FM_DTYPE_FP16);
    c = COST(&t, n);
    /* training: Y, InvStdDev (2 x 2 bytes), and the mean kept (2 x 4 bytes, fp32) */
    EXPECT_BYTES(c, FWD, E * 4, E * 4 + 2 * 2 + 2 * 4);
    c = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT_BYTES(c, FWD, E * 4, E * 4 + 2 * 2);   /* Y and InvStdDev only */
    tg_free(&t);

    /* Dropout with its mask output: bool, X's shape; E = 20 */
    const uint64_t D = 4 * 5;
    t = tg_new();
    a = attrs();
    a.ratio = 0.5;
    n = node_outs(&t, FM_OP_DROPOUT, "drop", &a, TIDS(ACT(&t, "x", 4, 5)), 1, 2);
    nd = fm_graph_node(t.g, n);
    EXPECT_SHAPE(&t, nd->out[1], 4, 5);
    assert_int_equal(fm_graph_tensor(t.g, nd->out[1])->dtype, FM_DTYPE_BOOL);
    c = COST(&t, n);
    /* training: as without the output (test_dropout): the mask is written anyway */
    EXPECT(c, FWD, 0, 0, D, 0, D, 0);
    EXPECT_BYTES(c, FWD, D * 4, D * 4 + D);
    EXPECT(c, BD, 0, 0, D, 0, 0, 0);
    EXPECT_BYTES(c, BD, D * 4 + D, D * 4);   /* dY and the mask read (no dMask), dX written */
    /* inference: Y is X (nothing), the all-true mask is written: D bytes, no operations */
    c = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(c, FWD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, FWD, 0, D);
    tg_free(&t);

    /* BatchNorm of [2,3,4,4] with running_mean, running_var (opset 14+): [C] each */
    const uint64_t B = 2 * 3 * 4 * 4, C = 3;
    t = tg_new();
    x = ACT(&t, "x", 2, 3, 4, 4);
    fm_tid bin[5] = {x, PARAM(&t, "gamma", 3), PARAM(&t, "beta", 3), BUFFER(&t, "mean", 3),
                     BUFFER(&t, "var", 3)};
    n = node_outs(&t, FM_OP_BATCHNORM, "bn", NULL, bin, 5, 3);
    nd = fm_graph_node(t.g, n);
    EXPECT_SHAPE(&t, nd->out[1], 3);
    EXPECT_SHAPE(&t, nd->out[2], 3);
    c = COST(&t, n);
    /* training: the running statistics written back (2C fp32) are these outputs, and the
     * batch mean and istd kept (2C fp32): the same bytes as Y alone */
    EXPECT(c, FWD, 0, 3 * B + C + B + 2 * C, B + C + B + 5 * C, 2 * C, 0, C);
    EXPECT_BYTES(c, FWD, B * 4 + 4 * C * 4, B * 4 + 2 * C * 4 + 2 * C * 4);
    /* inference: Y and the two outputs (C fp32 each) */
    c = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(c, FWD, 0, 2 * C + B, 2 * C + B, 0, 0, C);
    EXPECT_BYTES(c, FWD, B * 4 + 4 * C * 4, B * 4 + 2 * C * 4);
    tg_free(&t);

    /* the older five outputs (mean, var, saved_mean, saved_var), nothing needing a gradient
     * (an input, frozen affine): training writes the running statistics (2C) and the saved
     * ones as outputs (2C), fp32 */
    t = tg_new();
    fm_tid bin5[5] = {INPUT(&t, "x", 2, 3, 4, 4), PARAM(&t, "gamma", 3), PARAM(&t, "beta", 3),
                      BUFFER(&t, "mean", 3), BUFFER(&t, "var", 3)};
    fm_graph_set_trainable(t.g, bin5[1], false);
    fm_graph_set_trainable(t.g, bin5[2], false);
    n = node_outs(&t, FM_OP_BATCHNORM, "bn", NULL, bin5, 5, 5);
    EXPECT_SHAPE(&t, fm_graph_node(t.g, n)->out[4], 3);
    c = COST(&t, n);
    EXPECT_BYTES(c, FWD, B * 4 + 4 * C * 4, B * 4 + 2 * C * 4 + 2 * C * 4);
    assert_int_equal(c.saved_bytes, 0);
    tg_free(&t);

    /* more outputs than the op has are refused */
    t = tg_new();
    fm_tid xin = INPUT(&t, "x", 4, 5);
    a = attrs();
    a.ratio = 0.5;
    assert_int_not_equal(fm_graph_add_node(t.g, FM_OP_DROPOUT, "d3", &a, &xin, 1, NULL, 3, NULL),
                         FM_OK);
    assert_int_not_equal(fm_graph_add_node(t.g, FM_OP_LAYERNORM, "l4", NULL, &xin, 1, NULL, 4,
                                           NULL), FM_OK);
    tg_free(&t);
}

static void test_embedding(void **state)
{
    (void)state;
    struct tg t = tg_new();
    fm_nid n = NODE(&t, FM_OP_EMBEDDING, "emb", NULL, LABELS(&t, "ids", 2, 3),
                    PARAM(&t, "table", 10, 4));
    EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 4);
    const uint64_t E = 2 * 3 * 4;
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 0, 0);              /* a gather */
    EXPECT_BYTES(c, FWD, 6 * 8 + E * 4, E * 4);    /* ids and the gathered rows only */
    EXPECT_NONE(c, BD);                            /* integer ids have no gradient */
    EXPECT(c, BW, 0, E, 0, 0, 0, 0);               /* scatter-add dY into the rows */
    /* reads dY and the ids; writes the dense gradient of the whole table, 10 x 4 fp32 (PyTorch's
     * embedding_dense_backward zero-fills it), not only the 6 gathered rows */
    EXPECT_BYTES(c, BW, E * 4 + 6 * 8, 10 * 4 * 4);
    assert_int_equal(c.params, 10 * 4);
    tg_free(&t);
}

static void test_attention(void **state)
{
    (void)state;
    for (int causal = 0; causal < 2; causal++) {
        struct tg t = tg_new();
        struct fm_attrs a = attrs();
        a.flags = causal ? FM_ATTR_CAUSAL : 0;
        /* Q (B,H,Sq,D) = (1,2,3,4), K (1,2,5,4), V (1,2,5,6) */
        fm_nid n = NODE(&t, FM_OP_ATTENTION, "sdpa", &a, ACT(&t, "q", 1, 2, 3, 4),
                        ACT(&t, "k", 1, 2, 5, 4), ACT(&t, "v", 1, 2, 5, 6));
        EXPECT_SHAPE(&t, out_of(&t, n), 1, 2, 3, 6);
        const uint64_t rows = 1 * 2 * 3, P = rows * 5;   /* score elements B*H*Sq*Sk = 30 */
        const uint64_t qk = P * 4, av = P * 6;           /* Q K^T: P*D, A V: P*Dv */
        struct fm_node_cost c = COST(&t, n);
        /* S = QK^T, scale (P mul), [mask (P cmp)], softmax (P-rows cmp, 2P-rows add, P exp,
         * P div), O = AV */
        EXPECT(c, FWD, qk + av, 2 * P - rows, P, P, (P - rows) + (causal ? P : 0), P);
        /* dV = A^T dO, dA = dO V^T (P*Dv each); dS = A*(dA - rowsum(dA*A)) (2P mul,
         * 2P-rows add) and the scale (P mul); dQ = dS K, dK = dS^T Q (P*D each) */
        EXPECT(c, BD, 2 * av + 2 * qk, 2 * P - rows, 3 * P, 0, 0, 0);
        assert_int_equal(c.phase[BD].prim[FM_PRIM_MAC], 2 * c.phase[FWD].prim[FM_PRIM_MAC]);
        EXPECT_NONE(c, BW);
        assert_int_equal(c.saved_bytes, P * 4);   /* the attention matrix A */
        /* Q, K, V read; O and A (kept for the backward) written */
        EXPECT_BYTES(c, FWD, (1 * 2 * 3 * 4 + 1 * 2 * 5 * 4 + 1 * 2 * 5 * 6) * 4,
                     1 * 2 * 3 * 6 * 4 + P * 4);
        tg_free(&t);
    }
}

/* The optional fourth input of attention: an additive float mask (a constant) costs one add per
 * score; a boolean one a select; a learned bias (a parameter) also sums dS to its own shape. */
static void test_attention_mask(void **state)
{
    (void)state;
    const uint64_t rows = 1 * 2 * 3, P = rows * 5;   /* B*H*Sq*Sk = 1*2*3*5 */
    for (int kind = 0; kind < 3; kind++) {
        struct tg t = tg_new();
        fm_tid mask = kind == 0   ? tensor(&t, "mask", FM_ROLE_CONST, FM_DTYPE_FP32, SHAPE(3, 5))
                      : kind == 1 ? tensor(&t, "mask", FM_ROLE_CONST, FM_DTYPE_BOOL, SHAPE(3, 5))
                                  : PARAM(&t, "bias", 3, 5);
        fm_nid n = NODE(&t, FM_OP_ATTENTION, "sdpa", NULL, ACT(&t, "q", 1, 2, 3, 4),
                        ACT(&t, "k", 1, 2, 5, 4), ACT(&t, "v", 1, 2, 5, 6), mask);
        struct fm_node_cost c = COST(&t, n);
        /* as test_attention without the causal compare, plus the mask: P adds or P selects */
        uint64_t add = 2 * P - rows + (kind != 1 ? P : 0), cmp = (P - rows) + (kind == 1 ? P : 0);
        EXPECT(c, FWD, P * 4 + P * 6, add, P, P, cmp, P);
        if (kind == 2)   /* dBias = dS (30 elements) summed over the heads to (3,5): 30 - 15 adds */
            EXPECT(c, BW, 0, P - 3 * 5, 0, 0, 0, 0);
        else
            EXPECT_NONE(c, BW);
        tg_free(&t);
    }
    /* a mask that does not broadcast to (B,H,Sq,Sk) is a shape error naming the layer */
    struct tg t = tg_new();
    struct fm_ctx *ctx = t.ctx;
    fm_tid in[4] = {ACT(&t, "q", 1, 2, 3, 4), ACT(&t, "k", 1, 2, 5, 4), ACT(&t, "v", 1, 2, 5, 6),
                    tensor(&t, "mask", FM_ROLE_CONST, FM_DTYPE_FP32, SHAPE(4, 5))};
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_ATTENTION, "sdpa", NULL, in, 4, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    assert_non_null(strstr(fm_ctx_error(ctx), "sdpa"));
    tg_free(&t);
}

/* ============================================================================================
 * Recurrent layers (src/ops/rnn.c): S row-steps (the sum of sequence_lens when known, else
 * N*T), D directions, G gates; MACs per row-step G*H*(I+H) forward, G*H*H through time plus
 * G*H*I for dX, G*H*(I+H) for dW and dR; the elementwise counts per hidden unit and row-step
 * (x S*D*H) are the table in the file's comment and docs/counting.md. */

static fm_nid rnn_node(struct tg *t, enum fm_op op, const struct fm_attrs *a, const fm_tid *in,
                       int n_in, int n_out)
{
    const char *names[3] = {"y", "y_h", "y_c"};
    FM_ASSERT_OK(t->ctx, fm_graph_add_node(t->g, op, "rnn", a, in, n_in, names, n_out, NULL));
    return (fm_nid)fm_graph_node_count(t->g) - 1;
}

/* LSTM, T = 3, N = 2, I = 4, H = 5, one direction, B and peepholes P, default activations;
 * X needs a gradient. S = 6, S*H = 30. */
static void test_rnn_lstm(void **state)
{
    (void)state;
    struct tg t = tg_new();
    fm_tid in[8] = {ACT(&t, "x", 3, 2, 4), PARAM(&t, "w", 1, 20, 4), PARAM(&t, "r", 1, 20, 5),
                    PARAM(&t, "b", 1, 40), FM_NONE, FM_NONE, FM_NONE, PARAM(&t, "p", 1, 15)};
    struct fm_attrs a = attrs();
    fm_nid n = rnn_node(&t, FM_OP_LSTM, &a, in, 8, 3);
    const struct fm_node *nd = fm_graph_node(t.g, n);
    EXPECT_SHAPE(&t, nd->out[0], 3, 1, 2, 5);   /* Y [T, D, N, H] */
    EXPECT_SHAPE(&t, nd->out[1], 1, 2, 5);      /* Y_h [D, N, H] */
    EXPECT_SHAPE(&t, nd->out[2], 1, 2, 5);      /* Y_c */
    struct fm_node_cost c = COST(&t, n);
    /* mac 6*20*(4+5) = 1080; per unit: add 4 sums + 8 bias + 3 peephole + 1 cell + 3 sigmoid
     * = 19 (x30 = 570); mul 3 cell/output + 3 peephole = 6 (180); div 3 sigmoid (90);
     * special 3 sigmoid + 2 tanh = 5 (150) */
    EXPECT(c, FWD, 1080, 570, 180, 90, 0, 150);
    /* mac dH 6*20*5 = 600 + dX 6*20*4 = 480; per unit add 1 + 1 + 1 tanh' + 3 sigmoid' +
     * 1 tanh' + 3 peephole = 10 (300), mul 6 + 2 tanh' + 6 sigmoid' + 2 tanh' + 3 peephole = 19
     * (570), special 1 (tanh(C_t) recomputed: 30) */
    EXPECT(c, BD, 1080, 300, 570, 0, 0, 30);
    /* dW 480 + dR 600; dB 6*20 = 120 add; dP 3 mul + 3 add per unit (90 each) */
    EXPECT(c, BW, 1080, 120 + 90, 90, 0, 0, 0);
    /* kept: 4 gates + C_t per unit (5 x 30 x 4 bytes); H_t is Y */
    assert_int_equal(c.saved_bytes, 5 * 30 * 4);
    /* read X 24 + W 80 + R 100 + B 40 + P 15 elements; written Y 30 + Y_h 10 + Y_c 10 and the
     * kept 150 elements */
    EXPECT_BYTES(c, FWD, (24 + 80 + 100 + 40 + 15) * 4, (30 + 10 + 10) * 4 + 600);
    c = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(c, FWD, 1080, 570, 180, 90, 0, 150);
    EXPECT_NONE(c, BD);
    EXPECT_NONE(c, BW);
    tg_free(&t);

    /* the same cell with W and R stored transposed (ONNX Runtime's DynamicQuantizeLSTM):
     * W [1, 4, 20], R [1, 5, 20]; the same counts */
    t = tg_new();
    fm_tid tin[8] = {ACT(&t, "x", 3, 2, 4), PARAM(&t, "w", 1, 4, 20), PARAM(&t, "r", 1, 5, 20),
                     PARAM(&t, "b", 1, 40), FM_NONE, FM_NONE, FM_NONE, PARAM(&t, "p", 1, 15)};
    a.ints[4] = FM_RNN_W_TRANSPOSED, a.nints = 5;
    n = rnn_node(&t, FM_OP_LSTM, &a, tin, 8, 1);
    EXPECT_SHAPE(&t, fm_graph_node(t.g, n)->out[0], 3, 1, 2, 5);
    c = COST(&t, n);
    EXPECT(c, FWD, 1080, 570, 180, 90, 0, 150);
    EXPECT(c, BD, 1080, 300, 570, 0, 0, 30);
    EXPECT(c, BW, 1080, 120 + 90, 90, 0, 0, 0);
    tg_free(&t);
}

/* GRU, bidirectional, layout 1 (batch first), clip, sequence_lens known {3, 1}: S = 4, not
 * N*T = 6; both linear_before_reset forms. X is the network input: no dX. T = 3, N = 2, I = 4,
 * H = 5, D = 2: S*D = 8 row-steps, S*D*H = 40. */
static void test_rnn_gru(void **state)
{
    (void)state;
    for (int lbr = 0; lbr < 2; lbr++) {
        struct tg t = tg_new();
        fm_tid sl = tensor(&t, "lens", FM_ROLE_CONST, FM_DTYPE_INT32, SHAPE(2));
        FM_ASSERT_OK(t.ctx, fm_graph_set_ivalue(t.g, sl, DIMS(3, 1), 2));
        fm_tid in[6] = {INPUT(&t, "x", 2, 3, 4), PARAM(&t, "w", 2, 15, 4),
                        PARAM(&t, "r", 2, 15, 5), PARAM(&t, "b", 2, 30), sl,
                        INPUT(&t, "h0", 2, 2, 5)};
        struct fm_attrs a = attrs();
        int64_t ints[] = {5, 2, 1, lbr, FM_RNN_CLIP};   /* hidden, bidirectional, layout 1 */
        memcpy(a.ints, ints, sizeof(ints));
        a.nints = 5;
        fm_nid n = rnn_node(&t, FM_OP_GRU, &a, in, 6, 2);
        const struct fm_node *nd = fm_graph_node(t.g, n);
        EXPECT_SHAPE(&t, nd->out[0], 2, 3, 2, 5);   /* Y [N, T, D, H] */
        EXPECT_SHAPE(&t, nd->out[1], 2, 2, 5);      /* Y_h [N, D, H] */
        struct fm_node_cost c = COST(&t, n);
        /* mac 8*15*(4+5) = 1080; per unit add 3 sums + 6 bias + 2 (1-z, the blend) + 2
         * sigmoid = 13 (520), mul 1 r* + 2 blend = 3 (120), div 2 (80), cmp 6 clip (240),
         * special 2 sigmoid + 1 tanh = 3 (120): the same for both forms */
        EXPECT(c, FWD, 1080, 520, 120, 80, 240, 120);
        /* mac through time 8*15*5 = 600; per unit add 1 + 2 + 2 sigmoid' + 1 tanh' and
         * lbr 0: 2 | lbr 1: 1 (320 | 280), mul 3 + 2 + 4 sigmoid' + 2 tanh' = 11 (440), clip
         * mask 6 cmp (240) */
        EXPECT(c, BD, 600, lbr ? 280 : 320, 440, 0, 240, 0);
        /* dW + dR 1080; dB 8*15 = 120 add, lbr 1 also dRb_h 8*5 = 40 */
        EXPECT(c, BW, 1080, lbr ? 160 : 120, 0, 0, 0, 0);
        tg_free(&t);
    }
}

/* RNN, bidirectional with a different activation per direction (LeakyRelu forward, Softsign
 * reverse), no B, sequence_lens given but unknown: full length, S = N*T = 6. T = 2, N = 3,
 * I = 4, H = 2, D = 2: S*H = 12 per direction. X needs a gradient: the directions' dX sum. */
static void test_rnn_activations(void **state)
{
    (void)state;
    struct tg t = tg_new();
    fm_tid in[5] = {ACT(&t, "x", 2, 3, 4), PARAM(&t, "w", 2, 2, 4), PARAM(&t, "r", 2, 2, 2),
                    FM_NONE, tensor(&t, "lens", FM_ROLE_INPUT, FM_DTYPE_INT32, SHAPE(3))};
    struct fm_attrs a = attrs();
    int64_t ints[] = {2, 2, 0, 0, 0, FM_RNN_ACT_LEAKY_RELU, FM_RNN_ACT_SOFTSIGN};
    memcpy(a.ints, ints, sizeof(ints));
    a.nints = 7;
    fm_nid n = rnn_node(&t, FM_OP_RNN, &a, in, 5, 1);
    EXPECT_SHAPE(&t, fm_graph_node(t.g, n)->out[0], 2, 2, 3, 2);
    struct fm_node_cost c = COST(&t, n);
    /* mac 6*2*2*(4+2) = 144; per unit: forward 1 sum + LeakyRelu (1 mul, 1 cmp) | 1 sum +
     * Softsign (1 add, 1 div, 1 cmp): add 12 + 24, mul 12, div 12, cmp 24 */
    EXPECT(c, FWD, 144, 36, 12, 12, 24, 0);
    /* mac dH 6*2*2*2 = 48 + dX 6*2*2*4 = 96; dX of the two directions summed 6*4 = 24 add;
     * per unit 1 add + LeakyRelu' (1 mul, 1 cmp) | 1 add + Softsign' (1 add, 1 mul, 1 div,
     * 1 cmp): add 12 + 24 + 24, mul 24, div 12, cmp 24 */
    EXPECT(c, BD, 144, 60, 24, 12, 24, 0);
    EXPECT(c, BW, 144, 0, 0, 0, 0, 0);
    /* kept: H_t is Y; the RNN's gate is H_t */
    assert_int_equal(c.saved_bytes, 0);
    tg_free(&t);
}

/* Shapes the cells cannot take are errors naming the layer. */
static void test_rnn_errors(void **state)
{
    (void)state;
    struct {
        int64_t w1, lens;   /* W's second dim; a sequence length */
        int64_t dir;
    } bad[] = {
        {15, 3, 0},   /* LSTM with GRU's 3H rows */
        {20, 4, 0},   /* a length beyond T = 3 */
        {20, 3, 2},   /* bidirectional with one direction of weights */
    };
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        struct tg t = tg_new();
        fm_tid sl = tensor(&t, "lens", FM_ROLE_CONST, FM_DTYPE_INT32, SHAPE(2));
        FM_ASSERT_OK(t.ctx, fm_graph_set_ivalue(t.g, sl, DIMS(1, bad[k].lens), 2));
        fm_tid in[5] = {INPUT(&t, "x", 3, 2, 4), PARAM(&t, "w", 1, bad[k].w1, 4),
                        PARAM(&t, "r", 1, 20, 5), FM_NONE, sl};
        struct fm_attrs a = attrs();
        a.ints[0] = 5, a.ints[1] = bad[k].dir, a.nints = 2;
        const char *names[1] = {"y"};
        assert_int_equal(fm_graph_add_node(t.g, FM_OP_LSTM, "my_lstm", &a, in, 5, names, 1, NULL),
                         FM_ERR_SHAPE);
        assert_non_null(strstr(fm_ctx_error(t.ctx), "my_lstm"));
        tg_free(&t);
    }
}

static void test_cross_entropy(void **state)
{
    (void)state;
    struct tg t = tg_new();
    fm_nid n = NODE(&t, FM_OP_CROSS_ENTROPY, "loss", NULL, ACT(&t, "logits", 4, 10),
                    LABELS(&t, "labels", 4));
    assert_int_equal(shape_at(&t, out_of(&t, n))->rank, 0);
    const uint64_t E = 4 * 10, N = 4;
    struct fm_node_cost c = COST(&t, n);
    /* max (E-N cmp); x-max (E add); exp (E special); sum (E-N add); log (N special);
     * lse = max + log (N add); lse - x_label (N add); mean (N-1 add, 1 div) */
    EXPECT(c, FWD, 0, E + (E - N) + N + N + (N - 1), 0, 1, E - N, E + N);
    /* softmax = exp(x - lse) (E add, E special); minus one-hot (N add); / N (E div) */
    EXPECT(c, BD, 0, E + N, 0, E, 0, E);
    EXPECT_NONE(c, BW);
    tg_free(&t);
}

/* ============================================================================================
 * The driver: optimizer, memory, what must not be counted, overflow, batch scaling
 * ========================================================================================= */

/* x (3,5) -> Linear W (4,5), B (4): 24 parameter elements, 96 bytes */
static struct tg linear_graph(void)
{
    struct tg t = tg_new();
    NODE(&t, FM_OP_LINEAR, "fc", NULL, INPUT(&t, "x", 3, 5), PARAM(&t, "w", 4, 5),
         PARAM(&t, "b", 4));
    return t;
}

static void test_optimizer_sgd_adam(void **state)
{
    (void)state;
    const uint64_t P = 4 * 5 + 4, PB = P * 4;
    struct tg t = linear_graph();
    /* SGD with momentum per element: v = mu*v + g (mul, add); w = w - lr*v (mul, add);
     * reads w, g, v; writes w, v */
    struct fm_counts *c = count_graph(&t, FM_MODE_TRAIN, FM_OPTIM_SGD);
    EXPECT_TOTAL(c, OPT, 0, 2 * P, 2 * P, 0, 0, 0);
    EXPECT_TOTAL_BYTES(c, OPT, 3 * PB, 2 * PB);
    assert_int_equal(c->params, P);
    assert_int_equal(c->trainable_params, P);
    assert_int_equal(c->param_bytes, PB);
    assert_int_equal(c->grad_bytes, PB);
    assert_int_equal(c->optimizer_state_bytes, PB);   /* momentum */
    fm_counts_free(c);
    /* Adam: m (2 mul, 1 add), v (3 mul, 1 add), bias corrections (2 div), update (1 sqrt,
     * 2 add, 1 mul, 1 div); reads w, g, m, v; writes w, m, v */
    c = count_graph(&t, FM_MODE_TRAIN, FM_OPTIM_ADAM);
    EXPECT_TOTAL(c, OPT, 0, 4 * P, 6 * P, 3 * P, 0, P);
    EXPECT_TOTAL_BYTES(c, OPT, 4 * PB, 3 * PB);
    assert_int_equal(c->optimizer_state_bytes, 2 * PB);
    fm_counts_free(c);
    /* no optimizer: gradients but no update */
    c = count_graph(&t, FM_MODE_TRAIN, FM_OPTIM_NONE);
    EXPECT_TOTAL(c, OPT, 0, 0, 0, 0, 0, 0);
    assert_int_equal(c->optimizer_state_bytes, 0);
    assert_int_equal(c->grad_bytes, PB);
    fm_counts_free(c);
    /* inference: no backward, no optimizer, no gradients */
    c = count_graph(&t, FM_MODE_INFER, FM_OPTIM_SGD);
    for (int ph = BD; ph < FM_PHASE_COUNT; ph++) {
        expect_work_(&c->total[ph], "phase", PRIMS(0, 0, 0, 0, 0, 0), __FILE__, __LINE__);
        expect_bytes_(&c->total[ph], "phase", 0, 0, __FILE__, __LINE__);
    }
    assert_int_equal(c->grad_bytes, 0);
    assert_int_equal(c->optimizer_state_bytes, 0);
    assert_int_equal(c->mode, FM_MODE_INFER);
    fm_counts_free(c);
    tg_free(&t);
}

static void test_frozen_and_shared(void **state)
{
    (void)state;
    /* x -> fc1 (frozen W1, B1) -> fc2 (W2 trainable): fc1 has no gradient at all, fc2 only its
     * weight gradient (its input comes from frozen weights and the network input) */
    struct tg t = tg_new();
    fm_tid w1 = PARAM(&t, "w1", 4, 5), b1 = PARAM(&t, "b1", 4);
    fm_nid f1 = NODE(&t, FM_OP_LINEAR, "fc1", NULL, INPUT(&t, "x", 3, 5), w1, b1);
    fm_nid f2 = NODE(&t, FM_OP_LINEAR, "fc2", NULL, out_of(&t, f1), PARAM(&t, "w2", 2, 4));
    fm_graph_set_trainable(t.g, w1, false);
    fm_graph_set_trainable(t.g, b1, false);
    struct fm_counts *c = count_graph(&t, FM_MODE_TRAIN, FM_OPTIM_SGD);
    EXPECT_NONE(c->nodes[f1], BD);
    EXPECT_NONE(c->nodes[f1], BW);
    EXPECT_NONE(c->nodes[f1], OPT);
    EXPECT_NONE(c->nodes[f2], BD);
    EXPECT(c->nodes[f2], BW, 3 * 4 * 2, 0, 0, 0, 0, 0);
    /* only W2's 8 elements are updated: 2 mul + 2 add each */
    EXPECT_TOTAL(c, OPT, 0, 2 * 8, 2 * 8, 0, 0, 0);
    assert_int_equal(c->params, 20 + 4 + 8);
    assert_int_equal(c->trainable_params, 8);
    assert_int_equal(c->grad_bytes, 8 * 4);
    fm_counts_free(c);
    tg_free(&t);

    /* one weight W (4,5) shared by two layers: 20 parameters, one update */
    t = tg_new();
    fm_tid w = PARAM(&t, "w", 4, 5);
    fm_nid a = NODE(&t, FM_OP_LINEAR, "fa", NULL, INPUT(&t, "x1", 3, 5), w);
    fm_nid b = NODE(&t, FM_OP_LINEAR, "fb", NULL, INPUT(&t, "x2", 3, 5), w);
    c = count_graph(&t, FM_MODE_TRAIN, FM_OPTIM_SGD);
    assert_int_equal(c->params, 20);
    assert_int_equal(c->nodes[a].params + c->nodes[b].params, 20);
    assert_int_equal(c->param_bytes, 20 * 4);
    EXPECT_TOTAL(c, OPT, 0, 2 * 20, 2 * 20, 0, 0, 0);
    /* both layers still compute their share of dW */
    EXPECT_TOTAL(c, BW, 2 * (3 * 5 * 4), 0, 0, 0, 0, 0);
    fm_counts_free(c);
    tg_free(&t);
}

static void test_activation_memory(void **state)
{
    (void)state;
    /* x (1,3,8,8) -> conv1 -> y1 -> relu -> y2 -> conv2 -> y3
     *                                    \-> conv3 -> y4;  y3 + y4 -> y5 -> maxpool 2x2 -> y6
     * Training keeps: y2 (relu keeps its output; conv2 and conv3 keep their input for dW):
     * once, 1*4*8*8*4 = 1024 B; the max pool's int64 indices, 1*4*4*4*8 = 512 B. x is the
     * input (counted apart), y1, y3, y4, y5 are kept by nobody (conv1 keeps x). */
    struct tg t = tg_new();
    struct fm_attrs pad = attrs();
    pad.pad[0] = pad.pad[1] = pad.pad[2] = pad.pad[3] = 1;
    fm_nid c1 = NODE(&t, FM_OP_CONV, "conv1", &pad, INPUT(&t, "x", 1, 3, 8, 8),
                     PARAM(&t, "w1", 4, 3, 3, 3));
    fm_nid r = NODE(&t, FM_OP_RELU, "relu", NULL, out_of(&t, c1));
    fm_nid c2 = NODE(&t, FM_OP_CONV, "conv2", &pad, out_of(&t, r), PARAM(&t, "w2", 4, 4, 3, 3));
    fm_nid c3 = NODE(&t, FM_OP_CONV, "conv3", &pad, out_of(&t, r), PARAM(&t, "w3", 4, 4, 3, 3));
    fm_nid ad = NODE(&t, FM_OP_ADD, "add", NULL, out_of(&t, c2), out_of(&t, c3));
    struct fm_attrs mp = attrs();
    mp.kernel[0] = mp.kernel[1] = 2;
    mp.stride[0] = mp.stride[1] = 2;
    NODE(&t, FM_OP_MAXPOOL, "pool", &mp, out_of(&t, ad));
    struct fm_counts *c = count_graph(&t, FM_MODE_TRAIN, FM_OPTIM_SGD);
    assert_int_equal(c->activation_bytes, 1 * 4 * 8 * 8 * 4 + 1 * 4 * 4 * 4 * 8);
    assert_int_equal(c->input_bytes, 1 * 3 * 8 * 8 * 4);
    fm_counts_free(c);
    /* inference: the peak of live activations, in order: y1 (1024); y1+y2 (2048), y1 freed;
     * y2+y3; y2+y3+y4 = 3072, y2 freed; y3+y4+y5 = 3072; ... */
    c = count_graph(&t, FM_MODE_INFER, FM_OPTIM_SGD);
    assert_int_equal(c->activation_bytes, 3 * 1024);
    fm_counts_free(c);
    tg_free(&t);

    /* a graph output nobody reads stays live: x -> conv_a -> ya (output);
     * x -> conv_b -> yb -> relu -> yc: ya + yb + yc = 3 * 1024 at the relu */
    t = tg_new();
    fm_tid x = INPUT(&t, "x", 1, 3, 8, 8);
    NODE(&t, FM_OP_CONV, "conv_a", &pad, x, PARAM(&t, "wa", 4, 3, 3, 3));
    fm_nid cb = NODE(&t, FM_OP_CONV, "conv_b", &pad, x, PARAM(&t, "wb", 4, 3, 3, 3));
    NODE(&t, FM_OP_RELU, "relu", NULL, out_of(&t, cb));
    c = count_graph(&t, FM_MODE_INFER, FM_OPTIM_SGD);
    assert_int_equal(c->activation_bytes, 3 * 1024);
    fm_counts_free(c);
    tg_free(&t);
}

static void test_overflow_names_layer(void **state)
{
    (void)state;
    /* X (2^30, 2^20) @ W (2^20, 2^20)^T: 2^70 MACs; every tensor fits */
    struct tg t = tg_new();
    fm_nid n = NODE(&t, FM_OP_LINEAR, "huge_fc", NULL, INPUT(&t, "x", 1LL << 30, 1LL << 20),
                    PARAM(&t, "w", 1LL << 20, 1LL << 20));
    FM_ASSERT_OK(t.ctx, fm_graph_finalize(t.g));
    struct fm_count_opts o;
    fm_count_opts_init(&o);
    struct fm_counts *c = NULL;
    assert_int_equal(fm_count(t.ctx, t.g, &o, &c), FM_ERR_OVERFLOW);
    assert_null(c);
    assert_non_null(strstr(fm_ctx_error(t.ctx), "huge_fc"));
    struct fm_node_cost nc;
    assert_int_equal(fm_node_cost(t.ctx, t.g, n, &o, &nc), FM_ERR_OVERFLOW);
    assert_non_null(strstr(fm_ctx_error(t.ctx), "huge_fc"));
    tg_free(&t);

    /* a conv: 2^44 outputs * 2^16 channels * 5*5 > 2^64 */
    t = tg_new();
    struct fm_attrs a = attrs();
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 2;
    NODE(&t, FM_OP_CONV, "huge_conv", &a, INPUT(&t, "x", 1, 1LL << 16, 1LL << 14, 1LL << 14),
         PARAM(&t, "w", 1LL << 16, 1LL << 16, 5, 5));
    FM_ASSERT_OK(t.ctx, fm_graph_finalize(t.g));
    assert_int_equal(fm_count(t.ctx, t.g, &o, &c), FM_ERR_OVERFLOW);
    assert_non_null(strstr(fm_ctx_error(t.ctx), "huge_conv"));
    tg_free(&t);
}

static void test_batch_scaling_resnet18(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    struct fm_counts *c1 = test_count_zoo(ctx, "resnet18", 1, FM_MODE_TRAIN, &g);
    struct fm_counts *c2 = test_count_zoo(ctx, "resnet18", 2, FM_MODE_TRAIN, NULL);
    /* torchvision's published figure: conv + linear MACs of resnet18 at 224x224 */
    uint64_t mm = 0;
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        enum fm_class k = fm_op_class(fm_graph_node(g, (fm_nid)i)->op);
        if (k == FM_CLASS_CONV || k == FM_CLASS_MATMUL)
            mm += c1->nodes[i].phase[FWD].prim[FM_PRIM_MAC];
    }
    assert_int_equal(mm, 1814073344ull);
    /* MACs are exactly linear in the batch, in every phase */
    for (int ph = FWD; ph <= BW; ph++)
        assert_int_equal(c2->total[ph].prim[FM_PRIM_MAC], 2 * c1->total[ph].prim[FM_PRIM_MAC]);
    /* per-channel terms (BatchNorm statistics, running stats) and the loss mean do not grow
     * with the batch: fewer than twice the FLOPs */
    assert_true(fm_work_flops(&c2->total[FWD]) < 2 * fm_work_flops(&c1->total[FWD]));
    /* the optimizer step does not depend on the batch at all */
    assert_memory_equal(&c2->total[OPT], &c1->total[OPT], sizeof(struct fm_work));
    assert_int_equal(c1->params, 11689512);
    fm_counts_free(c1);
    fm_counts_free(c2);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* Published numbers of two peer tools, reproduced from flopmeter's primitive counts with the
 * mapping docs/counting.md gives (a check of both the counts and the mapping). */
static void test_peer_tool_figures(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    /* PyTorch FlopCounterMode (its test suite): resnet18 forward + backward with the input
     * requiring grad = 10,884,440,064 FLOPs, 2 per MAC of conv and matmul only. flopmeter never
     * computes the network input's gradient, so that conv1 data gradient (= conv1's forward
     * MACs) is added to flopmeter's three phases. */
    struct fm_counts *c = test_count_zoo(ctx, "resnet18", 1, FM_MODE_TRAIN, &g);
    uint64_t mm = 0, conv1 = 0;
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        enum fm_class k = fm_op_class(n->op);
        if (k != FM_CLASS_CONV && k != FM_CLASS_MATMUL)
            continue;
        for (int ph = FWD; ph <= BW; ph++)
            mm += c->nodes[i].phase[ph].prim[FM_PRIM_MAC];
        if (strcmp(n->name, "conv1") == 0)
            conv1 = c->nodes[i].phase[FWD].prim[FM_PRIM_MAC];
    }
    assert_int_equal(conv1, 64ull * 112 * 112 * 3 * 7 * 7);
    assert_int_equal(2 * (mm + conv1), 10884440064ull);
    fm_counts_free(c);
    fm_graph_free(g);

    /* pthflops on VGG16 at 224x224 (the PALEO problem set, docs/roofline.md reference 4): conv and linear = MACs + bias adds, ReLU 2 per
     * element, max pool k*k-1 per output, dropout 0; its adaptive average pool (7x7 -> 7x7)
     * rule gives 1,229,312, which flopmeter counts as 25,088 divisions (windows of 1) and is
     * taken from the problem set as is. Total 15,516,752,872. */
    c = test_count_zoo(ctx, "vgg16", 1, FM_MODE_INFER, &g);
    uint64_t total = 1229312, conv = 0;
    int found = 0;
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        const struct fm_work *w = &c->nodes[i].phase[FWD];
        uint64_t v = 0;
        switch (n->op) {
        case FM_OP_CONV:
        case FM_OP_LINEAR: v = w->prim[FM_PRIM_MAC] + w->prim[FM_PRIM_ADD]; break;
        case FM_OP_RELU: v = 2 * w->prim[FM_PRIM_CMP]; break;
        case FM_OP_MAXPOOL: v = w->prim[FM_PRIM_CMP]; break;
        default: break;
        }
        total += v;
        if (n->op == FM_OP_CONV)
            conv += v;
        if (strcmp(n->name, "features.0") == 0) {
            assert_int_equal(v, 89915392);
            found++;
        }
        if (strcmp(n->name, "features.4") == 0) {
            assert_int_equal(v, 2408448);
            found++;
        }
        if (strcmp(n->name, "classifier.0") == 0) {
            assert_int_equal(v, 102764544);
            found++;
        }
    }
    /* the problem set's "conv only" figure 15,361,407,488 still held the avgpool's 1,229,312 */
    assert_int_equal(found, 3);
    assert_int_equal(conv, 15361407488ull - 1229312);
    assert_int_equal(total, 15516752872ull);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- quant.c and msft.c: quantized ops and ONNX Runtime's fused ops, inference kernels ---- */

static fm_tid typed(struct tg *t, const char *name, enum fm_dtype dt, struct fm_shape s)
{
    return tensor(t, name, FM_ROLE_CONST, dt, s);
}
#define SCALAR(t, name, dt) typed(t, name, dt, (struct fm_shape){0, {0}})
#define TYPED(t, name, dt, ...) typed(t, name, dt, SHAPE(__VA_ARGS__))

/* every phase after the forward is empty, the node says it has no backward */
static void expect_inference_only(struct fm_node_cost c)
{
    EXPECT_NONE(c, BD);
    EXPECT_NONE(c, BW);
    assert_true(c.no_grad);
}

static void test_quantized_ops(void **state)
{
    (void)state;
    {   /* QuantizeLinear per tensor, E = 2*3*4 = 24 (x needs a gradient: still none counted):
         * E div, E add, 3E cmp; reads x 96 + scale 4 + zp 1, writes 24 uint8 */
        struct tg t = tg_new();
        fm_nid n = NODE(&t, FM_OP_QUANTIZE_LINEAR, "q", NULL, ACT(&t, "x", 2, 3, 4),
                        SCALAR(&t, "s", FM_DTYPE_FP32), SCALAR(&t, "z", FM_DTYPE_UINT8));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 0, 24, 0, 24, 72, 0);
        EXPECT_BYTES(c, FWD, 96 + 4 + 1, 24);
        expect_inference_only(c);
        assert_false(c.int8);
        assert_int_equal(fm_graph_tensor(t.g, out_of(&t, n))->dtype, FM_DTYPE_UINT8);
        tg_free(&t);
    }
    {   /* per axis (axis 1: 3 scales), int8 zero points -> int8 output */
        struct tg t = tg_new();
        struct fm_attrs a = attrs();
        a.axis = 1;
        fm_nid n = NODE(&t, FM_OP_QUANTIZE_LINEAR, "q", &a, INPUT(&t, "x", 2, 3, 4),
                        TYPED(&t, "s", FM_DTYPE_FP32, 3), TYPED(&t, "z", FM_DTYPE_INT8, 3));
        assert_int_equal(fm_graph_tensor(t.g, out_of(&t, n))->dtype, FM_DTYPE_INT8);
        /* a scale of the wrong shape: 4 scales along axis 1 of length 3 */
        fm_tid in[3] = {INPUT(&t, "x2", 2, 3, 4), TYPED(&t, "s2", FM_DTYPE_FP32, 4), FM_NONE};
        assert_int_equal(fm_graph_add_node(t.g, FM_OP_QUANTIZE_LINEAR, "bad", &a, in, 2, NULL,
                                           1, NULL),
                         FM_ERR_SHAPE);
        assert_non_null(strstr(fm_ctx_error(t.ctx), "per-axis"));
        assert_non_null(strstr(fm_ctx_error(t.ctx), "'bad'"));
        /* a zero point whose size differs from its scale's */
        fm_tid in2[3] = {INPUT(&t, "x3", 2, 3, 4), TYPED(&t, "s3", FM_DTYPE_FP32, 3),
                         TYPED(&t, "z3", FM_DTYPE_UINT8, 2)};
        assert_int_equal(fm_graph_add_node(t.g, FM_OP_QUANTIZE_LINEAR, "bad2", &a, in2, 3, NULL,
                                           1, NULL),
                         FM_ERR_SHAPE);
        tg_free(&t);
    }
    {   /* DequantizeLinear per axis, int8 (2,3,4): (x - zp) * s: E add, E mul; reads 24 + 12,
         * writes 96 (fp32, the scale's type) */
        struct tg t = tg_new();
        struct fm_attrs a = attrs();
        a.axis = 1;
        fm_nid n = NODE(&t, FM_OP_DEQUANTIZE_LINEAR, "dq", &a, TYPED(&t, "x", FM_DTYPE_INT8, 2, 3, 4),
                        TYPED(&t, "s", FM_DTYPE_FP32, 3));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 0, 24, 24, 0, 0, 0);
        EXPECT_BYTES(c, FWD, 24 + 12, 96);
        assert_int_equal(fm_graph_tensor(t.g, out_of(&t, n))->dtype, FM_DTYPE_FP32);
        tg_free(&t);
    }
    {   /* DynamicQuantizeLinear, E = 24: E+2 div, E+2 add, 5E+5 cmp; three outputs */
        struct tg t = tg_new();
        fm_tid x = INPUT(&t, "x", 2, 3, 4), outs[3];
        FM_ASSERT_OK(t.ctx, fm_graph_add_node(t.g, FM_OP_DYNAMIC_QUANTIZE_LINEAR, "dq", NULL, &x,
                                              1, NULL, 3, outs));
        struct fm_node_cost c = COST(&t, 0);
        EXPECT(c, FWD, 0, 26, 0, 26, 125, 0);
        EXPECT_BYTES(c, FWD, 96, 24 + 4 + 1);   /* y uint8, scale fp32, zero point uint8 */
        EXPECT_SHAPE(&t, outs[0], 2, 3, 4);
        assert_int_equal(shape_at(&t, outs[1])->rank, 0);
        tg_free(&t);
    }
    {   /* MatMulInteger (2,5,3) uint8 x (3,4) int8: 2*5*3*4 = 120 int8 MACs; a's zero point:
         * 30 adds; reads 30 + 12 + 1, writes (2,5,4) int32 = 160 bytes */
        struct tg t = tg_new();
        fm_nid n = NODE(&t, FM_OP_MATMUL_INTEGER, "mm", NULL,
                        TYPED(&t, "a", FM_DTYPE_UINT8, 2, 5, 3), TYPED(&t, "b", FM_DTYPE_INT8, 3, 4),
                        SCALAR(&t, "za", FM_DTYPE_UINT8));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 120, 30, 0, 0, 0, 0);
        EXPECT_BYTES(c, FWD, 30 + 12 + 1, 160);
        assert_true(c.int8 && c.no_grad);
        EXPECT_SHAPE(&t, out_of(&t, n), 2, 5, 4);
        /* float operands are refused */
        fm_tid in[2] = {INPUT(&t, "f", 2, 3), TYPED(&t, "b2", FM_DTYPE_INT8, 3, 4)};
        assert_int_equal(fm_graph_add_node(t.g, FM_OP_MATMUL_INTEGER, "bad", NULL, in, 2, NULL,
                                           1, NULL),
                         FM_ERR_SHAPE);
        tg_free(&t);
    }
    {   /* ConvInteger x (1,2,5,5), w (4,2,3,3), no padding: out (1,4,3,3) = 36 outputs x 18 =
         * 648 int8 MACs; x's zero point: 50 adds */
        struct tg t = tg_new();
        fm_nid n = NODE(&t, FM_OP_CONV_INTEGER, "c", NULL,
                        TYPED(&t, "x", FM_DTYPE_UINT8, 1, 2, 5, 5),
                        TYPED(&t, "w", FM_DTYPE_INT8, 4, 2, 3, 3), SCALAR(&t, "zx", FM_DTYPE_UINT8));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 648, 50, 0, 0, 0, 0);
        EXPECT_SHAPE(&t, out_of(&t, n), 1, 4, 3, 3);
        assert_true(c.int8);
        tg_free(&t);
    }
    {   /* QLinearMatMul (2,3) x (3,4), b per column (4 scales): 24 MACs; zero points 6 + 12
         * adds; requantize 8 outputs: 8 mul + 8 add + 24 cmp, m per b scale: 4 mul + 4 div */
        struct tg t = tg_new();
        fm_nid n = NODE(&t, FM_OP_QLINEAR_MATMUL, "qmm", NULL,
                        TYPED(&t, "a", FM_DTYPE_UINT8, 2, 3), SCALAR(&t, "sa", FM_DTYPE_FP32),
                        SCALAR(&t, "za", FM_DTYPE_UINT8), TYPED(&t, "b", FM_DTYPE_INT8, 3, 4),
                        TYPED(&t, "sb", FM_DTYPE_FP32, 4), TYPED(&t, "zb", FM_DTYPE_INT8, 4),
                        SCALAR(&t, "sy", FM_DTYPE_FP32), SCALAR(&t, "zy", FM_DTYPE_UINT8));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 24, 6 + 12 + 8, 8 + 4, 4, 24, 0);
        assert_int_equal(fm_graph_tensor(t.g, out_of(&t, n))->dtype, FM_DTYPE_UINT8);
        tg_free(&t);
    }
    {   /* MatMulIntegerToFloat (2,3) x (3,4), a's zero point, bias: 24 MACs; 6 adds (zp) + 8
         * (bias); acc * (sa*sb): 8 mul + 4 mul (per b scale) */
        struct tg t = tg_new();
        fm_nid n = NODE(&t, FM_OP_MATMUL_INTEGER_TO_FLOAT, "m", NULL,
                        TYPED(&t, "a", FM_DTYPE_UINT8, 2, 3), TYPED(&t, "b", FM_DTYPE_INT8, 3, 4),
                        SCALAR(&t, "sa", FM_DTYPE_FP32), TYPED(&t, "sb", FM_DTYPE_FP32, 4),
                        SCALAR(&t, "za", FM_DTYPE_UINT8), FM_NONE, PARAM(&t, "bias", 4));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 24, 14, 12, 0, 0, 0);
        assert_int_equal(fm_graph_tensor(t.g, out_of(&t, n))->dtype, FM_DTYPE_FP32);
        tg_free(&t);
    }
    {   /* DynamicQuantizeMatMul A fp32 (2,3), B int8 (3,4), b's zero point: A quantized (E = 6:
         * 8 div, 8 add, 35 cmp), A's zero point 6 adds, b's 12 adds, 24 MACs, 8 + 1 mul */
        struct tg t = tg_new();
        fm_nid n = NODE(&t, FM_OP_DYNAMIC_QUANTIZE_MATMUL, "m", NULL, ACT(&t, "a", 2, 3),
                        TYPED(&t, "b", FM_DTYPE_INT8, 3, 4), SCALAR(&t, "sb", FM_DTYPE_FP32),
                        SCALAR(&t, "zb", FM_DTYPE_INT8));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 24, 8 + 6 + 12, 9, 8, 35, 0);
        expect_inference_only(c);
        tg_free(&t);
    }
}

static void test_msft_ops(void **state)
{
    (void)state;
    {   /* FusedMatMul 0.5 * A (2,3,4) @ B (5,4)^T -> (2,3,5): 30*4 MACs, 30 mul for alpha */
        struct tg t = tg_new();
        struct fm_attrs a = attrs();
        a.flags = FM_ATTR_TRANS_B;
        a.alpha = 0.5;
        fm_nid n = NODE(&t, FM_OP_FUSED_MATMUL, "fmm", &a, ACT(&t, "a", 2, 3, 4),
                        PARAM(&t, "b", 5, 4));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 120, 0, 30, 0, 0, 0);
        EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 5);
        expect_inference_only(c);
        tg_free(&t);
    }
    /* elementwise, E = 24 */
    const struct {
        enum fm_op op;
        int n_in;   /* x, then a bias (4), then a skip (2,3,4) */
        struct prims fwd;
    } el[] = {
        /* (x+b) then GELU tanh: E add + (2E add, 6E mul, E special) */
        {FM_OP_FAST_GELU, 2, PRIMS(0, 72, 144, 0, 0, 24)},
        {FM_OP_FAST_GELU, 1, PRIMS(0, 48, 144, 0, 0, 24)},
        /* (x+b) then GELU erf: E add + (E add, 3E mul, E special) */
        {FM_OP_BIAS_GELU, 2, PRIMS(0, 48, 72, 0, 0, 24)},
        /* x * sigmoid(1.702 x): sigmoid E add, E div, E special; 2E mul */
        {FM_OP_QUICK_GELU, 1, PRIMS(0, 24, 48, 24, 0, 24)},
        /* x + bias + skip: 2E add */
        {FM_OP_BIAS_ADD, 3, PRIMS(0, 48, 0, 0, 0, 0)},
    };
    for (size_t i = 0; i < sizeof(el) / sizeof(el[0]); i++) {
        struct tg t = tg_new();
        fm_tid in[3] = {ACT(&t, "x", 2, 3, 4), PARAM(&t, "b", 4), INPUT(&t, "s", 2, 3, 4)};
        FM_ASSERT_OK(t.ctx, fm_graph_add_node(t.g, el[i].op, "f", NULL, in, el[i].n_in, NULL, 1,
                                              NULL));
        struct fm_node_cost c = COST(&t, (fm_nid)fm_graph_node_count(t.g) - 1);
        expect_work_(&c.phase[FWD], fm_op_name(el[i].op), el[i].fwd, __FILE__, __LINE__);
        expect_inference_only(c);
        tg_free(&t);
    }
    {   /* SkipLayerNorm x, skip, gamma (no beta, no bias), E = 24, G = 6 rows: skip E add;
         * LayerNorm without beta: 3E + G add, 3E mul, 2G div, G special */
        struct tg t = tg_new();
        fm_nid n = NODE(&t, FM_OP_SKIP_LAYERNORM, "sln", NULL, ACT(&t, "x", 2, 3, 4),
                        INPUT(&t, "s", 2, 3, 4), PARAM(&t, "g", 4));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 0, 24 + 72 + 6, 72, 12, 0, 6);
        expect_inference_only(c);
        tg_free(&t);
    }
    {   /* SkipSimplifiedLayerNorm with bias: 2E add; RMSNorm E + G add, 3E mul, G div, G
         * special */
        struct tg t = tg_new();
        fm_nid n = NODE(&t, FM_OP_SKIP_SIMPLIFIED_LAYERNORM, "s", NULL, ACT(&t, "x", 2, 3, 4),
                        INPUT(&t, "s", 2, 3, 4), PARAM(&t, "g", 4), PARAM(&t, "bias", 4));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 0, 48 + 24 + 6, 72, 6, 0, 6);
        tg_free(&t);
    }
    {   /* SimplifiedLayerNorm (RMSNorm) over the last axis */
        struct tg t = tg_new();
        struct fm_attrs a = attrs();
        a.axis = -1;
        fm_nid n = NODE(&t, FM_OP_SIMPLIFIED_LAYERNORM, "r", &a, ACT(&t, "x", 2, 3, 4),
                        PARAM(&t, "g", 4));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 0, 30, 72, 6, 0, 6);
        /* another axis is refused */
        a.axis = 1;
        fm_tid in[2] = {INPUT(&t, "x2", 2, 3, 4), PARAM(&t, "g2", 4)};
        assert_int_equal(fm_graph_add_node(t.g, FM_OP_SIMPLIFIED_LAYERNORM, "bad", &a, in, 2,
                                           NULL, 1, NULL),
                         FM_ERR_SHAPE);
        tg_free(&t);
    }
    {   /* EmbedLayerNorm ids (2,3), word (10,4), position (6,4), gamma, beta, no segments:
         * word + position E add, LayerNorm 4E + G add, 3E mul, 2G div, G special (G = 6) */
        struct tg t = tg_new();
        fm_nid n = NODE(&t, FM_OP_EMBED_LAYERNORM, "e", NULL, TYPED(&t, "ids", FM_DTYPE_INT32, 2, 3),
                        FM_NONE, PARAM(&t, "w", 10, 4), PARAM(&t, "p", 6, 4), FM_NONE,
                        PARAM(&t, "g", 4), PARAM(&t, "b", 4));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 0, 24 + 96 + 6, 72, 12, 0, 6);
        EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 4);
        tg_free(&t);
    }
    {   /* FusedAttention X (2,3,4) @ W (4,12) + bias, 2 heads of 2: projection 2*3*4*12 = 288
         * MACs, 72 bias adds; core P = 2*2*3*3 = 36 scores, R = 12 rows: 36*(2+2) = 144 MACs,
         * 36 mul, softmax 24 cmp + 60 add + 36 special + 36 div; causal: 36 cmp more */
        for (int causal = 0; causal < 2; causal++) {
            struct tg t = tg_new();
            struct fm_attrs a = attrs();
            a.groups = 2;
            a.flags = causal ? FM_ATTR_CAUSAL : 0;
            fm_nid n = NODE(&t, FM_OP_MS_ATTENTION, "att", &a, ACT(&t, "x", 2, 3, 4),
                            PARAM(&t, "w", 4, 12), PARAM(&t, "b", 12));
            struct fm_node_cost c = COST(&t, n);
            EXPECT(c, FWD, 288 + 144, 72 + 60, 36, 36, 24 + (causal ? 36 : 0), 36);
            EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 4);
            expect_inference_only(c);
            tg_free(&t);
        }
    }
    {   /* MultiHeadAttention Q (2,3,4), K (2,5,4), V (2,5,6), 2 heads: P = 2*2*3*5 = 60,
         * R = 12: 60*(2+3) = 300 MACs, 60 mul, 48 cmp, 108 add, 60 special, 60 div */
        struct tg t = tg_new();
        struct fm_attrs a = attrs();
        a.groups = 2;
        fm_nid n = NODE(&t, FM_OP_MULTIHEAD_ATTENTION, "mha", &a, ACT(&t, "q", 2, 3, 4),
                        INPUT(&t, "k", 2, 5, 4), INPUT(&t, "v", 2, 5, 6));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 300, 108, 60, 60, 48, 60);
        EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 6);
        tg_free(&t);
    }
    {   /* RotaryEmbedding x (2,3,8), 2 heads of 4, cos/sin caches (6,1): 2 of each head's 4
         * dims rotate: 48 / 4 * 2 = 24 rotated elements, 2 mul + 1 add each */
        struct tg t = tg_new();
        struct fm_attrs a = attrs();
        a.groups = 2;
        fm_nid n = NODE(&t, FM_OP_ROTARY_EMBEDDING, "rot", &a, ACT(&t, "x", 2, 3, 8),
                        LABELS(&t, "pos", 2, 3), INPUT(&t, "cos", 6, 1), INPUT(&t, "sin", 6, 1));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 0, 24, 48, 0, 0, 0);
        EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 8);
        tg_free(&t);
    }
    {   /* GroupQueryAttention q (2,3,8), k, v (2,3,4): 4 query heads, 2 kv heads of 2, no past
         * (total 3), do_rotary: rotary on Q and K 2*3*(4+2)*2 = 72 elements (144 mul, 72 add);
         * core P = 2*4*3*3 = 72, R = 24: 72*4 = 288 MACs, 72 mul, causal 72 cmp + softmax 48
         * cmp, 120 add, 72 special, 72 div */
        struct tg t = tg_new();
        struct fm_attrs a = attrs();
        a.groups = 4;
        a.ints[0] = 2;
        a.ints[1] = 1;
        a.nints = 2;
        fm_nid n = NODE(&t, FM_OP_GROUP_QUERY_ATTENTION, "gqa", &a, ACT(&t, "q", 2, 3, 8),
                        INPUT(&t, "k", 2, 3, 4), INPUT(&t, "v", 2, 3, 4));
        struct fm_node_cost c = COST(&t, n);
        EXPECT(c, FWD, 288, 72 + 120, 144 + 72, 72, 72 + 48, 72);
        EXPECT_SHAPE(&t, out_of(&t, n), 2, 3, 8);
        tg_free(&t);
    }
}

/* ============================================================================================
 * index.c: GatherElements, GatherND, ScatterElements, ScatterND (fp32 data, int64 indices)
 * ========================================================================================= */

static void test_gather_elements_nd(void **state)
{
    (void)state;
    /* GatherElements: data (3,4) needs a gradient, indices (2,4) int64, axis 0: E = 8 outputs.
     * fwd: no arithmetic; reads the indices (8*8 = 64 B) and the 8 gathered (32 B), writes 32.
     * dX: scatter-add of dy, E = 8 add; reads dy (32) + indices (64), writes dX (12*4 = 48). */
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.axis = 0;
    fm_nid n = NODE(&t, FM_OP_GATHER_ELEMENTS, "ge", &a, ACT(&t, "x", 3, 4),
                    LABELS(&t, "i", 2, 4));
    EXPECT_SHAPE(&t, out_of(&t, n), 2, 4);
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, FWD, 64 + 32, 32);
    EXPECT(c, BD, 0, 8, 0, 0, 0, 0);
    EXPECT_BYTES(c, BD, 32 + 64, 48);
    EXPECT_NONE(c, BW);
    struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(ci, FWD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(ci, FWD, 64 + 32, 32);
    EXPECT_NONE(ci, BD);
    tg_free(&t);
    /* the network input needs no gradient */
    t = tg_new();
    n = NODE(&t, FM_OP_GATHER_ELEMENTS, "ge", &a, INPUT(&t, "x", 3, 4), LABELS(&t, "i", 2, 4));
    c = COST(&t, n);
    EXPECT_BYTES(c, FWD, 64 + 32, 32);
    EXPECT_NONE(c, BD);
    /* indices of another rank, and float indices, are refused naming the layer */
    fm_tid x = INPUT(&t, "x2", 3, 4), bad = LABELS(&t, "i2", 8);
    fm_tid in[2] = {x, bad};
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_GATHER_ELEMENTS, "ge2", &a, in, 2, NULL, 1,
                                       NULL), FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "ge2", "rank 1", "rank 2");
    in[1] = INPUT(&t, "fi", 3, 4);
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_GATHER_ELEMENTS, "ge3", &a, in, 2, NULL, 1,
                                       NULL), FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "ge3", "fp32", "not integers");
    tg_free(&t);

    /* GatherND: data (2,3,4), indices (2,1), batch_dims 1: k = 1, out = (2) + (4) = (2,4),
     * E = 8. fwd: reads indices (2*8 = 16) + gathered (32), writes 32. dX: 8 add; reads dy (32)
     * + indices (16), writes dX (24*4 = 96). */
    t = tg_new();
    a = attrs();
    a.ints[0] = 1;
    a.nints = 1;
    n = NODE(&t, FM_OP_GATHER_ND, "gnd", &a, ACT(&t, "x", 2, 3, 4), LABELS(&t, "i", 2, 1));
    EXPECT_SHAPE(&t, out_of(&t, n), 2, 4);
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, FWD, 16 + 32, 32);
    EXPECT(c, BD, 0, 8, 0, 0, 0, 0);
    EXPECT_BYTES(c, BD, 32 + 16, 96);
    ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT_BYTES(ci, FWD, 16 + 32, 32);
    EXPECT_NONE(ci, BD);
    /* batch_dims 0, tuples of 2 on (2,3,4): out = (5) + (4) */
    a.ints[0] = 0;
    n = NODE(&t, FM_OP_GATHER_ND, "gnd0", &a, INPUT(&t, "x0", 2, 3, 4), LABELS(&t, "i0", 5, 2));
    EXPECT_SHAPE(&t, out_of(&t, n), 5, 4);
    c = COST(&t, n);
    EXPECT_NONE(c, BD);   /* the network input needs no gradient */
    /* tuples of 4 values address a rank-3 tensor: refused */
    fm_tid in3[2] = {INPUT(&t, "x4", 2, 3, 4), LABELS(&t, "i4", 5, 4)};
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_GATHER_ND, "gnd4", &a, in3, 2, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "gnd4", "tuples of 4");
    tg_free(&t);
}

static void test_scatter(void **state)
{
    (void)state;
    /* ScatterElements: data (3,4) X = 12, indices (2,4) int64, updates (2,4) U = 8, axis 0,
     * data and updates both need gradients (bwd_data). Bytes: data 48, indices 64, updates 32.
     * fwd reads all three (144) and writes Y (48), for every reduction. */
    const struct {
        int64_t red;
        struct prims fwd, bwd;
        uint64_t bwd_read;
    } cases[] = {
        /* none: fwd nothing; dX = dy zeroed where scattered (reads dy 48 + indices 64), dU =
         * dy gathered (reads indices 64 + 32 of dy): 208 read, 48 + 32 written */
        {0, PRIMS(0, 0, 0, 0, 0, 0), PRIMS(0, 0, 0, 0, 0, 0), 48 + 64 + 64 + 32},
        /* add: U = 8 add; dX = dy (48 read), dU gathered (64 + 32) */
        {1, PRIMS(0, 8, 0, 0, 0, 0), PRIMS(0, 0, 0, 0, 0, 0), 48 + 64 + 32},
        /* mul: U = 8 mul; dX = dy*y/x: 12 mul + 12 div (reads dy, y, x: 3*48); dU =
         * dy[p]*y[p]/u: 8 mul + 8 div (reads indices 64, dy and y gathered and u: 3*32) */
        {2, PRIMS(0, 0, 8, 0, 0, 0), PRIMS(0, 0, 12 + 8, 12 + 8, 0, 0), 3 * 48 + 64 + 3 * 32},
        /* max, min: U = 8 cmp; dX: 12 cmp (x == y), dU: 8 cmp (u == y[p]), bytes as mul */
        {3, PRIMS(0, 0, 0, 0, 8, 0), PRIMS(0, 0, 0, 0, 12 + 8, 0), 3 * 48 + 64 + 3 * 32},
        {4, PRIMS(0, 0, 0, 0, 8, 0), PRIMS(0, 0, 0, 0, 12 + 8, 0), 3 * 48 + 64 + 3 * 32},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct tg t = tg_new();
        struct fm_attrs a = attrs();
        a.ints[0] = cases[k].red;
        a.nints = 1;
        fm_nid n = NODE(&t, FM_OP_SCATTER_ELEMENTS, "se", &a, ACT(&t, "x", 3, 4),
                        LABELS(&t, "i", 2, 4), ACT(&t, "u", 2, 4));
        EXPECT_SHAPE(&t, out_of(&t, n), 3, 4);
        struct fm_node_cost c = COST(&t, n);
        expect_work_(&c.phase[FWD], "fwd", cases[k].fwd, __FILE__, __LINE__);
        EXPECT_BYTES(c, FWD, 48 + 64 + 32, 48);
        expect_work_(&c.phase[BD], "bwd_data", cases[k].bwd, __FILE__, __LINE__);
        EXPECT_BYTES(c, BD, cases[k].bwd_read, 48 + 32);
        EXPECT_NONE(c, BW);
        struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
        expect_work_(&ci.phase[FWD], "fwd", cases[k].fwd, __FILE__, __LINE__);
        EXPECT_NONE(ci, BD);
        /* neither data nor updates need a gradient: the forward alone */
        n = NODE(&t, FM_OP_SCATTER_ELEMENTS, "se_in", &a, INPUT(&t, "x0", 3, 4),
                 LABELS(&t, "i0", 2, 4), INPUT(&t, "u0", 2, 4));
        c = COST(&t, n);
        expect_work_(&c.phase[FWD], "fwd", cases[k].fwd, __FILE__, __LINE__);
        EXPECT_NONE(c, BD);
        EXPECT_NONE(c, BW);
        tg_free(&t);
    }
    /* ScatterND, reduction add: data (4,3) an activation, indices (2,1), updates (2,3) a
     * parameter: U = 6 add forward; reads 48 + 16 + 24, writes 48. dX = dy: reads 48, writes
     * 48 (bwd_data); dU = dy gathered: reads indices 16 + 24, writes 24 (bwd_weight). */
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.ints[0] = 1;
    a.nints = 1;
    fm_nid n = NODE(&t, FM_OP_SCATTER_ND, "snd", &a, ACT(&t, "x", 4, 3), LABELS(&t, "i", 2, 1),
                    PARAM(&t, "u", 2, 3));
    EXPECT_SHAPE(&t, out_of(&t, n), 4, 3);
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, 6, 0, 0, 0, 0);
    EXPECT_BYTES(c, FWD, 48 + 16 + 24, 48);
    EXPECT(c, BD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, BD, 48, 48);
    EXPECT(c, BW, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, BW, 16 + 24, 24);
    /* updates that do not fit the index tuples are refused naming the layer */
    fm_tid in[3] = {INPUT(&t, "x2", 4, 3), LABELS(&t, "i2", 2, 1), INPUT(&t, "u2", 2, 4)};
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_SCATTER_ND, "snd2", &a, in, 3, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "snd2", "2x4", "2x3");
    a.ints[0] = 7;
    in[2] = INPUT(&t, "u3", 2, 3);
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_SCATTER_ND, "snd3", &a, in, 3, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "snd3", "reduction 7");
    tg_free(&t);
}

/* ============================================================================================
 * loss.c: ONNX's SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss. Input (2,4,3): N = 2,
 * C = 4, d1 = 3: M = 6 positions, E = 24 scores (96 B); labels (2,3) int64 (48 B); weights (4)
 * fp32 (16 B). ints = {reduction 0 none 1 sum 2 mean, has ignore_index, ignore_index}.
 * ========================================================================================= */

static struct fm_attrs loss_attrs(int64_t red, bool ignore)
{
    struct fm_attrs a = attrs();
    a.ints[0] = red;
    a.ints[1] = ignore;
    a.ints[2] = -1;
    a.nints = 3;
    return a;
}

static void test_onnx_losses(void **state)
{
    (void)state;
    /* SCE, mean, no weights, no ignore_index, no log_prob output:
     *   fwd cmp E-M = 18; add x-max 24 + sum 18 + lse 6 + x_label - lse 6 + mean's sum 5 = 59;
     *   special exp 24 + log 6 = 30; div 1 (mean)
     *   bwd div 1 (1/M); x - lse 24 add + minus one-hot 6 add = 30; exp 24 special; * f 24 mul
     *   bytes fwd: x 96 + labels 48 read; loss 4 + lse 6*4 = 24 (kept) written
     *         bwd: dy 4 + labels 48 + x 96 + lse 24 read; dX 96 written */
    struct tg t = tg_new();
    struct fm_attrs a = loss_attrs(2, false);
    fm_nid n = NODE(&t, FM_OP_SOFTMAX_CE_LOSS, "sce", &a, ACT(&t, "x", 2, 4, 3),
                    LABELS(&t, "y", 2, 3));
    assert_int_equal(shape_at(&t, out_of(&t, n))->rank, 0);   /* a scalar */
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, 59, 0, 1, 18, 30);
    EXPECT_BYTES(c, FWD, 96 + 48, 4 + 24);
    EXPECT(c, BD, 0, 30, 24, 1, 0, 24);
    EXPECT_BYTES(c, BD, 4 + 48 + 96 + 24, 96);
    EXPECT_NONE(c, BW);
    assert_int_equal(c.saved_bytes, 24);
    struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(ci, FWD, 0, 59, 0, 1, 18, 30);
    EXPECT_NONE(ci, BD);
    /* the graph ends in the model's own loss: the policy keeps it and adds none */
    size_t nodes = fm_graph_node_count(t.g);
    struct fm_loss_info info;
    FM_ASSERT_OK(t.ctx, fm_graph_add_loss(t.g, FM_NONE, &info));
    assert_int_equal(info.n, 1);
    assert_int_equal(info.loss[0].kind, FM_LOSS_MODEL);
    assert_false(info.loss[0].added);
    assert_int_equal(info.loss[0].node, n);
    assert_int_equal(info.loss[0].classes, 4);
    assert_int_equal(info.loss[0].positions, 6);
    assert_int_equal(fm_graph_node_count(t.g), nodes);
    tg_free(&t);

    /* SCE, none, weights, ignore_index, the log_prob output:
     *   fwd cmp 18 + ignore 6 = 24; add 24 + 18 + 6 + log_prob = x - lse 24 = 72; special 30;
     *       mul 6 (weights); no reduction
     *   bwd mul dy_i * w_i 6 + * f 24 = 30; cmp 6 (ignored masked); exp(log_prob) 24 special;
     *       minus one-hot 6 add
     *   bytes fwd: 96 + 48 + 16 read; loss (6) 24 + log_prob 96 written
     *         bwd: dy 24 + labels 48 + weights 16 + log_prob 96 read; dX 96 written */
    t = tg_new();
    a = loss_attrs(0, true);
    fm_tid in[3] = {ACT(&t, "x", 2, 4, 3), LABELS(&t, "y", 2, 3), INPUT(&t, "w", 4)};
    const char *names[2] = {"loss", "log_prob"};
    fm_tid outs[2];
    FM_ASSERT_OK(t.ctx, fm_graph_add_node(t.g, FM_OP_SOFTMAX_CE_LOSS, "sce2", &a, in, 3, names, 2,
                                          outs));
    n = (fm_nid)fm_graph_node_count(t.g) - 1;
    EXPECT_SHAPE(&t, outs[0], 2, 3);
    EXPECT_SHAPE(&t, outs[1], 2, 4, 3);
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 72, 6, 0, 24, 30);
    EXPECT_BYTES(c, FWD, 96 + 48 + 16, 24 + 96);
    EXPECT(c, BD, 0, 6, 30, 0, 6, 24);
    EXPECT_BYTES(c, BD, 24 + 48 + 16 + 96, 96);
    assert_int_equal(c.saved_bytes, 0);
    tg_free(&t);

    /* NLL, sum, weights, ignore_index: fwd mul 6, cmp 6, add M-1 = 5; bwd f_i = w_i (no mul),
     * cmp 6; bytes fwd 160 read, 4 written; bwd dy 4 + labels 48 + weights 16 read, dX 96 */
    t = tg_new();
    a = loss_attrs(1, true);
    n = NODE(&t, FM_OP_NLL_LOSS, "nll", &a, ACT(&t, "x", 2, 4, 3), LABELS(&t, "y", 2, 3),
             INPUT(&t, "w", 4));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 5, 6, 0, 6, 0);
    EXPECT_BYTES(c, FWD, 96 + 48 + 16, 4);
    EXPECT(c, BD, 0, 0, 0, 0, 6, 0);
    EXPECT_BYTES(c, BD, 4 + 48 + 16, 96);
    /* NLL, mean, no weights: fwd add 5, div 1; bwd div 1 (f = 1/M) */
    a = loss_attrs(2, false);
    n = NODE(&t, FM_OP_NLL_LOSS, "nll_mean", &a, ACT(&t, "x2", 2, 4, 3), LABELS(&t, "y2", 2, 3));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 5, 0, 1, 0, 0);
    EXPECT(c, BD, 0, 0, 0, 1, 0, 0);
    EXPECT_BYTES(c, BD, 4 + 48, 96);
    ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(ci, FWD, 0, 5, 0, 1, 0, 0);
    EXPECT_NONE(ci, BD);
    /* the network input needs no gradient */
    n = NODE(&t, FM_OP_NLL_LOSS, "nll_in", &a, INPUT(&t, "x3", 2, 4, 3), LABELS(&t, "y3", 2, 3));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 5, 0, 1, 0, 0);
    EXPECT_NONE(c, BD);
    /* labels that do not match the input's positions, and SCE with three outputs: refused */
    fm_tid bad[2] = {INPUT(&t, "x4", 2, 4, 3), LABELS(&t, "y4", 2, 4)};
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_NLL_LOSS, "nll_bad", &a, bad, 2, NULL, 1,
                                       NULL), FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "nll_bad", "2x4", "2x3");
    bad[1] = LABELS(&t, "y5", 2, 3);
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_SOFTMAX_CE_LOSS, "sce3", &a, bad, 2, NULL, 3,
                                       NULL), FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "sce3", "has 3 outputs");
    tg_free(&t);
}

/* ============================================================================================
 * select.c: ArgMax/ArgMin, TopK, OneHot, Compress, NonZero
 * ========================================================================================= */

static void test_select(void **state)
{
    (void)state;
    /* ArgMax of (3,4) along axis 1, no keepdims: R = 3 rows of 4: 3*(4-1) = 9 cmp; reads 48,
     * writes 3 int64 = 24. Indices carry no gradient, even from an input that needs one. */
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.axis = 1;
    fm_nid n = NODE(&t, FM_OP_ARGMAX, "am", &a, ACT(&t, "x", 3, 4));
    EXPECT_SHAPE(&t, out_of(&t, n), 3);
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 9, 0);
    EXPECT_BYTES(c, FWD, 48, 24);
    EXPECT_NONE(c, BD);
    a.flags |= FM_ATTR_KEEPDIMS;
    a.axis = 0;
    n = NODE(&t, FM_OP_ARGMIN, "amin", &a, INPUT(&t, "x2", 3, 4));
    EXPECT_SHAPE(&t, out_of(&t, n), 1, 4);
    c = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(c, FWD, 0, 0, 0, 0, 12 - 4, 0);   /* E - R */
    tg_free(&t);

    /* TopK of (2,5), k = 2 along the last axis, sorted: per row 5*ceil(log2 3) = 10 + 2*ceil(
     * log2 2) = 2: 24 cmp for 2 rows. Reads 40; writes values 2x2 fp32 16 + indices int64 32.
     * dX: dy scattered at the indices: no arithmetic; reads dy 16 + indices 32, writes 40. */
    t = tg_new();
    a = attrs();
    a.axis = -1;
    a.ints[0] = 2;
    a.ints[1] = 1;
    a.ints[2] = 1;
    a.nints = 3;
    fm_tid in = ACT(&t, "x", 2, 5);
    const char *names[2] = {"values", "indices"};
    fm_tid outs[2];
    FM_ASSERT_OK(t.ctx, fm_graph_add_node(t.g, FM_OP_TOPK, "topk", &a, &in, 1, names, 2, outs));
    n = (fm_nid)fm_graph_node_count(t.g) - 1;
    EXPECT_SHAPE(&t, outs[0], 2, 2);
    EXPECT_SHAPE(&t, outs[1], 2, 2);
    assert_int_equal(fm_graph_tensor(t.g, outs[1])->dtype, FM_DTYPE_INT64);
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 24, 0);
    EXPECT_BYTES(c, FWD, 40, 16 + 32);
    EXPECT(c, BD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, BD, 16 + 32, 40);
    struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(ci, FWD, 0, 0, 0, 0, 24, 0);
    EXPECT_NONE(ci, BD);
    /* unsorted: 10 per row, 20; k = 1: 5*ceil(log2 2) = 5 per row, 10; the input needs no
     * gradient: no backward */
    a.ints[2] = 0;
    in = INPUT(&t, "x1", 2, 5);
    FM_ASSERT_OK(t.ctx, fm_graph_add_node(t.g, FM_OP_TOPK, "topk_u", &a, &in, 1, NULL, 2, NULL));
    c = COST(&t, (fm_nid)fm_graph_node_count(t.g) - 1);
    EXPECT(c, FWD, 0, 0, 0, 0, 20, 0);
    EXPECT_NONE(c, BD);
    a.ints[0] = 1;
    a.ints[2] = 1;
    FM_ASSERT_OK(t.ctx, fm_graph_add_node(t.g, FM_OP_TOPK, "top1", &a, &in, 1, NULL, 2, NULL));
    c = COST(&t, (fm_nid)fm_graph_node_count(t.g) - 1);
    EXPECT(c, FWD, 0, 0, 0, 0, 10, 0);
    a.ints[0] = 6;   /* more than the 5 there are */
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_TOPK, "top6", &a, &in, 1, NULL, 2, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "top6", "k = 6 of 5");
    tg_free(&t);

    /* OneHot: indices (4) int64, values (2) needing a gradient, depth 3, axis -1: (4,3), E = 12
     * cmp; reads 32 + 8, writes 48. d(values): E - 2 = 10 add; reads dy 48 + indices 32,
     * writes 8. */
    t = tg_new();
    a = attrs();
    a.axis = -1;
    a.ints[0] = 3;
    a.nints = 1;
    n = NODE(&t, FM_OP_ONEHOT, "oh", &a, LABELS(&t, "i", 4), ACT(&t, "v", 2));
    EXPECT_SHAPE(&t, out_of(&t, n), 4, 3);
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 12, 0);
    EXPECT_BYTES(c, FWD, 32 + 8, 48);
    EXPECT(c, BD, 0, 10, 0, 0, 0, 0);
    EXPECT_BYTES(c, BD, 48 + 32, 8);
    ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT_NONE(ci, BD);
    a.axis = 0;   /* depth first; constant values: no backward */
    n = NODE(&t, FM_OP_ONEHOT, "oh0", &a, LABELS(&t, "i2", 4), INPUT(&t, "v2", 2));
    EXPECT_SHAPE(&t, out_of(&t, n), 3, 4);
    c = COST(&t, n);
    EXPECT_NONE(c, BD);
    tg_free(&t);

    /* Compress (4,3) keeping 2 rows on axis 0: (2,3); reads and writes 24; dX: dy put back,
     * reads 24, writes 48. NonZero of (2,3) with 4 nonzero: 6 cmp; (2,4) int64 = 64 written. */
    t = tg_new();
    a = attrs();
    a.ints[0] = 2;
    a.ints[1] = 0;
    a.nints = 2;
    n = NODE(&t, FM_OP_COMPRESS, "cp", &a, ACT(&t, "x", 4, 3));
    EXPECT_SHAPE(&t, out_of(&t, n), 2, 3);
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, FWD, 24, 24);
    EXPECT(c, BD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, BD, 24, 48);
    ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT_NONE(ci, BD);
    a = attrs();
    a.ints[0] = 4;
    a.nints = 1;
    n = NODE(&t, FM_OP_NONZERO, "nz", &a, INPUT(&t, "c", 2, 3));
    EXPECT_SHAPE(&t, out_of(&t, n), 2, 4);
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 6, 0);
    EXPECT_BYTES(c, FWD, 24, 64);
    EXPECT_NONE(c, BD);
    tg_free(&t);
}

/* ============================================================================================
 * layout.c: DepthToSpace, SpaceToDepth, ReverseSequence, MaxUnpool, EyeLike: no arithmetic
 * ========================================================================================= */

static void test_layout(void **state)
{
    (void)state;
    /* DepthToSpace (1,8,2,3), blocksize 2, DCR: (1,2,4,6); 48 fp32 = 192 B each way; dX is dy
     * permuted back: 192 read, 192 written */
    struct tg t = tg_new();
    struct fm_attrs a = attrs();
    a.ints[0] = 2;
    a.ints[1] = 0;
    a.nints = 2;
    fm_nid n = NODE(&t, FM_OP_DEPTH_TO_SPACE, "d2s", &a, ACT(&t, "x", 1, 8, 2, 3));
    EXPECT_SHAPE(&t, out_of(&t, n), 1, 2, 4, 6);
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, FWD, 192, 192);
    EXPECT(c, BD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, BD, 192, 192);
    struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT_BYTES(ci, FWD, 192, 192);
    EXPECT_NONE(ci, BD);
    /* SpaceToDepth of the network input (1,2,4,6): (1,8,2,3), no backward */
    a.nints = 1;
    n = NODE(&t, FM_OP_SPACE_TO_DEPTH, "s2d", &a, INPUT(&t, "x2", 1, 2, 4, 6));
    EXPECT_SHAPE(&t, out_of(&t, n), 1, 8, 2, 3);
    c = COST(&t, n);
    EXPECT_BYTES(c, FWD, 192, 192);
    EXPECT_NONE(c, BD);
    a.ints[0] = 3;   /* 8 channels are not a multiple of 9 */
    fm_tid x3 = INPUT(&t, "x3", 1, 8, 2, 3);
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_DEPTH_TO_SPACE, "d2s3", &a, &x3, 1, NULL, 1,
                                       NULL), FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "d2s3", "multiple of blocksize^2 = 9");
    tg_free(&t);

    /* ReverseSequence (T=3, B=4), time axis 0, batch axis 1, lengths (4) int64: reads 48 + 32,
     * writes 48; dX reversed the same way: reads dy 48 + lengths 32, writes 48 */
    t = tg_new();
    a = attrs();
    a.ints[0] = 1;
    a.ints[1] = 0;
    a.nints = 2;
    n = NODE(&t, FM_OP_REVERSE_SEQUENCE, "rev", &a, ACT(&t, "x", 3, 4), LABELS(&t, "len", 4));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, FWD, 48 + 32, 48);
    EXPECT(c, BD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, BD, 48 + 32, 48);
    /* MaxUnpool (1,1,2,2) with indices int64 to (1,1,4,4): reads 16 + 32, writes 64; dX = dy
     * gathered: reads 16 + indices 32, writes 16 */
    a = attrs();
    a.ints[0] = 1;
    a.ints[1] = 1;
    a.ints[2] = 4;
    a.ints[3] = 4;
    a.nints = 4;
    n = NODE(&t, FM_OP_MAX_UNPOOL, "unpool", &a, ACT(&t, "p", 1, 1, 2, 2),
             LABELS(&t, "i", 1, 1, 2, 2));
    EXPECT_SHAPE(&t, out_of(&t, n), 1, 1, 4, 4);
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, FWD, 16 + 32, 64);
    EXPECT(c, BD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, BD, 16 + 32, 16);
    ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT_NONE(ci, BD);
    /* EyeLike of (3,4) as fp32: nothing read, 48 written; no gradient flows */
    a = attrs();
    a.ints[0] = FM_DTYPE_FP32;
    a.ints[1] = 1;
    a.nints = 2;
    n = NODE(&t, FM_OP_EYELIKE, "eye", &a, ACT(&t, "e", 3, 4));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 0, 0);
    EXPECT_BYTES(c, FWD, 0, 48);
    EXPECT_NONE(c, BD);
    tg_free(&t);
}

/* ============================================================================================
 * Random generators (random.c): a draw is one special per number; uniform low + (high-low) u
 * adds a mul and an add; normal mean + scale z (Box-Muller: per pair 4 special and 4 mul, so
 * per element 1 draw + 2 special, 2 mul, then 1 mul, 1 add); Bernoulli u < p one cmp;
 * Multinomial per row C exp and C-1 adds, per sample a draw, a mul and ceil(log2 C) cmp. No
 * backward, and the outputs need no gradient even when the input does.
 * ========================================================================================= */

static struct fm_attrs random_attrs(enum fm_dtype dt)
{
    struct fm_attrs a = attrs();
    a.ints[0] = dt;
    a.ints[1] = 0;   /* no seed */
    a.ints[2] = 0;
    a.nints = 3;
    return a;
}

static void test_random_ops(void **state)
{
    (void)state;
    struct tg t = tg_new();
    /* RandomUniformLike of an activation (2,3,4) that needs a gradient: E = 24; 24 draws,
     * 24 mul, 24 add; X is not read (its shape only), 96 bytes written; nothing backward */
    struct fm_attrs a = random_attrs(FM_DTYPE_FP32);
    a.lo = -1.0;
    a.hi = 3.0;
    fm_nid n = NODE(&t, FM_OP_RANDOM_UNIFORM_LIKE, "ul", &a, ACT(&t, "x", 2, 3, 4));
    struct fm_node_cost c = COST(&t, n);
    EXPECT(c, FWD, 0, 24, 24, 0, 0, 24);
    EXPECT_BYTES(c, FWD, 0, 96);
    EXPECT_NONE(c, BD);
    EXPECT_NONE(c, BW);
    assert_false(fm_graph_needs_grad(t.g, out_of(&t, n)));
    assert_true(fm_graph_needs_grad(t.g, fm_graph_node(t.g, n)->in[0]));
    /* RandomNormalLike of the same: 3 x 24 special, 3 x 24 mul, 24 add */
    a = random_attrs(FM_DTYPE_FP32);
    n = NODE(&t, FM_OP_RANDOM_NORMAL_LIKE, "nl", &a, fm_graph_node(t.g, n)->in[0]);
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 24, 72, 0, 0, 72);
    EXPECT_BYTES(c, FWD, 0, 96);
    EXPECT_NONE(c, BD);
    /* RandomUniform (3,5) from attributes alone: 15 each, 60 bytes written */
    a = random_attrs(FM_DTYPE_FP32);
    a.ints[3] = 3;
    a.ints[4] = 5;
    a.nints = 5;
    FM_ASSERT_OK(t.ctx, fm_graph_add_node(t.g, FM_OP_RANDOM_UNIFORM, "u", &a, NULL, 0, NULL, 1,
                                          NULL));
    n = (fm_nid)fm_graph_node_count(t.g) - 1;
    EXPECT_SHAPE(&t, out_of(&t, n), 3, 5);
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 15, 15, 0, 0, 15);
    EXPECT_BYTES(c, FWD, 0, 60);
    /* RandomNormal (2,2) fp64: 12 special, 12 mul, 4 add, 32 bytes written */
    a = random_attrs(FM_DTYPE_FP64);
    a.ints[3] = 2;
    a.ints[4] = 2;
    a.nints = 5;
    FM_ASSERT_OK(t.ctx, fm_graph_add_node(t.g, FM_OP_RANDOM_NORMAL, "n", &a, NULL, 0, NULL, 1,
                                          NULL));
    n = (fm_nid)fm_graph_node_count(t.g) - 1;
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 4, 12, 0, 0, 12);
    EXPECT_BYTES(c, FWD, 0, 32);
    /* Bernoulli of probabilities (4,5) that need a gradient: 20 draws, 20 cmp; reads 80,
     * writes 80; no gradient to the probabilities */
    a = random_attrs(FM_DTYPE_FP32);
    n = NODE(&t, FM_OP_BERNOULLI, "b", &a, ACT(&t, "p", 4, 5));
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 0, 0, 0, 20, 20);
    EXPECT_BYTES(c, FWD, 80, 80);
    EXPECT_NONE(c, BD);
    assert_false(fm_graph_needs_grad(t.g, out_of(&t, n)));
    /* Multinomial of (3, 10) log-probabilities, 4 samples, int64: per row 10 exp + 9 adds,
     * per sample 1 draw + 1 mul + ceil(log2 10) = 4 cmp: special 30 + 12 = 42, add 27, mul 12,
     * cmp 48; reads 120, writes 12 x 8 = 96 */
    a = random_attrs(FM_DTYPE_INT64);
    a.ints[3] = 4;
    a.nints = 4;
    n = NODE(&t, FM_OP_MULTINOMIAL, "m", &a, INPUT(&t, "logits", 3, 10));
    EXPECT_SHAPE(&t, out_of(&t, n), 3, 4);
    c = COST(&t, n);
    EXPECT(c, FWD, 0, 27, 12, 0, 48, 42);
    EXPECT_BYTES(c, FWD, 120, 96);
    /* in inference the same forward */
    struct fm_node_cost ci = cost_mode(&t, n, FM_MODE_INFER);
    EXPECT(ci, FWD, 0, 27, 12, 0, 48, 42);
    /* Multinomial into floats, and RandomUniformLike into ints, are refused */
    a = random_attrs(FM_DTYPE_FP32);
    a.ints[3] = 2;
    a.nints = 4;
    fm_tid lg = INPUT(&t, "logits2", 3, 10);
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_MULTINOMIAL, "m2", &a, &lg, 1, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "m2", "int32 or int64");
    a = random_attrs(FM_DTYPE_INT32);
    assert_int_equal(fm_graph_add_node(t.g, FM_OP_RANDOM_UNIFORM_LIKE, "u2", &a, &lg, 1, NULL,
                                       1, NULL), FM_ERR_SHAPE);
    EXPECT_MESSAGE(t.ctx, "u2", "float type");
    tg_free(&t);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_plain_bias_bytes),
        cmocka_unit_test(test_conv_no_bias_first_layer),
        cmocka_unit_test(test_conv_strided_padded_dilated),
        cmocka_unit_test(test_conv_grouped_depthwise),
        cmocka_unit_test(test_conv_1d),
        cmocka_unit_test(test_conv_transpose),
        cmocka_unit_test(test_conv_3d),
        cmocka_unit_test(test_linear_2d_3d_bytes),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_matmul_batched),
        cmocka_unit_test(test_matmul_broadcast_and_1d),
        cmocka_unit_test(test_batchnorm_train_infer),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_groupnorm_instancenorm),
        cmocka_unit_test(test_activations_elementwise),
        cmocka_unit_test(test_trig_and_rounding),
        cmocka_unit_test(test_activations_more),
        cmocka_unit_test(test_hardmax),
        cmocka_unit_test(test_isinf_isnan_bitshift),
        cmocka_unit_test(test_mod_sum_mean),
        cmocka_unit_test(test_reduce_l1_logsum),
        cmocka_unit_test(test_lp_mvn_lrn),
        cmocka_unit_test(test_lppool),
        cmocka_unit_test(test_det),
        cmocka_unit_test(test_random_ops),
        cmocka_unit_test(test_relu_bytes),
        cmocka_unit_test(test_prelu),
        cmocka_unit_test(test_softmax_logsoftmax),
        cmocka_unit_test(test_maxpool),
        cmocka_unit_test(test_avgpool_adaptive_global),
        cmocka_unit_test(test_pool_variants),
        cmocka_unit_test(test_eltwise_broadcast),
        cmocka_unit_test(test_data_movement),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_secondary_outputs),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_attention_mask),
        cmocka_unit_test(test_rnn_lstm),
        cmocka_unit_test(test_rnn_gru),
        cmocka_unit_test(test_rnn_activations),
        cmocka_unit_test(test_rnn_errors),
        cmocka_unit_test(test_cross_entropy),
        cmocka_unit_test(test_optimizer_sgd_adam),
        cmocka_unit_test(test_frozen_and_shared),
        cmocka_unit_test(test_activation_memory),
        cmocka_unit_test(test_overflow_names_layer),
        cmocka_unit_test(test_batch_scaling_resnet18),
        cmocka_unit_test(test_peer_tool_figures),
        cmocka_unit_test(test_quantized_ops),
        cmocka_unit_test(test_msft_ops),
        cmocka_unit_test(test_gather_elements_nd),
        cmocka_unit_test(test_scatter),
        cmocka_unit_test(test_onnx_losses),
        cmocka_unit_test(test_select),
        cmocka_unit_test(test_layout),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
