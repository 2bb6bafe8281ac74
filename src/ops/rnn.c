/* Recurrent layers as ONNX defines them: LSTM, GRU and RNN (the Elman cell), forward, reverse or
 * bidirectional, over a whole sequence. Class MATMUL: the gate GEMMs are almost all of the work
 * (G*H*(I+H) MACs per step against a few dozen elementwise operations per hidden unit), and
 * they run as GEMMs (cuDNN, oneDNN and ONNX Runtime batch X*W^T over the whole sequence).
 *
 * Notation: T steps, N batch, I input size, H hidden size, D directions (1 or 2), G gates
 * (LSTM 4: i o f c; GRU 3: z r h; RNN 1). S = the rows the cell runs, summed over time steps:
 * the sum of sequence_lens when its values are known (a constant, or bound), N*T otherwise
 * (every batch row assumed full length; the ONNX loader logs it). Every count below is per
 * direction and per row-step (one batch row at one time step) and is multiplied by S*D; MACs
 * are per row-step, elementwise counts per hidden unit and so multiplied by S*D*H.
 *
 * Forward, per row-step (ONNX's equations; X*W^T per step or as one GEMM over the sequence
 * are the same MACs):
 *   GEMMs   X_t*W^T: G*H*I mac; H_{t-1}*R^T: G*H*H mac (also at t = 1, where H_0 may be 0)
 *   per hidden unit: the two products summed: G add; Wb + Rb (when B is given): 2G add;
 *   clip (when given): 2 cmp per gate; the activations f, g, h counted by the function named
 *   (table acts[] below, forward | backward per element)
 *   LSTM:  peepholes P (when given): P_i*C_{t-1}, P_f*C_{t-1}, P_o*C_t: 3 mul + 3 add
 *          3 f (i, f, o) + 1 g (c~) + 1 h (of C_t);
 *          C_t = f*C_{t-1} + i*c~: 2 mul + 1 add;  H_t = o*h(C_t): 1 mul
 *   GRU:   2 f (z, r) + 1 g (h~); H_t = (1 - z)*h~ + z*H_{t-1}: 2 add + 2 mul
 *          linear_before_reset = 0: h~ = g(X W_h^T + (r*H_{t-1}) R_h^T + Rb_h + Wb_h),
 *            r*H_{t-1}: 1 mul before the GEMM;
 *          linear_before_reset = 1 (PyTorch's GRU): h~ = g(X W_h^T + r*(H_{t-1} R_h^T + Rb_h)
 *            + Wb_h), r*(...): 1 mul after the GEMM. The same counts forward (1 mul, and the
 *            same adds: the sum of the two products, Rb_h and Wb_h); they differ backward.
 *   RNN:   1 f
 * Backward (input gradients, bwd_data), per row-step, counted whenever the layer has any
 * gradient to compute: the weight gradients need the gradient through time even when X needs
 * none (the network's input). dA are the gate pre-activation gradients (G*H per row-step).
 *   dH_t = dY_t + (gradient from step t+1): 1 add
 *   LSTM:  h(C_t) recomputed from the kept C_t: forward h; do = dH*h(C_t): 1 mul,
 *          dh = dH*o: 1 mul, its backward h, dC_t += that: 1 add; the gates' backward 3 f + 1 g;
 *          df = dC*C_{t-1}, di = dC*c~, dc~ = dC*i, dC_{t-1} = dC*f: 4 mul;
 *          peepholes: dC_t += dA_o*P_o, dC_{t-1} += dA_i*P_i + dA_f*P_f: 3 mul + 3 add
 *   GRU:   dh~ = dH*(1 - z): 1 add + 1 mul; dz = dH*(H_{t-1} - h~): 1 add + 1 mul;
 *          dH_{t-1} direct = dH*z: 1 mul; backward 2 f + 1 g;
 *          lbr 0: d(rH) = dA_h R_h (part of the recurrent GEMM), dr = d(rH)*H_{t-1}: 1 mul,
 *            dH_{t-1} += d(rH)*r: 1 mul + 1 add, plus the z,r GEMM part: 1 add (2 mul, 2 add);
 *          lbr 1: dr = dA_h*U (U = H_{t-1} R_h^T + Rb_h, kept): 1 mul, dU = dA_h*r: 1 mul,
 *            dH_{t-1} = [dA_z dA_r dU] R + direct: 1 add (2 mul, 1 add)
 *   RNN:   backward f
 *   clip: 2 cmp per gate (the mask of the clipped values)
 *   GEMMs: dH_{t-1} (through time) = dA R: G*H*H mac; dX_t = dA W: G*H*I mac when X needs
 *   a gradient, and with D = 2 the directions' dX summed: S*I add.
 *   The recurrent product runs for every row-step, the first included (cuDNN and PyTorch
 *   return the initial state's gradient whether it is read or not).
 * Weight gradients (bwd_weight), per row-step: dW = dA^T X: G*H*I mac; dR = dA^T H_{t-1}
 *   (GRU lbr 0: the h rows against r*H_{t-1}): G*H*H mac; dB: dWb summed over rows: G*H add,
 *   dRb = dWb (the same sums) except GRU lbr 1, whose dRb_h sums dU: H add more; dP (LSTM):
 *   dP_i = sum dA_i*C_{t-1}, dP_f likewise, dP_o = sum dA_o*C_t: 3 mul + 3 add per hidden unit.
 * Kept for the backward: the gate activations (G*H per row-step; LSTM also C_t, H per
 * row-step; GRU also r*H_{t-1} or U, H per row-step; the RNN's one gate is H_t itself) and the
 * hidden states H_t (Y, when the node writes it; privately otherwise), X (for dW), W, R, P.
 * input_forget (LSTM, coupling i to 1 - f) is counted as the uncoupled cell.
 *
 * onnx-tool counts one time step: its LSTM/GRU/RNN rules take the MACs of the two products
 * for one step, so its count is T times too small (docs/counting.md). */
