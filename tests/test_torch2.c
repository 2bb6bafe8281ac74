/* The PyTorch 2.x corpus (tests/data/onnx/torch2/, made by tools/export_torch2_corpus.py with
 * torch 2.15, torchvision 0.29 and transformers 5.24): every file counted against what PyTorch
 * said of the module it came from (its manifest NAME.json): parameters, FlopCounterMode's
 * forward and backward FLOPs, module names; and every file trains a few steps on the CPU
 * backend (one case per family, test_torch2_train_*). What it does not cover: the exports that
 * failed (their manifests record the exporter's error).
 *
 * Exact where FlopCounterMode is right. Where it is not, the difference is asserted with its
 * formula: a grouped convolution's weight gradient counted `groups` times (so PyTorch's backward
 * is ours plus (groups - 1) x each grouped convolution's weight-gradient FLOPs), and SDPA's
 * backward counted with the forward's Q K^T recomputed (ours plus half SDPA's forward FLOPs,
 * for d_q = d_v). Parameters are exact for the exports that keep them (optimize=False and the
 * TorchScript exporter; ONNX records no requires_grad, so every parameter counts trainable);
 * an optimized export that folded some must say so, naming the modules. */
#include "support.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/internal.h"

#include <math.h>

#define DIR_ "torch2/"

/* A top-level integer of a manifest (written with indent=1: top-level keys at one space). */
static bool man_int(const char *js, const char *key, int64_t *out)
{
    char pat[128];
    snprintf(pat, sizeof(pat), "\n \"%s\": ", key);
    const char *p = strstr(js, pat);
    if (!p)
        return false;
    *out = strtoll(p + strlen(pat), NULL, 10);
    return true;
}

static bool man_str(const char *js, const char *key, char *buf, size_t size)
{
    char pat[128];
    snprintf(pat, sizeof(pat), "\n \"%s\": \"", key);
    const char *p = strstr(js, pat);
    if (!p)
        return false;
    p += strlen(pat);
    const char *e = strchr(p, '"');
    if (!e || (size_t)(e - p) >= size)
        return false;
    memcpy(buf, p, (size_t)(e - p));
    buf[e - p] = 0;
    return true;
}

/* FlopCounterMode's forward SDPA FLOPs: the first per-op entry of a forward SDPA kernel. */
static int64_t man_sdpa_fwd(const char *js)
{
    const char *p = js;
    while ((p = strstr(p, "\"aten._scaled_dot_product_")) != NULL) {
        const char *q = strchr(p + 1, '"');
        if (!q)
            return 0;
        if (!memmem(p, (size_t)(q - p), "backward", 8) && q[1] == ':')
            return strtoll(q + 2, NULL, 10);
        p = q;
    }
    return 0;
}

/* Whether a node of g is named module, or "module/..." (the op as suffix). */
static bool has_module(const struct fm_graph *g, const char *module)
{
    size_t n = strlen(module);
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const char *nm = fm_graph_node(g, (fm_nid)i)->name;
        if (!strncmp(nm, module, n) && (nm[n] == 0 || nm[n] == '/'))
            return true;
    }
    return false;
}

/* Whether the module of param (its name less the last component), or that module's parent,
 * names a layer of g. */
static bool param_module_named(const struct fm_graph *g, const char *param, size_t len)
{
    const char *dot = memrchr(param, '.', len);
    if (!dot)
        return false;
    char mod[256];
    snprintf(mod, sizeof(mod), "%.*s", (int)(dot - param), param);
    /* or its parent's: MultiheadAttention runs out_proj's weight in its own functional */
    char *up = strrchr(mod, '.');
    return has_module(g, mod) || (up && (*up = 0, has_module(g, mod)));
}

/* Whether one of the other names of a tied parameter (the manifest's param_aliases: T5's
 * shared embedding is read as encoder.embed_tokens) names a layer of g. */
