/* The session's body (src/analysis/session.c fills it): what fm_session_run resolved, read by the
 * renderers in src/report and by the tests. Programs outside the library see an opaque struct
 * fm_session and read it through the fm_session_* accessors of flopmeter.h; nothing here is
 * public API, and fields may change with any release. */
#ifndef FM_SESSION_INTERNAL_H
#define FM_SESSION_INTERNAL_H

#include "flopmeter.h"
#include "analysis.h"   /* struct fm_time_loss */

struct fm_session {
    struct fm_ctx *ctx;
    struct fm_session_opts opts;      /* a copy of the options */
    struct fm_graph *graph;
    struct fm_loss_info loss;         /* the loss of a training step, and where it came from */
    struct fm_counts *counts;
    struct fm_devices *devices;       /* the table, when one was needed */
    const struct fm_device *device;   /* the device's figures (NULL: none) */
    char device_how[192];             /* how it was found: "the device table", "fm_session_opts.spec",
                                         "matched from the GPU's name '...'", "a short probe ..." */
    struct fm_probe_result *probe;    /* the probe behind the device, if one ran */
    struct fm_device probed;          /* the probe's figures as a device */
    struct fm_device named;           /* a table entry with the memory a GPU's name states */
    char named_name[160];
    char device_note[512];            /* what the user should know about the name's match */
    int64_t batch;                    /* the batch the graph runs (fm_graph_batch): --batch, or
                                         what --input NAME=DIMS bound */
    struct fm_memory_check memory;    /* count with a device, roofline, predict */
    enum fm_dtype storage_activations;   /* the float types the graph was counted in */
    enum fm_dtype storage_parameters;
    char storage_how[160];            /* why: "fm_zoo_opts.dtype fp16", "mixed precision ...", "the file's" */
    char export_note[768];            /* a training step of a file that looks exported for
                                         inference: what its count leaves out ("" if not) */
    enum fm_precision precision;      /* the compute precision in use */
    bool torch_default;
    double peak;                      /* FLOP/s utilization is quoted against; 0: unknown */
    char peak_source[320];            /* where it comes from, in words */
    struct fm_prediction *prediction; /* roofline, predict; measure when a device is known */
    struct fm_run_estimate run;       /* predict: with --gpus N, the data-parallel run */
    struct fm_run_estimate run_1gpu;  /* predict: the same run on one GPU */
    bool have_run;
    struct fm_dp_estimate dp;         /* predict --gpus N */
    bool have_dp;
    char link_name[64];
    struct fm_utilization util;       /* utilization; measure when the peak is known */
    bool have_util;
    struct fm_backend_check check;    /* measure: what the backend can run of the graph */
    struct fm_measurement *measurement;   /* measure: the timed steps (NULL in a dry run) */
    struct fm_measurement *epoch;         /* measure --epoch-samples: the epoch's steps */
    uint64_t epoch_steps;
    double epoch_s;
    bool epoch_running;               /* internal: which run reports progress */
    struct fm_time_loss time_loss;    /* measure: where the step's time goes, when the device's
                                         peak and bandwidth are known and layers were timed */
    bool have_time_loss;
};

#endif
