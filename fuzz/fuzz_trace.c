/* libFuzzer target: PyTorch profiler trace text (fm_trace_parse), with ProfilerStep steps and
 * with --whole. Checks, on top of the sanitizers: a rejected trace leaves a message and no
 * result; an accepted one has at least one step, finite non-negative times whose median lies
 * between the min and max, ops with self time no larger than their total, and profiler FLOPs
 * whose per-step sum is the trace's. */
#include "fuzz_common.h"

#include <math.h>

static void check_trace(const struct fm_trace *t)
{
    FUZZ_CHECK(t->n_steps >= 1, "a trace without steps was accepted");
    uint64_t flops = 0;
    for (size_t i = 0; i < t->n_steps; i++) {
        const struct fm_trace_step *s = &t->steps[i];
        FUZZ_CHECK(isfinite(s->time_s) && s->time_s >= 0, "step time %g", s->time_s);
        FUZZ_CHECK(isfinite(s->kernel_s) && s->kernel_s >= 0, "kernel time %g", s->kernel_s);
        flops += s->profiler_flops;
    }
    FUZZ_CHECK(flops == t->profiler_flops, "step FLOPs do not add up");
    FUZZ_CHECK(t->step_min_s <= t->step_s && t->step_s <= t->step_max_s, "median outside range");
    for (size_t i = 0; i < t->n_ops; i++) {
        const struct fm_trace_op *op = &t->ops[i];
        FUZZ_CHECK(op->name && op->calls > 0, "an op without a name or calls");
        FUZZ_CHECK(op->self_s >= 0 && op->self_s <= op->total_s * (1 + 1e-9) + 1e-12,
                   "self %g above total %g", op->self_s, op->total_s);
        FUZZ_CHECK(op->cls >= 0 && op->cls < FM_TRACE_CLASSES, "class %d", op->cls);
    }
}

int fm_fuzz_trace(const uint8_t *data, size_t size)
{
    struct fm_ctx *ctx = NULL;
    if (fm_ctx_new(NULL, &ctx))
        return 0;
    struct fm_trace_opts o;
    fm_trace_opts_init(&o);
    for (int whole = 0; whole < 2; whole++) {
        o.whole = whole;
        struct fm_trace *t = NULL;
        enum fm_status st = fm_trace_parse(ctx, (const char *)data, size, "fuzz.json", &o, &t);
        fuzz_check_status(ctx, st);
        FUZZ_CHECK(st ? t == NULL : t != NULL, "status and result disagree");
        if (t)
            check_trace(t);
        fm_trace_free(t);
    }
    fm_ctx_free(ctx);
    return 0;
}

FUZZ_ENTRY(fm_fuzz_trace)
