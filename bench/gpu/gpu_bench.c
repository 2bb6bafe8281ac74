/* flopmeter's side of the GPU benchmark (bench/gpu/README.md): timed training steps of built-in
 * models on the CUDA backend, with flopmeter's own predicted step time for the same device
 * next to each, and the GPU probe. One JSON object per line on stdout, so that report.py can
 * join it with torch_bench.py's lines. A failing configuration prints an "error" line and the
 * rest go on.
 *
 *   gpu_bench train MODELS BATCHES PRECISIONS LAYOUTS GRAPHS [WARMUP STEPS]
 *       comma lists: resnet50,vgg16  64,128  fp16,tf32  nchw,nhwc  0,1
 *   gpu_bench probe
 *
 * Built against the static library by bench/gpu/build.sh. */
#include "flopmeter.h"
#include "backend/backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void json_str(const char *key, const char *v)
{
    printf("\"%s\":\"", key);
    for (; *v; v++) {
        if (*v == '"' || *v == '\\')
            putchar('\\');
        putchar(*v == '\n' ? ' ' : *v);
    }
    printf("\"");
}

/* a number, or null when it is not finite (JSON has no NaN) */
static void json_num(const char *key, double v)
{
    if (isfinite(v))
        printf("\"%s\":%.5f,", key, v);
    else
        printf("\"%s\":null,", key);
}

