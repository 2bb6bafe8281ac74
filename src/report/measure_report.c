/* A measured run of a session: per layer the forward, backward and optimizer time, achieved
 * FLOP/s and the predicted time with its signed error; the step (median, min, max), samples/s,
 * achieved FLOP/s, the peak and utilization, an epoch, the loss; as a table, CSV or JSON. The
 * numbers come from fm_measure, fm_predict and fm_utilization; this file only lines them up. */
#include "report.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* ---- what the report needs ---- */

struct layer_row {
    double ms[FM_PHASE_COUNT];
    double measured_ms, predicted_ms, flops;
    double calibrated_ms;   /* with a calibration: the fitted time of the layer's phases */
    bool bwd_split, predicted;
    bool cold;              /* some phase of it had no fit: the cold time stands in */
    bool no_grad;   /* training: no gradient flows back through this layer (comparisons, masks
                       and tables computed from constants): its backward is not run, not 0 */
};

/* Whether a gradient flows back through node n in a training step: an input needs one and an
 * output is a float tensor that carries one. */
static bool has_gradient(const struct fm_graph *g, const struct fm_node *n)
{
    bool in = false, out = false;
    for (int k = 0; k < n->n_in; k++)
        in |= n->in[k] != FM_NONE && fm_graph_needs_grad(g, n->in[k]);
    for (int o = 0; o < n->n_out; o++)
        out |= fm_graph_needs_grad(g, n->out[o]);
    return in && (out || fm_op_class(n->op) == FM_CLASS_LOSS);
}

static double node_flops(const struct fm_counts *c, size_t n)
{
    double f = 0;
    for (int p = 0; p < FM_PHASE_COUNT; p++)
        f += (double)fm_work_flops(&c->nodes[n].phase[p]);
    return f;
}

static double step_flops(const struct fm_counts *c)
{
    double f = 0;
    for (int p = 0; p < FM_PHASE_COUNT; p++)
        f += (double)fm_work_flops(&c->total[p]);
    return f;
}

static const char *pct(double v, char *buf)
{
    if (isfinite(v))
        snprintf(buf, 32, "%+.0f%%", 100.0 * v);
    else
        snprintf(buf, 32, "-");
    return buf;
}

static const char *ms_text(double ms, char *buf)
{
    if (ms <= 0)
        snprintf(buf, 32, "-");
    else if (ms >= 100)
        snprintf(buf, 32, "%.0f", ms);
    else if (ms >= 1)
        snprintf(buf, 32, "%.2f", ms);
    else
        snprintf(buf, 32, "%.3f", ms);
    return buf;
}

struct report {
    const struct fm_graph *g;
    const struct fm_loss_info *loss;
    const struct fm_counts *c;
    const struct fm_measurement *m;
    const struct fm_measurement *epoch;      /* NULL without --epoch-samples */
    const struct fm_prediction *pred;        /* NULL without a device */
    const char *pred_device;
    const struct fm_calibration *cal;        /* NULL without --calibration */
    const struct fm_time_loss *loss_t;       /* where the time goes (NULL: unknown) */
    double peak;
    const char *peak_source;
    struct layer_row *rows;                  /* NULL without per-layer timing */
    int64_t batch;
    int warmup;
    bool train;
    struct fm_utilization util;              /* step (and epoch) */
    bool have_util;
    uint64_t epoch_samples, epoch_steps;
    double epoch_s;
};

/* The op classes that take most of one part of the lost time, in words: "norm 41%, activation
 * 30%" (at most three, each at least 5% of the part). */
