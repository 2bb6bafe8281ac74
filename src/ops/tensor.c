/* Data movement that imported graphs use: Gather, Slice, Squeeze, Unsqueeze, Expand, Tile, Pad,
 * Resize, ConstantOfShape, Range and Cast. Their integer operands (axes, starts, repeats, pads,
 * target shapes) are constants that the importer evaluated and put into attrs.ints, so a node
 * has only its data inputs and its rule reads no tensor contents. Bytes: a copy reads what it
 * moves and writes its output once; Squeeze and Unsqueeze are views (0 bytes, as Reshape).
 * Arithmetic, with E = output elements and I = input elements:
 *   gather           none              | scatter-add of dy into dX: E add
 *   slice, pad       none              | dX is dy put back in place (or cut out): no arithmetic
 *   expand, tile     none              | dX sums the copies: E - I add
 *   resize nearest   none              | each dy adds into its source: E add
 *   resize linear    per output, over d resized axes with t = 2^d taps: t mul + (t-1) add
 *   resize cubic     the same with t = 4^d taps   | bwd: t mul + t add per output
 *                    (interpolation weights depend only on coordinates: computed once per
 *                    row/column, not counted)
 *   constant of shape, cast: none; range: y_i = start + i*delta, E mul + E add. */
#include "ops.h"

#include <string.h>

static enum fm_status gather_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape, *idx = &call->in[1]->shape;
    if (fm_dtype_is_float(call->in[1]->dtype))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Gather): indices '%s' are not "
                        "integers", n->name, call->in[1]->name);
    int ax;
    enum fm_status st = fm_shape_axis(call->ctx, n, n->attrs.axis, x->rank, &ax);
    if (st)
        return st;
    if (x->rank - 1 + idx->rank > FM_MAX_DIMS)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Gather): result has too many dims",
                        n->name);
    struct fm_shape y = {0};
    for (int i = 0; i < ax; i++)
        y.dims[y.rank++] = x->dims[i];
    for (int i = 0; i < idx->rank; i++)
        y.dims[y.rank++] = idx->dims[i];
    for (int i = ax + 1; i < x->rank; i++)
        y.dims[y.rank++] = x->dims[i];
    call->out_shape[0] = y;
    call->out_dtype[0] = call->in[0]->dtype;
    return FM_OK;
}

/* ---- Slice: (start, end, step) per dim; start in [0, d] (or [-1, d-1] when stepping back) */

static enum fm_status slice_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    if (n->attrs.nints != 3 * x->rank)
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (Slice): expects (start, end, step) for each of %d dims",
                        n->name, x->rank);
    struct fm_shape y = *x;
    for (int i = 0; i < x->rank; i++) {
        int64_t s = n->attrs.ints[3 * i], e = n->attrs.ints[3 * i + 1],
                st = n->attrs.ints[3 * i + 2];
        if (st == 0 || s < -1 || s > x->dims[i] || e < -1 || e > x->dims[i])
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (Slice): dim %d: start %lld, end %lld, step %lld do not "
                            "fit size %lld",
                            n->name, i, (long long)s, (long long)e, (long long)st,
                            (long long)x->dims[i]);
        /* ceil(|e - s| / |st|), written so that a step near +-2^63 cannot overflow */
        int64_t len = 0;
        if (st > 0 && e > s)
            len = (e - s - 1) / st + 1;
        else if (st < 0 && s > e)
            len = (int64_t)((uint64_t)(s - e - 1) / (0 - (uint64_t)st)) + 1;
        y.dims[i] = len;   /* 0: selects no elements, an empty tensor (legal in ONNX) */
    }
    call->out_shape[0] = y;
    return FM_OK;
}

/* ---- Squeeze / Unsqueeze: views ---- */

static enum fm_status squeeze_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    bool drop[FM_MAX_DIMS] = {false};
    for (int k = 0; k < n->attrs.nints; k++) {
        int ax;
        enum fm_status st = fm_shape_axis(call->ctx, n, n->attrs.ints[k], x->rank, &ax);
        if (st)
            return st;
        if (x->dims[ax] != 1)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (Squeeze): dim %d has size %lld, not 1", n->name, ax,
                            (long long)x->dims[ax]);
        drop[ax] = true;
    }
    struct fm_shape y = {0};
    for (int i = 0; i < x->rank; i++) {
        bool d = n->attrs.nints ? drop[i] : x->dims[i] == 1;   /* no axes: every 1 */
        if (!d)
            y.dims[y.rank++] = x->dims[i];
    }
    call->out_shape[0] = y;
    return FM_OK;
}

