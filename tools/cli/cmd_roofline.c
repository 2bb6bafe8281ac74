/* flopmeter roofline MODEL --device D: every layer's phases and the whole network placed on the
 * device's roofline (operational intensity, attainable FLOP/s, memory- or compute-bound), and
 * optionally the chart as SVG. Times are not its business: that is flopmeter predict. */
#include "cli_analysis.h"
#include "../../src/core/jsonw.h"

#include <inttypes.h>
#include <string.h>

static const char description[] =
    "Places each layer's forward, input-gradient, weight-gradient and optimizer work on the\n"
    "device's roofline (Williams, Waterman & Patterson 2009): operational intensity OI =\n"
    "FLOPs / bytes moved (an unfused one-kernel-per-op execution), attainable FLOP/s =\n"
    "min(ceiling, OI x bandwidth), memory-bound when OI is below the ridge point (ceiling /\n"
    "bandwidth). The ceiling is the tensor-core peak of --precision for conv, matmul and\n"
    "attention (when the device has one), the vector peak otherwise. The whole network is also\n"
    "one point: total FLOPs over total bytes, against the work-weighted ceiling.\n\n"
    "--svg FILE draws the chart: ceilings and ridge points, one dot per layer (area = its\n"
    "share of the predicted step time, at the PPP of --ppp-compute/--ppp-memory), the network.\n\n"
    "csv: one row per layer and phase, then one per phase total and the network.\n"
    "json: ceilings, layers with their phases, phase totals, network (docs/roofline.md).\n\n"
    "examples:\n"
    "  flopmeter roofline resnet50 --device a100 --batch 64\n"
    "  flopmeter roofline resnet50 --device a100 --precision torch-default --svg r50.svg\n"
    "  flopmeter roofline mobilenet_v2 --device h100 --infer --precision bf16 --format csv";

/* A ceiling in use: precision and unit kind, and which classes ran on it. */
struct ceiling {
    enum fm_precision prec;
    bool tensor;
    double peak;
    unsigned classes;    /* bit per enum fm_class; bit FM_CLASS_COUNT = optimizer */
};

static size_t collect_ceilings(const struct fm_graph *g, const struct fm_prediction *p,
                               struct ceiling *out, size_t max)
{
    size_t n = 0;
    for (size_t id = 0; id < p->n_nodes; id++) {
        enum fm_class cls = fm_op_class(fm_graph_node(g, (fm_nid)id)->op);
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            const struct fm_phase_time *t = &p->nodes[id][ph];
            if (t->flops <= 0)
                continue;
            unsigned bit = ph == FM_PHASE_OPTIMIZER ? 1u << FM_CLASS_COUNT : 1u << cls;
            size_t k = 0;
            while (k < n && !(out[k].prec == t->precision && out[k].tensor == t->tensor))
                k++;
            if (k == n) {
                if (n == max)
                    continue;
                out[n++] = (struct ceiling){t->precision, t->tensor, t->peak, 0};
            }
            out[k].classes |= bit;
        }
    }
    return n;
}

static void class_list(unsigned classes, char *buf, size_t size)
{
    int len = 0;
    buf[0] = '\0';
    for (int k = 0; k <= FM_CLASS_COUNT && len < (int)size; k++) {
        if (classes & (1u << k))
            len += snprintf(buf + len, size - (size_t)len, "%s%s", len ? ", " : "",
                            k == FM_CLASS_COUNT ? "optimizer" : fm_class_name((enum fm_class)k));
    }
}

static const char *bound_word(const struct fm_phase_time *t)
{
    if (t->bytes <= 0)
        return "compute";
    return t->memory_bound ? "memory" : "compute";
}

static void table_row(const char *idx, const char *name, const char *op, const char *cls,
                      const char *phase, const struct fm_phase_time *t)
{
    char b[5][32];
    printf("  %4s  %-26.26s %-14.14s %-12.12s %-10s %9s %9s %8.3g %9s %10s %6.1f%%  %s\n", idx,
           name, op, cls, phase, fm_format_si(t->flops, b[0]), fm_format_si(t->bytes, b[1]), t->intensity,
           fm_format_si(t->peak, b[2]), fm_format_si(t->attainable, b[3]),
           t->peak > 0 ? 100.0 * t->attainable / t->peak : 0.0, bound_word(t));
}

