/* flopmeter calibrate's sweep: times single layers on a device, never whole networks, and fits
 * the calibration model (calib_model.c) to them. Each sweep point is a graph of three layers: a
 * trainable per-channel scale of the input (so that the layer under test computes its input
 * gradient, as it does inside a network; a depthwise 3x3 convolution for the layers that follow
 * convolutions in CNNs), the layer, and the loss the policy adds. Every
 * node-phase that does work and was timed is one sample: the scale gives elementwise samples,
 * the loss loss samples, every parameter optimizer samples. The per-step overhead is what a
 * step takes beyond its layers. */
#include "../backend/backend.h"   /* the eviction probe */
#include "../core/internal.h"
#include "../frontend/zoo/nn.h"
#include "analysis.h"
#include "calib_common.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum pt_kind {
    PT_CONV,        /* a: N, b: C, c: H (= W), d: K out, e: kernel, f: stride, g: groups */
    PT_LINEAR,      /* a: rows, b: in, c: out */
    PT_MATMUL,      /* a: batch, b: M, c: K, d: N; e: 1 = one (K, N) weight for the batch */
    PT_BN,          /* a: N, b: C, c: H */
    PT_LN,          /* a: rows, b: width */
    PT_ACT,         /* a: N, b: C, c: H, op */
    PT_SOFTMAX,     /* a: rows, b: width */
    PT_MAXPOOL,     /* a: N, b: C, c: H, e: kernel, f: stride */
    PT_GAP,         /* a: N, b: C, c: H */
    PT_ADD,         /* a: N, b: C, c: H: x + relu(x), a residual connection */
    PT_BIAS,        /* a: rows, b: width: x + bias, a Linear's bias as ONNX exports write it */
    PT_EMBED,       /* a: tokens, b: rows of the table, c: width */
    PT_ATTN,        /* a: batch, b: sequence, c: width, d: heads */
    PT_TRANSPOSE,   /* a: batch, b: heads, c: sequence, d: head width; e: 1 = NCHW to NHWC */
    PT_REDUCE,      /* a: N, b: C, c: H */
    PT_SE,          /* a: N, b: C, c: H: x * sigmoid(global average of x), squeeze-excitation's
                       gate without its two small convolutions */
    PT_MUL,         /* a: N, b: C, c: H (0: a (rows, width) matrix, b the width): x * sigmoid(x),
                       two whole activations (SiLU as ONNX exports write it, GELU's and SwiGLU's
                       products), whose gradients are no reductions */
};

struct point {
    const char *cls;   /* progress label */
    enum pt_kind kind;
    int64_t a, b, c, d, e, f, g;
    enum fm_op op;
    const char *from;  /* the network families the shape is taken from (comma-separated), or
                          NULL for a generic one: what --leave-out drops */
};

/* The sweep: shapes of the layers the zoo and common exports are made of, small to large, so
 * each fit sees both the fixed cost of small layers and the rate of large ones. A shape taken
 * from a family's layers names it, so that an accuracy test can calibrate without them. */
