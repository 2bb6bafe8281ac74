/* Tests of the built CLI (FM_CLI): `count --format json` follows the contract of docs/json.md and
 * its totals are the sums of its layers; inference has no backward; CSV has one row per layer
 * plus a total row equal to the column sums; the table says its convention and input shape;
 * `models` lists every model, as CSV and JSON with each model's forward count; bad arguments
 * exit 2 (an HxWxC --input among them), failed requests exit 1, each with a message on stderr
 * that names what was wrong; a mistyped command or option gets the nearest name; options that do
 * nothing are said to be ignored; --by-class says the optimizer's share. */
#include "support.h"
#include "frontend/llm/llm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

/* torchvision's published resnet18 figure: conv + linear MACs at 1x3x224x224 */
#define RESNET18_MACS 1814073344ull

static const char *const phases[] = {"fwd", "bwd_data", "bwd_weight", "optimizer"};
static const char *const fields[] = {"flops", "macs", "bytes_read", "bytes_written"};

/* Runs the CLI; returns the exit status, stdout and stderr in *out and *err (to free). */
static int run(const char *args, char **out, char **err)
{
    int rc = test_run_cli(args, out, err);
    return rc;
}

static void expect_contains_(const char *text, const char *what, const char *args,
                             const char *file, int line)
{
    if (!strstr(text, what)) {
        print_error("%s:%d: `flopmeter %s`: output does not contain \"%s\":\n%s\n", file, line,
                    args, what, text);
        _fail(file, line);
    }
}
#define EXPECT_CONTAINS(text, what, args) expect_contains_(text, what, args, __FILE__, __LINE__)

/* Exit code, empty stdout and a message on stderr that contains `what`. */
static void expect_failure_(const char *args, int code, const char *what, const char *file,
                            int line)
{
    char *out = NULL, *err = NULL;
    int rc = run(args, &out, &err);
    if (rc != code) {
        print_error("%s:%d: `flopmeter %s` exited %d, expected %d; stderr:\n%s\n", file, line,
                    args, rc, code, err);
        _fail(file, line);
    }
    if (out[0] != '\0') {
        print_error("%s:%d: `flopmeter %s` failed but wrote to stdout:\n%s\n", file, line, args,
                    out);
        _fail(file, line);
    }
    expect_contains_(err, what, args, file, line);
    free(out);
    free(err);
}
#define EXPECT_FAILURE(args, code, what) expect_failure_(args, code, what, __FILE__, __LINE__)

static size_t resnet18_node_count(bool with_loss)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_zoo_opts zo;
    fm_zoo_opts_init(&zo);
    zo.with_loss = with_loss;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_zoo_build(ctx, "resnet18", &zo, &g));
    size_t n = fm_graph_node_count(g);
    fm_graph_free(g);
    fm_ctx_free(ctx);
    return n;
}

/* ---- JSON ---- */

#ifdef FM_HAVE_CJSON
static const cJSON *need(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        fail_msg("JSON: key \"%s\" missing", key);
    return v;
}

/* An exact non-negative integer (the counts below stay far under 2^53). */
static uint64_t need_u64(const cJSON *obj, const char *key)
{
    const cJSON *v = need(obj, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0)
        fail_msg("JSON: \"%s\" is not a count", key);
    return (uint64_t)v->valuedouble;
}

static cJSON *count_json(const char *args)
{
    char *out = NULL, *err = NULL;
    int rc = run(args, &out, &err);
    if (rc != 0)
        fail_msg("`flopmeter %s` exited %d: %s", args, rc, err);
    cJSON *j = cJSON_Parse(out);
    if (!j)
        fail_msg("`flopmeter %s` printed no valid JSON", args);
    free(out);
    free(err);
    return j;
}

