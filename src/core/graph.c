/* The network graph: tensors and nodes, the builder, shape inference driven in topological
 * order, validation, and which tensors need gradients. It knows ops only through their
 * descriptors (src/ops/); it counts nothing and allocates no tensor data. */
#include "internal.h"
#include "../ops/ops.h"

#include <stdio.h>
#include <string.h>

void fm_attrs_init(struct fm_attrs *a)
{
    memset(a, 0, sizeof(*a));
    a->kernel[0] = a->kernel[1] = 1;
    a->stride[0] = a->stride[1] = 1;
    a->dilation[0] = a->dilation[1] = 1;
    a->kernel_d = a->stride_d = a->dilation_d = 1;
    a->groups = 1;
    a->alpha = 1.0;
    a->beta = 1.0;
    a->eps = 1e-5;
}

/* ---- name index: open addressing, FNV-1a ---- */

static uint64_t name_hash(const char *s)
{
    return fm_hash_name(0, s);
}

static enum fm_status index_rebuild(struct fm_graph *g, size_t cap)
{
    fm_tid *idx = fm_alloc(g->ctx, cap * sizeof(*idx));
    if (!idx)
        return fm_error(g->ctx, FM_ERR_NOMEM, "out of memory indexing tensor names");
    for (size_t i = 0; i < cap; i++)
        idx[i] = FM_NONE;
    for (size_t t = 0; t < g->n_tensors; t++) {
        size_t h = (size_t)name_hash(g->tensors[t].name) & (cap - 1);
        while (idx[h] != FM_NONE)
            h = (h + 1) & (cap - 1);
        idx[h] = (fm_tid)t;
    }
    fm_dealloc(g->ctx, g->index);
    g->index = idx;
    g->index_cap = cap;
    return FM_OK;
}

fm_tid fm_graph_find_tensor(const struct fm_graph *g, const char *name)
{
    if (!g->index_cap || !name)
        return FM_NONE;
    size_t h = (size_t)name_hash(name) & (g->index_cap - 1);
    while (g->index[h] != FM_NONE) {
        if (strcmp(g->tensors[g->index[h]].name, name) == 0)
            return g->index[h];
        h = (h + 1) & (g->index_cap - 1);
    }
    for (size_t i = 0; i < g->n_aliases; i++) {
        if (strcmp(g->aliases[i].name, name) == 0)
            return g->aliases[i].id;
    }
    return FM_NONE;
}

bool fm_graph_tensor_used(const struct fm_graph *g, fm_tid t)
{
    for (size_t i = 0; i < g->n_outputs; i++) {
        if (g->outputs[i] == t)
            return true;
    }
    for (size_t k = 0; k < g->n_nodes; k++) {
        const struct fm_node *m = &g->nodes[k].pub;
        for (int i = 0; i < m->n_in; i++) {
            if (m->in[i] == t)
                return true;
        }
    }
    return false;
}

enum fm_status fm_graph_add_alias(struct fm_graph *g, const char *name, fm_tid id)
{
    if (!name || !*name || id < 0 || (size_t)id >= g->n_tensors)
        return fm_error(g->ctx, FM_ERR_GRAPH, "alias '%s': no name or no tensor %d",
                        name ? name : "", (int)id);
    if (fm_graph_find_tensor(g, name) != FM_NONE)
        return fm_error(g->ctx, FM_ERR_GRAPH, "tensor name '%s' is used twice", name);
    enum fm_status st = fm_grow(g->ctx, (void **)&g->aliases, &g->cap_aliases,
                                g->n_aliases + 1, sizeof(*g->aliases));
    if (st)
        return st;
    const char *n = fm_arena_strdup(&g->arena, name);
    if (!n)
        return fm_error(g->ctx, FM_ERR_NOMEM, "out of memory adding alias '%s'", name);
    g->aliases[g->n_aliases].name = n;
    g->aliases[g->n_aliases++].id = id;
    return FM_OK;
}

/* ---- lifecycle and accessors ---- */

enum fm_status fm_graph_new(struct fm_ctx *ctx, const char *name, struct fm_graph **out)
{
    *out = NULL;
    struct fm_graph *g = fm_alloc(ctx, sizeof(*g));
    if (!g)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory creating a graph");
    g->ctx = ctx;
    fm_arena_init(&g->arena, ctx);
    g->name = fm_arena_strdup(&g->arena, name ? name : "model");
    if (!g->name) {
        fm_graph_free(g);
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory creating a graph");
    }
    *out = g;
    return FM_OK;
}