static const struct point sweep[] = {
    {"conv dense", PT_CONV, 2, 32, 56, 32, 3, 1, 1, 0, NULL},
    {"conv dense", PT_CONV, 2, 64, 56, 64, 3, 1, 1, 0, "resnet"},
    {"conv dense", PT_CONV, 4, 64, 28, 128, 3, 1, 1, 0, NULL},
    {"conv dense", PT_CONV, 2, 128, 28, 128, 3, 1, 1, 0, "resnet,vgg"},
    {"conv dense", PT_CONV, 4, 256, 14, 256, 3, 1, 1, 0, "resnet,vgg"},
    {"conv dense", PT_CONV, 8, 512, 7, 512, 3, 1, 1, 0, "resnet,vgg"},
    {"conv dense", PT_CONV, 2, 16, 112, 32, 3, 1, 1, 0, NULL},
    {"conv dense", PT_CONV, 8, 128, 14, 128, 3, 1, 1, 0, NULL},
    {"conv dense", PT_CONV, 2, 3, 112, 64, 7, 2, 1, 0, "resnet"},
    {"conv dense", PT_CONV, 4, 64, 56, 128, 3, 2, 1, 0, "resnet"},
    {"conv dense", PT_CONV, 2, 3, 96, 32, 3, 2, 1, 0, "mobilenet_v2,efficientnet"},
    /* generic shapes at batch 1 for every convolution kind and BatchNorm, 0.3-16M FLOPs: the
     * small end of a kind must not hang on one family's shapes. Without MobileNetV2's (the
     * only pointwise ones under 100M FLOPs), the pointwise fits extrapolated a fixed cost of
     * 140-460 us a phase and priced its 29M-FLOP layers at 3.7 times their time */
    {"conv dense", PT_CONV, 1, 16, 56, 16, 3, 1, 1, 0, NULL},
    {"conv dense", PT_CONV, 1, 96, 7, 96, 3, 1, 1, 0, NULL},
    {"conv pointwise", PT_CONV, 2, 64, 56, 256, 1, 1, 1, 0, "resnet50,resnext"},
    {"conv pointwise", PT_CONV, 4, 256, 28, 64, 1, 1, 1, 0, "resnet50,resnext"},
    {"conv pointwise", PT_CONV, 8, 512, 14, 128, 1, 1, 1, 0, "resnet50,resnext"},
    {"conv pointwise", PT_CONV, 2, 96, 112, 24, 1, 1, 1, 0, "mobilenet_v2"},
    {"conv pointwise", PT_CONV, 8, 1024, 7, 256, 1, 1, 1, 0, "resnet50,resnext"},
    {"conv pointwise", PT_CONV, 4, 32, 56, 16, 1, 1, 1, 0, "mobilenet_v2"},
    {"conv pointwise", PT_CONV, 8, 160, 7, 960, 1, 1, 1, 0, "mobilenet_v2,mobilenet_v3"},
    {"conv pointwise", PT_CONV, 4, 64, 56, 64, 1, 1, 1, 0, NULL},
    {"conv pointwise", PT_CONV, 8, 128, 28, 512, 1, 1, 1, 0, NULL},
    {"conv pointwise", PT_CONV, 8, 256, 14, 256, 1, 1, 1, 0, NULL},
    {"conv pointwise", PT_CONV, 8, 512, 7, 2048, 1, 1, 1, 0, NULL},
    {"conv pointwise", PT_CONV, 8, 48, 56, 192, 1, 1, 1, 0, NULL},
    {"conv pointwise", PT_CONV, 1, 40, 14, 200, 1, 1, 1, 0, NULL},
    {"conv pointwise", PT_CONV, 1, 64, 28, 32, 1, 1, 1, 0, NULL},
    {"conv pointwise", PT_CONV, 2, 24, 28, 112, 1, 1, 1, 0, NULL},
    {"conv pointwise", PT_CONV, 1, 128, 7, 768, 1, 1, 1, 0, NULL},
    {"conv depthwise", PT_CONV, 2, 32, 112, 32, 3, 1, 32, 0, "mobilenet_v2,efficientnet"},
    {"conv depthwise", PT_CONV, 4, 96, 56, 96, 3, 1, 96, 0, "mobilenet_v2"},
    {"conv depthwise", PT_CONV, 4, 144, 56, 144, 3, 2, 144, 0, "mobilenet_v2,efficientnet"},
    {"conv depthwise", PT_CONV, 8, 192, 28, 192, 3, 1, 192, 0, "mobilenet_v2"},
    {"conv depthwise", PT_CONV, 8, 384, 14, 384, 3, 1, 384, 0, "mobilenet_v2"},
    {"conv depthwise", PT_CONV, 8, 960, 7, 960, 3, 1, 960, 0, "mobilenet_v2"},
    {"conv depthwise", PT_CONV, 4, 240, 28, 240, 5, 1, 240, 0, "efficientnet"},
    {"conv depthwise", PT_CONV, 8, 672, 14, 672, 5, 1, 672, 0, "efficientnet,mobilenet_v3"},
    {"conv depthwise", PT_CONV, 8, 96, 56, 96, 7, 1, 96, 0, "convnext"},
    {"conv depthwise", PT_CONV, 8, 192, 16, 192, 7, 1, 192, 0, "convnext"},
    {"conv depthwise", PT_CONV, 8, 384, 8, 384, 7, 1, 384, 0, "convnext"},
    {"conv depthwise", PT_CONV, 16, 32, 112, 32, 3, 2, 32, 0, NULL},
    {"conv depthwise", PT_CONV, 8, 64, 56, 64, 3, 1, 64, 0, NULL},
    {"conv depthwise", PT_CONV, 8, 128, 28, 128, 3, 2, 128, 0, NULL},
    {"conv depthwise", PT_CONV, 8, 256, 14, 256, 5, 1, 256, 0, NULL},
    {"conv depthwise", PT_CONV, 16, 512, 7, 512, 3, 1, 512, 0, NULL},
    {"conv depthwise", PT_CONV, 8, 72, 28, 72, 5, 1, 72, 0, NULL},
    {"conv depthwise", PT_CONV, 8, 120, 14, 120, 5, 1, 120, 0, NULL},
    {"conv depthwise", PT_CONV, 16, 88, 28, 88, 3, 1, 88, 0, NULL},
    {"conv depthwise", PT_CONV, 1, 96, 14, 96, 3, 1, 96, 0, NULL},
    {"conv depthwise", PT_CONV, 1, 240, 7, 240, 5, 1, 240, 0, NULL},
    {"conv grouped", PT_CONV, 4, 128, 56, 128, 3, 1, 32, 0, "resnext"},
    {"conv grouped", PT_CONV, 8, 256, 28, 256, 3, 1, 32, 0, "resnext"},
    {"conv grouped", PT_CONV, 4, 512, 14, 512, 3, 1, 32, 0, "resnext"},
    {"conv grouped", PT_CONV, 8, 448, 14, 448, 3, 1, 56, 0, "regnet"},
    {"conv grouped", PT_CONV, 2, 64, 56, 64, 3, 1, 8, 0, NULL},
    {"conv grouped", PT_CONV, 8, 128, 28, 128, 3, 1, 8, 0, NULL},
    {"conv grouped", PT_CONV, 8, 256, 14, 256, 3, 1, 16, 0, NULL},
    {"conv grouped", PT_CONV, 8, 64, 56, 64, 3, 1, 4, 0, NULL},
    {"conv grouped", PT_CONV, 8, 48, 56, 48, 3, 1, 6, 0, "regnet"},
    {"conv grouped", PT_CONV, 8, 104, 28, 104, 3, 1, 13, 0, "regnet"},
    {"conv grouped", PT_CONV, 8, 208, 14, 208, 3, 1, 26, 0, "regnet"},
    {"conv grouped", PT_CONV, 8, 440, 7, 440, 3, 1, 55, 0, "regnet"},
    {"conv grouped", PT_CONV, 16, 104, 8, 104, 3, 1, 13, 0, "regnet"},
    {"matmul", PT_LINEAR, 32, 512, 1000, 0, 0, 0, 0, 0, "resnet"},
    {"matmul", PT_LINEAR, 128, 768, 768, 0, 0, 0, 0, 0, "vit,gpt2,bert"},
    {"matmul", PT_LINEAR, 256, 768, 3072, 0, 0, 0, 0, 0, "vit,gpt2,bert"},
    {"matmul", PT_LINEAR, 64, 2048, 1000, 0, 0, 0, 0, 0, "resnet50,resnext"},
    {"matmul", PT_LINEAR, 512, 256, 256, 0, 0, 0, 0, 0, NULL},
    {"matmul", PT_LINEAR, 256, 1024, 1024, 0, 0, 0, 0, 0, NULL},
    {"matmul", PT_LINEAR, 64, 512, 512, 0, 0, 0, 0, 0, NULL},
    {"matmul", PT_LINEAR, 16, 2048, 8192, 0, 0, 0, 0, 0, NULL},
    {"matmul", PT_LINEAR, 2, 16384, 1024, 0, 0, 0, 0, 0, NULL},
    {"matmul", PT_LINEAR, 8, 4096, 4096, 0, 0, 0, 0, 0, "vgg,alexnet"},
    {"matmul", PT_LINEAR, 1024, 384, 1536, 0, 0, 0, 0, 0, "convnext,swin"},
    {"matmul", PT_MATMUL, 24, 128, 64, 128, 0, 0, 0, 0, "vit,gpt2,bert"},
    {"matmul", PT_MATMUL, 48, 64, 32, 64, 0, 0, 0, 0, NULL},
    {"matmul", PT_MATMUL, 12, 256, 64, 256, 0, 0, 0, 0, "vit,gpt2,bert"},
    /* projections as MatMul, x (B, S, K) times one (K, N) weight: HF's Conv1D (GPT-2), the
     * config-built GPT-2 and exports that write a Linear as MatMul and Add. Before them the
     * MatMul kind had only batched products of attention's size (one generic, 12.6M FLOPs,
     * with GPT-2's family left out), and GPT-2's projections ran at 1.4-2.5 times their price */
    {"matmul", PT_MATMUL, 1, 96, 1024, 1024, 1, 0, 0, 0, NULL},
    {"matmul", PT_MATMUL, 2, 64, 512, 2048, 1, 0, 0, 0, NULL},
    {"matmul", PT_MATMUL, 1, 256, 640, 640, 1, 0, 0, 0, NULL},
    {"matmul", PT_MATMUL, 4, 32, 2048, 512, 1, 0, 0, 0, NULL},
    {"matmul", PT_MATMUL, 1, 32, 512, 1536, 1, 0, 0, 0, NULL},
    {"norm", PT_BN, 2, 64, 112, 0, 0, 0, 0, 0, "resnet"},
    {"norm", PT_BN, 8, 256, 28, 0, 0, 0, 0, 0, NULL},
    {"norm", PT_BN, 8, 1024, 7, 0, 0, 0, 0, 0, NULL},
    {"norm", PT_BN, 4, 32, 56, 0, 0, 0, 0, 0, NULL},
    {"norm", PT_BN, 1, 96, 14, 0, 0, 0, 0, 0, NULL},
    {"norm", PT_LN, 256, 768, 0, 0, 0, 0, 0, 0, "vit,gpt2,bert"},
    {"norm", PT_LN, 1024, 384, 0, 0, 0, 0, 0, 0, "convnext,swin"},
    {"norm", PT_LN, 64, 2048, 0, 0, 0, 0, 0, 0, NULL},
    /* generic LayerNorms (and Softmaxes, attentions, the activations below): a kind is
     * fitted on its own from FM_CALIB_MIN_OP_POINTS shapes, and with only its families' it
     * fell back to its class's fit wherever the family was left out (or always, with 3) */
    {"norm", PT_LN, 128, 1024, 0, 0, 0, 0, 0, 0, NULL},
    {"norm", PT_LN, 2048, 96, 0, 0, 0, 0, 0, 0, NULL},
    {"norm", PT_LN, 32, 4096, 0, 0, 0, 0, 0, 0, NULL},
    {"norm", PT_LN, 512, 512, 0, 0, 0, 0, 0, 0, NULL},
    {"activation", PT_ACT, 2, 64, 112, 0, 0, 0, 0, FM_OP_RELU, "resnet"},
    {"activation", PT_ACT, 8, 256, 14, 0, 0, 0, 0, FM_OP_RELU, NULL},
    {"activation", PT_ACT, 4, 512, 7, 0, 0, 0, 0, FM_OP_RELU, NULL},
    {"activation", PT_ACT, 4, 96, 56, 0, 0, 0, 0, FM_OP_SILU, "efficientnet"},
    {"activation", PT_ACT, 8, 384, 14, 0, 0, 0, 0, FM_OP_HARDSWISH, "mobilenet_v3"},
    {"activation", PT_ACT, 4, 768, 16, 0, 0, 0, 0, FM_OP_GELU, "convnext,swin"},
    {"activation", PT_ACT, 8, 240, 28, 0, 0, 0, 0, FM_OP_SILU, "efficientnet"},
    {"activation", PT_ACT, 16, 32, 112, 0, 0, 0, 0, FM_OP_SILU, "efficientnet"},
    {"activation", PT_ACT, 8, 960, 7, 0, 0, 0, 0, FM_OP_HARDSWISH, "mobilenet_v3"},
    {"activation", PT_ACT, 8, 72, 56, 0, 0, 0, 0, FM_OP_HARDSWISH, "mobilenet_v3"},
    {"activation", PT_ACT, 8, 192, 16, 0, 0, 0, 0, FM_OP_GELU, "convnext,swin"},
    {"activation", PT_ACT, 2, 3072, 16, 0, 0, 0, 0, FM_OP_GELU, "vit,gpt2,bert"},
    {"activation", PT_ACT, 8, 96, 56, 0, 0, 0, 0, FM_OP_RELU, NULL},
    {"activation", PT_ACT, 8, 32, 112, 0, 0, 0, 0, FM_OP_CLIP, "mobilenet_v2"},
    {"activation", PT_ACT, 8, 144, 56, 0, 0, 0, 0, FM_OP_CLIP, "mobilenet_v2"},
    {"activation", PT_ACT, 8, 384, 14, 0, 0, 0, 0, FM_OP_CLIP, "mobilenet_v2"},
    {"activation", PT_ACT, 8, 960, 7, 0, 0, 0, 0, FM_OP_CLIP, "mobilenet_v2"},
    /* generic SiLU, Hardswish, GELU and ReLU6: 16K to 3M elements each. With only their
     * families' 3 shapes, SiLU, Hardswish and GELU were never fitted on their own, and ReLU6
     * only while MobileNetV2 stayed in: their class's fit, mostly ReLU's, priced them */
    {"activation", PT_ACT, 1, 48, 56, 0, 0, 0, 0, FM_OP_SILU, NULL},
    {"activation", PT_ACT, 8, 144, 28, 0, 0, 0, 0, FM_OP_SILU, NULL},
    {"activation", PT_ACT, 2, 1152, 7, 0, 0, 0, 0, FM_OP_SILU, NULL},
    {"activation", PT_ACT, 16, 64, 56, 0, 0, 0, 0, FM_OP_SILU, NULL},
    {"activation", PT_ACT, 1, 16, 112, 0, 0, 0, 0, FM_OP_HARDSWISH, NULL},
    {"activation", PT_ACT, 4, 120, 28, 0, 0, 0, 0, FM_OP_HARDSWISH, NULL},
    {"activation", PT_ACT, 8, 576, 7, 0, 0, 0, 0, FM_OP_HARDSWISH, NULL},
    {"activation", PT_ACT, 16, 40, 56, 0, 0, 0, 0, FM_OP_HARDSWISH, NULL},
    {"activation", PT_ACT, 4, 64, 8, 0, 0, 0, 0, FM_OP_GELU, NULL},
    {"activation", PT_ACT, 1, 1536, 14, 0, 0, 0, 0, FM_OP_GELU, NULL},
    {"activation", PT_ACT, 8, 384, 28, 0, 0, 0, 0, FM_OP_GELU, NULL},
    {"activation", PT_ACT, 2, 3072, 8, 0, 0, 0, 0, FM_OP_GELU, NULL},
    {"activation", PT_ACT, 1, 96, 56, 0, 0, 0, 0, FM_OP_CLIP, NULL},
    {"activation", PT_ACT, 4, 192, 28, 0, 0, 0, 0, FM_OP_CLIP, NULL},
    {"activation", PT_ACT, 16, 576, 7, 0, 0, 0, 0, FM_OP_CLIP, NULL},
    {"activation", PT_ACT, 2, 16, 32, 0, 0, 0, 0, FM_OP_CLIP, NULL},
    {"activation", PT_SE, 8, 96, 56, 0, 0, 0, 0, 0, NULL},
    {"activation", PT_SE, 8, 240, 28, 0, 0, 0, 0, 0, "efficientnet"},
    {"activation", PT_SE, 8, 672, 14, 0, 0, 0, 0, 0, "efficientnet,mobilenet_v3"},
    {"activation", PT_SE, 16, 960, 7, 0, 0, 0, 0, 0, "mobilenet_v3"},
    {"activation", PT_SE, 16, 32, 112, 0, 0, 0, 0, 0, "efficientnet"},
    {"activation", PT_SOFTMAX, 3072, 128, 0, 0, 0, 0, 0, 0, "vit,gpt2,bert"},
    {"activation", PT_SOFTMAX, 256, 1000, 0, 0, 0, 0, 0, 0, NULL},
    {"activation", PT_SOFTMAX, 1024, 64, 0, 0, 0, 0, 0, 0, NULL},
    {"activation", PT_SOFTMAX, 64, 4096, 0, 0, 0, 0, 0, 0, NULL},
    {"activation", PT_SOFTMAX, 512, 512, 0, 0, 0, 0, 0, 0, NULL},
    {"activation", PT_SOFTMAX, 8192, 32, 0, 0, 0, 0, 0, 0, NULL},
    {"pool max", PT_MAXPOOL, 2, 64, 112, 0, 3, 2, 0, 0, "resnet"},
    {"pool max", PT_MAXPOOL, 8, 128, 56, 0, 3, 2, 0, 0, NULL},
    {"pool max", PT_MAXPOOL, 4, 64, 56, 0, 3, 2, 0, 0, NULL},
    {"pool max", PT_MAXPOOL, 8, 256, 28, 0, 2, 2, 0, 0, "vgg"},
    /* no family's: with ResNet's or VGG's shape left out, MaxPool keeps the points of a fit of
     * its own (FM_CALIB_MIN_OP_POINTS); with 3 it fell back to the pool class, which global
     * average pooling's fast passes dominate, and ResNet's stem MaxPool was priced at a
     * quarter of its time (resnet18 b32: 18.8 ms calibrated, 120 measured) */
    {"pool max", PT_MAXPOOL, 16, 32, 64, 0, 3, 2, 0, 0, NULL},
    {"pool max", PT_MAXPOOL, 2, 96, 80, 0, 3, 2, 0, 0, NULL},
    {"pool max", PT_MAXPOOL, 8, 48, 40, 0, 2, 2, 0, 0, NULL},
    {"pool average", PT_GAP, 8, 1280, 7, 0, 0, 0, 0, 0, "mobilenet_v2,efficientnet"},
    {"pool average", PT_GAP, 8, 2048, 7, 0, 0, 0, 0, 0, "resnet50,resnext"},
    {"pool average", PT_GAP, 8, 256, 28, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_ADD, 2, 64, 56, 0, 0, 0, 0, 0, "resnet"},
    {"elementwise", PT_ADD, 8, 512, 7, 0, 0, 0, 0, 0, "resnet"},
    {"elementwise", PT_ADD, 4, 256, 28, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_ADD, 8, 64, 56, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_ADD, 8, 128, 28, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_ADD, 16, 256, 14, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_ADD, 8, 1024, 7, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_BIAS, 256, 768, 0, 0, 0, 0, 0, 0, "vit,gpt2,bert"},
    {"elementwise", PT_BIAS, 1024, 384, 0, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_BIAS, 512, 3072, 0, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_BIAS, 4096, 256, 0, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_BIAS, 64, 1024, 0, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_BIAS, 256, 64, 0, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_BIAS, 1024, 96, 0, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_BIAS, 128, 512, 0, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_MUL, 256, 256, 0, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_MUL, 1024, 512, 0, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_MUL, 4096, 256, 0, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_MUL, 64, 2048, 0, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_MUL, 8, 96, 56, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_MUL, 8, 240, 28, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_MUL, 16, 32, 112, 0, 0, 0, 0, 0, NULL},
    {"elementwise", PT_MUL, 8, 672, 7, 0, 0, 0, 0, 0, NULL},
    {"embedding", PT_EMBED, 512, 8192, 512, 0, 0, 0, 0, 0, NULL},
    {"embedding", PT_EMBED, 2048, 32000, 256, 0, 0, 0, 0, 0, "llama"},
    {"embedding", PT_EMBED, 256, 1024, 768, 0, 0, 0, 0, 0, "gpt2,bert"},
    /* a large table read by few tokens, and many tokens of a small one: without them the
     * table's bytes (the gradient zero-fills the whole table, as PyTorch's dense one does)
     * and the rows' work grow together over the sweep's shapes, and the fit put the time on
     * the rows: GPT-2's 154 MB table gradient was priced at 0.7 ms against 12.8 measured */
    {"embedding", PT_EMBED, 128, 65536, 512, 0, 0, 0, 0, 0, NULL},
    {"embedding", PT_EMBED, 8192, 2048, 256, 0, 0, 0, 0, 0, NULL},
    {"attention", PT_ATTN, 2, 128, 768, 12, 0, 0, 0, 0, "vit,gpt2,bert"},
    {"attention", PT_ATTN, 4, 64, 256, 4, 0, 0, 0, 0, NULL},
    {"attention", PT_ATTN, 1, 256, 512, 8, 0, 0, 0, 0, NULL},
    {"attention", PT_ATTN, 2, 64, 512, 8, 0, 0, 0, 0, NULL},
    {"attention", PT_ATTN, 1, 512, 256, 4, 0, 0, 0, 0, NULL},
    {"data movement", PT_TRANSPOSE, 8, 12, 128, 64, 0, 0, 0, 0, "vit,gpt2,bert"},
    {"data movement", PT_TRANSPOSE, 2, 4, 256, 32, 0, 0, 0, 0, NULL},
    {"data movement", PT_TRANSPOSE, 4, 8, 512, 64, 0, 0, 0, 0, NULL},
    {"data movement", PT_TRANSPOSE, 8, 96, 16, 16, 1, 0, 0, 0, "convnext,swin"},
    {"data movement", PT_TRANSPOSE, 8, 384, 4, 4, 1, 0, 0, 0, "convnext,swin"},
    {"data movement", PT_TRANSPOSE, 4, 96, 56, 56, 1, 0, 0, 0, "convnext,swin"},
    {"reduction", PT_REDUCE, 8, 512, 14, 0, 0, 0, 0, 0, NULL},
    {"reduction", PT_REDUCE, 4, 64, 56, 0, 0, 0, 0, 0, NULL},
};
#define N_SWEEP (sizeof(sweep) / sizeof(sweep[0]))

