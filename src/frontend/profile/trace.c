/* PyTorch profiler traces as export_chrome_trace writes them: the legacy bare list and Kineto's
 * {"traceEvents": [...]}. The outer array is walked here and each event is parsed on its own with
 * cJSON, so memory stays at the text plus a small record per event, whatever the file's size.
 * It reads what the trace says (steps, op times, kernels, shapes) and computes the FLOPs the
 * profiler's own formulas give; it knows nothing of models or devices (src/analysis does). */
#include "../../core/internal.h"
#include "../../core/json_read.h"
#include "profile.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef FM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

#define STEP_PREFIX "ProfilerStep#"

const char *fm_trace_class_name(int cls)
{
    if (cls == FM_TRACE_OPTIMIZER)
        return "optimizer";
    return fm_class_name((enum fm_class)cls);
}

const char *fm_trace_phase_name(enum fm_trace_phase p)
{
    static const char *const names[] = {"fwd", "bwd", "optimizer"};
    _Static_assert(sizeof(names) / sizeof(names[0]) == FM_TRACE_PHASE_COUNT, "phase names");
    return (unsigned)p < FM_TRACE_PHASE_COUNT ? names[p] : "?";
}

void fm_trace_opts_init(struct fm_trace_opts *opts)
{
    memset(opts, 0, sizeof(*opts));
}

/* ---- names to classes ----
 * A profiler name is an aten op ("aten::_convolution"), an autograd node of the backward pass
 * ("ConvolutionBackward0", "autograd::engine::evaluate_function: ConvolutionBackward0") or an
 * annotation. The base is the op's own name, lower case, without underscores, "aten::" or the
 * "Backward<N>" suffix: "convolution", "nativebatchnorm", "maxpool2dwithindices". */

static const char *skip_prefix(const char *s, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(s, prefix, n) == 0 ? s + n : s;
}

static bool autograd_node(const char *name)
{
    if (strncmp(name, "autograd::engine::evaluate_function", 35) == 0 ||
        strncmp(name, "torch::autograd::", 17) == 0)
        return true;
    if (strstr(name, "::"))
        return false;
    const char *b = strstr(name, "Backward");
    if (!b)
        return false;
    for (b += 8; *b; b++) {
        if (*b < '0' || *b > '9')
            return false;
    }
    return true;
}

