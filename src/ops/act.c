/* Activations: per-element rules from a table, plus Softmax/LogSoftmax (per row) and PReLU (a
 * learned slope). Counts come from the plainest formula for each function (written next to its
 * row); the backward recomputes what it needs from the kept tensor (input or output) rather
 * than assuming a library's fused kernel. Comparisons and selects count as cmp; exp, erf,
 * tanh, log as special. fvcore, thop and PyTorch's FlopCounterMode count all of these as 0;
 * ptflops counts 1 per element; pthflops 2 per element for ReLU. */
#include "ops.h"

/* counts per element, in enum fm_prim order: mac, add, mul, div, cmp, special */
static const struct fm_elementwise_rule rules[] = {
    /* relu: max(x,0) | dy * (y>0) */
    {FM_OP_RELU, {0, 0, 0, 0, 1, 0}, {0, 0, 0, 0, 1, 0}, FM_KEEP_OUT, false},
    /* clip: min(max(x,lo),hi) | dy * (lo<x<hi) */
    {FM_OP_CLIP, {0, 0, 0, 0, 2, 0}, {0, 0, 0, 0, 2, 0}, FM_KEEP_IN, false},
    /* leaky relu: x>0 ? x : a*x | dy * (x>0 ? 1 : a) */
    {FM_OP_LEAKY_RELU, {0, 0, 1, 0, 1, 0}, {0, 0, 1, 0, 1, 0}, FM_KEEP_IN, false},
    /* sigmoid: 1/(1+exp(-x)) | dy * y * (1-y) */
    {FM_OP_SIGMOID, {0, 1, 0, 1, 0, 1}, {0, 1, 2, 0, 0, 0}, FM_KEEP_OUT, false},
    /* tanh | dy * (1 - y*y) */
    {FM_OP_TANH, {0, 0, 0, 0, 0, 1}, {0, 1, 2, 0, 0, 0}, FM_KEEP_OUT, false},
    /* silu: x * sigmoid(x) | s = sigmoid(x) again; dy * s * (1 + x*(1-s)) */
    {FM_OP_SILU, {0, 1, 1, 1, 0, 1}, {0, 3, 3, 1, 0, 1}, FM_KEEP_IN, false},
    /* gelu (erf): 0.5*x*(1+erf(x/sqrt2)) | dy * (0.5*(1+erf(x/sqrt2)) + x*exp(-x*x/2)/sqrt(2pi)) */
    {FM_OP_GELU, {0, 1, 3, 0, 0, 1}, {0, 2, 7, 0, 0, 2}, FM_KEEP_IN, false},
    /* hardswish: x * min(max(x+3,0),6) / 6 (the /6 a mul by 1/6)
     * | dy * (x<-3 ? 0 : x>3 ? 1 : (2x+3)/6), with (2x+3)/6 = x/3 + 1/2 (PyTorch's kernel):
     * 2 cmp, 1 mul + 1 add, and the mul by dy */
    {FM_OP_HARDSWISH, {0, 1, 2, 0, 2, 0}, {0, 1, 2, 0, 2, 0}, FM_KEEP_IN, false},
    /* hardsigmoid: min(max(a*x+b,0),1) | dy * a * (0<a*x+b<1), the window tested on x against
     * the constants -b/a and (1-b)/a (PyTorch's kernel: -3 < x < 3): 2 cmp, 1 mul */
    {FM_OP_HARDSIGMOID, {0, 1, 1, 0, 2, 0}, {0, 0, 1, 0, 2, 0}, FM_KEEP_IN, false},
    /* Selects evaluate both branches, as vectorized kernels do (PyTorch's); a product of two
     * attribute constants (SELU's gamma*alpha) is folded into one constant.
     * elu: x>0 ? x : a*(exp(x)-1) | dy * (y>0 ? 1 : y + a) (y>0 exactly when x>0) */
    {FM_OP_ELU, {0, 1, 1, 0, 1, 1}, {0, 1, 1, 0, 1, 0}, FM_KEEP_OUT, false},
    /* selu: x>0 ? g*x : g*a*(exp(x)-1) | dy * (y>0 ? g : y + g*a) */
    {FM_OP_SELU, {0, 1, 2, 0, 1, 1}, {0, 1, 1, 0, 1, 0}, FM_KEEP_OUT, false},
    /* celu: max(0,x) + min(0, a*(exp(x/a)-1)) = x>0 ? x : a*(exp(x/a)-1), one select
     * | dy * (y>0 ? 1 : y/a + 1), y/a + 1 = exp(x/a) */
    {FM_OP_CELU, {0, 1, 1, 1, 1, 1}, {0, 1, 1, 1, 1, 0}, FM_KEEP_OUT, false},
    /* softplus: log(1 + exp(x)) | dy / (1 + exp(-x)), the sign folded into exp's argument */
    {FM_OP_SOFTPLUS, {0, 1, 0, 0, 0, 2}, {0, 1, 0, 1, 0, 1}, FM_KEEP_IN, false},
    /* softsign: x / (1 + |x|) | dy / ((1 + |x|) * (1 + |x|)) */
    {FM_OP_SOFTSIGN, {0, 1, 0, 1, 1, 0}, {0, 1, 1, 1, 1, 0}, FM_KEEP_IN, false},
    /* mish: x * tanh(log(1 + exp(x))) | recompute e = exp(x), 1+e, sp = log(1+e), t = tanh(sp)
     * (1 add, 3 special); s = sigmoid(x) = e/(1+e) (1 div); dy * (t + x*s*(1 - t*t)) (4 mul,
     * 2 add): PyTorch's mish_backward */
    {FM_OP_MISH, {0, 1, 1, 0, 0, 3}, {0, 3, 4, 1, 0, 3}, FM_KEEP_IN, false},
    /* thresholded relu: x > a ? x : 0 | dy * (x > a) */
    {FM_OP_THRESHOLDED_RELU, {0, 0, 0, 0, 1, 0}, {0, 0, 0, 0, 1, 0}, FM_KEEP_IN, false},
    /* shrink: x < -l ? x + b : x > l ? x - b : 0 (both sums, two selects) | dy * (|x| > l):
     * the window tested with 2 cmp, as Clip's */
    {FM_OP_SHRINK, {0, 2, 0, 0, 2, 0}, {0, 0, 0, 0, 2, 0}, FM_KEEP_IN, false},
};

