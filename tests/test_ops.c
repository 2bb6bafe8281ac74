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
    EXPECT_BYTES(c, BW, E * 4 + 6 * 8, E * 4);
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

int main(void)
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
        cmocka_unit_test(test_relu_bytes),
        cmocka_unit_test(test_prelu),
        cmocka_unit_test(test_softmax_logsoftmax),
        cmocka_unit_test(test_maxpool),
        cmocka_unit_test(test_avgpool_adaptive_global),
        cmocka_unit_test(test_pool_variants),
        cmocka_unit_test(test_eltwise_broadcast),
        cmocka_unit_test(test_data_movement),
        cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_attention_mask),
        cmocka_unit_test(test_cross_entropy),
        cmocka_unit_test(test_optimizer_sgd_adam),
        cmocka_unit_test(test_frozen_and_shared),
        cmocka_unit_test(test_activation_memory),
        cmocka_unit_test(test_overflow_names_layer),
        cmocka_unit_test(test_batch_scaling_resnet18),
        cmocka_unit_test(test_peer_tool_figures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
