/* Memory, primitives and the layout plumbing of the CPU backend: owned buffers and oneDNN
 * objects, the item list, tensor placement, inputs adapted to a primitive's layout and input
 * gradients delivered (or accumulated) into a tensor's gradient. It plans; it never executes
 * (exec.c runs the items) and knows no op. */
#include "cpu.h"

#include <stdint.h>
#include <string.h>

enum fm_status fm_cpu_dnnl_error(struct fm_cpu *s, dnnl_status_t r, const char *call,
                                 const char *file, int line)
{
    const char *what = r == dnnl_out_of_memory ? "out of memory"
                       : r == dnnl_unimplemented ? "not implemented for these shapes"
                       : r == dnnl_invalid_arguments ? "invalid arguments"
                                                     : "failed";
    return fm_error(s->ctx, r == dnnl_out_of_memory ? FM_ERR_NOMEM : FM_ERR_BACKEND,
                    "oneDNN %s (status %d) in %s at %s:%d", what, (int)r, call, file, line);
}

#define GROW(s, arr, n, cap)                                                                 \
    fm_grow((s)->ctx, (void **)&(arr), &(cap), (n) + 1, sizeof(*(arr)))

/* ---- buffers and memory objects ---- */

void *fm_cpu_buf(struct fm_cpu *s, size_t size)
{
    if (GROW(s, s->bufs, s->n_bufs, s->cap_bufs))
        return NULL;
    if (size > SIZE_MAX - 64)
        return NULL;
    /* the limit is checked before the bytes are taken: fm_alloc zeroes them, which commits
     * them, and past what the machine has the kernel kills the process instead of failing */
    if (s->opts.memory_limit > 0 && s->planned_bytes + (double)size > s->opts.memory_limit) {
        s->over_limit = true;
        return NULL;
    }
    s->planned_bytes += (double)size;
    void *raw = fm_alloc(s->ctx, size + 64);
    if (!raw)
        return NULL;
    s->bufs[s->n_bufs++] = raw;
    return (void *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
}

enum fm_status fm_cpu_mem(struct fm_cpu *s, const dnnl_memory_desc_t *md, void *data,
                          dnnl_memory_t *out)
{
    enum fm_status st = GROW(s, s->mems, s->n_mems, s->cap_mems);
    if (st)
        return st;
    dnnl_memory_t m = NULL;
    FM_DNNL_TRY(s, dnnl_memory_create(&m, md, s->engine, data ? data : DNNL_MEMORY_NONE));
    s->mems[s->n_mems++] = m;
    *out = m;
out:
    return st;
}

enum fm_status fm_cpu_mem_new(struct fm_cpu *s, const dnnl_memory_desc_t *md, dnnl_memory_t *out)
{
    void *data = fm_cpu_buf(s, dnnl_memory_desc_get_size(md));
    if (!data)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory: %zu bytes for a CPU buffer",
                        dnnl_memory_desc_get_size(md));
    return fm_cpu_mem(s, md, data, out);
}

static enum fm_status defer(struct fm_cpu *s, dnnl_memory_t m, enum fm_cpu_pool pool, size_t off)
{
    enum fm_status st = GROW(s, s->defer, s->n_defer, s->cap_defer);
    if (st)
        return st;
    s->defer[s->n_defer++] = (struct fm_cpu_deferred){m, pool, off};
    return FM_OK;
}

enum fm_status fm_cpu_mem_scratch(struct fm_cpu *s, const dnnl_memory_desc_t *md,
                                  dnnl_memory_t *out)
{
    size_t size = (dnnl_memory_desc_get_size(md) + 63) & ~(size_t)63;
    size_t off = s->pool_used[FM_CPU_POOL_SCRATCH];
    enum fm_status st = fm_cpu_mem(s, md, NULL, out);
    if (!st)
        st = defer(s, *out, FM_CPU_POOL_SCRATCH, off);
    if (st)
        return st;
    s->pool_used[FM_CPU_POOL_SCRATCH] = off + size;
    if (off + size > s->pool_max[FM_CPU_POOL_SCRATCH])
        s->pool_max[FM_CPU_POOL_SCRATCH] = off + size;
    return FM_OK;
}

void *fm_cpu_mem_data(dnnl_memory_t mem)
{
    void *p = NULL;
    dnnl_memory_get_data_handle(mem, &p);
    return p;
}

