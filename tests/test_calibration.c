/* Tests of calibration (src/analysis/calibration.c, docs/calibration.md): the relative
 * non-negative least-squares fit recovers the parameters that generated synthetic timings
 * (terms that are zero stay exactly zero; groups of one and two samples); its optimum satisfies
 * the NNLS optimality conditions on noisy data; a file saved and loaded gives every field back
 * bit for bit; malformed files are refused naming the file, the line and the field; the device
 * check names the field and both values; and a prediction with a calibration gives each
 * node-phase fixed + FLOPs x a + bytes x b from its own counts, falls back to PALEO where the
 * calibration has no entry, and follows the batch exactly as the formula says. */
#include "support.h"

#include "analysis/analysis.h"
#include "analysis/calib_common.h"
#include "analysis/calibration_internal.h"
#include "backend/backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* relative closeness */
#define ASSERT_NEAR(a, b, rel)                                                               \
    do {                                                                                     \
        double a_ = (a), b_ = (b);                                                           \
        if (!(fabs(a_ - b_) <= (rel) * fmax(fabs(a_), fabs(b_))))                            \
            fail_msg("%s = %.17g, expected %s = %.17g", #a, a_, #b, b_);                     \
    } while (0)

/* bit-identical doubles (0.0 and -0.0 differ, as they would after a lossy round trip) */
#define ASSERT_SAME_BITS(a, b)                                                               \
    do {                                                                                     \
        double a_ = (a), b_ = (b);                                                           \
        if (memcmp(&a_, &b_, sizeof(double)) != 0)                                           \
            fail_msg("%s = %.17g is not bit-identical to %s = %.17g", #a, a_, #b, b_);       \
    } while (0)

/* ---- helpers ---- */

static struct fm_calib_sample sample(enum fm_class cls, const char *kind, enum fm_phase phase,
                                     double flops, double bytes, double seconds)
{
    struct fm_calib_sample s;
    memset(&s, 0, sizeof(s));
    s.cls = cls;
    snprintf(s.kind, sizeof(s.kind), "%s", kind);
    s.phase = phase;
    s.flops = flops;
    s.bytes = bytes;
    s.seconds = seconds;
    return s;
}

/* The model's time, evaluated as the library does: fixed + flops x a + bytes x b. */
static double model(double fixed, double a, double b, double flops, double bytes)
{
    return fixed + flops * a + bytes * b;
}

static const struct fm_calib_entry *entry(const struct fm_calibration *c, enum fm_class cls,
                                          const char *kind, enum fm_phase phase)
{
    for (size_t i = 0; i < c->n; i++) {
        const struct fm_calib_entry *e = &c->entries[i];
        if (e->cls == cls && e->phase == phase && strcmp(e->kind, kind) == 0)
            return e;
    }
    fail_msg("no entry %s \"%s\" %s", fm_class_name(cls), kind, fm_phase_name(phase));
    return NULL;
}

static struct fm_calibration meta(void)
{
    struct fm_calibration m;
    memset(&m, 0, sizeof(m));
    snprintf(m.device, sizeof(m.device), "%s", "Test CPU 9000");
    snprintf(m.backend, sizeof(m.backend), "%s", "cpu");
    m.threads = 2;
    m.precision = FM_PREC_FP32;
    snprintf(m.date, sizeof(m.date), "%s", "2026-11-24T06:00:00Z");
    m.peak = 1.0 / 3.0 * 1e11;
    m.bandwidth = 2.0e10 / 7.0;
    m.step_overhead_s = 1.25e-4;
    m.rounds = 3;
    snprintf(m.left_out, sizeof(m.left_out), "%s", "resnet,vgg");
    return m;
}

static char *temp_path(void)
{
    static char path[64];
    snprintf(path, sizeof(path), "%s", "/tmp/fm_test_calib_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    return path;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

#ifdef FM_HAVE_CJSON
/* The 1-based line of the first occurrence of needle in text. */
static int line_of(const char *text, const char *needle)
{
    const char *at = strstr(text, needle);
    if (!at)
        fail_msg("\"%s\" is not in the text", needle);
    int line = 1;
    for (const char *p = text; p < at; p++)
        line += *p == '\n';
    return line;
}

/* text with the first occurrence of from replaced by to (malloc'd). */
static char *replaced(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (!at)
        fail_msg("\"%s\" is not in the text", from);
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    assert_non_null(out);
    size_t pre = (size_t)(at - text);
    memcpy(out, text, pre);
    strcpy(out + pre, to);
    strcat(out, at + strlen(from));
    return out;
}
#endif

/* ---- (a) the fit ---- */

static void test_fit_recovers_parameters(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_calib_sample s[32];
    size_t n = 0;
    /* conv dense fwd, all three terms: FLOPs and bytes in varied ratios (1e8..2e10 FLOPs) */
    const double cf = 4e-6, ca = 2.5e-11, cb = 8e-11;
    const double conv_fb[][2] = {{1.2e8, 3.1e6}, {9.6e8, 1.4e7}, {3.7e9, 2.2e7},
                                 {2.0e10, 1.1e8}, {5.5e8, 4.0e7}, {7.1e9, 9.0e6}};
    for (size_t i = 0; i < 6; i++)
        s[n++] = sample(FM_CLASS_CONV, "dense", FM_PHASE_FWD, conv_fb[i][0], conv_fb[i][1],
                        model(cf, ca, cb, conv_fb[i][0], conv_fb[i][1]));
    /* conv depthwise fwd: the true s_per_byte is 0 although every sample moves bytes */
    const double df = 6e-6, da = 1e-10;
    const double dw_fb[][2] = {{1e6, 4e6}, {8e6, 9e6}, {3e7, 1e8}, {2e5, 3e5}, {6e7, 7e7}};
    for (size_t i = 0; i < 5; i++)
        s[n++] = sample(FM_CLASS_CONV, "depthwise", FM_PHASE_FWD, dw_fb[i][0], dw_fb[i][1],
                        model(df, da, 0.0, dw_fb[i][0], dw_fb[i][1]));
    /* matmul bwd_data: no fixed cost */
    const double ma = 1.5e-11, mb = 5e-11;
    const double mm_fb[][2] = {{4e9, 6e7}, {1e8, 2e7}, {6e10, 3e8}, {2e9, 1e6}};
    for (size_t i = 0; i < 4; i++)
        s[n++] = sample(FM_CLASS_MATMUL, "", FM_PHASE_BWD_DATA, mm_fb[i][0], mm_fb[i][1],
                        model(0.0, ma, mb, mm_fb[i][0], mm_fb[i][1]));
    /* data movement fwd, two samples, no FLOPs: fixed + bytes exactly */
    const double xf = 3e-6, xb = 1e-10;
    s[n++] = sample(FM_CLASS_DATA_MOVEMENT, "", FM_PHASE_FWD, 0, 1e6, model(xf, 0, xb, 0, 1e6));
    s[n++] = sample(FM_CLASS_DATA_MOVEMENT, "", FM_PHASE_FWD, 0, 5e7, model(xf, 0, xb, 0, 5e7));
    /* elementwise bwd_data, two samples with FLOPs and bytes, made by fixed + FLOPs */
    const double ef = 2e-6, ea = 7e-10;
    s[n++] = sample(FM_CLASS_ELEMENTWISE, "", FM_PHASE_BWD_DATA, 1e5, 1.2e6,
                    model(ef, ea, 0, 1e5, 1.2e6));
    s[n++] = sample(FM_CLASS_ELEMENTWISE, "", FM_PHASE_BWD_DATA, 4e6, 3.0e7,
                    model(ef, ea, 0, 4e6, 3.0e7));
    /* norm optimizer, one sample: its effective FLOP rate */
    s[n++] = sample(FM_CLASS_NORM, "", FM_PHASE_OPTIMIZER, 2e6, 2.4e7, 5e-5);
    struct fm_calibration m = meta();
    struct fm_calibration *c = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_fit(ctx, s, n, &m, &c));
    /* 6 groups, and the whole class of the convolutions' forward (its dense and depthwise
     * samples together), the fallback for a kind without a fit */
    assert_int_equal(c->n, 7);
    assert_int_equal(entry(c, FM_CLASS_CONV, "", FM_PHASE_FWD)->points, 11);
    /* header copied */
    assert_int_equal(c->version, FM_CALIB_VERSION);
    assert_string_equal(c->device, m.device);
    assert_string_equal(c->backend, "cpu");
    assert_int_equal(c->threads, 2);
    assert_int_equal(c->precision, FM_PREC_FP32);
    assert_string_equal(c->date, m.date);
    ASSERT_SAME_BITS(c->peak, m.peak);
    ASSERT_SAME_BITS(c->bandwidth, m.bandwidth);
    ASSERT_SAME_BITS(c->step_overhead_s, m.step_overhead_s);
    assert_string_equal(c->source, "");
    /* entries in class, kind, phase order */
    for (size_t i = 1; i < c->n; i++)
        assert_true(c->entries[i - 1].cls <= c->entries[i].cls);

    const struct fm_calib_entry *e = entry(c, FM_CLASS_CONV, "dense", FM_PHASE_FWD);
    ASSERT_NEAR(e->fixed_s, cf, 1e-9);
    ASSERT_NEAR(e->s_per_flop, ca, 1e-9);
    ASSERT_NEAR(e->s_per_byte, cb, 1e-9);
    assert_int_equal(e->points, 6);
    assert_true(e->rel_rms < 1e-12);

    e = entry(c, FM_CLASS_CONV, "depthwise", FM_PHASE_FWD);
    ASSERT_NEAR(e->fixed_s, df, 1e-9);
    ASSERT_NEAR(e->s_per_flop, da, 1e-9);
    assert_true(e->s_per_byte == 0.0);   /* exactly: the term the data does not need is out */
    assert_int_equal(e->points, 5);

    e = entry(c, FM_CLASS_MATMUL, "", FM_PHASE_BWD_DATA);
    assert_true(e->fixed_s == 0.0);
    ASSERT_NEAR(e->s_per_flop, ma, 1e-9);
    ASSERT_NEAR(e->s_per_byte, mb, 1e-9);

    e = entry(c, FM_CLASS_DATA_MOVEMENT, "", FM_PHASE_FWD);
    ASSERT_NEAR(e->fixed_s, xf, 1e-9);
    assert_true(e->s_per_flop == 0.0);
    ASSERT_NEAR(e->s_per_byte, xb, 1e-9);
    assert_int_equal(e->points, 2);
    assert_true(e->rel_rms < 1e-12);

    e = entry(c, FM_CLASS_ELEMENTWISE, "", FM_PHASE_BWD_DATA);
    ASSERT_NEAR(e->fixed_s, ef, 1e-9);
    ASSERT_NEAR(e->s_per_flop, ea, 1e-9);
    assert_true(e->s_per_byte == 0.0);
    assert_int_equal(e->points, 2);

    e = entry(c, FM_CLASS_NORM, "", FM_PHASE_OPTIMIZER);
    assert_true(e->fixed_s == 0.0 && e->s_per_byte == 0.0);
    ASSERT_NEAR(e->s_per_flop, 5e-5 / 2e6, 1e-14);
    assert_int_equal(e->points, 1);
    assert_true(e->rel_rms < 1e-14);

    /* the samples' order does not matter */
    struct fm_calib_sample r[32];
    for (size_t i = 0; i < n; i++)
        r[i] = s[n - 1 - i];
    struct fm_calibration *c2 = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_fit(ctx, r, n, &m, &c2));
    assert_int_equal(c2->n, c->n);
    for (size_t i = 0; i < c->n; i++) {
        ASSERT_NEAR(c2->entries[i].fixed_s, c->entries[i].fixed_s, 1e-12);
        ASSERT_NEAR(c2->entries[i].s_per_flop, c->entries[i].s_per_flop, 1e-12);
        ASSERT_NEAR(c2->entries[i].s_per_byte, c->entries[i].s_per_byte, 1e-12);
    }
    fm_calibration_free(c2);
    fm_calibration_free(c);
    fm_ctx_free(ctx);
}

/* A deterministic pseudo-random number in [0, 1) (a 64-bit LCG, Knuth's MMIX constants). */
static double uniform(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*state >> 11) / 9007199254740992.0;
}

/* Many groups made without one term: that term comes out exactly 0 in every one, the others
 * within 1e-9, whatever rounding does to the three-term fit (a tiny positive coefficient that
 * rounding makes look better does not win). */
static void test_fit_zero_terms_exact(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    enum { GROUPS = FM_CLASS_COUNT * FM_PHASE_COUNT, PER = 6 };
    struct fm_calib_sample s[GROUPS * PER];
    double truth[GROUPS][3];
    uint64_t rng = 12345;
    for (int g = 0; g < GROUPS; g++) {
        int zero = g % 3;   /* which term the group is made without */
        for (int j = 0; j < 3; j++)
            truth[g][j] = j == zero ? 0.0
                                    : (j == 0 ? 1e-6 : j == 1 ? 1e-11 : 1e-10) *
                                          (0.5 + 4 * uniform(&rng));
        /* a distinct (class, phase) per group */
        enum fm_class cls = (enum fm_class)(g % FM_CLASS_COUNT);
        enum fm_phase ph = (enum fm_phase)(g / FM_CLASS_COUNT);
        for (int i = 0; i < PER; i++) {
            double f = pow(10, 5 + 5 * uniform(&rng)), b = pow(10, 4 + 4 * uniform(&rng));
            s[g * PER + i] = sample(cls, "", ph, f, b,
                                    model(truth[g][0], truth[g][1], truth[g][2], f, b));
        }
    }
    struct fm_calibration m = meta();
    struct fm_calibration *c = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_fit(ctx, s, GROUPS * PER, &m, &c));
    assert_int_equal(c->n, GROUPS);
    for (int g = 0; g < GROUPS; g++) {
        const struct fm_calib_entry *e =
            entry(c, (enum fm_class)(g % FM_CLASS_COUNT), "", (enum fm_phase)(g / FM_CLASS_COUNT));
        const double got[3] = {e->fixed_s, e->s_per_flop, e->s_per_byte};
        for (int j = 0; j < 3; j++) {
            if (truth[g][j] == 0 && got[j] != 0)
                fail_msg("group %d: term %d is %.17g, made as 0", g, j, got[j]);
            ASSERT_NEAR(got[j], truth[g][j], 1e-9);
        }
    }
    fm_calibration_free(c);
    fm_ctx_free(ctx);
}

