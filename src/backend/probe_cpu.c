/* The CPU probe: peak FMA throughput (fp32, fp64, and bf16 where the CPU has AVX512_BF16) on
 * one thread and on all threads, with independent chains of vector FMAs that no memory access
 * slows; memory bandwidth (copy and triad) on arrays far larger than the last-level cache; and
 * next to each, the theoretical figure from the CPU's features, core count and clock. Plain C
 * with compiler intrinsics in functions compiled for their ISA and called only when cpuid says
 * the CPU (and OS) has it; pthreads. No BLAS: what a library reaches is measured by `measure`. */
#include "backend.h"
#include "../core/internal.h"

/* The kernels must be optimized to measure anything: a Debug (-O0) build would keep every
 * accumulator in memory and report a fraction of the peak. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE__)
#pragma GCC optimize("O2")
#endif

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#define FM_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- what the CPU has ---- */

enum isa { ISA_GENERIC = 0, ISA_AVX2_FMA, ISA_AVX512 };

struct cpu_info {
    char vendor[16];
    unsigned family, model;
    enum isa isa;
    bool bf16;                   /* AVX512_BF16: vdpbf16ps */
    int logical;                 /* CPUs this process may run on */
    int cores;                   /* physical cores among them */
    int cpus[1024];              /* their ids, for pinning */
    double clock_mhz;
    const char *clock_source;
    uint64_t llc_bytes, mem_bytes;
};

static void detect_isa(struct cpu_info *ci)
{
#ifdef FM_X86
    unsigned a, b, c, d;
    if (__get_cpuid(0, &a, &b, &c, &d)) {
        memcpy(ci->vendor, &b, 4);
        memcpy(ci->vendor + 4, &d, 4);
        memcpy(ci->vendor + 8, &c, 4);
        ci->vendor[12] = '\0';
    }
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        unsigned fam = (a >> 8) & 0xf, mod = (a >> 4) & 0xf;
        if (fam == 0xf)
            fam += (a >> 20) & 0xff;
        if (fam >= 6)
            mod |= ((a >> 16) & 0xf) << 4;
        ci->family = fam;
        ci->model = mod;
    }
    /* __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0) */
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        ci->isa = ISA_AVX512;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        ci->isa = ISA_AVX2_FMA;
    if (ci->isa == ISA_AVX512 && __get_cpuid_count(7, 1, &a, &b, &c, &d))
        ci->bf16 = (a >> 5) & 1;   /* CPUID.(EAX=7,ECX=1):EAX[5] = AVX512_BF16 */
#else
    snprintf(ci->vendor, sizeof(ci->vendor), "unknown");
#endif
}

static uint64_t read_size_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long v = 0;
    char unit = 0;
    int n = fscanf(f, "%llu%c", &v, &unit);
    fclose(f);
    if (n < 1)
        return 0;
    if (unit == 'K')
        v *= 1024;
    else if (unit == 'M')
        v *= 1024 * 1024;
    return v;
}

/* Physical cores among the CPUs we may use: distinct (physical id, core id) in /proc/cpuinfo. */
static int count_cores(const struct cpu_info *ci)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return ci->logical;
    char line[256];
    int proc = -1, phys = 0, seen = 0;
    long keys[1024];
    while (fgets(line, sizeof(line), f)) {
        int v;
        if (sscanf(line, "processor : %d", &v) == 1)
            proc = v;
        else if (sscanf(line, "physical id : %d", &v) == 1)
            phys = v;
        else if (sscanf(line, "core id : %d", &v) == 1) {
            bool mine = false;
            for (int i = 0; i < ci->logical; i++)
                mine = mine || ci->cpus[i] == proc;
            long key = (long)phys * 100000 + v;
            bool dup = false;
            for (int i = 0; i < seen; i++)
                dup = dup || keys[i] == key;
            if (mine && !dup && seen < 1024)
                keys[seen++] = key;
        }
    }
    fclose(f);
    return seen > 0 ? seen : ci->logical;
}