/* A GPU times every shape at these multiples of its batch: at the CPU's sizes its layers fill
 * few of its multiprocessors and stay in its L2 cache (50 MB on an H100), so a fit from them
 * alone predicted a network's convolutions 3-5x slow and its BatchNorms 3x fast. The smaller
 * scale gives the fixed cost per kernel, the larger the rates of layers that fill the chip and
 * stream from memory, as a network's do at the batches GPUs train at. */
static const int64_t gpu_scale[] = {4, 32};
#define N_SCALES (sizeof(gpu_scale) / sizeof(gpu_scale[0]))

void fm_calibrate_opts_init(struct fm_calibrate_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->device = "cpu";
    o->precision = FM_PREC_FP32;
}

/* x * s with s a trainable per-channel (axis 1) or per-column scale. */
static fm_tid prescale(struct fm_nn *nn, fm_tid x, int64_t ch, int rank)
{
    if (nn->st)
        return FM_NONE;
    struct fm_shape s = {rank - 1, {ch, 1, 1}};
    if (rank == 2 || rank == 3)
        s = (struct fm_shape){1, {ch}};
    fm_tid p;
    nn->st = fm_graph_add_tensor(nn->g, "scale.weight", FM_ROLE_PARAM, nn->dtype, &s, &p);
    return nn->st ? FM_NONE : fm_nn_mul(nn, "scale", x, p);
}

