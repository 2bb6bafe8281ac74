/* The measurement backend interface (docs/measure.md, "The backend interface, for other
 * backends"; docs/architecture.md, "The layers"): a backend is a struct of function pointers
 * that prepares a graph, runs one step with optional per-node timing, and exposes tensors for
 * correctness checks. The common driver (measure.c) does warm-up, timed steps, statistics
 * and progress, so every backend reports the same way. Backends include their vendor headers
 * in their own files only (src/backend/cpu/, src/backend/cuda/). */
#ifndef FM_BACKEND_H
#define FM_BACKEND_H

#include "flopmeter.h"
#include "../hw/hw.h"   /* device strings (fm_target) and ceilings */

/* What one step measured. ms[] per node is filled only when per-node timing was asked. */
struct fm_step_timing {
    double step_ms;                       /* wall time of the whole step, synchronized */
    double loss;                          /* training: the loss value of this step */
    struct fm_node_timing *nodes;         /* n_nodes entries, or NULL: don't time nodes */
};

struct fm_backend {
    const char *name;                     /* "cpu", "cuda" */
    /* Whether the backend can run node `id` of graph (forward and, in training, backward):
     * FM_OK, or FM_ERR_UNSUPPORTED with a message that says why. The backend answers from its
     * own op table and the checks of its family files; the library asks it in one place,
     * fm_measure_check (measure.c), before anything is prepared. Needs no device: a machine
     * without the GPU can still ask. prepare asks it again, as a guard for its own callers. */
    enum fm_status (*supports)(struct fm_ctx *ctx, const struct fm_graph *graph, fm_nid id);
    /* Sets up everything for graph at opts (device memory, primitives, initial values drawn
     * with fm_init_values(opts->seed)). Must reject unsupported ops before running anything,
     * with FM_ERR_UNSUPPORTED naming the node. On failure *state is NULL. */
    enum fm_status (*prepare)(struct fm_ctx *ctx, const struct fm_graph *graph,
                              const struct fm_measure_opts *opts, void **state);
    /* One step: forward (+ loss + backward + SGD update in training). Synchronous: the work is
     * finished when it returns. */
    enum fm_status (*step)(void *state, struct fm_step_timing *t);
    /* Copies a tensor's current value (grad=false) or gradient (grad=true) to dst as fp32.
     * n must equal the tensor's element count. For tests and cross-backend checks. */
    enum fm_status (*read)(void *state, fm_tid tensor, bool grad, float *dst, uint64_t n);
    /* Overwrites a tensor's value (parameters, inputs) from fp32. Optional (may be NULL). */
    enum fm_status (*write)(void *state, fm_tid tensor, const float *src, uint64_t n);
    /* Device description for reports ("NVIDIA H100 80GB HBM3", CPU model). */
    const char *(*device_name)(void *state);
    /* Threads in use (CPU) or 0. Optional. */
    int (*threads)(void *state);
    /* SM clock in MHz read now (NVML), or 0. Optional. */
    double (*clock_mhz)(void *state);
    /* Whether the timed kernels run with their data flushed from the caches
     * (fm_measure_opts.cold_cache honoured); NULL: never. */
    bool (*cold_cache)(void *state);
    void (*release)(void *state);
};

/* Deterministic starting values shared by every backend, so that backends can be compared
 * element by element: parameters uniform in +-1/sqrt(fan_in) (PyTorch's default init bound),
 * BatchNorm weight 1 / bias 0 / running var 1 / mean 0, float inputs standard normal, integer
 * inputs uniform in [0, classes) (labels) or [0, vocabulary). n must equal the tensor's
 * element count. (init.c) */
enum fm_status fm_init_values(struct fm_ctx *ctx, const struct fm_graph *graph, fm_tid tensor,
                              uint64_t seed, float *dst, uint64_t n);

/* The backends this build has; NULL when absent. */
const struct fm_backend *fm_backend_cpu(void);
const struct fm_backend *fm_backend_cuda(void);
/* Picks by device string: "cpu" -> cpu, "cuda", "cuda:N", "gpu" -> cuda. */
enum fm_status fm_backend_for(struct fm_ctx *ctx, const char *device,
                              const struct fm_backend **out);

/* The GPU probe lives with the CUDA backend; FM_ERR_UNSUPPORTED without one. */
enum fm_status fm_probe_cuda(struct fm_ctx *ctx, const struct fm_probe_opts *opts,
                             struct fm_probe_result *out);

/* The CPU probe (src/backend/probe_cpu.c). */
enum fm_status fm_probe_cpu(struct fm_ctx *ctx, const struct fm_probe_opts *opts,
                            struct fm_probe_result *out);

/* The eviction probe (src/backend/probe_evict.c; docs/calibration.md, "Warm and cold"): a
 * chain of dependent loads through FM_EVICT_CHASE_BYTES in a random order, on the calling
 * thread. fm_evict_probe_new allocates it and traffic_bytes of other traffic (the most any
 * round writes); FM_ERR_UNSUPPORTED where no instruction flushes a cache line. One round
 * times the chain in ns per line: warm (just followed), after each bytes[k] of other traffic
 * written (after_ns[k]), and with its lines flushed from every cache (cold_ns). */
/* 1 MB: within one core's L2 on the machines this runs on, so the chain just followed is
 * read from a cache even where neighbours keep the shared last-level cache busy (a 4 MB chain
 * read again at 125 ns a line, memory's latency, on a shared Zen 4 host whose 1 MB one read
 * at 10-17 ns), and every round has a cached time to measure misses against */
#define FM_EVICT_CHASE_BYTES (1u << 20)
struct fm_evict_probe;
enum fm_status fm_evict_probe_new(struct fm_ctx *ctx, double traffic_bytes,
                                  struct fm_evict_probe **out);
enum fm_status fm_evict_probe_round(struct fm_evict_probe *p, const double *bytes, int n,
                                    double *warm_ns, double *after_ns, double *cold_ns);
void fm_evict_probe_free(struct fm_evict_probe *p);

#endif
