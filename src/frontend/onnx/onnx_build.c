/* Graph-building services every later ONNX file uses: node errors, attributes, the name table,
 * values known at load time, dtypes and small payloads, initializer roles, and making tensors
 * and ops (ox_input, ox_const_tensor, ox_emit; layers named by module path, and initializer
 * roles told by PyTorch 2's metadata where the file has it, onnx_torch.c). It never decides
 * what a node computes: folding and mapping are the files above it. */
#include "onnx_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors and names ---- */

const char *ox_str(const char *s)
{
    return s ? s : "";
}

const char *ox_node_name(const Onnx__NodeProto *node)
{
    if (node->name && *node->name)
        return node->name;
    if (node->n_output && node->output[0] && *node->output[0])
        return node->output[0];
    return "(unnamed)";
}

enum fm_status ox_node_error(struct ox *ox, const Onnx__NodeProto *node, enum fm_status st,
                             const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return fm_error(ox->ctx, st, "%s: node '%s' (%s): %s", ox->src, ox_node_name(node),
                    ox_str(node->op_type), msg);
}

/* ---- attributes ---- */

const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *node, const char *name)
{
    for (size_t i = 0; i < node->n_attribute; i++) {
        const Onnx__AttributeProto *a = node->attribute[i];
        if (a->name && strcmp(a->name, name) == 0)
            return a;
    }
    return NULL;
}

static const char *type_name(int t)
{
    static const char *const names[] = {"UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR",
                                        "GRAPH", "FLOATS", "INTS", "STRINGS", "TENSORS",
                                        "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS",
                                        "TYPE_PROTO", "TYPE_PROTOS"};
    return t >= 0 && t < (int)(sizeof(names) / sizeof(names[0])) ? names[t] : "unknown";
}

/* An attribute's type is checked against what the op needs; files from before IR 2 carry no
 * type, and then the field that is set decides. */
static enum fm_status attr_check(struct ox *ox, const Onnx__NodeProto *node,
                                 const Onnx__AttributeProto *a, int want, bool present)
{
    int t = a->has_type ? (int)a->type : present ? want : 0;
    if (t != want)
        return ox_node_error(ox, node, FM_ERR_PARSE, "attribute '%s' is %s, expected %s",
                             a->name, type_name(t), type_name(want));
    return FM_OK;
}

enum fm_status ox_attr_int(struct ox *ox, const Onnx__NodeProto *node, const char *name,
                           int64_t def, int64_t *out)
{
    const Onnx__AttributeProto *a = ox_attr(node, name);
    if (!a) {
        *out = def;
        return FM_OK;
    }
    enum fm_status st = attr_check(ox, node, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT,
                                   a->has_i);
    if (st)
        return st;
    *out = a->i;
    return FM_OK;
}

enum fm_status ox_attr_float(struct ox *ox, const Onnx__NodeProto *node, const char *name,
                             double def, double *out)
{
    const Onnx__AttributeProto *a = ox_attr(node, name);
    if (!a) {
        *out = def;
        return FM_OK;
    }
    enum fm_status st = attr_check(ox, node, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT,
                                   a->has_f);
    if (st)
        return st;
    *out = a->f;
    return FM_OK;
}

enum fm_status ox_attr_ints(struct ox *ox, const Onnx__NodeProto *node, const char *name,
                            int64_t *out, int max, int *n)
{
    *n = 0;
    const Onnx__AttributeProto *a = name && *name ? ox_attr(node, name) : NULL;
    if (!a)
        return FM_OK;
    enum fm_status st = attr_check(ox, node, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS,
                                   a->n_ints > 0);
    if (st)
        return st;
    if (a->n_ints > (size_t)max)
        return ox_node_error(ox, node, FM_ERR_PARSE, "attribute '%s' has %zu values; at most %d",
                             name, a->n_ints, max);
    for (size_t i = 0; i < a->n_ints; i++)
        out[i] = a->ints[i];
    *n = (int)a->n_ints;
    return FM_OK;
}

enum fm_status ox_attr_string(struct ox *ox, const Onnx__NodeProto *node, const char *name,
                              const char *def, char *buf, size_t size)
{
    const Onnx__AttributeProto *a = ox_attr(node, name);
    if (!a) {
        snprintf(buf, size, "%s", def);
        return FM_OK;
    }
    enum fm_status st = attr_check(ox, node, a, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING,
                                   a->has_s);
    if (st)
        return st;
    if (a->s.len >= size)
        return ox_node_error(ox, node, FM_ERR_PARSE, "attribute '%s' is too long", name);
    if (a->s.len)   /* an empty string has no data pointer: memcpy(buf, NULL, 0) is UB */
        memcpy(buf, a->s.data, a->s.len);
    buf[a->s.len] = '\0';
    return FM_OK;
}

