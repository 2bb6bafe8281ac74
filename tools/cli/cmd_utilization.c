/* flopmeter utilization MODEL --device D --step-time T: how much of the device's peak a measured
 * step (or epoch) used, by the theory (3 x forward) and counted (forward + backward) methods,
 * and a clear "impossible" when the answer exceeds 100%. It trusts the time it is given. */
#include "cli_analysis.h"
#include "../../src/core/jsonw.h"

#include <inttypes.h>
#include <string.h>

static const char description[] =
    "Utilization = FLOPs / (time x peak FLOP/s), from a time you measured: --step-time for one\n"
    "step of --batch samples, and/or --epoch-time with --dataset-size for an epoch. Times take\n"
    "a unit: 0.25 (seconds), 250ms, 3.5min, 2h.\n\n"
    "Methods (Epoch AI's GPU utilization study, seed 000):\n"
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

static void print_impossible(FILE *f)
{
    fprintf(f,
            "IMPOSSIBLE: a utilization above 100%% means the inputs do not describe the same "
            "work. Likely causes:\n"
            "  - the peak is of the wrong precision: the run used faster units (TF32, FP16 or "
            "BF16 tensor cores) than\n"
            "    --precision says; PyTorch on Ampere+ runs FP32 convolutions on TF32 "
            "(--precision torch-default);\n"
            "  - a MAC/FLOP mix-up: a FLOP count that is really MACs (x2 too high here would "
            "mean the time or peak\n"
            "    counts an FMA as 1 FLOP), or a peak quoted in FMA/s;\n"
            "  - the time excludes work: GPU kernel time of part of the step, an asynchronous "
            "launch timed without\n"
            "    synchronizing, a step time without backward or optimizer, or a batch "
            "different from --batch.\n");
}

