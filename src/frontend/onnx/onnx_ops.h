/* The ONNX frontend's own list of ops: for every flopmeter op an ONNX op type maps to, that op
 * type, how a node of it is mapped and the role of each input slot. Keyed by the op
 * (FM_OP_<ID> of flopmeter.h's FM_OP_LIST), so a row naming an op that does not exist fails the
 * build (onnx_map.c checks every row at compile time, tests/test_api.c that no op is listed
 * twice). Ops no ONNX op type maps to (Linear, SiLU, Attention, the built-in losses ...) have
 * no row. It holds no graph or protobuf type: the tests read it without the frontend.
 *
 *   X(ID, "OnnxOp", map, "slots")
 *
 *   ID       the op, FM_OP_<ID>
 *   "OnnxOp" the ONNX op type that maps to it; "com.microsoft:Name" is ONNX Runtime's domain
 *            (onnx_build.c's ox_op_is)
 *   map      how a node is mapped (map_<map> in onnx_map.c)
 *   "slots"  the role of an initializer read by each input slot, one letter per slot:
 *            P parameter, B buffer (state, not trained), C constant operand (shapes, axes,
 *            indices, masks: no gradient flows), T passed on unchanged in kind (its readers'
 *            roles decide: a slice of a weight is still a weight), x by size (more than one
 *            element: a parameter); a final '*' repeats the last letter, missing letters are x
 *
 * The rows follow FM_OP_LIST's order: where two rows could match a node, the first wins. */
#ifndef FM_ONNX_OPS_H
#define FM_ONNX_OPS_H

#include "flopmeter.h"

