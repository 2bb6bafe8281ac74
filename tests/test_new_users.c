/* What a new user hit first, one test per finding (each names its item):
 *  1. predict --gpus N: the run's steps and times follow the data-parallel step (a global batch
 *     of batch x N), the one-GPU figures kept under their own name;
 *  2. the memory check: needed against the device's memory, and the largest batch that fits;
 *  3. storage follows the precision (mixed precision for fp16/bf16), --dtype overrides, fp64;
 *  4. --peak and --step-time take units; a peak below 1e9 FLOP/s is a usage error;
 *  5. device names as nvidia-smi and PyTorch print them, notes for ambiguous ones;
 *  6. an --input that looks like HxWxC is a usage error;
 *  7. a mistyped command, models as CSV/JSON with MACs, warnings for ignored options;
 *  11. an ONNX file exported for inference is said to be one. */
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

#define DATA FM_TEST_DATA "/onnx/"

static void expect_in(const char *text, const char *word)
{
    if (!strstr(text, word))
        fail_msg("expected '%s' in:\n%s", word, text);
}

static fm_nid node_named(const struct fm_graph *g, const char *name)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++)
        if (strcmp(fm_graph_node(g, (fm_nid)i)->name, name) == 0)
            return (fm_nid)i;
    fail_msg("no node '%s'", name);
    return FM_NONE;
}

static bool close_to(double a, double b, double rel)
{
    return fabs(a - b) <= rel * fabs(b);
}

/* ---- 1. data parallelism: the run follows the N-GPU step ---- */

static void test_1_gpus_epoch(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_PREDICT);
    o.model = "resnet50";
    o.device = "h100";
    o.load.zoo.batch = 256;
    o.load.batch_given = true;
    o.gpus = 8;
    o.dataset_size = 1281167;
    o.epochs = 90;
    struct fm_session *s = test_session_ok(ctx, &o);
    const struct fm_run_estimate *r = &s->run, *one = &s->run_1gpu;
    assert_true(s->have_dp);
    assert_int_equal(r->gpus, 8);
    assert_int_equal(r->global_batch, 2048);
    assert_int_equal(r->steps_per_epoch, 626);      /* ceil(1281167 / (8 x 256)) */
    assert_int_equal(one->gpus, 1);
    assert_int_equal(one->steps_per_epoch, 5005);   /* ceil(1281167 / 256) */
    uint64_t step = 0, opt = fm_work_flops(&s->counts->total[FM_PHASE_OPTIMIZER]);
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
        step += fm_work_flops(&s->counts->total[ph]);
    assert_true(one->step_flops == (double)step);
    assert_true(r->step_flops == 8.0 * (double)step);
    /* every replica runs its optimizer each step; forward and backward scale with samples */
    double per_sample = (double)(step - opt) / 256.0;
    assert_true(close_to(r->epoch_flops, per_sample * 1281167.0 + (double)opt * 8 * 626, 1e-12));
    for (int b = 0; b < FM_BOUND_COUNT; b++) {
        /* the step is the data-parallel one, the all-reduce overlapped with backward */
        assert_true(r->step_s[b] == s->dp.step_overlap[b]);
        assert_true(close_to(r->epoch_s[b], s->dp.step_overlap[b] * 626, 1e-12));
        assert_true(close_to(r->total_s[b], r->epoch_s[b] * 90, 1e-12));
        assert_true(close_to(r->samples_per_s[b], 2048 / s->dp.step_overlap[b], 1e-12));
        assert_true(close_to(one->epoch_s[b], s->dp.step_1[b] * 5005, 1e-9));
        /* about an eighth of the one-GPU time: 626/5005 steps, each a little longer */
        double ratio = r->total_s[b] / one->total_s[b];
        if (!(ratio > 626.0 / 5005 && ratio < 626.0 / 5005 * 1.05))
            fail_msg("8 GPUs take %.4f of one GPU's time", ratio);
        /* utilization per GPU: the same as one GPU's up to the all-reduce's share */
        assert_true(r->utilization[b] <= one->utilization[b] * (1 + 1e-12));
    }
    fm_session_free(s);

    /* the table and JSON say the same */
    char *out;
    assert_int_equal(test_run_cli("predict resnet50 --device h100 --batch 256 --gpus 8 "
                                  "--dataset-size 1281167 --epochs 90 --summary",
                                  &out, NULL),
                     0);
    expect_in(out, "626 steps of 2048");
    expect_in(out, "5005 steps of 256");
    expect_in(out, "prediction on 8 GPUs");
    free(out);
