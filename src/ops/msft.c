/* ONNX Runtime's fused float ops of the com.microsoft domain, as its transformer optimizer
 * (onnxruntime.transformers.optimizer) writes them: FusedMatMul, FastGelu, BiasGelu, QuickGelu,
 * BiasAdd, SkipLayerNormalization, SkipSimplifiedLayerNormalization,
 * SimplifiedLayerNormalization, EmbedLayerNormalization, Attention, MultiHeadAttention,
 * RotaryEmbedding, GroupQueryAttention. (com.microsoft's Gelu is GELU itself, act.c.) They are
 * inference kernels: no gradient is defined for them, so none is counted (no_grad; fm_count logs
 * it in a training count). Each is counted as the unfused ops it replaces; bytes are the fused
 * kernel's (inputs read once, outputs written once, no intermediate such as the score matrix).
 * E = elements of the output, G = rows normalized (E / hidden size).
 *   FusedMatMul      alpha * op(A) @ op(B), op a transpose of the last two dims when asked:
 *                    batch*M*K*N mac, and E mul when alpha != 1
 *   FastGelu         (x + bias) then GELU's tanh form (act.c): E add (bias) + 2E add, 6E mul,
 *                    E special
 *   BiasGelu         (x + bias) then GELU (erf): E add + E add, 3E mul, E special
 *   QuickGelu        x * sigmoid(alpha x): E add, 2E mul, E div, E special
 *   BiasAdd          x + bias + skip: 2E add
 *   LayerNorm (norm.c's two-pass form) with gamma and beta: 4E + G add, 3E mul, 2G div,
 *                    G special (3E add and E mul for statistics, G add for eps, d*istd*gamma
 *                    2E mul, + beta E add)
 *   RMSNorm          sum(x*x)/S, rsqrt(+eps), x*r*gamma: E + G add, 3E mul, G div, G special
 *   SkipLayerNormalization       E add (skip) [+ E add (bias)] + LayerNorm [without beta: -E add]
 *   SkipSimplifiedLayerNormalization   E add (skip) [+ E add (bias)] + RMSNorm
 *   EmbedLayerNormalization      word + position [+ segment] embeddings: E [+ E] add, then
 *                    LayerNorm; a mask's index: B*S add
 *   attention core (attention.c's math form), P = B*N*Sq*Sk scores, R = B*N*Sq rows:
 *                    P*(D+Dv) mac, P mul (scale), P add with a mask or bias, P cmp when causal,
 *                    softmax P-R cmp + 2P-R add + P special + P div
 *   Attention        X (B,S,Hin) @ W (Hin, Dq+Dk+Dv) [+ bias]: B*S*Hin*(Dq+Dk+Dv) mac
 *                    [+ B*S*(Dq+Dk+Dv) add], then the core with N = num_heads, Sk = S (+ the
 *                    past's length), causal when unidirectional
 *   MultiHeadAttention  Q (B,S,D), K (B,L,D) or (B,N,L,H), V likewise [+ bias: one add per
 *                    element of Q, K, V], then the core
 *   RotaryEmbedding  x*cos + rotate(x)*sin on the rotated part, 2 mul + 1 add per rotated
 *                    element: numel * (2 * cos_cache's last dim) / head size of them
 *   GroupQueryAttention  the core with N = num_heads query heads, causal, Sk = the total
 *                    sequence length (its value when known, else past length + S) [+ rotary
 *                    on Q and K when do_rotary] */
#include "ops.h"

#include <string.h>

static enum fm_status merr(struct fm_shape_call *call, const char *what)
{
    return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): %s", call->node->name,
                    call->node->op_name, what);
}

static void fwd(struct fm_cost_call *call, enum fm_prim p, uint64_t n)
{
    fm_cost_add(call, FM_PHASE_FWD, p, n);
}

static enum fm_status done(struct fm_cost_call *call)
{
    fm_cost_fwd_bytes_default(call);
    call->cost->no_grad = true;
    return FM_OK;
}

/* input i, NULL when omitted or beyond the node's inputs */
static const struct fm_tensor *opt_in(const struct fm_tensor *const *in, const struct fm_node *n,
                                      int i)
{
    return i < n->n_in ? in[i] : NULL;
}
#define IN(call, i) opt_in((call)->in, (call)->node, (i))

