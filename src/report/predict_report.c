/* Predicted times of a session (PALEO, Qi et al. 2017): per layer and phase the compute, memory
 * and launch times and both bounds, the phase totals, the step, samples per second, utilization,
 * epoch and training time, and data parallelism, as a table, CSV or JSON. It computes nothing:
 * fm_predict, fm_predict_run and fm_predict_data_parallel did. */
#include "report.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static void print_table(FILE *f, const struct fm_session *s, bool summary)
{
    const struct fm_graph *g = s->graph;
    const struct fm_prediction *p = s->prediction;
    const struct fm_run_estimate *run = &s->run, *one = &s->run_1gpu;
    const struct fm_dp_estimate *dp = s->have_dp ? &s->dp : NULL;
    const char *link_name = s->link_name;
    int64_t batch = s->batch;
    const struct fm_device *d = p->opts.device;
    char b[8][32], gpus[24], storage[96];
    snprintf(gpus, sizeof(gpus), "%d x ", run->gpus);
    bool train = p->mode == FM_MODE_TRAIN;
    fprintf(f,
            "%s on %s | batch %lld, %s | precision %s, %s | PPP compute %.2f, memory %.2f | "
            "launch %g us/kernel\n",
            fm_graph_name(g), d->name, (long long)batch,
            train ? "training step" : "inference (forward only)",
            fm_report_precision_label(&p->opts), fm_report_storage(s, storage, sizeof(storage)),
            p->opts.ppp_compute, p->opts.ppp_memory, p->opts.launch_overhead_us);
    const struct fm_calibration *cal = p->opts.calibration;
    if (cal)
        fprintf(f, "calibrated: %s, %s, %d threads, %s, %s (flopmeter calibrate); '*' marks a "
                "layer phase the calibration has no fit for: the cold PALEO time stands in\n",
                cal->device, cal->backend, cal->threads, fm_precision_name(cal->precision),
                cal->date);
    if (cal && cal->n_evict) {
        char rb[FM_FORMAT_SIZE];
        fprintf(f, "caches: a tensor is used again after about %s of other traffic (half the "
                "step's); the calibration's eviction curve puts layers %.0f%% of the way from "
                "their warm to their cold times there (forward half of that, backward two "
                "thirds)\n",
                fm_format_bytes(p->reuse_bytes, rb), 100 * p->evicted);
    }
    if (!summary) {
        fprintf(f, "  %4s  %-26s %-10s %9s %9s %10s %10s %10s %10s %7s  %-7s %s\n", "#",
                "layer", "phase", "FLOP", "bytes", "compute", "memory", "roofline", "paleo",
                "share", "bound", cal ? " calibrated" : "");
        const fm_nid *order = fm_graph_topo_order(g);
        for (size_t i = 0; i < p->n_nodes; i++) {
            const struct fm_node *n = fm_graph_node(g, order[i]);
            bool first = true;
            for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
                const struct fm_phase_time *t = &p->nodes[order[i]][ph];
                if (t->flops <= 0 && t->bytes <= 0)
                    continue;
                char idx[24];
                snprintf(idx, sizeof(idx), "%zu", i + 1);
                char ct[40] = "";
                if (cal)
                    snprintf(ct, sizeof(ct), "%11s%s", fm_format_time(t->t_calibrated, b[6]),
                             t->calibrated ? "" : "*");
                fprintf(f, "  %4s  %-26.26s %-10s %9s %9s %10s %10s %10s %10s %6.2f%%  %-7s %s\n",
                        first ? idx : "", first ? n->name : "", fm_phase_name((enum fm_phase)ph),
                        fm_format_si(t->flops, b[0]), fm_format_si(t->bytes, b[1]),
                        fm_format_time(t->t_compute, b[2]), fm_format_time(t->t_memory, b[3]),
                        fm_format_time(t->t_roofline, b[4]), fm_format_time(t->t_paleo, b[5]),
                        p->step_roofline_s > 0 ? 100 * t->t_roofline / p->step_roofline_s : 0.0,
                        t->memory_bound ? "memory" : "compute", ct);
                first = false;
            }
        }
    }
    fprintf(f, "by phase\n  %-10s %9s %9s %10s %10s %10s %10s %10s %s\n", "phase", "FLOP",
            "bytes", "compute", "memory", "launch", "roofline", "paleo",
            cal ? " calibrated" : "");
    for (int ph = 0; ph <= FM_PHASE_COUNT; ph++) {
        const struct fm_phase_time *t = ph < FM_PHASE_COUNT ? &p->total[ph] : &p->step;
        if (t->flops <= 0 && t->bytes <= 0)
            continue;
        fprintf(f, "  %-10s %9s %9s %10s %10s %10s %10s %10s %11s\n",
                ph < FM_PHASE_COUNT ? fm_phase_name((enum fm_phase)ph) : "step",
                fm_format_si(t->flops, b[0]), fm_format_si(t->bytes, b[1]),
                fm_format_time(t->t_compute, b[2]), fm_format_time(t->t_memory, b[3]),
                fm_format_time(t->t_launch, b[4]), fm_format_time(t->t_roofline, b[5]),
                fm_format_time(t->t_paleo, b[6]),
                cal ? fm_format_time(t->t_calibrated, b[7]) : "");
    }
    if (dp) {
        fprintf(f,
                "data parallel: %d GPUs, ring all-reduce of %s of gradients over %s (%s/s "
                "bidirectional, PPP %.2f): %s per step\n",
                dp->gpus, fm_format_bytes(dp->grad_bytes, b[0]), link_name,
                fm_format_bytes(dp->link_bw, b[1]), p->opts.ppp_comm,
                fm_format_time(dp->t_allreduce, b[2]));
        fprintf(f, "  %-22s %12s | %s\n", "step, 1 GPU", fm_format_time(dp->step_1[0], b[0]),
                fm_format_time(dp->step_1[1], b[1]));
        fprintf(f, "  %-22s %12s | %s   efficiency %s | %s, %.0f | %.0f samples/s\n",
                "step, not overlapped", fm_format_time(dp->step_serial[0], b[0]),
                fm_format_time(dp->step_serial[1], b[1]),
                fm_report_pct(dp->efficiency_serial[0], b[2]),
                fm_report_pct(dp->efficiency_serial[1], b[3]), dp->samples_per_s_serial[0],
                dp->samples_per_s_serial[1]);
        fprintf(f, "  %-22s %12s | %s   efficiency %s | %s, %.0f | %.0f samples/s\n",
                "step, overlapped", fm_format_time(dp->step_overlap[0], b[0]),
                fm_format_time(dp->step_overlap[1], b[1]),
                fm_report_pct(dp->efficiency_overlap[0], b[2]),
                fm_report_pct(dp->efficiency_overlap[1], b[3]), dp->samples_per_s_overlap[0],
                dp->samples_per_s_overlap[1]);
        fprintf(f, "  (weak scaling: each GPU runs batch %lld; efficiency = 1-GPU step / N-GPU "
                "step)\n",
                (long long)batch);
    }
    if (run->gpus > 1)
        fprintf(f, "prediction on %d GPUs, the all-reduce overlapped (step of %lld = %d x %lld "
                "samples; roofline bound | PALEO)\n",
                run->gpus, (long long)run->global_batch, run->gpus, (long long)run->batch);
    else
        fprintf(f, "prediction (roofline bound = compute and memory overlap | PALEO = they do "
                "not)\n");
    const char *unit = train ? "step" : "batch latency";
    fprintf(f, "  %-22s %12s | %s\n", unit, fm_format_time(run->step_s[0], b[0]),
            fm_format_time(run->step_s[1], b[1]));
    fprintf(f, "  %-22s %12.1f | %.1f\n", train ? "samples/s" : "throughput (samples/s)",
            run->samples_per_s[0], run->samples_per_s[1]);
    fprintf(f, "  %-22s %12s | %s   (step FLOPs %sFLOP / (time x %s%sFLOP/s, %s peak))\n",
            "utilization", fm_report_pct(run->utilization[0], b[0]),
            fm_report_pct(run->utilization[1], b[1]), fm_format_si(run->step_flops, b[2]),
            run->gpus > 1 ? gpus : "", fm_format_si(p->peak_ref, b[3]),
            fm_report_precision_label(&p->opts));
    if (cal) {
        fprintf(f, "  %-22s %12s   (%.1f samples/s; fitted layer times%s%s",
                train ? "calibrated step" : "calibrated latency",
                fm_format_time(run->step_calibrated_s, b[0]), run->samples_calibrated_per_s,
                train ? " + the per-step overhead" : "", p->uncalibrated ? "" : ")\n");
        if (p->uncalibrated)
            fprintf(f, "; %zu layer phases cold, marked '*')\n", p->uncalibrated);
        if (run->dataset_size)
            fprintf(f, "  %-22s %12s   (training time %s)\n", "calibrated epoch",
                    fm_format_time(run->epoch_calibrated_s, b[0]),
                    fm_format_time(run->total_calibrated_s, b[1]));
    }
    if (run->dataset_size) {
        fprintf(f,
                "  %-22s %12s | %s   (%" PRIu64 " %s of %lld; the last partial batch timed as "
                "full)\n",
                train ? "epoch" : "pass over the data", fm_format_time(run->epoch_s[0], b[0]),
                fm_format_time(run->epoch_s[1], b[1]), run->steps_per_epoch,
                train ? "steps" : "batches", (long long)run->global_batch);
        if (train) {
            fprintf(f, "  %-22s %12s | %s   (%g epochs)\n", "training time",
                    fm_format_time(run->total_s[0], b[0]), fm_format_time(run->total_s[1], b[1]),
                    run->epochs);
            fprintf(f, "  %-22s %12s   (%.3g FLOP: forward + backward per sample x samples x "
                    "epochs + optimizer x steps%s)\n",
                    "training compute", fm_format_si(run->total_flops, b[0]), run->total_flops,
                    run->gpus > 1 ? " x GPUs" : "");
        }
        if (one && run->gpus > 1)
            fprintf(f, "  %-22s %12s | %s   (%" PRIu64 " steps of %lld), training time %s | "
                    "%s\n",
                    "epoch on 1 GPU", fm_format_time(one->epoch_s[0], b[0]),
                    fm_format_time(one->epoch_s[1], b[1]), one->steps_per_epoch,
                    (long long)one->global_batch, fm_format_time(one->total_s[0], b[2]),
                    fm_format_time(one->total_s[1], b[3]));
    } else {
        fprintf(f, "  (fm_session_opts.dataset_size N adds epoch time, training time and total "
                   "compute)\n");
    }
    fm_report_memory_line(f, &s->memory);
    fprintf(f,
            "%zu kernels (layer phases that do work); times are predictions, not measurements.\n",
            p->kernels);
}

