/* The ONNX frontend's entry points: unpack the file (onnx_wire.c), index its value names, bind
 * the symbolic dims of the graph inputs, order the nodes, fold (onnx_fold.c) or map
 * (onnx_map.c) each in turn, and finalize the graph. No op-specific rule lives here, and weight
 * payloads are never interpreted: initializers give names, dtypes and dims. */
#include "onnx_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- graph inputs and symbolic dims ---- */

static enum fm_status sym_bind(struct ox *ox, const char *name, int64_t value)
{
    for (size_t k = 0; k < ox->n_syms; k++) {
        if (strcmp(ox->syms[k].name, name) == 0)
            return FM_OK;   /* the first binding wins */
    }
    struct ox_sym *s = fm_arena_alloc(&ox->arena, sizeof(*s) * (ox->n_syms + 1));
    if (!s)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
    if (ox->n_syms)
        memcpy(s, ox->syms, sizeof(*s) * ox->n_syms);
    s[ox->n_syms].name = name;
    s[ox->n_syms].value = value;
    ox->syms = s;
    ox->n_syms++;
    return FM_OK;
}

static const struct fm_input_binding *binding_of(const struct ox *ox, const char *name)
{
    for (size_t i = 0; i < ox->opts->n_bindings; i++) {
        if (ox->opts->bindings[i].name && strcmp(ox->opts->bindings[i].name, name) == 0)
            return &ox->opts->bindings[i];
    }
    return NULL;
}

static const struct fm_value_binding *value_of(const struct ox *ox, const char *name)
{
    for (size_t i = 0; i < ox->opts->n_values; i++) {
        if (ox->opts->values[i].name && strcmp(ox->opts->values[i].name, name) == 0)
            return &ox->opts->values[i];
    }
    return NULL;
}

static const Onnx__TensorShapeProto *input_dims(const Onnx__ValueInfoProto *vi)
{
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type)
        return NULL;
    return vi->type->tensor_type->shape;
}

/* Symbols named by bindings first (so that a bound "sequence" fills every input using it). */
static enum fm_status bind_symbols(struct ox *ox)
{
    const Onnx__GraphProto *gp = ox->gp;
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        const struct fm_input_binding *b = binding_of(ox, ox_str(vi->name));
        const Onnx__TensorShapeProto *sp = input_dims(vi);
        if (!b || !sp || (int)sp->n_dim != b->shape.rank)
            continue;
        for (size_t d = 0; d < sp->n_dim; d++) {
            if (sp->dim[d]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                sp->dim[d]->dim_param && *sp->dim[d]->dim_param) {
                enum fm_status st = sym_bind(ox, sp->dim[d]->dim_param, b->shape.dims[d]);
                if (st)
                    return st;
            }
        }
    }
    return FM_OK;
}

/* --value: the input's contents, known from now on like a constant's (the folder and every
 * operand that must be known read them). Integers for integer and bool inputs (a whole-valued
 * float accepted), any numbers for float inputs; as many as the shape has elements. */
static enum fm_status bind_value(struct ox *ox, const char *name, enum fm_dtype dtype,
                                 const struct fm_shape *s, const struct fm_value_binding *vb,
                                 fm_tid tid)
{
    uint64_t want = 1;
    for (int d = 0; d < s->rank; d++)
        want *= (uint64_t)s->dims[d];
    if (want != vb->n) {
        char dims[128];
        fm_shape_format(s, dims, sizeof(dims));
        return fm_error(ox->ctx, FM_ERR_INVALID, "fm_load_opts.values %s: %zu values given; its "
                        "shape %s holds %llu", name, vb->n, dims, (unsigned long long)want);
    }
    if (vb->n > OX_FOLD_MAX)
        return fm_error(ox->ctx, FM_ERR_INVALID, "fm_load_opts.values %s: %zu values; at most %d "
                                                 "are read",
                        name, vb->n, OX_FOLD_MAX);
    struct ox_val v = {true, fm_dtype_is_float(dtype), vb->n, NULL, NULL};
    void *p = fm_arena_alloc(&ox->arena, (vb->n ? vb->n : 1) * 8);
    if (!p)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
    for (size_t k = 0; k < vb->n; k++) {
        if (v.is_float) {
            ((double *)p)[k] = vb->fvalues ? vb->fvalues[k] : (double)vb->ivalues[k];
            continue;
        }
        int64_t x = 0;
        if (vb->ivalues) {
            x = vb->ivalues[k];
        } else if (vb->fvalues[k] == (double)(int64_t)vb->fvalues[k]) {
            x = (int64_t)vb->fvalues[k];
        } else {
            return fm_error(ox->ctx, FM_ERR_INVALID, "fm_load_opts.values %s: value %zu (%g) is "
                            "not a whole number; the input is %s", name, k, vb->fvalues[k],
                            fm_dtype_name(dtype));
        }
        if (dtype == FM_DTYPE_BOOL && x != 0 && x != 1)
            return fm_error(ox->ctx, FM_ERR_INVALID, "fm_load_opts.values %s: value %zu is %lld; a "
                            "bool input takes 0 or 1", name, k, (long long)x);
        ((int64_t *)p)[k] = x;
    }
    if (v.is_float)
        v.f = p;
    else
        v.i = p;
    return ox_set_val(ox, tid, &v);
}

