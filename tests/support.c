/* Shared test helpers (see support.h). */
#include "support.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int test_listing(int argc, char **argv)
{
    return argc == 2 && strcmp(argv[1], "--list") == 0;
}

int test_run_cases(int argc, char **argv, const char *group, const struct CMUnitTest *tests,
                   size_t n, CMFixtureFunction setup, CMFixtureFunction teardown)
{
    if (test_listing(argc, argv)) {
        for (size_t i = 0; i < n; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    if (argc < 2)
        return _cmocka_run_group_tests(group, tests, n, setup, teardown);
    /* the chosen cases in the file's order, each once however many arguments name it */
    struct CMUnitTest *chosen = calloc(n, sizeof(*chosen));
    if (!chosen) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    size_t m = 0;
    int unmatched = 0;
    for (int a = 1; a < argc; a++) {
        int hit = 0;
        for (size_t i = 0; i < n; i++)
            hit |= fnmatch(argv[a], tests[i].name, 0) == 0;
        if (!hit) {
            fprintf(stderr, "%s: no case matches \"%s\" (--list names them)\n", argv[0], argv[a]);
            unmatched = 1;
        }
    }
    for (size_t i = 0; i < n; i++)
        for (int a = 1; a < argc; a++)
            if (fnmatch(argv[a], tests[i].name, 0) == 0) {
                chosen[m++] = tests[i];
                break;
            }
    int rc = unmatched ? 1 : _cmocka_run_group_tests(group, chosen, m, setup, teardown);
    free(chosen);
    return rc;
}

void test_expect_message(struct fm_ctx *ctx, const char *const *words, size_t n, const char *file,
                         int line)
{
    const char *msg = fm_ctx_error(ctx);
    for (size_t i = 0; i < n; i++) {
        if (!strstr(msg, words[i])) {
            print_error("%s:%d: message \"%s\" does not mention \"%s\"\n", file, line, msg,
                        words[i]);
            _fail(file, line);
        }
    }
}

void test_expect_in(const char *text, const char *word)
{
    if (!strstr(text, word))
        fail_msg("expected '%s' in:\n%s", word, text);
}

struct fm_ctx *test_ctx(void)
{
    struct fm_ctx *ctx = NULL;
    assert_int_equal(fm_ctx_new(NULL, &ctx), FM_OK);
    return ctx;
}

struct fm_counts *test_count_zoo(struct fm_ctx *ctx, const char *name, int64_t batch,
                                 enum fm_mode mode, struct fm_graph **graph_out)
{
    struct fm_zoo_opts zo;
    fm_zoo_opts_init(&zo);
    zo.batch = batch;
    zo.with_loss = mode == FM_MODE_TRAIN;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_zoo_build(ctx, name, &zo, &g));
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = mode;
    struct fm_counts *c = NULL;
    FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &c));
    if (graph_out)
        *graph_out = g;
    else
        fm_graph_free(g);
    return c;
}

static char *slurp(FILE *f)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
    }
    buf[len] = '\0';
    return buf;
}

struct fm_session *test_session_ok(struct fm_ctx *ctx, const struct fm_session_opts *opts)
{
    struct fm_session *s = NULL;
    FM_ASSERT_OK(ctx, fm_session_run(ctx, opts, &s));
    assert_non_null(s);
    return s;
}

int test_run_cli(const char *args, char **out, char **err)
{
    char errfile[] = "/tmp/fm_test_err_XXXXXX";
    int fd = mkstemp(errfile);
    assert_true(fd >= 0);
    close(fd);
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "%s %s 2>%s", FM_CLI, args, errfile);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char *o = slurp(p);
    int status = pclose(p);
    FILE *ef = fopen(errfile, "r");
    char *e = ef ? slurp(ef) : strdup("");
    if (ef)
        fclose(ef);
    unlink(errfile);
    if (out)
        *out = o;
    else
        free(o);
    if (err)
        *err = e;
    else
        free(e);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n >= 0);
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

enum fm_status test_load_onnx(struct fm_ctx *ctx, const char *file, int64_t batch,
                              const struct fm_input_binding *b, size_t nb, struct fm_graph **g)
{
    struct fm_load_opts o;
    fm_load_opts_init(&o);
    if (batch) {
        o.zoo.batch = batch;
        o.batch_given = true;
    }
    o.bindings = b;
    o.n_bindings = nb;
    char path[512];
    snprintf(path, sizeof(path), "%s/onnx/%s", FM_TEST_DATA, file);
    return fm_onnx_load_file(ctx, path, &o, g);
}

struct fm_counts *test_count(struct fm_ctx *ctx, struct fm_graph *g, enum fm_mode mode)
{
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = mode;
    struct fm_counts *c = NULL;
    FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &c));
    return c;
}

void test_assert_same_fits(const struct fm_calibration *a, const struct fm_calibration *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const struct fm_calib_entry *x = &a->entries[i], *y = &b->entries[i];
        assert_true(x->cls == y->cls && x->phase == y->phase && x->cold == y->cold);
        assert_string_equal(x->kind, y->kind);
        assert_true(x->fixed_s == y->fixed_s && x->s_per_flop == y->s_per_flop &&
                    x->s_per_byte == y->s_per_byte && x->points == y->points);
    }
}