/* The weighted SSE's gradient with respect to each coefficient, scaled by the column's norm:
 * at the NNLS optimum it is 0 for a positive coefficient and >= 0 for a zero one (KKT). */
static void kkt_gradient(const struct fm_calib_sample *s, size_t n,
                         const struct fm_calib_entry *e, double grad[3])
{
    double norm[3] = {0};
    grad[0] = grad[1] = grad[2] = 0;
    for (size_t i = 0; i < n; i++) {
        double t = s[i].seconds;
        double fit = model(e->fixed_s, e->s_per_flop, e->s_per_byte, s[i].flops, s[i].bytes);
        double r = (fit - t) / t;
        double x[3] = {1.0 / t, s[i].flops / t, s[i].bytes / t};
        for (int j = 0; j < 3; j++) {
            grad[j] += 2 * r * x[j];
            norm[j] += x[j] * x[j];
        }
    }
    for (int j = 0; j < 3; j++)
        grad[j] /= sqrt(norm[j]);
}

static void test_fit_nnls_optimum(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    /* noisy timings where the unconstrained fit wants a negative byte rate: time falls as bytes
     * rise at fixed FLOPs */
    struct fm_calib_sample s[8];
    const double fb[][3] = {{1e9, 1e6, 1.10e-2}, {1e9, 5e7, 0.95e-2}, {4e9, 2e6, 4.3e-2},
                            {4e9, 9e7, 3.9e-2},  {2e8, 3e6, 2.6e-3},  {8e9, 1e8, 8.1e-2},
                            {6e8, 4e7, 6.2e-3},  {3e9, 3e6, 3.2e-2}};
    for (size_t i = 0; i < 8; i++)
        s[i] = sample(FM_CLASS_MATMUL, "", FM_PHASE_FWD, fb[i][0], fb[i][1], fb[i][2]);
    struct fm_calibration m = meta();
    struct fm_calibration *c = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_fit(ctx, s, 8, &m, &c));
    assert_int_equal(c->n, 1);
    const struct fm_calib_entry *e = &c->entries[0];
    assert_true(e->fixed_s >= 0 && e->s_per_flop >= 0 && e->s_per_byte >= 0);
    assert_true(e->s_per_byte == 0.0);   /* the constraint is active */
    double grad[3];
    kkt_gradient(s, 8, e, grad);
    const double coef[3] = {e->fixed_s, e->s_per_flop, e->s_per_byte};
    for (int j = 0; j < 3; j++) {
        if (coef[j] > 0)
            assert_true(fabs(grad[j]) < 1e-9);
        else
            assert_true(grad[j] > -1e-9);
    }
    /* rel_rms is the RMS of the relative residuals of the chosen fit */
    double sse = 0;
    for (size_t i = 0; i < 8; i++) {
        double r = (model(e->fixed_s, e->s_per_flop, e->s_per_byte, s[i].flops, s[i].bytes) -
                    s[i].seconds) /
                   s[i].seconds;
        sse += r * r;
    }
    ASSERT_NEAR(e->rel_rms, sqrt(sse / 8), 1e-12);
    assert_true(e->rel_rms > 0.001);
    fm_calibration_free(c);
    fm_ctx_free(ctx);
}

static void test_fit_errors(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_calibration m = meta();
    struct fm_calibration *c = NULL;
    struct fm_calib_sample s[4];
    for (int i = 0; i < 4; i++)
        s[i] = sample(FM_CLASS_CONV, "dense", FM_PHASE_FWD, 1e9 * (i + 1), 1e6, 1e-3 * (i + 1));
    assert_int_equal(fm_calibration_fit(ctx, s, 0, &m, &c), FM_ERR_INVALID);
    s[3].seconds = 0;
    assert_int_equal(fm_calibration_fit(ctx, s, 4, &m, &c), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "sample 3", "positive");
    assert_null(c);
    s[3].seconds = NAN;
    assert_int_equal(fm_calibration_fit(ctx, s, 4, &m, &c), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "sample 3");
    s[3].seconds = 1e-3;
    s[2].flops = INFINITY;
    assert_int_equal(fm_calibration_fit(ctx, s, 4, &m, &c), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "sample 2", "FLOPs");
    s[2].flops = 1e9;
    s[1].bytes = -1;
    assert_int_equal(fm_calibration_fit(ctx, s, 4, &m, &c), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "sample 1");
    s[1].bytes = 1e6;
    snprintf(s[0].kind, sizeof(s[0].kind), "%s", "wino grad");
    assert_int_equal(fm_calibration_fit(ctx, s, 4, &m, &c), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "sample 0", "wino grad");
    snprintf(s[0].kind, sizeof(s[0].kind), "%s", "dense");
    s[0].cls = FM_CLASS_COUNT;
    assert_int_equal(fm_calibration_fit(ctx, s, 4, &m, &c), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "sample 0", "class");
    assert_null(c);
    fm_ctx_free(ctx);
}

/* ---- (b) the file ---- */

static void expect_same_calibration(const struct fm_calibration *a, const struct fm_calibration *b)
{
    assert_int_equal(a->version, b->version);
    assert_string_equal(a->device, b->device);
    assert_string_equal(a->backend, b->backend);
    assert_int_equal(a->threads, b->threads);
    assert_int_equal(a->precision, b->precision);
    assert_string_equal(a->date, b->date);
    ASSERT_SAME_BITS(a->peak, b->peak);
    ASSERT_SAME_BITS(a->bandwidth, b->bandwidth);
    ASSERT_SAME_BITS(a->step_overhead_s, b->step_overhead_s);
    assert_int_equal(a->rounds, b->rounds);
    assert_string_equal(a->left_out, b->left_out);
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const struct fm_calib_entry *x = &a->entries[i], *y = &b->entries[i];
        assert_int_equal(x->cls, y->cls);
        assert_string_equal(x->kind, y->kind);
        assert_int_equal(x->phase, y->phase);
        ASSERT_SAME_BITS(x->fixed_s, y->fixed_s);
        ASSERT_SAME_BITS(x->s_per_flop, y->s_per_flop);
        ASSERT_SAME_BITS(x->s_per_byte, y->s_per_byte);
        assert_int_equal(x->points, y->points);
        ASSERT_SAME_BITS(x->rel_rms, y->rel_rms);
    }
}

