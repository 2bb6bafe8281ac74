/* flopmeter predict MODEL --device D: PALEO-style predicted time per layer and phase, the step,
 * samples per second, epoch and whole training run, and with --gpus N the ring all-reduce of
 * data parallelism. It runs nothing: flopmeter measure times the real thing. */
#include "cli_analysis.h"
#include "../../src/core/jsonw.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static const char description[] =
    "Predicts the time of every layer's phases from its counted FLOPs and bytes (PALEO, Qi et\n"
    "al. 2017): t_compute = FLOPs / (ceiling x PPP_compute), t_memory = bytes / (bandwidth x\n"
    "PPP_memory), reported as the roofline bound max(t_compute, t_memory) (perfect overlap) and\n"
    "PALEO's sum (no overlap), each plus --launch-overhead-us per kernel. The ceiling is the\n"
    "tensor-core peak of --precision for conv/matmul/attention, the vector peak otherwise.\n"
    "Totals: step time, samples per second, predicted utilization (step FLOPs / (time x\n"
    "peak)), and with --dataset-size N the epoch time, the total training time over --epochs\n"
    "and the total training compute. In --infer mode: latency of a batch and throughput.\n\n"
    "--gpus N adds data parallelism (weak scaling, each GPU keeps --batch): a ring all-reduce\n"
    "of every gradient over --interconnect (default: the device's own), serial after the\n"
    "backward pass or overlapped with it layer by layer, and the scaling efficiency.\n\n"
    "PPP defaults are PALEO's published settings (0.62 compute, 0.72 communication): fit your\n"
    "own from flopmeter measure. csv: one row per layer and phase, then phase totals.\n"
    "json: options, layers, phases, step, run and data-parallel figures (docs/roofline.md).\n\n"
    "examples:\n"
    "  flopmeter predict resnet50 --device a100 --batch 256 --dataset-size 1281167 --epochs 90\n"
    "  flopmeter predict vgg16 --device k80 --infer --precision fp32 --ppp-compute 1 "
    "--ppp-memory 1\n"
    "  flopmeter predict resnet50 --device h100 --batch 128 --gpus 8 --interconnect nvlink4";

struct predict_args {
    int64_t dataset;
    double epochs;
    int64_t gpus;
    const char *interconnect;
    bool summary;
};

static const char *pct(double x, char *buf)
{
    snprintf(buf, 32, "%.1f%%", 100 * x);
    return buf;
}