#include "ops.h"

#include <ctype.h>
#include <string.h>

/* attrs.ints layout (documented in docs/ops.md) */
enum { RI_HIDDEN = 0, RI_DIRECTION, RI_LAYOUT, RI_LBR, RI_FLAGS, RI_ACTS };

/* counts per element of the ONNX activation functions, forward | backward (the backward
 * includes the product with the incoming gradient), in enum fm_prim order:
 * mac, add, mul, div, cmp, special */
static const struct {
    const char *name;
    uint8_t fwd[FM_PRIM_COUNT], bwd[FM_PRIM_COUNT];
} acts[] = {
    [0] = {"", {0}, {0}},
    /* 1/(1+exp(-x)) | dy*y*(1-y) */
    [FM_RNN_ACT_SIGMOID] = {"Sigmoid", {0, 1, 0, 1, 0, 1}, {0, 1, 2, 0, 0, 0}},
    /* tanh(x) | dy*(1-y*y) */
    [FM_RNN_ACT_TANH] = {"Tanh", {0, 0, 0, 0, 0, 1}, {0, 1, 2, 0, 0, 0}},
    /* max(x,0) | dy*(y>0) */
    [FM_RNN_ACT_RELU] = {"Relu", {0, 0, 0, 0, 1, 0}, {0, 0, 0, 0, 1, 0}},
    /* a*x+b | dy*a */
    [FM_RNN_ACT_AFFINE] = {"Affine", {0, 1, 1, 0, 0, 0}, {0, 0, 1, 0, 0, 0}},
    /* x>0 ? x : a*x | dy*(x>0 ? 1 : a) */
    [FM_RNN_ACT_LEAKY_RELU] = {"LeakyRelu", {0, 0, 1, 0, 1, 0}, {0, 0, 1, 0, 1, 0}},
    /* x>a ? x : 0 | dy*(x>a) */
    [FM_RNN_ACT_THRESHOLDED_RELU] = {"ThresholdedRelu", {0, 0, 0, 0, 1, 0}, {0, 0, 0, 0, 1, 0}},
    /* a*tanh(b*x) | dy*(a*b - (b/a)*y*y): y*y, *(b/a), *dy, one sub */
    [FM_RNN_ACT_SCALED_TANH] = {"ScaledTanh", {0, 0, 2, 0, 0, 1}, {0, 1, 3, 0, 0, 0}},
    /* min(max(a*x+b,0),1) | dy*a*(0<a*x+b<1), the window tested on x */
    [FM_RNN_ACT_HARD_SIGMOID] = {"HardSigmoid", {0, 1, 1, 0, 2, 0}, {0, 0, 1, 0, 2, 0}},
    /* x>=0 ? x : a*(exp(x)-1) | x>=0 ? dy : dy*(y+a) */
    [FM_RNN_ACT_ELU] = {"Elu", {0, 1, 1, 0, 1, 1}, {0, 1, 1, 0, 1, 0}},
    /* x/(1+|x|) | dy/((1+|x|)^2): |x|, +1, square, div */
    [FM_RNN_ACT_SOFTSIGN] = {"Softsign", {0, 1, 0, 1, 1, 0}, {0, 1, 1, 1, 1, 0}},
    /* log(exp(x)+1) | dy/(1+exp(-x)) */
    [FM_RNN_ACT_SOFTPLUS] = {"Softplus", {0, 1, 0, 0, 0, 2}, {0, 1, 0, 1, 0, 1}},
};

