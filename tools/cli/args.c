/* Option parsing from a declared table (struct cli_opt), the --help text generated from the same
 * table, the options the model and device commands share, and turning them into a session's
 * options. Values of enums and times are parsed by the library's own parsers. argv is never
 * modified. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void print_help(FILE *f, const char *cmd, const char *usage, const char *description,
                       const struct cli_opt *opts)
{
    fprintf(f, "usage: flopmeter %s %s\n\n%s\n", cmd, usage, description);
    if (opts && opts[0].name)
        fprintf(f, "\noptions:\n");
    for (const struct cli_opt *o = opts; o && o->name; o++) {
        char left[96];
        if (o->type == CLI_FLAG)
            snprintf(left, sizeof(left), "--%s", o->name);
        else
            snprintf(left, sizeof(left), "--%s %s", o->name, o->metavar ? o->metavar : "VALUE");
        fprintf(f, "  %-28s %s\n", left, o->help ? o->help : "");
    }
    fprintf(f, "  %-28s %s\n", "--help", "show this help");
}

static int usage_error(const char *cmd, const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "flopmeter %s: ", cmd);
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(see flopmeter %s --help)\n", cmd);
    return FM_EXIT_USAGE;
}

static int set_value(const char *cmd, const struct cli_opt *o, const char *v)
{
    char *end;
    switch (o->type) {
    case CLI_INT:
    case CLI_UINT: {
        errno = 0;
        if (*v < '0' || *v > '9')
            return usage_error(cmd, "--%s expects a whole number, got '%s'", o->name, v);
        long long x = strtoll(v, &end, 10);
        if (errno == ERANGE || *end || x > (1LL << 40))
            return usage_error(cmd, "--%s: '%s' is not an integer in range (at most 2^40)",
                               o->name, v);
        if (o->type == CLI_INT && x <= 0)
            return usage_error(cmd, "--%s must be positive, got '%s'", o->name, v);
        *(int64_t *)o->dest = x;
        return 0;
    }
    case CLI_DOUBLE: {
        errno = 0;
        double x = strtod(v, &end);
        if (errno == ERANGE || *end || end == v || !isfinite(x))
            return usage_error(cmd, "--%s: '%s' is not a finite number", o->name, v);
        *(double *)o->dest = x;
        return 0;
    }
    case CLI_STRING:
        *(const char **)o->dest = v;
        return 0;
    case CLI_PARSED:
        if (!o->parse(v, o->dest)) {
            char what[160];
            snprintf(what, sizeof(what), "'%s'; expected %s", v, o->metavar ? o->metavar : "?");
            return usage_error(cmd, "--%s: not a valid value: %s", o->name, what);
        }
        return 0;
    case CLI_MULTI:
        if (*o->count >= 16)
            return usage_error(cmd, "--%s given too many times%s", o->name, "");
        ((const char **)o->dest)[(*o->count)++] = v;
        return 0;
    case CLI_FLAG:
        break;
    }
    return 0;
}

int cli_parse(const char *cmd, const char *usage, const char *description,
              const struct cli_opt *opts, int argc, char **argv, const char **pos, int min_pos,
              int max_pos)
{
    int npos = 0;
    bool only_pos = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_pos && strcmp(a, "--") == 0) {
            only_pos = true;
            continue;
        }
        if (!only_pos && (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)) {
            print_help(stdout, cmd, usage, description, opts);
            return -1;
        }
        if (!only_pos && strcmp(a, "-o") == 0)
            a = "--output";   /* the one short option: where a command writes its file */
        if (!only_pos && a[0] == '-' && a[1] == '-') {
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t nl = eq ? (size_t)(eq - name) : strlen(name);
            const struct cli_opt *o = NULL;
            for (const struct cli_opt *p = opts; p && p->name; p++) {
                if (strlen(p->name) == nl && strncmp(p->name, name, nl) == 0)
                    o = p;
            }
            if (!o) {
                char buf[128], hint[96] = "";
                snprintf(buf, sizeof(buf), "%.*s", (int)nl, name);
                const char *names[64];
                size_t n = 0;
                for (const struct cli_opt *p = opts; p && p->name && n < 64; p++)
                    names[n++] = p->name;
                const char *near = fm_nearest_name(buf, names, n);
                if (near)
                    snprintf(hint, sizeof(hint), "; did you mean --%s?", near);
                return usage_error(cmd, "unknown option --%s%s", buf, hint);
            }
            if (o->given)
                *o->given = true;
            if (o->type == CLI_FLAG) {
                if (eq)
                    return usage_error(cmd, "--%s takes no value%s", o->name, "");
                *(bool *)o->dest = true;
                continue;
            }
            const char *v = eq ? eq + 1 : NULL;
            if (!v) {
                if (i + 1 >= argc)
                    return usage_error(cmd, "--%s needs a value (%s)", o->name,
                                       o->metavar ? o->metavar : "");
                v = argv[++i];
            }
            int r = set_value(cmd, o, v);
            if (r)
                return r;
            continue;
        }
        if (!only_pos && a[0] == '-' && a[1] != '\0')
            return usage_error(cmd, "unknown option %s (options start with --)%s", a, "");
        if (npos >= max_pos)
            return usage_error(cmd, "unexpected argument '%s'%s", a, "");
        pos[npos++] = a;
    }
    if (npos < min_pos)
        return usage_error(cmd, "missing argument: usage: flopmeter %s %s", cmd, usage);
    return 0;
}

