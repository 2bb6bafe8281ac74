/* A small module-style builder over the graph API, used by the built-in architectures: each call
 * adds one layer named after torchvision's module path (prefix + name), creates its parameter
 * tensors ("<layer>.weight", ".bias", ".running_mean" ...) and returns the output tensor.
 * Failure is sticky: after the first error every call returns FM_NONE and does nothing, so a
 * builder can be written straight through and checked once at the end. */
#ifndef FM_ZOO_NN_H
#define FM_ZOO_NN_H

#include "flopmeter.h"

struct fm_nn {
    struct fm_ctx *ctx;
    struct fm_graph *g;
    enum fm_dtype dtype;
    enum fm_status st;
    char prefix[256];
};

void fm_nn_init(struct fm_nn *nn, struct fm_ctx *ctx, struct fm_graph *g, enum fm_dtype dtype);
/* Scopes: names added between push and pop are "<prefix>.<name>". */
void fm_nn_push(struct fm_nn *nn, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void fm_nn_pop(struct fm_nn *nn);

const struct fm_shape *fm_nn_shape(struct fm_nn *nn, fm_tid x);
int64_t fm_nn_channels(struct fm_nn *nn, fm_tid x);

/* 2-D convolution with square kernel/stride/padding; groups; bias. */
fm_tid fm_nn_conv(struct fm_nn *nn, const char *name, fm_tid x, int64_t cout, int64_t k,
                  int64_t stride, int64_t pad, int64_t groups, bool bias);
/* General form: kernel (kh, kw), stride (sh, sw), padding (ph, pw), dilation. */
fm_tid fm_nn_conv_full(struct fm_nn *nn, const char *name, fm_tid x, int64_t cout, int64_t kh,
                       int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dil,
                       int64_t groups, bool bias);
fm_tid fm_nn_bn(struct fm_nn *nn, const char *name, fm_tid x, double eps);
fm_tid fm_nn_act(struct fm_nn *nn, const char *name, enum fm_op op, fm_tid x);
fm_tid fm_nn_relu6(struct fm_nn *nn, const char *name, fm_tid x);
fm_tid fm_nn_maxpool(struct fm_nn *nn, const char *name, fm_tid x, int64_t k, int64_t stride,
                     int64_t pad, bool ceil_mode);
fm_tid fm_nn_avgpool(struct fm_nn *nn, const char *name, fm_tid x, int64_t k, int64_t stride,
                     int64_t pad, bool ceil_mode, bool count_include_pad);
fm_tid fm_nn_adaptive_avgpool(struct fm_nn *nn, const char *name, fm_tid x, int64_t oh,
                              int64_t ow);
fm_tid fm_nn_flatten(struct fm_nn *nn, const char *name, fm_tid x);
fm_tid fm_nn_linear(struct fm_nn *nn, const char *name, fm_tid x, int64_t nout, bool bias);
fm_tid fm_nn_dropout(struct fm_nn *nn, const char *name, fm_tid x, double p);
fm_tid fm_nn_add(struct fm_nn *nn, const char *name, fm_tid a, fm_tid b);
fm_tid fm_nn_mul(struct fm_nn *nn, const char *name, fm_tid a, fm_tid b);
fm_tid fm_nn_concat(struct fm_nn *nn, const char *name, const fm_tid *xs, int n, int64_t axis);

/* torchvision.ops.Conv2dNormActivation: conv (k x k, padding (k-1)/2, no bias) as name.0,
 * BatchNorm (eps) as name.1 and, unless act is FM_OP_IDENTITY, the activation as name.2
 * (FM_OP_CLIP is ReLU6). */
fm_tid fm_nn_conv_bn_act(struct fm_nn *nn, const char *name, fm_tid x, int64_t cout, int64_t k,
                         int64_t stride, int64_t groups, double eps, enum fm_op act);
/* torchvision.ops.SqueezeExcitation under name: avgpool (to 1x1), fc1 (1x1 conv with bias to
 * squeeze channels), activation, fc2 (back to the input's channels), scale_activation, and the
 * broadcast Mul of the scale with the input (name.mul). */
fm_tid fm_nn_squeeze_excitation(struct fm_nn *nn, const char *name, fm_tid x, int64_t squeeze,
                                enum fm_op act, enum fm_op scale_act);

/* Builders of the families: each takes the image input and the class count and returns the
 * logits (FM_NONE on failure, with nn->st set). variant selects within the family. */
typedef fm_tid (*fm_zoo_builder)(struct fm_nn *nn, fm_tid x, int64_t classes, int variant);

fm_tid fm_zoo_alexnet(struct fm_nn *nn, fm_tid x, int64_t classes, int variant);
fm_tid fm_zoo_vgg(struct fm_nn *nn, fm_tid x, int64_t classes, int variant);
fm_tid fm_zoo_resnet(struct fm_nn *nn, fm_tid x, int64_t classes, int variant);
fm_tid fm_zoo_mobilenet_v2(struct fm_nn *nn, fm_tid x, int64_t classes, int variant);
fm_tid fm_zoo_mobilenet_v3(struct fm_nn *nn, fm_tid x, int64_t classes, int variant);
fm_tid fm_zoo_efficientnet(struct fm_nn *nn, fm_tid x, int64_t classes, int variant);
fm_tid fm_zoo_googlenet(struct fm_nn *nn, fm_tid x, int64_t classes, int variant);
fm_tid fm_zoo_inception_v3(struct fm_nn *nn, fm_tid x, int64_t classes, int variant);

/* torchvision's _make_divisible: rounds v to a multiple of divisor, never below 90% of v. */
int64_t fm_nn_make_divisible(double v, int64_t divisor);

#endif