const dnnl_memory_desc_t *fm_cpu_mem_md(dnnl_memory_t mem)
{
    const dnnl_memory_desc_t *md = NULL;
    dnnl_memory_get_memory_desc(mem, &md);
    return md;
}

/* Another memory object over mem's bytes with a different descriptor; a deferred (scratch)
 * memory gives a deferred view. */
static enum fm_status view_of(struct fm_cpu *s, dnnl_memory_t mem, const dnnl_memory_desc_t *md,
                              dnnl_memory_t *out)
{
    for (size_t i = 0; i < s->n_defer; i++) {
        if (s->defer[i].mem == mem) {
            struct fm_cpu_deferred d = s->defer[i];
            enum fm_status st = fm_cpu_mem(s, md, NULL, out);
            return st ? st : defer(s, *out, d.pool, d.off);
        }
    }
    return fm_cpu_mem(s, md, fm_cpu_mem_data(mem), out);
}

/* ---- descriptors ---- */

static dnnl_format_tag_t plain_tag(int rank)
{
    static const dnnl_format_tag_t tags[] = {dnnl_a, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd,
                                             dnnl_abcde, dnnl_abcdef};
    return rank >= 0 && rank <= 6 ? tags[rank] : dnnl_format_tag_undef;
}

void fm_cpu_md_plain(dnnl_memory_desc_t *md, int rank, const int64_t *dims)
{
    dnnl_dims_t d;
    for (int i = 0; i < rank; i++)
        d[i] = dims[i];
    dnnl_memory_desc_init_by_tag(md, rank, d, dnnl_f32, plain_tag(rank));
}

void fm_cpu_md_any(dnnl_memory_desc_t *md, int rank, const int64_t *dims)
{
    dnnl_dims_t d;
    for (int i = 0; i < rank; i++)
        d[i] = dims[i];
    dnnl_memory_desc_init_by_tag(md, rank, d, dnnl_f32, dnnl_format_tag_any);
}

void fm_cpu_md_plain_like(dnnl_memory_desc_t *out, const dnnl_memory_desc_t *md)
{
    fm_cpu_md_plain(out, md->ndims, md->dims);
}

bool fm_cpu_md_equal(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b)
{
    return dnnl_memory_desc_equal(a, b) != 0;
}

bool fm_cpu_md_is_plain(const dnnl_memory_desc_t *md)
{
    dnnl_memory_desc_t p;
    fm_cpu_md_plain_like(&p, md);
    return fm_cpu_md_equal(&p, md);
}

static bool same_dims(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b)
{
    if (a->ndims != b->ndims)
        return false;
    for (int i = 0; i < a->ndims; i++) {
        if (a->dims[i] != b->dims[i])
            return false;
    }
    return true;
}

int fm_cpu_dims(const struct fm_tensor *t, int64_t *dims)
{
    if (t->shape.rank == 0) {
        dims[0] = 1;
        return 1;
    }
    for (int i = 0; i < t->shape.rank; i++)
        dims[i] = t->shape.dims[i];
    return t->shape.rank;
}

const char *fm_cpu_node_name(const struct fm_cpu *s, fm_nid id)
{
    return fm_graph_node(s->g, id)->name;
}

/* ---- primitives and items ---- */

enum fm_status fm_cpu_pd(struct fm_cpu *s, fm_nid node, const void *op_desc,
                         const_dnnl_primitive_desc_t hint, dnnl_primitive_desc_t *out)
{
    enum fm_status st = GROW(s, s->pds, s->n_pds, s->cap_pds);
    if (st)
        return st;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t r = dnnl_primitive_desc_create(&pd, op_desc, s->attr, s->engine, hint);
    if (r != dnnl_success) {
        const struct fm_node *n = fm_graph_node(s->g, node);
        return fm_error(s->ctx, r == dnnl_out_of_memory ? FM_ERR_NOMEM : FM_ERR_UNSUPPORTED,
                        "layer '%s' (%s): oneDNN has no implementation for these shapes and "
                        "attributes (status %d)",
                        n->name, n->op_name, (int)r);
    }
    s->pds[s->n_pds++] = pd;
    *out = pd;
    return FM_OK;
}

bool fm_cpu_pd_is_slow(const_dnnl_primitive_desc_t pd)
{
    const char *impl = NULL;
    return dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success &&
           impl && (strncmp(impl, "ref:", 4) == 0 || strstr(impl, "_ref:") || strstr(impl, "gemm"));
}

