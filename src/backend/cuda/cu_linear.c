/* Linear layers (torch.nn.Linear, and ONNX Gemm in Linear's form) through cuBLASLt: the
 * forward with the bias fused as an epilogue, the input and weight gradients as two more
 * products, the bias gradient as a column sum. Row-major (M,K) data is column-major (K,M), so
 * Y = X W^T is Y^T = W^T-as-stored x X^T-as-stored (derivation at each call). Also the GEMM
 * helper the probe times. fp32 computes in strict fp32, tf32 in CUBLAS_COMPUTE_32F_FAST_TF32,
 * fp16/bf16 with fp32 accumulation. */
#include "cu.h"

#include <string.h>

static cudaDataType_t lt_type(enum cu_dt dt)
{
    return dt == CU_F16 ? CUDA_R_16F : dt == CU_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

cublasComputeType_t cu_lt_compute(enum fm_precision prec)
{
    return prec == FM_PREC_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

void cu_mm_release(struct cu_mm *mm)
{
    if (mm->desc)
        cublasLtMatmulDescDestroy(mm->desc);
    if (mm->a)
        cublasLtMatrixLayoutDestroy(mm->a);
    if (mm->b)
        cublasLtMatrixLayoutDestroy(mm->b);
    if (mm->c)
        cublasLtMatrixLayoutDestroy(mm->c);
    memset(mm, 0, sizeof(*mm));
}

enum fm_status cu_mm_init(struct cu_state *s, struct cu_mm *mm, bool ta, bool tb, uint64_t m,
                          uint64_t n, uint64_t k, enum cu_dt ab_dt, enum cu_dt c_dt,
                          cublasComputeType_t ct, const void *bias, size_t ws_limit)
{
    enum fm_status st = FM_OK;
    cublasLtMatmulPreference_t pref = NULL;
    memset(mm, 0, sizeof(*mm));
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    /* as stored (column-major): A is m x k (k x m when transposed), B is k x n (n x k) */
    uint64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    CUBLAS_TRY(s, cublasLtMatmulDescCreate(&mm->desc, ct, CUDA_R_32F));
    CUBLAS_TRY(s, cublasLtMatmulDescSetAttribute(mm->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)));
    CUBLAS_TRY(s, cublasLtMatmulDescSetAttribute(mm->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)));
    if (bias) {
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        CUBLAS_TRY(s, cublasLtMatmulDescSetAttribute(mm->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                                     sizeof(epi)));
        CUBLAS_TRY(s, cublasLtMatmulDescSetAttribute(mm->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                     &bias, sizeof(bias)));
    }
    CUBLAS_TRY(s, cublasLtMatrixLayoutCreate(&mm->a, lt_type(ab_dt), ar, ac, (int64_t)ar));
    CUBLAS_TRY(s, cublasLtMatrixLayoutCreate(&mm->b, lt_type(ab_dt), br, bc, (int64_t)br));
    CUBLAS_TRY(s, cublasLtMatrixLayoutCreate(&mm->c, lt_type(c_dt), m, n, (int64_t)m));
    CUBLAS_TRY(s, cublasLtMatmulPreferenceCreate(&pref));
    CUBLAS_TRY(s, cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                       &ws_limit, sizeof(ws_limit)));
    cublasLtMatmulHeuristicResult_t res;
    int got = 0;
    CUBLAS_TRY(s, cublasLtMatmulAlgoGetHeuristic(s->lt, mm->desc, mm->a, mm->b, mm->c, mm->c, pref,
                                                 1, &res, &got));
    if (got < 1) {
        st = fm_error(s->ctx, FM_ERR_BACKEND, "cuBLASLt has no algorithm for a %llux%llux%llu "
                      "product%s%s", (unsigned long long)m, (unsigned long long)n,
                      (unsigned long long)k, s->where ? " at " : "", s->where ? s->where : "");
        goto fail;
    }
    mm->algo = res.algo;
    mm->ws = res.workspaceSize;
    cublasLtMatmulPreferenceDestroy(pref);
    return FM_OK;
fail:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    cu_mm_release(mm);
    return st;
}

enum fm_status cu_mm_run(struct cu_state *s, const struct cu_mm *mm, const void *a, const void *b,
                         void *c, bool accumulate)
{
    const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
    CUBLAS_RET(s, cublasLtMatmul(s->lt, mm->desc, &alpha, a, mm->a, b, mm->b, &beta, c, mm->c, c,
                                 mm->c, &mm->algo, s->workspace, mm->ws, s->stream));
    return FM_OK;
}

/* ---- Linear: X (M,K) row-major, W (N,K), B (N) -> Y (M,N) ---- */

struct linear_priv {
    uint64_t M, N, K;
    struct cu_mm fwd, dx, dw;
};

/* Linear, and Gemm when it is one (fm_op_linear_form: what a Linear layer is, decided in the
 * ops); other Gemm forms have no lowering here. */
