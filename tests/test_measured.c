/* Measured points on the roofline (fm_measured_read, `roofline --measured`): from a real PyTorch
 * profiler trace (tests/data/profiles/torch) the step point is flopmeter's count of the step
 * over the trace's median step and each op class's point its counted work over its time per
 * step; from a real Nsight Compute capture (tests/data/profiles/ncu) without flopmeter's NVTX
 * ranges the one point is the file's totals (the figures the independent reading in
 * expected.txt gives); a file that gives no point is refused; the chart draws them. (No capture
 * of flopmeter's own CUDA step exists yet: per-layer ncu points are tested only through
 * fm_ncu_match in test_ncu.c.) */
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROF FM_TEST_DATA "/profiles/"

/* alexnet as the trace trained it: batch 8, 3x64x64, 10 classes */
static struct fm_session *alexnet_session(struct fm_ctx *ctx)
{
    struct fm_session_opts so;
    fm_session_opts_init(&so, FM_TASK_ROOFLINE);
    so.model = "alexnet";
    so.device = "a100-40gb";
    so.load.zoo.batch = 8;
    so.load.batch_given = true;
    so.load.zoo.classes = 10;
    so.load.zoo.input.rank = 3;
    so.load.zoo.input.dims[0] = 3;
    so.load.zoo.input.dims[1] = 64;
    so.load.zoo.input.dims[2] = 64;
    return test_session_ok(ctx, &so);
}

static void test_from_trace(void **state)
{
    (void)state;
#ifndef FM_HAVE_CJSON
    skip();
#endif
    struct fm_ctx *ctx = test_ctx();
    struct fm_session *s = alexnet_session(ctx);
    struct fm_trace *t = NULL;
    FM_ASSERT_OK(ctx, fm_trace_read(ctx, PROF "torch/alexnet_kineto.json", NULL, &t));
    struct fm_measured *m = NULL;
    FM_ASSERT_OK(ctx, fm_measured_read(ctx, PROF "torch/alexnet_kineto.json", s->graph, s->counts,
                                       &m));
    assert_string_equal(m->source, "PyTorch profiler");
    assert_true(m->n >= 2);
    /* the step: every phase's counted FLOPs and bytes over the median step */
    const struct fm_measured_point *step = &m->points[0];
    assert_true(step->whole);
    uint64_t flops = 0, bytes = 0;
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
        flops += fm_work_flops(&s->counts->total[ph]);
        bytes += s->counts->total[ph].bytes_read + s->counts->total[ph].bytes_written;
    }
    assert_true(step->flops == (double)flops);
    assert_true(step->bytes == (double)bytes);
    assert_true(step->time_s == t->step_s);
    /* a class point: conv's forward and backward counts over conv's time per step */
    const struct fm_measured_point *conv = NULL;
    for (size_t i = 1; i < m->n; i++) {
        assert_false(m->points[i].whole);
        if (strcmp(m->points[i].label, "conv") == 0)
            conv = &m->points[i];
    }
    assert_non_null(conv);
    uint64_t cf = 0;
    for (int ph = 0; ph < FM_PHASE_OPTIMIZER; ph++)
        cf += fm_work_flops(&s->counts->by_class[FM_CLASS_CONV][ph]);
    assert_true(conv->flops == (double)cf);
    assert_true(conv->time_s == t->class_s[FM_CLASS_CONV] / (double)t->n_steps);
    fm_measured_free(m);
    fm_trace_free(t);
    fm_session_free(s);
    fm_ctx_free(ctx);
}

static void test_from_ncu(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session *s = alexnet_session(ctx);
    struct fm_measured *m = NULL;
    /* an A100 capture of SGEMM kernels, with no NVTX ranges: the file as one point, FP32 + FP16
     * FLOPs, DRAM bytes and time as expected.txt reads them; it ran tensor instructions whose
     * FLOPs no metric gives, so the point is the FP units' and says so */
    FM_ASSERT_OK(ctx, fm_measured_read(ctx, PROF "ncu/sgemm_a100_smsp.csv", s->graph, s->counts,
                                       &m));
    assert_string_equal(m->source, "Nsight Compute");
    assert_int_equal(m->n, 1);
    assert_true(m->points[0].whole);
    assert_true(m->points[0].flops == 68722832179200.0 + 4298322739200.0);
    assert_true(m->points[0].bytes == 818402825216.0);
    assert_true(fabs(m->points[0].time_s - 46.914817663990469) <= 1e-9 * 46.9);
    assert_non_null(strstr(m->points[0].label, "tensor-pipe FLOPs unknown"));
    assert_non_null(strstr(m->how, "no flopmeter NVTX ranges"));
    fm_measured_free(m);
    m = NULL;
    /* the B200 raw page has a time but neither FLOP nor DRAM metrics: no point, refused */
    assert_int_equal(fm_measured_read(ctx, PROF "ncu/flash_b200_raw.csv", s->graph, s->counts,
                                      &m),
                     FM_ERR_PARSE);
    assert_null(m);
    EXPECT_MESSAGE(ctx, "no measured point");
    /* not a profile at all: the ncu reader's own message */
    assert_int_equal(fm_measured_read(ctx, FM_TEST_DATA "/torchvision_reference.csv", s->graph,
                                      s->counts, &m),
                     FM_ERR_PARSE);
    assert_int_equal(fm_measured_read(ctx, "/nonexistent/step.csv", s->graph, s->counts, &m),
                     FM_ERR_IO);
    fm_session_free(s);
    fm_ctx_free(ctx);
}

static void test_cli(void **state)
{
    (void)state;
#ifndef FM_HAVE_CJSON
    skip();
#endif
    char svg[128], args[512], *out = NULL, *err = NULL;
    snprintf(svg, sizeof(svg), "/tmp/fm_test_measured_%d.svg", (int)getpid());
    snprintf(args, sizeof(args),
             "roofline alexnet --batch 8 --input 3x64x64 --classes 10 --device a100-40gb "
             "--summary --svg %s --measured " PROF "torch/alexnet_kineto.json", svg);
    int rc = test_run_cli(args, &out, &err);
    if (rc != 0)
        fail_msg("roofline --measured: exit %d: %s", rc, err ? err : "");
    assert_non_null(strstr(out, "measured: "));
    assert_non_null(strstr(out, "PyTorch profiler"));
    free(out);
    free(err);
    char *text = test_read_file(svg, NULL);
    assert_non_null(strstr(text, "measured (PyTorch profiler)"));
    assert_non_null(strstr(text, "the step (PyTorch profiler, median of 3)"));
    assert_non_null(strstr(text, "stroke=\"#e6550d\" stroke-width=\"2.5\""));
    free(text);
    unlink(svg);
    /* --measured without a chart to draw on */
    rc = test_run_cli("roofline alexnet --device a100-40gb --measured " PROF
                      "torch/alexnet_kineto.json", &out, &err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "--svg"));
    free(out);
    free(err);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_from_trace),
        cmocka_unit_test(test_from_ncu),
        cmocka_unit_test(test_cli),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
