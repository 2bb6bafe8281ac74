/* Internal to the library: the analysis layer's functions and records that src/report and the
 * tests reach and a program linking the library does not (not part of flopmeter.h). */
#ifndef FM_ANALYSIS_H
#define FM_ANALYSIS_H

#include "flopmeter.h"
#include "../hw/hw.h"   /* what the analyses ask of devices and ceilings */

/* calib_sweep.c: out[k] is round 0's sample k with the median of its seconds over the rounds
 * (v[r][..n[r]) with keys[r], the same key naming the same shape, node and phase in every
 * round; a round without it is left out of its median). Returns how many samples' rounds
 * disagree by more than 2x (slowest over fastest). */
size_t fm_calib_median_rounds(const struct fm_calib_sample *const *v, const uint64_t *const *keys,
                              const size_t *n, int rounds, struct fm_calib_sample *out);

/* calib_sweep.c: v[0..n) (n <= FM_CALIB_EVICT_MAX) replaced by its least-squares non-decreasing
 * fit (pool adjacent violators): the eviction curve from its noisy per-size medians. */
void fm_calib_monotone_fit(double *v, int n);

/* calib_sweep.c: the eviction curve from `rounds` rounds of the eviction probe (ns a line:
 * warm[r], after[r * n + k] after the k-th amount of other traffic, cold[r] flushed). A line
 * in the caches costs *hit_ns, the fastest warm chase of any round (nothing else evicting);
 * one in memory *miss_ns, the median flushed chase. Each round's fraction of lines missed
 * after amount k is (after - hit) / (miss - hit), clamped to [0, 1]; frac[k] is the median
 * over the rounds, made non-decreasing in k (fm_calib_monotone_fit). false (frac untouched)
 * where memory is not twice as slow as the caches: nothing to tell apart, no curve. n at
 * most FM_CALIB_EVICT_MAX, rounds at most 16. */
bool fm_calib_evict_curve(const double *warm, const double *after, const double *cold,
                          int rounds, int n, double *frac, double *hit_ns, double *miss_ns);

/* calib_file.c: the inverse lookups of fm_class_name and fm_phase_name. */
bool fm_calib_class_parse(const char *s, enum fm_class *out);
bool fm_calib_phase_parse(const char *s, enum fm_phase *out);

/* measured.c: the points of a profile (the body of flopmeter.h's struct fm_measured). */
/* One measured point: work over measured time. */
struct fm_measured_point {
    char label[160];             /* "conv1 fwd", "the step (PyTorch profiler, median of 3)" */
    double flops;                /* the counters' FLOPs (ncu), or flopmeter's count (a trace) */
    double bytes;                /* DRAM bytes (ncu), or flopmeter's counted bytes (a trace) */
    double time_s;               /* measured seconds */
    bool whole;                  /* the whole step or file, not one layer or op class */
};

struct fm_measured {
    struct fm_ctx *ctx;
    char source[64];             /* "Nsight Compute", "PyTorch profiler" */
    char how[512];               /* what the points are and what was left out, in words */
    size_t n;
    struct fm_measured_point *points;
};


/* ---- the analyses the session runs (flopmeter.h has their results' structs) ---- */

/* The precision a node's phase runs at under opts: the optimizer phase never uses tensor
 * cores; torch_default gives tf32 to convolutions and fp32 to everything else. */
enum fm_precision fm_predict_precision(const struct fm_predict_opts *opts,
                                       enum fm_class cls);

/* The ceiling of a node's phase: fm_device_peak of its class (optimizer: elementwise). */
double fm_predict_peak(const struct fm_predict_opts *opts, enum fm_class cls,
                       enum fm_phase phase, bool *tensor);

/* The roofline: attainable FLOP/s = min(peak, intensity x bandwidth) (Williams et al. 2009). */
double fm_roofline_attainable(double intensity, double peak, double bandwidth);

