/* Matrix products: Linear (torch.nn.Linear), Gemm (ONNX) and MatMul (batched, broadcasting).
 *
 * Forward: one MAC per (row, column, inner) triple: M*K*N per matrix product, times the
 * broadcast batch. Each gradient is one more product of the same size (dA = dC B^T,
 * dB = A^T dC), counted only for the inputs that need it (FlopCounterMode's mm rule). An input
 * that was broadcast over batch dims also sums its gradient over them: one add per element of
 * the broadcast gradient beyond the input's own. Bias: one add per output element forward, its
 * gradient one add per output element, summed in the weight gradient's pass over dY (dY is
 * read once in that phase, as for Conv). Gemm's alpha, when not 1: M*N mul forward and M*N mul
 * for each of dA, dB; beta, when not 1: one mul per element of C forward and in dC.
 * Not counted: transposes or copies a library makes to lay operands out. */
#include "ops.h"

/* ---- Linear: X (..., K), W (N, K), B (N)? ---- */

static enum fm_status linear_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    enum fm_status st = fm_shape_expect_rank(call, 0, 1, FM_MAX_DIMS);
    if (!st)
        st = fm_shape_expect_rank(call, 1, 2, 2);
    if (st)
        return st;
    const struct fm_shape *x = &call->in[0]->shape, *w = &call->in[1]->shape;
    if (x->dims[x->rank - 1] != w->dims[1])
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (Linear): input has %lld features but the weight expects "
                        "%lld",
                        n->name, (long long)x->dims[x->rank - 1], (long long)w->dims[1]);
    if (n->n_in > 2 && call->in[2]) {
        const struct fm_shape *b = &call->in[2]->shape;
        if (b->rank != 1 || b->dims[0] != w->dims[0])
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Linear): bias must have %lld "
                            "elements", n->name, (long long)w->dims[0]);
    }
    call->out_shape[0] = *x;
    call->out_shape[0].dims[x->rank - 1] = w->dims[0];
    return FM_OK;
}

/* The common cost of C = A B (+ bias): rows*inner*cols MACs, one product per needed gradient.
 * ia/ib are the input indices of the two operands, ibias the bias (or -1). */
static void product_cost(struct fm_cost_call *call, uint64_t macs, int ia, int ib, int ibias,
                         uint64_t bias_adds)
{
    uint64_t by = fm_cost_bytes(call, call->out[0]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MAC, macs);
    if (ibias >= 0)
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, bias_adds);
    fm_cost_fwd_bytes_default(call);
    int ops[2] = {ia, ib};
    bool dy_read[FM_PHASE_COUNT] = {false};
    for (int k = 0; k < 2; k++) {
        int i = ops[k], other = ops[1 - k];
        if (!call->grad[i])
            continue;
        enum fm_phase ph = fm_cost_grad_phase(call, i);
        fm_cost_add(call, ph, FM_PRIM_MAC, macs);
        fm_cost_read(call, ph, by);
        fm_cost_read(call, ph, fm_cost_bytes(call, call->in[other]));
        fm_cost_write(call, ph, fm_cost_bytes(call, call->in[i]));
        call->saved_in_mask |= 1ull << other;
        dy_read[ph] = true;
    }
    if (ibias >= 0 && call->grad[ibias]) {
        /* summed in the same pass over dY as the weight gradient, as for Conv */
        enum fm_phase ph = fm_cost_grad_phase(call, ibias);
        fm_cost_add(call, ph, FM_PRIM_ADD, bias_adds);
        if (!dy_read[ph])
            fm_cost_read(call, ph, by);
        fm_cost_write(call, ph, fm_cost_bytes(call, call->in[ibias]));
    }
}

static enum fm_status linear_cost(struct fm_cost_call *call)
{
    const struct fm_shape *w = &call->in[1]->shape;
    uint64_t k = (uint64_t)w->dims[1], nout = (uint64_t)w->dims[0];
    uint64_t rows = k ? fm_cost_numel(call, call->in[0]) / k : 0;   /* 0: empty */
    uint64_t macs = fm_cmul3(&call->ovf, rows, k, nout);
    bool bias = call->node->n_in > 2 && call->in[2];
    product_cost(call, macs, 0, 1, bias ? 2 : -1, fm_cmul(&call->ovf, rows, nout));
    return FM_OK;
}

/* ---- Gemm: A (M,K) or (K,M) with transA, B (K,N) or (N,K) with transB, C broadcast to (M,N) */

