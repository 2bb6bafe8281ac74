/* Activations and softmax. Pointwise activations run on the backend's own kernels (16-byte
 * accesses, fp32 math) rather than cuDNN's legacy activation calls: the own backward reads only
 * the tensor it needs (the output for ReLU, sigmoid and tanh, the input otherwise), which keeps
 * one activation fewer alive per layer, and covers SiLU, GELU and the hard variants that cuDNN
 * lacks. Softmax and log-softmax go through cuDNN along any axis. */
#include "cu.h"

struct act_priv {
    int kind;
    float a, b;
    bool uses_out;
};

static enum fm_status act_plan(struct cu_state *s, struct cu_node *n)
{
    const struct fm_attrs *a = &n->node->attrs;
    struct act_priv *p = fm_alloc(s->ctx, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    n->priv = p;
    enum fm_status st = cu_check_numel(s, n, n->in[0]->numel);
    if (st)
        return st;
    switch (n->node->op) {
    case FM_OP_RELU: p->kind = CUK_RELU; break;
    case FM_OP_CLIP:
        p->kind = CUK_CLIP;
        p->a = (float)a->lo;
        p->b = (float)a->hi;
        break;
    case FM_OP_LEAKY_RELU:
        p->kind = CUK_LEAKY;
        p->a = (float)a->alpha;
        break;
    case FM_OP_SIGMOID: p->kind = CUK_SIGMOID; break;
    case FM_OP_TANH: p->kind = CUK_TANH; break;
    case FM_OP_SILU: p->kind = CUK_SILU; break;
    case FM_OP_GELU: p->kind = (a->flags & FM_ATTR_GELU_TANH) ? CUK_GELU_TANH : CUK_GELU; break;
    case FM_OP_HARDSWISH: p->kind = CUK_HARDSWISH; break;
    case FM_OP_HARDSIGMOID:
        p->kind = CUK_HARDSIGMOID;
        /* alpha and beta as the graph gives them, as the op's rule and the CPU backend read
         * them (builders set PyTorch's 1/6 and 1/2, ONNX files 0.2 and 0.5 by default) */
        p->a = (float)a->alpha;
        p->b = (float)a->beta;
        break;
    default:
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': activation %s",
                        n->node->name, n->node->op_name);
    }
    if (n->in[0]->dt != n->out[0]->dt)
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': an activation of a parameter",
                        n->node->name);
    p->uses_out = cuk_act_bwd_uses_output(p->kind) != 0;
    n->keep_out[0] = p->uses_out;
    n->keep_in[0] = !p->uses_out;
    return FM_OK;
}

static enum fm_status act_fwd(struct cu_state *s, struct cu_node *n)
{
    struct act_priv *p = n->priv;
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    CU_RET(s, cuk_act_fwd(p->kind, x->dt, x->data, y->data, x->numel, p->a, p->b, s->stream));
    return FM_OK;
}

static enum fm_status act_bwd(struct cu_state *s, struct cu_node *n)
{
    struct act_priv *p = n->priv;
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    if (!n->dx[0])
        return FM_OK;
    CU_RET(s, cuk_act_bwd(p->kind, x->dt, p->uses_out ? y->data : x->data, y->grad, x->grad,
                          x->numel, p->a, p->b, n->dx_acc[0], s->stream));
    return FM_OK;
}

static void priv_release(struct cu_state *s, struct cu_node *n)
{
    fm_dealloc(s->ctx, n->priv);
    n->priv = NULL;
}

const struct cu_op cu_op_act = {NULL, act_plan, NULL, act_fwd, act_bwd, NULL, priv_release};

/* ---- softmax / log-softmax along one axis: cuDNN's channel mode over (outer, L, inner, 1) in
 * the tensor's physical order ---- */

struct softmax_priv {
    cudnnTensorDescriptor_t d;
    cudnnSoftmaxAlgorithm_t algo;
};

static const float one = 1.0f, zero = 0.0f;

static enum fm_status softmax_plan(struct cu_state *s, struct cu_node *n)
{
    enum fm_status st = FM_OK;
    struct cu_tensor *x = n->in[0];
    const struct fm_shape *sh = &x->t->shape;
    int axis;
    st = fm_shape_axis(s->ctx, n->node, n->node->attrs.axis, sh->rank, &axis);
    if (st)
        return st;
    if ((st = cu_check_numel(s, n, x->numel)))
        return st;
    int64_t phys[FM_MAX_DIMS];
    int rank = sh->rank;
    for (int i = 0; i < rank; i++)
        phys[i] = sh->dims[i];
    if (x->nhwc) {
        /* (N,C,H,W) stored as (N,H,W,C): logical axis 1 is physical 3, 2 -> 1, 3 -> 2 */
        static const int to_phys[4] = {0, 3, 1, 2};
        phys[0] = sh->dims[0];
        phys[1] = sh->dims[2];
        phys[2] = sh->dims[3];
        phys[3] = sh->dims[1];
        axis = to_phys[axis];
    }
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= phys[i];
    for (int i = axis + 1; i < rank; i++)
        inner *= phys[i];
    struct softmax_priv *p = fm_alloc(s->ctx, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    n->priv = p;
    p->algo = n->node->op == FM_OP_LOG_SOFTMAX ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE;
    CUDNN_TRY(s, cudnnCreateTensorDescriptor(&p->d));
    CUDNN_TRY(s, cudnnSetTensor4dDescriptor(p->d, CUDNN_TENSOR_NCHW, cu_cudnn_dt(x->dt), (int)outer,
                                            (int)phys[axis], (int)inner, 1));
    n->keep_out[0] = true;
    return FM_OK;
fail:
    return st;
}

static enum fm_status softmax_fwd(struct cu_state *s, struct cu_node *n)
{
    struct softmax_priv *p = n->priv;
    CUDNN_RET(s, cudnnSoftmaxForward(s->cudnn, p->algo, CUDNN_SOFTMAX_MODE_CHANNEL, &one, p->d,
                                     n->in[0]->data, &zero, p->d, n->out[0]->data));
    return FM_OK;
}

static enum fm_status softmax_bwd(struct cu_state *s, struct cu_node *n)
{
    struct softmax_priv *p = n->priv;
    if (!n->dx[0])
        return FM_OK;
    const float *beta = n->dx_acc[0] ? &one : &zero;
    CUDNN_RET(s, cudnnSoftmaxBackward(s->cudnn, p->algo, CUDNN_SOFTMAX_MODE_CHANNEL, &one, p->d,
                                      n->out[0]->data, p->d, n->out[0]->grad, beta, p->d,
                                      n->in[0]->grad));
    return FM_OK;
}

static void softmax_release(struct cu_state *s, struct cu_node *n)
{
    struct softmax_priv *p = n->priv;
    if (!p)
        return;
    if (p->d)
        cudnnDestroyTensorDescriptor(p->d);
    fm_dealloc(s->ctx, p);
    n->priv = NULL;
}

const struct cu_op cu_op_softmax = {NULL, softmax_plan, NULL, softmax_fwd, softmax_bwd, NULL,
                                    softmax_release};