static void predict_tail(FILE *f, const struct fm_phase_time *t)
{
    fprintf(f, ",%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%s\n", t->peak, t->t_compute, t->t_memory,
            t->t_launch, t->t_roofline, t->t_paleo, t->memory_bound ? "memory" : "compute");
}

/* With a calibration: two more columns, the calibrated time and whether it was fitted. */
static void predict_tail_calibrated(FILE *f, const struct fm_phase_time *t)
{
    fprintf(f, ",%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%s,%.9g,%s\n", t->peak, t->t_compute, t->t_memory,
            t->t_launch, t->t_roofline, t->t_paleo, t->memory_bound ? "memory" : "compute",
            t->t_calibrated, t->calibrated ? "fitted" : "cold");
}

static void print_csv(FILE *f, const struct fm_graph *g, const struct fm_counts *c,
                      const struct fm_prediction *p)
{
    bool cal = p->opts.calibration != NULL;
    fprintf(f, "index,name,op,class,phase,precision,unit,flops,bytes,ceiling_flops,t_compute_s,"
            "t_memory_s,t_launch_s,t_roofline_s,t_paleo_s,bound%s\n",
            cal ? ",t_calibrated_s,calibration" : "");
    fm_report_csv_layers(f, g, c, p, cal ? predict_tail_calibrated : predict_tail);
    for (int ph = 0; ph <= FM_PHASE_COUNT; ph++) {
        const struct fm_phase_time *t = ph < FM_PHASE_COUNT ? &p->total[ph] : &p->step;
        fprintf(f, "total,\"%s\",,,%s,,,%.0f,%.0f,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%s",
                ph < FM_PHASE_COUNT ? "total" : "step",
                ph < FM_PHASE_COUNT ? fm_phase_name((enum fm_phase)ph) : "all", t->flops, t->bytes,
                t->peak, t->t_compute, t->t_memory, t->t_launch, t->t_roofline, t->t_paleo,
                t->memory_bound ? "memory" : "compute");
        if (cal)
            fprintf(f, ",%.9g,", t->t_calibrated);
        fputc('\n', f);
    }
}

