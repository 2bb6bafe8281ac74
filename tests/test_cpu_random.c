/* The CPU backend's random draws (src/backend/cpu/random.c) are what their ops say they are:
 * for each generator, N = 100,000 draws in one step, whose sample mean and variance must lie
 * within 5 standard errors of the distribution's (the standard error of a mean is
 * sigma/sqrt(N); of a variance sqrt((mu4 - sigma^4)/N), with mu4 the fourth central moment:
 * w^4/80 for a uniform of width w, 3 sigma^4 for a normal, p(1-p)(1-3p(1-p)) for a Bernoulli).
 * A wrong scale, a shifted or a biased generator (a 16-bit draw, an off-by-one in Box-Muller)
 * is off by far more; a correct one fails once in about 1.7 million runs per check, and the
 * draws are reproducible from the run's seed, so a pass is a pass every time. Also: adjacent
 * elements are uncorrelated, a second step draws anew, the same seed draws the same numbers,
 * and Multinomial's class frequencies follow the softmax of its logits. */
#include "support.h"

#include "backend/backend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N 100000

struct run {
    struct fm_ctx *ctx;
    struct fm_graph *g;
    const struct fm_backend *be;
    void *state;
    fm_tid in, out;
};

static struct fm_attrs rnd_attrs(enum fm_dtype dt)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.ints[0] = dt;
    a.nints = 3;   /* no seed */
    return a;
}

/* A graph of one random node: op with attrs a, reading one input of dims (or none). */
static void build(struct run *r, enum fm_op op, const struct fm_attrs *a, const int64_t *dims,
                  int rank, uint64_t seed)
{
    memset(r, 0, sizeof(*r));
    r->ctx = test_ctx();
    r->be = fm_backend_cpu();
    FM_ASSERT_OK(r->ctx, fm_graph_new(r->ctx, "rnd", &r->g));
    r->in = FM_NONE;
    if (rank) {
        struct fm_shape s = {.rank = rank};
        memcpy(s.dims, dims, sizeof(int64_t) * (size_t)rank);
        FM_ASSERT_OK(r->ctx, fm_graph_add_tensor(r->g, "x", FM_ROLE_INPUT, FM_DTYPE_FP32, &s,
                                                 &r->in));
    }
    FM_ASSERT_OK(r->ctx, fm_graph_add_node(r->g, op, "draw", a, &r->in, rank ? 1 : 0, NULL, 1,
                                           &r->out));
    FM_ASSERT_OK(r->ctx, fm_graph_finalize(r->g));
    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.device = "cpu";
    o.mode = FM_MODE_INFER;
    o.precision = FM_PREC_FP32;
    o.seed = seed;
    FM_ASSERT_OK(r->ctx, r->be->prepare(r->ctx, r->g, &o, &r->state));
}

static void step_read(struct run *r, float *y, uint64_t n)
{
    struct fm_step_timing t = {0};
    FM_ASSERT_OK(r->ctx, r->be->step(r->state, &t));
    FM_ASSERT_OK(r->ctx, r->be->read(r->state, r->out, false, y, n));
}

static void run_free(struct run *r)
{
    r->be->release(r->state);
    fm_graph_free(r->g);
    fm_ctx_free(r->ctx);
}

static void moments(const float *y, uint64_t n, double *mean, double *var)
{
    double s = 0, q = 0;
    for (uint64_t i = 0; i < n; i++)
        s += y[i];
    *mean = s / (double)n;
    for (uint64_t i = 0; i < n; i++)
        q += (y[i] - *mean) * (y[i] - *mean);
    *var = q / (double)(n - 1);
}

/* mean and variance within 5 standard errors of mu and sigma^2 (mu4: 4th central moment) */
static void expect_moments(const char *what, const float *y, uint64_t n, double mu, double var,
                           double mu4)
{
    double m, v;
    moments(y, n, &m, &v);
    double se_m = sqrt(var / (double)n), se_v = sqrt((mu4 - var * var) / (double)n);
    print_message("  %s: mean %.5f (expected %.5f +- %.5f), variance %.5f (%.5f +- %.5f)\n",
                  what, m, mu, 5 * se_m, v, var, 5 * se_v);
    assert_true(fabs(m - mu) <= 5 * se_m);
    assert_true(fabs(v - var) <= 5 * se_v);
}

