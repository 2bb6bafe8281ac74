/* Layout: ops that move elements to other places without arithmetic on them (DepthToSpace,
 * SpaceToDepth, ReverseSequence, MaxUnpool), and EyeLike, which writes a constant pattern of
 * its input's shape. Bytes: every input read once, the output written once.
 *   depthtospace, spacetodepth   a permutation of the elements (DCR and CRD are two
 *                                permutations): fwd 0; dX is dy permuted back: 0
 *   reversesequence              the first len_b time steps of every batch entry reversed,
 *                                the rest copied: fwd 0; dX is dy reversed the same way: 0
 *                                (the lengths are kept)
 *   maxunpool                    a zeroed output with X written where the indices point:
 *                                fwd 0; dX = dy gathered at the indices: 0 (kept)
 *   eyelike                      ones on the k-th diagonal, zeros elsewhere, written: 0 and
 *                                nothing read (only X's shape is used); no gradient flows
 * PyTorch's FlopCounterMode and fvcore count pixel_shuffle, flip, max_unpool and eye as 0. */
#include "ops.h"

/* ---- DepthToSpace: ints = {blocksize, mode (0 DCR, 1 CRD)}; SpaceToDepth: {blocksize} ---- */

static enum fm_status block_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    bool to_space = n->op == FM_OP_DEPTH_TO_SPACE;
    int64_t b = n->attrs.nints ? n->attrs.ints[0] : 0;
    enum fm_status st = fm_shape_expect_rank(call, 0, 4, 4);
    if (st)
        return st;
    if (b < 1 || b > ((int64_t)1 << 20))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): blocksize %lld", n->name,
                        n->op_name, (long long)b);
    struct fm_shape y = *x;
    if (to_space) {
        if (x->dims[1] % (b * b))
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (DepthToSpace): %lld channels "
                            "are not a multiple of blocksize^2 = %lld", n->name,
                            (long long)x->dims[1], (long long)(b * b));
        y.dims[1] = x->dims[1] / (b * b);
        if (__builtin_mul_overflow(x->dims[2], b, &y.dims[2]) ||
            __builtin_mul_overflow(x->dims[3], b, &y.dims[3]))
            return fm_error(call->ctx, FM_ERR_OVERFLOW, "layer '%s' (DepthToSpace): output "
                            "dims overflow", n->name);
    } else {
        if (x->dims[2] % b || x->dims[3] % b)
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (SpaceToDepth): %lldx%lld is "
                            "not a multiple of blocksize %lld", n->name, (long long)x->dims[2],
                            (long long)x->dims[3], (long long)b);
        y.dims[2] = x->dims[2] / b;
        y.dims[3] = x->dims[3] / b;
        if (__builtin_mul_overflow(x->dims[1], b * b, &y.dims[1]))
            return fm_error(call->ctx, FM_ERR_OVERFLOW, "layer '%s' (SpaceToDepth): channels "
                            "overflow", n->name);
    }
    call->out_shape[0] = y;
    return FM_OK;
}

/* A rearrangement: no arithmetic either way; dX is dy rearranged back. */
static enum fm_status move_cost(struct fm_cost_call *call)
{
    fm_cost_fwd_bytes_default(call);
    if (call->grad[0]) {
        enum fm_phase ph = fm_cost_grad_phase(call, 0);
        fm_cost_read(call, ph, fm_cost_bytes(call, call->out[0]));
        fm_cost_read(call, ph, fm_cost_bytes(call, call->in[1]));   /* lengths, indices */
        fm_cost_write(call, ph, fm_cost_bytes(call, call->in[0]));
        if (call->in[1])
            call->saved_in_mask |= 2u;
    }
    return FM_OK;
}

/* ---- ReverseSequence: X, sequence_lens (batch); ints = {batch_axis, time_axis} ---- */