static void base_name(const char *name, char *out, size_t size)
{
    const char *s = skip_prefix(name, "autograd::engine::evaluate_function: ");
    s = skip_prefix(s, "torch::autograd::");
    s = skip_prefix(s, "aten::");
    size_t n = strlen(s);
    const char *b = strstr(s, "Backward");
    if (b && autograd_node(s))
        n = (size_t)(b - s);
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < size; i++) {
        char c = s[i];
        if (c == '_' || c == '.')
            continue;
        out[k++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    out[k] = '\0';
}

/* In order: the first rule that matches decides. CONTAINS finds the text anywhere in the base,
 * PREFIX at its start, EXACT the whole base (short names that would match too much). */
enum match { CONTAINS, PREFIX, EXACT };
static const struct {
    enum match how;
    const char *text;
    enum fm_op op;
} class_rules[] = {
    {CONTAINS, "conv", FM_OP_CONV},
    {CONTAINS, "attention", FM_OP_ATTENTION},
    {CONTAINS, "embedding", FM_OP_EMBEDDING},
    {CONTAINS, "batchnorm", FM_OP_BATCHNORM},
    {CONTAINS, "layernorm", FM_OP_LAYERNORM},
    {CONTAINS, "groupnorm", FM_OP_GROUPNORM},
    {CONTAINS, "instancenorm", FM_OP_INSTANCENORM},
    {CONTAINS, "rmsnorm", FM_OP_LAYERNORM},
    {CONTAINS, "pool", FM_OP_MAXPOOL},
    {CONTAINS, "softmax", FM_OP_SOFTMAX},
    {CONTAINS, "loss", FM_OP_CROSS_ENTROPY},
    {CONTAINS, "crossentropy", FM_OP_CROSS_ENTROPY},
    {CONTAINS, "dropout", FM_OP_DROPOUT},
    {PREFIX, "addmm", FM_OP_MATMUL},
    {PREFIX, "addmv", FM_OP_MATMUL},
    {PREFIX, "addbmm", FM_OP_MATMUL},
    {PREFIX, "baddbmm", FM_OP_MATMUL},
    {PREFIX, "bmm", FM_OP_MATMUL},
    {PREFIX, "matmul", FM_OP_MATMUL},
    {PREFIX, "linear", FM_OP_LINEAR},
    {PREFIX, "einsum", FM_OP_EINSUM},
    {EXACT, "mm", FM_OP_MATMUL},
    {EXACT, "mv", FM_OP_MATMUL},
    {EXACT, "dot", FM_OP_MATMUL},
    {PREFIX, "relu", FM_OP_RELU},
    {PREFIX, "threshold", FM_OP_RELU},
    {PREFIX, "clamp", FM_OP_CLIP},
    {PREFIX, "hardtanh", FM_OP_CLIP},
    {PREFIX, "gelu", FM_OP_GELU},
    {PREFIX, "silu", FM_OP_SILU},
    {PREFIX, "sigmoid", FM_OP_SIGMOID},
    {PREFIX, "tanh", FM_OP_TANH},
    {PREFIX, "hardswish", FM_OP_HARDSWISH},
    {PREFIX, "hardsigmoid", FM_OP_HARDSIGMOID},
    {PREFIX, "leakyrelu", FM_OP_LEAKY_RELU},
    {PREFIX, "elu", FM_OP_RELU},
    {PREFIX, "prelu", FM_OP_PRELU},
    {PREFIX, "nativedropout", FM_OP_DROPOUT},
    {PREFIX, "bernoulli", FM_OP_DROPOUT},
    {PREFIX, "sum", FM_OP_REDUCE_SUM},
    {PREFIX, "mean", FM_OP_REDUCE_MEAN},
    {PREFIX, "amax", FM_OP_REDUCE_MAX},
    {PREFIX, "amin", FM_OP_REDUCE_MIN},
    {EXACT, "max", FM_OP_REDUCE_MAX},
    {EXACT, "min", FM_OP_REDUCE_MIN},
    {PREFIX, "argmax", FM_OP_REDUCE_MAX},
    {PREFIX, "prod", FM_OP_REDUCE_PROD},
    {PREFIX, "cumsum", FM_OP_CUMSUM},
    {PREFIX, "view", FM_OP_RESHAPE},
    {PREFIX, "reshape", FM_OP_RESHAPE},
    {PREFIX, "unsafeview", FM_OP_RESHAPE},
    {PREFIX, "flatten", FM_OP_FLATTEN},
    {PREFIX, "transpose", FM_OP_TRANSPOSE},
    {PREFIX, "permute", FM_OP_TRANSPOSE},
    {EXACT, "t", FM_OP_TRANSPOSE},
    {PREFIX, "expand", FM_OP_EXPAND},
    {PREFIX, "squeeze", FM_OP_SQUEEZE},
    {PREFIX, "unsqueeze", FM_OP_UNSQUEEZE},
    {PREFIX, "cat", FM_OP_CONCAT},
    {PREFIX, "stack", FM_OP_CONCAT},
    {PREFIX, "split", FM_OP_SPLIT},
    {PREFIX, "chunk", FM_OP_SPLIT},
    {PREFIX, "slice", FM_OP_SLICE},
    {PREFIX, "select", FM_OP_SLICE},
    {PREFIX, "index", FM_OP_GATHER},
    {PREFIX, "gather", FM_OP_GATHER},
    {PREFIX, "contiguous", FM_OP_IDENTITY},
    {PREFIX, "clone", FM_OP_IDENTITY},
    {PREFIX, "copy", FM_OP_IDENTITY},
    {PREFIX, "tocopy", FM_OP_CAST},
    {EXACT, "to", FM_OP_CAST},
    {PREFIX, "asstrided", FM_OP_RESHAPE},
    {PREFIX, "detach", FM_OP_IDENTITY},
    {PREFIX, "alias", FM_OP_IDENTITY},
    {PREFIX, "pad", FM_OP_PAD},
    {PREFIX, "constantpad", FM_OP_PAD},
    {PREFIX, "add", FM_OP_ADD},
    {PREFIX, "sub", FM_OP_SUB},
    {PREFIX, "rsub", FM_OP_SUB},
    {PREFIX, "mul", FM_OP_MUL},
    {PREFIX, "div", FM_OP_DIV},
    {PREFIX, "neg", FM_OP_NEG},
    {PREFIX, "exp", FM_OP_EXP},
    {PREFIX, "log", FM_OP_LOG},
    {PREFIX, "sqrt", FM_OP_SQRT},
    {PREFIX, "rsqrt", FM_OP_SQRT},
    {PREFIX, "pow", FM_OP_POW},
    {PREFIX, "abs", FM_OP_ABS},
    {PREFIX, "where", FM_OP_WHERE},
    {PREFIX, "lerp", FM_OP_ADD},
    {PREFIX, "accumulategrad", FM_OP_ADD},
};

int fm_trace_op_class(const char *name)
{
    char base[96];
    if (!name)
        return FM_CLASS_OTHER;
    base_name(name, base, sizeof(base));
    for (size_t i = 0; i < sizeof(class_rules) / sizeof(class_rules[0]); i++) {
        const char *t = class_rules[i].text;
        bool hit = class_rules[i].how == CONTAINS ? strstr(base, t) != NULL
                   : class_rules[i].how == PREFIX ? strncmp(base, t, strlen(t)) == 0
                                                  : strcmp(base, t) == 0;
        if (hit)
            return (int)fm_op_class(class_rules[i].op);
    }
    return FM_CLASS_OTHER;
}

static bool optimizer_name(const char *name)
{
    return strncmp(name, "Optimizer.", 10) == 0;
}

/* An op for the class split: an aten op, an autograd node, or an optimizer annotation. */
static bool is_op(const char *name)
{
    return strncmp(name, "aten::", 6) == 0 || autograd_node(name) || optimizer_name(name);
}

void fm_trace_free(struct fm_trace *t)
{
    if (!t)
        return;
    struct fm_ctx *ctx = t->ctx;
    for (size_t i = 0; i < t->n_ops; i++)
        fm_dealloc(ctx, (void *)t->ops[i].name);
    fm_dealloc(ctx, t->ops);
    fm_dealloc(ctx, t->steps);
    fm_dealloc(ctx, t);
}

double fm_trace_step_s(const struct fm_trace *t)
{
    return t->step_s;
}

const struct fm_shape *fm_trace_input(const struct fm_trace *t, const char **op)
{
    if (op)
        *op = t->input_op;
    return &t->input;
}

#ifndef FM_HAVE_CJSON

enum fm_status fm_trace_parse(struct fm_ctx *ctx, const char *text, size_t len,
                              const char *origin, const struct fm_trace_opts *opts,
                              struct fm_trace **out)
{
    (void)text;
    (void)len;
    (void)opts;
    *out = NULL;
    return fm_error(ctx, FM_ERR_UNSUPPORTED, "%s: this flopmeter was built without cJSON, which "
                    "reads profiler traces (install libcjson-dev and rebuild)",
                    origin ? origin : "trace");
}

#else

/* ---- the events ---- */

enum kind { K_CPU = 0, K_KERNEL, K_MEMCPY, K_RUNTIME, K_SKIP };

struct ev {
    double ts, dur;             /* microseconds */
    uint32_t name;              /* interned */
    uint32_t thread;            /* interned "pid/tid" */
    uint32_t parent;            /* CPU events: the innermost enclosing one on its thread */
    uint32_t step;              /* index + 1; 0: outside every step */
    uint8_t kind;
    uint8_t phase;
    bool has_flops;
    bool counted;               /* flops counted (no ancestor has flops) */
    bool outer_op;              /* an op with no op around it (the class split) */
    int64_t corr;               /* correlation id (kernels, runtime calls); -1: none */
    uint64_t flops;
    double child_s;             /* microseconds of direct CPU children */
    size_t offset;              /* where the event starts in the text, for messages */
};

#define NO_PARENT UINT32_MAX

/* Interned strings: an open-addressing table of indices into a growing array. */
struct names {
    struct fm_ctx *ctx;
    struct fm_arena arena;
    const char **items;
    size_t n, cap;
    uint32_t *table;            /* index + 1; 0 empty */
    size_t table_cap;           /* a power of two */
};

static enum fm_status names_rehash(struct names *nm, size_t cap)
{
    uint32_t *t = fm_alloc(nm->ctx, cap * sizeof(*t));
    if (!t)
        return fm_error(nm->ctx, FM_ERR_NOMEM, "out of memory for the trace's names");
    for (size_t i = 0; i < nm->n; i++) {
        size_t h = (size_t)fm_hash_name(0, nm->items[i]) & (cap - 1);
        while (t[h])
            h = (h + 1) & (cap - 1);
        t[h] = (uint32_t)(i + 1);
    }
    fm_dealloc(nm->ctx, nm->table);
    nm->table = t;
    nm->table_cap = cap;
    return FM_OK;
}

static enum fm_status intern(struct names *nm, const char *s, uint32_t *out)
{
    if (nm->n + 1 > nm->table_cap / 2) {
        enum fm_status st = names_rehash(nm, nm->table_cap ? nm->table_cap * 2 : 1024);
        if (st)
            return st;
    }
    size_t h = (size_t)fm_hash_name(0, s) & (nm->table_cap - 1);
    while (nm->table[h]) {
        uint32_t i = nm->table[h] - 1;
        if (strcmp(nm->items[i], s) == 0) {
            *out = i;
            return FM_OK;
        }
        h = (h + 1) & (nm->table_cap - 1);
    }
    if (nm->n >= UINT32_MAX - 1)
        return fm_error(nm->ctx, FM_ERR_OVERFLOW, "too many distinct names in the trace");
    enum fm_status st = fm_grow(nm->ctx, (void **)&nm->items, &nm->cap, nm->n + 1,
                                sizeof(*nm->items));
    if (st)
        return st;
    char *copy = fm_arena_strdup(&nm->arena, s);
    if (!copy)
        return fm_error(nm->ctx, FM_ERR_NOMEM, "out of memory for the trace's names");
    nm->items[nm->n] = copy;
    nm->table[h] = (uint32_t)(nm->n + 1);
    *out = (uint32_t)nm->n++;
    return FM_OK;
}

struct reader {
    struct fm_ctx *ctx;
    const char *text;
    size_t len;
    const char *origin;
    struct names names;
    struct ev *evs;
    size_t n, cap;
    uint64_t x_events;
    bool has_flops_arg, has_shapes, has_kernels, concrete;
    struct fm_trace *t;
};

/* A JSON syntax error at off: line and column, and what a trace should look like. */
static enum fm_status syntax_error(struct reader *r, size_t off, const char *what)
{
    size_t line, col;
    fm_text_position(r->text, r->len, off, &line, &col);
    if (off >= r->len)
        return fm_error(r->ctx, FM_ERR_PARSE, "%s: the file ends at line %zu, column %zu in the "
                        "middle of %s: it is truncated (was it copied while the profiler was "
                        "still writing?)", r->origin, line, col, what);
    return fm_error(r->ctx, FM_ERR_PARSE, "%s: not valid JSON at line %zu, column %zu (in %s)",
                    r->origin, line, col, what);
}

static size_t skip_ws(const struct reader *r, size_t p)
{
    while (p < r->len && (r->text[p] == ' ' || r->text[p] == '\t' || r->text[p] == '\n' ||
                          r->text[p] == '\r'))
        p++;
    return p;
}

/* Whether the value starting at p runs to the end of the text without closing: a truncated
 * file, rather than a wrong character somewhere inside. */
static bool runs_off(const struct reader *r, size_t p)
{
    int depth = 0;
    bool str = false;
    for (; p < r->len; p++) {
        char c = r->text[p];
        if (str) {
            if (c == '\\')
                p++;
            else if (c == '"')
                str = false;
        } else if (c == '"') {
            str = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth <= 0)
                return false;
        }
    }
    return true;
}

