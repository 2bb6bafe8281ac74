/* Internal interface of the oneDNN CPU backend, shared by its files: the backend state, the
 * list of work items a step executes, tensor storage in oneDNN layouts, and the helpers that
 * every op family uses to read inputs in the layout its primitive wants (inserting reorders
 * only where layouts differ) and to deliver input gradients (writing directly, or accumulating
 * through a reorder with a sum post-op). Ops themselves live one family per file. */
#ifndef FM_CPU_H
#define FM_CPU_H

#include <dnnl.h>

#include "../backend.h"
#include "../../core/internal.h"

#define FM_CPU_MAX_ARGS 66   /* a Concat of DenseNet-201 reads 49 inputs */
#define FM_CPU_CACHE 8    /* adapted inputs remembered per node */

struct fm_cpu;

/* Records a failed oneDNN call (the call, file and line) on the context. */
enum fm_status fm_cpu_dnnl_error(struct fm_cpu *s, dnnl_status_t r, const char *call,
                                 const char *file, int line);

/* Wraps a oneDNN call in a function that has `enum fm_status st` and an `out:` label. */
#define FM_DNNL_TRY(s, call)                                                                 \
    do {                                                                                     \
        dnnl_status_t r_ = (call);                                                           \
        if (r_ != dnnl_success) {                                                            \
            st = fm_cpu_dnnl_error((s), r_, #call, __FILE__, __LINE__);                      \
            goto out;                                                                        \
        }                                                                                    \
    } while (0)

/* Storage of one graph tensor. Value and gradient share one layout (md); oneDNN may pad it
 * (blocked channel layouts), and the padding stays zero. */
struct fm_cpu_tensor {
    bool placed;                /* layout chosen, storage allocated */
    bool alias;                 /* val points into another tensor's storage (a view) */
    bool needs_grad;            /* training and fm_graph_needs_grad */
    bool grad_planned;          /* backward planning: a node already delivers its gradient */
    dnnl_memory_desc_t md;
    size_t size;                /* bytes of val (and grad) */
    void *val, *grad;
    dnnl_memory_t val_mem, grad_mem;
    int32_t *labels;            /* integer tensors (class indices), numel values, plain */
    uint64_t numel;
};

struct fm_cpu_item;
/* A C function item: arg is its own data, it->args[] the memory it works on (their data
 * handles are read at run time, since scratch is bound only after planning). */
typedef enum fm_status (*fm_cpu_fn)(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg);

/* One unit of work of a step: a oneDNN primitive with its arguments, or a C function. */
struct fm_cpu_item {
    fm_nid node;
    enum fm_phase phase;
    dnnl_primitive_t prim;
    int nargs;
    dnnl_exec_arg_t args[FM_CPU_MAX_ARGS];
    fm_cpu_fn fn;
    void *arg;
};

struct fm_cpu_cached {
    fm_tid tensor;
    bool grad;
    dnnl_memory_desc_t md;
    dnnl_memory_t mem;
};

struct fm_cpu_node {
    void *priv;                               /* the op family's own state */
    struct fm_cpu_cached cache[FM_CPU_CACHE]; /* inputs adapted in forward, reused backward */
    int n_cache;
    bool has_bwd_weight;                      /* backward split into data and weight items */
};

/* Memory objects whose data handle is set after planning, into a block shared by all items
 * (each item runs alone, so scratch of different nodes may overlap). */
enum fm_cpu_pool { FM_CPU_POOL_SCRATCH = 0, FM_CPU_POOL_PAD, FM_CPU_POOL_COUNT };
struct fm_cpu_deferred {
    dnnl_memory_t mem;
    enum fm_cpu_pool pool;
    size_t off;
};

struct fm_cpu {
    struct fm_ctx *ctx;
    const struct fm_graph *g;
    struct fm_measure_opts opts;
    double planned_bytes;             /* every buffer fm_cpu_buf gave out */
    bool over_limit;                  /* a buffer would have passed opts.memory_limit */
    bool train;
    int threads;
    char name[128];
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_attr_t attr;       /* user-managed scratchpad */
    struct fm_cpu_tensor *t;
    size_t nt;
    struct fm_cpu_node *nodes;
    size_t nn;
    struct fm_cpu_item *items;
    size_t n_items, cap_items;
    /* everything to release */
    dnnl_primitive_t *prims;
    size_t n_prims, cap_prims;
    dnnl_primitive_desc_t *pds;
    size_t n_pds, cap_pds;
    dnnl_memory_t *mems;
    size_t n_mems, cap_mems;
    void **bufs;
    size_t n_bufs, cap_bufs;
    struct fm_cpu_deferred *defer;
    size_t n_defer, cap_defer;
    size_t pool_used[FM_CPU_POOL_COUNT];  /* within the node being planned */
    size_t pool_max[FM_CPU_POOL_COUNT];
    void *pool[FM_CPU_POOL_COUNT];
    /* per step */
    double loss;
    uint64_t step_index;                  /* steps run so far: seeds dropout masks */
    float *flush;                         /* opts.flush_bytes of other traffic, or NULL */
    size_t flush_n;                       /* its floats */
    fm_nid flush_node;                    /* the node whose kernels it precedes, or -1: all */
};

/* ---- memory ---- */

/* A zeroed, 64-byte aligned buffer owned by the state. */
void *fm_cpu_buf(struct fm_cpu *s, size_t size);
/* A memory object over data (owned by the state); data may be NULL for later. */
enum fm_status fm_cpu_mem(struct fm_cpu *s, const dnnl_memory_desc_t *md, void *data,
                          dnnl_memory_t *out);
/* A new buffer of md's size and a memory object over it. */
enum fm_status fm_cpu_mem_new(struct fm_cpu *s, const dnnl_memory_desc_t *md, dnnl_memory_t *out);
/* A memory object in a shared pool, valid only during the items of the node being planned. */
enum fm_status fm_cpu_mem_scratch(struct fm_cpu *s, const dnnl_memory_desc_t *md,
                                  dnnl_memory_t *out);
void *fm_cpu_mem_data(dnnl_memory_t mem);
const dnnl_memory_desc_t *fm_cpu_mem_md(dnnl_memory_t mem);

/* Memory descriptors: fp32, plain row-major (abcd...), or "any" for the primitive to choose. */
void fm_cpu_md_plain(dnnl_memory_desc_t *md, int rank, const int64_t *dims);
void fm_cpu_md_any(dnnl_memory_desc_t *md, int rank, const int64_t *dims);
/* The plain row-major descriptor with md's dims (how read/write see a tensor). */
void fm_cpu_md_plain_like(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *md);
bool fm_cpu_md_is_plain(const dnnl_memory_desc_t *md);
bool fm_cpu_md_equal(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b);
/* A tensor's shape as dims for oneDNN (a scalar is one element). */
int fm_cpu_dims(const struct fm_tensor *t, int64_t *dims);

/* ---- primitives and items ---- */

/* Creates a primitive descriptor (user scratchpad; owned by the state). A descriptor oneDNN
 * cannot implement is FM_ERR_UNSUPPORTED naming the node. */
enum fm_status fm_cpu_pd(struct fm_cpu *s, fm_nid node, const void *op_desc,
                         const_dnnl_primitive_desc_t hint, dnnl_primitive_desc_t *out);
/* Keeps a primitive descriptor made elsewhere (concat, sum, custom attributes) until release;
 * on failure it is destroyed. */
enum fm_status fm_cpu_keep_pd(struct fm_cpu *s, dnnl_primitive_desc_t pd);
/* Whether oneDNN runs a descriptor with its reference code ("ref:any", "bnorm_ref:any") or
 * through im2col and gemm ("x64:gemm:jit", "gemm:jit"): for the layers flopmeter checks
 * (BatchNorm, depthwise weight gradients), 10 to 100 times slower than a JIT kernel. */
bool fm_cpu_pd_is_slow(const_dnnl_primitive_desc_t pd);
/* The layout a descriptor settled on for an execution argument (DNNL_ARG_*). */
const dnnl_memory_desc_t *fm_cpu_pd_md(const_dnnl_primitive_desc_t pd, int arg);

struct fm_cpu_arg {
    int arg;
    dnnl_memory_t mem;
};
/* Creates the primitive of pd and appends it as an item of node in phase. */
enum fm_status fm_cpu_add_prim(struct fm_cpu *s, fm_nid node, enum fm_phase phase,
                               const_dnnl_primitive_desc_t pd, const struct fm_cpu_arg *args,
                               int nargs);
/* Appends a reorder from src to dst (a sum post-op adds into dst when accumulate). */
enum fm_status fm_cpu_add_reorder(struct fm_cpu *s, fm_nid node, enum fm_phase phase,
                                  dnnl_memory_t src, dnnl_memory_t dst, bool accumulate);
/* Appends a C function item working on mems (in order: it->args[k].memory); arg must stay
 * valid (allocate it with fm_cpu_buf). */
enum fm_status fm_cpu_add_fn(struct fm_cpu *s, fm_nid node, enum fm_phase phase, fm_cpu_fn fn,
                             void *arg, const dnnl_memory_t *mems, int nmems);
/* The data of a function item's k-th memory, as floats. */
float *fm_cpu_item_f32(const struct fm_cpu_item *it, int k);

/* ---- tensors ---- */

/* Chooses tensor tid's layout and allocates its value (and gradient when it needs one). */
enum fm_status fm_cpu_place(struct fm_cpu *s, fm_tid tid, const dnnl_memory_desc_t *md);
/* Places tid in its plain layout if nothing placed it yet (a parameter read directly). */
enum fm_status fm_cpu_ensure(struct fm_cpu *s, fm_tid tid);
/* Makes tid a view of src's value (same bytes): in src's layout when the dims are equal, else
 * in the plain layout of tid's dims (src must then be plain). The gradient is separate. */
enum fm_status fm_cpu_place_view(struct fm_cpu *s, fm_tid tid, fm_tid src);
/* The value of tid (or its gradient) in layout want, for node in phase. When the layouts
 * differ a reorder item is appended now (copies made in the forward phase are kept and reused
 * by the node's backward). A parameter not yet placed takes want as its layout. Dims may
 * differ from tid's if the element count is the same: row-major order is kept (a reshape). */
enum fm_status fm_cpu_input(struct fm_cpu *s, fm_nid node, enum fm_phase phase, fm_tid tid,
                            bool grad, const dnnl_memory_desc_t *want, dnnl_memory_t *out);

/* Delivering the gradient of an input tensor. begin returns the memory the node's backward
 * writes (the gradient buffer itself when this is the first delivery in backward order and
 * the layout matches; otherwise scratch), or NULL in *out when tid needs no gradient. end
 * appends the accumulation if begin returned scratch. */
struct fm_cpu_sink {
    fm_nid node;
    enum fm_phase phase;
    fm_tid tensor;
    dnnl_memory_t tmp;      /* NULL: written directly */
};
enum fm_status fm_cpu_sink_begin(struct fm_cpu *s, fm_nid node, enum fm_phase phase, fm_tid tid,
                                 const dnnl_memory_desc_t *md, struct fm_cpu_sink *sk,
                                 dnnl_memory_t *out);
enum fm_status fm_cpu_sink_end(struct fm_cpu *s, struct fm_cpu_sink *sk);
/* The memories of a normalization's backward (bn.c): NULL scale/shift and their gradients are
 * left out of the primitive's arguments. */
struct fm_cpu_norm_bwd {
    dnnl_memory_t x, mean, var, scale, shift, dy, dx, dscale, dshift;
};
enum fm_status fm_cpu_norm_bwd_add(struct fm_cpu *s, fm_nid id, dnnl_primitive_desc_t pd,
                                   const struct fm_cpu_norm_bwd *b, struct fm_cpu_sink *sinks[3]);
/* Adds (or copies, for the first delivery) src into tid's gradient; src may have other dims
 * with the same element count (row-major order). */
enum fm_status fm_cpu_sink_from(struct fm_cpu *s, fm_nid node, enum fm_phase phase, fm_tid tid,
                                dnnl_memory_t src);

/* The weight gradient (and bias gradient, when want_bias) of a convolution or inner product
 * whose backward-weights descriptor is op_desc (hint: its forward primitive descriptor): binds
 * X (input 0) and dY, writes dW into input 1's gradient (scratch when the weight is frozen but
 * the bias is not) and dB into bias's, and adds the primitive. Shared by conv.c and linear.c. */
enum fm_status fm_cpu_bwd_weights(struct fm_cpu *s, fm_nid node, const void *op_desc,
                                  const_dnnl_primitive_desc_t hint, fm_tid bias, bool want_bias);

/* Whether tid's gradient is needed (training and the tensor needs one). */
bool fm_cpu_wants_grad(const struct fm_cpu *s, fm_tid tid);

/* Node name and op for messages. */
const char *fm_cpu_node_name(const struct fm_cpu *s, fm_nid id);

/* ---- plain tensors (plain.c): what the hand-written kernels see ----
 * Float tensors are fp32 in plain row-major order; integer and bool tensors (token ids, masks,
 * comparison results, indices) are int32 arrays in t->labels, of numel elements, with no
 * gradient. Function items read float data through fm_cpu_item_f32 and integer data through
 * pointers kept in their own arg (labels never move once allocated). */

/* Whether tid is held as integers (any non-float dtype). */
bool fm_cpu_is_int(const struct fm_cpu *s, fm_tid tid);
/* The int32 values of an integer tensor (allocated by place_sources or fm_cpu_place_out). */
int32_t *fm_cpu_ints(const struct fm_cpu *s, fm_tid tid);
/* Places a node's output: an int32 array for a non-float tensor, else plain fp32. */
enum fm_status fm_cpu_place_out(struct fm_cpu *s, fm_tid tid);
/* The value (or gradient) of float tensor tid in its plain layout, for node in phase. */
enum fm_status fm_cpu_input_plain(struct fm_cpu *s, fm_nid node, enum fm_phase phase, fm_tid tid,
                                  bool grad, dnnl_memory_t *out);
/* fm_cpu_sink_begin in tid's plain layout: the memory the node's backward writes tid's
 * gradient into (NULL when tid needs none); finish with fm_cpu_sink_end. */
enum fm_status fm_cpu_sink_plain(struct fm_cpu *s, fm_nid node, enum fm_phase phase, fm_tid tid,
                                 struct fm_cpu_sink *sk, dnnl_memory_t *out);
/* Another memory object over mem's bytes, described by md (a transposed or reshaped view given
 * by strides); a view of scratch (whose data is bound after planning) is bound with it. */
enum fm_status fm_cpu_mem_view(struct fm_cpu *s, dnnl_memory_t mem, const dnnl_memory_desc_t *md,
                               dnnl_memory_t *out);
/* tid's gradient (through a sink in phase ph) gets scale * src summed over its leading dims,
 * when src is plain and dims (src's rank, tid's dims right-aligned) are 1 outside a run of
 * src's innermost dims; false in *ok otherwise, and nothing is added. Shared by the broadcast
 * gradients of binary.c and ewise.c. */
enum fm_status fm_cpu_sum_leading(struct fm_cpu *s, fm_nid node, enum fm_phase ph, fm_tid tid,
                                  dnnl_memory_t src, const int64_t *dims, float scale, bool *ok);
/* The phase a gradient of tid belongs to: a parameter's is weight gradient, others data. */
enum fm_phase fm_cpu_grad_phase(const struct fm_cpu *s, fm_tid tid);

/* Numpy broadcasting of one operand to an output shape: strides of the operand's elements
 * along the output's dims (0 where the operand is broadcast). */
struct fm_cpu_bcast {
    int rank;                        /* the output's */
    int64_t dims[FM_MAX_DIMS];       /* the output's */
    int64_t stride[FM_MAX_DIMS];     /* the operand's, 0 on broadcast dims */
    uint64_t numel;                  /* the output's */
};
void fm_cpu_bcast_init(struct fm_cpu_bcast *b, const struct fm_shape *out,
                       const struct fm_shape *operand);
/* A loop the kernels run on the step's threads (OpenMP, as oneDNN's); serial without it.
 * FM_CPU_SIMD: an inner loop whose result never overlaps an operand it reads at another index,
 * so it vectorises without the aliasing checks and epilogue GCC's -O2 cost model will not pay
 * for. */
#ifdef _OPENMP
#define FM_CPU_PARALLEL _Pragma("omp parallel for schedule(static)")
#define FM_CPU_SIMD _Pragma("omp simd")
#else
#define FM_CPU_PARALLEL
#define FM_CPU_SIMD
#endif
/* FM_CPU_PARALLEL, or serial where `cond` (an expression over the loop's variables) is false:
 * a loop of a few microseconds' work costs more in the fork and join than it saves, and on a
 * loaded machine a woken thread can wait a scheduler slice (milliseconds) for its core. */
#define FM_CPU_PRAGMA_(text) _Pragma(#text)
#ifdef _OPENMP
#define FM_CPU_PARALLEL_IF(cond) FM_CPU_PRAGMA_(omp parallel for schedule(static) if(cond))
#else
#define FM_CPU_PARALLEL_IF(cond)
#endif
/* FM_CPU_SIMD with a reduction clause, FM_CPU_SIMD_REDUCE(+ : sum): the partial results kept
 * per lane and combined at the end (a reordering of the sum the loop asks for) */
#ifdef _OPENMP
#define FM_CPU_SIMD_REDUCE(clause) FM_CPU_PRAGMA_(omp simd reduction(clause))
#else
#define FM_CPU_SIMD_REDUCE(clause)
#endif

/* The per-element helpers below and their like in the op files: always inlined, since a call
 * inside a loop keeps it scalar. GCC left fm_cpu_exp_neg out of line in ewise.c's kernel (a
 * large switch), and Erf's gradient ran one call per element, at 5 times its forward. */
#define FM_CPU_INLINE static inline __attribute__((always_inline))

/* The reduction exp and tanh share: for t <= 0 (at least -87), t = n ln2 + r with
 * |r| <= ln2 / 2; returns expm1(r) by its Taylor polynomial to degree 8 (error below 2e-9
 * relative) and sets *scale to 2^n, built in the exponent bits. */
FM_CPU_INLINE float fm_cpu_exp_split(float t, float *scale)
{
    float n = (float)(int32_t)(t * 1.44269504088896341f - 0.5f);   /* rounded: t <= 0 */
    float r = t - n * 0.693145751953125f - n * 1.42860682030941723e-6f;
    float p = 2.48015873015873016e-5f;
    p = p * r + 1.98412698412698413e-4f;
    p = p * r + 1.38888888888888889e-3f;
    p = p * r + 8.33333333333333333e-3f;
    p = p * r + 4.16666666666666667e-2f;
    p = p * r + 1.66666666666666667e-1f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    union { int32_t i; float f; } sc = {.i = ((int32_t)n + 127) << 23};
    *scale = sc.f;
    return p * r;
}

/* exp(x) for x <= 0 without a libm call, so the loops that use it vectorise (libm's expf does
 * not: GELU's backward as Erf ran at 7x its calibrated time, the cross-entropy over GPT-2's
 * 50,257 classes at 10x PyTorch's): 2^n (1 + expm1(r)) from fm_cpu_exp_split; x is clamped at
 * -87 (exp(-87) is 1.6e-38, just above float's smallest normal: a softmax term or erf's
 * derivative that small is 0 to the precision of any gradient). */
FM_CPU_INLINE float fm_cpu_exp_neg(float x)
{
    /* the clamp on the bits: for x <= 0 they order as |x| does, and an unsigned min
     * vectorises where GCC keeps a float compare-and-select as a branch (AVX2, AVX-512) */
    union { float f; uint32_t u; } v = {.f = x};
    v.u = v.u < 0xC2AE0000u ? v.u : 0xC2AE0000u;   /* the bits of -87.0f */
    float sc, p = fm_cpu_exp_split(v.f, &sc);
    return sc + sc * p;
}

/* tanh(x) without a libm call, so its loops vectorise (oneDNN 2.6's tanh ran GPT-2's MLP
 * activations at 0.6 G elements/s, 5 times the calibrated price of an activation): with
 * a = |x| (clamped at 9, where tanh is 1 in float) and fm_cpu_exp_split of -2a,
 * m = expm1(-2a) = 2^n expm1(r) + (2^n - 1); tanh(a) = -m / (2 + m), the sign put back. For a
 * below 0.17 n is 0 and m is expm1(r) itself, so small arguments keep their relative precision
 * (1 - exp(-2a) would lose it); above, 2^n - 1 is exact and at most -1/2, so nothing cancels.
 * Relative error below 5e-7; NaN stays NaN. */
FM_CPU_INLINE float fm_cpu_tanh(float x)
{
    union { float f; uint32_t u; } v = {.f = x};
    const uint32_t bits = v.u, mag = bits & 0x7FFFFFFFu;
    v.u = mag < 0x41100000u ? mag : 0x41100000u;   /* the bits of 9.0f */
    float sc, p = fm_cpu_exp_split(-2.0f * v.f, &sc);
    float m = sc * p + (sc - 1.0f);
    union { float f; uint32_t u; } y = {.f = -m / (2.0f + m)};
    y.u |= bits & 0x80000000u;
    const uint32_t nan = 0u - (uint32_t)(mag > 0x7F800000u);   /* a mask, not a branch */
    y.u = (bits & nan) | (y.u & ~nan);
    return y.f;
}

/* A function compiled for x86-64-v4 (AVX-512) and v3 (AVX2) besides the baseline the build
 * targets; the loader picks the one this CPU has. */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define FM_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#endif
#ifndef FM_CPU_CLONES
#define FM_CPU_CLONES
#endif

/* ---- small dense products (small.c) ----
 * y (rows, n) = x (rows, k) w^T + b and its gradients by hand, for products of at most
 * FM_CPU_SMALL_MACS multiply-adds and FM_CPU_SMALL_WEIGHTS weights, which a oneDNN primitive's
 * fixed cost would dominate. Larger weights stream from memory at batch 1 (a classifier's),
 * where oneDNN's threads read them faster than small.c's one loop. */
#define FM_CPU_SMALL_MACS (1 << 20)      /* 20-40 us of one core's work */
#define FM_CPU_SMALL_WEIGHTS (1 << 16)   /* 256 KB: what one core's L2 keeps */
struct fm_cpu_small;
/* Whether activation layout md (rows, channels, then dims of 1) puts element (r, c) at
 * r * (*rs) + c. */
bool fm_cpu_small_layout(const dnnl_memory_desc_t *md, int64_t *rs);
/* The plan of a product with x in layout xmd, y in ymd (both (rows, k or n, 1...)), the weight
 * of dims wdims (n, k, 1...); NULL when it is too large or a layout does not fit. */
struct fm_cpu_small *fm_cpu_small_new(struct fm_cpu *s, int64_t rows, int64_t k, int64_t n,
                                      const dnnl_memory_desc_t *xmd,
                                      const dnnl_memory_desc_t *ymd, int wrank,
                                      const int64_t *wdims, bool bias);
/* The kernels, compiled once per instruction set (small_kern.h):
 * gemm: C (m, p) = A (m, q) B (q, p) (+ bias (p)), A's element (i, j) at a[i ars + j acs], B's
 *   rows brs apart, C's crs apart; tail: (q + m + 1) x 16 floats of scratch;
 * gemm_nt: y (m, n) = x (m, k) w^T (+ b (n)), w (n, k) plain, x's rows xrs apart, y's yrs. */
struct fm_cpu_small_kern {
    void (*gemm)(int64_t m, int64_t p, int64_t q, const float *a, int64_t ars, int64_t acs,
                 const float *b, int64_t brs, float *c, int64_t crs, const float *bias,
                 float *tail);
    void (*gemm_nt)(int64_t m, int64_t n, int64_t k, const float *x, int64_t xrs,
                    const float *w, float *y, int64_t yrs, const float *b);
};
enum fm_cpu_isa { FM_CPU_ISA_BASE, FM_CPU_ISA_AVX2, FM_CPU_ISA_AVX512 };
/* The kernels for one instruction set; NULL where this build or this CPU lacks it, or oneDNN's
 * own limit (ONEDNN_MAX_CPU_ISA) is below it. A product uses the widest there is. */
const struct fm_cpu_small_kern *fm_cpu_small_kern(enum fm_cpu_isa isa);
/* Items of node id: y = x w^T (+ b), y placed in the plan's layout; dx; dw (and db). */
enum fm_status fm_cpu_small_fwd(struct fm_cpu *s, fm_nid id, const struct fm_cpu_small *p,
                                fm_tid x, fm_tid w, fm_tid b, fm_tid y);
enum fm_status fm_cpu_small_bwd_data(struct fm_cpu *s, fm_nid id, const struct fm_cpu_small *p,
                                     fm_tid x, fm_tid w, fm_tid y);
enum fm_status fm_cpu_small_bwd_weights(struct fm_cpu *s, fm_nid id, struct fm_cpu_small *p,
                                        fm_tid x, fm_tid w, fm_tid b, bool want_bias, fm_tid y);

/* ---- op families: planning of forward and backward items ---- */

typedef enum fm_status (*fm_cpu_plan_fn)(struct fm_cpu *s, fm_nid id);
typedef enum fm_status (*fm_cpu_check_fn)(struct fm_ctx *ctx, const struct fm_graph *g,
                                          const struct fm_node *n);

/* conv.c */
enum fm_status fm_cpu_conv_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                 const struct fm_node *n);
enum fm_status fm_cpu_conv_fwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_conv_bwd(struct fm_cpu *s, fm_nid id);
/* linear.c: Linear and ONNX Gemm in its Linear form */
enum fm_status fm_cpu_linear_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                   const struct fm_node *n);
enum fm_status fm_cpu_linear_fwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_linear_bwd(struct fm_cpu *s, fm_nid id);
/* bn.c */
enum fm_status fm_cpu_bn_check(struct fm_ctx *ctx, const struct fm_graph *g,
                               const struct fm_node *n);
