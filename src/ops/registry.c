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
    [FM_OP_ERF] = &fm_op_erf_desc,
    [FM_OP_SQRT] = &fm_op_sqrt_desc,
    [FM_OP_RECIPROCAL] = &fm_op_reciprocal_desc,
    [FM_OP_NEG] = &fm_op_neg_desc,
    [FM_OP_EXP] = &fm_op_exp_desc,
    [FM_OP_LOG] = &fm_op_log_desc,
    [FM_OP_ABS] = &fm_op_abs_desc,
    [FM_OP_POW] = &fm_op_pow_desc,
    [FM_OP_EQUAL] = &fm_op_equal_desc,
    [FM_OP_LESS] = &fm_op_less_desc,
    [FM_OP_LESS_EQUAL] = &fm_op_less_equal_desc,
    [FM_OP_GREATER] = &fm_op_greater_desc,
    [FM_OP_GREATER_EQUAL] = &fm_op_greater_equal_desc,
    [FM_OP_AND] = &fm_op_and_desc,
    [FM_OP_OR] = &fm_op_or_desc,
    [FM_OP_XOR] = &fm_op_xor_desc,
    [FM_OP_NOT] = &fm_op_not_desc,
    [FM_OP_WHERE] = &fm_op_where_desc,
    [FM_OP_MAX] = &fm_op_max_desc,
    [FM_OP_MIN] = &fm_op_min_desc,
    [FM_OP_TRILU] = &fm_op_trilu_desc,
    [FM_OP_REDUCE_SUM] = &fm_op_reduce_sum_desc,
    [FM_OP_REDUCE_MEAN] = &fm_op_reduce_mean_desc,
    [FM_OP_REDUCE_MAX] = &fm_op_reduce_max_desc,
    [FM_OP_REDUCE_MIN] = &fm_op_reduce_min_desc,
    [FM_OP_REDUCE_PROD] = &fm_op_reduce_prod_desc,
    [FM_OP_REDUCE_L2] = &fm_op_reduce_l2_desc,
    [FM_OP_REDUCE_SUM_SQUARE] = &fm_op_reduce_sum_square_desc,
    [FM_OP_CUMSUM] = &fm_op_cumsum_desc,
    [FM_OP_GATHER] = &fm_op_gather_desc,
    [FM_OP_SLICE] = &fm_op_slice_desc,
    [FM_OP_SQUEEZE] = &fm_op_squeeze_desc,
    [FM_OP_UNSQUEEZE] = &fm_op_unsqueeze_desc,
    [FM_OP_EXPAND] = &fm_op_expand_desc,
    [FM_OP_TILE] = &fm_op_tile_desc,
    [FM_OP_PAD] = &fm_op_pad_desc,
    [FM_OP_RESIZE] = &fm_op_resize_desc,
    [FM_OP_CONSTANT_OF_SHAPE] = &fm_op_constant_of_shape_desc,
    [FM_OP_RANGE] = &fm_op_range_desc,
    [FM_OP_CAST] = &fm_op_cast_desc,
    [FM_OP_EINSUM] = &fm_op_einsum_desc,
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
