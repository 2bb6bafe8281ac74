/* flopmeter calibrate and what uses its file (the fit and the file format themselves are
 * tests/test_calibration.c):
 *  - where a measured step's time goes (fm_time_loss), exactly, from chosen timings, peak and
 *    bandwidth: ideal, memory-bound, per-kernel overhead (with a calibration), below the
 *    ceilings, per-step overhead; a layer faster than its roofline;
 *  - `calibrate --quick` on this machine's CPU writes a file that loads, with a fit for every
 *    op class it times and no negative coefficient, and its samples as CSV;
 *  - `predict --calibration FILE` shows calibrated times (JSON keys), `measure --calibration`
 *    shows calibrated times and errors per layer, and a file made elsewhere is refused with the
 *    field named unless --force-calibration.
 * The CLI tests skip with a message when the build has no CPU backend. */
#include "support.h"

#include "backend/backend.h"
#ifdef FM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* |a - b| <= tol, with both values in the message */
#define assert_double_equal(a, b, tol)                                                       \
    do {                                                                                     \
        double a_ = (a), b_ = (b);                                                           \
        if (!(fabs(a_ - b_) <= (tol)))                                                       \
            fail_msg("%s = %.17g, expected %.17g", #a, a_, b_);                              \
    } while (0)

/* x (1, 1000) -> ReLU: forward 1000 comparisons, 8000 bytes (fp32 read and written). At a peak
 * of 1e6 FLOP/s that is 1 ms; at 1e6 bytes/s, 8 ms. */
static void test_time_loss_exact(void **unused)
{
    (void)unused;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "relu", &g));
    struct fm_shape s = {2, {1, 1000}};
    fm_tid x, y;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "x", FM_ROLE_INPUT, FM_DTYPE_FP32, &s, &x));
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_RELU, "relu", NULL, &x, 1, NULL, 1, &y));
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = FM_MODE_INFER;
    struct fm_counts *c;
    FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &c));
    assert_int_equal(fm_work_flops(&c->nodes[0].phase[FM_PHASE_FWD]), 1000);
    assert_int_equal(c->nodes[0].phase[FM_PHASE_FWD].bytes_read +
                         c->nodes[0].phase[FM_PHASE_FWD].bytes_written,
                     8000);
    struct fm_node_timing nt = {{10.0, 0, 0, 0}, true};   /* 10 ms forward */
    struct fm_measurement m;
    memset(&m, 0, sizeof(m));
    m.n_nodes = 1;
    m.nodes = &nt;
    m.step_ms_median = 12.0;
    struct fm_time_loss t;
    FM_ASSERT_OK(ctx, fm_time_loss(ctx, g, c, &m, 1e6, 1e6, NULL, &t));
    assert_double_equal(t.parts[FM_LOSS_IDEAL], 1e-3, 1e-15);
    assert_double_equal(t.parts[FM_LOSS_MEMORY], 7e-3, 1e-15);
    assert_double_equal(t.parts[FM_LOSS_OVERHEAD], 0.0, 0.0);
    assert_double_equal(t.parts[FM_LOSS_BELOW], 2e-3, 1e-15);
    assert_double_equal(t.step_overhead_s, 2e-3, 1e-15);
    assert_double_equal(t.layers_s, 10e-3, 1e-15);
    assert_double_equal(t.by_class[FM_CLASS_ACTIVATION][FM_LOSS_MEMORY], 7e-3, 1e-15);
    assert_int_equal(t.n_top, 1);
    assert_double_equal(t.top[0].lost_s, 9e-3, 1e-15);
    /* a calibration with a fixed cost of 0.5 ms for activations' forward takes it out of the
     * below-peak part */
    struct fm_calib_entry e = {FM_CLASS_ACTIVATION, "", FM_PHASE_FWD, 0.5e-3, 1e-9, 0, 4, 0, false};
    struct fm_calibration cal;
    memset(&cal, 0, sizeof(cal));
    cal.n = 1;
    cal.entries = &e;
    FM_ASSERT_OK(ctx, fm_time_loss(ctx, g, c, &m, 1e6, 1e6, &cal, &t));
    assert_double_equal(t.parts[FM_LOSS_OVERHEAD], 0.5e-3, 1e-15);
    assert_double_equal(t.parts[FM_LOSS_BELOW], 1.5e-3, 1e-15);
    /* faster than its roofline (0.5 ms against 1 ms at the peak): all ideal, and the
     * difference is negative below-peak time, not hidden */
    nt.ms[FM_PHASE_FWD] = 0.5;
    m.step_ms_median = 0.5;
    FM_ASSERT_OK(ctx, fm_time_loss(ctx, g, c, &m, 1e6, 1e6, NULL, &t));
    assert_double_equal(t.parts[FM_LOSS_IDEAL], 0.5e-3, 1e-15);
    assert_double_equal(t.parts[FM_LOSS_MEMORY], 0.0, 0.0);
    assert_double_equal(t.parts[FM_LOSS_BELOW], -0.5e-3, 1e-15);
    /* no layer timings, or no bandwidth: an error that says what is missing */
    m.nodes = NULL;
    assert_int_equal(fm_time_loss(ctx, g, c, &m, 1e6, 1e6, NULL, &t), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "per-layer timing", "fm_measure_opts.per_layer");
    m.nodes = &nt;
    assert_int_equal(fm_time_loss(ctx, g, c, &m, 1e6, 0, NULL, &t), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "bandwidth");
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