/* ---- the name table ---- */

static uint64_t hash_str(const char *s)
{
    return fm_hash_name(0, s);
}

struct ox_name *ox_name_find(struct ox *ox, const char *name)
{
    if (!name || !*name || !ox->names_cap)
        return NULL;
    size_t h = (size_t)hash_str(name) & (ox->names_cap - 1);
    while (ox->names[h].name) {
        if (strcmp(ox->names[h].name, name) == 0)
            return &ox->names[h];
        h = (h + 1) & (ox->names_cap - 1);
    }
    return NULL;
}

/* Adds a name; a second definition of the same name is an error naming both. */
enum fm_status ox_name_add(struct ox *ox, const char *name, enum ox_kind kind, int32_t producer,
                           struct ox_name **out)
{
    size_t h = (size_t)hash_str(name) & (ox->names_cap - 1);
    while (ox->names[h].name) {
        struct ox_name *e = &ox->names[h];
        if (strcmp(e->name, name) == 0) {
            if (kind == OX_KIND_NODE_OUT) {
                const Onnx__NodeProto *n = ox->gp->node[producer];
                if (e->kind == OX_KIND_NODE_OUT)
                    return ox_node_error(ox, n, FM_ERR_PARSE,
                                         "output '%s' is also produced by node '%s'", name,
                                         ox_node_name(ox->gp->node[e->producer]));
                return ox_node_error(ox, n, FM_ERR_PARSE,
                                     "output '%s' has the name of a graph %s", name,
                                     e->kind == OX_KIND_INIT ? "initializer" : "input");
            }
            *out = e;   /* an input that is also an initializer (IR < 4): the initializer */
            return FM_OK;
        }
        h = (h + 1) & (ox->names_cap - 1);
    }
    struct ox_name *e = &ox->names[h];
    memset(e, 0, sizeof(*e));
    e->name = name;
    e->kind = kind;
    e->tid = FM_NONE;
    e->producer = producer;
    *out = e;
    return FM_OK;
}

/* ---- values known at load time ---- */

enum fm_status ox_set_val(struct ox *ox, fm_tid t, const struct ox_val *v)
{
    size_t need = (size_t)t + 1;
    if (need > ox->vals_cap) {
        enum fm_status st = fm_grow(ox->ctx, (void **)&ox->vals, &ox->vals_cap,
                                    need < 64 ? 64 : need, sizeof(*ox->vals));
        if (st)
            return st;
    }
    struct ox_val *d = &ox->vals[t];
    *d = *v;
    d->known = true;
    size_t bytes = (size_t)(v->n ? v->n : 1) * 8;
    void *p = fm_arena_alloc(&ox->arena, bytes);
    if (!p)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory storing constants");
    if (v->is_float) {
        if (v->n)
            memcpy(p, v->f, (size_t)v->n * sizeof(double));
        d->f = p;
        d->i = NULL;
        return fm_graph_set_fvalue(ox->g, t, d->f, d->n);
    }
    if (v->n)
        memcpy(p, v->i, (size_t)v->n * sizeof(int64_t));
    d->i = p;
    d->f = NULL;
    return fm_graph_set_ivalue(ox->g, t, d->i, d->n);
}

const struct ox_val *ox_val_of(const struct ox *ox, fm_tid t)
{
    if (t == FM_NONE || (size_t)t >= ox->vals_cap || !ox->vals[t].known)
        return NULL;
    return &ox->vals[t];
}

/* ---- dtypes and payloads ---- */

bool ox_dtype(int32_t t, enum fm_dtype *out)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *out = FM_DTYPE_FP32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: *out = FM_DTYPE_UINT8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: *out = FM_DTYPE_INT8; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: /* same size: counts only need bytes */
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: *out = FM_DTYPE_INT16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *out = FM_DTYPE_INT32; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *out = FM_DTYPE_INT64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: *out = FM_DTYPE_BOOL; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: *out = FM_DTYPE_FP16; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: *out = FM_DTYPE_FP64; return true;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: *out = FM_DTYPE_BF16; return true;
    case 17: case 18: case 19: case 20:   /* float8 variants (IR 9) */
        *out = FM_DTYPE_FP8;
        return true;
    default:
        return false;
    }
}