static void print_header(const struct fm_graph *g, const struct cli_model_opts *m,
                         const struct fm_prediction *p, const struct ceiling *ceil, size_t nceil)
{
    const struct fm_device *d = p->opts.device;
    char b[2][32];
    printf("%s on %s | batch %lld, %s | precision %s | bandwidth %s/s\n", fm_graph_name(g),
           d->name, (long long)m->batch,
           p->mode == FM_MODE_TRAIN ? "training step" : "inference (forward only)",
           cli_precision_label(&p->opts), fm_format_bytes(d->mem_bw, b[0]));
    printf("ceilings in use (dense datasheet peaks, 100%%):\n");
    for (size_t k = 0; k < nceil; k++) {
        char classes[160];
        class_list(ceil[k].classes, classes, sizeof(classes));
        printf("  %-5s %-6s %9sFLOP/s   ridge %7.1f FLOP/B   for %s\n",
               fm_precision_name(ceil[k].prec), ceil[k].tensor ? "tensor" : "vector",
               fm_format_si(ceil[k].peak, b[1]), ceil[k].peak / d->mem_bw, classes);
    }
}

static void print_table(const struct fm_graph *g, const struct cli_model_opts *m,
                        const struct fm_prediction *p, bool summary)
{
    struct ceiling ceil[16];
    size_t nceil = collect_ceilings(g, p, ceil, 16);
    print_header(g, m, p, ceil, nceil);
    if (!summary) {
        printf("  %4s  %-26s %-14s %-12s %-10s %9s %9s %8s %9s %10s %7s  %s\n", "#", "layer", "op",
               "class", "phase", "FLOP", "bytes", "FLOP/B", "ceiling", "attainable", "of ceil",
               "bound");
        const fm_nid *order = fm_graph_topo_order(g);
        for (size_t i = 0; i < p->n_nodes; i++) {
            const struct fm_node *n = fm_graph_node(g, order[i]);
            char idx[24];
            snprintf(idx, sizeof(idx), "%zu", i + 1);
            bool first = true;
            for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
                const struct fm_phase_time *t = &p->nodes[order[i]][ph];
                if (t->flops <= 0 && t->bytes <= 0)
                    continue;
                table_row(first ? idx : "", first ? n->name : "", first ? n->op_name : "",
                          first ? fm_class_name(fm_op_class(n->op)) : "",
                          fm_phase_name((enum fm_phase)ph), t);
                first = false;
            }
        }
    }
    printf("by phase (ceiling = work-weighted: FLOPs / sum(FLOPs_i / ceiling_i))\n");
    printf("  %-10s %9s %9s %8s %9s %10s %7s %7s  %s\n", "phase", "FLOP", "bytes", "FLOP/B",
           "ceiling", "attainable", "ridge", "of ceil", "bound");
    for (int ph = 0; ph <= FM_PHASE_COUNT; ph++) {
        const struct fm_phase_time *t = ph < FM_PHASE_COUNT ? &p->total[ph] : &p->step;
        if (t->flops <= 0 && t->bytes <= 0)
            continue;
        char b[4][32];
        printf("  %-10s %9s %9s %8.3g %9s %10s %7.1f %6.1f%%  %s\n",
               ph < FM_PHASE_COUNT ? fm_phase_name((enum fm_phase)ph) : "network", fm_format_si(t->flops, b[0]),
               fm_format_si(t->bytes, b[1]), t->intensity, fm_format_si(t->peak, b[2]),
               fm_format_si(t->attainable, b[3]), t->ridge,
               t->peak > 0 ? 100.0 * t->attainable / t->peak : 0.0, bound_word(t));
    }
    size_t mem = 0, total = 0;
    for (size_t id = 0; id < p->n_nodes; id++) {
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            const struct fm_phase_time *t = &p->nodes[id][ph];
            if (t->flops <= 0 && t->bytes <= 0)
                continue;
            total++;
            mem += t->memory_bound || t->flops <= 0;
        }
    }
    printf("network as one point: OI %.1f FLOP/B, %s-bound at %.1f%% of its ceiling; %zu of %zu "
           "layer phases are memory-bound.\n",
           p->step.intensity, bound_word(&p->step),
           p->step.peak > 0 ? 100.0 * p->step.attainable / p->step.peak : 0.0, mem, total);
    printf("FLOP = 2 x MAC + other ops; bytes = each input read once, each output written once "
           "(no fusion, no cache reuse).\n");
}

