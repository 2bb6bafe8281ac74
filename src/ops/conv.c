/* Convolution and transposed convolution (1-D, 2-D and 3-D, grouped, depthwise, strided,
 * dilated).
 *
 * Forward MACs are the implicit-GEMM count, padding included (the convention of fvcore, thop,
 * torchvision's published figures and PyTorch's FlopCounterMode):
 *     conv:       N * Cout * Ho * Wo * (Cin/g) * kh * kw
 *     transposed: N * Cin  * H  * W  * (Cout/g) * kh * kw   (each input scatters into a window)
 * (3-D: times Do * kd, or D * kd; 1-D: Ho = H = kh = 1.)
 * The input gradient of a convolution is a transposed convolution with the same weights and the
 * weight gradient is a correlation of input and output gradient; each visits the same
 * (output position, weight element) pairs as the forward, so each costs exactly the forward
 * MACs (FlopCounterMode's convolution_backward rule, whose grouped-weight factor was a bug).
 * Bias: one add per output element forward; its gradient sums dY: one add per output element.
 * Not counted: the im2col/packing copies a library may make, and Winograd/FFT savings. */
#include "ops.h"

struct conv_dims {
    uint64_t n, c, cout, groups;
    uint64_t in_sp, out_sp, k_sp;   /* products over the spatial dims: input, output, kernel */
};

/* Reads the geometry of a conv node whose shapes are known (products checked through ovf). */
static void conv_dims_get(const struct fm_tensor *x, const struct fm_tensor *wt,
                          const struct fm_tensor *y, int64_t groups, bool *ovf,
                          struct conv_dims *d)
{
    d->n = (uint64_t)x->shape.dims[0];
    d->c = (uint64_t)x->shape.dims[1];
    d->cout = (uint64_t)y->shape.dims[1];
    d->groups = (uint64_t)groups;
    d->in_sp = d->out_sp = d->k_sp = 1;
    for (int i = 2; i < x->shape.rank; i++) {
        d->in_sp = fm_cmul(ovf, d->in_sp, (uint64_t)x->shape.dims[i]);
        d->out_sp = fm_cmul(ovf, d->out_sp, (uint64_t)y->shape.dims[i]);
        d->k_sp = fm_cmul(ovf, d->k_sp, (uint64_t)wt->shape.dims[i]);
    }
}

static const char *const axis_names[3][3] = {
    {"width"}, {"height", "width"}, {"depth", "height", "width"}};

static enum fm_status window_error(struct fm_shape_call *call, const char *axis, int64_t in,
                                   int64_t k)
{
    return fm_error(call->ctx, FM_ERR_SHAPE,
                    "layer '%s' (%s): the %s size reaches zero (input %lld, kernel %lld): the "
                    "input is too small for this network; use a larger fm_zoo_opts.input",
                    call->node->name, call->node->op_name, axis, (long long)in, (long long)k);
}

