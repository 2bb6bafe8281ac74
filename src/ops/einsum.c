/* Einsum with one or two operands, in the forms attention and projections use ("bhqd,bhkd->
 * bhqk", "bhqk,bhkd->bhqd", "bij,jk->bik") and the one-operand transposes and sums. The importer
 * parses the equation and expands any "..." (it knows the ranks), so attrs.ints holds label
 * ids: {n_operands, rank_0, labels_0..., [rank_1, labels_1...], out_rank, out_labels...}.
 *
 * Counting follows the naive loop nest over every distinct label: P = product of all label
 * sizes. Two operands: if some label is summed away (in an input, not in the output) each of the
 * P iterations is a multiply-accumulate: P mac (for "bhqd,bhkd->bhqk" that is B*H*Q*K*D, the
 * MatMul count); otherwise each is a plain product (Hadamard or outer product): P mul. The
 * gradient of an operand is the einsum of dY with the other operand over the same P iterations:
 * P mac if a label of dY or the other operand is missing from that operand (a contraction),
 * P mul if not. One operand: a transpose or diagonal moves data; a sum does P - O add.
 * A broadcast (size-1) label is counted at its broadcast size, as MatMul does. */
#include "ops.h"

#define EINSUM_LABELS 64

struct eq {
    int nops;
    int rank[2];
    int lab[2][FM_MAX_DIMS];
    int out_rank;
    int out[FM_MAX_DIMS];
};

static enum fm_status eq_parse(struct fm_ctx *ctx, const struct fm_node *n, struct eq *e)
{
    const int64_t *v = n->attrs.ints;
    int k = 0, m = n->attrs.nints;
    if (m < 1 || v[0] < 1 || v[0] > 2 || v[0] != n->n_in)
        goto bad;
    e->nops = (int)v[k++];
    for (int o = 0; o <= e->nops; o++) {
        if (k >= m || v[k] < 0 || v[k] > FM_MAX_DIMS || k + 1 + v[k] > m)
            goto bad;
        int r = (int)v[k++];
        int *dst = o < e->nops ? e->lab[o] : e->out;
        if (o < e->nops)
            e->rank[o] = r;
        else
            e->out_rank = r;
        for (int i = 0; i < r; i++, k++) {
            if (v[k] < 0 || v[k] >= EINSUM_LABELS)
                goto bad;
            dst[i] = (int)v[k];
        }
    }
    if (k != m)
        goto bad;
    return FM_OK;
bad:
    return fm_error(ctx, FM_ERR_SHAPE, "layer '%s' (Einsum): malformed equation encoding",
                    n->name);
}

/* Label sizes from the operands; sizes of 1 broadcast. */
static enum fm_status label_sizes(struct fm_ctx *ctx, const struct fm_node *n, const struct eq *e,
                                  const struct fm_tensor *const *in, int64_t *size)
{
    for (int l = 0; l < EINSUM_LABELS; l++)
        size[l] = 0;
    for (int o = 0; o < e->nops; o++) {
        if (in[o]->shape.rank != e->rank[o])
            return fm_error(ctx, FM_ERR_SHAPE,
                            "layer '%s' (Einsum): operand %d has rank %d, the equation says %d",
                            n->name, o, in[o]->shape.rank, e->rank[o]);
        for (int i = 0; i < e->rank[o]; i++) {
            int64_t d = in[o]->shape.dims[i], *s = &size[e->lab[o][i]];
            if (*s <= 1)
                *s = d;
            else if (d != 1 && d != *s)
                return fm_error(ctx, FM_ERR_SHAPE,
                                "layer '%s' (Einsum): a label has sizes %lld and %lld", n->name,
                                (long long)*s, (long long)d);
        }
    }
    return FM_OK;
}

static enum fm_status einsum_shape(struct fm_shape_call *call)
{
    struct eq e;
    int64_t size[EINSUM_LABELS];
    enum fm_status st = eq_parse(call->ctx, call->node, &e);
    if (!st)
        st = label_sizes(call->ctx, call->node, &e, call->in, size);
    if (st)
        return st;
    struct fm_shape y = {e.out_rank, {0}};
    for (int i = 0; i < e.out_rank; i++) {
        y.dims[i] = size[e.out[i]];
        if (y.dims[i] <= 0)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (Einsum): output label %d appears in no operand",
                            call->node->name, i);
    }
    call->out_shape[0] = y;
    return FM_OK;
}

static bool has_label(const int *labs, int n, int l)
{
    for (int i = 0; i < n; i++) {
        if (labs[i] == l)
            return true;
    }
    return false;
}

static enum fm_status einsum_cost(struct fm_cost_call *call)
{
    struct eq e;
    int64_t size[EINSUM_LABELS];
    enum fm_status st = eq_parse(call->ctx, call->node, &e);
    if (!st)
        st = label_sizes(call->ctx, call->node, &e, call->in, size);
    if (st)
        return st;
    bool *o = &call->ovf;
    uint64_t p = 1;
    for (int l = 0; l < EINSUM_LABELS; l++) {
        if (size[l] > 0)
            p = fm_cmul(o, p, (uint64_t)size[l]);
    }
    uint64_t out = fm_cost_numel(call, call->out[0]);
    fm_cost_fwd_bytes_default(call);
    if (e.nops == 1) {
        if (p > out)
            fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, p - out);
        /* dX broadcasts dy back (a copy): bytes only */
        fm_cost_bwd_bytes_default(call);
        return FM_OK;
    }
    bool contracts = false;
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < e.rank[k]; i++)
            contracts |= !has_label(e.out, e.out_rank, e.lab[k][i]);
    }
    fm_cost_add(call, FM_PHASE_FWD, contracts ? FM_PRIM_MAC : FM_PRIM_MUL, p);
    for (int k = 0; k < 2; k++) {
        if (!call->grad[k])
            continue;
        int other = 1 - k;
        bool c = false;   /* a label of dY or the other operand that operand k lacks */
        for (int i = 0; i < e.out_rank; i++)
            c |= !has_label(e.lab[k], e.rank[k], e.out[i]);
        for (int i = 0; i < e.rank[other]; i++)
            c |= !has_label(e.lab[k], e.rank[k], e.lab[other][i]);
        enum fm_phase ph = fm_cost_grad_phase(call, k);
        fm_cost_add(call, ph, c ? FM_PRIM_MAC : FM_PRIM_MUL, p);
        fm_cost_read(call, ph, fm_cost_bytes(call, call->out[0]));
        fm_cost_read(call, ph, fm_cost_bytes(call, call->in[other]));
        fm_cost_write(call, ph, fm_cost_bytes(call, call->in[k]));
        call->saved_in_mask |= 1ull << other;
    }
    return FM_OK;
}

const struct fm_op_desc fm_op_einsum_desc = {1, 2, 1, einsum_shape, einsum_cost};