#ifdef FM_HAVE_CJSON
    assert_int_equal(test_run_cli("predict resnet50 --device h100 --batch 256 --gpus 8 "
                                  "--dataset-size 1281167 --epochs 90 --format json",
                                  &out, NULL),
                     0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    const cJSON *run = cJSON_GetObjectItem(j, "run");
    assert_int_equal(cJSON_GetObjectItem(run, "steps_per_epoch")->valuedouble, 626);
    assert_int_equal(cJSON_GetObjectItem(run, "global_batch")->valuedouble, 2048);
    const cJSON *j1 = cJSON_GetObjectItem(run, "one_gpu");
    assert_non_null(j1);
    assert_int_equal(cJSON_GetObjectItem(j1, "steps_per_epoch")->valuedouble, 5005);
    double t8 = cJSON_GetObjectItem(cJSON_GetObjectItem(run, "total_s"), "roofline")->valuedouble;
    double t1 = cJSON_GetObjectItem(cJSON_GetObjectItem(j1, "total_s"), "roofline")->valuedouble;
    assert_true(t8 < t1 / 7.5 && t8 > t1 / 8.5);
    cJSON_Delete(j);
    free(out);
#endif
    /* one GPU: no one_gpu object, the run is the one-GPU run */
    fm_session_opts_init(&o, FM_TASK_PREDICT);
    o.model = "resnet50";
    o.device = "h100";
    o.load.zoo.batch = 256;
    o.dataset_size = 1281167;
    s = test_session_ok(ctx, &o);
    assert_int_equal(s->run.steps_per_epoch, 5005);
    assert_int_equal(s->run.global_batch, 256);
    assert_false(s->have_dp);
    fm_session_free(s);
    fm_ctx_free(ctx);
}

/* ---- 2. does the step fit the device ---- */

static uint64_t memory_of(struct fm_ctx *ctx, const char *model, int64_t batch, bool infer)
{
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = model;
    o.load.zoo.batch = batch;
    o.load.batch_given = true;
    if (infer)
        o.count.mode = FM_MODE_INFER;
    struct fm_session *s = test_session_ok(ctx, &o);
    uint64_t m = 0;
    FM_ASSERT_OK(ctx, fm_counts_training_memory(s->counts, &m));
    fm_session_free(s);
    return m;
}

static void test_2_memory(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    const struct {
        enum fm_task task;
        const char *model, *device;
        int64_t batch;
        bool infer, fits;
        double device_gb;
    } cases[] = {
        /* the two: 124 GB on an 80 GB card, 88 GB on a 24 GB board */
        {FM_TASK_PREDICT, "efficientnet_b7", "h100", 32, false, false, 80},
        {FM_TASK_PREDICT, "resnet50", "k80", 1024, false, false, 24},
        {FM_TASK_ROOFLINE, "resnet50", "k80", 1024, false, false, 24},
        {FM_TASK_WORK, "resnet50", "k80-die", 256, false, false, 12},
        {FM_TASK_WORK, "resnet50", "a100", 64, false, true, 80},
        {FM_TASK_ROOFLINE, "vgg16", "t4", 256, true, true, 16},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fm_session_opts o;
        fm_session_opts_init(&o, cases[i].task);
        o.model = cases[i].model;
        o.device = cases[i].device;
        o.load.zoo.batch = cases[i].batch;
        o.load.batch_given = true;
        if (cases[i].infer)
            o.count.mode = FM_MODE_INFER;
        struct fm_session *s = test_session_ok(ctx, &o);
        const struct fm_memory_check *m = &s->memory;
        assert_true(m->checked);
        assert_true(m->device_bytes == cases[i].device_gb * 1e9);
        uint64_t needed = memory_of(ctx, cases[i].model, cases[i].batch, cases[i].infer);
        assert_true(m->needed_bytes == needed);
        if (m->fits != cases[i].fits)
            fail_msg("%s batch %lld on %s: fits %d", cases[i].model, (long long)cases[i].batch,
                     cases[i].device, m->fits);
        assert_int_equal(m->fits, (double)needed <= m->device_bytes);
        /* the largest batch is counted: it fits, one more does not */
        assert_true(m->max_batch > 0);
        assert_true((double)memory_of(ctx, cases[i].model, m->max_batch, cases[i].infer) <=
                    m->device_bytes);
        assert_true((double)memory_of(ctx, cases[i].model, m->max_batch + 1, cases[i].infer) >
                    m->device_bytes);
        assert_int_equal(m->fits, m->max_batch >= cases[i].batch);
        fm_session_free(s);
    }
#ifdef FM_HAVE_ONNX
    /* a file whose batch is bound by name (--input ids=2x16): the batch is the bound one, and
     * the largest batch scales that binding */
    {
        struct fm_input_binding ids = {"ids", {2, {2, 16}}};
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_ROOFLINE);
        o.model = DATA "gpt2_block_op17.onnx";
        o.device = "l4";
        o.load.bindings = &ids;
        o.load.n_bindings = 1;
        struct fm_session *s = test_session_ok(ctx, &o);
        assert_int_equal(s->batch, 2);
        assert_int_equal(s->memory.batch, 2);
        int64_t max = s->memory.max_batch;
        assert_true(max > 2);
        for (int k = 0; k < 2; k++) {
            struct fm_input_binding b = {"ids", {2, {max + k, 16}}};
            struct fm_session_opts w;
            fm_session_opts_init(&w, FM_TASK_WORK);
            w.model = o.model;
            w.load.bindings = &b;
            w.load.n_bindings = 1;
            struct fm_session *t = test_session_ok(ctx, &w);
            uint64_t m;
            FM_ASSERT_OK(ctx, fm_counts_training_memory(t->counts, &m));
            assert_int_equal((double)m <= s->memory.device_bytes, k == 0);
            fm_session_free(t);
        }
        fm_session_free(s);
    }