static bool have_cpu_backend(void)
{
    return fm_backend_cpu() != NULL;
}

static char cal_path[256], csv_path[256];

/* One quick calibration of this machine shared by the CLI tests below. */
static int make_calibration(void **unused)
{
    (void)unused;
    snprintf(cal_path, sizeof(cal_path), "/tmp/fm_test_calib_%d.json", (int)getpid());
    snprintf(csv_path, sizeof(csv_path), "/tmp/fm_test_calib_%d.csv", (int)getpid());
    if (!have_cpu_backend())
        return 0;
    char args[700], *out = NULL, *err = NULL;
    snprintf(args, sizeof(args), "calibrate --quick --threads 2 -o %s --samples %s", cal_path,
             csv_path);
    int rc = test_run_cli(args, &out, &err);
    if (rc != 0)
        fprintf(stderr, "calibrate failed (%d): %s\n", rc, err ? err : "");
    free(out);
    free(err);
    return 0;
}

static int remove_calibration(void **unused)
{
    (void)unused;
    unlink(cal_path);
    unlink(csv_path);
    return 0;
}

static void cal_or_skip(void)
{
    if (!have_cpu_backend()) {
        printf("skipped: this build has no CPU backend to calibrate\n");
        skip();
    }
    if (access(cal_path, R_OK) != 0)
        fail_msg("calibrate --quick wrote no file (its error is printed above)");
}

/* The file loads; every class the sweep times has a forward fit, convolutions of all four
 * kinds; no coefficient is negative; the CSV has a row per timed layer phase, and the
 * whole-class entries were fitted on all of them. */
