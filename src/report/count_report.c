/* Renders the counts of a graph as a table (SI suffixes, for people), CSV or JSON (exact
 * integers, for programs; the JSON is the contract of docs/json.md, extended, never broken).
 * It computes nothing that fm_count did not: totals come from fm_counts, not from re-adding. */
#include "report.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void fm_report_opts_init(struct fm_report_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->format = FM_FORMAT_TABLE;
    o->layers = true;
}

static const char *const convention =
    "FLOP = 2 x MAC + add + mul + div + cmp + special; MAC = multiply-accumulate";

static const char *optimizer_long(enum fm_optimizer o)
{
    switch (o) {
    case FM_OPTIM_SGD: return "SGD with momentum";
    case FM_OPTIM_ADAM: return "Adam";
    default: return "no optimizer";
    }
}

/* Sums across phases are for display only, in double: each phase total fits in 64 bits (fm_count
 * checks), but their sum need not (a step of a huge batch), and must not wrap. */
static double phase_bytes(const struct fm_work *w)
{
    return (double)w->bytes_read + (double)w->bytes_written;
}

/* ---- table ---- */

static const char *si(double v, char *buf)
{
    return fm_format_si(v, buf);
}

/* "Conv 7x7 s2", "Conv 3x3 dw", "MaxPool 3x3 s2", else the op's name. */
static void op_label(const struct fm_graph *g, const struct fm_node *n, char *buf, size_t size)
{
    const struct fm_attrs *a = &n->attrs;
    if (n->op == FM_OP_CONV || n->op == FM_OP_CONV_TRANSPOSE) {
        const struct fm_tensor *w = fm_graph_tensor(g, n->in[1]);
        const struct fm_tensor *x = fm_graph_tensor(g, n->in[0]);
        int r = w->shape.rank;
        int len = r == 5 ? snprintf(buf, size, "%s %lldx%lldx%lld", n->op_name,
                                    (long long)w->shape.dims[2], (long long)w->shape.dims[3],
                                    (long long)w->shape.dims[4])
                         : snprintf(buf, size, "%s %lldx%lld", n->op_name,
                                    (long long)(r == 4 ? w->shape.dims[2] : 1),
                                    (long long)w->shape.dims[r - 1]);
        if (a->stride[0] != 1 || a->stride[1] != 1)
            len += snprintf(buf + len, size - (size_t)len, " s%lld", (long long)a->stride[1]);
        if (a->groups > 1 && a->groups == x->shape.dims[1])
            snprintf(buf + len, size - (size_t)len, " dw");
        else if (a->groups > 1)
            snprintf(buf + len, size - (size_t)len, " g%lld", (long long)a->groups);
        return;
    }
    if ((n->op == FM_OP_MAXPOOL || n->op == FM_OP_AVGPOOL) &&
        fm_graph_tensor(g, n->in[0])->shape.rank == 5) {
        snprintf(buf, size, "%s %lldx%lldx%lld s%lld", n->op_name, (long long)a->kernel_d,
                 (long long)a->kernel[0], (long long)a->kernel[1], (long long)a->stride_d);
        return;
    }
    if (n->op == FM_OP_MAXPOOL || n->op == FM_OP_AVGPOOL) {
        snprintf(buf, size, "%s %lldx%lld s%lld", n->op_name, (long long)a->kernel[0],
                 (long long)a->kernel[1], (long long)a->stride[0]);
        return;
    }
    if (n->op == FM_OP_CLIP && a->lo == 0.0 && a->hi == 6.0) {
        snprintf(buf, size, "ReLU6");
        return;
    }
    snprintf(buf, size, "%s%s", n->op_name, n->op == FM_OP_UNKNOWN ? " (?)" : "");
}

