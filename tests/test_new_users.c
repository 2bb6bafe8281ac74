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

static struct fm_session *run_ok(struct fm_ctx *ctx, const struct fm_session_opts *o)
{
    struct fm_session *s = NULL;
    FM_ASSERT_OK(ctx, fm_session_run(ctx, o, &s));
    assert_non_null(s);
    return s;
}

static void expect_in(const char *text, const char *word)
{
    if (!strstr(text, word))
        fail_msg("expected '%s' in:\n%s", word, text);
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
        struct fm_session *s = run_ok(ctx, &o);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_4_flops_parse),
        cmocka_unit_test(test_4_peak_unit_slip),
        cmocka_unit_test(test_5_device_names),
        cmocka_unit_test(test_6_input_hwc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
