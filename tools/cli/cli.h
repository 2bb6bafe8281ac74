/* The CLI's shared pieces: the command table entry, the run every command goes through (run.c),
 * options declared as data (parsed and turned into --help text by one function), the options
 * every model command takes, the exit path of a failed library call, and the table that turns
 * the library's field names into flags (flags.c). The CLI parses arguments, calls the library
 * (a session) and prints what src/report renders: it decides nothing about models, devices or
 * peaks. */
#ifndef FM_CLI_H
#define FM_CLI_H

#include "flopmeter.h"

#include <stdio.h>

/* exit codes: 0 success, 1 failure, 2 usage error (the same for every command) */
enum { FM_EXIT_OK = 0, FM_EXIT_FAIL = 1, FM_EXIT_USAGE = 2 };

struct cli_run;
struct cli_cmd {
    const char *name;
    int (*fn)(struct cli_run *run, int argc, char **argv);
    const char *summary;
};

/* ---- one command's run (run.c), as git's run_builtin ---- */

struct cli_fail_alloc;
struct cli_run {
    const char *cmd;           /* the command's name */
    struct fm_ctx *ctx;        /* made before the command, freed after: log lines go to stderr */
    enum fm_status status;     /* the command stores its render's status here; cli_run checks it */
    /* cli_run's own */
    FILE *out;                 /* the report's buffer (cli_out) */
    char *buf;
    size_t len;
    bool out_failed;           /* no memory for the buffer: the render went to discard */
    FILE *discard;
    struct cli_fail_alloc *hook;   /* the test hook FM_TEST_FAIL_ALLOC (run.c) */
};
/* Runs cmd: makes the context, calls cmd->fn, then prints what it rendered into cli_out() when
 * run->status is FM_OK, or the context's message (exit 1) when not; a failed write of stdout
 * exits 1. Returns the exit code. */
int cli_run(const struct cli_cmd *cmd, int argc, char **argv);
/* The stream a command renders its report (and anything else for stdout) to: a buffer that
 * cli_run prints once the status is known. */
FILE *cli_out(struct cli_run *run);
/* The library names fields (fm_session_opts.gpus), the CLI flags (--gpus): text written with
 * every field of flags.c's table turned into its flag. */
void cli_write_flags(FILE *f, const char *text, size_t n);
void cli_print_flags(FILE *f, const char *text);

enum cli_opt_type {
    CLI_FLAG,      /* bool*: set true */
    CLI_INT,       /* int64_t*: a positive integer */
    CLI_UINT,      /* int64_t*: a non-negative integer */
    CLI_DOUBLE,    /* double*: a finite number */
    CLI_STRING,    /* const char**: any text */
    CLI_PARSED,    /* dest given to parse(), one of the library's own parsers (enums, times) */
    CLI_MULTI      /* const char**[16] + count in aux: repeatable string */
};

struct cli_opt {
    const char *name;        /* long name without "--" */
    enum cli_opt_type type;
    void *dest;
    bool (*parse)(const char *text, void *dest);   /* CLI_PARSED: false = not a valid value */
    const char *metavar;     /* shown in help and in errors: N, CxHxW, table|csv|json ... */
    const char *help;
    int *count;              /* CLI_MULTI: number stored */
    bool *given;             /* optional: set when the option appears */
};

/* Parses argv[1..] against opts (ending with a zeroed entry). Positional arguments go to pos (up
 * to max_pos); more or fewer than [min_pos, max_pos] is a usage error. "--help" prints help and
 * returns -1 (exit 0). Returns 0, -1 (help shown) or FM_EXIT_USAGE after printing what was
 * wrong to stderr. */
int cli_parse(const char *cmd, const char *usage, const char *description,
              const struct cli_opt *opts, int argc, char **argv, const char **pos, int min_pos,
              int max_pos);

/* The library's parsers in the shape cli_opt wants (args.c). */
bool cli_parse_format(const char *text, void *dest);      /* enum fm_format */
bool cli_parse_dtype(const char *text, void *dest);       /* enum fm_dtype */
bool cli_parse_optimizer(const char *text, void *dest);   /* enum fm_optimizer */
bool cli_parse_precision(const char *text, void *dest);   /* struct cli_precision */
bool cli_parse_time(const char *text, void *dest);        /* double seconds, > 0 */
bool cli_parse_flops(const char *text, void *dest);       /* double FLOP/s, >= 0 */
bool cli_parse_bytes(const char *text, void *dest);       /* double bytes, > 0 */
bool cli_parse_recompute(const char *text, void *dest);   /* enum fm_recompute */

struct cli_precision {
    enum fm_precision precision;
    bool torch_default;
    bool given;
};

/* ---- the options of the model commands (count, roofline, predict, utilization, measure) ---- */