static enum fm_status unsqueeze_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    int rank = x->rank + n->attrs.nints;
    if (n->attrs.nints == 0 || rank > FM_MAX_DIMS)
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (Unsqueeze): %d axes on rank %d (at most %d dims)", n->name,
                        n->attrs.nints, x->rank, FM_MAX_DIMS);
    bool ins[FM_MAX_DIMS] = {false};
    for (int k = 0; k < n->attrs.nints; k++) {
        int ax;
        enum fm_status st = fm_shape_axis(call->ctx, n, n->attrs.ints[k], rank, &ax);
        if (st)
            return st;
        if (ins[ax])
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Unsqueeze): axis %d twice",
                            n->name, ax);
        ins[ax] = true;
    }
    struct fm_shape y = {rank, {0}};
    for (int i = 0, j = 0; i < rank; i++)
        y.dims[i] = ins[i] ? 1 : x->dims[j++];
    call->out_shape[0] = y;
    return FM_OK;
}

static enum fm_status view_cost(struct fm_cost_call *call)
{
    (void)call;
    return FM_OK;
}

/* ---- Expand and Tile ---- */

static enum fm_status ints_shape(struct fm_shape_call *call, struct fm_shape *out)
{
    const struct fm_node *n = call->node;
    if (n->attrs.nints > FM_MAX_DIMS)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): %d dims is too many", n->name,
                        n->op_name, n->attrs.nints);
    out->rank = n->attrs.nints;
    for (int i = 0; i < out->rank; i++) {
        out->dims[i] = n->attrs.ints[i];
        if (out->dims[i] <= 0)
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): dim %d is %lld", n->name,
                            n->op_name, i, (long long)out->dims[i]);
    }
    return FM_OK;
}

static enum fm_status expand_shape(struct fm_shape_call *call)
{
    struct fm_shape t = {0};
    enum fm_status st = ints_shape(call, &t);
    if (st)
        return st;
    return fm_shape_broadcast(call->ctx, call->node, &call->in[0]->shape, &t,
                              &call->out_shape[0]);
}

static enum fm_status tile_shape(struct fm_shape_call *call)
{
    struct fm_shape r = {0};
    enum fm_status st = ints_shape(call, &r);
    if (st)
        return st;
    const struct fm_shape *x = &call->in[0]->shape;
    if (r.rank != x->rank)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Tile): %d repeats for rank %d",
                        call->node->name, r.rank, x->rank);
    struct fm_shape y = *x;
    for (int i = 0; i < x->rank; i++) {
        if (__builtin_mul_overflow(x->dims[i], r.dims[i], &y.dims[i]))
            return fm_error(call->ctx, FM_ERR_OVERFLOW, "layer '%s' (Tile): dim %d overflows",
                            call->node->name, i);
    }
    call->out_shape[0] = y;
    return FM_OK;
}

static enum fm_status replicate_cost(struct fm_cost_call *call)
{
    uint64_t e = fm_cost_numel(call, call->out[0]), own = fm_cost_numel(call, call->in[0]);
    fm_cost_fwd_bytes_default(call);
    if (call->grad[0]) {
        if (e > own)
            fm_cost_add(call, fm_cost_grad_phase(call, 0), FM_PRIM_ADD, e - own);
        fm_cost_bwd_bytes_default(call);
    }
    return FM_OK;
}

/* ---- Pad: begin pads for every dim, then end pads (negative pads crop) ---- */

static enum fm_status pad_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    if (n->attrs.nints != 2 * x->rank)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Pad): %d pads for rank %d", n->name,
                        n->attrs.nints, x->rank);
    struct fm_shape y = *x;
    for (int i = 0; i < x->rank; i++) {
        int64_t b = n->attrs.ints[i], e = n->attrs.ints[x->rank + i], d;
        if (__builtin_add_overflow(x->dims[i], b, &d) || __builtin_add_overflow(d, e, &d) ||
            d <= 0)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (Pad): dim %d of size %lld padded by %lld and %lld is "
                            "not positive",
                            n->name, i, (long long)x->dims[i], (long long)b, (long long)e);
        y.dims[i] = d;
    }
    call->out_shape[0] = y;
    return FM_OK;
}

static enum fm_status pad_cost(struct fm_cost_call *call)
{
    fm_cost_fwd_bytes_default(call);
    if (call->grad[0]) {   /* dX = the inner part of dy */
        enum fm_phase ph = fm_cost_grad_phase(call, 0);
        uint64_t bx = fm_cost_bytes(call, call->in[0]);
        fm_cost_read(call, ph, bx);
        fm_cost_write(call, ph, bx);
    }
    return FM_OK;
}

/* ---- Resize: {mode, output dims} ---- */

static enum fm_status resize_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    if (n->attrs.nints != x->rank + 1 || n->attrs.ints[0] < 0 || n->attrs.ints[0] > 2)
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (Resize): expects {mode 0..2, %d output dims}", n->name,
                        x->rank);
    struct fm_shape y = {x->rank, {0}};
    for (int i = 0; i < x->rank; i++) {
        y.dims[i] = n->attrs.ints[1 + i];
        if (y.dims[i] <= 0)
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Resize): output dim %d is %lld",
                            n->name, i, (long long)y.dims[i]);
    }
    call->out_shape[0] = y;
    return FM_OK;
}

