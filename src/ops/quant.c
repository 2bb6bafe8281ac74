/* Quantized ops: ONNX's QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
 * ConvInteger, QLinearMatMul, QLinearConv, and ONNX Runtime's quantized com.microsoft ops
 * (MatMulIntegerToFloat, DynamicQuantizeMatMul, DynamicQuantizeLSTM), as ONNX Runtime's
 * quantizer writes them. They are inference kernels: no gradient is defined for them, so no
 * backward is counted even in a training count (the node says so: no_grad, and fm_count logs
 * it once). Integer products are counted in their own precision: the MACs of an int8/uint8
 * product (int32 accumulation) mark the node int8, reports say so and the roofline uses the
 * device's int8 ceiling; bytes are in the storage types (1 byte for int8/uint8, 4 for int32).
 *
 * Per element E of the quantized or dequantized tensor:
 *   QuantizeLinear     y = saturate(round(x / s) + zp)   1 div, 1 add, 3 cmp (round, 2 clamps)
 *   DequantizeLinear   y = (x - zp) * s                  1 add, 1 mul
 *   DynamicQuantizeLinear: lo = min(0, min(x)), hi = max(0, max(x)) (2E + 2 cmp),
 *     s = (hi - lo) / 255 (1 add, 1 div), zp = saturate(round(-lo / s)) (1 add, 1 div, 3 cmp),
 *     then QuantizeLinear: total E + 2 div, E + 2 add, 5E + 5 cmp
 * Products, MACs = batch*M*K*N (matmuls) or N*Cout*Ho*Wo*(Cin/g)*kh*kw (convs), int8:
 *   a zero point given as an input costs 1 add per element of its operand (x - zp, once);
 *   QLinear*: requantize per output y = saturate(round(acc * m) + y_zp), m = s_a*s_b/s_y per
 *   output channel (1 mul + 1 div per element of the weight's scale): 1 mul, 1 add, 3 cmp per
 *   output; QLinearConv's int32 bias: 1 add per output.
 *   QGemm (com.microsoft): Gemm's int8 MACs, zero points as above, C (int32) 1 add per output,
 *   then requantized (with y_scale) or scaled to float as MatMulIntegerToFloat (without);
 *   alpha is folded into the output scale.
 *   MatMulIntegerToFloat: y = acc * (s_a * s_b) (+ bias): 1 mul per scale element, then 1 mul
 *   (and 1 add with bias) per output. DynamicQuantizeMatMul: DynamicQuantizeLinear of A, then
 *   MatMulIntegerToFloat.
 * Scales: per tensor (one element) or per axis (a 1-D tensor of the length of the quantized
 * dim); any other shape is an error naming the layer. A zero point has the scale's shape.
 * DynamicQuantizeLSTM: ONNX's LSTM counted by src/ops/rnn.c's rule (W and R stored transposed),
 * its gate products int8 MACs. */
#include "ops.h"

#include <string.h>

static enum fm_status qerr(struct fm_ctx *ctx, const struct fm_node *n, const char *what)
{
    return fm_error(ctx, FM_ERR_SHAPE, "layer '%s' (%s): %s", n->name, n->op_name, what);
}

static bool is_int8(enum fm_dtype d)
{
    return d == FM_DTYPE_INT8 || d == FM_DTYPE_UINT8;
}

/* Checks the scale (input si) and zero point (zi, optional) of a tensor x quantized along axis
 * (per axis) or as a whole (per tensor). */
static enum fm_status scale_check(struct fm_shape_call *call, const struct fm_tensor *x, int si,
                                  int zi, int64_t axis)
{
    const struct fm_node *n = call->node;
    const struct fm_tensor *s = call->in[si];
    uint64_t ne = 0;
    if (!s || fm_shape_numel(&s->shape, &ne) != FM_OK)
        return qerr(call->ctx, n, "its scale is missing");
    if (!fm_dtype_is_float(s->dtype))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): scale '%s' is %s, not a float",
                        n->name, n->op_name, s->name, fm_dtype_name(s->dtype));
    bool per_tensor = ne == 1 && s->shape.rank <= 1;
    if (!per_tensor) {
        int ax;
        enum fm_status st = fm_shape_axis(call->ctx, n, axis, x->shape.rank, &ax);
        if (st)
            return st;
        if (s->shape.rank != 1 || s->shape.dims[0] != x->shape.dims[ax]) {
            char b1[64], b2[64];
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (%s): scale '%s' has shape %s; per-tensor quantization "
                            "needs one element, per-axis quantization of '%s' (%s) along axis "
                            "%d needs %lld",
                            n->name, n->op_name, s->name, fm_shape_format(&s->shape, b1, 64),
                            x->name, fm_shape_format(&x->shape, b2, 64), ax,
                            (long long)x->shape.dims[ax]);
        }
    }
    const struct fm_tensor *z = zi < n->n_in ? call->in[zi] : NULL;
    if (z) {
        uint64_t nz = 0;
        if (fm_shape_numel(&z->shape, &nz) != FM_OK || nz != ne)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (%s): zero point '%s' has %llu elements, its scale %llu",
                            n->name, n->op_name, z->name, (unsigned long long)nz,
                            (unsigned long long)ne);
    }
    return FM_OK;
}