/* One JSON value at *p, parsed by cJSON; *p moves past it. */
static enum fm_status parse_value(struct reader *r, size_t *p, const char *what, cJSON **out)
{
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(r->text + *p, r->len - *p, &end, false);
    if (!v) {
        size_t off = end && end >= r->text + *p ? (size_t)(end - r->text) : *p;
        if (!end) {
            const char *ep = cJSON_GetErrorPtr();
            if (ep && ep >= r->text && ep <= r->text + r->len)
                off = (size_t)(ep - r->text);
        }
        return syntax_error(r, runs_off(r, *p) ? r->len : off, what);
    }
    *p = (size_t)(end - r->text);
    *out = v;
    return FM_OK;
}

static const char *str_item(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static enum fm_status event_error(struct reader *r, size_t off, const cJSON *e, const char *fmt,
                                  const char *key)
{
    size_t line, col;
    fm_text_position(r->text, r->len, off, &line, &col);
    const char *name = str_item(e, "name");
    char what[160];
    snprintf(what, sizeof(what), fmt, key);
    return fm_error(r->ctx, FM_ERR_PARSE, "%s: the event at line %zu, column %zu (\"%.60s\") %s",
                    r->origin, line, col, name ? name : "?", what);
}

/* A time field of a complete event: a finite number, never read as 0 when it is missing. */
static enum fm_status time_field(struct reader *r, size_t off, const cJSON *e, const char *key,
                                 double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, key);
    if (!v)
        return event_error(r, off, e, "has no \"%s\": a complete (\"ph\": \"X\") event needs "
                           "ts and dur in microseconds", key);
    if (!cJSON_IsNumber(v))
        return event_error(r, off, e, "has a \"%s\" that is not a number", key);
    if (!isfinite(v->valuedouble) || (strcmp(key, "dur") == 0 && v->valuedouble < 0))
        return event_error(r, off, e, "has a \"%s\" that is negative or not finite", key);
    *out = v->valuedouble;
    return FM_OK;
}

static enum kind kind_of(const char *cat, const char *pid)
{
    if (!cat) /* the legacy exporter writes no category; GPU kernels sit in "CUDA functions" */
        return pid && strcmp(pid, "CUDA functions") == 0 ? K_KERNEL : K_CPU;
    if (!strcmp(cat, "cpu_op") || !strcmp(cat, "Operator") || !strcmp(cat, "user_annotation"))
        return K_CPU;
    if (!strcmp(cat, "kernel") || !strcmp(cat, "Kernel"))
        return K_KERNEL;
    if (!strcmp(cat, "gpu_memcpy") || !strcmp(cat, "Memcpy") || !strcmp(cat, "gpu_memset") ||
        !strcmp(cat, "Memset"))
        return K_MEMCPY;
    if (!strcmp(cat, "cuda_runtime") || !strcmp(cat, "Runtime") || !strcmp(cat, "cuda_driver"))
        return K_RUNTIME;
    return K_SKIP;
}