static bool alias_named(const char *js, const struct fm_graph *g, const char *param, size_t len)
{
    const char *sec = strstr(js, "\n \"param_aliases\": {");
    if (!sec)
        return false;
    const char *sec_end = strstr(sec, "\n }");
    char key[300];
    snprintf(key, sizeof(key), "\"%.*s\": [", (int)len, param);
    const char *p = strstr(sec, key);
    if (!p || (sec_end && p > sec_end))
        return false;
    const char *end = strchr(p, ']');
    for (p += strlen(key); end && (p = strchr(p, '"')) != NULL && p < end;) {
        const char *q = strchr(p + 1, '"');
        if (!q)
            return false;
        if (param_module_named(g, p + 1, (size_t)(q - p - 1)))
            return true;
        p = q + 1;
    }
    return false;
}

/* The module of every parameter the manifest lists and the file holds ("layer1.0.conv1.weight"
 * -> "layer1.0.conv1") that names a node of g, or whose parent does, or one of its other names
 * does: how many were looked for and found. */
static void modules_named(const char *js, const struct fm_graph *g, int *looked, int *found)
{
    *looked = *found = 0;
    const char *p = strstr(js, "\"param_list\": [");
    const char *end = p ? strchr(p, ']') : NULL;
    while (p && end && (p = strstr(p, "\"name\": \"")) != NULL && p < end) {
        p += 9;
        const char *q = strchr(p, '"');
        if (!q)
            break;
        size_t len = (size_t)(q - p);
        char pname[256];
        snprintf(pname, sizeof(pname), "%.*s", (int)len, p);
        /* one the file kept (an optimized export loses some: the fold report names them),
         * not a parameter of the model itself (ViT's class_token) */
        if (fm_graph_find_tensor(g, pname) != FM_NONE && memchr(p, '.', len)) {
            (*looked)++;
            if (param_module_named(g, p, len) || alias_named(js, g, p, len))
                (*found)++;
        }
        p = q;
    }
}

