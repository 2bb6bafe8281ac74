/* The counting driver: runs every node's cost rule in topological order, adds the optimizer
 * step per parameter, aggregates per phase and per class with checked sums, and estimates
 * memory (parameters, gradients, optimizer state, activations kept for backward). It knows ops
 * only through their descriptors and prints nothing. */
#include "../core/internal.h"
#include "ops.h"

#include <string.h>

void fm_count_opts_init(struct fm_count_opts *opts)
{
    opts->mode = FM_MODE_TRAIN;
    opts->optimizer = FM_OPTIM_SGD;
}

uint64_t fm_work_macs(const struct fm_work *w)
{
    return w->prim[FM_PRIM_MAC];
}

uint64_t fm_work_flops(const struct fm_work *w)
{
    bool ovf = false;
    uint64_t f = fm_cmul(&ovf, 2, w->prim[FM_PRIM_MAC]);
    for (int p = FM_PRIM_ADD; p < FM_PRIM_COUNT; p++)
        f = fm_cadd(&ovf, f, w->prim[p]);
    return ovf ? UINT64_MAX : f;
}

/* Per parameter element, SGD with momentum (PyTorch's form):
 *   v = mu*v + g        1 mul, 1 add
 *   w = w - lr*v        1 mul, 1 add
 * reads w, g, v and writes w, v. Adam (PyTorch's form, bias corrections folded per step):
 *   m = b1*m + (1-b1)*g          2 mul, 1 add
 *   v = b2*v + (1-b2)*g*g        3 mul, 1 add
 *   mh = m/(1-b1^t); vh = v/(1-b2^t)         2 div
 *   w = w - lr * mh / (sqrt(vh) + eps)       1 special, 1 add, 1 div, 1 mul, 1 add
 * reads w, g, m, v and writes w, m, v. Weight decay is not counted (off by default). */
static void optimizer_cost(enum fm_optimizer opt, uint64_t n, uint64_t elem, bool *ovf,
                           struct fm_work *w)
{
    memset(w, 0, sizeof(*w));
    uint64_t b = fm_cmul(ovf, n, elem);
    switch (opt) {
    case FM_OPTIM_SGD:
        w->prim[FM_PRIM_MUL] = fm_cmul(ovf, 2, n);
        w->prim[FM_PRIM_ADD] = fm_cmul(ovf, 2, n);
        w->bytes_read = fm_cmul(ovf, 3, b);
        w->bytes_written = fm_cmul(ovf, 2, b);
        break;
    case FM_OPTIM_ADAM:
        w->prim[FM_PRIM_MUL] = fm_cmul(ovf, 6, n);
        w->prim[FM_PRIM_ADD] = fm_cmul(ovf, 4, n);
        w->prim[FM_PRIM_DIV] = fm_cmul(ovf, 3, n);
        w->prim[FM_PRIM_SPECIAL] = n;
        w->bytes_read = fm_cmul(ovf, 4, b);
        w->bytes_written = fm_cmul(ovf, 3, b);
        break;
    default:
        break;
    }
}

static unsigned optimizer_state_slots(enum fm_optimizer opt)
{
    return opt == FM_OPTIM_SGD ? 1 : opt == FM_OPTIM_ADAM ? 2 : 0;
}

static void work_add(bool *ovf, struct fm_work *acc, const struct fm_work *w)
{
    for (int p = 0; p < FM_PRIM_COUNT; p++)
        acc->prim[p] = fm_cadd(ovf, acc->prim[p], w->prim[p]);
    acc->bytes_read = fm_cadd(ovf, acc->bytes_read, w->bytes_read);
    acc->bytes_written = fm_cadd(ovf, acc->bytes_written, w->bytes_written);
}

