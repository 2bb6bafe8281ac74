/* Add and Mul with numpy broadcasting on oneDNN binary primitives (residual additions,
 * squeeze-excitation scaling). The operand with the output's shape goes first; the other is
 * broadcast (oneDNN broadcasts the second source only). Backward: the full operand's gradient
 * is dy (Add) or dy * other (Mul); a broadcast operand sums its gradient over the broadcast
 * dims with a reduction primitive. Both operands broadcast (a column plus a row) and integer
 * operands go to ewise.c's general elementwise path instead. Not here: Sub, Div. */
#include "cpu.h"

struct binary_priv {
    int full, other;                  /* input indices: output-shaped one, the other */
    bool broadcast;                   /* other's shape differs from the output's */
    int rank;
    int64_t odims[FM_MAX_DIMS];       /* other's dims, right-aligned to the output's rank */
    dnnl_memory_t m_full, m_other;    /* the sources as the forward read them */
    struct plane_scale *scale;        /* Mul by an (N, C, 1, 1) operand: scale_plane's table */
};

/* y = x * k[n, c] over each (H, W) plane of a 4-D x, the squeeze-excitation multiply. oneDNN
 * 2.6's binary has no vectorized code for a per-(N, C) broadcast and runs its reference code
 * (6 ms where this takes 0.2 for MobileNetV3's and RegNetY's blocks). k may also be one scale
 * per channel for every sample, (1, C, 1, 1): ConvNeXt's layer scale, whose per-channel
 * broadcast oneDNN vectorizes along the plane only, 8 times slower per element over the 2x2
 * planes of its last stage than over 16x16 (0.27 ms for 98K elements at batch 32). x, y (and
 * dy, dx in the backward) share one layout; base holds each plane's offset in it, channels
 * padded to the layout's block included (their scale is 0, so padding stays zero); k is plain
 * (kn, kc). */
struct plane_scale {
    int64_t n, c, cp;                 /* batch, channels, channels with padding */
    int64_t kn;                       /* k's samples: n, or 1 (the same scales for every one) */
    int64_t kc;                       /* k's channels: c, or 1 (one scale per sample) */
    int64_t h, w, sh, sw;             /* plane dims and their strides in the layout */
    int64_t blk;                      /* the channel block (1: none) */
    int64_t *base;                    /* n * cp plane offsets */
};

/* The table for md when its layout allows one: blocked, at most one inner block and that on
 * the channels, planes not blocked. NULL otherwise (oneDNN's binary then runs it). */
static struct plane_scale *plane_scale_new(struct fm_cpu *s, const dnnl_memory_desc_t *md,
                                           int64_t kn, int64_t kc)
{
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    if (md->ndims != 4 || md->format_kind != dnnl_blocked || b->inner_nblks > 1 ||
        (b->inner_nblks == 1 && b->inner_idxs[0] != 1))
        return NULL;
    int64_t blk = b->inner_nblks ? b->inner_blks[0] : 1;
    struct plane_scale *t = fm_cpu_buf(s, sizeof(*t));
    if (!t)
        return NULL;
    t->n = md->dims[0];
    t->c = md->dims[1];
    t->kn = kn;
    t->kc = kc;
    t->cp = md->padded_dims[1];
    t->h = md->dims[2];
    t->w = md->dims[3];
    t->sh = b->strides[2];
    t->sw = b->strides[3];
    t->blk = blk;
    t->base = fm_cpu_buf(s, sizeof(int64_t) * (size_t)(t->n * t->cp));
    if (!t->base)
        return NULL;
    for (int64_t i = 0; i < t->n; i++) {
        for (int64_t c = 0; c < t->cp; c++)
            t->base[i * t->cp + c] =
                md->offset0 + i * b->strides[0] + c / blk * b->strides[1] + c % blk;
    }
    return t;
}

/* k's scale of sample i, channel c (c < t->c) */
static inline float plane_k(const struct plane_scale *t, const float *k, int64_t i, int64_t c)
{
    return k[(t->kn == 1 ? 0 : i) * t->kc + (t->kc == 1 ? 0 : c)];
}

