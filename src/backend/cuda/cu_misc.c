/* The ops that are the backend's own kernels end to end: binary arithmetic with broadcasting
 * (residual adds, squeeze-excitation scales, biases), concatenation, the views (flatten,
 * reshape, identity; a copy, or a transpose where channels-last storage must become the
 * logical order), dropout (masks from a counter-based hash, recomputed in the backward) and
 * the cross-entropy loss. Broadcasting both operands at once is not supported. */
#include "cu.h"

#include <string.h>

static void priv_release(struct cu_state *s, struct cu_node *n)
{
    fm_dealloc(s->ctx, n->priv);
    n->priv = NULL;
}

static size_t esize(enum cu_dt dt)
{
    return dt == CU_F32 ? 4 : dt == CU_I64 ? 8 : 2;
}

/* Physical dims of t broadcast against an output of rank `rank` (right-aligned, numpy), in
 * the output's storage order. False when t's own storage does not follow that order. */
static bool physical(const struct cu_tensor *t, int rank, bool out_nhwc, int64_t d[FM_MAX_DIMS])
{
    const struct fm_shape *sh = &t->t->shape;
    int off = rank - sh->rank;
    for (int i = 0; i < rank; i++)
        d[i] = i < off ? 1 : sh->dims[i - off];
    if (rank == 4 && (out_nhwc || t->nhwc)) {
        int64_t C = d[1], HW = d[2] * d[3];
        /* NCHW and NHWC storage coincide when C or H*W is 1 */
        if (out_nhwc != t->nhwc && C > 1 && HW > 1)
            return false;
        if (out_nhwc) {
            int64_t n0 = d[0], c = d[1], h = d[2], w = d[3];
            d[0] = n0;
            d[1] = h;
            d[2] = w;
            d[3] = c;
        }
    }
    return true;
}

/* ---- binary arithmetic ---- */

struct binary_priv {
    int op;
    struct cuk_bcast bc;
};

/* One operand may be broadcast to the other's shape; both at once is not lowered. */
static enum fm_status binary_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                   const struct fm_node *n)
{
    uint64_t y = cu_numel_of(g, n->out[0]);
    if (cu_numel_of(g, n->in[0]) != y && cu_numel_of(g, n->in[1]) != y)
        return cu_refuse(ctx, n, "both operands are broadcast; the CUDA backend broadcasts one");
    return FM_OK;
}

static enum fm_status binary_plan(struct cu_state *s, struct cu_node *n)
{
    struct cu_tensor *a = n->in[0], *b = n->in[1], *y = n->out[0];
    enum fm_status st = cu_check_numel(s, n, y->numel);
    if (st)
        return st;
    if (cu_val_dt(s, a) != y->dt || cu_val_dt(s, b) != y->dt)
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': operands of different types",
                        n->node->name);
    int rank = y->t->shape.rank;
    int64_t po[FM_MAX_DIMS], pa[FM_MAX_DIMS], pb[FM_MAX_DIMS];
    if (!physical(y, rank, y->nhwc, po) || !physical(a, rank, y->nhwc, pa) ||
        !physical(b, rank, y->nhwc, pb))
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': operands stored in different "
                        "layouts (channels-last and not)", n->node->name);
    bool a_full = true, b_full = true;
    for (int i = 0; i < rank; i++) {
        a_full = a_full && pa[i] == po[i];
        b_full = b_full && pb[i] == po[i];
    }
    struct binary_priv *p = fm_alloc(s->ctx, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    n->priv = p;
    static const int ops[] = {[FM_OP_ADD] = CUK_ADD, [FM_OP_SUB] = CUK_SUB, [FM_OP_MUL] = CUK_MUL,
                              [FM_OP_DIV] = CUK_DIV};
    p->op = ops[n->node->op];
    if (a_full && b_full) {
        p->bc = (struct cuk_bcast){1, (uint32_t)y->numel, 1, 1, -1};
    } else if (!a_full && !b_full) {
        /* binary_check refused this before a device was opened */
        return cu_refuse(s->ctx, n->node, "both operands are broadcast; the CUDA backend "
                                          "broadcasts one");
    } else {
        const int64_t *px = a_full ? pb : pa;
        /* groups of consecutive dims where the operand is broadcast (0) or not (1), which must
         * read 0 1 0 1 at most: [A][B][C][D] */
        uint64_t size[8];
        int mark[8], ng = 0;
        for (int i = 0; i < rank; i++) {
            if (po[i] == 1)
                continue;
            int m = px[i] == po[i] ? 1 : 0;
            if (m == 0 && px[i] != 1)
                return fm_error(s->ctx, FM_ERR_SHAPE, "layer '%s': shapes do not broadcast",
                                n->node->name);
            if (ng > 0 && mark[ng - 1] == m) {
                size[ng - 1] *= (uint64_t)po[i];
                continue;
            }
            if (ng == 0 && m == 1) {
                mark[ng] = 0;
                size[ng++] = 1;
            }
            if (ng >= 4)
                return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': this broadcast pattern "
                                "is not supported by the CUDA backend", n->node->name);
            mark[ng] = m;
            size[ng++] = (uint64_t)po[i];
        }
        uint32_t g[4] = {1, 1, 1, 1};
        for (int i = 0; i < ng; i++)
            g[i] = (uint32_t)size[i];
        p->bc = (struct cuk_bcast){g[0], g[1], g[2], g[3], a_full ? 1 : 0};
        n->workspace = (size_t)cuk_reduce_scratch_bytes(p->bc);
    }
    /* the backward of a product reads the other factor; of a quotient, both */
    if (p->op == CUK_MUL) {
        n->keep_in[0] = n->dx[1];
        n->keep_in[1] = n->dx[0];
    } else if (p->op == CUK_DIV) {
        n->keep_in[0] = n->dx[1];
        n->keep_in[1] = n->dx[0] || n->dx[1];
    }
    return FM_OK;
}