/* The totals equal the sums over layers, for every phase and field, and for params. */
static void check_sums(const cJSON *j)
{
    const cJSON *totals = need(j, "totals"), *layers = need(j, "layers");
    assert_true(cJSON_IsArray(layers));
    assert_true(cJSON_GetArraySize(layers) > 0);
    uint64_t params = 0;
    uint64_t sum[4][4] = {{0}};
    const cJSON *l;
    cJSON_ArrayForEach(l, layers)
    {
        params += need_u64(l, "params");
        for (int p = 0; p < 4; p++) {
            const cJSON *ph = need(l, phases[p]);
            for (int f = 0; f < 4; f++)
                sum[p][f] += need_u64(ph, fields[f]);
        }
    }
    assert_int_equal(params, need_u64(totals, "params"));
    for (int p = 0; p < 4; p++) {
        const cJSON *ph = need(totals, phases[p]);
        for (int f = 0; f < 4; f++) {
            if (sum[p][f] != need_u64(ph, fields[f]))
                fail_msg("totals.%s.%s = %llu, layers sum to %llu", phases[p], fields[f],
                         (unsigned long long)need_u64(ph, fields[f]),
                         (unsigned long long)sum[p][f]);
        }
        /* the convention: FLOPs = 2*mac + the other kinds */
        const cJSON *ops = need(ph, "ops");
        uint64_t flops = 2 * need_u64(ops, "mac") + need_u64(ops, "add") + need_u64(ops, "mul") +
                         need_u64(ops, "div") + need_u64(ops, "cmp") + need_u64(ops, "special");
        assert_int_equal(flops, need_u64(ph, "flops"));
        assert_int_equal(need_u64(ops, "mac"), need_u64(ph, "macs"));
    }
    /* by_class: every class that occurs is there, and the classes add up to the totals */
    const cJSON *by_class = need(j, "by_class");
    cJSON_ArrayForEach(l, layers)
    {
        const cJSON *cls = need(l, "class");
        assert_true(cJSON_IsString(cls));
        need(by_class, cls->valuestring);
    }
    for (int p = 0; p < 3; p++) {
        uint64_t f = 0, m = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, by_class)
        {
            f += need_u64(need(c, phases[p]), "flops");
            m += need_u64(need(c, phases[p]), "macs");
        }
        assert_int_equal(f, need_u64(need(totals, phases[p]), "flops"));
        assert_int_equal(m, need_u64(need(totals, phases[p]), "macs"));
    }
}

static uint64_t conv_matmul_fwd_macs(const cJSON *j)
{
    const cJSON *bc = need(j, "by_class");
    return need_u64(need(need(bc, "conv"), "fwd"), "macs") +
           need_u64(need(need(bc, "matmul"), "fwd"), "macs");
}

