/* Shared by the ONNX frontend's files, which are layered: each calls only the files listed
 * before it, so that any of them can be read, tested and changed knowing only what is below.
 *
 *   1. onnx_wire.c   the bytes: mapping the file, protobuf-c's arena, the nesting-depth check,
 *                    unpacking and checking the ModelProto. Knows nothing of graphs.
 *   1b. onnx_torch.c PyTorch 2's node metadata: module paths, what the exported program
 *                    called each initializer, the parameters its optimizer folded.
 *   2. onnx_build.c  the services every node needs: errors, attributes, the name table, known
 *                    values, dtypes and payloads, initializer roles, making tensors and ops.
 *   3. onnx_fold.c   the constant folder: evaluates a node whose inputs are known constants.
 *   4. onnx_map.c    the op mappers, one per kind of ONNX op, and their table.
 *   4b. onnx_control.c  If, Loop and Scan: their subgraphs' nodes built in their place
 *                    (through the builder load passes in, so it calls nothing above it).
 *   5. onnx_load.c   the entry points: index the names, bind symbolic dims, order the nodes,
 *                    fold or map each, finalize.
 *
 * The order follows what depends on what: roles (build) are asked before any node is folded
 * or mapped, so they come from the op list's "slots" column and never from the mappers; the
 * mappers reuse the folder's Slice normalization; only load knows the whole sequence. Nothing
 * here leaves src/frontend/onnx/. */
#ifndef FM_ONNX_INTERNAL_H
#define FM_ONNX_INTERNAL_H

#include "../../ops/ops.h"   /* FM_MAX_IO and the shape helpers; it includes core/internal.h */
#include "onnx/onnx.pb-c.h"
#include "onnx_ops.h"   /* OX_OP_LIST: the ONNX op types, mappers and slot roles of the ops */

/* Largest constant, in elements, that is evaluated at load time (shape vectors, index lists,
 * masks built from shapes: Swin's shifted-window mask at 224x224 scatters 49 x 56 index pairs,
 * 5488 elements, into a 56 x 56 map). Anything larger stays a layer of the graph and is
 * counted like one. */
#define OX_FOLD_MAX 65536
/* Dims beyond this are absurd (the CLI's --input accepts the same bound). */
#define OX_DIM_MAX ((int64_t)1 << 40)

/* ---- the bytes (onnx_wire.c) ---- */

struct ox_pb_chunk;

/* An unpacked model and the arena protobuf-c unpacked it into (every message, name and payload
 * copy), freed at once by ox_wire_release. */
struct ox_wire {
    struct fm_ctx *ctx;
    struct ox_pb_chunk *head;             /* chunks of small blocks */
    struct ox_pb_chunk *big;              /* the region for payloads */
    size_t big_budget;
    bool oom;   /* an allocation failed: protobuf-c's NULL then means memory, not a bad file */
    const Onnx__ModelProto *model;        /* NULL until unpacked */
    int64_t opset;                        /* of the default domain */
};

/* Unpacks size bytes into w: an empty file, messages nested deeper than protobuf's own limit,
 * bytes that are no ModelProto, no ir_version or graph, an opset outside 1..21 are errors
 * naming src. w is initialized first, so ox_wire_release(w) is right after any outcome. */
enum fm_status ox_wire_unpack(struct fm_ctx *ctx, const void *data, size_t size, const char *src,
                              struct ox_wire *w);
void ox_wire_release(struct ox_wire *w);
/* Maps a regular, non-empty file read-only, its pages read in one go; ox_wire_unmap undoes it. */
enum fm_status ox_wire_map(struct fm_ctx *ctx, const char *path, void **data, size_t *size);
void ox_wire_unmap(void *data, size_t size);
/* The value of node n's metadata entry key (NodeProto.metadata_props, which PyTorch 2's
 * exporter fills with each node's module path): *val points into the parsed model, *len bytes,
 * not terminated. False when the node has no such entry. */
bool ox_node_meta(const Onnx__NodeProto *n, const char *key, const char **val, size_t *len);
/* "", absent or "ai.onnx": the ONNX operator set this frontend reads. */
bool ox_default_domain(const char *domain);

/* ---- graph-building services (onnx_build.c) ---- */