static void test_save_load_round_trip(void **state)
{
    (void)state;
#ifndef FM_HAVE_CJSON
    skip();   /* this build cannot read the file back (test_load_errors checks the message) */
#endif
    struct fm_ctx *ctx = test_ctx();
    /* a fitted calibration (doubles that are not round decimals), then hand-set awkward values:
     * a third, the smallest subnormal, the largest double, a value next to a round one */
    struct fm_calib_sample s[] = {
        sample(FM_CLASS_CONV, "pointwise", FM_PHASE_FWD, 3e8, 7e6, 1.7e-3),
        sample(FM_CLASS_CONV, "pointwise", FM_PHASE_FWD, 9e8, 2e7, 4.3e-3),
        sample(FM_CLASS_CONV, "pointwise", FM_PHASE_FWD, 1e8, 9e6, 9.1e-4),
        sample(FM_CLASS_CONV, "grouped", FM_PHASE_BWD_WEIGHT, 5e8, 3e6, 2.9e-3),
        sample(FM_CLASS_ATTENTION, "", FM_PHASE_BWD_DATA, 2e9, 4e7, 1.3e-2),
        sample(FM_CLASS_ATTENTION, "", FM_PHASE_BWD_DATA, 7e9, 9e7, 4.1e-2),
        sample(FM_CLASS_LOSS, "", FM_PHASE_FWD, 1e4, 8e4, 1.1e-5),
        sample(FM_CLASS_ELEMENTWISE, "", FM_PHASE_OPTIMIZER, 5e7, 4e8, 3.3e-2),
    };
    struct fm_calibration m = meta();
    snprintf(m.device, sizeof(m.device), "%s", "A \"quoted\" device\twith\\escapes, ünïcode");
    m.precision = FM_PREC_BF16;
    struct fm_calibration *c = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_fit(ctx, s, sizeof(s) / sizeof(s[0]), &m, &c));
    assert_int_equal(c->n, 7);   /* 5 groups and the two whole-class conv entries */
    c->entries[1].fixed_s = 1.0 / 3.0;
    c->entries[1].s_per_flop = 4.9406564584124654e-324;
    c->entries[1].s_per_byte = nextafter(1e-10, 1.0);
    c->entries[2].rel_rms = 1.7976931348623157e308;
    c->entries[2].points = 2147483647;
    char *path = temp_path();
    FM_ASSERT_OK(ctx, fm_calibration_save(ctx, c, path));
    struct fm_calibration *back = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_load(ctx, path, &back));
    expect_same_calibration(c, back);
    assert_string_equal(back->source, path);
    /* saved again, the file is the same text */
    char *first = test_read_file(path, NULL);
    FM_ASSERT_OK(ctx, fm_calibration_save(ctx, back, path));
    char *second = test_read_file(path, NULL);
    assert_string_equal(first, second);
    /* the documented keys are there */
    const char *keys[] = {"\"format\": \"flopmeter-calibration\"", "\"version\": 2",
                          "\"device\"", "\"backend\": \"cpu\"", "\"threads\": 2",
                          "\"precision\": \"bf16\"", "\"date\"", "\"peak_flops\"",
                          "\"bandwidth_bytes_per_s\"", "\"step_overhead_s\"", "\"entries\"",
                          "\"rounds\": 3", "\"left_out\": \"resnet,vgg\"",
                          "\"class\": \"conv\"", "\"kind\": \"grouped\"",
                          "\"phase\": \"bwd_weight\"", "\"fixed_s\"", "\"s_per_flop\"",
                          "\"s_per_byte\"", "\"points\"", "\"rel_rms\""};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (!strstr(first, keys[i]))
            fail_msg("the file lacks %s:\n%s", keys[i], first);
    }
    free(first);
    free(second);
    fm_calibration_free(back);

    /* save refuses what load would refuse */
    c->entries[0].s_per_byte = -1e-12;
    assert_int_equal(fm_calibration_save(ctx, c, path), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "negative");
    c->entries[0].s_per_byte = 0;
    c->entries[0].phase = FM_PHASE_COUNT;
    assert_int_equal(fm_calibration_save(ctx, c, path), FM_ERR_INVALID);
    c->entries[0].phase = FM_PHASE_FWD;
    c->device[0] = '\0';
    assert_int_equal(fm_calibration_save(ctx, c, path), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "device");
    unlink(path);
    fm_calibration_free(c);
    fm_ctx_free(ctx);
}

/* ---- (c) malformed files ---- */

/* A valid file, each entry on its own line. */
static const char good_file[] =
    "{\n"
    "  \"format\": \"flopmeter-calibration\",\n"
    "  \"version\": 1,\n"
    "  \"device\": \"Test CPU 9000\",\n"
    "  \"backend\": \"cpu\",\n"
    "  \"threads\": 2,\n"
    "  \"precision\": \"fp32\",\n"
    "  \"date\": \"2026-11-24T06:00:00Z\",\n"
    "  \"peak_flops\": 1e11,\n"
    "  \"bandwidth_bytes_per_s\": 2e10,\n"
    "  \"step_overhead_s\": 0.0001,\n"
    "  \"entries\": [\n"
    "    {\"class\": \"conv\", \"kind\": \"dense\", \"phase\": \"fwd\", \"fixed_s\": 1e-5, "
    "\"s_per_flop\": 3e-11, \"s_per_byte\": 2e-10, \"points\": 6, \"rel_rms\": 0.01},\n"
    "    {\"class\": \"conv\", \"kind\": \"\", \"phase\": \"bwd_data\", \"fixed_s\": 2e-5, "
    "\"s_per_flop\": 4e-11, \"s_per_byte\": 1e-10, \"points\": 4, \"rel_rms\": 0.02},\n"
    "    {\"class\": \"matmul\", \"kind\": \"\", \"phase\": \"fwd\", \"fixed_s\": 3e-6, "
    "\"s_per_flop\": 2e-11, \"s_per_byte\": 0, \"points\": 3, \"rel_rms\": 0.03}\n"
    "  ]\n"
    "}\n";

#ifdef FM_HAVE_CJSON
/* Loads text from a file; returns the status, the message stays on ctx. */
static enum fm_status load_text(struct fm_ctx *ctx, const char *path, const char *text)
{
    write_text(path, text);
    struct fm_calibration *c = NULL;
    enum fm_status st = fm_calibration_load(ctx, path, &c);
    if (st)
        assert_null(c);
    fm_calibration_free(c);
    return st;
}

static void expect_refused(struct fm_ctx *ctx, const char *path, const char *from, const char *to,
                           const char *field, int line, const char *extra)
{
    char *text = replaced(good_file, from, to);
    assert_int_equal(load_text(ctx, path, text), FM_ERR_PARSE);
    char at[32];
    snprintf(at, sizeof(at), "line %d", line);
    EXPECT_MESSAGE(ctx, path, at, field, extra);
    free(text);
}
#endif

static void test_load_errors(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    char *path = temp_path();
#ifndef FM_HAVE_CJSON
    write_text(path, good_file);
    struct fm_calibration *c = NULL;
    assert_int_equal(fm_calibration_load(ctx, path, &c), FM_ERR_UNSUPPORTED);
    EXPECT_MESSAGE(ctx, "cJSON");
    assert_null(c);
#else
    /* the good file loads */
    struct fm_calibration *c = NULL;
    write_text(path, good_file);
    FM_ASSERT_OK(ctx, fm_calibration_load(ctx, path, &c));
    assert_int_equal(c->n, 3);
    assert_true(c->entries[1].s_per_flop == 4e-11);
    assert_string_equal(c->entries[1].kind, "");
    assert_int_equal(c->entries[1].phase, FM_PHASE_BWD_DATA);
    fm_calibration_free(c);

    /* truncated inside the second entry: not JSON, named on the line where the text stops */
    const char *cut_at = strstr(good_file, "\"phase\": \"bwd_data\"");
    size_t cut = (size_t)(cut_at - good_file);
    char *truncated = malloc(cut + 1);
    memcpy(truncated, good_file, cut);
    truncated[cut] = '\0';
    assert_int_equal(load_text(ctx, path, truncated), FM_ERR_PARSE);
    char at[32];
    snprintf(at, sizeof(at), "line %d", line_of(good_file, "\"phase\": \"bwd_data\""));
    EXPECT_MESSAGE(ctx, path, at, "not valid JSON");
    free(truncated);
    /* an empty file, and text after the document */
    assert_int_equal(load_text(ctx, path, ""), FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, path, "line 1");
    char *twice = malloc(2 * sizeof(good_file));
    snprintf(twice, 2 * sizeof(good_file), "%s}\n", good_file);
    assert_int_equal(load_text(ctx, path, twice), FM_ERR_PARSE);
    snprintf(at, sizeof(at), "line %d", line_of(good_file, "  ]\n}\n") + 2);
    EXPECT_MESSAGE(ctx, path, at);
    free(twice);

    /* hand-edited fields of the wrong type: the field and its line */
    expect_refused(ctx, path, "\"threads\": 2", "\"threads\": \"2\"", "\"threads\"",
                   line_of(good_file, "\"threads\""), "a string");
    expect_refused(ctx, path, "\"threads\": 2", "\"threads\": 2.5", "\"threads\"",
                   line_of(good_file, "\"threads\""), "whole number");
    expect_refused(ctx, path, "\"device\": \"Test CPU 9000\"", "\"device\": 9000", "\"device\"",
                   line_of(good_file, "\"device\""), "a number");
    expect_refused(ctx, path, "\"s_per_flop\": 4e-11", "\"s_per_flop\": \"fast\"",
                   "\"s_per_flop\"", line_of(good_file, "\"s_per_flop\": 4e-11"), "entries[1]");
    expect_refused(ctx, path, "\"points\": 3", "\"points\": [3]", "\"points\"",
                   line_of(good_file, "\"points\": 3"), "entries[2]");
    /* a negative coefficient */
    expect_refused(ctx, path, "\"s_per_byte\": 1e-10", "\"s_per_byte\": -1e-10",
                   "\"s_per_byte\"", line_of(good_file, "\"s_per_byte\": 1e-10"), ">= 0");
    EXPECT_MESSAGE(ctx, "entries[1]");
    expect_refused(ctx, path, "\"step_overhead_s\": 0.0001", "\"step_overhead_s\": -0.0001",
                   "\"step_overhead_s\"", line_of(good_file, "\"step_overhead_s\""), ">= 0");
    /* unknown class, kind, phase, precision, field */
    expect_refused(ctx, path, "\"class\": \"matmul\"", "\"class\": \"gemm\"", "\"class\"",
                   line_of(good_file, "\"class\": \"matmul\""), "\"gemm\"");
    EXPECT_MESSAGE(ctx, "entries[2]");
    expect_refused(ctx, path, "\"kind\": \"dense\"", "\"kind\": \"wino-grad\"", "\"kind\"",
                   line_of(good_file, "\"kind\": \"dense\""), "wino-grad");
    expect_refused(ctx, path, "\"phase\": \"bwd_data\"", "\"phase\": \"backward\"", "\"phase\"",
                   line_of(good_file, "\"phase\": \"bwd_data\""), "backward");
    expect_refused(ctx, path, "\"precision\": \"fp32\"", "\"precision\": \"float\"",
                   "\"precision\"", line_of(good_file, "\"precision\""), "\"float\"");
    expect_refused(ctx, path, "\"date\"", "\"when\"", "\"when\"", line_of(good_file, "\"date\""),
                   "unknown field");
    /* missing fields: the object's line */
    expect_refused(ctx, path, "\"s_per_flop\": 2e-11, ", "", "\"s_per_flop\"",
                   line_of(good_file, "\"class\": \"matmul\""), "missing");
    expect_refused(ctx, path, "  \"threads\": 2,\n", "", "\"threads\"", 1, "missing");
    /* a repeated entry */
    expect_refused(ctx, path, "\"kind\": \"\", \"phase\": \"bwd_data\"",
                   "\"kind\": \"dense\", \"phase\": \"fwd\"", "entries[1]",
                   line_of(good_file, "\"phase\": \"bwd_data\""), "repeats entries[0]");
    /* not a calibration, or one from a newer flopmeter */
    expect_refused(ctx, path, "\"format\": \"flopmeter-calibration\"",
                   "\"format\": \"flopmeter-devices\"", "\"format\"",
                   line_of(good_file, "\"format\""), "not a flopmeter calibration");
    expect_refused(ctx, path, "  \"format\": \"flopmeter-calibration\",\n", "", "\"format\"", 1,
                   "not a flopmeter calibration");
    expect_refused(ctx, path, "\"version\": 1", "\"version\": 3", "version 3",
                   line_of(good_file, "\"version\""), "newer");
    expect_refused(ctx, path, "\"version\": 1", "\"version\": \"1\"", "\"version\"",
                   line_of(good_file, "\"version\""), "whole number");
    /* a device file is not a calibration */
    assert_int_equal(load_text(ctx, path, "{\"devices\": [{\"name\": \"x\"}]}\n"), FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, path, "not a flopmeter calibration");
    assert_int_equal(load_text(ctx, path, "[1, 2]\n"), FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, path, "an array");
    /* an empty entry list */
    const char *list = strstr(good_file, "\"entries\": [");
    size_t head = (size_t)(list - good_file) + strlen("\"entries\": [");
    char *empty = malloc(head + 8);
    memcpy(empty, good_file, head);
    strcpy(empty + head, "]\n}\n");
    assert_int_equal(load_text(ctx, path, empty), FM_ERR_PARSE);
    snprintf(at, sizeof(at), "line %d", line_of(good_file, "\"entries\""));
    EXPECT_MESSAGE(ctx, path, at, "\"entries\" is empty");
    free(empty);
    /* a file that is not there */
    unlink(path);
    c = NULL;
    assert_int_equal(fm_calibration_load(ctx, path, &c), FM_ERR_IO);
    EXPECT_MESSAGE(ctx, path);
    assert_null(c);
#endif
    unlink(path);
    fm_ctx_free(ctx);
}