/* Whether t's planes are channel-blocked by 8 or 16 (nChw8c, nChw16c): each (sample, block)
 * h * w runs of blk channels. */
static bool plane_blocked(const struct plane_scale *t)
{
    return (t->blk == 8 || t->blk == 16) && t->sw == t->blk && t->sh == t->w * t->blk;
}

/* scale_plane over channel-blocked planes, B (8 or 16) a constant where it is inlined: each
 * (sample, block) read once in order instead of once per channel */
static inline __attribute__((always_inline)) void
scale_blocks(const struct plane_scale *t, const float *restrict x, const float *restrict k,
             float *restrict y, const int64_t B)
{
    const int64_t nb = t->cp / B, hw = t->h * t->w;
    FM_CPU_PARALLEL
    for (int64_t ib = 0; ib < t->n * nb; ib++) {
        const int64_t i = ib / nb, c0 = ib % nb * B;
        float f[16];
        for (int64_t b = 0; b < B; b++)
            f[b] = c0 + b < t->c ? plane_k(t, k, i, c0 + b) : 0.0f;
        const int64_t o = t->base[i * t->cp + c0];
        for (int64_t q = 0; q < hw; q++) {
            for (int64_t b = 0; b < B; b++)
                y[o + q * B + b] = x[o + q * B + b] * f[b];
        }
    }
}

/* items: x, k (plain kn x kc), y */
static enum fm_status scale_plane(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct plane_scale *t = arg;
    const float *restrict x = fm_cpu_item_f32(it, 0), *restrict k = fm_cpu_item_f32(it, 1);
    float *restrict y = fm_cpu_item_f32(it, 2);
    const int64_t hw = t->h * t->w;
    if (plane_blocked(t)) {
        if (t->blk == 8)
            scale_blocks(t, x, k, y, 8);
        else
            scale_blocks(t, x, k, y, 16);
        return FM_OK;
    }
    FM_CPU_PARALLEL
    for (int64_t ic = 0; ic < t->n * t->cp; ic++) {
        const int64_t i = ic / t->cp, c = ic % t->cp;
        const float f = c < t->c ? plane_k(t, k, i, c) : 0.0f;
        const int64_t b = t->base[ic];
        if (t->sw == 1 && t->sh == t->w) {   /* a plain plane: one run */
            for (int64_t q = 0; q < hw; q++)
                y[b + q] = x[b + q] * f;
            continue;
        }
        for (int64_t h = 0; h < t->h; h++) {
            const int64_t o = b + h * t->sh;
            for (int64_t w = 0; w < t->w; w++)
                y[o + w * t->sw] = x[o + w * t->sw] * f;
        }
    }
    return FM_OK;
}

/* Whether other (dims odims) scales the planes of a 4-D output (dims y): (N, C, 1, 1), or
 * (N, 1, 1, 1), one scale per sample: stochastic depth as torchvision draws it (ConvNeXt's
 * blocks ran 21 ms in oneDNN's reference binary for what takes under 1 here). N = 1 too:
 * oneDNN 2.6 vectorizes its per-channel broadcast only when both sources share one blocked
 * layout, and RegNetY-400MF's convolutions at batch 1 write nChw8c where the scale comes in
 * nChw16c: its reference code took 14 ms for one squeeze-excitation Mul that takes 0.07 here. */
static bool plane_broadcast(const struct binary_priv *p, const struct fm_shape *y)
{
    bool per_sample = p->odims[0] == y->dims[0] && (p->odims[1] == y->dims[1] || p->odims[1] == 1);
    /* (1, C, 1, 1) over planes of under 64 elements; from 8x8 oneDNN's own is as fast */
    bool per_channel = p->odims[0] == 1 && p->odims[1] == y->dims[1] &&
                       y->dims[2] * y->dims[3] < 64;
    return p->rank == 4 && p->broadcast && (per_sample || per_channel) && p->odims[2] == 1 &&
           p->odims[3] == 1;
}

