/* A PyTorch profiler trace read by fm_trace_read: its steps, the time per op and per op class,
 * GPU kernel time, the profiler's FLOPs and, with a model, utilization by Epoch AI's counting
 * and profiler methods (fm_trace_utilization did the arithmetic), as a table, CSV or JSON. */
#include "report.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#define TOP_OPS 15

/* a utilization as a table cell: "12.34%", or "-" when unknown (no device or peak) */
static void util_cell(char buf[32], double u)
{
    if (isnan(u))
        snprintf(buf, 32, "-");
    else
        snprintf(buf, 32, "%.2f%%", 100 * u);
}

static void print_table(FILE *f, const struct fm_trace *t, const struct fm_session *s,
                        const struct fm_trace_util *u)
{
    char b[4][FM_FORMAT_SIZE];
    fprintf(f, "%s: %s trace, %" PRIu64 " complete events, %zu step%s%s\n", t->origin,
            t->form == FM_TRACE_KINETO ? "Kineto" : "legacy", t->events, t->n_steps,
            t->n_steps == 1 ? "" : "s", t->whole ? " (the whole trace, fm_trace_opts.whole)" : "");
    fprintf(f, "  %-22s %12s %12s %8s %14s\n", "step", "time", "GPU kernels", "kernels",
            "profiler FLOP");
    for (size_t i = 0; i < t->n_steps; i++) {
        const struct fm_trace_step *st = &t->steps[i];
        char k[FM_FORMAT_SIZE] = "-", fl[FM_FORMAT_SIZE] = "-";
        if (t->has_kernels)
            fm_format_time(st->kernel_s, k);
        if (t->has_flops)
            fm_format_si((double)st->profiler_flops, fl);
        fprintf(f, "  %-22s %12s %12s %8" PRIu64 " %14s\n", st->name,
                fm_format_time(st->time_s, b[0]), k, st->kernels, fl);
    }
    fprintf(f, "step time: median %s (min %s, max %s)\n", fm_format_time(t->step_s, b[0]),
            fm_format_time(t->step_min_s, b[1]), fm_format_time(t->step_max_s, b[2]));
    fprintf(f, "\nby class (outermost ops of all steps; %s of %s of steps):\n",
            fm_format_time(t->top_s, b[0]), fm_format_time(t->step_s * (double)t->n_steps, b[1]));
    for (int c = 0; c < FM_TRACE_CLASSES; c++) {
        if (t->class_s[c] > 0)
            fprintf(f, "  %-14s %12s %6.1f%%\n", fm_trace_class_name(c),
                    fm_format_time(t->class_s[c], b[0]),
                    t->top_s > 0 ? 100 * t->class_s[c] / t->top_s : 0.0);
    }
    fprintf(f, "\nops (all steps, largest total first; %zu in all):\n", t->n_ops);
    fprintf(f, "  %-40s %-13s %7s %12s %12s %14s\n", "op", "class", "calls", "total", "self",
            "profiler FLOP");
    for (size_t i = 0; i < t->n_ops && i < TOP_OPS; i++) {
        const struct fm_trace_op *op = &t->ops[i];
        char fl[FM_FORMAT_SIZE] = "-";
        if (op->flops_calls)
            fm_format_si((double)op->flops, fl);
        fprintf(f, "  %-40.40s %-13s %7" PRIu64 " %12s %12s %14s\n", op->name,
                fm_trace_class_name(op->cls), op->calls, fm_format_time(op->total_s, b[0]),
                fm_format_time(op->self_s, b[1]), fl);
    }
    if (t->has_flops)
        fprintf(f, "profiler FLOPs: %s in all steps, each op once (outermost); %s more in ops "
                "nested inside an op with FLOPs, not counted\n",
                fm_format_si((double)t->profiler_flops, b[0]),
                fm_format_si((double)t->nested_flops, b[1]));
    else
        fprintf(f, "profiler FLOPs: none (they are rebuilt from the shapes Kineto records with "
                "record_shapes=True; this trace has %s)\n",
                t->has_shapes ? "shapes, but no op the profiler has a formula for"
                              : "no shapes");
    if (!s || !u)
        return;
    bool peak = u->peak > 0;
    if (peak)
        fprintf(f, "\n%s%s%s | batch %lld, training step | peak %sFLOP/s (%s)\n",
                fm_graph_name(s->graph), s->device ? " on " : "",
                s->device ? s->device->name : "", (long long)u->batch,
                fm_format_si(u->peak, b[0]), s->device ? s->peak_source : "fm_session_opts.peak");
    else
        fprintf(f, "\n%s | batch %lld, training step | no device, no peak\n",
                fm_graph_name(s->graph), (long long)u->batch);
    fprintf(f, "%s of the median step (%s), Epoch AI's methods (Hobbhahn 2022):\n",
            peak ? "utilization" : "FLOPs", fm_format_time(u->step_s, b[0]));
    char pct[3][32];
    util_cell(pct[0], u->counted_util);
    util_cell(pct[1], u->util.step_util[FM_UTIL_THEORY]);
    util_cell(pct[2], u->profiler_util);
    fprintf(f, "  %-34s %14s %10s\n", "method", "FLOP/step", "util");
    fprintf(f, "  %-34s %14s %10s\n", "counting (flopmeter, fwd+bwd+opt)",
            fm_format_si((double)u->counted_flops, b[0]), pct[0]);
    fprintf(f, "  %-34s %14s %10s\n", "theory (3 x forward)",
            fm_format_si(u->util.step_flops[FM_UTIL_THEORY], b[0]), pct[1]);
    if (u->profiler_available)
        fprintf(f, "  %-34s %14s %10s   %.1f%% of flopmeter's count\n",
                "profiler (with_flops formulas)", fm_format_si(u->profiler_flops, b[0]),
                pct[2], 100 * u->profiler_share);
    else
        fprintf(f, "  %-34s %14s %10s\n", "profiler", "-", "-");
    if (u->batch_mismatch)
        fprintf(f, "WARNING: the trace's first op (%s) reads a batch of %lld, the count is at "
                "batch %lld: give fm_zoo_opts.batch %lld\n",
                t->input_op, (long long)u->trace_batch, (long long)u->batch,
                (long long)u->trace_batch);
    fprintf(f, "convention: FLOP = 2 x MAC + other ops; the profiler method counts only ops it "
            "has a formula for (conv2d, mm, addmm, bmm, baddbmm, mul, add), forward and backward "
            "alike.\n");
    if (!peak)
        fprintf(f, "utilization needs the device or its peak: give fm_session_opts.device NAME or "
                "fm_session_opts.peak FLOP/S\n");
    if (u->counted_util > 1)
        fm_report_impossible(f);
}

