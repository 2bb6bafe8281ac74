/* Tests of the graph builder and its validation: unknown tensors, cycles, shape mismatches,
 * duplicate names, activations nobody produces, topological order of nodes added out of order,
 * which tensors need gradients, inputs too small for a built-in network, and the suggestions
 * for an unknown model name. Every failure must name what failed (the node or tensor). */
#include "support.h"
#include "ops/ops.h"   /* fm_node_cost: one node's rule on its own */

#include <stdio.h>
#include <string.h>

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

static fm_tid add_t(struct fm_ctx *ctx, struct fm_graph *g, const char *name, enum fm_role role,
                    struct fm_shape s)
{
    fm_tid id = FM_NONE;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, name, role, FM_DTYPE_FP32, &s, &id));
    return id;
}

static fm_tid add_unshaped(struct fm_ctx *ctx, struct fm_graph *g, const char *name)
{
    fm_tid id = FM_NONE;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor_unshaped(g, name, FM_ROLE_ACTIVATION, FM_DTYPE_FP32,
                                                   &id));
    return id;
}


struct fixture {
    struct fm_ctx *ctx;
    struct fm_graph *g;
};

static int setup(void **state)
{
    struct fixture *f = test_malloc(sizeof(*f));
    f->ctx = test_ctx();
    FM_ASSERT_OK(f->ctx, fm_graph_new(f->ctx, "g", &f->g));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    fm_graph_free(f->g);
    fm_ctx_free(f->ctx);
    test_free(f);
    return 0;
}

static void test_unknown_tensor_id(void **state)
{
    struct fixture *f = *state;
    fm_tid x = add_t(f->ctx, f->g, "x", FM_ROLE_INPUT, SHAPE(1, 4));
    fm_tid in[2] = {x, 999};
    assert_int_equal(fm_graph_add_node(f->g, FM_OP_ADD, "sum", NULL, in, 2, NULL, 1, NULL),
                     FM_ERR_GRAPH);
    EXPECT_MESSAGE(f->ctx, "sum");
    /* a negative id other than FM_NONE, and a missing required input */
    in[1] = -7;
    assert_int_equal(fm_graph_add_node(f->g, FM_OP_ADD, "sum2", NULL, in, 2, NULL, 1, NULL),
                     FM_ERR_GRAPH);
    EXPECT_MESSAGE(f->ctx, "sum2");
    in[1] = FM_NONE;
    assert_int_equal(fm_graph_add_node(f->g, FM_OP_ADD, "sum3", NULL, in, 2, NULL, 1, NULL),
                     FM_ERR_GRAPH);
    EXPECT_MESSAGE(f->ctx, "sum3", "missing");
    /* the wrong number of inputs */
    assert_int_equal(fm_graph_add_node(f->g, FM_OP_ADD, "sum4", NULL, in, 1, NULL, 1, NULL),
                     FM_ERR_GRAPH);
    EXPECT_MESSAGE(f->ctx, "sum4");
    assert_int_equal(fm_graph_node_count(f->g), 0);
}

static void test_cycle_names_node(void **state)
{
    struct fixture *f = *state;
    /* a = Add(x, b); b = Relu(a): a cycle through both nodes */
    fm_tid x = add_t(f->ctx, f->g, "x", FM_ROLE_INPUT, SHAPE(2, 3));
    fm_tid a = add_unshaped(f->ctx, f->g, "a"), b = add_unshaped(f->ctx, f->g, "b");
    fm_tid in1[2] = {x, b};
    FM_ASSERT_OK(f->ctx,
                 fm_graph_add_node_bound(f->g, FM_OP_ADD, "mix", NULL, in1, 2, &a, 1, NULL));
    FM_ASSERT_OK(f->ctx,
                 fm_graph_add_node_bound(f->g, FM_OP_RELU, "rect", NULL, &a, 1, &b, 1, NULL));
    assert_int_equal(fm_graph_finalize(f->g), FM_ERR_GRAPH);
    const char *msg = fm_ctx_error(f->ctx);
    assert_non_null(strstr(msg, "cycle"));
    assert_true(strstr(msg, "'mix'") || strstr(msg, "'rect'"));
    assert_null(fm_graph_topo_order(f->g));   /* not finalized: nothing may count it */
    struct fm_count_opts o;
    fm_count_opts_init(&o);
    struct fm_counts *c = NULL;
    assert_int_equal(fm_count(f->ctx, f->g, &o, &c), FM_ERR_GRAPH);
    assert_null(c);
}

