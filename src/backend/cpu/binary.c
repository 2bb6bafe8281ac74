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
 * (6 ms where this takes 0.2 for MobileNetV3's and RegNetY's blocks). x, y (and dy, dx in the
 * backward) share one layout; base holds each plane's offset in it, channels padded to the
 * layout's block included (their scale is 0, so padding stays zero); k is plain (N, C). */
struct plane_scale {
    int64_t n, c, cp;                 /* batch, channels, channels with padding */
    int64_t kc;                       /* k's channels: c, or 1 (one scale per sample) */
    int64_t h, w, sh, sw;             /* plane dims and their strides in the layout */
    int64_t blk;                      /* the channel block (1: none) */
    int64_t *base;                    /* n * cp plane offsets */
};

/* The table for md when its layout allows one: blocked, at most one inner block and that on
 * the channels, planes not blocked. NULL otherwise (oneDNN's binary then runs it). */
static struct plane_scale *plane_scale_new(struct fm_cpu *s, const dnnl_memory_desc_t *md,
                                           int64_t kc)
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

/* items: x, k (plain N x C), y */
static enum fm_status scale_plane(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct plane_scale *t = arg;
    const float *x = fm_cpu_item_f32(it, 0), *k = fm_cpu_item_f32(it, 1);
    float *y = fm_cpu_item_f32(it, 2);
    const int64_t B = t->blk, hw = t->h * t->w;
    if (B == 8 || B == 16) {
        if (t->sw == B && t->sh == t->w * B) {
            /* channel-blocked planes (nChw16c): each (sample, block) is h * w runs of B
             * channels, read once in order instead of once per channel */
            const int64_t nb = t->cp / B;
            FM_CPU_PARALLEL
            for (int64_t ib = 0; ib < t->n * nb; ib++) {
                const int64_t i = ib / nb, c0 = ib % nb * B;
                float f[16];
                for (int64_t b = 0; b < B; b++)
                    f[b] = c0 + b < t->c ? k[i * t->kc + (t->kc == 1 ? 0 : c0 + b)] : 0.0f;
                const int64_t o = t->base[i * t->cp + c0];
                for (int64_t q = 0; q < hw; q++) {
                    for (int64_t b = 0; b < B; b++)
                        y[o + q * B + b] = x[o + q * B + b] * f[b];
                }
            }
            return FM_OK;
        }
    }
    FM_CPU_PARALLEL
    for (int64_t ic = 0; ic < t->n * t->cp; ic++) {
        const int64_t i = ic / t->cp, c = ic % t->cp;
        const float f = c < t->c ? k[i * t->kc + (t->kc == 1 ? 0 : c)] : 0.0f;
        const int64_t b = t->base[ic];
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
    return p->rank == 4 && p->broadcast && p->odims[0] == y->dims[0] &&
           (p->odims[1] == y->dims[1] || p->odims[1] == 1) && p->odims[2] == 1 &&
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
    if (n->op == FM_OP_MUL && plane_broadcast(p, y) && (p->scale = plane_scale_new(s, fmd, p->odims[1]))) {
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
        (t = plane_scale_new(s, smd, smd->dims[1]))) {
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
        if (p->broadcast) {
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