/* ---- FusedMatMul ---- */

static void fmm_operands(const struct fm_node *n, const struct fm_shape *a,
                         const struct fm_shape *b, struct fm_shape *ta, struct fm_shape *tb)
{
    *ta = *a;
    *tb = *b;
    if ((n->attrs.flags & FM_ATTR_TRANS_A) && a->rank >= 2) {
        ta->dims[a->rank - 1] = a->dims[a->rank - 2];
        ta->dims[a->rank - 2] = a->dims[a->rank - 1];
    }
    if ((n->attrs.flags & FM_ATTR_TRANS_B) && b->rank >= 2) {
        tb->dims[b->rank - 1] = b->dims[b->rank - 2];
        tb->dims[b->rank - 2] = b->dims[b->rank - 1];
    }
}

static enum fm_status fused_matmul_shape(struct fm_shape_call *call)
{
    struct fm_tensor ta = *call->in[0], tb = *call->in[1];
    fmm_operands(call->node, &call->in[0]->shape, &call->in[1]->shape, &ta.shape, &tb.shape);
    struct fm_shape_call sub = *call;
    memset(sub.in, 0, sizeof(sub.in));
    sub.in[0] = &ta;
    sub.in[1] = &tb;
    enum fm_status st = fm_op_matmul_desc.shape(&sub);
    call->out_shape[0] = sub.out_shape[0];
    return st;
}

static enum fm_status fused_matmul_cost(struct fm_cost_call *call)
{
    struct fm_shape ta, tb;
    fmm_operands(call->node, &call->in[0]->shape, &call->in[1]->shape, &ta, &tb);
    uint64_t e = fm_cost_numel(call, call->out[0]);
    fwd(call, FM_PRIM_MAC, fm_cmul(&call->ovf, e, (uint64_t)ta.dims[ta.rank - 1]));
    if (call->node->attrs.alpha != 1.0)
        fwd(call, FM_PRIM_MUL, e);
    return done(call);
}

/* ---- elementwise: FastGelu, BiasGelu, QuickGelu, BiasAdd ---- */

static enum fm_status same_shape(struct fm_shape_call *call)
{
    const struct fm_tensor *x = call->in[0];
    if (!fm_dtype_is_float(x->dtype))
        return merr(call, "its input is not a float");
    for (int i = 1; i < call->node->n_in; i++) {
        const struct fm_tensor *t = call->in[i];
        struct fm_shape r;
        if (!t)
            continue;
        enum fm_status st = fm_shape_broadcast(call->ctx, call->node, &x->shape, &t->shape, &r);
        if (st)
            return st;
        if (!fm_shape_equal(&r, &x->shape))
            return merr(call, "an operand does not broadcast to the input");
    }
    call->out_shape[0] = x->shape;
    return FM_OK;
}

static enum fm_status gelu_like_cost(struct fm_cost_call *call)
{
    uint64_t e = fm_cost_numel(call, call->out[0]);
    bool *o = &call->ovf;
    bool bias = IN(call, 1) != NULL;
    switch (call->node->op) {
    case FM_OP_FAST_GELU:
        fwd(call, FM_PRIM_ADD, fm_cmul(o, bias ? 3 : 2, e));
        fwd(call, FM_PRIM_MUL, fm_cmul(o, 6, e));
        fwd(call, FM_PRIM_SPECIAL, e);
        break;
    case FM_OP_BIAS_GELU:
        fwd(call, FM_PRIM_ADD, fm_cmul(o, 2, e));
        fwd(call, FM_PRIM_MUL, fm_cmul(o, 3, e));
        fwd(call, FM_PRIM_SPECIAL, e);
        break;
    case FM_OP_QUICK_GELU:
        fwd(call, FM_PRIM_ADD, e);
        fwd(call, FM_PRIM_MUL, fm_cmul(o, 2, e));
        fwd(call, FM_PRIM_DIV, e);
        fwd(call, FM_PRIM_SPECIAL, e);
        break;
    default:   /* BiasAdd */
        fwd(call, FM_PRIM_ADD, fm_cmul(o, 2, e));
        break;
    }
    return done(call);
}

/* ---- normalizations ---- */

