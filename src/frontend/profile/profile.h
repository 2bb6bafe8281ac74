/* Internal to the library: the records the profile readers make (the bodies behind the opaque
 * handles flopmeter.h declares, read by src/analysis and src/report), the CSV tokenizer the
 * Nsight readers share (RFC 4180 with the line and column of every field, for messages) and
 * the number format the Nsight tools write ("1,234,567.00", "n/a"). Nothing here is API; the
 * readers are declared in flopmeter.h. */
#ifndef FM_PROFILE_H
#define FM_PROFILE_H

#include "../../core/internal.h"

/* ---- what the readers accept (flopmeter.h declares them) ---- */

/* fm_ncu_read_file: */
/* Reads `ncu --csv` output: the details form (one row per kernel and metric: ...,"Metric
 * Name","Metric Unit","Metric Value") or the raw page (`--page raw`: a header of metric names,
 * a row of units, a row per kernel). Lines before the header (==PROF== lines, the program's
 * own output) are skipped; thousands separators and scaled units are read; any subset of
 * metrics is accepted. FM_ERR_PARSE with the file, line and column for a file that is not
 * ncu's CSV, a truncated file, a metric flopmeter uses in a unit it does not know, or a file
 * with no kernels. Free with fm_ncu_profile_free. */

/* fm_ncu_match: */
/* Matches a profile's kernels to a counted graph's layers: by the NVTX ranges flopmeter's CUDA
 * backend pushes ("<layer> fwd", "<layer> bwd_data", "<layer> bwd_weight", "optimizer SGD");
 * kernels under other ranges (or none) are outside any layer. Without such ranges no kernel
 * is matched (kernel names do not name layers) and only the whole step is compared. Free
 * with fm_ncu_match_free. */

/* fm_nsys_read_file: */
/* Reads one summary `nsys stats --format csv` writes: the CUDA kernel summary
 * (cuda_gpu_kern_sum; older gpukernsum), the NVTX range summary (nvtx_sum; older nvtxsum,
 * nvtxppsum, nvtx_pushpop_sum), the NVTX GPU projection summary (nvtx_gpu_proj_sum) or the NVTX
 * range kernel summary (nvtx_kern_sum; older nvtxkernsum), told apart by its header; lines
 * before the header are skipped. Another report
 * (API calls, memory operations) or another tool's CSV is FM_ERR_PARSE with line and column.
 * Free with fm_nsys_summary_free. */

/* fm_trace_read: */
/* Reads a trace file (no size limit beyond memory: the text, then about 100 bytes per event).
 * FM_ERR_IO when it cannot be read; FM_ERR_PARSE with the line and column of a JSON syntax
 * error (a truncated file is named as such), for JSON that is not a trace, for an event whose
 * ts or dur is missing or not a number, and for a trace without steps (the message says how
 * to record them); FM_ERR_UNSUPPORTED in a build without cJSON. opts may be NULL. */

/* fm_measured_read: */
/* Reads the measured points of a profile for a counted model: from an Nsight Compute CSV (by
 * fm_ncu_read_file and fm_ncu_match: a point per matched layer and phase whose FLOPs, DRAM bytes
 * and time the file has, and the whole file), or from a PyTorch profiler trace (a JSON file, by
 * fm_trace_read: the median step, and each op class's time per step when the trace ran on the
 * CPU, at flopmeter's counted FLOPs and bytes). A point without FLOPs, bytes or time is left
 * out; a file that gives none is FM_ERR_PARSE. The readers' errors pass through. Free with
 * fm_measured_free. */

/* ---- records of the readers (their bodies: flopmeter.h declares the handles) ---- */

/* One figure read from a profile. A figure whose metrics the file lacks is not known (reported
 * as missing, never as 0). Counts read as written are exact integers; a count the file gives
 * only as a rate is rate x time (derived, not exact): a per-second or per-cycle metric is a
 * rate and is never summed as a count. */
struct fm_prof_figure {
    bool known;        /* the file had the metrics the figure takes */
    bool exact;        /* count holds the exact integer (FLOPs, instructions, bytes) */
    bool derived;      /* computed from a rate times the kernel's time or cycles */
    uint64_t count;    /* the exact integer when exact */
    double value;      /* the figure as a double: a count, or seconds for a time */
};

enum fm_ncu_prec { FM_NCU_FP64 = 0, FM_NCU_FP32, FM_NCU_FP16, FM_NCU_PREC_COUNT };
const char *fm_ncu_prec_name(enum fm_ncu_prec p);   /* "fp64", "fp32", "fp16" */