static enum fm_status linear_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                   const struct fm_node *n)
{
    if (!fm_op_linear_form(g, n))
        return cu_refuse(ctx, n, "the CUDA backend runs Gemm only in Linear's form (transB, "
                                 "alpha = beta = 1, a vector bias)");
    if (cu_rank_of(g, n->in[1]) != 2)
        return cu_refuse(ctx, n, "a weight that is not a matrix");
    return FM_OK;
}

static enum fm_status linear_plan(struct cu_state *s, struct cu_node *n)
{
    struct cu_tensor *x = n->in[0], *w = n->in[1];
    if (x->nhwc)
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': a linear layer over a "
                        "channels-last 4-D tensor", n->node->name);
    struct linear_priv *p = fm_alloc(s->ctx, sizeof(*p));
    if (!p)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    n->priv = p;
    p->N = (uint64_t)w->t->shape.dims[0];
    p->K = (uint64_t)w->t->shape.dims[1];
    p->M = x->numel / p->K;
    enum fm_status st = cu_check_numel(s, n, n->out[0]->numel);
    if (st)
        return st;
    n->keep_in[0] = n->dx[1];
    n->bwd_split = true;
    return FM_OK;
}

static enum fm_status linear_tune(struct cu_state *s, struct cu_node *n)
{
    struct linear_priv *p = n->priv;
    cublasComputeType_t ct = cu_lt_compute(s->prec);
    const void *bias = n->n_in > 2 && n->in[2] ? cu_val(n->in[2]) : NULL;
    /* Y^T (N x M) = W-as-stored^T (W is K x N column-major) x X-as-stored (K x M) */
    enum fm_status st = cu_mm_init(s, &p->fwd, true, false, p->N, p->M, p->K, s->cdt, s->cdt, ct,
                                   bias, s->workspace_limit);
    if (st)
        return st;
    size_t ws = p->fwd.ws;
    if (n->dx[0]) {
        /* dX^T (K x M) = W-as-stored (K x N) x dY^T (N x M) */
        st = cu_mm_init(s, &p->dx, false, false, p->K, p->M, p->N, s->cdt, s->cdt, ct, NULL,
                        s->workspace_limit);
        if (st)
            return st;
        ws = p->dx.ws > ws ? p->dx.ws : ws;
    }
    if (n->dx[1]) {
        /* dW^T (K x N) = X-as-stored (K x M) x (dY^T)^T (M x N) */
        st = cu_mm_init(s, &p->dw, false, true, p->K, p->N, p->M, s->cdt, s->cdt, ct, NULL,
                        s->workspace_limit);
        if (st)
            return st;
        ws = p->dw.ws > ws ? p->dw.ws : ws;
    }
    struct cuk_bcast bc = {(uint32_t)p->M, 1, 1, (uint32_t)p->N, -1};
    size_t red = (size_t)cuk_reduce_scratch_bytes(bc);
    n->workspace = red > ws ? red : ws;
    return FM_OK;
}

static enum fm_status linear_fwd(struct cu_state *s, struct cu_node *n)
{
    struct linear_priv *p = n->priv;
    return cu_mm_run(s, &p->fwd, cu_val(n->in[1]), n->in[0]->data, n->out[0]->data, false);
}

static enum fm_status linear_bwd_data(struct cu_state *s, struct cu_node *n)
{
    struct linear_priv *p = n->priv;
    if (!n->dx[0])
        return FM_OK;
    return cu_mm_run(s, &p->dx, cu_val(n->in[1]), n->out[0]->grad, n->in[0]->grad, n->dx_acc[0]);
}

static enum fm_status linear_bwd_weight(struct cu_state *s, struct cu_node *n)
{
    struct linear_priv *p = n->priv;
    if (n->dx[1]) {
        enum fm_status st = cu_mm_run(s, &p->dw, n->in[0]->data, n->out[0]->grad, n->in[1]->grad,
                                      n->dx_acc[1]);
        if (st)
            return st;
    }
    if (n->n_in > 2 && n->in[2] && n->dx[2]) {
        /* dB[j] = sum over rows of dY (M, N): A = M rows summed, D = N outputs side by side */
        struct cuk_bcast bc = {(uint32_t)p->M, 1, 1, (uint32_t)p->N, -1};
        CU_RET(s, cuk_reduce_sum(n->out[0]->dt, n->out[0]->grad, n->in[2]->grad,
                                 n->in[2]->grad_dt, bc, n->dx_acc[2], s->workspace, s->stream));
    }
    return FM_OK;
}

static void linear_release(struct cu_state *s, struct cu_node *n)
{
    struct linear_priv *p = n->priv;
    if (!p)
        return;
    cu_mm_release(&p->fwd);
    cu_mm_release(&p->dx);
    cu_mm_release(&p->dw);
    fm_dealloc(s->ctx, p);
    n->priv = NULL;
}

const struct cu_op cu_op_linear = {linear_check, linear_plan, linear_tune, linear_fwd, linear_bwd_data,
                                   linear_bwd_weight, linear_release};