static void print_csv(FILE *f, const struct fm_trace *t)
{
    fprintf(f, "kind,name,class,calls,time_s,self_s,kernel_s,profiler_flops\n");
    for (size_t i = 0; i < t->n_steps; i++) {
        const struct fm_trace_step *s = &t->steps[i];
        fprintf(f, "step,%s,,,%.9g,,%.9g,%" PRIu64 "\n", s->name, s->time_s, s->kernel_s,
                s->profiler_flops);
    }
    for (int c = 0; c < FM_TRACE_CLASSES; c++) {
        if (t->class_s[c] > 0)
            fprintf(f, "class,%s,%s,,%.9g,,,\n", fm_trace_class_name(c), fm_trace_class_name(c),
                    t->class_s[c]);
    }
    for (size_t i = 0; i < t->n_ops; i++) {
        const struct fm_trace_op *op = &t->ops[i];
        /* op names may hold commas and quotes: quoted, quotes doubled */
        fputs("op,\"", f);
        for (const char *p = op->name; *p; p++) {
            if (*p == '"')
                fputc('"', f);
            fputc(*p, f);
        }
        fprintf(f, "\",%s,%" PRIu64 ",%.9g,%.9g,,%" PRIu64 "\n", fm_trace_class_name(op->cls),
                op->calls, op->total_s, op->self_s, op->flops);
    }
}

static void json_util(struct fm_jw *w, const struct fm_trace *t, const struct fm_session *s,
                      const struct fm_trace_util *u)
{
    /* without a device or a peak, the keys that need one are null */
    bool peak = u->peak > 0;
    fm_jw_string(w, "model", fm_graph_name(s->graph));
    fm_jw_string(w, "device", s->device ? s->device->name : NULL);
    fm_jw_i64(w, "batch", u->batch);
    if (u->trace_batch)
        fm_jw_i64(w, "trace_batch", u->trace_batch);
    fm_jw_bool(w, "batch_mismatch", u->batch_mismatch);
    fm_jw_string(w, "precision", !peak ? NULL : s->opts.peak > 0 || !s->device
                                     ? "peak" : fm_session_precision_label(s));
    fm_jw_double(w, "peak_flops", peak ? u->peak : NAN);
    fm_jw_string(w, "peak_source", !peak ? NULL : s->device ? s->peak_source
                                                             : "fm_session_opts.peak");
    fm_jw_object(w, "utilization", false);
    fm_jw_object(w, "counting", true);
    fm_jw_u64(w, "step_flops", u->counted_flops);
    fm_jw_u64(w, "fwd_flops", u->counted_by_phase[FM_TRACE_FWD]);
    fm_jw_u64(w, "bwd_flops", u->counted_by_phase[FM_TRACE_BWD]);
    fm_jw_u64(w, "optimizer_flops", u->counted_by_phase[FM_TRACE_OPT]);
    fm_jw_double(w, "step_utilization", u->counted_util);
    fm_jw_end(w);
    fm_jw_object(w, "theory", true);
    fm_jw_double(w, "step_flops", u->util.step_flops[FM_UTIL_THEORY]);
    fm_jw_double(w, "step_utilization", u->util.step_util[FM_UTIL_THEORY]);
    fm_jw_end(w);
    fm_jw_object(w, "profiler", true);
    fm_jw_bool(w, "available", u->profiler_available);
    if (u->profiler_available) {
        fm_jw_double(w, "step_flops", u->profiler_flops);
        fm_jw_double(w, "step_utilization", u->profiler_util);
        fm_jw_double(w, "share_of_counted", u->profiler_share);
    }
    fm_jw_end(w);
    fm_jw_end(w);
    if (peak)
        fm_jw_bool(w, "impossible", u->counted_util > 1);
    else
        fm_jw_null(w, "impossible");
    (void)t;
}

