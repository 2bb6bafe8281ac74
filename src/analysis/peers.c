/* What the other counters print for a graph: fvcore, ptflops (both backends), thop, pthflops,
 * PyTorch's FlopCounterMode (forward, and forward + backward) and torchvision's published
 * figure, each reproduced exactly from the graph's nodes and shapes and flopmeter's forward
 * MACs by per-op rules read from the tools' source (fvcore 0.1.5, ptflops 0.7.5, thop
 * 0.1.1-2209072238, pthflops 0.4.2, FlopCounterMode of PyTorch 2.x; docs/counting.md section 4
 * tells them op by op, tests/test_peers.c checks them against the real tools' output).
 *
 * Three of the tools (ptflops' pytorch backend, thop, pthflops) count modules and calls, not
 * ops: the same ReLU counts 2 per element as a torch.nn.ReLU module in ptflops and 1 as
 * F.relu, and 2 as a module in pthflops but 0 as F.relu. So each node gets the form in which
 * PyTorch code wrote it: for a built-in architecture (checked node for node against the
 * builder) the form torchvision's source uses, a table below; for an ONNX file from PyTorch's
 * exporter, the module scopes in its node names (a node alone in a scope with no sub-scopes is
 * that scope's torch.nn module, a node in a scope that has sub-scopes is a call in the parent's
 * forward; an Add or Mul there is Python's + or *, which pthflops counts, x += y included,
 * since torch.fx records it as x + y). Where neither says, a peer whose figure depends on it
 * is not computable, and says why. It computes nothing flopmeter's own counts need, and prints
 * nothing (src/report renders the result). */
#include "../core/internal.h"
#include "analysis.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const peer_keys[FM_PEER_COUNT] = {
    [FM_PEER_FVCORE] = "fvcore",
    [FM_PEER_PTFLOPS] = "ptflops",
    [FM_PEER_PTFLOPS_ATEN] = "ptflops_aten",
    [FM_PEER_THOP] = "thop",
    [FM_PEER_PTHFLOPS] = "pthflops",
    [FM_PEER_FLOP_COUNTER_FWD] = "flop_counter_fwd",
    [FM_PEER_FLOP_COUNTER_BWD] = "flop_counter_bwd",
    [FM_PEER_TORCHVISION] = "torchvision",
};

static const char *const peer_labels[FM_PEER_COUNT] = {
    [FM_PEER_FVCORE] = "fvcore FlopCountAnalysis",
    [FM_PEER_PTFLOPS] = "ptflops (pytorch backend)",
    [FM_PEER_PTFLOPS_ATEN] = "ptflops (aten backend)",
    [FM_PEER_THOP] = "thop profile",
    [FM_PEER_PTHFLOPS] = "pthflops count_ops",
    [FM_PEER_FLOP_COUNTER_FWD] = "FlopCounterMode, forward",
    [FM_PEER_FLOP_COUNTER_BWD] = "FlopCounterMode, fwd + bwd",
    [FM_PEER_TORCHVISION] = "torchvision GFLOPS",
};

/* Each tool's unit, as it names it (fvcore says "flops" but counts one per multiply-add). */
static const char *const peer_units[FM_PEER_COUNT] = {
    [FM_PEER_FVCORE] = "MACs",
    [FM_PEER_PTFLOPS] = "MACs",
    [FM_PEER_PTFLOPS_ATEN] = "MACs",
    [FM_PEER_THOP] = "MACs",
    [FM_PEER_PTHFLOPS] = "FLOPs",
    [FM_PEER_FLOP_COUNTER_FWD] = "FLOPs",
    [FM_PEER_FLOP_COUNTER_BWD] = "FLOPs",
    [FM_PEER_TORCHVISION] = "MACs",
};

/* What each leaves out or adds relative to flopmeter's forward counts (docs/counting.md). */
static const char *const peer_notes[FM_PEER_COUNT] = {
    [FM_PEER_FVCORE] = "conv and linear MACs without bias, + BatchNorm 2 per element and adaptive "
                       "average pools 1 per input element; activations, other pools, adds and "
                       "multiplies count 0",
    [FM_PEER_PTFLOPS] = "conv and linear MACs + bias adds, + 1 per element of BatchNorm (2 with "
                        "affine), ReLU and pools, twice where a module calls a patched "
                        "functional; adds, Sigmoid, Hardswish 0; modules per sample",
    [FM_PEER_PTFLOPS_ATEN] = "conv and matrix-product MACs + bias adds; nothing else",
    [FM_PEER_THOP] = "conv and linear MACs without bias, + BatchNorm 4 per element (affine) and "
                     "average pools; ReLU, max pools and functional calls count 0",
    [FM_PEER_PTHFLOPS] = "conv and linear MACs + bias adds, + ReLU and BatchNorm modules 2 per "
                         "element, max pool k-1 per output, adaptive pool H*W per output, x + y, "
                         "x += y and x * y 2 per element",
    [FM_PEER_FLOP_COUNTER_FWD] = "2 per MAC of conv and matrix products, no bias; norms, "
                                 "activations, pools and adds count 0",
    [FM_PEER_FLOP_COUNTER_BWD] = "forward + backward at 2 per MAC of conv and matrix products; "
                                 "a grouped conv's weight gradient counts groups x its forward",
    [FM_PEER_TORCHVISION] = "conv and linear MACs, no bias: the weights' published GFLOPS",
};

const char *fm_peer_key(enum fm_peer p)
{
    return (unsigned)p < FM_PEER_COUNT ? peer_keys[p] : "?";
}

const char *fm_peer_label(enum fm_peer p)
{
    return (unsigned)p < FM_PEER_COUNT ? peer_labels[p] : "?";
}

/* torchvision's metadata "_ops" (GFLOPS) of each built-in's default weights, at batch 1 and
 * the weights' evaluation crop (torchvision 0.29; 0.14 does not publish it). */