/* What a kernel (or a group of kernels, or the file) did, by the counters. */
struct fm_ncu_figures {
    /* FLOPs per precision: add + mul + 2 x fma thread instructions executed with the predicate
     * on (sm(sp)__sass_thread_inst_executed_op_{d,f,h}{add,mul,fma}_pred_on.sum; ncu's derived
     * ..._ffma_pred_on_x2 is taken as already doubled). FLOPs of the FP units only. */
    struct fm_prof_figure flops[FM_NCU_PREC_COUNT];
    struct fm_prof_figure tensor_flops;  /* tensor-pipe operations from op counters
                                            (sm__ops_path_tensor_*.sum) only; never guessed */
    struct fm_prof_figure tensor_inst;   /* tensor-pipe warp instructions
                                            (sm(sp)__inst_executed_pipe_tensor.sum): their FLOPs
                                            depend on the instruction's shape and are unknown */
    struct fm_prof_figure dram_bytes;    /* dram__bytes.sum, or dram__bytes_read + _write */
    struct fm_prof_figure time_s;        /* gpu__time_duration.sum, else cycles_elapsed.avg /
                                            cycles_elapsed.avg.per_second (seconds) */
};

/* One profiled kernel launch. */
struct fm_ncu_kernel {
    uint64_t id;                 /* ncu's "ID" */
    const char *name;            /* "Kernel Name" */
    const char *nvtx;            /* the innermost NVTX range around it ("" when none) */
    const char *nvtx_stack;      /* every enclosing range, outermost first, " > " between */
    const char *process;         /* its "Process ID" ("" when the file has no such column) */
    int line;                    /* the line of its (first) row in the file */
    struct fm_ncu_figures fig;
};

/* Kernels under one innermost NVTX range, in the order the ranges first appear. */
struct fm_ncu_group {
    const char *nvtx;
    size_t kernels;
    struct fm_ncu_figures fig;   /* summed; a figure is known only when every kernel's is */
};

struct fm_ncu_profile {
    struct fm_ctx *ctx;
    const char *source;          /* the file's name */
    bool raw_page;               /* `--page raw` (one row per kernel); false: the details form */
    bool has_nvtx;               /* the file has NVTX columns (`ncu --nvtx`) */
    size_t n_kernels;
    size_t n_processes;          /* distinct "Process ID"s among the kernels */
    struct fm_ncu_kernel *kernels;
    struct fm_ncu_figures totals;   /* summed; a total is known only when every kernel's is */
    size_t n_groups;
    struct fm_ncu_group *groups;    /* only when the file has NVTX ranges */
    char notes[1024];            /* what is missing and what was derived, in words (free text) */
};

/* The counters beside flopmeter's counts, one row per layer and phase (src/analysis). */
struct fm_ncu_match_row {
    const char *layer;           /* the node's name, "optimizer", or "(outside any layer)" */
    fm_nid node;                 /* FM_NONE for the optimizer and for kernels outside layers */
    enum fm_phase phase;         /* FM_PHASE_COUNT for kernels outside layers */
    size_t kernels;
    bool counted;                /* flopmeter counts this row (false: outside any layer) */
    uint64_t counted_flops;      /* flopmeter's FLOPs (2 x MAC + other ops) of the node's phase */
    uint64_t counted_bytes;      /* its bytes read + written (unfused, one kernel per op) */
    struct fm_ncu_figures measured;
    double flops_ratio;          /* counter FLOPs / counted (NaN when either is unknown or 0) */
    double bytes_ratio;          /* DRAM bytes / counted bytes (NaN likewise) */
    char cause[320];             /* the likely cause of the difference, in words */
};

struct fm_ncu_match {
    struct fm_ctx *ctx;
    bool by_nvtx;                /* kernels were matched by flopmeter's own NVTX ranges */
    size_t n_rows;
    struct fm_ncu_match_row *rows;
    uint64_t step_counted_flops; /* the whole step as counted (every phase) */
    uint64_t step_counted_bytes;
    struct fm_ncu_figures step_measured;   /* the whole file */
    double step_flops_ratio;     /* NaN when unknown */
    char method[640];            /* how kernels were matched to layers, or why they were not */
};

/* KERNELS: cuda_gpu_kern_sum; NVTX: nvtx_sum (the ranges' CPU-side time); NVTX_GPU:
 * nvtx_gpu_proj_sum (the ranges projected onto the GPU); NVTX_KERNELS: nvtx_kern_sum (kernels
 * grouped by the NVTX range that launched them). */
enum fm_nsys_kind {
    FM_NSYS_KERNELS = 0,
    FM_NSYS_NVTX,
    FM_NSYS_NVTX_GPU,
    FM_NSYS_NVTX_KERNELS,
    FM_NSYS_KIND_COUNT
};
/* "kernels", "nvtx", "nvtx_gpu", "nvtx_kernels" */
const char *fm_nsys_kind_name(enum fm_nsys_kind k);

