/* VGG as torchvision defines it (torchvision/models/vgg.py): configurations A, B, D, E (VGG-11,
 * -13, -16, -19) of 3x3 convolutions with bias, optionally followed by BatchNorm, max pooling
 * between stages, AdaptiveAvgPool to 7x7 and a 4096-4096-classes classifier with Dropout(0.5).
 * Layer names follow torchvision's Sequential indices (features.0, features.1, ...).
 * Variant: 11, 13, 16, 19; +100 for the _bn versions. */
#include "nn.h"

#include <stdio.h>

#define M 0   /* a max pool in a configuration, written "M" as in torchvision's cfgs */

fm_tid fm_zoo_vgg(struct fm_nn *nn, fm_tid x, int64_t classes, int variant)
{
    static const struct {
        int depth;
        int64_t cfg[21];   /* channels, M = pool; ends at the first -1 */
    } cfgs[] = {
        {11, {64, M, 128, M, 256, 256, M, 512, 512, M, 512, 512, M, -1}},
        {13, {64, 64, M, 128, 128, M, 256, 256, M, 512, 512, M, 512, 512, M, -1}},
        {16, {64, 64, M, 128, 128, M, 256, 256, 256, M, 512, 512, 512, M, 512, 512, 512, M, -1}},
        {19, {64, 64, M, 128, 128, M, 256, 256, 256, 256, M, 512, 512, 512, 512, M, 512, 512, 512,
              512, M}},
    };
    bool bn = variant >= 100;
    int depth = bn ? variant - 100 : variant;
    int ci = -1;
    for (int i = 0; i < (int)(sizeof(cfgs) / sizeof(cfgs[0])); i++) {
        if (cfgs[i].depth == depth)
            ci = i;
    }
    if (ci < 0) {
        nn->st = fm_error(nn->ctx, FM_ERR_NOT_FOUND, "vgg variant %d does not exist", variant);
        return FM_NONE;
    }
    fm_nn_push(nn, "features");
    int idx = 0;   /* the Sequential index torchvision gives each layer */
    char name[16];
    for (int i = 0; i < 21 && cfgs[ci].cfg[i] >= 0; i++) {
        int64_t v = cfgs[ci].cfg[i];
        if (v == M) {
            snprintf(name, sizeof(name), "%d", idx++);
            x = fm_nn_maxpool(nn, name, x, 2, 2, 0, false);
            continue;
        }
        snprintf(name, sizeof(name), "%d", idx++);
        x = fm_nn_conv(nn, name, x, v, 3, 1, 1, 1, true);
        if (bn) {
            snprintf(name, sizeof(name), "%d", idx++);
            x = fm_nn_bn(nn, name, x, 1e-5);
        }
        snprintf(name, sizeof(name), "%d", idx++);
        x = fm_nn_act(nn, name, FM_OP_RELU, x);
    }
    fm_nn_pop(nn);
    x = fm_nn_adaptive_avgpool(nn, "avgpool", x, 7, 7);
    x = fm_nn_flatten(nn, "flatten", x);
    fm_nn_push(nn, "classifier");
    x = fm_nn_linear(nn, "0", x, 4096, true);
    x = fm_nn_act(nn, "1", FM_OP_RELU, x);
    x = fm_nn_dropout(nn, "2", x, 0.5);
    x = fm_nn_linear(nn, "3", x, 4096, true);
    x = fm_nn_act(nn, "4", FM_OP_RELU, x);
    x = fm_nn_dropout(nn, "5", x, 0.5);
    x = fm_nn_linear(nn, "6", x, classes, true);
    fm_nn_pop(nn);
    return x;
}