/* Bytes per element as stored in raw_data (0 for types flopmeter does not read). */
static size_t raw_size(int32_t t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: case 17: case 18: case 19: case 20:
        return 1;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: case ONNX__TENSOR_PROTO__DATA_TYPE__INT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
        return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        return 8;
    default:
        return 0;
    }
}

/* IEEE half and bfloat16 bits to double. */
static double half_value(uint32_t h, bool bf16)
{
    if (bf16) {
        uint32_t bits = h << 16;
        float f;
        memcpy(&f, &bits, sizeof(f));
        return f;
    }
    int exp = (int)((h >> 10) & 0x1f), man = (int)(h & 0x3ff);
    double v = exp == 0 ? ldexp(man, -24) : exp == 31 ? (man ? NAN : INFINITY)
                                                      : ldexp(man + 1024, exp - 25);
    return (h & 0x8000) ? -v : v;
}

static uint64_t le_bytes(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static bool is_float_type(int32_t t)
{
    return t == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ||
           t == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
}

/* One element k of a typed field or raw_data, as int64 or double. */
static void element(const Onnx__TensorProto *t, uint64_t k, int64_t *iv, double *fv)
{
    int32_t dt = t->data_type;
    if (t->has_raw_data && t->raw_data.len) {
        size_t es = raw_size(dt);
        uint64_t bits = le_bytes(t->raw_data.data + k * es, es);
        switch (dt) {
        case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: {
            uint32_t b = (uint32_t)bits;
            float f;
            memcpy(&f, &b, sizeof(f));
            *fv = f;
            return;
        }
        case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
            memcpy(fv, &bits, sizeof(*fv));
            return;
        case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
        case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
            *fv = half_value((uint32_t)bits, dt == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16);
            return;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: *iv = (int8_t)bits; return;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: *iv = (int16_t)bits; return;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: *iv = (int32_t)bits; return;
        default: *iv = (int64_t)bits; return;
        }
    }
    switch (dt) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: *fv = t->float_data[k]; return;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: *fv = t->double_data[k]; return;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        *fv = half_value((uint32_t)t->int32_data[k] & 0xffff,
                         dt == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16);
        return;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: *iv = t->int64_data[k]; return;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: *iv = (int64_t)t->uint64_data[k]; return;
    default: *iv = t->int32_data[k]; return;
    }
}

/* How many elements the typed field that holds this data type has. */
static size_t typed_count(const Onnx__TensorProto *t)
{
    switch (t->data_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return t->n_float_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return t->n_double_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return t->n_int64_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return t->n_uint64_data;
    default: return t->n_int32_data;
    }
}

enum fm_status ox_tensor_read(struct ox *ox, const Onnx__TensorProto *t, const char *what,
                              bool values, struct ox_val *val)
{
    memset(val, 0, sizeof(*val));
    uint64_t n = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || !fm_mul_ok(n, (uint64_t)t->dims[i], &n))
            return fm_error(ox->ctx, FM_ERR_PARSE, "%s: tensor '%s': bad dims", ox->src, what);
    }
    size_t es = raw_size(t->data_type);
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return FM_OK;   /* in a separate file, which counting never needs */
    if (t->has_raw_data && t->raw_data.len) {
        uint64_t want;
        if (!es || !fm_mul_ok(n, es, &want) || want != t->raw_data.len)
            return fm_error(ox->ctx, FM_ERR_PARSE, "%s: tensor '%s': raw_data has %zu bytes but "
                            "its dims and data_type say %llu", ox->src, what, t->raw_data.len,
                            (unsigned long long)(es ? n * es : 0));
    } else {
        size_t have = typed_count(t);
        if (have == 0)
            return FM_OK;   /* no payload (stripped): dims are all counting needs */
        if (have != n)
            return fm_error(ox->ctx, FM_ERR_PARSE, "%s: tensor '%s': %zu values stored, its dims "
                            "say %llu", ox->src, what, have, (unsigned long long)n);
    }
    if (!values || n > OX_FOLD_MAX || !es)
        return FM_OK;
    val->is_float = is_float_type(t->data_type);
    val->n = n;
    void *p = fm_arena_alloc(&ox->arena, (size_t)(n ? n : 1) * 8);
    if (!p)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory reading '%s'", what);
    if (val->is_float)
        val->f = p;
    else
        val->i = p;
    for (uint64_t k = 0; k < n; k++) {
        int64_t iv = 0;
        double fv = 0;
        element(t, k, &iv, &fv);
        if (val->is_float)
            val->f[k] = fv;
        else
            val->i[k] = iv;
    }
    val->known = true;
    return FM_OK;
}