/* ---- the library's parsers, as cli_opt calls them ---- */

bool cli_parse_format(const char *text, void *dest)
{
    return fm_format_parse(text, dest);
}

bool cli_parse_dtype(const char *text, void *dest)
{
    return fm_dtype_parse(text, dest);
}

bool cli_parse_optimizer(const char *text, void *dest)
{
    return fm_optimizer_parse(text, dest);
}

bool cli_parse_precision(const char *text, void *dest)
{
    struct cli_precision *p = dest;
    p->given = fm_precision_parse_policy(text, &p->precision, &p->torch_default);
    return p->given;
}

bool cli_parse_flops(const char *text, void *dest)
{
    return fm_flops_parse(text, dest);
}

bool cli_parse_recompute(const char *text, void *dest)
{
    return fm_recompute_parse(text, dest);
}

bool cli_parse_bytes(const char *text, void *dest)
{
    double b;
    if (!fm_bytes_parse(text, &b) || !(b > 0))
        return false;
    *(double *)dest = b;
    return true;
}

bool cli_parse_time(const char *text, void *dest)
{
    double s;
    if (!fm_duration_parse(text, &s) || !(s > 0))
        return false;
    *(double *)dest = s;
    return true;
}

/* ---- model options ---- */

int cli_model_opts_declare(struct cli_model_opts *m, struct cli_opt *out)
{
    memset(m, 0, sizeof(*m));
    m->batch = 1;
    m->classes = 1000;
    m->optimizer = FM_OPTIM_SGD;
    m->dtype = FM_DTYPE_FP32;
    m->format = FM_FORMAT_TABLE;
    int n = 0;
    out[n++] = (struct cli_opt){"batch", CLI_INT, &m->batch, NULL, "N",
                                "batch size (default 1; binds symbolic batch dims of ONNX inputs)",
                                NULL, &m->batch_given};
    out[n++] = (struct cli_opt){"input", CLI_MULTI, m->inputs, NULL, "CxHxW|NAME=DIMS",
                                "input size: CxHxW for a built-in model (default: the model's "
                                "evaluation size, 3x224x224 for most, see flopmeter models); "
                                "NAME=1x3x224x224 binds an ONNX input (repeatable)",
                                &m->n_inputs, NULL};
    out[n++] = (struct cli_opt){"value", CLI_MULTI, m->values, NULL, "NAME=V[,V...]",
                                "the contents of an ONNX graph input that shapes depend on (a "
                                "shape, sizes, axes, k, scales): everything computed from it is "
                                "then known; its shape is [number of values] unless the file or "
                                "--input gives one (repeatable)",
                                &m->n_values, NULL};
    out[n++] = (struct cli_opt){"classes", CLI_INT, &m->classes, NULL, "K",
                                "number of classes of a built-in model (default 1000)", NULL, NULL};
    out[n++] = (struct cli_opt){"train", CLI_FLAG, &m->train, NULL, NULL,
                                "a training step: forward, loss, backward, optimizer (default)",
                                NULL, NULL};
    out[n++] = (struct cli_opt){"infer", CLI_FLAG, &m->infer, NULL, NULL,
                                "inference: forward only, BatchNorm with running statistics",
                                NULL, NULL};
    out[n++] = (struct cli_opt){"optimizer", CLI_PARSED, &m->optimizer, cli_parse_optimizer,
                                "sgd|adam|none",
                                "optimizer step counted in training (default sgd, with momentum)",
                                NULL, &m->optimizer_given};
    out[n++] = (struct cli_opt){"dtype", CLI_PARSED, &m->dtype, cli_parse_dtype,
                                "fp32|fp16|bf16|fp64",
                                "storage type of every float tensor, activations and parameters "
                                "alike (default: fp32; with --precision fp16/bf16 mixed "
                                "precision: fp16/bf16 activations, fp32 weights; fp8 as bf16; "
                                "with fp64, "
                                "fp64); decides bytes, not counts",
                                NULL, &m->dtype_given};
    out[n++] = (struct cli_opt){"loss-on", CLI_STRING, &m->loss_on, NULL, "OUTPUT",
                                "training: add the loss to this output only (default: one loss "
                                "per output, by the loss policy of flopmeter count --help)",
                                NULL, NULL};
    out[n++] = (struct cli_opt){"format", CLI_PARSED, &m->format, cli_parse_format,
                                "table|csv|json",
                                "output format (default table; csv and json print exact "
                                "integers)",
                                NULL, NULL};
    out[n++] = (struct cli_opt){"config", CLI_STRING, &m->config, NULL, "FILE",
                                "a language model from its HuggingFace config.json (MODEL is "
                                "then only its name; docs/zoo.md): --batch sequences of --seq "
                                "tokens",
                                NULL, NULL};
    out[n++] = (struct cli_opt){"seq", CLI_INT, &m->seq, NULL, "N",
                                "language models: tokens per sequence (default 2048, or the "
                                "model's maximum if smaller); with --decode the KV cache's length",
                                NULL, NULL};
    out[n++] = (struct cli_opt){"decoder-seq", CLI_INT, &m->decoder_seq, NULL, "N",
                                "encoder-decoder language models (T5): target tokens (default "
                                "--seq); with --decode the cached target length, --seq the "
                                "source's",
                                NULL, NULL};
    out[n++] = (struct cli_opt){"decode", CLI_FLAG, &m->decode, NULL, NULL,
                                "language models: one decoding step, a new token per sequence "
                                "against a KV cache of --seq tokens (implies --infer)",
                                NULL, NULL};
    return n;
}