static enum fm_status add_input(struct ox *ox, const Onnx__ValueInfoProto *vi, struct ox_name *e)
{
    const char *name = e->name;
    enum fm_dtype dtype;
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type || !vi->type->tensor_type->has_elem_type ||
        !ox_dtype(vi->type->tensor_type->elem_type, &dtype))
        return fm_error(ox->ctx, FM_ERR_UNSUPPORTED, "%s: graph input '%s' is not a tensor of a "
                        "numeric type", ox->src, name);
    const Onnx__TensorShapeProto *sp = vi->type->tensor_type->shape;
    const struct fm_input_binding *b = binding_of(ox, name);
    const struct fm_value_binding *vb = value_of(ox, name);
    struct fm_shape s = {0};
    if (vb && !b && (!sp || sp->n_dim <= 1)) {
        /* the shape follows from the values: [n], or a scalar where the file says rank 0 */
        s.rank = sp && sp->n_dim == 0 ? 0 : 1;
        s.dims[0] = (int64_t)vb->n;
        if (sp && sp->n_dim == 1 &&
            sp->dim[0]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            sp->dim[0]->dim_value != (int64_t)vb->n)
            return fm_error(ox->ctx, FM_ERR_INVALID, "fm_load_opts.values %s: %zu values given; "
                            "the file declares %lld",
                            name, vb->n, (long long)sp->dim[0]->dim_value);
    } else if (b) {
        if (sp && (int)sp->n_dim != b->shape.rank)
            return fm_error(ox->ctx, FM_ERR_INVALID, "fm_load_opts.bindings %s: the file gives "
                            "this input %zu dims, the binding %d", name, sp->n_dim, b->shape.rank);
        s = b->shape;
    } else {
        if (!sp)
            return fm_error(ox->ctx, FM_ERR_SHAPE, "%s: graph input '%s' has no shape in the file: "
                            "bind it with fm_load_opts.bindings %s=DIMS", ox->src, name, name);
        if (sp->n_dim > FM_MAX_DIMS)
            return fm_error(ox->ctx, FM_ERR_UNSUPPORTED, "%s: graph input '%s' has %zu dims; "
                            "flopmeter handles at most %d", ox->src, name, sp->n_dim,
                            FM_MAX_DIMS);
        s.rank = (int)sp->n_dim;
        for (int d = 0; d < s.rank; d++) {
            const Onnx__TensorShapeProto__Dimension *dim = sp->dim[d];
            const char *sym = dim->value_case ==
                                      ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                                  ? ox_str(dim->dim_param)
                                  : NULL;
            int64_t v = 0;
            /* -1 is how Paddle2ONNX (and some other exporters) write a dynamic dim: symbolic,
             * without a name. A 0 is a real dim of 0 (an empty tensor), as ONNX defines it. */
            bool minus1 = dim->value_case ==
                              ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                          dim->dim_value == -1;
            if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                !minus1) {
                v = dim->dim_value;
                if (v < 0 || v > OX_DIM_MAX)
                    return fm_error(ox->ctx, FM_ERR_PARSE, "%s: graph input '%s': dim %d is "
                                    "%lld; dims must be at least 0 and at most 2^40", ox->src,
                                    name, d, (long long)v);
                if (d == 0 && ox->opts->batch_given && v != ox->opts->zoo.batch) {
                    fm_log(ox->ctx, "%s: input '%s': batch %lld from fm_zoo_opts.batch replaces "
                           "the file's %lld", ox->src, name, (long long)ox->opts->zoo.batch,
                           (long long)v);
                    if (!ox->file_batch)
                        ox->file_batch = v;
                    v = ox->opts->zoo.batch;
                }
            } else {
                for (size_t k = 0; sym && *sym && k < ox->n_syms; k++) {
                    if (strcmp(ox->syms[k].name, sym) == 0)
                        v = ox->syms[k].value;
                }
                if (v == 0 && d == 0)   /* the batch dim: --batch (default 1) */
                    v = ox->opts->zoo.batch;
                if (v <= 0 && minus1)
                    return fm_error(ox->ctx, FM_ERR_SHAPE, "%s: graph input '%s': dim %d is "
                                    "written as -1 (dynamic): bind it with fm_load_opts.bindings "
                                    "%s=DIMS (all %zu dims)", ox->src, name, d, name, sp->n_dim);
                if (v <= 0)
                    return fm_error(ox->ctx, FM_ERR_SHAPE, "%s: graph input '%s': dim %d ('%s') is "
                                    "symbolic: bind it with fm_load_opts.bindings %s=DIMS (all %zu "
                                    "dims)",
                                    ox->src, name, d, sym && *sym ? sym : "?", name, sp->n_dim);
                if (sym && *sym) {
                    enum fm_status st = sym_bind(ox, sym, v);
                    if (st)
                        return st;
                }
            }
            s.dims[d] = v;
        }
    }
    enum fm_status st = fm_graph_add_tensor(ox->g, name, FM_ROLE_INPUT, dtype, &s, &e->tid);
    if (st || !vb)
        return st;
    return bind_value(ox, name, dtype, &s, vb, e->tid);
}