static enum fm_status binary_fwd(struct cu_state *s, struct cu_node *n)
{
    struct binary_priv *p = n->priv;
    CU_RET(s, cuk_binary_fwd(p->op, n->out[0]->dt, cu_val(n->in[0]), cu_val(n->in[1]),
                             n->out[0]->data, p->bc, s->stream));
    return FM_OK;
}

static enum fm_status binary_bwd(struct cu_state *s, struct cu_node *n)
{
    struct binary_priv *p = n->priv;
    struct cu_tensor *y = n->out[0];
    for (int i = 0; i < 2; i++) {
        if (!n->dx[i])
            continue;
        if (p->bc.which == i)
            CU_RET(s, cuk_binary_bwd_reduce(p->op, y->dt, cu_val(n->in[0]), cu_val(n->in[1]),
                                            y->grad, n->in[i]->grad, p->bc, n->dx_acc[i],
                                            s->workspace, s->stream));
        else
            CU_RET(s, cuk_binary_bwd_full(p->op, y->dt, i, cu_val(n->in[0]), cu_val(n->in[1]),
                                          y->grad, n->in[i]->grad, p->bc, n->dx_acc[i],
                                          s->stream));
    }
    return FM_OK;
}

const struct cu_op cu_op_binary = {binary_check, binary_plan, NULL, binary_fwd, binary_bwd, NULL, priv_release};

/* ---- concat: each input is an [outer][mid_i][inner] block of [outer][wide][inner] ---- */

struct concat_priv {
    uint32_t outer, inner, wide;
};

static enum fm_status concat_plan(struct cu_state *s, struct cu_node *n)
{
    struct cu_tensor *y = n->out[0];
    int rank = y->t->shape.rank, axis;
    enum fm_status st = fm_shape_axis(s->ctx, n->node, n->node->attrs.axis, rank, &axis);
    if (st || (st = cu_check_numel(s, n, y->numel)))
        return st;
    int64_t po[FM_MAX_DIMS];
    physical(y, rank, y->nhwc, po);
    if (y->nhwc) {
        static const int to_phys[4] = {0, 3, 1, 2};
        axis = to_phys[axis];
    }
    for (int k = 0; k < n->n_in; k++) {
        if (!n->in[k] || n->in[k]->nhwc != y->nhwc || cu_val_dt(s, n->in[k]) != y->dt)
            return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': concatenated tensors of "
                            "different types or layouts", n->node->name);
    }
    struct concat_priv *p = fm_alloc(s->ctx, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    n->priv = p;
    uint64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= (uint64_t)po[i];
    for (int i = axis + 1; i < rank; i++)
        inner *= (uint64_t)po[i];
    p->outer = (uint32_t)outer;
    p->inner = (uint32_t)inner;
    p->wide = (uint32_t)po[axis];
    return FM_OK;
}

static uint32_t concat_mid(const struct concat_priv *p, const struct cu_tensor *t)
{
    return (uint32_t)(t->numel / ((uint64_t)p->outer * p->inner));
}

static enum fm_status concat_fwd(struct cu_state *s, struct cu_node *n)
{
    struct concat_priv *p = n->priv;
    uint32_t off = 0;
    for (int k = 0; k < n->n_in; k++) {
        uint32_t mid = concat_mid(p, n->in[k]);
        CU_RET(s, cuk_slice_copy(n->out[0]->dt, cu_val(n->in[k]), n->out[0]->data, p->outer, mid,
                                 p->wide, off, p->inner, 0, 0, s->stream));
        off += mid;
    }
    return FM_OK;
}