#define OX_OP_LIST(X)                                                                           \
    X(CONV, "Conv", conv, "xPP*")                                                               \
    X(CONV_TRANSPOSE, "ConvTranspose", conv, "xPP*")                                            \
    X(GEMM, "Gemm", gemm, "xPP*")                                                               \
    X(MATMUL, "MatMul", plain, "PP*")                                                           \
    X(BATCHNORM, "BatchNormalization", norm, "xPPBB*")                                          \
    X(LAYERNORM, "LayerNormalization", norm, "xPP*")                                            \
    X(GROUPNORM, "GroupNormalization", norm, "xPP*")                                            \
    X(INSTANCENORM, "InstanceNormalization", norm, "xPP*")                                      \
    X(LP_NORM, "LpNormalization", attrs, "")                                                    \
    X(MVN, "MeanVarianceNormalization", attrs, "")                                              \
    X(LRN, "LRN", attrs, "")                                                                    \
    X(RELU, "Relu", act, "")                                                                    \
    X(CLIP, "Clip", act, "xCC*")                                                                \
    X(LEAKY_RELU, "LeakyRelu", act, "")                                                         \
    X(PRELU, "PRelu", plain, "xP")                                                              \
    X(SIGMOID, "Sigmoid", act, "")                                                              \
    X(TANH, "Tanh", act, "")                                                                    \
    X(GELU, "Gelu", act, "")                                                                    \
    X(HARDSWISH, "HardSwish", act, "")                                                          \
    X(HARDSIGMOID, "HardSigmoid", act, "")                                                      \
    X(SOFTMAX, "Softmax", softmax, "")                                                          \
    X(LOG_SOFTMAX, "LogSoftmax", softmax, "")                                                   \
    X(ELU, "Elu", act, "")                                                                      \
    X(SELU, "Selu", act, "")                                                                    \
    X(CELU, "Celu", act, "")                                                                    \
    X(SOFTPLUS, "Softplus", act, "")                                                            \
    X(SOFTSIGN, "Softsign", act, "")                                                            \
    X(MISH, "Mish", act, "")                                                                    \
    X(THRESHOLDED_RELU, "ThresholdedRelu", act, "")                                             \
    X(SHRINK, "Shrink", act, "")                                                                \
    X(HARDMAX, "Hardmax", softmax, "")                                                          \
    X(MAXPOOL, "MaxPool", pool, "")                                                             \
    X(AVGPOOL, "AveragePool", pool, "")                                                         \
    X(GLOBAL_AVGPOOL, "GlobalAveragePool", plain, "")                                           \
    X(GLOBAL_MAXPOOL, "GlobalMaxPool", plain, "")                                               \
    X(LPPOOL, "LpPool", pool, "")                                                               \
    X(GLOBAL_LPPOOL, "GlobalLpPool", attrs, "")                                                 \
    X(ADD, "Add", plain, "")                                                                    \
    X(SUB, "Sub", plain, "")                                                                    \
    X(MUL, "Mul", plain, "")                                                                    \
    X(DIV, "Div", plain, "")                                                                    \
    X(MOD, "Mod", attrs, "xC*")                                                                 \
    X(SUM, "Sum", variadic, "")                                                                 \
    X(MEAN, "Mean", variadic, "")                                                               \
    X(CONCAT, "Concat", concat, "T*")                                                           \
    X(FLATTEN, "Flatten", axis, "T")                                                            \
    X(RESHAPE, "Reshape", reshape, "TC*")                                                       \
    X(TRANSPOSE, "Transpose", transpose, "T")                                                   \
    X(SPLIT, "Split", split, "TC*")                                                             \
    X(IDENTITY, "Identity", identity, "T")                                                      \
    X(DROPOUT, "Dropout", dropout, "xCC*")                                                      \
    X(ERF, "Erf", plain, "")                                                                    \
    X(SQRT, "Sqrt", plain, "")                                                                  \
    X(RECIPROCAL, "Reciprocal", plain, "")                                                      \
    X(NEG, "Neg", plain, "")                                                                    \
    X(EXP, "Exp", plain, "")                                                                    \
    X(LOG, "Log", plain, "")                                                                    \
    X(ABS, "Abs", plain, "")                                                                    \
    X(POW, "Pow", plain, "xC*")                                                                 \
    X(EQUAL, "Equal", plain, "C*")                                                              \
    X(LESS, "Less", plain, "C*")                                                                \
    X(LESS_EQUAL, "LessOrEqual", plain, "C*")                                                   \
    X(GREATER, "Greater", plain, "C*")                                                          \
    X(GREATER_EQUAL, "GreaterOrEqual", plain, "C*")                                             \
    X(AND, "And", plain, "C*")                                                                  \
    X(OR, "Or", plain, "C*")                                                                    \
    X(XOR, "Xor", plain, "C*")                                                                  \
    X(NOT, "Not", plain, "C*")                                                                  \
    X(WHERE, "Where", plain, "C")                                                               \
    X(MAX, "Max", variadic, "")                                                                 \
    X(MIN, "Min", variadic, "")                                                                 \
    X(TRILU, "Trilu", int_operand, "xC*")                                                       \
    X(ISINF, "IsInf", plain, "C*")                                                              \
    X(ISNAN, "IsNaN", plain, "C*")                                                              \
    X(BITSHIFT, "BitShift", attrs, "C*")                                                        \
    X(REDUCE_SUM, "ReduceSum", reduce, "xC*")                                                   \
    X(REDUCE_MEAN, "ReduceMean", reduce, "xC*")                                                 \
    X(REDUCE_MAX, "ReduceMax", reduce, "xC*")                                                   \
    X(REDUCE_MIN, "ReduceMin", reduce, "xC*")                                                   \
    X(REDUCE_PROD, "ReduceProd", reduce, "xC*")                                                 \
    X(REDUCE_L2, "ReduceL2", reduce, "xC*")                                                     \
    X(REDUCE_SUM_SQUARE, "ReduceSumSquare", reduce, "xC*")                                      \
    X(REDUCE_L1, "ReduceL1", reduce, "xC*")                                                     \
    X(REDUCE_LOG_SUM, "ReduceLogSum", reduce, "xC*")                                            \
    X(REDUCE_LOG_SUM_EXP, "ReduceLogSumExp", reduce, "xC*")                                     \
    X(CUMSUM, "CumSum", int_operand, "xC*")                                                     \
    X(GATHER, "Gather", gather, "PC*")                                                          \
    X(SLICE, "Slice", slice, "TC*")                                                             \
    X(SQUEEZE, "Squeeze", squeeze, "TC*")                                                       \
    X(UNSQUEEZE, "Unsqueeze", squeeze, "TC*")                                                   \
    X(EXPAND, "Expand", int_operand, "TC*")                                                     \
    X(TILE, "Tile", int_operand, "TC*")                                                         \
    X(PAD, "Pad", pad, "xC*")                                                                   \
    X(RESIZE, "Resize", resize, "xC*")                                                          \
    X(CONSTANT_OF_SHAPE, "ConstantOfShape", int_operand, "C*")                                  \
    X(RANGE, "Range", range, "C*")                                                              \
    X(CAST, "Cast", cast, "T")                                                                  \
    X(EINSUM, "Einsum", einsum, "P*")                                                           \
    X(SIN, "Sin", plain, "")                                                                    \
    X(COS, "Cos", plain, "")                                                                    \
    X(TAN, "Tan", plain, "")                                                                    \
    X(FLOOR, "Floor", plain, "")                                                                \
    X(CEIL, "Ceil", plain, "")                                                                  \
    X(ROUND, "Round", plain, "")                                                                \
    X(SIGN, "Sign", plain, "")                                                                  \
    X(ASIN, "Asin", plain, "")                                                                  \
    X(ACOS, "Acos", plain, "")                                                                  \
    X(ATAN, "Atan", plain, "")                                                                  \
    X(SINH, "Sinh", plain, "")                                                                  \
    X(COSH, "Cosh", plain, "")                                                                  \
    X(ASINH, "Asinh", plain, "")                                                                \
    X(ACOSH, "Acosh", plain, "")                                                                \
    X(ATANH, "Atanh", plain, "")                                                                \
    X(DET, "Det", plain, "")                                                                    \
    X(LSTM, "LSTM", rnn, "xPPPCBBP")                                                            \
    X(GRU, "GRU", rnn, "xPPPCBB")                                                               \
    X(RNN, "RNN", rnn, "xPPPCBB")                                                               \
    X(QUANTIZE_LINEAR, "QuantizeLinear", quant, "xCC")                                          \
    X(DEQUANTIZE_LINEAR, "DequantizeLinear", quant, "xCC")                                      \
    X(DYNAMIC_QUANTIZE_LINEAR, "DynamicQuantizeLinear", msft, "x")                              \
    X(MATMUL_INTEGER, "MatMulInteger", plain, "xxCC")                                           \
    X(CONV_INTEGER, "ConvInteger", qconv, "xxCC")                                               \
    X(QLINEAR_MATMUL, "QLinearMatMul", plain, "xCCxCCCC")                                       \
    X(QLINEAR_CONV, "QLinearConv", qconv, "xCCxCCCCC")                                          \
    X(MATMUL_INTEGER_TO_FLOAT, "com.microsoft:MatMulIntegerToFloat", plain, "xxCCCCC")          \
    X(DYNAMIC_QUANTIZE_MATMUL, "com.microsoft:DynamicQuantizeMatMul", plain, "xxCCC")           \
    X(QGEMM, "com.microsoft:QGemm", msft, "xCCxCCCCC")                                          \
    X(DYNAMIC_QUANTIZE_LSTM, "com.microsoft:DynamicQuantizeLSTM", rnn, "xxxCCCCC*")             \
    X(FUSED_MATMUL, "com.microsoft:FusedMatMul", msft, "PP")                                    \
    X(FAST_GELU, "com.microsoft:FastGelu", msft, "xP")                                          \
    X(BIAS_GELU, "com.microsoft:BiasGelu", msft, "xP")                                          \
    X(QUICK_GELU, "com.microsoft:QuickGelu", msft, "x")                                         \
    X(BIAS_ADD, "com.microsoft:BiasAdd", msft, "xPx")                                           \
    X(SKIP_LAYERNORM, "com.microsoft:SkipLayerNormalization", msft, "xxPPP")                    \
    X(SKIP_SIMPLIFIED_LAYERNORM, "com.microsoft:SkipSimplifiedLayerNormalization",              \
      msft, "xxPP")                                                                             \
    X(SIMPLIFIED_LAYERNORM, "SimplifiedLayerNormalization", msft, "xP")                         \
    X(EMBED_LAYERNORM, "com.microsoft:EmbedLayerNormalization", msft, "CCPPPPPCC")              \
    X(MS_ATTENTION, "com.microsoft:Attention", msft, "xPPC*")                                   \
    X(MULTIHEAD_ATTENTION, "com.microsoft:MultiHeadAttention", msft, "xxxPC*")                  \
    X(ROTARY_EMBEDDING, "com.microsoft:RotaryEmbedding", msft, "xCCC")                          \
    X(GROUP_QUERY_ATTENTION, "com.microsoft:GroupQueryAttention", msft, "xxxxxCCCC")            \
    X(GATHER_ELEMENTS, "GatherElements", index, "xC*")                                          \
    X(GATHER_ND, "GatherND", index, "xC*")                                                      \
    X(SCATTER_ELEMENTS, "ScatterElements", index, "xCx")                                        \
    X(SCATTER_ND, "ScatterND", index, "xCx")                                                    \
    X(SOFTMAX_CE_LOSS, "SoftmaxCrossEntropyLoss", onnx_loss, "xCC")                             \
    X(NLL_LOSS, "NegativeLogLikelihoodLoss", onnx_loss, "xCC")                                  \
    X(ARGMAX, "ArgMax", select, "C")                                                            \
    X(ARGMIN, "ArgMin", select, "C")                                                            \
    X(TOPK, "TopK", select, "xC")                                                               \
    X(ONEHOT, "OneHot", select, "CCC")                                                          \
    X(COMPRESS, "Compress", select, "xC")                                                       \
    X(NONZERO, "NonZero", select, "C")                                                          \
    X(DEPTH_TO_SPACE, "DepthToSpace", layout, "T")                                              \
    X(SPACE_TO_DEPTH, "SpaceToDepth", layout, "T")                                              \
    X(REVERSE_SEQUENCE, "ReverseSequence", layout, "TC")                                        \
    X(MAX_UNPOOL, "MaxUnpool", layout, "xCC")                                                   \
    X(EYELIKE, "EyeLike", layout, "C")                                                          \
    X(RANDOM_UNIFORM, "RandomUniform", random, "")                                              \
    X(RANDOM_NORMAL, "RandomNormal", random, "")                                                \
    X(RANDOM_UNIFORM_LIKE, "RandomUniformLike", random, "C")                                    \
    X(RANDOM_NORMAL_LIKE, "RandomNormalLike", random, "C")                                      \
    X(BERNOULLI, "Bernoulli", random, "C")                                                      \
    X(MULTINOMIAL, "Multinomial", random, "C")

#endif