/* |correlation of y[i] and y[i+1]| within 5 standard errors of 0 (1/sqrt(n)) */
static void expect_uncorrelated(const float *y, uint64_t n)
{
    double m, v, c = 0;
    moments(y, n, &m, &v);
    for (uint64_t i = 0; i + 1 < n; i++)
        c += (y[i] - m) * (y[i + 1] - m);
    c /= (double)(n - 1) * v;
    print_message("  lag-1 correlation %.5f (0 +- %.5f)\n", c, 5 / sqrt((double)n));
    assert_true(fabs(c) <= 5 / sqrt((double)n));
}

static bool have_cpu(void)
{
    if (fm_backend_cpu())
        return true;
    print_message("skipped: this build has no CPU backend\n");
    return false;
}

static void test_uniform(void **state)
{
    (void)state;
    if (!have_cpu())
        skip();
    struct fm_attrs a = rnd_attrs(FM_DTYPE_FP32);
    a.lo = -1.0;
    a.hi = 3.0;   /* width 4: variance 16/12, mu4 256/80 */
    float *y = malloc(sizeof(float) * N), *y2 = malloc(sizeof(float) * N);
    assert_non_null(y);
    assert_non_null(y2);
    struct run r;
    build(&r, FM_OP_RANDOM_UNIFORM_LIKE, &a, (const int64_t[]){200, 500}, 2, 1);
    step_read(&r, y, N);
    for (uint64_t i = 0; i < N; i++)
        assert_true(y[i] >= -1.0f && y[i] < 3.0f);
    expect_moments("RandomUniformLike [-1, 3)", y, N, 1.0, 16.0 / 12, 256.0 / 80);
    expect_uncorrelated(y, N);
    /* the next step draws anew: about none of the numbers repeat */
    step_read(&r, y2, N);
    uint64_t same = 0;
    for (uint64_t i = 0; i < N; i++)
        same += y[i] == y2[i];
    assert_true(same < 100);
    run_free(&r);
    /* the same run seed draws the same first step; another seed another */
    build(&r, FM_OP_RANDOM_UNIFORM_LIKE, &a, (const int64_t[]){200, 500}, 2, 1);
    step_read(&r, y2, N);
    assert_memory_equal(y, y2, sizeof(float) * N);
    run_free(&r);
    build(&r, FM_OP_RANDOM_UNIFORM_LIKE, &a, (const int64_t[]){200, 500}, 2, 2);
    step_read(&r, y2, N);
    assert_memory_not_equal(y, y2, sizeof(float) * N);
    run_free(&r);
    /* RandomUniform from attributes alone, [0, 1): variance 1/12, mu4 1/80 */
    a = rnd_attrs(FM_DTYPE_FP32);
    a.lo = 0.0;
    a.hi = 1.0;
    a.ints[3] = 1000;
    a.ints[4] = 100;
    a.nints = 5;
    build(&r, FM_OP_RANDOM_UNIFORM, &a, NULL, 0, 1);
    step_read(&r, y, N);
    expect_moments("RandomUniform [0, 1)", y, N, 0.5, 1.0 / 12, 1.0 / 80);
    run_free(&r);
    free(y);
    free(y2);
}

static void test_normal(void **state)
{
    (void)state;
    if (!have_cpu())
        skip();
    float *y = malloc(sizeof(float) * N);
    assert_non_null(y);
    struct fm_attrs a = rnd_attrs(FM_DTYPE_FP32);
    a.alpha = 0.5;   /* mean */
    a.beta = 2.0;    /* scale: variance 4, mu4 3 x 16 */
    struct run r;
    build(&r, FM_OP_RANDOM_NORMAL_LIKE, &a, (const int64_t[]){N}, 1, 1);
    step_read(&r, y, N);
    expect_moments("RandomNormalLike (0.5, 2)", y, N, 0.5, 4.0, 48.0);
    expect_uncorrelated(y, N);
    /* the tails: |z| > 3 happens with probability 0.0027 (270 of 100,000; 5 se = 82) */
    uint64_t tail = 0;
    for (uint64_t i = 0; i < N; i++)
        tail += fabs((y[i] - 0.5) / 2.0) > 3.0;
    print_message("  beyond 3 sigma: %llu (expected 270 +- 82)\n", (unsigned long long)tail);
    assert_true(tail >= 270 - 82 && tail <= 270 + 82);
    run_free(&r);
    /* RandomNormal with a seed attribute: standard normal */
    a = rnd_attrs(FM_DTYPE_FP32);
    a.alpha = 0.0;
    a.beta = 1.0;
    a.ints[1] = 1;
    a.ints[2] = 42;
    a.ints[3] = N;
    a.nints = 4;
    build(&r, FM_OP_RANDOM_NORMAL, &a, NULL, 0, 1);
    step_read(&r, y, N);
    expect_moments("RandomNormal (0, 1), seed 42", y, N, 0.0, 1.0, 3.0);
    run_free(&r);
    free(y);
}

