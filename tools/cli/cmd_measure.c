/* flopmeter measure MODEL: runs real training (or inference) steps on the CPU (oneDNN) or a
 * CUDA GPU and reports per-layer forward and backward times, the step time, achieved FLOP/s,
 * utilization against a peak (--peak / --spec, a GPU's datasheet, or a short probe),
 * and each layer's predicted time (fm_predict) next to the measured one. Options for both
 * backends are declared here; the backends check what they can run. */
#include "cli_analysis.h"
#include "../../src/backend/backend.h"
#include "../../src/core/jsonw.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char description[] =
    "Runs --warmup steps (discarded) and --steps timed steps of MODEL on --device and reports:\n"
    "  - per layer: forward and backward time (input and weight gradients apart where the\n"
    "    backend runs them apart), the optimizer's share, achieved FLOP/s, and the time\n"
    "    fm_predict gives on the device (roofline bound) with the signed error\n"
    "    (predicted - measured) / measured;\n"
    "  - the step time (median, min, max), samples/s, counted FLOPs of the step / median step\n"
    "    time = achieved FLOP/s, and utilization against the peak;\n"
    "  - training: the loss of the first and last timed step.\n"
    "A training step is forward, cross-entropy loss, backward (input and weight gradients) and\n"
    "an SGD update with momentum 0.9, lr 0.01 (PyTorch's semantics); inference is forward only\n"
    "with BatchNorm on running statistics. Weights, inputs and labels are random (never zeros),\n"
    "drawn from --seed exactly as every flopmeter backend draws them.\n\n"
    "The peak: --peak FLOP/s, or --spec NAME (a device from the table or --devices FILE, which\n"
    "also gives the prediction its bandwidth). Without either: on a GPU, the device-table entry\n"
    "matching the name CUDA reports (its datasheet conv/matmul ceiling at --precision); on the\n"
    "CPU (or a GPU the table lacks), a short probe runs first (flopmeter probe) and its median\n"
    "all-thread FMA or GEMM rate is the peak. The report says which peak it used.\n"
    "FLOP = 2 x MAC + other ops, on both sides.\n\n"
    "--epoch-samples N also times an epoch: ceil(N / batch) steps of --batch (the last batch\n"
    "filled up), reported with Epoch AI's methods (seed 000): 'batch' (one step), 'epoch', and\n"
    "'one' when --batch is 1. Per-layer timing synchronizes after every layer; the step time\n"
    "includes that small cost (--no-per-layer removes it).\n\n"
    "CPU: oneDNN primitives, --threads (default: all CPUs), fp32. CUDA: cuDNN and cuBLASLt,\n"
    "--precision tf32|fp16|bf16 (mixed precision with fp32 master weights), --graph (capture\n"
    "the step in a CUDA graph), --channels-last.\n\n"
    "examples:\n"
    "  flopmeter measure resnet18 --batch 32\n"
    "  flopmeter measure mobilenet_v2 --batch 8 --infer --threads 2 --format json\n"
    "  flopmeter measure resnet50 --device cuda --batch 128 --precision bf16 --graph\n"
    "  flopmeter measure resnet18 --batch 64 --epoch-samples 50000 --spec 'AMD EPYC 9654'";

#define PRECISION_CHOICES "fp32|tf32|fp16|bf16"
static const enum fm_precision precisions[] = {FM_PREC_FP32, FM_PREC_TF32, FM_PREC_FP16,
                                               FM_PREC_BF16};

/* ---- progress bar (stderr, only when it is a terminal) ---- */

struct bar {
    const char *model;
    const char *phase;      /* "step" or "epoch" */
};

static void progress(void *user, const char *what, int done, int total)
{
    const struct bar *b = user;
    if (done >= total && strcmp(what, "done") == 0) {
        fprintf(stderr, "\r%78s\r", "");
        fflush(stderr);
        return;
    }
    enum { WIDTH = 30 };
    int fill = total > 0 ? done * WIDTH / total : 0;
    char bar[WIDTH + 1];
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[WIDTH] = '\0';
    fprintf(stderr, "\r%.20s %s: [%s] %d/%d %-12s", b->model, b->phase, bar, done, total, what);
    fflush(stderr);
}