static void test_calibrate_file(void **unused)
{
    (void)unused;
    cal_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_calibration *cal;
    FM_ASSERT_OK(ctx, fm_calibration_load(ctx, cal_path, &cal));
    assert_string_equal(cal->backend, "cpu");
    assert_int_equal(cal->threads, 2);
    assert_int_equal(cal->precision, FM_PREC_FP32);
    assert_true(cal->peak > 0 && cal->bandwidth > 0);
    static const struct {
        enum fm_class cls;
        const char *kind;
    } want[] = {
        {FM_CLASS_CONV, "dense"},      {FM_CLASS_CONV, "pointwise"},
        {FM_CLASS_CONV, "depthwise"},  {FM_CLASS_CONV, "grouped"},
        {FM_CLASS_MATMUL, ""},         {FM_CLASS_NORM, ""},
        {FM_CLASS_ACTIVATION, ""},     {FM_CLASS_POOL, ""},
        {FM_CLASS_ELEMENTWISE, ""},    {FM_CLASS_EMBEDDING, ""},
        {FM_CLASS_ATTENTION, ""},      {FM_CLASS_DATA_MOVEMENT, ""},
        {FM_CLASS_LOSS, ""},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        bool found = false;
        for (size_t k = 0; k < cal->n; k++) {
            const struct fm_calib_entry *e = &cal->entries[k];
            found |= e->cls == want[i].cls && !strcmp(e->kind, want[i].kind) &&
                     e->phase == FM_PHASE_FWD;
        }
        if (!found)
            fail_msg("no forward fit for %s '%s'", fm_class_name(want[i].cls), want[i].kind);
    }
    bool optimizer = false;
    size_t points = 0;
    for (size_t k = 0; k < cal->n; k++) {
        const struct fm_calib_entry *e = &cal->entries[k];
        assert_true(e->fixed_s >= 0 && e->s_per_flop >= 0 && e->s_per_byte >= 0);
        assert_true(e->points >= 1);
        optimizer |= e->phase == FM_PHASE_OPTIMIZER;
        if (!e->kind[0])   /* every sample is in exactly one whole-class entry */
            points += (size_t)e->points;
    }
    assert_true(optimizer);
    /* the cold round: a cold entry next to each warm forward fit of the kinds above, and an
     * eviction curve (if flushing mattered here) that never falls */
    size_t cold = 0;
    for (size_t k = 0; k < cal->n; k++)
        cold += cal->entries[k].cold;
#if defined(__x86_64__) || defined(__i386__)
    assert_true(cold > cal->n / 3);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        double t;
        if (!fm_calibration_time_at(cal, want[i].cls, want[i].kind, FM_PHASE_FWD, 1e6, 1e6, true,
                                    &t))
            fail_msg("no cold forward fit for %s '%s'", fm_class_name(want[i].cls),
                     want[i].kind);
    }
#endif
    assert_true(cal->n_evict <= FM_CALIB_EVICT_MAX);
    for (size_t i = 0; i < cal->n_evict; i++) {
        assert_true(cal->evict_frac[i] >= 0 && cal->evict_frac[i] <= 1);
        assert_true(i == 0 || (cal->evict_frac[i] >= cal->evict_frac[i - 1] &&
                               cal->evict_bytes[i] > cal->evict_bytes[i - 1]));
    }
    FILE *f = fopen(csv_path, "r");
    assert_non_null(f);
    char line[512];
    size_t rows = 0;
    assert_non_null(fgets(line, sizeof(line), f));
    assert_string_equal(line, "class,kind,phase,cache,flops,bytes,seconds,families\n");
    while (fgets(line, sizeof(line), f))
        rows++;
    fclose(f);
    assert_int_equal(rows, points);   /* every sample went into its class's fit */
    fm_calibration_free(cal);
    fm_ctx_free(ctx);
}

/* Warm rows of a samples CSV whose line starts with prefix. */
static size_t csv_rows(const char *path, const char *prefix)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    size_t n = 0;
    while (fgets(line, sizeof(line), f))
        n += strncmp(line, prefix, strlen(prefix)) == 0 && strstr(line, ",warm,");
    fclose(f);
    return n;
}

/* --leave-out drops the sweep shapes taken from the named families: the quick sweep has seven
 * grouped convolutions (two from ResNeXt, three from RegNetY, two generic), each timed in four
 * phases; without ResNeXt and RegNetY two are left, and the file records the list. A family no shape comes from is refused,
 * naming those that are, before anything runs. */
