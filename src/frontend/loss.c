/* The loss policy: what a training step of a model minimizes when the model brings no loss of
 * its own. One rule for every frontend and every command, so that `count --train` and
 * `measure` of one model count one graph (docs/counting.md, "The loss"):
 *   - classifier logits (N, K), K >= 2: cross-entropy over the K classes against labels (N);
 *   - language-model logits (B, S, V) of a model fed integer token ids (B, S): next-token
 *     cross-entropy over the V-word vocabulary at every one of the B x S positions (the logits
 *     are viewed as (B*S, V), which costs nothing);
 *   - any other output: mean squared error against a random target of its shape.
 * Labels and targets are new graph inputs (random values, drawn like every input). It does not
 * guess further: an (N, 4) box regressor is treated as a 4-class classifier. */
#include "../core/internal.h"

#include <stdio.h>
#include <string.h>

static const char *const kind_names[] = {
    [FM_LOSS_NONE] = "none",
    [FM_LOSS_MODEL] = "the model's own",
    [FM_LOSS_CROSS_ENTROPY] = "cross-entropy",
    [FM_LOSS_NEXT_TOKEN] = "next-token cross-entropy",
    [FM_LOSS_MSE] = "mean squared error",
};
_Static_assert(sizeof(kind_names) / sizeof(kind_names[0]) == FM_LOSS_KIND_COUNT,
               "kind_names must name every enum fm_loss_kind");

const char *fm_loss_kind_name(enum fm_loss_kind kind)
{
    return (unsigned)kind < FM_LOSS_KIND_COUNT ? kind_names[kind] : "?";
}

static bool is_loss_op(enum fm_op op)
{
    return fm_op_class(op) == FM_CLASS_LOSS;
}

/* Whether tensor t is read by some node. */
static bool consumed(const struct fm_graph *g, fm_tid t)
{
    for (size_t i = 0; i < g->n_nodes; i++) {
        const struct fm_node *n = &g->nodes[i].pub;
        for (int k = 0; k < n->n_in; k++) {
            if (n->in[k] == t)
                return true;
        }
    }
    return false;
}

/* Whether tensor i is one of the graph's outputs: marked, or (when none is) a float tensor a
 * node makes and no node reads. */
static bool is_output(const struct fm_graph *g, size_t i)
{
    const struct fm_tensor *t = &g->tensors[i];
    bool marked = false;
    for (size_t k = 0; k < g->n_outputs; k++)
        marked = marked || g->outputs[k] == (fm_tid)i;
    if (g->n_outputs)
        return marked;
    return t->producer != FM_NONE && !consumed(g, (fm_tid)i);
}

void fm_graph_outputs_text(const struct fm_graph *g, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < g->n_tensors && used + 1 < size; i++) {
        if (!is_output(g, i))
            continue;
        int w = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", g->tensors[i].name);
        if (w < 0 || (size_t)w >= size - used) {
            if (size > 4)
                snprintf(buf + size - 4, 4, "...");
            return;
        }
        used += (size_t)w;
    }
}

/* A name not yet taken: base, else base_2, base_3 ... */
static void free_name(const struct fm_graph *g, const char *base, char *buf, size_t size)
{
    snprintf(buf, size, "%s", base);
    for (int k = 2; fm_graph_find_tensor(g, buf) != FM_NONE; k++)
        snprintf(buf, size, "%s_%d", base, k);
}

/* An integer graph input shaped (B, S) like the logits' first two dims: the token ids that
 * make (B, S, V) logits a language model's. */
static bool fed_token_ids(const struct fm_graph *g, const struct fm_shape *logits)
{
    for (size_t i = 0; i < g->n_tensors; i++) {
        const struct fm_tensor *t = &g->tensors[i];
        if (t->role == FM_ROLE_INPUT && !fm_dtype_is_float(t->dtype) && t->shape.rank == 2 &&
            t->shape.dims[0] == logits->dims[0] && t->shape.dims[1] == logits->dims[1])
            return true;
    }
    return false;
}

