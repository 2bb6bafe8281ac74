/* The session: everything a command needs, resolved once and in one place, so that every command
 * (and any program linking the library) gets the same answer to the same question:
 *   - the model, with the loss policy applied for training (src/frontend/loss.c), and its counts;
 *   - the device: a device-table name or alias, a name as nvidia-smi prints it, "cpu" (a short
 *     probe of this machine) or "cuda[:N]" (the GPU's own name matched to the table);
 *   - the precision (default: the storage dtype; torch-default is PyTorch's TF32 convolutions);
 *   - the peak utilization is quoted against (fm_device_util_peak, or --peak);
 *   - the prediction, the run estimate and data parallelism;
 *   - for measure, the backend run (and an epoch of runs), and the utilization it reached.
 * It prints nothing: src/report renders a session, the CLI prints what it renders. Warnings go to
 * the context's log sink. */
#include "../core/internal.h"
#include "analysis.h"
#include "calibration_internal.h"
#include "session_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const task_names[] = {
    [FM_TASK_WORK] = "count",          [FM_TASK_ROOFLINE] = "roofline",
    [FM_TASK_PREDICT] = "predict",     [FM_TASK_UTILIZATION] = "utilization",
    [FM_TASK_MEASURE] = "measure",
};
_Static_assert(sizeof(task_names) / sizeof(task_names[0]) == FM_TASK_COUNT,
               "task_names must name every enum fm_task");

const char *fm_task_name(enum fm_task task)
{
    return (unsigned)task < FM_TASK_COUNT ? task_names[task] : "?";
}

void fm_session_opts_init(struct fm_session_opts *o, enum fm_task task)
{
    memset(o, 0, sizeof(*o));
    o->task = task;
    fm_load_opts_init(&o->load);
    fm_count_opts_init(&o->count);
    fm_predict_opts_init(&o->predict);
    fm_measure_opts_init(&o->run);
    o->precision = FM_PREC_FP32;
    o->epochs = 1.0;
    o->gpus = 1;
}

const char *fm_session_precision_label(const struct fm_session *s)
{
    return s->torch_default ? "torch-default" : fm_precision_name(s->precision);
}

/* ---- the accessors: what a program outside the library reads of a session ---- */

const struct fm_graph *fm_session_graph(const struct fm_session *s)
{
    return s->graph;
}

const struct fm_counts *fm_session_counts(const struct fm_session *s)
{
    return s->counts;
}

const struct fm_loss_info *fm_session_loss(const struct fm_session *s)
{
    return &s->loss;
}

int64_t fm_session_batch(const struct fm_session *s)
{
    return s->batch;
}

const char *fm_session_storage(const struct fm_session *s, enum fm_dtype *activations,
                               enum fm_dtype *parameters)
{
    if (activations)
        *activations = s->storage_activations;
    if (parameters)
        *parameters = s->storage_parameters;
    return s->storage_how;
}

const char *fm_session_export_note(const struct fm_session *s)
{
    return s->export_note;
}

const struct fm_device *fm_session_device(const struct fm_session *s, const char **how,
                                          const char **note)
{
    if (how)
        *how = s->device_how;
    if (note)
        *note = s->device_note;
    return s->device;
}

const struct fm_probe_result *fm_session_probe(const struct fm_session *s)
{
    return s->probe;
}

const struct fm_memory_check *fm_session_memory(const struct fm_session *s)
{
    return &s->memory;
}

enum fm_precision fm_session_precision(const struct fm_session *s, bool *torch_default)
{
    if (torch_default)
        *torch_default = s->torch_default;
    return s->precision;
}

double fm_session_peak(const struct fm_session *s, const char **source)
{
    if (source)
        *source = s->peak_source;
    return s->peak;
}

const struct fm_prediction *fm_session_prediction(const struct fm_session *s)
{
    return s->prediction;
}

const struct fm_run_estimate *fm_session_run_estimate(const struct fm_session *s, bool one_gpu)
{
    if (!s->have_run)
        return NULL;
    return one_gpu ? &s->run_1gpu : &s->run;
}

const struct fm_dp_estimate *fm_session_data_parallel(const struct fm_session *s,
                                                      const char **link)
{
    if (link)
        *link = s->link_name;
    return s->have_dp ? &s->dp : NULL;
}

const struct fm_utilization *fm_session_utilization(const struct fm_session *s)
{
    return s->have_util ? &s->util : NULL;
}

const struct fm_backend_check *fm_session_backend_check(const struct fm_session *s)
{
    return s->opts.task == FM_TASK_MEASURE ? &s->check : NULL;
}

const struct fm_measurement *fm_session_measurement(const struct fm_session *s)
{
    return s->measurement;
}

const struct fm_measurement *fm_session_epoch(const struct fm_session *s, uint64_t *steps,
                                              double *seconds)
{
    if (steps)
        *steps = s->epoch ? s->epoch_steps : 0;
    if (seconds)
        *seconds = s->epoch ? s->epoch_s : 0;
    return s->epoch;
}

void fm_session_free(struct fm_session *s)
{
    if (!s)
        return;
    struct fm_ctx *ctx = s->ctx;
    fm_measurement_free(s->measurement);
    fm_measurement_free(s->epoch);
    fm_prediction_free(s->prediction);
    fm_counts_free(s->counts);
    fm_devices_free(s->devices);
    fm_graph_free(s->graph);
    fm_dealloc(ctx, s->probe);
    fm_dealloc(ctx, s);
}

/* ---- options that do not depend on the model ---- */