/* One row of an `nsys stats` summary: a kernel, or an NVTX range. Times in seconds; a column
 * the file lacks is NaN. */
struct fm_nsys_row {
    const char *name;            /* "Name" (kernel) or "Range" (NVTX) */
    const char *style;           /* NVTX "Style" (PushPop, StartEnd); "" when absent */
    double time_pct;             /* "Time (%)" */
    double total_s;              /* "Total Time" */
    uint64_t instances;          /* "Instances" (older reports: "Calls") */
    double avg_s, med_s, min_s, max_s, stddev_s;
    int line;
    /* nvtx_gpu_proj_sum: total_s, avg_s ... are the projected (GPU) times ("Total Proj Time",
     * "Proj Avg" ...), instances the "Range Instances" */
    double range_time_s;         /* "Total Range Time": the ranges' CPU-side time */
    uint64_t gpu_ops;            /* "Total GPU Ops" (valid when gpu_ops_known) */
    bool gpu_ops_known;
    double avg_gpu_ops;          /* "Avg GPU Ops" */
    double avg_level;            /* "Avg Range Lvl": 0 for an outermost range */
    double avg_children;         /* "Avg Num Child" */
    /* nvtx_kern_sum: one row per range and kernel; name is the range ("" for kernels launched
     * outside any range), total_s ... the kernel's execution times, instances "Kern Inst" */
    const char *kernel;          /* "Kernel Name"; "" in the other reports */
    uint64_t range_instances;    /* "NVTX Inst": range instances that launched this kernel */
    int64_t pid, tid;            /* "PID", "TID"; -1 when absent */
};

/* GPU time per NVTX range (nvtx_gpu_proj_sum, nvtx_kern_sum), one per range name and style. */
struct fm_nsys_range {
    const char *name, *style;    /* the rows' (not copies) */
    double gpu_s;                /* nvtx_gpu_proj_sum: Total Proj Time; nvtx_kern_sum: its
                                  * kernels' execution times added */
    uint64_t gpu_ops;            /* GPU operations (proj) or kernel instances (kern) */
    bool gpu_ops_known;
    uint64_t instances;          /* proj: Range Instances; kern: the largest NVTX Inst of its
                                  * rows (a lower bound) */
    double range_time_s;         /* proj: Total Range Time (CPU side); kern: NaN */
    size_t rows;                 /* the file's rows it adds up (kern: one per kernel name,
                                  * process and thread) */
};

struct fm_nsys_summary {
    struct fm_ctx *ctx;
    const char *source;
    enum fm_nsys_kind kind;
    char report[32];             /* "cuda_gpu_kern_sum", "gpukernsum", "nvtx_sum", "nvtxsum" */
    size_t n_rows;
    struct fm_nsys_row *rows;
    double total_s;              /* the rows' total times added */
    uint64_t instances;
    /* nvtx_gpu_proj_sum and nvtx_kern_sum only (else 0 / NULL / NaN) */
    size_t n_ranges;
    struct fm_nsys_range *ranges;
    double top_level_s;          /* proj: Total Proj Time of the rows with Avg Range Lvl 0 */
    uint64_t gpu_ops;            /* the rows' GPU ops (proj) or kernel instances (kern) added */
    bool gpu_ops_known;
};

/* The classes a trace's time is split into: flopmeter's op classes, then the optimizer (in a
 * count the optimizer is a phase; in a trace it is the ops under Optimizer.step/zero_grad). */
#define FM_TRACE_OPTIMIZER ((int)FM_CLASS_COUNT)
#define FM_TRACE_CLASSES ((int)FM_CLASS_COUNT + 1)
/* fm_trace_class_name and fm_trace_op_class: flopmeter.h (a binding classifies its own
 * profiler events with them) */

const char *fm_trace_phase_name(enum fm_trace_phase p);   /* "fwd", "bwd", "optimizer" */

enum fm_trace_form { FM_TRACE_LEGACY = 0, FM_TRACE_KINETO };

struct fm_trace_step {
    char name[64];               /* "ProfilerStep#3" */
    double ts_us;                /* its start on the trace's clock (microseconds) */
    double time_s;               /* its duration (the CPU-side annotation) */
    double kernel_s;             /* GPU kernels launched in the step: durations summed over
                                    streams (overlap counted twice); 0 without kernels */
    uint64_t kernels;
    double memcpy_s;             /* GPU memcpy and memset activity launched in the step */
    uint64_t profiler_flops;     /* "flops" the profiler recorded, each op once (outermost) */
    uint64_t flops_by_phase[FM_TRACE_PHASE_COUNT];
    uint64_t nested_flops;       /* "flops" of ops inside an op that has them: not counted */
    double phase_s[FM_TRACE_PHASE_COUNT];   /* time of the step's top-level ops by phase */
};