static enum fm_status resize_cost(struct fm_cost_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    bool *o = &call->ovf;
    uint64_t e = fm_cost_numel(call, call->out[0]);
    uint64_t taps = 1;
    for (int i = 0; i < x->rank; i++) {
        if (n->attrs.ints[1 + i] != x->dims[i])
            taps *= n->attrs.ints[0] == 2 ? 4 : 2;
    }
    bool nearest = n->attrs.ints[0] == 0 || taps == 1;
    if (!nearest) {
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, fm_cmul(o, taps, e));
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cmul(o, taps - 1, e));
    }
    fm_cost_fwd_bytes_default(call);
    if (call->grad[0]) {
        enum fm_phase ph = fm_cost_grad_phase(call, 0);
        if (nearest) {
            fm_cost_add(call, ph, FM_PRIM_ADD, e);
        } else {
            fm_cost_add(call, ph, FM_PRIM_MUL, fm_cmul(o, taps, e));
            fm_cost_add(call, ph, FM_PRIM_ADD, fm_cmul(o, taps, e));
        }
        fm_cost_bwd_bytes_default(call);
    }
    return FM_OK;
}

/* ---- ConstantOfShape {dtype, dims}, Range {length, dtype}, Cast {dtype} ---- */

static enum fm_status read_dtype(struct fm_shape_call *call, int64_t v, enum fm_dtype *out)
{
    if (v < 0 || v >= FM_DTYPE_COUNT)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): dtype %lld does not exist",
                        call->node->name, call->node->op_name, (long long)v);
    *out = (enum fm_dtype)v;
    return FM_OK;
}

static enum fm_status constant_of_shape_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    if (n->attrs.nints < 1 || n->attrs.nints > FM_MAX_DIMS + 1)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (ConstantOfShape): expects {dtype, "
                        "dims}", n->name);
    enum fm_status st = read_dtype(call, n->attrs.ints[0], &call->out_dtype[0]);
    if (st)
        return st;
    struct fm_shape y = {n->attrs.nints - 1, {0}};
    memcpy(y.dims, n->attrs.ints + 1, sizeof(int64_t) * (size_t)y.rank);
    call->out_shape[0] = y;   /* the graph rejects dims <= 0 */
    return FM_OK;
}

static enum fm_status fill_cost(struct fm_cost_call *call)
{
    fm_cost_write(call, FM_PHASE_FWD, fm_cost_bytes(call, call->out[0]));
    return FM_OK;
}

static enum fm_status range_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    if (n->attrs.nints != 2)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Range): expects {length, dtype}",
                        n->name);
    call->out_shape[0] = (struct fm_shape){1, {n->attrs.ints[0]}};
    return read_dtype(call, n->attrs.ints[1], &call->out_dtype[0]);
}

static enum fm_status range_cost(struct fm_cost_call *call)
{
    uint64_t e = fm_cost_numel(call, call->out[0]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, e);
    return fill_cost(call);
}

static enum fm_status cast_shape(struct fm_shape_call *call)
{
    if (call->node->attrs.nints != 1)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Cast): expects {dtype}",
                        call->node->name);
    call->out_shape[0] = call->in[0]->shape;
    return read_dtype(call, call->node->attrs.ints[0], &call->out_dtype[0]);
}

static enum fm_status copy_cost(struct fm_cost_call *call)
{
    fm_cost_fwd_bytes_default(call);
    fm_cost_bwd_bytes_default(call);
    return FM_OK;
}

#define MOVE(MIN, MAX, SHAPE, COST) {MIN, MAX, 1, SHAPE, COST}
const struct fm_op_desc fm_op_gather_desc = MOVE(2, 2, gather_shape, fm_cost_gather);
const struct fm_op_desc fm_op_slice_desc = MOVE(1, 1, slice_shape, fm_cost_part_copy);
const struct fm_op_desc fm_op_squeeze_desc = MOVE(1, 1, squeeze_shape, view_cost);
const struct fm_op_desc fm_op_unsqueeze_desc = MOVE(1, 1, unsqueeze_shape, view_cost);
const struct fm_op_desc fm_op_expand_desc = MOVE(1, 1, expand_shape, replicate_cost);
const struct fm_op_desc fm_op_tile_desc = MOVE(1, 1, tile_shape, replicate_cost);
const struct fm_op_desc fm_op_pad_desc = MOVE(1, 1, pad_shape, pad_cost);
const struct fm_op_desc fm_op_resize_desc = MOVE(1, 1, resize_shape, resize_cost);
const struct fm_op_desc fm_op_constant_of_shape_desc =
    MOVE(0, 0, constant_of_shape_shape, fill_cost);
const struct fm_op_desc fm_op_range_desc = MOVE(0, 0, range_shape, range_cost);
const struct fm_op_desc fm_op_cast_desc = MOVE(1, 1, cast_shape, copy_cost);
