/* Linear algebra on batches of small matrices: Det, the determinant of each square matrix of
 * X (..., n, n), counted from an LU factorization with partial pivoting (LAPACK's getrf, which
 * PyTorch's linalg.det and ONNX Runtime call). Per matrix:
 *   for each column k = 0 .. n-2, m = n-1-k rows below the diagonal:
 *     the pivot: the largest |a_ik| of the m+1 candidates, m cmp (|.| is a sign bit)
 *     the multipliers l_ik = a_ik / a_kk: m div
 *     the trailing update a_ij -= l_ik * a_kj: m*m mac
 *   summed over m = 1 .. n-1: n(n-1)/2 cmp, n(n-1)/2 div, (n-1)n(2n-1)/6 mac
 *   det = +-(product of U's diagonal): n-1 mul (the sign, the parity of the row swaps, folded)
 * Backward: dX = dy * det * X^-T (Jacobi's formula), X^-1 from the kept LU factors: for each of
 *   the n columns of the identity, forward substitution with the unit lower L (n(n-1)/2 mac)
 *   and back substitution with U (n(n-1)/2 mac + n div): n*n(n-1) mac + n*n div; g = dy * det
 *   (1 mul), then g * X^-T: n*n mul
 * Kept: the LU factors (n*n values of X's type) and the pivots (n int32) per matrix, and Y.
 * A singular matrix (det 0) takes the same count; PyTorch's special path for it is not modelled.
 * Rows and row swaps move data: no arithmetic. n = 1 costs nothing forward. */
#include "ops.h"

static enum fm_status det_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_tensor *x = call->in[0];
    enum fm_status st = fm_shape_expect_rank(call, 0, 2, FM_MAX_DIMS);
    if (st)
        return st;
    if (!fm_dtype_is_float(x->dtype))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Det): input '%s' is %s, not a float",
                        n->name, x->name, fm_dtype_name(x->dtype));
    int r = x->shape.rank;
    if (x->shape.dims[r - 1] != x->shape.dims[r - 2])
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (Det): the matrices of '%s' are %lld x %lld, not square",
                        n->name, x->name, (long long)x->shape.dims[r - 2],
                        (long long)x->shape.dims[r - 1]);
    struct fm_shape y = {0};
    y.rank = r - 2;
    for (int i = 0; i < r - 2; i++)
        y.dims[i] = x->shape.dims[i];
    call->out_shape[0] = y;
    return FM_OK;
}

static enum fm_status det_cost(struct fm_cost_call *call)
{
    bool *o = &call->ovf;
    const struct fm_shape *x = &call->in[0]->shape;
    uint64_t n = (uint64_t)x->dims[x->rank - 1];
    uint64_t b = fm_cost_numel(call, call->out[0]);   /* matrices */
    /* n(n-1)/2, halving the even factor first */
    uint64_t tri = !n ? 0 : n % 2 == 0 ? fm_cmul(o, n / 2, n - 1) : fm_cmul(o, n, (n - 1) / 2);
    /* (n-1)n(2n-1)/6 = tri*(2n-1)/3, a whole number (one of n-1, n, 2n-1 is a multiple of 3) */
    uint64_t macs = n ? fm_cmul(o, tri, 2 * n - 1) / 3 : 0;
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, fm_cmul(o, b, tri));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, fm_cmul(o, b, tri));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MAC, fm_cmul(o, b, macs));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, fm_cmul(o, b, n ? n - 1 : 0));
    fm_cost_fwd_bytes_default(call);
    if (!call->grad[0])
        return FM_OK;
    enum fm_phase ph = fm_cost_grad_phase(call, 0);
    uint64_t nn = fm_cmul(o, n, n);
    fm_cost_add(call, ph, FM_PRIM_MAC, fm_cmul3(o, b, nn, n ? n - 1 : 0));
    fm_cost_add(call, ph, FM_PRIM_DIV, fm_cmul(o, b, nn));
    fm_cost_add(call, ph, FM_PRIM_MUL, fm_cmul(o, b, fm_cadd(o, nn, 1)));
    call->saved_out_mask |= 1u;
    /* the LU factors (like X) and the int32 pivots */
    call->cost->saved_bytes = fm_cadd(o, fm_cost_bytes(call, call->in[0]), fm_cmul3(o, b, n, 4));
    fm_cost_write(call, FM_PHASE_FWD, call->cost->saved_bytes);
    fm_cost_bwd_bytes_default(call);
    fm_cost_read(call, ph, call->cost->saved_bytes);
    return FM_OK;
}

const struct fm_op_desc fm_op_det_desc = {1, 1, 1, det_shape, det_cost};
