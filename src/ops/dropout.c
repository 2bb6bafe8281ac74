/* Dropout. Training: draw a keep-mask (one compare of a random number per element) and scale
 * the kept elements (one mul: x * mask * 1/(1-p) with the scale folded into the select);
 * backward applies the same mask: one mul per element. The mask (1 byte per element) is written
 * and, when the input needs a gradient, kept.
 * Inference: the identity, costing nothing (frameworks skip it).
 * ONNX's optional second output, the mask (bool, X's shape), is the mask training writes
 * anyway: it costs nothing more there. In inference it is all true (ONNX's definition): its
 * bytes, E, are written and nothing is computed. */
#include "ops.h"

static enum fm_status dropout_shape(struct fm_shape_call *call)
{
    double p = call->node->attrs.ratio;
    if (!(p >= 0.0 && p < 1.0))
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (Dropout): probability must be in [0, 1), got %g",
                        call->node->name, p);
    if (call->node->n_out > 2)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Dropout): %d outputs; at most 2 "
                        "(output, mask)", call->node->name, call->node->n_out);
    call->out_shape[0] = call->in[0]->shape;
    if (call->node->n_out > 1) {
        call->out_shape[1] = call->in[0]->shape;
        call->out_dtype[1] = FM_DTYPE_BOOL;
    }
    return FM_OK;
}

static enum fm_status dropout_cost(struct fm_cost_call *call)
{
    uint64_t e = fm_cost_numel(call, call->out[0]);
    if (!call->train) {
        if (fm_output_written(call->node, 1))   /* the all-true mask */
            fm_cost_write(call, FM_PHASE_FWD, fm_cost_bytes(call, call->out[1]));
        return FM_OK;
    }
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, e);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);
    for (int i = 0; i < call->node->n_in; i++)
        fm_cost_read(call, FM_PHASE_FWD, fm_cost_bytes(call, call->in[i]));
    fm_cost_write(call, FM_PHASE_FWD, fm_cost_bytes(call, call->out[0]));
    fm_cost_write(call, FM_PHASE_FWD, e);   /* the mask, an output or not */
    if (call->grad[0]) {
        /* dX = dY * mask: read dY and the mask, write dX */
        call->cost->saved_bytes = e;
        fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_MUL, e);
        fm_cost_read(call, FM_PHASE_BWD_DATA, fm_cost_bytes(call, call->out[0]));
        fm_cost_read(call, FM_PHASE_BWD_DATA, e);
        fm_cost_write(call, FM_PHASE_BWD_DATA, fm_cost_bytes(call, call->in[0]));
    }
    return FM_OK;
}

/* Y [, mask] */
const struct fm_op_desc fm_op_dropout_desc = {1, 3, 0, dropout_shape, dropout_cost};
