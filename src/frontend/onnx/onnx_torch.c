/* What PyTorch 2's exporter writes beside the graph, read from each node's metadata
 * (NodeProto.metadata_props, ox_node_meta): the module path of every node
 * (pkg.torch.onnx.name_scopes, else namespace), which layers are then named after, and the
 * exported program's node (pkg.torch.onnx.fx_node), whose placeholders say which initializer was
 * a parameter (%p_), a buffer (%b_) or a lifted constant (%c_), and which parameters the
 * exporter's optimizer folded into constants the file keeps under other names or not at all.
 * It makes no op and decides no role itself (onnx_build.c asks it), and renames the layers once
 * all are built. A file without this metadata (PyTorch 1.x, other exporters) gets nothing from
 * here. */
#include "onnx_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A state-dict key's character as torch.export names the placeholder: dots made underscores,
 * letters lower case ("bert.embeddings.LayerNorm.weight" reads
 * %p_bert_embeddings_layernorm_weight). */
static char fx_char(char c)
{
    if (c == '.')
        return '_';
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Whether some initializer's name, its dots made underscores, is tok (tlen bytes). */
static bool init_mangles_to(const Onnx__GraphProto *gp, const char *tok, size_t tlen)
{
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const char *nm = gp->initializer[i]->name;
        if (!nm || strlen(nm) != tlen)
            continue;
        size_t k = 0;
        while (k < tlen && fx_char(nm[k]) == tok[k])
            k++;
        if (k == tlen)
            return true;
    }
    return false;
}

/* What PyTorch 2's exporter says an initializer was: its readers' metadata
 * (pkg.torch.onnx.fx_node) name the exported program's inputs, "%p_<path>" for a parameter,
 * "%b_<path>" for a buffer, "%c_<path>" for a lifted constant, the path the state-dict key as
 * fx_char writes it. 'p', 'b', 'c', or 0 when no reader says. */
char ox_fx_kind(const struct ox *ox, const struct ox_name *e)
{
    char mangled[400];
    size_t n = strlen(e->name);
    if (n + 1 > sizeof(mangled))
        return 0;
    for (size_t i = 0; i <= n; i++)
        mangled[i] = fx_char(e->name[i]);
    for (uint32_t u = 0; u < e->uses; u++) {
        const struct ox_use *use = &ox->uses[e->first_use + u];
        if (use->node < 0)
            continue;
        const char *v;
        size_t len;
        if (!ox_node_meta(ox->gp->node[use->node], "pkg.torch.onnx.fx_node", &v, &len))
            continue;
        for (size_t i = 0; i + 3 + n <= len; i++) {
            if (v[i] != '%' || v[i + 2] != '_' || memcmp(v + i + 3, mangled, n) != 0)
                continue;
            char end = i + 3 + n < len ? v[i + 3 + n] : 0;
            if (end == '_' || (end >= 'a' && end <= 'z') || (end >= '0' && end <= '9') ||
                (end >= 'A' && end <= 'Z'))
                continue;   /* a longer name that starts the same */
            if (v[i + 1] == 'p' || v[i + 1] == 'b' || v[i + 1] == 'c')
                return v[i + 1];
        }
    }
    return 0;
}

/* For an initializer no reader names (ox_fx_kind 0) in a file whose readers carry PyTorch 2's
 * metadata: 1 when some reader's fx_node reads a parameter the file has no initializer for
 * (the initializer is that parameter, transposed or folded by the exporter's optimizer:
 * "val_12" for a Linear's weight, "conv1.weight_bias" for the BatchNorm folded into conv1),
 * 0 when the readers have metadata and none does (a table the optimizer evaluated: RoPE's
 * cos and sin, Swin's gathered position bias, a causal mask), -1 when no reader has metadata. */
int ox_stands_for_lost_param(const struct ox *ox, const struct ox_name *e)
{
    int seen = -1;
    for (uint32_t u = 0; u < e->uses; u++) {
        const struct ox_use *use = &ox->uses[e->first_use + u];
        if (use->node < 0)
            continue;
        const char *v;
        size_t len;
        if (!ox_node_meta(ox->gp->node[use->node], "pkg.torch.onnx.fx_node", &v, &len))
            continue;
        seen = 0;
        for (size_t k = 0; k + 3 < len; k++) {
            if (v[k] != '%' || v[k + 1] != 'p' || v[k + 2] != '_')
                continue;
            size_t a = k + 3, b = a;
            while (b < len && (v[b] == '_' || (v[b] >= 'a' && v[b] <= 'z') ||
                               (v[b] >= 'A' && v[b] <= 'Z') || (v[b] >= '0' && v[b] <= '9')))
                b++;
            if (b > a && !init_mangles_to(ox->gp, v + a, b - a))
                return 1;
        }
    }
    return seen;
}