#endif
    /* no device, no check */
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = "alexnet";
    struct fm_session *s = test_session_ok(ctx, &o);
    assert_false(s->memory.checked);
    fm_session_free(s);

    /* the CLI: the warning on stderr, the line in every table, "per GPU" with --gpus */
    char *out, *err;
    assert_int_equal(test_run_cli("predict efficientnet_b7 --device h100 --batch 32 --summary",
                                  &out, &err),
                     0);
    expect_in(err, "does not fit; the largest batch that fits is");
    expect_in(out, "DOES NOT FIT; largest batch that fits");
    free(out);
    free(err);
    assert_int_equal(test_run_cli("count resnet50 --device k80 --batch 1024", &out, &err), 0);
    char need[FM_FORMAT_SIZE], have[FM_FORMAT_SIZE], line[128];
    snprintf(line, sizeof(line), "K80: %s needed of %s",
             fm_format_bytes((double)memory_of(ctx, "resnet50", 1024, false), need),
             fm_format_bytes(24e9, have));   /* the board's 2 x 12 GB */
    expect_in(out, line);
    expect_in(err, "does not fit");
    free(out);
    free(err);
    assert_int_equal(test_run_cli("roofline resnet50 --device h100 --batch 256 --gpus 1 "
                                  "--summary",
                                  &out, &err),
                     2);   /* roofline has no --gpus */
    free(out);
    free(err);
    assert_int_equal(test_run_cli("predict resnet50 --device h100 --batch 512 --gpus 8 "
                                  "--summary",
                                  &out, &err),
                     0);
    expect_in(out, "needed per GPU of 80.0 GB");
    expect_in(out, "per GPU (global");
    expect_in(out, "on 8 GPUs)");
    free(out);
    free(err);
#ifdef FM_HAVE_CJSON
    assert_int_equal(test_run_cli("count resnet50 --device k80 --batch 1024 --format json", &out,
                                  NULL),
                     0);
    cJSON *j = cJSON_Parse(out);
    const cJSON *mem = cJSON_GetObjectItem(j, "memory");
    assert_non_null(mem);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItem(mem, "fits")));
    assert_true(cJSON_GetObjectItem(mem, "needed_bytes")->valuedouble ==
                (double)memory_of(ctx, "resnet50", 1024, false));
    assert_true(cJSON_GetObjectItem(mem, "max_batch")->valuedouble > 0);
    cJSON_Delete(j);
    free(out);
#endif
    fm_ctx_free(ctx);
}

/* ---- 3. the bytes follow the precision ---- */