enum fm_status ox_need_ints(struct ox *ox, const Onnx__NodeProto *node, fm_tid t,
                            const char *what, const struct ox_val **out)
{
    if (t == FM_NONE)
        return ox_node_error(ox, node, FM_ERR_PARSE, "its %s input is missing", what);
    const struct ox_val *v = ox_val_of(ox, t);
    if (!v || v->is_float) {
        const struct fm_tensor *tt = fm_graph_tensor(ox->g, t);
        if (!v && tt->role == FM_ROLE_INPUT)
            return ox_node_error(ox, node, FM_ERR_UNSUPPORTED,
                                 "its %s ('%s') is a graph input, not known before running the "
                                 "network, and the output shape depends on it: give its values "
                                 "with fm_load_opts.values %s=V[,V...]", what, tt->name, tt->name);
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED,
                             "its %s ('%s') %s, but the output shape depends on it", what,
                             tt->name,
                             v ? "is a float tensor, not integers"
                               : "is not known before running the network (computed from "
                                 "data, or a constant stored outside the file)");
    }
    *out = v;
    return FM_OK;
}

/* ---- roles of initializers and constants, from the slots that read them ---- */

/* What an initializer is, from each input slot that reads it, per ONNX op type: the "slots"
 * column of the op list (onnx_ops.h says what each letter means), then ONNX ops the list does
 * not hold as its own whose operands must not be taken for weights. An op type without a row
 * reads every slot by size. The mappers' table (onnx_map.c) comes from the same list; this one
 * lives here because roles are decided before any node is mapped. */
struct op_slots {
    const char *name;   /* ONNX op type */
    const char *slots;
};

#define OX_SLOTS_ROW(ID, onnx, map, slots) {onnx, slots},
static const struct op_slots slot_table[] = {
    OX_OP_LIST(OX_SLOTS_ROW)
    {"Upsample", "xC*"},          /* Resize's older name: scales (and roi) */
    {"Scatter", "xCx"},           /* ScatterElements's older name: data, indices, updates */
    {"CastLike", "TC"},           /* Cast to the dtype of input 1, whose values are not read */
    {"Shape", "C*"},              /* evaluated at load time: only the shape is read */
    {"Size", "C*"},
};
#undef OX_SLOTS_ROW

static bool is_op(const Onnx__NodeProto *n, const char *op)
{
    return n->op_type && strcmp(n->op_type, op) == 0;
}

bool ox_msft_domain(const char *domain)
{
    return domain && strcmp(domain, "com.microsoft") == 0;
}

bool ox_op_is(const Onnx__NodeProto *n, const char *listed)
{
    static const char msft[] = "com.microsoft:";
    if (!listed)
        return false;
    if (strncmp(listed, msft, sizeof(msft) - 1) == 0)
        return ox_msft_domain(n->domain) && is_op(n, listed + sizeof(msft) - 1);
    return ox_default_domain(n->domain) && is_op(n, listed);
}

/* The letter of input slot `slot` of node n: P, B, C, T or x (anything else reads as x). */
static char slot_letter(const Onnx__NodeProto *n, int32_t slot)
{
    for (size_t i = 0; i < sizeof(slot_table) / sizeof(slot_table[0]); i++) {
        if (!ox_op_is(n, slot_table[i].name))
            continue;
        const char *s = slot_table[i].slots;
        size_t len = strlen(s);
        bool repeat = len > 0 && s[len - 1] == '*';   /* the last letter holds for every slot on */
        if (repeat)
            len--;
        if ((size_t)slot < len)
            return s[slot];
        return repeat && len > 0 ? s[len - 1] : 'x';
    }
    return 'x';
}

static uint64_t dims_numel(const int64_t *dims, size_t n)
{
    uint64_t e = 1;
    for (size_t i = 0; i < n; i++) {
        if (dims[i] < 0 || !fm_mul_ok(e, (uint64_t)dims[i], &e))
            return UINT64_MAX;
    }
    return e;
}

/* Cast's slot is T (a weight cast to fp16 is still a weight), but a cast to an integer or bool
 * type makes an index or a mask, through which no gradient flows: the one rule that depends on
 * an attribute, so no letter can say it. */
