/* Internal functions of the analysis layer that tests reach (not part of flopmeter.h). */
#ifndef FM_ANALYSIS_H
#define FM_ANALYSIS_H

#include "flopmeter.h"

/* calib_sweep.c: out[k] is round 0's sample k with the median of its seconds over the rounds
 * (v[r][..n[r]) with keys[r], the same key naming the same shape, node and phase in every
 * round; a round without it is left out of its median). Returns how many samples' rounds
 * disagree by more than 2x (slowest over fastest). */
size_t fm_calib_median_rounds(const struct fm_calib_sample *const *v, const uint64_t *const *keys,
                              const size_t *n, int rounds, struct fm_calib_sample *out);

/* calib_sweep.c: v[0..n) (n <= FM_CALIB_EVICT_MAX) replaced by its least-squares non-decreasing
 * fit (pool adjacent violators): the eviction curve from its noisy per-size medians. */
void fm_calib_monotone_fit(double *v, int n);

/* calib_file.c: the inverse lookups of fm_class_name and fm_phase_name. */
bool fm_calib_class_parse(const char *s, enum fm_class *out);
bool fm_calib_phase_parse(const char *s, enum fm_phase *out);

#endif