/* gelu, tanh form: u = c*(x + 0.044715x^3) (4 mul, 1 add), t = tanh(u), y = 0.5x(1+t)
 * (2 mul, 1 add). Backward recomputes u and t (4 mul, 1 add, 1 special) keeping x^2, then
 * du/dx = c(1 + 3*0.044715 x^2) (2 mul, 1 add), dy/dx = 0.5(1+t) + 0.5x(1-t^2) du/dx
 * (5 mul, 3 add) and the product with dy (1 mul): 12 mul, 5 add, 1 special */
static const struct fm_elementwise_rule gelu_tanh[] = {
    {FM_OP_GELU, {0, 2, 6, 0, 0, 1}, {0, 5, 12, 0, 0, 1}, FM_KEEP_IN, false}};

static enum fm_status same_shape(struct fm_shape_call *call)
{
    if (!call->in[0])
        return fm_error(call->ctx, FM_ERR_GRAPH, "layer '%s': missing input", call->node->name);
    call->out_shape[0] = call->in[0]->shape;
    return FM_OK;
}

static enum fm_status act_cost(struct fm_cost_call *call)
{
    if (call->node->op == FM_OP_GELU && (call->node->attrs.flags & FM_ATTR_GELU_TANH))
        return fm_cost_elementwise(call, gelu_tanh, 1);
    return fm_cost_elementwise(call, rules, sizeof(rules) / sizeof(rules[0]));
}

/* ---- PReLU: y = x>0 ? x : a*x, a broadcast (per channel, usually) ---- */

static enum fm_status prelu_shape(struct fm_shape_call *call)
{
    struct fm_shape r;
    enum fm_status st = fm_shape_broadcast(call->ctx, call->node, &call->in[0]->shape,
                                           &call->in[1]->shape, &r);
    if (st)
        return st;
    if (!fm_shape_equal(&r, &call->in[0]->shape))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (PRelu): slope must broadcast to X",
                        call->node->name);
    call->out_shape[0] = r;
    return FM_OK;
}

static enum fm_status prelu_cost(struct fm_cost_call *call)
{
    uint64_t e = fm_cost_numel(call, call->out[0]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, e);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);
    fm_cost_fwd_bytes_default(call);
    if (call->grad[0]) {   /* dx = dy * (x>0 ? 1 : a) */
        fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_CMP, e);
        fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_MUL, e);
    }
    if (call->grad[1]) {   /* da = sum over broadcast of dy * (x>0 ? 0 : x) */
        enum fm_phase ph = fm_cost_grad_phase(call, 1);
        fm_cost_add(call, ph, FM_PRIM_CMP, e);
        fm_cost_add(call, ph, FM_PRIM_MUL, e);
        uint64_t own = fm_cost_numel(call, call->in[1]);
        fm_cost_add(call, ph, FM_PRIM_ADD, e > own ? e - own : 0);
    }
    if (call->grad[0] || call->grad[1])   /* nothing is kept when no gradient flows */
        call->saved_in_mask |= 1u;
    fm_cost_bwd_bytes_default(call);
    return FM_OK;
}