/* What feeds a layer that follows convolutions in CNNs: a depthwise 3x3 convolution, whose
 * output is in the backend's blocked layout as a convolution's is inside a network. */
static fm_tid feed(struct fm_nn *nn, fm_tid x, int64_t ch)
{
    return fm_nn_conv(nn, "feed", x, ch, 3, 1, 1, ch, false);
}

static fm_tid input(struct fm_nn *nn, const char *name, enum fm_dtype dt, int rank,
                    const int64_t *dims)
{
    if (nn->st)
        return FM_NONE;
    struct fm_shape s = {rank, {0}};
    memcpy(s.dims, dims, sizeof(int64_t) * (size_t)rank);
    fm_tid t;
    nn->st = fm_graph_add_tensor(nn->g, name, FM_ROLE_INPUT, dt, &s, &t);
    return nn->st ? FM_NONE : t;
}

static fm_tid node1(struct fm_nn *nn, enum fm_op op, const char *name, const struct fm_attrs *a,
                    const fm_tid *in, int n_in)
{
    if (nn->st)
        return FM_NONE;
    fm_tid y;
    nn->st = fm_graph_add_node(nn->g, op, name, a, in, n_in, NULL, 1, &y);
    return nn->st ? FM_NONE : y;
}

static fm_tid param(struct fm_nn *nn, const char *name, int rank, const int64_t *dims)
{
    if (nn->st)
        return FM_NONE;
    struct fm_shape s = {rank, {0}};
    memcpy(s.dims, dims, sizeof(int64_t) * (size_t)rank);
    fm_tid t;
    nn->st = fm_graph_add_tensor(nn->g, name, FM_ROLE_PARAM, nn->dtype, &s, &t);
    return nn->st ? FM_NONE : t;
}

/* The graph of one sweep point at scale times its batch (or rows), its loss added: mean squared
 * error on the layer's output, or with flat_head (a backend without that loss: CUDA) the output
 * flattened to (N, rest) for a cross-entropy over its columns; the flattening is a view, no
 * kernel. */
