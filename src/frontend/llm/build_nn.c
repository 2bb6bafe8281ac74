/* The node helpers of the language-model builder (build_nn.h): thin wrappers over
 * fm_graph_add_node that name each node by the HF module path and keep fm_nn's sticky error.
 * They add nothing a transformer does not execute: a view or transpose is a data-movement node
 * (no FLOPs), as in the ONNX export of the same model. */
#include "build_nn.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void lm_push(struct lm *m, const char *fmt, ...)
{
    char part[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(part, sizeof(part), fmt, ap);
    va_end(ap);
    size_t len = strlen(m->nn.prefix);
    if (m->depth < (int)(sizeof(m->stack) / sizeof(m->stack[0])))
        m->stack[m->depth] = len;
    m->depth++;
    snprintf(m->nn.prefix + len, sizeof(m->nn.prefix) - len, "%s%s", len ? "." : "", part);
}

void lm_pop(struct lm *m)
{
    if (m->depth <= 0)
        return;
    m->depth--;
    if (m->depth < (int)(sizeof(m->stack) / sizeof(m->stack[0])))
        m->nn.prefix[m->stack[m->depth]] = '\0';
}

static void full_name(struct lm *m, const char *name, char *buf, size_t size)
{
    const char *p = m->nn.prefix;
    snprintf(buf, size, "%s%s%s", p, p[0] && name[0] ? "." : "", name);
}

/* A module (q_proj, act_fn, input_layernorm) is named by its path; an op inside the current
 * module by the path, '/' and the op, as a PyTorch 2 export names it, so that --by-module
 * sums a module's ops (docs/pytorch.md). */
static enum fm_status add_node(struct lm *m, enum fm_op op, const char *name, bool module,
                               const struct fm_attrs *a, const fm_tid *in, int n_in, fm_tid *out,
                               int n_out)
{
    if (m->nn.st)
        return m->nn.st;
    for (int i = 0; i < n_in; i++) {
        if (in[i] == FM_NONE && i < 2)
            return m->nn.st = FM_ERR_GRAPH;
    }
    char full[512];
    if (module) {
        full_name(m, name, full, sizeof(full));
    } else {
        const char *p = m->nn.prefix;
        snprintf(full, sizeof(full), "%s%s%s", p, p[0] && name[0] ? "/" : "", name);
    }
    /* a name used twice (a module applied twice) gets _1, _2 as torch.fx numbers the calls */
    char uniq[560];
    snprintf(uniq, sizeof(uniq), "%s", full);
    for (int i = 1; fm_graph_find_tensor(m->nn.g, uniq) != FM_NONE; i++)
        snprintf(uniq, sizeof(uniq), "%s_%d", full, i);
    m->nn.st = fm_graph_add_node(m->nn.g, op, uniq, a, in, n_in, NULL, n_out, out);
    return m->nn.st;
}

enum fm_status lm_node_n(struct lm *m, enum fm_op op, const char *name, const struct fm_attrs *a,
                         const fm_tid *in, int n_in, fm_tid *out, int n_out)
{
    return add_node(m, op, name, false, a, in, n_in, out, n_out);
}

fm_tid lm_node(struct lm *m, enum fm_op op, const char *name, const struct fm_attrs *a,
               const fm_tid *in, int n_in)
{
    fm_tid out = FM_NONE;
    return add_node(m, op, name, false, a, in, n_in, &out, 1) ? FM_NONE : out;
}

fm_tid lm_module_node(struct lm *m, enum fm_op op, const char *name, const struct fm_attrs *a,
                      const fm_tid *in, int n_in)
{
    fm_tid out = FM_NONE;
    return add_node(m, op, name, true, a, in, n_in, &out, 1) ? FM_NONE : out;
}

static fm_tid add_tensor(struct lm *m, const char *full, enum fm_role role, enum fm_dtype dtype,
                         int rank, const int64_t *dims)
{
    if (m->nn.st)
        return FM_NONE;
    struct fm_shape s = {rank, {0}};
    memcpy(s.dims, dims, sizeof(int64_t) * (size_t)rank);
    fm_tid t = FM_NONE;
    m->nn.st = fm_graph_add_tensor(m->nn.g, full, role, dtype, &s, &t);
    return m->nn.st ? FM_NONE : t;
}

fm_tid lm_param(struct lm *m, const char *name, enum fm_role role, int rank, const int64_t *dims)
{
    char full[512];
    full_name(m, name, full, sizeof(full));
    return add_tensor(m, full, role, m->nn.dtype, rank, dims);
}

fm_tid lm_input(struct lm *m, const char *name, enum fm_dtype dtype, int rank,
                const int64_t *dims)
{
    return add_tensor(m, name, FM_ROLE_INPUT, dtype, rank, dims);
}

const struct fm_shape *lm_shape(struct lm *m, fm_tid x)
{
    static const struct fm_shape none = {0, {0}};
    const struct fm_tensor *t = x == FM_NONE ? NULL : fm_graph_tensor(m->nn.g, x);
    return t ? &t->shape : &none;
}

int64_t lm_last_dim(struct lm *m, fm_tid x)
{
    const struct fm_shape *s = lm_shape(m, x);
    return s->rank > 0 ? s->dims[s->rank - 1] : 0;
}

fm_tid lm_reshape(struct lm *m, const char *name, fm_tid x, int rank, const int64_t *dims)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.nints = rank;
    memcpy(a.ints, dims, sizeof(int64_t) * (size_t)rank);
    return lm_node(m, FM_OP_RESHAPE, name, &a, &x, 1);
}

