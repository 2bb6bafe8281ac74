/* libFuzzer target: the Nsight readers on arbitrary text, the first byte choosing Nsight Compute
 * (even) or Nsight Systems (odd). Checks, on top of the sanitizers: a rejected file leaves a
 * message and no result; an accepted one has kernels (rows) whose known figures are finite and
 * non-negative, totals that are known only when every kernel's figure is, and renders in every
 * format without a write error. */
#include "fuzz_common.h"

#include <math.h>

static void check_fig(const struct fm_prof_figure *f)
{
    if (!f->known)
        return;
    FUZZ_CHECK(isfinite(f->value) && f->value >= 0, "a known figure of %g", f->value);
    FUZZ_CHECK(!f->exact || !f->derived, "a derived figure marked exact");
}

static void check_figs(const struct fm_ncu_figures *g)
{
    for (int p = 0; p < FM_NCU_PREC_COUNT; p++)
        check_fig(&g->flops[p]);
    check_fig(&g->tensor_flops);
    check_fig(&g->tensor_inst);
    check_fig(&g->dram_bytes);
    check_fig(&g->time_s);
}

static void render_all(void (*render)(FILE *, const void *, enum fm_format), const void *x)
{
    for (int k = 0; k < FM_FORMAT_COUNT; k++) {
        FILE *f = fopen("/dev/null", "w");
        if (!f)
            return;
        render(f, x, (enum fm_format)k);
        fclose(f);
    }
}

static void render_ncu(FILE *f, const void *x, enum fm_format fmt)
{
    struct fm_report_opts ro;
    fm_report_opts_init(&ro);
    ro.format = fmt;
    FUZZ_CHECK(fm_report_ncu(f, x, NULL, NULL, &ro) == FM_OK, "rendering failed");
}

static void render_nsys(FILE *f, const void *x, enum fm_format fmt)
{
    struct fm_report_opts ro;
    fm_report_opts_init(&ro);
    ro.format = fmt;
    FUZZ_CHECK(fm_report_nsys(f, x, &ro) == FM_OK, "rendering failed");
}

int fm_fuzz_ncu(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    struct fm_ctx *ctx = NULL;
    if (fm_ctx_new(NULL, &ctx))
        return 0;
    const char *text = (const char *)data + 1;
    if (data[0] % 2 == 0) {
        struct fm_ncu_profile *p = NULL;
        enum fm_status st = fm_ncu_read_buffer(ctx, text, size - 1, "fuzz.csv", &p);
        fuzz_check_status(ctx, st);
        FUZZ_CHECK(st ? p == NULL : p != NULL, "result and status disagree");
        if (p) {
            FUZZ_CHECK(p->n_kernels > 0, "a profile without kernels was accepted");
            bool all = true;
            for (size_t i = 0; i < p->n_kernels; i++) {
                check_figs(&p->kernels[i].fig);
                all = all && p->kernels[i].fig.dram_bytes.known;
                FUZZ_CHECK(p->kernels[i].name && p->kernels[i].nvtx, "a kernel without strings");
            }
            check_figs(&p->totals);
            FUZZ_CHECK(p->totals.dram_bytes.known == all, "a total known with a kernel missing");
            render_all(render_ncu, p);
            fm_ncu_profile_free(p);
        }
    } else {
        struct fm_nsys_summary *s = NULL;
        enum fm_status st = fm_nsys_read_buffer(ctx, text, size - 1, "fuzz.csv", &s);
        fuzz_check_status(ctx, st);
        FUZZ_CHECK(st ? s == NULL : s != NULL, "result and status disagree");
        if (s) {
            FUZZ_CHECK(s->n_rows > 0, "a summary without rows was accepted");
            for (size_t i = 0; i < s->n_rows; i++)
                FUZZ_CHECK(s->rows[i].total_s >= 0 && s->rows[i].name && s->rows[i].style &&
                           s->rows[i].kernel, "a bad row");
            bool gpu = s->kind == FM_NSYS_NVTX_GPU || s->kind == FM_NSYS_NVTX_KERNELS;
            size_t in_ranges = 0;
            for (size_t i = 0; i < s->n_ranges; i++) {
                FUZZ_CHECK(s->ranges[i].name && s->ranges[i].gpu_s >= 0, "a bad range");
                in_ranges += s->ranges[i].rows;
            }
            FUZZ_CHECK(gpu ? s->n_ranges > 0 && in_ranges == s->n_rows : s->n_ranges == 0,
                       "the ranges do not hold every row once");
            render_all(render_nsys, s);
            fm_nsys_summary_free(s);
        }
    }
    fm_ctx_free(ctx);
    return 0;
}

FUZZ_ENTRY(fm_fuzz_ncu)
