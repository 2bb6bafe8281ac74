/* Pooling: MaxPool, AvgPool, AdaptiveAvgPool, GlobalAvgPool, GlobalMaxPool, LpPool and
 * GlobalLpPool (NCHW; the global ones any rank >= 3; MaxPool, AvgPool and LpPool also 1-D, NCL,
 * with the window on index 1 of the attrs and kernel[0] = 1, and 3-D, NCDHW, with the depth in
 * the attrs' *_d fields: k = kd*kh*kw).
 * O = output elements, k = window elements.
 *   max:      (k-1) cmp per output (pthflops' count)    | dx[argmax] += dy: O add
 *   avg:      (k-1) add + 1 div per output              | dy/k: O div; scatter into the
 *             window: one add per window element (windows may overlap)
 *   adaptive: windows from PyTorch's rule start = floor(i*In/Out), end = ceil((i+1)*In/Out),
 *             summed exactly (sizes vary from window to window)
 *   global:   one window of H*W
 *   lp:       y = (sum |x|^p)^(1/p) over the window (LpPool, GlobalLpPool, ONNX's p, default
 *             2), per window element |x|^p: p = 1 1 cmp (|x|), p = 2 1 mul (x*x), other p
 *             1 special (pow of |x|, the sign dropped by the same call); (k-1) add per output;
 *             the root per output: none for p = 1, 1 special (sqrt, or pow) otherwise
 *             | per window element dx += dy * sign(x) * (|x|/y)^(p-1):
 *               p = 1: dy * sign(x): 1 cmp + 1 mul;  p = 2: dy * x / y: 1 mul + 1 div
 *               other p: |x|^(p-1) (1 special) / y^(p-1) (1 div; y^(p-1) 1 special per
 *               output), sign (1 cmp), * dy (1 mul)
 *             and the scatter into the window: one add per window element (as avg); keeps x, y
 * Padding positions count as part of the window (PyTorch pads max with -inf); the average's
 * divisor (count_include_pad) does not change the count, nor do dilations. A pad may be up to
 * kernel - 1 (ONNX Runtime's rule: every window then holds an input element; PyTorch allows
 * kernel/2). MaxPool keeps int64 indices for its backward (written by the forward, read by the
 * backward, when the input needs a gradient); ONNX's MaxPool may also output them (a second
 * output, int64, of Y's shape), which the forward then writes whether or not a gradient
 * follows. */
#include "ops.h"

static enum fm_status pool_window_shape(struct fm_shape_call *call)
{
    enum fm_status st = fm_shape_expect_rank(call, 0, 3, 5);
    if (st)
        return st;
    const struct fm_node *n = call->node;
    if (n->n_out > (n->op == FM_OP_MAXPOOL ? 2 : 1))
        return fm_error(call->ctx, FM_ERR_GRAPH, "layer '%s' (%s): %d outputs", n->name,
                        n->op_name, n->n_out);
    const struct fm_attrs *a = &n->attrs;
    const struct fm_shape *x = &call->in[0]->shape;
    bool ceil_mode = a->flags & FM_ATTR_CEIL_MODE;
    struct fm_shape y = *x;
    int sr = x->rank - 2;
    static const char *const axis_names[3][3] = {
        {"width"}, {"height", "width"}, {"depth", "height", "width"}};
    for (int i = 0; i < sr; i++) {
        int xi = 2 + i;
        struct fm_window w = fm_window_of(a, sr, i);
        if (w.kernel <= 0 || w.stride <= 0 || w.dilation <= 0 || w.pad_lo < 0 || w.pad_hi < 0)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (%s): kernel, stride and dilation must be positive and "
                            "pads non-negative (got kernel %lld, stride %lld, dilation %lld, "
                            "pads %lld/%lld)",
                            call->node->name, call->node->op_name, (long long)w.kernel,
                            (long long)w.stride, (long long)w.dilation, (long long)w.pad_lo,
                            (long long)w.pad_hi);
        if (w.pad_lo >= w.kernel || w.pad_hi >= w.kernel)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (%s): padding %lld/%lld must be smaller than the kernel "
                            "(%lld): a window of padding alone",
                            call->node->name, call->node->op_name, (long long)w.pad_lo,
                            (long long)w.pad_hi, (long long)w.kernel);
        y.dims[xi] = fm_window_out(x->dims[xi], w.kernel, w.stride, w.pad_lo, w.pad_hi,
                                   w.dilation, ceil_mode);
        if (y.dims[xi] <= 0)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (%s): the %s size reaches zero (input %lld, window %lld): "
                            "the input is too small for this network; use a larger "
                            "fm_zoo_opts.input",
                            call->node->name, call->node->op_name, axis_names[sr - 1][i],
                            (long long)x->dims[xi], (long long)w.kernel);
    }
    call->out_shape[0] = y;
    if (n->n_out == 2) {   /* ONNX's Indices */
        call->out_shape[1] = y;
        call->out_dtype[1] = FM_DTYPE_INT64;
    }
    return FM_OK;
}

