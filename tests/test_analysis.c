/* Tests of the analyses against hand-computed expectations: operational intensity, attainable
 * FLOP/s, ridge point and bound on tiny graphs; both time bounds with PPP and launch overhead;
 * which precision and unit each node's phase gets (torch-default, the optimizer on vector
 * units); the ring all-reduce and its overlap with the backward pass; step, epoch and run
 * figures, and with --gpus N a run that follows the data-parallel step; utilization by the
 * theory and counted methods, --peak and --step-time with units and a unit slip refused; the
 * PALEO problem set's K80 arithmetic and Verma's "attainable = min(OI x BW, peak)" rows (docs/roofline.md, references 3 and 4); the SVG chart; the commands end to end. */
#include "support.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef FM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

/* relative closeness for doubles computed two ways */
#define ASSERT_NEAR(a, b, rel)                                                               \
    do {                                                                                     \
        double a_ = (a), b_ = (b);                                                           \
        if (!(fabs(a_ - b_) <= (rel) * fmax(fabs(a_), fabs(b_))))                            \
            fail_msg("%s = %.17g, expected %s = %.17g", #a, a_, #b, b_);                     \
    } while (0)

/* A test device with round figures: fp32 1 TFLOP/s vector, fp16 8 and tf32 4 TFLOP/s on
 * tensor cores, 100 GB/s memory, 2 GB/s (bidirectional) interconnect. Ridges: fp32 10 FLOP/B,
 * tf32 40, fp16 80. */
static struct fm_device test_device(void)
{
    struct fm_device d;
    memset(&d, 0, sizeof(d));
    d.name = "Test device";
    d.kind = "gpu";
    d.peak_vector[FM_PREC_FP32] = 1e12;
    d.peak_vector[FM_PREC_FP64] = 0.5e12;
    d.peak_tensor[FM_PREC_FP16] = 8e12;
    d.peak_tensor[FM_PREC_TF32] = 4e12;
    d.mem_bw = 1e11;
    d.interconnect_bw = 2e9;
    d.source = "test";
    return d;
}

static fm_tid tensor(struct fm_ctx *ctx, struct fm_graph *g, const char *name, enum fm_role role,
                     int rank, const int64_t *dims)
{
    struct fm_shape s;
    memset(&s, 0, sizeof(s));
    s.rank = rank;
    for (int i = 0; i < rank; i++)
        s.dims[i] = dims[i];
    fm_tid id = FM_NONE;
    FM_ASSERT_OK(ctx, fm_graph_add_tensor(g, name, role, FM_DTYPE_FP32, &s, &id));
    return id;
}

/* conv 3x3 pad 1, 16 -> 16 channels on 1x16x8x8 fp32, no bias, then relu. With convs = 2 a
 * second such conv follows the relu. With linear, flatten and a 1024 -> 10 linear follow. */
static struct fm_graph *tiny_graph(struct fm_ctx *ctx, int convs, bool linear)
{
    struct fm_graph *g = NULL;
    FM_ASSERT_OK(ctx, fm_graph_new(ctx, "tiny", &g));
    fm_tid x = tensor(ctx, g, "x", FM_ROLE_INPUT, 4, (const int64_t[]){1, 16, 8, 8});
    struct fm_attrs a;
    fm_attrs_init(&a);
    a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
    fm_tid w1 = tensor(ctx, g, "w1", FM_ROLE_PARAM, 4, (const int64_t[]){16, 16, 3, 3});
    fm_tid y, z;
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_CONV, "conv1", &a, (fm_tid[]){x, w1}, 2, NULL, 1,
                                        &y));
    FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_RELU, "relu", NULL, (fm_tid[]){y}, 1, NULL, 1,
                                        &z));
    if (convs == 2) {
        fm_tid w2 = tensor(ctx, g, "w2", FM_ROLE_PARAM, 4, (const int64_t[]){16, 16, 3, 3});
        fm_tid y2;
        FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_CONV, "conv2", &a, (fm_tid[]){z, w2}, 2,
                                            NULL, 1, &y2));
        z = y2;
    }
    if (linear) {
        struct fm_attrs fa;
        fm_attrs_init(&fa);
        fa.axis = 1;
        fm_tid f, o;
        FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_FLATTEN, "flatten", &fa, (fm_tid[]){z}, 1,
                                            NULL, 1, &f));
        fm_tid wl = tensor(ctx, g, "wl", FM_ROLE_PARAM, 2, (const int64_t[]){10, 1024});
        FM_ASSERT_OK(ctx, fm_graph_add_node(g, FM_OP_LINEAR, "fc", NULL, (fm_tid[]){f, wl}, 2,
                                            NULL, 1, &o));
    }
    FM_ASSERT_OK(ctx, fm_graph_finalize(g));
    return g;
}

static struct fm_counts *count(struct fm_ctx *ctx, struct fm_graph *g, enum fm_mode mode)
{
    struct fm_count_opts co;
    fm_count_opts_init(&co);
    co.mode = mode;
    struct fm_counts *c = NULL;
    FM_ASSERT_OK(ctx, fm_count(ctx, g, &co, &c));
    return c;
}

static fm_nid node_id(const struct fm_graph *g, const char *name)
{
    for (size_t i = 0; i < fm_graph_node_count(g); i++) {
        if (strcmp(fm_graph_node(g, (fm_nid)i)->name, name) == 0)
            return (fm_nid)i;
    }
    fail_msg("no node %s", name);
    return FM_NONE;
}

/* Hand counts of the tiny graph's forward pass (fp32, 4 bytes per element):
 *   conv1: MAC = (1*16*8*8 outputs) x (16*3*3 per output) = 1024 x 144 = 147456,
 *          FLOPs = 2 x MAC = 294912; bytes = x 4096 + w 9216 + y 4096 = 17408;
 *          OI = 294912 / 17408 = 16.941 FLOP/B
 *   relu:  1024 compares = 1024 FLOPs; bytes = 4096 read + 4096 written = 8192; OI = 0.125 */
enum { CONV_FLOPS = 294912, CONV_BYTES = 17408, RELU_FLOPS = 1024, RELU_BYTES = 8192 };

