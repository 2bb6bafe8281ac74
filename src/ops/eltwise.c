/* Binary elementwise arithmetic with numpy broadcasting: Add, Sub, Mul, Div. E = output
 * elements. Forward: E of the op's kind. Backward, for each input that needs a gradient:
 *   add:  dA = dy                      sub: dB = -dy (E mul: the sign flip is a kernel)
 *   mul:  dA = dy * B  (E mul)         div: dA = dy / B (E div); dB = -dy * y / B (E mul + E div)
 * and an input that was broadcast sums its gradient back to its own shape: E - own adds.
 * fvcore counts add/mul as 0 with a warning; pthflops counts E per input.
 * Mod (ONNX's, integer or float; fmod 0 takes the divisor's sign as Python's %, fmod 1 the
 * dividend's as C's fmod, which ONNX requires for floats): r = a - q*b with q = floor(a/b) or
 * trunc(a/b): 1 div + 1 cmp (rounding the quotient, as Floor) + 1 mul + 1 add per element, either
 * sign convention | dA = dy: nothing; dB = -dy * q, q recomputed: E div + E cmp + E mul (keeps
 * A and B), PyTorch's remainder/fmod gradients.
 * Sum and Mean of n inputs (any number, all broadcast together): fwd (n-1)E add, and Mean E div
 * (y = sum/n) | dXi = dy (Mean: dy/n) summed back to Xi's own shape: E - own adds, and Mean then
 * divides the own elements by n: own div. Nothing kept. */
#include "ops.h"

static enum fm_status binary_shape(struct fm_shape_call *call)
{
    return fm_shape_broadcast(call->ctx, call->node, &call->in[0]->shape, &call->in[1]->shape,
                              &call->out_shape[0]);
}

static enum fm_status binary_cost(struct fm_cost_call *call)
{
    enum fm_op op = call->node->op;
    uint64_t e = fm_cost_numel(call, call->out[0]);
    static const enum fm_prim kind[] = {
        [FM_OP_ADD] = FM_PRIM_ADD, [FM_OP_SUB] = FM_PRIM_ADD,
        [FM_OP_MUL] = FM_PRIM_MUL, [FM_OP_DIV] = FM_PRIM_DIV,
    };
    fm_cost_add(call, FM_PHASE_FWD, kind[op], e);
    fm_cost_fwd_bytes_default(call);
    for (int i = 0; i < 2; i++) {
        if (!call->grad[i])
            continue;
        enum fm_phase ph = fm_cost_grad_phase(call, i);
        if (op == FM_OP_SUB && i == 1)
            fm_cost_add(call, ph, FM_PRIM_MUL, e);
        if (op == FM_OP_MUL) {
            fm_cost_add(call, ph, FM_PRIM_MUL, e);
            call->saved_in_mask |= 1ull << (1 - i);
        }
        if (op == FM_OP_DIV) {
            fm_cost_add(call, ph, FM_PRIM_DIV, e);
            call->saved_in_mask |= 1ull << 1;
            if (i == 1) {
                fm_cost_add(call, ph, FM_PRIM_MUL, e);
                call->saved_out_mask |= 1u;
            }
        }
        uint64_t own = fm_cost_numel(call, call->in[i]);
        if (e > own)
            fm_cost_add(call, ph, FM_PRIM_ADD, e - own);
    }
    fm_cost_bwd_bytes_default(call);
    return FM_OK;
}

#define BINARY {2, 2, 1, binary_shape, binary_cost}
const struct fm_op_desc fm_op_add_desc = BINARY;
const struct fm_op_desc fm_op_sub_desc = BINARY;
const struct fm_op_desc fm_op_mul_desc = BINARY;
const struct fm_op_desc fm_op_div_desc = BINARY;

/* ---- Mod ---- */

static enum fm_status mod_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    if (fm_dtype_is_float(call->in[0]->dtype) && !(n->attrs.nints >= 1 && n->attrs.ints[0]))
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (Mod): float inputs need fmod=1 (ONNX's rule; '%s' is %s)",
                        n->name, call->in[0]->name, fm_dtype_name(call->in[0]->dtype));
    return binary_shape(call);
}

static enum fm_status mod_cost(struct fm_cost_call *call)
{
    /* per element: mac, add, mul, div, cmp, special */
    static const uint8_t fwd[FM_PRIM_COUNT] = {0, 1, 1, 1, 1, 0};
    static const uint8_t db[FM_PRIM_COUNT] = {0, 0, 1, 1, 1, 0};
    uint64_t e = fm_cost_numel(call, call->out[0]);
    fm_cost_add_each(call, FM_PHASE_FWD, fwd, e);
    fm_cost_fwd_bytes_default(call);
    for (int i = 0; i < 2; i++) {
        if (!call->grad[i])
            continue;
        enum fm_phase ph = fm_cost_grad_phase(call, i);
        if (i == 1) {
            fm_cost_add_each(call, ph, db, e);
            call->saved_in_mask |= 3u;
        }
        uint64_t own = fm_cost_numel(call, call->in[i]);
        if (e > own)
            fm_cost_add(call, ph, FM_PRIM_ADD, e - own);
    }
    fm_cost_bwd_bytes_default(call);
    return FM_OK;
}

/* ---- Sum and Mean of any number of inputs ---- */

static enum fm_status variadic_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    struct fm_shape s = call->in[0]->shape;
    for (int i = 1; i < n->n_in; i++) {
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

static enum fm_status variadic_cost(struct fm_cost_call *call)
{
    const struct fm_node *n = call->node;
    bool mean = n->op == FM_OP_MEAN;
    uint64_t e = fm_cost_numel(call, call->out[0]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cmul(&call->ovf, (uint64_t)(n->n_in - 1), e));
    if (mean)
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, e);
    fm_cost_fwd_bytes_default(call);
    for (int i = 0; i < n->n_in; i++) {
        if (!call->grad[i])
            continue;
        enum fm_phase ph = fm_cost_grad_phase(call, i);
        uint64_t own = fm_cost_numel(call, call->in[i]);
        if (e > own)
            fm_cost_add(call, ph, FM_PRIM_ADD, e - own);
        if (mean)
            fm_cost_add(call, ph, FM_PRIM_DIV, own);
    }
    fm_cost_bwd_bytes_default(call);
    return FM_OK;
}

const struct fm_op_desc fm_op_mod_desc = {2, 2, 1, mod_shape, mod_cost};
const struct fm_op_desc fm_op_sum_desc = {1, FM_MAX_IO, 1, variadic_shape, variadic_cost};
const struct fm_op_desc fm_op_mean_desc = {1, FM_MAX_IO, 1, variadic_shape, variadic_cost};
