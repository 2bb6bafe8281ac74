/* Stands in for the ONNX frontend in a build without protobuf-c: every call says so. */
#include "flopmeter.h"

enum fm_status fm_onnx_load_file(struct fm_ctx *ctx, const char *path,
                                 const struct fm_load_opts *opts, struct fm_graph **out)
{
    (void)opts;
    *out = NULL;
    return fm_error(ctx, FM_ERR_UNSUPPORTED,
                    "%s: this flopmeter was built without ONNX support (install "
                    "libprotobuf-c-dev, protobuf-c-compiler and libonnx-dev, then rebuild)",
                    path);
}

enum fm_status fm_onnx_load_buffer(struct fm_ctx *ctx, const void *data, size_t size,
                                   const char *name, const struct fm_load_opts *opts,
                                   struct fm_graph **out)
{
    (void)data;
    (void)size;
    return fm_onnx_load_file(ctx, name ? name : "buffer", opts, out);
}

bool fm_onnx_op_known(const char *domain, const char *op_type)
{
    (void)domain;
    (void)op_type;
    return false;
}
