/* A tiny protobuf writer for ONNX models, for harnesses only: the fuzz targets build models from
 * fuzz bytes with it and tests/test_robustness.c builds malformed models (cycles, duplicate
 * names, absurd dims, deep nesting) without fixture files. It writes what it is told, valid or
 * not; it does not know onnx.proto beyond the field numbers below, and it never reads.
 * Header-only (static functions) so both users compile it without a build change. */
#ifndef FM_ONNX_WRITER_H
#define FM_ONNX_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Field numbers from onnx.proto (onnx 1.12, /usr/include/onnx/onnx.proto). */
enum {
    OW_MODEL_IR_VERSION = 1, OW_MODEL_PRODUCER = 2, OW_MODEL_GRAPH = 7, OW_MODEL_OPSET = 8,
    OW_OPSET_DOMAIN = 1, OW_OPSET_VERSION = 2,
    OW_GRAPH_NODE = 1, OW_GRAPH_NAME = 2, OW_GRAPH_INIT = 5, OW_GRAPH_INPUT = 11,
    OW_GRAPH_OUTPUT = 12, OW_GRAPH_VALUE_INFO = 13,
    OW_NODE_INPUT = 1, OW_NODE_OUTPUT = 2, OW_NODE_NAME = 3, OW_NODE_OP = 4, OW_NODE_ATTR = 5,
    OW_NODE_DOMAIN = 7,
    OW_ATTR_NAME = 1, OW_ATTR_F = 2, OW_ATTR_I = 3, OW_ATTR_S = 4, OW_ATTR_T = 5, OW_ATTR_G = 6,
    OW_ATTR_FLOATS = 7, OW_ATTR_INTS = 8, OW_ATTR_TYPE = 20,
    OW_VI_NAME = 1, OW_VI_TYPE = 2,
    OW_TYPE_TENSOR = 1, OW_TT_ELEM = 1, OW_TT_SHAPE = 2, OW_SHAPE_DIM = 1, OW_DIM_VALUE = 1,
    OW_DIM_PARAM = 2,
    OW_TENSOR_DIMS = 1, OW_TENSOR_TYPE = 2, OW_TENSOR_FLOATS = 4, OW_TENSOR_INT64S = 7,
    OW_TENSOR_NAME = 8, OW_TENSOR_RAW = 9
};
/* AttributeProto.AttributeType and TensorProto.DataType values used here. */
enum { OW_AT_FLOAT = 1, OW_AT_INT = 2, OW_AT_STRING = 3, OW_AT_TENSOR = 4, OW_AT_GRAPH = 5,
       OW_AT_FLOATS = 6, OW_AT_INTS = 7 };
enum { OW_DT_FLOAT = 1, OW_DT_INT64 = 7, OW_DT_BOOL = 9, OW_DT_FLOAT16 = 10 };

struct ow {
    uint8_t *buf;
    size_t len, cap;
    bool oom;           /* an allocation failed: the message is incomplete */
};

static inline void ow_free(struct ow *w)
{
    free(w->buf);
    memset(w, 0, sizeof(*w));
}

static inline void ow_raw(struct ow *w, const void *p, size_t n)
{
    if (w->oom)
        return;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 64;
        while (cap < w->len + n)
            cap *= 2;
        uint8_t *b = realloc(w->buf, cap);
        if (!b) {
            w->oom = true;
            return;
        }
        w->buf = b;
        w->cap = cap;
    }
    if (n)
        memcpy(w->buf + w->len, p, n);
    w->len += n;
}

