/* Helpers shared by the op rules (element and byte counts, broadcasting, window sizes), and the
 * descriptor of FM_OP_UNKNOWN, which counts nothing and is reported as uncounted. */
#include "ops.h"

#include <string.h>

uint64_t fm_cost_numel(struct fm_cost_call *call, const struct fm_tensor *t)
{
    if (!t)
        return 0;
    uint64_t n;
    if (fm_shape_numel(&t->shape, &n) != FM_OK) {
        call->ovf = true;
        return UINT64_MAX;
    }
    return n;
}

uint64_t fm_cost_bytes(struct fm_cost_call *call, const struct fm_tensor *t)
{
    if (!t)
        return 0;
    return fm_cmul(&call->ovf, fm_cost_numel(call, t), fm_dtype_size(t->dtype));
}

void fm_cost_add(struct fm_cost_call *call, enum fm_phase phase, enum fm_prim prim, uint64_t n)
{
    uint64_t *p = &call->cost->phase[phase].prim[prim];
    *p = fm_cadd(&call->ovf, *p, n);
}

void fm_cost_add_each(struct fm_cost_call *call, enum fm_phase phase,
                      const uint8_t per_element[FM_PRIM_COUNT], uint64_t e)
{
    for (int p = 0; p < FM_PRIM_COUNT; p++) {
        if (per_element[p])
            fm_cost_add(call, phase, (enum fm_prim)p, fm_cmul(&call->ovf, per_element[p], e));
    }
}

enum fm_status fm_cost_elementwise(struct fm_cost_call *call,
                                   const struct fm_elementwise_rule *rules, size_t n)
{
    const struct fm_elementwise_rule *r = NULL;
    for (size_t i = 0; i < n && !r; i++)
        r = rules[i].op == call->node->op ? &rules[i] : NULL;
    if (!r)
        return fm_error(call->ctx, FM_ERR_UNSUPPORTED, "layer '%s': no rule for %s",
                        call->node->name, call->node->op_name);
    uint64_t e = fm_cost_numel(call, call->out[0]);
    fm_cost_add_each(call, FM_PHASE_FWD, r->fwd, e);
    fm_cost_fwd_bytes_default(call);
    if (!call->grad[0])
        return FM_OK;
    enum fm_phase ph = fm_cost_grad_phase(call, 0);
    if (r->zero_grad) {   /* the framework writes zeros: no operations, nothing read */
        fm_cost_write(call, ph, fm_cost_bytes(call, call->in[0]));
        return FM_OK;
    }
    fm_cost_add_each(call, ph, r->bwd, e);
    if (r->keep == FM_KEEP_IN)
        call->saved_in_mask |= 1u;
    else if (r->keep == FM_KEEP_OUT)
        call->saved_out_mask |= 1u;
    fm_cost_bwd_bytes_default(call);
    return FM_OK;
}

void fm_cost_read(struct fm_cost_call *call, enum fm_phase phase, uint64_t bytes)
{
    uint64_t *p = &call->cost->phase[phase].bytes_read;
    *p = fm_cadd(&call->ovf, *p, bytes);
}

void fm_cost_write(struct fm_cost_call *call, enum fm_phase phase, uint64_t bytes)
{
    uint64_t *p = &call->cost->phase[phase].bytes_written;
    *p = fm_cadd(&call->ovf, *p, bytes);
}

enum fm_phase fm_cost_grad_phase(const struct fm_cost_call *call, int i)
{
    const struct fm_tensor *t = call->in[i];
    return t && t->role == FM_ROLE_PARAM ? FM_PHASE_BWD_WEIGHT : FM_PHASE_BWD_DATA;
}

bool fm_output_written(const struct fm_node *n, int i)
{
    if (i < 0 || i >= n->n_out)
        return false;
    return !(n->attrs.nints > 0 && i < 63 && ((uint64_t)n->attrs.ints[0] >> i) & 1u);
}

void fm_cost_fwd_bytes_default(struct fm_cost_call *call)
{
    const struct fm_node *n = call->node;
    for (int i = 0; i < n->n_in; i++)
        fm_cost_read(call, FM_PHASE_FWD, fm_cost_bytes(call, call->in[i]));
    for (int i = 0; i < n->n_out; i++)
        fm_cost_write(call, FM_PHASE_FWD, fm_cost_bytes(call, call->out[i]));
}

