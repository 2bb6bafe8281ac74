/* Convolution and transposed convolution on oneDNN: 1-D (NCW) and 2-D (NCHW), grouped and
 * depthwise (weights seen as (g, Cout/g, Cin/g, k...)), strided, dilated, with or without bias;
 * forward, backward data and backward weights as three primitives, every activation layout
 * left to oneDNN ("any") and reorders inserted only where a neighbour chose differently.
 *
 * ConvTranspose runs on oneDNN's deconvolution. Its weight is stored as PyTorch and ONNX keep it,
 * (Cin, Cout/g, k...), which is oneDNN's deconvolution weight (Cout, Cin, k...) (or
 * (g, Cout/g, Cin/g, k...)) in the "io" order: the parameter's bytes are described by a strided
 * view (format iohw / giohw) rather than reshaped, and reordered once per step into the layout
 * the primitive chose (the forward copy is reused by backward data). output_padding needs no
 * attribute: oneDNN reads it from the output size. Not here: 3-D convolutions. */
#include "cpu.h"

struct conv_priv {
    dnnl_primitive_desc_t fwd;
    bool transposed;
    int sp;                        /* spatial dims: 1 or 2 */
    dnnl_dims_t strides, dil, pl, pr;
    int64_t wdims[6];
    int wrank;
    int64_t xdims[4], ydims[4];
    dnnl_memory_desc_t wview;      /* transposed: the parameter's bytes as oneDNN's weights */
    dnnl_memory_t m_wview;         /* transposed: the parameter seen through wview */
    dnnl_memory_t m_wei;           /* transposed: the weights in the forward's layout */
    bool own_fwd;                  /* depthwise or grouped: flopmeter's forward (dw_fwd_exec,
                                      grp_fwd_exec), fwd the layouts only */
    bool own_grp;                  /* grouped: flopmeter's input gradient too (grp_bwd_exec) */
    struct fm_cpu_small *small;    /* a 1x1 convolution of a 1x1 map run by small.c, fwd the
                                      layouts only; NULL otherwise */
};

#define DW_MAX_TAPS 121   /* filters up to 11x11 */

/* The geometry of a depthwise 2-D convolution over channel-blocked layouts, for flopmeter's
 * own forward and weight gradient. */
struct dw_grad {
    int64_t n, c, ncb, blk;                 /* batch, channels, channel blocks, block */
    int64_t ih, iw, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t xs[4], ys[4];                   /* strides of x and dy: n, block, h, w */
    int64_t gw;                             /* channels a group (grouped): 1 (depthwise) */
    bool bias;
    bool own;                               /* grouped: the layout is grp_fwd_blocked's, whose
                                               kernels (grp_kern.h) take it */
};

/* The taps t in [*lo, *hi) of a filter of k taps, dil apart, whose input index base + t dil
 * lies inside [0, n): the part of the filter that does not fall on padding. */
static inline void dw_taps(int64_t base, int64_t dil, int64_t k, int64_t n, int64_t *lo,
                           int64_t *hi)
{
    *lo = base >= 0 ? 0 : (-base + dil - 1) / dil;
    *hi = n - 1 - base < 0 ? 0 : (n - 1 - base) / dil + 1;
    if (*hi > k)
        *hi = k;
}

/* The channel block of md when it is blocked by 4, 8 or 16 on channels only and not padded
 * beyond its dims otherwise; 0 when not. */
static int64_t channel_block_any(const dnnl_memory_desc_t *md)
{
    const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
    if (md->format_kind != dnnl_blocked || md->ndims != 4 || b->inner_nblks != 1 ||
        b->inner_idxs[0] != 1 ||
        (b->inner_blks[0] != 4 && b->inner_blks[0] != 8 && b->inner_blks[0] != 16))
        return 0;
    return b->inner_blks[0];
}

/* The same for blocks of 8 or 16 only (the depthwise kernels' vector widths). */
static int64_t channel_block(const dnnl_memory_desc_t *md)
{
    int64_t blk = channel_block_any(md);
    return blk == 4 ? 0 : blk;
}

enum fm_status fm_cpu_conv_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                 const struct fm_node *n)
{
    const struct fm_tensor *x = fm_graph_tensor(g, n->in[0]);
    if (x->shape.rank != 3 && x->shape.rank != 4)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "layer '%s' (%s): only 1-D and 2-D convolutions (NCW or NCHW input) run "
                        "on the CPU backend, this input has rank %d",
                        n->name, n->op_name, x->shape.rank);
    return FM_OK;
}

/* The geometry of node n: window attributes (a 1-D op keeps them at index 1) and the weight
 * dims oneDNN expects. */
static void conv_geometry(const struct fm_cpu *s, const struct fm_node *n, struct conv_priv *p)
{
    const struct fm_tensor *x = fm_graph_tensor(s->g, n->in[0]);
    const struct fm_tensor *w = fm_graph_tensor(s->g, n->in[1]);
    const struct fm_tensor *y = fm_graph_tensor(s->g, n->out[0]);
    const struct fm_attrs *a = &n->attrs;
    p->transposed = n->op == FM_OP_CONV_TRANSPOSE;
    p->sp = x->shape.rank - 2;
    for (int i = 0; i < p->sp; i++) {
        int ai = 2 - p->sp + i;
        p->strides[i] = a->stride[ai];
        p->dil[i] = a->dilation[ai] - 1;   /* oneDNN counts the gaps: 0 = dense */
        p->pl[i] = a->pad[ai];
        p->pr[i] = a->pad[ai + 2];
    }
    for (int i = 0; i < x->shape.rank; i++) {
        p->xdims[i] = x->shape.dims[i];
        p->ydims[i] = y->shape.dims[i];
    }
    int64_t g = a->groups, cin = x->shape.dims[1], cout = y->shape.dims[1];
    int r = 0;
    if (g > 1)
        p->wdims[r++] = g;
    p->wdims[r++] = cout / g;
    p->wdims[r++] = cin / g;
    for (int i = 2; i < w->shape.rank; i++)
        p->wdims[r++] = w->shape.dims[i];
    p->wrank = r;
    if (p->transposed) {
        /* (Cin, Cout/g, k...) in memory: the "io" order of oneDNN's (Cout, Cin, k...) */
        static const dnnl_format_tag_t tags[2][2] = {{dnnl_bac, dnnl_bacd},
                                                     {dnnl_acbd, dnnl_acbde}};
        dnnl_dims_t d;
        for (int i = 0; i < r; i++)
            d[i] = p->wdims[i];
        dnnl_memory_desc_init_by_tag(&p->wview, r, d, dnnl_f32, tags[g > 1][p->sp - 1]);
    }
}