static int64_t int_item(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9e18
               ? (int64_t)v->valuedouble
               : -1;
}

/* The dims of input i of "Input Dims" into out; false when absent or not a list of numbers. */
static bool input_dims(const cJSON *dims, int i, struct fm_shape *out)
{
    const cJSON *d = cJSON_GetArrayItem(dims, i);
    if (!cJSON_IsArray(d) || cJSON_GetArraySize(d) > FM_MAX_DIMS)
        return false;
    out->rank = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, d) {
        if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble > 9e15)
            return false;
        out->dims[out->rank++] = (int64_t)x->valuedouble;
    }
    return true;
}

/* "[4, 4]" or "1" of "Concrete Inputs" into out (n values); false when not that. */
static bool concrete_ints(const cJSON *conc, int i, int64_t *out, int n)
{
    const cJSON *c = cJSON_GetArrayItem(conc, i);
    if (!cJSON_IsString(c))
        return false;
    const char *s = c->valuestring;
    int k = 0;
    while (*s && k < n) {
        while (*s == '[' || *s == ' ' || *s == ',')
            s++;
        if (!*s || *s == ']')
            break;
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || errno)
            return false;
        out[k++] = v;
        s = end;
    }
    return k == n;
}

static uint64_t numel(const struct fm_shape *s, bool *ovf)
{
    uint64_t n = 1;
    for (int i = 0; i < s->rank; i++)
        n = fm_cmul(ovf, n, (uint64_t)s->dims[i]);
    return n;
}

/* The FLOPs PyTorch's profiler computes for an op with with_flops=True (computeFlops in
 * torch/csrc/profiler/util.cpp, the same in 1.13 and 2.5): aten::conv2d 2 N Ho Wo Kh Kw Cin Cout /
 * groups; aten::mm and aten::addmm 2 M K N; aten::bmm and aten::baddbmm 2 B M K N; aten::mul and
 * aten::add the elements of the first input. Other ops have none. The trace has no "flops" of
 * its own (the exporters drop them); they are rebuilt here from "Input Dims" and, for the
 * convolution, "Concrete Inputs" (stride, padding, dilation, groups: PyTorch 2.x with
 * record_shapes). tests/test_trace.c checks the result against the profiler's own figures. */
static bool profiler_flops(const char *name, const cJSON *args, uint64_t *out)
{
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(args, "Input Dims");
    if (!cJSON_IsArray(dims) || strncmp(name, "aten::", 6) != 0)
        return false;
    const char *op = name + 6;
    struct fm_shape a, b;
    bool ovf = false;
    uint64_t f = 0;
    if (!strcmp(op, "conv2d")) {
        const cJSON *conc = cJSON_GetObjectItemCaseSensitive(args, "Concrete Inputs");
        int64_t stride[2], pad[2], dil[2], groups;
        if (!input_dims(dims, 0, &a) || !input_dims(dims, 1, &b) || a.rank != 4 || b.rank != 4 ||
            !concrete_ints(conc, 3, stride, 2) || !concrete_ints(conc, 4, pad, 2) ||
            !concrete_ints(conc, 5, dil, 2) || !concrete_ints(conc, 6, &groups, 1) ||
            stride[0] <= 0 || stride[1] <= 0 || groups <= 0)
            return false;
        int64_t oh = (a.dims[2] + 2 * pad[0] - dil[0] * (b.dims[2] - 1) - 1) / stride[0] + 1;
        int64_t ow = (a.dims[3] + 2 * pad[1] - dil[1] * (b.dims[3] - 1) - 1) / stride[1] + 1;
        if (oh <= 0 || ow <= 0)
            return false;
        f = fm_cmul(&ovf, 2, (uint64_t)a.dims[0]);
        f = fm_cmul3(&ovf, f, (uint64_t)oh, (uint64_t)ow);
        f = fm_cmul3(&ovf, f, (uint64_t)b.dims[2], (uint64_t)b.dims[3]);
        f = fm_cmul3(&ovf, f, (uint64_t)a.dims[1], (uint64_t)b.dims[0]) / (uint64_t)groups;
    } else if (!strcmp(op, "mm") || !strcmp(op, "addmm") || !strcmp(op, "bmm") ||
               !strcmp(op, "baddbmm")) {
        int first = op[0] == 'a' || op[1] == 'a' ? 1 : 0;   /* addmm(self, mat1, mat2) */
        if (!input_dims(dims, first, &a) || !input_dims(dims, first + 1, &b) || a.rank < 2 ||
            b.rank < 2 || a.dims[a.rank - 1] == 0)
            return false;
        /* the profiler's rule: every dim of mat1 but the shared one, times every dim of mat2 */
        f = fm_cmul(&ovf, 2, numel(&a, &ovf) / (uint64_t)a.dims[a.rank - 1]);
        f = fm_cmul(&ovf, f, numel(&b, &ovf));
        if (b.rank == 3 && a.rank == 3)
            f /= (uint64_t)(b.dims[0] ? b.dims[0] : 1);   /* the batch once, not twice */
    } else if (!strcmp(op, "mul") || !strcmp(op, "add")) {
        if (!input_dims(dims, 0, &a))
            return false;
        f = numel(&a, &ovf);
    } else {
        return false;
    }
    if (ovf)
        return false;
    *out = f;
    return true;
}

