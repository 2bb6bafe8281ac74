/* fm_peers against what the real tools print (tests/data/peers, written by
 * tools/peer_reference.py): every built-in at batch 1 and its default input, every ONNX export
 * of them in tests/data, each figure an exact integer. Also: a training count gives the same
 * figures (the loss left out), a graph with no record of its PyTorch modules says which peers
 * it cannot tell and why, a failed allocation anywhere in fm_peers is FM_ERR_NOMEM with nothing
 * leaked, and `count --peers` puts them in the table and the JSON. */
#include "support.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA FM_TEST_DATA "/peers/"

struct fixture {
    uint64_t value[FM_PEER_COUNT];
    char unit[FM_PEER_COUNT][16];
    char published[16];
    char onnx[4][128];
    int n_onnx;
};

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[len] = '\0';
    fclose(f);
    return buf;
}

/* The string value after `"key": "` into out; false when absent. */
static bool scan_string(const char *from, const char *key, char *out, size_t size)
{
    char pat[64];
    snprintf(pat, sizeof(pat), "\"%s\": \"", key);
    const char *p = strstr(from, pat);
    if (!p)
        return false;
    p += strlen(pat);
    const char *end = strchr(p, '"');
    if (!end || (size_t)(end - p) >= size)
        return false;
    memcpy(out, p, (size_t)(end - p));
    out[end - p] = '\0';
    return true;
}

/* Reads tests/data/peers/<model>.json: one peer a line, `"<key>": {"value": N, "unit": "U"`. */
static void load_fixture(const char *model, struct fixture *fx)
{
    char path[256];
    snprintf(path, sizeof(path), DATA "%s.json", model);
    char *text = slurp(path);
    if (!text)
        fail_msg("%s: no fixture (run tools/peer_reference.py)", path);
    memset(fx, 0, sizeof(*fx));
    for (int k = 0; k < FM_PEER_COUNT; k++) {
        char pat[64];
        snprintf(pat, sizeof(pat), "\"%s\": {\"value\": ", fm_peer_key((enum fm_peer)k));
        const char *p = strstr(text, pat);
        if (!p)
            fail_msg("%s: no figure for %s", path, fm_peer_key((enum fm_peer)k));
        char *end = NULL;
        fx->value[k] = strtoull(p + strlen(pat), &end, 10);
        assert_true(end && *end == ',');
        assert_true(scan_string(end, "unit", fx->unit[k], sizeof(fx->unit[k])));
    }
    assert_true(scan_string(text, "published_gflops", fx->published, sizeof(fx->published)));
    const char *list = strstr(text, "\"onnx\": [");
    assert_non_null(list);
    const char *close = strchr(list, ']');
    for (const char *p = strchr(list, '"') + 8; p && p < close && fx->n_onnx < 4;) {
        p = strchr(p, '"');
        if (!p || p > close)
            break;
        const char *end = strchr(p + 1, '"');
        snprintf(fx->onnx[fx->n_onnx++], sizeof(fx->onnx[0]), "%.*s", (int)(end - p - 1), p + 1);
        p = end + 1;
    }
    free(text);
}

/* Compares every peer: each mismatch is printed before the test fails, so one run shows
 * them all. expect_computable: which peers must be computable (bit per peer). */
static int compare(const char *what, const struct fm_peer_figures *got, const struct fixture *fx,
                   unsigned expect_computable)
{
    int bad = 0;
    for (int k = 0; k < FM_PEER_COUNT; k++) {
        const struct fm_peer_figure *f = &got->peer[k];
        const char *key = fm_peer_key((enum fm_peer)k);
        bool want = expect_computable & (1u << k);
        if (f->computable != want) {
            print_message("%s %s: computable %d, expected %d (%s)\n", what, key, f->computable,
                          want, f->note);
            bad++;
        } else if (f->computable && f->value != fx->value[k]) {
            print_message("%s %s: %" PRIu64 ", the tool prints %" PRIu64 " (%+.0f)\n", what,
                          key, f->value, fx->value[k], (double)f->value - (double)fx->value[k]);
            bad++;
        }
        if (strcmp(f->unit, fx->unit[k]) != 0) {
            print_message("%s %s: unit %s, fixture %s\n", what, key, f->unit, fx->unit[k]);
            bad++;
        }
        if (f->note[0] == '\0') {
            print_message("%s %s: no note\n", what, key);
            bad++;
        }
    }
    return bad;
}

#define ALL_PEERS ((1u << FM_PEER_COUNT) - 1)

/* Python's str() of round(macs / 1e9, 3), the form torchvision's metadata holds. */
static void gflops_text(uint64_t macs, char *buf, size_t size)
{
    snprintf(buf, size, "%.3f", round((double)macs / 1e6) / 1e3);
    char *end = buf + strlen(buf) - 1;
    while (*end == '0' && end[-1] != '.')
        *end-- = '\0';
}

