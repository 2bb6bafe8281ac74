/* The oneDNN CPU backend (struct fm_backend): checks that every op can run before anything is
 * allocated, plans the forward items in topological order and the backward items in reverse
 * order (each op family plans its own), then runs a step as one flat list of primitives and C
 * functions, timing each node and phase when asked. It does no arithmetic of its own: that is
 * in the op families (loss.c holds the loss and the SGD update). */
#include "cpu.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#endif

struct op_impl {
    enum fm_op op;
    fm_cpu_check_fn check;
    fm_cpu_plan_fn fwd, bwd;
};

static const struct op_impl impls[] = {
    {FM_OP_CONV, fm_cpu_conv_check, fm_cpu_conv_fwd, fm_cpu_conv_bwd},
    {FM_OP_LINEAR, fm_cpu_linear_check, fm_cpu_linear_fwd, fm_cpu_linear_bwd},
    {FM_OP_GEMM, fm_cpu_linear_check, fm_cpu_linear_fwd, fm_cpu_linear_bwd},
    {FM_OP_BATCHNORM, fm_cpu_bn_check, fm_cpu_bn_fwd, fm_cpu_bn_bwd},
    {FM_OP_RELU, fm_cpu_act_check, fm_cpu_act_fwd, fm_cpu_act_bwd},
    {FM_OP_CLIP, fm_cpu_act_check, fm_cpu_act_fwd, fm_cpu_act_bwd},
    {FM_OP_LEAKY_RELU, fm_cpu_act_check, fm_cpu_act_fwd, fm_cpu_act_bwd},
    {FM_OP_SIGMOID, fm_cpu_act_check, fm_cpu_act_fwd, fm_cpu_act_bwd},
    {FM_OP_TANH, fm_cpu_act_check, fm_cpu_act_fwd, fm_cpu_act_bwd},
    {FM_OP_SILU, fm_cpu_act_check, fm_cpu_act_fwd, fm_cpu_act_bwd},
    {FM_OP_GELU, fm_cpu_act_check, fm_cpu_act_fwd, fm_cpu_act_bwd},
    {FM_OP_HARDSWISH, fm_cpu_act_check, fm_cpu_act_fwd, fm_cpu_act_bwd},
    {FM_OP_HARDSIGMOID, fm_cpu_act_check, fm_cpu_act_fwd, fm_cpu_act_bwd},
    {FM_OP_MAXPOOL, fm_cpu_pool_check, fm_cpu_pool_fwd, fm_cpu_pool_bwd},
    {FM_OP_AVGPOOL, fm_cpu_pool_check, fm_cpu_pool_fwd, fm_cpu_pool_bwd},
    {FM_OP_ADAPTIVE_AVGPOOL, fm_cpu_pool_check, fm_cpu_pool_fwd, fm_cpu_pool_bwd},
    {FM_OP_GLOBAL_AVGPOOL, fm_cpu_pool_check, fm_cpu_pool_fwd, fm_cpu_pool_bwd},
    {FM_OP_GLOBAL_MAXPOOL, fm_cpu_pool_check, fm_cpu_pool_fwd, fm_cpu_pool_bwd},
    {FM_OP_ADD, fm_cpu_binary_check, fm_cpu_binary_fwd, fm_cpu_binary_bwd},
    {FM_OP_MUL, fm_cpu_binary_check, fm_cpu_binary_fwd, fm_cpu_binary_bwd},
    {FM_OP_CONCAT, fm_cpu_shape_check, fm_cpu_shape_fwd, fm_cpu_shape_bwd},
    {FM_OP_FLATTEN, fm_cpu_shape_check, fm_cpu_shape_fwd, fm_cpu_shape_bwd},
    {FM_OP_RESHAPE, fm_cpu_shape_check, fm_cpu_shape_fwd, fm_cpu_shape_bwd},
    {FM_OP_IDENTITY, fm_cpu_shape_check, fm_cpu_shape_fwd, fm_cpu_shape_bwd},
    {FM_OP_DROPOUT, fm_cpu_shape_check, fm_cpu_shape_fwd, fm_cpu_shape_bwd},
    {FM_OP_CROSS_ENTROPY, fm_cpu_loss_check, fm_cpu_loss_fwd, fm_cpu_loss_bwd},
    {FM_OP_MSE_LOSS, NULL, fm_cpu_mse_fwd, fm_cpu_mse_bwd},
    {FM_OP_MATMUL, fm_cpu_matmul_check, fm_cpu_matmul_fwd, fm_cpu_matmul_bwd},
    {FM_OP_EINSUM, fm_cpu_matmul_check, fm_cpu_matmul_fwd, fm_cpu_matmul_bwd},
    {FM_OP_ATTENTION, fm_cpu_matmul_check, fm_cpu_matmul_fwd, fm_cpu_matmul_bwd},
    {FM_OP_CONV_TRANSPOSE, fm_cpu_conv_check, fm_cpu_conv_fwd, fm_cpu_conv_bwd},
    {FM_OP_LAYERNORM, fm_cpu_norm_check, fm_cpu_norm_fwd, fm_cpu_norm_bwd},
    {FM_OP_GROUPNORM, fm_cpu_norm_check, fm_cpu_norm_fwd, fm_cpu_norm_bwd},
    {FM_OP_INSTANCENORM, fm_cpu_norm_check, fm_cpu_norm_fwd, fm_cpu_norm_bwd},
    {FM_OP_SOFTMAX, fm_cpu_norm_check, fm_cpu_norm_fwd, fm_cpu_norm_bwd},
    {FM_OP_LOG_SOFTMAX, fm_cpu_norm_check, fm_cpu_norm_fwd, fm_cpu_norm_bwd},
    {FM_OP_REDUCE_SUM, fm_cpu_reduce_check, fm_cpu_reduce_fwd, fm_cpu_reduce_bwd},
    {FM_OP_REDUCE_MEAN, fm_cpu_reduce_check, fm_cpu_reduce_fwd, fm_cpu_reduce_bwd},
    {FM_OP_REDUCE_MAX, fm_cpu_reduce_check, fm_cpu_reduce_fwd, fm_cpu_reduce_bwd},
    {FM_OP_REDUCE_MIN, fm_cpu_reduce_check, fm_cpu_reduce_fwd, fm_cpu_reduce_bwd},
    {FM_OP_REDUCE_PROD, fm_cpu_reduce_check, fm_cpu_reduce_fwd, fm_cpu_reduce_bwd},
    {FM_OP_REDUCE_L2, fm_cpu_reduce_check, fm_cpu_reduce_fwd, fm_cpu_reduce_bwd},
    {FM_OP_REDUCE_SUM_SQUARE, fm_cpu_reduce_check, fm_cpu_reduce_fwd, fm_cpu_reduce_bwd},
    {FM_OP_CUMSUM, fm_cpu_reduce_check, fm_cpu_reduce_fwd, fm_cpu_reduce_bwd},
    {FM_OP_SUB, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_DIV, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_POW, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_MAX, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_MIN, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_WHERE, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_PRELU, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_TRILU, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_ERF, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_SQRT, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_RECIPROCAL, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_NEG, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_EXP, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_LOG, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_ABS, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_SIN, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_COS, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_TAN, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_FLOOR, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_CEIL, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_ROUND, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_SIGN, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_ASIN, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_ACOS, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_ATAN, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_SINH, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_COSH, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_ASINH, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_ACOSH, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_ATANH, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_SOFTPLUS, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_SOFTSIGN, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_MISH, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_ELU, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    {FM_OP_SUM, fm_cpu_ewise_check, fm_cpu_ewise_fwd, fm_cpu_ewise_bwd},
    /* comparisons and logic: no gradient flows through them */
    {FM_OP_EQUAL, fm_cpu_ewise_check, fm_cpu_ewise_fwd, NULL},
    {FM_OP_LESS, fm_cpu_ewise_check, fm_cpu_ewise_fwd, NULL},
    {FM_OP_LESS_EQUAL, fm_cpu_ewise_check, fm_cpu_ewise_fwd, NULL},
    {FM_OP_GREATER, fm_cpu_ewise_check, fm_cpu_ewise_fwd, NULL},
    {FM_OP_GREATER_EQUAL, fm_cpu_ewise_check, fm_cpu_ewise_fwd, NULL},
    {FM_OP_AND, fm_cpu_ewise_check, fm_cpu_ewise_fwd, NULL},
    {FM_OP_OR, fm_cpu_ewise_check, fm_cpu_ewise_fwd, NULL},
    {FM_OP_XOR, fm_cpu_ewise_check, fm_cpu_ewise_fwd, NULL},
    {FM_OP_NOT, fm_cpu_ewise_check, fm_cpu_ewise_fwd, NULL},
    {FM_OP_ISNAN, fm_cpu_ewise_check, fm_cpu_ewise_fwd, NULL},
    {FM_OP_TRANSPOSE, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_SPLIT, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_SLICE, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_GATHER, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_GATHER_ELEMENTS, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_TOPK, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_GATHER_ND, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_SCATTER_ND, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_EMBEDDING, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_SQUEEZE, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_UNSQUEEZE, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_EXPAND, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_TILE, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_PAD, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_RESIZE, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    {FM_OP_CAST, fm_cpu_move_check, fm_cpu_move_fwd, fm_cpu_move_bwd},
    /* made from attributes alone: nothing to differentiate */
    {FM_OP_CONSTANT_OF_SHAPE, fm_cpu_move_check, fm_cpu_move_fwd, NULL},
    {FM_OP_RANGE, fm_cpu_move_check, fm_cpu_move_fwd, NULL},
    /* random draws, fresh every step: no gradient flows through them */
    {FM_OP_RANDOM_UNIFORM, fm_cpu_random_check, fm_cpu_random_fwd, NULL},
    {FM_OP_RANDOM_NORMAL, fm_cpu_random_check, fm_cpu_random_fwd, NULL},
    {FM_OP_RANDOM_UNIFORM_LIKE, fm_cpu_random_check, fm_cpu_random_fwd, NULL},
    {FM_OP_RANDOM_NORMAL_LIKE, fm_cpu_random_check, fm_cpu_random_fwd, NULL},
    {FM_OP_BERNOULLI, fm_cpu_random_check, fm_cpu_random_fwd, NULL},
    {FM_OP_MULTINOMIAL, fm_cpu_random_check, fm_cpu_random_fwd, NULL},
};

static const struct op_impl *impl_for(enum fm_op op)
{
    for (size_t i = 0; i < sizeof(impls) / sizeof(impls[0]); i++) {
        if (impls[i].op == op)
            return &impls[i];
    }
    return NULL;
}

/* ---- threads ----
 * Debian's oneDNN runs on OpenMP: its thread count is the OpenMP setting of the calling thread.
 * The functions are looked up at run time (libgomp is loaded with oneDNN), so the build needs
 * no OpenMP flags and this file no OpenMP header. A step sets the count and puts the caller's
 * back afterwards, so the backend leaves no trace on the process. */
typedef void (*omp_set_fn)(int);
typedef int (*omp_get_fn)(void);

struct omp {
    omp_set_fn set;
    omp_get_fn get;
};

static struct omp omp_lookup(void)
{
    struct omp o;
    *(void **)&o.set = dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    *(void **)&o.get = dlsym(RTLD_DEFAULT, "omp_get_max_threads");
    return o;
}

/* The threads a step with `want` (0 = OpenMP's default) will use. */
static int omp_threads(int want)
{
    struct omp o = omp_lookup();
    if (want > 0)
        return want;
    return o.get ? o.get() : 1;
}

/* Sets want threads (if > 0) and returns the previous setting (0 if unknown). */
static int omp_push(int want)
{
    struct omp o = omp_lookup();
    int prev = o.get ? o.get() : 0;
    if (want > 0 && o.set)
        o.set(want);
    return prev;
}

static void omp_pop(int prev)
{
    struct omp o = omp_lookup();
    if (prev > 0 && o.set)
        o.set(prev);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ---- checks before anything is allocated ---- */

static enum fm_status cpu_supports(struct fm_ctx *ctx, const struct fm_graph *g, fm_nid id)
{
    const struct fm_node *n = fm_graph_node(g, id);
    const struct op_impl *im = impl_for(n->op);
    if (!im)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "layer '%s': op %s is not supported by the CPU backend; nothing was "
                        "run",
                        n->name, n->op_name);
    /* LayerNorm, BatchNorm and Dropout run output 0 only: a secondary output (Mean and
     * InvStdDev, the statistics, the mask) that nothing reads is not written (an export's
     * unread Dropout mask); one that is read, or is a graph output, is refused */
    bool secondary = n->op == FM_OP_LAYERNORM || n->op == FM_OP_BATCHNORM ||
                     n->op == FM_OP_DROPOUT;
    for (int i = 1; secondary && i < n->n_out; i++) {
        if (fm_graph_tensor_used(g, n->out[i]))
            return fm_error(ctx, FM_ERR_UNSUPPORTED,
                            "layer '%s' (%s): output %d ('%s') is read, but the CPU backend "
                            "writes only output 0 of this op; nothing was run",
                            n->name, n->op_name, i, fm_graph_tensor(g, n->out[i])->name);
    }
    return im->check ? im->check(ctx, g, n) : FM_OK;
}

static enum fm_status check_graph(struct fm_ctx *ctx, const struct fm_graph *g,
                                  const struct fm_measure_opts *o)
{
    if (o->precision != FM_PREC_FP32)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "the CPU backend runs fp32 only; precision %s is not implemented (use "
                        "fm_measure_opts.precision fp32)",
                        fm_precision_name(o->precision));
    if (o->cuda_graph)
        return fm_error(ctx, FM_ERR_INVALID, "fm_measure_opts.cuda_graph (CUDA graphs) applies to "
                                             "CUDA devices only");
    if (o->channels_last)
        return fm_error(ctx, FM_ERR_INVALID,
                        "fm_measure_opts.channels_last applies to CUDA devices only: on the CPU "
                        "oneDNN chooses the layout of every tensor itself");
    for (size_t i = 0; i < fm_graph_tensor_count(g); i++) {
        const struct fm_tensor *t = fm_graph_tensor(g, (fm_tid)i);
        /* a constant of another float type that no node reads is one the loader folded into
         * the nodes that read it (the TorchScript exporter's fp64 attention scale, a Sqrt and
         * a Cast to fp32 away from its use): nothing runs in fp64 */
        if (fm_dtype_is_float(t->dtype) && t->dtype != FM_DTYPE_FP32 &&
            (t->producer != FM_NONE || fm_graph_tensor_used(g, (fm_tid)i)))
            return fm_error(ctx, FM_ERR_UNSUPPORTED,
                            "tensor '%s' is %s: the CPU backend runs fp32 graphs only (load the "
                            "model with fm_zoo_opts.dtype fp32)",
                            t->name, fm_dtype_name(t->dtype));
        if (!t->shape_known)
            return fm_error(ctx, FM_ERR_SHAPE, "tensor '%s' has no known shape (bind it with "
                            "fm_load_opts.bindings NAME=DIMS)", t->name);
    }
    bool has_loss = false;
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        enum fm_status st = cpu_supports(ctx, g, (fm_nid)i);
        if (st)
            return st;
        if (fm_op_class(fm_graph_node(g, (fm_nid)i)->op) == FM_CLASS_LOSS)
            has_loss = true;
    }
    if (o->mode == FM_MODE_TRAIN && !has_loss)
        return fm_error(ctx, FM_ERR_UNSUPPORTED,
                        "a training step needs a loss, and '%s' has no CrossEntropy node (load it "
                        "for training, or measure with FM_MODE_INFER)",
                        fm_graph_name(g));
    return FM_OK;
}

