/* Comparisons, logic and selects: Equal, Less, LessOrEqual, Greater, GreaterOrEqual, And, Or,
 * Xor, Not (bool results, numpy broadcasting), Where, Max/Min (any number of inputs) and Trilu.
 * E = output elements; every comparison, logical op or select counts one cmp:
 *   compare/logic  fwd E cmp          no gradient (the result is bool)
 *   where          fwd E cmp          dX = where(c, dy, 0): E cmp per input needing it (keeps c)
 *   max/min of n   fwd (n-1) E cmp    dXi = dy where Xi is the winner: E cmp each (keeps all)
 *   trilu          fwd E cmp (row/column test per element) | dx = the same mask: E cmp
 *   isinf, isnan   fwd E cmp (|x| == inf, or x != x; IsInf's detect_negative/positive pick
 *                  which infinity, still one comparison) no gradient (bool)
 *   bitshift       fwd E cmp: a shift is bit logic, counted as And/Or/Xor are; integers only,
 *                  no gradient
 * A broadcast input sums its gradient back to its own shape: E - own adds. */
#include "ops.h"

static enum fm_status broadcast_all(struct fm_shape_call *call, int first)
{
    const struct fm_node *n = call->node;
    struct fm_shape s = call->in[first]->shape;
    for (int i = first + 1; i < n->n_in; i++) {
        if (!call->in[i])
            return fm_error(call->ctx, FM_ERR_GRAPH, "layer '%s' (%s): input %d is missing",
                            n->name, n->op_name, i);
        struct fm_shape r;
        enum fm_status st = fm_shape_broadcast(call->ctx, n, &s, &call->in[i]->shape, &r);
        if (st)
            return st;
        s = r;
    }
    call->out_shape[0] = s;
    return FM_OK;
}

static enum fm_status compare_shape(struct fm_shape_call *call)
{
    enum fm_status st = broadcast_all(call, 0);
    call->out_dtype[0] = FM_DTYPE_BOOL;
    return st;
}

static enum fm_status isinf_shape(struct fm_shape_call *call)
{
    const struct fm_tensor *x = call->in[0];
    if (!fm_dtype_is_float(x->dtype))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): input '%s' is %s, not a float",
                        call->node->name, call->node->op_name, x->name, fm_dtype_name(x->dtype));
    return compare_shape(call);
}

static enum fm_status bitshift_shape(struct fm_shape_call *call)
{
    for (int i = 0; i < 2; i++) {
        const struct fm_tensor *x = call->in[i];
        if (fm_dtype_is_float(x->dtype) || x->dtype == FM_DTYPE_BOOL)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (BitShift): input '%s' is %s, not an integer",
                            call->node->name, x->name, fm_dtype_name(x->dtype));
    }
    return broadcast_all(call, 0);
}

static enum fm_status compare_cost(struct fm_cost_call *call)
{
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, fm_cost_numel(call, call->out[0]));
    fm_cost_fwd_bytes_default(call);
    return FM_OK;
}

/* The gradient of a select-like op into input i: E cmp plus the broadcast reduction. */
static void select_grad(struct fm_cost_call *call, int i, uint64_t e)
{
    enum fm_phase ph = fm_cost_grad_phase(call, i);
    fm_cost_add(call, ph, FM_PRIM_CMP, e);
    uint64_t own = fm_cost_numel(call, call->in[i]);
    if (e > own)
        fm_cost_add(call, ph, FM_PRIM_ADD, e - own);
}

static enum fm_status where_shape(struct fm_shape_call *call)
{
    if (call->in[0]->dtype != FM_DTYPE_BOOL && fm_dtype_is_float(call->in[0]->dtype))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Where): the condition '%s' is %s",
                        call->node->name, call->in[0]->name, fm_dtype_name(call->in[0]->dtype));
    enum fm_status st = broadcast_all(call, 0);
    call->out_dtype[0] = call->in[1]->dtype;
    return st;
}

static enum fm_status where_cost(struct fm_cost_call *call)
{
    uint64_t e = fm_cost_numel(call, call->out[0]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, e);
    fm_cost_fwd_bytes_default(call);
    for (int i = 1; i < 3; i++) {
        if (call->grad[i]) {
            select_grad(call, i, e);
            call->saved_in_mask |= 1u;
        }
    }
    fm_cost_bwd_bytes_default(call);
    return FM_OK;
}

static enum fm_status minmax_shape(struct fm_shape_call *call)
{
    return broadcast_all(call, 0);
}

static enum fm_status minmax_cost(struct fm_cost_call *call)
{
    const struct fm_node *n = call->node;
    uint64_t e = fm_cost_numel(call, call->out[0]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, fm_cmul(&call->ovf, (uint64_t)(n->n_in - 1), e));
    fm_cost_fwd_bytes_default(call);
    for (int i = 0; i < n->n_in; i++) {
        if (call->grad[i] && n->n_in > 1) {
            select_grad(call, i, e);
            for (int k = 0; k < n->n_in && k < 64; k++)
                call->saved_in_mask |= 1ull << k;
            call->saved_out_mask |= 1u;
        }
    }
    fm_cost_bwd_bytes_default(call);
    return FM_OK;
}

static enum fm_status trilu_shape(struct fm_shape_call *call)
{
    enum fm_status st = fm_shape_expect_rank(call, 0, 2, FM_MAX_DIMS);
    if (st)
        return st;
    if (call->node->attrs.nints != 2)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Trilu): expects {k, upper}",
                        call->node->name);
    call->out_shape[0] = call->in[0]->shape;
    return FM_OK;
}

static enum fm_status trilu_cost(struct fm_cost_call *call)
{
    uint64_t e = fm_cost_numel(call, call->out[0]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, e);
    fm_cost_fwd_bytes_default(call);
    if (call->grad[0]) {
        fm_cost_add(call, fm_cost_grad_phase(call, 0), FM_PRIM_CMP, e);
        fm_cost_bwd_bytes_default(call);
    }
    return FM_OK;
}

#define CMP(NIN) {NIN, NIN, 1, compare_shape, compare_cost}
const struct fm_op_desc fm_op_equal_desc = CMP(2);
const struct fm_op_desc fm_op_less_desc = CMP(2);
const struct fm_op_desc fm_op_less_equal_desc = CMP(2);
const struct fm_op_desc fm_op_greater_desc = CMP(2);
const struct fm_op_desc fm_op_greater_equal_desc = CMP(2);
const struct fm_op_desc fm_op_logical_and_desc = CMP(2);
const struct fm_op_desc fm_op_logical_or_desc = CMP(2);
const struct fm_op_desc fm_op_logical_xor_desc = CMP(2);
const struct fm_op_desc fm_op_logical_not_desc = CMP(1);
const struct fm_op_desc fm_op_where_desc = {3, 3, 1, where_shape, where_cost};
const struct fm_op_desc fm_op_max_desc = {1, FM_MAX_IO, 1, minmax_shape, minmax_cost};
const struct fm_op_desc fm_op_min_desc = {1, FM_MAX_IO, 1, minmax_shape, minmax_cost};
const struct fm_op_desc fm_op_trilu_desc = {1, 1, 1, trilu_shape, trilu_cost};
const struct fm_op_desc fm_op_isinf_desc = {1, 1, 1, isinf_shape, compare_cost};
const struct fm_op_desc fm_op_isnan_desc = {1, 1, 1, isinf_shape, compare_cost};
const struct fm_op_desc fm_op_bitshift_desc = {2, 2, 1, bitshift_shape, compare_cost};
