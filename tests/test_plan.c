/* The parallel plan (src/analysis/plan*.c, src/hw/cluster.c): NCCL's bus-bandwidth factors
 * and a collective's time, which link a group lands on, the pipeline bubble, ZeRO's bytes per
 * parameter against the ZeRO paper's table, the memory of hand-computed GPT plans against
 * Korthikanti et al. 2022's activation formulas, MFU's definition, every refusal of a bad plan
 * naming the constraint and the nearest valid value, cluster files, the search's speed at
 * 4,096 GPUs, and the CLI; multi-head latent attention (DeepSeek-V3) and BERT's masked LM by
 * hand and against their counted graphs, and DeepSeek-V3's 2,048-GPU layout; a language
 * model's plan and search timed by a calibration fitted in the test (against the whole rank
 * graph's calibrated node times) and its refusals; the search over ZeRO stages; T5's
 * encoder-decoder against its counted graph and a closed form, its tensor-parallel
 * all-reduces by hand, and what a T5 plan refuses by name. */
#include "support.h"
#include "analysis/plan.h"
#include "frontend/llm/llm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void test_busbw_factors(void **state)
{
    (void)state;
    assert_true(fm_coll_busbw_factor(FM_COLL_ALLREDUCE, 8) == 2.0 * 7.0 / 8.0);
    assert_true(fm_coll_busbw_factor(FM_COLL_ALLGATHER, 8) == 7.0 / 8.0);
    assert_true(fm_coll_busbw_factor(FM_COLL_REDUCESCATTER, 4) == 3.0 / 4.0);
    assert_true(fm_coll_busbw_factor(FM_COLL_ALLTOALL, 16) == 15.0 / 16.0);
    assert_true(fm_coll_busbw_factor(FM_COLL_ALLREDUCE, 1) == 0.0);
    assert_true(fm_coll_busbw_factor(FM_COLL_P2P, 2) == 1.0);
    /* ring 2(n-1) = 14 steps against tree 2 log2 8 = 6 */
    assert_true(fm_coll_steps(FM_COLL_ALLREDUCE, 8) == 6.0);
    assert_true(fm_coll_steps(FM_COLL_ALLREDUCE, 2) == 2.0);
    assert_true(fm_coll_steps(FM_COLL_ALLGATHER, 8) == 7.0);
    /* 1 GB all-reduced over 8 at 100 GB/s bus bandwidth: 1.75 x 10 ms, plus 6 x 5 us */
    assert_true(fabs(fm_coll_time(FM_COLL_ALLREDUCE, 1e9, 8, 100e9, 5e-6) - (0.0175 + 30e-6)) <
                1e-15);
    assert_true(fm_coll_time(FM_COLL_ALLREDUCE, 1e9, 1, 100e9, 5e-6) == 0.0);
}

static void test_group_links(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_cluster c;
    FM_ASSERT_OK(ctx, fm_cluster_builtin(ctx, "dgx-h100", &c));
    struct fm_group_link l;
    fm_group_link(&c, 8, 1, 1.0, &l);   /* TP 8: one node, NVLink */
    assert_false(l.inter);
    assert_true(l.busbw == 450e9);
    fm_group_link(&c, 64, 8, 1.0, &l);   /* DP over 64 nodes, one rank a node: one NIC */
    assert_true(l.inter);
    assert_int_equal(l.per_node, 1);
    assert_true(l.busbw == 50e9);
    fm_group_link(&c, 16, 1, 0.5, &l);   /* TP 16 over 2 nodes: 8 NICs, below NVLink */
    assert_true(l.inter);
    assert_int_equal(l.per_node, 8);
    assert_true(l.busbw == 400e9 * 0.5);
    fm_group_link(&c, 4, 2, 1.0, &l);    /* 4 ranks 2 apart: still inside a node */
    assert_false(l.inter);
    /* all-to-all: inside a node at the bus bandwidth; across nodes, the share for other
     * nodes through the GPU's own NIC (not the node's 8), NVLink carrying the rest at once */
    fm_group_link(&c, 8, 1, 1.0, &l);
    assert_true(fm_alltoall_time(&l, 1e9, 8) == fm_coll_time(FM_COLL_ALLTOALL, 1e9, 8, 450e9, 0));
    fm_group_link(&c, 64, 1, 1.0, &l);   /* EP 64 over 8 nodes */
    assert_true(l.inter && l.nic_bw == 50e9 && l.intra_bw == 450e9);
    assert_true(fabs(fm_alltoall_time(&l, 1e9, 64) - 1e9 * 56.0 / 64.0 / 50e9) < 1e-15);
    fm_group_link(&c, 16, 4, 0.5, &l);   /* 16 ranks 4 apart: 2 a node over 8 nodes */
    assert_int_equal(l.per_node, 2);
    assert_true(fabs(fm_alltoall_time(&l, 1e9, 16) - 1e9 * 14.0 / 16.0 / 25e9) < 1e-15);
    assert_true(fm_alltoall_time(&l, 0, 16) == 0.0);
    FM_ASSERT_OK(ctx, fm_cluster_builtin(ctx, "gb200-nvl72", &c));
    fm_group_link(&c, 64, 1, 1.0, &l);   /* 64 GPUs in one NVLink domain */
    assert_false(l.inter);
    assert_true(l.busbw == 900e9);
    fm_ctx_free(ctx);
}

static void test_bubble(void **state)
{
    (void)state;
    assert_true(fm_plan_bubble_fraction(8, 1, 32) == 7.0 / 32.0);
    assert_true(fm_plan_bubble_fraction(8, 2, 32) == 7.0 / 64.0);
    assert_true(fm_plan_bubble_fraction(1, 1, 32) == 0.0);
}

/* Rajbhandari et al. 2020 (ZeRO), table 1: a 7.5B model, K = 12, Nd = 64, fp16 gradients:
 * 120 GB, ZeRO-1 31.4 GB, ZeRO-2 16.6 GB, ZeRO-3 1.88 GB per device. */
static void test_zero_bytes(void **state)
{
    (void)state;
    double w, g, o, psi = 7.5e9;
    fm_plan_state_bytes(psi, 2, 0, 64, &w, &g, &o);
    assert_true(w + g + o == 120e9);
    fm_plan_state_bytes(psi, 2, 1, 64, &w, &g, &o);
    assert_true(w + g + o == 2 * psi + 2 * psi + 12 * psi / 64);   /* 31.40625 GB */
    assert_true(fabs(w + g + o - 31.4e9) < 0.01e9);
    fm_plan_state_bytes(psi, 2, 2, 64, &w, &g, &o);
    assert_true(w + g + o == 2 * psi + 14 * psi / 64);   /* 16.640625 GB */
    fm_plan_state_bytes(psi, 2, 3, 64, &w, &g, &o);
    assert_true(w + g + o == 16 * psi / 64);   /* 1.875 GB */
    /* Megatron's 18 bytes: fp32 gradients */
    fm_plan_state_bytes(1e9, 4, 0, 8, &w, &g, &o);
    assert_true(w + g + o == 18e9);
}

static struct fm_plan *run_ok(struct fm_ctx *ctx, const struct fm_plan_opts *o)
{
    struct fm_plan *p = NULL;
    enum fm_status st = fm_plan_run(ctx, o, &p);
    if (st)
        fail_msg("fm_plan_run: %s", fm_ctx_error(ctx));
    return p;
}

/* DeepSeek-V3's cluster as docs/clusters.md gives it (DeepSeek-AI 2024, sections 3.1 and
 * 3.2.2): 8 H800s a node, NVLink 160 GB/s and InfiniBand 50 GB/s per GPU; the default of
 * --device h800. Its 64-way expert parallelism spans 8 nodes with 8 NICs each, so NVLink's 160
 * GB/s bounds it (8 x 50 = 400 is more); one rank a node has one NIC's 50. */
static void test_cluster_hgx_h800(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_cluster c;
    FM_ASSERT_OK(ctx, fm_cluster_builtin(ctx, "hgx-h800", &c));
    assert_string_equal(c.name, "hgx-h800");
    assert_string_equal(c.device, "h800");
    assert_int_equal(c.gpus_per_node, 8);
    assert_int_equal(c.max_nodes, 0);
    assert_true(c.intra_bw == 160e9);
    assert_true(c.inter_bw == 50e9);
    assert_true(c.intra_lat_s == 2e-6);
    assert_true(c.inter_lat_s == 5e-6);
    test_expect_in(c.source, "arXiv 2412.19437");
    test_expect_in(c.source, "section 3.1");
    test_expect_in(c.source, "3.2.2, NVLink offers 160 GB/s, IB 50 GB/s");
    test_expect_in(c.intra_link, "400 GB/s bidirectional");
    struct fm_group_link l;
    fm_group_link(&c, 8, 1, 1.0, &l);
    assert_false(l.inter);
    assert_true(l.busbw == 160e9);
    fm_group_link(&c, 64, 1, 1.0, &l);
    assert_true(l.inter);
    assert_int_equal(l.per_node, 8);
    assert_true(l.busbw == 160e9);
    fm_group_link(&c, 16, 8, 0.5, &l);
    assert_true(l.inter);
    assert_int_equal(l.per_node, 1);
    assert_true(l.busbw == 50e9 * 0.5);
    /* case-insensitive like the others, and listed in the refusal of an unknown name */
    FM_ASSERT_OK(ctx, fm_cluster_builtin(ctx, "HGX-H800", &c));
    assert_int_equal(fm_cluster_builtin(ctx, "hgx-h80", &c), FM_ERR_NOT_FOUND);
    EXPECT_MESSAGE(ctx, "did you mean 'hgx-h800'", "hgx-h200, hgx-h800, dgx-b200");
    /* --device h800 alone plans on it, with the H800's figures */
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "llama-3.1-8b";
    o.gpus = 16;
    o.device = "h800";
    o.global_batch = 64;
    struct fm_plan *p = run_ok(ctx, &o);
    assert_string_equal(p->cluster.name, "hgx-h800");
    assert_string_equal(p->dev->name, "H800 SXM5 80GB");
    assert_true(p->dev->interconnect_bw == 400e9);
    fm_plan_free(p);
    fm_ctx_free(ctx);
}

