/* Clusters for the parallel plan (src/analysis/plan*.c): GPUs per node (the NVLink domain), the
 * link inside a node and the network between nodes, each as the bandwidth one GPU has in one
 * direction and a latency per message step. Built-ins with their datasheets, and cluster files
 * (docs/clusters.md) read with the project's JSON reader. Internal to the library. */
#ifndef FM_HW_CLUSTER_H
#define FM_HW_CLUSTER_H

#include "../core/internal.h"

#include <stdio.h>

struct fm_cluster {
    char name[64];
    char device[64];          /* the device-table name of its GPU ("h100") */
    int gpus_per_node;        /* GPUs that share the intra-node link (the NVLink domain) */
    int max_nodes;            /* 0: no limit */
    char intra_link[64];      /* "NVLink 4 + NVSwitch" */
    double intra_bw;          /* bytes/s per GPU, one direction */
    double intra_lat_s;       /* per message step */
    char inter_link[64];      /* "InfiniBand NDR 400 Gb/s per GPU" */
    double inter_bw;          /* bytes/s per GPU, one direction */
    double inter_lat_s;
    char source[320];
};

size_t fm_cluster_builtin_count(void);
const struct fm_cluster *fm_cluster_builtin_get(size_t i);
/* A built-in by name (case-insensitive): FM_ERR_NOT_FOUND naming the nearest. */
enum fm_status fm_cluster_builtin(struct fm_ctx *ctx, const char *name, struct fm_cluster *out);
/* A cluster file's text (n bytes; path names it in messages): FM_ERR_PARSE with line and
 * column for a malformed file, a missing field, a wrong type or a value out of range. */
enum fm_status fm_cluster_parse(struct fm_ctx *ctx, const char *text, size_t n, const char *path,
                                struct fm_cluster *out);
/* A built-in name, or else a path to a cluster file. */
enum fm_status fm_cluster_load(struct fm_ctx *ctx, const char *name_or_path,
                               struct fm_cluster *out);
/* Writes c as a cluster file that fm_cluster_parse reads back to the same figures. */
void fm_cluster_write_json(FILE *f, const struct fm_cluster *c);

#endif
