/* Data movement on the CPU backend: Transpose, Split, Slice, Gather, Embedding, Squeeze,
 * Unsqueeze, Expand, Tile, Pad, Resize, ConstantOfShape, Range, Cast and TopK.
 *
 * Most of these ops move elements without arithmetic, and one kernel does all of it: the
 * strided walk (struct walk), which copies the elements of a box of up to 16 dims from a
 * source with any element strides (negative for reversed slices, 0 for broadcast) into a
 * destination with any strides. Planning simplifies the box (drops size-1 dims, merges dims
 * that are contiguous in both), so most walks copy long contiguous rows with memcpy, split
 * among the threads. Float tensors are plain fp32 (read through the item's memories, whose
 * data handles are bound after planning); integer tensors are int32 arrays (pointers kept in
 * the walk). Both are 4 bytes an element, so one walk serves both.
 *   Transpose  a oneDNN reorder from a descriptor over x with permuted strides (backward: the
 *              inverse permutation, a reorder into the gradient sink); a view when only
 *              size-1 dims move
 *   Split      one walk per output; backward one walk per output gradient into its slice of dX
 *   Slice      a walk with start offsets and stepped (possibly negative) strides; backward the
 *              transposed walk into a zeroed dX
 *   Pad        constant 0 (the rule stores no mode or value): a walk of the kept box into the
 *              output, whose border is zero from allocation; negative pads crop
 *   Expand, Tile   a walk with stride 0 along the copies; backward sums dY over the copies
 *              (hand-written: oneDNN 2.6's reduction runs its slow reference code on these)
 *   Gather, Embedding  row copies by index (negative indices wrap); backward scatter-adds dY
 *              into dX, parallel over column slabs of the table so no two threads add into the
 *              same element
 *   GatherElements  element copies by an index per element along axis; backward scatter-adds
 *              dY on one thread (two outputs may gather one element)
 *   TopK       the best k of each run along the axis, sorted, lower index first among equals;
 *              backward puts each value's gradient back at its index in a zeroed dX
 *   GatherND   slice copies by index tuples (batch_dims shared); backward likewise
 *   ScatterND  data copied, slices replaced or combined at index tuples in order; backward
 *              (reduction none or add) dData = dy (replaced slices zeroed), dUpdates gathered
 *   Squeeze, Unsqueeze, Cast to the same float type  views (no copy)
 *   Resize     in inference oneDNN resampling for linear, and for nearest with integer
 *              upsampling factors, when only spatial dims (2 and up) of a rank 3-5 tensor change;
 *              otherwise (and in training: oneDNN 2.6's resampling backward is 2-5x slower) one
 *              hand-written pass per resized axis (nearest, linear, cubic with a = -0.75) with
 *              taps and weights computed at planning. Coordinates are ONNX's defaults,
 *              half_pixel (PyTorch's align_corners=False), nearest rounding half down.
 *   ConstantOfShape, Range  filled once at planning (zeros; 0, 1, 2, ...): nothing per step.
 *   Cast       float <-> int32 conversions (truncation toward zero; narrow types wrap, bool is
 *              x != 0); only a float -> float cast passes a gradient. */
#include "cpu.h"

#include <math.h>
#include <string.h>

#define WALK_DIMS (2 * FM_MAX_DIMS)

enum fm_status fm_cpu_move_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                 const struct fm_node *n)
{
    /* every form the shape rules accept runs, but ScatterND's gradient only for reductions
     * none and add, and TopK of floats only (the integer TopK of no export seen) */
    if (n->op == FM_OP_TOPK && !fm_dtype_is_float(fm_graph_tensor(g, n->in[0])->dtype))
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (TopK): the CPU backend takes "
                        "float data only", n->name);
    if (n->op == FM_OP_SCATTER_ND && n->attrs.nints && n->attrs.ints[0] > 1 &&
        (fm_graph_needs_grad(g, n->in[0]) || fm_graph_needs_grad(g, n->in[2])))
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (ScatterND): the gradient of "
                        "reduction %lld is not implemented on the CPU backend", n->name,
                        (long long)n->attrs.ints[0]);
    return FM_OK;
}

/* ---- helpers ---- */

static int dims_of(const struct fm_cpu *s, fm_tid tid, int64_t *dims)
{
    return fm_cpu_dims(fm_graph_tensor(s->g, tid), dims);
}

static void plain_strides(int rank, const int64_t *dims, int64_t *st)
{
    int64_t v = 1;
    for (int d = rank - 1; d >= 0; d--) {
        st[d] = v;
        v *= dims[d];
    }
}

static void *priv_new(struct fm_cpu *s, fm_nid id, size_t size)
{
    void *p = fm_cpu_buf(s, size);
    s->nodes[id].priv = p;
    return p;
}

static enum fm_status nomem(struct fm_cpu *s)
{
    return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
}

/* The int32 array of an integer input; a source nothing placed yet (an integer parameter or
 * buffer) gets its array now and its values with the other sources. */
static enum fm_status ints_in(struct fm_cpu *s, fm_tid tid, const int32_t **out)
{
    if (!fm_cpu_ints(s, tid)) {
        enum fm_status st = fm_cpu_place_out(s, tid);
        if (st)
            return st;
    }
    *out = fm_cpu_ints(s, tid);
    return FM_OK;
}

/* The data of a memory known at planning (a tensor's own storage or a forward copy): what a
 * memory object with another descriptor over the same bytes is built on. */
static enum fm_status real_data(struct fm_cpu *s, fm_nid id, dnnl_memory_t m, void **out)
{
    *out = fm_cpu_mem_data(m);
    if (!*out)
        return fm_error(s->ctx, FM_ERR_BACKEND, "layer '%s': a buffer has no storage yet",
                        fm_cpu_node_name(s, id));
    return FM_OK;
}

/* ---- the strided walk ---- */

struct walk {
    int rank;
    int64_t dims[WALK_DIMS];
    int64_t ss[WALK_DIMS], ds[WALK_DIMS];   /* element strides of source and destination */
    int64_t soff, doff;
    int64_t rows;                 /* product of all dims but the last */
    int64_t chunk, chunks;        /* the last dim in chunks, when there are few rows */
    uint64_t zero_n;              /* destination elements zeroed first (0: none) */
    bool fill_zero;               /* no source: the box of the destination is zeroed */
    const int32_t *isrc;          /* integer tensors: the arrays themselves */
    int32_t *idst;
};

static void walk_init(struct walk *w, int rank, const int64_t *dims, const int64_t *ss,
                      int64_t soff, const int64_t *ds, int64_t doff)
{
    memset(w, 0, sizeof(*w));
    w->soff = soff;
    w->doff = doff;
    int r = 0;
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 1)
            continue;
        if (r > 0 && w->ss[r - 1] == ss[d] * dims[d] && w->ds[r - 1] == ds[d] * dims[d]) {
            w->dims[r - 1] *= dims[d];   /* contiguous with the dim before in both */
            w->ss[r - 1] = ss[d];
            w->ds[r - 1] = ds[d];
            continue;
        }
        w->dims[r] = dims[d];
        w->ss[r] = ss[d];
        w->ds[r] = ds[d];
        r++;
    }
    if (r == 0) {
        w->dims[0] = w->ss[0] = w->ds[0] = 1;
        r = 1;
    }
    w->rank = r;
    w->rows = 1;
    for (int d = 0; d < r - 1; d++)
        w->rows *= w->dims[d];
    int64_t n = w->dims[r - 1];
    w->chunk = n;
    w->chunks = 1;
    if (w->rows < 64 && n > 16384) {   /* few long rows: share them among the threads */
        w->chunk = 8192;
        w->chunks = (n + w->chunk - 1) / w->chunk;
    }
}

/* Copies n elements of 4 bytes; no source: zeroes. */
static void walk_row(uint32_t *dst, int64_t dl, const uint32_t *src, int64_t sl, int64_t n)
{
    if (!src) {
        if (dl == 1) {
            memset(dst, 0, sizeof(uint32_t) * (size_t)n);
        } else {
            for (int64_t i = 0; i < n; i++)
                dst[i * dl] = 0;
        }
    } else if (sl == 1 && dl == 1) {
        memcpy(dst, src, sizeof(uint32_t) * (size_t)n);
    } else if (sl == 0 && dl == 1) {
        uint32_t v = src[0];
        for (int64_t i = 0; i < n; i++)
            dst[i] = v;
    } else {
        for (int64_t i = 0; i < n; i++)
            dst[i * dl] = src[i * sl];
    }
}

static void zero_fill(uint32_t *dst, uint64_t n)
{
    const int64_t block = 1 << 16;
    int64_t blocks = (int64_t)((n + (uint64_t)block - 1) / (uint64_t)block);
    FM_CPU_PARALLEL
    for (int64_t b = 0; b < blocks; b++) {
        int64_t e = (b + 1) * block > (int64_t)n ? (int64_t)n : (b + 1) * block;
        memset(dst + b * block, 0, sizeof(uint32_t) * (size_t)(e - b * block));
    }
}

/* memories: source and destination (float); the destination alone (fill_zero); none (ints) */
static enum fm_status walk_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct walk *w = arg;
    uint32_t *dst;
    const uint32_t *src = NULL;
    if (w->idst) {
        dst = (uint32_t *)w->idst;
        src = (const uint32_t *)w->isrc;
    } else if (w->fill_zero) {
        dst = (uint32_t *)fm_cpu_item_f32(it, 0);
    } else {
        src = (const uint32_t *)fm_cpu_item_f32(it, 0);
        dst = (uint32_t *)fm_cpu_item_f32(it, 1);
    }
    if (w->zero_n)
        zero_fill(dst, w->zero_n);
    const int last = w->rank - 1;
    const int64_t sl = w->ss[last], dl = w->ds[last], n = w->dims[last];
    const int64_t tasks = w->rows * w->chunks;
    FM_CPU_PARALLEL
    for (int64_t t = 0; t < tasks; t++) {
        int64_t r = t / w->chunks, b = (t - r * w->chunks) * w->chunk;
        int64_t len = n - b < w->chunk ? n - b : w->chunk;
        int64_t so = w->soff + b * sl, dof = w->doff + b * dl, q = r;
        for (int d = last - 1; d >= 0; d--) {
            int64_t i = q % w->dims[d];
            q /= w->dims[d];
            so += i * w->ss[d];
            dof += i * w->ds[d];
        }
        walk_row(dst + dof, dl, src ? src + so : NULL, sl, len);
    }
    return FM_OK;
}

/* Appends a walk: float src (NULL with fill_zero) and dst memories, or the int arrays set in
 * w (then src and dst are ignored). */
