/* The calibration's body and the functions the library's own files use (src/analysis fits,
 * reads and applies it; src/report renders it). Programs outside the library see an opaque
 * struct fm_calibration and read it through fm_calibration_info; nothing here is public API. */
#ifndef FM_CALIBRATION_INTERNAL_H
#define FM_CALIBRATION_INTERNAL_H

#include "flopmeter.h"

/* The file format's version (docs/calibration.md). */
#define FM_CALIB_VERSION 2
/* Points of a calibration's eviction curve (fm_calibration.evict_*) at most. */
#define FM_CALIB_EVICT_MAX 16

/* An op's own kind ("LayerNorm") is fitted from at least this many samples; with fewer, its
 * samples count for its class only. The convolutions' four kinds have no minimum. */
#define FM_CALIB_MIN_OP_POINTS 4

struct fm_calibration {
    struct fm_ctx *ctx;
    int version;                   /* FM_CALIB_VERSION */
    char device[128];              /* the device as measure names it ("AMD EPYC 9R14") */
    char backend[16];              /* "cpu" or "cuda" */
    int threads;                   /* CPU threads; 0 on a GPU */
    enum fm_precision precision;
    char date[32];                 /* when it was made, ISO 8601 UTC */
    double peak, bandwidth;        /* the device's probed FLOP/s and bytes/s */
    double step_overhead_s;        /* per training step, outside every layer */
    int rounds;                    /* the sweep's rounds (calibrate --rounds); 0: not recorded */
    char left_out[FM_CALIB_LIST_MAX];   /* the families calibrate --leave-out dropped ("" none) */
    size_t n;
    struct fm_calib_entry *entries;
    char source[512];              /* the file it was loaded from, for messages ("" when fitted) */
    /* Version 2, the eviction curve: after evict_bytes[i] bytes of other traffic, a layer's
     * data is evict_frac[i] of the way from warm to cold (0: as fast as in cache, 1: as slow
     * as flushed), measured by calibrate; n_evict 0: none (no cold blending). Increasing in
     * bytes, fractions in [0, 1] and non-decreasing. */
    size_t n_evict;
    double evict_bytes[FM_CALIB_EVICT_MAX], evict_frac[FM_CALIB_EVICT_MAX];
};

/* Fits one entry per (class, kind, phase) present in samples (at least one sample each; with
 * fewer than 3, only the terms the samples can tell apart). meta gives the header fields
 * (device, backend, threads, precision, date, peak, bandwidth, step_overhead_s). */
enum fm_status fm_calibration_fit(struct fm_ctx *ctx, const struct fm_calib_sample *samples,
                                  size_t n, const struct fm_calibration *meta,
                                  struct fm_calibration **out);

/* The kind of node in graph ("depthwise" ...; "" for classes that are not split). */
void fm_calib_kind(const struct fm_graph *graph, fm_nid node, char kind[FM_CALIB_KIND_MAX]);

/* The fitted seconds of one node-phase that does work: the entry of (cls, kind, phase), else
 * of (cls, "", phase); false when neither exists. */
bool fm_calibration_time(const struct fm_calibration *c, enum fm_class cls, const char *kind,
                         enum fm_phase phase, double flops, double bytes, double *seconds);

/* The same from the warm (cold false) or the cold-cache entries: with cold, false when the
 * calibration has no cold entry for the node-phase (rules as above). */
bool fm_calibration_time_at(const struct fm_calibration *c, enum fm_class cls, const char *kind,
                            enum fm_phase phase, double flops, double bytes, bool cold,
                            double *seconds);

/* The share of the way from warm to cold a layer's time goes when its data was last touched
 * reuse_bytes of other traffic ago: c's eviction curve, interpolated linearly in
 * log(bytes) between its points (0 below the first, the last fraction beyond the last);
 * 0 without a curve. */
double fm_calibration_evicted(const struct fm_calibration *c, double reuse_bytes);

/* Whether c was made where it is used: a different device, backend, thread count or precision
 * is FM_ERR_INVALID naming the field and both values, unless force (then a warning through
 * fm_log and FM_OK). Threads are compared only for the "cpu" backend. */
enum fm_status fm_calibration_check(struct fm_ctx *ctx, const struct fm_calibration *c,
                                    const char *device, const char *backend, int threads,
                                    enum fm_precision precision, bool force);
/* The same check for a caller whose options name the override otherwise (force_field, as the
 * message names it: "fm_plan_opts.force_calibration"); fm_calibration_check names the
 * session's. */
enum fm_status fm_calibration_check_as(struct fm_ctx *ctx, const struct fm_calibration *c,
                                       const char *device, const char *backend, int threads,
                                       enum fm_precision precision, bool force,
                                       const char *force_field);

#endif
