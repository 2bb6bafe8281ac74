/* flopmeter: count, bound and measure the compute of neural-network training and inference.
 *
 * The library's only public header: the context, the graph and its ops, counts, models, devices,
 * prediction and calibration, measurement, the session that resolves them all for a task, and
 * the renderers. No vendor header: CUDA, cuDNN and oneDNN stay inside their backends. What is
 * stable, who owns what, threads and every function in one line: docs/api.md.
 *
 * Conventions: a function that can fail returns enum fm_status and leaves a message on the
 * context (fm_ctx_error); OUT parameters are written only on success. A heap object has a
 * matching fm_x_free(x) that accepts NULL; options structs are set with fm_x_opts_init. Counts
 * are exact uint64_t: a sum or product that would overflow is FM_ERR_OVERFLOW. */
#ifndef FLOPMETER_H
#define FLOPMETER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* This header's version; CMake reads it from here, and the soname follows it (docs/api.md). */
#define FM_VERSION_MAJOR 0
#define FM_VERSION_MINOR 1
#define FM_VERSION_PATCH 0
#define FM_VERSION "0.1.0"

/* What the shared library exports: this header's declarations, nothing else (check_exports.sh). */
#if defined(__GNUC__)
#define FM_API __attribute__((visibility("default")))
#else
#define FM_API
#endif

/* ==== Status and context ==== */
enum fm_status {
    FM_OK = 0,
    FM_ERR_NOMEM,       /* an allocation failed */
    FM_ERR_INVALID,     /* a bad argument or option value */
    FM_ERR_GRAPH,       /* a malformed graph: unknown tensor, cycle, duplicate name */
    FM_ERR_SHAPE,       /* shapes that do not fit the op, or a spatial size reaching zero */
    FM_ERR_OVERFLOW,    /* a count or size that does not fit in 64 bits */
    FM_ERR_UNSUPPORTED, /* an op or feature this build or backend cannot handle */
    FM_ERR_NOT_FOUND,   /* an unknown model, device or name */
    FM_ERR_IO,          /* a file could not be read or written */
    FM_ERR_PARSE,       /* a file's contents are malformed */
    FM_ERR_BACKEND,     /* a vendor library call failed */
    FM_ERR_DEVICE,      /* no usable device, or the device ran out of memory */
    FM_STATUS_COUNT
};

FM_API const char *fm_status_to_string(enum fm_status status);
/* The version of the library linked in, which may differ from the header's FM_VERSION. */
FM_API const char *fm_version(void);

/* Every allocation the library makes goes through these (realloc(ptr, 0) never; free(NULL) may). */
struct fm_allocator {
    void *(*malloc_fn)(size_t size, void *user);
    void *(*realloc_fn)(void *ptr, size_t size, void *user);
    void (*free_fn)(void *ptr, void *user);
    void *user;
};

struct fm_ctx;

/* alloc (copied) may be NULL: the C library's. On failure *out is NULL (FM_ERR_NOMEM). */
FM_API enum fm_status fm_ctx_new(const struct fm_allocator *alloc, struct fm_ctx **out);
FM_API void fm_ctx_free(struct fm_ctx *ctx);

/* The message of the last failure ("" if none), valid until the next failure on ctx. */
FM_API const char *fm_ctx_error(const struct fm_ctx *ctx);