/* ---- device options ---- */

int cli_device_opts_declare(struct cli_device_opts *d, struct cli_opt *out, unsigned what)
{
    struct fm_predict_opts defaults;
    fm_predict_opts_init(&defaults);
    memset(d, 0, sizeof(*d));
    d->ppp_compute = defaults.ppp_compute;
    d->ppp_memory = defaults.ppp_memory;
    d->ppp_comm = defaults.ppp_comm;
    d->launch_us = defaults.launch_overhead_us;
    int n = 0;
    if (what & CLI_DEV_DEVICE)
        out[n++] = (struct cli_opt){"device", CLI_STRING, &d->device, NULL, "NAME",
                                    "device name or alias (flopmeter devices lists them: a100, "
                                    "h100, v100, k80 ...), a GPU's name as nvidia-smi prints it, "
                                    "or cpu / cuda[:N] to probe this machine's CPU or GPU",
                                    NULL, NULL};
    out[n++] = (struct cli_opt){"devices", CLI_STRING, &d->devices_file, NULL, "FILE",
                                "add or override devices from a JSON file (docs/devices.md); "
                                "also read: $FLOPMETER_DEVICES, "
                                "$XDG_CONFIG_HOME/flopmeter/devices.json",
                                NULL, NULL};
    if (what & CLI_DEV_PRECISION)
        out[n++] = (struct cli_opt){"precision", CLI_PARSED, &d->precision, cli_parse_precision,
                                    "fp64|fp32|tf32|fp16|bf16|fp8|int8|torch-default",
                                    "compute precision: picks the ceiling (default: the storage "
                                    "--dtype). Tensor-core ceilings apply only to conv, matmul "
                                    "and attention. torch-default = PyTorch on Ampere+: fp32 "
                                    "convs on TF32, fp32 matmuls on FP32",
                                    NULL, NULL};
    if (what & CLI_DEV_PPP) {
        out[n++] = (struct cli_opt){"ppp-compute", CLI_DOUBLE, &d->ppp_compute, NULL, "X",
                                    "platform percent of peak for compute, 0 < X <= 1 (default "
                                    "0.62, PALEO)",
                                    NULL, NULL};
        out[n++] = (struct cli_opt){"ppp-memory", CLI_DOUBLE, &d->ppp_memory, NULL, "Y",
                                    "platform percent of peak for memory bandwidth (default "
                                    "0.72, PALEO)",
                                    NULL, NULL};
        out[n++] = (struct cli_opt){"launch-overhead-us", CLI_DOUBLE, &d->launch_us, NULL, "U",
                                    "added to every kernel (node and phase that does work); "
                                    "default 0, PyTorch eager on a GPU is about 5-10",
                                    NULL, NULL};
    }
    if (what & CLI_DEV_COMM)
        out[n++] = (struct cli_opt){"ppp-comm", CLI_DOUBLE, &d->ppp_comm, NULL, "Z",
                                    "platform percent of peak for the interconnect (default "
                                    "0.72, PALEO)",
                                    NULL, NULL};
    return n;
}

