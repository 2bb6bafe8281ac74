/* Why a measured step is slow: where its time goes against the ideal step, every FLOP at the
 * peak. For each timed layer phase (t measured, F FLOPs, B bytes):
 *
 *   ideal      F / peak                            its share of the ideal step
 *   memory     max(0, B / bandwidth - F / peak)    the roofline's own price: a layer whose
 *                                                  bytes take longer than its FLOPs cannot
 *                                                  reach the peak on any implementation
 *   overhead   min(fixed_s, what is left)          the per-kernel cost a calibration fitted for
 *                                                  the layer's class and phase (0 without one)
 *   below      the rest of t                       compute (or bandwidth) below the ceilings
 *
 * so ideal + memory + overhead + below = t exactly, and the step's time beyond its layers is
 * the per-step overhead. A phase faster than its own roofline (a measured time below the
 * ideal: caches, or a count above what runs) is all ideal, and the difference is reported as
 * negative below-peak time, never hidden. */
#include "../core/internal.h"
#include "analysis.h"
#include "calibration_internal.h"

#include <math.h>
#include <string.h>

static void add_parts(double *dst, const double *src)
{
    for (int k = 0; k < FM_LOSS_PARTS; k++)
        dst[k] += src[k];
}

static void keep_top(struct fm_time_loss *out, fm_nid id, double lost)
{
    int n = out->n_top;
    if (n == FM_LOSS_TOP && !(lost > out->top[n - 1].lost_s))
        return;
    int i = n < FM_LOSS_TOP ? n : n - 1;
    while (i > 0 && out->top[i - 1].lost_s < lost) {
        out->top[i] = out->top[i - 1];
        i--;
    }
    out->top[i].node = id;
    out->top[i].lost_s = lost;
    if (n < FM_LOSS_TOP)
        out->n_top++;
}

enum fm_status fm_time_loss(struct fm_ctx *ctx, const struct fm_graph *g,
                            const struct fm_counts *c, const struct fm_measurement *m,
                            double peak, double bandwidth, const struct fm_calibration *cal,
                            struct fm_time_loss *out)
{
    if (!m || !m->nodes)
        return fm_error(ctx, FM_ERR_INVALID, "where the time goes needs per-layer timing (measure "
                        "with fm_measure_opts.per_layer)");
    if (!(peak > 0) || !(bandwidth > 0))
        return fm_error(ctx, FM_ERR_INVALID, "where the time goes needs the device's peak and "
                        "bandwidth (a probe, or fm_session_opts.spec DEVICE)");
    memset(out, 0, sizeof(*out));
    out->peak = peak;
    out->bandwidth = bandwidth;
    out->step_s = m->step_ms_median * 1e-3;
    double layers_s = 0;
    for (size_t id = 0; id < m->n_nodes && id < c->n_nodes; id++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)id);
        enum fm_class cls = fm_op_class(n->op);
        char kind[FM_CALIB_KIND_MAX];
        fm_calib_kind(g, (fm_nid)id, kind);
        double node_parts[FM_LOSS_PARTS] = {0};
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            double t = m->nodes[id].ms[ph] * 1e-3;
            const struct fm_work *w = &c->nodes[id].phase[ph];
            double flops = (double)fm_work_flops(w);
            double bytes = (double)(w->bytes_read + w->bytes_written);
            if (ph == FM_PHASE_BWD_DATA && !m->nodes[id].bwd_split) {
                const struct fm_work *w2 = &c->nodes[id].phase[FM_PHASE_BWD_WEIGHT];
                flops += (double)fm_work_flops(w2);
                bytes += (double)(w2->bytes_read + w2->bytes_written);
            } else if (ph == FM_PHASE_BWD_WEIGHT && !m->nodes[id].bwd_split) {
                continue;
            }
            if (!(t > 0))
                continue;
            layers_s += t;
            double p[FM_LOSS_PARTS] = {0};
            double at_peak = flops / peak, at_bw = bytes / bandwidth;
            p[FM_LOSS_IDEAL] = fmin(at_peak, t);
            p[FM_LOSS_MEMORY] = fmax(0.0, fmin(at_bw, t) - p[FM_LOSS_IDEAL]);
            double left = t - p[FM_LOSS_IDEAL] - p[FM_LOSS_MEMORY];
            double fixed = 0;
            enum fm_phase cph = (enum fm_phase)ph;
            if (cal && fm_calibration_time(cal, cls, kind, cph, 0, 0, &fixed))
                p[FM_LOSS_OVERHEAD] = fmax(0.0, fmin(fixed, left));
            p[FM_LOSS_BELOW] = left - p[FM_LOSS_OVERHEAD];
            if (at_peak > t)   /* faster than its roofline: say so as negative time */
                p[FM_LOSS_BELOW] = t - at_peak;
            add_parts(node_parts, p);
            add_parts(out->by_class[cls], p);
            out->class_time_s[cls] += t;
        }
        add_parts(out->parts, node_parts);
        keep_top(out, (fm_nid)id, node_parts[FM_LOSS_MEMORY] + node_parts[FM_LOSS_OVERHEAD] +
                                      fmax(0.0, node_parts[FM_LOSS_BELOW]));
    }
    out->layers_s = layers_s;
    out->step_overhead_s = fmax(0.0, out->step_s - layers_s);
    return FM_OK;
}