static enum fm_status add_walk(struct fm_cpu *s, fm_nid id, enum fm_phase phase,
                               const struct walk *w, dnnl_memory_t src, dnnl_memory_t dst)
{
    struct walk *c = fm_cpu_buf(s, sizeof(*c));
    if (!c)
        return nomem(s);
    *c = *w;
    dnnl_memory_t mems[2] = {src, dst};
    if (c->idst)
        return fm_cpu_add_fn(s, id, phase, walk_fn, c, NULL, 0);
    if (c->fill_zero)
        return fm_cpu_add_fn(s, id, phase, walk_fn, c, &mems[1], 1);
    return fm_cpu_add_fn(s, id, phase, walk_fn, c, mems, 2);
}

/* Places y and appends the forward walk from x into it (float or int). */
static enum fm_status walk_fwd(struct fm_cpu *s, fm_nid id, fm_tid x, fm_tid y, struct walk *w)
{
    enum fm_status st = fm_cpu_place_out(s, y);
    if (st)
        return st;
    if (fm_cpu_is_int(s, x)) {
        st = ints_in(s, x, &w->isrc);
        w->idst = fm_cpu_ints(s, y);
        return st ? st : add_walk(s, id, FM_PHASE_FWD, w, NULL, NULL);
    }
    dnnl_memory_t m_x;
    st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, x, false, &m_x);
    return st ? st : add_walk(s, id, FM_PHASE_FWD, w, m_x, s->t[y].val_mem);
}

/* ---- views: Squeeze, Unsqueeze, a float -> float Cast, a Transpose of size-1 dims ---- */

static enum fm_status view_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid x = n->in[0], y = n->out[0];
    int64_t xd[FM_MAX_DIMS], yd[FM_MAX_DIMS];
    int xr = dims_of(s, x, xd), yr = dims_of(s, y, yd);
    if (fm_cpu_is_int(s, x)) {   /* int arrays cannot be shared: a copy (they are small) */
        int64_t numel = (int64_t)s->t[x].numel, one = 1;
        struct walk w;
        walk_init(&w, 1, &numel, &one, 0, &one, 0);
        return walk_fwd(s, id, x, y, &w);
    }
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

/* The gradient of a view flows back in row-major order. */
static enum fm_status view_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    if (fm_cpu_is_int(s, n->in[0]) || !s->t[n->out[0]].grad_mem)
        return FM_OK;
    return fm_cpu_sink_from(s, id, fm_cpu_grad_phase(s, n->in[0]), n->in[0],
                            s->t[n->out[0]].grad_mem);
}

/* ---- Transpose ---- */

struct transpose_priv {
    int perm[FM_MAX_DIMS];
    bool view;
};

static enum fm_status transpose_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid x = n->in[0], y = n->out[0];
    struct transpose_priv *p = priv_new(s, id, sizeof(*p));
    if (!p)
        return nomem(s);
    dnnl_dims_t xd, yd, xs, ys;
    int rank = dims_of(s, x, xd);
    dims_of(s, y, yd);
    plain_strides(rank, xd, xs);
    plain_strides(rank, yd, ys);
    int grank = fm_graph_tensor(s->g, x)->shape.rank;
    for (int i = 0; i < rank; i++) {
        int64_t v = grank == 0 ? 0 : n->attrs.nints == 0 ? rank - 1 - i : n->attrs.ints[i];
        p->perm[i] = (int)(v < 0 ? v + rank : v);
    }
    /* only size-1 dims move: the row-major order is unchanged, a view */
    p->view = true;
    for (int i = 0, last = -1; i < rank; i++) {
        if (xd[p->perm[i]] == 1)
            continue;
        if (p->perm[i] < last)
            p->view = false;
        last = p->perm[i];
    }
    if (p->view)
        return view_fwd(s, id);
    dnnl_dims_t src_st;   /* x's strides seen in y's order */
    for (int i = 0; i < rank; i++)
        src_st[i] = xs[p->perm[i]];
    if (fm_cpu_is_int(s, x)) {
        struct walk w;
        walk_init(&w, rank, yd, src_st, 0, ys, 0);
        return walk_fwd(s, id, x, y, &w);
    }
    dnnl_memory_t m_x, m_src;
    dnnl_memory_desc_t md;
    void *data;
    enum fm_status st = fm_cpu_place_out(s, y);
    if (!st)
        st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, x, false, &m_x);
    if (!st)
        st = real_data(s, id, m_x, &data);
    if (st)
        return st;
    FM_DNNL_TRY(s, dnnl_memory_desc_init_by_strides(&md, rank, yd, dnnl_f32, src_st));
    st = fm_cpu_mem(s, &md, data, &m_src);
    if (!st)
        st = fm_cpu_add_reorder(s, id, FM_PHASE_FWD, m_src, s->t[y].val_mem, false);
out:
    return st;
}

static enum fm_status transpose_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    const struct transpose_priv *p = s->nodes[id].priv;
    fm_tid x = n->in[0], y = n->out[0];
    if (p->view)
        return view_bwd(s, id);
    enum fm_phase ph = fm_cpu_grad_phase(s, x);
    dnnl_dims_t xd, yd, ys, src_st;
    int rank = dims_of(s, x, xd);
    dims_of(s, y, yd);
    plain_strides(rank, yd, ys);
    for (int i = 0; i < rank; i++)
        src_st[p->perm[i]] = ys[i];   /* dY's strides seen in x's order */
    dnnl_memory_t m_dy, m_src, m_dx;
    dnnl_memory_desc_t md;
    struct fm_cpu_sink sk;
    void *data;
    enum fm_status st = fm_cpu_input_plain(s, id, ph, y, true, &m_dy);
    if (!st)
        st = real_data(s, id, m_dy, &data);
    if (!st)
        st = fm_cpu_sink_plain(s, id, ph, x, &sk, &m_dx);
    if (st || !m_dx)
        return st;
    FM_DNNL_TRY(s, dnnl_memory_desc_init_by_strides(&md, rank, xd, dnnl_f32, src_st));
    st = fm_cpu_mem(s, &md, data, &m_src);
    if (!st)
        st = fm_cpu_add_reorder(s, id, ph, m_src, m_dx, false);
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
out:
    return st;
}

/* ---- Split ---- */

/* Output k's extent along the axis and where it starts. */
static void split_part(const struct fm_cpu *s, const struct fm_node *n, int axis, int k,
                       int64_t *start)
{
    *start = 0;
    for (int i = 0; i < k; i++)
        *start += fm_graph_tensor(s->g, n->out[i])->shape.dims[axis];
}

static int split_axis(const struct fm_cpu *s, const struct fm_node *n)
{
    int rank = fm_graph_tensor(s->g, n->in[0])->shape.rank;
    return (int)(n->attrs.axis < 0 ? n->attrs.axis + rank : n->attrs.axis);
}

static enum fm_status split_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    int64_t xd[FM_MAX_DIMS], xs[FM_MAX_DIMS], yd[FM_MAX_DIMS], ys[FM_MAX_DIMS];
    int rank = dims_of(s, n->in[0], xd), axis = split_axis(s, n);
    plain_strides(rank, xd, xs);
    enum fm_status st = FM_OK;
    for (int k = 0; k < n->n_out && !st; k++) {
        int64_t start;
        split_part(s, n, axis, k, &start);
        dims_of(s, n->out[k], yd);
        plain_strides(rank, yd, ys);
        struct walk w;
        walk_init(&w, rank, yd, xs, start * xs[axis], ys, 0);
        st = walk_fwd(s, id, n->in[0], n->out[k], &w);
    }
    return st;
}

static enum fm_status split_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid x = n->in[0];
    enum fm_phase ph = fm_cpu_grad_phase(s, x);
    int64_t xd[FM_MAX_DIMS], xs[FM_MAX_DIMS], yd[FM_MAX_DIMS], ys[FM_MAX_DIMS];
    int rank = dims_of(s, x, xd), axis = split_axis(s, n);
    plain_strides(rank, xd, xs);
    dnnl_memory_t m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = fm_cpu_sink_plain(s, id, ph, x, &sk, &m_dx);
    if (st || !m_dx)
        return st;
    for (int k = 0; k < n->n_out && !st; k++) {
        int64_t start;
        split_part(s, n, axis, k, &start);
        dims_of(s, n->out[k], yd);
        plain_strides(rank, yd, ys);
        struct walk w;
        walk_init(&w, rank, yd, ys, 0, xs, start * xs[axis]);
        dnnl_memory_t m_dy = NULL;
        if (s->t[n->out[k]].grad_mem)
            st = fm_cpu_input_plain(s, id, ph, n->out[k], true, &m_dy);
        else
            w.fill_zero = true;   /* an output the loss does not see: its part is zero */
        if (!st)
            st = add_walk(s, id, ph, &w, m_dy, m_dx);
    }
    return st ? st : fm_cpu_sink_end(s, &sk);
}

/* ---- Slice ---- */

/* The slice as a walk from x: dims are y's, strides x's times the steps. */
static void slice_box(const struct fm_cpu *s, const struct fm_node *n, int64_t *ss, int64_t *off)
{
    int64_t xd[FM_MAX_DIMS], xs[FM_MAX_DIMS];
    int rank = dims_of(s, n->in[0], xd);
    plain_strides(rank, xd, xs);
    *off = 0;
    if (fm_graph_tensor(s->g, n->in[0])->shape.rank == 0) {
        ss[0] = 1;
        return;
    }
    for (int d = 0; d < rank; d++) {
        int64_t start = n->attrs.ints[3 * d], step = n->attrs.ints[3 * d + 2];
        if (step < 0 && start > xd[d] - 1)
            start = xd[d] - 1;   /* stepping back from the end */
        *off += start * xs[d];
        ss[d] = step * xs[d];
    }
}

static enum fm_status slice_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    int64_t yd[FM_MAX_DIMS], ys[FM_MAX_DIMS], ss[FM_MAX_DIMS], off;
    int rank = dims_of(s, n->out[0], yd);
    plain_strides(rank, yd, ys);
    slice_box(s, n, ss, &off);
    struct walk w;
    walk_init(&w, rank, yd, ss, off, ys, 0);
    return walk_fwd(s, id, n->in[0], n->out[0], &w);
}