static void test_self_loop_and_double_producer(void **state)
{
    struct fixture *f = *state;
    fm_tid a = add_unshaped(f->ctx, f->g, "a");
    /* a node reading its own output */
    FM_ASSERT_OK(f->ctx,
                 fm_graph_add_node_bound(f->g, FM_OP_RELU, "loop", NULL, &a, 1, &a, 1, NULL));
    assert_int_equal(fm_graph_finalize(f->g), FM_ERR_GRAPH);
    EXPECT_MESSAGE(f->ctx, "cycle", "loop");
    /* a tensor produced twice */
    fm_tid x = add_t(f->ctx, f->g, "x", FM_ROLE_INPUT, SHAPE(2));
    assert_int_equal(fm_graph_add_node_bound(f->g, FM_OP_RELU, "again", NULL, &x, 1, &a, 1, NULL),
                     FM_ERR_GRAPH);
    EXPECT_MESSAGE(f->ctx, "again", "'a'", "loop");
    /* an output that is not an activation */
    assert_int_equal(fm_graph_add_node_bound(f->g, FM_OP_RELU, "into_input", NULL, &a, 1, &x, 1,
                                             NULL),
                     FM_ERR_GRAPH);
    EXPECT_MESSAGE(f->ctx, "into_input", "'x'");
}