static enum fm_status reverse_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape, *len = &call->in[1]->shape;
    if (n->attrs.nints != 2 || x->rank < 2)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (ReverseSequence): expects {batch "
                        "axis, time axis} and an input of rank 2 or more", n->name);
    int b, t;
    enum fm_status st = fm_shape_axis(call->ctx, n, n->attrs.ints[0], x->rank, &b);
    if (!st)
        st = fm_shape_axis(call->ctx, n, n->attrs.ints[1], x->rank, &t);
    if (st)
        return st;
    if (b == t || b > 1 || t > 1)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (ReverseSequence): batch axis %d "
                        "and time axis %d must be 0 and 1", n->name, b, t);
    if (len->rank != 1 || len->dims[0] != x->dims[b] || fm_dtype_is_float(call->in[1]->dtype))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (ReverseSequence): sequence_lens "
                        "'%s' must be %lld integers, one per batch entry", n->name,
                        call->in[1]->name, (long long)x->dims[b]);
    call->out_shape[0] = *x;
    return FM_OK;
}

/* ---- MaxUnpool: X, indices (X's shape); ints = the output dims (N, C, spatial...) ---- */

static enum fm_status unpool_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    if (x->rank < 3 || n->attrs.nints != x->rank)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (MaxUnpool): expects an input "
                        "(N, C, spatial...) and its %d output dims", n->name, x->rank);
    if (!fm_shape_equal(x, &call->in[1]->shape) || fm_dtype_is_float(call->in[1]->dtype))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (MaxUnpool): indices '%s' must be "
                        "integers of the input's shape", n->name, call->in[1]->name);
    struct fm_shape y = {x->rank, {0}};
    for (int i = 0; i < x->rank; i++) {
        y.dims[i] = n->attrs.ints[i];
        if (y.dims[i] <= 0 || (i < 2 && y.dims[i] != x->dims[i]))
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (MaxUnpool): output dim %d is "
                            "%lld for an input of %lld", n->name, i, (long long)y.dims[i],
                            (long long)x->dims[i]);
    }
    call->out_shape[0] = y;
    return FM_OK;
}

static enum fm_status unpool_cost(struct fm_cost_call *call)
{
    fm_cost_fwd_bytes_default(call);
    if (call->grad[0]) {   /* dy gathered at the indices */
        enum fm_phase ph = fm_cost_grad_phase(call, 0);
        uint64_t bx = fm_cost_bytes(call, call->in[0]);
        fm_cost_read(call, ph, fm_cadd(&call->ovf, bx, fm_cost_bytes(call, call->in[1])));
        fm_cost_write(call, ph, bx);
        call->saved_in_mask |= 2u;
    }
    return FM_OK;
}

/* ---- EyeLike: X (2-D); ints = {enum fm_dtype, k (the diagonal)} ---- */

static enum fm_status eyelike_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    enum fm_status st = fm_shape_expect_rank(call, 0, 2, 2);
    if (st)
        return st;
    if (n->attrs.nints != 2 || n->attrs.ints[0] < 0 || n->attrs.ints[0] >= FM_DTYPE_COUNT)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (EyeLike): expects {dtype, k}",
                        n->name);
    call->out_shape[0] = call->in[0]->shape;
    call->out_dtype[0] = (enum fm_dtype)n->attrs.ints[0];
    return FM_OK;
}

static enum fm_status eyelike_cost(struct fm_cost_call *call)
{
    fm_cost_write(call, FM_PHASE_FWD, fm_cost_bytes(call, call->out[0]));
    return FM_OK;
}

const struct fm_op_desc fm_op_depth_to_space_desc = {1, 1, 1, block_shape, move_cost};
const struct fm_op_desc fm_op_space_to_depth_desc = {1, 1, 1, block_shape, move_cost};
const struct fm_op_desc fm_op_reverse_sequence_desc = {2, 2, 1, reverse_shape, move_cost};
const struct fm_op_desc fm_op_max_unpool_desc = {2, 2, 1, unpool_shape, unpool_cost};
const struct fm_op_desc fm_op_eyelike_desc = {1, 1, 1, eyelike_shape, eyelike_cost};