static void detect(struct cpu_info *ci, char *name, size_t name_size)
{
    memset(ci, 0, sizeof(*ci));
    detect_isa(ci);
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE && ci->logical < 1024; c++) {
            if (CPU_ISSET(c, &set))
                ci->cpus[ci->logical++] = c;
        }
    }
    if (ci->logical == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        ci->logical = n > 0 && n < 1024 ? (int)n : 1;
        for (int i = 0; i < ci->logical; i++)
            ci->cpus[i] = i;
    }
    ci->cores = count_cores(ci);
    snprintf(name, name_size, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    double mhz = 0;
    while (f && fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        v[strcspn(v, "\n")] = '\0';
        if (strncmp(line, "model name", 10) == 0 && strcmp(name, "CPU") == 0)
            snprintf(name, name_size, "%s", v);
        if (strncmp(line, "cpu MHz", 7) == 0 && mhz == 0)
            mhz = atof(v);
    }
    if (f)
        fclose(f);
    /* the highest clock the cores may run at; a VM or a fixed clock has no cpufreq */
    uint64_t khz = read_size_file("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
    if (khz > 0) {
        ci->clock_mhz = (double)khz / 1e3;
        ci->clock_source = "cpufreq's maximum";
    } else if (mhz > 0) {
        ci->clock_mhz = mhz;
        ci->clock_source = "/proc/cpuinfo, no cpufreq";
    }
    ci->llc_bytes = read_size_file("/sys/devices/system/cpu/cpu0/cache/index3/size");
    if (!ci->llc_bytes)
        ci->llc_bytes = read_size_file("/sys/devices/system/cpu/cpu0/cache/index2/size");
    f = fopen("/proc/meminfo", "r");
    unsigned long long kb;
    while (f && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
            ci->mem_bytes = (uint64_t)kb * 1024;
    }
    if (f)
        fclose(f);
}

/* FP32 FLOP per cycle per core at the full vector width: FMA pipes x lanes x 2. Vendors do not
 * publish it through cpuid; this is the microarchitecture's documented execution width. 0 when
 * not known. */
static double fp32_per_cycle(const struct cpu_info *ci, char *why, size_t size)
{
    bool amd = strcmp(ci->vendor, "AuthenticAMD") == 0 || strcmp(ci->vendor, "HygonGenuine") == 0;
    bool intel = strcmp(ci->vendor, "GenuineIntel") == 0;
    double r = 0;
    const char *w = "unknown microarchitecture: no theoretical FMA figure";
    if (amd && ci->family == 0x1a) {
        r = 64;
        w = "Zen 5: 2 FMA pipes x 512 bits (mobile parts: 256 bits, half)";
    } else if (amd && ci->family == 0x19) {
        r = 32;
        w = ci->isa == ISA_AVX512 ? "Zen 4: 2 FMA pipes x 256 bits; AVX-512 runs as two halves"
                                  : "Zen 3: 2 FMA pipes x 256 bits";
    } else if (amd && ci->family == 0x17) {
        r = ci->model >= 0x30 ? 32 : 16;
        w = ci->model >= 0x30 ? "Zen 2: 2 FMA pipes x 256 bits" : "Zen/Zen+: 2 FMA pipes x 128 bits";
    } else if (intel && ci->isa == ISA_AVX512) {
        r = 64;
        w = "AVX-512 with 2 FMA units x 512 bits (Xeon Gold/Platinum, Core X; one-unit parts reach "
            "half)";
    } else if (intel && ci->isa == ISA_AVX2_FMA) {
        r = 32;
        w = "AVX2: 2 FMA units x 256 bits (Haswell and later)";
    }
    snprintf(why, size, "%s", w);
    return r;
}

/* ---- FMA kernels: CHAINS independent accumulators hide the FMA latency (4-6 cycles) on
 * 2 pipes; a = a * b + c with b just below 1 converges, so nothing overflows or goes
 * subnormal. Each returns a value the caller keeps, so nothing is optimized away. ---- */

#define CHAINS 12
#define REP12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

#ifdef FM_X86
__attribute__((target("avx512f"))) static double fma_f32_avx512(uint64_t iters)
{
#define D(k) __m512 a##k = _mm512_set1_ps(1.0f + 0.001f * k);
    REP12(D)
#undef D
    const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
    for (uint64_t i = 0; i < iters; i++) {
#define F(k) a##k = _mm512_fmadd_ps(a##k, b, c);
        REP12(F)
#undef F
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f"))) static double fma_f64_avx512(uint64_t iters)
{
#define D(k) __m512d a##k = _mm512_set1_pd(1.0 + 0.001 * k);
    REP12(D)
#undef D
    const __m512d b = _mm512_set1_pd(0.999999), c = _mm512_set1_pd(1e-6);
    for (uint64_t i = 0; i < iters; i++) {
#define F(k) a##k = _mm512_fmadd_pd(a##k, b, c);
        REP12(F)
#undef F
    }
    __m512d s = _mm512_add_pd(_mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)),
                              _mm512_add_pd(_mm512_add_pd(a4, a5), _mm512_add_pd(a6, a7)));
    s = _mm512_add_pd(s, _mm512_add_pd(_mm512_add_pd(a8, a9), _mm512_add_pd(a10, a11)));
    return _mm512_reduce_add_pd(s);
}

/* vdpbf16ps: each of 16 fp32 lanes adds two bf16 products: 4 FLOP per lane */
__attribute__((target("avx512f,avx512bf16"))) static double fma_bf16_avx512(uint64_t iters)
{
    const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
    const __m512bh y = _mm512_cvtne2ps_pbh(_mm512_set1_ps(-1e-3f), _mm512_set1_ps(1e-3f));
#define D(k) __m512 a##k = _mm512_set1_ps(0.001f * k);
    REP12(D)
#undef D
    for (uint64_t i = 0; i < iters; i++) {
#define F(k) a##k = _mm512_dpbf16_ps(a##k, x, y);
        REP12(F)
#undef F
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static double fma_f32_avx2(uint64_t iters)
{
#define D(k) __m256 a##k = _mm256_set1_ps(1.0f + 0.001f * k);
    REP12(D)
#undef D
    const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
    for (uint64_t i = 0; i < iters; i++) {
#define F(k) a##k = _mm256_fmadd_ps(a##k, b, c);
        REP12(F)
#undef F
    }
    float out[8];
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
    _mm256_storeu_ps(out, s);
    return (double)out[0] + out[7];
}

__attribute__((target("avx2,fma"))) static double fma_f64_avx2(uint64_t iters)
{
#define D(k) __m256d a##k = _mm256_set1_pd(1.0 + 0.001 * k);
    REP12(D)
#undef D
    const __m256d b = _mm256_set1_pd(0.999999), c = _mm256_set1_pd(1e-6);
    for (uint64_t i = 0; i < iters; i++) {
#define F(k) a##k = _mm256_fmadd_pd(a##k, b, c);
        REP12(F)
#undef F
    }
    double out[4];
    __m256d s = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)),
                              _mm256_add_pd(_mm256_add_pd(a4, a5), _mm256_add_pd(a6, a7)));
    s = _mm256_add_pd(s, _mm256_add_pd(_mm256_add_pd(a8, a9), _mm256_add_pd(a10, a11)));
    _mm256_storeu_pd(out, s);
    return out[0] + out[3];
}
#endif