void fm_graph_free(struct fm_graph *g)
{
    if (!g)
        return;
    struct fm_ctx *ctx = g->ctx;
    fm_dealloc(ctx, g->tensors);
    fm_dealloc(ctx, g->nodes);
    fm_dealloc(ctx, g->outputs);
    fm_dealloc(ctx, g->index);
    fm_dealloc(ctx, g->aliases);
    fm_dealloc(ctx, g->topo);
    fm_dealloc(ctx, g->needs_grad);
    fm_arena_release(&g->arena);
    fm_dealloc(ctx, g);
}

const char *fm_graph_name(const struct fm_graph *g) { return g->name; }
struct fm_ctx *fm_graph_ctx(const struct fm_graph *g) { return g->ctx; }
size_t fm_graph_tensor_count(const struct fm_graph *g) { return g->n_tensors; }
size_t fm_graph_node_count(const struct fm_graph *g) { return g->n_nodes; }

const struct fm_tensor *fm_graph_tensor(const struct fm_graph *g, fm_tid id)
{
    if (id < 0 || (size_t)id >= g->n_tensors)
        return NULL;
    return &g->tensors[id];
}

const struct fm_node *fm_graph_node(const struct fm_graph *g, fm_nid id)
{
    if (id < 0 || (size_t)id >= g->n_nodes)
        return NULL;
    return &g->nodes[id].pub;
}

const fm_nid *fm_graph_topo_order(const struct fm_graph *g)
{
    return g->finalized ? g->topo : NULL;
}

bool fm_graph_needs_grad(const struct fm_graph *g, fm_tid id)
{
    if (!g->finalized || id < 0 || (size_t)id >= g->n_tensors)
        return false;
    return g->needs_grad[id];
}

/* ---- tensors ---- */

static enum fm_status tensor_new(struct fm_graph *g, const char *name, enum fm_role role,
                                 enum fm_dtype dtype, fm_tid *out)
{
    struct fm_ctx *ctx = g->ctx;
    if (!name || !*name)
        return fm_error(ctx, FM_ERR_GRAPH, "a tensor needs a non-empty name");
    if ((unsigned)role >= FM_ROLE_COUNT || (unsigned)dtype >= FM_DTYPE_COUNT)
        return fm_error(ctx, FM_ERR_INVALID, "tensor '%s': bad role or dtype", name);
    if (fm_graph_find_tensor(g, name) != FM_NONE)
        return fm_error(ctx, FM_ERR_GRAPH, "tensor name '%s' is used twice", name);
    if (g->n_tensors >= (size_t)INT32_MAX - 1)
        return fm_error(ctx, FM_ERR_OVERFLOW, "too many tensors");
    enum fm_status st = fm_grow(ctx, (void **)&g->tensors, &g->cap_tensors, g->n_tensors + 1,
                                sizeof(*g->tensors));
    if (st)
        return st;
    const char *n = fm_arena_strdup(&g->arena, name);
    if (!n)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory adding tensor '%s'", name);
    /* keep the index at most half full */
    if ((g->n_tensors + 1) * 2 > g->index_cap) {
        st = index_rebuild(g, g->index_cap ? g->index_cap * 2 : 64);
        if (st)
            return st;
    }
    fm_tid id = (fm_tid)g->n_tensors++;
    struct fm_tensor *t = &g->tensors[id];
    memset(t, 0, sizeof(*t));
    t->name = n;
    t->role = role;
    t->dtype = dtype;
    t->producer = FM_NONE;
    t->trainable = role == FM_ROLE_PARAM;
    size_t h = (size_t)name_hash(n) & (g->index_cap - 1);
    while (g->index[h] != FM_NONE)
        h = (h + 1) & (g->index_cap - 1);
    g->index[h] = id;
    g->finalized = false;
    *out = id;
    return FM_OK;
}

