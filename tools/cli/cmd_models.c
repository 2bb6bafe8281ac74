/* flopmeter models: the built-in architectures with their default input and parameter count. */
#include "cli.h"

#include <string.h>

int cmd_models(int argc, char **argv)
{
    const char *pos[1];
    struct cli_opt opts[] = {{0}};
    int r = cli_parse("models", "", "Lists the built-in architectures (torchvision definitions).\n"
                      "Any of them is a MODEL for count, roofline, predict and measure.",
                      opts, argc, argv, pos, 0, 0);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    struct fm_ctx *ctx = NULL;
    if (fm_ctx_new(NULL, &ctx))
        return FM_EXIT_FAIL;
    printf("%-20s %-13s %-10s %12s  %s\n", "model", "family", "input", "params", "description");
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
        printf("%-20s %-13s %-10s %12s  %s\n", e->name, e->family, input, params, e->description);
        fm_counts_free(c);
        fm_graph_free(g);
    }
    fm_ctx_free(ctx);
    return FM_EXIT_OK;
}
