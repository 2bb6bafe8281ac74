/* Tests of the device table and device files: datasheet figures of the built-ins (against
 * the vendor documents of docs/devices.md and the FP32 = lanes x clock x 2 rule), unverified
 * marks, which ceiling an op class gets at each precision, lookup by name and alias, a device
 * file that round-trips field for field, overrides and their order ($FLOPMETER_DEVICES, the
 * XDG file, --devices), every malformed-file case with the field and type its message must
 * name, and the devices/device commands. */
#include "support.h"
#include "core/json_read.h"

#ifdef FM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


static const struct fm_device *find(struct fm_ctx *ctx, const struct fm_devices *devs,
                                    const char *name)
{
    const struct fm_device *d = NULL;
    FM_ASSERT_OK(ctx, fm_devices_find(ctx, devs, name, &d));
    return d;
}

/* The test must not see the user's own device files. */
static void isolate_env(void)
{
    unsetenv("FLOPMETER_DEVICES");
    setenv("XDG_CONFIG_HOME", "/nonexistent-flopmeter-test", 1);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

/* ---- precisions ---- */

static void test_precision_names(void **state)
{
    (void)state;
    for (int p = 0; p < FM_PREC_COUNT; p++) {
        enum fm_precision back;
        assert_true(fm_precision_parse(fm_precision_name((enum fm_precision)p), &back));
        assert_int_equal(back, p);
    }
    enum fm_precision p;
    assert_true(fm_precision_parse("BF16", &p));
    assert_int_equal(p, FM_PREC_BF16);
    assert_true(fm_precision_parse("half", &p));
    assert_int_equal(p, FM_PREC_FP16);
    assert_false(fm_precision_parse("fp4", &p));
    assert_true(fm_precision_tensor_class(FM_CLASS_CONV));
    assert_true(fm_precision_tensor_class(FM_CLASS_MATMUL));
    assert_true(fm_precision_tensor_class(FM_CLASS_ATTENTION));
    assert_false(fm_precision_tensor_class(FM_CLASS_NORM));
    assert_false(fm_precision_tensor_class(FM_CLASS_ELEMENTWISE));
}

/* ---- the built-in table ---- */

static void test_builtin_figures(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_devices *devs = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    /* datasheet figures, docs/devices.md (TFLOP/s, GB/s) */
    const struct fm_device *k80 = find(ctx, devs, "k80");
    assert_string_equal(k80->name, "K80");
    assert_true(k80->peak_vector[FM_PREC_FP32] == 8.73e12);
    assert_true(k80->peak_vector[FM_PREC_FP64] == 2.91e12);
    assert_true(k80->mem_bw == 480e9);
    const struct fm_device *h100 = find(ctx, devs, "h100");
    assert_string_equal(h100->name, "H100 SXM5 80GB");
    assert_true(h100->peak_tensor[FM_PREC_BF16] == 989.4e12);
    assert_true(h100->peak_tensor[FM_PREC_FP8] == 1978.9e12);
    assert_true(h100->peak_vector[FM_PREC_FP32] == 66.9e12);
    assert_true(h100->mem_bw == 3350e9);
    assert_true(h100->interconnect_bw == 900e9);
    /* H800 SXM5: the H100 SXM5's tensor peaks and memory, NVLink 400 GB/s, fp64 about 1 */
    const struct fm_device *h800 = find(ctx, devs, "h800");
    assert_string_equal(h800->name, "H800 SXM5 80GB");
    for (int p = FM_PREC_TF32; p < FM_PREC_COUNT; p++)
        assert_true(h800->peak_tensor[p] == h100->peak_tensor[p]);
    assert_true(h800->peak_tensor[FM_PREC_FP8] == 1978.9e12);
    assert_true(h800->peak_vector[FM_PREC_FP32] == 66.9e12);
    assert_true(h800->peak_tensor[FM_PREC_FP64] == 1e12);
    assert_true(h800->peak_vector[FM_PREC_FP64] == 1e12);
    assert_true(h800->mem_bw == 3350e9);
    assert_true(h800->mem_bytes == 80e9);
    assert_int_equal(h800->units, 132);
    assert_true(h800->interconnect_bw == 400e9);
    assert_string_equal(h800->interconnect, "NVLink4");
    /* NVIDIA's FP32 peak = SMs x 128 FP32 lanes x 2 (FMA) x boost clock: 66.9 TFLOP/s for the
     * H100 SXM (132 x 128 x 2 x 1.98 GHz = 66.90 T); within the datasheet's rounding */
    double h100_fp32 = h100->units * 128.0 * 2.0 * h100->boost_mhz * 1e6;
    assert_true(fabs(h100_fp32 - h100->peak_vector[FM_PREC_FP32]) / h100_fp32 < 1e-3);
    /* A100: 108 SMs x 64 FP32 lanes x 2 x 1.41 GHz = 19.49 T */
    const struct fm_device *a100 = find(ctx, devs, "a100");
    assert_string_equal(a100->name, "A100 SXM 80GB");
    double a100_fp32 = a100->units * 64.0 * 2.0 * a100->boost_mhz * 1e6;
    assert_true(fabs(a100_fp32 - a100->peak_vector[FM_PREC_FP32]) / a100_fp32 < 1e-3);
    assert_true(a100->mem_bw == 2039e9);
    assert_true(a100->peak_tensor[FM_PREC_TF32] == 156e12);
    assert_true(a100->peak_tensor[FM_PREC_FP8] == 0);
    const struct fm_device *v100 = find(ctx, devs, "v100");
    assert_true(v100->peak_tensor[FM_PREC_FP16] == 125e12);
    assert_true(v100->peak_tensor[FM_PREC_TF32] == 0);
    const struct fm_device *p100 = find(ctx, devs, "p100");
    assert_false(fm_device_has_tensor(p100));
    assert_true(p100->peak_vector[FM_PREC_FP16] == 21.2e12);
    /* every entry has a name, a source and a bandwidth; no name or alias names two devices */
    size_t n = fm_devices_count(devs);
    assert_true(n >= 25);
    for (size_t i = 0; i < n; i++) {
        const struct fm_device *d = fm_devices_get(devs, i);
        assert_non_null(d->name);
        assert_non_null(d->source);
        assert_true(strlen(d->source) > 10);
        assert_true(d->mem_bw > 0);
        assert_ptr_equal(find(ctx, devs, d->name), d);
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", d->aliases ? d->aliases : "");
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
            if (find(ctx, devs, tok) != d)
                fail_msg("alias %s of %s finds another device", tok, d->name);
        }
    }
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

static void test_unverified_marks(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_devices *devs = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    /* the figures the vendor documents do not confirm (docs/devices.md) */
    assert_true(find(ctx, devs, "a100-pcie")->unverified & FM_DEVF_BANDWIDTH);
    assert_true(find(ctx, devs, "a100-pcie")->unverified & FM_DEVF_TDP);
    assert_false(find(ctx, devs, "a100")->unverified & FM_DEVF_BANDWIDTH);
    assert_true(find(ctx, devs, "k80")->unverified & FM_DEVF_L2);
    assert_true(find(ctx, devs, "k80-die")->unverified & FM_DEVF_TDP);
    assert_true(find(ctx, devs, "l40s")->unverified & FM_DEVF_L2);
    const struct fm_device *t = find(ctx, devs, "2080ti");
    assert_true(t->unverified & FM_DEVF_PEAK);
    assert_true(t->unverified_tensor & (1u << FM_PREC_FP16));
    assert_true(t->unverified_tensor & (1u << FM_PREC_INT8));
    assert_false(t->unverified_vector & (1u << FM_PREC_FP32));
    assert_true(find(ctx, devs, "a10")->unverified_vector & (1u << FM_PREC_FP64));
    const struct fm_device *a30 = find(ctx, devs, "a30");
    assert_true(a30->unverified_tensor & (1u << FM_PREC_TF32));
    assert_false(a30->unverified_tensor & (1u << FM_PREC_FP64));
    const struct fm_device *nvl = find(ctx, devs, "h100-nvl");
    assert_true(nvl->unverified & FM_DEVF_CLOCK);
    assert_true(nvl->unverified_tensor & (1u << FM_PREC_BF16));
    assert_true(find(ctx, devs, "b200")->unverified & FM_DEVF_UNITS);
    /* the H800: NVIDIA's own datasheet not at hand, every peak is the H100's, unconfirmed; the
     * memory, SM count and NVLink are confirmed */
    const struct fm_device *h800 = find(ctx, devs, "h800");
    assert_true(h800->unverified & FM_DEVF_PEAK);
    assert_true(h800->unverified & FM_DEVF_BANDWIDTH);
    assert_true(h800->unverified_tensor & (1u << FM_PREC_BF16));
    assert_true(h800->unverified_tensor & (1u << FM_PREC_FP8));
    assert_true(h800->unverified_vector & (1u << FM_PREC_FP64));
    assert_false(h800->unverified & (FM_DEVF_MEMORY | FM_DEVF_UNITS | FM_DEVF_INTERCONNECT));
    /* a confirmed device carries no marks */
    const struct fm_device *h = find(ctx, devs, "h100");
    assert_int_equal(h->unverified | h->unverified_vector | h->unverified_tensor, 0);
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

/* Which ceiling applies (docs/devices.md): tensor only for conv/matmul/attention. */
static void test_ceiling_rules(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_devices *devs = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    const struct fm_device *a100 = find(ctx, devs, "a100");
    const struct fm_device *h100 = find(ctx, devs, "h100");
    const struct fm_device *v100 = find(ctx, devs, "v100");
    const struct fm_device *p100 = find(ctx, devs, "p100");
    const struct fm_device *k80 = find(ctx, devs, "k80");
    assert_true(fm_device_peak(a100, FM_CLASS_CONV, FM_PREC_FP16) == 312e12);
    assert_true(fm_device_peak(a100, FM_CLASS_MATMUL, FM_PREC_BF16) == 312e12);
    assert_true(fm_device_peak(a100, FM_CLASS_ATTENTION, FM_PREC_TF32) == 156e12);
    /* no tensor cores for a norm, and A100 lists no fp16 vector figure: fp32 vector */
    assert_true(fm_device_peak(a100, FM_CLASS_NORM, FM_PREC_FP16) == 19.5e12);
    assert_true(fm_device_peak(a100, FM_CLASS_ELEMENTWISE, FM_PREC_TF32) == 19.5e12);
    assert_true(fm_device_peak(a100, FM_CLASS_CONV, FM_PREC_FP32) == 19.5e12);
    /* fp64: DGEMM on A100's fp64 tensor cores, elementwise on the vector units */
    assert_true(fm_device_peak(a100, FM_CLASS_MATMUL, FM_PREC_FP64) == 19.5e12);
    assert_true(fm_device_peak(a100, FM_CLASS_ACTIVATION, FM_PREC_FP64) == 9.7e12);
    /* fp8: a tensor-only format; A100 has none */
    assert_true(fm_device_peak(a100, FM_CLASS_CONV, FM_PREC_FP8) == 0);
    assert_true(fm_device_peak(h100, FM_CLASS_CONV, FM_PREC_FP8) == 1978.9e12);
    assert_true(fm_device_peak(h100, FM_CLASS_ACTIVATION, FM_PREC_FP8) == 66.9e12);
    /* V100: no tf32 tensor cores, tf32 is fp32 math */
    assert_true(fm_device_peak(v100, FM_CLASS_CONV, FM_PREC_TF32) == 15.7e12);
    /* P100: fp16 on the vector units at twice fp32, for every class */
    assert_true(fm_device_peak(p100, FM_CLASS_CONV, FM_PREC_FP16) == 21.2e12);
    assert_true(fm_device_peak(p100, FM_CLASS_POOL, FM_PREC_FP16) == 21.2e12);
    /* K80: no fp16 math at all, fp16 storage computes in fp32 */
    assert_true(fm_device_peak(k80, FM_CLASS_CONV, FM_PREC_FP16) == 8.73e12);
    /* ridge = peak / bandwidth: Verma's ImageNet roofline study (NYU, 2022), Table 1,
     * 125 T / 0.900 TB/s = 138.89 */
    assert_true(fabs(fm_device_ridge(v100, FM_CLASS_CONV, FM_PREC_FP16) - 138.888889) < 1e-5);
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

static void test_find(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_devices *devs = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    assert_string_equal(find(ctx, devs, "a100 sxm 80gb")->name, "A100 SXM 80GB");
    assert_string_equal(find(ctx, devs, "H100")->name, "H100 SXM5 80GB");
    assert_string_equal(find(ctx, devs, "a100-40gb")->name, "A100 SXM 40GB");
    assert_string_equal(find(ctx, devs, "H800")->name, "H800 SXM5 80GB");
    assert_string_equal(find(ctx, devs, "h800-sxm5")->name, "H800 SXM5 80GB");
    const struct fm_device *d = NULL;
    assert_int_equal(fm_devices_find(ctx, devs, "h1000", &d), FM_ERR_NOT_FOUND);
    EXPECT_MESSAGE(ctx, "unknown device 'h1000'", "h100", "flopmeter devices");
    assert_int_equal(fm_devices_find(ctx, devs, "", &d), FM_ERR_INVALID);
    assert_non_null(fm_link_find("NVLink3"));
    assert_true(fm_link_find("nvlink3")->bw == 600e9);
    assert_true(fm_link_find("pcie4")->bw == 64e9);
    assert_null(fm_link_find("nvlink9"));
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

/* ---- device files ---- */

static void expect_same_device(const struct fm_device *a, const struct fm_device *b)
{
    assert_string_equal(a->name, b->name);
#define SAME_STR(f) assert_string_equal(a->f ? a->f : "", b->f ? b->f : "")
    SAME_STR(aliases);
    SAME_STR(kind);
    SAME_STR(arch);
    SAME_STR(interconnect);
    SAME_STR(source);
#undef SAME_STR
    for (int p = 0; p < FM_PREC_COUNT; p++) {
        assert_true(a->peak_vector[p] == b->peak_vector[p]);
        assert_true(a->peak_tensor[p] == b->peak_tensor[p]);
    }
    assert_true(a->mem_bw == b->mem_bw);
    assert_true(a->mem_bytes == b->mem_bytes);
    assert_true(a->l2_bytes == b->l2_bytes);
    assert_true(a->boost_mhz == b->boost_mhz);
    assert_int_equal(a->units, b->units);
    assert_true(a->tdp_w == b->tdp_w);
    assert_true(a->interconnect_bw == b->interconnect_bw);
    assert_int_equal(a->unverified, b->unverified);
    assert_int_equal(a->unverified_vector, b->unverified_vector);
    assert_int_equal(a->unverified_tensor, b->unverified_tensor);
    assert_int_equal(a->measured, b->measured);
}

#ifdef FM_HAVE_CJSON

/* A device with every field set to a value that needs all 17 digits survives save + load. */
static void test_json_round_trip(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_devices *devs = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    struct fm_device d;
    memset(&d, 0, sizeof(d));
    d.name = "Test GPU \"quoted\" \\ name";
    d.aliases = "tgpu,test-gpu";
    d.kind = "gpu";
    d.arch = "Imaginary GX1";
    for (int p = 0; p < FM_PREC_COUNT; p++) {
        d.peak_vector[p] = (p + 1) * 1.2345678901234567e13 / 3.0;
        d.peak_tensor[p] = p == FM_PREC_FP32 ? 0 : (p + 2) * 9.87654321012345e13 / 7.0;
    }
    d.mem_bw = 1.23456789012345678e12 / 3.0;
    d.mem_bytes = 80e9 + 1;
    d.l2_bytes = 50.5e6;
    d.boost_mhz = 1980.25;
    d.units = 132;
    d.tdp_w = 699.9;
    d.interconnect = "NVLink4";
    d.interconnect_bw = 900e9 / 7.0;
    d.source = "a test\nwith a newline and \"quotes\"";
    d.unverified = FM_DEVF_PEAK | FM_DEVF_L2 | FM_DEVF_INTERCONNECT;
    d.unverified_vector = 1u << FM_PREC_FP64;
    d.unverified_tensor = (1u << FM_PREC_FP8) | (1u << FM_PREC_INT8);
    d.measured = true;
    char path[] = "/tmp/fm_test_dev_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    FM_ASSERT_OK(ctx, fm_device_save_json(ctx, &d, path));
    size_t before = fm_devices_count(devs);
    FM_ASSERT_OK(ctx, fm_devices_add_file(devs, path));
    assert_int_equal(fm_devices_count(devs), before + 1);
    const struct fm_device *back = find(ctx, devs, "tgpu");
    expect_same_device(&d, back);
    assert_string_equal(back->origin, path);

    /* every built-in, saved under a new name, loads back identical */
    for (size_t i = 0; i < before; i++) {
        struct fm_device c = *fm_devices_get(devs, i);
        char name[160];
        snprintf(name, sizeof(name), "copy of %s", c.name);
        c.name = name;
        c.aliases = NULL;
        FM_ASSERT_OK(ctx, fm_device_save_json(ctx, &c, path));
        FM_ASSERT_OK(ctx, fm_devices_add_file(devs, path));
        expect_same_device(&c, find(ctx, devs, name));
    }
    unlink(path);
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

/* An entry naming a device overrides only what it gives; a file is applied in order. */
static void test_json_override(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_devices *devs = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    size_t n = fm_devices_count(devs);
    const char *text = "{\"devices\": ["
                       " {\"name\": \"a100\", \"mem_bw_bytes_per_s\": 1.6e12,"
                       "  \"peak_tensor_flops\": {\"fp8\": 1e15}},"
                       " {\"name\": \"A100 SXM 80GB\", \"tdp_w\": 350},"
                       " {\"name\": \"My Box\", \"aliases\": [\"box\", \"mybox\"],"
                       "  \"peak_vector_flops\": {\"fp32\": 2e12}, \"mem_bw_bytes_per_s\": 1e11}"
                       "]}";
    FM_ASSERT_OK(ctx, fm_devices_add_json(devs, text, strlen(text), "override.json"));
    assert_int_equal(fm_devices_count(devs), n + 1);
    const struct fm_device *a = find(ctx, devs, "a100");
    assert_string_equal(a->name, "A100 SXM 80GB");
    assert_true(a->mem_bw == 1.6e12);
    assert_true(a->peak_tensor[FM_PREC_FP8] == 1e15);
    assert_true(a->peak_tensor[FM_PREC_FP16] == 312e12); /* kept */
    assert_true(a->tdp_w == 350);                        /* the second entry built on the first */
    assert_string_equal(a->origin, "override.json");
    const struct fm_device *box = find(ctx, devs, "mybox");
    assert_string_equal(box->name, "My Box");
    assert_string_equal(box->aliases, "box,mybox");
    /* a single device object is a file too */
    const char *one = "{\"name\": \"box\", \"boost_mhz\": 1000}";
    FM_ASSERT_OK(ctx, fm_devices_add_json(devs, one, strlen(one), "one.json"));
    assert_true(find(ctx, devs, "My Box")->boost_mhz == 1000);
    assert_true(find(ctx, devs, "My Box")->peak_vector[FM_PREC_FP32] == 2e12);
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

/* The JSON reader every file reader shares (src/core/json_read.h) finds a refused item's line and
 * column by walking the text beside cJSON's tree: a member's key, an array element's first
 * character, the second of two members with one key, past strings holding brackets, quotes
 * and commas, past a byte-order mark; a syntax error where cJSON stopped. */
static void test_json_positions(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    static const char text[] =
        "\xEF\xBB\xBF{\"a\": \"x]}\\\"{,\",\n"
        "  \"list\": [1, {\"k\": [2, 3]},\n"
        "\t\"s\"],\n"
        "  \"a\": {\"deep\": {\"k\": null}}}\n";
    struct fm_json_doc doc;
    FM_ASSERT_OK(ctx, fm_json_parse(ctx, "t.json", text, strlen(text), true, "hint", &doc));
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc.root, "list");
    const cJSON *obj = cJSON_GetArrayItem(list, 1);
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, "k");
    const cJSON *s = cJSON_GetArrayItem(list, 2);
    const cJSON *second_a = list->next;    /* the "a" that repeats the first */
    const cJSON *deep_k = second_a->child->child;
    struct {
        const cJSON *item;
        size_t line, col;
    } want[] = {
        {NULL, 1, 4},          {doc.root, 1, 4},      {doc.root->child, 1, 5},
        {list, 2, 3},          {list->child, 2, 12},  {obj, 2, 15},
        {k, 2, 16},            {k->child->next, 2, 25}, {s, 3, 2},
        {second_a, 4, 3},      {deep_k, 4, 18},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        size_t line = 0, col = 0;
        fm_json_position(&doc, want[i].item, &line, &col);
        if (line != want[i].line || col != want[i].col)
            fail_msg("item %zu: line %zu, column %zu; expected line %zu, column %zu", i, line,
                     col, want[i].line, want[i].col);
    }
    doc.where = "entries[7]";
    assert_int_equal(fm_json_fail(&doc, deep_k, "field \"%s\" is %s", "k", "null"), FM_ERR_PARSE);
    assert_string_equal(fm_ctx_error(ctx),
                        "t.json, line 4, column 18: entries[7]: field \"k\" is null");
    double d = 0;
    int n = 0;
    assert_int_equal(fm_json_number(&doc, deep_k, "bytes", NULL, &d), FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, "line 4, column 18", "\"k\" must be a number (bytes), got null");
    assert_int_equal(fm_json_count(&doc, k, "n", &n), FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, "line 2, column 16", "\"k\" must be a whole number >= 0 (n), got an array");
    fm_json_release(&doc);

    /* cJSON stops just past the second comma (the error is on or before the point named);
     * with whole, text after the document is an error */
    static const char broken[] = "{\n  \"a\": 1,,\n}";
    assert_int_equal(fm_json_parse(ctx, "b.json", broken, strlen(broken), false, "hint", &doc),
                     FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, "b.json, line 2, column 11: not valid JSON", "hint");
    assert_null(doc.root);
    static const char two[] = "{\"a\": 1}\n  {}";
    FM_ASSERT_OK(ctx, fm_json_parse(ctx, "two.json", two, strlen(two), false, "hint", &doc));
    fm_json_release(&doc);
    assert_int_equal(fm_json_parse(ctx, "two.json", two, strlen(two), true, "hint", &doc),
                     FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, "two.json, line 2, column 3: not valid JSON");
    fm_ctx_free(ctx);
}

struct bad_case {
    const char *text;
    const char *words[3];    /* each must appear in the message */
};

/* Every malformed file fails with FM_ERR_PARSE, names the file and what is wrong, and leaves
 * the table as it was (the good first entry of a bad file is not applied either). */
static void test_json_bad_files(void **state)
{
    (void)state;
    static const struct bad_case cases[] = {
        {"{\"devices\": [", {"bad.json", "not valid JSON", "line 1"}},
        {"{\n\"devices\": [\n{\"name\": \"x\",,}\n]}", {"not valid JSON", "line 3", NULL}},
        {"42", {"expected an object", "got a number", NULL}},
        {"{\"devices\": {\"name\": \"x\"}}", {"\"devices\" must be an array", "an object", NULL}},
        {"{\"devices\": [3]}", {"devices[0]", "expected a device object", "got a number"}},
        {"{\"devices\": [{\"mem_bw_bytes_per_s\": 1}]}", {"devices[0]", "missing field \"name\"", "a string"}},
        {"{\"devices\": [{\"name\": 5}]}", {"\"name\" must be a non-empty string", "got a number", NULL}},
        {"{\"devices\": [{\"name\": \"\"}]}", {"\"name\" must be a non-empty string", NULL, NULL}},
        {"{\"devices\": [{\"name\": \"a100\", \"mem_bw_bytes_per_s\": \"fast\"}]}",
         {"(\"a100\")", "\"mem_bw_bytes_per_s\" must be a number (bytes/s)", "got a string"}},
        {"{\"devices\": [{\"name\": \"a100\", \"mem_bw_bytes_per_s\": -5}]}",
         {"\"mem_bw_bytes_per_s\" must be >= 0", "-5", NULL}},
        {"{\"devices\": [{\"name\": \"a100\", \"peak_tensor_flops\": {\"fp4\": 1e15}}]}",
         {"\"peak_tensor_flops\"", "unknown precision \"fp4\"", "fp64, fp32, tf32"}},
        {"{\"devices\": [{\"name\": \"a100\", \"peak_tensor_flops\": {\"half\": 1e15}}]}",
         {"unknown precision \"half\"", NULL, NULL}},
        {"{\"devices\": [{\"name\": \"a100\", \"peak_vector_flops\": {\"fp32\": \"many\"}}]}",
         {"\"peak_vector_flops.fp32\" must be a number (FLOP/s)", "got a string", NULL}},
        {"{\"devices\": [{\"name\": \"a100\", \"peak_vector_flops\": {\"fp32\": -1}}]}",
         {"\"peak_vector_flops.fp32\" must be >= 0", NULL, NULL}},
        {"{\"devices\": [{\"name\": \"a100\", \"peak_vector_flops\": 5}]}",
         {"\"peak_vector_flops\" must be an object", "got a number", NULL}},
        {"{\"devices\": [{\"name\": \"a100\", \"bandwidth\": 5}]}",
         {"unknown field \"bandwidth\"", "mem_bw_bytes_per_s", NULL}},
        {"{\"devices\": [{\"name\": \"a100\", \"units\": 1.5}]}", {"\"units\" must be a whole number", NULL, NULL}},
        {"{\"devices\": [{\"name\": \"a100\", \"units\": \"many\"}]}", {"\"units\" must be a number", NULL, NULL}},
        {"{\"devices\": [{\"name\": \"a100\", \"measured\": 1}]}", {"\"measured\" must be true or false", "got a number", NULL}},
        {"{\"devices\": [{\"name\": \"a100\", \"unverified\": [\"speed\"]}]}", {"\"unverified\"", "unknown entry \"speed\"", NULL}},
        {"{\"devices\": [{\"name\": \"a100\", \"unverified\": \"l2\"}]}", {"\"unverified\" must be an array of strings", NULL, NULL}},
        {"{\"devices\": [{\"name\": \"a100\", \"aliases\": 7}]}", {"\"aliases\" must be a string", "got a number", NULL}},
        {"{\"devices\": [{\"name\": \"a100\", \"source\": [1]}]}", {"\"source\" must be a string", "got an array", NULL}},
        {"{\"devices\": [{\"name\": \"New GPU\", \"peak_vector_flops\": {\"fp32\": 1e12}}]}",
         {"(\"New GPU\")", "a new device needs \"mem_bw_bytes_per_s\"", NULL}},
        {"{\"devices\": [{\"name\": \"New GPU\", \"mem_bw_bytes_per_s\": 1e12}]}",
         {"at least one peak", NULL, NULL}},
        {"{\"devices\": [{\"name\": \"a100\", \"tdp_w\": 1},"
         " {\"name\": \"h100\", \"l2_bytes\": null}]}",
         {"devices[1] (\"h100\")", "\"l2_bytes\" must be a number", "got null"}},
    };
    struct fm_ctx *ctx = test_ctx();
    struct fm_devices *devs = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    size_t n = fm_devices_count(devs);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct bad_case *c = &cases[i];
        enum fm_status st = fm_devices_add_json(devs, c->text, strlen(c->text), "bad.json");
        if (st != FM_ERR_PARSE)
            fail_msg("case %zu (%s): status %s, expected parse error", i, c->text,
                     fm_status_to_string(st));
        EXPECT_MESSAGE(ctx, "bad.json");
        for (int k = 0; k < 3 && c->words[k]; k++) {
            if (!strstr(fm_ctx_error(ctx), c->words[k]))
                fail_msg("case %zu (%s): message \"%s\" lacks \"%s\"", i, c->text,
                         fm_ctx_error(ctx), c->words[k]);
        }
    }
    /* nothing was applied: not even the good first entry of the last case */
    assert_int_equal(fm_devices_count(devs), n);
    assert_true(find(ctx, devs, "a100")->tdp_w == 400);
    assert_string_equal(find(ctx, devs, "a100")->origin, "built-in");
    /* a file that is not there */
    assert_int_equal(fm_devices_add_file(devs, "/nonexistent/devices.json"), FM_ERR_IO);
    EXPECT_MESSAGE(ctx, "/nonexistent/devices.json");
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

/* $FLOPMETER_DEVICES, then $XDG_CONFIG_HOME/flopmeter/devices.json, then --devices FILE. */
static void test_load_order(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    char dir[] = "/tmp/fm_test_xdg_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sub[256], xdg_file[300], env_file[300], user_file[300];
    snprintf(sub, sizeof(sub), "%s/flopmeter", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    snprintf(xdg_file, sizeof(xdg_file), "%s/devices.json", sub);
    snprintf(env_file, sizeof(env_file), "%s/env.json", dir);
    snprintf(user_file, sizeof(user_file), "%s/user.json", dir);
    write_file(env_file, "{\"devices\": [{\"name\": \"a100\", \"mem_bw_bytes_per_s\": 1e12,"
                         " \"tdp_w\": 111}]}");
    write_file(xdg_file, "{\"devices\": [{\"name\": \"a100\", \"mem_bw_bytes_per_s\": 2e12}]}");
    write_file(user_file, "[{\"name\": \"a100\", \"mem_bw_bytes_per_s\": 3e12}]");
    setenv("FLOPMETER_DEVICES", env_file, 1);
    setenv("XDG_CONFIG_HOME", dir, 1);
    struct fm_devices *devs = NULL;
    FM_ASSERT_OK(ctx, fm_devices_load(ctx, user_file, &devs));
    assert_true(find(ctx, devs, "a100")->mem_bw == 3e12);
    assert_true(find(ctx, devs, "a100")->tdp_w == 111);
    fm_devices_free(devs);
    FM_ASSERT_OK(ctx, fm_devices_load(ctx, NULL, &devs));
    assert_true(find(ctx, devs, "a100")->mem_bw == 2e12);
    assert_string_equal(find(ctx, devs, "a100")->origin, xdg_file);
    fm_devices_free(devs);
    /* a $FLOPMETER_DEVICES that does not exist is an error, not silence */
    setenv("FLOPMETER_DEVICES", "/nonexistent/flopmeter.json", 1);
    assert_int_equal(fm_devices_load(ctx, NULL, &devs), FM_ERR_IO);
    assert_null(devs);
    EXPECT_MESSAGE(ctx, "FLOPMETER_DEVICES", "/nonexistent/flopmeter.json");
    /* a bad XDG file is reported, naming it */
    unsetenv("FLOPMETER_DEVICES");
    write_file(xdg_file, "{\"devices\": [{\"name\": 1}]}");
    assert_int_equal(fm_devices_load(ctx, NULL, &devs), FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, xdg_file, "\"name\"");
    unlink(xdg_file);
    unlink(env_file);
    unlink(user_file);
    rmdir(sub);
    rmdir(dir);
    isolate_env();
    fm_ctx_free(ctx);
}

#else

static void test_json_unsupported(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_devices *devs = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    assert_int_equal(fm_devices_add_json(devs, "{}", 2, "x.json"), FM_ERR_UNSUPPORTED);
    EXPECT_MESSAGE(ctx, "x.json", "cJSON");
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

#endif

/* ---- the commands ---- */

static void test_cli_devices(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(test_run_cli("devices", &out, &err), 0);
    assert_non_null(strstr(out, "H100 SXM5 80GB"));
    assert_non_null(strstr(out, "1935?"));    /* A100 PCIe bandwidth is unverified */
    free(out);
    free(err);
    assert_int_equal(test_run_cli("device h100", &out, &err), 0);
    assert_non_null(strstr(out, "source: NVIDIA H100 datasheet"));
    assert_non_null(strstr(out, "989.4"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("device h1000", &out, &err), 2);
    assert_non_null(strstr(err, "unknown device 'h1000'"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("devices --format csv", &out, &err), 0);
    assert_non_null(strstr(out, "\"K80\",\"k80,k80-board\",gpu"));
    free(out);
    free(err);
#ifdef FM_HAVE_CJSON
    /* the JSON listing is itself a device file */
    char path[] = "/tmp/fm_test_devjson_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char args[512];
    snprintf(args, sizeof(args), "device a100 --format json > %s", path);
    assert_int_equal(test_run_cli(args, NULL, NULL), 0);
    struct fm_ctx *ctx = test_ctx();
    struct fm_devices *devs = NULL, *ref = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &ref));
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    FM_ASSERT_OK(ctx, fm_devices_add_file(devs, path));
    expect_same_device(find(ctx, ref, "a100"), find(ctx, devs, "a100"));
    assert_string_equal(find(ctx, devs, "a100")->origin, path);
    fm_devices_free(ref);
    fm_devices_free(devs);
    fm_ctx_free(ctx);
    write_file(path, "{\"devices\": [{\"name\": \"a100\", \"mem_bw_bytes_per_s\": \"x\"}]}");
    snprintf(args, sizeof(args), "devices --devices %s", path);
    assert_int_equal(test_run_cli(args, &out, &err), 1);
    assert_non_null(strstr(err, "\"mem_bw_bytes_per_s\" must be a number"));
    free(out);
    free(err);
    unlink(path);
#endif
}

int main(int argc, char **argv)
{
    isolate_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_precision_names),
        cmocka_unit_test(test_builtin_figures),
        cmocka_unit_test(test_unverified_marks),
        cmocka_unit_test(test_ceiling_rules),
        cmocka_unit_test(test_find),
#ifdef FM_HAVE_CJSON
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_json_override),
        cmocka_unit_test(test_json_bad_files),
        cmocka_unit_test(test_json_positions),
        cmocka_unit_test(test_load_order),
#else
        cmocka_unit_test(test_json_unsupported),
#endif
        cmocka_unit_test(test_cli_devices),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
