/* flopmeter predict MODEL --device D: PALEO-style predicted time per layer and phase, the step,
 * samples per second, epoch and whole training run, and with --gpus N the ring all-reduce of
 * data parallelism. It runs nothing: flopmeter measure times the real thing. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char description[] =
    "Predicts the time of every layer's phases from its counted FLOPs and bytes (PALEO, Qi et\n"
    "al. 2017): t_compute = FLOPs / (ceiling x PPP_compute), t_memory = bytes / (bandwidth x\n"
    "PPP_memory), reported as the roofline bound max(t_compute, t_memory) (perfect overlap) and\n"
    "PALEO's sum (no overlap), each plus --launch-overhead-us per kernel. The ceiling is the\n"
    "tensor-core peak of --precision for conv/matmul/attention, the vector peak otherwise.\n"
    "Totals: step time, samples per second, predicted utilization (step FLOPs / (time x\n"
    "peak)), and with --dataset-size N the epoch time, the total training time over --epochs\n"
    "and the total training compute. In --infer mode: latency of a batch and throughput.\n\n"
    "--gpus N adds data parallelism (weak scaling, each GPU keeps --batch): a ring all-reduce\n"
    "of every gradient over --interconnect (default: the device's own), serial after the\n"
    "backward pass or overlapped with it layer by layer, and the scaling efficiency. Steps per\n"
    "epoch, epoch and training time then follow the overlapped N-GPU step, which takes\n"
    "batch x N samples; the one-GPU run is printed beside it (JSON: run.one_gpu).\n\n"
    "The step's memory is checked against the device's (per GPU), with the largest batch\n"
    "that fits. --precision fp16/bf16 moves the bytes of mixed precision (half activations,\n"
    "fp32 weights and optimizer state), fp8 those of bf16 (fp8 matmuls inside bf16 autocast),\n"
    "fp64 those of fp64; --dtype stores all in one type.\n\n"
    "PPP defaults are PALEO's published settings (0.62 compute, 0.72 communication): fit your\n"
    "own from flopmeter measure. csv: one row per layer and phase, then phase totals.\n"
    "json: options, layers, phases, step, run, data-parallel and memory figures\n"
    "(docs/json.md).\n\n"
    "--calibration FILE (from flopmeter calibrate) adds each layer phase's calibrated time,\n"
    "fitted from single layers timed on that device, beside the cold figures: table column\n"
    "'calibrated' ('*' where the file has no fit for the layer's op class and phase, so the\n"
    "cold PALEO time stands in), CSV columns t_calibrated_s and calibration, JSON keys\n"
    "t_calibrated_s per layer phase and step, and run.step_s.calibrated. Without --device the\n"
    "device is the file's: a CPU's file predicts this machine's CPU (probed, and refused if it\n"
    "is another), a GPU's file its GPU as the file describes it (no GPU needed here). A\n"
    "calibration file is also a device file: --devices FILE adds its device (named as the\n"
    "file says, with its probed peak and bandwidth) and calibrates the prediction.\n\n"
    "examples:\n"
    "  flopmeter predict resnet50 --device a100 --batch 256 --dataset-size 1281167 --epochs 90\n"
    "  flopmeter predict vgg16 --device k80 --infer --precision fp32 --ppp-compute 1 "
    "--ppp-memory 1\n"
    "  flopmeter predict resnet50 --device h100 --batch 128 --gpus 8 --interconnect nvlink4\n"
    "  flopmeter predict mobilenet_v2 --batch 8 --calibration cpu.calib.json";

int cmd_predict(struct cli_run *run, int argc, char **argv)
{
    struct cli_model_opts m;
    struct cli_device_opts d;
    int64_t dataset = 0, gpus = 1;
    double epochs = 1.0;
    const char *interconnect = NULL;
    bool summary = false, epochs_given = false;
    struct cli_calibration_opts c;
    struct cli_opt opts[CLI_MODEL_OPTS_MAX + CLI_DEVICE_OPTS_MAX + CLI_CALIBRATION_OPTS_MAX + 8] =
        {0};
    int n = cli_model_opts_declare(&m, opts);
    n += cli_device_opts_declare(&d, opts + n,
                                 CLI_DEV_DEVICE | CLI_DEV_PRECISION | CLI_DEV_PPP | CLI_DEV_COMM);
    opts[n++] = (struct cli_opt){"dataset-size", CLI_UINT, &dataset, NULL, "N",
                                 "samples per epoch: adds epoch time, training time and "
                                 "training compute",
                                 NULL, NULL};
    opts[n++] = (struct cli_opt){"epochs", CLI_DOUBLE, &epochs, NULL, "E",
                                 "epochs of the training run (default 1; needs --dataset-size)",
                                 NULL, &epochs_given};
    opts[n++] = (struct cli_opt){"gpus", CLI_INT, &gpus, NULL, "N",
                                 "data parallelism over N GPUs (ring all-reduce of the "
                                 "gradients; default 1)",
                                 NULL, NULL};
    opts[n++] = (struct cli_opt){"interconnect", CLI_STRING, &interconnect, NULL,
                                 "nvlink2|nvlink3|nvlink4|nvlink5|pcie3|pcie4|pcie5",
                                 "the link of the all-reduce (default: the device's own)", NULL,
                                 NULL};
    n += cli_calibration_opts_declare(&c, opts + n,
                                      "a file of flopmeter calibrate: each layer phase also gets "
                                      "its calibrated time (the device defaults to the file's)");
    opts[n++] = (struct cli_opt){"summary", CLI_FLAG, &summary, NULL, NULL,
                                 "table: phase totals and the prediction only, no layers", NULL,
                                 NULL};
    const char *pos[1];
    int r = cli_parse("predict", "MODEL --device NAME [options]", description, opts, argc, argv,
                      pos, 1, 1);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    if (epochs_given && dataset == 0)
        fprintf(stderr, "flopmeter predict: warning: --epochs %g is ignored without --dataset-size "
                        "N (samples per epoch): there is no epoch to repeat, so no training time\n",
                epochs);
    struct fm_ctx *ctx = run->ctx;
    struct fm_session *s = NULL;
    struct fm_session_opts so;
    struct cli_bindings b;
    fm_session_opts_init(&so, FM_TASK_PREDICT);
    /* a calibration file is also a device: --devices FILE names its device and, without
     * --calibration, calibrates the prediction */
    bool cal_as_devices = false;
    if (!c.file && d.devices_file) {
        FILE *f = fopen(d.devices_file, "r");
        char head[4096] = "";
        if (f) {
            head[fread(head, 1, sizeof(head) - 1, f)] = '\0';
            fclose(f);
        }
        if (strstr(head, "\"flopmeter-calibration\"")) {
            c.file = d.devices_file;
            cal_as_devices = true;
        }
    }
    if ((r = cli_calibration_load(ctx, &c, &so)))
        goto out;
    const struct fm_calibration *cal = c.cal;
    if (cal) {
        /* the device the file was made on: its entry when the file is also --devices (a GPU's
         * file is, unless --devices names another: predicting for a GPU needs no GPU here, and
         * the table's name for it would not be the name CUDA gave calibrate), else this
         * machine's CPU, probed */
        struct fm_calibration_info ci;
        fm_calibration_info(cal, &ci);
        if (!d.device && !cal_as_devices && !d.devices_file && strcmp(ci.backend, "cuda") == 0) {
            d.devices_file = c.file;
            cal_as_devices = true;
        }
        if (!d.device)
            d.device = cal_as_devices ? ci.device : ci.backend;
    }
    so.model = pos[0];
    so.dataset_size = (uint64_t)dataset;
    so.epochs = epochs;
    so.gpus = gpus > 65536 ? 65537 : (int)gpus;
    so.interconnect = interconnect;
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
    ro.summary = summary;
    run->status = fm_report_predict(cli_out(run), s, &ro);
out:
    fm_session_free(s);
    cli_calibration_free(&c);
    return r;
}
