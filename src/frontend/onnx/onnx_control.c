/* Control flow in ONNX graphs: If, Loop and Scan. None of them is an op flopmeter counts;
 * each is replaced by the nodes it runs, built one by one with the loader's own node builder:
 *
 *   If    its condition must be known at load time (a constant, or folded from bound shapes or
 *         values); the chosen branch's nodes are built, its outputs become the If's outputs.
 *   Loop  its trip count M must be known the same way; the body is built once per iteration
 *         (unrolled), the iteration number a constant, carried values passed from one copy to
 *         the next, scan outputs stacked (Reshape to a leading 1, Concat). A condition computed
 *         from data cannot stop it early at load time: M iterations are counted, an upper bound,
 *         and the log says so.
 *   Scan  (opset 9 on) the sequence length comes from the scan inputs' shapes; each iteration
 *         reads one slice of each scan input (a Gather at the iteration's index).
 *
 * Names: a subgraph sees every name of the graphs around it (initializers, inputs, outputs of
 * nodes built before), and its own names shadow them. Each copy renames what it defines to
 * NODE/iterK/NAME (NODE/then/NAME, NODE/else/NAME), its initializers once to NODE/body/NAME,
 * shared by every iteration (one weight, not one per iteration); a scope chain (ox->scope)
 * maps original names to these while a copy is built, so that nested control flow resolves
 * through it. Nesting is capped (CTRL_DEPTH) and so is the number of nodes built from
 * subgraphs (CTRL_NODES_MAX). */
#include "onnx_internal.h"

#include <stdio.h>
#include <string.h>

#define CTRL_DEPTH 8                        /* control-flow nodes nested in subgraphs */
#define CTRL_NODES_MAX ((uint64_t)1 << 16)  /* nodes built from subgraphs, all loops together */
#define STACK_MAX (64 * 64)                 /* iterations whose scan outputs are stacked */

/* Original name -> name in the graph, for one subgraph copy: open addressing, sized when made
 * for the names it will hold (at most half full). */
struct ox_scope {
    const struct ox_scope *parent;
    size_t n, cap;
    const char **from, **to;
};

bool ox_control_op(const Onnx__NodeProto *node)
{
    const char *op = ox_str(node->op_type);
    return ox_default_domain(node->domain) &&
           (!strcmp(op, "If") || !strcmp(op, "Loop") || !strcmp(op, "Scan"));
}

/* ---- names ---- */

static const char *join(struct ox *ox, const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 3;
    char *s = fm_arena_alloc(&ox->arena, n);
    if (s)
        snprintf(s, n, "%s/%s%s%s", a, b, *c ? "/" : "", c);
    return s;
}

/* Keeps the name table at most half full (it was sized for the top graph). */
static enum fm_status names_reserve(struct ox *ox, size_t extra)
{
    if (!ox->names_n) {
        for (size_t h = 0; h < ox->names_cap; h++)
            ox->names_n += ox->names[h].name != NULL;
    }
    size_t need = (ox->names_n + extra) * 2, cap = ox->names_cap;
    if (need <= cap)
        return FM_OK;
    while (cap < need) {
        if (cap > SIZE_MAX / 4 / sizeof(struct ox_name))
            return fm_error(ox->ctx, FM_ERR_OVERFLOW, "%s: too many names", ox->src);
        cap *= 2;
    }
    struct ox_name *t = fm_alloc(ox->ctx, cap * sizeof(*t));
    if (!t)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory growing the name table");
    struct ox_name *old = ox->names;
    size_t old_cap = ox->names_cap;
    ox->names = t;
    ox->names_cap = cap;
    for (size_t h = 0; h < old_cap; h++) {
        if (!old[h].name)
            continue;
        struct ox_name *e;
        enum fm_status st = ox_name_add(ox, old[h].name, OX_KIND_INPUT, -1, &e);
        if (st) {
            fm_dealloc(ox->ctx, old);
            return st;
        }
        *e = old[h];
    }
    fm_dealloc(ox->ctx, old);
    return FM_OK;
}

/* A name defined by a subgraph copy: never one that exists already. */
static enum fm_status name_new(struct ox *ox, const Onnx__NodeProto *ctrl, const char *name,
                               enum ox_kind kind, struct ox_name **out)
{
    if (!name)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
    enum fm_status st = names_reserve(ox, 1);
    if (st)
        return st;
    if (ox_name_find(ox, name))
        return ox_node_error(ox, ctrl, FM_ERR_GRAPH, "the name '%s' given to a tensor of its "
                             "subgraph is already taken (a subgraph defines a name twice, or "
                             "the graph uses such a name)", name);
    st = ox_name_add(ox, name, kind, -1, out);
    if (!st)
        ox->names_n++;
    return st;
}

static size_t scope_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (size_t)h;
}

static enum fm_status scope_init(struct ox *ox, struct ox_scope *s, const struct ox_scope *parent,
                                 size_t names)
{
    memset(s, 0, sizeof(*s));
    s->parent = parent;
    size_t cap = 16;
    while (cap < names * 2 + 2) {
        if (cap > SIZE_MAX / 4 / sizeof(char *))
            return fm_error(ox->ctx, FM_ERR_OVERFLOW, "%s: a subgraph has too many names",
                            ox->src);
        cap *= 2;
    }
    s->from = fm_arena_alloc(&ox->arena, cap * sizeof(*s->from));
    s->to = fm_arena_alloc(&ox->arena, cap * sizeof(*s->to));
    if (!s->from || !s->to)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
    memset(s->from, 0, cap * sizeof(*s->from));
    s->cap = cap;
    return FM_OK;
}

