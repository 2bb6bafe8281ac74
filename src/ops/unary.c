/* Elementwise math that imported graphs spell out op by op: Erf, Sqrt, Reciprocal, Neg, Exp,
 * Log, Abs, and Pow (X ^ P, broadcast). Each is counted from its plainest formula, per element
 * E of the output; the backward recomputes what it needs from the kept tensor:
 *   erf          fwd 1 special  | dx = dy * 2/sqrt(pi) * exp(-x*x): 3 mul + 1 special (keeps x)
 *   sqrt         fwd 1 special  | dx = dy * 0.5 / y: 1 mul + 1 div (keeps y)
 *   reciprocal   fwd 1 div      | dx = -dy * y * y: 2 mul, the sign folded (keeps y)
 *   neg          fwd 1 mul      | dx = -dy: 1 mul (the sign flip is a kernel, as Sub's dB)
 *   exp          fwd 1 special  | dx = dy * y: 1 mul (keeps y)
 *   log          fwd 1 special  | dx = dy / x: 1 div (keeps x)
 *   abs          fwd 1 cmp      | dx = dy * sign(x): 1 cmp + 1 mul (keeps x)
 *   pow          fwd 1 special  | dX = dy * P * X^(P-1): 1 special + 2 mul per element, and
 *                                 P-1 once per element of P (1 add); dP = dy * Y * log(X):
 *                                 1 special + 2 mul (keeps X, P and Y)
 * A broadcast input sums its gradient back to its own shape: E - own adds (as eltwise.c).
 * Not modelled: fused kernels (an Erf-based GELU subgraph costs its ops one by one). */
#include "ops.h"

static const struct fm_elementwise_rule rules[] = {
    {FM_OP_ERF, {0, 0, 0, 0, 0, 1}, {0, 0, 3, 0, 0, 1}, FM_KEEP_IN, false},
    {FM_OP_SQRT, {0, 0, 0, 0, 0, 1}, {0, 0, 1, 1, 0, 0}, FM_KEEP_OUT, false},
    {FM_OP_RECIPROCAL, {0, 0, 0, 1, 0, 0}, {0, 0, 2, 0, 0, 0}, FM_KEEP_OUT, false},
    {FM_OP_NEG, {0, 0, 1, 0, 0, 0}, {0, 0, 1, 0, 0, 0}, FM_KEEP_NONE, false},
    {FM_OP_EXP, {0, 0, 0, 0, 0, 1}, {0, 0, 1, 0, 0, 0}, FM_KEEP_OUT, false},
    {FM_OP_LOG, {0, 0, 0, 0, 0, 1}, {0, 0, 0, 1, 0, 0}, FM_KEEP_IN, false},
    {FM_OP_ABS, {0, 0, 0, 0, 1, 0}, {0, 0, 1, 0, 1, 0}, FM_KEEP_IN, false},
};

static enum fm_status unary_shape(struct fm_shape_call *call)
{
    if (!fm_dtype_is_float(call->in[0]->dtype) && call->node->op != FM_OP_NEG &&
        call->node->op != FM_OP_ABS)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): input '%s' is %s, not a float",
                        call->node->name, call->node->op_name, call->in[0]->name,
                        fm_dtype_name(call->in[0]->dtype));
    call->out_shape[0] = call->in[0]->shape;
    return FM_OK;
}

static enum fm_status unary_cost(struct fm_cost_call *call)
{
    return fm_cost_elementwise(call, rules, sizeof(rules) / sizeof(rules[0]));
}

/* ---- Pow: X ^ P with numpy broadcasting ---- */

static enum fm_status pow_shape(struct fm_shape_call *call)
{
    return fm_shape_broadcast(call->ctx, call->node, &call->in[0]->shape, &call->in[1]->shape,
                              &call->out_shape[0]);
}

static enum fm_status pow_cost(struct fm_cost_call *call)
{
    bool *o = &call->ovf;
    uint64_t e = fm_cost_numel(call, call->out[0]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, e);
    fm_cost_fwd_bytes_default(call);
    for (int i = 0; i < 2; i++) {
        if (!call->grad[i])
            continue;
        enum fm_phase ph = fm_cost_grad_phase(call, i);
        fm_cost_add(call, ph, FM_PRIM_SPECIAL, e);
        fm_cost_add(call, ph, FM_PRIM_MUL, fm_cmul(o, 2, e));
        if (i == 0)
            fm_cost_add(call, ph, FM_PRIM_ADD, fm_cost_numel(call, call->in[1]));   /* P - 1 */
        else
            call->saved_out_mask |= 1u;
        call->saved_in_mask |= 3u;
        uint64_t own = fm_cost_numel(call, call->in[i]);
        if (e > own)
            fm_cost_add(call, ph, FM_PRIM_ADD, e - own);
    }
    fm_cost_bwd_bytes_default(call);
    return FM_OK;
}

#define UNARY {1, 1, 1, unary_shape, unary_cost}
const struct fm_op_desc fm_op_erf_desc = UNARY;
const struct fm_op_desc fm_op_sqrt_desc = UNARY;
const struct fm_op_desc fm_op_reciprocal_desc = UNARY;
const struct fm_op_desc fm_op_neg_desc = UNARY;
const struct fm_op_desc fm_op_exp_desc = UNARY;
const struct fm_op_desc fm_op_log_desc = UNARY;
const struct fm_op_desc fm_op_abs_desc = UNARY;
const struct fm_op_desc fm_op_pow_desc = {2, 2, 1, pow_shape, pow_cost};