static enum fm_status add_event(struct reader *r, const cJSON *e, size_t off)
{
    if (!cJSON_IsObject(e))
        return event_error(r, off, e, "is %s, not an event object", fm_json_type_name(e));
    const char *ph = str_item(e, "ph");
    if (!ph || strcmp(ph, "X") != 0)
        return FM_OK; /* metadata, flows, instants: no duration to read */
    r->x_events++;
    struct ev v;
    memset(&v, 0, sizeof(v));
    v.offset = off;
    v.parent = NO_PARENT;
    v.corr = -1;
    enum fm_status st = time_field(r, off, e, "ts", &v.ts);
    if (!st)
        st = time_field(r, off, e, "dur", &v.dur);
    if (st)
        return st;
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(e, "pid");
    enum kind k = kind_of(str_item(e, "cat"), cJSON_IsString(pid) ? pid->valuestring : NULL);
    if (k == K_SKIP)
        return FM_OK;
    const char *name = str_item(e, "name");
    if (!name)
        return event_error(r, off, e, "has no \"%s\" string", "name");
    const cJSON *tid = cJSON_GetObjectItemCaseSensitive(e, "tid");
    char thread[96];
    char a[40], b[40];
    if (cJSON_IsString(pid))
        snprintf(a, sizeof(a), "%.38s", pid->valuestring);
    else
        snprintf(a, sizeof(a), "%.17g", cJSON_IsNumber(pid) ? pid->valuedouble : -1.0);
    if (cJSON_IsString(tid))
        snprintf(b, sizeof(b), "%.38s", tid->valuestring);
    else
        snprintf(b, sizeof(b), "%.17g", cJSON_IsNumber(tid) ? tid->valuedouble : -1.0);
    snprintf(thread, sizeof(thread), "%s/%s", a, b);
    if ((st = intern(&r->names, name, &v.name)) || (st = intern(&r->names, thread, &v.thread)))
        return st;
    v.kind = (uint8_t)k;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
    if (cJSON_IsObject(args)) {
        v.corr = int_item(args, "correlation");
        if (cJSON_GetObjectItemCaseSensitive(args, "Input Dims"))
            r->has_shapes = true;
        const cJSON *fl = cJSON_GetObjectItemCaseSensitive(args, "flops");
        if (cJSON_IsNumber(fl) && fl->valuedouble >= 0 && fl->valuedouble < 1.8e19) {
            /* a trace that carries the profiler's figure: taken as it is */
            v.flops = (uint64_t)fl->valuedouble;
            v.has_flops = true;
            r->has_flops_arg = true;
        } else if (k == K_CPU) {
            v.has_flops = profiler_flops(name, args, &v.flops);
        }
    }
    if (k == K_KERNEL)
        r->has_kernels = true;
    st = fm_grow(r->ctx, (void **)&r->evs, &r->cap, r->n + 1, sizeof(*r->evs));
    if (st)
        return st;
    r->evs[r->n++] = v;
    return FM_OK;
}

/* The list of events at *p ('['): each parsed on its own. */
static enum fm_status read_events(struct reader *r, size_t *p)
{
    (*p)++;
    *p = skip_ws(r, *p);
    if (*p < r->len && r->text[*p] == ']') {
        (*p)++;
        return FM_OK;
    }
    for (;;) {
        *p = skip_ws(r, *p);
        size_t start = *p;
        cJSON *e = NULL;
        enum fm_status st = parse_value(r, p, "the list of events", &e);
        if (st)
            return st;
        st = add_event(r, e, start);
        cJSON_Delete(e);
        if (st)
            return st;
        *p = skip_ws(r, *p);
        if (*p < r->len && r->text[*p] == ',') {
            (*p)++;
            continue;
        }
        if (*p < r->len && r->text[*p] == ']') {
            (*p)++;
            return FM_OK;
        }
        return syntax_error(r, *p, "the list of events (expected , or ])");
    }
}

/* The top level: [events] or {"traceEvents": [events], ...}. */
static enum fm_status read_top(struct reader *r)
{
    size_t p = 0;
    if (r->len >= 3 && (unsigned char)r->text[0] == 0xEF && (unsigned char)r->text[1] == 0xBB &&
        (unsigned char)r->text[2] == 0xBF)
        p = 3;
    p = skip_ws(r, p);
    if (p >= r->len)
        return fm_error(r->ctx, FM_ERR_PARSE, "%s: the file is empty; a PyTorch profiler trace "
                        "is what prof.export_chrome_trace(\"trace.json\") writes", r->origin);
    enum fm_status st;
    if (r->text[p] == '[') {
        r->t->form = FM_TRACE_LEGACY;
        st = read_events(r, &p);
    } else if (r->text[p] == '{') {
        r->t->form = FM_TRACE_KINETO;
        bool found = false;
        char keys[160] = "";
        p = skip_ws(r, p + 1);
        if (p < r->len && r->text[p] == '}')
            p++;
        else {
            for (;;) {
                cJSON *key = NULL;
                p = skip_ws(r, p);
                if ((st = parse_value(r, &p, "the top-level object", &key)))
                    return st;
                bool events = cJSON_IsString(key) && !strcmp(key->valuestring, "traceEvents");
                if (cJSON_IsString(key) && strlen(keys) < 100)
                    snprintf(keys + strlen(keys), sizeof(keys) - strlen(keys), "%s\"%.30s\"",
                             keys[0] ? ", " : "", key->valuestring);
                bool is_string = cJSON_IsString(key);
                cJSON_Delete(key);
                if (!is_string)
                    return syntax_error(r, p, "the top-level object (a key must be a string)");
                p = skip_ws(r, p);
                if (p >= r->len || r->text[p] != ':')
                    return syntax_error(r, p, "the top-level object (expected :)");
                p = skip_ws(r, p + 1);
                if (events) {
                    if (p >= r->len || r->text[p] != '[')
                        return fm_error(r->ctx, FM_ERR_PARSE, "%s: \"traceEvents\" is not a "
                                        "list of events", r->origin);
                    if ((st = read_events(r, &p)))
                        return st;
                    found = true;
                } else {
                    cJSON *v = NULL;
                    if ((st = parse_value(r, &p, "the top-level object", &v)))
                        return st;
                    cJSON_Delete(v);
                }
                p = skip_ws(r, p);
                if (p < r->len && r->text[p] == ',') {
                    p++;
                    continue;
                }
                if (p < r->len && r->text[p] == '}') {
                    p++;
                    break;
                }
                return syntax_error(r, p, "the top-level object (expected , or })");
            }
        }
        if (!found)
            return fm_error(r->ctx, FM_ERR_PARSE, "%s: JSON, but not a PyTorch profiler trace: "
                            "the object has no \"traceEvents\" (its keys: %s). A trace is what "
                            "prof.export_chrome_trace(\"trace.json\") writes", r->origin,
                            keys[0] ? keys : "none");
    } else {
        cJSON *v = NULL;
        size_t q = p;
        if ((st = parse_value(r, &q, "the file", &v)))
            return st;
        cJSON_Delete(v);
        return fm_error(r->ctx, FM_ERR_PARSE, "%s: JSON, but not a PyTorch profiler trace: a "
                        "trace is a list of events or an object with \"traceEvents\"", r->origin);
    }
    if (st)
        return st;
    p = skip_ws(r, p);
    if (p < r->len && r->text[p] != '\0')
        return syntax_error(r, p, "the end of the file (text after the trace)");
    return FM_OK;
}

