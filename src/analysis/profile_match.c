/* Nsight Compute kernels matched to a counted graph's layers, with the likely cause of each
 * difference between the counter and the count. Kernels are matched only by the NVTX ranges
 * flopmeter's own CUDA steps push ("<layer> fwd" ...): a cuDNN or cuBLAS kernel's name does not
 * say which layer launched it, so without those ranges nothing is matched by guesswork. */
#include "../frontend/profile/profile.h"

#include <math.h>
#include <string.h>

static bool tensor_unknown(const struct fm_ncu_figures *f)
{
    return f->tensor_inst.known && f->tensor_inst.value > 0 && !f->tensor_flops.known;
}

/* "<layer> fwd" -> layer, phase; "optimizer SGD" -> the optimizer. */
static bool parse_range(const char *r, char *layer, size_t size, enum fm_phase *phase)
{
    if (strncmp(r, "optimizer ", 10) == 0 || strcmp(r, "optimizer") == 0) {
        snprintf(layer, size, "optimizer");
        *phase = FM_PHASE_OPTIMIZER;
        return true;
    }
    const char *sp = strrchr(r, ' ');
    if (!sp || sp == r)
        return false;
    static const char *const names[] = {"fwd", "bwd_data", "bwd_weight"};
    for (int k = 0; k < 3; k++) {
        if (strcmp(sp + 1, names[k]) == 0) {
            size_t n = (size_t)(sp - r);
            if (n >= size)
                return false;
            memcpy(layer, r, n);
            layer[n] = '\0';
            *phase = (enum fm_phase)k;
            return true;
        }
    }
    return false;
}

/* The likely cause of a row's difference, from the ratios and the op class. */
static void cause(struct fm_ncu_match_row *w, enum fm_class cls)
{
    char a[200] = "", b[120] = "";
    if (!w->counted) {
        snprintf(w->cause, sizeof(w->cause), "kernels outside any layer: work the step does "
                 "besides its layers (copies, casts, memsets, the framework's own kernels), "
                 "which flopmeter does not count");
        return;
    }
    double cf;
    if (!fm_ncu_counter_flops(&w->measured, &cf))
        snprintf(a, sizeof(a), "FLOPs: the file lacks the FP instruction metrics");
    else if (tensor_unknown(&w->measured))
        snprintf(a, sizeof(a), "FLOPs: tensor-core kernels, whose work is not in the FP "
                 "instruction counters (tensor FLOPs unknown)");
    else if (w->counted_flops == 0)
        snprintf(a, sizeof(a), "FLOPs: %s", cf > 0 ? "the counter sees work the count does not "
                 "have (layout transforms, padding copies)" : "none, as counted");
    else if (w->flops_ratio < 0.9)
        snprintf(a, sizeof(a), "FLOPs below the count: %s",
                 cls == FM_CLASS_CONV ? "a Winograd or FFT convolution algorithm (fewer "
                 "multiplications than direct convolution)"
                 : "part of the work ran as instructions the FP counters leave out (integer, "
                   "special-function or tensor-pipe)");
    else if (w->flops_ratio > 1.1)
        snprintf(a, sizeof(a), "FLOPs above the count: padding or tile rounding (whole tiles "
                 "computed), split-K reductions, or recomputation");
    else
        snprintf(a, sizeof(a), "FLOPs agree within 10%%");
    if (!w->measured.dram_bytes.known)
        snprintf(b, sizeof(b), "; bytes: the file lacks DRAM metrics");
    else if (!isnan(w->bytes_ratio) && w->bytes_ratio < 0.9)
        snprintf(b, sizeof(b), "; DRAM bytes below the unfused count: reuse in L2");
    else if (!isnan(w->bytes_ratio) && w->bytes_ratio > 1.1)
        snprintf(b, sizeof(b), "; DRAM bytes above the count: tiles re-read, workspace traffic");
    snprintf(w->cause, sizeof(w->cause), "%s%s", a, b);
}

static void ratios(struct fm_ncu_match_row *w)
{
    double cf;
    w->flops_ratio = NAN;
    w->bytes_ratio = NAN;
    if (w->counted && w->counted_flops && fm_ncu_counter_flops(&w->measured, &cf) &&
        !tensor_unknown(&w->measured))
        w->flops_ratio = cf / (double)w->counted_flops;
    if (w->counted && w->counted_bytes && w->measured.dram_bytes.known)
        w->bytes_ratio = w->measured.dram_bytes.value / (double)w->counted_bytes;
}

static uint64_t work_bytes(const struct fm_work *w)
{
    uint64_t b;
    return fm_add_ok(w->bytes_read, w->bytes_written, &b) ? b : UINT64_MAX;
}