int fm_rnn_activation(const char *name)
{
    for (int k = 1; k < (int)(sizeof(acts) / sizeof(acts[0])); k++) {
        const char *a = acts[k].name, *b = name;
        while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b)) {
            a++;
            b++;
        }
        if (!*a && !*b)
            return k;
    }
    return 0;
}

const char *fm_rnn_activation_name(int code)
{
    return code > 0 && code < (int)(sizeof(acts) / sizeof(acts[0])) ? acts[code].name : "?";
}

static int gates_of(enum fm_rnn_cell cell)
{
    return cell == FM_RNN_CELL_LSTM ? 4 : cell == FM_RNN_CELL_GRU ? 3 : 1;
}

static const char *cell_name(enum fm_rnn_cell cell)
{
    return cell == FM_RNN_CELL_LSTM ? "LSTM" : cell == FM_RNN_CELL_GRU ? "GRU" : "RNN";
}

int fm_rnn_acts_per_direction(enum fm_rnn_cell cell)
{
    return cell == FM_RNN_CELL_LSTM ? 3 : cell == FM_RNN_CELL_GRU ? 2 : 1;
}

static int64_t attr_int(const struct fm_attrs *a, int i)
{
    return i < a->nints ? a->ints[i] : 0;
}

/* The activation k (0 f, 1 g, 2 h) of direction d: the named one, or ONNX's default. */
static int act_of(const struct fm_attrs *a, enum fm_rnn_cell cell, int d, int k)
{
    int per = fm_rnn_acts_per_direction(cell);
    int code = (int)attr_int(a, RI_ACTS + d * per + k);
    if (code > 0 && code < (int)(sizeof(acts) / sizeof(acts[0])))
        return code;
    if (cell == FM_RNN_CELL_RNN)
        return FM_RNN_ACT_TANH;
    return k == 0 ? FM_RNN_ACT_SIGMOID : FM_RNN_ACT_TANH;
}

/* ---- shape: X, W, R, B?, sequence_lens?, initial_h?, initial_c?, P? ---- */

static long long numel(const struct fm_tensor *t)
{
    uint64_t e = 0;
    return fm_shape_numel(&t->shape, &e) ? -1 : (long long)e;
}

static enum fm_status bad(struct fm_shape_call *call, enum fm_rnn_cell cell, const char *what,
                          long long want, long long got)
{
    return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): %s: expected %lld, got %lld",
                    call->node->name, cell_name(cell), what, want, got);
}

/* state (initial_h/c, Y_h/Y_c) shape: [D, N, H], layout 1 [N, D, H] */
static struct fm_shape state_shape(int64_t layout, int64_t d, int64_t n, int64_t h)
{
    return layout ? (struct fm_shape){3, {n, d, h}} : (struct fm_shape){3, {d, n, h}};
}

