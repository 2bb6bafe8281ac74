/* ONNX ops -> flopmeter ops, opsets 1 to 21: one mapper per kind of op, turning attributes and
 * constant operands (axes, pads, scales, target shapes) into the op's attrs, and the table that
 * picks it. Exported patterns stay as they are (Gemm, MatMul + Add, an Erf-based GELU
 * subgraph); an op without a mapping becomes an uncounted node. Attribute access, tensors and
 * the roles of initializers are onnx_build.c's, never decided here. */
#include "onnx_internal.h"

#include <math.h>
#include <string.h>

/* ---- helpers ---- */

static const struct fm_tensor *tensor(const struct ox *ox, fm_tid t)
{
    return t == FM_NONE ? NULL : &ox->g->tensors[t];
}

/* Inputs without trailing omitted ones. */
static int trim(const fm_tid *in, int n)
{
    while (n > 0 && in[n - 1] == FM_NONE)
        n--;
    return n;
}

static enum fm_status need(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in, int n_in,
                           int count)
{
    for (int i = 0; i < count; i++) {
        if (i >= n_in || in[i] == FM_NONE)
            return ox_node_error(ox, node, FM_ERR_PARSE, "required input %d is missing", i);
    }
    return FM_OK;
}

/* A float scalar operand (Clip bounds, a dropout ratio): its value when known. */
static bool scalar_value(const struct ox *ox, fm_tid t, double *out)
{
    const struct ox_val *v = ox_val_of(ox, t);
    if (!v || v->n != 1)
        return false;
    *out = v->is_float ? v->f[0] : (double)v->i[0];
    return true;
}

/* Axes from an input (newer opsets) or an attribute (older ones). */
static enum fm_status axes_operand(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                   int n_in, int slot, bool from_input, const char *what,
                                   int64_t *axes, int *n)
{
    *n = 0;
    if (!from_input)
        return ox_attr_ints(ox, node, what, axes, FM_MAX_INTS, n);
    if (slot >= n_in || in[slot] == FM_NONE)
        return FM_OK;
    const struct ox_val *v;
    enum fm_status st = ox_need_ints(ox, node, in[slot], what, &v);
    if (st)
        return st;
    if (v->n > FM_MAX_DIMS)
        return ox_node_error(ox, node, FM_ERR_PARSE, "%llu %s is too many",
                             (unsigned long long)v->n, what);
    for (uint64_t k = 0; k < v->n; k++)
        axes[k] = v->i[k];
    *n = (int)v->n;
    return FM_OK;
}

/* The outputs of an op whose later outputs are optional (LayerNorm's Mean and InvStdDev,
 * BatchNorm's statistics, Dropout's mask), at most max: up to the last one the file names.
 * attrs.ints[0] gets the mask of those omitted before it (ops.h: fm_output_written). */
static int optional_outputs(const Onnx__NodeProto *node, int max, struct fm_attrs *a)
{
    int n = node->n_output > (size_t)max ? max : (int)node->n_output;
    while (n > 1 && !*ox_str(node->output[n - 1]))
        n--;
    int64_t omitted = 0;
    for (int i = 1; i < n; i++) {
        if (!*ox_str(node->output[i]))
            omitted |= (int64_t)1 << i;
    }
    a->ints[0] = omitted;
    if (a->nints < 1)
        a->nints = 1;
    return n < 1 ? 1 : n;
}

typedef enum fm_status (*map_fn)(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                 int n_in, enum fm_op op);

/* ---- plain ops: inputs as they are ---- */

static enum fm_status map_plain(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                int n_in, enum fm_op op)
{
    return ox_emit(ox, node, op, NULL, in, trim(in, n_in), 1);
}

static enum fm_status map_variadic(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                   int n_in, enum fm_op op)
{
    fm_tid x[FM_MAX_IO];
    int n = 0;
    for (int i = 0; i < n_in; i++) {
        if (in[i] != FM_NONE)
            x[n++] = in[i];
    }
    return ox_emit(ox, node, op, NULL, x, n, 1);
}

static enum fm_status map_identity(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                   int n_in, enum fm_op op)
{
    enum fm_status st = need(ox, node, in, n_in, 1);
    if (st)
        return st;
    const struct fm_tensor *x = tensor(ox, in[0]);
    if (x->role != FM_ROLE_ACTIVATION && x->role != FM_ROLE_INPUT) {
        /* a renamed weight (exporters deduplicate equal initializers this way): an alias */
        struct ox_name *e = node->n_output ? ox_name_find(ox, node->output[0]) : NULL;
        if (e)
            e->tid = in[0];
        return FM_OK;
    }
    return ox_emit(ox, node, op, NULL, in, 1, 1);
}

/* ---- convolution and pooling geometry ---- */

/* Reads kernel, strides, dilations, pads and auto_pad for 1 to 3 spatial dims into attrs (the
 * layout of fm_window_of: 1-D on index 1, 3-D's depth in the *_d fields). */
static enum fm_status window(struct ox *ox, const Onnx__NodeProto *node,
                             const struct fm_shape *x, const int64_t *kernel, bool transposed,
                             struct fm_attrs *a)
{
    int sr = x->rank - 2;
    int64_t strides[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, pads[6] = {0}, outpad[3] = {0};
    int64_t oshape[5] = {0};   /* spatial dims, or N, C and the spatial dims */
    int n;
    enum fm_status st = ox_attr_ints(ox, node, "strides", strides, 3, &n);
    if (!st && n && n != sr)
        st = ox_node_error(ox, node, FM_ERR_PARSE, "strides has %d values for %d spatial dims",
                           n, sr);
    if (!st)
        st = ox_attr_ints(ox, node, "dilations", dil, 3, &n);
    if (!st && n && n != sr)
        st = ox_node_error(ox, node, FM_ERR_PARSE, "dilations has %d values for %d spatial dims",
                           n, sr);
    if (!st)
        st = ox_attr_ints(ox, node, "pads", pads, 6, &n);
    if (!st && n && n != 2 * sr)
        st = ox_node_error(ox, node, FM_ERR_PARSE, "pads has %d values for %d spatial dims", n,
                           sr);
    if (!st)
        st = ox_attr_ints(ox, node, "output_padding", outpad, 3, &n);
    int nos = 0;
    if (!st)
        st = ox_attr_ints(ox, node, "output_shape", oshape, 5, &nos);
    if (!st && nos && nos != sr && nos != sr + 2)
        st = ox_node_error(ox, node, FM_ERR_PARSE, "output_shape has %d values for %d spatial "
                           "dims", nos, sr);
    if (!st && nos == sr + 2)
        memmove(oshape, oshape + 2, sizeof(int64_t) * (size_t)sr);
    char autopad[32];
    if (!st)
        st = ox_attr_string(ox, node, "auto_pad", "NOTSET", autopad, sizeof(autopad));
    if (st)
        return st;
    for (int d = 0; d < sr; d++) {
        if (strides[d] <= 0 || dil[d] <= 0 || kernel[d] <= 0 || pads[d] < 0 ||
            pads[sr + d] < 0 || strides[d] > OX_DIM_MAX || dil[d] > OX_DIM_MAX ||
            kernel[d] > OX_DIM_MAX || pads[d] > OX_DIM_MAX || pads[sr + d] > OX_DIM_MAX)
            return ox_node_error(ox, node, FM_ERR_PARSE, "kernel %lld, stride %lld, dilation "
                                 "%lld, pads %lld/%lld: must be positive (pads non-negative)",
                                 (long long)kernel[d], (long long)strides[d], (long long)dil[d],
                                 (long long)pads[d], (long long)pads[sr + d]);
        if (outpad[d] < 0 || outpad[d] > OX_DIM_MAX)
            return ox_node_error(ox, node, FM_ERR_PARSE, "output_padding %lld",
                                 (long long)outpad[d]);
        /* file values up to 2^40: products are checked, never wrapped */
        int64_t in = x->dims[2 + d], span, reach, total = 0;
        bool computed = false;
        bool ovf = __builtin_mul_overflow(dil[d], kernel[d] - 1, &span) ||
                   span > (int64_t)1 << 62 || __builtin_mul_overflow(strides[d], in - 1, &reach) ||
                   __builtin_add_overflow(reach, span + 1 + outpad[d], &reach);
        span += 1;   /* reach: stride*(in-1) + output_padding + span, ConvTranspose's output
                        before padding */
        int64_t same_t = 0;   /* SAME's transposed output, in*stride */
        ovf = ovf || (transposed && __builtin_mul_overflow(in, strides[d], &same_t));
        if (ovf)
            return ox_node_error(ox, node, FM_ERR_OVERFLOW, "kernel %lld, stride %lld, dilation "
                                 "%lld: the window does not fit in 64 bits",
                                 (long long)kernel[d], (long long)strides[d],
                                 (long long)dil[d]);
        if (transposed && nos) {
            if (oshape[d] <= 0 || oshape[d] > OX_DIM_MAX)
                return ox_node_error(ox, node, FM_ERR_PARSE, "output_shape %lld",
                                     (long long)oshape[d]);
            total = reach - oshape[d];
            computed = true;
        } else if (!strcmp(autopad, "SAME_UPPER") || !strcmp(autopad, "SAME_LOWER")) {
            /* output in*stride (transposed) or ceil(in/stride) */
            int64_t out = transposed ? same_t : (in + strides[d] - 1) / strides[d];
            total = transposed ? reach - out : (out - 1) * strides[d] + span - in;
            computed = true;
        } else if (!strcmp(autopad, "VALID")) {
            computed = true;
        } else if (strcmp(autopad, "NOTSET") != 0) {
            return ox_node_error(ox, node, FM_ERR_PARSE, "auto_pad '%s' is not NOTSET, "
                                 "SAME_UPPER, SAME_LOWER or VALID", autopad);
        }
        if (computed) {
            /* ConvTranspose's output_shape (or SAME) beyond what the pads can reach: the
             * extra output positions are output padding (they receive the bias only); a
             * convolution never pads negatively */
            if (total < 0 && transposed)
                outpad[d] -= total;
            if (total < 0)
                total = 0;
            /* the spec, for both ops: SAME_UPPER puts the smaller half first; SAME_LOWER and
             * ConvTranspose's output_shape without auto_pad the larger */
            pads[d] = !strcmp(autopad, "SAME_UPPER") ? total / 2 : total - total / 2;
            pads[sr + d] = total - pads[d];
        }
        if (sr == 3 && d == 0) {   /* 3-D: the depth */
            a->kernel_d = kernel[0];
            a->stride_d = strides[0];
            a->dilation_d = dil[0];
            a->pad_d[0] = pads[0];
            a->pad_d[1] = pads[sr];
            a->output_padding_d = outpad[0];
            continue;
        }
        int ax = sr == 1 ? 1 : sr == 3 ? d - 1 : d;   /* 1-D ops use index 1 */
        a->kernel[ax] = kernel[d];
        a->stride[ax] = strides[d];
        a->dilation[ax] = dil[d];
        a->pad[ax] = pads[d];
        a->pad[ax + 2] = pads[sr + d];
        a->output_padding[ax] = outpad[d];
    }
    return FM_OK;
}

/* Conv's window attributes for input x and weight w (slot iw: 1, or 3 in QLinearConv) into a;
 * *unknown says that the op is not counted (3-D and deeper). */
static enum fm_status conv_attrs(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                 int n_in, int iw, enum fm_op op, struct fm_attrs *a,
                                 bool *unknown)
{
    enum fm_status st = need(ox, node, in, n_in, iw + 1);
    if (st)
        return st;
    const struct fm_shape *x = &tensor(ox, in[0])->shape, *w = &tensor(ox, in[iw])->shape;
    *unknown = x->rank < 3 || x->rank > 5;
    if (*unknown)
        return FM_OK;
    if (w->rank != x->rank)
        return ox_node_error(ox, node, FM_ERR_SHAPE, "weight has rank %d, input rank %d",
                             w->rank, x->rank);
    fm_attrs_init(a);
    int64_t k[3];
    int nk;
    st = ox_attr_ints(ox, node, "kernel_shape", k, 3, &nk);
    if (st)
        return st;
    if (nk && nk != x->rank - 2)
        return ox_node_error(ox, node, FM_ERR_PARSE, "kernel_shape has %d values for %d "
                             "spatial dims", nk, x->rank - 2);
    for (int d = 0; d < x->rank - 2; d++) {
        if (nk && k[d] != w->dims[2 + d])
            return ox_node_error(ox, node, FM_ERR_SHAPE, "kernel_shape %lld disagrees with the "
                                 "weight's %lld", (long long)k[d], (long long)w->dims[2 + d]);
        k[d] = w->dims[2 + d];
    }
    st = window(ox, node, x, k, op == FM_OP_CONV_TRANSPOSE, a);
    if (!st)
        st = ox_attr_int(ox, node, "group", 1, &a->groups);
    if (st)
        return st;
    if (a->groups <= 0 || a->groups > OX_DIM_MAX)
        return ox_node_error(ox, node, FM_ERR_PARSE, "group is %lld", (long long)a->groups);
    return FM_OK;
}

static enum fm_status map_conv(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                               int n_in, enum fm_op op)
{
    struct fm_attrs a;
    bool unknown = false;
    enum fm_status st = conv_attrs(ox, node, in, n_in, 1, op, &a, &unknown);
    if (st)
        return st;
    if (unknown)
        return ox_emit_unknown(ox, node, "only 1-D, 2-D and 3-D convolutions are counted");
    return ox_emit(ox, node, op, &a, in, trim(in, n_in), 1);
}

/* ---- quantized ops and ONNX Runtime's com.microsoft ops ---- */

/* ConvInteger (weight in slot 1) and QLinearConv (slot 3): Conv's attributes */
static enum fm_status map_qconv(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                int n_in, enum fm_op op)
{
    struct fm_attrs a;
    bool unknown = false;
    enum fm_status st = conv_attrs(ox, node, in, n_in, op == FM_OP_QLINEAR_CONV ? 3 : 1, op, &a,
                                   &unknown);
    if (st)
        return st;
    if (unknown || tensor(ox, in[0])->shape.rank == 5)
        return ox_emit_unknown(ox, node, "only 1-D and 2-D quantized convolutions are counted");
    return ox_emit(ox, node, op, &a, in, trim(in, n_in), 1);
}

/* QuantizeLinear, DequantizeLinear: axis (default 1); blocked quantization (opset 21's
 * block_size) is not read */
static enum fm_status map_quant(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    int64_t block = 0;
    enum fm_status st = need(ox, node, in, n_in, 2);
    if (!st)
        st = ox_attr_int(ox, node, "axis", 1, &a.axis);
    if (!st)
        st = ox_attr_int(ox, node, "block_size", 0, &block);
    if (!st && block)
        st = ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "blocked quantization (block_size "
                           "%lld) is not implemented", (long long)block);
    return st ? st : ox_emit(ox, node, op, &a, in, trim(in, n_in), 1);
}

