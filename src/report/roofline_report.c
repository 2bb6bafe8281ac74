/* The roofline of a session (Williams, Waterman & Patterson 2009): every layer's phases and the
 * whole network as points of operational intensity against the device's ceilings, as a table,
 * CSV or JSON. Times are predict_report.c's; the chart is svg_roofline.c's. */
#include "report.h"

#include <inttypes.h>
#include <string.h>

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

static void table_row(FILE *f, const char *idx, const char *name, const char *op, const char *cls,
                      const char *phase, const struct fm_phase_time *t)
{
    char b[5][32];
    fprintf(f, "  %4s  %-26.26s %-14.14s %-12.12s %-10s %9s %9s %8.3g %9s %10s %6.1f%%  %s\n", idx,
            name, op, cls, phase, fm_format_si(t->flops, b[0]), fm_format_si(t->bytes, b[1]),
            t->intensity, fm_format_si(t->peak, b[2]), fm_format_si(t->attainable, b[3]),
            t->peak > 0 ? 100.0 * t->attainable / t->peak : 0.0, fm_report_bound(t));
}

static void print_header(FILE *f, const struct fm_session *s, const struct fm_report_ceiling *ceil,
                         size_t nceil)
{
    const struct fm_prediction *p = s->prediction;
    const struct fm_device *d = p->opts.device;
    char b[2][32], storage[96];
    fprintf(f, "%s on %s | batch %lld, %s | precision %s, %s | bandwidth %s/s\n",
            fm_graph_name(s->graph), d->name, (long long)s->batch,
            p->mode == FM_MODE_TRAIN ? "training step" : "inference (forward only)",
            fm_report_precision_label(&p->opts), fm_report_storage(s, storage, sizeof(storage)),
            fm_format_bytes(d->mem_bw, b[0]));
    fprintf(f, "ceilings in use (dense datasheet peaks, 100%%):\n");
    for (size_t k = 0; k < nceil; k++) {
        char classes[160];
        class_list(ceil[k].classes, classes, sizeof(classes));
        fprintf(f, "  %-5s %-6s %9sFLOP/s   ridge %7.1f FLOP/B   for %s\n",
                fm_precision_name(ceil[k].prec), ceil[k].tensor ? "tensor" : "vector",
                fm_format_si(ceil[k].peak, b[1]), ceil[k].peak / d->mem_bw, classes);
    }
}

static void print_table(FILE *f, const struct fm_session *s, bool summary)
{
    const struct fm_graph *g = s->graph;
    const struct fm_prediction *p = s->prediction;
    struct fm_report_ceiling ceil[16];
    size_t nceil = fm_report_ceilings(g, p, ceil, 16);
    print_header(f, s, ceil, nceil);
    if (!summary) {
        fprintf(f, "  %4s  %-26s %-14s %-12s %-10s %9s %9s %8s %9s %10s %7s  %s\n", "#", "layer",
                "op", "class", "phase", "FLOP", "bytes", "FLOP/B", "ceiling", "attainable",
                "of ceil", "bound");
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
                table_row(f, first ? idx : "", first ? n->name : "", first ? n->op_name : "",
                          first ? fm_class_name(fm_op_class(n->op)) : "",
                          fm_phase_name((enum fm_phase)ph), t);
                first = false;
            }
        }
    }
    fprintf(f, "by phase (ceiling = work-weighted: FLOPs / sum(FLOPs_i / ceiling_i))\n");
    fprintf(f, "  %-10s %9s %9s %8s %9s %10s %7s %7s  %s\n", "phase", "FLOP", "bytes", "FLOP/B",
            "ceiling", "attainable", "ridge", "of ceil", "bound");
    for (int ph = 0; ph <= FM_PHASE_COUNT; ph++) {
        const struct fm_phase_time *t = ph < FM_PHASE_COUNT ? &p->total[ph] : &p->step;
        if (t->flops <= 0 && t->bytes <= 0)
            continue;
        char b[4][32];
        fprintf(f, "  %-10s %9s %9s %8.3g %9s %10s %7.1f %6.1f%%  %s\n",
                ph < FM_PHASE_COUNT ? fm_phase_name((enum fm_phase)ph) : "network",
                fm_format_si(t->flops, b[0]), fm_format_si(t->bytes, b[1]), t->intensity,
                fm_format_si(t->peak, b[2]), fm_format_si(t->attainable, b[3]), t->ridge,
                t->peak > 0 ? 100.0 * t->attainable / t->peak : 0.0, fm_report_bound(t));
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
    fprintf(f,
            "network as one point: OI %.1f FLOP/B, %s-bound at %.1f%% of its ceiling; %zu of %zu "
            "layer phases are memory-bound.\n",
            p->step.intensity, fm_report_bound(&p->step),
            p->step.peak > 0 ? 100.0 * p->step.attainable / p->step.peak : 0.0, mem, total);
    fm_report_memory_line(f, &s->memory);
    fprintf(f, "FLOP = 2 x MAC + other ops; bytes = each input read once, each output written once "
            "(no fusion, no cache reuse).\n");
}