static void probe_progress(void *user, const char *what, int done, int total)
{
    (void)user;
    if (done < total)
        fprintf(stderr, "\rprobing the peak: %-32s (%d/%d)", what, done + 1, total);
    else
        fprintf(stderr, "\r%70s\r", "");
    fflush(stderr);
}

/* ---- what the report needs ---- */

struct peak_info {
    double flops;            /* 0: unknown, no utilization */
    char source[192];
};

struct layer_row {
    double ms[FM_PHASE_COUNT];
    double measured_ms, predicted_ms, flops;
    bool bwd_split, predicted;
};

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
    const struct fm_counts *c;
    const struct fm_measurement *m;
    const struct fm_measurement *epoch;      /* NULL without --epoch-samples */
    const struct fm_prediction *pred;        /* NULL without a device */
    const char *pred_device;
    const struct peak_info *peak;
    struct layer_row *rows;                  /* NULL without per-layer timing */
    int64_t batch;
    int warmup;
    bool train;
    struct fm_utilization util;              /* step (and epoch) */
    bool have_util;
    uint64_t epoch_samples, epoch_steps;
    double epoch_s;
};

static void print_table(const struct report *r)
{
    const struct fm_measurement *m = r->m;
    char b[8][32];
    char thr[32] = "";
    if (m->threads > 0)
        snprintf(thr, sizeof(thr), ", %d thread%s", m->threads, m->threads == 1 ? "" : "s");
    printf("%s | batch %lld, %s | %s (%s%s) | %s\n", fm_graph_name(r->g), (long long)r->batch,
           r->train ? "training step: forward, loss, backward, SGD" : "inference (forward only)",
           m->device_name, m->backend, thr, fm_precision_name(m->precision));
    if (r->rows) {
        printf("  %3s  %-34s %-15s %9s %9s %9s %9s %10s %10s %7s\n", "#", "layer", "op",
               "fwd ms", "bwd ms", "opt ms", "total ms", "FLOP/s", "pred ms", "error");
        const fm_nid *topo = fm_graph_topo_order(r->g);
        for (size_t i = 0; i < m->n_nodes; i++) {
            fm_nid id = topo[i];
            const struct fm_node *n = fm_graph_node(r->g, id);
            const struct layer_row *row = &r->rows[id];
            char bwd[40];
            double bw = row->ms[FM_PHASE_BWD_DATA] + row->ms[FM_PHASE_BWD_WEIGHT];
            ms_text(bw, bwd);
            char rate[32] = "-", pred[32] = "-", err[32] = "-";
            if (row->flops > 0 && row->measured_ms > 0)
                snprintf(rate, sizeof(rate), "%sF/s", fm_format_si(row->flops / (row->measured_ms * 1e-3), b[0]));
            if (row->predicted) {
                ms_text(row->predicted_ms, pred);
                if (row->measured_ms > 0 && row->predicted_ms > 0)
                    pct((row->predicted_ms - row->measured_ms) / row->measured_ms, err);
            }
            printf("  %3zu  %-34.34s %-15.15s %9s %9s %9s %9s %10s %10s %7s\n", i + 1, n->name,
                   n->op_name, ms_text(row->ms[FM_PHASE_FWD], b[1]), bwd,
                   ms_text(row->ms[FM_PHASE_OPTIMIZER], b[2]), ms_text(row->measured_ms, b[3]),
                   rate, pred, err);
        }
        double sum = 0, psum = 0;
        for (size_t i = 0; i < m->n_nodes; i++) {
            sum += r->rows[i].measured_ms;
            psum += r->rows[i].predicted_ms;
        }
        printf("  the layers' medians add up to %s ms, the step's median is %s ms%s%s%s\n",
               ms_text(sum, b[0]), ms_text(m->step_ms_median, b[1]),
               r->pred ? "; predicted: " : "", r->pred ? ms_text(psum, b[2]) : "",
               r->pred ? " ms" : "");
        if (r->train)
            printf("  bwd ms: input and weight gradients together (per-phase figures in --format "
                   "csv/json); pred: roofline bound on %s, error = (pred - measured) / measured\n",
                   r->pred_device ? r->pred_device : "?");
    }
    double flops = step_flops(r->c);
    double step_s = m->step_ms_median * 1e-3;
    printf("step      %s ms median (min %s, max %s) over %zu steps after %d warm-up -> %.1f "
           "samples/s\n",
           ms_text(m->step_ms_median, b[0]), ms_text(m->step_ms_min, b[1]),
           ms_text(m->step_ms_max, b[2]), m->n_steps, r->warmup, (double)r->batch / step_s);
    printf("work      %sFLOP per step counted (%s)\n", fm_format_si(flops, b[0]),
           r->train ? "forward + input and weight gradients + SGD update" : "forward");
    printf("achieved  %sFLOP/s\n", fm_format_si(flops / step_s, b[0]));
    if (r->peak->flops > 0)
        printf("peak      %sFLOP/s: %s\n", fm_format_si(r->peak->flops, b[0]), r->peak->source);
    else
        printf("peak      unknown (%s): no utilization\n", r->peak->source);
    if (r->have_util) {
        const struct fm_utilization *u = &r->util;
        const char *batch_name = r->batch == 1 ? "one" : "batch";
        printf("utilization (Epoch AI's methods, seed 000)\n");
        printf("  %-20s %12s", "FLOPs", batch_name);
        if (r->epoch)
            printf(" %12s", "epoch");
        printf("\n");
        for (int k = 0; k < FM_UTIL_COUNT; k++) {
            if (!r->train && k > FM_UTIL_THEORY)
                break;
            char s1[32], s2[32];
            snprintf(s1, sizeof(s1), "%.1f%%", 100 * u->step_util[k]);
            printf("  %-20s %12s", fm_util_method_name((enum fm_util_method)k), s1);
            if (r->epoch) {
                snprintf(s2, sizeof(s2), "%.1f%%", 100 * u->epoch_util[k]);
                printf(" %12s", s2);
            }
            printf("\n");
        }
        if (r->train)
            printf("  theory = 3 x forward FLOPs; counted = forward + backward as counted; "
                   "+optimizer adds the SGD update\n");
        if (u->impossible)
            printf("  a utilization above 100%% is impossible: the peak is too low (probe on a "
                   "busy machine?) or of another precision\n");
    }
    if (r->epoch)
        printf("epoch     %s for %" PRIu64 " samples (%" PRIu64 " steps of %lld%s) -> %.1f "
               "samples/s\n",
               fm_format_time(r->epoch_s, b[0]), r->epoch_steps * (uint64_t)r->batch, r->epoch_steps,
               (long long)r->batch,
               r->epoch_steps * (uint64_t)r->batch > r->epoch_samples ? ", the last one filled up"
                                                                       : "",
               (double)(r->epoch_steps * (uint64_t)r->batch) / r->epoch_s);
    if (r->train)
        printf("loss      %.4f (first timed step) -> %.4f (last)\n", m->loss_first, m->loss_last);
}