/* The com.microsoft ops (and DynamicQuantizeLinear): their attributes, every output up to the
 * last one named (or the op's fixed count) */
static enum fm_status map_msft(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                               int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    int64_t ta = 0, tb = 0, heads = 0, uni = 0, kv = 0, rot = 0, tba = 0, tbb = 0;
    int n = 0;
    enum fm_status st = need(ox, node, in, n_in, 1);
    switch (op) {
    case FM_OP_FUSED_MATMUL:
    case FM_OP_QGEMM:
        if (!st)
            st = ox_attr_int(ox, node, "transA", 0, &ta);
        if (!st)
            st = ox_attr_int(ox, node, "transB", 0, &tb);
        if (!st)
            st = ox_attr_int(ox, node, "transBatchA", 0, &tba);
        if (!st)
            st = ox_attr_int(ox, node, "transBatchB", 0, &tbb);
        if (!st)
            st = ox_attr_float(ox, node, "alpha", 1.0, &a.alpha);
        if (!st && (tba || tbb))
            st = ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "transBatchA/transBatchB are not "
                               "implemented");
        a.flags |= (ta ? FM_ATTR_TRANS_A : 0u) | (tb ? FM_ATTR_TRANS_B : 0u);
        break;
    case FM_OP_QUICK_GELU:
        if (!st)
            st = ox_attr_float(ox, node, "alpha", 1.702, &a.alpha);
        break;
    case FM_OP_SKIP_LAYERNORM:
    case FM_OP_SKIP_SIMPLIFIED_LAYERNORM:
    case FM_OP_SIMPLIFIED_LAYERNORM:
    case FM_OP_EMBED_LAYERNORM:
        if (!st)
            st = ox_attr_float(ox, node, "epsilon", 1e-5, &a.eps);
        if (!st && op == FM_OP_SIMPLIFIED_LAYERNORM)
            st = ox_attr_int(ox, node, "axis", -1, &a.axis);
        break;
    case FM_OP_MS_ATTENTION:
    case FM_OP_MULTIHEAD_ATTENTION:
    case FM_OP_GROUP_QUERY_ATTENTION:
    case FM_OP_ROTARY_EMBEDDING:
        if (!st)
            st = ox_attr_int(ox, node, "num_heads", 0, &heads);
        if (!st)
            st = ox_attr_int(ox, node, "unidirectional", 0, &uni);
        if (!st)
            st = ox_attr_float(ox, node, "scale", 0.0, &a.scale);
        if (!st && op == FM_OP_MS_ATTENTION)
            st = ox_attr_ints(ox, node, "qkv_hidden_sizes", a.ints, 3, &n);
        if (!st && op == FM_OP_GROUP_QUERY_ATTENTION) {
            st = ox_attr_int(ox, node, "kv_num_heads", 0, &kv);
            if (!st)
                st = ox_attr_int(ox, node, "do_rotary", 0, &rot);
            a.ints[0] = kv;
            a.ints[1] = rot;
            n = 2;
        }
        a.nints = n;
        a.groups = heads;
        a.flags |= uni ? FM_ATTR_CAUSAL : 0u;
        if (!st && heads <= 0 && op != FM_OP_ROTARY_EMBEDDING)
            st = ox_node_error(ox, node, FM_ERR_PARSE, "num_heads is missing or %lld",
                               (long long)heads);
        break;
    default:
        break;
    }
    if (st)
        return st;
    int n_out = fm_op_desc(op)->n_out;
    if (!n_out) {
        n_out = (int)node->n_output;
        while (n_out > 1 && !*ox_str(node->output[n_out - 1]))
            n_out--;
    }
    return ox_emit(ox, node, op, &a, in, trim(in, n_in), n_out);
}

static enum fm_status map_pool(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                               int n_in, enum fm_op op)
{
    enum fm_status st = need(ox, node, in, n_in, 1);
    if (st)
        return st;
    const struct fm_shape *x = &tensor(ox, in[0])->shape;
    if (x->rank < 3 || x->rank > 5)
        return ox_emit_unknown(ox, node, "only 1-D, 2-D and 3-D pooling is counted");
    struct fm_attrs a;
    fm_attrs_init(&a);
    int64_t k[3], ceil_mode = 0, count_pad = 0;
    int nk;
    st = ox_attr_ints(ox, node, "kernel_shape", k, 3, &nk);
    if (!st && nk != x->rank - 2)
        st = ox_node_error(ox, node, FM_ERR_PARSE, "kernel_shape must have %d values, has %d",
                           x->rank - 2, nk);
    if (!st)
        st = window(ox, node, x, k, false, &a);
    if (!st)
        st = ox_attr_int(ox, node, "ceil_mode", 0, &ceil_mode);
    if (!st)
        st = ox_attr_int(ox, node, "count_include_pad", 0, &count_pad);
    if (st)
        return st;
    a.flags |= (ceil_mode ? FM_ATTR_CEIL_MODE : 0u) | (count_pad ? FM_ATTR_COUNT_PAD : 0u);
    if (op == FM_OP_LPPOOL) {
        a.nints = 1;
        st = ox_attr_int(ox, node, "p", 2, &a.ints[0]);
        if (st)
            return st;
    }
    /* MaxPool-8 and later may output the argmax indices (storage_order only orders them) */
    bool indices = op == FM_OP_MAXPOOL && node->n_output > 1 && node->output[1][0];
    return ox_emit(ox, node, op, &a, in, 1, indices ? 2 : 1);
}

/* ---- matrix products and norms ---- */

static enum fm_status map_gemm(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                               int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    int64_t ta, tb;
    enum fm_status st = need(ox, node, in, n_in, 2);
    if (!st)
        st = ox_attr_int(ox, node, "transA", 0, &ta);
    if (!st)
        st = ox_attr_int(ox, node, "transB", 0, &tb);
    if (!st)
        st = ox_attr_float(ox, node, "alpha", 1.0, &a.alpha);
    if (!st)
        st = ox_attr_float(ox, node, "beta", 1.0, &a.beta);
    if (st)
        return st;
    a.flags |= (ta ? FM_ATTR_TRANS_A : 0u) | (tb ? FM_ATTR_TRANS_B : 0u);
    return ox_emit(ox, node, op, &a, in, trim(in, n_in), 1);
}

static enum fm_status map_norm(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                               int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    enum fm_status st = need(ox, node, in, n_in, op == FM_OP_BATCHNORM ? 5 : 1);
    if (!st)
        st = ox_attr_float(ox, node, "epsilon", 1e-5, &a.eps);
    if (!st && op == FM_OP_LAYERNORM)
        st = ox_attr_int(ox, node, "axis", -1, &a.axis);
    int64_t stash = 1;   /* LayerNorm's Mean and InvStdDev: float unless stash_type says */
    enum fm_dtype stash_dtype = FM_DTYPE_FP32;
    if (!st && op == FM_OP_LAYERNORM)
        st = ox_attr_int(ox, node, "stash_type", 1, &stash);
    if (!st && op == FM_OP_LAYERNORM && !ox_dtype((int32_t)stash, &stash_dtype))
        st = ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "stash_type %lld is no type flopmeter "
                           "knows", (long long)stash);
    if (!st && op == FM_OP_GROUPNORM)
        st = ox_attr_int(ox, node, "num_groups", 0, &a.groups);
    if (st)
        return st;
    if (op == FM_OP_GROUPNORM && n_in > 1 && in[1] != FM_NONE) {
        uint64_t ns;
        const struct fm_shape *x = &tensor(ox, in[0])->shape;
        if (fm_shape_numel(&tensor(ox, in[1])->shape, &ns) == FM_OK && x->rank >= 2 &&
            ns != (uint64_t)x->dims[1])
            return ox_emit_unknown(ox, node, "opset 18 GroupNormalization with per-group "
                                             "scale; re-export at opset 21");
    }
    int n_out = 1;
    if (op == FM_OP_LAYERNORM) {   /* Y, Mean, InvStdDev */
        n_out = optional_outputs(node, 3, &a);
        a.ints[1] = stash_dtype;
        a.nints = 2;
    } else if (op == FM_OP_BATCHNORM) {   /* Y, running (or saved) statistics */
        n_out = optional_outputs(node, 5, &a);
    }
    return ox_emit(ox, node, op, &a, in, trim(in, n_in), n_out);
}