static const struct {
    const char *model;
    const char *gflops;
} published[] = {
    {"alexnet", "0.714"},           {"vgg11", "7.609"},
    {"vgg11_bn", "7.609"},          {"vgg13", "11.308"},
    {"vgg13_bn", "11.308"},         {"vgg16", "15.47"},
    {"vgg16_bn", "15.47"},          {"vgg19", "19.632"},
    {"vgg19_bn", "19.632"},         {"resnet18", "1.814"},
    {"resnet34", "3.664"},          {"resnet50", "4.089"},
    {"resnet101", "7.801"},         {"resnet152", "11.514"},
    {"wide_resnet50_2", "11.398"},  {"resnext50_32x4d", "4.23"},
    {"mobilenet_v2", "0.301"},      {"mobilenet_v3_large", "0.217"},
    {"mobilenet_v3_small", "0.057"}, {"efficientnet_b0", "0.386"},
    {"efficientnet_b1", "0.687"},   {"efficientnet_b2", "1.088"},
    {"efficientnet_b3", "1.827"},   {"efficientnet_b4", "4.394"},
    {"efficientnet_b5", "10.266"},  {"efficientnet_b6", "19.068"},
    {"efficientnet_b7", "37.746"},  {"googlenet", "1.498"},
    {"inception_v3", "5.713"},
};

/* ---- how PyTorch code wrote each node ---- */

enum form {
    FORM_UNKNOWN = 0,   /* the graph does not say */
    FORM_MODULE,        /* a torch.nn module's call: hooks see it */
    FORM_CALL           /* a function or operator call: F.relu, torch.flatten, x + y, x += y */
};

enum kind {
    KIND_PLAIN = 0,     /* the node is the module's (or call's) whole work */
    KIND_SILU,          /* an ONNX Sigmoid whose scope also multiplies by it: torch.nn.SiLU */
    KIND_HARDSWISH,     /* an ONNX HardSigmoid times its input: torch.nn.Hardswish (opset < 14) */
    KIND_INSIDE,        /* a node inside such a module: its main node carries the count */
    KIND_ADAPTIVE       /* an ONNX AveragePool that an adaptive average pool exported */
};

struct pnode {
    unsigned char form, kind;
    bool seen;               /* its scope has been read */
    bool ambiguous_pool;     /* AveragePool that an AvgPool2d or an adaptive pool could export */
    fm_tid pool_in;          /* what a pool was called on (before an exported Pad) */
};

struct pc {
    struct fm_ctx *ctx;
    const struct fm_graph *g;
    const struct fm_counts *c;
    struct pnode *nodes;
    int64_t batch;
    const char *provenance;  /* how forms were found, for the basis line */
};

static uint64_t numel(const struct fm_graph *g, fm_tid t)
{
    uint64_t n = 0;
    if (t == FM_NONE || fm_shape_numel(&fm_graph_tensor(g, t)->shape, &n))
        return 0;
    return n;
}

static const struct fm_shape *shape(const struct fm_graph *g, fm_tid t)
{
    return &fm_graph_tensor(g, t)->shape;
}

static bool is_activation(const struct fm_graph *g, fm_tid t)
{
    const struct fm_tensor *x = t == FM_NONE ? NULL : fm_graph_tensor(g, t);
    return x && (x->role == FM_ROLE_ACTIVATION || x->role == FM_ROLE_INPUT);
}

static bool in_present(const struct fm_node *n, int i)
{
    return n->n_in > i && n->in[i] != FM_NONE;
}

/* The zoo's torchvision source forms (torchvision's models package, 0.14 and later): everything is
 * a torch.nn module except what the builders name after the call, and the residual adds. */
static enum form zoo_form(const char *model, const struct fm_node *n)
{
    const char *dot = strrchr(n->name, '.');
    const char *last = dot ? dot + 1 : n->name;
    static const char *const calls[] = {"avg_pool2d", "max_pool2d", "adaptive_avg_pool2d", "cat",
                                        "flatten"};
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        if (strcmp(last, calls[i]) == 0)
            return FORM_CALL;
    }
    switch (n->op) {
    case FM_OP_ADD:   /* MobileNetV2: x + self.conv(x); ResNet, MobileNetV3, EfficientNet: += */
    case FM_OP_MUL:   /* SqueezeExcitation: scale * input */
        return FORM_CALL;
    case FM_OP_RELU:  /* GoogLeNet's and Inception v3's BasicConv2d: F.relu(x, inplace=True) */
        return strcmp(model, "googlenet") == 0 || strcmp(model, "inception_v3") == 0
                   ? FORM_CALL
                   : FORM_MODULE;
    default: return FORM_MODULE;
    }
}

/* Whether the graph is the built-in of its name, node for node (loss nodes aside): then the
 * torchvision table applies. *default_input: also the same shapes as at batch 1 and the
 * default input, where torchvision's published figure applies. */
static enum fm_status match_builtin(struct pc *p, bool *match, bool *default_input)
{
    *match = *default_input = false;
    const struct fm_zoo_entry *e = fm_zoo_find(fm_graph_name(p->g));
    if (!e || strcmp(e->name, fm_graph_name(p->g)) != 0)
        return FM_OK;
    struct fm_graph *ref = NULL;
    enum fm_status st = fm_zoo_build(p->ctx, e->name, NULL, &ref);
    if (st)
        return st;
    size_t n = fm_graph_node_count(p->g), m = fm_graph_node_count(ref), j = 0;
    bool same = true, shapes = true;
    for (size_t i = 0; i < n && same; i++) {
        const struct fm_node *a = fm_graph_node(p->g, (fm_nid)i);
        if (fm_op_class(a->op) == FM_CLASS_LOSS)
            continue;
        const struct fm_node *b = j < m ? fm_graph_node(ref, (fm_nid)j++) : NULL;
        same = b && a->op == b->op && strcmp(a->name, b->name) == 0;
        if (same)
            shapes &= memcmp(shape(p->g, a->out[0]), shape(ref, b->out[0]),
                             sizeof(struct fm_shape)) == 0;
    }
    *match = same && j == m;
    *default_input = *match && shapes;
    fm_graph_free(ref);
    return FM_OK;
}