static void table_layers(FILE *f, const struct fm_graph *g, const struct fm_counts *c,
                         const struct fm_report_opts *o, bool *any_wonly)
{
    bool train = c->mode == FM_MODE_TRAIN;
    /* the layer column fits the longest name up to 60 (a PyTorch 2 module path,
     * model.layers.11.self_attn.q_proj, is longer than the 28 that held names before) */
    int width = 28;
    for (size_t i = 0; i < c->n_nodes; i++) {
        size_t len = strlen(fm_graph_node(g, (fm_nid)i)->name);
        if ((int)len > width)
            width = len > 60 ? 60 : (int)len;
    }
    fprintf(f, "  %4s  %-*s %-16s %-18s %9s %10s %12s %10s %7s\n", "#", width, "layer", "op",
            "output", "params", "fwd FLOP", train ? "bwd FLOP" : "", "bytes", "FLOP/B");
    const fm_nid *order = fm_graph_topo_order(g);
    for (size_t i = 0; i < c->n_nodes; i++) {
        fm_nid id = order[i];
        const struct fm_node *n = fm_graph_node(g, id);
        const struct fm_node_cost *nc = &c->nodes[id];
        char b1[32], b2[32], b3[32], b4[32], label[64], shape[64], bwd[40];
        op_label(g, n, label, sizeof(label));
        fm_shape_format(&fm_graph_tensor(g, n->out[0])->shape, shape, sizeof(shape));
        double bwd_flops = (double)fm_work_flops(&nc->phase[FM_PHASE_BWD_DATA]) +
                           (double)fm_work_flops(&nc->phase[FM_PHASE_BWD_WEIGHT]);
        bwd[0] = '\0';
        if (train) {
            bool wonly = fm_work_flops(&nc->phase[FM_PHASE_BWD_DATA]) == 0 &&
                         fm_work_flops(&nc->phase[FM_PHASE_BWD_WEIGHT]) > 0;
            snprintf(bwd, sizeof(bwd), "%s%s", si(bwd_flops, b2), wonly ? " (w)" : "");
            *any_wonly |= wonly;
        }
        double flops = 0, bytes = 0;
        for (int p = 0; p < FM_PHASE_COUNT; p++) {
            flops += (double)fm_work_flops(&nc->phase[p]);
            bytes += phase_bytes(&nc->phase[p]);
        }
        char oi[32];
        if (bytes > 0)
            snprintf(oi, sizeof(oi), "%.1f", flops / bytes);
        else
            snprintf(oi, sizeof(oi), "-");
        const char *fwd = nc->counted ? si((double)fm_work_flops(&nc->phase[FM_PHASE_FWD]), b1)
                                      : "uncounted";
        fprintf(f, "  %4zu  %-*.*s %-16.16s %-18.18s %9s %10s %12s %10s %7s\n", i + 1, width,
                width, n->name, label, shape, si((double)nc->params, b4), fwd, bwd, si(bytes, b3),
                oi);
        if (o->per_layer_detail) {
            for (int p = 0; p < FM_PHASE_COUNT; p++) {
                const struct fm_work *w = &nc->phase[p];
                if (!fm_work_flops(w) && !phase_bytes(w))
                    continue;
                fprintf(f, "        %-10s", fm_phase_name((enum fm_phase)p));
                for (int k = 0; k < FM_PRIM_COUNT; k++) {
                    if (w->prim[k])
                        fprintf(f, " %s %" PRIu64, fm_prim_name((enum fm_prim)k), w->prim[k]);
                }
                fprintf(f, " | read %" PRIu64 " B, written %" PRIu64 " B\n", w->bytes_read,
                        w->bytes_written);
            }
        }
    }
}

static void table_by_class(FILE *f, const struct fm_counts *c)
{
    char b[4][32];
    fprintf(f, "by class\n  %-14s %12s %12s %12s %12s %7s\n", "class", "fwd FLOP", "fwd MAC",
            "bwd_data", "bwd_weight", "share");
    double total = 0;
    for (int k = 0; k < FM_CLASS_COUNT; k++) {
        for (int p = 0; p < FM_PHASE_OPTIMIZER; p++)
            total += (double)fm_work_flops(&c->by_class[k][p]);
    }
    for (int k = 0; k < FM_CLASS_COUNT; k++) {
        if (!c->class_present[k])
            continue;
        const struct fm_work *w = c->by_class[k];
        double sum = (double)fm_work_flops(&w[0]) + (double)fm_work_flops(&w[1]) +
                     (double)fm_work_flops(&w[2]);
        fprintf(f, "  %-14s %12s %12s %12s %12s %6.2f%%\n", fm_class_name((enum fm_class)k),
                si((double)fm_work_flops(&w[FM_PHASE_FWD]), b[0]),
                si((double)fm_work_macs(&w[FM_PHASE_FWD]), b[1]),
                si((double)fm_work_flops(&w[FM_PHASE_BWD_DATA]), b[2]),
                si((double)fm_work_flops(&w[FM_PHASE_BWD_WEIGHT]), b[3]),
                total > 0 ? 100.0 * sum / total : 0.0);
    }
    double opt = (double)fm_work_flops(&c->total[FM_PHASE_OPTIMIZER]);
    double opt_bytes = phase_bytes(&c->total[FM_PHASE_OPTIMIZER]), step_bytes = 0;
    for (int p = 0; p < FM_PHASE_COUNT; p++)
        step_bytes += phase_bytes(&c->total[p]);
    if (opt > 0)
        fprintf(f, "  (share: of forward + backward FLOPs. The optimizer step is in no class: "
                "%sFLOP and %sB moved, %.1f%% of the step's FLOPs and %.1f%% of its bytes)\n",
                si(opt, b[0]), si(opt_bytes, b[1]), 100.0 * opt / (opt + total),
                step_bytes > 0 ? 100.0 * opt_bytes / step_bytes : 0.0);
    else
        fprintf(f, "  (share: of %s FLOPs)\n",
                c->mode == FM_MODE_TRAIN ? "forward + backward" : "forward");
}

/* ---- by module ---- */

/* One module's sums: the layers named MODULE or MODULE/Op (an ONNX file's PyTorch 2 module
 * paths; TorchScript's "/layer1/layer1.0/conv1/Conv" gives "/layer1/layer1.0/conv1"). */