/* ---- ordering ---- */

/* Kahn's algorithm over the nodes, ready nodes in file order; a cycle names one of its nodes. */
static enum fm_status order_nodes(struct ox *ox, int32_t *order)
{
    const Onnx__GraphProto *gp = ox->gp;
    size_t nn = gp->n_node;
    enum fm_status st = FM_OK;
    uint32_t *indeg = fm_alloc(ox->ctx, (nn + 1) * sizeof(*indeg));
    int32_t *queue = fm_alloc(ox->ctx, (nn + 1) * sizeof(*queue));
    if (!indeg || !queue) {
        st = fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory ordering the nodes");
        goto out;
    }
    for (size_t i = 0; i < nn; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (size_t k = 0; k < n->n_input; k++) {
            struct ox_name *e = ox_name_find(ox, n->input[k]);
            if (e && e->kind == OX_KIND_NODE_OUT)
                indeg[i]++;
        }
        indeg[i] += ox_control_outer_deps(ox, n);   /* names its subgraphs read */
    }
    size_t head = 0, tail = 0, done = 0;
    for (size_t i = 0; i < nn; i++) {
        if (!indeg[i])
            queue[tail++] = (int32_t)i;
    }
    while (head < tail) {
        int32_t id = queue[head++];
        order[done++] = id;
        const Onnx__NodeProto *n = gp->node[id];
        for (size_t o = 0; o < n->n_output; o++) {
            struct ox_name *e = ox_name_find(ox, n->output[o]);
            if (!e || e->producer != id || e->kind != OX_KIND_NODE_OUT)
                continue;
            for (uint32_t u = 0; u < e->uses; u++) {
                int32_t c = ox->uses[e->first_use + u].node;
                if (--indeg[c] == 0)
                    queue[tail++] = c;
            }
        }
    }
    if (done != nn) {
        /* walk back through unordered producers: after nn steps we are on the cycle */
        int32_t cur = -1;
        for (size_t i = 0; i < nn && cur < 0; i++) {
            if (indeg[i])
                cur = (int32_t)i;
        }
        for (size_t step = 0; step < nn; step++) {
            const Onnx__NodeProto *n = gp->node[cur];
            int32_t next = -1;
            for (size_t k = 0; k < n->n_input && next < 0; k++) {
                struct ox_name *e = ox_name_find(ox, n->input[k]);
                if (e && e->kind == OX_KIND_NODE_OUT && indeg[e->producer])
                    next = e->producer;
            }
            if (next < 0)
                break;
            cur = next;
        }
        st = fm_error(ox->ctx, FM_ERR_GRAPH, "%s: the graph has a cycle through node '%s' (%s)",
                      ox->src, ox_node_name(gp->node[cur]), ox_str(gp->node[cur]->op_type));
    }
out:
    fm_dealloc(ox->ctx, indeg);
    fm_dealloc(ox->ctx, queue);
    return st;
}

