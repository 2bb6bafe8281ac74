/* The built-in architectures: name, family, default input, parameters (counted, not copied from
 * a table) and a description, one line each. */
#include "report.h"

#include <string.h>

enum fm_status fm_report_models(FILE *f, struct fm_ctx *ctx, const struct fm_report_opts *opts)
{
    (void)opts;
    fprintf(f, "%-20s %-13s %-10s %12s  %s\n", "model", "family", "input", "params",
            "description");
    for (size_t i = 0; i < fm_zoo_count(); i++) {
        const struct fm_zoo_entry *e = fm_zoo_get(i);
        struct fm_zoo_opts zo;
        fm_zoo_opts_init(&zo);
        struct fm_graph *g = NULL;
        struct fm_counts *c = NULL;
        struct fm_count_opts co;
        fm_count_opts_init(&co);
        co.mode = FM_MODE_INFER;
        char params[32] = "?";
        if (fm_zoo_build(ctx, e->name, &zo, &g) == FM_OK && fm_count(ctx, g, &co, &c) == FM_OK)
            snprintf(params, sizeof(params), "%llu", (unsigned long long)c->params);
        char input[32];
        snprintf(input, sizeof(input), "3x%lldx%lld", (long long)e->default_hw,
                 (long long)e->default_hw);
        fprintf(f, "%-20s %-13s %-10s %12s  %s\n", e->name, e->family, input, params,
                e->description);
        fm_counts_free(c);
        fm_graph_free(g);
    }
    return ferror(f) ? FM_ERR_IO : FM_OK;
}
