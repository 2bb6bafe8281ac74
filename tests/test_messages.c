/* The library's messages name the fields a program sets, never the CLI's flags: a program that
 * sets fm_session_opts.gpus = 0 is told about fm_session_opts.gpus, not --gpus. The CLI prints
 * the same failures with its flags (tools/cli/flags.c), shown here on the same cases; every
 * message's exact CLI wording is held by the golden outputs (tests/check_golden_cli.sh). */
#include "support.h"

#include <stdlib.h>
#include <string.h>

/* The session fails with want and a message naming field, with no "--" in it. */
static void expect_status(struct fm_ctx *ctx, const struct fm_session_opts *o, enum fm_status want,
                          const char *field)
{
    struct fm_session *s = NULL;
    enum fm_status st = fm_session_run(ctx, o, &s);
    assert_null(s);
    if (st != want)
        fail_msg("expected %s naming %s, got %s: %s", fm_status_to_string(want), field,
                 fm_status_to_string(st), fm_ctx_error(ctx));
    EXPECT_MESSAGE(ctx, field);
    if (strstr(fm_ctx_error(ctx), "--"))
        fail_msg("the message names a command-line flag: %s", fm_ctx_error(ctx));
}

/* A bad option value: FM_ERR_INVALID. */
static void expect_field(struct fm_ctx *ctx, const struct fm_session_opts *o, const char *field)
{
    expect_status(ctx, o, FM_ERR_INVALID, field);
}

static void predict_opts(struct fm_session_opts *o)
{
    fm_session_opts_init(o, FM_TASK_PREDICT);
    o->model = "resnet18";
    o->device = "h100-pcie";
}

static void test_session_fields(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    predict_opts(&o);
    o.gpus = 0;
    expect_field(ctx, &o, "fm_session_opts.gpus must be between 1 and 65536");
    predict_opts(&o);
    o.gpus = 2;
    o.count.mode = FM_MODE_INFER;
    expect_field(ctx, &o, "fm_session_opts.gpus models data-parallel training; drop FM_MODE_INFER");
    predict_opts(&o);
    o.peak = 5;
    expect_field(ctx, &o, "fm_session_opts.peak 5 is in FLOP/s");
    predict_opts(&o);
    o.epochs = -1;
    expect_field(ctx, &o, "fm_session_opts.epochs must be >= 0");
    predict_opts(&o);
    o.predict.ppp_compute = 2;
    expect_field(ctx, &o, "fm_predict_opts.ppp_compute");
    predict_opts(&o);
    o.device = NULL;
    expect_field(ctx, &o, "give the device: fm_session_opts.device NAME");
    predict_opts(&o);
    o.gpus = 2;
    o.interconnect = "nvlink9";
    expect_field(ctx, &o, "unknown fm_session_opts.interconnect 'nvlink9'");
    fm_session_opts_init(&o, FM_TASK_UTILIZATION);
    o.model = "resnet18";
    o.device = "h100-pcie";
    expect_field(ctx, &o, "give fm_session_opts.step_s T (and/or fm_session_opts.epoch_s T with "
                          "fm_session_opts.dataset_size N)");
    fm_session_opts_init(&o, FM_TASK_MEASURE);
    o.model = "resnet18";
    o.dry_run = true;
    o.run.steps = 0;
    expect_field(ctx, &o, "fm_measure_opts.steps and fm_measure_opts.warmup");
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = "resnet18";
    o.load.zoo.input = (struct fm_shape){3, {224, 224, 3}};
    expect_field(ctx, &o, "fm_zoo_opts.input 224x224x3 looks like HxWxC");
    fm_ctx_free(ctx);
}

static void test_onnx_binding_fields(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = FM_TEST_DATA "/onnx/gpt2_block_op17.onnx";
    /* the sequence dimension is symbolic: the message says which field binds it */
    expect_status(ctx, &o, FM_ERR_SHAPE, "fm_load_opts.bindings ids=DIMS");
    struct fm_input_binding b = {"nope", {2, {2, 16}}};
    o.load.bindings = &b;
    o.load.n_bindings = 1;
    expect_field(ctx, &o, "fm_load_opts.bindings nope=...");
    fm_ctx_free(ctx);
}

/* The CLI says the same with its flags, and a library field never reaches its output. */
static void test_cli_says_flags(void **unused)
{
    (void)unused;
    static const struct {
        const char *args, *flag_text;
    } cases[] = {
        {"predict resnet18 --device h100-pcie --gpus 70000", "--gpus must be between 1 and 65536"},
        {"predict resnet18 --device h100-pcie --gpus 2 --infer", "drop --infer"},
        {"utilization resnet18 --device h100-pcie", "give --step-time T (and/or --epoch-time T"},
        {"count resnet18 --input 224x224x3", "--input 224x224x3 looks like HxWxC"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *out = NULL, *err = NULL;
        int rc = test_run_cli(cases[i].args, &out, &err);
        assert_int_equal(rc, 2);
        if (!strstr(err, cases[i].flag_text) || strstr(err, "fm_") || strstr(err, "FM_"))
            fail_msg("flopmeter %s: expected '%s' in: %s", cases[i].args, cases[i].flag_text, err);
        free(out);
        free(err);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_session_fields),
        cmocka_unit_test(test_onnx_binding_fields),
        cmocka_unit_test(test_cli_says_flags),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