static void roofline_tail(FILE *f, const struct fm_phase_time *t)
{
    fprintf(f, ",%.9g,%.9g,%.9g,%.9g,%s\n", t->intensity, t->peak, t->ridge,
            t->attainable, fm_report_bound(t));
}

static void print_csv(FILE *f, const struct fm_graph *g, const struct fm_counts *c,
                      const struct fm_prediction *p)
{
    fprintf(f, "index,name,op,class,phase,precision,unit,flops,bytes,intensity,ceiling_flops,ridge,"
            "attainable_flops,bound\n");
    fm_report_csv_layers(f, g, c, p, roofline_tail);
    for (int ph = 0; ph <= FM_PHASE_COUNT; ph++) {
        const struct fm_phase_time *t = ph < FM_PHASE_COUNT ? &p->total[ph] : &p->step;
        if (t->flops <= 0 && t->bytes <= 0)
            continue;
        fprintf(f, "total,\"%s\",,,%s,,,%.0f,%.0f,%.9g,%.9g,%.9g,%.9g,%s\n",
                ph < FM_PHASE_COUNT ? "total" : "network",
                ph < FM_PHASE_COUNT ? fm_phase_name((enum fm_phase)ph) : "all", t->flops, t->bytes,
                t->intensity, t->peak, t->ridge, t->attainable, fm_report_bound(t));
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
    fm_jw_string(w, "bound", fm_report_bound(t));
    fm_jw_end(w);
}

static void print_json(FILE *f, const struct fm_session *s)
{
    const struct fm_graph *g = s->graph;
    const struct fm_counts *c = s->counts;
    const struct fm_prediction *p = s->prediction;
    int64_t batch = s->batch;
    const struct fm_device *d = p->opts.device;
    struct fm_jw w;
    fm_jw_init(&w, f);
    fm_jw_object(&w, NULL, false);
    fm_jw_string(&w, "flopmeter", FM_VERSION);
    fm_jw_string(&w, "model", fm_graph_name(g));
    fm_jw_string(&w, "device", d->name);
    fm_jw_i64(&w, "batch", batch);
    fm_jw_string(&w, "mode", fm_mode_name(p->mode));
    fm_jw_string(&w, "precision", fm_report_precision_label(&p->opts));
    fm_report_json_storage(&w, s);
    fm_jw_double(&w, "bandwidth_bytes_per_s", d->mem_bw);
    struct fm_report_ceiling ceil[16];
    size_t nceil = fm_report_ceilings(g, p, ceil, 16);
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
    fm_report_json_memory(&w, &s->memory);
    fm_jw_end(&w);
    fm_jw_finish(&w);
}

enum fm_status fm_report_roofline(FILE *f, const struct fm_session *s,
                                  const struct fm_report_opts *opts)
{
    struct fm_report_opts o;
    if (!opts)
        fm_report_opts_init(&o);
    else
        o = *opts;
    const struct fm_prediction *p = s->prediction;
    if (!p)
        return fm_report_lacks(s->ctx, "roofline", "a prediction (a session with a device)");
    if (o.format == FM_FORMAT_TABLE)
        print_table(f, s, o.summary);
    else if (o.format == FM_FORMAT_CSV)
        print_csv(f, s->graph, s->counts, p);
    else
        print_json(f, s);
    return fm_report_end(s->ctx, f);
}