static void test_json_contract(void **state)
{
    (void)state;
    cJSON *j = count_json("count resnet18 --format json");
    const cJSON *v = need(j, "flopmeter");
    assert_true(cJSON_IsString(v));
    assert_string_equal(v->valuestring, FM_VERSION);
    assert_string_equal(need(j, "model")->valuestring, "resnet18");
    assert_string_equal(need(j, "mode")->valuestring, "train");
    assert_int_equal(need_u64(j, "batch"), 1);
    /* inputs: the image, then the labels of the training loss */
    const cJSON *inputs = need(j, "inputs");
    assert_true(cJSON_IsArray(inputs));
    const cJSON *in0 = cJSON_GetArrayItem(inputs, 0);
    assert_non_null(in0);
    assert_true(cJSON_IsString(need(in0, "name")));
    assert_string_equal(need(in0, "dtype")->valuestring, "fp32");
    const cJSON *shape = need(in0, "shape");
    const int64_t want[4] = {1, 3, 224, 224};
    assert_int_equal(cJSON_GetArraySize(shape), 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal((int64_t)cJSON_GetArrayItem(shape, i)->valuedouble, want[i]);
    /* totals */
    const cJSON *totals = need(j, "totals");
    assert_int_equal(need_u64(totals, "params"), 11689512);   /* torchvision's count */
    assert_int_equal(need_u64(totals, "trainable_params"), 11689512);
    need_u64(totals, "activation_bytes");
    for (int p = 0; p < 4; p++) {
        for (int f = 0; f < 4; f++)
            need_u64(need(totals, phases[p]), fields[f]);
    }
    assert_true(need_u64(need(totals, "bwd_data"), "flops") > 0);
    assert_true(need_u64(need(totals, "bwd_weight"), "flops") > 0);
    assert_true(need_u64(need(totals, "optimizer"), "flops") > 0);
    assert_true(cJSON_IsArray(need(j, "uncounted")));
    assert_int_equal(cJSON_GetArraySize(need(j, "uncounted")), 0);
    /* layers: one per node, each with its keys; the first conv has no input gradient */
    const cJSON *layers = need(j, "layers");
    assert_int_equal((size_t)cJSON_GetArraySize(layers), resnet18_node_count(true));
    const cJSON *l;
    cJSON_ArrayForEach(l, layers)
    {
        assert_true(cJSON_IsString(need(l, "name")));
        assert_true(cJSON_IsString(need(l, "op")));
        assert_true(cJSON_IsString(need(l, "class")));
        assert_true(cJSON_IsArray(need(l, "output")));
        need_u64(l, "params");
        need_u64(need(l, "fwd"), "bytes_read");
        need_u64(need(l, "fwd"), "bytes_written");
        need_u64(need(l, "bwd_data"), "macs");
        need_u64(need(l, "bwd_weight"), "macs");
    }
    const cJSON *first = cJSON_GetArrayItem(layers, 0);
    assert_string_equal(need(first, "name")->valuestring, "conv1");
    assert_int_equal(need_u64(need(first, "bwd_data"), "flops"), 0);
    assert_true(need_u64(need(first, "bwd_weight"), "macs") > 0);
    assert_int_equal(conv_matmul_fwd_macs(j), RESNET18_MACS);
    check_sums(j);
    cJSON_Delete(j);
}

static void test_json_infer_and_batch(void **state)
{
    (void)state;
    cJSON *j = count_json("count resnet18 --infer --format json");
    assert_string_equal(need(j, "mode")->valuestring, "infer");
    const cJSON *totals = need(j, "totals");
    for (int p = 1; p < 4; p++) {
        for (int f = 0; f < 4; f++)
            assert_int_equal(need_u64(need(totals, phases[p]), fields[f]), 0);
    }
    const cJSON *l;
    cJSON_ArrayForEach(l, need(j, "layers"))
    {
        for (int p = 1; p < 4; p++)
            assert_int_equal(need_u64(need(l, phases[p]), "flops"), 0);
    }
    /* no loss in inference: one layer fewer */
    assert_int_equal((size_t)cJSON_GetArraySize(need(j, "layers")), resnet18_node_count(false));
    assert_int_equal(conv_matmul_fwd_macs(j), RESNET18_MACS);
    check_sums(j);
    cJSON_Delete(j);

    /* batch 3: conv and matmul MACs exactly three times batch 1 */
    j = count_json("count resnet18 --batch 3 --format json");
    assert_int_equal(need_u64(j, "batch"), 3);
    const cJSON *shape = need(cJSON_GetArrayItem(need(j, "inputs"), 0), "shape");
    assert_int_equal((int64_t)cJSON_GetArrayItem(shape, 0)->valuedouble, 3);
    assert_int_equal(conv_matmul_fwd_macs(j), 3 * RESNET18_MACS);
    check_sums(j);
    cJSON_Delete(j);
}
#else
static void test_json_contract(void **state)
{
    (void)state;
    print_message("skipped: this build has no cJSON (FM_HAVE_CJSON undefined)\n");
    skip();
}

static void test_json_infer_and_batch(void **state)
{
    (void)state;
    print_message("skipped: this build has no cJSON (FM_HAVE_CJSON undefined)\n");
    skip();
}
#endif

/* ---- CSV ---- */

/* Splits one CSV line into fields (double-quoted fields may hold commas); modifies line. */
static int csv_split(char *line, char **cols, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        if (*p == '"') {
            char *end = strchr(p + 1, '"');
            assert_non_null(end);
            *end = '\0';
            cols[n++] = p + 1;
            p = end + 1;
        } else {
            cols[n++] = p;
            p += strcspn(p, ",");
        }
        if (*p != ',')
            break;
        *p++ = '\0';
    }
    return n;
}