enum fm_status fm_cpu_keep_pd(struct fm_cpu *s, dnnl_primitive_desc_t pd)
{
    enum fm_status st = GROW(s, s->pds, s->n_pds, s->cap_pds);
    if (st) {
        dnnl_primitive_desc_destroy(pd);
        return st;
    }
    s->pds[s->n_pds++] = pd;
    return FM_OK;
}

const dnnl_memory_desc_t *fm_cpu_pd_md(const_dnnl_primitive_desc_t pd, int arg)
{
    return dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, arg);
}

static enum fm_status push_item(struct fm_cpu *s, const struct fm_cpu_item *it)
{
    enum fm_status st = GROW(s, s->items, s->n_items, s->cap_items);
    if (st)
        return st;
    s->items[s->n_items++] = *it;
    if (it->phase == FM_PHASE_BWD_WEIGHT && it->node >= 0)
        s->nodes[it->node].has_bwd_weight = true;
    return FM_OK;
}

enum fm_status fm_cpu_add_prim(struct fm_cpu *s, fm_nid node, enum fm_phase phase,
                               const_dnnl_primitive_desc_t pd, const struct fm_cpu_arg *args,
                               int nargs)
{
    enum fm_status st = GROW(s, s->prims, s->n_prims, s->cap_prims);
    if (st)
        return st;
    if (nargs + 1 > FM_CPU_MAX_ARGS)
        return fm_error(s->ctx, FM_ERR_INVALID, "too many primitive arguments");
    struct fm_cpu_item it = {.node = node, .phase = phase};
    FM_DNNL_TRY(s, dnnl_primitive_create(&it.prim, pd));
    s->prims[s->n_prims++] = it.prim;
    for (int i = 0; i < nargs; i++) {
        if (!args[i].mem)
            return fm_error(s->ctx, FM_ERR_INVALID, "layer '%s': missing argument %d",
                            node >= 0 ? fm_cpu_node_name(s, node) : "?", args[i].arg);
        it.args[it.nargs++] = (dnnl_exec_arg_t){args[i].arg, args[i].mem};
    }
    const dnnl_memory_desc_t *pad = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t pad_size = pad ? dnnl_memory_desc_get_size(pad) : 0;
    if (pad_size) {
        dnnl_memory_t m;
        st = fm_cpu_mem(s, pad, NULL, &m);
        if (!st)
            st = defer(s, m, FM_CPU_POOL_PAD, 0);
        if (st)
            return st;
        if (pad_size > s->pool_max[FM_CPU_POOL_PAD])
            s->pool_max[FM_CPU_POOL_PAD] = pad_size;
        it.args[it.nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, m};
    }
    st = push_item(s, &it);
out:
    return st;
}

enum fm_status fm_cpu_add_reorder(struct fm_cpu *s, fm_nid node, enum fm_phase phase,
                                  dnnl_memory_t src, dnnl_memory_t dst, bool accumulate)
{
    enum fm_status st = GROW(s, s->pds, s->n_pds, s->cap_pds);
    if (st)
        return st;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    FM_DNNL_TRY(s, dnnl_primitive_attr_create(&attr));
    FM_DNNL_TRY(s, dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));
    if (accumulate) {
        FM_DNNL_TRY(s, dnnl_post_ops_create(&po));
        FM_DNNL_TRY(s, dnnl_post_ops_append_sum(po, 1.0f));
        FM_DNNL_TRY(s, dnnl_primitive_attr_set_post_ops(attr, po));
    }
    FM_DNNL_TRY(s, dnnl_reorder_primitive_desc_create(&pd, fm_cpu_mem_md(src), s->engine,
                                                      fm_cpu_mem_md(dst), s->engine, attr));
    s->pds[s->n_pds++] = pd;
    struct fm_cpu_arg args[2] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
    st = fm_cpu_add_prim(s, node, phase, pd, args, 2);
out:
    if (po)
        dnnl_post_ops_destroy(po);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return st;
}