/* Maps from to to; a second mapping of from replaces the first. */
static enum fm_status scope_put(struct ox *ox, struct ox_scope *s, const char *from,
                                const char *to)
{
    if (!to)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
    if ((s->n + 1) * 2 > s->cap)
        return fm_error(ox->ctx, FM_ERR_GRAPH, "%s: a subgraph scope is full", ox->src);
    size_t h = scope_hash(from) & (s->cap - 1);
    while (s->from[h] && strcmp(s->from[h], from))
        h = (h + 1) & (s->cap - 1);
    if (!s->from[h])
        s->n++;
    s->from[h] = from;
    s->to[h] = to;
    return FM_OK;
}

/* The name a subgraph's name stands for: the innermost scope defining it, else itself (a name of
 * the top graph). */
static const char *resolve(const struct ox_scope *s, const char *name)
{
    if (!name || !*name)
        return "";
    size_t hash = scope_hash(name);
    for (; s; s = s->parent) {
        if (!s->cap)
            continue;
        for (size_t h = hash & (s->cap - 1); s->from[h]; h = (h + 1) & (s->cap - 1)) {
            if (!strcmp(s->from[h], name))
                return s->to[h];
        }
    }
    return name;
}

/* ---- reads of the enclosing graphs, for ordering and roles ---- */

struct defs {
    const struct defs *up;
    const Onnx__GraphProto *g;
};

static bool defined_in(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_input; i++) {
        if (g->input[i]->name && !strcmp(g->input[i]->name, name))
            return true;
    }
    for (size_t i = 0; i < g->n_initializer; i++) {
        if (g->initializer[i]->name && !strcmp(g->initializer[i]->name, name))
            return true;
    }
    for (size_t i = 0; i < g->n_node; i++) {
        for (size_t o = 0; o < g->node[i]->n_output; o++) {
            if (g->node[i]->output[o] && !strcmp(g->node[i]->output[o], name))
                return true;
        }
    }
    return false;
}

static bool defined(const struct defs *d, const char *name)
{
    for (; d; d = d->up) {
        if (defined_in(d->g, name))
            return true;
    }
    return false;
}

typedef void (*read_fn)(struct ox *ox, const char *name, void *arg);

static void node_reads(struct ox *ox, const Onnx__NodeProto *n, const struct defs *up, int depth,
                       read_fn fn, void *arg);

static void graph_reads(struct ox *ox, const Onnx__GraphProto *g, const struct defs *up,
                        int depth, read_fn fn, void *arg)
{
    if (!g || depth > CTRL_DEPTH)
        return;   /* the build refuses it, naming the node */
    struct defs d = {up, g};
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_input; k++) {
            if (n->input[k] && *n->input[k] && !defined(&d, n->input[k]))
                fn(ox, n->input[k], arg);
        }
        node_reads(ox, n, &d, depth, fn, arg);
    }
    for (size_t i = 0; i < g->n_output; i++) {   /* a branch may return an outer name */
        const char *name = g->output[i]->name;
        if (name && *name && !defined(&d, name))
            fn(ox, name, arg);
    }
}

static void node_reads(struct ox *ox, const Onnx__NodeProto *n, const struct defs *up, int depth,
                       read_fn fn, void *arg)
{
    for (size_t a = 0; a < n->n_attribute; a++) {
        const Onnx__AttributeProto *at = n->attribute[a];
        graph_reads(ox, at->g, up, depth + 1, fn, arg);
        for (size_t k = 0; k < at->n_graphs; k++)
            graph_reads(ox, at->graphs[k], up, depth + 1, fn, arg);
    }
}

static bool has_subgraph(const Onnx__NodeProto *n)
{
    for (size_t a = 0; a < n->n_attribute; a++) {
        if (n->attribute[a]->g || n->attribute[a]->n_graphs)
            return true;
    }
    return false;
}

static void count_dep(struct ox *ox, const char *name, void *arg)
{
    struct ox_name *e = ox_name_find(ox, name);
    if (e && e->kind == OX_KIND_NODE_OUT)
        (*(uint32_t *)arg)++;
}

uint32_t ox_control_outer_deps(struct ox *ox, const Onnx__NodeProto *node)
{
    uint32_t n = 0;
    if (has_subgraph(node))
        node_reads(ox, node, NULL, 0, count_dep, &n);
    return n;
}

struct index_pass {
    uint32_t *extra;      /* per name slot: implicit uses counted, then placed */
    uint32_t *fill;
    struct ox_use *uses;
    int32_t node;
    bool place;
    uint64_t total;
};

static void index_read(struct ox *ox, const char *name, void *arg)
{
    struct index_pass *p = arg;
    struct ox_name *e = ox_name_find(ox, name);
    if (!e)
        return;   /* the build names it when the subgraph reads it */
    size_t h = (size_t)(e - ox->names);
    if (!p->place) {
        p->extra[h]++;
        p->total++;
    } else {
        p->uses[p->fill[h]++] = (struct ox_use){p->node, -1};
    }
}

