/* The CUDA measurement backend (fm_backend_cuda): lowers a graph onto cuDNN, cuBLASLt and the
 * backend's own kernels, plans device memory, starts every tensor from fm_init_values, and runs
 * timed steps on one stream (CUDA events per layer and per step; optionally one CUDA graph per
 * step; NVTX ranges named after the layers). Mixed precision keeps fp32 master weights and
 * momenta; fp16 uses a static loss scale. It does not overlap steps or use several GPUs. */
#include "cu.h"

#include <math.h>
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* fp16 gradients underflow without a loss scale; PyTorch's GradScaler adapts one each step.
 * A fixed 2^10 keeps the small gradients of these networks in range without overflowing the
 * large ones (weight gradients of a few hundred), and costs no inf check per step. */
#define CU_FP16_LOSS_SCALE 1024.0f
#define CU_ALIGN 256u
#define CU_PARAM_ALIGN_ELEMS 64u   /* 256 bytes of fp32: every parameter starts aligned */
#define CU_WORKSPACE_CAP (4ull << 30)

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static size_t dt_size(enum cu_dt dt)
{
    switch (dt) {
    case CU_F16:
    case CU_BF16: return 2;
    case CU_I64: return 8;
    default: return 4;
    }
}

/* ---------------------------------------------------------------------------------------------
 * device setup
 * ------------------------------------------------------------------------------------------ */

/* Opens device `ordinal`: shared by the backend and the probe. */
static enum fm_status open_device(struct cu_state *s, const char *device)
{
    struct fm_target t;
    enum fm_status st = fm_target_parse(s->ctx, device, &t);
    if (st || t.kind != FM_TARGET_CUDA)
        return st ? st : fm_error(s->ctx, FM_ERR_INVALID, "'%s' is not a CUDA device: use cuda "
                                  "or cuda:N", device);
    s->device = t.ordinal;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
        return fm_error(s->ctx, FM_ERR_DEVICE, "no CUDA device: %s",
                        e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports none");
    if (s->device >= count)
        return fm_error(s->ctx, FM_ERR_DEVICE, "cuda:%d does not exist: this machine has %d CUDA "
                        "device%s (cuda:0%s)", s->device, count, count == 1 ? "" : "s",
                        count > 1 ? " ..." : "");
    CU_TRY(s, cudaSetDevice(s->device));
    struct cudaDeviceProp prop;
    CU_TRY(s, cudaGetDeviceProperties(&prop, s->device));
    snprintf(s->name, sizeof(s->name), "%.127s", prop.name);
    s->sm_count = prop.multiProcessorCount;
    size_t free_b = 0, total_b = 0;
    CU_TRY(s, cudaMemGetInfo(&free_b, &total_b));
    s->free_at_start = free_b;
    s->total_mem = total_b;
    CU_TRY(s, cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    return FM_OK;
fail:
    return st;
}

static enum fm_status open_libraries(struct cu_state *s)
{
    enum fm_status st = cu_libs_open(s->ctx, &s->lib_cudnn, &s->lib_lt);
    if (st)
        return st;
    CUDNN_TRY(s, cudnnCreate(&s->cudnn));
    CUDNN_TRY(s, cudnnSetStream(s->cudnn, s->stream));
    CUBLAS_TRY(s, cublasLtCreate(&s->lt));
    cu_nvml_open(s);
    return FM_OK;
fail:
    return st;
}

static enum fm_status choose_precision(struct cu_state *s)
{
    s->prec = s->opts.precision;
    s->loss_scale = 1.0f;
    switch (s->prec) {
    case FM_PREC_FP32:
    case FM_PREC_TF32: s->cdt = CU_F32; break;
    case FM_PREC_FP16:
        s->cdt = CU_F16;
        s->loss_scale = CU_FP16_LOSS_SCALE;
        break;
    case FM_PREC_BF16: s->cdt = CU_BF16; break;
    default:
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "precision %s is not supported by the CUDA "
                        "backend: use fp32, tf32, fp16 or bf16", fm_precision_name(s->prec));
    }
    s->cudnn_dt = cu_cudnn_dt(s->cdt);
    return FM_OK;
}

/* ---------------------------------------------------------------------------------------------
 * tensors and nodes
 * ------------------------------------------------------------------------------------------ */

/* Whether a parameter feeds an op that computes in the compute precision (anything but a
 * normalization, whose scale and shift stay fp32 as under autocast): such a parameter gets a
 * compute-precision copy and gradient in mixed precision. And whether it is a conv weight
 * (stored K,R,S,C in channels-last). */
static void param_use(const struct fm_graph *g, fm_tid id, bool *matrix_op, bool *conv_weight)
{
    *matrix_op = *conv_weight = false;
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        bool mat = fm_op_class(n->op) != FM_CLASS_NORM;
        for (int k = 0; k < n->n_in; k++) {
            if (n->in[k] != id)
                continue;
            if (mat)
                *matrix_op = true;
            if (n->op == FM_OP_CONV && k == 1)
                *conv_weight = true;
        }
    }
}

