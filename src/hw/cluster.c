/* Clusters: the built-in systems with their datasheets, and cluster files (docs/clusters.md).
 * Bandwidths are per GPU and per direction, the figure NCCL's bus bandwidth is compared with
 * (NVIDIA's datasheets print NVLink bidirectional: 900 GB/s for NVLink 4 is 450 GB/s each
 * way). Latencies are per message step of a collective; the built-ins' are assumptions of the
 * order NCCL's own tuning model uses (a few microseconds), not datasheet figures. It models no
 * rail-optimized or oversubscribed fabric: every GPU gets its NIC's bandwidth to any node. */
#include "cluster.h"
#include "../core/json_read.h"
#include "../core/jsonw.h"

#include <math.h>
#include <string.h>
#include <strings.h>

#ifdef FM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

#define GBPS 1e9   /* GB/s */

static const struct fm_cluster builtins[] = {
    {"dgx-a100", "a100", 8, 0, "NVLink 3 + NVSwitch (600 GB/s bidirectional)", 300 * GBPS,
     2e-6, "InfiniBand HDR 200 Gb/s per GPU (8 ConnectX-6)", 25 * GBPS, 5e-6,
     "NVIDIA DGX A100 datasheet: 8x A100 80GB, NVLink 3 600 GB/s per GPU through NVSwitch, "
     "8x 200 Gb/s HDR InfiniBand for compute"},
    {"dgx-h100", "h100", 8, 0, "NVLink 4 + NVSwitch (900 GB/s bidirectional)", 450 * GBPS,
     2e-6, "InfiniBand NDR 400 Gb/s per GPU (8 ConnectX-7)", 50 * GBPS, 5e-6,
     "NVIDIA DGX H100 datasheet: 8x H100 SXM5, NVLink 4 900 GB/s per GPU through 4 NVSwitches, "
     "8x 400 Gb/s ConnectX-7 (NDR InfiniBand) for compute"},
    {"hgx-h200", "h200", 8, 0, "NVLink 4 + NVSwitch (900 GB/s bidirectional)", 450 * GBPS,
     2e-6, "InfiniBand NDR 400 Gb/s per GPU (8 ConnectX-7)", 50 * GBPS, 5e-6,
     "NVIDIA HGX H200 datasheet: 8x H200 SXM 141GB, NVLink 4 900 GB/s per GPU; DGX H200: "
     "8x 400 Gb/s ConnectX-7 for compute"},
    /* DeepSeek-V3's cluster as its report gives it: the bandwidths are the report's own (160
     * GB/s of NVLink against 200 each way on the datasheet; IB at its 400 Gb/s line rate) */
    {"hgx-h800", "h800", 8, 0, "NVLink 4 + NVSwitch (H800: 400 GB/s bidirectional)", 160 * GBPS,
     2e-6, "InfiniBand, 50 GB/s per GPU", 50 * GBPS, 5e-6,
     "DeepSeek-AI 2024, DeepSeek-V3 Technical Report (arXiv 2412.19437): section 3.1, 2,048 "
     "H800s, 8 a node over NVLink and NVSwitch, InfiniBand (IB) between nodes; 3.2.2, NVLink "
     "offers 160 GB/s, IB 50 GB/s (per GPU; the H800's NVLink is 400 GB/s bidirectional, 200 "
     "each way)"},
    {"dgx-b200", "b200", 8, 0, "NVLink 5 + NVSwitch (1.8 TB/s bidirectional)", 900 * GBPS,
     2e-6, "400 Gb/s per GPU (8 ConnectX-7)", 50 * GBPS, 5e-6,
     "NVIDIA DGX B200 datasheet: 8x B200, NVLink 5 1.8 TB/s per GPU (14.4 TB/s in all), "
     "8x 400 Gb/s ConnectX-7 (4 OSFP ports) for compute"},
    {"gb200-nvl72", "gb200", 72, 0, "NVLink 5 switch system, 72 GPUs (1.8 TB/s bidirectional)",
     900 * GBPS, 3e-6, "400 Gb/s per GPU (ConnectX-7)", 50 * GBPS, 5e-6,
     "NVIDIA GB200 NVL72 datasheet: 72 Blackwell GPUs in one NVLink domain, 1.8 TB/s per GPU "
     "(130 TB/s in all); one 400 Gb/s ConnectX-7 per GPU between racks"},
};

