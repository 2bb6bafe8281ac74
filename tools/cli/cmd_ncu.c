/* flopmeter ncu FILE.csv [--model MODEL] [--device NAME]: an Nsight Compute CSV read into FLOPs
 * per precision, DRAM bytes, time and achieved rates per kernel and NVTX range; with --model,
 * beside flopmeter's counts per layer. The reading and matching are the library's. */
#include "cli.h"

static const char description[] =
    "Reads `ncu --csv` output (the details form, or the raw page of --page raw) and prints per\n"
    "kernel, per NVTX range (ncu --nvtx) and in total: FLOPs per precision (add + mul + 2 x fma\n"
    "thread instructions), tensor-pipe work, DRAM bytes, time and the achieved FLOP/s, bytes/s\n"
    "and FLOP/byte. A figure whose metrics the file lacks prints as \"-\", never 0. Collect with\n"
    "the metrics of docs/profiles.md (the NERSC roofline set).\n\n"
    "--model matches kernels to the model's layers by the NVTX ranges flopmeter's CUDA steps\n"
    "push (\"<layer> fwd\" ...) and prints counted FLOPs and bytes beside the counters', with\n"
    "the likely cause of each difference. --device gives the share of its peaks.\n\n"
    "examples:\n"
    "  flopmeter ncu profile.csv --device v100\n"
    "  flopmeter ncu step.csv --model resnet18 --batch 32 --format json";

int cmd_ncu(struct cli_run *run, int argc, char **argv)
{
    struct cli_model_opts m;
    struct cli_device_opts d;
    const char *model = NULL;
    struct cli_opt opts[CLI_MODEL_OPTS_MAX + CLI_DEVICE_OPTS_MAX + 2] = {0};
    int n = cli_model_opts_declare(&m, opts);
    n += cli_device_opts_declare(&d, opts + n, CLI_DEV_DEVICE);
    opts[n++] = (struct cli_opt){"model", CLI_STRING, &model, NULL, "MODEL",
                                 "a built-in name or an .onnx file to compare the counters with",
                                 NULL, NULL};
    const char *pos[1];
    int r = cli_parse("ncu", "FILE.csv [--model MODEL] [--device NAME] [options]", description,
                      opts, argc, argv, pos, 1, 1);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    struct fm_ctx *ctx = run->ctx;
    struct fm_ncu_profile *p = NULL;
    struct fm_ncu_match *match = NULL;
    struct fm_session *s = NULL;
    struct fm_devices *devs = NULL;
    const struct fm_device *dev = NULL;
    enum fm_status st = fm_ncu_read_file(ctx, pos[0], &p);
    if (!st && d.device && !(st = fm_devices_load(ctx, d.devices_file, &devs)))
        st = fm_devices_find(ctx, devs, d.device, &dev);
    if (st) {
        r = cli_fail(ctx, st);
        goto out;
    }
    if (model) {
        struct fm_session_opts so;
        struct cli_bindings b;
        fm_session_opts_init(&so, FM_TASK_WORK);
        so.model = model;
        struct cli_device_opts none = d;
        none.device = NULL;   /* the device is for the peaks only, not for the count */
        if ((r = cli_session_opts(ctx, &m, &none, &b, &so)))
            goto out;
        st = fm_session_run(ctx, &so, &s);
        cli_bindings_free(&b);
        if (!st)
            st = fm_ncu_match(ctx, p, fm_session_graph(s), fm_session_counts(s), &match);
        if (st) {
            r = cli_fail(ctx, st);
            goto out;
        }
    }
    struct fm_report_opts ro;
    fm_report_opts_init(&ro);
    ro.format = m.format;
    run->status = fm_report_ncu(cli_out(run), p, match, dev, &ro);
out:
    fm_ncu_match_free(match);
    fm_session_free(s);
    fm_devices_free(devs);
    fm_ncu_profile_free(p);
    return r;
}