static void test_shape_mismatch_names_node(void **state)
{
    struct fixture *f = *state;
    struct fm_ctx *ctx = f->ctx;
    /* conv: 3 input channels, a weight for 5 */
    fm_tid x = add_t(ctx, f->g, "x", FM_ROLE_INPUT, SHAPE(1, 3, 8, 8));
    fm_tid w = add_t(ctx, f->g, "w", FM_ROLE_PARAM, SHAPE(4, 5, 3, 3));
    fm_tid in[2] = {x, w};
    assert_int_equal(fm_graph_add_node(f->g, FM_OP_CONV, "stem", NULL, in, 2, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(ctx, "'stem'", "3 channels");
    /* grouped: 4 channels, groups 2 need a weight of 2 per group */
    fm_tid x4 = add_t(ctx, f->g, "x4", FM_ROLE_INPUT, SHAPE(1, 4, 8, 8));
    fm_tid wg = add_t(ctx, f->g, "wg", FM_ROLE_PARAM, SHAPE(6, 4, 3, 3));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.groups = 2;
    fm_tid ing[2] = {x4, wg};
    assert_int_equal(fm_graph_add_node(f->g, FM_OP_CONV, "grp", &a, ing, 2, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(ctx, "'grp'");
    /* matmul: (2,3) @ (4,5) */
    fm_tid m1 = add_t(ctx, f->g, "m1", FM_ROLE_INPUT, SHAPE(2, 3));
    fm_tid m2 = add_t(ctx, f->g, "m2", FM_ROLE_INPUT, SHAPE(4, 5));
    fm_tid inm[2] = {m1, m2};
    assert_int_equal(fm_graph_add_node(f->g, FM_OP_MATMUL, "proj", NULL, inm, 2, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(ctx, "'proj'", "inner dims");
    /* matmul batch dims that do not broadcast: (2,3,4) @ (5,4,6) */
    fm_tid b1 = add_t(ctx, f->g, "b1", FM_ROLE_INPUT, SHAPE(2, 3, 4));
    fm_tid b2 = add_t(ctx, f->g, "b2", FM_ROLE_INPUT, SHAPE(5, 4, 6));
    fm_tid inb[2] = {b1, b2};
    assert_int_equal(fm_graph_add_node(f->g, FM_OP_MATMUL, "bmm", NULL, inb, 2, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(ctx, "'bmm'", "broadcast");
    /* add: (2,3) + (4) */
    fm_tid e1 = add_t(ctx, f->g, "e1", FM_ROLE_INPUT, SHAPE(2, 3));
    fm_tid e2 = add_t(ctx, f->g, "e2", FM_ROLE_INPUT, SHAPE(4));
    fm_tid ine[2] = {e1, e2};
    assert_int_equal(fm_graph_add_node(f->g, FM_OP_ADD, "residual", NULL, ine, 2, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(ctx, "'residual'", "broadcast");
    /* linear: 3 features into a weight for 5 */
    fm_tid lw = add_t(ctx, f->g, "lw", FM_ROLE_PARAM, SHAPE(7, 5));
    fm_tid inl[2] = {e1, lw};
    assert_int_equal(fm_graph_add_node(f->g, FM_OP_LINEAR, "head", NULL, inl, 2, NULL, 1, NULL),
                     FM_ERR_SHAPE);
    EXPECT_MESSAGE(ctx, "'head'");
    /* rejected nodes are not in the graph, and their output names are free again */
    assert_int_equal(fm_graph_node_count(f->g), 0);
    assert_int_equal(fm_graph_find_tensor(f->g, "stem"), FM_NONE);
    /* a shape mismatch found only at finalize (inputs bound later) also names the node */
    fm_tid late = add_unshaped(ctx, f->g, "late");
    fm_tid inr = m1;
    FM_ASSERT_OK(ctx, fm_graph_add_node_bound(f->g, FM_OP_RELU, "r", NULL, &inr, 1, &late, 1,
                                              NULL));
    fm_tid inlate[2] = {late, m2};
    FM_ASSERT_OK(ctx, fm_graph_add_node(f->g, FM_OP_MATMUL, "late_mm", NULL, inlate, 2, NULL, 1,
                                        NULL));
    assert_int_equal(fm_graph_finalize(f->g), FM_ERR_SHAPE);
    EXPECT_MESSAGE(ctx, "'late_mm'");
}

/* A second name for a tensor (a Loop's output in an ONNX file): found, reserved, never
 * shadowing a tensor's own name. */
static void test_alias(void **state)
{
    struct fixture *f = *state;
    fm_tid x = add_t(f->ctx, f->g, "x", FM_ROLE_INPUT, SHAPE(2, 3));
    fm_tid y = FM_NONE;
    FM_ASSERT_OK(f->ctx, fm_graph_add_node(f->g, FM_OP_RELU, "y/iter1/node0", NULL, &x, 1, NULL,
                                           1, &y));
    assert_int_equal(fm_graph_find_tensor(f->g, "y"), FM_NONE);
    FM_ASSERT_OK(f->ctx, fm_graph_add_alias(f->g, "y", y));
    assert_int_equal(fm_graph_find_tensor(f->g, "y"), y);
    assert_int_equal(fm_graph_find_tensor(f->g, "y/iter1/node0"), y);
    /* the name is taken: by another alias, by a new tensor; a tensor's name cannot be one */
    assert_int_equal(fm_graph_add_alias(f->g, "y", x), FM_ERR_GRAPH);
    EXPECT_MESSAGE(f->ctx, "'y'");
    assert_int_equal(fm_graph_add_alias(f->g, "x", y), FM_ERR_GRAPH);
    struct fm_shape s = SHAPE(3);
    assert_int_equal(fm_graph_add_tensor(f->g, "y", FM_ROLE_PARAM, FM_DTYPE_FP32, &s, NULL),
                     FM_ERR_GRAPH);
    assert_int_equal(fm_graph_add_alias(f->g, "z", 99), FM_ERR_GRAPH);
    FM_ASSERT_OK(f->ctx, fm_graph_finalize(f->g));
    assert_int_equal(fm_graph_find_tensor(f->g, "y"), y);
}

static void test_duplicate_names(void **state)
{
    struct fixture *f = *state;
    add_t(f->ctx, f->g, "x", FM_ROLE_INPUT, SHAPE(2, 3));
    struct fm_shape s = SHAPE(3);
    assert_int_equal(fm_graph_add_tensor(f->g, "x", FM_ROLE_PARAM, FM_DTYPE_FP32, &s, NULL),
                     FM_ERR_GRAPH);
    EXPECT_MESSAGE(f->ctx, "'x'");
    assert_int_equal(fm_graph_add_tensor_unshaped(f->g, "x", FM_ROLE_ACTIVATION, FM_DTYPE_FP32,
                                                  NULL),
                     FM_ERR_GRAPH);
    /* an output name that collides with an existing tensor */
    fm_tid x = fm_graph_find_tensor(f->g, "x");
    const char *names[1] = {"x"};
    fm_tid out = 77;
    assert_int_equal(fm_graph_add_node(f->g, FM_OP_RELU, "relu", NULL, &x, 1, names, 1, &out),
                     FM_ERR_GRAPH);
    EXPECT_MESSAGE(f->ctx, "'x'");
    /* the failed call left nothing behind (a node without outputs used to crash finalize) and
     * did not write its OUT parameter */
    assert_int_equal(fm_graph_node_count(f->g), 0);
    assert_int_equal(out, 77);
    FM_ASSERT_OK(f->ctx, fm_graph_add_node(f->g, FM_OP_RELU, "relu", NULL, &x, 1, NULL, 1, &out));
    FM_ASSERT_OK(f->ctx, fm_graph_finalize(f->g));
    assert_string_equal(fm_graph_tensor(f->g, out)->name, "relu");
    /* an empty name */
    assert_int_equal(fm_graph_add_tensor(f->g, "", FM_ROLE_PARAM, FM_DTYPE_FP32, &s, NULL),
                     FM_ERR_GRAPH);
    assert_int_equal(fm_graph_tensor_count(f->g), 2);   /* x and relu */
    /* the index still finds what it holds after growing past its first size */
    for (int i = 0; i < 200; i++) {
        char nm[32];
        snprintf(nm, sizeof(nm), "t%d", i);
        add_t(f->ctx, f->g, nm, FM_ROLE_PARAM, SHAPE(1));
    }
    assert_int_equal(fm_graph_find_tensor(f->g, "x"), x);
    assert_int_equal(fm_graph_find_tensor(f->g, "t137"), x + 2 + 137);
    assert_int_equal(fm_graph_find_tensor(f->g, "t200"), FM_NONE);
}

static void test_consumed_never_produced(void **state)
{
    struct fixture *f = *state;
    fm_tid ghost = add_unshaped(f->ctx, f->g, "ghost");
    FM_ASSERT_OK(f->ctx,
                 fm_graph_add_node(f->g, FM_OP_RELU, "reader", NULL, &ghost, 1, NULL, 1, NULL));
    assert_int_equal(fm_graph_finalize(f->g), FM_ERR_GRAPH);
    EXPECT_MESSAGE(f->ctx, "'reader'", "'ghost'");
}

static void test_input_without_shape(void **state)
{
    struct fixture *f = *state;
    fm_tid x = FM_NONE;
    FM_ASSERT_OK(f->ctx, fm_graph_add_tensor_unshaped(f->g, "tokens", FM_ROLE_INPUT,
                                                      FM_DTYPE_FP32, &x));
    FM_ASSERT_OK(f->ctx, fm_graph_add_node(f->g, FM_OP_RELU, "r", NULL, &x, 1, NULL, 1, NULL));
    assert_int_equal(fm_graph_finalize(f->g), FM_ERR_SHAPE);
    EXPECT_MESSAGE(f->ctx, "'tokens'", "fm_load_opts.bindings");
    /* binding the shape makes the graph valid, and the output shape follows */
    struct fm_shape s = SHAPE(2, 7);
    FM_ASSERT_OK(f->ctx, fm_graph_set_shape(f->g, x, &s));
    FM_ASSERT_OK(f->ctx, fm_graph_finalize(f->g));
    const struct fm_tensor *y = fm_graph_tensor(f->g, fm_graph_node(f->g, 0)->out[0]);
    assert_true(y->shape_known);
    assert_int_equal(y->shape.rank, 2);
    assert_int_equal(y->shape.dims[1], 7);
}

/* Rebinding an input after its consumers were shaped (a --batch given after loading) shapes
 * them again: no stale output shapes. */
static void test_reshaped_input_reinfers(void **state)
{
    struct fixture *f = *state;
    fm_tid x = add_t(f->ctx, f->g, "x", FM_ROLE_INPUT, SHAPE(1, 3, 8, 8));
    fm_tid w = add_t(f->ctx, f->g, "w", FM_ROLE_PARAM, SHAPE(4, 3, 3, 3));
    fm_tid in[2] = {x, w}, y = FM_NONE, z = FM_NONE;
    FM_ASSERT_OK(f->ctx, fm_graph_add_node(f->g, FM_OP_CONV, "conv", NULL, in, 2, NULL, 1, &y));
    FM_ASSERT_OK(f->ctx, fm_graph_add_node(f->g, FM_OP_RELU, "relu", NULL, &y, 1, NULL, 1, &z));
    FM_ASSERT_OK(f->ctx, fm_graph_finalize(f->g));
    assert_int_equal(fm_graph_tensor(f->g, z)->shape.dims[2], 6);   /* 8 - 3 + 1 */
    struct fm_shape s = SHAPE(5, 3, 10, 12);
    FM_ASSERT_OK(f->ctx, fm_graph_set_shape(f->g, x, &s));
    FM_ASSERT_OK(f->ctx, fm_graph_finalize(f->g));
    const struct fm_tensor *t = fm_graph_tensor(f->g, z);
    assert_int_equal(t->shape.dims[0], 5);
    assert_int_equal(t->shape.dims[2], 8);    /* 10 - 3 + 1 */
    assert_int_equal(t->shape.dims[3], 10);   /* 12 - 3 + 1 */
}

static void test_empty_graph_and_unfinalized_count(void **state)
{
    struct fixture *f = *state;
    assert_int_equal(fm_graph_finalize(f->g), FM_ERR_GRAPH);
    EXPECT_MESSAGE(f->ctx, "no nodes");
    fm_tid x = add_t(f->ctx, f->g, "x", FM_ROLE_INPUT, SHAPE(2));
    FM_ASSERT_OK(f->ctx, fm_graph_add_node(f->g, FM_OP_RELU, "r", NULL, &x, 1, NULL, 1, NULL));
    struct fm_count_opts o;
    fm_count_opts_init(&o);
    struct fm_node_cost nc;
    assert_int_equal(fm_node_cost(f->ctx, f->g, 0, &o, &nc), FM_ERR_GRAPH);
    FM_ASSERT_OK(f->ctx, fm_graph_finalize(f->g));
    FM_ASSERT_OK(f->ctx, fm_node_cost(f->ctx, f->g, 0, &o, &nc));
    assert_int_equal(fm_node_cost(f->ctx, f->g, 5, &o, &nc), FM_ERR_INVALID);
    /* adding a node un-finalizes the graph */
    FM_ASSERT_OK(f->ctx, fm_graph_add_node(f->g, FM_OP_RELU, "r2", NULL, &x, 1, NULL, 1, NULL));
    assert_null(fm_graph_topo_order(f->g));
}

static void test_topological_order(void **state)
{
    struct fixture *f = *state;
    struct fm_ctx *ctx = f->ctx;
    /* x -> first -> t1 -> second -> t2 -> third -> t3, added third, second, first */
    fm_tid x = add_t(ctx, f->g, "x", FM_ROLE_INPUT, SHAPE(2, 3));
    fm_tid t1 = add_unshaped(ctx, f->g, "t1"), t2 = add_unshaped(ctx, f->g, "t2");
    fm_tid t3 = add_unshaped(ctx, f->g, "t3");
    fm_nid third, second, first;
    FM_ASSERT_OK(ctx, fm_graph_add_node_bound(f->g, FM_OP_SIGMOID, "third", NULL, &t2, 1, &t3, 1,
                                              &third));
    FM_ASSERT_OK(ctx, fm_graph_add_node_bound(f->g, FM_OP_TANH, "second", NULL, &t1, 1, &t2, 1,
                                              &second));
    FM_ASSERT_OK(ctx, fm_graph_add_node_bound(f->g, FM_OP_RELU, "first", NULL, &x, 1, &t1, 1,
                                              &first));
    /* an independent node added last stays after the chain's ready nodes only by id order */
    FM_ASSERT_OK(ctx, fm_graph_add_node(f->g, FM_OP_RELU, "side", NULL, &x, 1, NULL, 1, NULL));
    FM_ASSERT_OK(ctx, fm_graph_finalize(f->g));
    const fm_nid *order = fm_graph_topo_order(f->g);
    assert_non_null(order);
    size_t pos[4];
    for (size_t i = 0; i < 4; i++)
        pos[order[i]] = i;
    assert_true(pos[first] < pos[second]);
    assert_true(pos[second] < pos[third]);
    /* every node appears once */
    assert_int_equal(pos[0] + pos[1] + pos[2] + pos[3], 0 + 1 + 2 + 3);
    /* shapes were inferred along the order */
    assert_int_equal(fm_graph_tensor(f->g, t3)->shape.rank, 2);
    assert_true(fm_graph_tensor(f->g, t3)->shape_known);
    /* finalize is idempotent */
    FM_ASSERT_OK(ctx, fm_graph_finalize(f->g));
    /* a graph built in order keeps its order */
    struct fm_graph *g2 = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "chain", &g2));
    struct fm_shape s = SHAPE(4);
    fm_tid y = FM_NONE;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g2, "y", FM_ROLE_INPUT, FM_DTYPE_FP32, &s, &y));
    for (int i = 0; i < 5; i++) {
        char nm[16];
        snprintf(nm, sizeof(nm), "n%d", i);
        FM_ASSERT_OK(ctx, fm_graph_add_node(g2, FM_OP_RELU, nm, NULL, &y, 1, NULL, 1, &y));
    }
    FM_ASSERT_OK(ctx, fm_graph_finalize(g2));
    for (int i = 0; i < 5; i++)
        assert_int_equal(fm_graph_topo_order(g2)[i], i);
    fm_graph_free(g2);
}

static void test_needs_grad(void **state)
{
    struct fixture *f = *state;
    struct fm_ctx *ctx = f->ctx;
    fm_tid x = add_t(ctx, f->g, "x", FM_ROLE_INPUT, SHAPE(1, 3, 8, 8));
    fm_tid w = add_t(ctx, f->g, "w", FM_ROLE_PARAM, SHAPE(4, 3, 3, 3));
    fm_tid frozen = add_t(ctx, f->g, "frozen", FM_ROLE_PARAM, SHAPE(4, 3, 3, 3));
    fm_graph_set_trainable(f->g, frozen, false);
    fm_tid in[2] = {x, w}, inf[2] = {x, frozen};
    fm_tid y = FM_NONE, z = FM_NONE, yz = FM_NONE, r = FM_NONE, zr = FM_NONE;
    FM_ASSERT_OK(ctx, fm_graph_add_node(f->g, FM_OP_CONV, "conv", NULL, in, 2, NULL, 1, &y));
    FM_ASSERT_OK(ctx, fm_graph_add_node(f->g, FM_OP_CONV, "conv_f", NULL, inf, 2, NULL, 1, &z));
    fm_tid iyz[2] = {y, z};
    FM_ASSERT_OK(ctx, fm_graph_add_node(f->g, FM_OP_ADD, "sum", NULL, iyz, 2, NULL, 1, &yz));
    FM_ASSERT_OK(ctx, fm_graph_add_node(f->g, FM_OP_RELU, "rx", NULL, &x, 1, NULL, 1, &r));
    FM_ASSERT_OK(ctx, fm_graph_add_node(f->g, FM_OP_RELU, "rz", NULL, &z, 1, NULL, 1, &zr));
    /* labels: integers never need a gradient */
    struct fm_shape ls = SHAPE(1);
    fm_tid labels = FM_NONE;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(f->g, "labels", FM_ROLE_INPUT, FM_DTYPE_INT64, &ls,
                                          &labels));
    FM_ASSERT_OK(ctx, fm_graph_finalize(f->g));
    assert_false(fm_graph_needs_grad(f->g, x));        /* the network input */
    assert_true(fm_graph_needs_grad(f->g, w));         /* trainable parameter */
    assert_false(fm_graph_needs_grad(f->g, frozen));   /* frozen parameter */
    assert_true(fm_graph_needs_grad(f->g, y));         /* computed from w */
    assert_false(fm_graph_needs_grad(f->g, z));        /* from x and a frozen weight */
    assert_true(fm_graph_needs_grad(f->g, yz));        /* one operand needs it */
    assert_false(fm_graph_needs_grad(f->g, r));        /* from the input alone */
    assert_false(fm_graph_needs_grad(f->g, zr));
    assert_false(fm_graph_needs_grad(f->g, labels));
    assert_false(fm_graph_needs_grad(f->g, 12345));    /* out of range: false, no crash */
    /* unfreezing propagates after the next finalize */
    fm_graph_set_trainable(f->g, frozen, true);
    FM_ASSERT_OK(ctx, fm_graph_finalize(f->g));
    assert_true(fm_graph_needs_grad(f->g, z));
    assert_true(fm_graph_needs_grad(f->g, zr));
}

static void test_input_too_small_zoo(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_zoo_opts zo;
    fm_zoo_opts_init(&zo);
    struct fm_graph *g = NULL;
    /* vgg16 halves 16 four times to 1; its fifth 2x2 max pool, features.30 in torchvision's
     * numbering (13 convs with their ReLUs and 5 pools), would output 0 */
    zo.input = SHAPE(3, 16, 16);
    assert_int_equal(fm_zoo_build(ctx, "vgg16", &zo, &g), FM_ERR_SHAPE);
    assert_null(g);
    EXPECT_MESSAGE(ctx, "'features.30'", "too small");
    /* alexnet: conv 11x11 s4 p2 takes 8 to floor((8+4-11)/4)+1 = 1; the 3x3 pool after it,
     * features.2, does not fit */
    zo.input = SHAPE(3, 8, 8);
    assert_int_equal(fm_zoo_build(ctx, "alexnet", &zo, &g), FM_ERR_SHAPE);
    EXPECT_MESSAGE(ctx, "'features.2'", "too small");
    /* resnet18 never reaches zero: every strided conv and its max pool are padded so that a
     * 1x1 map stays 1x1 (PyTorch runs it at 8x8 too); the count is still valid */
    zo.input = SHAPE(3, 8, 8);
    FM_ASSERT_OK(ctx, fm_zoo_build(ctx, "resnet18", &zo, &g));
    fm_graph_free(g);
    g = NULL;
    /* a hand-built stack of 3x3 convs without padding: 5 -> 3 -> 1 -> nothing */
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "stack", &g));
    struct fm_shape xs = SHAPE(1, 1, 5, 5), ws = SHAPE(1, 1, 3, 3);
    fm_tid x = FM_NONE;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "x", FM_ROLE_INPUT, FM_DTYPE_FP32, &xs, &x));
    enum fm_status st = FM_OK;
    const char *names[] = {"c1", "c2", "c3"};
    for (int i = 0; i < 3 && st == FM_OK; i++) {
        fm_tid w = FM_NONE;
        char wn[8];
        snprintf(wn, sizeof(wn), "w%d", i);
        FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, wn, FM_ROLE_PARAM, FM_DTYPE_FP32, &ws, &w));
        fm_tid in[2] = {x, w};
        st = fm_graph_add_node(g, FM_OP_CONV, names[i], NULL, in, 2, NULL, 1, &x);
    }
    assert_int_equal(st, FM_ERR_SHAPE);
    EXPECT_MESSAGE(ctx, "'c3'", "reaches zero");
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