static enum fm_status check_shape(struct fm_ctx *ctx, const char *what, const char *name,
                                  const struct fm_shape *shape, bool allow_empty)
{
    if (shape->rank < 0 || shape->rank > FM_MAX_DIMS)
        return fm_error(ctx, FM_ERR_SHAPE, "%s '%s': rank %d is outside 0..%d", what, name,
                        shape->rank, FM_MAX_DIMS);
    for (int i = 0; i < shape->rank; i++) {
        if (shape->dims[i] < 0 || (shape->dims[i] == 0 && !allow_empty))
            return fm_error(ctx, FM_ERR_SHAPE, "%s '%s': dim %d is %lld; dims must be positive",
                            what, name, i, (long long)shape->dims[i]);
    }
    uint64_t n;
    if (fm_shape_numel(shape, &n) != FM_OK)
        return fm_error(ctx, FM_ERR_OVERFLOW, "%s '%s': element count overflows 64 bits", what,
                        name);
    if (n > (UINT64_MAX >> 4))
        return fm_error(ctx, FM_ERR_OVERFLOW, "%s '%s': %llu elements is too many to count",
                        what, name, (unsigned long long)n);
    return FM_OK;
}

enum fm_status fm_graph_add_tensor(struct fm_graph *g, const char *name, enum fm_role role,
                                   enum fm_dtype dtype, const struct fm_shape *shape, fm_tid *out)
{
    if (!shape)
        return fm_error(g->ctx, FM_ERR_INVALID, "tensor '%s': no shape given", name ? name : "?");
    enum fm_status st = check_shape(g->ctx, "tensor", name ? name : "?", shape, g->allow_empty);
    if (st)
        return st;
    fm_tid id;
    st = tensor_new(g, name, role, dtype, &id);
    if (st)
        return st;
    g->tensors[id].shape = *shape;
    g->tensors[id].shape_known = true;
    if (out)
        *out = id;
    return FM_OK;
}

enum fm_status fm_graph_add_tensor_unshaped(struct fm_graph *g, const char *name,
                                            enum fm_role role, enum fm_dtype dtype, fm_tid *out)
{
    fm_tid id = FM_NONE;
    enum fm_status st = tensor_new(g, name, role, dtype, &id);
    if (st)
        return st;
    if (out)
        *out = id;
    return FM_OK;
}

enum fm_status fm_graph_set_shape(struct fm_graph *g, fm_tid id, const struct fm_shape *shape)
{
    if (id < 0 || (size_t)id >= g->n_tensors)
        return fm_error(g->ctx, FM_ERR_GRAPH, "no tensor with id %d", (int)id);
    enum fm_status st = check_shape(g->ctx, "tensor", g->tensors[id].name, shape, g->allow_empty);
    if (st)
        return st;
    g->tensors[id].shape = *shape;
    g->tensors[id].shape_known = true;
    g->finalized = false;
    /* nodes already shaped from the old shape are shaped again at finalize */
    if (g->tensors[id].producer == FM_NONE)
        g->reinfer = true;
    return FM_OK;
}

void fm_graph_set_trainable(struct fm_graph *g, fm_tid id, bool trainable)
{
    if (id >= 0 && (size_t)id < g->n_tensors && g->tensors[id].role == FM_ROLE_PARAM) {
        g->tensors[id].trainable = trainable;
        g->finalized = false;
    }
}

int64_t fm_graph_batch(const struct fm_graph *g)
{
    /* the first float input (images, embeddings), else the first input (token ids) */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < g->n_tensors; i++) {
            const struct fm_tensor *t = &g->tensors[i];
            if (t->role == FM_ROLE_INPUT && t->shape_known && t->shape.rank > 0 &&
                (pass == 1 || fm_dtype_is_float(t->dtype)))
                return t->shape.dims[0];
        }
    }
    return 1;
}

size_t fm_graph_set_storage(struct fm_graph *g, enum fm_dtype activations,
                            enum fm_dtype parameters)
{
    size_t changed = 0;
    for (size_t i = 0; i < g->n_tensors; i++) {
        struct fm_tensor *t = &g->tensors[i];
        if (!fm_dtype_is_float(t->dtype))
            continue;
        bool state = t->role == FM_ROLE_PARAM || t->role == FM_ROLE_BUFFER;
        enum fm_dtype d = state ? parameters : activations;
        if ((unsigned)d < FM_DTYPE_COUNT && t->dtype != d) {
            t->dtype = d;
            changed++;
        }
    }
    return changed;
}