static enum fm_status build_tensors(struct cu_state *s)
{
    const struct fm_graph *g = s->g;
    s->n_tensors = fm_graph_tensor_count(g);
    s->tensors = fm_alloc(s->ctx, sizeof(*s->tensors) * (s->n_tensors + 1));
    if (!s->tensors)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < s->n_tensors; i++) {
        struct cu_tensor *ct = &s->tensors[i];
        const struct fm_tensor *t = fm_graph_tensor(g, (fm_tid)i);
        ct->t = t;
        ct->id = (fm_tid)i;
        enum fm_status st = fm_shape_numel(&t->shape, &ct->numel);
        if (st)
            return fm_error(s->ctx, st, "tensor '%s': bad shape", t->name);
        cu_dims4(t, ct->dims4);
        ct->is_param = t->role == FM_ROLE_PARAM;
        ct->is_buffer = t->role == FM_ROLE_BUFFER;
        ct->is_input = t->role == FM_ROLE_INPUT || t->role == FM_ROLE_CONST;
        bool is_float = fm_dtype_is_float(t->dtype);
        bool matrix_op = false, conv_weight = false;
        if (ct->is_param)
            param_use(g, ct->id, &matrix_op, &conv_weight);
        if (ct->is_param || ct->is_buffer) {
            if (!is_float)
                return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "parameter '%s' is %s: the CUDA "
                                "backend handles floating-point parameters only", t->name,
                                fm_dtype_name(t->dtype));
            ct->dt = CU_F32;
            ct->nhwc = s->opts.channels_last && conv_weight && t->shape.rank == 4;
        } else if (!is_float) {
            ct->dt = CU_I64;
        } else {
            ct->dt = s->cdt;
            ct->nhwc = s->opts.channels_last && t->shape.rank == 4;
        }
        ct->needs_grad = s->train && is_float && fm_graph_needs_grad(g, ct->id);
        ct->grad_dt = ct->dt;
        if (ct->is_param)
            ct->grad_dt = matrix_op ? s->cdt : CU_F32;
    }
    return FM_OK;
}

static bool has_consumer(const struct fm_graph *g, fm_tid id)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] == id)
                return true;
    }
    return false;
}

static enum fm_status build_nodes(struct cu_state *s)
{
    const struct fm_graph *g = s->g;
    const fm_nid *topo = fm_graph_topo_order(g);
    s->n_nodes = fm_graph_node_count(g);
    s->nodes = fm_alloc(s->ctx, sizeof(*s->nodes) * (s->n_nodes + 1));
    s->bwd = fm_alloc(s->ctx, sizeof(*s->bwd) * (s->n_nodes + 1));
    if (!s->nodes || !s->bwd)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    /* every op must be known before anything runs */
    for (size_t i = 0; i < s->n_nodes; i++) {
        const struct fm_node *fn = fm_graph_node(g, topo[i]);
        struct cu_node *n = &s->nodes[i];
        n->id = topo[i];
        n->node = fn;
        enum fm_status st = cu_supports(s->ctx, g, topo[i]);
        if (st)
            return st;
        n->op = cu_op_for(fn->op);
        n->n_in = fn->n_in;
        n->n_out = fn->n_out;
        for (int k = 0; k < fn->n_in; k++)
            n->in[k] = fn->in[k] == FM_NONE ? NULL : &s->tensors[fn->in[k]];
        for (int k = 0; k < fn->n_out; k++)
            n->out[k] = &s->tensors[fn->out[k]];
        for (int k = 0; k < n->n_in; k++) {
            n->dx[k] = n->in[k] && n->in[k]->needs_grad;
            n->has_bwd = n->has_bwd || n->dx[k];
        }
        n->t_fwd = (int)i;
        snprintf(n->label[0], sizeof(n->label[0]), "%s fwd", fn->name);
        snprintf(n->label[1], sizeof(n->label[1]), "%s bwd_data", fn->name);
        snprintf(n->label[2], sizeof(n->label[2]), "%s bwd_weight", fn->name);
        if (fn->op == FM_OP_CROSS_ENTROPY) {
            if (s->loss)
                return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "layer '%s': the CUDA backend "
                                "trains graphs with one loss; this one has several", fn->name);
            s->loss = n->out[0];
            s->loss->dt = CU_F32;
        }
        if (fn->op == FM_OP_DROPOUT && s->train)
            s->has_dropout = true;
    }
    if (s->train && !s->loss)
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "training needs a loss, and graph '%s' has "
                        "no CrossEntropy node: build it with a loss, or measure inference",
                        fm_graph_name(g));
    for (size_t i = 0; i < s->n_nodes; i++) {
        struct cu_node *n = &s->nodes[i];
        s->where = n->label[0];
        enum fm_status st = n->op->plan(s, n);
        if (st)
            return st;
    }
    s->where = NULL;
    /* backward order and who writes each gradient first */
    int F = (int)s->n_nodes;
    for (size_t i = s->n_nodes; i-- > 0;) {
        struct cu_node *n = &s->nodes[i];
        if (!n->has_bwd)
            continue;
        n->t_bwd = F + (int)s->n_bwd;
        s->bwd[s->n_bwd++] = n;
        for (int k = 0; k < n->n_in; k++) {
            if (!n->dx[k])
                continue;
            n->dx_acc[k] = n->in[k]->grad_written;
            n->in[k]->grad_written = true;
        }
    }
    s->timeline = F + (int)s->n_bwd;
    /* gradients that a backward reads but none writes (an unused output) start at zero */
    s->zero_grads = fm_alloc(s->ctx, sizeof(*s->zero_grads) * (s->n_tensors + 1));
    if (!s->zero_grads)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < s->n_tensors; i++) {
        struct cu_tensor *t = &s->tensors[i];
        if (t->needs_grad && !t->grad_written && t->t->producer != FM_NONE && t != s->loss)
            s->zero_grads[s->n_zero_grads++] = t;
        t->keep = s->keep_all || (t->t->producer != FM_NONE && !has_consumer(g, t->id));
    }
    for (size_t i = 0; i < s->n_nodes; i++) {
        const struct cu_node *n = &s->nodes[i];
        if (n->node->op != FM_OP_CROSS_ENTROPY)
            continue;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k])
                n->in[k]->keep = true;
    }
    for (size_t i = 0; i < s->g->n_outputs; i++)
        s->tensors[s->g->outputs[i]].keep = true;
    return FM_OK;
}

