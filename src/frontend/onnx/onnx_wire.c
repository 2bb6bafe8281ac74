/* The bytes of an ONNX file: mapping it, the arena protobuf-c unpacks into, the nesting-depth
 * check that runs first, and the checks that make a ModelProto a model flopmeter reads (IR
 * version, a graph, an opset of the default domain from 1 to 21). It knows nothing of graphs,
 * nodes or shapes: what the messages mean is the business of the files above it. */
#include "onnx_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

bool ox_default_domain(const char *d)
{
    return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

/* ---- the arena behind protobuf-c: big chunks, not zeroed (protobuf-c sets every field) ---- */

struct ox_pb_chunk {
    struct ox_pb_chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

/* Small blocks (messages, names) come from 1 MB chunks (struct ox_wire's head); big blocks
 * (weight payloads) from one region as large as the file (big), since the bytes fields of a
 * message never add up to more than the message itself. The region is asked for huge pages:
 * copying a 200 MB payload then costs a hundred page faults instead of fifty thousand. */
#define PB_CHUNK (1u << 20)
#define PB_BIG (PB_CHUNK / 4)
#define PB_HUGE ((size_t)2 << 20)

static struct ox_pb_chunk *pb_chunk_new(struct ox_wire *a, size_t size)
{
    if (size > SIZE_MAX - sizeof(struct ox_pb_chunk) - PB_HUGE)
        return NULL;
    struct ox_pb_chunk *c = fm_realloc(a->ctx, NULL, sizeof(*c) + size);
    if (!c) {
        a->oom = true;
        return NULL;
    }
    c->size = size;
    c->used = 0;
    return c;
}

static void *pb_alloc(void *user, size_t size)
{
    struct ox_wire *a = user;
    size_t need = (size + 15) & ~(size_t)15;
    if (need < size)
        return NULL;
    if (need >= PB_BIG) {
        if (!a->big && a->big_budget >= need) {
            a->big = pb_chunk_new(a, a->big_budget);
            if (a->big) {
#ifdef MADV_HUGEPAGE
                uintptr_t lo = ((uintptr_t)a->big->data + PB_HUGE - 1) & ~(uintptr_t)(PB_HUGE - 1);
                uintptr_t hi = ((uintptr_t)a->big->data + a->big->size) & ~(uintptr_t)(PB_HUGE - 1);
                if (hi > lo)
                    madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#endif
            }
            a->big_budget = 0;
        }
        if (a->big && a->big->size - a->big->used >= need) {
            void *p = a->big->data + a->big->used;
            a->big->used += need;
            return p;
        }
        struct ox_pb_chunk *n = pb_chunk_new(a, need);   /* past the region: a block of its own */
        if (!n)
            return NULL;
        n->used = need;
        n->next = a->head ? a->head->next : NULL;
        if (a->head)
            a->head->next = n;
        else
            a->head = n;
        return n->data;
    }
    struct ox_pb_chunk *c = a->head;
    if (!c || c->size - c->used < need) {
        struct ox_pb_chunk *n = pb_chunk_new(a, PB_CHUNK);
        if (!n)
            return NULL;
        n->next = c;
        a->head = c = n;
    }
    void *p = c->data + c->used;
    c->used += need;
    return p;
}

static void pb_free(void *user, void *ptr)
{
    (void)user;
    (void)ptr;   /* freed all at once */
}

void ox_wire_release(struct ox_wire *a)
{
    struct ox_pb_chunk *c = a->head;
    while (c) {
        struct ox_pb_chunk *next = c->next;
        fm_dealloc(a->ctx, c);
        c = next;
    }
    fm_dealloc(a->ctx, a->big);
    a->head = a->big = NULL;
    a->model = NULL;   /* it lived in those chunks */
}



/* ---- nesting depth, checked before protobuf-c sees the bytes ---- */

/* protobuf-c unpacks nested messages recursively and has no depth limit: a few megabytes of
 * subgraphs inside subgraphs (If/Loop bodies) or of nested TypeProtos overflow the stack
 * (found by tests/test_robustness.c). This walks the wire format iteratively, following only
 * the fields through which ONNX messages recurse, and refuses more than PB_MAX_DEPTH levels,
 * protobuf's own default recursion limit. Anything malformed ends the walk: the unpack that
 * follows reports it. */
#define PB_MAX_DEPTH 100

enum pb_msg { PBM_MODEL, PBM_GRAPH, PBM_NODE, PBM_ATTR, PBM_VALUE_INFO, PBM_TYPE, PBM_TYPE_SEQ,
              PBM_TYPE_MAP, PBM_TYPE_OPT, PBM_FUNCTION, PBM_TRAINING, PBM_LEAF };

/* The message type of field `field` of a `m`, when it lies on a recursive path. */
static enum pb_msg pb_child(enum pb_msg m, uint64_t field)
{
    switch (m) {
    case PBM_MODEL:      /* graph, training_info, functions */
        return field == 7 ? PBM_GRAPH : field == 20 ? PBM_TRAINING
             : field == 25 ? PBM_FUNCTION : PBM_LEAF;
    case PBM_TRAINING:   /* initialization, algorithm */
        return field == 1 || field == 2 ? PBM_GRAPH : PBM_LEAF;
    case PBM_GRAPH:      /* node; input, output, value_info */
        return field == 1 ? PBM_NODE : field >= 11 && field <= 13 ? PBM_VALUE_INFO : PBM_LEAF;
    case PBM_FUNCTION:   /* node */
        return field == 7 ? PBM_NODE : PBM_LEAF;
    case PBM_NODE:       /* attribute */
        return field == 5 ? PBM_ATTR : PBM_LEAF;
    case PBM_ATTR:       /* g, graphs; tp, type_protos */
        return field == 6 || field == 11 ? PBM_GRAPH
             : field == 14 || field == 15 ? PBM_TYPE : PBM_LEAF;
    case PBM_VALUE_INFO: /* type */
        return field == 2 ? PBM_TYPE : PBM_LEAF;
    case PBM_TYPE:       /* sequence_type, map_type, optional_type */
        return field == 4 ? PBM_TYPE_SEQ : field == 5 ? PBM_TYPE_MAP
             : field == 9 ? PBM_TYPE_OPT : PBM_LEAF;
    case PBM_TYPE_SEQ:   /* elem_type */
    case PBM_TYPE_OPT:
        return field == 1 ? PBM_TYPE : PBM_LEAF;
    case PBM_TYPE_MAP:   /* value_type */
        return field == 2 ? PBM_TYPE : PBM_LEAF;
    default:
        return PBM_LEAF;
    }
}

static bool pb_varint(const uint8_t *p, size_t n, size_t *pos, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *pos < n; shift += 7) {
        uint8_t b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

static enum fm_status pb_check_depth(struct fm_ctx *ctx, const void *data, size_t size,
                                     const char *src)
{
    const uint8_t *p = data;
    struct {
        enum pb_msg m;
        size_t end;
    } stack[PB_MAX_DEPTH + 1];
    int depth = 0;
    stack[0].m = PBM_MODEL;
    stack[0].end = size;
    size_t pos = 0;
    while (depth >= 0) {
        if (pos >= stack[depth].end) {
            pos = stack[depth].end;
            depth--;
            continue;
        }
        uint64_t tag, v;
        if (!pb_varint(p, stack[depth].end, &pos, &tag))
            return FM_OK;
        switch (tag & 7) {
        case 0:
            if (!pb_varint(p, stack[depth].end, &pos, &v))
                return FM_OK;
            break;
        case 1:
            pos += 8;
            break;
        case 5:
            pos += 4;
            break;
        case 2: {
            if (!pb_varint(p, stack[depth].end, &pos, &v) || v > stack[depth].end - pos)
                return FM_OK;
            enum pb_msg child = pb_child(stack[depth].m, tag >> 3);
            if (child == PBM_LEAF) {
                pos += (size_t)v;
                break;
            }
            if (depth == PB_MAX_DEPTH)
                return fm_error(ctx, FM_ERR_PARSE,
                                "%s: messages nest more than %d levels deep (subgraphs within "
                                "subgraphs, or nested types); flopmeter refuses such a file "
                                "rather than overflow its stack",
                                src, PB_MAX_DEPTH);
            depth++;
            stack[depth].m = child;
            stack[depth].end = pos + (size_t)v;
            break;
        }
        default:
            return FM_OK;   /* groups or garbage: protobuf-c rejects it */
        }
    }
    return FM_OK;
}

static enum fm_status opset_of(struct ox_wire *w, const char *src)
{
    const Onnx__ModelProto *m = w->model;
    w->opset = -1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (ox_default_domain(o->domain) && o->has_version)
            w->opset = o->version;
    }
    if (w->opset < 0)
        return fm_error(w->ctx, FM_ERR_PARSE, "%s: opset_import names no version of the "
                        "default ONNX domain", src);
    /* opsets 1 to 6 are read where an op's semantics at that version are implemented; the
     * mappers refuse the rest by op and version (onnx_map.c, "opsets 1 to 6") */
    if (w->opset < 1 || w->opset > 21)
        return fm_error(w->ctx, FM_ERR_UNSUPPORTED, "%s: opset %lld: flopmeter reads opsets 1 "
                        "to 21 (convert the model with onnx.version_converter)", src,
                        (long long)w->opset);
    return FM_OK;
}

enum fm_status ox_wire_unpack(struct fm_ctx *ctx, const void *data, size_t size, const char *src,
                              struct ox_wire *w)
{
    memset(w, 0, sizeof(*w));
    w->ctx = ctx;
    w->big_budget = size;
    if (size == 0)
        return fm_error(ctx, FM_ERR_PARSE, "%s: the file is empty", src);
    enum fm_status st = pb_check_depth(ctx, data, size, src);
    if (st)
        return st;
    ProtobufCAllocator alloc = {pb_alloc, pb_free, w};
    Onnx__ModelProto *m = onnx__model_proto__unpack(&alloc, size, data);
    if (!m && w->oom)   /* found by tests/test_alloc_fail.c: was reported as a bad file */
        return fm_error(ctx, FM_ERR_NOMEM, "%s: out of memory unpacking the model (%zu bytes)",
                        src, size);
    if (!m)
        return fm_error(ctx, FM_ERR_PARSE, "%s: not an ONNX model: its %zu bytes are not a valid "
                        "ModelProto (truncated, or not protobuf)", src, size);
    if (!m->has_ir_version || m->ir_version < 3)
        return fm_error(ctx, FM_ERR_PARSE, "%s: not an ONNX model: field ir_version is %s (a "
                        "model from onnx 1.1 or later has 3 or more)", src,
                        m->has_ir_version ? "below 3" : "missing");
    if (!m->graph)
        return fm_error(ctx, FM_ERR_PARSE, "%s: not an ONNX model: field graph is missing", src);
    w->model = m;
    return opset_of(w, src);
}

enum fm_status ox_wire_map(struct fm_ctx *ctx, const char *path, void **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fm_error(ctx, FM_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return fm_error(ctx, FM_ERR_IO, "%s: not a regular file", path);
    }
    size_t n = (size_t)sb.st_size;
    if (n == 0) {
        close(fd);
        return fm_error(ctx, FM_ERR_PARSE, "%s: the file is empty", path);
    }
    /* one read of the file: the pages are mapped in one go rather than faulted one by one */
    void *map = mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return fm_error(ctx, FM_ERR_IO, "%s: cannot map the file: %s", path, strerror(errno));
    madvise(map, n, MADV_SEQUENTIAL);
    *data = map;
    *size = n;
    return FM_OK;
}

void ox_wire_unmap(void *data, size_t size)
{
    if (data)
        munmap(data, size);
}

/* ---- node metadata (NodeProto field 9, IR 10), which the system's onnx.proto may predate:
 * protobuf-c then keeps it among the unknown fields, read here by hand ---- */

/* A varint at *p (before end); false when it runs past end or is longer than 10 bytes. */
static bool meta_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 70 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/* The value of entry key in one StringStringEntryProto: its bytes (key = 1, value = 2) after
 * the length that protobuf-c keeps at the head of an unknown field's data. */
static bool meta_entry(const uint8_t *p, size_t len, const char *key, const char **val,
                       size_t *vlen)
{
    const uint8_t *end = p + len;
    uint64_t outer;
    if (!meta_varint(&p, end, &outer) || outer != (uint64_t)(end - p))
        return false;
    const char *k = NULL, *v = "";
    size_t klen = 0, vl = 0;
    while (p < end) {
        uint64_t tag, n;
        if (!meta_varint(&p, end, &tag))
            return false;
        if ((tag & 7) != 2)   /* only strings belong here; anything else ends the read */
            return false;
        if (!meta_varint(&p, end, &n) || n > (uint64_t)(end - p))
            return false;
        if ((tag >> 3) == 1) {
            k = (const char *)p;
            klen = (size_t)n;
        } else if ((tag >> 3) == 2) {
            v = (const char *)p;
            vl = (size_t)n;
        }
        p += n;
    }
    if (!k || klen != strlen(key) || memcmp(k, key, klen) != 0)
        return false;
    *val = v;
    *vlen = vl;
    return true;
}

bool ox_node_meta(const Onnx__NodeProto *n, const char *key, const char **val, size_t *len)
{
    for (unsigned i = 0; n && i < n->base.n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *f = &n->base.unknown_fields[i];
        if (f->tag == 9 && f->wire_type == PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED &&
            meta_entry(f->data, f->len, key, val, len))
            return true;
    }
    return false;
}