static enum fm_status slice_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid x = n->in[0], y = n->out[0];
    enum fm_phase ph = fm_cpu_grad_phase(s, x);
    int64_t yd[FM_MAX_DIMS], ys[FM_MAX_DIMS], ss[FM_MAX_DIMS], off;
    int rank = dims_of(s, y, yd);
    plain_strides(rank, yd, ys);
    slice_box(s, n, ss, &off);
    struct walk w;
    walk_init(&w, rank, yd, ys, 0, ss, off);
    w.zero_n = s->t[y].numel == s->t[x].numel ? 0 : s->t[x].numel;   /* outside: zero */
    dnnl_memory_t m_dy, m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = fm_cpu_input_plain(s, id, ph, y, true, &m_dy);
    if (!st)
        st = fm_cpu_sink_plain(s, id, ph, x, &sk, &m_dx);
    if (st || !m_dx)
        return st;
    st = add_walk(s, id, ph, &w, m_dy, m_dx);
    return st ? st : fm_cpu_sink_end(s, &sk);
}

/* ---- Pad (constant 0; negative pads crop) ---- */

/* The box of x that y keeps: where it starts in x and in y, and its dims; false if empty. */
static bool pad_box(const struct fm_cpu *s, const struct fm_node *n, int64_t *xoff,
                    int64_t *yoff, int64_t *dims, int64_t *xs, int64_t *ys)
{
    int64_t xd[FM_MAX_DIMS], yd[FM_MAX_DIMS];
    int rank = dims_of(s, n->in[0], xd);
    dims_of(s, n->out[0], yd);
    plain_strides(rank, xd, xs);
    plain_strides(rank, yd, ys);
    int grank = fm_graph_tensor(s->g, n->in[0])->shape.rank;
    *xoff = *yoff = 0;
    bool any = true;
    for (int d = 0; d < rank; d++) {
        int64_t b = grank ? n->attrs.ints[d] : 0;   /* the end pad follows from y's dims */
        int64_t from = b < 0 ? -b : 0, to = b > 0 ? b : 0;
        int64_t len = xd[d] - from < yd[d] - to ? xd[d] - from : yd[d] - to;
        if (len <= 0)
            any = false;
        dims[d] = len;
        *xoff += from * xs[d];
        *yoff += to * ys[d];
    }
    return any;
}

/* Whether node n pads nothing: the box is all of x and all of y, from the start of both (the
 * TorchScript exporter's zero Pad before a transition's AveragePool in DenseNet). Such a Pad
 * is a view of x in x's layout, so a blocked map stays blocked for the layers after it. */
static bool pad_none(const struct fm_cpu *s, const struct fm_node *n)
{
    int64_t dims[FM_MAX_DIMS], xs[FM_MAX_DIMS], ys[FM_MAX_DIMS], xd[FM_MAX_DIMS], yd[FM_MAX_DIMS];
    int64_t xoff, yoff;
    if (fm_cpu_is_int(s, n->in[0]))
        return false;
    int rank = dims_of(s, n->in[0], xd);
    if (dims_of(s, n->out[0], yd) != rank || !pad_box(s, n, &xoff, &yoff, dims, xs, ys) ||
        xoff || yoff)
        return false;
    for (int d = 0; d < rank; d++)
        if (dims[d] != xd[d] || dims[d] != yd[d])
            return false;
    return true;
}

static enum fm_status pad_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    if (pad_none(s, n))
        return fm_cpu_place_view(s, n->out[0], n->in[0]);
    int64_t dims[FM_MAX_DIMS], xs[FM_MAX_DIMS], ys[FM_MAX_DIMS], xoff, yoff;
    int rank = dims_of(s, n->in[0], dims);
    bool any = pad_box(s, n, &xoff, &yoff, dims, xs, ys);
    if (!any)   /* all padding: y stays zero (its storage is zeroed when allocated) */
        return fm_cpu_place_out(s, n->out[0]);
    struct walk w;
    walk_init(&w, rank, dims, xs, xoff, ys, yoff);
    /* float storage is zero when allocated and the border is never written; int32 arrays
     * are refilled with the box each step, and zeroed around it first when there is a border */
    if (fm_cpu_is_int(s, n->in[0]))
        w.zero_n = s->t[n->out[0]].numel;
    return walk_fwd(s, id, n->in[0], n->out[0], &w);
}

static enum fm_status pad_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid x = n->in[0], y = n->out[0];
    enum fm_phase ph = fm_cpu_grad_phase(s, x);
    if (pad_none(s, n))   /* a view: y's gradient is x's, in x's layout */
        return fm_cpu_sink_from(s, id, ph, x, s->t[y].grad_mem);
    int64_t dims[FM_MAX_DIMS], xs[FM_MAX_DIMS], ys[FM_MAX_DIMS], xoff, yoff;
    int rank = dims_of(s, x, dims);
    bool any = pad_box(s, n, &xoff, &yoff, dims, xs, ys);
    uint64_t kept = 1;
    for (int d = 0; d < rank; d++)
        kept *= any ? (uint64_t)dims[d] : 0;
    dnnl_memory_t m_dy = NULL, m_dx;
    struct fm_cpu_sink sk;
    enum fm_status st = fm_cpu_sink_plain(s, id, ph, x, &sk, &m_dx);
    if (st || !m_dx)
        return st;
    struct walk w;
    if (any) {
        walk_init(&w, rank, dims, ys, yoff, xs, xoff);
        w.zero_n = kept == s->t[x].numel ? 0 : s->t[x].numel;   /* cropped parts: zero */
        st = fm_cpu_input_plain(s, id, ph, y, true, &m_dy);
    } else {
        int64_t numel = (int64_t)s->t[x].numel, one = 1;
        walk_init(&w, 1, &numel, &one, 0, &one, 0);
        w.fill_zero = true;
    }
    if (!st)
        st = add_walk(s, id, ph, &w, m_dy, m_dx);
    return st ? st : fm_cpu_sink_end(s, &sk);
}

/* ---- Expand and Tile: copies along some dims; backward sums them ---- */

/* y as a box of sub-dims in row-major order, each a copy dim (x's stride 0) or one of x's:
 * Expand's are y's dims; Tile splits each dim d into (repeats, x_d). */
struct rep {
    int rank;
    int64_t dims[WALK_DIMS], xs[WALK_DIMS], ys[WALK_DIMS];
};

static void rep_box(const struct fm_cpu *s, const struct fm_node *n, struct rep *r)
{
    int64_t xd[FM_MAX_DIMS], yd[FM_MAX_DIMS], xs[FM_MAX_DIMS], ys[FM_MAX_DIMS];
    int xr = dims_of(s, n->in[0], xd), yr = dims_of(s, n->out[0], yd);
    if (fm_graph_tensor(s->g, n->in[0])->shape.rank == 0)
        xr = 0;
    plain_strides(xr, xd, xs);
    plain_strides(yr, yd, ys);
    r->rank = 0;
    for (int d = 0; d < yr; d++) {
        if (n->op == FM_OP_TILE) {
            r->dims[r->rank] = yd[d] / xd[d];
            r->xs[r->rank] = 0;
            r->ys[r->rank++] = xd[d] * ys[d];
            r->dims[r->rank] = xd[d];
            r->xs[r->rank] = xs[d];
            r->ys[r->rank++] = ys[d];
        } else {
            int k = d - (yr - xr);
            bool copy = k < 0 || xd[k] == 1;
            r->dims[r->rank] = yd[d];
            r->xs[r->rank] = copy ? 0 : xs[k];
            r->ys[r->rank++] = ys[d];
        }
    }
}

static enum fm_status rep_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct rep r;
    rep_box(s, n, &r);
    struct walk w;
    walk_init(&w, r.rank, r.dims, r.xs, 0, r.ys, 0);
    return walk_fwd(s, id, n->in[0], n->out[0], &w);
}

/* The sum over the copies: dX (x's row-major order: the kept dims of dY) gets, per element,
 * the sum of dY over every copy index. Tasks own rows (or column slabs of rows) of dX. */
struct bsum {
    int nk, nc;
    int64_t kd[WALK_DIMS], ks[WALK_DIMS];   /* kept dims but the last: sizes, dY strides */
    int64_t cd[WALK_DIMS], cs[WALK_DIMS];   /* copy dims but an innermost unit-stride run */
    int64_t n, sk;                /* the last kept dim (dX rows) and its dY stride */
    int64_t ci;                   /* an innermost copy run of stride 1, summed in the inner loop */
    int64_t rows, combos, chunk, chunks;
};

/* memories: dy, dx */
static enum fm_status bsum_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct bsum *b = arg;
    const float *dy = fm_cpu_item_f32(it, 0);
    float *dx = fm_cpu_item_f32(it, 1);
    const int64_t tasks = b->rows * b->chunks, sk = b->sk, ci = b->ci;
    FM_CPU_PARALLEL
    for (int64_t t = 0; t < tasks; t++) {
        int64_t r = t / b->chunks, c0 = (t - r * b->chunks) * b->chunk;
        int64_t w = b->n - c0 < b->chunk ? b->n - c0 : b->chunk;
        int64_t base = c0 * sk, q = r;
        for (int d = b->nk - 1; d >= 0; d--) {
            base += (q % b->kd[d]) * b->ks[d];
            q /= b->kd[d];
        }
        float *row = dx + r * b->n + c0;
        memset(row, 0, sizeof(float) * (size_t)w);
        for (int64_t c = 0; c < b->combos; c++) {
            int64_t off = base;
            q = c;
            for (int d = b->nc - 1; d >= 0; d--) {
                off += (q % b->cd[d]) * b->cs[d];
                q /= b->cd[d];
            }
            const float *src = dy + off;
            if (ci > 1) {
                for (int64_t j = 0; j < w; j++) {
                    float acc = 0.0f;
                    for (int64_t k = 0; k < ci; k++)
                        acc += src[j * sk + k];
                    row[j] += acc;
                }
            } else if (sk == 1) {
                for (int64_t j = 0; j < w; j++)
                    row[j] += src[j];
            } else {
                for (int64_t j = 0; j < w; j++)
                    row[j] += src[j * sk];
            }
        }
    }
    return FM_OK;
}