fm_tid lm_transpose(struct lm *m, const char *name, fm_tid x, int d0, int d1)
{
    int rank = lm_shape(m, x)->rank;
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.nints = rank;
    for (int i = 0; i < rank; i++)
        a.ints[i] = i;
    a.ints[d0] = d1;
    a.ints[d1] = d0;
    return lm_node(m, FM_OP_TRANSPOSE, name, &a, &x, 1);
}

fm_tid lm_split(struct lm *m, const char *name, fm_tid x, int axis, int n, const int64_t *sizes,
                fm_tid *outs)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.axis = axis;
    a.nints = n;
    memcpy(a.ints, sizes, sizeof(int64_t) * (size_t)n);
    for (int i = 0; i < n; i++)
        outs[i] = FM_NONE;
    return lm_node_n(m, FM_OP_SPLIT, name, &a, &x, 1, outs, n) ? FM_NONE : outs[0];
}

fm_tid lm_slice_last(struct lm *m, const char *name, fm_tid x, int64_t start, int64_t end)
{
    const struct fm_shape *s = lm_shape(m, x);
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.nints = 3 * s->rank;
    for (int i = 0; i < s->rank; i++) {
        bool last = i == s->rank - 1;
        a.ints[3 * i] = last ? start : 0;
        a.ints[3 * i + 1] = last ? end : s->dims[i];
        a.ints[3 * i + 2] = 1;
    }
    return lm_node(m, FM_OP_SLICE, name, &a, &x, 1);
}

fm_tid lm_add(struct lm *m, const char *name, fm_tid a, fm_tid b)
{
    fm_tid in[2] = {a, b};
    return lm_node(m, FM_OP_ADD, name, NULL, in, 2);
}

fm_tid lm_mul(struct lm *m, const char *name, fm_tid a, fm_tid b)
{
    fm_tid in[2] = {a, b};
    return lm_node(m, FM_OP_MUL, name, NULL, in, 2);
}

fm_tid lm_concat2(struct lm *m, const char *name, fm_tid a0, fm_tid b0, int axis)
{
    fm_tid in[2] = {a0, b0};
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.axis = axis;
    return lm_node(m, FM_OP_CONCAT, name, &a, in, 2);
}

fm_tid lm_unary(struct lm *m, enum fm_op op, const char *name, fm_tid x)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.axis = -1;
    return lm_node(m, op, name, &a, &x, 1);
}

fm_tid lm_act(struct lm *m, const char *name, enum fm_llm_act act, fm_tid x)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    switch (act) {
    case FM_LLM_ACT_SILU:
        return lm_module_node(m, FM_OP_SILU, name, &a, &x, 1);
    case FM_LLM_ACT_GELU_TANH:
        a.flags |= FM_ATTR_GELU_TANH;
        return lm_module_node(m, FM_OP_GELU, name, &a, &x, 1);
    case FM_LLM_ACT_GELU:
        return lm_module_node(m, FM_OP_GELU, name, &a, &x, 1);
    case FM_LLM_ACT_RELU:
    default:
        return lm_module_node(m, FM_OP_RELU, name, &a, &x, 1);
    }
}

