/* The CUDA backend's own kernels, seen from C: extern "C" launchers for the work no library
 * call fits (pointwise activations, broadcast arithmetic, reductions, pooling shapes cuDNN
 * lacks, loss, optimizer, layout changes, probes). Each launcher enqueues on the given stream
 * and returns cudaGetLastError(); none synchronizes. Element counts fit in 32 bits (checked by
 * the caller at prepare time), so kernels index with unsigned 32-bit arithmetic. */
#ifndef FM_CU_KERNELS_H
#define FM_CU_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Storage types of device tensors. */
enum cu_dt { CU_F32 = 0, CU_F16, CU_BF16, CU_I64, CU_DT_COUNT };

/* ---- conversions and fills ---- */

/* dst = (ddt)(src * scale) elementwise. */
cudaError_t cuk_cast(const void *src, int sdt, void *dst, int ddt, uint64_t n, float scale,
                     cudaStream_t s);
/* Uniform values in [-scale, scale) from a counter-based hash of (seed, i): never zeros, never
 * NaN, so timing and algorithm search see data like a real run's. */
cudaError_t cuk_fill_random(void *p, int dt, uint64_t n, uint64_t seed, float scale,
                            cudaStream_t s);
/* dst[b][c][r] (+)= src[b][r][c]: NCHW <-> NHWC (rows=C, cols=HW or the other way round). */
cudaError_t cuk_transpose(int dt, const void *src, void *dst, uint32_t batch, uint32_t rows,
                          uint32_t cols, int accumulate, cudaStream_t s);
/* Copies an [outer][mid][inner] block into (dir 0) or out of (dir 1) a wider
 * [outer][wide][inner] tensor at offset off along the middle axis (concat and its gradient). */
cudaError_t cuk_slice_copy(int dt, const void *src, void *dst, uint32_t outer, uint32_t mid,
                           uint32_t wide, uint32_t off, uint32_t inner, int dir, int accumulate,
                           cudaStream_t s);
/* y (+)= x elementwise (same type): copies for views and gradient pass-through. */
cudaError_t cuk_copy(int dt, const void *x, void *y, uint64_t n, int accumulate, cudaStream_t s);

/* ---- pointwise activations ---- */

enum cuk_act {
    CUK_RELU = 0,
    CUK_CLIP,         /* a = lo, b = hi */
    CUK_LEAKY,        /* a = slope */
    CUK_SIGMOID,
    CUK_TANH,
    CUK_SILU,
    CUK_GELU,
    CUK_GELU_TANH,
    CUK_HARDSWISH,
    CUK_HARDSIGMOID,  /* a = alpha, b = beta */
    CUK_ACT_COUNT
};
/* Whether the backward of an activation reads its output (1) or its input (0). */
int cuk_act_bwd_uses_output(int kind);
cudaError_t cuk_act_fwd(int kind, int dt, const void *x, void *y, uint64_t n, float a, float b,
                        cudaStream_t s);
/* dx (+)= dy * f'(.) where f' is computed from xy: the input or the output, as
 * cuk_act_bwd_uses_output says. */
cudaError_t cuk_act_bwd(int kind, int dt, const void *xy, const void *dy, void *dx, uint64_t n,
                        float a, float b, int accumulate, cudaStream_t s);

/* ---- binary arithmetic with one broadcast operand ----
 * The output is viewed as [A][B][C][D] in its physical layout; a broadcast operand varies over
 * B and D only (index b*D + d). Same-shape operands use A = 1, B = n, C = D = 1. */
enum cuk_bin { CUK_ADD = 0, CUK_SUB, CUK_MUL, CUK_DIV };
struct cuk_bcast {
    uint32_t A, B, C, D;
    int which;            /* the broadcast operand: 0 (a), 1 (b) or -1 (none) */
};
cudaError_t cuk_binary_fwd(int op, int dt, const void *a, const void *b, void *y,
                           struct cuk_bcast bc, cudaStream_t s);
/* Gradient of the full-shape operand `self` (0 = a, 1 = b): dself (+)= dy * d(op)/dself,
 * reading the other operand (and self for a divisor). */