/* ONNX Runtime's operator set, whose ops OX_OP_LIST names "com.microsoft:<op type>". */
bool ox_msft_domain(const char *domain);
/* Whether node n is the op type `listed` as OX_OP_LIST's OnnxOp column writes it: "Conv" in
 * the default domain, "com.microsoft:FusedMatMul" in ONNX Runtime's; false for NULL. */
bool ox_op_is(const Onnx__NodeProto *n, const char *listed);

/* Contents of a tensor known at load time: integers exactly, floats as doubles. */
struct ox_val {
    bool known;
    bool is_float;
    uint64_t n;
    int64_t *i;     /* n values when !is_float (bools as 0/1) */
    double *f;      /* n values when is_float */
};

enum ox_kind { OX_KIND_NONE = 0, OX_KIND_INPUT, OX_KIND_INIT, OX_KIND_NODE_OUT };

/* One ONNX value name: a graph input, an initializer or a node output. */
struct ox_name {
    const char *name;                     /* points into the parsed model */
    enum ox_kind kind;
    fm_tid tid;                           /* FM_NONE until created */
    bool empty;                           /* a constant of 0 elements (an initializer, a
                                             Constant, a folded result): no tensor is made
                                             for it where an op reads it as an optional operand
                                             (Resize's scales written as []), one is where it
                                             is a shape list (Reshape's [] makes a scalar);
                                             ox_input. An omitted input is the empty NAME "" */
    struct fm_shape empty_shape;          /* its dims and dtype, when empty */
    enum fm_dtype empty_dtype;
    bool role_done;
    enum fm_role role;                    /* initializers and Constant outputs */
    int32_t producer;                     /* node index (OX_KIND_NODE_OUT) */
    uint32_t uses;                        /* node inputs that read it */
    uint32_t first_use;                   /* index into ox.uses */
    const Onnx__TensorProto *init;
    const Onnx__ValueInfoProto *info;     /* value_info or graph output type, if any */
};

/* A use of a name: node index and input slot. */
struct ox_use {
    int32_t node, slot;
};

/* A symbolic dim bound by an input binding or --batch. */
struct ox_sym {
    const char *name;
    int64_t value;
};

struct ox {
    struct fm_ctx *ctx;
    struct fm_graph *g;
    const struct fm_load_opts *opts;
    const char *src;                      /* file name, for messages */
    const Onnx__GraphProto *gp;
    int64_t opset;
    bool torch;                           /* written by PyTorch's exporters (producer_name) */
    const Onnx__ModelProto *model;
    struct ox_name *names;                /* open addressing, names_cap a power of two */
    size_t names_cap;
    struct ox_use *uses;
    struct ox_val *vals;                  /* indexed by tensor id */
    size_t vals_cap;
    struct ox_sym *syms;
    size_t n_syms;
    struct fm_arena arena;                /* values and scratch; freed with the loader */
    unsigned synth;                       /* counter for synthesized tensor names */
    int64_t file_batch;                   /* the fixed batch --batch replaced (0: none) */
    unsigned n_rebound;                   /* nodes whose shape constant got the new batch */
    char rebound[256];                    /* their names, for the log */
    /* control flow (onnx_control.c): the scope of the subgraph being built (NULL at the top),
     * how deep control-flow nodes nest there, subgraph nodes built so far, names in the table */
    const struct ox_scope *scope;
    int ctrl_depth;
    uint64_t inlined;
    size_t names_n;
    unsigned ctrl_notes;                  /* Loops counted as an upper bound */
    /* nodes named "MODULE/OpType" from the file's module paths, renamed once all are built
     * (ox_module_names) */
    fm_nid *moduled;
    size_t n_moduled, moduled_cap;
};

