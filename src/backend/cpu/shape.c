/* Data movement and Dropout on the CPU backend. Flatten, Reshape and Identity are views when
 * the input is plain (no copy) and one reorder otherwise; their gradients flow back through
 * the same row-major order. Concat along the channels of inputs in one layout is a copy of
 * runs (concat_runs_*); otherwise a oneDNN concat, its backward one reorder per input from a
 * sub-memory of the output gradient; of integers, row copies (no gradient). Dropout in
 * training draws a keep-mask per element (inverted dropout, kept values scaled by 1/(1-p), as
 * torch.nn.Dropout) and is the identity in inference. Not here: Split, Transpose. */
#include "cpu.h"

#include <string.h>

enum fm_status fm_cpu_shape_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                  const struct fm_node *n)
{
    if (n->op == FM_OP_CONCAT) {
        if (n->n_in + 2 > FM_CPU_MAX_ARGS)
            return fm_error(ctx, FM_ERR_UNSUPPORTED,
                            "layer '%s' (Concat): %d inputs; the CPU backend takes at most %d",
                            n->name, n->n_in, FM_CPU_MAX_ARGS - 2);
        int rank = fm_graph_tensor(g, n->out[0])->shape.rank;
        if (rank < 1 || rank > 6)
            return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (Concat): rank %d", n->name,
                            rank);
    }
    if (n->op == FM_OP_DROPOUT && n->n_in > 1)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "layer '%s' (Dropout): ratio or training-mode inputs are not supported "
                        "by the CPU backend",
                        n->name);
    return FM_OK;
}

/* ---- views and copies: Flatten, Reshape, Identity, Dropout in inference ---- */

/* An integer tensor (token ids viewed as (B*S), a mask) is an int32 array of its own: copied
 * every step, since its source may be computed (they are small). */
struct int_copy {
    const int32_t *src;
    int32_t *dst;
    uint64_t n;
};

static enum fm_status int_copy_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    (void)it;
    const struct int_copy *c = arg;
    memcpy(c->dst, c->src, sizeof(int32_t) * (size_t)c->n);
    return FM_OK;
}

static enum fm_status view_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid x = n->in[0], y = n->out[0];
    if (fm_cpu_is_int(s, x)) {
        struct int_copy *c = fm_cpu_buf(s, sizeof(*c));
        if (!c)
            return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
        enum fm_status st = fm_cpu_place_out(s, y);
        if (st)
            return st;
        if (!fm_cpu_is_int(s, y) || s->t[y].numel != s->t[x].numel)
            return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s' (%s): an integer input "
                            "with a float output", n->name, n->op_name);
        c->src = fm_cpu_ints(s, x);
        c->dst = fm_cpu_ints(s, y);
        c->n = s->t[x].numel;
        return fm_cpu_add_fn(s, id, FM_PHASE_FWD, int_copy_fn, c, NULL, 0);
    }
    int64_t xd[FM_MAX_DIMS], yd[FM_MAX_DIMS];
    int xr = fm_cpu_dims(fm_graph_tensor(s->g, x), xd);
    int yr = fm_cpu_dims(fm_graph_tensor(s->g, y), yd);
    bool same = xr == yr && memcmp(xd, yd, sizeof(int64_t) * (size_t)xr) == 0;
    if (same || fm_cpu_md_is_plain(&s->t[x].md))
        return fm_cpu_place_view(s, y, x);
    /* a blocked input: one reorder into the plain layout, written straight into y */
    dnnl_memory_desc_t ymd, as_x;
    fm_cpu_md_plain(&ymd, yr, yd);
    fm_cpu_md_plain(&as_x, xr, xd);
    dnnl_memory_t dst;
    enum fm_status st = fm_cpu_place(s, y, &ymd);
    if (!st)
        st = fm_cpu_mem(s, &as_x, s->t[y].val, &dst);
    if (!st)
        st = fm_cpu_add_reorder(s, id, FM_PHASE_FWD, s->t[x].val_mem, dst, false);
    return st;
}

/* ---- Dropout ---- */

struct dropout_arg {
    uint64_t seed;
    size_t n;                    /* elements of the (padded) buffers */
    float p, scale;
    uint8_t *mask;
};

/* Elements per block: a block's mask is drawn, then applied, while both are in L1. Fewer than
 * DROPOUT_PARALLEL blocks run on the calling thread (a classifier's 4096 elements are 2 us). */
enum { DROPOUT_BLOCK = 4096, DROPOUT_PARALLEL = 8 };