static enum fm_status build(struct fm_ctx *ctx, const struct point *shape, bool flat_head,
                            int64_t scale, struct fm_graph **out)
{
    struct point scaled = *shape;   /* the batch (or rows) times scale */
    scaled.a *= scale;
    const struct point *p = &scaled;
    struct fm_graph *g;
    enum fm_status st = fm_graph_new(ctx, "calibrate", &g);
    if (st)
        return st;
    struct fm_nn nn;
    fm_nn_init(&nn, ctx, g, FM_DTYPE_FP32);
    struct fm_attrs a;
    fm_attrs_init(&a);
    fm_tid x, y = FM_NONE;
    switch (p->kind) {
    case PT_CONV: {
        int64_t d[4] = {p->a, p->b, p->c, p->c};
        /* Inside a network a convolution reads what a convolution (or the norm and activation
         * after it) wrote, in oneDNN's channel-blocked layout; fed by the plain per-channel
         * scale, every convolution's timing held the reorder of its input to that layout,
         * which the backend charges to the consuming layer: 0.65-0.95 ms of the 0.3-1.0 ms of
         * MobileNetV2's depthwise shapes, which predicted its depthwise and 1x1 layers 1.7-2.1
         * times their time. A stem (3 input channels) reads the image, plain, as in a network. */
        fm_tid in = input(&nn, "x", FM_DTYPE_FP32, 4, d);
        x = p->b > 3 ? feed(&nn, in, p->b) : prescale(&nn, in, p->b, 4);
        y = fm_nn_conv(&nn, "layer", x, p->d, p->e, p->f, p->e / 2, p->g, false);
        break;
    }
    case PT_LINEAR: {
        int64_t d[2] = {p->a, p->b};
        x = prescale(&nn, input(&nn, "x", FM_DTYPE_FP32, 2, d), p->b, 2);
        y = fm_nn_linear(&nn, "layer", x, p->c, true);
        break;
    }
    case PT_MATMUL: {
        int64_t da[3] = {p->a, p->b, p->c}, db[3] = {p->a, p->c, p->d};
        fm_tid in[2] = {prescale(&nn, input(&nn, "x", FM_DTYPE_FP32, 3, da), p->c, 3),
                        p->e ? param(&nn, "layer.b", 2, db + 1) : param(&nn, "layer.b", 3, db)};
        y = node1(&nn, FM_OP_MATMUL, "layer", NULL, in, 2);
        break;
    }
    case PT_SE: {
        int64_t d[4] = {p->a, p->b, p->c, p->c};
        x = feed(&nn, input(&nn, "x", FM_DTYPE_FP32, 4, d), p->b);
        fm_tid gap = node1(&nn, FM_OP_GLOBAL_AVGPOOL, "pool", NULL, &x, 1);
        fm_tid gate = fm_nn_act(&nn, "gate", FM_OP_SIGMOID, gap);
        y = fm_nn_mul(&nn, "layer", x, gate);
        break;
    }
    case PT_MUL:
        if (p->c == 0) {   /* token-major, fed by a scale */
            int64_t d[2] = {p->a, p->b};
            x = prescale(&nn, input(&nn, "x", FM_DTYPE_FP32, 2, d), p->b, 2);
            fm_tid in[2] = {x, fm_nn_act(&nn, "branch", FM_OP_SIGMOID, x)};
            y = node1(&nn, FM_OP_MUL, "layer", NULL, in, 2);
            break;
        }
        /* a CNN's activations: fed as PT_ADD's */
        /* fall through */
    case PT_BN:
    case PT_ACT:
    case PT_MAXPOOL:
    case PT_GAP:
    case PT_ADD:
    case PT_REDUCE: {
        int64_t d[4] = {p->a, p->b, p->c, p->c};
        /* Inside a CNN these layers read a convolution's (or a norm's) output, in the
         * backend's blocked layout, which costs them differently from the plain layout a
         * scale gives (BatchNorm 3 to 5 times faster): a cheap depthwise 3x3 convolution
         * feeds them */
        x = feed(&nn, input(&nn, "x", FM_DTYPE_FP32, 4, d), p->b);
        /* and in CNNs activations and residual Adds read a BatchNorm's output: on oneDNN a
         * ReLU after a BatchNorm took 1.5 to 2.5 times as long as the same ReLU after a
         * convolution (2 threads, 0.1-1.6 M elements); GELU follows Linear layers instead */
        if ((p->kind == PT_ACT && p->op != FM_OP_GELU) || p->kind == PT_ADD ||
            p->kind == PT_MUL)
            x = fm_nn_bn(&nn, "bn", x, 1e-5);
        if (p->kind == PT_BN) {
            y = fm_nn_bn(&nn, "layer", x, 1e-5);
        } else if (p->kind == PT_ACT) {   /* Clip is ReLU6 (MobileNetV2) */
            y = p->op == FM_OP_CLIP ? fm_nn_relu6(&nn, "layer", x) : fm_nn_act(&nn, "layer", p->op, x);
        } else if (p->kind == PT_MAXPOOL) {
            y = fm_nn_maxpool(&nn, "layer", x, p->e, p->f, p->e / 2, false);
        } else if (p->kind == PT_GAP) {
            y = node1(&nn, FM_OP_GLOBAL_AVGPOOL, "layer", NULL, &x, 1);
        } else if (p->kind == PT_ADD) {
            /* a residual connection, as in ResNets: two whole activations, both with
             * gradients (not a broadcast bias, whose gradient is a reduction) */
            fm_tid in[2] = {x, fm_nn_act(&nn, "branch", FM_OP_RELU, x)};
            y = node1(&nn, FM_OP_ADD, "layer", NULL, in, 2);
        } else if (p->kind == PT_MUL) {
            fm_tid in[2] = {x, fm_nn_act(&nn, "branch", FM_OP_SIGMOID, x)};
            y = node1(&nn, FM_OP_MUL, "layer", NULL, in, 2);
        } else {
            a.ints[0] = 2;
            a.ints[1] = 3;
            a.nints = 2;
            a.flags |= FM_ATTR_KEEPDIMS;
            y = node1(&nn, FM_OP_REDUCE_MEAN, "layer", &a, &x, 1);
        }
        break;
    }
    case PT_LN:
    case PT_BIAS:
    case PT_SOFTMAX: {
        int64_t d[2] = {p->a, p->b};
        x = prescale(&nn, input(&nn, "x", FM_DTYPE_FP32, 2, d), p->b, 2);
        if (p->kind == PT_BIAS) {
            int64_t w[1] = {p->b};
            fm_tid in[2] = {x, param(&nn, "layer.bias", 1, w)};
            y = node1(&nn, FM_OP_ADD, "layer", NULL, in, 2);
        } else if (p->kind == PT_LN) {
            int64_t w[1] = {p->b};
            fm_tid in[3] = {x, param(&nn, "layer.weight", 1, w), param(&nn, "layer.bias", 1, w)};
            a.axis = -1;
            a.eps = 1e-5;
            y = node1(&nn, FM_OP_LAYERNORM, "layer", &a, in, 3);
        } else {
            a.axis = -1;
            y = node1(&nn, FM_OP_SOFTMAX, "layer", &a, &x, 1);
        }
        break;
    }
    case PT_EMBED: {
        int64_t d[2] = {1, p->a}, w[2] = {p->b, p->c};
        fm_tid in[2] = {input(&nn, "ids", FM_DTYPE_INT64, 2, d), param(&nn, "layer.weight", 2, w)};
        y = node1(&nn, FM_OP_EMBEDDING, "layer", NULL, in, 2);
        break;
    }
    case PT_ATTN: {   /* Q = K = V, (batch, heads, sequence, width / heads) */
        int64_t d[4] = {p->a, p->d, p->b, p->c / p->d};
        x = prescale(&nn, input(&nn, "x", FM_DTYPE_FP32, 4, d), p->d, 4);
        fm_tid in[3] = {x, x, x};
        y = node1(&nn, FM_OP_ATTENTION, "layer", &a, in, 3);
        break;
    }
    case PT_TRANSPOSE: {
        int64_t d[4] = {p->a, p->b, p->c, p->d};
        x = prescale(&nn, input(&nn, "x", FM_DTYPE_FP32, 4, d), p->b, 4);
        int64_t perm[4] = {0, 2, 1, 3};
        if (p->e == 1) {   /* NCHW to NHWC, as ConvNeXt's LayerNorm and Linear layers want */
            perm[1] = 2;
            perm[2] = 3;
            perm[3] = 1;
        }
        memcpy(a.ints, perm, sizeof(perm));
        a.nints = 4;
        y = node1(&nn, FM_OP_TRANSPOSE, "layer", &a, &x, 1);
        break;
    }
    }
    st = nn.st;
    if (!st)
        st = fm_graph_finalize(g);
    if (!st && flat_head && fm_graph_tensor(g, y)->shape.rank > 2) {
        y = fm_nn_flatten(&nn, "head", y);
        st = nn.st ? nn.st : fm_graph_finalize(g);
    }
    struct fm_loss_info loss;
    if (!st)
        st = fm_graph_add_loss(g, y, &loss);
    if (st) {
        fm_graph_free(g);
        return st;
    }
    *out = g;
    return FM_OK;
}

/* A sample's place in the sweep, the same in every round: its shape, node, phase and cache. */
static uint64_t key_of(uint32_t point, uint32_t node, int phase, bool cold)
{
    return (uint64_t)point << 40 | (uint64_t)node << 8 | (cold ? 0x80u : 0u) | (uint64_t)phase;
}

struct samples {
    struct fm_calib_sample *v;
    uint64_t *key;
    size_t n, cap;
};

static enum fm_status push(struct fm_ctx *ctx, struct samples *s, const struct fm_calib_sample *x,
                           uint64_t key)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        void *p = fm_realloc(ctx, s->v, cap * sizeof(*s->v));
        if (!p)
            return fm_error(ctx, FM_ERR_NOMEM, "out of memory keeping calibration samples");
        s->v = p;
        p = fm_realloc(ctx, s->key, cap * sizeof(*s->key));
        if (!p)
            return fm_error(ctx, FM_ERR_NOMEM, "out of memory keeping calibration samples");
        s->key = p;
        s->cap = cap;
    }
    s->key[s->n] = key;
    s->v[s->n++] = *x;
    return FM_OK;
}

static void samples_release(struct fm_ctx *ctx, struct samples *s)
{
    fm_dealloc(ctx, s->v);
    fm_dealloc(ctx, s->key);
    memset(s, 0, sizeof(*s));
}

/* How calibrate times a graph: per layer, one warm-up step, then steps timed, with warm
 * caches or (cold) each kernel's data flushed from them. */
static void layer_timing(const struct fm_calibrate_opts *o, int steps, bool cold,
                         struct fm_measure_opts *mo)
{
    fm_measure_opts_init(mo);
    mo->device = o->device;
    mo->precision = o->precision;
    mo->threads = o->threads;
    mo->warmup = 1;
    mo->steps = steps;
    mo->per_layer = true;
    mo->cold_cache = cold;
}