enum fm_status ox_control_index(struct ox *ox)
{
    const Onnx__GraphProto *gp = ox->gp;
    bool any = false;
    for (size_t i = 0; i < gp->n_node && !any; i++)
        any = has_subgraph(gp->node[i]);
    if (!any)
        return FM_OK;
    struct index_pass p = {0};
    enum fm_status st = FM_OK;
    p.extra = fm_alloc(ox->ctx, ox->names_cap * sizeof(*p.extra));
    p.fill = fm_alloc(ox->ctx, ox->names_cap * sizeof(*p.fill));
    if (!p.extra || !p.fill) {
        st = fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        if (has_subgraph(gp->node[i]))
            node_reads(ox, gp->node[i], NULL, 0, index_read, &p);
    }
    uint64_t old = 0;
    for (size_t h = 0; h < ox->names_cap; h++)
        old += ox->names[h].name ? ox->names[h].uses : 0;
    if (old + p.total > UINT32_MAX) {
        st = fm_error(ox->ctx, FM_ERR_OVERFLOW, "%s: too many uses of names", ox->src);
        goto out;
    }
    p.uses = fm_alloc(ox->ctx, (size_t)(old + p.total + 1) * sizeof(*p.uses));
    if (!p.uses) {
        st = fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
        goto out;
    }
    uint32_t off = 0;
    for (size_t h = 0; h < ox->names_cap; h++) {
        struct ox_name *e = &ox->names[h];
        if (!e->name)
            continue;
        if (e->uses)
            memcpy(&p.uses[off], &ox->uses[e->first_use], e->uses * sizeof(*p.uses));
        e->first_use = off;
        p.fill[h] = off + e->uses;
        e->uses += p.extra[h];
        off += e->uses;
    }
    p.place = true;
    for (size_t i = 0; i < gp->n_node; i++) {
        p.node = (int32_t)i;
        if (has_subgraph(gp->node[i]))
            node_reads(ox, gp->node[i], NULL, 0, index_read, &p);
    }
    fm_dealloc(ox->ctx, ox->uses);
    ox->uses = p.uses;
    p.uses = NULL;
out:
    fm_dealloc(ox->ctx, p.extra);
    fm_dealloc(ox->ctx, p.fill);
    fm_dealloc(ox->ctx, p.uses);
    return st;
}

/* ---- building a copy of a subgraph ---- */

static uint64_t graph_nodes(const Onnx__GraphProto *g, int depth)
{
    if (!g || depth > CTRL_DEPTH)
        return 0;
    uint64_t n = g->n_node;
    for (size_t i = 0; i < g->n_node; i++) {
        for (size_t a = 0; a < g->node[i]->n_attribute; a++)
            n += graph_nodes(g->node[i]->attribute[a]->g, depth + 1);
    }
    return n;
}

static const Onnx__GraphProto *graph_attr(struct ox *ox, const Onnx__NodeProto *node,
                                          const char *name, enum fm_status *st)
{
    const Onnx__AttributeProto *a = ox_attr(node, name);
    if (!a || !a->g || (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)) {
        *st = ox_node_error(ox, node, FM_ERR_PARSE, "has no attribute '%s' holding a graph",
                            name);
        return NULL;
    }
    if (a->g->n_sparse_initializer) {
        *st = ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "its subgraph '%s' has sparse "
                            "initializers, which flopmeter does not read", name);
        return NULL;
    }
    *st = FM_OK;
    return a->g;
}

/* The subgraph's initializers, named NODE/WHAT/NAME once for every copy. A float one of more
 * than one element is a weight (the body's readers are not indexed for the role rules). */
static enum fm_status init_scope(struct ox *ox, const Onnx__NodeProto *ctrl,
                                 const Onnx__GraphProto *g, const char *what, struct ox_scope *s)
{
    enum fm_status st = scope_init(ox, s, ox->scope, g->n_initializer);
    for (size_t i = 0; !st && i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        if (!t->name || !*t->name)
            return ox_node_error(ox, ctrl, FM_ERR_PARSE, "an initializer of its subgraph has "
                                 "no name");
        const char *name = join(ox, ox_node_name(ctrl), what, t->name);
        struct ox_name *e;
        st = name_new(ox, ctrl, name, OX_KIND_INIT, &e);
        if (st)
            return st;
        e->init = t;
        bool many = false, none = false;   /* more than one element; an empty tensor */
        for (size_t d = 0; d < t->n_dims; d++) {
            many |= t->dims[d] > 1;
            none |= t->dims[d] == 0;
        }
        enum fm_dtype dt;
        e->role_done = true;
        e->role = t->has_data_type && ox_dtype(t->data_type, &dt) && fm_dtype_is_float(dt) &&
                          many && !none
                      ? FM_ROLE_PARAM
                      : FM_ROLE_CONST;
        st = scope_put(ox, s, t->name, name);
    }
    return st;
}

static const Onnx__ValueInfoProto *info_of(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_value_info; i++) {
        if (g->value_info[i]->name && !strcmp(g->value_info[i]->name, name))
            return g->value_info[i];
    }
    for (size_t i = 0; i < g->n_output; i++) {
        if (g->output[i]->name && !strcmp(g->output[i]->name, name))
            return g->output[i];
    }
    return NULL;
}

/* Builds one copy of g: its inputs are the names in_names, what it defines is renamed
 * PREFIX/NAME; s (whose parent is the initializers' scope) maps the body's names afterwards. */