static bool same_shape(const struct fm_shape *a, const struct fm_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++) {
        if (a->dims[i] != b->dims[i])
            return false;
    }
    return true;
}

/* Whether oneDNN 2.6's binary has vectorized code for broadcasting an operand of dims o (its
 * own rank) against y: one element, one value per channel (dim 1), trailing dims (leading
 * ones, then y's dims: a bias or a LayerNorm weight over the last dims), or a 4-D plane
 * pattern (N, C or 1, 1, 1), which scale_plane takes. Anything else runs its reference code
 * (Swin's attention mask, (1, 4, 12, 49, 49) + (1, 4, 1, 49, 49), 7 ms a layer). */
static bool onednn_broadcast(const struct fm_shape *o, const struct fm_shape *y)
{
    int64_t od[FM_MAX_DIMS];
    bool scalar = true, channel = y->rank >= 2, trailing = true, seen = false;
    for (int i = 0; i < y->rank; i++) {
        int k = i - (y->rank - o->rank);
        od[i] = k >= 0 ? o->dims[k] : 1;
        scalar = scalar && od[i] == 1;
        channel = channel && (i == 1 ? od[i] == y->dims[i] : od[i] == 1);
        seen = seen || od[i] != 1;
        trailing = trailing && (seen ? od[i] == y->dims[i] : od[i] == 1);
    }
    bool plane = y->rank == 4 && od[0] == y->dims[0] && (od[1] == y->dims[1] || od[1] == 1) &&
                 od[2] == 1 && od[3] == 1;
    return scalar || channel || trailing || plane;
}

/* Whether ewise.c runs the node: oneDNN binary broadcasts its second source only, takes no
 * int32 operands here, and runs some broadcasts with its reference code. */
static bool general(const struct fm_graph *g, const struct fm_node *n)
{
    const struct fm_tensor *y = fm_graph_tensor(g, n->out[0]);
    const struct fm_tensor *a = fm_graph_tensor(g, n->in[0]), *b = fm_graph_tensor(g, n->in[1]);
    if (!fm_dtype_is_float(a->dtype) || !fm_dtype_is_float(b->dtype))
        return true;
    if (same_shape(&a->shape, &y->shape))
        return !onednn_broadcast(&b->shape, &y->shape);
    if (same_shape(&b->shape, &y->shape))
        return !onednn_broadcast(&a->shape, &y->shape);
    return true;
}

enum fm_status fm_cpu_binary_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                   const struct fm_node *n)
{
    if (n->n_in != 2 || n->in[0] == FM_NONE || n->in[1] == FM_NONE)
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (%s): needs two operands", n->name,
                        n->op_name);
    if (general(g, n))
        return fm_cpu_ewise_check(ctx, g, n);
    const struct fm_shape *y = &fm_graph_tensor(g, n->out[0])->shape;
    if (y->rank == 0 || y->rank > 6)
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (%s): rank %d", n->name,
                        n->op_name, y->rank);
    return FM_OK;
}

