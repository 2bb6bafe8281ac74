/* Training what PyTorch 2's default exporter writes (torch.onnx.export(dynamo=True), training
 * mode; tests/data/onnx/train2/, made by tools/export_train2_fixtures.py with PyPI's torch 2.x)
 * on the CPU backend: each file trains four steps on one fixed batch of 2 and its loss falls,
 * and each holds the ops it is there for (so a frontend change that folds them away shows):
 *   mobilenet_v2_dyn       ReLU6 as Clip with tensor bounds, training BatchNorm
 *   stochastic_depth_dyn   torchvision's StochasticDepth: RandomUniformLike + Less, per sample
 *   bert_mask_dyn          an attention mask: IsNaN, Where, GatherND
 *   llama_mask_dyn         RoPE (Neg, Slice, Concat), grouped-query attention, GatherND, IsNaN
 *   gpt2_dyn               input_ids.view (a Reshape of int64), IsNaN, Where
 *   swin_t_dyn             Swin-T's shifted-window masks: ScatterND (slice_scatter)
 * Without oneDNN or the ONNX frontend in the build the test prints a skip. */
#include "support.h"

#include "backend/backend.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DIR FM_TEST_DATA "/onnx/train2/"

static bool has_op(const struct fm_graph *g, enum fm_op op, bool tensor_bounds)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        if (n->op == op && (!tensor_bounds || n->n_in > 1))
            return true;
    }
    return false;
}

static bool int_reshape(const struct fm_graph *g)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        if (n->op == FM_OP_RESHAPE && !fm_dtype_is_float(fm_graph_tensor(g, n->in[0])->dtype))
            return true;
    }
    return false;
}

static void test_dynamo_exports_train(void **unused)
{
    (void)unused;
    const struct fm_backend *be = fm_backend_cpu();
#ifndef FM_HAVE_ONNX
    be = NULL;
#endif
    if (!be) {
        printf("skipped: this build has no CPU backend or no ONNX frontend\n");
        skip();
    }
    static const struct {
        const char *name;
        enum fm_op ops[3];   /* FM_OP_UNKNOWN ends the list */
        bool clip_tensors, int_reshape;
    } cases[] = {
        /* ReLU6's bounds are CastLike'd constants, which the ONNX frontend folds into the
         * Clip's own bounds; bounds computed at run time are the backend golden cases
         * clip_tensor_bounds and clip_tensor_max_only */
        {"mobilenet_v2_dyn", {FM_OP_CLIP, FM_OP_BATCHNORM, FM_OP_UNKNOWN}, false, false},
        {"stochastic_depth_dyn", {FM_OP_RANDOM_UNIFORM_LIKE, FM_OP_LESS, FM_OP_BATCHNORM},
         false, false},
        {"bert_mask_dyn", {FM_OP_ISNAN, FM_OP_WHERE, FM_OP_GATHER_ND}, false, false},
        {"llama_mask_dyn", {FM_OP_GATHER_ND, FM_OP_ISNAN, FM_OP_NEG}, false, false},
        {"gpt2_dyn", {FM_OP_ISNAN, FM_OP_WHERE, FM_OP_UNKNOWN}, false, true},
        /* the shifted windows' mask (ScatterND of constants) folds in the ONNX frontend; what
         * the backend runs is the relative-position GatherND and stochastic depth */
        {"swin_t_dyn", {FM_OP_GATHER_ND, FM_OP_RANDOM_UNIFORM_LIKE, FM_OP_UNKNOWN}, false, false},
    };
    struct fm_ctx *ctx = test_ctx();
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), DIR "%s.onnx", cases[i].name);
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_MEASURE);
        o.model = path;
        o.peak = 1e11;   /* no probe */
        o.run.steps = 4;
        o.run.warmup = 0;
        o.run.threads = 2;
        struct fm_session *s = test_session_ok(ctx, &o);
        for (int k = 0; k < 3 && cases[i].ops[k] != FM_OP_UNKNOWN; k++) {
            if (!has_op(s->graph, cases[i].ops[k], cases[i].clip_tensors &&
                                                   cases[i].ops[k] == FM_OP_CLIP))
                fail_msg("%s: no %s node%s", cases[i].name, fm_op_name(cases[i].ops[k]),
                         cases[i].clip_tensors ? " with tensor bounds" : "");
        }
        if (cases[i].int_reshape && !int_reshape(s->graph))
            fail_msg("%s: no Reshape of an integer tensor", cases[i].name);
        const struct fm_measurement *m = s->measurement;
        printf("%-22s loss %.4f -> %.4f, step %.1f ms\n", cases[i].name, m->loss_first,
               m->loss_last, m->step_ms_median);
        if (!(isfinite(m->loss_first) && m->loss_last < m->loss_first))
            fail_msg("%s: the loss did not fall (%g -> %g)", cases[i].name, m->loss_first,
                     m->loss_last);
        fm_session_free(s);
    }
    fm_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dynamo_exports_train),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