enum fm_status fm_cpu_add_fn(struct fm_cpu *s, fm_nid node, enum fm_phase phase, fm_cpu_fn fn,
                             void *arg, const dnnl_memory_t *mems, int nmems)
{
    struct fm_cpu_item it = {.node = node, .phase = phase, .fn = fn, .arg = arg};
    if (nmems > FM_CPU_MAX_ARGS)
        return fm_error(s->ctx, FM_ERR_INVALID, "too many function arguments");
    for (int k = 0; k < nmems; k++)
        it.args[it.nargs++] = (dnnl_exec_arg_t){k, mems[k]};
    return push_item(s, &it);
}

float *fm_cpu_item_f32(const struct fm_cpu_item *it, int k)
{
    return fm_cpu_mem_data(it->args[k].memory);
}

/* ---- tensors ---- */

bool fm_cpu_wants_grad(const struct fm_cpu *s, fm_tid tid)
{
    return tid >= 0 && s->train && s->t[tid].needs_grad;
}

static enum fm_status alloc_grad(struct fm_cpu *s, fm_tid tid)
{
    struct fm_cpu_tensor *t = &s->t[tid];
    if (!t->needs_grad || !s->train)
        return FM_OK;
    t->grad = fm_cpu_buf(s, t->size);
    if (!t->grad)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory for the gradient of '%s' (%zu "
                        "bytes)", fm_graph_tensor(s->g, tid)->name, t->size);
    return fm_cpu_mem(s, &t->md, t->grad, &t->grad_mem);
}

enum fm_status fm_cpu_place(struct fm_cpu *s, fm_tid tid, const dnnl_memory_desc_t *md)
{
    struct fm_cpu_tensor *t = &s->t[tid];
    if (t->placed)
        return fm_error(s->ctx, FM_ERR_GRAPH, "tensor '%s' is produced twice",
                        fm_graph_tensor(s->g, tid)->name);
    t->md = *md;
    t->size = dnnl_memory_desc_get_size(md);
    t->val = fm_cpu_buf(s, t->size);
    if (!t->val)
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory for tensor '%s' (%zu bytes)",
                        fm_graph_tensor(s->g, tid)->name, t->size);
    enum fm_status st = fm_cpu_mem(s, &t->md, t->val, &t->val_mem);
    if (!st)
        st = alloc_grad(s, tid);
    if (!st)
        t->placed = true;
    return st;
}

enum fm_status fm_cpu_ensure(struct fm_cpu *s, fm_tid tid)
{
    if (s->t[tid].placed)
        return FM_OK;
    int64_t dims[FM_MAX_DIMS];
    dnnl_memory_desc_t md;
    fm_cpu_md_plain(&md, fm_cpu_dims(fm_graph_tensor(s->g, tid), dims), dims);
    return fm_cpu_place(s, tid, &md);
}

enum fm_status fm_cpu_place_view(struct fm_cpu *s, fm_tid tid, fm_tid src)
{
    struct fm_cpu_tensor *t = &s->t[tid], *f = &s->t[src];
    int64_t dims[FM_MAX_DIMS];
    int rank = fm_cpu_dims(fm_graph_tensor(s->g, tid), dims);
    fm_cpu_md_plain(&t->md, rank, dims);
    if (f->placed && same_dims(&t->md, &f->md))
        t->md = f->md;
    else if (!f->placed || !fm_cpu_md_is_plain(&f->md))
        return fm_error(s->ctx, FM_ERR_INVALID, "view of '%s': the source is not plain",
                        fm_graph_tensor(s->g, src)->name);
    t->size = dnnl_memory_desc_get_size(&t->md);
    if (t->size != f->size)
        return fm_error(s->ctx, FM_ERR_SHAPE, "view '%s' of '%s': sizes differ",
                        fm_graph_tensor(s->g, tid)->name, fm_graph_tensor(s->g, src)->name);
    t->val = f->val;
    t->alias = true;
    enum fm_status st = fm_cpu_mem(s, &t->md, t->val, &t->val_mem);
    if (!st)
        st = alloc_grad(s, tid);
    if (!st)
        t->placed = true;
    return st;
}

static enum fm_status new_buffer(struct fm_cpu *s, bool persistent, const dnnl_memory_desc_t *md,
                                 dnnl_memory_t *out)
{
    return persistent ? fm_cpu_mem_new(s, md, out) : fm_cpu_mem_scratch(s, md, out);
}