enum fm_status fm_cpu_binary_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    if (general(s->g, n))
        return fm_cpu_ewise_fwd(s, id);
    const struct fm_shape *y = &fm_graph_tensor(s->g, n->out[0])->shape;
    struct binary_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    p->full = same_shape(&fm_graph_tensor(s->g, n->in[0])->shape, y) ? 0 : 1;
    p->other = 1 - p->full;
    const struct fm_shape *o = &fm_graph_tensor(s->g, n->in[p->other])->shape;
    p->broadcast = !same_shape(o, y);
    p->rank = y->rank;
    for (int i = 0; i < y->rank; i++) {
        int k = i - (y->rank - o->rank);
        p->odims[i] = k >= 0 ? o->dims[k] : 1;
    }
    enum fm_status st = fm_cpu_ensure(s, n->in[p->full]);
    if (st)
        return st;
    const dnnl_memory_desc_t *fmd = &s->t[n->in[p->full]].md;
    p->m_full = s->t[n->in[p->full]].val_mem;
    if (n->op == FM_OP_MUL && plane_broadcast(p, y) && (p->scale = plane_scale_new(s, fmd, p->odims[0], p->odims[1]))) {
        st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, n->in[p->other], false, &p->m_other);
        if (!st)
            st = fm_cpu_place(s, n->out[0], fmd);
        if (st)
            return st;
        dnnl_memory_t mems[3] = {p->m_full, p->m_other, s->t[n->out[0]].val_mem};
        return fm_cpu_add_fn(s, id, FM_PHASE_FWD, scale_plane, p->scale, mems, 3);
    }
    dnnl_memory_desc_t omd, dst;
    if (p->broadcast) {
        /* keep the other's layout when its rank already matches, else a plain view */
        st = fm_cpu_ensure(s, n->in[p->other]);
        if (st)
            return st;
        if (o->rank == y->rank)
            omd = s->t[n->in[p->other]].md;
        else
            fm_cpu_md_plain(&omd, p->rank, p->odims);
    } else {
        omd = *fmd;   /* same layout as the first source: oneDNN's fast path */
    }
    st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[p->other], false, &omd, &p->m_other);
    if (st)
        return st;
    fm_cpu_md_any(&dst, p->rank, y->dims);
    dnnl_binary_desc_t d;
    dnnl_primitive_desc_t pd;
    FM_DNNL_TRY(s, dnnl_binary_desc_init(&d, n->op == FM_OP_ADD ? dnnl_binary_add : dnnl_binary_mul,
                                         fmd, &omd, &dst));
    st = fm_cpu_pd(s, id, &d, NULL, &pd);
    if (!st)
        st = fm_cpu_place(s, n->out[0], fm_cpu_pd_md(pd, DNNL_ARG_DST));
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_SRC_0, p->m_full}, {DNNL_ARG_SRC_1, p->m_other},
                                     {DNNL_ARG_DST, s->t[n->out[0]].val_mem}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, pd, args, 3);
    }
out:
    return st;
}

/* dst = a * b with b broadcast; dst in a's layout */
static enum fm_status mul_into(struct fm_cpu *s, fm_nid id, enum fm_phase ph, dnnl_memory_t a,
                               dnnl_memory_t b, const dnnl_memory_desc_t *dmd, dnnl_memory_t dst)
{
    dnnl_binary_desc_t d;
    dnnl_primitive_desc_t pd;
    enum fm_status st = FM_OK;
    FM_DNNL_TRY(s, dnnl_binary_desc_init(&d, dnnl_binary_mul, fm_cpu_mem_md(a), fm_cpu_mem_md(b),
                                         dmd));
    st = fm_cpu_pd(s, id, &d, NULL, &pd);
    if (!st) {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, dst}};
        st = fm_cpu_add_prim(s, id, ph, pd, args, 3);
    }
out:
    return st;
}

static enum fm_phase grad_phase(const struct fm_cpu *s, fm_tid tid)
{
    return fm_graph_tensor(s->g, tid)->role == FM_ROLE_PARAM ? FM_PHASE_BWD_WEIGHT
                                                             : FM_PHASE_BWD_DATA;
}

/* Sum over H and W of a 4-D src into (N, C, 1, 1), the squeeze-excitation case: an average
 * pooling over the whole plane with a linear post-op that multiplies by H*W. oneDNN 2.6's
 * reduction primitive has only reference code for blocked layouts (60 ms where this takes
 * under 1). false in *ok when oneDNN cannot (the reduction then does it). */
