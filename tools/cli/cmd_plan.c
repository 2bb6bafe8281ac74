/* flopmeter plan MODEL: a parallel training plan (tensor, pipeline, data, context and expert
 * parallelism, ZeRO, recompute) on a GPU cluster, predicted to memory per GPU, step time, MFU
 * and tokens/s, or the best plans found by --search. The analysis is the library's
 * (fm_plan_run); this parses and renders. */
#include "cli.h"

#include <string.h>

static const char description[] =
    "Predicts a training step of a language model on a GPU cluster under a parallel plan:\n"
    "memory per GPU (weights, gradients, optimizer states, activations, buffers), the step's\n"
    "time (compute, recompute, exposed communication per collective and link, pipeline\n"
    "bubble, optimizer), MFU and HFU, tokens/s, and the time for --tokens. Sizes not given are\n"
    "1, and dp takes the GPUs left (gpus / (tp x pp x cp)). The cluster defaults to the\n"
    "device's DGX/HGX system. See docs/plan.md and docs/clusters.md.\n\n"
    "examples:\n"
    "  flopmeter plan megatron-gpt-175b --gpus 1024 --device a100 --tp 8 --pp 8 \\\n"
    "      --global-batch 1536 --recompute selective --sequence-parallel\n"
    "  flopmeter plan llama-3.1-405b --gpus 8192 --device h100 --tp 8 --pp 16 "
    "--global-batch 2048 --seq 8192\n"
    "  flopmeter plan llama-3.1-70b --gpus 512 --device h100 --global-batch 512 --search";

static bool parse_recompute(const char *text, void *dest)
{
    return fm_recompute_parse(text, dest);
}

static bool parse_zero(const char *text, void *dest)
{
    if (strlen(text) != 1 || text[0] < '0' || text[0] > '3')
        return false;
    *(int *)dest = text[0] - '0';
    return true;
}

