/* The losses a training step ends in.
 *
 * Cross-entropy loss of logits (N, K) against integer labels (N), mean over the batch.
 * E = N*K. Forward (log-softmax, pick, mean):
 *   max per row (E-N cmp); x - max (E add); exp (E special); sum (E-N add); log (N special);
 *   lse_i = max_i + log(sum_i) (N add); loss_i = lse_i - x_label (N add); mean (N-1 add, 1 div)
 * Backward to the logits: softmax = exp(x - lse) (E add, E special); minus one-hot (N add);
 * divided by N (E div). The log-sum-exp per row (fp32) is kept: written by the forward, read
 * by the backward.
 *
 * Mean squared error of a prediction Y against a target T of the same shape (torch's
 * MSELoss, reduction mean), E elements. Forward: d = y - t (E add), d*d (E mul), sum (E-1 add),
 * mean (1 div). Backward to Y: dy = d * (2/E), recomputing d (E add, E mul; the scalar 2/E
 * once, not per element). Y and T are kept. The target is an input: it gets no gradient.
 *
 * ONNX's SoftmaxCrossEntropyLoss (scores) and NegativeLogLikelihoodLoss (log-probabilities):
 * input (N, C, d1..dk), labels (N, d1..dk) int, weights (C)?; reduction none, sum or mean;
 * ignore_index. M = N*d1*..*dk positions, C classes, E = M*C. A graph that ends in one is a
 * model that brings its own loss (src/frontend/loss.c adds none).
 *   SCE log-softmax over C at each position: max (E-M cmp); x - max (E add); exp (E special);
 *       sum (E-M add); log (M special); lse = max + log (M add); then with the log_prob output
 *       log_prob = x - lse (E add) and p_i = log_prob[label], else p_i = x_label - lse (M add)
 *   NLL p_i = input[i, label_i] (a gather: no arithmetic; the sign folded)
 *   both, on the M picked values: weights w[label_i] * p_i (M mul); ignore_index label ==
 *       ignore (M cmp, the ignored set to 0 by a select); sum (M-1 add); mean (M-1 add, 1 div,
 *       and with weights or ignore_index the denominator, the sum of the weights or of the
 *       mask, M-1 add more); none: the M values are the output.
 * Backward to the input, with a factor f_i per position: none dy_i, sum 1, mean 1/denominator
 * (1 div), times w[label_i] with weights (M mul, except for sum where f_i = w_i), the ignored
 * masked again (M cmp):
 *   SCE dx = (softmax - onehot) * f: softmax = exp(log_prob) (E special) when log_prob was
 *       written (it is kept), else exp(x - lse) (E add + E special; x and lse, M values, kept);
 *       minus one-hot (M add); times f (E mul), except for sum without weights where f is 1
 *       (or 0 for the ignored: a select)
 *   NLL dx = -f_i at the label, 0 elsewhere: the factor's operations only; dX written whole
 * Labels and weights are kept; weights are constants in exports and take no gradient (one
 * computed by the network is not differentiated), nor does a gradient arriving through SCE's
 * log_prob output count (exports read only the loss). PyTorch's FlopCounterMode counts 0 for
 * cross_entropy and nll_loss; fvcore and the other peers never see a loss. */
#include "ops.h"

static enum fm_status ce_shape(struct fm_shape_call *call)
{
    enum fm_status st = fm_shape_expect_rank(call, 0, 2, 2);
    if (!st)
        st = fm_shape_expect_rank(call, 1, 1, 1);
    if (st)
        return st;
    if (call->in[1]->shape.dims[0] != call->in[0]->shape.dims[0])
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (CrossEntropy): %lld labels for %lld rows of logits",
                        call->node->name, (long long)call->in[1]->shape.dims[0],
                        (long long)call->in[0]->shape.dims[0]);
    if (fm_dtype_is_float(call->in[1]->dtype))
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (CrossEntropy): labels must be class indices (integers)",
                        call->node->name);
    call->out_shape[0] = (struct fm_shape){0, {0}};
    call->out_dtype[0] = call->in[0]->dtype;
    return FM_OK;
}