static void check_file(const char *name, int *counted)
{
    char path[512];
    snprintf(path, sizeof(path), FM_TEST_DATA "/onnx/" DIR_ "%s.json", name);
    char *js = test_read_file(path, NULL);
    char file[256], variant[16];
    if (!man_str(js, "file", file, sizeof(file))) {   /* the export failed: its error is there */
        assert_non_null(strstr(js, "\"error\": "));
        free(js);
        return;
    }
    assert_true(man_str(js, "variant", variant, sizeof(variant)));
    int64_t params, fwd, fwd_bwd;
    assert_true(man_int(js, "params", &params));
    assert_true(man_int(js, "flops_fwd", &fwd));
    assert_true(man_int(js, "flops_fwd_bwd", &fwd_bwd));

    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    char rel[300];
    snprintf(rel, sizeof(rel), DIR_ "%s", file);
    /* a symbolic batch (dynb) is bound to the batch PyTorch counted at */
    int64_t batch = 0;
    const char *shape = strstr(js, "\n \"inputs\": {");
    if (!strcmp(variant, "dynb")) {
        shape = shape ? strstr(shape, "\"shape\": [") : NULL;
        assert_non_null(shape);
        batch = strtoll(shape + 10, NULL, 10);
        assert_true(batch > 0);
    }
    if (test_load_onnx(ctx, rel, batch, NULL, 0, &g) != FM_OK)
        fail_msg("%s: %s", name, fm_ctx_error(ctx));
    struct fm_counts *c = test_count(ctx, g, FM_MODE_TRAIN);
    int64_t our_fwd = 2 * (int64_t)c->total[FM_PHASE_FWD].prim[FM_PRIM_MAC];
    int64_t our_bwd = 2 * (int64_t)(c->total[FM_PHASE_BWD_DATA].prim[FM_PRIM_MAC] +
                                    c->total[FM_PHASE_BWD_WEIGHT].prim[FM_PRIM_MAC]);
    /* FlopCounterMode's two known excesses over the work done */
    int64_t grouped = 0;
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        if (n->op == FM_OP_CONV && n->attrs.groups > 1)
            grouped += 2 * (int64_t)c->nodes[i].phase[FM_PHASE_BWD_WEIGHT].prim[FM_PRIM_MAC] *
                       (n->attrs.groups - 1);
    }
    int64_t sdpa = man_sdpa_fwd(js) / 2;
    bool dyn = !strcmp(variant, "dyn");
    /* swin_v2_t's optimized export evaluated the first Linear(2, 512) of each block's
     * continuous position-bias MLP (its input, 7 x 7 x 2, is a constant table): that matmul,
     * its forward and its weight gradient (49 x 2 x 512 MACs each, 4 blocks), is gone */
    if (dyn && !strncmp(name, "swin_v2_t", 9)) {
        fwd -= 2 * 4 * 49 * 2 * 512;
        fwd_bwd -= 2 * 2 * 4 * 49 * 2 * 512;
    }
    /* the TorchScript exporter writes buffers and parameters alike (initializers named by
     * their state-dict keys): Swin-V2's relative_coords_table, a float buffer of 7 x 7 x 2 per
     * block (4 blocks) that feeds the Linear(2, 512) of the position-bias MLP, reads as a weight,
     * and that Linear then computes its input's gradient (49 x 2 x 512 MACs per block) */
    if (!strcmp(name, "swin_v2_t_ts")) {
        params += 4 * 7 * 7 * 2;
        fwd_bwd += 2 * 4 * 49 * 2 * 512;
    }
    if (our_fwd != fwd || our_bwd + grouped + sdpa != fwd_bwd - fwd)
        fail_msg("%s: fwd %lld vs PyTorch %lld; bwd %lld + grouped %lld + sdpa %lld vs PyTorch "
                 "%lld", name, (long long)our_fwd, (long long)fwd, (long long)our_bwd,
                 (long long)grouped, (long long)sdpa, (long long)(fwd_bwd - fwd));
    if (strcmp(variant, "ts") != 0) {
        /* folded parameters are named once, with the export that keeps them; an export that
         * kept them all says nothing */
        char args[600], *out = NULL, *err = NULL;
        snprintf(args, sizeof(args), "count %s/onnx/" DIR_ "%s --format csv --batch %lld",
                 FM_TEST_DATA, file, (long long)(batch ? batch : 2));
        assert_int_equal(test_run_cli(args, &out, &err), 0);
        const char *said = strstr(err, "the exporter folded parameters of modules");
        if (dyn && (int64_t)c->params != params) {
            assert_non_null(said);
            assert_non_null(strstr(err, "optimize=False"));
            assert_null(strstr(said + 1, "the exporter folded parameters"));   /* once */
        } else if (!dyn && said) {
            fail_msg("%s: %s", name, said);
        }
        free(out);
        free(err);
    }
    if (dyn) {
        /* what an optimized export lost: fewer parameters than PyTorch's, never more, except
         * Swin-V2's evaluated position-bias MLP, whose output table (7 x 7 x 512 per block)
         * reads as the weight of the Linear after it */
        if (strncmp(name, "swin_v2_t", 9) != 0 && (int64_t)c->params > params)
            fail_msg("%s: %llu parameters, PyTorch %lld", name, (unsigned long long)c->params,
                     (long long)params);
    } else {
        if ((int64_t)c->params != params || c->trainable_params != c->params)
            fail_msg("%s: %llu parameters (%llu trainable), PyTorch %lld", name,
                     (unsigned long long)c->params, (unsigned long long)c->trainable_params,
                     (long long)params);
    }
    if (strcmp(variant, "ts") != 0) {   /* the dynamo exporter records module paths */
        int looked, found;
        modules_named(js, g, &looked, &found);
        if (looked == 0 && !dyn)   /* an optimized export may rename every one (Gemma's) */
            fail_msg("%s: no parameter of the manifest in the file", name);
        if (found != looked)
            fail_msg("%s: %d of %d parameters' modules name a layer", name, found, looked);
    }
    (*counted)++;
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
    free(js);
}