/* A bad option is FM_ERR_INVALID (a usage error): the message says what to give instead. */
static enum fm_status check_opts(struct fm_ctx *ctx, const struct fm_session_opts *o)
{
    const struct fm_predict_opts *p = &o->predict;
    if ((unsigned)o->task >= FM_TASK_COUNT)
        return fm_error(ctx, FM_ERR_INVALID, "unknown task %d", (int)o->task);
    if (!(p->ppp_compute > 0 && p->ppp_compute <= 1) ||
        !(p->ppp_memory > 0 && p->ppp_memory <= 1) || !(p->ppp_comm > 0 && p->ppp_comm <= 1))
        return fm_error(ctx, FM_ERR_INVALID, "PPP values are fractions of peak: each must be in "
                        "(0, 1] (e.g. fm_predict_opts.ppp_compute 0.62)");
    if (!(p->launch_overhead_us >= 0) || !isfinite(p->launch_overhead_us))
        return fm_error(ctx, FM_ERR_INVALID, "fm_predict_opts.launch_overhead_us must be >= 0");
    if (!(o->epochs >= 0) || !isfinite(o->epochs))
        return fm_error(ctx, FM_ERR_INVALID, "fm_session_opts.epochs must be >= 0");
    if (o->gpus < 1 || o->gpus > 65536)
        return fm_error(ctx, FM_ERR_INVALID, "fm_session_opts.gpus must be between 1 and 65536");
    if (o->gpus > 1 && o->count.mode == FM_MODE_INFER)
        return fm_error(ctx, FM_ERR_INVALID, "fm_session_opts.gpus models data-parallel training; "
                                             "drop FM_MODE_INFER");
    if (o->peak < 0 || !isfinite(o->peak))
        return fm_error(ctx, FM_ERR_INVALID, "fm_session_opts.peak must be positive FLOP/s (e.g. "
                                             "1.5e11)");
    if (o->peak > 0 && o->peak < 1e9) {
        /* no device worth measuring peaks below 1 GFLOP/s: a unit slip (TFLOP/s or GFLOP/s
         * typed as FLOP/s), which would print utilizations in the billions of percent */
        bool tera = o->peak < 1e4;
        char as_flops[FM_FORMAT_SIZE];
        return fm_error(ctx, FM_ERR_INVALID, "fm_session_opts.peak %g is in FLOP/s, below any "
                        "device's peak: did you mean %ge%d (%sFLOP/s)? Units are accepted: "
                        "fm_session_opts.peak %g%s",
                        o->peak, o->peak, tera ? 12 : 9,
                        fm_format_si(o->peak * (tera ? 1e12 : 1e9), as_flops), o->peak,
                        tera ? "T" : "G");
    }
    if (o->task == FM_TASK_UTILIZATION) {
        if (!(o->step_s >= 0) || !(o->epoch_s >= 0))
            return fm_error(ctx, FM_ERR_INVALID, "times must be positive (e.g. 0.25, 250ms)");
        if (o->step_s == 0 && o->epoch_s == 0)
            return fm_error(ctx, FM_ERR_INVALID, "give fm_session_opts.step_s T (and/or "
                            "fm_session_opts.epoch_s T with fm_session_opts.dataset_size N)");
        if (o->epoch_s > 0 && o->dataset_size == 0)
            return fm_error(ctx, FM_ERR_INVALID, "fm_session_opts.epoch_s needs "
                            "fm_session_opts.dataset_size N (samples per epoch)");
    }
    if (o->task == FM_TASK_MEASURE) {
        if (o->count.optimizer != FM_OPTIM_SGD)
            return fm_error(ctx, FM_ERR_INVALID, "the measured step uses SGD with momentum; "
                            "fm_count_opts.optimizer %s is for count/predict only",
                            fm_optimizer_name(o->count.optimizer));
        if (o->run.steps < 1 || o->run.steps > 100000 || o->run.warmup < 0 ||
            o->run.warmup > 100000 || o->run.threads < 0 || o->run.threads > 4096)
            return fm_error(ctx, FM_ERR_INVALID, "fm_measure_opts.steps and fm_measure_opts.warmup "
                            "at most 100000, fm_measure_opts.threads at most 4096");
        struct fm_target t;
        enum fm_status st = fm_target_parse(ctx, o->device, &t);
        if (st)
            return fm_error(ctx, FM_ERR_INVALID, "fm_session_opts.device %s: use cpu, cuda or "
                                                 "cuda:N",
                            o->device ? o->device : "?");
        if (o->torch_default)
            return fm_error(ctx, FM_ERR_INVALID, "a measured step runs at one precision: give "
                            "fm_session_opts.precision fp32, tf32, fp16 or bf16, not "
                            "torch-default");
    }
    return FM_OK;
}

/* ---- the model ---- */

/* How float tensors are stored. --dtype: every one in that type. Else the precision decides:
 * fp16/bf16 is mixed precision as PyTorch's autocast runs it (half activations, fp32 weights,
 * gradients and optimizer state), fp8 the same with bf16 activations (fp8 matmuls inside bf16
 * autocast, as Transformer Engine and fm_plan run them), fp64 is fp64 throughout, anything else keeps the model's own
 * types (fp32 for a built-in, the file's for ONNX). FM_DTYPE_COUNT: leave that kind alone. */