static enum fm_status ce_cost(struct fm_cost_call *call)
{
    bool *o = &call->ovf;
    uint64_t e = fm_cost_numel(call, call->in[0]);
    uint64_t n = (uint64_t)call->in[0]->shape.dims[0];
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, e - n);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cadd(o, fm_cadd(o, e, e - n), 3 * n - 1));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, fm_cadd(o, e, n));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, 1);
    fm_cost_fwd_bytes_default(call);
    if (call->grad[0]) {
        fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_ADD, fm_cadd(o, e, n));
        fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_SPECIAL, e);
        fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_DIV, e);
        call->saved_in_mask |= 3u;
        call->cost->saved_bytes = fm_cmul(o, n, 4);
        fm_cost_write(call, FM_PHASE_FWD, call->cost->saved_bytes);
        fm_cost_bwd_bytes_default(call);
        fm_cost_read(call, FM_PHASE_BWD_DATA, call->cost->saved_bytes);
    }
    return FM_OK;
}

const struct fm_op_desc fm_op_cross_entropy_desc = {2, 2, 1, ce_shape, ce_cost};

static enum fm_status mse_shape(struct fm_shape_call *call)
{
    const struct fm_tensor *y = call->in[0], *t = call->in[1];
    if (!fm_shape_equal(&y->shape, &t->shape))
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (MSELoss): prediction '%s' and target '%s' differ in shape",
                        call->node->name, y->name, t->name);
    if (!fm_dtype_is_float(y->dtype) || !fm_dtype_is_float(t->dtype))
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (MSELoss): prediction and target must be floats",
                        call->node->name);
    call->out_shape[0] = (struct fm_shape){0, {0}};
    call->out_dtype[0] = y->dtype;
    return FM_OK;
}

static enum fm_status mse_cost(struct fm_cost_call *call)
{
    bool *o = &call->ovf;
    uint64_t e = fm_cost_numel(call, call->in[0]);
    if (e == 0)
        return FM_OK;
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cadd(o, e, e - 1));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, e);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, 1);
    fm_cost_fwd_bytes_default(call);
    for (int i = 0; i < 2; i++) {
        if (!call->grad[i])
            continue;
        enum fm_phase ph = fm_cost_grad_phase(call, i);
        fm_cost_add(call, ph, FM_PRIM_ADD, e);
        fm_cost_add(call, ph, FM_PRIM_MUL, e);
        call->saved_in_mask |= 3u;
    }
    fm_cost_bwd_bytes_default(call);
    return FM_OK;
}

const struct fm_op_desc fm_op_mse_loss_desc = {2, 2, 1, mse_shape, mse_cost};

/* ---- ONNX's SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss: ints = {reduction (0 none,
 * 1 sum, 2 mean), has ignore_index, ignore_index} ---- */

enum { RED_NONE, RED_SUM, RED_MEAN };

static enum fm_status onnx_loss_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    const struct fm_tensor *x = call->in[0], *lab = call->in[1], *w = call->in[2];
    if (n->attrs.nints != 3 || n->attrs.ints[0] < RED_NONE || n->attrs.ints[0] > RED_MEAN)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): expects {reduction 0..2, "
                        "has ignore_index, ignore_index}", n->name, n->op_name);
    if (!fm_dtype_is_float(x->dtype) || x->shape.rank < 2)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): input '%s' must be float "
                        "(N, C, ...)", n->name, n->op_name, x->name);
    if (fm_dtype_is_float(lab->dtype) || lab->dtype == FM_DTYPE_BOOL)
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): labels '%s' must be class "
                        "indices (integers)", n->name, n->op_name, lab->name);
    struct fm_shape m = {0};
    for (int i = 0; i < x->shape.rank; i++) {
        if (i != 1)
            m.dims[m.rank++] = x->shape.dims[i];
    }
    if (!fm_shape_equal(&m, &lab->shape)) {
        char a[128], b[128];
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): labels '%s' are %s, the input "
                        "asks for %s", n->name, n->op_name, lab->name,
                        fm_shape_format(&lab->shape, a, sizeof(a)), fm_shape_format(&m, b, sizeof(b)));
    }
    if (w && (w->shape.rank != 1 || w->shape.dims[0] != x->shape.dims[1]))
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): weights '%s' must be (%lld), "
                        "one per class", n->name, n->op_name, w->name,
                        (long long)x->shape.dims[1]);
    call->out_shape[0] = n->attrs.ints[0] == RED_NONE ? m : (struct fm_shape){0, {0}};
    call->out_dtype[0] = x->dtype;
    if (n->n_out > 1) {
        if (n->op != FM_OP_SOFTMAX_CE_LOSS || n->n_out > 2)
            return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): has %d outputs (the loss, "
                            "and for SoftmaxCrossEntropyLoss log_prob)", n->name, n->op_name,
                            n->n_out);
        call->out_shape[1] = x->shape;
        call->out_dtype[1] = x->dtype;
    }
    return FM_OK;
}

