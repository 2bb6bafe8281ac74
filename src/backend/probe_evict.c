/* The eviction probe (docs/calibration.md, "Warm and cold"): how much of a layer's data the
 * caches still hold after other traffic. One core follows a chain of dependent loads through
 * FM_EVICT_CHASE_BYTES in a random order, so that no prefetcher can hide a miss and each load
 * costs the latency of wherever its line is: about 15 ns from the last-level cache, about
 * 100 ns from memory on the machines this was written on, a gap of several times that one
 * timing resolves. A layer's own time (the probe of earlier versions timed a ReLU) moves far
 * less between cache and memory than its timing noise, which made the fraction ill-conditioned:
 * two calibrations back to back on one quiet machine read fully cold from 4 MB, and no
 * difference at all. The chain is 1 MB (backend.h says why). */
#include "../core/internal.h"
#include "backend.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FM_EVICT_CAN_FLUSH 1
#else
#define FM_EVICT_CAN_FLUSH 0
#endif

#define LINE 64

struct fm_evict_probe {
    struct fm_ctx *ctx;
    char *chain;          /* FM_EVICT_CHASE_BYTES: each line holds the address of the next */
    size_t lines;
    float *traffic;       /* the other traffic written between two chases */
    void *chain_mem, *traffic_mem;   /* the allocations the two are aligned within */
    size_t traffic_bytes;
    uintptr_t sink;       /* where the chase ends, so that the loads are not optimised out */
};

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* A fixed xorshift: the same chain on every run, so a calibration is repeatable. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The first line boundary in an allocation of LINE bytes more than is used (NULL stays NULL). */
static void *line_aligned(void *mem)
{
    return mem ? (void *)(((uintptr_t)mem + LINE - 1) / LINE * LINE) : NULL;
}

enum fm_status fm_evict_probe_new(struct fm_ctx *ctx, double traffic_bytes,
                                  struct fm_evict_probe **out)
{
    *out = NULL;
    if (!FM_EVICT_CAN_FLUSH)
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "the eviction probe needs an instruction that "
                                                 "flushes a cache line (x86's clflush)");
    if (!(traffic_bytes >= LINE) || traffic_bytes > 64.0 * 1073741824.0)
        return fm_error(ctx, FM_ERR_INVALID, "the eviction probe: %.3g bytes of other traffic "
                                             "(64 B to 64 GiB)", traffic_bytes);
    struct fm_evict_probe *p = fm_alloc(ctx, sizeof(*p));
    if (!p)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory for the eviction probe");
    memset(p, 0, sizeof(*p));
    p->ctx = ctx;
    p->lines = FM_EVICT_CHASE_BYTES / LINE;
    p->traffic_bytes = (size_t)traffic_bytes / LINE * LINE;
    p->chain_mem = fm_alloc(ctx, FM_EVICT_CHASE_BYTES + LINE);
    p->traffic_mem = fm_alloc(ctx, p->traffic_bytes + LINE);
    p->chain = line_aligned(p->chain_mem);
    p->traffic = line_aligned(p->traffic_mem);
    size_t *order = fm_alloc(ctx, p->lines * sizeof(*order));
    if (!p->chain || !p->traffic || !order) {
        fm_dealloc(ctx, order);
        fm_evict_probe_free(p);
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory for the eviction probe (%.0f MB of "
                                           "other traffic)", traffic_bytes / 1048576.0);
    }
    /* one cycle through every line (Sattolo's shuffle), so the chase visits each once */
    uint64_t seed = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < p->lines; i++)
        order[i] = i;
    for (size_t i = p->lines - 1; i > 0; i--) {
        size_t j = (size_t)(next_random(&seed) % i), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (size_t i = 0; i < p->lines; i++)
        *(char **)(p->chain + order[i] * LINE) = p->chain + order[(i + 1) % p->lines] * LINE;
    fm_dealloc(ctx, order);
    memset(p->traffic, 0, p->traffic_bytes);   /* the pages mapped before anything is timed */
    *out = p;
    return FM_OK;
}

void fm_evict_probe_free(struct fm_evict_probe *p)
{
    if (!p)
        return;
    fm_dealloc(p->ctx, p->chain_mem);
    fm_dealloc(p->ctx, p->traffic_mem);
    fm_dealloc(p->ctx, p);
}

/* Follows the chain once; ns per line. */
static double chase(struct fm_evict_probe *p)
{
    char *at = p->chain;
    double a = now_ns();
    for (size_t i = 0; i < p->lines; i++)
        at = *(char *volatile *)at;
    double b = now_ns();
    p->sink += (uintptr_t)at;
    return (b - a) / (double)p->lines;
}

/* One write to every line of the first `bytes` of the traffic buffer. */
static void write_traffic(struct fm_evict_probe *p, double bytes)
{
    size_t n = (size_t)bytes / sizeof(float);
    if (n > p->traffic_bytes / sizeof(float))
        n = p->traffic_bytes / sizeof(float);
    volatile float *f = p->traffic;
    for (size_t k = 0; k < n; k += LINE / sizeof(float))
        f[k] += 1.0f;
}

static void flush_chain(struct fm_evict_probe *p)
{
#if FM_EVICT_CAN_FLUSH
    for (size_t o = 0; o < p->lines * LINE; o += LINE)
        _mm_clflush(p->chain + o);
    _mm_mfence();
#else
    (void)p;
#endif
}

enum fm_status fm_evict_probe_round(struct fm_evict_probe *p, const double *bytes, int n,
                                    double *warm_ns, double *after_ns, double *cold_ns)
{
    for (int k = 0; k < n; k++) {
        if (!(bytes[k] >= 0) || bytes[k] > (double)p->traffic_bytes)
            return fm_error(p->ctx, FM_ERR_INVALID, "the eviction probe: %.3g bytes of other "
                                                    "traffic asked, %zu allocated",
                            bytes[k], p->traffic_bytes);
    }
    /* each setting starts from the chain just followed, so it is in the caches */
    chase(p);
    *warm_ns = chase(p);
    for (int k = 0; k < n; k++) {
        chase(p);
        write_traffic(p, bytes[k]);
        after_ns[k] = chase(p);
    }
    chase(p);
    flush_chain(p);
    *cold_ns = chase(p);
    return FM_OK;
}