static bool casts_to_float(const Onnx__NodeProto *n)
{
    for (size_t i = 0; i < n->n_attribute; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        enum fm_dtype dt;
        if (a->name && !strcmp(a->name, "to"))
            return ox_dtype((int32_t)a->i, &dt) && fm_dtype_is_float(dt);
    }
    return false;
}

/* Strongest role over every use (PARAM beats BUFFER beats CONST), following tensors through
 * ops that pass them on (T) to a depth of 16; a cycle of such ops ends at a name already
 * being decided. */
static enum fm_role name_role(struct ox *ox, struct ox_name *e, uint64_t numel, int depth)
{
    if (e->role_done)
        return e->role;
    e->role_done = true;   /* also stops a cycle */
    e->role = FM_ROLE_CONST;
    int best = FM_ROLE_CONST;
    for (uint32_t u = 0; u < e->uses; u++) {
        const struct ox_use *use = &ox->uses[e->first_use + u];
        const Onnx__NodeProto *n = ox->gp->node[use->node];
        char letter = slot_letter(n, use->slot);
        int r;
        if (letter == 'C' || (is_op(n, "Cast") && !casts_to_float(n))) {
            r = FM_ROLE_CONST;   /* a shape, an index, a mask: nothing flows back through it */
        } else if (numel <= 1 && is_op(n, "Expand")) {
            /* a scalar broadcast to a tensor is a fill, not a weight stored at its size:
             * PyTorch 2's exporter writes a Conv without bias as Expand(CastLike(0.0)) */
            r = FM_ROLE_CONST;
        } else if (letter == 'T' && depth < 16) {
            r = FM_ROLE_CONST;
            for (size_t o = 0; o < n->n_output; o++) {
                struct ox_name *out = ox_name_find(ox, n->output[o]);
                int ro = out ? (int)name_role(ox, out, numel, depth + 1) : FM_ROLE_CONST;
                if (ro == FM_ROLE_PARAM || (ro == FM_ROLE_BUFFER && r == FM_ROLE_CONST))
                    r = ro;
            }
        } else if (letter == 'P') {
            r = FM_ROLE_PARAM;
        } else if (letter == 'B') {
            r = FM_ROLE_BUFFER;
        } else {   /* x, and T past the depth limit: a weight if more than a scalar */
            r = numel > 1 ? FM_ROLE_PARAM : FM_ROLE_CONST;
        }
        if (r == FM_ROLE_PARAM || (r == FM_ROLE_BUFFER && best == FM_ROLE_CONST))
            best = r;
    }
    e->role = (enum fm_role)best;
    return e->role;
}

enum fm_role ox_value_role(struct ox *ox, struct ox_name *e, const Onnx__TensorProto *t,
                           enum fm_dtype dtype)
{
    uint64_t numel = dims_numel(t->dims, t->n_dims);
    /* the int8/uint8 weights of quantized ops are parameters (counted, stored in a byte each),
     * which ox_const_tensor makes untrainable; every other integer tensor is a constant */
    if (dtype == FM_DTYPE_INT8 || dtype == FM_DTYPE_UINT8)
        return name_role(ox, e, numel, 0) == FM_ROLE_PARAM ? FM_ROLE_PARAM : FM_ROLE_CONST;
    if (!fm_dtype_is_float(dtype))
        return FM_ROLE_CONST;
    /* PyTorch 2: RoPE's inv_freq feeds a MatMul like a weight, yet the module holds it as a
     * buffer; the exporter's own record decides before the readers' slots do */
    switch (e->kind == OX_KIND_INIT ? ox_fx_kind(ox, e) : 0) {
    case 'b':
        return FM_ROLE_BUFFER;
    case 'c':
        return FM_ROLE_CONST;
    case 'p':
        return name_role(ox, e, numel, 0);
    default:
        if (e->kind == OX_KIND_INIT && ox_stands_for_lost_param(ox, e) == 0)
            return FM_ROLE_CONST;
        return name_role(ox, e, numel, 0);
    }
}

/* ---- tensors ---- */

