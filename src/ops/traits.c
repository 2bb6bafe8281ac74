/* What an op is, as the layers above ask it of a node in its graph: whether a Gemm is a Linear
 * layer (both backends lower one as a single primitive), and what kind of op a node is for the
 * time model (calibration keys its fits by it). Here, not in the family files, because these
 * read the node's neighbours in the graph, and a family file is what the graph itself calls
 * (its shape rules): the layering check would see a circle. */
#include "ops.h"

#include <stdio.h>

bool fm_op_linear_form(const struct fm_graph *g, const struct fm_node *n)
{
    if (n->op == FM_OP_LINEAR)
        return true;
    if (n->op != FM_OP_GEMM)
        return false;
    const struct fm_attrs *a = &n->attrs;
    bool bias_vector = n->n_in < 3 || n->in[2] == FM_NONE ||
                       fm_graph_tensor(g, n->in[2])->shape.rank == 1;
    return !(a->flags & FM_ATTR_TRANS_A) && (a->flags & FM_ATTR_TRANS_B) && a->alpha == 1.0 &&
           a->beta == 1.0 && bias_vector;
}

/* ---- kinds ---- */

static const char *const conv_kinds[FM_CONV_KIND_COUNT] = {
    [FM_CONV_DENSE] = "dense", [FM_CONV_POINTWISE] = "pointwise",
    [FM_CONV_DEPTHWISE] = "depthwise", [FM_CONV_GROUPED] = "grouped"};

const char *fm_conv_kind_name(enum fm_conv_kind k)
{
    return (unsigned)k < FM_CONV_KIND_COUNT ? conv_kinds[k] : NULL;
}

/* Elements of t, or -1 when its shape is not known. */
static double elements(const struct fm_tensor *t)
{
    if (!t || !t->shape_known)
        return -1;
    double e = 1;
    for (int d = 0; d < t->shape.rank; d++)
        e *= (double)t->shape.dims[d];
    return e;
}

/* Whether binary elementwise node n has an operand smaller than its output that takes a
 * gradient in training (an activation, or a trainable parameter): its backward reduces. */
static bool reduces_broadcast(const struct fm_graph *g, const struct fm_node *n)
{
    if ((n->op != FM_OP_ADD && n->op != FM_OP_SUB && n->op != FM_OP_MUL && n->op != FM_OP_DIV) ||
        n->n_in != 2 || n->n_out < 1)
        return false;
    double out = elements(fm_graph_tensor(g, n->out[0]));
    for (int i = 0; i < 2; i++) {
        const struct fm_tensor *t = fm_graph_tensor(g, n->in[i]);
        double e = elements(t);
        bool grad = t && (t->producer != FM_NONE || (t->role == FM_ROLE_PARAM && t->trainable));
        if (grad && e >= 0 && out >= 0 && e < out)
            return true;
    }
    return false;
}

void fm_op_kind(const struct fm_graph *graph, fm_nid node, char *kind, size_t size)
{
    if (!size)
        return;
    kind[0] = '\0';
    const struct fm_node *n = graph ? fm_graph_node(graph, node) : NULL;
    if (!n)
        return;
    if (n->op != FM_OP_CONV && n->op != FM_OP_CONV_TRANSPOSE) {
        /* the op itself (BatchNorm and LayerNorm, ReLU and GELU cost differently per byte). A
         * binary op whose broadcast operand takes a gradient (a bias, a per-channel scale, a
         * squeeze-excitation gate) reduces that gradient over the broadcast dims: a kind of its
         * own, 2-4 times dearer per byte than the same op on two whole tensors (GELU's and
         * SiLU's products) */
        const char *name = n->op == FM_OP_UNKNOWN ? "" : fm_op_name(n->op);
        snprintf(kind, size, "%s%s", name ? name : "", reduces_broadcast(graph, n) ? "_bcast" : "");
        return;
    }
    const struct fm_tensor *x = n->n_in > 0 ? fm_graph_tensor(graph, n->in[0]) : NULL;
    const struct fm_tensor *w = n->n_in > 1 ? fm_graph_tensor(graph, n->in[1]) : NULL;
    bool w_known = w && w->shape_known && w->shape.rank >= 3;
    int64_t groups = n->attrs.groups;
    /* input channels: the input's, else what the weight implies (conv: (Cout, Cin/g, ...),
     * transposed: (Cin, Cout/g, ...)) */
    int64_t cin = -1;
    if (x && x->shape_known && x->shape.rank >= 2)
        cin = x->shape.dims[1];
    else if (w_known)
        cin = n->op == FM_OP_CONV ? w->shape.dims[1] * groups : w->shape.dims[0];
    if (groups > 1) {
        enum fm_conv_kind k = groups == cin ? FM_CONV_DEPTHWISE : FM_CONV_GROUPED;
        snprintf(kind, size, "%s", conv_kinds[k]);
        return;
    }
    /* the window: the weight's trailing dims (what the shape rule uses), else the attribute */
    bool one_by_one = true;
    if (w_known) {
        for (int d = 2; d < w->shape.rank; d++)
            one_by_one = one_by_one && w->shape.dims[d] == 1;
    } else {
        one_by_one = n->attrs.kernel[0] == 1 && n->attrs.kernel[1] == 1 &&
                     n->attrs.kernel_d == 1;
    }
    snprintf(kind, size, "%s", conv_kinds[one_by_one ? FM_CONV_POINTWISE : FM_CONV_DENSE]);
}
