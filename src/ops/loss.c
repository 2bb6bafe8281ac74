/* Cross-entropy loss of logits (N, K) against integer labels (N), mean over the batch.
 * E = N*K. Forward (log-softmax, pick, mean):
 *   max per row (E-N cmp); x - max (E add); exp (E special); sum (E-N add); log (N special);
 *   lse_i = max_i + log(sum_i) (N add); loss_i = lse_i - x_label (N add); mean (N-1 add, 1 div)
 * Backward to the logits: softmax = exp(x - lse) (E add, E special); minus one-hot (N add);
 * divided by N (E div). The log-sum-exp per row (fp32) is kept: written by the forward, read
 * by the backward. */
#include "ops.h"

static enum fm_status ce_shape(struct fm_shape_call *call)
{
    enum fm_status st = fm_shape_expect_rank(call, 0, 2, 2);
    if (!st)
        st = fm_shape_expect_rank(call, 1, 1, 1);
    if (st)
        return st;
    if (call->in[1]->shape.dims[0] != call->in[0]->shape.dims[0])
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (CrossEntropy): %lld labels for %lld rows of logits",
                        call->node->name, (long long)call->in[1]->shape.dims[0],
                        (long long)call->in[0]->shape.dims[0]);
    if (fm_dtype_is_float(call->in[1]->dtype))
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (CrossEntropy): labels must be class indices (integers)",
                        call->node->name);
    call->out_shape[0] = (struct fm_shape){0, {0}};
    call->out_dtype[0] = call->in[0]->dtype;
    return FM_OK;
}

static enum fm_status ce_cost(struct fm_cost_call *call)
{
    bool *o = &call->ovf;
    uint64_t e = fm_cost_numel(call, call->in[0]);
    uint64_t n = (uint64_t)call->in[0]->shape.dims[0];
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, e - n);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cadd(o, fm_cadd(o, e, e - n), 3 * n - 1));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, fm_cadd(o, e, n));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, 1);
    fm_cost_fwd_bytes_default(call);
    if (call->grad[0]) {
        fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_ADD, fm_cadd(o, e, n));
        fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_SPECIAL, e);
        fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_DIV, e);
        call->saved_in_mask |= 3u;
        call->cost->saved_bytes = fm_cmul(o, n, 4);
        fm_cost_write(call, FM_PHASE_FWD, call->cost->saved_bytes);
        fm_cost_bwd_bytes_default(call);
        fm_cost_read(call, FM_PHASE_BWD_DATA, call->cost->saved_bytes);
    }
    return FM_OK;
}

const struct fm_op_desc fm_op_cross_entropy_desc = {2, 2, 1, ce_shape, ce_cost};