static enum fm_status instance(struct ox *ox, const Onnx__NodeProto *ctrl,
                               const Onnx__GraphProto *g, const char *prefix,
                               const struct ox_scope *inits, const char *const *in_names,
                               ox_build_fn build, struct ox_scope *s)
{
    size_t names = g->n_input;
    for (size_t i = 0; i < g->n_node; i++)
        names += g->node[i]->n_output;
    enum fm_status st = scope_init(ox, s, inits, names);
    if (st)
        return st;
    for (size_t i = 0; i < g->n_input; i++) {
        if (!g->input[i]->name || !*g->input[i]->name)
            return ox_node_error(ox, ctrl, FM_ERR_PARSE, "input %zu of its subgraph has no name",
                                 i);
        st = scope_put(ox, s, g->input[i]->name, in_names[i]);
        if (st)
            return st;
    }
    if (ox->inlined + g->n_node > CTRL_NODES_MAX)
        return ox_node_error(ox, ctrl, FM_ERR_UNSUPPORTED, "its subgraphs unroll to more than "
                             "%llu nodes, flopmeter's limit", (unsigned long long)CTRL_NODES_MAX);
    ox->inlined += g->n_node;
    /* every name the copy defines first, so that a node reading a later one fails clearly
     * rather than reading an outer name of the same spelling */
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t o = 0; o < n->n_output; o++) {
            if (!n->output[o] || !*n->output[o])
                continue;
            struct ox_name *e;
            const char *name = join(ox, prefix, n->output[o], "");
            st = name_new(ox, ctrl, name, OX_KIND_NODE_OUT, &e);
            if (st)
                return st;
            e->info = info_of(g, n->output[o]);
            st = scope_put(ox, s, n->output[o], name);
            if (st)
                return st;
        }
    }
    const struct ox_scope *saved = ox->scope;
    for (size_t i = 0; i < g->n_node && !st; i++) {
        const Onnx__NodeProto *n = g->node[i];
        Onnx__NodeProto *c = fm_arena_alloc(&ox->arena, sizeof(*c));
        char **ins = fm_arena_alloc(&ox->arena, (n->n_input + 1) * sizeof(*ins));
        char **outs = fm_arena_alloc(&ox->arena, (n->n_output + 1) * sizeof(*outs));
        char idx[32];
        snprintf(idx, sizeof(idx), "node%zu", i);
        const char *name = join(ox, prefix, n->name && *n->name ? n->name : idx, "");
        if (!c || !ins || !outs || !name)
            return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
        *c = *n;
        c->name = (char *)name;
        for (size_t k = 0; k < n->n_input; k++)
            ins[k] = (char *)resolve(s, n->input[k]);
        for (size_t k = 0; k < n->n_output; k++)
            outs[k] = (char *)(n->output[k] && *n->output[k] ? resolve(s, n->output[k]) : "");
        c->input = ins;
        c->output = outs;
        if (!c->op_type || !*c->op_type)
            return ox_node_error(ox, ctrl, FM_ERR_PARSE, "node %zu of its subgraph has no "
                                 "op_type", i);
        ox->scope = s;
        st = build(ox, c);
        ox->scope = saved;
    }
    return st;
}

/* The tensor behind a name (an initializer is made on first use); FM_NONE when empty. */
static enum fm_status tid_of(struct ox *ox, const Onnx__NodeProto *ctrl, const char *name,
                             fm_tid *out)
{
    char *in[1] = {(char *)name};
    Onnx__NodeProto probe = *ctrl;
    probe.n_input = 1;
    probe.input = in;
    return ox_input(ox, &probe, 0, out);
}

/* out_name (an output of the control node) becomes the tensor src_name holds. */
static enum fm_status alias(struct ox *ox, const Onnx__NodeProto *ctrl, const char *out_name,
                            const char *src_name)
{
    fm_tid t;
    enum fm_status st = tid_of(ox, ctrl, src_name, &t);
    if (st)
        return st;
    struct ox_name *src = ox_name_find(ox, src_name);
    struct ox_name *e = out_name && *out_name ? ox_name_find(ox, out_name) : NULL;
    if (!e)
        return FM_OK;
    e->tid = t;
    e->empty = src && src->empty;
    return FM_OK;
}

/* A constant tensor under a new name: a scalar int64 or bool, or an int64 vector. */
static enum fm_status const_ints(struct ox *ox, const Onnx__NodeProto *ctrl, const char *name,
                                 enum fm_dtype dtype, const int64_t *v, int n, bool vector)
{
    struct ox_name *e;
    enum fm_status st = name_new(ox, ctrl, name, OX_KIND_NODE_OUT, &e);
    if (st)
        return st;
    struct fm_shape s = {0};
    if (vector) {
        s.rank = 1;
        s.dims[0] = n;
    }
    struct ox_val val = {.known = true, .n = (uint64_t)n, .i = (int64_t *)v};
    fm_tid t;
    st = ox_const_tensor(ox, ctrl, name, FM_ROLE_CONST, dtype, &s, &val, &t);
    if (st)
        return st;
    e = ox_name_find(ox, name);
    e->tid = t;
    return FM_OK;
}

/* Builds a node made here (Gather, Reshape, Concat) through the loader, so that it is folded or
 * mapped like any other. */
static enum fm_status synth(struct ox *ox, const Onnx__NodeProto *ctrl, const char *name,
                            const char *op, const char *a, const char *b, const char *out,
                            bool new_out, int64_t axis, const char *const *many, size_t n_many,
                            ox_build_fn build)
{
    struct ox_name *e;
    enum fm_status st = FM_OK;
    if (new_out)
        st = name_new(ox, ctrl, out, OX_KIND_NODE_OUT, &e);
    if (st)
        return st;
    Onnx__AttributeProto at = ONNX__ATTRIBUTE_PROTO__INIT;
    Onnx__AttributeProto *ats[1] = {&at};
    at.name = "axis";
    at.has_type = true;
    at.type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    at.has_i = true;
    at.i = axis;
    char *two[2] = {(char *)a, (char *)b};
    char *outs[1] = {(char *)out};
    Onnx__NodeProto n = ONNX__NODE_PROTO__INIT;
    n.name = (char *)name;
    n.op_type = (char *)op;
    n.input = many ? (char **)many : two;
    n.n_input = many ? n_many : 2;
    n.output = outs;
    n.n_output = 1;
    n.attribute = ats;
    n.n_attribute = strcmp(op, "Reshape") ? 1 : 0;
    return build(ox, &n);
}