/* ---- the whole graph ---- */

static enum fm_status index_names(struct ox *ox)
{
    const Onnx__GraphProto *gp = ox->gp;
    size_t total = gp->n_initializer + gp->n_input + 1;
    for (size_t i = 0; i < gp->n_node; i++) {
        if (!gp->node[i]->op_type || !*gp->node[i]->op_type)
            return fm_error(ox->ctx, FM_ERR_PARSE, "%s: node %zu ('%s') has no op_type", ox->src,
                            i, ox_node_name(gp->node[i]));
        total += gp->node[i]->n_output;
    }
    size_t cap = 64;
    while (cap < total * 2) {
        if (cap > SIZE_MAX / 4)
            return fm_error(ox->ctx, FM_ERR_OVERFLOW, "%s: too many names", ox->src);
        cap *= 2;
    }
    ox->names = fm_alloc(ox->ctx, cap * sizeof(*ox->names));
    if (!ox->names)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory indexing %zu names", total);
    ox->names_cap = cap;
    struct ox_name *e;
    enum fm_status st;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        if (!t->name || !*t->name)
            return fm_error(ox->ctx, FM_ERR_PARSE, "%s: initializer %zu has no name", ox->src, i);
        if (ox_name_find(ox, t->name))
            return fm_error(ox->ctx, FM_ERR_PARSE, "%s: initializer '%s' is defined twice",
                            ox->src, t->name);
        st = ox_name_add(ox, t->name, OX_KIND_INIT, -1, &e);
        if (st)
            return st;
        e->init = t;
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        if (!gp->input[i]->name || !*gp->input[i]->name)
            return fm_error(ox->ctx, FM_ERR_PARSE, "%s: graph input %zu has no name", ox->src, i);
        /* an input may share its name with an initializer (IR < 4), not with another input:
         * two declarations with different shapes would leave the count to chance */
        const struct ox_name *prev = ox_name_find(ox, gp->input[i]->name);
        if (prev && prev->kind == OX_KIND_INPUT)
            return fm_error(ox->ctx, FM_ERR_PARSE, "%s: graph input '%s' is declared twice",
                            ox->src, gp->input[i]->name);
        st = ox_name_add(ox, gp->input[i]->name, OX_KIND_INPUT, -1, &e);
        if (st)
            return st;
    }
    size_t total_uses = 0;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (size_t o = 0; o < n->n_output; o++) {
            if (!n->output[o] || !*n->output[o])
                continue;
            st = ox_name_add(ox, n->output[o], OX_KIND_NODE_OUT, (int32_t)i, &e);
            if (st)
                return st;
        }
        total_uses += n->n_input;
    }
    /* uses, grouped by name */
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (size_t k = 0; k < n->n_input; k++) {
            if (!n->input[k] || !*n->input[k])
                continue;
            e = ox_name_find(ox, n->input[k]);
            if (!e)
                return ox_node_error(ox, n, FM_ERR_GRAPH, "input %zu ('%s') is produced by no "
                                     "node and is no graph input or initializer", k,
                                     n->input[k]);
            e->uses++;
        }
    }
    ox->uses = fm_alloc(ox->ctx, (total_uses + 1) * sizeof(*ox->uses));
    if (!ox->uses)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
    uint32_t off = 0;
    for (size_t h = 0; h < ox->names_cap; h++) {
        if (!ox->names[h].name)
            continue;
        ox->names[h].first_use = off;
        off += ox->names[h].uses;
        ox->names[h].uses = 0;
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (size_t k = 0; k < n->n_input; k++) {
            if (!n->input[k] || !*n->input[k])
                continue;
            e = ox_name_find(ox, n->input[k]);
            ox->uses[e->first_use + e->uses++] = (struct ox_use){(int32_t)i, (int32_t)k};
        }
    }
    for (size_t i = 0; i < gp->n_value_info + gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = i < gp->n_value_info ? gp->value_info[i]
                                                              : gp->output[i - gp->n_value_info];
        e = ox_name_find(ox, vi->name);
        if (e)
            e->info = vi;
    }
    return ox_control_index(ox);
}