/* ---- structure: steps, nesting, phases ---- */

static const char *ev_name(const struct reader *r, const struct ev *e)
{
    return r->names.items[e->name];
}

static int cmp_nesting(const void *pa, const void *pb, void *user)
{
    const struct reader *r = user;
    const struct ev *a = &r->evs[*(const uint32_t *)pa], *b = &r->evs[*(const uint32_t *)pb];
    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
    if (a->ts != b->ts)
        return a->ts < b->ts ? -1 : 1;
    if (a->dur != b->dur)
        return a->dur > b->dur ? -1 : 1;   /* the enclosing event first */
    uint32_t ia = *(const uint32_t *)pa, ib = *(const uint32_t *)pb;
    return ia < ib ? -1 : ia > ib;
}

/* qsort with a context, without qsort_r (not C11): a merge sort of indices. */
static void sort_idx(uint32_t *v, uint32_t *tmp, size_t n,
                     int (*cmp)(const void *, const void *, void *), void *user)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    sort_idx(v, tmp, h, cmp, user);
    sort_idx(v + h, tmp, n - h, cmp, user);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = cmp(&v[j], &v[i], user) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof(*v));
}

/* Times are doubles of microseconds since some epoch (1.7e15 for a Unix-epoch trace, where a
 * double resolves a quarter microsecond): "inside" tolerates two units in the last place. */
static double tol(double t)
{
    return 1e-3 + 4.5e-16 * fabs(t);
}

static bool inside(const struct ev *in, const struct ev *out)
{
    double end = out->ts + out->dur, t = tol(end);
    return in->ts >= out->ts - t && in->ts + in->dur <= end + t;
}

/* The step an instant belongs to (index + 1; 0 none): steps are sorted and do not overlap. */
static uint32_t step_at(const struct fm_trace *t, double ts)
{
    size_t lo = 0, hi = t->n_steps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (t->steps[mid].ts_us <= ts + tol(ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    const struct fm_trace_step *s = &t->steps[lo - 1];
    double end = s->ts_us + s->time_s * 1e6;
    return ts <= end + tol(end) ? (uint32_t)lo : 0;
}

static enum fm_status find_steps(struct reader *r, const struct fm_trace_opts *opts)
{
    struct fm_trace *t = r->t;
    const char *prefix = opts && opts->step_prefix && *opts->step_prefix ? opts->step_prefix
                                                                          : STEP_PREFIX;
    size_t plen = strlen(prefix), n = 0;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < r->n; i++) {
        const struct ev *e = &r->evs[i];
        if (e->kind != K_CPU)
            continue;
        lo = fmin(lo, e->ts);
        hi = fmax(hi, e->ts + e->dur);
        if (strncmp(ev_name(r, e), prefix, plen) == 0)
            n++;
    }
    bool whole = opts && opts->whole;
    if (n == 0 && !whole) {
        if (!isfinite(lo))
            return fm_error(r->ctx, FM_ERR_PARSE, "%s: the trace has no CPU events (%" PRIu64
                            " complete events in all): nothing to time", r->origin, r->x_events);
        return fm_error(r->ctx, FM_ERR_PARSE,
                        "%s: no steps: no event is named %s<N>. Profile the loop under "
                        "torch.profiler.profile(schedule=torch.profiler.schedule(wait=1, warmup=1, "
                        "active=3)) and call prof.step() after every step (it names each step "
                        "ProfilerStep#N), or wrap each step in "
                        "torch.profiler.record_function(\"ProfilerStep#N\"); "
                        "fm_trace_opts.step_prefix NAME takes your own annotations, "
                        "fm_trace_opts.whole the whole trace as one step",
                        r->origin, prefix);
    }
    if (n == 0 && !isfinite(lo))
        return fm_error(r->ctx, FM_ERR_PARSE, "%s: the trace has no CPU events: nothing to time",
                        r->origin);
    size_t m = n ? n : 1;
    t->steps = fm_alloc(r->ctx, m * sizeof(*t->steps));
    if (!t->steps)
        return fm_error(r->ctx, FM_ERR_NOMEM, "out of memory for the steps");
    if (n == 0) {
        t->whole = true;
        snprintf(t->steps[0].name, sizeof(t->steps[0].name), "whole trace");
        t->steps[0].ts_us = lo;
        t->steps[0].time_s = (hi - lo) * 1e-6;
        t->n_steps = 1;
    } else {
        for (size_t i = 0; i < r->n; i++) {
            const struct ev *e = &r->evs[i];
            if (e->kind != K_CPU || strncmp(ev_name(r, e), prefix, plen) != 0)
                continue;
            struct fm_trace_step *s = &t->steps[t->n_steps++];
            snprintf(s->name, sizeof(s->name), "%.63s", ev_name(r, e));
            s->ts_us = e->ts;
            s->time_s = e->dur * 1e-6;
        }
        /* in time order (insertion sort: steps are few and usually in order already) */
        for (size_t i = 1; i < t->n_steps; i++) {
            struct fm_trace_step s = t->steps[i];
            size_t j = i;
            for (; j > 0 && t->steps[j - 1].ts_us > s.ts_us; j--)
                t->steps[j] = t->steps[j - 1];
            t->steps[j] = s;
        }
        for (size_t i = 1; i < t->n_steps; i++) {
            const struct fm_trace_step *a = &t->steps[i - 1], *b = &t->steps[i];
            double end = a->ts_us + a->time_s * 1e6;
            if (b->ts_us < end - tol(end))
                return fm_error(r->ctx, FM_ERR_PARSE, "%s: steps %s and %s overlap: the step "
                                "annotations must follow one another (one thread, one loop)",
                                r->origin, a->name, b->name);
        }
    }
    double *v = fm_alloc(r->ctx, t->n_steps * sizeof(*v));
    if (!v)
        return fm_error(r->ctx, FM_ERR_NOMEM, "out of memory for the steps");
    for (size_t i = 0; i < t->n_steps; i++)
        v[i] = t->steps[i].time_s;
    /* the median of an even count is the mean of the middle two */
    fm_stats_summary(v, t->n_steps, &t->step_min_s, &t->step_s, &t->step_max_s);
    fm_dealloc(r->ctx, v);
    return FM_OK;
}

/* Parents on each thread (a stack over events sorted by start, longest first), then each
 * event's phase, its step and whether its flops count: an event's flops count when no event
 * around it has flops, so that an op the profiler has a formula for, called inside another
 * such op, is not counted twice (the outer op's formula covers the call as the user made it). */
static enum fm_status nest(struct reader *r)
{
    enum fm_status st = FM_OK;
    uint32_t *idx = fm_alloc(r->ctx, (r->n ? r->n : 1) * sizeof(*idx));
    uint32_t *tmp = fm_alloc(r->ctx, (r->n ? r->n : 1) * sizeof(*tmp));
    uint32_t *stack = fm_alloc(r->ctx, (r->n ? r->n : 1) * sizeof(*stack));
    if (!idx || !tmp || !stack) {
        st = fm_error(r->ctx, FM_ERR_NOMEM, "out of memory for %zu events", r->n);
        goto out;
    }
    size_t m = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->evs[i].kind == K_CPU)
            idx[m++] = (uint32_t)i;
    }
    sort_idx(idx, tmp, m, cmp_nesting, r);
    /* per stack level: whether it or an event around it has flops, or is an op */
    bool *flops_in = fm_alloc(r->ctx, (m ? m : 1) * sizeof(*flops_in));
    bool *op_in = fm_alloc(r->ctx, (m ? m : 1) * sizeof(*op_in));
    if (!flops_in || !op_in) {
        fm_dealloc(r->ctx, flops_in);
        fm_dealloc(r->ctx, op_in);
        st = fm_error(r->ctx, FM_ERR_NOMEM, "out of memory for %zu events", r->n);
        goto out;
    }
    size_t depth = 0;
    uint32_t thread = UINT32_MAX;
    for (size_t k = 0; k < m; k++) {
        struct ev *e = &r->evs[idx[k]];
        if (e->thread != thread) {
            depth = 0;
            thread = e->thread;
        }
        while (depth && !inside(e, &r->evs[stack[depth - 1]]))
            depth--;
        const char *name = ev_name(r, e);
        enum fm_trace_phase own = optimizer_name(name) ? FM_TRACE_OPT
                                  : autograd_node(name) ? FM_TRACE_BWD
                                                        : FM_TRACE_FWD;
        bool flops_above = depth && flops_in[depth - 1];
        bool op_above = depth && op_in[depth - 1];
        if (depth) {
            struct ev *p = &r->evs[stack[depth - 1]];
            e->parent = stack[depth - 1];
            p->child_s += e->dur;
            e->phase = p->phase != FM_TRACE_FWD ? p->phase : (uint8_t)own;
        } else {
            e->phase = (uint8_t)own;
        }
        e->counted = e->has_flops && !flops_above;
        e->outer_op = is_op(name) && !op_above;
        flops_in[depth] = flops_above || e->has_flops;
        op_in[depth] = op_above || is_op(name);
        stack[depth++] = idx[k];
    }
    fm_dealloc(r->ctx, flops_in);
    fm_dealloc(r->ctx, op_in);