/* ---- moving values in and out (read, write, initial values) ---- */

/* Runs a reorder between a tensor's storage and a plain fp32 array right now. */
static enum fm_status transfer(struct fm_cpu *s, fm_tid tid, bool grad, float *plain, bool in)
{
    struct fm_cpu_tensor *t = &s->t[tid];
    enum fm_status st = FM_OK;
    dnnl_memory_t user = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t p = NULL;
    dnnl_memory_desc_t pmd;
    fm_cpu_md_plain_like(&pmd, &t->md);
    dnnl_memory_t mine = grad ? t->grad_mem : t->val_mem;
    FM_DNNL_TRY(s, dnnl_memory_create(&user, &pmd, s->engine, plain));
    const dnnl_memory_desc_t *from = in ? &pmd : &t->md, *to = in ? &t->md : &pmd;
    FM_DNNL_TRY(s, dnnl_reorder_primitive_desc_create(&pd, from, s->engine, to, s->engine, NULL));
    FM_DNNL_TRY(s, dnnl_primitive_create(&p, pd));
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, in ? user : mine}, {DNNL_ARG_TO, in ? mine : user}};
    FM_DNNL_TRY(s, dnnl_primitive_execute(p, s->stream, 2, args));
    FM_DNNL_TRY(s, dnnl_stream_wait(s->stream));