/* GPT 1.7B on one A100: every byte by hand. Parameters per layer 12h^2 + 13h; embeddings
 * V h + 2048 h, final norm 2h (tied head); activations 34 sbh + 5 a s^2 b per layer (Korthikanti
 * et al. 2022, eq. 1) plus fp32 logits and their gradient. */
static void test_memory_by_hand(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "megatron-gpt-1.7b";
    o.gpus = 1;
    o.device = "a100";
    o.zero = 0;
    o.no_flash_attention = true;
    o.global_batch = 1;
    struct fm_plan *p = run_ok(ctx, &o);
    assert_true(p->graph_equal);   /* the formulas against fm_llm_build + fm_count */
    double h = 2304, L = 24, V = 51200, s = 2048, a = 24;
    double params = L * (12 * h * h + 13 * h) + V * h + 2048 * h + 2 * h;
    assert_true(p->eval.params_per_gpu == params);
    assert_true(p->eval.mem_weights == 2 * params);
    assert_true(p->eval.mem_grads == 4 * params);
    assert_true(p->eval.mem_optimizer == 12 * params);
    double act = L * s * (34 * h + 5 * a * s) + 8 * V * s;
    assert_true(p->eval.mem_activations == act);
    assert_true(p->eval.mem_buffers == 0);
    struct fm_plan_summary sum;
    fm_plan_summary(p, &sum);
    assert_true(sum.memory_per_gpu_bytes == 18 * params + act);
    assert_true(sum.fits == (18 * params + act <= 80e9));
    /* MFU's definition: model FLOPs over step x GPUs x peak */
    assert_true(fabs(p->eval.mfu * p->eval.step_s * 312e12 - p->eval.model_flops) <
                1e-6 * p->eval.model_flops);
    /* model FLOPs: 3 x (24 s h^2 + 4 s^2 h per layer + 2 s h V) for one sequence */
    double fwd = L * (24 * s * h * h + 4 * s * s * h) + 2 * s * h * V;
    assert_true(fabs(p->eval.model_flops - 3 * fwd) < 1e-9 * fwd);
    fm_plan_free(p);
    fm_ctx_free(ctx);
}

/* GPT 22B at tp 8 (Korthikanti et al. 2022, table 2): without sequence parallelism
 * sbh (10 + 24/t + 5as/(ht)) per layer; with it sbh/t (34 + 5as/h); selective recompute with
 * it 34 sbh / t; full recompute 2 sbh / t (the layer's input). */
static void test_activations_tp(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "megatron-gpt-22b";
    o.gpus = 8;
    o.tp = 8;
    o.device = "a100";
    o.no_flash_attention = true;
    o.global_batch = 1;
    double h = 6144, L = 48, s = 2048, a = 64, t = 8, V = 51200;
    double logits = 8 * V / t * s;
    struct fm_plan *p = run_ok(ctx, &o);
    assert_true(fabs(p->eval.mem_activations -
                     (L * s * h * (10 + 24 / t + 5 * a * s / (h * t)) + logits)) < 1e-3);
    fm_plan_free(p);
    o.sequence_parallel = true;
    p = run_ok(ctx, &o);
    assert_true(fabs(p->eval.mem_activations - (L * s * h / t * (34 + 5 * a * s / h) + logits)) <
                1e-3);
    fm_plan_free(p);
    o.recompute = FM_RECOMPUTE_SELECTIVE;
    p = run_ok(ctx, &o);
    assert_true(fabs(p->eval.mem_activations - (L * s * h * 34 / t + logits)) < 1e-3);
    fm_plan_free(p);
    o.recompute = FM_RECOMPUTE_FULL;
    p = run_ok(ctx, &o);
    assert_true(fabs(p->eval.mem_activations - (L * 2 * s * h / t + logits)) < 1e-3);
    fm_plan_free(p);
    fm_ctx_free(ctx);
}

/* 1F1B: the first stage holds pp micro-batches of its layers, the last one; interleaved adds
 * (p-1)/(p v) (Korthikanti et al. 2022, section 4.2.3). */
static void test_in_flight(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "megatron-gpt-175b";
    o.gpus = 64;
    o.tp = 8;
    o.pp = 8;
    o.device = "a100";
    o.global_batch = 64;
    o.sequence_parallel = true;
    o.recompute = FM_RECOMPUTE_SELECTIVE;
    struct fm_plan *p = run_ok(ctx, &o);
    assert_true(p->graph_equal);
    assert_true(p->eval.in_flight == 8.0);
    assert_int_equal(p->eval.cfg.m, 64);
    /* bubble: (p - 1) of m + p - 1 micro-batch slots */
    assert_true(fabs(p->eval.t_bubble / (p->eval.step_s - p->eval.t_optimizer -
                                         p->eval.comm[FM_PLAN_COMM_DP].exposed_s -
                                         p->eval.comm[FM_PLAN_COMM_DP_GATHER].exposed_s -
                                         p->eval.comm[FM_PLAN_COMM_EMB].exposed_s) -
                     7.0 / (64.0 + 7.0)) < 1e-9);
    fm_plan_free(p);
    o.interleave = 2;
    p = run_ok(ctx, &o);
    assert_true(fabs(p->eval.in_flight - 8.0 * (1 + 7.0 / 16.0)) < 1e-12);
    fm_plan_free(p);
    fm_ctx_free(ctx);
}

/* Communication by hand: GPT 22B at tp 8 on a DGX A100 (NVLink 300 GB/s each way at 72%, 2 us a
 * step), one micro-batch of 2048 tokens: 4 all-reduces of s h 2 bytes per layer, all exposed;
 * with full recompute 6. Then 4 of those nodes as dp (stride 8: one NIC each, 25 GB/s): the
 * gradients' all-reduce, of which what one backward does not hide is exposed. */
static void test_comm_by_hand(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "megatron-gpt-22b";
    o.gpus = 8;
    o.tp = 8;
    o.device = "a100";
    o.global_batch = 1;
    o.zero = 0;
    double h = 6144, s = 2048, L = 48;
    double ar = fm_coll_time(FM_COLL_ALLREDUCE, s * h * 2, 8, 300e9 * 0.72, 2e-6);
    struct fm_plan *p = run_ok(ctx, &o);
    assert_true(fabs(p->eval.comm[FM_PLAN_COMM_TP].exposed_s - 4 * L * ar) < 1e-12);
    assert_true(p->eval.comm[FM_PLAN_COMM_TP].bytes == 4 * L * s * h * 2);
    assert_false(p->eval.comm[FM_PLAN_COMM_TP].inter);
    fm_plan_free(p);
    o.recompute = FM_RECOMPUTE_FULL;
    p = run_ok(ctx, &o);
    assert_true(fabs(p->eval.comm[FM_PLAN_COMM_TP].exposed_s - 6 * L * ar) < 1e-12);
    fm_plan_free(p);
    o.recompute = FM_RECOMPUTE_NONE;
    o.gpus = 32;
    o.global_batch = 4;
    p = run_ok(ctx, &o);
    const struct fm_plan_comm *dp = &p->eval.comm[FM_PLAN_COMM_DP];
    assert_int_equal(dp->group, 4);
    assert_true(dp->inter);
    double grads = p->eval.params_per_gpu * 4;
    double t = fm_coll_time(FM_COLL_ALLREDUCE, grads, 4, 25e9 * 0.72, 5e-6);
    assert_true(fabs(dp->time_s - t) < 1e-12);
    assert_true(dp->exposed_s <= dp->time_s && dp->exposed_s >= 0);
    fm_plan_free(p);
    o.no_overlap = true;
    p = run_ok(ctx, &o);
    assert_true(p->eval.comm[FM_PLAN_COMM_DP].exposed_s == p->eval.comm[FM_PLAN_COMM_DP].time_s);
    fm_plan_free(p);
    fm_ctx_free(ctx);
}

/* The tied embedding's copies on the first and last of 8 stages (GPT 175B, tp 8, dp 1 on DGX
 * A100s: 56 ranks apart, so through one NIC, 25 GB/s at 72%): one all-reduce of the table's
 * fp32 gradient, 51,200 / 8 rows of 12,288, exposed; none without pipeline stages, none for an
 * untied table (Llama 3). */
static void test_embedding_copies_by_hand(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "megatron-gpt-175b";
    o.gpus = 64;
    o.tp = 8;
    o.pp = 8;
    o.device = "a100";
    o.global_batch = 64;
    struct fm_plan *p = run_ok(ctx, &o);
    const struct fm_plan_comm *e = &p->eval.comm[FM_PLAN_COMM_EMB];
    double bytes = 51200.0 / 8 * 12288 * 4;
    assert_int_equal(e->group, 2);
    assert_true(e->inter);
    assert_true(e->bytes == bytes);
    /* a ring of two: each sends and receives half the buffer twice, 2 latency steps */
    double t = bytes / (25e9 * 0.72) + 2 * 5e-6;
    assert_true(fabs(e->time_s - t) < 1e-9 * t);
    assert_true(e->exposed_s == e->time_s);
    fm_plan_free(p);
    o.gpus = 8;
    o.pp = 1;
    o.global_batch = 8;
    p = run_ok(ctx, &o);
    assert_true(p->eval.comm[FM_PLAN_COMM_EMB].time_s == 0);
    fm_plan_free(p);
    fm_plan_opts_init(&o);
    o.model = "llama-3.1-8b";
    o.gpus = 16;
    o.tp = 4;
    o.pp = 4;
    o.device = "h100";
    o.global_batch = 16;
    p = run_ok(ctx, &o);
    assert_true(p->eval.comm[FM_PLAN_COMM_EMB].time_s == 0);
    fm_plan_free(p);
    fm_ctx_free(ctx);
}