static void print_csv(const struct fm_graph *g, const struct fm_counts *c,
                      const struct fm_prediction *p)
{
    printf("index,name,op,class,phase,precision,unit,flops,bytes,intensity,ceiling_flops,ridge,"
           "attainable_flops,bound\n");
    const fm_nid *order = fm_graph_topo_order(g);
    for (size_t i = 0; i < p->n_nodes; i++) {
        const struct fm_node *n = fm_graph_node(g, order[i]);
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            const struct fm_phase_time *t = &p->nodes[order[i]][ph];
            const struct fm_work *w = &c->nodes[order[i]].phase[ph];
            if (t->flops <= 0 && t->bytes <= 0)
                continue;
            printf("%zu,\"%s\",%s,%s,%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%.9g,%.9g,%.9g,%.9g,%s\n",
                   i + 1, n->name, n->op_name, fm_class_name(fm_op_class(n->op)),
                   fm_phase_name((enum fm_phase)ph), fm_precision_name(t->precision),
                   t->tensor ? "tensor" : "vector", fm_work_flops(w),
                   w->bytes_read + w->bytes_written, t->intensity, t->peak, t->ridge,
                   t->attainable, bound_word(t));
        }
    }
    for (int ph = 0; ph <= FM_PHASE_COUNT; ph++) {
        const struct fm_phase_time *t = ph < FM_PHASE_COUNT ? &p->total[ph] : &p->step;
        if (t->flops <= 0 && t->bytes <= 0)
            continue;
        printf("total,\"%s\",,,%s,,,%.0f,%.0f,%.9g,%.9g,%.9g,%.9g,%s\n",
               ph < FM_PHASE_COUNT ? "total" : "network",
               ph < FM_PHASE_COUNT ? fm_phase_name((enum fm_phase)ph) : "all", t->flops, t->bytes,
               t->intensity, t->peak, t->ridge, t->attainable, bound_word(t));
    }
}

static void json_point(struct fm_jw *w, const char *key, const struct fm_phase_time *t,
                       uint64_t flops, uint64_t bytes)
{
    fm_jw_object(w, key, true);
    fm_jw_u64(w, "flops", flops);
    fm_jw_u64(w, "bytes", bytes);
    fm_jw_double(w, "intensity", t->intensity);
    fm_jw_double(w, "ceiling_flops", t->peak);
    fm_jw_double(w, "ridge", t->ridge);
    fm_jw_double(w, "attainable_flops", t->attainable);
    fm_jw_string(w, "bound", bound_word(t));
    fm_jw_end(w);
}

