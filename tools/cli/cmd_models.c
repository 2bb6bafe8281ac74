/* flopmeter models: the built-in architectures with their default input and parameter count. */
#include "cli.h"

int cmd_models(struct cli_run *run, int argc, char **argv)
{
    const char *pos[1];
    enum fm_format format = FM_FORMAT_TABLE;
    struct cli_opt opts[] = {
        {"format", CLI_PARSED, &format, cli_parse_format, "table|csv|json",
         "output format (default table; csv and json print exact integers)", NULL, NULL},
        {0}};
    int r = cli_parse("models", "[--format table|csv|json]",
                      "Lists the built-in architectures (torchvision definitions) and language\n"
                      "models (HuggingFace configs, docs/zoo.md) with their default input,\n"
                      "parameters, and the forward pass's MACs and FLOPs at batch 1 (counted;\n"
                      "FLOPs = 2 x MACs + other ops). Any of them is a MODEL for count,\n"
                      "roofline, predict and measure.",
                      opts, argc, argv, pos, 0, 0);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    struct fm_ctx *ctx = run->ctx;
    struct fm_report_opts ro;
    fm_report_opts_init(&ro);
    ro.format = format;
    run->status = fm_report_models(cli_out(run), ctx, &ro);
    return FM_EXIT_OK;
}
