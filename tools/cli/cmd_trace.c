/* flopmeter trace FILE.json [--model MODEL --device D]: a PyTorch profiler trace's steps, op and
 * class times, GPU kernel time and the profiler's FLOPs; with a model, utilization of the step by
 * Epoch AI's counting and profiler methods. Reading, counting and rendering are the library's. */
#include "cli.h"

#include <string.h>

static const char description[] =
    "Reads a PyTorch profiler trace, as prof.export_chrome_trace(\"trace.json\") writes it in\n"
    "either form (the legacy bare list, or Kineto's {\"traceEvents\": [...]}), and prints its\n"
    "steps (the ProfilerStep#N annotations prof.step() makes under a torch.profiler schedule),\n"
    "their median, the time per op and per op class, GPU kernel time per step when kernels were\n"
    "recorded, and the FLOPs the profiler computes with with_flops=True (rebuilt from the\n"
    "shapes recorded with record_shapes=True; each op once: an op inside another op with FLOPs\n"
    "is not counted again).\n\n"
    "With --model it adds the FLOPs of the median step, and with --device or --peak their\n"
    "utilization, by the methods of Epoch AI's utilization study (Hobbhahn 2022): the counting\n"
    "method, flopmeter's forward + backward + optimizer FLOPs of the model at --batch / step\n"
    "time / peak; the profiler method, the profiler's FLOPs / step time / peak, and their share\n"
    "of flopmeter's count (the profiler misses most of the backward pass and every op without a\n"
    "formula).\n"
    "--batch defaults to the batch of the trace's first recorded input. How to capture a\n"
    "trace: docs/profiles.md; the JSON keys: docs/json.md.\n\n"
    "examples:\n"
    "  flopmeter trace trace.json\n"
    "  flopmeter trace trace.json --model resnet18 --batch 4\n"
    "  flopmeter trace trace.json --model resnet18 --input 3x32x32 --classes 10 --device a100\n"
    "  flopmeter trace trace.json --model alexnet --device cpu --format json";

int cmd_trace(struct cli_run *run, int argc, char **argv)
{
    struct cli_model_opts m;
    struct cli_device_opts d;
    const char *model = NULL, *prefix = NULL;
    bool whole = false;
    double peak = 0;
    struct cli_opt opts[CLI_MODEL_OPTS_MAX + CLI_DEVICE_OPTS_MAX + 8] = {0};
    int n = cli_model_opts_declare(&m, opts);
    n += cli_device_opts_declare(&d, opts + n, CLI_DEV_DEVICE | CLI_DEV_PRECISION);
    opts[n++] = (struct cli_opt){"model", CLI_STRING, &model, NULL, "MODEL",
                                 "the model the trace trained (a built-in name or .onnx): adds "
                                 "utilization by the counting and profiler methods", NULL, NULL};
    opts[n++] = (struct cli_opt){"peak", CLI_PARSED, &peak, cli_parse_flops, "FLOP/S",
                                 "peak FLOP/s to divide by instead of the device's", NULL, NULL};
    opts[n++] = (struct cli_opt){"step-prefix", CLI_STRING, &prefix, NULL, "NAME",
                                 "annotations whose name starts with NAME are the steps "
                                 "(default ProfilerStep#)", NULL, NULL};
    opts[n++] = (struct cli_opt){"whole", CLI_FLAG, &whole, NULL, NULL,
                                 "a trace without step annotations: its whole span is one step",
                                 NULL, NULL};
    const char *pos[1];
    int r = cli_parse("trace", "FILE.json [--model MODEL --device NAME] [options]", description,
                      opts, argc, argv, pos, 1, 1);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    struct fm_ctx *ctx = run->ctx;
    struct fm_trace *t = NULL;
    struct fm_session *s = NULL;
    struct fm_trace_util u;
    bool have_util = false;
    struct fm_trace_opts to;
    fm_trace_opts_init(&to);
    to.step_prefix = prefix;
    to.whole = whole;
    enum fm_status st = fm_trace_read(ctx, pos[0], &to, &t);
    if (st) {
        r = cli_fail(ctx, st);
        goto out;
    }
    if (model) {
        struct fm_session_opts so;
        struct cli_bindings b;
        const char *in_op = NULL;
        const struct fm_shape *in = fm_trace_input(t, &in_op);
        /* with a device (or a peak) the session finds the peak; without either it only counts,
         * and the report gives the step's FLOPs with every utilization unknown */
        bool util = d.device || peak > 0;
        bool device = d.device != NULL;
        fm_session_opts_init(&so, device ? FM_TASK_UTILIZATION : FM_TASK_WORK);
        so.model = model;
        so.step_s = device ? fm_trace_step_s(t) : 0;
        so.peak = peak;
        if (!m.batch_given && in->rank >= 2 && in->dims[0] > 0) {
            m.batch = in->dims[0];   /* the batch the trace ran */
            m.batch_given = true;
        } else if (!m.batch_given) {
            fprintf(stderr, "flopmeter trace: %s records no input shapes (profile with "
                            "record_shapes=True under Kineto): give the batch, --batch N\n",
                    pos[0]);
            r = FM_EXIT_USAGE;
            goto out;
        }
        if ((r = cli_session_opts(ctx, &m, &d, &b, &so)))
            goto out;
        st = fm_session_run(ctx, &so, &s);
        cli_bindings_free(&b);
        if (!st)
            st = fm_trace_utilization(ctx, t, fm_session_graph(s), fm_session_counts(s),
                                      fm_session_batch(s),
                                      !util ? 0 : device ? fm_session_peak(s, NULL) : peak, &u);
        if (st) {
            r = cli_fail(ctx, st);
            goto out;
        }
        have_util = true;
        if (u.batch_mismatch)
            fprintf(stderr, "flopmeter trace: the trace's first op (%s) reads a batch of %lld; "
                    "the count is at batch %lld\n", in_op, (long long)u.trace_batch,
                    (long long)u.batch);
        if (u.input_mismatch) {
            char a[96], m_in[96];
            fm_shape_format(in, a, sizeof(a));
            fm_shape_format(&u.model_input, m_in, sizeof(m_in));
            fprintf(stderr, "flopmeter trace: the trace's first op (%s) reads %s, the model's "
                            "input is %s: the count is of another input size (give the "
                            "trace's with --input, and --classes if it was trained with "
                            "other classes)\n", in_op, a, m_in);
        }
    } else if (d.device || peak > 0) {
        fprintf(stderr, "flopmeter trace: --device and --peak need --model MODEL (the model the "
                        "trace trained)\n");
        r = FM_EXIT_USAGE;
        goto out;
    }
    struct fm_report_opts ro;
    fm_report_opts_init(&ro);
    ro.format = m.format;
    run->status = fm_report_trace(cli_out(run), t, s, have_util ? &u : NULL, &ro);
out:
    fm_session_free(s);
    fm_trace_free(t);
    return r;
}
