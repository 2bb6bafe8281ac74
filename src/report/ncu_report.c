/* Nsight Compute and Nsight Systems profiles as tables, CSV and JSON: per kernel and NVTX range
 * the counters' FLOPs, DRAM bytes, time and achieved rates, a device's peaks beside them, and
 * the layers next to flopmeter's counts. A figure the file lacks prints as "-" (null in JSON),
 * never 0. The readers (src/frontend/profile) and the matching (src/analysis) did the work. */
#include "report.h"
#include "../frontend/profile/profile.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static const enum fm_precision prec_of[FM_NCU_PREC_COUNT] = {FM_PREC_FP64, FM_PREC_FP32,
                                                             FM_PREC_FP16};

/* The achieved rates of a set of figures (NaN where a figure is unknown). */
struct rates {
    double flops, flops_per_s, bytes_per_s, intensity;
};
static struct rates rates_of(const struct fm_ncu_figures *g)
{
    struct rates r = {NAN, NAN, NAN, NAN};
    double fl;
    if (fm_ncu_counter_flops(g, &fl))
        r.flops = fl;
    bool t = g->time_s.known && g->time_s.value > 0;
    if (!isnan(r.flops) && t)
        r.flops_per_s = r.flops / g->time_s.value;
    if (g->dram_bytes.known && t)
        r.bytes_per_s = g->dram_bytes.value / g->time_s.value;
    if (!isnan(r.flops) && g->dram_bytes.known && g->dram_bytes.value > 0)
        r.intensity = r.flops / g->dram_bytes.value;
    return r;
}

static const char *si(const struct fm_prof_figure *f, char *buf)
{
    if (!f->known)
        return "-";
    fm_format_si(f->value, buf);
    if (f->derived)
        strcat(buf, "~");
    return buf;
}

static const char *num(double v, char *buf, bool time)
{
    if (isnan(v))
        return "-";
    return time ? fm_format_time(v, buf) : fm_format_si(v, buf);
}

static void row(FILE *f, const char *id, const char *name, const struct fm_ncu_figures *g)
{
    char b[10][FM_FORMAT_SIZE];
    struct rates r = rates_of(g);
    char tensor[FM_FORMAT_SIZE + 8];
    if (g->tensor_flops.known)
        si(&g->tensor_flops, tensor);
    else if (g->tensor_inst.known && g->tensor_inst.value > 0)
        snprintf(tensor, sizeof(tensor), "? (%s inst)", fm_format_si(g->tensor_inst.value, b[9]));
    else if (g->tensor_inst.known)
        snprintf(tensor, sizeof(tensor), "0");
    else
        snprintf(tensor, sizeof(tensor), "-");
    fprintf(f, "  %-6s %-34.34s %9s %9s %9s %15s %9s %10s %10s %10s %7s\n", id, name,
            si(&g->flops[0], b[0]), si(&g->flops[1], b[1]), si(&g->flops[2], b[2]), tensor,
            si(&g->dram_bytes, b[3]), g->time_s.known ? fm_format_time(g->time_s.value, b[4]) : "-",
            num(r.flops_per_s, b[5], false), num(r.bytes_per_s, b[6], false),
            num(r.intensity, b[7], false));
}

static void header(FILE *f, const char *first)
{
    fprintf(f, "  %-6s %-34s %9s %9s %9s %15s %9s %10s %10s %10s %7s\n", first, "kernel",
            "FP64", "FP32", "FP16", "tensor", "DRAM B", "time", "FLOP/s", "B/s", "FLOP/B");
}

