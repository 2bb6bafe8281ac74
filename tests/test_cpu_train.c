/* Training whole networks on the CPU backend (every op the counter knows):
 *  - the starting values a step draws: token ids below the table they index, masks of ones,
 *    class labels below the class count, constants from the file's own contents;
 *  - the memory check before anything runs: a step larger than --max-memory is refused and
 *    names the largest batch that fits, which is checked by counting it and the next;
 *  - --loss-on, the output a loss is added to when the policy's choice is not wanted;
 *  - sizes as people type them (--max-memory 8G).
 * Without oneDNN in the build the tests that run steps print a skip. */
#include "support.h"

#include "backend/backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct fm_shape dims2(int64_t a, int64_t b)
{
    struct fm_shape s;
    memset(&s, 0, sizeof(s));
    s.rank = 2;
    s.dims[0] = a;
    s.dims[1] = b;
    return s;
}

/* ---- starting values ---- */

/* ids (2, 8) through Unsqueeze into a Gather of a 37-row table; a mask input; a float constant
 * whose contents the graph states; labels of a 5-class loss. */
static void test_start_values(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "values", &g));
    fm_tid ids, mask, table, scale, labels, un, emb, cls;
    struct fm_shape s_ids = dims2(2, 8), s_tab = dims2(37, 5), s_one = {0};
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "ids", FM_ROLE_INPUT, FM_DTYPE_INT64, &s_ids, &ids));
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "attention_mask", FM_ROLE_INPUT, FM_DTYPE_INT64,
                                          &s_ids, &mask));
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "wte", FM_ROLE_PARAM, FM_DTYPE_FP32, &s_tab, &table));
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "scale", FM_ROLE_CONST, FM_DTYPE_FP32, &s_one,
                                          &scale));
    const double eight = 8.0;
    FM_ASSERT_OK(ctx, fm_graph_set_fvalue(g, scale, &eight, 1));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.ints[0] = 1;
    a.nints = 1;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_UNSQUEEZE, "un", &a, (fm_tid[]){ids}, 1,
                                        NULL, 1, &un));
    fm_attrs_init(&a);
    a.axis = 0;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_GATHER, "emb", &a, (fm_tid[]){table, un}, 2,
                                        NULL, 1, &emb));
    (void)emb;
    struct fm_shape s_lab = {1, {4}}, s_log = dims2(4, 5);
    fm_tid logits;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "logits", FM_ROLE_INPUT, FM_DTYPE_FP32, &s_log,
                                          &logits));
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "labels", FM_ROLE_INPUT, FM_DTYPE_INT64, &s_lab,
                                          &labels));
    fm_attrs_init(&a);
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_CROSS_ENTROPY, "loss", &a,
                                        (fm_tid[]){logits, labels}, 2, NULL, 1, &cls));
    (void)mask;
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));

    float v[64];
    /* ids: every one a row of the table, and not all the same */
    FM_ASSERT_OK(ctx, fm_init_values(ctx, g, ids, 1, v, 16));
    float lo = v[0], hi = v[0];
    for (int i = 0; i < 16; i++) {
        assert_true(v[i] >= 0 && v[i] < 37 && v[i] == floorf(v[i]));
        lo = fminf(lo, v[i]);
        hi = fmaxf(hi, v[i]);
    }
    assert_true(hi >= 2 && hi > lo);   /* drawn below 37, not below 2 (the fallback range) */
    /* the mask: all ones */
    FM_ASSERT_OK(ctx, fm_init_values(ctx, g, mask, 1, v, 16));
    for (int i = 0; i < 16; i++)
        assert_true(v[i] == 1.0f);
    /* the constant: the graph's 8, not a random number */
    FM_ASSERT_OK(ctx, fm_init_values(ctx, g, scale, 1, v, 1));
    assert_true(v[0] == 8.0f);
    /* labels: below the 5 classes */
    FM_ASSERT_OK(ctx, fm_init_values(ctx, g, labels, 1, v, 4));
    for (int i = 0; i < 4; i++)
        assert_true(v[i] >= 0 && v[i] < 5);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- memory before anything runs ---- */

static uint64_t train_memory(struct fm_ctx *ctx, const char *model, int64_t batch)
{
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = model;
    o.load.zoo.batch = batch;
    o.load.batch_given = true;
    struct fm_session *s = test_session_ok(ctx, &o);
    uint64_t m = 0;
    FM_ASSERT_OK(ctx, fm_counts_training_memory(s->counts, &m));
    fm_session_free(s);
    return m;
}

static void test_memory_refused(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    const double cap = 1e9;
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_MEASURE);
    o.model = "resnet18";
    o.load.zoo.batch = 64;
    o.load.batch_given = true;
    o.memory_cap = cap;
    o.run.steps = 1;
    o.run.warmup = 0;
    struct fm_session *s = NULL;
    assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_NOMEM);
    assert_null(s);
    EXPECT_MESSAGE(ctx, "resnet18", "batch 64", "--max-memory", "nothing was run",
                   "the largest batch that fits is");
    const char *at = strstr(fm_ctx_error(ctx), "the largest batch that fits is ");
    long best = strtol(at + strlen("the largest batch that fits is "), NULL, 10);
    assert_true(best > 1 && best < 64);
    /* the batch named fits, the next does not: counted, not extrapolated */
    assert_true((double)train_memory(ctx, "resnet18", best) <= cap);
    assert_true((double)train_memory(ctx, "resnet18", best + 1) > cap);
    assert_true((double)train_memory(ctx, "resnet18", 64) > cap);
    fm_ctx_free(ctx);
}

/* --loss-on: the output to train, or an error that lists the outputs */
static void test_loss_on(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_input_binding b = {"ids", {2, {2, 8}}};
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = FM_TEST_DATA "/onnx/gpt2_block_op17.onnx";
    o.load.bindings = &b;
    o.load.n_bindings = 1;
    o.loss_on = "logits";
    struct fm_session *s = NULL;
    assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_INVALID);
    assert_null(s);
    EXPECT_MESSAGE(ctx, "--loss-on", "'logits'", "its outputs: out");
    o.loss_on = "out";
    s = test_session_ok(ctx, &o);
    assert_int_equal(s->loss.n, 1);
    assert_int_equal(s->loss.loss[0].kind, FM_LOSS_NEXT_TOKEN);
    fm_session_free(s);
    fm_ctx_free(ctx);
}

static void test_bytes_parse(void **unused)
{
    (void)unused;
    const struct {
        const char *text;
        double bytes;
    } ok[] = {{"8G", 8e9}, {"8gb", 8e9}, {"512MB", 512e6}, {"1.5GiB", 1.5 * 1073741824.0},
              {"4096", 4096}, {"2KiB", 2048}, {"3TB", 3e12}, {"100B", 100}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        double b = -1;
        assert_true(fm_bytes_parse(ok[i].text, &b));
        assert_true(b == ok[i].bytes);
    }
    const char *bad[] = {"", "G", "8X", "-1G", "8 GBs", "eight"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        double b;
        assert_false(fm_bytes_parse(bad[i], &b));
    }
    /* the CLI: a bad size is a usage error that says what it expects */
    char *out = NULL, *err = NULL;
    assert_int_equal(test_run_cli("measure resnet18 --max-memory 8X", &out, &err), 2);
    assert_non_null(strstr(err, "--max-memory"));
    free(out);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_values),
        cmocka_unit_test(test_memory_refused),
        cmocka_unit_test(test_loss_on),
        cmocka_unit_test(test_bytes_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