/* ---- activations ---- */

static enum fm_status map_act(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                              int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    enum fm_status st = need(ox, node, in, n_in, 1);
    if (st)
        return st;
    if (op == FM_OP_LEAKY_RELU)
        st = ox_attr_float(ox, node, "alpha", 0.01, &a.alpha);
    if (op == FM_OP_HARDSIGMOID) {
        st = ox_attr_float(ox, node, "alpha", 0.2, &a.alpha);
        if (!st)
            st = ox_attr_float(ox, node, "beta", 0.5, &a.beta);
    }
    if (op == FM_OP_ELU || op == FM_OP_CELU || op == FM_OP_THRESHOLDED_RELU)
        st = ox_attr_float(ox, node, "alpha", 1.0, &a.alpha);
    if (op == FM_OP_SELU) {
        st = ox_attr_float(ox, node, "alpha", 1.67326319217681884765625, &a.alpha);
        if (!st)
            st = ox_attr_float(ox, node, "gamma", 1.05070102214813232421875, &a.beta);
    }
    if (op == FM_OP_SHRINK) {
        st = ox_attr_float(ox, node, "lambd", 0.5, &a.lo);
        if (!st)
            st = ox_attr_float(ox, node, "bias", 0.0, &a.beta);
    }
    if (op == FM_OP_GELU) {
        char approx[16];
        st = ox_attr_string(ox, node, "approximate", "none", approx, sizeof(approx));
        if (!st && strcmp(approx, "tanh") == 0)
            a.flags |= FM_ATTR_GELU_TANH;
    }
    fm_tid x[3] = {in[0], FM_NONE, FM_NONE};
    int nx = 1;
    if (op == FM_OP_CLIP) {
        a.lo = -INFINITY;
        a.hi = INFINITY;
        if (ox->opset < 11) {
            st = ox_attr_float(ox, node, "min", -INFINITY, &a.lo);
            if (!st)
                st = ox_attr_float(ox, node, "max", INFINITY, &a.hi);
        } else {
            /* bounds that are computed tensors stay inputs; constants become attributes */
            for (int i = 1; i < 3 && i < n_in; i++) {
                if (in[i] == FM_NONE || scalar_value(ox, in[i], i == 1 ? &a.lo : &a.hi))
                    continue;
                x[i] = in[i];
                nx = i + 1;
            }
        }
    }
    if (st)
        return st;
    return ox_emit(ox, node, op, &a, x, nx, 1);
}

/* Softmax before opset 13 normalizes over all dims from axis on (the input coerced to 2-D):
 * when that differs from one axis, the node runs on a 2-D view (Reshape views cost nothing). */
static enum fm_status map_softmax(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                  int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    enum fm_status st = need(ox, node, in, n_in, 1);
    if (!st)
        st = ox_attr_int(ox, node, "axis", ox->opset < 13 ? 1 : -1, &a.axis);
    if (st)
        return st;
    /* a copy: the constants added below grow the graph's tensor array, and a pointer into it
     * (x->dims fed to ox_const_tensor) was read after being freed (found by fuzz_onnx) */
    const struct fm_shape xs = tensor(ox, in[0])->shape, *x = &xs;
    int64_t axis = a.axis < 0 ? a.axis + x->rank : a.axis;
    /* an axis out of range goes to the op's own shape rule, which names it; only an axis in
     * range is read against the dims (found by fuzz_onnx: axis -4096 indexed dims[-4091]) */
    if (ox->opset >= 13 || axis < 0 || axis >= x->rank)
        return ox_emit(ox, node, op, &a, in, 1, 1);
    bool trailing_ones = true;
    for (int d = (int)axis + 1; d < x->rank; d++)
        trailing_ones &= x->dims[d] == 1;
    if (trailing_ones)
        return ox_emit(ox, node, op, &a, in, 1, 1);
    int64_t rows = 1, cols = 1;
    for (int d = 0; d < x->rank; d++)
        *(d < axis ? &rows : &cols) *= x->dims[d];
    /* x -> (rows, cols) -> softmax(axis 1) -> x's shape, with synthesized tensors */
    int64_t flat[2] = {rows, cols};
    struct fm_shape s1 = {1, {2}}, s2 = {1, {x->rank}};
    struct ox_val v1 = {true, false, 2, flat, NULL};
    struct ox_val v2 = {true, false, (uint64_t)x->rank, (int64_t *)x->dims, NULL};
    fm_tid c1, c2, r1, r2;
    st = ox_const_tensor(ox, node, NULL, FM_ROLE_CONST, FM_DTYPE_INT64, &s1, &v1, &c1);
    if (!st)
        st = ox_const_tensor(ox, node, NULL, FM_ROLE_CONST, FM_DTYPE_INT64, &s2, &v2, &c2);
    if (st)
        return st;
    char n1[512], n2[512];
    snprintf(n1, sizeof(n1), "%s:2d", ox_node_name(node));
    snprintf(n2, sizeof(n2), "%s:softmax2d", ox_node_name(node));
    fm_tid rin[2] = {in[0], c1};
    const char *on1 = n1, *on2 = n2;
    st = fm_graph_add_node(ox->g, FM_OP_RESHAPE, n1, NULL, rin, 2, &on1, 1, &r1);
    a.axis = 1;
    if (!st)
        st = fm_graph_add_node(ox->g, op, n2, &a, &r1, 1, &on2, 1, &r2);
    if (st)
        return st;
    fm_tid back[2] = {r2, c2};
    return ox_emit(ox, node, FM_OP_RESHAPE, NULL, back, 2, 1);
}

/* Ops whose attributes are a few numbers (LpNormalization, MeanVarianceNormalization, LRN,
 * GlobalLpPool, Mod, BitShift): each read into the fm_attrs fields docs/ops.md names. */
static enum fm_status map_attrs(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    int nin = op == FM_OP_MOD || op == FM_OP_BITSHIFT ? 2 : 1;
    enum fm_status st = need(ox, node, in, n_in, nin);
    a.nints = 1;
    if (!st && (op == FM_OP_LP_NORM || op == FM_OP_GLOBAL_LPPOOL))
        st = ox_attr_int(ox, node, "p", 2, &a.ints[0]);
    if (!st && op == FM_OP_LP_NORM)
        st = ox_attr_int(ox, node, "axis", -1, &a.axis);
    if (!st && op == FM_OP_MOD)
        st = ox_attr_int(ox, node, "fmod", 0, &a.ints[0]);
    if (!st && op == FM_OP_LRN) {
        st = ox_attr_int(ox, node, "size", 0, &a.ints[0]);
        if (!st)
            st = ox_attr_float(ox, node, "alpha", 1e-4, &a.alpha);
        if (!st)
            st = ox_attr_float(ox, node, "beta", 0.75, &a.beta);
        if (!st)
            st = ox_attr_float(ox, node, "bias", 1.0, &a.eps);
    }
    if (!st && op == FM_OP_MVN) {
        st = ox_attr_ints(ox, node, "axes", a.ints, FM_MAX_INTS, &a.nints);
        if (!st && a.nints == 0) {   /* ONNX's default: per channel over N, H, W */
            a.ints[0] = 0, a.ints[1] = 2, a.ints[2] = 3;
            a.nints = 3;
        }
    }
    if (!st && op == FM_OP_BITSHIFT) {
        char dir[16] = "";
        st = ox_attr_string(ox, node, "direction", "", dir, sizeof(dir));
        if (!st && strcmp(dir, "LEFT") != 0 && strcmp(dir, "RIGHT") != 0)
            st = ox_node_error(ox, node, FM_ERR_PARSE, "direction '%s' is neither LEFT nor RIGHT",
                               dir);
        a.ints[0] = strcmp(dir, "RIGHT") == 0;
    }
    if (st)
        return st;
    return ox_emit(ox, node, op, &a, in, nin, 1);
}

/* ---- data movement ---- */

static enum fm_status map_axis(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                               int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    enum fm_status st = need(ox, node, in, n_in, 1);
    if (!st)
        st = ox_attr_int(ox, node, "axis", 1, &a.axis);
    if (st)
        return st;
    return ox_emit(ox, node, op, &a, in, 1, 1);
}

static enum fm_status map_concat(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                 int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    /* Concat-1 (opsets 1 to 3): axis is optional, default 1 */
    enum fm_status st = ox_attr_int(ox, node, "axis", ox->opset < 4 ? 1 : 0, &a.axis);
    if (st)
        return st;
    fm_tid x[FM_MAX_IO];
    int n = 0;
    for (int i = 0; i < n_in; i++) {
        if (in[i] != FM_NONE)
            x[n++] = in[i];
    }
    if (!n)
        return ox_node_error(ox, node, FM_ERR_PARSE, "has no non-empty input");
    return ox_emit(ox, node, op, &a, x, n, 1);
}

static enum fm_status map_reshape(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                  int n_in, enum fm_op op)
{
    const struct ox_val *v;
    if (ox->opset < 5) {   /* Reshape-1: the target is attribute 'shape' */
        int64_t dims[FM_MAX_DIMS];
        int nd = 0;
        enum fm_status st = need(ox, node, in, n_in, 1);
        if (!st)
            st = ox_attr_ints(ox, node, "shape", dims, FM_MAX_DIMS, &nd);
        if (!st && !ox_attr(node, "shape"))
            st = ox_node_error(ox, node, FM_ERR_PARSE, "Reshape-1 (opset %lld) needs attribute "
                               "'shape'", (long long)ox->opset);
        struct fm_shape s = {1, {nd}};
        struct ox_val tv = {true, false, (uint64_t)nd, dims, NULL};
        fm_tid x[2] = {in[0], FM_NONE};
        if (!st)
            st = ox_const_tensor(ox, node, NULL, FM_ROLE_CONST, FM_DTYPE_INT64, &s, &tv, &x[1]);
        return st ? st : ox_emit(ox, node, op, NULL, x, 2, 1);
    }
    enum fm_status st = need(ox, node, in, n_in, 2);
    if (!st)
        st = ox_need_ints(ox, node, in[1], "target shape", &v);
    int64_t allowzero = 0;
    if (!st)
        st = ox_attr_int(ox, node, "allowzero", 0, &allowzero);
    if (st)
        return st;
    /* allowzero (opset 14): a 0 in the target is a dim of 0, not a copy of the input's. The
     * Reshape rule copies a 0 where the input has that dim, which gives the same result where
     * the input's dim is 0 too; elsewhere the result is empty and the 0 is written as the
     * target's one inferred dim (-1), which the rule makes 0 (0 elements / the rest). */
    const struct fm_shape *x = &tensor(ox, in[0])->shape;
    int literal = -1, literals = 0;
    bool has_infer = false;
    for (uint64_t i = 0; allowzero && i < v->n; i++) {
        has_infer |= v->i[i] == -1;
        if (v->i[i] == 0 && (int64_t)i < x->rank && x->dims[i] != 0) {
            literal = (int)i;
            literals++;
        }
    }
    if (literals == 0)
        return ox_emit(ox, node, op, NULL, in, 2, 1);
    if (literals > 1 || has_infer)
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "allowzero with %s: an empty result "
                             "flopmeter does not infer", has_infer ? "a 0 and a -1 in the "
                             "target (the ONNX spec forbids it)" : "several 0 dims");
    int64_t tgt[FM_MAX_DIMS];
    if (v->n > FM_MAX_DIMS)
        return ox_node_error(ox, node, FM_ERR_SHAPE, "its target has %llu dims",
                             (unsigned long long)v->n);
    memcpy(tgt, v->i, v->n * sizeof(*tgt));
    tgt[literal] = -1;
    struct fm_shape ts = {1, {(int64_t)v->n}};
    struct ox_val tv = {true, false, v->n, tgt, NULL};
    fm_tid t2[2] = {in[0], FM_NONE};
    st = ox_const_tensor(ox, node, NULL, FM_ROLE_CONST, FM_DTYPE_INT64, &ts, &tv, &t2[1]);
    if (st)
        return st;
    return ox_emit(ox, node, op, NULL, t2, 2, 1);
}