/* Shared shape checks: X (N,C,[[D,]H,]W), W of the same rank, optional bias of Cout. */
static enum fm_status conv_check(struct fm_shape_call *call, bool transposed, int64_t *cout)
{
    const struct fm_node *n = call->node;
    enum fm_status st = fm_shape_expect_rank(call, 0, 3, 5);
    if (st)
        return st;
    int rank = call->in[0]->shape.rank;
    st = fm_shape_expect_rank(call, 1, rank, rank);
    if (st)
        return st;
    const int64_t *x = call->in[0]->shape.dims, *w = call->in[1]->shape.dims;
    int64_t g = n->attrs.groups;
    if (g <= 0)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): groups must be positive, got "
                                                 "%lld",
                        n->name, n->op_name, (long long)g);
    /* window attributes come from files: reject what no framework accepts, by name */
    const struct fm_attrs *a = &n->attrs;
    for (int i = 0; i < rank - 2; i++) {
        struct fm_window wi = fm_window_of(a, rank - 2, i);
        if (wi.stride <= 0 || wi.dilation <= 0 || wi.pad_lo < 0 || wi.pad_hi < 0 ||
            (transposed && wi.output_padding < 0))
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (%s): strides and dilations must be positive, pads "
                            "non-negative%s (got stride %lld, dilation %lld, pads %lld/%lld)",
                            n->name, n->op_name, transposed ? ", output_padding too" : "",
                            (long long)wi.stride, (long long)wi.dilation,
                            (long long)wi.pad_lo, (long long)wi.pad_hi);
    }
    int64_t wc;   /* channels the weight expects; a product of file values, so checked */
    if (!transposed) {
        if (__builtin_mul_overflow(w[1], g, &wc) || x[1] != wc || w[0] % g != 0)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (Conv): input has %lld channels but the weight expects "
                            "%lld x %lld groups (and Cout %lld must divide by groups)",
                            n->name, (long long)x[1], (long long)w[1], (long long)g,
                            (long long)w[0]);
        *cout = w[0];
    } else {
        if (x[1] != w[0] || w[0] % g != 0)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (ConvTranspose): input has %lld channels but the weight "
                            "has %lld (which must divide by %lld groups)",
                            n->name, (long long)x[1], (long long)w[0], (long long)g);
        if (__builtin_mul_overflow(w[1], g, &wc))
            return fm_error(call->ctx, FM_ERR_OVERFLOW,
                            "layer '%s' (ConvTranspose): %lld x %lld groups output channels do "
                            "not fit in 64 bits",
                            n->name, (long long)w[1], (long long)g);
        *cout = wc;
    }
    if (n->n_in > 2 && call->in[2]) {
        const struct fm_shape *b = &call->in[2]->shape;
        if (b->rank != 1 || b->dims[0] != *cout)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (%s): bias must have %lld elements", n->name, n->op_name,
                            (long long)*cout);
    }
    return FM_OK;
}

static enum fm_status conv_shape(struct fm_shape_call *call)
{
    int64_t cout;
    enum fm_status st = conv_check(call, false, &cout);
    if (st)
        return st;
    const struct fm_attrs *a = &call->node->attrs;
    const struct fm_shape *x = &call->in[0]->shape, *w = &call->in[1]->shape;
    struct fm_shape *y = &call->out_shape[0];
    y->rank = x->rank;
    y->dims[0] = x->dims[0];
    y->dims[1] = cout;
    int sr = x->rank - 2;
    for (int i = 0; i < sr; i++) {
        struct fm_window wi = fm_window_of(a, sr, i);
        y->dims[2 + i] = fm_window_out(x->dims[2 + i], w->dims[2 + i], wi.stride, wi.pad_lo,
                                       wi.pad_hi, wi.dilation, false);
        if (y->dims[2 + i] <= 0)
            return window_error(call, axis_names[sr - 1][i], x->dims[2 + i], w->dims[2 + i]);
    }
    return FM_OK;
}

static enum fm_status conv_transpose_shape(struct fm_shape_call *call)
{
    int64_t cout;
    enum fm_status st = conv_check(call, true, &cout);
    if (st)
        return st;
    const struct fm_attrs *a = &call->node->attrs;
    const struct fm_shape *x = &call->in[0]->shape, *w = &call->in[1]->shape;
    struct fm_shape *y = &call->out_shape[0];
    y->rank = x->rank;
    y->dims[0] = x->dims[0];
    y->dims[1] = cout;
    int sr = x->rank - 2;
    for (int i = 0; i < sr; i++) {
        int xi = 2 + i;
        struct fm_window wi = fm_window_of(a, sr, i);
        const char *axis = axis_names[sr - 1][i];
        /* (in-1)*stride - pad_lo - pad_hi + dilation*(k-1) + output_padding + 1, from file
         * values: checked at each step */
        int64_t o, span;
        bool ovf = __builtin_mul_overflow(x->dims[xi] - 1, wi.stride, &o) ||
                   __builtin_sub_overflow(o, wi.pad_lo, &o) ||
                   __builtin_sub_overflow(o, wi.pad_hi, &o) ||
                   __builtin_mul_overflow(wi.dilation, w->dims[xi] - 1, &span) ||
                   __builtin_add_overflow(o, span, &o) ||
                   __builtin_add_overflow(o, wi.output_padding, &o) ||
                   __builtin_add_overflow(o, 1, &o);
        if (ovf)
            return fm_error(call->ctx, FM_ERR_OVERFLOW,
                            "layer '%s' (ConvTranspose): the output %s does not fit in 64 bits "
                            "(stride %lld, dilation %lld)",
                            call->node->name, axis, (long long)wi.stride,
                            (long long)wi.dilation);
        if (o <= 0)
            return window_error(call, axis, x->dims[xi], w->dims[xi]);
        y->dims[xi] = o;
    }
    return FM_OK;
}