static enum fm_status rep_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid x = n->in[0], y = n->out[0];
    enum fm_phase ph = fm_cpu_grad_phase(s, x);
    if (s->t[y].numel == s->t[x].numel)   /* nothing copied: the gradient as it is */
        return view_bwd(s, id);
    struct rep r;
    rep_box(s, n, &r);
    /* dY as consecutive runs of copy dims and of x's dims (size-1 dims dropped) */
    int64_t sd[WALK_DIMS], st[WALK_DIMS];
    bool copy[WALK_DIMS];
    int rank = 0;
    for (int d = 0; d < r.rank; d++) {
        if (r.dims[d] == 1)
            continue;
        bool c = r.xs[d] == 0;
        if (rank > 0 && c == copy[rank - 1]) {
            sd[rank - 1] *= r.dims[d];
            continue;
        }
        sd[rank] = r.dims[d];
        copy[rank++] = c;
    }
    plain_strides(rank, sd, st);
    struct bsum *b = priv_new(s, id, sizeof(*b));
    if (!b)
        return nomem(s);
    b->ci = 1;
    if (rank > 0 && copy[rank - 1])
        b->ci = sd[--rank];   /* the innermost run is copies: summed in the inner loop */
    b->n = 1;
    b->sk = 0;
    b->rows = b->combos = 1;
    for (int d = 0; d < rank; d++) {
        if (copy[d]) {
            b->cd[b->nc] = sd[d];
            b->cs[b->nc++] = st[d];
            b->combos *= sd[d];
        } else {
            b->kd[b->nk] = sd[d];
            b->ks[b->nk++] = st[d];
            b->rows *= sd[d];
        }
    }
    if (b->nk > 0) {   /* the last kept dim is the row */
        b->nk--;
        b->n = b->kd[b->nk];
        b->sk = b->ks[b->nk];
        b->rows /= b->n;
    }
    if (b->ci > 1 && b->nk == 0 && b->n == 1)
        b->sk = 0;
    int64_t want = 2 * (int64_t)(s->threads > 0 ? s->threads : 1);
    int64_t per = b->rows >= want ? 1 : (want + b->rows - 1) / b->rows;
    b->chunk = (b->n + per - 1) / per;
    b->chunk = b->chunk < 16 ? 16 : (b->chunk + 15) / 16 * 16;
    if (b->chunk > b->n)
        b->chunk = b->n;
    b->chunks = (b->n + b->chunk - 1) / b->chunk;
    dnnl_memory_t mems[2];
    struct fm_cpu_sink sk;
    enum fm_status st2 = fm_cpu_input_plain(s, id, ph, y, true, &mems[0]);
    if (!st2)
        st2 = fm_cpu_sink_plain(s, id, ph, x, &sk, &mems[1]);
    if (st2 || !mems[1])
        return st2;
    st2 = fm_cpu_add_fn(s, id, ph, bsum_fn, b, mems, 2);
    return st2 ? st2 : fm_cpu_sink_end(s, &sk);
}

/* ---- Gather and Embedding ---- */

struct gather_arg {
    const int32_t *idx;
    int64_t k;                    /* indices */
    int64_t outer, a, inner;      /* data as (outer, a, inner), gathered along a */
    int64_t chunk, chunks;        /* backward: columns of inner per task */
    bool accumulate;              /* backward: add into dX as it is (no zero-fill first) */
    const int32_t *isrc;          /* integer data */
    int32_t *idst;
    const char *layer;
};

static enum fm_status gather_check_idx(struct fm_cpu *s, const struct gather_arg *g)
{
    for (int64_t k = 0; k < g->k; k++) {
        int64_t j = g->idx[k];
        if (j < -g->a || j >= g->a)
            return fm_error(s->ctx, FM_ERR_GRAPH, "layer '%s': index %lld is outside [%lld, "
                            "%lld)", g->layer, (long long)j, (long long)-g->a, (long long)g->a);
    }
    return FM_OK;
}

/* memories: data, y (float); none (int) */
static enum fm_status gather_fwd_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    const struct gather_arg *g = arg;
    enum fm_status st = gather_check_idx(s, g);
    if (st)
        return st;
    const uint32_t *x = g->idst ? (const uint32_t *)g->isrc : (uint32_t *)fm_cpu_item_f32(it, 0);
    uint32_t *y = g->idst ? (uint32_t *)g->idst : (uint32_t *)fm_cpu_item_f32(it, 1);
    const int64_t rows = g->outer * g->k;
    FM_CPU_PARALLEL
    for (int64_t t = 0; t < rows; t++) {
        int64_t o = t / g->k, k = t - o * g->k;
        int64_t j = g->idx[k] < 0 ? g->idx[k] + g->a : g->idx[k];
        memcpy(y + t * g->inner, x + (o * g->a + j) * g->inner,
               sizeof(uint32_t) * (size_t)g->inner);
    }
    return FM_OK;
}

/* memories: dy, dx. Each task owns a slab of columns of one outer block of dX: it zeroes the
 * slab (unless g->accumulate) and adds every gathered row's columns into it, so threads never
 * add into one element. */
static enum fm_status gather_bwd_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct gather_arg *g = arg;
    const float *dy = fm_cpu_item_f32(it, 0);
    float *dx = fm_cpu_item_f32(it, 1);
    const int64_t tasks = g->outer * g->chunks;
    FM_CPU_PARALLEL
    for (int64_t t = 0; t < tasks; t++) {
        int64_t o = t / g->chunks, c0 = (t - o * g->chunks) * g->chunk;
        int64_t w = g->inner - c0 < g->chunk ? g->inner - c0 : g->chunk;
        float *base = dx + o * g->a * g->inner + c0;
        for (int64_t a = 0; a < g->a && !g->accumulate; a++)
            memset(base + a * g->inner, 0, sizeof(float) * (size_t)w);
        const float *src = dy + o * g->k * g->inner + c0;
        for (int64_t k = 0; k < g->k; k++) {
            int64_t j = g->idx[k] < 0 ? g->idx[k] + g->a : g->idx[k];
            float *row = base + j * g->inner;
            const float *from = src + k * g->inner;
            for (int64_t i = 0; i < w; i++)
                row[i] += from[i];
        }
    }
    return FM_OK;
}

/* Gather(data, indices) along axis; Embedding(ids, W) is Gather(W, ids) along 0. */
static void gather_operands(const struct fm_cpu *s, const struct fm_node *n, fm_tid *data,
                            fm_tid *idx, int *axis)
{
    bool emb = n->op == FM_OP_EMBEDDING;
    *data = emb ? n->in[1] : n->in[0];
    *idx = emb ? n->in[0] : n->in[1];
    int rank = fm_graph_tensor(s->g, *data)->shape.rank;
    *axis = emb ? 0 : (int)(n->attrs.axis < 0 ? n->attrs.axis + rank : n->attrs.axis);
}

static enum fm_status gather_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid data, idx, y = n->out[0];
    int axis;
    gather_operands(s, n, &data, &idx, &axis);
    struct gather_arg *g = priv_new(s, id, sizeof(*g));
    if (!g)
        return nomem(s);
    const struct fm_shape *xs = &fm_graph_tensor(s->g, data)->shape;
    g->layer = n->name;
    g->k = (int64_t)s->t[idx].numel;
    g->outer = g->inner = 1;
    for (int d = 0; d < xs->rank; d++) {
        if (d < axis)
            g->outer *= xs->dims[d];
        else if (d > axis)
            g->inner *= xs->dims[d];
    }
    g->a = xs->dims[axis];
    /* backward slabs: enough tasks for every thread, rows of at least 16 floats */
    int64_t want = 2 * (int64_t)(s->threads > 0 ? s->threads : 1);
    int64_t per = g->outer >= want ? 1 : (want + g->outer - 1) / g->outer;
    g->chunk = (g->inner + per - 1) / per;
    g->chunk = g->chunk < 16 ? 16 : (g->chunk + 15) / 16 * 16;
    if (g->chunk > g->inner)
        g->chunk = g->inner;
    g->chunks = (g->inner + g->chunk - 1) / g->chunk;
    /* indices the file states (a constant) are checked now, before anything runs */
    const struct fm_tensor *it = fm_graph_tensor(s->g, idx);
    for (uint64_t k = 0; it->ivalue && k < it->nvalue; k++) {
        if (it->ivalue[k] < -g->a || it->ivalue[k] >= g->a)
            return fm_error(s->ctx, FM_ERR_GRAPH, "layer '%s': index %lld (constant '%s', "
                            "element %llu) is outside [%lld, %lld): the table has %lld rows",
                            n->name, (long long)it->ivalue[k], it->name, (unsigned long long)k,
                            (long long)-g->a, (long long)g->a, (long long)g->a);
    }
    enum fm_status st = ints_in(s, idx, &g->idx);
    if (!st)
        st = fm_cpu_place_out(s, y);
    if (st)
        return st;
    if (fm_cpu_is_int(s, data)) {
        st = ints_in(s, data, &g->isrc);
        g->idst = fm_cpu_ints(s, y);
        return st ? st : fm_cpu_add_fn(s, id, FM_PHASE_FWD, gather_fwd_fn, g, NULL, 0);
    }
    dnnl_memory_t mems[2] = {NULL, s->t[y].val_mem};
    st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, data, false, &mems[0]);
    return st ? st : fm_cpu_add_fn(s, id, FM_PHASE_FWD, gather_fwd_fn, g, mems, 2);
}

static enum fm_status gather_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid data, idx, y = n->out[0];
    int axis;
    gather_operands(s, n, &data, &idx, &axis);
    if (fm_cpu_is_int(s, data))
        return FM_OK;
    enum fm_phase ph = fm_cpu_grad_phase(s, data);
    struct gather_arg *g = s->nodes[id].priv;
    dnnl_memory_t mems[2];
    struct fm_cpu_sink sk;
    enum fm_status st = fm_cpu_input_plain(s, id, ph, y, true, &mems[0]);
    if (st)
        return st;
    const struct fm_cpu_tensor *t = &s->t[data];
    if (fm_cpu_wants_grad(s, data) && t->grad_planned && fm_cpu_md_is_plain(&t->md)) {
        /* A layer planned before this one (it runs before) already wrote the gradient: GPT-2's
         * token table is also its output projection's weight. The rows are added into it in
         * place: a scratch table zero-filled, then summed into the gradient, made five passes
         * over a 154 MB gradient for 3 MB of dY (100 ms of a 7 s step at 128 tokens). */
        g->accumulate = true;
        mems[1] = t->grad_mem;
        return fm_cpu_add_fn(s, id, ph, gather_bwd_fn, g, mems, 2);
    }
    st = fm_cpu_sink_plain(s, id, ph, data, &sk, &mems[1]);
    if (st || !mems[1])
        return st;
    st = fm_cpu_add_fn(s, id, ph, gather_bwd_fn, g, mems, 2);
    return st ? st : fm_cpu_sink_end(s, &sk);
}

/* What GatherElements' and GatherND's forward end with once their plan g is made: the indices
 * read as integers, the output placed, and fn run on the data (an integer tensor through
 * *isrc and *idst, floats through the plain memories of data and y). */