static void print_table(const struct fm_graph *g, const struct cli_model_opts *m,
                        const struct fm_prediction *p, const struct fm_run_estimate *run,
                        const struct fm_dp_estimate *dp, const char *link_name, bool summary)
{
    const struct fm_device *d = p->opts.device;
    char b[8][32];
    bool train = p->mode == FM_MODE_TRAIN;
    printf("%s on %s | batch %lld, %s | precision %s | PPP compute %.2f, memory %.2f | launch "
           "%g us/kernel\n",
           fm_graph_name(g), d->name, (long long)m->batch,
           train ? "training step" : "inference (forward only)", cli_precision_label(&p->opts),
           p->opts.ppp_compute, p->opts.ppp_memory, p->opts.launch_overhead_us);
    if (!summary) {
        printf("  %4s  %-26s %-10s %9s %9s %10s %10s %10s %10s %7s  %s\n", "#", "layer", "phase",
               "FLOP", "bytes", "compute", "memory", "roofline", "paleo", "share", "bound");
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
                printf("  %4s  %-26.26s %-10s %9s %9s %10s %10s %10s %10s %6.2f%%  %s\n",
                       first ? idx : "", first ? n->name : "", fm_phase_name((enum fm_phase)ph),
                       fm_format_si(t->flops, b[0]), fm_format_si(t->bytes, b[1]), fm_format_time(t->t_compute, b[2]),
                       fm_format_time(t->t_memory, b[3]), fm_format_time(t->t_roofline, b[4]),
                       fm_format_time(t->t_paleo, b[5]),
                       p->step_roofline_s > 0 ? 100 * t->t_roofline / p->step_roofline_s : 0.0,
                       t->memory_bound ? "memory" : "compute");
                first = false;
            }
        }
    }
    printf("by phase\n  %-10s %9s %9s %10s %10s %10s %10s %10s\n", "phase", "FLOP", "bytes",
           "compute", "memory", "launch", "roofline", "paleo");
    for (int ph = 0; ph <= FM_PHASE_COUNT; ph++) {
        const struct fm_phase_time *t = ph < FM_PHASE_COUNT ? &p->total[ph] : &p->step;
        if (t->flops <= 0 && t->bytes <= 0)
            continue;
        printf("  %-10s %9s %9s %10s %10s %10s %10s %10s\n",
               ph < FM_PHASE_COUNT ? fm_phase_name((enum fm_phase)ph) : "step",
               fm_format_si(t->flops, b[0]), fm_format_si(t->bytes, b[1]), fm_format_time(t->t_compute, b[2]),
               fm_format_time(t->t_memory, b[3]), fm_format_time(t->t_launch, b[4]),
               fm_format_time(t->t_roofline, b[5]), fm_format_time(t->t_paleo, b[6]));
    }
    printf("prediction (roofline bound = compute and memory overlap | PALEO = they do not)\n");
    const char *unit = train ? "step" : "batch latency";
    printf("  %-22s %12s | %s\n", unit, fm_format_time(run->step_s[0], b[0]), fm_format_time(run->step_s[1], b[1]));
    printf("  %-22s %12.1f | %.1f\n", train ? "samples/s" : "throughput (samples/s)",
           run->samples_per_s[0], run->samples_per_s[1]);
    printf("  %-22s %12s | %s   (step FLOPs %sFLOP / (time x %sFLOP/s, %s peak))\n",
           "utilization", pct(run->utilization[0], b[0]), pct(run->utilization[1], b[1]),
           fm_format_si(run->step_flops, b[2]), fm_format_si(p->peak_ref, b[3]), cli_precision_label(&p->opts));
    if (run->dataset_size) {
        printf("  %-22s %12s | %s   (%" PRIu64 " %s of %lld; the last partial batch timed as "
               "full)\n",
               train ? "epoch" : "pass over the data", fm_format_time(run->epoch_s[0], b[0]),
               fm_format_time(run->epoch_s[1], b[1]), run->steps_per_epoch, train ? "steps" : "batches",
               (long long)run->batch);
        if (train) {
            printf("  %-22s %12s | %s   (%g epochs)\n", "training time", fm_format_time(run->total_s[0], b[0]),
                   fm_format_time(run->total_s[1], b[1]), run->epochs);
            printf("  %-22s %12s   (%.3g FLOP: forward + backward per sample x samples x "
                   "epochs + optimizer x steps)\n",
                   "training compute", fm_format_si(run->total_flops, b[0]), run->total_flops);
        }
    } else {
        printf("  (--dataset-size N adds epoch time, training time and total compute)\n");
    }
    if (dp) {
        printf("data parallel: %d GPUs, ring all-reduce of %s of gradients over %s (%s/s "
               "bidirectional, PPP %.2f): %s per step\n",
               dp->gpus, fm_format_bytes(dp->grad_bytes, b[0]), link_name, fm_format_bytes(dp->link_bw, b[1]),
               p->opts.ppp_comm, fm_format_time(dp->t_allreduce, b[2]));
        printf("  %-22s %12s | %s\n", "step, 1 GPU", fm_format_time(dp->step_1[0], b[0]),
               fm_format_time(dp->step_1[1], b[1]));
        printf("  %-22s %12s | %s   efficiency %s | %s, %.0f | %.0f samples/s\n",
               "step, not overlapped", fm_format_time(dp->step_serial[0], b[0]),
               fm_format_time(dp->step_serial[1], b[1]), pct(dp->efficiency_serial[0], b[2]),
               pct(dp->efficiency_serial[1], b[3]), dp->samples_per_s_serial[0],
               dp->samples_per_s_serial[1]);
        printf("  %-22s %12s | %s   efficiency %s | %s, %.0f | %.0f samples/s\n",
               "step, overlapped", fm_format_time(dp->step_overlap[0], b[0]),
               fm_format_time(dp->step_overlap[1], b[1]), pct(dp->efficiency_overlap[0], b[2]),
               pct(dp->efficiency_overlap[1], b[3]), dp->samples_per_s_overlap[0],
               dp->samples_per_s_overlap[1]);
        printf("  (weak scaling: each GPU runs batch %lld; efficiency = 1-GPU step / N-GPU "
               "step)\n",
               (long long)m->batch);
    }
    printf("%zu kernels (layer phases that do work); times are predictions, not measurements.\n",
           p->kernels);
}