static enum fm_status int8_check(struct fm_shape_call *call, int i)
{
    const struct fm_tensor *t = call->in[i];
    if (t && !is_int8(t->dtype))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): input '%s' is %s, not int8/uint8",
                        call->node->name, call->node->op_name, t->name, fm_dtype_name(t->dtype));
    return FM_OK;
}

/* ---- QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear ---- */

static enum fm_status quantize_shape(struct fm_shape_call *call)
{
    const struct fm_tensor *x = call->in[0];
    bool q = call->node->op == FM_OP_QUANTIZE_LINEAR;
    if (q ? !fm_dtype_is_float(x->dtype) : fm_dtype_is_float(x->dtype))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): input '%s' is %s", call->node->name,
                        call->node->op_name, x->name, fm_dtype_name(x->dtype));
    enum fm_status st = scale_check(call, x, 1, 2, call->node->attrs.axis);
    if (st)
        return st;
    call->out_shape[0] = x->shape;
    const struct fm_tensor *z = call->node->n_in > 2 ? call->in[2] : NULL;
    if (q)   /* the zero point's type, uint8 without one (ONNX's default) */
        call->out_dtype[0] = z ? z->dtype : FM_DTYPE_UINT8;
    else
        call->out_dtype[0] = call->in[1]->dtype;
    return FM_OK;
}

static enum fm_status quantize_cost(struct fm_cost_call *call)
{
    uint64_t e = fm_cost_numel(call, call->in[0]);
    if (call->node->op == FM_OP_QUANTIZE_LINEAR) {
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, e);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, e);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, fm_cmul(&call->ovf, 3, e));
    } else {
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, e);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);
    }
    fm_cost_fwd_bytes_default(call);
    call->cost->no_grad = true;
    return FM_OK;
}

static enum fm_status dynq_shape(struct fm_shape_call *call)
{
    const struct fm_tensor *x = call->in[0];
    if (!fm_dtype_is_float(x->dtype))
        return qerr(call->ctx, call->node, "its input is not a float");
    call->out_shape[0] = x->shape;
    call->out_dtype[0] = FM_DTYPE_UINT8;
    for (int i = 1; i < call->node->n_out; i++) {
        call->out_shape[i] = (struct fm_shape){0, {0}};
        call->out_dtype[i] = i == 1 ? FM_DTYPE_FP32 : FM_DTYPE_UINT8;
    }
    return FM_OK;
}

/* DynamicQuantizeLinear of e elements (also the first step of DynamicQuantizeMatMul) */
static void dynq_ops(struct fm_cost_call *call, uint64_t e)
{
    bool *o = &call->ovf;
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, fm_cadd(o, e, 2));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cadd(o, e, 2));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, fm_cadd(o, fm_cmul(o, 5, e), 5));
}

static enum fm_status dynq_cost(struct fm_cost_call *call)
{
    dynq_ops(call, fm_cost_numel(call, call->in[0]));
    fm_cost_fwd_bytes_default(call);
    call->cost->no_grad = true;
    return FM_OK;
}

/* ---- integer products ---- */

/* The shape of a matmul of inputs ia and ib, by MatMul's own rule. */
static enum fm_status mm_shape(struct fm_shape_call *call, int ia, int ib)
{
    struct fm_shape_call sub = *call;
    memset(sub.in, 0, sizeof(sub.in));
    sub.in[0] = call->in[ia];
    sub.in[1] = call->in[ib];
    enum fm_status st = fm_op_matmul_desc.shape(&sub);
    call->out_shape[0] = sub.out_shape[0];
    return st;
}

/* batch*M*K*N of a matmul of inputs ia and ib whose output is out[0]: M*N*batch = numel(out),
 * K = A's last dim */