static void test_torch2_corpus(void **state)
{
    (void)state;
    DIR *d = opendir(FM_TEST_DATA "/onnx/" DIR_);
    assert_non_null(d);
    struct dirent *e;
    int counted = 0, manifests = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".json") != 0)
            continue;
        char name[256];
        snprintf(name, sizeof(name), "%.*s", (int)(n - 5), e->d_name);
        manifests++;
        check_file(name, &counted);
    }
    closedir(d);
    print_message("torch2 corpus: %d manifests, %d files counted\n", manifests, counted);
    assert_true(manifests >= 60);
    assert_true(counted >= 53);   /* every file written: 7 exports failed (their manifests say) */
}

/* A training-mode BatchNorm of the dynamo exporter (no training_mode attribute; its metadata
 * names _native_batch_norm_legit_functional) counts with batch statistics and a backward. */
static void test_torch2_batchnorm(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, DIR_ "resnet18_dynraw.onnx", 0, NULL, 0, &g));
    struct fm_counts *c = test_count(ctx, g, FM_MODE_TRAIN);
    bool seen = false;
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        const struct fm_node *n = fm_graph_node(g, (fm_nid)i);
        if (strcmp(n->name, "layer1.0.bn1") != 0)
            continue;
        seen = true;
        assert_int_equal(n->op, FM_OP_BATCHNORM);
        assert_false(n->attrs.flags & FM_ATTR_INFER_BN);
        /* 2 x 64 x 16 x 16 elements: the batch mean alone is E adds */
        assert_true(c->nodes[i].phase[FM_PHASE_FWD].prim[FM_PRIM_ADD] >= 2 * 64 * 16 * 16);
        assert_true(c->nodes[i].phase[FM_PHASE_BWD_DATA].prim[FM_PRIM_MUL] > 0);
        assert_int_equal(c->nodes[i].params, 128);
    }
    assert_true(seen);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* Sums a CSV column (0-based col) over rows whose first field does not start with skip. */
static uint64_t csv_sum(const char *csv, int col, const char *skip, int *rows)
{
    uint64_t sum = 0;
    *rows = 0;
    const char *line = strchr(csv, '\n');   /* past the header */
    while (line && line[1]) {
        line++;
        if (!skip || strncmp(line, skip, strlen(skip)) != 0) {
            const char *p = line;
            bool quoted = false;
            for (int c = 0; c < col && *p && *p != '\n'; p++) {
                if (*p == '"')
                    quoted = !quoted;
                else if (*p == ',' && !quoted)
                    c++;
            }
            sum += strtoull(p, NULL, 10);
            (*rows)++;
        }
        line = strchr(line, '\n');
    }
    return sum;
}

/* --by-module: one row per module, the module paths of the file, adding up to the totals. */
static void test_torch2_by_module(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL, *mods = NULL;
    const char *f = FM_TEST_DATA "/onnx/" DIR_ "llama_dynraw.onnx";
    char args[512];
    snprintf(args, sizeof(args), "count %s --format csv", f);
    assert_int_equal(test_run_cli(args, &out, &err), 0);
    free(err);
    snprintf(args, sizeof(args), "count %s --format csv --by-module", f);
    assert_int_equal(test_run_cli(args, &mods, &err), 0);
    free(err);
    assert_non_null(strstr(mods, "module,layers,params,fwd_flops,fwd_macs,"));
    /* one Linear: its own row, its weight's 64 x 64 parameters */
    const char *q = strstr(mods, "\n\"model.layers.0.self_attn.q_proj\",");
    assert_non_null(q);
    const char *pcol = strchr(strchr(q + 1, ',') + 1, ',') + 1;
    assert_int_equal(strtoull(pcol, NULL, 10), 64 * 64);
    assert_non_null(strstr(mods, "\n\"model.layers.1.mlp.down_proj\","));
    /* the modules add up to the total row of the per-layer CSV (there params is column 5 and
     * fwd_flops 7; by module 2 and 3), and are fewer than the layers */
    int layer_rows, mod_rows, total_rows;
    csv_sum(out, 5, "total", &layer_rows);
    const char *total = strstr(out, "\ntotal,");
    assert_non_null(total);
    assert_int_equal(csv_sum(mods, 2, NULL, &mod_rows), csv_sum(total, 5, NULL, &total_rows));
    assert_int_equal(csv_sum(mods, 3, NULL, &mod_rows), csv_sum(total, 7, NULL, &total_rows));
    assert_int_equal(total_rows, 1);
    assert_true(mod_rows > 20 && mod_rows < layer_rows);
    free(out);
    free(mods);
}