/* ---- (d) the device check ---- */

static void test_check(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_calib_sample s = sample(FM_CLASS_CONV, "dense", FM_PHASE_FWD, 1e9, 1e6, 1e-2);
    struct fm_calibration m = meta();
    struct fm_calibration *c = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_fit(ctx, &s, 1, &m, &c));
    snprintf(c->source, sizeof(c->source), "%s", "cal.json");
    const char *dev = "Test CPU 9000";
    FM_ASSERT_OK(ctx, fm_calibration_check(ctx, c, dev, "cpu", 2, FM_PREC_FP32, false));

    assert_int_equal(fm_calibration_check(ctx, c, "Other CPU", "cpu", 2, FM_PREC_FP32, false),
                     FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "calibration cal.json", "device", "\"Test CPU 9000\"", "\"Other CPU\"",
                   "fm_session_opts.force_calibration");
    assert_int_equal(fm_calibration_check(ctx, c, dev, "cuda", 2, FM_PREC_FP32, false),
                     FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "cal.json", "backend cpu", "this run uses cuda");
    assert_int_equal(fm_calibration_check(ctx, c, dev, "cpu", 4, FM_PREC_FP32, false),
                     FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "calibration cal.json was made for threads 2, this run uses 4 (pass "
                        "fm_session_opts.force_calibration to use it anyway)");
    assert_int_equal(fm_calibration_check(ctx, c, dev, "cpu", 2, FM_PREC_FP16, false),
                     FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "precision fp32", "this run uses fp16");
    /* force: used anyway */
    FM_ASSERT_OK(ctx, fm_calibration_check(ctx, c, "Other CPU", "cuda", 4, FM_PREC_FP16, true));
    FM_ASSERT_OK(ctx, fm_calibration_check(ctx, c, dev, "cpu", 4, FM_PREC_FP32, true));
    /* a GPU calibration does not depend on host threads */
    snprintf(c->backend, sizeof(c->backend), "%s", "cuda");
    c->threads = 0;
    FM_ASSERT_OK(ctx, fm_calibration_check(ctx, c, dev, "cuda", 16, FM_PREC_FP32, false));
    fm_calibration_free(c);
    fm_ctx_free(ctx);
}

/* ---- (e) predictions with a calibration ---- */

static fm_tid tensor(struct fm_ctx *ctx, struct fm_graph *g, const char *name, enum fm_role role,
                     int rank, const int64_t *dims)
{
    struct fm_shape s;
    memset(&s, 0, sizeof(s));
    s.rank = rank;
    for (int i = 0; i < rank; i++)
        s.dims[i] = dims[i];
    fm_tid id = FM_NONE;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, name, role, FM_DTYPE_FP32, &s, &id));
    return id;
}

/* x (N,8,8,8) -> conv 3x3 8->8 "dense" -> relu -> depthwise 3x3 (groups 8) -> pointwise 1x1
 * 8->16 -> grouped 3x3 16->16 (groups 2) -> transposed depthwise 2x2 stride 2 (groups 16). */
static struct fm_graph *convnet(struct fm_ctx *ctx, int64_t batch)
{
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "convnet", &g));
    fm_tid x = tensor(ctx, g, "x", FM_ROLE_INPUT, 4, (const int64_t[]){batch, 8, 8, 8});
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    fm_tid w1 = tensor(ctx, g, "w1", FM_ROLE_PARAM, 4, (const int64_t[]){8, 8, 3, 3});
    fm_tid y1, y2, y3, y4, y5, y6;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_CONV, "dense", &a, (fm_tid[]){x, w1}, 2, NULL,
                                        1, &y1));
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_RELU, "relu", NULL, (fm_tid[]){y1}, 1, NULL, 1,
                                        &y2));
    struct fm_attrs dw = a;
    dw.groups = 8;
    fm_tid w2 = tensor(ctx, g, "w2", FM_ROLE_PARAM, 4, (const int64_t[]){8, 1, 3, 3});
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_CONV, "depthwise", &dw, (fm_tid[]){y2, w2}, 2,
                                        NULL, 1, &y3));
    struct fm_attrs pw;
    fm_attrs_init(&pw);
    fm_tid w3 = tensor(ctx, g, "w3", FM_ROLE_PARAM, 4, (const int64_t[]){16, 8, 1, 1});
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_CONV, "pointwise", &pw, (fm_tid[]){y3, w3}, 2,
                                        NULL, 1, &y4));
    struct fm_attrs gr = a;
    gr.groups = 2;
    fm_tid w4 = tensor(ctx, g, "w4", FM_ROLE_PARAM, 4, (const int64_t[]){16, 8, 3, 3});
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_CONV, "grouped", &gr, (fm_tid[]){y4, w4}, 2,
                                        NULL, 1, &y5));
    struct fm_attrs tr;
    fm_attrs_init(&tr);
    tr.stride[0] = tr.stride[1] = 2;
    tr.groups = 16;
    fm_tid w5 = tensor(ctx, g, "w5", FM_ROLE_PARAM, 4, (const int64_t[]){16, 1, 2, 2});
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_CONV_TRANSPOSE, "up", &tr, (fm_tid[]){y5, w5},
                                        2, NULL, 1, &y6));
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    return g;
}

static fm_nid node_id(const struct fm_graph *g, const char *name)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        if (strcmp(fm_graph_node(g, (fm_nid)i)->name, name) == 0)
            return (fm_nid)i;
    }
    fail_msg("no node %s", name);
    return FM_NONE;
}

static struct fm_counts *count(struct fm_ctx *ctx, struct fm_graph *g, enum fm_mode mode)
{
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = mode;
    struct fm_counts *c = NULL;
    FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &c));
    return c;
}

static void test_kinds(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = convnet(ctx, 2);
    const char *expect[][2] = {{"dense", "dense"},         {"relu", "ReLU"},
                               {"depthwise", "depthwise"}, {"pointwise", "pointwise"},
                               {"grouped", "grouped"},     {"up", "depthwise"}};
    for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
        char kind[FM_CALIB_KIND_MAX];
        memset(kind, 'x', sizeof(kind));
        fm_calib_kind(g, node_id(g, expect[i][0]), kind);
        if (strcmp(kind, expect[i][1]) != 0)
            fail_msg("node %s: kind \"%s\", expected \"%s\"", expect[i][0], kind, expect[i][1]);
    }
    fm_graph_free(g);

    /* binary ops: "_bcast" where a smaller operand takes a gradient (its backward reduces) */
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "binary", &g));
    fm_tid x = tensor(ctx, g, "x", FM_ROLE_INPUT, 2, (const int64_t[]){4, 8});
    fm_tid bias = tensor(ctx, g, "bias", FM_ROLE_PARAM, 1, (const int64_t[]){8});
    fm_tid half = tensor(ctx, g, "half", FM_ROLE_CONST, 0, (const int64_t[]){1});
    fm_tid row = tensor(ctx, g, "row", FM_ROLE_INPUT, 1, (const int64_t[]){8});
    fm_tid y1, y2, y3, y4, y5, y6;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_ADD, "bias_add", NULL, (fm_tid[]){x, bias}, 2,
                                        NULL, 1, &y1));
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_SIGMOID, "sig", NULL, (fm_tid[]){y1}, 1, NULL,
                                        1, &y2));
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_MUL, "silu", NULL, (fm_tid[]){y1, y2}, 2, NULL,
                                        1, &y3));
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_MUL, "by_const", NULL, (fm_tid[]){y3, half}, 2,
                                        NULL, 1, &y4));
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_MUL, "by_input", NULL, (fm_tid[]){y4, row}, 2,
                                        NULL, 1, &y5));
    struct fm_attrs r;
    fm_attrs_init(&r);
    r.ints[0] = 1;
    r.nints = 1;
    r.flags |= FM_ATTR_KEEPDIMS;
    fm_tid m;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_REDUCE_MEAN, "mean", &r, (fm_tid[]){y5}, 1,
                                        NULL, 1, &m));
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_MUL, "gate", NULL, (fm_tid[]){y5, m}, 2, NULL,
                                        1, &y6));
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    const char *bin[][2] = {{"bias_add", "Add_bcast"}, {"silu", "Mul"}, {"by_const", "Mul"},
                            {"by_input", "Mul"},       {"gate", "Mul_bcast"}};
    for (size_t i = 0; i < sizeof(bin) / sizeof(bin[0]); i++) {
        char kind[FM_CALIB_KIND_MAX];
        fm_calib_kind(g, node_id(g, bin[i][0]), kind);
        if (strcmp(kind, bin[i][1]) != 0)
            fail_msg("node %s: kind \"%s\", expected \"%s\"", bin[i][0], kind, bin[i][1]);
    }
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* A calibration chosen by hand. conv: a whole-class entry for every phase, a dense one for the
 * forward, a grouped one for the optimizer; elementwise: the optimizer; activations: none. */
static const struct fm_calib_entry hand_entries[] = {
    {FM_CLASS_CONV, "", FM_PHASE_FWD, 2e-5, 5e-11, 1e-10, 3, 0.0, false},
    {FM_CLASS_CONV, "", FM_PHASE_BWD_DATA, 3e-5, 6e-11, 2e-10, 3, 0.0, false},
    {FM_CLASS_CONV, "", FM_PHASE_BWD_WEIGHT, 4e-5, 7e-11, 3e-10, 3, 0.0, false},
    {FM_CLASS_CONV, "dense", FM_PHASE_FWD, 1e-5, 3e-11, 2e-10, 3, 0.0, false},
    {FM_CLASS_CONV, "grouped", FM_PHASE_OPTIMIZER, 9e-6, 1e-9, 0.0, 3, 0.0, false},
    {FM_CLASS_ELEMENTWISE, "", FM_PHASE_OPTIMIZER, 5e-6, 2e-10, 4e-11, 3, 0.0, false},
};
enum { STEP_OVERHEAD_US = 250 };

static struct fm_calibration hand_calibration(void)
{
    struct fm_calibration c = meta();
    c.version = FM_CALIB_VERSION;
    c.n = sizeof(hand_entries) / sizeof(hand_entries[0]);
    c.entries = (struct fm_calib_entry *)hand_entries;
    c.step_overhead_s = STEP_OVERHEAD_US * 1e-6;
    return c;
}

static struct fm_device test_device(void)
{
    struct fm_device d;
    memset(&d, 0, sizeof(d));
    d.name = "Test device";
    d.kind = "cpu";
    d.peak_vector[FM_PREC_FP32] = 1e12;
    d.mem_bw = 1e11;
    d.interconnect_bw = 2e9;
    d.source = "test";
    return d;
}

static double work_flops(const struct fm_counts *c, fm_nid id, int ph)
{
    return (double)fm_work_flops(&c->nodes[id].phase[ph]);
}