static dnnl_alg_kind_t conv_alg(const struct conv_priv *p)
{
    return p->transposed ? dnnl_deconvolution_direct : dnnl_convolution_direct;
}

/* The weights of a transposed convolution in layout want, for phase: the forward's copy when
 * the layouts agree, else a reorder from the parameter's bytes. */
static enum fm_status deconv_weights(struct fm_cpu *s, fm_nid id, enum fm_phase phase,
                                     struct conv_priv *p, const dnnl_memory_desc_t *want,
                                     dnnl_memory_t *out)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    enum fm_status st = FM_OK;
    if (!p->m_wview) {
        dnnl_memory_t plain;
        st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, n->in[1], false, &plain);
        if (!st)
            st = fm_cpu_mem_view(s, plain, &p->wview, &p->m_wview);
        if (st)
            return st;
    }
    if (p->m_wei && fm_cpu_md_equal(fm_cpu_mem_md(p->m_wei), want)) {
        *out = p->m_wei;
        return FM_OK;
    }
    if (fm_cpu_md_equal(&p->wview, want)) {
        *out = p->m_wview;
        return FM_OK;
    }
    st = phase == FM_PHASE_FWD ? fm_cpu_mem_new(s, want, out) : fm_cpu_mem_scratch(s, want, out);
    if (!st)
        st = fm_cpu_add_reorder(s, id, phase, p->m_wview, *out, false);
    return st;
}

/* Whether p is a depthwise 2-D convolution: one filter per channel, no multiplier. */
static bool depthwise_2d(const struct conv_priv *p)
{
    int64_t c = p->xdims[1];
    return !p->transposed && p->sp == 2 && p->wrank == 5 && p->wdims[0] == c &&
           p->wdims[1] == 1 && p->wdims[2] == 1 && p->ydims[1] == c;
}

/* The forward primitive descriptor of p with activations in channel-blocked layout tag and the
 * weight plain; FM_ERR_UNSUPPORTED when oneDNN has no primitive for those layouts. */
static enum fm_status blocked_fwd_pd(struct fm_cpu *s, fm_nid id, const struct conv_priv *p,
                                     dnnl_prop_kind_t prop, const dnnl_memory_desc_t *bp,
                                     dnnl_format_tag_t tag, dnnl_primitive_desc_t *pd)
{
    enum fm_status st = FM_OK;
    dnnl_dims_t xd, yd;
    for (int i = 0; i < 4; i++) {
        xd[i] = p->xdims[i];
        yd[i] = p->ydims[i];
    }
    dnnl_memory_desc_t src, wei, dst;
    FM_DNNL_TRY(s, dnnl_memory_desc_init_by_tag(&src, 4, xd, dnnl_f32, tag));
    FM_DNNL_TRY(s, dnnl_memory_desc_init_by_tag(&dst, 4, yd, dnnl_f32, tag));
    fm_cpu_md_plain(&wei, p->wrank, p->wdims);
    dnnl_convolution_desc_t cd;
    FM_DNNL_TRY(s, dnnl_dilated_convolution_forward_desc_init(&cd, prop, conv_alg(p), &src, &wei,
                                                               bp, &dst, p->strides, p->dil,
                                                               p->pl, p->pr));
    st = fm_cpu_pd(s, id, &cd, NULL, pd);
out:
    return st;
}

/* A depthwise forward that oneDNN 2.6 left to im2col and gemm in plain layouts when the layouts
 * were its choice ("any"): ConvNeXt's 7x7 filters over its last stage's 2x2 planes at 64x64
 * input took 9 ms a step instead of a few microseconds' work, and the plain layout sent the
 * weight gradient to gemm too (3-7 ms). Asked for channel-blocked activations (16 channels,
 * then 8) it may have its depthwise kernel for the shape: then p->fwd is that primitive. Where
 * it has only reference code (the 7x7 over 2x2 planes), p->fwd is the 16-channel-blocked
 * primitive for its layouts, which the backward follows (oneDNN's depthwise input gradient,
 * flopmeter's weight gradient), and flopmeter's own forward (dw_fwd_exec) runs instead of it. */
static enum fm_status dw_fwd_blocked(struct fm_cpu *s, fm_nid id, struct conv_priv *p,
                                     dnnl_prop_kind_t prop, const dnnl_memory_desc_t *bp)
{
    static const dnnl_format_tag_t tags[2] = {dnnl_aBcd16b, dnnl_aBcd8b};
    enum fm_status st = FM_OK;
    dnnl_primitive_desc_t own = NULL;
    for (int k = 0; k < 2; k++) {
        dnnl_primitive_desc_t pd;
        st = blocked_fwd_pd(s, id, p, prop, bp, tags[k], &pd);
        if (st == FM_ERR_UNSUPPORTED) {   /* no primitive for this block: the next */
            st = FM_OK;
            continue;
        }
        if (st)
            return st;
        if (!fm_cpu_pd_is_slow(pd)) {
            p->fwd = pd;
            return FM_OK;
        }
        if (!own)
            own = pd;
    }
    if (own && p->wdims[3] * p->wdims[4] <= DW_MAX_TAPS &&
        channel_block(fm_cpu_pd_md(own, DNNL_ARG_SRC)) == 16) {
        p->fwd = own;
        p->own_fwd = true;
    }
    return FM_OK;
}

/* The forward dw_fwd_blocked gives flopmeter: per image and channel block, each output pixel's
 * B channels summed over the filter's taps that land inside the input, plus the bias; the
 * padded channels of the last block are written as zero, as oneDNN keeps them. items: x, y
 * (16-channel-blocked), w (plain: channel, kh, kw), the bias (plain) or none. */