/* Records a failure's message on the context and returns status. */
FM_API enum fm_status fm_error(struct fm_ctx *ctx, enum fm_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Optional sink for progress and warnings (default: none). */
typedef void (*fm_log_fn)(void *user, const char *message);
FM_API void fm_ctx_set_log(struct fm_ctx *ctx, fm_log_fn fn, void *user);

/* Allocation through the context's allocator. fm_alloc zeroes the block. */
FM_API void *fm_alloc(struct fm_ctx *ctx, size_t size);
FM_API void fm_dealloc(struct fm_ctx *ctx, void *ptr);

/* ==== Data types and shapes ==== */
enum fm_dtype {
    FM_DTYPE_FP32 = 0, FM_DTYPE_FP16, FM_DTYPE_BF16, FM_DTYPE_FP64, FM_DTYPE_FP8, FM_DTYPE_INT64,
    FM_DTYPE_INT32, FM_DTYPE_INT16, FM_DTYPE_INT8, FM_DTYPE_UINT8, FM_DTYPE_BOOL, FM_DTYPE_COUNT
};

FM_API size_t fm_dtype_size(enum fm_dtype dtype);   /* bytes per element */
FM_API const char *fm_dtype_name(enum fm_dtype dtype);   /* "fp32", "int64", ... */
FM_API bool fm_dtype_is_float(enum fm_dtype dtype);
/* Parses "fp32", "float32", "fp16", "half", "bf16", ...; false if unknown. */
FM_API bool fm_dtype_parse(const char *s, enum fm_dtype *out);

#define FM_MAX_DIMS 8

struct fm_shape {
    int rank;                    /* 0 for a scalar */
    int64_t dims[FM_MAX_DIMS];
};

/* Number of elements; FM_ERR_OVERFLOW if it does not fit, FM_ERR_SHAPE on a negative dim. */
FM_API enum fm_status fm_shape_numel(const struct fm_shape *shape, uint64_t *out);
/* "64x3x224x224" ("scalar" for rank 0) into buf; returns buf. */
FM_API char *fm_shape_format(const struct fm_shape *shape, char *buf, size_t size);
/* Parses "3x224x224" (also "3,224,224"); rejects dims <= 0 and more than FM_MAX_DIMS dims. */
FM_API enum fm_status fm_shape_parse(struct fm_ctx *ctx, const char *text, struct fm_shape *out);

/* ==== Graph: tensors and nodes, addressed by dense integer ids, owned by the graph ==== */
enum fm_role {
    FM_ROLE_INPUT = 0,   /* fed from outside (images, token ids, labels) */
    FM_ROLE_PARAM,       /* a trainable (or frozen) weight: counted in parameters */
    FM_ROLE_BUFFER,      /* state that is not a parameter: BatchNorm running mean and variance */
    FM_ROLE_ACTIVATION,  /* produced by a node */
    FM_ROLE_CONST,       /* a constant (shape vectors, scalars) */
    FM_ROLE_COUNT
};
FM_API const char *fm_role_name(enum fm_role role);

/* Op families, used by analyses and reports to aggregate. */
enum fm_class {
    FM_CLASS_CONV = 0, FM_CLASS_MATMUL, FM_CLASS_NORM, FM_CLASS_ACTIVATION, FM_CLASS_POOL,
    FM_CLASS_ELEMENTWISE, FM_CLASS_REDUCTION, FM_CLASS_DATA_MOVEMENT, FM_CLASS_EMBEDDING,
    FM_CLASS_ATTENTION, FM_CLASS_LOSS, FM_CLASS_OTHER, FM_CLASS_COUNT
};
FM_API const char *fm_class_name(enum fm_class cls);

/* Every op the cost model knows, one row each, from which the enum fm_op, the op names and
 * classes and the op registry (src/ops/registry.c) are generated: X(ID, desc, "Name", CLASS),
 * FM_OP_<ID>, its descriptor fm_op_<desc>_desc (shape and cost rules) in the family file under
 * src/ops/ the first row of its group names, the display name, and FM_CLASS_<CLASS> (how
 * analyses aggregate, which ceiling applies). Operands and attributes: docs/ops.md; ONNX op
 * types: src/frontend/onnx/onnx_ops.h; the recipe: docs/adding-an-op.md. */
#define FM_OP_LIST(X)                                                                           \
    X(UNKNOWN, unknown, "Unknown", OTHER) /* common.c */                                        \
    X(CONV, conv, "Conv", CONV) /* conv.c */                                                    \
    X(CONV_TRANSPOSE, conv_transpose, "ConvTranspose", CONV)                                    \
    X(LINEAR, linear, "Linear", MATMUL) /* matmul.c */                                          \
    X(GEMM, gemm, "Gemm", MATMUL) X(MATMUL, matmul, "MatMul", MATMUL)                           \
    X(BATCHNORM, batchnorm, "BatchNorm", NORM) /* norm.c */                                     \
    X(LAYERNORM, layernorm, "LayerNorm", NORM) X(GROUPNORM, groupnorm, "GroupNorm", NORM)       \
    X(INSTANCENORM, instancenorm, "InstanceNorm", NORM)                                         \
    X(LP_NORM, lp_norm, "LpNorm", NORM) /* normalize.c */                                       \
    X(MVN, mvn, "MeanVarianceNorm", NORM) X(LRN, lrn, "LRN", NORM)                              \
    X(RELU, relu, "ReLU", ACTIVATION) /* act.c */                                               \
    X(CLIP, clip, "Clip", ACTIVATION) X(LEAKY_RELU, leaky_relu, "LeakyReLU", ACTIVATION)        \
    X(PRELU, prelu, "PRelu", ACTIVATION) X(SIGMOID, sigmoid, "Sigmoid", ACTIVATION)             \
    X(TANH, tanh, "Tanh", ACTIVATION) X(SILU, silu, "SiLU", ACTIVATION)                         \
    X(GELU, gelu, "GELU", ACTIVATION) X(HARDSWISH, hardswish, "Hardswish", ACTIVATION)          \
    X(HARDSIGMOID, hardsigmoid, "Hardsigmoid", ACTIVATION)                                      \
    X(SOFTMAX, softmax, "Softmax", ACTIVATION)                                                  \
    X(LOG_SOFTMAX, log_softmax, "LogSoftmax", ACTIVATION) X(ELU, elu, "ELU", ACTIVATION)        \
    X(SELU, selu, "SELU", ACTIVATION) X(CELU, celu, "CELU", ACTIVATION)                         \
    X(SOFTPLUS, softplus, "Softplus", ACTIVATION) X(SOFTSIGN, softsign, "Softsign", ACTIVATION) \
    X(MISH, mish, "Mish", ACTIVATION)                                                           \
    X(THRESHOLDED_RELU, thresholded_relu, "ThresholdedReLU", ACTIVATION)                        \
    X(SHRINK, shrink, "Shrink", ACTIVATION) X(HARDMAX, hardmax, "Hardmax", ACTIVATION)          \
    X(MAXPOOL, maxpool, "MaxPool", POOL) /* pool.c */                                           \
    X(AVGPOOL, avgpool, "AvgPool", POOL)                                                        \
    X(ADAPTIVE_AVGPOOL, adaptive_avgpool, "AdaptiveAvgPool", POOL)                              \
    X(GLOBAL_AVGPOOL, global_avgpool, "GlobalAvgPool", POOL)                                    \
    X(GLOBAL_MAXPOOL, global_maxpool, "GlobalMaxPool", POOL) X(LPPOOL, lppool, "LpPool", POOL)  \
    X(GLOBAL_LPPOOL, global_lppool, "GlobalLpPool", POOL)                                       \
    X(ADD, add, "Add", ELEMENTWISE) /* eltwise.c */                                             \
    X(SUB, sub, "Sub", ELEMENTWISE) X(MUL, mul, "Mul", ELEMENTWISE)                             \
    X(DIV, div, "Div", ELEMENTWISE) X(MOD, mod, "Mod", ELEMENTWISE)                             \
    X(SUM, sum, "Sum", ELEMENTWISE) X(MEAN, mean, "Mean", ELEMENTWISE)                          \
    X(CONCAT, concat, "Concat", DATA_MOVEMENT) /* shape.c */                                    \
    X(FLATTEN, flatten, "Flatten", DATA_MOVEMENT) X(RESHAPE, reshape, "Reshape", DATA_MOVEMENT) \
    X(TRANSPOSE, transpose, "Transpose", DATA_MOVEMENT) X(SPLIT, split, "Split", DATA_MOVEMENT) \
    X(IDENTITY, identity, "Identity", DATA_MOVEMENT)                                            \
    X(DROPOUT, dropout, "Dropout", ELEMENTWISE) /* dropout.c */                                 \
    X(EMBEDDING, embedding, "Embedding", EMBEDDING) /* embedding.c */                           \
    X(ATTENTION, attention, "Attention", ATTENTION) /* attention.c */                           \
    X(CROSS_ENTROPY, cross_entropy, "CrossEntropy", LOSS) /* loss.c */                          \
    X(MSE_LOSS, mse_loss, "MSELoss", LOSS)                                                      \
    X(ERF, erf, "Erf", ELEMENTWISE) /* unary.c */                                               \
    X(SQRT, sqrt, "Sqrt", ELEMENTWISE) X(RECIPROCAL, reciprocal, "Reciprocal", ELEMENTWISE)     \
    X(NEG, neg, "Neg", ELEMENTWISE) X(EXP, exp, "Exp", ELEMENTWISE)                             \
    X(LOG, log, "Log", ELEMENTWISE) X(ABS, abs, "Abs", ELEMENTWISE)                             \
    X(POW, pow, "Pow", ELEMENTWISE)                                                             \
    X(EQUAL, equal, "Equal", ELEMENTWISE) /* compare.c */                                       \
    X(LESS, less, "Less", ELEMENTWISE) X(LESS_EQUAL, less_equal, "LessOrEqual", ELEMENTWISE)    \
    X(GREATER, greater, "Greater", ELEMENTWISE)                                                 \
    X(GREATER_EQUAL, greater_equal, "GreaterOrEqual", ELEMENTWISE)                              \
    X(AND, logical_and, "And", ELEMENTWISE) X(OR, logical_or, "Or", ELEMENTWISE)                \
    X(XOR, logical_xor, "Xor", ELEMENTWISE) X(NOT, logical_not, "Not", ELEMENTWISE)             \
    X(WHERE, where, "Where", ELEMENTWISE) X(MAX, max, "Max", ELEMENTWISE)                       \
    X(MIN, min, "Min", ELEMENTWISE) X(TRILU, trilu, "Trilu", ELEMENTWISE)                       \
    X(ISINF, isinf, "IsInf", ELEMENTWISE) X(ISNAN, isnan, "IsNaN", ELEMENTWISE)                 \
    X(BITSHIFT, bitshift, "BitShift", ELEMENTWISE)                                              \
    X(REDUCE_SUM, reduce_sum, "ReduceSum", REDUCTION) /* reduce.c */                            \
    X(REDUCE_MEAN, reduce_mean, "ReduceMean", REDUCTION)                                        \
    X(REDUCE_MAX, reduce_max, "ReduceMax", REDUCTION)                                           \
    X(REDUCE_MIN, reduce_min, "ReduceMin", REDUCTION)                                           \
    X(REDUCE_PROD, reduce_prod, "ReduceProd", REDUCTION)                                        \
    X(REDUCE_L2, reduce_l2, "ReduceL2", REDUCTION)                                              \
    X(REDUCE_SUM_SQUARE, reduce_sum_square, "ReduceSumSquare", REDUCTION)                       \
    X(REDUCE_L1, reduce_l1, "ReduceL1", REDUCTION)                                              \
    X(REDUCE_LOG_SUM, reduce_log_sum, "ReduceLogSum", REDUCTION)                                \
    X(REDUCE_LOG_SUM_EXP, reduce_log_sum_exp, "ReduceLogSumExp", REDUCTION)                     \
    X(CUMSUM, cumsum, "CumSum", REDUCTION)                                                      \
    X(GATHER, gather, "Gather", DATA_MOVEMENT) /* tensor.c */                                   \
    X(SLICE, slice, "Slice", DATA_MOVEMENT) X(SQUEEZE, squeeze, "Squeeze", DATA_MOVEMENT)       \
    X(UNSQUEEZE, unsqueeze, "Unsqueeze", DATA_MOVEMENT)                                         \
    X(EXPAND, expand, "Expand", DATA_MOVEMENT) X(TILE, tile, "Tile", DATA_MOVEMENT)             \
    X(PAD, pad, "Pad", DATA_MOVEMENT) X(RESIZE, resize, "Resize", DATA_MOVEMENT)                \
    X(CONSTANT_OF_SHAPE, constant_of_shape, "ConstantOfShape", DATA_MOVEMENT)                   \
    X(RANGE, range, "Range", DATA_MOVEMENT) X(CAST, cast, "Cast", DATA_MOVEMENT)                \
    X(EINSUM, einsum, "Einsum", MATMUL) /* einsum.c */                                          \
    X(SIN, sin, "Sin", ELEMENTWISE) /* trig.c */                                                \
    X(COS, cos, "Cos", ELEMENTWISE) X(TAN, tan, "Tan", ELEMENTWISE)                             \
    X(FLOOR, floor, "Floor", ELEMENTWISE) X(CEIL, ceil, "Ceil", ELEMENTWISE)                    \
    X(ROUND, round, "Round", ELEMENTWISE) X(SIGN, sign, "Sign", ELEMENTWISE)                    \
    X(ASIN, asin, "Asin", ELEMENTWISE) X(ACOS, acos, "Acos", ELEMENTWISE)                       \
    X(ATAN, atan, "Atan", ELEMENTWISE) X(SINH, sinh, "Sinh", ELEMENTWISE)                       \
    X(COSH, cosh, "Cosh", ELEMENTWISE) X(ASINH, asinh, "Asinh", ELEMENTWISE)                    \
    X(ACOSH, acosh, "Acosh", ELEMENTWISE) X(ATANH, atanh, "Atanh", ELEMENTWISE)                 \
    X(DET, det, "Det", MATMUL) /* linalg.c */                                                   \
    X(LSTM, lstm, "LSTM", MATMUL) /* rnn.c */                                                   \
    X(GRU, gru, "GRU", MATMUL) X(RNN, rnn, "RNN", MATMUL)                                       \
    X(QUANTIZE_LINEAR, quantize_linear, "QuantizeLinear", ELEMENTWISE) /* quant.c */            \
    X(DEQUANTIZE_LINEAR, dequantize_linear, "DequantizeLinear", ELEMENTWISE)                    \
    X(DYNAMIC_QUANTIZE_LINEAR, dynamic_quantize_linear, "DynamicQuantizeLinear", ELEMENTWISE)   \
    X(MATMUL_INTEGER, matmul_integer, "MatMulInteger", MATMUL)                                  \
    X(CONV_INTEGER, conv_integer, "ConvInteger", CONV)                                          \
    X(QLINEAR_MATMUL, qlinear_matmul, "QLinearMatMul", MATMUL)                                  \
    X(QLINEAR_CONV, qlinear_conv, "QLinearConv", CONV)                                          \
    X(MATMUL_INTEGER_TO_FLOAT, matmul_integer_to_float, "MatMulIntegerToFloat", MATMUL)         \
    X(DYNAMIC_QUANTIZE_MATMUL, dynamic_quantize_matmul, "DynamicQuantizeMatMul", MATMUL)        \
    X(QGEMM, qgemm, "QGemm", MATMUL)                                                            \
    X(DYNAMIC_QUANTIZE_LSTM, dynamic_quantize_lstm, "DynamicQuantizeLSTM", OTHER)               \
    X(FUSED_MATMUL, fused_matmul, "FusedMatMul", MATMUL) /* msft.c */                           \
    X(FAST_GELU, fast_gelu, "FastGelu", ACTIVATION)                                             \
    X(BIAS_GELU, bias_gelu, "BiasGelu", ACTIVATION)                                             \
    X(QUICK_GELU, quick_gelu, "QuickGelu", ACTIVATION)                                          \
    X(BIAS_ADD, bias_add, "BiasAdd", ELEMENTWISE)                                               \
    X(SKIP_LAYERNORM, skip_layernorm, "SkipLayerNorm", NORM)                                    \
    X(SKIP_SIMPLIFIED_LAYERNORM, skip_simplified_layernorm, "SkipSimplifiedLayerNorm", NORM)    \
    X(SIMPLIFIED_LAYERNORM, simplified_layernorm, "SimplifiedLayerNorm", NORM)                  \
    X(EMBED_LAYERNORM, embed_layernorm, "EmbedLayerNorm", NORM)                                 \
    X(MS_ATTENTION, ms_attention, "FusedAttention", ATTENTION)                                  \
    X(MULTIHEAD_ATTENTION, multihead_attention, "MultiHeadAttention", ATTENTION)                \
    X(ROTARY_EMBEDDING, rotary_embedding, "RotaryEmbedding", ELEMENTWISE)                       \
    X(GROUP_QUERY_ATTENTION, group_query_attention, "GroupQueryAttention", ATTENTION)           \
    X(GATHER_ELEMENTS, gather_elements, "GatherElements", DATA_MOVEMENT) /* index.c */          \
    X(GATHER_ND, gather_nd, "GatherND", DATA_MOVEMENT)                                          \
    X(SCATTER_ELEMENTS, scatter_elements, "ScatterElements", DATA_MOVEMENT)                     \
    X(SCATTER_ND, scatter_nd, "ScatterND", DATA_MOVEMENT)                                       \
    X(SOFTMAX_CE_LOSS, softmax_ce_loss, "SoftmaxCrossEntropyLoss", LOSS) /* loss.c */           \
    X(NLL_LOSS, nll_loss, "NegativeLogLikelihoodLoss", LOSS)                                    \
    X(ARGMAX, argmax, "ArgMax", REDUCTION) /* select.c */                                       \
    X(ARGMIN, argmin, "ArgMin", REDUCTION) X(TOPK, topk, "TopK", REDUCTION)                     \
    X(ONEHOT, onehot, "OneHot", DATA_MOVEMENT) X(COMPRESS, compress, "Compress", DATA_MOVEMENT) \
    X(NONZERO, nonzero, "NonZero", DATA_MOVEMENT)                                               \
    X(DEPTH_TO_SPACE, depth_to_space, "DepthToSpace", DATA_MOVEMENT) /* layout.c */             \
    X(SPACE_TO_DEPTH, space_to_depth, "SpaceToDepth", DATA_MOVEMENT)                            \
    X(REVERSE_SEQUENCE, reverse_sequence, "ReverseSequence", DATA_MOVEMENT)                     \
    X(MAX_UNPOOL, max_unpool, "MaxUnpool", DATA_MOVEMENT)                                       \
    X(EYELIKE, eyelike, "EyeLike", DATA_MOVEMENT)                                               \
    X(RANDOM_UNIFORM, random_uniform, "RandomUniform", ELEMENTWISE) /* random.c */              \
    X(RANDOM_NORMAL, random_normal, "RandomNormal", ELEMENTWISE)                                \
    X(RANDOM_UNIFORM_LIKE, random_uniform_like, "RandomUniformLike", ELEMENTWISE)               \
    X(RANDOM_NORMAL_LIKE, random_normal_like, "RandomNormalLike", ELEMENTWISE)                  \
    X(BERNOULLI, bernoulli, "Bernoulli", ELEMENTWISE)                                           \
    X(MULTINOMIAL, multinomial, "Multinomial", OTHER)                                         \
    X(GROUPED_MATMUL, grouped_matmul, "GroupedMatMul", MATMUL) /* matmul.c */
#define FM_OP_ENUM_(ID, ...) FM_OP_##ID,
enum fm_op { FM_OP_LIST(FM_OP_ENUM_) FM_OP_COUNT };
#undef FM_OP_ENUM_

/* Flags in fm_attrs.flags. */
enum {
    FM_ATTR_CEIL_MODE = 1u << 0,   /* pooling: ceil instead of floor for the output size */
    FM_ATTR_COUNT_PAD = 1u << 1,   /* avg pooling: padding counts in the divisor */
    FM_ATTR_TRANS_A = 1u << 2,     /* gemm */
    FM_ATTR_TRANS_B = 1u << 3,     /* gemm */
    FM_ATTR_CAUSAL = 1u << 4,      /* attention: causal mask */
    FM_ATTR_KEEPDIMS = 1u << 5,    /* reductions */
    FM_ATTR_GELU_TANH = 1u << 6,   /* gelu: tanh approximation */
    FM_ATTR_INFER_BN = 1u << 7,    /* batchnorm: always inference semantics (frozen statistics) */
    FM_ATTR_INPLACE = 1u << 8      /* the framework runs this in place: no separate output buffer */
};

#define FM_MAX_INTS 32

/* Attributes of a node. One struct for all ops: each op reads the fields docs/ops.md names for
 * it and ignores the rest. fm_attrs_init() sets the neutral defaults. */
struct fm_attrs {
    int64_t kernel[2];          /* window (h, w); 1-D ops use index 1 with kernel[0] = 1 */
    int64_t stride[2];
    int64_t dilation[2];
    int64_t pad[4];             /* top, left, bottom, right */
    int64_t output_padding[2];  /* conv transpose */
    /* 3-D windows (N, C, D, H, W): the depth dim's kernel, stride, dilation, pads (front,
     * back) and output padding; H and W stay in the fields above. 1, 1, 1, 0, 0, 0 otherwise */
    int64_t kernel_d, stride_d, dilation_d, pad_d[2], output_padding_d;
    int64_t out_size[2];        /* adaptive pooling output (h, w) */
    int64_t groups;             /* conv groups; group norm groups; attention heads */
    int64_t axis;               /* softmax, concat, split, flatten, layernorm's first axis */
    int64_t ints[FM_MAX_INTS];  /* transpose perm, reshape target, split sizes */
    int nints;
    double alpha, beta;         /* gemm scales; leaky relu slope; hardsigmoid alpha/beta */
    double eps;                 /* norms */
    double lo, hi;              /* clip bounds */
    double ratio;               /* dropout probability */
    double scale;               /* attention scale (0 = 1/sqrt(D)) */
    double softcap;             /* attention: scores capped to c*tanh(s/c) (Gemma 2); 0 = none */
    unsigned flags;             /* FM_ATTR_* */
};
FM_API void fm_attrs_init(struct fm_attrs *attrs);

typedef int32_t fm_tid;   /* tensor id, index into the graph's tensors; FM_NONE = none */
typedef int32_t fm_nid;   /* node id */
#define FM_NONE (-1)

struct fm_tensor {
    const char *name;
    enum fm_dtype dtype;
    enum fm_role role;
    struct fm_shape shape;
    bool shape_known;        /* false until shape inference has run on its producer */
    bool trainable;          /* parameters only: whether it gets a gradient and an update */
    fm_nid producer;         /* FM_NONE for inputs, parameters, buffers, constants */
    const int64_t *ivalue;   /* small integer contents known at build time, or NULL */
    uint64_t nvalue;         /* number of elements in ivalue (or fvalue) */
    const double *fvalue;    /* small float contents known at build time, or NULL */
};

struct fm_node {
    const char *name;
    enum fm_op op;
    const char *op_name;     /* the op's display name; for FM_OP_UNKNOWN the source op type */
    struct fm_attrs attrs;
    int n_in, n_out;
    const fm_tid *in;        /* n_in tensor ids (FM_NONE for an omitted optional input) */
    const fm_tid *out;       /* n_out tensor ids */
};

struct fm_graph;

/* An empty graph; name is the model's name in reports. */
FM_API enum fm_status fm_graph_new(struct fm_ctx *ctx, const char *name, struct fm_graph **out);
FM_API void fm_graph_free(struct fm_graph *graph);

FM_API const char *fm_graph_name(const struct fm_graph *graph);
FM_API struct fm_ctx *fm_graph_ctx(const struct fm_graph *graph);
FM_API size_t fm_graph_tensor_count(const struct fm_graph *graph);
FM_API size_t fm_graph_node_count(const struct fm_graph *graph);
FM_API const struct fm_tensor *fm_graph_tensor(const struct fm_graph *graph, fm_tid id);
FM_API const struct fm_node *fm_graph_node(const struct fm_graph *graph, fm_nid id);
/* Looks a tensor up by name; FM_NONE if absent. */
FM_API fm_tid fm_graph_find_tensor(const struct fm_graph *graph, const char *name);

/* Adds an input, parameter, buffer or constant tensor. Names must be unique in the graph.
 * For a parameter, trainable says whether it gets a gradient. */
FM_API enum fm_status fm_graph_add_tensor(struct fm_graph *graph, const char *name,
                                          enum fm_role role, enum fm_dtype dtype,
                                          const struct fm_shape *shape, fm_tid *out);
/* Adds a tensor whose shape is not yet known (an input with symbolic dims, say). */
FM_API enum fm_status fm_graph_add_tensor_unshaped(struct fm_graph *graph, const char *name,
                                                   enum fm_role role, enum fm_dtype dtype,
                                                   fm_tid *out);
FM_API enum fm_status fm_graph_set_shape(struct fm_graph *graph, fm_tid id,
                                         const struct fm_shape *shape);
FM_API void fm_graph_set_trainable(struct fm_graph *graph, fm_tid id, bool trainable);
/* The batch a graph runs: the first dimension of its first float input (images), else of its
 * first input (token ids); 1 when it has none. */
FM_API int64_t fm_graph_batch(const struct fm_graph *graph);
/* Stores every float tensor in one of two types: parameters and buffers (so their gradients and
 * optimizer state) in parameters, the rest in activations (FM_DTYPE_COUNT: as it is). Autocast's
 * mixed precision is (fp16, fp32). Returns how many tensors changed type. */
FM_API size_t fm_graph_set_storage(struct fm_graph *graph, enum fm_dtype activations,
                                   enum fm_dtype parameters);
/* Integer or float contents known at build time (copied into the graph). */
FM_API enum fm_status fm_graph_set_ivalue(struct fm_graph *graph, fm_tid id, const int64_t *values,
                                          uint64_t n);
FM_API enum fm_status fm_graph_set_fvalue(struct fm_graph *graph, fm_tid id, const double *values,
                                          uint64_t n);

/* Adds a node of existing inputs and n_out new outputs (NULL names: "<node>:<i>"; outputs may be
 * NULL). With every input shape known the shape rule runs at once, else in fm_graph_finalize; a
 * shape the op rejects is FM_ERR_SHAPE naming the node. Operands and attrs: docs/ops.md. */
FM_API enum fm_status fm_graph_add_node(struct fm_graph *graph, enum fm_op op, const char *name,
                                        const struct fm_attrs *attrs, const fm_tid *inputs,
                                        int n_in, const char *const *output_names, int n_out,
                                        fm_tid *outputs);
/* The same, writing tensors made with fm_graph_add_tensor_unshaped: nodes in any order. */
FM_API enum fm_status fm_graph_add_node_bound(struct fm_graph *graph, enum fm_op op,
                                              const char *name, const struct fm_attrs *attrs,
                                              const fm_tid *inputs, int n_in, const fm_tid *outputs,
                                              int n_out, fm_nid *out);
/* For FM_OP_UNKNOWN: records the source op's type name (shown in reports as uncounted). */
FM_API enum fm_status fm_graph_set_op_name(struct fm_graph *graph, fm_nid node,
                                           const char *op_name);
/* Marks the graph's outputs (optional: by default, tensors no node consumes). */
FM_API enum fm_status fm_graph_mark_output(struct fm_graph *graph, fm_tid id);

/* Orders the nodes, infers every shape, checks the graph; needed before counting or running. */
FM_API enum fm_status fm_graph_finalize(struct fm_graph *graph);
/* Node ids in topological order (valid after finalize; fm_graph_node_count() entries). */
FM_API const fm_nid *fm_graph_topo_order(const struct fm_graph *graph);
/* Whether training needs the loss's gradient with respect to the tensor (after finalize). */
FM_API bool fm_graph_needs_grad(const struct fm_graph *graph, fm_tid id);

FM_API const char *fm_op_name(enum fm_op op);
FM_API enum fm_class fm_op_class(enum fm_op op);

/* ==== Cost model ==== */
/* Primitive operations are counted per node and per phase; FLOPs and MACs are derived only when
 * printing: FLOPs = 2*mac + add + mul + div + cmp + special, MACs = mac. */

enum fm_phase {
    FM_PHASE_FWD = 0,
    FM_PHASE_BWD_DATA,    /* gradient with respect to inputs that need one */
    FM_PHASE_BWD_WEIGHT,  /* gradient with respect to trainable parameters */
    FM_PHASE_OPTIMIZER,   /* the parameter update */
    FM_PHASE_COUNT
};
FM_API const char *fm_phase_name(enum fm_phase phase);   /* "fwd", "bwd_data", ... */

enum fm_prim {
    FM_PRIM_MAC = 0,   /* multiply-accumulate: 2 FLOPs */
    FM_PRIM_ADD,       /* add or subtract */
    FM_PRIM_MUL,
    FM_PRIM_DIV,
    FM_PRIM_CMP,       /* compare, max, min, select */
    FM_PRIM_SPECIAL,   /* exp, log, sqrt, rsqrt, tanh, erf, pow */
    FM_PRIM_COUNT
};
FM_API const char *fm_prim_name(enum fm_prim prim);

struct fm_work {
    uint64_t prim[FM_PRIM_COUNT];
    uint64_t bytes_read;
    uint64_t bytes_written;
};
/* FLOPs = 2*mac + the other kinds; MACs = mac (saturating; totals are checked). */
FM_API uint64_t fm_work_flops(const struct fm_work *work);
FM_API uint64_t fm_work_macs(const struct fm_work *work);

enum fm_mode { FM_MODE_TRAIN = 0, FM_MODE_INFER, FM_MODE_COUNT };
enum fm_optimizer { FM_OPTIM_SGD = 0, FM_OPTIM_ADAM, FM_OPTIM_NONE, FM_OPTIM_COUNT };
FM_API const char *fm_mode_name(enum fm_mode mode);
FM_API const char *fm_optimizer_name(enum fm_optimizer opt);   /* "sgd", "adam", "none" */
FM_API bool fm_optimizer_parse(const char *s, enum fm_optimizer *out);

struct fm_count_opts {
    enum fm_mode mode;            /* train: all phases; infer: forward only, BN frozen */
    enum fm_optimizer optimizer;  /* train only */
};
FM_API void fm_count_opts_init(struct fm_count_opts *opts);   /* train, SGD with momentum */

struct fm_node_cost {   /* the cost of one node */
    struct fm_work phase[FM_PHASE_COUNT];
    uint64_t params;             /* elements of parameter tensors this node owns */
    uint64_t trainable_params;
    uint64_t saved_bytes;        /* bytes this node keeps for its backward beyond shared tensors */
    bool counted;                /* false for FM_OP_UNKNOWN */
    bool int8;                   /* its MACs are integer products: the int8 ceiling applies */
    bool no_grad;                /* an inference kernel: no backward is defined or counted */
};

struct fm_uncounted {
    const char *op;              /* source op type */
    uint64_t nodes;
};

struct fm_counts {
    struct fm_ctx *ctx;                  /* the context it was made on: fm_counts_free uses it */
    enum fm_mode mode;
    enum fm_optimizer optimizer;
    size_t n_nodes;
    struct fm_node_cost *nodes;          /* indexed by node id */
    struct fm_work total[FM_PHASE_COUNT];
    struct fm_work by_class[FM_CLASS_COUNT][FM_PHASE_COUNT];
    bool class_present[FM_CLASS_COUNT];
    uint64_t params;                     /* parameter elements (each shared tensor once) */
    uint64_t trainable_params;
    uint64_t param_bytes;                /* in storage dtype */
    uint64_t buffer_bytes;               /* non-parameter state (BatchNorm running stats) */
    uint64_t grad_bytes;                 /* train: one gradient per trainable parameter */
    uint64_t optimizer_state_bytes;      /* momentum (SGD) or two moments (Adam) */
    uint64_t activation_bytes;           /* train: everything kept for backward; infer: peak
                                            live activations of a sequential execution */
    uint64_t input_bytes;
    size_t n_uncounted;
    struct fm_uncounted *uncounted;      /* one entry per distinct unknown op type */
};

/* Counts a finalized graph; a count that would overflow fails naming the node. */
FM_API enum fm_status fm_count(struct fm_ctx *ctx, const struct fm_graph *graph,
                               const struct fm_count_opts *opts, struct fm_counts **out);
FM_API void fm_counts_free(struct fm_counts *counts);

/* params + buffers + grads + optimizer state + activations + input (inference: the peak live
 * activations, no grads or state). */
FM_API enum fm_status fm_counts_training_memory(const struct fm_counts *counts, uint64_t *out);

/* ==== Built-in architectures (the torchvision definitions; docs/zoo.md) ==== */
struct fm_zoo_opts {
    int64_t batch;             /* default 1 */
    struct fm_shape input;     /* C x H x W; rank 0 = the model's default (3x224x224, 3x299x299) */
    int64_t classes;           /* default 1000 */
    enum fm_dtype dtype;       /* storage dtype of activations and parameters; default fp32 */
    bool with_loss;            /* append a cross-entropy loss against an int64 label input */
};
FM_API void fm_zoo_opts_init(struct fm_zoo_opts *opts);
struct fm_zoo_entry {
    const char *name;          /* "resnet50" */
    const char *family;        /* "resnet" */
    const char *description;
    int64_t default_hw;        /* 224 or 299 */
};
/* The built-in models, in display order. */
FM_API size_t fm_zoo_count(void);
FM_API const struct fm_zoo_entry *fm_zoo_get(size_t index);
FM_API const struct fm_zoo_entry *fm_zoo_find(const char *name);
/* Builds and finalizes a built-in model: an unknown name is FM_ERR_NOT_FOUND suggesting the
 * nearest names, an input too small FM_ERR_SHAPE naming the layer. */
FM_API enum fm_status fm_zoo_build(struct fm_ctx *ctx, const char *name,
                                   const struct fm_zoo_opts *opts, struct fm_graph **out);
/* Up to n names nearest to name by edit distance, best first; returns how many. */
FM_API size_t fm_zoo_suggest(const char *name, const char **out, size_t n);

/* ==== Model loading: a built-in name or an ONNX file (docs/onnx.md) ==== */
/* The shape of an input with symbolic dims (NAME=1x3x224x224). */
struct fm_input_binding {
    const char *name;
    struct fm_shape shape;
};
/* The contents of an ONNX graph input (a shape, sizes, axes, k, a scale), so that everything
 * computed from it is known at load time: ivalues (integer, bool, or numbers for a float
 * input) or fvalues, n of them; its shape is [n] unless the file or a binding gives it. */
struct fm_value_binding {
    const char *name;
    const int64_t *ivalues;
    const double *fvalues;
    size_t n;
};
struct fm_load_opts {
    struct fm_zoo_opts zoo;              /* batch, input, classes, dtype, with_loss */
    const struct fm_input_binding *bindings;
    size_t n_bindings;
    bool batch_given;                    /* zoo.batch binds a file's symbolic batch dims */
    bool dtype_given;                    /* a session stores every float tensor in zoo.dtype,
                                            an ONNX file's too, whatever the precision */
    const struct fm_value_binding *values;
    size_t n_values;
    const void *model_data;   /* an ONNX model in memory, read while loading; MODEL is then */
    size_t model_size;        /* only the graph's name. NULL: MODEL is a name or a file */
    /* Language models (docs/zoo.md): a HuggingFace config.json at config, or MODEL naming a
     * built-in config; zoo.batch sequences of seq tokens (0: 2048 or the model's maximum);
     * T5's target length decoder_seq (0: seq); decode: one new token per sequence against a
     * KV cache of seq tokens (inference; T5: the decoder alone, decoder_seq target tokens
     * cached and the K/V of seq source tokens) */
    const char *config;
    int64_t seq, decoder_seq;
    bool decode;
};
FM_API void fm_load_opts_init(struct fm_load_opts *opts);
/* Loads MODEL: with opts->model_data, the ONNX model in memory (MODEL names it); with
 * opts->config, the language model of that config.json; else a path ending in .onnx (or an
 * existing file) is read as ONNX, else a built-in (a language model's config or an
 * architecture) is built. */
FM_API enum fm_status fm_model_load(struct fm_ctx *ctx, const char *model,
                                    const struct fm_load_opts *opts, struct fm_graph **out);
/* The ONNX frontend (FM_ERR_UNSUPPORTED in a build without protobuf-c). */
FM_API enum fm_status fm_onnx_load_file(struct fm_ctx *ctx, const char *path,
                                        const struct fm_load_opts *opts, struct fm_graph **out);
FM_API enum fm_status fm_onnx_load_buffer(struct fm_ctx *ctx, const void *data, size_t size,
                                          const char *name, const struct fm_load_opts *opts,
                                          struct fm_graph **out);
/* Whether the ONNX frontend reads op_type of domain ("", "ai.onnx" or NULL: the default one;
 * "com.microsoft") as a counted op, evaluates it at load time or replaces it by the nodes it
 * runs (If, Loop, Scan); false for what it would list as uncounted, and without protobuf-c. */
FM_API bool fm_onnx_op_known(const char *domain, const char *op_type);

/* ==== The loss policy (src/frontend/loss.c): what a training step minimizes ==== */
enum fm_loss_kind {
    FM_LOSS_NONE = 0,
    FM_LOSS_MODEL,           /* the model brought its own loss node */
    FM_LOSS_CROSS_ENTROPY,   /* classifier logits (N, K): cross-entropy over K classes */
    FM_LOSS_NEXT_TOKEN,      /* language-model logits (B, S, V): next-token cross-entropy */
    FM_LOSS_MSE,             /* any other output: mean squared error against a random target */
    FM_LOSS_KIND_COUNT
};
FM_API const char *fm_loss_kind_name(enum fm_loss_kind kind);
#define FM_MAX_LOSSES 8
struct fm_loss {
    enum fm_loss_kind kind;
    bool added;              /* added by the policy (false: the model's own) */
    fm_nid node;             /* the loss node */
    fm_tid output;           /* the model output it reads */
    int64_t classes;         /* cross-entropy: classes, or the vocabulary size */
    int64_t positions;       /* cross-entropy: rows it averages over (N, or B x S) */
};
struct fm_loss_info {
    int n;                           /* losses of the step; 0: none */
    struct fm_loss loss[FM_MAX_LOSSES];
    char summary[320];               /* "cross-entropy over 1000 classes (added by flopmeter)" */
    char why[160];                   /* when n is 0: why there is none */
};
/* Keeps the model's own loss nodes if it has any; else adds the policy's loss to output (or,
 * with FM_NONE, to every float output a trainable parameter reaches), with "labels" or
 * "targets" as new inputs. The graph is finalized again. */
FM_API enum fm_status fm_graph_add_loss(struct fm_graph *graph, fm_tid output,
                                        struct fm_loss_info *info);

/* ==== Language models: the figures beside a count (src/report/llm_summary.c, docs/zoo.md) ==== */
/* Activation recomputation: none; selective = the attention core (scores, softmax, AV) of every
 * layer, Korthikanti et al. 2022; full = the forward of every layer again. */
enum fm_recompute { FM_RECOMPUTE_NONE = 0, FM_RECOMPUTE_SELECTIVE, FM_RECOMPUTE_FULL,
                    FM_RECOMPUTE_COUNT };
FM_API bool fm_recompute_parse(const char *s, enum fm_recompute *out);   /* "none" ... */
FM_API const char *fm_recompute_name(enum fm_recompute r);
struct fm_llm_summary {
    enum fm_recompute recompute;
    uint64_t tokens;                 /* the step's tokens: batch x seq (decoding: batch) */
    uint64_t params, non_embedding, active;  /* by the config: all; without the embeddings and
                                                the lm_head; non-embedding active per token */
    uint64_t model_flops;            /* counted forward (+ backward in training), no optimizer */
    uint64_t recompute_flops;        /* forward FLOPs the recompute runs again (training) */
    uint64_t flash_flops;            /* FlashAttention's backward recomputing the scores QK^T */
    uint64_t attn_full, attn_causal, attn_window;   /* forward FLOPs of the attention cores:
                                        every score (as counted), causal half, and windows */
    double six_nd, six_nd_all;       /* 6 N D (2 N D inference), N = active / all parameters */
    uint64_t act_bytes[FM_RECOMPUTE_COUNT];   /* activations kept for the backward, by recompute */
    uint64_t kv_cache_bytes;         /* inference: K and V of every layer after this pass */
    uint64_t kv_target, kv_source;   /* T5 inference: positions per sequence in that cache, the
                                        self-attention's (target) and cross-attention's (source) */
};
/* Whether MODEL under load is a language model (load->config, or a built-in config's name). */
FM_API bool fm_model_is_llm(const char *model, const struct fm_load_opts *load);
/* The figures of a language model's count (graph and counts from fm_model_load, fm_count). */
FM_API enum fm_status fm_llm_summarize(struct fm_ctx *ctx, const char *model,
                                       const struct fm_load_opts *load,
                                       const struct fm_graph *graph,
                                       const struct fm_counts *counts,
                                       enum fm_recompute recompute, struct fm_llm_summary *out);

/* ==== Numbers as people type them (src/core/format.c): false for anything else ==== */
FM_API bool fm_duration_parse(const char *text, double *seconds);   /* "250ms", "3.5min", "2" */
FM_API bool fm_flops_parse(const char *text, double *flops);   /* "312T", "19.5 TFLOPS", "9e11" */
FM_API bool fm_bytes_parse(const char *text, double *bytes);   /* "8G", "512MB", "1.5GiB" */
/* The one of names[0..n) nearest to a mistyped name ("cout" -> "count"), or NULL when none is
 * close (at most 2 edits, and fewer than half of its letters). */
FM_API const char *fm_nearest_name(const char *typed, const char *const *names, size_t n);

/* ==== Reports of counts (src/report/; the JSON: docs/json.md) ==== */
enum fm_format { FM_FORMAT_TABLE = 0, FM_FORMAT_CSV, FM_FORMAT_JSON, FM_FORMAT_COUNT };
FM_API const char *fm_format_name(enum fm_format format);   /* "table", "csv", "json" */
FM_API bool fm_format_parse(const char *s, enum fm_format *out);
struct fm_report_opts {
    enum fm_format format;
    bool per_layer_detail;   /* table: each layer's primitive counts per phase */
    bool by_class;           /* table/csv: aggregate by op class */
    bool by_module;          /* table/csv/json: aggregate by module path (PyTorch 2 exports) */
    bool layers;             /* table: the per-layer table (default true) */
    bool summary;            /* roofline, predict tables: totals only, no layers */
    const struct fm_loss_info *loss;   /* count: say what the step's loss is (may be NULL) */
    const struct fm_memory_check *memory;   /* count: whether it fits a device (may be NULL) */
    const char *export_note;   /* count: the file looks exported for inference (NULL or "") */
    const struct fm_peer_figures *peers;   /* count: the other counters' figures (fm_peers) */
    const struct fm_llm_summary *llm;      /* count: a language model's figures (may be NULL) */
};
FM_API void fm_report_opts_init(struct fm_report_opts *opts);
/* A table with SI suffixes, or CSV / JSON with exact integers. */
FM_API enum fm_status fm_report_count(FILE *f, const struct fm_graph *graph,
                                      const struct fm_counts *c, const struct fm_report_opts *opts);

/* ==== Devices (src/hw/; docs/devices.md): the built-in table, device files, probed devices ==== */
enum fm_precision {
    FM_PREC_FP64 = 0, FM_PREC_FP32, FM_PREC_TF32 /* tensor cores only */, FM_PREC_FP16,
    FM_PREC_BF16, FM_PREC_FP8, FM_PREC_INT8, FM_PREC_COUNT
};
FM_API const char *fm_precision_name(enum fm_precision p);   /* "fp32", "tf32" ... */
FM_API bool fm_precision_parse(const char *s, enum fm_precision *out);
/* A precision's name, or "torch-default" (PyTorch on Ampere+: TF32 convolutions, FP32
 * matmuls), which sets *torch_default and *out = fp32. */
FM_API bool fm_precision_parse_policy(const char *s, enum fm_precision *out, bool *torch_default);

/* Field bits for fm_device.unverified: a figure the sources could not confirm ('?'). */
enum {
    FM_DEVF_PEAK = 1u << 0, FM_DEVF_BANDWIDTH = 1u << 1, FM_DEVF_MEMORY = 1u << 2,
    FM_DEVF_L2 = 1u << 3, FM_DEVF_CLOCK = 1u << 4, FM_DEVF_TDP = 1u << 5, FM_DEVF_UNITS = 1u << 6,
    FM_DEVF_INTERCONNECT = 1u << 7
};
/* One device. Peaks are dense (no sparsity), in FLOP/s (ops/s for int8); 0 = not supported.
 * peak_vector: the general-purpose units (CUDA cores, SIMD); peak_tensor: matrix units
 * (tensor cores, AMX, MXU). Sizes in bytes, bandwidths in bytes/s. */
struct fm_device {
    const char *name;              /* "H100 SXM5 80GB" */
    const char *aliases;           /* comma-separated short names: "h100,h100-sxm" */
    const char *kind;              /* "gpu", "cpu", "tpu" */
    const char *arch;              /* "Hopper GH100" */
    double peak_vector[FM_PREC_COUNT];
    double peak_tensor[FM_PREC_COUNT];
    double mem_bw;
    double mem_bytes;
    double l2_bytes;
    double boost_mhz;
    int units;                     /* SMs, CUs or cores */
    double tdp_w;
    const char *interconnect;      /* "NVLink4" */
    double interconnect_bw;        /* per GPU, bidirectional, bytes/s */
    const char *source;            /* where the figures come from */
    unsigned unverified;           /* FM_DEVF_* bits */
    bool measured;                 /* from flopmeter probe, not a datasheet */
    unsigned unverified_vector;    /* bit (1u << precision): that peak_vector figure is '?' */
    unsigned unverified_tensor;    /* bit (1u << precision): that peak_tensor figure is '?' */
    const char *origin;            /* "built-in" or the file the entry came from (not saved) */
};
/* The ceiling of an op class at a precision: the tensor peak for conv, matmul and attention
 * (when the device has one), else the vector peak (tf32: fp32's); 0 if neither. */
FM_API double fm_device_peak(const struct fm_device *dev, enum fm_class cls,
                             enum fm_precision prec);
/* fm_device_peak and its real precision and units (applied, tensor: may be NULL). */
FM_API double fm_device_ceiling(const struct fm_device *dev, enum fm_class cls,
                                enum fm_precision prec, enum fm_precision *applied, bool *tensor);
/* The peak utilization is quoted against: prec's conv/matmul ceiling (torch_default: TF32's). */
FM_API double fm_device_util_peak(const struct fm_device *dev, enum fm_precision prec,
                                  bool torch_default);

struct fm_devices;   /* a device table */
/* The built-in table, then $FLOPMETER_DEVICES and $XDG_CONFIG_HOME/flopmeter/devices.json
 * (~/.config/...) when they exist, then user_file (may be NULL); later entries override
 * earlier ones with the same name or alias. */
FM_API enum fm_status fm_devices_load(struct fm_ctx *ctx, const char *user_file,
                                      struct fm_devices **out);
FM_API enum fm_status fm_devices_builtin(struct fm_ctx *ctx, struct fm_devices **out);
FM_API void fm_devices_free(struct fm_devices *devs);
FM_API size_t fm_devices_count(const struct fm_devices *devs);
FM_API const struct fm_device *fm_devices_get(const struct fm_devices *devs, size_t i);
/* By name or alias (case-insensitive), else by a GPU's own name (fm_devices_match);
 * FM_ERR_NOT_FOUND with the nearest names as suggestions. */
FM_API enum fm_status fm_devices_find(struct fm_ctx *ctx, const struct fm_devices *devs,
                                      const char *name, const struct fm_device **out);
/* The entry that fits a GPU's name as nvidia-smi prints it ("NVIDIA H100 80GB HBM3"): the one
 * whose name or alias has the most words, all of them in that name; else FM_ERR_NOT_FOUND. */
FM_API enum fm_status fm_devices_match(struct fm_ctx *ctx, const struct fm_devices *devs,
                                       const char *gpu_name, const struct fm_device **out);
/* Adds (or overrides: only the fields an entry gives) the devices of a JSON file or text; a
 * malformed one is FM_ERR_PARSE naming the entry and field, and devs is left unchanged. */
FM_API enum fm_status fm_devices_add_file(struct fm_devices *devs, const char *path);
FM_API enum fm_status fm_devices_add_json(struct fm_devices *devs, const char *text, size_t len,
                                          const char *origin);
/* Adds a copy of dev (strings copied), replacing any entry with the same name or alias. */
FM_API enum fm_status fm_devices_add(struct fm_devices *devs, const struct fm_device *dev);
/* Device JSON (what fm_devices_add_file reads): several devices, or one to a file. */
FM_API enum fm_status fm_devices_write_json(FILE *f, const struct fm_device *const *devs, size_t n);
FM_API enum fm_status fm_device_save_json(struct fm_ctx *ctx, const struct fm_device *dev,
                                          const char *path);

/* ==== Analyses (src/analysis/): roofline and PALEO-style prediction (docs/roofline.md) ==== */
struct fm_calibration;   /* a device's fitted time model (docs/calibration.md): below */

struct fm_predict_opts {
    const struct fm_device *device;          /* must outlive the predictions made with it */
    enum fm_precision precision;   /* compute precision for conv/matmul/attention */
    bool torch_default;            /* PyTorch on Ampere+: fp32 convs on tf32, fp32 matmuls fp32 */
    double ppp_compute;            /* platform percent of peak, compute (default 0.62, PALEO) */
    double ppp_memory;             /* platform percent of peak, memory (default 0.72) */
    double launch_overhead_us;     /* per kernel (per node and phase that does work) */
    double ppp_comm;               /* platform percent of peak, interconnect (default 0.72) */
    const struct fm_calibration *calibration;   /* NULL: the cold rule only; must outlive */
};
FM_API void fm_predict_opts_init(struct fm_predict_opts *opts);

struct fm_phase_time {             /* per node and phase: seconds and the two bounds */
    double flops, bytes;
    double peak;                   /* FLOP/s ceiling applied */
    double t_compute, t_memory;    /* with PPP */
    double t_roofline;             /* max(compute, memory) + launch */
    double t_paleo;                /* compute + memory + launch (no overlap) */
    bool memory_bound;             /* at peak: OI below the ridge point */
    double intensity;              /* flops / bytes (FLOP/byte); 0 when bytes is 0 */
    double attainable;             /* min(peak, intensity x bandwidth) FLOP/s, at 100% of peak */
    double ridge;                  /* peak / bandwidth (FLOP/byte) */
    double t_launch;               /* the launch overhead included in both bounds */
    enum fm_precision precision;   /* of the ceiling that applied (fp16 without fp16 units: fp32) */
    bool tensor;                   /* the ceiling is a matrix-unit (tensor core) one */
    double t_calibrated;           /* the calibration's time, else t_paleo */
    bool calibrated;               /* t_calibrated came from the calibration, not the cold rule */
};

struct fm_prediction {
    struct fm_ctx *ctx;            /* the context it was made on: fm_prediction_free uses it */
    size_t n_nodes;
    struct fm_phase_time (*nodes)[FM_PHASE_COUNT];   /* [node id][phase] */
    struct fm_phase_time total[FM_PHASE_COUNT];
    double step_roofline_s, step_paleo_s;            /* all phases of the counted mode */
    enum fm_mode mode;
    struct fm_phase_time step;     /* the whole step as one point: sums of flops, bytes and
                                      times; peak = flops / sum(flops_i / peak_i) */
    size_t kernels;                /* node-phases that do work (each pays the launch overhead) */
    double peak_ref;               /* the ceiling utilization is quoted against (conv/matmul) */
    double bandwidth;              /* device memory bandwidth used, bytes/s (at 100%) */
    struct fm_predict_opts opts;   /* a copy of the options it was made with */
    size_t uncalibrated;           /* node-phases that fell back to the cold rule */
    double reuse_bytes, evicted;   /* the traffic between a tensor's uses and the eviction
                                      curve's fraction there (docs/calibration.md); 0 without */
};
FM_API enum fm_status fm_predict(struct fm_ctx *ctx, const struct fm_graph *graph,
                                 const struct fm_counts *counts, const struct fm_predict_opts *opts,
                                 struct fm_prediction **out);
FM_API void fm_prediction_free(struct fm_prediction *p);

enum fm_bound { FM_BOUND_ROOFLINE = 0, FM_BOUND_PALEO, FM_BOUND_COUNT };
FM_API const char *fm_bound_name(enum fm_bound b);   /* "roofline", "paleo" */

struct fm_run_estimate {             /* step, epoch and run figures, for both bounds */
    int64_t batch;                   /* per GPU */
    int gpus;                        /* 1, or the data-parallel replicas */
    int64_t global_batch;            /* batch x gpus: the samples of one step */
    uint64_t dataset_size;           /* 0: no epoch figures */
    double epochs;
    uint64_t steps_per_epoch;        /* ceil(dataset_size / global_batch) */
    double step_flops;               /* every counted phase of one step, on every GPU */
    double epoch_flops;              /* per-sample work x dataset_size + optimizer x steps x gpus */
    double total_flops;              /* epoch_flops x epochs */
    double step_s[FM_BOUND_COUNT];   /* training: step time; inference: latency of a batch */
    double samples_per_s[FM_BOUND_COUNT];
    double epoch_s[FM_BOUND_COUNT], total_s[FM_BOUND_COUNT];
    double utilization[FM_BOUND_COUNT];  /* step_flops / (step_s x gpus x peak_ref) */
    /* the same from the calibrated step (0 without a calibration) */
    double step_calibrated_s, samples_calibrated_per_s, epoch_calibrated_s, total_calibrated_s;
};

/* Data parallelism, weak scaling: ring all-reduce of the gradients (Patarasuk & Yuan 2009). */
struct fm_dp_estimate {
    int gpus;
    double link_bw;                      /* bidirectional bytes/s per GPU */
    double grad_bytes;
    double t_allreduce;                  /* one all-reduce of every gradient */
    double step_1[FM_BOUND_COUNT];       /* one GPU */
    double step_serial[FM_BOUND_COUNT];  /* compute, then all-reduce (no overlap) */
    double step_overlap[FM_BOUND_COUNT]; /* each layer's gradients reduced during backward */
    double efficiency_serial[FM_BOUND_COUNT];  /* step_1 / step_N (weak scaling) */
    double efficiency_overlap[FM_BOUND_COUNT];
    double samples_per_s_serial[FM_BOUND_COUNT], samples_per_s_overlap[FM_BOUND_COUNT];
    double step_overlap_calibrated;      /* from the calibrated times (0 without) */
};

/* Utilization = FLOPs / (time x peak) by Epoch AI's methods: theory = 3 x forward FLOPs;
 * counted = forward + backward as counted; counted_opt adds the optimizer step. */
enum fm_util_method { FM_UTIL_THEORY = 0, FM_UTIL_COUNTED, FM_UTIL_COUNTED_OPT, FM_UTIL_COUNT };
FM_API const char *fm_util_method_name(enum fm_util_method m);   /* "theory", "counted", ... */
struct fm_utilization {
    double peak;                         /* FLOP/s the utilization is quoted against */
    int64_t batch;
    double step_s;                       /* 0: no per-step figures */
    double step_flops[FM_UTIL_COUNT];
    double step_util[FM_UTIL_COUNT];
    double epoch_s;                      /* 0: no per-epoch figures */
    uint64_t dataset_size, steps_per_epoch;
    double epoch_flops[FM_UTIL_COUNT];
    double epoch_util[FM_UTIL_COUNT];
    bool impossible;                     /* some utilization is above 100% */
};

/* The roofline chart as SVG: the ceilings in use, one dot per layer (area = share of the
 * predicted step), the network, and measured points (fm_measured_read) when given. */
struct fm_measured;
struct fm_svg_opts {
    const char *title;                   /* NULL: "<model> on <device>" */
    int width, height;                   /* 0: 960 x 640 */
    enum fm_bound bound;                 /* which predicted time sizes the dots */
    const struct fm_measured *measured;  /* NULL: none */
};
FM_API void fm_svg_opts_init(struct fm_svg_opts *opts);
FM_API enum fm_status fm_svg_roofline(FILE *f, const struct fm_graph *graph,
                                      const struct fm_counts *counts, const struct fm_prediction *p,
                                      const struct fm_svg_opts *opts);

/* ---- Calibration (docs/calibration.md): t = fixed_s + flops x s_per_flop + bytes x s_per_byte
 * per op class, kind ("depthwise", "BatchNorm"; "" the whole class) and phase, fitted to timed
 * single layers. */
#define FM_CALIB_KIND_MAX 16
#define FM_CALIB_LIST_MAX 256   /* bytes of a list of left-out families, the NUL included */

struct fm_calib_sample {
    enum fm_class cls;
    char kind[FM_CALIB_KIND_MAX];
    enum fm_phase phase;
    double flops, bytes;           /* the layer's counted work in that phase */
    double seconds;                /* its measured time */
    bool cold;                     /* timed with its data flushed from the caches */
    const char *from;              /* the families the sweep shape was taken from, comma-
                                      separated (static text); NULL: a generic shape */
};

struct fm_calib_entry {
    enum fm_class cls;
    char kind[FM_CALIB_KIND_MAX];
    enum fm_phase phase;
    double fixed_s, s_per_flop, s_per_byte;
    int points;                    /* samples it was fitted on */
    double rel_rms;                /* RMS of (fitted - measured) / measured over those samples */
    bool cold;                     /* fitted on cold-cache samples */
};

/* A calibration's header and fits; the pointers point into it. */
struct fm_calibration_info {
    const char *device;            /* the device as measure names it ("AMD EPYC 9R14") */
    const char *backend;           /* "cpu" or "cuda" */
    int threads;                   /* CPU threads; 0 on a GPU */
    enum fm_precision precision;
    const char *date;              /* when it was made, ISO 8601 UTC */
    double peak, bandwidth;        /* the device's probed FLOP/s and bytes/s */
    double step_overhead_s;        /* per training step, outside every layer */
    int rounds;                    /* the sweep's rounds; 0: not recorded */
    const char *left_out;          /* the families the sweep dropped ("" none) */
    const char *source;            /* the file it was loaded from ("" when fitted) */
    size_t n_entries;
    const struct fm_calib_entry *entries;
    size_t n_evict;                /* the eviction curve: after evict_bytes[i] bytes of other */
    const double *evict_bytes;     /* traffic, a layer's data is evict_frac[i] of the way from */
    const double *evict_frac;      /* warm (0) to cold (1); n_evict 0: none */
};
FM_API void fm_calibration_info(const struct fm_calibration *c, struct fm_calibration_info *out);
/* Save refuses (FM_ERR_INVALID) what load would; load's errors name the line and field. */
FM_API enum fm_status fm_calibration_save(struct fm_ctx *ctx, const struct fm_calibration *c,
                                          const char *path);
FM_API enum fm_status fm_calibration_load(struct fm_ctx *ctx, const char *path,
                                          struct fm_calibration **out);
FM_API void fm_calibration_free(struct fm_calibration *c);
/* The fit of samples (fm_calib_samples_load) with like's header (device, backend, threads,
 * precision, probe figures, overhead, eviction curve), recording left_out (NULL: none). */
FM_API enum fm_status fm_calibration_refit(struct fm_ctx *ctx, const struct fm_calibration *like,
                                           const struct fm_calib_sample *samples, size_t n,
                                           const char *left_out, struct fm_calibration **out);

/* ==== Measurement (src/backend/): timed steps on the CPU (oneDNN) or a GPU (cuDNN) ==== */
typedef void (*fm_progress_fn)(void *user, const char *what, int done, int total);

struct fm_measure_opts {
    const char *device;            /* "cpu", "cuda", "cuda:N" */
    enum fm_mode mode;             /* train: fwd + loss + bwd + SGD update; infer: fwd */
    enum fm_precision precision;   /* fp32 (default), tf32, fp16/bf16 (mixed, fp32 master) */
    int warmup;                    /* steps run and discarded (default 3) */
    int steps;                     /* timed steps (default 10) */
    int threads;                   /* CPU threads (0 = all) */
    bool per_layer;                /* time each node and phase (default true) */
    bool channels_last;            /* NHWC layouts (CUDA) */
    bool cuda_graph;               /* capture the whole step in a CUDA graph */
    uint64_t seed;                 /* weights, inputs and labels are drawn from it */
    double lr, momentum;           /* SGD (defaults 0.01, 0.9) */
    fm_progress_fn progress;
    void *progress_user;
    double memory_limit;           /* bytes the CPU backend's buffers may take (0: no limit),
                                      refused while it plans, before anything runs */
    bool cold_cache;               /* per_layer on a CPU: flush each kernel's data from the
                                      caches before it is timed (x86 clflush) */
    double flush_bytes;            /* per_layer on a CPU: write this many bytes of other traffic */
    const char *flush_node;        /* before each kernel of this node (NULL: every kernel) */
};
FM_API void fm_measure_opts_init(struct fm_measure_opts *opts);

struct fm_node_timing {
    double ms[FM_PHASE_COUNT];     /* median over timed steps; bwd split where the backend can */
    bool bwd_split;                /* false: all backward time is in ms[FM_PHASE_BWD_DATA] */
};

struct fm_measurement {
    struct fm_ctx *ctx;            /* the context it was made on: fm_measurement_free uses it */
    char backend[16];              /* "cpu", "cuda" */
    char device_name[128];         /* "NVIDIA H100 80GB HBM3", CPU model name */
    int threads;
    enum fm_precision precision;
    size_t n_steps;
    double *step_ms;               /* every timed step, in order */
    double step_ms_median, step_ms_min, step_ms_max;
    size_t n_nodes;
    struct fm_node_timing *nodes;  /* indexed by node id; NULL when per_layer was off */
    double loss_first, loss_last;  /* training: the loss of the first and last step */
    double clock_mhz;              /* GPU SM clock read during the run (0 if unknown) */
    bool cold_cache;               /* every timed kernel ran with its data flushed */
};

/* Which layers of a graph a backend can run, asked of it before anything is prepared (no
 * device needed: a machine without a GPU can check a graph against the CUDA backend). */
#define FM_MAX_GAPS 32
struct fm_backend_gap {
    const char *op;                /* the op's display name (points into the graph) */
    uint64_t nodes;                /* layers of this op the backend cannot run */
    const char *first_layer;
    char reason[256];              /* the backend's own words for the first of them */
};
struct fm_backend_check {
    char backend[16];              /* "cpu", "cuda" */
    size_t n_nodes, n_supported;
    size_t n_gaps;
    struct fm_backend_gap gaps[FM_MAX_GAPS];
    bool more_gaps;                /* more distinct ops than FM_MAX_GAPS */
};
FM_API enum fm_status fm_measure_check(struct fm_ctx *ctx, const struct fm_graph *graph,
                                       const char *device, struct fm_backend_check *out);
/* FM_ERR_UNSUPPORTED with a message listing every op the check found missing (FM_OK when none). */
FM_API enum fm_status fm_measure_check_error(struct fm_ctx *ctx, const struct fm_backend_check *c);
/* Warm-up and timed steps of graph on opts->device; an op the backend cannot run is
 * FM_ERR_UNSUPPORTED naming the node, before anything runs. */
FM_API enum fm_status fm_measure(struct fm_ctx *ctx, const struct fm_graph *graph,
                                 const struct fm_measure_opts *opts, struct fm_measurement **out);
FM_API void fm_measurement_free(struct fm_measurement *m);

/* ==== Probes: this machine's or a GPU's own ceilings ==== */
struct fm_probe_stat {
    double min, median, max;       /* over repetitions */
    double theory;                 /* computed from features and clocks, or the datasheet; 0 = ? */
};
struct fm_probe_result {
    char device_name[128];
    int threads;
    struct fm_probe_stat fma_1t[FM_PREC_COUNT];     /* FLOP/s, one thread (CPU) */
    struct fm_probe_stat fma_all[FM_PREC_COUNT];    /* FLOP/s, all threads / whole GPU */
    struct fm_probe_stat gemm[FM_PREC_COUNT];       /* FLOP/s through the BLAS (GPU: cuBLASLt) */
    struct fm_probe_stat bw_copy, bw_triad;         /* bytes/s, read + written */
    uint64_t working_set_bytes;
    char kind[8];                  /* "cpu" or "gpu" */
    char arch[96];                 /* "AMD family 19h model 11h (Zen 4), AVX-512" */
    double clock_mhz;              /* the clock the theoretical figures assume */
    int cores;                     /* physical cores (CPU) the all-thread theory counts */
    uint64_t mem_bytes;            /* memory size; 0 = unknown */
    uint64_t cache_bytes;          /* last-level cache; 0 = unknown */
    char notes[512];               /* how the theoretical figures were derived, and caveats */
};
struct fm_probe_opts {
    const char *device;            /* "cpu" or "cuda[:N]" */
    int repetitions;               /* default 5 */
    double seconds;                /* time budget per figure (default 0.2) */
    int threads;                   /* 0 = all */
    fm_progress_fn progress;
    void *progress_user;
};
FM_API void fm_probe_opts_init(struct fm_probe_opts *opts);
FM_API enum fm_status fm_probe(struct fm_ctx *ctx, const struct fm_probe_opts *opts,
                               struct fm_probe_result *out);
/* A measured device entry from a probe (strings point into r or are static). */
FM_API enum fm_status fm_probe_to_device(const struct fm_probe_result *r, struct fm_device *out);

/* A calibration sweep: times single layers, every phase of a training step, over shapes per
 * op class (after a short probe for the peak and bandwidth), and fits the model to them.
 * samples_out (may be NULL) gets every timed node-phase, freed with fm_dealloc. */
#define FM_CALIBRATE_ROUNDS 3
#define FM_CALIBRATE_MAX_ROUNDS 9
struct fm_calibrate_opts {
    const char *device;            /* "cpu" (default) or "cuda[:N]" */
    int threads;                   /* CPU threads (0 = all) */
    enum fm_precision precision;   /* default fp32 */
    bool quick;                    /* every other shape, fewer steps, one round */
    int rounds;                    /* rounds over the sweep, each layer-phase's median kept (0: 1
                                      with quick, else FM_CALIBRATE_ROUNDS; at most the MAX) */
    const char *leave_out;         /* families whose layer shapes the sweep drops, comma-
                                      separated (accuracy on unseen networks); NULL: none */
    fm_progress_fn progress;       /* "<class>: layers", once per shape */
    void *progress_user;
    bool warm_only;                /* no cold-cache timings, no eviction curve */
};
FM_API void fm_calibrate_opts_init(struct fm_calibrate_opts *opts);
FM_API enum fm_status fm_calibrate(struct fm_ctx *ctx, const struct fm_calibrate_opts *opts,
                                   struct fm_calibration **out,
                                   struct fm_calib_sample **samples_out, size_t *n_samples_out);
/* Reads the samples CSV calibrate --samples writes, leaving out (and counting in *dropped)
 * those of the families in leave_out; *out (fm_dealloc) holds *n samples, each from NULL. */
FM_API enum fm_status fm_calib_samples_load(struct fm_ctx *ctx, const char *path,
                                            const char *leave_out, struct fm_calib_sample **out,
                                            size_t *n, size_t *dropped);

/* ==== The session (src/analysis/session.c): what every command resolves, in one call ==== */
/* It loads the model (with the loss policy for training), counts it, resolves the device, the
 * precision and the peak, and does what the task asks. Every figure the CLI prints is in it. */

enum fm_task {
    FM_TASK_WORK = 0,      /* count: the work of a step */
    FM_TASK_ROOFLINE,      /* the work placed on a device's roofline */
    FM_TASK_PREDICT,       /* predicted step, epoch and training time (data parallelism too) */
    FM_TASK_UTILIZATION,   /* utilization from a time the user measured */
    FM_TASK_MEASURE,       /* a real, timed run on a backend, next to the prediction */
    FM_TASK_COUNT
};
FM_API const char *fm_task_name(enum fm_task task);   /* "count", "roofline", ... */

/* Whether a step fits a device's memory: fm_counts_training_memory against the device's size
 * (leaving out the CUDA context, workspaces and allocator slack: a few percent may not fit). */
struct fm_memory_check {
    bool checked;                /* false: no device, or its memory size is unknown */
    enum fm_mode mode;
    int64_t batch;               /* per GPU */
    int gpus;                    /* each GPU holds a replica and its own batch */
    uint64_t needed_bytes;       /* per GPU */
    double device_bytes;
    char device[128];
    bool fits;
    int64_t max_batch;           /* the largest batch per GPU that fits (counted); 0: not even
                                    one sample; -1: unknown (the batch could not be changed) */
};

struct fm_session_opts {
    enum fm_task task;
    const char *model;             /* a built-in name or an .onnx file */
    struct fm_load_opts load;      /* batch, input size, classes, storage dtype, bindings */
    struct fm_count_opts count;    /* mode (train/infer) and optimizer */
    const char *loss_on;           /* training: the output the loss is added to (NULL: policy) */
    /* A device-table name or alias, a GPU's own name, "cpu" (a short probe) or "cuda[:N]" (the
     * GPU, matched to the table by its name); measure: where to run (NULL: cpu). */
    const char *device;
    const char *devices_file;      /* more devices (docs/devices.md); NULL: none */
    const char *spec;              /* measure: the table entry for the peak and the prediction */
    enum fm_precision precision;   /* with precision_given (measure: always); else storage's */
    bool precision_given;
    bool torch_default;            /* PyTorch on Ampere+: TF32 convolutions, FP32 matmuls */
    struct fm_predict_opts predict;   /* PPPs and launch overhead; the session sets the rest */
    uint64_t dataset_size;         /* predict, utilization: samples per epoch (0: none) */
    double epochs;                 /* predict: epochs of the run (default 1) */
    int gpus;                      /* predict: data parallelism (default 1) */
    const char *interconnect;      /* predict: a named link ("nvlink4"); NULL: the device's */
    double peak;                   /* > 0: FLOP/s to quote utilization against, not the rule */
    double step_s, epoch_s;        /* utilization: the measured step and/or epoch time */
    struct fm_measure_opts run;    /* measure: warm-up, steps, threads, seed ... */
    uint64_t epoch_samples;        /* measure: also time an epoch of this many samples */
    double memory_cap;             /* measure: bytes a step may take (0: MemAvailable) */
    bool dry_run;                  /* measure: resolve and check everything, run nothing */
    fm_progress_fn progress;       /* probes and runs report here ("probe: ...", "steps: ...") */
    void *progress_user;
    bool force_calibration;        /* use a calibration made on another device/threads/precision */
    const void *model_data;        /* an ONNX model in memory; model is then only its name */
    size_t model_size;
    const char *const *frozen;     /* parameters with requires_grad=False (tensor names): not */
    size_t n_frozen;               /* trainable, no weight gradient; unknown: FM_ERR_INVALID */
};
FM_API void fm_session_opts_init(struct fm_session_opts *opts, enum fm_task task);
struct fm_session;   /* opaque: read it through the accessors below */

/* A bad option (an unknown device, an impossible value) is FM_ERR_INVALID with a message
 * saying what to give instead; *out is NULL on failure. */
FM_API enum fm_status fm_session_run(struct fm_ctx *ctx, const struct fm_session_opts *opts,
                                     struct fm_session **out);
FM_API void fm_session_free(struct fm_session *session);
/* Pointers into the session (valid until fm_session_free); NULL where the task made none. */
FM_API const struct fm_graph *fm_session_graph(const struct fm_session *s);   /* finalized */
FM_API const struct fm_counts *fm_session_counts(const struct fm_session *s);
FM_API const struct fm_loss_info *fm_session_loss(const struct fm_session *s);
FM_API int64_t fm_session_batch(const struct fm_session *s);
/* The float types the graph was counted in; returns why, in words. */
FM_API const char *fm_session_storage(const struct fm_session *s, enum fm_dtype *activations,
                                      enum fm_dtype *parameters);
/* What a count of a file exported for inference leaves out ("" when it is not one). */
FM_API const char *fm_session_export_note(const struct fm_session *s);
/* The device; how it was found, and what to know about the name's match (may be NULL). */
FM_API const struct fm_device *fm_session_device(const struct fm_session *s, const char **how,
                                                 const char **note);
FM_API const struct fm_probe_result *fm_session_probe(const struct fm_session *s);
FM_API const struct fm_memory_check *fm_session_memory(const struct fm_session *s);
/* The compute precision; torch_default (may be NULL): PyTorch's TF32 convolutions. */
FM_API enum fm_precision fm_session_precision(const struct fm_session *s, bool *torch_default);
FM_API const char *fm_session_precision_label(const struct fm_session *session);
/* FLOP/s utilization is quoted against (0: unknown), and where it comes from. */
FM_API double fm_session_peak(const struct fm_session *s, const char **source);
FM_API const struct fm_prediction *fm_session_prediction(const struct fm_session *s);
/* predict: the run (with gpus > 1 the data-parallel one), or the same on one GPU. */
FM_API const struct fm_run_estimate *fm_session_run_estimate(const struct fm_session *s,
                                                             bool one_gpu);
/* predict with gpus > 1: the data-parallel step, and the link's name (link may be NULL). */
FM_API const struct fm_dp_estimate *fm_session_data_parallel(const struct fm_session *s,
                                                             const char **link);
FM_API const struct fm_utilization *fm_session_utilization(const struct fm_session *s);
/* measure: the backend's check, the timed steps (NULL in a dry run), the epoch's steps. */
FM_API const struct fm_backend_check *fm_session_backend_check(const struct fm_session *s);
FM_API const struct fm_measurement *fm_session_measurement(const struct fm_session *s);
FM_API const struct fm_measurement *fm_session_epoch(const struct fm_session *s, uint64_t *steps,
                                                     double *seconds);

/* As fm_report_count; FM_ERR_INVALID when the session lacks what the renderer shows. */
FM_API enum fm_status fm_report_roofline(FILE *f, const struct fm_session *s,
                                         const struct fm_report_opts *opts);
FM_API enum fm_status fm_report_predict(FILE *f, const struct fm_session *s,
                                        const struct fm_report_opts *opts);
FM_API enum fm_status fm_report_utilization(FILE *f, const struct fm_session *s,
                                            const struct fm_report_opts *opts);
/* What a utilization above 100% means, and its likely causes. */
FM_API void fm_report_impossible(FILE *f);
FM_API enum fm_status fm_report_measure(FILE *f, const struct fm_session *s,
                                        const struct fm_report_opts *opts);
FM_API enum fm_status fm_report_probe(FILE *f, const struct fm_probe_result *r,
                                      const struct fm_report_opts *opts);
FM_API enum fm_status fm_report_devices(FILE *f, const struct fm_devices *devs,
                                        const struct fm_report_opts *opts);
FM_API enum fm_status fm_report_device(FILE *f, const struct fm_device *dev,
                                       const struct fm_report_opts *opts);
/* The built-in architectures, their default input and parameter counts (counted with ctx). */
FM_API enum fm_status fm_report_models(FILE *f, struct fm_ctx *ctx,
                                       const struct fm_report_opts *opts);
/* The session's task rendered as its command prints it, into a NUL-terminated string of *len
 * bytes allocated with the session's context (free with fm_dealloc): for a binding. */
FM_API enum fm_status fm_session_render(const struct fm_session *s,
                                        const struct fm_report_opts *opts, char **out, size_t *len);

/* ==== Peers (src/analysis/peers.c): what the other counters would print for a graph ==== */
/* The exact integer each tool returns for the model, in its own unit, by its rules
 * (docs/counting.md, section 4): the forward pass in evaluation mode at the graph's batch (and
 * FlopCounterMode's forward + backward), without the loss. */

enum fm_peer {
    FM_PEER_FVCORE = 0,        /* fvcore FlopCountAnalysis (jit trace) */
    FM_PEER_PTFLOPS,           /* ptflops get_model_complexity_info, pytorch backend */
    FM_PEER_PTFLOPS_ATEN,      /* ptflops, aten backend */
    FM_PEER_THOP,              /* thop profile */
    FM_PEER_PTHFLOPS,          /* pthflops count_ops (torch.fx) */
    FM_PEER_FLOP_COUNTER_FWD,  /* PyTorch's torch.utils.flop_counter.FlopCounterMode, forward */
    FM_PEER_FLOP_COUNTER_BWD,  /* FlopCounterMode around forward + backward */
    FM_PEER_TORCHVISION,       /* torchvision's published "GFLOPS": conv + linear MACs */
    FM_PEER_COUNT
};
FM_API const char *fm_peer_key(enum fm_peer peer);     /* the JSON key: "fvcore", "thop" ... */
FM_API const char *fm_peer_label(enum fm_peer peer);   /* "fvcore FlopCountAnalysis" ... */

struct fm_peer_figure {
    bool computable;      /* false: the tool's figure cannot be told from this graph (note) */
    uint64_t value;       /* the tool's exact figure (0 when not computable) */
    const char *unit;     /* the tool's unit: "MACs" or "FLOPs" (static) */
    char note[320];       /* what the tool leaves out or adds, or why it is not computable */
};

struct fm_peer_figures {
    struct fm_peer_figure peer[FM_PEER_COUNT];
    int64_t batch;              /* the batch the figures are at (the graph's) */
    bool builtin;               /* the graph is a built-in architecture, node for node */
    char published[16];         /* torchvision's published GFLOPS for it ("1.814"), or "" */
    char basis[256];            /* what was counted, in words */
};

/* Every peer's figure for a finalized graph and its counts (of either mode); a figure that
 * does not fit in 64 bits is FM_ERR_OVERFLOW. */
FM_API enum fm_status fm_peers(struct fm_ctx *ctx, const struct fm_graph *graph,
                               const struct fm_counts *counts, struct fm_peer_figures *out);

/* ==== Profiles from other tools: measured data beside the exact counts (docs/profiles.md) ==== */
/* Readers of `ncu --csv`, `nsys stats --format csv` and PyTorch profiler traces. A malformed
 * file is FM_ERR_PARSE with its line and column; a build without cJSON cannot read traces
 * (FM_ERR_UNSUPPORTED). Their records are opaque: render them (JSON: docs/json.md). */

struct fm_ncu_profile;   /* a profile's kernels, NVTX groups and totals */
struct fm_ncu_match;     /* its kernels beside a counted graph's layers */
FM_API enum fm_status fm_ncu_read_file(struct fm_ctx *ctx, const char *path,
                                       struct fm_ncu_profile **out);
FM_API enum fm_status fm_ncu_read_buffer(struct fm_ctx *ctx, const char *data, size_t len,
                                         const char *name, struct fm_ncu_profile **out);
FM_API void fm_ncu_profile_free(struct fm_ncu_profile *p);
/* By the NVTX ranges of flopmeter's CUDA backend; without them, only the whole step. */
FM_API enum fm_status fm_ncu_match(struct fm_ctx *ctx, const struct fm_ncu_profile *p,
                                   const struct fm_graph *graph, const struct fm_counts *counts,
                                   struct fm_ncu_match **out);
FM_API void fm_ncu_match_free(struct fm_ncu_match *m);
/* m (the layers beside the counts) and dev (% of its peaks) may be NULL. */
FM_API enum fm_status fm_report_ncu(FILE *f, const struct fm_ncu_profile *p,
                                    const struct fm_ncu_match *m, const struct fm_device *dev,
                                    const struct fm_report_opts *opts);

struct fm_nsys_summary;  /* one summary: kernels, NVTX ranges, their GPU projection or kernels */
FM_API enum fm_status fm_nsys_read_file(struct fm_ctx *ctx, const char *path,
                                        struct fm_nsys_summary **out);
FM_API enum fm_status fm_nsys_read_buffer(struct fm_ctx *ctx, const char *data, size_t len,
                                          const char *name, struct fm_nsys_summary **out);
FM_API void fm_nsys_summary_free(struct fm_nsys_summary *s);
FM_API enum fm_status fm_report_nsys(FILE *f, const struct fm_nsys_summary *s,
                                     const struct fm_report_opts *opts);

/* A PyTorch profiler trace (export_chrome_trace, legacy or Kineto): its steps, op and class
 * times, GPU kernel time and the FLOPs the profiler recorded; events run in one of 3 phases. */
struct fm_trace;
enum fm_trace_phase { FM_TRACE_FWD = 0, FM_TRACE_BWD, FM_TRACE_OPT, FM_TRACE_PHASE_COUNT };
struct fm_trace_opts {
    const char *step_prefix;     /* annotations starting with it are the steps ("ProfilerStep#") */
    bool whole;                  /* no step annotation: the whole CPU span as one step */
};
FM_API void fm_trace_opts_init(struct fm_trace_opts *opts);
/* A trace without steps is FM_ERR_PARSE saying how to record them. opts may be NULL. */
FM_API enum fm_status fm_trace_read(struct fm_ctx *ctx, const char *path,
                                    const struct fm_trace_opts *opts, struct fm_trace **out);
FM_API enum fm_status fm_trace_parse(struct fm_ctx *ctx, const char *text, size_t len,
                                     const char *origin, const struct fm_trace_opts *opts,
                                     struct fm_trace **out);
FM_API void fm_trace_free(struct fm_trace *trace);
/* A profiler event name's class ("aten::addmm": matmul; unknown: FM_CLASS_OTHER), and a class's
 * name (fm_class_name, or "optimizer" for FM_CLASS_COUNT: the ops under Optimizer.step). */
FM_API int fm_trace_op_class(const char *name);
FM_API const char *fm_trace_class_name(int cls);
/* The median step's seconds; the first forward op's first input of rank >= 2, and that op. */
FM_API double fm_trace_step_s(const struct fm_trace *trace);
FM_API const struct fm_shape *fm_trace_input(const struct fm_trace *trace, const char **op);

/* Utilization of the median step by Epoch AI's methods (Hobbhahn 2022): counting (flopmeter's
 * count of the step) and profiler (the FLOPs the profiler recorded). */
struct fm_trace_util {
    double peak;                 /* FLOP/s; 0: none given (FLOPs only, every *_util NaN) */
    int64_t batch;               /* the batch flopmeter counted */
    double step_s;               /* the trace's median step */
    struct fm_utilization util;  /* the counting method: theory, counted, counted+optimizer */
    uint64_t counted_flops;      /* forward + backward + optimizer */
    uint64_t counted_by_phase[FM_TRACE_PHASE_COUNT];   /* fwd; bwd_data + bwd_weight; opt */
    double counted_util;         /* counted_flops / step_s / peak */
    bool profiler_available;     /* the trace has "flops" (with_flops=True under Kineto) */
    double profiler_flops;       /* median over the steps of their profiler_flops */
    double profiler_util;        /* profiler_flops / step_s / peak */
    double profiler_share;       /* profiler_flops / counted_flops */
    bool batch_mismatch;         /* the trace's first input says another batch: */
    int64_t trace_batch;         /*   that batch (0: unknown) */
    bool input_mismatch;         /* the trace's first input has another size past the batch */
    struct fm_shape model_input; /*   than this model input (the count is of another model) */
};
/* graph (may be NULL) is the counted model, for the input-shape check; peak 0: no device. */
FM_API enum fm_status fm_trace_utilization(struct fm_ctx *ctx, const struct fm_trace *trace,
                                           const struct fm_graph *graph,
                                           const struct fm_counts *counts, int64_t batch,
                                           double peak, struct fm_trace_util *out);
/* s may be NULL (no model); util is then NULL too. */
FM_API enum fm_status fm_report_trace(FILE *f, const struct fm_trace *trace,
                                      const struct fm_session *s, const struct fm_trace_util *util,
                                      const struct fm_report_opts *opts);

/* Measured points for the roofline chart (roofline --measured) from an ncu CSV (per matched
 * layer phase, and the file) or a trace (the median step and, on a CPU, each op class). */
struct fm_measured;
FM_API enum fm_status fm_measured_read(struct fm_ctx *ctx, const char *path,
                                       const struct fm_graph *graph,
                                       const struct fm_counts *counts, struct fm_measured **out);
FM_API void fm_measured_free(struct fm_measured *m);
/* How many points, and what they are and what was left out, in words. */
FM_API size_t fm_measured_count(const struct fm_measured *m);
FM_API const char *fm_measured_how(const struct fm_measured *m);


/* ==== Parallel training plans (src/analysis/plan*.c; docs/plan.md, docs/clusters.md) ==== */
/* 0 in a size means "the default" (docs/plan.md). */
struct fm_plan_opts {
    const char *model;            /* an LLM config by name, or: */
    const char *config_path;      /* a HuggingFace config.json */
    const char *devices_file, *device, *cluster;   /* cluster: built-in name or file */
    enum fm_precision precision;  /* bf16 (default) or fp8: the matmuls at the fp8 peak */
    int64_t gpus, tp, pp, dp, cp, ep, interleave, micro_batch, global_batch, seq;
    int zero;                     /* 0..3 (1: the distributed optimizer) */
    bool fsdp, sequence_parallel, search, no_flash_attention, no_overlap;
    bool balance_embedding;       /* first and last stages one layer fewer (Llama 3) */
    enum fm_recompute recompute;
    int grad_bytes;               /* 4: fp32 gradients (default), 2: bf16 */
    double tokens;                /* training tokens for time and GPU-hours (0: none) */
    double ppp_compute, ppp_memory, ppp_comm;   /* fractions of the peaks (docs/plan.md) */
    const struct fm_calibration *calibration;  /* times the compute per node (docs/plan.md);
                                                  NULL: the roofline; read by fm_plan_run only */
    bool force_calibration;
    int64_t decoder_seq;          /* T5: target tokens per sequence (0: seq); seq the source's */
};
FM_API void fm_plan_opts_init(struct fm_plan_opts *opts);
struct fm_plan;
FM_API enum fm_status fm_plan_run(struct fm_ctx *ctx, const struct fm_plan_opts *opts,
                                  struct fm_plan **out);
FM_API void fm_plan_free(struct fm_plan *plan);
struct fm_plan_summary {
    double step_s, mfu, hfu, tokens_per_s, memory_per_gpu_bytes;
    bool fits;
};
FM_API void fm_plan_summary(const struct fm_plan *plan, struct fm_plan_summary *out);
FM_API enum fm_status fm_report_plan(FILE *f, const struct fm_plan *plan, enum fm_format fmt);
/* NCCL's all-reduce, all-gather, reduce-scatter and all-to-all timed across the visible GPUs
 * (probe --nccl; NCCL opened at run time): bus bandwidth at the largest message, time of the
 * smallest. Index by collective in that order. */
struct fm_nccl_probe {
    int gpus;
    char gpu_name[96];
    double large_bytes, small_bytes;
    double busbw[4], small_s[4];
};
FM_API enum fm_status fm_probe_nccl(struct fm_ctx *ctx, struct fm_nccl_probe *out);
FM_API enum fm_status fm_report_nccl(FILE *f, const struct fm_nccl_probe *p);
/* Writes the probe as a cluster file (the all-reduce's figures inside the node). */
FM_API enum fm_status fm_nccl_save_cluster(struct fm_ctx *ctx, const struct fm_nccl_probe *p,
                                           const char *path);

#ifdef __cplusplus
}
#endif

#endif /* FLOPMETER_H */