/* ---- the module scopes of PyTorch's ONNX exporter: "/layer1/layer1.0/relu/Relu" ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether any scope in sorted[] lies under s (starts with s + "/"). */
static bool has_subscope(char *const *sorted, size_t n, const char *s)
{
    size_t len = strlen(s), lo = 0, hi = n;
    while (lo < hi) {   /* the first entry >= s + "/": entries under s follow it contiguously */
        size_t mid = (lo + hi) / 2;
        int c = strncmp(sorted[mid], s, len);
        if (c < 0 || (c == 0 && strcmp(sorted[mid] + len, "/") < 0))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && strncmp(sorted[lo], s, len) == 0 && sorted[lo][len] == '/';
}

/* The node ids of one leaf scope, in topological order. */
struct scope_nodes {
    fm_nid id[8];
    int n;
};

/* Reads a leaf scope's nodes as one torch.nn module. Two-node modules the exporter writes:
 * SiLU (Sigmoid, Mul), Hardswish before opset 14 (HardSigmoid, Mul), a padded AvgPool2d (Pad,
 * AveragePool). Anything else of more than one node is left unknown. */
static void read_leaf(struct pc *p, const struct scope_nodes *s)
{
    const struct fm_graph *g = p->g;
    if (s->n == 1) {
        p->nodes[s->id[0]].form = FORM_MODULE;
        return;
    }
    if (s->n != 2)
        return;
    const struct fm_node *a = fm_graph_node(g, s->id[0]), *b = fm_graph_node(g, s->id[1]);
    struct pnode *pa = &p->nodes[s->id[0]], *pb = &p->nodes[s->id[1]];
    bool mul_of_a = b->op == FM_OP_MUL && b->n_in == 2 &&
                    ((b->in[0] == a->out[0] && b->in[1] == a->in[0]) ||
                     (b->in[1] == a->out[0] && b->in[0] == a->in[0]));
    if ((a->op == FM_OP_SIGMOID || a->op == FM_OP_HARDSIGMOID) && mul_of_a) {
        pa->form = pb->form = FORM_MODULE;
        pa->kind = a->op == FM_OP_SIGMOID ? KIND_SILU : KIND_HARDSWISH;
        pb->kind = KIND_INSIDE;
    } else if (a->op == FM_OP_PAD && b->op == FM_OP_AVGPOOL && b->in[0] == a->out[0]) {
        pa->form = pb->form = FORM_MODULE;
        pa->kind = KIND_INSIDE;
        pb->pool_in = a->in[0];
    }
}

static enum fm_status read_scopes(struct pc *p, bool *all_scoped)
{
    const struct fm_graph *g = p->g;
    size_t n = fm_graph_node_count(g);
    *all_scoped = true;
    for (size_t i = 0; i < n; i++) {
        const struct fm_node *nd = fm_graph_node(g, (fm_nid)i);
        if (fm_op_class(nd->op) != FM_CLASS_LOSS && nd->name[0] != '/')
            *all_scoped = false;
    }
    if (!*all_scoped)
        return FM_OK;
    char **scope = fm_alloc(p->ctx, (n ? n : 1) * sizeof(char *));
    char **sorted = fm_alloc(p->ctx, (n ? n : 1) * sizeof(char *));
    enum fm_status st = FM_OK;
    if (!scope || !sorted) {
        st = fm_error(p->ctx, FM_ERR_NOMEM, "peers: out of memory");
        goto out;
    }
    size_t any_deep = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = fm_graph_node(g, (fm_nid)i)->name;
        const char *slash = strrchr(name, '/');   /* none: a loss node the policy added */
        size_t len = slash ? (size_t)(slash - name) : 0;
        scope[i] = fm_alloc(p->ctx, len + 1);
        if (!scope[i]) {
            st = fm_error(p->ctx, FM_ERR_NOMEM, "peers: out of memory");
            goto out;
        }
        memcpy(scope[i], name, len);
        sorted[i] = scope[i];
        any_deep += len > 0;
    }
    qsort(sorted, n, sizeof(char *), cmp_str);
    const fm_nid *order = fm_graph_topo_order(g);
    for (size_t k = 0; k < n; k++) {
        fm_nid id = order[k];
        const struct fm_node *nd = fm_graph_node(g, id);
        struct pnode *pn = &p->nodes[id];
        if (pn->seen || fm_op_class(nd->op) == FM_CLASS_LOSS)
            continue;
        /* the top scope is the model's own forward, unless the whole model is one module */
        bool container = scope[id][0] ? has_subscope(sorted, n, scope[id]) : any_deep > 0;
        if (container) {
            pn->form = FORM_CALL;
            pn->seen = true;
            continue;
        }
        struct scope_nodes s = {{0}, 0};
        bool more = false;
        for (size_t q = k; q < n; q++) {
            if (strcmp(scope[order[q]], scope[id]) != 0)
                continue;
            if (s.n < 8)
                s.id[s.n++] = order[q];
            else
                more = true;
        }
        if (!more)
            read_leaf(p, &s);   /* what it cannot read as one module stays unknown */
        for (int q = 0; q < s.n; q++)
            p->nodes[s.id[q]].seen = true;
    }
    /* a functional F.avg_pool2d with padding exports as Pad then AveragePool in its caller */
    for (size_t i = 0; i < n; i++) {
        const struct fm_node *nd = fm_graph_node(g, (fm_nid)i);
        if (nd->op != FM_OP_AVGPOOL || p->nodes[i].form != FORM_CALL)
            continue;
        const struct fm_tensor *x = fm_graph_tensor(g, nd->in[0]);
        const struct fm_node *pad = x->producer == FM_NONE ? NULL : fm_graph_node(g, x->producer);
        if (pad && pad->op == FM_OP_PAD && strcmp(scope[x->producer], scope[i]) == 0)
            p->nodes[i].pool_in = pad->in[0];
    }
out:
    if (scope) {
        for (size_t i = 0; i < n; i++)
            fm_dealloc(p->ctx, scope[i]);
    }
    fm_dealloc(p->ctx, scope);
    fm_dealloc(p->ctx, sorted);
    return st;
}