enum fm_status fm_rnn_shape(struct fm_shape_call *call, enum fm_rnn_cell cell)
{
    const struct fm_node *n = call->node;
    const struct fm_attrs *a = &n->attrs;
    enum fm_status st = FM_OK;
    for (int i = 0; i < 3 && !st; i++)
        st = fm_shape_expect_rank(call, i, 3, 3);
    if (st)
        return st;
    int64_t layout = attr_int(a, RI_LAYOUT), g = gates_of(cell);
    if (layout != 0 && layout != 1)
        return bad(call, cell, "layout", 0, layout);
    const int64_t *x = call->in[0]->shape.dims, *wd = call->in[1]->shape.dims,
                  *rd = call->in[2]->shape.dims;
    /* W [D, G*H, I] and R [D, G*H, H], or with FM_RNN_W_TRANSPOSED [D, I, G*H], [D, H, G*H] */
    bool tr = attr_int(a, RI_FLAGS) & FM_RNN_W_TRANSPOSED;
    const int64_t w[3] = {wd[0], tr ? wd[2] : wd[1], tr ? wd[1] : wd[2]};
    const int64_t r[3] = {rd[0], tr ? rd[2] : rd[1], tr ? rd[1] : rd[2]};
    int64_t t = layout ? x[1] : x[0], nb = layout ? x[0] : x[1], in = x[2];
    int64_t d = w[0], h = r[2];
    if (d != 1 && d != 2)
        return bad(call, cell, "directions (W's first dim)", 1, d);
    if (a->nints > RI_DIRECTION && (a->ints[RI_DIRECTION] == 2) != (d == 2))
        return bad(call, cell, "directions of the weights for the 'direction' attribute",
                   a->ints[RI_DIRECTION] == 2 ? 2 : 1, d);
    if (attr_int(a, RI_HIDDEN) > 0 && attr_int(a, RI_HIDDEN) != h)
        return bad(call, cell, "hidden_size (R's last dim)", attr_int(a, RI_HIDDEN), h);
    if (w[1] != g * h)
        return bad(call, cell, "W's gates x hidden dim", g * h, w[1]);
    if (w[2] != in)
        return bad(call, cell, "W's input-size dim", in, w[2]);
    if (r[0] != d)
        return bad(call, cell, "R's first dim (directions)", d, r[0]);
    if (r[1] != g * h)
        return bad(call, cell, "R's gates x hidden dim", g * h, r[1]);
    const struct fm_tensor *b = n->n_in > 3 ? call->in[3] : NULL;
    if (b && (b->shape.rank != 2 || b->shape.dims[0] != d || b->shape.dims[1] != 2 * g * h))
        return bad(call, cell, "B's elements ([directions, 2 x gates x hidden])", d * 2 * g * h,
                   numel(b));
    const struct fm_tensor *sl = n->n_in > 4 ? call->in[4] : NULL;
    if (sl) {
        if (sl->shape.rank != 1 || sl->shape.dims[0] != nb)
            return bad(call, cell, "sequence_lens elements (the batch)", nb,
                       numel(sl));
        for (uint64_t k = 0; sl->ivalue && k < sl->nvalue; k++) {
            if (sl->ivalue[k] < 0 || sl->ivalue[k] > t)
                return fm_error(call->ctx, FM_ERR_SHAPE,
                                "layer '%s' (%s): sequence_lens[%llu] = %lld is outside 0..%lld",
                                n->name, cell_name(cell), (unsigned long long)k,
                                (long long)sl->ivalue[k], (long long)t);
        }
    }
    struct fm_shape s = state_shape(layout, d, nb, h);
    for (int i = 5; i < 7 && i < n->n_in; i++) {
        if (call->in[i] && !fm_shape_equal(&call->in[i]->shape, &s))
            return fm_error(call->ctx, FM_ERR_SHAPE,
                            "layer '%s' (%s): %s must be %s [%lld, %lld, %lld]", n->name,
                            cell_name(cell), i == 5 ? "initial_h" : "initial_c",
                            layout ? "[batch, directions, hidden]" : "[directions, batch, hidden]",
                            (long long)s.dims[0], (long long)s.dims[1], (long long)s.dims[2]);
    }
    if (cell != FM_RNN_CELL_LSTM && n->n_in > 6 && call->in[6])
        return fm_error(call->ctx, FM_ERR_SHAPE, "layer '%s' (%s): only LSTM has initial_c",
                        n->name, cell_name(cell));
    const struct fm_tensor *p = n->n_in > 7 ? call->in[7] : NULL;
    if (p && (cell != FM_RNN_CELL_LSTM || p->shape.rank != 2 || p->shape.dims[0] != d ||
              p->shape.dims[1] != 3 * h))
        return bad(call, cell, "P's elements ([directions, 3 x hidden], LSTM only)", d * 3 * h,
                   numel(p));
    int max_out = cell == FM_RNN_CELL_LSTM ? 3 : 2;
    if (n->n_out > max_out)
        return bad(call, cell, "outputs", max_out, n->n_out);
    call->out_shape[0] = layout ? (struct fm_shape){4, {nb, t, d, h}}
                                : (struct fm_shape){4, {t, d, nb, h}};
    for (int o = 1; o < n->n_out; o++)
        call->out_shape[o] = s;
    return FM_OK;
}