static enum fm_status map_transpose(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                    int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    enum fm_status st = need(ox, node, in, n_in, 1);
    if (!st)
        st = ox_attr_ints(ox, node, "perm", a.ints, FM_MAX_DIMS, &a.nints);
    if (st)
        return st;
    return ox_emit(ox, node, op, &a, in, 1, 1);
}

static enum fm_status map_split(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    enum fm_status st = need(ox, node, in, n_in, 1);
    if (!st)
        st = ox_attr_int(ox, node, "axis", 0, &a.axis);
    if (!st)
        /* Split-1 takes the sizes from an optional second input or the attribute */
        st = axes_operand(ox, node, in, n_in, 1,
                          ox->opset >= 13 || (ox->opset < 2 && n_in > 1 && in[1] != FM_NONE),
                          "split", a.ints, &a.nints);
    if (st)
        return st;
    int n_out = (int)node->n_output;
    int64_t parts = 0;
    st = ox_attr_int(ox, node, "num_outputs", 0, &parts);
    if (st)
        return st;
    const struct fm_shape *x = &tensor(ox, in[0])->shape;
    int ax;
    struct fm_node fake = {.name = ox_node_name(node), .op = op, .op_name = "Split"};
    if (a.nints == 0 && parts > 0 && fm_shape_axis(ox->ctx, &fake, a.axis, x->rank, &ax) == FM_OK) {
        /* opset 18: ceil(d / n) per output, the last one smaller */
        int64_t d = x->dims[ax], chunk = (d + parts - 1) / parts;
        if (parts > FM_MAX_INTS || parts != n_out)
            return ox_node_error(ox, node, FM_ERR_PARSE, "num_outputs %lld for %d outputs",
                                 (long long)parts, n_out);
        for (int i = 0; i < n_out; i++) {
            int64_t s = d - chunk * i;
            a.ints[i] = s < chunk ? s : chunk;
        }
        a.nints = n_out;
    }
    return ox_emit(ox, node, op, &a, in, 1, n_out);
}

static enum fm_status map_squeeze(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                  int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    enum fm_status st = need(ox, node, in, n_in, 1);
    if (!st)
        st = axes_operand(ox, node, in, n_in, 1, ox->opset >= 13, "axes", a.ints, &a.nints);
    if (st)
        return st;
    if (a.nints > FM_MAX_DIMS)
        return ox_node_error(ox, node, FM_ERR_PARSE, "%d axes", a.nints);
    return ox_emit(ox, node, op, &a, in, 1, 1);
}

static enum fm_status map_slice(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    int64_t s[FM_MAX_INTS], e[FM_MAX_INTS], ax[FM_MAX_INTS], sp[FM_MAX_INTS];
    int ns = 0, ne = 0, na = 0, nsp = 0;
    enum fm_status st = need(ox, node, in, n_in, ox->opset < 10 ? 1 : 3);
    bool inputs = ox->opset >= 10;
    if (!st)
        st = axes_operand(ox, node, in, n_in, 1, inputs, "starts", s, &ns);
    if (!st)
        st = axes_operand(ox, node, in, n_in, 2, inputs, "ends", e, &ne);
    if (!st)
        st = axes_operand(ox, node, in, n_in, 3, inputs, "axes", ax, &na);
    if (!st && inputs)
        st = axes_operand(ox, node, in, n_in, 4, true, "steps", sp, &nsp);
    if (st)
        return st;
    if (ne != ns || (na && na != ns) || (nsp && nsp != ns))
        return ox_node_error(ox, node, FM_ERR_PARSE, "starts, ends, axes and steps differ in "
                             "length (%d, %d, %d, %d)", ns, ne, na, nsp);
    const struct fm_shape *x = &tensor(ox, in[0])->shape;
    st = ox_slice_params(ox, node, x, s, e, na ? ax : NULL, nsp ? sp : NULL, ns, a.ints);
    if (st)
        return st;
    a.nints = 3 * x->rank;
    return ox_emit(ox, node, op, &a, in, 1, 1);
}

/* split_piece's answer for a piece it cannot place (not an error of the file by itself) */
#define SEQ_UNPLACED ((enum fm_status)101)

/* The bounds [*start, *end) along axis of piece k of SplitToSequence node sp over x. */
static enum fm_status split_piece(struct ox *ox, const Onnx__NodeProto *sp, const fm_tid *in,
                                  int n_in, int64_t k, int64_t *axis, int64_t *start,
                                  int64_t *end)
{
    const struct fm_shape *x = &tensor(ox, in[0])->shape;
    enum fm_status st = ox_attr_int(ox, sp, "axis", 0, axis);
    if (st)
        return st;
    if (*axis < 0)
        *axis += x->rank;
    if (*axis < 0 || *axis >= x->rank)
        return ox_node_error(ox, sp, FM_ERR_SHAPE, "axis out of range for rank %d", x->rank);
    int64_t len = x->dims[*axis];
    if (n_in < 2 || in[1] == FM_NONE) {   /* pieces of 1 */
        int64_t keep;
        st = ox_attr_int(ox, sp, "keepdims", 1, &keep);
        if (st)
            return st;
        if (!keep)
            return SEQ_UNPLACED;
        *start = k;
        *end = k + 1;
        return k < len ? FM_OK : SEQ_UNPLACED;
    }
    const struct ox_val *v;
    st = ox_need_ints(ox, sp, in[1], "split", &v);
    if (st)
        return st;
    int64_t pieces = (int64_t)v->n, chunk = v->n == 1 && tensor(ox, in[1])->shape.rank == 0 ?
                                                  v->i[0] : 0;
    if (chunk > 0)   /* a scalar: pieces of that size, the last one shorter */
        pieces = (len + chunk - 1) / chunk;
    if (k < 0)
        k += pieces;
    if (k < 0 || k >= pieces)
        return ox_node_error(ox, sp, FM_ERR_SHAPE, "position %lld of a sequence of %lld",
                             (long long)k, (long long)pieces);
    int64_t a = 0;
    for (int64_t i = 0; i < k; i++) {
        int64_t piece = chunk > 0 ? chunk : v->i[i];
        if (piece < 0 || piece > len - a)   /* a bad size, or more than the axis holds */
            return SEQ_UNPLACED;
        a += piece;
    }
    int64_t piece = chunk > 0 ? (chunk < len - a ? chunk : len - a) : v->i[k];
    if (piece <= 0 || piece > len - a)
        return SEQ_UNPLACED;
    *start = a;
    *end = a + piece;
    return FM_OK;
}

enum fm_status ox_map_sequence(struct ox *ox, const Onnx__NodeProto *node, bool *handled)
{
    *handled = false;
    if (!ox_default_domain(node->domain))
        return FM_OK;
    const char *op = ox_str(node->op_type);
    bool split = !strcmp(op, "SplitToSequence"), at = !strcmp(op, "SequenceAt");
    if (!split && !at)
        return FM_OK;
    const Onnx__NodeProto *sp = node;
    if (at) {
        struct ox_name *e = node->n_input == 2 ? ox_name_find(ox, node->input[0]) : NULL;
        if (!e || e->kind != OX_KIND_NODE_OUT || e->producer < 0 ||
            !ox_op_is(ox->gp->node[e->producer], "SplitToSequence"))
            return FM_OK;
        sp = ox->gp->node[e->producer];
    }
    /* every reader of the sequence must be a SequenceAt, or it is not only indexed */
    struct ox_name *seq = sp->n_output == 1 ? ox_name_find(ox, sp->output[0]) : NULL;
    if (!seq || sp->n_input < 1 || sp->n_input > 2)
        return FM_OK;
    for (uint32_t u = 0; u < seq->uses; u++) {
        const struct ox_use *use = &ox->uses[seq->first_use + u];
        if (use->node < 0 || use->slot != 0 ||
            !ox_op_is(ox->gp->node[use->node], "SequenceAt"))
            return FM_OK;
    }
    fm_tid in[2] = {FM_NONE, FM_NONE};
    for (int i = 0; i < (int)sp->n_input; i++) {
        enum fm_status st = ox_input(ox, sp, i, &in[i]);
        if (st)
            return st;
        if (in[i] != FM_NONE && !tensor(ox, in[i])->shape_known)
            return FM_OK;
    }
    if (split) {   /* nothing to make: each SequenceAt reads its piece of the input */
        *handled = true;
        return FM_OK;
    }
    fm_tid pos;
    enum fm_status st = ox_input(ox, node, 1, &pos);
    if (st)
        return st;
    const struct ox_val *pv;
    st = ox_need_ints(ox, node, pos, "position", &pv);
    if (st)
        return st;
    if (pv->n != 1)
        return ox_node_error(ox, node, FM_ERR_SHAPE, "position must be one integer");
    int64_t axis = 0, start = 0, end = 0;
    st = split_piece(ox, sp, in, (int)sp->n_input, pv->i[0], &axis, &start, &end);
    if (st == SEQ_UNPLACED)
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "reads a piece of SplitToSequence "
                             "'%s' that flopmeter cannot place (keepdims=0, or sizes negative "
                             "or more than the axis holds)", ox_node_name(sp));
    if (st)
        return st;
    const struct fm_shape *x = &tensor(ox, in[0])->shape;
    struct fm_attrs a;
    fm_attrs_init(&a);
    for (int d = 0; d < x->rank; d++) {
        a.ints[3 * d] = d == axis ? start : 0;
        a.ints[3 * d + 1] = d == axis ? end : x->dims[d];
        a.ints[3 * d + 2] = 1;
    }
    a.nints = 3 * x->rank;
    *handled = true;
    return ox_emit(ox, node, FM_OP_SLICE, &a, in, 1, 1);
}

static enum fm_status map_gather(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                 int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    enum fm_status st = need(ox, node, in, n_in, 2);
    if (!st)
        st = ox_attr_int(ox, node, "axis", 0, &a.axis);
    if (st)
        return st;
    const struct fm_tensor *w = tensor(ox, in[0]);
    if (w->role == FM_ROLE_PARAM && w->shape.rank == 2 && a.axis == 0 &&
        fm_dtype_is_float(w->dtype)) {
        fm_tid e[2] = {in[1], in[0]};   /* an embedding table lookup */
        return ox_emit(ox, node, FM_OP_EMBEDDING, NULL, e, 2, 1);
    }
    return ox_emit(ox, node, op, &a, in, 2, 1);
}