static void print_csv(const struct report *r)
{
    const struct fm_measurement *m = r->m;
    printf("layer,op,fwd_ms,bwd_data_ms,bwd_weight_ms,optimizer_ms,bwd_split,measured_ms,flops,"
           "predicted_ms,error\n");
    if (r->rows) {
        const fm_nid *topo = fm_graph_topo_order(r->g);
        for (size_t i = 0; i < m->n_nodes; i++) {
            fm_nid id = topo[i];
            const struct fm_node *n = fm_graph_node(r->g, id);
            const struct layer_row *row = &r->rows[id];
            printf("%s,%s,%.6f,%.6f,%.6f,%.6f,%d,%.6f,%.17g,", n->name, n->op_name,
                   row->ms[FM_PHASE_FWD], row->ms[FM_PHASE_BWD_DATA],
                   row->ms[FM_PHASE_BWD_WEIGHT], row->ms[FM_PHASE_OPTIMIZER], row->bwd_split,
                   row->measured_ms, row->flops);
            if (row->predicted && row->measured_ms > 0 && row->predicted_ms > 0)
                printf("%.6f,%.6f\n", row->predicted_ms,
                       (row->predicted_ms - row->measured_ms) / row->measured_ms);
            else
                printf(",\n");
        }
    }
    double flops = step_flops(r->c), step_s = m->step_ms_median * 1e-3;
    printf("step,%s,%.6f,%.6f,%.6f,,,%.6f,%.17g,,\n", r->train ? "train" : "infer",
           m->step_ms_median, m->step_ms_min, m->step_ms_max, m->step_ms_median, flops);
    printf("# achieved_flops=%.6g peak_flops=%.6g utilization_counted=%.6g samples_per_s=%.6g\n",
           flops / step_s, r->peak->flops,
           r->peak->flops > 0 ? flops / step_s / r->peak->flops : NAN,
           (double)r->batch / step_s);
}

