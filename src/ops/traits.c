/* What an op is, as the layers above ask it of a node in its graph: whether a Gemm is a Linear
 * layer (both backends lower one as a single primitive), and what kind of op a node is for the
 * time model (calibration keys its fits by it). Here, not in the family files, because these
 * read the node's neighbours in the graph, and a family file is what the graph itself calls
 * (its shape rules): the layering check would see a circle. */
#include "ops.h"

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
