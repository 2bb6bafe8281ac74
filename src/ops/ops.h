/* The op descriptor: what every op family file provides (a shape rule and a cost rule), and the
 * helpers those rules share. Backends lower ops themselves; this file knows nothing of them. */
#ifndef FM_OPS_H
#define FM_OPS_H

#include "../core/internal.h"

#define FM_MAX_IO 64   /* inputs or outputs one node may have (concat, split) */

/* What a shape rule sees: the node, its input tensors (NULL for an omitted optional input) and
 * its output tensors as they are before the rule runs (an importer may have shaped them). It
 * writes out_shape[i] and out_dtype[i] for every output. */
struct fm_shape_call {
    struct fm_ctx *ctx;
    const struct fm_graph *graph;
    const struct fm_node *node;
    const struct fm_tensor *in[FM_MAX_IO];
    const struct fm_tensor *out[FM_MAX_IO];
    struct fm_shape out_shape[FM_MAX_IO];
    enum fm_dtype out_dtype[FM_MAX_IO];
};

/* What a cost rule sees and fills. The caller zeroes cost, sets `train` and `grad[]`, and after
 * the rule checks `ovf`. Rules add primitive counts and bytes per phase, and say what they keep
 * for backward: inputs/outputs by bit (the driver counts each activation tensor once, however
 * many nodes keep it) plus private extra bytes (masks, indices, statistics). */
struct fm_cost_call {
    struct fm_ctx *ctx;
    const struct fm_graph *graph;
    const struct fm_node *node;
    const struct fm_tensor *in[FM_MAX_IO];
    const struct fm_tensor *out[FM_MAX_IO];
    bool train;               /* training step: count backward, batchnorm uses batch statistics */
    bool grad[FM_MAX_IO];     /* input i needs a gradient (already false in inference) */
    struct fm_node_cost *cost;
    uint64_t saved_in_mask;   /* bit i: input i is kept for backward */
    uint64_t saved_out_mask;  /* bit i: output i is kept for backward */
    bool ovf;                 /* sticky overflow flag for fm_cmul/fm_cadd */
};

/* What an op's family file defines for it: its arity and its two rules. Its name, class and
 * ONNX mapping are columns of FM_OP_LIST (flopmeter.h), not fields here. */
struct fm_op_desc {
    int min_in, max_in;       /* accepted input counts */
    int n_out;                /* outputs; 0 = variable (split) */
    enum fm_status (*shape)(struct fm_shape_call *call);
    enum fm_status (*cost)(struct fm_cost_call *call);
};

const struct fm_op_desc *fm_op_desc(enum fm_op op);
/* Whether op is a random generator (random.c), whose outputs carry no gradient: the graph
 * stops gradients there, as PyTorch's autograd does at a sampled tensor. */
bool fm_op_is_random(enum fm_op op);

/* The cost of one node on its own, as fm_count counts it (tests check rules one by one). */
enum fm_status fm_node_cost(struct fm_ctx *ctx, const struct fm_graph *graph, fm_nid node,
                            const struct fm_count_opts *opts, struct fm_node_cost *out);
/* The same with its keep masks (bit i: input i, or output i, is kept for the backward), for
 * analyses that attribute the kept activations to layers (the language-model summary). */
enum fm_status fm_node_cost_kept(struct fm_ctx *ctx, const struct fm_graph *graph, fm_nid node,
                                 const struct fm_count_opts *opts, struct fm_node_cost *out,
                                 uint64_t *saved_in, uint64_t *saved_out);

/* ---- helpers for rules ---- */

/* Elements of a tensor (0 if the tensor is NULL); sets call->ovf on overflow. */
uint64_t fm_cost_numel(struct fm_cost_call *call, const struct fm_tensor *t);
/* Bytes of a tensor in its storage dtype (0 if NULL). */
uint64_t fm_cost_bytes(struct fm_cost_call *call, const struct fm_tensor *t);
/* Adds n primitive operations of a kind to a phase. */
void fm_cost_add(struct fm_cost_call *call, enum fm_phase phase, enum fm_prim prim, uint64_t n);
/* Adds per_element[k] x e operations of every kind k (enum fm_prim order): the rule of an
 * elementwise op written as a row of counts per element. */