static void print_json(const struct report *r)
{
    const struct fm_measurement *m = r->m;
    struct fm_jw w;
    fm_jw_init(&w, stdout);
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
    if (r->peak->flops > 0)
        fm_jw_double(&w, "flops", r->peak->flops);
    else
        fm_jw_null(&w, "flops");
    fm_jw_string(&w, "source", r->peak->source);
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
        fm_jw_object(&w, "loss", true);
        fm_jw_double(&w, "first", m->loss_first);
        fm_jw_double(&w, "last", m->loss_last);
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
            fm_jw_double(&w, "measured_ms", row->measured_ms);
            fm_jw_double(&w, "flops", row->flops);
            if (row->predicted) {
                fm_jw_double(&w, "predicted_ms", row->predicted_ms);
                if (row->measured_ms > 0 && row->predicted_ms > 0)
                    fm_jw_double(&w, "error", (row->predicted_ms - row->measured_ms) /
                                                  row->measured_ms);
            }
            fm_jw_end(&w);
        }
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    fm_jw_finish(&w);
}

/* ---- the command ---- */

/* An imported classifier has no loss, and a training step needs one: a cross-entropy on its
 * single (batch, classes) output against random labels, as the built-in models get. Any other
 * graph is left as it is (the backend then says what is missing). */
static enum fm_status add_loss_if_missing(struct fm_ctx *ctx, struct fm_graph *g)
{
    size_t nt = fm_graph_tensor_count(g), nn = fm_graph_node_count(g);
    fm_tid out = FM_NONE;
    int candidates = 0;
    for (size_t i = 0; i < nn; i++) {
        if (fm_graph_node(g, (fm_nid)i)->op == FM_OP_CROSS_ENTROPY)
            return FM_OK;
    }
    for (size_t t = 0; t < nt; t++) {
        const struct fm_tensor *ft = fm_graph_tensor(g, (fm_tid)t);
        if (ft->producer == FM_NONE || ft->shape.rank != 2 || !fm_dtype_is_float(ft->dtype))
            continue;
        bool used = false;
        for (size_t i = 0; i < nn && !used; i++) {
            const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
            for (int k = 0; k < n->n_in; k++)
                used = used || n->in[k] == (fm_tid)t;
        }
        if (!used) {
            out = (fm_tid)t;
            candidates++;
        }
    }
    if (candidates != 1)
        return FM_OK;
    struct fm_shape ls = {1, {fm_graph_tensor(g, out)->shape.dims[0]}};
    const char *lname = fm_graph_find_tensor(g, "labels") == FM_NONE ? "labels" : "measure.labels";
    const char *oname = fm_graph_find_tensor(g, "loss") == FM_NONE ? "loss" : "measure.loss";
    fm_tid labels, loss, in[2] = {out, FM_NONE};
    enum fm_status st = fm_graph_add_tensor(g, lname, FM_ROLE_INPUT, FM_DTYPE_INT64, &ls, &labels);
    in[1] = labels;
    if (!st)
        st = fm_graph_add_node(g, FM_OP_CROSS_ENTROPY, oname, NULL, in, 2, &oname, 1, &loss);
    if (!st)
        st = fm_graph_finalize(g);
    (void)ctx;
    return st;
}

