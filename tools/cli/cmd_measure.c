/* flopmeter measure MODEL: runs real training (or inference) steps on the CPU (oneDNN) or a
 * CUDA GPU and reports per-layer forward and backward times, the step time, achieved FLOP/s,
 * utilization against a peak, and each layer's predicted time next to the measured one. The
 * session resolves the peak and the device; the backends check what they can run. */
#include "cli.h"

static const char description[] =
    "Runs --warmup steps (discarded) and --steps timed steps of MODEL on --device and reports:\n"
    "  - per layer: forward and backward time (input and weight gradients apart where the\n"
    "    backend runs them apart), the optimizer's share, achieved FLOP/s, and the time\n"
    "    fm_predict gives on the device (roofline bound) with the signed error\n"
    "    (predicted - measured) / measured;\n"
    "  - the step time (median, min, max), samples/s, counted FLOPs of the step / median step\n"
    "    time = achieved FLOP/s, and utilization against the peak;\n"
    "  - training: the loss of the first and last timed step.\n"
    "A training step is forward, the loss, backward (input and weight gradients) and\n"
    "an SGD update with momentum 0.9, lr 0.01 (PyTorch's semantics); inference is forward only\n"
    "with BatchNorm on running statistics. Weights, inputs and labels are random (never zeros),\n"
    "drawn from --seed exactly as every flopmeter backend draws them. The loss is the one count\n"
    "adds (flopmeter count --help): the graph measured is the graph counted.\n\n"
    "The peak: --peak FLOP/s, or --spec NAME (a device from the table or --devices FILE, which\n"
    "also gives the prediction its bandwidth). Without either: on a GPU, the device-table entry\n"
    "matching the name CUDA reports (its datasheet conv/matmul ceiling at --precision); on the\n"
    "CPU (or a GPU the table lacks), a short probe runs first (flopmeter probe) and its median\n"
    "all-thread FMA or GEMM rate is the peak. The report says which peak it used.\n"
    "FLOP = 2 x MAC + other ops, on both sides.\n\n"
    "--epoch-samples N also times an epoch: ceil(N / batch) steps of --batch (the last batch\n"
    "filled up), reported with Epoch AI's methods (Hobbhahn 2022): 'batch' (one step), 'epoch', "
    "and\n"
    "'one' when --batch is 1. Per-layer timing synchronizes after every layer; the step time\n"
    "includes that small cost (--no-per-layer removes it).\n\n"
    "Before anything runs, the step's memory (weights, gradients, optimizer state and saved\n"
    "activations, as count --train counts them) is checked against what the machine has free\n"
    "(or --max-memory): a step that does not fit runs nothing and names the largest batch that\n"
    "does. Integer inputs are drawn in range: token ids below the embedding table's rows, class\n"
    "labels below the class count, attention masks all ones.\n\n"
    "CPU: oneDNN primitives, --threads (default: all CPUs), fp32. CUDA: cuDNN and cuBLASLt,\n"
    "--precision tf32|fp16|bf16 (mixed precision with fp32 master weights), --graph (capture\n"
    "the step in a CUDA graph), --channels-last.\n\n"
    "examples:\n"
    "  flopmeter measure resnet18 --batch 32\n"
    "  flopmeter measure mobilenet_v2 --batch 8 --infer --threads 2 --format json\n"
    "  flopmeter measure resnet50 --device cuda --batch 128 --precision bf16 --graph\n"
    "  flopmeter measure resnet18 --batch 64 --epoch-samples 50000 --spec 'AMD EPYC 9654'";