static void top_classes(const struct fm_time_loss *t, int part, char *buf, size_t size)
{
    double total = t->parts[part];
    buf[0] = '\0';
    bool used[FM_CLASS_COUNT] = {false};
    size_t len = 0;
    for (int k = 0; k < 3 && total > 0; k++) {
        int best = -1;
        for (int c = 0; c < FM_CLASS_COUNT; c++) {
            if (!used[c] && (best < 0 || t->by_class[c][part] > t->by_class[best][part]))
                best = c;
        }
        if (best < 0 || t->by_class[best][part] < 0.05 * total)
            break;
        used[best] = true;
        len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s%s %.0f%%",
                                k ? ", " : "", fm_class_name((enum fm_class)best),
                                100.0 * t->by_class[best][part] / total);
    }
}

/* Where the step's time goes, against every FLOP at the peak (fm_time_loss). */
static void print_time_loss(FILE *f, const struct report *r)
{
    const struct fm_time_loss *t = r->loss_t;
    char b[4][32], who[160];
    double step = t->step_s;
    fprintf(f, "where the time goes (ideal: every counted FLOP at the peak, %sFLOP/s; memory at "
            "%s/s)\n",
            fm_format_si(t->peak, b[0]), fm_format_bytes(t->bandwidth, b[1]));
    static const char *const what[FM_LOSS_PARTS] = {
        [FM_LOSS_IDEAL] = "ideal: the layers' FLOPs at the peak",
        [FM_LOSS_MEMORY] = "memory-bound: bytes take longer than FLOPs at the peak",
        [FM_LOSS_OVERHEAD] = "per-kernel overhead: the fixed cost a calibration fitted",
        [FM_LOSS_BELOW] = "below the ceilings: slower than both the peak and the bandwidth",
    };
    static const char *const label[FM_LOSS_PARTS] = {"ideal", "memory-bound", "per-kernel",
                                                     "below peak"};
    for (int k = 0; k < FM_LOSS_PARTS; k++) {
        top_classes(t, k, who, sizeof(who));
        const char *note = k == FM_LOSS_OVERHEAD && !r->cal ? " (needs fm_predict_opts.calibration "
                                                              "FILE)": "";
        fprintf(f, "  %-13s %9s ms %5.1f%%  %s%s%s%s%s\n", label[k],
                ms_text(t->parts[k] * 1e3, b[0]), step > 0 ? 100 * t->parts[k] / step : 0.0,
                what[k], note, who[0] ? " [" : "", who, who[0] ? "]" : "");
    }
    fprintf(f, "  %-13s %9s ms %5.1f%%  per-step overhead: the step beyond its layers\n",
            "per-step", ms_text(t->step_overhead_s * 1e3, b[0]),
            step > 0 ? 100 * t->step_overhead_s / step : 0.0);
    if (t->n_top > 0) {
        fprintf(f, "  losing most:");
        for (int i = 0; i < t->n_top; i++) {
            const struct fm_node *n = fm_graph_node(r->g, t->top[i].node);
            fprintf(f, "%s %s (%s) %s ms", i ? "," : "", n->name, n->op_name,
                    ms_text(t->top[i].lost_s * 1e3, b[0]));
        }
        fputc('\n', f);
    }
    /* in words: the largest part beyond the ideal names the reason */
    int worst = FM_LOSS_MEMORY;
    for (int k = FM_LOSS_MEMORY; k < FM_LOSS_PARTS; k++) {
        if (t->parts[k] > t->parts[worst])
            worst = k;
    }
    double ideal_share = step > 0 ? t->parts[FM_LOSS_IDEAL] / step : 0.0;
    top_classes(t, worst, who, sizeof(who));
    if (t->step_overhead_s > t->parts[worst]) {
        fprintf(f, "  in short: only %.0f%% of the step is work at the peak; the largest loss is "
                "the per-step overhead outside the layers (%.0f%%)\n",
                100 * ideal_share, 100 * t->step_overhead_s / step);
    } else {
        fprintf(f, "  in short: only %.0f%% of the step is work at the peak; the largest loss is "
                "%s (%.0f%% of the step%s%s%s)\n",
                100 * ideal_share,
                worst == FM_LOSS_MEMORY     ? "layers bound by memory bandwidth"
                : worst == FM_LOSS_OVERHEAD ? "the fixed cost of many small kernels"
                                            : "layers computing below the peak",
                100 * t->parts[worst] / step, who[0] ? ", mostly " : "", who, "");
    }
}