static void test_roofline_fp32(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = tiny_graph(ctx, 1, false);
    struct fm_counts *c = count(ctx, g, FM_MODE_INFER);
    struct fm_device dev = test_device();
    struct fm_predict_opts o;
    fm_predict_opts_init(&o);
    o.device = &dev;
    o.precision = FM_PREC_FP32;
    o.ppp_compute = o.ppp_memory = 1.0;
    struct fm_prediction *p = NULL;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &p));
    const struct fm_phase_time *conv = &p->nodes[node_id(g, "conv1")][FM_PHASE_FWD];
    const struct fm_phase_time *relu = &p->nodes[node_id(g, "relu")][FM_PHASE_FWD];
    assert_true(conv->flops == CONV_FLOPS && conv->bytes == CONV_BYTES);
    assert_true(relu->flops == RELU_FLOPS && relu->bytes == RELU_BYTES);
    /* conv: fp32 has no tensor ceiling here: 1e12, ridge 1e12 / 1e11 = 10 FLOP/B; OI 16.94 is
     * above it: compute-bound, attainable = the peak */
    ASSERT_NEAR(conv->intensity, 294912.0 / 17408.0, 1e-15);
    ASSERT_NEAR(conv->ridge, 10.0, 1e-15);
    assert_false(conv->tensor);
    assert_true(conv->peak == 1e12);
    assert_true(conv->attainable == 1e12);
    assert_false(conv->memory_bound);
    /* relu: OI 0.125, attainable = 0.125 x 1e11 = 1.25e10 FLOP/s, memory-bound */
    ASSERT_NEAR(relu->intensity, 0.125, 1e-15);
    ASSERT_NEAR(relu->attainable, 1.25e10, 1e-15);
    assert_true(relu->memory_bound);
    /* times at PPP 1: conv t_c = 294912 / 1e12 = 294.912 ns, t_m = 17408 / 1e11 = 174.08 ns;
     * relu t_c = 1.024 ns, t_m = 81.92 ns */
    ASSERT_NEAR(conv->t_compute, 294.912e-9, 1e-12);
    ASSERT_NEAR(conv->t_memory, 174.08e-9, 1e-12);
    ASSERT_NEAR(conv->t_roofline, 294.912e-9, 1e-12);
    ASSERT_NEAR(conv->t_paleo, 468.992e-9, 1e-12);
    ASSERT_NEAR(relu->t_roofline, 81.92e-9, 1e-12);
    ASSERT_NEAR(relu->t_paleo, 82.944e-9, 1e-12);
    /* step: roofline 294.912 + 81.92 = 376.832 ns, PALEO 468.992 + 82.944 = 551.936 ns */
    ASSERT_NEAR(p->step_roofline_s, 376.832e-9, 1e-12);
    ASSERT_NEAR(p->step_paleo_s, 551.936e-9, 1e-12);
    assert_int_equal(p->kernels, 2);
    /* the network as one point: 295936 FLOPs over 25600 bytes = 11.56 FLOP/B, both kernels on
     * the 1e12 ceiling, so its ceiling is 1e12 and its ridge 10: compute-bound */
    ASSERT_NEAR(p->step.intensity, 295936.0 / 25600.0, 1e-15);
    ASSERT_NEAR(p->step.peak, 1e12, 1e-12);
    ASSERT_NEAR(p->step.ridge, 10.0, 1e-12);
    assert_false(p->step.memory_bound);
    assert_true(p->peak_ref == 1e12);
    fm_prediction_free(p);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

static void test_roofline_fp16_tensor(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = tiny_graph(ctx, 1, false);
    struct fm_counts *c = count(ctx, g, FM_MODE_INFER);
    struct fm_device dev = test_device();
    struct fm_predict_opts o;
    fm_predict_opts_init(&o);
    o.device = &dev;
    o.precision = FM_PREC_FP16;
    o.ppp_compute = o.ppp_memory = 1.0;
    struct fm_prediction *p = NULL;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &p));
    const struct fm_phase_time *conv = &p->nodes[node_id(g, "conv1")][FM_PHASE_FWD];
    const struct fm_phase_time *relu = &p->nodes[node_id(g, "relu")][FM_PHASE_FWD];
    /* conv on fp16 tensor cores: 8e12, ridge 80; OI 16.94 is below: memory-bound at
     * 16.941 x 1e11 = 1.6941e12 FLOP/s */
    assert_true(conv->tensor);
    assert_true(conv->peak == 8e12);
    ASSERT_NEAR(conv->ridge, 80.0, 1e-15);
    assert_true(conv->memory_bound);
    ASSERT_NEAR(conv->attainable, 294912.0 / 17408.0 * 1e11, 1e-15);
    /* relu: no tensor cores for activations, no fp16 vector figure: the fp32 vector 1e12 */
    assert_false(relu->tensor);
    assert_true(relu->peak == 1e12);
    /* network ceiling = 295936 / (294912 / 8e12 + 1024 / 1e12) = 295936 / 3.7888e-8 =
     * 7.8108e12; ridge 78.1 > OI 11.56: memory-bound at 11.56 x 1e11 */
    ASSERT_NEAR(p->step.peak, 295936.0 / 3.7888e-8, 1e-12);
    assert_true(p->step.memory_bound);
    ASSERT_NEAR(p->step.attainable, 295936.0 / 25600.0 * 1e11, 1e-12);
    /* utilization is quoted against the matrix ceiling of the precision */
    assert_true(p->peak_ref == 8e12);
    fm_prediction_free(p);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* PPP and launch overhead: PPP compute 0.5, memory 0.8, 3 us per kernel. */
