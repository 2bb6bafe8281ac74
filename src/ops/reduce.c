/* Reductions over a set of axes (ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
 * ReduceL2, ReduceSumSquare) and CumSum along one axis. E = input elements, O = output
 * elements; each output combines E/O inputs, so a reduction does E - O combining ops:
 *   sum         fwd E-O add                    | dx = broadcast dy: no arithmetic
 *   mean        fwd E-O add + O div            | dx = broadcast dy/n: O div
 *   max, min    fwd E-O cmp                    | dx = dy where x == y: E cmp (keeps x, y)
 *   prod        fwd E-O mul                    | dx = dy * y / x: E mul + E div (keeps x, y)
 *   l2          fwd E mul + E-O add + O special | dx = dy * x / y: E mul + E div (keeps x, y)
 *   sum square  fwd E mul + E-O add            | dx = 2 x dy: 2E mul (keeps x)
 *   l1          fwd E cmp (|x|) + E-O add       | dx = dy * sign(x): E cmp + E mul (keeps x)
 *   log sum     fwd E-O add + O special (log)   | dx = broadcast dy / sum = dy * exp(-y): O special
 *                                                 + O mul, then broadcast (keeps y)
 *   log sum exp m = max (E-O cmp); exp(x - m) (E add + E special); sum (E-O add); log (O
 *               special); + m (O add): fwd E-O cmp + 2E add + E+O special
 *                                               | dx = dy * exp(x - y): E add + E special + E mul
 *                                                 (keeps x, y)
 *   cumsum      R rows of L: fwd E-R add       | dx = reverse cumsum of dy: E-R add
 * Axes are in attrs.ints (an empty list reduces every axis), FM_ATTR_KEEPDIMS keeps them as 1. */
#include "ops.h"

static enum fm_status reduce_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    bool drop[FM_MAX_DIMS] = {false};
    if (n->attrs.nints == 0) {
        for (int i = 0; i < x->rank; i++)
            drop[i] = true;
    }
    for (int k = 0; k < n->attrs.nints; k++) {
        int ax;
        enum fm_status st = fm_shape_axis(call->ctx, n, n->attrs.ints[k], x->rank, &ax);
        if (st)
            return st;
        if (drop[ax])
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): axis %d is listed twice",
                            n->name, n->op_name, ax);
        drop[ax] = true;
    }
    struct fm_shape y = {0};
    for (int i = 0; i < x->rank; i++) {
        if (!drop[i])
            y.dims[y.rank++] = x->dims[i];
        else if (n->attrs.flags & FM_ATTR_KEEPDIMS)
            y.dims[y.rank++] = 1;
    }
    call->out_shape[0] = y;
    return FM_OK;
}