/* Stacks n tensors of one shape into out_name along a new axis (reversed: last first). At most
 * 64 x 64 parts: a Concat of at most 64 (FM_MAX_IO) Concats. */
static enum fm_status stack(struct ox *ox, const Onnx__NodeProto *ctrl, const char *out_name,
                            const char *const *parts, size_t n, int64_t axis, bool reverse,
                            ox_build_fn build)
{
    fm_tid t0;
    enum fm_status st = tid_of(ox, ctrl, parts[0], &t0);
    if (st)
        return st;
    if (t0 == FM_NONE)
        return ox_node_error(ox, ctrl, FM_ERR_UNSUPPORTED, "scan output '%s' is empty",
                             out_name);
    struct fm_shape s = ox->g->tensors[t0].shape;
    if (axis < 0)
        axis += s.rank + 1;
    if (axis < 0 || axis > s.rank || s.rank >= FM_MAX_DIMS)
        return ox_node_error(ox, ctrl, FM_ERR_SHAPE, "scan output axis %lld is out of range "
                             "for '%s' of rank %d", (long long)axis, out_name, s.rank);
    int64_t dims[FM_MAX_DIMS];
    for (int d = 0, k = 0; d <= s.rank; d++)
        dims[d] = d == axis ? 1 : s.dims[k++];
    const char *shape_name = join(ox, out_name, "stack_shape", "");
    st = const_ints(ox, ctrl, shape_name, FM_DTYPE_INT64, dims, s.rank + 1, true);
    if (st)
        return st;
    const char **r = fm_arena_alloc(&ox->arena, n * sizeof(*r));
    if (!r)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        char k[32];
        snprintf(k, sizeof(k), "stack%zu", i);
        r[i] = join(ox, out_name, k, "");
        st = synth(ox, ctrl, r[i], "Reshape", parts[reverse ? n - 1 - i : i], shape_name, r[i],
                   true, 0, NULL, 0, build);
        if (st)
            return st;
    }
    if (n <= FM_MAX_IO)
        return synth(ox, ctrl, join(ox, out_name, "stack", ""), "Concat", NULL, NULL, out_name,
                     false, axis, r, n, build);
    const char *groups[FM_MAX_IO];
    size_t ng = 0;
    for (size_t i = 0; i < n; i += FM_MAX_IO, ng++) {
        char k[32];
        snprintf(k, sizeof(k), "group%zu", ng);
        groups[ng] = join(ox, out_name, k, "");
        st = synth(ox, ctrl, groups[ng], "Concat", NULL, NULL, groups[ng], true, axis, r + i,
                   n - i < FM_MAX_IO ? n - i : FM_MAX_IO, build);
        if (st)
            return st;
    }
    return synth(ox, ctrl, join(ox, out_name, "stack", ""), "Concat", NULL, NULL, out_name, false,
                 axis, groups, ng, build);
}

/* The graph inputs a tensor follows from, for the message that asks to bind them (a walk of
 * at most *budget producers: a graph of shared subexpressions is no tree). */
static void inputs_of(const struct fm_graph *g, fm_tid t, char *buf, size_t size, int *budget)
{
    if (t == FM_NONE || --*budget < 0 || strlen(buf) + 64 > size)
        return;
    const struct fm_tensor *x = &g->tensors[t];
    if (x->role == FM_ROLE_INPUT) {
        size_t len = strlen(buf);
        char quoted[256];
        snprintf(quoted, sizeof(quoted), "'%.200s'", x->name);
        if (!strstr(buf, quoted))
            snprintf(buf + len, size - len, "%s%.*s", len ? ", " : "", (int)(size - len - 3),
                     quoted);
        return;
    }
    const struct fm_node *p = fm_graph_node(g, x->producer);
    for (int i = 0; p && i < p->n_in; i++)
        inputs_of(g, p->in[i], buf, size, budget);
}

static enum fm_status unknown(struct ox *ox, const Onnx__NodeProto *node, int slot,
                              const char *what, fm_tid t)
{
    char from[256] = "";
    int budget = 1024;   /* producers visited; also bounds the recursion */
    inputs_of(ox->g, t, from, sizeof(from), &budget);
    const char *name = node->input[slot];
    if (ox->g->tensors[t].role == FM_ROLE_INPUT)
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "its %s '%s' (input %d) is a graph "
                             "input whose value is not known at load time: bind it with "
                             "fm_load_opts.values %s=V", what, name, slot, name);
    return ox_node_error(ox, node, FM_ERR_UNSUPPORTED,
                         "its %s '%s' (input %d) is not known at load time%s%s: bind the graph "
                         "inputs it follows from with fm_load_opts.values NAME=V[,V...] (integer "
                         "values) or fm_load_opts.bindings NAME=DIMS (a shape)%s",
                         what, name, slot, *from ? "; it follows from " : "", from,
                         *from ? "" : " (it follows from no graph input: "
                         "an op flopmeter does not evaluate at load time computes it)");
}