static void test_leave_out(void **unused)
{
    (void)unused;
    cal_or_skip();
    assert_int_equal(csv_rows(csv_path, "conv,grouped,"), 7 * 4);
    char path[256], csv[256], args[700], *out = NULL, *err = NULL;
    snprintf(path, sizeof(path), "/tmp/fm_test_leave_out_%d.json", (int)getpid());
    snprintf(csv, sizeof(csv), "/tmp/fm_test_leave_out_%d.csv", (int)getpid());
    snprintf(args, sizeof(args),
             "calibrate --quick --threads 2 --leave-out regnet,resnext -o %s --samples %s", path,
             csv);
    int rc = test_run_cli(args, &out, &err);
    if (rc != 0)
        fail_msg("calibrate --leave-out: exit %d: %s", rc, err ? err : "");
    free(out);
    free(err);
    assert_int_equal(csv_rows(csv, "conv,grouped,"), 2 * 4);
    /* the other kinds keep their shapes but those of the two families */
    assert_int_equal(csv_rows(csv, "conv,dense,"), csv_rows(csv_path, "conv,dense,"));
    /* the file says what it left out, and that --quick timed one round */
    struct fm_ctx *ctx = test_ctx();
    struct fm_calibration *c = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_load(ctx, path, &c));
    assert_string_equal(c->left_out, "regnet,resnext");
    assert_int_equal(c->rounds, 1);
    fm_calibration_free(c);
    fm_ctx_free(ctx);
    unlink(path);
    unlink(csv);

    snprintf(args, sizeof(args), "calibrate --leave-out regnet,googlenet -o %s", path);
    rc = test_run_cli(args, &out, &err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "no sweep shape is taken from 'googlenet'"));
    assert_non_null(strstr(err, "mobilenet_v3"));
    assert_int_equal(access(path, F_OK), -1);
    free(out);
    free(err);
}


/* calibrate --from-samples: the samples CSV fitted again under the header of its file gives that
 * file's entries to the bit (what lets a GPU's calibration be re-fitted where there is no GPU);
 * with --leave-out, the families' shapes are gone from the fit and the file says so. */
static void test_refit(void **unused)
{
    (void)unused;
    cal_or_skip();
    char path[256], args[900], *out = NULL, *err = NULL;
    snprintf(path, sizeof(path), "/tmp/fm_test_refit_%d.json", (int)getpid());
    snprintf(args, sizeof(args), "calibrate --from-samples %s --like %s -o %s", csv_path,
             cal_path, path);
    int rc = test_run_cli(args, &out, &err);
    if (rc != 0)
        fail_msg("calibrate --from-samples: exit %d: %s", rc, err ? err : "");
    free(out);
    free(err);
    struct fm_ctx *ctx = test_ctx();
    struct fm_calibration *a = NULL, *b = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_load(ctx, cal_path, &a));
    FM_ASSERT_OK(ctx, fm_calibration_load(ctx, path, &b));
    assert_string_equal(a->device, b->device);
    assert_string_equal(a->date, b->date);
    assert_true(a->peak == b->peak && a->step_overhead_s == b->step_overhead_s);
    assert_int_equal(a->n_evict, b->n_evict);
    test_assert_same_fits(a, b);
    fm_calibration_free(b);

    /* without ResNeXt's and RegNetY's shapes: two of the quick sweep's seven grouped
     * convolutions are left (test_leave_out), so the grouped forward fit has 2 points */
    snprintf(args, sizeof(args),
             "calibrate --from-samples %s --like %s --leave-out regnet,resnext -o %s", csv_path,
             cal_path, path);
    rc = test_run_cli(args, &out, &err);
    if (rc != 0)
        fail_msg("calibrate --from-samples --leave-out: exit %d: %s", rc, err ? err : "");
    assert_non_null(strstr(out, "taken from regnet,resnext left out"));
    free(out);
    free(err);
    FM_ASSERT_OK(ctx, fm_calibration_load(ctx, path, &b));
    assert_string_equal(b->left_out, "regnet,resnext");
    double t;
    assert_true(fm_calibration_time_at(b, FM_CLASS_CONV, "grouped", FM_PHASE_FWD, 1e9, 1e6,
                                       false, &t));
    bool found = false;
    for (size_t i = 0; i < b->n; i++) {
        const struct fm_calib_entry *e = &b->entries[i];
        if (e->cls == FM_CLASS_CONV && !strcmp(e->kind, "grouped") && e->phase == FM_PHASE_FWD &&
            !e->cold) {
            assert_int_equal(e->points, 2);
            found = true;
        }
    }
    assert_true(found);
    fm_calibration_free(b);
    fm_calibration_free(a);
    fm_ctx_free(ctx);
    unlink(path);

    /* the two go together */
    snprintf(args, sizeof(args), "calibrate --from-samples %s -o %s", csv_path, path);
    rc = test_run_cli(args, &out, &err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "--from-samples and --like go together"));
    free(out);
    free(err);
}