static void json_times(struct fm_jw *w, const char *key, const struct fm_phase_time *t,
                       bool cal)
{
    fm_jw_object(w, key, true);
    fm_jw_double(w, "flops", t->flops);
    fm_jw_double(w, "bytes", t->bytes);
    fm_jw_double(w, "ceiling_flops", t->peak);
    fm_jw_double(w, "t_compute_s", t->t_compute);
    fm_jw_double(w, "t_memory_s", t->t_memory);
    fm_jw_double(w, "t_launch_s", t->t_launch);
    fm_jw_double(w, "t_roofline_s", t->t_roofline);
    fm_jw_double(w, "t_paleo_s", t->t_paleo);
    fm_jw_string(w, "bound", t->memory_bound ? "memory" : "compute");
    if (cal) {
        fm_jw_double(w, "t_calibrated_s", t->t_calibrated);
        fm_jw_bool(w, "calibrated", t->calibrated);
    }
    fm_jw_end(w);
}

/* roofline and PALEO; with a calibration (calibrated >= 0) also the calibrated figure */
static void json_pair(struct fm_jw *w, const char *key, const double *v, double calibrated)
{
    fm_jw_object(w, key, true);
    fm_jw_double(w, "roofline", v[FM_BOUND_ROOFLINE]);
    fm_jw_double(w, "paleo", v[FM_BOUND_PALEO]);
    if (calibrated >= 0)
        fm_jw_double(w, "calibrated", calibrated);
    fm_jw_end(w);
}