static enum fm_status concat_bwd(struct cu_state *s, struct cu_node *n)
{
    struct concat_priv *p = n->priv;
    uint32_t off = 0;
    for (int k = 0; k < n->n_in; k++) {
        uint32_t mid = concat_mid(p, n->in[k]);
        if (n->dx[k])
            CU_RET(s, cuk_slice_copy(n->out[0]->dt, n->out[0]->grad, n->in[k]->grad, p->outer,
                                     mid, p->wide, off, p->inner, 1, n->dx_acc[k], s->stream));
        off += mid;
    }
    return FM_OK;
}

const struct cu_op cu_op_concat = {NULL, concat_plan, NULL, concat_fwd, concat_bwd, NULL, priv_release};

/* ---- views: flatten, reshape, identity. The logical (row-major) order is what a reshape
 * keeps; channels-last storage is transposed into it (or out of it) ---- */

enum view_kind { VIEW_COPY, VIEW_FROM_NHWC, VIEW_TO_NHWC };

struct view_priv {
    enum view_kind kind;
    uint32_t N, C, HW;
};

static enum fm_status view_plan(struct cu_state *s, struct cu_node *n)
{
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    enum fm_status st = cu_check_numel(s, n, y->numel);
    if (st)
        return st;
    if (cu_val_dt(s, x) != y->dt || x->numel != y->numel)
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': a view that changes the type "
                        "or the element count", n->node->name);
    struct view_priv *p = fm_alloc(s->ctx, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    n->priv = p;
    const struct cu_tensor *q = x->nhwc ? x : y;
    p->N = (uint32_t)q->dims4[0];
    p->C = (uint32_t)q->dims4[1];
    p->HW = (uint32_t)(q->dims4[2] * q->dims4[3]);
    bool trivial = p->C == 1 || p->HW == 1;
    if (x->nhwc == y->nhwc || trivial) {
        if (x->nhwc && y->nhwc && !fm_shape_equal(&x->t->shape, &y->t->shape))
            return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': reshaping one channels-last "
                            "4-D tensor into another", n->node->name);
        p->kind = VIEW_COPY;
    } else {
        p->kind = x->nhwc ? VIEW_FROM_NHWC : VIEW_TO_NHWC;
    }
    return FM_OK;
}

static enum fm_status view_fwd(struct cu_state *s, struct cu_node *n)
{
    struct view_priv *p = n->priv;
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    switch (p->kind) {
    case VIEW_COPY:
        CU_RET(s, cudaMemcpyAsync(y->data, cu_val(x), y->numel * esize(y->dt),
                                  cudaMemcpyDeviceToDevice, s->stream));
        break;
    case VIEW_FROM_NHWC:   /* [N][HW][C] -> [N][C][HW] */
        CU_RET(s, cuk_transpose(y->dt, cu_val(x), y->data, p->N, p->HW, p->C, 0, s->stream));
        break;
    case VIEW_TO_NHWC:     /* [N][C][HW] -> [N][HW][C] */
        CU_RET(s, cuk_transpose(y->dt, cu_val(x), y->data, p->N, p->C, p->HW, 0, s->stream));
        break;
    }
    return FM_OK;
}

static enum fm_status view_bwd(struct cu_state *s, struct cu_node *n)
{
    struct view_priv *p = n->priv;
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    if (!n->dx[0])
        return FM_OK;
    int acc = n->dx_acc[0];
    switch (p->kind) {
    case VIEW_COPY:
        CU_RET(s, cuk_copy(y->dt, y->grad, x->grad, y->numel, acc, s->stream));
        break;
    case VIEW_FROM_NHWC:   /* dY [N][C][HW] -> dX [N][HW][C] */
        CU_RET(s, cuk_transpose(y->dt, y->grad, x->grad, p->N, p->C, p->HW, acc, s->stream));
        break;
    case VIEW_TO_NHWC:     /* dY [N][HW][C] -> dX [N][C][HW] */
        CU_RET(s, cuk_transpose(y->dt, y->grad, x->grad, p->N, p->HW, p->C, acc, s->stream));
        break;
    }
    return FM_OK;
}

const struct cu_op cu_op_view = {NULL, view_plan, NULL, view_fwd, view_bwd, NULL, priv_release};

/* ---- dropout: inverted dropout (kept values scaled by 1/(1-p), as torch.nn.Dropout) with the
 * CPU backend's masks, so the two backends agree element for element; the backward recomputes
 * the mask (the step counter advances after the update) ---- */