static void print_table(FILE *f, const struct report *r)
{
    const struct fm_measurement *m = r->m;
    char b[8][32];
    char thr[32] = "";
    if (m->threads > 0)
        snprintf(thr, sizeof(thr), ", %d thread%s", m->threads, m->threads == 1 ? "" : "s");
    fprintf(f, "%s | batch %lld, %s | %s (%s%s) | %s\n", fm_graph_name(r->g), (long long)r->batch,
            r->train ? "training step: forward, loss, backward, SGD" : "inference (forward only)",
            m->device_name, m->backend, thr, fm_precision_name(m->precision));
    if (r->rows) {
        fprintf(f, "  %3s  %-34s %-15s %9s %9s %9s %9s %10s %10s %7s%s\n", "#", "layer", "op",
                "fwd ms", "bwd ms", "opt ms", "total ms", "FLOP/s", "pred ms", "error",
                r->cal ? "    cal ms   error" : "");
        const fm_nid *topo = fm_graph_topo_order(r->g);
        for (size_t i = 0; i < m->n_nodes; i++) {
            fm_nid id = topo[i];
            const struct fm_node *n = fm_graph_node(r->g, id);
            const struct layer_row *row = &r->rows[id];
            char bwd[40];
            double bw = row->ms[FM_PHASE_BWD_DATA] + row->ms[FM_PHASE_BWD_WEIGHT];
            if (row->no_grad)
                snprintf(bwd, sizeof(bwd), "no grad");
            else
                ms_text(bw, bwd);
            char rate[32] = "-", pred[32] = "-", err[32] = "-";
            if (row->flops > 0 && row->measured_ms > 0)
                snprintf(rate, sizeof(rate), "%sF/s",
                         fm_format_si(row->flops / (row->measured_ms * 1e-3), b[0]));
            if (row->predicted) {
                ms_text(row->predicted_ms, pred);
                if (row->measured_ms > 0 && row->predicted_ms > 0)
                    pct((row->predicted_ms - row->measured_ms) / row->measured_ms, err);
            }
            char calt[48] = "";
            if (r->cal) {
                char e2[32] = "-";
                if (row->measured_ms > 0 && row->calibrated_ms > 0)
                    pct((row->calibrated_ms - row->measured_ms) / row->measured_ms, e2);
                snprintf(calt, sizeof(calt), " %9s%s %6s", ms_text(row->calibrated_ms, b[4]),
                         row->cold ? "*" : " ", e2);
            }
            fprintf(f, "  %3zu  %-34.34s %-15.15s %9s %9s %9s %9s %10s %10s %7s%s\n", i + 1,
                    n->name, n->op_name, ms_text(row->ms[FM_PHASE_FWD], b[1]), bwd,
                    ms_text(row->ms[FM_PHASE_OPTIMIZER], b[2]), ms_text(row->measured_ms, b[3]),
                    rate, pred, err, calt);
        }
        double sum = 0, psum = 0, csum = 0;
        for (size_t i = 0; i < m->n_nodes; i++) {
            sum += r->rows[i].measured_ms;
            psum += r->rows[i].predicted_ms;
            csum += r->rows[i].calibrated_ms;
        }
        fprintf(f, "  the layers' medians add up to %s ms, the step's median is %s ms%s%s%s",
                ms_text(sum, b[0]), ms_text(m->step_ms_median, b[1]),
                r->pred ? "; predicted: " : "", r->pred ? ms_text(psum, b[2]) : "",
                r->pred ? " ms" : "");
        if (r->cal && r->pred) {
            double step_cal = r->pred->step.t_calibrated * 1e3;
            char e[32];
            fprintf(f, "; calibrated: %s ms (the step with its overhead %s ms, %s)",
                    ms_text(csum, b[3]), ms_text(step_cal, b[4]),
                    pct((step_cal - m->step_ms_median) / m->step_ms_median, e));
        }
        fputc('\n', f);
        if (r->cal)
            fprintf(f, "  cal ms: the calibrated time (flopmeter calibrate on %s, %s, %d threads, "
                    "%s), error = (cal - measured) / measured; '*': a phase the calibration has "
                    "no fit for, timed by the cold rule\n",
                    r->cal->device, r->cal->backend, r->cal->threads, r->cal->date);
        if (r->train)
            fprintf(f,
                    "  bwd ms: input and weight gradients together (per-phase figures in "
                    "fm_report_opts.format csv/json; 'no grad': no gradient flows back through the "
                    "layer, its backward does not exist); pred: roofline bound on %s, error = "
                    "(pred - measured) / measured\n",
                    r->pred_device ? r->pred_device : "?");
    }
    double flops = step_flops(r->c);
    double step_s = m->step_ms_median * 1e-3;
    fprintf(f, "step      %s ms median (min %s, max %s) over %zu steps after %d warm-up -> %.1f "
            "samples/s\n",
            ms_text(m->step_ms_median, b[0]), ms_text(m->step_ms_min, b[1]),
            ms_text(m->step_ms_max, b[2]), m->n_steps, r->warmup, (double)r->batch / step_s);
    fprintf(f, "work      %sFLOP per step counted (%s)\n", fm_format_si(flops, b[0]),
            r->train ? "forward + input and weight gradients + SGD update" : "forward");
    fprintf(f, "achieved  %sFLOP/s\n", fm_format_si(flops / step_s, b[0]));
    if (r->peak > 0)
        fprintf(f, "peak      %sFLOP/s: %s\n", fm_format_si(r->peak, b[0]), r->peak_source);
    else
        fprintf(f, "peak      unknown (%s): no utilization\n", r->peak_source);
    if (r->have_util) {
        const struct fm_utilization *u = &r->util;
        const char *batch_name = r->batch == 1 ? "one" : "batch";
        fprintf(f, "utilization (Epoch AI's methods, Hobbhahn 2022)\n");
        fprintf(f, "  %-20s %12s", "FLOPs", batch_name);
        if (r->epoch)
            fprintf(f, " %12s", "epoch");
        fprintf(f, "\n");
        for (int k = 0; k < FM_UTIL_COUNT; k++) {
            if (!r->train && k > FM_UTIL_THEORY)
                break;
            char s1[32], s2[32];
            snprintf(s1, sizeof(s1), "%.1f%%", 100 * u->step_util[k]);
            fprintf(f, "  %-20s %12s", fm_util_method_name((enum fm_util_method)k), s1);
            if (r->epoch) {
                snprintf(s2, sizeof(s2), "%.1f%%", 100 * u->epoch_util[k]);
                fprintf(f, " %12s", s2);
            }
            fprintf(f, "\n");
        }
        if (r->train)
            fprintf(f, "  theory = 3 x forward FLOPs; counted = forward + backward as counted; "
                    "+optimizer adds the SGD update\n");
        if (u->impossible)
            fprintf(f, "  a utilization above 100%% is impossible: the peak is too low (probe on a "
                    "busy machine?) or of another precision\n");
    }
    if (r->epoch)
        fprintf(f,
                "epoch     %s for %" PRIu64 " samples (%" PRIu64 " steps of %lld%s) -> %.1f "
                "samples/s\n",
                fm_format_time(r->epoch_s, b[0]), r->epoch_steps * (uint64_t)r->batch,
                r->epoch_steps, (long long)r->batch,
                r->epoch_steps * (uint64_t)r->batch > r->epoch_samples ? ", the last one filled up"
                                                                       : "",
                (double)(r->epoch_steps * (uint64_t)r->batch) / r->epoch_s);
    if (r->train)
        fprintf(f, "loss      %.4f (first timed step) -> %.4f (last): %s\n", m->loss_first,
                m->loss_last, r->loss->summary);
    if (r->loss_t)
        print_time_loss(f, r);
}

