/* MobileNetV2 and MobileNetV3 (large and small) as torchvision defines them
 * (torchvision/models/mobilenetv2.py, mobilenetv3.py), width multiplier 1.0, no dilation:
 * inverted residual blocks of 1x1 expand, depthwise kxk and 1x1 project convolutions, each a
 * Conv2dNormActivation (conv without bias, BatchNorm, ReLU6 / ReLU / Hardswish), with the
 * residual add when stride is 1 and channels match; V3 adds squeeze-excitation (ReLU,
 * Hardsigmoid) in some blocks. BatchNorm eps is 1e-5 in V2 and 0.001 in V3, as torchvision has
 * it. Variant of mobilenet_v3: 1 = large, 0 = small. */
#include "nn.h"

#include <stdio.h>

/* ---- V2 ---- */

static fm_tid v2_block(struct fm_nn *nn, fm_tid x, int64_t oup, int64_t stride, int64_t t)
{
    int64_t inp = fm_nn_channels(nn, x);
    int64_t hidden = inp * t;   /* int(round(inp * expand_ratio)) for integer t */
    fm_tid out = x;
    int i = 0;
    char name[16];
    fm_nn_push(nn, "conv");
    if (t != 1) {
        snprintf(name, sizeof(name), "%d", i++);
        out = fm_nn_conv_bn_act(nn, name, out, hidden, 1, 1, 1, 1e-5, FM_OP_CLIP);
    }
    snprintf(name, sizeof(name), "%d", i++);
    out = fm_nn_conv_bn_act(nn, name, out, hidden, 3, stride, hidden, 1e-5, FM_OP_CLIP);
    snprintf(name, sizeof(name), "%d", i++);
    out = fm_nn_conv(nn, name, out, oup, 1, 1, 0, 1, false);
    snprintf(name, sizeof(name), "%d", i++);
    out = fm_nn_bn(nn, name, out, 1e-5);
    fm_nn_pop(nn);
    if (stride == 1 && inp == oup)
        out = fm_nn_add(nn, "add", x, out);   /* x + self.conv(x) */
    return out;
}