static enum fm_status dw_fwd_exec(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct dw_grad *d = arg;
    const float *x = fm_cpu_item_f32(it, 0), *w = fm_cpu_item_f32(it, 2);
    const float *bias = d->bias ? fm_cpu_item_f32(it, 3) : NULL;
    float *y = fm_cpu_item_f32(it, 1);
    enum { B = 16 };
    int64_t taps = d->kh * d->kw;
    FM_CPU_PARALLEL
    for (int64_t nb = 0; nb < d->n * d->ncb; nb++) {
        int64_t n = nb / d->ncb, cb = nb % d->ncb;
        float wt[DW_MAX_TAPS * B], b0[B];
        for (int64_t b = 0; b < B; b++) {
            int64_t c = cb * B + b;
            b0[b] = c < d->c && bias ? bias[c] : 0.0f;
            for (int64_t t = 0; t < taps; t++)
                wt[t * B + b] = c < d->c ? w[c * taps + t] : 0.0f;
        }
        const float *xn = x + n * d->xs[0] + cb * d->xs[1];
        float *yn = y + n * d->ys[0] + cb * d->ys[1];
        for (int64_t oy = 0; oy < d->oh; oy++) {
            for (int64_t ox = 0; ox < d->ow; ox++) {
                float acc[B];
                for (int64_t b = 0; b < B; b++)
                    acc[b] = b0[b];
                int64_t by = oy * d->sh - d->ph, bx = ox * d->sw - d->pw, i0, i1, j0, j1;
                dw_taps(by, d->dh, d->kh, d->ih, &i0, &i1);
                dw_taps(bx, d->dw, d->kw, d->iw, &j0, &j1);
                for (int64_t i = i0; i < i1; i++) {
                    int64_t iy = by + i * d->dh;
                    for (int64_t j = j0; j < j1; j++) {
                        int64_t ix = bx + j * d->dw;
                        const float *xv = xn + iy * d->xs[2] + ix * d->xs[3];
                        const float *a = wt + (i * d->kw + j) * B;
                        for (int64_t b = 0; b < B; b++)
                            acc[b] += xv[b] * a[b];
                    }
                }
                float *o = yn + oy * d->ys[2] + ox * d->ys[3];
                for (int64_t b = 0; b < B; b++)
                    o[b] = acc[b];
            }
        }
    }
    return FM_OK;
}

/* The geometry of a depthwise convolution over the forward's channel-blocked layouts, for
 * flopmeter's own kernels; NULL when out of memory. */
static struct dw_grad *dw_geometry(struct fm_cpu *s, const struct conv_priv *p, bool bias)
{
    const dnnl_memory_desc_t *xmd = fm_cpu_pd_md(p->fwd, DNNL_ARG_SRC);
    const dnnl_memory_desc_t *ymd = fm_cpu_pd_md(p->fwd, DNNL_ARG_DST);
    int64_t c = p->xdims[1], blk = channel_block_any(xmd);
    struct dw_grad *d = fm_cpu_buf(s, sizeof(*d));
    if (!d)
        return NULL;
    *d = (struct dw_grad){.n = p->xdims[0], .c = c, .ncb = (c + blk - 1) / blk, .blk = blk,
                          .ih = p->xdims[2], .iw = p->xdims[3], .oh = p->ydims[2],
                          .ow = p->ydims[3], .kh = p->wdims[3], .kw = p->wdims[4],
                          .sh = p->strides[0], .sw = p->strides[1], .ph = p->pl[0],
                          .pw = p->pl[1], .dh = p->dil[0] + 1, .dw = p->dil[1] + 1,
                          .gw = p->wdims[2], .bias = bias, .own = p->own_grp};
    for (int i = 0; i < 4; i++) {
        d->xs[i] = xmd->format_desc.blocking.strides[i];
        d->ys[i] = ymd->format_desc.blocking.strides[i];
    }
    return d;
}

/* ---- grouped convolutions of a few channels a group (ResNeXt's 32 x 4d first stage) ----
 * oneDNN 2.6's JIT code on AVX2 wants 8 channels a group; with 4 (ResNeXt-50 32x4d's 3x3s over
 * 56x56 planes) it runs im2col and gemm in plain layouts, 3-5 GFLOP/s a phase where its other
 * convolutions run 50-70, and the BatchNorms around it then run on plain layouts too. Here
 * such a layer keeps the channel-blocked layout of its neighbours (blocks of B = 8 channels,
 * 16 on AVX-512) and runs flopmeter's forward and input gradient (the weight gradient is
 * grp_grad_exec's). A block holds B / GW whole groups; output lane b of a block sums, over the
 * taps and its group's GW inputs c, w[b][c][tap] times input lane (b / GW) * GW + c: one
 * lane permutation and one vector multiply-add per (tap, c), the compiler's from constant GW
 * and B. The input gradient is the same sum over dy with the weight's two channel axes
 * swapped and the taps that reach each input pixel. */

#if defined(__x86_64__) && defined(__GNUC__)
#define GRP_KERNELS 1
#define GK_TARGET __attribute__((target("arch=x86-64-v3")))
#define GK_B 8
#define GK_GW 2
#include "grp_kern.h"
#define GK_TARGET __attribute__((target("arch=x86-64-v3")))
#define GK_B 8
#define GK_GW 4
#include "grp_kern.h"
#define GK_TARGET __attribute__((target("arch=x86-64-v4")))
#define GK_B 16
#define GK_GW 2
#include "grp_kern.h"
#define GK_TARGET __attribute__((target("arch=x86-64-v4")))
#define GK_B 16
#define GK_GW 4
#include "grp_kern.h"
#define GK_TARGET __attribute__((target("arch=x86-64-v4")))
#define GK_B 16
#define GK_GW 8
#include "grp_kern.h"
#endif

/* The kernel for d's block and group width (grp_small chose a pair that has one). */
static void grp_block_any(const struct dw_grad *d, const float *in, float *out, const float *w,
                          const float *bias, bool fwd, int64_t n, int64_t cb)
{
#ifdef GRP_KERNELS
    switch (d->blk * 100 + d->gw) {
    case 802: grp_block_8_2(d, in, out, w, bias, fwd, n, cb); break;
    case 804: grp_block_8_4(d, in, out, w, bias, fwd, n, cb); break;
    case 1602: grp_block_16_2(d, in, out, w, bias, fwd, n, cb); break;
    case 1604: grp_block_16_4(d, in, out, w, bias, fwd, n, cb); break;
    default: grp_block_16_8(d, in, out, w, bias, fwd, n, cb); break;
    }
#else
    (void)d, (void)in, (void)out, (void)w, (void)bias, (void)fwd, (void)n, (void)cb;
#endif
}

