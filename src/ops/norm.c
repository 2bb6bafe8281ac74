/* Normalizations: BatchNorm (training and inference semantics), LayerNorm, GroupNorm and
 * InstanceNorm. E = elements of X, G = number of statistics groups (channels for BatchNorm,
 * rows for LayerNorm, N*groups for GroupNorm, N*C for InstanceNorm), S = E/G elements per
 * group, all counted from this two-pass algorithm:
 *
 *   mean  = sum(x) / S                      E add,            G div
 *   d     = x - mean                        E add
 *   var   = sum(d*d) / S                    E mul + E add,    G div
 *   istd  = rsqrt(var + eps)                G add + G special
 *   y     = d * istd * gamma + beta         see each op (BatchNorm folds istd*gamma per channel)
 *
 * Backward (xhat = d*istd, recomputed: E add + E mul):
 *   dbeta = sum(dy)                         E add                    -> bwd_weight
 *   dgamma = sum(dy * xhat)                 E mul + E add (+ xhat)    -> bwd_weight
 *   dx = istd/S * (S*g - sum_grp(g) - xhat*sum_grp(g*xhat)),  g = dy*gamma      -> bwd_data
 * How dx is counted depends on whether gamma is constant within a statistics group:
 *   BatchNorm, InstanceNorm, or no gamma: g = gamma*dy with gamma factored out of the group,
 *     dx = k * (S*dy - sum_grp(dy) - xhat*sum_grp(dy*xhat)): 3E mul + 2E add, and
 *     k = gamma*istd/S: G mul (only with gamma) + G div. The two group sums are the sums of
 *     dbeta and dgamma (BatchNorm) or their per-sample partials (InstanceNorm), so bwd_data
 *     counts them (E add; 2E add + 2E mul with xhat) only when bwd_weight does not.
 *   LayerNorm and GroupNorm with gamma: gamma varies inside a group, so the group sums are of
 *     g = dy*gamma and cannot be taken from dbeta/dgamma (which sum over the batch per
 *     feature): g (E mul), sum_grp(g) (E add), sum_grp(g*xhat) (E mul + E add, and xhat,
 *     E add + E mul, unless bwd_weight recomputed it), dx: 3E mul + 2E add, istd/S: G div.
 * What training keeps: X and the mean and istd per group (fp32), the statistics written by the
 * forward and read by the backward. Nothing is kept, and no backward counted, when neither X nor
 * the affine parameters need a gradient (a frozen backbone).
 * BatchNorm in inference (or frozen-statistics) semantics is an affine map per channel.
 * The running-statistics update (momentum, unbiased variance) costs 5 mul + 2 add per channel.
 *
 * Secondary outputs (ONNX's optional ones) cost the bytes written, never extra arithmetic: the
 * statistics they hold are computed anyway.
 *   LayerNorm's Mean and InvStdDev (X's dims, 1 from `axis` on; stash_type, fp32 by default)
 *     are the mean and istd per group: each written is G x its dtype size. When training keeps
 *     them, the statistics an output already holds are not written a second time.
 *   BatchNorm's running_mean and running_var (opset 14+; `mean`, `var` before) are the updated
 *     running statistics, written in training anyway; in inference each written output costs
 *     its bytes (C elements). The older saved_mean and saved_var are the batch mean and istd
 *     training keeps: written once, as those, when X or the affine parameters need a gradient,
 *     else their own bytes. */
#include "ops.h"

static enum fm_status affine_param_check(struct fm_shape_call *call, int first, int last,
                                         int64_t c)
{
    for (int i = first; i <= last && i < call->node->n_in; i++) {
        const struct fm_tensor *t = call->in[i];
        if (!t)
            continue;
        uint64_t n;
        if (fm_shape_numel(&t->shape, &n) != FM_OK || n != (uint64_t)c)
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (%s): input %d ('%s') must have %lld elements",
                            call->node->name, call->node->op_name, i, t->name, (long long)c);
    }
    return FM_OK;
}

/* ---- BatchNorm ---- */

static enum fm_status batchnorm_shape(struct fm_shape_call *call)
{
    enum fm_status st = fm_shape_expect_rank(call, 0, 2, FM_MAX_DIMS);
    if (st)
        return st;
    st = affine_param_check(call, 1, 4, call->in[0]->shape.dims[1]);
    if (st)
        return st;
    if (call->node->n_out > 5)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): %d outputs; at most 5",
                        call->node->name, call->node->op_name, call->node->n_out);
    call->out_shape[0] = call->in[0]->shape;
    for (int i = 1; i < call->node->n_out; i++) {   /* running or saved statistics: [C] */
        call->out_shape[i].rank = 1;
        call->out_shape[i].dims[0] = call->in[0]->shape.dims[1];
        call->out_dtype[i] = call->in[3]->dtype;
    }
    return FM_OK;
}