/* ---------------------------------------------------------------------------------------------
 * memory
 * ------------------------------------------------------------------------------------------ */

/* Lays the parameters out in two flat groups (master, momentum, gradient, compute copy each
 * contiguous, so one SGD launch updates a group) and the buffers after them. With base NULL it
 * only sizes; with a base it sets the pointers. */
static uint64_t layout_params(struct cu_state *s, char *base)
{
    uint64_t n_group[2] = {0, 0};
    for (size_t i = 0; i < s->n_tensors; i++) {
        const struct cu_tensor *t = &s->tensors[i];
        if (t->is_param)
            n_group[t->grad_dt == CU_F32 ? 1 : 0] += align_up(t->numel, CU_PARAM_ALIGN_ELEMS);
    }
    bool mixed = s->cdt != CU_F32;
    uint64_t off = 0;
    uint64_t start[2][4];
    for (int gi = 0; gi < 2; gi++) {
        enum cu_dt gdt = gi == 0 ? s->cdt : CU_F32;
        start[gi][0] = off;
        off = align_up(off + n_group[gi] * 4, CU_ALIGN);                 /* master */
        start[gi][1] = off;
        off = align_up(off + n_group[gi] * 4, CU_ALIGN);                 /* momentum */
        start[gi][2] = off;
        off = align_up(off + n_group[gi] * dt_size(gdt), CU_ALIGN);      /* gradient */
        start[gi][3] = off;
        if (gi == 0 && mixed)
            off = align_up(off + n_group[gi] * dt_size(s->cdt), CU_ALIGN);   /* compute copy */
    }
    uint64_t buf_start = off;
    for (size_t i = 0; i < s->n_tensors; i++) {
        if (s->tensors[i].is_buffer)
            off = align_up(off + s->tensors[i].numel * 4, CU_ALIGN);
    }
    if (!base)
        return off;
    for (int gi = 0; gi < 2; gi++) {
        struct cu_group *gr = &s->groups[gi];
        gr->n = n_group[gi];
        gr->master = (float *)(base + start[gi][0]);
        gr->momentum = (float *)(base + start[gi][1]);
        gr->grad = base + start[gi][2];
        gr->grad_dt = gi == 0 ? s->cdt : CU_F32;
        gr->half = gi == 0 && mixed ? base + start[gi][3] : NULL;
        gr->half_dt = s->cdt;
    }
    uint64_t pos[2] = {0, 0};
    off = buf_start;
    for (size_t i = 0; i < s->n_tensors; i++) {
        struct cu_tensor *t = &s->tensors[i];
        if (t->is_param) {
            int gi = t->grad_dt == CU_F32 ? 1 : 0;
            struct cu_group *gr = &s->groups[gi];
            t->data = gr->master + pos[gi];
            t->grad = (char *)gr->grad + pos[gi] * dt_size(gr->grad_dt);
            t->half = gr->half ? (char *)gr->half + pos[gi] * dt_size(gr->half_dt) : NULL;
            pos[gi] += align_up(t->numel, CU_PARAM_ALIGN_ELEMS);
        } else if (t->is_buffer) {
            t->data = base + off;
            off = align_up(off + t->numel * 4, CU_ALIGN);
        }
    }
    return 0;
}

static uint64_t layout_inputs(struct cu_state *s, char *base)
{
    uint64_t off = 0;
    for (size_t i = 0; i < s->n_tensors; i++) {
        struct cu_tensor *t = &s->tensors[i];
        if (!t->is_input)
            continue;
        if (base)
            t->data = base + off;
        off = align_up(off + t->numel * dt_size(t->dt), CU_ALIGN);
    }
    return off;
}

static uint64_t layout_priv(struct cu_state *s, char *base)
{
    uint64_t off = 0;
    for (size_t i = 0; i < s->n_nodes; i++) {
        struct cu_node *n = &s->nodes[i];
        if (!n->priv_bytes)
            continue;
        if (base)
            n->priv_dev = base + off;
        off = align_up(off + n->priv_bytes, CU_ALIGN);
    }
    return off;
}

static void place_arena(struct cu_state *s)
{
    char *base = s->arena;
    for (size_t i = 0; i < s->n_tensors; i++) {
        struct cu_tensor *t = &s->tensors[i];
        if (t->in_arena)
            t->data = base + t->v_off;
        if (t->g_in_arena)
            t->grad = base + t->g_off;
    }
}