static void gemm_mkn(const struct fm_node *n, const struct fm_shape *a, const struct fm_shape *b,
                     int64_t *m, int64_t *k, int64_t *kb, int64_t *nn)
{
    bool ta = n->attrs.flags & FM_ATTR_TRANS_A, tb = n->attrs.flags & FM_ATTR_TRANS_B;
    *m = ta ? a->dims[1] : a->dims[0];
    *k = ta ? a->dims[0] : a->dims[1];
    *kb = tb ? b->dims[1] : b->dims[0];
    *nn = tb ? b->dims[0] : b->dims[1];
}

static enum fm_status gemm_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    enum fm_status st = fm_shape_expect_rank(call, 0, 2, 2);
    if (!st)
        st = fm_shape_expect_rank(call, 1, 2, 2);
    if (st)
        return st;
    int64_t m, k, kb, nn;
    gemm_mkn(n, &call->in[0]->shape, &call->in[1]->shape, &m, &k, &kb, &nn);
    if (k != kb)
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (Gemm): inner dims differ (%lld vs %lld)", n->name,
                        (long long)k, (long long)kb);
    struct fm_shape y = {2, {m, nn}};
    if (n->n_in > 2 && call->in[2]) {
        struct fm_shape r;
        st = fm_shape_broadcast(call->ctx, n, &y, &call->in[2]->shape, &r);
        if (st)
            return st;
        if (!fm_shape_equal(&r, &y))
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (Gemm): C does not broadcast to the %lldx%lld result",
                            n->name, (long long)m, (long long)nn);
    }
    call->out_shape[0] = y;
    return FM_OK;
}

static enum fm_status gemm_cost(struct fm_cost_call *call)
{
    const struct fm_node *n = call->node;
    int64_t m, k, kb, nn;
    gemm_mkn(n, &call->in[0]->shape, &call->in[1]->shape, &m, &k, &kb, &nn);
    uint64_t mn = fm_cmul(&call->ovf, (uint64_t)m, (uint64_t)nn);
    uint64_t macs = fm_cmul(&call->ovf, mn, (uint64_t)k);
    bool has_c = n->n_in > 2 && call->in[2];
    product_cost(call, macs, 0, 1, has_c ? 2 : -1, mn);
    if (n->attrs.alpha != 1.0) {
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, mn);
        for (int i = 0; i < 2; i++) {
            if (call->grad[i])
                fm_cost_add(call, fm_cost_grad_phase(call, i), FM_PRIM_MUL, mn);
        }
    }
    if (has_c && n->attrs.beta != 1.0) {
        uint64_t nc = fm_cost_numel(call, call->in[2]);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, nc);
        if (call->grad[2])
            fm_cost_add(call, fm_cost_grad_phase(call, 2), FM_PRIM_MUL, nc);
    }
    return FM_OK;
}

/* ---- MatMul: numpy semantics ---- */

struct mm_dims {
    uint64_t batch, m, k, n;
    struct fm_shape out;
};

static enum fm_status mm_dims_get(struct fm_ctx *ctx, const struct fm_node *node,
                                  const struct fm_shape *a, const struct fm_shape *b,
                                  struct mm_dims *d)
{
    if (a->rank < 1 || b->rank < 1)
        return fm_error(ctx, FM_ERR_SHAPE, "layer '%s' (MatMul): operands must not be scalars",
                        node->name);
    /* 1-D operands: A (K) is (1,K) with the 1 dropped after; B (K) is (K,1) likewise */
    int64_t m = a->rank == 1 ? 1 : a->dims[a->rank - 2];
    int64_t ka = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    int64_t n = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (ka != kb)
        return fm_error(ctx, FM_ERR_SHAPE, "layer '%s' (MatMul): inner dims differ (%lld vs %lld)",
                        node->name, (long long)ka, (long long)kb);
    struct fm_shape ba = {0}, bb = {0}, bo;
    ba.rank = a->rank > 2 ? a->rank - 2 : 0;
    bb.rank = b->rank > 2 ? b->rank - 2 : 0;
    for (int i = 0; i < ba.rank; i++)
        ba.dims[i] = a->dims[i];
    for (int i = 0; i < bb.rank; i++)
        bb.dims[i] = b->dims[i];
    enum fm_status st = fm_shape_broadcast(ctx, node, &ba, &bb, &bo);
    if (st)
        return st;
    uint64_t batch;
    if (fm_shape_numel(&bo, &batch) != FM_OK)
        return fm_error(ctx, FM_ERR_OVERFLOW, "layer '%s' (MatMul): batch overflows", node->name);
    d->batch = batch;
    d->m = (uint64_t)m;
    d->k = (uint64_t)ka;
    d->n = (uint64_t)n;
    d->out = bo;
    if (a->rank > 1)
        d->out.dims[d->out.rank++] = m;
    if (b->rank > 1)
        d->out.dims[d->out.rank++] = n;
    if (d->out.rank > FM_MAX_DIMS)
        return fm_error(ctx, FM_ERR_SHAPE, "layer '%s' (MatMul): result has too many dims",
                        node->name);
    return FM_OK;
}

