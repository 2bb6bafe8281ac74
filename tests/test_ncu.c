/* The Nsight Compute and Nsight Systems readers: real ncu captures (tests/data/profiles/ncu,
 * SOURCES.md there) against totals an independent reading wrote (expect_ncu.py), both forms,
 * scaled units, thousands separators, preambles, rates that must not be summed, missing
 * metrics, every malformed input with its line and column, the NVTX grouping, the matching to
 * a model's layers, and the nsys summaries (built from NVIDIA's documented column sets, as no
 * nsys capture could be made here). */
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NCU_DIR FM_TEST_DATA "/profiles/ncu/"
#define NSYS_DIR FM_TEST_DATA "/profiles/nsys/"

static struct fm_ncu_profile *read_ok(struct fm_ctx *ctx, const char *text)
{
    struct fm_ncu_profile *p = NULL;
    FM_ASSERT_OK(ctx, fm_ncu_read_buffer(ctx, text, strlen(text), "mem.csv", &p));
    return p;
}

static void read_fails(struct fm_ctx *ctx, const char *text)
{
    struct fm_ncu_profile *p = NULL;
    assert_int_equal(fm_ncu_read_buffer(ctx, text, strlen(text), "mem.csv", &p), FM_ERR_PARSE);
    assert_null(p);
}

static void assert_rel(double got, double want, double tol)
{
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("got %.17g, want %.17g (relative tolerance %g)", got, want, tol);
}

/* ---- the real captures against the independent totals ---- */

static const struct fm_prof_figure *total_of(const struct fm_ncu_profile *p, const char *key)
{
    if (strcmp(key, "fp64_flops") == 0)
        return &p->totals.flops[FM_NCU_FP64];
    if (strcmp(key, "fp32_flops") == 0)
        return &p->totals.flops[FM_NCU_FP32];
    if (strcmp(key, "fp16_flops") == 0)
        return &p->totals.flops[FM_NCU_FP16];
    if (strcmp(key, "tensor_inst") == 0)
        return &p->totals.tensor_inst;
    if (strcmp(key, "dram_bytes") == 0)
        return &p->totals.dram_bytes;
    if (strcmp(key, "time_s") == 0)
        return &p->totals.time_s;
    return NULL;
}

static void test_captures_match_independent_totals(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    FILE *f = fopen(NCU_DIR "expected.txt", "r");
    assert_non_null(f);
    char line[512], cur[128] = "";
    struct fm_ncu_profile *p = NULL;
    int checked = 0;
    while (fgets(line, sizeof(line), f)) {
        if (line[0] == '#')
            continue;
        char file[128], key[64], val[64];
        assert_int_equal(sscanf(line, "%127[^,],%63[^,],%63s", file, key, val), 3);
        if (strcmp(file, cur) != 0) {
            fm_ncu_profile_free(p);
            char path[512];
            snprintf(path, sizeof(path), NCU_DIR "%s", file);
            FM_ASSERT_OK(ctx, fm_ncu_read_file(ctx, path, &p));
            snprintf(cur, sizeof(cur), "%s", file);
        }
        if (strcmp(key, "kernels") == 0) {
            assert_int_equal(p->n_kernels, strtoull(val, NULL, 10));
        } else {
            const struct fm_prof_figure *g = total_of(p, key);
            assert_non_null(g);
            if (strcmp(val, "missing") == 0) {
                assert_false(g->known);
            } else if (strcmp(key, "time_s") == 0) {
                assert_true(g->known);
                assert_rel(g->value, strtod(val, NULL), 1e-9);
            } else {
                assert_true(g->known);
                if (!g->exact)
                    fail_msg("%s %s: not exact", file, key);
                assert_int_equal(g->count, strtoull(val, NULL, 10));
            }
        }
        checked++;
    }
    fclose(f);
    fm_ncu_profile_free(p);
    assert_true(checked >= 21);
    fm_ctx_free(ctx);
}

static void test_details_smsp_and_tensor(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_ncu_profile *p = NULL;
    FM_ASSERT_OK(ctx, fm_ncu_read_file(ctx, NCU_DIR "sgemm_a100_smsp.csv", &p));
    assert_false(p->raw_page);
    assert_int_equal(p->n_kernels, 3);
    const struct fm_ncu_kernel *k = &p->kernels[2];
    assert_string_equal(k->name, "void gemm_v1<float>(float *, float *, float *, int, int, int)");
    /* "34,359,738,368,000.00" FFMA -> 2 x, exactly; HFMA likewise */
    assert_int_equal(k->fig.flops[FM_NCU_FP32].count, 68719476736000ULL);
    assert_int_equal(k->fig.flops[FM_NCU_FP16].count, 4298322739200ULL);
    /* tensor instructions counted, tensor FLOPs unknown: never a guessed factor */
    assert_true(k->fig.tensor_inst.known);
    assert_int_equal(k->fig.tensor_inst.count, 67161292800ULL);
    assert_false(k->fig.tensor_flops.known);
    assert_non_null(strstr(p->notes, "does not guess"));
    assert_non_null(strstr(p->notes, "cycles_elapsed"));
    /* time = cycles / frequency */
    assert_rel(k->fig.time_s.value, 25610472227.46 / 764999999.31, 1e-12);
    fm_ncu_profile_free(p);
    fm_ctx_free(ctx);
}

static void test_preamble_and_separators(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_ncu_profile *p = NULL;
    FM_ASSERT_OK(ctx, fm_ncu_read_file(ctx, NCU_DIR "cutlass_v100_sm.csv", &p));
    assert_int_equal(p->n_kernels, 2);
    assert_int_equal(p->kernels[0].id, 0);
    assert_int_equal(p->kernels[1].id, 10);
    assert_int_equal(p->kernels[0].line, 12);   /* after 10 lines of ==PROF== and the program */
    assert_int_equal(p->kernels[1].fig.dram_bytes.count, 25174959968ULL);
    assert_int_equal(p->kernels[1].fig.flops[FM_NCU_FP32].count, 419430400ULL);
    assert_false(p->has_nvtx);
    assert_int_equal(p->n_groups, 0);
    fm_ncu_profile_free(p);
    fm_ctx_free(ctx);
}

static void test_raw_page(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_ncu_profile *p = NULL;
    FM_ASSERT_OK(ctx, fm_ncu_read_file(ctx, NCU_DIR "flash_b200_raw.csv", &p));
    assert_true(p->raw_page);
    assert_int_equal(p->n_kernels, 2);
    assert_rel(p->kernels[0].fig.time_s.value, 685280e-9, 1e-12);
    assert_rel(p->kernels[1].fig.time_s.value, 687072e-9, 1e-12);
    /* the capture has no FLOP or DRAM metric: missing, not 0 */
    for (int k = 0; k < FM_NCU_PREC_COUNT; k++)
        assert_false(p->totals.flops[k].known);
    assert_false(p->totals.dram_bytes.known);
    assert_non_null(strstr(p->notes, "DRAM bytes missing for 2 of 2"));
    fm_ncu_profile_free(p);

    /* a hand-sized raw page: units of the units row are applied */
    p = read_ok(ctx, "\"ID\",\"Kernel Name\",\"dram__bytes.sum\",\"gpu__time_duration.sum\","
                     "\"sm__sass_thread_inst_executed_op_dadd_pred_on.sum\","
                     "\"sm__sass_thread_inst_executed_op_dmul_pred_on.sum\","
                     "\"sm__sass_thread_inst_executed_op_dfma_pred_on.sum\"\n"
                     "\"\",\"\",\"Mbyte\",\"usecond\",\"inst\",\"inst\",\"Kinst\"\n"
                     "\"0\",\"k\",\"1.5\",\"2.5\",\"1,000\",\"2\",\"3\"\n");
    assert_rel(p->kernels[0].fig.dram_bytes.value, 1.5e6, 1e-12);
    assert_false(p->kernels[0].fig.dram_bytes.exact);   /* ncu rounded the scaled value */
    assert_rel(p->kernels[0].fig.time_s.value, 2.5e-6, 1e-12);
    assert_rel(p->kernels[0].fig.flops[FM_NCU_FP64].value, 1000 + 2 + 2 * 3000, 1e-12);
    fm_ncu_profile_free(p);
    fm_ctx_free(ctx);
}