static enum fm_status allocate(struct cu_state *s)
{
    enum fm_status st = FM_OK;
    s->params_bytes = layout_params(s, NULL);
    s->inputs_bytes = layout_inputs(s, NULL);
    s->priv_bytes = layout_priv(s, NULL);
    /* scalars: the loss, its pinned host copy, dropout's step counter */
    uint64_t need = s->arena_bytes + s->params_bytes + s->inputs_bytes + s->priv_bytes + 4096;
    size_t free_b = 0, total_b = 0;
    CU_TRY(s, cudaMemGetInfo(&free_b, &total_b));
    if (need > free_b) {
        s->where = "allocating device memory";
        return cu_fail_cuda(s, cudaErrorMemoryAllocation, "planning the step's memory", __FILE__,
                            __LINE__);
    }
    s->where = "allocating device memory";
    CU_TRY(s, cudaMalloc(&s->params, s->params_bytes ? s->params_bytes : CU_ALIGN));
    CU_TRY(s, cudaMalloc(&s->inputs, s->inputs_bytes ? s->inputs_bytes : CU_ALIGN));
    CU_TRY(s, cudaMalloc(&s->priv, s->priv_bytes ? s->priv_bytes : CU_ALIGN));
    CU_TRY(s, cudaMalloc(&s->arena, s->arena_bytes ? s->arena_bytes : CU_ALIGN));
    CU_TRY(s, cudaMalloc((void **)&s->d_loss, 256));
    CU_TRY(s, cudaMalloc((void **)&s->d_step, 256));
    /* page-locked host memory for the loss's asynchronous copy: only CUDA can allocate it, so
     * this (and device memory) is the one kind of allocation that does not go through fm_alloc */
    CU_TRY(s, cudaMallocHost((void **)&s->h_loss, sizeof(float)));
    CU_TRY(s, cudaMemsetAsync(s->params, 0, s->params_bytes ? s->params_bytes : CU_ALIGN, s->stream));
    CU_TRY(s, cudaMemsetAsync(s->d_loss, 0, 256, s->stream));
    CU_TRY(s, cudaMemsetAsync(s->d_step, 0, 256, s->stream));
    CU_TRY(s, cudaStreamSynchronize(s->stream));
    *s->h_loss = 0.0f;
    layout_params(s, s->params);
    layout_inputs(s, s->inputs);
    layout_priv(s, s->priv);
    place_arena(s);
    if (s->loss && !s->loss->data)
        s->loss->data = s->d_loss;
    s->where = NULL;
    return FM_OK;
fail:
    return st;
}

/* host (N,C,H,W) order <-> device (N,H,W,C) order, one tensor */
static void nchw_to_nhwc(const float *src, float *dst, const int64_t d[4])
{
    int64_t N = d[0], C = d[1], HW = d[2] * d[3];
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < HW; p++)
                dst[(n * HW + p) * C + c] = src[(n * C + c) * HW + p];
}

static void nhwc_to_nchw(const float *src, float *dst, const int64_t d[4])
{
    int64_t N = d[0], C = d[1], HW = d[2] * d[3];
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < HW; p++)
                dst[(n * C + c) * HW + p] = src[(n * HW + p) * C + c];
}

/* Copies fp32 host values (logical NCHW order) into a device buffer of type dt and the
 * tensor's layout, through a device staging buffer. */
static enum fm_status upload(struct cu_state *s, const struct cu_tensor *t, const float *host,
                             float *tmp, float *stage, void *dst, enum cu_dt dt)
{
    enum fm_status st = FM_OK;
    const float *src = host;
    if (t->nhwc) {
        nchw_to_nhwc(host, tmp, t->dims4);
        src = tmp;
    }
    /* Every copy on the backend's own stream, which does not wait for the legacy default
     * stream: a plain cudaMemcpy from pageable memory may return before its DMA lands, and a
     * cast on this stream would then read a half-written staging buffer. */
    if (dt == CU_I64) {
        int64_t *iv = (int64_t *)tmp;   /* tmp has room for 2*numel floats */
        for (uint64_t i = 0; i < t->numel; i++)
            iv[i] = (int64_t)host[i];
        CU_TRY(s, cudaMemcpyAsync(dst, iv, t->numel * 8, cudaMemcpyHostToDevice, s->stream));
    } else if (dt == CU_F32) {
        CU_TRY(s, cudaMemcpyAsync(dst, src, t->numel * 4, cudaMemcpyHostToDevice, s->stream));
    } else {
        CU_TRY(s, cudaMemcpyAsync(stage, src, t->numel * 4, cudaMemcpyHostToDevice, s->stream));
        CU_TRY(s, cuk_cast(stage, CU_F32, dst, dt, t->numel, 1.0f, s->stream));
    }
    /* the host buffers are reused for the next tensor */
    CU_TRY(s, cudaStreamSynchronize(s->stream));
    return FM_OK;
fail:
    return st;
}

static enum fm_status init_values(struct cu_state *s)
{
    enum fm_status st = FM_OK;
    uint64_t most = 1;
    for (size_t i = 0; i < s->n_tensors; i++) {
        const struct cu_tensor *t = &s->tensors[i];
        if ((t->is_param || t->is_buffer || t->is_input) && t->numel > most)
            most = t->numel;
    }
    /* tmp is used as int64 for labels: twice the floats */
    float *host = fm_alloc(s->ctx, sizeof(float) * most);
    float *tmp = fm_alloc(s->ctx, sizeof(float) * most * 2);
    float *stage = NULL;
    s->where = "initializing parameters and inputs";
    if (!host || !tmp) {
        st = fm_error(s->ctx, FM_ERR_NOMEM, "out of host memory for the initial values");
        goto fail;
    }
    CU_TRY(s, cudaMalloc((void **)&stage, most * 4));
    for (size_t i = 0; i < s->n_tensors; i++) {
        struct cu_tensor *t = &s->tensors[i];
        if (!(t->is_param || t->is_buffer || t->is_input) || !t->numel)
            continue;
        st = fm_init_values(s->ctx, s->g, t->id, s->opts.seed, host, t->numel);
        if (st)
            goto fail;
        st = upload(s, t, host, tmp, stage, t->data, t->dt);
        if (st)
            goto fail;
        if (t->half)
            CU_TRY(s, cuk_cast(t->data, CU_F32, t->half, s->cdt, t->numel, 1.0f, s->stream));
    }
    /* activations and gradients: random, not zeros, so the algorithm search times real data */
    if (s->arena_bytes)
        CU_TRY(s, cuk_fill_random(s->arena, s->cdt, s->arena_bytes / dt_size(s->cdt),
                                  s->opts.seed ^ 0x5eedull, 1.0f, s->stream));
    CU_TRY(s, cudaStreamSynchronize(s->stream));
    s->where = NULL;
fail:
    if (stage)
        cudaFree(stage);
    fm_dealloc(s->ctx, host);
    fm_dealloc(s->ctx, tmp);
    return st;
}