static void print_csv(FILE *f, const struct report *r)
{
    const struct fm_measurement *m = r->m;
    fprintf(f, "layer,op,fwd_ms,bwd_data_ms,bwd_weight_ms,optimizer_ms,bwd_split,measured_ms,flops,"
            "predicted_ms,error%s\n", r->cal ? ",calibrated_ms,calibrated_error" : "");
    if (r->rows) {
        const fm_nid *topo = fm_graph_topo_order(r->g);
        for (size_t i = 0; i < m->n_nodes; i++) {
            fm_nid id = topo[i];
            const struct fm_node *n = fm_graph_node(r->g, id);
            const struct layer_row *row = &r->rows[id];
            fprintf(f, "%s,%s,%.6f,%.6f,%.6f,%.6f,%d,%.6f,%.17g,", n->name, n->op_name,
                    row->ms[FM_PHASE_FWD], row->ms[FM_PHASE_BWD_DATA],
                    row->ms[FM_PHASE_BWD_WEIGHT], row->ms[FM_PHASE_OPTIMIZER], row->bwd_split,
                    row->measured_ms, row->flops);
            if (row->predicted && row->measured_ms > 0 && row->predicted_ms > 0)
                fprintf(f, "%.6f,%.6f", row->predicted_ms,
                        (row->predicted_ms - row->measured_ms) / row->measured_ms);
            else
                fprintf(f, ",");
            if (r->cal && row->measured_ms > 0 && row->calibrated_ms > 0)
                fprintf(f, ",%.6f,%.6f", row->calibrated_ms,
                        (row->calibrated_ms - row->measured_ms) / row->measured_ms);
            else if (r->cal)
                fprintf(f, ",,");
            fputc('\n', f);
        }
    }
    double flops = step_flops(r->c), step_s = m->step_ms_median * 1e-3;
    fprintf(f, "step,%s,%.6f,%.6f,%.6f,,,%.6f,%.17g,,\n", r->train ? "train" : "infer",
            m->step_ms_median, m->step_ms_min, m->step_ms_max, m->step_ms_median, flops);
    fprintf(f,
            "# achieved_flops=%.6g peak_flops=%.6g utilization_counted=%.6g samples_per_s=%.6g\n",
            flops / step_s, r->peak, r->peak > 0 ? flops / step_s / r->peak : NAN,
            (double)r->batch / step_s);
}