void fm_cost_bwd_bytes_default(struct fm_cost_call *call)
{
    const struct fm_node *n = call->node;
    int first = -1;
    for (int i = 0; i < n->n_in; i++) {
        if (call->grad[i]) {
            first = i;
            break;
        }
    }
    if (first < 0)
        return;
    enum fm_phase ph = fm_cost_grad_phase(call, first);
    for (int o = 0; o < n->n_out; o++) {
        fm_cost_read(call, ph, fm_cost_bytes(call, call->out[o])); /* dY */
        if (call->saved_out_mask & (1ull << o))
            fm_cost_read(call, ph, fm_cost_bytes(call, call->out[o]));
    }
    for (int i = 0; i < n->n_in; i++) {
        if (call->saved_in_mask & (1ull << i))
            fm_cost_read(call, ph, fm_cost_bytes(call, call->in[i]));
        if (call->grad[i])
            fm_cost_write(call, fm_cost_grad_phase(call, i), fm_cost_bytes(call, call->in[i]));
    }
}

bool fm_shape_equal(const struct fm_shape *a, const struct fm_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++) {
        if (a->dims[i] != b->dims[i])
            return false;
    }
    return true;
}

enum fm_status fm_shape_broadcast(struct fm_ctx *ctx, const struct fm_node *node,
                                  const struct fm_shape *a, const struct fm_shape *b,
                                  struct fm_shape *out)
{
    struct fm_shape r = {0};
    r.rank = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r.rank; i++) {
        int ia = a->rank - r.rank + i, ib = b->rank - r.rank + i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1;
        int64_t db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[128], sb[128];
            return fm_error(ctx, FM_ERR_SHAPE,
                            "layer '%s' (%s): shapes %s and %s do not broadcast (dim %d: %lld vs "
                            "%lld)",
                            node->name, node->op_name, fm_shape_format(a, sa, sizeof(sa)),
                            fm_shape_format(b, sb, sizeof(sb)), i, (long long)da, (long long)db);
        }
        r.dims[i] = da == 1 ? db : da;
    }
    *out = r;
    return FM_OK;
}

enum fm_status fm_shape_axis(struct fm_ctx *ctx, const struct fm_node *node, int64_t axis,
                             int rank, int *out)
{
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        return fm_error(ctx, FM_ERR_SHAPE, "layer '%s' (%s): axis %lld is out of range for rank %d",
                        node->name, node->op_name, (long long)axis, rank);
    *out = (int)a;
    return FM_OK;
}

int64_t fm_window_out(int64_t in, int64_t k, int64_t stride, int64_t pad_lo, int64_t pad_hi,
                      int64_t dilation, bool ceil_mode)
{
    if (k <= 0 || stride <= 0 || dilation <= 0 || pad_lo < 0 || pad_hi < 0)
        return 0;
    /* attributes come from files: every step is checked, never wrapped. A window wider than
     * 2^63 fits no input (0); padding beyond 2^63 makes an output too large to count, which
     * the caller's shape check reports as an overflow naming the layer (INT64_MAX). */
    int64_t span, padded;
    if (__builtin_mul_overflow(dilation, k - 1, &span) || span == INT64_MAX)
        return 0;
    span += 1;
    if (__builtin_add_overflow(in, pad_lo, &padded) ||
        __builtin_add_overflow(padded, pad_hi, &padded))
        return INT64_MAX;
    int64_t avail = padded - span;
    if (avail < 0)
        return 0;
    int64_t out = avail / stride + 1;
    if (ceil_mode && avail % stride != 0) {
        out += 1;
        /* PyTorch: the last window must start inside the input or left padding */
        int64_t start;
        if (__builtin_mul_overflow(out - 1, stride, &start) || start >= in + pad_lo)
            out -= 1;
    }
    return out;
}

