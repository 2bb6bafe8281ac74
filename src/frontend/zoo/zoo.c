/* The table of built-in architectures and the code that builds one: input tensor, the family's
 * builder, and (for training) the cross-entropy loss against an int64 label tensor. The family
 * builders live one per file next to this one. */
#include "nn.h"
#include "../../core/internal.h"

#include <string.h>
#include <strings.h>

struct zoo_row {
    struct fm_zoo_entry pub;
    fm_zoo_builder build;
    int variant;
};

/* Default input sizes are the evaluation crop of each model's default weights in torchvision's
 * metadata (ImageClassification crop_size): 299 for inception_v3, 240..600 for
 * efficientnet_b1..b7, 224 for the rest. */
#define ROW(NAME, FAMILY, DESC, HW, FN, VAR) {{NAME, FAMILY, DESC, HW}, FN, VAR}
static const struct zoo_row zoo[] = {
    ROW("alexnet", "alexnet", "AlexNet (torchvision, one-GPU variant)", 224, fm_zoo_alexnet, 0),
    ROW("vgg11", "vgg", "VGG-11", 224, fm_zoo_vgg, 11),
    ROW("vgg11_bn", "vgg", "VGG-11 with BatchNorm", 224, fm_zoo_vgg, 111),
    ROW("vgg13", "vgg", "VGG-13", 224, fm_zoo_vgg, 13),
    ROW("vgg13_bn", "vgg", "VGG-13 with BatchNorm", 224, fm_zoo_vgg, 113),
    ROW("vgg16", "vgg", "VGG-16", 224, fm_zoo_vgg, 16),
    ROW("vgg16_bn", "vgg", "VGG-16 with BatchNorm", 224, fm_zoo_vgg, 116),
    ROW("vgg19", "vgg", "VGG-19", 224, fm_zoo_vgg, 19),
    ROW("vgg19_bn", "vgg", "VGG-19 with BatchNorm", 224, fm_zoo_vgg, 119),
    ROW("resnet18", "resnet", "ResNet-18", 224, fm_zoo_resnet, 18),
    ROW("resnet34", "resnet", "ResNet-34", 224, fm_zoo_resnet, 34),
    ROW("resnet50", "resnet", "ResNet-50 (v1.5: stride in the 3x3 conv)", 224, fm_zoo_resnet, 50),
    ROW("resnet101", "resnet", "ResNet-101", 224, fm_zoo_resnet, 101),
    ROW("resnet152", "resnet", "ResNet-152", 224, fm_zoo_resnet, 152),
    ROW("wide_resnet50_2", "resnet", "Wide ResNet-50-2", 224, fm_zoo_resnet, 502),
    ROW("resnext50_32x4d", "resnet", "ResNeXt-50 32x4d", 224, fm_zoo_resnet, 5032),
    ROW("mobilenet_v2", "mobilenet", "MobileNetV2", 224, fm_zoo_mobilenet_v2, 0),
    ROW("mobilenet_v3_large", "mobilenet", "MobileNetV3-Large", 224, fm_zoo_mobilenet_v3, 1),
    ROW("mobilenet_v3_small", "mobilenet", "MobileNetV3-Small", 224, fm_zoo_mobilenet_v3, 0),
    ROW("efficientnet_b0", "efficientnet", "EfficientNet-B0", 224, fm_zoo_efficientnet, 0),
    ROW("efficientnet_b1", "efficientnet", "EfficientNet-B1", 240, fm_zoo_efficientnet, 1),
    ROW("efficientnet_b2", "efficientnet", "EfficientNet-B2", 288, fm_zoo_efficientnet, 2),
    ROW("efficientnet_b3", "efficientnet", "EfficientNet-B3", 300, fm_zoo_efficientnet, 3),
    ROW("efficientnet_b4", "efficientnet", "EfficientNet-B4", 380, fm_zoo_efficientnet, 4),
    ROW("efficientnet_b5", "efficientnet", "EfficientNet-B5", 456, fm_zoo_efficientnet, 5),
    ROW("efficientnet_b6", "efficientnet", "EfficientNet-B6", 528, fm_zoo_efficientnet, 6),
    ROW("efficientnet_b7", "efficientnet", "EfficientNet-B7", 600, fm_zoo_efficientnet, 7),
    ROW("googlenet", "inception", "GoogLeNet (Inception v1, no auxiliary heads)", 224,
        fm_zoo_googlenet, 0),
    ROW("inception_v3", "inception", "Inception v3 (no auxiliary head)", 299,
        fm_zoo_inception_v3, 0),
};
#define ZOO_COUNT (sizeof(zoo) / sizeof(zoo[0]))

void fm_zoo_opts_init(struct fm_zoo_opts *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->batch = 1;
    opts->classes = 1000;
    opts->dtype = FM_DTYPE_FP32;
}

size_t fm_zoo_count(void)
{
    return ZOO_COUNT;
}

const struct fm_zoo_entry *fm_zoo_get(size_t index)
{
    return index < ZOO_COUNT ? &zoo[index].pub : NULL;
}

static const struct zoo_row *find_row(const char *name)
{
    for (size_t i = 0; i < ZOO_COUNT; i++) {
        if (strcasecmp(zoo[i].pub.name, name) == 0)
            return &zoo[i];
    }
    return NULL;
}