/* Without vector FMA: a multiply and an add per element (2 FLOP, unfused), 4-wide. */
typedef float v4sf __attribute__((vector_size(16)));
typedef double v2df __attribute__((vector_size(16)));

static double fma_f32_generic(uint64_t iters)
{
    v4sf a[CHAINS], b = {0.999999f, 0.999999f, 0.999999f, 0.999999f};
    v4sf c = {1e-6f, 1e-6f, 1e-6f, 1e-6f};
    for (int k = 0; k < CHAINS; k++)
        a[k] = b + (float)k;
    for (uint64_t i = 0; i < iters; i++) {
        for (int k = 0; k < CHAINS; k++)
            a[k] = a[k] * b + c;
    }
    double s = 0;
    for (int k = 0; k < CHAINS; k++)
        s += a[k][0];
    return s;
}

static double fma_f64_generic(uint64_t iters)
{
    v2df a[CHAINS], b = {0.999999, 0.999999}, c = {1e-6, 1e-6};
    for (int k = 0; k < CHAINS; k++)
        a[k] = b + (double)k;
    for (uint64_t i = 0; i < iters; i++) {
        for (int k = 0; k < CHAINS; k++)
            a[k] = a[k] * b + c;
    }
    double s = 0;
    for (int k = 0; k < CHAINS; k++)
        s += a[k][0];
    return s;
}

struct kernel {
    double (*fn)(uint64_t iters);
    double flops_per_iter;       /* per thread */
    const char *label;
};

