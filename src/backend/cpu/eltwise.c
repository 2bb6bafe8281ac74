/* Activations on oneDNN eltwise primitives, each output in its input's layout: ReLU, LeakyReLU,
 * Clip (ReLU6), Sigmoid, Tanh, SiLU (swish with alpha 1), GELU (erf or tanh form), Hardswish,
 * and Hardsigmoid (oneDNN 2.6 has none: a linear primitive then an in-place clip forward, and a
 * small loop backward). Clip's bounds may be tensors (PyTorch 2's exporter writes ReLU6 as Clip
 * of CastLike'd constants): a bound that traces back to a known constant through casts and
 * reshapes is an attribute like any other; one computed at run time is read by small loops
 * over the plain layout, forward and backward. Tanh and GELU's tanh form are the backend's own
 * vectorised loops (oneDNN 2.6 ran both at a fifth of its other activations' rate). Not here:
 * Softmax, PReLU. */
#include "cpu.h"

#include <math.h>

struct clip_arg;

struct own_arg;

struct act_priv {
    dnnl_primitive_desc_t fwd;
    dnnl_alg_kind_t alg;
    float alpha, beta;
    struct clip_arg *dyn;      /* Clip with bounds known only at run time, or NULL */
    struct own_arg *own;       /* Tanh, GELU's tanh form: the loops below, or NULL */
};

/* The value of a one-element tensor known before the run: a constant, or one passed through
 * Cast (CastLike), Identity, Reshape, Squeeze, Unsqueeze or Flatten from a constant. */
static bool const_scalar(const struct fm_graph *g, fm_tid t, double *v)
{
    for (int depth = 0; depth < 8 && t != FM_NONE; depth++) {
        const struct fm_tensor *x = fm_graph_tensor(g, t);
        if (x->nvalue == 1 && (x->fvalue || x->ivalue)) {
            *v = x->fvalue ? x->fvalue[0] : (double)x->ivalue[0];
            return true;
        }
        if (x->producer == FM_NONE)
            return false;
        const struct fm_node *p = fm_graph_node(g, x->producer);
        switch (p->op) {
        case FM_OP_CAST:
        case FM_OP_IDENTITY:
        case FM_OP_RESHAPE:
        case FM_OP_SQUEEZE:
        case FM_OP_UNSQUEEZE:
        case FM_OP_FLATTEN:
            t = p->in[0];
            break;
        default:
            return false;
        }
    }
    return false;
}

/* Clip's bounds: the attributes, or its tensor inputs when they are known constants; *dynamic
 * is set when a bound is only known at run time. */
static void clip_bounds(const struct fm_graph *g, const struct fm_node *n, double *lo,
                        double *hi, bool *dynamic)
{
    *lo = n->attrs.lo;
    *hi = n->attrs.hi;
    *dynamic = false;
    for (int i = 1; i < 3 && i < n->n_in; i++) {
        double v;
        if (n->in[i] == FM_NONE)
            continue;
        if (const_scalar(g, n->in[i], &v))
            *(i == 1 ? lo : hi) = v;
        else
            *dynamic = true;
    }
}

/* The oneDNN algorithm and parameters of an activation node. */
static bool act_alg(const struct fm_graph *g, const struct fm_node *n, dnnl_alg_kind_t *alg,
                    float *alpha, float *beta)
{
    const struct fm_attrs *a = &n->attrs;
    *alpha = 0.0f;
    *beta = 0.0f;
    switch (n->op) {
    case FM_OP_RELU:
        *alg = dnnl_eltwise_relu;
        return true;
    case FM_OP_LEAKY_RELU:
        *alg = dnnl_eltwise_relu;
        *alpha = (float)a->alpha;
        return true;
    case FM_OP_CLIP: {
        /* clip_v2 passes the gradient where lo < x < hi, as torch.nn.Hardtanh does */
        double lo, hi;
        bool dynamic;
        clip_bounds(g, n, &lo, &hi, &dynamic);
        *alg = dnnl_eltwise_clip_v2;
        *alpha = (float)lo;
        *beta = (float)hi;
        return true;
    }
    case FM_OP_SIGMOID:
        *alg = dnnl_eltwise_logistic;
        return true;
    case FM_OP_TANH:
        *alg = dnnl_eltwise_tanh;
        return true;
    case FM_OP_SILU:
        *alg = dnnl_eltwise_swish;   /* x * sigmoid(alpha * x) */
        *alpha = 1.0f;
        return true;
    case FM_OP_GELU:
        *alg = (a->flags & FM_ATTR_GELU_TANH) ? dnnl_eltwise_gelu_tanh : dnnl_eltwise_gelu_erf;
        return true;
    case FM_OP_HARDSWISH:
        *alg = dnnl_eltwise_hardswish;   /* x * relu6(x + 3) / 6 */
        return true;
    case FM_OP_HARDSIGMOID:
        *alg = dnnl_eltwise_linear;      /* alpha * x + beta, then clipped to [0, 1] */
        *alpha = (float)a->alpha;
        *beta = (float)a->beta;
        return true;
    default:
        return false;
    }
}

