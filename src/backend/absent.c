/* Stand-ins for the backends a build lacks, so the driver (measure.c) and the CLI need no
 * #ifdef of their own: a build with oneDNN or CUDA compiles its backend instead of these. */
#include "backend.h"

#include <string.h>

#ifndef FM_HAVE_DNNL
const struct fm_backend *fm_backend_cpu(void)
{
    return NULL;
}
#endif

#ifndef FM_HAVE_CUDA
const struct fm_backend *fm_backend_cuda(void)
{
    return NULL;
}

enum fm_status fm_probe_cuda(struct fm_ctx *ctx, const struct fm_probe_opts *opts,
                             struct fm_probe_result *out)
{
    (void)opts;
    (void)out;
    return fm_error(ctx, FM_ERR_UNSUPPORTED,
                    "this flopmeter was built without the CUDA backend: no GPU probe");
}

enum fm_status fm_probe_nccl(struct fm_ctx *ctx, struct fm_nccl_probe *out)
{
    memset(out, 0, sizeof(*out));
    return fm_error(ctx, FM_ERR_UNSUPPORTED,
                    "this flopmeter was built without the CUDA backend: no NCCL probe");
}
#endif
