/* The parallel training plan's internals (src/analysis/plan*.c): the resolved plan, the
 * per-GPU figures it predicts, NCCL's collective formulas, the model table the plan reads, and
 * the search. Internal to the library; the public face is fm_plan_* in flopmeter.h. */
#ifndef FM_ANALYSIS_PLAN_H
#define FM_ANALYSIS_PLAN_H

#include "../core/internal.h"
#include "../frontend/llm/llm.h"
#include "../hw/cluster.h"

/* ---- NCCL's collectives (plan_comm.c; NCCL's doc/PERFORMANCE.md) ---- */

enum fm_coll { FM_COLL_ALLREDUCE = 0, FM_COLL_ALLGATHER, FM_COLL_REDUCESCATTER, FM_COLL_ALLTOALL,
               FM_COLL_P2P, FM_COLL_COUNT };
const char *fm_coll_name(enum fm_coll c);
/* The factor between algorithm bandwidth (size / time) and bus bandwidth for n ranks:
 * 2(n-1)/n all-reduce, (n-1)/n all-gather, reduce-scatter and all-to-all, 1 point-to-point. */
double fm_coll_busbw_factor(enum fm_coll c, int n);
/* Message steps a collective waits on: ring 2(n-1) for all-reduce (NCCL's tree: 2 log2 n, the
 * smaller taken), n-1 for all-gather, reduce-scatter and all-to-all, 1 for point-to-point. */
double fm_coll_steps(enum fm_coll c, int n);
/* Time of collective c of `bytes` (the whole buffer: all-reduce's input, all-gather's output,
 * reduce-scatter's input, all-to-all's send buffer) over n ranks at bus bandwidth busbw
 * (bytes/s) with latency lat per step. */
double fm_coll_time(enum fm_coll c, double bytes, int n, double busbw, double lat);

/* Where a group of n ranks with stride `stride` in the rank order sits on a cluster: inside one
 * node, or across nodes with `per_node` of its ranks in each. */
struct fm_group_link {
    bool inter;             /* spans nodes */
    int per_node;           /* the group's ranks in one node */
    double busbw, lat;      /* what its ring collectives see */
    double intra_bw, nic_bw;   /* one GPU's NVLink and own NIC (nic 0 inside a node), times
                                  ppp_comm: what an all-to-all sees */
};
void fm_group_link(const struct fm_cluster *c, int n, int64_t stride, double ppp_comm,
                   struct fm_group_link *out);
/* An all-to-all of `bytes` a rank over the n ranks of group l, latency left out: inside a node
 * bytes (n-1)/n at the bus bandwidth (fm_coll_time); across nodes the part for the other
 * nodes' ranks, bytes (n - per_node)/n, leaves through the GPU's own NIC while the part for
 * its own node's ranks crosses NVLink at the same time: the slower of the two. */
double fm_alltoall_time(const struct fm_group_link *l, double bytes, int n);

/* ---- one plan ---- */

struct fm_plan_cfg {
    int tp, pp, dp, cp, ep, v;          /* v: interleaved model chunks per stage */
    int zero;                           /* 0..3 (fsdp: 3) */
    bool sp;
    bool balance;                       /* first and last stages one layer fewer (Llama 3) */
    enum fm_recompute recompute;
    int64_t mb, gb, m, seq;             /* micro-batch, global batch, micro-batches */
    int64_t dseq;                       /* T5: the decoder's target tokens (seq: the source's);
                                           0 for other models */
};

enum { FM_PLAN_COMM_TP = 0, FM_PLAN_COMM_CP, FM_PLAN_COMM_EP, FM_PLAN_COMM_PP, FM_PLAN_COMM_DP,
       FM_PLAN_COMM_DP_GATHER, FM_PLAN_COMM_ZERO3, FM_PLAN_COMM_EMB, FM_PLAN_COMM_COUNT };

struct fm_plan_comm {
    const char *what;          /* "tensor parallel" */
    enum fm_coll coll;
    int group;                 /* ranks */
    bool inter;                /* over the inter-node network */
    double bytes;              /* per GPU per step, the collectives' buffers summed */
    double time_s;             /* per step, if nothing overlapped */
    double exposed_s;          /* per step, on the critical path */
};

