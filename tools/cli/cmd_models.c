/* flopmeter models: the built-in architectures with their default input and parameter count. */
#include "cli.h"

int cmd_models(int argc, char **argv)
{
    const char *pos[1];
    struct cli_opt opts[] = {{0}};
    int r = cli_parse("models", "", "Lists the built-in architectures (torchvision definitions).\n"
                      "Any of them is a MODEL for count, roofline, predict and measure.",
                      opts, argc, argv, pos, 0, 0);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    struct fm_ctx *ctx = cli_ctx("models");
    if (!ctx)
        return FM_EXIT_FAIL;
    fm_report_models(stdout, ctx, NULL);
    fm_ctx_free(ctx);
    return cli_flush(FM_EXIT_OK);
}
