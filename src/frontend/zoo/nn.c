/* The module-style builder behind the built-in architectures (see nn.h). Parameter shapes and
 * names follow torch.nn: Conv2d weight (Cout, Cin/g, kh, kw), BatchNorm2d weight/bias/
 * running_mean/running_var (C), Linear weight (out, in). */
#include "nn.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void fm_nn_init(struct fm_nn *nn, struct fm_ctx *ctx, struct fm_graph *g, enum fm_dtype dtype)
{
    memset(nn, 0, sizeof(*nn));
    nn->ctx = ctx;
    nn->g = g;
    nn->dtype = dtype;
}

void fm_nn_push(struct fm_nn *nn, const char *fmt, ...)
{
    char part[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(part, sizeof(part), fmt, ap);
    va_end(ap);
    size_t len = strlen(nn->prefix);
    snprintf(nn->prefix + len, sizeof(nn->prefix) - len, "%s%s", len ? "." : "", part);
}

void fm_nn_pop(struct fm_nn *nn)
{
    char *dot = strrchr(nn->prefix, '.');
    if (dot)
        *dot = '\0';
    else
        nn->prefix[0] = '\0';
}

/* Full, unique layer name: prefix.name, then prefix.name_1, _2 ... when a module is reused
 * (torchvision applies one ReLU module several times; torch.fx numbers the calls the same way). */
static void layer_name(struct fm_nn *nn, const char *name, char *buf, size_t size)
{
    char base[384];
    snprintf(base, sizeof(base), "%s%s%s", nn->prefix, nn->prefix[0] ? "." : "", name);
    snprintf(buf, size, "%s", base);
    for (int i = 1; fm_graph_find_tensor(nn->g, buf) != FM_NONE; i++)
        snprintf(buf, size, "%s_%d", base, i);
}

const struct fm_shape *fm_nn_shape(struct fm_nn *nn, fm_tid x)
{
    const struct fm_tensor *t = fm_graph_tensor(nn->g, x);
    return t ? &t->shape : NULL;
}

int64_t fm_nn_channels(struct fm_nn *nn, fm_tid x)
{
    const struct fm_shape *s = fm_nn_shape(nn, x);
    return s && s->rank >= 2 ? s->dims[1] : 0;
}

static fm_tid param(struct fm_nn *nn, const char *layer, const char *suffix, enum fm_role role,
                    int rank, const int64_t *dims)
{
    if (nn->st)
        return FM_NONE;
    char name[640];   /* layer names are at most 511 bytes, suffixes a dozen */
    snprintf(name, sizeof(name), "%s.%s", layer, suffix);
    struct fm_shape s = {rank, {0}};
    memcpy(s.dims, dims, sizeof(int64_t) * (size_t)rank);
    fm_tid t = FM_NONE;
    nn->st = fm_graph_add_tensor(nn->g, name, role, nn->dtype, &s, &t);
    return nn->st ? FM_NONE : t;
}

static fm_tid node(struct fm_nn *nn, enum fm_op op, const char *name, const struct fm_attrs *a,
                   const fm_tid *in, int n_in)
{
    if (nn->st)
        return FM_NONE;
    fm_tid out = FM_NONE;
    nn->st = fm_graph_add_node(nn->g, op, name, a, in, n_in, NULL, 1, &out);
    return nn->st ? FM_NONE : out;
}

fm_tid fm_nn_conv_full(struct fm_nn *nn, const char *name, fm_tid x, int64_t cout, int64_t kh,
                       int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dil,
                       int64_t groups, bool bias)
{
    if (nn->st)
        return FM_NONE;
    char full[512];
    layer_name(nn, name, full, sizeof(full));
    int64_t cin = fm_nn_channels(nn, x);
    int64_t wd[4] = {cout, groups > 0 ? cin / groups : cin, kh, kw};
    fm_tid in[3] = {x, param(nn, full, "weight", FM_ROLE_PARAM, 4, wd), FM_NONE};
    int n_in = 2;
    if (bias) {
        int64_t bd[1] = {cout};
        in[2] = param(nn, full, "bias", FM_ROLE_PARAM, 1, bd);
        n_in = 3;
    }
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.kernel[0] = kh;
    a.kernel[1] = kw;
    a.stride[0] = sh;
    a.stride[1] = sw;
    a.pad[0] = a.pad[2] = ph;
    a.pad[1] = a.pad[3] = pw;
    a.dilation[0] = a.dilation[1] = dil;
    a.groups = groups;
    return node(nn, FM_OP_CONV, full, &a, in, n_in);
}

fm_tid fm_nn_conv(struct fm_nn *nn, const char *name, fm_tid x, int64_t cout, int64_t k,
                  int64_t stride, int64_t pad, int64_t groups, bool bias)
{
    return fm_nn_conv_full(nn, name, x, cout, k, k, stride, stride, pad, pad, 1, groups, bias);
}

fm_tid fm_nn_bn(struct fm_nn *nn, const char *name, fm_tid x, double eps)
{
    if (nn->st)
        return FM_NONE;
    char full[512];
    layer_name(nn, name, full, sizeof(full));
    int64_t c[1] = {fm_nn_channels(nn, x)};
    fm_tid in[5] = {x, param(nn, full, "weight", FM_ROLE_PARAM, 1, c),
                    param(nn, full, "bias", FM_ROLE_PARAM, 1, c),
                    param(nn, full, "running_mean", FM_ROLE_BUFFER, 1, c),
                    param(nn, full, "running_var", FM_ROLE_BUFFER, 1, c)};
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.eps = eps;
    return node(nn, FM_OP_BATCHNORM, full, &a, in, 5);
}

fm_tid fm_nn_act(struct fm_nn *nn, const char *name, enum fm_op op, fm_tid x)
{
    if (nn->st)
        return FM_NONE;
    char full[512];
    layer_name(nn, name, full, sizeof(full));
    struct fm_attrs a;
    fm_attrs_init(&a);
    if (op == FM_OP_HARDSIGMOID) {   /* torch.nn.Hardsigmoid: relu6(x + 3) / 6 */
        a.alpha = 1.0 / 6.0;
        a.beta = 0.5;
    }
    return node(nn, op, full, &a, &x, 1);
}

fm_tid fm_nn_relu6(struct fm_nn *nn, const char *name, fm_tid x)
{
    if (nn->st)
        return FM_NONE;
    char full[512];
    layer_name(nn, name, full, sizeof(full));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.lo = 0.0;
    a.hi = 6.0;
    return node(nn, FM_OP_CLIP, full, &a, &x, 1);
}

static fm_tid pool(struct fm_nn *nn, enum fm_op op, const char *name, fm_tid x, int64_t k,
                   int64_t stride, int64_t pad, unsigned flags)
{
    if (nn->st)
        return FM_NONE;
    char full[512];
    layer_name(nn, name, full, sizeof(full));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.kernel[0] = a.kernel[1] = k;
    a.stride[0] = a.stride[1] = stride;
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = pad;
    a.flags = flags;
    return node(nn, op, full, &a, &x, 1);
}

fm_tid fm_nn_maxpool(struct fm_nn *nn, const char *name, fm_tid x, int64_t k, int64_t stride,
                     int64_t pad, bool ceil_mode)
{
    return pool(nn, FM_OP_MAXPOOL, name, x, k, stride, pad, ceil_mode ? FM_ATTR_CEIL_MODE : 0);
}

fm_tid fm_nn_avgpool(struct fm_nn *nn, const char *name, fm_tid x, int64_t k, int64_t stride,
                     int64_t pad, bool ceil_mode, bool count_include_pad)
{
    return pool(nn, FM_OP_AVGPOOL, name, x, k, stride, pad,
                (ceil_mode ? FM_ATTR_CEIL_MODE : 0u) | (count_include_pad ? FM_ATTR_COUNT_PAD : 0u));
}

fm_tid fm_nn_adaptive_avgpool(struct fm_nn *nn, const char *name, fm_tid x, int64_t oh,
                              int64_t ow)
{
    if (nn->st)
        return FM_NONE;
    char full[512];
    layer_name(nn, name, full, sizeof(full));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.out_size[0] = oh;
    a.out_size[1] = ow;
    return node(nn, FM_OP_ADAPTIVE_AVGPOOL, full, &a, &x, 1);
}

fm_tid fm_nn_flatten(struct fm_nn *nn, const char *name, fm_tid x)
{
    if (nn->st)
        return FM_NONE;
    char full[512];
    layer_name(nn, name, full, sizeof(full));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.axis = 1;
    return node(nn, FM_OP_FLATTEN, full, &a, &x, 1);
}

fm_tid fm_nn_linear(struct fm_nn *nn, const char *name, fm_tid x, int64_t nout, bool bias)
{
    if (nn->st)
        return FM_NONE;
    char full[512];
    layer_name(nn, name, full, sizeof(full));
    const struct fm_shape *s = fm_nn_shape(nn, x);
    int64_t wd[2] = {nout, s ? s->dims[s->rank - 1] : 0};
    fm_tid in[3] = {x, param(nn, full, "weight", FM_ROLE_PARAM, 2, wd), FM_NONE};
    int n_in = 2;
    if (bias) {
        int64_t bd[1] = {nout};
        in[2] = param(nn, full, "bias", FM_ROLE_PARAM, 1, bd);
        n_in = 3;
    }
    return node(nn, FM_OP_LINEAR, full, NULL, in, n_in);
}

fm_tid fm_nn_dropout(struct fm_nn *nn, const char *name, fm_tid x, double p)
{
    if (nn->st)
        return FM_NONE;
    char full[512];
    layer_name(nn, name, full, sizeof(full));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.ratio = p;
    return node(nn, FM_OP_DROPOUT, full, &a, &x, 1);
}

static fm_tid binary(struct fm_nn *nn, enum fm_op op, const char *name, fm_tid a, fm_tid b)
{
    if (nn->st)
        return FM_NONE;
    char full[512];
    layer_name(nn, name, full, sizeof(full));
    fm_tid in[2] = {a, b};
    return node(nn, op, full, NULL, in, 2);
}

fm_tid fm_nn_add(struct fm_nn *nn, const char *name, fm_tid a, fm_tid b)
{
    return binary(nn, FM_OP_ADD, name, a, b);
}

fm_tid fm_nn_mul(struct fm_nn *nn, const char *name, fm_tid a, fm_tid b)
{
    return binary(nn, FM_OP_MUL, name, a, b);
}

fm_tid fm_nn_concat(struct fm_nn *nn, const char *name, const fm_tid *xs, int n, int64_t axis)
{
    if (nn->st)
        return FM_NONE;
    char full[512];
    layer_name(nn, name, full, sizeof(full));
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.axis = axis;
    return node(nn, FM_OP_CONCAT, full, &a, xs, n);
}

fm_tid fm_nn_conv_bn_act(struct fm_nn *nn, const char *name, fm_tid x, int64_t cout, int64_t k,
                         int64_t stride, int64_t groups, double eps, enum fm_op act)
{
    fm_nn_push(nn, "%s", name);
    x = fm_nn_conv(nn, "0", x, cout, k, stride, (k - 1) / 2, groups, false);
    x = fm_nn_bn(nn, "1", x, eps);
    if (act == FM_OP_CLIP)
        x = fm_nn_relu6(nn, "2", x);
    else if (act != FM_OP_IDENTITY)
        x = fm_nn_act(nn, "2", act, x);
    fm_nn_pop(nn);
    return x;
}

fm_tid fm_nn_squeeze_excitation(struct fm_nn *nn, const char *name, fm_tid x, int64_t squeeze,
                                enum fm_op act, enum fm_op scale_act)
{
    int64_t c = fm_nn_channels(nn, x);
    fm_nn_push(nn, "%s", name);
    fm_tid s = fm_nn_adaptive_avgpool(nn, "avgpool", x, 1, 1);
    s = fm_nn_conv(nn, "fc1", s, squeeze, 1, 1, 0, 1, true);
    s = fm_nn_act(nn, "activation", act, s);
    s = fm_nn_conv(nn, "fc2", s, c, 1, 1, 0, 1, true);
    s = fm_nn_act(nn, "scale_activation", scale_act, s);
    x = fm_nn_mul(nn, "mul", s, x);   /* scale * input, as torchvision writes it */
    fm_nn_pop(nn);
    return x;
}

int64_t fm_nn_make_divisible(double v, int64_t divisor)
{
    int64_t nv = (int64_t)(v + divisor / 2.0) / divisor * divisor;
    if (nv < divisor)
        nv = divisor;
    if ((double)nv < 0.9 * v)
        nv += divisor;
    return nv;
}