static void storage_policy(const struct fm_session *s, enum fm_dtype *act, enum fm_dtype *param,
                           char *how, size_t size)
{
    char ignored[1];
    if (!how) {   /* only the types */
        how = ignored;
        size = sizeof(ignored);
    }
    const struct fm_session_opts *o = &s->opts;
    *act = *param = FM_DTYPE_COUNT;
    if (o->load.dtype_given) {
        *act = *param = o->load.zoo.dtype;
        snprintf(how, size, "fm_zoo_opts.dtype %s", fm_dtype_name(o->load.zoo.dtype));
    } else if (o->precision_given && !s->torch_default &&
               (s->precision == FM_PREC_FP16 || s->precision == FM_PREC_BF16)) {
        *act = s->precision == FM_PREC_FP16 ? FM_DTYPE_FP16 : FM_DTYPE_BF16;
        snprintf(how, size, "mixed precision as autocast runs it: %s activations, weights, "
                 "gradients and optimizer state as they were (fm_zoo_opts.dtype to store all in "
                 "one type)",
                 fm_dtype_name(*act));
    } else if (o->precision_given && s->precision == FM_PREC_FP8) {
        /* fp8 training as Transformer Engine runs it inside bf16 autocast: the matmuls' inputs
         * are cast to fp8 on the way in, everything between them is bf16 */
        *act = FM_DTYPE_BF16;
        snprintf(how, size, "fp8 matmuls in bf16 mixed precision (Transformer Engine's): bf16 "
                 "activations; weights, gradients and optimizer state as they were");
    } else if (o->precision_given && s->precision == FM_PREC_FP64) {
        *act = *param = FM_DTYPE_FP64;
        snprintf(how, size, "fm_session_opts.precision fp64: fp64 throughout (fm_zoo_opts.dtype to "
                            "change)");
    } else {
        snprintf(how, size, "the model's own types");
    }
}

/* The float type most tensors of a role group have (FM_DTYPE_FP32 when there are none). */
static enum fm_dtype common_float(const struct fm_graph *g, bool state)
{
    size_t seen[FM_DTYPE_COUNT] = {0};
    for (size_t i = 0; i < fm_graph_tensor_count(g); i++) {
        const struct fm_tensor *t = fm_graph_tensor(g, (fm_tid)i);
        bool is_state = t->role == FM_ROLE_PARAM || t->role == FM_ROLE_BUFFER;
        if (fm_dtype_is_float(t->dtype) && is_state == state)
            seen[t->dtype]++;
    }
    enum fm_dtype best = FM_DTYPE_FP32;
    for (int d = 0; d < FM_DTYPE_COUNT; d++)
        if (seen[d] > seen[best])
            best = (enum fm_dtype)d;
    return best;
}

/* The parameters the caller froze (requires_grad=False) get no gradient: a name the graph
 * lacks is a mistake worth saying, one that is no parameter here (folded into a constant, a
 * buffer) has nothing to freeze. Finalized again: trainability decides what needs a gradient. */
static enum fm_status freeze(struct fm_session *s, struct fm_graph *g)
{
    for (size_t i = 0; i < s->opts.n_frozen; i++) {
        const char *name = s->opts.frozen[i];
        fm_tid t = name ? fm_graph_find_tensor(g, name) : FM_NONE;
        if (t == FM_NONE)
            return fm_error(s->ctx, FM_ERR_INVALID, "frozen parameter '%s': %s has no tensor "
                            "of that name", name ? name : "(null)", fm_graph_name(g));
        fm_graph_set_trainable(g, t, false);
    }
    return fm_graph_finalize(g);
}

/* Loads the model at a batch, adds the loss of a training step, stores it by the policy and
 * counts it. *graph and *counts are the caller's on success. */
static enum fm_status load_and_count(struct fm_session *s, int64_t batch, bool batch_given,
                                     struct fm_graph **graph, struct fm_loss_info *loss,
                                     struct fm_counts **counts)
{
    struct fm_load_opts lo = s->opts.load;
    lo.zoo.batch = batch;
    lo.batch_given = batch_given;
    /* the loss comes from the policy below, the same for the zoo and for files */
    lo.zoo.with_loss = false;
    if (s->opts.model_data) {   /* an ONNX model in memory (the Python package's capture) */
        lo.model_data = s->opts.model_data;
        lo.model_size = s->opts.model_size;
    }
    *graph = NULL;
    *counts = NULL;
    enum fm_status st = fm_model_load(s->ctx, s->opts.model, &lo, graph);
    if (st)
        return st;
    if (s->opts.n_frozen && (st = freeze(s, *graph))) {
        fm_graph_free(*graph);
        *graph = NULL;
        return st;
    }
    if (s->opts.count.mode == FM_MODE_TRAIN) {
        fm_tid on = FM_NONE;
        if (s->opts.loss_on && (on = fm_graph_find_tensor(*graph, s->opts.loss_on)) == FM_NONE) {
            char outs[512];
            fm_graph_outputs_text(*graph, outs, sizeof(outs));
            fm_graph_free(*graph);
            *graph = NULL;
            return fm_error(s->ctx, FM_ERR_INVALID, "fm_session_opts.loss_on: '%s' has no tensor "
                            "named '%s' (its outputs: %s)", s->opts.model, s->opts.loss_on, outs);
        }
        st = fm_graph_add_loss(*graph, on, loss);
    } else {
        loss->n = 0;
        snprintf(loss->summary, sizeof(loss->summary), "none (inference)");
    }
    if (!st) {
        enum fm_dtype act, param;
        storage_policy(s, &act, &param, NULL, 0);
        if (act != FM_DTYPE_COUNT || param != FM_DTYPE_COUNT)
            fm_graph_set_storage(*graph, act, param);
        st = fm_count(s->ctx, *graph, &s->opts.count, counts);
    }
    if (st) {
        fm_graph_free(*graph);
        *graph = NULL;
    }
    return st;
}