#define DHDR "\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
#define DROW(id, metric, unit, value) "\"" id "\",\"k" id "\",\"s\",\"" metric "\",\"" unit "\",\"" value "\"\n"

static void test_units(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_ncu_profile *p = read_ok(
        ctx, "==PROF== Connected to process 1\n" DHDR
             DROW("0", "dram__bytes_read.sum", "Kbyte", "2") DROW("0", "dram__bytes_write.sum", "KB", "3")
             DROW("0", "gpu__time_duration.sum", "msecond", "1.5")
             DROW("1", "dram__bytes.sum", "Gbyte", "1.25") DROW("1", "gpu__time_duration.sum", "second", "2")
             DROW("2", "dram__bytes.sum", "byte", "512") DROW("2", "gpu__time_duration.sum", "nsecond", "1,024")
             DROW("3", "sm__cycles_elapsed.avg", "cycle", "1,000") DROW("3", "sm__cycles_elapsed.avg.per_second", "cycle/nsecond", "1.25")
             DROW("4", "smsp__cycles_elapsed.avg", "cycle", "3000") DROW("4", "smsp__cycles_elapsed.avg.per_second", "Ghz", "1.5"));
    assert_rel(p->kernels[0].fig.dram_bytes.value, 5000, 1e-12);
    assert_rel(p->kernels[0].fig.time_s.value, 1.5e-3, 1e-12);
    assert_rel(p->kernels[1].fig.dram_bytes.value, 1.25e9, 1e-12);
    assert_int_equal(p->kernels[2].fig.dram_bytes.count, 512);
    assert_true(p->kernels[2].fig.dram_bytes.exact);
    assert_rel(p->kernels[2].fig.time_s.value, 1024e-9, 1e-12);
    assert_rel(p->kernels[3].fig.time_s.value, 1000 / 1.25e9, 1e-12);
    assert_rel(p->kernels[4].fig.time_s.value, 3000 / 1.5e9, 1e-12);
    fm_ncu_profile_free(p);
    fm_ctx_free(ctx);
}

/* The classic mistake: per-second metrics summed as if they were counts. A rate is only
 * multiplied by its own kernel's time. */
static void test_rates_are_not_summed(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_ncu_profile *p = read_ok(
        ctx, DHDR
        DROW("0", "gpu__time_duration.sum", "usecond", "10")
        DROW("0", "dram__bytes.sum.per_second", "Gbyte/second", "100")
        DROW("0", "smsp__cycles_elapsed.avg", "cycle", "20,000")
        DROW("0", "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed", "inst/cycle", "2")
        DROW("0", "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed", "inst/cycle", "1")
        DROW("0", "derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2", "inst", "1,000")
        DROW("1", "gpu__time_duration.sum", "usecond", "30")
        DROW("1", "dram__bytes.sum.per_second", "Gbyte/second", "100")
        DROW("1", "smsp__cycles_elapsed.avg", "cycle", "60,000")
        DROW("1", "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed", "inst/cycle", "2")
        DROW("1", "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed", "inst/cycle", "1")
        DROW("1", "derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2", "inst", "3,000"));
    /* 100 GB/s x 10 us = 1 MB, x 30 us = 3 MB: 4 MB in all, not 200 "GB/s" */
    assert_rel(p->kernels[0].fig.dram_bytes.value, 1e6, 1e-12);
    assert_true(p->kernels[0].fig.dram_bytes.derived);
    assert_false(p->kernels[0].fig.dram_bytes.exact);
    assert_rel(p->totals.dram_bytes.value, 4e6, 1e-12);
    /* fadd 2/cycle x 20,000 cycles + fmul 1 x 20,000 + the x2 metric as it is */
    assert_rel(p->kernels[0].fig.flops[FM_NCU_FP32].value, 40000 + 20000 + 1000, 1e-12);
    assert_rel(p->totals.flops[FM_NCU_FP32].value, 61000 + 183000, 1e-12);
    assert_true(p->totals.flops[FM_NCU_FP32].derived);
    assert_non_null(strstr(p->notes, "rate x time"));
    assert_non_null(strstr(p->notes, "already doubled"));
    fm_ncu_profile_free(p);
    fm_ctx_free(ctx);
}