/* The kernel of a precision on this CPU; fn NULL when the CPU has no such arithmetic. */
static struct kernel kernel_for(const struct cpu_info *ci, enum fm_precision p)
{
    struct kernel k = {NULL, 0, NULL};
#ifdef FM_X86
    if (ci->isa == ISA_AVX512) {
        if (p == FM_PREC_FP32)
            k = (struct kernel){fma_f32_avx512, CHAINS * 16 * 2.0, "AVX-512 vfmadd (fp32)"};
        else if (p == FM_PREC_FP64)
            k = (struct kernel){fma_f64_avx512, CHAINS * 8 * 2.0, "AVX-512 vfmadd (fp64)"};
        else if (p == FM_PREC_BF16 && ci->bf16)
            k = (struct kernel){fma_bf16_avx512, CHAINS * 16 * 4.0, "AVX512_BF16 vdpbf16ps"};
        return k;
    }
    if (ci->isa == ISA_AVX2_FMA) {
        if (p == FM_PREC_FP32)
            k = (struct kernel){fma_f32_avx2, CHAINS * 8 * 2.0, "AVX2 vfmadd (fp32)"};
        else if (p == FM_PREC_FP64)
            k = (struct kernel){fma_f64_avx2, CHAINS * 4 * 2.0, "AVX2 vfmadd (fp64)"};
        return k;
    }
#endif
    if (p == FM_PREC_FP32)
        k = (struct kernel){fma_f32_generic, CHAINS * 4 * 2.0, "4-wide mul+add (fp32)"};
    else if (p == FM_PREC_FP64)
        k = (struct kernel){fma_f64_generic, CHAINS * 2 * 2.0, "2-wide mul+add (fp64)"};
    return k;
}

/* ---- running work on n threads, pinned one per CPU ---- */

struct worker {
    pthread_barrier_t *start;
    int cpu;
    void (*work)(void *arg, int index);
    void *arg;
    int index;
    double t0, t1;   /* when this thread started and finished its work */
};

static void *worker_main(void *p)
{
    struct worker *w = p;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(w->cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    pthread_barrier_wait(w->start);
    w->t0 = now_s();
    w->work(w->arg, w->index);
    w->t1 = now_s();
    return NULL;
}

/* Wall time of work(arg, i) run at once on threads i = 0..n-1; < 0 if threads failed. */
static double run_threads(const struct cpu_info *ci, int n, void (*work)(void *, int), void *arg)
{
    if (n == 1) {
        double t0 = now_s();
        work(arg, 0);
        return now_s() - t0;
    }
    pthread_t tid[1024];
    struct worker w[1024];
    pthread_barrier_t start;
    if (pthread_barrier_init(&start, NULL, (unsigned)n + 1))
        return -1;
    int made = 0;
    for (int i = 0; i < n; i++) {
        w[i] = (struct worker){&start, ci->cpus[i % ci->logical], work, arg, i, 0.0, 0.0};
        if (pthread_create(&tid[i], NULL, worker_main, &w[i]))
            break;
        made++;
    }
    if (made < n) {
        /* the barrier would never open: let the started ones go, then report failure */
        for (int i = 0; i < made; i++)
            pthread_cancel(tid[i]);
        for (int i = 0; i < made; i++)
            pthread_join(tid[i], NULL);
        pthread_barrier_destroy(&start);
        return -1;
    }
    pthread_barrier_wait(&start);
    for (int i = 0; i < n; i++)
        pthread_join(tid[i], NULL);
    pthread_barrier_destroy(&start);
    /* the span from the first worker's start to the last one's end, as the workers clocked
     * it: a clock read here after the barrier could come after the work on a loaded machine
     * (this thread descheduled), a time near zero, and the caller's passes = budget / time
     * would then run for minutes */
    double t0 = w[0].t0, t1 = w[0].t1;
    for (int i = 1; i < n; i++) {
        t0 = w[i].t0 < t0 ? w[i].t0 : t0;
        t1 = w[i].t1 > t1 ? w[i].t1 : t1;
    }
    return t1 - t0;
}

struct fma_job {
    struct kernel k;
    uint64_t iters;
    double sink[1024];
};

static void fma_work(void *arg, int i)
{
    struct fma_job *j = arg;
    j->sink[i] = j->k.fn(j->iters);
}

static void stat_of(double *v, int n, struct fm_probe_stat *out)
{
    fm_stats_summary(v, (size_t)n, &out->min, &out->median, &out->max);
}

/* Iterations for one repetition of about rep_s seconds on one thread (after a warm-up, which
 * also lets the clock rise). */
static uint64_t calibrate(struct kernel k, double rep_s)
{
    uint64_t iters = 1u << 12;
    double t = 0;
    volatile double keep = 0;
    for (int guard = 0; guard < 40; guard++) {
        double t0 = now_s();
        keep += k.fn(iters);
        t = now_s() - t0;
        if (t >= 0.02)
            break;
        iters *= 2;
    }
    (void)keep;
    double per = t / (double)iters;
    double want = rep_s / (per > 0 ? per : 1e-9);
    return want < 1024 ? 1024 : (uint64_t)want;
}

static enum fm_status probe_fma(struct fm_ctx *ctx, const struct cpu_info *ci, int threads,
                                int reps, double rep_s, enum fm_precision p, bool all,
                                struct fm_probe_stat *out)
{
    struct fma_job *job = fm_alloc(ctx, sizeof(*job));
    double *rates = fm_alloc(ctx, sizeof(double) * (size_t)reps);
    enum fm_status st = FM_OK;
    if (!job || !rates) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory");
        goto out;
    }
    job->k = kernel_for(ci, p);
    if (!job->k.fn)
        goto out;   /* no such arithmetic here: the figure stays 0 */
    job->iters = calibrate(job->k, rep_s);
    int n = all ? threads : 1;
    for (int r = 0; r < reps; r++) {
        double t = run_threads(ci, n, fma_work, job);
        if (t <= 0) {
            st = fm_error(ctx, FM_ERR_DEVICE, "could not start %d probe threads", n);
            goto out;
        }
        rates[r] = (double)n * (double)job->iters * job->k.flops_per_iter / t;
    }
    stat_of(rates, reps, out);
out:
    fm_dealloc(ctx, job);
    fm_dealloc(ctx, rates);
    return st;
}