/* A file exported for inference (PyTorch's default export folds each BatchNorm into the
 * convolution before it, which gains a bias, and drops Dropout) counted as a training step
 * loses BatchNorm's and Dropout's work and memory without a word. Its marks: convolutions, most
 * with a bias, no BatchNorm, no Dropout. A network normalized otherwise (LayerNorm, GroupNorm,
 * InstanceNorm: ConvNeXt, ViT, Swin) never had BatchNorm to fold, and is left alone; one that
 * never had either and no other norm (VGG, SqueezeNet) looks the same: the note says "looks". */
static void check_inference_export(struct fm_session *s)
{
    const struct fm_graph *g = s->graph;
    if (s->counts->mode != FM_MODE_TRAIN || (!s->opts.model_data && !s->opts.load.model_data &&
                                                fm_zoo_find(s->opts.model)))
        return;
    size_t conv = 0, biased = 0, bn = 0, dropout = 0;   /* bn: any normalization layer */
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        if (n->op == FM_OP_CONV) {
            conv++;
            biased += n->n_in > 2 && n->in[2] != FM_NONE;
        }
        bn += n->op == FM_OP_BATCHNORM || n->op == FM_OP_LAYERNORM ||
              n->op == FM_OP_GROUPNORM || n->op == FM_OP_INSTANCENORM;
        dropout += n->op == FM_OP_DROPOUT;
    }
    if (conv == 0 || bn || dropout || 2 * biased < conv)
        return;
    snprintf(s->export_note, sizeof(s->export_note),
             "%s looks exported for inference: %zu of its %zu convolutions carry a bias and it has "
             "no BatchNorm and no Dropout, as when torch.onnx.export folds BatchNorm into the "
             "convolutions and drops Dropout. A training count of it leaves out the work and "
             "memory of any BatchNorm folded away and any Dropout dropped: export the model in "
             "training mode with torch.onnx.export(model.train(), ..., dynamo=True, "
             "optimize=False) (docs/pytorch.md), or count it with FM_MODE_INFER",
             fm_graph_name(g), biased, conv);
    fm_log(s->ctx, "%s", s->export_note);
}

static enum fm_status load_model(struct fm_session *s)
{
    enum fm_dtype act, param;
    storage_policy(s, &act, &param, s->storage_how, sizeof(s->storage_how));
    enum fm_status st = load_and_count(s, s->opts.load.zoo.batch, s->opts.load.batch_given,
                                       &s->graph, &s->loss, &s->counts);
    if (st)
        return st;
    s->batch = fm_graph_batch(s->graph);
    s->storage_activations = common_float(s->graph, false);
    s->storage_parameters = common_float(s->graph, true);
    check_inference_export(s);
    return FM_OK;
}

/* ---- does it fit ---- */

/* The memory of a step at another batch, counted (nothing logged: the session's own load
 * already said what there was to say). */
static enum fm_status memory_at(struct fm_session *s, int64_t batch, uint64_t *bytes)
{
    /* inputs bound by name (--input ids=2x16) carry the batch in their first dimension */
    struct fm_input_binding bound[32];
    const struct fm_input_binding *given = s->opts.load.bindings;
    size_t n = s->opts.load.n_bindings;
    if (n > sizeof(bound) / sizeof(bound[0]))
        return FM_ERR_INVALID;
    for (size_t i = 0; i < n; i++) {
        bound[i] = given[i];
        if (bound[i].shape.rank > 0 && bound[i].shape.dims[0] == s->batch)
            bound[i].shape.dims[0] = batch;
    }
    s->opts.load.bindings = bound;
    fm_log_fn log_fn = s->ctx->log_fn;
    s->ctx->log_fn = NULL;
    struct fm_graph *g;
    struct fm_loss_info loss;
    struct fm_counts *c;
    enum fm_status st = load_and_count(s, batch, true, &g, &loss, &c);
    s->ctx->log_fn = log_fn;
    s->opts.load.bindings = given;
    if (st)
        return st;
    st = fm_counts_training_memory(c, bytes);
    fm_counts_free(c);
    fm_graph_free(g);
    return st;
}

/* The largest batch whose memory fits cap: a straight line through batches 1 and 2 gives the
 * guess (weights are fixed, activations grow with the batch), counts confirm it and step from
 * it where the model is not quite linear. -1 when the model's batch cannot be changed. */
static enum fm_status largest_batch(struct fm_session *s, double cap, int64_t *out)
{
    /* running out of memory is an error; a model whose batch cannot be changed is "unknown" */
#define MEMORY_AT(b, m)                                                                          \
    do {                                                                                         \
        enum fm_status st_ = memory_at(s, (b), (m));                                             \
        if (st_)                                                                                 \
            return st_ == FM_ERR_NOMEM ? st_ : FM_OK;                                            \
    } while (0)
    *out = -1;
    uint64_t m1, m2;
    MEMORY_AT(1, &m1);
    MEMORY_AT(2, &m2);
    if (m2 <= m1)
        return FM_OK;
    if ((double)m1 > cap) {
        *out = 0;
        return FM_OK;
    }
    double per = (double)(m2 - m1), fixed = (double)m1 - per;
    double guess = floor((cap - fixed) / per);
    int64_t lo = 1, hi = 0;   /* lo fits; hi, once known, does not */
    uint64_t m;
    /* the guess and its neighbour settle a model whose memory is a straight line */
    int64_t b = guess > 1 ? (guess < 1e12 ? (int64_t)guess : (int64_t)1e12) : 1;
    for (int i = 0; i < 2 && b > lo; i++) {
        MEMORY_AT(b, &m);
        bool fits = (double)m <= cap;
        if (fits)
            lo = b;
        else
            hi = b;
        b = fits ? b + 1 : b - 1;
    }
    /* anything else: doubling until one does not fit, then bisection */
    for (int i = 0; i < 80 && (hi == 0 || hi - lo > 1); i++) {
        b = hi ? lo + (hi - lo) / 2 : lo * 2;
        if (b > (int64_t)1e12)
            return FM_OK;
        MEMORY_AT(b, &m);
        if ((double)m <= cap)
            lo = b;
        else
            hi = b;
    }
#undef MEMORY_AT
    if (hi && hi - lo <= 1)
        *out = lo;
    return FM_OK;
}

