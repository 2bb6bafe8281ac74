/* flopmeter calibrate: times single layers on this machine's CPU (or a GPU) and writes the
 * fitted time model as a calibration file that predict and measure read with --calibration. */
#include "cli.h"

#include <string.h>
#include <unistd.h>

static const char description[] =
    "Times single layers on --device (never whole networks): sweeps of shapes for every op class\n"
    "the counter knows (dense, pointwise, depthwise and grouped convolutions, matmuls, norms,\n"
    "activations, softmax, pooling, elementwise, embedding, attention, transposes, reductions),\n"
    "each in every phase of a training step (forward, input gradients, weight gradients, the\n"
    "SGD update), and the per-step overhead outside the layers. Then it fits, per op class, kind\n"
    "and phase, the model\n"
    "    t = fixed + flops x s_per_flop + bytes x s_per_byte\n"
    "(a PALEO sum whose rates and per-kernel cost are measured instead of assumed) and writes it\n"
    "to -o FILE (JSON, docs/calibration.md), naming the device, backend, threads, precision and\n"
    "date. A short probe runs first for the device's peak and bandwidth.\n\n"
    "The default run times every shape in 3 rounds over the sweep and keeps each layer's median,\n"
    "so that a burst of other work on the machine spoils one round, not the fit (it says so when\n"
    "rounds disagree). On the CPU each round also times every shape with each kernel's data\n"
    "flushed from the caches (cold entries), and a chain of dependent loads measures, between\n"
    "the timings, how much other traffic pushes data out of the caches (the eviction curve):\n"
    "a network whose working set outgrows the caches runs its layers slower than they run\n"
    "alone, and predict moves each layer from its warm to its cold time by that curve\n"
    "(docs/calibration.md, \"Warm and cold\"). --warm-only skips both. About 2 minutes on a\n"
    "2-core machine; --quick: half the shapes, fewer steps, one round (under a minute).\n"
    "Progress: a bar on a terminal, a line per op class otherwise.\n"
    "\nOn a GPU (--device cuda) every shape is timed at 4 and 32 times its batch (at a CPU's "
    "sizes\n"
    "a layer fills few multiprocessors and stays in the L2 cache, unlike a network's layers at\n"
    "the batches GPUs train at), there is no cold round and no eviction curve, and the op classes\n"
    "the CUDA backend cannot train (MatMul, LayerNorm, Embedding, attention, Transpose,\n"
    "reductions) are left out, said on the log: predict times them by the cold rule.\n\n"
    "--samples FILE.csv also writes every timed layer-phase (class, kind, phase, cache, flops,\n"
    "bytes, seconds, and the families the shape is taken from), so the fit can be studied or\n"
    "re-run elsewhere.\n\n"
    "Some sweep shapes are taken from the layers of known networks (resnet, resnet50, resnext,\n"
    "vgg, alexnet, mobilenet_v2, mobilenet_v3, efficientnet, regnet, convnext, swin, vit, gpt2,\n"
    "bert, llama); --leave-out NAME,... drops them, so that a network's predicted time can be\n"
    "checked against a calibration that never saw its shapes (bench/calibration_accuracy.py).\n\n"
    "--from-samples FILE.csv --like FILE.json times nothing: it fits the samples of an earlier\n"
    "run again (with --leave-out, without those families' shapes) under the header of the file\n"
    "they came with: a GPU's calibration re-fitted and studied on a machine without the GPU.\n\n"
    "Use it with: flopmeter predict MODEL --calibration FILE (and measure --calibration FILE).\n\n"
    "examples:\n"
    "  flopmeter calibrate -o cpu.calib.json\n"
    "  flopmeter calibrate --threads 2 --quick -o cpu2.calib.json --samples cpu2.csv";

struct line_progress {
    bool tty;
    char last[64];
};

/* A bar on a terminal (cli_progress); off one, a line when the op class changes. */
static void progress(void *user, const char *what, int done, int total)
{
    struct line_progress *lp = user;
    if (lp->tty) {
        cli_progress((void *)"calibrate", what, done, total);
        return;
    }
    const char *colon = strchr(what, ':');
    if (done >= total)
        return;
    if (!colon) {   /* the probe's figures: "fp32 FMA, all threads" */
        fprintf(stderr, "calibrate: probing %s (%d/%d)\n", what, done + 1, total);
        return;
    }
    size_t len = (size_t)(colon - what);
    if (len >= sizeof(lp->last))
        return;
    if (strlen(lp->last) == len && strncmp(lp->last, what, len) == 0)
        return;
    memcpy(lp->last, what, len);
    lp->last[len] = '\0';
    fprintf(stderr, "calibrate: timing %s layers (%d/%d shapes done)\n", lp->last, done, total);
}