struct dropout_priv {
    uint64_t seed;
    uint32_t threshold;
    float scale;
    bool active;
};

static enum fm_status dropout_plan(struct cu_state *s, struct cu_node *n)
{
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    enum fm_status st = cu_check_numel(s, n, y->numel);
    if (st)
        return st;
    if (cu_val_dt(s, x) != y->dt)
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': dropout of a parameter",
                        n->node->name);
    if (y->nhwc)
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': dropout of a channels-last "
                        "tensor (its mask would not match the CPU backend's)", n->node->name);
    struct dropout_priv *p = fm_alloc(s->ctx, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    n->priv = p;
    double ratio = n->node->attrs.ratio;
    p->active = s->train && ratio > 0.0;
    p->threshold = (uint32_t)(ratio * 16777216.0);
    p->scale = (float)(1.0 / (1.0 - ratio));
    p->seed = s->opts.seed * 0x9e3779b97f4a7c15ull + (uint64_t)n->id;
    return FM_OK;
}

static enum fm_status dropout_fwd(struct cu_state *s, struct cu_node *n)
{
    struct dropout_priv *p = n->priv;
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    if (!p->active)
        CU_RET(s, cudaMemcpyAsync(y->data, cu_val(x), y->numel * esize(y->dt),
                                  cudaMemcpyDeviceToDevice, s->stream));
    else
        CU_RET(s, cuk_dropout(y->dt, cu_val(x), y->data, y->numel, p->threshold, p->scale,
                              p->seed, s->d_step, 0, s->stream));
    return FM_OK;
}

static enum fm_status dropout_bwd(struct cu_state *s, struct cu_node *n)
{
    struct dropout_priv *p = n->priv;
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    if (!n->dx[0])
        return FM_OK;
    if (!p->active)
        CU_RET(s, cuk_copy(y->dt, y->grad, x->grad, y->numel, n->dx_acc[0], s->stream));
    else
        CU_RET(s, cuk_dropout(y->dt, y->grad, x->grad, y->numel, p->threshold, p->scale,
                              p->seed, s->d_step, n->dx_acc[0], s->stream));
    return FM_OK;
}

const struct cu_op cu_op_dropout = {NULL, dropout_plan, NULL, dropout_fwd, dropout_bwd, NULL,
                                    priv_release};

/* ---- cross-entropy: mean over the batch of logsumexp(row) - row[label]; its backward starts
 * the backward pass, with the loss scale ---- */

struct xent_priv {
    uint32_t N, K;
};

static enum fm_status xent_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                 const struct fm_node *n)
{
    if (cu_rank_of(g, n->in[0]) != 2 || n->n_in < 2 || n->in[1] == FM_NONE ||
        fm_graph_tensor(g, n->in[1])->dtype != FM_DTYPE_INT64)
        return cu_refuse(ctx, n, "cross-entropy needs (N, K) logits and int64 labels");
    return FM_OK;
}

static enum fm_status xent_plan(struct cu_state *s, struct cu_node *n)
{
    struct cu_tensor *x = n->in[0];
    enum fm_status st = cu_check_numel(s, n, x->numel);
    if (st)
        return st;
    struct xent_priv *p = fm_alloc(s->ctx, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    n->priv = p;
    p->N = (uint32_t)x->t->shape.dims[0];
    p->K = (uint32_t)x->t->shape.dims[1];
    n->priv_bytes = 2 * (size_t)p->N * sizeof(float);   /* lse, per-row loss */
    n->keep_in[0] = true;
    return FM_OK;
}

static enum fm_status xent_fwd(struct cu_state *s, struct cu_node *n)
{
    struct xent_priv *p = n->priv;
    float *lse = n->priv_dev, *rows = lse + p->N;
    CU_RET(s, cuk_xent_fwd(n->in[0]->dt, n->in[0]->data, n->in[1]->data, p->N, p->K, lse, rows,
                           n->out[0]->data, s->stream));
    return FM_OK;
}

static enum fm_status xent_bwd(struct cu_state *s, struct cu_node *n)
{
    struct xent_priv *p = n->priv;
    if (!n->dx[0])
        return FM_OK;
    const float *lse = n->priv_dev;
    CU_RET(s, cuk_xent_bwd(n->in[0]->dt, n->in[0]->data, n->in[1]->data, lse, p->N, p->K,
                           s->loss_scale, n->in[0]->grad, n->dx_acc[0], s->stream));
    return FM_OK;
}

const struct cu_op cu_op_xent = {xent_check, xent_plan, NULL, xent_fwd, xent_bwd, NULL, priv_release};
