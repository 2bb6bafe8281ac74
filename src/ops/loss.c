/* The losses a training step ends in.
 *
 * Cross-entropy loss of logits (N, K) against integer labels (N), mean over the batch.
 * E = N*K. Forward (log-softmax, pick, mean):
 *   max per row (E-N cmp); x - max (E add); exp (E special); sum (E-N add); log (N special);
 *   lse_i = max_i + log(sum_i) (N add); loss_i = lse_i - x_label (N add); mean (N-1 add, 1 div)
 * Backward to the logits: softmax = exp(x - lse) (E add, E special); minus one-hot (N add);
 * divided by N (E div). The log-sum-exp per row (fp32) is kept: written by the forward, read
 * by the backward.
 *
 * Mean squared error of a prediction Y against a target T of the same shape (torch's
 * MSELoss, reduction mean), E elements. Forward: d = y - t (E add), d*d (E mul), sum (E-1 add),
 * mean (1 div). Backward to Y: dy = d * (2/E), recomputing d (E add, E mul; the scalar 2/E
 * once, not per element). Y and T are kept. The target is an input: it gets no gradient. */
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

static enum fm_status mse_shape(struct fm_shape_call *call)
{
    const struct fm_tensor *y = call->in[0], *t = call->in[1];
    if (!fm_shape_equal(&y->shape, &t->shape))
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (MSELoss): prediction '%s' and target '%s' differ in shape",
                        call->node->name, y->name, t->name);
    if (!fm_dtype_is_float(y->dtype) || !fm_dtype_is_float(t->dtype))
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (MSELoss): prediction and target must be floats",
                        call->node->name);
    call->out_shape[0] = (struct fm_shape){0, {0}};
    call->out_dtype[0] = y->dtype;
    return FM_OK;
}

static enum fm_status mse_cost(struct fm_cost_call *call)
{
    bool *o = &call->ovf;
    uint64_t e = fm_cost_numel(call, call->in[0]);
    if (e == 0)
        return FM_OK;
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cadd(o, e, e - 1));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, 1);
    fm_cost_fwd_bytes_default(call);
    for (int i = 0; i < 2; i++) {
        if (!call->grad[i])
            continue;
        enum fm_phase ph = fm_cost_grad_phase(call, i);
        fm_cost_add(call, ph, FM_PRIM_ADD, e);
        fm_cost_add(call, ph, FM_PRIM_MUL, e);
        call->saved_in_mask |= 3u;
    }
    fm_cost_bwd_bytes_default(call);
    return FM_OK;
}

const struct fm_op_desc fm_op_mse_loss_desc = {2, 2, 1, mse_shape, mse_cost};