/* Checks dims from the file: rank, sign, size; *empty is set for a 0 dim. */
enum fm_status ox_check_dims(struct ox *ox, const char *what, const char *name,
                            const int64_t *dims, size_t n, bool allow_empty, bool *empty,
                            struct fm_shape *shape)
{
    if (n > FM_MAX_DIMS)
        return fm_error(ox->ctx, FM_ERR_UNSUPPORTED, "%s: %s '%s' has %zu dims; flopmeter handles "
                        "at most %d", ox->src, what, name, n, FM_MAX_DIMS);
    *empty = false;
    shape->rank = (int)n;
    for (size_t i = 0; i < n; i++) {
        if (dims[i] < 0 || (dims[i] == 0 && !allow_empty))
            return fm_error(ox->ctx, FM_ERR_PARSE, "%s: %s '%s': dim %zu is %lld; dims must be "
                            "positive", ox->src, what, name, i, (long long)dims[i]);
        if (dims[i] > OX_DIM_MAX)
            return fm_error(ox->ctx, FM_ERR_PARSE, "%s: %s '%s': dim %zu is %lld, which is "
                            "absurd (more than 2^40)", ox->src, what, name, i,
                            (long long)dims[i]);
        if (dims[i] == 0)
            *empty = true;
        shape->dims[i] = dims[i];
    }
    uint64_t e;
    if (!*empty && (fm_shape_numel(shape, &e) != FM_OK || e > (UINT64_MAX >> 4)))
        return fm_error(ox->ctx, FM_ERR_OVERFLOW, "%s: %s '%s': its element count overflows",
                        ox->src, what, name);
    return FM_OK;
}

static enum fm_status unique_name(struct ox *ox, const Onnx__NodeProto *node, const char *what,
                                  char *buf, size_t size)
{
    for (int tries = 0; tries < 1000; tries++) {
        snprintf(buf, size, "%s:%s%u", node ? ox_node_name(node) : "const", what, ox->synth++);
        if (fm_graph_find_tensor(ox->g, buf) == FM_NONE && !ox_name_find(ox, buf))
            return FM_OK;
    }
    return fm_error(ox->ctx, FM_ERR_GRAPH, "could not name a tensor of node '%s'",
                    node ? ox_node_name(node) : "?");
}

enum fm_status ox_const_tensor(struct ox *ox, const Onnx__NodeProto *node, const char *name,
                               enum fm_role role, enum fm_dtype dtype, const struct fm_shape *shape,
                               const struct ox_val *val, fm_tid *out)
{
    char buf[512];
    if (!name || !*name || fm_graph_find_tensor(ox->g, name) != FM_NONE) {
        enum fm_status st = unique_name(ox, node, "const", buf, sizeof(buf));
        if (st)
            return st;
        name = buf;
    }
    if (role != FM_ROLE_PARAM && role != FM_ROLE_BUFFER)
        role = FM_ROLE_CONST;
    enum fm_status st = fm_graph_add_tensor(ox->g, name, role, dtype, shape, out);
    if (st)
        return st;
    if (role == FM_ROLE_PARAM && !fm_dtype_is_float(dtype))
        fm_graph_set_trainable(ox->g, *out, false);   /* quantized weights are not trained */
    if (val && val->known)
        return ox_set_val(ox, *out, val);
    return FM_OK;
}

/* Creates the tensor of an initializer on its first use. */
static enum fm_status init_tensor(struct ox *ox, struct ox_name *e)
{
    const Onnx__TensorProto *t = e->init;
    bool empty;
    struct fm_shape shape;
    enum fm_dtype dtype;
    enum fm_status st = ox_check_dims(ox, "initializer", e->name, t->dims, t->n_dims, true,
                                      &empty, &shape);
    if (st)
        return st;
    if (!t->has_data_type || !ox_dtype(t->data_type, &dtype))
        return fm_error(ox->ctx, FM_ERR_UNSUPPORTED, "%s: initializer '%s': data_type %d is not "
                        "a numeric type flopmeter knows", ox->src, e->name, (int)t->data_type);
    if (empty) {
        e->empty = true;
        e->empty_shape = shape;
        e->empty_dtype = dtype;
        return FM_OK;
    }
    enum fm_role role = ox_value_role(ox, e, t, dtype);
    /* weights are never read: only constants that shapes or attributes may depend on */
    struct ox_val v = {0};
    st = ox_tensor_read(ox, t, e->name, role == FM_ROLE_CONST, &v);
    if (st)
        return st;
    return ox_const_tensor(ox, NULL, e->name, role, dtype, &shape, &v, &e->tid);
}

/* Whether an empty constant read by node at slot is the empty list it holds (a shape of rank
 * 0: Paddle2ONNX reshapes to a scalar so; a scalar's Shape folds to it) rather than an omitted
 * operand (exporters write Resize's unused roi and scales as []). */