fm_tid fm_zoo_mobilenet_v2(struct fm_nn *nn, fm_tid x, int64_t classes, int variant)
{
    (void)variant;
    static const int64_t setting[][4] = {
        /* t, c, n, s */
        {1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
        {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1},
    };
    int f = 0;   /* index in features */
    char name[16];
    fm_nn_push(nn, "features");
    snprintf(name, sizeof(name), "%d", f++);
    x = fm_nn_conv_bn_act(nn, name, x, 32, 3, 2, 1, 1e-5, FM_OP_CLIP);
    for (size_t r = 0; r < sizeof(setting) / sizeof(setting[0]); r++) {
        for (int64_t i = 0; i < setting[r][2]; i++) {
            fm_nn_push(nn, "%d", f++);
            x = v2_block(nn, x, setting[r][1], i == 0 ? setting[r][3] : 1, setting[r][0]);
            fm_nn_pop(nn);
        }
    }
    snprintf(name, sizeof(name), "%d", f++);
    x = fm_nn_conv_bn_act(nn, name, x, 1280, 1, 1, 1, 1e-5, FM_OP_CLIP);
    fm_nn_pop(nn);
    /* torchvision calls nn.functional.adaptive_avg_pool2d here, not a module */
    x = fm_nn_adaptive_avgpool(nn, "adaptive_avg_pool2d", x, 1, 1);
    x = fm_nn_flatten(nn, "flatten", x);
    fm_nn_push(nn, "classifier");
    x = fm_nn_dropout(nn, "0", x, 0.2);
    x = fm_nn_linear(nn, "1", x, classes, true);
    fm_nn_pop(nn);
    return x;
}

/* ---- V3 ---- */

struct v3_cfg {   /* one row of Tables 1 and 2 of the MobileNetV3 paper, as torchvision lists it */
    int64_t in, k, exp, out;
    bool se, hs;   /* squeeze-excitation; Hardswish (else ReLU) */
    int64_t stride;
};

static fm_tid v3_block(struct fm_nn *nn, fm_tid x, const struct v3_cfg *c)
{
    enum fm_op act = c->hs ? FM_OP_HARDSWISH : FM_OP_RELU;
    const double eps = 0.001;
    fm_tid out = x;
    int i = 0;
    char name[16];
    fm_nn_push(nn, "block");
    if (c->exp != c->in) {
        snprintf(name, sizeof(name), "%d", i++);
        out = fm_nn_conv_bn_act(nn, name, out, c->exp, 1, 1, 1, eps, act);
    }
    snprintf(name, sizeof(name), "%d", i++);
    out = fm_nn_conv_bn_act(nn, name, out, c->exp, c->k, c->stride, c->exp, eps, act);
    if (c->se) {
        snprintf(name, sizeof(name), "%d", i++);
        out = fm_nn_squeeze_excitation(nn, name, out, fm_nn_make_divisible((double)(c->exp / 4), 8),
                                       FM_OP_RELU, FM_OP_HARDSIGMOID);
    }
    snprintf(name, sizeof(name), "%d", i++);
    out = fm_nn_conv_bn_act(nn, name, out, c->out, 1, 1, 1, eps, FM_OP_IDENTITY);
    fm_nn_pop(nn);
    if (c->stride == 1 && c->in == c->out)
        out = fm_nn_add(nn, "add", out, x);   /* result += input */
    return out;
}

fm_tid fm_zoo_mobilenet_v3(struct fm_nn *nn, fm_tid x, int64_t classes, int variant)
{
    static const struct v3_cfg large[] = {
        {16, 3, 16, 16, false, false, 1},    {16, 3, 64, 24, false, false, 2},
        {24, 3, 72, 24, false, false, 1},    {24, 5, 72, 40, true, false, 2},
        {40, 5, 120, 40, true, false, 1},    {40, 5, 120, 40, true, false, 1},
        {40, 3, 240, 80, false, true, 2},    {80, 3, 200, 80, false, true, 1},
        {80, 3, 184, 80, false, true, 1},    {80, 3, 184, 80, false, true, 1},
        {80, 3, 480, 112, true, true, 1},    {112, 3, 672, 112, true, true, 1},
        {112, 5, 672, 160, true, true, 2},   {160, 5, 960, 160, true, true, 1},
        {160, 5, 960, 160, true, true, 1},
    };
    static const struct v3_cfg small[] = {
        {16, 3, 16, 16, true, false, 2},     {16, 3, 72, 24, false, false, 2},
        {24, 3, 88, 24, false, false, 1},    {24, 5, 96, 40, true, true, 2},
        {40, 5, 240, 40, true, true, 1},     {40, 5, 240, 40, true, true, 1},
        {40, 5, 120, 48, true, true, 1},     {48, 5, 144, 48, true, true, 1},
        {48, 5, 288, 96, true, true, 2},     {96, 5, 576, 96, true, true, 1},
        {96, 5, 576, 96, true, true, 1},
    };
    if (variant != 0 && variant != 1) {
        nn->st = fm_error(nn->ctx, FM_ERR_NOT_FOUND, "mobilenet_v3 variant %d does not exist",
                          variant);
        return FM_NONE;
    }
    const struct v3_cfg *cfg = variant ? large : small;
    size_t n = variant ? sizeof(large) / sizeof(large[0]) : sizeof(small) / sizeof(small[0]);
    int64_t last_channel = variant ? 1280 : 1024;
    int f = 0;
    char name[16];
    fm_nn_push(nn, "features");
    snprintf(name, sizeof(name), "%d", f++);
    x = fm_nn_conv_bn_act(nn, name, x, cfg[0].in, 3, 2, 1, 0.001, FM_OP_HARDSWISH);
    for (size_t i = 0; i < n; i++) {
        fm_nn_push(nn, "%d", f++);
        x = v3_block(nn, x, &cfg[i]);
        fm_nn_pop(nn);
    }
    snprintf(name, sizeof(name), "%d", f++);
    x = fm_nn_conv_bn_act(nn, name, x, 6 * cfg[n - 1].out, 1, 1, 1, 0.001, FM_OP_HARDSWISH);
    fm_nn_pop(nn);
    x = fm_nn_adaptive_avgpool(nn, "avgpool", x, 1, 1);
    x = fm_nn_flatten(nn, "flatten", x);
    fm_nn_push(nn, "classifier");
    x = fm_nn_linear(nn, "0", x, last_channel, true);
    x = fm_nn_act(nn, "1", FM_OP_HARDSWISH, x);
    x = fm_nn_dropout(nn, "2", x, 0.2);
    x = fm_nn_linear(nn, "3", x, classes, true);
    fm_nn_pop(nn);
    return x;
}