static enum fm_status gather_fwd_run(struct fm_cpu *s, fm_nid id, fm_tid data, fm_tid idx,
                                     fm_tid y, fm_cpu_fn fn, void *g, const int32_t **gidx,
                                     const int32_t **isrc, int32_t **idst)
{
    enum fm_status st = ints_in(s, idx, gidx);
    if (!st)
        st = fm_cpu_place_out(s, y);
    if (st)
        return st;
    if (fm_cpu_is_int(s, data)) {
        st = ints_in(s, data, isrc);
        *idst = fm_cpu_ints(s, y);
        return st ? st : fm_cpu_add_fn(s, id, FM_PHASE_FWD, fn, g, NULL, 0);
    }
    dnnl_memory_t mems[2] = {NULL, s->t[y].val_mem};
    st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, data, false, &mems[0]);
    return st ? st : fm_cpu_add_fn(s, id, FM_PHASE_FWD, fn, g, mems, 2);
}

/* Their backward (and TopK's: its values are a gather too): fn scatters dy (plain) into data's
 * gradient (plain); integer data has none. */
static enum fm_status gather_bwd_run(struct fm_cpu *s, fm_nid id, fm_cpu_fn fn)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid data = n->in[0], y = n->out[0];
    if (fm_cpu_is_int(s, data))
        return FM_OK;
    enum fm_phase ph = fm_cpu_grad_phase(s, data);
    dnnl_memory_t mems[2];
    struct fm_cpu_sink sk;
    enum fm_status st = fm_cpu_input_plain(s, id, ph, y, true, &mems[0]);
    if (!st)
        st = fm_cpu_sink_plain(s, id, ph, data, &sk, &mems[1]);
    if (st || !mems[1])
        return st;
    st = fm_cpu_add_fn(s, id, ph, fn, s->nodes[id].priv, mems, 2);
    return st ? st : fm_cpu_sink_end(s, &sk);
}

/* ---- GatherElements: y[i] = data[i with i_axis replaced by indices[i]] (BERT's exports) ---- */

struct gel_arg {
    const int32_t *idx;           /* indices, of y's shape */
    int rank, axis;
    int64_t ydims[FM_MAX_DIMS];   /* the output's (the indices') dims */
    int64_t xst[FM_MAX_DIMS];     /* data's row-major strides */
    int64_t a;                    /* data's dim along axis */
    int64_t n;                    /* output elements */
    uint64_t nx;                  /* data elements */
    const int32_t *isrc;          /* integer data */
    int32_t *idst;
    const char *layer;
};

/* The data offset of output element t, or -1 when its index is outside [-a, a). */
static int64_t gel_offset(const struct gel_arg *g, int64_t t)
{
    int64_t j = g->idx[t], off = 0;
    if (j < -g->a || j >= g->a)
        return -1;
    for (int d = g->rank - 1; d >= 0; d--) {
        int64_t q = t / g->ydims[d], i = t - q * g->ydims[d];
        off += (d == g->axis ? (j < 0 ? j + g->a : j) : i) * g->xst[d];
        t = q;
    }
    return off;
}

static enum fm_status gel_bad(struct fm_cpu *s, const struct gel_arg *g)
{
    for (int64_t t = 0; t < g->n; t++) {
        if (gel_offset(g, t) < 0)
            return fm_error(s->ctx, FM_ERR_GRAPH, "layer '%s' (GatherElements): index %lld is "
                            "outside [%lld, %lld)", g->layer, (long long)g->idx[t],
                            (long long)-g->a, (long long)g->a);
    }
    return FM_OK;
}

/* memories: data, y (float); none (int) */
static enum fm_status gel_fwd_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    const struct gel_arg *g = arg;
    enum fm_status st = gel_bad(s, g);
    if (st)
        return st;
    const uint32_t *x = g->idst ? (const uint32_t *)g->isrc : (uint32_t *)fm_cpu_item_f32(it, 0);
    uint32_t *y = g->idst ? (uint32_t *)g->idst : (uint32_t *)fm_cpu_item_f32(it, 1);
    const int64_t n = g->n;
    FM_CPU_PARALLEL
    for (int64_t t = 0; t < n; t++)
        y[t] = x[gel_offset(g, t)];
    return FM_OK;
}

/* memories: dy, dx: dX zeroed, then every dy element added where it was gathered from (one
 * thread: two outputs may gather the same element) */
static enum fm_status gel_bwd_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct gel_arg *g = arg;
    const float *dy = fm_cpu_item_f32(it, 0);
    float *dx = fm_cpu_item_f32(it, 1);
    memset(dx, 0, sizeof(float) * (size_t)g->nx);
    for (int64_t t = 0; t < g->n; t++)
        dx[gel_offset(g, t)] += dy[t];
    return FM_OK;
}

static enum fm_status gel_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid data = n->in[0], idx = n->in[1], y = n->out[0];
    struct gel_arg *g = priv_new(s, id, sizeof(*g));
    if (!g)
        return nomem(s);
    int64_t xd[FM_MAX_DIMS];
    g->rank = dims_of(s, data, xd);
    if (dims_of(s, y, g->ydims) != g->rank)
        return fm_error(s->ctx, FM_ERR_SHAPE, "layer '%s' (GatherElements): indices of another "
                        "rank than the data", n->name);
    g->axis = (int)(n->attrs.axis < 0 ? n->attrs.axis + g->rank : n->attrs.axis);
    plain_strides(g->rank, xd, g->xst);
    g->a = xd[g->axis];
    g->n = (int64_t)s->t[y].numel;
    g->nx = s->t[data].numel;
    g->layer = n->name;
    return gather_fwd_run(s, id, data, idx, y, gel_fwd_fn, g, &g->idx, &g->isrc, &g->idst);
}

static enum fm_status gel_bwd(struct fm_cpu *s, fm_nid id)
{
    return gather_bwd_run(s, id, gel_bwd_fn);
}

/* ---- TopK: the k largest (or smallest) along an axis, sorted, with their indices (the expert
 * routing of mixture-of-experts models) ---- */

struct topk_arg {
    int32_t *idx;                 /* output 1, of y's shape */
    int64_t rows, inner, len, k;  /* rows = outer * inner runs along the axis */
    uint64_t nx;                  /* data elements */
    bool largest;
};

/* memories: x, y. Each run keeps its best k so far in y (and their indices), best first; a
 * later element displaces one only when strictly better, so of equal values the lower index
 * comes first (ONNX's rule; torch.topk on the CPU agrees for distinct values). k * len per
 * run: k is a few experts of a few more in the models this runs. */
static enum fm_status topk_fwd_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct topk_arg *t = arg;
    const float *x = fm_cpu_item_f32(it, 0);
    float *y = fm_cpu_item_f32(it, 1);
    const int64_t rows = t->rows, in = t->inner, len = t->len, k = t->k;
    const bool big = t->largest;
    FM_CPU_PARALLEL
    for (int64_t r = 0; r < rows; r++) {
        int64_t o = r / in, i = r - o * in;
        const float *xr = x + o * len * in + i;
        float *yr = y + o * k * in + i;
        int32_t *ir = t->idx + o * k * in + i;
        int64_t have = 0;
        for (int64_t j = 0; j < len; j++) {
            float v = xr[j * in];
            int64_t m = have;   /* v's place: after every kept value at least as good */
            while (m > 0 && (big ? v > yr[(m - 1) * in] : v < yr[(m - 1) * in]))
                m--;
            if (m >= k)
                continue;
            for (int64_t q = (have < k ? have : k - 1); q > m; q--) {
                yr[q * in] = yr[(q - 1) * in];
                ir[q * in] = ir[(q - 1) * in];
            }
            yr[m * in] = v;
            ir[m * in] = (int32_t)j;
            if (have < k)
                have++;
        }
    }
    return FM_OK;
}

/* memories: dy, dx: dX zeroed, then each value's gradient put back where it was taken from
 * (the indices output takes no gradient) */
static enum fm_status topk_bwd_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct topk_arg *t = arg;
    const float *dy = fm_cpu_item_f32(it, 0);
    float *dx = fm_cpu_item_f32(it, 1);
    const int64_t rows = t->rows, in = t->inner, len = t->len, k = t->k;
    memset(dx, 0, sizeof(float) * (size_t)t->nx);
    FM_CPU_PARALLEL
    for (int64_t r = 0; r < rows; r++) {
        int64_t o = r / in, i = r - o * in;
        for (int64_t m = 0; m < k; m++) {
            int64_t at = o * k * in + i + m * in;
            dx[o * len * in + i + (int64_t)t->idx[at] * in] += dy[at];
        }
    }
    return FM_OK;
}

static enum fm_status topk_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid x = n->in[0], y = n->out[0], yi = n->out[1];
    struct topk_arg *t = priv_new(s, id, sizeof(*t));
    if (!t)
        return nomem(s);
    int64_t xd[FM_MAX_DIMS];
    int rank = dims_of(s, x, xd);
    int axis = (int)(n->attrs.axis < 0 ? n->attrs.axis + rank : n->attrs.axis);
    int64_t outer = 1;
    t->inner = 1;
    for (int d = 0; d < rank; d++) {
        if (d < axis)
            outer *= xd[d];
        else if (d > axis)
            t->inner *= xd[d];
    }
    t->len = xd[axis];
    t->k = n->attrs.ints[0];
    t->largest = n->attrs.ints[1] != 0;
    t->rows = outer * t->inner;
    t->nx = s->t[x].numel;
    enum fm_status st = fm_cpu_place_out(s, y);
    if (!st)
        st = fm_cpu_place_out(s, yi);
    if (st)
        return st;
    t->idx = fm_cpu_ints(s, yi);
    dnnl_memory_t mems[2] = {NULL, s->t[y].val_mem};
    st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, x, false, &mems[0]);
    return st ? st : fm_cpu_add_fn(s, id, FM_PHASE_FWD, topk_fwd_fn, t, mems, 2);
}

static enum fm_status topk_bwd(struct fm_cpu *s, fm_nid id)
{
    return gather_bwd_run(s, id, topk_bwd_fn);
}

/* ---- GatherND: slices of data picked by index tuples, batch_dims leading dims shared (the
 * attention masks of HuggingFace decoders' exports) ---- */

struct gnd_arg {
    const int32_t *idx;           /* (batches, tuples, k) */
    int64_t batches, tuples, k, slice;
    int64_t bstride;              /* data elements per batch */
    int64_t dims[FM_MAX_DIMS], st[FM_MAX_DIMS];   /* the k indexed dims of data, their strides */
    uint64_t nx;                  /* data elements */
    const int32_t *isrc;          /* integer data */
    int32_t *idst;
    const char *layer;
};