static int write_samples(const char *path, const struct fm_calib_sample *s, size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "flopmeter: cannot write %s\n", path);
        return FM_EXIT_FAIL;
    }
    fprintf(f, "class,kind,phase,cache,flops,bytes,seconds,families\n");
    for (size_t i = 0; i < n; i++) {
        /* the families, '+'-separated: a CSV field without quotes */
        char fam[128];
        snprintf(fam, sizeof(fam), "%s", s[i].from ? s[i].from : "");
        for (char *c = fam; *c; c++)
            *c = *c == ',' ? '+' : *c;
        fprintf(f, "%s,%s,%s,%s,%.17g,%.17g,%.17g,%s\n", fm_class_name(s[i].cls), s[i].kind,
                fm_phase_name(s[i].phase), s[i].cold ? "cold" : "warm", s[i].flops, s[i].bytes,
                s[i].seconds, fam);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "flopmeter: cannot write %s\n", path);
        return FM_EXIT_FAIL;
    }
    return FM_EXIT_OK;
}

/* What a fit holds, one line per entry. */
static void print_fit(const char *output, const struct fm_calibration *cal, size_t n_samples)
{
    struct fm_calibration_info ci;
    fm_calibration_info(cal, &ci);
    printf("%s: %zu fits from %zu timed layer-phases on %s (%s, %d threads, %s)\n", output,
           ci.n_entries, n_samples, ci.device, ci.backend, ci.threads,
           fm_precision_name(ci.precision));
    for (size_t i = 0; i < ci.n_entries; i++) {
        const struct fm_calib_entry *e = &ci.entries[i];
        char kind[FM_CALIB_KIND_MAX + 3] = "";
        if (e->kind[0])
            snprintf(kind, sizeof(kind), " %s", e->kind);
        printf("  %-13s%-12s %-10s %-4s fixed %8.1f us  %8.2f GFLOP/s  %8.2f GB/s  (%d points, "
               "rms %.0f%%)\n",
               fm_class_name(e->cls), kind, fm_phase_name(e->phase),
               e->cold ? "cold" : "warm", e->fixed_s * 1e6,
               e->s_per_flop > 0 ? 1e-9 / e->s_per_flop : 0.0,
               e->s_per_byte > 0 ? 1e-9 / e->s_per_byte : 0.0, e->points,
               100.0 * e->rel_rms);
    }
    printf("  per-step overhead outside the layers: %.1f us\n",
           ci.step_overhead_s * 1e6);
    if (ci.n_evict) {
        printf("  eviction curve (share of the way from warm to cold after other traffic):");
        for (size_t i = 0; i < ci.n_evict; i++)
            printf("%s %.0f MB %.2f", i ? "," : "", ci.evict_bytes[i] / 1048576.0,
                   ci.evict_frac[i]);
        printf("\n");
    }
}

/* --from-samples: the fit re-made from a samples CSV with the header of the file it came with
 * (--like), leaving out --leave-out's families: a GPU's calibration studied without the GPU. */
static int refit(struct fm_ctx *ctx, const char *samples_in, const char *like,
                 const char *leave_out, const char *output)
{
    struct fm_calibration *base = NULL, *cal = NULL;
    struct fm_calib_sample *samples = NULL;
    size_t n = 0, dropped = 0;
    enum fm_status st = fm_calibration_load(ctx, like, &base);
    if (!st)
        st = fm_calib_samples_load(ctx, samples_in, leave_out, &samples, &n, &dropped);
    if (!st && leave_out && strlen(leave_out) >= FM_CALIB_LIST_MAX)
        st = fm_error(ctx, FM_ERR_INVALID, "--leave-out: a list of %zu characters is too long",
                      strlen(leave_out));
    if (!st)
        st = fm_calibration_refit(ctx, base, samples, n, leave_out, &cal);
    if (!st)
        st = fm_calibration_save(ctx, cal, output);
    int r;
    if (st) {
        r = cli_fail(ctx, st);
    } else {
        if (dropped)
            printf("%zu samples of shapes taken from %s left out\n", dropped, leave_out);
        print_fit(output, cal, n);
        r = FM_EXIT_OK;
    }
    fm_dealloc(ctx, samples);
    fm_calibration_free(cal);
    fm_calibration_free(base);
    return r;
}