static enum fm_status check_memory(struct fm_session *s)
{
    struct fm_memory_check *mc = &s->memory;
    memset(mc, 0, sizeof(*mc));
    if (!s->device || !(s->device->mem_bytes > 0) ||
        fm_counts_training_memory(s->counts, &mc->needed_bytes))
        return FM_OK;
    mc->checked = true;
    mc->mode = s->counts->mode;
    mc->batch = s->batch;
    mc->gpus = s->opts.gpus;
    mc->device_bytes = s->device->mem_bytes;
    snprintf(mc->device, sizeof(mc->device), "%s", s->device->name);
    mc->fits = (double)mc->needed_bytes <= mc->device_bytes;
    enum fm_status st = largest_batch(s, mc->device_bytes, &mc->max_batch);
    if (st)
        return fm_error(s->ctx, st, "out of memory counting the largest batch that fits");
    if (!mc->fits) {
        char need[FM_FORMAT_SIZE], have[FM_FORMAT_SIZE];
        char best[96] = "";
        if (mc->max_batch > 0)
            snprintf(best, sizeof(best), "; the largest batch that fits is %" PRId64 "%s",
                     mc->max_batch, mc->gpus > 1 ? " per GPU" : "");
        else if (mc->max_batch == 0)
            snprintf(best, sizeof(best), "; not even one sample fits");
        fm_log(s->ctx, "%s at batch %" PRId64 " needs %s, more than the %s's %s: it does not "
               "fit%s",
               mc->mode == FM_MODE_TRAIN ? "a training step" : "inference", mc->batch,
               fm_format_bytes((double)mc->needed_bytes, need), mc->device,
               fm_format_bytes(mc->device_bytes, have), best);
    }
    return FM_OK;
}

/* The memory this machine has free for a step: MemAvailable, 0 when unknown. */
static double mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    bool found = false;
    while (f && !found && fgets(line, sizeof(line), f))
        found = sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
    if (f)
        fclose(f);
    return found ? (double)kb * 1024.0 : 0.0;
}

/* measure on the CPU: the step's working set, planned from the count (weights, gradients,
 * optimizer state, saved activations) before the backend allocates anything, against the memory
 * this machine has free or --max-memory. A step that does not fit is an error that names the
 * largest batch that does, and nothing runs. */
static enum fm_status check_step_memory(struct fm_session *s, const struct fm_target *t)
{
    uint64_t need;
    if (t->kind != FM_TARGET_CPU || !s->counts || fm_counts_training_memory(s->counts, &need))
        return FM_OK;
    double cap = s->opts.memory_cap > 0 ? s->opts.memory_cap : mem_available();
    if (!(cap > 0) || (double)need <= cap)
        return FM_OK;
    int64_t best = -1;
    enum fm_status st = largest_batch(s, cap, &best);
    if (st)
        return fm_error(s->ctx, st, "out of memory counting the largest batch that fits");
    char needs[FM_FORMAT_SIZE], has[FM_FORMAT_SIZE], fits[96] = "";
    if (best > 0)
        snprintf(fits, sizeof(fits), "; the largest batch that fits is %" PRId64
                                     " (fm_zoo_opts.batch)", best);
    else if (best == 0)
        snprintf(fits, sizeof(fits), "; not even one sample fits");
    return fm_error(s->ctx, FM_ERR_NOMEM,
                    "%s of %s at batch %" PRId64 " needs %s (weights, gradients, optimizer "
                    "state and saved activations, counted), more than the %s %s%s; nothing was "
                    "run",
                    s->counts->mode == FM_MODE_TRAIN ? "a training step" : "an inference step",
                    fm_graph_name(s->graph), s->batch, fm_format_bytes((double)need, needs),
                    fm_format_bytes(cap, has),
                    s->opts.memory_cap > 0 ? "given by fm_session_opts.memory_cap"
                                           : "this machine has free (MemAvailable)",
                    fits);
}

/* ---- the device ---- */

static enum fm_status open_devices(struct fm_session *s)
{
    if (s->devices)
        return FM_OK;
    return fm_devices_load(s->ctx, s->opts.devices_file, &s->devices);
}

/* An unknown device name is a bad option: FM_ERR_INVALID, the lookup's message kept. */
static enum fm_status find_device(struct fm_session *s, const char *name, const char *what)
{
    enum fm_status st = open_devices(s);
    if (st)
        return st;
    st = fm_devices_find(s->ctx, s->devices, name, &s->device);
    if (st)
        return st == FM_ERR_NOT_FOUND ? FM_ERR_INVALID : st;
    snprintf(s->device_how, sizeof(s->device_how), "%s", what);
    double named_mem = 0;
    fm_device_name_note(s->devices, name, s->device, s->device_note, sizeof(s->device_note),
                        &named_mem);
    if (named_mem > 0) {
        s->named = *s->device;
        snprintf(s->named_name, sizeof(s->named_name), "%s, %.0f GB as named", s->device->name,
                 named_mem / 1e9);
        s->named.name = s->named_name;
        s->named.mem_bytes = named_mem;
        s->device = &s->named;
    }
    if (s->device_note[0])
        fm_log(s->ctx, "%s", s->device_note);
    return FM_OK;
}