static enum fm_status matmul_shape(struct fm_shape_call *call)
{
    struct mm_dims d = {0};
    enum fm_status st = mm_dims_get(call->ctx, call->node, &call->in[0]->shape,
                                    &call->in[1]->shape, &d);
    if (st)
        return st;
    call->out_shape[0] = d.out;
    return FM_OK;
}

static enum fm_status matmul_cost(struct fm_cost_call *call)
{
    struct mm_dims d = {0};
    enum fm_status st = mm_dims_get(call->ctx, call->node, &call->in[0]->shape,
                                    &call->in[1]->shape, &d);
    if (st)
        return st;
    bool *o = &call->ovf;
    uint64_t macs = fm_cmul(o, fm_cmul3(o, d.batch, d.m, d.k), d.n);
    product_cost(call, macs, 0, 1, -1, 0);
    /* a broadcast operand sums its per-batch gradients: (batch - own batch) * its matrix */
    for (int i = 0; i < 2; i++) {
        if (!call->grad[i])
            continue;
        uint64_t own = fm_cost_numel(call, call->in[i]);
        uint64_t mat = i == 0 ? fm_cmul(o, d.m, d.k) : fm_cmul(o, d.k, d.n);
        uint64_t full = fm_cmul(o, d.batch, mat);
        if (full > own)
            fm_cost_add(call, fm_cost_grad_phase(call, i), FM_PRIM_ADD, full - own);
    }
    return FM_OK;
}

/* ---- GroupedMatMul: X (N, K) rows already routed to their experts, W (E, M, K) the experts'
 * weights stacked as HF stores them (MixtralExperts.gate_up_proj (E, 2F, H), down_proj
 * (E, H, F)), idx (N) int: the expert of each row -> (N, M), Y[i] = X[i] W[idx[i]]^T. Each row meets one expert's (M, K) matrix, so the product is N*K*M MACs
 * however many experts there are: the count of a mixture-of-experts layer follows the routed
 * tokens (top-k x tokens), not experts x tokens. dX and dW are one such product each. ---- */

static enum fm_status grouped_matmul_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    enum fm_status st = fm_shape_expect_rank(call, 0, 2, 2);
    if (!st)
        st = fm_shape_expect_rank(call, 1, 3, 3);
    if (st)
        return st;
    const struct fm_shape *x = &call->in[0]->shape, *w = &call->in[1]->shape;
    if (x->dims[1] != w->dims[2])
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (GroupedMatMul): rows have %lld features but the experts' "
                        "weights (E, M, K) expect %lld",
                        n->name, (long long)x->dims[1], (long long)w->dims[2]);
    if (n->n_in > 2 && call->in[2]) {
        const struct fm_tensor *idx = call->in[2];
        if (fm_dtype_is_float(idx->dtype) || idx->shape.rank != 1 ||
            idx->shape.dims[0] != x->dims[0])
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (GroupedMatMul): the expert indices must be %lld "
                            "integers, one per row",
                            n->name, (long long)x->dims[0]);
    }
    call->out_shape[0] = (struct fm_shape){2, {x->dims[0], w->dims[1]}};
    return FM_OK;
}

static enum fm_status grouped_matmul_cost(struct fm_cost_call *call)
{
    const struct fm_shape *x = &call->in[0]->shape, *w = &call->in[1]->shape;
    uint64_t macs = fm_cmul3(&call->ovf, (uint64_t)x->dims[0], (uint64_t)w->dims[2],
                             (uint64_t)w->dims[1]);
    product_cost(call, macs, 0, 1, -1, 0);
    return FM_OK;
}

const struct fm_op_desc fm_op_linear_desc = {2, 3, 1, linear_shape, linear_cost};
const struct fm_op_desc fm_op_gemm_desc = {2, 3, 1, gemm_shape, gemm_cost};
const struct fm_op_desc fm_op_matmul_desc = {2, 2, 1, matmul_shape, matmul_cost};
const struct fm_op_desc fm_op_grouped_matmul_desc = {2, 3, 1, grouped_matmul_shape,
                                                     grouped_matmul_cost};
