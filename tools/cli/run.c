/* How every command runs (as git's run_builtin): main hands the command to cli_run, which makes
 * the context, lets the command parse its arguments, call the library and render its report into
 * a buffer, then checks the render's status once and prints either the whole report or the
 * failure's message, never both, with the library's field names turned into the CLI's flags
 * (flags.c) in errors, log lines and reports alike. A failure of the library, of the render or
 * of writing stdout exits non-zero with a message. It knows nothing about any one command. */
#include "cli.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- test hook: FM_TEST_FAIL_ALLOC=N ----
 * For tests only (tests/check_cli_alloc_fail.sh): with FM_TEST_FAIL_ALLOC=N in the environment,
 * the context's allocator fails the Nth allocation made after the command asks for its output
 * stream (cli_out), i.e. inside the render, so that a test can show that a renderer's
 * allocation failure exits 1 with a message. Its state lives in the run, not in a global. */
struct cli_fail_alloc {
    long fail_at;   /* 0: not armed yet */
    long seen;      /* allocations since it was armed */
    bool armed;
};

static bool should_fail(struct cli_fail_alloc *h)
{
    return h->armed && ++h->seen == h->fail_at;
}

static void *hook_malloc(size_t size, void *user)
{
    return should_fail(user) ? NULL : malloc(size);
}

static void *hook_realloc(void *ptr, size_t size, void *user)
{
    return should_fail(user) ? NULL : realloc(ptr, size);
}

static void hook_free(void *ptr, void *user)
{
    (void)user;
    free(ptr);
}

/* ---- context, failures, output ---- */

static void log_line(void *user, const char *message)
{
    fprintf(stderr, "flopmeter %s: ", (const char *)user);
    cli_print_flags(stderr, message);
    fputc('\n', stderr);
}

int cli_fail(struct fm_ctx *ctx, enum fm_status st)
{
    fputs("flopmeter: ", stderr);
    cli_print_flags(stderr, fm_ctx_error(ctx));
    fputc('\n', stderr);
    return st == FM_ERR_INVALID ? FM_EXIT_USAGE : FM_EXIT_FAIL;
}

FILE *cli_out(struct cli_run *run)
{
    if (!run->out && !run->out_failed) {
        run->out = open_memstream(&run->buf, &run->len);
        if (!run->out) {   /* no memory for the buffer: the render goes nowhere, cli_run says so */
            run->out_failed = true;
            run->discard = fopen("/dev/null", "w");
        }
    }
    if (run->hook)
        run->hook->armed = true;
    return run->out ? run->out : run->discard ? run->discard : stderr;
}

int cli_run(const struct cli_cmd *cmd, int argc, char **argv)
{
    struct cli_run run = {.cmd = cmd->name};
    struct cli_fail_alloc hook = {0};
    struct fm_allocator alloc = {hook_malloc, hook_realloc, hook_free, &hook};
    const char *fail_at = getenv("FM_TEST_FAIL_ALLOC");
    if (fail_at && *fail_at) {
        hook.fail_at = strtol(fail_at, NULL, 10);
        run.hook = &hook;
    }
    if (fm_ctx_new(run.hook ? &alloc : NULL, &run.ctx)) {
        fprintf(stderr, "flopmeter: out of memory\n");
        return FM_EXIT_FAIL;
    }
    fm_ctx_set_log(run.ctx, log_line, (void *)(uintptr_t)cmd->name);
    int r = cmd->fn(&run, argc, argv);
    if (run.hook)
        hook.armed = false;
    bool lost = run.out_failed || (run.out && (ferror(run.out) | fclose(run.out)));
    if (run.discard)
        fclose(run.discard);
    if (run.status) {
        /* the render failed: its message, and none of what it had written */
        const char *msg = fm_ctx_error(run.ctx);
        if (*msg) {
            fputs("flopmeter: ", stderr);
            cli_print_flags(stderr, msg);
            fputc('\n', stderr);
        } else {
            fprintf(stderr, "flopmeter: could not render the report (%s)\n",
                    fm_status_to_string(run.status));
        }
        r = FM_EXIT_FAIL;
    } else if (lost) {
        fprintf(stderr, "flopmeter: out of memory (the report's buffer)\n");
        r = FM_EXIT_FAIL;
    } else if (run.buf) {
        cli_write_flags(stdout, run.buf, run.len);
    }
    free(run.buf);
    fm_ctx_free(run.ctx);
    if (fflush(stdout) || ferror(stdout)) {
        fprintf(stderr, "flopmeter: could not write the output\n");
        return FM_EXIT_FAIL;
    }
    return r;
}