/* The data offset of tuple (b, t), or -1 when an index is out of range. */
static int64_t gnd_offset(const struct gnd_arg *g, int64_t b, int64_t t)
{
    const int32_t *ix = g->idx + (b * g->tuples + t) * g->k;
    int64_t off = b * g->bstride;
    for (int64_t j = 0; j < g->k; j++) {
        int64_t v = ix[j];
        if (v < -g->dims[j] || v >= g->dims[j])
            return -1;
        off += (v < 0 ? v + g->dims[j] : v) * g->st[j];
    }
    return off;
}

/* memories: data, y (float); none (int) */
static enum fm_status gnd_fwd_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    const struct gnd_arg *g = arg;
    for (int64_t b = 0; b < g->batches; b++) {
        for (int64_t t = 0; t < g->tuples; t++) {
            if (gnd_offset(g, b, t) < 0)
                return fm_error(s->ctx, FM_ERR_GRAPH, "layer '%s' (GatherND): an index of "
                                "tuple %lld is out of range", g->layer,
                                (long long)(b * g->tuples + t));
        }
    }
    const uint32_t *x = g->idst ? (const uint32_t *)g->isrc : (uint32_t *)fm_cpu_item_f32(it, 0);
    uint32_t *y = g->idst ? (uint32_t *)g->idst : (uint32_t *)fm_cpu_item_f32(it, 1);
    const int64_t rows = g->batches * g->tuples;
    FM_CPU_PARALLEL
    for (int64_t r = 0; r < rows; r++) {
        int64_t b = r / g->tuples, t = r - b * g->tuples;
        memcpy(y + r * g->slice, x + gnd_offset(g, b, t), sizeof(uint32_t) * (size_t)g->slice);
    }
    return FM_OK;
}

/* memories: dy, dx: dX zeroed, each gathered slice of dy added back (one thread: two tuples
 * may pick the same slice) */
static enum fm_status gnd_bwd_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct gnd_arg *g = arg;
    const float *dy = fm_cpu_item_f32(it, 0);
    float *dx = fm_cpu_item_f32(it, 1);
    memset(dx, 0, sizeof(float) * (size_t)g->nx);
    for (int64_t b = 0; b < g->batches; b++) {
        for (int64_t t = 0; t < g->tuples; t++) {
            float *to = dx + gnd_offset(g, b, t);
            const float *from = dy + (b * g->tuples + t) * g->slice;
            for (int64_t i = 0; i < g->slice; i++)
                to[i] += from[i];
        }
    }
    return FM_OK;
}

static enum fm_status gnd_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid data = n->in[0], idx = n->in[1], y = n->out[0];
    struct gnd_arg *g = priv_new(s, id, sizeof(*g));
    if (!g)
        return nomem(s);
    int64_t xd[FM_MAX_DIMS], id_[FM_MAX_DIMS], xst[FM_MAX_DIMS];
    int r = dims_of(s, data, xd), q = dims_of(s, idx, id_);
    int64_t bd = n->attrs.nints ? n->attrs.ints[0] : 0;
    g->k = id_[q - 1];
    if (bd < 0 || bd >= q || bd + g->k > r)
        return fm_error(s->ctx, FM_ERR_SHAPE, "layer '%s' (GatherND): batch_dims %lld with "
                        "tuples of %lld", n->name, (long long)bd, (long long)g->k);
    plain_strides(r, xd, xst);
    g->batches = g->tuples = g->slice = 1;
    for (int d = 0; d < bd; d++)
        g->batches *= xd[d];
    for (int d = (int)bd; d < q - 1; d++)
        g->tuples *= id_[d];
    for (int d = (int)(bd + g->k); d < r; d++)
        g->slice *= xd[d];
    g->bstride = bd ? xst[bd - 1] : (int64_t)s->t[data].numel;
    for (int64_t j = 0; j < g->k; j++) {
        g->dims[j] = xd[bd + j];
        g->st[j] = xst[bd + j];
    }
    g->nx = s->t[data].numel;
    g->layer = n->name;
    return gather_fwd_run(s, id, data, idx, y, gnd_fwd_fn, g, &g->idx, &g->isrc, &g->idst);
}

static enum fm_status gnd_bwd(struct fm_cpu *s, fm_nid id)
{
    return gather_bwd_run(s, id, gnd_bwd_fn);
}

/* ---- ScatterND: data with slices replaced (or combined) at index tuples (Swin's shifted
 * window masks, slice_scatter) ---- */

struct snd_arg {
    const int32_t *idx;           /* (tuples, k) */
    int64_t tuples, k, slice;
    int64_t dims[FM_MAX_DIMS], st[FM_MAX_DIMS];   /* the k indexed dims of data, strides */
    uint64_t n;                   /* data (and output) elements */
    int reduction;                /* 0 none, 1 add, 2 mul, 3 max, 4 min */
    const int32_t *isrc, *iupd;   /* integer data and updates */
    int32_t *idst;
    const char *layer;
};

static int64_t snd_offset(const struct snd_arg *g, int64_t t)
{
    const int32_t *ix = g->idx + t * g->k;
    int64_t off = 0;
    for (int64_t j = 0; j < g->k; j++) {
        int64_t v = ix[j];
        if (v < -g->dims[j] || v >= g->dims[j])
            return -1;
        off += (v < 0 ? v + g->dims[j] : v) * g->st[j];
    }
    return off;
}

static enum fm_status snd_check(struct fm_cpu *s, const struct snd_arg *g)
{
    for (int64_t t = 0; t < g->tuples; t++) {
        if (snd_offset(g, t) < 0)
            return fm_error(s->ctx, FM_ERR_GRAPH, "layer '%s' (ScatterND): an index of tuple "
                            "%lld is out of range", g->layer, (long long)t);
    }
    return FM_OK;
}

#define SND_APPLY(Y, U, RED)                                                                 \
    do {                                                                                     \
        for (int64_t t = 0; t < g->tuples; t++) {                                            \
            int64_t off = snd_offset(g, t);                                                  \
            for (int64_t i = 0; i < g->slice; i++) {                                         \
                __typeof__((Y)[0]) *to = (Y) + off + i, v_ = (U)[t * g->slice + i];          \
                switch (RED) {                                                               \
                case 1: *to += v_; break;                                                    \
                case 2: *to *= v_; break;                                                    \
                case 3: *to = v_ > *to ? v_ : *to; break;                                    \
                case 4: *to = v_ < *to ? v_ : *to; break;                                    \
                default: *to = v_; break;                                                    \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    } while (0)

/* memories: data, updates, y (float); none (int). Serial: later tuples win, as ONNX says. */
static enum fm_status snd_fwd_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    const struct snd_arg *g = arg;
    enum fm_status st = snd_check(s, g);
    if (st)
        return st;
    if (g->idst) {
        memmove(g->idst, g->isrc, sizeof(int32_t) * (size_t)g->n);
        SND_APPLY(g->idst, g->iupd, g->reduction);
        return FM_OK;
    }
    const float *x = fm_cpu_item_f32(it, 0), *u = fm_cpu_item_f32(it, 1);
    float *y = fm_cpu_item_f32(it, 2);
    memmove(y, x, sizeof(float) * (size_t)g->n);
    SND_APPLY(y, u, g->reduction);
    return FM_OK;
}

/* memories: dy, then dData and/or dUpdates (what is wanted, in that order): dData is dy with
 * the replaced slices zeroed (reduction none) or dy itself (add); dUpdates dy gathered */
struct snd_bwd {
    const struct snd_arg *g;
    bool data, upd;
};

static enum fm_status snd_bwd_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct snd_bwd *b = arg;
    const struct snd_arg *g = b->g;
    const float *dy = fm_cpu_item_f32(it, 0);
    int k = 1;
    if (b->data) {
        float *dx = fm_cpu_item_f32(it, k++);
        memcpy(dx, dy, sizeof(float) * (size_t)g->n);
        for (int64_t t = 0; g->reduction == 0 && t < g->tuples; t++)
            memset(dx + snd_offset(g, t), 0, sizeof(float) * (size_t)g->slice);
    }
    if (b->upd) {
        float *du = fm_cpu_item_f32(it, k);
        for (int64_t t = 0; t < g->tuples; t++)
            memcpy(du + t * g->slice, dy + snd_offset(g, t), sizeof(float) * (size_t)g->slice);
    }
    return FM_OK;
}

static enum fm_status snd_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid data = n->in[0], idx = n->in[1], upd = n->in[2], y = n->out[0];
    struct snd_arg *g = priv_new(s, id, sizeof(*g));
    if (!g)
        return nomem(s);
    int64_t xd[FM_MAX_DIMS], id_[FM_MAX_DIMS], xst[FM_MAX_DIMS];
    int r = dims_of(s, data, xd), q = dims_of(s, idx, id_);
    g->k = id_[q - 1];
    if (g->k < 1 || g->k > r)
        return fm_error(s->ctx, FM_ERR_SHAPE, "layer '%s' (ScatterND): tuples of %lld for "
                        "data of rank %d", n->name, (long long)g->k, r);
    plain_strides(r, xd, xst);
    g->tuples = g->slice = 1;
    for (int d = 0; d < q - 1; d++)
        g->tuples *= id_[d];
    for (int d = (int)g->k; d < r; d++)
        g->slice *= xd[d];
    for (int64_t j = 0; j < g->k; j++) {
        g->dims[j] = xd[j];
        g->st[j] = xst[j];
    }
    g->n = s->t[data].numel;
    g->reduction = n->attrs.nints ? (int)n->attrs.ints[0] : 0;
    g->layer = n->name;
    enum fm_status st = ints_in(s, idx, &g->idx);
    if (!st)
        st = fm_cpu_place_out(s, y);
    if (st)
        return st;
    if (fm_cpu_is_int(s, data)) {
        if (!fm_cpu_is_int(s, upd))
            return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s' (ScatterND): integer data "
                            "with float updates", n->name);
        st = ints_in(s, data, &g->isrc);
        if (!st)
            st = ints_in(s, upd, &g->iupd);
        g->idst = fm_cpu_ints(s, y);
        return st ? st : fm_cpu_add_fn(s, id, FM_PHASE_FWD, snd_fwd_fn, g, NULL, 0);
    }
    dnnl_memory_t mems[3] = {NULL, NULL, s->t[y].val_mem};
    st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, data, false, &mems[0]);
    if (!st)
        st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, upd, false, &mems[1]);
    return st ? st : fm_cpu_add_fn(s, id, FM_PHASE_FWD, snd_fwd_fn, g, mems, 3);
}