static enum fm_status maxpool_cost(struct fm_cost_call *call)
{
    const struct fm_attrs *a = &call->node->attrs;
    uint64_t o = fm_cost_numel(call, call->out[0]);
    uint64_t k = fm_cmul3(&call->ovf, (uint64_t)a->kernel_d, (uint64_t)a->kernel[0],
                          (uint64_t)a->kernel[1]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, fm_cmul(&call->ovf, o, k - 1));
    fm_cost_fwd_bytes_default(call);   /* with an Indices output, its 8 bytes per output too */
    if (call->grad[0]) {
        fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_ADD, o);
        uint64_t idx = fm_cmul(&call->ovf, o, 8);
        if (call->node->n_out < 2) {   /* the indices, private to the backward */
            call->cost->saved_bytes = idx;
            fm_cost_write(call, FM_PHASE_FWD, idx);
        } else {   /* the Indices output is kept instead (and counted once, as a tensor) */
            call->saved_out_mask |= 1u << 1;
        }
        /* dY read, the indices read, dX written (the Indices output has no gradient) */
        fm_cost_read(call, FM_PHASE_BWD_DATA, fm_cost_bytes(call, call->out[0]));
        fm_cost_read(call, FM_PHASE_BWD_DATA, idx);
        fm_cost_write(call, FM_PHASE_BWD_DATA, fm_cost_bytes(call, call->in[0]));
    }
    return FM_OK;
}

/* avg-family cost from the output count and the total of window sizes */
static void avg_cost(struct fm_cost_call *call, uint64_t outputs, uint64_t window_total)
{
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, window_total - outputs);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, outputs);
    fm_cost_fwd_bytes_default(call);
    if (call->grad[0]) {
        fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_DIV, outputs);
        fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_ADD, window_total);
        fm_cost_bwd_bytes_default(call);
    }
}

static enum fm_status avgpool_cost(struct fm_cost_call *call)
{
    const struct fm_attrs *a = &call->node->attrs;
    uint64_t o = fm_cost_numel(call, call->out[0]);
    uint64_t k = fm_cmul3(&call->ovf, (uint64_t)a->kernel_d, (uint64_t)a->kernel[0],
                          (uint64_t)a->kernel[1]);
    avg_cost(call, o, fm_cmul(&call->ovf, o, k));
    return FM_OK;
}

/* ---- adaptive and global ---- */

static enum fm_status adaptive_shape(struct fm_shape_call *call)
{
    enum fm_status st = fm_shape_expect_rank(call, 0, 4, 4);
    if (st)
        return st;
    const struct fm_attrs *a = &call->node->attrs;
    struct fm_shape y = call->in[0]->shape;
    for (int ax = 0; ax < 2; ax++) {
        if (a->out_size[ax] <= 0)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (AdaptiveAvgPool): output size must be positive",
                            call->node->name);
        y.dims[2 + ax] = a->out_size[ax];
    }
    call->out_shape[0] = y;
    return FM_OK;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Sum over the outputs of one axis of their window lengths (PyTorch's adaptive rule, window i
 * = [floor(i*in/out), ceil((i+1)*in/out))), in closed form: with f(i) = floor(i*in/out), the
 * end is f(i+1), plus 1 unless out divides (i+1)*in, so the lengths telescope to
 * f(out) - f(0) + out - #{j in 1..out : out | j*in} = in + out - gcd(in, out). A loop over the
 * outputs would hang on an absurd output size and overflow i*in. */
static uint64_t adaptive_axis_total(int64_t in, int64_t out)
{
    return (uint64_t)in + (uint64_t)out - gcd_u64((uint64_t)in, (uint64_t)out);
}

static enum fm_status adaptive_cost(struct fm_cost_call *call)
{
    const struct fm_shape *x = &call->in[0]->shape, *y = &call->out[0]->shape;
    bool *ov = &call->ovf;
    uint64_t nc = fm_cmul(ov, (uint64_t)x->dims[0], (uint64_t)x->dims[1]);
    uint64_t th = adaptive_axis_total(x->dims[2], y->dims[2]);
    uint64_t tw = adaptive_axis_total(x->dims[3], y->dims[3]);
    uint64_t o = fm_cost_numel(call, call->out[0]);
    avg_cost(call, o, fm_cmul3(ov, nc, th, tw));
    return FM_OK;
}

