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

void fm_report_csv_point(FILE *f, size_t index, const struct fm_node *n, enum fm_phase phase,
                         const struct fm_phase_time *t, const struct fm_work *w)
{
    fprintf(f, "%zu,\"%s\",%s,%s,%s,%s,%s,%" PRIu64 ",%" PRIu64, index, n->name, n->op_name,
            fm_class_name(fm_op_class(n->op)), fm_phase_name(phase),
            fm_precision_name(t->precision), t->tensor ? "tensor" : "vector", fm_work_flops(w),
            w->bytes_read + w->bytes_written);
}