static enum fm_status onnx_loss_cost(struct fm_cost_call *call)
{
    const struct fm_node *n = call->node;
    bool *o = &call->ovf;
    bool sce = n->op == FM_OP_SOFTMAX_CE_LOSS, log_prob = sce && n->n_out > 1;
    bool weights = call->in[2] != NULL, ignore = n->attrs.ints[1] != 0;
    int64_t red = n->attrs.ints[0];
    uint64_t e = fm_cost_numel(call, call->in[0]), m = fm_cost_numel(call, call->in[1]);
    if (e == 0 || m == 0)
        return FM_OK;
    enum fm_phase f = FM_PHASE_FWD;
    if (sce) {
        fm_cost_add(call, f, FM_PRIM_CMP, e - m);
        fm_cost_add(call, f, FM_PRIM_ADD, fm_cadd(o, e, e - m));   /* x - max, sum */
        fm_cost_add(call, f, FM_PRIM_SPECIAL, fm_cadd(o, e, m));   /* exp, log */
        fm_cost_add(call, f, FM_PRIM_ADD, m);                      /* lse = max + log */
        fm_cost_add(call, f, FM_PRIM_ADD, log_prob ? e : m);
    }
    if (weights)
        fm_cost_add(call, f, FM_PRIM_MUL, m);
    if (ignore)
        fm_cost_add(call, f, FM_PRIM_CMP, m);
    if (red != RED_NONE)
        fm_cost_add(call, f, FM_PRIM_ADD, m - 1);
    if (red == RED_MEAN) {
        fm_cost_add(call, f, FM_PRIM_DIV, 1);
        if (weights || ignore)
            fm_cost_add(call, f, FM_PRIM_ADD, m - 1);
    }
    fm_cost_fwd_bytes_default(call);
    if (!call->grad[0])
        return FM_OK;
    enum fm_phase b = fm_cost_grad_phase(call, 0);
    if (weights && red != RED_SUM)
        fm_cost_add(call, b, FM_PRIM_MUL, m);
    if (red == RED_MEAN)
        fm_cost_add(call, b, FM_PRIM_DIV, 1);
    if (ignore)
        fm_cost_add(call, b, FM_PRIM_CMP, m);
    uint64_t bx = fm_cost_bytes(call, call->in[0]);
    fm_cost_read(call, b, fm_cost_bytes(call, call->out[0]));   /* dy */
    fm_cost_read(call, b, fm_cost_bytes(call, call->in[1]));
    fm_cost_read(call, b, fm_cost_bytes(call, call->in[2]));
    call->saved_in_mask |= weights ? 6u : 2u;
    if (sce) {
        if (!log_prob)
            fm_cost_add(call, b, FM_PRIM_ADD, e);                  /* x - lse */
        fm_cost_add(call, b, FM_PRIM_SPECIAL, e);
        fm_cost_add(call, b, FM_PRIM_ADD, m);                      /* minus one-hot */
        if (red != RED_SUM || weights)
            fm_cost_add(call, b, FM_PRIM_MUL, e);
        if (log_prob) {
            call->saved_out_mask |= 2u;
            fm_cost_read(call, b, bx);
        } else {   /* x, and lse per position (fp32) written by the forward */
            call->saved_in_mask |= 1u;
            call->cost->saved_bytes = fm_cmul(o, m, 4);
            fm_cost_write(call, f, call->cost->saved_bytes);
            fm_cost_read(call, b, fm_cadd(o, bx, call->cost->saved_bytes));
        }
    }
    fm_cost_write(call, b, bx);
    return FM_OK;
}

const struct fm_op_desc fm_op_softmax_ce_loss_desc = {2, 3, 0, onnx_loss_shape, onnx_loss_cost};
const struct fm_op_desc fm_op_nll_loss_desc = {2, 3, 1, onnx_loss_shape, onnx_loss_cost};