static void print_json(FILE *f, const struct fm_trace *t, const struct fm_session *s,
                       const struct fm_trace_util *u)
{
    struct fm_jw w;
    fm_jw_init(&w, f);
    fm_jw_object(&w, NULL, false);
    fm_jw_string(&w, "flopmeter", FM_VERSION);
    fm_jw_string(&w, "trace", t->origin);
    fm_jw_string(&w, "form", t->form == FM_TRACE_KINETO ? "kineto" : "legacy");
    fm_jw_u64(&w, "events", t->events);
    fm_jw_bool(&w, "whole", t->whole);
    fm_jw_bool(&w, "has_kernels", t->has_kernels);
    fm_jw_bool(&w, "has_shapes", t->has_shapes);
    fm_jw_bool(&w, "has_flops", t->has_flops);
    fm_jw_double(&w, "step_s", t->step_s);
    fm_jw_double(&w, "step_min_s", t->step_min_s);
    fm_jw_double(&w, "step_max_s", t->step_max_s);
    fm_jw_array(&w, "steps", false);
    for (size_t i = 0; i < t->n_steps; i++) {
        const struct fm_trace_step *st = &t->steps[i];
        fm_jw_object(&w, NULL, true);
        fm_jw_string(&w, "name", st->name);
        fm_jw_double(&w, "time_s", st->time_s);
        fm_jw_double(&w, "kernel_s", st->kernel_s);
        fm_jw_u64(&w, "kernels", st->kernels);
        fm_jw_double(&w, "memcpy_s", st->memcpy_s);
        fm_jw_u64(&w, "profiler_flops", st->profiler_flops);
        fm_jw_u64(&w, "nested_flops", st->nested_flops);
        for (int p = 0; p < FM_TRACE_PHASE_COUNT; p++) {
            char key[32];
            snprintf(key, sizeof(key), "%s_s", fm_trace_phase_name((enum fm_trace_phase)p));
            fm_jw_double(&w, key, st->phase_s[p]);
        }
        for (int p = 0; p < FM_TRACE_PHASE_COUNT; p++) {
            char key[32];
            snprintf(key, sizeof(key), "%s_profiler_flops",
                     fm_trace_phase_name((enum fm_trace_phase)p));
            fm_jw_u64(&w, key, st->flops_by_phase[p]);
        }
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    fm_jw_u64(&w, "profiler_flops", t->profiler_flops);
    fm_jw_u64(&w, "nested_flops", t->nested_flops);
    fm_jw_double(&w, "ops_s", t->top_s);
    fm_jw_object(&w, "by_class", false);
    for (int c = 0; c < FM_TRACE_CLASSES; c++) {
        if (t->class_s[c] > 0)
            fm_jw_double(&w, fm_trace_class_name(c), t->class_s[c]);
    }
    fm_jw_end(&w);
    if (t->input.rank >= 2) {
        fm_jw_object(&w, "input", true);
        fm_jw_string(&w, "op", t->input_op);
        fm_jw_array(&w, "shape", true);
        for (int i = 0; i < t->input.rank; i++)
            fm_jw_i64(&w, NULL, t->input.dims[i]);
        fm_jw_end(&w);
        fm_jw_end(&w);
    }
    if (s && u)
        json_util(&w, t, s, u);
    fm_jw_array(&w, "ops", false);
    for (size_t i = 0; i < t->n_ops; i++) {
        const struct fm_trace_op *op = &t->ops[i];
        fm_jw_object(&w, NULL, true);
        fm_jw_string(&w, "name", op->name);
        fm_jw_string(&w, "class", fm_trace_class_name(op->cls));
        fm_jw_u64(&w, "calls", op->calls);
        fm_jw_double(&w, "total_s", op->total_s);
        fm_jw_double(&w, "self_s", op->self_s);
        fm_jw_u64(&w, "profiler_flops", op->flops);
        fm_jw_u64(&w, "flops_calls", op->flops_calls);
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    fm_jw_end(&w);
    fm_jw_finish(&w);
}

enum fm_status fm_report_trace(FILE *f, const struct fm_trace *t, const struct fm_session *s,
                               const struct fm_trace_util *u, const struct fm_report_opts *opts)
{
    if (!t)   /* no trace: no context to leave a message on */
        return FM_ERR_INVALID;
    if (u && (!s || !s->graph || (u->peak > 0 && !s->device && !(s->opts.peak > 0))))
        return fm_report_lacks(t->ctx, "trace",
                               "the session (model, and device or peak) of its utilization");
    enum fm_format format = opts ? opts->format : FM_FORMAT_TABLE;
    if (format == FM_FORMAT_TABLE)
        print_table(f, t, s, u);
    else if (format == FM_FORMAT_CSV)
        print_csv(f, t);
    else
        print_json(f, t, u ? s : NULL, u);
    return fm_report_end(t->ctx, f);
}