/* Expand (target shape), Tile (repeats), CumSum (axis), Trilu (k), ConstantOfShape (shape). */
static enum fm_status map_int_operand(struct ox *ox, const Onnx__NodeProto *node,
                                      const fm_tid *in, int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    const struct ox_val *v = NULL;
    int slot = op == FM_OP_CONSTANT_OF_SHAPE ? 0 : 1;
    static const char *const what[] = {"target shape", "repeats", "axis", "k", "shape"};
    int w = op == FM_OP_EXPAND ? 0 : op == FM_OP_TILE ? 1 : op == FM_OP_CUMSUM ? 2
          : op == FM_OP_TRILU ? 3 : 4;
    enum fm_status st = need(ox, node, in, n_in, op == FM_OP_TRILU ? 1 : slot + 1);
    if (st)
        return st;
    if (slot < n_in && in[slot] != FM_NONE) {
        st = ox_need_ints(ox, node, in[slot], what[w], &v);
        if (st)
            return st;
        if (v->n > FM_MAX_DIMS || ((op == FM_OP_CUMSUM || op == FM_OP_TRILU) && v->n != 1))
            return ox_node_error(ox, node, FM_ERR_PARSE, "%s has %llu values", what[w],
                                 (unsigned long long)v->n);
    }
    if (op == FM_OP_EXPAND || op == FM_OP_TILE) {
        for (uint64_t k = 0; k < v->n; k++)
            a.ints[k] = v->i[k];
        a.nints = (int)v->n;
    } else if (op == FM_OP_CUMSUM) {
        a.axis = v->i[0];
    } else if (op == FM_OP_TRILU) {
        int64_t upper;
        st = ox_attr_int(ox, node, "upper", 1, &upper);
        if (st)
            return st;
        a.ints[0] = v ? v->i[0] : 0;
        a.ints[1] = upper != 0;
        a.nints = 2;
    } else {   /* ConstantOfShape: {dtype, dims} */
        enum fm_dtype dt = FM_DTYPE_FP32;
        const Onnx__AttributeProto *va = ox_attr(node, "value");
        if (va && (!va->t || !ox_dtype(va->t->data_type, &dt)))
            return ox_node_error(ox, node, FM_ERR_PARSE, "attribute 'value' is not a tensor "
                                 "of a numeric type");
        if (va) {   /* the fill value, in lo (backends write it) */
            struct ox_val fill = {0};
            enum fm_status fs = ox_tensor_read(ox, va->t, "value", true, &fill);
            if (fs)
                return fs;
            if (fill.known && fill.n >= 1)
                a.lo = fill.is_float ? fill.f[0] : (double)fill.i[0];
        }
        a.ints[0] = dt;
        for (uint64_t k = 0; k < v->n; k++)
            a.ints[1 + k] = v->i[k];
        a.nints = 1 + (int)v->n;
        return ox_emit(ox, node, op, &a, NULL, 0, 1);
    }
    return ox_emit(ox, node, op, &a, in, 1, 1);
}

static enum fm_status map_pad(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                              int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    enum fm_status st = need(ox, node, in, n_in, 1);
    if (st)
        return st;
    const struct fm_shape *x = &tensor(ox, in[0])->shape;
    int64_t pads[2 * FM_MAX_DIMS], axes[FM_MAX_DIMS];
    int np = 0, na = 0;
    if (ox->opset < 11) {   /* Pad-1 names the attribute 'paddings', Pad-2 'pads' */
        st = ox_attr_ints(ox, node, ox->opset < 2 ? "paddings" : "pads", pads, 2 * FM_MAX_DIMS,
                          &np);
    } else {
        const struct ox_val *v;
        st = need(ox, node, in, n_in, 2);
        if (!st)
            st = ox_need_ints(ox, node, in[1], "pads", &v);
        if (!st && v->n > 2 * FM_MAX_DIMS)
            st = ox_node_error(ox, node, FM_ERR_PARSE, "%llu pads", (unsigned long long)v->n);
        if (!st) {
            np = (int)v->n;
            memcpy(pads, v->i, sizeof(int64_t) * (size_t)np);
            st = axes_operand(ox, node, in, n_in, 3, true, "axes", axes, &na);
        }
    }
    if (st)
        return st;
    int nax = na ? na : x->rank;
    if (np != 2 * nax)
        return ox_node_error(ox, node, FM_ERR_PARSE, "%d pads for %d axes", np, nax);
    for (int d = 0; d < 2 * x->rank; d++)
        a.ints[d] = 0;
    for (int k = 0; k < nax; k++) {
        int64_t d = na ? (axes[k] < 0 ? axes[k] + x->rank : axes[k]) : k;
        if (d < 0 || d >= x->rank)
            return ox_node_error(ox, node, FM_ERR_PARSE, "axis %lld out of range",
                                 (long long)axes[k]);
        a.ints[d] = pads[k];
        a.ints[x->rank + d] = pads[nax + k];
    }
    a.nints = 2 * x->rank;
    return ox_emit(ox, node, op, &a, in, 1, 1);
}

/* Resize (opset 10+) and Upsample (7-9): output dims from sizes, or floor(in * scale). */
static enum fm_status map_resize(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                 int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    enum fm_status st = need(ox, node, in, n_in, 1);
    if (st)
        return st;
    const struct fm_shape *x = &tensor(ox, in[0])->shape;
    char mode[32], policy[32];
    st = ox_attr_string(ox, node, "mode", "nearest", mode, sizeof(mode));
    if (!st)
        st = ox_attr_string(ox, node, "keep_aspect_ratio_policy", "stretch", policy,
                            sizeof(policy));
    if (st)
        return st;
    int64_t axes[FM_MAX_DIMS];
    int na = 0;
    st = ox_attr_ints(ox, node, "axes", axes, FM_MAX_DIMS, &na);
    if (st)
        return st;
    int nax = na ? na : x->rank;
    double scales[FM_MAX_DIMS];
    int64_t sizes[FM_MAX_DIMS];
    bool have_sizes = false, have_scales = false;
    bool upsample = strcmp(ox_str(node->op_type), "Upsample") == 0;
    fm_tid ts = FM_NONE, tz = FM_NONE;
    if (upsample && ox->opset < 7) {   /* Upsample-1: NCHW, height_scale and width_scale */
        double hs, ws;
        st = ox_attr_float(ox, node, "height_scale", 0, &hs);
        if (!st)
            st = ox_attr_float(ox, node, "width_scale", 0, &ws);
        if (st)
            return st;
        if (x->rank != 4 || !ox_attr(node, "height_scale") || !ox_attr(node, "width_scale"))
            return ox_node_error(ox, node, FM_ERR_PARSE, "Upsample-1 (opset %lld) needs a 4-D "
                                 "input and attributes 'height_scale' and 'width_scale'",
                                 (long long)ox->opset);
        scales[0] = scales[1] = 1;
        scales[2] = hs;
        scales[3] = ws;
        have_scales = true;
    } else if (upsample && ox->opset < 9) {
        const Onnx__AttributeProto *sa = ox_attr(node, "scales");
        if (!sa || sa->n_floats != (size_t)x->rank)
            return ox_node_error(ox, node, FM_ERR_PARSE, "attribute 'scales' needs %d floats",
                                 x->rank);
        for (int d = 0; d < x->rank; d++)
            scales[d] = sa->floats[d];
        have_scales = true;
    } else {
        int is = upsample || ox->opset < 11 ? 1 : 2;
        ts = is < n_in ? in[is] : FM_NONE;
        tz = !upsample && ox->opset >= 11 && n_in > 3 ? in[3] : FM_NONE;
    }
    if (tz != FM_NONE) {
        const struct ox_val *v;
        st = ox_need_ints(ox, node, tz, "sizes", &v);
        if (st)
            return st;
        if (v->n != (uint64_t)nax)
            return ox_node_error(ox, node, FM_ERR_PARSE, "%llu sizes for %d axes",
                                 (unsigned long long)v->n, nax);
        for (int k = 0; k < nax; k++)
            sizes[k] = v->i[k];
        have_sizes = true;
    } else if (ts != FM_NONE) {
        const struct ox_val *v = ox_val_of(ox, ts);
        if (!v)
            return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "its scales ('%s') are not known "
                                 "before running the network, but the output shape depends "
                                 "on them", tensor(ox, ts)->name);
        if (v->n != (uint64_t)nax)
            return ox_node_error(ox, node, FM_ERR_PARSE, "%llu scales for %d axes",
                                 (unsigned long long)v->n, nax);
        for (int k = 0; k < nax; k++)
            scales[k] = v->is_float ? v->f[k] : (double)v->i[k];
        have_scales = true;
    }
    if (!have_sizes && !have_scales)
        return ox_node_error(ox, node, FM_ERR_PARSE, "gives neither scales nor sizes");
    a.ints[0] = !strcmp(mode, "nearest") ? 0 : !strcmp(mode, "cubic") ? 2 : 1;
    for (int d = 0; d < x->rank; d++)
        a.ints[1 + d] = x->dims[d];
    double ratio = strcmp(policy, "not_larger") == 0 ? INFINITY : 0;
    for (int k = 0; k < nax && have_sizes && strcmp(policy, "stretch") != 0; k++) {
        int64_t d = na ? (axes[k] < 0 ? axes[k] + x->rank : axes[k]) : k;
        double r = (double)sizes[k] / (double)x->dims[d];
        ratio = isinf(ratio) ? r : (ratio == 0 ? r : ratio);
        ratio = strcmp(policy, "not_larger") == 0 ? fmin(ratio, r) : fmax(ratio, r);
    }
    for (int k = 0; k < nax; k++) {
        int64_t d = na ? (axes[k] < 0 ? axes[k] + x->rank : axes[k]) : k;
        if (d < 0 || d >= x->rank)
            return ox_node_error(ox, node, FM_ERR_PARSE, "axis out of range");
        double o;
        if (have_sizes)
            o = strcmp(policy, "stretch") != 0 ? nearbyint(ratio * (double)x->dims[d])
                                               : (double)sizes[k];
        else
            o = floor((double)x->dims[d] * scales[k]);
        if (!(o >= 1 && o <= (double)OX_DIM_MAX))
            return ox_node_error(ox, node, FM_ERR_SHAPE, "output dim %lld would be %g",
                                 (long long)d, o);
        a.ints[1 + d] = (int64_t)o;
    }
    a.nints = 1 + x->rank;
    return ox_emit(ox, node, op, &a, in, 1, 1);
}

static enum fm_status map_range(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                int n_in, enum fm_op op)
{
    double v[3];
    enum fm_status st = need(ox, node, in, n_in, 3);
    if (st)
        return st;
    for (int i = 0; i < 3; i++) {
        if (!scalar_value(ox, in[i], &v[i]))
            return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "its input %d ('%s') is not "
                                 "known before running the network, but the output length "
                                 "depends on it", i, tensor(ox, in[i])->name);
    }
    /* max(ceil((limit - start) / delta), 0): an empty range is legal (0 elements) */
    if (v[2] == 0)
        return ox_node_error(ox, node, FM_ERR_SHAPE, "its delta is 0");
    double len = ceil((v[1] - v[0]) / v[2]);
    if (len < 0)
        len = 0;
    if (!(len >= 0 && len <= (double)OX_DIM_MAX))
        return ox_node_error(ox, node, FM_ERR_SHAPE, "the range has %g elements", len);
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.ints[0] = (int64_t)len;
    a.ints[1] = tensor(ox, in[0])->dtype;
    a.nints = 2;
    a.lo = v[0];     /* start and delta: backends write start + i * delta */
    a.beta = v[2];
    return ox_emit(ox, node, op, &a, NULL, 0, 1);
}