enum fm_status fm_cpu_act_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                const struct fm_node *n)
{
    dnnl_alg_kind_t alg;
    float alpha, beta;
    if (!act_alg(g, n, &alg, &alpha, &beta))
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s': activation %s is not supported",
                        n->name, n->op_name);
    if (n->op != FM_OP_CLIP)
        return FM_OK;
    double lo, hi;
    bool dynamic;
    clip_bounds(g, n, &lo, &hi, &dynamic);
    for (int i = 1; i < 3 && i < n->n_in; i++) {
        const struct fm_tensor *b = n->in[i] == FM_NONE ? NULL : fm_graph_tensor(g, n->in[i]);
        if (!b)
            continue;
        uint64_t ne = 0;
        if (fm_shape_numel(&b->shape, &ne) != FM_OK || ne != 1 || !fm_dtype_is_float(b->dtype))
            return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (Clip): bound '%s' is not a "
                            "float scalar; the CPU backend clips by scalars only", n->name,
                            b->name);
        if (fm_graph_needs_grad(g, n->in[i]))
            return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (Clip): bound '%s' takes a "
                            "gradient, which the CPU backend does not compute", n->name,
                            b->name);
    }
    if (!dynamic && !(lo < hi))
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (Clip): bounds [%g, %g] are empty",
                        n->name, lo, hi);
    return FM_OK;
}

/* ---- Clip by bounds computed at run time: plain layout, the bounds read every step ---- */

struct clip_arg {
    uint64_t n;
    int lo, hi;   /* the item's memory holding each bound, or -1 (unbounded) */
};

static void clip_read_bounds(const struct fm_cpu_item *it, const struct clip_arg *c, float *lo,
                             float *hi)
{
    *lo = c->lo < 0 ? -INFINITY : fm_cpu_item_f32(it, c->lo)[0];
    *hi = c->hi < 0 ? INFINITY : fm_cpu_item_f32(it, c->hi)[0];
}

/* memories: x, the bounds given, y */
static enum fm_status clip_dyn_fwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct clip_arg *c = arg;
    float lo, hi;
    clip_read_bounds(it, c, &lo, &hi);
    const float *x = fm_cpu_item_f32(it, 0);
    float *y = fm_cpu_item_f32(it, it->nargs - 1);
    const int64_t n = (int64_t)c->n;
    FM_CPU_PARALLEL
    for (int64_t i = 0; i < n; i++) {
        float v = x[i] < lo ? lo : x[i];   /* ONNX: min(max(x, lo), hi), hi wins if lo > hi */
        y[i] = v > hi ? hi : v;
    }
    return FM_OK;
}

/* memories: x, the bounds given, dy, dx; the gradient passes where lo < x < hi (clip_v2's
 * rule, and torch.nn.Hardtanh's) */
static enum fm_status clip_dyn_bwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct clip_arg *c = arg;
    float lo, hi;
    clip_read_bounds(it, c, &lo, &hi);
    const float *x = fm_cpu_item_f32(it, 0), *dy = fm_cpu_item_f32(it, it->nargs - 2);
    float *dx = fm_cpu_item_f32(it, it->nargs - 1);
    const int64_t n = (int64_t)c->n;
    FM_CPU_PARALLEL
    for (int64_t i = 0; i < n; i++)
        dx[i] = x[i] > lo && x[i] < hi ? dy[i] : 0.0f;
    return FM_OK;
}

/* The memories x, lo?, hi? in plain layout for node id in phase ph; *c says where the bounds
 * are. Returns the count. */
