/* EfficientNet B0..B7 as torchvision defines them (torchvision/models/efficientnet.py): the B0
 * stages of MBConv blocks (1x1 expand, depthwise kxk, squeeze-excitation with SiLU and Sigmoid,
 * 1x1 project; SiLU after the first two), widths scaled by _make_divisible(c * width, 8) and
 * depths by ceil(n * depth). Quirks kept as torchvision has them: the squeeze width is a
 * quarter of the block's *input* channels (not of the expanded ones), and B5..B7 use BatchNorm
 * eps 0.001 where B0..B4 use 1e-5.
 *
 * Not modelled: StochasticDepth on the residual branch. In training torchvision multiplies that
 * branch by a per-sample Bernoulli draw (N*C*H*W muls per block forward and backward); in
 * inference it is the identity. flopmeter's graph has one form for both, so it is left out and
 * docs/zoo.md says so. Variant: 0..7. */
#include "nn.h"

#include <math.h>
#include <stdio.h>

struct mb_stage {
    int64_t expand, k, stride, in, out, layers;   /* Table 1 of the EfficientNet paper */
};

static fm_tid mbconv(struct fm_nn *nn, fm_tid x, int64_t expand, int64_t k, int64_t stride,
                     int64_t out_ch, double eps)
{
    int64_t in = fm_nn_channels(nn, x);
    int64_t expanded = fm_nn_make_divisible((double)(in * expand), 8);
    fm_tid out = x;
    int i = 0;
    char name[16];
    fm_nn_push(nn, "block");
    if (expanded != in) {
        snprintf(name, sizeof(name), "%d", i++);
        out = fm_nn_conv_bn_act(nn, name, out, expanded, 1, 1, 1, eps, FM_OP_SILU);
    }
    snprintf(name, sizeof(name), "%d", i++);
    out = fm_nn_conv_bn_act(nn, name, out, expanded, k, stride, expanded, eps, FM_OP_SILU);
    snprintf(name, sizeof(name), "%d", i++);
    out = fm_nn_squeeze_excitation(nn, name, out, in / 4 > 1 ? in / 4 : 1, FM_OP_SILU,
                                   FM_OP_SIGMOID);
    snprintf(name, sizeof(name), "%d", i++);
    out = fm_nn_conv_bn_act(nn, name, out, out_ch, 1, 1, 1, eps, FM_OP_IDENTITY);
    fm_nn_pop(nn);
    if (stride == 1 && in == out_ch)
        out = fm_nn_add(nn, "add", out, x);   /* result += input (stochastic depth left out) */
    return out;
}

fm_tid fm_zoo_efficientnet(struct fm_nn *nn, fm_tid x, int64_t classes, int variant)
{
    static const struct mb_stage b0[] = {
        {1, 3, 1, 32, 16, 1}, {6, 3, 2, 16, 24, 2},  {6, 5, 2, 24, 40, 2},  {6, 3, 2, 40, 80, 3},
        {6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4}, {6, 3, 1, 192, 320, 1},
    };
    /* width_mult, depth_mult, dropout of efficientnet_b0 .. b7 */
    static const double scale[8][3] = {
        {1.0, 1.0, 0.2}, {1.0, 1.1, 0.2}, {1.1, 1.2, 0.3}, {1.2, 1.4, 0.3},
        {1.4, 1.8, 0.4}, {1.6, 2.2, 0.4}, {1.8, 2.6, 0.5}, {2.0, 3.1, 0.5},
    };
    if (variant < 0 || variant > 7) {
        nn->st = fm_error(nn->ctx, FM_ERR_NOT_FOUND, "efficientnet variant b%d does not exist",
                          variant);
        return FM_NONE;
    }
    double width = scale[variant][0], depth = scale[variant][1];
    double eps = variant >= 5 ? 0.001 : 1e-5;
    size_t nstages = sizeof(b0) / sizeof(b0[0]);
    char name[16];
    fm_nn_push(nn, "features");
    x = fm_nn_conv_bn_act(nn, "0", x, fm_nn_make_divisible(b0[0].in * width, 8), 3, 2, 1, eps,
                          FM_OP_SILU);
    for (size_t s = 0; s < nstages; s++) {
        int64_t out_ch = fm_nn_make_divisible(b0[s].out * width, 8);
        int64_t layers = (int64_t)ceil((double)b0[s].layers * depth);
        fm_nn_push(nn, "%d", (int)s + 1);
        for (int64_t b = 0; b < layers; b++) {
            fm_nn_push(nn, "%d", (int)b);
            x = mbconv(nn, x, b0[s].expand, b0[s].k, b == 0 ? b0[s].stride : 1, out_ch, eps);
            fm_nn_pop(nn);
        }
        fm_nn_pop(nn);
    }
    snprintf(name, sizeof(name), "%d", (int)nstages + 1);
    x = fm_nn_conv_bn_act(nn, name, x, 4 * fm_nn_channels(nn, x), 1, 1, 1, eps, FM_OP_SILU);
    fm_nn_pop(nn);
    x = fm_nn_adaptive_avgpool(nn, "avgpool", x, 1, 1);
    x = fm_nn_flatten(nn, "flatten", x);
    fm_nn_push(nn, "classifier");
    x = fm_nn_dropout(nn, "0", x, scale[variant][2]);
    x = fm_nn_linear(nn, "1", x, classes, true);
    fm_nn_pop(nn);
    return x;
}
