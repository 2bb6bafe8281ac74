/* Gather and scatter by index tensors: GatherElements, GatherND, ScatterElements and ScatterND
 * (ONNX's deprecated Scatter, opsets 9-10, is ScatterElements without a reduction). The index
 * tensors are data (read, never differentiated); the address arithmetic that turns an index
 * into an offset is integer work and is not counted, as for Gather (tensor.c). Bytes: the
 * forward reads every input once and writes the output once; the gradients read what they
 * gather or scatter.
 *
 * Gather, with E = output elements (GatherElements: E = |indices|; GatherND: E = |indices
 * without its last dim| x |the data dims the index tuple does not address|):
 *   fwd   none: E elements copied from where the indices point
 *   dX    scatter-add of dy into a zeroed dX: E add (indices may repeat, so every element is
 *         added); reads dy and the indices (kept), writes dX
 *
 * Scatter, with X = data elements (= output elements) and U = update elements (ScatterElements:
 * |updates| = |indices|; ScatterND: |updates|), by reduction:
 *   fwd   none: a copy of the data, U updates written over it: no arithmetic
 *         add: U add; mul: U mul; max, min: U cmp
 *   dX    none: dy with the scattered places zeroed; add: dy as it is; both no arithmetic
 *         mul: dX = dy * y / x: X mul + X div (PyTorch's scatter_reduce "prod" backward,
 *              the division written out where x = 0 is a masked case, not counted)
 *         max, min: dX = dy where x == y, else 0: X cmp
 *   dU    none, add: dU = dy gathered at the indices: no arithmetic
 *         mul: dU = dy[p] * y[p] / u: U mul + U div
 *         max, min: dU = dy[p] where u == y[p], else 0: U cmp
 *         (ties, which PyTorch splits evenly between the equal candidates, are not counted)
 *   none and add keep the indices; mul, max and min also keep X, U and Y.
 * PyTorch's counter (torch.utils.flop_counter) and fvcore count none of these ops (0); the
 * ONNX constant folder (src/frontend/onnx/onnx_fold.c) evaluates ScatterND on small known
 * constants at load time, and only a ScatterND on values computed by the network is a layer. */
#include "ops.h"

enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN, RED_COUNT };

static enum fm_status int_indices(struct fm_shape_call *call, int i)
{
    const struct fm_tensor *t = call->in[i];
    if (fm_dtype_is_float(t->dtype) || t->dtype == FM_DTYPE_BOOL)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): indices '%s' are %s, not "
                        "integers", call->node->name, call->node->op_name, t->name,
                        fm_dtype_name(t->dtype));
    return FM_OK;
}

static enum fm_status gather_elements_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape, *idx = &call->in[1]->shape;
    int ax;
    enum fm_status st = int_indices(call, 1);
    if (!st)
        st = fm_shape_axis(call->ctx, n, n->attrs.axis, x->rank, &ax);
    if (st)
        return st;
    if (idx->rank != x->rank)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): indices '%s' have rank %d, "
                        "data '%s' rank %d (they must be equal)", n->name, n->op_name,
                        call->in[1]->name, idx->rank, call->in[0]->name, x->rank);
    call->out_shape[0] = *idx;
    call->out_dtype[0] = call->in[0]->dtype;
    return FM_OK;
}

/* GatherND (data rank r, indices rank q, b = batch_dims): the index tuples have k = the last
 * dim of the indices, 1 <= k <= r - b; out = indices dims [0, q-1) + data dims [b+k, r). */
static enum fm_status gather_nd_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape, *idx = &call->in[1]->shape;
    int64_t b = n->attrs.nints ? n->attrs.ints[0] : 0;
    enum fm_status st = int_indices(call, 1);
    if (st)
        return st;
    if (x->rank < 1 || idx->rank < 1 || b < 0 || b >= x->rank || b >= idx->rank)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (GatherND): batch_dims %lld with "
                        "data rank %d and indices rank %d", n->name, (long long)b, x->rank,
                        idx->rank);
    int64_t k = idx->dims[idx->rank - 1];
    if (k < 1 || k > x->rank - b)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (GatherND): index tuples of %lld "
                        "values address data of rank %d past %lld batch dims", n->name,
                        (long long)k, x->rank, (long long)b);
    for (int i = 0; i < b; i++) {
        if (x->dims[i] != idx->dims[i])
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (GatherND): batch dim %d is "
                            "%lld in the data and %lld in the indices", n->name, i,
                            (long long)x->dims[i], (long long)idx->dims[i]);
    }
    struct fm_shape y = {0};
    if (idx->rank - 1 + x->rank - b - k > FM_MAX_DIMS)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (GatherND): result has too many "
                        "dims", n->name);
    for (int i = 0; i < idx->rank - 1; i++)
        y.dims[y.rank++] = idx->dims[i];
    for (int i = (int)(b + k); i < x->rank; i++)
        y.dims[y.rank++] = x->dims[i];
    call->out_shape[0] = y;
    call->out_dtype[0] = call->in[0]->dtype;
    return FM_OK;
}

static enum fm_status reduction(struct fm_ctx *ctx, const struct fm_node *n, int *out)
{
    int64_t r = n->attrs.nints ? n->attrs.ints[0] : RED_NONE;
    if (r < 0 || r >= RED_COUNT)
        return fm_error(ctx, FM_ERR_SHAPE, "layer '%s' (%s): reduction %lld is not one of none, "
                        "add, mul, max, min", n->name, n->op_name, (long long)r);
    *out = (int)r;
    return FM_OK;
}