int cmd_plan(struct cli_run *run, int argc, char **argv)
{
    struct fm_plan_opts o;
    fm_plan_opts_init(&o);
    struct cli_precision prec = {FM_PREC_BF16, false, false};
    enum fm_format format = FM_FORMAT_TABLE;
    bool bf16_grads = false;
    struct cli_calibration_opts cal = {0};
    double tokens = 0;
    struct cli_opt opts[] = {
        {"config", CLI_STRING, &o.config_path, NULL, "FILE",
         "a HuggingFace config.json instead of MODEL", NULL, NULL},
        {"gpus", CLI_INT, &o.gpus, NULL, "N", "GPUs in all (required)", NULL, NULL},
        {"device", CLI_STRING, &o.device, NULL, "NAME",
         "the GPU (a device-table name; default: the cluster's)", NULL, NULL},
        {"devices", CLI_STRING, &o.devices_file, NULL, "FILE", "add devices from a JSON file",
         NULL, NULL},
        {"cluster", CLI_STRING, &o.cluster, NULL, "NAME|FILE",
         "dgx-a100, dgx-h100, hgx-h200, hgx-h800, dgx-b200, gb200-nvl72 or a cluster file", NULL,
         NULL},
        {"precision", CLI_PARSED, &prec, cli_parse_precision, "bf16|fp16|fp8",
         "matmul precision (default bf16)", NULL, NULL},
        {"tp", CLI_INT, &o.tp, NULL, "T", "tensor-parallel size", NULL, NULL},
        {"pp", CLI_INT, &o.pp, NULL, "P", "pipeline-parallel stages", NULL, NULL},
        {"dp", CLI_INT, &o.dp, NULL, "D", "data-parallel size (default gpus / (tp pp cp))", NULL,
         NULL},
        {"cp", CLI_INT, &o.cp, NULL, "C", "context-parallel size", NULL, NULL},
        {"ep", CLI_INT, &o.ep, NULL, "E", "expert-parallel size (within dp)", NULL, NULL},
        {"interleave", CLI_INT, &o.interleave, NULL, "V",
         "model chunks per pipeline stage (interleaved 1F1B)", NULL, NULL},
        {"zero", CLI_PARSED, &o.zero, parse_zero, "0|1|2|3",
         "ZeRO stage over dp (default 1: the distributed optimizer)", NULL, NULL},
        {"fsdp", CLI_FLAG, &o.fsdp, NULL, NULL, "FSDP (ZeRO-3)", NULL, NULL},
        {"recompute", CLI_PARSED, &o.recompute, parse_recompute, "none|selective|full",
         "activation recomputation (default none)", NULL, NULL},
        {"sequence-parallel", CLI_FLAG, &o.sequence_parallel, NULL, NULL,
         "Megatron's sequence parallelism along tp", NULL, NULL},
        {"balance-embedding", CLI_FLAG, &o.balance_embedding, NULL, NULL,
         "first and last pipeline stages hold one layer fewer (Llama 3)", NULL, NULL},
        {"micro-batch", CLI_INT, &o.micro_batch, NULL, "B", "sequences per micro-batch (1)",
         NULL, NULL},
        {"global-batch", CLI_INT, &o.global_batch, NULL, "G", "sequences per step", NULL,
         NULL},
        {"seq", CLI_INT, &o.seq, NULL, "S",
         "tokens per sequence (default 2048; T5: the source's, default 512)", NULL, NULL},
        {"decoder-seq", CLI_INT, &o.decoder_seq, NULL, "N",
         "encoder-decoder models (T5): target tokens (default --seq)", NULL, NULL},
        {"tokens", CLI_PARSED, &tokens, cli_parse_flops, "N",
         "training tokens for time and GPU-hours (15T)", NULL, NULL},
        {"search", CLI_FLAG, &o.search, NULL, NULL, "find the fastest plans that fit", NULL,
         NULL},
        {"bf16-grads", CLI_FLAG, &bf16_grads, NULL, NULL,
         "bf16 gradients (16 bytes a parameter, not 18)", NULL, NULL},
        {"no-flash-attention", CLI_FLAG, &o.no_flash_attention, NULL, NULL,
         "attention scores materialized (Megatron-LM before 2023)", NULL, NULL},
        {"no-overlap", CLI_FLAG, &o.no_overlap, NULL, NULL,
         "data-parallel communication not overlapped with compute", NULL, NULL},
        {"ppp-compute", CLI_DOUBLE, &o.ppp_compute, NULL, "F",
         "fraction of the tensor peak sustained (0.75)", NULL, NULL},
        {"ppp-memory", CLI_DOUBLE, &o.ppp_memory, NULL, "F",
         "fraction of memory bandwidth sustained (0.72)", NULL, NULL},
        {"ppp-comm", CLI_DOUBLE, &o.ppp_comm, NULL, "F",
         "fraction of link bandwidth sustained (0.72)", NULL, NULL},
        {"format", CLI_PARSED, &format, cli_parse_format, "table|json",
         "output format (default table)", NULL, NULL},
        {0}, {0}, {0},
    };
    size_t n_opts = sizeof(opts) / sizeof(opts[0]) - 3;
    cli_calibration_opts_declare(&cal, opts + n_opts,
                                 "time the compute by this calibration's per-node times");
    const char *pos[1] = {NULL};
    int r = cli_parse("plan", "MODEL|--config FILE --gpus N (--device NAME | --cluster NAME|FILE) "
                             "[options]",
                      description, opts, argc, argv, pos, 0, 1);
    if (r)
        return r < 0 ? FM_EXIT_OK : r;
    o.model = pos[0];
    if (!o.model && !o.config_path) {
        fprintf(stderr, "flopmeter plan: give MODEL or --config FILE\n(see flopmeter plan "
                        "--help)\n");
        return FM_EXIT_USAGE;
    }
    if (o.model && o.config_path) {
        fprintf(stderr, "flopmeter plan: give MODEL or --config FILE, not both\n");
        return FM_EXIT_USAGE;
    }
    o.precision = prec.precision;
    o.grad_bytes = bf16_grads ? 2 : 4;
    o.tokens = tokens;
    struct fm_session_opts so;
    fm_session_opts_init(&so, FM_TASK_PREDICT);
    r = cli_calibration_load(run->ctx, &cal, &so);
    if (r)
        return r;
    o.calibration = cal.cal;
    o.force_calibration = cal.force;
    struct fm_plan *plan = NULL;
    enum fm_status st = fm_plan_run(run->ctx, &o, &plan);
    if (st) {
        r = st == FM_ERR_NOT_FOUND ? (cli_fail(run->ctx, st), FM_EXIT_USAGE)
                                   : cli_fail(run->ctx, st);
    } else {
        run->status = fm_report_plan(cli_out(run), plan, format);
        r = FM_EXIT_OK;
    }
    fm_plan_free(plan);
    cli_calibration_free(&cal);
    return r;
}