fm_tid lm_scale(struct lm *m, const char *name, fm_tid x, double s)
{
    if (m->nn.st)
        return FM_NONE;
    char full[600];
    full_name(m, name, full, sizeof(full));
    char cname[640];
    snprintf(cname, sizeof(cname), "%s.scalar", full);
    int64_t one = 1;
    fm_tid k = add_tensor(m, cname, FM_ROLE_CONST, m->nn.dtype, 1, &one);
    if (k != FM_NONE)
        m->nn.st = fm_graph_set_fvalue(m->nn.g, k, &s, 1);
    fm_tid in[2] = {x, k};
    return lm_node(m, FM_OP_MUL, name, NULL, in, 2);
}

/* a constant scalar tensor named prefix.name.NAME */
static fm_tid scalar(struct lm *m, const char *name, const char *what, double v)
{
    if (m->nn.st)
        return FM_NONE;
    char full[600];
    full_name(m, name, full, sizeof(full));
    char cname[640];
    snprintf(cname, sizeof(cname), "%s.%s", full, what);
    int64_t one = 1;
    fm_tid k = add_tensor(m, cname, FM_ROLE_CONST, m->nn.dtype, 1, &one);
    if (k != FM_NONE)
        m->nn.st = fm_graph_set_fvalue(m->nn.g, k, &v, 1);
    return k;
}

/* LayerNorm is one node; RMSNorm is the ops HF's LlamaRMSNorm runs (no fused RMSNorm op with a
 * backward exists in the op set): x.pow(2).mean(-1) + eps, rsqrt (sqrt and reciprocal), x * it,
 * weight * that; Gemma's (1 + weight) adds one per weight element. */
fm_tid lm_norm(struct lm *m, const char *name, fm_tid x, bool rms, bool bias)
{
    int64_t d = lm_last_dim(m, x);
    lm_push(m, "%s", name);
    fm_tid w = lm_param(m, "weight", FM_ROLE_PARAM, 1, &d);
    fm_tid b = !rms && bias ? lm_param(m, "bias", FM_ROLE_PARAM, 1, &d) : FM_NONE;
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.axis = -1;
    a.eps = m->c->norm_eps;
    if (!rms) {
        lm_pop(m);
        fm_tid in[3] = {x, w, b};
        return lm_module_node(m, FM_OP_LAYERNORM, name, &a, in, b == FM_NONE ? 2 : 3);
    }
    fm_tid in[2] = {x, scalar(m, "pow", "exponent", 2.0)};
    fm_tid v = lm_node(m, FM_OP_POW, "pow", NULL, in, 2);
    a.nints = 1;
    a.ints[0] = -1;
    a.flags = FM_ATTR_KEEPDIMS;
    v = lm_node(m, FM_OP_REDUCE_MEAN, "mean", &a, &v, 1);
    fm_tid in2[2] = {v, scalar(m, "add_eps", "eps", m->c->norm_eps)};
    v = lm_node(m, FM_OP_ADD, "add_eps", NULL, in2, 2);
    v = lm_unary(m, FM_OP_SQRT, "sqrt", v);
    v = lm_unary(m, FM_OP_RECIPROCAL, "rsqrt", v);
    fm_tid in3[2] = {x, v};
    fm_tid y = lm_node(m, FM_OP_MUL, "normalize", NULL, in3, 2);
    if (m->c->arch == FM_LLM_GEMMA || m->c->arch == FM_LLM_GEMMA2) {
        fm_tid in4[2] = {w, scalar(m, "one_plus_weight", "one", 1.0)};
        w = lm_node(m, FM_OP_ADD, "one_plus_weight", NULL, in4, 2);
    }
    fm_tid in5[2] = {w, y};
    y = lm_node(m, FM_OP_MUL, "scale", NULL, in5, 2);
    lm_pop(m);
    return y;
}