/* Runs one node's rule; saved_in and saved_out receive its keep masks. */
static enum fm_status node_cost(struct fm_ctx *ctx, const struct fm_graph *g, fm_nid id,
                                const struct fm_count_opts *opts, struct fm_node_cost *out,
                                uint64_t *saved_in, uint64_t *saved_out)
{
    const struct fm_node *n = fm_graph_node(g, id);
    const struct fm_op_desc *d = fm_op_desc(n->op);
    struct fm_cost_call call;
    memset(&call, 0, sizeof(call));
    memset(out, 0, sizeof(*out));
    out->counted = true;
    call.ctx = ctx;
    call.graph = g;
    call.node = n;
    call.cost = out;
    call.train = opts->mode == FM_MODE_TRAIN;
    for (int i = 0; i < n->n_in; i++) {
        call.in[i] = fm_graph_tensor(g, n->in[i]);
        call.grad[i] = call.train && n->in[i] != FM_NONE && fm_graph_needs_grad(g, n->in[i]);
    }
    for (int i = 0; i < n->n_out; i++)
        call.out[i] = fm_graph_tensor(g, n->out[i]);
    enum fm_status st = d->cost(&call);
    if (st)
        return st;
    if (call.ovf)
        return fm_error(ctx, FM_ERR_OVERFLOW,
                        "layer '%s' (%s): its operation count does not fit in 64 bits (batch "
                        "or input too large)",
                        n->name, n->op_name);
    if (!call.train) {   /* rules never add backward in inference; keep that an invariant */
        for (int p = FM_PHASE_BWD_DATA; p < FM_PHASE_COUNT; p++)
            memset(&out->phase[p], 0, sizeof(out->phase[p]));
        out->saved_bytes = 0;
        call.saved_in_mask = call.saved_out_mask = 0;
    }
    for (int i = 0; i < n->n_in; i++) {
        const struct fm_tensor *t = call.in[i];
        if (t && t->role == FM_ROLE_PARAM) {
            uint64_t ne;
            if (fm_shape_numel(&t->shape, &ne) != FM_OK)
                return fm_error(ctx, FM_ERR_OVERFLOW, "layer '%s': parameter too large", n->name);
            out->params = fm_cadd(&call.ovf, out->params, ne);
            if (t->trainable)
                out->trainable_params = fm_cadd(&call.ovf, out->trainable_params, ne);
        }
    }
    if (call.ovf)
        return fm_error(ctx, FM_ERR_OVERFLOW,
                        "layer '%s' (%s): its parameter count does not fit in 64 bits", n->name,
                        n->op_name);
    if (saved_in)
        *saved_in = call.saved_in_mask;
    if (saved_out)
        *saved_out = call.saved_out_mask;
    return FM_OK;
}

enum fm_status fm_node_cost(struct fm_ctx *ctx, const struct fm_graph *g, fm_nid node,
                            const struct fm_count_opts *opts, struct fm_node_cost *out)
{
    if (!fm_graph_topo_order(g))
        return fm_error(ctx, FM_ERR_GRAPH, "graph '%s' must be finalized before counting",
                        fm_graph_name(g));
    if (node < 0 || (size_t)node >= fm_graph_node_count(g))
        return fm_error(ctx, FM_ERR_INVALID, "no node with id %d", (int)node);
    return node_cost(ctx, g, node, opts, out, NULL, NULL);
}

enum fm_status fm_node_cost_kept(struct fm_ctx *ctx, const struct fm_graph *g, fm_nid node,
                                 const struct fm_count_opts *opts, struct fm_node_cost *out,
                                 uint64_t *saved_in, uint64_t *saved_out)
{
    if (!fm_graph_topo_order(g))
        return fm_error(ctx, FM_ERR_GRAPH, "graph '%s' must be finalized before counting",
                        fm_graph_name(g));
    if (node < 0 || (size_t)node >= fm_graph_node_count(g))
        return fm_error(ctx, FM_ERR_INVALID, "no node with id %d", (int)node);
    return node_cost(ctx, g, node, opts, out, saved_in, saved_out);
}

void fm_counts_free(struct fm_counts *c)
{
    if (!c)
        return;
    struct fm_ctx *ctx = c->ctx;
    fm_dealloc(ctx, c->nodes);
    fm_dealloc(ctx, c->uncounted);
    fm_dealloc(ctx, c);
}

static enum fm_status note_uncounted(struct fm_ctx *ctx, struct fm_counts *c, size_t *cap,
                                     const char *op)
{
    for (size_t i = 0; i < c->n_uncounted; i++) {
        if (strcmp(c->uncounted[i].op, op) == 0) {
            c->uncounted[i].nodes++;
            return FM_OK;
        }
    }
    enum fm_status st = fm_grow(ctx, (void **)&c->uncounted, cap, c->n_uncounted + 1,
                                sizeof(*c->uncounted));
    if (st)
        return st;
    c->uncounted[c->n_uncounted].op = op;
    c->uncounted[c->n_uncounted].nodes = 1;
    c->n_uncounted++;
    return FM_OK;
}

/* Inference memory: the peak of live activations when nodes run one after another in
 * topological order, each tensor freed after its last reader (graph outputs stay). */
