/* Data parallelism: the ring all-reduce of the gradients after (or during) the backward pass,
 * on top of a single-device prediction. Weak scaling only (each device keeps its batch); no
 * model or pipeline parallelism, no latency term per message (large gradients are
 * bandwidth-bound), no compression. */
#include "../core/internal.h"
#include "analysis.h"
#include "calibration_internal.h"
#include "plan.h"

#include <math.h>
#include <string.h>

/* Ring all-reduce (Patarasuk & Yuan 2009; NCCL's "bus bandwidth", the plan's collective model
 * in plan_comm.c without its latency term): every device sends and receives 2 (N-1)/N x S
 * bytes. Send and receive run at once over the two directions of the link, so the time is that
 * volume over one direction: half the bidirectional figure that datasheets print. PPP scales it
 * like PALEO's ppp_comm. */
double fm_ring_allreduce_s(double bytes, int gpus, double link_bw_bidir, double ppp_comm)
{
    return fm_coll_time(FM_COLL_ALLREDUCE, bytes, gpus, link_bw_bidir / 2.0 * ppp_comm, 0.0);
}

/* A node-phase's time by one bound, or (b = CALIBRATED) its calibrated time. */
enum { CALIBRATED = FM_BOUND_COUNT };

static double bound_time(const struct fm_phase_time *t, int b)
{
    return b == CALIBRATED ? t->t_calibrated : b == FM_BOUND_ROOFLINE ? t->t_roofline : t->t_paleo;
}

/* Overlap, as DDP does it: backward runs the nodes in reverse order; a node's gradients can be
 * reduced once its backward is done; the link reduces one piece at a time, in the order they
 * become ready. Returns when both backward and the last reduction are done, from the start of
 * backward. */
static double backward_with_reduction(const struct fm_counts *counts, const fm_nid *order,
                                      const struct fm_prediction *p, int b, int gpus,
                                      double link_bw, double ppp_comm, double per_param)
{
    double t = 0.0, link_free = 0.0;
    for (size_t i = counts->n_nodes; i-- > 0;) {
        fm_nid id = order[i];
        t += bound_time(&p->nodes[id][FM_PHASE_BWD_DATA], b) +
             bound_time(&p->nodes[id][FM_PHASE_BWD_WEIGHT], b);
        double piece = (double)counts->nodes[id].trainable_params * per_param;
        if (piece > 0 && gpus > 1) {
            double start = link_free > t ? link_free : t;
            link_free = start + fm_ring_allreduce_s(piece, gpus, link_bw, ppp_comm);
        }
    }
    return t > link_free ? t : link_free;
}

enum fm_status fm_predict_data_parallel(struct fm_ctx *ctx, const struct fm_graph *graph,
                                        const struct fm_counts *counts,
                                        const struct fm_prediction *p, int64_t batch, int gpus,
                                        double link_bw, double ppp_comm,
                                        struct fm_dp_estimate *out)
{
    memset(out, 0, sizeof(*out));
    if (counts->mode != FM_MODE_TRAIN)
        return fm_error(ctx, FM_ERR_INVALID,
                        "data parallelism models training (gradients to all-reduce); drop "
                        "FM_MODE_INFER");
    if (gpus < 1)
        return fm_error(ctx, FM_ERR_INVALID, "fm_session_opts.gpus must be at least 1, got %d",
                                             gpus);
    if (gpus > 1 && !(link_bw > 0))
        return fm_error(ctx, FM_ERR_INVALID,
                        "no interconnect bandwidth for %d GPUs: the device lists none; give "
                        "fm_session_opts.interconnect (nvlink3, pcie4 ...)",
                        gpus);
    if (!(ppp_comm > 0 && ppp_comm <= 1))
        return fm_error(ctx, FM_ERR_INVALID, "communication PPP must be in (0, 1], got %g",
                        ppp_comm);
    out->gpus = gpus;
    out->link_bw = link_bw;
    out->grad_bytes = (double)counts->grad_bytes;
    out->t_allreduce = fm_ring_allreduce_s(out->grad_bytes, gpus, link_bw, ppp_comm);
    /* bytes of gradient per trainable parameter element (the storage dtype) */
    double per_param = counts->trainable_params
                           ? (double)counts->grad_bytes / (double)counts->trainable_params
                           : 0.0;
    const fm_nid *order = fm_graph_topo_order(graph);
    for (int b = 0; b < FM_BOUND_COUNT; b++) {
        double fwd = bound_time(&p->total[FM_PHASE_FWD], b);
        double bwd = bound_time(&p->total[FM_PHASE_BWD_DATA], b) +
                     bound_time(&p->total[FM_PHASE_BWD_WEIGHT], b);
        double opt = bound_time(&p->total[FM_PHASE_OPTIMIZER], b);
        out->step_1[b] = fwd + bwd + opt;
        out->step_serial[b] = out->step_1[b] + out->t_allreduce;
        /* the step: forward, backward overlapped with the reductions, then the optimizer */
        double bwd_end =
            backward_with_reduction(counts, order, p, b, gpus, link_bw, ppp_comm, per_param);
        out->step_overlap[b] = fwd + bwd_end + opt;
        out->efficiency_serial[b] = out->step_1[b] / out->step_serial[b];
        out->efficiency_overlap[b] = out->step_1[b] / out->step_overlap[b];
        out->samples_per_s_serial[b] = (double)gpus * (double)batch / out->step_serial[b];
        out->samples_per_s_overlap[b] = (double)gpus * (double)batch / out->step_overlap[b];
    }
    if (p->opts.calibration) {
        /* the same overlapped step from the calibrated times, plus the per-step overhead that
         * p->step.t_calibrated holds beyond its phases */
        double fwd = p->total[FM_PHASE_FWD].t_calibrated;
        double opt = p->total[FM_PHASE_OPTIMIZER].t_calibrated;
        double bwd_end = backward_with_reduction(counts, order, p, CALIBRATED, gpus, link_bw,
                                                 ppp_comm, per_param);
        out->step_overlap_calibrated =
            fwd + bwd_end + opt + p->opts.calibration->step_overhead_s;
    }
    return FM_OK;
}