struct fm_plan_eval {
    struct fm_plan_cfg cfg;
    /* memory per GPU (the stage that needs the most), bytes */
    double mem_weights, mem_grads, mem_optimizer, mem_activations, mem_buffers, mem_total;
    double params_per_gpu, in_flight;    /* micro-batches of activations the stage holds */
    bool fits;
    /* time per step, s */
    double t_compute, t_recompute, t_bubble, t_optimizer, t_comm_exposed, step_s;
    struct fm_plan_comm comm[FM_PLAN_COMM_COUNT];
    /* throughput */
    double model_flops, hardware_flops;  /* per step, the whole cluster */
    double mfu, hfu, tokens_per_s;
};

/* The per-micro-batch compute of a language model's plan timed by a calibration
 * (plan_calib.c): the calibration's time of one layer of each kind on one GPU, and of the
 * first and last stages' extra work, at the plan's tp, micro-batch and sequence. Seconds. */
struct fm_plan_timing {
    double layer_fwd[2], layer_bwd[2];  /* one layer: [0] with a dense MLP, [1] with MoE */
    double layer_core[2];               /* of layer_fwd: attention's core (selective recompute) */
    double first_fwd, first_bwd;        /* the embedding (first stage) */
    double last_fwd, last_bwd;          /* the final norm, the head and the loss (last stage) */
    size_t node_phases, uncalibrated;   /* of the timed graph's node-phases that do work, those
                                           the calibration has no entry for (PALEO's sum) */
};

/* What a plan is evaluated with. */
struct fm_plan_env {
    const struct fm_llm_config *cfg;
    const struct fm_device *dev;
    const struct fm_cluster *cluster;
    enum fm_precision precision;
    int gpus;
    int grad_bytes;
    bool flash, overlap;
    double ppp_compute, ppp_memory, ppp_comm;
    int64_t vocab;             /* padded to a multiple of 128 x tp, as Megatron does */
    const struct fm_plan_timing *timing;   /* NULL: the roofline with PALEO's fractions */
};

/* Checks cfg against the model and the GPU count: FM_ERR_INVALID naming the constraint and the
 * nearest valid value. */
enum fm_status fm_plan_check(struct fm_ctx *ctx, const struct fm_plan_env *env,
                             const struct fm_plan_cfg *cfg);
/* Evaluates a checked plan. */
void fm_plan_eval(const struct fm_plan_env *env, const struct fm_plan_cfg *cfg,
                  struct fm_plan_eval *out);
/* What one rank of a pp = 1 plan holds and computes: forward FLOPs of its linear layers,
 * attention products and logits per local token, and its parameters (the graph of the sharded
 * config counts the same: tests/test_plan.c). */
void fm_plan_rank_work(const struct fm_plan_env *env, const struct fm_plan_cfg *c,
                       double *fwd_flops_per_token, double *params);
/* The same per sequence (per token x seq; T5: its source and target tokens summed per
 * sequence, which fm_plan_rank_work's tokens only approximate): what graph_check compares. */
void fm_plan_rank_work_seq(const struct fm_plan_env *env, const struct fm_plan_cfg *c,
                           double *fwd_flops_per_seq, double *params);
/* Whether layer i of m has a mixture-of-experts MLP (the plan's layer kinds). */
bool fm_plan_layer_is_moe(const struct fm_llm_config *m, int64_t i);
/* m sharded by tp as Megatron-LM shards it (heads, kv heads, the MLPs, the vocabulary padded
 * to vocab): the config whose graph one tensor-parallel rank runs. */
void fm_plan_shard_config(const struct fm_llm_config *m, int tp, int64_t vocab,
                          struct fm_llm_config *out);
/* Pipeline bubble as a fraction of the ideal time: (p-1)/(v m) (Narayanan et al. 2021). */
double fm_plan_bubble_fraction(int p, int v, int64_t m);
/* Bytes of model state per parameter on one GPU: bf16 weights, grads of grad_bytes, fp32 master
 * and Adam's two moments, sharded over dp by ZeRO stage `zero`. */
void fm_plan_state_bytes(double params, int grad_bytes, int zero, int dp, double *weights,
                         double *grads, double *optimizer);

/* The models the plan knows by name besides the LLM configs (plan_models.c): the GPT shapes of
 * the Megatron-LM papers, and the Llama 3 family. */
enum fm_status fm_plan_model(struct fm_ctx *ctx, const char *name, struct fm_llm_config *out);
size_t fm_plan_model_count(void);
const char *fm_plan_model_name(size_t i);