static void test_unknown_model_suggests(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    assert_int_equal(fm_zoo_build(ctx, "resnet5", NULL, &g), FM_ERR_NOT_FOUND);
    assert_null(g);
    EXPECT_MESSAGE(ctx, "'resnet5'", "did you mean", "resnet50");
    const char *near[3];
    size_t n = fm_zoo_suggest("resnet5", near, 3);
    assert_true(n >= 1);
    assert_string_equal(near[0], "resnet50");   /* one edit away, and a prefix */
    n = fm_zoo_suggest("mobilenetv2", near, 3);
    assert_true(n >= 1);
    assert_string_equal(near[0], "mobilenet_v2");
    /* names are case-insensitive; every table entry is found by its own name */
    assert_non_null(fm_zoo_find("ResNet50"));
    for (size_t i = 0; i < fm_zoo_count(); i++)
        assert_ptr_equal(fm_zoo_find(fm_zoo_get(i)->name), fm_zoo_get(i));
    assert_null(fm_zoo_get(fm_zoo_count()));
    fm_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_unknown_tensor_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cycle_names_node, setup, teardown),
        cmocka_unit_test_setup_teardown(test_self_loop_and_double_producer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shape_mismatch_names_node, setup, teardown),
        cmocka_unit_test_setup_teardown(test_duplicate_names, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alias, setup, teardown),
        cmocka_unit_test_setup_teardown(test_consumed_never_produced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_input_without_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reshaped_input_reinfers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_graph_and_unfinalized_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topological_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_needs_grad, setup, teardown),
        cmocka_unit_test(test_input_too_small_zoo),
        cmocka_unit_test(test_unknown_model_suggests),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
