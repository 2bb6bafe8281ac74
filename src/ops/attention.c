/* Scaled dot-product attention, Q (B,H,Sq,D), K (B,H,Sk,D), V (B,H,Sk,Dv) -> (B,H,Sq,Dv),
 * counted as the math (unfused) algorithm with P = B*H*Sq*Sk score elements:
 *   S = Q K^T          P*D mac           scale: P mul      causal mask: P cmp
 *   A = softmax(S)     P - B*H*Sq cmp, 2P - B*H*Sq add, P special, P div
 *   O = A V            P*Dv mac
 * Backward (A kept): dV = A^T dO (P*Dv mac); dA = dO V^T (P*Dv mac); dS = A*(dA - rowsum(dA*A))
 * (2P mul, 2P - B*H*Sq add) and the scale (P mul); dQ = dS K (P*D mac); dK = dS^T Q (P*D mac).
 * Backward MACs are therefore 2x forward. PyTorch's FlopCounterMode counts 2.5x (it includes the
 * recomputation of S in the flash-attention backward); flopmeter counts the math algorithm.
 * The causal mask does not halve the count: dense kernels compute the masked half. An optional
 * fourth input, a mask broadcast to the scores, costs P adds (float, additive) or P selects
 * (bool); a learned one (a position bias) gets its gradient by summing dS to its shape.
 * A soft-cap c (Gemma 2: S = c * tanh(S / c), before the mask) costs P div, P special, P mul
 * forward, keeps tanh's output (P elements) and costs P div, 3P mul and P add backward, as
 * PyTorch's autograd runs the three ops (mul's, tanh's 1 - t*t, div's gradients).
 * Bytes: Q, K, V read and O written; in training also A (P elements) written, to be read by
 * the backward. */
#include "ops.h"

static enum fm_status attention_shape(struct fm_shape_call *call)
{
    const struct fm_node *n = call->node;
    for (int i = 0; i < 3; i++) {
        enum fm_status st = fm_shape_expect_rank(call, i, 4, 4);
        if (st)
            return st;
    }
    const int64_t *q = call->in[0]->shape.dims, *k = call->in[1]->shape.dims,
                  *v = call->in[2]->shape.dims;
    if (q[0] != k[0] || q[0] != v[0] || q[1] != k[1] || q[1] != v[1] || q[3] != k[3] ||
        k[2] != v[2])
        return fm_error(call->ctx, FM_ERR_SHAPE,
                        "layer '%s' (Attention): Q, K, V shapes disagree (expected (B,H,Sq,D), "
                        "(B,H,Sk,D), (B,H,Sk,Dv))",
                        n->name);
    if (n->n_in > 3 && call->in[3]) {   /* the mask must broadcast to the scores */
        struct fm_shape scores = {4, {q[0], q[1], q[2], k[2]}}, r;
        enum fm_status st = fm_shape_broadcast(call->ctx, n, &call->in[3]->shape, &scores, &r);
        if (st)
            return st;
        if (!fm_shape_equal(&r, &scores))
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (Attention): the mask does not broadcast to the "
                            "(B,H,Sq,Sk) scores",
                            n->name);
    }
    call->out_shape[0] = (struct fm_shape){4, {q[0], q[1], q[2], v[3]}};
    return FM_OK;
}