static enum fm_status clip_dyn_inputs(struct fm_cpu *s, fm_nid id, enum fm_phase ph,
                                      struct clip_arg *c, dnnl_memory_t *mems, int *nm)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    enum fm_status st = fm_cpu_input_plain(s, id, ph, n->in[0], false, &mems[0]);
    *nm = 1;
    c->lo = c->hi = -1;
    for (int i = 1; !st && i < 3 && i < n->n_in; i++) {
        if (n->in[i] == FM_NONE)
            continue;
        *(i == 1 ? &c->lo : &c->hi) = *nm;
        st = fm_cpu_input_plain(s, id, ph, n->in[i], false, &mems[(*nm)++]);
    }
    return st;
}

static enum fm_status clip_dyn_plan_fwd(struct fm_cpu *s, fm_nid id, struct act_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    p->dyn = fm_cpu_buf(s, sizeof(*p->dyn));
    if (!p->dyn)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    dnnl_memory_t mems[4];
    int nm;
    enum fm_status st = clip_dyn_inputs(s, id, FM_PHASE_FWD, p->dyn, mems, &nm);
    if (!st)
        st = fm_cpu_place_out(s, n->out[0]);
    if (st)
        return st;
    p->dyn->n = s->t[n->out[0]].numel;
    mems[nm++] = s->t[n->out[0]].val_mem;
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, clip_dyn_fwd, p->dyn, mems, nm);
}

static enum fm_status clip_dyn_plan_bwd(struct fm_cpu *s, fm_nid id, struct act_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    dnnl_memory_t mems[5];
    int nm;
    struct fm_cpu_sink sk;
    enum fm_status st = clip_dyn_inputs(s, id, FM_PHASE_BWD_DATA, p->dyn, mems, &nm);
    if (!st)
        st = fm_cpu_input_plain(s, id, FM_PHASE_BWD_DATA, n->out[0], true, &mems[nm++]);
    if (!st)
        st = fm_cpu_sink_plain(s, id, FM_PHASE_BWD_DATA, n->in[0], &sk, &mems[nm]);
    if (st || !mems[nm])
        return st;
    nm++;
    st = fm_cpu_add_fn(s, id, FM_PHASE_BWD_DATA, clip_dyn_bwd, p->dyn, mems, nm);
    return st ? st : fm_cpu_sink_end(s, &sk);
}

/* ---- Tanh and GELU's tanh form: own loops over the whole buffer ----
 * Elementwise, so the layout does not matter: the output is in the input's layout and the
 * loops run over every element of the buffer, padding included (both functions map 0 to 0,
 * and the padding of dy is zero, so that of dx is too). The backward works from x (kept for
 * the backward of every activation here). */

enum own_kind { OWN_TANH, OWN_GELU_TANH };

struct own_arg {
    enum own_kind kind;
    int64_t n;                   /* elements of the buffers */
};

#define OWN_CHUNK 4096                 /* elements a thread takes at a time */
#define OWN_PARALLEL_MIN (1 << 15)     /* elements below which one thread does all */
#define GELU_C 0.797884560802865356f  /* sqrt(2 / pi) */
#define GELU_A 0.044715f

/* GELU's tanh form through sigma(2u) = (1 + tanh(u)) / 2, with e = exp(-2|u|):
 * sigma(2|u|) = 1 / (1 + e), sigma(-2|u|) = e / (1 + e), chosen by u's sign bit; 1 - tanh(u)^2
 * = 4 sigma(2u) sigma(-2u). Neither cancels for large |u|, where 1 + tanh(u) would. */
FM_CPU_INLINE void gelu_tanh_parts(float x, float *sig, float *sech2)
{
    float u = GELU_C * (x + GELU_A * x * x * x);
    union { float f; uint32_t u; } v = {.f = u};
    const uint32_t neg = (uint32_t)((int32_t)v.u >> 31);   /* all ones where u < 0 */
    v.u &= 0x7FFFFFFFu;
    float e = fm_cpu_exp_neg(-2.0f * v.f), q = 1.0f / (1.0f + e);
    union { float f; uint32_t u; } hi = {.f = q}, lo = {.f = e * q};
    /* beyond |u| = 43.5 exp_neg's clamp would leave sigma(-2|u|) at 1.6e-38, and x times it
     * at -1e20 is -1.6e-18: it is 0 there (as 1 + tanh(u) is in float) */
    lo.u &= ~(0u - (uint32_t)(v.u > 0x422E0000u));   /* the bits of 43.5f */
    *sig = (union { uint32_t u; float f; }){.u = (lo.u & neg) | (hi.u & ~neg)}.f;
    *sech2 = 4.0f * hi.f * lo.f;
}

