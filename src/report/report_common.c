/* Pieces several renderers share (report.h): labels, percentages, the ceilings a prediction
 * used. They format; they compute nothing the analyses did not. */
#include "report.h"

#include <inttypes.h>
#include <stdio.h>

const char *fm_report_precision_label(const struct fm_predict_opts *po)
{
    return po->torch_default ? "torch-default" : fm_precision_name(po->precision);
}

const char *fm_report_bound(const struct fm_phase_time *t)
{
    if (t->bytes <= 0)
        return "compute";
    return t->memory_bound ? "memory" : "compute";
}

const char *fm_report_pct(double x, char *buf)
{
    snprintf(buf, FM_FORMAT_SIZE, "%.1f%%", 100 * x);
    return buf;
}

size_t fm_report_ceilings(const struct fm_graph *g, const struct fm_prediction *p,
                          struct fm_report_ceiling *out, size_t max)
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
                out[n++] = (struct fm_report_ceiling){t->precision, t->tensor, t->peak, 0};
            }
            out[k].classes |= bit;
        }
    }
    return n;
}

void fm_report_json_loss(struct fm_jw *w, const struct fm_graph *g, const struct fm_loss_info *l)
{
    fm_jw_string(w, "summary", l->summary);
    fm_jw_array(w, "losses", false);
    for (int i = 0; i < l->n; i++) {
        const struct fm_loss *x = &l->loss[i];
        fm_jw_object(w, NULL, true);
        fm_jw_string(w, "kind", fm_loss_kind_name(x->kind));
        fm_jw_bool(w, "added", x->added);
        fm_jw_string(w, "node", fm_graph_node(g, x->node)->name);
        fm_jw_string(w, "output", fm_graph_tensor(g, x->output)->name);
        if (x->classes)
            fm_jw_i64(w, "classes", x->classes);
        if (x->positions)
            fm_jw_i64(w, "positions", x->positions);
        fm_jw_end(w);
    }
    fm_jw_end(w);
}

void fm_report_csv_layers(FILE *f, const struct fm_graph *g, const struct fm_counts *c,
                          const struct fm_prediction *p,
                          void (*tail)(FILE *f, const struct fm_phase_time *t))
{
    const fm_nid *order = fm_graph_topo_order(g);
    for (size_t i = 0; i < p->n_nodes; i++) {
        const struct fm_node *n = fm_graph_node(g, order[i]);
        for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
            const struct fm_phase_time *t = &p->nodes[order[i]][ph];
            const struct fm_work *w = &c->nodes[order[i]].phase[ph];
            if (t->flops <= 0 && t->bytes <= 0)
                continue;
            fprintf(f, "%zu,\"%s\",%s,%s,%s,%s,%s,%" PRIu64 ",%" PRIu64, i + 1, n->name,
                    n->op_name, fm_class_name(fm_op_class(n->op)),
                    fm_phase_name((enum fm_phase)ph), fm_precision_name(t->precision),
                    t->tensor ? "tensor" : "vector", fm_work_flops(w),
                    w->bytes_read + w->bytes_written);
            tail(f, t);
        }
    }
}

void fm_report_memory_line(FILE *f, const struct fm_memory_check *m)
{
    if (!m || !m->checked)
        return;
    char need[FM_FORMAT_SIZE], have[FM_FORMAT_SIZE];
    fm_format_bytes((double)m->needed_bytes, need);
    fm_format_bytes(m->device_bytes, have);
    const char *per = m->gpus > 1 ? " per GPU" : "";
    fprintf(f, "  fits device    %s: %s needed%s of %s (%.0f%%) -> %s", m->device, need, per,
            have, 100.0 * (double)m->needed_bytes / m->device_bytes,
            m->fits ? "fits" : "DOES NOT FIT");
    if (m->max_batch > 0)
        fprintf(f, "; largest batch that fits %" PRId64 "%s", m->max_batch, per);
    else if (m->max_batch == 0)
        fprintf(f, "; not even one sample fits");
    else
        fprintf(f, "; largest batch unknown (the model's batch could not be changed)");
    if (m->max_batch > 0 && m->gpus > 1)
        fprintf(f, " (global %" PRId64 " on %d GPUs)", m->max_batch * m->gpus, m->gpus);
    fprintf(f, "\n");
}

void fm_report_json_memory(struct fm_jw *w, const struct fm_memory_check *m)
{
    if (!m || !m->checked)
        return;
    fm_jw_object(w, "memory", false);
    fm_jw_string(w, "device", m->device);
    fm_jw_string(w, "mode", fm_mode_name(m->mode));
    fm_jw_i64(w, "batch", m->batch);
    fm_jw_i64(w, "gpus", m->gpus);
    fm_jw_u64(w, "needed_bytes", m->needed_bytes);
    fm_jw_double(w, "device_bytes", m->device_bytes);
    fm_jw_bool(w, "fits", m->fits);
    if (m->max_batch >= 0)
        fm_jw_i64(w, "max_batch", m->max_batch);
    else
        fm_jw_null(w, "max_batch");
    fm_jw_end(w);
}

void fm_report_json_storage(struct fm_jw *w, const struct fm_session *s)
{
    fm_jw_object(w, "storage", true);
    fm_jw_string(w, "activations", fm_dtype_name(s->storage_activations));
    fm_jw_string(w, "parameters", fm_dtype_name(s->storage_parameters));
    fm_jw_string(w, "how", s->storage_how);
    fm_jw_end(w);
}

const char *fm_report_storage(const struct fm_session *s, char *buf, size_t size)
{
    if (s->storage_activations == s->storage_parameters)
        snprintf(buf, size, "storage %s", fm_dtype_name(s->storage_activations));
    else
        snprintf(buf, size, "storage %s activations, %s weights (mixed precision)",
                 fm_dtype_name(s->storage_activations), fm_dtype_name(s->storage_parameters));
    return buf;
}

enum fm_status fm_report_end(struct fm_ctx *ctx, FILE *f)
{
    if (ferror(f))
        return fm_error(ctx, FM_ERR_IO, "could not write the report");
    return FM_OK;
}

enum fm_status fm_report_lacks(struct fm_ctx *ctx, const char *report, const char *what)
{
    return fm_error(ctx, FM_ERR_INVALID, "the %s report needs %s", report, what);
}
