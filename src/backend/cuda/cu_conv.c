/* Convolution through cuDNN: forward, backward data and backward filter (+ bias), each with
 * the algorithm cuDNN's timed search (Find...Ex) picks on this device within the workspace
 * limit, shared between layers of the same shape. fp32 is held to FMA kernels (no TF32);
 * tf32 allows TF32 tensor cores; fp16/bf16 compute in fp32 on tensor cores. Symmetric padding
 * only (cuDNN's descriptor has one pad per axis). */
#include "cu.h"

#include <string.h>

struct conv_key {
    int64_t x[4], w[4];
    int64_t pad[2], stride[2], dil[2], groups;
    bool nhwc;
};

struct conv_priv {
    struct conv_key key;
    cudnnTensorDescriptor_t x, y, b;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t cv[3];    /* forward, backward data, backward filter */
    cudnnConvolutionFwdAlgo_t fa;
    cudnnConvolutionBwdDataAlgo_t da;
    cudnnConvolutionBwdFilterAlgo_t wa;
    cudnnMathType_t math[3];
    size_t ws[3];
    bool tuned[3];
    struct cuk_bcast bias_bc;   /* dY viewed for the bias gradient's reduction */
    size_t reduce_ws;
};

static const float one = 1.0f, zero = 0.0f;

static enum fm_status conv_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                 const struct fm_node *n)
{
    const struct fm_attrs *a = &n->attrs;
    int rank = cu_rank_of(g, n->in[0]);
    if (n->n_in < 2 || n->in[1] == FM_NONE || rank < 3 || rank > 4)
        return cu_refuse(ctx, n, "the CUDA backend runs 1-D and 2-D convolutions only");
    if (a->pad[0] != a->pad[2] || a->pad[1] != a->pad[3])
        return cu_refuse(ctx, n, "asymmetric padding is not supported by cuDNN's convolutions");
    return FM_OK;
}