struct cli_model_opts {
    int64_t batch;
    bool batch_given;
    bool dtype_given;
    bool optimizer_given;
    const char *inputs[16];     /* CxHxW for built-ins; NAME=DIMS (repeatable) for ONNX */
    int n_inputs;
    int64_t classes;
    bool train, infer;
    enum fm_optimizer optimizer;
    enum fm_dtype dtype;
    enum fm_format format;
    const char *loss_on;        /* --loss-on NAME: the output the loss is added to */
    const char *values[16];     /* --value NAME=V[,V...] (repeatable): an ONNX input's contents */
    int n_values;
    const char *config;         /* --config FILE: a HuggingFace config.json */
    int64_t seq, decoder_seq;   /* --seq N, --decoder-seq N: tokens per sequence */
    bool decode;                /* --decode: one token against a KV cache of --seq tokens */
};
#define CLI_MODEL_OPTS_MAX 15
/* Fills out[] with the model options pointing into m (with defaults set); returns how many. */
int cli_model_opts_declare(struct cli_model_opts *m, struct cli_opt *out);

/* ---- the device and prediction options (roofline, predict, utilization, measure) ---- */

struct cli_device_opts {
    const char *device;
    const char *devices_file;
    struct cli_precision precision;
    double ppp_compute, ppp_memory, ppp_comm, launch_us;
};
enum {
    CLI_DEV_DEVICE = 1u << 0,      /* --device NAME */
    CLI_DEV_PRECISION = 1u << 1,   /* --precision */
    CLI_DEV_PPP = 1u << 2,         /* --ppp-compute, --ppp-memory, --launch-overhead-us */
    CLI_DEV_COMM = 1u << 3         /* --ppp-comm */
};
#define CLI_DEVICE_OPTS_MAX 8
/* Declares --devices FILE and what `what` asks for; returns how many. */
int cli_device_opts_declare(struct cli_device_opts *d, struct cli_opt *out, unsigned what);

/* Turns parsed model and device options into the session's options (the --input strings become
 * bindings owned by b, freed with cli_bindings_free). Prints the error and returns an exit code
 * on a bad value. */
struct cli_bindings {
    struct fm_input_binding items[16];
    size_t n;
    struct fm_value_binding values[16];   /* names and values allocated */
    size_t n_values;
};
int cli_session_opts(struct fm_ctx *ctx, const struct cli_model_opts *m,
                     const struct cli_device_opts *d, struct cli_bindings *b,
                     struct fm_session_opts *out);
void cli_bindings_free(struct cli_bindings *b);

/* ---- the calibration options (predict, measure) ---- */

struct cli_calibration_opts {
    const char *file;              /* --calibration FILE */
    bool force;                    /* --force-calibration */
    struct fm_calibration *cal;    /* the file, once cli_calibration_load read it */
};
#define CLI_CALIBRATION_OPTS_MAX 2
/* Declares --calibration FILE (help: what the command does with it) and --force-calibration;
 * returns how many. */
int cli_calibration_opts_declare(struct cli_calibration_opts *c, struct cli_opt *out,
                                 const char *help);
/* Reads c->file, when given, into c->cal, and points so's calibration options at it. Prints
 * the error and returns an exit code when the file does not load. */
int cli_calibration_load(struct fm_ctx *ctx, struct cli_calibration_opts *c,
                         struct fm_session_opts *so);
void cli_calibration_free(struct cli_calibration_opts *c);

/* Prints "flopmeter: <message>" to stderr for a failed library call (with flags for fields);
 * returns the exit code that fits the status (a bad option value is a usage error). */
int cli_fail(struct fm_ctx *ctx, enum fm_status st);

/* Progress on stderr when it is a terminal (progress.c): a bar for runs, a line for probes. */
void cli_progress(void *user, const char *what, int done, int total);
/* The user pointer cli_progress wants: the model's or device's name, or NULL off a terminal. */
void *cli_progress_user(const char *label);

/* The command functions, each in cmd_<name>.c (devices and device: cmd_devices.c); main.c runs
 * them through cli_run. */
int cmd_count(struct cli_run *run, int argc, char **argv);
int cmd_models(struct cli_run *run, int argc, char **argv);
int cmd_devices(struct cli_run *run, int argc, char **argv);
int cmd_device(struct cli_run *run, int argc, char **argv);
int cmd_roofline(struct cli_run *run, int argc, char **argv);
int cmd_predict(struct cli_run *run, int argc, char **argv);
int cmd_plan(struct cli_run *run, int argc, char **argv);
int cmd_utilization(struct cli_run *run, int argc, char **argv);
int cmd_probe(struct cli_run *run, int argc, char **argv);
int cmd_measure(struct cli_run *run, int argc, char **argv);
int cmd_calibrate(struct cli_run *run, int argc, char **argv);
int cmd_trace(struct cli_run *run, int argc, char **argv);
int cmd_ncu(struct cli_run *run, int argc, char **argv);
int cmd_nsys(struct cli_run *run, int argc, char **argv);

#endif