/* An ONNX AveragePool is ambiguous: PyTorch exports an adaptive average pool whose output
 * divides its input as AveragePool(kernel = stride = input / output). A 1x1 window with stride
 * 1 averages one element, which only an adaptive pool to the input's own size writes; a larger
 * window with stride = kernel and no padding could be either. */
static void read_avgpools(struct pc *p, bool builtin)
{
    const struct fm_graph *g = p->g;
    for (size_t i = 0; i < fm_graph_node_count(g) && !builtin; i++) {
        const struct fm_node *nd = fm_graph_node(g, (fm_nid)i);
        if (nd->op != FM_OP_AVGPOOL)
            continue;
        const struct fm_attrs *a = &nd->attrs;
        bool nopad = !a->pad[0] && !a->pad[1] && !a->pad[2] && !a->pad[3] &&
                     p->nodes[i].pool_in == FM_NONE;
        bool tiling = a->kernel[0] == a->stride[0] && a->kernel[1] == a->stride[1] && nopad;
        const struct fm_shape *x = shape(g, nd->in[0]), *y = shape(g, nd->out[0]);
        bool exact = x->rank == 4 && y->rank == 4 && x->dims[2] == y->dims[2] * a->kernel[0] &&
                     x->dims[3] == y->dims[3] * a->kernel[1];
        if (tiling && exact && a->kernel[0] == 1 && a->kernel[1] == 1)
            p->nodes[i].kind = KIND_ADAPTIVE;
        else if (tiling && exact)
            p->nodes[i].ambiguous_pool = true;
    }
}

/* ---- one peer's sum ---- */

struct acc {
    uint64_t module, call;   /* ptflops divides its module hooks by the batch, not its calls */
    bool ovf;
    bool unhandled;
    char why[224];
};

static void add(struct acc *a, uint64_t v)
{
    a->module = fm_cadd(&a->ovf, a->module, v);
}