enum fm_status fm_cpu_input(struct fm_cpu *s, fm_nid node, enum fm_phase phase, fm_tid tid,
                            bool grad, const dnnl_memory_desc_t *want, dnnl_memory_t *out)
{
    struct fm_cpu_tensor *t = &s->t[tid];
    struct fm_cpu_node *nd = &s->nodes[node];
    enum fm_status st;
    *out = NULL;
    if (!t->placed) {
        /* a parameter or buffer takes the layout of its first user */
        st = fm_cpu_place(s, tid, want);
        if (st)
            return st;
    }
    dnnl_memory_t src = grad ? t->grad_mem : t->val_mem;
    if (!src)
        return fm_error(s->ctx, FM_ERR_INVALID, "layer '%s': tensor '%s' has no %s",
                        fm_cpu_node_name(s, node), fm_graph_tensor(s->g, tid)->name,
                        grad ? "gradient" : "value");
    if (fm_cpu_md_equal(&t->md, want)) {
        *out = src;
        return FM_OK;
    }
    for (int i = 0; i < nd->n_cache; i++) {
        if (nd->cache[i].tensor == tid && nd->cache[i].grad == grad &&
            fm_cpu_md_equal(&nd->cache[i].md, want)) {
            *out = nd->cache[i].mem;
            return FM_OK;
        }
    }
    /* forward copies are kept: the node's backward reads them again */
    bool persistent = phase == FM_PHASE_FWD;
    dnnl_memory_t dst = NULL;
    if (same_dims(&t->md, want)) {
        st = new_buffer(s, persistent, want, &dst);
        if (!st)
            st = fm_cpu_add_reorder(s, node, phase, src, dst, false);
    } else {
        /* a reshape: go through the plain row-major order of both shapes */
        dnnl_memory_t plain_src = src, viewed = NULL;
        dnnl_memory_desc_t pmd, vmd;
        st = FM_OK;
        if (!fm_cpu_md_is_plain(&t->md)) {
            fm_cpu_md_plain_like(&pmd, &t->md);
            st = new_buffer(s, persistent, &pmd, &plain_src);
            if (!st)
                st = fm_cpu_add_reorder(s, node, phase, src, plain_src, false);
        }
        fm_cpu_md_plain_like(&vmd, want);
        if (!st && dnnl_memory_desc_get_size(&vmd) != t->size)
            st = fm_error(s->ctx, FM_ERR_SHAPE, "layer '%s': '%s' cannot be viewed with %d dims "
                          "of other element count",
                          fm_cpu_node_name(s, node), fm_graph_tensor(s->g, tid)->name,
                          want->ndims);
        if (!st)
            st = view_of(s, plain_src, &vmd, &viewed);
        if (!st && fm_cpu_md_is_plain(want)) {
            dst = viewed;
        } else if (!st) {
            st = new_buffer(s, persistent, want, &dst);
            if (!st)
                st = fm_cpu_add_reorder(s, node, phase, viewed, dst, false);
        }
    }
    if (st)
        return st;
    if (nd->n_cache < FM_CPU_CACHE)
        nd->cache[nd->n_cache++] = (struct fm_cpu_cached){tid, grad, *want, dst};
    *out = dst;
    return FM_OK;
}

/* ---- gradients ---- */

enum fm_status fm_cpu_sink_begin(struct fm_cpu *s, fm_nid node, enum fm_phase phase, fm_tid tid,
                                 const dnnl_memory_desc_t *md, struct fm_cpu_sink *sk,
                                 dnnl_memory_t *out)
{
    *sk = (struct fm_cpu_sink){node, phase, FM_NONE, NULL};
    *out = NULL;
    if (!fm_cpu_wants_grad(s, tid))
        return FM_OK;
    struct fm_cpu_tensor *t = &s->t[tid];
    sk->tensor = tid;
    if (!t->grad_planned && fm_cpu_md_equal(md, &t->md)) {
        t->grad_planned = true;
        *out = t->grad_mem;
        return FM_OK;
    }
    enum fm_status st = fm_cpu_mem_scratch(s, md, &sk->tmp);
    *out = sk->tmp;
    return st;
}

enum fm_status fm_cpu_sink_end(struct fm_cpu *s, struct fm_cpu_sink *sk)
{
    if (sk->tensor == FM_NONE || !sk->tmp)
        return FM_OK;
    return fm_cpu_sink_from(s, sk->node, sk->phase, sk->tensor, sk->tmp);
}

/* items: src, dst of one fp32 layout; arg: the element count of the buffers, padding
 * included (zero in both, so zero after) and whether to add */