FM_CPU_CLONES
static void own_fwd_chunk(enum own_kind kind, const float *x, float *y, int64_t n)
{
    if (kind == OWN_TANH) {
        FM_CPU_SIMD
        for (int64_t i = 0; i < n; i++)
            y[i] = fm_cpu_tanh(x[i]);
        return;
    }
    FM_CPU_SIMD
    for (int64_t i = 0; i < n; i++) {
        float sig, sech2;
        gelu_tanh_parts(x[i], &sig, &sech2);
        y[i] = x[i] * sig;
    }
}

FM_CPU_CLONES
static void own_bwd_chunk(enum own_kind kind, const float *x, const float *dy, float *dx,
                          int64_t n)
{
    /* 1 - tanh(x)^2 = 4 e / (1 + e)^2 with e = exp(-2|x|): from tanh itself it would cancel
     * (1e-5 relative at x = 3, all of it from x = 9) */
    if (kind == OWN_TANH) {
        FM_CPU_SIMD
        for (int64_t i = 0; i < n; i++) {
            union { float f; uint32_t u; } a = {.f = x[i]};
            a.u &= 0x7FFFFFFFu;
            float e = fm_cpu_exp_neg(-2.0f * a.f), q = 1.0f / (1.0f + e);
            dx[i] = dy[i] * (4.0f * e * q * q);
        }
        return;
    }
    /* d/dx x sigma(2u) = sigma(2u) + x (1 - tanh(u)^2) / 2 du/dx */
    FM_CPU_SIMD
    for (int64_t i = 0; i < n; i++) {
        float sig, sech2, v = x[i];
        gelu_tanh_parts(v, &sig, &sech2);
        /* du/dx from x with |x| at most 16 (u = 159 there: sech2 is 0), so that v^2 cannot
         * overflow into 0 x inf */
        union { float f; uint32_t u; } c = {.f = v};
        const uint32_t mag = c.u & 0x7FFFFFFFu;
        c.u = (c.u & 0x80000000u) | (mag < 0x41800000u ? mag : 0x41800000u);   /* 16.0f */
        v = c.f;
        float du = GELU_C * (1.0f + 3.0f * GELU_A * v * v);
        dx[i] = dy[i] * (sig + (0.5f * v * sech2) * du);
    }
}

/* memories: x, y */
static enum fm_status own_fwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct own_arg *o = arg;
    const float *x = fm_cpu_item_f32(it, 0);
    float *y = fm_cpu_item_f32(it, 1);
    const int64_t n = o->n, chunks = (n + OWN_CHUNK - 1) / OWN_CHUNK;
    FM_CPU_PARALLEL_IF(n >= OWN_PARALLEL_MIN)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t i = c * OWN_CHUNK;
        own_fwd_chunk(o->kind, x + i, y + i, n - i < OWN_CHUNK ? n - i : OWN_CHUNK);
    }
    return FM_OK;
}

/* memories: x, dy, dx */
static enum fm_status own_bwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct own_arg *o = arg;
    const float *x = fm_cpu_item_f32(it, 0), *dy = fm_cpu_item_f32(it, 1);
    float *dx = fm_cpu_item_f32(it, 2);
    const int64_t n = o->n, chunks = (n + OWN_CHUNK - 1) / OWN_CHUNK;
    FM_CPU_PARALLEL_IF(n >= OWN_PARALLEL_MIN)
    for (int64_t c = 0; c < chunks; c++) {
        int64_t i = c * OWN_CHUNK;
        own_bwd_chunk(o->kind, x + i, dy + i, dx + i, n - i < OWN_CHUNK ? n - i : OWN_CHUNK);
    }
    return FM_OK;
}

