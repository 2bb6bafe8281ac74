/* MODEL arguments: an ONNX model in memory or a path to an ONNX file goes to the ONNX frontend,
 * anything else is looked up among the built-in architectures. It only dispatches: both
 * frontends build the graph. */
#include "flopmeter.h"

#include <string.h>
#include <sys/stat.h>

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

enum fm_status fm_model_load(struct fm_ctx *ctx, const char *model, const struct fm_load_opts *opts,
                             struct fm_graph **out)
{
    *out = NULL;
    /* in memory: no file to look for, and a name that happens to be a built-in's stays a name */
    if (opts && opts->model_data) {
        if (opts->model_size == 0)
            return fm_error(ctx, FM_ERR_INVALID, "%s: the ONNX model in memory is empty (0 "
                            "bytes)", model && *model ? model : "model");
        return fm_onnx_load_buffer(ctx, opts->model_data, opts->model_size,
                                   model && *model ? model : "model", opts, out);
    }
    if (!model || !*model)
        return fm_error(ctx, FM_ERR_INVALID, "no model given: name a built-in model "
                                             "(flopmeter models) or an .onnx file");
    struct stat sb;
    bool exists = stat(model, &sb) == 0;
    bool is_file = exists && S_ISREG(sb.st_mode);
    /* a directory or a device is named as such, not as a missing file or an unknown model */
    bool not_regular = exists && !is_file && !fm_zoo_find(model);
    if (not_regular)
        return fm_error(ctx, FM_ERR_IO, "%s: not a regular file (give an .onnx file or a "
                        "built-in model name, see flopmeter models)", model);
    if (ends_with(model, ".onnx") || (is_file && !fm_zoo_find(model))) {
        if (!is_file)
            return fm_error(ctx, FM_ERR_IO, "%s: no such file", model);
        return fm_onnx_load_file(ctx, model, opts, out);
    }
    if (opts->n_bindings)
        return fm_error(ctx, FM_ERR_INVALID,
                        "--input NAME=DIMS binds inputs of ONNX files; for a built-in model use "
                        "--input CxHxW");
    return fm_zoo_build(ctx, model, &opts->zoo, out);
}