out:
    if (p)
        dnnl_primitive_destroy(p);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (user)
        dnnl_memory_destroy(user);
    return st;
}

static enum fm_status cpu_read(void *state, fm_tid tid, bool grad, float *dst, uint64_t n)
{
    struct fm_cpu *s = state;
    if (tid < 0 || (size_t)tid >= s->nt)
        return fm_error(s->ctx, FM_ERR_INVALID, "no tensor with id %d", (int)tid);
    struct fm_cpu_tensor *t = &s->t[tid];
    const char *name = fm_graph_tensor(s->g, tid)->name;
    if (n != t->numel)
        return fm_error(s->ctx, FM_ERR_INVALID, "tensor '%s' has %llu elements, not %llu", name,
                        (unsigned long long)t->numel, (unsigned long long)n);
    if (t->labels) {
        if (grad)
            return fm_error(s->ctx, FM_ERR_INVALID, "'%s' (integers) has no gradient", name);
        for (uint64_t i = 0; i < n; i++)
            dst[i] = (float)t->labels[i];
        return FM_OK;
    }
    if (!t->placed || (grad && !t->grad_mem))
        return fm_error(s->ctx, FM_ERR_INVALID, "tensor '%s' has no %s on the CPU backend", name,
                        grad ? "gradient (it needs none, or this is not a training run)"
                             : "storage");
    return transfer(s, tid, grad, dst, false);
}

