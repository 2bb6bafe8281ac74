/* Network kernels no library call fits: pooling with ceil mode, asymmetric padding or adaptive
 * windows (PyTorch's rules), the cross-entropy loss and its gradient, and the fused SGD update
 * over a flat parameter group. Accumulation is fp32 throughout. */
#include "cu_kern_common.cuh"

#include <math.h>

/* ---------------------------------------------------------------------------------------------
 * pooling
 * ------------------------------------------------------------------------------------------ */

struct pool_win {
    int hs, he, ws, we;
    float div;
};

/* PyTorch's windows: for k/s/pad pooling the divisor with padding counts the window clipped to
 * the padded input (avg_pool2d's pool_size); adaptive windows are [floor(i*In/Out),
 * ceil((i+1)*In/Out)). */
__device__ __forceinline__ pool_win pool_window(const cuk_pool &p, int oh, int ow)
{
    pool_win w;
    if (p.adaptive) {
        w.hs = (int)(((long long)oh * p.H) / p.OH);
        w.he = (int)(((long long)(oh + 1) * p.H + p.OH - 1) / p.OH);
        w.ws = (int)(((long long)ow * p.W) / p.OW);
        w.we = (int)(((long long)(ow + 1) * p.W + p.OW - 1) / p.OW);
        w.div = (float)((w.he - w.hs) * (w.we - w.ws));
        return w;
    }
    w.hs = oh * p.sh - p.pt;
    w.ws = ow * p.sw - p.pl;
    w.he = min(w.hs + p.kh, (int)p.H + p.pb);
    w.we = min(w.ws + p.kw, (int)p.W + p.pr);
    int padded = (w.he - w.hs) * (w.we - w.ws);
    w.hs = max(w.hs, 0);
    w.ws = max(w.ws, 0);
    w.he = min(w.he, (int)p.H);
    w.we = min(w.we, (int)p.W);
    w.div = (float)(p.count_pad ? padded : (w.he - w.hs) * (w.we - w.ws));
    return w;
}

/* output element i in physical order -> (n, c, oh, ow) */
__device__ __forceinline__ void pool_coords(const cuk_pool &p, uint32_t i, uint32_t &n, uint32_t &c,
                                            uint32_t &oh, uint32_t &ow)
{
    if (p.nhwc) {
        c = i % p.C;
        i /= p.C;
        ow = i % p.OW;
        i /= p.OW;
        oh = i % p.OH;
        n = i / p.OH;
    } else {
        ow = i % p.OW;
        i /= p.OW;
        oh = i % p.OH;
        i /= p.OH;
        c = i % p.C;
        n = i / p.C;
    }
}

__device__ __forceinline__ uint32_t pool_xidx(const cuk_pool &p, uint32_t n, uint32_t c, int h, int w)
{
    return p.nhwc ? ((n * p.H + h) * p.W + w) * p.C + c : ((n * p.C + c) * p.H + h) * p.W + w;
}

template <typename T>
__global__ void k_pool_fwd(cuk_pool p, const T *__restrict__ x, T *__restrict__ y, uint32_t total)
{
    CU_GRID_LOOP(i, total)
    {
        uint32_t n, c, oh, ow;
        pool_coords(p, i, n, c, oh, ow);
        pool_win w = pool_window(p, (int)oh, (int)ow);
        float acc = p.is_max ? -INFINITY : 0.0f;
        for (int h = w.hs; h < w.he; h++) {
            for (int q = w.ws; q < w.we; q++) {
                float v = cu_to_f(x[pool_xidx(p, n, c, h, q)]);
                if (p.is_max)
                    acc = (v > acc || isnan(v)) ? v : acc;
                else
                    acc += v;
            }
        }
        y[i] = cu_from_f<T>(p.is_max ? acc : acc / w.div);
    }
}

