/* Batch normalization through cuDNN: training uses batch statistics (saving mean and inverse
 * deviation for the backward) and updates the running statistics with PyTorch's momentum 0.1;
 * inference uses the running statistics. Channels-last training takes cuDNN's persistent
 * kernels, as PyTorch does. Scale and shift stay fp32 in every precision. Layer, group and
 * instance norms are not lowered here. */
#include "cu.h"

/* PyTorch's BatchNorm default: running = (1 - 0.1) * running + 0.1 * batch statistic */
#define BN_MOMENTUM 0.1

struct bn_priv {
    cudnnTensorDescriptor_t x, bn;
    cudnnBatchNormMode_t mode;
    size_t reserve;
    size_t ws_fwd, ws_bwd;
    int64_t C;
};

static const float one = 1.0f, zero = 0.0f;

static enum fm_status bn_check(struct fm_ctx *ctx, const struct fm_graph *g,
                               const struct fm_node *n)
{
    if (n->n_in < 5 || n->in[1] == FM_NONE || n->in[2] == FM_NONE || n->in[3] == FM_NONE ||
        n->in[4] == FM_NONE)
        return cu_refuse(ctx, n, "the CUDA backend needs BatchNorm's scale, bias, mean and "
                                 "variance");
    int rank = cu_rank_of(g, n->in[0]);
    if (rank < 2 || rank > 4)
        return cu_refuse(ctx, n, "BatchNorm of a rank other than 2 to 4");
    return FM_OK;
}

static enum fm_status bn_plan(struct cu_state *s, struct cu_node *n)
{
    enum fm_status st = FM_OK;
    struct cu_tensor *x = n->in[0];
    bool batch_stats = s->train;
    if (batch_stats && (n->node->attrs.flags & FM_ATTR_INFER_BN))
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': frozen BatchNorm in training is "
                        "not supported by the CUDA backend", n->node->name);
    if (n->has_bwd && !n->dx[0])
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': BatchNorm whose input needs no "
                        "gradient is not supported in training by the CUDA backend",
                        n->node->name);
    if ((st = cu_check_numel(s, n, x->numel)))
        return st;
    struct bn_priv *p = fm_alloc(s->ctx, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    n->priv = p;
    p->C = x->dims4[1];
    p->mode = batch_stats && x->nhwc ? CUDNN_BATCHNORM_SPATIAL_PERSISTENT : CUDNN_BATCHNORM_SPATIAL;
    if ((st = cu_tensor_desc(s, &p->x, x, s->cdt)))
        return st;
    CUDNN_TRY(s, cudnnCreateTensorDescriptor(&p->bn));
    CUDNN_TRY(s, cudnnDeriveBNTensorDescriptor(p->bn, p->x, p->mode));
    if (batch_stats) {
        CUDNN_TRY(s, cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
                         s->cudnn, p->mode, CUDNN_BATCHNORM_OPS_BN, p->x, NULL, p->x, p->bn, NULL,
                         &p->ws_fwd));
        CUDNN_TRY(s, cudnnGetBatchNormalizationBackwardExWorkspaceSize(
                         s->cudnn, p->mode, CUDNN_BATCHNORM_OPS_BN, p->x, NULL, p->x, NULL, p->x,
                         p->bn, NULL, &p->ws_bwd));
        CUDNN_TRY(s, cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
                         s->cudnn, p->mode, CUDNN_BATCHNORM_OPS_BN, NULL, p->x, &p->reserve));
    }
    n->workspace = p->ws_fwd > p->ws_bwd ? p->ws_fwd : p->ws_bwd;
    /* saved mean, saved inverse deviation, scratch scale/bias gradients, then the reserve */
    n->priv_bytes = (size_t)p->C * 4 * sizeof(float) + 256 + p->reserve;
    n->keep_in[0] = true;
    n->bwd_split = false;
    return FM_OK;
fail:
    return st;
}

static float *bn_saved(struct cu_node *n, int k)
{
    struct bn_priv *p = n->priv;
    return (float *)n->priv_dev + (size_t)k * (size_t)p->C;
}

static void *bn_reserve(struct cu_node *n)
{
    struct bn_priv *p = n->priv;
    return p->reserve ? (char *)n->priv_dev + (((size_t)p->C * 4 * sizeof(float) + 255) / 256) * 256
                      : NULL;
}

static enum fm_status bn_fwd(struct cu_state *s, struct cu_node *n)
{
    struct bn_priv *p = n->priv;
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    void *scale = n->in[1]->data, *bias = n->in[2]->data;
    void *mean = n->in[3]->data, *var = n->in[4]->data;
    double eps = n->node->attrs.eps < CUDNN_BN_MIN_EPSILON ? CUDNN_BN_MIN_EPSILON : n->node->attrs.eps;
    if (!s->train) {
        CUDNN_RET(s, cudnnBatchNormalizationForwardInference(s->cudnn, p->mode, &one, &zero, p->x,
                                                             x->data, p->x, y->data, p->bn, scale,
                                                             bias, mean, var, eps));
        return FM_OK;
    }
    CUDNN_RET(s, cudnnBatchNormalizationForwardTrainingEx(
                     s->cudnn, p->mode, CUDNN_BATCHNORM_OPS_BN, &one, &zero, p->x, x->data, NULL,
                     NULL, p->x, y->data, p->bn, scale, bias, BN_MOMENTUM, mean, var, eps,
                     bn_saved(n, 0), bn_saved(n, 1), NULL, s->workspace, p->ws_fwd, bn_reserve(n),
                     p->reserve));
    return FM_OK;
}

static enum fm_status bn_bwd(struct cu_state *s, struct cu_node *n)
{
    struct bn_priv *p = n->priv;
    struct cu_tensor *x = n->in[0], *y = n->out[0];
    struct cu_tensor *sc = n->in[1], *bi = n->in[2];
    double eps = n->node->attrs.eps < CUDNN_BN_MIN_EPSILON ? CUDNN_BN_MIN_EPSILON : n->node->attrs.eps;
    /* frozen scale/shift still get gradients from cuDNN: into scratch */
    void *dscale = n->dx[1] ? sc->grad : bn_saved(n, 2);
    void *dbias = n->dx[2] ? bi->grad : bn_saved(n, 3);
    const float *beta_d = n->dx_acc[0] ? &one : &zero;
    /* one blend factor for both: shared scale and shift are accumulated together */
    const float *beta_p = (n->dx[1] && n->dx_acc[1]) || (n->dx[2] && n->dx_acc[2]) ? &one : &zero;
    CUDNN_RET(s, cudnnBatchNormalizationBackwardEx(
                     s->cudnn, p->mode, CUDNN_BATCHNORM_OPS_BN, &one, beta_d, &one, beta_p, p->x,
                     x->data, NULL, NULL, p->x, y->grad, NULL, NULL, p->x, x->grad, p->bn, sc->data,
                     bi->data, dscale, dbias, eps, bn_saved(n, 0), bn_saved(n, 1), NULL,
                     s->workspace, p->ws_bwd, bn_reserve(n), p->reserve));
    return FM_OK;
}

static void bn_release(struct cu_state *s, struct cu_node *n)
{
    struct bn_priv *p = n->priv;
    if (!p)
        return;
    if (p->x)
        cudnnDestroyTensorDescriptor(p->x);
    if (p->bn)
        cudnnDestroyTensorDescriptor(p->bn);
    fm_dealloc(s->ctx, p);
    n->priv = NULL;
}

const struct cu_op cu_op_batchnorm = {bn_check, bn_plan, NULL, bn_fwd, bn_bwd, NULL, bn_release};