/* The weight gradient of block cb by the kernel for d's block and group width. */
static void grp_grad_block_any(const struct dw_grad *d, const float *x, const float *dy,
                               float *dw, float *db, int64_t cb)
{
#ifdef GRP_KERNELS
    switch (d->blk * 100 + d->gw) {
    case 802: grp_grad_block_8_2(d, x, dy, dw, db, cb); break;
    case 804: grp_grad_block_8_4(d, x, dy, dw, db, cb); break;
    case 1602: grp_grad_block_16_2(d, x, dy, dw, db, cb); break;
    case 1604: grp_grad_block_16_4(d, x, dy, dw, db, cb); break;
    default: grp_grad_block_16_8(d, x, dy, dw, db, cb); break;
    }
#else
    (void)d, (void)x, (void)dy, (void)dw, (void)db, (void)cb;
#endif
}

/* items: x, y (channel-blocked), w (plain: C, GW, kh, kw), the bias (plain) or none */
static enum fm_status grp_fwd_exec(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct dw_grad *d = arg;
    const float *x = fm_cpu_item_f32(it, 0), *w = fm_cpu_item_f32(it, 2);
    const float *bias = d->bias ? fm_cpu_item_f32(it, 3) : NULL;
    float *y = fm_cpu_item_f32(it, 1);
    FM_CPU_PARALLEL
    for (int64_t nb = 0; nb < d->n * d->ncb; nb++)
        grp_block_any(d, x, y, w, bias, true, nb / d->ncb, nb % d->ncb);
    return FM_OK;
}

/* items: dy, dx (the forward's layouts), w (plain) */
static enum fm_status grp_bwd_exec(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct dw_grad *d = arg;
    const float *dy = fm_cpu_item_f32(it, 0), *w = fm_cpu_item_f32(it, 2);
    float *dx = fm_cpu_item_f32(it, 1);
    FM_CPU_PARALLEL
    for (int64_t nb = 0; nb < d->n * d->ncb; nb++)
        grp_block_any(d, dy, dx, w, NULL, false, nb / d->ncb, nb % d->ncb);
    return FM_OK;
}

/* The channel block flopmeter's grouped kernels use on this CPU: 16 where AVX-512 runs, 8
 * where AVX2 does, 0 where neither (oneDNN's code stays). */
static int64_t grp_block_width(void)
{
#ifdef GRP_KERNELS
    if (fm_cpu_small_kern(FM_CPU_ISA_AVX512))
        return 16;
    if (fm_cpu_small_kern(FM_CPU_ISA_AVX2))
        return 8;
#endif
    return 0;
}

/* The channels a group of p when it is a grouped 2-D convolution of as many output as input
 * channels a group, a power of two up to 16, and at most DW_MAX_TAPS taps; 0 otherwise. */
static int64_t grp_width(const struct conv_priv *p)
{
    if (p->transposed || p->sp != 2 || p->wrank != 5 || p->wdims[0] < 2)
        return 0;
    int64_t gw = p->wdims[2];
    bool ok = (gw == 2 || gw == 4 || gw == 8 || gw == 16) && p->wdims[1] == gw &&
              p->xdims[1] == p->wdims[0] * gw && p->ydims[1] == p->xdims[1] &&
              p->wdims[3] * p->wdims[4] <= DW_MAX_TAPS;
    return ok ? gw : 0;
}

/* Whether p is a grouped 2-D convolution the kernels above take: GW in {2, 4, 8} channels a
 * group in and out, GW below the block (a group of the block's width is oneDNN's JIT case). */
static bool grp_small(const struct conv_priv *p)
{
    int64_t gw = grp_width(p), blk = grp_block_width();
    return blk && gw && gw < blk;
}

/* A grouped forward oneDNN runs on im2col and gemm: p->fwd becomes a primitive descriptor for
 * the channel-blocked layouts (its implementation never runs: it gives the layouts, which the
 * backward follows) and the forward and input gradient are flopmeter's. */
static enum fm_status grp_fwd_blocked(struct fm_cpu *s, fm_nid id, struct conv_priv *p,
                                      dnnl_prop_kind_t prop, const dnnl_memory_desc_t *bp)
{
    dnnl_format_tag_t tag = grp_block_width() == 16 ? dnnl_aBcd16b : dnnl_aBcd8b;
    dnnl_primitive_desc_t pd;
    enum fm_status st = blocked_fwd_pd(s, id, p, prop, bp, tag, &pd);
    if (st == FM_ERR_UNSUPPORTED)   /* no primitive in these layouts: oneDNN's stays */
        return FM_OK;
    if (!st) {
        p->fwd = pd;
        p->own_fwd = p->own_grp = true;
    }
    return st;
}

/* The input gradient of a grouped convolution grp_fwd_blocked took. */
static enum fm_status grp_bwd_data(struct fm_cpu *s, fm_nid id, struct conv_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct dw_grad *d = dw_geometry(s, p, false);
    if (!d)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    dnnl_memory_t mems[3];
    struct fm_cpu_sink sk;
    enum fm_status st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true,
                                     fm_cpu_pd_md(p->fwd, DNNL_ARG_DST), &mems[0]);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0],
                               fm_cpu_pd_md(p->fwd, DNNL_ARG_SRC), &sk, &mems[1]);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->in[1], false,
                          fm_cpu_pd_md(p->fwd, DNNL_ARG_WEIGHTS), &mems[2]);
    if (!st)
        st = fm_cpu_add_fn(s, id, FM_PHASE_BWD_DATA, grp_bwd_exec, d, mems, 3);
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
    return st;
}

/* A 1x1 convolution of a 1x1 map (a squeeze-excitation block's two fcs) small enough that
 * oneDNN's fixed cost a primitive would dominate: the plan of its product by hand, in the
 * layouts the forward primitive chose; NULL otherwise. */