/* Algorithm choices need memory to run in: a provisional workspace as large as allowed, then
 * one of the size the chosen algorithms need. */
static enum fm_status tune(struct cu_state *s)
{
    enum fm_status st = FM_OK;
    size_t free_b = 0, total_b = 0;
    CU_TRY(s, cudaMemGetInfo(&free_b, &total_b));
    s->workspace_limit = free_b / 2 < CU_WORKSPACE_CAP ? free_b / 2 : CU_WORKSPACE_CAP;
    s->workspace_bytes = s->workspace_limit;
    CU_TRY(s, cudaMalloc(&s->workspace, s->workspace_bytes ? s->workspace_bytes : CU_ALIGN));
    size_t most = 0;
    for (size_t i = 0; i < s->n_nodes; i++) {
        struct cu_node *n = &s->nodes[i];
        s->where = n->label[0];
        if (n->op->tune) {
            st = n->op->tune(s, n);
            if (st)
                goto fail;
        }
        if (n->workspace > most)
            most = n->workspace;
    }
    s->where = NULL;
    CU_TRY(s, cudaFree(s->workspace));
    s->workspace = NULL;
    s->workspace_bytes = most;
    CU_TRY(s, cudaMalloc(&s->workspace, most ? most : CU_ALIGN));
    return FM_OK;
fail:
    return st;
}

