/* The CPU probe (fm_probe) and its device entry: every figure present and ordered (min <=
 * median <= max), plausible against the theoretical figure, the bandwidth working set far
 * beyond the last-level cache, a saved device that the device table reads back as measured,
 * bad device strings refused, and the probe command's exit codes. Timing figures are checked
 * only within wide, stated bounds: the machine running the tests may be busy. */
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void stat_ok(const char *what, const struct fm_probe_stat *s)
{
    if (!(s->min > 0 && s->min <= s->median && s->median <= s->max && isfinite(s->max)))
        fail_msg("%s: min %g, median %g, max %g are not 0 < min <= median <= max", what, s->min,
                 s->median, s->max);
}

static struct fm_probe_result *quick_probe(struct fm_ctx *ctx)
{
    struct fm_probe_opts o;
    fm_probe_opts_init(&o);
    o.repetitions = 3;
    o.seconds = 0.03;
    struct fm_probe_result *r = calloc(1, sizeof(*r));
    FM_ASSERT_OK(ctx, fm_probe(ctx, &o, r));
    return r;
}

static void cpu_probe_figures(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_probe_result *r = quick_probe(ctx);
    assert_string_equal(r->kind, "cpu");
    assert_true(r->device_name[0] != '\0');
    assert_true(r->threads >= 1);
    assert_true(r->cores >= 1 && r->cores <= r->threads);   /* default: every CPU we may use */
    stat_ok("fp32 FMA, one thread", &r->fma_1t[FM_PREC_FP32]);
    stat_ok("fp32 FMA, all threads", &r->fma_all[FM_PREC_FP32]);
    stat_ok("fp64 FMA, one thread", &r->fma_1t[FM_PREC_FP64]);
    stat_ok("fp64 FMA, all threads", &r->fma_all[FM_PREC_FP64]);
    stat_ok("copy", &r->bw_copy);
    stat_ok("triad", &r->bw_triad);
    /* a 4-wide (SSE) core at 1 GHz does 8 GFLOP/s fp32: anything slower is a counting error */
    assert_true(r->fma_1t[FM_PREC_FP32].median > 1e9);
    /* Against theory (FLOP/cycle x clock): above 5% even on a loaded machine; below 2x, the
     * most a boost clock exceeds the clock the theory read (a wrong lane or FMA count would be
     * off by 2x or more) */
    for (int p = 0; p < FM_PREC_COUNT; p++) {
        const struct fm_probe_stat *s = &r->fma_1t[p];
        if (s->theory > 0 && s->median > 0) {
            double ratio = s->median / s->theory;
            /* bf16 dot products (vdpbf16ps) run at half the FMA rate on some cores and the
             * theory assumes the full rate: only the upper bound holds everywhere */
            double low = p == FM_PREC_BF16 ? 0.01 : 0.05;
            if (!(ratio > low && ratio < 2.0))
                fail_msg("%s one thread: %.3g FLOP/s measured, %.3g theory (ratio %.2f)",
                         fm_precision_name((enum fm_precision)p), s->median, s->theory, ratio);
            assert_true(r->fma_all[p].theory >= s->theory);
        }
    }
    /* the bandwidth arrays: 3 of them, each at least 4x the last-level cache */
    if (r->cache_bytes)
        assert_true(r->working_set_bytes >= 12 * r->cache_bytes);
    assert_true(r->working_set_bytes >= 3ull * (64u << 20));
    /* a DRAM bandwidth between 100 MB/s and 10 TB/s: bytes counted per element are right */
    assert_true(r->bw_triad.median > 1e8 && r->bw_triad.median < 1e13);
    assert_non_null(strstr(r->notes, "FLOP/cycle"));
    free(r);
    fm_ctx_free(ctx);
}

static void probe_device_roundtrip(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_probe_result *r = quick_probe(ctx);
    struct fm_device d;
    assert_int_equal(fm_probe_to_device(r, &d), FM_OK);
    assert_true(d.measured);
    assert_string_equal(d.kind, "cpu");
    assert_true(d.peak_vector[FM_PREC_FP32] == r->fma_all[FM_PREC_FP32].median);
    assert_true(d.peak_vector[FM_PREC_FP64] == r->fma_all[FM_PREC_FP64].median);
    assert_true(d.mem_bw == fmax(r->bw_copy.median, r->bw_triad.median));
    assert_true(d.peak_tensor[FM_PREC_FP32] == 0.0);   /* no GEMM figure on the CPU */
#ifdef FM_HAVE_CJSON
    char path[] = "/tmp/fm_probe_dev_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    FM_ASSERT_OK(ctx, fm_device_save_json(ctx, &d, path));
    struct fm_devices *devs = NULL;
    FM_ASSERT_OK(ctx, fm_devices_load(ctx, path, &devs));
    const struct fm_device *back = NULL;
    FM_ASSERT_OK(ctx, fm_devices_find(ctx, devs, d.name, &back));
    assert_true(back->measured);
    assert_true(fabs(back->peak_vector[FM_PREC_FP32] - d.peak_vector[FM_PREC_FP32]) <=
                1e-6 * d.peak_vector[FM_PREC_FP32]);
    assert_true(fabs(back->mem_bw - d.mem_bw) <= 1e-6 * d.mem_bw);
    /* the analyses take it: conv at fp32 runs on the measured vector peak */
    assert_true(fabs(fm_device_peak(back, FM_CLASS_CONV, FM_PREC_FP32) -
                     d.peak_vector[FM_PREC_FP32]) <= 1e-6 * d.peak_vector[FM_PREC_FP32]);
    fm_devices_free(devs);
    unlink(path);
#endif
    free(r);
    fm_ctx_free(ctx);
}

static void probe_refusals(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_probe_opts o;
    fm_probe_opts_init(&o);
    struct fm_probe_result r;
    o.device = "tpu";
    assert_int_equal(fm_probe(ctx, &o, &r), FM_ERR_INVALID);
    assert_non_null(strstr(fm_ctx_error(ctx), "tpu"));
    o.device = "cpu";
    o.threads = -1;
    assert_int_equal(fm_probe(ctx, &o, &r), FM_ERR_INVALID);
    fm_ctx_free(ctx);
}

static void probe_cli(void **unused)
{
    (void)unused;
    char *out = NULL, *err = NULL;
    int rc = test_run_cli("probe --repetitions 1 --seconds 0.02 --format json", &out, &err);
    if (rc != 0)
        fail_msg("probe exited %d: %s", rc, err);
    assert_non_null(strstr(out, "\"fma_1t\""));
    assert_non_null(strstr(out, "\"bw_triad\""));
    assert_non_null(strstr(out, "\"theory\""));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("probe --repetitions 0", NULL, NULL), 2);
    assert_int_equal(test_run_cli("probe --bogus", NULL, NULL), 2);
    rc = test_run_cli("probe --device tpu --seconds 0.01", NULL, &err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "cpu, cuda or cuda:N"));
    free(err);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cpu_probe_figures),
        cmocka_unit_test(probe_device_roundtrip),
        cmocka_unit_test(probe_refusals),
        cmocka_unit_test(probe_cli),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