static enum fm_status plane_sum(struct fm_cpu *s, fm_nid id, enum fm_phase ph, fm_tid tid,
                                dnnl_memory_t src, const int64_t *odims, bool *ok)
{
    const dnnl_memory_desc_t *smd = fm_cpu_mem_md(src);
    dnnl_memory_desc_t dst;
    fm_cpu_md_any(&dst, 4, odims);
    dnnl_dims_t k = {smd->dims[2], smd->dims[3]}, zero = {0, 0};
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_pooling_v2_desc_t d;
    dnnl_memory_t m_dst;
    struct fm_cpu_sink sk;
    enum fm_status st = FM_OK;
    *ok = false;
    FM_DNNL_TRY(s, dnnl_primitive_attr_create(&attr));
    FM_DNNL_TRY(s, dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    FM_DNNL_TRY(s, dnnl_post_ops_create(&po));
    FM_DNNL_TRY(s, dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear,
                                                (float)(k[0] * k[1]), 0.0f));
    FM_DNNL_TRY(s, dnnl_primitive_attr_set_post_ops(attr, po));
    FM_DNNL_TRY(s, dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference,
                                                     dnnl_pooling_avg_exclude_padding, smd, &dst,
                                                     k, k, zero, zero, zero));
    if (dnnl_primitive_desc_create(&pd, &d, attr, s->engine, NULL) != dnnl_success)
        goto out;
    st = fm_cpu_keep_pd(s, pd);
    if (!st)
        st = fm_cpu_sink_begin(s, id, ph, tid, fm_cpu_pd_md(pd, DNNL_ARG_DST), &sk, &m_dst);
    if (st || !m_dst)
        goto out;
    {
        struct fm_cpu_arg args[2] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, m_dst}};
        st = fm_cpu_add_prim(s, id, ph, pd, args, 2);
    }
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
    *ok = st == FM_OK;
out:
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

/* items: src (the layout of t), dst plain (C): dst[c] = the sum of src over every sample and
 * plane of channel c. A per-channel parameter's gradient (ConvNeXt's layer scale, (C, 1, 1)
 * times an (N, C, H, W) activation): oneDNN 2.6's reduction has only reference code for blocked
 * layouts (8 ms where this takes under 1). */
static enum fm_status sum_channels(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct plane_scale *t = arg;
    const float *x = fm_cpu_item_f32(it, 0);
    float *y = fm_cpu_item_f32(it, 1);
    FM_CPU_PARALLEL
    for (int64_t c = 0; c < t->c; c++) {
        double acc = 0.0;
        for (int64_t i = 0; i < t->n; i++) {
            const int64_t b = t->base[i * t->cp + c];
            for (int64_t h = 0; h < t->h; h++) {
                const int64_t o = b + h * t->sh;
                float row = 0.0f;
                for (int64_t w = 0; w < t->w; w++)
                    row += x[o + w * t->sw];
                acc += row;
            }
        }
        y[c] = (float)acc;
    }
    return FM_OK;
}

/* The gradient of scale_plane's k: dk[i, c] = the sum over the plane of dy * x (and over the
 * samples, for one k of every sample), in one pass instead of a product into scratch and a
 * reduction of it. oneDNN 2.6 reduced the product with an average pooling whose fixed cost
 * over 2x2 planes made RegNetY-400MF's last squeeze-excitation Muls 5x their calibrated time
 * at batch 32 (0.23 ms for the backward of 56K elements). out: o0 + i * os0 + c / ob * os1 +
 * c % ob, the layout of k's gradient (plain, or channel-blocked (N, C, 1, 1)), written in
 * full, channel padding with zeros. */
struct scale_grad {
    const struct plane_scale *t;
    int64_t o0, os0, os1, ob, ocp;    /* out's offsets; its channels with padding */
};

/* out's element of k's sample i0 (0 for one k of every sample), channel c */
static inline int64_t grad_at(const struct scale_grad *g, int64_t i0, int64_t c)
{
    return g->o0 + i0 * g->os0 + c / g->ob * g->os1 + c % g->ob;
}

/* scale_grad_exec over channel-blocked planes, B (8 or 16) a constant where it is inlined: B
 * sums a (sample, block), over its h * w runs (and the samples, for one k of every sample) */