static struct fm_session *storage_session(struct fm_ctx *ctx, const char *model,
                                          enum fm_precision prec, bool prec_given, int dtype)
{
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_ROOFLINE);
    o.model = model;
    o.device = "a100";
    o.load.zoo.batch = 4;
    o.load.batch_given = true;
    o.precision = prec;
    o.precision_given = prec_given;
    if (dtype >= 0) {
        o.load.zoo.dtype = (enum fm_dtype)dtype;
        o.load.dtype_given = true;
    }
    return test_session_ok(ctx, &o);
}

static void test_3_storage(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session *f32 = storage_session(ctx, "resnet50", FM_PREC_FP32, false, -1);
    assert_int_equal(f32->storage_activations, FM_DTYPE_FP32);
    assert_int_equal(f32->storage_parameters, FM_DTYPE_FP32);
    const struct {
        enum fm_precision prec;
        int dtype;                     /* -1: no --dtype */
        enum fm_dtype act, param;
    } cases[] = {
        {FM_PREC_FP16, -1, FM_DTYPE_FP16, FM_DTYPE_FP32},   /* mixed precision, autocast */
        {FM_PREC_BF16, -1, FM_DTYPE_BF16, FM_DTYPE_FP32},
        {FM_PREC_FP64, -1, FM_DTYPE_FP64, FM_DTYPE_FP64},
        {FM_PREC_FP16, FM_DTYPE_FP32, FM_DTYPE_FP32, FM_DTYPE_FP32},   /* --dtype overrides */
        {FM_PREC_FP16, FM_DTYPE_FP16, FM_DTYPE_FP16, FM_DTYPE_FP16},   /* pure half */
        {FM_PREC_FP64, FM_DTYPE_FP64, FM_DTYPE_FP64, FM_DTYPE_FP64},   /* refused before */
        {FM_PREC_TF32, -1, FM_DTYPE_FP32, FM_DTYPE_FP32},
    };
    /* conv1 of resnet50 at batch 4: input 4x3x224x224, weight 64x3x7x7, output 4x64x112x112 */
    const double in = 4.0 * 3 * 224 * 224, w = 64.0 * 3 * 7 * 7, out = 4.0 * 64 * 112 * 112;
    fm_nid conv1 = node_named(f32->graph, "conv1");
    /* what backward keeps is mostly float, some not (max-pool indices): the float part is
     * what doubles from fp32 to fp64 */
    struct fm_session *f64 = storage_session(ctx, "resnet50", FM_PREC_FP64, true, FM_DTYPE_FP64);
    double kept_float = (double)(f64->counts->activation_bytes - f32->counts->activation_bytes);
    assert_true(kept_float > 0.9 * (double)f32->counts->activation_bytes);
    fm_session_free(f64);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fm_session *s = storage_session(ctx, "resnet50", cases[i].prec, true,
                                               cases[i].dtype);
        assert_int_equal(s->storage_activations, cases[i].act);
        assert_int_equal(s->storage_parameters, cases[i].param);
        double a = (double)fm_dtype_size(cases[i].act), p = (double)fm_dtype_size(cases[i].param);
        const struct fm_work *fw = &s->counts->nodes[conv1].phase[FM_PHASE_FWD];
        assert_true((double)fw->bytes_read == in * a + w * p);
        assert_true((double)fw->bytes_written == out * a);
        /* the counts are the same; weights, gradients and state follow the parameter type,
         * what backward keeps the activation type */
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
            assert_true(fm_work_flops(&s->counts->total[ph]) ==
                        fm_work_flops(&f32->counts->total[ph]));
        assert_true((double)s->counts->param_bytes == (double)f32->counts->param_bytes * p / 4);
        assert_true((double)s->counts->grad_bytes == (double)f32->counts->grad_bytes * p / 4);
        assert_true((double)s->counts->optimizer_state_bytes ==
                    (double)f32->counts->optimizer_state_bytes * p / 4);
        assert_true((double)s->counts->activation_bytes ==
                    (double)f32->counts->activation_bytes + kept_float * (a / 4 - 1));
        fm_session_free(s);
    }
    fm_session_free(f32);

    /* the roofline of the issue: resnet50 at batch 64 on fp16 moves about half the bytes */
    char *o32, *o16;
    assert_int_equal(test_run_cli("roofline resnet50 --device a100 --batch 64 --summary", &o32,
                                  NULL),
                     0);
    assert_int_equal(test_run_cli("roofline resnet50 --device a100 --batch 64 --precision fp16 "
                                  "--summary",
                                  &o16, NULL),
                     0);
    expect_in(o32, "storage fp32");
    expect_in(o16, "storage fp16 activations, fp32 weights (mixed precision)");
    double oi32 = atof(strstr(o32, "OI ") + 3), oi16 = atof(strstr(o16, "OI ") + 3);
    if (!(oi32 > 26 && oi32 < 27.5 && oi16 > 1.9 * oi32 && oi16 < 2.0 * oi32))
        fail_msg("OI %.1f at fp32, %.1f at fp16", oi32, oi16);
    free(o32);
    free(o16);