/* Times one point, with warm caches or (cold) each kernel's data flushed from them; adds its
 * samples; *overhead_s gets step time minus the layers' times. */
static enum fm_status run_point(struct fm_ctx *ctx, const struct fm_calibrate_opts *o,
                                uint32_t pi, int sc, bool cold, struct samples *out,
                                double *overhead_s, char *device, size_t device_size,
                                int *threads, struct fm_backend_check *gap)
{
    struct fm_graph *g;
    bool gpu = strncmp(o->device, "cuda", 4) == 0;
    enum fm_status st = build(ctx, &sweep[pi], gpu, gpu ? gpu_scale[sc] : 1, &g);
    if (st)
        return st;
    /* A shape the backend cannot train (the CUDA backend runs CNN layers only) is left out,
     * not an error: its class then has no entries and predict uses the cold rule for it. */
    st = fm_measure_check(ctx, g, o->device, gap);
    if (st || gap->n_gaps) {
        fm_graph_free(g);
        *overhead_s = -1.0;
        return st;
    }
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    struct fm_counts *counts = NULL;
    struct fm_measurement *m = NULL;
    st = fm_count(ctx, g, &co, &counts);
    struct fm_measure_opts mo;
    layer_timing(o, o->quick ? 2 : 3, cold, &mo);
    if (!st)
        st = fm_measure(ctx, g, &mo, &m);
    double layers_ms = 0;
    for (size_t id = 0; !st && id < counts->n_nodes; id++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)id);
        /* the feeding convolution reads the graph's input, needs no input gradient and runs
         * on the plain layout: unlike any depthwise layer in a network, so not a sample */
        if (strcmp(n->name, "feed") == 0 || strcmp(n->name, "head") == 0) {
            for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
                layers_ms += m->nodes[id].ms[ph];   /* a layer all the same: not overhead */
            continue;
        }
        struct fm_calib_sample x;
        memset(&x, 0, sizeof(x));
        x.cold = cold;
        x.from = sweep[pi].from;
        x.cls = fm_op_class(n->op);
        fm_calib_kind(g, (fm_nid)id, x.kind);
        const struct fm_node_timing *t = &m->nodes[id];
        for (int ph = 0; ph < FM_PHASE_COUNT && !st; ph++) {
            layers_ms += t->ms[ph];
            const struct fm_work *w = &counts->nodes[id].phase[ph];
            double flops = (double)fm_work_flops(w);
            double bytes = (double)(w->bytes_read + w->bytes_written);
            if (ph == FM_PHASE_BWD_DATA && !t->bwd_split) {
                const struct fm_work *w2 = &counts->nodes[id].phase[FM_PHASE_BWD_WEIGHT];
                flops += (double)fm_work_flops(w2);
                bytes += (double)(w2->bytes_read + w2->bytes_written);
            } else if (ph == FM_PHASE_BWD_WEIGHT && !t->bwd_split) {
                continue;
            }
            if ((flops <= 0 && bytes <= 0) || !(t->ms[ph] > 0))
                continue;
            x.phase = (enum fm_phase)ph;
            x.flops = flops;
            x.bytes = bytes;
            x.seconds = t->ms[ph] * 1e-3;
            st = push(ctx, out, &x, key_of(pi * N_SCALES + (uint32_t)sc, (uint32_t)id, ph, cold));
        }
    }
    if (!st) {
        *overhead_s = fmax(0.0, (m->step_ms_median - layers_ms) * 1e-3);
        snprintf(device, device_size, "%s", m->device_name);
        *threads = m->threads;
    }
    fm_measurement_free(m);
    fm_counts_free(counts);
    fm_graph_free(g);
    return st;
}

/* Steps through a comma-separated list: *item gets the next item and *len its length; false
 * at the end (*p NULL or ""). An empty item between two commas is an item of length 0. */
bool fm_calib_list_next(const char **p, const char **item, size_t *len)
{
    if (!*p || !**p)
        return false;
    const char *comma = strchr(*p, ',');
    *item = *p;
    *len = comma ? (size_t)(comma - *p) : strlen(*p);
    *p = comma ? comma + 1 : *p + *len;
    return true;
}

/* Whether the comma-separated list has name (the whole of one of its items). */
bool fm_calib_list_has(const char *list, const char *name, size_t len)
{
    const char *item;
    size_t n;
    while (fm_calib_list_next(&list, &item, &n)) {
        if (n == len && strncmp(item, name, len) == 0)
            return true;
    }
    return false;
}

/* Whether a shape taken from the families in from (comma-separated, or NULL) is taken from a
 * family in the leave-out list. */
bool fm_calib_left_out(const char *from, const char *leave_out)
{
    const char *f = from, *item;
    size_t n;
    while (fm_calib_list_next(&f, &item, &n)) {
        if (fm_calib_list_has(leave_out, item, n))
            return true;
    }
    return false;
}

/* Every family in the leave-out list must be one some shape is taken from. */
static enum fm_status check_leave_out(struct fm_ctx *ctx, const char *leave_out)
{
    if (strlen(leave_out) >= sizeof(((struct fm_calibration *)0)->left_out))
        return fm_error(ctx, FM_ERR_INVALID, "fm_calibrate_opts.leave_out: a list of %zu "
                                             "characters is too long (the file records it in at "
                                             "most 255)",
                        strlen(leave_out));
    char known[512] = "";
    size_t used = 0, n;
    const char *item;
    for (size_t i = 0; i < N_SWEEP; i++) {
        const char *f = sweep[i].from;
        while (fm_calib_list_next(&f, &item, &n)) {
            if (!fm_calib_list_has(known, item, n) && used + n + 2 < sizeof(known))
                used += (size_t)snprintf(known + used, sizeof(known) - used, "%s%.*s",
                                         used ? "," : "", (int)n, item);
        }
    }
    const char *p = leave_out;
    while (fm_calib_list_next(&p, &item, &n)) {
        if (!fm_calib_list_has(known, item, n))
            return fm_error(ctx, FM_ERR_INVALID,
                            "fm_calibrate_opts.leave_out: no sweep shape is taken from '%.*s' (the "
                            "families shapes are taken from: %s)",
                            (int)n, item, known);
    }
    return FM_OK;
}

/* The eviction curve's amounts of other traffic: 2, 4, ... 512 MB. */
#define EVICT_STEPS 9
/* Rounds of the eviction probe, spread evenly over the sweep's warm and cold timings: on a
 * shared machine how much of the last-level cache a guest keeps moves with its neighbours
 * from one second to the next (a 4 MB chain read at the latency of memory for seconds on
 * end, right after it was read, while the machine itself was idle), so the curve is a median
 * over the time the layers were timed in, not one moment's reading. */
#define EVICT_ROUNDS 15

/* v[0..n) replaced by its closest non-decreasing sequence in least squares (pool adjacent
 * violators): a curve that more traffic can only push further, without letting one slow
 * timing (another process's burst) raise every larger size to it, as a running maximum did
 * (one probe put MobileNetV2's step fully cold from 128 MB on, 38% over its time). */
void fm_calib_monotone_fit(double *v, int n)
{
    double mean[FM_CALIB_EVICT_MAX];
    int len[FM_CALIB_EVICT_MAX], blocks = 0;
    for (int i = 0; i < n && i < FM_CALIB_EVICT_MAX; i++) {
        mean[blocks] = v[i];
        len[blocks++] = 1;
        while (blocks > 1 && mean[blocks - 2] > mean[blocks - 1]) {
            int a = len[blocks - 2], b = len[blocks - 1];
            mean[blocks - 2] = (mean[blocks - 2] * a + mean[blocks - 1] * b) / (a + b);
            len[blocks - 2] = a + b;
            blocks--;
        }
    }
    for (int b = 0, i = 0; b < blocks; b++) {
        for (int j = 0; j < len[b]; j++)
            v[i++] = mean[b];
    }
}

