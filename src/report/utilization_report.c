/* Utilization of a session: FLOPs / (time x peak) of a step and of an epoch by the methods of
 * Epoch AI's utilization study (theory = 3 x forward, counted, counted + optimizer), as a table,
 * CSV or JSON, and what a result above 100% means. fm_utilization did the arithmetic. */
#include "report.h"

#include <inttypes.h>
#include <string.h>

void fm_report_impossible(FILE *f)
{
    fprintf(f,
            "IMPOSSIBLE: a utilization above 100%% means the inputs do not describe the same work. "
            "Likely causes:\n  - the peak is of the wrong precision: the run used faster units "
            "(TF32, FP16 or BF16 tensor cores) than\n    fm_session_opts.precision says; PyTorch "
            "on Ampere+ runs FP32 convolutions on TF32 (fm_session_opts.precision "
            "torch-default);\n  - a MAC/FLOP mix-up: a FLOP count that is really MACs (x2 too high "
            "here would mean the time or peak\n    counts an FMA as 1 FLOP), or a peak quoted in "
            "FMA/s;\n  - the time excludes work: GPU kernel time of part of the step, an "
            "asynchronous launch timed without\n    synchronizing, a step time without backward or "
            "optimizer, or a batch different from fm_zoo_opts.batch.\n");
}

static void print_table(FILE *f, const struct fm_session *s)
{
    const struct fm_utilization *u = &s->util;
    int64_t batch = s->batch;
    bool train = s->counts->mode == FM_MODE_TRAIN, given = s->opts.peak > 0;
    char b[6][FM_FORMAT_SIZE];
    fprintf(f, "%s on %s | batch %lld, %s | peak %sFLOP/s (%s%s)\n", fm_graph_name(s->graph),
            s->device->name, (long long)batch, train ? "training step" : "inference (forward only)",
            fm_format_si(u->peak, b[0]),
            given ? "fm_session_opts.peak" : fm_session_precision_label(s),
            given ? "" : ", the conv/matmul ceiling");
    fprintf(f, "  %-20s %14s %12s %16s %12s\n", "method", "FLOP/step", "per step", "FLOP/epoch",
            "per epoch");
    for (int k = 0; k < FM_UTIL_COUNT; k++) {
        char s1[32] = "-", s2[32] = "-", s3[32] = "-";
        if (u->step_s > 0)
            snprintf(s1, sizeof(s1), "%.1f%%", 100 * u->step_util[k]);
        if (u->dataset_size)
            fm_format_si(u->epoch_flops[k], s3);
        if (u->epoch_s > 0)
            snprintf(s2, sizeof(s2), "%.1f%%", 100 * u->epoch_util[k]);
        fprintf(f, "  %-20s %14s %12s %16s %12s\n", fm_util_method_name((enum fm_util_method)k),
                fm_format_si(u->step_flops[k], b[1]), s1, s3, s2);
    }
    if (u->step_s > 0)
        fprintf(f, "step time %s -> %.1f samples/s\n", fm_format_time(u->step_s, b[2]),
                (double)batch / u->step_s);
    if (u->epoch_s > 0)
        fprintf(f, "epoch time %s for %" PRIu64 " samples (%" PRIu64 " steps of %lld) -> %.1f "
                "samples/s\n",
                fm_format_time(u->epoch_s, b[3]), u->dataset_size, u->steps_per_epoch,
                (long long)batch, (double)u->dataset_size / u->epoch_s);
    fprintf(f, "convention: utilization = FLOPs / (time x peak); FLOP = 2 x MAC + other ops, and "
            "the peak counts an FMA as 2 FLOPs.\n%s",
            train ? "theory = 3 x forward FLOPs; counted = forward + input gradients + weight "
                    "gradients as counted.\n"
                  : "inference: every method is the forward FLOPs.\n");
    if (u->impossible)
        fm_report_impossible(f);
}

static void print_csv(FILE *f, const struct fm_utilization *u)
{
    fprintf(f, "method,step_flops,step_s,step_utilization,epoch_flops,epoch_s,epoch_utilization,"
            "peak_flops,impossible\n");
    for (int k = 0; k < FM_UTIL_COUNT; k++)
        fprintf(f, "%s,%.17g,%.9g,%.9g,%.17g,%.9g,%.9g,%.9g,%d\n",
                fm_util_method_name((enum fm_util_method)k), u->step_flops[k], u->step_s,
                u->step_util[k], u->epoch_flops[k], u->epoch_s, u->epoch_util[k], u->peak,
                u->impossible ? 1 : 0);
}

static void print_json(FILE *f, const struct fm_session *s)
{
    const struct fm_utilization *u = &s->util;
    struct fm_jw w;
    fm_jw_init(&w, f);
    fm_jw_object(&w, NULL, false);
    fm_jw_string(&w, "flopmeter", FM_VERSION);
    fm_jw_string(&w, "model", fm_graph_name(s->graph));
    fm_jw_string(&w, "device", s->device->name);
    fm_jw_i64(&w, "batch", s->batch);
    fm_jw_string(&w, "mode", fm_mode_name(s->counts->mode));
    fm_jw_string(&w, "precision", s->opts.peak > 0 ? "peak" : fm_session_precision_label(s));
    fm_jw_double(&w, "peak_flops", u->peak);
    fm_jw_string(&w, "convention", "utilization = FLOPs / (time x peak); FLOP = 2 x MAC + "
                                   "other ops");
    fm_jw_double(&w, "step_s", u->step_s);
    fm_jw_double(&w, "epoch_s", u->epoch_s);
    fm_jw_u64(&w, "dataset_size", u->dataset_size);
    fm_jw_u64(&w, "steps_per_epoch", u->steps_per_epoch);
    fm_jw_object(&w, "methods", false);
    for (int k = 0; k < FM_UTIL_COUNT; k++) {
        fm_jw_object(&w, fm_util_method_name((enum fm_util_method)k), true);
        fm_jw_double(&w, "step_flops", u->step_flops[k]);
        if (u->step_s > 0)
            fm_jw_double(&w, "step_utilization", u->step_util[k]);
        if (u->dataset_size)
            fm_jw_double(&w, "epoch_flops", u->epoch_flops[k]);
        if (u->epoch_s > 0)
            fm_jw_double(&w, "epoch_utilization", u->epoch_util[k]);
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    fm_jw_bool(&w, "impossible", u->impossible);
    fm_jw_end(&w);
    fm_jw_finish(&w);
}

enum fm_status fm_report_utilization(FILE *f, const struct fm_session *s,
                                     const struct fm_report_opts *opts)
{
    if (!s->have_util || !s->device)
        return fm_report_lacks(s->ctx, "utilization", "a device and a measured time");
    enum fm_format format = opts ? opts->format : FM_FORMAT_TABLE;
    if (format == FM_FORMAT_TABLE)
        print_table(f, s);
    else if (format == FM_FORMAT_CSV)
        print_csv(f, &s->util);
    else
        print_json(f, s);
    return fm_report_end(s->ctx, f);
}
