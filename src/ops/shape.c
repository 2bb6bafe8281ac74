/* Data movement: Concat, Flatten, Reshape, Transpose, Split, Identity. No arithmetic.
 * Bytes: Flatten, Reshape and Identity are views (0 bytes; their gradient is a view too);
 * Concat, Split and Transpose copy: read every input element once, write every output once,
 * and their gradients do the inverse copy. */
#include "ops.h"

#include <string.h>

static enum fm_status concat_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *a = &call->in[0]->shape;
    int axis;
    enum fm_status st = fm_shape_axis(call->ctx, n, n->attrs.axis, a->rank, &axis);
    if (st)
        return st;
    struct fm_shape y = *a;
    for (int i = 1; i < n->n_in; i++) {
        const struct fm_shape *b = &call->in[i]->shape;
        bool ok = b->rank == a->rank;
        for (int d = 0; ok && d < a->rank; d++)
            ok = d == axis || b->dims[d] == a->dims[d];
        if (!ok) {
            char sa[128], sb[128];
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (Concat): input %d has shape %s, which does not match %s "
                            "outside axis %d",
                            n->name, i, fm_shape_format(b, sb, sizeof(sb)),
                            fm_shape_format(a, sa, sizeof(sa)), axis);
        }
        if (__builtin_add_overflow(y.dims[axis], b->dims[axis], &y.dims[axis]))
            return fm_error(call->ctx, FM_ERR_OVERFLOW,
                            "layer '%s' (Concat): the concatenated axis %d overflows 64 bits",
                            n->name, axis);
    }
    call->out_shape[0] = y;
    return FM_OK;
}

static enum fm_status flatten_shape(struct fm_shape_call *call)
{
    const struct fm_shape *x = &call->in[0]->shape;
    int64_t axis = call->node->attrs.axis;
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis > x->rank)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Flatten): axis %lld out of range",
                        call->node->name, (long long)call->node->attrs.axis);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < x->rank; i++) {
        if (i < axis)
            outer *= x->dims[i];
        else
            inner *= x->dims[i];
    }
    call->out_shape[0] = (struct fm_shape){2, {outer, inner}};
    return FM_OK;
}

/* Reshape target: attrs.ints, or the integer contents of input 1. 0 copies the input's dim,
 * -1 is inferred. */
static enum fm_status reshape_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    const int64_t *tgt = n->attrs.ints;
    uint64_t nt = (uint64_t)n->attrs.nints;
    if (n->n_in > 1 && call->in[1]) {
        if (!call->in[1]->ivalue)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (Reshape): the target shape '%s' is not known before "
                            "running the network",
                            n->name, call->in[1]->name);
        tgt = call->in[1]->ivalue;
        nt = call->in[1]->nvalue;
    }
    if (nt > FM_MAX_DIMS)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Reshape): %llu dims is too many",
                        n->name, (unsigned long long)nt);
    uint64_t total;
    if (fm_shape_numel(x, &total) != FM_OK)
        return fm_error(call->ctx, FM_ERR_OVERFLOW, "layer '%s': input too large", n->name);
    struct fm_shape y = {(int)nt, {0}};
    int infer = -1;
    uint64_t known = 1;
    for (int i = 0; i < (int)nt; i++) {
        int64_t d = tgt[i];
        if (d == 0 && i < x->rank)
            d = x->dims[i];
        if (d == -1) {
            if (infer >= 0)
                return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Reshape): two -1 dims",
                                n->name);
            infer = i;
            continue;
        }
        if (d < 0)   /* 0: an empty result (a copied 0, or ONNX's allowzero) */
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (Reshape): dim %d is %lld",
                            n->name, i, (long long)d);
        y.dims[i] = d;
        if (!fm_mul_ok(known, (uint64_t)d, &known))
            return fm_error(call->ctx, FM_ERR_OVERFLOW, "layer '%s' (Reshape): overflow",
                            n->name);
    }
    if (infer >= 0) {
        if (known == 0 || total % known != 0)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (Reshape): %llu elements do not divide into the target",
                            n->name, (unsigned long long)total);
        y.dims[infer] = (int64_t)(total / known);
        known = total;
    }
    if (known != total) {
        char sx[128];
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (Reshape): cannot reshape %s (%llu elements) to %llu elements",
                        n->name, fm_shape_format(x, sx, sizeof(sx)), (unsigned long long)total,
                        (unsigned long long)known);
    }
    call->out_shape[0] = y;
    return FM_OK;
}