static inline __attribute__((always_inline)) void
grad_blocks(const struct scale_grad *g, const float *restrict dy, const float *restrict x,
            float *restrict out, const int64_t B)
{
    const struct plane_scale *t = g->t;
    const int64_t nb = t->cp / B, hw = t->h * t->w, kn = t->kn, per = kn == 1 ? t->n : 1;
    FM_CPU_PARALLEL
    for (int64_t kb = 0; kb < kn * nb; kb++) {
        const int64_t i0 = kb / nb, c0 = kb % nb * B;
        /* four sums a lane, so that the multiply-adds of consecutive pixels do not wait on
         * each other */
        float acc[4][16] = {{0}};
        for (int64_t i = i0 * per; i < i0 * per + per; i++) {
            const float *restrict a = dy + t->base[i * t->cp + c0];
            const float *restrict v = x + t->base[i * t->cp + c0];
            int64_t q = 0;
            for (; q + 4 <= hw; q += 4) {
                for (int64_t u = 0; u < 4; u++)
                    for (int64_t b = 0; b < B; b++)
                        acc[u][b] += a[(q + u) * B + b] * v[(q + u) * B + b];
            }
            for (; q < hw; q++)
                for (int64_t b = 0; b < B; b++)
                    acc[0][b] += a[q * B + b] * v[q * B + b];
        }
        for (int64_t b = 0; b < B && c0 + b < g->ocp; b++)
            out[grad_at(g, i0, c0 + b)] =
                c0 + b < t->c ? (acc[0][b] + acc[1][b]) + (acc[2][b] + acc[3][b]) : 0.0f;
    }
}

/* items: dy, x (the layout of t), out */
static enum fm_status scale_grad_exec(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct scale_grad *g = arg;
    const struct plane_scale *t = g->t;
    const float *restrict dy = fm_cpu_item_f32(it, 0), *restrict x = fm_cpu_item_f32(it, 1);
    float *restrict out = fm_cpu_item_f32(it, 2);
    const int64_t hw = t->h * t->w, kn = t->kn, per = kn == 1 ? t->n : 1;
    if (plane_blocked(t)) {
        if (t->blk == 8)
            grad_blocks(g, dy, x, out, 8);
        else
            grad_blocks(g, dy, x, out, 16);
    } else if (t->sw == 1 && t->sh == t->w) {
        /* plain planes, one run each: by chunks of channels, sample after sample, so that
         * each thread reads whole runs of the layout in order */
        enum { CH = 32 };
        const int64_t chunks = (t->c + CH - 1) / CH;
        FM_CPU_PARALLEL
        for (int64_t kc = 0; kc < kn * chunks; kc++) {
            const int64_t i0 = kc / chunks, c0 = kc % chunks * CH;
            const int64_t c1 = c0 + CH < t->c ? c0 + CH : t->c;
            float acc[CH] = {0};
            for (int64_t i = i0 * per; i < i0 * per + per; i++) {
                for (int64_t c = c0; c < c1; c++) {
                    const float *restrict a = dy + t->base[i * t->cp + c];
                    const float *restrict b = x + t->base[i * t->cp + c];
                    float sum = 0.0f;
                    for (int64_t q = 0; q < hw; q++)
                        sum += a[q] * b[q];
                    acc[c - c0] += sum;
                }
            }
            for (int64_t c = c0; c < c1; c++)
                out[grad_at(g, i0, c)] = acc[c - c0];
        }
    } else {
        FM_CPU_PARALLEL
        for (int64_t kc = 0; kc < kn * t->c; kc++) {
            const int64_t i0 = kc / t->c, c = kc % t->c;
            float acc = 0.0f;
            for (int64_t i = i0 * per; i < i0 * per + per; i++) {
                const int64_t b = t->base[i * t->cp + c];
                for (int64_t h = 0; h < t->h; h++) {
                    const int64_t o = b + h * t->sh;
                    for (int64_t w = 0; w < t->w; w++)
                        acc += dy[o + w * t->sw] * x[o + w * t->sw];
                }
            }
            out[grad_at(g, i0, c)] = acc;
        }
    }
    /* the channel padding of a blocked out that t's blocks do not reach */
    const int64_t cover = plane_blocked(t) ? t->cp : t->c;
    for (int64_t i0 = 0; i0 < kn; i0++)
        for (int64_t c = cover; c < g->ocp; c++)
            out[grad_at(g, i0, c)] = 0.0f;
    return FM_OK;
}

