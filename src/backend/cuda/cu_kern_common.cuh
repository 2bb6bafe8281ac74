/* Device-side helpers shared by the backend's kernel files: loads and stores through float for
 * the three storage types, 16-byte vectors, the type dispatch and launch sizing. Kernels
 * compute in fp32 whatever they store, so fp16/bf16 round once per stored value. */
#ifndef FM_CU_KERN_COMMON_CUH
#define FM_CU_KERN_COMMON_CUH

#include "cu_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

__device__ __forceinline__ float cu_to_f(float v) { return v; }
__device__ __forceinline__ float cu_to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float cu_to_f(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T cu_from_f(float v);
template <> __device__ __forceinline__ float cu_from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half cu_from_f<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 cu_from_f<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

/* 16 bytes of T: float4-wide loads and stores for memory-bound kernels. */
template <typename T> struct alignas(16) cu_vec {
    static constexpr int N = 16 / sizeof(T);
    T v[N];
};

static inline bool cu_aligned16(const void *p)
{
    return ((uintptr_t)p & 15u) == 0;
}

/* Blocks for a grid-stride loop over n items with 256 threads: enough to fill any current GPU
 * several times over, few enough that the loop amortizes index setup. */
static inline unsigned cu_blocks(uint64_t n)
{
    uint64_t b = (n + 255) / 256;
    if (b > 65536)
        b = 65536;
    return b ? (unsigned)b : 1u;
}

#define CU_GRID_LOOP(i, n)                                                                   \
    for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += gridDim.x * blockDim.x)

/* Runs the statement with T bound to the storage type dt; unknown types are an error. */
#define CU_DISPATCH(dt, T, ...)                                                              \
    switch (dt) {                                                                            \
    case CU_F32: {                                                                           \
        typedef float T;                                                                     \
        __VA_ARGS__;                                                                         \
        break;                                                                               \
    }                                                                                        \
    case CU_F16: {                                                                           \
        typedef __half T;                                                                    \
        __VA_ARGS__;                                                                         \
        break;                                                                               \
    }                                                                                        \
    case CU_BF16: {                                                                          \
        typedef __nv_bfloat16 T;                                                             \
        __VA_ARGS__;                                                                         \
        break;                                                                               \
    }                                                                                        \
    default:                                                                                 \
        return cudaErrorInvalidValue;                                                        \
    }

/* SplitMix64 finalizer: the counter-based hash behind random fills and dropout masks. */
__device__ __forceinline__ uint64_t cu_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif
