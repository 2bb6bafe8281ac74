/* Measured points for the roofline chart (roofline --measured FILE): what a profile says a
 * model's layers and step did, as (FLOPs, bytes, seconds) next to the counted points. An Nsight
 * Compute CSV gives the counters' own FLOPs and DRAM bytes per matched layer and phase and for
 * the whole file, as the roofline studies that used ncu plotted them; a PyTorch profiler trace
 * gives measured time only, so its points are flopmeter's counted work over the measured time.
 * It draws nothing (src/report/svg_roofline.c does) and guesses no FLOPs a file lacks. */
#include "../core/internal.h"
#include "../frontend/profile/profile.h"
#include "analysis.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The counters' FLOPs as the ncu report gives them (fm_ncu_counter_flops); *partial when
 * tensor instructions ran whose FLOPs no metric gives: the FP units' FLOPs alone, as the ncu
 * roofline studies plotted them, and said so in the point's label. */
static bool counter_flops(const struct fm_ncu_figures *f, double *out, bool *partial)
{
    *partial = !f->tensor_flops.known && f->tensor_inst.known && f->tensor_inst.value > 0;
    return fm_ncu_counter_flops(f, out);
}

static enum fm_status push(struct fm_measured *m, size_t *cap, const char *label, double flops,
                           double bytes, double time_s, bool whole)
{
    if (!(flops > 0) || !(bytes > 0) || !(time_s > 0) || !isfinite(flops) || !isfinite(bytes) ||
        !isfinite(time_s))
        return FM_OK;   /* no place on log axes */
    if (m->n == *cap) {
        size_t c = *cap ? 2 * *cap : 32;
        void *p = fm_realloc(m->ctx, m->points, c * sizeof(*m->points));
        if (!p)
            return fm_error(m->ctx, FM_ERR_NOMEM, "out of memory for measured points");
        m->points = p;
        *cap = c;
    }
    struct fm_measured_point *x = &m->points[m->n++];
    memset(x, 0, sizeof(*x));
    snprintf(x->label, sizeof(x->label), "%s", label);
    x->flops = flops;
    x->bytes = bytes;
    x->time_s = time_s;
    x->whole = whole;
    return FM_OK;
}

static enum fm_status from_ncu(struct fm_measured *m, const char *path,
                               const struct fm_graph *graph, const struct fm_counts *counts)
{
    struct fm_ctx *ctx = m->ctx;
    struct fm_ncu_profile *p = NULL;
    struct fm_ncu_match *mt = NULL;
    size_t cap = 0, layers = 0, unknown = 0;
    enum fm_status st = fm_ncu_read_file(ctx, path, &p);
    if (!st)
        st = fm_ncu_match(ctx, p, graph, counts, &mt);
    for (size_t i = 0; !st && i < mt->n_rows; i++) {
        const struct fm_ncu_match_row *r = &mt->rows[i];
        if (!r->counted)
            continue;
        double flops;
        bool partial;
        if (!counter_flops(&r->measured, &flops, &partial) || !r->measured.dram_bytes.known ||
            !r->measured.time_s.known) {
            unknown++;
            continue;
        }
        char label[160];
        snprintf(label, sizeof(label), "%s %s%s", r->layer,
                 r->phase < FM_PHASE_COUNT ? fm_phase_name(r->phase) : "",
                 partial ? " (FP units only: tensor-pipe FLOPs unknown)" : "");
        size_t before = m->n;
        st = push(m, &cap, label, flops, r->measured.dram_bytes.value, r->measured.time_s.value,
                  false);
        layers += m->n > before;
    }
    double flops;
    bool partial;
    bool whole = !st && counter_flops(&p->totals, &flops, &partial) &&
                 p->totals.dram_bytes.known && p->totals.time_s.known;
    if (whole)
        st = push(m, &cap,
                  partial ? "the profiled kernels (Nsight Compute; FP units only: tensor-pipe "
                            "FLOPs unknown)"
                          : "the profiled kernels (Nsight Compute)",
                  flops, p->totals.dram_bytes.value, p->totals.time_s.value, true);
    if (!st) {
        snprintf(m->source, sizeof(m->source), "Nsight Compute");
        snprintf(m->how, sizeof(m->how),
                 "Nsight Compute: the counters' FLOPs (FP units, and the tensor pipe where a "
                 "metric counts its operations) over DRAM bytes and kernel time; %zu layer "
                 "phases%s%s%s",
                 layers, mt->by_nvtx ? " matched by NVTX range" : " (no flopmeter NVTX ranges)",
                 unknown ? ", some without FLOPs, bytes or time in the file" : "",
                 whole ? ", and all kernels as one point" : "; the file's totals lack a figure");
    }
    fm_ncu_match_free(mt);
    fm_ncu_profile_free(p);
    return st;
}