/* Node errors name the file, the node and its op type. */
const char *ox_node_name(const Onnx__NodeProto *node);
const char *ox_str(const char *s);
enum fm_status ox_node_error(struct ox *ox, const Onnx__NodeProto *node, enum fm_status st,
                             const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Attributes, their types checked against what the op needs. */
const Onnx__AttributeProto *ox_attr(const Onnx__NodeProto *node, const char *name);
enum fm_status ox_attr_int(struct ox *ox, const Onnx__NodeProto *node, const char *name,
                           int64_t def, int64_t *out);
enum fm_status ox_attr_float(struct ox *ox, const Onnx__NodeProto *node, const char *name,
                             double def, double *out);
/* ints attribute: *n = 0 when absent; more than max values is an error. */
enum fm_status ox_attr_ints(struct ox *ox, const Onnx__NodeProto *node, const char *name,
                            int64_t *out, int max, int *n);
enum fm_status ox_attr_string(struct ox *ox, const Onnx__NodeProto *node, const char *name,
                              const char *def, char *buf, size_t size);

/* The name table (ox->names, sized by the caller): find, or add where a second definition of a
 * name is an error naming both (an input that is also an initializer, IR < 4, is the
 * initializer). */
struct ox_name *ox_name_find(struct ox *ox, const char *name);
enum fm_status ox_name_add(struct ox *ox, const char *name, enum ox_kind kind, int32_t producer,
                           struct ox_name **out);

/* Records the values of a tensor (copied); ints also go to the graph's ivalue. */
enum fm_status ox_set_val(struct ox *ox, fm_tid t, const struct ox_val *v);
const struct ox_val *ox_val_of(const struct ox *ox, fm_tid t);

/* ONNX element type -> flopmeter dtype; false for strings, complex and unknown types. */
bool ox_dtype(int32_t elem_type, enum fm_dtype *out);
/* Checks a tensor's payload size against its dims (an error naming the tensor) and, when
 * values is set, reads its contents if small (at most OX_FOLD_MAX elements, integer, bool or
 * float, stored in the file); val->known is false otherwise. Callers never ask for the values
 * of weights. */
enum fm_status ox_tensor_read(struct ox *ox, const Onnx__TensorProto *t, const char *what,
                              bool values, struct ox_val *val);
/* Integer contents of tensor t read by node, or an error saying that a shape depends on it. */
enum fm_status ox_need_ints(struct ox *ox, const Onnx__NodeProto *node, fm_tid t,
                            const char *what, const struct ox_val **out);

/* The role of an initializer or Constant tensor e holding t: CONST unless its dtype is float,
 * then the strongest over its readers (PARAM beats BUFFER beats CONST), followed through ops
 * that pass it on. */
enum fm_role ox_value_role(struct ox *ox, struct ox_name *e, const Onnx__TensorProto *t,
                           enum fm_dtype dtype);

/* Checks dims from the file (what and name say whose): rank, sign, size; *empty is set for a
 * 0 dim, which only allow_empty accepts. */
enum fm_status ox_check_dims(struct ox *ox, const char *what, const char *name,
                            const int64_t *dims, size_t n, bool allow_empty, bool *empty,
                            struct fm_shape *shape);
/* The graph tensor for an ONNX name, created on first use for initializers. FM_NONE for ""
 * and for empty tensors. */
enum fm_status ox_input(struct ox *ox, const Onnx__NodeProto *node, int slot, fm_tid *out);
/* Creates a constant tensor (role from its uses, or CONST) with shape and known values; name
 * NULL synthesizes one from the node. */
enum fm_status ox_const_tensor(struct ox *ox, const Onnx__NodeProto *node, const char *name,
                               enum fm_role role, enum fm_dtype dtype, const struct fm_shape *shape,
                               const struct ox_val *val, fm_tid *out);
/* Adds an op for node with the given inputs, binding its first n_out ONNX outputs (the rest
 * must be read by no one), and infers its output shapes at once. */
enum fm_status ox_emit(struct ox *ox, const Onnx__NodeProto *node, enum fm_op op,
                       const struct fm_attrs *attrs, const fm_tid *in, int n_in, int n_out);
/* The opset the model imports for domain ("" or "ai.onnx": the default); 0 when none. */
int64_t ox_domain_opset(const struct ox *ox, const char *domain);
/* Adds the node as an op flopmeter does not know (listed as uncounted). */
enum fm_status ox_emit_unknown(struct ox *ox, const Onnx__NodeProto *node, const char *why);

/* ---- PyTorch 2's node metadata (onnx_torch.c) ---- */

/* The module path PyTorch 2's exporter recorded for node (metadata pkg.torch.onnx.name_scopes,
 * else namespace): "layers.0.self_attn.q_proj"; for a node at the top of the model, its own
 * name there ("view"); for a Conv that onnxscript fused a BatchNorm into, the Conv's. False when
 * the file says nothing. */
bool ox_node_module(const Onnx__NodeProto *node, char *buf, size_t size);
/* "MODULE/OpType" (in buf) for a node with a module path, outside control-flow bodies; NULL
 * when it has none (the caller keeps the node's own name). */
const char *ox_layer_name(const struct ox *ox, const Onnx__NodeProto *node, char *buf,
                          size_t size);
/* Records graph node id as named by ox_layer_name, for ox_module_names. */
enum fm_status ox_note_moduled(struct ox *ox, fm_nid id);
/* Renames every node named from a module: the module path alone where the module holds one
 * op, "MODULE/OpType" where it holds several, "MODULE/OpType_2" ... for repeats. */
enum fm_status ox_module_names(struct ox *ox);
/* What the exported program called initializer e, from its readers' fx_node: 'p' (a
 * parameter), 'b' (a buffer), 'c' (a lifted constant), 0 when no reader names it. */
char ox_fx_kind(const struct ox *ox, const struct ox_name *e);
/* For an initializer no reader names: 1 when a reader's fx_node reads a parameter the file has
 * no initializer for (e is that parameter, transposed or folded), 0 when the readers have the
 * metadata and none does (a constant the optimizer evaluated), -1 when they have none. */
int ox_stands_for_lost_param(const struct ox *ox, const struct ox_name *e);
/* Says once (a log line) which modules' parameters a PyTorch 2 export lost: placeholders
 * "%p_<path>" its nodes read with no initializer of that name (BatchNorm folded into the Conv
 * before it, a Linear's weight transposed, a subgraph of weights evaluated), so the file cannot
 * give PyTorch's parameter count. */
void ox_folded_params(struct ox *ox);

/* ---- the constant folder (onnx_fold.c) ---- */

/* Evaluates node on constant inputs when its result is small: *done says whether it did (its
 * outputs are then constants with values). */
enum fm_status ox_fold(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in, int n_in,
                       bool *done);
/* Normalizes Slice operands (n of them; axes or steps may be NULL) to (start, end, step) for
 * every dim of x, clamped as the ONNX spec says. */
enum fm_status ox_slice_params(struct ox *ox, const Onnx__NodeProto *node,
                               const struct fm_shape *x, const int64_t *starts,
                               const int64_t *ends, const int64_t *axes, const int64_t *steps,
                               int n, int64_t *triples);

/* Cast's target type: attribute 'to', an int, or at opsets 1 to 5 a type name ("FLOAT"). */
enum fm_status ox_cast_to(struct ox *ox, const Onnx__NodeProto *node, int64_t *to);

/* ---- the op mappers (onnx_map.c) ---- */

/* Maps one node (all its inputs shaped) to graph ops; an op without a mapping becomes an
 * uncounted node. */
enum fm_status ox_map_node(struct ox *ox, const Onnx__NodeProto *node, const fm_tid *in,
                           int n_in);
/* A sequence that is only split and indexed (PyTorch 2's exporter writes torch.split so:
 * SplitToSequence, then SequenceAt with constant positions): SplitToSequence makes nothing,
 * each SequenceAt becomes the Slice of the split's input it reads. *handled is false for any
 * other node, and for a sequence read otherwise (which then stays an unknown op). */
enum fm_status ox_map_sequence(struct ox *ox, const Onnx__NodeProto *node, bool *handled);
/* Whether the table maps ONNX op type op (of the default domain) to a counted op. */
bool ox_map_known(const char *op);

/* ---- control flow (onnx_control.c) ---- */

/* If, Loop and Scan are not ops: a resolved If is replaced by the nodes of its branch, a Loop or
 * Scan with a known trip count by one copy of its body per iteration (tensors renamed
 * NODE/iterK/NAME), each copy built by the loader's own node builder, build. */
struct ox_scope;
typedef enum fm_status (*ox_build_fn)(struct ox *ox, const Onnx__NodeProto *node);
bool ox_control_op(const Onnx__NodeProto *node);
enum fm_status ox_control_build(struct ox *ox, const Onnx__NodeProto *node, ox_build_fn build);
/* Names a node's subgraphs read from the enclosing graph are uses of that node (slot -1): after
 * index_names, ox_control_index adds them to ox->uses; ox_control_outer_deps counts those that
 * are node outputs, which the ordering must wait for. */
enum fm_status ox_control_index(struct ox *ox);
uint32_t ox_control_outer_deps(struct ox *ox, const Onnx__NodeProto *node);

#endif