static enum fm_status add_one(struct fm_graph *g, fm_tid y, struct fm_loss *out)
{
    const struct fm_tensor *t = &g->tensors[y];
    struct fm_shape s = t->shape;
    char lname[128], tname[128];
    fm_tid in[2] = {y, FM_NONE}, loss = FM_NONE;
    enum fm_status st;
    memset(out, 0, sizeof(*out));
    out->output = y;
    out->added = true;
    free_name(g, "loss", lname, sizeof(lname));
    const char *lptr = lname;
    if (s.rank == 3 && s.dims[2] >= 2 && fed_token_ids(g, &s)) {
        out->kind = FM_LOSS_NEXT_TOKEN;
        out->classes = s.dims[2];
        out->positions = s.dims[0] * s.dims[1];
        struct fm_attrs a;
        fm_attrs_init(&a);
        a.ints[0] = out->positions;
        a.ints[1] = s.dims[2];
        a.nints = 2;
        char vname[160];
        snprintf(vname, sizeof(vname), "%s.positions", lname);
        const char *vptr = vname;
        st = fm_graph_add_node(g, FM_OP_RESHAPE, vname, &a, in, 1, &vptr, 1, &in[0]);
        if (st)
            return st;
        struct fm_shape ls = {1, {out->positions}};
        free_name(g, "labels", tname, sizeof(tname));
        st = fm_graph_add_tensor(g, tname, FM_ROLE_INPUT, FM_DTYPE_INT64, &ls, &in[1]);
        if (!st)
            st = fm_graph_add_node(g, FM_OP_CROSS_ENTROPY, lname, NULL, in, 2, &lptr, 1, &loss);
    } else if (s.rank == 2 && s.dims[1] >= 2) {
        out->kind = FM_LOSS_CROSS_ENTROPY;
        out->classes = s.dims[1];
        out->positions = s.dims[0];
        struct fm_shape ls = {1, {s.dims[0]}};
        free_name(g, "labels", tname, sizeof(tname));
        st = fm_graph_add_tensor(g, tname, FM_ROLE_INPUT, FM_DTYPE_INT64, &ls, &in[1]);
        if (!st)
            st = fm_graph_add_node(g, FM_OP_CROSS_ENTROPY, lname, NULL, in, 2, &lptr, 1, &loss);
    } else {
        out->kind = FM_LOSS_MSE;
        free_name(g, "targets", tname, sizeof(tname));
        st = fm_graph_add_tensor(g, tname, FM_ROLE_INPUT, t->dtype, &s, &in[1]);
        if (!st)
            st = fm_graph_add_node(g, FM_OP_MSE_LOSS, lname, NULL, in, 2, &lptr, 1, &loss);
    }
    if (st)
        return st;
    out->node = g->tensors[loss].producer;
    return FM_OK;
}

static void describe(struct fm_loss_info *info)
{
    size_t len = 0;
    info->summary[0] = '\0';
    if (!info->n) {
        snprintf(info->summary, sizeof(info->summary), "%s", info->why[0] ? info->why : "none");
        return;
    }
    for (int i = 0; i < info->n && len < sizeof(info->summary); i++) {
        const struct fm_loss *l = &info->loss[i];
        char what[128];
        if (l->kind == FM_LOSS_CROSS_ENTROPY)
            snprintf(what, sizeof(what), "cross-entropy over %lld classes", (long long)l->classes);
        else if (l->kind == FM_LOSS_NEXT_TOKEN)
            snprintf(what, sizeof(what), "next-token cross-entropy over a %lld-word vocabulary at "
                     "%lld positions", (long long)l->classes, (long long)l->positions);
        else if (l->kind == FM_LOSS_MSE)
            snprintf(what, sizeof(what), "mean squared error against a random target");
        else if (l->classes)
            snprintf(what, sizeof(what), "the model's own, over %lld classes at %lld positions",
                     (long long)l->classes, (long long)l->positions);
        else
            snprintf(what, sizeof(what), "the model's own");
        len += (size_t)snprintf(info->summary + len, sizeof(info->summary) - len, "%s%s%s",
                                i ? "; " : "", what, l->added ? " (added by flopmeter)" : "");
    }
}