static void probe_progress(void *user, const char *what, int done, int total)
{
    const struct fm_session *s = user;
    char label[96];
    snprintf(label, sizeof(label), "probe: %s", what);
    s->opts.progress(s->opts.progress_user, label, done, total);
}

/* A short probe of a device to run on: its figures become the session's device. */
static enum fm_status probe_device(struct fm_session *s, const char *target)
{
    struct fm_probe_opts po;
    fm_probe_opts_init(&po);
    po.device = target;
    po.threads = s->opts.run.threads;
    po.repetitions = 3;
    po.seconds = 0.1;
    if (s->opts.progress) {
        po.progress = probe_progress;
        po.progress_user = s;
    }
    if (!s->probe && !(s->probe = fm_alloc(s->ctx, sizeof(*s->probe))))
        return fm_error(s->ctx, FM_ERR_NOMEM, "out of memory for the probe");
    enum fm_status st = fm_probe(s->ctx, &po, s->probe);
    if (st)
        return st;
    st = fm_probe_to_device(s->probe, &s->probed);
    if (st)
        return fm_error(s->ctx, st, "the probe of %s gave no device", target);
    s->device = &s->probed;
    snprintf(s->device_how, sizeof(s->device_how), "a short probe of this device");
    return FM_OK;
}

/* The peak utilization is quoted against, one rule: --peak, else the device's conv/matmul
 * ceiling at the precision (fm_device_util_peak). The source says where it came from. */
static void set_peak(struct fm_session *s, const char *provenance)
{
    if (s->opts.peak > 0) {
        s->peak = s->opts.peak;
        snprintf(s->peak_source, sizeof(s->peak_source), "fm_session_opts.peak");
        return;
    }
    if (!s->device)
        return;
    s->peak = fm_device_util_peak(s->device, s->precision, s->torch_default);
    if (s->probe && s->device == &s->probed) {
        /* say which probe figure it is: a BLAS faster than the FMA loop is a matrix unit */
        enum fm_precision p = s->precision == FM_PREC_TF32 ? FM_PREC_FP32 : s->precision;
        bool gemm = s->probe->gemm[s->precision].median > s->probe->fma_all[p].median;
        snprintf(s->peak_source, sizeof(s->peak_source),
                 "a short probe of this device: median %s %s with %d thread%s (flopmeter probe "
                 "for more repetitions)",
                 fm_precision_name(gemm ? s->precision : p), gemm ? "GEMM" : "FMA",
                 s->probe->threads, s->probe->threads == 1 ? "" : "s");
        return;
    }
    snprintf(s->peak_source, sizeof(s->peak_source), "%s, the conv/matmul ceiling at %s%s",
             s->device->name, fm_session_precision_label(s), provenance);
}

/* Devices of the analysis commands: a table entry, or a device string ("cpu": probe this
 * machine; "cuda[:N]": probe the GPU and use its table entry when the table has it). */
static enum fm_status analysis_device(struct fm_session *s)
{
    const char *name = s->opts.device;
    if (!name || !*name)
        return fm_error(s->ctx, FM_ERR_INVALID, "give the device: fm_session_opts.device NAME "
                        "(flopmeter devices lists them, e.g. fm_session_opts.device a100)");
    struct fm_target t;
    enum fm_status st = fm_target_parse(s->ctx, name, &t);
    if (st == FM_ERR_NOT_FOUND)
        return find_device(s, name, "the device table");
    if (st)
        return st;
    st = probe_device(s, name);
    if (st || t.kind != FM_TARGET_CUDA)
        return st;
    /* a GPU: its datasheet when the table knows its name, the probe's figures otherwise */
    const struct fm_device *d = NULL;
    if (open_devices(s) == FM_OK && fm_devices_match(s->ctx, s->devices, s->probed.name, &d) == 0) {
        s->device = d;
        snprintf(s->device_how, sizeof(s->device_how), "matched from the GPU's name '%.80s'",
                 s->probed.name);
    }
    return FM_OK;
}

static void resolve_precision(struct fm_session *s)
{
    const struct fm_session_opts *o = &s->opts;
    s->torch_default = o->torch_default;
    if (o->torch_default)
        s->precision = FM_PREC_FP32;
    else if (o->precision_given || o->task == FM_TASK_MEASURE)
        s->precision = o->precision;
    else   /* the storage dtype is the natural compute precision */
        s->precision = o->load.zoo.dtype == FM_DTYPE_FP16   ? FM_PREC_FP16
                       : o->load.zoo.dtype == FM_DTYPE_BF16 ? FM_PREC_BF16
                       : o->load.zoo.dtype == FM_DTYPE_FP64 ? FM_PREC_FP64
                                                            : FM_PREC_FP32;
}

/* ---- prediction ---- */