static enum fm_status cpu_write(void *state, fm_tid tid, const float *src, uint64_t n)
{
    struct fm_cpu *s = state;
    if (tid < 0 || (size_t)tid >= s->nt)
        return fm_error(s->ctx, FM_ERR_INVALID, "no tensor with id %d", (int)tid);
    struct fm_cpu_tensor *t = &s->t[tid];
    const char *name = fm_graph_tensor(s->g, tid)->name;
    if (n != t->numel)
        return fm_error(s->ctx, FM_ERR_INVALID, "tensor '%s' has %llu elements, not %llu", name,
                        (unsigned long long)t->numel, (unsigned long long)n);
    if (t->labels) {
        for (uint64_t i = 0; i < n; i++)
            t->labels[i] = (int32_t)src[i];
        return FM_OK;
    }
    if (!t->placed)
        return fm_error(s->ctx, FM_ERR_INVALID, "tensor '%s' has no storage", name);
    /* oneDNN's reorder takes a non-const handle but only reads the source */
    return transfer(s, tid, false, (float *)(uintptr_t)src, true);
}

static enum fm_status init_values(struct fm_cpu *s)
{
    enum fm_status st = FM_OK;
    float *tmp = NULL;
    for (size_t i = 0; i < s->nt && !st; i++) {
        const struct fm_tensor *ft = fm_graph_tensor(s->g, (fm_tid)i);
        struct fm_cpu_tensor *t = &s->t[i];
        if (ft->producer != FM_NONE || t->alias || (!t->placed && !t->labels))
            continue;
        tmp = fm_alloc(s->ctx, sizeof(float) * (size_t)t->numel);
        if (!tmp)
            return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory for the values of '%s'",
                            ft->name);
        st = fm_init_values(s->ctx, s->g, (fm_tid)i, s->opts.seed, tmp, t->numel);
        if (!st)
            st = cpu_write(s, (fm_tid)i, tmp, t->numel);
        fm_dealloc(s->ctx, tmp);
        tmp = NULL;
    }
    return st;
}