/* ---- the clock the cores run at: a chain of dependent integer adds retires one add per
 * cycle (every x86 core since the Pentium Pro), so adds per second = cycles per second. It is
 * measured because a VM shows no cpufreq and its 'cpu MHz' is the nominal clock, and because
 * with every core busy the boost clock is lower than with one. (Intel parts may lower the clock
 * further for AVX-512 code: there the FMA figures can stay below this theory.) ---- */

#ifdef FM_X86
/* register-register adds: newer Intel cores (Golden Cove) fold chains of adds of small
 * immediates at rename and retire them faster than one per cycle, which read as a 2x clock */
#define ADD4 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
static double add_chain_ghz(uint64_t iters)
{
    uint64_t x = 0, one = 1;
    double t0 = now_s();
    for (uint64_t i = 0; i < iters; i++)
        __asm__ volatile(ADD4 ADD4 ADD4 ADD4 : "+r"(x) : "r"(one));
    double t = now_s() - t0;
    return t > 0 && x == 16 * iters ? 16.0 * (double)iters / t / 1e9 : 0.0;
}
#undef ADD4

struct clock_job {
    uint64_t iters;
    double ghz[1024];
};

static void clock_work(void *arg, int i)
{
    struct clock_job *j = arg;
    j->ghz[i] = add_chain_ghz(j->iters);
}
#endif

/* Clock in MHz of one thread alone (all = false) or the mean over threads running at once. Many
 * runs of about a millisecond each, and the fastest one counts: other processes can only slow
 * the chain down, and a run this short often fits between two of their time slices. 0 where it
 * cannot be measured. */
#define CLOCK_RUNS 64
static double measure_clock(struct fm_ctx *ctx, const struct cpu_info *ci, int threads, bool all)
{
    double mhz = 0;
#ifdef FM_X86
    struct clock_job *j = fm_alloc(ctx, sizeof(*j));
    if (!j)
        return 0;
    j->iters = 1u << 10;
    while (j->iters < (1ull << 34)) {
        double t0 = now_s();
        add_chain_ghz(j->iters);
        if (now_s() - t0 > 0.001)
            break;
        j->iters *= 2;
    }
    int n = all ? threads : 1;
    for (int r = 0; r < CLOCK_RUNS; r++) {
        if (run_threads(ci, n, clock_work, j) <= 0)
            break;
        double sum = 0;
        for (int i = 0; i < n; i++)
            sum += j->ghz[i];
        if (sum / n * 1e3 > mhz)
            mhz = sum / n * 1e3;
    }
    fm_dealloc(ctx, j);
#else
    (void)ctx;
    (void)ci;
    (void)threads;
    (void)all;
#endif
    return mhz;
}