static double work_bytes(const struct fm_counts *c, fm_nid id, int ph)
{
    const struct fm_work *w = &c->nodes[id].phase[ph];
    return (double)w->bytes_read + (double)w->bytes_written;
}

/* The calibrated time of node id's phase ph from hand_entries' entry i and the counts. */
static double expect_t(const struct fm_counts *c, fm_nid id, int ph, size_t i)
{
    const struct fm_calib_entry *e = &hand_entries[i];
    assert_int_equal(e->phase, ph);
    return model(e->fixed_s, e->s_per_flop, e->s_per_byte, work_flops(c, id, ph),
                 work_bytes(c, id, ph));
}

static void test_predict_calibrated(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = convnet(ctx, 2);
    struct fm_counts *c = count(ctx, g, FM_MODE_TRAIN);
    struct fm_device dev = test_device();
    struct fm_calibration cal = hand_calibration();
    struct fm_predict_opts o;
    fm_predict_opts_init(&o);
    o.device = &dev;
    o.launch_overhead_us = 2.0;
    struct fm_prediction *cold = NULL, *p = NULL;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &cold));
    o.calibration = &cal;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &p));

    fm_nid dense = node_id(g, "dense"), relu = node_id(g, "relu");
    fm_nid pointwise = node_id(g, "pointwise"), grouped = node_id(g, "grouped");
    fm_nid depthwise = node_id(g, "depthwise");
    /* dense fwd: its own entry (3); hand count: 2 x (2*8*8*8 outputs) x (8*3*3) = 147456 */
    assert_true(work_flops(c, dense, FM_PHASE_FWD) == 147456.0);
    assert_true(p->nodes[dense][FM_PHASE_FWD].calibrated);
    assert_true(p->nodes[dense][FM_PHASE_FWD].t_calibrated == expect_t(c, dense, FM_PHASE_FWD, 3));
    /* dense bwd_weight: no dense entry, the class's (2) */
    assert_true(p->nodes[dense][FM_PHASE_BWD_WEIGHT].t_calibrated ==
                expect_t(c, dense, FM_PHASE_BWD_WEIGHT, 2));
    /* pointwise, depthwise fwd and bwd_data: the class's entries (0, 1) */
    assert_true(p->nodes[pointwise][FM_PHASE_FWD].t_calibrated ==
                expect_t(c, pointwise, FM_PHASE_FWD, 0));
    assert_true(p->nodes[depthwise][FM_PHASE_FWD].t_calibrated ==
                expect_t(c, depthwise, FM_PHASE_FWD, 0));
    assert_true(work_flops(c, depthwise, FM_PHASE_BWD_DATA) > 0);
    assert_true(p->nodes[depthwise][FM_PHASE_BWD_DATA].t_calibrated ==
                expect_t(c, depthwise, FM_PHASE_BWD_DATA, 1));
    /* the optimizer: grouped has its own (4), the others fall to the elementwise entry (5) */
    assert_true(work_flops(c, grouped, FM_PHASE_OPTIMIZER) > 0);
    assert_true(p->nodes[grouped][FM_PHASE_OPTIMIZER].t_calibrated ==
                expect_t(c, grouped, FM_PHASE_OPTIMIZER, 4));
    assert_true(p->nodes[dense][FM_PHASE_OPTIMIZER].calibrated);
    assert_true(p->nodes[dense][FM_PHASE_OPTIMIZER].t_calibrated ==
                expect_t(c, dense, FM_PHASE_OPTIMIZER, 5));
    /* relu: no activation entry: PALEO's time, counted as uncalibrated (forward and input
     * gradient: the only node-phases without an entry) */
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
        const struct fm_phase_time *t = &p->nodes[relu][ph];
        bool work = work_flops(c, relu, ph) > 0 || work_bytes(c, relu, ph) > 0;
        assert_int_equal(work, ph == FM_PHASE_FWD || ph == FM_PHASE_BWD_DATA);
        assert_false(t->calibrated);
        assert_true(t->t_calibrated == t->t_paleo);
    }
    assert_true(p->nodes[relu][FM_PHASE_FWD].t_paleo > 0);
    assert_int_equal(p->uncalibrated, 2);
    assert_false(p->step.calibrated);
    assert_false(p->total[FM_PHASE_FWD].calibrated);
    assert_true(p->total[FM_PHASE_OPTIMIZER].calibrated);

    /* the cold numbers are those of a prediction without calibration; that one has none */
    assert_int_equal(cold->uncalibrated, 0);
    for (size_t id = 0; id < p->n_nodes; id++) {
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            ASSERT_SAME_BITS(p->nodes[id][ph].t_paleo, cold->nodes[id][ph].t_paleo);
            ASSERT_SAME_BITS(p->nodes[id][ph].t_roofline, cold->nodes[id][ph].t_roofline);
            assert_true(cold->nodes[id][ph].t_calibrated == 0);
            assert_false(cold->nodes[id][ph].calibrated);
        }
    }
    ASSERT_SAME_BITS(p->step_paleo_s, cold->step_paleo_s);
    ASSERT_SAME_BITS(p->step_roofline_s, cold->step_roofline_s);

    /* sums: each phase's total, and the step with the per-step overhead */
    double step = 0;
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
        double sum = 0;
        for (size_t id = 0; id < p->n_nodes; id++)
            sum += p->nodes[id][ph].t_calibrated;
        ASSERT_NEAR(p->total[ph].t_calibrated, sum, 1e-14);
        step += sum;
    }
    ASSERT_NEAR(p->step.t_calibrated, step + STEP_OVERHEAD_US * 1e-6, 1e-14);

    /* the run: from the calibrated step as the bounds are from theirs; 0 without calibration */
    struct fm_run_estimate r;
    FM_ASSERT_OK(ctx, fm_predict_run(ctx, p, c, 2, 1000, 3.0, &r));
    assert_true(r.step_calibrated_s == p->step.t_calibrated);
    ASSERT_NEAR(r.samples_calibrated_per_s, 2.0 / p->step.t_calibrated, 1e-15);
    assert_int_equal(r.steps_per_epoch, 500);
    ASSERT_NEAR(r.epoch_calibrated_s, 500 * p->step.t_calibrated, 1e-15);
    ASSERT_NEAR(r.total_calibrated_s, 1500 * p->step.t_calibrated, 1e-15);
    struct fm_run_estimate rc;
    FM_ASSERT_OK(ctx, fm_predict_run(ctx, cold, c, 2, 1000, 3.0, &rc));
    assert_true(rc.step_calibrated_s == 0 && rc.samples_calibrated_per_s == 0 &&
                rc.epoch_calibrated_s == 0 && rc.total_calibrated_s == 0);
    ASSERT_SAME_BITS(rc.step_s[FM_BOUND_PALEO], r.step_s[FM_BOUND_PALEO]);

    /* data parallel: one GPU is the one-GPU step; two overlap the reduction with backward */
    struct fm_dp_estimate dp;
    FM_ASSERT_OK(ctx, fm_predict_data_parallel(ctx, g, c, p, 2, 1, 2e9, 0.72, &dp));
    ASSERT_NEAR(dp.step_overlap_calibrated, p->step.t_calibrated, 1e-12);
    FM_ASSERT_OK(ctx, fm_predict_data_parallel(ctx, g, c, p, 2, 2, 2e9, 0.72, &dp));
    assert_true(dp.step_overlap_calibrated >= p->step.t_calibrated * (1 - 1e-12));
    assert_true(dp.step_overlap_calibrated <= p->step.t_calibrated + dp.t_allreduce + 1e-12);
    FM_ASSERT_OK(ctx, fm_predict_run_data_parallel(ctx, p, c, 2, &dp, 1000, 3.0, &r));
    assert_true(r.step_calibrated_s == dp.step_overlap_calibrated);
    ASSERT_NEAR(r.samples_calibrated_per_s, 4.0 / dp.step_overlap_calibrated, 1e-15);
    struct fm_dp_estimate dpc;
    FM_ASSERT_OK(ctx, fm_predict_data_parallel(ctx, g, c, cold, 2, 2, 2e9, 0.72, &dpc));
    assert_true(dpc.step_overlap_calibrated == 0);
    ASSERT_SAME_BITS(dpc.step_overlap[FM_BOUND_PALEO], dp.step_overlap[FM_BOUND_PALEO]);

    /* inference: no per-step overhead */
    struct fm_counts *ci = count(ctx, g, FM_MODE_INFER);
    struct fm_prediction *pi = NULL;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, ci, &o, &pi));
    ASSERT_NEAR(pi->step.t_calibrated, pi->total[FM_PHASE_FWD].t_calibrated, 1e-15);
    assert_int_equal(pi->uncalibrated, 1);   /* relu's forward */
    fm_prediction_free(pi);
    fm_counts_free(ci);

    fm_prediction_free(p);
    fm_prediction_free(cold);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* The batch doubles: each layer's calibrated time moves by exactly a x dFLOPs + b x dbytes of
 * its own counts, and the fixed cost stays. */
static void test_predict_calibrated_batch(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_device dev = test_device();
    struct fm_calibration cal = hand_calibration();
    struct fm_predict_opts o;
    fm_predict_opts_init(&o);
    o.device = &dev;
    o.calibration = &cal;
    struct fm_graph *g2 = convnet(ctx, 2), *g4 = convnet(ctx, 4);
    struct fm_counts *c2 = count(ctx, g2, FM_MODE_TRAIN), *c4 = count(ctx, g4, FM_MODE_TRAIN);
    struct fm_prediction *p2 = NULL, *p4 = NULL;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g2, c2, &o, &p2));
    FM_ASSERT_OK(ctx, fm_predict(ctx, g4, c4, &o, &p4));
    fm_nid dense = node_id(g2, "dense");
    assert_int_equal(dense, node_id(g4, "dense"));
    const struct fm_calib_entry *e = &hand_entries[3];   /* conv dense fwd */
    double f2 = work_flops(c2, dense, FM_PHASE_FWD), f4 = work_flops(c4, dense, FM_PHASE_FWD);
    double b2 = work_bytes(c2, dense, FM_PHASE_FWD), b4 = work_bytes(c4, dense, FM_PHASE_FWD);
    /* FLOPs double; bytes: input and output double (2 x 4 x 512 floats each), the weight
     * (8 x 8 x 9 floats = 2304 bytes) stays */
    assert_true(f4 == 2 * f2);
    assert_true(b2 == 2 * 2 * 4 * 512 + 2304);
    assert_true(b4 == 2 * 4 * 4 * 512 + 2304);
    double t2 = p2->nodes[dense][FM_PHASE_FWD].t_calibrated;
    double t4 = p4->nodes[dense][FM_PHASE_FWD].t_calibrated;
    assert_true(t2 == model(e->fixed_s, e->s_per_flop, e->s_per_byte, f2, b2));
    assert_true(t4 == model(e->fixed_s, e->s_per_flop, e->s_per_byte, f4, b4));
    ASSERT_NEAR(t4 - t2, (f4 - f2) * e->s_per_flop + (b4 - b2) * e->s_per_byte, 1e-12);
    /* the fixed cost does not scale: the time grows by less than double */
    assert_true(t4 < 2 * t2);
    ASSERT_NEAR(2 * t2 - t4, e->fixed_s + 2304 * e->s_per_byte, 1e-9);
    /* the optimizer does not depend on the batch at all */
    ASSERT_SAME_BITS(p2->nodes[dense][FM_PHASE_OPTIMIZER].t_calibrated,
                     p4->nodes[dense][FM_PHASE_OPTIMIZER].t_calibrated);
    fm_prediction_free(p2);
    fm_prediction_free(p4);
    fm_counts_free(c2);
    fm_counts_free(c4);
    fm_graph_free(g2);
    fm_graph_free(g4);
    fm_ctx_free(ctx);
}