/* LayerNorm (beta: with beta) or RMSNorm over the last dim of e elements */
static void norm_ops(struct fm_cost_call *call, uint64_t e, uint64_t g, bool rms, bool beta)
{
    bool *o = &call->ovf;
    if (rms) {
        fwd(call, FM_PRIM_ADD, fm_cadd(o, e, g));
        fwd(call, FM_PRIM_MUL, fm_cmul(o, 3, e));
        fwd(call, FM_PRIM_DIV, g);
    } else {
        fwd(call, FM_PRIM_ADD, fm_cadd(o, fm_cmul(o, beta ? 4 : 3, e), g));
        fwd(call, FM_PRIM_MUL, fm_cmul(o, 3, e));
        fwd(call, FM_PRIM_DIV, fm_cmul(o, 2, g));
    }
    fwd(call, FM_PRIM_SPECIAL, g);
}

/* hidden size: the last dim; gamma (input gi) must have that many elements */
static enum fm_status norm_check(struct fm_shape_call *call, const struct fm_shape *x, int gi)
{
    if (x->rank < 1)
        return merr(call, "its input is a scalar");
    const struct fm_tensor *g = IN(call, gi);
    uint64_t ng = 0;
    if (!g || fm_shape_numel(&g->shape, &ng) != FM_OK || ng != (uint64_t)x->dims[x->rank - 1])
        return merr(call, "gamma must have one element per hidden unit (the last dim)");
    return FM_OK;
}

/* SkipLayerNormalization (x, skip, gamma, beta?, bias?), SkipSimplifiedLayerNormalization
 * (x, skip, gamma, bias?): outputs y, then mean, inv_std (rows), then x + skip + bias */
static enum fm_status skip_norm_shape(struct fm_shape_call *call)
{
    const struct fm_shape *x = &call->in[0]->shape;
    enum fm_status st = norm_check(call, x, 2);
    if (st)
        return st;
    if (!fm_shape_equal(&call->in[1]->shape, x)) {
        struct fm_shape r;
        st = fm_shape_broadcast(call->ctx, call->node, x, &call->in[1]->shape, &r);
        if (st || !fm_shape_equal(&r, x))
            return merr(call, "skip does not broadcast to the input");
    }
    for (int i = 0; i < call->node->n_out; i++) {
        call->out_shape[i] = *x;
        call->out_dtype[i] = call->in[0]->dtype;
        if (i == 1 || i == 2) {   /* mean and inv_std: one per row, fp32 */
            call->out_shape[i].dims[x->rank - 1] = 1;
            call->out_dtype[i] = FM_DTYPE_FP32;
        }
    }
    return FM_OK;
}

static enum fm_status skip_norm_cost(struct fm_cost_call *call)
{
    const struct fm_shape *x = &call->in[0]->shape;
    uint64_t e = fm_cost_numel(call, call->in[0]);
    uint64_t g = e / (uint64_t)(x->dims[x->rank - 1] ? x->dims[x->rank - 1] : 1);
    bool rms = call->node->op == FM_OP_SKIP_SIMPLIFIED_LAYERNORM;
    int bias_slot = rms ? 3 : 4;
    fwd(call, FM_PRIM_ADD, IN(call, bias_slot) ? fm_cmul(&call->ovf, 2, e) : e);
    norm_ops(call, e, g, rms, !rms && IN(call, 3));
    return done(call);
}

/* SimplifiedLayerNormalization (x, scale): RMSNorm over axis (-1 only) */
static enum fm_status rms_norm_shape(struct fm_shape_call *call)
{
    const struct fm_shape *x = &call->in[0]->shape;
    enum fm_status st = norm_check(call, x, 1);
    if (st)
        return st;
    int ax;
    st = fm_shape_axis(call->ctx, call->node, call->node->attrs.axis, x->rank, &ax);
    if (st)
        return st;
    if (ax != x->rank - 1)
        return merr(call, "only axis -1 (the last dim) is counted");
    for (int i = 0; i < call->node->n_out; i++) {
        call->out_shape[i] = *x;
        if (i)   /* inv_std_var */
            call->out_shape[i].dims[x->rank - 1] = 1;
    }
    return FM_OK;
}

