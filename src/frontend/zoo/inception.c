/* Inception v3 as torchvision defines it (torchvision/models/inception.py), without the
 * auxiliary classifier (training only; with it torchvision's parameter count is 27,161,264,
 * without it 23,834,568) and without transform_input. Every convolution is a BasicConv2d (conv
 * without bias, BatchNorm eps 0.001, ReLU); the pooling branches use F.avg_pool2d(3, 1, 1) with
 * count_include_pad (PyTorch's default) and F.max_pool2d(3, 2). Default input 299x299. */
#include "nn.h"

/* BasicConv2d with a (kh, kw) kernel: name.conv, name.bn, name.relu. */
static fm_tid bconv(struct fm_nn *nn, const char *name, fm_tid x, int64_t cout, int64_t kh,
                    int64_t kw, int64_t stride, int64_t ph, int64_t pw)
{
    fm_nn_push(nn, "%s", name);
    x = fm_nn_conv_full(nn, "conv", x, cout, kh, kw, stride, stride, ph, pw, 1, 1, false);
    x = fm_nn_bn(nn, "bn", x, 0.001);
    x = fm_nn_act(nn, "relu", FM_OP_RELU, x);
    fm_nn_pop(nn);
    return x;
}

static fm_tid inception_a(struct fm_nn *nn, fm_tid x, int64_t pool_features)
{
    fm_tid b[4], t;
    b[0] = bconv(nn, "branch1x1", x, 64, 1, 1, 1, 0, 0);
    t = bconv(nn, "branch5x5_1", x, 48, 1, 1, 1, 0, 0);
    b[1] = bconv(nn, "branch5x5_2", t, 64, 5, 5, 1, 2, 2);
    t = bconv(nn, "branch3x3dbl_1", x, 64, 1, 1, 1, 0, 0);
    t = bconv(nn, "branch3x3dbl_2", t, 96, 3, 3, 1, 1, 1);
    b[2] = bconv(nn, "branch3x3dbl_3", t, 96, 3, 3, 1, 1, 1);
    t = fm_nn_avgpool(nn, "avg_pool2d", x, 3, 1, 1, false, true);
    b[3] = bconv(nn, "branch_pool", t, pool_features, 1, 1, 1, 0, 0);
    return fm_nn_concat(nn, "cat", b, 4, 1);
}

static fm_tid inception_b(struct fm_nn *nn, fm_tid x)
{
    fm_tid b[3], t;
    b[0] = bconv(nn, "branch3x3", x, 384, 3, 3, 2, 0, 0);
    t = bconv(nn, "branch3x3dbl_1", x, 64, 1, 1, 1, 0, 0);
    t = bconv(nn, "branch3x3dbl_2", t, 96, 3, 3, 1, 1, 1);
    b[1] = bconv(nn, "branch3x3dbl_3", t, 96, 3, 3, 2, 0, 0);
    b[2] = fm_nn_maxpool(nn, "max_pool2d", x, 3, 2, 0, false);
    return fm_nn_concat(nn, "cat", b, 3, 1);
}

static fm_tid inception_c(struct fm_nn *nn, fm_tid x, int64_t c7)
{
    fm_tid b[4], t;
    b[0] = bconv(nn, "branch1x1", x, 192, 1, 1, 1, 0, 0);
    t = bconv(nn, "branch7x7_1", x, c7, 1, 1, 1, 0, 0);
    t = bconv(nn, "branch7x7_2", t, c7, 1, 7, 1, 0, 3);
    b[1] = bconv(nn, "branch7x7_3", t, 192, 7, 1, 1, 3, 0);
    t = bconv(nn, "branch7x7dbl_1", x, c7, 1, 1, 1, 0, 0);
    t = bconv(nn, "branch7x7dbl_2", t, c7, 7, 1, 1, 3, 0);
    t = bconv(nn, "branch7x7dbl_3", t, c7, 1, 7, 1, 0, 3);
    t = bconv(nn, "branch7x7dbl_4", t, c7, 7, 1, 1, 3, 0);
    b[2] = bconv(nn, "branch7x7dbl_5", t, 192, 1, 7, 1, 0, 3);
    t = fm_nn_avgpool(nn, "avg_pool2d", x, 3, 1, 1, false, true);
    b[3] = bconv(nn, "branch_pool", t, 192, 1, 1, 1, 0, 0);
    return fm_nn_concat(nn, "cat", b, 4, 1);
}