static void print_json(FILE *f, const struct report *r)
{
    const struct fm_measurement *m = r->m;
    struct fm_jw w;
    fm_jw_init(&w, f);
    fm_jw_object(&w, NULL, false);
    fm_jw_string(&w, "flopmeter", FM_VERSION);
    fm_jw_string(&w, "model", fm_graph_name(r->g));
    fm_jw_string(&w, "backend", m->backend);
    fm_jw_string(&w, "device", m->device_name);
    fm_jw_i64(&w, "threads", m->threads);
    fm_jw_i64(&w, "batch", r->batch);
    fm_jw_string(&w, "mode", r->train ? "train" : "infer");
    fm_jw_string(&w, "precision", fm_precision_name(m->precision));
    fm_jw_i64(&w, "warmup", r->warmup);
    fm_jw_u64(&w, "steps", m->n_steps);
    fm_jw_object(&w, "step_ms", false);
    fm_jw_double(&w, "median", m->step_ms_median);
    fm_jw_double(&w, "min", m->step_ms_min);
    fm_jw_double(&w, "max", m->step_ms_max);
    fm_jw_array(&w, "all", true);
    for (size_t i = 0; i < m->n_steps; i++)
        fm_jw_double(&w, NULL, m->step_ms[i]);
    fm_jw_end(&w);
    fm_jw_end(&w);
    double flops = step_flops(r->c), step_s = m->step_ms_median * 1e-3;
    fm_jw_double(&w, "samples_per_s", (double)r->batch / step_s);
    fm_jw_double(&w, "step_flops", flops);
    fm_jw_double(&w, "achieved_flops", flops / step_s);
    fm_jw_object(&w, "peak", false);
    if (r->peak > 0)
        fm_jw_double(&w, "flops", r->peak);
    else
        fm_jw_null(&w, "flops");
    fm_jw_string(&w, "source", r->peak_source);
    fm_jw_end(&w);
    if (r->have_util) {
        fm_jw_object(&w, "utilization", false);
        for (int k = 0; k < FM_UTIL_COUNT; k++) {
            fm_jw_object(&w, fm_util_method_name((enum fm_util_method)k), true);
            fm_jw_double(&w, r->batch == 1 ? "one" : "batch", r->util.step_util[k]);
            if (r->epoch)
                fm_jw_double(&w, "epoch", r->util.epoch_util[k]);
            fm_jw_end(&w);
        }
        fm_jw_end(&w);
    }
    if (r->train) {
        fm_jw_object(&w, "loss", false);
        fm_jw_double(&w, "first", m->loss_first);
        fm_jw_double(&w, "last", m->loss_last);
        fm_report_json_loss(&w, r->g, r->loss);
        fm_jw_end(&w);
    }
    if (r->epoch) {
        fm_jw_object(&w, "epoch", false);
        fm_jw_u64(&w, "samples_requested", r->epoch_samples);
        fm_jw_u64(&w, "steps", r->epoch_steps);
        fm_jw_u64(&w, "samples", r->epoch_steps * (uint64_t)r->batch);
        fm_jw_double(&w, "seconds", r->epoch_s);
        fm_jw_end(&w);
    }
    if (r->pred_device)
        fm_jw_string(&w, "prediction_device", r->pred_device);
    if (r->cal && r->pred) {
        fm_jw_double(&w, "calibrated_step_ms", r->pred->step.t_calibrated * 1e3);
        fm_jw_string(&w, "calibration_date", r->cal->date);
    }
    if (r->loss_t) {
        static const char *const keys[FM_LOSS_PARTS] = {"ideal_s", "memory_bound_s",
                                                        "kernel_overhead_s", "below_peak_s"};
        const struct fm_time_loss *t = r->loss_t;
        fm_jw_object(&w, "time_loss", false);
        fm_jw_double(&w, "peak_flops", t->peak);
        fm_jw_double(&w, "bandwidth_bytes_per_s", t->bandwidth);
        fm_jw_double(&w, "step_s", t->step_s);
        for (int k = 0; k < FM_LOSS_PARTS; k++)
            fm_jw_double(&w, keys[k], t->parts[k]);
        fm_jw_double(&w, "step_overhead_s", t->step_overhead_s);
        fm_jw_object(&w, "by_class", false);
        for (int c = 0; c < FM_CLASS_COUNT; c++) {
            if (!(t->class_time_s[c] > 0))
                continue;
            fm_jw_object(&w, fm_class_name((enum fm_class)c), true);
            fm_jw_double(&w, "time_s", t->class_time_s[c]);
            for (int k = 0; k < FM_LOSS_PARTS; k++)
                fm_jw_double(&w, keys[k], t->by_class[c][k]);
            fm_jw_end(&w);
        }
        fm_jw_end(&w);
        fm_jw_array(&w, "top_layers", true);
        for (int i = 0; i < t->n_top; i++) {
            fm_jw_object(&w, NULL, true);
            fm_jw_string(&w, "name", fm_graph_node(r->g, t->top[i].node)->name);
            fm_jw_double(&w, "lost_s", t->top[i].lost_s);
            fm_jw_end(&w);
        }
        fm_jw_end(&w);
        fm_jw_end(&w);
    }
    if (r->rows) {
        fm_jw_array(&w, "layers", false);
        const fm_nid *topo = fm_graph_topo_order(r->g);
        for (size_t i = 0; i < m->n_nodes; i++) {
            fm_nid id = topo[i];
            const struct fm_node *n = fm_graph_node(r->g, id);
            const struct layer_row *row = &r->rows[id];
            fm_jw_object(&w, NULL, true);
            fm_jw_string(&w, "name", n->name);
            fm_jw_string(&w, "op", n->op_name);
            for (int p = 0; p < FM_PHASE_COUNT; p++) {
                char key[32];
                snprintf(key, sizeof(key), "%s_ms", fm_phase_name((enum fm_phase)p));
                fm_jw_double(&w, key, row->ms[p]);
            }
            fm_jw_bool(&w, "bwd_split", row->bwd_split);
            if (r->train)
                fm_jw_bool(&w, "gradient", !row->no_grad);
            fm_jw_double(&w, "measured_ms", row->measured_ms);
            fm_jw_double(&w, "flops", row->flops);
            if (row->predicted) {
                fm_jw_double(&w, "predicted_ms", row->predicted_ms);
                if (row->measured_ms > 0 && row->predicted_ms > 0)
                    fm_jw_double(&w, "error", (row->predicted_ms - row->measured_ms) /
                                                  row->measured_ms);
            }
            if (r->cal) {
                fm_jw_double(&w, "calibrated_ms", row->calibrated_ms);
                fm_jw_bool(&w, "calibrated", !row->cold);
                if (row->measured_ms > 0 && row->calibrated_ms > 0)
                    fm_jw_double(&w, "calibrated_error",
                                 (row->calibrated_ms - row->measured_ms) / row->measured_ms);
            }
            fm_jw_end(&w);
        }
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    fm_jw_finish(&w);
}

/* A dry run: what would run, what the backend cannot, and the work it would time. */
static void print_plan(FILE *f, const struct fm_session *s, enum fm_format format)
{
    const struct fm_backend_check *c = &s->check;
    bool train = s->counts->mode == FM_MODE_TRAIN;
    double flops = step_flops(s->counts);
    char b[FM_FORMAT_SIZE];
    if (format == FM_FORMAT_JSON) {
        struct fm_jw w;
        fm_jw_init(&w, f);
        fm_jw_object(&w, NULL, false);
        fm_jw_string(&w, "flopmeter", FM_VERSION);
        fm_jw_string(&w, "model", fm_graph_name(s->graph));
        fm_jw_bool(&w, "dry_run", true);
        fm_jw_string(&w, "backend", c->backend);
        fm_jw_i64(&w, "batch", s->batch);
        fm_jw_string(&w, "mode", train ? "train" : "infer");
        fm_jw_string(&w, "precision", fm_precision_name(s->precision));
        fm_jw_double(&w, "step_flops", flops);
        if (train) {
            fm_jw_object(&w, "loss", false);
            fm_report_json_loss(&w, s->graph, &s->loss);
            fm_jw_end(&w);
        }
        fm_jw_u64(&w, "layers", c->n_nodes);
        fm_jw_u64(&w, "layers_supported", c->n_supported);
        fm_jw_array(&w, "unsupported", false);
        for (size_t k = 0; k < c->n_gaps; k++) {
            fm_jw_object(&w, NULL, true);
            fm_jw_string(&w, "op", c->gaps[k].op);
            fm_jw_u64(&w, "layers", c->gaps[k].nodes);
            fm_jw_string(&w, "first_layer", c->gaps[k].first_layer);
            fm_jw_string(&w, "reason", c->gaps[k].reason);
            fm_jw_end(&w);
        }
        fm_jw_end(&w);
        fm_jw_end(&w);
        fm_jw_finish(&w);
        return;
    }
    fprintf(f, "%s | batch %lld, %s | %s backend, %s | dry run: nothing was run\n",
            fm_graph_name(s->graph), (long long)s->batch,
            train ? "training step: forward, loss, backward, SGD" : "inference (forward only)",
            c->backend, fm_precision_name(s->precision));
    fprintf(f, "layers    %zu of %zu the %s backend can run\n", c->n_supported, c->n_nodes,
            c->backend);
    for (size_t k = 0; k < c->n_gaps; k++)
        fprintf(f, "  cannot run %s (%llu layer%s, first '%s'): %s\n", c->gaps[k].op,
                (unsigned long long)c->gaps[k].nodes, c->gaps[k].nodes == 1 ? "" : "s",
                c->gaps[k].first_layer, c->gaps[k].reason);
    fprintf(f, "work      %sFLOP per step counted (%s)\n", fm_format_si(flops, b),
            train ? "forward + input and weight gradients + SGD update" : "forward");
    if (train)
        fprintf(f, "loss      %s\n", s->loss.summary);
}

enum fm_status fm_report_measure(FILE *f, const struct fm_session *s,
                                 const struct fm_report_opts *opts)
{
    const struct fm_measurement *m = s->measurement;
    if (!m && s->opts.dry_run) {
        print_plan(f, s, opts ? opts->format : FM_FORMAT_TABLE);
        return fm_report_end(s->ctx, f);
    }
    if (!m)
        return fm_report_lacks(s->ctx, "measure", "a measurement (or a dry run)");
    const struct fm_prediction *pred = s->prediction;
    struct report rep;
    memset(&rep, 0, sizeof(rep));
    rep.g = s->graph;
    rep.loss = &s->loss;
    rep.c = s->counts;
    rep.m = m;
    rep.epoch = s->epoch;
    rep.pred = pred;
    rep.pred_device = pred ? s->device->name : NULL;
    rep.cal = pred ? pred->opts.calibration : NULL;
    rep.loss_t = s->have_time_loss ? &s->time_loss : NULL;
    rep.peak = s->peak;
    rep.peak_source = s->peak_source;
    rep.batch = s->batch;
    rep.warmup = s->opts.run.warmup;
    rep.train = s->counts->mode == FM_MODE_TRAIN;
    rep.have_util = s->have_util;
    if (s->have_util)
        rep.util = s->util;
    rep.epoch_samples = s->opts.epoch_samples;
    rep.epoch_steps = s->epoch_steps;
    rep.epoch_s = s->epoch_s;
    struct layer_row *rows = NULL;
    if (m->nodes) {
        rows = fm_alloc(s->ctx, sizeof(*rows) * (m->n_nodes + 1));
        if (!rows)
            return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < m->n_nodes; i++) {
            struct layer_row *row = &rows[i];
            for (int p = 0; p < FM_PHASE_COUNT; p++) {
                row->ms[p] = m->nodes[i].ms[p];
                row->measured_ms += m->nodes[i].ms[p];
                if (pred)
                    row->predicted_ms += pred->nodes[i][p].t_roofline * 1e3;
                if (rep.cal) {
                    const struct fm_phase_time *t = &pred->nodes[i][p];
                    row->calibrated_ms += t->t_calibrated * 1e3;
                    row->cold |= (t->flops > 0 || t->bytes > 0) && !t->calibrated;
                }
            }
            row->bwd_split = m->nodes[i].bwd_split;
            row->no_grad = rep.train &&
                           !has_gradient(s->graph, fm_graph_node(s->graph, (fm_nid)i));
            row->predicted = pred != NULL;
            row->flops = node_flops(s->counts, i);
        }
        rep.rows = rows;
    }
    enum fm_format format = opts ? opts->format : FM_FORMAT_TABLE;
    if (format == FM_FORMAT_TABLE)
        print_table(f, &rep);
    else if (format == FM_FORMAT_CSV)
        print_csv(f, &rep);
    else
        print_json(f, &rep);
    fm_dealloc(s->ctx, rows);
    return fm_report_end(s->ctx, f);
}