enum fm_status fm_cpu_bn_fwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_bn_bwd(struct fm_cpu *s, fm_nid id);
/* eltwise.c: activations */
enum fm_status fm_cpu_act_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                const struct fm_node *n);
enum fm_status fm_cpu_act_fwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_act_bwd(struct fm_cpu *s, fm_nid id);
/* pool.c */
enum fm_status fm_cpu_pool_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                 const struct fm_node *n);
enum fm_status fm_cpu_pool_fwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_pool_bwd(struct fm_cpu *s, fm_nid id);
/* binary.c: Add, Mul with broadcasting */
enum fm_status fm_cpu_binary_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                   const struct fm_node *n);
enum fm_status fm_cpu_binary_fwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_binary_bwd(struct fm_cpu *s, fm_nid id);
/* shape.c: Concat, Flatten, Reshape, Identity, Dropout */
enum fm_status fm_cpu_shape_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                  const struct fm_node *n);
enum fm_status fm_cpu_shape_fwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_shape_bwd(struct fm_cpu *s, fm_nid id);
/* loss.c: CrossEntropy, and the SGD update */
enum fm_status fm_cpu_loss_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                 const struct fm_node *n);
enum fm_status fm_cpu_loss_fwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_loss_bwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_sgd_plan(struct fm_cpu *s, fm_tid param, fm_nid node);
/* loss.c: MSELoss (mean squared error against a target of the same shape) */
enum fm_status fm_cpu_mse_fwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_mse_bwd(struct fm_cpu *s, fm_nid id);