static bool is_gpu(const char *device)
{
    return strcmp(device, "gpu") == 0 || strncmp(device, "cuda", 4) == 0;
}

static int probe_peak(struct fm_ctx *ctx, const char *device, int threads, enum fm_precision prec,
                      struct fm_probe_result *probe, struct fm_device *probed,
                      const struct fm_device **dev, struct peak_info *peak);

/* After a GPU run without --spec or --peak: the device-table entry whose names fit the GPU's
 * own name gives the peak (its conv/matmul ceiling at the precision) and the prediction's
 * device; a GPU the table lacks falls back to a short probe, and the report says which. */
static int match_gpu(struct fm_ctx *ctx, const char *device, const char *devices_file,
                     const char *gpu_name, enum fm_precision prec, struct fm_devices **devs,
                     struct fm_probe_result *probe, struct fm_device *probed,
                     const struct fm_device **dev, struct peak_info *peak)
{
    int r;
    if (!*devs && (r = cli_devices_open(ctx, devices_file, devs)))
        return r;
    if (fm_devices_match(ctx, *devs, gpu_name, dev) == FM_OK) {
        peak->flops = fm_device_peak(*dev, FM_CLASS_CONV, prec);
        snprintf(peak->source, sizeof(peak->source),
                 "%s datasheet, the conv/matmul ceiling at %s (matched from the GPU's name "
                 "'%.60s'; --spec or --peak to choose another)",
                 (*dev)->name, fm_precision_name(prec), gpu_name);
        return 0;
    }
    fprintf(stderr, "flopmeter measure: %s; using a short probe for the peak\n", fm_ctx_error(ctx));
    return probe_peak(ctx, device, 0, prec, probe, probed, dev, peak);
}

/* The peak and (when known) the device the prediction uses: --peak, --spec, a GPU's datasheet
 * (matched after the run) or a probe. */
static int find_peak(struct fm_ctx *ctx, const char *device, const char *spec, double peak_given,
                     int threads, enum fm_precision prec, const struct fm_devices *devs,
                     struct fm_probe_result *probe, struct fm_device *probed,
                     const struct fm_device **dev, struct peak_info *peak)
{
    *dev = NULL;
    if (spec) {
        enum fm_status st = fm_devices_find(ctx, devs, spec, dev);
        if (st) {
            fprintf(stderr, "flopmeter measure: --spec: %s\n", fm_ctx_error(ctx));
            return FM_EXIT_USAGE;
        }
        peak->flops = fm_device_peak(*dev, FM_CLASS_CONV, prec);
        snprintf(peak->source, sizeof(peak->source), "%s, the conv/matmul ceiling at %s (--spec)",
                 (*dev)->name, fm_precision_name(prec));
    }
    if (peak_given > 0) {
        peak->flops = peak_given;
        snprintf(peak->source, sizeof(peak->source), "--peak");
    }
    if (spec || peak_given > 0)
        return 0;
    if (is_gpu(device)) {
        /* a GPU is matched to the device table by the name CUDA reports, after the run */
        snprintf(peak->source, sizeof(peak->source), "pending: the datasheet of the GPU");
        return 0;
    }
    return probe_peak(ctx, device, threads, prec, probe, probed, dev, peak);
}