static void test_missing_is_not_zero(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_ncu_profile *p = read_ok(
        ctx, DHDR
        DROW("0", "sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst", "10")
        DROW("0", "sm__sass_thread_inst_executed_op_fmul_pred_on.sum", "inst", "20")
        DROW("0", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", "30")
        DROW("0", "dram__bytes.sum", "byte", "n/a")
        DROW("1", "sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst", "1")
        DROW("1", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", "1")
        DROW("1", "launch__registers_per_thread", "register/thread", "32"));
    assert_true(p->kernels[0].fig.flops[FM_NCU_FP32].known);
    assert_int_equal(p->kernels[0].fig.flops[FM_NCU_FP32].count, 10 + 20 + 2 * 30);
    assert_false(p->kernels[0].fig.dram_bytes.known);           /* "n/a" */
    assert_false(p->kernels[1].fig.flops[FM_NCU_FP32].known);   /* no fmul metric */
    assert_false(p->totals.flops[FM_NCU_FP32].known);
    assert_false(p->totals.time_s.known);
    assert_non_null(strstr(p->notes, "FP32 FLOPs missing for 1 of 2 kernels"));
    assert_non_null(strstr(p->notes, "fmul_pred_on"));
    /* and the JSON says null, the table "-" */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct fm_report_opts ro;
    fm_report_opts_init(&ro);
    ro.format = FM_FORMAT_JSON;
    FM_ASSERT_OK(ctx, fm_report_ncu(f, p, NULL, NULL, &ro));
    fclose(f);
    assert_non_null(strstr(text, "\"fp32\": null"));
    assert_non_null(strstr(text, "\"fp32\": 90"));
    assert_non_null(strstr(text, "\"dram_bytes\": null"));
    free(text);
    fm_ncu_profile_free(p);
    fm_ctx_free(ctx);
}

static void expect_error(struct fm_ctx *ctx, const char *text, const char *where, const char *what)
{
    read_fails(ctx, text);
    const char *msg = fm_ctx_error(ctx);
    if (!strstr(msg, where) || !strstr(msg, what))
        fail_msg("message '%s' lacks '%s' or '%s'", msg, where, what);
}

/* A profile may be far larger than a device file: 130 MB (the program's own output before the
 * table, as ncu prints it) is read, where a device or calibration file stops at 64 MB. */
static void test_large_file(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof(path), "/tmp/fm_test_ncu_large_%d.csv", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    char line[65];
    memset(line, 'x', sizeof(line) - 2);
    line[sizeof(line) - 2] = '\n';
    line[sizeof(line) - 1] = '\0';
    for (long i = 0; i < 130L * (1 << 20) / 64; i++)
        assert_true(fputs(line, f) >= 0);
    fputs(DHDR DROW("0", "dram__bytes.sum", "byte", "12"), f);
    assert_int_equal(fclose(f), 0);
    struct fm_ctx *ctx = test_ctx();
    struct fm_ncu_profile *p = NULL;
    FM_ASSERT_OK(ctx, fm_ncu_read_file(ctx, path, &p));
    assert_int_equal(p->n_kernels, 1);
    assert_true(p->kernels[0].fig.dram_bytes.known && p->kernels[0].fig.dram_bytes.count == 12);
    fm_ncu_profile_free(p);
    /* the same size as a device file is refused, saying why */
    struct fm_devices *devs = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    assert_int_equal(fm_devices_add_file(devs, path), FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, "larger than 64 MB");
    fm_devices_free(devs);
    fm_ctx_free(ctx);
    unlink(path);
}

static void test_errors_name_line_and_column(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    expect_error(ctx, "", "mem.csv:1:1", "empty");
    expect_error(ctx, "Time (%),Total Time (ns),Instances,Avg (ns),Name\n50.0,10,1,10.0,k\n",
                 "mem.csv:1:1", "Nsight Systems");
    expect_error(ctx, "name,flops\nconv1,12\n", "mem.csv:3:1", "no Nsight Compute table");
    /* a details header whose ID column is named otherwise (found by fuzzing: the reader then
     * indexed a column that does not exist) */
    expect_error(ctx, "\"ID\"\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\","
                      "\"Metric Unit\",\"Metric Value\"\n\"0\",\"k\",\"s\",\"dram__bytes.sum\","
                      "\"byte\",\"12\"\n",
                 "mem.csv:1:1", "no \"ID\" column");
    /* a quote never closed: the file was cut */
    expect_error(ctx, DHDR "\"0\",\"k0\",\"s\",\"dram__bytes.sum\",\"byte\",\"12",
                 "mem.csv:2:39", "never closed");
    /* a short row */
    expect_error(ctx, DHDR "\"0\",\"k0\",\"s\",\"dram__bytes.sum\"\n", "mem.csv:2:31", "cut short");
    /* a unit flopmeter does not know, on a metric it reads */
    expect_error(ctx, DHDR DROW("0", "dram__bytes.sum", "furlong", "5"), "mem.csv:2:32",
                 "furlong");
    /* a decimal comma (a non-English locale) */
    expect_error(ctx, DHDR DROW("0", "dram__bytes.sum", "byte", "9,00"), "mem.csv:2:39",
                 "decimal comma");
    expect_error(ctx, DHDR, "mem.csv:1:1", "no kernel rows");
    /* a raw page's units row of another width */
    expect_error(ctx, "\"ID\",\"Kernel Name\",\"dram__bytes.sum\"\n\"\",\"\"\n\"0\",\"k\",\"5\"\n",
                 "mem.csv:2:", "cut short");
    /* the real capture of a run without counter permissions */
    struct fm_ncu_profile *p = NULL;
    assert_int_equal(fm_ncu_read_file(ctx, NCU_DIR "no_kernels_errperm.csv", &p), FM_ERR_PARSE);
    assert_non_null(strstr(fm_ctx_error(ctx), "profiled no kernels"));
    assert_non_null(strstr(fm_ctx_error(ctx), "ERR_NVGPUCTRPERM"));
    /* an unknown unit on a metric flopmeter does not read is no error */
    p = read_ok(ctx, DHDR DROW("0", "launch__grid_size", "furlong", "5"));
    assert_int_equal(p->n_kernels, 1);
    fm_ncu_profile_free(p);
    fm_ctx_free(ctx);
}

#define NVTX_HDR "\"ID\",\"Process ID\",\"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
#define NVTX(r) "\"1  \"\"<default domain>:step:none:none:none:none:none:none\"\"  \"\"<default domain>:" r ":none:none:none:none:none:none\"\" \""

static char *nvtx_csv(const char *const *ranges, const double *fadd, size_t n)
{
    size_t cap = 4096 * (n + 1);
    char *s = malloc(cap), *p = s;
    p += sprintf(p, NVTX_HDR);
    for (size_t i = 0; i < n; i++) {
        static const char *const m[] = {"fadd", "fmul", "ffma"};
        for (int j = 0; j < 3; j++)
            p += sprintf(p, "\"%zu\",\"7\",\"1  \"\"<default domain>:step:none:none:none:none:none:"
                         "none\"\"  \"\"<default domain>:%s:none:none:none:none:none:none\"\" \","
                         "\"kernel_%zu\",\"sm__sass_thread_inst_executed_op_%s_pred_on.sum\","
                         "\"inst\",\"%.0f\"\n", i, ranges[i], i, m[j], j == 0 ? fadd[i] : 0.0);
        p += sprintf(p, "\"%zu\",\"7\",\"1\",\"kernel_%zu\",\"gpu__time_duration.sum\",\"nsecond\","
                     "\"1000\"\n", i, i);
        for (const char *d = "dh"; *d; d++)
            for (int j = 0; j < 3; j++)
                p += sprintf(p, "\"%zu\",\"7\",\"1\",\"kernel_%zu\",\"sm__sass_thread_inst_executed_"
                             "op_%c%s_pred_on.sum\",\"inst\",\"0\"\n", i, i, *d,
                             (const char *[]){"add", "mul", "fma"}[j]);
        p += sprintf(p, "\"%zu\",\"7\",\"1\",\"kernel_%zu\",\"dram__bytes.sum\",\"byte\",\"100\"\n",
                     i, i);
    }
    return s;
}

static void test_nvtx_groups(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    const char *ranges[] = {"conv1 fwd", "conv1 fwd", "fc fwd"};
    const double fadd[] = {1, 2, 4};
    char *csv = nvtx_csv(ranges, fadd, 3);
    struct fm_ncu_profile *p = read_ok(ctx, csv);
    free(csv);
    assert_true(p->has_nvtx);
    assert_string_equal(p->kernels[0].nvtx, "conv1 fwd");
    assert_string_equal(p->kernels[0].nvtx_stack, "step > conv1 fwd");
    assert_int_equal(p->n_groups, 2);
    assert_string_equal(p->groups[0].nvtx, "conv1 fwd");
    assert_int_equal(p->groups[0].kernels, 2);
    assert_int_equal(p->groups[0].fig.flops[FM_NCU_FP32].count, 3);
    assert_int_equal(p->groups[1].fig.flops[FM_NCU_FP32].count, 4);
    fm_ncu_profile_free(p);
    fm_ctx_free(ctx);
}

/* Matching: kernels under flopmeter's own ranges go to their layer and phase, the rest are
 * outside any layer; the causes follow the ratios. The profile is built here (no capture of
 * flopmeter's CUDA step exists), with FLOPs set from the counts themselves. */
static void test_match_to_layers(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    struct fm_counts *c = test_count_zoo(ctx, "resnet18", 2, FM_MODE_TRAIN, &g);
    fm_nid conv = FM_NONE, fc = FM_NONE;
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        if (strcmp(n->name, "conv1") == 0)
            conv = (fm_nid)i;
        if (strcmp(n->name, "fc") == 0)
            fc = (fm_nid)i;
    }
    assert_true(conv != FM_NONE && fc != FM_NONE);
    double conv_fl = (double)fm_work_flops(&c->nodes[conv].phase[FM_PHASE_FWD]);
    double fc_fl = (double)fm_work_flops(&c->nodes[fc].phase[FM_PHASE_BWD_WEIGHT]);
    /* conv1 forward at 40% of its count (Winograd-like), fc weight gradient at its count,
     * a kernel under a foreign range */
    const char *ranges[] = {"conv1 fwd", "fc bwd_weight", "optimizer SGD", "DataLoader"};
    const double fadd[] = {0.4 * conv_fl, fc_fl, 10, 5};
    char *csv = nvtx_csv(ranges, fadd, 4);
    struct fm_ncu_profile *p = read_ok(ctx, csv);
    free(csv);
    struct fm_ncu_match *m = NULL;
    FM_ASSERT_OK(ctx, fm_ncu_match(ctx, p, g, c, &m));
    assert_true(m->by_nvtx);
    assert_int_equal(m->n_rows, 4);
    assert_string_equal(m->rows[0].layer, "conv1");
    assert_int_equal(m->rows[0].phase, FM_PHASE_FWD);
    assert_int_equal(m->rows[0].counted_flops, (uint64_t)conv_fl);
    assert_rel(m->rows[0].flops_ratio, 0.4, 1e-6);
    assert_non_null(strstr(m->rows[0].cause, "Winograd"));
    assert_string_equal(m->rows[1].layer, "fc");
    assert_int_equal(m->rows[1].phase, FM_PHASE_BWD_WEIGHT);
    assert_non_null(strstr(m->rows[1].cause, "agree"));
    assert_string_equal(m->rows[2].layer, "optimizer");
    assert_int_equal(m->rows[2].counted_flops, fm_work_flops(&c->total[FM_PHASE_OPTIMIZER]));
    assert_false(m->rows[3].counted);
    assert_non_null(strstr(m->rows[3].cause, "outside any layer"));
    assert_non_null(strstr(m->method, "3 of 4 kernels"));
    fm_ncu_match_free(m);
    fm_ncu_profile_free(p);

    /* no flopmeter ranges: nothing is matched by guesswork */
    FM_ASSERT_OK(ctx, fm_ncu_read_file(ctx, NCU_DIR "cutlass_v100_sm.csv", &p));
    FM_ASSERT_OK(ctx, fm_ncu_match(ctx, p, g, c, &m));
    assert_false(m->by_nvtx);
    assert_int_equal(m->n_rows, 0);
    assert_non_null(strstr(m->method, "does not guess"));
    assert_true(isnan(m->step_flops_ratio));   /* tensor-pipe FLOPs unknown */
    fm_ncu_match_free(m);
    fm_ncu_profile_free(p);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* A real capture of flopmeter's own CUDA training step on an H100 (fp32, FMA math; ncu --nvtx
 * with the NERSC metrics): every kernel of the step falls under a layer's or the optimizer's
 * range, and where physics fixes the answer the counters and the count agree: the 9216 x 4096
 * fully connected layer's forward executes its 2 x M x N x K FP32 FLOPs (plus the bias) and
 * reads its 151 MB of weights from DRAM once. */
static void test_h100_flopmeter_step(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_ncu_profile *p = NULL;
    FM_ASSERT_OK(ctx, fm_ncu_read_file(ctx, NCU_DIR "flopmeter_alexnet_h100_nvtx.csv", &p));
    struct fm_zoo_opts zo;
    fm_zoo_opts_init(&zo);
    zo.batch = 8;
    zo.classes = 10;
    zo.input = (struct fm_shape){3, {3, 64, 64}};
    zo.with_loss = true;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_zoo_build(ctx, "alexnet", &zo, &g));
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = FM_MODE_TRAIN;
    struct fm_counts *c = NULL;
    FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &c));
    struct fm_ncu_match *m = NULL;
    FM_ASSERT_OK(ctx, fm_ncu_match(ctx, p, g, c, &m));
    assert_true(m->by_nvtx);
    size_t outside = 0, kernels = 0;
    const struct fm_ncu_match_row *fc = NULL;
    for (size_t i = 0; i < m->n_rows; i++) {
        const struct fm_ncu_match_row *r = &m->rows[i];
        kernels += r->kernels;
        if (!r->counted) {
            outside += r->kernels;
            continue;
        }
        if (strcmp(r->layer, "optimizer") == 0)
            assert_int_equal(r->counted_flops,
                             fm_work_flops(&c->total[FM_PHASE_OPTIMIZER]));
        else
            assert_true(r->node != FM_NONE && (size_t)r->node < fm_graph_node_count(g));
        if (strcmp(r->layer, "classifier.1") == 0 && r->phase == FM_PHASE_FWD)
            fc = r;
    }
    assert_int_equal(kernels, p->n_kernels);
    assert_int_equal(outside, 1);   /* the capture kept one setup kernel (filling the inputs) */
    assert_non_null(fc);
    const struct fm_prof_figure *fp32 = &fc->measured.flops[FM_NCU_FP32];
    assert_true(fp32->known && fp32->exact);
    assert_rel((double)fp32->count, (double)fc->counted_flops, 0.01);
    assert_true(fc->bytes_ratio > 0.98 && fc->bytes_ratio < 1.05);
    fm_ncu_match_free(m);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ncu_profile_free(p);
    fm_ctx_free(ctx);
}

