/* PALEO-style time prediction and roofline placement: per node and phase, compute time on the
 * ceiling that applies and memory time on the device's bandwidth, combined as the roofline
 * bound max() (perfect overlap) and PALEO's sum() (no overlap), plus a launch overhead per
 * kernel. With a calibration (calib_model.c), each node-phase also gets its fitted time. It
 * reads counts, device figures and a calibration only; it runs nothing and fits nothing. */
#include "../core/internal.h"
#include "analysis.h"
#include "calibration_internal.h"

#include <math.h>
#include <string.h>

void fm_predict_opts_init(struct fm_predict_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->precision = FM_PREC_FP32;
    /* Qi, Sparks & Talwalkar, "Paleo" (ICLR 2017), and its scripts (PPP_COMP=0.62,
     * PPP_COMM=0.72): the fraction of a datasheet peak a framework sustains. See
     * docs/roofline.md for why they are kept and how to fit your own. */
    o->ppp_compute = 0.62;
    o->ppp_memory = 0.72;
    o->ppp_comm = 0.72;
    o->launch_overhead_us = 0.0;
}

const char *fm_bound_name(enum fm_bound b)
{
    static const char *const names[] = {[FM_BOUND_ROOFLINE] = "roofline",
                                        [FM_BOUND_PALEO] = "paleo"};
    _Static_assert(sizeof(names) / sizeof(names[0]) == FM_BOUND_COUNT, "bound names");
    return (unsigned)b < FM_BOUND_COUNT ? names[b] : "?";
}

double fm_roofline_attainable(double intensity, double peak, double bandwidth)
{
    double slope = intensity * bandwidth;
    return slope < peak ? slope : peak;
}

enum fm_precision fm_predict_precision(const struct fm_predict_opts *opts, enum fm_class cls)
{
    /* PyTorch >= 1.12 defaults: torch.backends.cudnn.allow_tf32 = True (convolutions on TF32
     * tensor cores) and torch.backends.cuda.matmul.allow_tf32 = False (matmuls in FP32). */
    if (opts->torch_default)
        return cls == FM_CLASS_CONV ? FM_PREC_TF32 : FM_PREC_FP32;
    return opts->precision;
}

/* The ceiling, precision and unit kind of one node's phase. */
static double resolve(const struct fm_predict_opts *opts, enum fm_class cls, enum fm_phase phase,
                      enum fm_precision *prec_out, bool *tensor)
{
    enum fm_precision prec = fm_predict_precision(opts, cls);
    if (phase == FM_PHASE_OPTIMIZER) {
        /* The update is elementwise, on the vector units, and mixed precision keeps fp32
         * master weights: fp32 unless the whole run is fp64. */
        cls = FM_CLASS_ELEMENTWISE;
        prec = prec == FM_PREC_FP64 ? FM_PREC_FP64 : FM_PREC_FP32;
    }
    return fm_device_ceiling(opts->device, cls, prec, prec_out, tensor);
}

double fm_predict_peak(const struct fm_predict_opts *opts, enum fm_class cls,
                       enum fm_phase phase, bool *tensor)
{
    return resolve(opts, cls, phase, NULL, tensor);
}

void fm_phase_time_eval(double flops, double bytes, double peak, double bandwidth,
                        const struct fm_predict_opts *opts, struct fm_phase_time *out)
{
    memset(out, 0, sizeof(*out));
    out->flops = flops;
    out->bytes = bytes;
    out->peak = peak;
    out->precision = opts->precision;
    bool work = flops > 0 || bytes > 0;
    out->t_compute = flops > 0 ? flops / (peak * opts->ppp_compute) : 0.0;
    out->t_memory = bytes > 0 ? bytes / (bandwidth * opts->ppp_memory) : 0.0;
    out->t_launch = work ? opts->launch_overhead_us * 1e-6 : 0.0;
    out->t_roofline = fmax(out->t_compute, out->t_memory) + out->t_launch;
    out->t_paleo = out->t_compute + out->t_memory + out->t_launch;
    out->ridge = bandwidth > 0 ? peak / bandwidth : 0.0;
    out->intensity = bytes > 0 ? flops / bytes : 0.0;
    out->attainable = bytes > 0 ? fm_roofline_attainable(out->intensity, peak, bandwidth) : peak;
    out->memory_bound = bytes > 0 && out->intensity < out->ridge;
}

