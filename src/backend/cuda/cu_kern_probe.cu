/* Probe kernels: the vector-unit FMA peak (independent chains, so issue rate and not latency is
 * the limit) and the STREAM triad. Tensor-core peaks come from cuBLASLt instead (cu_probe.c):
 * a hand-written mma loop would measure this file, not the device. */
#include "cu_kern_common.cuh"

#define FMA_CHAINS 8
#define FMA_UNROLL 16

/* Each thread runs FMA_CHAINS independent chains x = x*a + b for iters*FMA_UNROLL rounds. The
 * result is stored only under a condition the compiler cannot prove false, so no chain is
 * dead code; a and b keep the values bounded (|a| < 1). */
template <typename V>
__device__ __forceinline__ V fma_op(V x, V a, V b);
template <> __device__ __forceinline__ float fma_op<float>(float x, float a, float b) { return fmaf(x, a, b); }
template <> __device__ __forceinline__ double fma_op<double>(double x, double a, double b) { return fma(x, a, b); }
template <> __device__ __forceinline__ __half2 fma_op<__half2>(__half2 x, __half2 a, __half2 b)
{
    return __hfma2(x, a, b);
}
template <> __device__ __forceinline__ __nv_bfloat162 fma_op<__nv_bfloat162>(__nv_bfloat162 x, __nv_bfloat162 a,
                                                                             __nv_bfloat162 b)
{
    return __hfma2(x, a, b);
}

template <typename V> __device__ __forceinline__ V fma_make(float v);
template <> __device__ __forceinline__ float fma_make<float>(float v) { return v; }
template <> __device__ __forceinline__ double fma_make<double>(float v) { return (double)v; }
template <> __device__ __forceinline__ __half2 fma_make<__half2>(float v) { return __float2half2_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat162 fma_make<__nv_bfloat162>(float v)
{
    return __float2bfloat162_rn(v);
}

template <typename V> __device__ __forceinline__ float fma_read(V v);
template <> __device__ __forceinline__ float fma_read<float>(float v) { return v; }
template <> __device__ __forceinline__ float fma_read<double>(double v) { return (float)v; }
template <> __device__ __forceinline__ float fma_read<__half2>(__half2 v) { return __low2float(v); }
template <> __device__ __forceinline__ float fma_read<__nv_bfloat162>(__nv_bfloat162 v) { return __low2float(v); }

template <typename V>
__global__ void k_fma(float *sink, uint32_t iters, float fa, float fb)
{
    V a = fma_make<V>(fa), b = fma_make<V>(fb);
    V x[FMA_CHAINS];
#pragma unroll
    for (int k = 0; k < FMA_CHAINS; k++)
        x[k] = fma_make<V>((float)(threadIdx.x + k) * 1e-3f);
    for (uint32_t it = 0; it < iters; it++) {
#pragma unroll
        for (int u = 0; u < FMA_UNROLL; u++) {
#pragma unroll
            for (int k = 0; k < FMA_CHAINS; k++)
                x[k] = fma_op<V>(x[k], a, b);
        }
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < FMA_CHAINS; k++)
        s += fma_read<V>(x[k]);
    if (s == fb * 12345.0f)   /* never true for the bounded chains; the store keeps them live */
        sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

extern "C" cudaError_t cuk_fma_peak(int precision, int blocks, int threads, uint32_t iters, void *sink,
                                    double *flops, cudaStream_t s)
{
    double fmas = (double)blocks * threads * iters * FMA_UNROLL * FMA_CHAINS;
    const float a = 0.999f, b = 0.001f;
    switch (precision) {
    case 0:
        k_fma<float><<<blocks, threads, 0, s>>>((float *)sink, iters, a, b);
        *flops = 2.0 * fmas;
        break;
    case 1:
        k_fma<__half2><<<blocks, threads, 0, s>>>((float *)sink, iters, a, b);
        *flops = 4.0 * fmas;   /* two lanes per instruction */
        break;
    case 2:
        k_fma<__nv_bfloat162><<<blocks, threads, 0, s>>>((float *)sink, iters, a, b);
        *flops = 4.0 * fmas;
        break;
    case 3:
        k_fma<double><<<blocks, threads, 0, s>>>((float *)sink, iters, a, b);
        *flops = 2.0 * fmas;
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

__global__ void k_triad(float4 *__restrict__ a, const float4 *__restrict__ b, const float4 *__restrict__ c,
                        uint32_t n4)
{
    CU_GRID_LOOP(i, n4)
    {
        float4 x = b[i], y = c[i];
        a[i] = make_float4(x.x + 3.0f * y.x, x.y + 3.0f * y.y, x.z + 3.0f * y.z, x.w + 3.0f * y.w);
    }
}

extern "C" cudaError_t cuk_triad(float *a, const float *b, const float *c, uint64_t n, cudaStream_t s)
{
    uint64_t n4 = n / 4;
    uint64_t blocks = (n4 + 255) / 256;
    if (blocks > 2147483647ull)
        return cudaErrorInvalidValue;
    k_triad<<<(unsigned)blocks, 256, 0, s>>>((float4 *)a, (const float4 *)b, (const float4 *)c, (uint32_t)n4);
    return cudaGetLastError();
}