static void expect_refusal(struct fm_plan_opts *o, const char *w1, const char *w2)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_plan *p = NULL;
    enum fm_status st = fm_plan_run(ctx, o, &p);
    assert_int_not_equal(st, FM_OK);
    assert_null(p);
    EXPECT_MESSAGE(ctx, w1, w2);
    fm_ctx_free(ctx);
}

static void test_refusals(void **state)
{
    (void)state;
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "megatron-gpt-1.7b";   /* 24 heads, 24 layers */
    o.device = "a100";
    o.gpus = 64;
    o.tp = 5;
    o.dp = 1;
    expect_refusal(&o, "tp x pp x cp x dp", "fm_plan_opts.gpus");
    o.dp = 0;
    o.gpus = 60;
    expect_refusal(&o, "fm_plan_opts.tp = 5 does not divide the attention heads (24)",
                   "nearest valid: 4 or 6");
    o.tp = 1;
    o.pp = 5;
    o.gpus = 5;
    expect_refusal(&o, "fm_plan_opts.pp = 5 does not divide the layers (24)",
                   "nearest valid: 4 or 6");
    o.pp = 2;
    o.gpus = 60;
    o.tp = 4;
    expect_refusal(&o, "not a multiple of tp x pp x cp = 8", "nearest valid: 56 or 64");
    o.gpus = 64;
    o.global_batch = 100;
    expect_refusal(&o, "global_batch = 100", "nearest valid: 96 or 104");
    o.global_batch = 0;
    o.zero = 3;
    expect_refusal(&o, "ZeRO-3", "pp = 2");
    o.zero = 1;
    o.ep = 2;
    expect_refusal(&o, "fm_plan_opts.ep = 2", "no experts");
    o.ep = 0;
    o.cluster = "dgx-h10";
    expect_refusal(&o, "unknown cluster 'dgx-h10'", "did you mean 'dgx-h100'");
    o.cluster = NULL;
    o.model = "megatron-gpt-17b";
    expect_refusal(&o, "unknown model", "did you mean");
    o.model = "megatron-gpt-1.7b";
    o.device = "v100";
    o.precision = FM_PREC_FP8;
    o.cluster = "dgx-a100";
    expect_refusal(&o, "no fp8 tensor-core peak", "V100");
}

static void test_cluster_file(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    const char *good = "{\"cluster\": \"lab\", \"device\": \"h100\", \"gpus_per_node\": 4,\n"
                       " \"intra_node\": {\"link\": \"NVLink\", \"bandwidth_GBps\": 300, "
                       "\"latency_us\": 3},\n"
                       " \"inter_node\": {\"bandwidth_GBps\": 25}}";
    struct fm_cluster c;
    FM_ASSERT_OK(ctx, fm_cluster_parse(ctx, good, strlen(good), "lab.json", &c));
    assert_string_equal(c.name, "lab");
    assert_int_equal(c.gpus_per_node, 4);
    assert_true(c.intra_bw == 300e9);
    assert_true(c.intra_lat_s == 3e-6);
    assert_true(c.inter_bw == 25e9);
    /* round trip */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fm_cluster_write_json(f, &c);
    fclose(f);
    struct fm_cluster d;
    FM_ASSERT_OK(ctx, fm_cluster_parse(ctx, text, len, "again", &d));
    assert_true(d.intra_bw == c.intra_bw && d.inter_bw == c.inter_bw);
    assert_true(fabs(d.intra_lat_s - c.intra_lat_s) < 1e-18);
    assert_int_equal(d.gpus_per_node, 4);
    free(text);
    const char *bad = "{\"cluster\": \"lab\", \"gpus_per_node\": 4,\n"
                      " \"intra_node\": {\"bandwidth_GBps\": -3},\n"
                      " \"inter_node\": {\"bandwidth_GBps\": 25}}";
    assert_int_equal(fm_cluster_parse(ctx, bad, strlen(bad), "bad.json", &c), FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, "bad.json, line 2", "bandwidth_GBps");
    const char *unknown = "{\"cluster\": \"lab\", \"gpus\": 4}";
    assert_int_equal(fm_cluster_parse(ctx, unknown, strlen(unknown), "u.json", &c),
                     FM_ERR_PARSE);
    EXPECT_MESSAGE(ctx, "u.json, line 1", "unknown field \"gpus\"");
    fm_ctx_free(ctx);
}

static void test_search_speed(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "megatron-gpt-1t";
    o.device = "a100";
    o.gpus = 4096;
    o.global_batch = 4096;
    o.search = true;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct fm_plan *p = run_ok(ctx, &o);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    assert_true(s < 10.0);
    assert_true(p->search.n_best >= 2);
    assert_true(p->search.valid > 100);
    for (int i = 1; i < p->search.n_best; i++) {
        assert_true(p->search.best[i].step_s >= p->search.best[i - 1].step_s);
        assert_true(p->search.best[i].fits);
        assert_non_null(strchr(p->search.why[i], '+'));
    }
    struct fm_plan_summary sum;
    fm_plan_summary(p, &sum);
    assert_true(sum.step_s == p->search.best[0].step_s);
    fm_plan_free(p);
    fm_ctx_free(ctx);
}

/* The plan's per-rank work against the graph of the config sharded as the plan shards it
 * (heads, kv heads, MLP and vocabulary by tp), built by fm_llm_build and counted by fm_count:
 * linear, attention-product and logits MACs and the parameters, exactly. */
static void check_against_graph(const char *model, int tp)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config cfg, shard;
    FM_ASSERT_OK(ctx, fm_llm_config_builtin(ctx, model, &cfg));
    shard = cfg;
    shard.heads /= tp;
    shard.kv_heads = cfg.kv_heads >= tp ? cfg.kv_heads / tp : 1;
    shard.ffn /= tp;
    shard.moe_ffn /= tp;
    shard.shared_ffn /= tp;
    shard.vocab /= tp;
    const int64_t seq = 128;
    struct fm_llm_build_opts bo;
    fm_llm_build_opts_init(&bo);
    bo.seq = seq;
    bo.dtype = FM_DTYPE_BF16;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_llm_build(ctx, &shard, &bo, &g));
    struct fm_counts *counts = test_count(ctx, g, FM_MODE_TRAIN);
    double macs = (double)fm_work_macs(&counts->by_class[FM_CLASS_MATMUL][FM_PHASE_FWD]) +
                  (double)fm_work_macs(&counts->by_class[FM_CLASS_ATTENTION][FM_PHASE_FWD]);

    struct fm_devices *devs = NULL;
    const struct fm_device *dev = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    FM_ASSERT_OK(ctx, fm_devices_find(ctx, devs, "h100", &dev));
    struct fm_cluster cl;
    FM_ASSERT_OK(ctx, fm_cluster_builtin(ctx, "dgx-h100", &cl));
    struct fm_plan_env env = {.cfg = &cfg, .dev = dev, .cluster = &cl,
                              .precision = FM_PREC_BF16, .gpus = tp, .grad_bytes = 4,
                              .flash = true, .ppp_compute = 0.6, .ppp_memory = 0.7,
                              .ppp_comm = 0.7, .vocab = cfg.vocab};
    struct fm_plan_cfg c = {.tp = tp, .pp = 1, .dp = 1, .cp = 1, .ep = 1, .v = 1, .mb = 1,
                            .gb = 1, .m = 1, .seq = seq};
    double flops, params;
    fm_plan_rank_work(&env, &c, &flops, &params);
    if (2.0 * macs != flops * (double)seq)
        fail_msg("%s tp %d: graph %.0f FLOPs, plan %.0f", model, tp, 2.0 * macs,
                 flops * (double)seq);
    if ((double)counts->params != params)
        fail_msg("%s tp %d: graph %llu parameters, plan %.0f", model, tp,
                 (unsigned long long)counts->params, params);
    if (tp == 1) {
        uint64_t total, non_emb;
        fm_llm_params(&cfg, &total, &non_emb);
        assert_true((double)total == params);
    }
    fm_counts_free(counts);
    fm_graph_free(g);
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

static void test_rank_work_matches_graph(void **state)
{
    (void)state;
    check_against_graph("llama-3.1-8b", 1);
    check_against_graph("llama-3.1-8b", 4);
    check_against_graph("qwen2.5-7b", 1);
    check_against_graph("gpt2", 1);
    check_against_graph("mixtral-8x7b", 1);
    check_against_graph("mixtral-8x7b", 2);
    /* multi-head latent attention, dense first layers, shared experts */
    check_against_graph("deepseek-v3", 1);
    check_against_graph("deepseek-v3", 2);
    /* an encoder with its masked-LM head */
    check_against_graph("bert-base", 1);
    check_against_graph("bert-base", 2);
}

/* The tiny configs of tests/data/llm (every architecture the plan covers) at tp 1 and 2: the
 * plan's per-rank formulas equal their counted graphs. */
static void test_config_files_match_graph(void **state)
{
    (void)state;
    static const char *const dirs[] = {"llama",   "mistral", "mixtral",   "qwen2",
                                       "qwen2_moe", "qwen3", "qwen3_moe", "gemma",
                                       "gemma2",  "phi3",    "deepseek_v3", "bert",
                                       "t5"};
    struct fm_ctx *ctx = test_ctx();
    char path[512];
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        for (int tp = 1; tp <= 2; tp++) {
            snprintf(path, sizeof(path), "%s/llm/%s/config.json", FM_TEST_DATA, dirs[i]);
            struct fm_plan_opts o;
            fm_plan_opts_init(&o);
            o.config_path = path;
            o.gpus = tp;
            o.tp = tp;
            o.device = "h100";
            struct fm_plan *p = run_ok(ctx, &o);
            if (!p->graph_equal)
                fail_msg("%s tp %d: %s", dirs[i], tp, p->graph_note);
            fm_plan_free(p);
        }
    }
    fm_ctx_free(ctx);
}