/* splits a comma list in place; returns how many items (at most max) */
static int split(char *s, char **out, int max)
{
    int n = 0;
    for (char *save = NULL, *t = strtok_r(s, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
        out[n++] = t;
    return n;
}

/* Predicted step time of the graph on the matched device entry: both PALEO bounds (ms). */
static void predict(struct fm_ctx *ctx, const struct fm_graph *g, const char *gpu,
                    enum fm_precision prec, double *roofline_ms, double *paleo_ms,
                    const char **entry)
{
    *roofline_ms = *paleo_ms = 0.0;
    *entry = "";
    struct fm_devices *devs = NULL;
    struct fm_counts *c = NULL;
    struct fm_prediction *p = NULL;
    const struct fm_device *dev = NULL;
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    if (fm_devices_load(ctx, NULL, &devs) || fm_devices_match(ctx, devs, gpu, &dev) ||
        fm_count(ctx, g, &co, &c))
        goto out;
    struct fm_predict_opts po;
    fm_predict_opts_init(&po);
    po.device = dev;
    po.precision = prec;
    if (fm_predict(ctx, g, c, &po, &p))
        goto out;
    *roofline_ms = p->step_roofline_s * 1e3;
    *paleo_ms = p->step_paleo_s * 1e3;
    *entry = dev->name;
out:
    fm_prediction_free(p);
    fm_counts_free(c);
    fm_devices_free(devs);
}

static void log_stderr(void *user, const char *msg)
{
    (void)user;
    fprintf(stderr, "%s\n", msg);
}

static int train(char **argv, int argc)
{
    char *models[16], *batches[8], *precs[8], *layouts[4], *graphs[4];
    int nm = split(argv[0], models, 16), nb = split(argv[1], batches, 8);
    int np = split(argv[2], precs, 8), nl = split(argv[3], layouts, 4);
    int ng = split(argv[4], graphs, 4);
    int warmup = argc > 5 ? atoi(argv[5]) : 10, steps = argc > 6 ? atoi(argv[6]) : 30;
    struct fm_ctx *ctx = NULL;
    if (fm_ctx_new(NULL, &ctx))
        return 1;
    fm_ctx_set_log(ctx, log_stderr, NULL);
    for (int im = 0; im < nm; im++)
    for (int ib = 0; ib < nb; ib++)
    for (int ip = 0; ip < np; ip++)
    for (int il = 0; il < nl; il++)
    for (int ig = 0; ig < ng; ig++) {
        enum fm_precision prec;
        if (!fm_precision_parse(precs[ip], &prec)) {
            fprintf(stderr, "gpu_bench: unknown precision '%s'\n", precs[ip]);
            return 2;
        }
        long batch = atol(batches[ib]);
        bool nhwc = strcmp(layouts[il], "nhwc") == 0;
        bool graph = atoi(graphs[ig]) != 0;
        printf("{\"tool\":\"flopmeter\",");
        json_str("model", models[im]);
        printf(",\"batch\":%ld,", batch);
        json_str("precision", precs[ip]);
        printf(",\"layout\":\"%s\",\"graph\":%d,", nhwc ? "nhwc" : "nchw", graph);
        /* storage follows the precision, so the prediction counts the bytes moved */
        struct fm_zoo_opts zo;
        fm_zoo_opts_init(&zo);
        zo.batch = batch;
        zo.with_loss = true;
        zo.dtype = prec == FM_PREC_FP16 ? FM_DTYPE_FP16 : prec == FM_PREC_BF16 ? FM_DTYPE_BF16
                                                                              : FM_DTYPE_FP32;
        struct fm_graph *g = NULL;
        struct fm_measurement *m = NULL;
        struct fm_measure_opts o;
        fm_measure_opts_init(&o);
        o.device = "cuda";
        o.precision = prec;
        o.channels_last = nhwc;
        o.cuda_graph = graph;
        o.per_layer = false;
        o.warmup = warmup;
        o.steps = steps;
        if (fm_zoo_build(ctx, models[im], &zo, &g) || fm_measure(ctx, g, &o, &m)) {
            json_str("error", fm_ctx_error(ctx));
            printf("}\n");
            fflush(stdout);
            fm_graph_free(g);
            continue;
        }
        double roof, paleo;
        const char *entry;
        predict(ctx, g, m->device_name, prec, &roof, &paleo, &entry);
        printf("\"step_ms\":%.4f,\"step_ms_min\":%.4f,\"step_ms_max\":%.4f,\"img_s\":%.2f,"
               "\"pred_roofline_ms\":%.4f,\"pred_paleo_ms\":%.4f,",
               m->step_ms_median, m->step_ms_min, m->step_ms_max,
               (double)batch / (m->step_ms_median * 1e-3), roof, paleo);
        json_num("loss_first", m->loss_first);
        json_num("loss_last", m->loss_last);
        printf("\"clock_mhz\":%.0f,\"steps\":%d,\"warmup\":%d,", m->clock_mhz, steps, warmup);
        json_str("device", m->device_name);
        printf(",");
        json_str("table_entry", entry);
        printf("}\n");
        fflush(stdout);
        fm_measurement_free(m);
        fm_graph_free(g);
    }
    fm_ctx_free(ctx);
    return 0;
}

static void stat(const char *name, const struct fm_probe_stat *s)
{
    printf("\"%s\":{\"min\":%.6g,\"median\":%.6g,\"max\":%.6g,\"datasheet\":%.6g},", name, s->min,
           s->median, s->max, s->theory);
}

static int probe(void)
{
    struct fm_ctx *ctx = NULL;
    if (fm_ctx_new(NULL, &ctx))
        return 1;
    struct fm_probe_opts o;
    memset(&o, 0, sizeof(o));
    o.device = "cuda";
    o.repetitions = 10;
    o.seconds = 0.5;
    struct fm_probe_result r;
    if (fm_probe_cuda(ctx, &o, &r)) {
        printf("{\"tool\":\"flopmeter\",\"probe\":1,");
        json_str("error", fm_ctx_error(ctx));
        printf("}\n");
        fm_ctx_free(ctx);
        return 1;
    }
    printf("{\"tool\":\"flopmeter\",\"probe\":1,");
    stat("fma_fp32", &r.fma_all[FM_PREC_FP32]);
    stat("fma_fp16", &r.fma_all[FM_PREC_FP16]);
    stat("fma_bf16", &r.fma_all[FM_PREC_BF16]);
    stat("fma_fp64", &r.fma_all[FM_PREC_FP64]);
    stat("gemm_fp32", &r.gemm[FM_PREC_FP32]);
    stat("gemm_tf32", &r.gemm[FM_PREC_TF32]);
    stat("gemm_fp16", &r.gemm[FM_PREC_FP16]);
    stat("gemm_bf16", &r.gemm[FM_PREC_BF16]);
    stat("copy_Bps", &r.bw_copy);
    stat("triad_Bps", &r.bw_triad);
    json_str("device", r.device_name);
    printf("}\n");
    fm_ctx_free(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 7 && strcmp(argv[1], "train") == 0)
        return train(argv + 2, argc - 2);
    if (argc == 2 && strcmp(argv[1], "probe") == 0)
        return probe();
    fprintf(stderr, "usage: gpu_bench train MODELS BATCHES PRECISIONS LAYOUTS GRAPHS [WARMUP STEPS]\n"
                    "       gpu_bench probe\n");
    return 2;
}