/* Whether the calibration timed the two gradients of this class and kind as one kernel: a
 * backend that computes them together (oneDNN's normalizations) reports their time under input
 * gradients, and calibrate fits that entry on the work of both; there is then no entry for
 * weight gradients. */
static bool merged_bwd(const struct fm_calibration *cal, enum fm_class cls, const char *kind,
                       bool cold)
{
    double s;
    return fm_calibration_time_at(cal, cls, kind, FM_PHASE_BWD_DATA, 0, 0, cold, &s) &&
           !fm_calibration_time_at(cal, cls, kind, FM_PHASE_BWD_WEIGHT, 0, 0, cold, &s);
}

/* The fitted seconds of one node-phase from the warm or the cold entries: the entry of its
 * class, kind and phase (then of its class and phase); the optimizer's update, an elementwise
 * kernel whatever the layer, also falls back to the elementwise optimizer entry. A merged
 * entry (merged_bwd) times both gradients under the input gradients' phase, and the weight
 * gradients then take no time of their own (unless the node has no input gradients: they
 * then take the time). work: the node's work per phase. False: no entry. */
static bool entry_time(const struct fm_calibration *cal, enum fm_class cls, const char *kind,
                       enum fm_phase phase, const struct fm_work *work,
                       const struct fm_phase_time *t, bool cold, double *s)
{
    double f[2], b[2];
    for (int k = 0; k < 2; k++) {
        const struct fm_work *w = &work[k ? FM_PHASE_BWD_WEIGHT : FM_PHASE_BWD_DATA];
        f[k] = (double)fm_work_flops(w);
        b[k] = (double)w->bytes_read + (double)w->bytes_written;
    }
    if ((phase == FM_PHASE_BWD_DATA || phase == FM_PHASE_BWD_WEIGHT) &&
        (f[1] > 0 || b[1] > 0) && merged_bwd(cal, cls, kind, cold)) {
        *s = 0;
        if (phase == FM_PHASE_BWD_DATA || (f[0] == 0 && b[0] == 0))
            fm_calibration_time_at(cal, cls, kind, FM_PHASE_BWD_DATA, f[0] + f[1], b[0] + b[1],
                                   cold, s);
        return true;
    }
    return fm_calibration_time_at(cal, cls, kind, phase, t->flops, t->bytes, cold, s) ||
           (phase == FM_PHASE_OPTIMIZER &&
            fm_calibration_time_at(cal, FM_CLASS_ELEMENTWISE, "", phase, t->flops, t->bytes,
                                   cold, s));
}

/* The calibrated time of one node-phase that does work: its warm time, moved cold_share of
 * the way to its cold time where the calibration has cold entries. Without a warm entry, the
 * cold PALEO time, and the node-phase is counted as uncalibrated. */
static void calibrate(const struct fm_calibration *cal, enum fm_class cls, const char *kind,
                      enum fm_phase phase, const struct fm_work *work, double cold_share,
                      struct fm_phase_time *t, size_t *uncalibrated)
{
    double s = 0, c = 0;
    bool hit = entry_time(cal, cls, kind, phase, work, t, false, &s);
    if (hit && cold_share > 0 && entry_time(cal, cls, kind, phase, work, t, true, &c))
        s += cold_share * (c - s);
    t->calibrated = hit;
    t->t_calibrated = hit ? s : t->t_paleo;
    if (!hit)
        ++*uncalibrated;
}

/* The share of a phase's data last touched about a step ago, rather than by the layer just
 * before: forward, its output's buffer (its input is the layer before's output); backward,
 * the saved activations and the gradient buffers written (the output gradient is fresh);
 * the optimizer, all of it (weights, gradients, momentum). */
static double stale_share(enum fm_phase ph)
{
    return ph == FM_PHASE_FWD ? 0.5 : ph == FM_PHASE_OPTIMIZER ? 1.0 : 2.0 / 3.0;
}

