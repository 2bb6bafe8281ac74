/* Pooling: cuDNN where its descriptor expresses the layer (symmetric padding, floor windows,
 * adaptive pooling with evenly dividing windows, global pooling), and the backend's own
 * kernels for the rest (ceil mode, asymmetric padding, uneven adaptive windows). Either way
 * the windows and divisors are PyTorch's. */
#include "cu.h"

struct pool_priv {
    bool use_cudnn;
    cudnnPoolingDescriptor_t pd;
    cudnnTensorDescriptor_t x, y;
    struct cuk_pool k;
};

static const float one = 1.0f, zero = 0.0f;

static enum fm_status pool_plan(struct cu_state *s, struct cu_node *n)
{
    enum fm_status st = FM_OK;
    const struct fm_attrs *a = &n->node->attrs;
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    enum fm_op op = n->node->op;
    if (x->t->shape.rank < 3 || x->t->shape.rank > 4)
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': pooling of rank %d",
                        n->node->name, x->t->shape.rank);
    if ((st = cu_check_numel(s, n, x->numel)))
        return st;
    if (op != FM_OP_ADAPTIVE_AVGPOOL && (a->dilation[0] != 1 || a->dilation[1] != 1))
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': dilated pooling",
                        n->node->name);
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
    p->use_cudnn = !k->adaptive && k->pt == k->pb && k->pl == k->pr;
    if (p->use_cudnn) {
        if ((st = cu_tensor_desc(s, &p->x, x, s->cdt)) || (st = cu_tensor_desc(s, &p->y, y, s->cdt)))
            return st;
        cudnnPoolingMode_t mode = k->is_max ? CUDNN_POOLING_MAX
                                  : k->count_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                 : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
        CUDNN_TRY(s, cudnnCreatePoolingDescriptor(&p->pd));
        CUDNN_TRY(s, cudnnSetPooling2dDescriptor(p->pd, mode, CUDNN_PROPAGATE_NAN, k->kh, k->kw,
                                                 k->pt, k->pl, k->sh, k->sw));
        int od[4];
        CUDNN_TRY(s, cudnnGetPooling2dForwardOutputDim(p->pd, p->x, &od[0], &od[1], &od[2], &od[3]));
        /* ceil mode that adds a window: cuDNN's floor rule disagrees, so use the own kernel */
        if (od[2] != (int)k->OH || od[3] != (int)k->OW)
            p->use_cudnn = false;
    }
    if (p->use_cudnn) {
        n->keep_in[0] = n->keep_out[0] = true;
    } else {
        if ((st = cu_check_numel(s, n, y->numel)))
            return st;
        n->keep_in[0] = k->is_max != 0;
    }
    return FM_OK;
fail:
    return st;
}

static enum fm_status pool_fwd(struct cu_state *s, struct cu_node *n)
{
    struct pool_priv *p = n->priv;
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    if (p->use_cudnn)
        CUDNN_RET(s, cudnnPoolingForward(s->cudnn, p->pd, &one, p->x, x->data, &zero, p->y, y->data));
    else
        CU_RET(s, cuk_pool_fwd(x->dt, p->k, x->data, y->data, s->stream));
    return FM_OK;
}

static enum fm_status pool_bwd(struct cu_state *s, struct cu_node *n)
{
    struct pool_priv *p = n->priv;
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    if (!n->dx[0])
        return FM_OK;
    if (p->use_cudnn) {
        const float *beta = n->dx_acc[0] ? &one : &zero;
        CUDNN_RET(s, cudnnPoolingBackward(s->cudnn, p->pd, &one, p->y, y->data, p->y, y->grad, p->x,
                                          x->data, beta, p->x, x->grad));
        return FM_OK;
    }
    /* the kernel scatters with atomic adds onto dx */
    if (!n->dx_acc[0])
        CU_RET(s, cudaMemsetAsync(x->grad, 0, x->numel * (x->dt == CU_F32 ? 4 : 2), s->stream));
    CU_RET(s, cuk_pool_bwd(x->dt, p->k, x->data, y->grad, x->grad, s->stream));
    return FM_OK;
}

static void pool_release(struct cu_state *s, struct cu_node *n)
{
    struct pool_priv *p = n->priv;
    if (!p)
        return;
    if (p->pd)
        cudnnDestroyPoolingDescriptor(p->pd);
    if (p->x)
        cudnnDestroyTensorDescriptor(p->x);
    if (p->y)
        cudnnDestroyTensorDescriptor(p->y);
    fm_dealloc(s->ctx, p);
    n->priv = NULL;
}

const struct cu_op cu_op_pool = {pool_plan, NULL, pool_fwd, pool_bwd, NULL, pool_release};