/* A Constant node's output is a tensor like an initializer (its role from its readers). */
static enum fm_status build_constant(struct ox *ox, const Onnx__NodeProto *node)
{
    if (node->n_output < 1 || node->n_attribute != 1)
        return ox_node_error(ox, node, FM_ERR_PARSE, "a Constant needs one output and exactly "
                             "one value attribute");
    struct ox_name *e = ox_name_find(ox, node->output[0]);
    if (!e)
        return FM_OK;
    const Onnx__AttributeProto *a = node->attribute[0];
    const char *an = ox_str(a->name);
    Onnx__TensorProto scratch = ONNX__TENSOR_PROTO__INIT;
    int64_t one_dim = 0;
    const Onnx__TensorProto *t = NULL;
    if (!strcmp(an, "value")) {
        t = a->t;
    } else if (!strcmp(an, "value_float") || !strcmp(an, "value_int") ||
               !strcmp(an, "value_floats") || !strcmp(an, "value_ints")) {
        bool is_int = strstr(an, "int") != NULL, list = an[strlen(an) - 1] == 's';
        int want = is_int ? (list ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS
                                  : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)
                          : (list ? ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS
                                  : ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
        if (a->has_type && (int)a->type != want)
            return ox_node_error(ox, node, FM_ERR_PARSE, "attribute '%s' has the wrong type", an);
        scratch.has_data_type = true;
        scratch.data_type = is_int ? ONNX__TENSOR_PROTO__DATA_TYPE__INT64
                                   : ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        if (list) {
            one_dim = (int64_t)(is_int ? a->n_ints : a->n_floats);
            scratch.n_dims = 1;
            scratch.dims = &one_dim;
        }
        if (is_int) {
            scratch.n_int64_data = list ? a->n_ints : 1;
            scratch.int64_data = list ? a->ints : (int64_t *)&a->i;
        } else {
            scratch.n_float_data = list ? a->n_floats : 1;
            scratch.float_data = list ? a->floats : (float *)&a->f;
        }
        t = &scratch;
    }
    if (!t)
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "a Constant of attribute '%s' (only "
                             "numeric tensors are read)", an);
    bool empty;
    struct fm_shape shape;
    enum fm_dtype dtype;
    enum fm_status st = ox_check_dims(ox, "constant", e->name, t->dims, t->n_dims, true,
                                      &empty, &shape);
    if (st)
        return st;
    if (!t->has_data_type || !ox_dtype(t->data_type, &dtype))
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "its tensor has data_type %d",
                             (int)t->data_type);
    if (empty) {
        e->empty = true;
        e->empty_shape = shape;
        e->empty_dtype = dtype;
        return FM_OK;
    }
    /* PyTorch writes every parameter as an initializer named by its state-dict key; its
     * Constant nodes are traced values (T5's zero position bias of cross-attention), never
     * weights, whatever reads them */
    enum fm_role role = ox->torch ? FM_ROLE_CONST : ox_value_role(ox, e, t, dtype);
    struct ox_val v;
    st = ox_tensor_read(ox, t, e->name, role == FM_ROLE_CONST, &v);
    if (st)
        return st;
    return ox_const_tensor(ox, node, e->name, role, dtype, &shape, &v, &e->tid);
}

/* A file exported at a fixed batch F, counted with --batch N: a shape constant of the file
 * (an initializer or a Constant node, not a value computed from shapes) read as Reshape's
 * target or Expand's shape, whose leading value is F while its data's leading dim is now N,
 * carries the batch: it is read with N instead (torch folds x.reshape(x.shape[0], ...) into
 * [F, ...] when exporting without dynamic axes). Anything less clear is left as it is. */
