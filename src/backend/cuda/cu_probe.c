/* The GPU probe (fm_probe_cuda): the FMA peak of the vector units per precision (own kernel,
 * cu_kern_probe.cu), the GEMM peak per precision through cuBLASLt (8192^3, random operands),
 * and device memory bandwidth (a device-to-device copy and the STREAM triad, bytes read plus
 * written, on buffers 20x the L2 of current GPUs). Each figure is repeated and timed with CUDA
 * events after a warm-up; min, median and max are kept. Datasheet figures (`theory`) come from
 * the device table entry the GPU's name matches (none: 0, unknown). */
#include "cu.h"

#include <stdlib.h>
#include <string.h>

#define GEMM_DIM 8192u
#define COPY_BYTES (1ull << 30)
#define PROBE_WS (64u << 20)

static void stat_of(double *v, int n, struct fm_probe_stat *out)
{
    fm_stats_summary(v, (size_t)n, &out->min, &out->median, &out->max);
}

struct probe {
    struct cu_state s;
    cudaEvent_t a, b;
    int reps;
    double target_ms;
};

/* Times fn(arg) reps times (after one warm-up) and turns each time into `work` per second. */
typedef enum fm_status (*probe_fn)(struct probe *p, void *arg);

static enum fm_status timed(struct probe *p, probe_fn fn, void *arg, double work,
                            struct fm_probe_stat *out)
{
    struct cu_state *s = &p->s;
    double rate[64];
    int reps = p->reps < 64 ? p->reps : 64;
    enum fm_status st = fn(p, arg);
    if (st)
        return st;
    for (int i = 0; i < reps; i++) {
        CU_RET(s, cudaEventRecord(p->a, s->stream));
        if ((st = fn(p, arg)))
            return st;
        CU_RET(s, cudaEventRecord(p->b, s->stream));
        CU_RET(s, cudaEventSynchronize(p->b));
        float ms = 0.0f;
        CU_RET(s, cudaEventElapsedTime(&ms, p->a, p->b));
        rate[i] = work / (ms * 1e-3);
    }
    stat_of(rate, reps, out);
    return FM_OK;
}

/* ---- FMA ---- */

struct fma_arg {
    int precision, blocks, threads;
    uint32_t iters;
    void *sink;
    double flops;
};

static enum fm_status run_fma(struct probe *p, void *arg)
{
    struct fma_arg *f = arg;
    CU_RET(&p->s, cuk_fma_peak(f->precision, f->blocks, f->threads, f->iters, f->sink, &f->flops,
                               p->s.stream));
    return FM_OK;
}

static enum fm_status probe_fma(struct probe *p, void *sink, struct fm_probe_result *out)
{
    struct cu_state *s = &p->s;
    static const enum fm_precision precs[4] = {FM_PREC_FP32, FM_PREC_FP16, FM_PREC_BF16,
                                               FM_PREC_FP64};
    for (int k = 0; k < 4; k++) {
        /* 8 blocks of 256 threads fill an SM's 2048 thread slots */
        struct fma_arg f = {k, s->sm_count * 8, 256, 64, sink, 0.0};
        s->where = "FMA probe";
        /* grow the loop until one launch takes the target time: launch overhead vanishes */
        for (;;) {
            CU_RET(s, cudaEventRecord(p->a, s->stream));
            enum fm_status st = run_fma(p, &f);
            if (st)
                return st;
            CU_RET(s, cudaEventRecord(p->b, s->stream));
            CU_RET(s, cudaEventSynchronize(p->b));
            float ms = 0.0f;
            CU_RET(s, cudaEventElapsedTime(&ms, p->a, p->b));
            if (ms >= p->target_ms || f.iters >= (1u << 24))
                break;
            f.iters *= ms < p->target_ms / 8 ? 8 : 2;
        }
        enum fm_status st = timed(p, run_fma, &f, f.flops, &out->fma_all[precs[k]]);
        if (st)
            return st;
    }
    return FM_OK;
}

/* ---- GEMM through cuBLASLt ---- */

struct gemm_arg {
    struct cu_mm mm;
    void *a, *b, *c;
};

static enum fm_status run_gemm(struct probe *p, void *arg)
{
    struct gemm_arg *g = arg;
    return cu_mm_run(&p->s, &g->mm, g->a, g->b, g->c, false);
}

static enum fm_status probe_gemm(struct probe *p, struct fm_probe_result *out)
{
    struct cu_state *s = &p->s;
    enum fm_status st = FM_OK;
    uint64_t n = GEMM_DIM;
    void *a = NULL, *b = NULL, *c = NULL;
    s->where = "GEMM probe";
    CU_TRY(s, cudaMalloc(&a, n * n * 4));
    CU_TRY(s, cudaMalloc(&b, n * n * 4));
    CU_TRY(s, cudaMalloc(&c, n * n * 4));
    static const enum fm_precision precs[4] = {FM_PREC_FP32, FM_PREC_TF32, FM_PREC_FP16,
                                               FM_PREC_BF16};
    for (int k = 0; k < 4; k++) {
        enum cu_dt dt = precs[k] == FM_PREC_FP16 ? CU_F16 : precs[k] == FM_PREC_BF16 ? CU_BF16 : CU_F32;
        /* random operands: zeros run measurably faster on tensor cores */
        CU_TRY(s, cuk_fill_random(a, dt, n * n, 11 + (uint64_t)k, 1.0f, s->stream));
        CU_TRY(s, cuk_fill_random(b, dt, n * n, 23 + (uint64_t)k, 1.0f, s->stream));
        struct gemm_arg g = {{0}, a, b, c};
        st = cu_mm_init(s, &g.mm, false, false, n, n, n, dt, dt, cu_lt_compute(precs[k]), NULL,
                        PROBE_WS);
        if (st)
            goto fail;
        st = timed(p, run_gemm, &g, 2.0 * (double)n * (double)n * (double)n, &out->gemm[precs[k]]);
        cu_mm_release(&g.mm);
        if (st)
            goto fail;
    }
fail:
    if (a)
        cudaFree(a);
    if (b)
        cudaFree(b);
    if (c)
        cudaFree(c);
    return st;
}