static void test_builtins_match_the_tools(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    int bad = 0;
    for (size_t i = 0; i < fm_zoo_count(); i++) {
        const char *name = fm_zoo_get(i)->name;
        struct fixture fx;
        load_fixture(name, &fx);
        for (int mode = 0; mode < 2; mode++) {
            struct fm_graph *g = NULL;
            struct fm_counts *c = test_count_zoo(ctx, name, 1, mode ? FM_MODE_TRAIN
                                                                    : FM_MODE_INFER, &g);
            struct fm_peer_figures pf;
            FM_ASSERT_OK(ctx, fm_peers(ctx, g, c, &pf));
            char what[64];
            snprintf(what, sizeof(what), "%s (%s count)", name, mode ? "training" : "inference");
            bad += compare(what, &pf, &fx, ALL_PEERS);
            assert_true(pf.builtin);
            assert_int_equal(pf.batch, 1);
            if (strcmp(pf.published, fx.published) != 0) {
                print_message("%s: published '%s', torchvision's metadata '%s'\n", what,
                              pf.published, fx.published);
                bad++;
            }
            char text[32];   /* the published figure is these MACs, rounded */
            gflops_text(pf.peer[FM_PEER_TORCHVISION].value, text, sizeof(text));
            if (strcmp(text, fx.published) != 0) {
                print_message("%s: %s GMACs rounded is %s, torchvision publishes %s\n", what,
                              name, text, fx.published);
                bad++;
            }
            fm_counts_free(c);
            fm_graph_free(g);
        }
    }
    assert_int_equal(bad, 0);
    fm_ctx_free(ctx);
}

static void test_onnx_exports_match_the_tools(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    int bad = 0, files = 0;
    for (size_t i = 0; i < fm_zoo_count(); i++) {
        const char *name = fm_zoo_get(i)->name;
        struct fixture fx;
        load_fixture(name, &fx);
        for (int j = 0; j < 2 * fx.n_onnx; j++) {
            /* each file as inference and as a training step (with the loss the policy adds,
             * whose node has no scope name) */
            bool train = j % 2;
            char path[512], what[192];
            snprintf(path, sizeof(path), FM_TEST_DATA "/%s", fx.onnx[j / 2]);
            snprintf(what, sizeof(what), "%s (%s)", fx.onnx[j / 2], train ? "training" : "infer");
            struct fm_load_opts lo;
            fm_load_opts_init(&lo);
            struct fm_graph *g = NULL;
            FM_ASSERT_OK(ctx, fm_model_load(ctx, path, &lo, &g));
            if (train) {
                struct fm_loss_info li;
                FM_ASSERT_OK(ctx, fm_graph_add_loss(g, FM_NONE, &li));
                assert_int_equal(li.n, 1);
            }
            struct fm_count_opts co;
            fm_count_opts_init(&co);
            co.mode = train ? FM_MODE_TRAIN : FM_MODE_INFER;
            struct fm_counts *c = NULL;
            FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &c));
            struct fm_peer_figures pf;
            FM_ASSERT_OK(ctx, fm_peers(ctx, g, c, &pf));
            /* every peer: the module-hook tools read the torch.nn modules from the
             * exporter's scope names */
            bad += compare(what, &pf, &fx, ALL_PEERS);
            assert_false(pf.builtin);
            assert_string_equal(pf.published, "");
            fm_counts_free(c);
            fm_graph_free(g);
            files++;
        }
    }
    assert_int_equal(bad, 0);
    assert_true(files >= 2 * 10);
    fm_ctx_free(ctx);
}

/* A graph built through the API records no PyTorch modules: the module-hook tools are not
 * computable where it matters, with the reason; the op-level ones are. */
static void test_graph_without_modules(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "mine", &g));
    struct fm_shape xs = {4, {2, 3, 8, 8}}, ws = {4, {4, 3, 3, 3}};
    fm_tid x, w, y, r;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "x", FM_ROLE_INPUT, FM_DTYPE_FP32, &xs, &x));
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, "w", FM_ROLE_PARAM, FM_DTYPE_FP32, &ws, &w));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.kernel[0] = a.kernel[1] = 3;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_CONV, "conv", &a,
                                        (fm_tid[]){x, w}, 2, NULL, 1, &y));
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_RELU, "relu", NULL, &y, 1, NULL, 1, &r));
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    struct fm_counts *c = NULL;
    FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &c));
    struct fm_peer_figures pf;
    FM_ASSERT_OK(ctx, fm_peers(ctx, g, c, &pf));
    uint64_t macs = 2ull * 4 * 6 * 6 * 3 * 9;
    assert_true(pf.peer[FM_PEER_FVCORE].computable);
    assert_int_equal(pf.peer[FM_PEER_FVCORE].value, macs);
    assert_int_equal(pf.peer[FM_PEER_FLOP_COUNTER_FWD].value, 2 * macs);
    /* backward: the weight gradient only (the input needs none) */
    assert_int_equal(pf.peer[FM_PEER_FLOP_COUNTER_BWD].value, 4 * macs);
    assert_int_equal(pf.peer[FM_PEER_TORCHVISION].value, macs);
    assert_non_null(strstr(pf.peer[FM_PEER_TORCHVISION].note, "publishes none"));
    static const enum fm_peer hooks[] = {FM_PEER_PTFLOPS, FM_PEER_THOP, FM_PEER_PTHFLOPS};
    for (size_t i = 0; i < 3; i++) {
        const struct fm_peer_figure *f = &pf.peer[hooks[i]];
        assert_false(f->computable);
        assert_non_null(strstr(f->note, "torch.nn modules"));
        assert_non_null(strstr(f->note, "(conv)"));
    }
    assert_false(pf.builtin);
    assert_int_equal(pf.batch, 2);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* An allocator that fails its Nth call and counts the blocks it has out. */