static uint64_t peak_live_bytes(const struct fm_graph *g, const fm_nid *order, const size_t *last,
                                bool *ovf)
{
    uint64_t live = 0, peak = 0;
    size_t nn = fm_graph_node_count(g);
    for (size_t i = 0; i < nn; i++) {
        const struct fm_node *n = fm_graph_node(g, order[i]);
        for (int o = 0; o < n->n_out; o++) {
            const struct fm_tensor *t = fm_graph_tensor(g, n->out[o]);
            uint64_t ne = 0;
            fm_shape_numel(&t->shape, &ne);
            live = fm_cadd(ovf, live, fm_cmul(ovf, ne, fm_dtype_size(t->dtype)));
        }
        if (live > peak)
            peak = live;
        /* only inputs are freed: an output nobody reads is a graph output and stays live */
        for (int k = 0; k < n->n_in; k++) {
            fm_tid t = n->in[k];
            if (t == FM_NONE)
                continue;
            const struct fm_tensor *tt = fm_graph_tensor(g, t);
            if (tt->role != FM_ROLE_ACTIVATION || last[t] != i)
                continue;
            bool already = false;   /* a tensor read twice by this node is freed once */
            for (int j = 0; j < k; j++)
                already |= n->in[j] == t;
            if (already)
                continue;
            uint64_t ne = 0;
            fm_shape_numel(&tt->shape, &ne);
            live -= ne * fm_dtype_size(tt->dtype);
        }
    }
    return peak;
}