static enum fm_status snd_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid data = n->in[0], upd = n->in[2], y = n->out[0];
    if (fm_cpu_is_int(s, data) || !s->t[y].grad_mem)
        return FM_OK;
    struct snd_bwd *b = fm_cpu_buf(s, sizeof(*b));
    if (!b)
        return nomem(s);
    b->g = s->nodes[id].priv;
    enum fm_phase ph = FM_PHASE_BWD_DATA;
    dnnl_memory_t mems[3];
    struct fm_cpu_sink sk[2];
    int nm = 1, ns = 0;
    enum fm_status st = fm_cpu_input_plain(s, id, ph, y, true, &mems[0]);
    if (!st) {
        st = fm_cpu_sink_plain(s, id, ph, data, &sk[ns], &mems[nm]);
        if (!st && mems[nm]) {
            b->data = true;
            nm++;
            ns++;
        }
    }
    if (!st) {
        st = fm_cpu_sink_plain(s, id, ph, upd, &sk[ns], &mems[nm]);
        if (!st && mems[nm]) {
            b->upd = true;
            nm++;
            ns++;
        }
    }
    if (st || nm == 1)
        return st;
    st = fm_cpu_add_fn(s, id, ph, snd_bwd_fn, b, mems, nm);
    for (int i = 0; !st && i < ns; i++)
        st = fm_cpu_sink_end(s, &sk[i]);
    return st;
}

/* ---- Resize ---- */

/* One hand-written pass: x as (outer, in, inner) -> y (outer, out, inner), each output row a
 * weighted sum of `taps` input rows (idx, w: out * taps each). */
struct rs_pass {
    int64_t outer, in, out, inner;
    int taps;
    int32_t *idx;
    float *w;
    int64_t chunk, chunks;        /* backward: columns of inner per task */
    int64_t in_dims[FM_MAX_DIMS]; /* the pass's input shape (backward scratch) */
};

struct resize_priv {
    bool dnnl;
    dnnl_primitive_desc_t fwd_pd;
    dnnl_alg_kind_t alg;
    bool view;
    int rank, n_pass;
    struct rs_pass pass[FM_MAX_DIMS];
};

/* memories: x, y */
static enum fm_status rs_fwd_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct rs_pass *p = arg;
    const float *x = fm_cpu_item_f32(it, 0);
    float *y = fm_cpu_item_f32(it, 1);
    const int64_t rows = p->outer * p->out, inner = p->inner;
    if (inner == 1) {   /* the last axis: one element per output, a row per outer index */
        FM_CPU_PARALLEL
        for (int64_t o = 0; o < p->outer; o++) {
            const float *xr = x + o * p->in;
            float *yr = y + o * p->out;
            for (int64_t j = 0; j < p->out; j++) {
                float acc = 0.0f;
                for (int k = 0; k < p->taps; k++)
                    acc += p->w[j * p->taps + k] * xr[p->idx[j * p->taps + k]];
                yr[j] = acc;
            }
        }
        return FM_OK;
    }
    FM_CPU_PARALLEL
    for (int64_t t = 0; t < rows; t++) {
        int64_t o = t / p->out, j = t - o * p->out;
        const float *base = x + o * p->in * inner;
        float *yr = y + t * inner;
        const int32_t *ix = p->idx + j * p->taps;
        const float *w = p->w + j * p->taps;
        const float *r0 = base + ix[0] * inner;
        for (int64_t i = 0; i < inner; i++)
            yr[i] = w[0] * r0[i];
        for (int k = 1; k < p->taps; k++) {
            const float *rk = base + ix[k] * inner;
            float wk = w[k];
            for (int64_t i = 0; i < inner; i++)
                yr[i] += wk * rk[i];
        }
    }
    return FM_OK;
}

/* memories: dy, dx. Tasks own column slabs of one outer block of dX (no two add into one). */
static enum fm_status rs_bwd_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct rs_pass *p = arg;
    const float *dy = fm_cpu_item_f32(it, 0);
    float *dx = fm_cpu_item_f32(it, 1);
    const int64_t tasks = p->outer * p->chunks, inner = p->inner;
    if (inner == 1) {
        FM_CPU_PARALLEL
        for (int64_t o = 0; o < p->outer; o++) {
            const float *dyr = dy + o * p->out;
            float *dxr = dx + o * p->in;
            memset(dxr, 0, sizeof(float) * (size_t)p->in);
            for (int64_t j = 0; j < p->out; j++) {
                for (int k = 0; k < p->taps; k++)
                    dxr[p->idx[j * p->taps + k]] += p->w[j * p->taps + k] * dyr[j];
            }
        }
        return FM_OK;
    }
    FM_CPU_PARALLEL
    for (int64_t t = 0; t < tasks; t++) {
        int64_t o = t / p->chunks, c0 = (t - o * p->chunks) * p->chunk;
        int64_t w = inner - c0 < p->chunk ? inner - c0 : p->chunk;
        float *base = dx + o * p->in * inner + c0;
        for (int64_t a = 0; a < p->in; a++)
            memset(base + a * inner, 0, sizeof(float) * (size_t)w);
        for (int64_t j = 0; j < p->out; j++) {
            const float *from = dy + (o * p->out + j) * inner + c0;
            for (int k = 0; k < p->taps; k++) {
                float *row = base + p->idx[j * p->taps + k] * inner;
                float wk = p->w[j * p->taps + k];
                for (int64_t i = 0; i < w; i++)
                    row[i] += wk * from[i];
            }
        }
    }
    return FM_OK;
}

static int64_t clamp_idx(int64_t i, int64_t n)
{
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

/* PyTorch's cubic convolution coefficients, a = -0.75 (ONNX's default too). */
static void cubic_weights(double t, float *w)
{
    const double a = -0.75;
    double x0 = t + 1.0, x1 = t, x2 = 1.0 - t, x3 = 2.0 - t;
    w[0] = (float)(((a * x0 - 5.0 * a) * x0 + 8.0 * a) * x0 - 4.0 * a);
    w[1] = (float)(((a + 2.0) * x1 - (a + 3.0)) * x1 * x1 + 1.0);
    w[2] = (float)(((a + 2.0) * x2 - (a + 3.0)) * x2 * x2 + 1.0);
    w[3] = (float)(((a * x3 - 5.0 * a) * x3 + 8.0 * a) * x3 - 4.0 * a);
}

/* Taps and weights of one resized axis, half_pixel coordinates. */
static void rs_taps(struct rs_pass *p, int mode)
{
    double scale = (double)p->in / (double)p->out;
    for (int64_t j = 0; j < p->out; j++) {
        double c = ((double)j + 0.5) * scale - 0.5;
        int32_t *ix = p->idx + j * p->taps;
        float *w = p->w + j * p->taps;
        if (mode == 0) {   /* nearest, ties round down (ONNX round_prefer_floor) */
            double f = floor(c);
            double r = c - f == 0.5 ? f : nearbyint(c);
            ix[0] = (int32_t)clamp_idx((int64_t)r, p->in);
            w[0] = 1.0f;
        } else if (mode == 1) {   /* linear: below 0 clamps to the first element */
            if (c < 0)
                c = 0;
            int64_t i0 = (int64_t)c;
            if (i0 > p->in - 1)
                i0 = p->in - 1;
            int64_t i1 = i0 < p->in - 1 ? i0 + 1 : i0;
            double l1 = c - (double)i0;
            if (l1 > 1.0)
                l1 = 1.0;
            ix[0] = (int32_t)i0;
            ix[1] = (int32_t)i1;
            w[0] = (float)(1.0 - l1);
            w[1] = (float)l1;
        } else {   /* cubic: four neighbours, indices clamped to the edge */
            double f = floor(c);
            cubic_weights(c - f, w);
            for (int k = 0; k < 4; k++)
                ix[k] = (int32_t)clamp_idx((int64_t)f - 1 + k, p->in);
        }
    }
}

/* oneDNN's resampling covers it: only spatial dims change, and nearest only by integer
 * upsampling factors (where its rounding and ONNX's pick the same pixels). */
static bool resize_by_dnnl(int mode, int rank, const int64_t *xd, const int64_t *yd)
{
    if (mode == 2 || rank < 3 || rank > 5 || xd[0] != yd[0] || xd[1] != yd[1])
        return false;
    for (int d = 2; d < rank; d++) {
        if (mode == 0 && yd[d] % xd[d] != 0)
            return false;
    }
    return true;
}

static enum fm_status resize_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid x = n->in[0], y = n->out[0];
    struct resize_priv *p = priv_new(s, id, sizeof(*p));
    if (!p)
        return nomem(s);
    int64_t xd[FM_MAX_DIMS], yd[FM_MAX_DIMS];
    int rank = dims_of(s, x, xd);
    dims_of(s, y, yd);
    int mode = (int)n->attrs.ints[0];
    p->rank = rank;
    bool same = memcmp(xd, yd, sizeof(int64_t) * (size_t)rank) == 0;
    enum fm_status st = FM_OK;
    if (same) {
        p->view = true;
        return view_fwd(s, id);
    }
    /* oneDNN's forward is the faster, its backward (2.6) far slower than the passes' */
    if (!s->train && resize_by_dnnl(mode, rank, xd, yd)) {
        p->dnnl = true;
        p->alg = mode == 0 ? dnnl_resampling_nearest : dnnl_resampling_linear;
        dnnl_resampling_desc_t desc;
        dnnl_memory_desc_t ymd;
        dnnl_memory_t m_x;
        fm_cpu_md_any(&ymd, rank, yd);
        FM_DNNL_TRY(s, dnnl_resampling_forward_desc_init(&desc, dnnl_forward_training, p->alg,
                                                         NULL, &s->t[x].md, &ymd));
        st = fm_cpu_pd(s, id, &desc, NULL, &p->fwd_pd);
        if (!st)
            st = fm_cpu_input(s, id, FM_PHASE_FWD, x, false, &s->t[x].md, &m_x);
        if (!st)
            st = fm_cpu_place(s, y, fm_cpu_pd_md(p->fwd_pd, DNNL_ARG_DST));
        if (st)
            return st;
        struct fm_cpu_arg args[2] = {{DNNL_ARG_SRC, m_x}, {DNNL_ARG_DST, s->t[y].val_mem}};
        return fm_cpu_add_prim(s, id, FM_PHASE_FWD, p->fwd_pd, args, 2);
    }
    /* one pass per resized axis, the shape changing one axis at a time */
    int64_t cur[FM_MAX_DIMS];
    memcpy(cur, xd, sizeof(cur));
    int taps = mode == 0 ? 1 : mode == 1 ? 2 : 4;
    int64_t want = 2 * (int64_t)(s->threads > 0 ? s->threads : 1);
    for (int d = 0; d < rank; d++) {
        if (xd[d] == yd[d])
            continue;
        struct rs_pass *q = &p->pass[p->n_pass++];
        memcpy(q->in_dims, cur, sizeof(cur));
        q->outer = q->inner = 1;
        for (int e = 0; e < d; e++)
            q->outer *= cur[e];
        for (int e = d + 1; e < rank; e++)
            q->inner *= cur[e];
        q->in = xd[d];
        q->out = yd[d];
        q->taps = taps;
        q->idx = fm_cpu_buf(s, sizeof(int32_t) * (size_t)(q->out * taps));
        q->w = fm_cpu_buf(s, sizeof(float) * (size_t)(q->out * taps));
        if (!q->idx || !q->w)
            return nomem(s);
        rs_taps(q, mode);
        int64_t per = q->outer >= want ? 1 : (want + q->outer - 1) / q->outer;
        q->chunk = (q->inner + per - 1) / per;
        q->chunk = q->chunk < 16 ? 16 : (q->chunk + 15) / 16 * 16;
        if (q->chunk > q->inner)
            q->chunk = q->inner;
        q->chunks = (q->inner + q->chunk - 1) / q->chunk;
        cur[d] = yd[d];
    }
    dnnl_memory_t src;
    st = fm_cpu_place_out(s, y);
    if (!st)
        st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, x, false, &src);
    for (int k = 0; k < p->n_pass && !st; k++) {
        dnnl_memory_t dst = s->t[y].val_mem;
        if (k + 1 < p->n_pass) {
            dnnl_memory_desc_t md;
            fm_cpu_md_plain(&md, rank, p->pass[k + 1].in_dims);
            st = fm_cpu_mem_scratch(s, &md, &dst);
        }
        dnnl_memory_t mems[2] = {src, dst};
        if (!st)
            st = fm_cpu_add_fn(s, id, FM_PHASE_FWD, rs_fwd_fn, &p->pass[k], mems, 2);
        src = dst;
    }