/* ---- cost ---- */

static void add_row(uint64_t *acc, const uint8_t *row, uint64_t times)
{
    for (int k = 0; k < FM_PRIM_COUNT; k++)
        acc[k] += row[k] * times;
}

/* Elementwise counts per hidden unit and row-step of direction d: forward, and the backward
 * through time. */
static void cell_counts(const struct fm_attrs *a, enum fm_rnn_cell cell, int d, bool bias,
                        bool peep, uint64_t fwd[FM_PRIM_COUNT], uint64_t bwd[FM_PRIM_COUNT])
{
    uint64_t g = (uint64_t)gates_of(cell);
    bool clip = attr_int(a, RI_FLAGS) & FM_RNN_CLIP, lbr = attr_int(a, RI_LBR) != 0;
    int f = act_of(a, cell, d, 0), gg = act_of(a, cell, d, 1), h = act_of(a, cell, d, 2);
    memset(fwd, 0, sizeof(uint64_t) * FM_PRIM_COUNT);
    memset(bwd, 0, sizeof(uint64_t) * FM_PRIM_COUNT);
    fwd[FM_PRIM_ADD] += g + (bias ? 2 * g : 0);   /* X W^T + H R^T, + Wb + Rb */
    bwd[FM_PRIM_ADD] += 1;                        /* dY_t + the gradient from t+1 */
    if (clip) {
        fwd[FM_PRIM_CMP] += 2 * g;
        bwd[FM_PRIM_CMP] += 2 * g;
    }
    switch (cell) {
    case FM_RNN_CELL_LSTM:
        add_row(fwd, acts[f].fwd, 3);
        add_row(fwd, acts[gg].fwd, 1);
        add_row(fwd, acts[h].fwd, 1);
        fwd[FM_PRIM_MUL] += 3;   /* f*C_{t-1}, i*c~, o*h(C_t) */
        fwd[FM_PRIM_ADD] += 1;   /* C_t */
        add_row(bwd, acts[h].fwd, 1);   /* h(C_t) recomputed */
        add_row(bwd, acts[h].bwd, 1);
        add_row(bwd, acts[f].bwd, 3);
        add_row(bwd, acts[gg].bwd, 1);
        bwd[FM_PRIM_MUL] += 2 + 4;   /* do, dh; df, di, dc~, dC_{t-1} */
        bwd[FM_PRIM_ADD] += 1;       /* dC_t += dh backward */
        if (peep) {
            fwd[FM_PRIM_MUL] += 3;
            fwd[FM_PRIM_ADD] += 3;
            bwd[FM_PRIM_MUL] += 3;
            bwd[FM_PRIM_ADD] += 3;
        }
        break;
    case FM_RNN_CELL_GRU:
        add_row(fwd, acts[f].fwd, 2);
        add_row(fwd, acts[gg].fwd, 1);
        fwd[FM_PRIM_MUL] += 1 + 2;   /* r*H_{t-1} or r*(H R_h^T + Rb_h); (1-z)*h~, z*H_{t-1} */
        fwd[FM_PRIM_ADD] += 2;       /* 1 - z, the sum */
        add_row(bwd, acts[f].bwd, 2);
        add_row(bwd, acts[gg].bwd, 1);
        bwd[FM_PRIM_MUL] += 3;       /* dh~, dz, the direct dH_{t-1} */
        bwd[FM_PRIM_ADD] += 2;       /* 1 - z, H_{t-1} - h~ */
        bwd[FM_PRIM_MUL] += 2;       /* dr, and d(rH)*r or dU */
        bwd[FM_PRIM_ADD] += lbr ? 1 : 2;
        break;
    case FM_RNN_CELL_RNN:
        add_row(fwd, acts[f].fwd, 1);
        add_row(bwd, acts[f].bwd, 1);
        break;
    }
}