/* A backend that computes both gradients of a normalization in one kernel reports their time
 * as input gradients, and calibrate fits that entry on the work of both: a calibration with a
 * bwd_data entry and no bwd_weight one for a class times both there, and weight gradients get
 * no time of their own (all of it when the layer has no input gradient). */
static void test_predict_merged_backward(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "bn2", &g));
    fm_tid x = tensor(ctx, g, "x", FM_ROLE_INPUT, 4, (const int64_t[]){2, 4, 5, 5});
    fm_tid y[2];
    for (int i = 0; i < 2; i++) {
        char name[16];
        fm_tid in[5] = {i ? y[0] : x};
        for (int k = 1; k < 5; k++) {
            snprintf(name, sizeof(name), "p%d%d", i, k);
            in[k] = tensor(ctx, g, name, k < 3 ? FM_ROLE_PARAM : FM_ROLE_BUFFER, 1,
                           (const int64_t[]){4});
        }
        struct fm_attrs a;
        fm_attrs_init(&a);
        a.eps = 1e-5;
        snprintf(name, sizeof(name), "bn%d", i);
        FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_BATCHNORM, name, &a, in, 5, NULL, 1, &y[i]));
    }
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    struct fm_counts *c = count(ctx, g, FM_MODE_TRAIN);
    fm_nid first = node_id(g, "bn0"), second = node_id(g, "bn1");
    /* the first reads the input, which needs no gradient; both have scale and shift gradients */
    assert_true(work_flops(c, first, FM_PHASE_BWD_DATA) == 0 &&
                work_bytes(c, first, FM_PHASE_BWD_DATA) == 0);
    assert_true(work_flops(c, second, FM_PHASE_BWD_DATA) > 0);
    assert_true(work_flops(c, first, FM_PHASE_BWD_WEIGHT) > 0);
    assert_true(work_flops(c, second, FM_PHASE_BWD_WEIGHT) > 0);

    static const struct fm_calib_entry entries[] = {
        {FM_CLASS_NORM, "", FM_PHASE_FWD, 2e-6, 3e-10, 4e-11, 4, 0.0, false},
        {FM_CLASS_NORM, "", FM_PHASE_BWD_DATA, 5e-6, 6e-10, 7e-11, 4, 0.0, false},
    };
    struct fm_calibration cal = meta();
    cal.version = FM_CALIB_VERSION;
    cal.n = 2;
    cal.entries = (struct fm_calib_entry *)entries;
    struct fm_device dev = test_device();
    struct fm_predict_opts o;
    fm_predict_opts_init(&o);
    o.device = &dev;
    o.calibration = &cal;
    struct fm_prediction *p = NULL;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &p));
    const struct fm_calib_entry *e = &entries[1];
    double both = model(e->fixed_s, e->s_per_flop, e->s_per_byte,
                        work_flops(c, second, FM_PHASE_BWD_DATA) +
                            work_flops(c, second, FM_PHASE_BWD_WEIGHT),
                        work_bytes(c, second, FM_PHASE_BWD_DATA) +
                            work_bytes(c, second, FM_PHASE_BWD_WEIGHT));
    assert_true(p->nodes[second][FM_PHASE_BWD_DATA].calibrated);
    assert_true(p->nodes[second][FM_PHASE_BWD_DATA].t_calibrated == both);
    assert_true(p->nodes[second][FM_PHASE_BWD_WEIGHT].calibrated);
    assert_true(p->nodes[second][FM_PHASE_BWD_WEIGHT].t_calibrated == 0);
    double alone = model(e->fixed_s, e->s_per_flop, e->s_per_byte,
                         work_flops(c, first, FM_PHASE_BWD_WEIGHT),
                         work_bytes(c, first, FM_PHASE_BWD_WEIGHT));
    assert_true(p->nodes[first][FM_PHASE_BWD_WEIGHT].calibrated);
    assert_true(p->nodes[first][FM_PHASE_BWD_WEIGHT].t_calibrated == alone);
    /* nothing fell back to the cold rule but the optimizer, which has no entry here */
    assert_true(p->nodes[first][FM_PHASE_FWD].calibrated);
    assert_false(p->nodes[first][FM_PHASE_OPTIMIZER].calibrated);
    assert_int_equal(p->uncalibrated, 2);
    fm_prediction_free(p);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

static void test_lookup(void **state)
{
    (void)state;
    struct fm_calibration cal = hand_calibration();
    double s = -1;
    /* exact kind, then the class's entry, else none */
    assert_true(fm_calibration_time(&cal, FM_CLASS_CONV, "dense", FM_PHASE_FWD, 1e9, 1e6, &s));
    assert_true(s == 1e-5 + 1e9 * 3e-11 + 1e6 * 2e-10);
    assert_true(fm_calibration_time(&cal, FM_CLASS_CONV, "depthwise", FM_PHASE_FWD, 1e9, 1e6, &s));
    assert_true(s == 2e-5 + 1e9 * 5e-11 + 1e6 * 1e-10);
    assert_true(fm_calibration_time(&cal, FM_CLASS_CONV, "", FM_PHASE_FWD, 1e9, 1e6, &s));
    assert_true(s == 2e-5 + 1e9 * 5e-11 + 1e6 * 1e-10);
    s = -1;
    assert_false(fm_calibration_time(&cal, FM_CLASS_ACTIVATION, "", FM_PHASE_FWD, 1e9, 1e6, &s));
    assert_false(fm_calibration_time(&cal, FM_CLASS_CONV, "dense", FM_PHASE_OPTIMIZER, 1, 1, &s));
    assert_false(fm_calibration_time(NULL, FM_CLASS_CONV, "dense", FM_PHASE_FWD, 1, 1, &s));
    assert_true(s == -1);
}

/* calibrate's rounds: each sample keeps the median of its times over the rounds, found by key
 * even where a round timed one phase fewer (so the rest sit one place earlier); a round
 * without the sample is left out of its median; samples whose rounds disagree by more than 2x
 * are counted. */
static void test_median_over_rounds(void **unused)
{
    (void)unused;
    struct fm_calib_sample a[3], b[2], c[3], out[3];
    memset(a, 0, sizeof(a));
    for (int i = 0; i < 3; i++) {
        a[i].cls = FM_CLASS_CONV;
        a[i].phase = FM_PHASE_FWD;
        a[i].flops = 100.0 * (i + 1);
        a[i].bytes = 10.0 * (i + 1);
    }
    memcpy(c, a, sizeof(a));
    a[0].seconds = 1.0, a[1].seconds = 5.0, a[2].seconds = 1.0;
    /* round 2 lacks key 11: its key 12 sits where 11 was */
    b[0] = a[0], b[1] = a[2];
    b[0].seconds = 3.0, b[1].seconds = 4.0;
    /* round 3 in another order */
    c[0] = a[2], c[1] = a[0], c[2] = a[1];
    c[0].seconds = 2.5, c[1].seconds = 2.0, c[2].seconds = 7.0;
    const uint64_t ka[] = {10, 11, 12}, kb[] = {10, 12}, kc[] = {12, 10, 11};
    const struct fm_calib_sample *v[] = {a, b, c};
    const uint64_t *keys[] = {ka, kb, kc};
    const size_t n[] = {3, 2, 3};
    size_t unsteady = fm_calib_median_rounds(v, keys, n, 3, out);
    assert_true(out[0].seconds == 2.0);   /* 1, 3, 2 */
    assert_true(out[1].seconds == 6.0);   /* 5, 7: two rounds, their mean */
    assert_true(out[2].seconds == 2.5);   /* 1, 4, 2.5 */
    /* the rest of each sample is round 0's */
    for (int i = 0; i < 3; i++) {
        assert_true(out[i].flops == a[i].flops);
        assert_true(out[i].bytes == a[i].bytes);
    }
    /* 3/1 and 4/1 are over 2x, 7/5 is not */
    assert_int_equal(unsteady, 2);
    /* one round: its own times, nothing unsteady */
    assert_int_equal(fm_calib_median_rounds(v, keys, n, 1, out), 0);
    assert_true(out[1].seconds == 5.0);
}

/* ---- (c) warm and cold caches ---- */

/* Cold samples fit entries of their own next to the warm ones, exactly where the samples are
 * exactly linear; the eviction curve and the cold entries survive the file; a version 1 file
 * (no cache, no curve) still loads, all warm. */
static void test_cold_entries(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_calib_sample s[8];
    size_t n = 0;
    /* warm: 2 us + 1e-10 s/byte; cold: 3 us + 4e-10 s/byte, from the same shapes */
    for (int cold = 0; cold < 2; cold++) {
        for (int k = 1; k <= 4; k++) {
            double bytes = 1e6 * k;
            s[n] = sample(FM_CLASS_NORM, "BatchNorm", FM_PHASE_FWD, 0, bytes,
                          cold ? 3e-6 + 4e-10 * bytes : 2e-6 + 1e-10 * bytes);
            s[n++].cold = cold;
        }
    }
    struct fm_calibration m = meta();
    m.n_evict = 3;
    const double eb[3] = {8e6, 32e6, 128e6}, ef[3] = {0.0, 0.25, 1.0};
    memcpy(m.evict_bytes, eb, sizeof(eb));
    memcpy(m.evict_frac, ef, sizeof(ef));
    struct fm_calibration *c = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_fit(ctx, s, n, &m, &c));
    /* BatchNorm and the whole class, each warm and cold */
    assert_int_equal(c->n, 4);
    double t = 0;
    assert_true(fm_calibration_time_at(c, FM_CLASS_NORM, "BatchNorm", FM_PHASE_FWD, 0, 5e6,
                                       false, &t));
    ASSERT_NEAR(t, 2e-6 + 5e6 * 1e-10, 1e-15);
    assert_true(fm_calibration_time_at(c, FM_CLASS_NORM, "BatchNorm", FM_PHASE_FWD, 0, 5e6,
                                       true, &t));
    ASSERT_NEAR(t, 3e-6 + 5e6 * 4e-10, 1e-15);
    /* fm_calibration_time is the warm entry */
    assert_true(fm_calibration_time(c, FM_CLASS_NORM, "BatchNorm", FM_PHASE_FWD, 0, 5e6, &t));
    ASSERT_NEAR(t, 2e-6 + 5e6 * 1e-10, 1e-15);
    assert_false(fm_calibration_time_at(c, FM_CLASS_NORM, "BatchNorm", FM_PHASE_BWD_DATA, 0, 1,
                                        true, &t));