/* T5 (encoder-decoder) on one tensor-parallel rank: the plan's per-sequence forward FLOPs and
 * parameters against the counted graph of the config sharded by tp (fm_llm_build with the
 * source's seq and the target's decoder_seq, fm_count), and both against a closed form written
 * here, all exact. Per encoder layer S(8hq + 2hf n) + 4S^2 q (q, k, v, o; the feed-forward's n
 * matrices, 3 gated, 2 plain; QK^T and AV over every source key); per decoder layer
 * D(8hq + 4hq + 2hf n) + 4Shq + 4D^2 q + 4DSq (self-attention, the cross-attention's q and o on
 * the D targets and its k and v on the S encoder outputs, both products); the tied head
 * 2 h V/tp a target token, V padded to 128 tp. Parameters: 4hq + hfn + 2h an encoder layer,
 * 8hq + hfn + 3h a decoder layer, the shared embedding V/tp h, two relative position biases
 * (buckets x heads/tp), two final norms. q = heads/tp x d_kv, f = d_ff/tp. */
static void check_t5(const char *model, int tp, int64_t S, int64_t D)
{
    struct fm_ctx *ctx = test_ctx();
    struct fm_llm_config cfg, shard;
    if (strchr(model, '/')) {
        size_t n = 0;
        char *text = test_read_file(model, &n);
        FM_ASSERT_OK(ctx, fm_llm_config_parse(ctx, text, n, model, &cfg));
        free(text);
    } else {
        FM_ASSERT_OK(ctx, fm_llm_config_builtin(ctx, model, &cfg));
    }
    assert_int_equal(cfg.arch, FM_LLM_T5);
    int64_t unit = 128 * (int64_t)tp, vp = (cfg.vocab + unit - 1) / unit * unit;
    fm_plan_shard_config(&cfg, tp, vp, &shard);
    struct fm_llm_build_opts bo;
    fm_llm_build_opts_init(&bo);
    bo.seq = S;
    bo.decoder_seq = D;
    bo.dtype = FM_DTYPE_BF16;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_llm_build(ctx, &shard, &bo, &g));
    struct fm_counts *counts = test_count(ctx, g, FM_MODE_TRAIN);
    uint64_t macs = fm_work_macs(&counts->by_class[FM_CLASS_MATMUL][FM_PHASE_FWD]) +
                    fm_work_macs(&counts->by_class[FM_CLASS_ATTENTION][FM_PHASE_FWD]);

    struct fm_devices *devs = NULL;
    const struct fm_device *dev = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    FM_ASSERT_OK(ctx, fm_devices_find(ctx, devs, "h100", &dev));
    struct fm_cluster cl;
    FM_ASSERT_OK(ctx, fm_cluster_builtin(ctx, "dgx-h100", &cl));
    struct fm_plan_env env = {.cfg = &cfg, .dev = dev, .cluster = &cl,
                              .precision = FM_PREC_BF16, .gpus = tp, .grad_bytes = 4,
                              .flash = true, .ppp_compute = 0.6, .ppp_memory = 0.7,
                              .ppp_comm = 0.7, .vocab = vp};
    struct fm_plan_cfg c = {.tp = tp, .pp = 1, .dp = 1, .cp = 1, .ep = 1, .v = 1, .mb = 1,
                            .gb = 1, .m = 1, .seq = S, .dseq = D};
    double flops, params;
    fm_plan_rank_work_seq(&env, &c, &flops, &params);

    /* the closed form, in integers */
    int64_t h = cfg.hidden, q = cfg.heads / tp * cfg.head_dim, f = cfg.ffn / tp;
    int64_t nm = cfg.gated_mlp ? 3 : 2, vr = vp / tp;
    int64_t enc = S * (8 * h * q + 2 * h * f * nm) + 4 * S * S * q;
    int64_t dec = D * (8 * h * q + 4 * h * q + 2 * h * f * nm) + 4 * S * h * q +
                  4 * D * D * q + 4 * D * S * q;
    int64_t want = cfg.layers * enc + cfg.decoder_layers * dec + 2 * h * vr * D;
    int64_t want_params = cfg.layers * (4 * h * q + h * f * nm + 2 * h) +
                          cfg.decoder_layers * (8 * h * q + h * f * nm + 3 * h) + vr * h +
                          2 * cfg.rel_buckets * (cfg.heads / tp) + 2 * h;
    if ((int64_t)(2 * macs) != want)
        fail_msg("%s tp %d: graph %llu FLOPs, closed form %lld", model, tp,
                 (unsigned long long)(2 * macs), (long long)want);
    if (flops != (double)want)
        fail_msg("%s tp %d: plan %.0f FLOPs, closed form %lld", model, tp, flops,
                 (long long)want);
    if ((int64_t)counts->params != want_params || params != (double)want_params)
        fail_msg("%s tp %d: graph %llu parameters, plan %.0f, closed form %lld", model, tp,
                 (unsigned long long)counts->params, params, (long long)want_params);
    if (tp == 1 && vp == cfg.vocab) {   /* and the config's own count of the whole model */
        uint64_t total, non_emb;
        fm_llm_params(&cfg, &total, &non_emb);
        assert_true((double)total == params);
    }
    fm_counts_free(counts);
    fm_graph_free(g);
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

static void test_t5_matches_graph(void **state)
{
    (void)state;
    char tiny[512];
    snprintf(tiny, sizeof(tiny), "%s/llm/t5_tiny.json", FM_TEST_DATA);   /* gated-gelu */
    for (int tp = 1; tp <= 2; tp++) {
        check_t5(tiny, tp, 64, 64);
        check_t5(tiny, tp, 96, 24);   /* decoder_seq other than seq */
        check_t5("t5-base", tp, 512, 512);   /* relu */
        check_t5("t5-base", tp, 512, 114);   /* T5's pre-training target length */
    }
    /* a run of the plan makes the same check (graph_check) and reports it */
    struct fm_ctx *ctx = test_ctx();
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.config_path = tiny;
    o.gpus = 4;
    o.tp = 2;
    o.seq = 96;
    o.decoder_seq = 24;
    o.device = "h100";
    struct fm_plan *p = run_ok(ctx, &o);
    if (!p->graph_equal)
        fail_msg("t5_tiny tp 2: %s", p->graph_note);
    assert_int_equal(p->eval.cfg.dseq, 24);
    fm_plan_free(p);
    fm_ctx_free(ctx);
}

/* t5-base at tp 2 on one node, one sequence of 512 source and 128 target tokens: the
 * tensor-parallel all-reduces of a step by hand, h bf16 values a token each: forward 2 an
 * encoder layer (S tokens) and 3 a decoder layer (D tokens); backward the same, and in each
 * decoder layer the gradient of the S encoder outputs that the cross-attention's k and v read;
 * a full recompute runs the forward's again. Memory: ZeRO 0 holds 18 bytes a parameter. */
static void test_t5_comm_by_hand(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "t5-base";
    o.gpus = 2;
    o.tp = 2;
    o.seq = 512;
    o.decoder_seq = 128;
    o.global_batch = 1;
    o.zero = 0;
    o.device = "h100";
    double h = 768, S = 512, D = 128, L = 12;
    for (int full = 0; full <= 1; full++) {
        o.recompute = full ? FM_RECOMPUTE_FULL : FM_RECOMPUTE_NONE;
        struct fm_plan *p = run_ok(ctx, &o);
        double fwd = L * 2 * S + L * 3 * D, bwd = L * 2 * S + L * (3 * D + S);
        double want = ((full ? 2 : 1) * fwd + bwd) * h * 2;
        double got = p->eval.comm[FM_PLAN_COMM_TP].bytes;
        if (fabs(got - want) > 1e-12 * want)
            fail_msg("t5-base tp 2 recompute %d: %.0f all-reduced bytes, by hand %.0f", full,
                     got, want);
        assert_true(p->graph_equal);
        assert_true(p->eval.mem_weights + p->eval.mem_grads + p->eval.mem_optimizer ==
                    18 * p->eval.params_per_gpu);
        fm_plan_free(p);
    }
    fm_ctx_free(ctx);
}

/* What a T5 plan does not model is refused by name, with the nearest valid choice. */
static void test_t5_refusals(void **state)
{
    (void)state;
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "t5-base";
    o.gpus = 2;
    o.device = "h100";
    /* 12 + 12 layers: no split of 11 stages divides both stacks (r | 12 and 11 - r | 12) */
    o.gpus = 11;
    o.pp = 11;
    expect_refusal(&o, "fm_plan_opts.pp = 11: T5 (t5-base) puts its encoder's 12 layers",
                   "nearest valid: pp = 10 or 12");
    o.gpus = 2;
    o.pp = 2;
    o.interleave = 2;
    expect_refusal(&o, "fm_plan_opts.interleave = 2", "not modelled for T5");
    o.interleave = 0;
    o.balance_embedding = true;
    expect_refusal(&o, "fm_plan_opts.balance_embedding is for decoders", "t5-base");
    o.balance_embedding = false;
    o.pp = 0;
    o.cp = 2;
    expect_refusal(&o, "fm_plan_opts.cp = 2", "nearest valid: cp = 1");
    o.cp = 0;
    o.ep = 2;
    expect_refusal(&o, "fm_plan_opts.ep = 2", "nearest valid: ep = 1");
    o.ep = 0;
    o.decoder_seq = -1;
    expect_refusal(&o, "fm_plan_opts.decoder_seq must be positive", "-1");
    /* decoder_seq is T5's alone */
    o.model = "llama-3.1-8b";
    o.decoder_seq = 128;
    expect_refusal(&o, "fm_plan_opts.decoder_seq", "llama-3.1-8b has no decoder of its own");
    /* a search of T5 keeps to the plans it models */
    struct fm_ctx *ctx = test_ctx();
    fm_plan_opts_init(&o);
    o.model = "t5-base";
    o.gpus = 8;
    o.device = "h100";
    o.global_batch = 64;
    o.search = true;
    struct fm_plan *p = run_ok(ctx, &o);
    for (int i = 0; i < p->search.n_best; i++) {
        const struct fm_plan_cfg *c = &p->search.best[i].cfg;
        assert_true(c->pp == 1 || fm_plan_t5_split(&p->env, c) > 0);
        assert_int_equal(c->cp, 1);
        assert_int_equal(c->dseq, 512);
    }
    fm_plan_free(p);
    fm_ctx_free(ctx);
}

