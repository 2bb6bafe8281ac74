/* Selection: ArgMax, ArgMin, TopK, OneHot, and Compress and NonZero where the values that decide
 * their output shapes are known when the file is read (the importer counts the selected
 * elements and puts the count into attrs.ints; a condition or input computed by the network
 * makes a data-dependent shape, which the ONNX importer declines with a message naming the
 * node and the input, as it does Unique). Comparisons are cmp; indices are int64.
 *
 * With E = input elements, R rows along the axis of n elements each (E = R*n):
 *   argmax, argmin  fwd (n-1) cmp per row = E - R cmp; select_last_index (>= instead of >)
 *                   costs the same. The output is indices: no gradient flows through it.
 *   topk            k of n per row, by a binary heap of the k best: every one of the n
 *                   elements goes down a path of at most ceil(log2(k+1)) comparisons (the
 *                   worst case, so the count does not depend on the data), and a sorted output
 *                   pops the heap: k*ceil(log2 k) more. Per row
 *                     n*ceil(log2(k+1)) + (sorted ? k*ceil(log2 k) : 0) cmp
 *                   (k = 1: n cmp, one more than argmax's n-1: the first element is compared
 *                   with the empty heap's sentinel). PyTorch's FlopCounterMode and fvcore count
 *                   0 for topk, as for sort and argmax.
 *                   dX: dy's k values per row scattered into a zeroed dX at the indices (which
 *                   are distinct): no arithmetic; the indices output is kept.
 *   onehot          output E' = |indices| * depth: each output element compares its position
 *                   with the index (y = idx == j ? on : off): E' cmp. The gradient of the
 *                   (off, on) values, when they need one, sums dy over the two sets: E' - 2 add.
 *   compress        the kept slices copied: no arithmetic; dX: dy put back, zeros elsewhere
 *                   (no arithmetic, dX written whole)
 *   nonzero         each element compared with zero: E cmp; output int64 (rank, count); no
 *                   gradient. */
#include "ops.h"

static int ceil_log2(uint64_t v)
{
    int b = 0;
    while (b < 63 && ((uint64_t)1 << b) < v)
        b++;
    return b;
}

/* ---- ArgMax / ArgMin: axis, FM_ATTR_KEEPDIMS; ints = {select_last_index} ---- */

static enum fm_status arg_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    int ax;
    enum fm_status st = fm_shape_axis(call->ctx, n, n->attrs.axis, x->rank, &ax);
    if (st)
        return st;
    struct fm_shape y = {0};
    for (int i = 0; i < x->rank; i++) {
        if (i != ax)
            y.dims[y.rank++] = x->dims[i];
        else if (n->attrs.flags & FM_ATTR_KEEPDIMS)
            y.dims[y.rank++] = 1;
    }
    call->out_shape[0] = y;
    call->out_dtype[0] = FM_DTYPE_INT64;
    return FM_OK;
}

static enum fm_status arg_cost(struct fm_cost_call *call)
{
    uint64_t e = fm_cost_numel(call, call->in[0]), r = fm_cost_numel(call, call->out[0]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, e - r);
    fm_cost_fwd_bytes_default(call);
    return FM_OK;
}

/* ---- TopK: axis; ints = {k, largest, sorted}; outputs values, indices ---- */

static enum fm_status topk_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    int ax;
    enum fm_status st = fm_shape_axis(call->ctx, n, n->attrs.axis, x->rank, &ax);
    if (st)
        return st;
    if (n->attrs.nints != 3)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (TopK): expects {k, largest, "
                        "sorted}", n->name);
    int64_t k = n->attrs.ints[0];
    if (k < 0 || k > x->dims[ax])
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (TopK): k = %lld of %lld elements "
                        "along axis %d", n->name, (long long)k, (long long)x->dims[ax], ax);
    struct fm_shape y = *x;
    y.dims[ax] = k;
    call->out_shape[0] = call->out_shape[1] = y;
    call->out_dtype[0] = call->in[0]->dtype;
    call->out_dtype[1] = FM_DTYPE_INT64;
    return FM_OK;
}

static enum fm_status topk_cost(struct fm_cost_call *call)
{
    const struct fm_node *n = call->node;
    bool *o = &call->ovf;
    const struct fm_shape *x = &call->in[0]->shape;
    int ax;
    enum fm_status st = fm_shape_axis(call->ctx, n, n->attrs.axis, x->rank, &ax);
    if (st)
        return st;
    uint64_t e = fm_cost_numel(call, call->in[0]), len = (uint64_t)x->dims[ax];
    uint64_t k = (uint64_t)n->attrs.ints[0];
    uint64_t rows = len ? e / len : 0;
    uint64_t per_row = fm_cmul(o, len, (uint64_t)ceil_log2(k + 1));
    if (n->attrs.ints[2])
        per_row = fm_cadd(o, per_row, fm_cmul(o, k, (uint64_t)ceil_log2(k)));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, fm_cmul(o, rows, per_row));
    fm_cost_fwd_bytes_default(call);
    if (call->grad[0]) {   /* dy scattered into a zeroed dX at the kept indices */
        enum fm_phase ph = fm_cost_grad_phase(call, 0);
        fm_cost_read(call, ph, fm_cadd(o, fm_cost_bytes(call, call->out[0]),
                                       fm_cost_bytes(call, call->out[1])));
        fm_cost_write(call, ph, fm_cost_bytes(call, call->in[0]));
        call->saved_out_mask |= 2u;
    }
    return FM_OK;
}