static enum fm_status global_shape(struct fm_shape_call *call)
{
    enum fm_status st = fm_shape_expect_rank(call, 0, 3, FM_MAX_DIMS);
    if (st)
        return st;
    struct fm_shape y = call->in[0]->shape;
    for (int i = 2; i < y.rank; i++)
        y.dims[i] = 1;
    call->out_shape[0] = y;
    return FM_OK;
}

static enum fm_status global_avg_cost(struct fm_cost_call *call)
{
    avg_cost(call, fm_cost_numel(call, call->out[0]), fm_cost_numel(call, call->in[0]));
    return FM_OK;
}

static enum fm_status global_max_cost(struct fm_cost_call *call)
{
    uint64_t o = fm_cost_numel(call, call->out[0]), e = fm_cost_numel(call, call->in[0]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, e - o);
    fm_cost_fwd_bytes_default(call);
    if (call->grad[0]) {
        fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_ADD, o);
        call->cost->saved_bytes = fm_cmul(&call->ovf, o, 8);
        fm_cost_write(call, FM_PHASE_FWD, call->cost->saved_bytes);
        fm_cost_bwd_bytes_default(call);
        fm_cost_read(call, FM_PHASE_BWD_DATA, call->cost->saved_bytes);
    }
    return FM_OK;
}

/* ---- Lp pooling: O outputs of windows of k elements ---- */

static enum fm_status lp_p_check(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    if (n->attrs.nints < 1 || n->attrs.ints[0] <= 0)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): p must be a positive integer",
                        n->name, n->op_name);
    return FM_OK;
}

static enum fm_status lppool_shape(struct fm_shape_call *call)
{
    enum fm_status st = lp_p_check(call);
    return st ? st : pool_window_shape(call);
}

static enum fm_status global_lppool_shape(struct fm_shape_call *call)
{
    enum fm_status st = lp_p_check(call);
    return st ? st : global_shape(call);
}

static void lp_cost(struct fm_cost_call *call, uint64_t outputs, uint64_t window_total)
{
    bool *o = &call->ovf;
    int64_t p = call->node->attrs.ints[0];
    enum fm_prim pow_kind = p == 1 ? FM_PRIM_CMP : p == 2 ? FM_PRIM_MUL : FM_PRIM_SPECIAL;
    fm_cost_add(call, FM_PHASE_FWD, pow_kind, window_total);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, window_total - outputs);
    if (p != 1)
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, outputs);
    fm_cost_fwd_bytes_default(call);
    if (!call->grad[0])
        return;
    enum fm_phase ph = fm_cost_grad_phase(call, 0);
    fm_cost_add(call, ph, FM_PRIM_MUL, window_total);
    if (p == 1) {
        fm_cost_add(call, ph, FM_PRIM_CMP, window_total);
    } else {
        fm_cost_add(call, ph, FM_PRIM_DIV, window_total);
        if (p != 2) {
            fm_cost_add(call, ph, FM_PRIM_SPECIAL, fm_cadd(o, window_total, outputs));
            fm_cost_add(call, ph, FM_PRIM_CMP, window_total);
        }
    }
    fm_cost_add(call, ph, FM_PRIM_ADD, window_total);   /* the scatter */
    call->saved_in_mask |= 1u;
    if (p != 1)
        call->saved_out_mask |= 1u;
    fm_cost_bwd_bytes_default(call);
}

static enum fm_status lppool_cost(struct fm_cost_call *call)
{
    const struct fm_attrs *a = &call->node->attrs;
    uint64_t o = fm_cost_numel(call, call->out[0]);
    uint64_t k = fm_cmul3(&call->ovf, (uint64_t)a->kernel_d, (uint64_t)a->kernel[0],
                          (uint64_t)a->kernel[1]);
    lp_cost(call, o, fm_cmul(&call->ovf, o, k));
    return FM_OK;
}

static enum fm_status global_lppool_cost(struct fm_cost_call *call)
{
    lp_cost(call, fm_cost_numel(call, call->out[0]), fm_cost_numel(call, call->in[0]));
    return FM_OK;
}

const struct fm_op_desc fm_op_maxpool_desc = {1, 1, 0, pool_window_shape, maxpool_cost};
const struct fm_op_desc fm_op_avgpool_desc = {1, 1, 1, pool_window_shape, avgpool_cost};
const struct fm_op_desc fm_op_adaptive_avgpool_desc = {1, 1, 1, adaptive_shape, adaptive_cost};
const struct fm_op_desc fm_op_global_avgpool_desc = {1, 1, 1, global_shape, global_avg_cost};
const struct fm_op_desc fm_op_global_maxpool_desc = {1, 1, 1, global_shape, global_max_cost};
const struct fm_op_desc fm_op_lppool_desc = {1, 1, 1, lppool_shape, lppool_cost};
const struct fm_op_desc fm_op_global_lppool_desc = {1, 1, 1, global_lppool_shape,
                                                    global_lppool_cost};
