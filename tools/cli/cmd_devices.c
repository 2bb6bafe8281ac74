/* flopmeter devices and flopmeter device NAME: the device table (built-ins and the user's files)
 * and one device with every figure's source. The table and its rendering are the library's. */
#include "cli.h"

static const char devices_description[] =
    "Lists the devices flopmeter knows: dense peak FLOP/s per precision (no 2:4 sparsity),\n"
    "memory bandwidth and size, and the ridge point (peak / bandwidth, FLOP/byte) where a\n"
    "layer stops being memory-bound. Peaks are TFLOP/s (int8: TOPS). A '?' marks a figure the\n"
    "sources could not confirm; 'v' an fp16 figure of the vector units (no tensor cores).\n"
    "Entries from your device files are marked '*' (see docs/devices.md for the file format).\n\n"
    "csv: one row per device, every figure in base units (FLOP/s, bytes, bytes/s).\n"
    "json: a device file (flopmeter devices --format json > mine.json, edit, --devices "
    "mine.json).\n\n"
    "examples:\n"
    "  flopmeter devices\n"
    "  flopmeter devices --devices my_gpus.json --format csv";

static const char device_description[] =
    "Shows one device: every figure with its source, each ceiling with its ridge point, and\n"
    "which ceiling flopmeter applies per precision to conv/matmul/attention (tensor cores when\n"
    "the device has them) and to every other op (vector units).\n\n"
    "examples:\n"
    "  flopmeter device h100\n"
    "  flopmeter device 'A100 SXM 80GB' --format json";

/* devices (no positional argument) or device NAME */
static int show(struct cli_run *run, int argc, char **argv, bool one)
{
    const char *devices_file = NULL;
    enum fm_format format = FM_FORMAT_TABLE;
    struct cli_opt opts[] = {
        {"devices", CLI_STRING, &devices_file, NULL, "FILE",
         "add or override devices from a JSON file (docs/devices.md); also read: "
         "$FLOPMETER_DEVICES, $XDG_CONFIG_HOME/flopmeter/devices.json", NULL, NULL},
        {"format", CLI_PARSED, &format, cli_parse_format, "table|csv|json",
         one ? "output format (default table; json is a device file)"
             : "output format (default table)", NULL, NULL},
        {0},
    };
    const char *pos[1];
    int r = one ? cli_parse("device", "NAME [options]", device_description, opts, argc, argv, pos,
                            1, 1)
                : cli_parse("devices", "[options]", devices_description, opts, argc, argv, pos, 0,
                            0);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    struct fm_ctx *ctx = run->ctx;
    struct fm_devices *devs = NULL;
    const struct fm_device *dev = NULL;
    enum fm_status st = fm_devices_load(ctx, devices_file, &devs);
    if (!st && one)
        st = fm_devices_find(ctx, devs, pos[0], &dev);
    if (st) {
        /* an unknown name is a bad argument */
        r = st == FM_ERR_NOT_FOUND ? (cli_fail(ctx, st), FM_EXIT_USAGE) : cli_fail(ctx, st);
        goto out;
    }
    struct fm_report_opts ro;
    fm_report_opts_init(&ro);
    ro.format = format;
    if (one)
        run->status = fm_report_device(cli_out(run), dev, &ro);
    else
        run->status = fm_report_devices(cli_out(run), devs, &ro);
out:
    fm_devices_free(devs);
    return r;
}

int cmd_devices(struct cli_run *run, int argc, char **argv)
{
    return show(run, argc, argv, false);
}

int cmd_device(struct cli_run *run, int argc, char **argv)
{
    return show(run, argc, argv, true);
}
