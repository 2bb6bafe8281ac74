/* Utilization of a PyTorch profiler trace's step by the methods of Epoch AI's utilization study
 * (Hobbhahn 2022): the counting method divides flopmeter's count of the training step by the
 * trace's median step time and the peak (through fm_utilization, the rule every command uses);
 * the profiler method divides the FLOPs the profiler itself computes. It times nothing and
 * trusts the trace; the session resolved the model, its count and the peak. */
#include "../core/internal.h"
#include "analysis.h"
#include "../frontend/profile/profile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The median of the steps' profiler FLOPs: the same statistic as the step time it is divided
 * by (the mean of the middle two for an even count). */
static enum fm_status median_flops(struct fm_ctx *ctx, const struct fm_trace *t, double *out)
{
    size_t n = t->n_steps;
    double *v = fm_alloc(ctx, (n ? n : 1) * sizeof(*v));
    if (!v)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        v[i] = (double)t->steps[i].profiler_flops;
    double lo, hi;
    fm_stats_summary(v, n, &lo, out, &hi);
    fm_dealloc(ctx, v);
    return FM_OK;
}

/* Whether the model's floating-point input of the trace input's rank has other dimensions past
 * the batch than the trace's first input (the image size a trace of a CNN shows first); *model
 * gets that input's shape. Integer inputs (token ids, labels) are not compared: the first op of
 * a language model reads embeddings, not its ids. */
static bool input_differs(const struct fm_graph *g, const struct fm_shape *in,
                          struct fm_shape *model)
{
    for (size_t i = 0; g && in->rank >= 2 && i < fm_graph_tensor_count(g); i++) {
        const struct fm_tensor *x = fm_graph_tensor(g, (fm_tid)i);
        if (x->role != FM_ROLE_INPUT || !fm_dtype_is_float(x->dtype) || !x->shape_known ||
            x->shape.rank != in->rank)
            continue;
        *model = x->shape;
        for (int d = 1; d < in->rank; d++) {
            if (x->shape.dims[d] != in->dims[d])
                return true;
        }
        return false;
    }
    return false;
}

enum fm_status fm_trace_utilization(struct fm_ctx *ctx, const struct fm_trace *t,
                                    const struct fm_graph *graph, const struct fm_counts *counts,
                                    int64_t batch, double peak, struct fm_trace_util *out)
{
    memset(out, 0, sizeof(*out));
    if (!t || !counts)
        return fm_error(ctx, FM_ERR_INVALID, "a trace and a count are needed");
    if (counts->mode != FM_MODE_TRAIN)
        return fm_error(ctx, FM_ERR_INVALID, "a trace of training steps is compared with a "
                        "training count: drop FM_MODE_INFER");
    if (!(t->step_s > 0))
        return fm_error(ctx, FM_ERR_INVALID, "%s: the steps take no time (median %g s): nothing "
                        "to divide by", t->origin, t->step_s);
    if (!(peak >= 0) || !isfinite(peak))
        return fm_error(ctx, FM_ERR_INVALID, "the peak must be a positive FLOP/s figure (or 0: "
                        "none), got %g", peak);
    enum fm_status st;
    if (peak > 0) {
        if ((st = fm_utilization(ctx, counts, batch, peak, t->step_s, 0, 0, &out->util)))
            return st;
    } else {
        /* no device and no peak: the FLOPs of the step still are what they are; every
         * utilization is unknown (NaN) rather than refused */
        if (batch <= 0)
            return fm_error(ctx, FM_ERR_INVALID, "batch must be positive, got %lld",
                            (long long)batch);
        const struct fm_work *tw = counts->total;
        double fwd = (double)fm_work_flops(&tw[FM_PHASE_FWD]);
        double bwd = (double)fm_work_flops(&tw[FM_PHASE_BWD_DATA]) +
                     (double)fm_work_flops(&tw[FM_PHASE_BWD_WEIGHT]);
        out->util.batch = batch;
        out->util.step_s = t->step_s;
        out->util.step_flops[FM_UTIL_THEORY] = 3.0 * fwd;
        out->util.step_flops[FM_UTIL_COUNTED] = fwd + bwd;
        out->util.step_flops[FM_UTIL_COUNTED_OPT] =
            fwd + bwd + (double)fm_work_flops(&tw[FM_PHASE_OPTIMIZER]);
        for (int m = 0; m < FM_UTIL_COUNT; m++)
            out->util.step_util[m] = NAN;
    }
    out->peak = peak;
    out->batch = batch;
    out->step_s = t->step_s;
    const struct fm_work *w = counts->total;
    bool ovf = false;
    out->counted_by_phase[FM_TRACE_FWD] = fm_work_flops(&w[FM_PHASE_FWD]);
    out->counted_by_phase[FM_TRACE_BWD] = fm_cadd(&ovf, fm_work_flops(&w[FM_PHASE_BWD_DATA]),
                                                  fm_work_flops(&w[FM_PHASE_BWD_WEIGHT]));
    out->counted_by_phase[FM_TRACE_OPT] = fm_work_flops(&w[FM_PHASE_OPTIMIZER]);
    for (int p = 0; p < FM_TRACE_PHASE_COUNT; p++)
        out->counted_flops = fm_cadd(&ovf, out->counted_flops, out->counted_by_phase[p]);
    if (ovf)
        return fm_error(ctx, FM_ERR_OVERFLOW, "the step's FLOPs do not fit in 64 bits");
    out->counted_util = peak > 0 ? (double)out->counted_flops / t->step_s / peak : NAN;
    out->profiler_available = t->has_flops;
    if (t->has_flops) {
        if ((st = median_flops(ctx, t, &out->profiler_flops)))
            return st;
        out->profiler_util = peak > 0 ? out->profiler_flops / t->step_s / peak : NAN;
        out->profiler_share = out->counted_flops ? out->profiler_flops /
                                                       (double)out->counted_flops
                                                 : 0;
    }
    if (t->input.rank >= 2) {
        out->trace_batch = t->input.dims[0];
        out->batch_mismatch = out->trace_batch != batch;
        out->input_mismatch = input_differs(graph, &t->input, &out->model_input);
    }
    return FM_OK;
}