size_t fm_cluster_builtin_count(void)
{
    return sizeof(builtins) / sizeof(builtins[0]);
}

const struct fm_cluster *fm_cluster_builtin_get(size_t i)
{
    return i < fm_cluster_builtin_count() ? &builtins[i] : NULL;
}

enum fm_status fm_cluster_builtin(struct fm_ctx *ctx, const char *name, struct fm_cluster *out)
{
    const char *names[sizeof(builtins) / sizeof(builtins[0])];
    for (size_t i = 0; i < fm_cluster_builtin_count(); i++) {
        names[i] = builtins[i].name;
        if (name && strcasecmp(name, builtins[i].name) == 0) {
            *out = builtins[i];
            return FM_OK;
        }
    }
    const char *near = name ? fm_nearest_name(name, names, fm_cluster_builtin_count()) : NULL;
    return fm_error(ctx, FM_ERR_NOT_FOUND,
                    "unknown cluster '%s'%s%s%s (built-in: dgx-a100, dgx-h100, hgx-h200, "
                    "hgx-h800, dgx-b200, gb200-nvl72; or a cluster file, docs/clusters.md)",
                    name ? name : "(none)", near ? "; did you mean '" : "", near ? near : "",
                    near ? "'?" : "");
}

static void put_link(struct fm_jw *w, const char *key, const char *link, double bw, double lat)
{
    fm_jw_object(w, key, false);
    fm_jw_string(w, "link", link);
    fm_jw_double(w, "bandwidth_GBps", bw / GBPS);
    fm_jw_double(w, "latency_us", lat * 1e6);
    fm_jw_end(w);
}

void fm_cluster_write_json(FILE *f, const struct fm_cluster *c)
{
    struct fm_jw w;
    fm_jw_init(&w, f);
    fm_jw_object(&w, NULL, false);
    fm_jw_string(&w, "cluster", c->name);
    fm_jw_string(&w, "device", c->device);
    fm_jw_i64(&w, "gpus_per_node", c->gpus_per_node);
    fm_jw_i64(&w, "max_nodes", c->max_nodes);
    put_link(&w, "intra_node", c->intra_link, c->intra_bw, c->intra_lat_s);
    put_link(&w, "inter_node", c->inter_link, c->inter_bw, c->inter_lat_s);
    fm_jw_string(&w, "source", c->source);
    fm_jw_end(&w);
    fm_jw_finish(&w);
}

#ifdef FM_HAVE_CJSON
static enum fm_status read_link(struct fm_json_doc *doc, const cJSON *obj, const char *key,
                                char *link, size_t link_size, double *bw, double *lat)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return fm_json_fail(doc, NULL, "missing \"%s\" (an object: link, bandwidth_GBps, "
                                       "latency_us)", key);
    if (!cJSON_IsObject(v))
        return fm_json_fail(doc, v, "\"%s\" must be an object, not %s", key,
                            fm_json_type_name(v));
    enum fm_status st = FM_OK;
    *lat = 0;
    bool have_bw = false;
    for (const cJSON *e = v->child; e && !st; e = e->next) {
        if (strcmp(e->string, "link") == 0) {
            st = fm_json_string_to(doc, e, true, link, link_size);
        } else if (strcmp(e->string, "bandwidth_GBps") == 0) {
            st = fm_json_number(doc, e, "GB/s", "", bw);
            if (!st && !(*bw > 0))
                st = fm_json_fail(doc, e, "%s.bandwidth_GBps must be above 0", key);
            if (!st && *bw > 1e6)
                st = fm_json_fail(doc, e, "%s.bandwidth_GBps %g is above 1 PB/s per GPU; the "
                                          "unit is GB/s", key, *bw);
            *bw *= GBPS;
            have_bw = true;
        } else if (strcmp(e->string, "latency_us") == 0) {
            st = fm_json_number(doc, e, "us", "", lat);
            if (!st && *lat > 1e6)
                st = fm_json_fail(doc, e, "%s.latency_us %g is above one second", key, *lat);
            *lat *= 1e-6;
        } else {
            st = fm_json_fail(doc, e, "unknown field \"%s\" in \"%s\" (link, bandwidth_GBps, "
                                      "latency_us)", e->string, key);
        }
    }
    if (!st && !have_bw)
        st = fm_json_fail(doc, v, "\"%s\" has no bandwidth_GBps", key);
    return st;
}
#endif