/* k's gradient for scale_plane (p->scale), written by scale_grad_exec into the layout of k's
 * own tensor where that is (N or 1, C, 1, 1) with at most one block, on the channels, or
 * plain of any rank (ConvNeXt's (C, 1, 1)); else plain (N or 1, C, 1, 1), then copied. */
static enum fm_status scale_grad(struct fm_cpu *s, fm_nid id, struct binary_priv *p, fm_tid to,
                                 dnnl_memory_t dy)
{
    enum fm_phase ph = grad_phase(s, to);
    const struct plane_scale *t = p->scale;
    const dnnl_memory_desc_t *kmd = &s->t[to].md;
    const dnnl_blocking_desc_t *kb = &kmd->format_desc.blocking;
    dnnl_memory_desc_t md, plain;
    fm_cpu_md_plain(&plain, kmd->ndims, kmd->dims);
    struct scale_grad *g = fm_cpu_buf(s, sizeof(*g));
    if (!g)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    if (kmd->ndims == 4 && kmd->format_kind == dnnl_blocked && kb->inner_nblks <= 1 &&
        (kb->inner_nblks == 0 || kb->inner_idxs[0] == 1) && kmd->dims[0] == t->kn &&
        kmd->dims[1] == t->kc) {
        md = *kmd;
        const dnnl_blocking_desc_t *b = &md.format_desc.blocking;
        *g = (struct scale_grad){.t = t, .o0 = md.offset0, .os0 = b->strides[0],
                                 .os1 = b->strides[1], .ob = b->inner_nblks ? b->inner_blks[0] : 1,
                                 .ocp = md.padded_dims[1]};
    } else {
        /* plain: k's own layout if it is plain (of kn * kc elements, what the forward read),
         * else a plain (kn, kc, 1, 1) that sink_end copies over */
        if (fm_cpu_md_equal(kmd, &plain))
            md = *kmd;
        else
            fm_cpu_md_plain(&md, 4, (int64_t[4]){t->kn, t->kc, 1, 1});
        *g = (struct scale_grad){.t = t, .o0 = 0, .os0 = t->kc, .os1 = 1, .ob = 1, .ocp = t->kc};
    }
    struct fm_cpu_sink sk;
    dnnl_memory_t m;
    enum fm_status st = fm_cpu_sink_begin(s, id, ph, to, &md, &sk, &m);
    if (st || !m)
        return st;
    dnnl_memory_t mems[3] = {dy, p->m_full, m};
    st = fm_cpu_add_fn(s, id, ph, scale_grad_exec, g, mems, 3);
    return st ? st : fm_cpu_sink_end(s, &sk);
}