/* Forward bytes of a normalization: every input read, Y written (the secondary outputs are
 * each op's to count). */
static void norm_fwd_bytes(struct fm_cost_call *call)
{
    for (int i = 0; i < call->node->n_in; i++)
        fm_cost_read(call, FM_PHASE_FWD, fm_cost_bytes(call, call->in[i]));
    fm_cost_write(call, FM_PHASE_FWD, fm_cost_bytes(call, call->out[0]));
}

/* Writes the bytes of the secondary outputs first..last the file asks for. */
static void norm_write_outputs(struct fm_cost_call *call, int first, int last)
{
    for (int i = first; i <= last; i++) {
        if (fm_output_written(call->node, i))
            fm_cost_write(call, FM_PHASE_FWD, fm_cost_bytes(call, call->out[i]));
    }
}

static bool bn_training(const struct fm_cost_call *call)
{
    return call->train && !(call->node->attrs.flags & FM_ATTR_INFER_BN);
}

/* Whether any input of a normalization needs a gradient (else nothing is kept or counted). */
static bool norm_any_grad(const struct fm_cost_call *call)
{
    for (int i = 0; i < call->node->n_in && i < 3; i++) {
        if (call->grad[i])
            return true;
    }
    return false;
}

/* Backward of a normalization with E elements in G statistics groups; gi/bi are the gamma and
 * beta input indices; gamma_varies: gamma is not constant within a group (LayerNorm,
 * GroupNorm). Shared by all four ops; the header gives the formulas. */
static void norm_backward(struct fm_cost_call *call, uint64_t e, uint64_t g, int gi, int bi,
                          bool gamma_varies)
{
    bool has_gamma = gi < call->node->n_in && call->in[gi];
    bool gamma_grad = gi < call->node->n_in && call->grad[gi];
    bool beta_grad = bi < call->node->n_in && call->grad[bi];
    bool *o = &call->ovf;
    uint64_t bx = fm_cost_bytes(call, call->in[0]), by = fm_cost_bytes(call, call->out[0]);
    if (gamma_grad || beta_grad) {
        enum fm_phase ph = FM_PHASE_BWD_WEIGHT;
        if (beta_grad)
            fm_cost_add(call, ph, FM_PRIM_ADD, e);
        if (gamma_grad) {
            fm_cost_add(call, ph, FM_PRIM_ADD, fm_cmul(o, 2, e));
            fm_cost_add(call, ph, FM_PRIM_MUL, fm_cmul(o, 2, e));
        }
        /* dY; X and the statistics only for xhat (dgamma) */
        fm_cost_read(call, ph, by);
        if (gamma_grad) {
            fm_cost_read(call, ph, bx);
            fm_cost_read(call, ph, call->cost->saved_bytes);
        }
        if (gamma_grad)
            fm_cost_write(call, ph, fm_cost_bytes(call, call->in[gi]));
        if (beta_grad)
            fm_cost_write(call, ph, fm_cost_bytes(call, call->in[bi]));
    }
    if (call->grad[0]) {
        enum fm_phase ph = FM_PHASE_BWD_DATA;
        if (has_gamma && gamma_varies) {
            fm_cost_add(call, ph, FM_PRIM_MUL, e);                    /* g = dy*gamma */
            fm_cost_add(call, ph, FM_PRIM_ADD, e);                    /* sum(g) */
            fm_cost_add(call, ph, FM_PRIM_MUL, e);                    /* g*xhat */
            fm_cost_add(call, ph, FM_PRIM_ADD, e);                    /* sum(g*xhat) */
            if (!gamma_grad) {                                        /* xhat */
                fm_cost_add(call, ph, FM_PRIM_ADD, e);
                fm_cost_add(call, ph, FM_PRIM_MUL, e);
            }
        } else {   /* the group sums of dy and dy*xhat bwd_weight did not provide */
            if (!beta_grad)
                fm_cost_add(call, ph, FM_PRIM_ADD, e);
            if (!gamma_grad) {
                fm_cost_add(call, ph, FM_PRIM_ADD, fm_cmul(o, 2, e));
                fm_cost_add(call, ph, FM_PRIM_MUL, fm_cmul(o, 2, e));
            }
            if (has_gamma)
                fm_cost_add(call, ph, FM_PRIM_MUL, g);                /* k = gamma*istd/S */
        }
        fm_cost_add(call, ph, FM_PRIM_MUL, fm_cmul(o, 3, e));
        fm_cost_add(call, ph, FM_PRIM_ADD, fm_cmul(o, 2, e));
        fm_cost_add(call, ph, FM_PRIM_DIV, g);
        fm_cost_read(call, ph, by);
        fm_cost_read(call, ph, bx);
        fm_cost_read(call, ph, call->cost->saved_bytes);
        fm_cost_write(call, ph, bx);
    }
}