static void test_predict_bounds_ppp_launch(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = tiny_graph(ctx, 1, false);
    struct fm_counts *c = count(ctx, g, FM_MODE_INFER);
    struct fm_device dev = test_device();
    struct fm_predict_opts o;
    fm_predict_opts_init(&o);
    o.device = &dev;
    o.ppp_compute = 0.5;
    o.ppp_memory = 0.8;
    o.launch_overhead_us = 3.0;
    struct fm_prediction *p = NULL;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &p));
    const struct fm_phase_time *conv = &p->nodes[node_id(g, "conv1")][FM_PHASE_FWD];
    const struct fm_phase_time *relu = &p->nodes[node_id(g, "relu")][FM_PHASE_FWD];
    /* conv: t_c = 294912 / (1e12 x 0.5) = 589.824 ns; t_m = 17408 / (1e11 x 0.8) = 217.6 ns;
     * roofline = 589.824 ns + 3 us; PALEO = 807.424 ns + 3 us */
    ASSERT_NEAR(conv->t_compute, 589.824e-9, 1e-12);
    ASSERT_NEAR(conv->t_memory, 217.6e-9, 1e-12);
    ASSERT_NEAR(conv->t_launch, 3e-6, 1e-15);
    ASSERT_NEAR(conv->t_roofline, 589.824e-9 + 3e-6, 1e-12);
    ASSERT_NEAR(conv->t_paleo, 807.424e-9 + 3e-6, 1e-12);
    /* relu: t_c = 1024 / 5e11 = 2.048 ns; t_m = 8192 / 8e10 = 102.4 ns */
    ASSERT_NEAR(relu->t_roofline, 102.4e-9 + 3e-6, 1e-12);
    ASSERT_NEAR(relu->t_paleo, 104.448e-9 + 3e-6, 1e-12);
    /* two kernels, two launches */
    assert_int_equal(p->kernels, 2);
    ASSERT_NEAR(p->step.t_launch, 6e-6, 1e-12);
    ASSERT_NEAR(p->step_roofline_s, 692.224e-9 + 6e-6, 1e-12);
    ASSERT_NEAR(p->step_paleo_s, 911.872e-9 + 6e-6, 1e-12);
    /* the same through the one-kernel function */
    struct fm_phase_time t;
    fm_phase_time_eval(CONV_FLOPS, CONV_BYTES, 1e12, 1e11, &o, &t);
    ASSERT_NEAR(t.t_paleo, conv->t_paleo, 1e-15);
    /* no work, no launch */
    fm_phase_time_eval(0, 0, 1e12, 1e11, &o, &t);
    assert_true(t.t_roofline == 0 && t.t_paleo == 0);
    fm_prediction_free(p);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* --precision torch-default: convolutions on TF32 tensor cores, the linear layer in FP32. */
static void test_torch_default_and_tf32(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = tiny_graph(ctx, 1, true);
    struct fm_counts *c = count(ctx, g, FM_MODE_INFER);
    struct fm_device dev = test_device();
    struct fm_predict_opts o;
    fm_predict_opts_init(&o);
    o.device = &dev;
    o.torch_default = true;
    struct fm_prediction *p = NULL;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &p));
    const struct fm_phase_time *conv = &p->nodes[node_id(g, "conv1")][FM_PHASE_FWD];
    const struct fm_phase_time *fc = &p->nodes[node_id(g, "fc")][FM_PHASE_FWD];
    assert_int_equal(conv->precision, FM_PREC_TF32);
    assert_true(conv->tensor && conv->peak == 4e12);
    assert_int_equal(fc->precision, FM_PREC_FP32);
    assert_true(!fc->tensor && fc->peak == 1e12);
    /* fc: 2 x 1024 x 10 = 20480 FLOPs */
    assert_true(fc->flops == 20480);
    assert_true(p->peak_ref == 4e12);
    fm_prediction_free(p);
    /* --precision tf32: the linear layer on tensor cores too */
    o.torch_default = false;
    o.precision = FM_PREC_TF32;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &p));
    fc = &p->nodes[node_id(g, "fc")][FM_PHASE_FWD];
    assert_true(fc->tensor && fc->peak == 4e12);
    fm_prediction_free(p);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* Training at fp16: convolution phases on tensor cores, the optimizer update on fp32 vector
 * units (an elementwise update of fp32 master weights). */
static void test_training_phases(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = tiny_graph(ctx, 1, false);
    struct fm_counts *c = count(ctx, g, FM_MODE_TRAIN);
    struct fm_device dev = test_device();
    struct fm_predict_opts o;
    fm_predict_opts_init(&o);
    o.device = &dev;
    o.precision = FM_PREC_FP16;
    struct fm_prediction *p = NULL;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &p));
    fm_nid conv = node_id(g, "conv1");
    assert_true(p->nodes[conv][FM_PHASE_BWD_WEIGHT].tensor);
    assert_true(p->nodes[conv][FM_PHASE_BWD_WEIGHT].peak == 8e12);
    /* the network input needs no gradient: conv1 has no input-gradient work */
    assert_true(p->nodes[conv][FM_PHASE_BWD_DATA].flops == 0);
    const struct fm_phase_time *opt = &p->nodes[conv][FM_PHASE_OPTIMIZER];
    assert_true(opt->flops > 0);
    assert_false(opt->tensor);
    assert_int_equal(opt->precision, FM_PREC_FP32);
    assert_true(opt->peak == 1e12);
    /* bwd_weight of conv1: as many MACs as the forward (dW = dY x X^T): 294912 FLOPs */
    assert_true(p->nodes[conv][FM_PHASE_BWD_WEIGHT].flops == CONV_FLOPS);
    /* the step is the sum over every phase */
    double sum = 0;
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
        sum += p->total[ph].t_roofline;
    ASSERT_NEAR(p->step_roofline_s, sum, 1e-12);
    fm_prediction_free(p);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