static struct fm_cpu_small *conv_small(struct fm_cpu *s, const struct conv_priv *p, bool bias)
{
    if (p->transposed || p->sp != 2 || p->wrank != 4 || p->wdims[2] != 1 || p->wdims[3] != 1 ||
        p->xdims[2] != 1 || p->xdims[3] != 1 || p->ydims[2] != 1 || p->ydims[3] != 1 ||
        p->pl[0] || p->pl[1] || p->pr[0] || p->pr[1])
        return NULL;
    return fm_cpu_small_new(s, p->xdims[0], p->xdims[1], p->ydims[1],
                            fm_cpu_pd_md(p->fwd, DNNL_ARG_SRC), fm_cpu_pd_md(p->fwd, DNNL_ARG_DST),
                            p->wrank, p->wdims, bias);
}

/* Forward (training or inference) and, from it, the geometry the backward reuses. */
enum fm_status fm_cpu_conv_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid bias = n->n_in > 2 ? n->in[2] : FM_NONE;
    struct conv_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    conv_geometry(s, n, p);
    int rank = p->sp + 2;
    dnnl_memory_desc_t src, wei, bmd, dst;
    int64_t cout = p->ydims[1];
    fm_cpu_md_any(&src, rank, p->xdims);
    fm_cpu_md_any(&wei, p->wrank, p->wdims);
    fm_cpu_md_plain(&bmd, 1, &cout);
    fm_cpu_md_any(&dst, rank, p->ydims);
    dnnl_prop_kind_t prop = s->train ? dnnl_forward_training : dnnl_forward_inference;
    const dnnl_memory_desc_t *bp = bias != FM_NONE ? &bmd : NULL;
    enum fm_status st = FM_OK;
    dnnl_memory_t m_src, m_wei, m_bias = NULL;
    if (p->transposed) {
        dnnl_deconvolution_desc_t dd;
        FM_DNNL_TRY(s, dnnl_dilated_deconvolution_forward_desc_init(
                           &dd, prop, conv_alg(p), &src, &wei, bp, &dst, p->strides, p->dil,
                           p->pl, p->pr));
        st = fm_cpu_pd(s, id, &dd, NULL, &p->fwd);
    } else {
        dnnl_convolution_desc_t cd;
        FM_DNNL_TRY(s, dnnl_dilated_convolution_forward_desc_init(
                           &cd, prop, conv_alg(p), &src, &wei, bp, &dst, p->strides, p->dil,
                           p->pl, p->pr));
        st = fm_cpu_pd(s, id, &cd, NULL, &p->fwd);
        if (!st && depthwise_2d(p) && fm_cpu_pd_is_slow(p->fwd))
            st = dw_fwd_blocked(s, id, p, prop, bp);
        else if (!st && grp_small(p) && fm_cpu_pd_is_slow(p->fwd))
            st = grp_fwd_blocked(s, id, p, prop, bp);
        if (!st)
            p->small = conv_small(s, p, bias != FM_NONE);
        if (!st && p->small)
            return fm_cpu_small_fwd(s, id, p->small, n->in[0], n->in[1], bias, n->out[0]);
    }
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[0], false, fm_cpu_pd_md(p->fwd, DNNL_ARG_SRC),
                          &m_src);
    if (!st && p->transposed) {
        st = deconv_weights(s, id, FM_PHASE_FWD, p, fm_cpu_pd_md(p->fwd, DNNL_ARG_WEIGHTS),
                            &m_wei);
        p->m_wei = m_wei;
    } else if (!st) {
        st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[1], false,
                          fm_cpu_pd_md(p->fwd, DNNL_ARG_WEIGHTS), &m_wei);
    }
    if (!st && bias != FM_NONE)
        st = fm_cpu_input(s, id, FM_PHASE_FWD, bias, false, fm_cpu_pd_md(p->fwd, DNNL_ARG_BIAS),
                          &m_bias);
    if (!st)
        st = fm_cpu_place(s, n->out[0], fm_cpu_pd_md(p->fwd, DNNL_ARG_DST));
    if (st)
        goto out;
    if (p->own_fwd) {
        struct dw_grad *d = dw_geometry(s, p, bias != FM_NONE);
        if (!d)
            return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
        dnnl_memory_t mems[4] = {m_src, s->t[n->out[0]].val_mem, m_wei, m_bias};
        st = fm_cpu_add_fn(s, id, FM_PHASE_FWD, p->own_grp ? grp_fwd_exec : dw_fwd_exec, d, mems,
                           bias != FM_NONE ? 4 : 3);
    } else {
        struct fm_cpu_arg args[4] = {{DNNL_ARG_SRC, m_src}, {DNNL_ARG_WEIGHTS, m_wei},
                                     {DNNL_ARG_DST, s->t[n->out[0]].val_mem},
                                     {DNNL_ARG_BIAS, m_bias}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, p->fwd, args, bias != FM_NONE ? 4 : 3);
    }
out:
    return st;
}

static enum fm_status conv_bwd_data(struct fm_cpu *s, fm_nid id, struct conv_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    if (p->small)
        return fm_cpu_small_bwd_data(s, id, p->small, n->in[0], n->in[1], n->out[0]);
    if (p->own_grp)
        return grp_bwd_data(s, id, p);
    int rank = p->sp + 2;
    dnnl_memory_desc_t dsrc, wei, ddst;
    fm_cpu_md_any(&dsrc, rank, p->xdims);
    fm_cpu_md_any(&wei, p->wrank, p->wdims);
    fm_cpu_md_any(&ddst, rank, p->ydims);
    dnnl_primitive_desc_t pd;
    dnnl_memory_t m_wei, m_dd, m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = FM_OK;
    if (p->transposed) {
        dnnl_deconvolution_desc_t dd;
        FM_DNNL_TRY(s, dnnl_dilated_deconvolution_backward_data_desc_init(
                           &dd, conv_alg(p), &dsrc, &wei, &ddst, p->strides, p->dil, p->pl,
                           p->pr));
        st = fm_cpu_pd(s, id, &dd, p->fwd, &pd);
        if (!st)
            st = deconv_weights(s, id, FM_PHASE_BWD_DATA, p, fm_cpu_pd_md(pd, DNNL_ARG_WEIGHTS),
                                &m_wei);
    } else {
        dnnl_convolution_desc_t cd;
        FM_DNNL_TRY(s, dnnl_dilated_convolution_backward_data_desc_init(
                           &cd, conv_alg(p), &dsrc, &wei, &ddst, p->strides, p->dil, p->pl,
                           p->pr));
        st = fm_cpu_pd(s, id, &cd, p->fwd, &pd);
        if (!st)
            st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->in[1], false,
                              fm_cpu_pd_md(pd, DNNL_ARG_WEIGHTS), &m_wei);
    }
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true,
                          fm_cpu_pd_md(pd, DNNL_ARG_DIFF_DST), &m_dd);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0],
                               fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SRC), &sk, &m_dx);
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_DIFF_DST, m_dd}, {DNNL_ARG_WEIGHTS, m_wei},
                                     {DNNL_ARG_DIFF_SRC, m_dx}};
        st = fm_cpu_add_prim(s, id, FM_PHASE_BWD_DATA, pd, args, 3);
    }
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
out:
    return st;
}