struct failing {
    long calls, fail_at, live;
};

static void *f_malloc(size_t size, void *user)
{
    struct failing *f = user;
    if (++f->calls == f->fail_at)
        return NULL;
    void *p = malloc(size);
    f->live += p != NULL;
    return p;
}

static void *f_realloc(void *ptr, size_t size, void *user)
{
    struct failing *f = user;
    if (!ptr)
        return f_malloc(size, user);
    if (++f->calls == f->fail_at)
        return NULL;
    return realloc(ptr, size);
}

static void f_free(void *ptr, void *user)
{
    struct failing *f = user;
    f->live -= ptr != NULL;
    free(ptr);
}

/* Every allocation fm_peers makes (the builder's check graph, the scope table) may fail: it
 * says FM_ERR_NOMEM and leaves nothing allocated, for a built-in and for an ONNX export. */
static void test_out_of_memory(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    for (int which = 0; which < 2; which++) {
        struct fm_graph *g = NULL;
        struct fm_counts *c = NULL;
        if (which == 0) {
            c = test_count_zoo(ctx, "mobilenet_v3_small", 1, FM_MODE_INFER, &g);
        } else {
            struct fm_load_opts lo;
            fm_load_opts_init(&lo);
            FM_ASSERT_OK(ctx, fm_model_load(ctx, FM_TEST_DATA "/onnx/googlenet_op13.onnx", &lo,
                                            &g));
            struct fm_count_opts co;
            fm_count_opts_init(&co);
            co.mode = FM_MODE_INFER;
            FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &c));
        }
        enum fm_status st = FM_ERR_NOMEM;
        long n;
        for (n = 1; st != FM_OK && n < 100000; n++) {
            struct failing f = {0, n, 0};
            struct fm_allocator a = {f_malloc, f_realloc, f_free, &f};
            struct fm_ctx *fctx = NULL;
            if (fm_ctx_new(&a, &fctx) != FM_OK)
                continue;   /* the context itself was the failed allocation */
            struct fm_peer_figures pf;
            st = fm_peers(fctx, g, c, &pf);
            if (st != FM_OK)
                assert_int_equal(st, FM_ERR_NOMEM);
            fm_ctx_free(fctx);
            assert_int_equal(f.live, 0);
        }
        assert_int_equal(st, FM_OK);
        assert_true(n > 2);
        fm_counts_free(c);
        fm_graph_free(g);
    }
    fm_ctx_free(ctx);
}

static void test_cli_peers(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(test_run_cli("count resnet18 --peers --format json", &out, &err), 0);
    const char *peers = strstr(out, "\"peers\": {");
    assert_non_null(peers);
    struct fixture fx;
    load_fixture("resnet18", &fx);
    for (int k = 0; k < FM_PEER_COUNT; k++) {
        char pat[96];
        snprintf(pat, sizeof(pat), "\"%s\": {\"value\": %" PRIu64 ", \"unit\": \"%s\"",
                 fm_peer_key((enum fm_peer)k), fx.value[k], fx.unit[k]);
        if (!strstr(peers, pat))
            fail_msg("no %s in the JSON peers", pat);
    }
    assert_non_null(strstr(peers, "\"published_gflops\": \"1.814\""));
    free(out);
    free(err);
    /* the table: a section with each peer's exact figure */
    assert_int_equal(test_run_cli("count resnet18 --peers", &out, &err), 0);
    assert_non_null(strstr(out, "peers: what other counters print"));
    assert_non_null(strstr(out, "1,826,793,960 FLOPs"));
    assert_non_null(strstr(out, "pthflops count_ops"));
    free(out);
    free(err);
    /* without --peers, nothing of them */
    assert_int_equal(test_run_cli("count resnet18 --format json", &out, &err), 0);
    assert_null(strstr(out, "\"peers\""));
    free(out);
    free(err);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtins_match_the_tools),
        cmocka_unit_test(test_onnx_exports_match_the_tools),
        cmocka_unit_test(test_graph_without_modules),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_cli_peers),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