static inline void ow_varint(struct ow *w, uint64_t v)
{
    uint8_t b[10];
    size_t n = 0;
    do {
        b[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            b[n] |= 0x80;
        n++;
    } while (v);
    ow_raw(w, b, n);
}

static inline void ow_tag(struct ow *w, unsigned field, unsigned wire)
{
    ow_varint(w, ((uint64_t)field << 3) | wire);
}

/* int64/int32/enum fields: negative values are ten-byte two's complement varints */
static inline void ow_int(struct ow *w, unsigned field, int64_t v)
{
    ow_tag(w, field, 0);
    ow_varint(w, (uint64_t)v);
}

static inline void ow_bytes(struct ow *w, unsigned field, const void *p, size_t n)
{
    ow_tag(w, field, 2);
    ow_varint(w, n);
    ow_raw(w, p, n);
}

static inline void ow_str(struct ow *w, unsigned field, const char *s)
{
    ow_bytes(w, field, s, strlen(s));
}

static inline void ow_float(struct ow *w, unsigned field, float f)
{
    uint8_t b[4];
    memcpy(b, &f, 4);   /* protobuf fixed32 is little-endian, as is every host this runs on */
    ow_tag(w, field, 5);
    ow_raw(w, b, 4);
}

/* Appends a finished sub-message and frees it. */
static inline void ow_msg(struct ow *w, unsigned field, struct ow *sub)
{
    w->oom |= sub->oom;
    ow_bytes(w, field, sub->buf, sub->len);
    ow_free(sub);
}

/* ---- ONNX pieces ---- */

/* A ValueInfoProto of a tensor: dims[i] < 0 with params[i] set is the symbolic dim params[i];
 * rank < 0 leaves the shape out. */
static inline void ow_value_info(struct ow *graph, unsigned field, const char *name, int elem,
                                 int rank, const int64_t *dims, const char *const *params)
{
    struct ow vi = {0}, type = {0}, tt = {0}, shape = {0};
    ow_str(&vi, OW_VI_NAME, name);
    ow_int(&tt, OW_TT_ELEM, elem);
    for (int i = 0; i < rank; i++) {
        struct ow dim = {0};
        if (params && params[i])
            ow_str(&dim, OW_DIM_PARAM, params[i]);
        else
            ow_int(&dim, OW_DIM_VALUE, dims[i]);
        ow_msg(&shape, OW_SHAPE_DIM, &dim);
    }
    if (rank >= 0)
        ow_msg(&tt, OW_TT_SHAPE, &shape);
    else
        ow_free(&shape);
    ow_msg(&type, OW_TYPE_TENSOR, &tt);
    ow_msg(&vi, OW_VI_TYPE, &type);
    ow_msg(graph, field, &vi);
}

/* A TensorProto: float tensors carry no data (flopmeter never reads weights); int64 tensors
 * carry vals (n of them) as int64_data. */
static inline void ow_tensor(struct ow *w, unsigned field, const char *name, int elem, int rank,
                             const int64_t *dims, const int64_t *vals, size_t n)
{
    struct ow t = {0};
    for (int i = 0; i < rank; i++)
        ow_int(&t, OW_TENSOR_DIMS, dims[i]);
    ow_int(&t, OW_TENSOR_TYPE, elem);
    if (name)
        ow_str(&t, OW_TENSOR_NAME, name);
    if (vals) {
        struct ow packed = {0};
        for (size_t i = 0; i < n; i++)
            ow_varint(&packed, (uint64_t)vals[i]);
        ow_msg(&t, OW_TENSOR_INT64S, &packed);
    }
    ow_msg(w, field, &t);
}

static inline void ow_attr_int(struct ow *node, const char *name, int64_t v)
{
    struct ow a = {0};
    ow_str(&a, OW_ATTR_NAME, name);
    ow_int(&a, OW_ATTR_TYPE, OW_AT_INT);
    ow_int(&a, OW_ATTR_I, v);
    ow_msg(node, OW_NODE_ATTR, &a);
}

static inline void ow_attr_ints(struct ow *node, const char *name, const int64_t *v, size_t n)
{
    struct ow a = {0}, packed = {0};
    ow_str(&a, OW_ATTR_NAME, name);
    ow_int(&a, OW_ATTR_TYPE, OW_AT_INTS);
    for (size_t i = 0; i < n; i++)
        ow_varint(&packed, (uint64_t)v[i]);
    ow_msg(&a, OW_ATTR_INTS, &packed);
    ow_msg(node, OW_NODE_ATTR, &a);
}

static inline void ow_attr_float(struct ow *node, const char *name, float f)
{
    struct ow a = {0};
    ow_str(&a, OW_ATTR_NAME, name);
    ow_int(&a, OW_ATTR_TYPE, OW_AT_FLOAT);
    ow_float(&a, OW_ATTR_F, f);
    ow_msg(node, OW_NODE_ATTR, &a);
}

static inline void ow_attr_string(struct ow *node, const char *name, const char *s)
{
    struct ow a = {0};
    ow_str(&a, OW_ATTR_NAME, name);
    ow_int(&a, OW_ATTR_TYPE, OW_AT_STRING);
    ow_str(&a, OW_ATTR_S, s);
    ow_msg(node, OW_NODE_ATTR, &a);
}

/* A NodeProto; "" in inputs is an omitted optional input. The node is appended to graph. */
static inline void ow_node(struct ow *graph, const char *op, const char *name,
                           const char *const *in, int n_in, const char *const *out, int n_out,
                           struct ow *attrs)
{
    struct ow n = {0};
    for (int i = 0; i < n_in; i++)
        ow_str(&n, OW_NODE_INPUT, in[i]);
    for (int i = 0; i < n_out; i++)
        ow_str(&n, OW_NODE_OUTPUT, out[i]);
    if (name)
        ow_str(&n, OW_NODE_NAME, name);
    ow_str(&n, OW_NODE_OP, op);
    if (attrs) {   /* already-encoded attribute fields */
        n.oom |= attrs->oom;
        ow_raw(&n, attrs->buf, attrs->len);
        ow_free(attrs);
    }
    ow_msg(graph, OW_GRAPH_NODE, &n);
}

/* The ModelProto around a finished GraphProto (freed). */
static inline void ow_model(struct ow *model, int64_t ir_version, int64_t opset, struct ow *graph)
{
    struct ow os = {0};
    ow_int(model, OW_MODEL_IR_VERSION, ir_version);
    ow_str(model, OW_MODEL_PRODUCER, "flopmeter-tests");
    ow_msg(model, OW_MODEL_GRAPH, graph);
    ow_str(&os, OW_OPSET_DOMAIN, "");
    ow_int(&os, OW_OPSET_VERSION, opset);
    ow_msg(model, OW_MODEL_OPSET, &os);
}

#endif