fm_tid lm_linear(struct lm *m, const char *name, fm_tid x, int64_t nout, bool bias)
{
    return fm_nn_linear(&m->nn, name, x, nout, bias);
}

fm_tid lm_conv1d(struct lm *m, const char *name, fm_tid x, int64_t nout)
{
    int64_t wd[2] = {lm_last_dim(m, x), nout};
    lm_push(m, "%s", name);
    fm_tid w = lm_param(m, "weight", FM_ROLE_PARAM, 2, wd);
    fm_tid b = lm_param(m, "bias", FM_ROLE_PARAM, 1, &nout);
    lm_pop(m);
    fm_tid in[2] = {x, w};
    fm_tid y = lm_module_node(m, FM_OP_MATMUL, name, NULL, in, 2);
    /* torch.addmm(bias, x, weight): the bias add is part of the same module */
    lm_push(m, "%s", name);
    fm_tid in2[2] = {y, b};
    y = lm_node(m, FM_OP_ADD, "bias_add", NULL, in2, 2);
    lm_pop(m);
    return y;
}

fm_tid lm_rotary(struct lm *m, const char *name, fm_tid x, fm_tid cos, fm_tid sin, int64_t rot)
{
    /* ops of the attention module (apply_rotary_pos_emb is a function, not a module): named
     * <module>/<name>.<op> */
    int64_t d = lm_last_dim(m, x);
    char nm[8][96];
    static const char *const ops[8] = {"rot", "pass", "mul_cos", "x1", "x2", "neg", "mul_sin",
                                       "add"};
    for (int i = 0; i < 8; i++)
        snprintf(nm[i], sizeof(nm[i]), "%s.%s", name, ops[i]);
    fm_tid pass = FM_NONE, r = x;
    if (rot < d) {
        r = lm_slice_last(m, nm[0], x, 0, rot);
        pass = lm_slice_last(m, nm[1], x, rot, d);
    }
    fm_tid in[2] = {r, cos};
    fm_tid a = lm_node(m, FM_OP_MUL, nm[2], NULL, in, 2);
    /* rotate_half: cat(-x2, x1) */
    fm_tid x1 = lm_slice_last(m, nm[3], r, 0, rot / 2);
    fm_tid x2 = lm_slice_last(m, nm[4], r, rot / 2, rot);
    fm_tid n2 = lm_unary(m, FM_OP_NEG, nm[5], x2);
    char rh_name[96], cat_name[96];
    snprintf(rh_name, sizeof(rh_name), "%s.rotate_half", name);
    snprintf(cat_name, sizeof(cat_name), "%s.cat", name);
    fm_tid rh = lm_concat2(m, rh_name, n2, x1, -1);
    fm_tid in2[2] = {rh, sin};
    fm_tid b = lm_node(m, FM_OP_MUL, nm[6], NULL, in2, 2);
    fm_tid in3[2] = {a, b};
    fm_tid y = lm_node(m, FM_OP_ADD, nm[7], NULL, in3, 2);
    if (pass != FM_NONE)
        y = lm_concat2(m, cat_name, y, pass, -1);
    return y;
}

fm_tid lm_repeat_kv(struct lm *m, const char *name, fm_tid x, int64_t rep)
{
    if (rep == 1)
        return x;
    const struct fm_shape *s = lm_shape(m, x);
    int64_t b = s->dims[0], kv = s->dims[1], sq = s->dims[2], d = s->dims[3];
    char nm[3][96];
    snprintf(nm[0], sizeof(nm[0]), "%s.unsqueeze", name);
    snprintf(nm[1], sizeof(nm[1]), "%s.expand", name);
    snprintf(nm[2], sizeof(nm[2]), "%s.reshape", name);
    int64_t d5[5] = {b, kv, 1, sq, d};
    fm_tid y = lm_reshape(m, nm[0], x, 5, d5);
    d5[2] = rep;
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.nints = 5;
    memcpy(a.ints, d5, sizeof(d5));
    y = lm_node(m, FM_OP_EXPAND, nm[1], &a, &y, 1);
    int64_t d4[4] = {b, kv * rep, sq, d};
    return lm_reshape(m, nm[2], y, 4, d4);
}