static enum fm_status rebind_batch(struct ox *ox, const Onnx__NodeProto *node, fm_tid *in,
                                   int n_in)
{
    const char *op = ox_str(node->op_type);
    if (!ox->file_batch || n_in < 2 || in[0] == FM_NONE || in[1] == FM_NONE ||
        (strcmp(op, "Reshape") && strcmp(op, "Expand")))
        return FM_OK;
    const struct ox_name *e = ox_name_find(ox, node->input[1]);
    bool file_const = e && (e->kind == OX_KIND_INIT ||
                            (e->kind == OX_KIND_NODE_OUT && e->producer >= 0 &&
                             !strcmp(ox_str(ox->gp->node[e->producer]->op_type), "Constant")));
    const struct ox_val *v = ox_val_of(ox, in[1]);
    const struct fm_tensor *x = &ox->g->tensors[in[0]];
    if (!file_const || !v || v->is_float || v->n < 1 || v->n > FM_MAX_DIMS ||
        v->i[0] != ox->file_batch || x->shape.rank < 1 || x->shape.dims[0] != ox->opts->zoo.batch)
        return FM_OK;
    int64_t vals[FM_MAX_DIMS];
    memcpy(vals, v->i, (size_t)v->n * sizeof(*vals));
    vals[0] = ox->opts->zoo.batch;
    struct fm_shape s = {1, {(int64_t)v->n}};
    struct ox_val nv = {true, false, v->n, vals, NULL};
    enum fm_status st = ox_const_tensor(ox, node, NULL, FM_ROLE_CONST, FM_DTYPE_INT64, &s, &nv,
                                        &in[1]);
    if (st)
        return st;
    size_t len = strlen(ox->rebound);
    if (len + 8 < sizeof(ox->rebound))
        snprintf(ox->rebound + len, sizeof(ox->rebound) - len, "%s'%s'", len ? ", " : "",
                 ox_node_name(node));
    ox->n_rebound++;
    return FM_OK;
}

/* After --batch replaced a fixed batch, a shape that no longer fits is most likely a constant
 * that carries the old batch where rebind_batch cannot tell: say so, and how to re-export. */
static enum fm_status batch_hint(struct ox *ox, enum fm_status st)
{
    if (st != FM_ERR_SHAPE || !ox->file_batch)
        return st;
    char msg[768];
    snprintf(msg, sizeof(msg), "%s", fm_ctx_error(ox->ctx));
    return fm_error(ox->ctx, st, "%s. The file was exported at batch %lld and fm_zoo_opts.batch "
                    "%lld replaced it; a shape constant of the file that carries the batch where "
                    "flopmeter cannot tell (the batch merged into another dim) breaks then: "
                    "re-export with a dynamic batch axis (torch.onnx.export(..., "
                    "dynamic_axes={'input': {0: 'batch'}})) or count at the file's batch", msg,
                    (long long)ox->file_batch, (long long)ox->opts->zoo.batch);
}

/* The opset of an unknown op's domain, from its display name ("com.example:Op" or "Op"). */
static int64_t unknown_opset(const struct ox *ox, const struct fm_node *p)
{
    const char *colon = p ? strrchr(p->op_name, ':') : NULL;
    if (!colon)
        return ox->opset;
    char dom[128];
    snprintf(dom, sizeof(dom), "%.*s", (int)(colon - p->op_name), p->op_name);
    return ox_domain_opset(ox, dom);
}

/* One node: its inputs must have shapes; then fold it, make it a constant, or map it. */
static enum fm_status build_node(struct ox *ox, const Onnx__NodeProto *node)
{
    if (node->n_input > FM_MAX_IO)
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "has %zu inputs (at most %d)",
                             node->n_input, FM_MAX_IO);
    bool msft = ox_msft_domain(node->domain);   /* ONNX Runtime's ops: mapped, never folded */
    if (!ox_default_domain(node->domain) && !msft)
        return ox_emit_unknown(ox, node, "an op of another domain");
    if (!msft && !strcmp(ox_str(node->op_type), "Constant"))
        return build_constant(ox, node);
    if (ox_control_op(node))
        return ox_control_build(ox, node, build_node);
    bool handled = false;
    enum fm_status sst = ox_map_sequence(ox, node, &handled);
    if (sst || handled)
        return sst;
    fm_tid in[FM_MAX_IO];
    int n_in = (int)node->n_input;
    for (int i = 0; i < n_in; i++) {
        enum fm_status st = ox_input(ox, node, i, &in[i]);
        if (st)
            return st;
        if (in[i] != FM_NONE && !ox->g->tensors[in[i]].shape_known) {
            const struct fm_tensor *t = &ox->g->tensors[in[i]];
            const struct fm_node *p = fm_graph_node(ox->g, t->producer);
            return ox_node_error(ox, node, FM_ERR_UNSUPPORTED,
                                 "needs the shape of '%s', the output of node '%s' (%s, opset "
                                 "%lld), an op flopmeter does not know and whose output shape "
                                 "the file does not give (value_info): the file is refused",
                                 t->name, p ? p->name : "?", p ? p->op_name : "?",
                                 (long long)unknown_opset(ox, p));
        }
    }
    enum fm_status st = rebind_batch(ox, node, in, n_in);
    if (st)
        return st;
    bool done = false;
    st = msft ? FM_OK : ox_fold(ox, node, in, n_in, &done);
    if (st || done)
        return batch_hint(ox, st);
    return batch_hint(ox, ox_map_node(ox, node, in, n_in));
}