struct mod_row {
    const char *name;      /* the first layer's name; the module is its first len bytes */
    size_t len;
    uint64_t layers, params;
    struct fm_work phase[FM_PHASE_COUNT];
};

static size_t module_len(const char *name)
{
    const char *s = strrchr(name, '/');
    return s && s != name ? (size_t)(s - name) : strlen(name);
}

static void work_add(struct fm_work *a, const struct fm_work *b)
{
    for (int k = 0; k < FM_PRIM_COUNT; k++)
        a->prim[k] = a->prim[k] + b->prim[k] < a->prim[k] ? UINT64_MAX : a->prim[k] + b->prim[k];
    a->bytes_read += b->bytes_read;
    a->bytes_written += b->bytes_written;
}

/* The modules in the order their first layer runs; NULL when out of memory. */
static struct mod_row *modules_of(const struct fm_graph *g, const struct fm_counts *c, size_t *n)
{
    *n = 0;
    struct mod_row *rows = fm_alloc(c->ctx, (c->n_nodes ? c->n_nodes : 1) * sizeof(*rows));
    if (!rows)
        return NULL;
    const fm_nid *order = fm_graph_topo_order(g);
    for (size_t i = 0; i < c->n_nodes; i++) {
        const char *name = fm_graph_node(g, order[i])->name;
        size_t len = module_len(name), r = *n;
        /* a module's layers mostly run together: search from the latest */
        while (r > 0 && !(rows[r - 1].len == len && !strncmp(rows[r - 1].name, name, len)))
            r--;
        struct mod_row *m;
        if (r == 0) {
            m = &rows[(*n)++];
            memset(m, 0, sizeof(*m));
            m->name = name;
            m->len = len;
        } else {
            m = &rows[r - 1];
        }
        const struct fm_node_cost *nc = &c->nodes[order[i]];
        m->layers++;
        m->params += nc->params;
        for (int p = 0; p < FM_PHASE_COUNT; p++)
            work_add(&m->phase[p], &nc->phase[p]);
    }
    return rows;
}

static void table_by_module(FILE *f, const struct fm_graph *g, const struct fm_counts *c)
{
    size_t n;
    struct mod_row *rows = modules_of(g, c, &n);
    if (!rows) {
        fprintf(f, "by module: out of memory\n");
        return;
    }
    char b[5][32];
    fprintf(f, "by module\n  %-40s %6s %10s %12s %12s %12s %10s\n", "module", "layers", "params",
            "fwd FLOP", "fwd MAC", "bwd FLOP", "bytes");
    for (size_t i = 0; i < n; i++) {
        const struct mod_row *m = &rows[i];
        double bwd = (double)fm_work_flops(&m->phase[FM_PHASE_BWD_DATA]) +
                     (double)fm_work_flops(&m->phase[FM_PHASE_BWD_WEIGHT]), bytes = 0;
        for (int p = 0; p < FM_PHASE_COUNT; p++)
            bytes += phase_bytes(&m->phase[p]);
        /* a long module path keeps its end, where the layer is named */
        int w = (int)m->len;
        const char *s = m->name;
        if (w > 40) {
            s += w - 37;
            w = 37;
        }
        fprintf(f, "  %s%-*.*s %6" PRIu64 " %10s %12s %12s %12s %10s\n",
                s != m->name ? "..." : "", s != m->name ? 37 : 40, w, s, m->layers,
                si((double)m->params, b[0]),
                si((double)fm_work_flops(&m->phase[FM_PHASE_FWD]), b[1]),
                si((double)fm_work_macs(&m->phase[FM_PHASE_FWD]), b[2]), si(bwd, b[3]),
                si(bytes, b[4]));
    }
    fm_dealloc(c->ctx, rows);
}

static void input_line(FILE *f, const struct fm_graph *g)
{
    bool any = false;
    for (size_t i = 0; i < fm_graph_tensor_count(g); i++) {
        const struct fm_tensor *t = fm_graph_tensor(g, (fm_tid)i);
        if (t->role != FM_ROLE_INPUT || !fm_dtype_is_float(t->dtype))
            continue;
        char s[64];
        fprintf(f, "%s%s %s %s", any ? ", " : "", t->name, fm_shape_format(&t->shape, s, sizeof(s)),
                fm_dtype_name(t->dtype));
        any = true;
    }
    if (!any)
        fprintf(f, "no float inputs");
}

