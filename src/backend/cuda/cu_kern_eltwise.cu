/* Pointwise kernels: type casts, random fills, copies and layout transposes, activations and
 * their gradients, binary arithmetic with one broadcast operand and the reductions its
 * gradient needs, dropout. Memory-bound, so same-shape paths move 16 bytes per access; the
 * broadcast paths index through [A][B][C][D] (see cu_kernels.h). */
#include "cu_kern_common.cuh"

/* ---------------------------------------------------------------------------------------------
 * casts, fills, copies
 * ------------------------------------------------------------------------------------------ */

template <typename S, typename D>
__global__ void k_cast(const S *__restrict__ src, D *__restrict__ dst, uint32_t n, float scale)
{
    CU_GRID_LOOP(i, n) dst[i] = cu_from_f<D>(cu_to_f(src[i]) * scale);
}

template <typename S>
static cudaError_t cast_from(const S *src, void *dst, int ddt, uint32_t n, float scale, cudaStream_t s)
{
    CU_DISPATCH(ddt, D, k_cast<S, D><<<cu_blocks(n), 256, 0, s>>>(src, (D *)dst, n, scale));
    return cudaGetLastError();
}

extern "C" cudaError_t cuk_cast(const void *src, int sdt, void *dst, int ddt, uint64_t n, float scale,
                                cudaStream_t s)
{
    CU_DISPATCH(sdt, S, return cast_from<S>((const S *)src, dst, ddt, (uint32_t)n, scale, s));
    return cudaErrorInvalidValue;
}

template <typename T>
__global__ void k_fill_random(T *__restrict__ p, uint32_t n, uint64_t seed, float scale)
{
    CU_GRID_LOOP(i, n)
    {
        uint64_t h = cu_mix64(seed * 0x9e3779b97f4a7c15ull + i);
        /* 24 random bits -> [-1, 1), then moved off zero by half a step */
        float u = ((float)(h >> 40) + 0.5f) * (2.0f / 16777216.0f) - 1.0f;
        p[i] = cu_from_f<T>(u * scale);
    }
}

extern "C" cudaError_t cuk_fill_random(void *p, int dt, uint64_t n, uint64_t seed, float scale,
                                       cudaStream_t s)
{
    CU_DISPATCH(dt, T, k_fill_random<T><<<cu_blocks(n), 256, 0, s>>>((T *)p, (uint32_t)n, seed, scale));
    return cudaGetLastError();
}

template <typename T>
__global__ void k_copy_vec(const cu_vec<T> *__restrict__ x, cu_vec<T> *__restrict__ y, uint32_t nv,
                           int acc)
{
    CU_GRID_LOOP(i, nv)
    {
        cu_vec<T> a = x[i];
        if (acc) {
            cu_vec<T> b = y[i];
#pragma unroll
            for (int k = 0; k < cu_vec<T>::N; k++)
                a.v[k] = cu_from_f<T>(cu_to_f(a.v[k]) + cu_to_f(b.v[k]));
        }
        y[i] = a;
    }
}

template <typename T>
__global__ void k_copy(const T *__restrict__ x, T *__restrict__ y, uint32_t n, int acc)
{
    CU_GRID_LOOP(i, n) y[i] = acc ? cu_from_f<T>(cu_to_f(x[i]) + cu_to_f(y[i])) : x[i];
}

extern "C" cudaError_t cuk_copy(int dt, const void *x, void *y, uint64_t n, int accumulate,
                                cudaStream_t s)
{
    if (!accumulate)
        return cudaMemcpyAsync(y, x, n * (dt == CU_F32 ? 4 : 2), cudaMemcpyDeviceToDevice, s);
    CU_DISPATCH(dt, T, {
        uint32_t vn = cu_vec<T>::N;
        if (cu_aligned16(x) && cu_aligned16(y) && n % vn == 0)
            k_copy_vec<T><<<cu_blocks(n / vn), 256, 0, s>>>((const cu_vec<T> *)x, (cu_vec<T> *)y,
                                                             (uint32_t)(n / vn), 1);
        else
            k_copy<T><<<cu_blocks(n), 256, 0, s>>>((const T *)x, (T *)y, (uint32_t)n, 1);
    });
    return cudaGetLastError();
}