/* ---- Nsight Systems: the column sets of NVIDIA's report scripts ---- */

static struct fm_nsys_summary *nsys_ok(struct fm_ctx *ctx, const char *text)
{
    struct fm_nsys_summary *s = NULL;
    FM_ASSERT_OK(ctx, fm_nsys_read_buffer(ctx, text, strlen(text), "nsys.csv", &s));
    return s;
}

static void test_nsys(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_nsys_summary *s = nsys_ok(ctx,
        "Generating SQLite file /tmp/r.sqlite from /tmp/r.nsys-rep\n"
        "Processing [/tmp/r.sqlite] with [/opt/nsys/reports/cuda_gpu_kern_sum.py]... \n"
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        "60.0,600000,10,60000.0,60000.0,50000,70000,100.5,\"void fmha<128, 64>(Params)\"\n"
        "40.0,400000,8,50000.0,50000.0,40000,60000,0.0,elementwise_add\n");
    assert_int_equal(s->kind, FM_NSYS_KERNELS);
    assert_string_equal(s->report, "cuda_gpu_kern_sum");
    assert_int_equal(s->n_rows, 2);
    assert_string_equal(s->rows[0].name, "void fmha<128, 64>(Params)");
    assert_rel(s->rows[0].total_s, 600e-6, 1e-12);
    assert_int_equal(s->rows[0].instances, 10);
    assert_rel(s->rows[0].stddev_s, 100.5e-9, 1e-12);
    assert_int_equal(s->instances, 18);
    assert_rel(s->total_s, 1e-3, 1e-12);
    fm_nsys_summary_free(s);

    s = nsys_ok(ctx, "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),"
                     "StdDev (ns),Style,Range\n"
                     "80.0,8000,8,1000.0,1000.0,900,1100,0.0,PushPop,forward\n"
                     "20.0,2000,2,1000.0,1000.0,900,1100,0.0,StartEnd,data\n");
    assert_int_equal(s->kind, FM_NSYS_NVTX);
    assert_string_equal(s->report, "nvtx_sum");
    assert_string_equal(s->rows[1].style, "StartEnd");
    fm_nsys_summary_free(s);

    /* the older reports: gpukernsum's "Time(%)", "Average" ..., times in ns; "Calls" */
    s = nsys_ok(ctx, "Time(%),Total Time (ns),Calls,Average,Minimum,Maximum,Name\n"
                     "100.0,\"1,500\",3,500.0,400,600,k\n");
    assert_string_equal(s->report, "gpukernsum");
    assert_int_equal(s->rows[0].instances, 3);
    assert_rel(s->rows[0].avg_s, 500e-9, 1e-12);
    assert_rel(s->rows[0].total_s, 1500e-9, 1e-12);
    assert_true(isnan(s->rows[0].med_s));
    fm_nsys_summary_free(s);
    s = nsys_ok(ctx, "Time(%),Total Time (ns),Instances,Average,Minimum,Maximum,Range\n"
                     "100.0,2000,2,1000.0,900,1100,step\n");
    assert_string_equal(s->report, "nvtxsum");
    assert_int_equal(s->kind, FM_NSYS_NVTX);
    fm_nsys_summary_free(s);
    /* --timeunit ms */
    s = nsys_ok(ctx, "Time (%),Total Time (ms),Instances,Avg (ms),Name\n100.0,2.5,5,0.5,k\n");
    assert_rel(s->rows[0].total_s, 2.5e-3, 1e-12);
    fm_nsys_summary_free(s);

    struct { const char *text, *where, *what; } bad[] = {
        {"", "nsys.csv:1:1", "empty"},
        {"Time (%),Total Time (ns),Num Calls,Avg (ns),Name\n99.0,5,3,1.0,cudaMalloc\n",
         "nsys.csv:1:1", "API-call summary"},
        {"Time (%),Total Time (ns),Count,Avg (ns),Operation\n70.0,7000,7,1000.0,[CUDA memcpy HtoD]\n",
         "nsys.csv:1:1", "memory-operation"},
        {"Time (%),Total Time (ns),Instances,Name\n50.0,10,1\n", "nsys.csv:2:10", "cut short"},
        {"Time (%),Total Time (ns),Instances,Name\n50.0,ten,1,k\n", "nsys.csv:2:6", "not a non-negative"},
        {"Time (%),Total Time (ns),Instances,Name\n", "nsys.csv:1:1", "no rows"},
        {"\"ID\",\"Kernel Name\"\n", "nsys.csv:1:1", "Nsight Compute"},
        {"hello\n", "nsys.csv:2:1", "no `nsys stats` summary"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        s = NULL;
        assert_int_equal(fm_nsys_read_buffer(ctx, bad[i].text, strlen(bad[i].text), "nsys.csv", &s),
                         FM_ERR_PARSE);
        assert_null(s);
        const char *msg = fm_ctx_error(ctx);
        if (!strstr(msg, bad[i].where) || !strstr(msg, bad[i].what))
            fail_msg("case %zu: '%s' lacks '%s' or '%s'", i, msg, bad[i].where, bad[i].what);
    }
    fm_ctx_free(ctx);
}

/* ---- Nsight Systems, GPU time per NVTX range: nvtx_gpu_proj_sum and nvtx_kern_sum ----
 * The inputs in profiles/nsys/ are CONSTRUCTED with NVIDIA's documented column sets
 * (make_nsys_inputs.py; no capture could be made); their totals come from expect_nsys.py, a
 * reading with Python's csv module alone. */

static void test_nsys_gpu_inputs_match_independent_totals(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    FILE *f = fopen(NSYS_DIR "expected.txt", "r");
    assert_non_null(f);
    char line[512], cur[128] = "";
    struct fm_nsys_summary *s = NULL;
    int checked = 0;
    while (fgets(line, sizeof(line), f)) {
        if (line[0] == '#')
            continue;
        char file[128], key[256], val[64];
        assert_int_equal(sscanf(line, "%127[^,],%255[^,],%63s", file, key, val), 3);
        if (strcmp(file, cur) != 0) {
            fm_nsys_summary_free(s);
            char path[512];
            snprintf(path, sizeof(path), NSYS_DIR "%s", file);
            FM_ASSERT_OK(ctx, fm_nsys_read_file(ctx, path, &s));
            snprintf(cur, sizeof(cur), "%s", file);
        }
        uint64_t n = strtoull(val, NULL, 10);
        double x = strtod(val, NULL);
        if (strcmp(key, "rows") == 0) {
            assert_int_equal(s->n_rows, n);
        } else if (strcmp(key, "total_s") == 0) {
            assert_rel(s->total_s, x, 1e-9);
        } else if (strcmp(key, "instances") == 0) {
            assert_int_equal(s->instances, n);
        } else if (strcmp(key, "gpu_ops") == 0) {
            assert_true(s->gpu_ops_known);
            assert_int_equal(s->gpu_ops, n);
        } else if (strcmp(key, "ranges") == 0) {
            assert_int_equal(s->n_ranges, n);
        } else if (strcmp(key, "top_level_s") == 0) {
            assert_rel(s->top_level_s, x, 1e-9);
        } else if (strncmp(key, "range_s:", 8) == 0) {
            const struct fm_nsys_range *g = NULL;
            for (size_t i = 0; i < s->n_ranges; i++)
                if (strcmp(s->ranges[i].name, key + 8) == 0)
                    g = &s->ranges[i];
            if (!g)
                fail_msg("%s: no range '%s'", file, key + 8);
            assert_rel(g->gpu_s, x, 1e-9);
        } else {
            fail_msg("unknown key %s", key);
        }
        checked++;
    }
    fclose(f);
    fm_nsys_summary_free(s);
    assert_true(checked >= 20);
    fm_ctx_free(ctx);
}

static void test_nsys_gpu_forms(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_nsys_summary *s = NULL;
    FM_ASSERT_OK(ctx, fm_nsys_read_file(ctx, NSYS_DIR "nvtx_gpu_proj_sum.csv", &s));
    assert_int_equal(s->kind, FM_NSYS_NVTX_GPU);
    assert_string_equal(fm_nsys_kind_name(s->kind), "nvtx_gpu");
    assert_string_equal(s->report, "nvtx_gpu_proj_sum");   /* from nsys's "Processing" line */
    /* line 5: ":conv1 bwd_weight",PushPop,2393773,283603,3,797924.3,792120.0,790233,811420,
     * 11725.6,9,3.0,1.0,0.0 */
    const struct fm_nsys_row *r = &s->rows[1];
    assert_string_equal(r->name, ":conv1 bwd_weight");
    assert_string_equal(r->style, "PushPop");
    assert_int_equal(r->line, 5);
    assert_rel(r->total_s, 2393773e-9, 1e-12);
    assert_rel(r->range_time_s, 283603e-9, 1e-12);
    assert_int_equal(r->instances, 3);
    assert_rel(r->avg_s, 797924.3e-9, 1e-12);
    assert_rel(r->med_s, 792120e-9, 1e-12);
    assert_rel(r->min_s, 790233e-9, 1e-12);
    assert_rel(r->max_s, 811420e-9, 1e-12);
    assert_rel(r->stddev_s, 11725.6e-9, 1e-12);
    assert_true(r->gpu_ops_known);
    assert_int_equal(r->gpu_ops, 9);
    assert_rel(r->avg_gpu_ops, 3.0, 1e-12);
    assert_rel(r->avg_level, 1.0, 1e-12);
    assert_rel(r->avg_children, 0.0, 1e-12);
    assert_true(isnan(r->time_pct));   /* the projection has no percentage column */
    assert_string_equal(r->kernel, "");
    /* its range: the same figures, CPU time beside */
    assert_string_equal(s->ranges[1].name, ":conv1 bwd_weight");
    assert_rel(s->ranges[1].range_time_s, 283603e-9, 1e-12);
    assert_int_equal(s->ranges[1].instances, 3);
    fm_nsys_summary_free(s);

    FM_ASSERT_OK(ctx, fm_nsys_read_file(ctx, NSYS_DIR "nvtx_kern_sum.csv", &s));
    assert_int_equal(s->kind, FM_NSYS_NVTX_KERNELS);
    assert_string_equal(s->report, "nvtx_kern_sum");
    /* line 3: a kernel launched outside any range: empty "NVTX Range", "NVTX Inst" 0 */
    assert_string_equal(s->rows[0].name, "");
    assert_int_equal(s->rows[0].range_instances, 0);
    assert_int_equal(s->rows[0].pid, 4711);
    assert_int_equal(s->rows[0].tid, 4711);
    assert_non_null(strstr(s->rows[0].kernel, "FillFunctor<float>, at::detail::Array<char *, 2>"));
    /* ":conv1 fwd": two kernels, 3 + 6 launches, 1133653 + 53730 ns; NVTX Inst 3 on both */
    const struct fm_nsys_range *g = &s->ranges[1];
    assert_string_equal(g->name, ":conv1 fwd");
    assert_int_equal(g->rows, 2);
    assert_int_equal(g->gpu_ops, 3 + 6);
    assert_rel(g->gpu_s, (1133653 + 53730) * 1e-9, 1e-12);
    assert_int_equal(g->instances, 3);
    assert_true(isnan(g->range_time_s));
    assert_true(isnan(s->top_level_s));
    fm_nsys_summary_free(s);

    /* no preamble, quoted header, --timeunit us, the optional columns left out */
    const char *t = "\"Range\",\"Style\",\"Total Proj Time (us)\",\"Range Instances\"\n"
                    "\":step\",\"PushPop\",\"1,500.5\",\"3\"\n";
    FM_ASSERT_OK(ctx, fm_nsys_read_buffer(ctx, t, strlen(t), "p.csv", &s));
    assert_int_equal(s->kind, FM_NSYS_NVTX_GPU);
    assert_rel(s->rows[0].total_s, 1500.5e-6, 1e-12);
    assert_true(isnan(s->rows[0].range_time_s));
    assert_false(s->rows[0].gpu_ops_known);
    assert_false(s->gpu_ops_known);
    assert_true(isnan(s->top_level_s));   /* no "Avg Range Lvl": the outermost are unknown */
    fm_nsys_summary_free(s);
    /* the older nvtxkernsum: "Average", "Minimum", "Maximum" (ns) */
    t = "NVTX Range,Style,PID,TID,NVTX Inst,Kern Inst,Total Time (ns),Average,Minimum,Maximum,"
        "Kernel Name\n:fwd,PushPop,7,8,2,4,400,100.0,90,110,k\n";
    FM_ASSERT_OK(ctx, fm_nsys_read_buffer(ctx, t, strlen(t), "k.csv", &s));
    assert_string_equal(s->report, "nvtxkernsum");
    assert_rel(s->rows[0].avg_s, 100e-9, 1e-12);
    assert_rel(s->rows[0].max_s, 110e-9, 1e-12);
    assert_int_equal(s->rows[0].instances, 4);
    fm_nsys_summary_free(s);
    fm_ctx_free(ctx);
}

static void test_nsys_gpu_errors(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
#define PHDR "Range,Style,Total Proj Time (ns),Total Range Time (ns),Range Instances," \
             "Proj Avg (ns),Proj Med (ns),Proj Min (ns),Proj Max (ns),Proj StdDev (ns)," \
             "Total GPU Ops,Avg GPU Ops,Avg Range Lvl,Avg Num Child\n"
#define KHDR "NVTX Range,Style,PID,TID,NVTX Inst,Kern Inst,Total Time (ns),Avg (ns),Med (ns)," \
             "Min (ns),Max (ns),StdDev (ns),Kernel Name\n"
    struct { const char *text, *where, *what; } bad[] = {
        /* a truncated file: the last row stops after "Proj Avg" (column 24, just past "10.0") */
        {PHDR ":a,PushPop,30,40,3,10.0,10.0,9,11,1.0,3,1.0,0.0,0.0\n:b,PushPop,30,40,3,10.0",
         "g.csv:3:24", "cut short"},
        /* a truncated file inside a quoted kernel name */
        {KHDR ":a,PushPop,1,1,1,2,20,10.0,10.0,9,11,1.0,\"void k<int,",
         "g.csv:2:", "quote"},
        /* a column missing: the column named is the end of the header (68 and 42 characters) */
        {"Range,Style,Total Proj Time (ns),Total Range Time (ns),Proj Avg (ns)\n:a,PushPop,1,2,1.0\n",
         "g.csv:1:69", "\"Range Instances\""},
        {"NVTX Range,Style,Kern Inst,Total Time (ns)\n:a,PushPop,1,5\n", "g.csv:1:43",
         "\"Kernel Name\""},
        /* another report: the projection trace, the API summary */
        {"Processing [r.sqlite] with [/r/nvtx_gpu_proj_trace.py]... \n"
         "Name,Projected Start (ns),Projected Duration (ns),Orig Start (ns),Orig Duration (ns),"
         "Style,PID,TID,NumGPUOps,Lvl,NumChild,RangeId,ParentId,RangeStack\n",
         "g.csv:2:1", "nvtx_gpu_proj_trace"},
        {"Time (%),Total Time (ns),Num Calls,Avg (ns),Name\n99.0,5,3,1.0,cudaMalloc\n",
         "g.csv:1:1", "API-call summary"},
        /* a figure that is not one (the fields start at columns 39, 12 and 12) */
        {PHDR ":a,PushPop,30,40,3,10.0,10.0,9,11,1.0,2.5,1.0,0.0,0.0\n", "g.csv:2:39",
         "count of GPU operations"},
        {PHDR ":a,PushPop,,40,3,10.0,10.0,9,11,1.0,3,1.0,0.0,0.0\n", "g.csv:2:12",
         "non-negative number"},
        {KHDR ":a,PushPop,x,1,1,2,20,10.0,10.0,9,11,1.0,k\n", "g.csv:2:12", "process or thread"},
        {PHDR, "g.csv:1:1", "no rows"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct fm_nsys_summary *s = NULL;
        assert_int_equal(fm_nsys_read_buffer(ctx, bad[i].text, strlen(bad[i].text), "g.csv", &s),
                         FM_ERR_PARSE);
        assert_null(s);
        const char *msg = fm_ctx_error(ctx);
        if (!strstr(msg, bad[i].where) || !strstr(msg, bad[i].what))
            fail_msg("case %zu: '%s' lacks '%s' or '%s'", i, msg, bad[i].where, bad[i].what);
    }
#undef PHDR
#undef KHDR
    fm_ctx_free(ctx);
}

/* ---- every dialect Nsight Compute has written since 2019 (dialects/, make_ncu_dialects.py;
 * docs/profiles.md): the kernels, their times and FLOPs, exactly as the files hold them ---- */

#define DIA_DIR NCU_DIR "dialects/"
#define UNKNOWN UINT64_MAX

struct dia_kernel {
    uint64_t id;
    const char *process, *name_start, *nvtx;
    uint64_t fp32, dram, tensor_inst;   /* UNKNOWN: the figure must be unknown */
    double time_s;
};

static void check_dialect(struct fm_ctx *ctx, const char *file, bool raw, size_t processes,
                          const struct dia_kernel *want, size_t n, const char *const *notes)
{
    char path[256];
    snprintf(path, sizeof(path), DIA_DIR "%s", file);
    struct fm_ncu_profile *p = NULL;
    FM_ASSERT_OK(ctx, fm_ncu_read_file(ctx, path, &p));
    assert_int_equal(p->raw_page, raw);
    assert_int_equal(p->n_kernels, n);
    assert_int_equal(p->n_processes, processes);
    uint64_t fp32 = 0, dram = 0;
    bool dram_known = true;
    double t = 0;
    for (size_t i = 0; i < n; i++) {
        const struct fm_ncu_kernel *k = &p->kernels[i];
        const struct dia_kernel *w = &want[i];
        assert_int_equal(k->id, w->id);
        assert_string_equal(k->process, w->process);
        if (strncmp(k->name, w->name_start, strlen(w->name_start)) != 0)
            fail_msg("%s kernel %zu: name '%s', want '%s...'", file, i, k->name, w->name_start);
        assert_string_equal(k->nvtx, w->nvtx);
        assert_false(k->fig.flops[FM_NCU_FP64].known);
        assert_true(k->fig.flops[FM_NCU_FP32].known && k->fig.flops[FM_NCU_FP32].exact);
        assert_int_equal(k->fig.flops[FM_NCU_FP32].count, w->fp32);
        if (w->dram == UNKNOWN) {
            assert_false(k->fig.dram_bytes.known);
            dram_known = false;
        } else {
            assert_true(k->fig.dram_bytes.known && k->fig.dram_bytes.exact);
            assert_int_equal(k->fig.dram_bytes.count, w->dram);
            dram += w->dram;
        }
        if (w->tensor_inst == UNKNOWN) {
            assert_false(k->fig.tensor_inst.known);
        } else {
            assert_true(k->fig.tensor_inst.known);
            assert_int_equal(k->fig.tensor_inst.count, w->tensor_inst);
        }
        assert_true(k->fig.time_s.known);
        assert_rel(k->fig.time_s.value, w->time_s, 1e-12);
        fp32 += w->fp32;
        t += w->time_s;
    }
    assert_int_equal(p->totals.flops[FM_NCU_FP32].count, fp32);
    assert_int_equal(p->totals.dram_bytes.known, dram_known);
    if (dram_known)
        assert_int_equal(p->totals.dram_bytes.count, dram);
    assert_rel(p->totals.time_s.value, t, 1e-12);
    for (; notes && *notes; notes++)
        if (!strstr(p->notes, *notes))
            fail_msg("%s: the notes '%s' lack '%s'", file, p->notes, *notes);
    fm_ncu_profile_free(p);
}

static void test_dialects(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    /* 2019.1-2020.1: "Kernel Time" (a timestamp, never read as a time), "Duration" in nsecond
     * and usecond, 1,048,576 + 0 + 2 x 2,097,152 */
    const struct dia_kernel k2019[] = {
        {0, "21524", "cuda_compute_step_factor", "", 5242880, 12582912, UNKNOWN, 3520e-9},
        {1, "21524", "cuda_compute_flux", "", 524288 + 262144 + 2 * 1572864, 4194304, UNKNOWN,
         1.47e-6}};
    check_dialect(ctx, "v2019_kernel_time.csv", false, 1, k2019, 2, NULL);
    /* 2020.2-2021.1: the header's 15 columns, metric rows of 13 fields, two rule rows */
    const struct dia_kernel k2021[] = {
        {0, "3817", "ampere_sgemm_128x64_tn", "", 2 * 1207959552ull, 25165824, UNKNOWN, 35.84e-6},
        {1, "3817", "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDA", "",
         3145728 + 9437184 + 2 * 12582912, 25231360, UNKNOWN, 6.14e-6}};
    const char *const n2021[] = {"Skipped 2 rule rows", NULL};
    check_dialect(ctx, "v2021_rules_short_rows.csv", false, 1, k2021, 2, n2021);
    /* 2021.2-2022.x: launch geometry, rule columns, NVTX ranges, CRLF */
    const struct dia_kernel k2022[] = {
        {0, "5120", "ampere_fp16_s16816gemm", "attn", 0, 1048576, UNKNOWN, 8192e-9},
        {1, "5120", "void at::native::elementwise_kernel<128, 2>", "mlp", 65536 + 65536, 262144,
         UNKNOWN, 2048e-9}};
    check_dialect(ctx, "v2022_nvtx_rules.csv", false, 1, k2022, 2, NULL);
    /* 2023.1+: estimated speedups, two processes, an n/a DRAM value (unknown, not 0) */
    const struct dia_kernel k2023[] = {
        {0, "4711", "void flash_fwd_kernel<", "", 16777216 + 33554432 + 2 * 8388608, 201326592,
         4194304, 412.74e-6},
        {1, "4712", "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<", "",
         50331648 + 67108864 + 2 * 25165824, UNKNOWN, 12582912, 1093.41e-6}};
    const char *const n2023[] = {"Kernels of 2 processes", "Skipped 2 rule rows",
                                 "1 value of metrics flopmeter reads is n/a",
                                 "dram__bytes.sum at line 11", NULL};
    check_dialect(ctx, "v2023_speedup_processes.csv", false, 2, k2023, 2, n2023);
    /* the raw page, units printed with --print-units base; and without its units row */
    const struct dia_kernel kbase[] = {
        {0, "9001", "ampere_sgemm_64x32_sliced1x4_tn", "", 5000000, 8388608, UNKNOWN, 15360e-9},
        {1, "9001", "void at::native::(anonymous namespace)::fused_dropout", "", 3, 4096, UNKNOWN,
         2048e-9}};
    check_dialect(ctx, "raw_base_units.csv", true, 1, kbase, 2, NULL);
    const struct dia_kernel knou[] = {
        {0, "812", "saxpy", "", 10 + 20 + 2 * 30, 65536, UNKNOWN, 4096e-9},
        {1, "812", "zero", "", 0, 0, UNKNOWN, 1024e-9}};
    const char *const nnou[] = {"no row of units", "base units", NULL};
    check_dialect(ctx, "raw_no_units.csv", true, 1, knou, 2, nnou);
    /* a future version's columns: read around, named */
    const struct dia_kernel kfut[] = {{0, "66", "scale_kernel", "", 4, 1024, UNKNOWN, 512e-9}};
    const char *const nfut[] = {"Ignored 2 columns", "\"Function Signature\"",
                                "\"Green Context\"", NULL};
    check_dialect(ctx, "future_columns.csv", false, 1, kfut, 1, nfut);
    /* a real 2025 capture (B200): metric rows of 16 fields against a header of 20, rule rows as
     * wide as the header; its only figure is the sections' Duration, 406240 ns */
    struct fm_ncu_profile *p = NULL;
    FM_ASSERT_OK(ctx, fm_ncu_read_file(ctx, NCU_DIR "cublaslt_b200_rules.csv", &p));
    assert_int_equal(p->n_kernels, 1);
    assert_int_equal(p->n_processes, 1);
    assert_string_equal(p->kernels[0].process, "371693");
    assert_string_equal(p->kernels[0].name, "cutlass3x_sm100_tensorop_s64x256x32gemm_f8_f8_f32_f16_"
                                            "f16_64x256x128_1x1x1_0_tnn_align4_1sm_bias_f16_relu_"
                                            "aux_scalemax");
    assert_int_equal(p->kernels[0].line, 5);
    assert_rel(p->kernels[0].fig.time_s.value, 406240e-9, 1e-12);
    assert_false(p->kernels[0].fig.flops[FM_NCU_FP32].known);
    assert_false(p->kernels[0].fig.dram_bytes.known);
    assert_non_null(strstr(p->notes, "Skipped 8 rule rows"));
    assert_null(strstr(p->notes, "Ignored"));
    fm_ncu_profile_free(p);
    /* a real 2020 capture (V100, Kernel Time): 52 rows a kernel, the sections' Duration */
    FM_ASSERT_OK(ctx, fm_ncu_read_file(ctx, NCU_DIR "cfd_v100_kernel_time.csv", &p));
    assert_int_equal(p->n_kernels, 3);
    const char *const cfd[] = {"cuda_compute_step_factor", "cuda_compute_flux", "cuda_time_step"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(p->kernels[i].id, i);
        assert_string_equal(p->kernels[i].name, cfd[i]);
        assert_int_equal(p->kernels[i].line, 13 + 52 * (int)i);
    }
    assert_rel(p->kernels[0].fig.time_s.value, 10720e-9, 1e-12);
    assert_rel(p->kernels[1].fig.time_s.value, 39200e-9, 1e-12);
    assert_null(strstr(p->notes, "Ignored"));
    assert_null(strstr(p->notes, "Skipped"));
    fm_ncu_profile_free(p);
    fm_ctx_free(ctx);
}

/* The same ID in two processes is two kernels; a row of neither metric nor rule is counted;
 * only the trailing rule columns may be left off a row. */
static void test_dialect_rows(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
#define PHDR "\"ID\",\"Process ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\",\"Rule Type\",\"Rule Description\"\n"
    struct fm_ncu_profile *p = read_ok(ctx, PHDR
        "\"0\",\"10\",\"a\",\"s\",\"dram__bytes.sum\",\"byte\",\"7\"\n"
        "\"0\",\"11\",\"b\",\"s\",\"dram__bytes.sum\",\"byte\",\"1,000\"\n"
        "\"0\",\"10\",\"a\",\"s\",\"gpu__time_duration.sum\",\"nsecond\",\"5\",\"\"\n"
        "\"0\",\"11\",\"b\",\"s\",\"\",\"\",\"\",\"\",\"\",\"\"\n");
    assert_int_equal(p->n_kernels, 2);
    assert_int_equal(p->n_processes, 2);
    assert_string_equal(p->kernels[0].name, "a");
    assert_int_equal(p->kernels[0].fig.dram_bytes.count, 7);
    assert_true(p->kernels[0].fig.time_s.known);
    assert_string_equal(p->kernels[1].name, "b");
    assert_int_equal(p->kernels[1].fig.dram_bytes.count, 1000);
    assert_false(p->kernels[1].fig.time_s.known);
    assert_non_null(strstr(p->notes, "Skipped 1 rows with neither a metric name nor a rule (the "
                                     "first at line 5)"));
    fm_ncu_profile_free(p);
    /* a row that ends inside the metric columns is still cut short */
    expect_error(ctx, PHDR "\"0\",\"10\",\"a\",\"s\",\"dram__bytes.sum\",\"byte\"\n", "mem.csv:2:",
                 "cut short");
    /* and one wider than the header is an error too */
    expect_error(ctx, PHDR "\"0\",\"10\",\"a\",\"s\",\"dram__bytes.sum\",\"byte\",\"7\",\"\",\"\","
                       "\"\",\"x\"\n", "mem.csv:2:", "11 fields where the header (line 1) has 10");
#undef PHDR
    /* ten columns of no version: counted, the first eight named */
    p = read_ok(ctx, "\"ID\",\"a1\",\"a2\",\"a3\",\"a4\",\"a5\",\"a6\",\"a7\",\"a8\",\"a9\","
                     "\"a10\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
                     "\"0\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"dram__bytes.sum\",\"byte\",\"3\"\n");
    assert_int_equal(p->kernels[0].fig.dram_bytes.count, 3);
    assert_non_null(strstr(p->notes, "Ignored 10 columns of no Nsight Compute version flopmeter "
                                     "knows: \"a1\", \"a2\", \"a3\", \"a4\", \"a5\", \"a6\", "
                                     "\"a7\", \"a8\" and more."));
    fm_ncu_profile_free(p);
    fm_ctx_free(ctx);
}

static void test_cli(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(test_run_cli("ncu " NCU_DIR "flash_b200_raw.csv --format json", &out, &err), 0);
    assert_non_null(strstr(out, "\"kernels\": ["));
    assert_non_null(strstr(out, "\"totals\": {"));
    assert_non_null(strstr(out, "\"form\": \"raw\""));
    assert_non_null(strstr(out, "\"fp32\": null"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("ncu " NCU_DIR "sgemm_a100_smsp.csv --device a100", &out, &err), 0);
    assert_non_null(strstr(out, "68.7 T"));
    assert_non_null(strstr(out, "against A100"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("ncu " NCU_DIR "cutlass_v100_sm.csv --model resnet18 --format csv",
                                  &out, &err), 0);
    assert_non_null(strstr(out, "id,name,nvtx,fp64_flops"));
    assert_non_null(strstr(out, "10,\"void cutlass::Kernel<cutlass_70_tensorop_s884gemm_f16_128x128_nn_align8>(T1::Params)\",\"\",0,419430400,0,,33554432000,25174959968,"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("ncu " NCU_DIR "no_kernels_errperm.csv", &out, &err), 1);
    assert_non_null(strstr(err, "no_kernels_errperm.csv:50:1"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("nsys " NCU_DIR "sgemm_a100_smsp.csv", &out, &err), 1);
    assert_non_null(strstr(err, "flopmeter ncu"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("nsys " NSYS_DIR "nvtx_gpu_proj_sum.csv --format json", &out,
                                  &err), 0);
    assert_non_null(strstr(out, "\"kind\": \"nvtx_gpu\""));
    assert_non_null(strstr(out, "\"ranges\": ["));
    /* ":conv1 fwd": Total Proj Time 1199584 ns, Total GPU Ops 9, Total Range Time 238168 ns */
    const char *cf = strstr(out, "{\"name\": \":conv1 fwd\", \"style\": \"PushPop\", "
                                 "\"gpu_s\": 0.00119958");
    assert_non_null(cf);
    const char *eol = strchr(cf, '\n');
    const char *ops = strstr(cf, "\"gpu_ops\": 9, \"instances\": 3, \"range_time_s\": 0.00023816");
    assert_true(ops && eol && ops < eol);
    assert_non_null(strstr(out, "\"top_level_s\": 0.00485054"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("nsys " NSYS_DIR "nvtx_kern_sum.csv", &out, &err), 0);
    assert_non_null(strstr(out, "(outside any range)"));
    assert_non_null(strstr(out, "fm_sgd_update"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("nsys " NSYS_DIR "nvtx_kern_sum.csv --format json", &out, &err),
                     0);
    assert_non_null(strstr(out, "\"kind\": \"nvtx_kernels\""));
    /* the fm_sgd_update row: 9 launches, 3 range instances, PID and TID 4711 */
    assert_non_null(strstr(out, "\"kernel\": \"fm_sgd_update\""));
    assert_non_null(strstr(out, "\"range_instances\": 3, \"pid\": 4711, \"tid\": 4711}"));
    /* kernels outside any range: 2 launches, 3001 ns */
    const char *out_r = strstr(out, "{\"name\": \"\", \"style\": \"\", \"gpu_s\": 3.00");
    assert_non_null(out_r);
    assert_non_null(strstr(out_r, "\"gpu_ops\": 2, \"instances\": 0, \"range_time_s\": null, "
                                  "\"rows\": 1}"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("nsys " NSYS_DIR "nvtx_gpu_proj_sum.csv --format csv", &out, &err),
                     0);
    assert_non_null(strstr(out, "range,total_s,instances,avg_s,med_s,min_s,max_s,stddev_s,time_pct,"
                                "style,range_time_s,gpu_ops,avg_gpu_ops,avg_level,avg_children\n"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("ncu", &out, &err), 2);
    free(out);
    free(err);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_captures_match_independent_totals),
        cmocka_unit_test(test_details_smsp_and_tensor),
        cmocka_unit_test(test_preamble_and_separators),
        cmocka_unit_test(test_raw_page),
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_rates_are_not_summed),
        cmocka_unit_test(test_missing_is_not_zero),
        cmocka_unit_test(test_errors_name_line_and_column),
        cmocka_unit_test(test_large_file),
        cmocka_unit_test(test_nvtx_groups),
        cmocka_unit_test(test_match_to_layers),
        cmocka_unit_test(test_h100_flopmeter_step),
        cmocka_unit_test(test_nsys),
        cmocka_unit_test(test_nsys_gpu_inputs_match_independent_totals),
        cmocka_unit_test(test_nsys_gpu_forms),
        cmocka_unit_test(test_nsys_gpu_errors),
        cmocka_unit_test(test_dialects),
        cmocka_unit_test(test_dialect_rows),
        cmocka_unit_test(test_cli),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