struct fm_trace_op {
    const char *name;            /* as the profiler names it (owned by the trace) */
    int cls;                     /* fm_trace_op_class, FM_TRACE_OPTIMIZER under Optimizer.* */
    uint64_t calls;              /* events in the steps */
    double total_s;              /* their durations summed (children included) */
    double self_s;               /* minus the time of CPU events directly inside them */
    uint64_t flops;              /* profiler "flops" counted for it (outermost calls only) */
    uint64_t flops_calls;        /* calls whose flops were counted */
};

struct fm_trace {
    struct fm_ctx *ctx;
    enum fm_trace_form form;
    char origin[128];            /* the file name, for messages */
    uint64_t events;             /* complete ("X") events read */
    size_t n_steps;
    struct fm_trace_step *steps; /* in time order */
    bool whole;                  /* the one step is the whole trace (opts.whole) */
    double step_s, step_min_s, step_max_s;   /* median, min and max of the steps' time_s */
    size_t n_ops;
    struct fm_trace_op *ops;     /* every CPU op and annotation inside a step, by total_s,
                                    largest first */
    double class_s[FM_TRACE_CLASSES];   /* top-level CPU events of all steps, by class */
    double top_s;                /* the sum of class_s */
    bool has_kernels;            /* GPU kernel events exist */
    bool has_flops;              /* some event carries args "flops" */
    bool has_shapes;             /* some event carries args "Input Dims" (record_shapes) */
    uint64_t profiler_flops;     /* all steps (sum of the steps') */
    uint64_t nested_flops;
    /* The first forward op's first input with rank >= 2 (record_shapes), for the batch:
     * "aten::conv2d", {8, 3, 64, 64}. rank 0: none recorded. */
    char input_op[64];
    struct fm_shape input;
};


/* One field of a record: its text (unquoted, "" unescaped, NUL-terminated in the record's
 * buffer) and where it starts in the file. */
struct fm_csv_field {
    size_t off, len;
    int line, col;
    bool quoted;
};

/* A record, reused from one call of fm_csv_next to the next (free with fm_csv_rec_release). */
struct fm_csv_rec {
    struct fm_csv_field *f;
    size_t n, cap;
    char *buf;
    size_t blen, bcap;
    int line;          /* the line the record starts on */
    int end_col;       /* the column just past its last character */
};

struct fm_csv {
    struct fm_ctx *ctx;
    const char *name;  /* the file, for messages */
    const char *p, *end;
    int line;          /* 1-based line of p */
    const char *line_start;
};

void fm_csv_init(struct fm_csv *c, struct fm_ctx *ctx, const char *name, const char *data,
                 size_t len);
/* The text of the current line (up to its newline) without consuming it; *len its length. */
const char *fm_csv_peek_line(const struct fm_csv *c, size_t *len);
/* Skips the current line. */
void fm_csv_skip_line(struct fm_csv *c);
bool fm_csv_eof(const struct fm_csv *c);
/* Reads one record (one line, or more when a quoted field holds a newline). A quote opened and
 * never closed, or text after a closing quote, is FM_ERR_PARSE naming the line and column. */
enum fm_status fm_csv_next(struct fm_csv *c, struct fm_csv_rec *r);
static inline const char *fm_csv_str(const struct fm_csv_rec *r, size_t i)
{
    return r->buf + r->f[i].off;
}
void fm_csv_rec_release(struct fm_ctx *ctx, struct fm_csv_rec *r);

/* A number as Nsight tools print it: optional sign, digits with or without thousands
 * separators (groups of exactly three: "1,234,567"), an optional fraction and exponent. */
struct fm_prof_number {
    double value;
    uint64_t count;    /* the integer, when exact */
    bool exact;        /* a non-negative integer (a zero fraction allowed) that fits 64 bits */
};
enum fm_prof_num_result { FM_NUM_OK = 0, FM_NUM_MISSING, FM_NUM_BAD };
/* FM_NUM_MISSING for "", "n/a", "N/A", "-"; FM_NUM_BAD for anything else that is not a number
 * (a decimal comma such as "9,00" included: the groups would not be of three). */
enum fm_prof_num_result fm_prof_number(const char *text, struct fm_prof_number *out);

/* ---- shared by the Nsight Compute reader, the matching (src/analysis) and the report ---- */

/* dst += src, figure by figure (first: dst = src). A sum is known only when both are; it
 * stays exact while both are exact and it fits 64 bits. */
void fm_ncu_figures_add(struct fm_ncu_figures *dst, const struct fm_ncu_figures *src, bool first);
/* The counter's FLOPs: every precision's FP FLOPs, plus tensor FLOPs when an op counter gives
 * them. false when a precision is unknown. */
bool fm_ncu_counter_flops(const struct fm_ncu_figures *f, double *out);


#endif