#ifdef FM_HAVE_ONNX
    /* an ONNX file at fp16: its weights stay as the file has them, activations halve */
    struct fm_session *file = storage_session(ctx, DATA "resnet18_op17.onnx", FM_PREC_FP16, true,
                                              -1);
    assert_int_equal(file->storage_activations, FM_DTYPE_FP16);
    assert_int_equal(file->storage_parameters, FM_DTYPE_FP32);
    fm_session_free(file);
    file = storage_session(ctx, DATA "resnet18_op17.onnx", FM_PREC_FP32, false, FM_DTYPE_BF16);
    assert_int_equal(file->storage_activations, FM_DTYPE_BF16);
    assert_int_equal(file->storage_parameters, FM_DTYPE_BF16);
    fm_session_free(file);
#endif
    fm_ctx_free(ctx);
}

/* ---- 4. units for --peak and --step-time; a unit slip is refused ---- */

static void test_4_flops_parse(void **state)
{
    (void)state;
    const struct {
        const char *text;
        double flops;
    } ok[] = {
        {"312e12", 312e12},     {"312T", 312e12},     {"312TFLOP/s", 312e12},
        {"19.5 TFLOPS", 19.5e12}, {"900G", 900e9},    {"1.979P", 1.979e15},
        {"312tflops", 312e12},  {"5e9", 5e9},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        double v = 0;
        if (!fm_flops_parse(ok[i].text, &v) || fabs(v - ok[i].flops) > 1e-9 * ok[i].flops)
            fail_msg("'%s' read as %g, expected %g", ok[i].text, v, ok[i].flops);
    }
    const char *bad[] = {"", "T", "312X", "312 TB/s", "-5T", "abc", "312TFLOP/sx"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        double v = 0;
        if (fm_flops_parse(bad[i], &v))
            fail_msg("'%s' accepted as %g", bad[i], v);
    }
    double s = 0;
    assert_true(fm_duration_parse("310ms", &s));
    assert_true(fabs(s - 0.310) < 1e-12);
}

static void test_4_peak_unit_slip(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_UTILIZATION);
    o.model = "resnet50";
    o.device = "a100";
    o.step_s = 0.2;
    o.peak = 312;
    struct fm_session *s = NULL;
    assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_INVALID);
    assert_null(s);
    EXPECT_MESSAGE(ctx, "did you mean 312e12 (312 TFLOP/s)?");

    /* through the CLI: a usage error (2), and the suffixed forms give the same utilization as
     * the plain number */
    char *out, *err;
    assert_int_equal(
        test_run_cli("utilization resnet50 --device a100 --step-time 0.2 --peak 312", &out, &err),
        2);
    expect_in(err, "did you mean 312e12 (312 TFLOP/s)?");
    free(out);
    free(err);
    char *plain, *suffixed;
    assert_int_equal(test_run_cli("utilization resnet50 --device a100 --step-time 0.31 "
                                  "--peak 312e12 --format csv",
                                  &plain, NULL),
                     0);
    assert_int_equal(test_run_cli("utilization resnet50 --device a100 --step-time 310ms "
                                  "--peak 312TFLOP/s --format csv",
                                  &suffixed, NULL),
                     0);
    assert_string_equal(plain, suffixed);
    free(plain);
    free(suffixed);
    assert_int_equal(test_run_cli("utilization resnet50 --device a100 --step-time 0.2 "
                                  "--peak 312Q",
                                  &out, &err),
                     2);
    expect_in(err, "--peak: not a valid value: '312Q'");
    free(out);
    free(err);
    fm_ctx_free(ctx);
}

/* ---- 5. device names as nvidia-smi and PyTorch print them ---- */