out:
    return st;
}

static enum fm_status resize_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    struct resize_priv *p = s->nodes[id].priv;
    fm_tid x = n->in[0], y = n->out[0];
    if (p->view)
        return view_bwd(s, id);
    enum fm_phase ph = fm_cpu_grad_phase(s, x);
    struct fm_cpu_sink sk;
    dnnl_memory_t m_dy, m_dx;
    enum fm_status st = FM_OK;
    if (p->dnnl) {
        dnnl_resampling_desc_t desc;
        dnnl_primitive_desc_t pd;
        FM_DNNL_TRY(s, dnnl_resampling_backward_desc_init(&desc, p->alg, NULL, &s->t[x].md,
                                                          &s->t[y].md));
        st = fm_cpu_pd(s, id, &desc, p->fwd_pd, &pd);
        if (!st)
            st = fm_cpu_input(s, id, ph, y, true, fm_cpu_pd_md(pd, DNNL_ARG_DIFF_DST), &m_dy);
        if (!st)
            st = fm_cpu_sink_begin(s, id, ph, x, fm_cpu_pd_md(pd, DNNL_ARG_DIFF_SRC), &sk,
                                   &m_dx);
        if (st || !m_dx)
            return st;
        struct fm_cpu_arg args[2] = {{DNNL_ARG_DIFF_DST, m_dy}, {DNNL_ARG_DIFF_SRC, m_dx}};
        st = fm_cpu_add_prim(s, id, ph, pd, args, 2);
        return st ? st : fm_cpu_sink_end(s, &sk);
    }
    /* the passes transposed, last first */
    st = fm_cpu_input_plain(s, id, ph, y, true, &m_dy);
    if (!st)
        st = fm_cpu_sink_plain(s, id, ph, x, &sk, &m_dx);
    if (st || !m_dx)
        return st;
    dnnl_memory_t src = m_dy;
    for (int k = p->n_pass - 1; k >= 0 && !st; k--) {
        dnnl_memory_t dst = m_dx;
        if (k > 0) {
            dnnl_memory_desc_t md;
            fm_cpu_md_plain(&md, p->rank, p->pass[k].in_dims);
            st = fm_cpu_mem_scratch(s, &md, &dst);
        }
        dnnl_memory_t mems[2] = {src, dst};
        if (!st)
            st = fm_cpu_add_fn(s, id, ph, rs_bwd_fn, &p->pass[k], mems, 2);
        src = dst;
    }
    return st ? st : fm_cpu_sink_end(s, &sk);
out:
    return st;
}

/* ---- ConstantOfShape and Range: filled once, at planning, from their attrs ---- */

static enum fm_status fill_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid y = n->out[0];
    enum fm_status st = fm_cpu_place_out(s, y);
    if (st)
        return st;
    uint64_t numel = s->t[y].numel;
    bool range = n->op == FM_OP_RANGE;
    /* ConstantOfShape: lo everywhere; Range: start (lo) + i * delta (beta) */
    double start = n->attrs.lo, delta = range ? n->attrs.beta : 0.0;
    if (fm_cpu_is_int(s, y)) {
        int32_t *v = fm_cpu_ints(s, y);
        for (uint64_t i = 0; i < numel; i++)
            v[i] = (int32_t)(start + (double)i * delta);
    } else {
        float *v = s->t[y].val;   /* plain fp32, placed just now */
        for (uint64_t i = 0; i < numel; i++)
            v[i] = (float)(start + (double)i * delta);
    }
    return FM_OK;
}

/* ---- Cast ---- */

struct cast_arg {
    uint64_t n;
    enum fm_dtype to;
    const int32_t *isrc;          /* NULL: float source, the item's memory 0 */
    int32_t *idst;                /* NULL: float destination, the item's last memory */
};

static int32_t to_int(int64_t v, enum fm_dtype to)
{
    switch (to) {
    case FM_DTYPE_BOOL: return v != 0;
    case FM_DTYPE_INT8: return (int8_t)v;
    case FM_DTYPE_UINT8: return (uint8_t)v;
    case FM_DTYPE_INT16: return (int16_t)v;
    default: return (int32_t)v;
    }
}

static enum fm_status cast_fn(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct cast_arg *c = arg;
    const float *xf = c->isrc ? NULL : fm_cpu_item_f32(it, 0);
    float *yf = c->idst ? NULL : fm_cpu_item_f32(it, c->isrc ? 0 : 1);
    const int64_t n = (int64_t)c->n;
    FM_CPU_PARALLEL
    for (int64_t i = 0; i < n; i++) {
        if (c->isrc && c->idst) {
            c->idst[i] = to_int(c->isrc[i], c->to);
        } else if (c->isrc) {
            yf[i] = (float)c->isrc[i];
        } else if (c->to == FM_DTYPE_BOOL) {
            c->idst[i] = xf[i] != 0.0f;
        } else {   /* truncation toward zero, saturating at int64's range */
            float v = xf[i];
            int64_t t = v >= 9.2e18f ? INT64_MAX : v <= -9.2e18f ? INT64_MIN : (int64_t)v;
            c->idst[i] = to_int(v != v ? 0 : t, c->to);
        }
    }
    return FM_OK;
}

static enum fm_status cast_fwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    fm_tid x = n->in[0], y = n->out[0];
    bool xi = fm_cpu_is_int(s, x), yi = fm_cpu_is_int(s, y);
    if (!xi && !yi)
        return view_fwd(s, id);
    struct cast_arg *c = priv_new(s, id, sizeof(*c));
    if (!c)
        return nomem(s);
    c->n = s->t[x].numel;
    c->to = fm_graph_tensor(s->g, y)->dtype;
    enum fm_status st = fm_cpu_place_out(s, y);
    dnnl_memory_t mems[2];
    int nm = 0;
    if (!st && xi)
        st = ints_in(s, x, &c->isrc);
    else if (!st)
        st = fm_cpu_input_plain(s, id, FM_PHASE_FWD, x, false, &mems[nm++]);
    if (st)
        return st;
    if (yi)
        c->idst = fm_cpu_ints(s, y);
    else
        mems[nm++] = s->t[y].val_mem;
    return fm_cpu_add_fn(s, id, FM_PHASE_FWD, cast_fn, c, mems, nm);
}

/* ---- dispatch ---- */

enum fm_status fm_cpu_move_fwd(struct fm_cpu *s, fm_nid id)
{
    switch (fm_graph_node(s->g, id)->op) {
    case FM_OP_TRANSPOSE: return transpose_fwd(s, id);
    case FM_OP_SPLIT: return split_fwd(s, id);
    case FM_OP_SLICE: return slice_fwd(s, id);
    case FM_OP_GATHER:
    case FM_OP_EMBEDDING: return gather_fwd(s, id);
    case FM_OP_GATHER_ELEMENTS: return gel_fwd(s, id);
    case FM_OP_TOPK: return topk_fwd(s, id);
    case FM_OP_GATHER_ND: return gnd_fwd(s, id);
    case FM_OP_SCATTER_ND: return snd_fwd(s, id);
    case FM_OP_EXPAND:
    case FM_OP_TILE: return rep_fwd(s, id);
    case FM_OP_PAD: return pad_fwd(s, id);
    case FM_OP_RESIZE: return resize_fwd(s, id);
    case FM_OP_CONSTANT_OF_SHAPE:
    case FM_OP_RANGE: return fill_fwd(s, id);
    case FM_OP_CAST: return cast_fwd(s, id);
    default: return view_fwd(s, id);   /* Squeeze, Unsqueeze */
    }
}

enum fm_status fm_cpu_move_bwd(struct fm_cpu *s, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    switch (n->op) {
    case FM_OP_TRANSPOSE: return transpose_bwd(s, id);
    case FM_OP_SPLIT: return split_bwd(s, id);
    case FM_OP_SLICE: return slice_bwd(s, id);
    case FM_OP_GATHER:
    case FM_OP_EMBEDDING: return gather_bwd(s, id);
    case FM_OP_GATHER_ELEMENTS: return gel_bwd(s, id);
    case FM_OP_TOPK: return topk_bwd(s, id);
    case FM_OP_GATHER_ND: return gnd_bwd(s, id);
    case FM_OP_SCATTER_ND: return snd_bwd(s, id);
    case FM_OP_EXPAND:
    case FM_OP_TILE: return rep_bwd(s, id);
    case FM_OP_PAD: return pad_bwd(s, id);
    case FM_OP_RESIZE: return resize_bwd(s, id);
    case FM_OP_CONSTANT_OF_SHAPE:
    case FM_OP_RANGE: return FM_OK;
    case FM_OP_CAST:
        if (fm_cpu_is_int(s, n->in[0]) || fm_cpu_is_int(s, n->out[0]))
            return FM_OK;   /* no gradient through integers */
        return view_bwd(s, id);
    default: return view_bwd(s, id);
    }
}