bool fm_calib_evict_curve(const double *warm, const double *after, const double *cold,
                          int rounds, int n, double *frac, double *hit_ns, double *miss_ns)
{
    double v[FM_CALIB_EVICT_MAX > EVICT_ROUNDS ? FM_CALIB_EVICT_MAX : EVICT_ROUNDS];
    if (rounds < 1 || rounds > (int)(sizeof(v) / sizeof(v[0])) || n < 1 ||
        n > FM_CALIB_EVICT_MAX)
        return false;
    double hit = warm[0], lo, hi, miss;
    for (int r = 1; r < rounds; r++)
        hit = fmin(hit, warm[r]);
    memcpy(v, cold, (size_t)rounds * sizeof(*v));
    fm_stats_summary(v, (size_t)rounds, &lo, &miss, &hi);
    *hit_ns = hit;
    *miss_ns = miss;
    if (!(hit > 0) || !(miss >= 2.0 * hit))
        return false;
    for (int k = 0; k < n; k++) {
        for (int r = 0; r < rounds; r++) {
            double x = (after[r * n + k] - hit) / (miss - hit);
            v[r] = x < 0 ? 0 : x > 1 ? 1 : x;
        }
        fm_stats_summary(v, (size_t)rounds, &lo, &frac[k], &hi);
    }
    fm_calib_monotone_fit(frac, n);
    return true;
}

/* The eviction probe's rounds during a calibration. */
struct evict_rounds {
    struct fm_evict_probe *probe;   /* NULL: no curve (a GPU, a warm-only sweep, no clflush) */
    int n, want;
    size_t every;                   /* one round before every `every` timings */
    double bytes[EVICT_STEPS];
    double warm[EVICT_ROUNDS], cold[EVICT_ROUNDS], after[EVICT_ROUNDS * EVICT_STEPS];
};

static enum fm_status evict_start(struct fm_ctx *ctx, const struct fm_calibrate_opts *o,
                                  bool cold, size_t timings, struct evict_rounds *er)
{
    memset(er, 0, sizeof(*er));
    if (!cold)
        return FM_OK;
    for (int k = 0; k < EVICT_STEPS; k++)
        er->bytes[k] = (double)(2u << k) * 1048576.0;
    er->want = o->quick ? 3 : EVICT_ROUNDS;
    er->every = timings / (size_t)er->want;
    if (er->every < 1)
        er->every = 1;
    enum fm_status st = fm_evict_probe_new(ctx, er->bytes[EVICT_STEPS - 1], &er->probe);
    if (st == FM_ERR_UNSUPPORTED) {
        fm_log(ctx, "calibrate: %s: no eviction curve, layers are predicted as the warm sweep "
                    "timed them", fm_ctx_error(ctx));
        return FM_OK;
    }
    return st;
}

/* Before the done-th timing of the sweep: a round of the probe every er->every timings. */
static enum fm_status evict_tick(struct evict_rounds *er, size_t done)
{
    if (!er->probe || er->n >= er->want || done % er->every != 0)
        return FM_OK;
    int r = er->n++;
    return fm_evict_probe_round(er->probe, er->bytes, EVICT_STEPS, &er->warm[r],
                                &er->after[r * EVICT_STEPS], &er->cold[r]);
}

/* The curve into meta (fm_calibration.evict_*), said on the log; frees the probe. */
static void evict_finish(struct fm_ctx *ctx, struct evict_rounds *er, struct fm_calibration *meta)
{
    meta->n_evict = 0;
    if (!er->probe)
        return;
    fm_evict_probe_free(er->probe);
    er->probe = NULL;
    double f[EVICT_STEPS], hit = 0, miss = 0;
    if (!fm_calib_evict_curve(er->warm, er->after, er->cold, er->n, EVICT_STEPS, f, &hit,
                              &miss)) {
        fm_log(ctx, "calibrate: a %u MB chain of loads took %.3g ns a line with its data in "
                    "the caches and %.3g ns flushed, not twice as long: no eviction curve, "
                    "layers are predicted as the warm sweep timed them%s",
               FM_EVICT_CHASE_BYTES >> 20, hit, miss,
               hit > 0.7 * miss ? " (the chain, just read, was read again from memory in every "
                                  "round: something else, another guest on a shared host too, "
                                  "kept the last-level cache busy all along, and the layers "
                                  "were timed so; a calibration made when the cache holds data "
                                  "carries over better)"
                                : "");
        return;
    }
    for (int k = 0; k < EVICT_STEPS; k++) {
        meta->evict_bytes[meta->n_evict] = er->bytes[k];
        meta->evict_frac[meta->n_evict++] = f[k];
    }
    fm_log(ctx, "calibrate: eviction curve from %d rounds (%.3g ns a line in the caches, %.3g "
                "in memory): %.2f after %.0f MB of other traffic, %.2f after %.0f MB, %.2f after "
                "%.0f MB",
           er->n, hit, miss, f[3], er->bytes[3] / 1048576.0, f[5], er->bytes[5] / 1048576.0,
           f[7], er->bytes[7] / 1048576.0);
}

/* Adds "class (op)" of a shape the backend cannot train to the list, once. */
static void note_gap(const struct point *p, const struct fm_backend_check *gap, char *list,
                     size_t size)
{
    char item[96];
    snprintf(item, sizeof(item), "%s (%s)", p->cls, gap->gaps[0].op);
    if (strstr(list, item))
        return;
    size_t len = strlen(list);
    if (len + strlen(item) + 3 < size)
        snprintf(list + len, size - len, "%s%s", len ? ", " : "", item);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

size_t fm_calib_sweep_count(const char *label, const char *leave_out)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof(sweep) / sizeof(sweep[0]); i++)
        n += strcmp(sweep[i].cls, label) == 0 && !fm_calib_left_out(sweep[i].from, leave_out);
    return n;
}

/* The op of the layer under test of a sweep point whose kind is one op's; FM_OP_COUNT for
 * the convolutions, products, adds and gates, whose kinds depend on the shape. */
static enum fm_op point_op(const struct point *p)
{
    switch (p->kind) {
    case PT_ACT:
        return p->op;
    case PT_BN:
        return FM_OP_BATCHNORM;
    case PT_LN:
        return FM_OP_LAYERNORM;
    case PT_SOFTMAX:
        return FM_OP_SOFTMAX;
    case PT_MAXPOOL:
        return FM_OP_MAXPOOL;
    case PT_ATTN:
        return FM_OP_ATTENTION;
    default:
        return FM_OP_COUNT;
    }
}

size_t fm_calib_sweep_op_count(enum fm_op op, const char *leave_out)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof(sweep) / sizeof(sweep[0]); i++)
        n += point_op(&sweep[i]) == op && !fm_calib_left_out(sweep[i].from, leave_out);
    return n;
}

/* Whether the run leaves sweep point i out (--quick, --leave-out). */
static bool skipped(const struct fm_calibrate_opts *o, size_t i)
{
    return (o->quick && i % 2) || (o->leave_out && fm_calib_left_out(sweep[i].from, o->leave_out));
}

/* Where key is in keys[0..n): at k when every round timed the same node-phases (a phase timed
 * at 0 in one round only shifts the rest); n when it is not there. */
static size_t find_key(const uint64_t *keys, size_t n, size_t k, uint64_t key)
{
    if (k < n && keys[k] == key)
        return k;
    for (size_t j = 0; j < n; j++) {
        if (keys[j] == key)
            return j;
    }
    return n;
}

size_t fm_calib_median_rounds(const struct fm_calib_sample *const *v, const uint64_t *const *keys,
                              const size_t *n, int rounds, struct fm_calib_sample *out)
{
    size_t unsteady = 0;
    for (size_t k = 0; k < n[0]; k++) {
        double t[FM_CALIBRATE_MAX_ROUNDS];
        int m = 0;
        for (int r = 0; r < rounds && r < FM_CALIBRATE_MAX_ROUNDS; r++) {
            size_t j = find_key(keys[r], n[r], k, keys[0][k]);
            if (j < n[r])
                t[m++] = v[r][j].seconds;
        }
        double lo, hi;
        out[k] = v[0][k];
        fm_stats_summary(t, (size_t)m, &lo, &out[k].seconds, &hi);
        unsteady += hi > 2.0 * lo;
    }
    return unsteady;
}

/* out gets round 0's samples, each with the median of its times over the rounds. A machine
 * busy with other work shows as layers whose rounds disagree: said on the log, with how many. */