/* An exact count with thousands separators: 1,826,793,960. */
static const char *grouped(uint64_t v, char *buf)
{
    char digits[24];
    int n = snprintf(digits, sizeof(digits), "%" PRIu64, v), o = 0;
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

/* What the other counters would print: one line per peer, its exact figure in its own unit and
 * what it leaves out or adds (or why it cannot be told). */
static void table_peers(FILE *f, const struct fm_peer_figures *pf)
{
    fprintf(f, "peers: what other counters print for %s (docs/counting.md, section 4)\n",
            pf->builtin ? "this model" : "this graph");
    fprintf(f, "  counted: %s\n", pf->basis);
    for (int k = 0; k < FM_PEER_COUNT; k++) {
        const struct fm_peer_figure *p = &pf->peer[k];
        char num[40], fig[48];
        if (p->computable)
            snprintf(fig, sizeof(fig), "%s %s", grouped(p->value, num), p->unit);
        else
            snprintf(fig, sizeof(fig), "-");
        fprintf(f, "  %-27s %26s  %s\n", fm_peer_label((enum fm_peer)k), fig, p->note);
    }
}

/* The language model's figures (fm_llm_summarize): attention conventions, model and hardware
 * FLOPs, 6ND, activations by recompute, the KV cache. */
static double rel_err(double est, double counted)
{
    return counted > 0 ? (est - counted) / counted * 100.0 : 0.0;
}

static void table_llm(FILE *f, const struct fm_counts *c, const struct fm_llm_summary *l)
{
    char b[6][32];
    bool train = c->mode == FM_MODE_TRAIN;
    fprintf(f, "language model (docs/zoo.md)\n");
    fprintf(f, "  parameters     %s by the config, %s without embeddings and lm_head, %s of "
               "them per token\n",
            si((double)l->params, b[0]), si((double)l->non_embedding, b[1]),
            si((double)l->active, b[2]));
    fprintf(f, "  tokens         %s\n", si((double)l->tokens, b[0]));
    fprintf(f, "  attention      forward %sFLOP as counted (every score of S x S, as SDPA with "
               "a mask runs it); causal half %sFLOP; causal with sliding windows %sFLOP (what a "
               "block-skipping FlashAttention kernel computes)\n",
            si((double)l->attn_full, b[0]), si((double)l->attn_causal, b[1]),
            si((double)l->attn_window, b[2]));
    fprintf(f, "  model FLOPs    %sFLOP (%s, counted)   %sFLOP per token\n",
            si((double)l->model_flops, b[0]), train ? "forward + backward" : "forward",
            si(l->tokens ? (double)l->model_flops / (double)l->tokens : 0.0, b[1]));
    if (train && l->recompute != FM_RECOMPUTE_NONE)
        fprintf(f, "  hardware FLOPs %sFLOP with recompute %s (+%sFLOP); FlashAttention's "
                   "backward recomputing QK^T adds %sFLOP\n",
                si((double)l->model_flops + (double)l->recompute_flops, b[0]),
                fm_recompute_name(l->recompute), si((double)l->recompute_flops, b[1]),
                si((double)l->flash_flops, b[2]));
    else if (train)
        fprintf(f, "  hardware FLOPs = model FLOPs (no recomputation); "
                   "FlashAttention's backward recomputing QK^T adds %sFLOP\n",
                si((double)l->flash_flops, b[0]));
    fprintf(f, "  %s            %sFLOP with N = non-embedding parameters per token (Kaplan et "
               "al. 2020), %+.1f%% vs counted; %sFLOP with all parameters, %+.1f%%\n",
            train ? "6ND" : "2ND", si(l->six_nd, b[0]),
            rel_err(l->six_nd, (double)l->model_flops), si(l->six_nd_all, b[1]),
            rel_err(l->six_nd_all, (double)l->model_flops));
    if (train) {
        fprintf(f, "  weights        %sB + grads %sB + optimizer state %sB = %.1f bytes per "
                   "parameter\n",
                si((double)c->param_bytes, b[0]), si((double)c->grad_bytes, b[1]),
                si((double)c->optimizer_state_bytes, b[2]),
                c->params ? (double)(c->param_bytes + c->grad_bytes + c->optimizer_state_bytes) /
                                (double)c->params
                          : 0.0);
        fprintf(f, "  activations    kept for the backward: %sB without recompute, %sB "
                   "selective, %sB full\n",
                si((double)l->act_bytes[0], b[0]), si((double)l->act_bytes[1], b[1]),
                si((double)l->act_bytes[2], b[2]));
    } else if (l->kv_source) {   /* encoder-decoder: which positions each attention caches */
        fprintf(f, "  KV cache       %sB after this pass (every decoder layer's K and V: "
                   "self-attention of %llu target tokens, cross-attention of %llu source "
                   "tokens)\n",
                si((double)l->kv_cache_bytes, b[0]), (unsigned long long)l->kv_target,
                (unsigned long long)l->kv_source);
    } else {
        fprintf(f, "  KV cache       %sB after this pass (every layer's K and V)\n",
                si((double)l->kv_cache_bytes, b[0]));
    }
}

static void json_llm(struct fm_jw *w, const struct fm_counts *c, const struct fm_llm_summary *l)
{
    fm_jw_object(w, "llm", false);
    fm_jw_u64(w, "params", l->params);
    fm_jw_u64(w, "non_embedding_params", l->non_embedding);
    fm_jw_u64(w, "active_params", l->active);
    fm_jw_u64(w, "tokens", l->tokens);
    fm_jw_u64(w, "attention_full_flops", l->attn_full);
    fm_jw_u64(w, "attention_causal_flops", l->attn_causal);
    fm_jw_u64(w, "attention_window_flops", l->attn_window);
    fm_jw_u64(w, "model_flops", l->model_flops);
    if (c->mode == FM_MODE_TRAIN) {
        fm_jw_string(w, "recompute", fm_recompute_name(l->recompute));
        fm_jw_u64(w, "recompute_flops", l->recompute_flops);
        fm_jw_u64(w, "hardware_flops", l->model_flops + l->recompute_flops);
        fm_jw_u64(w, "flash_backward_flops", l->flash_flops);
        fm_jw_u64(w, "activation_bytes_none", l->act_bytes[FM_RECOMPUTE_NONE]);
        fm_jw_u64(w, "activation_bytes_selective", l->act_bytes[FM_RECOMPUTE_SELECTIVE]);
        fm_jw_u64(w, "activation_bytes_full", l->act_bytes[FM_RECOMPUTE_FULL]);
    } else {
        fm_jw_u64(w, "kv_cache_bytes", l->kv_cache_bytes);
    }
    fm_jw_double(w, "nd_estimate", l->six_nd);
    fm_jw_double(w, "nd_estimate_all_params", l->six_nd_all);
    fm_jw_end(w);
}

static void render_table(FILE *f, const struct fm_graph *g, const struct fm_counts *c,
                         const struct fm_report_opts *o)
{
    bool train = c->mode == FM_MODE_TRAIN;
    int64_t batch = fm_graph_batch(g);
    char b[8][32];
    fprintf(f, "%s | ", fm_graph_name(g));
    input_line(f, g);
    if (train)
        fprintf(f, " | training step, %s | FLOP = 2 x MAC + other ops\n",
                optimizer_long(c->optimizer));
    else
        fprintf(f, " | inference (forward only) | FLOP = 2 x MAC + other ops\n");
    bool any_wonly = false;
    if (o->layers)
        table_layers(f, g, c, o, &any_wonly);
    if (o->by_class)
        table_by_class(f, c);
    if (o->by_module)
        table_by_module(f, g, c);

    const struct fm_work *t = c->total;
    uint64_t fwd = fm_work_flops(&t[FM_PHASE_FWD]);
    uint64_t bd = fm_work_flops(&t[FM_PHASE_BWD_DATA]), bw = fm_work_flops(&t[FM_PHASE_BWD_WEIGHT]);
    uint64_t opt = fm_work_flops(&t[FM_PHASE_OPTIMIZER]);
    double step = (double)fwd + (double)bd + (double)bw + (double)opt;
    double bytes = 0;
    for (int p = 0; p < FM_PHASE_COUNT; p++)
        bytes += phase_bytes(&t[p]);
    fprintf(f, "totals\n");
    fprintf(f, "  parameters     %s (%sB), trainable %s\n", si((double)c->params, b[0]),
            si((double)c->param_bytes, b[1]), si((double)c->trainable_params, b[2]));
    fprintf(f, "  forward        %sFLOP  (%sMAC)   %sFLOP per sample\n", si((double)fwd, b[0]),
            si((double)fm_work_macs(&t[FM_PHASE_FWD]), b[1]), si((double)fwd / (double)batch, b[2]));
    if (train) {
        fprintf(f, "  backward       %sFLOP = input grads %sFLOP + weight grads %sFLOP   bwd/fwd %.2f\n",
                si((double)bd + (double)bw, b[0]), si((double)bd, b[1]), si((double)bw, b[2]),
                fwd ? ((double)bd + (double)bw) / (double)fwd : 0.0);
        fprintf(f, "                 (%sMAC = %sMAC + %sMAC)\n",
                si((double)fm_work_macs(&t[1]) + (double)fm_work_macs(&t[2]), b[0]),
                si((double)fm_work_macs(&t[1]), b[1]), si((double)fm_work_macs(&t[2]), b[2]));
        fprintf(f, "  optimizer      %sFLOP  (%s)\n", si((double)opt, b[0]),
                optimizer_long(c->optimizer));
        if (o->loss)
            fprintf(f, "  loss           %s\n", o->loss->summary);
        fprintf(f, "  step           %sFLOP   %sFLOP per sample\n", si(step, b[0]),
                si(step / (double)batch, b[1]));
    }
    fprintf(f, "  bytes moved    %sB (unfused, one kernel per op)   intensity %.1f FLOP/B\n",
            si(bytes, b[0]), bytes > 0 ? step / bytes : 0.0);
    uint64_t mem = 0;
    fm_counts_training_memory(c, &mem);
    if (train) {
        const char *state = c->optimizer == FM_OPTIM_SGD    ? "momentum"
                            : c->optimizer == FM_OPTIM_ADAM ? "Adam moments"
                                                            : "no optimizer state";
        fprintf(f, "  memory         activations kept %sB + params %sB + grads %sB + %s %sB"
                   " + buffers and input %sB = %sB\n",
                si((double)c->activation_bytes, b[0]), si((double)c->param_bytes, b[1]),
                si((double)c->grad_bytes, b[2]), state, si((double)c->optimizer_state_bytes, b[3]),
                si((double)(c->buffer_bytes + c->input_bytes), b[4]), si((double)mem, b[5]));
    } else {
        fprintf(f, "  memory         peak live activations %sB + params %sB + buffers and input "
                   "%sB = %sB\n",
                si((double)c->activation_bytes, b[0]), si((double)c->param_bytes, b[1]),
                si((double)(c->buffer_bytes + c->input_bytes), b[2]), si((double)mem, b[3]));
    }
    fm_report_memory_line(f, o->memory);
    if (o->export_note && *o->export_note)
        fprintf(f, "  export         %s\n", o->export_note);
    uint64_t int8_macs = 0;
    size_t n_int8 = 0, n_no_grad = 0;
    for (size_t i = 0; i < c->n_nodes; i++) {
        n_no_grad += c->nodes[i].no_grad;
        if (c->nodes[i].int8) {
            n_int8++;
            int8_macs += c->nodes[i].phase[FM_PHASE_FWD].prim[FM_PRIM_MAC];
        }
    }
    if (n_int8)
        fprintf(f, "  int8           %sMAC of the forward in %zu quantized layers (integer "
                   "products, the int8 ceiling)\n",
                si((double)int8_macs, b[0]), n_int8);
    if (n_no_grad && c->mode == FM_MODE_TRAIN)
        fprintf(f, "  no backward    %zu layers are inference kernels (quantized or fused ONNX "
                   "Runtime ops): no gradient is defined for them, none is counted\n",
                n_no_grad);
    fprintf(f, "  not counted    ");
    if (!c->n_uncounted) {
        fprintf(f, "none\n");
    } else {
        for (size_t i = 0; i < c->n_uncounted; i++)
            fprintf(f, "%s%s (%" PRIu64 " nodes)", i ? ", " : "", c->uncounted[i].op,
                    c->uncounted[i].nodes);
        fprintf(f, ": every total above is a lower bound\n");
    }
    if (any_wonly)
        fprintf(f, "(w) weight gradients only: the layer's input needs no gradient (the network "
                   "input)\n");
    fprintf(f, "convention: %s; bytes = each input read once, each output written once\n",
            convention);
    if (o->llm)
        table_llm(f, c, o->llm);
    if (o->peers)
        table_peers(f, o->peers);
}

/* ---- CSV ---- */

static void render_csv(FILE *f, const struct fm_graph *g, const struct fm_counts *c,
                       const struct fm_report_opts *o)
{
    if (o->by_class) {
        fprintf(f, "class,phase,flops,macs,bytes_read,bytes_written\n");
        for (int k = 0; k < FM_CLASS_COUNT; k++) {
            if (!c->class_present[k])
                continue;
            for (int p = 0; p < FM_PHASE_COUNT; p++) {
                const struct fm_work *w = &c->by_class[k][p];
                fprintf(f, "%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
                        fm_class_name((enum fm_class)k), fm_phase_name((enum fm_phase)p),
                        fm_work_flops(w), fm_work_macs(w), w->bytes_read, w->bytes_written);
            }
        }
        return;
    }
    if (o->by_module) {
        size_t n;
        struct mod_row *rows = modules_of(g, c, &n);
        if (!rows) {
            fprintf(f, "error: out of memory\n");
            return;
        }
        fprintf(f, "module,layers,params");
        for (int p = 0; p < FM_PHASE_COUNT; p++) {
            const char *ph = fm_phase_name((enum fm_phase)p);
            fprintf(f, ",%s_flops,%s_macs,%s_bytes_read,%s_bytes_written", ph, ph, ph, ph);
        }
        fprintf(f, "\n");
        for (size_t i = 0; i < n; i++) {
            fprintf(f, "\"%.*s\",%" PRIu64 ",%" PRIu64, (int)rows[i].len, rows[i].name,
                    rows[i].layers, rows[i].params);
            for (int p = 0; p < FM_PHASE_COUNT; p++) {
                const struct fm_work *w = &rows[i].phase[p];
                fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, fm_work_flops(w),
                        fm_work_macs(w), w->bytes_read, w->bytes_written);
            }
            fprintf(f, "\n");
        }
        fm_dealloc(c->ctx, rows);
        return;
    }
    fprintf(f, "index,name,op,class,output,params,counted");
    for (int p = 0; p < FM_PHASE_COUNT; p++) {
        const char *ph = fm_phase_name((enum fm_phase)p);
        fprintf(f, ",%s_flops,%s_macs,%s_bytes_read,%s_bytes_written", ph, ph, ph, ph);
    }
    fprintf(f, "\n");
    const fm_nid *order = fm_graph_topo_order(g);
    for (size_t i = 0; i < c->n_nodes; i++) {
        const struct fm_node *n = fm_graph_node(g, order[i]);
        const struct fm_node_cost *nc = &c->nodes[order[i]];
        char shape[64];
        fm_shape_format(&fm_graph_tensor(g, n->out[0])->shape, shape, sizeof(shape));
        /* names may hold commas in imported graphs: quote them */
        fprintf(f, "%zu,\"%s\",%s,%s,%s,%" PRIu64 ",%d", i + 1, n->name, n->op_name,
                fm_class_name(fm_op_class(n->op)), shape, nc->params, nc->counted ? 1 : 0);
        for (int p = 0; p < FM_PHASE_COUNT; p++) {
            const struct fm_work *w = &nc->phase[p];
            fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, fm_work_flops(w),
                    fm_work_macs(w), w->bytes_read, w->bytes_written);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "total,\"total\",,,,%" PRIu64 ",%d", c->params, c->n_uncounted ? 0 : 1);
    for (int p = 0; p < FM_PHASE_COUNT; p++) {
        const struct fm_work *w = &c->total[p];
        fprintf(f, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, fm_work_flops(w),
                fm_work_macs(w), w->bytes_read, w->bytes_written);
    }
    fprintf(f, "\n");
}

