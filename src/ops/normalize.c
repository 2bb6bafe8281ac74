/* Normalizations without learned parameters, as ONNX defines them: LpNormalization (p = 1 or 2
 * along one axis), MeanVarianceNormalization (over a set of axes) and LRN (local response
 * normalization across channels, AlexNet's). E = elements of X.
 *
 * LpNormalization, R rows of L elements along the axis (no epsilon in ONNX's definition):
 *   p = 2: n = sqrt(sum x*x): E mul + E-R add + R special; y = x / n: E div
 *          | dx = (dy - y * sum(dy*y)) / n: 2E mul + 2E-R add + E div
 *   p = 1: n = sum |x|: E cmp + E-R add; y = x / n: E div
 *          | dx = (dy - sign(y) * sum(dy*y)) / n: 2E mul + 2E-R add + E cmp + E div
 *   kept: y, and n per row (R values, fp32)
 *
 * MeanVarianceNormalization, G groups of S = E/G elements (the reduced axes), ONNX's function
 * body step by step (ReduceMean, Pow, Sub, Sqrt, Add of epsilon 1e-9, Div):
 *   m = mean(x): E-G add + G div;  x*x: E mul;  mean(x*x): E-G add + G div;  m*m: G mul
 *   var = mean(x*x) - m*m: G add;  sd = sqrt(var): G special;  s = sd + eps: G add
 *   y = (x - m) / s: E add + E div
 *   fwd: 3E add + (E + G) mul + (E + 2G) div + G special
 *   bwd, exactly (y = d/s, d = x - m, sd = sqrt(mean(d*d))):
 *        dx = (dy - mean(dy) - y * mean(dy*y) * s/sd) / s
 *        mean(dy): E-G add + G div; dy*y: E mul; its mean: E-G add + G div; s = sd + eps: G add;
 *        s/sd: G div; times mean(dy*y): G mul; y * that: E mul; the two subtractions: 2E add;
 *        / s: E div:  (4E - G) add + (2E + G) mul + (E + 3G) div
 *   kept: y, and sd per group (G values, fp32)
 *
 * LRN over C channels with a window of `size` channels, c - floor((size-1)/2) .. c +
 * ceil((size-1)/2) clipped to [0, C-1] (ONNX's rule), at every (n, spatial) position P = E/C:
 *   W = P * sum_c (window_c - 1): the adds of the window sums, counted exactly per channel
 *   s = sum of x*x over the window: E mul + W add
 *   d = bias + alpha/size * s: E mul + E add (alpha/size one constant)
 *   y = x / d^beta: E special + E div
 *   fwd: 2E mul + (E + W) add + E special + E div
 *   bwd: dx_i = dy_i * d_i^-beta - (2 alpha beta / size) * x_i * sum_{j: i in window(j)}
 *        dy_j * y_j / d_j  (the transposed windows pair the same channels: W adds again)
 *        d^-beta: E special; dy * it: E mul; t = dy*y/d: E mul + E div; window sums of t:
 *        W add; x_i * sum: E mul; * the constant: E mul; the difference: E add
 *        (E + W) add + 4E mul + E div + E special
 *   kept: x, y and d (E values of X's dtype)
 * No op here has parameters: nothing is counted in bwd_weight. */
#include "ops.h"

/* ---- LpNormalization ---- */

static enum fm_status lp_norm_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    int axis;
    enum fm_status st = fm_shape_expect_rank(call, 0, 1, FM_MAX_DIMS);
    if (!st)
        st = fm_shape_axis(call->ctx, n, n->attrs.axis, call->in[0]->shape.rank, &axis);
    if (st)
        return st;
    int64_t p = n->attrs.nints ? n->attrs.ints[0] : 2;
    if (p != 1 && p != 2)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): p is %lld; ONNX allows 1 or 2",
                        n->name, n->op_name, (long long)p);
    call->out_shape[0] = call->in[0]->shape;
    return FM_OK;
}

static enum fm_status lp_norm_cost(struct fm_cost_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_shape *x = &call->in[0]->shape;
    bool *o = &call->ovf;
    int axis = 0;
    fm_shape_axis(call->ctx, n, n->attrs.axis, x->rank, &axis);
    bool p1 = n->attrs.nints && n->attrs.ints[0] == 1;
    uint64_t e = fm_cost_numel(call, call->in[0]);
    uint64_t r = x->dims[axis] ? e / (uint64_t)x->dims[axis] : 0;
    fm_cost_add(call, FM_PHASE_FWD, p1 ? FM_PRIM_CMP : FM_PRIM_MUL, e);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, e - r);
    if (!p1)
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, r);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, e);
    fm_cost_fwd_bytes_default(call);
    if (!call->grad[0])
        return FM_OK;
    enum fm_phase ph = fm_cost_grad_phase(call, 0);
    fm_cost_add(call, ph, FM_PRIM_MUL, fm_cmul(o, 2, e));
    fm_cost_add(call, ph, FM_PRIM_ADD, fm_cadd(o, e, e - r));
    fm_cost_add(call, ph, FM_PRIM_DIV, e);
    if (p1)
        fm_cost_add(call, ph, FM_PRIM_CMP, e);
    call->saved_out_mask |= 1u;
    call->cost->saved_bytes = fm_cmul(o, 4, r);   /* n per row, fp32 */
    fm_cost_write(call, FM_PHASE_FWD, call->cost->saved_bytes);
    fm_cost_bwd_bytes_default(call);
    fm_cost_read(call, ph, call->cost->saved_bytes);
    return FM_OK;
}

/* ---- MeanVarianceNormalization ---- */