/* "a, b, c": the graph inputs that are no initializers, for messages. */
static void input_names(struct ox *ox, char *names, size_t size)
{
    size_t len = 0;
    for (size_t i = 0; i < ox->gp->n_input && len + 64 < size; i++) {
        struct ox_name *in = ox_name_find(ox, ox->gp->input[i]->name);
        if (in && in->kind == OX_KIND_INPUT)
            len += (size_t)snprintf(names + len, size - len, "%s%s", len ? ", " : "", in->name);
    }
}

static enum fm_status build(struct ox *ox)
{
    const Onnx__GraphProto *gp = ox->gp;
    enum fm_status st = index_names(ox);
    if (st)
        return st;
    /* bindings must name inputs */
    for (size_t b = 0; b < ox->opts->n_bindings; b++) {
        struct ox_name *e = ox_name_find(ox, ox->opts->bindings[b].name);
        if (!e || e->kind != OX_KIND_INPUT) {
            char names[256] = "";
            input_names(ox, names, sizeof(names));
            return fm_error(ox->ctx, FM_ERR_INVALID, "fm_load_opts.bindings %s=...: %s has no "
                            "graph input named '%s' (its inputs: %s)",
                            ox_str(ox->opts->bindings[b].name),
                            ox->src, ox_str(ox->opts->bindings[b].name), names);
        }
    }
    for (size_t b = 0; b < ox->opts->n_values; b++) {
        struct ox_name *e = ox_name_find(ox, ox->opts->values[b].name);
        if (!e || e->kind != OX_KIND_INPUT) {
            char names[256] = "";
            input_names(ox, names, sizeof(names));
            return fm_error(ox->ctx, FM_ERR_INVALID, "fm_load_opts.values %s=...: %s has no graph "
                            "input named '%s' (its inputs: %s)", ox_str(ox->opts->values[b].name),
                            ox->src, ox_str(ox->opts->values[b].name), names);
        }
        const struct fm_value_binding *vb = &ox->opts->values[b];
        if ((!vb->ivalues) == (!vb->fvalues))   /* n = 0 with a pointer: an empty list */
            return fm_error(ox->ctx, FM_ERR_INVALID, "fm_load_opts.values %s: no values given",
                                                     e->name);
    }
    st = bind_symbols(ox);
    if (st)
        return st;
    for (size_t i = 0; i < gp->n_input; i++) {
        struct ox_name *e = ox_name_find(ox, gp->input[i]->name);
        if (e->kind != OX_KIND_INPUT || e->tid != FM_NONE)
            continue;   /* an initializer listed as input (IR < 4), or listed twice */
        st = add_input(ox, gp->input[i], e);
        if (st)
            return st;
    }
    int32_t *order = fm_alloc(ox->ctx, (gp->n_node + 1) * sizeof(*order));
    if (!order)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
    st = order_nodes(ox, order);
    for (size_t i = 0; !st && i < gp->n_node; i++)
        st = build_node(ox, gp->node[order[i]]);
    fm_dealloc(ox->ctx, order);
    if (st)
        return st;
    if (ox->n_rebound)
        fm_log(ox->ctx, "%s: fm_zoo_opts.batch %lld: the file was exported at batch %lld; the "
               "batch in the shape constants of %u node%s rebound to %lld: %s", ox->src,
               (long long)ox->opts->zoo.batch, (long long)ox->file_batch, ox->n_rebound,
               ox->n_rebound == 1 ? " is" : "s is", (long long)ox->opts->zoo.batch, ox->rebound);
    for (size_t i = 0; i < gp->n_output; i++) {
        struct ox_name *e = ox_name_find(ox, gp->output[i]->name);
        if (e && e->tid != FM_NONE && ox->g->tensors[e->tid].role == FM_ROLE_ACTIVATION) {
            st = fm_graph_mark_output(ox->g, e->tid);
            /* a Loop, Scan or If output is a renamed inner tensor: found by its graph name */
            const char *name = ox_str(gp->output[i]->name);
            if (!st && strcmp(ox->g->tensors[e->tid].name, name) != 0 &&
                fm_graph_find_tensor(ox->g, name) == FM_NONE)
                st = fm_graph_add_alias(ox->g, name, e->tid);
            if (st)
                return st;
        }
    }
    if (fm_graph_node_count(ox->g) == 0)
        return fm_error(ox->ctx, FM_ERR_GRAPH, "%s: the graph computes nothing (no nodes left "
                        "after evaluating constants)", ox->src);
    st = ox_module_names(ox);
    if (st)
        return st;
    ox_folded_params(ox);
    return fm_graph_finalize(ox->g);
}