out:
    fm_dealloc(r->ctx, idx);
    fm_dealloc(r->ctx, tmp);
    fm_dealloc(r->ctx, stack);
    return st;
}

/* ---- the figures ---- */

static int cmp_ops(const void *pa, const void *pb)
{
    const struct fm_trace_op *a = pa, *b = pb;
    if (a->total_s != b->total_s)
        return a->total_s > b->total_s ? -1 : 1;
    return strcmp(a->name, b->name);
}

static enum fm_status aggregate(struct reader *r)
{
    struct fm_trace *t = r->t;
    struct fm_ctx *ctx = r->ctx;
    enum fm_status st = FM_OK;
    /* per name: the op's index + 1 */
    uint32_t *slot = fm_alloc(ctx, (r->names.n ? r->names.n : 1) * sizeof(*slot));
    if (!slot)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory for the ops");
    /* runtime calls by correlation id: a kernel belongs to the step its launch was made in */
    size_t hcap = 16;
    while (hcap < 2 * r->n)
        hcap *= 2;
    uint32_t *corr = NULL;
    if (r->has_kernels) {
        corr = fm_alloc(ctx, hcap * sizeof(*corr));
        if (!corr) {
            st = fm_error(ctx, FM_ERR_NOMEM, "out of memory for the kernels");
            goto out;
        }
        for (size_t i = 0; i < r->n; i++) {
            const struct ev *e = &r->evs[i];
            if (e->kind != K_RUNTIME || e->corr < 0)
                continue;
            size_t h = (size_t)((uint64_t)e->corr * 0x9E3779B97F4A7C15ull) & (hcap - 1);
            while (corr[h])
                h = (h + 1) & (hcap - 1);
            corr[h] = (uint32_t)(i + 1);
        }
    }
    size_t cap = 0;
    bool ovf = false;
    for (size_t i = 0; i < r->n; i++) {
        struct ev *e = &r->evs[i];
        double at = e->ts;
        if ((e->kind == K_KERNEL || e->kind == K_MEMCPY) && corr && e->corr >= 0) {
            size_t h = (size_t)((uint64_t)e->corr * 0x9E3779B97F4A7C15ull) & (hcap - 1);
            for (; corr[h]; h = (h + 1) & (hcap - 1)) {
                if (r->evs[corr[h] - 1].corr == e->corr) {
                    at = r->evs[corr[h] - 1].ts;
                    break;
                }
            }
        }
        e->step = step_at(t, at);
        if (!e->step)
            continue;
        struct fm_trace_step *s = &t->steps[e->step - 1];
        if (e->kind == K_KERNEL) {
            s->kernel_s += e->dur * 1e-6;
            s->kernels++;
            continue;
        }
        if (e->kind == K_MEMCPY) {
            s->memcpy_s += e->dur * 1e-6;
            continue;
        }
        if (e->kind != K_CPU)
            continue;
        const char *name = ev_name(r, e);
        /* the step annotations themselves are not ops */
        bool is_step = !t->whole && e->ts == s->ts_us && e->dur * 1e-6 == s->time_s &&
                       strcmp(name, s->name) == 0;
        if (is_step)
            continue;
        if (e->has_flops) {
            if (e->counted) {
                s->profiler_flops = fm_cadd(&ovf, s->profiler_flops, e->flops);
                s->flops_by_phase[e->phase] = fm_cadd(&ovf, s->flops_by_phase[e->phase],
                                                      e->flops);
            } else {
                s->nested_flops = fm_cadd(&ovf, s->nested_flops, e->flops);
            }
        }
        /* the class split: outermost ops (an aten op, autograd node or optimizer annotation with
         * no such op around it) */
        if (e->outer_op) {
            int cls = e->phase == FM_TRACE_OPT ? FM_TRACE_OPTIMIZER : fm_trace_op_class(name);
            t->class_s[cls] += e->dur * 1e-6;
            t->top_s += e->dur * 1e-6;
            s->phase_s[e->phase] += e->dur * 1e-6;
        }
        if (!slot[e->name]) {
            if ((st = fm_grow(ctx, (void **)&t->ops, &cap, t->n_ops + 1, sizeof(*t->ops))))
                goto out;
            struct fm_trace_op *op = &t->ops[t->n_ops];
            memset(op, 0, sizeof(*op));
            op->name = fm_strdup(ctx, name);
            if (!op->name) {
                st = fm_error(ctx, FM_ERR_NOMEM, "out of memory for the ops");
                goto out;
            }
            op->cls = optimizer_name(name) ? FM_TRACE_OPTIMIZER : fm_trace_op_class(name);
            slot[e->name] = (uint32_t)++t->n_ops;
        }
        struct fm_trace_op *op = &t->ops[slot[e->name] - 1];
        op->calls++;
        op->total_s += e->dur * 1e-6;
        op->self_s += fmax(0.0, e->dur - e->child_s) * 1e-6;
        if (e->counted) {
            op->flops = fm_cadd(&ovf, op->flops, e->flops);
            op->flops_calls++;
        }
    }
    for (size_t i = 0; i < t->n_steps; i++) {
        t->profiler_flops = fm_cadd(&ovf, t->profiler_flops, t->steps[i].profiler_flops);
        t->nested_flops = fm_cadd(&ovf, t->nested_flops, t->steps[i].nested_flops);
    }
    if (ovf) {
        st = fm_error(ctx, FM_ERR_OVERFLOW, "%s: the profiler's FLOPs do not fit in 64 bits",
                      r->origin);
        goto out;
    }
    if (t->n_ops > 1)
        qsort(t->ops, t->n_ops, sizeof(*t->ops), cmp_ops);
out:
    fm_dealloc(ctx, corr);
    fm_dealloc(ctx, slot);
    return st;
}

