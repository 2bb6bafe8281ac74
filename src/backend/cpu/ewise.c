/* Placeholder until the op family lands: elementwise. */
#include "cpu.h"

enum fm_status fm_cpu_ewise_check(struct fm_ctx *ctx, const struct fm_graph *g,
                                   const struct fm_node *n)
{
    (void)g;
    return fm_error(ctx, FM_ERR_UNSUPPORTED, "layer '%s': op %s is not yet implemented on the CPU backend",
                    n->name, n->op_name);
}

enum fm_status fm_cpu_ewise_fwd(struct fm_cpu *s, fm_nid id)
{
    (void)id;
    return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "not yet implemented");
}

enum fm_status fm_cpu_ewise_bwd(struct fm_cpu *s, fm_nid id)
{
    (void)id;
    return fm_error(s->ctx, FM_ERR_UNSUPPORTED, "not yet implemented");
}
