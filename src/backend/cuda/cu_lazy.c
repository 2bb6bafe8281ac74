/* cuDNN and cuBLASLt loaded when a CUDA measurement or probe starts, not when flopmeter starts:
 * linking them made every run of the binary (flopmeter count included) map and relocate about
 * 200 MB of libraries, ~100 ms and 200 MB of memory for a command that otherwise takes 3 ms.
 * Each entry point the backend uses is defined here with the vendor header's own prototype
 * (the compiler checks every one against the header's declaration) and forwards to the
 * library's symbol. The library handles are opened by cu_libs_open and kept in the backend's
 * state, so nothing here is global state: a call finds the loaded library with
 * dlopen(RTLD_NOLOAD) and fails with NOT_INITIALIZED when it is not loaded. The CUDA runtime is
 * linked statically (it loads the driver on first use). */
#include "cu.h"

#include <dlfcn.h>

#define CU_STR2(x) #x
#define CU_STR(x) CU_STR2(x)
#define CU_LIB_CUDNN "libcudnn.so." CU_STR(CUDNN_MAJOR)
#define CU_LIB_LT "libcublasLt.so." CU_STR(CUBLAS_VER_MAJOR)

/* The address of a symbol of an already loaded library, or NULL. */
static void *lazy_sym(const char *lib, const char *name)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return NULL;
    void *f = dlsym(h, name);
    dlclose(h);   /* drops only this call's reference: the state's keeps the library loaded */
    return f;
}