/* The weight (and bias) gradient of a transposed convolution: the primitive writes dW in its
 * own layout; it reaches the parameter's (Cin, Cout/g, k...) gradient through the io view. */
static enum fm_status deconv_bwd_weights(struct fm_cpu *s, fm_nid id, struct conv_priv *p,
                                         const dnnl_deconvolution_desc_t *dd, fm_tid bias,
                                         bool want_bias)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    enum fm_phase ph = FM_PHASE_BWD_WEIGHT;
    dnnl_primitive_desc_t pd;
    dnnl_memory_t m_src, m_dd, m_dw = NULL, m_sink = NULL, m_view = NULL, m_db = NULL;
    struct fm_cpu_sink skw, skb = {id, ph, FM_NONE, NULL};
    enum fm_status st = fm_cpu_pd(s, id, dd, p->fwd, &pd);
    if (!st)
        st = fm_cpu_input(s, id, ph, n->in[0], false, fm_cpu_pd_md(pd, DNNL_ARG_SRC), &m_src);
    if (!st)
        st = fm_cpu_input(s, id, ph, n->out[0], true, fm_cpu_pd_md(pd, DNNL_ARG_DIFF_DST), &m_dd);
    if (!st)
        st = fm_cpu_sink_plain(s, id, ph, n->in[1], &skw, &m_sink);
    if (!st && m_sink)
        st = fm_cpu_mem_view(s, m_sink, &p->wview, &m_view);
    const dnnl_memory_desc_t *dwmd = fm_cpu_pd_md(pd, DNNL_ARG_DIFF_WEIGHTS);
    if (!st) {
        if (m_view && fm_cpu_md_equal(dwmd, &p->wview))
            m_dw = m_view;
        else   /* another layout, or a frozen weight with a trainable bias */
            st = fm_cpu_mem_scratch(s, dwmd, &m_dw);
    }
    if (!st && want_bias)
        st = fm_cpu_sink_begin(s, id, ph, bias, fm_cpu_pd_md(pd, DNNL_ARG_DIFF_BIAS), &skb,
                               &m_db);
    if (st)
        return st;
    struct fm_cpu_arg args[4] = {{DNNL_ARG_SRC, m_src}, {DNNL_ARG_DIFF_DST, m_dd},
                                 {DNNL_ARG_DIFF_WEIGHTS, m_dw}, {DNNL_ARG_DIFF_BIAS, m_db}};
    st = fm_cpu_add_prim(s, id, ph, pd, args, want_bias ? 4 : 3);
    if (!st && m_view && m_dw != m_view)
        st = fm_cpu_add_reorder(s, id, ph, m_dw, m_view, false);
    if (!st)
        st = fm_cpu_sink_end(s, &skw);
    if (!st)
        st = fm_cpu_sink_end(s, &skb);
    return st;
}

/* The weight gradient of a depthwise 2-D convolution (one filter per channel, no multiplier)
 * over the forward's channel-blocked layouts, by hand: oneDNN 2.6 has vectorized code for
 * 3x3 filters only (and not for every input size) and runs the others (MobileNetV3's and
 * EfficientNet's 5x5, ConvNeXt's 7x7, ShuffleNetV2's 3x3 over 2x2 inputs) through im2col and
 * gemm in plain layouts, 4 to 50 times slower. Each channel block keeps its
 * kh x kw x B sums in registers and cache while it walks dy once; the blocks are shared out
 * among the threads. */
static inline void dw_grad_block(const struct dw_grad *d, const float *x, const float *dy,
                                 int64_t cb, float *acc, float *accb, const int64_t B)
{
    for (int64_t t = 0; t < d->kh * d->kw * B; t++)
        acc[t] = 0.0f;
    for (int64_t b = 0; b < B; b++)
        accb[b] = 0.0f;
    for (int64_t n = 0; n < d->n; n++) {
        const float *xn = x + n * d->xs[0] + cb * d->xs[1];
        const float *gn = dy + n * d->ys[0] + cb * d->ys[1];
        for (int64_t oy = 0; oy < d->oh; oy++) {
            for (int64_t ox = 0; ox < d->ow; ox++) {
                const float *g = gn + oy * d->ys[2] + ox * d->ys[3];
                for (int64_t b = 0; b < B; b++)
                    accb[b] += g[b];
                int64_t by = oy * d->sh - d->ph, bx = ox * d->sw - d->pw, i0, i1, j0, j1;
                dw_taps(by, d->dh, d->kh, d->ih, &i0, &i1);
                dw_taps(bx, d->dw, d->kw, d->iw, &j0, &j1);
                for (int64_t i = i0; i < i1; i++) {
                    int64_t iy = by + i * d->dh;
                    for (int64_t j = j0; j < j1; j++) {
                        int64_t ix = bx + j * d->dw;
                        const float *xv = xn + iy * d->xs[2] + ix * d->xs[3];
                        float *a = acc + (i * d->kw + j) * B;
                        for (int64_t b = 0; b < B; b++)
                            a[b] += g[b] * xv[b];
                    }
                }
            }
        }
    }
}