static void print_csv(const struct fm_graph *g, const struct fm_counts *c,
                      const struct fm_prediction *p)
{
    printf("index,name,op,class,phase,precision,unit,flops,bytes,ceiling_flops,t_compute_s,"
           "t_memory_s,t_launch_s,t_roofline_s,t_paleo_s,bound\n");
    const fm_nid *order = fm_graph_topo_order(g);
    for (size_t i = 0; i < p->n_nodes; i++) {
        const struct fm_node *n = fm_graph_node(g, order[i]);
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            const struct fm_phase_time *t = &p->nodes[order[i]][ph];
            const struct fm_work *w = &c->nodes[order[i]].phase[ph];
            if (t->flops <= 0 && t->bytes <= 0)
                continue;
            printf("%zu,\"%s\",%s,%s,%s,%s,%s,%" PRIu64 ",%" PRIu64
                   ",%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%s\n",
                   i + 1, n->name, n->op_name, fm_class_name(fm_op_class(n->op)),
                   fm_phase_name((enum fm_phase)ph), fm_precision_name(t->precision),
                   t->tensor ? "tensor" : "vector", fm_work_flops(w),
                   w->bytes_read + w->bytes_written, t->peak, t->t_compute, t->t_memory,
                   t->t_launch, t->t_roofline, t->t_paleo, t->memory_bound ? "memory" : "compute");
        }
    }
    for (int ph = 0; ph <= FM_PHASE_COUNT; ph++) {
        const struct fm_phase_time *t = ph < FM_PHASE_COUNT ? &p->total[ph] : &p->step;
        printf("total,\"%s\",,,%s,,,%.0f,%.0f,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%s\n",
               ph < FM_PHASE_COUNT ? "total" : "step",
               ph < FM_PHASE_COUNT ? fm_phase_name((enum fm_phase)ph) : "all", t->flops, t->bytes,
               t->peak, t->t_compute, t->t_memory, t->t_launch, t->t_roofline, t->t_paleo,
               t->memory_bound ? "memory" : "compute");
    }
}

static void json_times(struct fm_jw *w, const char *key, const struct fm_phase_time *t)
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
    fm_jw_end(w);
}

static void json_pair(struct fm_jw *w, const char *key, const double *v)
{
    fm_jw_object(w, key, true);
    fm_jw_double(w, "roofline", v[FM_BOUND_ROOFLINE]);
    fm_jw_double(w, "paleo", v[FM_BOUND_PALEO]);
    fm_jw_end(w);
}