/* t5-base on 2 pipeline stages (pp 2, one GPU each), 512 source and 128 target tokens, 8
 * micro-batches of 1: the encoder's 12 layers on stage 0 with the embedding, its relative
 * bias and final norm; the decoder's 12 on stage 1 with its bias, final norm and the copy of
 * the embedding that is its input and the head. Parameters by hand, t5-base's 222,903,552 in
 * all plus the copy; the stage boundary sends the S encoder outputs (h bf16 values each)
 * forward and their gradient back; the model FLOPs are the plan's at pp 1. */
static void test_t5_pipeline_by_hand(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "t5-base";
    o.gpus = 2;
    o.pp = 2;
    o.seq = 512;
    o.decoder_seq = 128;
    o.global_batch = 8;
    o.zero = 0;
    o.device = "h100";
    struct fm_plan *p = run_ok(ctx, &o);
    assert_int_equal(fm_plan_t5_split(&p->env, &p->eval.cfg), 1);
    assert_true(p->graph_equal);
    double h = 768, f = 3072, V = 32128, bias = 32 * 12;
    double enc = 12 * (4 * h * h + 2 * h * f + 2 * h), dec = 12 * (8 * h * h + 2 * h * f + 3 * h);
    double stage0 = enc + V * h + bias + h, stage1 = dec + V * h + bias + h;
    assert_true(stage0 + stage1 == 222903552.0 + V * h);
    /* the decoder's stage holds the most: more parameters, the logits */
    if (p->eval.params_per_gpu != stage1)
        fail_msg("pp 2: %.0f parameters on the largest stage, by hand %.0f (the encoder's %.0f)",
                 p->eval.params_per_gpu, stage1, stage0);
    double want = 8 * 4 * 512 * h * 2;   /* micro-batches x (send + receive, both ways) */
    if (p->eval.comm[FM_PLAN_COMM_PP].bytes != want)
        fail_msg("pp 2: %.0f bytes point to point, by hand %.0f",
                 p->eval.comm[FM_PLAN_COMM_PP].bytes, want);
    double model = p->eval.model_flops;
    fm_plan_free(p);
    o.pp = 1;
    o.gpus = 1;
    p = run_ok(ctx, &o);
    assert_true(p->eval.model_flops == model);
    fm_plan_free(p);
    fm_ctx_free(ctx);
}

/* BERT-base (post-LN, dropout, GELU MLP of 4h, learned positions) on one GPU with attention
 * unfused: per layer Korthikanti et al. 2022's 34 sbh + 5 a s^2 b, as GPT's; parameters
 * 12h^2 + 13h a layer, the word (vocabulary padded to 30,592), position and token-type
 * embeddings and their LayerNorm, and the masked-LM head: transform (h^2 + h), LayerNorm (2h),
 * the decoder's bias (V), its weight tied to the word embeddings. */
static void test_bert_by_hand(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "bert-base";
    o.gpus = 1;
    o.device = "h100";
    o.zero = 0;
    o.no_flash_attention = true;
    o.seq = 512;
    o.global_batch = 1;
    struct fm_plan *p = run_ok(ctx, &o);
    assert_true(p->graph_equal);
    double h = 768, L = 12, V = 30592, s = 512, a = 12;
    double params = L * (12 * h * h + 13 * h) + V * h + 512 * h + 2 * h + 2 * h +
                    (h * h + h + 2 * h + V);
    if (p->eval.params_per_gpu != params)
        fail_msg("BERT %.0f parameters, by hand %.0f", p->eval.params_per_gpu, params);
    double act = L * s * (34 * h + 5 * a * s) + 8 * V * s;
    if (p->eval.mem_activations != act)
        fail_msg("BERT activations %.0f, by hand %.0f", p->eval.mem_activations, act);
    /* model FLOPs: 3 x (24 s h^2 + 4 s^2 h a layer + the head's 2 s h^2 + 2 s h V), V the
     * unpadded 30,522 */
    double fwd = L * (24 * s * h * h + 4 * s * s * h) + 2 * s * h * h + 2 * s * h * 30522;
    assert_true(fabs(p->eval.model_flops - 3 * fwd) < 1e-9 * fwd);
    fm_plan_free(p);
    fm_ctx_free(ctx);
}

/* Multi-head latent attention by hand on tests/data/llm/deepseek_v3/config.json (h 64, 4 heads,
 * q_lora 32, kv_lora 24, qk_nope 16, qk_rope 8, v_head 16, vocab 320, 3 layers of which the
 * first dense (intermediate 128), then 8 experts of 32 (top 2) and one shared expert of 32) at
 * tp 2: q_a (h x q_lora) and kv_a (h x (kv_lora + rope)) and their norms on every rank, q_b,
 * kv_b and o with 2 heads of the 4. */