/* The draw of element i: splitmix64 (Steele et al. 2014) advanced i + 1 times from `state`,
 * computed directly (its state only ever adds the golden gamma), so any block runs on any
 * thread and the mask is the one the sequential generator gives. The top 24 bits: a uniform
 * number compared with p * 2^24. */
static inline uint32_t dropout_draw(uint64_t state, uint64_t i)
{
    uint64_t z = state + (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)((z ^ (z >> 31)) >> 40);
}

/* The mask of elements [lo, hi): keep where the draw is at least p * 2^24. The hash is two
 * 64-bit multiplies per element; x86-64 has vector 64-bit multiplies only with AVX-512
 * (vpmullq; AVX2 builds them from 32-bit ones), and the build targets the baseline x86-64, so
 * the loop is cloned for those ISAs and the loader picks the one this CPU has. On a Zen 4 core,
 * 12.6M draws (GPT-2 small's attention dropout at batch 1): 34 ms scalar, 12 ms AVX2, 4.4 ms
 * AVX-512. The same integers whichever runs. */
FM_CPU_CLONES
static void dropout_draw_block(uint8_t *restrict mask, uint64_t state, uint32_t threshold,
                               size_t lo, size_t hi)
{
    FM_CPU_SIMD
    for (size_t i = lo; i < hi; i++)
        mask[i] = dropout_draw(state, i) >= threshold;
}

/* y = mask ? v : +0.0f without a branch: v's bits and'ed with all ones or all zeros, the
 * select itself (a dropped NaN or infinity gives 0 as before; a multiply by the mask would give
 * NaN). A branch on a random mask mispredicts on about min(p, 1 - p) of the elements, and GCC
 * does not turn the conditional into a blend when the multiply may trap; the and vectorizes. */
static inline float dropout_select(uint8_t keep, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof(bits));
    bits &= 0u - (uint32_t)keep;
    memcpy(&v, &bits, sizeof(v));
    return v;
}

/* memories: x, y (same layout). A fresh mask every step, reproducible from the seed. Zero
 * padding stays zero (0 * scale). Blocks run on the step's threads; within a block the mask is
 * drawn first and the select reads it back while it is in L1. The pointers are
 * restrict-qualified locals: the mask's byte stores could otherwise alias everything, and
 * every iteration reloaded the struct's fields. */
static enum fm_status dropout_fwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    const struct dropout_arg *d = arg;
    const float *restrict x = fm_cpu_item_f32(it, 0);
    float *restrict y = fm_cpu_item_f32(it, 1);
    uint8_t *restrict mask = d->mask;
    const size_t n = d->n;
    const float scale = d->scale;
    const uint64_t state = d->seed ^ (s->step_index * 0xd1b54a32d192ed03ull);
    /* keep with probability 1 - p */
    const uint32_t threshold = (uint32_t)((double)d->p * 16777216.0);
    const int64_t blocks = (int64_t)((n + DROPOUT_BLOCK - 1) / DROPOUT_BLOCK);
    FM_CPU_PARALLEL_IF(blocks >= DROPOUT_PARALLEL)
    for (int64_t b = 0; b < blocks; b++) {
        size_t lo = (size_t)b * DROPOUT_BLOCK;
        size_t hi = lo + DROPOUT_BLOCK < n ? lo + DROPOUT_BLOCK : n;
        dropout_draw_block(mask, state, threshold, lo, hi);
        FM_CPU_SIMD
        for (size_t i = lo; i < hi; i++)
            y[i] = dropout_select(mask[i], x[i] * scale);
    }
    return FM_OK;
}

/* memories: dy, dx (the layout of x); the select of the forward, on the step's threads */
static enum fm_status dropout_bwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct dropout_arg *d = arg;
    const float *restrict dy = fm_cpu_item_f32(it, 0);
    float *restrict dx = fm_cpu_item_f32(it, 1);
    const uint8_t *restrict mask = d->mask;
    const size_t n = d->n;
    const float scale = d->scale;
    const int64_t blocks = (int64_t)((n + DROPOUT_BLOCK - 1) / DROPOUT_BLOCK);
    FM_CPU_PARALLEL_IF(blocks >= DROPOUT_PARALLEL)
    for (int64_t b = 0; b < blocks; b++) {
        size_t lo = (size_t)b * DROPOUT_BLOCK;
        size_t hi = lo + DROPOUT_BLOCK < n ? lo + DROPOUT_BLOCK : n;
        FM_CPU_SIMD
        for (size_t i = lo; i < hi; i++)
            dx[i] = dropout_select(mask[i], dy[i] * scale);
    }
    return FM_OK;
}