/* Buffers of at most FLAT_SUM_MAX floats (512 KB) are summed by flat_sum_exec rather than
 * oneDNN's sum primitive, whose fixed cost is more than the loop's work there (ShuffleNetV2's
 * branch gradients at batch 16, 2 threads, ONEDNN_VERBOSE: 6 us for 3K floats, 8 us for 24K,
 * 21 us for 49K); up to FLAT_SUM_SERIAL on one thread. */
#define FLAT_SUM_MAX (1 << 17)
#define FLAT_SUM_SERIAL (1 << 14)
struct flat_sum {
    int64_t n;
    bool add;
};

static enum fm_status flat_sum_exec(struct fm_cpu *s, const struct fm_cpu_item *it, void *arg)
{
    (void)s;
    const struct flat_sum *f = arg;
    const float *x = fm_cpu_item_f32(it, 0);
    float *y = fm_cpu_item_f32(it, 1);
    const int64_t n = f->n, chunk = 4096;
    if (f->add) {
        FM_CPU_PARALLEL_IF(n > FLAT_SUM_SERIAL)
        for (int64_t c = 0; c < n; c += chunk) {
            const int64_t e = c + chunk < n ? c + chunk : n;
            for (int64_t i = c; i < e; i++)
                y[i] += x[i];
        }
    } else {
        FM_CPU_PARALLEL_IF(n > FLAT_SUM_SERIAL)
        for (int64_t c = 0; c < n; c += chunk) {
            const int64_t e = c + chunk < n ? c + chunk : n;
            for (int64_t i = c; i < e; i++)
                y[i] = x[i];
        }
    }
    return FM_OK;
}

/* dst = src (add false) or dst += src (add true) in one layout: oneDNN's sum primitive, which
 * is parallel and vectorized (a reorder between identical layouts, with or without a sum
 * post-op, runs oneDNN's scalar reference code), except for buffers of at most FLAT_SUM_MAX
 * floats and where oneDNN 2.6 picks its reference sum: a blocked layout whose channels are
 * padded to the block (24 or 40 channels in 16-channel blocks, every gradient accumulation of
 * MobileNetV3's and EfficientNet's narrow stages). The two buffers have one layout and one
 * size, so a flat loop over them (padding included) does it. In place: dst is also the first
 * source. */
static enum fm_status sum_into(struct fm_cpu *s, fm_nid node, enum fm_phase phase,
                               dnnl_memory_t src, dnnl_memory_t dst, bool add)
{
    enum fm_status st = GROW(s, s->pds, s->n_pds, s->cap_pds);
    if (st)
        return st;
    dnnl_memory_desc_t mds[2] = {*fm_cpu_mem_md(dst), *fm_cpu_mem_md(src)};
    const float scales[2] = {1.0f, 1.0f};
    dnnl_primitive_desc_t pd = NULL;
    int n = add ? 2 : 1;
    FM_DNNL_TRY(s, dnnl_sum_primitive_desc_create(&pd, &mds[0], n, scales, add ? mds : &mds[1],
                                                  s->attr, s->engine));
    s->pds[s->n_pds++] = pd;
    const int64_t count = (int64_t)(dnnl_memory_desc_get_size(&mds[0]) / sizeof(float));
    if ((fm_cpu_pd_is_slow(pd) || count <= FLAT_SUM_MAX) && mds[0].data_type == dnnl_f32) {
        struct flat_sum *f = fm_cpu_buf(s, sizeof(*f));
        if (!f)
            return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory");
        f->n = count;
        f->add = add;
        dnnl_memory_t mems[2] = {src, dst};
        return fm_cpu_add_fn(s, node, phase, flat_sum_exec, f, mems, 2);
    }
    {
        struct fm_cpu_arg args[3] = {{DNNL_ARG_MULTIPLE_SRC, add ? dst : src},
                                     {DNNL_ARG_MULTIPLE_SRC + 1, src},
                                     {DNNL_ARG_DST, dst}};
        if (!add)
            args[1] = args[2];
        st = fm_cpu_add_prim(s, node, phase, pd, args, n + 1);
    }
out:
    return st;
}

