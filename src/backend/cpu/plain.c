/* The plain view of tensors that the hand-written kernels share (cpu.h, "plain tensors"):
 * integer tensors as int32 arrays, float tensors read and written in plain row-major fp32,
 * and numpy broadcasting by strides. */
#include "cpu.h"

#include <string.h>

bool fm_cpu_is_int(const struct fm_cpu *s, fm_tid tid)
{
    return !fm_dtype_is_float(fm_graph_tensor(s->g, tid)->dtype);
}

int32_t *fm_cpu_ints(const struct fm_cpu *s, fm_tid tid)
{
    return s->t[tid].labels;
}

enum fm_status fm_cpu_place_out(struct fm_cpu *s, fm_tid tid)
{
    struct fm_cpu_tensor *t = &s->t[tid];
    if (!fm_cpu_is_int(s, tid))
        return fm_cpu_ensure(s, tid);
    if (t->labels || t->placed)
        return fm_error(s->ctx, FM_ERR_GRAPH, "tensor '%s' is produced twice",
                        fm_graph_tensor(s->g, tid)->name);
    t->labels = fm_alloc(s->ctx, sizeof(int32_t) * (size_t)(t->numel ? t->numel : 1));
    if (!t->labels)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory for tensor '%s'",
                        fm_graph_tensor(s->g, tid)->name);
    return FM_OK;
}

enum fm_status fm_cpu_input_plain(struct fm_cpu *s, fm_nid node, enum fm_phase phase, fm_tid tid,
                                  bool grad, dnnl_memory_t *out)
{
    int64_t dims[FM_MAX_DIMS];
    dnnl_memory_desc_t md;
    fm_cpu_md_plain(&md, fm_cpu_dims(fm_graph_tensor(s->g, tid), dims), dims);
    return fm_cpu_input(s, node, phase, tid, grad, &md, out);
}

enum fm_status fm_cpu_sink_plain(struct fm_cpu *s, fm_nid node, enum fm_phase phase, fm_tid tid,
                                 struct fm_cpu_sink *sk, dnnl_memory_t *out)
{
    int64_t dims[FM_MAX_DIMS];
    dnnl_memory_desc_t md;
    fm_cpu_md_plain(&md, fm_cpu_dims(fm_graph_tensor(s->g, tid), dims), dims);
    return fm_cpu_sink_begin(s, node, phase, tid, &md, sk, out);
}

enum fm_phase fm_cpu_grad_phase(const struct fm_cpu *s, fm_tid tid)
{
    return fm_graph_tensor(s->g, tid)->role == FM_ROLE_PARAM ? FM_PHASE_BWD_WEIGHT
                                                             : FM_PHASE_BWD_DATA;
}

void fm_cpu_bcast_init(struct fm_cpu_bcast *b, const struct fm_shape *out,
                       const struct fm_shape *operand)
{
    memset(b, 0, sizeof(*b));
    b->rank = out->rank;
    b->numel = 1;
    int64_t stride = 1;
    for (int d = out->rank - 1; d >= 0; d--) {
        int k = d - (out->rank - operand->rank);
        int64_t od = k >= 0 ? operand->dims[k] : 1;
        b->dims[d] = out->dims[d];
        b->stride[d] = od == 1 ? 0 : stride;
        stride *= od;
        b->numel *= (uint64_t)out->dims[d];
    }
}

enum fm_status fm_cpu_mem_view(struct fm_cpu *s, dnnl_memory_t mem, const dnnl_memory_desc_t *md,
                               dnnl_memory_t *out)
{
    for (size_t i = 0; i < s->n_defer; i++) {
        if (s->defer[i].mem != mem)
            continue;
        struct fm_cpu_deferred d = s->defer[i];   /* copied: growing may move the array */
        enum fm_status st = fm_cpu_mem(s, md, NULL, out);
        if (!st)
            st = fm_grow(s->ctx, (void **)&s->defer, &s->cap_defer, s->n_defer + 1,
                         sizeof(*s->defer));
        if (st)
            return st;
        d.mem = *out;
        s->defer[s->n_defer++] = d;
        return FM_OK;
    }
    return fm_cpu_mem(s, md, fm_cpu_mem_data(mem), out);
}

/* Column sums of a row-major (rows, cols) matrix, scaled: a broadcast operand's gradient over
 * the leading dims of a channels-last or token-major tensor (ConvNeXt's, Swin's, every
 * transformer's bias after a MatMul). oneDNN 2.6 reduces leading dims in its reference code:
 * 36 ms where this takes 1. */
struct col_sum {
    int64_t rows, cols;
    float scale;
};

/* items: src, dst */
static enum fm_status col_sum_exec(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct col_sum *c = arg;
    const float *x = fm_cpu_item_f32(it, 0);
    float *y = fm_cpu_item_f32(it, 1);
    for (int64_t k = 0; k < c->cols; k++)
        y[k] = 0.0f;
    for (int64_t r = 0; r < c->rows; r++) {
        const float *row = x + r * c->cols;
        for (int64_t k = 0; k < c->cols; k++)
            y[k] += row[k];
    }
    if (c->scale != 1.0f) {
        for (int64_t k = 0; k < c->cols; k++)
            y[k] *= c->scale;
    }
    return FM_OK;
}

enum fm_status fm_cpu_sum_leading(struct fm_cpu *s, fm_nid node, enum fm_phase ph, fm_tid tid,
                                  dnnl_memory_t src, const int64_t *dims, float scale, bool *ok)
{
    const dnnl_memory_desc_t *smd = fm_cpu_mem_md(src);
    int rank = smd->ndims;
    *ok = false;
    if (!fm_cpu_md_is_plain(smd))
        return FM_OK;
    int first = rank;   /* the outermost kept dim */
    while (first > 0 && dims[first - 1] == smd->dims[first - 1] && dims[first - 1] > 1)
        first--;
    struct col_sum c = {1, 1, scale};
    for (int i = 0; i < rank; i++) {
        if (i < first && dims[i] != 1)
            return FM_OK;
        *(i < first ? &c.rows : &c.cols) *= smd->dims[i];
    }
    struct col_sum *arg = fm_cpu_buf(s, sizeof(*arg));
    if (!arg)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
    *arg = c;
    dnnl_memory_desc_t dmd;
    fm_cpu_md_plain(&dmd, rank, dims);
    struct fm_cpu_sink sk;
    dnnl_memory_t mems[2] = {src, NULL};
    enum fm_status st = fm_cpu_sink_begin(s, node, ph, tid, &dmd, &sk, &mems[1]);
    if (!st && mems[1])
        st = fm_cpu_add_fn(s, node, ph, col_sum_exec, arg, mems, 2);
    if (!st)
        st = fm_cpu_sink_end(s, &sk);
    *ok = st == FM_OK;
    return st;
}