static enum fm_status mvn_groups(struct fm_ctx *ctx, const struct fm_node *n,
                                 const struct fm_shape *x, bool *ovf, uint64_t *groups)
{
    bool reduced[FM_MAX_DIMS] = {false};
    for (int k = 0; k < n->attrs.nints; k++) {
        int ax;
        enum fm_status st = fm_shape_axis(ctx, n, n->attrs.ints[k], x->rank, &ax);
        if (st)
            return st;
        if (reduced[ax])
            return fm_error(ctx, FM_ERR_SHAPE, "layer '%s' (%s): axis %d is listed twice",
                            n->name, n->op_name, ax);
        reduced[ax] = true;
    }
    if (n->attrs.nints == 0)
        return fm_error(ctx, FM_ERR_SHAPE, "layer '%s' (%s): no axes to normalize over",
                        n->name, n->op_name);
    *groups = 1;
    for (int i = 0; i < x->rank; i++) {
        if (!reduced[i])
            *groups = fm_cmul(ovf, *groups, (uint64_t)x->dims[i]);
    }
    return FM_OK;
}

static enum fm_status mvn_shape(struct fm_shape_call *call)
{
    bool ovf = false;
    uint64_t g;
    enum fm_status st = mvn_groups(call->ctx, call->node, &call->in[0]->shape, &ovf, &g);
    if (st)
        return st;
    call->out_shape[0] = call->in[0]->shape;
    return FM_OK;
}

static enum fm_status mvn_cost(struct fm_cost_call *call)
{
    bool *o = &call->ovf;
    uint64_t e = fm_cost_numel(call, call->in[0]), g = 0;
    enum fm_status st = mvn_groups(call->ctx, call->node, &call->in[0]->shape, o, &g);
    if (st)
        return st;
    if (e == 0)
        g = 0;
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cmul(o, 3, e));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, fm_cadd(o, e, g));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, fm_cadd(o, e, fm_cmul(o, 2, g)));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, g);
    fm_cost_fwd_bytes_default(call);
    if (!call->grad[0])
        return FM_OK;
    enum fm_phase ph = fm_cost_grad_phase(call, 0);
    fm_cost_add(call, ph, FM_PRIM_ADD, fm_cmul(o, 4, e) - g);
    fm_cost_add(call, ph, FM_PRIM_MUL, fm_cadd(o, fm_cmul(o, 2, e), g));
    fm_cost_add(call, ph, FM_PRIM_DIV, fm_cadd(o, e, fm_cmul(o, 3, g)));
    call->saved_out_mask |= 1u;
    call->cost->saved_bytes = fm_cmul(o, 4, g);   /* sd per group, fp32 */
    fm_cost_write(call, FM_PHASE_FWD, call->cost->saved_bytes);
    fm_cost_bwd_bytes_default(call);
    fm_cost_read(call, ph, call->cost->saved_bytes);
    return FM_OK;
}

/* ---- LRN ---- */

static enum fm_status lrn_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    enum fm_status st = fm_shape_expect_rank(call, 0, 3, FM_MAX_DIMS);
    if (st)
        return st;
    if (n->attrs.nints < 1 || n->attrs.ints[0] <= 0)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (LRN): size must be positive",
                        n->name);
    call->out_shape[0] = call->in[0]->shape;
    return FM_OK;
}

/* Sum over the C channels of their window sizes: a window offset k in [-lo, hi] pairs C - |k|
 * channels with a neighbour inside [0, C-1] (offsets past C pair none), so the loop is bounded
 * by C and by the size, never by an absurd attribute alone. */
static uint64_t lrn_pairs(int64_t c, int64_t size, bool *ovf)
{
    int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
    uint64_t total = 0;
    for (int64_t k = -(lo < c ? lo : c - 1); k <= (hi < c ? hi : c - 1); k++)
        total = fm_cadd(ovf, total, (uint64_t)(c - (k < 0 ? -k : k)));
    return total;
}

static enum fm_status lrn_cost(struct fm_cost_call *call)
{
    const struct fm_shape *x = &call->in[0]->shape;
    bool *o = &call->ovf;
    uint64_t e = fm_cost_numel(call, call->in[0]);
    uint64_t c = (uint64_t)x->dims[1];
    uint64_t positions = c ? e / c : 0;
    uint64_t pairs = c ? lrn_pairs(x->dims[1], call->node->attrs.ints[0], o) : 0;
    uint64_t w = fm_cmul(o, positions, pairs - c);   /* adds of all window sums */
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, fm_cmul(o, 2, e));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cadd(o, e, w));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, e);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, e);
    fm_cost_fwd_bytes_default(call);
    if (!call->grad[0])
        return FM_OK;
    enum fm_phase ph = fm_cost_grad_phase(call, 0);
    fm_cost_add(call, ph, FM_PRIM_ADD, fm_cadd(o, e, w));
    fm_cost_add(call, ph, FM_PRIM_MUL, fm_cmul(o, 4, e));
    fm_cost_add(call, ph, FM_PRIM_DIV, e);
    fm_cost_add(call, ph, FM_PRIM_SPECIAL, e);
    call->saved_in_mask |= 1u;
    call->saved_out_mask |= 1u;
    call->cost->saved_bytes = fm_cost_bytes(call, call->in[0]);   /* d, like X */
    fm_cost_write(call, FM_PHASE_FWD, call->cost->saved_bytes);
    fm_cost_bwd_bytes_default(call);
    fm_cost_read(call, ph, call->cost->saved_bytes);
    return FM_OK;
}

const struct fm_op_desc fm_op_lp_norm_desc = {1, 1, 1, lp_norm_shape, lp_norm_cost};
const struct fm_op_desc fm_op_mvn_desc = {1, 1, 1, mvn_shape, mvn_cost};
const struct fm_op_desc fm_op_lrn_desc = {1, 1, 1, lrn_shape, lrn_cost};