static enum fm_status map_cast(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                               int n_in, enum fm_op op)
{
    int64_t to;
    enum fm_dtype dt;
    enum fm_status st = need(ox, node, in, n_in, 1);
    if (!st)
        st = ox_cast_to(ox, node, &to);
    if (st)
        return st;
    if (to < INT32_MIN || to > INT32_MAX || !ox_dtype((int32_t)to, &dt))
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "cast to ONNX type %lld%s: "
                             "flopmeter counts tensors of numeric types only", (long long)to,
                             to == ONNX__TENSOR_PROTO__DATA_TYPE__STRING ? " (string)" : "");
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.ints[0] = dt;
    a.nints = 1;
    return ox_emit(ox, node, op, &a, in, 1, 1);
}

static enum fm_status map_reduce(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                 int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    int64_t keep, noop;
    bool from_input = op == FM_OP_REDUCE_SUM ? ox->opset >= 13 : ox->opset >= 18;
    enum fm_status st = need(ox, node, in, n_in, 1);
    if (!st)
        st = axes_operand(ox, node, in, n_in, 1, from_input, "axes", a.ints, &a.nints);
    if (!st)
        st = ox_attr_int(ox, node, "keepdims", 1, &keep);
    if (!st)
        st = ox_attr_int(ox, node, "noop_with_empty_axes", 0, &noop);
    if (st)
        return st;
    if (a.nints > FM_MAX_DIMS)
        return ox_node_error(ox, node, FM_ERR_PARSE, "%d axes", a.nints);
    if (a.nints == 0 && noop)
        return ox_emit(ox, node, FM_OP_IDENTITY, NULL, in, 1, 1);
    if (keep)
        a.flags |= FM_ATTR_KEEPDIMS;
    return ox_emit(ox, node, op, &a, in, 1, 1);
}

static enum fm_status map_dropout(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                  int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    enum fm_status st = need(ox, node, in, n_in, 1);
    if (st)
        return st;
    a.ratio = 0.5;
    if (ox->opset < 12)
        st = ox_attr_float(ox, node, "ratio", 0.5, &a.ratio);
    else if (n_in > 1 && in[1] != FM_NONE)
        scalar_value(ox, in[1], &a.ratio);
    if (st)
        return st;
    return ox_emit(ox, node, op, &a, in, 1, optional_outputs(node, 2, &a));   /* Y, mask */
}

/* Einsum: letters become label ids 0..51, the dims of "..." ids 52.. aligned from the right. */
static enum fm_status map_einsum(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                 int n_in, enum fm_op op)
{
    char eq[256];
    enum fm_status st = ox_attr_string(ox, node, "equation", "", eq, sizeof(eq));
    if (st)
        return st;
    if (n_in < 1 || n_in > 2)
        return ox_emit_unknown(ox, node, "einsum with more than two operands");
    st = need(ox, node, in, n_in, n_in);
    if (st)
        return st;
    char *arrow = strstr(eq, "->");
    if (arrow)
        *arrow = '\0';
    const char *rhs = arrow ? arrow + 2 : NULL;
    int lab[3][FM_MAX_DIMS], rank[3] = {0, 0, 0}, ell_rank = 0;
    bool has_ell[3] = {false, false, false};
    int count[64] = {0};
    const char *p = eq;
    for (int o = 0; o < n_in; o++) {
        const struct fm_shape *x = &tensor(ox, in[o])->shape;
        int explicit_ = 0;
        const char *q = p;
        for (; *q && *q != ','; q++) {
            if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'))
                explicit_++;
        }
        int ell = x->rank - explicit_;
        for (; *p && *p != ','; p++) {
            if (*p == ' ')
                continue;
            if (strncmp(p, "...", 3) == 0) {
                if (has_ell[o] || ell < 0)
                    goto bad;
                has_ell[o] = true;
                ell_rank = ell > ell_rank ? ell : ell_rank;
                for (int k = 0; k < ell; k++)
                    lab[o][rank[o]++] = 52 + (FM_MAX_DIMS - ell) + k;
                p += 2;
                continue;
            }
            int id = *p >= 'a' && *p <= 'z'   ? *p - 'a'
                     : *p >= 'A' && *p <= 'Z' ? 26 + *p - 'A'
                                              : -1;
            if (id < 0 || rank[o] >= FM_MAX_DIMS)
                goto bad;
            lab[o][rank[o]++] = id;
            count[id]++;
        }
        if (rank[o] != x->rank)
            goto bad;
        if (*p == ',')
            p++;
        else if (o + 1 < n_in)
            goto bad;
    }
    if (*p)
        goto bad;
    if (rhs) {
        for (; *rhs; rhs++) {
            if (*rhs == ' ')
                continue;
            if (strncmp(rhs, "...", 3) == 0) {
                for (int k = 0; k < ell_rank; k++)
                    lab[2][rank[2]++] = 52 + (FM_MAX_DIMS - ell_rank) + k;
                rhs += 2;
                continue;
            }
            int id = *rhs >= 'a' && *rhs <= 'z' ? *rhs - 'a'
                     : *rhs >= 'A' && *rhs <= 'Z' ? 26 + *rhs - 'A' : -1;
            if (id < 0 || !count[id] || rank[2] >= FM_MAX_DIMS)
                goto bad;
            lab[2][rank[2]++] = id;
        }
    } else {   /* implicit: "..." then the labels seen once, in alphabetical (ASCII) order */
        for (int k = 0; k < ell_rank; k++)
            lab[2][rank[2]++] = 52 + (FM_MAX_DIMS - ell_rank) + k;
        for (int c = 'A'; c <= 'z'; c++) {
            int id = c >= 'a' && c <= 'z' ? c - 'a' : c >= 'A' && c <= 'Z' ? 26 + c - 'A' : -1;
            if (id >= 0 && count[id] == 1 && rank[2] < FM_MAX_DIMS)
                lab[2][rank[2]++] = id;
        }
    }
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.ints[a.nints++] = n_in;
    for (int o = 0; o <= n_in; o++) {
        int oo = o == n_in ? 2 : o;
        a.ints[a.nints++] = rank[oo];
        for (int k = 0; k < rank[oo]; k++)
            a.ints[a.nints++] = lab[oo][k];
    }
    return ox_emit(ox, node, op, &a, in, n_in, 1);
bad:
    return ox_node_error(ox, node, FM_ERR_PARSE, "equation '%s%s%s' does not fit its operands",
                         eq, arrow ? "->" : "", arrow ? arrow + 2 : "");
}
/* ---- indexing, selection, layout and losses (index.c, select.c, layout.c, loss.c) ---- */

/* ONNX's reduction attribute (ScatterElements, ScatterND from opsets 16/18) -> 0 none, 1 add,
 * 2 mul, 3 max, 4 min (index.c) */
static enum fm_status reduction_attr(struct ox *ox, const Onnx__NodeProto *node, int64_t *out)
{
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    char r[16];
    enum fm_status st = ox_attr_string(ox, node, "reduction", "none", r, sizeof(r));
    if (st)
        return st;
    for (int64_t i = 0; i < 5; i++) {
        if (!strcmp(r, names[i])) {
            *out = i;
            return FM_OK;
        }
    }
    return ox_node_error(ox, node, FM_ERR_PARSE, "reduction '%s' is not one of none, add, mul, "
                         "max, min", r);
}

/* GatherElements, GatherND, ScatterElements (and the deprecated Scatter), ScatterND */
static enum fm_status map_index(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    bool scatter = op == FM_OP_SCATTER_ELEMENTS || op == FM_OP_SCATTER_ND;
    enum fm_status st = need(ox, node, in, n_in, scatter ? 3 : 2);
    if (!st && (op == FM_OP_GATHER_ELEMENTS || op == FM_OP_SCATTER_ELEMENTS))
        st = ox_attr_int(ox, node, "axis", 0, &a.axis);
    if (!st && op == FM_OP_GATHER_ND) {
        st = ox_attr_int(ox, node, "batch_dims", 0, &a.ints[0]);
        a.nints = 1;
    }
    if (!st && scatter) {
        st = reduction_attr(ox, node, &a.ints[0]);
        a.nints = 1;
    }
    if (st)
        return st;
    return ox_emit(ox, node, op, &a, in, scatter ? 3 : 2, 1);
}

/* SoftmaxCrossEntropyLoss (loss, log_prob?) and NegativeLogLikelihoodLoss (loss.c) */
static enum fm_status map_onnx_loss(struct ox *ox, const Onnx__NodeProto *node,
                                    const fm_tid *in, int n_in, enum fm_op op)
{
    static const char *const names[] = {"none", "sum", "mean"};
    struct fm_attrs a;
    fm_attrs_init(&a);
    char r[16];
    enum fm_status st = need(ox, node, in, n_in, 2);
    if (!st)
        st = ox_attr_string(ox, node, "reduction", "mean", r, sizeof(r));
    if (!st)
        st = ox_attr_int(ox, node, "ignore_index", 0, &a.ints[2]);
    if (st)
        return st;
    a.ints[0] = -1;
    for (int i = 0; i < 3; i++)
        a.ints[0] = strcmp(r, names[i]) ? a.ints[0] : i;
    if (a.ints[0] < 0)
        return ox_node_error(ox, node, FM_ERR_PARSE, "reduction '%s' is not one of none, sum, "
                             "mean", r);
    a.ints[1] = ox_attr(node, "ignore_index") != NULL;
    a.nints = 3;
    int n_out = op == FM_OP_SOFTMAX_CE_LOSS && node->n_output > 1 &&
                ox_str(node->output[1])[0] ? 2 : 1;
    return ox_emit(ox, node, op, &a, in, trim(in, n_in), n_out);
}

/* A known integer operand (TopK's K, OneHot's depth), or an error naming the input and saying
 * that the output shape depends on it. */
static enum fm_status known_count(struct ox *ox, const Onnx__NodeProto *node, fm_tid t,
                                  const char *what, int64_t *out)
{
    double v;
    if (!scalar_value(ox, t, &v)) {
        const char *name = tensor(ox, t)->name;
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "its %s ('%s') is not known before "
                             "running the network, but the output shape depends on it: make it a "
                             "constant, or bind its value (fm_load_opts.values %s=N)",
                             what, name, name);
    }
    if (!(v >= 0 && v <= (double)OX_DIM_MAX) || v != floor(v))
        return ox_node_error(ox, node, FM_ERR_SHAPE, "its %s is %g", what, v);
    *out = (int64_t)v;
    return FM_OK;
}