static bool empty_is_a_list(const Onnx__NodeProto *node, int slot)
{
    const char *op = ox_str(node->op_type);
    if (slot == 0)
        return !strcmp(op, "ConstantOfShape");
    return slot == 1 && (!strcmp(op, "Reshape") || !strcmp(op, "Expand") || !strcmp(op, "Tile"));
}

enum fm_status ox_input(struct ox *ox, const Onnx__NodeProto *node, int slot, fm_tid *out)
{
    *out = FM_NONE;
    const char *name = node->input[slot];
    if (!name || !*name)
        return FM_OK;
    struct ox_name *e = ox_name_find(ox, name);
    if (!e)
        return ox_node_error(ox, node, FM_ERR_GRAPH, "input %d ('%s') is produced by no node and "
                             "is no graph input or initializer", slot, name);
    if (e->tid == FM_NONE && e->kind == OX_KIND_INIT && !e->empty) {
        enum fm_status st = init_tensor(ox, e);
        if (st)
            return st;
    }
    if (e->empty && e->tid == FM_NONE) {
        if (!empty_is_a_list(node, slot))
            return FM_OK;   /* read as omitted */
        struct ox_val v = {true, fm_dtype_is_float(e->empty_dtype), 0, NULL, NULL};
        enum fm_status st = ox_const_tensor(ox, node, e->name, FM_ROLE_CONST, e->empty_dtype,
                                            &e->empty_shape, &v, &e->tid);
        if (st)
            return st;
    }
    if (e->tid == FM_NONE)
        return ox_node_error(ox, node, FM_ERR_GRAPH, "input %d ('%s') has not been produced "
                             "(its producer failed or was skipped)", slot, name);
    *out = e->tid;
    return FM_OK;
}

/* Output tensors: created unshaped, bound to the node, inferred at once. */
static enum fm_status output_tensor(struct ox *ox, const Onnx__NodeProto *node, int i, fm_tid *out)
{
    const char *name = node->output[i];
    char buf[512];
    struct ox_name *e = name && *name ? ox_name_find(ox, name) : NULL;
    if (!e) {
        enum fm_status st = unique_name(ox, node, "out", buf, sizeof(buf));
        if (st)
            return st;
        name = buf;
    }
    enum fm_status st = fm_graph_add_tensor_unshaped(ox->g, name, FM_ROLE_ACTIVATION,
                                                     FM_DTYPE_FP32, out);
    if (st)
        return st;
    if (e)
        e->tid = *out;
    return FM_OK;
}

/* Outputs beyond those the mapper emits (an op's outputs flopmeter does not model) must be
 * read by no node. */
static enum fm_status check_extra_outputs(struct ox *ox, const Onnx__NodeProto *node, int n_out)
{
    for (size_t i = (size_t)n_out; i < node->n_output; i++) {
        struct ox_name *e = ox_name_find(ox, node->output[i]);
        if (e && e->uses)
            return ox_node_error(ox, node, FM_ERR_UNSUPPORTED,
                                 "output %zu ('%s') is read by node '%s', but flopmeter models "
                                 "only the first %d output(s) of %s",
                                 i, e->name,
                                 ox_node_name(ox->gp->node[ox->uses[e->first_use].node]), n_out,
                                 ox_str(node->op_type));
    }
    return FM_OK;
}

int64_t ox_domain_opset(const struct ox *ox, const char *domain)
{
    const Onnx__ModelProto *m = ox->model;
    bool dflt = ox_default_domain(domain);
    for (size_t i = 0; m && i < m->n_opset_import; i++) {
        const char *d = m->opset_import[i]->domain;
        if (dflt ? ox_default_domain(d) : (d && !strcmp(d, domain)))
            return m->opset_import[i]->version;
    }
    return dflt ? ox->opset : 0;
}

enum fm_status ox_emit(struct ox *ox, const Onnx__NodeProto *node, enum fm_op op,
                       const struct fm_attrs *attrs, const fm_tid *in, int n_in, int n_out)
{
    if (n_out < 1 || (size_t)n_out > node->n_output || n_out > FM_MAX_IO)
        return ox_node_error(ox, node, FM_ERR_PARSE, "has %zu outputs; %d expected",
                             node->n_output, n_out);
    enum fm_status st = check_extra_outputs(ox, node, n_out);
    if (st)
        return st;
    fm_tid outs[FM_MAX_IO];
    for (int i = 0; i < n_out; i++) {
        st = output_tensor(ox, node, i, &outs[i]);
        if (st)
            return st;
    }
    fm_nid id;
    char lname[512];
    const char *name = ox_layer_name(ox, node, lname, sizeof(lname));
    st = fm_graph_add_node_bound(ox->g, op, name ? name : ox_node_name(node), attrs, in, n_in,
                                 outs, n_out, &id);
    if (!st && name)
        st = ox_note_moduled(ox, id);
    if (st)
        return st;
    st = fm_graph_infer_node(ox->g, id);
    if (st) {
        char msg[FM_ERRMSG_SIZE];
        snprintf(msg, sizeof(msg), "%s", fm_ctx_error(ox->ctx));
        return fm_error(ox->ctx, st, "%s: %s", ox->src, msg);
    }
    return FM_OK;
}