static void test_csv_rows_and_totals(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(run("count resnet18 --format csv", &out, &err), 0);
    enum { MAXC = 64 };
    char *cols[MAXC];
    char *save = NULL;
    char *line = strtok_r(out, "\n", &save);
    assert_non_null(line);
    int ncol = csv_split(line, cols, MAXC);
    assert_string_equal(cols[0], "index");
    assert_string_equal(cols[5], "params");
    assert_string_equal(cols[7], "fwd_flops");
    /* 7 descriptive columns, then 4 numbers per phase */
    assert_int_equal(ncol, 7 + 4 * 4);
    uint64_t sum[MAXC] = {0}, total[MAXC] = {0};
    size_t rows = 0;
    bool saw_total = false;
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        assert_false(saw_total);   /* the total row is the last */
        int n = csv_split(line, cols, MAXC);
        assert_int_equal(n, ncol);
        bool is_total = strcmp(cols[0], "total") == 0;
        for (int c = 5; c < ncol; c++) {
            if (c == 6)
                continue;   /* counted: a flag */
            char *end;
            uint64_t v = strtoull(cols[c], &end, 10);
            assert_true(*cols[c] && *end == '\0');
            if (is_total)
                total[c] = v;
            else
                sum[c] += v;
        }
        if (is_total)
            saw_total = true;
        else
            assert_int_equal(strtoul(cols[0], NULL, 10), ++rows);
    }
    assert_true(saw_total);
    assert_int_equal(rows, resnet18_node_count(true));
    for (int c = 5; c < ncol; c++)
        assert_int_equal(sum[c], total[c]);
    assert_int_equal(total[5], 11689512);
    free(out);
    free(err);
}

/* ---- table, models, help ---- */

static void test_table_names_convention_and_input(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    const char *args = "count resnet18 --batch 4";
    assert_int_equal(run(args, &out, &err), 0);
    EXPECT_CONTAINS(out, "resnet18", args);
    EXPECT_CONTAINS(out, "4x3x224x224", args);
    EXPECT_CONTAINS(out, "FLOP = 2 x MAC", args);
    EXPECT_CONTAINS(out, "training step", args);
    EXPECT_CONTAINS(out, "not counted    none", args);
    EXPECT_CONTAINS(out, "conv1", args);
    /* a step whose phases fit in 64 bits but whose sum does not: the table must not wrap.
     * resnet18 trains at 10.7 GFLOP per sample (FlopCounterMode's 10.88 G minus conv1's data
     * gradient, plus the non-MAC work); 2e9 samples give 21.4 EFLOP > 2^64 = 18.4 E */
    free(out);
    free(err);
    args = "count resnet18 --batch 2000000000";
    assert_int_equal(run(args, &out, &err), 0);
    EXPECT_CONTAINS(out, "step           21.4 EFLOP   10.7 GFLOP per sample", args);
    free(out);
    free(err);
    assert_int_equal(run("count resnet18", &out, &err), 0);
    EXPECT_CONTAINS(out, "step           10.7 GFLOP   10.7 GFLOP per sample", "count resnet18");
    free(out);
    free(err);
    args = "count resnet18 --infer --input 3x160x160";
    assert_int_equal(run(args, &out, &err), 0);
    EXPECT_CONTAINS(out, "1x3x160x160", args);
    EXPECT_CONTAINS(out, "inference", args);
    EXPECT_CONTAINS(out, "FLOP = 2 x MAC", args);
    free(out);
    free(err);
}