/* The quoted items of a Python list repr, "['', 'bn1', 'relu_1']": the k-th from the end
 * (k = 0 the last) into buf; false when there are not that many or one does not fit. */
static bool list_item_from_end(const char *v, size_t len, int k, char *buf, size_t size)
{
    const char *start[64];
    size_t lens[64];
    int n = 0;
    for (size_t i = 0; i < len && n < 64; i++) {
        if (v[i] != '\'' && v[i] != '"')
            continue;
        char q = v[i];
        size_t j = i + 1;
        while (j < len && v[j] != q)
            j++;
        if (j >= len)
            return false;
        start[n] = v + i + 1;
        lens[n++] = j - i - 1;
        i = j;
    }
    if (k >= n || lens[n - 1 - k] >= size)
        return false;
    memcpy(buf, start[n - 1 - k], lens[n - 1 - k]);
    buf[lens[n - 1 - k]] = 0;
    return true;
}

/* Whether the len bytes at v contain the string s. */
static bool bytes_have(const char *v, size_t len, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= len; i++) {
        if (!memcmp(v + i, s, n))
            return true;
    }
    return false;
}

bool ox_node_module(const Onnx__NodeProto *node, char *buf, size_t size)
{
    const char *v;
    size_t len;
    /* onnxscript's optimizer folds a BatchNorm into the Conv before it and gives the Conv the
     * BatchNorm's metadata: the layer is the convolution whose weight it reads ("conv1.weight") */
    if (ox_node_meta(node, "pkg.onnxscript.rewriter.rule_name", &v, &len) &&
        bytes_have(v, len, "FuseBatchNormIntoConv") && node->n_input >= 2 && node->input[1]) {
        const char *w = node->input[1];
        size_t wl = strlen(w);
        if (wl > 7 && wl - 7 < size && !strcmp(w + wl - 7, ".weight")) {
            memcpy(buf, w, wl - 7);
            buf[wl - 7] = 0;
            return true;
        }
    }
    if (ox_node_meta(node, "pkg.torch.onnx.name_scopes", &v, &len)) {
        /* ['', module, submodule ..., fx node]: the innermost module, or at the top the node */
        if (list_item_from_end(v, len, 1, buf, size) && *buf)
            return true;
        return list_item_from_end(v, len, 0, buf, size) && *buf;
    }
    if (ox_node_meta(node, "namespace", &v, &len)) {
        /* ": Model/path: Class/.../fx_node: aten.op": the path of the segment before the last */
        size_t seg_start[64], seg_end[64];
        int n = 0;
        size_t s0 = 0;
        for (size_t i = 0; i <= len && n < 64; i++) {
            if (i == len || v[i] == '/') {
                seg_start[n] = s0;
                seg_end[n++] = i;
                s0 = i + 1;
            }
        }
        for (int k = n >= 3 ? n - 2 : n - 1; k >= 1 && k < n; k--) {
            size_t a = seg_start[k], b = seg_start[k];
            while (b < seg_end[k] && v[b] != ':')
                b++;
            if (b > a && b - a < size) {
                memcpy(buf, v + a, b - a);
                buf[b - a] = 0;
                return true;
            }
            break;
        }
    }
    return false;
}

/* The module that owns placeholder tok ("bn1_weight": "bn1"): the longest module path of
 * node's name_scopes that, as fx_char writes it and followed by '_', starts tok. */
static bool token_module(const Onnx__NodeProto *node, const char *tok, size_t tlen, char *buf,
                         size_t size)
{
    const char *v;
    size_t len, best = 0;
    if (!ox_node_meta(node, "pkg.torch.onnx.name_scopes", &v, &len))
        return false;
    for (size_t i = 0; i < len; i++) {
        if (v[i] != '\'')
            continue;
        size_t j = i + 1;
        while (j < len && v[j] != '\'')
            j++;
        size_t n = j - i - 1, k = 0;
        while (k < n && k < tlen && fx_char(v[i + 1 + k]) == tok[k])
            k++;
        if (n > best && k == n && n < tlen && tok[n] == '_' && n < size) {
            memcpy(buf, v + i + 1, n);
            buf[n] = 0;
            best = n;
        }
        i = j;
    }
    return best > 0;
}