/* Adds one node-phase into a running total; the total's derived fields are set by finish(). */
static void accumulate(struct fm_phase_time *sum, const struct fm_phase_time *x)
{
    sum->flops += x->flops;
    sum->bytes += x->bytes;
    sum->t_compute += x->t_compute;
    sum->t_memory += x->t_memory;
    sum->t_launch += x->t_launch;
    sum->t_roofline += x->t_roofline;
    sum->t_paleo += x->t_paleo;
    sum->t_calibrated += x->t_calibrated;
}

/* A sum of kernels seen as one point: its ceiling is the work-weighted harmonic mean of the
 * kernels' ceilings, flops / sum(flops_i / peak_i), which is what the compute times add up to. */
static void finish(struct fm_phase_time *sum, double bandwidth, double ppp_compute)
{
    double at_peak = sum->t_compute * ppp_compute;   /* sum(flops_i / peak_i) */
    sum->peak = at_peak > 0 ? sum->flops / at_peak : 0.0;
    sum->intensity = sum->bytes > 0 ? sum->flops / sum->bytes : 0.0;
    sum->ridge = bandwidth > 0 ? sum->peak / bandwidth : 0.0;
    sum->attainable = sum->bytes > 0
                          ? fm_roofline_attainable(sum->intensity, sum->peak, bandwidth)
                          : sum->peak;
    sum->memory_bound = sum->bytes > 0 && sum->intensity < sum->ridge;
}

static enum fm_status check_opts(struct fm_ctx *ctx, const struct fm_predict_opts *o)
{
    if (!o || !o->device)
        return fm_error(ctx, FM_ERR_INVALID, "prediction needs a device (fm_session_opts.device "
                                             "NAME)");
    if (!(o->ppp_compute > 0 && o->ppp_compute <= 1) || !(o->ppp_memory > 0 && o->ppp_memory <= 1))
        return fm_error(ctx, FM_ERR_INVALID,
                        "PPP (platform percent of peak) must be in (0, 1], got compute %g, "
                        "memory %g",
                        o->ppp_compute, o->ppp_memory);
    if (!(o->launch_overhead_us >= 0) || !isfinite(o->launch_overhead_us))
        return fm_error(ctx, FM_ERR_INVALID, "launch overhead must be >= 0 us, got %g",
                        o->launch_overhead_us);
    if (!(o->device->mem_bw > 0))
        return fm_error(ctx, FM_ERR_INVALID,
                        "device %s has no memory bandwidth figure; add mem_bw_bytes_per_s in a "
                        "device file (docs/devices.md)",
                        o->device->name);
    if ((unsigned)o->precision >= FM_PREC_COUNT)
        return fm_error(ctx, FM_ERR_INVALID, "unknown precision %d", (int)o->precision);
    return FM_OK;
}

