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

enum fm_status cu_supports(struct fm_ctx *ctx, const struct fm_graph *g, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(g, id);
    if (!cu_op_for(n->op))
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s': op %s is not supported by the CUDA "
                        "backend", n->name, n->op_name);
    if (n->n_in > FM_MAX_IO || n->n_out > FM_MAX_IO)
        return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s': too many inputs", n->name);
    return FM_OK;
}
