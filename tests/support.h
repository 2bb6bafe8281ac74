/* Helpers shared by the tests: running a file's cases (all, or those named on the command line),
 * a context per test, building and counting a model, running the CLI and capturing its output. */
#ifndef FM_TEST_SUPPORT_H
#define FM_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "flopmeter.h"
/* the tests read what the library keeps behind its accessors (the session's and calibration's
 * bodies, the profile readers' records) and call its internal functions */
#include "analysis/calibration_internal.h"
#include "analysis/session_internal.h"
#include "frontend/profile/profile.h"

/* A test file's main ends with TEST_RUN_CASES(argc, argv, tests, setup, teardown) instead of
 * cmocka_run_group_tests. With no argument it runs every case; each argument names cases to run
 * (a case's function name, or a shell pattern such as "test_conv_*"), and one that names no case
 * fails the run, so a misspelt or vanished ctest entry cannot pass with nothing run. --list
 * prints the case names, one a line: the build registers a ctest entry per case from it
 * (tests/CMakeLists.txt). */
int test_run_cases(int argc, char **argv, const char *group, const struct CMUnitTest *tests,
                   size_t n, CMFixtureFunction setup, CMFixtureFunction teardown);
#define TEST_RUN_CASES(argc, argv, tests, setup, teardown)                                   \
    test_run_cases(argc, argv, #tests, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown)
/* Whether this run only lists the cases (--list): a main skips its set-up then (probing a device,
 * loading data) so that listing works on any machine. */
int test_listing(int argc, char **argv);

/* Asserts st == FM_OK, printing the context's message when not. */
#define FM_ASSERT_OK(ctx, expr)                                                              \
    do {                                                                                     \
        enum fm_status st_ = (expr);                                                         \
        if (st_ != FM_OK)                                                                    \
            fail_msg("%s failed: %s: %s", #expr, fm_status_to_string(st_), fm_ctx_error(ctx)); \
    } while (0)

/* Asserts that the context's last error message contains every one of the given words. */
void test_expect_message(struct fm_ctx *ctx, const char *const *words, size_t n, const char *file,
                         int line);
#define EXPECT_MESSAGE(ctx, ...)                                                             \
    test_expect_message(ctx, (const char *const[]){__VA_ARGS__},                             \
                        sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *),   \
                        __FILE__, __LINE__)

/* Asserts that text contains word, printing the text when not. */
void test_expect_in(const char *text, const char *word);

struct fm_ctx *test_ctx(void);
/* Builds a built-in model (batch, classes; with_loss for training) and counts it. */
struct fm_counts *test_count_zoo(struct fm_ctx *ctx, const char *name, int64_t batch,
                                 enum fm_mode mode, struct fm_graph **graph_out);
/* Loads tests/data/onnx/FILE: batch (0: the file's) binds the symbolic batch, b the inputs. */
enum fm_status test_load_onnx(struct fm_ctx *ctx, const char *file, int64_t batch,
                              const struct fm_input_binding *b, size_t nb, struct fm_graph **g);
/* Counts g in mode (the test fails if it cannot). */
struct fm_counts *test_count(struct fm_ctx *ctx, struct fm_graph *g, enum fm_mode mode);
/* Runs a session that must succeed (failing the test with the context's message if not). */
struct fm_session *test_session_ok(struct fm_ctx *ctx, const struct fm_session_opts *opts);
/* Runs the CLI with the given arguments; stdout into *out (malloc'd), returns exit status. */
int test_run_cli(const char *args, char **out, char **err);

/* Asserts that two calibrations hold the same fits: entry by entry, the same class, kind, phase
 * and cache, and the same coefficients and point counts to the bit. */
void test_assert_same_fits(const struct fm_calibration *a, const struct fm_calibration *b);
/* A whole file, NUL-terminated, malloc'd (the test fails if it cannot be read); *len (may be
 * NULL) gets its size. */
char *test_read_file(const char *path, size_t *len);

#endif