static enum fm_status conv_plan(struct cu_state *s, struct cu_node *n)
{
    enum fm_status st = FM_OK;
    const struct fm_attrs *a = &n->node->attrs;
    struct cu_tensor *x = n->in[0], *w = n->in[1], *y = n->out[0];
    if ((st = cu_check_numel(s, n, x->numel)) || (st = cu_check_numel(s, n, y->numel)))
        return st;
    struct conv_priv *p = fm_alloc(s->ctx, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    n->priv = p;
    memcpy(p->key.x, x->dims4, sizeof(p->key.x));
    memcpy(p->key.w, w->dims4, sizeof(p->key.w));
    p->key.pad[0] = a->pad[0];
    p->key.pad[1] = a->pad[1];
    p->key.stride[0] = a->stride[0];
    p->key.stride[1] = a->stride[1];
    p->key.dil[0] = a->dilation[0];
    p->key.dil[1] = a->dilation[1];
    p->key.groups = a->groups > 0 ? a->groups : 1;
    p->key.nhwc = x->nhwc;
    if ((st = cu_tensor_desc(s, &p->x, x, s->cdt)) || (st = cu_tensor_desc(s, &p->y, y, s->cdt)))
        return st;
    CUDNN_TRY(s, cudnnCreateFilterDescriptor(&p->w));
    CUDNN_TRY(s, cudnnSetFilter4dDescriptor(p->w, s->cudnn_dt,
                                            w->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                            (int)w->dims4[0], (int)w->dims4[1], (int)w->dims4[2],
                                            (int)w->dims4[3]));
    /* PyTorch's choice (cudnn/Conv_v7): FMA kernels when TF32 is off, TF32 allowed by the
     * default math type, tensor cores for half types */
    cudnnMathType_t math = s->prec == FM_PREC_FP32   ? CUDNN_FMA_MATH
                           : s->prec == FM_PREC_TF32 ? CUDNN_DEFAULT_MATH
                                                     : CUDNN_TENSOR_OP_MATH;
    for (int d = 0; d < 3; d++) {
        CUDNN_TRY(s, cudnnCreateConvolutionDescriptor(&p->cv[d]));
        CUDNN_TRY(s, cudnnSetConvolution2dDescriptor(p->cv[d], (int)a->pad[0], (int)a->pad[1],
                                                     (int)a->stride[0], (int)a->stride[1],
                                                     (int)a->dilation[0], (int)a->dilation[1],
                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        CUDNN_TRY(s, cudnnSetConvolutionGroupCount(p->cv[d], (int)p->key.groups));
        CUDNN_TRY(s, cudnnSetConvolutionMathType(p->cv[d], math));
        p->math[d] = math;
    }
    /* the output shape cuDNN computes must be the graph's */
    int od[4];
    CUDNN_TRY(s, cudnnGetConvolution2dForwardOutputDim(p->cv[0], p->x, p->w, &od[0], &od[1],
                                                       &od[2], &od[3]));
    for (int i = 0; i < 4; i++) {
        if (od[i] != y->dims4[i])
            return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': cuDNN computes output dim "
                            "%d = %d, the graph says %lld", n->node->name, i, od[i],
                            (long long)y->dims4[i]);
    }
    if (n->n_in > 2 && n->in[2]) {
        CUDNN_TRY(s, cudnnCreateTensorDescriptor(&p->b));
        CUDNN_TRY(s, cudnnSetTensor4dDescriptor(p->b, y->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                                s->cudnn_dt, 1, (int)y->dims4[1], 1, 1));
        /* dB[k] = sum over n, h, w of dY: cuDNN's BackwardBias has no bf16, so the own
         * reduction, viewing dY as [A][B][C][D] with k at B (NCHW) or D (NHWC) */
        uint32_t N = (uint32_t)y->dims4[0], K = (uint32_t)y->dims4[1];
        uint32_t HW = (uint32_t)(y->dims4[2] * y->dims4[3]);
        p->bias_bc = y->nhwc ? (struct cuk_bcast){N * HW, 1, 1, K, -1}
                             : (struct cuk_bcast){N, K, HW, 1, -1};
        p->reduce_ws = (size_t)cuk_reduce_scratch_bytes(p->bias_bc);
    }
    n->keep_in[0] = n->dx[1];
    n->bwd_split = true;
    return FM_OK;
fail:
    return st;
}

static bool same_key(const struct conv_key *a, const struct conv_key *b)
{
    return memcmp(a, b, sizeof(*a)) == 0;
}

static enum fm_status conv_tune(struct cu_state *s, struct cu_node *n)
{
    enum fm_status st = FM_OK;
    struct conv_priv *p = n->priv;
    /* a layer of the same shape tuned earlier decides for this one too */
    for (size_t i = 0; i < s->n_nodes && &s->nodes[i] != n; i++) {
        const struct cu_node *o = &s->nodes[i];
        const struct conv_priv *q = o->priv;
        if (o->op != &cu_op_conv || !q || !same_key(&q->key, &p->key))
            continue;
        bool covers = (q->tuned[0] || !p->tuned[0]) && (q->tuned[1] || !n->dx[0]) &&
                      (q->tuned[2] || !n->dx[1]);
        if (!covers)
            continue;
        p->fa = q->fa;
        p->da = q->da;
        p->wa = q->wa;
        memcpy(p->ws, q->ws, sizeof(p->ws));
        memcpy(p->tuned, q->tuned, sizeof(p->tuned));
        for (int d = 0; d < 3; d++) {
            p->math[d] = q->math[d];
            CUDNN_TRY(s, cudnnSetConvolutionMathType(p->cv[d], p->math[d]));
        }
        n->workspace = p->ws[0] > p->ws[1] ? p->ws[0] : p->ws[1];
        if (p->ws[2] > n->workspace)
            n->workspace = p->ws[2];
        if (p->reduce_ws > n->workspace)
            n->workspace = p->reduce_ws;
        return FM_OK;
    }
    struct cu_tensor *x = n->in[0], *w = n->in[1], *y = n->out[0];
    bool strict = s->prec == FM_PREC_FP32;
    int got = 0;
    {
        cudnnConvolutionFwdAlgoPerf_t r[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        CUDNN_TRY(s, cudnnFindConvolutionForwardAlgorithmEx(
                         s->cudnn, p->x, x->data, p->w, cu_val(w), p->cv[0], p->y, y->data,
                         CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, r, s->workspace,
                         s->workspace_limit));
        for (int i = 0; i < got && !p->tuned[0]; i++) {
            if (r[i].status != CUDNN_STATUS_SUCCESS || (strict && r[i].mathType == CUDNN_TENSOR_OP_MATH))
                continue;
            p->fa = r[i].algo;
            p->ws[0] = r[i].memory;
            p->math[0] = strict ? CUDNN_FMA_MATH : r[i].mathType;
            p->tuned[0] = true;
        }
    }
    if (n->dx[0]) {
        cudnnConvolutionBwdDataAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        CUDNN_TRY(s, cudnnFindConvolutionBackwardDataAlgorithmEx(
                         s->cudnn, p->w, cu_val(w), p->y, y->grad, p->cv[1], p->x, x->grad,
                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, r, s->workspace,
                         s->workspace_limit));
        for (int i = 0; i < got && !p->tuned[1]; i++) {
            if (r[i].status != CUDNN_STATUS_SUCCESS || (strict && r[i].mathType == CUDNN_TENSOR_OP_MATH))
                continue;
            p->da = r[i].algo;
            p->ws[1] = r[i].memory;
            p->math[1] = strict ? CUDNN_FMA_MATH : r[i].mathType;
            p->tuned[1] = true;
        }
    }
    if (n->dx[1]) {
        cudnnConvolutionBwdFilterAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        CUDNN_TRY(s, cudnnFindConvolutionBackwardFilterAlgorithmEx(
                         s->cudnn, p->x, x->data, p->y, y->grad, p->cv[2], p->w, w->grad,
                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got, r, s->workspace,
                         s->workspace_limit));
        for (int i = 0; i < got && !p->tuned[2]; i++) {
            if (r[i].status != CUDNN_STATUS_SUCCESS || (strict && r[i].mathType == CUDNN_TENSOR_OP_MATH))
                continue;
            p->wa = r[i].algo;
            p->ws[2] = r[i].memory;
            p->math[2] = strict ? CUDNN_FMA_MATH : r[i].mathType;
            p->tuned[2] = true;
        }
    }
    const char *what[3] = {"forward", "backward data", "backward filter"};
    bool want[3] = {true, n->dx[0], n->dx[1]};
    for (int d = 0; d < 3; d++) {
        if (want[d] && !p->tuned[d])
            return fm_error(s->ctx, FM_ERR_BACKEND, "layer '%s': cuDNN found no %s algorithm "
                            "for this convolution within %zu bytes of workspace", n->node->name,
                            what[d], s->workspace_limit);
        CUDNN_TRY(s, cudnnSetConvolutionMathType(p->cv[d], p->math[d]));
        if (p->ws[d] > n->workspace)
            n->workspace = p->ws[d];
    }
    if (p->reduce_ws > n->workspace)
        n->workspace = p->reduce_ws;
    return FM_OK;
fail:
    return st;
}

static enum fm_status conv_fwd(struct cu_state *s, struct cu_node *n)
{
    struct conv_priv *p = n->priv;
    struct cu_tensor *x = n->in[0], *w = n->in[1], *y = n->out[0];
    CUDNN_RET(s, cudnnConvolutionForward(s->cudnn, &one, p->x, x->data, p->w, cu_val(w), p->cv[0],
                                         p->fa, s->workspace, p->ws[0], &zero, p->y, y->data));
    if (p->b)
        CUDNN_RET(s, cudnnAddTensor(s->cudnn, &one, p->b, cu_val(n->in[2]), &one, p->y, y->data));
    return FM_OK;
}

static enum fm_status conv_bwd_data(struct cu_state *s, struct cu_node *n)
{
    struct conv_priv *p = n->priv;
    if (!n->dx[0])
        return FM_OK;
    struct cu_tensor *x = n->in[0], *w = n->in[1], *y = n->out[0];
    const float *beta = n->dx_acc[0] ? &one : &zero;
    CUDNN_RET(s, cudnnConvolutionBackwardData(s->cudnn, &one, p->w, cu_val(w), p->y, y->grad,
                                              p->cv[1], p->da, s->workspace, p->ws[1], beta, p->x,
                                              x->grad));
    return FM_OK;
}

static enum fm_status conv_bwd_weight(struct cu_state *s, struct cu_node *n)
{
    struct conv_priv *p = n->priv;
    struct cu_tensor *x = n->in[0], *w = n->in[1], *y = n->out[0];
    if (n->dx[1]) {
        const float *beta = n->dx_acc[1] ? &one : &zero;
        CUDNN_RET(s, cudnnConvolutionBackwardFilter(s->cudnn, &one, p->x, x->data, p->y, y->grad,
                                                    p->cv[2], p->wa, s->workspace, p->ws[2], beta,
                                                    p->w, w->grad));
    }
    if (p->b && n->dx[2])
        CU_RET(s, cuk_reduce_sum(y->dt, y->grad, n->in[2]->grad, n->in[2]->grad_dt, p->bias_bc,
                                 n->dx_acc[2], s->workspace, s->stream));
    return FM_OK;
}

static void conv_release(struct cu_state *s, struct cu_node *n)
{
    struct conv_priv *p = n->priv;
    if (!p)
        return;
    if (p->x)
        cudnnDestroyTensorDescriptor(p->x);
    if (p->y)
        cudnnDestroyTensorDescriptor(p->y);
    if (p->b)
        cudnnDestroyTensorDescriptor(p->b);
    if (p->w)
        cudnnDestroyFilterDescriptor(p->w);
    for (int d = 0; d < 3; d++)
        if (p->cv[d])
            cudnnDestroyConvolutionDescriptor(p->cv[d]);
    fm_dealloc(s->ctx, p);
    n->priv = NULL;
}

const struct cu_op cu_op_conv = {conv_check, conv_plan, conv_tune, conv_fwd, conv_bwd_data, conv_bwd_weight,
                                 conv_release};