/* items: x, dy (the forward's layouts), dw (plain: channel, kh, kw), db (plain) or none */
static enum fm_status dw_grad_exec(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct dw_grad *d = arg;
    const float *x = fm_cpu_item_f32(it, 0), *dy = fm_cpu_item_f32(it, 1);
    float *dw = fm_cpu_item_f32(it, 2), *db = d->bias ? fm_cpu_item_f32(it, 3) : NULL;
    int64_t taps = d->kh * d->kw;
    /* channel blocks are independent: one per thread at a time */
    FM_CPU_PARALLEL
    for (int64_t cb = 0; cb < d->ncb; cb++) {
        float acc[DW_MAX_TAPS * 16], accb[16];
        if (d->blk == 16)
            dw_grad_block(d, x, dy, cb, acc, accb, 16);
        else
            dw_grad_block(d, x, dy, cb, acc, accb, 8);
        for (int64_t b = 0; b < d->blk && cb * d->blk + b < d->c; b++) {
            int64_t c = cb * d->blk + b;
            for (int64_t t = 0; t < taps; t++)
                dw[c * taps + t] = acc[t * d->blk + b];
            if (db)
                db[c] = accb[b];
        }
    }
    return FM_OK;
}

/* Whether node id is a depthwise 2-D convolution over channel-blocked layouts that the
 * hand-written weight gradient can take. */
static bool dw_handles(const struct conv_priv *p)
{
    int64_t c = p->xdims[1];
    int64_t blk = channel_block(fm_cpu_pd_md(p->fwd, DNNL_ARG_SRC));
    return !p->transposed && p->sp == 2 && p->wrank == 5 && p->wdims[0] == c &&
           p->wdims[1] == 1 && p->wdims[2] == 1 && p->ydims[1] == c &&
           p->wdims[3] * p->wdims[4] <= DW_MAX_TAPS && blk &&
           channel_block(fm_cpu_pd_md(p->fwd, DNNL_ARG_DST)) == blk;
}

/* The weight gradient of a grouped convolution of gw input and gw output channels a group,
 * by hand: oneDNN 2.6 has JIT code for it, but not where the plane is as small as the filter's
 * reach (RegNetY-400MF's last stage at 64x64 input: 55 groups of 8 channels, 3x3 over 2x2
 * planes padded by 1, which it runs through im2col and gemm in plain layouts: 1.8 ms at batch
 * 32, for 4M multiply-adds). A group's channels lie in one channel block (gw divides the
 * block), so each output pixel's gw gradients and each tap's gw inputs are contiguous; a
 * group's gw x gw x taps sums stay in cache while it walks dy once, the groups shared out
 * among the threads. items: x, dy (the forward's layouts), dw (plain: g, oc, ic, kh, kw), db
 * (plain) or none */
/* One group's sums, tap by tap: the tap's GW x GW sums stay in registers (GW a constant: 8
 * floats a row, one AVX2 register; 16, one AVX-512 register) while every output pixel whose
 * input at that tap lies inside the plane adds the outer product of its GW gradients and the
 * GW inputs. Compiled for AVX-512 and AVX2 too. */
static inline __attribute__((always_inline)) void grp_grad_gw(const struct dw_grad *d,
                                                               const float *x, const float *dy,
                                                               float *dw, float *db, int64_t g,
                                                               const int64_t GW)
{
    int64_t taps = d->kh * d->kw, c0 = g * GW, cb = c0 / d->blk, off = c0 % d->blk;
    const float *xg = x + cb * d->xs[1] + off, *gg = dy + cb * d->ys[1] + off;
    for (int64_t i = 0; i < d->kh; i++) {
        for (int64_t j = 0; j < d->kw; j++) {
            float acc[16][16] = {{0}};
            for (int64_t n = 0; n < d->n; n++) {
                for (int64_t oy = 0; oy < d->oh; oy++) {
                    int64_t iy = oy * d->sh - d->ph + i * d->dh;
                    if (iy < 0 || iy >= d->ih)
                        continue;
                    for (int64_t ox = 0; ox < d->ow; ox++) {
                        int64_t ix = ox * d->sw - d->pw + j * d->dw;
                        if (ix < 0 || ix >= d->iw)
                            continue;
                        const float *xv = xg + n * d->xs[0] + iy * d->xs[2] + ix * d->xs[3];
                        const float *gv = gg + n * d->ys[0] + oy * d->ys[2] + ox * d->ys[3];
                        for (int64_t o = 0; o < GW; o++)
                            for (int64_t c = 0; c < GW; c++)
                                acc[o][c] += gv[o] * xv[c];
                    }
                }
            }
            for (int64_t o = 0; o < GW; o++)
                for (int64_t c = 0; c < GW; c++)
                    dw[((c0 + o) * GW + c) * taps + i * d->kw + j] = acc[o][c];
        }
    }
    if (db) {
        for (int64_t o = 0; o < GW; o++)
            db[c0 + o] = 0.0f;
        for (int64_t n = 0; n < d->n; n++)
            for (int64_t oy = 0; oy < d->oh; oy++)
                for (int64_t ox = 0; ox < d->ow; ox++)
                    for (int64_t o = 0; o < GW; o++)
                        db[c0 + o] += gg[n * d->ys[0] + oy * d->ys[2] + ox * d->ys[3] + o];
    }
}

FM_CPU_CLONES
static void grp_grad_group(const struct dw_grad *d, const float *x, const float *dy, float *dw,
                           float *db, int64_t g)
{
    switch (d->gw) {
    case 2: grp_grad_gw(d, x, dy, dw, db, g, 2); break;
    case 4: grp_grad_gw(d, x, dy, dw, db, g, 4); break;
    case 8: grp_grad_gw(d, x, dy, dw, db, g, 8); break;
    default: grp_grad_gw(d, x, dy, dw, db, g, 16); break;
    }
}

static enum fm_status grp_grad_exec(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct dw_grad *d = arg;
    const float *x = fm_cpu_item_f32(it, 0), *dy = fm_cpu_item_f32(it, 1);
    float *dw = fm_cpu_item_f32(it, 2), *db = d->bias ? fm_cpu_item_f32(it, 3) : NULL;
    if (d->own) {   /* the layout the forward's own kernels chose: theirs, block by block */
        FM_CPU_PARALLEL
        for (int64_t cb = 0; cb < d->ncb; cb++)
            grp_grad_block_any(d, x, dy, dw, db, cb);
        return FM_OK;
    }
    int64_t groups = d->c / d->gw;
    FM_CPU_PARALLEL
    for (int64_t g = 0; g < groups; g++)
        grp_grad_group(d, x, dy, dw, db, g);
    return FM_OK;
}