/* ---- JSON ---- */

static void json_work(struct fm_jw *w, const char *key, const struct fm_work *x, bool bytes,
                      bool prims)
{
    fm_jw_object(w, key, true);
    fm_jw_u64(w, "flops", fm_work_flops(x));
    fm_jw_u64(w, "macs", fm_work_macs(x));
    if (bytes) {
        fm_jw_u64(w, "bytes_read", x->bytes_read);
        fm_jw_u64(w, "bytes_written", x->bytes_written);
    }
    if (prims) {
        fm_jw_object(w, "ops", true);
        for (int k = 0; k < FM_PRIM_COUNT; k++)
            fm_jw_u64(w, fm_prim_name((enum fm_prim)k), x->prim[k]);
        fm_jw_end(w);
    }
    fm_jw_end(w);
}

static void json_shape(struct fm_jw *w, const char *key, const struct fm_shape *s)
{
    fm_jw_array(w, key, true);
    for (int i = 0; i < s->rank; i++)
        fm_jw_i64(w, NULL, s->dims[i]);
    fm_jw_end(w);
}

/* "peers": {basis, builtin, then one object per tool: value (null when it cannot be told),
 * unit, computable, note; torchvision's also published_gflops (null when none applies)}. */
static void json_peers(struct fm_jw *w, const struct fm_peer_figures *pf)
{
    fm_jw_object(w, "peers", false);
    fm_jw_string(w, "basis", pf->basis);
    fm_jw_i64(w, "batch", pf->batch);
    fm_jw_bool(w, "builtin", pf->builtin);
    for (int k = 0; k < FM_PEER_COUNT; k++) {
        const struct fm_peer_figure *p = &pf->peer[k];
        fm_jw_object(w, fm_peer_key((enum fm_peer)k), true);
        if (p->computable)
            fm_jw_u64(w, "value", p->value);
        else
            fm_jw_null(w, "value");
        fm_jw_string(w, "unit", p->unit);
        if (k == FM_PEER_TORCHVISION)
            fm_jw_string(w, "published_gflops", pf->published[0] ? pf->published : NULL);
        fm_jw_bool(w, "computable", p->computable);
        fm_jw_string(w, "note", p->note);
        fm_jw_end(w);
    }
    fm_jw_end(w);
}