/* ArgMax, ArgMin, TopK, OneHot, Compress, NonZero (select.c); Unique is declined */
static enum fm_status map_select(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                 int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    int64_t v;
    enum fm_status st = need(ox, node, in, n_in, op == FM_OP_ONEHOT ? 3
                                               : op == FM_OP_COMPRESS ? 2 : 1);
    if (st)
        return st;
    if (op == FM_OP_ARGMAX || op == FM_OP_ARGMIN) {
        st = ox_attr_int(ox, node, "axis", 0, &a.axis);
        if (!st)
            st = ox_attr_int(ox, node, "keepdims", 1, &v);
        if (!st && v)
            a.flags |= FM_ATTR_KEEPDIMS;
        if (!st)
            st = ox_attr_int(ox, node, "select_last_index", 0, &a.ints[0]);
        a.nints = 1;
        return st ? st : ox_emit(ox, node, op, &a, in, 1, 1);
    }
    if (op == FM_OP_TOPK) {
        int64_t largest, sorted;
        st = ox_attr_int(ox, node, "axis", -1, &a.axis);
        if (!st)
            st = ox_attr_int(ox, node, "largest", 1, &largest);
        if (!st)
            st = ox_attr_int(ox, node, "sorted", 1, &sorted);
        if (!st && ox->opset < 10)
            st = ox_attr_int(ox, node, "k", 0, &a.ints[0]);
        else if (!st)
            st = n_in > 1 && in[1] != FM_NONE ? known_count(ox, node, in[1], "k", &a.ints[0])
                 : ox_node_error(ox, node, FM_ERR_PARSE, "required input 1 (K) is missing");
        if (st)
            return st;
        a.ints[1] = largest != 0;
        a.ints[2] = sorted != 0;
        a.nints = 3;
        return ox_emit(ox, node, op, &a, in, 1, 2);
    }
    if (op == FM_OP_ONEHOT) {
        st = ox_attr_int(ox, node, "axis", -1, &a.axis);
        if (!st)
            st = known_count(ox, node, in[1], "depth", &a.ints[0]);
        if (st)
            return st;
        a.nints = 1;
        fm_tid x[2] = {in[0], in[2]};
        return ox_emit(ox, node, op, &a, x, 2, 1);
    }
    if (op == FM_OP_COMPRESS) {
        const struct ox_val *c = ox_val_of(ox, in[1]);
        const struct fm_tensor *x = tensor(ox, in[0]);
        bool flatten = ox_attr(node, "axis") == NULL;
        st = ox_attr_int(ox, node, "axis", 0, &a.axis);
        if (st)
            return st;
        if (!c || c->is_float)
            return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "its condition ('%s') is not known "
                                 "before running the network, and the output's length is the "
                                 "number of its true values (a data-dependent shape): make it a "
                                 "constant, or bind its value (fm_load_opts.values %s=...)",
                                 tensor(ox, in[1])->name, tensor(ox, in[1])->name);
        uint64_t len = 0;
        int64_t ax = a.axis < 0 ? a.axis + x->shape.rank : a.axis;
        if (flatten)
            st = fm_shape_numel(&x->shape, &len);
        else if (ax < 0 || ax >= x->shape.rank)
            st = FM_ERR_SHAPE;
        else
            len = (uint64_t)x->shape.dims[ax];
        if (st)
            return ox_node_error(ox, node, FM_ERR_SHAPE, "axis %lld does not fit rank %d",
                                 (long long)a.axis, x->shape.rank);
        int64_t kept = 0;
        for (uint64_t i = 0; i < c->n && i < len; i++)
            kept += c->i[i] != 0;
        a.ints[0] = kept;
        a.ints[1] = flatten;
        a.nints = 2;
        return ox_emit(ox, node, op, &a, in, 1, 1);
    }
    if (op == FM_OP_NONZERO) {
        const struct ox_val *c = ox_val_of(ox, in[0]);
        if (!c)
            return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "its output has one column per "
                                 "nonzero element of '%s', known only when the network runs (a "
                                 "data-dependent shape): make it a constant, or bind its value "
                                 "(fm_load_opts.values %s=...)", tensor(ox, in[0])->name,
                                 tensor(ox, in[0])->name);
        int64_t count = 0;
        for (uint64_t i = 0; i < c->n; i++)
            count += c->is_float ? c->f[i] != 0 : c->i[i] != 0;
        a.ints[0] = count;
        a.nints = 1;
        return ox_emit(ox, node, op, &a, in, 1, 1);
    }
    /* Unique */
    return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "its outputs have one entry per distinct "
                         "value of '%s', known only when the network runs (a data-dependent "
                         "shape), so nothing after it can be counted",
                         n_in ? tensor(ox, in[0])->name : "?");
}

/* DepthToSpace, SpaceToDepth, ReverseSequence, MaxUnpool, EyeLike (layout.c) */
static enum fm_status map_layout(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                 int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    enum fm_status st = need(ox, node, in, n_in, op == FM_OP_REVERSE_SEQUENCE ||
                                                 op == FM_OP_MAX_UNPOOL ? 2 : 1);
    if (st)
        return st;
    if (op == FM_OP_DEPTH_TO_SPACE || op == FM_OP_SPACE_TO_DEPTH) {
        char mode[8];
        st = ox_attr_int(ox, node, "blocksize", 0, &a.ints[0]);
        if (!st)
            st = ox_attr_string(ox, node, "mode", "DCR", mode, sizeof(mode));
        if (st)
            return st;
        if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
            return ox_node_error(ox, node, FM_ERR_PARSE, "mode '%s' is neither DCR nor CRD",
                                 mode);
        a.ints[1] = !strcmp(mode, "CRD");
        a.nints = op == FM_OP_DEPTH_TO_SPACE ? 2 : 1;
        return ox_emit(ox, node, op, &a, in, 1, 1);
    }
    if (op == FM_OP_REVERSE_SEQUENCE) {
        st = ox_attr_int(ox, node, "batch_axis", 1, &a.ints[0]);
        if (!st)
            st = ox_attr_int(ox, node, "time_axis", 0, &a.ints[1]);
        a.nints = 2;
        return st ? st : ox_emit(ox, node, op, &a, in, 2, 1);
    }
    const struct fm_tensor *x = tensor(ox, in[0]);
    if (op == FM_OP_EYELIKE) {
        int64_t dt;
        enum fm_dtype d = x->dtype;
        st = ox_attr_int(ox, node, "dtype", -1, &dt);
        if (st)
            return st;
        if (dt >= 0 && (dt > INT32_MAX || !ox_dtype((int32_t)dt, &d)))
            return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "dtype %lld is not a numeric "
                                 "ONNX type", (long long)dt);
        a.ints[0] = d;
        st = ox_attr_int(ox, node, "k", 0, &a.ints[1]);
        a.nints = 2;
        return st ? st : ox_emit(ox, node, op, &a, in, 1, 1);
    }
    /* MaxUnpool: the output dims from output_shape when given, else from the window */
    int r = x->shape.rank;
    if (r < 3 || r > FM_MAX_DIMS)
        return ox_node_error(ox, node, FM_ERR_SHAPE, "input of rank %d is not (N, C, spatial...)",
                             r);
    if (n_in > 2 && in[2] != FM_NONE) {
        const struct ox_val *v;
        st = ox_need_ints(ox, node, in[2], "output_shape", &v);
        if (st)
            return st;
        if (v->n != (uint64_t)r)
            return ox_node_error(ox, node, FM_ERR_SHAPE, "output_shape has %llu values for rank "
                                 "%d", (unsigned long long)v->n, r);
        for (int i = 0; i < r; i++)
            a.ints[i] = v->i[i];
    } else {
        int64_t k[FM_MAX_DIMS], s[FM_MAX_DIMS], p[2 * FM_MAX_DIMS];
        int nk, ns, np;
        st = ox_attr_ints(ox, node, "kernel_shape", k, FM_MAX_DIMS, &nk);
        if (!st)
            st = ox_attr_ints(ox, node, "strides", s, FM_MAX_DIMS, &ns);
        if (!st)
            st = ox_attr_ints(ox, node, "pads", p, 2 * FM_MAX_DIMS, &np);
        if (st)
            return st;
        if (nk != r - 2 || (ns && ns != nk) || (np && np != 2 * nk))
            return ox_node_error(ox, node, FM_ERR_PARSE, "kernel_shape, strides and pads do "
                                 "not fit %d spatial dims", r - 2);
        a.ints[0] = x->shape.dims[0];
        a.ints[1] = x->shape.dims[1];
        for (int i = 0; i < nk; i++) {
            int64_t st_i = ns ? s[i] : 1, lo = np ? p[i] : 0, hi = np ? p[nk + i] : 0;
            a.ints[2 + i] = (x->shape.dims[2 + i] - 1) * st_i + k[i] - lo - hi;
        }
    }
    a.nints = r;
    return ox_emit(ox, node, op, &a, in, 2, 1);
}

/* CastLike: Cast to the dtype of the second input (opset 15) */
static enum fm_status map_castlike(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                   int n_in, enum fm_op op)
{
    enum fm_status st = need(ox, node, in, n_in, 2);
    if (st)
        return st;
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.ints[0] = tensor(ox, in[1])->dtype;
    a.nints = 1;
    return ox_emit(ox, node, op, &a, in, 1, 1);
}


/* ---- recurrent layers: LSTM, GRU, RNN (and wrappers of the same cells) ---- */

/* Attributes into the ints of rnn.c (src/ops/ops.h): hidden_size, direction, layout,
 * linear_before_reset, clip and an omitted Y as flags, the activations named per direction.
 * Outputs: as many as the node lists (Y, Y_h, Y_c). */
static enum fm_status map_rnn(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                              int n_in, enum fm_op op)
{
    const char *type = ox_str(node->op_type);
    enum fm_rnn_cell cell = strstr(type, "LSTM") ? FM_RNN_CELL_LSTM
                            : strstr(type, "GRU") ? FM_RNN_CELL_GRU : FM_RNN_CELL_RNN;
    struct fm_attrs a;
    fm_attrs_init(&a);
    int64_t hidden, layout, lbr;
    char dir[32];
    enum fm_status st = need(ox, node, in, n_in, 3);
    if (!st)
        st = ox_attr_int(ox, node, "hidden_size", 0, &hidden);
    if (!st)
        st = ox_attr_int(ox, node, "layout", 0, &layout);
    if (!st)
        st = ox_attr_int(ox, node, "linear_before_reset", 0, &lbr);
    if (!st)
        st = ox_attr_string(ox, node, "direction", "forward", dir, sizeof(dir));
    if (st)
        return st;
    int64_t direction = strcmp(dir, "forward") == 0    ? 0
                        : strcmp(dir, "reverse") == 0 ? 1
                        : strcmp(dir, "bidirectional") == 0 ? 2 : -1;
    if (direction < 0)
        return ox_node_error(ox, node, FM_ERR_PARSE, "direction '%s' is none of forward, "
                             "reverse, bidirectional", dir);
    int64_t flags = ox_attr(node, "clip") ? FM_RNN_CLIP : 0;
    if (node->n_output == 0 || !node->output[0] || !*node->output[0])
        flags |= FM_RNN_NO_Y;
    if (strcmp(type, "DynamicQuantizeLSTM") == 0)   /* ONNX Runtime stores W, R transposed */
        flags |= FM_RNN_W_TRANSPOSED;
    a.ints[0] = hidden;
    a.ints[1] = direction;
    a.ints[2] = layout;
    a.ints[3] = lbr;
    a.ints[4] = flags;
    a.nints = 5;
    const Onnx__AttributeProto *acts = ox_attr(node, "activations");
    int per = fm_rnn_acts_per_direction(cell), dirs = direction == 2 ? 2 : 1;
    if (acts) {
        if (acts->n_strings != (size_t)per && acts->n_strings != (size_t)(per * dirs))
            return ox_node_error(ox, node, FM_ERR_PARSE, "%zu activations; %d per direction "
                                 "expected", acts->n_strings, per);
        for (int k = 0; k < per * dirs; k++) {
            const ProtobufCBinaryData *sv = &acts->strings[(size_t)k % acts->n_strings];
            char name[32];
            size_t len = sv->len < sizeof(name) - 1 ? sv->len : sizeof(name) - 1;
            if (len)
                memcpy(name, sv->data, len);
            name[len] = '\0';
            int code = fm_rnn_activation(name);
            if (!code)
                return ox_node_error(ox, node, FM_ERR_UNSUPPORTED,
                                     "activation '%s' is not one ONNX defines for %s", name,
                                     type);
            a.ints[a.nints++] = code;
        }
    }
    if (n_in > 4 && in[4] != FM_NONE && !tensor(ox, in[4])->ivalue)
        fm_log(ox->ctx, "%s: node '%s' (%s): sequence_lens is not known: every batch row is "
               "counted at the full sequence length", ox->src, ox_node_name(node), type);
    int max_out = cell == FM_RNN_CELL_LSTM ? 3 : 2;   /* Y, Y_h, Y_c */
    int n_out = node->n_output > (size_t)max_out ? max_out : (int)node->n_output;
    int n = trim(in, n_in);
    return ox_emit(ox, node, op, &a, in, n > 8 ? 8 : n, n_out);
}