/* The best few plans (plan_search.c). */
#define FM_PLAN_SEARCH_KEEP 5
#define FM_PLAN_SEARCH_TP 8    /* tensor-parallel sizes a calibrated search times: 1 to 128 */
/* A calibrated search's timings (plan_calib.c), one per tensor-parallel size (log2) and
 * micro-batch (1, 2, 4), each made when a valid plan first needs it. */
struct fm_plan_timings {
    struct fm_plan *plan;     /* whose calibration and model */
    struct fm_plan_timing t[FM_PLAN_SEARCH_TP][3];
    uint8_t state[FM_PLAN_SEARCH_TP][3];   /* 0: not yet, 1: timed, 2: cannot be timed */
};
struct fm_plan_search {
    struct fm_plan_eval best[FM_PLAN_SEARCH_KEEP];
    char why[FM_PLAN_SEARCH_KEEP][160];
    int n_best;
    long evaluated, valid, fitting;
    bool zero_searched;        /* ZeRO 0 to 3 tried, each layout kept at its fastest */
};
/* T5 with pp > 1 stages: the first decoder stage (Megatron-LM's split rank), the encoder's
 * layers evenly on the stages before it and the decoder's on the rest, chosen so that the
 * slowest stage's forward FLOPs (the logits on the last) are the least; 0 when no split of
 * c->pp stages divides both stacks (and for other models, or pp 1). */
int fm_plan_t5_split(const struct fm_plan_env *env, const struct fm_plan_cfg *c);
/* Whether the search tries pp stages for m: pp divides the layers; or the layers + 2, with the
 * embedding and the head each in a layer's slot (*balance true); or, for DeepSeek-V3, its
 * uneven layout takes pp (ceil(layers / pp) a stage, at least one left for the last). */
bool fm_plan_search_pp(const struct fm_llm_config *m, int pp, bool *balance);
/* search_zero: try ZeRO stages 0 to 3 (3 with pp 1 only) and keep each layout's fastest; else
 * base->zero only. timings: time each plan's compute by a calibration (context parallelism not
 * tried: one timed graph cannot show it); NULL: the roofline. */
enum fm_status fm_plan_search_run(struct fm_ctx *ctx, const struct fm_plan_env *env,
                                  const struct fm_plan_cfg *base, bool search_zero,
                                  struct fm_plan_timings *timings, struct fm_plan_search *out);

struct fm_plan {
    struct fm_ctx *ctx;
    struct fm_plan_opts opts;
    struct fm_llm_config model;
    struct fm_devices *devs;
    const struct fm_device *dev;
    struct fm_cluster cluster;
    struct fm_plan_env env;
    struct fm_plan_eval eval;
    double peak;               /* MFU's peak per GPU */
    double tokens_time_s, gpu_hours;
    char note[320];
    bool searched;
    bool generic;              /* a counted graph (CNN, ONNX), not an LLM config */
    /* the per-rank formulas against the counted graph of the sharded config (plan_run.c) */
    char graph_note[256];
    double graph_flops, graph_params;
    bool graph_equal;
    struct fm_plan_timing timing;   /* with fm_plan_opts.calibration (env.timing points here) */
    bool calibrated;                /* the compute timed by fm_plan_opts.calibration */
    char timing_note[640];          /* which calibration, for the report */
    struct fm_plan_search search;
    struct fm_plan_timings search_timings;   /* a calibrated search's */
};

/* Times the plan's compute by fm_plan_opts.calibration (plan_calib.c): fills p->timing for
 * cfg c (checked) and points p->env.timing at it. */
enum fm_status fm_plan_calib_time(struct fm_plan *p, const struct fm_plan_cfg *c);
/* The timing of plan c for the search (its tp the tp_index-th power of two, its micro-batch
 * the mb_index-th of 1, 2, 4; the vocabulary padded to vocab), timed on first use; *out
 * NULL (and FM_OK) when c's tp cannot be timed: GPT-2's and GPT-NeoX's fused q, k and v at
 * tp > 1. */
enum fm_status fm_plan_calib_lookup(struct fm_plan_timings *ts, const struct fm_plan_cfg *c,
                                    int tp_index, int mb_index, int64_t vocab,
                                    const struct fm_plan_timing **out);
/* p->timing_note (and p->calibrated) for the timing tm of p's plan. */
void fm_plan_calib_note(struct fm_plan *p, const struct fm_plan_timing *tm);

/* Data and pipeline parallelism of any counted model (plan_graph.c): fills p->eval. */
enum fm_status fm_plan_graph_eval(struct fm_plan *p, struct fm_plan_cfg *c);

#endif