cudaError_t cuk_binary_bwd_full(int op, int dt, int self, const void *a, const void *b,
                                const void *dy, void *dself, struct cuk_bcast bc, int accumulate,
                                cudaStream_t s);
/* The reductions below split long sums over several blocks when given a float scratch of
 * cuk_reduce_scratch_bytes(bc) bytes (0: no scratch needed; NULL scratch: one pass). */
uint64_t cuk_reduce_scratch_bytes(struct cuk_bcast bc);
/* Gradient of the broadcast operand: the sum over A and C of dy * d(op)/d(operand). */
cudaError_t cuk_binary_bwd_reduce(int op, int dt, const void *a, const void *b, const void *dy,
                                  void *dself, struct cuk_bcast bc, int accumulate,
                                  float *scratch, cudaStream_t s);
/* out[b*D+d] (+)= sum over a, c of x[((a*B+b)*C+c)*D+d] (bias gradients). */
cudaError_t cuk_reduce_sum(int dt, const void *x, void *out, int out_dt, struct cuk_bcast bc,
                           int accumulate, float *scratch, cudaStream_t s);

/* ---- pooling that cuDNN's descriptors cannot express (ceil mode, asymmetric padding,
 * adaptive windows) ---- */
struct cuk_pool {
    uint32_t N, C, H, W, OH, OW;
    int kh, kw, sh, sw, pt, pl, pb, pr;
    int adaptive;        /* windows from PyTorch's adaptive rule, not k/s/pad */
    int is_max;
    int count_pad;       /* avg: padding counts in the divisor */
    int nhwc;
};
cudaError_t cuk_pool_fwd(int dt, struct cuk_pool p, const void *x, void *y, cudaStream_t s);
/* dx must be zero or hold the gradient to accumulate onto: the kernel adds atomically. */
cudaError_t cuk_pool_bwd(int dt, struct cuk_pool p, const void *x, const void *dy, void *dx,
                         cudaStream_t s);

/* ---- dropout: y (+)= x * scale where draw i of a hash sequence seeded from (seed, *d_step)
 * is >= threshold; the same mask again in the backward ---- */
cudaError_t cuk_dropout(int dt, const void *x, void *y, uint64_t n, uint32_t threshold,
                        float scale, uint64_t seed, const uint64_t *d_step, int accumulate,
                        cudaStream_t s);
/* Advances the device-side step counter that dropout masks read (once per step). */
cudaError_t cuk_step_advance(uint64_t *d_step, cudaStream_t s);

/* ---- cross-entropy: logits (N, K) in dt, labels int64 (N); loss is fp32 mean ---- */
cudaError_t cuk_xent_fwd(int dt, const void *logits, const int64_t *labels, uint32_t N,
                         uint32_t K, float *lse, float *row_loss, float *loss, cudaStream_t s);
/* dlogits (+)= (softmax - onehot) * scale / N, softmax recomputed from the kept lse. */
cudaError_t cuk_xent_bwd(int dt, const void *logits, const int64_t *labels, const float *lse,
                         uint32_t N, uint32_t K, float scale, void *dlogits, int accumulate,
                         cudaStream_t s);

/* ---- SGD with momentum over one flat group of parameters (PyTorch's rule, dampening 0):
 * g = grad * inv_scale; m = momentum*m + g; p -= lr*m; and, in mixed precision, the
 * compute-precision copy half = (dt)p. ---- */
cudaError_t cuk_sgd(float *p, const void *grad, int grad_dt, float *m, void *half, int half_dt,
                    uint64_t n, float lr, float momentum, float inv_scale, cudaStream_t s);

/* ---- probes ---- */
/* iters rounds of 8 independent FMA chains per thread; precision: 0 fp32, 1 fp16 (half2),
 * 2 bf16 (bf162), 3 fp64. Returns the FLOPs the launch performs in *flops. */
cudaError_t cuk_fma_peak(int precision, int blocks, int threads, uint32_t iters, void *sink,
                         double *flops, cudaStream_t s);
/* a[i] = b[i] + 3*c[i] over n floats (the STREAM triad). */
cudaError_t cuk_triad(float *a, const float *b, const float *c, uint64_t n, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