static void print_device(FILE *f, const struct fm_ncu_profile *p, const struct fm_device *dev)
{
    const struct fm_ncu_figures *g = &p->totals;
    char b[4][FM_FORMAT_SIZE];
    fprintf(f, "\nagainst %s (dense peaks of the FP units; DRAM bandwidth):\n", dev->name);
    bool t = g->time_s.known && g->time_s.value > 0;
    for (int k = 0; k < FM_NCU_PREC_COUNT; k++) {
        double peak = dev->peak_vector[prec_of[k]];
        if (!g->flops[k].known || !t) {
            fprintf(f, "  %-5s -  (FLOPs or time missing)\n", fm_ncu_prec_name((enum fm_ncu_prec)k));
            continue;
        }
        double rate = g->flops[k].value / g->time_s.value;
        fprintf(f, "  %-5s %s FLOP/s of %s FLOP/s = %s\n", fm_ncu_prec_name((enum fm_ncu_prec)k),
                fm_format_si(rate, b[0]), peak > 0 ? fm_format_si(peak, b[1]) : "?",
                peak > 0 ? fm_report_pct(rate / peak, b[2]) : "- (no peak)");
    }
    if (g->dram_bytes.known && t && dev->mem_bw > 0) {
        double bw = g->dram_bytes.value / g->time_s.value;
        fprintf(f, "  DRAM  %s B/s of %s B/s = %s\n", fm_format_si(bw, b[0]),
                fm_format_si(dev->mem_bw, b[1]), fm_report_pct(bw / dev->mem_bw, b[2]));
    }
    if (g->tensor_inst.known && g->tensor_inst.value > 0 && !g->tensor_flops.known)
        fprintf(f, "  tensor: FLOPs unknown, so no share of the tensor peak is given\n");
}

static void print_match(FILE *f, const struct fm_ncu_match *m)
{
    char b[8][FM_FORMAT_SIZE];
    fprintf(f, "\nlayers: counted by flopmeter vs the counters\n  %s\n", m->method);
    if (m->n_rows) {
        fprintf(f, "  %-28s %-10s %5s %10s %10s %7s %10s %10s %7s  %s\n", "layer", "phase",
                "kern", "counted", "counter", "ratio", "bytes", "DRAM B", "ratio", "likely cause");
        for (size_t i = 0; i < m->n_rows; i++) {
            const struct fm_ncu_match_row *w = &m->rows[i];
            double cf;
            bool known = fm_ncu_counter_flops(&w->measured, &cf);
            char r1[16] = "-", r2[16] = "-";
            if (!isnan(w->flops_ratio))
                snprintf(r1, sizeof(r1), "%.2f", w->flops_ratio);
            if (!isnan(w->bytes_ratio))
                snprintf(r2, sizeof(r2), "%.2f", w->bytes_ratio);
            fprintf(f, "  %-28.28s %-10s %5zu %10s %10s %7s %10s %10s %7s  %s\n", w->layer,
                    w->phase < FM_PHASE_COUNT ? fm_phase_name(w->phase) : "-", w->kernels,
                    w->counted ? fm_format_si((double)w->counted_flops, b[0]) : "-",
                    known ? fm_format_si(cf, b[1]) : "-", r1,
                    w->counted ? fm_format_bytes((double)w->counted_bytes, b[2]) : "-",
                    w->measured.dram_bytes.known ? fm_format_bytes(w->measured.dram_bytes.value, b[3]) : "-",
                    r2, w->cause);
        }
    }
    double cf;
    bool known = fm_ncu_counter_flops(&m->step_measured, &cf);
    char r1[16] = "-";
    if (!isnan(m->step_flops_ratio))
        snprintf(r1, sizeof(r1), "%.2f", m->step_flops_ratio);
    fprintf(f, "  whole step: counted %s FLOPs, %s; the file: %s FLOPs, %s DRAM (ratio %s)\n",
            fm_format_si((double)m->step_counted_flops, b[4]),
            fm_format_bytes((double)m->step_counted_bytes, b[5]), known ? fm_format_si(cf, b[6]) : "-",
            m->step_measured.dram_bytes.known ? fm_format_bytes(m->step_measured.dram_bytes.value, b[7]) : "-",
            r1);
}