#define LAZY(LIB, RET, FAIL, NAME, PARAMS, ARGS)                                              \
    RET NAME PARAMS                                                                          \
    {                                                                                        \
        RET(*f) PARAMS;                                                                      \
        *(void **)&f = lazy_sym(LIB, #NAME);                                                 \
        return f ? f ARGS : FAIL;                                                            \
    }
#define LAZY_VOID(LIB, NAME, PARAMS, ARGS)                                                   \
    void NAME PARAMS                                                                         \
    {                                                                                        \
        void(*f) PARAMS;                                                                     \
        *(void **)&f = lazy_sym(LIB, #NAME);                                                 \
        if (f)                                                                               \
            f ARGS;                                                                          \
    }

enum fm_status cu_libs_open(struct fm_ctx *ctx, void **cudnn, void **lt)
{
    *lt = NULL;
    *cudnn = dlopen(CU_LIB_CUDNN, RTLD_NOW | RTLD_LOCAL);
    if (!*cudnn)
        return fm_error(ctx, FM_ERR_BACKEND,
                        "cuDNN %d could not be loaded (%s): install cuDNN %d for CUDA %d or put "
                        "it on LD_LIBRARY_PATH",
                        CUDNN_MAJOR, dlerror(), CUDNN_MAJOR, CUDART_VERSION / 1000);
    *lt = dlopen(CU_LIB_LT, RTLD_NOW | RTLD_LOCAL);
    if (!*lt) {
        enum fm_status st = fm_error(ctx, FM_ERR_BACKEND,
                                     "cuBLASLt could not be loaded (%s): install the CUDA %d "
                                     "libraries or put them on LD_LIBRARY_PATH",
                                     dlerror(), CUDART_VERSION / 1000);
        dlclose(*cudnn);
        *cudnn = NULL;
        return st;
    }
    return FM_OK;
}

void cu_libs_close(void *cudnn, void *lt)
{
    if (lt)
        dlclose(lt);
    if (cudnn)
        dlclose(cudnn);
}

const char *cudnnGetErrorString(cudnnStatus_t status)
{
    const char *(*f)(cudnnStatus_t);
    *(void **)&f = lazy_sym(CU_LIB_CUDNN, "cudnnGetErrorString");
    return f ? f(status) : "cuDNN is not loaded";
}

/* ---- the entry points the backend calls ---- */

LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnDestroyTensorDescriptor, (cudnnTensorDescriptor_t tensorDesc), (tensorDesc))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnCreateTensorDescriptor, (cudnnTensorDescriptor_t *tensorDesc), (tensorDesc))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSetTensor4dDescriptor, (cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format, cudnnDataType_t dataType, int n, int c, int h, int w), (tensorDesc, format, dataType, n, c, h, w))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSetConvolutionMathType, (cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType), (convDesc, mathType))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSoftmaxForward, (cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode, const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x, const void *beta, const cudnnTensorDescriptor_t yDesc, void *y), (handle, algo, mode, alpha, xDesc, x, beta, yDesc, y))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSoftmaxBackward, (cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo, cudnnSoftmaxMode_t mode, const void *alpha, const cudnnTensorDescriptor_t yDesc, const void *y, const cudnnTensorDescriptor_t dyDesc, const void *dy, const void *beta, const cudnnTensorDescriptor_t dxDesc, void *dx), (handle, algo, mode, alpha, yDesc, y, dyDesc, dy, beta, dxDesc, dx))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSetStream, (cudnnHandle_t handle, cudaStream_t streamId), (handle, streamId))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSetFilter4dDescriptor, (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType, cudnnTensorFormat_t format, int k, int c, int h, int w), (filterDesc, dataType, format, k, c, h, w))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSetConvolutionGroupCount, (cudnnConvolutionDescriptor_t convDesc, int groupCount), (convDesc, groupCount))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnSetConvolution2dDescriptor, (cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w, int u, int v, int dilation_h, int dilation_w, cudnnConvolutionMode_t mode, cudnnDataType_t computeType), (convDesc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, computeType))
LAZY_VOID(CU_LIB_CUDNN, cudnnGetLastErrorString, (char *message, size_t max_size), (message, max_size))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnGetConvolution2dForwardOutputDim, (const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t inputTensorDesc, const cudnnFilterDescriptor_t filterDesc, int *n, int *c, int *h, int *w), (convDesc, inputTensorDesc, filterDesc, n, c, h, w))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnGetBatchNormalizationTrainingExReserveSpaceSize, (cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t xDesc, size_t *sizeInBytes), (handle, mode, bnOps, activationDesc, xDesc, sizeInBytes))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize, (cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t zDesc, const cudnnTensorDescriptor_t yDesc, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const cudnnActivationDescriptor_t activationDesc, size_t *sizeInBytes), (handle, mode, bnOps, xDesc, zDesc, yDesc, bnScaleBiasMeanVarDesc, activationDesc, sizeInBytes))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnGetBatchNormalizationBackwardExWorkspaceSize, (cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const cudnnTensorDescriptor_t xDesc, const cudnnTensorDescriptor_t yDesc, const cudnnTensorDescriptor_t dyDesc, const cudnnTensorDescriptor_t dzDesc, const cudnnTensorDescriptor_t dxDesc, const cudnnTensorDescriptor_t dBnScaleBiasDesc, const cudnnActivationDescriptor_t activationDesc, size_t *sizeInBytes), (handle, mode, bnOps, xDesc, yDesc, dyDesc, dzDesc, dxDesc, dBnScaleBiasDesc, activationDesc, sizeInBytes))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnFindConvolutionForwardAlgorithmEx, (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t yDesc, void *y, const int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t *perfResults, void *workSpace, size_t workSpaceSizeInBytes), (handle, xDesc, x, wDesc, w, convDesc, yDesc, y, requestedAlgoCount, returnedAlgoCount, perfResults, workSpace, workSpaceSizeInBytes))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnFindConvolutionBackwardFilterAlgorithmEx, (cudnnHandle_t handle, const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t dyDesc, const void *y, const cudnnConvolutionDescriptor_t convDesc, const cudnnFilterDescriptor_t dwDesc, void *dw, const int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionBwdFilterAlgoPerf_t *perfResults, void *workSpace, size_t workSpaceSizeInBytes), (handle, xDesc, x, dyDesc, y, convDesc, dwDesc, dw, requestedAlgoCount, returnedAlgoCount, perfResults, workSpace, workSpaceSizeInBytes))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnFindConvolutionBackwardDataAlgorithmEx, (cudnnHandle_t handle, const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnTensorDescriptor_t dyDesc, const void *dy, const cudnnConvolutionDescriptor_t convDesc, const cudnnTensorDescriptor_t dxDesc, void *dx, const int requestedAlgoCount, int *returnedAlgoCount, cudnnConvolutionBwdDataAlgoPerf_t *perfResults, void *workSpace, size_t workSpaceSizeInBytes), (handle, wDesc, w, dyDesc, dy, convDesc, dxDesc, dx, requestedAlgoCount, returnedAlgoCount, perfResults, workSpace, workSpaceSizeInBytes))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnDestroyFilterDescriptor, (cudnnFilterDescriptor_t filterDesc), (filterDesc))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnDestroyConvolutionDescriptor, (cudnnConvolutionDescriptor_t convDesc), (convDesc))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnDestroy, (cudnnHandle_t handle), (handle))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnDeriveBNTensorDescriptor, (cudnnTensorDescriptor_t derivedBnDesc, const cudnnTensorDescriptor_t xDesc, cudnnBatchNormMode_t mode), (derivedBnDesc, xDesc, mode))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnCreateFilterDescriptor, (cudnnFilterDescriptor_t *filterDesc), (filterDesc))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnCreateConvolutionDescriptor, (cudnnConvolutionDescriptor_t *convDesc), (convDesc))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnCreate, (cudnnHandle_t *handle), (handle))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnConvolutionForward, (cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes, const void *beta, const cudnnTensorDescriptor_t yDesc, void *y), (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, yDesc, y))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnConvolutionBackwardFilter, (cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t dyDesc, const void *dy, const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdFilterAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes, const void *beta, const cudnnFilterDescriptor_t dwDesc, void *dw), (handle, alpha, xDesc, x, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, dwDesc, dw))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnConvolutionBackwardData, (cudnnHandle_t handle, const void *alpha, const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnTensorDescriptor_t dyDesc, const void *dy, const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdDataAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes, const void *beta, const cudnnTensorDescriptor_t dxDesc, void *dx), (handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo, workSpace, workSpaceSizeInBytes, beta, dxDesc, dx))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnBatchNormalizationForwardTrainingEx, (cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const void *alpha, const void *beta, const cudnnTensorDescriptor_t xDesc, const void *xData, const cudnnTensorDescriptor_t zDesc, const void *zData, const cudnnTensorDescriptor_t yDesc, void *yData, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void *bnScale, const void *bnBias, double exponentialAverageFactor, void *resultRunningMean, void *resultRunningVariance, double epsilon, void *resultSaveMean, void *resultSaveInvVariance, cudnnActivationDescriptor_t activationDesc, void *workspace, size_t workSpaceSizeInBytes, void *reserveSpace, size_t reserveSpaceSizeInBytes), (handle, mode, bnOps, alpha, beta, xDesc, xData, zDesc, zData, yDesc, yData, bnScaleBiasMeanVarDesc, bnScale, bnBias, exponentialAverageFactor, resultRunningMean, resultRunningVariance, epsilon, resultSaveMean, resultSaveInvVariance, activationDesc, workspace, workSpaceSizeInBytes, reserveSpace, reserveSpaceSizeInBytes))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnBatchNormalizationForwardInference, (cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void *alpha, const void *beta, const cudnnTensorDescriptor_t xDesc, const void *x, const cudnnTensorDescriptor_t yDesc, void *y, const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void *bnScale, const void *bnBias, const void *estimatedMean, const void *estimatedVariance, double epsilon), (handle, mode, alpha, beta, xDesc, x, yDesc, y, bnScaleBiasMeanVarDesc, bnScale, bnBias, estimatedMean, estimatedVariance, epsilon))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnBatchNormalizationBackwardEx, (cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t bnOps, const void *alphaDataDiff, const void *betaDataDiff, const void *alphaParamDiff, const void *betaParamDiff, const cudnnTensorDescriptor_t xDesc, const void *xData, const cudnnTensorDescriptor_t yDesc, const void *yData, const cudnnTensorDescriptor_t dyDesc, const void *dyData, const cudnnTensorDescriptor_t dzDesc, void *dzData, const cudnnTensorDescriptor_t dxDesc, void *dxData, const cudnnTensorDescriptor_t dBnScaleBiasDesc, const void *bnScaleData, const void *bnBiasData, void *dBnScaleData, void *dBnBiasData, double epsilon, const void *savedMean, const void *savedInvVariance, cudnnActivationDescriptor_t activationDesc, void *workSpace, size_t workSpaceSizeInBytes, void *reserveSpace, size_t reserveSpaceSizeInBytes), (handle, mode, bnOps, alphaDataDiff, betaDataDiff, alphaParamDiff, betaParamDiff, xDesc, xData, yDesc, yData, dyDesc, dyData, dzDesc, dzData, dxDesc, dxData, dBnScaleBiasDesc, bnScaleData, bnBiasData, dBnScaleData, dBnBiasData, epsilon, savedMean, savedInvVariance, activationDesc, workSpace, workSpaceSizeInBytes, reserveSpace, reserveSpaceSizeInBytes))
LAZY(CU_LIB_CUDNN, cudnnStatus_t, CUDNN_STATUS_NOT_INITIALIZED, cudnnAddTensor, (cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t aDesc, const void *A, const void *beta, const cudnnTensorDescriptor_t cDesc, void *C), (handle, alpha, aDesc, A, beta, cDesc, C))