/* ---- state ---- */

static void cpu_release(void *state)
{
    struct fm_cpu *s = state;
    if (!s)
        return;
    struct fm_ctx *ctx = s->ctx;
    for (size_t i = 0; i < s->n_prims; i++)
        dnnl_primitive_destroy(s->prims[i]);
    for (size_t i = 0; i < s->n_pds; i++)
        dnnl_primitive_desc_destroy(s->pds[i]);
    for (size_t i = 0; i < s->n_mems; i++)
        dnnl_memory_destroy(s->mems[i]);
    for (size_t i = 0; i < s->n_bufs; i++)
        fm_dealloc(ctx, s->bufs[i]);
    for (size_t i = 0; i < s->nt; i++)
        fm_dealloc(ctx, s->t ? s->t[i].labels : NULL);
    if (s->attr)
        dnnl_primitive_attr_destroy(s->attr);
    if (s->stream)
        dnnl_stream_destroy(s->stream);
    if (s->engine)
        dnnl_engine_destroy(s->engine);
    fm_dealloc(ctx, s->prims);
    fm_dealloc(ctx, s->pds);
    fm_dealloc(ctx, s->mems);
    fm_dealloc(ctx, s->bufs);
    fm_dealloc(ctx, s->defer);
    fm_dealloc(ctx, s->items);
    fm_dealloc(ctx, s->t);
    fm_dealloc(ctx, s->nodes);
    fm_dealloc(ctx, s);
}