/* One kernel of flops and bytes on a ceiling: fills every field of out from the formulas
 * t_compute = flops / (peak x ppp_compute), t_memory = bytes / (bandwidth x ppp_memory),
 * t_roofline = max + launch, t_paleo = sum + launch (launch only when the kernel does work). */
void fm_phase_time_eval(double flops, double bytes, double peak, double bandwidth,
                        const struct fm_predict_opts *opts, struct fm_phase_time *out);

/* One GPU: the step is the prediction's. */
enum fm_status fm_predict_run(struct fm_ctx *ctx, const struct fm_prediction *p,
                              const struct fm_counts *counts, int64_t batch,
                              uint64_t dataset_size, double epochs,
                              struct fm_run_estimate *out);

/* dp->gpus GPUs of batch samples each: the step is the data-parallel one with the all-reduce
 * overlapped with backward (dp->step_overlap), a step takes batch x gpus samples. */
enum fm_status fm_predict_run_data_parallel(struct fm_ctx *ctx,
                                            const struct fm_prediction *p,
                                            const struct fm_counts *counts, int64_t batch,
                                            const struct fm_dp_estimate *dp,
                                            uint64_t dataset_size, double epochs,
                                            struct fm_run_estimate *out);

/* step_s and/or epoch_s (with dataset_size) must be given (> 0). */
enum fm_status fm_utilization(struct fm_ctx *ctx, const struct fm_counts *counts,
                              int64_t batch, double peak, double step_s, double epoch_s,
                              uint64_t dataset_size, struct fm_utilization *out);

/* Data parallelism: ring all-reduce of the gradients over gpus devices. Each device sends and
 * receives 2 (N-1)/N of the gradient bytes over one direction of its link (half the listed
 * bidirectional bandwidth), at ppp_comm of it (Patarasuk & Yuan 2009; NCCL's "bus bandwidth").
 * Returns seconds; 0 for one GPU. */
double fm_ring_allreduce_s(double bytes, int gpus, double link_bw_bidir, double ppp_comm);

/* Weak scaling: every GPU keeps the batch of the prediction. Training counts only. */
enum fm_status fm_predict_data_parallel(struct fm_ctx *ctx, const struct fm_graph *graph,
                                        const struct fm_counts *counts,
                                        const struct fm_prediction *p, int64_t batch,
                                        int gpus, double link_bw, double ppp_comm,
                                        struct fm_dp_estimate *out);

/* ---- Where a measured step's time goes (src/analysis/breakdown.c) ----
 * Against the ideal step (every FLOP at the peak), each timed layer phase splits exactly into
 * its ideal time, the memory-bound part (bytes / bandwidth beyond FLOPs / peak), the per-kernel
 * overhead a calibration fitted (0 without one) and the rest, below the ceilings; the step's
 * time beyond its layers is the per-step overhead. By op class and for the layers that lose
 * the most. */
enum { FM_LOSS_IDEAL = 0, FM_LOSS_MEMORY, FM_LOSS_OVERHEAD, FM_LOSS_BELOW, FM_LOSS_PARTS };
#define FM_LOSS_TOP 5
struct fm_time_loss {
    double peak, bandwidth;        /* the ceilings it is measured against */
    double step_s, layers_s;       /* the measured step; the sum of its timed layer phases */
    double parts[FM_LOSS_PARTS];   /* seconds, summed over layer phases (sum = layers_s) */
    double step_overhead_s;        /* step_s - layers_s (not below 0) */
    double by_class[FM_CLASS_COUNT][FM_LOSS_PARTS];
    double class_time_s[FM_CLASS_COUNT];
    struct {
        fm_nid node;
        double lost_s;             /* memory + overhead + below-peak time of the layer */
    } top[FM_LOSS_TOP];
    int n_top;
};
enum fm_status fm_time_loss(struct fm_ctx *ctx, const struct fm_graph *graph,
                            const struct fm_counts *counts,
                            const struct fm_measurement *m, double peak, double bandwidth,
                            const struct fm_calibration *cal, struct fm_time_loss *out);

#endif