#ifdef FM_HAVE_CJSON
    char *path = temp_path();
    FM_ASSERT_OK(ctx, fm_calibration_save(ctx, c, path));
    char *text = test_read_file(path, NULL);
    assert_non_null(strstr(text, "\"version\": 2"));
    assert_non_null(strstr(text, "\"cache\": \"cold\""));
    assert_non_null(strstr(text, "\"eviction\""));
    struct fm_calibration *back = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_load(ctx, path, &back));
    expect_same_calibration(c, back);
    assert_int_equal(back->n_evict, 3);
    for (size_t i = 0; i < c->n; i++)
        assert_int_equal(back->entries[i].cold, c->entries[i].cold);
    for (int i = 0; i < 3; i++) {
        ASSERT_SAME_BITS(back->evict_bytes[i], eb[i]);
        ASSERT_SAME_BITS(back->evict_frac[i], ef[i]);
    }
    fm_calibration_free(back);
    /* a curve that falls, a bad cache, a repeated cold entry: refused, naming the field */
    char *bad = replaced(text, "\"fraction\": 1", "\"fraction\": 0.1");
    assert_int_equal(load_text(ctx, path, bad), FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, path, "eviction", "not fall below");
    free(bad);
    bad = replaced(text, "\"cache\": \"cold\"", "\"cache\": \"lukewarm\"");
    assert_int_equal(load_text(ctx, path, bad), FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, path, "\"cache\"", "\"warm\" or \"cold\"");
    free(bad);
    /* version 1 (the good file): every entry warm, no curve */
    write_text(path, good_file);
    FM_ASSERT_OK(ctx, fm_calibration_load(ctx, path, &back));
    assert_int_equal(back->n_evict, 0);
    for (size_t i = 0; i < back->n; i++)
        assert_false(back->entries[i].cold);
    assert_true(fm_calibration_evicted(back, 1e12) == 0);
    fm_calibration_free(back);
    free(text);
    remove(path);
#endif
    /* save refuses a curve the reader would refuse */
    c->evict_frac[2] = 0.1;
    assert_int_equal(fm_calibration_save(ctx, c, "/dev/null"), FM_ERR_INVALID);
    fm_calibration_free(c);
    fm_ctx_free(ctx);
}

/* The eviction curve, linear in log(bytes) between its points: 0 at no traffic, rising to the
 * first point's fraction, the last fraction beyond the last point. */
static void test_evicted(void **state)
{
    (void)state;
    struct fm_calibration c = meta();
    assert_true(fm_calibration_evicted(&c, 1e9) == 0);   /* no curve */
    c.n_evict = 3;
    const double eb[3] = {2e6, 8e6, 32e6}, ef[3] = {0.1, 0.5, 1.0};
    memcpy(c.evict_bytes, eb, sizeof(eb));
    memcpy(c.evict_frac, ef, sizeof(ef));
    assert_true(fm_calibration_evicted(&c, 0) == 0);
    ASSERT_NEAR(fm_calibration_evicted(&c, 1e6), 0.05, 1e-15);
    ASSERT_NEAR(fm_calibration_evicted(&c, 2e6), 0.1, 1e-15);
    ASSERT_NEAR(fm_calibration_evicted(&c, 4e6), 0.3, 1e-12);    /* half way in log */
    ASSERT_NEAR(fm_calibration_evicted(&c, 16e6), 0.75, 1e-12);
    assert_true(fm_calibration_evicted(&c, 32e6) == 1.0);
    assert_true(fm_calibration_evicted(&c, 1e12) == 1.0);
    assert_true(fm_calibration_evicted(NULL, 1e9) == 0);
}

/* Prediction moves each node-phase from its warm to its cold time by the eviction curve's
 * fraction at half the step's traffic, times the phase's share of stale data: forward 1/2,
 * backward 2/3, optimizer 1. A curve at 0 leaves the warm times; a calibration without cold
 * entries too. */
static void test_predict_cold_blend(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_device dev = test_device();
    struct fm_graph *g = convnet(ctx, 2);
    struct fm_counts *c = count(ctx, g, FM_MODE_TRAIN);
    struct fm_calib_entry entries[2 * FM_PHASE_COUNT];
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
        for (int cold = 0; cold < 2; cold++) {
            struct fm_calib_entry *e = &entries[2 * ph + cold];
            memset(e, 0, sizeof(*e));
            e->cls = FM_CLASS_CONV;
            e->phase = (enum fm_phase)ph;
            e->fixed_s = 1e-6;
            e->s_per_flop = 1e-11;
            e->s_per_byte = cold ? 5e-10 : 1e-10;
            e->points = 4;
            e->cold = cold;
        }
    }
    struct fm_calibration cal = meta();
    cal.n = 2 * FM_PHASE_COUNT;
    cal.entries = entries;
    cal.n_evict = 2;
    cal.evict_bytes[0] = 1;   /* every reuse distance is past the curve: fraction 0.8 */
    cal.evict_bytes[1] = 2;
    cal.evict_frac[0] = 0.4;
    cal.evict_frac[1] = 0.8;
    struct fm_predict_opts o;
    fm_predict_opts_init(&o);
    o.device = &dev;
    o.calibration = &cal;
    struct fm_prediction *p = NULL;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &p));
    double traffic = 0;
    for (size_t id = 0; id < c->n_nodes; id++)
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
            traffic += work_bytes(c, (fm_nid)id, (enum fm_phase)ph);
    assert_true(p->reuse_bytes == traffic / 2);
    assert_true(p->evicted == 0.8);
    fm_nid dense = node_id(g, "dense");
    const double share[FM_PHASE_COUNT] = {0.5, 2.0 / 3.0, 2.0 / 3.0, 1.0};
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
        double f = work_flops(c, dense, (enum fm_phase)ph);
        double b = work_bytes(c, dense, (enum fm_phase)ph);
        if (f == 0 && b == 0)
            continue;
        double warm = model(1e-6, 1e-11, 1e-10, f, b), cold = model(1e-6, 1e-11, 5e-10, f, b);
        ASSERT_NEAR(p->nodes[dense][ph].t_calibrated, warm + 0.8 * share[ph] * (cold - warm),
                    1e-15);
        assert_true(p->nodes[dense][ph].t_calibrated > warm);
    }
    fm_prediction_free(p);
    /* a curve at 0: the warm times exactly */
    cal.evict_frac[0] = cal.evict_frac[1] = 0;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &p));
    double f = work_flops(c, dense, FM_PHASE_FWD), b = work_bytes(c, dense, FM_PHASE_FWD);
    assert_true(p->nodes[dense][FM_PHASE_FWD].t_calibrated == model(1e-6, 1e-11, 1e-10, f, b));
    fm_prediction_free(p);
    /* no cold entries: warm, whatever the curve */
    cal.evict_frac[1] = 1;
    cal.n = FM_PHASE_COUNT;
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
        entries[ph] = entries[2 * ph];
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &p));
    assert_true(p->evicted == 1);
    assert_true(p->nodes[dense][FM_PHASE_FWD].t_calibrated == model(1e-6, 1e-11, 1e-10, f, b));
    fm_prediction_free(p);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* The samples CSV read back (fm_calib_samples_load): every field as written, a family's rows
 * left out and counted, the fit of the loaded samples identical to the fit of the originals,
 * and bad files refused naming the line and the field. */
static void test_samples_load(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    char *path = temp_path();
    write_text(path, "class,kind,phase,cache,flops,bytes,seconds,families\n"
                     "conv,dense,fwd,warm,2000000000,1000000,0.0025,resnet\n"
                     "conv,dense,fwd,warm,4000000000,2000000,0.0045,resnet+vgg\n"
                     "conv,dense,fwd,cold,1000000000,500000,0.0020,\n"
                     "norm,BatchNorm,bwd_data,warm,0,3000000,1.5e-05,mobilenet_v2\n");
    struct fm_calib_sample *v = NULL;
    size_t n = 0, dropped = 0;
    FM_ASSERT_OK(ctx, fm_calib_samples_load(ctx, path, NULL, &v, &n, &dropped));
    assert_int_equal(n, 4);
    assert_int_equal(dropped, 0);
    assert_int_equal(v[0].cls, FM_CLASS_CONV);
    assert_string_equal(v[0].kind, "dense");
    assert_int_equal(v[0].phase, FM_PHASE_FWD);
    assert_false(v[0].cold);
    assert_true(v[2].cold);
    assert_true(v[1].flops == 4e9 && v[1].bytes == 2e6 && v[1].seconds == 0.0045);
    assert_int_equal(v[3].cls, FM_CLASS_NORM);
    assert_string_equal(v[3].kind, "BatchNorm");
    assert_int_equal(v[3].phase, FM_PHASE_BWD_DATA);
    assert_null(v[3].from);
    /* the fit of what was read is the fit of the samples themselves, to the bit */
    struct fm_calib_sample orig[4];
    memcpy(orig, v, sizeof(orig));
    struct fm_calibration mt = meta();
    struct fm_calibration *a = NULL, *b = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_fit(ctx, orig, 4, &mt, &a));
    FM_ASSERT_OK(ctx, fm_calibration_fit(ctx, v, n, &mt, &b));
    test_assert_same_fits(a, b);
    fm_calibration_free(a);
    fm_calibration_free(b);
    fm_dealloc(ctx, v);

    /* leave out vgg: the row taken from resnet and vgg goes; resnet too: both conv rows from it */
    FM_ASSERT_OK(ctx, fm_calib_samples_load(ctx, path, "vgg", &v, &n, &dropped));
    assert_int_equal(n, 3);
    assert_int_equal(dropped, 1);
    fm_dealloc(ctx, v);
    FM_ASSERT_OK(ctx, fm_calib_samples_load(ctx, path, "mobilenet_v2,resnet", &v, &n, &dropped));
    assert_int_equal(n, 1);
    assert_int_equal(dropped, 3);
    assert_true(v[0].cold);
    fm_dealloc(ctx, v);
    /* a family no row is taken from: refused, naming those that are */
    assert_int_equal(fm_calib_samples_load(ctx, path, "convnext", &v, &n, &dropped),
                     FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "convnext", "resnet,vgg,mobilenet_v2");
    assert_null(v);

    /* bad files: the header, a field, the field count; an old file cannot leave out */
    write_text(path, "class,kind,phase,cache,flops,bytes\nconv,dense,fwd,warm,1,2\n");
    assert_int_equal(fm_calib_samples_load(ctx, path, NULL, &v, &n, &dropped), FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, path, "line 1", "header");
    write_text(path, "class,kind,phase,cache,flops,bytes,seconds,families\n"
                     "conv,dense,fwd,warm,1,2,0.5,\nconv,dense,fwd,warm,1,-2,0.5,\n");
    assert_int_equal(fm_calib_samples_load(ctx, path, NULL, &v, &n, &dropped), FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, path, "line 3", "'bytes'", "-2");
    write_text(path, "class,kind,phase,cache,flops,bytes,seconds,families\n"
                     "conv,dense,fwd,lukewarm,1,2,0.5,\n");
    assert_int_equal(fm_calib_samples_load(ctx, path, NULL, &v, &n, &dropped), FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, "line 2", "'cache'", "lukewarm");
    write_text(path, "class,kind,phase,cache,flops,bytes,seconds,families\n"
                     "conv,dense,fwd,warm,1,2\n");
    assert_int_equal(fm_calib_samples_load(ctx, path, NULL, &v, &n, &dropped), FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, "line 2", "6 fields", "has 8");
    write_text(path, "class,kind,phase,cache,flops,bytes,seconds\nconv,dense,fwd,warm,1,2,0.5\n");
    FM_ASSERT_OK(ctx, fm_calib_samples_load(ctx, path, NULL, &v, &n, &dropped));
    assert_int_equal(n, 1);
    fm_dealloc(ctx, v);
    assert_int_equal(fm_calib_samples_load(ctx, path, "resnet", &v, &n, &dropped),
                     FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "no families column");
    assert_int_equal(fm_calib_samples_load(ctx, "/nonexistent/s.csv", NULL, &v, &n, &dropped),
                     FM_ERR_IO);
    EXPECT_MESSAGE(ctx, "/nonexistent/s.csv");
    unlink(path);
    fm_ctx_free(ctx);
}