static void print_table(FILE *f, const struct fm_ncu_profile *p, const struct fm_ncu_match *m,
                        const struct fm_device *dev)
{
    fprintf(f, "Nsight Compute: %s (%s), %zu kernel%s%s\n", p->source,
            p->raw_page ? "raw page" : "details form", p->n_kernels, p->n_kernels == 1 ? "" : "s",
            p->has_nvtx ? ", with NVTX ranges" : "");
    header(f, "id");
    for (size_t i = 0; i < p->n_kernels; i++) {
        char id[24];
        snprintf(id, sizeof(id), "%" PRIu64, p->kernels[i].id);
        row(f, id, p->kernels[i].name, &p->kernels[i].fig);
    }
    row(f, "total", "", &p->totals);
    if (p->n_groups) {
        fprintf(f, "\nby NVTX range (the innermost around each kernel):\n");
        header(f, "kern");
        for (size_t i = 0; i < p->n_groups; i++) {
            char n[24];
            snprintf(n, sizeof(n), "%zu", p->groups[i].kernels);
            row(f, n, p->groups[i].nvtx[0] ? p->groups[i].nvtx : "(no range)", &p->groups[i].fig);
        }
    }
    if (dev)
        print_device(f, p, dev);
    if (m)
        print_match(f, m);
    fprintf(f, "\nFLOPs = add + mul + 2 x fma thread instructions of the FP units (predicated on), "
               "per precision; tensor-pipe FLOPs only from op counters. \"-\": the file lacks the "
               "metrics; \"~\": derived as rate x time.\n");
    if (p->notes[0])
        fprintf(f, "notes: %s\n", p->notes);
}

/* ---- CSV ---- */

static void csv_fig(FILE *f, const struct fm_prof_figure *g)
{
    if (!g->known)
        fputc(',', f);
    else if (g->exact)
        fprintf(f, ",%" PRIu64, g->count);
    else
        fprintf(f, ",%.17g", g->value);
}

static void csv_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_dbl(FILE *f, double v)
{
    if (isnan(v))
        fputc(',', f);
    else
        fprintf(f, ",%.17g", v);
}

static void csv_figs(FILE *f, const struct fm_ncu_figures *g)
{
    for (int k = 0; k < FM_NCU_PREC_COUNT; k++)
        csv_fig(f, &g->flops[k]);
    csv_fig(f, &g->tensor_flops);
    csv_fig(f, &g->tensor_inst);
    csv_fig(f, &g->dram_bytes);
    csv_fig(f, &g->time_s);
    struct rates r = rates_of(g);
    csv_dbl(f, r.flops_per_s);
    csv_dbl(f, r.bytes_per_s);
    csv_dbl(f, r.intensity);
    fputc('\n', f);
}

static void print_csv(FILE *f, const struct fm_ncu_profile *p, const struct fm_ncu_match *m)
{
    fprintf(f, "id,name,nvtx,fp64_flops,fp32_flops,fp16_flops,tensor_flops,tensor_inst,"
               "dram_bytes,time_s,flops_per_s,dram_bytes_per_s,intensity\n");
    for (size_t i = 0; i < p->n_kernels; i++) {
        const struct fm_ncu_kernel *k = &p->kernels[i];
        fprintf(f, "%" PRIu64 ",", k->id);
        csv_str(f, k->name);
        fputc(',', f);
        csv_str(f, k->nvtx);
        csv_figs(f, &k->fig);
    }
    fprintf(f, "total,\"\",\"\"");
    csv_figs(f, &p->totals);
    if (m && m->n_rows) {
        fprintf(f, "\nlayer,phase,kernels,counted_flops,counter_flops,flops_ratio,counted_bytes,"
                   "dram_bytes,bytes_ratio,cause\n");
        for (size_t i = 0; i < m->n_rows; i++) {
            const struct fm_ncu_match_row *w = &m->rows[i];
            double cf;
            csv_str(f, w->layer);
            fprintf(f, ",%s,%zu,", w->phase < FM_PHASE_COUNT ? fm_phase_name(w->phase) : "",
                    w->kernels);
            if (w->counted)
                fprintf(f, "%" PRIu64, w->counted_flops);
            csv_dbl(f, fm_ncu_counter_flops(&w->measured, &cf) ? cf : NAN);
            csv_dbl(f, w->flops_ratio);
            fputc(',', f);
            if (w->counted)
                fprintf(f, "%" PRIu64, w->counted_bytes);
            csv_fig(f, &w->measured.dram_bytes);
            csv_dbl(f, w->bytes_ratio);
            fputc(',', f);
            csv_str(f, w->cause);
            fputc('\n', f);
        }
    }
}