const struct fm_zoo_entry *fm_zoo_find(const char *name)
{
    const struct zoo_row *r = name ? find_row(name) : NULL;
    return r ? &r->pub : NULL;
}

size_t fm_zoo_suggest(const char *name, const char **out, size_t n)
{
    size_t dist[ZOO_COUNT], idx[ZOO_COUNT];
    for (size_t i = 0; i < ZOO_COUNT; i++) {
        dist[i] = fm_edit_distance(name, zoo[i].pub.name);
        /* a name that starts like the query is a strong hint ("resnet" -> resnet18...) */
        if (strncasecmp(zoo[i].pub.name, name, strlen(name)) == 0)
            dist[i] = dist[i] / 4;
        idx[i] = i;
    }
    for (size_t i = 1; i < ZOO_COUNT; i++) {   /* insertion sort by distance, stable */
        size_t k = idx[i];
        size_t j = i;
        while (j > 0 && dist[idx[j - 1]] > dist[k]) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = k;
    }
    size_t m = 0;
    size_t best = ZOO_COUNT ? dist[idx[0]] : 0;
    for (size_t i = 0; i < ZOO_COUNT && m < n; i++) {
        if (dist[idx[i]] > best + 3)
            break;
        out[m++] = zoo[idx[i]].pub.name;
    }
    return m;
}

enum fm_status fm_zoo_build(struct fm_ctx *ctx, const char *name, const struct fm_zoo_opts *opts,
                            struct fm_graph **out)
{
    *out = NULL;
    const struct zoo_row *row = name ? find_row(name) : NULL;
    if (!row) {
        const char *near[3];
        size_t k = fm_zoo_suggest(name ? name : "", near, 3);
        char hint[256] = "";
        size_t len = 0;
        for (size_t i = 0; i < k; i++)
            len += (size_t)snprintf(hint + len, sizeof(hint) - len, "%s%s", i ? ", " : "", near[i]);
        return fm_error(ctx, FM_ERR_NOT_FOUND,
                        "unknown model '%s'%s%s%s (flopmeter models lists them all; an ONNX file "
                        "must end in .onnx)",
                        name ? name : "", k ? ": did you mean " : "", hint, k ? "?" : "");
    }
    struct fm_zoo_opts o;
    if (opts)
        o = *opts;
    else
        fm_zoo_opts_init(&o);
    if (o.batch <= 0)
        return fm_error(ctx, FM_ERR_INVALID, "batch size must be positive, got %lld",
                        (long long)o.batch);
    if (o.classes <= 0)
        return fm_error(ctx, FM_ERR_INVALID, "number of classes must be positive, got %lld",
                        (long long)o.classes);
    if (!fm_dtype_is_float(o.dtype))
        return fm_error(ctx, FM_ERR_INVALID, "dtype %s is not a floating-point type",
                        fm_dtype_name(o.dtype));
    struct fm_shape in = {4, {o.batch, 3, row->pub.default_hw, row->pub.default_hw}};
    if (o.input.rank != 0) {
        if (o.input.rank != 3)
            return fm_error(ctx, FM_ERR_INVALID,
                            "fm_zoo_opts.input for a built-in model is CxHxW (3 dims), got %d dims",
                            o.input.rank);
        /* 224x224x3 is an image as PIL and NumPy lay it out (HxWxC); the models take CxHxW, and
         * 224 input channels would build a different network without a word */
        if (o.input.dims[2] <= 4 && o.input.dims[0] >= 16 && o.input.dims[1] >= 16)
            return fm_error(ctx, FM_ERR_INVALID,
                            "fm_zoo_opts.input %lldx%lldx%lld looks like HxWxC; built-in models "
                            "take CxHxW: fm_zoo_opts.input %lldx%lldx%lld",
                            (long long)o.input.dims[0], (long long)o.input.dims[1],
                            (long long)o.input.dims[2], (long long)o.input.dims[2],
                            (long long)o.input.dims[0], (long long)o.input.dims[1]);
        in.dims[1] = o.input.dims[0];
        in.dims[2] = o.input.dims[1];
        in.dims[3] = o.input.dims[2];
    }
    struct fm_graph *g = NULL;
    enum fm_status st = fm_graph_new(ctx, row->pub.name, &g);
    if (st)
        return st;
    fm_tid x = FM_NONE;
    st = fm_graph_add_tensor(g, "input", FM_ROLE_INPUT, o.dtype, &in, &x);
    if (st)
        goto fail;
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, o.dtype);
    fm_tid logits = row->build(&nn, x, o.classes, row->variant);
    if (nn.st) {
        st = nn.st;
        goto fail;
    }
    if (logits == FM_NONE) {
        st = fm_error(ctx, FM_ERR_GRAPH, "%s: builder returned no output", row->pub.name);
        goto fail;
    }
    if (o.with_loss) {
        /* the same policy as every other model: the logits (N, classes) get cross-entropy */
        struct fm_loss_info li;
        st = fm_graph_add_loss(g, logits, &li);
        if (st)
            goto fail;
    }
    st = fm_graph_finalize(g);
    if (st)
        goto fail;
    *out = g;
    return FM_OK;
fail:
    fm_graph_free(g);
    return st;
}