/* predict --calibration: JSON has t_calibrated_s per layer phase and for the step, and
 * run.step_s.calibrated; the calibrated step is the sum of the layers' plus the overhead. */
static void test_predict_calibrated(void **unused)
{
    (void)unused;
    cal_or_skip();
    char args[600], *out = NULL, *err = NULL;
    snprintf(args, sizeof(args), "predict mobilenet_v2 --batch 2 --calibration %s --format json",
             cal_path);
    int rc = test_run_cli(args, &out, &err);
    if (rc != 0)
        fail_msg("predict --calibration failed (%d): %s", rc, err);
    assert_non_null(strstr(out, "\"t_calibrated_s\""));
    assert_non_null(strstr(out, "\"calibration\": {"));
    /* each layer names the kind whose fit timed it: MobileNetV2 opens with a dense 3x3
     * convolution, then BatchNorm, ReLU6, a depthwise 3x3 */
    const char *first = strstr(out, "\"name\": \"features.0.0\"");
    assert_non_null(first);
    assert_non_null(strstr(first, "\"kind\": \"dense\""));
    assert_true(strstr(first, "\"kind\": \"dense\"") <
                strstr(first, "\"name\": \"features.0.1\""));
    assert_non_null(strstr(out, "\"kind\": \"depthwise\""));
    const char *run = strstr(out, "\"run\"");
    assert_non_null(run);
    const char *cal = strstr(run, "\"calibrated\": ");
    assert_non_null(cal);
    double step = strtod(cal + strlen("\"calibrated\": "), NULL);
    assert_true(step > 0);
    free(out);
    free(err);
    /* the table marks it and names the file's device */
    snprintf(args, sizeof(args), "predict mobilenet_v2 --batch 2 --calibration %s --summary",
             cal_path);
    rc = test_run_cli(args, &out, &err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "calibrated step"));
    free(out);
    free(err);
}

/* measure --calibration: per layer calibrated time and error, where the time goes. */
static void test_measure_calibrated(void **unused)
{
    (void)unused;
    cal_or_skip();
    char args[600], *out = NULL, *err = NULL;
    snprintf(args, sizeof(args), "measure mobilenet_v2 --batch 2 --steps 2 --warmup 1 "
             "--threads 2 --calibration %s", cal_path);
    int rc = test_run_cli(args, &out, &err);
    if (rc != 0)
        fail_msg("measure --calibration failed (%d): %s", rc, err);
    assert_non_null(strstr(out, "cal ms"));
    assert_non_null(strstr(out, "where the time goes"));
    assert_non_null(strstr(out, "memory-bound"));
    assert_non_null(strstr(out, "in short:"));
    free(out);
    free(err);
    /* another thread count than the file's: refused, naming the field, before anything runs */
    snprintf(args, sizeof(args), "measure mobilenet_v2 --batch 2 --steps 1 --warmup 0 "
             "--threads 1 --calibration %s", cal_path);
    rc = test_run_cli(args, &out, &err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "threads"));
    assert_non_null(strstr(err, "--force-calibration"));
    assert_null(strstr(out, "step "));
    free(out);
    free(err);
    strcat(args, " --force-calibration");
    rc = test_run_cli(args, &out, &err);
    assert_int_equal(rc, 0);
    free(out);
    free(err);
}