static void test_5_device_names(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    const struct {
        const char *given, *entry;
        double mem_gb;        /* the memory the session uses */
        const char *note;     /* a word the note must hold; NULL: no note */
    } cases[] = {
        {"NVIDIA H100 80GB HBM3", "H100 SXM5 80GB", 80, NULL},
        {"NVIDIA A100-SXM4-40GB", "A100 SXM 40GB", 40, NULL},
        {"Tesla P100-PCIE-16GB", "P100 PCIe 16GB", 16, NULL},
        {"NVIDIA GeForce RTX 4090", "RTX 4090", 24, NULL},
        {"NVIDIA L4", "L4", 24, NULL},
        /* a V100 with 16 GB: the 32 GB entry's figures, the memory its name states */
        {"Tesla V100-SXM2-16GB", "V100 SXM2 32GB", 16, "16 GB of memory, as its name says"},
        /* PyTorch sees one die of a K80 board; the short alias is the board */
        {"Tesla K80", "K80 (one die)", 12, "--device k80 takes the whole board"},
        {"k80", "K80", 24, "k80-die"},
        /* the short aliases that have siblings name them */
        {"a100", "A100 SXM 80GB", 80, "a100-40gb"},
        {"h100", "H100 SXM5 80GB", 80, "h100-pcie"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_ROOFLINE);
        o.model = "alexnet";
        o.device = cases[i].given;
        struct fm_session *s = test_session_ok(ctx, &o);
        if (strncmp(s->device->name, cases[i].entry, strlen(cases[i].entry)) != 0)
            fail_msg("'%s' resolved to '%s', expected '%s'", cases[i].given, s->device->name,
                     cases[i].entry);
        if (fabs(s->device->mem_bytes - cases[i].mem_gb * 1e9) > 0.5e9)
            fail_msg("'%s': %g GB of memory, expected %g", cases[i].given,
                     s->device->mem_bytes / 1e9, cases[i].mem_gb);
        if (cases[i].note)
            expect_in(s->device_note, cases[i].note);
        else if (s->device_note[0])
            fail_msg("'%s': unexpected note '%s'", cases[i].given, s->device_note);
        fm_session_free(s);
    }
    /* the CLI says the note on stderr, and the report still runs */
    char *out, *err;
    assert_int_equal(test_run_cli("roofline alexnet --device a100", &out, &err), 0);
    expect_in(err, "'a100' is the A100 SXM 80GB");
    expect_in(err, "a100-40gb (A100 SXM 40GB)");
    free(out);
    free(err);
    fm_ctx_free(ctx);
}

/* ---- 6. an image as PIL lays it out is not a model input ---- */

static void test_6_input_hwc(void **state)
{
    (void)state;
    char *out, *err;
    assert_int_equal(test_run_cli("count resnet50 --input 224x224x3", &out, &err), 2);
    expect_in(err, "looks like HxWxC");
    expect_in(err, "--input 3x224x224");
    free(out);
    free(err);
    /* CxHxW, and a small image with a few channels, still build */
    assert_int_equal(test_run_cli("count resnet50 --input 3x160x160 --format csv", &out, NULL),
                     0);
    free(out);
    assert_int_equal(test_run_cli("count resnet18 --input 3x32x32 --format csv", &out, NULL), 0);
    free(out);
}

/* ---- 7. a mistyped command, models as data, options that did nothing ---- */

