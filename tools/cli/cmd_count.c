/* flopmeter count MODEL: the work of one training (or inference) step, per layer and in total. */
#include "cli.h"

static const char description[] =
    "Counts the forward pass, the backward pass (input gradients and weight gradients\n"
    "separately) and the optimizer step of MODEL, per layer and in total: FLOPs and MACs\n"
    "(FLOPs = 2 x MACs + adds, muls, divs, compares and special functions), bytes moved by an\n"
    "unfused one-kernel-per-op execution, parameters, activation memory kept for backward and a\n"
    "training-memory estimate. Nothing is run; counts are exact integers. The network input gets\n"
    "no gradient. Ops flopmeter does not know are listed as uncounted and the totals say they\n"
    "are a lower bound.\n\n"
    "A training step needs a loss, and every command adds the same one to a model that has none\n"
    "(the report says which): classifier logits (N, K) get cross-entropy over the K classes, a\n"
    "language model's logits (B, S, V) next-token cross-entropy at every position, any other\n"
    "output a mean squared error against a random target. `measure` runs the graph counted "
    "here.\n\n"
    "table: --per-layer adds each layer's counts per phase and kind; --by-class adds totals per\n"
    "op class (conv, matmul, norm ...). csv: one row per layer and a total row (--by-class: one\n"
    "row per class and phase). json: every total, by class, the loss and every layer, with\n"
    "exact integers (docs/json.md; what is counted: docs/counting.md).\n"
    "--by-module sums the layers by module (a PyTorch 2 export names each layer by its module\n"
    "path, layers.0.self_attn.q_proj): a table section, one CSV row per module, or the JSON's\n"
    "by_module.\n\n"
    "--device NAME checks the step's memory against the device's and prints the largest batch\n"
    "that fits; --precision fp16/bf16 counts the bytes of mixed precision (half activations,\n"
    "fp32 weights, gradients and optimizer state), fp8 those of bf16 (fp8 matmuls inside bf16\n"
    "autocast, as Transformer Engine runs them), --dtype stores everything in one type.\n\n"
    "--peers adds what fvcore, ptflops (both backends), thop, pthflops, PyTorch's\n"
    "FlopCounterMode (forward, and forward + backward) and torchvision's published figure would\n"
    "print for the model, each an exact integer in the tool's unit, with what it leaves out or\n"
    "adds (docs/counting.md, section 4). They count the forward pass in evaluation mode at this\n"
    "batch, without the loss.\n\n"
    "examples:\n"
    "  flopmeter count resnet50 --batch 64\n"
    "  flopmeter count mobilenet_v2 --infer --format json\n"
    "  flopmeter count vgg16 --input 3x32x32 --classes 10 --optimizer adam --format csv\n"
    "  flopmeter count efficientnet_b7 --batch 32 --device h100 --precision bf16\n"
    "  flopmeter count resnet18 --peers";

int cmd_count(struct cli_run *run, int argc, char **argv)
{
    struct cli_model_opts m;
    struct cli_device_opts d;
    struct cli_opt opts[CLI_MODEL_OPTS_MAX + CLI_DEVICE_OPTS_MAX + 7] = {0};
    int n = cli_model_opts_declare(&m, opts);
    n += cli_device_opts_declare(&d, opts + n, CLI_DEV_DEVICE | CLI_DEV_PRECISION);
    bool per_layer = false, by_class = false, by_module = false, peers = false;
    enum fm_recompute recompute = FM_RECOMPUTE_NONE;
    opts[n++] = (struct cli_opt){"recompute", CLI_PARSED, &recompute, cli_parse_recompute,
                                 "none|selective|full",
                                 "language models: the activation recomputation of the hardware "
                                 "FLOPs and activation figures (default none)",
                                 NULL, NULL};
    opts[n++] = (struct cli_opt){"per-layer", CLI_FLAG, &per_layer, NULL, NULL,
                                 "table: each layer's primitive counts per phase", NULL, NULL};
    opts[n++] = (struct cli_opt){"by-class", CLI_FLAG, &by_class, NULL, NULL,
                                 "aggregate by op class (conv, matmul, norm ...)", NULL, NULL};
    opts[n++] = (struct cli_opt){"by-module", CLI_FLAG, &by_module, NULL, NULL,
                                 "aggregate by module (the module paths of a PyTorch 2 export: "
                                 "layers.0.self_attn)",
                                 NULL, NULL};
    opts[n++] = (struct cli_opt){"peers", CLI_FLAG, &peers, NULL, NULL,
                                 "what fvcore, ptflops, thop, pthflops, FlopCounterMode and "
                                 "torchvision would print",
                                 NULL, NULL};
    const char *pos[1] = {NULL};
    int r = cli_parse("count", "MODEL [options] | --config FILE [options]", description, opts,
                      argc, argv, pos, 0, 1);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    if (!pos[0] && !m.config) {
        fprintf(stderr, "flopmeter count: name a MODEL (flopmeter models lists them), an .onnx "
                        "file, or a language model's --config FILE\n");
        return FM_EXIT_USAGE;
    }
    if (!pos[0])
        pos[0] = m.config;
    if (peers && m.format == FM_FORMAT_CSV) {
        fprintf(stderr, "flopmeter count: --peers goes with the table or JSON, not CSV\n");
        return FM_EXIT_USAGE;
    }
    struct fm_ctx *ctx = run->ctx;
    struct fm_session *s = NULL;
    struct fm_session_opts so;
    struct cli_bindings b;
    fm_session_opts_init(&so, FM_TASK_WORK);
    so.model = pos[0];
    if ((r = cli_session_opts(ctx, &m, &d, &b, &so)))
        goto out;
    enum fm_status st = fm_session_run(ctx, &so, &s);
    cli_bindings_free(&b);
    if (st) {
        r = cli_fail(ctx, st);
        goto out;
    }
    struct fm_report_opts ro;
    fm_report_opts_init(&ro);
    ro.format = m.format;
    ro.per_layer_detail = per_layer;
    ro.by_class = by_class;
    ro.by_module = by_module;
    ro.loss = fm_session_loss(s);
    ro.memory = fm_session_memory(s);
    ro.export_note = fm_session_export_note(s);
    struct fm_llm_summary llm;
    if (fm_model_is_llm(so.model, &so.load)) {
        if ((st = fm_llm_summarize(ctx, so.model, &so.load, fm_session_graph(s),
                                   fm_session_counts(s), recompute, &llm))) {
            r = cli_fail(ctx, st);
            goto out;
        }
        ro.llm = &llm;
    }
    struct fm_peer_figures pf;
    if (peers) {
        /* from the counted graph as it is: the peers read only what a training count and an
         * inference count share, and leave the loss out */
        if ((st = fm_peers(ctx, fm_session_graph(s), fm_session_counts(s), &pf))) {
            r = cli_fail(ctx, st);
            goto out;
        }
        ro.peers = &pf;
    }
    run->status = fm_report_count(cli_out(run), fm_session_graph(s), fm_session_counts(s), &ro);
out:
    fm_session_free(s);
    return r;
}