enum fm_status fm_count(struct fm_ctx *ctx, const struct fm_graph *g,
                        const struct fm_count_opts *opts, struct fm_counts **out)
{
    *out = NULL;
    const fm_nid *order = fm_graph_topo_order(g);
    if (!order)
        return fm_error(ctx, FM_ERR_GRAPH, "graph '%s' must be finalized before counting",
                        fm_graph_name(g));
    if ((unsigned)opts->mode >= FM_MODE_COUNT || (unsigned)opts->optimizer >= FM_OPTIM_COUNT)
        return fm_error(ctx, FM_ERR_INVALID, "bad count options");
    size_t nn = fm_graph_node_count(g), nt = fm_graph_tensor_count(g);
    bool train = opts->mode == FM_MODE_TRAIN;
    enum fm_status st = FM_OK;
    bool ovf = false;
    size_t unc_cap = 0;
    struct fm_counts *c = fm_alloc(ctx, sizeof(*c));
    bool *param_seen = fm_alloc(ctx, nt * sizeof(bool) + 1);
    bool *kept = fm_alloc(ctx, nt * sizeof(bool) + 1);
    size_t *last = fm_alloc(ctx, nt * sizeof(size_t) + 1);
    if (c)
        c->ctx = ctx;
    if (!c || !param_seen || !kept || !last) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory counting '%s'", fm_graph_name(g));
        goto fail;
    }
    c->mode = opts->mode;
    c->optimizer = train ? opts->optimizer : FM_OPTIM_NONE;
    c->n_nodes = nn;
    c->nodes = fm_alloc(ctx, nn * sizeof(*c->nodes) + 1);
    if (!c->nodes) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory counting '%s'", fm_graph_name(g));
        goto fail;
    }
    uint64_t extra_saved = 0;
    size_t no_grad = 0;   /* train: nodes without a backward (quantized, fused inference ops) */
    for (size_t i = 0; i < nn; i++) {
        fm_nid id = order[i];
        const struct fm_node *n = fm_graph_node(g, id);
        struct fm_node_cost *nc = &c->nodes[id];
        uint64_t sin = 0, sout = 0;
        st = node_cost(ctx, g, id, opts, nc, &sin, &sout);
        if (st)
            goto fail;
        if (train && nc->no_grad)
            no_grad++;
        if (n->op == FM_OP_UNKNOWN || !nc->counted) {   /* a rule may decline (a placeholder) */
            nc->counted = false;
            st = note_uncounted(ctx, c, &unc_cap, n->op_name);
            if (st)
                goto fail;
        }
        /* parameters belong to the first node that reads them: shared weights count once */
        nc->params = nc->trainable_params = 0;
        for (int k = 0; k < n->n_in; k++) {
            fm_tid t = n->in[k];
            if (t == FM_NONE)
                continue;
            const struct fm_tensor *tt = fm_graph_tensor(g, t);
            last[t] = i;
            if (tt->role != FM_ROLE_PARAM && tt->role != FM_ROLE_BUFFER)
                continue;
            if (param_seen[t])
                continue;
            param_seen[t] = true;
            uint64_t ne = 0;
            fm_shape_numel(&tt->shape, &ne);
            uint64_t bytes = fm_cmul(&ovf, ne, fm_dtype_size(tt->dtype));
            if (tt->role == FM_ROLE_BUFFER) {
                c->buffer_bytes = fm_cadd(&ovf, c->buffer_bytes, bytes);
                continue;
            }
            nc->params = fm_cadd(&ovf, nc->params, ne);
            c->param_bytes = fm_cadd(&ovf, c->param_bytes, bytes);
            if (tt->trainable && train && fm_dtype_is_float(tt->dtype)) {
                nc->trainable_params = fm_cadd(&ovf, nc->trainable_params, ne);
                c->grad_bytes = fm_cadd(&ovf, c->grad_bytes, bytes);
                c->optimizer_state_bytes = fm_cadd(
                    &ovf, c->optimizer_state_bytes,
                    fm_cmul(&ovf, bytes, optimizer_state_slots(c->optimizer)));
                struct fm_work w;
                optimizer_cost(c->optimizer, ne, fm_dtype_size(tt->dtype), &ovf, &w);
                work_add(&ovf, &nc->phase[FM_PHASE_OPTIMIZER], &w);
            } else if (tt->trainable) {
                nc->trainable_params = fm_cadd(&ovf, nc->trainable_params, ne);
            }
        }
        for (int k = 0; k < n->n_out; k++)
            last[n->out[k]] = i;
        c->params = fm_cadd(&ovf, c->params, nc->params);
        c->trainable_params = fm_cadd(&ovf, c->trainable_params, nc->trainable_params);
        /* what backward keeps: activation tensors once each, plus private extras */
        for (int k = 0; k < n->n_in && k < 64; k++) {
            if ((sin >> k) & 1u && n->in[k] != FM_NONE)
                kept[n->in[k]] = true;
        }
        for (int k = 0; k < n->n_out && k < 64; k++) {
            if ((sout >> k) & 1u)
                kept[n->out[k]] = true;
        }
        extra_saved = fm_cadd(&ovf, extra_saved, nc->saved_bytes);
        enum fm_class cls = fm_op_class(n->op);
        c->class_present[cls] = true;
        for (int p = 0; p < FM_PHASE_COUNT; p++) {
            work_add(&ovf, &c->total[p], &nc->phase[p]);
            work_add(&ovf, &c->by_class[cls][p], &nc->phase[p]);
        }
        if (ovf) {
            st = fm_error(ctx, FM_ERR_OVERFLOW,
                          "the totals overflow 64 bits at layer '%s' (%s): the batch or input is "
                          "too large to count",
                          n->name, n->op_name);
            goto fail;
        }
    }
    /* flopmeter's own totals must agree with the sum of the layer counts; FLOPs derived from
     * them must fit too */
    for (int p = 0; p < FM_PHASE_COUNT; p++) {
        if (fm_work_flops(&c->total[p]) == UINT64_MAX) {
            st = fm_error(ctx, FM_ERR_OVERFLOW, "the %s FLOP total overflows 64 bits",
                          fm_phase_name((enum fm_phase)p));
            goto fail;
        }
    }
    for (size_t t = 0; t < nt; t++) {
        const struct fm_tensor *tt = fm_graph_tensor(g, (fm_tid)t);
        uint64_t ne = 0;
        fm_shape_numel(&tt->shape, &ne);
        uint64_t bytes = fm_cmul(&ovf, ne, fm_dtype_size(tt->dtype));
        if (tt->role == FM_ROLE_INPUT)
            c->input_bytes = fm_cadd(&ovf, c->input_bytes, bytes);
        if (train && kept[t] && tt->role == FM_ROLE_ACTIVATION)
            c->activation_bytes = fm_cadd(&ovf, c->activation_bytes, bytes);
    }
    if (train)
        c->activation_bytes = fm_cadd(&ovf, c->activation_bytes, extra_saved);
    else
        c->activation_bytes = peak_live_bytes(g, order, last, &ovf);
    if (ovf) {
        st = fm_error(ctx, FM_ERR_OVERFLOW, "memory totals overflow 64 bits");
        goto fail;
    }
    fm_dealloc(ctx, param_seen);
    fm_dealloc(ctx, kept);
    fm_dealloc(ctx, last);
    if (no_grad)
        fm_log(ctx, "%s: %zu layer(s) are inference kernels (quantized or fused ONNX Runtime "
               "ops) with no gradient: their backward is not counted", fm_graph_name(g),
               no_grad);
    *out = c;
    return FM_OK;
fail:
    fm_dealloc(ctx, param_seen);
    fm_dealloc(ctx, kept);
    fm_dealloc(ctx, last);
    fm_counts_free(c);
    return st;
}

enum fm_status fm_counts_training_memory(const struct fm_counts *c, uint64_t *out)
{
    bool ovf = false;
    uint64_t m = fm_cadd(&ovf, c->param_bytes, c->buffer_bytes);
    m = fm_cadd(&ovf, m, c->grad_bytes);
    m = fm_cadd(&ovf, m, c->optimizer_state_bytes);
    m = fm_cadd(&ovf, m, c->activation_bytes);
    m = fm_cadd(&ovf, m, c->input_bytes);
    if (ovf)
        return FM_ERR_OVERFLOW;
    *out = m;
    return FM_OK;
}