static void test_errors(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = tiny_graph(ctx, 1, false);
    struct fm_counts *c = count(ctx, g, FM_MODE_INFER);
    struct fm_device dev = test_device();
    struct fm_predict_opts o;
    fm_predict_opts_init(&o);
    struct fm_prediction *p = NULL;
    assert_int_equal(fm_predict(ctx, g, c, &o, &p), FM_ERR_INVALID); /* no device */
    assert_non_null(strstr(fm_ctx_error(ctx), "device"));
    o.device = &dev;
    o.ppp_compute = 0;
    assert_int_equal(fm_predict(ctx, g, c, &o, &p), FM_ERR_INVALID);
    assert_non_null(strstr(fm_ctx_error(ctx), "PPP"));
    o.ppp_compute = 0.62;
    o.precision = FM_PREC_FP8;   /* the test device has no fp8 units */
    assert_int_equal(fm_predict(ctx, g, c, &o, &p), FM_ERR_UNSUPPORTED);
    assert_non_null(strstr(fm_ctx_error(ctx), "no fp8 ceiling"));
    assert_non_null(strstr(fm_ctx_error(ctx), "conv1"));
    assert_null(p);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- data parallelism ---- */

static void test_ring_allreduce(void **state)
{
    (void)state;
    /* 100 MB over 4 GPUs on 600 GB/s bidirectional links: each GPU moves 2 x 3/4 x 100 MB =
     * 150 MB over one direction (300 GB/s): 0.5 ms; at PPP 0.5: 1 ms */
    ASSERT_NEAR(fm_ring_allreduce_s(100e6, 4, 600e9, 1.0), 0.5e-3, 1e-15);
    ASSERT_NEAR(fm_ring_allreduce_s(100e6, 4, 600e9, 0.5), 1e-3, 1e-15);
    /* 2 GPUs: 2 x 1/2 x 100 MB / 300 GB/s = 333.3 us */
    ASSERT_NEAR(fm_ring_allreduce_s(100e6, 2, 600e9, 1.0), 100e6 / 300e9, 1e-15);
    assert_true(fm_ring_allreduce_s(100e6, 1, 600e9, 1.0) == 0.0);
}

static double bwd_time(const struct fm_prediction *p, fm_nid id)
{
    return p->nodes[id][FM_PHASE_BWD_DATA].t_roofline + p->nodes[id][FM_PHASE_BWD_WEIGHT].t_roofline;
}

static void test_data_parallel(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_device dev = test_device();
    struct fm_predict_opts o;
    fm_predict_opts_init(&o);
    o.device = &dev;
    o.ppp_compute = o.ppp_memory = 1.0;

    /* one conv: its gradient (16 x 16 x 3 x 3 x 4 bytes = 9216 B) is ready only when the whole
     * backward is done, so overlap hides nothing. Ring over 2 GPUs, 2 GB/s bidirectional:
     * 2 x 1/2 x 9216 B / 1 GB/s = 9.216 us */
    struct fm_graph *g = tiny_graph(ctx, 1, false);
    struct fm_counts *c = count(ctx, g, FM_MODE_TRAIN);
    assert_true(c->grad_bytes == 9216);
    struct fm_prediction *p = NULL;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &p));
    struct fm_dp_estimate dp;
    FM_ASSERT_OK(ctx, fm_predict_data_parallel(ctx, g, c, p, 1, 2, dev.interconnect_bw, 1.0, &dp));
    ASSERT_NEAR(dp.t_allreduce, 9.216e-6, 1e-12);
    ASSERT_NEAR(dp.step_1[FM_BOUND_ROOFLINE], p->step_roofline_s, 1e-12);
    ASSERT_NEAR(dp.step_serial[FM_BOUND_ROOFLINE], p->step_roofline_s + 9.216e-6, 1e-12);
    ASSERT_NEAR(dp.step_overlap[FM_BOUND_ROOFLINE], dp.step_serial[FM_BOUND_ROOFLINE], 1e-12);
    ASSERT_NEAR(dp.step_serial[FM_BOUND_PALEO], p->step_paleo_s + 9.216e-6, 1e-12);
    ASSERT_NEAR(dp.efficiency_serial[FM_BOUND_ROOFLINE],
                p->step_roofline_s / (p->step_roofline_s + 9.216e-6), 1e-12);
    ASSERT_NEAR(dp.samples_per_s_serial[FM_BOUND_ROOFLINE],
                2.0 / (p->step_roofline_s + 9.216e-6), 1e-12);
    fm_prediction_free(p);
    fm_counts_free(c);
    fm_graph_free(g);

    /* conv1 -> relu -> conv2: conv2's gradient (9216 B, 9.216 us) is reduced while relu and
     * conv1 run their backward; conv1's follows when both the link and backward are free:
     *   end = max(max(b2 + 9.216us, b2 + br + b1) + 9.216us, b2 + br + b1) */
    g = tiny_graph(ctx, 2, false);
    c = count(ctx, g, FM_MODE_TRAIN);
    assert_true(c->grad_bytes == 2 * 9216);
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &p));
    FM_ASSERT_OK(ctx, fm_predict_data_parallel(ctx, g, c, p, 1, 2, dev.interconnect_bw, 1.0, &dp));
    ASSERT_NEAR(dp.t_allreduce, 2 * 9.216e-6, 1e-12);
    double b1 = bwd_time(p, node_id(g, "conv1")), br = bwd_time(p, node_id(g, "relu")),
           b2 = bwd_time(p, node_id(g, "conv2"));
    double link = fmax(b2 + 9.216e-6, b2 + br + b1) + 9.216e-6;
    double end = fmax(link, b2 + br + b1);
    double fwd = p->total[FM_PHASE_FWD].t_roofline, opt = p->total[FM_PHASE_OPTIMIZER].t_roofline;
    ASSERT_NEAR(dp.step_overlap[FM_BOUND_ROOFLINE], fwd + end + opt, 1e-12);
    assert_true(dp.step_overlap[FM_BOUND_ROOFLINE] < dp.step_serial[FM_BOUND_ROOFLINE]);
    /* inference has nothing to reduce */
    struct fm_counts *ci = count(ctx, g, FM_MODE_INFER);
    assert_int_equal(fm_predict_data_parallel(ctx, g, ci, p, 1, 2, 1e9, 1.0, &dp), FM_ERR_INVALID);
    fm_counts_free(ci);
    assert_int_equal(fm_predict_data_parallel(ctx, g, c, p, 1, 2, 0.0, 1.0, &dp), FM_ERR_INVALID);
    assert_non_null(strstr(fm_ctx_error(ctx), "fm_session_opts.interconnect"));
    fm_prediction_free(p);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- step, epoch, run; utilization: on hand-made counts ---- */

/* fwd 1e9 MAC = 2e9 FLOPs, bwd_data 0.9e9 MAC, bwd_weight 1e9 MAC, optimizer 3e6 adds,
 * per batch of 32 */
static struct fm_counts hand_counts(enum fm_mode mode)
{
    struct fm_counts c;
    memset(&c, 0, sizeof(c));
    c.mode = mode;
    c.total[FM_PHASE_FWD].prim[FM_PRIM_MAC] = 1000000000;
    if (mode == FM_MODE_TRAIN) {
        c.total[FM_PHASE_BWD_DATA].prim[FM_PRIM_MAC] = 900000000;
        c.total[FM_PHASE_BWD_WEIGHT].prim[FM_PRIM_MAC] = 1000000000;
        c.total[FM_PHASE_OPTIMIZER].prim[FM_PRIM_ADD] = 3000000;
    }
    return c;
}