static enum fm_status make_events(struct cu_state *s)
{
    enum fm_status st = FM_OK;
    s->n_ev = s->n_nodes + (s->train ? 2 * s->n_bwd + 1 : 0);
    s->ev = fm_alloc(s->ctx, sizeof(cudaEvent_t) * (s->n_ev + 1));
    if (!s->ev)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    CU_TRY(s, cudaEventCreate(&s->ev_start));
    CU_TRY(s, cudaEventCreate(&s->ev_end));
    for (size_t i = 0; i < s->n_ev; i++)
        CU_TRY(s, cudaEventCreate(&s->ev[i]));
    return FM_OK;
fail:
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * out of memory: say what would fit
 * ------------------------------------------------------------------------------------------ */

static int64_t graph_batch(const struct fm_graph *g)
{
    for (size_t i = 0; i < fm_graph_tensor_count(g); i++) {
        const struct fm_tensor *t = fm_graph_tensor(g, (fm_tid)i);
        if (t->role == FM_ROLE_INPUT && fm_dtype_is_float(t->dtype) && t->shape.rank >= 1)
            return t->shape.dims[0];
    }
    return 0;
}

/* flopmeter's memory estimate is affine in the batch: the parameters, their gradients and
 * optimizer state are fixed, activations and inputs grow with every sample. So the estimate at
 * this batch gives both terms, and the largest batch that fits the free memory follows. */
static enum fm_status oom_advice(struct cu_state *s, enum fm_status st)
{
    char orig[FM_ERRMSG_SIZE];
    snprintf(orig, sizeof(orig), "%s", fm_ctx_error(s->ctx));
    double gib = 1024.0 * 1024.0 * 1024.0;
    uint64_t planned = s->arena_bytes + s->params_bytes + s->inputs_bytes + s->priv_bytes;
    int64_t batch = graph_batch(s->g);
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = s->train ? FM_MODE_TRAIN : FM_MODE_INFER;
    struct fm_counts *c = NULL;
    uint64_t est = 0;
    if (batch <= 0 || fm_count(s->ctx, s->g, &co, &c) != FM_OK ||
        fm_counts_training_memory(c, &est) != FM_OK) {
        fm_counts_free(c);
        return fm_error(s->ctx, st, "out of GPU memory on %s (%.1f GiB free): %s", s->name,
                        (double)s->free_at_start / gib, orig);
    }
    uint64_t fixed = c->param_bytes + c->buffer_bytes + c->grad_bytes + c->optimizer_state_bytes;
    fm_counts_free(c);
    double per_sample = est > fixed ? (double)(est - fixed) / (double)batch : 0.0;
    double room = (double)s->free_at_start - (double)fixed;
    long long fits = per_sample > 0 && room > 0 ? (long long)floor(room / per_sample) : 0;
    if (fits > 0)
        return fm_error(s->ctx, st,
                        "out of GPU memory on %s: %.2f GiB were free; this step planned %.2f GiB "
                        "(flopmeter's estimate for batch %lld: %.2f GiB). By that estimate the "
                        "largest batch that fits is %lld: try fm_zoo_opts.batch %lld. [%s]",
                        s->name, (double)s->free_at_start / gib, (double)planned / gib,
                        (long long)batch, (double)est / gib, fits, fits, orig);
    return fm_error(s->ctx, st,
                    "out of GPU memory on %s: %.2f GiB were free, and flopmeter's estimate of the "
                    "parameters, gradients and optimizer state alone (%.2f GiB) leaves no room "
                    "for even one sample. [%s]",
                    s->name, (double)s->free_at_start / gib, (double)fixed / gib, orig);
}

/* ---------------------------------------------------------------------------------------------
 * the backend interface
 * ------------------------------------------------------------------------------------------ */

static void log_host_profile(struct cu_state *s)
{
    for (int op = 0; op < FM_OP_COUNT; op++) {
        if (s->host_calls[op])
            fm_log(s->ctx, "cuda host time: %-14s %6lu calls %9.1f us total %7.2f us/call",
                   fm_op_name((enum fm_op)op), s->host_calls[op], s->host_us[op],
                   s->host_us[op] / (double)s->host_calls[op]);
    }
}

static void cuda_release(void *state)
{
    struct cu_state *s = state;
    if (!s)
        return;
    if (s->stream)
        cudaStreamSynchronize(s->stream);
    if (s->host_prof)
        log_host_profile(s);
    for (size_t i = 0; s->nodes && i < s->n_nodes; i++) {
        struct cu_node *n = &s->nodes[i];
        if (n->op && n->op->release)
            n->op->release(s, n);
    }
    if (s->graph_exec)
        cudaGraphExecDestroy(s->graph_exec);
    if (s->graph)
        cudaGraphDestroy(s->graph);
    for (size_t i = 0; s->ev && i < s->n_ev; i++)
        if (s->ev[i])
            cudaEventDestroy(s->ev[i]);
    if (s->ev_start)
        cudaEventDestroy(s->ev_start);
    if (s->ev_end)
        cudaEventDestroy(s->ev_end);
    void *bufs[] = {s->arena, s->params, s->inputs, s->priv, s->workspace, s->d_loss, s->d_step};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        if (bufs[i])
            cudaFree(bufs[i]);
    if (s->h_loss)
        cudaFreeHost(s->h_loss);
    if (s->lt)
        cublasLtDestroy(s->lt);
    if (s->cudnn)
        cudnnDestroy(s->cudnn);
    cu_libs_close(s->lib_cudnn, s->lib_lt);
    if (s->stream)
        cudaStreamDestroy(s->stream);
    cu_nvml_close(s);
    struct fm_ctx *ctx = s->ctx;
    fm_dealloc(ctx, s->ev);
    fm_dealloc(ctx, s->zero_grads);
    fm_dealloc(ctx, s->bwd);
    fm_dealloc(ctx, s->nodes);
    fm_dealloc(ctx, s->tensors);
    fm_dealloc(ctx, s);
}

static enum fm_status cuda_prepare(struct fm_ctx *ctx, const struct fm_graph *g,
                                   const struct fm_measure_opts *opts, void **out)
{
    *out = NULL;
    struct cu_state *s = fm_alloc(ctx, sizeof(*s));
    if (!s)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory");
    s->ctx = ctx;
    s->g = g;
    s->opts = *opts;
    s->train = opts->mode == FM_MODE_TRAIN;
    const char *keep = getenv("FLOPMETER_CUDA_KEEP");
    s->keep_all = keep && keep[0] && strcmp(keep, "0") != 0;
    const char *prof = getenv("FLOPMETER_CUDA_HOST_PROFILE");
    s->host_prof = prof && prof[0] && strcmp(prof, "0") != 0;
    bool device_open = false;
    enum fm_status st = choose_precision(s);
    if (!st)
        st = open_device(s, opts->device);
    if (!st) {
        device_open = true;
        st = open_libraries(s);
    }
    if (!st)
        st = build_tensors(s);
    if (!st)
        st = build_nodes(s);
    if (!st)
        st = cu_plan_memory(s);
    if (!st)
        st = allocate(s);
    if (!st)
        st = init_values(s);
    if (!st)
        st = tune(s);
    if (!st)
        st = make_events(s);
    if (st) {
        if (st == FM_ERR_DEVICE && device_open)
            st = oom_advice(s, st);
        cuda_release(s);
        return st;
    }
    *out = s;
    return FM_OK;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static enum fm_status run_op(struct cu_state *s, struct cu_node *n, int phase,
                             enum fm_status (*fn)(struct cu_state *, struct cu_node *))
{
    double t0 = s->host_prof ? now_us() : 0.0;
    s->where = n->label[phase];
    nvtxRangePushA(n->label[phase]);
    enum fm_status st = fn(s, n);
    nvtxRangePop();
    s->where = NULL;
    if (s->host_prof) {
        s->host_us[n->node->op] += now_us() - t0;
        s->host_calls[n->node->op]++;
    }
    return st;
}

/* Records segment event k: inside a graph capture as an external event node, so replays
 * time the same boundaries. */
static enum fm_status mark(struct cu_state *s, bool timed, bool capturing, size_t k)
{
    if (!timed)
        return FM_OK;
    if (capturing)
        CU_RET(s, cudaEventRecordWithFlags(s->ev[k], s->stream, cudaEventRecordExternal));
    else
        CU_RET(s, cudaEventRecord(s->ev[k], s->stream));
    return FM_OK;
}

/* One step's work, in order: forward, loss, backward (weight then data gradient per node),
 * the SGD update, the loss copied to the host. */
static enum fm_status step_body(struct cu_state *s, bool timed, bool capturing)
{
    enum fm_status st;
    size_t k = 0;
    for (size_t i = 0; i < s->n_nodes; i++) {
        st = run_op(s, &s->nodes[i], 0, s->nodes[i].op->fwd);
        if (st)
            return st;
        if ((st = mark(s, timed, capturing, k++)))
            return st;
    }
    if (s->train) {
        for (size_t i = 0; i < s->n_zero_grads; i++) {
            struct cu_tensor *t = s->zero_grads[i];
            CU_RET(s, cudaMemsetAsync(t->grad, 0, t->numel * dt_size(t->dt), s->stream));
        }
        for (size_t i = 0; i < s->n_bwd; i++) {
            struct cu_node *n = s->bwd[i];
            if (n->op->bwd_weight) {
                st = run_op(s, n, 2, n->op->bwd_weight);
                if (st)
                    return st;
            }
            if ((st = mark(s, timed, capturing, k++)))
                return st;
            st = run_op(s, n, 1, n->op->bwd_data);
            if (st)
                return st;
            if ((st = mark(s, timed, capturing, k++)))
                return st;
        }
        s->where = "SGD update";
        nvtxRangePushA("optimizer SGD");
        float inv = 1.0f / s->loss_scale;
        for (int gi = 0; gi < 2; gi++) {
            struct cu_group *gr = &s->groups[gi];
            if (!gr->n)
                continue;
            CU_RET(s, cuk_sgd(gr->master, gr->grad, gr->grad_dt, gr->momentum, gr->half,
                              gr->half_dt, gr->n, (float)s->opts.lr, (float)s->opts.momentum, inv,
                              s->stream));
        }
        if (s->has_dropout)
            CU_RET(s, cuk_step_advance(s->d_step, s->stream));
        nvtxRangePop();
        s->where = NULL;
        if ((st = mark(s, timed, capturing, k++)))
            return st;
    }
    if (s->loss)
        CU_RET(s, cudaMemcpyAsync(s->h_loss, s->loss->data, sizeof(float), cudaMemcpyDeviceToHost,
                                  s->stream));
    return FM_OK;
}

static enum fm_status capture(struct cu_state *s, bool timed)
{
    enum fm_status st = FM_OK;
    if (s->graph_exec) {
        cudaGraphExecDestroy(s->graph_exec);
        s->graph_exec = NULL;
    }
    if (s->graph) {
        cudaGraphDestroy(s->graph);
        s->graph = NULL;
    }
    s->where = "capturing the step in a CUDA graph";
    CU_TRY(s, cudaStreamBeginCapture(s->stream, cudaStreamCaptureModeThreadLocal));
    st = step_body(s, timed, true);
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(s->stream, &graph);
    if (st) {
        if (graph)
            cudaGraphDestroy(graph);
        return st;
    }
    s->where = "capturing the step in a CUDA graph";
    CU_TRY(s, e);
    s->graph = graph;
    CU_TRY(s, cudaGraphInstantiate(&s->graph_exec, s->graph, 0));
    s->graph_timed = timed;
    s->where = NULL;
    return FM_OK;
fail:
    return st;
}

/* The optimizer's time belongs to no single layer: it is one fused update per parameter group,
 * whose time is proportional to the elements it touches, so each node gets the share of its
 * parameters' elements. */
static void spread_optimizer(struct cu_state *s, struct fm_node_timing *nodes, double ms)
{
    uint64_t total = s->groups[0].n + s->groups[1].n;
    if (!total)
        return;
    for (size_t i = 0; i < s->n_nodes; i++) {
        const struct cu_node *n = &s->nodes[i];
        uint64_t own = 0;
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k] && n->in[k]->is_param && n->in[k]->needs_grad)
                own += align_up(n->in[k]->numel, CU_PARAM_ALIGN_ELEMS);
        nodes[n->id].ms[FM_PHASE_OPTIMIZER] = ms * (double)own / (double)total;
    }
}