static void render_json(FILE *f, const struct fm_graph *g, const struct fm_counts *c,
                        const struct fm_report_opts *o)
{
    struct fm_jw w;
    fm_jw_init(&w, f);
    fm_jw_object(&w, NULL, false);
    fm_jw_string(&w, "flopmeter", FM_VERSION);
    fm_jw_string(&w, "model", fm_graph_name(g));
    fm_jw_array(&w, "inputs", false);
    for (size_t i = 0; i < fm_graph_tensor_count(g); i++) {
        const struct fm_tensor *t = fm_graph_tensor(g, (fm_tid)i);
        if (t->role != FM_ROLE_INPUT)
            continue;
        fm_jw_object(&w, NULL, true);
        fm_jw_string(&w, "name", t->name);
        json_shape(&w, "shape", &t->shape);
        fm_jw_string(&w, "dtype", fm_dtype_name(t->dtype));
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    fm_jw_i64(&w, "batch", fm_graph_batch(g));
    fm_jw_string(&w, "mode", fm_mode_name(c->mode));
    fm_jw_string(&w, "optimizer", fm_optimizer_name(c->optimizer));
    fm_jw_string(&w, "convention", convention);
    if (o->loss && c->mode == FM_MODE_TRAIN) {
        fm_jw_object(&w, "loss", false);
        fm_report_json_loss(&w, g, o->loss);
        fm_jw_end(&w);
    }
    fm_report_json_memory(&w, o->memory);
    if (o->export_note && *o->export_note)
        fm_jw_string(&w, "export_note", o->export_note);

    fm_jw_object(&w, "totals", false);
    fm_jw_u64(&w, "params", c->params);
    fm_jw_u64(&w, "trainable_params", c->trainable_params);
    for (int p = 0; p < FM_PHASE_COUNT; p++)
        json_work(&w, fm_phase_name((enum fm_phase)p), &c->total[p], true, true);
    fm_jw_u64(&w, "activation_bytes", c->activation_bytes);
    fm_jw_u64(&w, "param_bytes", c->param_bytes);
    fm_jw_u64(&w, "buffer_bytes", c->buffer_bytes);
    fm_jw_u64(&w, "grad_bytes", c->grad_bytes);
    fm_jw_u64(&w, "optimizer_state_bytes", c->optimizer_state_bytes);
    fm_jw_u64(&w, "input_bytes", c->input_bytes);
    uint64_t mem = 0;
    fm_counts_training_memory(c, &mem);
    fm_jw_u64(&w, "memory_bytes", mem);
    fm_jw_bool(&w, "lower_bound", c->n_uncounted > 0);
    fm_jw_end(&w);

    fm_jw_object(&w, "by_class", false);
    for (int k = 0; k < FM_CLASS_COUNT; k++) {
        if (!c->class_present[k])
            continue;
        fm_jw_object(&w, fm_class_name((enum fm_class)k), true);
        for (int p = 0; p < FM_PHASE_OPTIMIZER; p++)
            json_work(&w, fm_phase_name((enum fm_phase)p), &c->by_class[k][p], false, false);
        fm_jw_end(&w);
    }
    fm_jw_end(&w);

    fm_jw_array(&w, "uncounted", false);
    for (size_t i = 0; i < c->n_uncounted; i++) {
        fm_jw_object(&w, NULL, true);
        fm_jw_string(&w, "op", c->uncounted[i].op);
        fm_jw_u64(&w, "nodes", c->uncounted[i].nodes);
        fm_jw_end(&w);
    }
    fm_jw_end(&w);

    fm_jw_array(&w, "layers", false);
    const fm_nid *order = fm_graph_topo_order(g);
    for (size_t i = 0; i < c->n_nodes; i++) {
        const struct fm_node *n = fm_graph_node(g, order[i]);
        const struct fm_node_cost *nc = &c->nodes[order[i]];
        fm_jw_object(&w, NULL, true);
        fm_jw_string(&w, "name", n->name);
        fm_jw_string(&w, "op", n->op_name);
        fm_jw_string(&w, "class", fm_class_name(fm_op_class(n->op)));
        json_shape(&w, "output", &fm_graph_tensor(g, n->out[0])->shape);
        fm_jw_u64(&w, "params", nc->params);
        fm_jw_bool(&w, "counted", nc->counted);
        fm_jw_string(&w, "precision", nc->int8 ? "int8" : "float");
        fm_jw_bool(&w, "backward", !nc->no_grad);
        for (int p = 0; p < FM_PHASE_COUNT; p++)
            json_work(&w, fm_phase_name((enum fm_phase)p), &nc->phase[p], true, false);
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    if (o->by_module) {
        size_t n;
        struct mod_row *rows = modules_of(g, c, &n);
        fm_jw_array(&w, "by_module", false);
        for (size_t i = 0; rows && i < n; i++) {
            char name[512];
            snprintf(name, sizeof(name), "%.*s", (int)rows[i].len, rows[i].name);
            fm_jw_object(&w, NULL, true);
            fm_jw_string(&w, "module", name);
            fm_jw_u64(&w, "layers", rows[i].layers);
            fm_jw_u64(&w, "params", rows[i].params);
            for (int p = 0; p < FM_PHASE_COUNT; p++)
                json_work(&w, fm_phase_name((enum fm_phase)p), &rows[i].phase[p], true, false);
            fm_jw_end(&w);
        }
        fm_jw_end(&w);
        fm_dealloc(c->ctx, rows);
    }
    if (o->llm)
        json_llm(&w, c, o->llm);
    if (o->peers)
        json_peers(&w, o->peers);
    fm_jw_end(&w);
    fm_jw_finish(&w);
}

enum fm_status fm_report_count(FILE *f, const struct fm_graph *g, const struct fm_counts *c,
                               const struct fm_report_opts *opts)
{
    struct fm_report_opts o;
    if (opts)
        o = *opts;
    else
        fm_report_opts_init(&o);
    switch (o.format) {
    case FM_FORMAT_TABLE: render_table(f, g, c, &o); break;
    case FM_FORMAT_CSV: render_csv(f, g, c, &o); break;
    case FM_FORMAT_JSON: render_json(f, g, c, &o); break;
    default:
        return fm_error(fm_graph_ctx(g), FM_ERR_INVALID, "unknown report format %d",
                        (int)o.format);
    }
    return fm_report_end(fm_graph_ctx(g), f);
}