static enum fm_status dropout_train_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct dropout_arg *d = fm_cpu_buf(s, sizeof(*d));
    if (!d)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = d;
    enum fm_status st = fm_cpu_place(s, n->out[0], &s->t[n->in[0]].md);
    if (st)
        return st;
    d->n = s->t[n->in[0]].size / sizeof(float);
    d->p = (float)n->attrs.ratio;
    d->scale = (float)(1.0 / (1.0 - n->attrs.ratio));
    d->seed = s->opts.seed * 0x9e3779b97f4a7c15ull + (uint64_t)id;
    d->mask = fm_cpu_buf(s, d->n);
    if (!d->mask)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory for a dropout mask");
    dnnl_memory_t mems[2] = {s->t[n->in[0]].val_mem, s->t[n->out[0]].val_mem};
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, dropout_fwd, d, mems, 2);
}

static enum fm_status dropout_train_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct dropout_arg *d = s->nodes[id].priv;
    const dnnl_memory_desc_t *xmd = &s->t[n->in[0]].md;
    dnnl_memory_t m_dy, m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true, xmd, &m_dy);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[0], xmd, &sk, &m_dx);
    if (st || !m_dx)
        return st;
    dnnl_memory_t mems[2] = {m_dy, m_dx};
    st = fm_cpu_add_fn(s, id, FM_PHASE_BWD_DATA, dropout_bwd, d, mems, 2);
    return st ? st : fm_cpu_sink_end(s, &sk);
}

/* ---- Concat ---- */

struct concat_priv {
    int axis;
    struct concat_runs *runs;   /* by concat_runs_fwd and _bwd, or NULL: oneDNN's concat */
};

/* Concat of integer tensors (index tuples built for GatherND in mixture-of-experts exports):
 * each input's rows copied into the output's, every step (their sources may be computed). */
struct int_concat {
    int n_in;
    int64_t outer, inner;                    /* dims before the axis, after it */
    const int32_t *src[FM_CPU_MAX_ARGS];
    int64_t len[FM_CPU_MAX_ARGS];            /* each input's dim along the axis */
    int32_t *dst;
    int64_t out_len;
};

static enum fm_status int_concat_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    (void)it;
    const struct int_concat *c = arg;
    for (int64_t o = 0; o < c->outer; o++) {
        int32_t *d = c->dst + o * c->out_len * c->inner;
        for (int i = 0; i < c->n_in; i++) {
            size_t run = (size_t)(c->len[i] * c->inner);
            memcpy(d, c->src[i] + (size_t)o * run, sizeof(int32_t) * run);
            d += run;
        }
    }
    return FM_OK;
}

static enum fm_status int_concat_fwd(struct fm_cpu *s, fm_nid id, int axis)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const struct fm_tensor *y = fm_graph_tensor(s->g, n->out[0]);
    struct int_concat *c = fm_cpu_buf(s, sizeof(*c));
    if (!c)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    c->n_in = n->n_in;
    c->outer = c->inner = 1;
    for (int d = 0; d < y->shape.rank; d++) {
        if (d < axis)
            c->outer *= y->shape.dims[d];
        else if (d > axis)
            c->inner *= y->shape.dims[d];
    }
    c->out_len = y->shape.dims[axis];
    for (int i = 0; i < n->n_in; i++) {
        if (!fm_cpu_is_int(s, n->in[i]))
            return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s' (Concat): integer and float "
                            "inputs mixed", n->name);
        if (!fm_cpu_ints(s, n->in[i])) {   /* an integer parameter or buffer: placed now */
            enum fm_status st = fm_cpu_place_out(s, n->in[i]);
            if (st)
                return st;
        }
        c->src[i] = fm_cpu_ints(s, n->in[i]);
        c->len[i] = fm_graph_tensor(s->g, n->in[i])->shape.dims[axis];
    }
    enum fm_status st = fm_cpu_place_out(s, n->out[0]);
    if (st)
        return st;
    c->dst = fm_cpu_ints(s, n->out[0]);
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, int_concat_fn, c, NULL, 0);
}