/* ---- into a session ---- */

void cli_bindings_free(struct cli_bindings *b)
{
    for (size_t i = 0; i < b->n; i++)
        free((void *)b->items[i].name);
    b->n = 0;
    for (size_t i = 0; i < b->n_values; i++) {
        free((void *)b->values[i].name);
        free((void *)b->values[i].ivalues);
        free((void *)b->values[i].fvalues);
    }
    b->n_values = 0;
}

int cli_calibration_opts_declare(struct cli_calibration_opts *c, struct cli_opt *out,
                                 const char *help)
{
    memset(c, 0, sizeof(*c));
    out[0] = (struct cli_opt){"calibration", CLI_STRING, &c->file, NULL, "FILE", help, NULL, NULL};
    out[1] = (struct cli_opt){"force-calibration", CLI_FLAG, &c->force, NULL, NULL,
                              "use a calibration made with other threads, device or precision "
                              "anyway",
                              NULL, NULL};
    return 2;
}

int cli_calibration_load(struct fm_ctx *ctx, struct cli_calibration_opts *c,
                         struct fm_session_opts *so)
{
    if (c->file && !c->cal) {
        enum fm_status st = fm_calibration_load(ctx, c->file, &c->cal);
        if (st)
            return cli_fail(ctx, st);
    }
    so->predict.calibration = c->cal;
    so->force_calibration = c->force;
    return 0;
}

void cli_calibration_free(struct cli_calibration_opts *c)
{
    fm_calibration_free(c->cal);
    c->cal = NULL;
}

/* --value NAME=V[,V...]: integers if every value is one, else numbers. Prints the error. */
static bool parse_value(const char *text, struct fm_value_binding *v)
{
    memset(v, 0, sizeof(*v));
    const char *eq = strchr(text, '=');
    if (!eq || eq == text || !eq[1]) {
        fprintf(stderr, "flopmeter: --value %s: expected NAME=V[,V...] (e.g. --value "
                        "sizes=1,3,64,64)\n", text);
        return false;
    }
    size_t n = 1;
    for (const char *p = eq + 1; *p; p++)
        n += *p == ',';
    if (n > 65536) {
        fprintf(stderr, "flopmeter: --value %.*s: %zu values; at most 65536\n",
                (int)(eq - text), text, n);
        return false;
    }
    int64_t *iv = malloc(n * sizeof(*iv));
    double *fv = malloc(n * sizeof(*fv));
    char *name = strndup(text, (size_t)(eq - text));
    if (!iv || !fv || !name) {
        fprintf(stderr, "flopmeter: out of memory\n");
        goto fail;
    }
    bool all_int = true;
    const char *p = eq + 1;
    for (size_t k = 0; k < n; k++) {
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        bool is_int = end != p && (*end == ',' || !*end) && errno == 0;
        errno = 0;
        double d = strtod(p, &end);
        if (end == p || (*end != ',' && *end) || errno != 0 || d != d) {
            fprintf(stderr, "flopmeter: --value %s: value %zu is not a number\n", text, k + 1);
            goto fail;
        }
        iv[k] = x;
        fv[k] = d;
        all_int &= is_int;
        p = *end ? end + 1 : end;
    }
    v->name = name;
    v->n = n;
    if (all_int) {
        v->ivalues = iv;
        free(fv);
    } else {
        v->fvalues = fv;
        free(iv);
    }
    return true;
fail:
    free(iv);
    free(fv);
    free(name);
    return false;
}

