/* The CUDA backend's internal structures: the run state, device tensors, lowered nodes, the op
 * table each family file fills, and the checked-call macros (every CUDA, cuDNN and cuBLASLt
 * failure names the call, the layer and the source line). Only src/backend/cuda/ includes it. */
#ifndef FM_CU_H
#define FM_CU_H

#include "../backend.h"
#include "../../core/internal.h"
#include "../../ops/ops.h"
#include "cu_kernels.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

/* ---- checked calls: each records "call failed: reason (layer, file:line)" and jumps to the
 * function's one cleanup label, `fail`, with st set; the _RET forms return instead ---- */
struct cu_state;
/* cu_lazy.c: loads cuDNN and cuBLASLt (their handles are released by cu_libs_close) */
enum fm_status cu_libs_open(struct fm_ctx *ctx, void **cudnn, void **lt);
void cu_libs_close(void *cudnn, void *lt);
enum fm_status cu_fail_cuda(struct cu_state *s, cudaError_t e, const char *call, const char *file,
                            int line);
enum fm_status cu_fail_cudnn(struct cu_state *s, cudnnStatus_t e, const char *call,
                             const char *file, int line);
enum fm_status cu_fail_cublas(struct cu_state *s, cublasStatus_t e, const char *call,
                              const char *file, int line);

#define CU_TRY(s, call)                                                                      \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            st = cu_fail_cuda((s), e_, #call, __FILE__, __LINE__);                           \
            goto fail;                                                                       \
        }                                                                                    \
    } while (0)
