/* Binary elementwise arithmetic with numpy broadcasting: Add, Sub, Mul, Div. E = output
 * elements. Forward: E of the op's kind. Backward, for each input that needs a gradient:
 *   add:  dA = dy                      sub: dB = -dy (E mul: the sign flip is a kernel)
 *   mul:  dA = dy * B  (E mul)         div: dA = dy / B (E div); dB = -dy * y / B (E mul + E div)
 * and an input that was broadcast sums its gradient back to its own shape: E - own adds.
 * fvcore counts add/mul as 0 with a warning; pthflops counts E per input. */
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
