/* The library's words for what the CLI calls a flag. The library names the field a program sets
 * (fm_session_opts.gpus must be between 1 and 65536); the CLI prints every message of the library
 * it shows (errors, log lines, notes and the reports it renders) through this table, so that a
 * user of the CLI reads --gpus. This is the only place that knows both names: a flag that the
 * library starts to mention gets its line here (tests/check_no_flags.sh keeps flags out of src/).
 * It does not parse or check anything: it turns words. */
#include "cli.h"

#include <string.h>

static const struct {
    const char *field;   /* as the library writes it */
    const char *flag;    /* as the CLI prints it */
} flags[] = {
    /* fm_session_opts */
    {"fm_session_opts.gpus", "--gpus"},
    {"fm_session_opts.epochs", "--epochs"},
    {"fm_session_opts.peak", "--peak"},
    {"fm_session_opts.step_s", "--step-time"},
    {"fm_session_opts.epoch_s", "--epoch-time"},
    {"fm_session_opts.dataset_size", "--dataset-size"},
    {"fm_session_opts.device", "--device"},
    {"fm_session_opts.devices_file", "--devices"},
    {"fm_session_opts.precision", "--precision"},
    {"fm_session_opts.loss_on", "--loss-on"},
    {"fm_session_opts.memory_cap", "--max-memory"},
    {"fm_session_opts.interconnect", "--interconnect"},
    {"fm_session_opts.spec", "--spec"},
    {"fm_session_opts.epoch_samples", "--epoch-samples"},
    {"fm_session_opts.force_calibration", "--force-calibration"},
    /* the option blocks a session carries, and their own functions */
    {"fm_predict_opts.ppp_compute", "--ppp-compute"},
    {"fm_predict_opts.launch_overhead_us", "--launch-overhead-us"},
    {"fm_predict_opts.calibration", "--calibration"},
    {"fm_count_opts.optimizer", "--optimizer"},
    {"FM_MODE_INFER", "--infer"},
    {"fm_zoo_opts.batch", "--batch"},
    {"fm_zoo_opts.input", "--input"},
    {"fm_zoo_opts.dtype", "--dtype"},
    {"fm_load_opts.bindings", "--input"},
    {"fm_load_opts.values", "--value"},
    {"fm_load_opts.config", "--config"},
    {"fm_load_opts.seq", "--seq"},
    {"fm_load_opts.decoder_seq", "--decoder-seq"},
    {"fm_load_opts.decode", "--decode"},
    {"fm_llm_build_opts.seq", "--seq"},
    {"fm_llm_build_opts.batch", "--batch"},
    {"fm_measure_opts.steps", "--steps"},
    {"fm_measure_opts.warmup", "--warmup"},
    {"fm_measure_opts.threads", "--threads"},
    {"fm_measure_opts.precision", "--precision"},
    {"fm_measure_opts.cuda_graph", "--graph"},
    {"fm_measure_opts.channels_last", "--channels-last"},
    {"fm_measure_opts.memory_limit", "--max-memory"},
    {"measure with fm_measure_opts.per_layer", "measure without --no-per-layer"},
    {"a CUDA step of fm_measure", "`flopmeter measure --device cuda`"},
    {"fm_report_opts.format", "--format"},
    {"fm_trace_opts.step_prefix", "--step-prefix"},
    {"fm_trace_opts.whole", "--whole"},
    {"fm_calibrate_opts.leave_out", "--leave-out"},
    {"fm_calib_samples_load", "flopmeter calibrate --samples"},
    /* fm_plan_opts */
    {"fm_plan_opts.model", "MODEL"},
    {"fm_plan_opts.config_path", "--config"},
    {"fm_plan_opts.gpus", "--gpus"},
    {"fm_plan_opts.device", "--device"},
    {"fm_plan_opts.cluster", "--cluster"},
    {"fm_plan_opts.precision", "--precision"},
    {"fm_plan_opts.tp", "--tp"},
    {"fm_plan_opts.pp", "--pp"},
    {"fm_plan_opts.dp", "--dp"},
    {"fm_plan_opts.cp", "--cp"},
    {"fm_plan_opts.recompute", "--recompute"},
    {"fm_plan_opts.ep", "--ep"},
    {"fm_plan_opts.interleave", "--interleave"},
    {"fm_plan_opts.zero", "--zero"},
    {"fm_plan_opts.micro_batch", "--micro-batch"},
    {"fm_plan_opts.global_batch", "--global-batch"},
    {"fm_plan_opts.sequence_parallel", "--sequence-parallel"},
    {"fm_plan_opts.search", "--search"},
    {"fm_plan_opts.seq", "--seq"},
    {"fm_plan_opts.decoder_seq", "--decoder-seq"},
    {"fm_plan_opts.ppp_compute", "--ppp-compute"},
    {"fm_plan_opts.ppp_memory", "--ppp-memory"},
    {"fm_plan_opts.grad_bytes", "--bf16-grads"},
    {"fm_plan_opts.balance_embedding", "--balance-embedding"},
    {"fm_plan_opts.calibration", "--calibration"},
    {"fm_plan_opts.force_calibration", "--force-calibration"},
};

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The entry whose field starts text at i as a whole word (not part of a longer name), or -1. */
static int field_at(const char *text, size_t i, size_t n)
{
    if (i > 0 && (word_char(text[i - 1]) || text[i - 1] == '.'))
        return -1;
    for (size_t k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
        /* two characters before strlen and memcmp: this runs on every character written */
        if (flags[k].field[0] != text[i] || i + 1 == n || flags[k].field[1] != text[i + 1])
            continue;
        size_t len = strlen(flags[k].field);
        if (len <= n - i &&
            memcmp(text + i, flags[k].field, len) == 0 &&
            (i + len == n || !word_char(text[i + len])))
            return (int)k;
    }
    return -1;
}

void cli_write_flags(FILE *f, const char *text, size_t n)
{
    size_t start = 0;   /* text[start..i) is written as it is */
    for (size_t i = 0; i < n; i++) {
        int k = field_at(text, i, n);
        if (k < 0)
            continue;
        fwrite(text + start, 1, i - start, f);
        fputs(flags[k].flag, f);
        i += strlen(flags[k].field) - 1;
        start = i + 1;
    }
    fwrite(text + start, 1, n - start, f);
}

void cli_print_flags(FILE *f, const char *text)
{
    cli_write_flags(f, text, strlen(text));
}