void ox_folded_params(struct ox *ox)
{
    const Onnx__GraphProto *gp = ox->gp;
    char mods[16][160];
    int n_mods = 0;
    size_t n_lost = 0;
    char listed[1200] = "";
    size_t used = 0;
    for (size_t i = 0; i < gp->n_node; i++) {
        const char *v;
        size_t len;
        if (!ox_node_meta(gp->node[i], "pkg.torch.onnx.fx_node", &v, &len))
            continue;
        for (size_t k = 0; k + 3 < len; k++) {
            if (v[k] != '%' || v[k + 1] != 'p' || v[k + 2] != '_')
                continue;
            size_t a = k + 3, b = a;
            while (b < len && (v[b] == '_' || (v[b] >= 'a' && v[b] <= 'z') ||
                               (v[b] >= 'A' && v[b] <= 'Z') || (v[b] >= '0' && v[b] <= '9')))
                b++;
            if (b == a || init_mangles_to(gp, v + a, b - a))
                continue;
            n_lost++;
            char mod[160];
            if (!token_module(gp->node[i], v + a, b - a, mod, sizeof(mod)) &&
                !ox_node_module(gp->node[i], mod, sizeof(mod)))
                snprintf(mod, sizeof(mod), "%.*s", (int)(b - a), v + a);
            bool seen = false;
            for (int m = 0; m < n_mods && !seen; m++)
                seen = !strcmp(mods[m], mod);
            if (seen)
                continue;
            if (n_mods < 16)
                snprintf(mods[n_mods++], sizeof(mods[0]), "%s", mod);
            if (used + strlen(mod) + 8 < sizeof(listed) && n_mods <= 12)
                used += (size_t)snprintf(listed + used, sizeof(listed) - used, "%s%s",
                                         used ? ", " : "", mod);
            else if (used + 6 < sizeof(listed) && !strstr(listed, " ..."))
                used += (size_t)snprintf(listed + used, sizeof(listed) - used, " ...");
        }
    }
    if (n_lost)
        fm_log(ox->ctx, "%s: the exporter folded parameters of modules %s into constants "
               "(their names, and for some their sizes, are lost): the parameter count is not "
               "the module's; torch.onnx.export(..., dynamo=True, optimize=False) keeps them "
               "(docs/pytorch.md)", ox->src, listed);
}

const char *ox_layer_name(const struct ox *ox, const Onnx__NodeProto *node, char *buf,
                          size_t size)
{
    char mod[400];
    if (ox->scope || !ox_node_module(node, mod, sizeof(mod)))
        return NULL;
    snprintf(buf, size, "%s/%s", mod, node->op_type ? node->op_type : "?");
    return buf;
}

enum fm_status ox_note_moduled(struct ox *ox, fm_nid id)
{
    if (ox->n_moduled == ox->moduled_cap) {
        size_t cap = ox->moduled_cap ? 2 * ox->moduled_cap : 256;
        fm_nid *p = fm_realloc(ox->ctx, ox->moduled, cap * sizeof(*p));
        if (!p)
            return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
        ox->moduled = p;
        ox->moduled_cap = cap;
    }
    ox->moduled[ox->n_moduled++] = id;
    return FM_OK;
}

struct named_node {
    const char *name;
    fm_nid id;
};

/* Names compared whole, then node ids (the file's order). */
static int by_name_then_id(const void *a, const void *b)
{
    const struct named_node *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* Length of the module part of "MODULE/OpType" (up to the last '/'). */
static size_t module_len(const char *name)
{
    const char *s = strrchr(name, '/');
    return s ? (size_t)(s - name) : strlen(name);
}

enum fm_status ox_module_names(struct ox *ox)
{
    size_t n = ox->n_moduled;
    if (!n)
        return FM_OK;
    struct named_node *v = fm_alloc(ox->ctx, n * sizeof(*v));
    if (!v)
        return fm_error(ox->ctx, FM_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        v[i] = (struct named_node){fm_graph_node(ox->g, ox->moduled[i])->name, ox->moduled[i]};
    /* "MODULE/OpType" sorts every module's nodes together, and each op type's within it */
    qsort(v, n, sizeof(*v), by_name_then_id);
    enum fm_status st = FM_OK;
    for (size_t i = 0; i < n && !st;) {
        size_t ml = module_len(v[i].name), j = i;
        while (j < n && module_len(v[j].name) == ml && !strncmp(v[j].name, v[i].name, ml))
            j++;
        char buf[512];
        if (j - i == 1) {   /* one op: the module's own name */
            snprintf(buf, sizeof(buf), "%.*s", (int)ml, v[i].name);
            st = fm_graph_set_node_name(ox->g, v[i].id, buf);
        } else {
            for (size_t k = i; k < j && !st;) {
                size_t e = k + 1;
                while (e < j && !strcmp(v[e].name, v[k].name))
                    e++;
                for (size_t r = k + 1; r < e && !st; r++) {
                    snprintf(buf, sizeof(buf), "%s_%zu", v[k].name, r - k + 1);
                    st = fm_graph_set_node_name(ox->g, v[r].id, buf);
                }
                k = e;
            }
        }
        i = j;
    }
    fm_dealloc(ox->ctx, v);
    return st;
}