static void test_models_lists_all(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(run("models", &out, &err), 0);
    for (size_t i = 0; i < fm_zoo_count(); i++) {
        const struct fm_zoo_entry *e = fm_zoo_get(i);
        char head[64];
        snprintf(head, sizeof(head), "\n%s ", e->name);
        EXPECT_CONTAINS(out, head, "models");
    }
    free(out);
    free(err);
}

/* `models` as CSV and JSON: a row per model, whose figures are the count of its forward pass
 * at batch 1. */
static void test_models_csv_json_counts(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    char *out;
    assert_int_equal(test_run_cli("models --format csv", &out, NULL), 0);
    test_expect_in(out, "model,family,input,params,fwd_macs,fwd_flops,description\n");
    size_t rows = 0;
    for (const char *p = out; (p = strchr(p, '\n')); p++)
        rows++;
    assert_int_equal(rows, fm_zoo_count() + fm_llm_builtin_count() + 1);
    /* every row's figures are the count of that model's forward pass at batch 1 */
    for (size_t i = 0; i < fm_zoo_count(); i++) {
        const char *name = fm_zoo_get(i)->name;
        struct fm_graph *g;
        struct fm_counts *c = test_count_zoo(ctx, name, 1, FM_MODE_INFER, &g);
        char row[256];
        snprintf(row, sizeof(row), "\n%s,%s,", name, fm_zoo_get(i)->family);
        const char *at = strstr(out, row);
        if (!at)
            fail_msg("no CSV row for %s", name);
        char expect[128];
        snprintf(expect, sizeof(expect), ",%llu,%llu,%llu,",
                 (unsigned long long)c->params,
                 (unsigned long long)fm_work_macs(&c->total[FM_PHASE_FWD]),
                 (unsigned long long)fm_work_flops(&c->total[FM_PHASE_FWD]));
        const char *eol = strchr(at + 1, '\n');
        const char *hit = strstr(at, expect);
        if (!hit || hit > eol)
            fail_msg("%s: row lacks %s", name, expect);
        fm_counts_free(c);
        fm_graph_free(g);
    }
    free(out);
    assert_int_equal(test_run_cli("models", &out, NULL), 0);
    test_expect_in(out, "fwd MAC");
    free(out);
#ifdef FM_HAVE_CJSON
    assert_int_equal(test_run_cli("models --format json", &out, NULL), 0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    const cJSON *models = cJSON_GetObjectItem(j, "models");
    /* the torchvision architectures, then the built-in language models */
    assert_int_equal(cJSON_GetArraySize(models), (int)(fm_zoo_count() + fm_llm_builtin_count()));
    const cJSON *first = cJSON_GetArrayItem(models, 0);
    assert_string_equal(cJSON_GetObjectItem(first, "name")->valuestring, fm_zoo_get(0)->name);
    assert_true(cJSON_GetObjectItem(first, "fwd_macs")->valuedouble > 0);
    cJSON_Delete(j);
    free(out);
#endif
    assert_int_equal(test_run_cli("models --format xml", &out, NULL), 2);
    free(out);
    fm_ctx_free(ctx);
}

/* count --by-class: the optimizer step is in no class, and its share of the step is said. */
static void test_by_class_optimizer_share(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_WORK);
    o.model = "vgg16";
    o.count.optimizer = FM_OPTIM_ADAM;
    struct fm_session *s = test_session_ok(ctx, &o);
    double opt = (double)fm_work_flops(&s->counts->total[FM_PHASE_OPTIMIZER]), rest = 0;
    for (int ph = 0; ph < FM_PHASE_OPTIMIZER; ph++)
        rest += (double)fm_work_flops(&s->counts->total[ph]);
    char expect[96];
    snprintf(expect, sizeof(expect), "%.1f%% of the step's FLOPs", 100.0 * opt / (opt + rest));
    fm_session_free(s);
    char *out;
    assert_int_equal(test_run_cli("count vgg16 --optimizer adam --by-class", &out, NULL), 0);
    test_expect_in(out, "The optimizer step is in no class");
    test_expect_in(out, expect);
    free(out);
    assert_int_equal(test_run_cli("count vgg16 --infer --by-class", &out, NULL), 0);
    test_expect_in(out, "(share: of forward FLOPs)");
    free(out);
    fm_ctx_free(ctx);
}