/* Cost shared by both: macs is the forward MAC count; the rest follows from the roles. */
static void conv_cost_common(struct fm_cost_call *call, uint64_t macs, uint64_t out_elems)
{
    bool has_bias = call->node->n_in > 2 && call->in[2];
    uint64_t by = fm_cost_bytes(call, call->out[0]);
    uint64_t bx = fm_cost_bytes(call, call->in[0]);
    uint64_t bw = fm_cost_bytes(call, call->in[1]);

    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MAC, macs);
    if (has_bias)
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, out_elems);
    fm_cost_fwd_bytes_default(call);

    if (call->grad[0]) {   /* dX = convT(dY, W) */
        enum fm_phase ph = fm_cost_grad_phase(call, 0);
        fm_cost_add(call, ph, FM_PRIM_MAC, macs);
        fm_cost_read(call, ph, fm_cadd(&call->ovf, by, bw));
        fm_cost_write(call, ph, bx);
        call->saved_in_mask |= 1u << 1;
    }
    if (call->grad[1]) {   /* dW = corr(X, dY) */
        enum fm_phase ph = fm_cost_grad_phase(call, 1);
        fm_cost_add(call, ph, FM_PRIM_MAC, macs);
        fm_cost_read(call, ph, fm_cadd(&call->ovf, by, bx));
        fm_cost_write(call, ph, bw);
        call->saved_in_mask |= 1u << 0;
    }
    if (has_bias && call->grad[2]) {   /* dB = sum of dY over N, H, W */
        enum fm_phase ph = fm_cost_grad_phase(call, 2);
        fm_cost_add(call, ph, FM_PRIM_ADD, out_elems);
        if (!call->grad[1])
            fm_cost_read(call, ph, by);
        fm_cost_write(call, ph, fm_cost_bytes(call, call->in[2]));
    }
}

static enum fm_status conv_cost(struct fm_cost_call *call)
{
    struct conv_dims d;
    bool *o = &call->ovf;
    conv_dims_get(call->in[0], call->in[1], call->out[0], call->node->attrs.groups, o, &d);
    uint64_t out_elems = fm_cmul3(o, d.n, d.cout, d.out_sp);
    uint64_t per_out = fm_cmul(o, d.c / d.groups, d.k_sp);
    conv_cost_common(call, fm_cmul(o, out_elems, per_out), out_elems);
    return FM_OK;
}

static enum fm_status conv_transpose_cost(struct fm_cost_call *call)
{
    struct conv_dims d;
    bool *o = &call->ovf;
    conv_dims_get(call->in[0], call->in[1], call->out[0], call->node->attrs.groups, o, &d);
    uint64_t in_elems = fm_cmul3(o, d.n, d.c, d.in_sp);
    uint64_t per_in = fm_cmul(o, d.cout / d.groups, d.k_sp);
    uint64_t out_elems = fm_cost_numel(call, call->out[0]);
    conv_cost_common(call, fm_cmul(o, in_elems, per_in), out_elems);
    return FM_OK;
}

const struct fm_op_desc fm_op_conv_desc = {2, 3, 1, conv_shape, conv_cost};
const struct fm_op_desc fm_op_conv_transpose_desc =
    {2, 3, 1, conv_transpose_shape, conv_transpose_cost};