static void test_mla_by_hand(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    char path[512];
    snprintf(path, sizeof(path), "%s/llm/deepseek_v3/config.json", FM_TEST_DATA);
    size_t n = 0;
    char *text = test_read_file(path, &n);
    struct fm_llm_config cfg;
    FM_ASSERT_OK(ctx, fm_llm_config_parse(ctx, text, n, path, &cfg));
    free(text);
    struct fm_devices *devs = NULL;
    const struct fm_device *dev = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    FM_ASSERT_OK(ctx, fm_devices_find(ctx, devs, "h100", &dev));
    struct fm_cluster cl;
    FM_ASSERT_OK(ctx, fm_cluster_builtin(ctx, "dgx-h100", &cl));
    struct fm_plan_env env = {.cfg = &cfg, .dev = dev, .cluster = &cl,
                              .precision = FM_PREC_BF16, .gpus = 2, .grad_bytes = 4,
                              .flash = true, .ppp_compute = 0.6, .ppp_memory = 0.7,
                              .ppp_comm = 0.7, .vocab = 320};
    const double s = 64;
    struct fm_plan_cfg c = {.tp = 2, .pp = 1, .dp = 1, .cp = 1, .ep = 1, .v = 1, .mb = 1,
                            .gb = 1, .m = 1, .seq = (int64_t)s};
    double flops, params;
    fm_plan_rank_work(&env, &c, &flops, &params);
    double h = 64, nh = 2, qk = 24, vd = 16;
    double down = h * 32 + h * (24 + 8);
    double up = 32 * nh * qk + 24 * nh * (16 + vd) + nh * vd * h;
    double attn = down + up + 32 + 24;                  /* + the two latents' norms */
    double dense = 3 * h * (128 / 2);
    double moe = h * 8 + 8 * 3 * h * (32 / 2) + 3 * h * (32 / 2);   /* router, experts, shared */
    double want = (attn + 2 * h + dense) + 2 * (attn + 2 * h + moe) + 2 * (320 / 2) * h + h;
    if (params != want)
        fail_msg("MLA tp 2: %.0f parameters, by hand %.0f", params, want);
    double core = 2 * s * nh * (qk + vd);               /* QK^T over qk, AV over v_head */
    double mm = 3 * 2 * (down + up) + 2 * dense +
                2 * 2 * (h * 8 + 3 * h * (2 * 16 + 16)) + 2 * h * (320 / 2);
    if (flops != mm + 3 * core)
        fail_msg("MLA tp 2: %.0f FLOPs a token, by hand %.0f", flops, mm + 3 * core);

    /* saved activations at tp 1, one sequence of 64, flash attention (bytes a token): 8h of
     * h-wide inputs; bf16 latents' norm and up-projection inputs (2 q_lora + 2 kv_lora), the
     * rotary key's input (rope), q and k (qk a head), v and o's input (v_head a head), the
     * MLP's three intermediates; 4 bytes of log-sum-exp a head; fp32 logits and gradient over
     * the vocabulary padded to 384 */
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.config_path = path;
    o.gpus = 1;
    o.device = "h100";
    o.seq = 64;
    o.global_batch = 1;
    struct fm_plan *p = run_ok(ctx, &o);
    assert_true(p->graph_equal);
    double lat = 2 * 32 + 2 * 24 + 8, heads = 2 * 4 * qk + 2 * 4 * vd;
    double l_dense = 8 * h + 2 * (lat + heads + 3 * 128) + 4 * 4;
    double l_moe = 8 * h + 2 * (lat + heads + 3 * (2 * 32 + 32)) + 4 * 4;
    double act = s * (l_dense + 2 * l_moe + 8 * 384);
    if (p->eval.mem_activations != act)
        fail_msg("MLA activations %.0f, by hand %.0f", p->eval.mem_activations, act);
    fm_plan_free(p);
    /* the same config at tp 2 against its counted graph */
    o.gpus = 2;
    o.tp = 2;
    p = run_ok(ctx, &o);
    assert_true(p->graph_equal);
    fm_plan_free(p);
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

/* DeepSeek-V3's pre-training layout (DeepSeek-AI 2024, section 3.2): 2,048 GPUs, pp 16,
 * ep 64 over 8 nodes, ZeRO-1 data parallelism, no tensor parallelism. 61 layers on 16 stages
 * as Megatron-Core's DeepSeek-V3 layout puts them (4 on each of 15, 1 on the last): the first
 * stage, the embedding, 3 dense layers and 1 MoE layer, holds the most, its 256 experts split
 * 64 ways (4 a rank). */
static void test_deepseek_v3_layout(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "deepseek-v3";
    o.gpus = 2048;
    o.device = "h100";
    o.pp = 16;
    o.ep = 64;
    o.seq = 4096;
    o.global_batch = 15360;
    o.recompute = FM_RECOMPUTE_FULL;
    struct fm_plan *p = run_ok(ctx, &o);
    assert_true(p->graph_equal);
    assert_int_equal(p->eval.cfg.dp, 128);
    assert_int_equal(p->eval.cfg.zero, 1);
    double h = 7168, nh = 128, ql = 1536, kl = 512;
    double attn = h * ql + ql + ql * nh * 192 + h * (kl + 64) + kl + kl * nh * (128 + 128) +
                  nh * 128 * h;
    double dense = attn + 2 * h + 3 * h * 18432;
    double moe = attn + 2 * h + h * 256 + 4 * 3 * h * 2048 + 3 * h * 2048;
    double first = 129280 * h + 3 * dense + moe;
    if (p->eval.params_per_gpu != first)
        fail_msg("first stage %.0f parameters, by hand %.0f", p->eval.params_per_gpu, first);
    fm_plan_free(p);
    /* the uneven layout is DeepSeek-V3's: other models keep pp dividing the layers */
    fm_plan_opts_init(&o);
    o.model = "llama-3.1-8b";
    o.gpus = 3;
    o.device = "h100";
    o.pp = 3;
    struct fm_plan *q = NULL;
    assert_int_equal(fm_plan_run(ctx, &o, &q), FM_ERR_INVALID);
    EXPECT_MESSAGE(ctx, "fm_plan_opts.pp = 3 does not divide the layers (32)");
    /* the search tries the same layouts: for DeepSeek-V3's 61 layers pp 16 (4 x 15 + 1), 2
     * and 8; 3 and 7 divide 63 (the embedding and the head in slots); 32 leaves the last
     * stage nothing (2 x 31 = 62); a Llama keeps the divisors */
    static struct fm_llm_config dsc, llc;
    const struct fm_llm_config *ds = &dsc, *ll = &llc;
    FM_ASSERT_OK(ctx, fm_llm_config_builtin(ctx, "deepseek-v3", &dsc));
    FM_ASSERT_OK(ctx, fm_llm_config_builtin(ctx, "llama-3.1-8b", &llc));
    bool bal = true;
    assert_true(fm_plan_search_pp(ds, 16, &bal) && !bal);
    assert_true(fm_plan_search_pp(ds, 2, &bal) && !bal);
    assert_true(fm_plan_search_pp(ds, 8, &bal) && !bal);
    assert_true(fm_plan_search_pp(ds, 3, &bal) && bal);
    assert_true(fm_plan_search_pp(ds, 7, &bal) && bal);
    assert_false(fm_plan_search_pp(ds, 32, &bal));
    assert_true(fm_plan_search_pp(ds, 1, &bal) && !bal);
    assert_true(fm_plan_search_pp(ll, 16, &bal) && !bal);
    assert_false(fm_plan_search_pp(ll, 3, &bal));
    assert_true(fm_plan_search_pp(ll, 17, &bal) && bal);   /* 34 slots */
    /* and a search on 2,048 GPUs (a power of two: no pp dividing 61 or 63 but 1 divides it)
     * now lists pipelined plans of DeepSeek-V3 */
    fm_plan_opts_init(&o);
    o.model = "deepseek-v3";
    o.gpus = 2048;
    o.device = "h800";
    o.seq = 4096;
    o.global_batch = 15360;
    o.search = true;
    struct fm_plan *s = run_ok(ctx, &o);
    bool pipelined = false;
    for (int i = 0; i < s->search.n_best; i++)
        pipelined |= s->search.best[i].cfg.pp > 1;
    assert_true(s->search.n_best > 0 && pipelined);
    fm_plan_free(s);
    fm_ctx_free(ctx);
}

static void test_cli(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(test_run_cli("plan megatron-gpt-175b --gpus 64 --device a100 --tp 8 --pp 8 "
                                  "--global-batch 64 --format json", &out, &err), 0);
    const char *keys[] = {"\"step_s\"", "\"mfu\"", "\"hfu\"", "\"tokens_per_s\"",
                          "\"memory_per_gpu_bytes\"", "\"fits\""};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        test_expect_in(out, keys[i]);
    free(out);
    free(err);
    assert_int_equal(test_run_cli("plan megatron-gpt-175b --gpus 40 --device a100 --tp 5", &out,
                                  &err), 2);
    test_expect_in(err, "--tp = 5 does not divide the attention heads (96); nearest valid: 4 or 6");
    free(out);
    free(err);
}

/* A probe's figures saved as a cluster file load back as the plan reads them. */
static void test_nccl_save_cluster(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_nccl_probe np;
    memset(&np, 0, sizeof(np));
    np.gpus = 8;
    snprintf(np.gpu_name, sizeof(np.gpu_name), "NVIDIA H100 80GB HBM3");
    np.busbw[0] = 360e9;
    np.small_s[0] = 30e-6;
    char path[] = "/tmp/fm_nccl_cluster_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    FM_ASSERT_OK(ctx, fm_nccl_save_cluster(ctx, &np, path));
    struct fm_cluster c;
    FM_ASSERT_OK(ctx, fm_cluster_load(ctx, path, &c));
    assert_int_equal(c.gpus_per_node, 8);
    assert_true(fabs(c.intra_bw - 360e9) < 1e-3);
    assert_true(fabs(c.intra_lat_s - 30e-6 / 6.0) < 1e-15);   /* 6 tree steps over 8 */
    assert_string_equal(c.device, "NVIDIA H100 80GB HBM3");
    /* the plan takes it, the GPU found by its own name */
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "llama-3.1-8b";
    o.gpus = 8;
    o.cluster = path;
    o.ppp_comm = 1.0;
    struct fm_plan *p = run_ok(ctx, &o);
    assert_string_equal(p->dev->name, "H100 SXM5 80GB");
    fm_plan_free(p);
    unlink(path);
    np.gpus = 1;
    assert_int_equal(fm_nccl_save_cluster(ctx, &np, path), FM_ERR_INVALID);
    fm_ctx_free(ctx);
}

/* probe --nccl on this machine: measured figures where there are GPUs and NCCL, a skip with
 * the reason where not (a build without CUDA, no GPU, one GPU, no libnccl). */
static void test_probe_nccl(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    int rc = test_run_cli("probe --nccl", &out, &err);
    if (rc != 0) {
        bool known = strstr(err, "without the CUDA backend") || strstr(err, "no CUDA GPU") ||
                     strstr(err, "one GPU is visible") || strstr(err, "could not be opened");
        if (!known)
            fail_msg("probe --nccl failed: %s", err);
        fprintf(stderr, "skipped: %s", err);
        free(out);
        free(err);
        skip();
    }
    test_expect_in(out, "all-reduce");
    test_expect_in(out, "all-to-all");
    assert_null(strstr(out, " 0.0 GB/s"));
    free(out);
    free(err);
}

/* Any counted model takes data and pipeline parallelism: ResNet-18's model states are its
 * counted parameters under the plan's recipe, and its step with pp = 1 is the session's
 * predicted forward + backward (PALEO's sum) plus exposed communication and the optimizer. */
static void test_counted_graph(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "resnet18";
    o.gpus = 8;
    o.device = "a100";
    o.micro_batch = 32;
    o.global_batch = 256;
    o.zero = 0;
    struct fm_plan *p = run_ok(ctx, &o);
    assert_true(p->generic);
    double params = 11689512;   /* torchvision's resnet18 */
    assert_true(p->eval.params_per_gpu == params);
    assert_true(p->eval.mem_weights == 2 * params);
    assert_true(p->eval.mem_grads == 4 * params);
    assert_true(p->eval.mem_optimizer == 12 * params);
    assert_true(p->eval.step_s == p->eval.t_compute + p->eval.t_comm_exposed +
                                      p->eval.t_optimizer);
    assert_true(p->eval.t_bubble == 0);
    assert_true(p->eval.t_compute > 0);
    fm_plan_free(p);
    /* pipeline: the bubble is (p - 1) micro-batch slots of the slowest stage */
    o.gpus = 8;
    o.pp = 2;
    o.global_batch = 256;
    p = run_ok(ctx, &o);
    assert_int_equal(p->eval.cfg.m, 2);
    assert_true(p->eval.t_bubble > 0);
    assert_true(p->eval.params_per_gpu < params);
    fm_plan_free(p);
    o.pp = 0;
    o.tp = 2;
    expect_refusal(&o, "resnet18 is not a language model's config", "fm_plan_opts.tp");
    fm_ctx_free(ctx);
}

/* ---- a language model's plan timed by a calibration ---- */

/* A calibration fitted to made-up times, without timing anything: for every class and phase of
 * a training step, t = fixed + flops / 300 TFLOP/s + bytes / 2 TB/s, a fixed part of its own
 * per class and phase; three samples each, so that the fit can tell the terms apart. */
static struct fm_calibration *synthetic_calibration(struct fm_ctx *ctx, const char *device,
                                                    enum fm_precision precision)
{
    static const double work[3][2] = {{1e9, 1e7}, {4e9, 1e7}, {1e9, 8e7}};
    struct fm_calib_sample s[FM_CLASS_COUNT * 3 * 3];
    size_t n = 0;
    for (int cls = 0; cls < FM_CLASS_COUNT; cls++) {
        for (int ph = FM_PHASE_FWD; ph <= FM_PHASE_BWD_WEIGHT; ph++) {
            for (int j = 0; j < 3; j++) {
                memset(&s[n], 0, sizeof(s[n]));
                s[n].cls = (enum fm_class)cls;
                s[n].phase = (enum fm_phase)ph;
                s[n].flops = work[j][0];
                s[n].bytes = work[j][1];
                s[n].seconds = 1e-6 * (1 + cls + 0.5 * ph) + work[j][0] / 300e12 +
                               work[j][1] / 2e12;
                n++;
            }
        }
    }
    struct fm_calibration m;
    memset(&m, 0, sizeof(m));
    snprintf(m.device, sizeof(m.device), "%s", device);
    snprintf(m.backend, sizeof(m.backend), "%s", "cuda");
    m.precision = precision;
    snprintf(m.date, sizeof(m.date), "%s", "2026-12-01T20:00:00Z");
    m.peak = 300e12;
    m.bandwidth = 2e12;
    struct fm_calibration *c = NULL;
    FM_ASSERT_OK(ctx, fm_calibration_fit(ctx, s, n, &m, &c));
    return c;
}


/* synthetic_calibration of the device table's H100 (its name as the table spells it) at bf16 */
static struct fm_calibration *h100_calibration(struct fm_ctx *ctx)
{
    struct fm_devices *devs = NULL;
    const struct fm_device *dev = NULL;
    FM_ASSERT_OK(ctx, fm_devices_load(ctx, NULL, &devs));
    FM_ASSERT_OK(ctx, fm_devices_find(ctx, devs, "h100", &dev));
    struct fm_calibration *cal = synthetic_calibration(ctx, dev->name, FM_PREC_BF16);
    fm_devices_free(devs);
    return cal;
}

struct graph_times {
    double fwd, bwd, core;   /* per micro-batch: forward, backward, attention's forward */
};

/* The whole model (every layer) on one tensor-parallel rank, timed node by node as predict
 * times it with the calibration: the config sharded by hand as Megatron-LM shards it (heads,
 * kv heads, the MLPs by tp; the vocabulary padded to 128 x tp, then split), built at the
 * micro-batch and sequence with its loss, counted as a training step with Adam. */
static struct graph_times whole_graph_times(struct fm_ctx *ctx, const struct fm_llm_config *m,
                                            int tp, int64_t mb, int64_t seq,
                                            const struct fm_device *dev,
                                            const struct fm_calibration *cal)
{
    struct fm_llm_config sh = *m;
    int64_t unit = 128 * (int64_t)tp;
    sh.vocab = (m->vocab + unit - 1) / unit * unit / tp;
    sh.heads /= tp;
    sh.kv_heads = m->kv_heads >= tp ? m->kv_heads / tp : 1;
    sh.ffn /= tp;
    sh.moe_ffn /= tp;
    sh.shared_ffn /= tp;
    struct fm_llm_build_opts bo;
    fm_llm_build_opts_init(&bo);
    bo.batch = mb;
    bo.seq = seq;
    bo.dtype = FM_DTYPE_BF16;
    bo.with_loss = true;
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_llm_build(ctx, &sh, &bo, &g));
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = FM_MODE_TRAIN;
    co.optimizer = FM_OPTIM_ADAM;
    struct fm_counts *k = NULL;
    FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &k));
    struct fm_predict_opts po;
    fm_predict_opts_init(&po);
    po.device = dev;
    po.precision = cal->precision;
    po.calibration = cal;
    struct fm_prediction *pr = NULL;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, k, &po, &pr));
    struct graph_times t = {0, 0, 0};
    for (size_t id = 0; id < fm_graph_node_count(g); id++) {
        const struct fm_phase_time *x = pr->nodes[id];
        for (int ph = FM_PHASE_FWD; ph <= FM_PHASE_BWD_WEIGHT; ph++) {
            if (x[ph].flops > 0 || x[ph].bytes > 0)
                assert_true(x[ph].calibrated);   /* every class has its entry */
        }
        t.fwd += x[FM_PHASE_FWD].t_calibrated;
        t.bwd += x[FM_PHASE_BWD_DATA].t_calibrated + x[FM_PHASE_BWD_WEIGHT].t_calibrated;
        if (fm_op_class(fm_graph_node(g, (fm_nid)id)->op) == FM_CLASS_ATTENTION)
            t.core += x[FM_PHASE_FWD].t_calibrated;
    }
    fm_prediction_free(pr);
    fm_counts_free(k);
    fm_graph_free(g);
    return t;
}