static const struct fm_node *node_named(const struct fm_graph *g, const char *name)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        if (!strcmp(fm_graph_node(g, (fm_nid)i)->name, name))
            return fm_graph_node(g, (fm_nid)i);
    }
    fail_msg("no layer named '%s'", name);
    return NULL;
}

/* torch.split as the exporter writes it: SplitToSequence (sizes [2, 4] on axis 1; a scalar 4
 * on axis -2, pieces 4 and 2) read by SequenceAt at 0, -1 and 1: three Slices. */
static void test_torch2_split_to_sequence(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, DIR_ "torch2_split_seq.onnx", 0, NULL, 0, &g));
    assert_int_equal(fm_graph_node_count(g), 3);
    static const struct {
        const char *out;
        int64_t start, end, len;
    } want[] = {{"first", 0, 2, 2}, {"last", 2, 6, 4}, {"tail", 4, 6, 2}};
    for (int k = 0; k < 3; k++) {
        fm_tid t = fm_graph_find_tensor(g, want[k].out);
        assert_int_not_equal(t, FM_NONE);
        const struct fm_tensor *tt = fm_graph_tensor(g, t);
        const struct fm_node *n = fm_graph_node(g, tt->producer);
        assert_int_equal(n->op, FM_OP_SLICE);
        assert_int_equal(tt->shape.rank, 3);
        assert_int_equal(tt->shape.dims[0], 2);
        assert_int_equal(tt->shape.dims[1], want[k].len);
        assert_int_equal(tt->shape.dims[2], 4);
        assert_int_equal(n->attrs.ints[3], want[k].start);   /* dim 1's (start, end, step) */
        assert_int_equal(n->attrs.ints[4], want[k].end);
        assert_int_equal(n->attrs.ints[5], 1);
    }
    fm_graph_free(g);
    /* sizes 4 + 4 on an axis of 6: refused, naming the split */
    g = NULL;
    assert_int_equal(test_load_onnx(ctx, DIR_ "torch2_bad_split.onnx", 0, NULL, 0, &g),
                     FM_ERR_UNSUPPORTED);
    EXPECT_MESSAGE(ctx, "SequenceAt", "cannot place", "more than the axis");
    fm_ctx_free(ctx);
}

/* The node metadata of a small hand-made file: module paths from name_scopes, or namespace
 * where a node has only that; a parameter named in fx_node as %p_ (lower case: head.Linear is
 * %p_head_linear_weight), a buffer as %b_ (RoPE's inv_freq feeds a Mul like a weight), a
 * constant the optimizer made (val_7) that stands for no lost parameter, and the bias of a
 * BatchNorm folded into conv (conv.weight_bias: its reader names %p_bn_weight, which the file
 * lacks), reported once. */