static void graph_name(const char *src, char *buf, size_t size)
{
    const char *base = strrchr(src, '/');
    base = base ? base + 1 : src;
    snprintf(buf, size, "%s", base);
    size_t n = strlen(buf);
    if (n > 5 && strcmp(buf + n - 5, ".onnx") == 0)
        buf[n - 5] = '\0';
}
static enum fm_status load(struct fm_ctx *ctx, const void *data, size_t size, const char *src,
                           const struct fm_load_opts *opts, struct fm_graph **out)
{
    *out = NULL;
    struct fm_load_opts defaults;
    if (!opts) {
        fm_load_opts_init(&defaults);
        opts = &defaults;
    }
    if (opts->zoo.batch <= 0)
        return fm_error(ctx, FM_ERR_INVALID, "batch size must be positive, got %lld",
                        (long long)opts->zoo.batch);
    struct ox ox;
    memset(&ox, 0, sizeof(ox));
    ox.ctx = ctx;
    ox.opts = opts;
    ox.src = src;
    fm_arena_init(&ox.arena, ctx);
    struct fm_graph *g = NULL;
    struct ox_wire w;
    enum fm_status st = ox_wire_unpack(ctx, data, size, src, &w);
    if (st)
        goto out;
    char name[256];
    graph_name(src, name, sizeof(name));
    st = fm_graph_new(ctx, name, &g);
    if (st)
        goto out;
    g->allow_empty = true;   /* ONNX's empty tensors: 0 elements, no work */
    ox.g = g;
    ox.gp = w.model->graph;
    ox.opset = w.opset;
    ox.model = w.model;
    ox.torch = w.model->producer_name && !strcmp(w.model->producer_name, "pytorch");
    st = build(&ox);
out:
    fm_dealloc(ctx, ox.names);
    fm_dealloc(ctx, ox.uses);
    fm_dealloc(ctx, ox.vals);
    fm_dealloc(ctx, ox.moduled);
    fm_arena_release(&ox.arena);
    ox_wire_release(&w);   /* the model and every payload copy go at once */
    if (st) {
        fm_graph_free(g);
        return st;
    }
    *out = g;
    return FM_OK;
}

enum fm_status fm_onnx_load_buffer(struct fm_ctx *ctx, const void *data, size_t size,
                                   const char *name, const struct fm_load_opts *opts,
                                   struct fm_graph **out)
{
    return load(ctx, data, size, name ? name : "buffer", opts, out);
}

enum fm_status fm_onnx_load_file(struct fm_ctx *ctx, const char *path,
                                 const struct fm_load_opts *opts, struct fm_graph **out)
{
    *out = NULL;
    void *map;
    size_t size;
    enum fm_status st = ox_wire_map(ctx, path, &map, &size);
    if (st)
        return st;
    st = load(ctx, map, size, path, opts, out);
    ox_wire_unmap(map, size);
    return st;
}

bool fm_onnx_op_known(const char *domain, const char *op_type)
{
    if (!op_type)
        return false;
    /* an op of ONNX Runtime's domain: its row in the table is "com.microsoft:Name" */
    if (ox_msft_domain(domain)) {
        char listed[160];
        if (snprintf(listed, sizeof(listed), "com.microsoft:%s", op_type) >= (int)sizeof(listed))
            return false;
        return ox_map_known(listed);
    }
    if (!ox_default_domain(domain))
        return false;
    /* evaluated at load time whatever their inputs (a shape is always known), and control flow
     * (onnx_control.c), which becomes the nodes it runs */
    static const char *const built_in[] = {"Constant", "Shape", "Size", "If", "Loop", "Scan"};
    for (size_t i = 0; i < sizeof(built_in) / sizeof(built_in[0]); i++) {
        if (!strcmp(op_type, built_in[i]))
            return true;
    }
    return ox_map_known(op_type);
}
