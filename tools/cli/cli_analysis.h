/* Pieces the device and analysis commands (devices, device, roofline, predict, utilization)
 * share: the --device/--devices/--precision/PPP options declared as data, opening the device
 * table, turning the options into fm_predict_opts, and printing times and rates. */
#ifndef FM_CLI_ANALYSIS_H
#define FM_CLI_ANALYSIS_H

#include "cli.h"

#define CLI_PRECISION_CHOICES "fp64|fp32|tf32|fp16|bf16|fp8|int8|torch-default"
enum { CLI_PRECISION_TORCH_DEFAULT = FM_PREC_COUNT };

struct cli_analysis_opts {
    const char *device;
    const char *devices_file;
    int precision;               /* enum fm_precision, or CLI_PRECISION_TORCH_DEFAULT */
    bool precision_given;
    double ppp_compute, ppp_memory, ppp_comm;
    double launch_us;
};

/* What cli_analysis_opts_declare declares besides --devices. */
enum {
    CLI_AN_DEVICE = 1u << 3,      /* --device NAME */
    CLI_AN_PRECISION = 1u << 0,
    CLI_AN_PPP = 1u << 1,         /* --ppp-compute, --ppp-memory, --launch-overhead-us */
    CLI_AN_COMM = 1u << 2         /* --ppp-comm */
};
#define CLI_ANALYSIS_OPTS_MAX 8
int cli_analysis_opts_declare(struct cli_analysis_opts *a, struct cli_opt *out, unsigned what);

/* Loads the device table (built-ins, $FLOPMETER_DEVICES, the XDG file, --devices FILE); prints
 * the error and returns an exit code on failure. */
int cli_devices_open(struct fm_ctx *ctx, const char *file, struct fm_devices **out);
/* Finds --device in devs and fills po (the precision defaults to the model's storage dtype).
 * Prints the error and returns an exit code on failure. */
int cli_analysis_setup(struct fm_ctx *ctx, const struct cli_analysis_opts *a,
                       const struct cli_model_opts *m, const struct fm_devices *devs,
                       const struct fm_device **dev, struct fm_predict_opts *po);
/* "torch-default" or the precision's name. */
const char *cli_precision_label(const struct fm_predict_opts *po);

#endif