static void expect_close(double got, double want, const char *what)
{
    if (!(fabs(got - want) <= 1e-12 * fabs(want)) || !(want > 0))
        fail_msg("%s: the plan's %.17g s, the whole graph's %.17g s", what, got, want);
}

/* With a calibration, a pp = 1 plan's compute is the calibration's time of every node of the
 * rank's graph (the embedding, every layer, the head and the loss), forward and backward,
 * times the micro-batches: the plan times one layer of each kind and multiplies, the test sums
 * the whole graph. Full recompute adds the forward once more, selective the attention core.
 * Llama 3.1 8B at tp 2 (32 dense layers); the tiny DeepSeek-V3 (one dense layer, two MoE). */
static void test_calibrated_compute(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_devices *devs = NULL;
    const struct fm_device *dev = NULL;
    FM_ASSERT_OK(ctx, fm_devices_load(ctx, NULL, &devs));
    FM_ASSERT_OK(ctx, fm_devices_find(ctx, devs, "h100", &dev));
    struct fm_calibration *cal = synthetic_calibration(ctx, dev->name, FM_PREC_BF16);
    char path[512];
    snprintf(path, sizeof(path), "%s/llm/deepseek_v3/config.json", FM_TEST_DATA);
    static const struct { const char *model; bool file; int tp; int64_t gpus, gb, seq; } cases[] = {
        {"llama-3.1-8b", false, 2, 8, 16, 256},
        {NULL, true, 1, 2, 8, 64},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int rc = FM_RECOMPUTE_NONE; rc <= FM_RECOMPUTE_FULL; rc++) {
            struct fm_plan_opts o;
            fm_plan_opts_init(&o);
            o.model = cases[i].model;
            o.config_path = cases[i].file ? path : NULL;
            o.gpus = cases[i].gpus;
            o.tp = cases[i].tp;
            o.device = "h100";
            o.global_batch = cases[i].gb;
            o.micro_batch = 2;
            o.seq = cases[i].seq;
            o.recompute = (enum fm_recompute)rc;
            o.calibration = cal;
            struct fm_plan *p = run_ok(ctx, &o);
            assert_true(p->calibrated);
            assert_int_equal(p->timing.uncalibrated, 0);
            int64_t m = cases[i].gb / (2 * (cases[i].gpus / cases[i].tp));
            assert_int_equal(p->eval.cfg.m, m);
            struct graph_times t = whole_graph_times(ctx, &p->model, cases[i].tp, 2,
                                                     cases[i].seq, dev, cal);
            expect_close(p->eval.t_compute, (double)m * (t.fwd + t.bwd), p->model.name);
            if (rc == FM_RECOMPUTE_FULL)
                expect_close(p->eval.t_recompute, (double)m * t.fwd, "full recompute");
            else if (rc == FM_RECOMPUTE_SELECTIVE)
                expect_close(p->eval.t_recompute, (double)m * t.core, "selective recompute");
            else
                assert_true(p->eval.t_recompute == 0);
            /* the rest of the step keeps its formulas: the parts still add up */
            assert_true(p->eval.step_s == p->eval.t_compute + p->eval.t_recompute +
                                              p->eval.t_comm_exposed + p->eval.t_bubble +
                                              p->eval.t_optimizer);
            if (rc == FM_RECOMPUTE_NONE) {
                /* the report says which timing; without the calibration it says nothing new
                 * and the compute is the roofline's */
                char *text = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&text, &len);
                FM_ASSERT_OK(ctx, fm_report_plan(f, p, FM_FORMAT_JSON));
                fclose(f);
                assert_non_null(strstr(text, "\"compute_timing\": \"calibration\""));
                free(text);
                o.calibration = NULL;
                struct fm_plan *r = run_ok(ctx, &o);
                assert_false(r->calibrated);
                assert_null(r->env.timing);
                assert_true(r->eval.t_compute != p->eval.t_compute);
                f = open_memstream(&text, &len);
                FM_ASSERT_OK(ctx, fm_report_plan(f, r, FM_FORMAT_JSON));
                fclose(f);
                assert_null(strstr(text, "compute_timing"));
                free(text);
                fm_plan_free(r);
            }
            fm_plan_free(p);
        }
    }

    /* pp 2: a stage runs half the layers and the embedding (first) or the head and the loss
     * (last). The whole graph at 32 and at 16 layers gives a layer's time l and the embedding's
     * and head's together (e + h); the slowest stage is then 16 l + max(e, h), between
     * 16 l + (e + h) / 2 and 16 l + e + h. */
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "llama-3.1-8b";
    o.gpus = 8;
    o.tp = 2;
    o.pp = 2;
    o.device = "h100";
    o.global_batch = 16;
    o.micro_batch = 2;
    o.seq = 256;
    o.calibration = cal;
    struct fm_plan *p = run_ok(ctx, &o);
    int64_t m = p->eval.cfg.m;
    assert_int_equal(m, 4);
    struct fm_llm_config half = p->model;
    half.layers = 16;
    struct graph_times whole = whole_graph_times(ctx, &p->model, 2, 2, 256, dev, cal);
    struct graph_times part = whole_graph_times(ctx, &half, 2, 2, 256, dev, cal);
    double all = whole.fwd + whole.bwd, l = (all - (part.fwd + part.bwd)) / 16;
    double ends = all - 32 * l, got = p->eval.t_compute / (double)m;
    if (!(got >= (16 * l + ends / 2) * (1 - 1e-12) && got <= (16 * l + ends) * (1 + 1e-12)))
        fail_msg("pp 2: a micro-batch's compute %.17g s, not between %.17g and %.17g", got,
                 16 * l + ends / 2, 16 * l + ends);
    fm_plan_free(p);

    /* the CLI reads a calibration file and says which timing it used */
    char file[64];
    snprintf(file, sizeof(file), "%s", "/tmp/fm_test_plan_calib_XXXXXX");
    int fd = mkstemp(file);
    assert_true(fd >= 0);
    close(fd);
    FM_ASSERT_OK(ctx, fm_calibration_save(ctx, cal, file));
    char args[256], *out = NULL, *err = NULL;
    snprintf(args, sizeof(args), "plan llama-3.1-8b --gpus 8 --tp 2 --device h100 --seq 256 "
             "--calibration %s", file);
    assert_int_equal(test_run_cli(args, &out, &err), 0);
    test_expect_in(out, "timing: compute by calibration");
    test_expect_in(out, "0 of its");
    free(out);
    free(err);
    unlink(file);
    fm_calibration_free(cal);
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