/* The broadcast operand's gradient: src summed down to its dims. */
static enum fm_status reduce_into(struct fm_cpu *s, fm_nid id, struct binary_priv *p, fm_tid tid,
                                  dnnl_memory_t src)
{
    enum fm_phase ph = grad_phase(s, tid);
    dnnl_memory_desc_t dst;
    fm_cpu_md_any(&dst, p->rank, p->odims);
    dnnl_reduction_desc_t d;
    dnnl_primitive_desc_t pd;
    dnnl_memory_t m_dst;
    struct fm_cpu_sink sk;
    enum fm_status st = FM_OK;
    const dnnl_memory_desc_t *smd = fm_cpu_mem_md(src);
    if (p->rank == 4 && p->odims[0] == smd->dims[0] && p->odims[1] == smd->dims[1] &&
        p->odims[2] == 1 && p->odims[3] == 1) {
        bool ok;
        st = plane_sum(s, id, ph, tid, src, p->odims, &ok);
        if (st || ok)
            return st;
    }
    struct plane_scale *t;
    if (p->rank == 4 && p->odims[0] == 1 && p->odims[1] == smd->dims[1] && p->odims[2] == 1 &&
        p->odims[3] == 1 && smd->dims[2] * smd->dims[3] > 1 &&
        (t = plane_scale_new(s, smd, 1, smd->dims[1]))) {
        dnnl_dims_t cd = {1, smd->dims[1], 1, 1};
        fm_cpu_md_plain(&dst, 4, cd);
        st = fm_cpu_sink_begin(s, id, ph, tid, &dst, &sk, &m_dst);
        if (st || !m_dst)
            return st;
        dnnl_memory_t mems[2] = {src, m_dst};
        st = fm_cpu_add_fn(s, id, ph, sum_channels, t, mems, 2);
        return st ? st : fm_cpu_sink_end(s, &sk);
    }
    {
        bool ok;
        st = fm_cpu_sum_leading(s, id, ph, tid, src, p->odims, 1.0f, &ok);
        if (st || ok)
            return st;
    }
    FM_DNNL_TRY(s, dnnl_reduction_desc_init(&d, dnnl_reduction_sum, smd, &dst, 0.0f, 0.0f));
    st = fm_cpu_pd(s, id, &d, NULL, &pd);
    if (!st)
        st = fm_cpu_sink_begin(s, id, ph, tid, fm_cpu_pd_md(pd, DNNL_ARG_DST), &sk, &m_dst);
    if (st || !m_dst)
        goto out;
    {
        struct fm_cpu_arg args[2] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, m_dst}};
        st = fm_cpu_add_prim(s, id, ph, pd, args, 2);
    }
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
out:
    return st;
}

enum fm_status fm_cpu_binary_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    if (general(s->g, n))
        return fm_cpu_ewise_bwd(s, id);
    struct binary_priv *p = s->nodes[id].priv;
    fm_tid tf = n->in[p->full], to = n->in[p->other];
    dnnl_memory_t dy = s->t[n->out[0]].grad_mem;
    const dnnl_memory_desc_t *ymd = &s->t[n->out[0]].md;
    enum fm_status st = FM_OK;
    dnnl_memory_t m;
    struct fm_cpu_sink sk;
    if (n->op == FM_OP_ADD) {
        if (fm_cpu_wants_grad(s, tf))
            st = fm_cpu_sink_from(s, id, grad_phase(s, tf), tf, dy);
        if (!st && fm_cpu_wants_grad(s, to))
            st = p->broadcast ? reduce_into(s, id, p, to, dy)
                              : fm_cpu_sink_from(s, id, grad_phase(s, to), to, dy);
        return st;
    }
    /* Mul: d full = dy * other (broadcast), d other = dy * full (summed if broadcast) */
    if (fm_cpu_wants_grad(s, tf)) {
        st = fm_cpu_sink_begin(s, id, grad_phase(s, tf), tf, ymd, &sk, &m);
        if (!st && m && p->scale) {
            dnnl_memory_t mems[3] = {dy, p->m_other, m};
            st = fm_cpu_add_fn(s, id, grad_phase(s, tf), scale_plane, p->scale, mems, 3);
        } else if (!st && m) {
            st = mul_into(s, id, grad_phase(s, tf), dy, p->m_other, ymd, m);
        }
        if (!st)
            st = fm_cpu_sink_end(s, &sk);
    }
    if (!st && fm_cpu_wants_grad(s, to)) {
        if (p->scale && p->scale->kc == p->scale->c) {   /* not one scale per sample */
            st = scale_grad(s, id, p, to, dy);
        } else if (p->broadcast) {
            dnnl_memory_t tmp;
            st = fm_cpu_mem_scratch(s, ymd, &tmp);
            if (!st)
                st = mul_into(s, id, grad_phase(s, to), dy, p->m_full, ymd, tmp);
            if (!st)
                st = reduce_into(s, id, p, to, tmp);
        } else {
            st = fm_cpu_sink_begin(s, id, grad_phase(s, to), to, ymd, &sk, &m);
            if (!st)
                st = mul_into(s, id, grad_phase(s, to), dy, p->m_full, ymd, m);
            if (!st)
                st = fm_cpu_sink_end(s, &sk);
        }
    }
    return st;
}
