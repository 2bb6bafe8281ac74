/* flopmeter roofline MODEL --device D: every layer's phases and the whole network placed on the
 * device's roofline, and optionally the chart as SVG. Times are not its business: that is
 * flopmeter predict. */
#include "cli.h"

static const char description[] =
    "Places each layer's forward, input-gradient, weight-gradient and optimizer work on the\n"
    "device's roofline (Williams, Waterman & Patterson 2009): operational intensity OI =\n"
    "FLOPs / bytes moved (an unfused one-kernel-per-op execution), attainable FLOP/s =\n"
    "min(ceiling, OI x bandwidth), memory-bound when OI is below the ridge point (ceiling /\n"
    "bandwidth). The ceiling is the tensor-core peak of --precision for conv, matmul and\n"
    "attention (when the device has one), the vector peak otherwise. The whole network is also\n"
    "one point: total FLOPs over total bytes, against the work-weighted ceiling.\n\n"
    "Bytes follow the precision: fp16/bf16 is mixed precision as autocast runs it (half\n"
    "activations, fp32 weights, gradients and optimizer state), fp64 is fp64 throughout;\n"
    "--dtype stores every tensor in one type. The header says which. The step's memory is\n"
    "checked against the device's, with the largest batch that fits.\n\n"
    "--svg FILE draws the chart: ceilings and ridge points, one dot per layer (area = its\n"
    "share of the predicted step time, at the PPP of --ppp-compute/--ppp-memory), the network.\n"
    "--measured FILE adds measured points to the chart (hollow, orange): from an Nsight\n"
    "Compute CSV (flopmeter ncu) the counters' FLOPs over DRAM bytes and time per layer phase\n"
    "matched by flopmeter's NVTX ranges, and all kernels as one point; from a PyTorch profiler\n"
    "trace (flopmeter trace) the median step, and each op class on a CPU trace, at the counted\n"
    "FLOPs and bytes over the measured time (docs/profiles.md).\n\n"
    "csv: one row per layer and phase, then one per phase total and the network.\n"
    "json: ceilings, layers with their phases, phase totals, network, memory\n"
    "(docs/json.md).\n\n"
    "examples:\n"
    "  flopmeter roofline resnet50 --device a100 --batch 64\n"
    "  flopmeter roofline resnet50 --device a100 --precision torch-default --svg r50.svg\n"
    "  flopmeter roofline mobilenet_v2 --device h100 --infer --precision bf16 --format csv\n"
    "  flopmeter roofline resnet50 --device a100 --svg r50.svg --measured step.ncu.csv\n"
    "  flopmeter roofline resnet18 --device cpu        (a short probe of this machine)";

int cmd_roofline(struct cli_run *run, int argc, char **argv)
{
    struct cli_model_opts m;
    struct cli_device_opts d;
    struct cli_opt opts[CLI_MODEL_OPTS_MAX + CLI_DEVICE_OPTS_MAX + 5] = {0};
    int n = cli_model_opts_declare(&m, opts);
    n += cli_device_opts_declare(&d, opts + n, CLI_DEV_DEVICE | CLI_DEV_PRECISION | CLI_DEV_PPP);
    const char *svg = NULL, *measured = NULL;
    bool summary = false;
    opts[n++] = (struct cli_opt){"svg", CLI_STRING, &svg, NULL, "FILE",
                                 "also write the roofline chart as SVG to FILE", NULL, NULL};
    opts[n++] = (struct cli_opt){"measured", CLI_STRING, &measured, NULL, "FILE",
                                 "with --svg: measured points from an ncu CSV or a PyTorch "
                                 "profiler trace", NULL, NULL};
    opts[n++] = (struct cli_opt){"summary", CLI_FLAG, &summary, NULL, NULL,
                                 "table: ceilings, phase totals and the network only", NULL, NULL};
    const char *pos[1];
    int r = cli_parse("roofline", "MODEL --device NAME [options]", description, opts, argc, argv,
                      pos, 1, 1);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    if (measured && !svg) {
        fprintf(stderr, "flopmeter roofline: --measured draws its points on the chart: give "
                        "--svg FILE too\n");
        return FM_EXIT_USAGE;
    }
    struct fm_ctx *ctx = run->ctx;
    struct fm_session *s = NULL;
    struct fm_measured *ms = NULL;
    struct fm_session_opts so;
    struct cli_bindings b;
    fm_session_opts_init(&so, FM_TASK_ROOFLINE);
    so.model = pos[0];
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
    if (measured && (st = fm_measured_read(ctx, measured, fm_session_graph(s),
                                               fm_session_counts(s), &ms))) {
        r = cli_fail(ctx, st);
        goto out;
    }
    struct fm_report_opts ro;
    fm_report_opts_init(&ro);
    ro.format = m.format;
    ro.summary = summary;
    run->status = fm_report_roofline(cli_out(run), s, &ro);
    if (svg && !run->status) {
        FILE *f = fopen(svg, "w");
        struct fm_svg_opts sv;
        fm_svg_opts_init(&sv);
        sv.measured = ms;
        st = f ? fm_svg_roofline(f, fm_session_graph(s), fm_session_counts(s),
                                     fm_session_prediction(s), &sv) : FM_ERR_IO;
        if (!f || fclose(f) != 0 || st) {
            fprintf(stderr, "flopmeter: could not write the chart to %s\n", svg);
            r = FM_EXIT_FAIL;
            goto out;
        }
        if (m.format == FM_FORMAT_TABLE)
            fprintf(cli_out(run), "chart: %s\n", svg);
        if (ms && m.format == FM_FORMAT_TABLE)
            fprintf(cli_out(run), "measured: %zu points from %s: %s\n", fm_measured_count(ms),
                    measured, fm_measured_how(ms));
    }
out:
    fm_measured_free(ms);
    fm_session_free(s);
    return r;
}