/* ---- OneHot: indices, values (off, on); axis; ints = {depth} ---- */

static enum fm_status onehot_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    const struct fm_tensor *v = call->in[1];
    if (n->attrs.nints != 1 || n->attrs.ints[0] < 1)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (OneHot): depth %lld is not "
                        "positive", n->name, n->attrs.nints ? (long long)n->attrs.ints[0] : 0LL);
    uint64_t nv = 0;
    if (fm_shape_numel(&v->shape, &nv) != FM_OK || nv != 2)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (OneHot): values '%s' must hold 2 "
                        "elements (off, on)", n->name, v->name);
    if (x->rank + 1 > FM_MAX_DIMS)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (OneHot): result has too many dims",
                        n->name);
    int ax;
    enum fm_status st = fm_shape_axis(call->ctx, n, n->attrs.axis, x->rank + 1, &ax);
    if (st)
        return st;
    struct fm_shape y = {x->rank + 1, {0}};
    for (int i = 0, j = 0; i < y.rank; i++)
        y.dims[i] = i == ax ? n->attrs.ints[0] : x->dims[j++];
    call->out_shape[0] = y;
    call->out_dtype[0] = v->dtype;
    return FM_OK;
}

static enum fm_status onehot_cost(struct fm_cost_call *call)
{
    uint64_t e = fm_cost_numel(call, call->out[0]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, e);
    fm_cost_fwd_bytes_default(call);
    if (call->grad[1]) {   /* d(off), d(on): dy summed over each set */
        enum fm_phase ph = fm_cost_grad_phase(call, 1);
        fm_cost_add(call, ph, FM_PRIM_ADD, e > 2 ? e - 2 : 0);
        fm_cost_read(call, ph, fm_cadd(&call->ovf, fm_cost_bytes(call, call->out[0]),
                                       fm_cost_bytes(call, call->in[0])));
        fm_cost_write(call, ph, fm_cost_bytes(call, call->in[1]));
        call->saved_in_mask |= 1u;
    }
    return FM_OK;
}

/* ---- Compress with a known condition: axis; ints = {kept, flatten (no axis given)} ---- */

static enum fm_status compress_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    if (n->attrs.nints != 2 || n->attrs.ints[0] < 0)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Compress): expects {kept, "
                        "flatten}", n->name);
    int64_t kept = n->attrs.ints[0];
    if (n->attrs.ints[1]) {
        uint64_t e = 0;
        if (fm_shape_numel(x, &e) != FM_OK || (uint64_t)kept > e)
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Compress): keeps %lld of the "
                            "input's elements", n->name, (long long)kept);
        call->out_shape[0] = (struct fm_shape){1, {kept}};
        return FM_OK;
    }
    int ax;
    enum fm_status st = fm_shape_axis(call->ctx, n, n->attrs.axis, x->rank, &ax);
    if (st)
        return st;
    if (kept > x->dims[ax])
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Compress): keeps %lld of %lld "
                        "along axis %d", n->name, (long long)kept, (long long)x->dims[ax], ax);
    call->out_shape[0] = *x;
    call->out_shape[0].dims[ax] = kept;
    return FM_OK;
}

/* ---- NonZero of a known input: ints = {count of nonzero elements} ---- */

static enum fm_status nonzero_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    uint64_t e = 0;
    if (n->attrs.nints != 1 || n->attrs.ints[0] < 0 || fm_shape_numel(x, &e) != FM_OK ||
        (uint64_t)n->attrs.ints[0] > e)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (NonZero): expects {count} of at "
                        "most the input's elements", n->name);
    call->out_shape[0] = (struct fm_shape){2, {x->rank > 0 ? x->rank : 1, n->attrs.ints[0]}};
    call->out_dtype[0] = FM_DTYPE_INT64;
    return FM_OK;
}

static enum fm_status nonzero_cost(struct fm_cost_call *call)
{
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, fm_cost_numel(call, call->in[0]));
    fm_cost_fwd_bytes_default(call);
    return FM_OK;
}

const struct fm_op_desc fm_op_argmax_desc = {1, 1, 1, arg_shape, arg_cost};
const struct fm_op_desc fm_op_argmin_desc = {1, 1, 1, arg_shape, arg_cost};
const struct fm_op_desc fm_op_topk_desc = {1, 1, 2, topk_shape, topk_cost};
const struct fm_op_desc fm_op_onehot_desc = {2, 2, 1, onehot_shape, onehot_cost};
const struct fm_op_desc fm_op_compress_desc = {1, 1, 1, compress_shape,
                                               fm_cost_part_copy};
const struct fm_op_desc fm_op_nonzero_desc = {1, 1, 1, nonzero_shape, nonzero_cost};
