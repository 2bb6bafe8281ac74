/* libFuzzer target: cluster files (fm_cluster_parse, docs/clusters.md). Checks, on top of the
 * sanitizers: a rejected file leaves a message and a zeroed cluster; an accepted one has a name,
 * GPUs per node in range and finite positive bandwidths, places groups of any size on a link
 * with a finite positive bus bandwidth, and survives a round trip through
 * fm_cluster_write_json (what `probe --nccl` would write must load again). */
#include "fuzz_common.h"
#include "../src/analysis/plan.h"

#include <math.h>

int fm_fuzz_cluster(const uint8_t *data, size_t size)
{
    struct fm_ctx *ctx = NULL;
    char *text = NULL;
    size_t text_len = 0;
    if (fm_ctx_new(NULL, &ctx))
        return 0;
    struct fm_cluster c;
    enum fm_status st = fm_cluster_parse(ctx, (const char *)data, size, "fuzz.json", &c);
    fuzz_check_status(ctx, st);
    if (st) {
        FUZZ_CHECK(c.name[0] == 0 && c.gpus_per_node == 0, "a rejected file left a cluster");
        goto out;
    }
    FUZZ_CHECK(c.name[0], "a cluster without a name was accepted");
    FUZZ_CHECK(c.gpus_per_node >= 1 && c.gpus_per_node <= 65536, "gpus_per_node %d",
               c.gpus_per_node);
    FUZZ_CHECK(isfinite(c.intra_bw) && c.intra_bw > 0, "intra bandwidth %g", c.intra_bw);
    FUZZ_CHECK(isfinite(c.inter_bw) && c.inter_bw > 0, "inter bandwidth %g", c.inter_bw);
    FUZZ_CHECK(isfinite(c.intra_lat_s) && c.intra_lat_s >= 0, "intra latency %g",
               c.intra_lat_s);
    FUZZ_CHECK(isfinite(c.inter_lat_s) && c.inter_lat_s >= 0, "inter latency %g",
               c.inter_lat_s);
    static const int sizes[] = {1, 2, 3, 8, 64, 4096};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        struct fm_group_link l;
        fm_group_link(&c, sizes[i], 1 + (int64_t)i * 3, 0.7, &l);
        FUZZ_CHECK(isfinite(l.busbw) && l.busbw > 0, "bus bandwidth %g", l.busbw);
        double t = fm_coll_time(FM_COLL_ALLREDUCE, 1e9, sizes[i], l.busbw, l.lat);
        FUZZ_CHECK(isfinite(t) && t >= 0, "all-reduce time %g", t);
    }
    FILE *f = open_memstream(&text, &text_len);
    if (!f)
        goto out;
    fm_cluster_write_json(f, &c);
    fclose(f);
    struct fm_cluster d;
    st = fm_cluster_parse(ctx, text, text_len, "round trip", &d);
    FUZZ_CHECK(st == FM_OK, "a written cluster does not load again: %s", fm_ctx_error(ctx));
    FUZZ_CHECK(strcmp(d.name, c.name) == 0 && d.gpus_per_node == c.gpus_per_node &&
                   d.max_nodes == c.max_nodes,
               "the round trip changed the cluster");
    FUZZ_CHECK(fabs(d.intra_bw - c.intra_bw) <= 1e-12 * c.intra_bw &&
                   fabs(d.inter_bw - c.inter_bw) <= 1e-12 * c.inter_bw,
               "the round trip changed a bandwidth");
out:
    free(text);
    fm_ctx_free(ctx);
    return 0;
}

FUZZ_ENTRY(fm_fuzz_cluster)