/* A calibration made on another device (or at another precision) than the plan's is refused
 * with both names, as predict refuses it, unless forced; context parallelism, which one timed
 * graph cannot show, and GPT-2 at tp > 1 (q, k, v fused) are refused by name. */
static void test_calibration_refusals(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_calibration *other = synthetic_calibration(ctx, "NVIDIA A100-SXM4-80GB",
                                                         FM_PREC_BF16);
    snprintf(other->source, sizeof(other->source), "%s", "a100.calib.json");
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "llama-3.1-8b";
    o.gpus = 8;
    o.device = "h100";
    o.seq = 256;
    o.calibration = other;
    expect_refusal(&o, "calibration a100.calib.json was made for device "
                       "\"NVIDIA A100-SXM4-80GB\", this run uses \"H100 SXM5 80GB\"",
                   "fm_plan_opts.force_calibration");
    o.force_calibration = true;
    struct fm_plan *p = run_ok(ctx, &o);
    assert_true(p->calibrated);
    fm_plan_free(p);
    o.force_calibration = false;

    struct fm_calibration *h100 = h100_calibration(ctx);
    o.calibration = h100;
    o.precision = FM_PREC_FP8;
    expect_refusal(&o, "was made for precision bf16, this run uses fp8",
                   "fm_plan_opts.force_calibration");
    o.precision = FM_PREC_BF16;
    o.cp = 2;
    expect_refusal(&o, "fm_plan_opts.calibration", "fm_plan_opts.cp = 2");
    o.cp = 0;
    o.model = "gpt2";
    o.tp = 2;
    o.gpus = 2;
    o.global_batch = 0;
    o.seq = 128;
    expect_refusal(&o, "fuses q, k and v", "tp = 1");
    /* a T5 plan is timed by the roofline only */
    o.model = "t5-base";
    o.tp = 1;
    o.gpus = 1;
    expect_refusal(&o, "fm_plan_opts.calibration", "T5 (t5-base)");
    fm_calibration_free(h100);
    fm_calibration_free(other);
    fm_ctx_free(ctx);
}

/* Without a ZeRO stage given, the search tries 0 to 3 (3 with pp 1 only) and lists each layout
 * at its fastest stage: Llama 3.1 8B on 16 H100s at 64 x 8192 tokens fits without pipeline or
 * tensor parallelism only with the gradients sharded too (at ZeRO 1 its 8B parameters keep 16 +
 * 32 + 6 GB of model state a GPU, with activations past 80 GB), so the best plan is faster
 * than the best at ZeRO 1 and shards more; with a stage given (zero, fsdp) every plan keeps it. */
static void test_search_zero(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "llama-3.1-8b";
    o.gpus = 16;
    o.device = "h100";
    o.global_batch = 64;
    o.seq = 8192;
    o.search = true;
    struct fm_plan *p = run_ok(ctx, &o);
    assert_true(p->search.zero_searched);
    bool other = false;
    for (int i = 0; i < p->search.n_best; i++) {
        const struct fm_plan_cfg *c = &p->search.best[i].cfg;
        assert_true(c->zero >= 0 && c->zero <= 3);
        assert_true(c->zero < 3 || c->pp == 1);
        other = other || c->zero != 1;
    }
    assert_true(other);
    o.zero = 1;
    struct fm_plan *one = run_ok(ctx, &o);
    assert_false(one->search.zero_searched);
    for (int i = 0; i < one->search.n_best; i++)
        assert_int_equal(one->search.best[i].cfg.zero, 1);
    assert_true(p->search.best[0].step_s < one->search.best[0].step_s);
    assert_true(p->search.best[0].cfg.zero >= 2);
    /* four stages tried where one was (a few fewer: ZeRO-3 with pp > 1 is not) */
    assert_true(p->search.evaluated > 3 * one->search.evaluated);
    assert_true(p->search.evaluated < 4 * one->search.evaluated);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    FM_ASSERT_OK(ctx, fm_report_plan(f, p, FM_FORMAT_TABLE));
    fclose(f);
    assert_non_null(strstr(text, "ZeRO 0 to 3"));
    char want[32];
    snprintf(want, sizeof(want), "zero %d", p->search.best[0].cfg.zero);
    assert_non_null(strstr(strstr(text, "search:"), want));
    free(text);
    fm_plan_free(one);
    fm_plan_free(p);
    o.zero = -1;
    o.fsdp = true;
    p = run_ok(ctx, &o);
    assert_false(p->search.zero_searched);
    for (int i = 0; i < p->search.n_best; i++) {
        assert_int_equal(p->search.best[i].cfg.zero, 3);
        assert_int_equal(p->search.best[i].cfg.pp, 1);
    }
    fm_plan_free(p);
    fm_ctx_free(ctx);
}

/* A search with a calibration times every plan it tries by the calibration: its best plan,
 * planned alone with the same calibration, takes exactly the time the search gave it; no plan
 * uses context parallelism (one timed graph cannot show it); and its compute is not the
 * roofline search's. GPT-2's plans at tp > 1, which cannot be timed, are skipped. */
static void test_calibrated_search(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_calibration *cal = h100_calibration(ctx);
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "llama-3.1-8b";
    o.gpus = 16;
    o.device = "h100";
    o.global_batch = 64;
    o.seq = 4096;
    o.search = true;
    o.calibration = cal;
    struct fm_plan *p = run_ok(ctx, &o);
    assert_true(p->calibrated);
    assert_true(p->search.n_best >= 2);
    for (int i = 0; i < p->search.n_best; i++)
        assert_int_equal(p->search.best[i].cfg.cp, 1);
    const struct fm_plan_cfg *b = &p->search.best[0].cfg;
    struct fm_plan_opts one = o;
    one.search = false;
    one.tp = b->tp;
    one.pp = b->pp;
    one.dp = b->dp;
    one.interleave = b->v;
    one.zero = b->zero;
    one.sequence_parallel = b->sp;
    one.recompute = b->recompute;
    one.micro_batch = b->mb;
    one.balance_embedding = b->balance;
    struct fm_plan *q = run_ok(ctx, &one);
    assert_true(q->calibrated);
    assert_true(q->eval.step_s == p->search.best[0].step_s);
    assert_true(q->eval.t_compute == p->search.best[0].t_compute);
    fm_plan_free(q);
    o.calibration = NULL;
    struct fm_plan *r = run_ok(ctx, &o);
    assert_true(r->search.best[0].t_compute != p->search.best[0].t_compute);
    fm_plan_free(r);
    fm_plan_free(p);
    /* GPT-2 cannot be timed at tp > 1 (q, k, v fused): those plans are skipped, not refused;
     * what no plan can time (a sequence past its learned positions) is the search's error */
    o.calibration = cal;
    o.model = "gpt2";
    o.seq = 1024;
    p = run_ok(ctx, &o);
    for (int i = 0; i < p->search.n_best; i++)
        assert_int_equal(p->search.best[i].cfg.tp, 1);
    fm_plan_free(p);
    o.seq = 2048;
    expect_refusal(&o, "2048 is beyond the 1024 learned positions", "max_position_embeddings");
    fm_calibration_free(cal);
    fm_ctx_free(ctx);
}

/* The timed graph holds one layer of each kind whatever the depth: Llama 3.1 405B (126 layers)
 * times the same node-phases as Llama 3.1 8B (32), and its plan on 16,384 GPUs stays fast. */
static void test_calibrated_layer_once(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_calibration *cal = h100_calibration(ctx);
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    o.model = "llama-3.1-405b";
    o.gpus = 16384;
    o.device = "h100";
    o.tp = 8;
    o.pp = 16;
    o.balance_embedding = true;
    o.global_batch = 2048;
    o.seq = 8192;
    o.calibration = cal;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct fm_plan *big = run_ok(ctx, &o);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (s > 5.0)   /* well under a second on a quiet machine; this leaves room for a busy one */
        fail_msg("llama-3.1-405b's calibrated plan took %.2f s", s);
    fm_plan_opts_init(&o);
    o.model = "llama-3.1-8b";
    o.gpus = 8;
    o.device = "h100";
    o.tp = 8;
    o.seq = 8192;
    o.calibration = cal;
    struct fm_plan *small = run_ok(ctx, &o);
    assert_true(big->timing.node_phases > 0);
    assert_int_equal(big->timing.node_phases, small->timing.node_phases);
    fm_plan_free(small);
    fm_plan_free(big);
    fm_calibration_free(cal);
    fm_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_busbw_factors),  cmocka_unit_test(test_group_links),
        cmocka_unit_test(test_cluster_hgx_h800),
        cmocka_unit_test(test_bubble),         cmocka_unit_test(test_zero_bytes),
        cmocka_unit_test(test_memory_by_hand), cmocka_unit_test(test_activations_tp),
        cmocka_unit_test(test_in_flight),      cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_cluster_file),   cmocka_unit_test(test_search_speed),
        cmocka_unit_test(test_rank_work_matches_graph), cmocka_unit_test(test_cli),
        cmocka_unit_test(test_nccl_save_cluster), cmocka_unit_test(test_probe_nccl),
        cmocka_unit_test(test_counted_graph), cmocka_unit_test(test_comm_by_hand),
        cmocka_unit_test(test_embedding_copies_by_hand),
        cmocka_unit_test(test_mla_by_hand),   cmocka_unit_test(test_deepseek_v3_layout),
        cmocka_unit_test(test_bert_by_hand), cmocka_unit_test(test_config_files_match_graph),
        cmocka_unit_test(test_calibrated_compute), cmocka_unit_test(test_calibration_refusals),
        cmocka_unit_test(test_search_zero), cmocka_unit_test(test_calibrated_search),
        cmocka_unit_test(test_calibrated_layer_once),
        cmocka_unit_test(test_t5_matches_graph), cmocka_unit_test(test_t5_comm_by_hand),
        cmocka_unit_test(test_t5_refusals),
        cmocka_unit_test(test_t5_pipeline_by_hand),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