/* The peak from a short probe of the device (all-thread FMA or GEMM, whichever is higher). */
static int probe_peak(struct fm_ctx *ctx, const char *device, int threads, enum fm_precision prec,
                      struct fm_probe_result *probe, struct fm_device *probed,
                      const struct fm_device **dev, struct peak_info *peak)
{
    struct fm_probe_opts po;
    fm_probe_opts_init(&po);
    po.device = device;
    po.threads = threads;
    po.repetitions = 3;
    po.seconds = 0.1;
    if (isatty(2))
        po.progress = probe_progress;
    enum fm_status st = fm_probe(ctx, &po, probe);
    if (st) {
        /* no probe (a build without it, or a busy device): measure anyway, say why */
        snprintf(peak->source, sizeof(peak->source), "the probe failed: %.150s",
                 fm_ctx_error(ctx));
        return 0;
    }
    if (fm_probe_to_device(probe, probed) == FM_OK)
        *dev = probed;
    enum fm_precision p = prec == FM_PREC_TF32 ? FM_PREC_FP32 : prec;
    bool gemm = probe->gemm[prec].median > probe->fma_all[p].median;
    peak->flops = gemm ? probe->gemm[prec].median : probe->fma_all[p].median;
    snprintf(peak->source, sizeof(peak->source),
             "a short probe of this device: median %s %s with %d thread%s (flopmeter probe for "
             "more repetitions)",
             fm_precision_name(gemm ? prec : p), gemm ? "GEMM" : "FMA", probe->threads,
             probe->threads == 1 ? "" : "s");
    return 0;
}

