/* Internal structures shared by the library's own files: the context, the arena, the graph,
 * and checked integer arithmetic. Nothing here is part of the public API. */
#ifndef FM_INTERNAL_H
#define FM_INTERNAL_H

#include "flopmeter.h"

#include <stdarg.h>

#define FM_ERRMSG_SIZE 1024

struct fm_ctx {
    struct fm_allocator alloc;
    fm_log_fn log_fn;
    void *log_user;
    char errmsg[FM_ERRMSG_SIZE];
};

enum fm_status fm_errorv(struct fm_ctx *ctx, enum fm_status status, const char *fmt, va_list ap);

/* ---- arena: bump allocation in chunks; freed in one call ---- */

struct fm_arena_chunk;
struct fm_arena {
    struct fm_ctx *ctx;
    struct fm_arena_chunk *head;
};

void fm_arena_init(struct fm_arena *arena, struct fm_ctx *ctx);
void fm_arena_release(struct fm_arena *arena);
/* Zeroed, 16-byte aligned; NULL on failure (the caller reports FM_ERR_NOMEM). */
void *fm_arena_alloc(struct fm_arena *arena, size_t size);
char *fm_arena_strdup(struct fm_arena *arena, const char *s);

/* ---- growable arrays through the context allocator ---- */

/* Grows *items (each elem_size bytes) so that it holds at least need; *cap is updated.
 * Sizes are overflow-checked. */
enum fm_status fm_grow(struct fm_ctx *ctx, void **items, size_t *cap, size_t need, size_t elem_size);

/* ---- checked arithmetic: counts are exact or an error, never wrapped ---- */

static inline bool fm_mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}
static inline bool fm_add_ok(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

/* Sticky-overflow helpers: once *ovf is set, results are meaningless but computation goes on,
 * so a rule can be written as plain arithmetic and checked once at its end. */
static inline uint64_t fm_cmul(bool *ovf, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        *ovf = true;
        return UINT64_MAX;
    }
    return r;
}
static inline uint64_t fm_cadd(bool *ovf, uint64_t a, uint64_t b)
{
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        *ovf = true;
        return UINT64_MAX;
    }
    return r;
}
static inline uint64_t fm_cmul3(bool *ovf, uint64_t a, uint64_t b, uint64_t c)
{
    return fm_cmul(ovf, fm_cmul(ovf, a, b), c);
}

/* ---- shared helpers (util.c) ---- */

/* FNV-1a of a string, its offset basis xored with seed (0: plain FNV-1a). */
uint64_t fm_hash_name(uint64_t seed, const char *s);
/* Levenshtein distance, ASCII case-insensitive, on at most 63 characters of each string. */
size_t fm_edit_distance(const char *a, const char *b);
/* Sorts v (n values) in place and reads off its min, median and max (all 0 when n is 0). */
void fm_stats_summary(double *v, size_t n, double *min, double *median, double *max);

/* ---- files (file.c) ---- */

/* Reads the file at path into *out (NUL-terminated, *len bytes before the NUL; free with
 * fm_dealloc). what names the kind of file in messages ("device file"): FM_ERR_IO when it
 * cannot be read, FM_ERR_PARSE past max_mb megabytes (a file of that kind is never so large:
 * not one), FM_ERR_NOMEM. */
enum fm_status fm_read_text(struct fm_ctx *ctx, const char *path, const char *what,
                            size_t max_mb, char **out, size_t *len);
/* The sizes the readers accept: a device or calibration file is a few kB; a profile grows with
 * the kernels profiled (ncu's details form is a row per kernel and metric: a training step of a
 * large network with the full metric set is hundreds of MB). */
#define FM_READ_MAX_CONFIG_MB 64
#define FM_READ_MAX_PROFILE_MB 4096
/* What a cJSON item is, for messages ("a string", "an array"); the readers of JSON files share
 * it. Takes a const cJSON * (void here, so this header needs no cJSON). */
const char *fm_json_type_name(const void *cjson_item);

/* ---- graph ---- */

struct fm_node_rec {
    struct fm_node pub;
    bool shaped;             /* the shape rule has run */
};

struct fm_graph {
    struct fm_ctx *ctx;
    struct fm_arena arena;
    const char *name;
    struct fm_tensor *tensors;
    size_t n_tensors, cap_tensors;
    struct fm_node_rec *nodes;
    size_t n_nodes, cap_nodes;
    fm_tid *outputs;
    size_t n_outputs, cap_outputs;
    /* name -> tensor id: open-addressing hash table of ids, size a power of two */
    fm_tid *index;
    size_t index_cap;
    /* other names of tensors (a graph output of an ONNX file whose value is the renamed tensor
     * of a node inside a Loop, Scan or If): fm_graph_find_tensor finds a tensor by them too */
    struct fm_tensor_alias { const char *name; fm_tid id; } *aliases;
    size_t n_aliases, cap_aliases;
    /* set by finalize */
    bool finalized;
    bool reinfer;            /* a source tensor's shape changed after nodes were shaped */
    bool allow_empty;        /* dims of 0 are legal (ONNX's empty tensors: 0 elements, no
                                work); else a 0 dim is an error, as in the built-in models */
    fm_nid *topo;
    bool *needs_grad;        /* per tensor */
};

/* Gives tensor id a second name, found by fm_graph_find_tensor and reserved like a tensor's
 * name (FM_ERR_GRAPH when a tensor or alias already has it). The tensor must stay: add aliases
 * once no node can be rolled back (an importer's last step). */
enum fm_status fm_graph_add_alias(struct fm_graph *graph, const char *name, fm_tid id);
/* Renames node id (a frontend naming nodes after the model's modules once all are built). */
enum fm_status fm_graph_set_node_name(struct fm_graph *graph, fm_nid id, const char *name);
/* Whether tensor t is read by a node or is a graph output (the backends refuse to leave an
 * output unwritten that something reads). */
bool fm_graph_tensor_used(const struct fm_graph *graph, fm_tid t);

/* Runs the shape rule of node id (all input shapes must be known). */
enum fm_status fm_graph_infer_node(struct fm_graph *graph, fm_nid id);

/* The graph's outputs as the loss policy sees them (the marked ones, else float tensors no node
 * reads), their names joined by ", " into buf (cut with "..." when it is full). loss.c */
void fm_graph_outputs_text(const struct fm_graph *graph, char *buf, size_t size);

/* ---- numbers for people (format.c): what every table of the library prints with ---- */

#define FM_FORMAT_SIZE 32   /* bytes every buf below must hold */
/* 1.23 G, 456 M, 12.3 K, 17: SI suffixes, three significant digits; integers below 1000 as
 * they are. Returns buf. */
const char *fm_format_si(double v, char *buf);
/* 1.20 GB, 512 B (SI, not binary). */
const char *fm_format_bytes(double v, char *buf);
/* "3.11 ns", "812 us", "1.78 ms", "4.2 s", "3.5 min", "2.1 h", "3 days". */
const char *fm_format_time(double seconds, char *buf);

/* ---- the context's services the library's own files use ---- */

/* A line for the log sink fm_ctx_set_log installed (nothing without one): progress, warnings. */
void fm_log(struct fm_ctx *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* fm_alloc's companions, through the context's allocator. */
void *fm_realloc(struct fm_ctx *ctx, void *ptr, size_t size);
char *fm_strdup(struct fm_ctx *ctx, const char *s);

#endif