struct fm_window fm_window_of(const struct fm_attrs *a, int sr, int i)
{
    if (sr == 3 && i == 0)
        return (struct fm_window){a->kernel_d, a->stride_d, a->dilation_d, a->pad_d[0],
                                  a->pad_d[1], a->output_padding_d};
    int ax = sr == 1 ? 1 : sr == 3 ? i - 1 : i;
    return (struct fm_window){a->kernel[ax], a->stride[ax], a->dilation[ax], a->pad[ax],
                              a->pad[ax + 2], a->output_padding[ax]};
}

enum fm_status fm_shape_expect_rank(struct fm_shape_call *call, int i, int min_rank, int max_rank)
{
    const struct fm_tensor *t = call->in[i];
    if (!t)
        return fm_error(call->ctx, FM_ERR_GRAPH, "layer '%s' (%s): input %d is missing",
                        call->node->name, call->node->op_name, i);
    if (t->shape.rank < min_rank || t->shape.rank > max_rank) {
        char s[128];
        if (min_rank == max_rank)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (%s): input %d ('%s') has shape %s; rank %d expected",
                            call->node->name, call->node->op_name, i, t->name,
                            fm_shape_format(&t->shape, s, sizeof(s)), min_rank);
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (%s): input %d ('%s') has shape %s; rank %d to %d expected",
                        call->node->name, call->node->op_name, i, t->name,
                        fm_shape_format(&t->shape, s, sizeof(s)), min_rank, max_rank);
    }
    return FM_OK;
}

/* ---- cost rules shared by families (ops.h) ---- */

enum fm_status fm_cost_gather(struct fm_cost_call *call)
{
    uint64_t e = fm_cost_numel(call, call->out[0]);
    uint64_t by = fm_cost_bytes(call, call->out[0]), bi = fm_cost_bytes(call, call->in[1]);
    fm_cost_read(call, FM_PHASE_FWD, bi);   /* the indices and the gathered elements */
    fm_cost_read(call, FM_PHASE_FWD, by);
    fm_cost_write(call, FM_PHASE_FWD, by);
    if (call->grad[0]) {   /* scatter-add of dy into a zeroed dX */
        enum fm_phase ph = fm_cost_grad_phase(call, 0);
        fm_cost_add(call, ph, FM_PRIM_ADD, e);
        fm_cost_read(call, ph, by);
        fm_cost_read(call, ph, bi);
        fm_cost_write(call, ph, fm_cost_bytes(call, call->in[0]));
        call->saved_in_mask |= 2u;
    }
    return FM_OK;
}

enum fm_status fm_cost_part_copy(struct fm_cost_call *call)
{
    uint64_t by = fm_cost_bytes(call, call->out[0]);
    fm_cost_read(call, FM_PHASE_FWD, by);
    fm_cost_write(call, FM_PHASE_FWD, by);
    if (call->grad[0]) {
        enum fm_phase ph = fm_cost_grad_phase(call, 0);
        fm_cost_read(call, ph, by);
        fm_cost_write(call, ph, fm_cost_bytes(call, call->in[0]));
    }
    return FM_OK;
}

/* ---- FM_OP_UNKNOWN: an op the counter does not know ---- */

static enum fm_status unknown_shape(struct fm_shape_call *call)
{
    /* No rule: the importer may have set the output shapes (from the file's value_info); they
     * are kept. Otherwise any node that needs them fails with this message. */
    const struct fm_node *n = call->node;
    bool all = n->n_out > 0;
    for (int i = 0; i < n->n_out && all; i++)
        all = call->out[i]->shape_known;
    for (int i = 0; all && i < n->n_out; i++) {
        const struct fm_tensor *t = call->out[i];
        call->out_shape[i] = t->shape;
        call->out_dtype[i] = t->dtype;
    }
    if (all)
        return FM_OK;
    return fm_error(call->ctx, FM_ERR_UNSUPPORTED,
                    "layer '%s': op '%s' is not known to flopmeter and its output shape cannot "
                    "be inferred, but a later layer needs it",
                    call->node->name, call->node->op_name);
}

static enum fm_status unknown_cost(struct fm_cost_call *call)
{
    call->cost->counted = false;
    return FM_OK;
}

const struct fm_op_desc fm_op_unknown_desc = {0, FM_MAX_IO, 0, unknown_shape, unknown_cost};