static enum fm_status rms_norm_cost(struct fm_cost_call *call)
{
    const struct fm_shape *x = &call->in[0]->shape;
    uint64_t e = fm_cost_numel(call, call->in[0]);
    norm_ops(call, e, e / (uint64_t)(x->dims[x->rank - 1] ? x->dims[x->rank - 1] : 1), true,
             false);
    return done(call);
}

/* EmbedLayerNormalization: input_ids (B,S), segment_ids?, word (V,H), position (P,H),
 * segment?, gamma, beta, mask?, position_ids? -> (B,S,H), mask_index (B)[, embedding sum] */
static enum fm_status embed_norm_shape(struct fm_shape_call *call)
{
    const struct fm_tensor *ids = call->in[0], *word = IN(call, 2);
    if (!word || !IN(call, 3))
        return merr(call, "the word and position embeddings (inputs 2 and 3) are required");
    if (ids->shape.rank != 2 || fm_dtype_is_float(ids->dtype))
        return merr(call, "input_ids must be (batch, sequence) integers");
    if (word->shape.rank != 2 || call->in[3]->shape.rank != 2 ||
        call->in[3]->shape.dims[1] != word->shape.dims[1])
        return merr(call, "the word and position embeddings must be (rows, hidden) alike");
    int64_t b = ids->shape.dims[0], s = ids->shape.dims[1], h = word->shape.dims[1];
    struct fm_shape y = {3, {b, s, h}};
    enum fm_status st = norm_check(call, &y, 5);
    if (st)
        return st;
    for (int i = 0; i < call->node->n_out; i++) {
        call->out_shape[i] = y;
        call->out_dtype[i] = word->dtype;
    }
    if (call->node->n_out > 1) {
        call->out_shape[1] = (struct fm_shape){1, {b}};
        call->out_dtype[1] = FM_DTYPE_INT32;
    }
    return FM_OK;
}

static enum fm_status embed_norm_cost(struct fm_cost_call *call)
{
    uint64_t e = fm_cost_numel(call, call->out[0]);
    uint64_t rows = fm_cost_numel(call, call->in[0]);
    fwd(call, FM_PRIM_ADD, IN(call, 4) ? fm_cmul(&call->ovf, 2, e) : e);
    norm_ops(call, e, rows, false, true);
    if (IN(call, 7))
        fwd(call, FM_PRIM_ADD, rows);
    /* the embedding rows gathered are read, not the tables: the default would read them all */
    fm_cost_read(call, FM_PHASE_FWD, fm_cost_bytes(call, call->in[0]));
    fm_cost_read(call, FM_PHASE_FWD, fm_cmul(&call->ovf, fm_cost_bytes(call, call->out[0]),
                                              IN(call, 4) ? 3 : 2));
    for (int i = 0; i < call->node->n_out; i++)
        fm_cost_write(call, FM_PHASE_FWD, fm_cost_bytes(call, call->out[i]));
    call->cost->no_grad = true;
    return FM_OK;
}

/* ---- attention ---- */

/* The math-form core: b*n*sq*sk scores with head sizes d (Q, K) and dv (V). */
static void core_ops(struct fm_cost_call *call, uint64_t b, uint64_t n, uint64_t sq, uint64_t sk,
                     uint64_t d, uint64_t dv, bool mask, bool causal)
{
    bool *o = &call->ovf;
    uint64_t rows = fm_cmul3(o, b, n, sq);
    uint64_t p = fm_cmul(o, rows, sk);
    fwd(call, FM_PRIM_MAC, fm_cmul(o, p, fm_cadd(o, d, dv)));
    fwd(call, FM_PRIM_MUL, p);
    if (mask)
        fwd(call, FM_PRIM_ADD, p);
    if (causal)
        fwd(call, FM_PRIM_CMP, p);
    fwd(call, FM_PRIM_CMP, p - rows);
    fwd(call, FM_PRIM_ADD, fm_cadd(o, p, p - rows));
    fwd(call, FM_PRIM_SPECIAL, p);
    fwd(call, FM_PRIM_DIV, p);
}

/* the projection widths of Attention: qkv_hidden_sizes (ints) or W's columns in thirds */
static bool attn_widths(const struct fm_node *n, const struct fm_shape *w, int64_t *q, int64_t *k,
                        int64_t *v)
{
    if (n->attrs.nints == 3) {
        *q = n->attrs.ints[0];
        *k = n->attrs.ints[1];
        *v = n->attrs.ints[2];
    } else {
        *q = *k = *v = w->dims[1] / 3;
    }
    return *q > 0 && *k == *q && *v > 0 && *q + *k + *v == w->dims[1] && n->attrs.groups > 0 &&
           *q % n->attrs.groups == 0 && *v % n->attrs.groups == 0;
}

