/* Device memory plan for activations and their gradients: each buffer lives from the timeline
 * slot that first writes it to the last slot that reads it (forward slots, then backward slots
 * in reverse order), and buffers whose lives overlap get disjoint places in one arena (greedy,
 * largest first). Parameters, inputs and per-node state live outside the arena for the whole
 * run. It does not run ops in place. */
#include "cu.h"

#include <stdlib.h>

#define PLAN_ALIGN 256u

struct plan_item {
    uint64_t size;
    int first, last;
    uint64_t *off;
    uint64_t placed;
};

static int by_size_desc(const void *a, const void *b)
{
    const struct plan_item *x = a, *y = b;
    if (x->size != y->size)
        return x->size < y->size ? 1 : -1;
    return (x->first > y->first) - (x->first < y->first);
}

static int by_offset(const void *a, const void *b)
{
    const struct plan_item *x = *(const struct plan_item *const *)a;
    const struct plan_item *y = *(const struct plan_item *const *)b;
    return (x->placed > y->placed) - (x->placed < y->placed);
}

static uint64_t elem_size(enum cu_dt dt)
{
    return dt == CU_F32 ? 4 : dt == CU_I64 ? 8 : 2;
}

static void widen(int *first, int *last, int at)
{
    if (*first < 0 || at < *first)
        *first = at;
    if (at > *last)
        *last = at;
}

/* Live ranges from the schedule. */
static void live_ranges(struct cu_state *s)
{
    int end = s->timeline;
    for (size_t i = 0; i < s->n_tensors; i++) {
        struct cu_tensor *t = &s->tensors[i];
        t->v_first = t->g_first = -1;
        t->v_last = t->g_last = -1;
    }
    for (size_t i = 0; i < s->n_nodes; i++) {
        const struct cu_node *n = &s->nodes[i];
        for (int k = 0; k < n->n_out; k++)
            widen(&n->out[k]->v_first, &n->out[k]->v_last, n->t_fwd);
        for (int k = 0; k < n->n_in; k++)
            if (n->in[k])
                widen(&n->in[k]->v_first, &n->in[k]->v_last, n->t_fwd);
    }
    for (size_t i = 0; i < s->n_bwd; i++) {
        const struct cu_node *n = s->bwd[i];
        for (int k = 0; k < n->n_in; k++) {
            struct cu_tensor *t = n->in[k];
            if (!t)
                continue;
            if (n->keep_in[k])
                widen(&t->v_first, &t->v_last, n->t_bwd);
            if (n->dx[k])
                widen(&t->g_first, &t->g_last, n->t_bwd);
        }
        for (int k = 0; k < n->n_out; k++) {
            struct cu_tensor *t = n->out[k];
            if (n->keep_out[k])
                widen(&t->v_first, &t->v_last, n->t_bwd);
            if (t->needs_grad && t != s->loss)
                widen(&t->g_first, &t->g_last, n->t_bwd);
        }
    }
    for (size_t i = 0; i < s->n_zero_grads; i++)
        widen(&s->zero_grads[i]->g_first, &s->zero_grads[i]->g_last, (int)s->n_nodes);
    for (size_t i = 0; i < s->n_tensors; i++) {
        struct cu_tensor *t = &s->tensors[i];
        if (t->is_param || t->is_buffer || t->is_input)
            continue;
        if (t->keep)
            t->v_last = end;
        if (s->keep_all) {
            t->v_first = t->g_first >= 0 || t->v_first >= 0 ? 0 : -1;
            t->v_last = end;
            if (t->g_first >= 0) {
                t->g_first = 0;
                t->g_last = end;
            }
        }
    }
}

enum fm_status cu_plan_memory(struct cu_state *s)
{
    live_ranges(s);
    size_t n = 0;
    struct plan_item *items = fm_alloc(s->ctx, sizeof(*items) * (2 * s->n_tensors + 1));
    struct plan_item **live = fm_alloc(s->ctx, sizeof(*live) * (2 * s->n_tensors + 1));
    if (!items || !live) {
        fm_dealloc(s->ctx, items);
        fm_dealloc(s->ctx, live);
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory planning device memory");
    }
    for (size_t i = 0; i < s->n_tensors; i++) {
        struct cu_tensor *t = &s->tensors[i];
        if (t->is_param || t->is_buffer || t->is_input)
            continue;
        if (t->v_first >= 0 && t->numel) {
            items[n++] = (struct plan_item){t->numel * elem_size(t->dt), t->v_first, t->v_last,
                                            &t->v_off, 0};
            t->in_arena = true;
        }
        if (t->needs_grad && t->g_first >= 0 && t->numel && t != s->loss) {
            items[n++] = (struct plan_item){t->numel * elem_size(t->dt), t->g_first, t->g_last,
                                            &t->g_off, 0};
            t->g_in_arena = true;
        }
    }
    qsort(items, n, sizeof(*items), by_size_desc);
    uint64_t top = 0;
    for (size_t i = 0; i < n; i++) {
        struct plan_item *it = &items[i];
        size_t m = 0;
        for (size_t j = 0; j < i; j++) {
            if (items[j].first <= it->last && it->first <= items[j].last)
                live[m++] = &items[j];
        }
        qsort(live, m, sizeof(*live), by_offset);
        uint64_t off = 0;
        for (size_t j = 0; j < m; j++) {
            if (off + it->size <= live[j]->placed)
                break;
            uint64_t end = (live[j]->placed + live[j]->size + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
            if (end > off)
                off = end;
        }
        it->placed = off;
        *it->off = off;
        if (off + it->size > top)
            top = off + it->size;
    }
    s->arena_bytes = (top + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
    fm_dealloc(s->ctx, items);
    fm_dealloc(s->ctx, live);
    return FM_OK;
}