/* Concat along the channels of (N, C, H, W) inputs that share one layout, plain or blocked by
 * 8 or 16 channels with every input but the last a whole number of blocks: then each image's
 * part of an input is one run of the output's image, so the forward is a copy per (image,
 * input) and the backward a copy (or an add) of the same runs of dy into each input's
 * gradient. oneDNN 2.6 runs many-input concats with its reference code (DenseNet's, up to 49
 * inputs) and the backward was one reorder per input: 24-input concats of 4x4 planes took
 * 0.11 ms at batch 1 for 65 KB. items: the inputs, y (forward); dy, then the gradients of
 * the inputs that want one (backward). */
struct concat_runs {
    int tag;                             /* concat_tags[tag]: the layout of y and the runs */
    int n_in;
    int64_t n, ystride;                  /* images; floats per image of y */
    int64_t run[FM_CPU_MAX_ARGS];        /* floats per image of input i (its padding too) */
    int64_t off[FM_CPU_MAX_ARGS];        /* where they start in y's image */
    int n_grad;                          /* backward: inputs written */
    int which[FM_CPU_MAX_ARGS];          /* the input of gradient item k + 1 */
    bool add[FM_CPU_MAX_ARGS];           /* add into it (another node wrote it first) */
};
/* floats of y below which the copies run on the calling thread */
#define CONCAT_SERIAL (1 << 16)

static enum fm_status concat_runs_fwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct concat_runs *c = arg;
    float *y = fm_cpu_item_f32(it, c->n_in);
    const float *src[FM_CPU_MAX_ARGS];
    for (int i = 0; i < c->n_in; i++)
        src[i] = fm_cpu_item_f32(it, i);
    FM_CPU_PARALLEL_IF(c->n * c->ystride > CONCAT_SERIAL)
    for (int64_t r = 0; r < c->n * c->n_in; r++) {
        int64_t n = r / c->n_in;
        int i = (int)(r % c->n_in);
        memcpy(y + n * c->ystride + c->off[i], src[i] + n * c->run[i],
               sizeof(float) * (size_t)c->run[i]);
    }
    return FM_OK;
}

static enum fm_status concat_runs_bwd(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct concat_runs *c = arg;
    const float *dy = fm_cpu_item_f32(it, 0);
    float *dxs[FM_CPU_MAX_ARGS];
    for (int k = 0; k < c->n_grad; k++)
        dxs[k] = fm_cpu_item_f32(it, k + 1);
    /* images apart on the threads: an input listed twice writes its two runs of an image in
     * order, on one thread */
    FM_CPU_PARALLEL_IF(c->n * c->ystride > CONCAT_SERIAL)
    for (int64_t n = 0; n < c->n; n++) {
        for (int k = 0; k < c->n_grad; k++) {
            int i = c->which[k];
            const float *src = dy + n * c->ystride + c->off[i];
            float *dst = dxs[k] + n * c->run[i];
            if (c->add[k]) {
                FM_CPU_SIMD
                for (int64_t e = 0; e < c->run[i]; e++)
                    dst[e] += src[e];
            } else {
                memcpy(dst, src, sizeof(float) * (size_t)c->run[i]);
            }
        }
    }
    return FM_OK;
}

static const dnnl_format_tag_t concat_tags[3] = {dnnl_aBcd16b, dnnl_aBcd8b, dnnl_abcd};

/* Input i's (or with i = -1 the output's) descriptor in the runs' layout. */
static bool concat_runs_md(const struct fm_cpu *s, const struct fm_node *n, int tag, int i,
                           dnnl_memory_desc_t *md)
{
    const struct fm_tensor *x = fm_graph_tensor(s->g, i < 0 ? n->out[0] : n->in[i]);
    dnnl_dims_t d = {x->shape.dims[0], x->shape.dims[1], x->shape.dims[2], x->shape.dims[3]};
    return dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, concat_tags[tag]) == dnnl_success;
}

/* The runs of node n's concat when its inputs allow: the layout blocked by 16 (or 8) channels
 * that one of the inputs has, where every input but the last is a whole number of blocks
 * (inputs in another layout, such as a pooled map left plain, are reordered to it), or plain
 * when all inputs are. NULL when neither holds. */