static enum fm_status predict(struct fm_session *s)
{
    struct fm_predict_opts po = s->opts.predict;
    po.device = s->device;
    po.precision = s->precision;
    po.torch_default = s->torch_default;
    enum fm_status st;
    /* a calibration predicts the device it was made on: its name and precision must match
     * (measure checks backend and threads before it runs) */
    const struct fm_calibration *cal = po.calibration;
    if (cal && s->opts.task != FM_TASK_MEASURE &&
        (st = fm_calibration_check(s->ctx, cal, s->device->name, cal->backend, cal->threads,
                                   s->precision, s->opts.force_calibration)))
        return st;
    st = fm_predict(s->ctx, s->graph, s->counts, &po, &s->prediction);
    if (st || s->opts.task != FM_TASK_PREDICT)
        return st;
    st = fm_predict_run(s->ctx, s->prediction, s->counts, s->batch,
                        s->opts.dataset_size, s->opts.epochs, &s->run);
    if (st)
        return st;
    s->have_run = true;
    s->run_1gpu = s->run;
    if (s->opts.gpus <= 1)
        return FM_OK;
    double link_bw = s->device->interconnect_bw;
    snprintf(s->link_name, sizeof(s->link_name), "%s",
             s->device->interconnect ? s->device->interconnect : "?");
    if (s->opts.interconnect) {
        const struct fm_link *l = fm_link_find(s->opts.interconnect);
        if (!l) {
            char names[256];
            size_t len = 0;
            names[0] = '\0';
            for (size_t i = 0; i < fm_link_count() && len < sizeof(names); i++)
                len += (size_t)snprintf(names + len, sizeof(names) - len, " %s",
                                        fm_link_get(i)->name);
            return fm_error(s->ctx, FM_ERR_INVALID, "unknown fm_session_opts.interconnect '%s'; "
                                                    "one of:%s",
                            s->opts.interconnect, names);
        }
        link_bw = l->bw;
        snprintf(s->link_name, sizeof(s->link_name), "%s", l->name);
    }
    st = fm_predict_data_parallel(s->ctx, s->graph, s->counts, s->prediction,
                                  s->batch, s->opts.gpus, link_bw,
                                  s->opts.predict.ppp_comm, &s->dp);
    if (st)
        return st;
    s->have_dp = true;
    /* the run follows the data-parallel step: batch x N samples a step, so 1/N of the steps */
    s->run_1gpu = s->run;
    return fm_predict_run_data_parallel(s->ctx, s->prediction, s->counts,
                                        s->batch, &s->dp, s->opts.dataset_size,
                                        s->opts.epochs, &s->run);
}

/* ---- measure ---- */

static void run_progress(void *user, const char *what, int done, int total)
{
    const struct fm_session *s = user;
    char label[96];
    snprintf(label, sizeof(label), "%s: %s", s->epoch_running ? "epoch" : "steps", what);
    s->opts.progress(s->opts.progress_user, label, done, total);
}