static enum fm_status attention_cost(struct fm_cost_call *call)
{
    const int64_t *q = call->in[0]->shape.dims, *k = call->in[1]->shape.dims,
                  *v = call->in[2]->shape.dims;
    bool *o = &call->ovf;
    uint64_t rows = fm_cmul3(o, (uint64_t)q[0], (uint64_t)q[1], (uint64_t)q[2]);
    uint64_t p = fm_cmul(o, rows, (uint64_t)k[2]);
    uint64_t mac_qk = fm_cmul(o, p, (uint64_t)q[3]);
    uint64_t mac_av = fm_cmul(o, p, (uint64_t)v[3]);
    bool causal = call->node->attrs.flags & FM_ATTR_CAUSAL;

    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MAC, fm_cadd(o, mac_qk, mac_av));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, p);
    double cap = call->node->attrs.softcap;
    if (cap > 0) {   /* c * tanh(S / c) */
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, p);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, p);
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MUL, p);
    }
    if (causal)
        fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, p);
    const struct fm_tensor *mask = call->node->n_in > 3 ? call->in[3] : NULL;
    if (mask)   /* an additive float mask: one add per score; a boolean mask: one select */
        fm_cost_add(call, FM_PHASE_FWD, fm_dtype_is_float(mask->dtype) ? FM_PRIM_ADD : FM_PRIM_CMP,
                    p);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_CMP, p - rows);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_ADD, fm_cadd(o, p, p - rows));
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_SPECIAL, p);
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_DIV, p);
    fm_cost_fwd_bytes_default(call);

    bool gq = call->grad[0], gk = call->grad[1], gv = call->grad[2];
    if (mask && call->grad[3]) {   /* a learned additive mask (a bias): dS summed to its shape */
        uint64_t own = fm_cost_numel(call, mask);
        if (p > own)
            fm_cost_add(call, fm_cost_grad_phase(call, 3), FM_PRIM_ADD, p - own);
        fm_cost_write(call, fm_cost_grad_phase(call, 3), fm_cost_bytes(call, mask));
    }
    if (!(gq || gk || gv))
        return FM_OK;
    uint64_t bo = fm_cost_bytes(call, call->out[0]);
    uint64_t ba = fm_cmul(o, p, fm_dtype_size(call->out[0]->dtype));
    call->saved_in_mask |= 7u;
    /* the attention matrix A (and a soft-cap's tanh), written for the backward */
    uint64_t kept = cap > 0 ? fm_cmul(o, ba, 2) : ba;
    call->cost->saved_bytes = kept;
    fm_cost_write(call, FM_PHASE_FWD, kept);
    if (gv) {
        enum fm_phase ph = fm_cost_grad_phase(call, 2);
        fm_cost_add(call, ph, FM_PRIM_MAC, mac_av);
        fm_cost_read(call, ph, ba);
        fm_cost_read(call, ph, bo);
        fm_cost_write(call, ph, fm_cost_bytes(call, call->in[2]));
    }
    if (gq || gk) {
        enum fm_phase ph = fm_cost_grad_phase(call, gq ? 0 : 1);
        fm_cost_add(call, ph, FM_PRIM_MAC, mac_av);             /* dA = dO V^T */
        fm_cost_add(call, ph, FM_PRIM_MUL, fm_cmul(o, 3, p));   /* softmax backward + scale */
        fm_cost_add(call, ph, FM_PRIM_ADD, fm_cadd(o, p, p - rows));
        if (cap > 0) {   /* through * c, tanh (1 - t*t) and / c */
            fm_cost_add(call, ph, FM_PRIM_MUL, fm_cmul(o, 3, p));
            fm_cost_add(call, ph, FM_PRIM_ADD, p);
            fm_cost_add(call, ph, FM_PRIM_DIV, p);
            fm_cost_read(call, ph, ba);
        }
        fm_cost_read(call, ph, bo);
        fm_cost_read(call, ph, fm_cost_bytes(call, call->in[2]));
        fm_cost_read(call, ph, ba);
        if (gq) {
            enum fm_phase phq = fm_cost_grad_phase(call, 0);
            fm_cost_add(call, phq, FM_PRIM_MAC, mac_qk);
            fm_cost_read(call, phq, fm_cost_bytes(call, call->in[1]));
            fm_cost_write(call, phq, fm_cost_bytes(call, call->in[0]));
        }
        if (gk) {
            enum fm_phase phk = fm_cost_grad_phase(call, 1);
            fm_cost_add(call, phk, FM_PRIM_MAC, mac_qk);
            fm_cost_read(call, phk, fm_cost_bytes(call, call->in[0]));
            fm_cost_write(call, phk, fm_cost_bytes(call, call->in[1]));
        }
    }
    return FM_OK;
}

const struct fm_op_desc fm_op_attention_desc = {3, 4, 1, attention_shape, attention_cost};