static struct concat_runs *concat_runs_plan(struct fm_cpu *s, const struct fm_node *n, int axis)
{
    const struct fm_tensor *y = fm_graph_tensor(s->g, n->out[0]);
    if (y->shape.rank != 4 || axis != 1)
        return NULL;
    static const int64_t blocks[3] = {16, 8, 1};
    int64_t hw = y->shape.dims[2] * y->shape.dims[3];
    for (int k = 0; k < 3; k++) {
        bool aligned = true;
        int have = 0;
        int64_t off = 0;
        for (int i = 0; i < n->n_in && aligned; i++) {
            dnnl_memory_desc_t want;
            if (!concat_runs_md(s, n, k, i, &want))
                return NULL;
            have += fm_cpu_md_equal(&want, &s->t[n->in[i]].md);
            aligned = off % blocks[k] == 0;
            off += fm_graph_tensor(s->g, n->in[i])->shape.dims[1];
        }
        if (!aligned || !have || (blocks[k] == 1 && have < n->n_in))
            continue;
        struct concat_runs *c = fm_cpu_buf(s, sizeof(*c));
        if (!c)
            return NULL;
        c->tag = k;
        c->n_in = n->n_in;
        c->n = y->shape.dims[0];
        int64_t cb = blocks[k];
        c->ystride = (y->shape.dims[1] + cb - 1) / cb * cb * hw;
        off = 0;
        for (int i = 0; i < n->n_in; i++) {
            int64_t ci = fm_graph_tensor(s->g, n->in[i])->shape.dims[1];
            c->run[i] = (ci + cb - 1) / cb * cb * hw;
            c->off[i] = off * hw;
            off += ci;
        }
        return c;
    }
    return NULL;
}

static enum fm_status concat_runs_inputs(struct fm_cpu *s, fm_nid id, struct concat_runs *c)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    dnnl_memory_t mems[FM_CPU_MAX_ARGS];
    dnnl_memory_desc_t md;
    enum fm_status st = FM_OK;
    for (int i = 0; i < n->n_in && !st; i++) {
        if (!concat_runs_md(s, n, c->tag, i, &md))
            return fm_error(s->ctx, FM_ERR_BACKEND,
                            "layer '%s' (Concat): oneDNN gave no layout for it", n->name);
        st = fm_cpu_input(s, id, FM_PHASE_FWD, n->in[i], false, &md, &mems[i]);
    }
    if (!st && !concat_runs_md(s, n, c->tag, -1, &md))
        return fm_error(s->ctx, FM_ERR_BACKEND, "layer '%s' (Concat): oneDNN gave no layout for it",
                        n->name);
    if (!st)
        st = fm_cpu_place(s, n->out[0], &md);
    if (st)
        return st;
    mems[n->n_in] = s->t[n->out[0]].val_mem;
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, concat_runs_fwd, c, mems, n->n_in + 1);
}

static enum fm_status concat_runs_grads(struct fm_cpu *s, fm_nid id, struct concat_runs *c)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    dnnl_memory_t mems[FM_CPU_MAX_ARGS];
    struct fm_cpu_sink sk[FM_CPU_MAX_ARGS];
    int nsk = 0;
    enum fm_status st = fm_cpu_input(s, id, FM_PHASE_BWD_DATA, n->out[0], true,
                                     &s->t[n->out[0]].md, &mems[0]);
    c->n_grad = 0;
    for (int i = 0; i < n->n_in && !st; i++) {
        struct fm_cpu_tensor *t = &s->t[n->in[i]];
        if (!fm_cpu_wants_grad(s, n->in[i]))
            continue;
        dnnl_memory_desc_t md;
        if (!concat_runs_md(s, n, c->tag, i, &md))
            return fm_error(s->ctx, FM_ERR_BACKEND,
                            "layer '%s' (Concat): oneDNN gave no layout for it", n->name);
        int k = c->n_grad++;
        c->which[k] = i;
        /* another node wrote the gradient first, in this layout: add into it */
        c->add[k] = t->grad_planned && fm_cpu_md_equal(&md, &t->md);
        if (c->add[k]) {
            mems[k + 1] = t->grad_mem;
        } else {
            st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_DATA, n->in[i], &md, &sk[nsk],
                                   &mems[k + 1]);
            nsk++;
        }
    }
    if (!st)
        st = fm_cpu_add_fn(s, id, FM_PHASE_BWD_DATA, concat_runs_bwd, c, mems, c->n_grad + 1);
    for (int k = 0; k < nsk && !st; k++)
        st = fm_cpu_sink_end(s, &sk[k]);
    return st;
}