/* ---- memory bandwidth ---- */

struct copy_arg {
    void *dst, *src, *third;
    uint64_t bytes;
};

static enum fm_status run_copy(struct probe *p, void *arg)
{
    struct copy_arg *c = arg;
    CU_RET(&p->s, cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, p->s.stream));
    return FM_OK;
}

static enum fm_status run_triad(struct probe *p, void *arg)
{
    struct copy_arg *c = arg;
    CU_RET(&p->s, cuk_triad(c->dst, c->src, c->third, c->bytes / 4, p->s.stream));
    return FM_OK;
}

static enum fm_status probe_bandwidth(struct probe *p, struct fm_probe_result *out)
{
    struct cu_state *s = &p->s;
    enum fm_status st = FM_OK;
    void *x = NULL, *y = NULL, *z = NULL;
    s->where = "bandwidth probe";
    CU_TRY(s, cudaMalloc(&x, COPY_BYTES));
    CU_TRY(s, cudaMalloc(&y, COPY_BYTES));
    CU_TRY(s, cudaMalloc(&z, COPY_BYTES));
    CU_TRY(s, cuk_fill_random(x, CU_F32, COPY_BYTES / 4, 5, 1.0f, s->stream));
    CU_TRY(s, cuk_fill_random(z, CU_F32, COPY_BYTES / 4, 7, 1.0f, s->stream));
    struct copy_arg c = {y, x, z, COPY_BYTES};
    st = timed(p, run_copy, &c, 2.0 * (double)COPY_BYTES, &out->bw_copy);
    if (!st)
        st = timed(p, run_triad, &c, 3.0 * (double)COPY_BYTES, &out->bw_triad);
    out->working_set_bytes = 2 * COPY_BYTES;
fail:
    if (x)
        cudaFree(x);
    if (y)
        cudaFree(y);
    if (z)
        cudaFree(z);
    return st;
}

/* The datasheet next to each measured figure; a GPU the table lacks leaves them 0. */
static void fill_theory(struct fm_ctx *ctx, struct fm_probe_result *out)
{
    struct fm_devices *devs = NULL;
    const struct fm_device *d = NULL;
    if (fm_devices_load(ctx, NULL, &devs) == FM_OK &&
        fm_devices_match(ctx, devs, out->device_name, &d) == FM_OK) {
        for (int p = 0; p < FM_PREC_COUNT; p++) {
            out->fma_all[p].theory = d->peak_vector[p];
            out->gemm[p].theory = fm_device_peak(d, FM_CLASS_MATMUL, (enum fm_precision)p);
        }
        out->bw_copy.theory = out->bw_triad.theory = d->mem_bw;
    }
    fm_devices_free(devs);   /* a GPU the table lacks is no failure of the probe */
}

enum fm_status fm_probe_cuda(struct fm_ctx *ctx, const struct fm_probe_opts *opts,
                             struct fm_probe_result *out)
{
    struct probe *p = fm_alloc(ctx, sizeof(*p));
    if (!p)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory");
    struct cu_state *s = &p->s;
    s->ctx = ctx;
    void *sink = NULL;
    enum fm_status st = cu_open_for_probe(s, opts->device);
    if (st)
        goto fail;
    memset(out, 0, sizeof(*out));
    snprintf(out->device_name, sizeof(out->device_name), "%s", s->name);
    p->reps = opts->repetitions > 0 ? opts->repetitions : 5;
    p->target_ms = (opts->seconds > 0 ? opts->seconds : 0.2) * 1e3 / p->reps;
    if (p->target_ms < 5.0)
        p->target_ms = 5.0;
    CU_TRY(s, cudaEventCreate(&p->a));
    CU_TRY(s, cudaEventCreate(&p->b));
    if ((st = cu_libs_open(ctx, &s->lib_cudnn, &s->lib_lt)))
        goto fail;
    CUBLAS_TRY(s, cublasLtCreate(&s->lt));
    CU_TRY(s, cudaMalloc(&s->workspace, PROBE_WS));
    s->workspace_bytes = PROBE_WS;
    CU_TRY(s, cudaMalloc(&sink, (size_t)s->sm_count * 8 * 256 * sizeof(float)));
    if (opts->progress)
        opts->progress(opts->progress_user, "FMA peak", 0, 3);
    if ((st = probe_fma(p, sink, out)))
        goto fail;
    if (opts->progress)
        opts->progress(opts->progress_user, "GEMM peak", 1, 3);
    if ((st = probe_gemm(p, out)))
        goto fail;
    if (opts->progress)
        opts->progress(opts->progress_user, "memory bandwidth", 2, 3);
    if ((st = probe_bandwidth(p, out)))
        goto fail;
    if (opts->progress)
        opts->progress(opts->progress_user, "done", 3, 3);
    fill_theory(ctx, out);
fail:
    if (sink)
        cudaFree(sink);
    if (s->workspace)
        cudaFree(s->workspace);
    if (s->lt)
        cublasLtDestroy(s->lt);
    cu_libs_close(s->lib_cudnn, s->lib_lt);
    if (p->a)
        cudaEventDestroy(p->a);
    if (p->b)
        cudaEventDestroy(p->b);
    if (s->stream)
        cudaStreamDestroy(s->stream);
    cu_nvml_close(s);
    fm_dealloc(ctx, p);
    return st;
}