/* Whether grp_grad_exec can take node id's weight gradient: a grouped 2-D convolution with as
 * many output as input channels a group, each group inside one block of the forward's
 * channel-blocked layouts (the same for x and y). */
static bool grp_handles(const struct conv_priv *p)
{
    int64_t gw = grp_width(p);
    int64_t blk = channel_block_any(fm_cpu_pd_md(p->fwd, DNNL_ARG_SRC));
    return gw && blk && blk % gw == 0 &&
           channel_block_any(fm_cpu_pd_md(p->fwd, DNNL_ARG_DST)) == blk;
}

/* The hand-written weight gradient of a depthwise convolution dw_handles accepts, or with fn
 * grp_grad_exec of a grouped one grp_handles accepts. */
static enum fm_status dw_bwd_weights(struct fm_cpu *s, fm_nid id, struct conv_priv *p,
                                     fm_tid bias, bool want_bias, fm_cpu_fn fn)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const dnnl_memory_desc_t *xmd = fm_cpu_pd_md(p->fwd, DNNL_ARG_SRC);
    const dnnl_memory_desc_t *ymd = fm_cpu_pd_md(p->fwd, DNNL_ARG_DST);
    int64_t c = p->xdims[1];
    struct dw_grad *d = dw_geometry(s, p, want_bias);
    if (!d)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    dnnl_memory_desc_t wmd, bmd;
    fm_cpu_md_plain(&wmd, p->wrank, p->wdims);
    fm_cpu_md_plain(&bmd, 1, &c);
    dnnl_memory_t mems[4] = {NULL, NULL, NULL, NULL};
    struct fm_cpu_sink skw, skb = {id, FM_PHASE_BWD_WEIGHT, FM_NONE, NULL};
    enum fm_status st = fm_cpu_input(s, id, FM_PHASE_BWD_WEIGHT, n->in[0], false, xmd, &mems[0]);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_WEIGHT, n->out[0], true, ymd, &mems[1]);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_WEIGHT, n->in[1], &wmd, &skw, &mems[2]);
    if (!st && !mems[2])   /* a frozen weight with a trainable bias */
        st = fm_cpu_mem_scratch(s, &wmd, &mems[2]);
    if (!st && want_bias)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_WEIGHT, bias, &bmd, &skb, &mems[3]);
    if (!st)
        st = fm_cpu_add_fn(s, id, FM_PHASE_BWD_WEIGHT, fn, d, mems, want_bias ? 4 : 3);
    if (!st)
        st = fm_cpu_sink_end(s, &skw);
    if (!st)
        st = fm_cpu_sink_end(s, &skb);
    return st;
}

static enum fm_status conv_bwd_weights(struct fm_cpu *s, fm_nid id, struct conv_priv *p)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid bias = n->n_in > 2 ? n->in[2] : FM_NONE;
    int rank = p->sp + 2;
    int64_t cout = p->ydims[1];
    dnnl_memory_desc_t src, dwei, dbias, ddst;
    fm_cpu_md_any(&src, rank, p->xdims);
    fm_cpu_md_any(&dwei, p->wrank, p->wdims);
    fm_cpu_md_plain(&dbias, 1, &cout);
    fm_cpu_md_any(&ddst, rank, p->ydims);
    bool want_bias = fm_cpu_wants_grad(s, bias);
    enum fm_status st = FM_OK;
    if (p->small)
        return fm_cpu_small_bwd_weights(s, id, p->small, n->in[0], n->in[1], bias, want_bias,
                                        n->out[0]);
    if (p->transposed) {
        dnnl_deconvolution_desc_t dd;
        FM_DNNL_TRY(s, dnnl_dilated_deconvolution_backward_weights_desc_init(
                           &dd, conv_alg(p), &src, &dwei, want_bias ? &dbias : NULL, &ddst,
                           p->strides, p->dil, p->pl, p->pr));
        st = deconv_bwd_weights(s, id, p, &dd, bias, want_bias);
    } else {
        bool dw = dw_handles(p), grp = !dw && grp_handles(p);
        if (p->own_grp)   /* flopmeter's layouts: no oneDNN code but reference runs there */
            return dw_bwd_weights(s, id, p, bias, want_bias, grp_grad_exec);
        if (dw && p->wdims[3] * p->wdims[4] > 9)
            return dw_bwd_weights(s, id, p, bias, want_bias, dw_grad_exec);
        dnnl_convolution_desc_t cd;
        FM_DNNL_TRY(s, dnnl_dilated_convolution_backward_weights_desc_init(
                           &cd, conv_alg(p), &src, &dwei, want_bias ? &dbias : NULL, &ddst,
                           p->strides, p->dil, p->pl, p->pr));
        /* 3x3: oneDNN's vectorized code, except where it declines the shape (a 2x2 input
         * padded by 1, ShuffleNetV2's last stage at 64x64: im2col and gemm, 50 times slower) */
        if (dw || grp) {
            dnnl_primitive_desc_t pd;
            st = fm_cpu_pd(s, id, &cd, p->fwd, &pd);
            if (!st && fm_cpu_pd_is_slow(pd))
                return dw_bwd_weights(s, id, p, bias, want_bias,
                                      dw ? dw_grad_exec : grp_grad_exec);
        }
        if (!st)
            st = fm_cpu_bwd_weights(s, id, &cd, p->fwd, bias, want_bias);
    }
out:
    return st;
}

enum fm_status fm_cpu_conv_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct conv_priv *p = s->nodes[id].priv;
    fm_tid bias = n->n_in > 2 ? n->in[2] : FM_NONE;
    enum fm_status st = FM_OK;
    if (fm_cpu_wants_grad(s, n->in[0]))
        st = conv_bwd_data(s, id, p);
    if (!st && (fm_cpu_wants_grad(s, n->in[1]) || fm_cpu_wants_grad(s, bias)))
        st = conv_bwd_weights(s, id, p);
    return st;
}