static enum fm_status own_plan_fwd(struct fm_cpu *s, fm_nid id, struct act_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const dnnl_memory_desc_t *xmd = &s->t[n->in[0]].md;
    p->own = fm_cpu_buf(s, sizeof(*p->own));
    if (!p->own)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    p->own->kind = n->op == FM_OP_TANH ? OWN_TANH : OWN_GELU_TANH;
    p->own->n = (int64_t)(s->t[n->in[0]].size / sizeof(float));
    enum fm_status st = fm_cpu_place(s, n->out[0], xmd);
    if (st)
        return st;
    dnnl_memory_t mems[2] = {s->t[n->in[0]].val_mem, s->t[n->out[0]].val_mem};
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, own_fwd, p->own, mems, 2);
}

static enum fm_status own_plan_bwd(struct fm_cpu *s, fm_nid id, struct act_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const dnnl_memory_desc_t *xmd = &s->t[n->in[0]].md;
    dnnl_memory_t m_dd, m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true, xmd, &m_dd);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0], xmd, &sk, &m_dx);
    if (st || !m_dx)
        return st;
    dnnl_memory_t mems[3] = {s->t[n->in[0]].val_mem, m_dd, m_dx};
    st = fm_cpu_add_fn(s, id, FM_PHASE_BWD_DATA, own_bwd, p->own, mems, 3);
    return st ? st : fm_cpu_sink_end(s, &sk);
}

enum fm_status fm_cpu_act_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct act_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    if (n->op == FM_OP_CLIP) {
        double lo, hi;
        bool dynamic;
        clip_bounds(s->g, n, &lo, &hi, &dynamic);
        if (dynamic)
            return clip_dyn_plan_fwd(s, id, p);
    }
    if (n->op == FM_OP_TANH || (n->op == FM_OP_GELU && (n->attrs.flags & FM_ATTR_GELU_TANH)))
        return own_plan_fwd(s, id, p);
    act_alg(s->g, n, &p->alg, &p->alpha, &p->beta);
    const dnnl_memory_desc_t *xmd = &s->t[n->in[0]].md;
    dnnl_eltwise_desc_t d;
    enum fm_status st = FM_OK;
    dnnl_prop_kind_t prop = s->train ? dnnl_forward_training : dnnl_forward_inference;
    FM_DNNL_TRY(s, dnnl_eltwise_forward_desc_init(&d, prop, p->alg, xmd, p->alpha, p->beta));
    st = fm_cpu_pd(s, id, &d, NULL, &p->fwd);
    if (!st)
        st = fm_cpu_place(s, n->out[0], xmd);
    if (st)
        goto out;
    dnnl_memory_t y = s->t[n->out[0]].val_mem;
    {
        struct fm_cpu_arg args[2] = {{DNNL_ARG_SRC, s->t[n->in[0]].val_mem}, {DNNL_ARG_DST, y}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, p->fwd, args, 2);
    }
    if (!st && n->op == FM_OP_HARDSIGMOID) {
        dnnl_primitive_desc_t clip;
        FM_DNNL_TRY(s, dnnl_eltwise_forward_desc_init(&d, prop, dnnl_eltwise_clip_v2, xmd, 0.0f,
                                                      1.0f));
        st = fm_cpu_pd(s, id, &d, NULL, &clip);
        struct fm_cpu_arg args[2] = {{DNNL_ARG_SRC, y}, {DNNL_ARG_DST, y}};
        if (!st)
            st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, clip, args, 2);
    }
out:
    return st;
}

struct hsig_arg {
    size_t n;                    /* elements of the (padded) buffers */
    float alpha, beta;
};

/* d/dx clip(alpha*x + beta, 0, 1) = alpha inside (0, 1), 0 outside (PyTorch's
 * hardsigmoid_backward uses the open interval -3 < x < 3 for alpha 1/6, beta 1/2). Memories:
 * x, dy, dx, all in x's layout; zero padding stays zero because dy is zero there. */
static enum fm_status hardsigmoid_bwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct hsig_arg *h = arg;
    const float *x = fm_cpu_item_f32(it, 0), *dy = fm_cpu_item_f32(it, 1);
    float *dx = fm_cpu_item_f32(it, 2);
    for (size_t i = 0; i < h->n; i++) {
        float u = h->alpha * x[i] + h->beta;
        dx[i] = (u > 0.0f && u < 1.0f) ? dy[i] * h->alpha : 0.0f;
    }
    return FM_OK;
}

