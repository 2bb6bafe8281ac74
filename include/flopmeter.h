/* flopmeter: count, bound and measure the compute of neural-network training and inference.
 *
 * This is the library's only public header. It declares the context (errors, allocator), the
 * network graph and its builder, the list of ops and the per-op cost model, the built-in
 * architectures and ONNX, the loss policy, devices, analyses, measurement backends and, at the
 * end, the session that resolves all of them for a command and the renderers of its results.
 * It includes no vendor header: CUDA, cuDNN and oneDNN stay inside their backends.
 *
 * Conventions used throughout:
 *  - Functions that can fail return enum fm_status and leave a message on the context
 *    (fm_ctx_error()). OUT parameters are written only on success unless stated otherwise.
 *  - Lifecycle: a function that makes a heap object (fm_ctx_new, fm_graph_new, fm_count,
 *    fm_predict, fm_measure, fm_session_run ...) has a matching fm_x_free(x) that takes only the
 *    object (it remembers its context) and accepts NULL; options structs are set with
 *    fm_x_opts_init.
 *  - Counts are exact uint64_t; a product or sum that would overflow is FM_ERR_OVERFLOW.
 */
#ifndef FLOPMETER_H
#define FLOPMETER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FM_VERSION "0.1.0"

/* What the shared library exports: the declarations of this header and nothing else (the
 * library is built with -fvisibility=hidden; tests/check_exports.sh checks the result). */
#if defined(__GNUC__)
#define FM_API __attribute__((visibility("default")))
#else
#define FM_API
#endif

/* ---------------------------------------------------------------------------------------------
 * Status and context
 * ------------------------------------------------------------------------------------------ */

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

/* Allocator hooks: every allocation the library makes goes through these, so tests can fail
 * the Nth allocation. realloc(ptr, 0) is never called; free(NULL) may be. */
struct fm_allocator {
    void *(*malloc_fn)(size_t size, void *user);
    void *(*realloc_fn)(void *ptr, size_t size, void *user);
    void (*free_fn)(void *ptr, void *user);
    void *user;
};

struct fm_ctx;

/* Creates a context. alloc may be NULL for the C library's allocator; it is copied.
 * On failure *out is NULL and FM_ERR_NOMEM is returned. */
FM_API enum fm_status fm_ctx_new(const struct fm_allocator *alloc, struct fm_ctx **out);
FM_API void fm_ctx_free(struct fm_ctx *ctx);

/* The message of the last failure on this context ("" if none). Valid until the next call that
 * fails on the same context. */
FM_API const char *fm_ctx_error(const struct fm_ctx *ctx);

/* Records a failure: formats a message onto the context and returns status, so that callers can
 * write `return fm_error(ctx, FM_ERR_SHAPE, "conv1: ...")`. */