/* ---- memory bandwidth: STREAM's copy (a = b) and triad (a = b + s c) over doubles. Bytes
 * counted are those the loop reads and writes (16 per element for copy, 24 for triad); the
 * write-allocate read of a, which a cache adds, is not counted, as in STREAM. ---- */

struct bw_job {
    double *a, *b, *c;
    size_t n;                    /* elements per array */
    int threads;
    int passes;
    bool triad;
};

static void chunk(const struct bw_job *j, int i, size_t *lo, size_t *hi)
{
    size_t per = j->n / (size_t)j->threads;
    *lo = per * (size_t)i;
    *hi = i == j->threads - 1 ? j->n : *lo + per;
}

static void bw_init(void *arg, int i)
{
    struct bw_job *j = arg;
    size_t lo, hi;
    chunk(j, i, &lo, &hi);
    for (size_t k = lo; k < hi; k++) {   /* first touch by the thread that will use it */
        j->a[k] = 0.0;
        j->b[k] = 1.0 + (double)(k & 7);
        j->c[k] = 0.5;
    }
}

static void bw_work(void *arg, int i)
{
    struct bw_job *j = arg;
    size_t lo, hi;
    chunk(j, i, &lo, &hi);
    double *restrict a = j->a;
    const double *restrict b = j->b, *restrict c = j->c;
    for (int p = 0; p < j->passes; p++) {
        if (j->triad) {
            for (size_t k = lo; k < hi; k++)
                a[k] = b[k] + 3.0 * c[k];
        } else {
            for (size_t k = lo; k < hi; k++)
                a[k] = b[k];
        }
    }
}

static enum fm_status probe_bandwidth(struct fm_ctx *ctx, const struct cpu_info *ci, int threads,
                                      int reps, double rep_s, struct fm_probe_result *out)
{
    /* each array 4x the last-level cache and at least 64 MiB: triad's working set is 12x */
    uint64_t bytes = ci->llc_bytes * 4;
    if (bytes < (64u << 20))
        bytes = 64u << 20;
    struct bw_job j = {0};
    j.n = (size_t)(bytes / sizeof(double));
    j.threads = threads;
    double *rates = fm_alloc(ctx, sizeof(double) * (size_t)reps);
    enum fm_status st = FM_OK;
    /* not fm_alloc: it would touch every page from this thread before the workers do */
    j.a = ctx->alloc.malloc_fn(j.n * sizeof(double), ctx->alloc.user);
    j.b = ctx->alloc.malloc_fn(j.n * sizeof(double), ctx->alloc.user);
    j.c = ctx->alloc.malloc_fn(j.n * sizeof(double), ctx->alloc.user);
    if (!rates || !j.a || !j.b || !j.c) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory for the bandwidth arrays (3 x %llu MiB)",
                      (unsigned long long)(bytes >> 20));
        goto out;
    }
    out->working_set_bytes = 3 * (uint64_t)j.n * sizeof(double);
    if (run_threads(ci, threads, bw_init, &j) < 0) {
        st = fm_error(ctx, FM_ERR_DEVICE, "could not start %d probe threads", threads);
        goto out;
    }
    for (int triad = 0; triad < 2; triad++) {
        j.triad = triad;
        j.passes = 1;
        double t = run_threads(ci, threads, bw_work, &j);   /* also the warm-up */
        int passes = t > 0 ? (int)(rep_s / t) : 1;
        j.passes = passes < 1 ? 1 : passes;
        for (int r = 0; r < reps; r++) {
            t = run_threads(ci, threads, bw_work, &j);
            if (t <= 0) {
                st = fm_error(ctx, FM_ERR_DEVICE, "could not start %d probe threads", threads);
                goto out;
            }
            rates[r] = (triad ? 24.0 : 16.0) * (double)j.n * j.passes / t;
        }
        stat_of(rates, reps, triad ? &out->bw_triad : &out->bw_copy);
    }
out:
    fm_dealloc(ctx, rates);
    fm_dealloc(ctx, j.a);
    fm_dealloc(ctx, j.b);
    fm_dealloc(ctx, j.c);
    return st;
}

/* ---- the probe ---- */

