/* ResNet family as torchvision defines it (torchvision/models/resnet.py): resnet18/34
 * (BasicBlock), resnet50/101/152 (Bottleneck, v1.5: the stride sits on the 3x3 conv),
 * wide_resnet50_2 (width_per_group 128) and resnext50_32x4d (32 groups x 4). Layer names are
 * torchvision's module paths; the reused ReLU module is numbered relu, relu_1, ... as torch.fx
 * numbers its calls. Variant: depth, 502 = wide_resnet50_2, 5032 = resnext50_32x4d. */
#include "nn.h"

static fm_tid basic_block(struct fm_nn *nn, fm_tid x, int64_t planes, int64_t stride)
{
    int64_t inplanes = fm_nn_channels(nn, x);
    fm_tid out = fm_nn_conv(nn, "conv1", x, planes, 3, stride, 1, 1, false);
    out = fm_nn_bn(nn, "bn1", out, 1e-5);
    out = fm_nn_act(nn, "relu", FM_OP_RELU, out);
    out = fm_nn_conv(nn, "conv2", out, planes, 3, 1, 1, 1, false);
    out = fm_nn_bn(nn, "bn2", out, 1e-5);
    fm_tid identity = x;
    if (stride != 1 || inplanes != planes) {
        fm_nn_push(nn, "downsample");
        identity = fm_nn_conv(nn, "0", x, planes, 1, stride, 0, 1, false);
        identity = fm_nn_bn(nn, "1", identity, 1e-5);
        fm_nn_pop(nn);
    }
    out = fm_nn_add(nn, "add", out, identity);
    return fm_nn_act(nn, "relu", FM_OP_RELU, out);
}

static fm_tid bottleneck(struct fm_nn *nn, fm_tid x, int64_t planes, int64_t stride,
                         int64_t groups, int64_t base_width)
{
    int64_t inplanes = fm_nn_channels(nn, x);
    int64_t width = planes * base_width / 64 * groups;
    fm_tid out = fm_nn_conv(nn, "conv1", x, width, 1, 1, 0, 1, false);
    out = fm_nn_bn(nn, "bn1", out, 1e-5);
    out = fm_nn_act(nn, "relu", FM_OP_RELU, out);
    out = fm_nn_conv(nn, "conv2", out, width, 3, stride, 1, groups, false);
    out = fm_nn_bn(nn, "bn2", out, 1e-5);
    out = fm_nn_act(nn, "relu", FM_OP_RELU, out);
    out = fm_nn_conv(nn, "conv3", out, planes * 4, 1, 1, 0, 1, false);
    out = fm_nn_bn(nn, "bn3", out, 1e-5);
    fm_tid identity = x;
    if (stride != 1 || inplanes != planes * 4) {
        fm_nn_push(nn, "downsample");
        identity = fm_nn_conv(nn, "0", x, planes * 4, 1, stride, 0, 1, false);
        identity = fm_nn_bn(nn, "1", identity, 1e-5);
        fm_nn_pop(nn);
    }
    out = fm_nn_add(nn, "add", out, identity);
    return fm_nn_act(nn, "relu", FM_OP_RELU, out);
}

fm_tid fm_zoo_resnet(struct fm_nn *nn, fm_tid x, int64_t classes, int variant)
{
    static const struct {
        int variant;
        int blocks[4];
        bool bottleneck;
        int64_t groups, base_width;
    } cfgs[] = {
        {18, {2, 2, 2, 2}, false, 1, 64},   {34, {3, 4, 6, 3}, false, 1, 64},
        {50, {3, 4, 6, 3}, true, 1, 64},    {101, {3, 4, 23, 3}, true, 1, 64},
        {152, {3, 8, 36, 3}, true, 1, 64},  {502, {3, 4, 6, 3}, true, 1, 128},
        {5032, {3, 4, 6, 3}, true, 32, 4},
    };
    int ci = -1;
    for (int i = 0; i < (int)(sizeof(cfgs) / sizeof(cfgs[0])); i++) {
        if (cfgs[i].variant == variant)
            ci = i;
    }
    if (ci < 0) {
        nn->st = fm_error(nn->ctx, FM_ERR_NOT_FOUND, "resnet variant %d does not exist", variant);
        return FM_NONE;
    }
    x = fm_nn_conv(nn, "conv1", x, 64, 7, 2, 3, 1, false);
    x = fm_nn_bn(nn, "bn1", x, 1e-5);
    x = fm_nn_act(nn, "relu", FM_OP_RELU, x);
    x = fm_nn_maxpool(nn, "maxpool", x, 3, 2, 1, false);
    static const int64_t planes[4] = {64, 128, 256, 512};
    for (int l = 0; l < 4; l++) {
        for (int b = 0; b < cfgs[ci].blocks[l]; b++) {
            int64_t stride = (l > 0 && b == 0) ? 2 : 1;
            fm_nn_push(nn, "layer%d", l + 1);
            fm_nn_push(nn, "%d", b);
            if (cfgs[ci].bottleneck)
                x = bottleneck(nn, x, planes[l], stride, cfgs[ci].groups, cfgs[ci].base_width);
            else
                x = basic_block(nn, x, planes[l], stride);
            fm_nn_pop(nn);
            fm_nn_pop(nn);
        }
    }
    x = fm_nn_adaptive_avgpool(nn, "avgpool", x, 1, 1);
    x = fm_nn_flatten(nn, "flatten", x);
    return fm_nn_linear(nn, "fc", x, classes, true);
}