#define CUDNN_TRY(s, call)                                                                   \
    do {                                                                                     \
        cudnnStatus_t e_ = (call);                                                           \
        if (e_ != CUDNN_STATUS_SUCCESS) {                                                    \
            st = cu_fail_cudnn((s), e_, #call, __FILE__, __LINE__);                          \
            goto fail;                                                                       \
        }                                                                                    \
    } while (0)
#define CUBLAS_TRY(s, call)                                                                  \
    do {                                                                                     \
        cublasStatus_t e_ = (call);                                                          \
        if (e_ != CUBLAS_STATUS_SUCCESS) {                                                   \
            st = cu_fail_cublas((s), e_, #call, __FILE__, __LINE__);                         \
            goto fail;                                                                       \
        }                                                                                    \
    } while (0)
#define CU_RET(s, call)                                                                      \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess)                                                               \
            return cu_fail_cuda((s), e_, #call, __FILE__, __LINE__);                         \
    } while (0)
#define CUDNN_RET(s, call)                                                                   \
    do {                                                                                     \
        cudnnStatus_t e_ = (call);                                                           \
        if (e_ != CUDNN_STATUS_SUCCESS)                                                      \
            return cu_fail_cudnn((s), e_, #call, __FILE__, __LINE__);                        \
    } while (0)
#define CUBLAS_RET(s, call)                                                                  \
    do {                                                                                     \
        cublasStatus_t e_ = (call);                                                          \
        if (e_ != CUBLAS_STATUS_SUCCESS)                                                     \
            return cu_fail_cublas((s), e_, #call, __FILE__, __LINE__);                       \
    } while (0)

/* ---- device tensors ---- */

struct cu_tensor {
    const struct fm_tensor *t;
    fm_tid id;
    enum cu_dt dt;              /* storage type of `data` (params: the fp32 master) */
    bool nhwc;                  /* rank-4 stored channels-last (conv weights: K,R,S,C) */
    bool needs_grad;            /* training: a gradient is computed for it */
    bool is_param, is_buffer, is_input;
    uint64_t numel;
    int64_t dims4[4];           /* the shape as N,C,H,W (rank < 4 padded: see cu_dims4) */
    void *data;                 /* value */
    void *grad;                 /* gradient, in grad_dt */
    enum cu_dt grad_dt;
    void *half;                 /* params in mixed precision: the compute-precision copy */
    bool grad_written;          /* planning: some backward writes the gradient */
    bool keep;                  /* value lives the whole step (read() may see it) */
    /* planner: value and gradient live ranges (timeline indices) and arena offsets */
    int v_first, v_last, g_first, g_last;
    uint64_t v_off, g_off;
    bool in_arena, g_in_arena;
};

struct cu_node;

/* What each op family provides. check: whether the family runs node n as the graph shows it,
 * asked before a device is opened (struct fm_backend's supports, through cu_supports), with
 * FM_ERR_UNSUPPORTED saying why not; NULL: every node of the op. plan: refuse what depends on the
 * run (precision, layouts, training), make descriptors, say which tensors the backward reads
 * and what private memory is needed; tune: after memory exists, pick algorithms (cuDNN find,
 * cuBLASLt heuristics) and say the workspace; fwd/bwd_data/bwd_weight: enqueue. bwd_weight may
 * be NULL (no parameters, or computed together in bwd_data). */
struct cu_op {
    enum fm_status (*check)(struct fm_ctx *ctx, const struct fm_graph *g, const struct fm_node *n);
    enum fm_status (*plan)(struct cu_state *s, struct cu_node *n);
    enum fm_status (*tune)(struct cu_state *s, struct cu_node *n);
    enum fm_status (*fwd)(struct cu_state *s, struct cu_node *n);
    enum fm_status (*bwd_data)(struct cu_state *s, struct cu_node *n);
    enum fm_status (*bwd_weight)(struct cu_state *s, struct cu_node *n);
    void (*release)(struct cu_state *s, struct cu_node *n);
};

struct cu_node {
    fm_nid id;
    const struct fm_node *node;
    const struct cu_op *op;
    int n_in, n_out;
    struct cu_tensor *in[FM_MAX_IO];     /* NULL for an omitted optional input */
    struct cu_tensor *out[FM_MAX_IO];
    bool dx[FM_MAX_IO];                  /* training: input i gets a gradient from this node */
    bool dx_acc[FM_MAX_IO];              /* ... added onto one an earlier backward wrote */
    bool keep_in[FM_MAX_IO];             /* the backward reads input i's value */
    bool keep_out[FM_MAX_IO];            /* the backward reads output i's value */
    bool has_bwd;                        /* training: this node runs a backward */
    bool bwd_split;                      /* data and weight gradients are separate calls */
    int t_fwd, t_bwd;                    /* timeline indices */
    size_t workspace;                    /* bytes of the shared workspace it needs */
    size_t priv_bytes;                   /* private persistent device memory it asked for */
    void *priv_dev;                      /* ... given to it after allocation */
    void *priv;                          /* op-private host state (descriptors, algorithms) */
    char label[3][160];                  /* NVTX names: "<layer> fwd", bwd_data, bwd_weight */
};

/* A flat group of parameters updated by one SGD launch. */
struct cu_group {
    float *master, *momentum;
    void *grad;                 /* grad_dt */
    void *half;                 /* compute copy (mixed precision) or NULL */
    enum cu_dt grad_dt, half_dt;
    uint64_t n;
};

struct cu_state {
    struct fm_ctx *ctx;
    const struct fm_graph *g;
    struct fm_measure_opts opts;
    int device;
    char name[128];
    int sm_count;
    uint64_t free_at_start, total_mem;
    cudaStream_t stream;
    cudnnHandle_t cudnn;
    cublasLtHandle_t lt;
    void *lib_cudnn, *lib_lt;   /* the libraries, loaded at prepare (cu_lazy.c) */
    bool train;
    enum fm_precision prec;
    enum cu_dt cdt;             /* activation and compute-copy storage type */
    cudnnDataType_t cudnn_dt;
    float loss_scale;           /* fp16: a static loss scale; 1 otherwise */
    bool keep_all;              /* FLOPMETER_CUDA_KEEP=1: no memory reuse (tests) */
    const char *where;          /* the layer and phase in progress, for error messages */
    bool host_prof;             /* FLOPMETER_CUDA_HOST_PROFILE=1: host time per op kind, logged
                                   (fm_log) at release: where a step spends its launch time */
    double host_us[FM_OP_COUNT];
    unsigned long host_calls[FM_OP_COUNT];

    size_t n_tensors, n_nodes;
    struct cu_tensor *tensors;
    struct cu_node *nodes;      /* in topological order */
    struct cu_node **bwd;       /* nodes with a backward, in backward order */
    size_t n_bwd;
    int timeline;               /* number of timeline slots (fwd + bwd) */

    /* device memory */
    void *arena;                /* activations and their gradients, planned */
    uint64_t arena_bytes;
    void *params;               /* masters, momenta, grads, compute copies, buffers */
    uint64_t params_bytes;
    void *inputs;               /* input tensors (images, labels) */
    uint64_t inputs_bytes;
    void *priv;                 /* nodes' private memory */
    uint64_t priv_bytes;
    void *workspace;
    size_t workspace_bytes;
    size_t workspace_limit;
    struct cu_group groups[2];  /* 0: conv/linear params (compute-precision grads), 1: others */
    uint64_t *d_step;           /* dropout's step counter */
    float *d_loss;              /* the loss scalar */
    float *h_loss;              /* pinned copy of it */
    bool has_dropout;
    struct cu_tensor *loss;     /* the loss output, training only */
    struct cu_tensor **zero_grads;  /* gradients no backward writes: zeroed each step */
    size_t n_zero_grads;

    /* timing */
    cudaEvent_t ev_start, ev_end;
    cudaEvent_t *ev;            /* one after each timed segment */
    size_t n_ev;
    cudaGraph_t graph;
    cudaGraphExec_t graph_exec;
    bool graph_timed;           /* the captured graph records the per-segment events */

    /* NVML (optional) */
    void *nvml;                 /* dlopen handle or NULL */
    void *nvml_dev;
    int (*nvml_clock)(void *dev, int type, unsigned *mhz);
    int (*nvml_shutdown)(void);
};

/* ---- shared helpers (cu_backend.c) ---- */

/* Value pointer an op computes with: a parameter's compute copy in mixed precision. */
void *cu_val(const struct cu_tensor *t);
/* Storage type of cu_val(t). */
enum cu_dt cu_val_dt(const struct cu_state *s, const struct cu_tensor *t);
cudnnDataType_t cu_cudnn_dt(enum cu_dt dt);
/* The shape as 4 dims N,C,H,W: rank 4 as is, rank 3 (N,C,L) as N,C,1,L, rank 2 as N,C,1,1. */
void cu_dims4(const struct fm_tensor *t, int64_t out[4]);
/* A 4-D tensor descriptor in the tensor's layout and the given type. */
enum fm_status cu_tensor_desc(struct cu_state *s, cudnnTensorDescriptor_t *d,
                              const struct cu_tensor *t, enum cu_dt dt);
/* Elements fit the kernels' 32-bit indexing. */
enum fm_status cu_check_numel(struct cu_state *s, const struct cu_node *n, uint64_t numel);

/* ---- the op table (cu_ops.c; one file per family) ---- */
const struct cu_op *cu_op_for(enum fm_op op);
/* struct fm_backend's supports: FM_OK when the node's op has a row in the table and its
 * family's check accepts it. */
enum fm_status cu_supports(struct fm_ctx *ctx, const struct fm_graph *g, fm_nid id);
/* For the families' checks: FM_ERR_UNSUPPORTED "layer 'NAME' (OP): why". */
enum fm_status cu_refuse(struct fm_ctx *ctx, const struct fm_node *n, const char *why);
/* Rank of tensor t (-1 for FM_NONE) and its elements (0 for FM_NONE), from the graph. */
int cu_rank_of(const struct fm_graph *g, fm_tid t);
uint64_t cu_numel_of(const struct fm_graph *g, fm_tid t);
extern const struct cu_op cu_op_conv, cu_op_batchnorm, cu_op_act, cu_op_softmax, cu_op_pool,
    cu_op_linear, cu_op_binary, cu_op_concat, cu_op_view, cu_op_dropout,
    cu_op_xent;

/* Opens the device named by "cuda[:N]" (and NVML) without a graph: the probe's start. */
enum fm_status cu_open_for_probe(struct cu_state *s, const char *device);

/* ---- cuBLASLt products (cu_linear.c): column-major D (m x n) = op(A) op(B) [+ D] [+ bias],
 * algorithm and workspace chosen at init ---- */
struct cu_mm {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    size_t ws;
};
cublasComputeType_t cu_lt_compute(enum fm_precision prec);
enum fm_status cu_mm_init(struct cu_state *s, struct cu_mm *mm, bool ta, bool tb, uint64_t m,
                          uint64_t n, uint64_t k, enum cu_dt ab_dt, enum cu_dt c_dt,
                          cublasComputeType_t ct, const void *bias, size_t ws_limit);
/* Runs on s->stream with s->workspace (at least mm->ws bytes). */
enum fm_status cu_mm_run(struct cu_state *s, const struct cu_mm *mm, const void *a, const void *b,
                         void *c, bool accumulate);
void cu_mm_release(struct cu_mm *mm);

/* ---- memory plan (cu_plan.c): live ranges and arena offsets ---- */
enum fm_status cu_plan_memory(struct cu_state *s);

/* ---- NVML (cu_nvml.c): optional, absent is not an error ---- */
void cu_nvml_open(struct cu_state *s);
double cu_nvml_clock(struct cu_state *s);
void cu_nvml_close(struct cu_state *s);

#endif