void fm_cost_add_each(struct fm_cost_call *call, enum fm_phase phase,
                      const uint8_t per_element[FM_PRIM_COUNT], uint64_t e);
void fm_cost_read(struct fm_cost_call *call, enum fm_phase phase, uint64_t bytes);
void fm_cost_write(struct fm_cost_call *call, enum fm_phase phase, uint64_t bytes);
/* The phase where input i's gradient is counted: bwd_weight for parameters, bwd_data else. */
enum fm_phase fm_cost_grad_phase(const struct fm_cost_call *call, int i);
/* An elementwise op of one tensor written as a row of counts per element (unary.c, trig.c):
 * forward and backward operations, what the backward keeps, or a gradient that is all zeros
 * (written, not computed: Floor, Round ...). */
enum fm_keep { FM_KEEP_NONE = 0, FM_KEEP_IN, FM_KEEP_OUT };
struct fm_elementwise_rule {
    enum fm_op op;
    uint8_t fwd[FM_PRIM_COUNT];   /* per element, in enum fm_prim order */
    uint8_t bwd[FM_PRIM_COUNT];
    enum fm_keep keep;
    bool zero_grad;
};
/* The cost of call's node from the row of rules[n] for its op: E = output elements times each
 * count, default bytes; FM_ERR_UNSUPPORTED when no row names the op. */
enum fm_status fm_cost_elementwise(struct fm_cost_call *call,
                                   const struct fm_elementwise_rule *rules, size_t n);

/* Forward bytes of a plain op: every input read once, every output written once. */
void fm_cost_fwd_bytes_default(struct fm_cost_call *call);
/* For ops whose backward needs only the output gradient (and what the rule lists as kept):
 * bytes of reading dY (all outputs) + reading the kept tensors, and writing dX for each input
 * that needs a gradient, counted in that input's gradient phase. */
void fm_cost_bwd_bytes_default(struct fm_cost_call *call);
/* Cost rules shared by families. Gathers (Gather, GatherElements, GatherND): the indices and the
 * gathered elements read, the output written; the input gradient a scatter-add of dy (one add
 * per output element) into a zeroed dX, which keeps the indices. Part copies (Slice, Compress):
 * what is kept read and written; the gradient writes all of dX (zeros around dy). */
enum fm_status fm_cost_gather(struct fm_cost_call *call);
enum fm_status fm_cost_part_copy(struct fm_cost_call *call);

/* Ops with optional extra outputs (LayerNorm's Mean and InvStdDev, BatchNorm's statistics,
 * Dropout's mask): attrs.ints[0], when nints > 0, is a mask of the outputs the file omits (an
 * empty name before a named one); an omitted output has a tensor but is not written. */
bool fm_output_written(const struct fm_node *node, int i);

/* Shape helpers. */
enum fm_status fm_shape_broadcast(struct fm_ctx *ctx, const struct fm_node *node,
                                  const struct fm_shape *a, const struct fm_shape *b,
                                  struct fm_shape *out);
/* Normalizes a possibly negative axis against rank; error names the node. */
enum fm_status fm_shape_axis(struct fm_ctx *ctx, const struct fm_node *node, int64_t axis,
                             int rank, int *out);
bool fm_shape_equal(const struct fm_shape *a, const struct fm_shape *b);
/* Output size of a sliding window along one axis: floor or ceil of
 * (in + pad_lo + pad_hi - dilation*(k-1) - 1)/stride + 1, PyTorch's ceil-mode rule included.
 * Returns <= 0 when the window does not fit (the caller reports the node). */
int64_t fm_window_out(int64_t in, int64_t k, int64_t stride, int64_t pad_lo, int64_t pad_hi,
                      int64_t dilation, bool ceil_mode);

/* The window attributes of spatial dim i of an op with sr spatial dims (1 to 3): 1-D uses
 * index 1 of the attrs, 2-D indices 0 and 1, 3-D the depth fields then 0 and 1. */
struct fm_window {
    int64_t kernel, stride, dilation, pad_lo, pad_hi, output_padding;
};
struct fm_window fm_window_of(const struct fm_attrs *a, int sr, int i);

/* Requires input i to have the given rank (or a range); error message names the node. */
enum fm_status fm_shape_expect_rank(struct fm_shape_call *call, int i, int min_rank, int max_rank);