static void test_help(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(run("count --help", &out, &err), 0);
    EXPECT_CONTAINS(out, "usage: flopmeter count", "count --help");
    EXPECT_CONTAINS(out, "--batch", "count --help");
    free(out);
    free(err);
    assert_int_equal(run("--help", &out, &err), 0);
    EXPECT_CONTAINS(out, "count", "--help");
    free(out);
    free(err);
}

/* ---- errors ---- */

static void test_usage_errors_exit_2(void **state)
{
    (void)state;
    EXPECT_FAILURE("count resnet18 --bogus", 2, "--bogus");
    EXPECT_FAILURE("count resnet18 -b 4", 2, "-b");
    EXPECT_FAILURE("count resnet18 --batch 0", 2, "--batch");
    EXPECT_FAILURE("count resnet18 --batch -3", 2, "--batch");
    EXPECT_FAILURE("count resnet18 --batch abc", 2, "abc");
    EXPECT_FAILURE("count resnet18 --batch 2x", 2, "--batch");
    EXPECT_FAILURE("count resnet18 --batch", 2, "--batch");
    EXPECT_FAILURE("count resnet18 --batch 2199023255552", 2, "2^40");   /* 2^41 */
    EXPECT_FAILURE("count resnet18 --input 3x0x224", 2, "3x0x224");
    EXPECT_FAILURE("count resnet18 --input 224x224", 2, "CxHxW");
    EXPECT_FAILURE("count resnet18 --input 3xax224", 2, "3xax224");
    EXPECT_FAILURE("count resnet18 --format xml", 2, "table|csv|json");
    EXPECT_FAILURE("count", 2, "MODEL");
    EXPECT_FAILURE("count resnet18 vgg16", 2, "vgg16");
    EXPECT_FAILURE("count resnet18 --train --infer", 2, "--infer");
    EXPECT_FAILURE("count resnet18 --infer=yes", 2, "--infer");
    EXPECT_FAILURE("nosuchcommand", 2, "nosuchcommand");
    EXPECT_FAILURE("", 2, "usage");
}

/* An --input that looks like HxWxC (an image as PIL lays it out) is a usage error that names
 * the CxHxW form. */
static void test_input_hwc_refused(void **state)
{
    (void)state;
    char *out, *err;
    assert_int_equal(test_run_cli("count resnet50 --input 224x224x3", &out, &err), 2);
    test_expect_in(err, "looks like HxWxC");
    test_expect_in(err, "--input 3x224x224");
    free(out);
    free(err);
    /* CxHxW, and a small image with a few channels, still build */
    assert_int_equal(test_run_cli("count resnet50 --input 3x160x160 --format csv", &out, NULL),
                     0);
    free(out);
    assert_int_equal(test_run_cli("count resnet18 --input 3x32x32 --format csv", &out, NULL), 0);
    free(out);
}