static void test_torch2_metadata(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, test_load_onnx(ctx, DIR_ "torch2_meta.onnx", 0, NULL, 0, &g));
    assert_int_equal(node_named(g, "bn")->op, FM_OP_CONV);
    assert_int_equal(node_named(g, "view")->op, FM_OP_RESHAPE);
    assert_int_equal(node_named(g, "head.Linear")->op, FM_OP_GEMM);
    assert_int_equal(node_named(g, "rope/Mul")->op, FM_OP_MUL);
    assert_int_equal(node_named(g, "rope/Add")->op, FM_OP_ADD);
    const struct fm_tensor *inv = fm_graph_tensor(g, fm_graph_find_tensor(g, "rope.inv_freq"));
    const struct fm_tensor *tab = fm_graph_tensor(g, fm_graph_find_tensor(g, "val_7"));
    const struct fm_tensor *bias = fm_graph_tensor(g, fm_graph_find_tensor(g, "conv.weight_bias"));
    assert_int_equal(inv->role, FM_ROLE_BUFFER);
    assert_int_equal(tab->role, FM_ROLE_CONST);
    assert_int_equal(bias->role, FM_ROLE_PARAM);
    struct fm_counts *c = test_count(ctx, g, FM_MODE_TRAIN);
    assert_int_equal(c->params, 4 * 3 * 3 * 3 + 4 + 10 * 256 + 10);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);

    char *out = NULL, *err = NULL;
    assert_int_equal(test_run_cli("count " FM_TEST_DATA "/onnx/" DIR_ "torch2_meta.onnx --format "
                                  "csv", &out, &err), 0);
    const char *said = strstr(err, "the exporter folded parameters of modules");
    assert_non_null(said);
    assert_non_null(strstr(said, "parameters of modules bn into constants"));
    assert_null(strstr(said + 1, "the exporter folded parameters"));
    free(out);
    free(err);
    /* the real thing: ResNet-18's BatchNorms folded into its convolutions are named by their
     * own module paths, though the Conv that absorbed each carries its metadata */
    assert_int_equal(test_run_cli("count " FM_TEST_DATA "/onnx/" DIR_ "resnet18_dyn.onnx "
                                  "--format csv", &out, &err), 0);
    assert_non_null(strstr(err, "folded parameters of modules bn1, layer1.0.bn1, layer1.0.bn2, "
                                "layer1.1.bn1, layer1.1.bn2, layer2.0.bn1, layer2.0.bn2, "
                                "layer2.0.downsample.1, "));
    free(out);
    free(err);
}

/* An allocator that fails its n-th request (malloc or a growing realloc) and every later one. */
struct failing {
    long left;
};
static void *fail_malloc(size_t size, void *user)
{
    struct failing *f = user;
    return f->left-- > 0 ? malloc(size) : NULL;
}
static void *fail_realloc(void *p, size_t size, void *user)
{
    struct failing *f = user;
    return f->left-- > 0 ? realloc(p, size) : NULL;
}
static void fail_free(void *p, void *user)
{
    (void)user;
    free(p);
}

/* Loading a PyTorch 2 file (module names, metadata roles, the fold report, a sequence) with
 * every allocation failing in turn: out of memory is reported as such, nothing leaks or
 * crashes (the sanitizer build checks the leaks), and with enough memory it loads. */
static void test_torch2_allocation_failures(void **state)
{
    (void)state;
    static const char *const files[] = {"torch2_meta.onnx", "torch2_split_seq.onnx",
                                        "llama_dyn.onnx"};
    for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
        char path[512];
        snprintf(path, sizeof(path), FM_TEST_DATA "/onnx/" DIR_ "%s", files[k]);
        size_t len;
        char *data = test_read_file(path, &len);
        bool loaded = false;
        for (long n = 0; n < 100000 && !loaded; n += n < 200 ? 1 : 37) {
            struct failing f = {n};
            struct fm_allocator a = {fail_malloc, fail_realloc, fail_free, &f};
            struct fm_ctx *ctx = NULL;
            if (fm_ctx_new(&a, &ctx) != FM_OK)
                continue;
            struct fm_graph *g = NULL;
            enum fm_status st = fm_onnx_load_buffer(ctx, data, len, files[k], NULL, &g);
            if (st == FM_OK) {
                loaded = true;
                fm_graph_free(g);
            } else if (st != FM_ERR_NOMEM) {
                fail_msg("%s, allocation %ld failing: %s (%s)", files[k], n,
                         fm_status_to_string(st), fm_ctx_error(ctx));
            }
            fm_ctx_free(ctx);
        }
        assert_true(loaded);
        free(data);
    }
}