int cmd_utilization(int argc, char **argv)
{
    struct cli_model_opts m;
    struct cli_analysis_opts a;
    const char *step_text = NULL, *epoch_text = NULL;
    int64_t dataset = 0;
    double peak_override = 0;
    struct cli_opt opts[CLI_MODEL_OPTS_MAX + CLI_ANALYSIS_OPTS_MAX + 8] = {0};
    int n = cli_model_opts_declare(&m, opts);
    n += cli_analysis_opts_declare(&a, opts + n, CLI_AN_DEVICE | CLI_AN_PRECISION);
    opts[n++] = (struct cli_opt){"step-time", CLI_STRING, &step_text, NULL, "T",
                                 "measured time of one step of --batch samples (250ms, 0.25)",
                                 NULL, NULL};
    opts[n++] = (struct cli_opt){"epoch-time", CLI_STRING, &epoch_text, NULL, "T",
                                 "measured time of one epoch (needs --dataset-size)", NULL, NULL};
    opts[n++] = (struct cli_opt){"dataset-size", CLI_UINT, &dataset, NULL, "N",
                                 "samples per epoch", NULL, NULL};
    opts[n++] = (struct cli_opt){"peak", CLI_DOUBLE, &peak_override, NULL, "FLOPS",
                                 "peak FLOP/s to divide by instead of the device's (e.g. 312e12)",
                                 NULL, NULL};
    const char *pos[1];
    int r = cli_parse("utilization", "MODEL --device NAME --step-time T [options]", description,
                      opts, argc, argv, pos, 1, 1);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    double step_s = 0, epoch_s = 0;
    if (step_text && (!fm_duration_parse(step_text, &step_s) || step_s <= 0)) {
        fprintf(stderr, "flopmeter utilization: --step-time '%s' is not a positive time (e.g. "
                        "0.25, 250ms, 1.5s)\n",
                step_text);
        return FM_EXIT_USAGE;
    }
    if (epoch_text && (!fm_duration_parse(epoch_text, &epoch_s) || epoch_s <= 0)) {
        fprintf(stderr, "flopmeter utilization: --epoch-time '%s' is not a positive time (e.g. "
                        "600, 10min, 1.5h)\n",
                epoch_text);
        return FM_EXIT_USAGE;
    }
    if (!step_text && !epoch_text) {
        fprintf(stderr, "flopmeter utilization: give --step-time T (and/or --epoch-time T with "
                        "--dataset-size N)\n");
        return FM_EXIT_USAGE;
    }
    if (epoch_text && dataset <= 0) {
        fprintf(stderr, "flopmeter utilization: --epoch-time needs --dataset-size N (samples per "
                        "epoch)\n");
        return FM_EXIT_USAGE;
    }
    if (peak_override < 0) {
        fprintf(stderr, "flopmeter utilization: --peak must be positive FLOP/s\n");
        return FM_EXIT_USAGE;
    }

    struct fm_ctx *ctx = NULL;
    if (fm_ctx_new(NULL, &ctx)) {
        fprintf(stderr, "flopmeter: out of memory\n");
        return FM_EXIT_FAIL;
    }
    struct fm_devices *devs = NULL;
    struct fm_graph *g = NULL;
    struct fm_counts *c = NULL;
    const struct fm_device *dev = NULL;
    struct fm_predict_opts po;
    struct fm_utilization u;
    enum fm_status st;
    if ((r = cli_devices_open(ctx, a.devices_file, &devs)))
        goto out;
    if ((r = cli_analysis_setup(ctx, &a, &m, devs, &dev, &po)))
        goto out;
    double peak = peak_override > 0 ? peak_override
                  : po.torch_default ? fm_device_peak(dev, FM_CLASS_CONV, FM_PREC_TF32)
                                     : fm_device_peak(dev, FM_CLASS_MATMUL, po.precision);
    if (!(peak > 0)) {
        fprintf(stderr, "flopmeter utilization: %s has no %s ceiling; choose another --precision "
                        "or give --peak\n",
                dev->name, cli_precision_label(&po));
        r = FM_EXIT_USAGE;
        goto out;
    }
    if ((r = cli_model_load(ctx, pos[0], &m, &g)))
        goto out;
    struct fm_count_opts co;
    cli_count_opts(&m, &co);
    if ((st = fm_count(ctx, g, &co, &c)) ||
        (st = fm_utilization(ctx, c, m.batch, peak, step_s, epoch_s, (uint64_t)dataset, &u))) {
        r = cli_fail(ctx, st);
        goto out;
    }
    bool train = c->mode == FM_MODE_TRAIN;
    char b[6][32];
    if (m.format == CLI_FORMAT_TABLE) {
        printf("%s on %s | batch %lld, %s | peak %sFLOP/s (%s%s)\n", fm_graph_name(g), dev->name,
               (long long)m.batch, train ? "training step" : "inference (forward only)",
               fm_format_si(peak, b[0]), peak_override > 0 ? "--peak" : cli_precision_label(&po),
               peak_override > 0 ? "" : ", the conv/matmul ceiling");
        printf("  %-20s %14s %12s %16s %12s\n", "method", "FLOP/step", "per step", "FLOP/epoch",
               "per epoch");
        for (int k = 0; k < FM_UTIL_COUNT; k++) {
            char s1[32] = "-", s2[32] = "-", s3[32] = "-";
            if (u.step_s > 0)
                snprintf(s1, sizeof(s1), "%.1f%%", 100 * u.step_util[k]);
            if (u.dataset_size)
                fm_format_si(u.epoch_flops[k], s3);
            if (u.epoch_s > 0)
                snprintf(s2, sizeof(s2), "%.1f%%", 100 * u.epoch_util[k]);
            printf("  %-20s %14s %12s %16s %12s\n", fm_util_method_name((enum fm_util_method)k),
                   fm_format_si(u.step_flops[k], b[1]), s1, s3, s2);
        }
        if (u.step_s > 0)
            printf("step time %s -> %.1f samples/s\n", fm_format_time(u.step_s, b[2]),
                   (double)m.batch / u.step_s);
        if (u.epoch_s > 0)
            printf("epoch time %s for %" PRIu64 " samples (%" PRIu64 " steps of %lld) -> %.1f "
                   "samples/s\n",
                   fm_format_time(u.epoch_s, b[3]), u.dataset_size, u.steps_per_epoch,
                   (long long)m.batch, (double)u.dataset_size / u.epoch_s);
        printf("convention: utilization = FLOPs / (time x peak); FLOP = 2 x MAC + other ops, and "
               "the peak counts an FMA as 2 FLOPs.\n%s",
               train ? "theory = 3 x forward FLOPs; counted = forward + input gradients + weight "
                       "gradients as counted.\n"
                     : "inference: every method is the forward FLOPs.\n");
        if (u.impossible)
            print_impossible(stdout);
    } else if (m.format == CLI_FORMAT_CSV) {
        printf("method,step_flops,step_s,step_utilization,epoch_flops,epoch_s,epoch_utilization,"
               "peak_flops,impossible\n");
        for (int k = 0; k < FM_UTIL_COUNT; k++)
            printf("%s,%.17g,%.9g,%.9g,%.17g,%.9g,%.9g,%.9g,%d\n",
                   fm_util_method_name((enum fm_util_method)k), u.step_flops[k], u.step_s,
                   u.step_util[k], u.epoch_flops[k], u.epoch_s, u.epoch_util[k], u.peak,
                   u.impossible ? 1 : 0);
    } else {
        struct fm_jw w;
        fm_jw_init(&w, stdout);
        fm_jw_object(&w, NULL, false);
        fm_jw_string(&w, "flopmeter", FM_VERSION);
        fm_jw_string(&w, "model", fm_graph_name(g));
        fm_jw_string(&w, "device", dev->name);
        fm_jw_i64(&w, "batch", m.batch);
        fm_jw_string(&w, "mode", fm_mode_name(c->mode));
        fm_jw_string(&w, "precision", peak_override > 0 ? "peak" : cli_precision_label(&po));
        fm_jw_double(&w, "peak_flops", u.peak);
        fm_jw_string(&w, "convention", "utilization = FLOPs / (time x peak); FLOP = 2 x MAC + "
                                       "other ops");
        fm_jw_double(&w, "step_s", u.step_s);
        fm_jw_double(&w, "epoch_s", u.epoch_s);
        fm_jw_u64(&w, "dataset_size", u.dataset_size);
        fm_jw_u64(&w, "steps_per_epoch", u.steps_per_epoch);
        fm_jw_object(&w, "methods", false);
        for (int k = 0; k < FM_UTIL_COUNT; k++) {
            fm_jw_object(&w, fm_util_method_name((enum fm_util_method)k), true);
            fm_jw_double(&w, "step_flops", u.step_flops[k]);
            if (u.step_s > 0)
                fm_jw_double(&w, "step_utilization", u.step_util[k]);
            if (u.dataset_size)
                fm_jw_double(&w, "epoch_flops", u.epoch_flops[k]);
            if (u.epoch_s > 0)
                fm_jw_double(&w, "epoch_utilization", u.epoch_util[k]);
            fm_jw_end(&w);
        }
        fm_jw_end(&w);
        fm_jw_bool(&w, "impossible", u.impossible);
        fm_jw_end(&w);
        fm_jw_finish(&w);
    }
    if (u.impossible && m.format != CLI_FORMAT_TABLE)
        print_impossible(stderr);
    if (fflush(stdout) || ferror(stdout)) {
        fprintf(stderr, "flopmeter: could not write the output\n");
        r = FM_EXIT_FAIL;
    }
out:
    fm_counts_free(c);
    fm_graph_free(g);
    fm_devices_free(devs);
    fm_ctx_free(ctx);
    return r;
}