static enum fm_status cuda_step(void *state, struct fm_step_timing *t)
{
    struct cu_state *s = state;
    enum fm_status st;
    bool timed = t->nodes != NULL;
    if (s->opts.cuda_graph && (!s->graph_exec || s->graph_timed != timed)) {
        st = capture(s, timed);
        if (st)
            return st;
    }
    CU_RET(s, cudaEventRecord(s->ev_start, s->stream));
    if (s->opts.cuda_graph) {
        s->where = "launching the step's CUDA graph";
        CU_RET(s, cudaGraphLaunch(s->graph_exec, s->stream));
        s->where = NULL;
    } else {
        st = step_body(s, timed, false);
        if (st)
            return st;
    }
    CU_RET(s, cudaEventRecord(s->ev_end, s->stream));
    s->where = "waiting for the step";
    CU_RET(s, cudaEventSynchronize(s->ev_end));
    s->where = NULL;
    float ms = 0.0f;
    CU_RET(s, cudaEventElapsedTime(&ms, s->ev_start, s->ev_end));
    t->step_ms = ms;
    t->loss = s->loss ? (double)*s->h_loss : 0.0;
    if (!timed)
        return FM_OK;
    cudaEvent_t prev = s->ev_start;
    size_t k = 0;
    for (size_t i = 0; i < s->n_nodes; i++, k++) {
        CU_RET(s, cudaEventElapsedTime(&ms, prev, s->ev[k]));
        t->nodes[s->nodes[i].id].ms[FM_PHASE_FWD] = ms;
        prev = s->ev[k];
    }
    if (!s->train)
        return FM_OK;
    for (size_t i = 0; i < s->n_bwd; i++) {
        struct cu_node *n = s->bwd[i];
        float w = 0.0f, d = 0.0f;
        CU_RET(s, cudaEventElapsedTime(&w, prev, s->ev[k]));
        prev = s->ev[k++];
        CU_RET(s, cudaEventElapsedTime(&d, prev, s->ev[k]));
        prev = s->ev[k++];
        struct fm_node_timing *nt = &t->nodes[n->id];
        nt->bwd_split = n->bwd_split;
        if (n->bwd_split) {
            nt->ms[FM_PHASE_BWD_WEIGHT] = w;
            nt->ms[FM_PHASE_BWD_DATA] = d;
        } else {
            nt->ms[FM_PHASE_BWD_DATA] = w + d;
        }
    }
    CU_RET(s, cudaEventElapsedTime(&ms, prev, s->ev[k]));
    spread_optimizer(s, t->nodes, ms);
    return FM_OK;
}