int cli_session_opts(struct fm_ctx *ctx, const struct cli_model_opts *m,
                     const struct cli_device_opts *d, struct cli_bindings *b,
                     struct fm_session_opts *o)
{
    b->n = 0;
    b->n_values = 0;
    if (m->train && m->infer) {
        fprintf(stderr, "flopmeter: --train and --infer exclude each other: give one of them "
                        "(a training step is the default)\n");
        return FM_EXIT_USAGE;
    }
    struct fm_load_opts *lo = &o->load;
    lo->zoo.batch = m->batch;
    lo->zoo.classes = m->classes;
    lo->zoo.dtype = m->dtype;
    lo->batch_given = m->batch_given;
    lo->dtype_given = m->dtype_given;
    lo->config = m->config;
    lo->seq = m->seq;
    lo->decoder_seq = m->decoder_seq;
    lo->decode = m->decode;
    if (m->decode && m->train) {
        fprintf(stderr, "flopmeter: --decode counts an inference step: drop --train\n");
        return FM_EXIT_USAGE;
    }
    o->count.mode = m->infer || m->decode ? FM_MODE_INFER : FM_MODE_TRAIN;
    o->count.optimizer = m->optimizer;
    o->loss_on = m->loss_on;
    if (m->infer && m->optimizer_given)
        fprintf(stderr, "flopmeter: warning: --optimizer %s is ignored with --infer: inference "
                        "has no optimizer step (drop --infer to count a training step)\n",
                fm_optimizer_name(m->optimizer));
    /* one exit path: names copied so far are freed on every error (found by fuzz_args) */
    for (int i = 0; i < m->n_inputs; i++) {
        const char *eq = strchr(m->inputs[i], '=');
        struct fm_shape s;
        if (eq == m->inputs[i]) {
            fprintf(stderr, "flopmeter: --input %s: the input name before '=' is empty\n",
                    m->inputs[i]);
            goto usage;
        }
        if (fm_shape_parse(ctx, eq ? eq + 1 : m->inputs[i], &s)) {
            fprintf(stderr, "flopmeter: --input %s: %s\n", m->inputs[i], fm_ctx_error(ctx));
            goto usage;
        }
        if (!eq) {
            if (lo->zoo.input.rank) {
                fprintf(stderr, "flopmeter: --input CxHxW given twice\n");
                goto usage;
            }
            lo->zoo.input = s;
            continue;
        }
        b->items[b->n].shape = s;
        b->items[b->n].name = strndup(m->inputs[i], (size_t)(eq - m->inputs[i]));
        if (!b->items[b->n].name) {
            fprintf(stderr, "flopmeter: out of memory\n");
            cli_bindings_free(b);
            return FM_EXIT_FAIL;
        }
        b->n++;
    }
    b->n_values = 0;
    for (int i = 0; i < m->n_values; i++) {
        if (!parse_value(m->values[i], &b->values[b->n_values]))
            goto usage;
        b->n_values++;
    }
    lo->bindings = b->items;
    lo->n_bindings = b->n;
    lo->values = b->values;
    lo->n_values = b->n_values;
    if (d) {
        o->device = d->device;
        o->devices_file = d->devices_file;
        o->precision = d->precision.given ? d->precision.precision : FM_PREC_FP32;
        o->precision_given = d->precision.given;
        o->torch_default = d->precision.torch_default;
        o->predict.ppp_compute = d->ppp_compute;
        o->predict.ppp_memory = d->ppp_memory;
        o->predict.ppp_comm = d->ppp_comm;
        o->predict.launch_overhead_us = d->launch_us;
    }
    return 0;
usage:
    cli_bindings_free(b);
    return FM_EXIT_USAGE;
}