/* dst[b][c][r] (+)= src[b][r][c] through a 32x33 shared tile (the +1 column avoids bank
 * conflicts on the transposed read). */
template <typename T>
__global__ void k_transpose(const T *__restrict__ src, T *__restrict__ dst, uint32_t rows, uint32_t cols,
                            int acc)
{
    __shared__ float tile[32][33];
    uint32_t b = blockIdx.z;
    uint32_t r0 = blockIdx.y * 32, c0 = blockIdx.x * 32;
    const T *sb = src + (uint64_t)b * rows * cols;
    T *db = dst + (uint64_t)b * rows * cols;
    for (uint32_t k = threadIdx.y; k < 32; k += blockDim.y) {
        uint32_t r = r0 + k, c = c0 + threadIdx.x;
        if (r < rows && c < cols)
            tile[k][threadIdx.x] = cu_to_f(sb[(uint64_t)r * cols + c]);
    }
    __syncthreads();
    for (uint32_t k = threadIdx.y; k < 32; k += blockDim.y) {
        uint32_t c = c0 + k, r = r0 + threadIdx.x;
        if (r < rows && c < cols) {
            uint64_t o = (uint64_t)c * rows + r;
            float v = tile[threadIdx.x][k];
            db[o] = cu_from_f<T>(acc ? v + cu_to_f(db[o]) : v);
        }
    }
}

extern "C" cudaError_t cuk_transpose(int dt, const void *src, void *dst, uint32_t batch, uint32_t rows,
                                     uint32_t cols, int accumulate, cudaStream_t s)
{
    dim3 grid((cols + 31) / 32, (rows + 31) / 32, batch), block(32, 8);
    CU_DISPATCH(dt, T, k_transpose<T><<<grid, block, 0, s>>>((const T *)src, (T *)dst, rows, cols, accumulate));
    return cudaGetLastError();
}

template <typename T>
__global__ void k_slice_copy(const T *__restrict__ src, T *__restrict__ dst, uint32_t outer, uint32_t mid,
                             uint32_t wide, uint32_t off, uint32_t inner, int dir, int acc)
{
    uint32_t n = outer * mid * inner;
    CU_GRID_LOOP(i, n)
    {
        uint32_t in = i % inner, t = i / inner;
        uint32_t m = t % mid, o = t / mid;
        uint32_t w = (o * wide + off + m) * inner + in;
        /* dir 0: narrow -> wide (concat forward); dir 1: wide -> narrow (its gradient) */
        uint32_t si = dir ? w : i, di = dir ? i : w;
        float v = cu_to_f(src[si]);
        dst[di] = cu_from_f<T>(acc ? v + cu_to_f(dst[di]) : v);
    }
}

extern "C" cudaError_t cuk_slice_copy(int dt, const void *src, void *dst, uint32_t outer, uint32_t mid,
                                      uint32_t wide, uint32_t off, uint32_t inner, int dir, int accumulate,
                                      cudaStream_t s)
{
    uint64_t n = (uint64_t)outer * mid * inner;
    CU_DISPATCH(dt, T, k_slice_copy<T><<<cu_blocks(n), 256, 0, s>>>((const T *)src, (T *)dst, outer, mid,
                                                                     wide, off, inner, dir, accumulate));
    return cudaGetLastError();
}


/* ---------------------------------------------------------------------------------------------
 * activations
 * ------------------------------------------------------------------------------------------ */

struct act_params {
    int kind;
    float a, b;
};

__device__ __forceinline__ float sigmoidf_(float x)
{
    return 1.0f / (1.0f + __expf(-x));
}