static enum fm_status measure(struct fm_session *s)
{
    const struct fm_session_opts *o = &s->opts;
    struct fm_target t;
    enum fm_status st = fm_target_parse(s->ctx, o->device, &t);
    if (st)
        return FM_ERR_INVALID;
    bool peak_given = o->peak > 0, matched = false;
    /* every layer the backend cannot run, named before anything runs (or all a dry run does) */
    st = fm_measure_check(s->ctx, s->graph, o->device, &s->check);
    if (st)
        return st;
    if (o->dry_run) {
        if (o->spec && (st = find_device(s, o->spec, "fm_session_opts.spec")) == FM_OK) {
            set_peak(s, " (fm_session_opts.spec)");
            return predict(s);
        }
        return st;
    }
    if ((st = fm_measure_check_error(s->ctx, &s->check)))
        return st;
    if ((st = check_step_memory(s, &t)))
        return st;
    /* the peak and the prediction's device: --spec, --peak, the GPU's datasheet (matched by the
     * name CUDA reports, after the run) or a short probe of the CPU */
    if (o->spec) {
        st = find_device(s, o->spec, "fm_session_opts.spec");
        if (st == FM_ERR_INVALID) {
            char msg[FM_ERRMSG_SIZE];
            snprintf(msg, sizeof(msg), "%s", fm_ctx_error(s->ctx));
            return fm_error(s->ctx, st, "fm_session_opts.spec: %.900s", msg);
        }
        if (st)
            return st;
    } else if (!peak_given && t.kind == FM_TARGET_CPU && probe_device(s, "cpu") != FM_OK) {
        /* no probe (a build without it, a busy device): measure anyway, say why */
        snprintf(s->peak_source, sizeof(s->peak_source), "the probe failed: %.150s",
                 fm_ctx_error(s->ctx));
    }
    struct fm_measure_opts mo = o->run;
    mo.device = o->device ? o->device : "cpu";
    mo.mode = o->count.mode;
    mo.precision = s->precision;
    /* the counted step memory is what the check above compares; the backend's buffers are more
     * (oneDNN's blocked layouts, both gradients of a residual, scratch): it checks those too */
    if (t.kind == FM_TARGET_CPU)
        mo.memory_limit = o->memory_cap > 0 ? o->memory_cap : mem_available();
    const struct fm_calibration *cal = o->predict.calibration;
    if (cal) {
        bool cuda = t.kind == FM_TARGET_CUDA;
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        int threads = cuda ? 0 : mo.threads > 0 ? mo.threads : (int)(cpus > 0 ? cpus : 1);
        st = fm_calibration_check(s->ctx, cal, s->device ? s->device->name : cal->device,
                                  cuda ? "cuda" : "cpu", threads, s->precision,
                                  o->force_calibration);
        if (st)
            return st;
    }
    if (o->progress) {
        mo.progress = run_progress;
        mo.progress_user = s;
    }
    st = fm_measure(s->ctx, s->graph, &mo, &s->measurement);
    if (st)
        return st;
    if (t.kind == FM_TARGET_CUDA && !o->spec && !peak_given) {
        const struct fm_device *d = NULL;
        if (open_devices(s) == FM_OK &&
            fm_devices_match(s->ctx, s->devices, s->measurement->device_name, &d) == FM_OK) {
            s->device = d;
            matched = true;
            snprintf(s->device_how, sizeof(s->device_how), "matched from the GPU's name '%.80s'",
                     s->measurement->device_name);
        } else {
            fm_log(s->ctx, "%s; using a short probe for the peak", fm_ctx_error(s->ctx));
            if (probe_device(s, mo.device) != FM_OK)
                snprintf(s->peak_source, sizeof(s->peak_source), "the probe failed: %.150s",
                         fm_ctx_error(s->ctx));
        }
    }
    if (matched && !peak_given) {
        s->peak = fm_device_util_peak(s->device, s->precision, s->torch_default);
        snprintf(s->peak_source, sizeof(s->peak_source),
                 "%s datasheet, the conv/matmul ceiling at %s (matched from the GPU's name "
                 "'%.60s'; fm_session_opts.spec or fm_session_opts.peak to choose another)",
                 s->device->name, fm_precision_name(s->precision), s->measurement->device_name);
    } else {
        set_peak(s, o->spec ? " (fm_session_opts.spec)" : "");
    }
    if (o->epoch_samples > 0) {
        uint64_t batch = (uint64_t)s->batch;
        uint64_t steps = (o->epoch_samples + batch - 1) / batch;
        if (steps > 1000000)
            return fm_error(s->ctx, FM_ERR_INVALID, "fm_session_opts.epoch_samples gives %" PRIu64
                            " steps; at most 1000000", steps);
        mo.steps = (int)steps;
        mo.per_layer = false;
        s->epoch_running = true;
        st = fm_measure(s->ctx, s->graph, &mo, &s->epoch);
        s->epoch_running = false;
        if (st)
            return st;
        double total = 0;
        for (size_t i = 0; i < s->epoch->n_steps; i++)
            total += s->epoch->step_ms[i];
        s->epoch_steps = steps;
        s->epoch_s = total * 1e-3;
    }
    if (s->peak > 0) {
        /* an epoch of the samples actually run: whole batches */
        st = fm_utilization(s->ctx, s->counts, s->batch, s->peak,
                            s->measurement->step_ms_median * 1e-3, s->epoch_s,
                            s->epoch ? s->epoch_steps * (uint64_t)s->batch : 0,
                            &s->util);
        if (st)
            return st;
        s->have_util = true;
    }
    if (s->device && (st = predict(s)))
        return st;
    /* where the time goes: needs layer timings, the peak and the bandwidth */
    if (s->measurement->nodes && s->peak > 0 && s->device && s->device->mem_bw > 0) {
        st = fm_time_loss(s->ctx, s->graph, s->counts, s->measurement, s->peak,
                          s->device->mem_bw, o->predict.calibration, &s->time_loss);
        if (st)
            return st;
        s->have_time_loss = true;
    }
    return FM_OK;
}

/* ---- the session ---- */

enum fm_status fm_session_run(struct fm_ctx *ctx, const struct fm_session_opts *opts,
                              struct fm_session **out)
{
    *out = NULL;
    enum fm_status st = check_opts(ctx, opts);
    if (st)
        return st;
    struct fm_session *s = fm_alloc(ctx, sizeof(*s));
    if (!s)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory");
    s->ctx = ctx;
    s->opts = *opts;
    if (s->opts.model_data && !(s->opts.model && *s->opts.model))
        s->opts.model = "model";   /* a model in memory needs no name, its messages do */
    s->loss.n = 0;
    resolve_precision(s);
    enum fm_task task = opts->task;
    /* the device first: a wrong --device is a usage error, found before any work */
    if (task == FM_TASK_ROOFLINE || task == FM_TASK_PREDICT || task == FM_TASK_UTILIZATION) {
        st = analysis_device(s);
        if (st)
            goto fail;
        set_peak(s, "");
        if (task == FM_TASK_UTILIZATION && !(s->peak > 0)) {
            st = fm_error(ctx, FM_ERR_INVALID, "%s has no %s ceiling; choose another "
                          "fm_session_opts.precision or give fm_session_opts.peak", s->device->name,
                          fm_session_precision_label(s));
            goto fail;
        }
    }
    if (task == FM_TASK_WORK && opts->device && *opts->device) {
        /* count on a device: only its memory matters */
        st = analysis_device(s);
        if (st)
            goto fail;
    }
    st = load_model(s);
    if (st)
        goto fail;
    if (task == FM_TASK_WORK || task == FM_TASK_ROOFLINE || task == FM_TASK_PREDICT) {
        st = check_memory(s);
        if (st)
            goto fail;
    }
    switch (task) {
    case FM_TASK_ROOFLINE:
    case FM_TASK_PREDICT:
        st = predict(s);
        break;
    case FM_TASK_UTILIZATION:
        st = fm_utilization(ctx, s->counts, s->batch, s->peak, opts->step_s,
                            opts->epoch_s, opts->dataset_size, &s->util);
        s->have_util = st == FM_OK;
        break;
    case FM_TASK_MEASURE:
        st = measure(s);
        break;
    default:
        break;
    }
    if (st)
        goto fail;
    *out = s;
    return FM_OK;
fail:
    fm_session_free(s);
    return st;
}