enum fm_status fm_graph_add_loss(struct fm_graph *g, fm_tid output, struct fm_loss_info *info)
{
    struct fm_ctx *ctx = g->ctx;
    memset(info, 0, sizeof(*info));
    enum fm_status st = fm_graph_finalize(g);
    if (st)
        return st;
    /* a model that brings its loss keeps it */
    for (size_t i = 0; i < g->n_nodes; i++) {
        const struct fm_node *n = &g->nodes[i].pub;
        if (!is_loss_op(n->op) || info->n >= FM_MAX_LOSSES)
            continue;
        struct fm_loss *l = &info->loss[info->n++];
        memset(l, 0, sizeof(*l));
        l->kind = FM_LOSS_MODEL;
        l->node = (fm_nid)i;
        l->output = n->in[0];
        if (n->op == FM_OP_SOFTMAX_CE_LOSS || n->op == FM_OP_NLL_LOSS) {
            /* ONNX's losses: input (N, C, d...), labels (N, d...) */
            const struct fm_shape *x = &g->tensors[n->in[0]].shape;
            uint64_t m = 0;
            l->classes = x->dims[1];
            if (fm_shape_numel(&g->tensors[n->in[1]].shape, &m) == FM_OK && m <= INT64_MAX)
                l->positions = (int64_t)m;
        }
    }
    if (info->n) {
        describe(info);
        return FM_OK;
    }
    /* the outputs: the one given, the marked ones, or float tensors no node reads */
    fm_tid outs[FM_MAX_LOSSES];
    int n_outs = 0;
    if (output != FM_NONE) {
        outs[n_outs++] = output;
    } else {
        /* which tensors some node reads, in one pass: is_output's scan of every node for each
         * tensor is quadratic (a third of counting a 6,800-node language model) */
        bool *read = fm_alloc(ctx, g->n_tensors ? g->n_tensors : 1);
        if (!read)
            return fm_error(ctx, FM_ERR_NOMEM, "'%s': out of memory finding its outputs", g->name);
        for (size_t i = 0; i < g->n_nodes; i++) {
            const struct fm_node *n = &g->nodes[i].pub;
            for (int k = 0; k < n->n_in; k++) {
                if (n->in[k] != FM_NONE && (size_t)n->in[k] < g->n_tensors)
                    read[n->in[k]] = true;
            }
        }
        for (size_t i = 0; i < g->n_tensors; i++) {
            const struct fm_tensor *t = &g->tensors[i];
            bool out = g->n_outputs ? is_output(g, i) : (t->producer != FM_NONE && !read[i]);
            if (!out)
                continue;
            if (!fm_dtype_is_float(t->dtype) || !t->shape_known)
                continue;
            /* nothing to train through an output no parameter reaches */
            if (!fm_graph_needs_grad(g, (fm_tid)i))
                continue;
            if (n_outs == FM_MAX_LOSSES) {
                fm_dealloc(ctx, read);
                char listed[400];
                fm_graph_outputs_text(g, listed, sizeof(listed));
                return fm_error(ctx, FM_ERR_UNSUPPORTED,
                                "'%s' has more than %d outputs to train, and flopmeter adds one "
                                "loss per output: choose the one to train with "
                                "fm_session_opts.loss_on OUTPUT (its outputs: %s), or count it "
                                "with FM_MODE_INFER",
                                g->name, FM_MAX_LOSSES, listed);
            }
            outs[n_outs++] = (fm_tid)i;
        }
        fm_dealloc(ctx, read);
    }
    if (!n_outs) {
        snprintf(info->why, sizeof(info->why), "none: no output of '%s' depends on a trainable "
                 "parameter", g->name);
        describe(info);
        return FM_OK;
    }
    for (int i = 0; i < n_outs; i++) {
        st = add_one(g, outs[i], &info->loss[i]);
        if (st)
            return st;
        info->n++;
    }
    st = fm_graph_finalize(g);
    if (st)
        return st;
    /* node ids are stable through finalize (it orders, it does not renumber) */
    describe(info);
    return FM_OK;
}