__device__ __forceinline__ float act_f(const act_params &p, float x)
{
    switch (p.kind) {
    case CUK_RELU: return x > 0.0f ? x : 0.0f;
    case CUK_CLIP: return fminf(fmaxf(x, p.a), p.b);
    case CUK_LEAKY: return x > 0.0f ? x : p.a * x;
    case CUK_SIGMOID: return sigmoidf_(x);
    case CUK_TANH: return tanhf(x);
    case CUK_SILU: return x * sigmoidf_(x);
    case CUK_GELU: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case CUK_GELU_TANH: {
        float u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
        return 0.5f * x * (1.0f + tanhf(u));
    }
    case CUK_HARDSWISH: return x * fminf(fmaxf(x + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
    case CUK_HARDSIGMOID: return fminf(fmaxf(p.a * x + p.b, 0.0f), 1.0f);
    }
    return x;
}

/* d f / d x times dy, from the input x or (relu, sigmoid, tanh) the output y, in v. */
__device__ __forceinline__ float act_df(const act_params &p, float v, float dy)
{
    switch (p.kind) {
    case CUK_RELU: return v > 0.0f ? dy : 0.0f;
    case CUK_CLIP: return (v > p.a && v < p.b) ? dy : 0.0f;
    case CUK_LEAKY: return v > 0.0f ? dy : p.a * dy;
    case CUK_SIGMOID: return dy * v * (1.0f - v);
    case CUK_TANH: return dy * (1.0f - v * v);
    case CUK_SILU: {
        float sg = sigmoidf_(v);
        return dy * sg * (1.0f + v * (1.0f - sg));
    }
    case CUK_GELU: {
        float cdf = 0.5f * (1.0f + erff(v * 0.70710678118654752f));
        float pdf = __expf(-0.5f * v * v) * 0.39894228040143268f;
        return dy * (cdf + v * pdf);
    }
    case CUK_GELU_TANH: {
        const float c = 0.79788456080286536f;
        float u = c * (v + 0.044715f * v * v * v);
        float t = tanhf(u);
        float du = c * (1.0f + 3.0f * 0.044715f * v * v);
        return dy * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
    }
    case CUK_HARDSWISH: return v < -3.0f ? 0.0f : (v > 3.0f ? dy : dy * (v * (1.0f / 3.0f) + 0.5f));
    case CUK_HARDSIGMOID: {
        float z = p.a * v + p.b;
        return (z > 0.0f && z < 1.0f) ? p.a * dy : 0.0f;
    }
    }
    return dy;
}

extern "C" int cuk_act_bwd_uses_output(int kind)
{
    return kind == CUK_RELU || kind == CUK_SIGMOID || kind == CUK_TANH;
}

template <typename T>
__global__ void k_act_fwd_vec(const cu_vec<T> *__restrict__ x, cu_vec<T> *__restrict__ y, uint32_t nv,
                              act_params p)
{
    CU_GRID_LOOP(i, nv)
    {
        cu_vec<T> a = x[i], r;
#pragma unroll
        for (int k = 0; k < cu_vec<T>::N; k++)
            r.v[k] = cu_from_f<T>(act_f(p, cu_to_f(a.v[k])));
        y[i] = r;
    }
}

template <typename T>
__global__ void k_act_fwd(const T *__restrict__ x, T *__restrict__ y, uint32_t n, act_params p)
{
    CU_GRID_LOOP(i, n) y[i] = cu_from_f<T>(act_f(p, cu_to_f(x[i])));
}

extern "C" cudaError_t cuk_act_fwd(int kind, int dt, const void *x, void *y, uint64_t n, float a, float b,
                                   cudaStream_t s)
{
    act_params p = {kind, a, b};
    CU_DISPATCH(dt, T, {
        uint32_t vn = cu_vec<T>::N;
        if (cu_aligned16(x) && cu_aligned16(y) && n % vn == 0)
            k_act_fwd_vec<T><<<cu_blocks(n / vn), 256, 0, s>>>((const cu_vec<T> *)x, (cu_vec<T> *)y,
                                                                (uint32_t)(n / vn), p);
        else
            k_act_fwd<T><<<cu_blocks(n), 256, 0, s>>>((const T *)x, (T *)y, (uint32_t)n, p);
    });
    return cudaGetLastError();
}

template <typename T>
__global__ void k_act_bwd_vec(const cu_vec<T> *__restrict__ v, const cu_vec<T> *__restrict__ dy,
                              cu_vec<T> *__restrict__ dx, uint32_t nv, act_params p, int acc)
{
    CU_GRID_LOOP(i, nv)
    {
        cu_vec<T> a = v[i], g = dy[i], r;
        cu_vec<T> old;
        if (acc)
            old = dx[i];
#pragma unroll
        for (int k = 0; k < cu_vec<T>::N; k++) {
            float d = act_df(p, cu_to_f(a.v[k]), cu_to_f(g.v[k]));
            r.v[k] = cu_from_f<T>(acc ? d + cu_to_f(old.v[k]) : d);
        }
        dx[i] = r;
    }
}

template <typename T>
__global__ void k_act_bwd(const T *__restrict__ v, const T *__restrict__ dy, T *__restrict__ dx, uint32_t n,
                          act_params p, int acc)
{
    CU_GRID_LOOP(i, n)
    {
        float d = act_df(p, cu_to_f(v[i]), cu_to_f(dy[i]));
        dx[i] = cu_from_f<T>(acc ? d + cu_to_f(dx[i]) : d);
    }
}

extern "C" cudaError_t cuk_act_bwd(int kind, int dt, const void *xy, const void *dy, void *dx, uint64_t n,
                                   float a, float b, int accumulate, cudaStream_t s)
{
    act_params p = {kind, a, b};
    CU_DISPATCH(dt, T, {
        uint32_t vn = cu_vec<T>::N;
        if (cu_aligned16(xy) && cu_aligned16(dy) && cu_aligned16(dx) && n % vn == 0)
            k_act_bwd_vec<T><<<cu_blocks(n / vn), 256, 0, s>>>(
                (const cu_vec<T> *)xy, (const cu_vec<T> *)dy, (cu_vec<T> *)dx, (uint32_t)(n / vn), p,
                accumulate);
        else
            k_act_bwd<T><<<cu_blocks(n), 256, 0, s>>>((const T *)xy, (const T *)dy, (T *)dx, (uint32_t)n, p,
                                                       accumulate);
    });
    return cudaGetLastError();
}

/* ---------------------------------------------------------------------------------------------
 * binary arithmetic
 * ------------------------------------------------------------------------------------------ */

__device__ __forceinline__ float bin_f(int op, float a, float b)
{
    switch (op) {
    case CUK_ADD: return a + b;
    case CUK_SUB: return a - b;
    case CUK_MUL: return a * b;
    default: return a / b;
    }
}

/* index of the broadcast operand for output element i */
__device__ __forceinline__ uint32_t bc_index(const cuk_bcast &bc, uint32_t i)
{
    uint32_t d = i % bc.D, t = i / bc.D;
    t /= bc.C;
    uint32_t b = t % bc.B;
    return b * bc.D + d;
}

template <typename T>
__global__ void k_binary_vec(int op, const cu_vec<T> *__restrict__ a, const cu_vec<T> *__restrict__ b,
                             cu_vec<T> *__restrict__ y, uint32_t nv)
{
    CU_GRID_LOOP(i, nv)
    {
        cu_vec<T> x = a[i], z = b[i], r;
#pragma unroll
        for (int k = 0; k < cu_vec<T>::N; k++)
            r.v[k] = cu_from_f<T>(bin_f(op, cu_to_f(x.v[k]), cu_to_f(z.v[k])));
        y[i] = r;
    }
}

template <typename T>
__global__ void k_binary(int op, const T *__restrict__ a, const T *__restrict__ b, T *__restrict__ y,
                         uint32_t n, cuk_bcast bc)
{
    CU_GRID_LOOP(i, n)
    {
        uint32_t j = bc.which < 0 ? i : bc_index(bc, i);
        uint32_t ia = bc.which == 0 ? j : i, ib = bc.which == 1 ? j : i;
        y[i] = cu_from_f<T>(bin_f(op, cu_to_f(a[ia]), cu_to_f(b[ib])));
    }
}

extern "C" cudaError_t cuk_binary_fwd(int op, int dt, const void *a, const void *b, void *y,
                                      struct cuk_bcast bc, cudaStream_t s)
{
    uint32_t n = bc.A * bc.B * bc.C * bc.D;
    CU_DISPATCH(dt, T, {
        uint32_t vn = cu_vec<T>::N;
        if (bc.which < 0 && cu_aligned16(a) && cu_aligned16(b) && cu_aligned16(y) && n % vn == 0)
            k_binary_vec<T><<<cu_blocks(n / vn), 256, 0, s>>>(op, (const cu_vec<T> *)a, (const cu_vec<T> *)b,
                                                               (cu_vec<T> *)y, n / vn);
        else
            k_binary<T><<<cu_blocks(n), 256, 0, s>>>(op, (const T *)a, (const T *)b, (T *)y, n, bc);
    });
    return cudaGetLastError();
}

/* d(a op b)/d(self) * dy for the full-shape operand. */
template <typename T>
__global__ void k_binary_bwd_full(int op, int self, const T *__restrict__ a, const T *__restrict__ b,
                                  const T *__restrict__ dy, T *__restrict__ dx, uint32_t n, cuk_bcast bc,
                                  int acc)
{
    CU_GRID_LOOP(i, n)
    {
        uint32_t j = bc.which < 0 ? i : bc_index(bc, i);
        uint32_t ia = bc.which == 0 ? j : i, ib = bc.which == 1 ? j : i;
        float g = cu_to_f(dy[i]), d;
        switch (op) {
        case CUK_ADD: d = g; break;
        case CUK_SUB: d = self ? -g : g; break;
        case CUK_MUL: d = g * cu_to_f(self ? a[ia] : b[ib]); break;
        default: {
            float bv = cu_to_f(b[ib]);
            d = self ? -g * cu_to_f(a[ia]) / (bv * bv) : g / bv;
        }
        }
        dx[i] = cu_from_f<T>(acc ? d + cu_to_f(dx[i]) : d);
    }
}

extern "C" cudaError_t cuk_binary_bwd_full(int op, int dt, int self, const void *a, const void *b,
                                           const void *dy, void *dself, struct cuk_bcast bc, int accumulate,
                                           cudaStream_t s)
{
    uint32_t n = bc.A * bc.B * bc.C * bc.D;
    if ((op == CUK_ADD || (op == CUK_SUB && self == 0)))
        return cuk_copy(dt, dy, dself, n, accumulate, s);
    CU_DISPATCH(dt, T, k_binary_bwd_full<T><<<cu_blocks(n), 256, 0, s>>>(
                           op, self, (const T *)a, (const T *)b, (const T *)dy, (T *)dself, n, bc, accumulate));
    return cudaGetLastError();
}

/* The reductions: S[b*D+d] = sum over a, c of w(i) at i = ((a*B+b)*C+c)*D+d, then
 * out = fin(S). Two shapes of launch: D == 1 (the summed elements of one output are contiguous
 * runs: one block per output) and D > 1 (outputs side by side: 32 of them per block, coalesced
 * across threadIdx.x, 8 rows summed in parallel). A long sum (a bias gradient sums a whole
 * batch of images) is split over gridDim.z blocks whose partial sums go to a float scratch and
 * are added by a second kernel, so that a few outputs still fill the GPU. */
static uint32_t reduce_splits(const cuk_bcast &bc)
{
    uint64_t per = (uint64_t)bc.A * bc.C, out = (uint64_t)bc.B * bc.D;
    uint64_t sp = (per + 4095) / 4096;
    if (sp > 128)
        sp = 128;
    if (sp * out > (16u << 20))
        sp = (16u << 20) / out;
    return sp ? (uint32_t)sp : 1u;
}

extern "C" uint64_t cuk_reduce_scratch_bytes(struct cuk_bcast bc)
{
    uint32_t sp = reduce_splits(bc);
    return sp > 1 ? (uint64_t)sp * bc.B * bc.D * sizeof(float) : 0;
}

/* rows [k0, k1) of output b's (a, c) range for split z */
__device__ __forceinline__ void split_range(const cuk_bcast &bc, uint32_t &k0, uint32_t &k1)
{
    uint32_t per = bc.A * bc.C, chunk = (per + gridDim.z - 1) / gridDim.z;
    k0 = blockIdx.z * chunk;
    k1 = min(per, k0 + chunk);
}

template <typename W, typename F>
__global__ void k_reduce_d1(W w, F fin, cuk_bcast bc, float *part)
{
    __shared__ float sh[256];
    uint32_t b = blockIdx.x, k0, k1;
    split_range(bc, k0, k1);
    float acc = 0.0f;
    for (uint32_t k = k0 + threadIdx.x; k < k1; k += blockDim.x) {
        uint32_t a = k / bc.C, c = k % bc.C;
        acc += w((a * bc.B + b) * bc.C + c);
    }
    sh[threadIdx.x] = acc;
    __syncthreads();
    for (uint32_t h = blockDim.x / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h)
            sh[threadIdx.x] += sh[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        if (part)
            part[(size_t)blockIdx.z * bc.B + b] = sh[0];
        else
            fin(b, sh[0]);
    }
}

template <typename W, typename F>
__global__ void k_reduce_dn(W w, F fin, cuk_bcast bc, float *part)
{
    __shared__ float sh[8][33];
    uint32_t b = blockIdx.x, k0, k1;
    uint32_t d = blockIdx.y * 32 + threadIdx.x;
    split_range(bc, k0, k1);
    float acc = 0.0f;
    if (d < bc.D) {
        for (uint32_t k = k0 + threadIdx.y; k < k1; k += blockDim.y) {
            uint32_t a = k / bc.C, c = k % bc.C;
            acc += w(((a * bc.B + b) * bc.C + c) * bc.D + d);
        }
    }
    sh[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && d < bc.D) {
        float sum = 0.0f;
        for (int r = 0; r < 8; r++)
            sum += sh[r][threadIdx.x];
        if (part)
            part[(size_t)blockIdx.z * bc.B * bc.D + b * bc.D + d] = sum;
        else
            fin(b * bc.D + d, sum);
    }
}

/* second pass: out[j] = fin(sum over splits of part[z][j]) */
template <typename F>
__global__ void k_reduce_parts(F fin, const float *__restrict__ part, uint32_t outs, uint32_t splits)
{
    CU_GRID_LOOP(j, outs)
    {
        float sum = 0.0f;
        for (uint32_t z = 0; z < splits; z++)
            sum += part[(size_t)z * outs + j];
        fin(j, sum);
    }
}

template <typename W, typename F>
static cudaError_t reduce_launch(W w, F fin, cuk_bcast bc, float *scratch, cudaStream_t s)
{
    uint32_t sp = scratch ? reduce_splits(bc) : 1u;
    float *part = sp > 1 ? scratch : (float *)0;
    if (bc.D == 1) {
        dim3 grid(bc.B, 1, sp);
        k_reduce_d1<W, F><<<grid, 256, 0, s>>>(w, fin, bc, part);
    } else {
        dim3 grid(bc.B, (bc.D + 31) / 32, sp), block(32, 8);
        k_reduce_dn<W, F><<<grid, block, 0, s>>>(w, fin, bc, part);
    }
    if (sp > 1) {
        uint32_t outs = bc.B * bc.D;
        k_reduce_parts<F><<<cu_blocks(outs), 256, 0, s>>>(fin, part, outs, sp);
    }
    return cudaGetLastError();
}

/* w(i) for the broadcast operand's gradient */
template <typename T> struct bin_w {
    int op, which;
    const T *a, *b, *dy;
    __device__ float operator()(uint32_t i) const
    {
        float g = cu_to_f(dy[i]);
        switch (op) {
        case CUK_ADD: return g;
        case CUK_SUB: return which ? -g : g;
        case CUK_MUL: return g * cu_to_f(which ? a[i] : b[i]);
        default: return which ? g * cu_to_f(a[i]) : g / cu_to_f(b[i]);
        }
    }
};

template <typename T, typename O> struct bin_fin {
    int op, which, acc;
    const T *bsrc;  /* the broadcast divisor, for d(a/b)/db = -a/b^2 */
    O *out;
    __device__ void operator()(uint32_t j, float sum) const
    {
        if (op == CUK_DIV && which == 1) {
            float bv = cu_to_f(bsrc[j]);
            sum = -sum / (bv * bv);
        }
        out[j] = cu_from_f<O>(acc ? sum + cu_to_f(out[j]) : sum);
    }
};

extern "C" cudaError_t cuk_binary_bwd_reduce(int op, int dt, const void *a, const void *b, const void *dy,
                                             void *dself, struct cuk_bcast bc, int accumulate, float *scratch,
                                             cudaStream_t s)
{
    CU_DISPATCH(dt, T, {
        bin_w<T> w = {op, bc.which, (const T *)a, (const T *)b, (const T *)dy};
        bin_fin<T, T> fin = {op, bc.which, accumulate, (const T *)b, (T *)dself};
        return reduce_launch(w, fin, bc, scratch, s);
    });
    return cudaErrorInvalidValue;
}

template <typename T> struct plain_w {
    const T *x;
    __device__ float operator()(uint32_t i) const { return cu_to_f(x[i]); }
};

template <typename O> struct plain_fin {
    int acc;
    O *out;
    __device__ void operator()(uint32_t j, float sum) const
    {
        out[j] = cu_from_f<O>(acc ? sum + cu_to_f(out[j]) : sum);
    }
};

template <typename T>
static cudaError_t reduce_sum_to(const T *x, void *out, int out_dt, cuk_bcast bc, int acc, float *scratch,
                                 cudaStream_t s)
{
    plain_w<T> w = {x};
    CU_DISPATCH(out_dt, O, {
        plain_fin<O> fin = {acc, (O *)out};
        return reduce_launch(w, fin, bc, scratch, s);
    });
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t cuk_reduce_sum(int dt, const void *x, void *out, int out_dt, struct cuk_bcast bc,
                                      int accumulate, float *scratch, cudaStream_t s)
{
    CU_DISPATCH(dt, T, return reduce_sum_to<T>((const T *)x, out, out_dt, bc, accumulate, scratch, s));
    return cudaErrorInvalidValue;
}

/* ---------------------------------------------------------------------------------------------
 * dropout
 * ------------------------------------------------------------------------------------------ */

/* The CPU backend's mask, element for element: a SplitMix64 sequence seeded with
 * seed ^ (step * c), its i-th draw (i from 0) is mix(state + (i+1) * golden); the top 24 bits
 * compared with p * 2^24 keep the element. */
template <typename T>
__global__ void k_dropout(const T *__restrict__ x, T *__restrict__ y, uint32_t n, uint32_t threshold,
                          float scale, uint64_t seed, const uint64_t *__restrict__ step, int acc)
{
    uint64_t state = seed ^ (*step * 0xd1b54a32d192ed03ull);
    CU_GRID_LOOP(i, n)
    {
        uint32_t u = (uint32_t)(cu_mix64(state + (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull) >> 40);
        float v = u >= threshold ? cu_to_f(x[i]) * scale : 0.0f;
        y[i] = cu_from_f<T>(acc ? v + cu_to_f(y[i]) : v);
    }
}

extern "C" cudaError_t cuk_dropout(int dt, const void *x, void *y, uint64_t n, uint32_t threshold, float scale,
                                   uint64_t seed, const uint64_t *d_step, int accumulate, cudaStream_t s)
{
    CU_DISPATCH(dt, T, k_dropout<T><<<cu_blocks(n), 256, 0, s>>>((const T *)x, (T *)y, (uint32_t)n, threshold,
                                                                  scale, seed, d_step, accumulate));
    return cudaGetLastError();
}

__global__ void k_step_advance(uint64_t *step)
{
    *step += 1;
}

extern "C" cudaError_t cuk_step_advance(uint64_t *d_step, cudaStream_t s)
{
    k_step_advance<<<1, 1, 0, s>>>(d_step);
    return cudaGetLastError();
}
