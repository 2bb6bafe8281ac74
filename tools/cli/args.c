/* Option parsing from a declared table (struct cli_opt), the --help text generated from the
 * same table, the model options shared by the model commands, and number formatting. argv is
 * never modified. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int choice_index(const char *choices, const char *value)
{
    int idx = 0;
    const char *p = choices;
    size_t vl = strlen(value);
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == vl && strncmp(p, value, len) == 0)
            return idx;
        idx++;
        if (!bar)
            break;
        p = bar + 1;
    }
    return -1;
}

void cli_print_help(FILE *f, const char *cmd, const char *usage, const char *description,
                    const struct cli_opt *opts)
{
    fprintf(f, "usage: flopmeter %s %s\n\n%s\n", cmd, usage, description);
    if (opts && opts[0].name)
        fprintf(f, "\noptions:\n");
    for (const struct cli_opt *o = opts; o && o->name; o++) {
        char left[96];
        const char *mv = o->metavar;
        if (o->type == CLI_FLAG)
            snprintf(left, sizeof(left), "--%s", o->name);
        else if (o->type == CLI_CHOICE)
            snprintf(left, sizeof(left), "--%s %s", o->name, mv ? mv : o->choices);
        else
            snprintf(left, sizeof(left), "--%s %s", o->name, mv ? mv : "VALUE");
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
    case CLI_CHOICE: {
        int idx = choice_index(o->choices, v);
        if (idx < 0)
            return usage_error(cmd, "--%s must be one of %s", o->name, o->choices);
        *(int *)o->dest = idx;
        return 0;
    }
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
            cli_print_help(stdout, cmd, usage, description, opts);
            return -1;
        }
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
                char buf[128];
                snprintf(buf, sizeof(buf), "%.*s", (int)nl, name);
                return usage_error(cmd, "unknown option --%s%s", buf, "");
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
                                       o->metavar ? o->metavar : (o->choices ? o->choices : ""));
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

/* ---- model options ---- */

int cli_model_opts_declare(struct cli_model_opts *m, struct cli_opt *out)
{
    memset(m, 0, sizeof(*m));
    m->batch = 1;
    m->classes = 1000;
    int n = 0;
    out[n++] = (struct cli_opt){"batch", CLI_INT, &m->batch, NULL, "N",
                                "batch size (default 1; binds symbolic batch dims of ONNX inputs)",
                                NULL, &m->batch_given};
    out[n++] = (struct cli_opt){"input", CLI_MULTI, m->inputs, NULL, "CxHxW|NAME=DIMS",
                                "input size: CxHxW for a built-in model (default: the model's "
                                "evaluation size, 3x224x224 for most, see flopmeter models); "
                                "NAME=1x3x224x224 binds an ONNX input (repeatable)",
                                &m->n_inputs, NULL};
    out[n++] = (struct cli_opt){"classes", CLI_INT, &m->classes, NULL, "K",
                                "number of classes of a built-in model (default 1000)", NULL, NULL};
    out[n++] = (struct cli_opt){"train", CLI_FLAG, &m->train, NULL, NULL,
                                "a training step: forward, backward, optimizer (default)", NULL,
                                NULL};
    out[n++] = (struct cli_opt){"infer", CLI_FLAG, &m->infer, NULL, NULL,
                                "inference: forward only, BatchNorm with running statistics",
                                NULL, NULL};
    out[n++] = (struct cli_opt){"optimizer", CLI_CHOICE, &m->optimizer, "sgd|adam|none", NULL,
                                "optimizer step counted in training (default sgd, with momentum)",
                                NULL, NULL};
    out[n++] = (struct cli_opt){"dtype", CLI_CHOICE, &m->dtype, "fp32|fp16|bf16", NULL,
                                "storage type of activations and parameters (default fp32); "
                                "decides bytes, not counts",
                                NULL, NULL};
    out[n++] = (struct cli_opt){"format", CLI_CHOICE, &m->format, CLI_FORMAT_CHOICES, NULL,
                                "output format (default table; csv and json print exact "
                                "integers)",
                                NULL, NULL};
    return n;
}

void cli_count_opts(const struct cli_model_opts *m, struct fm_count_opts *out)
{
    fm_count_opts_init(out);
    out->mode = m->infer ? FM_MODE_INFER : FM_MODE_TRAIN;
    out->optimizer = (enum fm_optimizer)m->optimizer;
}

int cli_fail(struct fm_ctx *ctx, enum fm_status st)
{
    fprintf(stderr, "flopmeter: %s\n", fm_ctx_error(ctx));
    return st == FM_ERR_INVALID ? FM_EXIT_USAGE : FM_EXIT_FAIL;
}

int cli_model_load(struct fm_ctx *ctx, const char *model, const struct cli_model_opts *m,
                   struct fm_graph **out)
{
    static const enum fm_dtype dtypes[] = {FM_DTYPE_FP32, FM_DTYPE_FP16, FM_DTYPE_BF16};
    if (m->train && m->infer) {
        fprintf(stderr, "flopmeter: --train and --infer exclude each other: give one of them "
                        "(a training step is the default)\n");
        return FM_EXIT_USAGE;
    }
    struct fm_load_opts lo;
    fm_load_opts_init(&lo);
    lo.zoo.batch = m->batch;
    lo.zoo.classes = m->classes;
    lo.zoo.dtype = dtypes[m->dtype];
    lo.zoo.with_loss = !m->infer;
    lo.batch_given = m->batch_given;
    struct fm_input_binding binds[16];
    size_t nb = 0;
    int ret = FM_EXIT_USAGE;
    enum fm_status st;
    /* one exit path: names copied so far are freed on every error (found by fuzz_args) */
    for (int i = 0; i < m->n_inputs; i++) {
        const char *eq = strchr(m->inputs[i], '=');
        struct fm_shape s;
        if (eq) {
            if (eq == m->inputs[i]) {
                fprintf(stderr, "flopmeter: --input %s: the input name before '=' is empty\n",
                        m->inputs[i]);
                goto out;
            }
            st = fm_shape_parse(ctx, eq + 1, &s);
            if (st) {
                fprintf(stderr, "flopmeter: --input %s: %s\n", m->inputs[i], fm_ctx_error(ctx));
                goto out;
            }
            binds[nb].shape = s;
            binds[nb].name = strndup(m->inputs[i], (size_t)(eq - m->inputs[i]));
            if (!binds[nb].name) {
                fprintf(stderr, "flopmeter: out of memory\n");
                ret = FM_EXIT_FAIL;
                goto out;
            }
            nb++;
        } else {
            if (lo.zoo.input.rank) {
                fprintf(stderr, "flopmeter: --input CxHxW given twice\n");
                goto out;
            }
            st = fm_shape_parse(ctx, m->inputs[i], &s);
            if (st) {
                fprintf(stderr, "flopmeter: --input %s: %s\n", m->inputs[i], fm_ctx_error(ctx));
                goto out;
            }
            lo.zoo.input = s;
        }
    }
    lo.bindings = binds;
    lo.n_bindings = nb;
    st = fm_model_load(ctx, model, &lo, out);
    ret = st ? cli_fail(ctx, st) : 0;
out:
    for (size_t i = 0; i < nb; i++)
        free((void *)binds[i].name);
    return ret;
}