static void test_7_nearest_names(void **state)
{
    (void)state;
    const char *cmds[] = {"count", "models", "devices", "device", "roofline", "predict",
                          "utilization", "probe", "measure"};
    size_t n = sizeof(cmds) / sizeof(cmds[0]);
    assert_string_equal(fm_nearest_name("cout", cmds, n), "count");
    assert_string_equal(fm_nearest_name("modles", cmds, n), "models");
    assert_string_equal(fm_nearest_name("PREDICT", cmds, n), "predict");
    assert_string_equal(fm_nearest_name("rooflin", cmds, n), "roofline");
    assert_null(fm_nearest_name("xyz", cmds, n));
    assert_null(fm_nearest_name("c", cmds, n));
    assert_null(fm_nearest_name("", cmds, n));
    assert_null(fm_nearest_name("count", cmds, 0));

    char *out, *err;
    assert_int_equal(test_run_cli("cout resnet50", &out, &err), 2);
    expect_in(err, "unknown command 'cout'; did you mean 'count'?");
    free(out);
    free(err);
    assert_int_equal(test_run_cli("xyz", &out, &err), 2);
    expect_in(err, "unknown command 'xyz'");
    assert_null(strstr(err, "did you mean"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("count resnet50 --bacth 4", &out, &err), 2);
    expect_in(err, "unknown option --bacth; did you mean --batch?");
    free(out);
    free(err);
}

static void test_7_models_formats(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    char *out;
    assert_int_equal(test_run_cli("models --format csv", &out, NULL), 0);
    expect_in(out, "model,family,input,params,fwd_macs,fwd_flops,description\n");
    size_t rows = 0;
    for (const char *p = out; (p = strchr(p, '\n')); p++)
        rows++;
    assert_int_equal(rows, fm_zoo_count() + 1);
    /* every row's figures are the count of that model's forward pass at batch 1 */
    for (size_t i = 0; i < fm_zoo_count(); i++) {
        const char *name = fm_zoo_get(i)->name;
        struct fm_graph *g;
        struct fm_counts *c = test_count_zoo(ctx, name, 1, FM_MODE_INFER, &g);
        char row[256];
        snprintf(row, sizeof(row), "\n%s,%s,", name, fm_zoo_get(i)->family);
        const char *at = strstr(out, row);
        if (!at)
            fail_msg("no CSV row for %s", name);
        char expect[128];
        snprintf(expect, sizeof(expect), ",%llu,%llu,%llu,",
                 (unsigned long long)c->params,
                 (unsigned long long)fm_work_macs(&c->total[FM_PHASE_FWD]),
                 (unsigned long long)fm_work_flops(&c->total[FM_PHASE_FWD]));
        const char *eol = strchr(at + 1, '\n');
        const char *hit = strstr(at, expect);
        if (!hit || hit > eol)
            fail_msg("%s: row lacks %s", name, expect);
        fm_counts_free(c);
        fm_graph_free(g);
    }
    free(out);
    assert_int_equal(test_run_cli("models", &out, NULL), 0);
    expect_in(out, "fwd MAC");
    free(out);
#ifdef FM_HAVE_CJSON
    assert_int_equal(test_run_cli("models --format json", &out, NULL), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    const cJSON *models = cJSON_GetObjectItem(j, "models");
    assert_int_equal(cJSON_GetArraySize(models), (int)fm_zoo_count());
    const cJSON *first = cJSON_GetArrayItem(models, 0);
    assert_string_equal(cJSON_GetObjectItem(first, "name")->valuestring, fm_zoo_get(0)->name);
    assert_true(cJSON_GetObjectItem(first, "fwd_macs")->valuedouble > 0);
    cJSON_Delete(j);
    free(out);
#endif
    assert_int_equal(test_run_cli("models --format xml", &out, NULL), 2);
    free(out);
    fm_ctx_free(ctx);
}

static void test_7_ignored_options_warn(void **state)
{
    (void)state;
    char *out, *err;
    assert_int_equal(test_run_cli("count resnet18 --infer --optimizer adam", &out, &err), 0);
    expect_in(err, "--optimizer adam is ignored with --infer");
    free(out);
    free(err);
    assert_int_equal(test_run_cli("count resnet18 --infer", &out, &err), 0);
    assert_null(strstr(err, "ignored"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("predict resnet18 --device a100-40gb --epochs 90 --summary",
                                  &out, &err),
                     0);
    expect_in(err, "--epochs 90 is ignored without --dataset-size");
    free(out);
    free(err);
    assert_int_equal(test_run_cli("predict resnet18 --device a100-40gb --epochs 90 "
                                  "--dataset-size 1000 --summary",
                                  &out, &err),
                     0);
    assert_null(strstr(err, "ignored"));
    free(out);
    free(err);
}

static void test_7_by_class_optimizer(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = "vgg16";
    o.count.optimizer = FM_OPTIM_ADAM;
    struct fm_session *s = test_session_ok(ctx, &o);
    double opt = (double)fm_work_flops(&s->counts->total[FM_PHASE_OPTIMIZER]), rest = 0;
    for (int ph = 0; ph < FM_PHASE_OPTIMIZER; ph++)
        rest += (double)fm_work_flops(&s->counts->total[ph]);
    char expect[96];
    snprintf(expect, sizeof(expect), "%.1f%% of the step's FLOPs", 100.0 * opt / (opt + rest));
    fm_session_free(s);
    char *out;
    assert_int_equal(test_run_cli("count vgg16 --optimizer adam --by-class", &out, NULL), 0);
    expect_in(out, "The optimizer step is in no class");
    expect_in(out, expect);
    free(out);
    assert_int_equal(test_run_cli("count vgg16 --infer --by-class", &out, NULL), 0);
    expect_in(out, "(share: of forward FLOPs)");
    free(out);
    fm_ctx_free(ctx);
}

/* ---- 11. a file exported for inference, counted as a training step ---- */

static void test_11_inference_export(void **state)
{
    (void)state;
#ifndef FM_HAVE_ONNX
    skip();
#endif
    struct fm_ctx *ctx = test_ctx();
    const struct {
        const char *file;
        bool infer;
        const char *note;   /* NULL: none */
    } cases[] = {
        {DATA "resnet18_fused_op13.onnx", false, "20 of its 20 convolutions carry a bias"},
        {DATA "vgg11_op17.onnx", false, "looks exported for inference"},   /* no Dropout */
        {DATA "resnet18_fused_op13.onnx", true, NULL},   /* inference is what it is for */
        {DATA "resnet18_train_op17.onnx", false, NULL},  /* the recipe of docs/pytorch.md */
        {DATA "vgg11_train_op17.onnx", false, NULL},
        {DATA "resnet18_op17.onnx", false, NULL},        /* BatchNorm kept */
        {"vgg11", false, NULL},                          /* a built-in is what it says */
        {DATA "vit_block_op17.onnx", false, NULL},       /* LayerNorm: never had BatchNorm */
        {DATA "train/convnext_tiny.onnx", false, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct fm_session_opts o;
        fm_session_opts_init(&o, FM_TASK_WORK);
        o.model = cases[i].file;
        if (cases[i].infer)
            o.count.mode = FM_MODE_INFER;
        struct fm_session *s = test_session_ok(ctx, &o);
        if (cases[i].note)
            expect_in(s->export_note, cases[i].note);
        else if (s->export_note[0])
            fail_msg("%s: unexpected note '%s'", cases[i].file, s->export_note);
        fm_session_free(s);
    }
    /* the training exports count exactly what the built-ins count: FLOPs and bytes of every
     * phase, memory */
    const char *pairs[][2] = {{"resnet18", DATA "resnet18_train_op17.onnx"},
                              {"vgg11", DATA "vgg11_train_op17.onnx"}};
    for (size_t i = 0; i < 2; i++) {
        struct fm_session *s[2];
        for (int k = 0; k < 2; k++) {
            struct fm_session_opts o;
            fm_session_opts_init(&o, FM_TASK_WORK);
            o.model = pairs[i][k];
            o.load.zoo.batch = 8;
            o.load.batch_given = true;
            s[k] = test_session_ok(ctx, &o);
        }
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            const struct fm_work *a = &s[0]->counts->total[ph], *b = &s[1]->counts->total[ph];
            assert_true(fm_work_flops(a) == fm_work_flops(b));
            assert_true(a->bytes_read == b->bytes_read && a->bytes_written == b->bytes_written);
        }
        assert_true(s[0]->counts->activation_bytes == s[1]->counts->activation_bytes);
        fm_session_free(s[0]);
        fm_session_free(s[1]);
    }
    char *out, *err;
    assert_int_equal(test_run_cli("count " DATA "resnet18_fused_op13.onnx", &out, &err), 0);
    expect_in(out, "  export         resnet18_fused_op13 looks exported for inference");
    expect_in(err, "looks exported for inference");
    expect_in(err, "docs/pytorch.md");
    free(out);
    free(err);
    fm_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_1_gpus_epoch),
        cmocka_unit_test(test_2_memory),
        cmocka_unit_test(test_3_storage),
        cmocka_unit_test(test_4_flops_parse),
        cmocka_unit_test(test_4_peak_unit_slip),
        cmocka_unit_test(test_5_device_names),
        cmocka_unit_test(test_6_input_hwc),
        cmocka_unit_test(test_7_nearest_names),
        cmocka_unit_test(test_7_models_formats),
        cmocka_unit_test(test_7_ignored_options_warn),
        cmocka_unit_test(test_7_by_class_optimizer),
        cmocka_unit_test(test_11_inference_export),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
