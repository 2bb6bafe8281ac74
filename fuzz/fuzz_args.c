/* libFuzzer target: the command-line parsers. The input is split at NUL bytes into arguments
 * for `flopmeter count` (cli_parse over the model options, then cli_session_opts and a count
 * session of a built-in model); every argument is also given to fm_shape_parse, fm_dtype_parse,
 * fm_precision_parse and fm_duration_parse on its own. Model names that are existing files are skipped: the ONNX
 * target covers file contents. Run with -close_fd_mask=3: the parsers print usage errors. */
#include "fuzz_common.h"
#include "cli.h"

#include <sys/stat.h>

#define MAX_ARGS 24

static void check_shape_parse(struct fm_ctx *ctx, const char *text)
{
    struct fm_shape s;
    memset(&s, 0x5a, sizeof(s));
    enum fm_status st = fm_shape_parse(ctx, text, &s);
    fuzz_check_status(ctx, st);
    if (st)
        return;
    FUZZ_CHECK(s.rank >= 1 && s.rank <= FM_MAX_DIMS, "rank %d accepted", s.rank);
    for (int i = 0; i < s.rank; i++)
        FUZZ_CHECK(s.dims[i] > 0 && s.dims[i] <= ((int64_t)1 << 40), "dim %lld accepted",
                   (long long)s.dims[i]);
    uint64_t n;
    FUZZ_CHECK(fm_shape_numel(&s, &n) == FM_OK, "an accepted shape overflows");
    char buf[256];
    fm_shape_format(&s, buf, sizeof(buf));
    struct fm_shape back;
    FUZZ_CHECK(fm_shape_parse(ctx, buf, &back) == FM_OK && memcmp(&back.dims, &s.dims,
               sizeof(int64_t) * (size_t)s.rank) == 0 && back.rank == s.rank,
               "'%s' does not parse back", buf);
}

int fm_fuzz_args(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "count";
    for (char *p = buf; p < buf + size && argc <= MAX_ARGS; p += strlen(p) + 1)
        argv[argc++] = p;
    argv[argc] = NULL;

    struct fm_ctx *ctx = NULL;
    struct fm_session *s = NULL;
    if (fm_ctx_new(NULL, &ctx))
        goto out;
    for (int i = 1; i < argc; i++) {
        enum fm_dtype dt;
        enum fm_precision pr;
        check_shape_parse(ctx, argv[i]);
        if (fm_dtype_parse(argv[i], &dt))
            FUZZ_CHECK((unsigned)dt < FM_DTYPE_COUNT, "dtype %d", (int)dt);
        if (fm_precision_parse(argv[i], &pr))
            FUZZ_CHECK((unsigned)pr < FM_PREC_COUNT, "precision %d", (int)pr);
        double secs;
        if (fm_duration_parse(argv[i], &secs))
            FUZZ_CHECK(secs >= 0 && secs == secs, "duration %g", secs);
    }
    struct cli_model_opts m;
    struct cli_opt opts[CLI_MODEL_OPTS_MAX + 1];
    int n = cli_model_opts_declare(&m, opts);
    opts[n] = (struct cli_opt){0};
    const char *pos[1] = {NULL};
    int r = cli_parse("count", "MODEL [options]", "fuzz", opts, argc, argv, pos, 1, 1);
    FUZZ_CHECK(r == 0 || r == -1 || r == FM_EXIT_USAGE, "cli_parse returned %d", r);
    if (r != 0)
        goto out;
    FUZZ_CHECK(pos[0] != NULL, "cli_parse accepted no MODEL");
    FUZZ_CHECK(m.batch > 0 && m.classes > 0, "a non-positive --batch or --classes passed");
    struct stat sb;
    if (stat(pos[0], &sb) == 0)
        goto out;
    struct fm_session_opts so;
    struct cli_bindings b;
    fm_session_opts_init(&so, FM_TASK_WORK);
    so.model = pos[0];
    r = cli_session_opts(ctx, &m, NULL, &b, &so);
    FUZZ_CHECK(r == 0 || r == FM_EXIT_FAIL || r == FM_EXIT_USAGE, "cli_session_opts gave %d", r);
    if (r)
        goto out;   /* it printed why, and freed what it had copied */
    enum fm_status st = fm_session_run(ctx, &so, &s);
    cli_bindings_free(&b);
    fuzz_check_status(ctx, st);
    FUZZ_CHECK(st != FM_OK || (s && fm_session_graph(s) && fm_session_counts(s)),
               "a session without its counts");
    FUZZ_CHECK(st == FM_OK || s == NULL, "a failed session was returned");
out:
    fm_session_free(s);
    fm_ctx_free(ctx);
    free(buf);
    return 0;
}

FUZZ_ENTRY(fm_fuzz_args)