enum fm_status fm_predict(struct fm_ctx *ctx, const struct fm_graph *graph,
                          const struct fm_counts *counts, const struct fm_predict_opts *opts,
                          struct fm_prediction **out)
{
    *out = NULL;
    enum fm_status st = check_opts(ctx, opts);
    if (st)
        return st;
    if (counts->n_nodes != fm_graph_node_count(graph))
        return fm_error(ctx, FM_ERR_INVALID, "counts (%zu nodes) are not of this graph (%zu)",
                        counts->n_nodes, fm_graph_node_count(graph));
    const struct fm_device *dev = opts->device;
    const struct fm_calibration *cal = opts->calibration;
    struct fm_prediction *p = fm_alloc(ctx, sizeof(*p));
    if (!p)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory for the prediction");
    p->ctx = ctx;
    p->n_nodes = counts->n_nodes;
    p->mode = counts->mode;
    p->opts = *opts;
    p->bandwidth = dev->mem_bw;
    if (p->n_nodes) {
        p->nodes = fm_alloc(ctx, p->n_nodes * sizeof(*p->nodes));
        if (!p->nodes) {
            st = fm_error(ctx, FM_ERR_NOMEM, "out of memory for the prediction");
            goto fail;
        }
    }
    /* per phase: node-phases with work that fell back to the cold rule */
    size_t fallback[FM_PHASE_COUNT] = {0};
    /* the cache: a tensor is used again after about half a step's traffic (a forward
     * activation in the backward pass; weights a step later, the layer's input at once) */
    if (cal && cal->n_evict) {
        double traffic = 0;
        for (size_t id = 0; id < p->n_nodes; id++) {
            for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
                const struct fm_work *w = &counts->nodes[id].phase[ph];
                traffic += (double)w->bytes_read + (double)w->bytes_written;
            }
        }
        p->reuse_bytes = traffic / 2;
        p->evicted = fm_calibration_evicted(cal, p->reuse_bytes);
    }
    for (size_t id = 0; id < p->n_nodes; id++) {
        const struct fm_node *node = fm_graph_node(graph, (fm_nid)id);
        enum fm_class cls = fm_op_class(node->op);
        char kind[FM_CALIB_KIND_MAX] = "";
        if (cal)
            fm_calib_kind(graph, (fm_nid)id, kind);
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            const struct fm_work *w = &counts->nodes[id].phase[ph];
            double flops = (double)fm_work_flops(w);
            double bytes = (double)w->bytes_read + (double)w->bytes_written;
            struct fm_phase_time *t = &p->nodes[id][ph];
            if (flops == 0 && bytes == 0) {
                memset(t, 0, sizeof(*t));
                continue;
            }
            bool tensor = false;
            enum fm_precision prec = FM_PREC_FP32;
            double peak = resolve(opts, cls, (enum fm_phase)ph, &prec, &tensor);
            /* integer MACs (quantized ops) run at the int8 ceiling where the device has one;
             * a device without int8 figures keeps the run's precision */
            if (counts->nodes[id].int8 && ph != FM_PHASE_OPTIMIZER) {
                enum fm_precision p8;
                bool t8;
                double peak8 = fm_device_ceiling(dev, cls, FM_PREC_INT8, &p8, &t8);
                if (peak8 > 0 && p8 == FM_PREC_INT8) {
                    peak = peak8;
                    prec = p8;
                    tensor = t8;
                }
            }
            if (flops > 0 && !(peak > 0)) {
                st = fm_error(ctx, FM_ERR_UNSUPPORTED,
                              "%s has no %s ceiling for %s ops (layer %s); choose another "
                              "fm_session_opts.precision (flopmeter device '%s' lists its peaks)",
                              dev->name, fm_precision_name(prec), fm_class_name(cls), node->name,
                              dev->name);
                goto fail;
            }
            fm_phase_time_eval(flops, bytes, peak, dev->mem_bw, opts, t);
            t->precision = prec;
            t->tensor = tensor;
            if (cal)
                calibrate(cal, cls, kind, (enum fm_phase)ph, counts->nodes[id].phase,
                          p->evicted * stale_share((enum fm_phase)ph), t, &fallback[ph]);
            accumulate(&p->total[ph], t);
            accumulate(&p->step, t);
            p->kernels++;
        }
    }
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
        finish(&p->total[ph], dev->mem_bw, opts->ppp_compute);
        p->total[ph].precision = opts->precision;
    }
    finish(&p->step, dev->mem_bw, opts->ppp_compute);
    p->step.precision = opts->precision;
    if (cal) {
        /* a sum is "calibrated" when every node-phase in it is; the per-step overhead (the
         * framework's work between steps, outside every layer) is a training step's */
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            p->total[ph].calibrated = fallback[ph] == 0;
            p->uncalibrated += fallback[ph];
        }
        p->step.calibrated = p->uncalibrated == 0;
        if (p->mode == FM_MODE_TRAIN)
            p->step.t_calibrated += cal->step_overhead_s;
    }
    p->step_roofline_s = p->step.t_roofline;
    p->step_paleo_s = p->step.t_paleo;
    /* Utilization is quoted against the headline ceiling of the chosen precision: the matrix
     * units' for conv/matmul (what MFU conventionally uses); torch-default: the TF32 ceiling its
     * convolutions run on. */
    p->peak_ref = fm_device_util_peak(dev, opts->precision, opts->torch_default);
    *out = p;
    return FM_OK;
fail:
    fm_prediction_free(p);
    return st;
}

void fm_prediction_free(struct fm_prediction *p)
{
    if (!p)
        return;
    struct fm_ctx *ctx = p->ctx;
    fm_dealloc(ctx, p->nodes);
    fm_dealloc(ctx, p);
}