static uint64_t mm_macs(struct fm_cost_call *call, int ia)
{
    const struct fm_shape *a = &call->in[ia]->shape;
    uint64_t k = (uint64_t)a->dims[a->rank - 1];
    return fm_cmul(&call->ovf, fm_cost_numel(call, call->out[0]), k);
}

/* The shape of a conv of x (input ix) and w (iw), by Conv's own rule (attrs as Conv's). */
static enum fm_status conv_shape_of(struct fm_shape_call *call, int ix, int iw)
{
    struct fm_shape_call sub = *call;
    memset(sub.in, 0, sizeof(sub.in));
    sub.in[0] = call->in[ix];
    sub.in[1] = call->in[iw];
    struct fm_node node = *call->node;
    node.n_in = 2;
    sub.node = &node;
    enum fm_status st = fm_op_conv_desc.shape(&sub);
    call->out_shape[0] = sub.out_shape[0];
    return st;
}

/* N*Cout*Ho*Wo*(Cin/g)*kh*kw from the output and the weight (Cout, Cin/g, kh[, kw]) */
static uint64_t conv_macs(struct fm_cost_call *call, int iw)
{
    const struct fm_shape *w = &call->in[iw]->shape;
    uint64_t per_out = 1;
    for (int d = 1; d < w->rank; d++)
        per_out = fm_cmul(&call->ovf, per_out, (uint64_t)w->dims[d]);
    return fm_cmul(&call->ovf, fm_cost_numel(call, call->out[0]), per_out);
}

/* 1 add per element of an operand whose zero point is given */
static void zp_adds(struct fm_cost_call *call, int operand, int zp)
{
    if (zp < call->node->n_in && call->in[zp])
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cost_numel(call, call->in[operand]));
}

/* requantization of every output: 1 mul, 1 add, 3 cmp; m = s_a*s_b/s_y per weight-scale
 * element: 1 mul, 1 div */
static void requantize(struct fm_cost_call *call, int wscale)
{
    uint64_t e = fm_cost_numel(call, call->out[0]);
    uint64_t ns = fm_cost_numel(call, call->in[wscale]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, fm_cadd(&call->ovf, e, ns));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, ns);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, e);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, fm_cmul(&call->ovf, 3, e));
}

static void int8_done(struct fm_cost_call *call, uint64_t macs)
{
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MAC, macs);
    fm_cost_fwd_bytes_default(call);
    call->cost->int8 = true;
    call->cost->no_grad = true;
}

/* MatMulInteger: A, B, a_zero_point?, b_zero_point? -> int32 */
static enum fm_status matmul_integer_shape(struct fm_shape_call *call)
{
    enum fm_status st = int8_check(call, 0);
    if (!st)
        st = int8_check(call, 1);
    if (!st)
        st = mm_shape(call, 0, 1);
    call->out_dtype[0] = FM_DTYPE_INT32;
    return st;
}

static enum fm_status matmul_integer_cost(struct fm_cost_call *call)
{
    zp_adds(call, 0, 2);
    zp_adds(call, 1, 3);
    int8_done(call, mm_macs(call, 0));
    return FM_OK;
}

/* ConvInteger: x, w, x_zero_point?, w_zero_point? -> int32 */
static enum fm_status conv_integer_shape(struct fm_shape_call *call)
{
    enum fm_status st = int8_check(call, 0);
    if (!st)
        st = int8_check(call, 1);
    if (!st)
        st = conv_shape_of(call, 0, 1);
    call->out_dtype[0] = FM_DTYPE_INT32;
    return st;
}

static enum fm_status conv_integer_cost(struct fm_cost_call *call)
{
    zp_adds(call, 0, 2);
    zp_adds(call, 1, 3);
    int8_done(call, conv_macs(call, 1));
    return FM_OK;
}

/* QLinearMatMul: a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp -> y_zp's type */
static enum fm_status qlinear_matmul_shape(struct fm_shape_call *call)
{
    const struct fm_tensor *a = call->in[0], *b = call->in[3];
    enum fm_status st = int8_check(call, 0);
    if (!st)
        st = int8_check(call, 3);
    if (!st)
        st = scale_check(call, a, 1, 2, -2);   /* a per row: axis -2 */
    if (!st)   /* b per column: axis -1 */
        st = scale_check(call, b, 4, 5, -1);
    if (!st)
        st = mm_shape(call, 0, 3);
    if (!st && call->in[6]->shape.rank > 1)
        st = qerr(call->ctx, call->node, "y_scale must be one element");
    call->out_dtype[0] = call->in[7]->dtype;
    return st;
}