static enum fm_status from_trace(struct fm_measured *m, const char *path,
                                 const struct fm_counts *counts)
{
    struct fm_ctx *ctx = m->ctx;
    struct fm_trace *t = NULL;
    size_t cap = 0;
    enum fm_status st = fm_trace_read(ctx, path, NULL, &t);
    if (st)
        return st;
    double step_flops = 0, step_bytes = 0;
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
        step_flops += (double)fm_work_flops(&counts->total[ph]);
        step_bytes += (double)counts->total[ph].bytes_read + (double)counts->total[ph].bytes_written;
    }
    char label[160];
    snprintf(label, sizeof(label), "the step (PyTorch profiler, median of %zu)", t->n_steps);
    st = push(m, &cap, label, step_flops, step_bytes, t->step_s, true);
    /* per op class: only where the ops' CPU time is their compute time (no GPU kernels: on a
     * GPU the CPU side of an op is its launch) */
    size_t classes = 0;
    for (int c = 0; !st && !t->has_kernels && t->n_steps && c < FM_CLASS_COUNT; c++) {
        double fl = 0, by = 0;
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            if (ph == FM_PHASE_OPTIMIZER)
                continue;   /* the trace puts the optimizer's ops in a class of their own */
            fl += (double)fm_work_flops(&counts->by_class[c][ph]);
            by += (double)counts->by_class[c][ph].bytes_read +
                  (double)counts->by_class[c][ph].bytes_written;
        }
        size_t before = m->n;
        st = push(m, &cap, fm_class_name((enum fm_class)c), fl, by,
                  t->class_s[c] / (double)t->n_steps, false);
        classes += m->n > before;
    }
    if (!st) {
        snprintf(m->source, sizeof(m->source), "PyTorch profiler");
        snprintf(m->how, sizeof(m->how),
                 "PyTorch profiler: flopmeter's counted FLOPs and bytes over the measured time "
                 "(the trace has no counters): the median step%s",
                 t->has_kernels ? " (ops' CPU time is their launch on a GPU: no per-class points)"
                 : classes ? ", and each op class's time per step" : "");
    }
    fm_trace_free(t);
    return st;
}

enum fm_status fm_measured_read(struct fm_ctx *ctx, const char *path,
                                const struct fm_graph *graph, const struct fm_counts *counts,
                                struct fm_measured **out)
{
    *out = NULL;
    if (!path || !graph || !counts)
        return fm_error(ctx, FM_ERR_INVALID, "measured points need a file, a graph and counts");
    FILE *f = fopen(path, "rb");
    if (!f)
        return fm_error(ctx, FM_ERR_IO, "cannot open %s", path);
    int c;
    while ((c = fgetc(f)) != EOF && (c == ' ' || c == '\t' || c == '\r' || c == '\n'))
        ;
    fclose(f);
    struct fm_measured *m = fm_alloc(ctx, sizeof(*m));
    if (!m)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory for measured points");
    memset(m, 0, sizeof(*m));
    m->ctx = ctx;
    /* JSON is a trace; anything else is read as ncu's CSV, whose reader says what it is not */
    enum fm_status st = c == '{' || c == '[' ? from_trace(m, path, counts)
                                             : from_ncu(m, path, graph, counts);
    if (!st && m->n == 0)
        st = fm_error(ctx, FM_ERR_PARSE,
                      "%s: no measured point to draw (%s)", path,
                      m->how[0] ? m->how : "no FLOPs, bytes or time in it");
    if (st) {
        fm_measured_free(m);
        return st;
    }
    *out = m;
    return FM_OK;
}

void fm_measured_free(struct fm_measured *m)
{
    if (!m)
        return;
    fm_dealloc(m->ctx, m->points);
    fm_dealloc(m->ctx, m);
}

size_t fm_measured_count(const struct fm_measured *m)
{
    return m->n;
}

const char *fm_measured_how(const struct fm_measured *m)
{
    return m->how;
}