FM_API enum fm_status fm_error(struct fm_ctx *ctx, enum fm_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Optional sink for progress and warnings (default: none). */
typedef void (*fm_log_fn)(void *user, const char *message);
FM_API void fm_ctx_set_log(struct fm_ctx *ctx, fm_log_fn fn, void *user);
FM_API void fm_log(struct fm_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Allocation through the context's allocator. fm_alloc zeroes the block. */
FM_API void *fm_alloc(struct fm_ctx *ctx, size_t size);
FM_API void *fm_realloc(struct fm_ctx *ctx, void *ptr, size_t size);
FM_API void fm_dealloc(struct fm_ctx *ctx, void *ptr);
FM_API char *fm_strdup(struct fm_ctx *ctx, const char *s);

/* ---------------------------------------------------------------------------------------------
 * Data types and shapes
 * ------------------------------------------------------------------------------------------ */

enum fm_dtype {
    FM_DTYPE_FP32 = 0,
    FM_DTYPE_FP16,
    FM_DTYPE_BF16,
    FM_DTYPE_FP64,
    FM_DTYPE_FP8,
    FM_DTYPE_INT64,
    FM_DTYPE_INT32,
    FM_DTYPE_INT16,
    FM_DTYPE_INT8,
    FM_DTYPE_UINT8,
    FM_DTYPE_BOOL,
    FM_DTYPE_COUNT
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

/* ---------------------------------------------------------------------------------------------
 * Graph: tensors and nodes
 *
 * A graph is built once and then read by everything downstream. Tensors and nodes are addressed
 * by dense integer ids; their metadata lives in an arena owned by the graph.
 * ------------------------------------------------------------------------------------------ */

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
    FM_CLASS_CONV = 0,
    FM_CLASS_MATMUL,
    FM_CLASS_NORM,
    FM_CLASS_ACTIVATION,
    FM_CLASS_POOL,
    FM_CLASS_ELEMENTWISE,
    FM_CLASS_REDUCTION,
    FM_CLASS_DATA_MOVEMENT,
    FM_CLASS_EMBEDDING,
    FM_CLASS_ATTENTION,
    FM_CLASS_LOSS,
    FM_CLASS_OTHER,
    FM_CLASS_COUNT
};
FM_API const char *fm_class_name(enum fm_class cls);

/* Every op the cost model knows, in one list from which everything per-op is generated: the
 * enum fm_op below, the op names and classes and the op registry (src/ops/registry.c), and the
 * ONNX frontend's mapping rows (src/frontend/onnx/onnx_map.c). A missing descriptor or mapper
 * fails the build; docs/adding-an-op.md is the recipe. One row per op:
 *
 *   X(ID, desc, "Name", CLASS, "OnnxOp", map, "slots")
 *
 *   ID       the enum value FM_OP_<ID>
 *   desc     its descriptor fm_op_<desc>_desc (shape rule, cost rule, arity), defined in the
 *            family file under src/ops/ that the comment above the rows names
 *   "Name"   the display name in reports
 *   CLASS    FM_CLASS_<CLASS>: how analyses aggregate and which ceiling applies
 *   "OnnxOp" the ONNX op type that maps to it, or NULL when none does
 *   map      how the ONNX frontend maps a node (map_<map> in onnx_map.c); none without ONNX
 *   "slots"  the role of an initializer read by each ONNX input slot, one letter per slot:
 *            P parameter, B buffer (state, not trained), C constant operand (shapes, axes,
 *            indices, masks: no gradient flows), T passed on unchanged in kind (its readers'
 *            roles decide: a slice of a weight is still a weight), x by size (more than one
 *            element: a parameter); a final '*' repeats the last letter, missing letters are x
 *
 * What each op reads from struct fm_attrs is in the comment at the end of its row. */
#define FM_OP_LIST(X)                                                                           \
    /* an op the counter does not know: listed as uncounted (common.c) */                       \
    X(UNKNOWN, unknown, "Unknown", OTHER, NULL, none, "")                                       \
    /* conv.c */                                                                                \
    X(CONV, conv, "Conv", CONV, "Conv", conv, "xPP*")                                           \
    /*   X (N,C,H,W) [or (N,C,L), (N,C,D,H,W)], W (Cout, C/g, kh, kw), B (Cout)? */             \
    X(CONV_TRANSPOSE, conv_transpose, "ConvTranspose", CONV, "ConvTranspose", conv, "xPP*")     \
    /*   X (N,C,H,W), W (C, Cout/g, kh, kw), B (Cout)? */                                       \
    /* matmul.c */                                                                              \
    X(LINEAR, linear, "Linear", MATMUL, NULL, none, "")                                         \
    /*   X (..., K), W (N, K), B (N)?  -> (..., N)  (torch.nn.Linear) */                        \
    X(GEMM, gemm, "Gemm", MATMUL, "Gemm", gemm, "xPP*")                                         \
    /*   A (M,K) [FM_ATTR_TRANS_A], B (K,N) [FM_ATTR_TRANS_B], C? -> (M,N); alpha, beta */      \
    X(MATMUL, matmul, "MatMul", MATMUL, "MatMul", plain, "PP*")                                 \
    /*   A (..., M, K) @ B (..., K, N), numpy broadcasting */                                   \
    /* norm.c */                                                                                \
    X(BATCHNORM, batchnorm, "BatchNorm", NORM, "BatchNormalization", norm, "xPPBB*")            \
    /*   X (N,C,...), scale (C), bias (C), mean (C), var (C); eps, FM_ATTR_INFER_BN */          \
    X(LAYERNORM, layernorm, "LayerNorm", NORM, "LayerNormalization", norm, "xPP*")              \
    /*   X, scale?, bias?; normalizes dims [axis, rank); eps */                                 \
    X(GROUPNORM, groupnorm, "GroupNorm", NORM, "GroupNormalization", norm, "xPP*")              \
    /*   X (N,C,...), scale (C), bias (C); groups, eps */                                       \
    X(INSTANCENORM, instancenorm, "InstanceNorm", NORM, "InstanceNormalization", norm, "xPP*")  \
    /*   X (N,C,...), scale (C), bias (C); eps */                                               \
    /* normalize.c: normalizations without parameters */                                        \
    X(LP_NORM, lp_norm, "LpNorm", NORM, "LpNormalization", attrs, "") /* axis; ints = {p} */    \
    X(MVN, mvn, "MeanVarianceNorm", NORM, "MeanVarianceNormalization", attrs, "")               \
    /*   ints = the axes (ONNX's default 0, 2, 3) */                                            \
    X(LRN, lrn, "LRN", NORM, "LRN", attrs, "") /* ints = {size}; alpha, beta, eps = bias */     \
    /* act.c: one tensor in, one out, per element; Softmax/LogSoftmax per row along axis */     \
    X(RELU, relu, "ReLU", ACTIVATION, "Relu", act, "")                                          \
    X(CLIP, clip, "Clip", ACTIVATION, "Clip", act, "xCC*") /* ReLU6 is Clip(0, 6): lo, hi */    \
    X(LEAKY_RELU, leaky_relu, "LeakyReLU", ACTIVATION, "LeakyRelu", act, "") /* alpha */        \
    X(PRELU, prelu, "PRelu", ACTIVATION, "PRelu", plain, "xP") /* X, slope (broadcast) */       \
    X(SIGMOID, sigmoid, "Sigmoid", ACTIVATION, "Sigmoid", act, "")                              \
    X(TANH, tanh, "Tanh", ACTIVATION, "Tanh", act, "")                                          \
    X(SILU, silu, "SiLU", ACTIVATION, NULL, none, "")                                           \
    X(GELU, gelu, "GELU", ACTIVATION, "Gelu", act, "") /* erf, or tanh: FM_ATTR_GELU_TANH */    \
    X(HARDSWISH, hardswish, "Hardswish", ACTIVATION, "HardSwish", act, "")                      \
    X(HARDSIGMOID, hardsigmoid, "Hardsigmoid", ACTIVATION, "HardSigmoid", act, "")              \
    /*   alpha, beta */                                                                         \
    X(SOFTMAX, softmax, "Softmax", ACTIVATION, "Softmax", softmax, "") /* axis */               \
    X(LOG_SOFTMAX, log_softmax, "LogSoftmax", ACTIVATION, "LogSoftmax", softmax, "")            \
    X(ELU, elu, "ELU", ACTIVATION, "Elu", act, "") /* alpha */                                  \
    X(SELU, selu, "SELU", ACTIVATION, "Selu", act, "") /* alpha, beta = gamma */                \
    X(CELU, celu, "CELU", ACTIVATION, "Celu", act, "") /* alpha */                              \
    X(SOFTPLUS, softplus, "Softplus", ACTIVATION, "Softplus", act, "")                          \
    X(SOFTSIGN, softsign, "Softsign", ACTIVATION, "Softsign", act, "")                          \
    X(MISH, mish, "Mish", ACTIVATION, "Mish", act, "")                                          \
    X(THRESHOLDED_RELU, thresholded_relu, "ThresholdedReLU", ACTIVATION, "ThresholdedRelu",     \
      act, "") /* alpha */                                                                      \
    X(SHRINK, shrink, "Shrink", ACTIVATION, "Shrink", act, "") /* lo = lambd, beta = bias */    \
    X(HARDMAX, hardmax, "Hardmax", ACTIVATION, "Hardmax", softmax, "") /* axis */               \
    /* pool.c: kernel, stride, pad, dilation (*_d: 3-D), FM_ATTR_CEIL_MODE, FM_ATTR_COUNT_PAD;  \
       MaxPool: Y, and optionally its int64 argmax indices (ONNX) */                            \
    X(MAXPOOL, maxpool, "MaxPool", POOL, "MaxPool", pool, "")                                   \
    X(AVGPOOL, avgpool, "AvgPool", POOL, "AveragePool", pool, "")                               \
    X(ADAPTIVE_AVGPOOL, adaptive_avgpool, "AdaptiveAvgPool", POOL, NULL, none, "")              \
    /*   output size (h, w) in out_size */                                                      \
    X(GLOBAL_AVGPOOL, global_avgpool, "GlobalAvgPool", POOL, "GlobalAveragePool", plain, "")    \
    X(GLOBAL_MAXPOOL, global_maxpool, "GlobalMaxPool", POOL, "GlobalMaxPool", plain, "")        \
    X(LPPOOL, lppool, "LpPool", POOL, "LpPool", pool, "") /* as AvgPool; ints = {p} */          \
    X(GLOBAL_LPPOOL, global_lppool, "GlobalLpPool", POOL, "GlobalLpPool", attrs, "") /* {p} */  \
    /* eltwise.c: two tensors, numpy broadcasting */                                            \
    X(ADD, add, "Add", ELEMENTWISE, "Add", plain, "")                                           \
    X(SUB, sub, "Sub", ELEMENTWISE, "Sub", plain, "")                                           \
    X(MUL, mul, "Mul", ELEMENTWISE, "Mul", plain, "")                                           \
    X(DIV, div, "Div", ELEMENTWISE, "Div", plain, "")                                           \
    X(MOD, mod, "Mod", ELEMENTWISE, "Mod", attrs, "xC*") /* ints = {fmod} */                    \
    X(SUM, sum, "Sum", ELEMENTWISE, "Sum", variadic, "") /* 1.. inputs, broadcast */            \
    X(MEAN, mean, "Mean", ELEMENTWISE, "Mean", variadic, "")                                    \
    /* shape.c: data movement, no arithmetic */                                                 \
    X(CONCAT, concat, "Concat", DATA_MOVEMENT, "Concat", concat, "T*") /* axis */               \
    X(FLATTEN, flatten, "Flatten", DATA_MOVEMENT, "Flatten", axis, "T") /* axis */              \
    X(RESHAPE, reshape, "Reshape", DATA_MOVEMENT, "Reshape", reshape, "TC*")                    \
    /*   target in ints (0 = copy, -1 = infer) */                                               \
    X(TRANSPOSE, transpose, "Transpose", DATA_MOVEMENT, "Transpose", transpose, "T")            \
    /*   permutation in ints */                                                                 \
    X(SPLIT, split, "Split", DATA_MOVEMENT, "Split", split, "TC*") /* sizes along axis: ints */ \
    X(IDENTITY, identity, "Identity", DATA_MOVEMENT, "Identity", identity, "T")                 \
    /* dropout.c */                                                                             \
    X(DROPOUT, dropout, "Dropout", ELEMENTWISE, "Dropout", dropout, "xCC*") /* ratio */         \
    /* embedding.c */                                                                           \
    X(EMBEDDING, embedding, "Embedding", EMBEDDING, NULL, none, "")                             \
    /*   ids (...) int, W (V, D) -> (..., D) */                                                 \
    /* attention.c */                                                                           \
    X(ATTENTION, attention, "Attention", ATTENTION, NULL, none, "")                             \
    /*   scaled dot-product: Q (B,H,Sq,D), K (B,H,Sk,D), V (B,H,Sk,Dv), mask?; scale,           \
         FM_ATTR_CAUSAL */                                                                      \
    /* loss.c */                                                                                \
    X(CROSS_ENTROPY, cross_entropy, "CrossEntropy", LOSS, NULL, none, "")                       \
    /*   logits (N, K), labels (N) int -> scalar mean loss */                                   \
    X(MSE_LOSS, mse_loss, "MSELoss", LOSS, NULL, none, "")                                      \
    /*   prediction, target (the same shape, float) -> scalar mean of squared differences */    \
    /* unary.c: elementwise functions of one tensor (Pow: X, exponent broadcast) */             \
    X(ERF, erf, "Erf", ELEMENTWISE, "Erf", plain, "")                                           \
    X(SQRT, sqrt, "Sqrt", ELEMENTWISE, "Sqrt", plain, "")                                       \
    X(RECIPROCAL, reciprocal, "Reciprocal", ELEMENTWISE, "Reciprocal", plain, "")               \
    X(NEG, neg, "Neg", ELEMENTWISE, "Neg", plain, "")                                           \
    X(EXP, exp, "Exp", ELEMENTWISE, "Exp", plain, "")                                           \
    X(LOG, log, "Log", ELEMENTWISE, "Log", plain, "")                                           \
    X(ABS, abs, "Abs", ELEMENTWISE, "Abs", plain, "")                                           \
    X(POW, pow, "Pow", ELEMENTWISE, "Pow", plain, "xC*")                                        \
    /* compare.c: comparisons and logic (bool out, broadcast), selects, Max/Min, Trilu */       \
    X(EQUAL, equal, "Equal", ELEMENTWISE, "Equal", plain, "C*")                                 \
    X(LESS, less, "Less", ELEMENTWISE, "Less", plain, "C*")                                     \
    X(LESS_EQUAL, less_equal, "LessOrEqual", ELEMENTWISE, "LessOrEqual", plain, "C*")           \
    X(GREATER, greater, "Greater", ELEMENTWISE, "Greater", plain, "C*")                         \
    X(GREATER_EQUAL, greater_equal, "GreaterOrEqual", ELEMENTWISE, "GreaterOrEqual", plain,     \
      "C*")                                                                                     \
    X(AND, logical_and, "And", ELEMENTWISE, "And", plain, "C*")                                 \
    X(OR, logical_or, "Or", ELEMENTWISE, "Or", plain, "C*")                                     \
    X(XOR, logical_xor, "Xor", ELEMENTWISE, "Xor", plain, "C*")                                 \
    X(NOT, logical_not, "Not", ELEMENTWISE, "Not", plain, "C*")                                 \
    X(WHERE, where, "Where", ELEMENTWISE, "Where", plain, "C") /* cond, X, Y (broadcast) */     \
    X(MAX, max, "Max", ELEMENTWISE, "Max", variadic, "") /* 1.. inputs, broadcast */            \
    X(MIN, min, "Min", ELEMENTWISE, "Min", variadic, "")                                        \
    X(TRILU, trilu, "Trilu", ELEMENTWISE, "Trilu", int_operand, "xC*")                          \
    /*   X (..., M, N); ints = {k, upper} */                                                    \
    X(ISINF, isinf, "IsInf", ELEMENTWISE, "IsInf", plain, "C*")                                 \
    X(ISNAN, isnan, "IsNaN", ELEMENTWISE, "IsNaN", plain, "C*")                                 \
    X(BITSHIFT, bitshift, "BitShift", ELEMENTWISE, "BitShift", attrs, "C*") /* ints={right} */  \
    /* reduce.c: axes in ints (none = all), FM_ATTR_KEEPDIMS; CumSum along axis */              \
    X(REDUCE_SUM, reduce_sum, "ReduceSum", REDUCTION, "ReduceSum", reduce, "xC*")               \
    X(REDUCE_MEAN, reduce_mean, "ReduceMean", REDUCTION, "ReduceMean", reduce, "xC*")           \
    X(REDUCE_MAX, reduce_max, "ReduceMax", REDUCTION, "ReduceMax", reduce, "xC*")               \
    X(REDUCE_MIN, reduce_min, "ReduceMin", REDUCTION, "ReduceMin", reduce, "xC*")               \
    X(REDUCE_PROD, reduce_prod, "ReduceProd", REDUCTION, "ReduceProd", reduce, "xC*")           \
    X(REDUCE_L2, reduce_l2, "ReduceL2", REDUCTION, "ReduceL2", reduce, "xC*")                   \
    X(REDUCE_SUM_SQUARE, reduce_sum_square, "ReduceSumSquare", REDUCTION, "ReduceSumSquare",    \
      reduce, "xC*")                                                                            \
    X(REDUCE_L1, reduce_l1, "ReduceL1", REDUCTION, "ReduceL1", reduce, "xC*")                   \
    X(REDUCE_LOG_SUM, reduce_log_sum, "ReduceLogSum", REDUCTION, "ReduceLogSum", reduce, "xC*") \
    X(REDUCE_LOG_SUM_EXP, reduce_log_sum_exp, "ReduceLogSumExp", REDUCTION, "ReduceLogSumExp",  \
      reduce, "xC*")                                                                            \
    X(CUMSUM, cumsum, "CumSum", REDUCTION, "CumSum", int_operand, "xC*")                        \
    /* tensor.c: data movement whose integer operands the importer put into ints */             \
    X(GATHER, gather, "Gather", DATA_MOVEMENT, "Gather", gather, "PC*")                         \
    /*   data, indices (int); axis */                                                           \
    X(SLICE, slice, "Slice", DATA_MOVEMENT, "Slice", slice, "TC*")                              \
    /*   X; ints = (start, end, step) for every dim, clamped */                                 \
    X(SQUEEZE, squeeze, "Squeeze", DATA_MOVEMENT, "Squeeze", squeeze, "TC*")                    \
    /*   X; axes to drop in ints */                                                             \
    X(UNSQUEEZE, unsqueeze, "Unsqueeze", DATA_MOVEMENT, "Unsqueeze", squeeze, "TC*")            \
    /*   X; axes of the output to insert in ints */                                             \
    X(EXPAND, expand, "Expand", DATA_MOVEMENT, "Expand", int_operand, "TC*")                    \
    /*   X; target shape in ints (numpy broadcast) */                                           \
    X(TILE, tile, "Tile", DATA_MOVEMENT, "Tile", int_operand, "TC*") /* X; repeats in ints */   \
    X(PAD, pad, "Pad", DATA_MOVEMENT, "Pad", pad, "xC*")                                        \
    /*   X; ints = begin pads for every dim, then end pads */                                   \
    X(RESIZE, resize, "Resize", DATA_MOVEMENT, "Resize", resize, "xC*")                         \
    /*   X; ints = {mode (0 nearest, 1 linear, 2 cubic), out dims} */                           \
    X(CONSTANT_OF_SHAPE, constant_of_shape, "ConstantOfShape", DATA_MOVEMENT,                   \
      "ConstantOfShape", int_operand, "C*")                                                     \
    /*   no inputs; ints = {enum fm_dtype, out dims}; lo = the fill value */                    \
    X(RANGE, range, "Range", DATA_MOVEMENT, "Range", range, "C*")                               \
    /*   no inputs; ints = {length, enum fm_dtype}; lo = start, beta = delta */                 \
    X(CAST, cast, "Cast", DATA_MOVEMENT, "Cast", cast, "T") /* X; ints = {enum fm_dtype} */     \
    /* einsum.c */                                                                              \
    X(EINSUM, einsum, "Einsum", MATMUL, "Einsum", einsum, "P*")                                 \
    /*   1 or 2 operands; ints = the equation as label ids */                                   \
    /* trig.c: trigonometric functions, and the piecewise-constant Floor, Ceil, Round, Sign */  \
    X(SIN, sin, "Sin", ELEMENTWISE, "Sin", plain, "")                                           \
    X(COS, cos, "Cos", ELEMENTWISE, "Cos", plain, "")                                           \
    X(TAN, tan, "Tan", ELEMENTWISE, "Tan", plain, "")                                           \
    X(FLOOR, floor, "Floor", ELEMENTWISE, "Floor", plain, "")                                   \
    X(CEIL, ceil, "Ceil", ELEMENTWISE, "Ceil", plain, "")                                       \
    X(ROUND, round, "Round", ELEMENTWISE, "Round", plain, "")                                   \
    X(SIGN, sign, "Sign", ELEMENTWISE, "Sign", plain, "")                                       \
    X(ASIN, asin, "Asin", ELEMENTWISE, "Asin", plain, "")                                       \
    X(ACOS, acos, "Acos", ELEMENTWISE, "Acos", plain, "")                                       \
    X(ATAN, atan, "Atan", ELEMENTWISE, "Atan", plain, "")                                       \
    X(SINH, sinh, "Sinh", ELEMENTWISE, "Sinh", plain, "")                                       \
    X(COSH, cosh, "Cosh", ELEMENTWISE, "Cosh", plain, "")                                       \
    X(ASINH, asinh, "Asinh", ELEMENTWISE, "Asinh", plain, "")                                   \
    X(ACOSH, acosh, "Acosh", ELEMENTWISE, "Acosh", plain, "")                                   \
    X(ATANH, atanh, "Atanh", ELEMENTWISE, "Atanh", plain, "")                                   \
    /* linalg.c: batched matrices */                                                            \
    X(DET, det, "Det", MATMUL, "Det", plain, "") /* X (..., n, n) -> (...) */                      \
    /* rnn.c: recurrent layers over a sequence, MATMUL (the gate GEMMs dominate): X, W, R, B?,  \
       sequence_lens?, initial_h?, initial_c?, P? -> Y, Y_h?, Y_c?; ints = {hidden_size,        \
       direction 0/1/2 (forward/reverse/bidirectional), layout, linear_before_reset, flags,     \
       activation codes per direction} (src/ops/ops.h), all optional */                         \
    X(LSTM, lstm, "LSTM", MATMUL, "LSTM", rnn, "xPPPCBBP")                                      \
    X(GRU, gru, "GRU", MATMUL, "GRU", rnn, "xPPPCBB")                                           \
    X(RNN, rnn, "RNN", MATMUL, "RNN", rnn, "xPPPCBB")                                              \
    /* quant.c: quantized ops (inference only; integer products are int8 MACs). An OnnxOp      \
       "com.microsoft:Name" is ONNX Runtime's domain (onnx_build.c's ox_op_is) */               \
    X(QUANTIZE_LINEAR, quantize_linear, "QuantizeLinear", ELEMENTWISE, "QuantizeLinear",       \
      quant, "xCC")                                                                             \
    /*   X, scale, zero point?; axis (per-axis scale) */                                        \
    X(DEQUANTIZE_LINEAR, dequantize_linear, "DequantizeLinear", ELEMENTWISE,                    \
      "DequantizeLinear", quant, "xCC") /* X, scale, zero point?; axis */                       \
    X(DYNAMIC_QUANTIZE_LINEAR, dynamic_quantize_linear, "DynamicQuantizeLinear", ELEMENTWISE,   \
      "DynamicQuantizeLinear", msft, "x") /* X -> Y uint8, scale, zero point */                 \
    X(MATMUL_INTEGER, matmul_integer, "MatMulInteger", MATMUL, "MatMulInteger", plain, "xxCC")  \
    /*   A, B (int8/uint8), a_zero_point?, b_zero_point? -> int32 */                            \
    X(CONV_INTEGER, conv_integer, "ConvInteger", CONV, "ConvInteger", qconv, "xxCC")            \
    /*   X, W, x_zero_point?, w_zero_point?; Conv's window attrs */                             \
    X(QLINEAR_MATMUL, qlinear_matmul, "QLinearMatMul", MATMUL, "QLinearMatMul", plain,          \
      "xCCxCCCC") /* a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp */                       \
    X(QLINEAR_CONV, qlinear_conv, "QLinearConv", CONV, "QLinearConv", qconv, "xCCxCCCCC")       \
    /*   x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B? (int32); Conv's attrs */         \
    X(MATMUL_INTEGER_TO_FLOAT, matmul_integer_to_float, "MatMulIntegerToFloat", MATMUL,         \
      "com.microsoft:MatMulIntegerToFloat", plain, "xxCCCCC")                                   \
    /*   A, B, a_scale, b_scale, a_zp?, b_zp?, bias? */                                         \
    X(DYNAMIC_QUANTIZE_MATMUL, dynamic_quantize_matmul, "DynamicQuantizeMatMul", MATMUL,        \
      "com.microsoft:DynamicQuantizeMatMul", plain, "xxCCC") /* A, B, b_scale, b_zp?, bias? */  \
    X(QGEMM, qgemm, "QGemm", MATMUL, "com.microsoft:QGemm", msft, "xCCxCCCCC")                  \
    /*   A, a_scale, a_zp, B, b_scale, b_zp, C?, y_scale?, y_zp?; FM_ATTR_TRANS_A/B */           \
    X(DYNAMIC_QUANTIZE_LSTM, dynamic_quantize_lstm, "DynamicQuantizeLSTM", OTHER,               \
      "com.microsoft:DynamicQuantizeLSTM", rnn, "xxxCCCCC*")                                    \
    /*   LSTM's operands and ints (rnn.c), W and R transposed, then their scales and zps */     \
    /* msft.c: ONNX Runtime's fused float ops (com.microsoft), inference only; num_heads in     \
       groups, epsilon in eps, FM_ATTR_CAUSAL for unidirectional */                             \
    X(FUSED_MATMUL, fused_matmul, "FusedMatMul", MATMUL, "com.microsoft:FusedMatMul", msft,     \
      "PP") /* FM_ATTR_TRANS_A/B, alpha */                                                      \
    X(FAST_GELU, fast_gelu, "FastGelu", ACTIVATION, "com.microsoft:FastGelu", msft, "xP")       \
    X(BIAS_GELU, bias_gelu, "BiasGelu", ACTIVATION, "com.microsoft:BiasGelu", msft, "xP")       \
    X(QUICK_GELU, quick_gelu, "QuickGelu", ACTIVATION, "com.microsoft:QuickGelu", msft, "x")    \
    /*   alpha */                                                                               \
    X(BIAS_ADD, bias_add, "BiasAdd", ELEMENTWISE, "com.microsoft:BiasAdd", msft, "xPx")         \
    X(SKIP_LAYERNORM, skip_layernorm, "SkipLayerNorm", NORM,                                    \
      "com.microsoft:SkipLayerNormalization", msft, "xxPPP") /* x, skip, gamma, beta?, bias? */ \
    X(SKIP_SIMPLIFIED_LAYERNORM, skip_simplified_layernorm, "SkipSimplifiedLayerNorm", NORM,    \
      "com.microsoft:SkipSimplifiedLayerNormalization", msft, "xxPP") /* x, skip, gamma, bias? */ \
    X(SIMPLIFIED_LAYERNORM, simplified_layernorm, "SimplifiedLayerNorm", NORM,                  \
      "SimplifiedLayerNormalization", msft, "xP") /* x, scale; axis -1 */                       \
    X(EMBED_LAYERNORM, embed_layernorm, "EmbedLayerNorm", NORM,                                 \
      "com.microsoft:EmbedLayerNormalization", msft, "CCPPPPPCC")                               \
    /*   ids, segment ids?, word, position, segment?, gamma, beta, mask?, position ids? */      \
    X(MS_ATTENTION, ms_attention, "FusedAttention", ATTENTION, "com.microsoft:Attention", msft, \
      "xPPC*") /* X, W, bias?, mask?, past?; ints = qkv_hidden_sizes (3) */                     \
    X(MULTIHEAD_ATTENTION, multihead_attention, "MultiHeadAttention", ATTENTION,                \
      "com.microsoft:MultiHeadAttention", msft, "xxxPC*") /* Q, K, V, bias?, masks? */          \
    X(ROTARY_EMBEDDING, rotary_embedding, "RotaryEmbedding", ELEMENTWISE,                       \
      "com.microsoft:RotaryEmbedding", msft, "xCCC") /* X, position ids, cos, sin */             \
    X(GROUP_QUERY_ATTENTION, group_query_attention, "GroupQueryAttention", ATTENTION,           \
      "com.microsoft:GroupQueryAttention", msft, "xxxxxCCCC")                                   \
    /*   ints = {kv_num_heads, do_rotary} */                                                    \
    /* index.c: gather and scatter by index tensors; reduction 0 none, 1 add, 2 mul, 3 max,      \
       4 min */                                                                                 \
    X(GATHER_ELEMENTS, gather_elements, "GatherElements", DATA_MOVEMENT, "GatherElements",      \
      index, "xC*") /* data, indices (int, data's rank); axis */                                \
    X(GATHER_ND, gather_nd, "GatherND", DATA_MOVEMENT, "GatherND", index, "xC*")                \
    /*   data, indices (int, (..., k)); ints = {batch_dims} */                                  \
    X(SCATTER_ELEMENTS, scatter_elements, "ScatterElements", DATA_MOVEMENT, "ScatterElements",  \
      index, "xCx") /* data, indices, updates (indices' shape); axis; ints = {reduction} */     \
    X(SCATTER_ND, scatter_nd, "ScatterND", DATA_MOVEMENT, "ScatterND", index, "xCx")            \
    /*   data, indices (..., k), updates; ints = {reduction} */                                 \
    /* loss.c: ONNX's losses, a model's own: input (N, C, d...), labels (N, d...) int,          \
       weights (C)?; ints = {reduction 0 none 1 sum 2 mean, has ignore_index, ignore_index} */  \
    X(SOFTMAX_CE_LOSS, softmax_ce_loss, "SoftmaxCrossEntropyLoss", LOSS,                        \
      "SoftmaxCrossEntropyLoss", onnx_loss, "xCC") /* outputs loss, log_prob? */                \
    X(NLL_LOSS, nll_loss, "NegativeLogLikelihoodLoss", LOSS, "NegativeLogLikelihoodLoss",       \
      onnx_loss, "xCC")                                                                         \
    /* select.c: selection; shapes that depend on values only where those are known */          \
    X(ARGMAX, argmax, "ArgMax", REDUCTION, "ArgMax", select, "C")                               \
    /*   X; axis, FM_ATTR_KEEPDIMS; ints = {select_last_index}; int64 out */                    \
    X(ARGMIN, argmin, "ArgMin", REDUCTION, "ArgMin", select, "C") /* as ArgMax */               \
    X(TOPK, topk, "TopK", REDUCTION, "TopK", select, "xC")                                      \
    /*   X; axis; ints = {k, largest, sorted}; outputs values, indices (int64) */               \
    X(ONEHOT, onehot, "OneHot", DATA_MOVEMENT, "OneHot", select, "CCC")                         \
    /*   indices, values (off, on); axis; ints = {depth} */                                     \
    X(COMPRESS, compress, "Compress", DATA_MOVEMENT, "Compress", select, "xC")                  \
    /*   X; axis; ints = {kept, flatten}: the condition known when read */                      \
    X(NONZERO, nonzero, "NonZero", DATA_MOVEMENT, "NonZero", select, "C")                       \
    /*   X; ints = {count of nonzero elements}: the input known when read */                    \
    /* layout.c: elements moved without arithmetic, and EyeLike */                              \
    X(DEPTH_TO_SPACE, depth_to_space, "DepthToSpace", DATA_MOVEMENT, "DepthToSpace", layout,    \
      "T") /* X (N,C,H,W); ints = {blocksize, mode 0 DCR 1 CRD} */                              \
    X(SPACE_TO_DEPTH, space_to_depth, "SpaceToDepth", DATA_MOVEMENT, "SpaceToDepth", layout,    \
      "T") /* X (N,C,H,W); ints = {blocksize} */                                                \
    X(REVERSE_SEQUENCE, reverse_sequence, "ReverseSequence", DATA_MOVEMENT, "ReverseSequence",  \
      layout, "TC") /* X, sequence_lens (int); ints = {batch_axis, time_axis} */                \
    X(MAX_UNPOOL, max_unpool, "MaxUnpool", DATA_MOVEMENT, "MaxUnpool", layout, "xCC")           \
    /*   X (N,C,...), indices (X's shape); ints = the output dims */                            \
    X(EYELIKE, eyelike, "EyeLike", DATA_MOVEMENT, "EyeLike", layout, "C")                       \
    /*   X (2-D, only its shape read); ints = {enum fm_dtype, k} */                             \
    /* random.c: generators, no gradient through them; ints = {enum fm_dtype, seed given,       \
       seed, then the shape (RandomUniform, RandomNormal) or sample_size (Multinomial)} */      \
    X(RANDOM_UNIFORM, random_uniform, "RandomUniform", ELEMENTWISE, "RandomUniform", random,    \
      "") /* lo = low, hi = high */                                                             \
    X(RANDOM_NORMAL, random_normal, "RandomNormal", ELEMENTWISE, "RandomNormal", random, "")    \
    /*   alpha = mean, beta = scale */                                                          \
    X(RANDOM_UNIFORM_LIKE, random_uniform_like, "RandomUniformLike", ELEMENTWISE,               \
      "RandomUniformLike", random, "C") /* X (only its shape read); lo, hi */                   \
    X(RANDOM_NORMAL_LIKE, random_normal_like, "RandomNormalLike", ELEMENTWISE,                  \
      "RandomNormalLike", random, "C") /* X (only its shape read); alpha, beta */               \
    X(BERNOULLI, bernoulli, "Bernoulli", ELEMENTWISE, "Bernoulli", random, "C")                 \
    /*   P (probabilities) -> 0/1 of P's shape */                                               \
    X(MULTINOMIAL, multinomial, "Multinomial", OTHER, "Multinomial", random, "C")               \
    /*   X (B, C) unnormalized log-probabilities -> (B, sample_size) class indices */
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

/* Attributes of a node. One struct for all ops: each op reads the fields the comment of its row
 * in FM_OP_LIST names and ignores the rest. fm_attrs_init() sets the neutral defaults. */
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
    unsigned flags;             /* FM_ATTR_* */
};
FM_API void fm_attrs_init(struct fm_attrs *attrs);

typedef int32_t fm_tid;   /* tensor id, index into the graph's tensors; -1 = none */
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
    const int64_t *ivalue;   /* small integer contents known at build time (shape vectors), or NULL */
    uint64_t nvalue;         /* number of elements in ivalue (or fvalue) */
    const double *fvalue;    /* small float contents known at build time (a scale, an epsilon,
                                a mask fill), or NULL: measurement backends start from them */
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

/* Creates an empty graph named name (the model's name in reports). */
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
/* Stores every floating-point tensor in one of two types: parameters and buffers (and so their
 * gradients and optimizer state) in parameters, everything else (inputs, activations, float
 * constants) in activations; FM_DTYPE_COUNT leaves that kind as it is. Mixed precision as
 * PyTorch's autocast runs it is (fp16, fp32). Counts do not change, bytes do. Returns how many
 * tensors changed type. */
FM_API size_t fm_graph_set_storage(struct fm_graph *graph, enum fm_dtype activations,
                                   enum fm_dtype parameters);
/* Attaches integer contents to a tensor (copied into the graph's arena). */
FM_API enum fm_status fm_graph_set_ivalue(struct fm_graph *graph, fm_tid id, const int64_t *values,
                                          uint64_t n);
/* Attaches float contents to a tensor (copied into the graph's arena). */
FM_API enum fm_status fm_graph_set_fvalue(struct fm_graph *graph, fm_tid id, const double *values,
                                          uint64_t n);

/* Adds a node. inputs are existing tensor ids; n_out output tensors are created with the given
 * names (NULL names become "<node>:<i>") and written to outputs (may be NULL). If every input
 * shape is known, the op's shape rule runs at once, so builders can read output shapes
 * immediately; otherwise it runs in fm_graph_finalize. A shape the op rejects is FM_ERR_SHAPE
 * with a message naming the node. */
FM_API enum fm_status fm_graph_add_node(struct fm_graph *graph, enum fm_op op, const char *name,
                                        const struct fm_attrs *attrs, const fm_tid *inputs,
                                        int n_in, const char *const *output_names, int n_out,
                                        fm_tid *outputs);
/* Like fm_graph_add_node, but binds outputs to tensors that already exist (activation tensors
 * created with fm_graph_add_tensor_unshaped and not yet produced by any node). Importers use it
 * to add nodes in any order; fm_graph_finalize then orders them and finds cycles. */
FM_API enum fm_status fm_graph_add_node_bound(struct fm_graph *graph, enum fm_op op,
                                              const char *name, const struct fm_attrs *attrs,
                                              const fm_tid *inputs, int n_in, const fm_tid *outputs,
                                              int n_out, fm_nid *out);
/* For FM_OP_UNKNOWN: records the source op's type name (shown in reports as uncounted). */
FM_API enum fm_status fm_graph_set_op_name(struct fm_graph *graph, fm_nid node,
                                           const char *op_name);
/* Marks the graph's outputs (optional: by default, tensors no node consumes). */
FM_API enum fm_status fm_graph_mark_output(struct fm_graph *graph, fm_tid id);

/* Orders the nodes topologically, infers every shape, and validates: unknown tensors, a tensor
 * produced twice, cycles (the message names a node on the cycle), shapes. Idempotent. A graph
 * must be finalized before it is counted or run. */
FM_API enum fm_status fm_graph_finalize(struct fm_graph *graph);
/* Node ids in topological order (valid after finalize; fm_graph_node_count() entries). */
FM_API const fm_nid *fm_graph_topo_order(const struct fm_graph *graph);
/* Whether the gradient of the loss with respect to this tensor is needed in training: true
 * for trainable parameters and for anything computed from them; false for inputs, constants,
 * buffers and what is computed from those alone. Valid after finalize. */
FM_API bool fm_graph_needs_grad(const struct fm_graph *graph, fm_tid id);

/* Op metadata. */
FM_API const char *fm_op_name(enum fm_op op);
FM_API enum fm_class fm_op_class(enum fm_op op);

/* ---------------------------------------------------------------------------------------------
 * Cost model
 *
 * Primitive operations are counted per node and per phase; FLOPs and MACs are derived only when
 * printing: FLOPs = 2*mac + add + mul + div + cmp + special, MACs = mac.
 * ------------------------------------------------------------------------------------------ */

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
/* FLOPs = 2*mac + the other kinds; MACs = mac. Saturate at UINT64_MAX (totals are checked
 * when they are summed, so a saturated value never reaches a report). */
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

/* The cost of one node. */
struct fm_node_cost {
    struct fm_work phase[FM_PHASE_COUNT];
    uint64_t params;             /* elements of parameter tensors this node owns */
    uint64_t trainable_params;
    uint64_t saved_bytes;        /* bytes this node keeps for its backward beyond shared tensors */
    bool counted;                /* false for FM_OP_UNKNOWN */
    bool int8;                   /* its MACs are integer products (int8/uint8 operands, int32
                                    accumulation): the int8 ceiling applies (quantized ops) */
    bool no_grad;                /* an inference kernel (quantized, fused com.microsoft ops):
                                    no backward is defined, none is counted */
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

/* Counts a finalized graph. *out is set to a new result on success (free with
 * fm_counts_free). A count that would overflow fails with a message naming the node. */
FM_API enum fm_status fm_count(struct fm_ctx *ctx, const struct fm_graph *graph,
                               const struct fm_count_opts *opts, struct fm_counts **out);
FM_API void fm_counts_free(struct fm_counts *counts);


/* Memory estimate: params + buffers + grads + optimizer state + activations + input (in
 * inference the activations are the peak live set, and there are no grads or state). */
FM_API enum fm_status fm_counts_training_memory(const struct fm_counts *counts, uint64_t *out);

/* ---------------------------------------------------------------------------------------------
 * Built-in architectures (the torchvision definitions)
 * ------------------------------------------------------------------------------------------ */

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

/* The table of built-in models, in display order. */
FM_API size_t fm_zoo_count(void);
FM_API const struct fm_zoo_entry *fm_zoo_get(size_t index);
FM_API const struct fm_zoo_entry *fm_zoo_find(const char *name);
/* Builds and finalizes a built-in model. An unknown name is FM_ERR_NOT_FOUND with a message
 * that suggests the nearest names; an input too small is FM_ERR_SHAPE naming the layer. */
FM_API enum fm_status fm_zoo_build(struct fm_ctx *ctx, const char *name,
                                   const struct fm_zoo_opts *opts, struct fm_graph **out);
/* Up to n names nearest to name by edit distance, best first; returns how many. */
FM_API size_t fm_zoo_suggest(const char *name, const char **out, size_t n);

/* ---------------------------------------------------------------------------------------------
 * Model loading: a built-in name or a file (ONNX, when the build has it)
 * ------------------------------------------------------------------------------------------ */

/* A symbolic-dimension binding: NAME=1x3x224x224 binds input NAME's shape. */
struct fm_input_binding {
    const char *name;
    struct fm_shape shape;
};

/* A value binding: NAME=V[,V...] gives the contents of an ONNX graph input (a shape, sizes,
 * axes, k, a scale), so that everything computed from it is known at load time. ivalues for an
 * integer or bool input (a float input takes them as numbers), fvalues for a float input;
 * exactly one of them is set, with n values. The input's shape is [n] (a scalar when the file
 * declares rank 0) unless the file or an fm_input_binding gives it; its element count must be n.
 * docs/onnx.md. */
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
    bool batch_given;                    /* --batch was given (binds symbolic batch dims) */
    bool dtype_given;                    /* --dtype was given: the session stores every float
                                            tensor in zoo.dtype, an ONNX file's too, whatever
                                            the precision (fm_session_opts) */
    const struct fm_value_binding *values;   /* --value: contents of graph inputs */
    size_t n_values;
};
FM_API void fm_load_opts_init(struct fm_load_opts *opts);

/* Loads MODEL: a path ending in .onnx (or an existing file) goes to the ONNX frontend, anything
 * else to the built-in table. The graph is finalized. */
FM_API enum fm_status fm_model_load(struct fm_ctx *ctx, const char *model,
                                    const struct fm_load_opts *opts, struct fm_graph **out);

/* The ONNX frontend (FM_ERR_UNSUPPORTED in a build without protobuf-c). */
FM_API enum fm_status fm_onnx_load_file(struct fm_ctx *ctx, const char *path,
                                        const struct fm_load_opts *opts, struct fm_graph **out);
FM_API enum fm_status fm_onnx_load_buffer(struct fm_ctx *ctx, const void *data, size_t size,
                                          const char *name, const struct fm_load_opts *opts,
                                          struct fm_graph **out);
/* Whether the ONNX frontend reads op_type of domain ("", "ai.onnx" or NULL: the default one;
 * "com.microsoft": ONNX Runtime's) as a counted op, evaluates it at load time (Constant, Shape,
 * Size) or replaces it by the nodes it runs (If, Loop, Scan): false for an op it
 * would list as uncounted, and always false in a build without protobuf-c. Opset-specific
 * limits are reported when loading. */
FM_API bool fm_onnx_op_known(const char *domain, const char *op_type);

/* ---------------------------------------------------------------------------------------------
 * The loss policy (src/frontend/loss.c): what a training step minimizes, the same for every
 * frontend and every command
 * ------------------------------------------------------------------------------------------ */

enum fm_loss_kind {
    FM_LOSS_NONE = 0,
    FM_LOSS_MODEL,           /* the model brought its own loss node */
    FM_LOSS_CROSS_ENTROPY,   /* classifier logits (N, K): cross-entropy over K classes */
    FM_LOSS_NEXT_TOKEN,      /* language-model logits (B, S, V) of token ids (B, S): cross-entropy
                                over the vocabulary at every position */
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

/* Gives a training graph its loss: keeps the model's own loss nodes if it has any; else adds,
 * to output (or, with FM_NONE, to every float graph output a trainable parameter reaches), the
 * loss the policy picks: cross-entropy for classifier logits (N, K), next-token cross-entropy
 * for a language model's (B, S, V) logits, mean squared error otherwise. Labels and targets
 * become graph inputs ("labels", "targets"). The graph is finalized again. */
FM_API enum fm_status fm_graph_add_loss(struct fm_graph *graph, fm_tid output,
                                        struct fm_loss_info *info);

/* ---------------------------------------------------------------------------------------------
 * Numbers for people (src/core/format.c): what every table of the library prints with
 * ------------------------------------------------------------------------------------------ */

#define FM_FORMAT_SIZE 32   /* bytes every buf below must hold */
/* 1.23 G, 456 M, 12.3 K, 17: SI suffixes, three significant digits; integers below 1000 as
 * they are. Returns buf. */
FM_API const char *fm_format_si(double v, char *buf);
/* 1.20 GB, 512 B (SI, not binary). */
FM_API const char *fm_format_bytes(double v, char *buf);
/* "3.11 ns", "812 us", "1.78 ms", "4.2 s", "3.5 min", "2.1 h", "3 days". */
FM_API const char *fm_format_time(double seconds, char *buf);
/* A duration as people type it: a number with an optional unit s, ms, us, min, h, d (default
 * s), e.g. "250ms", "0.25", "3.5min". false for anything else, or a negative number. */
FM_API bool fm_duration_parse(const char *text, double *seconds);
/* A FLOP/s figure as people type it: a number with an optional SI prefix and unit, e.g.
 * "312e12", "312T", "312TFLOP/s", "19.5 TFLOPS", "900G". false for anything else. */
FM_API bool fm_flops_parse(const char *text, double *flops);
/* A size in bytes as people type it: a number with an optional unit B, K/KB, M/MB, G/GB, T/TB
 * (SI) or KiB, MiB, GiB, TiB (binary), any case, e.g. "8G", "512MB", "1.5GiB". false for
 * anything else, or a negative number. */
FM_API bool fm_bytes_parse(const char *text, double *bytes);
/* The name of names[0..n) nearest to a mistyped one ("cout" -> "count"), by edit distance
 * (case-insensitive), or NULL when none is close: at most 2 edits, and fewer than half of the
 * typed name's letters. */
FM_API const char *fm_nearest_name(const char *typed, const char *const *names, size_t n);

/* ---------------------------------------------------------------------------------------------
 * Reports of counts (src/report/)
 * ------------------------------------------------------------------------------------------ */

enum fm_format { FM_FORMAT_TABLE = 0, FM_FORMAT_CSV, FM_FORMAT_JSON, FM_FORMAT_COUNT };
FM_API const char *fm_format_name(enum fm_format format);   /* "table", "csv", "json" */
FM_API bool fm_format_parse(const char *s, enum fm_format *out);

struct fm_report_opts {
    enum fm_format format;
    bool per_layer_detail;   /* table: each layer's primitive counts per phase */
    bool by_class;           /* table/csv: aggregate by op class */
    bool layers;             /* table: the per-layer table (default true) */
    bool summary;            /* roofline, predict tables: totals only, no layers */
    const struct fm_loss_info *loss;   /* count: say what the step's loss is (may be NULL) */
    const struct fm_memory_check *memory;   /* count: whether it fits a device (may be NULL) */
    const char *export_note;   /* count: the file looks exported for inference (NULL or "") */
    const struct fm_peer_figures *peers;   /* count: the other counters' figures (fm_peers),
                                              rendered as a section / a "peers" key; NULL: none */
};
FM_API void fm_report_opts_init(struct fm_report_opts *opts);

/* Renders counts of a graph: a table with SI suffixes, or CSV / JSON with exact integers (the
 * JSON follows the contract in docs/json.md). */
FM_API enum fm_status fm_report_count(FILE *f, const struct fm_graph *graph,
                                      const struct fm_counts *c, const struct fm_report_opts *opts);

/* ---------------------------------------------------------------------------------------------
 * Devices (src/hw/): the built-in table, user device files, measured devices
 * ------------------------------------------------------------------------------------------ */

enum fm_precision {
    FM_PREC_FP64 = 0,
    FM_PREC_FP32,
    FM_PREC_TF32,     /* tensor cores only */
    FM_PREC_FP16,
    FM_PREC_BF16,
    FM_PREC_FP8,
    FM_PREC_INT8,
    FM_PREC_COUNT
};
FM_API const char *fm_precision_name(enum fm_precision p);   /* "fp32", "tf32" ... */
FM_API bool fm_precision_parse(const char *s, enum fm_precision *out);
/* A precision as commands take it: a precision's name, or "torch-default" (PyTorch on Ampere+:
 * TF32 convolutions, FP32 matmuls), which sets *torch_default and *out = fp32. */
FM_API bool fm_precision_parse_policy(const char *s, enum fm_precision *out, bool *torch_default);

/* Field bits for fm_device.unverified: a figure the sources could not confirm ('?'). */
enum {
    FM_DEVF_PEAK = 1u << 0,       /* one or more peak figures */
    FM_DEVF_BANDWIDTH = 1u << 1,
    FM_DEVF_MEMORY = 1u << 2,
    FM_DEVF_L2 = 1u << 3,
    FM_DEVF_CLOCK = 1u << 4,
    FM_DEVF_TDP = 1u << 5,
    FM_DEVF_UNITS = 1u << 6,
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
    /* Added with the device table (zero-initialised by older callers, which is "verified"): */
    unsigned unverified_vector;    /* bit (1u << precision): that peak_vector figure is '?' */
    unsigned unverified_tensor;    /* bit (1u << precision): that peak_tensor figure is '?' */
    const char *origin;            /* "built-in" or the file the entry came from (not saved) */
};

/* Whether an op class may run on matrix units (tensor cores): conv, matmul and attention. */
FM_API bool fm_precision_tensor_class(enum fm_class cls);   /* conv, matmul, attention */

/* The ceiling that applies to an op class at a precision: tensor peaks only for conv, matmul
 * and attention (when the device has them), the vector peak of that precision otherwise (for
 * tf32, the fp32 vector peak). 0 if the device has neither. */
FM_API double fm_device_peak(const struct fm_device *dev, enum fm_class cls,
                             enum fm_precision prec);
/* The same, also saying which ceiling it is: the precision of the units that run it (tf32
 * without tensor cores, or fp16 without fp16 units, is fp32 arithmetic) and whether they are
 * matrix units. applied and tensor may be NULL. */
FM_API double fm_device_ceiling(const struct fm_device *dev, enum fm_class cls,
                                enum fm_precision prec, enum fm_precision *applied, bool *tensor);

struct fm_devices;   /* a device table: the built-ins plus any user files */
/* The built-in table plus, when they exist, the file named by $FLOPMETER_DEVICES and
 * $XDG_CONFIG_HOME/flopmeter/devices.json (~/.config/...); user_file (may be NULL) last.
 * Later entries override earlier ones with the same name or alias. */
FM_API enum fm_status fm_devices_load(struct fm_ctx *ctx, const char *user_file,
                                      struct fm_devices **out);
FM_API void fm_devices_free(struct fm_devices *devs);
FM_API size_t fm_devices_count(const struct fm_devices *devs);
FM_API const struct fm_device *fm_devices_get(const struct fm_devices *devs, size_t i);
/* By name or alias (case-insensitive), else by the name the device gives itself as nvidia-smi
 * or torch.cuda.get_device_name() print it ("NVIDIA H100 80GB HBM3": fm_devices_match);
 * FM_ERR_NOT_FOUND with the nearest names as suggestions. */
FM_API enum fm_status fm_devices_find(struct fm_ctx *ctx, const struct fm_devices *devs,
                                      const char *name, const struct fm_device **out);
/* The entry that fits a GPU's own name ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB"): one
 * of whose names or aliases has all its words in that name, the most words winning (so
 * "h100-pcie" beats "h100" for "NVIDIA H100 PCIe"). FM_ERR_NOT_FOUND when none fits. */
FM_API enum fm_status fm_devices_match(struct fm_ctx *ctx, const struct fm_devices *devs,
                                       const char *gpu_name, const struct fm_device **out);
/* What a user should know about how query resolved to dev (fm_devices_find): when query is a
 * short name several entries share ("a100": the 80 GB SXM, and the 40 GB and PCIe ones are
 * a100-40gb, a100-pcie), a note naming the others; when a GPU's own name states a memory size
 * the entry does not have ("Tesla V100-SXM2-16GB"), *named_mem_bytes is that size (else 0) and
 * the note says so. note is "" when there is nothing to say. */
FM_API void fm_device_name_note(const struct fm_devices *devs, const char *query,
                                const struct fm_device *dev, char *note, size_t size,
                                double *named_mem_bytes);
/* Writes one device as a device JSON file that fm_devices_load accepts. */
FM_API enum fm_status fm_device_save_json(struct fm_ctx *ctx, const struct fm_device *dev,
                                          const char *path);

/* Only the built-in table (no environment, no files). */
FM_API enum fm_status fm_devices_builtin(struct fm_ctx *ctx, struct fm_devices **out);
/* Adds (or overrides) the devices of one JSON file / text. An entry whose "name" matches an
 * existing name or alias overrides only the fields it gives; any other entry is a new device.
 * A malformed file is FM_ERR_PARSE with a message naming the file, the entry and the field;
 * FM_ERR_UNSUPPORTED in a build without cJSON. On failure devs is left unchanged. */
FM_API enum fm_status fm_devices_add_file(struct fm_devices *devs, const char *path);
FM_API enum fm_status fm_devices_add_json(struct fm_devices *devs, const char *text, size_t len,
                                          const char *origin);
/* Adds a copy of dev (strings copied), replacing any entry with the same name or alias. */
FM_API enum fm_status fm_devices_add(struct fm_devices *devs, const struct fm_device *dev);
/* Writes devices as one device JSON document (the format fm_devices_add_file reads). */
FM_API enum fm_status fm_devices_write_json(FILE *f, const struct fm_device *const *devs, size_t n);

/* The peak utilization is quoted against, one rule for every command: the conv/matmul ceiling
 * of prec (matrix units when the device has them); torch_default: the TF32 conv ceiling. */
FM_API double fm_device_util_peak(const struct fm_device *dev, enum fm_precision prec,
                                  bool torch_default);
/* Ridge point of a ceiling: peak / bandwidth in FLOP/byte (0 when either is unknown). */
FM_API double fm_device_ridge(const struct fm_device *dev, enum fm_class cls,
                              enum fm_precision prec);
FM_API bool fm_device_has_tensor(const struct fm_device *dev);

/* Where a real run (measure, probe) goes: "cpu", or a CUDA GPU as "cuda", "cuda:N" or "gpu"
 * (src/hw/target.c). A device to run on, not a device-table entry to predict with. */
enum fm_target_kind { FM_TARGET_CPU = 0, FM_TARGET_CUDA, FM_TARGET_COUNT };
struct fm_target {
    enum fm_target_kind kind;
    int ordinal;                   /* CUDA device number (cuda:N); 0 for the CPU */
};
FM_API const char *fm_target_kind_name(enum fm_target_kind kind);   /* "cpu", "cuda" */
/* Parses a device string (NULL is "cpu"): FM_ERR_NOT_FOUND when text is no device string at
 * all (a device-table name, say), FM_ERR_INVALID when it is a malformed one ("cuda:x"). */
FM_API enum fm_status fm_target_parse(struct fm_ctx *ctx, const char *text,
                                      struct fm_target *out);

/* Named links for data parallelism: per-GPU bidirectional bandwidth (bytes/s) and source. */
struct fm_link {
    const char *name;              /* "nvlink3", "pcie4" */
    double bw;
    const char *description;
};
FM_API size_t fm_link_count(void);
FM_API const struct fm_link *fm_link_get(size_t i);
/* case-insensitive; NULL if unknown */
FM_API const struct fm_link *fm_link_find(const char *name);

/* ---------------------------------------------------------------------------------------------
 * Analyses (src/analysis/): roofline and PALEO-style prediction
 * ------------------------------------------------------------------------------------------ */

struct fm_calibration;   /* below */

struct fm_predict_opts {
    const struct fm_device *device;
    enum fm_precision precision;   /* compute precision for conv/matmul/attention */
    bool torch_default;            /* PyTorch on Ampere+: fp32 convs on tf32, fp32 matmuls fp32 */
    double ppp_compute;            /* platform percent of peak, compute (default 0.62, PALEO) */
    double ppp_memory;             /* platform percent of peak, memory (default 0.72) */
    double launch_overhead_us;     /* per kernel (per node and phase that does work) */
    /* Added with the analyses (set by fm_predict_opts_init): */
    double ppp_comm;               /* platform percent of peak, interconnect (default 0.72) */
    /* Added with calibration: NULL for the cold (PALEO/roofline) prediction only. Like device,
     * it must outlive the predictions made with it. */
    const struct fm_calibration *calibration;
};
FM_API void fm_predict_opts_init(struct fm_predict_opts *opts);

/* Per node and phase: seconds for compute and memory, and the two bounds. */
struct fm_phase_time {
    double flops, bytes;
    double peak;                   /* FLOP/s ceiling applied */
    double t_compute, t_memory;    /* with PPP */
    double t_roofline;             /* max(compute, memory) + launch */
    double t_paleo;                /* compute + memory + launch (no overlap) */
    bool memory_bound;             /* at peak: OI below the ridge point */
    /* Added with the analyses: */
    double intensity;              /* flops / bytes (FLOP/byte); 0 when bytes is 0 */
    double attainable;             /* min(peak, intensity x bandwidth) FLOP/s, at 100% of peak */
    double ridge;                  /* peak / bandwidth (FLOP/byte) */
    double t_launch;               /* the launch overhead included in both bounds */
    enum fm_precision precision;   /* the precision of the ceiling that applied (fp16 work on a
                                      device without fp16 units: fp32) */
    bool tensor;                   /* the ceiling is a matrix-unit (tensor core) one */
    /* Added with calibration (opts.calibration set): the fitted time of this node-phase, or
     * t_paleo (the cold rule) where the calibration has no entry for its class and phase. */
    double t_calibrated;
    bool calibrated;               /* t_calibrated came from the calibration, not the cold rule */
};

/* ---- Calibration (src/analysis/calibration.c, docs/calibration.md) ----
 * A device's time model fitted from timings of single layers (`flopmeter calibrate`), per op
 * class, kind and phase:
 *     t = fixed_s + flops x s_per_flop + bytes x s_per_byte
 * (a PALEO sum whose rates and per-kernel overhead are measured, not assumed), fitted by
 * non-negative least squares. Kinds split a class where one rule would not fit: convolutions
 * are "dense", "pointwise" (1x1), "depthwise" or "grouped"; other ops are their op's name
 * ("BatchNorm", "GELU"); "" is the whole class, every sample of the class fitted together. */
#define FM_CALIB_VERSION 2
/* Points of a calibration's eviction curve (fm_calibration.evict_*) at most. */
#define FM_CALIB_EVICT_MAX 16
#define FM_CALIB_KIND_MAX 16
/* An op's own kind ("LayerNorm") is fitted from at least this many samples; with fewer, its
 * samples count for its class only. The convolutions' four kinds have no minimum. */
#define FM_CALIB_MIN_OP_POINTS 4

struct fm_calib_sample {
    enum fm_class cls;
    char kind[FM_CALIB_KIND_MAX];
    enum fm_phase phase;
    double flops, bytes;           /* the layer's counted work in that phase */
    double seconds;                /* its measured time */
    bool cold;                     /* timed with its data flushed from the caches
                                      (fm_measure_opts.cold_cache); false: warm caches */
    const char *from;              /* the network families the sweep shape was taken from,
                                      comma-separated (static text), or NULL for a generic
                                      shape: what --leave-out drops */
};

struct fm_calib_entry {
    enum fm_class cls;
    char kind[FM_CALIB_KIND_MAX];
    enum fm_phase phase;
    double fixed_s, s_per_flop, s_per_byte;
    int points;                    /* samples it was fitted on */
    double rel_rms;                /* RMS of (fitted - measured) / measured over those samples */
    bool cold;                     /* fitted on cold-cache samples (version 2) */
};

struct fm_calibration {
    struct fm_ctx *ctx;
    int version;                   /* FM_CALIB_VERSION */
    char device[128];              /* the device as measure names it ("AMD EPYC 9R14") */
    char backend[16];              /* "cpu" or "cuda" */
    int threads;                   /* CPU threads; 0 on a GPU */
    enum fm_precision precision;
    char date[32];                 /* when it was made, ISO 8601 UTC */
    double peak, bandwidth;        /* the device's probed FLOP/s and bytes/s */
    double step_overhead_s;        /* per training step, outside every layer */
    int rounds;                    /* the sweep's rounds (calibrate --rounds); 0: not recorded */
    char left_out[256];            /* the families calibrate --leave-out dropped ("" none) */
    size_t n;
    struct fm_calib_entry *entries;
    char source[512];              /* the file it was loaded from, for messages ("" when fitted) */
    /* Version 2, the eviction curve: after evict_bytes[i] bytes of other traffic, a layer's
     * data is evict_frac[i] of the way from warm to cold (0: as fast as in cache, 1: as slow
     * as flushed), measured by calibrate; n_evict 0: none (no cold blending). Increasing in
     * bytes, fractions in [0, 1] and non-decreasing. */
    size_t n_evict;
    double evict_bytes[FM_CALIB_EVICT_MAX], evict_frac[FM_CALIB_EVICT_MAX];
};

/* Fits one entry per (class, kind, phase) present in samples (at least one sample each; with
 * fewer than 3, only the terms the samples can tell apart). meta gives the header fields
 * (device, backend, threads, precision, date, peak, bandwidth, step_overhead_s). */
FM_API enum fm_status fm_calibration_fit(struct fm_ctx *ctx, const struct fm_calib_sample *samples,
                                         size_t n, const struct fm_calibration *meta,
                                         struct fm_calibration **out);
FM_API enum fm_status fm_calibration_save(struct fm_ctx *ctx, const struct fm_calibration *c,
                                          const char *path);
/* Reads a file fm_calibration_save wrote; a malformed one is FM_ERR_PARSE naming the line and
 * the field, a build without cJSON FM_ERR_UNSUPPORTED. Save refuses (FM_ERR_INVALID) what load
 * would refuse: no entries, a negative coefficient, an unknown class, kind or phase. */
FM_API enum fm_status fm_calibration_load(struct fm_ctx *ctx, const char *path,
                                          struct fm_calibration **out);
FM_API void fm_calibration_free(struct fm_calibration *c);
/* The kind of node in graph ("depthwise" ...; "" for classes that are not split). */
FM_API void fm_calib_kind(const struct fm_graph *graph, fm_nid node,
                          char kind[FM_CALIB_KIND_MAX]);
/* The fitted seconds of one node-phase that does work: the entry of (cls, kind, phase), else
 * of (cls, "", phase); false when neither exists. */
FM_API bool fm_calibration_time(const struct fm_calibration *c, enum fm_class cls,
                                const char *kind, enum fm_phase phase, double flops,
                                double bytes, double *seconds);
/* The same from the warm (cold false) or the cold-cache entries: with cold, false when the
 * calibration has no cold entry for the node-phase (rules as above). */
FM_API bool fm_calibration_time_at(const struct fm_calibration *c, enum fm_class cls,
                                   const char *kind, enum fm_phase phase, double flops,
                                   double bytes, bool cold, double *seconds);
/* The share of the way from warm to cold a layer's time goes when its data was last touched
 * reuse_bytes of other traffic ago: c's eviction curve, interpolated linearly in
 * log(bytes) between its points (0 below the first, the last fraction beyond the last);
 * 0 without a curve. */
FM_API double fm_calibration_evicted(const struct fm_calibration *c, double reuse_bytes);
/* Whether c was made where it is used: a different device, backend, thread count or precision
 * is FM_ERR_INVALID naming the field and both values, unless force (then a warning through
 * fm_log and FM_OK). Threads are compared only for the "cpu" backend. */
FM_API enum fm_status fm_calibration_check(struct fm_ctx *ctx, const struct fm_calibration *c,
                                           const char *device, const char *backend, int threads,
                                           enum fm_precision precision, bool force);

struct fm_prediction {
    struct fm_ctx *ctx;            /* the context it was made on: fm_prediction_free uses it */
    size_t n_nodes;
    struct fm_phase_time (*nodes)[FM_PHASE_COUNT];   /* [node id][phase] */
    struct fm_phase_time total[FM_PHASE_COUNT];
    double step_roofline_s, step_paleo_s;            /* all phases of the counted mode */
    /* Added with the analyses: */
    enum fm_mode mode;
    struct fm_phase_time step;     /* the whole step as one point: sums of flops, bytes and
                                      times; peak = flops / sum(flops_i / peak_i) */
    size_t kernels;                /* node-phases that do work (each pays the launch overhead) */
    double peak_ref;               /* the ceiling utilization is quoted against: the matrix
                                      ceiling of conv/matmul at the chosen precision */
    double bandwidth;              /* device memory bandwidth used, bytes/s (at 100%) */
    struct fm_predict_opts opts;   /* a copy of the options it was made with */
    /* Added with calibration: node-phases doing work that fell back to the cold rule (no
     * entry of their class and phase); step.t_calibrated includes the per-step overhead. */
    size_t uncalibrated;
    /* Added with the cache-aware calibration (a calibration with an eviction curve and cold
     * entries): the step's traffic between a tensor's uses, taken as half the step's counted
     * bytes, and the eviction curve's fraction there; every node-phase's t_calibrated is
     * warm + cold_share x (cold - warm) with cold_share = evicted x the phase's share of
     * data a step ago (forward 1/2, backward 2/3, optimizer 1). 0 without. */
    double reuse_bytes, evicted;
};

FM_API enum fm_status fm_predict(struct fm_ctx *ctx, const struct fm_graph *graph,
                                 const struct fm_counts *counts, const struct fm_predict_opts *opts,
                                 struct fm_prediction **out);
FM_API void fm_prediction_free(struct fm_prediction *p);

/* The precision a node's phase runs at under opts: the optimizer phase never uses tensor
 * cores; torch_default gives tf32 to convolutions and fp32 to everything else. */
FM_API enum fm_precision fm_predict_precision(const struct fm_predict_opts *opts,
                                              enum fm_class cls);
/* The ceiling of a node's phase: fm_device_peak of its class (optimizer: elementwise). */
FM_API double fm_predict_peak(const struct fm_predict_opts *opts, enum fm_class cls,
                              enum fm_phase phase, bool *tensor);

/* The roofline: attainable FLOP/s = min(peak, intensity x bandwidth) (Williams et al. 2009). */
FM_API double fm_roofline_attainable(double intensity, double peak, double bandwidth);
/* One kernel of flops and bytes on a ceiling: fills every field of out from the formulas
 * t_compute = flops / (peak x ppp_compute), t_memory = bytes / (bandwidth x ppp_memory),
 * t_roofline = max + launch, t_paleo = sum + launch (launch only when the kernel does work). */
FM_API void fm_phase_time_eval(double flops, double bytes, double peak, double bandwidth,
                               const struct fm_predict_opts *opts, struct fm_phase_time *out);

enum fm_bound { FM_BOUND_ROOFLINE = 0, FM_BOUND_PALEO, FM_BOUND_COUNT };
FM_API const char *fm_bound_name(enum fm_bound b);   /* "roofline", "paleo" */

/* Step, epoch and whole-run figures from a prediction, for both bounds. */
struct fm_run_estimate {
    int64_t batch;                   /* per GPU */
    int gpus;                        /* 1, or the data-parallel replicas */
    int64_t global_batch;            /* batch x gpus: the samples of one step */
    uint64_t dataset_size;           /* 0: no epoch figures */
    double epochs;
    uint64_t steps_per_epoch;        /* ceil(dataset_size / global_batch): the last partial
                                        batch is timed as a full one (an upper bound) */
    double step_flops;               /* every counted phase of one step, on every GPU */
    double epoch_flops;              /* per-sample work x dataset_size + optimizer x steps x
                                        gpus (each replica updates its own weights) */
    double total_flops;              /* epoch_flops x epochs */
    double step_s[FM_BOUND_COUNT];   /* training: step time; inference: latency of a batch */
    double samples_per_s[FM_BOUND_COUNT];
    double epoch_s[FM_BOUND_COUNT], total_s[FM_BOUND_COUNT];
    double utilization[FM_BOUND_COUNT];  /* step_flops / (step_s x gpus x peak_ref) */
    /* Added with calibration: the same from the calibrated step (0 without a calibration). */
    double step_calibrated_s, samples_calibrated_per_s, epoch_calibrated_s, total_calibrated_s;
};
/* One GPU: the step is the prediction's. */
FM_API enum fm_status fm_predict_run(struct fm_ctx *ctx, const struct fm_prediction *p,
                                     const struct fm_counts *counts, int64_t batch,
                                     uint64_t dataset_size, double epochs,
                                     struct fm_run_estimate *out);
struct fm_dp_estimate;
/* dp->gpus GPUs of batch samples each: the step is the data-parallel one with the all-reduce
 * overlapped with backward (dp->step_overlap), a step takes batch x gpus samples. */
FM_API enum fm_status fm_predict_run_data_parallel(struct fm_ctx *ctx,
                                                   const struct fm_prediction *p,
                                                   const struct fm_counts *counts, int64_t batch,
                                                   const struct fm_dp_estimate *dp,
                                                   uint64_t dataset_size, double epochs,
                                                   struct fm_run_estimate *out);

/* Utilization = FLOPs / (time x peak), by the methods of Epoch AI's "Estimating training
 * compute" study: theory = 3 x forward FLOPs; counted = forward + backward as counted (the
 * optimizer step is shown separately). In inference both are the forward FLOPs. */
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
/* step_s and/or epoch_s (with dataset_size) must be given (> 0). */
FM_API enum fm_status fm_utilization(struct fm_ctx *ctx, const struct fm_counts *counts,
                                     int64_t batch, double peak, double step_s, double epoch_s,
                                     uint64_t dataset_size, struct fm_utilization *out);

/* Data parallelism: ring all-reduce of the gradients over gpus devices. Each device sends and
 * receives 2 (N-1)/N of the gradient bytes over one direction of its link (half the listed
 * bidirectional bandwidth), at ppp_comm of it (Patarasuk & Yuan 2009; NCCL's "bus bandwidth").
 * Returns seconds; 0 for one GPU. */
FM_API double fm_ring_allreduce_s(double bytes, int gpus, double link_bw_bidir, double ppp_comm);

struct fm_dp_estimate {
    int gpus;
    double link_bw;                      /* bidirectional bytes/s per GPU */
    double grad_bytes;
    double t_allreduce;                  /* one all-reduce of every gradient */
    double step_1[FM_BOUND_COUNT];       /* one GPU */
    double step_serial[FM_BOUND_COUNT];  /* compute, then all-reduce (no overlap) */
    double step_overlap[FM_BOUND_COUNT]; /* each layer's gradients reduced as soon as its
                                            backward is done, while backward goes on */
    double efficiency_serial[FM_BOUND_COUNT];  /* step_1 / step_N (weak scaling) */
    double efficiency_overlap[FM_BOUND_COUNT];
    double samples_per_s_serial[FM_BOUND_COUNT], samples_per_s_overlap[FM_BOUND_COUNT];
    /* Added with calibration: step_overlap from the calibrated times, the per-step overhead
     * included (0 when the prediction has no calibration). */
    double step_overlap_calibrated;
};
/* Weak scaling: every GPU keeps the batch of the prediction. Training counts only. */
FM_API enum fm_status fm_predict_data_parallel(struct fm_ctx *ctx, const struct fm_graph *graph,
                                               const struct fm_counts *counts,
                                               const struct fm_prediction *p, int64_t batch,
                                               int gpus, double link_bw, double ppp_comm,
                                               struct fm_dp_estimate *out);

struct fm_measured;   /* measured points (below, with the profile readers) */

/* The roofline chart as SVG (src/report/svg_roofline.c): ceilings of the precisions in use,
 * their ridge points, one dot per layer (area = share of predicted step time), the network,
 * and measured points when opts->measured gives them. */
struct fm_svg_opts {
    const char *title;                   /* NULL: "<model> on <device>" */
    int width, height;                   /* 0: 960 x 640 */
    enum fm_bound bound;                 /* which predicted time sizes the dots */
    const struct fm_measured *measured;  /* measured points drawn beside the counted ones
                                            (roofline --measured; fm_measured_read); NULL: none */
};
FM_API void fm_svg_opts_init(struct fm_svg_opts *opts);
FM_API enum fm_status fm_svg_roofline(FILE *f, const struct fm_graph *graph,
                                      const struct fm_counts *counts, const struct fm_prediction *p,
                                      const struct fm_svg_opts *opts);

/* ---------------------------------------------------------------------------------------------
 * Measurement (src/backend/): real, timed steps on the CPU (oneDNN) or an NVIDIA GPU (cuDNN)
 * ------------------------------------------------------------------------------------------ */

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
    /* Added with the memory check: bytes the backend's buffers may take (0: no limit). The CPU
     * backend refuses a step whose buffers grow past it while it plans, before anything is
     * written or run. */
    double memory_limit;
    /* Added with the cache-aware calibration: with per_layer, before each timed kernel the CPU
     * backend flushes the memory it reads and writes from every cache level (x86 clflush), so
     * that the kernel finds its data in memory, as a layer of a network whose working set
     * outgrows the caches does. Not on a GPU, nor a CPU without clflush (the measurement's
     * cold_cache says whether it was done). */
    bool cold_cache;
    /* With per_layer, the CPU backend writes a buffer of this many bytes before each timed
     * kernel of the node named flush_node (every kernel when NULL; 0 bytes: none): other
     * traffic of that size between two uses of the node's data, as in a network; calibrate
     * measures its eviction curve with it. */
    double flush_bytes;
    const char *flush_node;
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
    bool cold_cache;               /* every timed kernel ran with its data flushed from the
                                      caches (fm_measure_opts.cold_cache honoured) */
};

/* Which layers of a graph a backend can run, asked before anything is prepared (each backend's
 * supports()): the ops it cannot run, each with its layer count, first layer and reason. Needs
 * no device: a machine without a GPU can check a graph against the CUDA backend. */
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

/* Runs warm-up and timed steps of graph on opts->device. An op the backend cannot run is
 * FM_ERR_UNSUPPORTED naming the node, before anything runs. */
FM_API enum fm_status fm_measure(struct fm_ctx *ctx, const struct fm_graph *graph,
                                 const struct fm_measure_opts *opts, struct fm_measurement **out);
FM_API void fm_measurement_free(struct fm_measurement *m);


/* ---------------------------------------------------------------------------------------------
 * Probes: this machine's or a GPU's own ceilings
 * ------------------------------------------------------------------------------------------ */

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
    /* Added with the CPU probe (zero where a probe does not fill them): */
    char kind[8];                  /* "cpu" or "gpu": set by fm_probe from opts->device */
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
/* A measured device entry from a probe (strings point into out's storage or are static). */
FM_API enum fm_status fm_probe_to_device(const struct fm_probe_result *r, struct fm_device *out);

/* ---- Calibration runs (see the calibration API above) ---- */
/* Times single layers on a device (never whole networks: sweeps of shapes per op class, every
 * phase of a training step) and fits the model to them (src/analysis/calibrate.c). A short
 * probe first gives the file the device's peak and bandwidth. samples_out (may be NULL) gets
 * every timed node-phase, to be freed with fm_dealloc. */
#define FM_CALIBRATE_ROUNDS 3
#define FM_CALIBRATE_MAX_ROUNDS 9
struct fm_calibrate_opts {
    const char *device;            /* "cpu" (default) or "cuda[:N]" */
    int threads;                   /* CPU threads (0 = all) */
    enum fm_precision precision;   /* default fp32 */
    bool quick;                    /* every other shape, fewer steps, one round */
    int rounds;                    /* times each shape is timed, in rounds over the whole sweep;
                                      each layer-phase keeps its median (0: 1 with quick, else
                                      FM_CALIBRATE_ROUNDS; at most FM_CALIBRATE_MAX_ROUNDS) */
    const char *leave_out;         /* comma-separated network families whose layer shapes the
                                      sweep drops (to test accuracy on networks the calibration
                                      never saw); NULL: none. A family no shape is taken from
                                      is an error naming those that are. */
    fm_progress_fn progress;       /* "<class>: layers", once per shape */
    void *progress_user;
    /* Added with the cache-aware calibration: skip the cold-cache round and the eviction
     * curve (a version 1 model: every layer as warm as in the sweep). */
    bool warm_only;
};
FM_API void fm_calibrate_opts_init(struct fm_calibrate_opts *opts);
/* Reads the samples CSV calibrate --samples writes (header class,kind,phase,cache,flops,bytes,
 * seconds[,families]), so that a fit can be re-made where the device is not (a GPU's, say):
 * fm_calibration_fit on them with the original file's header. Samples of shapes taken from a
 * family in leave_out (comma-separated; NULL or "": none) are dropped and counted in *dropped;
 * a family no sample is taken from is FM_ERR_INVALID naming those that are. A malformed line
 * is FM_ERR_PARSE naming the file, the line and the field. *out (free with fm_dealloc) holds
 * *n samples, each with from NULL. */
FM_API enum fm_status fm_calib_samples_load(struct fm_ctx *ctx, const char *path,
                                            const char *leave_out, struct fm_calib_sample **out,
                                            size_t *n, size_t *dropped);
FM_API enum fm_status fm_calibrate(struct fm_ctx *ctx, const struct fm_calibrate_opts *opts,
                                   struct fm_calibration **out,
                                   struct fm_calib_sample **samples_out, size_t *n_samples_out);


/* ---- Where a measured step's time goes (src/analysis/breakdown.c) ----
 * Against the ideal step (every FLOP at the peak), each timed layer phase splits exactly into
 * its ideal time, the memory-bound part (bytes / bandwidth beyond FLOPs / peak), the per-kernel
 * overhead a calibration fitted (0 without one) and the rest, below the ceilings; the step's
 * time beyond its layers is the per-step overhead. By op class and for the layers that lose
 * the most. */
enum { FM_LOSS_IDEAL = 0, FM_LOSS_MEMORY, FM_LOSS_OVERHEAD, FM_LOSS_BELOW, FM_LOSS_PARTS };
#define FM_LOSS_TOP 5
struct fm_time_loss {
    double peak, bandwidth;        /* the ceilings it is measured against */
    double step_s, layers_s;       /* the measured step; the sum of its timed layer phases */
    double parts[FM_LOSS_PARTS];   /* seconds, summed over layer phases (sum = layers_s) */
    double step_overhead_s;        /* step_s - layers_s (not below 0) */
    double by_class[FM_CLASS_COUNT][FM_LOSS_PARTS];
    double class_time_s[FM_CLASS_COUNT];
    struct {
        fm_nid node;
        double lost_s;             /* memory + overhead + below-peak time of the layer */
    } top[FM_LOSS_TOP];
    int n_top;
};
FM_API enum fm_status fm_time_loss(struct fm_ctx *ctx, const struct fm_graph *graph,
                                   const struct fm_counts *counts,
                                   const struct fm_measurement *m, double peak, double bandwidth,
                                   const struct fm_calibration *cal, struct fm_time_loss *out);

/* ---------------------------------------------------------------------------------------------
 * The session (src/analysis/session.c): what every command resolves, in one call
 *
 * A command is a task; the session loads the model (with the loss policy for training), counts
 * it, resolves the device, the precision and the peak utilization is quoted against, and does
 * what the task asks: a prediction, a utilization, a real run. Every figure the CLI prints is in
 * it, and src/report renders it.
 * ------------------------------------------------------------------------------------------ */

enum fm_task {
    FM_TASK_WORK = 0,      /* count: the work of a step */
    FM_TASK_ROOFLINE,      /* the work placed on a device's roofline */
    FM_TASK_PREDICT,       /* predicted step, epoch and training time (data parallelism too) */
    FM_TASK_UTILIZATION,   /* utilization from a time the user measured */
    FM_TASK_MEASURE,       /* a real, timed run on a backend, next to the prediction */
    FM_TASK_COUNT
};
FM_API const char *fm_task_name(enum fm_task task);   /* "count", "roofline", ... */

/* Whether a step fits a device's memory: fm_counts_training_memory (weights, buffers, gradients,
 * optimizer state, activations kept for backward, the input; in inference the peak live
 * activations) against the device's memory size. The estimate leaves out the CUDA context,
 * library workspaces and the allocator's slack, so a step that fits by a few percent may not. */
struct fm_memory_check {
    bool checked;                /* false: no device, or its memory size is unknown */
    enum fm_mode mode;
    int64_t batch;               /* per GPU */
    int gpus;                    /* each GPU holds a replica and its own batch */
    uint64_t needed_bytes;       /* per GPU */
    double device_bytes;
    char device[128];
    bool fits;
    int64_t max_batch;           /* the largest batch per GPU that fits (counted, not
                                    extrapolated); 0: not even one sample; -1: unknown (the
                                    model's batch could not be changed) */
};

struct fm_session_opts {
    enum fm_task task;
    const char *model;             /* a built-in name or an .onnx file */
    struct fm_load_opts load;      /* batch, input size, classes, storage dtype, bindings */
    struct fm_count_opts count;    /* mode (train/infer) and optimizer */
    const char *loss_on;           /* training: the output (a tensor name) the loss is added to;
                                      NULL: the loss policy's choice, one loss per output */
    /* The device. roofline/predict/utilization: a device-table name or alias, a name as
     * nvidia-smi prints it, "cpu" (a short probe of this machine) or "cuda[:N]" (the GPU,
     * probed and matched to the table by its name). measure: where to run, "cpu" or
     * "cuda[:N]" (NULL: cpu). */
    const char *device;
    const char *devices_file;      /* more devices (docs/devices.md); NULL: none */
    const char *spec;              /* measure: the table entry for the peak and the prediction */
    enum fm_precision precision;   /* used when precision_given (measure: always); else the
                                      storage dtype's */
    bool precision_given;
    bool torch_default;            /* PyTorch on Ampere+: TF32 convolutions, FP32 matmuls */
    struct fm_predict_opts predict;   /* PPPs and launch overhead; the session sets the rest */
    uint64_t dataset_size;         /* predict, utilization: samples per epoch (0: none) */
    double epochs;                 /* predict: epochs of the run (default 1) */
    int gpus;                      /* predict: data parallelism (default 1) */
    const char *interconnect;      /* predict: a named link (fm_link_find); NULL: the device's */
    double peak;                   /* > 0: FLOP/s to quote utilization against, not the rule */
    double step_s, epoch_s;        /* utilization: the measured step and/or epoch time */
    struct fm_measure_opts run;    /* measure: warm-up, steps, threads, seed ... (the session
                                      sets device, mode and precision) */
    uint64_t epoch_samples;        /* measure: also time an epoch of this many samples */
    double memory_cap;             /* measure: bytes a step may take (0: the memory this machine
                                      has free, MemAvailable) */
    bool dry_run;                  /* measure: resolve and check everything, run nothing */
    fm_progress_fn progress;       /* probes and runs report here ("probe: ...", "steps: ...") */
    void *progress_user;
    /* Added with calibration: predict.calibration made on another device, backend, thread
     * count or precision is refused unless this is set. */
    bool force_calibration;
};
FM_API void fm_session_opts_init(struct fm_session_opts *opts, enum fm_task task);

struct fm_session {
    struct fm_ctx *ctx;
    struct fm_session_opts opts;      /* a copy of the options */
    struct fm_graph *graph;
    struct fm_loss_info loss;         /* the loss of a training step, and where it came from */
    struct fm_counts *counts;
    struct fm_devices *devices;       /* the table, when one was needed */
    const struct fm_device *device;   /* the device's figures (NULL: none) */
    char device_how[192];             /* how it was found: "the device table", "--spec",
                                         "matched from the GPU's name '...'", "a short probe ..." */
    struct fm_probe_result *probe;    /* the probe behind the device, if one ran */
    struct fm_device probed;          /* the probe's figures as a device */
    struct fm_device named;           /* a table entry with the memory a GPU's name states */
    char named_name[160];
    char device_note[512];            /* what the user should know about the name's match */
    int64_t batch;                    /* the batch the graph runs (fm_graph_batch): --batch, or
                                         what --input NAME=DIMS bound */
    struct fm_memory_check memory;    /* count with a device, roofline, predict */
    enum fm_dtype storage_activations;   /* the float types the graph was counted in */
    enum fm_dtype storage_parameters;
    char storage_how[160];            /* why: "--dtype", "mixed precision ...", "the file's" */
    char export_note[512];            /* a training step of a file that looks exported for
                                         inference: what its count leaves out ("" if not) */
    enum fm_precision precision;      /* the compute precision in use */
    bool torch_default;
    double peak;                      /* FLOP/s utilization is quoted against; 0: unknown */
    char peak_source[320];            /* where it comes from, in words */
    struct fm_prediction *prediction; /* roofline, predict; measure when a device is known */
    struct fm_run_estimate run;       /* predict: with --gpus N, the data-parallel run */
    struct fm_run_estimate run_1gpu;  /* predict: the same run on one GPU */
    bool have_run;
    struct fm_dp_estimate dp;         /* predict --gpus N */
    bool have_dp;
    char link_name[64];
    struct fm_utilization util;       /* utilization; measure when the peak is known */
    bool have_util;
    struct fm_backend_check check;    /* measure: what the backend can run of the graph */
    struct fm_measurement *measurement;   /* measure: the timed steps (NULL in a dry run) */
    struct fm_measurement *epoch;         /* measure --epoch-samples: the epoch's steps */
    uint64_t epoch_steps;
    double epoch_s;
    bool epoch_running;               /* internal: which run reports progress */
    struct fm_time_loss time_loss;    /* measure: where the step's time goes, when the device's
                                         peak and bandwidth are known and layers were timed */
    bool have_time_loss;
};

/* Resolves and runs a task. A bad option (an unknown device, an impossible value) is
 * FM_ERR_INVALID with a message saying what to give instead; *out is NULL on failure. */
FM_API enum fm_status fm_session_run(struct fm_ctx *ctx, const struct fm_session_opts *opts,
                                     struct fm_session **out);
FM_API void fm_session_free(struct fm_session *session);
/* "torch-default" or the precision's name. */
FM_API const char *fm_session_precision_label(const struct fm_session *session);

/* Renderers of a session and of the other results, shaped like fm_report_count: a table for
 * people, CSV and JSON for programs (docs/ says what each column and key holds). Each returns
 * FM_ERR_IO when writing failed, FM_ERR_INVALID when the session lacks what it renders. */
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

/* ---------------------------------------------------------------------------------------------
 * Peers (src/analysis/peers.c): what the other counters would print for a graph
 *
 * Each figure is the exact integer the tool returns for the model, in the tool's own unit,
 * reproduced from the graph (its nodes, attributes and shapes) and the per-node counts by
 * per-op rules taken from the tools' source (docs/counting.md, section 4). Every peer counts the
 * forward pass in evaluation mode at the graph's batch, except FlopCounterMode's backward
 * figure (forward + backward as its rules count them, the network input needing no gradient).
 * Loss nodes are left out: the peers never see a loss. tests/data/peers holds what the real
 * tools print for every built-in, and tests/test_peers.c checks these figures against them.
 * ------------------------------------------------------------------------------------------ */

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
/* The JSON key: "fvcore", "ptflops", "ptflops_aten", "thop", "pthflops", "flop_counter_fwd",
 * "flop_counter_bwd", "torchvision". */
FM_API const char *fm_peer_key(enum fm_peer peer);
/* The tool's name for people: "fvcore FlopCountAnalysis", "ptflops (pytorch backend)", ... */
FM_API const char *fm_peer_label(enum fm_peer peer);

struct fm_peer_figure {
    bool computable;      /* false: the tool's figure cannot be told from this graph (note) */
    uint64_t value;       /* the tool's exact figure (0 when not computable) */
    const char *unit;     /* the tool's unit: "MACs" or "FLOPs" (static) */
    char note[320];       /* one line: what the tool leaves out or adds relative to flopmeter's
                             forward counts, or, when not computable, why */
};

struct fm_peer_figures {
    struct fm_peer_figure peer[FM_PEER_COUNT];
    int64_t batch;              /* the batch the figures are at (the graph's) */
    bool builtin;               /* the graph is a built-in architecture, node for node */
    char published[16];         /* torchvision's published GFLOPS for the built-in at batch 1 and
                                   its default input ("1.814"); "" otherwise */
    char basis[256];            /* what was counted, in words (the mode, the batch, the loss
                                   left out, how layers were read as PyTorch modules) */
};

/* Computes every peer's figure for a finalized graph and its counts (of either mode: the
 * peers read only what both modes count alike, the conv, matmul and attention MACs, and the
 * shapes). A peer that does not handle an op of the graph, or whose figure depends on how the
 * model was written in Python where the graph does not say, is not computable, with the reason
 * in its note. FM_ERR_OVERFLOW when a figure does not fit in 64 bits. */
FM_API enum fm_status fm_peers(struct fm_ctx *ctx, const struct fm_graph *graph,
                               const struct fm_counts *counts, struct fm_peer_figures *out);

/* ---------------------------------------------------------------------------------------------
 * Profiles from other tools (src/frontend/profile/: the readers; src/analysis/: matching them
 * to a model's layers; src/report/: their renderers). Measured data, read and checked against
 * flopmeter's exact counts (docs/profiles.md).
 * ------------------------------------------------------------------------------------------ */

/* -- Nsight Compute (`ncu --csv`) and Nsight Systems (`nsys stats --format csv`) -- */

/* One figure read from a profile. A figure whose metrics the file lacks is not known (reported
 * as missing, never as 0). Counts read as written are exact integers; a count the file gives
 * only as a rate is rate x time (derived, not exact): a per-second or per-cycle metric is a
 * rate and is never summed as a count. */
struct fm_prof_figure {
    bool known;        /* the file had the metrics the figure takes */
    bool exact;        /* count holds the exact integer (FLOPs, instructions, bytes) */
    bool derived;      /* computed from a rate times the kernel's time or cycles */
    uint64_t count;    /* the exact integer when exact */
    double value;      /* the figure as a double: a count, or seconds for a time */
};

enum fm_ncu_prec { FM_NCU_FP64 = 0, FM_NCU_FP32, FM_NCU_FP16, FM_NCU_PREC_COUNT };
FM_API const char *fm_ncu_prec_name(enum fm_ncu_prec p);   /* "fp64", "fp32", "fp16" */

/* What a kernel (or a group of kernels, or the file) did, by the counters. */
struct fm_ncu_figures {
    /* FLOPs per precision: add + mul + 2 x fma thread instructions executed with the predicate
     * on (sm(sp)__sass_thread_inst_executed_op_{d,f,h}{add,mul,fma}_pred_on.sum; ncu's derived
     * ..._ffma_pred_on_x2 is taken as already doubled). FLOPs of the FP units only. */
    struct fm_prof_figure flops[FM_NCU_PREC_COUNT];
    struct fm_prof_figure tensor_flops;  /* tensor-pipe operations from op counters
                                            (sm__ops_path_tensor_*.sum) only; never guessed */
    struct fm_prof_figure tensor_inst;   /* tensor-pipe warp instructions
                                            (sm(sp)__inst_executed_pipe_tensor.sum): their FLOPs
                                            depend on the instruction's shape and are unknown */
    struct fm_prof_figure dram_bytes;    /* dram__bytes.sum, or dram__bytes_read + _write */
    struct fm_prof_figure time_s;        /* gpu__time_duration.sum, else cycles_elapsed.avg /
                                            cycles_elapsed.avg.per_second (seconds) */
};

/* One profiled kernel launch. */
struct fm_ncu_kernel {
    uint64_t id;                 /* ncu's "ID" */
    const char *name;            /* "Kernel Name" */
    const char *nvtx;            /* the innermost NVTX range around it ("" when none) */
    const char *nvtx_stack;      /* every enclosing range, outermost first, " > " between */
    int line;                    /* the line of its (first) row in the file */
    struct fm_ncu_figures fig;
};

/* Kernels under one innermost NVTX range, in the order the ranges first appear. */
struct fm_ncu_group {
    const char *nvtx;
    size_t kernels;
    struct fm_ncu_figures fig;   /* summed; a figure is known only when every kernel's is */
};

struct fm_ncu_profile {
    struct fm_ctx *ctx;
    const char *source;          /* the file's name */
    bool raw_page;               /* `--page raw` (one row per kernel); false: the details form */
    bool has_nvtx;               /* the file has NVTX columns (`ncu --nvtx`) */
    size_t n_kernels;
    struct fm_ncu_kernel *kernels;
    struct fm_ncu_figures totals;   /* summed; a total is known only when every kernel's is */
    size_t n_groups;
    struct fm_ncu_group *groups;    /* only when the file has NVTX ranges */
    char notes[1024];            /* what is missing and what was derived, in words (free text) */
};

/* Reads `ncu --csv` output: the details form (one row per kernel and metric: ...,"Metric
 * Name","Metric Unit","Metric Value") or the raw page (`--page raw`: a header of metric names,
 * a row of units, a row per kernel). Lines before the header (==PROF== lines, the program's
 * own output) are skipped; thousands separators and scaled units are read; any subset of
 * metrics is accepted. FM_ERR_PARSE with the file, line and column for a file that is not
 * ncu's CSV, a truncated file, a metric flopmeter uses in a unit it does not know, or a file
 * with no kernels. Free with fm_ncu_profile_free. */
FM_API enum fm_status fm_ncu_read_file(struct fm_ctx *ctx, const char *path,
                                       struct fm_ncu_profile **out);
FM_API enum fm_status fm_ncu_read_buffer(struct fm_ctx *ctx, const char *data, size_t len,
                                         const char *name, struct fm_ncu_profile **out);
FM_API void fm_ncu_profile_free(struct fm_ncu_profile *p);

/* The counters beside flopmeter's counts, one row per layer and phase (src/analysis). */
struct fm_ncu_match_row {
    const char *layer;           /* the node's name, "optimizer", or "(outside any layer)" */
    fm_nid node;                 /* FM_NONE for the optimizer and for kernels outside layers */
    enum fm_phase phase;         /* FM_PHASE_COUNT for kernels outside layers */
    size_t kernels;
    bool counted;                /* flopmeter counts this row (false: outside any layer) */
    uint64_t counted_flops;      /* flopmeter's FLOPs (2 x MAC + other ops) of the node's phase */
    uint64_t counted_bytes;      /* its bytes read + written (unfused, one kernel per op) */
    struct fm_ncu_figures measured;
    double flops_ratio;          /* counter FLOPs / counted (NaN when either is unknown or 0) */
    double bytes_ratio;          /* DRAM bytes / counted bytes (NaN likewise) */
    char cause[320];             /* the likely cause of the difference, in words */
};

struct fm_ncu_match {
    struct fm_ctx *ctx;
    bool by_nvtx;                /* kernels were matched by flopmeter's own NVTX ranges */
    size_t n_rows;
    struct fm_ncu_match_row *rows;
    uint64_t step_counted_flops; /* the whole step as counted (every phase) */
    uint64_t step_counted_bytes;
    struct fm_ncu_figures step_measured;   /* the whole file */
    double step_flops_ratio;     /* NaN when unknown */
    char method[640];            /* how kernels were matched to layers, or why they were not */
};

/* Matches a profile's kernels to a counted graph's layers: by the NVTX ranges flopmeter's CUDA
 * backend pushes ("<layer> fwd", "<layer> bwd_data", "<layer> bwd_weight", "optimizer SGD");
 * kernels under other ranges (or none) are outside any layer. Without such ranges no kernel
 * is matched (kernel names do not name layers) and only the whole step is compared. Free
 * with fm_ncu_match_free. */
FM_API enum fm_status fm_ncu_match(struct fm_ctx *ctx, const struct fm_ncu_profile *p,
                                   const struct fm_graph *graph, const struct fm_counts *counts,
                                   struct fm_ncu_match **out);
FM_API void fm_ncu_match_free(struct fm_ncu_match *m);

/* Renders a profile: per kernel and NVTX range FLOPs per precision, DRAM bytes, time and the
 * achieved rates; with m, the layers beside flopmeter's counts; with dev, % of its peaks.
 * The JSON follows docs/json.md. m and dev may be NULL. */
FM_API enum fm_status fm_report_ncu(FILE *f, const struct fm_ncu_profile *p,
                                    const struct fm_ncu_match *m, const struct fm_device *dev,
                                    const struct fm_report_opts *opts);

/* KERNELS: cuda_gpu_kern_sum; NVTX: nvtx_sum (the ranges' CPU-side time); NVTX_GPU:
 * nvtx_gpu_proj_sum (the ranges projected onto the GPU); NVTX_KERNELS: nvtx_kern_sum (kernels
 * grouped by the NVTX range that launched them). */
enum fm_nsys_kind {
    FM_NSYS_KERNELS = 0,
    FM_NSYS_NVTX,
    FM_NSYS_NVTX_GPU,
    FM_NSYS_NVTX_KERNELS,
    FM_NSYS_KIND_COUNT
};
/* "kernels", "nvtx", "nvtx_gpu", "nvtx_kernels" */
FM_API const char *fm_nsys_kind_name(enum fm_nsys_kind k);

/* One row of an `nsys stats` summary: a kernel, or an NVTX range. Times in seconds; a column
 * the file lacks is NaN. */
struct fm_nsys_row {
    const char *name;            /* "Name" (kernel) or "Range" (NVTX) */
    const char *style;           /* NVTX "Style" (PushPop, StartEnd); "" when absent */
    double time_pct;             /* "Time (%)" */
    double total_s;              /* "Total Time" */
    uint64_t instances;          /* "Instances" (older reports: "Calls") */
    double avg_s, med_s, min_s, max_s, stddev_s;
    int line;
    /* nvtx_gpu_proj_sum: total_s, avg_s ... are the projected (GPU) times ("Total Proj Time",
     * "Proj Avg" ...), instances the "Range Instances" */
    double range_time_s;         /* "Total Range Time": the ranges' CPU-side time */
    uint64_t gpu_ops;            /* "Total GPU Ops" (valid when gpu_ops_known) */
    bool gpu_ops_known;
    double avg_gpu_ops;          /* "Avg GPU Ops" */
    double avg_level;            /* "Avg Range Lvl": 0 for an outermost range */
    double avg_children;         /* "Avg Num Child" */
    /* nvtx_kern_sum: one row per range and kernel; name is the range ("" for kernels launched
     * outside any range), total_s ... the kernel's execution times, instances "Kern Inst" */
    const char *kernel;          /* "Kernel Name"; "" in the other reports */
    uint64_t range_instances;    /* "NVTX Inst": range instances that launched this kernel */
    int64_t pid, tid;            /* "PID", "TID"; -1 when absent */
};

/* GPU time per NVTX range (nvtx_gpu_proj_sum, nvtx_kern_sum), one per range name and style. */
struct fm_nsys_range {
    const char *name, *style;    /* the rows' (not copies) */
    double gpu_s;                /* nvtx_gpu_proj_sum: Total Proj Time; nvtx_kern_sum: its
                                  * kernels' execution times added */
    uint64_t gpu_ops;            /* GPU operations (proj) or kernel instances (kern) */
    bool gpu_ops_known;
    uint64_t instances;          /* proj: Range Instances; kern: the largest NVTX Inst of its
                                  * rows (a lower bound) */
    double range_time_s;         /* proj: Total Range Time (CPU side); kern: NaN */
    size_t rows;                 /* the file's rows it adds up (kern: one per kernel name,
                                  * process and thread) */
};

struct fm_nsys_summary {
    struct fm_ctx *ctx;
    const char *source;
    enum fm_nsys_kind kind;
    char report[32];             /* "cuda_gpu_kern_sum", "gpukernsum", "nvtx_sum", "nvtxsum" */
    size_t n_rows;
    struct fm_nsys_row *rows;
    double total_s;              /* the rows' total times added */
    uint64_t instances;
    /* nvtx_gpu_proj_sum and nvtx_kern_sum only (else 0 / NULL / NaN) */
    size_t n_ranges;
    struct fm_nsys_range *ranges;
    double top_level_s;          /* proj: Total Proj Time of the rows with Avg Range Lvl 0 */
    uint64_t gpu_ops;            /* the rows' GPU ops (proj) or kernel instances (kern) added */
    bool gpu_ops_known;
};

/* Reads one summary `nsys stats --format csv` writes: the CUDA kernel summary
 * (cuda_gpu_kern_sum; older gpukernsum), the NVTX range summary (nvtx_sum; older nvtxsum,
 * nvtxppsum, nvtx_pushpop_sum), the NVTX GPU projection summary (nvtx_gpu_proj_sum) or the NVTX
 * range kernel summary (nvtx_kern_sum; older nvtxkernsum), told apart by its header; lines
 * before the header are skipped. Another report
 * (API calls, memory operations) or another tool's CSV is FM_ERR_PARSE with line and column.
 * Free with fm_nsys_summary_free. */
FM_API enum fm_status fm_nsys_read_file(struct fm_ctx *ctx, const char *path,
                                        struct fm_nsys_summary **out);
FM_API enum fm_status fm_nsys_read_buffer(struct fm_ctx *ctx, const char *data, size_t len,
                                          const char *name, struct fm_nsys_summary **out);
FM_API void fm_nsys_summary_free(struct fm_nsys_summary *s);
FM_API enum fm_status fm_report_nsys(FILE *f, const struct fm_nsys_summary *s,
                                     const struct fm_report_opts *opts);

/* -- PyTorch profiler traces (`export_chrome_trace`) -- */

/* A PyTorch profiler trace (src/frontend/profile/trace.c), in either form export_chrome_trace
 * writes: the legacy profiler's bare list [{...}, ...] (also what torch.profiler writes when
 * PyTorch was built without Kineto) and Kineto's {"traceEvents": [...]}. Read: the steps
 * (ProfilerStep#N annotations), the time of every op and op class in them, GPU kernel time
 * where kernels were recorded, and the FLOPs the profiler recorded (with_flops=True, Kineto
 * only), each op's once. Times are seconds; the trace's own clock is microseconds. */

/* The classes a trace's time is split into: flopmeter's op classes, then the optimizer (in a
 * count the optimizer is a phase; in a trace it is the ops under Optimizer.step/zero_grad). */
#define FM_TRACE_OPTIMIZER ((int)FM_CLASS_COUNT)
#define FM_TRACE_CLASSES ((int)FM_CLASS_COUNT + 1)
FM_API const char *fm_trace_class_name(int cls);   /* fm_class_name, or "optimizer" */
/* The class of a profiler event's name: "aten::conv2d" and "ConvolutionBackward0" are conv,
 * "aten::addmm" matmul, "aten::native_batch_norm" norm ...; FM_CLASS_OTHER when unknown. */
FM_API int fm_trace_op_class(const char *name);

/* Where an event ran: the forward pass; backward (inside an autograd node, or on the autograd
 * engine's thread); the optimizer (inside an Optimizer.* annotation). */
enum fm_trace_phase { FM_TRACE_FWD = 0, FM_TRACE_BWD, FM_TRACE_OPT, FM_TRACE_PHASE_COUNT };
FM_API const char *fm_trace_phase_name(enum fm_trace_phase p);   /* "fwd", "bwd", "optimizer" */

enum fm_trace_form { FM_TRACE_LEGACY = 0, FM_TRACE_KINETO };

struct fm_trace_opts {
    const char *step_prefix;     /* CPU annotations whose name starts with it are the steps;
                                    NULL: "ProfilerStep#" (torch.profiler's schedule) */
    bool whole;                  /* no step annotation: the whole CPU span as one step */
};
FM_API void fm_trace_opts_init(struct fm_trace_opts *opts);

struct fm_trace_step {
    char name[64];               /* "ProfilerStep#3" */
    double ts_us;                /* its start on the trace's clock (microseconds) */
    double time_s;               /* its duration (the CPU-side annotation) */
    double kernel_s;             /* GPU kernels launched in the step: durations summed over
                                    streams (overlap counted twice); 0 without kernels */
    uint64_t kernels;
    double memcpy_s;             /* GPU memcpy and memset activity launched in the step */
    uint64_t profiler_flops;     /* "flops" the profiler recorded, each op once (outermost) */
    uint64_t flops_by_phase[FM_TRACE_PHASE_COUNT];
    uint64_t nested_flops;       /* "flops" of ops inside an op that has them: not counted */
    double phase_s[FM_TRACE_PHASE_COUNT];   /* time of the step's top-level ops by phase */
};

struct fm_trace_op {
    const char *name;            /* as the profiler names it (owned by the trace) */
    int cls;                     /* fm_trace_op_class, FM_TRACE_OPTIMIZER under Optimizer.* */
    uint64_t calls;              /* events in the steps */
    double total_s;              /* their durations summed (children included) */
    double self_s;               /* minus the time of CPU events directly inside them */
    uint64_t flops;              /* profiler "flops" counted for it (outermost calls only) */
    uint64_t flops_calls;        /* calls whose flops were counted */
};

struct fm_trace {
    struct fm_ctx *ctx;
    enum fm_trace_form form;
    char origin[128];            /* the file name, for messages */
    uint64_t events;             /* complete ("X") events read */
    size_t n_steps;
    struct fm_trace_step *steps; /* in time order */
    bool whole;                  /* the one step is the whole trace (opts.whole) */
    double step_s, step_min_s, step_max_s;   /* median, min and max of the steps' time_s */
    size_t n_ops;
    struct fm_trace_op *ops;     /* every CPU op and annotation inside a step, by total_s,
                                    largest first */
    double class_s[FM_TRACE_CLASSES];   /* top-level CPU events of all steps, by class */
    double top_s;                /* the sum of class_s */
    bool has_kernels;            /* GPU kernel events exist */
    bool has_flops;              /* some event carries args "flops" */
    bool has_shapes;             /* some event carries args "Input Dims" (record_shapes) */
    uint64_t profiler_flops;     /* all steps (sum of the steps') */
    uint64_t nested_flops;
    /* The first forward op's first input with rank >= 2 (record_shapes), for the batch:
     * "aten::conv2d", {8, 3, 64, 64}. rank 0: none recorded. */
    char input_op[64];
    struct fm_shape input;
};

/* Reads a trace file (no size limit beyond memory: the text, then about 100 bytes per event).
 * FM_ERR_IO when it cannot be read; FM_ERR_PARSE with the line and column of a JSON syntax
 * error (a truncated file is named as such), for JSON that is not a trace, for an event whose
 * ts or dur is missing or not a number, and for a trace without steps (the message says how
 * to record them); FM_ERR_UNSUPPORTED in a build without cJSON. opts may be NULL. */
FM_API enum fm_status fm_trace_read(struct fm_ctx *ctx, const char *path,
                                    const struct fm_trace_opts *opts, struct fm_trace **out);
/* The same from text in memory; origin names it in messages. */
FM_API enum fm_status fm_trace_parse(struct fm_ctx *ctx, const char *text, size_t len,
                                     const char *origin, const struct fm_trace_opts *opts,
                                     struct fm_trace **out);
FM_API void fm_trace_free(struct fm_trace *trace);

/* Utilization of a trace's step by the methods of Epoch AI's utilization study (Hobbhahn
 * 2022) (src/analysis/trace_util.c), against the median step:
 *   counting ("batch") method: flopmeter's count of the training step (forward + backward +
 *     optimizer, at the batch the model was counted at) / step time / peak;
 *   profiler method: the FLOPs the profiler recorded in the step (the median over steps) /
 *     step time / peak, and their share of flopmeter's count (the profiler has formulas for a
 *     few aten ops only and misses most of the backward pass). */
struct fm_trace_util {
    double peak;                 /* FLOP/s */
    int64_t batch;               /* the batch flopmeter counted */
    double step_s;               /* the trace's median step */
    struct fm_utilization util;  /* fm_utilization at step_s: theory, counted,
                                    counted+optimizer (the counting method) */
    uint64_t counted_flops;      /* forward + backward + optimizer */
    uint64_t counted_by_phase[FM_TRACE_PHASE_COUNT];   /* fwd; bwd_data + bwd_weight; opt */
    double counted_util;         /* counted_flops / step_s / peak */
    bool profiler_available;     /* the trace has "flops" (with_flops=True under Kineto) */
    double profiler_flops;       /* median over the steps of their profiler_flops */
    double profiler_util;        /* profiler_flops / step_s / peak */
    double profiler_share;       /* profiler_flops / counted_flops */
    bool batch_mismatch;         /* the trace's first input says another batch */
    int64_t trace_batch;         /* that batch (0: unknown) */
    bool input_mismatch;         /* the trace's first input has another shape past the batch
                                    than the model's input of that rank (another image size:
                                    the count is of another model) */
    struct fm_shape model_input; /* that model input's shape (when input_mismatch) */
};
/* graph (may be NULL) is the counted model, for the input-shape check. */
FM_API enum fm_status fm_trace_utilization(struct fm_ctx *ctx, const struct fm_trace *trace,
                                           const struct fm_graph *graph,
                                           const struct fm_counts *counts, int64_t batch,
                                           double peak, struct fm_trace_util *out);
/* The trace's steps, ops and classes (and, with util, both methods) as a table, CSV or JSON
 * (docs/json.md). s may be NULL (no model); util is then NULL too. */
FM_API enum fm_status fm_report_trace(FILE *f, const struct fm_trace *trace,
                                      const struct fm_session *s, const struct fm_trace_util *util,
                                      const struct fm_report_opts *opts);

/* -- Measured points on the roofline (`roofline --measured`; src/analysis/measured.c) -- */

/* One measured point: work over measured time. */
struct fm_measured_point {
    char label[160];             /* "conv1 fwd", "the step (PyTorch profiler, median of 3)" */
    double flops;                /* the counters' FLOPs (ncu), or flopmeter's count (a trace) */
    double bytes;                /* DRAM bytes (ncu), or flopmeter's counted bytes (a trace) */
    double time_s;               /* measured seconds */
    bool whole;                  /* the whole step or file, not one layer or op class */
};

struct fm_measured {
    struct fm_ctx *ctx;
    char source[64];             /* "Nsight Compute", "PyTorch profiler" */
    char how[512];               /* what the points are and what was left out, in words */
    size_t n;
    struct fm_measured_point *points;
};

/* Reads the measured points of a profile for a counted model: from an Nsight Compute CSV (by
 * fm_ncu_read_file and fm_ncu_match: a point per matched layer and phase whose FLOPs, DRAM bytes
 * and time the file has, and the whole file), or from a PyTorch profiler trace (a JSON file, by
 * fm_trace_read: the median step, and each op class's time per step when the trace ran on the
 * CPU, at flopmeter's counted FLOPs and bytes). A point without FLOPs, bytes or time is left
 * out; a file that gives none is FM_ERR_PARSE. The readers' errors pass through. Free with
 * fm_measured_free. */
FM_API enum fm_status fm_measured_read(struct fm_ctx *ctx, const char *path,
                                       const struct fm_graph *graph,
                                       const struct fm_counts *counts, struct fm_measured **out);
FM_API void fm_measured_free(struct fm_measured *m);

#ifdef __cplusplus
}
#endif

#endif /* FLOPMETER_H */