/* ---- every file trains on the CPU backend (one case per family) ----
 * Each export a manifest says was written runs a few SGD steps at the size it was exported at
 * (batch 2; a symbolic batch bound to 2), one thread (no OpenMP barriers spinning on a shared
 * machine), on one fixed batch: the loss is finite at every step and lower after the last
 * update than before the first. Every file of the corpus learns, the optimized exports whose
 * BatchNorm the exporter folded into the convolutions too (resnet18_dyn, mobilenet_v2_dyn,
 * efficientnet_b0_dyn: more slowly, as a network without normalisation does). The HuggingFace
 * text models start at PyTorch's initialisation (std 0.02), where the logits are nearly uniform
 * and lr 0.01 moves the loss by about 1e-4 a step: they train at lr 0.1 (GPT-2, BERT, RoBERTa,
 * Gemma) or 1 (the Llama-style decoders, Mixtral, T5, whose logits start smallest), so that the
 * fall is 1e-3 or more, far above fp32 rounding of a loss near 7. What each family brings to the
 * CPU backend: Mixtral TopK routing (and an int64 Concat in its optimize=False export), T5
 * integer Where for its relative-position buckets, the TorchScript exports an fp64 attention
 * scale folded at load time. */

struct train_family {
    const char *name;
    double lr;
    int steps;
};

static void train_one(const struct train_family *fam, const char *variant, int *trained)
{
    char path[512], name[128], file[256];
    snprintf(name, sizeof(name), "%s_%s", fam->name, variant);
    snprintf(path, sizeof(path), FM_TEST_DATA "/onnx/" DIR_ "%s.json", name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return;   /* this family has no such export */
    fclose(f);
    char *js = test_read_file(path, NULL);
    bool written = man_str(js, "file", file, sizeof(file));
    free(js);
    if (!written)
        return;   /* the exporter failed (test_torch2_corpus checks its error is recorded) */
    snprintf(path, sizeof(path), FM_TEST_DATA "/onnx/" DIR_ "%s", file);
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_MEASURE);
    o.model = path;
    o.peak = 1e11;   /* no probe */
    if (!strcmp(variant, "dynb"))
        o.load.zoo.batch = 2, o.load.batch_given = true;
    o.run.steps = fam->steps;
    o.run.warmup = 0;
    o.run.threads = 1;
    o.run.per_layer = false;
    o.run.lr = fam->lr;
    struct fm_session *s = NULL;
    if (fm_session_run(ctx, &o, &s) != FM_OK)
        fail_msg("%s: %s", name, fm_ctx_error(ctx));
    const struct fm_measurement *m = s->measurement;
    print_message("%-28s loss %.5f -> %.5f over %d steps, step %.1f ms\n", name, m->loss_first,
                  m->loss_last, fam->steps, m->step_ms_median);
    if (!isfinite(m->loss_first) || !isfinite(m->loss_last))
        fail_msg("%s: the loss is not finite (%g -> %g)", name, m->loss_first, m->loss_last);
    if (!(m->loss_last < m->loss_first))
        fail_msg("%s: the loss did not fall (%.6f -> %.6f)", name, m->loss_first, m->loss_last);
    (*trained)++;
    fm_session_free(s);
    fm_ctx_free(ctx);
}

static void train_family(const struct train_family *fam)
{
    if (!fm_backend_cpu()) {
        print_message("skipped: this build has no CPU backend\n");
        skip();
    }
    static const char *const variants[] = {"dyn", "dynraw", "dynb", "ts"};
    int trained = 0;
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
        train_one(fam, variants[i], &trained);
    assert_true(trained >= 2);   /* every family has at least its two dynamo exports */
}

