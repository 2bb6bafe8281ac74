/* Utilization from a measured time: FLOPs / (time x peak), by the methods of Epoch AI's study
 * of GPU utilization (Hobbhahn, "Estimating training compute of deep learning models"): the
 * "theory" method takes 3 x the forward FLOPs, the "counted" one the forward and backward work
 * as flopmeter counts it. It judges nothing about the timing itself; the caller says whether
 * the time covers the same work. */
#include "../core/internal.h"
#include "analysis.h"

#include <math.h>
#include <string.h>

const char *fm_util_method_name(enum fm_util_method m)
{
    static const char *const names[] = {
        [FM_UTIL_THEORY] = "theory",
        [FM_UTIL_COUNTED] = "counted",
        [FM_UTIL_COUNTED_OPT] = "counted+optimizer",
    };
    _Static_assert(sizeof(names) / sizeof(names[0]) == FM_UTIL_COUNT, "util method names");
    return (unsigned)m < FM_UTIL_COUNT ? names[m] : "?";
}

enum fm_status fm_utilization(struct fm_ctx *ctx, const struct fm_counts *counts, int64_t batch,
                              double peak, double step_s, double epoch_s, uint64_t dataset_size,
                              struct fm_utilization *out)
{
    memset(out, 0, sizeof(*out));
    if (batch <= 0)
        return fm_error(ctx, FM_ERR_INVALID, "batch must be positive, got %lld", (long long)batch);
    if (!(peak > 0) || !isfinite(peak))
        return fm_error(ctx, FM_ERR_INVALID, "the peak must be a positive FLOP/s figure, got %g",
                        peak);
    if (!(step_s >= 0) || !(epoch_s >= 0) || !isfinite(step_s) || !isfinite(epoch_s))
        return fm_error(ctx, FM_ERR_INVALID, "times must be >= 0 seconds");
    if (step_s == 0 && epoch_s == 0)
        return fm_error(ctx, FM_ERR_INVALID,
                        "give a measured step time (fm_session_opts.step_s) or an epoch time "
                        "(fm_session_opts.epoch_s with fm_session_opts.dataset_size)");
    if (epoch_s > 0 && dataset_size == 0)
        return fm_error(ctx, FM_ERR_INVALID, "an epoch time needs the dataset size (samples)");
    out->peak = peak;
    out->batch = batch;
    out->step_s = step_s;
    out->epoch_s = epoch_s;
    out->dataset_size = dataset_size;

    const struct fm_work *t = counts->total;
    double fwd = (double)fm_work_flops(&t[FM_PHASE_FWD]);
    double bwd = (double)fm_work_flops(&t[FM_PHASE_BWD_DATA]) +
                 (double)fm_work_flops(&t[FM_PHASE_BWD_WEIGHT]);
    double opt = (double)fm_work_flops(&t[FM_PHASE_OPTIMIZER]);
    bool train = counts->mode == FM_MODE_TRAIN;
    /* per batch: the part that scales with samples, and the optimizer's once-per-step part */
    double scaled[FM_UTIL_COUNT] = {
        [FM_UTIL_THEORY] = train ? 3.0 * fwd : fwd,
        [FM_UTIL_COUNTED] = fwd + bwd,
        [FM_UTIL_COUNTED_OPT] = fwd + bwd,
    };
    double per_step[FM_UTIL_COUNT] = {[FM_UTIL_COUNTED_OPT] = opt};
    if (dataset_size)
        out->steps_per_epoch = (dataset_size + (uint64_t)batch - 1) / (uint64_t)batch;
    for (int m = 0; m < FM_UTIL_COUNT; m++) {
        out->step_flops[m] = scaled[m] + per_step[m];
        if (step_s > 0) {
            out->step_util[m] = out->step_flops[m] / (step_s * peak);
            out->impossible |= out->step_util[m] > 1.0;
        }
        if (dataset_size) {
            out->epoch_flops[m] = scaled[m] / (double)batch * (double)dataset_size +
                                  per_step[m] * (double)out->steps_per_epoch;
            if (epoch_s > 0) {
                out->epoch_util[m] = out->epoch_flops[m] / (epoch_s * peak);
                out->impossible |= out->epoch_util[m] > 1.0;
            }
        }
    }
    return FM_OK;
}