static enum fm_status reduce_cost(struct fm_cost_call *call)
{
    bool *o = &call->ovf;
    uint64_t e = fm_cost_numel(call, call->in[0]), out = fm_cost_numel(call, call->out[0]);
    uint64_t combine = e - out;   /* every output has at least one input: out <= e */
    enum fm_phase ph = fm_cost_grad_phase(call, 0);
    bool g = call->grad[0];
    switch (call->node->op) {
    case FM_OP_REDUCE_SUM:
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, combine);
        break;
    case FM_OP_REDUCE_MEAN:
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, combine);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, out);
        if (g)
            fm_cost_add(call, ph, FM_PRIM_DIV, out);
        break;
    case FM_OP_REDUCE_MAX:
    case FM_OP_REDUCE_MIN:
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, combine);
        if (g) {
            fm_cost_add(call, ph, FM_PRIM_CMP, e);
            call->saved_in_mask |= 1u;
            call->saved_out_mask |= 1u;
        }
        break;
    case FM_OP_REDUCE_PROD:
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, combine);
        if (g) {
            fm_cost_add(call, ph, FM_PRIM_MUL, e);
            fm_cost_add(call, ph, FM_PRIM_DIV, e);
            call->saved_in_mask |= 1u;
            call->saved_out_mask |= 1u;
        }
        break;
    case FM_OP_REDUCE_L2:
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, combine);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, out);
        if (g) {
            fm_cost_add(call, ph, FM_PRIM_MUL, e);
            fm_cost_add(call, ph, FM_PRIM_DIV, e);
            call->saved_in_mask |= 1u;
            call->saved_out_mask |= 1u;
        }
        break;
    case FM_OP_REDUCE_L1:
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, e);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, combine);
        if (g) {
            fm_cost_add(call, ph, FM_PRIM_CMP, e);
            fm_cost_add(call, ph, FM_PRIM_MUL, e);
            call->saved_in_mask |= 1u;
        }
        break;
    case FM_OP_REDUCE_LOG_SUM:
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, combine);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, out);
        if (g) {
            fm_cost_add(call, ph, FM_PRIM_SPECIAL, out);
            fm_cost_add(call, ph, FM_PRIM_MUL, out);
            call->saved_out_mask |= 1u;
        }
        break;
    case FM_OP_REDUCE_LOG_SUM_EXP:
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, combine);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cmul(o, 2, e));
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, fm_cadd(o, e, out));
        if (g) {
            fm_cost_add(call, ph, FM_PRIM_ADD, e);
            fm_cost_add(call, ph, FM_PRIM_SPECIAL, e);
            fm_cost_add(call, ph, FM_PRIM_MUL, e);
            call->saved_in_mask |= 1u;
            call->saved_out_mask |= 1u;
        }
        break;
    default: /* FM_OP_REDUCE_SUM_SQUARE */
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, combine);
        if (g) {
            fm_cost_add(call, ph, FM_PRIM_MUL, fm_cmul(o, 2, e));
            call->saved_in_mask |= 1u;
        }
        break;
    }
    fm_cost_fwd_bytes_default(call);
    if (g)
        fm_cost_bwd_bytes_default(call);
    return FM_OK;
}

static enum fm_status cumsum_shape(struct fm_shape_call *call)
{
    int ax;
    enum fm_status st = fm_shape_expect_rank(call, 0, 1, FM_MAX_DIMS);
    if (!st)
        st = fm_shape_axis(call->ctx, call->node, call->node->attrs.axis,
                           call->in[0]->shape.rank, &ax);
    if (st)
        return st;
    call->out_shape[0] = call->in[0]->shape;
    return FM_OK;
}

static enum fm_status cumsum_cost(struct fm_cost_call *call)
{
    const struct fm_shape *x = &call->in[0]->shape;
    int ax = 0;
    fm_shape_axis(call->ctx, call->node, call->node->attrs.axis, x->rank, &ax);
    uint64_t e = fm_cost_numel(call, call->in[0]);
    uint64_t rows = x->dims[ax] ? e / (uint64_t)x->dims[ax] : 0;   /* 0: empty */
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, e - rows);
    fm_cost_fwd_bytes_default(call);
    if (call->grad[0]) {
        fm_cost_add(call, fm_cost_grad_phase(call, 0), FM_PRIM_ADD, e - rows);
        fm_cost_bwd_bytes_default(call);
    }
    return FM_OK;
}

#define REDUCE {1, 1, 1, reduce_shape, reduce_cost}
const struct fm_op_desc fm_op_reduce_sum_desc = REDUCE;
const struct fm_op_desc fm_op_reduce_mean_desc = REDUCE;
const struct fm_op_desc fm_op_reduce_max_desc = REDUCE;
const struct fm_op_desc fm_op_reduce_min_desc = REDUCE;
const struct fm_op_desc fm_op_reduce_prod_desc = REDUCE;
const struct fm_op_desc fm_op_reduce_l2_desc = REDUCE;
const struct fm_op_desc fm_op_reduce_sum_square_desc = REDUCE;
const struct fm_op_desc fm_op_reduce_l1_desc = REDUCE;
const struct fm_op_desc fm_op_reduce_log_sum_desc = REDUCE;
const struct fm_op_desc fm_op_reduce_log_sum_exp_desc = REDUCE;
const struct fm_op_desc fm_op_cumsum_desc = {1, 1, 1, cumsum_shape, cumsum_cost};