static void test_run_estimate(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_counts c = hand_counts(FM_MODE_TRAIN);
    struct fm_prediction p;
    memset(&p, 0, sizeof(p));
    p.step_roofline_s = 0.01;
    p.step_paleo_s = 0.02;
    p.peak_ref = 1e12;
    struct fm_run_estimate r;
    /* batch 32, 1000 samples: ceil(1000 / 32) = 32 steps per epoch; 3 epochs */
    FM_ASSERT_OK(ctx, fm_predict_run(ctx, &p, &c, 32, 1000, 3.0, &r));
    /* step FLOPs: 2e9 + 1.8e9 + 2e9 + 3e6 = 5.803e9 */
    assert_true(r.step_flops == 5.803e9);
    assert_int_equal(r.steps_per_epoch, 32);
    ASSERT_NEAR(r.samples_per_s[FM_BOUND_ROOFLINE], 3200.0, 1e-15);
    ASSERT_NEAR(r.samples_per_s[FM_BOUND_PALEO], 1600.0, 1e-15);
    ASSERT_NEAR(r.epoch_s[FM_BOUND_ROOFLINE], 0.32, 1e-15);
    ASSERT_NEAR(r.total_s[FM_BOUND_PALEO], 3 * 32 * 0.02, 1e-15);
    /* epoch: 5.8e9 / 32 x 1000 + 3e6 x 32 = 181.25e9 + 0.096e9 = 181.346e9; x 3 epochs */
    ASSERT_NEAR(r.epoch_flops, 181.346e9, 1e-15);
    ASSERT_NEAR(r.total_flops, 3 * 181.346e9, 1e-15);
    /* utilization: 5.803e9 / (0.01 s x 1e12) = 58.03% */
    ASSERT_NEAR(r.utilization[FM_BOUND_ROOFLINE], 0.5803, 1e-12);
    assert_int_equal(fm_predict_run(ctx, &p, &c, 0, 1000, 1.0, &r), FM_ERR_INVALID);
    fm_ctx_free(ctx);
}

static bool close_to(double a, double b, double rel)
{
    return fabs(a - b) <= rel * fabs(b);
}

/* predict --gpus N: the run's steps and times follow the data-parallel step (a global batch
 * of batch x N), the one-GPU figures kept under their own name. */
static void test_gpus_run_follows_dp_step(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_PREDICT);
    o.model = "resnet50";
    o.device = "h100";
    o.load.zoo.batch = 256;
    o.load.batch_given = true;
    o.gpus = 8;
    o.dataset_size = 1281167;
    o.epochs = 90;
    struct fm_session *s = test_session_ok(ctx, &o);
    const struct fm_run_estimate *r = &s->run, *one = &s->run_1gpu;
    assert_true(s->have_dp);
    assert_int_equal(r->gpus, 8);
    assert_int_equal(r->global_batch, 2048);
    assert_int_equal(r->steps_per_epoch, 626);      /* ceil(1281167 / (8 x 256)) */
    assert_int_equal(one->gpus, 1);
    assert_int_equal(one->steps_per_epoch, 5005);   /* ceil(1281167 / 256) */
    uint64_t step = 0, opt = fm_work_flops(&s->counts->total[FM_PHASE_OPTIMIZER]);
    for (int ph = 0; ph < FM_PHASE_COUNT; ph++)
        step += fm_work_flops(&s->counts->total[ph]);
    assert_true(one->step_flops == (double)step);
    assert_true(r->step_flops == 8.0 * (double)step);
    /* every replica runs its optimizer each step; forward and backward scale with samples */
    double per_sample = (double)(step - opt) / 256.0;
    assert_true(close_to(r->epoch_flops, per_sample * 1281167.0 + (double)opt * 8 * 626, 1e-12));
    for (int b = 0; b < FM_BOUND_COUNT; b++) {
        /* the step is the data-parallel one, the all-reduce overlapped with backward */
        assert_true(r->step_s[b] == s->dp.step_overlap[b]);
        assert_true(close_to(r->epoch_s[b], s->dp.step_overlap[b] * 626, 1e-12));
        assert_true(close_to(r->total_s[b], r->epoch_s[b] * 90, 1e-12));
        assert_true(close_to(r->samples_per_s[b], 2048 / s->dp.step_overlap[b], 1e-12));
        assert_true(close_to(one->epoch_s[b], s->dp.step_1[b] * 5005, 1e-9));
        /* about an eighth of the one-GPU time: 626/5005 steps, each a little longer */
        double ratio = r->total_s[b] / one->total_s[b];
        if (!(ratio > 626.0 / 5005 && ratio < 626.0 / 5005 * 1.05))
            fail_msg("8 GPUs take %.4f of one GPU's time", ratio);
        /* utilization per GPU: the same as one GPU's up to the all-reduce's share */
        assert_true(r->utilization[b] <= one->utilization[b] * (1 + 1e-12));
    }
    fm_session_free(s);

    /* the table and JSON say the same */
    char *out;
    assert_int_equal(test_run_cli("predict resnet50 --device h100 --batch 256 --gpus 8 "
                                  "--dataset-size 1281167 --epochs 90 --summary",
                                  &out, NULL),
                     0);
    test_expect_in(out, "626 steps of 2048");
    test_expect_in(out, "5005 steps of 256");
    test_expect_in(out, "prediction on 8 GPUs");
    free(out);
#ifdef FM_HAVE_CJSON
    assert_int_equal(test_run_cli("predict resnet50 --device h100 --batch 256 --gpus 8 "
                                  "--dataset-size 1281167 --epochs 90 --format json",
                                  &out, NULL),
                     0);
    cJSON *j = cJSON_Parse(out);
    assert_non_null(j);
    const cJSON *run = cJSON_GetObjectItem(j, "run");
    assert_int_equal(cJSON_GetObjectItem(run, "steps_per_epoch")->valuedouble, 626);
    assert_int_equal(cJSON_GetObjectItem(run, "global_batch")->valuedouble, 2048);
    const cJSON *j1 = cJSON_GetObjectItem(run, "one_gpu");
    assert_non_null(j1);
    assert_int_equal(cJSON_GetObjectItem(j1, "steps_per_epoch")->valuedouble, 5005);
    double t8 = cJSON_GetObjectItem(cJSON_GetObjectItem(run, "total_s"), "roofline")->valuedouble;
    double t1 = cJSON_GetObjectItem(cJSON_GetObjectItem(j1, "total_s"), "roofline")->valuedouble;
    assert_true(t8 < t1 / 7.5 && t8 > t1 / 8.5);
    cJSON_Delete(j);
    free(out);
#endif
    /* one GPU: no one_gpu object, the run is the one-GPU run */
    fm_session_opts_init(&o, FM_TASK_PREDICT);
    o.model = "resnet50";
    o.device = "h100";
    o.load.zoo.batch = 256;
    o.dataset_size = 1281167;
    s = test_session_ok(ctx, &o);
    assert_int_equal(s->run.steps_per_epoch, 5005);
    assert_int_equal(s->run.global_batch, 256);
    assert_false(s->have_dp);
    fm_session_free(s);
    fm_ctx_free(ctx);
}

