/* flopmeter probe: this machine's (or a GPU's) own ceilings, measured, next to the theoretical
 * figures; --save writes them as a measured device that roofline, predict, utilization and
 * measure accept. The probes are the library's (fm_probe); this file only prints. */
#include "cli.h"
#include "../../src/core/jsonw.h"

#include <string.h>
#include <unistd.h>

static const char description[] =
    "Measures the device's ceilings. On the CPU: peak FMA throughput (fp32, fp64, and bf16 where\n"
    "the CPU has AVX512_BF16) on one thread and on all threads, with independent chains of\n"
    "vector FMAs; memory bandwidth (STREAM copy and triad) on arrays several times the\n"
    "last-level cache. On a GPU (cuda, cuda:N): FMA peaks, GEMM through cuBLASLt, and device\n"
    "memory bandwidth. Each figure is the min / median / max over --repetitions, next to the\n"
    "theoretical figure (CPU: FLOP per cycle per core x clock x cores, from cpuid and cpufreq;\n"
    "a '?' where it cannot be known). An FMA counts as 2 FLOPs; bandwidth counts bytes read +\n"
    "written by the loop.\n\n"
    "--save FILE writes a device JSON file with the medians (all-thread FMA peaks, the larger\n"
    "bandwidth) as a measured device; use it with --devices FILE --device NAME in roofline,\n"
    "predict and utilization, or --spec in measure.\n\n"
    "examples:\n"
    "  flopmeter probe\n"
    "  flopmeter probe --threads 1 --repetitions 9 --format json\n"
    "  flopmeter probe --save this-machine.json     (it prints the device's name)\n"
    "  flopmeter roofline resnet50 --devices this-machine.json --device NAME";

static void progress(void *user, const char *what, int done, int total)
{
    (void)user;
    if (done < total)
        fprintf(stderr, "\rprobing %-32s (%d/%d)", what, done + 1, total);
    else
        fprintf(stderr, "\r%60s\r", "");
    fflush(stderr);
}

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

static void print_table(const struct fm_probe_result *r, const struct row *rows, int n)
{
    char b[6][32];
    printf("%s (%s) | %s | %d threads on %d cores | clock %.0f MHz\n", r->device_name, r->kind,
           r->arch[0] ? r->arch : "?", r->threads, r->cores, r->clock_mhz);
    printf("  %-24s %12s %12s %12s %12s %10s\n", "figure", "min", "median", "max", "theory",
           "of theory");
    for (int i = 0; i < n; i++) {
        const struct fm_probe_stat *s = rows[i].s;
        char th[32] = "?", pct[16] = "-";
        bool bytes = strcmp(rows[i].unit, "B/s") == 0;
        if (s->theory > 0) {
            snprintf(th, sizeof(th), "%s%s", fm_format_si(s->theory, b[3]), rows[i].unit);
            snprintf(pct, sizeof(pct), "%.1f%%", 100.0 * s->median / s->theory);
        }
        printf("  %-24s %10s%s %10s%s %10s%s %12s %10s\n", rows[i].label,
               fm_format_si(s->min, b[0]), bytes ? "B/s" : "F/s", fm_format_si(s->median, b[1]),
               bytes ? "B/s" : "F/s", fm_format_si(s->max, b[2]), bytes ? "B/s" : "F/s", th, pct);
    }
    printf("F/s = FLOP/s (an FMA counts as 2); B/s = bytes read + written per second.\n");
    if (r->working_set_bytes)
        printf("bandwidth working set %s (3 arrays)%s%s\n",
               fm_format_bytes((double)r->working_set_bytes, b[0]),
               r->cache_bytes ? ", last-level cache " : "",
               r->cache_bytes ? fm_format_bytes((double)r->cache_bytes, b[1]) : "");
    if (r->notes[0])
        printf("how: %s\n", r->notes);
}

