/* Shared options and helpers of the device and analysis commands (see cli_analysis.h). */
#include "cli_analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int cli_analysis_opts_declare(struct cli_analysis_opts *a, struct cli_opt *out, unsigned what)
{
    struct fm_predict_opts defaults;
    fm_predict_opts_init(&defaults);
    memset(a, 0, sizeof(*a));
    a->precision = FM_PREC_FP32;
    a->ppp_compute = defaults.ppp_compute;
    a->ppp_memory = defaults.ppp_memory;
    a->ppp_comm = defaults.ppp_comm;
    a->launch_us = defaults.launch_overhead_us;
    int n = 0;
    if (what & CLI_AN_DEVICE)
        out[n++] = (struct cli_opt){"device", CLI_STRING, &a->device, NULL, "NAME",
                                "device name or alias (flopmeter devices lists them): a100, "
                                "h100, v100, k80 ...",
                                NULL, NULL};
    out[n++] = (struct cli_opt){"devices", CLI_STRING, &a->devices_file, NULL, "FILE",
                                "add or override devices from a JSON file (docs/devices.md); "
                                "also read: $FLOPMETER_DEVICES, "
                                "$XDG_CONFIG_HOME/flopmeter/devices.json",
                                NULL, NULL};
    if (what & CLI_AN_PRECISION)
        out[n++] = (struct cli_opt){"precision", CLI_CHOICE, &a->precision,
                                    CLI_PRECISION_CHOICES, NULL,
                                    "compute precision: picks the ceiling (default: the storage "
                                    "--dtype). Tensor-core ceilings apply only to conv, matmul "
                                    "and attention. torch-default = PyTorch on Ampere+: fp32 "
                                    "convs on TF32, fp32 matmuls on FP32",
                                    NULL, &a->precision_given};
    if (what & CLI_AN_PPP) {
        out[n++] = (struct cli_opt){"ppp-compute", CLI_DOUBLE, &a->ppp_compute, NULL, "X",
                                    "platform percent of peak for compute, 0 < X <= 1 (default "
                                    "0.62, PALEO)",
                                    NULL, NULL};
        out[n++] = (struct cli_opt){"ppp-memory", CLI_DOUBLE, &a->ppp_memory, NULL, "Y",
                                    "platform percent of peak for memory bandwidth (default "
                                    "0.72, PALEO)",
                                    NULL, NULL};
        out[n++] = (struct cli_opt){"launch-overhead-us", CLI_DOUBLE, &a->launch_us, NULL, "U",
                                    "added to every kernel (node and phase that does work); "
                                    "default 0, PyTorch eager on a GPU is about 5-10",
                                    NULL, NULL};
    }
    if (what & CLI_AN_COMM)
        out[n++] = (struct cli_opt){"ppp-comm", CLI_DOUBLE, &a->ppp_comm, NULL, "Z",
                                    "platform percent of peak for the interconnect (default "
                                    "0.72, PALEO)",
                                    NULL, NULL};
    return n;
}

int cli_devices_open(struct fm_ctx *ctx, const char *file, struct fm_devices **out)
{
    enum fm_status st = fm_devices_load(ctx, file, out);
    if (st)
        return cli_fail(ctx, st);
    return 0;
}

int cli_analysis_setup(struct fm_ctx *ctx, const struct cli_analysis_opts *a,
                       const struct cli_model_opts *m, const struct fm_devices *devs,
                       const struct fm_device **dev, struct fm_predict_opts *po)
{
    if (!a->device) {
        fprintf(stderr, "flopmeter: give the device: --device NAME (flopmeter devices lists "
                        "them, e.g. --device a100)\n");
        return FM_EXIT_USAGE;
    }
    enum fm_status st = fm_devices_find(ctx, devs, a->device, dev);
    if (st) {
        fprintf(stderr, "flopmeter: %s\n", fm_ctx_error(ctx));
        return FM_EXIT_USAGE;
    }
    fm_predict_opts_init(po);
    po->device = *dev;
    if (a->precision_given && a->precision == CLI_PRECISION_TORCH_DEFAULT) {
        po->torch_default = true;
        po->precision = FM_PREC_FP32;
    } else if (a->precision_given) {
        po->precision = (enum fm_precision)a->precision;
    } else {
        /* the storage dtype (--dtype fp32|fp16|bf16) is the natural compute precision */
        static const enum fm_precision by_dtype[] = {FM_PREC_FP32, FM_PREC_FP16, FM_PREC_BF16};
        po->precision = m && m->dtype >= 0 && m->dtype < 3 ? by_dtype[m->dtype] : FM_PREC_FP32;
    }
    po->ppp_compute = a->ppp_compute;
    po->ppp_memory = a->ppp_memory;
    po->ppp_comm = a->ppp_comm;
    po->launch_overhead_us = a->launch_us;
    if (!(a->ppp_compute > 0 && a->ppp_compute <= 1) || !(a->ppp_memory > 0 && a->ppp_memory <= 1) ||
        !(a->ppp_comm > 0 && a->ppp_comm <= 1)) {
        fprintf(stderr, "flopmeter: PPP values are fractions of peak: each must be in (0, 1] "
                        "(e.g. --ppp-compute 0.62)\n");
        return FM_EXIT_USAGE;
    }
    if (a->launch_us < 0) {
        fprintf(stderr, "flopmeter: --launch-overhead-us must be >= 0\n");
        return FM_EXIT_USAGE;
    }
    return 0;
}

const char *cli_precision_label(const struct fm_predict_opts *po)
{
    return po->torch_default ? "torch-default" : fm_precision_name(po->precision);
}