static enum fm_status qlinear_matmul_cost(struct fm_cost_call *call)
{
    zp_adds(call, 0, 2);
    zp_adds(call, 3, 5);
    requantize(call, 4);
    int8_done(call, mm_macs(call, 0));
    return FM_OK;
}

/* QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B? (int32) */
static enum fm_status qlinear_conv_shape(struct fm_shape_call *call)
{
    enum fm_status st = int8_check(call, 0);
    if (!st)
        st = int8_check(call, 3);
    if (!st)
        st = scale_check(call, call->in[0], 1, 2, 1);
    if (!st)   /* w per output channel: axis 0 */
        st = scale_check(call, call->in[3], 4, 5, 0);
    if (!st)
        st = conv_shape_of(call, 0, 3);
    if (!st && call->node->n_in > 8 && call->in[8]) {
        uint64_t nb = 0;
        if (fm_shape_numel(&call->in[8]->shape, &nb) != FM_OK ||
            nb != (uint64_t)call->out_shape[0].dims[1])
            st = qerr(call->ctx, call->node, "its bias must have one element per output channel");
    }
    call->out_dtype[0] = call->in[7]->dtype;
    return st;
}

static enum fm_status qlinear_conv_cost(struct fm_cost_call *call)
{
    zp_adds(call, 0, 2);
    zp_adds(call, 3, 5);
    requantize(call, 4);
    if (call->node->n_in > 8 && call->in[8])
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cost_numel(call, call->out[0]));
    int8_done(call, conv_macs(call, 3));
    return FM_OK;
}

/* MatMulIntegerToFloat (com.microsoft): A, B, a_scale, b_scale, a_zp?, b_zp?, bias? -> float */
static enum fm_status mm_int_to_float_shape(struct fm_shape_call *call)
{
    enum fm_status st = int8_check(call, 0);
    if (!st)
        st = int8_check(call, 1);
    if (!st)
        st = scale_check(call, call->in[0], 2, 4, -2);
    if (!st)
        st = scale_check(call, call->in[1], 3, 5, -1);
    if (!st)
        st = mm_shape(call, 0, 1);
    call->out_dtype[0] = call->in[2]->dtype;
    return st;
}

/* y = acc * (s_a*s_b) (+ bias); ib: B's input, isb: B's scale, ibias: the bias */
static void to_float(struct fm_cost_call *call, int isb, int ibias)
{
    uint64_t e = fm_cost_numel(call, call->out[0]);
    uint64_t ns = fm_cost_numel(call, call->in[isb]);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, fm_cadd(&call->ovf, e, ns));
    if (ibias < call->node->n_in && call->in[ibias])
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, e);
}

static enum fm_status mm_int_to_float_cost(struct fm_cost_call *call)
{
    zp_adds(call, 0, 4);
    zp_adds(call, 1, 5);
    to_float(call, 3, 6);
    int8_done(call, mm_macs(call, 0));
    return FM_OK;
}

/* DynamicQuantizeMatMul (com.microsoft): A (float), B (int8), b_scale, b_zp?, bias? */
static enum fm_status dynq_matmul_shape(struct fm_shape_call *call)
{
    enum fm_status st = int8_check(call, 1);
    if (!st && !fm_dtype_is_float(call->in[0]->dtype))
        st = qerr(call->ctx, call->node, "A must be a float");
    if (!st)
        st = scale_check(call, call->in[1], 2, 3, -1);
    if (!st)
        st = mm_shape(call, 0, 1);
    call->out_dtype[0] = call->in[0]->dtype;
    return st;
}

static enum fm_status dynq_matmul_cost(struct fm_cost_call *call)
{
    dynq_ops(call, fm_cost_numel(call, call->in[0]));
    /* the quantized A is uint8 with its own zero point: 1 add per element of A */
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cost_numel(call, call->in[0]));
    zp_adds(call, 1, 3);
    to_float(call, 2, 4);
    int8_done(call, mm_macs(call, 0));
    return FM_OK;
}

/* QGemm (com.microsoft): A, a_scale, a_zp, B, b_scale, b_zp, C? (int32), y_scale?, y_zp?;
 * Gemm's FM_ATTR_TRANS_A/B (alpha folds into the output scale) */