static enum fm_status known_int(struct ox *ox, const Onnx__NodeProto *node, int slot,
                                const char *what, int64_t *out)
{
    fm_tid t;
    enum fm_status st = tid_of(ox, node, node->input[slot], &t);
    if (st)
        return st;
    if (t == FM_NONE)
        return ox_node_error(ox, node, FM_ERR_SHAPE, "its %s (input %d) is %s", what, slot,
                             *ox_str(node->input[slot]) ? "an empty tensor" : "absent");
    const struct ox_val *v = ox_val_of(ox, t);
    if (!v || !v->known || v->n < 1)
        return unknown(ox, node, slot, what, t);
    if (v->n != 1)
        return ox_node_error(ox, node, FM_ERR_SHAPE, "its %s '%s' has %llu elements; one is "
                             "expected", what, node->input[slot], (unsigned long long)v->n);
    *out = v->is_float ? (int64_t)(v->f[0] != 0) : v->i[0];
    return FM_OK;
}

/* ---- If ---- */

static enum fm_status build_if(struct ox *ox, const Onnx__NodeProto *node, ox_build_fn build)
{
    if (node->n_input != 1 || node->n_output < 1)
        return ox_node_error(ox, node, FM_ERR_PARSE, "has %zu inputs and %zu outputs (one "
                             "condition; one output or more)", node->n_input, node->n_output);
    int64_t cond;
    enum fm_status st = known_int(ox, node, 0, "condition", &cond);
    if (st)
        return st;
    const char *which = cond ? "then_branch" : "else_branch";
    const Onnx__GraphProto *g = graph_attr(ox, node, which, &st);
    if (!g)
        return st;
    if (g->n_input || g->n_output != node->n_output)
        return ox_node_error(ox, node, FM_ERR_PARSE, "its %s has %zu inputs and %zu outputs; "
                             "a branch has no inputs and one output per output of the If (%zu)",
                             which, g->n_input, g->n_output, node->n_output);
    const char *what = cond ? "then" : "else";
    struct ox_scope inits, s;
    st = init_scope(ox, node, g, what, &inits);
    if (!st)
        st = instance(ox, node, g, join(ox, ox_node_name(node), what, ""), &inits, NULL, build,
                      &s);
    for (size_t i = 0; !st && i < node->n_output; i++)
        st = alias(ox, node, node->output[i], resolve(&s, g->output[i]->name));
    return st;
}

/* ---- Loop ---- */

/* Unrolling iters copies of a body of body nodes stays within the nodes built from subgraphs,
 * and stacking n_scan scan outputs within STACK_MAX iterations. */
static enum fm_status unroll_limits(struct ox *ox, const Onnx__NodeProto *node, int64_t iters,
                                    uint64_t body, size_t n_scan)
{
    if (iters && body && (uint64_t)iters > (CTRL_NODES_MAX - ox->inlined) / body)
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "unrolling its %lld iterations of "
                             "%llu body nodes exceeds flopmeter's limit of %llu nodes built from "
                             "subgraphs", (long long)iters, (unsigned long long)body,
                             (unsigned long long)CTRL_NODES_MAX);
    if (n_scan && iters > STACK_MAX)
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "its %lld iterations have scan "
                             "outputs; flopmeter stacks at most %d", (long long)iters, STACK_MAX);
    return FM_OK;
}

