/* The CUDA backend's op table: which family file lowers each op (cu_conv.c, cu_act.c ...), and
 * what the backend can run, asked before anything is prepared (struct fm_backend's supports):
 * an op without a row is refused here, and each family's check says which of its nodes it runs.
 * A family's plan() may still refuse what depends on the run (precision, layouts, training). */
#include "cu.h"

#define FM_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
    enum fm_op op;
    const struct cu_op *impl;
} impls[] = {
    {FM_OP_CONV, &cu_op_conv},
    {FM_OP_BATCHNORM, &cu_op_batchnorm},
    {FM_OP_RELU, &cu_op_act},
    {FM_OP_CLIP, &cu_op_act},
    {FM_OP_LEAKY_RELU, &cu_op_act},
    {FM_OP_SIGMOID, &cu_op_act},
    {FM_OP_TANH, &cu_op_act},
    {FM_OP_SILU, &cu_op_act},
    {FM_OP_GELU, &cu_op_act},
    {FM_OP_HARDSWISH, &cu_op_act},
    {FM_OP_HARDSIGMOID, &cu_op_act},
    {FM_OP_SOFTMAX, &cu_op_softmax},
    {FM_OP_LOG_SOFTMAX, &cu_op_softmax},
    {FM_OP_MAXPOOL, &cu_op_pool},
    {FM_OP_AVGPOOL, &cu_op_pool},
    {FM_OP_ADAPTIVE_AVGPOOL, &cu_op_pool},
    {FM_OP_GLOBAL_AVGPOOL, &cu_op_pool},
    {FM_OP_GLOBAL_MAXPOOL, &cu_op_pool},
    {FM_OP_LINEAR, &cu_op_linear},
    {FM_OP_GEMM, &cu_op_linear},
    {FM_OP_ADD, &cu_op_binary},
    {FM_OP_SUB, &cu_op_binary},
    {FM_OP_MUL, &cu_op_binary},
    {FM_OP_DIV, &cu_op_binary},
    {FM_OP_CONCAT, &cu_op_concat},
    {FM_OP_FLATTEN, &cu_op_view},
    {FM_OP_RESHAPE, &cu_op_view},
    {FM_OP_IDENTITY, &cu_op_view},
    {FM_OP_DROPOUT, &cu_op_dropout},
    {FM_OP_CROSS_ENTROPY, &cu_op_xent},
};

const struct cu_op *cu_op_for(enum fm_op op)
{
    for (size_t i = 0; i < FM_COUNT_OF(impls); i++) {
        if (impls[i].op == op)
            return impls[i].impl;
    }
    return NULL;
}

enum fm_status cu_supports(struct fm_ctx *ctx, const struct fm_graph *g, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(g, id);
    const struct cu_op *impl = cu_op_for(n->op);
    if (!impl)
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
    return impl->check ? impl->check(ctx, g, n) : FM_OK;
}