/* ---- JSON (docs/json.md, `ncu`) ---- */

static void jfig(struct fm_jw *w, const char *key, const struct fm_prof_figure *g)
{
    if (!g->known)
        fm_jw_null(w, key);
    else if (g->exact)
        fm_jw_u64(w, key, g->count);
    else
        fm_jw_double(w, key, g->value);
}

static void jfigs(struct fm_jw *w, const struct fm_ncu_figures *g)
{
    fm_jw_object(w, "flops", true);
    for (int k = 0; k < FM_NCU_PREC_COUNT; k++)
        jfig(w, fm_ncu_prec_name((enum fm_ncu_prec)k), &g->flops[k]);
    jfig(w, "tensor", &g->tensor_flops);
    fm_jw_end(w);
    jfig(w, "tensor_inst", &g->tensor_inst);
    jfig(w, "dram_bytes", &g->dram_bytes);
    jfig(w, "time_s", &g->time_s);
    struct rates r = rates_of(g);
    fm_jw_double(w, "flops_per_s", r.flops_per_s);
    fm_jw_double(w, "dram_bytes_per_s", r.bytes_per_s);
    fm_jw_double(w, "intensity", r.intensity);
    fm_jw_array(w, "derived", true);
    for (int k = 0; k < FM_NCU_PREC_COUNT; k++)
        if (g->flops[k].derived)
            fm_jw_string(w, NULL, fm_ncu_prec_name((enum fm_ncu_prec)k));
    if (g->tensor_inst.derived)
        fm_jw_string(w, NULL, "tensor_inst");
    if (g->dram_bytes.derived)
        fm_jw_string(w, NULL, "dram_bytes");
    fm_jw_end(w);
}