uint64_t fm_rnn_rows(bool *ovf, const struct fm_tensor *x, const struct fm_tensor *seq_lens,
                     int64_t layout, bool *known)
{
    const int64_t *dims = x->shape.dims;
    uint64_t t = (uint64_t)(layout ? dims[1] : dims[0]), nb = (uint64_t)(layout ? dims[0] : dims[1]);
    *known = false;
    if (seq_lens && seq_lens->ivalue && seq_lens->nvalue == nb) {
        uint64_t s = 0;
        for (uint64_t k = 0; k < nb; k++) {   /* each clamped to 0..T, as the shape rule asks */
            int64_t len = seq_lens->ivalue[k];
            s = fm_cadd(ovf, s, len < 0 ? 0 : (uint64_t)len > t ? t : (uint64_t)len);
        }
        *known = true;
        return s;
    }
    return fm_cmul(ovf, nb, t);
}

enum fm_status fm_rnn_cost(struct fm_cost_call *call, enum fm_rnn_cell cell)
{
    const struct fm_node *n = call->node;
    const struct fm_attrs *a = &n->attrs;
    bool *o = &call->ovf;
    const struct fm_tensor *x = call->in[0];
    const struct fm_tensor *in_b = n->n_in > 3 ? call->in[3] : NULL;
    const struct fm_tensor *seq = n->n_in > 4 ? call->in[4] : NULL;
    const struct fm_tensor *p = cell == FM_RNN_CELL_LSTM && n->n_in > 7 ? call->in[7] : NULL;
    int64_t layout = attr_int(a, RI_LAYOUT);
    bool tr = attr_int(a, RI_FLAGS) & FM_RNN_W_TRANSPOSED;
    uint64_t d = (uint64_t)call->in[1]->shape.dims[0];
    uint64_t h = (uint64_t)call->in[2]->shape.dims[tr ? 1 : 2];
    uint64_t in = (uint64_t)x->shape.dims[2], g = (uint64_t)gates_of(cell);
    bool known;
    uint64_t s = fm_rnn_rows(o, x, seq, layout, &known);
    uint64_t sd = fm_cmul(o, s, d), sdh = fm_cmul(o, sd, h);
    uint64_t mac_x = fm_cmul3(o, sd, g * h, in), mac_h = fm_cmul3(o, sd, g * h, h);

    /* forward */
    fm_cost_add(call, FM_PHASE_FWD, FM_PRIM_MAC, fm_cadd(o, mac_x, mac_h));
    uint64_t bwd_el[FM_PRIM_COUNT] = {0};
    for (uint64_t k = 0; k < d; k++) {
        uint64_t fe[FM_PRIM_COUNT], be[FM_PRIM_COUNT];
        cell_counts(a, cell, (int)k, in_b != NULL, p != NULL, fe, be);
        for (int q = 0; q < FM_PRIM_COUNT; q++) {
            fm_cost_add(call, FM_PHASE_FWD, (enum fm_prim)q, fm_cmul3(o, s, h, fe[q]));
            bwd_el[q] += be[q];
        }
    }
    for (int i = 0; i < n->n_in; i++)
        fm_cost_read(call, FM_PHASE_FWD, fm_cost_bytes(call, call->in[i]));
    for (int i = (attr_int(a, RI_FLAGS) & FM_RNN_NO_Y) ? 1 : 0; i < n->n_out; i++)
        fm_cost_write(call, FM_PHASE_FWD, fm_cost_bytes(call, call->out[i]));   /* Y omitted */
    bool any = false;
    for (int i = 0; i < n->n_in; i++)
        any = any || call->grad[i];
    if (!any)
        return FM_OK;