/* A mistyped command or option: the nearest name is suggested, none when nothing is near. */
static void test_nearest_name_suggested(void **state)
{
    (void)state;
    const char *cmds[] = {"count", "models", "devices", "device", "roofline", "predict",
                          "utilization", "probe", "measure"};
    size_t n = sizeof(cmds) / sizeof(cmds[0]);
    assert_string_equal(fm_nearest_name("cout", cmds, n), "count");
    assert_string_equal(fm_nearest_name("modles", cmds, n), "models");
    assert_string_equal(fm_nearest_name("PREDICT", cmds, n), "predict");
    assert_string_equal(fm_nearest_name("rooflin", cmds, n), "roofline");
    assert_null(fm_nearest_name("xyz", cmds, n));
    assert_null(fm_nearest_name("c", cmds, n));
    assert_null(fm_nearest_name("", cmds, n));
    assert_null(fm_nearest_name("count", cmds, 0));

    char *out, *err;
    assert_int_equal(test_run_cli("cout resnet50", &out, &err), 2);
    test_expect_in(err, "unknown command 'cout'; did you mean 'count'?");
    free(out);
    free(err);
    assert_int_equal(test_run_cli("xyz", &out, &err), 2);
    test_expect_in(err, "unknown command 'xyz'");
    assert_null(strstr(err, "did you mean"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("count resnet50 --bacth 4", &out, &err), 2);
    test_expect_in(err, "unknown option --bacth; did you mean --batch?");
    free(out);
    free(err);
}

/* An option that does nothing in its company (--optimizer with --infer, --epochs without
 * --dataset-size) is said to be ignored. */
static void test_ignored_options_warn(void **state)
{
    (void)state;
    char *out, *err;
    assert_int_equal(test_run_cli("count resnet18 --infer --optimizer adam", &out, &err), 0);
    test_expect_in(err, "--optimizer adam is ignored with --infer");
    free(out);
    free(err);
    assert_int_equal(test_run_cli("count resnet18 --infer", &out, &err), 0);
    assert_null(strstr(err, "ignored"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("predict resnet18 --device a100-40gb --epochs 90 --summary",
                                  &out, &err),
                     0);
    test_expect_in(err, "--epochs 90 is ignored without --dataset-size");
    free(out);
    free(err);
    assert_int_equal(test_run_cli("predict resnet18 --device a100-40gb --epochs 90 "
                                  "--dataset-size 1000 --summary",
                                  &out, &err),
                     0);
    assert_null(strstr(err, "ignored"));
    free(out);
    free(err);
}

static void test_failures_exit_1(void **state)
{
    (void)state;
    /* an unknown model: the request fails (the arguments are well formed), with suggestions */
    EXPECT_FAILURE("count resnet5", 1, "did you mean");
    EXPECT_FAILURE("count resnet5", 1, "resnet50");
    /* too small: vgg16's fifth max pool (features.30) meets a 1x1 map at 16x16 */
    EXPECT_FAILURE("count vgg16 --input 3x16x16", 1, "features.30");
    /* overflow: 2^40 images make conv1's 118,013,952 MACs per image exceed 2^64 */
    EXPECT_FAILURE("count resnet18 --batch 1099511627776", 1, "conv1");
    EXPECT_FAILURE("count resnet18 --batch 1099511627776", 1, "64 bits");
    /* vgg16 at 2^40: its first output, 2^40*64*224*224 elements, cannot even be held */
    EXPECT_FAILURE("count vgg16 --batch 1099511627776", 1, "features.0");
    /* a big input and batch: every tensor fits, the totals do not */
    EXPECT_FAILURE("count resnet18 --input 3x100000x100000 --batch 100000", 1, "layer '");
    /* a missing ONNX file */
    EXPECT_FAILURE("count /nonexistent/model.onnx", 1, "model.onnx");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_contract),
        cmocka_unit_test(test_json_infer_and_batch),
        cmocka_unit_test(test_csv_rows_and_totals),
        cmocka_unit_test(test_table_names_convention_and_input),
        cmocka_unit_test(test_models_lists_all),
        cmocka_unit_test(test_models_csv_json_counts),
        cmocka_unit_test(test_by_class_optimizer_share),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_usage_errors_exit_2),
        cmocka_unit_test(test_input_hwc_refused),
        cmocka_unit_test(test_nearest_name_suggested),
        cmocka_unit_test(test_ignored_options_warn),
        cmocka_unit_test(test_failures_exit_1),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