static void print_json(const struct fm_graph *g, const struct cli_model_opts *m,
                       const struct fm_counts *c, const struct fm_prediction *p,
                       const struct fm_run_estimate *run, const struct fm_dp_estimate *dp,
                       const char *link_name)
{
    struct fm_jw w;
    fm_jw_init(&w, stdout);
    fm_jw_object(&w, NULL, false);
    fm_jw_string(&w, "flopmeter", FM_VERSION);
    fm_jw_string(&w, "model", fm_graph_name(g));
    fm_jw_string(&w, "device", p->opts.device->name);
    fm_jw_i64(&w, "batch", m->batch);
    fm_jw_string(&w, "mode", fm_mode_name(p->mode));
    fm_jw_object(&w, "options", true);
    fm_jw_string(&w, "precision", cli_precision_label(&p->opts));
    fm_jw_double(&w, "ppp_compute", p->opts.ppp_compute);
    fm_jw_double(&w, "ppp_memory", p->opts.ppp_memory);
    fm_jw_double(&w, "ppp_comm", p->opts.ppp_comm);
    fm_jw_double(&w, "launch_overhead_us", p->opts.launch_overhead_us);
    fm_jw_end(&w);
    fm_jw_array(&w, "layers", false);
    const fm_nid *order = fm_graph_topo_order(g);
    for (size_t i = 0; i < p->n_nodes; i++) {
        const struct fm_node *n = fm_graph_node(g, order[i]);
        fm_jw_object(&w, NULL, false);
        fm_jw_string(&w, "name", n->name);
        fm_jw_string(&w, "op", n->op_name);
        fm_jw_string(&w, "class", fm_class_name(fm_op_class(n->op)));
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            const struct fm_phase_time *t = &p->nodes[order[i]][ph];
            if (t->flops > 0 || t->bytes > 0)
                json_times(&w, fm_phase_name((enum fm_phase)ph), t);
        }
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    fm_jw_object(&w, "phases", false);
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
        json_times(&w, fm_phase_name((enum fm_phase)ph), &p->total[ph]);
    fm_jw_end(&w);
    json_times(&w, "step", &p->step);
    fm_jw_u64(&w, "kernels", p->kernels);
    fm_jw_object(&w, "run", false);
    uint64_t step_flops = 0;
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
        step_flops += fm_work_flops(&c->total[ph]);
    fm_jw_u64(&w, "step_flops", step_flops);
    fm_jw_double(&w, "peak_ref_flops", p->peak_ref);
    json_pair(&w, "step_s", run->step_s);
    json_pair(&w, "samples_per_s", run->samples_per_s);
    json_pair(&w, "utilization", run->utilization);
    if (run->dataset_size) {
        fm_jw_u64(&w, "dataset_size", run->dataset_size);
        fm_jw_u64(&w, "steps_per_epoch", run->steps_per_epoch);
        fm_jw_double(&w, "epochs", run->epochs);
        json_pair(&w, "epoch_s", run->epoch_s);
        json_pair(&w, "total_s", run->total_s);
        fm_jw_double(&w, "epoch_flops", run->epoch_flops);
        fm_jw_double(&w, "total_flops", run->total_flops);
    }
    fm_jw_end(&w);
    if (dp) {
        fm_jw_object(&w, "data_parallel", false);
        fm_jw_i64(&w, "gpus", dp->gpus);
        fm_jw_string(&w, "interconnect", link_name);
        fm_jw_double(&w, "link_bw_bytes_per_s", dp->link_bw);
        fm_jw_double(&w, "grad_bytes", dp->grad_bytes);
        fm_jw_double(&w, "t_allreduce_s", dp->t_allreduce);
        json_pair(&w, "step_1gpu_s", dp->step_1);
        json_pair(&w, "step_serial_s", dp->step_serial);
        json_pair(&w, "step_overlap_s", dp->step_overlap);
        json_pair(&w, "efficiency_serial", dp->efficiency_serial);
        json_pair(&w, "efficiency_overlap", dp->efficiency_overlap);
        json_pair(&w, "samples_per_s_serial", dp->samples_per_s_serial);
        json_pair(&w, "samples_per_s_overlap", dp->samples_per_s_overlap);
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    fm_jw_finish(&w);
}

int cmd_predict(int argc, char **argv)
{
    struct cli_model_opts m;
    struct cli_analysis_opts a;
    struct predict_args pa = {0, 1.0, 1, NULL, false};
    struct cli_opt opts[CLI_MODEL_OPTS_MAX + CLI_ANALYSIS_OPTS_MAX + 8] = {0};
    int n = cli_model_opts_declare(&m, opts);
    n += cli_analysis_opts_declare(&a, opts + n,
                                   CLI_AN_DEVICE | CLI_AN_PRECISION | CLI_AN_PPP | CLI_AN_COMM);
    opts[n++] = (struct cli_opt){"dataset-size", CLI_UINT, &pa.dataset, NULL, "N",
                                 "samples per epoch: adds epoch time, training time and "
                                 "training compute",
                                 NULL, NULL};
    opts[n++] = (struct cli_opt){"epochs", CLI_DOUBLE, &pa.epochs, NULL, "E",
                                 "epochs of the training run (default 1)", NULL, NULL};
    opts[n++] = (struct cli_opt){"gpus", CLI_INT, &pa.gpus, NULL, "N",
                                 "data parallelism over N GPUs (ring all-reduce of the "
                                 "gradients; default 1)",
                                 NULL, NULL};
    opts[n++] = (struct cli_opt){"interconnect", CLI_STRING, &pa.interconnect, NULL,
                                 "nvlink2|nvlink3|nvlink4|nvlink5|pcie3|pcie4|pcie5",
                                 "the link of the all-reduce (default: the device's own)", NULL,
                                 NULL};
    opts[n++] = (struct cli_opt){"summary", CLI_FLAG, &pa.summary, NULL, NULL,
                                 "table: phase totals and the prediction only, no layers", NULL,
                                 NULL};
    const char *pos[1];
    int r = cli_parse("predict", "MODEL --device NAME [options]", description, opts, argc, argv,
                      pos, 1, 1);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    if (!(pa.epochs >= 0)) {
        fprintf(stderr, "flopmeter predict: --epochs must be >= 0\n");
        return FM_EXIT_USAGE;
    }
    if (pa.gpus > 65536) {
        fprintf(stderr, "flopmeter predict: --gpus must be at most 65536\n");
        return FM_EXIT_USAGE;
    }

    struct fm_ctx *ctx = NULL;
    if (fm_ctx_new(NULL, &ctx)) {
        fprintf(stderr, "flopmeter: out of memory\n");
        return FM_EXIT_FAIL;
    }
    struct fm_devices *devs = NULL;
    struct fm_graph *g = NULL;
    struct fm_counts *c = NULL;
    struct fm_prediction *p = NULL;
    const struct fm_device *dev = NULL;
    struct fm_predict_opts po;
    struct fm_run_estimate run;
    struct fm_dp_estimate dp;
    bool have_dp = false;
    char link_name[64] = "";
    enum fm_status st;
    if ((r = cli_devices_open(ctx, a.devices_file, &devs)))
        goto out;
    if ((r = cli_analysis_setup(ctx, &a, &m, devs, &dev, &po)))
        goto out;
    double link_bw = dev->interconnect_bw;
    snprintf(link_name, sizeof(link_name), "%s", dev->interconnect ? dev->interconnect : "?");
    if (pa.interconnect) {
        const struct fm_link *l = fm_link_find(pa.interconnect);
        if (!l) {
            fprintf(stderr, "flopmeter predict: unknown --interconnect '%s'; one of:",
                    pa.interconnect);
            for (size_t i = 0; i < fm_link_count(); i++)
                fprintf(stderr, " %s", fm_link_get(i)->name);
            fprintf(stderr, "\n");
            r = FM_EXIT_USAGE;
            goto out;
        }
        link_bw = l->bw;
        snprintf(link_name, sizeof(link_name), "%s", l->name);
    }
    if (pa.gpus > 1 && m.infer) {
        fprintf(stderr, "flopmeter predict: --gpus models data-parallel training; drop --infer\n");
        r = FM_EXIT_USAGE;
        goto out;
    }
    if ((r = cli_model_load(ctx, pos[0], &m, &g)))
        goto out;
    struct fm_count_opts co;
    cli_count_opts(&m, &co);
    if ((st = fm_count(ctx, g, &co, &c)) || (st = fm_predict(ctx, g, c, &po, &p)) ||
        (st = fm_predict_run(ctx, p, c, m.batch, (uint64_t)pa.dataset, pa.epochs, &run))) {
        r = cli_fail(ctx, st);
        goto out;
    }
    if (pa.gpus > 1) {
        st = fm_predict_data_parallel(ctx, g, c, p, m.batch, (int)pa.gpus, link_bw, po.ppp_comm,
                                      &dp);
        if (st) {
            r = cli_fail(ctx, st);
            goto out;
        }
        have_dp = true;
    }
    if (m.format == CLI_FORMAT_TABLE)
        print_table(g, &m, p, &run, have_dp ? &dp : NULL, link_name, pa.summary);
    else if (m.format == CLI_FORMAT_CSV)
        print_csv(g, c, p);
    else
        print_json(g, &m, c, p, &run, have_dp ? &dp : NULL, link_name);
    if (fflush(stdout) || ferror(stdout)) {
        fprintf(stderr, "flopmeter: could not write the output\n");
        r = FM_EXIT_FAIL;
    }
out:
    fm_prediction_free(p);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_devices_free(devs);
    fm_ctx_free(ctx);
    return r;
}