/* Inputs and constants: plain fp32, or int32 class indices. */
static enum fm_status place_sources(struct fm_cpu *s)
{
    for (size_t i = 0; i < s->nt; i++) {
        const struct fm_tensor *ft = fm_graph_tensor(s->g, (fm_tid)i);
        struct fm_cpu_tensor *t = &s->t[i];
        if (ft->producer != FM_NONE || ft->role == FM_ROLE_PARAM || ft->role == FM_ROLE_BUFFER)
            continue;
        if (!fm_dtype_is_float(ft->dtype)) {
            t->labels = fm_alloc(s->ctx, sizeof(int32_t) * (size_t)(t->numel ? t->numel : 1));
            if (!t->labels)
                return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
            continue;
        }
        int64_t dims[FM_MAX_DIMS];
        dnnl_memory_desc_t md;
        fm_cpu_md_plain(&md, fm_cpu_dims(ft, dims), dims);
        enum fm_status st = fm_cpu_place(s, (fm_tid)i, &md);
        if (st)
            return st;
    }
    return FM_OK;
}

static bool node_has_grad(const struct fm_cpu *s, const struct fm_node *n)
{
    for (int k = 0; k < n->n_in; k++) {
        if (fm_cpu_wants_grad(s, n->in[k]))
            return true;
    }
    return false;
}

static enum fm_status plan(struct fm_cpu *s)
{
    const fm_nid *topo = fm_graph_topo_order(s->g);
    enum fm_status st;
    for (size_t i = 0; i < s->nn; i++) {
        fm_nid id = topo[i];
        const struct fm_node *n = fm_graph_node(s->g, id);
        s->pool_used[FM_CPU_POOL_SCRATCH] = 0;
        /* the data input of every op; a parameter there (a test's probe) is read plain */
        st = n->n_in == 0 || n->in[0] == FM_NONE || fm_cpu_is_int(s, n->in[0])
                 ? FM_OK
                 : fm_cpu_ensure(s, n->in[0]);
        if (!st)
            st = impl_for(n->op)->fwd(s, id);
        if (st)
            return st;
        /* an unread secondary output of LayerNorm, BatchNorm, Dropout (cpu_supports) is
         * not written: it gets storage below, with the tensors no node touches */
        bool secondary = n->op == FM_OP_LAYERNORM || n->op == FM_OP_BATCHNORM ||
                         n->op == FM_OP_DROPOUT;
        for (int o = 0; o < (secondary ? 1 : n->n_out); o++) {
            if (!s->t[n->out[o]].placed && !s->t[n->out[o]].labels)
                return fm_error(s->ctx, FM_ERR_GRAPH, "layer '%s': output '%s' was not placed",
                                n->name, fm_graph_tensor(s->g, n->out[o])->name);
        }
    }
    /* parameters and buffers no node reads still get storage (read/write see them) */
    for (size_t i = 0; i < s->nt; i++) {
        if (!s->t[i].placed && !s->t[i].labels) {
            st = fm_cpu_place_out(s, (fm_tid)i);
            if (st)
                return st;
        }
    }
    if (!s->train)
        return FM_OK;
    for (size_t i = s->nn; i-- > 0;) {
        fm_nid id = topo[i];
        const struct fm_node *n = fm_graph_node(s->g, id);
        const struct op_impl *im = impl_for(n->op);
        if (!im->bwd || !node_has_grad(s, n))
            continue;
        s->pool_used[FM_CPU_POOL_SCRATCH] = 0;
        st = im->bwd(s, id);
        if (st)
            return st;
    }
    /* the update, after the whole backward: each trainable parameter once */
    for (size_t i = 0; i < s->nt; i++) {
        const struct fm_tensor *ft = fm_graph_tensor(s->g, (fm_tid)i);
        if (ft->role != FM_ROLE_PARAM || !fm_cpu_wants_grad(s, (fm_tid)i))
            continue;
        fm_nid owner = FM_NONE;
        for (size_t k = 0; k < s->nn && owner == FM_NONE; k++) {
            const struct fm_node *n = fm_graph_node(s->g, topo[k]);
            for (int j = 0; j < n->n_in; j++) {
                if (n->in[j] == (fm_tid)i)
                    owner = topo[k];
            }
        }
        if (owner == FM_NONE)
            continue;
        st = fm_cpu_sgd_plan(s, (fm_tid)i, owner);
        if (st)
            return st;
    }
    return FM_OK;
}