/* The shape of a value from value_info (or a graph output's type), symbolic dims resolved
 * through the bound symbols; false when unknown. */
static bool info_shape(struct ox *ox, const Onnx__ValueInfoProto *vi, struct fm_shape *s,
                       enum fm_dtype *dtype)
{
    if (!vi || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return false;
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    if (!tt || !tt->shape || tt->shape->n_dim > FM_MAX_DIMS || !tt->has_elem_type ||
        !ox_dtype(tt->elem_type, dtype))
        return false;
    s->rank = (int)tt->shape->n_dim;
    for (int i = 0; i < s->rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        int64_t v = 0;
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            v = d->dim_value;
        else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
            for (size_t k = 0; k < ox->n_syms; k++) {
                if (strcmp(ox->syms[k].name, ox_str(d->dim_param)) == 0)
                    v = ox->syms[k].value;
            }
        }
        if (v <= 0 || v > OX_DIM_MAX)
            return false;
        s->dims[i] = v;
    }
    uint64_t n;
    return fm_shape_numel(s, &n) == FM_OK && n <= (UINT64_MAX >> 4);
}

enum fm_status ox_emit_unknown(struct ox *ox, const Onnx__NodeProto *node, const char *why)
{
    fm_tid in[FM_MAX_IO];
    int n_in = 0;
    if (node->n_input > FM_MAX_IO || node->n_output > FM_MAX_IO || node->n_output == 0)
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "has %zu inputs and %zu outputs",
                             node->n_input, node->n_output);
    for (size_t i = 0; i < node->n_input; i++) {
        fm_tid t;
        enum fm_status st = ox_input(ox, node, (int)i, &t);
        if (st)
            return st;
        if (t != FM_NONE)
            in[n_in++] = t;
    }
    fm_tid outs[FM_MAX_IO];
    int n_out = (int)node->n_output, n_shaped = 0;
    for (int i = 0; i < n_out; i++) {
        enum fm_status st = output_tensor(ox, node, i, &outs[i]);
        if (st)
            return st;
    }
    fm_nid id;
    char lname[512];
    const char *name = ox_layer_name(ox, node, lname, sizeof(lname));
    enum fm_status st = fm_graph_add_node_bound(ox->g, FM_OP_UNKNOWN,
                                                name ? name : ox_node_name(node), NULL, in,
                                                n_in, outs, n_out, &id);
    if (!st && name)
        st = ox_note_moduled(ox, id);
    if (st)
        return st;
    char opname[160];
    if (node->domain && *node->domain && strcmp(node->domain, "ai.onnx") != 0)
        snprintf(opname, sizeof(opname), "%s:%s", node->domain, ox_str(node->op_type));
    else
        snprintf(opname, sizeof(opname), "%s", ox_str(node->op_type));
    st = fm_graph_set_op_name(ox->g, id, opname);
    if (st)
        return st;
    /* the file's value_info is the only source of an unknown op's output shapes */
    for (int i = 0; i < n_out; i++) {
        struct ox_name *e = ox_name_find(ox, node->output[i]);
        struct fm_shape s;
        enum fm_dtype dt;
        if (e && info_shape(ox, e->info, &s, &dt)) {
            st = fm_graph_set_shape(ox->g, outs[i], &s);
            if (st)
                return st;
            ox->g->tensors[outs[i]].dtype = dt;
            n_shaped++;
        }
    }
    if (n_shaped == n_out) {
        st = fm_graph_infer_node(ox->g, id);
        if (st)
            return st;
    }
    const char *dom = node->domain && *node->domain ? node->domain : "ai.onnx";
    fm_log(ox->ctx, "%s: node '%s': op %s (domain %s, opset %lld) is not counted (%s): it "
           "counts as zero, so the totals are a lower bound", ox->src, ox_node_name(node),
           opname, dom, (long long)ox_domain_opset(ox, node->domain), why);
    return FM_OK;
}
