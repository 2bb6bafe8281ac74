/* A probe's result (fm_probe): each measured ceiling with its min, median and max next to the
 * theoretical figure, as a table, CSV or JSON. It measures nothing itself. */
#include "report.h"

#include <string.h>

struct row {
    const char *label;
    const struct fm_probe_stat *s;
    const char *unit;      /* "FLOP/s" or "B/s" */
};

static int collect(const struct fm_probe_result *r, struct row *rows, char labels[][48])
{
    int n = 0;
    static const enum fm_precision precs[] = {FM_PREC_FP64, FM_PREC_FP32, FM_PREC_TF32,
                                              FM_PREC_FP16, FM_PREC_BF16, FM_PREC_FP8,
                                              FM_PREC_INT8};
    bool cpu = strcmp(r->kind, "gpu") != 0;
    for (size_t i = 0; i < sizeof(precs) / sizeof(precs[0]); i++) {
        enum fm_precision p = precs[i];
        const char *pn = fm_precision_name(p);
        if (r->fma_1t[p].median > 0) {
            snprintf(labels[n], 48, "%s FMA, 1 thread", pn);
            rows[n] = (struct row){labels[n], &r->fma_1t[p], "FLOP/s"};
            n++;
        }
        if (r->fma_all[p].median > 0) {
            if (cpu)
                snprintf(labels[n], 48, "%s FMA, %d threads", pn, r->threads);
            else
                snprintf(labels[n], 48, "%s FMA", pn);
            rows[n] = (struct row){labels[n], &r->fma_all[p], "FLOP/s"};
            n++;
        }
        if (r->gemm[p].median > 0) {
            snprintf(labels[n], 48, "%s GEMM", pn);
            rows[n] = (struct row){labels[n], &r->gemm[p], "FLOP/s"};
            n++;
        }
    }
    rows[n++] = (struct row){"copy bandwidth", &r->bw_copy, "B/s"};
    rows[n++] = (struct row){"triad bandwidth", &r->bw_triad, "B/s"};
    return n;
}

static void print_table(FILE *f, const struct fm_probe_result *r, const struct row *rows, int n)
{
    char b[6][32];
    fprintf(f, "%s (%s) | %s | %d threads on %d cores | clock %.0f MHz\n", r->device_name, r->kind,
            r->arch[0] ? r->arch : "?", r->threads, r->cores, r->clock_mhz);
    fprintf(f, "  %-24s %12s %12s %12s %12s %10s\n", "figure", "min", "median", "max", "theory",
            "of theory");
    for (int i = 0; i < n; i++) {
        const struct fm_probe_stat *s = rows[i].s;
        char th[32] = "?", pct[16] = "-";
        bool bytes = strcmp(rows[i].unit, "B/s") == 0;
        if (s->theory > 0) {
            snprintf(th, sizeof(th), "%s%s", fm_format_si(s->theory, b[3]), rows[i].unit);
            snprintf(pct, sizeof(pct), "%.1f%%", 100.0 * s->median / s->theory);
        }
        fprintf(f, "  %-24s %10s%s %10s%s %10s%s %12s %10s\n", rows[i].label,
                fm_format_si(s->min, b[0]), bytes ? "B/s" : "F/s", fm_format_si(s->median, b[1]),
                bytes ? "B/s" : "F/s", fm_format_si(s->max, b[2]), bytes ? "B/s" : "F/s", th, pct);
    }
    fprintf(f, "F/s = FLOP/s (an FMA counts as 2); B/s = bytes read + written per second.\n");
    if (r->working_set_bytes)
        fprintf(f, "bandwidth working set %s (3 arrays)%s%s\n",
                fm_format_bytes((double)r->working_set_bytes, b[0]),
                r->cache_bytes ? ", last-level cache " : "",
                r->cache_bytes ? fm_format_bytes((double)r->cache_bytes, b[1]) : "");
    if (r->notes[0])
        fprintf(f, "how: %s\n", r->notes);
}

static void print_csv(FILE *f, const struct row *rows, int n)
{
    fprintf(f, "figure,unit,min,median,max,theory\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "%s,%s,%.6g,%.6g,%.6g,%.6g\n", rows[i].label, rows[i].unit, rows[i].s->min,
                rows[i].s->median, rows[i].s->max, rows[i].s->theory);
}

static void json_stat(struct fm_jw *w, const char *key, const struct fm_probe_stat *s)
{
    fm_jw_object(w, key, true);
    fm_jw_double(w, "min", s->min);
    fm_jw_double(w, "median", s->median);
    fm_jw_double(w, "max", s->max);
    if (s->theory > 0)
        fm_jw_double(w, "theory", s->theory);
    else
        fm_jw_null(w, "theory");
    fm_jw_end(w);
}

static void print_json(FILE *f, const struct fm_probe_result *r)
{
    struct fm_jw w;
    fm_jw_init(&w, f);
    fm_jw_object(&w, NULL, false);
    fm_jw_string(&w, "flopmeter", FM_VERSION);
    fm_jw_string(&w, "device", r->device_name);
    fm_jw_string(&w, "kind", r->kind);
    fm_jw_string(&w, "arch", r->arch);
    fm_jw_i64(&w, "threads", r->threads);
    fm_jw_i64(&w, "cores", r->cores);
    fm_jw_double(&w, "clock_mhz", r->clock_mhz);
    fm_jw_u64(&w, "mem_bytes", r->mem_bytes);
    fm_jw_u64(&w, "cache_bytes", r->cache_bytes);
    fm_jw_u64(&w, "working_set_bytes", r->working_set_bytes);
    static const char *const groups[] = {"fma_1t", "fma_all", "gemm"};
    for (int k = 0; k < 3; k++) {
        const struct fm_probe_stat *v = k == 0 ? r->fma_1t : k == 1 ? r->fma_all : r->gemm;
        fm_jw_object(&w, groups[k], false);
        for (int p = 0; p < FM_PREC_COUNT; p++) {
            if (v[p].median > 0)
                json_stat(&w, fm_precision_name((enum fm_precision)p), &v[p]);
        }
        fm_jw_end(&w);
    }
    json_stat(&w, "bw_copy", &r->bw_copy);
    json_stat(&w, "bw_triad", &r->bw_triad);
    fm_jw_string(&w, "units", "FLOP/s (an FMA is 2 FLOPs); bytes/s read + written");
    fm_jw_string(&w, "notes", r->notes);
    fm_jw_end(&w);
    fm_jw_finish(&w);
}

enum fm_status fm_report_probe(FILE *f, const struct fm_probe_result *r,
                               const struct fm_report_opts *opts)
{
    struct row rows[3 * FM_PREC_COUNT + 2];
    char labels[3 * FM_PREC_COUNT + 2][48];
    int n = collect(r, rows, labels);
    enum fm_format format = opts ? opts->format : FM_FORMAT_TABLE;
    if (format == FM_FORMAT_TABLE)
        print_table(f, r, rows, n);
    else if (format == FM_FORMAT_CSV)
        print_csv(f, rows, n);
    else
        print_json(f, r);
    return ferror(f) ? FM_ERR_IO : FM_OK;
}