/* The batch hint: the first input of the first forward op (in time) inside the first step
 * whose first input has rank 2 or more. Needs a second look at that event's args. */
static void find_input(struct reader *r)
{
    struct fm_trace *t = r->t;
    if (!r->has_shapes)
        return;
    const struct ev *best = NULL;
    for (size_t i = 0; i < r->n; i++) {
        const struct ev *e = &r->evs[i];
        if (e->kind != K_CPU || e->step != 1 || e->phase != FM_TRACE_FWD ||
            strncmp(ev_name(r, e), "aten::", 6) != 0)
            continue;
        if (best && best->ts <= e->ts)
            continue;
        size_t p = e->offset;
        cJSON *v = NULL;
        if (parse_value(r, &p, "an event", &v))
            continue;
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(v, "args");
        struct fm_shape s;
        if (input_dims(cJSON_GetObjectItemCaseSensitive(args, "Input Dims"), 0, &s) &&
            s.rank >= 2) {
            best = e;
            t->input = s;
            snprintf(t->input_op, sizeof(t->input_op), "%.63s", ev_name(r, e));
        }
        cJSON_Delete(v);
    }
}

enum fm_status fm_trace_parse(struct fm_ctx *ctx, const char *text, size_t len,
                              const char *origin, const struct fm_trace_opts *opts,
                              struct fm_trace **out)
{
    *out = NULL;
    struct reader r;
    memset(&r, 0, sizeof(r));
    r.ctx = ctx;
    r.text = text;
    r.len = len;
    r.origin = origin ? origin : "trace";
    r.names.ctx = ctx;
    fm_arena_init(&r.names.arena, ctx);
    enum fm_status st;
    struct fm_trace *t = fm_alloc(ctx, sizeof(*t));
    if (!t) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory");
        goto out;
    }
    t->ctx = ctx;
    snprintf(t->origin, sizeof(t->origin), "%.127s", r.origin);
    r.t = t;
    if ((st = read_top(&r)))
        goto out;
    t->events = r.x_events;
    t->has_kernels = r.has_kernels;
    t->has_shapes = r.has_shapes;
    if ((st = find_steps(&r, opts)) || (st = nest(&r)) || (st = aggregate(&r)))
        goto out;
    for (size_t i = 0; i < r.n; i++)
        t->has_flops |= r.evs[i].has_flops && r.evs[i].step;
    find_input(&r);
    *out = t;
    t = NULL;
out:
    fm_trace_free(t);
    fm_dealloc(ctx, r.evs);
    fm_dealloc(ctx, r.names.items);
    fm_dealloc(ctx, r.names.table);
    fm_arena_release(&r.names.arena);
    return st;
}

#endif /* FM_HAVE_CJSON */

/* The whole file in memory: a trace of hundreds of MB is read in one pass (no size limit but
 * memory; the events then take about 100 bytes each). */
enum fm_status fm_trace_read(struct fm_ctx *ctx, const char *path,
                             const struct fm_trace_opts *opts, struct fm_trace **out)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return fm_error(ctx, FM_ERR_IO, "cannot read trace %s: %s", path, strerror(errno));
    enum fm_status st = FM_OK;
    size_t cap = 1 << 16, n = 0;
    char *buf = fm_alloc(ctx, cap);
    for (;;) {
        if (!buf) {
            st = fm_error(ctx, FM_ERR_NOMEM, "%s: out of memory reading the file", path);
            goto out;
        }
        n += fread(buf + n, 1, cap - n - 1, f);
        if (ferror(f)) {
            st = fm_error(ctx, FM_ERR_IO, "cannot read trace %s: %s", path, strerror(errno));
            goto out;
        }
        if (feof(f))
            break;
        if (cap > SIZE_MAX / 2) {
            st = fm_error(ctx, FM_ERR_NOMEM, "%s: too large to read", path);
            goto out;
        }
        char *nb = fm_realloc(ctx, buf, cap * 2);
        if (!nb) {
            st = fm_error(ctx, FM_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, cap * 2);
            goto out;
        }
        buf = nb;
        cap *= 2;
    }
    buf[n] = '\0';
    const char *base = strrchr(path, '/');
    st = fm_trace_parse(ctx, buf, n, base ? base + 1 : path, opts, out);
out:
    fclose(f);
    fm_dealloc(ctx, buf);
    return st;
}
