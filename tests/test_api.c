/* The public header as a program outside the library reads it: the session's and the
 * calibration's accessors return exactly what their (internal) bodies hold, the version macros
 * and fm_version() agree, and the ONNX frontend's op list (src/frontend/onnx/onnx_ops.h) names
 * each op of FM_OP_LIST at most once, each ONNX op type once, and only op types the frontend
 * reads. docs/api.md is the contract these check. */
#include "support.h"
#include "frontend/onnx/onnx_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* predict with two GPUs: every accessor against the field it reads */
static void test_session_accessors(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_PREDICT);
    o.model = "resnet18";
    o.device = "a100";
    o.load.zoo.batch = 8;
    o.load.batch_given = true;
    o.gpus = 2;
    o.dataset_size = 1000;
    struct fm_session *s = test_session_ok(ctx, &o);

    assert_ptr_equal(fm_session_graph(s), s->graph);
    assert_ptr_equal(fm_session_counts(s), s->counts);
    assert_ptr_equal(fm_session_loss(s), &s->loss);
    assert_int_equal(fm_session_loss(s)->n, 1);
    assert_int_equal(fm_session_batch(s), 8);
    enum fm_dtype act = FM_DTYPE_COUNT, par = FM_DTYPE_COUNT;
    assert_ptr_equal(fm_session_storage(s, &act, &par), s->storage_how);
    assert_int_equal(act, FM_DTYPE_FP32);
    assert_int_equal(par, FM_DTYPE_FP32);
    assert_string_equal(fm_session_export_note(s), "");
    const char *how = NULL, *note = NULL;
    const struct fm_device *dev = fm_session_device(s, &how, &note);
    assert_ptr_equal(dev, s->device);
    assert_non_null(dev);
    assert_ptr_equal(how, s->device_how);
    assert_ptr_equal(note, s->device_note);
    assert_ptr_equal(fm_session_device(s, NULL, NULL), dev);
    assert_null(fm_session_probe(s));   /* a table entry: nothing probed */
    assert_ptr_equal(fm_session_memory(s), &s->memory);
    assert_true(fm_session_memory(s)->checked);
    bool td = true;
    assert_int_equal(fm_session_precision(s, &td), FM_PREC_FP32);
    assert_false(td);
    assert_string_equal(fm_session_precision_label(s), "fp32");
    const char *src = NULL;
    assert_true(fm_session_peak(s, &src) == s->peak && s->peak > 0);
    assert_ptr_equal(src, s->peak_source);
    assert_ptr_equal(fm_session_prediction(s), s->prediction);
    assert_non_null(s->prediction);
    assert_ptr_equal(fm_session_run_estimate(s, false), &s->run);
    assert_ptr_equal(fm_session_run_estimate(s, true), &s->run_1gpu);
    assert_int_equal(fm_session_run_estimate(s, false)->gpus, 2);
    assert_int_equal(fm_session_run_estimate(s, true)->gpus, 1);
    const char *link = NULL;
    assert_ptr_equal(fm_session_data_parallel(s, &link), &s->dp);
    assert_ptr_equal(link, s->link_name);
    assert_int_equal(fm_session_data_parallel(s, NULL)->gpus, 2);
    /* what predict does not make */
    assert_null(fm_session_utilization(s));
    assert_null(fm_session_backend_check(s));
    assert_null(fm_session_measurement(s));
    uint64_t steps = 7;
    double secs = 7;
    assert_null(fm_session_epoch(s, &steps, &secs));
    assert_true(steps == 0 && secs == 0);
    fm_session_free(s);

    /* utilization: its figures; count: no prediction, no run */
    fm_session_opts_init(&o, FM_TASK_UTILIZATION);
    o.model = "resnet18";
    o.device = "a100";
    o.step_s = 0.1;
    s = test_session_ok(ctx, &o);
    assert_ptr_equal(fm_session_utilization(s), &s->util);
    assert_null(fm_session_run_estimate(s, false));
    assert_null(fm_session_data_parallel(s, NULL));
    fm_session_free(s);
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = "resnet18";
    s = test_session_ok(ctx, &o);
    assert_null(fm_session_prediction(s));
    assert_null(fm_session_device(s, NULL, NULL));
    assert_false(fm_session_memory(s)->checked);
    fm_session_free(s);

    /* measure, resolved but not run: the backend's check, no steps */
    fm_session_opts_init(&o, FM_TASK_MEASURE);
    o.model = "resnet18";
    o.device = "cpu";
    o.dry_run = true;
    s = test_session_ok(ctx, &o);
    assert_ptr_equal(fm_session_backend_check(s), &s->check);
    assert_true(fm_session_backend_check(s)->n_nodes > 0);
    assert_null(fm_session_measurement(s));
    fm_session_free(s);
    fm_ctx_free(ctx);
}

#define CALIB FM_SOURCE_DIR "/bench/data/h100/cuda_tf32.calib.json"
#define SAMPLES FM_SOURCE_DIR "/bench/data/h100/cuda_tf32.samples.csv"