enum fm_status fm_ncu_match(struct fm_ctx *ctx, const struct fm_ncu_profile *p,
                            const struct fm_graph *graph, const struct fm_counts *counts,
                            struct fm_ncu_match **out)
{
    if (!ctx || !p || !graph || !counts || !out)
        return ctx ? fm_error(ctx, FM_ERR_INVALID, "fm_ncu_match: NULL argument") : FM_ERR_INVALID;
    *out = NULL;
    struct fm_ncu_match *m = fm_alloc(ctx, sizeof(*m));
    if (!m)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory matching kernels to layers");
    m->ctx = ctx;
    m->rows = fm_alloc(ctx, (p->n_kernels + 1) * sizeof(*m->rows));
    if (!m->rows) {
        fm_dealloc(ctx, m);
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory matching kernels to layers");
    }
    /* the whole step, always */
    bool ovf = false;
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++) {
        m->step_counted_flops = fm_cadd(&ovf, m->step_counted_flops,
                                        fm_work_flops(&counts->total[ph]));
        m->step_counted_bytes = fm_cadd(&ovf, m->step_counted_bytes,
                                        work_bytes(&counts->total[ph]));
    }
    m->step_measured = p->totals;
    double cf;
    m->step_flops_ratio = NAN;
    if (m->step_counted_flops && fm_ncu_counter_flops(&p->totals, &cf) && !tensor_unknown(&p->totals))
        m->step_flops_ratio = cf / (double)m->step_counted_flops;

    size_t n_nodes = fm_graph_node_count(graph);
    size_t matched = 0, outside = SIZE_MAX;
    for (size_t i = 0; i < p->n_kernels; i++) {
        const struct fm_ncu_kernel *k = &p->kernels[i];
        char layer[256];
        enum fm_phase phase;
        fm_nid node = FM_NONE;
        bool ok = k->nvtx[0] && parse_range(k->nvtx, layer, sizeof(layer), &phase);
        if (ok && phase != FM_PHASE_OPTIMIZER) {
            ok = false;
            for (size_t n = 0; n < n_nodes && !ok; n++) {
                const struct fm_node *nd = fm_graph_node(graph, (fm_nid)n);
                if (nd && nd->name && strcmp(nd->name, layer) == 0) {
                    node = (fm_nid)n;
                    ok = true;
                }
            }
        }
        size_t r = 0;
        if (ok) {
            matched++;
            while (r < m->n_rows && !(m->rows[r].node == node && m->rows[r].phase == phase &&
                                      m->rows[r].counted))
                r++;
        } else {
            r = outside == SIZE_MAX ? m->n_rows : outside;
            outside = r;
        }
        struct fm_ncu_match_row *w = &m->rows[r];
        if (r == m->n_rows) {
            m->n_rows++;
            w->node = ok ? node : FM_NONE;
            w->phase = ok ? phase : FM_PHASE_COUNT;
            w->counted = ok;
            if (!ok) {
                w->layer = "(outside any layer)";
            } else if (phase == FM_PHASE_OPTIMIZER) {
                w->layer = "optimizer";
                w->counted_flops = fm_work_flops(&counts->total[FM_PHASE_OPTIMIZER]);
                w->counted_bytes = work_bytes(&counts->total[FM_PHASE_OPTIMIZER]);
            } else {
                w->layer = fm_graph_node(graph, node)->name;
                if ((size_t)node < counts->n_nodes) {
                    w->counted_flops = fm_work_flops(&counts->nodes[node].phase[phase]);
                    w->counted_bytes = work_bytes(&counts->nodes[node].phase[phase]);
                }
            }
        }
        fm_ncu_figures_add(&w->measured, &k->fig, w->kernels == 0);
        w->kernels++;
    }
    for (size_t r = 0; r < m->n_rows; r++) {
        struct fm_ncu_match_row *w = &m->rows[r];
        ratios(w);
        enum fm_class cls = FM_CLASS_OTHER;
        if (w->node != FM_NONE)
            cls = fm_op_class(fm_graph_node(graph, w->node)->op);
        cause(w, cls);
    }
    m->by_nvtx = matched > 0;
    if (m->by_nvtx) {
        snprintf(m->method, sizeof(m->method), "%zu of %zu kernels matched to layers by the NVTX "
                 "ranges flopmeter's CUDA steps push (\"<layer> fwd\", \"<layer> bwd_data\", "
                 "\"<layer> bwd_weight\", \"optimizer SGD\"); the rest are outside any layer. "
                 "Profile one step, or every figure is a multiple of the count.", matched,
                 p->n_kernels);
    } else {
        /* no row is reported: the kernels are compared with the step as a whole */
        m->n_rows = 0;
        snprintf(m->method, sizeof(m->method), "no kernel matched to a layer: the file has %s; "
                 "kernel names (cuDNN, cuBLAS, CUTLASS) do not say which layer launched them, so "
                 "flopmeter does not guess. The whole file is compared with the whole step "
                 "(meaningful when the file holds exactly one step). Profile a CUDA step of "
                 "fm_measure with `ncu --nvtx` to match layers.",
                 p->has_nvtx ? "NVTX ranges, but none of the ones flopmeter's CUDA steps push"
                             : "no NVTX ranges (ncu --nvtx adds them)");
    }
    *out = m;
    return FM_OK;
}

void fm_ncu_match_free(struct fm_ncu_match *m)
{
    if (!m)
        return;
    fm_dealloc(m->ctx, m->rows);
    fm_dealloc(m->ctx, m);
}