/* The keys of a run: the data-parallel one under "run", the one-GPU one under "one_gpu". */
static void json_run(struct fm_jw *w, const struct fm_prediction *p, const struct fm_counts *c,
                     const struct fm_run_estimate *run)
{
    fm_jw_i64(w, "gpus", run->gpus);
    fm_jw_i64(w, "global_batch", run->global_batch);
    uint64_t step_flops = 0;
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
        step_flops += fm_work_flops(&c->total[ph]);
    fm_jw_u64(w, "step_flops", step_flops * (uint64_t)run->gpus);
    fm_jw_double(w, "peak_ref_flops", p->peak_ref);
    bool cal = p->opts.calibration != NULL;
    json_pair(w, "step_s", run->step_s, cal ? run->step_calibrated_s : -1);
    json_pair(w, "samples_per_s", run->samples_per_s, cal ? run->samples_calibrated_per_s : -1);
    json_pair(w, "utilization", run->utilization, -1);
    if (run->dataset_size) {
        fm_jw_u64(w, "dataset_size", run->dataset_size);
        fm_jw_u64(w, "steps_per_epoch", run->steps_per_epoch);
        fm_jw_double(w, "epochs", run->epochs);
        json_pair(w, "epoch_s", run->epoch_s, cal ? run->epoch_calibrated_s : -1);
        json_pair(w, "total_s", run->total_s, cal ? run->total_calibrated_s : -1);
        fm_jw_double(w, "epoch_flops", run->epoch_flops);
        fm_jw_double(w, "total_flops", run->total_flops);
    }
}