/* matmul.c: MatMul (batched, broadcast, 1-D operands), Einsum, Attention, and the Gemm and
 * Linear forms linear.c does not run */
enum fm_status fm_cpu_matmul_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                   const struct fm_node *n);
enum fm_status fm_cpu_matmul_fwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_matmul_bwd(struct fm_cpu *s, fm_nid id);
/* norm.c: LayerNorm, GroupNorm, InstanceNorm, Softmax, LogSoftmax */
enum fm_status fm_cpu_norm_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                 const struct fm_node *n);
enum fm_status fm_cpu_norm_fwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_norm_bwd(struct fm_cpu *s, fm_nid id);
/* reduce.c: ReduceSum/Mean/Max/Min/Prod/L2/SumSquare, CumSum */
enum fm_status fm_cpu_reduce_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                   const struct fm_node *n);
enum fm_status fm_cpu_reduce_fwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_reduce_bwd(struct fm_cpu *s, fm_nid id);
/* ewise.c: unary math (Erf, Sqrt, Exp, Sin, Floor ...), Sub, Div, Pow, Max, Min, Where, PRelu,
 * Trilu, comparisons and logic (forward only) */
enum fm_status fm_cpu_ewise_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                  const struct fm_node *n);
enum fm_status fm_cpu_ewise_fwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_ewise_bwd(struct fm_cpu *s, fm_nid id);
/* move.c: Transpose, Split, Slice, Gather, Embedding, Squeeze, Unsqueeze, Expand, Tile, Pad,
 * Resize, ConstantOfShape, Range, Cast */
enum fm_status fm_cpu_move_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                 const struct fm_node *n);
enum fm_status fm_cpu_move_fwd(struct fm_cpu *s, fm_nid id);
enum fm_status fm_cpu_move_bwd(struct fm_cpu *s, fm_nid id);
/* random.c: RandomUniform(Like), RandomNormal(Like), Bernoulli, Multinomial (forward only) */
enum fm_status fm_cpu_random_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                   const struct fm_node *n);
enum fm_status fm_cpu_random_fwd(struct fm_cpu *s, fm_nid id);

#endif