static void test_bernoulli(void **state)
{
    (void)state;
    if (!have_cpu())
        skip();
    float *p = malloc(sizeof(float) * N), *y = malloc(sizeof(float) * N);
    assert_non_null(p);
    assert_non_null(y);
    struct fm_attrs a = rnd_attrs(FM_DTYPE_FP32);
    struct run r;
    build(&r, FM_OP_BERNOULLI, &a, (const int64_t[]){100, 1000}, 2, 1);
    /* the first half p = 0.3, the second p = 0.9 */
    for (uint64_t i = 0; i < N; i++)
        p[i] = i < N / 2 ? 0.3f : 0.9f;
    FM_ASSERT_OK(r.ctx, r.be->write(r.state, r.in, p, N));
    step_read(&r, y, N);
    for (uint64_t i = 0; i < N; i++)
        assert_true(y[i] == 0.0f || y[i] == 1.0f);
    const double q[2] = {0.3, 0.9};
    for (int h = 0; h < 2; h++) {
        double v = q[h] * (1 - q[h]);
        expect_moments(h ? "Bernoulli(0.9)" : "Bernoulli(0.3)", y + h * (N / 2), N / 2, q[h], v,
                       v * (1 - 3 * v));
    }
    run_free(&r);
    free(p);
    free(y);
}

static void test_multinomial(void **state)
{
    (void)state;
    if (!have_cpu())
        skip();
    /* 2 rows of 4 classes, probabilities (0.1, 0.2, 0.3, 0.4) and (0.4, 0.3, 0.2, 0.1) given as
     * their logarithms plus a constant (unnormalized); 50,000 samples a row: each class's
     * frequency within 5 sqrt(p(1-p)/S) of p */
    const int64_t S = N / 2;
    struct fm_attrs a = rnd_attrs(FM_DTYPE_INT64);
    a.ints[3] = S;
    a.nints = 4;
    struct run r;
    build(&r, FM_OP_MULTINOMIAL, &a, (const int64_t[]){2, 4}, 2, 1);
    const double pr[2][4] = {{0.1, 0.2, 0.3, 0.4}, {0.4, 0.3, 0.2, 0.1}};
    float x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (float)(log(pr[i / 4][i % 4]) + 7.0);
    FM_ASSERT_OK(r.ctx, r.be->write(r.state, r.in, x, 8));
    float *y = malloc(sizeof(float) * N);
    assert_non_null(y);
    step_read(&r, y, N);
    for (int row = 0; row < 2; row++) {
        uint64_t count[4] = {0};
        for (int64_t k = 0; k < S; k++) {
            float c = y[row * S + k];
            assert_true(c >= 0 && c <= 3 && c == floorf(c));
            count[(int)c]++;
        }
        for (int c = 0; c < 4; c++) {
            double f = (double)count[c] / (double)S, p = pr[row][c];
            double se = sqrt(p * (1 - p) / (double)S);
            print_message("  Multinomial row %d class %d: %.4f (expected %.2f +- %.4f)\n", row,
                          c, f, p, 5 * se);
            assert_true(fabs(f - p) <= 5 * se);
        }
    }
    run_free(&r);
    free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform),
        cmocka_unit_test(test_normal),
        cmocka_unit_test(test_bernoulli),
        cmocka_unit_test(test_multinomial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