/* Attention: input (B,S,Hin), weights (Hin, Dq+Dk+Dv), bias?, mask_index?, past? ... */
static enum fm_status ms_attention_shape(struct fm_shape_call *call)
{
    const struct fm_shape *x = &call->in[0]->shape, *w = &call->in[1]->shape;
    int64_t q, k, v;
    if (x->rank != 3 || w->rank != 2 || w->dims[0] != x->dims[2])
        return merr(call, "input must be (batch, sequence, hidden) and weights (hidden, 3 x "
                          "hidden)");
    if (!attn_widths(call->node, w, &q, &k, &v))
        return merr(call, "qkv_hidden_sizes or num_heads do not fit the weights");
    call->out_shape[0] = (struct fm_shape){3, {x->dims[0], x->dims[1], v}};
    if (call->node->n_out > 1) {   /* present (2, B, N, S + past, H) */
        const struct fm_tensor *past = IN(call, 4);
        int64_t p = past && past->shape.rank == 5 ? past->shape.dims[3] : 0;
        call->out_shape[1] = (struct fm_shape){5, {2, x->dims[0], call->node->attrs.groups,
                                                   x->dims[1] + p, k / call->node->attrs.groups}};
    }
    return FM_OK;
}

static enum fm_status ms_attention_cost(struct fm_cost_call *call)
{
    const struct fm_shape *x = &call->in[0]->shape, *w = &call->in[1]->shape;
    int64_t q, k, v, n = call->node->attrs.groups;
    attn_widths(call->node, w, &q, &k, &v);
    bool *o = &call->ovf;
    uint64_t bs = fm_cmul(o, (uint64_t)x->dims[0], (uint64_t)x->dims[1]);
    fwd(call, FM_PRIM_MAC, fm_cmul3(o, bs, (uint64_t)x->dims[2], (uint64_t)w->dims[1]));
    if (IN(call, 2))
        fwd(call, FM_PRIM_ADD, fm_cmul(o, bs, (uint64_t)w->dims[1]));
    const struct fm_tensor *past = IN(call, 4);
    int64_t p = past && past->shape.rank == 5 ? past->shape.dims[3] : 0;
    bool mask = IN(call, 3) || IN(call, 5);
    core_ops(call, (uint64_t)x->dims[0], (uint64_t)n, (uint64_t)x->dims[1],
             (uint64_t)(x->dims[1] + p), (uint64_t)(q / n), (uint64_t)(v / n), mask,
             call->node->attrs.flags & FM_ATTR_CAUSAL);
    return done(call);
}

/* MultiHeadAttention: query (B,S,D), key (B,L,D) | (B,N,L,H), value likewise, bias?,
 * key_padding_mask?, attention_bias? ... -> (B,S,Dv) */
struct mha_dims {
    int64_t b, s, l, d, dv, n;
};

static bool mha_dims_get(const struct fm_node *n, const struct fm_tensor *const *in,
                         struct mha_dims *m)
{
    const struct fm_tensor *q = in[0], *k = n->n_in > 1 ? in[1] : NULL,
                           *v = n->n_in > 2 ? in[2] : NULL;
    m->n = n->attrs.groups;
    if (!k || !v || q->shape.rank != 3 || m->n <= 0)
        return false;
    m->b = q->shape.dims[0];
    m->s = q->shape.dims[1];
    m->d = q->shape.dims[2];
    if (k->shape.rank == 3 && v->shape.rank == 3) {
        m->l = k->shape.dims[1];
        m->dv = v->shape.dims[2];
        if (k->shape.dims[2] != m->d || v->shape.dims[1] != m->l)
            return false;
    } else if (k->shape.rank == 4 && v->shape.rank == 4) {
        m->l = k->shape.dims[2];
        m->dv = v->shape.dims[1] * v->shape.dims[3];
        if (k->shape.dims[1] * k->shape.dims[3] != m->d || v->shape.dims[2] != m->l)
            return false;
    } else {
        return false;
    }
    return k->shape.dims[0] == m->b && m->d % m->n == 0 && m->dv % m->n == 0;
}