static enum fm_status scatter_common(struct fm_shape_call *call)
{
    int red = RED_NONE;
    enum fm_status st = int_indices(call, 1);
    if (!st)
        st = reduction(call->ctx, call->node, &red);
    if (st)
        return st;
    if (call->in[2]->dtype != call->in[0]->dtype)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): updates '%s' are %s, data "
                        "'%s' %s", call->node->name, call->node->op_name, call->in[2]->name,
                        fm_dtype_name(call->in[2]->dtype), call->in[0]->name,
                        fm_dtype_name(call->in[0]->dtype));
    call->out_shape[0] = call->in[0]->shape;
    call->out_dtype[0] = call->in[0]->dtype;
    return FM_OK;
}

static enum fm_status scatter_elements_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape, *idx = &call->in[1]->shape;
    int ax;
    enum fm_status st = fm_shape_axis(call->ctx, n, n->attrs.axis, x->rank, &ax);
    if (st)
        return st;
    if (idx->rank != x->rank || !fm_shape_equal(idx, &call->in[2]->shape))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): indices '%s' and updates "
                        "'%s' must have one shape, of the rank of data '%s' (%d)", n->name,
                        n->op_name, call->in[1]->name, call->in[2]->name, call->in[0]->name,
                        x->rank);
    return scatter_common(call);
}

/* ScatterND: updates = indices dims [0, q-1) + data dims [k, r), k = the last indices dim */
static enum fm_status scatter_nd_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape, *idx = &call->in[1]->shape;
    const struct fm_shape *u = &call->in[2]->shape;
    if (x->rank < 1 || idx->rank < 1)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (ScatterND): data and indices "
                        "need rank 1 or more", n->name);
    int64_t k = idx->dims[idx->rank - 1];
    if (k < 1 || k > x->rank)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (ScatterND): index tuples of %lld "
                        "values for data of rank %d", n->name, (long long)k, x->rank);
    struct fm_shape want = {0};
    if (idx->rank - 1 + x->rank - k > FM_MAX_DIMS)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (ScatterND): updates would have "
                        "too many dims", n->name);
    for (int i = 0; i < idx->rank - 1; i++)
        want.dims[want.rank++] = idx->dims[i];
    for (int i = (int)k; i < x->rank; i++)
        want.dims[want.rank++] = x->dims[i];
    if (!fm_shape_equal(u, &want)) {
        char a[128], b[128];
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (ScatterND): updates '%s' are %s, "
                        "the indices and data ask for %s", n->name, call->in[2]->name,
                        fm_shape_format(u, a, sizeof(a)), fm_shape_format(&want, b, sizeof(b)));
    }
    return scatter_common(call);
}

static enum fm_status scatter_cost(struct fm_cost_call *call)
{
    int red = RED_NONE;
    enum fm_status st = reduction(call->ctx, call->node, &red);
    if (st)
        return st;
    bool *o = &call->ovf;
    uint64_t x = fm_cost_numel(call, call->in[0]), u = fm_cost_numel(call, call->in[2]);
    uint64_t bx = fm_cost_bytes(call, call->in[0]), bu = fm_cost_bytes(call, call->in[2]);
    uint64_t bi = fm_cost_bytes(call, call->in[1]);
    static const enum fm_prim fwd_prim[RED_COUNT] = {FM_PRIM_COUNT, FM_PRIM_ADD, FM_PRIM_MUL,
                                                     FM_PRIM_CMP, FM_PRIM_CMP};
    if (red != RED_NONE)
        fm_cost_add(call, FM_PHASE_FWD, fwd_prim[red], u);
    fm_cost_fwd_bytes_default(call);
    bool plain = red == RED_NONE || red == RED_ADD;
    if (call->grad[0]) {
        enum fm_phase ph = fm_cost_grad_phase(call, 0);
        if (red == RED_MUL) {   /* dy * y / x */
            fm_cost_add(call, ph, FM_PRIM_MUL, x);
            fm_cost_add(call, ph, FM_PRIM_DIV, x);
        } else if (!plain) {    /* dy where x == y */
            fm_cost_add(call, ph, FM_PRIM_CMP, x);
        }
        fm_cost_read(call, ph, fm_cmul(o, plain ? 1 : 3, bx));   /* dy (, x, y) */
        if (red == RED_NONE)
            fm_cost_read(call, ph, bi);   /* where to zero */
        fm_cost_write(call, ph, bx);
    }
    if (call->grad[2]) {
        enum fm_phase ph = fm_cost_grad_phase(call, 2);
        if (red == RED_MUL) {   /* dy[p] * y[p] / u */
            fm_cost_add(call, ph, FM_PRIM_MUL, u);
            fm_cost_add(call, ph, FM_PRIM_DIV, u);
        } else if (!plain) {    /* dy[p] where u == y[p] */
            fm_cost_add(call, ph, FM_PRIM_CMP, u);
        }
        /* the indices, dy gathered (and y gathered, and u) */
        fm_cost_read(call, ph, fm_cadd(o, bi, fm_cmul(o, plain ? 1 : 3, bu)));
        fm_cost_write(call, ph, bu);
    }
    if (call->grad[0] || call->grad[2]) {
        call->saved_in_mask |= 2u;
        if (!plain) {
            call->saved_in_mask |= 5u;
            call->saved_out_mask |= 1u;
        }
    }
    return FM_OK;
}

const struct fm_op_desc fm_op_gather_elements_desc = {2, 2, 1, gather_elements_shape,
                                                      fm_cost_gather};
const struct fm_op_desc fm_op_gather_nd_desc = {2, 2, 1, gather_nd_shape,
                                                fm_cost_gather};
const struct fm_op_desc fm_op_scatter_elements_desc = {3, 3, 1, scatter_elements_shape,
                                                       scatter_cost};
const struct fm_op_desc fm_op_scatter_nd_desc = {3, 3, 1, scatter_nd_shape, scatter_cost};