__device__ __forceinline__ void atomic_add_t(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add_t(__half *p, float v) { atomicAdd(p, __float2half_rn(v)); }
__device__ __forceinline__ void atomic_add_t(__nv_bfloat16 *p, float v)
{
    atomicAdd(p, __float2bfloat16_rn(v));
}

template <typename T>
__global__ void k_pool_bwd(cuk_pool p, const T *__restrict__ x, const T *__restrict__ dy, T *dx,
                           uint32_t total)
{
    CU_GRID_LOOP(i, total)
    {
        uint32_t n, c, oh, ow;
        pool_coords(p, i, n, c, oh, ow);
        pool_win w = pool_window(p, (int)oh, (int)ow);
        float g = cu_to_f(dy[i]);
        if (p.is_max) {
            /* the first maximum in scan order takes the gradient, as PyTorch's kernel does */
            float best = -INFINITY;
            int bi = -1;
            for (int h = w.hs; h < w.he; h++) {
                for (int q = w.ws; q < w.we; q++) {
                    uint32_t k = pool_xidx(p, n, c, h, q);
                    float v = cu_to_f(x[k]);
                    if (bi < 0 || v > best || isnan(v)) {
                        best = v;
                        bi = (int)k;
                    }
                }
            }
            if (bi >= 0)
                atomic_add_t(&dx[bi], g);
        } else {
            float v = g / w.div;
            for (int h = w.hs; h < w.he; h++)
                for (int q = w.ws; q < w.we; q++)
                    atomic_add_t(&dx[pool_xidx(p, n, c, h, q)], v);
        }
    }
}

extern "C" cudaError_t cuk_pool_fwd(int dt, struct cuk_pool p, const void *x, void *y, cudaStream_t s)
{
    uint32_t total = p.N * p.C * p.OH * p.OW;
    CU_DISPATCH(dt, T, k_pool_fwd<T><<<cu_blocks(total), 256, 0, s>>>(p, (const T *)x, (T *)y, total));
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_pool_bwd(int dt, struct cuk_pool p, const void *x, const void *dy, void *dx,
                                    cudaStream_t s)
{
    uint32_t total = p.N * p.C * p.OH * p.OW;
    CU_DISPATCH(dt, T, k_pool_bwd<T><<<cu_blocks(total), 256, 0, s>>>(p, (const T *)x, (const T *)dy,
                                                                       (T *)dx, total));
    return cudaGetLastError();
}

/* ---------------------------------------------------------------------------------------------
 * cross-entropy
 * ------------------------------------------------------------------------------------------ */

__device__ __forceinline__ float block_reduce(float v, float *sh, bool is_max)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (uint32_t h = blockDim.x / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h)
            sh[threadIdx.x] = is_max ? fmaxf(sh[threadIdx.x], sh[threadIdx.x + h])
                                     : sh[threadIdx.x] + sh[threadIdx.x + h];
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

__device__ __forceinline__ uint32_t label_of(const int64_t *labels, uint32_t row, uint32_t K)
{
    int64_t l = labels[row];
    return l < 0 ? 0u : (l >= (int64_t)K ? K - 1 : (uint32_t)l);
}

/* one block per row: lse = max + log(sum(exp(x - max))), loss_row = lse - x[label] */
template <typename T>
__global__ void k_xent_rows(const T *__restrict__ x, const int64_t *__restrict__ labels, uint32_t K,
                            float *__restrict__ lse, float *__restrict__ row_loss)
{
    __shared__ float sh[256];
    uint32_t r = blockIdx.x;
    const T *row = x + (uint64_t)r * K;
    float m = -INFINITY;
    for (uint32_t k = threadIdx.x; k < K; k += blockDim.x)
        m = fmaxf(m, cu_to_f(row[k]));
    m = block_reduce(m, sh, true);
    float sum = 0.0f;
    for (uint32_t k = threadIdx.x; k < K; k += blockDim.x)
        sum += expf(cu_to_f(row[k]) - m);
    sum = block_reduce(sum, sh, false);
    if (threadIdx.x == 0) {
        float l = m + logf(sum);
        lse[r] = l;
        row_loss[r] = l - cu_to_f(row[label_of(labels, r, K)]);
    }
}

/* the mean over rows in a fixed order (one block), so the loss is deterministic */
__global__ void k_xent_mean(const float *__restrict__ row_loss, uint32_t N, float *__restrict__ loss)
{
    __shared__ float sh[256];
    float s = 0.0f;
    for (uint32_t i = threadIdx.x; i < N; i += blockDim.x)
        s += row_loss[i];
    s = block_reduce(s, sh, false);
    if (threadIdx.x == 0)
        *loss = s / (float)N;
}

extern "C" cudaError_t cuk_xent_fwd(int dt, const void *logits, const int64_t *labels, uint32_t N, uint32_t K,
                                    float *lse, float *row_loss, float *loss, cudaStream_t s)
{
    CU_DISPATCH(dt, T, k_xent_rows<T><<<N, 256, 0, s>>>((const T *)logits, labels, K, lse, row_loss));
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return e;
    k_xent_mean<<<1, 256, 0, s>>>(row_loss, N, loss);
    return cudaGetLastError();
}

template <typename T>
__global__ void k_xent_bwd(const T *__restrict__ x, const int64_t *__restrict__ labels,
                           const float *__restrict__ lse, uint32_t N, uint32_t K, float scale, T *dx, int acc)
{
    uint32_t total = N * K;
    CU_GRID_LOOP(i, total)
    {
        uint32_t r = i / K, k = i % K;
        float p = expf(cu_to_f(x[i]) - lse[r]);
        float d = (p - (k == label_of(labels, r, K) ? 1.0f : 0.0f)) * scale / (float)N;
        dx[i] = cu_from_f<T>(acc ? d + cu_to_f(dx[i]) : d);
    }
}

extern "C" cudaError_t cuk_xent_bwd(int dt, const void *logits, const int64_t *labels, const float *lse,
                                    uint32_t N, uint32_t K, float scale, void *dlogits, int accumulate,
                                    cudaStream_t s)
{
    uint64_t total = (uint64_t)N * K;
    CU_DISPATCH(dt, T, k_xent_bwd<T><<<cu_blocks(total), 256, 0, s>>>((const T *)logits, labels, lse, N, K,
                                                                       scale, (T *)dlogits, accumulate));
    return cudaGetLastError();
}

/* ---------------------------------------------------------------------------------------------
 * SGD with momentum
 * ------------------------------------------------------------------------------------------ */

template <typename G, typename H>
__global__ void k_sgd(float *__restrict__ p, const G *__restrict__ grad, float *__restrict__ m,
                      H *__restrict__ half, uint32_t n, float lr, float momentum, float inv_scale)
{
    CU_GRID_LOOP(i, n)
    {
        float g = cu_to_f(grad[i]) * inv_scale;
        float v = momentum * m[i] + g;
        float w = p[i] - lr * v;
        m[i] = v;
        p[i] = w;
        if (half)
            half[i] = cu_from_f<H>(w);
    }
}

template <typename G>
static cudaError_t sgd_grad(float *p, const G *grad, float *m, void *half, int half_dt, uint32_t n, float lr,
                            float momentum, float inv_scale, cudaStream_t s)
{
    if (!half) {
        k_sgd<G, float><<<cu_blocks(n), 256, 0, s>>>(p, grad, m, (float *)0, n, lr, momentum, inv_scale);
        return cudaGetLastError();
    }
    CU_DISPATCH(half_dt, H, k_sgd<G, H><<<cu_blocks(n), 256, 0, s>>>(p, grad, m, (H *)half, n, lr, momentum,
                                                                       inv_scale));
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_sgd(float *p, const void *grad, int grad_dt, float *m, void *half, int half_dt,
                               uint64_t n, float lr, float momentum, float inv_scale, cudaStream_t s)
{
    CU_DISPATCH(grad_dt, G, return sgd_grad<G>(p, (const G *)grad, m, half, half_dt, (uint32_t)n, lr, momentum,
                                                inv_scale, s));
    return cudaErrorInvalidValue;
}