static enum fm_status mha_shape(struct fm_shape_call *call)
{
    struct mha_dims m;
    if (!mha_dims_get(call->node, call->in, &m))
        return merr(call, "query (B,S,D), key and value (B,L,D) or (B,N,L,H) with D a multiple "
                          "of num_heads are counted (packed QKV is not)");
    call->out_shape[0] = (struct fm_shape){3, {m.b, m.s, m.dv}};
    for (int i = 1; i < call->node->n_out; i++)   /* present key / value (B,N,L,H) */
        call->out_shape[i] = (struct fm_shape){4, {m.b, m.n, m.l, (i == 1 ? m.d : m.dv) / m.n}};
    return FM_OK;
}

static enum fm_status mha_cost(struct fm_cost_call *call)
{
    struct mha_dims m;
    mha_dims_get(call->node, call->in, &m);
    if (IN(call, 3))
        fwd(call, FM_PRIM_ADD, fm_cadd(&call->ovf, fm_cost_numel(call, call->in[0]),
                                       fm_cadd(&call->ovf, fm_cost_numel(call, call->in[1]),
                                               fm_cost_numel(call, call->in[2]))));
    core_ops(call, (uint64_t)m.b, (uint64_t)m.n, (uint64_t)m.s, (uint64_t)m.l,
             (uint64_t)(m.d / m.n), (uint64_t)(m.dv / m.n), IN(call, 4) || IN(call, 5),
             call->node->attrs.flags & FM_ATTR_CAUSAL);
    return done(call);
}

/* RotaryEmbedding: input (B,S,D) or (B,N,S,H), position_ids, cos_cache (P, R/2), sin_cache */
static bool rotary_dims(const struct fm_node *n, const struct fm_tensor *const *in, int64_t *head,
                        int64_t *half)
{
    const struct fm_shape *x = &in[0]->shape, *c = &in[2]->shape;
    if ((x->rank != 3 && x->rank != 4) || c->rank != 2 || c->dims[1] <= 0)
        return false;
    *half = c->dims[1];
    if (x->rank == 4)
        *head = x->dims[3];
    else if (n->attrs.groups > 0 && x->dims[2] % n->attrs.groups == 0)
        *head = x->dims[2] / n->attrs.groups;
    else
        *head = 2 * *half;
    return *head > 0 && 2 * *half <= *head && x->dims[x->rank - 1] % *head == 0;
}

static enum fm_status rotary_shape(struct fm_shape_call *call)
{
    int64_t head, half;
    if (!rotary_dims(call->node, call->in, &head, &half) ||
        !fm_shape_equal(&call->in[2]->shape, &call->in[3]->shape))
        return merr(call, "input (B,S,D) or (B,N,S,H) and cos/sin caches (positions, rotary "
                          "dim / 2) that fit the head size");
    call->out_shape[0] = call->in[0]->shape;
    return FM_OK;
}

static enum fm_status rotary_cost(struct fm_cost_call *call)
{
    int64_t head, half;
    rotary_dims(call->node, call->in, &head, &half);
    bool *o = &call->ovf;
    uint64_t r = fm_cmul(o, fm_cost_numel(call, call->in[0]) / (uint64_t)head, 2 * (uint64_t)half);
    fwd(call, FM_PRIM_MUL, fm_cmul(o, 2, r));
    fwd(call, FM_PRIM_ADD, r);
    return done(call);
}

/* GroupQueryAttention: query (B,S,Dq) [or packed (B,S,(N+2Nkv)H) without key and value], key,
 * value (B,S,Dkv), past_key, past_value (B,Nkv,P,H), seqlens_k, total_sequence_length,
 * cos_cache?, sin_cache?; ints = {kv_num_heads, do_rotary} */
struct gqa_dims {
    int64_t b, s, n, nkv, h, t;
};