static void print_json(const struct fm_graph *g, const struct cli_model_opts *m,
                       const struct fm_counts *c, const struct fm_prediction *p)
{
    const struct fm_device *d = p->opts.device;
    struct fm_jw w;
    fm_jw_init(&w, stdout);
    fm_jw_object(&w, NULL, false);
    fm_jw_string(&w, "flopmeter", FM_VERSION);
    fm_jw_string(&w, "model", fm_graph_name(g));
    fm_jw_string(&w, "device", d->name);
    fm_jw_i64(&w, "batch", m->batch);
    fm_jw_string(&w, "mode", fm_mode_name(p->mode));
    fm_jw_string(&w, "precision", cli_precision_label(&p->opts));
    fm_jw_double(&w, "bandwidth_bytes_per_s", d->mem_bw);
    struct ceiling ceil[16];
    size_t nceil = collect_ceilings(g, p, ceil, 16);
    fm_jw_array(&w, "ceilings", false);
    for (size_t k = 0; k < nceil; k++) {
        fm_jw_object(&w, NULL, true);
        fm_jw_string(&w, "precision", fm_precision_name(ceil[k].prec));
        fm_jw_string(&w, "unit", ceil[k].tensor ? "tensor" : "vector");
        fm_jw_double(&w, "peak_flops", ceil[k].peak);
        fm_jw_double(&w, "ridge", ceil[k].peak / d->mem_bw);
        fm_jw_array(&w, "classes", true);
        for (int b = 0; b <= FM_CLASS_COUNT; b++) {
            if (ceil[k].classes & (1u << b))
                fm_jw_string(&w, NULL,
                             b == FM_CLASS_COUNT ? "optimizer" : fm_class_name((enum fm_class)b));
        }
        fm_jw_end(&w);
        fm_jw_end(&w);
    }
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
            const struct fm_work *wk = &c->nodes[order[i]].phase[ph];
            if (t->flops <= 0 && t->bytes <= 0)
                continue;
            json_point(&w, fm_phase_name((enum fm_phase)ph), t, fm_work_flops(wk),
                       wk->bytes_read + wk->bytes_written);
        }
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    fm_jw_object(&w, "phases", false);
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
        const struct fm_work *wk = &c->total[ph];
        json_point(&w, fm_phase_name((enum fm_phase)ph), &p->total[ph], fm_work_flops(wk),
                   wk->bytes_read + wk->bytes_written);
    }
    fm_jw_end(&w);
    uint64_t flops = 0, bytes = 0;
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
        flops += fm_work_flops(&c->total[ph]);
        bytes += c->total[ph].bytes_read + c->total[ph].bytes_written;
    }
    json_point(&w, "network", &p->step, flops, bytes);
    fm_jw_end(&w);
    fm_jw_finish(&w);
}

int cmd_roofline(int argc, char **argv)
{
    struct cli_model_opts m;
    struct cli_analysis_opts a;
    struct cli_opt opts[CLI_MODEL_OPTS_MAX + CLI_ANALYSIS_OPTS_MAX + 4] = {0};
    int n = cli_model_opts_declare(&m, opts);
    n += cli_analysis_opts_declare(&a, opts + n, CLI_AN_DEVICE | CLI_AN_PRECISION | CLI_AN_PPP);
    const char *svg = NULL;
    bool summary = false;
    opts[n++] = (struct cli_opt){"svg", CLI_STRING, &svg, NULL, "FILE",
                                 "also write the roofline chart as SVG to FILE", NULL, NULL};
    opts[n++] = (struct cli_opt){"summary", CLI_FLAG, &summary, NULL, NULL,
                                 "table: ceilings, phase totals and the network only", NULL, NULL};
    const char *pos[1];
    int r = cli_parse("roofline", "MODEL --device NAME [options]", description, opts, argc, argv,
                      pos, 1, 1);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;

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
    enum fm_status st;
    if ((r = cli_devices_open(ctx, a.devices_file, &devs)))
        goto out;
    if ((r = cli_analysis_setup(ctx, &a, &m, devs, &dev, &po)))
        goto out;
    if ((r = cli_model_load(ctx, pos[0], &m, &g)))
        goto out;
    struct fm_count_opts co;
    cli_count_opts(&m, &co);
    if ((st = fm_count(ctx, g, &co, &c)) || (st = fm_predict(ctx, g, c, &po, &p))) {
        r = cli_fail(ctx, st);
        goto out;
    }
    if (m.format == CLI_FORMAT_TABLE)
        print_table(g, &m, p, summary);
    else if (m.format == CLI_FORMAT_CSV)
        print_csv(g, c, p);
    else
        print_json(g, &m, c, p);
    if (svg) {
        FILE *f = fopen(svg, "w");
        struct fm_svg_opts so;
        fm_svg_opts_init(&so);
        st = f ? fm_svg_roofline(f, g, c, p, &so) : FM_ERR_IO;
        if (!f || fclose(f) != 0 || st) {
            fprintf(stderr, "flopmeter: could not write the chart to %s\n", svg);
            r = FM_EXIT_FAIL;
            goto out;
        }
        if (m.format == CLI_FORMAT_TABLE)
            printf("chart: %s\n", svg);
    }
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