#define TRAIN_FAMILY(fam, lr, steps)                                                         \
    static void test_torch2_train_##fam(void **state)                                        \
    {                                                                                        \
        (void)state;                                                                         \
        static const struct train_family f = {#fam, lr, steps};                              \
        train_family(&f);                                                                    \
    }
TRAIN_FAMILY(resnet18, 0.01, 2)
TRAIN_FAMILY(mobilenet_v2, 0.01, 2)
TRAIN_FAMILY(efficientnet_b0, 0.01, 2)
TRAIN_FAMILY(convnext_tiny, 0.01, 2)
TRAIN_FAMILY(swin_t, 0.01, 2)
TRAIN_FAMILY(swin_v2_t, 0.01, 2)
TRAIN_FAMILY(vit_b_16, 0.01, 2)
TRAIN_FAMILY(gpt2, 0.1, 2)
TRAIN_FAMILY(bert, 0.1, 2)
TRAIN_FAMILY(roberta, 0.1, 2)
TRAIN_FAMILY(llama, 1.0, 2)
TRAIN_FAMILY(mistral, 1.0, 2)
TRAIN_FAMILY(qwen2, 1.0, 2)
TRAIN_FAMILY(gemma, 0.1, 2)
TRAIN_FAMILY(phi3, 1.0, 2)
TRAIN_FAMILY(mixtral, 1.0, 2)
TRAIN_FAMILY(t5, 1.0, 2)
TRAIN_FAMILY(vit, 0.01, 2)
TRAIN_FAMILY(clip_vision, 0.01, 2)
TRAIN_FAMILY(whisper_encoder, 0.01, 2)

/* Every family of the corpus has a training case above: a new family cannot come untrained. */
static void test_torch2_train_covers_corpus(void **state)
{
    (void)state;
    static const char *const fams[] = {
        "resnet18", "mobilenet_v2", "efficientnet_b0", "convnext_tiny", "swin_t", "swin_v2_t",
        "vit_b_16", "gpt2", "bert", "roberta", "llama", "mistral", "qwen2", "gemma", "phi3",
        "mixtral", "t5", "vit", "clip_vision", "whisper_encoder"};
    static const char *const variants[] = {"_dyn.json", "_dynraw.json", "_dynb.json",
                                           "_ts.json"};
    DIR *d = opendir(FM_TEST_DATA "/onnx/" DIR_);
    assert_non_null(d);
    struct dirent *e;
    int manifests = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        bool known = false;
        for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]) && !known; v++) {
            size_t vn = strlen(variants[v]);
            for (size_t k = 0; k < sizeof(fams) / sizeof(fams[0]) && !known; k++) {
                size_t fn = strlen(fams[k]);
                known = n == fn + vn && !strncmp(e->d_name, fams[k], fn) &&
                        !strcmp(e->d_name + fn, variants[v]);
            }
        }
        if (n > 5 && !strcmp(e->d_name + n - 5, ".json")) {
            manifests++;
            if (!known)
                fail_msg("%s: a manifest of no family with a training case", e->d_name);
        }
    }
    closedir(d);
    assert_true(manifests >= 60);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_torch2_corpus),
        cmocka_unit_test(test_torch2_batchnorm),
        cmocka_unit_test(test_torch2_by_module),
        cmocka_unit_test(test_torch2_split_to_sequence),
        cmocka_unit_test(test_torch2_metadata),
        cmocka_unit_test(test_torch2_allocation_failures),
        cmocka_unit_test(test_torch2_train_covers_corpus),
        cmocka_unit_test(test_torch2_train_resnet18),
        cmocka_unit_test(test_torch2_train_mobilenet_v2),
        cmocka_unit_test(test_torch2_train_efficientnet_b0),
        cmocka_unit_test(test_torch2_train_convnext_tiny),
        cmocka_unit_test(test_torch2_train_swin_t),
        cmocka_unit_test(test_torch2_train_swin_v2_t),
        cmocka_unit_test(test_torch2_train_vit_b_16),
        cmocka_unit_test(test_torch2_train_gpt2),
        cmocka_unit_test(test_torch2_train_bert),
        cmocka_unit_test(test_torch2_train_roberta),
        cmocka_unit_test(test_torch2_train_llama),
        cmocka_unit_test(test_torch2_train_mistral),
        cmocka_unit_test(test_torch2_train_qwen2),
        cmocka_unit_test(test_torch2_train_gemma),
        cmocka_unit_test(test_torch2_train_phi3),
        cmocka_unit_test(test_torch2_train_mixtral),
        cmocka_unit_test(test_torch2_train_t5),
        cmocka_unit_test(test_torch2_train_vit),
        cmocka_unit_test(test_torch2_train_clip_vision),
        cmocka_unit_test(test_torch2_train_whisper_encoder),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