/* Epoch AI's utilization methods (Hobbhahn, 2022): theory = 3 x forward, counted = forward + backward as counted. */
static void test_utilization(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_counts c = hand_counts(FM_MODE_TRAIN);
    struct fm_utilization u;
    /* 1 ms per step of 32 on a 10 TFLOP/s peak; epoch of 1000 samples in 40 ms */
    FM_ASSERT_OK(ctx, fm_utilization(ctx, &c, 32, 1e13, 1e-3, 40e-3, 1000, &u));
    /* theory: 3 x 2e9 = 6e9 -> 6e9 / (1e-3 x 1e13) = 60% */
    assert_true(u.step_flops[FM_UTIL_THEORY] == 6e9);
    ASSERT_NEAR(u.step_util[FM_UTIL_THEORY], 0.6, 1e-12);
    /* counted: 2e9 + 1.8e9 + 2e9 = 5.8e9 -> 58%; with the optimizer 5.803e9 -> 58.03% */
    assert_true(u.step_flops[FM_UTIL_COUNTED] == 5.8e9);
    ASSERT_NEAR(u.step_util[FM_UTIL_COUNTED], 0.58, 1e-12);
    ASSERT_NEAR(u.step_util[FM_UTIL_COUNTED_OPT], 0.5803, 1e-12);
    /* epoch: 32 steps; theory 6e9 / 32 x 1000 = 187.5e9 -> / (40e-3 x 1e13) = 46.875% */
    assert_int_equal(u.steps_per_epoch, 32);
    ASSERT_NEAR(u.epoch_flops[FM_UTIL_THEORY], 187.5e9, 1e-15);
    ASSERT_NEAR(u.epoch_util[FM_UTIL_THEORY], 0.46875, 1e-12);
    /* counted + optimizer: 181.25e9 + 32 x 3e6 = 181.346e9 */
    ASSERT_NEAR(u.epoch_util[FM_UTIL_COUNTED_OPT], 181.346e9 / 4e11, 1e-12);
    assert_false(u.impossible);
    /* 0.1 ms per step would be 600%: impossible */
    FM_ASSERT_OK(ctx, fm_utilization(ctx, &c, 32, 1e13, 1e-4, 0, 0, &u));
    assert_true(u.impossible);
    ASSERT_NEAR(u.step_util[FM_UTIL_THEORY], 6.0, 1e-12);
    /* inference: every method is the forward */
    struct fm_counts ci = hand_counts(FM_MODE_INFER);
    FM_ASSERT_OK(ctx, fm_utilization(ctx, &ci, 32, 1e13, 1e-3, 0, 0, &u));
    assert_true(u.step_flops[FM_UTIL_THEORY] == 2e9 && u.step_flops[FM_UTIL_COUNTED] == 2e9);
    /* bad input */
    assert_int_equal(fm_utilization(ctx, &c, 32, 1e13, 0, 0, 0, &u), FM_ERR_INVALID);
    assert_int_equal(fm_utilization(ctx, &c, 32, 1e13, 0, 1.0, 0, &u), FM_ERR_INVALID);
    assert_int_equal(fm_utilization(ctx, &c, 32, 0, 1.0, 0, 0, &u), FM_ERR_INVALID);
    fm_ctx_free(ctx);
}

/* --peak and --step-time take units (312T, 19.5 TFLOPS, 310ms); what is not a rate is refused. */
static void test_flops_and_duration_units(void **state)
{
    (void)state;
    const struct {
        const char *text;
        double flops;
    } ok[] = {
        {"312e12", 312e12},     {"312T", 312e12},     {"312TFLOP/s", 312e12},
        {"19.5 TFLOPS", 19.5e12}, {"900G", 900e9},    {"1.979P", 1.979e15},
        {"312tflops", 312e12},  {"5e9", 5e9},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        double v = 0;
        if (!fm_flops_parse(ok[i].text, &v) || fabs(v - ok[i].flops) > 1e-9 * ok[i].flops)
            fail_msg("'%s' read as %g, expected %g", ok[i].text, v, ok[i].flops);
    }
    const char *bad[] = {"", "T", "312X", "312 TB/s", "-5T", "abc", "312TFLOP/sx"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        double v = 0;
        if (fm_flops_parse(bad[i], &v))
            fail_msg("'%s' accepted as %g", bad[i], v);
    }
    double s = 0;
    assert_true(fm_duration_parse("310ms", &s));
    assert_true(fabs(s - 0.310) < 1e-12);
}

/* A peak below 1e9 FLOP/s is a unit slip: refused with the figure it likely meant (a usage
 * error in the CLI), and the suffixed forms give the plain number's utilization. */
static void test_peak_unit_slip_refused(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_session_opts o;
    fm_session_opts_init(&o, FM_TASK_UTILIZATION);
    o.model = "resnet50";
    o.device = "a100";
    o.step_s = 0.2;
    o.peak = 312;
    struct fm_session *s = NULL;
    assert_int_equal(fm_session_run(ctx, &o, &s), FM_ERR_INVALID);
    assert_null(s);
    EXPECT_MESSAGE(ctx, "did you mean 312e12 (312 TFLOP/s)?");

    /* through the CLI: a usage error (2), and the suffixed forms give the same utilization as
     * the plain number */
    char *out, *err;
    assert_int_equal(
        test_run_cli("utilization resnet50 --device a100 --step-time 0.2 --peak 312", &out, &err),
        2);
    test_expect_in(err, "did you mean 312e12 (312 TFLOP/s)?");
    free(out);
    free(err);
    char *plain, *suffixed;
    assert_int_equal(test_run_cli("utilization resnet50 --device a100 --step-time 0.31 "
                                  "--peak 312e12 --format csv",
                                  &plain, NULL),
                     0);
    assert_int_equal(test_run_cli("utilization resnet50 --device a100 --step-time 310ms "
                                  "--peak 312TFLOP/s --format csv",
                                  &suffixed, NULL),
                     0);
    assert_string_equal(plain, suffixed);
    free(plain);
    free(suffixed);
    assert_int_equal(test_run_cli("utilization resnet50 --device a100 --step-time 0.2 "
                                  "--peak 312Q",
                                  &out, &err),
                     2);
    test_expect_in(err, "--peak: not a valid value: '312Q'");
    free(out);
    free(err);
    fm_ctx_free(ctx);
}

/* ---- the published figures: Epoch AI, Verma, the PALEO problem set ---- */