static void add_call(struct acc *a, uint64_t v)
{
    a->call = fm_cadd(&a->ovf, a->call, v);
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void cannot(struct acc *a, const struct fm_node *n, const char *fmt, ...)
{
    if (a->unhandled)
        return;   /* the first reason is the one shown */
    a->unhandled = true;
    char what[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(a->why, sizeof(a->why), "%s (%.60s)", what, n->name);
}

static uint64_t mac(const struct pc *p, fm_nid id)
{
    return p->c->nodes[id].phase[FM_PHASE_FWD].prim[FM_PRIM_MAC];
}

/* Spatial elements of a tensor: the product of dims 2.. */
static uint64_t spatial(const struct fm_graph *g, fm_tid t, bool *ovf)
{
    const struct fm_shape *s = shape(g, t);
    uint64_t v = 1;
    for (int i = 2; i < s->rank; i++)
        v = fm_cmul(ovf, v, (uint64_t)s->dims[i]);
    return v;
}

static uint64_t kernel_elems(const struct fm_graph *g, const struct fm_node *n, bool *ovf)
{
    if (n->op == FM_OP_CONV || n->op == FM_OP_CONV_TRANSPOSE)
        return spatial(g, n->in[1], ovf);
    return fm_cmul(ovf, fm_cmul(ovf, (uint64_t)n->attrs.kernel_d, (uint64_t)n->attrs.kernel[0]),
                   (uint64_t)n->attrs.kernel[1]);   /* kernel_d: 3-D pools, else 1 */
}

/* A Gemm that nn.Linear exports: A (M, K) not transposed, unit scales. */
static bool gemm_is_linear(const struct fm_node *n)
{
    return n->op == FM_OP_GEMM && !(n->attrs.flags & FM_ATTR_TRANS_A) &&
           n->attrs.alpha == 1.0 && (!in_present(n, 2) || n->attrs.beta == 1.0);
}

/* Rows, in_features and out_features of a Linear (or a Gemm that is one). */
static void linear_dims(const struct fm_graph *g, const struct fm_node *n, uint64_t *rows,
                        uint64_t *k, uint64_t *nout)
{
    const struct fm_shape *y = shape(g, n->out[0]), *x = shape(g, n->in[0]);
    *k = (uint64_t)x->dims[x->rank - 1];
    *nout = (uint64_t)y->dims[y->rank - 1];
    *rows = *nout ? numel(g, n->out[0]) / *nout : 0;
}

static bool affine(const struct fm_node *n)
{
    return in_present(n, 1);
}

/* thop's adaptive average pool: int((prod(in_hw / out_hw) + 1) * numel(out)), in float64 as
 * torch computes it. */
static uint64_t thop_adaptive(const struct fm_graph *g, const struct fm_node *n)
{
    const struct fm_shape *x = shape(g, n->in[0]), *y = shape(g, n->out[0]);
    double k = 1.0;
    for (int i = 2; i < x->rank && i < y->rank; i++)
        k *= (double)x->dims[i] / (double)y->dims[i];
    return (uint64_t)((k + 1.0) * (double)numel(g, n->out[0]));
}

static bool is_adaptive_pool(const struct pc *p, fm_nid id)
{
    enum fm_op op = fm_graph_node(p->g, id)->op;
    return op == FM_OP_ADAPTIVE_AVGPOOL || op == FM_OP_GLOBAL_AVGPOOL ||
           p->nodes[id].kind == KIND_ADAPTIVE;
}

/* Ops none of the tools' rules reach, or whose count they derive in ways not reproduced here
 * (interpolation, einsum's optimized path, attention kernels). */
static bool unsupported(const struct fm_node *n)
{
    return n->op == FM_OP_UNKNOWN || n->op == FM_OP_RESIZE || n->op == FM_OP_EINSUM ||
           n->op == FM_OP_ATTENTION;
}

static void rule_fvcore(const struct pc *p, fm_nid id, struct acc *a)
{
    const struct fm_graph *g = p->g;
    const struct fm_node *n = fm_graph_node(g, id);
    uint64_t x = numel(g, n->in[0]);
    if (unsupported(n)) {
        cannot(a, n, "fvcore's count of %s is not reproduced", n->op_name);
        return;
    }
    switch (n->op) {
    case FM_OP_CONV:
    case FM_OP_CONV_TRANSPOSE:
    case FM_OP_LINEAR:
    case FM_OP_GEMM: add(a, mac(p, id)); break;   /* aten::_convolution, linear, addmm */
    case FM_OP_MATMUL: {   /* aten::matmul: prod(A) * B[-1], whatever the broadcast */
        const struct fm_shape *b = shape(g, n->in[1]);
        if (b->rank < 2)
            cannot(a, n, "fvcore's matmul rule fails on a 1-D operand");
        else
            add(a, fm_cmul(&a->ovf, x, (uint64_t)b->dims[b->rank - 1]));
        break;
    }
    case FM_OP_BATCHNORM: add(a, fm_cmul(&a->ovf, x, affine(n) ? 2 : 1)); break;
    case FM_OP_LAYERNORM:
    case FM_OP_GROUPNORM:
    case FM_OP_INSTANCENORM: add(a, fm_cmul(&a->ovf, x, affine(n) ? 5 : 4)); break;
    case FM_OP_ADAPTIVE_AVGPOOL:
    case FM_OP_GLOBAL_AVGPOOL: add(a, x); break;
    case FM_OP_AVGPOOL:
        if (p->nodes[id].ambiguous_pool)
            cannot(a, n, "this AveragePool may be an adaptive pool, which fvcore counts");
        else if (p->nodes[id].kind == KIND_ADAPTIVE)
            add(a, x);
        break;
    default: break;   /* fvcore skips every other op */
    }
}

static void rule_ptflops_aten(const struct pc *p, fm_nid id, struct acc *a)
{
    const struct fm_graph *g = p->g;
    const struct fm_node *n = fm_graph_node(g, id);
    uint64_t rows, k, nout;
    if (unsupported(n)) {
        cannot(a, n, "ptflops' count of %s is not reproduced", n->op_name);
        return;
    }
    switch (n->op) {
    case FM_OP_CONV:
    case FM_OP_CONV_TRANSPOSE:   /* aten.convolution: MACs + one add per output with a bias */
        add(a, mac(p, id));
        if (in_present(n, 2))
            add(a, numel(g, n->out[0]));
        break;
    case FM_OP_LINEAR:   /* addmm (bias) for 2-D input; matmul + add_ otherwise */
        add(a, mac(p, id));
        linear_dims(g, n, &rows, &k, &nout);
        if (in_present(n, 2) && shape(g, n->in[0])->rank == 2)
            add(a, fm_cmul(&a->ovf, rows, nout));
        break;
    case FM_OP_GEMM:
        add(a, mac(p, id));
        if (in_present(n, 2))
            add(a, numel(g, n->out[0]));
        break;
    case FM_OP_MATMUL: add(a, mac(p, id)); break;
    default: break;
    }
}

/* FlopCounterMode: 2 per MAC of convolution and matrix products; backward (bwd) adds one
 * product per gradient its autograd computes, the weight gradient of a grouped convolution
 * counted groups times (its convolution_backward rule multiplies the full channel product). */
static void rule_flop_counter(const struct pc *p, fm_nid id, struct acc *a, bool bwd)
{
    const struct fm_graph *g = p->g;
    const struct fm_node *n = fm_graph_node(g, id);
    if (n->op == FM_OP_UNKNOWN || n->op == FM_OP_EINSUM || n->op == FM_OP_ATTENTION) {
        cannot(a, n, "FlopCounterMode's count of %s is not reproduced", n->op_name);
        return;
    }
    bool conv = n->op == FM_OP_CONV || n->op == FM_OP_CONV_TRANSPOSE;
    if (!conv && fm_op_class(n->op) != FM_CLASS_MATMUL)
        return;
    uint64_t f = fm_cmul(&a->ovf, 2, mac(p, id));
    add(a, f);
    if (!bwd)
        return;
    if (fm_graph_needs_grad(g, n->in[0]))
        add(a, f);
    if (conv) {
        if (fm_graph_needs_grad(g, n->in[1]))
            add(a, fm_cmul(&a->ovf, f, (uint64_t)(n->attrs.groups > 1 ? n->attrs.groups : 1)));
    } else if (in_present(n, 1) && fm_graph_needs_grad(g, n->in[1])) {
        add(a, f);
    }
}

static void rule_torchvision(const struct pc *p, fm_nid id, struct acc *a)
{
    const struct fm_node *n = fm_graph_node(p->g, id);
    if (n->op == FM_OP_UNKNOWN || n->op == FM_OP_EINSUM || n->op == FM_OP_ATTENTION)
        cannot(a, n, "torchvision's count of %s is not reproduced", n->op_name);
    else if (n->op == FM_OP_CONV || n->op == FM_OP_CONV_TRANSPOSE ||
             fm_op_class(n->op) == FM_CLASS_MATMUL)
        add(a, mac(p, id));
}

/* The ops whose count in a module-hook tool depends on how the model wrote them: a torch.nn
 * module, a function, an operator. */
static bool form_matters(enum fm_peer peer, enum fm_op op)
{
    switch (op) {
    case FM_OP_CONV: case FM_OP_CONV_TRANSPOSE: case FM_OP_LINEAR: case FM_OP_GEMM:
    case FM_OP_BATCHNORM: case FM_OP_AVGPOOL: case FM_OP_ADAPTIVE_AVGPOOL:
    case FM_OP_GLOBAL_AVGPOOL:
        return true;
    case FM_OP_MATMUL:   /* an nn.Linear's product, or torch.matmul, or @ */
        return true;
    case FM_OP_LAYERNORM: case FM_OP_INSTANCENORM:
        return peer != FM_PEER_PTHFLOPS;
    case FM_OP_GROUPNORM: case FM_OP_RELU: case FM_OP_CLIP: case FM_OP_LEAKY_RELU:
    case FM_OP_GELU: case FM_OP_MAXPOOL: case FM_OP_GLOBAL_MAXPOOL:
        return peer == FM_PEER_PTFLOPS || (peer == FM_PEER_PTHFLOPS && (op == FM_OP_RELU ||
                                                                        op == FM_OP_MAXPOOL));
    case FM_OP_PRELU: case FM_OP_SOFTMAX:
        return peer == FM_PEER_PTFLOPS || peer == FM_PEER_THOP;
    case FM_OP_ADD: case FM_OP_MUL:   /* Python's + (pthflops counts it) or inside a module */
        return peer == FM_PEER_PTHFLOPS;
    default: return false;
    }
}

/* Common gate of the module-hook tools: unsupported ops, nodes of unknown form, and nodes
 * inside a module whose main node carries its count. */
static bool hooked(const struct pc *p, fm_nid id, struct acc *a, enum fm_peer peer)
{
    const struct fm_node *n = fm_graph_node(p->g, id);
    const char *tool = peer == FM_PEER_PTFLOPS ? "ptflops" : peer == FM_PEER_THOP ? "thop"
                                                                                 : "pthflops";
    if (unsupported(n)) {
        cannot(a, n, "%s's count of %s is not reproduced", tool, n->op_name);
        return false;
    }
    if (p->nodes[id].kind == KIND_INSIDE)
        return false;
    if (p->nodes[id].form == FORM_UNKNOWN && form_matters(peer, n->op)) {
        cannot(a, n, "%s counts torch.nn modules and calls apart, and the graph does not say "
                     "what this %s was", tool, n->op_name);
        return false;
    }
    return true;
}

static void rule_ptflops(const struct pc *p, fm_nid id, struct acc *a)
{
    const struct fm_graph *g = p->g;
    const struct fm_node *n = fm_graph_node(g, id);
    if (!hooked(p, id, a, FM_PEER_PTFLOPS))
        return;
    const struct pnode *pn = &p->nodes[id];
    bool module = pn->form == FORM_MODULE;
    uint64_t x = numel(g, n->in[0]), y = numel(g, n->out[0]);
    uint64_t rows, k, nout;
    switch (n->op) {
    case FM_OP_CONV:
    case FM_OP_CONV_TRANSPOSE:   /* F.conv2d is not patched: calls count 0 */
        if (module)
            add(a, fm_cadd(&a->ovf, mac(p, id), in_present(n, 2) ? y : 0));
        break;
    case FM_OP_LINEAR:
    case FM_OP_GEMM:
        if (n->op == FM_OP_GEMM && !gemm_is_linear(n)) {
            cannot(a, n, "a Gemm that is not a torch.nn.Linear");
            break;
        }
        linear_dims(g, n, &rows, &k, &nout);
        if (module)
            add(a, fm_cadd(&a->ovf, mac(p, id),
                           in_present(n, 2) ? fm_cmul(&a->ovf, rows, nout) : 0));
        break;
    case FM_OP_MATMUL:   /* a module: nn.Linear without bias (B its weight) */
        if (module && !is_activation(g, n->in[1]))
            add(a, mac(p, id));
        else
            cannot(a, n, "ptflops counts torch.matmul but not the @ operator, and the graph "
                         "does not say which");
        break;
    case FM_OP_BATCHNORM:
    case FM_OP_GROUPNORM:
    case FM_OP_INSTANCENORM:
        if (module)
            add(a, fm_cmul(&a->ovf, x, affine(n) ? 2 : 1));
        break;
    case FM_OP_LAYERNORM:   /* LayerNorm has no "affine" attribute: 1 per element */
        if (module)
            add(a, x);
        break;
    case FM_OP_RELU:   /* nn.ReLU's hook and the patched F.relu it calls; F.relu alone once */
    case FM_OP_PRELU:
    case FM_OP_GELU:
        if (module)
            add(a, y);
        add_call(a, y);
        break;
    case FM_OP_LEAKY_RELU:   /* F.leaky_relu is not patched */
        if (module)
            add(a, y);
        break;
    case FM_OP_CLIP:
        if (n->attrs.lo != 0.0 || n->attrs.hi != 6.0)
            cannot(a, n, "a Clip other than ReLU6");
        else if (module)   /* nn.ReLU6's hook; it calls F.hardtanh, which is not patched */
            add(a, y);
        else
            cannot(a, n, "ptflops counts F.relu6 but not torch.clamp, and the graph does not "
                         "say which");
        break;
    case FM_OP_SILU:
    case FM_OP_SOFTMAX:   /* no module hook; the patched F.silu / F.softmax count */
        add_call(a, y);
        break;
    case FM_OP_SIGMOID:   /* as nn.SiLU (ONNX Sigmoid, Mul): F.silu; plain Sigmoid: nothing */
        if (pn->kind == KIND_SILU)
            add_call(a, y);
        break;
    case FM_OP_MAXPOOL:
    case FM_OP_AVGPOOL:
    case FM_OP_ADAPTIVE_AVGPOOL:
    case FM_OP_GLOBAL_AVGPOOL:
    case FM_OP_GLOBAL_MAXPOOL: {   /* the pool module's hook and the patched F.*pool* */
        uint64_t in = numel(g, pn->pool_in != FM_NONE ? pn->pool_in : n->in[0]);
        if (module)
            add(a, in);
        add_call(a, in);
        break;
    }
    default: break;   /* operators (+, *), Hardswish, Sigmoid, Dropout, views: nothing */
    }
}

static void rule_thop(const struct pc *p, fm_nid id, struct acc *a)
{
    const struct fm_graph *g = p->g;
    const struct fm_node *n = fm_graph_node(g, id);
    if (!hooked(p, id, a, FM_PEER_THOP))
        return;
    if (p->nodes[id].form != FORM_MODULE)
        return;   /* thop sees modules only */
    uint64_t x = numel(g, n->in[0]), y = numel(g, n->out[0]);
    uint64_t rows, k, nout;
    switch (n->op) {
    case FM_OP_CONV:
    case FM_OP_CONV_TRANSPOSE: {   /* numel(out) * (Cin // groups) * kernel, transposed too */
        uint64_t cin = (uint64_t)shape(g, n->in[0])->dims[1];
        uint64_t gr = (uint64_t)(n->attrs.groups > 1 ? n->attrs.groups : 1);
        add(a, fm_cmul3(&a->ovf, y, cin / gr, kernel_elems(g, n, &a->ovf)));
        break;
    }
    case FM_OP_LINEAR:
    case FM_OP_GEMM:
    case FM_OP_MATMUL:
        if (n->op == FM_OP_GEMM && !gemm_is_linear(n)) {
            cannot(a, n, "a Gemm that is not a torch.nn.Linear");
            break;
        }
        linear_dims(g, n, &rows, &k, &nout);
        add(a, fm_cmul(&a->ovf, k, y));
        break;
    case FM_OP_BATCHNORM:   /* 2 per element, doubled again with affine parameters */
    case FM_OP_LAYERNORM:
    case FM_OP_INSTANCENORM:
        add(a, fm_cmul(&a->ovf, x, affine(n) ? 4 : 2));
        break;
    case FM_OP_PRELU: add(a, x); break;
    case FM_OP_SOFTMAX: {   /* rows * (exp + add + div) = rows * (3L - 1) */
        const struct fm_shape *s = shape(g, n->in[0]);
        int64_t ax = n->attrs.axis < 0 ? n->attrs.axis + s->rank : n->attrs.axis;
        uint64_t len = (uint64_t)s->dims[ax];
        add(a, fm_cmul(&a->ovf, len ? x / len : 0, 3 * len - 1));
        break;
    }
    case FM_OP_AVGPOOL:
        if (p->nodes[id].ambiguous_pool)
            cannot(a, n, "this AveragePool may be an adaptive pool, which thop counts otherwise");
        else if (p->nodes[id].kind == KIND_ADAPTIVE)
            add(a, thop_adaptive(g, n));
        else
            add(a, y);
        break;
    case FM_OP_ADAPTIVE_AVGPOOL:
    case FM_OP_GLOBAL_AVGPOOL: add(a, thop_adaptive(g, n)); break;
    default: break;   /* ReLU, ReLU6, max pools, Dropout: zero_ops; the rest has no hook */
    }
}

static void rule_pthflops(const struct pc *p, fm_nid id, struct acc *a)
{
    const struct fm_graph *g = p->g;
    const struct fm_node *n = fm_graph_node(g, id);
    if (!hooked(p, id, a, FM_PEER_PTHFLOPS))
        return;
    const struct pnode *pn = &p->nodes[id];
    bool module = pn->form == FORM_MODULE;
    uint64_t x = numel(g, n->in[0]), y = numel(g, n->out[0]);
    uint64_t rows, k, nout;
    switch (n->op) {
    case FM_OP_CONV:
    case FM_OP_CONV_TRANSPOSE: {   /* kernel * Cin * (Cout // g) per output position, + bias */
        if (!module)
            break;
        const struct fm_shape *xs = shape(g, n->in[0]), *ys = shape(g, n->out[0]);
        uint64_t gr = (uint64_t)(n->attrs.groups > 1 ? n->attrs.groups : 1);
        uint64_t pos = fm_cmul(&a->ovf, (uint64_t)ys->dims[0], spatial(g, n->out[0], &a->ovf));
        uint64_t per = fm_cmul3(&a->ovf, kernel_elems(g, n, &a->ovf), (uint64_t)xs->dims[1],
                                (uint64_t)ys->dims[1] / gr);
        add(a, fm_cmul(&a->ovf, per, pos));
        if (in_present(n, 2))
            add(a, fm_cmul(&a->ovf, (uint64_t)ys->dims[1], pos));
        break;
    }
    case FM_OP_LINEAR:
    case FM_OP_GEMM:   /* numel(in) * out_features, + out_features once for the bias */
        if (n->op == FM_OP_GEMM && !gemm_is_linear(n)) {
            cannot(a, n, "a Gemm that is not a torch.nn.Linear");
            break;
        }
        linear_dims(g, n, &rows, &k, &nout);
        if (module)
            add(a, fm_cadd(&a->ovf, fm_cmul(&a->ovf, x, nout), in_present(n, 2) ? nout : 0));
        break;
    case FM_OP_MATMUL:   /* torch.matmul and @ alike: numel(A) * out[-1] */
        linear_dims(g, n, &rows, &k, &nout);
        add(a, fm_cmul(&a->ovf, x, nout));
        break;
    case FM_OP_RELU:
    case FM_OP_BATCHNORM:
        if (module)
            add(a, fm_cmul(&a->ovf, y, 2));
        break;
    case FM_OP_MAXPOOL:
        if (module)
            add(a, fm_cmul(&a->ovf, kernel_elems(g, n, &a->ovf) - 1, y));
        break;
    case FM_OP_AVGPOOL:
    case FM_OP_ADAPTIVE_AVGPOOL:
    case FM_OP_GLOBAL_AVGPOOL: {
        if (!module)
            break;
        if (pn->ambiguous_pool) {
            cannot(a, n, "this AveragePool may be an adaptive pool, which pthflops counts "
                         "otherwise");
            break;
        }
        if (is_adaptive_pool(p, id)) {   /* H * W of the input per output element */
            const struct fm_shape *s = shape(g, n->in[0]);
            add(a, fm_cmul3(&a->ovf, (uint64_t)s->dims[s->rank - 2],
                            (uint64_t)s->dims[s->rank - 1], y));
        } else {
            add(a, fm_cmul(&a->ovf, kernel_elems(g, n, &a->ovf), y));
        }
        break;
    }
    case FM_OP_ADD:
    case FM_OP_MUL:   /* 'add' and 'mul' calls: numel(out) * 2 arguments. torch.fx records
                         x += y as operator.add too: its Proxy has no __iadd__ */
        add(a, fm_cmul(&a->ovf, y, (uint64_t)n->n_in));
        break;
    default: break;   /* every other module and call: _undefined_op */
    }
}

/* Sums one peer over the graph's nodes (loss nodes aside). */
static void run_peer(const struct pc *p, enum fm_peer peer, struct acc *a)
{
    memset(a, 0, sizeof(*a));
    const fm_nid *order = fm_graph_topo_order(p->g);
    for (size_t i = 0; i < fm_graph_node_count(p->g); i++) {
        fm_nid id = order[i];
        if (fm_op_class(fm_graph_node(p->g, id)->op) == FM_CLASS_LOSS)
            continue;
        switch (peer) {
        case FM_PEER_FVCORE: rule_fvcore(p, id, a); break;
        case FM_PEER_PTFLOPS: rule_ptflops(p, id, a); break;
        case FM_PEER_PTFLOPS_ATEN: rule_ptflops_aten(p, id, a); break;
        case FM_PEER_THOP: rule_thop(p, id, a); break;
        case FM_PEER_PTHFLOPS: rule_pthflops(p, id, a); break;
        case FM_PEER_FLOP_COUNTER_FWD: rule_flop_counter(p, id, a, false); break;
        case FM_PEER_FLOP_COUNTER_BWD: rule_flop_counter(p, id, a, true); break;
        case FM_PEER_TORCHVISION: rule_torchvision(p, id, a); break;
        default: break;
        }
    }
}

enum fm_status fm_peers(struct fm_ctx *ctx, const struct fm_graph *graph,
                        const struct fm_counts *counts, struct fm_peer_figures *out)
{
    if (!graph || !counts || !out)
        return fm_error(ctx, FM_ERR_INVALID, "fm_peers: a graph, its counts and a result");
    if (counts->n_nodes != fm_graph_node_count(graph))
        return fm_error(ctx, FM_ERR_INVALID, "fm_peers: the counts are of another graph");
    struct fm_peer_figures r;
    memset(&r, 0, sizeof(r));
    struct pc p = {ctx, graph, counts, NULL, fm_graph_batch(graph), NULL};
    size_t n = fm_graph_node_count(graph);
    p.nodes = fm_alloc(ctx, (n ? n : 1) * sizeof(struct pnode));
    if (!p.nodes)
        return fm_error(ctx, FM_ERR_NOMEM, "peers: out of memory");
    for (size_t i = 0; i < n; i++)
        p.nodes[i].pool_in = FM_NONE;
    bool builtin = false, default_input = false, scoped = false;
    enum fm_status st = match_builtin(&p, &builtin, &default_input);
    if (st)
        goto out;
    if (builtin) {
        for (size_t i = 0; i < n; i++)
            p.nodes[i].form = (unsigned char)zoo_form(fm_graph_name(graph),
                                                      fm_graph_node(graph, (fm_nid)i));
        p.provenance = "layers as torchvision's source writes them";
    } else {
        if ((st = read_scopes(&p, &scoped)))
            goto out;
        p.provenance = scoped ? "torch.nn modules read from the module scopes PyTorch's "
                                "exporter writes into node names"
                              : "no record of which layers were torch.nn modules";
    }
    read_avgpools(&p, builtin);

    r.batch = p.batch;
    r.builtin = builtin;
    for (int k = 0; k < FM_PEER_COUNT; k++) {
        struct acc a;
        run_peer(&p, (enum fm_peer)k, &a);
        struct fm_peer_figure *f = &r.peer[k];
        f->unit = peer_units[k];
        if (a.ovf) {
            st = fm_error(ctx, FM_ERR_OVERFLOW, "%s: the %s figure does not fit in 64 bits",
                          fm_graph_name(graph), peer_labels[k]);
            goto out;
        }
        if (a.unhandled) {
            snprintf(f->note, sizeof(f->note), "not computable: %s", a.why);
            continue;
        }
        f->computable = true;
        f->value = a.module;
        if (k == FM_PEER_PTFLOPS && p.batch > 1)   /* module hooks are averaged per sample */
            f->value = a.module / (uint64_t)p.batch;
        f->value = fm_cadd(&a.ovf, f->value, a.call);
        snprintf(f->note, sizeof(f->note), "%s", peer_notes[k]);
    }
    if (default_input) {
        for (size_t i = 0; i < sizeof(published) / sizeof(published[0]); i++) {
            if (strcmp(published[i].model, fm_graph_name(graph)) == 0)
                snprintf(r.published, sizeof(r.published), "%s", published[i].gflops);
        }
    }
    /* routed experts (named as transformers' modules: "mlp.experts.3.up_proj"): transformers 5
     * runs them by default through torch._grouped_mm, which FlopCounterMode has no formula for */
    for (size_t i = 0; i < n; i++) {
        if (!strstr(fm_graph_node(graph, (fm_nid)i)->name, ".experts"))
            continue;
        for (int k = FM_PEER_FLOP_COUNTER_FWD; k <= FM_PEER_FLOP_COUNTER_BWD; k++) {
            struct fm_peer_figure *f = &r.peer[k];
            size_t len = strlen(f->note);
            snprintf(f->note + len, sizeof(f->note) - len, "; MoE: with transformers 5's default "
                     "experts (grouped_mm) it counts the routed experts as 0");
        }
        break;
    }
    struct fm_peer_figure *tv = &r.peer[FM_PEER_TORCHVISION];
    if (tv->computable && !r.published[0])
        snprintf(tv->note, sizeof(tv->note), "%s (torchvision publishes none for this %s)",
                 peer_notes[FM_PEER_TORCHVISION], builtin ? "input" : "graph");
    else if (tv->computable)
        snprintf(tv->note, sizeof(tv->note), "%s (%s, these MACs rounded)",
                 peer_notes[FM_PEER_TORCHVISION], r.published);
    snprintf(r.basis, sizeof(r.basis),
             "the forward pass in evaluation mode at batch %lld (FlopCounterMode's backward: "
             "forward + backward, the input needing no gradient)%s; %s",
             (long long)p.batch, counts->mode == FM_MODE_TRAIN ? ", the step's loss left out" : "",
             p.provenance);
    *out = r;
out:
    fm_dealloc(ctx, p.nodes);
    return st;
}