/* Whether md is a blocked layout whose channels are padded to the block (184 channels in
 * blocks of 16): oneDNN 2.6 runs some backward activations (Hardswish's) over such layouts in
 * its reference code, 50 times slower than over dense memory. */
static bool padded(const dnnl_memory_desc_t *md)
{
    for (int i = 0; i < md->ndims; i++) {
        if (md->padded_dims[i] != md->dims[i])
            return true;
    }
    return false;
}

/* The backward of an activation over a padded layout as one over the whole buffer seen as a
 * dense vector: elementwise, so the layout does not matter; the padding of dy is zero, so
 * that of dx is too. */
static enum fm_status bwd_flat(struct fm_cpu *s, fm_nid id, const struct act_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const dnnl_memory_desc_t *xmd = &s->t[n->in[0]].md;
    int64_t len = (int64_t)(s->t[n->in[0]].size / sizeof(float));
    dnnl_memory_desc_t flat;
    fm_cpu_md_plain(&flat, 1, &len);
    dnnl_eltwise_desc_t fd, d;
    dnnl_primitive_desc_t hint, pd;
    dnnl_memory_t m_x, m_dd, m_dx, v_dd, v_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_eltwise_forward_desc_init(&fd, dnnl_forward_training, p->alg, &flat,
                                                  p->alpha, p->beta));
    FM_DNNL_TRY(s, dnnl_eltwise_backward_desc_init(&d, p->alg, &flat, &flat, p->alpha, p->beta));
    st = fm_cpu_pd(s, id, &fd, NULL, &hint);
    if (!st)
        st = fm_cpu_pd(s, id, &d, hint, &pd);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true, xmd, &m_dd);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0], xmd, &sk, &m_dx);
    if (!st)
        st = fm_cpu_mem_view(s, s->t[n->in[0]].val_mem, &flat, &m_x);
    if (!st)
        st = fm_cpu_mem_view(s, m_dd, &flat, &v_dd);
    if (!st)
        st = fm_cpu_mem_view(s, m_dx, &flat, &v_dx);
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_SRC, m_x}, {DNNL_ARG_DIFF_DST, v_dd},
                                     {DNNL_ARG_DIFF_SRC, v_dx}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_BWD_DATA, pd, args, 3);
    }
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
out:
    return st;
}

enum fm_status fm_cpu_act_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct act_priv *p = s->nodes[id].priv;
    const dnnl_memory_desc_t *xmd = &s->t[n->in[0]].md;
    dnnl_memory_t m_dd, m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = FM_OK;
    if (p->dyn)
        return clip_dyn_plan_bwd(s, id, p);
    if (p->own)
        return own_plan_bwd(s, id, p);
    if (n->op == FM_OP_HARDSIGMOID) {
        struct hsig_arg *h = fm_cpu_buf(s, sizeof(*h));
        if (!h)
            return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true, xmd, &m_dd);
        if (!st)
            st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0], xmd, &sk, &m_dx);
        if (st)
            return st;
        h->n = s->t[n->in[0]].size / sizeof(float);
        h->alpha = p->alpha;
        h->beta = p->beta;
        dnnl_memory_t mems[3] = {s->t[n->in[0]].val_mem, m_dd, m_dx};
        st = fm_cpu_add_fn(s, id, FM_PHASE_BWD_DATA, hardsigmoid_bwd, h, mems, 3);
        if (st)
            return st;
        return fm_cpu_sink_end(s, &sk);
    }
    if (padded(xmd))
        return bwd_flat(s, id, p);
    dnnl_eltwise_desc_t d;
    dnnl_primitive_desc_t pd;
    FM_DNNL_TRY(s, dnnl_eltwise_backward_desc_init(&d, p->alg, xmd, xmd, p->alpha, p->beta));
    st = fm_cpu_pd(s, id, &d, p->fwd, &pd);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true,
                          fm_cpu_pd_md(pd, DNNL_ARG_DIFF_DST), &m_dd);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0],
                               fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SRC), &sk, &m_dx);
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_SRC, s->t[n->in[0]].val_mem},
                                     {DNNL_ARG_DIFF_DST, m_dd}, {DNNL_ARG_DIFF_SRC, m_dx}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_BWD_DATA, pd, args, 3);
    }
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
out:
    return st;
}
