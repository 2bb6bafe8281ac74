/* Dropout. Training: draw a keep-mask (one compare of a random number per element) and scale
 * the kept elements (one mul: x * mask * 1/(1-p) with the scale folded into the select);
 * backward applies the same mask: one mul per element. The mask (1 byte per element) is kept
 * when the input needs a gradient.
 * Inference: the identity, costing nothing (frameworks skip it). */
#include "ops.h"

static enum fm_status dropout_shape(struct fm_shape_call *call)
{
    double p = call->node->attrs.ratio;
    if (!(p >= 0.0 && p < 1.0))
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (Dropout): probability must be in [0, 1), got %g",
                        call->node->name, p);
    call->out_shape[0] = call->in[0]->shape;
    return FM_OK;
}

static enum fm_status dropout_cost(struct fm_cost_call *call)
{
    if (!call->train)
        return FM_OK;
    uint64_t e = fm_cost_numel(call, call->out[0]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, e);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);
    fm_cost_fwd_bytes_default(call);
    fm_cost_write(call, FM_PHASE_FWD, e);   /* the mask */
    if (call->grad[0]) {
        call->cost->saved_bytes = e;
        fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_MUL, e);
        fm_cost_bwd_bytes_default(call);
        fm_cost_read(call, FM_PHASE_BWD_DATA, e);
    }
    return FM_OK;
}

const struct fm_op_desc fm_op_dropout_desc = {1, 3, 1, dropout_shape, dropout_cost};