static enum fm_status build_loop(struct ox *ox, const Onnx__NodeProto *node, ox_build_fn build)
{
    enum fm_status st;
    const Onnx__GraphProto *g = graph_attr(ox, node, "body", &st);
    if (!g)
        return st;
    if (node->n_input < 2)
        return ox_node_error(ox, node, FM_ERR_PARSE, "has %zu inputs; a Loop has M, cond and "
                             "its loop-carried values (M and cond may be empty names)",
                             node->n_input);
    size_t nc = node->n_input - 2;   /* loop-carried values */
    if (g->n_input != nc + 2 || g->n_output < nc + 1 || node->n_output > g->n_output - 1)
        return ox_node_error(ox, node, FM_ERR_PARSE, "its body has %zu inputs and %zu outputs "
                             "for %zu loop-carried values (expected %zu inputs: iteration, "
                             "condition, the values; and 1 + %zu + scan outputs, at least %zu)",
                             g->n_input, g->n_output, nc, nc + 2, nc, node->n_output + 1);
    size_t ns = g->n_output - 1 - nc;   /* scan outputs */
    if (!node->input[0] || !*node->input[0])
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "has no trip count (input M is "
                             "empty): it runs until a condition computed from data is false, "
                             "which cannot be known at load time");
    int64_t m;
    st = known_int(ox, node, 0, "trip count", &m);
    if (st)
        return st;
    if (m < 0)
        m = 0;
    bool upper = false, stop = false;
    const char *cond = node->input[1];
    if (cond && *cond) {
        int64_t c;
        fm_tid t;
        st = tid_of(ox, node, cond, &t);
        if (st)
            return st;
        const struct ox_val *v = t != FM_NONE ? ox_val_of(ox, t) : NULL;
        if (v && v->known && v->n == 1) {
            c = v->is_float ? v->f[0] != 0 : v->i[0];
            stop = !c;
        } else {
            upper = true;
        }
    } else {
        static const int64_t one = 1;
        cond = join(ox, ox_node_name(node), "cond", "");
        st = const_ints(ox, node, cond, FM_DTYPE_BOOL, &one, 1, false);
        if (st)
            return st;
    }
    uint64_t body = graph_nodes(g, 0);
    st = unroll_limits(ox, node, m, body, ns);
    if (st)
        return st;
    struct ox_scope inits;
    st = init_scope(ox, node, g, "body", &inits);
    if (st)
        return st;
    const char **prev = fm_arena_alloc(&ox->arena, (nc + 2) * sizeof(*prev));
    const char **scans = fm_arena_alloc(&ox->arena, (ns * (size_t)m + 1) * sizeof(*scans));
    if (!prev || !scans)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
    prev[1] = cond;
    for (size_t k = 0; k < nc; k++)
        prev[2 + k] = node->input[2 + k];
    int64_t it = 0;
    for (; it < m && !stop; it++) {
        char iter[32];
        snprintf(iter, sizeof(iter), "iter%lld", (long long)it);
        const char *prefix = join(ox, ox_node_name(node), iter, "");
        prev[0] = join(ox, prefix, "i", "");
        st = const_ints(ox, node, prev[0], FM_DTYPE_INT64, &it, 1, false);
        if (st)
            return st;
        struct ox_scope s;
        st = instance(ox, node, g, prefix, &inits, prev, build, &s);
        if (st)
            return st;
        prev[1] = resolve(&s, g->output[0]->name);
        fm_tid t;
        st = tid_of(ox, node, prev[1], &t);
        if (st)
            return st;
        const struct ox_val *v = t != FM_NONE ? ox_val_of(ox, t) : NULL;
        if (v && v->known && v->n == 1)
            stop = v->is_float ? v->f[0] == 0 : v->i[0] == 0;
        else
            upper = true;
        for (size_t k = 0; k < nc; k++)
            prev[2 + k] = resolve(&s, g->output[1 + k]->name);
        for (size_t k = 0; k < ns; k++) {
            const char *name = resolve(&s, g->output[1 + nc + k]->name);
            fm_tid a, b;
            scans[k * (size_t)m + (size_t)it] = name;
            st = tid_of(ox, node, name, &a);
            if (!st)
                st = tid_of(ox, node, scans[k * (size_t)m], &b);
            if (st)
                return st;
            if (a == FM_NONE || b == FM_NONE ||
                !fm_shape_equal(&ox->g->tensors[a].shape, &ox->g->tensors[b].shape))
                return ox_node_error(ox, node, FM_ERR_SHAPE, "scan output '%s' changes shape "
                                     "between iterations 0 and %lld (or is empty): it cannot "
                                     "be stacked", g->output[1 + nc + k]->name, (long long)it);
        }
    }
    if (upper && !ox->ctrl_notes++)   /* once: a nested Loop would say it per copy */
        fm_log(ox->ctx, "%s: node '%s' (Loop): its condition depends on data, so %lld "
               "iterations, the trip count, are counted: an upper bound (any other such Loop "
               "of the file is counted the same way)", ox->src, ox_node_name(node),
               (long long)it);
    for (size_t k = 0; k < nc && k < node->n_output; k++) {
        st = alias(ox, node, node->output[k], prev[2 + k]);
        if (st)
            return st;
    }
    for (size_t k = 0; nc + k < node->n_output; k++) {
        const char *out = node->output[nc + k];
        if (!out || !*out)
            continue;
        if (!it) {   /* no iteration: a leading dim of 0 */
            struct ox_name *e = ox_name_find(ox, out);
            if (e)
                e->empty = true;
            continue;
        }
        st = stack(ox, node, out, scans + k * (size_t)m, (size_t)it, 0, false, build);
        if (st)
            return st;
    }
    return FM_OK;
}

/* ---- Scan (opset 9 on) ---- */

static enum fm_status scan_ints(struct ox *ox, const Onnx__NodeProto *node, const char *name,
                                int64_t *v, size_t want)
{
    int n;
    enum fm_status st = ox_attr_ints(ox, node, name, v, FM_MAX_IO, &n);
    if (st)
        return st;
    if (n && (size_t)n != want)
        return ox_node_error(ox, node, FM_ERR_PARSE, "attribute '%s' has %d values; %zu "
                             "expected", name, n, want);
    if (!n)
        memset(v, 0, sizeof(*v) * want);
    return FM_OK;
}