static enum fm_status concat_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const struct fm_tensor *y = fm_graph_tensor(s->g, n->out[0]);
    struct concat_priv *p = fm_cpu_buf(s, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    s->nodes[id].priv = p;
    int64_t axis = n->attrs.axis < 0 ? n->attrs.axis + y->shape.rank : n->attrs.axis;
    p->axis = (int)axis;
    if (fm_cpu_is_int(s, n->out[0]))
        return int_concat_fwd(s, id, p->axis);
    dnnl_memory_desc_t srcs[FM_CPU_MAX_ARGS], dst;
    for (int i = 0; i < n->n_in; i++) {
        enum fm_status st = fm_cpu_ensure(s, n->in[i]);
        if (st)
            return st;
    }
    p->runs = concat_runs_plan(s, n, p->axis);
    if (p->runs)
        return concat_runs_inputs(s, id, p->runs);
    /* blocked layouts split channels in blocks of 8 or 16: an input that starts inside a
     * block could not be cut out again for its gradient, so such concats stay plain */
    bool aligned = true;
    int64_t off = 0;
    enum fm_status st = FM_OK;
    for (int i = 0; i < n->n_in; i++) {   /* every input placed above */
        srcs[i] = s->t[n->in[i]].md;
        if (off % 16 != 0)
            aligned = false;
        off += fm_graph_tensor(s->g, n->in[i])->shape.dims[axis];
    }
    if (aligned)
        fm_cpu_md_any(&dst, y->shape.rank, y->shape.dims);
    else
        fm_cpu_md_plain(&dst, y->shape.rank, y->shape.dims);
    dnnl_primitive_desc_t pd = NULL;
    FM_DNNL_TRY(s, dnnl_concat_primitive_desc_create(&pd, &dst, n->n_in, p->axis, srcs, s->attr,
                                                     s->engine));
    st = fm_cpu_keep_pd(s, pd);
    if (!st)
        st = fm_cpu_place(s, n->out[0], fm_cpu_pd_md(pd, DNNL_ARG_DST));
    if (st)
        goto out;
    {
        struct fm_cpu_arg args[FM_CPU_MAX_ARGS];
        for (int i = 0; i < n->n_in; i++)
            args[i] = (struct fm_cpu_arg){DNNL_ARG_MULTIPLE_SRC + i, s->t[n->in[i]].val_mem};
        args[n->n_in] = (struct fm_cpu_arg){DNNL_ARG_DST, s->t[n->out[0]].val_mem};
        st = fm_cpu_add_prim(s, id, FM_PHASE_FWD, pd, args, n->n_in + 1);
    }
out:
    return st;
}

static enum fm_status concat_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct concat_priv *p = s->nodes[id].priv;
    if (p->runs)
        return concat_runs_grads(s, id, p->runs);
    const struct fm_cpu_tensor *y = &s->t[n->out[0]];
    dnnl_dims_t dims, offs;
    enum fm_status st = FM_OK;
    for (int k = 0; k < y->md.ndims; k++)
        offs[k] = 0;
    for (int i = 0; i < n->n_in && !st; i++) {
        const struct fm_tensor *x = fm_graph_tensor(s->g, n->in[i]);
        if (fm_cpu_wants_grad(s, n->in[i])) {
            for (int k = 0; k < y->md.ndims; k++)
                dims[k] = x->shape.dims[k];
            dnnl_memory_desc_t sub;
            dnnl_memory_t m;
            FM_DNNL_TRY(s, dnnl_memory_desc_init_submemory(&sub, &y->md, dims, offs));
            st = fm_cpu_mem(s, &sub, y->grad, &m);
            if (!st)
                st = fm_cpu_sink_from(s, id, FM_PHASE_BWD_DATA, n->in[i], m);
        }
        offs[p->axis] += x->shape.dims[p->axis];
    }
out:
    return st;
}

/* ---- dispatch ---- */

enum fm_status fm_cpu_shape_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    if (n->op == FM_OP_CONCAT)
        return concat_fwd(s, id);
    if (n->op == FM_OP_DROPOUT && s->train && n->attrs.ratio > 0.0)
        return dropout_train_fwd(s, id);
    return view_fwd(s, id);
}

enum fm_status fm_cpu_shape_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    if (n->op == FM_OP_CONCAT)
        return fm_cpu_is_int(s, n->out[0]) ? FM_OK : concat_bwd(s, id);
    if (n->op == FM_OP_DROPOUT && s->train && n->attrs.ratio > 0.0)
        return dropout_train_bwd(s, id);
    if (fm_cpu_is_int(s, n->in[0]))
        return FM_OK;
    return fm_cpu_sink_from(s, id, FM_PHASE_BWD_DATA, n->in[0], s->t[n->out[0]].grad_mem);
}