/* Whether node n is a Linear layer (traits.c): Linear itself, or ONNX Gemm in torch.nn.Linear's
 * form, Y = A B^T + C with transB, no transA, alpha = beta = 1 and C absent or a vector (what
 * torch.onnx writes for nn.Linear). A is a matrix by Gemm's shape rule. Backends that lower
 * Linear layers as one primitive (an inner product, a cuBLASLt product with a bias epilogue) ask
 * this, so that what counts as one is decided here only. */
bool fm_op_linear_form(const struct fm_graph *g, const struct fm_node *n);

/* What kind of op node is within its class (traits.c), the key the time model fits by: a
 * convolution by how its kernel mixes channels (enum fm_conv_kind), any other op by its name,
 * with "_bcast" for a binary op whose broadcast operand takes a gradient (its backward reduces
 * it). "" for an unknown op or node. kind gets at most size bytes with the NUL. */
enum fm_conv_kind {
    FM_CONV_DENSE = 0,     /* a window wider than 1x1 over every input channel */
    FM_CONV_POINTWISE,     /* 1x1 (1x1x1) over every input channel */
    FM_CONV_DEPTHWISE,     /* one group per input channel */
    FM_CONV_GROUPED,       /* other group counts */
    FM_CONV_KIND_COUNT
};
const char *fm_conv_kind_name(enum fm_conv_kind k);
void fm_op_kind(const struct fm_graph *graph, fm_nid node, char *kind, size_t size);

/* ---- recurrent layers (rnn.c), shared with ops that wrap the same cells (a quantized LSTM) ---- */

/* attrs.ints of LSTM, GRU and RNN (all optional, 0 = ONNX's default):
 * {hidden_size, direction (0 forward, 1 reverse, 2 bidirectional), layout, linear_before_reset,
 *  flags (FM_RNN_*), activations: per direction f [, g [, h]] as FM_RNN_ACT_* codes} */
enum fm_rnn_cell { FM_RNN_CELL_RNN = 0, FM_RNN_CELL_GRU, FM_RNN_CELL_LSTM };
/* clip given; output Y omitted (not written); W and R stored [D, I, G*H] and [D, H, G*H]
 * (ONNX Runtime's DynamicQuantizeLSTM) instead of ONNX's [D, G*H, I] and [D, G*H, H] */
enum { FM_RNN_CLIP = 1, FM_RNN_NO_Y = 2, FM_RNN_W_TRANSPOSED = 4 };
enum {
    FM_RNN_ACT_SIGMOID = 1, FM_RNN_ACT_TANH, FM_RNN_ACT_RELU, FM_RNN_ACT_AFFINE,
    FM_RNN_ACT_LEAKY_RELU, FM_RNN_ACT_THRESHOLDED_RELU, FM_RNN_ACT_SCALED_TANH,
    FM_RNN_ACT_HARD_SIGMOID, FM_RNN_ACT_ELU, FM_RNN_ACT_SOFTSIGN, FM_RNN_ACT_SOFTPLUS
};
/* An ONNX activation name (case-insensitive) -> FM_RNN_ACT_* code, 0 when unknown. */
int fm_rnn_activation(const char *name);
const char *fm_rnn_activation_name(int code);
int fm_rnn_acts_per_direction(enum fm_rnn_cell cell);
/* Row-steps of a sequence: the sum of sequence_lens when its values are known (*known), else
 * batch x steps. */
uint64_t fm_rnn_rows(bool *ovf, const struct fm_tensor *x, const struct fm_tensor *seq_lens,
                     int64_t layout, bool *known);
/* The shape and cost rules of a cell over inputs X, W, R, B?, sequence_lens?, initial_h?,
 * initial_c?, P? (ONNX's order) and outputs Y, Y_h?, Y_c?. */
enum fm_status fm_rnn_shape(struct fm_shape_call *call, enum fm_rnn_cell cell);
enum fm_status fm_rnn_cost(struct fm_cost_call *call, enum fm_rnn_cell cell);

/* ---- descriptors, one per op, defined in the family files (FM_OP_LIST names each) ---- */
#define FM_OP_DESC_EXTERN_(ID, desc, ...) extern const struct fm_op_desc fm_op_##desc##_desc;
FM_OP_LIST(FM_OP_DESC_EXTERN_)
#undef FM_OP_DESC_EXTERN_

#endif