    /* kept: gate activations, LSTM's C_t or GRU's r*H_{t-1} / U, H_t when Y is not written */
    bool y_kept = n->n_out > 0 && !(attr_int(a, RI_FLAGS) & FM_RNN_NO_Y);
    uint64_t per = cell == FM_RNN_CELL_RNN ? 0 : g + 1;
    if (!y_kept)
        per += 1;
    uint64_t saved = fm_cmul3(o, sdh, per, fm_dtype_size(x->dtype));
    call->cost->saved_bytes = saved;
    fm_cost_write(call, FM_PHASE_FWD, saved);
    if (y_kept)
        call->saved_out_mask |= 1u;
    call->saved_in_mask |= 1u << 2;   /* R */
    if (call->grad[0])
        call->saved_in_mask |= 1u << 1;
    if (call->grad[1] || call->grad[2])
        call->saved_in_mask |= 1u << 0;
    if (p)
        call->saved_in_mask |= 1u << 7;
    for (int i = 5; i < 7 && i < n->n_in; i++) {
        if (call->in[i])
            call->saved_in_mask |= 1u << i;
    }

    /* through time (bwd_data whenever any gradient is computed) */
    for (int q = 0; q < FM_PRIM_COUNT; q++)
        fm_cost_add(call, FM_PHASE_BWD_DATA, (enum fm_prim)q, fm_cmul3(o, s, h, bwd_el[q]));
    fm_cost_add(call, FM_PHASE_BWD_DATA, FM_PRIM_MAC, mac_h);
    fm_cost_read(call, FM_PHASE_BWD_DATA, saved);
    if (call->grad[0]) {
        enum fm_phase ph = fm_cost_grad_phase(call, 0);
        fm_cost_add(call, ph, FM_PRIM_MAC, mac_x);
        if (d > 1)
            fm_cost_add(call, ph, FM_PRIM_ADD, fm_cmul3(o, s, d - 1, in));
    }
    if (call->grad[1])
        fm_cost_add(call, fm_cost_grad_phase(call, 1), FM_PRIM_MAC, mac_x);
    if (call->grad[2])
        fm_cost_add(call, fm_cost_grad_phase(call, 2), FM_PRIM_MAC, mac_h);
    if (in_b && call->grad[3]) {
        bool lbr = cell == FM_RNN_CELL_GRU && attr_int(a, RI_LBR);
        fm_cost_add(call, fm_cost_grad_phase(call, 3), FM_PRIM_ADD,
                    fm_cmul(o, sdh, g + (lbr ? 1 : 0)));
    }
    if (p && call->grad[7]) {
        fm_cost_add(call, fm_cost_grad_phase(call, 7), FM_PRIM_MUL, fm_cmul(o, sdh, 3));
        fm_cost_add(call, fm_cost_grad_phase(call, 7), FM_PRIM_ADD, fm_cmul(o, sdh, 3));
    }
    fm_cost_bwd_bytes_default(call);
    return FM_OK;
}

#define RNN_DESC(ID, cell)                                                                 \
    static enum fm_status ID##_shape(struct fm_shape_call *call)                           \
    {                                                                                      \
        return fm_rnn_shape(call, cell);                                                   \
    }                                                                                      \
    static enum fm_status ID##_cost(struct fm_cost_call *call)                             \
    {                                                                                      \
        return fm_rnn_cost(call, cell);                                                    \
    }                                                                                      \
    const struct fm_op_desc fm_op_##ID##_desc = {3, 8, 0, ID##_shape, ID##_cost};

RNN_DESC(lstm, FM_RNN_CELL_LSTM)
RNN_DESC(gru, FM_RNN_CELL_GRU)
RNN_DESC(rnn, FM_RNN_CELL_RNN)