enum fm_status fm_graph_set_ivalue(struct fm_graph *g, fm_tid id, const int64_t *values,
                                   uint64_t n)
{
    if (id < 0 || (size_t)id >= g->n_tensors)
        return fm_error(g->ctx, FM_ERR_GRAPH, "no tensor with id %d", (int)id);
    if (n > SIZE_MAX / sizeof(int64_t))
        return fm_error(g->ctx, FM_ERR_OVERFLOW, "tensor '%s': too many values",
                        g->tensors[id].name);
    int64_t *v = fm_arena_alloc(&g->arena, (size_t)(n ? n : 1) * sizeof(int64_t));
    if (!v)
        return fm_error(g->ctx, FM_ERR_NOMEM, "out of memory storing values of '%s'",
                        g->tensors[id].name);
    if (n)
        memcpy(v, values, (size_t)n * sizeof(int64_t));
    g->tensors[id].ivalue = v;
    g->tensors[id].nvalue = n;
    return FM_OK;
}

enum fm_status fm_graph_set_fvalue(struct fm_graph *g, fm_tid id, const double *values,
                                   uint64_t n)
{
    if (id < 0 || (size_t)id >= g->n_tensors)
        return fm_error(g->ctx, FM_ERR_GRAPH, "no tensor with id %d", (int)id);
    if (n > SIZE_MAX / sizeof(double))
        return fm_error(g->ctx, FM_ERR_OVERFLOW, "tensor '%s': too many values",
                        g->tensors[id].name);
    double *v = fm_arena_alloc(&g->arena, (size_t)(n ? n : 1) * sizeof(double));
    if (!v)
        return fm_error(g->ctx, FM_ERR_NOMEM, "out of memory storing values of '%s'",
                        g->tensors[id].name);
    if (n)
        memcpy(v, values, (size_t)n * sizeof(double));
    g->tensors[id].fvalue = v;
    g->tensors[id].nvalue = n;
    return FM_OK;
}

enum fm_status fm_graph_mark_output(struct fm_graph *g, fm_tid id)
{
    if (id < 0 || (size_t)id >= g->n_tensors)
        return fm_error(g->ctx, FM_ERR_GRAPH, "graph output: no tensor with id %d", (int)id);
    enum fm_status st = fm_grow(g->ctx, (void **)&g->outputs, &g->cap_outputs, g->n_outputs + 1,
                                sizeof(*g->outputs));
    if (st)
        return st;
    g->outputs[g->n_outputs++] = id;
    return FM_OK;
}

/* ---- nodes ---- */