LAZY(CU_LIB_LT, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulDescSetAttribute, (cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr, const void* buf, size_t sizeInBytes), (matmulDesc, attr, buf, sizeInBytes))
LAZY(CU_LIB_LT, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t matLayout), (matLayout))
LAZY(CU_LIB_LT, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatrixLayoutCreate, (cublasLtMatrixLayout_t* matLayout, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld), (matLayout, type, rows, cols, ld))
LAZY(CU_LIB_LT, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
LAZY(CU_LIB_LT, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtDestroy, (cublasLtHandle_t lightHandle), (lightHandle))
LAZY(CU_LIB_LT, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtCreate, (cublasLtHandle_t* lightHandle), (lightHandle))
LAZY(CU_LIB_LT, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulPreferenceSetAttribute, (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf, size_t sizeInBytes), (pref, attr, buf, sizeInBytes))
LAZY(CU_LIB_LT, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t* pref), (pref))
LAZY(CU_LIB_LT, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t matmulDesc), (matmulDesc))
LAZY(CU_LIB_LT, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulDescCreate, (cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType, cudaDataType_t scaleType), (matmulDesc, computeType, scaleType))
LAZY(CU_LIB_LT, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmulAlgoGetHeuristic, (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc, cublasLtMatmulPreference_t preference, int requestedAlgoCount, cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount), (lightHandle, operationDesc, Adesc, Bdesc, Cdesc, Ddesc, preference, requestedAlgoCount, heuristicResultsArray, returnAlgoCount))
LAZY(CU_LIB_LT, cublasStatus_t, CUBLAS_STATUS_NOT_INITIALIZED, cublasLtMatmul, (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceSizeInBytes, cudaStream_t stream), (lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace, workspaceSizeInBytes, stream))
