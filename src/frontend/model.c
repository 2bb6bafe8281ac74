/* MODEL arguments: an ONNX model in memory or a path to an ONNX file goes to the ONNX frontend,
 * anything else is looked up among the built-in architectures. It only dispatches: both
 * frontends build the graph. */
#include "flopmeter.h"
#include "llm/llm.h"
#include "../core/internal.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

enum fm_status fm_llm_config_load(struct fm_ctx *ctx, const char *model,
                                  const struct fm_load_opts *opts, struct fm_llm_config *cfg)
{
    if (!opts || !opts->config)
        return fm_llm_config_builtin(ctx, model, cfg);
    char *text = NULL;
    size_t len = 0;
    enum fm_status st = fm_read_text(ctx, opts->config, "config file", 16, &text, &len);
    if (!st)
        st = fm_llm_config_parse(ctx, text, len, opts->config, cfg);
    fm_dealloc(ctx, text);
    return st;
}

/* A language model: the config.json at opts->config, or the built-in config named model. */
static enum fm_status load_llm(struct fm_ctx *ctx, const char *model,
                               const struct fm_load_opts *opts, struct fm_graph **out)
{
    struct fm_llm_config *cfg = fm_alloc(ctx, sizeof(*cfg));
    if (!cfg)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory reading a language model's config");
    enum fm_status st = fm_llm_config_load(ctx, model, opts, cfg);
    if (!st) {
        struct fm_llm_build_opts bo;
        fm_llm_build_opts_init(&bo);
        bo.batch = opts->zoo.batch;
        bo.seq = opts->seq;
        bo.decoder_seq = opts->decoder_seq;
        bo.dtype = opts->zoo.dtype;
        bo.with_loss = opts->zoo.with_loss;
        bo.decode = opts->decode;
        st = fm_llm_build(ctx, cfg, &bo, out);
    }
    fm_dealloc(ctx, cfg);
    return st;
}

static bool is_llm_builtin(const char *name)
{
    for (size_t i = 0; name && i < fm_llm_builtin_count(); i++) {
        if (strcasecmp(fm_llm_builtin_name(i), name) == 0)
            return true;
    }
    return false;
}

bool fm_model_is_llm(const char *model, const struct fm_load_opts *load)
{
    return (load && load->config && !load->model_data) || is_llm_builtin(model);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

enum fm_status fm_model_load(struct fm_ctx *ctx, const char *model, const struct fm_load_opts *opts,
                             struct fm_graph **out)
{
    *out = NULL;
    struct fm_load_opts defaults;
    if (!opts) {
        fm_load_opts_init(&defaults);
        opts = &defaults;
    }
    /* in memory: no file to look for, and a name that happens to be a built-in's stays a name */
    if (opts && opts->model_data) {
        if (opts->model_size == 0)
            return fm_error(ctx, FM_ERR_INVALID, "%s: the ONNX model in memory is empty (0 "
                            "bytes)", model && *model ? model : "model");
        return fm_onnx_load_buffer(ctx, opts->model_data, opts->model_size,
                                   model && *model ? model : "model", opts, out);
    }
    if (fm_model_is_llm(model, opts))
        return load_llm(ctx, model, opts, out);
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
                        "fm_load_opts.bindings NAME=DIMS binds inputs of ONNX files; for a "
                        "built-in model use fm_zoo_opts.input CxHxW");
    /* an unknown name within two edits of a language model's ("llama-3-9b"): its suggestions,
     * not the image classifiers' */
    if (!fm_zoo_find(model)) {
        size_t llm_d = SIZE_MAX, zoo_d = SIZE_MAX;
        for (size_t i = 0; i < fm_llm_builtin_count(); i++) {
            size_t d = fm_edit_distance(model, fm_llm_builtin_name(i));
            llm_d = d < llm_d ? d : llm_d;
        }
        const char *near = NULL;
        if (fm_zoo_suggest(model, &near, 1))
            zoo_d = fm_edit_distance(model, near);
        if (llm_d <= 2 && llm_d < zoo_d) {
            struct fm_llm_config *cfg = fm_alloc(ctx, sizeof(*cfg));
            if (!cfg)
                return fm_error(ctx, FM_ERR_NOMEM, "out of memory");
            enum fm_status st = fm_llm_config_builtin(ctx, model, cfg);
            fm_dealloc(ctx, cfg);
            return st;
        }
    }
    return fm_zoo_build(ctx, model, &opts->zoo, out);
}