int cmd_measure(struct cli_run *run, int argc, char **argv)
{
    struct cli_model_opts m;
    struct cli_device_opts d;
    struct cli_calibration_opts c;
    const char *spec = NULL;
    int64_t steps = 10, warmup = 3, threads = 0, epoch_samples = 0, seed = 1;
    double peak = 0, max_memory = 0;
    bool graph = false, channels_last = false, no_per_layer = false, dry_run = false;
    struct cli_opt opts[CLI_MODEL_OPTS_MAX + CLI_DEVICE_OPTS_MAX + CLI_CALIBRATION_OPTS_MAX + 16] =
        {0};
    int n = cli_model_opts_declare(&m, opts);
    n += cli_device_opts_declare(&d, opts + n, CLI_DEV_PPP);
    d.device = "cpu";
    opts[n++] = (struct cli_opt){"device", CLI_STRING, &d.device, NULL, "cpu|cuda|cuda:N",
                                 "where to run (default cpu)", NULL, NULL};
    opts[n++] = (struct cli_opt){"steps", CLI_INT, &steps, NULL, "S",
                                 "timed steps (default 10)", NULL, NULL};
    opts[n++] = (struct cli_opt){"warmup", CLI_UINT, &warmup, NULL, "W",
                                 "steps run first and discarded (default 3)", NULL, NULL};
    opts[n++] = (struct cli_opt){"threads", CLI_UINT, &threads, NULL, "T",
                                 "CPU threads (default 0: all CPUs)", NULL, NULL};
    opts[n++] = (struct cli_opt){"precision", CLI_PARSED, &d.precision, cli_parse_precision,
                                 "fp32|tf32|fp16|bf16",
                                 "compute precision (default fp32; tf32/fp16/bf16: CUDA, mixed "
                                 "precision with fp32 master weights)",
                                 NULL, NULL};
    opts[n++] = (struct cli_opt){"graph", CLI_FLAG, &graph, NULL, NULL,
                                 "CUDA: capture the whole step in a CUDA graph", NULL, NULL};
    opts[n++] = (struct cli_opt){"channels-last", CLI_FLAG, &channels_last, NULL, NULL,
                                 "CUDA: NHWC layouts", NULL, NULL};
    opts[n++] = (struct cli_opt){"epoch-samples", CLI_UINT, &epoch_samples, NULL, "N",
                                 "also time an epoch of N samples (ceil(N/batch) steps)", NULL,
                                 NULL};
    opts[n++] = (struct cli_opt){"peak", CLI_PARSED, &peak, cli_parse_flops, "FLOP/S",
                                 "peak FLOP/s for utilization, 1.5e11 or 150G (default: the "
                                 "device's, or a short probe)",
                                 NULL, NULL};
    opts[n++] = (struct cli_opt){"spec", CLI_STRING, &spec, NULL, "DEVICE",
                                 "a device of the table or --devices FILE for the peak and the "
                                 "prediction",
                                 NULL, NULL};
    opts[n++] = (struct cli_opt){"max-memory", CLI_PARSED, &max_memory, cli_parse_bytes, "BYTES",
                                 "CPU: memory a step may take, 8G or 512MB (default: what the "
                                 "machine has free); a larger step runs nothing",
                                 NULL, NULL};
    n += cli_calibration_opts_declare(&c, opts + n,
                                      "a file of flopmeter calibrate made here: each layer also "
                                      "shows its calibrated time and error");
    opts[n++] = (struct cli_opt){"seed", CLI_UINT, &seed, NULL, "N",
                                 "seed of weights, inputs and labels (default 1)", NULL, NULL};
    opts[n++] = (struct cli_opt){"dry-run", CLI_FLAG, &dry_run, NULL, NULL,
                                 "run nothing: say which layers the backend can run, the loss "
                                 "and the work a step would time",
                                 NULL, NULL};
    opts[n++] = (struct cli_opt){"no-per-layer", CLI_FLAG, &no_per_layer, NULL, NULL,
                                 "time only whole steps (no synchronization per layer)", NULL,
                                 NULL};
    const char *pos[1];
    int r = cli_parse("measure", "MODEL [options]", description, opts, argc, argv, pos, 1, 1);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    struct fm_ctx *ctx = run->ctx;
    struct fm_session *s = NULL;
    struct fm_session_opts so;
    struct cli_bindings b;
    fm_session_opts_init(&so, FM_TASK_MEASURE);
    so.model = pos[0];
    so.spec = spec;
    so.peak = peak;
    so.epoch_samples = (uint64_t)epoch_samples;
    so.memory_cap = max_memory;
    so.dry_run = dry_run;
    so.run.steps = steps > 1000000 ? 1000001 : (int)steps;
    so.run.warmup = warmup > 1000000 ? 1000001 : (int)warmup;
    so.run.threads = threads > 1000000 ? 1000001 : (int)threads;
    so.run.per_layer = !no_per_layer;
    so.run.channels_last = channels_last;
    so.run.cuda_graph = graph;
    so.run.seed = (uint64_t)seed;
    so.progress = cli_progress;
    so.progress_user = cli_progress_user(pos[0]);
    if ((r = cli_session_opts(ctx, &m, &d, &b, &so)))
        goto out;
    if ((r = cli_calibration_load(ctx, &c, &so))) {
        cli_bindings_free(&b);
        goto out;
    }
    enum fm_status st = fm_session_run(ctx, &so, &s);
    cli_bindings_free(&b);
    if (st) {
        r = cli_fail(ctx, st);
        goto out;
    }
    struct fm_report_opts ro;
    fm_report_opts_init(&ro);
    ro.format = m.format;
    run->status = fm_report_measure(cli_out(run), s, &ro);
out:
    fm_session_free(s);
    cli_calibration_free(&c);
    return r;
}