/* The H100 calibration committed with its samples (bench/data/h100): the samples, read back and
 * fitted under the file's header, give the file's entries to the bit. What the GPU half of the
 * accuracy study re-fits without a GPU is what the GPU fitted. */
static void test_h100_refit(void **state)
{
    (void)state;
#ifdef FM_HAVE_CJSON
    struct fm_ctx *ctx = test_ctx();
    struct fm_calibration *file = NULL, *again = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_load(ctx, FM_SOURCE_DIR "/bench/data/h100/cuda_tf32.calib.json",
                                          &file));
    assert_string_equal(file->device, "NVIDIA H100 80GB HBM3");
    assert_string_equal(file->backend, "cuda");
    assert_int_equal(file->precision, FM_PREC_TF32);
    struct fm_calib_sample *v = NULL;
    size_t n = 0, dropped = 0;
    FM_ASSERT_OK(ctx, fm_calib_samples_load(ctx, FM_SOURCE_DIR
                                            "/bench/data/h100/cuda_tf32.samples.csv",
                                            NULL, &v, &n, &dropped));
    assert_int_equal(n, 1818);
    struct fm_calibration mt = *file;
    mt.entries = NULL;
    mt.n = 0;
    FM_ASSERT_OK(ctx, fm_calibration_fit(ctx, v, n, &mt, &again));
    test_assert_same_fits(file, again);
    for (size_t i = 0; i < file->n; i++)   /* the CUDA backend trains no LayerNorm */
        assert_string_not_equal(file->entries[i].kind, "LayerNorm");
    fm_dealloc(ctx, v);
    fm_calibration_free(again);
    fm_calibration_free(file);
    fm_ctx_free(ctx);
#else
    skip();
#endif
}

/* The eviction curve's monotone fit: pooled where it falls, kept where it rises; one high
 * timing is averaged with the sizes after it instead of raising them all. */
static void test_monotone_fit(void **state)
{
    (void)state;
    double a[] = {0.1, 0.5, 0.2, 0.9};
    fm_calib_monotone_fit(a, 4);
    assert_true(a[0] == 0.1 && a[3] == 0.9);
    assert_true(fabs(a[1] - 0.35) < 1e-15 && fabs(a[2] - 0.35) < 1e-15);
    double b[] = {0.0, 0.1, 1.0, 0.4, 0.7};
    fm_calib_monotone_fit(b, 5);
    assert_true(b[0] == 0.0 && b[1] == 0.1);
    for (int i = 2; i < 5; i++)
        assert_true(fabs(b[i] - 0.7) < 1e-15);
    double c[] = {0.2, 0.3, 0.3, 0.8};   /* already non-decreasing: unchanged */
    fm_calib_monotone_fit(c, 4);
    assert_true(c[0] == 0.2 && c[1] == 0.3 && c[2] == 0.3 && c[3] == 0.8);
}

/* The eviction curve from the probe's rounds: hit = the fastest warm chase (15 ns), miss =
 * the median flushed one (115 ns); each round's missed fraction clamped to [0, 1], the median
 * over rounds per amount, then monotone; no curve where memory is not twice the caches. */
static void test_evict_curve(void **state)
{
    (void)state;
    const double warm[] = {20, 15, 90}, cold[] = {115, 130, 100};
    const double after[] = {15, 65, 115,    /* round 0: 0, 0.5, 1 */
                            25, 35, 200,    /* round 1: 0.1, 0.2, 1 (clamped) */
                            10, 75, 95};    /* round 2: 0 (clamped), 0.6, 0.8 */
    double f[3], hit = 0, miss = 0;
    assert_true(fm_calib_evict_curve(warm, after, cold, 3, 3, f, &hit, &miss));
    assert_true(hit == 15 && miss == 115);
    assert_true(f[0] == 0 && f[1] == 0.5 && f[2] == 1);
    /* medians 0.3, 0.7, 0.5 fall at the last amount: pooled to 0.6, 0.6 */
    const double w1[] = {10}, c1[] = {110}, a1[] = {40, 80, 60};
    assert_true(fm_calib_evict_curve(w1, a1, c1, 1, 3, f, &hit, &miss));
    assert_true(fabs(f[0] - 0.3) < 1e-15 && fabs(f[1] - 0.6) < 1e-15 &&
                fabs(f[2] - 0.6) < 1e-15);
    /* flushed 1.8x the cached time: no curve, frac untouched */
    const double w2[] = {50}, c2[] = {90}, a2[] = {60, 70, 80};
    double g[3] = {-1, -1, -1};
    assert_false(fm_calib_evict_curve(w2, a2, c2, 1, 3, g, &hit, &miss));
    assert_true(hit == 50 && miss == 90 && g[0] == -1 && g[2] == -1);
    /* more rounds than the function keeps, or no amounts: no curve */
    double many[17] = {0};
    assert_false(fm_calib_evict_curve(many, many, many, 17, 1, g, &hit, &miss));
    assert_false(fm_calib_evict_curve(w1, a1, c1, 1, 0, g, &hit, &miss));
}

/* The eviction probe itself (CPU, x86): a round gives a positive, finite time a line in every
 * setting; amounts beyond what was allocated and a probe of no traffic are refused. Whether
 * the flushed chase is slower is the machine's (a neighbour can evict a guest's whole cache)
 * and not asserted here. */
static void test_evict_probe(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_evict_probe *p = NULL;
#if defined(__x86_64__) || defined(__i386__)
    assert_int_equal(fm_evict_probe_new(ctx, 8.0 * 1048576.0, &p), FM_OK);
    const double bytes[2] = {2.0 * 1048576.0, 8.0 * 1048576.0};
    double warm = 0, after[2] = {0, 0}, cold = 0;
    assert_int_equal(fm_evict_probe_round(p, bytes, 2, &warm, after, &cold), FM_OK);
    assert_true(warm > 0 && isfinite(warm) && cold > 0 && isfinite(cold));
    assert_true(after[0] > 0 && isfinite(after[0]) && after[1] > 0 && isfinite(after[1]));
    const double too_much[1] = {16.0 * 1048576.0};
    assert_int_equal(fm_evict_probe_round(p, too_much, 1, &warm, after, &cold), FM_ERR_INVALID);
    assert_non_null(strstr(fm_ctx_error(ctx), "allocated"));
    fm_evict_probe_free(p);
    p = NULL;
    assert_int_equal(fm_evict_probe_new(ctx, 0, &p), FM_ERR_INVALID);
    assert_null(p);
#else
    assert_int_equal(fm_evict_probe_new(ctx, 8.0 * 1048576.0, &p), FM_ERR_UNSUPPORTED);
    assert_null(p);
#endif
    fm_ctx_free(ctx);
}

/* An op kind fitted on its own needs FM_CALIB_MIN_OP_POINTS shapes, else it is priced by its
 * class. MaxPool's four shapes were two generic, one ResNet's and one VGG's: leaving either
 * family out (an accuracy run on ResNet or VGG) left three, and MaxPool was priced by the pool
 * class's fit, which global average pooling dominates: ResNet's stem MaxPool at a quarter of
 * its time. With either family, or both, left out, MaxPool keeps a fit of its own. */
static void test_sweep_maxpool_survives_leave_out(void **unused)
{
    (void)unused;
    const char *outs[] = {NULL, "resnet", "vgg", "resnet,vgg"};
    for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) {
        size_t n = fm_calib_sweep_count("pool max", outs[i]);
        if (n < FM_CALIB_MIN_OP_POINTS)
            fail_msg("leave-out %s: %zu MaxPool shapes, a fit of its own needs %d",
                     outs[i] ? outs[i] : "none", n, FM_CALIB_MIN_OP_POINTS);
    }
    /* the label names what it counts */
    assert_int_equal(fm_calib_sweep_count("pool max", "resnet,vgg") + 2,
                     fm_calib_sweep_count("pool max", NULL));
}

/* Every op with a kind of its own in the sweep keeps a fit of its own whichever families an
 * accuracy run leaves out: with only its families' shapes, SiLU, Hardswish and GELU (3 each)
 * were always priced by the activation class's fit, and ReLU6, Softmax, LayerNorm and
 * Attention wherever their family was left out. */
static void test_sweep_kinds_survive_leave_out(void **unused)
{
    (void)unused;
    const char *all = "resnet,resnet50,resnext,vgg,alexnet,mobilenet_v2,mobilenet_v3,"
                      "efficientnet,regnet,convnext,swin,vit,gpt2,bert,llama";
    static const struct {
        enum fm_op op;
        const char *families;   /* the families the sweep takes shapes of this op from */
        size_t from_families;   /* how many */
    } ops[] = {
        {FM_OP_SILU, "efficientnet", 3},
        {FM_OP_HARDSWISH, "mobilenet_v3", 3},
        {FM_OP_GELU, "convnext,swin,vit,gpt2,bert", 3},
        {FM_OP_CLIP, "mobilenet_v2", 4},
        {FM_OP_SOFTMAX, "vit,gpt2,bert", 1},
        {FM_OP_LAYERNORM, "vit,gpt2,bert,convnext,swin", 2},
        {FM_OP_ATTENTION, "vit,gpt2,bert", 1},
        {FM_OP_MAXPOOL, "resnet,vgg", 2},
        {FM_OP_BATCHNORM, "resnet", 1},
    };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        const char *name = fm_op_name(ops[i].op);
        size_t full = fm_calib_sweep_op_count(ops[i].op, NULL);
        size_t kept = fm_calib_sweep_op_count(ops[i].op, all);
        if (kept < FM_CALIB_MIN_OP_POINTS)
            fail_msg("%s: %zu generic shapes, a fit of its own needs %d", name, kept,
                     FM_CALIB_MIN_OP_POINTS);
        /* the count names what it counts: the families' shapes are the difference */
        if (full != kept + ops[i].from_families ||
            fm_calib_sweep_op_count(ops[i].op, ops[i].families) != kept)
            fail_msg("%s: %zu shapes, %zu without its families, %zu generic (expected %zu "
                     "from %s)", name, full, fm_calib_sweep_op_count(ops[i].op, ops[i].families),
                     kept, ops[i].from_families, ops[i].families);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_recovers_parameters),
        cmocka_unit_test(test_median_over_rounds),
        cmocka_unit_test(test_fit_zero_terms_exact),
        cmocka_unit_test(test_fit_nnls_optimum),
        cmocka_unit_test(test_fit_errors),
        cmocka_unit_test(test_save_load_round_trip),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_kinds),
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_predict_calibrated),
        cmocka_unit_test(test_predict_calibrated_batch),
        cmocka_unit_test(test_predict_merged_backward),
        cmocka_unit_test(test_cold_entries),
        cmocka_unit_test(test_evicted),
        cmocka_unit_test(test_predict_cold_blend),
        cmocka_unit_test(test_samples_load),
        cmocka_unit_test(test_monotone_fit),
        cmocka_unit_test(test_evict_curve),
        cmocka_unit_test(test_evict_probe),
        cmocka_unit_test(test_h100_refit),
        cmocka_unit_test(test_sweep_maxpool_survives_leave_out),
        cmocka_unit_test(test_sweep_kinds_survive_leave_out),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
