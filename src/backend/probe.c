/* fm_probe: runs the probe of a device string ("cpu" here, "cuda[:N]" in the CUDA backend) and
 * turns a result into a measured device entry that roofline, predict and utilization accept.
 * The probes themselves are in probe_cpu.c and the CUDA backend. */
#include "backend.h"
#include "../core/internal.h"

#include <string.h>

void fm_probe_opts_init(struct fm_probe_opts *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->device = "cpu";
    opts->repetitions = 5;
    opts->seconds = 0.2;
}

enum fm_status fm_probe(struct fm_ctx *ctx, const struct fm_probe_opts *opts,
                        struct fm_probe_result *out)
{
    if (opts->repetitions < 0 || opts->seconds < 0 || opts->threads < 0)
        return fm_error(ctx, FM_ERR_INVALID, "probe: repetitions, seconds and threads must not be "
                                             "negative");
    struct fm_target t;
    enum fm_status st = fm_target_parse(ctx, opts->device, &t);
    if (st)   /* the message names the string; a string that is no device at all is a bad option */
        return st == FM_ERR_NOT_FOUND ? FM_ERR_INVALID : st;
    st = t.kind == FM_TARGET_CPU ? fm_probe_cpu(ctx, opts, out) : fm_probe_cuda(ctx, opts, out);
    const char *kind = t.kind == FM_TARGET_CPU ? "cpu" : "gpu";
    if (!st)
        snprintf(out->kind, sizeof(out->kind), "%s", kind);
    return st;
}

enum fm_status fm_probe_to_device(const struct fm_probe_result *r, struct fm_device *out)
{
    memset(out, 0, sizeof(*out));
    if (!r->device_name[0])
        return FM_ERR_INVALID;
    out->name = r->device_name;
    out->aliases = "";
    out->kind = r->kind[0] ? r->kind : "cpu";
    out->arch = r->arch[0] ? r->arch : NULL;
    for (int p = 0; p < FM_PREC_COUNT; p++) {
        out->peak_vector[p] = r->fma_all[p].median;
        /* a BLAS that beats the vector FMA peak must be using matrix units (tensor cores) */
        if (r->gemm[p].median > r->fma_all[p].median)
            out->peak_tensor[p] = r->gemm[p].median;
    }
    out->mem_bw = r->bw_triad.median > r->bw_copy.median ? r->bw_triad.median
                                                         : r->bw_copy.median;
    out->mem_bytes = (double)r->mem_bytes;
    out->l2_bytes = (double)r->cache_bytes;
    out->boost_mhz = r->clock_mhz;
    out->units = r->cores > 0 ? r->cores : r->threads;
    out->source = "measured by flopmeter probe: medians over repetitions (FMA peaks on all "
                  "threads, memory bandwidth the larger of copy and triad)";
    out->measured = true;
    return FM_OK;
}