static void print_csv(const struct row *rows, int n)
{
    printf("figure,unit,min,median,max,theory\n");
    for (int i = 0; i < n; i++)
        printf("%s,%s,%.6g,%.6g,%.6g,%.6g\n", rows[i].label, rows[i].unit, rows[i].s->min,
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

static void print_json(const struct fm_probe_result *r)
{
    struct fm_jw w;
    fm_jw_init(&w, stdout);
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

int cmd_probe(int argc, char **argv)
{
    const char *device = "cpu", *save = NULL;
    int64_t threads = 0, reps = 5;
    double seconds = 0.2;
    int format = CLI_FORMAT_TABLE;
    struct cli_opt opts[] = {
        {"device", CLI_STRING, &device, NULL, "cpu|cuda[:N]", "what to probe (default cpu)", NULL,
         NULL},
        {"threads", CLI_UINT, &threads, NULL, "T", "CPU threads for the all-thread figures "
         "(default: every CPU this process may use)", NULL, NULL},
        {"repetitions", CLI_INT, &reps, NULL, "R", "repetitions of each figure (default 5)", NULL,
         NULL},
        {"seconds", CLI_DOUBLE, &seconds, NULL, "S", "time budget of each figure, all "
         "repetitions (default 0.2)", NULL, NULL},
        {"save", CLI_STRING, &save, NULL, "FILE", "write the medians as a measured device JSON "
         "file", NULL, NULL},
        {"format", CLI_CHOICE, &format, CLI_FORMAT_CHOICES, NULL, "output format (default table)",
         NULL, NULL},
        {0},
    };
    int r = cli_parse("probe", "[options]", description, opts, argc, argv, NULL, 0, 0);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    if (!(seconds > 0) || seconds > 600) {
        fprintf(stderr, "flopmeter probe: --seconds must be in (0, 600]\n");
        return FM_EXIT_USAGE;
    }
    if (reps > 1000) {
        fprintf(stderr, "flopmeter probe: --repetitions must be at most 1000\n");
        return FM_EXIT_USAGE;
    }
    if (threads > 1024) {
        fprintf(stderr, "flopmeter probe: --threads must be at most 1024\n");
        return FM_EXIT_USAGE;
    }
    struct fm_ctx *ctx = NULL;
    if (fm_ctx_new(NULL, &ctx)) {
        fprintf(stderr, "flopmeter: out of memory\n");
        return FM_EXIT_FAIL;
    }
    struct fm_probe_opts po;
    fm_probe_opts_init(&po);
    po.device = device;
    po.threads = (int)threads;
    po.repetitions = (int)reps;
    po.seconds = seconds;
    if (isatty(2))
        po.progress = progress;
    struct fm_probe_result *res = fm_alloc(ctx, sizeof(*res));
    enum fm_status st = res ? fm_probe(ctx, &po, res) : FM_ERR_NOMEM;
    if (st) {
        r = res ? cli_fail(ctx, st) : FM_EXIT_FAIL;
        goto out;
    }
    struct row rows[3 * FM_PREC_COUNT + 2];
    char labels[3 * FM_PREC_COUNT + 2][48];
    int n = collect(res, rows, labels);
    if (format == CLI_FORMAT_TABLE)
        print_table(res, rows, n);
    else if (format == CLI_FORMAT_CSV)
        print_csv(rows, n);
    else
        print_json(res);
    if (save) {
        struct fm_device dev;
        if (fm_probe_to_device(res, &dev) != FM_OK) {
            fprintf(stderr, "flopmeter probe: the probe gave no device to save\n");
            r = FM_EXIT_FAIL;
            goto out;
        }
        st = fm_device_save_json(ctx, &dev, save);
        if (st) {
            r = cli_fail(ctx, st);
            goto out;
        }
        fprintf(stderr, "saved measured device '%s' to %s (use --devices %s --device '%s')\n",
                dev.name, save, save, dev.name);
    }
    if (fflush(stdout) || ferror(stdout)) {
        fprintf(stderr, "flopmeter: could not write the output\n");
        r = FM_EXIT_FAIL;
    }
out:
    fm_dealloc(ctx, res);
    fm_ctx_free(ctx);
    return r;
}
