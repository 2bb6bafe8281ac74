/* Collective communication time for the parallel plan: NCCL's bus-bandwidth model (NVIDIA,
 * nccl-tests doc/PERFORMANCE.md): a collective of S bytes over n ranks takes S x F(n) / busbw,
 * F = 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all, plus a
 * latency per message step. Which link a group uses follows from where its ranks sit. It does
 * not model NCCL's protocol choice (LL, LL128, Simple), NVLink SHARP or in-network reduction,
 * or contention between groups that share a link at the same moment. */
#include "plan.h"

#include <math.h>

const char *fm_coll_name(enum fm_coll c)
{
    static const char *const names[] = {"all-reduce", "all-gather", "reduce-scatter",
                                        "all-to-all", "send/recv"};
    return (unsigned)c < FM_COLL_COUNT ? names[c] : "?";
}

double fm_coll_busbw_factor(enum fm_coll c, int n)
{
    if (n <= 1)
        return c == FM_COLL_P2P ? 1.0 : 0.0;
    double f = (double)(n - 1) / (double)n;
    return c == FM_COLL_ALLREDUCE ? 2.0 * f : c == FM_COLL_P2P ? 1.0 : f;
}

double fm_coll_steps(enum fm_coll c, int n)
{
    if (c == FM_COLL_P2P)
        return 1.0;
    if (n <= 1)
        return 0.0;
    if (c == FM_COLL_ALLREDUCE) {
        double ring = 2.0 * (n - 1), tree = 2.0 * ceil(log2((double)n));
        return ring < tree ? ring : tree;
    }
    return (double)(n - 1);
}

double fm_coll_time(enum fm_coll c, double bytes, int n, double busbw, double lat)
{
    if (bytes <= 0 || (n <= 1 && c != FM_COLL_P2P) || !(busbw > 0))
        return 0.0;
    return bytes * fm_coll_busbw_factor(c, n) / busbw + fm_coll_steps(c, n) * lat;
}

/* Ranks are numbered node by node. A group of n ranks `stride` apart fits in one node when it
 * spans no more than a node; across nodes, each node holds per_node of its ranks, and NCCL's
 * rings leave each node through as many NICs (one per GPU), so the bus bandwidth of a ring
 * collective is the smaller of the NVLink figure and per_node NICs. An all-to-all cannot
 * spread one GPU's traffic over its node's NICs that way (every GPU sends its own share to
 * every other node at once), so it keeps the NVLink and one NIC apart (fm_alltoall_time). */
void fm_group_link(const struct fm_cluster *c, int n, int64_t stride, double ppp_comm,
                   struct fm_group_link *out)
{
    int64_t span = (int64_t)n * stride;
    int64_t gpn = c->gpus_per_node;
    if (n <= 1 || span <= gpn) {
        out->inter = false;
        out->per_node = n;
        out->busbw = c->intra_bw * ppp_comm;
        out->lat = c->intra_lat_s;
        out->intra_bw = out->busbw;
        out->nic_bw = 0;
        return;
    }
    int per_node = stride >= gpn ? 1 : (int)(gpn / stride);
    if (per_node > n)
        per_node = n;
    out->inter = true;
    out->per_node = per_node;
    double nic = c->inter_bw * per_node;
    out->busbw = (nic < c->intra_bw ? nic : c->intra_bw) * ppp_comm;
    out->lat = c->inter_lat_s;
    out->intra_bw = c->intra_bw * ppp_comm;
    out->nic_bw = c->inter_bw * ppp_comm;
}

double fm_alltoall_time(const struct fm_group_link *l, double bytes, int n)
{
    if (!l->inter)
        return fm_coll_time(FM_COLL_ALLTOALL, bytes, n, l->busbw, 0.0);
    if (bytes <= 0 || n <= 1 || !(l->nic_bw > 0) || !(l->intra_bw > 0))
        return 0.0;
    double local = bytes * (double)(l->per_node - 1) / (double)n / l->intra_bw;
    double remote = bytes * (double)(n - l->per_node) / (double)n / l->nic_bw;
    return local > remote ? local : remote;
}