static void print_json(FILE *f, const struct fm_ncu_profile *p, const struct fm_ncu_match *m,
                       const struct fm_device *dev)
{
    struct fm_jw w;
    fm_jw_init(&w, f);
    fm_jw_object(&w, NULL, false);
    fm_jw_string(&w, "flopmeter", FM_VERSION);
    fm_jw_string(&w, "source", p->source);
    fm_jw_string(&w, "form", p->raw_page ? "raw" : "details");
    fm_jw_bool(&w, "nvtx", p->has_nvtx);
    fm_jw_string(&w, "convention", "FLOPs = add + mul + 2 x fma thread instructions of the FP "
                                   "units per precision; tensor FLOPs only from op counters");
    fm_jw_array(&w, "kernels", false);
    for (size_t i = 0; i < p->n_kernels; i++) {
        const struct fm_ncu_kernel *k = &p->kernels[i];
        fm_jw_object(&w, NULL, false);
        fm_jw_u64(&w, "id", k->id);
        fm_jw_string(&w, "name", k->name);
        fm_jw_string(&w, "nvtx", k->nvtx);
        fm_jw_i64(&w, "line", k->line);
        jfigs(&w, &k->fig);
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    fm_jw_object(&w, "totals", false);
    fm_jw_u64(&w, "kernels", p->n_kernels);
    jfigs(&w, &p->totals);
    fm_jw_end(&w);
    if (p->has_nvtx) {
        fm_jw_array(&w, "nvtx_ranges", false);
        for (size_t i = 0; i < p->n_groups; i++) {
            fm_jw_object(&w, NULL, false);
            fm_jw_string(&w, "range", p->groups[i].nvtx);
            fm_jw_u64(&w, "kernels", p->groups[i].kernels);
            jfigs(&w, &p->groups[i].fig);
            fm_jw_end(&w);
        }
        fm_jw_end(&w);
    }
    if (dev) {
        const struct fm_ncu_figures *g = &p->totals;
        bool t = g->time_s.known && g->time_s.value > 0;
        fm_jw_object(&w, "device", false);
        fm_jw_string(&w, "name", dev->name);
        fm_jw_object(&w, "peak_flops", true);
        for (int k = 0; k < FM_NCU_PREC_COUNT; k++)
            fm_jw_double(&w, fm_ncu_prec_name((enum fm_ncu_prec)k), dev->peak_vector[prec_of[k]]);
        fm_jw_end(&w);
        fm_jw_double(&w, "bandwidth_bytes_per_s", dev->mem_bw);
        fm_jw_object(&w, "fraction_of_peak", true);
        for (int k = 0; k < FM_NCU_PREC_COUNT; k++) {
            double peak = dev->peak_vector[prec_of[k]];
            fm_jw_double(&w, fm_ncu_prec_name((enum fm_ncu_prec)k),
                         g->flops[k].known && t && peak > 0 ? g->flops[k].value / g->time_s.value / peak : NAN);
        }
        fm_jw_double(&w, "dram", g->dram_bytes.known && t && dev->mem_bw > 0
                                     ? g->dram_bytes.value / g->time_s.value / dev->mem_bw : NAN);
        fm_jw_end(&w);
        fm_jw_end(&w);
    }
    if (m) {
        fm_jw_object(&w, "layers", false);
        fm_jw_bool(&w, "by_nvtx", m->by_nvtx);
        fm_jw_string(&w, "method", m->method);
        fm_jw_array(&w, "rows", false);
        for (size_t i = 0; i < m->n_rows; i++) {
            const struct fm_ncu_match_row *r = &m->rows[i];
            double cf;
            fm_jw_object(&w, NULL, false);
            fm_jw_string(&w, "layer", r->layer);
            if (r->phase < FM_PHASE_COUNT)
                fm_jw_string(&w, "phase", fm_phase_name(r->phase));
            else
                fm_jw_null(&w, "phase");
            fm_jw_u64(&w, "kernels", r->kernels);
            if (r->counted) {
                fm_jw_u64(&w, "counted_flops", r->counted_flops);
                fm_jw_u64(&w, "counted_bytes", r->counted_bytes);
            } else {
                fm_jw_null(&w, "counted_flops");
                fm_jw_null(&w, "counted_bytes");
            }
            fm_jw_double(&w, "counter_flops", fm_ncu_counter_flops(&r->measured, &cf) ? cf : NAN);
            jfig(&w, "dram_bytes", &r->measured.dram_bytes);
            jfig(&w, "time_s", &r->measured.time_s);
            fm_jw_double(&w, "flops_ratio", r->flops_ratio);
            fm_jw_double(&w, "bytes_ratio", r->bytes_ratio);
            fm_jw_string(&w, "cause", r->cause);
            fm_jw_end(&w);
        }
        fm_jw_end(&w);
        fm_jw_object(&w, "step", true);
        fm_jw_u64(&w, "counted_flops", m->step_counted_flops);
        fm_jw_u64(&w, "counted_bytes", m->step_counted_bytes);
        double cf;
        fm_jw_double(&w, "counter_flops", fm_ncu_counter_flops(&m->step_measured, &cf) ? cf : NAN);
        fm_jw_double(&w, "flops_ratio", m->step_flops_ratio);
        fm_jw_end(&w);
        fm_jw_end(&w);
    }
    fm_jw_string(&w, "notes", p->notes);
    fm_jw_end(&w);
    fm_jw_finish(&w);
}

enum fm_status fm_report_ncu(FILE *f, const struct fm_ncu_profile *p,
                             const struct fm_ncu_match *m, const struct fm_device *dev,
                             const struct fm_report_opts *opts)
{
    if (!f || !p)   /* no profile: no context to leave a message on */
        return FM_ERR_INVALID;
    enum fm_format format = opts ? opts->format : FM_FORMAT_TABLE;
    if (format == FM_FORMAT_TABLE)
        print_table(f, p, m, dev);
    else if (format == FM_FORMAT_CSV)
        print_csv(f, p, m);
    else
        print_json(f, p, m, dev);
    return fm_report_end(p->ctx, f);
}

/* ---- Nsight Systems ---- */

static const char *dash_time(double s, char *buf)
{
    return isnan(s) ? "-" : fm_format_time(s, buf);
}

/* nvtx_gpu_proj_sum and nvtx_kern_sum: the GPU time of each range, then the file's rows. */
static void nsys_gpu_table(FILE *f, const struct fm_nsys_summary *s)
{
    bool proj = s->kind == FM_NSYS_NVTX_GPU;
    char b[6][FM_FORMAT_SIZE];
    fprintf(f, "Nsight Systems: %s (%s, %s), %zu row%s, %zu range%s\n", s->source, s->report,
            proj ? "NVTX ranges projected onto the GPU" : "kernels by the NVTX range that "
            "launched them", s->n_rows, s->n_rows == 1 ? "" : "s", s->n_ranges,
            s->n_ranges == 1 ? "" : "s");
    if (proj)
        fprintf(f, "  %-40s %10s %10s %10s %10s %10s  %s\n", "range", "GPU time", "instances",
                "GPU avg", "GPU ops", "CPU time", "style");
    else
        fprintf(f, "  %-40s %10s %10s %10s  %s\n", "range", "GPU time", "instances", "kernels",
                "style");
    for (size_t i = 0; i < s->n_ranges; i++) {
        const struct fm_nsys_range *g = &s->ranges[i];
        const char *name = g->name[0] ? g->name : "(outside any range)";
        char inst[32], ops[32];
        if (proj)
            snprintf(inst, sizeof(inst), "%" PRIu64, g->instances);
        else if (g->name[0])
            snprintf(inst, sizeof(inst), ">=%" PRIu64, g->instances);
        else
            snprintf(inst, sizeof(inst), "-");
        if (g->gpu_ops_known)
            snprintf(ops, sizeof(ops), "%" PRIu64, g->gpu_ops);
        else
            snprintf(ops, sizeof(ops), "-");
        if (proj)
            fprintf(f, "  %-40.40s %10s %10s %10s %10s %10s  %s\n", name,
                    fm_format_time(g->gpu_s, b[0]), inst,
                    dash_time(g->instances ? g->gpu_s / (double)g->instances : NAN, b[1]), ops,
                    dash_time(g->range_time_s, b[2]), g->style);
        else
            fprintf(f, "  %-40.40s %10s %10s %10s  %s\n", name, fm_format_time(g->gpu_s, b[0]),
                    inst, ops, g->style);
    }
    fprintf(f, "  %-40s %10s\n", "total (nested ranges counted in each)",
            fm_format_time(s->total_s, b[3]));
    if (proj && !isnan(s->top_level_s))
        fprintf(f, "  %-40s %10s\n", "outermost ranges (Avg Range Lvl 0)",
                fm_format_time(s->top_level_s, b[4]));
    if (proj) {
        fprintf(f, "GPU time = nsys's Total Proj Time: each range instance projected onto the GPU, "
                   "from the start of the first GPU operation launched inside it to the end of "
                   "the last (idle gaps between them included); CPU time = Total Range Time. A "
                   "range nested in another is counted in both.\n");
        return;
    }
    fprintf(f, "GPU time = the execution times of the kernels launched inside the range added "
               "(gaps not included; concurrent kernels each counted); a kernel under nested "
               "ranges counts in each. instances = the most range instances that launched any "
               "one of its kernels (a lower bound).\n");
    fprintf(f, "\n  %-28s %-40s %10s %10s %10s\n", "range", "kernel", "instances", "total",
            "average");
    for (size_t i = 0; i < s->n_rows; i++) {
        const struct fm_nsys_row *r = &s->rows[i];
        fprintf(f, "  %-28.28s %-40.40s %10" PRIu64 " %10s %10s\n",
                r->name[0] ? r->name : "(outside any range)", r->kernel, r->instances,
                fm_format_time(r->total_s, b[0]), dash_time(r->avg_s, b[1]));
    }
}

static void nsys_json_row(struct fm_jw *w, const struct fm_nsys_summary *s,
                          const struct fm_nsys_row *r)
{
    fm_jw_object(w, NULL, true);
    fm_jw_string(w, "name", r->name);
    if (s->kind != FM_NSYS_KERNELS)
        fm_jw_string(w, "style", r->style);
    if (s->kind == FM_NSYS_NVTX_KERNELS)
        fm_jw_string(w, "kernel", r->kernel);
    fm_jw_double(w, "total_s", r->total_s);
    fm_jw_u64(w, "instances", r->instances);
    fm_jw_double(w, "avg_s", r->avg_s);
    fm_jw_double(w, "med_s", r->med_s);
    fm_jw_double(w, "min_s", r->min_s);
    fm_jw_double(w, "max_s", r->max_s);
    fm_jw_double(w, "stddev_s", r->stddev_s);
    fm_jw_double(w, "time_pct", r->time_pct);
    if (s->kind == FM_NSYS_NVTX_GPU) {
        fm_jw_double(w, "range_time_s", r->range_time_s);
        if (r->gpu_ops_known)
            fm_jw_u64(w, "gpu_ops", r->gpu_ops);
        else
            fm_jw_null(w, "gpu_ops");
        fm_jw_double(w, "avg_gpu_ops", r->avg_gpu_ops);
        fm_jw_double(w, "avg_level", r->avg_level);
        fm_jw_double(w, "avg_children", r->avg_children);
    } else if (s->kind == FM_NSYS_NVTX_KERNELS) {
        fm_jw_u64(w, "range_instances", r->range_instances);
        if (r->pid >= 0)
            fm_jw_i64(w, "pid", r->pid);
        else
            fm_jw_null(w, "pid");
        if (r->tid >= 0)
            fm_jw_i64(w, "tid", r->tid);
        else
            fm_jw_null(w, "tid");
    }
    fm_jw_end(w);
}

enum fm_status fm_report_nsys(FILE *f, const struct fm_nsys_summary *s,
                              const struct fm_report_opts *opts)
{
    if (!f || !s)   /* no summary: no context to leave a message on */
        return FM_ERR_INVALID;
    enum fm_format format = opts ? opts->format : FM_FORMAT_TABLE;
    bool nvtx = s->kind != FM_NSYS_KERNELS;
    bool gpu = s->kind == FM_NSYS_NVTX_GPU || s->kind == FM_NSYS_NVTX_KERNELS;
    if (format == FM_FORMAT_TABLE && gpu) {
        nsys_gpu_table(f, s);
    } else if (format == FM_FORMAT_TABLE) {
        char b[4][FM_FORMAT_SIZE];
        fprintf(f, "Nsight Systems: %s (%s, %s), %zu row%s\n", s->source, s->report,
                nvtx ? "NVTX ranges" : "CUDA kernels", s->n_rows, s->n_rows == 1 ? "" : "s");
        fprintf(f, "  %-48s %10s %10s %10s %7s%s\n", nvtx ? "range" : "kernel", "total",
                "instances", "average", "share", nvtx ? "  style" : "");
        for (size_t i = 0; i < s->n_rows; i++) {
            const struct fm_nsys_row *r = &s->rows[i];
            double share = s->total_s > 0 ? r->total_s / s->total_s : NAN;
            fprintf(f, "  %-48.48s %10s %10" PRIu64 " %10s %7s%s%s\n", r->name,
                    fm_format_time(r->total_s, b[0]), r->instances,
                    isnan(r->avg_s) ? "-" : fm_format_time(r->avg_s, b[1]),
                    isnan(share) ? "-" : fm_report_pct(share, b[2]), nvtx ? "  " : "",
                    nvtx ? r->style : "");
        }
        fprintf(f, "  %-48s %10s %10" PRIu64 "\n", "total", fm_format_time(s->total_s, b[3]),
                s->instances);
        if (nvtx)
            fprintf(f, "NVTX range times are the ranges' durations on the CPU thread that pushed "
                       "them (nsys's nvtx_sum), not GPU time; nested ranges are counted in each "
                       "enclosing range too, so the total is not a sum of disjoint time.\n");
        else
            fprintf(f, "kernel times are GPU execution times; share = of the kernels listed.\n");
    } else if (format == FM_FORMAT_CSV) {
        fprintf(f, "%s,total_s,instances,avg_s,med_s,min_s,max_s,stddev_s,time_pct%s%s%s\n",
                nvtx ? "range" : "name", nvtx ? ",style" : "",
                s->kind == FM_NSYS_NVTX_GPU ? ",range_time_s,gpu_ops,avg_gpu_ops,avg_level,"
                                              "avg_children" : "",
                s->kind == FM_NSYS_NVTX_KERNELS ? ",kernel,range_instances,pid,tid" : "");
        for (size_t i = 0; i < s->n_rows; i++) {
            const struct fm_nsys_row *r = &s->rows[i];
            csv_str(f, r->name);
            fprintf(f, ",%.17g,%" PRIu64, r->total_s, r->instances);
            csv_dbl(f, r->avg_s);
            csv_dbl(f, r->med_s);
            csv_dbl(f, r->min_s);
            csv_dbl(f, r->max_s);
            csv_dbl(f, r->stddev_s);
            csv_dbl(f, r->time_pct);
            if (nvtx) {
                fputc(',', f);
                csv_str(f, r->style);
            }
            if (s->kind == FM_NSYS_NVTX_GPU) {
                csv_dbl(f, r->range_time_s);
                if (r->gpu_ops_known)
                    fprintf(f, ",%" PRIu64, r->gpu_ops);
                else
                    fputc(',', f);
                csv_dbl(f, r->avg_gpu_ops);
                csv_dbl(f, r->avg_level);
                csv_dbl(f, r->avg_children);
            } else if (s->kind == FM_NSYS_NVTX_KERNELS) {
                fputc(',', f);
                csv_str(f, r->kernel);
                fprintf(f, ",%" PRIu64 ",", r->range_instances);
                if (r->pid >= 0)
                    fprintf(f, "%" PRId64, r->pid);
                fputc(',', f);
                if (r->tid >= 0)
                    fprintf(f, "%" PRId64, r->tid);
            }
            fputc('\n', f);
        }
    } else {
        struct fm_jw w;
        fm_jw_init(&w, f);
        fm_jw_object(&w, NULL, false);
        fm_jw_string(&w, "flopmeter", FM_VERSION);
        fm_jw_string(&w, "source", s->source);
        fm_jw_string(&w, "report", s->report);
        fm_jw_string(&w, "kind", fm_nsys_kind_name(s->kind));
        fm_jw_array(&w, "rows", false);
        for (size_t i = 0; i < s->n_rows; i++)
            nsys_json_row(&w, s, &s->rows[i]);
        fm_jw_end(&w);
        if (gpu) {
            fm_jw_array(&w, "ranges", false);
            for (size_t i = 0; i < s->n_ranges; i++) {
                const struct fm_nsys_range *g = &s->ranges[i];
                fm_jw_object(&w, NULL, true);
                fm_jw_string(&w, "name", g->name);
                fm_jw_string(&w, "style", g->style);
                fm_jw_double(&w, "gpu_s", g->gpu_s);
                if (g->gpu_ops_known)
                    fm_jw_u64(&w, "gpu_ops", g->gpu_ops);
                else
                    fm_jw_null(&w, "gpu_ops");
                fm_jw_u64(&w, "instances", g->instances);
                fm_jw_double(&w, "range_time_s", g->range_time_s);
                fm_jw_u64(&w, "rows", g->rows);
                fm_jw_end(&w);
            }
            fm_jw_end(&w);
        }
        fm_jw_object(&w, "totals", true);
        fm_jw_double(&w, "total_s", s->total_s);
        fm_jw_u64(&w, "instances", s->instances);
        if (gpu) {
            if (s->gpu_ops_known)
                fm_jw_u64(&w, "gpu_ops", s->gpu_ops);
            else
                fm_jw_null(&w, "gpu_ops");
            fm_jw_double(&w, "top_level_s", s->top_level_s);
        }
        fm_jw_end(&w);
        fm_jw_end(&w);
        fm_jw_finish(&w);
    }
    return fm_report_end(s->ctx, f);
}