/* A calibration file is a device file too: `device NAME --devices FILE` shows the machine with
 * the probed peak and bandwidth the file states and says where it came from, and `predict
 * --devices FILE` with no --device predicts on it, calibrated, without a probe. */
/* A GPU's calibration predicts for that GPU on a machine without one: predict --calibration of
 * the committed H100 file needs no GPU (its device is the file's), and its calibrated step is
 * the sum of its layer phases' calibrated times plus the file's per-step overhead. */
static void test_gpu_calibration_without_gpu(void **unused)
{
    (void)unused;
#ifdef FM_HAVE_CJSON
    char *out = NULL, *err = NULL;
    int rc = test_run_cli("predict resnet18 --batch 32 --precision tf32 --calibration "
                          FM_SOURCE_DIR "/bench/data/h100/cuda_tf32.calib.json --format json",
                          &out, &err);
    if (rc != 0)
        fail_msg("predict --calibration (a GPU's) failed (%d): %s", rc, err);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "device")->valuestring, "NVIDIA H100 80GB HBM3");
    double sum = 0;
    const cJSON *l, *ph;
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(j, "layers")) {
        cJSON_ArrayForEach(ph, l) {
            const cJSON *t = cJSON_IsObject(ph) ? cJSON_GetObjectItem(ph, "t_calibrated_s") : NULL;
            if (cJSON_IsNumber(t))
                sum += t->valuedouble;
        }
    }
    struct fm_ctx *ctx = test_ctx();
    struct fm_calibration *cal = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_load(ctx, FM_SOURCE_DIR
                                          "/bench/data/h100/cuda_tf32.calib.json", &cal));
    double step = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "run"),
                                                          "step_s"), "calibrated")->valuedouble;
    assert_true(sum > 0);
    assert_true(fabs(step - (sum + cal->step_overhead_s)) <= 1e-9 * step);
    fm_calibration_free(cal);
    fm_ctx_free(ctx);
    cJSON_Delete(j);
    free(out);
    free(err);
#else
    skip();
#endif
}

static void test_calibration_is_a_device(void **unused)
{
    (void)unused;
    cal_or_skip();
    struct fm_ctx *ctx = test_ctx();
    struct fm_calibration *cal;
    FM_ASSERT_OK(ctx, fm_calibration_load(ctx, cal_path, &cal));
    struct fm_devices *devs;
    FM_ASSERT_OK(ctx, fm_devices_load(ctx, cal_path, &devs));
    const struct fm_device *d = NULL;
    FM_ASSERT_OK(ctx, fm_devices_find(ctx, devs, cal->device, &d));
    assert_string_equal(d->name, cal->device);
    assert_string_equal(d->kind, "cpu");
    assert_true(d->peak_vector[FM_PREC_FP32] == cal->peak);
    assert_true(d->mem_bw == cal->bandwidth);
    assert_non_null(strstr(d->source, "flopmeter calibrate"));
    char args[600], *out = NULL, *err = NULL;
    snprintf(args, sizeof(args), "predict resnet18 --batch 2 --devices %s --format json",
             cal_path);
    int rc = test_run_cli(args, &out, &err);
    if (rc != 0)
        fail_msg("predict --devices CALIBRATION failed (%d): %s", rc, err);
    char want[200];
    snprintf(want, sizeof(want), "\"device\": \"%s\"", cal->device);
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, "\"calibration\": {"));
    assert_non_null(strstr(out, "\"t_calibrated_s\""));
    free(out);
    free(err);
    fm_devices_free(devs);
    fm_calibration_free(cal);
    fm_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_time_loss_exact),
        cmocka_unit_test(test_calibrate_file),
        cmocka_unit_test(test_leave_out),
        cmocka_unit_test(test_refit),
        cmocka_unit_test(test_predict_calibrated),
        cmocka_unit_test(test_measure_calibrated),
        cmocka_unit_test(test_calibration_is_a_device),
        cmocka_unit_test(test_gpu_calibration_without_gpu),
    };
    return TEST_RUN_CASES(argc, argv, tests, make_calibration, remove_calibration);
}