static enum fm_status bind_pools(struct fm_cpu *s)
{
    for (int p = 0; p < FM_CPU_POOL_COUNT; p++) {
        if (!s->pool_max[p])
            continue;
        s->pool[p] = fm_cpu_buf(s, s->pool_max[p]);
        if (!s->pool[p])
            return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory for %zu bytes of scratch",
                            s->pool_max[p]);
    }
    enum fm_status st = FM_OK;
    for (size_t i = 0; i < s->n_defer; i++) {
        struct fm_cpu_deferred *d = &s->defer[i];
        FM_DNNL_TRY(s, dnnl_memory_set_data_handle(d->mem, (char *)s->pool[d->pool] + d->off));
    }
out:
    return st;
}

static void read_cpu_name(char *buf, size_t size)
{
    snprintf(buf, size, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon++;
                while (*colon == ' ' || *colon == '\t')
                    colon++;
                colon[strcspn(colon, "\n")] = '\0';
                snprintf(buf, size, "%s", colon);
            }
            break;
        }
    }
    fclose(f);
}

static enum fm_status cpu_prepare(struct fm_ctx *ctx, const struct fm_graph *g,
                                  const struct fm_measure_opts *opts, void **state)
{
    *state = NULL;
    enum fm_status st = check_graph(ctx, g, opts);
    if (st)
        return st;
    struct fm_cpu *s = fm_alloc(ctx, sizeof(*s));
    if (!s)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory");
    /* oneDNN divides the work among the threads it sees when a primitive is created: create
     * them with the count the steps will run with */
    int prev_threads = omp_push(opts->threads);
    s->ctx = ctx;
    s->g = g;
    s->opts = *opts;
    s->train = opts->mode == FM_MODE_TRAIN;
    s->loss = NAN;
    s->threads = omp_threads(opts->threads);
    read_cpu_name(s->name, sizeof(s->name));
    s->nt = fm_graph_tensor_count(g);
    s->nn = fm_graph_node_count(g);
    s->t = fm_alloc(ctx, sizeof(*s->t) * (s->nt + 1));
    s->nodes = fm_alloc(ctx, sizeof(*s->nodes) * (s->nn + 1));
    if (!s->t || !s->nodes) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory");
        goto out;
    }
    FM_DNNL_TRY(s, dnnl_engine_create(&s->engine, dnnl_cpu, 0));
    FM_DNNL_TRY(s, dnnl_stream_create(&s->stream, s->engine, dnnl_stream_default_flags));
    FM_DNNL_TRY(s, dnnl_primitive_attr_create(&s->attr));
    FM_DNNL_TRY(s, dnnl_primitive_attr_set_scratchpad_mode(s->attr, dnnl_scratchpad_mode_user));
    for (size_t i = 0; i < s->nt; i++) {
        const struct fm_tensor *ft = fm_graph_tensor(g, (fm_tid)i);
        uint64_t n = 1;
        if (fm_shape_numel(&ft->shape, &n)) {
            st = fm_error(ctx, FM_ERR_OVERFLOW, "tensor '%s' is too large", ft->name);
            goto out;
        }
        s->t[i].numel = n;
        s->t[i].needs_grad = s->train && fm_graph_needs_grad(g, (fm_tid)i);
    }
    st = place_sources(s);
    if (!st && opts->per_layer && opts->flush_bytes >= 64) {
        s->flush_n = (size_t)(opts->flush_bytes / sizeof(float));
        s->flush = fm_cpu_buf(s, s->flush_n * sizeof(float));
        if (!s->flush)
            st = fm_error(ctx, FM_ERR_NOMEM, "out of memory for %.0f bytes of cache flush",
                          opts->flush_bytes);
        s->flush_node = -1;
        for (size_t n = 0; !st && opts->flush_node && n < s->nn; n++) {
            if (strcmp(fm_graph_node(g, (fm_nid)n)->name, opts->flush_node) == 0)
                s->flush_node = (fm_nid)n;
        }
        if (!st && opts->flush_node && s->flush_node < 0)
            st = fm_error(ctx, FM_ERR_INVALID, "no layer '%s' to flush the caches before",
                          opts->flush_node);
    }
    if (!st)
        st = plan(s);
    if (!st)
        st = bind_pools(s);
    if (!st)
        st = init_values(s);