enum fm_status fm_probe_cpu(struct fm_ctx *ctx, const struct fm_probe_opts *opts,
                            struct fm_probe_result *out)
{
    memset(out, 0, sizeof(*out));
    struct cpu_info *ci = fm_alloc(ctx, sizeof(*ci));
    if (!ci)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory");
    detect(ci, out->device_name, sizeof(out->device_name));
    int threads = opts->threads > 0 ? opts->threads : ci->logical;
    if (threads > 1024)
        threads = 1024;
    int reps = opts->repetitions > 0 ? opts->repetitions : 5;
    double seconds = opts->seconds > 0 ? opts->seconds : 0.2;
    double rep_s = seconds / reps < 0.01 ? 0.01 : seconds / reps;
    out->threads = threads;
    out->cores = ci->cores;
    out->mem_bytes = ci->mem_bytes;
    out->cache_bytes = ci->llc_bytes;
    snprintf(out->kind, sizeof(out->kind), "cpu");
    static const char *const isa_names[] = {"no AVX2/FMA: generic vectors", "AVX2 + FMA",
                                            "AVX-512"};
    snprintf(out->arch, sizeof(out->arch), "%s family %xh model %xh, %s%s", ci->vendor,
             ci->family, ci->model, isa_names[ci->isa], ci->bf16 ? " + BF16" : "");

    static const enum fm_precision precs[] = {FM_PREC_FP32, FM_PREC_FP64, FM_PREC_BF16};
    char why[160];
    double f32 = fp32_per_cycle(ci, why, sizeof(why));
    if (ci->isa == ISA_GENERIC)
        f32 = 0;
    int used_cores = threads < ci->cores ? threads : ci->cores;
    int total = 2 * 3 + 1, step = 0;
    enum fm_status st = FM_OK;
    double clock_1t = 0, clock_all = 0;
    for (size_t i = 0; i < sizeof(precs) / sizeof(precs[0]) && !st; i++) {
        enum fm_precision p = precs[i];
        for (int all = 0; all < 2 && !st; all++) {
            if (opts->progress) {
                char what[64];
                snprintf(what, sizeof(what), "%s FMA, %s", fm_precision_name(p),
                         all ? "all threads" : "one thread");
                opts->progress(opts->progress_user, what, step, total);
            }
            step++;
            st = probe_fma(ctx, ci, threads, reps, rep_s, p, all,
                           all ? &out->fma_all[p] : &out->fma_1t[p]);
            /* the clock right after the first busy runs, one thread and then all of them */
            if (!st && p == FM_PREC_FP32)
                *(all ? &clock_all : &clock_1t) = measure_clock(ctx, ci, threads, all);
        }
    }
    /* Theory from the single-thread clock (the nominal one where it could not be measured) on
     * every core: what the hardware can do. The clock seen with all threads at once is only
     * reported: it drops when other processes share the cores, which is no property of the
     * CPU, and with a lower all-core boost. */
    double c1 = clock_1t > 0 ? clock_1t : ci->clock_mhz;
    out->clock_mhz = c1;
    for (size_t i = 0; i < sizeof(precs) / sizeof(precs[0]); i++) {
        enum fm_precision p = precs[i];
        double per_cycle = p == FM_PREC_FP32 ? f32 : p == FM_PREC_FP64 ? f32 / 2 : 2 * f32;
        if (kernel_for(ci, p).fn && per_cycle > 0 && c1 > 0) {
            out->fma_1t[p].theory = per_cycle * c1 * 1e6;
            out->fma_all[p].theory = per_cycle * c1 * 1e6 * used_cores;
        }
    }
    if (!st && opts->progress)
        opts->progress(opts->progress_user, "memory bandwidth", step, total);
    if (!st)
        st = probe_bandwidth(ctx, ci, threads, reps, rep_s, out);
    if (!st && opts->progress)
        opts->progress(opts->progress_user, "done", total, total);
    snprintf(out->notes, sizeof(out->notes),
             "theory = FLOP/cycle/core x clock x cores. %.100s: fp32 %.0f FLOP/cycle/core, fp64 "
             "half, bf16 double. Clock of a dependent-add chain: %.0f MHz on one thread (used), "
             "%.0f MHz per thread with %d at once (the OS says %.0f MHz, %s). %d cores for %d "
             "threads. No bandwidth theory (DIMMs are not readable without root).",
             why, f32, clock_1t, clock_all, threads, ci->clock_mhz,
             ci->clock_source ? ci->clock_source : "nowhere", ci->cores, threads);
    fm_dealloc(ctx, ci);
    return st;
}