int cmd_measure(int argc, char **argv)
{
    struct cli_model_opts mo;
    struct cli_analysis_opts ao;
    const char *device = "cpu", *spec = NULL;
    int64_t steps = 10, warmup = 3, threads = 0, epoch_samples = 0, seed = 1;
    double peak_given = 0;
    int precision = 0;
    bool graph = false, channels_last = false, no_per_layer = false;
    struct cli_opt opts[CLI_MODEL_OPTS_MAX + CLI_ANALYSIS_OPTS_MAX + 16] = {0};
    int n = cli_model_opts_declare(&mo, opts);
    n += cli_analysis_opts_declare(&ao, opts + n, CLI_AN_PPP);
    opts[n++] = (struct cli_opt){"device", CLI_STRING, &device, NULL, "cpu|cuda|cuda:N",
                                 "where to run (default cpu)", NULL, NULL};
    opts[n++] = (struct cli_opt){"steps", CLI_INT, &steps, NULL, "S",
                                 "timed steps (default 10)", NULL, NULL};
    opts[n++] = (struct cli_opt){"warmup", CLI_UINT, &warmup, NULL, "W",
                                 "steps run first and discarded (default 3)", NULL, NULL};
    opts[n++] = (struct cli_opt){"threads", CLI_UINT, &threads, NULL, "T",
                                 "CPU threads (default 0: all CPUs)", NULL, NULL};
    opts[n++] = (struct cli_opt){"precision", CLI_CHOICE, &precision, PRECISION_CHOICES, NULL,
                                 "compute precision (default fp32; tf32/fp16/bf16: CUDA, mixed "
                                 "precision with fp32 master weights)",
                                 NULL, NULL};
    opts[n++] = (struct cli_opt){"graph", CLI_FLAG, &graph, NULL, NULL,
                                 "CUDA: capture the whole step in a CUDA graph", NULL, NULL};
    opts[n++] = (struct cli_opt){"channels-last", CLI_FLAG, &channels_last, NULL, NULL,
                                 "CUDA: NHWC layouts", NULL, NULL};
    opts[n++] = (struct cli_opt){"epoch-samples", CLI_UINT, &epoch_samples, NULL, "N",
                                 "also time an epoch of N samples (ceil(N/batch) steps)", NULL,
                                 NULL};
    opts[n++] = (struct cli_opt){"peak", CLI_DOUBLE, &peak_given, NULL, "FLOPS",
                                 "peak FLOP/s for utilization (default: a short probe)", NULL,
                                 NULL};
    opts[n++] = (struct cli_opt){"spec", CLI_STRING, &spec, NULL, "DEVICE",
                                 "a device of the table or --devices FILE for the peak and the "
                                 "prediction",
                                 NULL, NULL};
    opts[n++] = (struct cli_opt){"seed", CLI_UINT, &seed, NULL, "N",
                                 "seed of weights, inputs and labels (default 1)", NULL, NULL};
    opts[n++] = (struct cli_opt){"no-per-layer", CLI_FLAG, &no_per_layer, NULL, NULL,
                                 "time only whole steps (no synchronization per layer)", NULL,
                                 NULL};
    const char *pos[1];
    int r = cli_parse("measure", "MODEL [options]", description, opts, argc, argv, pos, 1, 1);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    if (mo.optimizer != FM_OPTIM_SGD) {
        fprintf(stderr, "flopmeter measure: the measured step uses SGD with momentum; --optimizer "
                        "%s is for count/predict only\n",
                        mo.optimizer == FM_OPTIM_ADAM ? "adam" : "none");
        return FM_EXIT_USAGE;
    }
    if (steps > 100000 || warmup > 100000 || threads > 4096) {
        fprintf(stderr, "flopmeter measure: --steps and --warmup at most 100000, --threads at "
                        "most 4096\n");
        return FM_EXIT_USAGE;
    }
    if (peak_given < 0) {
        fprintf(stderr, "flopmeter measure: --peak must be positive FLOP/s (e.g. 1.5e11)\n");
        return FM_EXIT_USAGE;
    }
    if (strcmp(device, "cpu") != 0 && strcmp(device, "gpu") != 0 && strncmp(device, "cuda", 4) != 0) {
        fprintf(stderr, "flopmeter measure: --device %s: use cpu, cuda or cuda:N\n", device);
        return FM_EXIT_USAGE;
    }
    if (!(ao.ppp_compute > 0 && ao.ppp_compute <= 1 && ao.ppp_memory > 0 && ao.ppp_memory <= 1)) {
        fprintf(stderr, "flopmeter measure: --ppp-compute and --ppp-memory must be in (0, 1]\n");
        return FM_EXIT_USAGE;
    }

    struct fm_ctx *ctx = NULL;
    if (fm_ctx_new(NULL, &ctx)) {
        fprintf(stderr, "flopmeter: out of memory\n");
        return FM_EXIT_FAIL;
    }
    struct fm_graph *g = NULL;
    struct fm_counts *c = NULL;
    struct fm_devices *devs = NULL;
    struct fm_measurement *m = NULL, *em = NULL;
    struct fm_prediction *pred = NULL;
    struct fm_probe_result *probe = NULL;
    struct layer_row *rows = NULL;
    struct fm_device probed;
    const struct fm_device *dev = NULL;
    struct peak_info peak = {0, ""};
    enum fm_status st;
    enum fm_precision prec = precisions[precision];
    if ((r = cli_model_load(ctx, pos[0], &mo, &g)))
        goto out;
    struct fm_count_opts co;
    cli_count_opts(&mo, &co);
    if (co.mode == FM_MODE_TRAIN && (st = add_loss_if_missing(ctx, g))) {
        r = cli_fail(ctx, st);
        goto out;
    }
    if ((st = fm_count(ctx, g, &co, &c))) {
        r = cli_fail(ctx, st);
        goto out;
    }
    bool train = co.mode == FM_MODE_TRAIN;
    if (spec && (r = cli_devices_open(ctx, ao.devices_file, &devs)))
        goto out;
    probe = fm_alloc(ctx, sizeof(*probe));
    if (!probe) {
        r = cli_fail(ctx, fm_error(ctx, FM_ERR_NOMEM, "out of memory"));
        goto out;
    }
    if ((r = find_peak(ctx, device, spec, peak_given, (int)threads, prec, devs, probe, &probed,
                       &dev, &peak)))
        goto out;

    struct fm_measure_opts o;
    fm_measure_opts_init(&o);
    o.device = device;
    o.mode = co.mode;
    o.precision = prec;
    o.warmup = (int)warmup;
    o.steps = (int)steps;
    o.threads = (int)threads;
    o.per_layer = !no_per_layer;
    o.channels_last = channels_last;
    o.cuda_graph = graph;
    o.seed = (uint64_t)seed;
    struct bar bar = {fm_graph_name(g), "steps"};
    if (isatty(2)) {
        o.progress = progress;
        o.progress_user = &bar;
    }
    if ((st = fm_measure(ctx, g, &o, &m))) {
        r = cli_fail(ctx, st);
        goto out;
    }
    if (is_gpu(device) && !spec && !(peak_given > 0) &&
        (r = match_gpu(ctx, device, ao.devices_file, m->device_name, prec, &devs, probe, &probed,
                       &dev, &peak)))
        goto out;
    struct report rep = {0};
    rep.g = g;
    rep.c = c;
    rep.m = m;
    rep.peak = &peak;
    rep.batch = mo.batch;
    rep.warmup = (int)warmup;
    rep.train = train;
    if (epoch_samples > 0) {
        uint64_t esteps = ((uint64_t)epoch_samples + (uint64_t)mo.batch - 1) / (uint64_t)mo.batch;
        if (esteps > 1000000) {
            fprintf(stderr, "flopmeter measure: --epoch-samples gives %" PRIu64 " steps; at most "
                            "1000000\n", esteps);
            r = FM_EXIT_USAGE;
            goto out;
        }
        o.steps = (int)esteps;
        o.per_layer = false;
        bar.phase = "epoch";
        if ((st = fm_measure(ctx, g, &o, &em))) {
            r = cli_fail(ctx, st);
            goto out;
        }
        double total = 0;
        for (size_t i = 0; i < em->n_steps; i++)
            total += em->step_ms[i];
        rep.epoch = em;
        rep.epoch_steps = esteps;
        rep.epoch_samples = (uint64_t)epoch_samples;
        rep.epoch_s = total * 1e-3;
    }
    if (peak.flops > 0) {
        /* an epoch of the samples actually run: whole batches */
        st = fm_utilization(ctx, c, mo.batch, peak.flops, m->step_ms_median * 1e-3, rep.epoch_s,
                            rep.epoch ? rep.epoch_steps * (uint64_t)mo.batch : 0, &rep.util);
        if (st) {
            r = cli_fail(ctx, st);
            goto out;
        }
        rep.have_util = true;
    }
    if (dev) {
        struct fm_predict_opts po;
        fm_predict_opts_init(&po);
        po.device = dev;
        po.precision = prec;
        po.ppp_compute = ao.ppp_compute;
        po.ppp_memory = ao.ppp_memory;
        po.launch_overhead_us = ao.launch_us;
        if ((st = fm_predict(ctx, g, c, &po, &pred))) {
            r = cli_fail(ctx, st);
            goto out;
        }
        rep.pred = pred;
        rep.pred_device = dev->name;
    }
    if (m->nodes) {
        rows = fm_alloc(ctx, sizeof(*rows) * (m->n_nodes + 1));
        if (!rows) {
            r = cli_fail(ctx, fm_error(ctx, FM_ERR_NOMEM, "out of memory"));
            goto out;
        }
        for (size_t i = 0; i < m->n_nodes; i++) {
            struct layer_row *row = &rows[i];
            for (int p = 0; p < FM_PHASE_COUNT; p++) {
                row->ms[p] = m->nodes[i].ms[p];
                row->measured_ms += m->nodes[i].ms[p];
                if (pred)
                    row->predicted_ms += pred->nodes[i][p].t_roofline * 1e3;
            }
            row->bwd_split = m->nodes[i].bwd_split;
            row->predicted = pred != NULL;
            row->flops = node_flops(c, i);
        }
        rep.rows = rows;
    }
    if (mo.format == CLI_FORMAT_TABLE)
        print_table(&rep);
    else if (mo.format == CLI_FORMAT_CSV)
        print_csv(&rep);
    else
        print_json(&rep);
    if (fflush(stdout) || ferror(stdout)) {
        fprintf(stderr, "flopmeter: could not write the output\n");
        r = FM_EXIT_FAIL;
    }
out:
    fm_dealloc(ctx, rows);
    fm_dealloc(ctx, probe);
    fm_prediction_free(pred);
    fm_measurement_free(m);
    fm_measurement_free(em);
    fm_counts_free(c);
    fm_devices_free(devs);
    fm_graph_free(g);
    fm_ctx_free(ctx);
    return r;
}