static bool gqa_dims_get(const struct fm_node *nd, const struct fm_tensor *const *in,
                         struct gqa_dims *g)
{
    const struct fm_tensor *q = in[0], *k = nd->n_in > 1 ? in[1] : NULL,
                           *pk = nd->n_in > 3 ? in[3] : NULL,
                           *tot = nd->n_in > 6 ? in[6] : NULL;
    g->n = nd->attrs.groups;
    g->nkv = nd->attrs.nints > 0 ? nd->attrs.ints[0] : 0;
    if (q->shape.rank != 3 || g->n <= 0 || g->nkv <= 0 || g->n % g->nkv)
        return false;
    g->b = q->shape.dims[0];
    g->s = q->shape.dims[1];
    int64_t dq = q->shape.dims[2];
    g->h = k ? dq / g->n : dq / (g->n + 2 * g->nkv);
    if (g->h <= 0 || (k && (k->shape.rank != 3 || k->shape.dims[2] != g->h * g->nkv)))
        return false;
    int64_t p = pk && pk->shape.rank == 4 ? pk->shape.dims[2] : 0;
    g->t = tot && tot->ivalue && tot->nvalue == 1 ? tot->ivalue[0] : p + g->s;
    return g->t >= g->s;
}

static enum fm_status gqa_shape(struct fm_shape_call *call)
{
    struct gqa_dims g;
    if (!gqa_dims_get(call->node, call->in, &g))
        return merr(call, "query (B,S,N*H) [packed (B,S,(N+2*kv_num_heads)*H)], key and value "
                          "(B,S,kv_num_heads*H), num_heads a multiple of kv_num_heads");
    call->out_shape[0] = (struct fm_shape){3, {g.b, g.s, g.n * g.h}};
    for (int i = 1; i < call->node->n_out; i++)
        call->out_shape[i] = (struct fm_shape){4, {g.b, g.nkv, g.t, g.h}};
    return FM_OK;
}

static enum fm_status gqa_cost(struct fm_cost_call *call)
{
    struct gqa_dims g;
    gqa_dims_get(call->node, call->in, &g);
    bool *o = &call->ovf;
    if (call->node->attrs.nints > 1 && call->node->attrs.ints[1]) {   /* rotary on Q and K */
        uint64_t r = fm_cmul3(o, (uint64_t)g.b, (uint64_t)g.s,
                              fm_cmul(o, (uint64_t)(g.n + g.nkv), (uint64_t)g.h));
        fwd(call, FM_PRIM_MUL, fm_cmul(o, 2, r));
        fwd(call, FM_PRIM_ADD, r);
    }
    core_ops(call, (uint64_t)g.b, (uint64_t)g.n, (uint64_t)g.s, (uint64_t)g.t, (uint64_t)g.h,
             (uint64_t)g.h, false, true);
    return done(call);
}

const struct fm_op_desc fm_op_fused_matmul_desc = {2, 2, 1, fused_matmul_shape,
                                                   fused_matmul_cost};
const struct fm_op_desc fm_op_fast_gelu_desc = {1, 2, 1, same_shape, gelu_like_cost};
const struct fm_op_desc fm_op_bias_gelu_desc = {2, 2, 1, same_shape, gelu_like_cost};
const struct fm_op_desc fm_op_quick_gelu_desc = {1, 1, 1, same_shape, gelu_like_cost};
const struct fm_op_desc fm_op_bias_add_desc = {3, 3, 1, same_shape, gelu_like_cost};
const struct fm_op_desc fm_op_skip_layernorm_desc = {3, 5, 0, skip_norm_shape, skip_norm_cost};
const struct fm_op_desc fm_op_skip_simplified_layernorm_desc = {3, 4, 0, skip_norm_shape,
                                                                skip_norm_cost};
const struct fm_op_desc fm_op_simplified_layernorm_desc = {2, 2, 0, rms_norm_shape,
                                                           rms_norm_cost};
const struct fm_op_desc fm_op_embed_layernorm_desc = {1, 9, 0, embed_norm_shape,
                                                      embed_norm_cost};
const struct fm_op_desc fm_op_ms_attention_desc = {2, 8, 0, ms_attention_shape,
                                                   ms_attention_cost};
const struct fm_op_desc fm_op_multihead_attention_desc = {3, 10, 0, mha_shape, mha_cost};
const struct fm_op_desc fm_op_rotary_embedding_desc = {4, 4, 1, rotary_shape, rotary_cost};
const struct fm_op_desc fm_op_group_query_attention_desc = {1, 11, 0, gqa_shape, gqa_cost};