/* ---- Softmax and LogSoftmax along an axis: R rows of L elements, E = R*L ----
 * softmax:     m = max (E-R cmp); e = exp(x-m) (E add, E special); s = sum (E-R add); y = e/s
 *              (E div) | dx = y * (dy - sum(dy*y)): 2E mul, 2E-R add
 * log_softmax: m, x-m, exp, sum as above; log s (R special); y = x-m-log s (E add)
 *              | dx = dy - exp(y) * sum(dy): E-R add, E special, E mul, E add
 * hardmax:     y = one-hot of the first maximum of the row: E-R cmp (writing the one-hot is no
 *              arithmetic) | the derivative is 0: zeros written, as Floor's (trig.c) */

static enum fm_status softmax_shape(struct fm_shape_call *call)
{
    int axis;
    enum fm_status st = fm_shape_axis(call->ctx, call->node, call->node->attrs.axis,
                                      call->in[0]->shape.rank, &axis);
    if (st)
        return st;
    call->out_shape[0] = call->in[0]->shape;
    return FM_OK;
}

static enum fm_status softmax_cost(struct fm_cost_call *call)
{
    const struct fm_shape *x = &call->in[0]->shape;
    int axis;
    fm_shape_axis(call->ctx, call->node, call->node->attrs.axis, x->rank, &axis);
    bool *o = &call->ovf;
    uint64_t e = fm_cost_numel(call, call->in[0]);
    uint64_t rows = x->dims[axis] ? e / (uint64_t)x->dims[axis] : 0;   /* 0: empty */
    bool log = call->node->op == FM_OP_LOG_SOFTMAX;
    if (call->node->op == FM_OP_HARDMAX) {
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, e - rows);
        fm_cost_fwd_bytes_default(call);
        if (call->grad[0])
            fm_cost_write(call, fm_cost_grad_phase(call, 0), fm_cost_bytes(call, call->in[0]));
        return FM_OK;
    }
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, e - rows);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cadd(o, e, e - rows));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, e);
    if (log) {
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, rows);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, e);
    } else {
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, e);
    }
    fm_cost_fwd_bytes_default(call);
    if (call->grad[0]) {
        if (log) {
            fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_ADD, fm_cadd(o, e, e - rows));
            fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_SPECIAL, e);
            fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_MUL, e);
        } else {
            fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_MUL, fm_cmul(o, 2, e));
            fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_ADD, fm_cadd(o, e, e - rows));
        }
        call->saved_out_mask |= 1u;
        fm_cost_bwd_bytes_default(call);
    }
    return FM_OK;
}

#define ACT(NIN) {1, NIN, 1, same_shape, act_cost}
const struct fm_op_desc fm_op_relu_desc = ACT(1);
const struct fm_op_desc fm_op_clip_desc = ACT(3);
const struct fm_op_desc fm_op_leaky_relu_desc = ACT(1);
const struct fm_op_desc fm_op_sigmoid_desc = ACT(1);
const struct fm_op_desc fm_op_tanh_desc = ACT(1);
const struct fm_op_desc fm_op_silu_desc = ACT(1);
const struct fm_op_desc fm_op_gelu_desc = ACT(1);
const struct fm_op_desc fm_op_hardswish_desc = ACT(1);
const struct fm_op_desc fm_op_hardsigmoid_desc = ACT(1);
const struct fm_op_desc fm_op_prelu_desc = {2, 2, 1, prelu_shape, prelu_cost};
const struct fm_op_desc fm_op_softmax_desc = {1, 1, 1, softmax_shape, softmax_cost};
const struct fm_op_desc fm_op_log_softmax_desc = {1, 1, 1, softmax_shape, softmax_cost};
const struct fm_op_desc fm_op_hardmax_desc = {1, 1, 1, softmax_shape, softmax_cost};
const struct fm_op_desc fm_op_elu_desc = ACT(1);
const struct fm_op_desc fm_op_selu_desc = ACT(1);
const struct fm_op_desc fm_op_celu_desc = ACT(1);
const struct fm_op_desc fm_op_softplus_desc = ACT(1);
const struct fm_op_desc fm_op_softsign_desc = ACT(1);
const struct fm_op_desc fm_op_mish_desc = ACT(1);
const struct fm_op_desc fm_op_thresholded_relu_desc = ACT(1);
const struct fm_op_desc fm_op_shrink_desc = ACT(1);