int cmd_calibrate(struct cli_run *run, int argc, char **argv)
{
    const char *device = "cpu", *output = NULL, *samples_path = NULL, *leave_out = NULL;
    const char *from_samples = NULL, *like = NULL;
    int64_t threads = 0, rounds = 0;
    bool quick = false, warm_only = false;
    struct cli_precision prec = {FM_PREC_FP32, false, false};
    struct cli_opt opts[] = {
        {"device", CLI_STRING, &device, NULL, "cpu|cuda|cuda:N", "where to time (default cpu)",
         NULL, NULL},
        {"threads", CLI_UINT, &threads, NULL, "T", "CPU threads (default 0: all CPUs)", NULL,
         NULL},
        {"precision", CLI_PARSED, &prec, cli_parse_precision, "fp32|tf32|fp16|bf16",
         "compute precision (default fp32)", NULL, NULL},
        {"quick", CLI_FLAG, &quick, NULL, NULL, "about a minute: half the shapes, fewer steps",
         NULL, NULL},
        {"rounds", CLI_INT, &rounds, NULL, "N",
         "time every shape N times, in rounds over the sweep, and keep each layer's median "
         "(default 3; 1 with --quick; at most 9)",
         NULL, NULL},
        {"warm-only", CLI_FLAG, &warm_only, NULL, NULL,
         "no cold-cache round and no eviction curve: layers predicted as fast as alone", NULL,
         NULL},
        {"output", CLI_STRING, &output, NULL, "FILE",
         "the calibration file to write (required; also -o FILE)", NULL, NULL},
        {"samples", CLI_STRING, &samples_path, NULL, "FILE.csv",
         "also write every timed layer-phase as CSV", NULL, NULL},
        {"leave-out", CLI_STRING, &leave_out, NULL, "FAMILY[,FAMILY...]",
         "drop the sweep shapes taken from these networks' layers (accuracy tests)", NULL,
         NULL},
        {"from-samples", CLI_STRING, &from_samples, NULL, "FILE.csv",
         "time nothing: fit the samples of an earlier --samples FILE.csv (with --like)", NULL,
         NULL},
        {"like", CLI_STRING, &like, NULL, "FILE.json",
         "with --from-samples: the calibration file the samples came with (device, backend, "
         "precision, probe figures, overhead and eviction curve are taken from it)",
         NULL, NULL},
        {0},
    };
    int r = cli_parse("calibrate", "-o FILE [options]", description, opts, argc, argv, NULL, 0, 0);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    if (!output) {
        fprintf(stderr, "flopmeter calibrate: -o FILE is required (where to write the "
                        "calibration)\n(see flopmeter calibrate --help)\n");
        return FM_EXIT_USAGE;
    }
    if (!from_samples != !like) {
        fprintf(stderr, "flopmeter calibrate: --from-samples and --like go together: the "
                        "samples and the calibration file they came with\n"
                        "(see flopmeter calibrate --help)\n");
        return FM_EXIT_USAGE;
    }
    struct fm_ctx *ctx = run->ctx;
    if (from_samples) {
        r = refit(ctx, from_samples, like, leave_out, output);
        return r;
    }
    struct line_progress lp = {isatty(2) != 0, ""};
    struct fm_calibrate_opts co;
    fm_calibrate_opts_init(&co);
    co.device = device;
    co.threads = threads > 100000 ? 100001 : (int)threads;
    co.precision = prec.precision;
    co.quick = quick;
    co.warm_only = warm_only;
    co.rounds = rounds > 100 ? 100 : (int)rounds;
    co.leave_out = leave_out;
    co.progress = progress;
    co.progress_user = &lp;
    struct fm_calibration *cal = NULL;
    struct fm_calib_sample *samples = NULL;
    size_t n_samples = 0;
    enum fm_status st = fm_calibrate(ctx, &co, &cal, &samples, &n_samples);
    if (!st)
        st = fm_calibration_save(ctx, cal, output);
    if (st) {
        r = cli_fail(ctx, st);
    } else {
        r = samples_path ? write_samples(samples_path, samples, n_samples) : FM_EXIT_OK;
        print_fit(output, cal, n_samples);
    }
    fm_dealloc(ctx, samples);
    fm_calibration_free(cal);
    return r;
}