static enum fm_status transpose_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    struct fm_shape y = {x->rank, {0}};
    bool seen[FM_MAX_DIMS] = {false};
    if (n->attrs.nints == 0) {  /* ONNX default: reverse */
        for (int i = 0; i < x->rank; i++)
            y.dims[i] = x->dims[x->rank - 1 - i];
        call->out_shape[0] = y;
        return FM_OK;
    }
    if (n->attrs.nints != x->rank)
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (Transpose): permutation has %d entries for rank %d", n->name,
                        n->attrs.nints, x->rank);
    for (int i = 0; i < x->rank; i++) {
        int64_t p = n->attrs.ints[i];
        if (p < 0)
            p += x->rank;
        if (p < 0 || p >= x->rank || seen[p])
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (Transpose): permutation is not a permutation", n->name);
        seen[p] = true;
        y.dims[i] = x->dims[p];
    }
    call->out_shape[0] = y;
    return FM_OK;
}

static enum fm_status split_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    int axis;
    enum fm_status st = fm_shape_axis(call->ctx, n, n->attrs.axis, x->rank, &axis);
    if (st)
        return st;
    int64_t sum = 0;
    for (int i = 0; i < n->n_out; i++) {
        int64_t s;
        if (n->attrs.nints == 0) {   /* equal parts */
            if (x->dims[axis] % n->n_out != 0)
                return fm_error(call->ctx, FM_ERR_SHAPE,
                                "layer '%s' (Split): %lld does not split into %d equal parts",
                                n->name, (long long)x->dims[axis], n->n_out);
            s = x->dims[axis] / n->n_out;
        } else {
            if (n->attrs.nints != n->n_out)
                return fm_error(call->ctx, FM_ERR_SHAPE,
                                "layer '%s' (Split): %d sizes for %d outputs", n->name,
                                n->attrs.nints, n->n_out);
            s = n->attrs.ints[i];
            if (s < 0)   /* 0: an empty part */
                return fm_error(call->ctx, FM_ERR_SHAPE,
                                "layer '%s' (Split): size %d is %lld; sizes must not be negative",
                                n->name, i, (long long)s);
        }
        call->out_shape[i] = *x;
        call->out_shape[i].dims[axis] = s;
        if (__builtin_add_overflow(sum, s, &sum))
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (Split): sizes add up to more than 2^63, not %lld",
                            n->name, (long long)x->dims[axis]);
    }
    if (sum != x->dims[axis])
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (Split): sizes add up to %lld, not %lld", n->name,
                        (long long)sum, (long long)x->dims[axis]);
    return FM_OK;
}

static enum fm_status same_shape(struct fm_shape_call *call)
{
    call->out_shape[0] = call->in[0]->shape;
    return FM_OK;
}

static enum fm_status copy_cost(struct fm_cost_call *call)
{
    fm_cost_fwd_bytes_default(call);
    fm_cost_bwd_bytes_default(call);
    return FM_OK;
}

static enum fm_status view_cost(struct fm_cost_call *call)
{
    (void)call;
    return FM_OK;
}

#define MOVE(MIN, MAX, NOUT, SHAPE, COST) {MIN, MAX, NOUT, SHAPE, COST}
const struct fm_op_desc fm_op_concat_desc = MOVE(1, FM_MAX_IO, 1, concat_shape, copy_cost);
const struct fm_op_desc fm_op_flatten_desc = MOVE(1, 1, 1, flatten_shape, view_cost);
const struct fm_op_desc fm_op_reshape_desc = MOVE(1, 2, 1, reshape_shape, view_cost);
const struct fm_op_desc fm_op_transpose_desc = MOVE(1, 1, 1, transpose_shape, copy_cost);
const struct fm_op_desc fm_op_split_desc = MOVE(1, 2, 0, split_shape, copy_cost);
const struct fm_op_desc fm_op_identity_desc = MOVE(1, 1, 1, same_shape, view_cost);
