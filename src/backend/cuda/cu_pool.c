/* Pooling on the backend's own kernels, in either layout: max, average (padding counted or
 * not), ceil mode, asymmetric padding, adaptive and global windows, all with PyTorch's window
 * and divisor rules. Not cuDNN's pooling: under cuDNN 9 its legacy calls cost 440-580 us of
 * host time each (measured on an H100, resnet50 fp16), more than the kernels themselves. */
#include "cu.h"

struct pool_priv {
    struct cuk_pool k;
};

static enum fm_status pool_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                 const struct fm_node *n)
{
    if (n->op == FM_OP_MAXPOOL || n->op == FM_OP_AVGPOOL) {
        if (n->n_out > 1)
            return cu_refuse(ctx, n, "the argmax indices as an output (ONNX MaxPool's second "
                                     "output)");
        if (n->attrs.dilation[0] != 1 || n->attrs.dilation[1] != 1)
            return cu_refuse(ctx, n, "dilated pooling");
    }
    int rank = cu_rank_of(g, n->in[0]);
    if (rank < 3 || rank > 4)
        return cu_refuse(ctx, n, "pooling of a rank other than 3 or 4");
    return FM_OK;
}

static enum fm_status pool_plan(struct cu_state *s, struct cu_node *n)
{
    enum fm_status st = FM_OK;
    const struct fm_attrs *a = &n->node->attrs;
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    enum fm_op op = n->node->op;
    if ((st = cu_check_numel(s, n, x->numel)))
        return st;
    struct pool_priv *p = fm_alloc(s->ctx, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    n->priv = p;
    struct cuk_pool *k = &p->k;
    k->N = (uint32_t)x->dims4[0];
    k->C = (uint32_t)x->dims4[1];
    k->H = (uint32_t)x->dims4[2];
    k->W = (uint32_t)x->dims4[3];
    k->OH = (uint32_t)y->dims4[2];
    k->OW = (uint32_t)y->dims4[3];
    k->nhwc = x->nhwc;
    k->is_max = op == FM_OP_MAXPOOL || op == FM_OP_GLOBAL_MAXPOOL;
    k->count_pad = (a->flags & FM_ATTR_COUNT_PAD) != 0;
    if (op == FM_OP_GLOBAL_AVGPOOL || op == FM_OP_GLOBAL_MAXPOOL) {
        k->kh = (int)k->H;
        k->kw = (int)k->W;
        k->sh = k->sw = 1;
    } else if (op == FM_OP_ADAPTIVE_AVGPOOL) {
        if (k->H % k->OH == 0 && k->W % k->OW == 0) {
            /* even windows: plain pooling with window = stride = In/Out */
            k->kh = k->sh = (int)(k->H / k->OH);
            k->kw = k->sw = (int)(k->W / k->OW);
        } else {
            k->adaptive = 1;
        }
    } else {
        k->kh = (int)a->kernel[0];
        k->kw = (int)a->kernel[1];
        k->sh = (int)a->stride[0];
        k->sw = (int)a->stride[1];
        k->pt = (int)a->pad[0];
        k->pl = (int)a->pad[1];
        k->pb = (int)a->pad[2];
        k->pr = (int)a->pad[3];
    }
    if ((st = cu_check_numel(s, n, y->numel)))
        return st;
    n->keep_in[0] = k->is_max != 0;   /* the max's backward finds the argmax again */
    return FM_OK;
}

static enum fm_status pool_fwd(struct cu_state *s, struct cu_node *n)
{
    struct pool_priv *p = n->priv;
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    CU_RET(s, cuk_pool_fwd(x->dt, p->k, x->data, y->data, s->stream));
    return FM_OK;
}

static enum fm_status pool_bwd(struct cu_state *s, struct cu_node *n)
{
    struct pool_priv *p = n->priv;
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    if (!n->dx[0])
        return FM_OK;
    /* the kernel scatters with atomic adds onto dx */
    if (!n->dx_acc[0])
        CU_RET(s, cudaMemsetAsync(x->grad, 0, x->numel * (x->dt == CU_F32 ? 4 : 2), s->stream));
    CU_RET(s, cuk_pool_bwd(x->dt, p->k, x->data, y->grad, x->grad, s->stream));
    return FM_OK;
}

static void pool_release(struct cu_state *s, struct cu_node *n)
{
    fm_dealloc(s->ctx, n->priv);
    n->priv = NULL;
}

const struct cu_op cu_op_pool = {pool_check, pool_plan, NULL, pool_fwd, pool_bwd, NULL, pool_release};
