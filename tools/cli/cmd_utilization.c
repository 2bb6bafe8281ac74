/* flopmeter utilization MODEL --device D --step-time T: how much of the device's peak a measured
 * step (or epoch) used, by the theory (3 x forward) and counted (forward + backward) methods,
 * and a clear "impossible" when the answer exceeds 100%. It trusts the time it is given. */
#include "cli.h"

static const char description[] =
    "Utilization = FLOPs / (time x peak FLOP/s), from a time you measured: --step-time for one\n"
    "step of --batch samples, and/or --epoch-time with --dataset-size for an epoch. Times take\n"
    "a unit: 0.25 (seconds), 250ms, 3.5min, 2h.\n\n"
    "Methods (Epoch AI's GPU utilization study, Hobbhahn 2022):\n"
    "  theory             3 x the forward FLOPs (the backward pass taken as 2 x forward)\n"
    "  counted            forward + backward (input and weight gradients) as counted\n"
    "  counted+optimizer  the same plus the optimizer step\n"
    "In --infer mode every method is the forward FLOPs.\n\n"
    "FLOP = 2 x MAC + other ops on both sides: the peak counts an FMA as 2 FLOPs too. The peak\n"
    "is the device's ceiling for conv/matmul at --precision (tensor cores when it has them);\n"
    "--peak overrides it (e.g. a measured one). A result above 100% is impossible and is\n"
    "reported with its likely causes.\n\n"
    "examples:\n"
    "  flopmeter utilization resnet50 --device p100 --batch 64 --step-time 310ms\n"
    "  flopmeter utilization resnet50 --device a100 --batch 256 --precision torch-default \\\n"
    "      --epoch-time 21min --dataset-size 1281167";

int cmd_utilization(struct cli_run *run, int argc, char **argv)
{
    struct cli_model_opts m;
    struct cli_device_opts d;
    double step_s = 0, epoch_s = 0, peak = 0;
    int64_t dataset = 0;
    struct cli_opt opts[CLI_MODEL_OPTS_MAX + CLI_DEVICE_OPTS_MAX + 8] = {0};
    int n = cli_model_opts_declare(&m, opts);
    n += cli_device_opts_declare(&d, opts + n, CLI_DEV_DEVICE | CLI_DEV_PRECISION);
    opts[n++] = (struct cli_opt){"step-time", CLI_PARSED, &step_s, cli_parse_time,
                                 "a positive time (e.g. 0.25, 250ms, 1.5s)",
                                 "measured time of one step of --batch samples (250ms, 0.25)",
                                 NULL, NULL};
    opts[n++] = (struct cli_opt){"epoch-time", CLI_PARSED, &epoch_s, cli_parse_time,
                                 "a positive time (e.g. 600, 10min, 1.5h)",
                                 "measured time of one epoch (needs --dataset-size)", NULL, NULL};
    opts[n++] = (struct cli_opt){"dataset-size", CLI_UINT, &dataset, NULL, "N",
                                 "samples per epoch", NULL, NULL};
    opts[n++] = (struct cli_opt){"peak", CLI_PARSED, &peak, cli_parse_flops, "FLOP/S",
                                 "peak FLOP/s to divide by instead of the device's (312e12, "
                                 "312T, 312TFLOP/s)",
                                 NULL, NULL};
    const char *pos[1];
    int r = cli_parse("utilization", "MODEL --device NAME --step-time T [options]", description,
                      opts, argc, argv, pos, 1, 1);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    struct fm_ctx *ctx = run->ctx;
    struct fm_session *s = NULL;
    struct fm_session_opts so;
    struct cli_bindings b;
    fm_session_opts_init(&so, FM_TASK_UTILIZATION);
    so.model = pos[0];
    so.step_s = step_s;
    so.epoch_s = epoch_s;
    so.dataset_size = (uint64_t)dataset;
    so.peak = peak;
    so.progress = cli_progress;
    so.progress_user = cli_progress_user(pos[0]);
    if ((r = cli_session_opts(ctx, &m, &d, &b, &so)))
        goto out;
    enum fm_status st = fm_session_run(ctx, &so, &s);
    cli_bindings_free(&b);
    if (st) {
        r = cli_fail(ctx, st);
        goto out;
    }
    struct fm_report_opts ro;
    fm_report_opts_init(&ro);
    ro.format = m.format;
    run->status = fm_report_utilization(cli_out(run), s, &ro);
    if (fm_session_utilization(s)->impossible && m.format != FM_FORMAT_TABLE)
        fm_report_impossible(stderr);
out:
    fm_session_free(s);
    return r;
}
