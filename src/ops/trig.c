/* Trigonometric functions (Sin, Cos, Tan) and the piecewise-constant ones (Floor, Ceil, Round,
 * Sign), elementwise on one tensor, as imported graphs spell them out (a rotary embedding builds
 * its tables with Cos and Sin; quantization-style code rounds). Per element E of the output:
 *   sin    fwd 1 special | dx = dy * cos(x): 1 special + 1 mul (keeps x)
 *   cos    fwd 1 special | dx = -dy * sin(x): 1 special + 1 mul, the sign folded (keeps x)
 *   tan    fwd 1 special | dx = dy * (1 + y*y): 1 add + 2 mul (keeps y)
 *   floor, ceil, round, sign
 *          fwd 1 cmp: picking an integer (or -1, 0, 1) is a comparison, not arithmetic on the
 *          mantissa, as ReLU and Abs are counted
 *          bwd: the derivative is 0 wherever it exists, and frameworks (PyTorch's autograd)
 *          still write a zero gradient for an input that needs one: no operations, the
 *          gradient's bytes written, nothing read or kept
 * The inverse and hyperbolic functions, whose derivatives are algebraic in x (kept x):
 *   asin   fwd 1 special | dx = dy / sqrt(1 - x*x): 1 mul + 1 add + 1 special + 1 div
 *   acos   fwd 1 special | dx = -dy / sqrt(1 - x*x): the same, the sign folded
 *   atan   fwd 1 special | dx = dy / (1 + x*x): 1 mul + 1 add + 1 div
 *   sinh   fwd 1 special | dx = dy * cosh(x): 1 special + 1 mul
 *   cosh   fwd 1 special | dx = dy * sinh(x): 1 special + 1 mul
 *   asinh  fwd 1 special | dx = dy / sqrt(x*x + 1): 1 mul + 1 add + 1 special + 1 div
 *   acosh  fwd 1 special | dx = dy / sqrt(x*x - 1): 1 mul + 1 add + 1 special + 1 div
 *   atanh  fwd 1 special | dx = dy / (1 - x*x): 1 mul + 1 add + 1 div
 * (each library function, asin or cosh, is one special, as exp and tanh are)
 * Integer inputs: Sign accepts them (ONNX allows every numeric type); the others are float only,
 * as in ONNX. Not modelled: a library that computes sin and cos together (each is one op). */
#include "ops.h"

static const struct fm_elementwise_rule rules[] = {
    {FM_OP_SIN, {0, 0, 0, 0, 0, 1}, {0, 0, 1, 0, 0, 1}, FM_KEEP_IN, false},
    {FM_OP_COS, {0, 0, 0, 0, 0, 1}, {0, 0, 1, 0, 0, 1}, FM_KEEP_IN, false},
    {FM_OP_TAN, {0, 0, 0, 0, 0, 1}, {0, 1, 2, 0, 0, 0}, FM_KEEP_OUT, false},
    {FM_OP_FLOOR, {0, 0, 0, 0, 1, 0}, {0, 0, 0, 0, 0, 0}, FM_KEEP_NONE, true},
    {FM_OP_CEIL, {0, 0, 0, 0, 1, 0}, {0, 0, 0, 0, 0, 0}, FM_KEEP_NONE, true},
    {FM_OP_ROUND, {0, 0, 0, 0, 1, 0}, {0, 0, 0, 0, 0, 0}, FM_KEEP_NONE, true},
    {FM_OP_SIGN, {0, 0, 0, 0, 1, 0}, {0, 0, 0, 0, 0, 0}, FM_KEEP_NONE, true},
    {FM_OP_ASIN, {0, 0, 0, 0, 0, 1}, {0, 1, 1, 1, 0, 1}, FM_KEEP_IN, false},
    {FM_OP_ACOS, {0, 0, 0, 0, 0, 1}, {0, 1, 1, 1, 0, 1}, FM_KEEP_IN, false},
    {FM_OP_ATAN, {0, 0, 0, 0, 0, 1}, {0, 1, 1, 1, 0, 0}, FM_KEEP_IN, false},
    {FM_OP_SINH, {0, 0, 0, 0, 0, 1}, {0, 0, 1, 0, 0, 1}, FM_KEEP_IN, false},
    {FM_OP_COSH, {0, 0, 0, 0, 0, 1}, {0, 0, 1, 0, 0, 1}, FM_KEEP_IN, false},
    {FM_OP_ASINH, {0, 0, 0, 0, 0, 1}, {0, 1, 1, 1, 0, 1}, FM_KEEP_IN, false},
    {FM_OP_ACOSH, {0, 0, 0, 0, 0, 1}, {0, 1, 1, 1, 0, 1}, FM_KEEP_IN, false},
    {FM_OP_ATANH, {0, 0, 0, 0, 0, 1}, {0, 1, 1, 1, 0, 0}, FM_KEEP_IN, false},
};

static enum fm_status trig_shape(struct fm_shape_call *call)
{
    const struct fm_tensor *x = call->in[0];
    if (!fm_dtype_is_float(x->dtype) && call->node->op != FM_OP_SIGN)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): input '%s' is %s, not a float",
                        call->node->name, call->node->op_name, x->name, fm_dtype_name(x->dtype));
    call->out_shape[0] = x->shape;
    return FM_OK;
}

static enum fm_status trig_cost(struct fm_cost_call *call)
{
    return fm_cost_elementwise(call, rules, sizeof(rules) / sizeof(rules[0]));
}

#define TRIG                                                                                       \
    {                                                                                              \
        1, 1, 1, trig_shape, trig_cost                                                             \
    }
const struct fm_op_desc fm_op_sin_desc = TRIG;
const struct fm_op_desc fm_op_cos_desc = TRIG;
const struct fm_op_desc fm_op_tan_desc = TRIG;
const struct fm_op_desc fm_op_floor_desc = TRIG;
const struct fm_op_desc fm_op_ceil_desc = TRIG;
const struct fm_op_desc fm_op_round_desc = TRIG;
const struct fm_op_desc fm_op_sign_desc = TRIG;
const struct fm_op_desc fm_op_asin_desc = TRIG;
const struct fm_op_desc fm_op_acos_desc = TRIG;
const struct fm_op_desc fm_op_atan_desc = TRIG;
const struct fm_op_desc fm_op_sinh_desc = TRIG;
const struct fm_op_desc fm_op_cosh_desc = TRIG;
const struct fm_op_desc fm_op_asinh_desc = TRIG;
const struct fm_op_desc fm_op_acosh_desc = TRIG;
const struct fm_op_desc fm_op_atanh_desc = TRIG;