/* The statistics passes common to every normalization in training form. */
static void norm_stats_fwd(struct fm_cost_call *call, uint64_t e, uint64_t g)
{
    bool *o = &call->ovf;
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cmul(o, 3, e));  /* sum, x-mean, sum sq */
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);                /* d*d */
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, fm_cmul(o, 2, g)); /* mean, var */
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, g);                /* var + eps */
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, g);            /* rsqrt */
}

static enum fm_status batchnorm_cost(struct fm_cost_call *call)
{
    uint64_t e = fm_cost_numel(call, call->in[0]);
    uint64_t c = (uint64_t)call->in[0]->shape.dims[1];
    bool *o = &call->ovf;
    norm_fwd_bytes(call);
    if (bn_training(call)) {
        norm_stats_fwd(call, e, c);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, c);       /* scale = gamma * istd */
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);       /* d * scale */
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, e);       /* + beta */
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, fm_cmul(o, 5, c)); /* running stats */
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cmul(o, 2, c));
        /* the new running statistics are written back */
        fm_cost_write(call, FM_PHASE_FWD, fm_cost_bytes(call, call->in[3]));
        fm_cost_write(call, FM_PHASE_FWD, fm_cost_bytes(call, call->in[4]));
        if (norm_any_grad(call)) {
            call->saved_in_mask |= 1u;
            call->cost->saved_bytes = fm_cmul(o, 2 * 4, c);     /* batch mean and istd, fp32 */
            fm_cost_write(call, FM_PHASE_FWD, call->cost->saved_bytes);
        } else {
            norm_write_outputs(call, 3, 4);   /* saved_mean, saved_var: nothing keeps them */
        }
        norm_backward(call, e, c, 1, 2, false);
    } else {
        norm_write_outputs(call, 1, 4);
        /* scale = gamma * rsqrt(var + eps); shift = beta - mean * scale; y = x*scale + shift */
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cmul(o, 2, c));
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, fm_cmul(o, 2, c));
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, c);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, e);
        /* backward through a fixed affine map: dx = dy*scale; dgamma = sum(dy*xhat),
         * dbeta = sum(dy) with xhat = (x-mean)*istd */
        if (call->grad[0]) {
            fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_MUL, e);
            fm_cost_read(call, FM_PHASE_BWD_DATA, fm_cost_bytes(call, call->out[0]));
            fm_cost_write(call, FM_PHASE_BWD_DATA, fm_cost_bytes(call, call->in[0]));
        }
        if (call->grad[1] || call->grad[2]) {
            if (call->grad[2])
                fm_cost_add(call, FM_PHASE_BWD_WEIGHT, FM_PRIM_ADD, e);
            if (call->grad[1]) {
                fm_cost_add(call, FM_PHASE_BWD_WEIGHT, FM_PRIM_ADD, fm_cmul(o, 2, e));
                fm_cost_add(call, FM_PHASE_BWD_WEIGHT, FM_PRIM_MUL, fm_cmul(o, 2, e));
                call->saved_in_mask |= 1u;
            }
            /* dY, and X only for dgamma; only the gradients that exist are written */
            fm_cost_read(call, FM_PHASE_BWD_WEIGHT, fm_cost_bytes(call, call->out[0]));
            if (call->grad[1]) {
                fm_cost_read(call, FM_PHASE_BWD_WEIGHT, fm_cost_bytes(call, call->in[0]));
                fm_cost_write(call, FM_PHASE_BWD_WEIGHT, fm_cost_bytes(call, call->in[1]));
            }
            if (call->grad[2])
                fm_cost_write(call, FM_PHASE_BWD_WEIGHT, fm_cost_bytes(call, call->in[2]));
        }
    }
    return FM_OK;
}

/* ---- LayerNorm, GroupNorm, InstanceNorm: statistics per group, affine per element ---- */

/* Forward of y = xhat * gamma + beta where gamma/beta may be absent. */
static void group_norm_fwd(struct fm_cost_call *call, uint64_t e, uint64_t g, int gi, int bi,
                           bool gamma_varies)
{
    norm_stats_fwd(call, e, g);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);              /* d * istd */
    if (gi < call->node->n_in && call->in[gi])
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);          /* * gamma */
    if (bi < call->node->n_in && call->in[bi])
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, e);          /* + beta */
    norm_fwd_bytes(call);
    norm_write_outputs(call, 1, 2);   /* LayerNorm's Mean and InvStdDev */
    if (norm_any_grad(call)) {
        call->saved_in_mask |= 1u;
        call->cost->saved_bytes = fm_cmul(&call->ovf, 2 * 4, g); /* mean and istd, fp32 */
        /* the statistics not already written as outputs */
        for (int i = 1; i <= 2; i++) {
            if (!fm_output_written(call->node, i))
                fm_cost_write(call, FM_PHASE_FWD, fm_cmul(&call->ovf, 4, g));
        }
    }
    norm_backward(call, e, g, gi, bi, gamma_varies);
}