static enum fm_status build_scan(struct ox *ox, const Onnx__NodeProto *node, ox_build_fn build)
{
    if (ox->opset < 9)
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "Scan at opset %lld (opset 8's form, "
                             "with a batch axis and a sequence_lens input) is not read; "
                             "re-export at opset 9 or later", (long long)ox->opset);
    enum fm_status st;
    const Onnx__GraphProto *g = graph_attr(ox, node, "body", &st);
    if (!g)
        return st;
    int64_t nsi;
    st = ox_attr_int(ox, node, "num_scan_inputs", -1, &nsi);
    if (st)
        return st;
    if (nsi < 1 || (size_t)nsi > node->n_input)
        return ox_node_error(ox, node, FM_ERR_PARSE, "num_scan_inputs is %lld for %zu inputs",
                             (long long)nsi, node->n_input);
    size_t nin = (size_t)nsi, nst = node->n_input - nin;
    if (g->n_input != node->n_input || g->n_output < nst || node->n_output > g->n_output)
        return ox_node_error(ox, node, FM_ERR_PARSE, "its body has %zu inputs and %zu outputs "
                             "for %zu state values and %zu scan inputs (expected %zu inputs, "
                             "and %zu outputs or more)", g->n_input, g->n_output, nst, nin,
                             node->n_input, nst > node->n_output ? nst : node->n_output);
    size_t nso = g->n_output - nst;
    if (nso > FM_MAX_IO)
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "its body has %zu scan outputs (at "
                             "most %d)", nso, FM_MAX_IO);
    int64_t in_dir[FM_MAX_IO], in_axis[FM_MAX_IO], out_dir[FM_MAX_IO], out_axis[FM_MAX_IO];
    st = scan_ints(ox, node, "scan_input_directions", in_dir, nin);
    if (!st)
        st = scan_ints(ox, node, "scan_input_axes", in_axis, nin);
    if (!st)
        st = scan_ints(ox, node, "scan_output_directions", out_dir, nso);
    if (!st)
        st = scan_ints(ox, node, "scan_output_axes", out_axis, nso);
    if (st)
        return st;
    int64_t len = -1;
    size_t first = 0;
    for (size_t j = 0; j < nin; j++) {
        fm_tid t;
        const char *name = node->input[nst + j];
        st = tid_of(ox, node, name, &t);
        if (st)
            return st;
        if (t == FM_NONE)
            return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "scan input '%s' is empty "
                                 "or absent", ox_str(name));
        const struct fm_shape *s = &ox->g->tensors[t].shape;
        int64_t a = in_axis[j] < 0 ? in_axis[j] + s->rank : in_axis[j];
        if (a < 0 || a >= s->rank)
            return ox_node_error(ox, node, FM_ERR_SHAPE, "scan axis %lld is out of range for "
                                 "scan input '%s' of rank %d", (long long)in_axis[j], name,
                                 s->rank);
        in_axis[j] = a;
        if (len < 0) {
            len = s->dims[a];
            first = j;
        } else if (s->dims[a] != len) {
            return ox_node_error(ox, node, FM_ERR_SHAPE, "its scan inputs have different "
                                 "sequence lengths: '%s' %lld (axis %lld), '%s' %lld (axis "
                                 "%lld)", node->input[nst + first], (long long)len,
                                 (long long)in_axis[first], name, (long long)s->dims[a],
                                 (long long)a);
        }
    }
    uint64_t body = graph_nodes(g, 0) + nin;
    st = unroll_limits(ox, node, len, body, nso);
    if (st)
        return st;
    struct ox_scope inits;
    st = init_scope(ox, node, g, "body", &inits);
    if (st)
        return st;
    const char **prev = fm_arena_alloc(&ox->arena, (node->n_input + 1) * sizeof(*prev));
    const char **scans = fm_arena_alloc(&ox->arena, (nso * (size_t)len + 1) * sizeof(*scans));
    if (!prev || !scans)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < nst; k++)
        prev[k] = node->input[k];
    ox->inlined += nin * (uint64_t)len;
    for (int64_t it = 0; it < len; it++) {
        char iter[32];
        snprintf(iter, sizeof(iter), "iter%lld", (long long)it);
        const char *prefix = join(ox, ox_node_name(node), iter, "");
        for (size_t j = 0; j < nin; j++) {
            char k[32];
            int64_t at = in_dir[j] ? len - 1 - it : it;
            snprintf(k, sizeof(k), "index%zu", j);
            const char *idx = join(ox, prefix, k, "");
            snprintf(k, sizeof(k), "slice%zu", j);
            prev[nst + j] = join(ox, prefix, k, "");
            st = const_ints(ox, node, idx, FM_DTYPE_INT64, &at, 1, false);
            if (!st)
                st = synth(ox, node, prev[nst + j], "Gather", node->input[nst + j], idx,
                           prev[nst + j], true, in_axis[j], NULL, 0, build);
            if (st)
                return st;
        }
        struct ox_scope s;
        st = instance(ox, node, g, prefix, &inits, prev, build, &s);
        if (st)
            return st;
        for (size_t k = 0; k < nst; k++)
            prev[k] = resolve(&s, g->output[k]->name);
        for (size_t k = 0; k < nso; k++) {
            const char *name = resolve(&s, g->output[nst + k]->name);
            fm_tid a, b;
            scans[k * (size_t)len + (size_t)it] = name;
            st = tid_of(ox, node, name, &a);
            if (!st)
                st = tid_of(ox, node, scans[k * (size_t)len], &b);
            if (st)
                return st;
            if (a == FM_NONE || b == FM_NONE ||
                !fm_shape_equal(&ox->g->tensors[a].shape, &ox->g->tensors[b].shape))
                return ox_node_error(ox, node, FM_ERR_SHAPE, "scan output '%s' changes shape "
                                     "between iterations 0 and %lld (or is empty): it cannot "
                                     "be stacked", g->output[nst + k]->name, (long long)it);
        }
    }
    for (size_t k = 0; k < nst && k < node->n_output; k++) {
        st = alias(ox, node, node->output[k], prev[k]);
        if (st)
            return st;
    }
    for (size_t k = 0; nst + k < node->n_output; k++) {
        const char *out = node->output[nst + k];
        if (!out || !*out)
            continue;
        if (!len) {
            struct ox_name *e = ox_name_find(ox, out);
            if (e)
                e->empty = true;
            continue;
        }
        st = stack(ox, node, out, scans + k * (size_t)len, (size_t)len, out_axis[k],
                   out_dir[k] != 0, build);
        if (st)
            return st;
    }
    return FM_OK;
}

enum fm_status ox_control_build(struct ox *ox, const Onnx__NodeProto *node, ox_build_fn build)
{
    if (ox->ctrl_depth >= CTRL_DEPTH)
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "control flow nested more than %d "
                             "deep", CTRL_DEPTH);
    const char *op = ox_str(node->op_type);
    ox->ctrl_depth++;
    enum fm_status st = !strcmp(op, "If")     ? build_if(ox, node, build)
                        : !strcmp(op, "Loop") ? build_loop(ox, node, build)
                                              : build_scan(ox, node, build);
    ox->ctrl_depth--;
    return st;
}
