/* The op table: enum fm_op -> descriptor. Adding an op adds one line here (the static assertion
 * below fails until the table and the enum agree). */
#include "ops.h"

static const struct fm_op_desc *const table[] = {
    [FM_OP_UNKNOWN] = &fm_op_unknown_desc,
    [FM_OP_CONV] = &fm_op_conv_desc,
    [FM_OP_CONV_TRANSPOSE] = &fm_op_conv_transpose_desc,
    [FM_OP_LINEAR] = &fm_op_linear_desc,
    [FM_OP_GEMM] = &fm_op_gemm_desc,
    [FM_OP_MATMUL] = &fm_op_matmul_desc,
    [FM_OP_BATCHNORM] = &fm_op_batchnorm_desc,
    [FM_OP_LAYERNORM] = &fm_op_layernorm_desc,
    [FM_OP_GROUPNORM] = &fm_op_groupnorm_desc,
    [FM_OP_INSTANCENORM] = &fm_op_instancenorm_desc,
    [FM_OP_RELU] = &fm_op_relu_desc,
    [FM_OP_CLIP] = &fm_op_clip_desc,
    [FM_OP_LEAKY_RELU] = &fm_op_leaky_relu_desc,
    [FM_OP_PRELU] = &fm_op_prelu_desc,
    [FM_OP_SIGMOID] = &fm_op_sigmoid_desc,
    [FM_OP_TANH] = &fm_op_tanh_desc,
    [FM_OP_SILU] = &fm_op_silu_desc,
    [FM_OP_GELU] = &fm_op_gelu_desc,
    [FM_OP_HARDSWISH] = &fm_op_hardswish_desc,
    [FM_OP_HARDSIGMOID] = &fm_op_hardsigmoid_desc,
    [FM_OP_SOFTMAX] = &fm_op_softmax_desc,
    [FM_OP_LOG_SOFTMAX] = &fm_op_log_softmax_desc,
    [FM_OP_MAXPOOL] = &fm_op_maxpool_desc,
    [FM_OP_AVGPOOL] = &fm_op_avgpool_desc,
    [FM_OP_ADAPTIVE_AVGPOOL] = &fm_op_adaptive_avgpool_desc,
    [FM_OP_GLOBAL_AVGPOOL] = &fm_op_global_avgpool_desc,
    [FM_OP_GLOBAL_MAXPOOL] = &fm_op_global_maxpool_desc,
    [FM_OP_ADD] = &fm_op_add_desc,
    [FM_OP_SUB] = &fm_op_sub_desc,
    [FM_OP_MUL] = &fm_op_mul_desc,
    [FM_OP_DIV] = &fm_op_div_desc,
    [FM_OP_CONCAT] = &fm_op_concat_desc,
    [FM_OP_FLATTEN] = &fm_op_flatten_desc,
    [FM_OP_RESHAPE] = &fm_op_reshape_desc,
    [FM_OP_TRANSPOSE] = &fm_op_transpose_desc,
    [FM_OP_SPLIT] = &fm_op_split_desc,
    [FM_OP_IDENTITY] = &fm_op_identity_desc,
    [FM_OP_DROPOUT] = &fm_op_dropout_desc,
    [FM_OP_EMBEDDING] = &fm_op_embedding_desc,
    [FM_OP_ATTENTION] = &fm_op_attention_desc,
    [FM_OP_CROSS_ENTROPY] = &fm_op_cross_entropy_desc,
    /* ONNX-only ops: below this line */
};
_Static_assert(sizeof(table) / sizeof(table[0]) == FM_OP_COUNT,
               "every enum fm_op needs a descriptor in the op table");

const struct fm_op_desc *fm_op_desc(enum fm_op op)
{
    if ((unsigned)op >= FM_OP_COUNT || !table[op])
        return &fm_op_unknown_desc;
    return table[op];
}

const char *fm_op_name(enum fm_op op)
{
    return fm_op_desc(op)->name;
}

enum fm_class fm_op_class(enum fm_op op)
{
    return fm_op_desc(op)->cls;
}
