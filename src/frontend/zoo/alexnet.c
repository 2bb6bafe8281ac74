/* AlexNet as torchvision defines it (torchvision/models/alexnet.py): the one-GPU variant of
 * "One weird trick" (64-192-384-256-256 channels), AdaptiveAvgPool to 6x6, three Linear layers
 * with Dropout(0.5) before the first two. It does not model the paper's two-GPU split or LRN. */
#include "nn.h"

fm_tid fm_zoo_alexnet(struct fm_nn *nn, fm_tid x, int64_t classes, int variant)
{
    (void)variant;
    fm_nn_push(nn, "features");
    x = fm_nn_conv(nn, "0", x, 64, 11, 4, 2, 1, true);
    x = fm_nn_act(nn, "1", FM_OP_RELU, x);
    x = fm_nn_maxpool(nn, "2", x, 3, 2, 0, false);
    x = fm_nn_conv(nn, "3", x, 192, 5, 1, 2, 1, true);
    x = fm_nn_act(nn, "4", FM_OP_RELU, x);
    x = fm_nn_maxpool(nn, "5", x, 3, 2, 0, false);
    x = fm_nn_conv(nn, "6", x, 384, 3, 1, 1, 1, true);
    x = fm_nn_act(nn, "7", FM_OP_RELU, x);
    x = fm_nn_conv(nn, "8", x, 256, 3, 1, 1, 1, true);
    x = fm_nn_act(nn, "9", FM_OP_RELU, x);
    x = fm_nn_conv(nn, "10", x, 256, 3, 1, 1, 1, true);
    x = fm_nn_act(nn, "11", FM_OP_RELU, x);
    x = fm_nn_maxpool(nn, "12", x, 3, 2, 0, false);
    fm_nn_pop(nn);
    x = fm_nn_adaptive_avgpool(nn, "avgpool", x, 6, 6);
    x = fm_nn_flatten(nn, "flatten", x);
    fm_nn_push(nn, "classifier");
    x = fm_nn_dropout(nn, "0", x, 0.5);
    x = fm_nn_linear(nn, "1", x, 4096, true);
    x = fm_nn_act(nn, "2", FM_OP_RELU, x);
    x = fm_nn_dropout(nn, "3", x, 0.5);
    x = fm_nn_linear(nn, "4", x, 4096, true);
    x = fm_nn_act(nn, "5", FM_OP_RELU, x);
    x = fm_nn_linear(nn, "6", x, classes, true);
    fm_nn_pop(nn);
    return x;
}