/* ---- step, epoch, run ---- */

/* The run of a prediction on gpus replicas, each taking batch samples a step in step_s[]. */
static enum fm_status run_estimate(struct fm_ctx *ctx, const struct fm_prediction *p,
                                   const struct fm_counts *counts, int64_t batch, int gpus,
                                   const double *step_s, double step_calibrated_s,
                                   uint64_t dataset_size, double epochs,
                                   struct fm_run_estimate *out)
{
    memset(out, 0, sizeof(*out));
    if (batch <= 0)
        return fm_error(ctx, FM_ERR_INVALID, "batch must be positive, got %lld", (long long)batch);
    if (!(epochs >= 0) || !isfinite(epochs))
        return fm_error(ctx, FM_ERR_INVALID, "epochs must be >= 0, got %g", epochs);
    out->batch = batch;
    out->gpus = gpus;
    out->global_batch = batch * gpus;
    out->dataset_size = dataset_size;
    out->epochs = epochs;
    const struct fm_work *t = counts->total;
    /* forward and backward scale with the samples; the optimizer runs once per step on every
     * replica (each updates its own copy of the weights) */
    double per_batch = (double)fm_work_flops(&t[FM_PHASE_FWD]) +
                       (double)fm_work_flops(&t[FM_PHASE_BWD_DATA]) +
                       (double)fm_work_flops(&t[FM_PHASE_BWD_WEIGHT]);
    double per_step_opt = (double)fm_work_flops(&t[FM_PHASE_OPTIMIZER]);
    out->step_flops = (per_batch + per_step_opt) * gpus;
    if (dataset_size) {
        uint64_t global = (uint64_t)out->global_batch;
        out->steps_per_epoch = (dataset_size + global - 1) / global;
        out->epoch_flops = per_batch / (double)batch * (double)dataset_size +
                           per_step_opt * (double)gpus * (double)out->steps_per_epoch;
        out->total_flops = out->epoch_flops * epochs;
    }
    double peak = p->peak_ref * gpus;
    for (int b = 0; b < FM_BOUND_COUNT; b++) {
        double s = step_s[b];
        out->step_s[b] = s;
        out->samples_per_s[b] = s > 0 ? (double)out->global_batch / s : 0.0;
        out->epoch_s[b] = s * (double)out->steps_per_epoch;
        out->total_s[b] = out->epoch_s[b] * epochs;
        out->utilization[b] = s > 0 && peak > 0 ? out->step_flops / (s * peak) : 0;
    }
    /* the calibrated step, the same way (0 without a calibration) */
    double s = step_calibrated_s;
    out->step_calibrated_s = s;
    out->samples_calibrated_per_s = s > 0 ? (double)out->global_batch / s : 0.0;
    out->epoch_calibrated_s = s * (double)out->steps_per_epoch;
    out->total_calibrated_s = out->epoch_calibrated_s * epochs;
    return FM_OK;
}

enum fm_status fm_predict_run(struct fm_ctx *ctx, const struct fm_prediction *p,
                              const struct fm_counts *counts, int64_t batch,
                              uint64_t dataset_size, double epochs, struct fm_run_estimate *out)
{
    double step[FM_BOUND_COUNT];
    step[FM_BOUND_ROOFLINE] = p->step_roofline_s;
    step[FM_BOUND_PALEO] = p->step_paleo_s;
    double calibrated = p->opts.calibration ? p->step.t_calibrated : 0.0;
    return run_estimate(ctx, p, counts, batch, 1, step, calibrated, dataset_size, epochs, out);
}

enum fm_status fm_predict_run_data_parallel(struct fm_ctx *ctx, const struct fm_prediction *p,
                                            const struct fm_counts *counts, int64_t batch,
                                            const struct fm_dp_estimate *dp,
                                            uint64_t dataset_size, double epochs,
                                            struct fm_run_estimate *out)
{
    if (!dp || dp->gpus < 1)
        return fm_error(ctx, FM_ERR_INVALID, "no data-parallel estimate to run");
    return run_estimate(ctx, p, counts, batch, dp->gpus, dp->step_overlap,
                        dp->step_overlap_calibrated, dataset_size, epochs, out);
}