static fm_tid inception_d(struct fm_nn *nn, fm_tid x)
{
    fm_tid b[3], t;
    t = bconv(nn, "branch3x3_1", x, 192, 1, 1, 1, 0, 0);
    b[0] = bconv(nn, "branch3x3_2", t, 320, 3, 3, 2, 0, 0);
    t = bconv(nn, "branch7x7x3_1", x, 192, 1, 1, 1, 0, 0);
    t = bconv(nn, "branch7x7x3_2", t, 192, 1, 7, 1, 0, 3);
    t = bconv(nn, "branch7x7x3_3", t, 192, 7, 1, 1, 3, 0);
    b[1] = bconv(nn, "branch7x7x3_4", t, 192, 3, 3, 2, 0, 0);
    b[2] = fm_nn_maxpool(nn, "max_pool2d", x, 3, 2, 0, false);
    return fm_nn_concat(nn, "cat", b, 3, 1);
}

/* The three torch.cat calls of InceptionE's forward are cat, cat_1, cat_2 (torch.fx's order). */
static fm_tid inception_e(struct fm_nn *nn, fm_tid x)
{
    fm_tid b[4], t, pair[2];
    b[0] = bconv(nn, "branch1x1", x, 320, 1, 1, 1, 0, 0);
    t = bconv(nn, "branch3x3_1", x, 384, 1, 1, 1, 0, 0);
    pair[0] = bconv(nn, "branch3x3_2a", t, 384, 1, 3, 1, 0, 1);
    pair[1] = bconv(nn, "branch3x3_2b", t, 384, 3, 1, 1, 1, 0);
    b[1] = fm_nn_concat(nn, "cat", pair, 2, 1);
    t = bconv(nn, "branch3x3dbl_1", x, 448, 1, 1, 1, 0, 0);
    t = bconv(nn, "branch3x3dbl_2", t, 384, 3, 3, 1, 1, 1);
    pair[0] = bconv(nn, "branch3x3dbl_3a", t, 384, 1, 3, 1, 0, 1);
    pair[1] = bconv(nn, "branch3x3dbl_3b", t, 384, 3, 1, 1, 1, 0);
    b[2] = fm_nn_concat(nn, "cat", pair, 2, 1);
    t = fm_nn_avgpool(nn, "avg_pool2d", x, 3, 1, 1, false, true);
    b[3] = bconv(nn, "branch_pool", t, 192, 1, 1, 1, 0, 0);
    return fm_nn_concat(nn, "cat", b, 4, 1);
}

fm_tid fm_zoo_inception_v3(struct fm_nn *nn, fm_tid x, int64_t classes, int variant)
{
    (void)variant;
    x = bconv(nn, "Conv2d_1a_3x3", x, 32, 3, 3, 2, 0, 0);
    x = bconv(nn, "Conv2d_2a_3x3", x, 32, 3, 3, 1, 0, 0);
    x = bconv(nn, "Conv2d_2b_3x3", x, 64, 3, 3, 1, 1, 1);
    x = fm_nn_maxpool(nn, "maxpool1", x, 3, 2, 0, false);
    x = bconv(nn, "Conv2d_3b_1x1", x, 80, 1, 1, 1, 0, 0);
    x = bconv(nn, "Conv2d_4a_3x3", x, 192, 3, 3, 1, 0, 0);
    x = fm_nn_maxpool(nn, "maxpool2", x, 3, 2, 0, false);
    static const struct {
        const char *name;
        char kind;        /* A..E */
        int64_t arg;      /* pool_features (A), channels_7x7 (C) */
    } mixed[] = {
        {"Mixed_5b", 'A', 32},  {"Mixed_5c", 'A', 64},  {"Mixed_5d", 'A', 64},
        {"Mixed_6a", 'B', 0},   {"Mixed_6b", 'C', 128}, {"Mixed_6c", 'C', 160},
        {"Mixed_6d", 'C', 160}, {"Mixed_6e", 'C', 192}, {"Mixed_7a", 'D', 0},
        {"Mixed_7b", 'E', 0},   {"Mixed_7c", 'E', 0},
    };
    for (size_t i = 0; i < sizeof(mixed) / sizeof(mixed[0]); i++) {
        fm_nn_push(nn, "%s", mixed[i].name);
        switch (mixed[i].kind) {
        case 'A': x = inception_a(nn, x, mixed[i].arg); break;
        case 'B': x = inception_b(nn, x); break;
        case 'C': x = inception_c(nn, x, mixed[i].arg); break;
        case 'D': x = inception_d(nn, x); break;
        default: x = inception_e(nn, x); break;
        }
        fm_nn_pop(nn);
    }
    x = fm_nn_adaptive_avgpool(nn, "avgpool", x, 1, 1);
    x = fm_nn_dropout(nn, "dropout", x, 0.5);
    x = fm_nn_flatten(nn, "flatten", x);
    return fm_nn_linear(nn, "fc", x, classes, true);
}
