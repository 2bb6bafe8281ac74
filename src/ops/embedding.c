/* Embedding lookup: ids (...) of an integer type, W (V, D) -> (..., D). Forward is a gather:
 * no arithmetic; it reads the ids and only the rows it gathers (not the whole table). The
 * weight gradient is dense: the whole (V, D) table's gradient is zero-filled and dY is
 * scatter-added into the rows, one add per gathered element (ids may repeat), as PyTorch's
 * embedding_dense_backward does (at::zeros, then index_add_; the default, sparse=False) and
 * as Gather's gradient is counted (common.c): V D elements written, whatever the ids touch. A
 * GPT-2 table (50257 x 768) at 1024 tokens writes 154 MB for 3 MB of dY. Not counted: the
 * sparse gradient (sparse=True). There is no input gradient: ids are integers. */
#include "ops.h"

static enum fm_status embedding_shape(struct fm_shape_call *call)
{
    enum fm_status st = fm_shape_expect_rank(call, 1, 2, 2);
    if (st)
        return st;
    const struct fm_shape *ids = &call->in[0]->shape;
    if (fm_dtype_is_float(call->in[0]->dtype))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Embedding): ids must be integers",
                        call->node->name);
    if (ids->rank + 1 > FM_MAX_DIMS)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Embedding): too many dims",
                        call->node->name);
    struct fm_shape y = *ids;
    y.dims[y.rank++] = call->in[1]->shape.dims[1];
    call->out_shape[0] = y;
    call->out_dtype[0] = call->in[1]->dtype;
    return FM_OK;
}

static enum fm_status embedding_cost(struct fm_cost_call *call)
{
    uint64_t e = fm_cost_numel(call, call->out[0]);
    uint64_t by = fm_cost_bytes(call, call->out[0]);
    fm_cost_read(call, FM_PHASE_FWD, fm_cost_bytes(call, call->in[0]));
    fm_cost_read(call, FM_PHASE_FWD, by);
    fm_cost_write(call, FM_PHASE_FWD, by);
    if (call->grad[1]) {
        enum fm_phase ph = fm_cost_grad_phase(call, 1);
        fm_cost_add(call, ph, FM_PRIM_ADD, e);
        fm_cost_read(call, ph, by);
        fm_cost_read(call, ph, fm_cost_bytes(call, call->in[0]));
        fm_cost_write(call, ph, fm_cost_bytes(call, call->in[1]));   /* the whole table */
        call->saved_in_mask |= 1u;
    }
    return FM_OK;
}

const struct fm_op_desc fm_op_embedding_desc = {2, 2, 1, embedding_shape, embedding_cost};
