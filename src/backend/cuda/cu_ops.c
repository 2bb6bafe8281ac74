/* The CUDA backend's op table: which family file lowers each op (cu_conv.c, cu_act.c ...), and
 * what the backend can run, asked before anything is prepared (struct fm_backend's supports).
 * A family's plan() may still refuse a shape it cannot run when it makes its descriptors. */
#include "cu.h"

const struct cu_op *cu_op_for(enum fm_op op)
{
    switch (op) {
    case FM_OP_CONV: return &cu_op_conv;
    case FM_OP_BATCHNORM: return &cu_op_batchnorm;
    case FM_OP_RELU:
    case FM_OP_CLIP:
    case FM_OP_LEAKY_RELU:
    case FM_OP_SIGMOID:
    case FM_OP_TANH:
    case FM_OP_SILU:
    case FM_OP_GELU:
    case FM_OP_HARDSWISH:
    case FM_OP_HARDSIGMOID: return &cu_op_act;
    case FM_OP_SOFTMAX:
    case FM_OP_LOG_SOFTMAX: return &cu_op_softmax;
    case FM_OP_MAXPOOL:
    case FM_OP_AVGPOOL:
    case FM_OP_ADAPTIVE_AVGPOOL:
    case FM_OP_GLOBAL_AVGPOOL:
    case FM_OP_GLOBAL_MAXPOOL: return &cu_op_pool;
    case FM_OP_LINEAR:
    case FM_OP_GEMM: return &cu_op_linear;
    case FM_OP_ADD:
    case FM_OP_SUB:
    case FM_OP_MUL:
    case FM_OP_DIV: return &cu_op_binary;
    case FM_OP_CONCAT: return &cu_op_concat;
    case FM_OP_FLATTEN:
    case FM_OP_RESHAPE:
    case FM_OP_IDENTITY: return &cu_op_view;
    case FM_OP_DROPOUT: return &cu_op_dropout;
    case FM_OP_CROSS_ENTROPY: return &cu_op_xent;
    default: return NULL;
    }
}

static uint64_t numel_of(const struct fm_graph *g, fm_tid t)
{
    uint64_t n = 0;
    if (t != FM_NONE)
        fm_shape_numel(&fm_graph_tensor(g, t)->shape, &n);
    return n;
}

static int rank_of(const struct fm_graph *g, fm_tid t)
{
    return t == FM_NONE ? -1 : fm_graph_tensor(g, t)->shape.rank;
}

/* What the families' plan() would refuse that the graph alone shows (their conditions, kept in
 * step with cu_conv.c, cu_linear.c, cu_misc.c, cu_norm.c and cu_pool.c), so that supports()
 * says no before a device is opened. What depends on the run (the precision, channels-last
 * layouts, a frozen BatchNorm in training) is still plan()'s to refuse. */
static const char *refusal(const struct fm_graph *g, const struct fm_node *n)
{
    const struct fm_attrs *a = &n->attrs;
    switch (n->op) {
    case FM_OP_CONV:
        if (rank_of(g, n->in[0]) < 3 || rank_of(g, n->in[0]) > 4)
            return "the CUDA backend runs 1-D and 2-D convolutions only";
        if (a->pad[0] != a->pad[2] || a->pad[1] != a->pad[3])
            return "asymmetric padding is not supported by cuDNN's convolutions";
        return NULL;
    case FM_OP_GEMM: {
        bool bias_vector = n->n_in < 3 || n->in[2] == FM_NONE || rank_of(g, n->in[2]) == 1;
        if (!(a->flags & FM_ATTR_TRANS_B) || (a->flags & FM_ATTR_TRANS_A) || a->alpha != 1.0 ||
            a->beta != 1.0 || rank_of(g, n->in[0]) != 2 || !bias_vector)
            return "the CUDA backend runs Gemm only in Linear's form (transB, alpha = beta = 1, "
                   "a vector bias)";
        return NULL;
    }
    case FM_OP_LINEAR:
        return rank_of(g, n->in[1]) != 2 ? "a weight that is not a matrix" : NULL;
    case FM_OP_ADD:
    case FM_OP_SUB:
    case FM_OP_MUL:
    case FM_OP_DIV: {
        uint64_t y = numel_of(g, n->out[0]);
        if (numel_of(g, n->in[0]) != y && numel_of(g, n->in[1]) != y)
            return "both operands are broadcast; the CUDA backend broadcasts one";
        return NULL;
    }
    case FM_OP_MAXPOOL:
    case FM_OP_AVGPOOL:
        if (n->n_out > 1)
            return "the argmax indices as an output (ONNX MaxPool's second output)";
        if (a->dilation[0] != 1 || a->dilation[1] != 1)
            return "dilated pooling";
        /* fall through */
    case FM_OP_ADAPTIVE_AVGPOOL:
    case FM_OP_GLOBAL_AVGPOOL:
    case FM_OP_GLOBAL_MAXPOOL:
        if (rank_of(g, n->in[0]) < 3 || rank_of(g, n->in[0]) > 4)
            return "pooling of a rank other than 3 or 4";
        return NULL;
    case FM_OP_BATCHNORM:
        if (n->n_in < 5 || n->in[1] == FM_NONE || n->in[2] == FM_NONE || n->in[3] == FM_NONE ||
            n->in[4] == FM_NONE)
            return "the CUDA backend needs BatchNorm's scale, bias, mean and variance";
        if (rank_of(g, n->in[0]) < 2 || rank_of(g, n->in[0]) > 4)
            return "BatchNorm of a rank other than 2 to 4";
        return NULL;
    case FM_OP_CROSS_ENTROPY:
        if (rank_of(g, n->in[0]) != 2 || n->in[1] == FM_NONE ||
            fm_graph_tensor(g, n->in[1])->dtype != FM_DTYPE_INT64)
            return "cross-entropy needs (N, K) logits and int64 labels";
        return NULL;
    default:
        return NULL;
    }
}

enum fm_status cu_supports(struct fm_ctx *ctx, const struct fm_graph *g, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(g, id);
    if (!cu_op_for(n->op))
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s': op %s is not supported by the CUDA "
                        "backend", n->name, n->op_name);
    if (n->n_in > FM_MAX_IO || n->n_out > FM_MAX_IO)
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s': too many inputs", n->name);
    /* BatchNorm and Dropout run output 0 only (LayerNorm is not lowered): a secondary output
     * (the statistics, the mask) that something reads is refused; an unread one is not
     * written */
    bool secondary = n->op == FM_OP_LAYERNORM || n->op == FM_OP_BATCHNORM ||
                     n->op == FM_OP_DROPOUT;
    for (int i = 1; secondary && i < n->n_out; i++) {
        if (fm_graph_tensor_used(g, n->out[i]))
            return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (%s): output %d ('%s') is read, "
                            "but the CUDA backend writes only output 0 of this op", n->name,
                            n->op_name, i, fm_graph_tensor(g, n->out[i])->name);
    }
    const char *why = refusal(g, n);
    if (why)
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (%s): %s", n->name, n->op_name, why);
    return FM_OK;
}