/* dst = src or dst += src, src in any layout of dst's dims. */
static enum fm_status deliver(struct fm_cpu *s, fm_nid node, enum fm_phase phase,
                              dnnl_memory_t src, dnnl_memory_t dst, bool add)
{
    const dnnl_memory_desc_t *smd = fm_cpu_mem_md(src), *dmd = fm_cpu_mem_md(dst);
    if (fm_cpu_md_equal(smd, dmd))
        return sum_into(s, node, phase, src, dst, add);
    if (!add)
        return fm_cpu_add_reorder(s, node, phase, src, dst, false);
    /* another layout: reorder into dst's layout, then add there */
    dnnl_memory_t tmp;
    enum fm_status st = fm_cpu_mem_scratch(s, dmd, &tmp);
    if (!st)
        st = fm_cpu_add_reorder(s, node, phase, src, tmp, false);
    if (!st)
        st = sum_into(s, node, phase, tmp, dst, true);
    return st;
}

enum fm_status fm_cpu_sink_from(struct fm_cpu *s, fm_nid node, enum fm_phase phase, fm_tid tid,
                                dnnl_memory_t src)
{
    if (!fm_cpu_wants_grad(s, tid))
        return FM_OK;
    struct fm_cpu_tensor *t = &s->t[tid];
    bool first = !t->grad_planned;
    t->grad_planned = true;
    const dnnl_memory_desc_t *smd = fm_cpu_mem_md(src);
    if (same_dims(smd, &t->md))
        return deliver(s, node, phase, src, t->grad_mem, !first);
    enum fm_status st = FM_OK;
    dnnl_memory_t plain_src = src, viewed = NULL;
    dnnl_memory_desc_t pmd, vmd;
    if (!fm_cpu_md_is_plain(smd)) {
        fm_cpu_md_plain_like(&pmd, smd);
        st = fm_cpu_mem_scratch(s, &pmd, &plain_src);
        if (!st)
            st = fm_cpu_add_reorder(s, node, phase, src, plain_src, false);
    }
    fm_cpu_md_plain_like(&vmd, &t->md);
    if (!st)
        st = view_of(s, plain_src, &vmd, &viewed);
    if (!st)
        st = deliver(s, node, phase, viewed, t->grad_mem, !first);
    return st;
}

enum fm_status fm_cpu_bwd_weights(struct fm_cpu *s, fm_nid id, const void *op_desc,
                                  const_dnnl_primitive_desc_t hint, fm_tid bias, bool want_bias)
{
    const struct fm_node *n = fm_graph_node(s->g, id);
    dnnl_primitive_desc_t pd;
    dnnl_memory_t m_src, m_dd, m_dw, m_db = NULL;
    struct fm_cpu_sink skw, skb = {id, FM_PHASE_BWD_WEIGHT, FM_NONE, NULL};
    enum fm_status st = fm_cpu_pd(s, id, op_desc, hint, &pd);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_WEIGHT, n->in[0], false,
                          fm_cpu_pd_md(pd, DNNL_ARG_SRC), &m_src);
    if (!st)
        st = fm_cpu_input(s, id, FM_PHASE_BWD_WEIGHT, n->out[0], true,
                          fm_cpu_pd_md(pd, DNNL_ARG_DIFF_DST), &m_dd);
    if (!st)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_WEIGHT, n->in[1],
                               fm_cpu_pd_md(pd, DNNL_ARG_DIFF_WEIGHTS), &skw, &m_dw);
    /* a frozen weight with a trainable bias still gets a weight gradient: into scratch */
    if (!st && !m_dw)
        st = fm_cpu_mem_scratch(s, fm_cpu_pd_md(pd, DNNL_ARG_DIFF_WEIGHTS), &m_dw);
    if (!st && want_bias)
        st = fm_cpu_sink_begin(s, id, FM_PHASE_BWD_WEIGHT, bias,
                               fm_cpu_pd_md(pd, DNNL_ARG_DIFF_BIAS), &skb, &m_db);
    if (st)
        return st;
    struct fm_cpu_arg args[4] = {{DNNL_ARG_SRC, m_src}, {DNNL_ARG_DIFF_DST, m_dd},
                                 {DNNL_ARG_DIFF_WEIGHTS, m_dw}, {DNNL_ARG_DIFF_BIAS, m_db}};
    st = fm_cpu_add_prim(s, id, FM_PHASE_BWD_WEIGHT, pd, args, want_bias ? 4 : 3);
    if (!st)
        st = fm_cpu_sink_end(s, &skw);
    if (!st)
        st = fm_cpu_sink_end(s, &skb);
    return st;
}