static enum fm_status median_over_rounds(struct fm_ctx *ctx, const struct samples *round,
                                         int rounds, struct samples *out)
{
    const struct fm_calib_sample *v[FM_CALIBRATE_MAX_ROUNDS];
    const uint64_t *keys[FM_CALIBRATE_MAX_ROUNDS];
    size_t n[FM_CALIBRATE_MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        v[r] = round[r].v;
        keys[r] = round[r].key;
        n[r] = round[r].n;
    }
    out->n = out->cap = round[0].n;
    out->v = fm_alloc(ctx, (round[0].n + 1) * sizeof(*out->v));
    out->key = fm_alloc(ctx, (round[0].n + 1) * sizeof(*out->key));
    if (!out->v || !out->key)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory keeping calibration samples");
    if (round[0].n)
        memcpy(out->key, round[0].key, round[0].n * sizeof(*out->key));
    size_t unsteady = fm_calib_median_rounds(v, keys, n, rounds, out->v);
    if (unsteady > round[0].n / 20)
        fm_log(ctx,
               "%zu of %zu layer timings varied by more than 2x between rounds: something else "
               "was running; the medians are kept, but a calibration made on a quiet machine "
               "predicts better",
               unsteady, round[0].n);
    return FM_OK;
}

enum fm_status fm_calibrate(struct fm_ctx *ctx, const struct fm_calibrate_opts *o,
                            struct fm_calibration **out, struct fm_calib_sample **samples_out,
                            size_t *n_samples_out)
{
    if (!o || !out)
        return fm_error(ctx, FM_ERR_INVALID, "fm_calibrate: no options or no result");
    if (o->leave_out && o->leave_out[0]) {
        enum fm_status lst = check_leave_out(ctx, o->leave_out);
        if (lst)
            return lst;
    }
    int rounds = o->rounds > 0 ? o->rounds : o->quick ? 1 : FM_CALIBRATE_ROUNDS;
    if (rounds > FM_CALIBRATE_MAX_ROUNDS)
        return fm_error(ctx, FM_ERR_INVALID,
                        "calibrate: more rounds than %d asked (each round times every shape "
                        "once; 3 are enough to outvote a busy moment)",
                        FM_CALIBRATE_MAX_ROUNDS);
    struct fm_calibration meta;
    memset(&meta, 0, sizeof(meta));
    /* the probe's figures name the device's ceilings in the file */
    struct fm_probe_opts po;
    fm_probe_opts_init(&po);
    po.device = o->device;
    po.threads = o->threads;
    po.repetitions = 3;
    po.progress = o->progress;
    po.progress_user = o->progress_user;
    struct fm_probe_result pr;
    enum fm_status st = fm_probe(ctx, &po, &pr);
    if (st)
        return st;
    /* a CPU has no tf32: its fp32 rate; a GPU's probe times tf32 GEMMs of its own */
    enum fm_precision pp = o->precision == FM_PREC_TF32 && strcmp(o->device, "cpu") == 0
                               ? FM_PREC_FP32
                               : o->precision;
    meta.peak = pr.gemm[pp].median > pr.fma_all[pp].median ? pr.gemm[pp].median
                                                           : pr.fma_all[pp].median;
    meta.bandwidth = pr.bw_triad.median;
    struct samples round[FM_CALIBRATE_MAX_ROUNDS];
    memset(round, 0, sizeof(round));
    struct samples s = {0};
    size_t n_sc = strncmp(o->device, "cuda", 4) == 0 ? N_SCALES : 1;   /* sizes per shape */
    double *overheads = fm_alloc(ctx, (size_t)rounds * N_SWEEP * n_sc * sizeof(double));
    if (!overheads)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory");
    size_t n_pts = 0, n_todo = 0, n_done = 0;
    char device[128] = "";
    int threads = 0;
    char untimed[512] = "";   /* "matmul (MatMul, 3 shapes), ..." the backend cannot train */
    for (size_t i = 0; i < N_SWEEP; i++)
        n_todo += !skipped(o, i);
    n_todo *= n_sc;
    /* cold timings: the CPU backend flushes each kernel's data (fm_measure_opts.cold_cache) */
    bool cold = !o->warm_only && strcmp(o->device, "cpu") == 0;
    n_todo *= (size_t)rounds * (cold ? 2 : 1);
    struct evict_rounds er;
    st = evict_start(ctx, o, cold, n_todo, &er);
    /* Rounds over the whole sweep, not repeats of one shape in a row: a burst of other work on
     * the machine (seconds long on a shared VM) then spoils one round of a shape, not all of
     * them, and the median over rounds drops it. Each shape's cold timing follows its warm one
     * in the same round, so the two see the machine in the same state: a cold round of its
     * own, once after the warm ones, had one burst price every dense convolution's FLOPs at
     * 1.8 times their warm rate and the steps of compute-bound networks 25-30% over. */
    for (int r = 0; r < rounds && !st; r++) {
        for (size_t j = 0; j < N_SWEEP * n_sc && !st; j++) {
            size_t i = j / n_sc;
            if (skipped(o, i))
                continue;
            for (int c = 0; c <= (int)cold && !st; c++) {
                if (o->progress) {
                    char what[64];
                    snprintf(what, sizeof(what), "%s: layers%s%s", sweep[i].cls,
                             c ? ", cold caches" : "", rounds > 1 ? " (round " : "");
                    if (rounds > 1)
                        snprintf(what + strlen(what), sizeof(what) - strlen(what),
                                 "%d of %d)", r + 1, rounds);
                    o->progress(o->progress_user, what, (int)n_done, (int)n_todo);
                }
                st = evict_tick(&er, n_done);
                struct fm_backend_check gap;
                memset(&gap, 0, sizeof(gap));
                double unused;
                if (!st)
                    st = run_point(ctx, o, (uint32_t)i, (int)(j % n_sc), c, &round[r],
                                   c ? &unused : &overheads[n_pts], device, sizeof(device),
                                   &threads, &gap);
                if (!st && !c && gap.n_gaps && r == 0)
                    note_gap(&sweep[i], &gap, untimed, sizeof(untimed));
                n_pts += !st && !c && !gap.n_gaps;
                n_done++;
                if (!st && gap.n_gaps)
                    break;   /* nothing to time cold either */
            }
        }
    }
    if (!st && n_pts == 0)
        st = fm_error(ctx, FM_ERR_UNSUPPORTED, "calibrate: the %s backend can train none of the "
                      "sweep's layers", o->device);
    if (!st && untimed[0])
        fm_log(ctx, "calibrate: the %s backend cannot train %s: those shapes were left out, and "
               "predict times layers of a class without entries by the cold rule (and says so)",
               o->device, untimed);
    if (!st)
        st = median_over_rounds(ctx, round, rounds, &s);
    for (int r = 0; r < rounds; r++)
        samples_release(ctx, &round[r]);
    if (o->progress)
        o->progress(o->progress_user, "done: layers", (int)n_todo, (int)n_todo);
    if (!st)
        evict_finish(ctx, &er, &meta);
    fm_evict_probe_free(er.probe);
    if (!st) {
        qsort(overheads, n_pts, sizeof(double), cmp_double);
        meta.step_overhead_s = n_pts ? overheads[n_pts / 2] : 0.0;
        snprintf(meta.device, sizeof(meta.device), "%s", device);
        snprintf(meta.backend, sizeof(meta.backend), "%s",
                 strncmp(o->device, "cuda", 4) == 0 ? "cuda" : "cpu");
        meta.threads = strcmp(meta.backend, "cpu") == 0 ? threads : 0;
        meta.precision = o->precision;
        meta.rounds = rounds;
        snprintf(meta.left_out, sizeof(meta.left_out), "%s", o->leave_out ? o->leave_out : "");
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(meta.date, sizeof(meta.date), "%Y-%m-%dT%H:%M:%SZ", &tm);
        st = fm_calibration_fit(ctx, s.v, s.n, &meta, out);
    }
    fm_dealloc(ctx, overheads);
    if (!st && samples_out) {
        *samples_out = s.v;
        *n_samples_out = s.n;
        s.v = NULL;
    }
    samples_release(ctx, &s);
    return st;
}