static struct cu_tensor *tensor_of(struct cu_state *s, fm_tid id, uint64_t n, enum fm_status *st)
{
    if (id < 0 || (size_t)id >= s->n_tensors) {
        *st = fm_error(s->ctx, FM_ERR_INVALID, "no tensor with id %d", (int)id);
        return NULL;
    }
    struct cu_tensor *t = &s->tensors[id];
    if (t->numel != n) {
        *st = fm_error(s->ctx, FM_ERR_INVALID, "tensor '%s' has %llu elements, not %llu",
                       t->t->name, (unsigned long long)t->numel, (unsigned long long)n);
        return NULL;
    }
    *st = FM_OK;
    return t;
}

static enum fm_status cuda_read(void *state, fm_tid id, bool grad, float *dst, uint64_t n)
{
    struct cu_state *s = state;
    enum fm_status st;
    struct cu_tensor *t = tensor_of(s, id, n, &st);
    if (!t)
        return st;
    const void *src = grad ? t->grad : t->data;
    enum cu_dt dt = grad ? t->grad_dt : t->dt;
    if (!src)
        return fm_error(s->ctx, FM_ERR_INVALID, "tensor '%s' has no %s on the GPU", t->t->name,
                        grad ? "gradient (it needs none)" : "value");
    bool reused = grad ? (t->g_in_arena && !s->keep_all) : (t->in_arena && !t->keep);
    if (reused)
        return fm_error(s->ctx, FM_ERR_UNSUPPORTED,
                        "the CUDA backend reuses the memory of '%s'%s after its last use; set "
                        "FLOPMETER_CUDA_KEEP=1 to keep every tensor for reading",
                        t->t->name, grad ? "'s gradient" : "");
    float *stage = NULL, *host = NULL, *tmp = NULL;
    host = fm_alloc(s->ctx, sizeof(float) * (n ? n : 1) + (dt == CU_I64 ? sizeof(float) * n : 0));
    tmp = fm_alloc(s->ctx, sizeof(float) * (n ? n : 1));
    if (!host || !tmp) {
        st = fm_error(s->ctx, FM_ERR_NOMEM, "out of host memory reading '%s'", t->t->name);
        goto fail;
    }
    s->where = "reading a tensor back";
    CU_TRY(s, cudaStreamSynchronize(s->stream));
    if (dt == CU_I64) {
        int64_t *iv = (int64_t *)host;
        CU_TRY(s, cudaMemcpyAsync(iv, src, n * 8, cudaMemcpyDeviceToHost, s->stream));
        CU_TRY(s, cudaStreamSynchronize(s->stream));
        for (uint64_t i = 0; i < n; i++)
            tmp[i] = (float)iv[i];
    } else {
        /* gradients carry the loss scale: undo it */
        float scale = grad ? 1.0f / s->loss_scale : 1.0f;
        CU_TRY(s, cudaMalloc((void **)&stage, n * 4 + 4));
        CU_TRY(s, cuk_cast(src, dt, stage, CU_F32, n, scale, s->stream));
        CU_TRY(s, cudaMemcpyAsync(tmp, stage, n * 4, cudaMemcpyDeviceToHost, s->stream));
        CU_TRY(s, cudaStreamSynchronize(s->stream));
    }
    if (t->nhwc)
        nhwc_to_nchw(tmp, dst, t->dims4);
    else
        memcpy(dst, tmp, sizeof(float) * n);
    s->where = NULL;
fail:
    if (stage)
        cudaFree(stage);
    fm_dealloc(s->ctx, host);
    fm_dealloc(s->ctx, tmp);
    return st;
}

static enum fm_status cuda_write(void *state, fm_tid id, const float *src, uint64_t n)
{
    struct cu_state *s = state;
    enum fm_status st;
    struct cu_tensor *t = tensor_of(s, id, n, &st);
    if (!t)
        return st;
    if (!(t->is_param || t->is_buffer || t->is_input))
        return fm_error(s->ctx, FM_ERR_INVALID, "tensor '%s' is computed by the graph: only "
                        "parameters, buffers and inputs can be written", t->t->name);
    float *tmp = fm_alloc(s->ctx, sizeof(float) * (n ? n : 1) * 2);
    float *stage = NULL;
    if (!tmp)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of host memory writing '%s'", t->t->name);
    s->where = "writing a tensor";
    CU_TRY(s, cudaStreamSynchronize(s->stream));
    CU_TRY(s, cudaMalloc((void **)&stage, n * 4 + 4));
    st = upload(s, t, src, tmp, stage, t->data, t->dt);
    if (st)
        goto fail;
    if (t->half) {
        CU_TRY(s, cuk_cast(t->data, CU_F32, t->half, s->cdt, t->numel, 1.0f, s->stream));
        CU_TRY(s, cudaStreamSynchronize(s->stream));
    }
    s->where = NULL;
fail:
    if (stage)
        cudaFree(stage);
    fm_dealloc(s->ctx, tmp);
    return st;
}

static const char *cuda_device_name(void *state)
{
    return ((struct cu_state *)state)->name;
}

static double cuda_clock(void *state)
{
    return cu_nvml_clock(state);
}

static const struct fm_backend cuda_backend = {
    .name = "cuda",
    .supports = cu_supports,
    .prepare = cuda_prepare,
    .step = cuda_step,
    .read = cuda_read,
    .write = cuda_write,
    .device_name = cuda_device_name,
    .clock_mhz = cuda_clock,
    .release = cuda_release,
};

const struct fm_backend *fm_backend_cuda(void)
{
    return &cuda_backend;
}

enum fm_status cu_open_for_probe(struct cu_state *s, const char *device)
{
    enum fm_status st = open_device(s, device);
    if (st)
        return st;
    cu_nvml_open(s);
    return FM_OK;
}