/* ---- opsets 1 to 6 ---- */

/* Attributes that later became inputs are read by the mappers above (Reshape-1's shape,
 * Pad-1's paddings, Slice-1's starts/ends/axes, Split-1's split, Upsample-1's scales, Cast-1's
 * type name, Concat-1's default axis). What follows changes the operands themselves, or
 * refuses an old version whose meaning flopmeter does not implement. */

/* A view of t as shape `to` (a copy, never a pointer into the graph): a synthesized Reshape,
 * which costs nothing. */
static enum fm_status view_as(struct ox *ox, const Onnx__NodeProto *node, fm_tid t,
                              struct fm_shape to, const char *suffix, fm_tid *out)
{
    struct fm_shape s = {1, {to.rank}};
    struct ox_val v = {true, false, (uint64_t)to.rank, to.dims, NULL};
    fm_tid c;
    enum fm_status st = ox_const_tensor(ox, node, NULL, FM_ROLE_CONST, FM_DTYPE_INT64, &s, &v, &c);
    if (st)
        return st;
    char name[512];
    snprintf(name, sizeof(name), "%s:%s", ox_node_name(node), suffix);
    fm_tid rin[2] = {t, c};
    const char *on = name;
    return fm_graph_add_node(ox->g, FM_OP_RESHAPE, name, NULL, rin, 2, &on, 1, out);
}

static bool legacy_broadcast_op(const char *op)
{
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor",
                                      "Equal", "Greater", "Less"};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (!strcmp(op, ops[i]))
            return true;
    }
    return false;
}

/* Opsets 1 to 6: the binary ops take B of A's shape, or with broadcast=1 a B whose dims match
 * A's from `axis` on (from the end when axis is absent); PRelu's slope of C values is per
 * channel (axis 1). numpy's broadcasting, which flopmeter's ops implement, aligns at the end:
 * B becomes a view with trailing 1s, so that both rules agree. x[1] is in[1] or that view. */
static enum fm_status legacy_operands(struct ox *ox, const Onnx__NodeProto *node,
                                      const fm_tid *in, int n_in, fm_tid *x)
{
    const char *op = ox_str(node->op_type);
    bool bin = legacy_broadcast_op(op), prelu = !strcmp(op, "PRelu");
    if ((!bin && !prelu) || n_in < 2 || in[0] == FM_NONE || in[1] == FM_NONE)
        return FM_OK;
    const struct fm_shape a = tensor(ox, in[0])->shape, b = tensor(ox, in[1])->shape;
    int64_t axis = 1, bcast = 0;
    if (bin) {
        enum fm_status st = ox_attr_int(ox, node, "broadcast", 0, &bcast);
        if (st)
            return st;
        if (!bcast) {
            bool same = a.rank == b.rank;
            for (int d = 0; same && d < a.rank; d++)
                same = a.dims[d] == b.dims[d];
            if (!same)
                return ox_node_error(ox, node, FM_ERR_SHAPE, "%s at opset %lld: inputs of "
                                     "different shapes need broadcast=1", op,
                                     (long long)ox->opset);
            return FM_OK;
        }
        if (!ox_attr(node, "axis"))
            return FM_OK;   /* aligned at the end: numpy's rule */
        st = ox_attr_int(ox, node, "axis", 0, &axis);
        if (st)
            return st;
    } else if (b.rank != 1 || a.rank < 3 || b.dims[0] != a.dims[1]) {
        return FM_OK;
    }
    if (axis < 0)
        axis += a.rank;
    if (axis < 0 || axis + b.rank > a.rank)
        return ox_node_error(ox, node, FM_ERR_SHAPE, "%s at opset %lld: broadcast axis %lld "
                             "does not place B (rank %d) inside A (rank %d)", op,
                             (long long)ox->opset, (long long)axis, b.rank, a.rank);
    for (int k = 0; k < b.rank; k++) {
        if (b.dims[k] != a.dims[axis + k] && b.dims[k] != 1)
            return ox_node_error(ox, node, FM_ERR_SHAPE, "%s at opset %lld: B's dim %d (%lld) "
                                 "does not match A's dim %lld (%lld) at broadcast axis %lld",
                                 op, (long long)ox->opset, k, (long long)b.dims[k],
                                 (long long)(axis + k), (long long)a.dims[axis + k],
                                 (long long)axis);
    }
    if (axis + b.rank == a.rank)
        return FM_OK;
    struct fm_shape to = b;
    while (to.rank < a.rank - axis)
        to.dims[to.rank++] = 1;
    return view_as(ox, node, in[1], to, "broadcast_axis", &x[1]);
}

/* Old versions whose meaning differs and is not implemented: refused by op and version. */
static enum fm_status legacy_refuse(struct ox *ox, const Onnx__NodeProto *node)
{
    const char *op = ox_str(node->op_type);
    if (!strcmp(op, "Tile") && ox->opset < 6)
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "Tile-1 (opset %lld), whose inputs "
                             "are a count and one axis, is not implemented (Tile-6 and later "
                             "are); re-export at opset 6 or later", (long long)ox->opset);
    if (!strcmp(op, "BatchNormalization") && ox->opset < 9) {
        int64_t spatial;
        enum fm_status st = ox_attr_int(ox, node, "spatial", 1, &spatial);
        if (st)
            return st;
        if (!spatial)
            return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "BatchNormalization-%d (opset "
                                 "%lld) with spatial=0 (statistics per activation rather than "
                                 "per channel) is not implemented",
                                 ox->opset < 6 ? 1 : ox->opset < 7 ? 6 : 7, (long long)ox->opset);
    }
    return FM_OK;
}

/* Random generators (src/ops/random.c): ints = {dtype, seed given, seed, then the shape of
 * RandomUniform and RandomNormal, or Multinomial's sample_size}; uniform low/high in lo/hi,
 * normal mean/scale in alpha/beta. The output dtype: the attribute, else ONNX's default
 * (float for RandomUniform/RandomNormal, int32 for Multinomial, the input's otherwise). */
static enum fm_status map_random(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                                 int n_in, enum fm_op op)
{
    struct fm_attrs a;
    fm_attrs_init(&a);
    bool sourced = op == FM_OP_RANDOM_UNIFORM || op == FM_OP_RANDOM_NORMAL;
    enum fm_status st = need(ox, node, in, n_in, sourced ? 0 : 1);
    if (st)
        return st;
    enum fm_dtype d = sourced ? FM_DTYPE_FP32 : op == FM_OP_MULTINOMIAL ? FM_DTYPE_INT32
                      : tensor(ox, in[0])->dtype;
    int64_t dt;
    double seed;
    st = ox_attr_int(ox, node, "dtype", -1, &dt);
    if (!st)
        st = ox_attr_float(ox, node, "seed", 0.0, &seed);
    if (st)
        return st;
    if (dt >= 0 && (dt > INT32_MAX || !ox_dtype((int32_t)dt, &d)))
        return ox_node_error(ox, node, FM_ERR_UNSUPPORTED, "dtype %lld is not a numeric ONNX "
                             "type", (long long)dt);
    a.ints[0] = d;
    a.ints[1] = ox_attr(node, "seed") != NULL;
    a.ints[2] = isfinite(seed) && fabs(seed) < 9e18 ? (int64_t)seed : 0;
    a.nints = 3;
    if (op == FM_OP_RANDOM_UNIFORM || op == FM_OP_RANDOM_UNIFORM_LIKE) {
        st = ox_attr_float(ox, node, "low", 0.0, &a.lo);
        if (!st)
            st = ox_attr_float(ox, node, "high", 1.0, &a.hi);
    } else if (op == FM_OP_RANDOM_NORMAL || op == FM_OP_RANDOM_NORMAL_LIKE) {
        st = ox_attr_float(ox, node, "mean", 0.0, &a.alpha);
        if (!st)
            st = ox_attr_float(ox, node, "scale", 1.0, &a.beta);
    } else if (op == FM_OP_MULTINOMIAL) {
        st = ox_attr_int(ox, node, "sample_size", 1, &a.ints[3]);
        a.nints = 4;
    }
    if (!st && sourced) {
        int n = 0;
        if (!ox_attr(node, "shape"))
            return ox_node_error(ox, node, FM_ERR_PARSE, "the attribute 'shape' is missing");
        st = ox_attr_ints(ox, node, "shape", a.ints + 3, FM_MAX_DIMS, &n);
        a.nints = 3 + n;
    }
    if (st)
        return st;
    return ox_emit(ox, node, op, &a, in, sourced ? 0 : 1, 1);
}

/* ---- the table, generated from the ONNX frontend's op list (onnx_ops.h) ---- */

struct op_map {
    const char *name;   /* ONNX op type */
    map_fn fn;
    enum fm_op op;
};

/* every row names an op of FM_OP_LIST other than Unknown (FM_OP_<ID> must exist to compile) */
#define OX_OP_CHECK(ID, onnx, map, slots)                                                     \
    _Static_assert(FM_OP_##ID > FM_OP_UNKNOWN && FM_OP_##ID < FM_OP_COUNT,                    \
                   "onnx_ops.h: " #ID " is no op of FM_OP_LIST");
OX_OP_LIST(OX_OP_CHECK)
#undef OX_OP_CHECK

#define OX_MAP_ROW(ID, onnx, map, slots) {onnx, map_##map, FM_OP_##ID},
static const struct op_map table[] = {
    OX_OP_LIST(OX_MAP_ROW)
    /* ONNX op types the list does not hold as their own: older names of its ops */
    {"Upsample", map_resize, FM_OP_RESIZE},   /* Resize before opset 10, same operands */
    {"com.microsoft:Gelu", map_act, FM_OP_GELU},   /* ONNX Runtime's Gelu (erf) */
    {"Scatter", map_index, FM_OP_SCATTER_ELEMENTS},   /* opsets 9-10: ScatterElements */
    {"Unique", map_select, FM_OP_UNKNOWN},   /* declined: a data-dependent shape */
    {"CastLike", map_castlike, FM_OP_CAST},   /* Cast to the second input's dtype */
};
#undef OX_MAP_ROW

enum fm_status ox_map_node(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                           int n_in)
{
    fm_tid x[FM_MAX_IO];
    if (ox->opset < 9 && ox_default_domain(node->domain)) {
        enum fm_status st = legacy_refuse(ox, node);
        if (!st && ox->opset < 7 && n_in > 0 && n_in <= FM_MAX_IO) {
            memcpy(x, in, sizeof(fm_tid) * (size_t)n_in);
            st = legacy_operands(ox, node, in, n_in, x);
            in = x;
        }
        if (st)
            return st;
    }
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (table[i].fn && ox_op_is(node, table[i].name))
            return table[i].fn(ox, node, in, n_in, table[i].op);
    }
    return ox_emit_unknown(ox, node, "no cost rule for this op");
}

bool ox_map_known(const char *op)
{
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (table[i].name && table[i].fn && strcmp(table[i].name, op) == 0)
            return true;
    }
    return false;
}