static enum fm_status node_new(struct fm_graph *g, enum fm_op op, const char *name,
                               const struct fm_attrs *attrs, const fm_tid *inputs, int n_in,
                               int n_out, fm_nid *out)
{
    struct fm_ctx *ctx = g->ctx;
    if ((unsigned)op >= FM_OP_COUNT)
        return fm_error(ctx, FM_ERR_INVALID, "node '%s': op %d does not exist", name ? name : "?",
                        (int)op);
    const struct fm_op_desc *d = fm_op_desc(op);
    const char *opname = fm_op_name(op);
    char autoname[64];
    if (!name || !*name) {
        snprintf(autoname, sizeof(autoname), "%s_%zu", opname, g->n_nodes);
        name = autoname;
    }
    if (n_in < d->min_in || n_in > d->max_in || n_in > FM_MAX_IO)
        return fm_error(ctx, FM_ERR_GRAPH, "node '%s' (%s): %d inputs given, %d to %d expected",
                        name, opname, n_in, d->min_in, d->max_in);
    if (n_out < 1 || n_out > FM_MAX_IO || (d->n_out && n_out != d->n_out))
        return fm_error(ctx, FM_ERR_GRAPH, "node '%s' (%s): %d outputs given, %d expected", name,
                        opname, n_out, d->n_out);
    /* rules index attrs.ints by nints: a count outside the array would read past it */
    if (attrs && (attrs->nints < 0 || attrs->nints > FM_MAX_INTS))
        return fm_error(ctx, FM_ERR_INVALID, "node '%s' (%s): %d integer attributes; 0 to %d fit",
                        name, opname, attrs->nints, FM_MAX_INTS);
    for (int i = 0; i < n_in; i++) {
        if (inputs[i] == FM_NONE) {
            if (i < d->min_in)
                return fm_error(ctx, FM_ERR_GRAPH, "node '%s' (%s): required input %d is missing",
                                name, opname, i);
            continue;
        }
        if (inputs[i] < 0 || (size_t)inputs[i] >= g->n_tensors)
            return fm_error(ctx, FM_ERR_GRAPH, "node '%s' (%s): input %d refers to no tensor",
                            name, opname, i);
    }
    if (g->n_nodes >= (size_t)INT32_MAX - 1)
        return fm_error(ctx, FM_ERR_OVERFLOW, "too many nodes");
    enum fm_status st = fm_grow(ctx, (void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1,
                                sizeof(*g->nodes));
    if (st)
        return st;
    const char *nm = fm_arena_strdup(&g->arena, name);
    fm_tid *in = fm_arena_alloc(&g->arena, sizeof(fm_tid) * (size_t)(n_in ? n_in : 1));
    fm_tid *outs = fm_arena_alloc(&g->arena, sizeof(fm_tid) * (size_t)n_out);
    if (!nm || !in || !outs)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory adding node '%s'", name);
    if (n_in)
        memcpy(in, inputs, sizeof(fm_tid) * (size_t)n_in);
    fm_nid id = (fm_nid)g->n_nodes++;
    struct fm_node_rec *r = &g->nodes[id];
    memset(r, 0, sizeof(*r));
    r->pub.name = nm;
    r->pub.op = op;
    r->pub.op_name = opname;
    if (attrs)
        r->pub.attrs = *attrs;
    else
        fm_attrs_init(&r->pub.attrs);
    r->pub.n_in = n_in;
    r->pub.n_out = n_out;
    r->pub.in = in;
    r->pub.out = outs;
    for (int i = 0; i < n_out; i++)
        outs[i] = FM_NONE;
    g->finalized = false;
    *out = id;
    return FM_OK;
}

static bool inputs_shaped(const struct fm_graph *g, const struct fm_node *n)
{
    for (int i = 0; i < n->n_in; i++) {
        if (n->in[i] != FM_NONE && !g->tensors[n->in[i]].shape_known)
            return false;
    }
    return true;
}

/* Undoes a failed fm_graph_add_node: drops the node and the output tensors it created (the
 * last ones added), so that a failed call leaves the graph as it was; a half-added node with
 * no outputs would crash finalize. The name index is refilled in place: no allocation, so this
 * cannot fail. Names stay in the arena until the graph is freed. */
static void add_node_rollback(struct fm_graph *g, size_t n_nodes, size_t n_tensors)
{
    g->n_nodes = n_nodes;
    if (g->n_tensors == n_tensors)
        return;
    g->n_tensors = n_tensors;
    for (size_t i = 0; i < g->index_cap; i++)
        g->index[i] = FM_NONE;
    for (size_t t = 0; t < n_tensors; t++) {
        size_t h = (size_t)name_hash(g->tensors[t].name) & (g->index_cap - 1);
        while (g->index[h] != FM_NONE)
            h = (h + 1) & (g->index_cap - 1);
        g->index[h] = (fm_tid)t;
    }
}

enum fm_status fm_graph_add_node(struct fm_graph *g, enum fm_op op, const char *name,
                                 const struct fm_attrs *attrs, const fm_tid *inputs, int n_in,
                                 const char *const *output_names, int n_out, fm_tid *outputs)
{
    size_t n_nodes0 = g->n_nodes, n_tensors0 = g->n_tensors;
    fm_nid id;
    enum fm_status st = node_new(g, op, name, attrs, inputs, n_in, n_out, &id);
    if (st)
        return st;
    struct fm_node_rec *r = &g->nodes[id];
    fm_tid *outs = (fm_tid *)r->pub.out;
    for (int i = 0; i < n_out; i++) {
        char buf[512];
        const char *oname = output_names ? output_names[i] : NULL;
        if (!oname) {
            if (n_out == 1 && fm_graph_find_tensor(g, r->pub.name) == FM_NONE)
                snprintf(buf, sizeof(buf), "%s", r->pub.name);
            else
                snprintf(buf, sizeof(buf), "%s:%d", r->pub.name, i);
            oname = buf;
        }
        fm_tid t;
        st = tensor_new(g, oname, FM_ROLE_ACTIVATION, FM_DTYPE_FP32, &t);
        if (st) {
            add_node_rollback(g, n_nodes0, n_tensors0);
            return st;
        }
        g->tensors[t].producer = id;
        outs[i] = t;
    }
    if (inputs_shaped(g, &r->pub)) {
        st = fm_graph_infer_node(g, id);
        if (st) {
            add_node_rollback(g, n_nodes0, n_tensors0);
            return st;
        }
    }
    if (outputs) {
        for (int i = 0; i < n_out; i++)
            outputs[i] = outs[i];
    }
    return FM_OK;
}

enum fm_status fm_graph_add_node_bound(struct fm_graph *g, enum fm_op op, const char *name,
                                       const struct fm_attrs *attrs, const fm_tid *inputs,
                                       int n_in, const fm_tid *outputs, int n_out, fm_nid *out)
{
    struct fm_ctx *ctx = g->ctx;
    for (int i = 0; i < n_out; i++) {
        fm_tid t = outputs[i];
        if (t < 0 || (size_t)t >= g->n_tensors)
            return fm_error(ctx, FM_ERR_GRAPH, "node '%s': output %d refers to no tensor",
                            name ? name : "?", i);
        const struct fm_tensor *tt = &g->tensors[t];
        if (tt->role != FM_ROLE_ACTIVATION)
            return fm_error(ctx, FM_ERR_GRAPH,
                            "node '%s': output '%s' is a graph %s, not an activation",
                            name ? name : "?", tt->name, fm_role_name(tt->role));
        if (tt->producer != FM_NONE)
            return fm_error(ctx, FM_ERR_GRAPH,
                            "node '%s': output '%s' is already produced by node '%s'",
                            name ? name : "?", tt->name, g->nodes[tt->producer].pub.name);
        for (int j = 0; j < i; j++) {
            if (outputs[j] == t)
                return fm_error(ctx, FM_ERR_GRAPH, "node '%s': output '%s' is listed twice",
                                name ? name : "?", tt->name);
        }
    }
    fm_nid id;
    enum fm_status st = node_new(g, op, name, attrs, inputs, n_in, n_out, &id);
    if (st)
        return st;
    fm_tid *outs = (fm_tid *)g->nodes[id].pub.out;
    for (int i = 0; i < n_out; i++) {
        outs[i] = outputs[i];
        g->tensors[outputs[i]].producer = id;
        g->tensors[outputs[i]].shape_known = false;
    }
    if (out)
        *out = id;
    return FM_OK;
}

enum fm_status fm_graph_set_op_name(struct fm_graph *g, fm_nid node, const char *op_name)
{
    if (node < 0 || (size_t)node >= g->n_nodes)
        return fm_error(g->ctx, FM_ERR_GRAPH, "no node with id %d", (int)node);
    const char *n = fm_arena_strdup(&g->arena, op_name ? op_name : "?");
    if (!n)
        return fm_error(g->ctx, FM_ERR_NOMEM, "out of memory");
    g->nodes[node].pub.op_name = n;
    return FM_OK;
}

static bool shape_numel0(const struct fm_shape *s)
{
    for (int d = 0; d < s->rank; d++) {
        if (s->dims[d] == 0)
            return true;
    }
    return false;
}

enum fm_status fm_graph_infer_node(struct fm_graph *g, fm_nid id)
{
    struct fm_ctx *ctx = g->ctx;
    struct fm_node_rec *r = &g->nodes[id];
    const struct fm_node *n = &r->pub;
    const struct fm_op_desc *d = fm_op_desc(n->op);
    struct fm_shape_call call;
    memset(&call, 0, sizeof(call));
    call.ctx = ctx;
    call.graph = g;
    call.node = n;
    for (int i = 0; i < n->n_in; i++)
        call.in[i] = n->in[i] == FM_NONE ? NULL : &g->tensors[n->in[i]];
    for (int i = 0; i < n->n_out; i++) {
        call.out[i] = &g->tensors[n->out[i]];
        call.out_dtype[i] = call.in[0] ? call.in[0]->dtype : FM_DTYPE_FP32;
    }
    enum fm_status st = d->shape(&call);
    if (st)
        return st;
    /* an empty output (a dim of 0) is legal where the graph allows it, except from a
     * convolution or pooling of a non-empty input: that is an input too small for the window */
    bool empty_ok = g->allow_empty;
    if (empty_ok && (fm_op_class(n->op) == FM_CLASS_CONV || fm_op_class(n->op) == FM_CLASS_POOL)) {
        empty_ok = false;
        for (int i = 0; i < n->n_in; i++)
            empty_ok |= call.in[i] && shape_numel0(&call.in[i]->shape);
    }
    for (int i = 0; i < n->n_out; i++) {
        const struct fm_shape *s = &call.out_shape[i];
        for (int k = 0; k < s->rank; k++) {
            if (s->dims[k] < 0 || (s->dims[k] == 0 && !empty_ok))
                return fm_error(ctx, FM_ERR_SHAPE,
                                "layer '%s' (%s): output dim %d is %lld: the input is too small "
                                "for this network (use a larger --input)",
                                n->name, n->op_name, k, (long long)s->dims[k]);
        }
        st = check_shape(ctx, "output of layer", n->name, s, true);
        if (st)
            return st;
        struct fm_tensor *t = &g->tensors[n->out[i]];
        t->shape = *s;
        t->dtype = call.out_dtype[i];
        t->shape_known = true;
    }
    r->shaped = true;
    return FM_OK;
}

/* ---- finalize: order, infer, validate ---- */

/* Min-heap of node ids, so that among ready nodes the one added first runs first: a graph
 * built in order keeps its order. */
static void heap_push(fm_nid *h, size_t *n, fm_nid v)
{
    size_t i = (*n)++;
    h[i] = v;
    while (i > 0 && h[(i - 1) / 2] > h[i]) {
        fm_nid t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static fm_nid heap_pop(fm_nid *h, size_t *n)
{
    fm_nid top = h[0];
    h[0] = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && h[l] < h[m])
            m = l;
        if (r < *n && h[r] < h[m])
            m = r;
        if (m == i)
            break;
        fm_nid t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
    return top;
}

/* Names a node that lies on a cycle among the nodes left unordered. */
static fm_nid find_cycle_node(const struct fm_graph *g, const uint32_t *indeg)
{
    fm_nid start = FM_NONE;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (indeg[i]) {
            start = (fm_nid)i;
            break;
        }
    }
    /* walk backwards through unordered producers; after n steps we are on the cycle */
    fm_nid cur = start;
    for (size_t step = 0; step < g->n_nodes && cur != FM_NONE; step++) {
        const struct fm_node *n = &g->nodes[cur].pub;
        fm_nid next = FM_NONE;
        for (int i = 0; i < n->n_in && next == FM_NONE; i++) {
            if (n->in[i] == FM_NONE)
                continue;
            fm_nid p = g->tensors[n->in[i]].producer;
            if (p != FM_NONE && indeg[p])
                next = p;
        }
        if (next == FM_NONE)
            break;
        cur = next;
    }
    return cur;
}

enum fm_status fm_graph_finalize(struct fm_graph *g)
{
    struct fm_ctx *ctx = g->ctx;
    if (g->finalized)
        return FM_OK;
    enum fm_status st = FM_OK;
    size_t nn = g->n_nodes, nt = g->n_tensors;
    uint32_t *indeg = fm_alloc(ctx, (nn ? nn : 1) * sizeof(*indeg));
    fm_nid *heap = fm_alloc(ctx, (nn ? nn : 1) * sizeof(*heap));
    size_t *nuse = fm_alloc(ctx, (nt ? nt : 1) * sizeof(*nuse));
    fm_nid **users = NULL;
    fm_nid *topo = fm_alloc(ctx, (nn ? nn : 1) * sizeof(*topo));
    bool *grad = fm_alloc(ctx, (nt ? nt : 1) * sizeof(*grad));
    fm_nid *user_store = NULL;
    if (!indeg || !heap || !nuse || !topo || !grad) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory ordering the graph");
        goto out;
    }
    if (nn == 0) {
        st = fm_error(ctx, FM_ERR_GRAPH, "graph '%s' has no nodes", g->name);
        goto out;
    }
    /* every consumed activation must have a producer; inputs must have shapes */
    size_t total_uses = 0;
    for (size_t i = 0; i < nn; i++) {
        const struct fm_node *n = &g->nodes[i].pub;
        for (int k = 0; k < n->n_in; k++) {
            fm_tid t = n->in[k];
            if (t == FM_NONE)
                continue;
            const struct fm_tensor *tt = &g->tensors[t];
            if (tt->role == FM_ROLE_ACTIVATION && tt->producer == FM_NONE) {
                st = fm_error(ctx, FM_ERR_GRAPH,
                              "node '%s' reads tensor '%s', which no node produces and which is "
                              "not an input, parameter or constant",
                              n->name, tt->name);
                goto out;
            }
            if (tt->producer == FM_NONE && !tt->shape_known) {
                st = fm_error(ctx, FM_ERR_SHAPE,
                              "%s '%s' (read by node '%s') has no fixed shape: bind it with "
                              "--input %s=DIMS or --batch N",
                              fm_role_name(tt->role), tt->name, n->name, tt->name);
                goto out;
            }
            if (tt->producer != FM_NONE)
                indeg[i]++;
            nuse[t]++;
            total_uses++;
        }
    }
    /* consumer lists, so that finishing a node can release the nodes waiting on it */
    users = fm_alloc(ctx, (nt ? nt : 1) * sizeof(*users));
    user_store = fm_alloc(ctx, (total_uses ? total_uses : 1) * sizeof(*user_store));
    if (!users || !user_store) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory ordering the graph");
        goto out;
    }
    {
        size_t off = 0;
        for (size_t t = 0; t < nt; t++) {
            users[t] = user_store + off;
            off += nuse[t];
            nuse[t] = 0;
        }
        for (size_t i = 0; i < nn; i++) {
            const struct fm_node *n = &g->nodes[i].pub;
            for (int k = 0; k < n->n_in; k++) {
                fm_tid t = n->in[k];
                if (t != FM_NONE)
                    users[t][nuse[t]++] = (fm_nid)i;
            }
        }
    }
    size_t nheap = 0, ntopo = 0;
    for (size_t i = 0; i < nn; i++) {
        if (indeg[i] == 0)
            heap_push(heap, &nheap, (fm_nid)i);
    }
    while (nheap) {
        fm_nid id = heap_pop(heap, &nheap);
        topo[ntopo++] = id;
        const struct fm_node *n = &g->nodes[id].pub;
        for (int o = 0; o < n->n_out; o++) {
            fm_tid t = n->out[o];
            for (size_t u = 0; u < nuse[t]; u++) {
                fm_nid c = users[t][u];
                if (--indeg[c] == 0)
                    heap_push(heap, &nheap, c);
            }
        }
    }
    if (ntopo != nn) {
        fm_nid c = find_cycle_node(g, indeg);
        st = fm_error(ctx, FM_ERR_GRAPH, "the graph has a cycle through node '%s' (%s)",
                      c == FM_NONE ? "?" : g->nodes[c].pub.name,
                      c == FM_NONE ? "?" : g->nodes[c].pub.op_name);
        goto out;
    }
    /* shapes, in order */
    for (size_t i = 0; i < nn; i++) {
        fm_nid id = topo[i];
        if (!g->nodes[id].shaped || g->reinfer) {
            st = fm_graph_infer_node(g, id);
            /* an op the counter does not know may keep outputs without shapes, as long as no
             * node reads one of those (it is listed as uncounted; importers) */
            if (st == FM_ERR_UNSUPPORTED && g->nodes[id].pub.op == FM_OP_UNKNOWN) {
                const struct fm_node *n = &g->nodes[id].pub;
                bool read = false;
                for (int o = 0; o < n->n_out; o++)
                    read |= !g->tensors[n->out[o]].shape_known && nuse[n->out[o]] > 0;
                if (!read)
                    st = FM_OK;
            }
            if (st)
                goto out;
        }
    }
    g->reinfer = false;
    /* gradients flow from trainable parameters forward */
    for (size_t t = 0; t < nt; t++) {
        const struct fm_tensor *tt = &g->tensors[t];
        grad[t] = tt->role == FM_ROLE_PARAM && tt->trainable && fm_dtype_is_float(tt->dtype);
    }
    for (size_t i = 0; i < nn; i++) {
        const struct fm_node *n = &g->nodes[topo[i]].pub;
        bool any = false;
        for (int k = 0; k < n->n_in; k++) {
            if (n->in[k] != FM_NONE && grad[n->in[k]])
                any = true;
        }
        if (fm_op_is_random(n->op))   /* a random draw: nothing to differentiate */
            any = false;
        for (int o = 0; o < n->n_out; o++)
            grad[n->out[o]] = any && fm_dtype_is_float(g->tensors[n->out[o]].dtype);
    }
    fm_dealloc(ctx, g->topo);
    fm_dealloc(ctx, g->needs_grad);
    g->topo = topo;
    g->needs_grad = grad;
    topo = NULL;
    grad = NULL;
    g->finalized = true;
out:
    fm_dealloc(ctx, indeg);
    fm_dealloc(ctx, heap);
    fm_dealloc(ctx, nuse);
    fm_dealloc(ctx, users);
    fm_dealloc(ctx, user_store);
    fm_dealloc(ctx, topo);
    fm_dealloc(ctx, grad);
    return st;
}