out:
    omp_pop(prev_threads);
    if (st && s->over_limit) {
        char has[FM_FORMAT_SIZE], got[FM_FORMAT_SIZE];
        st = fm_error(ctx, FM_ERR_NOMEM,
                      "the CPU backend's buffers for this step (activations and their gradients, "
                      "weights, gradients and momentum, the layouts oneDNN picks, scratch) grow "
                      "past the %s it may use (%s planned when the next buffer did not fit); "
                      "nothing was run: lower fm_zoo_opts.batch, or give "
                      "fm_measure_opts.memory_limit if more memory is free than the check sees",
                      fm_format_bytes(opts->memory_limit, has),
                      fm_format_bytes(s->planned_bytes, got));
    }
    if (st) {
        cpu_release(s);
        return st;
    }
    *state = s;
    return FM_OK;
}

/* Whether evict can flush caches here. */
static bool can_evict(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return true;
#else
    return false;
#endif
}

/* Flushes the memory an item reads and writes (not the shared scratchpad) from every cache
 * level, so that the item finds it in memory: fm_measure_opts.cold_cache. */
static void evict(const struct fm_cpu_item *it)
{
#if defined(__x86_64__) || defined(__i386__)
    for (int k = 0; k < it->nargs; k++) {
        const dnnl_memory_desc_t *md;
        void *p = NULL;
        if (!it->args[k].memory || (it->prim && it->args[k].arg == DNNL_ARG_SCRATCHPAD) ||
            dnnl_memory_get_memory_desc(it->args[k].memory, &md) != dnnl_success ||
            dnnl_memory_get_data_handle(it->args[k].memory, &p) != dnnl_success || !p)
            continue;
        size_t n = dnnl_memory_desc_get_size(md);
        for (size_t o = 0; o < n; o += 64)
            _mm_clflush((const char *)p + o);
    }
    _mm_mfence();
#else
    (void)it;
#endif
}

/* Other traffic: one write per 64-byte line of f (fm_measure_opts.flush_bytes). */
static void touch(float *f, size_t n)
{
    FM_CPU_PARALLEL
    for (size_t k = 0; k < n; k += 16)
        f[k] += 1.0f;
}

static enum fm_status cpu_step(void *state, struct fm_step_timing *t)
{
    struct fm_cpu *s = state;
    enum fm_status st = FM_OK;
    int prev_threads = omp_push(s->opts.threads);
    bool timing = t->nodes != NULL;
    s->loss = NAN;   /* each loss node adds its value: a model with several losses sums them */
    double t0 = now_ms();
    for (size_t i = 0; i < s->n_items; i++) {
        struct fm_cpu_item *it = &s->items[i];
        if (timing && s->opts.cold_cache && can_evict())
            evict(it);
        if (timing && s->flush && (s->flush_node < 0 || it->node == s->flush_node))
            touch(s->flush, s->flush_n);
        double a = timing ? now_ms() : 0.0;
        if (it->prim) {
            FM_DNNL_TRY(s, dnnl_primitive_execute(it->prim, s->stream, it->nargs, it->args));
            if (timing)
                FM_DNNL_TRY(s, dnnl_stream_wait(s->stream));
        } else {
            st = it->fn(s, it, it->arg);
            if (st)
                goto out;
        }
        if (timing && it->node >= 0)
            t->nodes[it->node].ms[it->phase] += now_ms() - a;
    }
    FM_DNNL_TRY(s, dnnl_stream_wait(s->stream));
    t->step_ms = now_ms() - t0;
    t->loss = s->loss;
    if (timing) {
        for (size_t n = 0; n < s->nn; n++)
            t->nodes[n].bwd_split = s->nodes[n].has_bwd_weight;
    }
    s->step_index++;
out:
    omp_pop(prev_threads);
    return st;
}

static const char *cpu_device_name(void *state)
{
    return ((struct fm_cpu *)state)->name;
}

static int cpu_threads(void *state)
{
    return ((struct fm_cpu *)state)->threads;
}

static bool cpu_cold_cache(void *state)
{
    return ((struct fm_cpu *)state)->opts.cold_cache && can_evict();
}

static const struct fm_backend cpu_backend = {
    .name = "cpu",
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .step = cpu_step,
    .read = cpu_read,
    .write = cpu_write,
    .device_name = cpu_device_name,
    .threads = cpu_threads,
    .clock_mhz = NULL,
    .cold_cache = cpu_cold_cache,
    .release = cpu_release,
};

const struct fm_backend *fm_backend_cpu(void)
{
    return &cpu_backend;
}