static const struct fm_device *builtin(struct fm_ctx *ctx, struct fm_devices *devs,
                                       const char *name)
{
    const struct fm_device *d = NULL;
    FM_ASSERT_OK(ctx, fm_devices_find(ctx, devs, name, &d));
    return d;
}

/* The PALEO problem set (docs/roofline.md, reference 4; its problem 3, 1.4): Lu et al.'s forward FLOP counts divided by the K80's published
 * peaks, 8.73 TFLOP/s single and 2.91 TFLOP/s double precision (the whole board). Its Python
 * printed these times in seconds; PPP = 1, no memory term, no launch overhead. */
static void test_paleo_problem_set_k80(void **state)
{
    (void)state;
    static const struct {
        const char *model;
        double mflop;
        double single_s, double_s;
    } rows[] = {
        {"VGG16", 15503, 0.0017758304696449026, 0.005327491408934708},
        {"GoogLeNet", 1606, 0.00018396334478808707, 0.0005518900343642612},
        {"ResNet-50", 3922, 0.0004492554410080183, 0.001347766323024055},
    };
    static const double throughput_single[] = {563.1168161001096, 5435.865504358655,
                                               2225.9051504334525};
    struct fm_ctx *ctx = test_ctx();
    struct fm_devices *devs = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    const struct fm_device *k80 = builtin(ctx, devs, "k80");
    struct fm_predict_opts o;
    fm_predict_opts_init(&o);
    o.device = k80;
    o.ppp_compute = o.ppp_memory = 1.0;
    o.launch_overhead_us = 0;
    for (size_t i = 0; i < 3; i++) {
        struct fm_phase_time t;
        o.precision = FM_PREC_FP32;
        double peak = fm_predict_peak(&o, FM_CLASS_CONV, FM_PHASE_FWD, NULL);
        assert_true(peak == 8.73e12);
        fm_phase_time_eval(rows[i].mflop * 1e6, 0, peak, k80->mem_bw, &o, &t);
        ASSERT_NEAR(t.t_roofline, rows[i].single_s, 1e-15);
        ASSERT_NEAR(t.t_paleo, rows[i].single_s, 1e-15);
        ASSERT_NEAR(1.0 / t.t_roofline, throughput_single[i], 1e-14);
        o.precision = FM_PREC_FP64;
        peak = fm_predict_peak(&o, FM_CLASS_CONV, FM_PHASE_FWD, NULL);
        assert_true(peak == 2.91e12);
        fm_phase_time_eval(rows[i].mflop * 1e6, 0, peak, k80->mem_bw, &o, &t);
        ASSERT_NEAR(t.t_roofline, rows[i].double_s, 1e-15);
    }
    /* the headline: VGG16 15,503 MFLOP on a K80 at 8.73 TFLOP/s = 1.776 ms */
    struct fm_phase_time t;
    o.precision = FM_PREC_FP32;
    fm_phase_time_eval(15503e6, 0, fm_device_peak(k80, FM_CLASS_CONV, FM_PREC_FP32), k80->mem_bw,
                       &o, &t);
    assert_true(round(t.t_roofline * 1e6) == 1776.0);
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

/* Verma's roofline analysis of ResNets on ImageNet (docs/roofline.md, reference 3; its
 * Tables 3 and 4): attainable FLOP/s = min(OI x peak bandwidth, peak FLOP/s) from its
 * experimental OI, with V100 125 TFLOP/s & 900 GB/s and A100 312 TFLOP/s & 1555 GB/s (the
 * tensor-core fp16 peaks). Its GFLOP/s column is truncated, not rounded: 17.65 x 1555 =
 * 27445.75 is printed 27445. Table 1's ridge points are rounded to two decimals. */
static void test_verma_attainable(void **state)
{
    (void)state;
    static const struct {
        const char *device;
        double oi, printed_gflops;
    } rows[] = {
        {"v100", 16.54, 14886}, {"v100", 16.76, 15084}, {"v100", 12.16, 10944},
        {"a100-40gb", 17.65, 27445}, {"a100-40gb", 18.33, 28503}, {"a100-40gb", 13.62, 21179},
    };
    struct fm_ctx *ctx = test_ctx();
    struct fm_devices *devs = NULL;
    FM_ASSERT_OK(ctx, fm_devices_builtin(ctx, &devs));
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct fm_device *d = builtin(ctx, devs, rows[i].device);
        double peak = fm_device_peak(d, FM_CLASS_CONV, FM_PREC_FP16);
        double att = fm_roofline_attainable(rows[i].oi, peak, d->mem_bw) / 1e9;
        if (!(att >= rows[i].printed_gflops - 1e-6 && att < rows[i].printed_gflops + 1))
            fail_msg("%s OI %g: attainable %.6f GFLOP/s does not truncate to %g", rows[i].device,
                     rows[i].oi, att, rows[i].printed_gflops);
        /* every one below the ridge: memory-bound, as Verma concludes */
        assert_true(rows[i].oi < fm_device_ridge(d, FM_CLASS_CONV, FM_PREC_FP16));
    }
    const struct fm_device *v100 = builtin(ctx, devs, "v100");
    const struct fm_device *a100 = builtin(ctx, devs, "a100-40gb");
    assert_true(round(fm_device_ridge(v100, FM_CLASS_CONV, FM_PREC_FP16) * 100) == 13889);
    assert_true(round(fm_device_ridge(a100, FM_CLASS_CONV, FM_PREC_FP16) * 100) == 20064);
    fm_devices_free(devs);
    fm_ctx_free(ctx);
}

/* ---- the chart ---- */