/* fm_calibration_info: the header, the fits and the eviction curve, pointing into the file */
static void test_calibration_info(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_calibration *c = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_load(ctx, CALIB, &c));
    struct fm_calibration_info ci;
    memset(&ci, 0xa5, sizeof(ci));
    fm_calibration_info(c, &ci);
    assert_ptr_equal(ci.device, c->device);
    assert_string_equal(ci.device, "NVIDIA H100 80GB HBM3");
    assert_string_equal(ci.backend, "cuda");
    assert_int_equal(ci.threads, c->threads);
    assert_int_equal(ci.precision, FM_PREC_TF32);
    assert_ptr_equal(ci.date, c->date);
    assert_true(ci.peak == c->peak && ci.bandwidth == c->bandwidth && ci.peak > 0);
    assert_true(ci.step_overhead_s == c->step_overhead_s);
    assert_int_equal(ci.rounds, c->rounds);
    assert_ptr_equal(ci.left_out, c->left_out);
    assert_string_equal(ci.source, CALIB);
    assert_int_equal(ci.n_entries, c->n);
    assert_true(ci.n_entries > 0);
    assert_ptr_equal(ci.entries, c->entries);
    assert_int_equal(ci.n_evict, 0);   /* the GPU's file has no eviction curve */
    c->n_evict = 2;
    c->evict_bytes[1] = 3e7;
    c->evict_frac[1] = 0.5;
    fm_calibration_info(c, &ci);
    assert_int_equal(ci.n_evict, 2);
    assert_true(ci.evict_bytes[1] == 3e7 && ci.evict_frac[1] == 0.5);
    fm_calibration_free(c);
    fm_ctx_free(ctx);
}

/* fm_calibration_refit is the fit of the samples with the other file's header and left_out,
 * entry for entry; a list longer than the file records is refused with nothing made */
static void test_calibration_refit(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_calibration *like = NULL, *a = NULL, *b = NULL;
    struct fm_calib_sample *v = NULL;
    size_t n = 0, dropped = 0;
    FM_ASSERT_OK(ctx, fm_calibration_load(ctx, CALIB, &like));
    FM_ASSERT_OK(ctx, fm_calib_samples_load(ctx, SAMPLES, "resnet", &v, &n, &dropped));
    assert_true(n > 0 && dropped > 0);
    FM_ASSERT_OK(ctx, fm_calibration_refit(ctx, like, v, n, "resnet", &a));
    struct fm_calibration meta = *like;
    meta.entries = NULL;
    meta.n = 0;
    snprintf(meta.left_out, sizeof(meta.left_out), "resnet");
    FM_ASSERT_OK(ctx, fm_calibration_fit(ctx, v, n, &meta, &b));
    test_assert_same_fits(a, b);
    struct fm_calibration_info ia, il;
    fm_calibration_info(a, &ia);
    fm_calibration_info(like, &il);
    assert_string_equal(ia.left_out, "resnet");
    assert_string_equal(ia.device, il.device);
    assert_true(ia.step_overhead_s == il.step_overhead_s && ia.n_evict == il.n_evict);
    assert_int_equal(ia.n_entries, b->n);

    char longlist[FM_CALIB_LIST_MAX + 8];
    memset(longlist, 'x', sizeof(longlist) - 1);
    longlist[sizeof(longlist) - 1] = '\0';
    struct fm_calibration *c = (struct fm_calibration *)1;
    assert_int_equal(fm_calibration_refit(ctx, like, v, n, longlist, &c), FM_ERR_INVALID);
    assert_null(c);
    EXPECT_MESSAGE(ctx, "left_out", "too long");
    fm_calibration_free(a);
    fm_calibration_free(b);
    fm_calibration_free(like);
    fm_dealloc(ctx, v);
    fm_ctx_free(ctx);
}

/* the library's version is the header's, and the string spells the numbers */
static void test_version(void **state)
{
    (void)state;
    char v[32];
    snprintf(v, sizeof(v), "%d.%d.%d", FM_VERSION_MAJOR, FM_VERSION_MINOR, FM_VERSION_PATCH);
    assert_string_equal(FM_VERSION, v);
    assert_string_equal(fm_version(), FM_VERSION);
}

struct onnx_row {
    enum fm_op op;
    const char *onnx;
};
#define ROW_(ID, onnx, map, slots) {FM_OP_##ID, onnx},
static const struct onnx_row onnx_rows[] = {OX_OP_LIST(ROW_)};
#undef ROW_

/* Each row of the ONNX frontend's list names a counted op once; each ONNX op type appears
 * once; the frontend reads every listed op type */
static void test_onnx_op_list(void **state)
{
    (void)state;
    size_t n = sizeof(onnx_rows) / sizeof(onnx_rows[0]);
    assert_true(n > 100);
    int seen[FM_OP_COUNT] = {0};
    for (size_t i = 0; i < n; i++) {
        const struct onnx_row *r = &onnx_rows[i];
        if (r->op <= FM_OP_UNKNOWN || r->op >= FM_OP_COUNT)
            fail_msg("row %zu (%s) names no op", i, r->onnx);
        if (seen[r->op]++)
            fail_msg("%s is listed twice (again as %s)", fm_op_name(r->op), r->onnx);
        assert_non_null(r->onnx);
        for (size_t j = 0; j < i; j++) {
            if (strcmp(onnx_rows[j].onnx, r->onnx) == 0)
                fail_msg("ONNX op type %s is listed twice", r->onnx);
        }
#ifdef FM_HAVE_ONNX
        const char *colon = strchr(r->onnx, ':');
        char domain[32] = "";
        if (colon)
            snprintf(domain, sizeof(domain), "%.*s", (int)(colon - r->onnx), r->onnx);
        if (!fm_onnx_op_known(domain, colon ? colon + 1 : r->onnx))
            fail_msg("the ONNX frontend does not read %s, which its list maps to %s", r->onnx,
                     fm_op_name(r->op));
#endif
    }
    /* ops the PyTorch-style built-ins use and no ONNX op type is: no row */
    assert_int_equal(seen[FM_OP_LINEAR], 0);
    assert_int_equal(seen[FM_OP_CROSS_ENTROPY], 0);
    assert_int_equal(seen[FM_OP_CONV], 1);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_session_accessors),
        cmocka_unit_test(test_calibration_info),
        cmocka_unit_test(test_calibration_refit),
        cmocka_unit_test(test_onnx_op_list),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