enum fm_status fm_cluster_parse(struct fm_ctx *ctx, const char *text, size_t n, const char *path,
                                struct fm_cluster *out)
{
    memset(out, 0, sizeof(*out));
#ifndef FM_HAVE_CJSON
    (void)text;
    (void)n;
    return fm_error(ctx, FM_ERR_UNSUPPORTED, "%s: this build reads no JSON (built without cJSON)",
                    path);
#else
    struct fm_json_doc doc;
    enum fm_status st = fm_json_parse(ctx, path, text, n, true,
                                      "a cluster file is one object (docs/clusters.md)", &doc);
    if (st)
        return st;
    const cJSON *root = doc.root;
    if (!cJSON_IsObject(root)) {
        st = fm_json_fail(&doc, root, "a cluster file is one object, not %s",
                          fm_json_type_name(root));
        goto out;
    }
    bool have_name = false, have_gpn = false;
    for (const cJSON *e = root->child; e && !st; e = e->next) {
        const char *k = e->string;
        if (strcmp(k, "cluster") == 0) {
            st = fm_json_string_to(&doc, e, false, out->name, sizeof(out->name));
            have_name = true;
        } else if (strcmp(k, "device") == 0) {
            st = fm_json_string_to(&doc, e, true, out->device, sizeof(out->device));
        } else if (strcmp(k, "gpus_per_node") == 0) {
            st = fm_json_count(&doc, e, "GPUs", &out->gpus_per_node);
            if (!st && (out->gpus_per_node < 1 || out->gpus_per_node > 65536))
                st = fm_json_fail(&doc, e, "gpus_per_node must be between 1 and 65536, got %d",
                                  out->gpus_per_node);
            have_gpn = true;
        } else if (strcmp(k, "max_nodes") == 0) {
            st = fm_json_count(&doc, e, "nodes", &out->max_nodes);
        } else if (strcmp(k, "intra_node") == 0 || strcmp(k, "inter_node") == 0) {
            /* read below, in a fixed order */
        } else if (strcmp(k, "source") == 0) {
            st = fm_json_string_to(&doc, e, true, out->source, sizeof(out->source));
        } else {
            st = fm_json_fail(&doc, e, "unknown field \"%s\" (cluster, device, gpus_per_node, "
                                       "max_nodes, intra_node, inter_node, source)", k);
        }
    }
    if (!st && !have_name)
        st = fm_json_fail(&doc, root, "missing \"cluster\" (the cluster's name)");
    if (!st && !have_gpn)
        st = fm_json_fail(&doc, root, "missing \"gpus_per_node\"");
    if (!st)
        st = read_link(&doc, root, "intra_node", out->intra_link, sizeof(out->intra_link),
                       &out->intra_bw, &out->intra_lat_s);
    if (!st)
        st = read_link(&doc, root, "inter_node", out->inter_link, sizeof(out->inter_link),
                       &out->inter_bw, &out->inter_lat_s);
out:
    fm_json_release(&doc);
    if (st)
        memset(out, 0, sizeof(*out));
    return st;
#endif
}

enum fm_status fm_cluster_load(struct fm_ctx *ctx, const char *name_or_path,
                               struct fm_cluster *out)
{
    for (size_t i = 0; i < fm_cluster_builtin_count(); i++) {
        if (strcasecmp(name_or_path, builtins[i].name) == 0) {
            *out = builtins[i];
            return FM_OK;
        }
    }
    FILE *probe = fopen(name_or_path, "rb");
    if (!probe)
        return fm_cluster_builtin(ctx, name_or_path, out);
    fclose(probe);
    char *text = NULL;
    size_t len = 0;
    enum fm_status st = fm_read_text(ctx, name_or_path, "cluster file", 16, &text, &len);
    if (!st)
        st = fm_cluster_parse(ctx, text, len, name_or_path, out);
    fm_dealloc(ctx, text);
    return st;
}