static void print_json(FILE *f, const struct fm_session *s)
{
    const struct fm_graph *g = s->graph;
    const struct fm_counts *c = s->counts;
    const struct fm_prediction *p = s->prediction;
    const struct fm_run_estimate *run = &s->run, *one = &s->run_1gpu;
    const struct fm_dp_estimate *dp = s->have_dp ? &s->dp : NULL;
    const char *link_name = s->link_name;
    int64_t batch = s->batch;
    struct fm_jw w;
    fm_jw_init(&w, f);
    fm_jw_object(&w, NULL, false);
    fm_jw_string(&w, "flopmeter", FM_VERSION);
    fm_jw_string(&w, "model", fm_graph_name(g));
    fm_jw_string(&w, "device", p->opts.device->name);
    fm_jw_i64(&w, "batch", batch);
    fm_jw_string(&w, "mode", fm_mode_name(p->mode));
    fm_jw_object(&w, "options", true);
    fm_jw_string(&w, "precision", fm_report_precision_label(&p->opts));
    fm_report_json_storage(&w, s);
    fm_jw_double(&w, "ppp_compute", p->opts.ppp_compute);
    fm_jw_double(&w, "ppp_memory", p->opts.ppp_memory);
    fm_jw_double(&w, "ppp_comm", p->opts.ppp_comm);
    fm_jw_double(&w, "launch_overhead_us", p->opts.launch_overhead_us);
    fm_jw_end(&w);
    const struct fm_calibration *cal = p->opts.calibration;
    if (cal) {
        fm_jw_object(&w, "calibration", true);
        fm_jw_string(&w, "device", cal->device);
        fm_jw_string(&w, "backend", cal->backend);
        fm_jw_i64(&w, "threads", cal->threads);
        fm_jw_string(&w, "precision", fm_precision_name(cal->precision));
        fm_jw_string(&w, "date", cal->date);
        fm_jw_u64(&w, "uncalibrated_layer_phases", p->uncalibrated);
        fm_jw_double(&w, "reuse_bytes", p->reuse_bytes);
        fm_jw_double(&w, "evicted", p->evicted);
        fm_jw_end(&w);
    }
    fm_jw_array(&w, "layers", false);
    const fm_nid *order = fm_graph_topo_order(g);
    for (size_t i = 0; i < p->n_nodes; i++) {
        const struct fm_node *n = fm_graph_node(g, order[i]);
        fm_jw_object(&w, NULL, false);
        fm_jw_string(&w, "name", n->name);
        fm_jw_string(&w, "op", n->op_name);
        fm_jw_string(&w, "class", fm_class_name(fm_op_class(n->op)));
        if (cal) {   /* the kind whose fit timed it (docs/calibration.md, Kinds) */
            char kind[FM_CALIB_KIND_MAX];
            fm_calib_kind(g, order[i], kind);
            fm_jw_string(&w, "kind", kind);
        }
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            const struct fm_phase_time *t = &p->nodes[order[i]][ph];
            if (t->flops > 0 || t->bytes > 0)
                json_times(&w, fm_phase_name((enum fm_phase)ph), t, cal != NULL);
        }
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    fm_jw_object(&w, "phases", false);
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
        json_times(&w, fm_phase_name((enum fm_phase)ph), &p->total[ph], cal != NULL);
    fm_jw_end(&w);
    json_times(&w, "step", &p->step, cal != NULL);
    fm_jw_u64(&w, "kernels", p->kernels);
    fm_jw_object(&w, "run", false);
    json_run(&w, p, c, run);
    if (run->gpus > 1) {
        fm_jw_object(&w, "one_gpu", false);
        json_run(&w, p, c, one);
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    if (dp) {
        fm_jw_object(&w, "data_parallel", false);
        fm_jw_i64(&w, "gpus", dp->gpus);
        fm_jw_string(&w, "interconnect", link_name);
        fm_jw_double(&w, "link_bw_bytes_per_s", dp->link_bw);
        fm_jw_double(&w, "grad_bytes", dp->grad_bytes);
        fm_jw_double(&w, "t_allreduce_s", dp->t_allreduce);
        json_pair(&w, "step_1gpu_s", dp->step_1, -1);
        json_pair(&w, "step_serial_s", dp->step_serial, -1);
        json_pair(&w, "step_overlap_s", dp->step_overlap, -1);
        json_pair(&w, "efficiency_serial", dp->efficiency_serial, -1);
        json_pair(&w, "efficiency_overlap", dp->efficiency_overlap, -1);
        json_pair(&w, "samples_per_s_serial", dp->samples_per_s_serial, -1);
        json_pair(&w, "samples_per_s_overlap", dp->samples_per_s_overlap, -1);
        fm_jw_end(&w);
    }
    fm_report_json_memory(&w, &s->memory);
    fm_jw_end(&w);
    fm_jw_finish(&w);
}

enum fm_status fm_report_predict(FILE *f, const struct fm_session *s,
                                 const struct fm_report_opts *opts)
{
    struct fm_report_opts o;
    if (!opts)
        fm_report_opts_init(&o);
    else
        o = *opts;
    if (!s->prediction || !s->have_run)
        return fm_report_lacks(s->ctx, "predict", "a session run with a prediction");
    if (o.format == FM_FORMAT_TABLE)
        print_table(f, s, o.summary);
    else if (o.format == FM_FORMAT_CSV)
        print_csv(f, s->graph, s->counts, s->prediction);
    else
        print_json(f, s);
    return fm_report_end(s->ctx, f);
}
