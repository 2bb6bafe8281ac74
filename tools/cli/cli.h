/* The CLI's shared pieces: the command table entry, options declared as data (parsed and
 * turned into --help text by one function), the model options every model command takes, and
 * output helpers. Each subcommand lives in its own cmd_<name>.c. */
#ifndef FM_CLI_H
#define FM_CLI_H

#include "flopmeter.h"

#include <stdio.h>

/* exit codes (STYLE.md) */
enum { FM_EXIT_OK = 0, FM_EXIT_FAIL = 1, FM_EXIT_USAGE = 2 };

struct cli_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

enum cli_opt_type {
    CLI_FLAG,      /* bool*: set true */
    CLI_INT,       /* int64_t*: a positive integer */
    CLI_UINT,      /* int64_t*: a non-negative integer */
    CLI_DOUBLE,    /* double*: a finite number */
    CLI_STRING,    /* const char**: any text */
    CLI_CHOICE,    /* int*: index into choices ("a|b|c") */
    CLI_MULTI      /* const char**[16] + count in aux: repeatable string */
};

struct cli_opt {
    const char *name;        /* long name without "--" */
    enum cli_opt_type type;
    void *dest;
    const char *choices;     /* CLI_CHOICE: "table|csv|json" */
    const char *metavar;     /* shown in help: N, CxHxW ... */
    const char *help;
    int *count;              /* CLI_MULTI: number stored */
    bool *given;             /* optional: set when the option appears */
};

/* Parses argv[1..] against opts. Positional arguments go to pos (up to max_pos); more or fewer
 * than [min_pos, max_pos] is a usage error. "--help" prints help and returns -1 (exit 0).
 * Returns 0, -1 (help shown) or FM_EXIT_USAGE after printing what was wrong to stderr. */
int cli_parse(const char *cmd, const char *usage, const char *description,
              const struct cli_opt *opts, int argc, char **argv, const char **pos, int min_pos,
              int max_pos);
void cli_print_help(FILE *f, const char *cmd, const char *usage, const char *description,
                    const struct cli_opt *opts);

/* ---- options shared by the model commands (count, roofline, predict, measure ...) ---- */

enum cli_format { CLI_FORMAT_TABLE = 0, CLI_FORMAT_CSV, CLI_FORMAT_JSON };
#define CLI_FORMAT_CHOICES "table|csv|json"

struct cli_model_opts {
    int64_t batch;
    bool batch_given;
    const char *input;          /* CxHxW for built-ins; NAME=DIMS (repeatable) for ONNX */
    const char *inputs[16];
    int n_inputs;
    int64_t classes;
    bool train, infer;
    int optimizer;              /* index into "sgd|adam|none" */
    int dtype;                  /* index into "fp32|fp16|bf16" */
    int format;                 /* enum cli_format */
};

#define CLI_MODEL_OPTS_MAX 10
/* Fills out[] with the model options pointing into m (with defaults set); returns how many. */
int cli_model_opts_declare(struct cli_model_opts *m, struct cli_opt *out);
/* Loads the model named by `model` with m's options; prints the error and returns non-zero
 * (FM_EXIT_FAIL or FM_EXIT_USAGE) on failure. */
int cli_model_load(struct fm_ctx *ctx, const char *model, const struct cli_model_opts *m,
                   struct fm_graph **out);
void cli_count_opts(const struct cli_model_opts *m, struct fm_count_opts *out);

/* Prints "flopmeter: <message>" to stderr for a failed library call; returns the exit code
 * that fits the status. */
int cli_fail(struct fm_ctx *ctx, enum fm_status st);

/* The command functions. */
int cmd_count(int argc, char **argv);        /* cmd_count.c */
int cmd_models(int argc, char **argv);       /* cmd_models.c */
int cmd_devices(int argc, char **argv);      /* cmd_devices.c (devices and device) */
int cmd_device(int argc, char **argv);
int cmd_roofline(int argc, char **argv);     /* cmd_roofline.c */
int cmd_predict(int argc, char **argv);      /* cmd_predict.c */
int cmd_utilization(int argc, char **argv);  /* cmd_utilization.c */
int cmd_probe(int argc, char **argv);        /* cmd_probe.c */
int cmd_measure(int argc, char **argv);      /* cmd_measure.c */

#endif
