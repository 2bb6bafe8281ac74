/* Helpers shared by the CUDA backend's files: failure messages that name the vendor call, the
 * layer and the source line; tensor descriptors in either layout. Out-of-memory
 * is FM_ERR_DEVICE so callers can tell it from a broken call (FM_ERR_BACKEND). */
#include "cu.h"

#include <string.h>

static const char *base_name(const char *file)
{
    const char *s = strrchr(file, '/');
    return s ? s + 1 : file;
}

enum fm_status cu_fail_cuda(struct cu_state *s, cudaError_t e, const char *call, const char *file,
                            int line)
{
    enum fm_status st = e == cudaErrorMemoryAllocation ? FM_ERR_DEVICE : FM_ERR_BACKEND;
    return fm_error(s->ctx, st, "%s failed: %s (%s)%s%s (%s:%d)", call, cudaGetErrorString(e),
                    cudaGetErrorName(e), s->where ? ", at " : "", s->where ? s->where : "",
                    base_name(file), line);
}

enum fm_status cu_fail_cudnn(struct cu_state *s, cudnnStatus_t e, const char *call,
                             const char *file, int line)
{
    enum fm_status st = e == CUDNN_STATUS_ALLOC_FAILED ? FM_ERR_DEVICE : FM_ERR_BACKEND;
    char detail[256] = "";
    cudnnGetLastErrorString(detail, sizeof(detail));
    return fm_error(s->ctx, st, "%s failed: %s%s%s%s%s (%s:%d)", call, cudnnGetErrorString(e),
                    detail[0] ? " - " : "", detail, s->where ? ", at " : "",
                    s->where ? s->where : "", base_name(file), line);
}

static const char *cublas_name(cublasStatus_t e)
{
    switch (e) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown cuBLAS status";
    }
}

enum fm_status cu_fail_cublas(struct cu_state *s, cublasStatus_t e, const char *call,
                              const char *file, int line)
{
    enum fm_status st = e == CUBLAS_STATUS_ALLOC_FAILED ? FM_ERR_DEVICE : FM_ERR_BACKEND;
    return fm_error(s->ctx, st, "%s failed: %s%s%s (%s:%d)", call, cublas_name(e),
                    s->where ? ", at " : "", s->where ? s->where : "", base_name(file), line);
}

void *cu_val(const struct cu_tensor *t)
{
    return t->half ? t->half : t->data;
}

enum cu_dt cu_val_dt(const struct cu_state *s, const struct cu_tensor *t)
{
    return t->half ? s->cdt : t->dt;
}

cudnnDataType_t cu_cudnn_dt(enum cu_dt dt)
{
    switch (dt) {
    case CU_F16: return CUDNN_DATA_HALF;
    case CU_BF16: return CUDNN_DATA_BFLOAT16;
    case CU_I64: return CUDNN_DATA_INT64;
    default: return CUDNN_DATA_FLOAT;
    }
}

void cu_dims4(const struct fm_tensor *t, int64_t out[4])
{
    const struct fm_shape *sh = &t->shape;
    out[0] = out[1] = out[2] = out[3] = 1;
    switch (sh->rank) {
    case 0: break;
    case 1: out[1] = sh->dims[0]; break;
    case 2: out[0] = sh->dims[0]; out[1] = sh->dims[1]; break;
    case 3: out[0] = sh->dims[0]; out[1] = sh->dims[1]; out[3] = sh->dims[2]; break;
    default:
        /* rank 4 as is; higher ranks fold their trailing dims into W (elementwise use only) */
        out[0] = sh->dims[0];
        out[1] = sh->dims[1];
        out[2] = sh->dims[2];
        for (int i = 3; i < sh->rank; i++)
            out[3] *= sh->dims[i];
        break;
    }
}

enum fm_status cu_tensor_desc(struct cu_state *s, cudnnTensorDescriptor_t *d,
                              const struct cu_tensor *t, enum cu_dt dt)
{
    enum fm_status st = FM_OK;
    *d = NULL;
    CUDNN_TRY(s, cudnnCreateTensorDescriptor(d));
    CUDNN_TRY(s, cudnnSetTensor4dDescriptor(*d, t->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                            cu_cudnn_dt(dt), (int)t->dims4[0], (int)t->dims4[1],
                                            (int)t->dims4[2], (int)t->dims4[3]));
    return FM_OK;
fail:
    if (*d)
        cudnnDestroyTensorDescriptor(*d);
    *d = NULL;
    return st;
}

enum fm_status cu_check_numel(struct cu_state *s, const struct cu_node *n, uint64_t numel)
{
    if (numel >= (1ull << 31))
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED,
                        "layer '%s': %llu elements in one tensor; the CUDA backend's kernels index "
                        "with 32 bits (use a smaller fm_zoo_opts.batch)",
                        n->node->name, (unsigned long long)numel);
    return FM_OK;
}

/* Shape and refusal helpers every op family file uses (here, below the op table, so that the
 * table and the family files do not call each other in a circle). */
int cu_rank_of(const struct fm_graph *g, fm_tid t)
{
    return t == FM_NONE ? -1 : fm_graph_tensor(g, t)->shape.rank;
}

uint64_t cu_numel_of(const struct fm_graph *g, fm_tid t)
{
    uint64_t n = 0;
    if (t != FM_NONE)
        fm_shape_numel(&fm_graph_tensor(g, t)->shape, &n);
    return n;
}

enum fm_status cu_refuse(struct fm_ctx *ctx, const struct fm_node *n, const char *why)
{
    return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s' (%s): %s", n->name, n->op_name, why);
}