static size_t occurrences(const char *s, const char *what)
{
    size_t n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

static void test_svg(void **state)
{
    (void)state;
    struct fm_ctx *ctx = test_ctx();
    struct fm_graph *g = tiny_graph(ctx, 1, false);
    struct fm_counts *c = count(ctx, g, FM_MODE_INFER);
    struct fm_device dev = test_device();
    struct fm_predict_opts o;
    fm_predict_opts_init(&o);
    o.device = &dev;
    o.precision = FM_PREC_FP16;
    struct fm_prediction *p = NULL;
    FM_ASSERT_OK(ctx, fm_predict(ctx, g, c, &o, &p));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    FM_ASSERT_OK(ctx, fm_svg_roofline(f, g, c, p, NULL));
    fclose(f);
    assert_non_null(strstr(buf, "<svg"));
    assert_non_null(strstr(buf, "</svg>"));
    /* both ceilings in use, with their ridge points: fp16 tensor 8e12 / 1e11 = 80, fp32
     * vector 10 */
    assert_non_null(strstr(buf, "fp16 tensor cores: 8.00 TFLOP/s"));
    assert_non_null(strstr(buf, "fp32 vector units: 1.00 TFLOP/s"));
    assert_non_null(strstr(buf, "ridge 80.0 FLOP/B"));
    assert_non_null(strstr(buf, "ridge 10.0 FLOP/B"));
    /* axes with units, one dot per layer (each has a <title>), the network */
    assert_non_null(strstr(buf, "operational intensity (FLOP/byte"));
    assert_non_null(strstr(buf, "performance (FLOP/s)"));
    assert_int_equal(occurrences(buf, "<title>"), 2);
    assert_non_null(strstr(buf, "conv1 (conv)"));
    assert_non_null(strstr(buf, "network: 11.6 FLOP/B"));
    free(buf);
    fm_prediction_free(p);
    fm_counts_free(c);
    fm_graph_free(g);
    fm_ctx_free(ctx);
}

/* ---- the commands ---- */

#ifdef FM_HAVE_CJSON
static cJSON *parse_json(const char *text)
{
    cJSON *j = cJSON_Parse(text);
    if (!j)
        fail_msg("not JSON: %.200s", text);
    return j;
}
#endif

static void test_cli(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(test_run_cli("predict resnet18 --device a100 --batch 8 --dataset-size 1000 "
                                  "--epochs 2 --gpus 4 --summary",
                                  &out, &err),
                     0);
    assert_non_null(strstr(out, "epoch"));
    assert_non_null(strstr(out, "training compute"));
    assert_non_null(strstr(out, "data parallel: 4 GPUs"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("predict resnet18 --device a100 --format csv", &out, &err), 0);
    assert_true(strncmp(out, "index,name,op,class,phase,precision,unit,flops,bytes", 52) == 0);
    free(out);
    free(err);
    assert_int_equal(test_run_cli("roofline resnet18 --device a100 --format csv", &out, &err), 0);
    assert_true(strncmp(out, "index,name,op,class,phase,precision,unit,flops,bytes,intensity", 62) == 0);
    free(out);
    free(err);
#ifdef FM_HAVE_CJSON
    const char *json_cmds[] = {
        "predict resnet18 --device h100 --precision bf16 --infer --format json",
        "predict resnet18 --device a100 --gpus 8 --dataset-size 100 --format json",
        "roofline resnet18 --device v100 --precision fp16 --format json",
        "utilization resnet18 --device a100 --batch 32 --step-time 50ms --format json",
        "devices --format json",
    };
    for (size_t i = 0; i < sizeof(json_cmds) / sizeof(json_cmds[0]); i++) {
        assert_int_equal(test_run_cli(json_cmds[i], &out, &err), 0);
        cJSON *j = parse_json(out);
        cJSON_Delete(j);
        free(out);
        free(err);
    }
    /* the predict JSON carries the same step as the table's source of truth */
    assert_int_equal(test_run_cli("predict resnet18 --device a100 --infer --format json", &out,
                                  &err),
                     0);
    cJSON *j = parse_json(out);
    cJSON *run = cJSON_GetObjectItem(j, "run");
    assert_non_null(run);
    assert_true(cJSON_GetObjectItem(cJSON_GetObjectItem(run, "step_s"), "roofline")->valuedouble > 0);
    cJSON_Delete(j);
    free(out);
    free(err);
#endif
    /* the chart */
    char svg[] = "/tmp/fm_test_svg_XXXXXX";
    int fd = mkstemp(svg);
    assert_true(fd >= 0);
    close(fd);
    char args[256];
    snprintf(args, sizeof(args), "roofline resnet18 --device a100 --summary --svg %s", svg);
    assert_int_equal(test_run_cli(args, &out, &err), 0);
    free(out);
    free(err);
    FILE *f = fopen(svg, "r");
    assert_non_null(f);
    char head[64] = "";
    assert_non_null(fgets(head, sizeof(head), f));
    fclose(f);
    unlink(svg);
    assert_non_null(strstr(head, "<?xml"));
    /* utilization above 100% says so */
    assert_int_equal(test_run_cli("utilization resnet18 --device a100 --step-time 1us", &out,
                                  &err),
                     0);
    assert_non_null(strstr(out, "IMPOSSIBLE"));
    assert_non_null(strstr(out, "wrong precision"));
    free(out);
    free(err);
    /* usage errors: no device, unknown device, bad time, no fp8 units */
    assert_int_equal(test_run_cli("roofline resnet18", &out, &err), 2);
    assert_non_null(strstr(err, "--device"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("predict resnet18 --device h1000", &out, &err), 2);
    assert_non_null(strstr(err, "unknown device"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("utilization resnet18 --device a100 --step-time fast", &out,
                                  &err),
                     2);
    free(out);
    free(err);
    assert_int_equal(test_run_cli("predict resnet18 --device a100 --precision fp8", &out, &err), 1);
    assert_non_null(strstr(err, "no fp8 ceiling"));
    free(out);
    free(err);
    assert_int_equal(test_run_cli("predict resnet18 --device a100 --interconnect warp9 --gpus 2",
                                  &out, &err),
                     2);
    assert_non_null(strstr(err, "nvlink3"));
    free(out);
    free(err);
}

int main(int argc, char **argv)
{
    unsetenv("FLOPMETER_DEVICES");
    setenv("XDG_CONFIG_HOME", "/nonexistent-flopmeter-test", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roofline_fp32),
        cmocka_unit_test(test_roofline_fp16_tensor),
        cmocka_unit_test(test_predict_bounds_ppp_launch),
        cmocka_unit_test(test_torch_default_and_tf32),
        cmocka_unit_test(test_training_phases),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_ring_allreduce),
        cmocka_unit_test(test_data_parallel),
        cmocka_unit_test(test_run_estimate),
        cmocka_unit_test(test_gpus_run_follows_dp_step),
        cmocka_unit_test(test_utilization),
        cmocka_unit_test(test_flops_and_duration_units),
        cmocka_unit_test(test_peak_unit_slip_refused),
        cmocka_unit_test(test_paleo_problem_set_k80),
        cmocka_unit_test(test_verma_attainable),
        cmocka_unit_test(test_svg),
        cmocka_unit_test(test_cli),
    };
    return TEST_RUN_CASES(argc, argv, tests, NULL, NULL);
}
