/* GoogLeNet (Inception v1) as torchvision defines it (torchvision/models/googlenet.py), without
 * the auxiliary classifiers (they run only in training and are dropped at evaluation) and
 * without transform_input (off unless pretrained weights are loaded). Quirks kept as torchvision
 * has them: every convolution is a BasicConv2d (conv without bias, BatchNorm eps 0.001, ReLU),
 * which the paper does not have; 'branch3' uses a 3x3 kernel where the paper has 5x5
 * (pytorch/vision#906); max pools use ceil_mode. */
#include "nn.h"

/* BasicConv2d: name.conv, name.bn, name.relu (F.relu, called in the module's forward). */
static fm_tid basic_conv(struct fm_nn *nn, const char *name, fm_tid x, int64_t cout, int64_t k,
                         int64_t stride, int64_t pad)
{
    fm_nn_push(nn, "%s", name);
    x = fm_nn_conv(nn, "conv", x, cout, k, stride, pad, 1, false);
    x = fm_nn_bn(nn, "bn", x, 0.001);
    x = fm_nn_act(nn, "relu", FM_OP_RELU, x);
    fm_nn_pop(nn);
    return x;
}

static fm_tid inception(struct fm_nn *nn, const char *name, fm_tid x, int64_t ch1x1,
                        int64_t ch3x3red, int64_t ch3x3, int64_t ch5x5red, int64_t ch5x5,
                        int64_t pool_proj)
{
    fm_tid b[4];
    fm_nn_push(nn, "%s", name);
    b[0] = basic_conv(nn, "branch1", x, ch1x1, 1, 1, 0);
    fm_nn_push(nn, "branch2");
    b[1] = basic_conv(nn, "0", x, ch3x3red, 1, 1, 0);
    b[1] = basic_conv(nn, "1", b[1], ch3x3, 3, 1, 1);
    fm_nn_pop(nn);
    fm_nn_push(nn, "branch3");
    b[2] = basic_conv(nn, "0", x, ch5x5red, 1, 1, 0);
    b[2] = basic_conv(nn, "1", b[2], ch5x5, 3, 1, 1);   /* 3x3, as torchvision (not 5x5) */
    fm_nn_pop(nn);
    fm_nn_push(nn, "branch4");
    b[3] = fm_nn_maxpool(nn, "0", x, 3, 1, 1, true);
    b[3] = basic_conv(nn, "1", b[3], pool_proj, 1, 1, 0);
    fm_nn_pop(nn);
    x = fm_nn_concat(nn, "cat", b, 4, 1);
    fm_nn_pop(nn);
    return x;
}

fm_tid fm_zoo_googlenet(struct fm_nn *nn, fm_tid x, int64_t classes, int variant)
{
    (void)variant;
    x = basic_conv(nn, "conv1", x, 64, 7, 2, 3);
    x = fm_nn_maxpool(nn, "maxpool1", x, 3, 2, 0, true);
    x = basic_conv(nn, "conv2", x, 64, 1, 1, 0);
    x = basic_conv(nn, "conv3", x, 192, 3, 1, 1);
    x = fm_nn_maxpool(nn, "maxpool2", x, 3, 2, 0, true);
    x = inception(nn, "inception3a", x, 64, 96, 128, 16, 32, 32);
    x = inception(nn, "inception3b", x, 128, 128, 192, 32, 96, 64);
    x = fm_nn_maxpool(nn, "maxpool3", x, 3, 2, 0, true);
    x = inception(nn, "inception4a", x, 192, 96, 208, 16, 48, 64);
    x = inception(nn, "inception4b", x, 160, 112, 224, 24, 64, 64);
    x = inception(nn, "inception4c", x, 128, 128, 256, 24, 64, 64);
    x = inception(nn, "inception4d", x, 112, 144, 288, 32, 64, 64);
    x = inception(nn, "inception4e", x, 256, 160, 320, 32, 128, 128);
    x = fm_nn_maxpool(nn, "maxpool4", x, 2, 2, 0, true);
    x = inception(nn, "inception5a", x, 256, 160, 320, 32, 128, 128);
    x = inception(nn, "inception5b", x, 384, 192, 384, 48, 128, 128);
    x = fm_nn_adaptive_avgpool(nn, "avgpool", x, 1, 1);
    x = fm_nn_flatten(nn, "flatten", x);
    x = fm_nn_dropout(nn, "dropout", x, 0.2);
    return fm_nn_linear(nn, "fc", x, classes, true);
}
