/* flopmeter probe: this machine's (or a GPU's) own ceilings, measured, next to the theoretical
 * figures; --save writes them as a measured device that roofline, predict, utilization and
 * measure accept. The probes are the library's (fm_probe); this file only prints. */
#include "cli.h"

static const char description[] =
    "Measures the device's ceilings. On the CPU: peak FMA throughput (fp32, fp64, and bf16 where\n"
    "the CPU has AVX512_BF16) on one thread and on all threads, with independent chains of\n"
    "vector FMAs; memory bandwidth (STREAM copy and triad) on arrays several times the\n"
    "last-level cache. On a GPU (cuda, cuda:N): FMA peaks, GEMM through cuBLASLt, and device\n"
    "memory bandwidth. Each figure is the min / median / max over --repetitions, next to the\n"
    "theoretical figure (CPU: FLOP per cycle per core x clock x cores, from cpuid and cpufreq;\n"
    "a '?' where it cannot be known). An FMA counts as 2 FLOPs; bandwidth counts bytes read +\n"
    "written by the loop.\n\n"
    "--save FILE writes a device JSON file with the medians (all-thread FMA peaks, the larger\n"
    "bandwidth) as a measured device; use it with --devices FILE --device NAME in roofline,\n"
    "predict and utilization, or --spec in measure.\n\n"
    "examples:\n"
    "  flopmeter probe\n"
    "  flopmeter probe --threads 1 --repetitions 9 --format json\n"
    "  flopmeter probe --save this-machine.json     (it prints the device's name)\n"
    "  flopmeter roofline resnet50 --devices this-machine.json --device NAME";

int cmd_probe(struct cli_run *run, int argc, char **argv)
{
    const char *device = "cpu", *save = NULL;
    int64_t threads = 0, reps = 5;
    double seconds = 0.2;
    enum fm_format format = FM_FORMAT_TABLE;
    bool nccl = false;
    struct cli_opt opts[] = {
        {"nccl", CLI_FLAG, &nccl, NULL, NULL, "time NCCL's collectives across the visible GPUs "
         "(--save FILE: a cluster file for flopmeter plan)", NULL, NULL},
        {"device", CLI_STRING, &device, NULL, "cpu|cuda[:N]", "what to probe (default cpu)", NULL,
         NULL},
        {"threads", CLI_UINT, &threads, NULL, "T", "CPU threads for the all-thread figures "
         "(default: every CPU this process may use)", NULL, NULL},
        {"repetitions", CLI_INT, &reps, NULL, "R", "repetitions of each figure (default 5)", NULL,
         NULL},
        {"seconds", CLI_DOUBLE, &seconds, NULL, "S", "time budget of each figure, all "
         "repetitions (default 0.2)", NULL, NULL},
        {"save", CLI_STRING, &save, NULL, "FILE", "write the medians as a measured device JSON "
         "file", NULL, NULL},
        {"format", CLI_PARSED, &format, cli_parse_format, "table|csv|json",
         "output format (default table)", NULL, NULL},
        {0},
    };
    int r = cli_parse("probe", "[options]", description, opts, argc, argv, NULL, 0, 0);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    if (!(seconds > 0) || seconds > 600) {
        fprintf(stderr, "flopmeter probe: --seconds must be in (0, 600]\n");
        return FM_EXIT_USAGE;
    }
    if (reps > 1000) {
        fprintf(stderr, "flopmeter probe: --repetitions must be at most 1000\n");
        return FM_EXIT_USAGE;
    }
    if (threads > 1024) {
        fprintf(stderr, "flopmeter probe: --threads must be at most 1024\n");
        return FM_EXIT_USAGE;
    }
    struct fm_ctx *ctx = run->ctx;
    if (nccl) {
        struct fm_nccl_probe np;
        enum fm_status nst = fm_probe_nccl(ctx, &np);
        if (nst)
            return cli_fail(ctx, nst);
        run->status = fm_report_nccl(cli_out(run), &np);
        if (save) {
            nst = fm_nccl_save_cluster(ctx, &np, save);
            if (nst)
                return cli_fail(ctx, nst);
            fprintf(stderr, "saved cluster to %s (use flopmeter plan --cluster %s)\n", save,
                    save);
        }
        return r;
    }
    struct fm_probe_opts po;
    fm_probe_opts_init(&po);
    po.device = device;
    po.threads = (int)threads;
    po.repetitions = (int)reps;
    po.seconds = seconds;
    po.progress = cli_progress;
    po.progress_user = cli_progress_user(device);
    struct fm_probe_result *res = fm_alloc(ctx, sizeof(*res));
    enum fm_status st = res ? fm_probe(ctx, &po, res) : FM_ERR_NOMEM;
    if (st) {
        r = res ? cli_fail(ctx, st) : FM_EXIT_FAIL;
        goto out;
    }
    struct fm_report_opts ro;
    fm_report_opts_init(&ro);
    ro.format = format;
    run->status = fm_report_probe(cli_out(run), res, &ro);
    if (save) {
        struct fm_device dev;
        if (fm_probe_to_device(res, &dev) != FM_OK) {
            fprintf(stderr, "flopmeter probe: the probe gave no device to save\n");
            r = FM_EXIT_FAIL;
            goto out;
        }
        st = fm_device_save_json(ctx, &dev, save);
        if (st) {
            r = cli_fail(ctx, st);
            goto out;
        }
        fprintf(stderr, "saved measured device '%s' to %s (use --devices %s --device '%s')\n",
                dev.name, save, save, dev.name);
    }
out:
    fm_dealloc(ctx, res);
    return r;
}