static enum fm_status layernorm_shape(struct fm_shape_call *call)
{
    enum fm_status st = fm_shape_expect_rank(call, 0, 1, FM_MAX_DIMS);
    if (st)
        return st;
    const struct fm_shape *x = &call->in[0]->shape;
    int axis;
    st = fm_shape_axis(call->ctx, call->node, call->node->attrs.axis, x->rank, &axis);
    if (st)
        return st;
    int64_t d = 1;
    for (int i = axis; i < x->rank; i++)
        d *= x->dims[i];
    st = affine_param_check(call, 1, 2, d);
    if (st)
        return st;
    if (call->node->n_out > 3)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): %d outputs; at most 3 (Y, "
                        "Mean, InvStdDev)", call->node->name, call->node->op_name,
                        call->node->n_out);
    call->out_shape[0] = *x;
    /* Mean, InvStdDev: X's dims with those from axis on set to 1, in stash_type (ints[1]) */
    enum fm_dtype stash = call->node->attrs.nints > 1 ? (enum fm_dtype)call->node->attrs.ints[1]
                                                      : FM_DTYPE_FP32;
    if ((unsigned)stash >= FM_DTYPE_COUNT)
        return fm_error(call->ctx, FM_ERR_INVALID, "layer '%s' (%s): stash type %d is unknown",
                        call->node->name, call->node->op_name, (int)stash);
    for (int i = 1; i < call->node->n_out; i++) {
        call->out_shape[i] = *x;
        for (int k = axis; k < x->rank; k++)
            call->out_shape[i].dims[k] = 1;
        call->out_dtype[i] = stash;
    }
    return FM_OK;
}

static enum fm_status layernorm_cost(struct fm_cost_call *call)
{
    const struct fm_shape *x = &call->in[0]->shape;
    int axis;
    fm_shape_axis(call->ctx, call->node, call->node->attrs.axis, x->rank, &axis);
    uint64_t e = fm_cost_numel(call, call->in[0]);
    uint64_t g = 1;
    for (int i = 0; i < axis; i++)
        g = fm_cmul(&call->ovf, g, (uint64_t)x->dims[i]);
    group_norm_fwd(call, e, g, 1, 2, true);
    return FM_OK;
}

static enum fm_status groupnorm_shape(struct fm_shape_call *call)
{
    enum fm_status st = fm_shape_expect_rank(call, 0, 2, FM_MAX_DIMS);
    if (st)
        return st;
    const struct fm_shape *x = &call->in[0]->shape;
    int64_t groups = call->node->op == FM_OP_INSTANCENORM ? x->dims[1] : call->node->attrs.groups;
    if (groups <= 0 || x->dims[1] % groups != 0)
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (%s): %lld channels do not split into %lld groups",
                        call->node->name, call->node->op_name, (long long)x->dims[1],
                        (long long)groups);
    st = affine_param_check(call, 1, 2, x->dims[1]);
    if (st)
        return st;
    call->out_shape[0] = *x;
    return FM_OK;
}

static enum fm_status groupnorm_cost(struct fm_cost_call *call)
{
    const struct fm_shape *x = &call->in[0]->shape;
    int64_t groups = call->node->op == FM_OP_INSTANCENORM ? x->dims[1] : call->node->attrs.groups;
    uint64_t e = fm_cost_numel(call, call->in[0]);
    uint64_t g = fm_cmul(&call->ovf, (uint64_t)x->dims[0], (uint64_t)groups);
    /* InstanceNorm: one group per (sample, channel), so gamma is constant within it */
    group_norm_fwd(call, e, g, 1, 2, call->node->op != FM_OP_INSTANCENORM);
    return FM_OK;
}

/* BatchNorm: Y [, running or saved statistics]; LayerNorm: Y [, Mean [, InvStdDev]] */
const struct fm_op_desc fm_op_batchnorm_desc = {5, 5, 0, batchnorm_shape, batchnorm_cost};
const struct fm_op_desc fm_op_layernorm_desc = {1, 3, 0, layernorm_shape, layernorm_cost};
const struct fm_op_desc fm_op_groupnorm_desc = {1, 3, 1, groupnorm_shape, groupnorm_cost};
const struct fm_op_desc fm_op_instancenorm_desc = {1, 3, 1, groupnorm_shape, groupnorm_cost};