static enum fm_status qgemm_shape(struct fm_shape_call *call)
{
    enum fm_status st = int8_check(call, 0);
    if (!st)
        st = int8_check(call, 3);
    if (!st)
        st = scale_check(call, call->in[0], 1, 2, 0);
    if (!st)   /* B per output column: N is B's dim 0 when transposed */
        st = scale_check(call, call->in[3], 4, 5,
                         call->node->attrs.flags & FM_ATTR_TRANS_B ? 0 : 1);
    if (st)
        return st;
    struct fm_shape_call sub = *call;
    memset(sub.in, 0, sizeof(sub.in));
    sub.in[0] = call->in[0];
    sub.in[1] = call->in[3];
    struct fm_node node = *call->node;
    node.n_in = 2;
    sub.node = &node;
    st = fm_op_gemm_desc.shape(&sub);
    call->out_shape[0] = sub.out_shape[0];
    const struct fm_tensor *ys = call->node->n_in > 7 ? call->in[7] : NULL;
    const struct fm_tensor *yz = call->node->n_in > 8 ? call->in[8] : NULL;
    call->out_dtype[0] = !ys ? call->in[1]->dtype : yz ? yz->dtype : FM_DTYPE_UINT8;
    return st;
}

static enum fm_status qgemm_cost(struct fm_cost_call *call)
{
    const struct fm_shape *a = &call->in[0]->shape;
    uint64_t k = (uint64_t)a->dims[call->node->attrs.flags & FM_ATTR_TRANS_A ? 0 : 1];
    zp_adds(call, 0, 2);
    zp_adds(call, 3, 5);
    if (call->node->n_in > 6 && call->in[6])
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cost_numel(call, call->out[0]));
    if (call->node->n_in > 7 && call->in[7])
        requantize(call, 4);
    else
        to_float(call, 4, FM_MAX_IO);
    int8_done(call, fm_cmul(&call->ovf, fm_cost_numel(call, call->out[0]), k));
    return FM_OK;
}

/* DynamicQuantizeLSTM (com.microsoft): ONNX's LSTM (src/ops/rnn.c's shape and cost rules, the
 * mapper's ints the same as LSTM's) with W and R stored transposed ([D, I, 4H], [D, H, 4H]) in
 * int8 and the scales and zero points of W and R after P (dropped by the mapper). ONNX Runtime
 * quantizes X and h at every step and runs both gate products in int8: the node's MACs are int8
 * MACs; the gate activations and the cell update stay float. Inference only, like every
 * quantized op: no backward. */
static enum fm_status dynq_lstm_shape(struct fm_shape_call *call)
{
    return fm_rnn_shape(call, FM_RNN_CELL_LSTM);
}

static enum fm_status dynq_lstm_cost(struct fm_cost_call *call)
{
    for (int i = 0; i < FM_MAX_IO; i++)
        call->grad[i] = false;
    enum fm_status st = fm_rnn_cost(call, FM_RNN_CELL_LSTM);
    call->cost->int8 = true;
    call->cost->no_grad = true;
    return st;
}

const struct fm_op_desc fm_op_quantize_linear_desc = {2, 3, 1, quantize_shape, quantize_cost};
const struct fm_op_desc fm_op_dequantize_linear_desc = {2, 3, 1, quantize_shape, quantize_cost};
const struct fm_op_desc fm_op_dynamic_quantize_linear_desc = {1, 1, 3, dynq_shape, dynq_cost};
const struct fm_op_desc fm_op_matmul_integer_desc = {2, 4, 1, matmul_integer_shape,
                                                     matmul_integer_cost};
const struct fm_op_desc fm_op_conv_integer_desc = {2, 4, 1, conv_integer_shape,
                                                   conv_integer_cost};
const struct fm_op_desc fm_op_qlinear_matmul_desc = {8, 8, 1, qlinear_matmul_shape,
                                                     qlinear_matmul_cost};
const struct fm_op_desc fm_op_qlinear_conv_desc = {8, 9, 1, qlinear_conv_shape,
                                                   qlinear_conv_cost};
const struct fm_op_desc fm_op_matmul_integer_to_float_desc = {4, 7, 1, mm_int_to_float_shape,
                                                              mm_int_to_float_cost};
const struct fm_op_desc fm_op_dynamic_quantize_matmul_desc = {3, 5, 1, dynq_matmul_shape,
                                                              dynq_matmul_cost};
const struct fm_op_desc fm_op_qgemm_desc = {6, 9, 1, qgemm_shape, qgemm_cost};
const struct fm_op_desc fm_op_dynamic_quantize_lstm_desc = {3, 14, 0, dynq_lstm_shape,
                                                            dynq_lstm_cost};
