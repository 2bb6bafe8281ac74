/* Nsight Compute CSV (`ncu --csv`) as every version since 2019 writes it (the dialects:
 * docs/profiles.md), the details form and the raw page, read into per-kernel
 * figures: FLOPs per precision from the FP instruction counters, tensor-pipe work, DRAM bytes
 * and time. It reads only the metrics those figures take (any subset of them) and leaves every
 * other column alone (naming in its notes the columns no version writes); a figure whose metrics are absent stays unknown, and a rate (per second,
 * per cycle) is turned into a count only by multiplying it with the kernel's own time. */
#include "profile.h"

#include <math.h>
#include <string.h>

/* ---- the metrics flopmeter reads ---- */

enum { OP_ADD = 0, OP_MUL, OP_FMA, OP_FMA_X2, OP_N };
enum slot {
    SL_FLOP0 = 0,                              /* prec * OP_N + op */
    SL_TENSOR_INST = FM_NCU_PREC_COUNT * OP_N,
    SL_TENSOR_OPS,
    SL_DRAM,
    SL_DRAM_R,
    SL_DRAM_W,
    SL_TIME,
    SL_CYC_SM,
    SL_CYC_SMSP,
    SL_FREQ_SM,
    SL_FREQ_SMSP,
    SL_COUNT
};
/* how a metric gives its quantity: as a count, per second, or per elapsed cycle of its unit */
enum form { F_COUNT = 0, F_PER_SECOND, F_PER_CYCLE_SM, F_PER_CYCLE_SMSP, F_N };
/* what a unit must measure */
enum ukind { U_COUNT, U_BYTES, U_TIME, U_CYCLES, U_FREQ, U_COUNT_PER_S, U_BYTES_PER_S, U_PER_CYCLE };
static const char *const ukind_name[] = {"count", "byte count", "time", "cycle count",
                                         "frequency", "rate per second", "bandwidth",
                                         "rate per cycle"};

struct mval {
    bool have, exact;
    uint64_t count;
    double value;      /* in base units: counts, bytes, seconds, cycles, Hz */
};

struct kbuild {
    uint64_t id;
    char *name, *nvtx, *nvtx_stack, *process;
    int line;
    struct mval v[F_N][SL_COUNT];
};

struct metric_id {
    enum slot slot;
    enum form form;
    enum ukind unit;
};

static bool starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Which figure a metric name feeds, if any. sm__ and smsp__ counts are the same quantity;
 * derived__ metrics are ncu's own arithmetic on them (ffma_pred_on_x2 = 2 x ffma). */
static bool classify(const char *name, struct metric_id *m)
{
    if (strcmp(name, "Duration") == 0) {   /* the details sections' name for the time */
        *m = (struct metric_id){SL_TIME, F_COUNT, U_TIME};
        return true;
    }
    const char *s = name;
    if (starts(s, "derived__"))
        s += 9;
    if (starts(s, "gpu__time_duration.")) {
        if (strcmp(s + 19, "sum") != 0)
            return false;
        *m = (struct metric_id){SL_TIME, F_COUNT, U_TIME};
        return true;
    }
    if (starts(s, "dram__bytes")) {
        const char *rest = s + 11;
        enum slot sl;
        if (starts(rest, "_read."))
            sl = SL_DRAM_R, rest += 6;
        else if (starts(rest, "_write."))
            sl = SL_DRAM_W, rest += 7;
        else if (rest[0] == '.')
            sl = SL_DRAM, rest += 1;
        else
            return false;
        if (strcmp(rest, "sum") == 0)
            *m = (struct metric_id){sl, F_COUNT, U_BYTES};
        else if (strcmp(rest, "sum.per_second") == 0)
            *m = (struct metric_id){sl, F_PER_SECOND, U_BYTES_PER_S};
        else
            return false;
        return true;
    }
    bool smsp;
    if (starts(s, "smsp__"))
        smsp = true, s += 6;
    else if (starts(s, "sm__"))
        smsp = false, s += 4;
    else
        return false;
    const char *dot = strchr(s, '.');
    size_t blen = dot ? (size_t)(dot - s) : strlen(s);
    const char *suffix = dot ? dot + 1 : "";
    char base[96];
    if (blen >= sizeof(base))
        return false;
    memcpy(base, s, blen);
    base[blen] = '\0';

    if (strcmp(base, "cycles_elapsed") == 0) {
        if (strcmp(suffix, "avg") == 0)
            *m = (struct metric_id){smsp ? SL_CYC_SMSP : SL_CYC_SM, F_COUNT, U_CYCLES};
        else if (strcmp(suffix, "avg.per_second") == 0)
            *m = (struct metric_id){smsp ? SL_FREQ_SMSP : SL_FREQ_SM, F_COUNT, U_FREQ};
        else
            return false;
        return true;
    }
    if (starts(base, "ops_path_tensor")) {
        if (strcmp(suffix, "sum") != 0)
            return false;
        *m = (struct metric_id){SL_TENSOR_OPS, F_COUNT, U_COUNT};
        return true;
    }
    enum slot sl;
    bool x2 = false;
    if (strcmp(base, "inst_executed_pipe_tensor") == 0) {
        sl = SL_TENSOR_INST;
    } else if (starts(base, "sass_thread_inst_executed_op_")) {
        const char *p = base + 29;
        int prec = p[0] == 'd' ? FM_NCU_FP64 : p[0] == 'f' ? FM_NCU_FP32 : p[0] == 'h' ? FM_NCU_FP16 : -1;
        if (prec < 0)
            return false;
        p++;
        int op = starts(p, "add_") ? OP_ADD : starts(p, "mul_") ? OP_MUL : starts(p, "fma_") ? OP_FMA : -1;
        if (op < 0)
            return false;
        p += 4;
        if (strcmp(p, "pred_on_x2") == 0 && op == OP_FMA)
            x2 = true, op = OP_FMA_X2;
        else if (strcmp(p, "pred_on") != 0)
            return false;
        sl = (enum slot)(SL_FLOP0 + prec * OP_N + op);
    } else {
        return false;
    }
    if (x2 && (suffix[0] == '\0' || strcmp(suffix, "sum") == 0))
        *m = (struct metric_id){sl, F_COUNT, U_COUNT};
    else if (x2)
        return false;
    else if (strcmp(suffix, "sum") == 0)
        *m = (struct metric_id){sl, F_COUNT, U_COUNT};
    else if (strcmp(suffix, "sum.per_second") == 0)
        *m = (struct metric_id){sl, F_PER_SECOND, U_COUNT_PER_S};
    else if (strcmp(suffix, "sum.per_cycle_elapsed") == 0)
        *m = (struct metric_id){sl, smsp ? F_PER_CYCLE_SMSP : F_PER_CYCLE_SM, U_PER_CYCLE};
    else
        return false;
    return true;
}

/* ---- units: what ncu writes, scaled (Kbyte, usecond, Ghz ...) ---- */

struct unit_scale {
    const char *name;
    double scale;
};
static const struct unit_scale counts_u[] = {{"", 1}, {"inst", 1}, {"Kinst", 1e3}, {"Minst", 1e6},
                                             {"Ginst", 1e9}, {"op", 1}, {"ops", 1}, {NULL, 0}};
static const struct unit_scale bytes_u[] = {
    {"byte", 1},   {"Kbyte", 1e3}, {"Mbyte", 1e6}, {"Gbyte", 1e9}, {"Tbyte", 1e12},
    {"B", 1},      {"KB", 1e3},    {"MB", 1e6},    {"GB", 1e9},    {"TB", 1e12},
    {"KiB", 1024}, {"MiB", 1048576}, {"GiB", 1073741824.0}, {NULL, 0}};
static const struct unit_scale time_u[] = {
    {"nsecond", 1e-9}, {"usecond", 1e-6}, {"msecond", 1e-3}, {"second", 1},
    {"ns", 1e-9},      {"us", 1e-6},      {"ms", 1e-3},      {"s", 1}, {NULL, 0}};
static const struct unit_scale cycles_u[] = {{"cycle", 1}, {"Kcycle", 1e3}, {"Mcycle", 1e6},
                                             {"Gcycle", 1e9}, {NULL, 0}};
static const struct unit_scale hz_u[] = {{"hz", 1},    {"Hz", 1},    {"khz", 1e3}, {"Khz", 1e3},
                                         {"KHz", 1e3}, {"mhz", 1e6}, {"Mhz", 1e6}, {"MHz", 1e6},
                                         {"ghz", 1e9}, {"Ghz", 1e9}, {"GHz", 1e9}, {NULL, 0}};

static bool lookup(const struct unit_scale *t, const char *s, size_t n, double *scale)
{
    for (; t->name; t++) {
        if (strlen(t->name) == n && strncmp(t->name, s, n) == 0) {
            *scale = t->scale;
            return true;
        }
    }
    return false;
}

static bool unit_scale(const char *unit, enum ukind k, double *scale)
{
    size_t n = strlen(unit);
    const char *slash = strchr(unit, '/');
    double num, den;
    switch (k) {
    case U_COUNT:
        return lookup(counts_u, unit, n, scale);
    case U_BYTES:
        return lookup(bytes_u, unit, n, scale);
    case U_TIME:
        return lookup(time_u, unit, n, scale);
    case U_CYCLES:
        return lookup(cycles_u, unit, n, scale);
    case U_FREQ:
        if (lookup(hz_u, unit, n, scale))
            return true;
        if (!slash || !lookup(cycles_u, unit, (size_t)(slash - unit), &num) ||
            !lookup(time_u, slash + 1, strlen(slash + 1), &den))
            return false;
        *scale = num / den;
        return true;
    case U_COUNT_PER_S:
    case U_BYTES_PER_S:
        if (!slash || !lookup(k == U_BYTES_PER_S ? bytes_u : counts_u, unit,
                              (size_t)(slash - unit), &num) ||
            !lookup(time_u, slash + 1, strlen(slash + 1), &den))
            return false;
        *scale = num / den;
        return true;
    case U_PER_CYCLE:
        if (n == 0) {
            *scale = 1;
            return true;
        }
        if (!slash || !lookup(counts_u, unit, (size_t)(slash - unit), &num) ||
            !lookup(cycles_u, slash + 1, strlen(slash + 1), &den))
            return false;
        *scale = num / den;
        return true;
    }
    return false;
}

/* ---- the reader ---- */

struct reader {
    struct fm_ctx *ctx;
    const char *name;
    struct fm_csv csv;
    struct fm_csv_rec rec, hdr;
    struct kbuild *k;
    size_t n, cap;
    /* header columns (-1: absent) */
    int c_id, c_kname, c_mname, c_munit, c_mval, c_pushpop, c_startstop, c_pid;
    int c_rule[3];               /* Rule Name, Rule Type, Rule Description */
    size_t min_fields;           /* the header less its trailing rule columns (see check_width) */
    bool raw, no_units;
    /* rows and values read but not turned into figures, said in the notes, never silently */
    size_t rule_rows, unnamed_rows, na_values;
    int first_unnamed_line, first_na_line;
    char first_na[96];
    char ignored[320];           /* header columns of no dialect flopmeter knows */
    size_t n_ignored, n_listed;  /* how many; how many of them `ignored` names */
};

/* The text of column i of a row, "" for a column the row leaves off (check_width allows only
 * the trailing rule columns to be left off). */
static const char *cell(const struct fm_csv_rec *rec, int i)
{
    return i >= 0 && (size_t)i < rec->n ? fm_csv_str(rec, (size_t)i) : "";
}

static enum fm_status perr(struct reader *r, int line, int col, const char *fmt, const char *a,
                           const char *b)
{
    return fm_error(r->ctx, FM_ERR_PARSE, "%s:%d:%d: %s%s%s", r->name, line, col,
                    fmt, a ? a : "", b ? b : "");
}

/* The innermost range name of one NVTX element "<domain>:<range>:PL_Type:PL_Value:CLR_Type:
 * Color:Msg_Type:Msg" (skip: the fields before the name, 1 for push/pop, 2 for start/stop). */
static size_t nvtx_element_name(const char *e, size_t len, int skip, const char **name)
{
    const char *colon[64];
    int nc = 0;
    for (size_t i = 0; i < len && nc < 64; i++)
        if (e[i] == ':')
            colon[nc++] = e + i;
    if (nc < skip) {
        *name = e;
        return len;
    }
    const char *start = skip ? colon[skip - 1] + 1 : e;
    const char *stop = e + len;
    if (nc - skip >= 6)
        stop = colon[nc - 6];
    *name = start;
    return (size_t)(stop - start);
}

/* Parses an ncu NVTX cell: a thread id, then one quoted element per open range, outermost
 * first. Writes the innermost name and the " > " joined stack (both malloc'd). */
static enum fm_status nvtx_parse(struct reader *r, const char *cell, int skip, char **inner,
                                 char **stack)
{
    size_t cap = strlen(cell) + 1, n = 0;
    char *st = fm_alloc(r->ctx, cap * 2 + 8);
    if (!st)
        return fm_error(r->ctx, FM_ERR_NOMEM, "out of memory reading NVTX ranges");
    const char *last = NULL;
    size_t last_len = 0;
    for (const char *p = cell; (p = strchr(p, '"')) != NULL;) {
        const char *q = strchr(p + 1, '"');
        if (!q)
            break;
        const char *nm;
        size_t nl = nvtx_element_name(p + 1, (size_t)(q - p - 1), skip, &nm);
        if (nl) {
            if (n) {
                memcpy(st + n, " > ", 3);
                n += 3;
            }
            memcpy(st + n, nm, nl);
            n += nl;
            last = nm;
            last_len = nl;
        }
        p = q + 1;
    }
    st[n] = '\0';
    char *in = fm_alloc(r->ctx, last_len + 1);
    if (!in) {
        fm_dealloc(r->ctx, st);
        return fm_error(r->ctx, FM_ERR_NOMEM, "out of memory reading NVTX ranges");
    }
    if (last)
        memcpy(in, last, last_len);
    in[last_len] = '\0';
    *inner = in;
    *stack = st;
    return FM_OK;
}

static enum fm_status kernel_for(struct reader *r, const struct fm_csv_rec *rec, bool details,
                                 struct kbuild **out)
{
    const char *ids = fm_csv_str(rec, (size_t)r->c_id);
    struct fm_prof_number num;
    if (fm_prof_number(ids, &num) != FM_NUM_OK || !num.exact)
        return perr(r, rec->f[r->c_id].line, rec->f[r->c_id].col, "the kernel ID '", ids,
                    "' is not a non-negative integer");
    /* IDs are the launches' numbers; with several processes (ncu --target-processes all) a
     * launch is named by its process and its ID, so that equal IDs never merge two kernels */
    const char *pid = cell(rec, r->c_pid);
    if (details) {
        if (r->n && r->k[r->n - 1].id == num.count && strcmp(r->k[r->n - 1].process, pid) == 0) {
            *out = &r->k[r->n - 1];
            return FM_OK;
        }
        for (size_t i = 0; i < r->n; i++)
            if (r->k[i].id == num.count && strcmp(r->k[i].process, pid) == 0) {
                *out = &r->k[i];
                return FM_OK;
            }
    }
    enum fm_status st = fm_grow(r->ctx, (void **)&r->k, &r->cap, r->n + 1, sizeof(*r->k));
    if (st)
        return st;
    struct kbuild *k = &r->k[r->n++];
    memset(k, 0, sizeof(*k));
    k->id = num.count;
    k->line = rec->line;
    k->name = fm_strdup(r->ctx, cell(rec, r->c_kname));
    k->process = fm_strdup(r->ctx, pid);
    if (!k->name || !k->process)
        return fm_error(r->ctx, FM_ERR_NOMEM, "out of memory reading kernels");
    int col = r->c_pushpop >= 0 ? r->c_pushpop : r->c_startstop;
    if (col >= 0) {
        if ((st = nvtx_parse(r, cell(rec, col), r->c_pushpop >= 0 ? 1 : 2,
                             &k->nvtx, &k->nvtx_stack)))
            return st;
    } else {
        k->nvtx = fm_strdup(r->ctx, "");
        k->nvtx_stack = fm_strdup(r->ctx, "");
        if (!k->nvtx || !k->nvtx_stack)
            return fm_error(r->ctx, FM_ERR_NOMEM, "out of memory reading kernels");
    }
    *out = k;
    return FM_OK;
}

/* Records one metric value of a kernel; the unit is checked only for metrics flopmeter uses. */
static enum fm_status store(struct reader *r, struct kbuild *k, const char *metric,
                            const struct fm_csv_field *uf, const char *unit,
                            const struct fm_csv_field *vf, const char *value)
{
    struct metric_id m;
    if (!classify(metric, &m))
        return FM_OK;
    double scale;
    if (!unit_scale(unit, m.unit, &scale)) {
        char msg[200];
        snprintf(msg, sizeof(msg), "' of metric %s is not a unit flopmeter knows for a %s",
                 metric, ukind_name[m.unit]);
        return perr(r, uf->line, uf->col, "the unit '", unit, msg);
    }
    struct fm_prof_number num;
    enum fm_prof_num_result nr = fm_prof_number(value, &num);
    if (nr == FM_NUM_MISSING) {   /* "n/a" or empty: the figure stays unknown, said in a note */
        if (r->na_values++ == 0) {
            r->first_na_line = vf->line;
            snprintf(r->first_na, sizeof(r->first_na), "%s", metric);
        }
        return FM_OK;
    }
    if (nr == FM_NUM_BAD || num.value < 0) {
        char msg[200];
        snprintf(msg, sizeof(msg), "' of metric %s is not a number (written with a decimal "
                 "comma? run ncu with LC_ALL=C)", metric);
        return perr(r, vf->line, vf->col, "the value '", value, msg);
    }
    struct mval *v = &k->v[m.form][m.slot];
    if (m.slot == SL_TENSOR_OPS && v->have) {   /* several op counters add up */
        v->value += num.value * scale;
        v->exact = v->exact && num.exact && scale == 1 && fm_add_ok(v->count, num.count, &v->count);
        return FM_OK;
    }
    if (v->have)   /* the same quantity again (sm__ and smsp__, or another section) */
        return FM_OK;
    v->have = true;
    v->value = num.value * scale;
    v->exact = num.exact && scale == 1 && m.unit != U_TIME;
    v->count = num.count;
    return FM_OK;
}

static int find_col(const struct fm_csv_rec *h, const char *name)
{
    for (size_t i = 0; i < h->n; i++)
        if (strcmp(fm_csv_str(h, i), name) == 0)
            return (int)i;
    return -1;
}

/* The columns after the metric that Nsight Compute writes for its rules' results; metric rows
 * may end before them. */
static bool tail_column(const char *h)
{
    static const char *const tail[] = {"Rule Name", "Rule Type", "Rule Description",
                                       "Estimated Speedup Type", "Estimated Speedup"};
    for (size_t i = 0; i < sizeof(tail) / sizeof(tail[0]); i++)
        if (strcmp(h, tail[i]) == 0)
            return true;
    return false;
}

/* Every column some Nsight Compute version has written (2019.1 to 2025.x, docs/profiles.md);
 * a header column outside this set and not a metric (a name with "__" on the raw page) is
 * one flopmeter does not read: its name goes into the notes. */
static void header_known(struct reader *r)
{
    static const char *const known[] = {
        "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time",
        "Context", "Stream", "Block Size", "Grid Size", "Device", "CC", "Section Name",
        "Metric Name", "Metric Unit", "Metric Value", "Rule Name", "Rule Type",
        "Rule Description", "Estimated Speedup Type", "Estimated Speedup"};
    for (size_t i = 0; i < r->hdr.n; i++) {
        const char *h = fm_csv_str(&r->hdr, i);
        bool ok = strstr(h, "Push/Pop_Range") || strstr(h, "Start/Stop_Range") ||
                  (r->c_mname < 0 && strstr(h, "__"));
        for (size_t j = 0; j < sizeof(known) / sizeof(known[0]) && !ok; j++)
            ok = strcmp(h, known[j]) == 0;
        if (ok)
            continue;
        size_t n = strlen(r->ignored);
        if (r->n_listed < 8 && n + strlen(h) + 8 < sizeof(r->ignored)) {
            snprintf(r->ignored + n, sizeof(r->ignored) - n, "%s\"%.60s\"", n ? ", " : "", h);
            r->n_listed++;
        }
        r->n_ignored++;
    }
}

static bool contains(const char *s, size_t n, const char *what)
{
    size_t w = strlen(what);
    for (size_t i = 0; i + w <= n; i++)
        if (memcmp(s + i, what, w) == 0)
            return true;
    return false;
}

static bool skip_line_text(const char *s, size_t len)
{
    if (len == 0)
        return true;
    if (len >= 2 && s[0] == '=' && s[1] == '=')
        return true;   /* ==PROF==, ==WARNING==, ==ERROR== */
    for (size_t i = 0; i < len; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

/* A row as wide as the header, or one that leaves off only the header's trailing rule columns:
 * Nsight Compute since 2020.2 writes "Rule Name","Rule Type","Rule Description" (since 2023 also
 * "Estimated Speedup Type","Estimated Speedup") in the header and may end metric rows before
 * them, with or without a trailing comma (docs/profiles.md). */
static enum fm_status check_width(struct reader *r)
{
    if (r->rec.n == r->hdr.n)
        return FM_OK;
    if (r->rec.n >= r->min_fields && r->rec.n < r->hdr.n)
        return FM_OK;
    char msg[160];
    snprintf(msg, sizeof(msg), "%zu fields where the header (line %d) has %zu%s", r->rec.n,
             r->hdr.line, r->hdr.n, r->rec.n < r->hdr.n ? ": the row is cut short" : "");
    return perr(r, r->rec.line, r->rec.n < r->hdr.n ? r->rec.end_col : r->rec.f[r->hdr.n].col,
                "a row with ", msg, NULL);
}

/* The next record of the table, skipping ncu's own lines and blank ones; *done at the end. */
static enum fm_status next_row(struct reader *r, bool *done)
{
    for (;;) {
        if (fm_csv_eof(&r->csv)) {
            *done = true;
            return FM_OK;
        }
        size_t len;
        const char *s = fm_csv_peek_line(&r->csv, &len);
        if (skip_line_text(s, len)) {
            fm_csv_skip_line(&r->csv);
            continue;
        }
        *done = false;
        return fm_csv_next(&r->csv, &r->rec);
    }
}

static enum fm_status read_details(struct reader *r)
{
    enum fm_status st;
    bool done;
    while (!(st = next_row(r, &done)) && !done) {
        if ((st = check_width(r)))
            return st;
        struct kbuild *k;
        if ((st = kernel_for(r, &r->rec, true, &k)))
            return st;
        const char *mname = cell(&r->rec, r->c_mname);
        if (!mname[0]) {
            /* a rule's result (its text in the Rule columns, no metric), or a row of neither:
             * both are counted in the notes */
            bool rule = false;
            for (int j = 0; j < 3; j++)
                rule = rule || cell(&r->rec, r->c_rule[j])[0];
            if (rule) {
                r->rule_rows++;
            } else if (r->unnamed_rows++ == 0) {
                r->first_unnamed_line = r->rec.line;
            }
            continue;
        }
        const char *unit = cell(&r->rec, r->c_munit);
        const struct fm_csv_field *uf = &r->rec.f[r->c_munit >= 0 ? r->c_munit : r->c_mval];
        if ((st = store(r, k, mname, uf, unit, &r->rec.f[r->c_mval],
                        fm_csv_str(&r->rec, (size_t)r->c_mval))))
            return st;
    }
    return st;
}

/* ncu's base unit of each kind of metric (what --print-units base writes) */
static const char *const base_unit[] = {"", "byte", "nsecond", "cycle", "cycle/second",
                                        "inst/second", "byte/second", ""};

static enum fm_status read_raw(struct reader *r)
{
    enum fm_status st;
    bool done;
    /* the units row: same width, an empty ID */
    if ((st = next_row(r, &done)))
        return st;
    if (done)
        return perr(r, r->csv.line, 1, "the raw page ends after its header: no units row and "
                    "no kernels", NULL, NULL);
    if ((st = check_width(r)))
        return st;
    /* ncu writes the units in a second header row, whose ID is empty; a page without it (its
     * metrics' units left off) is read in ncu's base units, as --print-units base writes them,
     * and says so in its notes */
    struct fm_csv_rec units;
    memset(&units, 0, sizeof(units));
    bool first_is_kernel = cell(&r->rec, r->c_id)[0] != '\0';
    if (first_is_kernel) {
        r->no_units = true;
    } else {
        units = r->rec;
        memset(&r->rec, 0, sizeof(r->rec));
    }
    /* which columns are metrics flopmeter reads; their units are checked once, here */
    int *cols = fm_alloc(r->ctx, (r->hdr.n + 1) * sizeof(int));
    size_t nc = 0;
    if (!cols) {
        st = fm_error(r->ctx, FM_ERR_NOMEM, "out of memory reading %s", r->name);
        goto out;
    }
    for (size_t i = 0; i < r->hdr.n; i++) {
        struct metric_id m;
        if (!classify(fm_csv_str(&r->hdr, i), &m))
            continue;
        double scale;
        if (!r->no_units && !unit_scale(cell(&units, (int)i), m.unit, &scale)) {
            char msg[200];
            snprintf(msg, sizeof(msg), "' of metric %s is not a unit flopmeter knows for a %s",
                     fm_csv_str(&r->hdr, i), ukind_name[m.unit]);
            st = perr(r, units.f[i].line, units.f[i].col, "the unit '", cell(&units, (int)i), msg);
            goto out;
        }
        cols[nc++] = (int)i;
    }
    for (bool have = first_is_kernel; have || (!(st = next_row(r, &done)) && !done);
         have = false) {
        if ((st = check_width(r)))
            goto out;
        struct kbuild *k;
        if ((st = kernel_for(r, &r->rec, false, &k)))
            goto out;
        for (size_t j = 0; j < nc; j++) {
            size_t i = (size_t)cols[j];
            if (i >= r->rec.n)
                continue;   /* only rule columns may be left off, and they are no metrics */
            struct metric_id m;
            classify(fm_csv_str(&r->hdr, i), &m);
            const char *unit = r->no_units ? base_unit[m.unit] : fm_csv_str(&units, i);
            const struct fm_csv_field *uf = r->no_units ? &r->hdr.f[i] : &units.f[i];
            if ((st = store(r, k, fm_csv_str(&r->hdr, i), uf, unit, &r->rec.f[i],
                            fm_csv_str(&r->rec, i))))
                goto out;
        }
    }
out:
    fm_dealloc(r->ctx, cols);
    fm_csv_rec_release(r->ctx, &units);
    return st;
}

/* ---- figures from the metrics ---- */

struct missing {
    size_t kernels[5 + FM_NCU_PREC_COUNT];   /* fp64, fp32, fp16, dram, time, tensor */
    const char *what[5 + FM_NCU_PREC_COUNT];
    bool flops_derived, dram_derived, time_from_cycles, tensor_inst_only, ffma_x2;
};
enum { MI_DRAM = FM_NCU_PREC_COUNT, MI_TIME, MI_TENSOR };

static const char *const op_metric[FM_NCU_PREC_COUNT][OP_N] = {
    {"sm__sass_thread_inst_executed_op_dadd_pred_on.sum", "sm__sass_thread_inst_executed_op_dmul_pred_on.sum",
     "sm__sass_thread_inst_executed_op_dfma_pred_on.sum", ""},
    {"sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
     "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", ""},
    {"sm__sass_thread_inst_executed_op_hadd_pred_on.sum", "sm__sass_thread_inst_executed_op_hmul_pred_on.sum",
     "sm__sass_thread_inst_executed_op_hfma_pred_on.sum", ""}};

/* A count from its slot: as written, else a rate times the kernel's time or its unit's elapsed
 * cycles. false when neither is there. */
static bool count_of(const struct kbuild *k, enum slot sl, double time_s, bool time_known,
                     struct mval *out, bool *derived)
{
    *derived = false;
    if (k->v[F_COUNT][sl].have) {
        *out = k->v[F_COUNT][sl];
        return true;
    }
    memset(out, 0, sizeof(*out));
    if (k->v[F_PER_SECOND][sl].have && time_known) {
        out->have = true;
        out->value = k->v[F_PER_SECOND][sl].value * time_s;
        *derived = true;
        return true;
    }
    for (int f = F_PER_CYCLE_SM; f <= F_PER_CYCLE_SMSP; f++) {
        enum slot cyc = f == F_PER_CYCLE_SM ? SL_CYC_SM : SL_CYC_SMSP;
        enum slot frq = f == F_PER_CYCLE_SM ? SL_FREQ_SM : SL_FREQ_SMSP;
        if (!k->v[f][sl].have)
            continue;
        double cycles = NAN;
        if (k->v[F_COUNT][cyc].have)
            cycles = k->v[F_COUNT][cyc].value;
        else if (k->v[F_COUNT][frq].have && time_known)
            cycles = k->v[F_COUNT][frq].value * time_s;
        if (!isnan(cycles)) {
            out->have = true;
            out->value = k->v[f][sl].value * cycles;
            *derived = true;
            return true;
        }
    }
    return false;
}

static void fig_from(struct fm_prof_figure *f, const struct mval *v, bool derived)
{
    f->known = true;
    f->exact = v->exact && !derived;
    f->derived = derived;
    f->count = f->exact ? v->count : 0;
    f->value = v->value;
}

static void figures(const struct kbuild *k, struct fm_ncu_figures *fig, struct missing *mi)
{
    memset(fig, 0, sizeof(*fig));
    /* time first: rates need it */
    if (k->v[F_COUNT][SL_TIME].have) {
        fig->time_s.known = true;
        fig->time_s.value = k->v[F_COUNT][SL_TIME].value;
    } else {
        for (int u = 0; u < 2 && !fig->time_s.known; u++) {
            const struct mval *c = &k->v[F_COUNT][u ? SL_CYC_SMSP : SL_CYC_SM];
            const struct mval *hz = &k->v[F_COUNT][u ? SL_FREQ_SMSP : SL_FREQ_SM];
            if (c->have && hz->have && hz->value > 0) {
                fig->time_s.known = true;
                fig->time_s.value = c->value / hz->value;
                mi->time_from_cycles = true;
            }
        }
    }
    if (!fig->time_s.known) {
        mi->kernels[MI_TIME]++;
        mi->what[MI_TIME] = "gpu__time_duration.sum (or sm__cycles_elapsed.avg with "
                            "sm__cycles_elapsed.avg.per_second)";
    }
    double t = fig->time_s.value;
    bool tk = fig->time_s.known;
    for (int p = 0; p < FM_NCU_PREC_COUNT; p++) {
        struct mval add, mul, fma;
        bool d1 = false, d2 = false, d3 = false, x2 = false;
        bool ok = count_of(k, (enum slot)(SL_FLOP0 + p * OP_N + OP_ADD), t, tk, &add, &d1);
        const char *lack = ok ? NULL : op_metric[p][OP_ADD];
        if (!count_of(k, (enum slot)(SL_FLOP0 + p * OP_N + OP_MUL), t, tk, &mul, &d2)) {
            ok = false;
            lack = lack ? lack : op_metric[p][OP_MUL];
        }
        if (!count_of(k, (enum slot)(SL_FLOP0 + p * OP_N + OP_FMA), t, tk, &fma, &d3)) {
            if (k->v[F_COUNT][SL_FLOP0 + p * OP_N + OP_FMA_X2].have) {
                fma = k->v[F_COUNT][SL_FLOP0 + p * OP_N + OP_FMA_X2];
                x2 = true;
                mi->ffma_x2 = true;
            } else {
                ok = false;
                lack = lack ? lack : op_metric[p][OP_FMA];
            }
        }
        if (!ok) {
            mi->kernels[p]++;
            if (!mi->what[p])
                mi->what[p] = lack;
            continue;
        }
        struct fm_prof_figure *f = &fig->flops[p];
        f->known = true;
        f->derived = d1 || d2 || d3;
        f->value = add.value + mul.value + (x2 ? 1 : 2) * fma.value;
        uint64_t c = 0;
        f->exact = !f->derived && add.exact && mul.exact && fma.exact &&
                   fm_add_ok(add.count, mul.count, &c) &&
                   fm_mul_ok(fma.count, x2 ? 1 : 2, &fma.count) && fm_add_ok(c, fma.count, &c);
        f->count = f->exact ? c : 0;
        if (f->derived)
            mi->flops_derived = true;
    }
    struct mval v;
    bool d;
    if (count_of(k, SL_TENSOR_INST, t, tk, &v, &d))
        fig_from(&fig->tensor_inst, &v, d);
    if (k->v[F_COUNT][SL_TENSOR_OPS].have)
        fig_from(&fig->tensor_flops, &k->v[F_COUNT][SL_TENSOR_OPS], false);
    else if (fig->tensor_inst.known && fig->tensor_inst.value > 0)
        mi->tensor_inst_only = true;
    if (count_of(k, SL_DRAM, t, tk, &v, &d)) {
        fig_from(&fig->dram_bytes, &v, d);
    } else {
        struct mval rd, wr;
        bool d1, d2;
        if (count_of(k, SL_DRAM_R, t, tk, &rd, &d1) && count_of(k, SL_DRAM_W, t, tk, &wr, &d2)) {
            struct fm_prof_figure *f = &fig->dram_bytes;
            f->known = true;
            f->derived = d1 || d2;
            f->value = rd.value + wr.value;
            uint64_t c;
            f->exact = !f->derived && rd.exact && wr.exact && fm_add_ok(rd.count, wr.count, &c);
            f->count = f->exact ? c : 0;
        } else {
            mi->kernels[MI_DRAM]++;
            mi->what[MI_DRAM] = "dram__bytes.sum (or dram__bytes_read.sum with "
                                "dram__bytes_write.sum)";
        }
    }
    if (fig->dram_bytes.derived)
        mi->dram_derived = true;
}

static void fig_add(struct fm_prof_figure *dst, const struct fm_prof_figure *src, bool first)
{
    if (first) {
        *dst = *src;
        return;
    }
    dst->known = dst->known && src->known;
    dst->derived = dst->derived || src->derived;
    dst->value += src->value;
    dst->exact = dst->exact && src->exact && fm_add_ok(dst->count, src->count, &dst->count);
    if (!dst->exact)
        dst->count = 0;
}

void fm_ncu_figures_add(struct fm_ncu_figures *dst, const struct fm_ncu_figures *src, bool first)
{
    for (int p = 0; p < FM_NCU_PREC_COUNT; p++)
        fig_add(&dst->flops[p], &src->flops[p], first);
    fig_add(&dst->tensor_flops, &src->tensor_flops, first);
    fig_add(&dst->tensor_inst, &src->tensor_inst, first);
    fig_add(&dst->dram_bytes, &src->dram_bytes, first);
    fig_add(&dst->time_s, &src->time_s, first);
}

static void note(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(char *buf, size_t size, const char *fmt, ...)
{
    size_t n = strlen(buf);
    if (n + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, size - n, fmt, ap);
    va_end(ap);
}

/* What was read but not turned into figures, and how the file was read, in the notes. */
static void read_notes(const struct reader *r, struct fm_ncu_profile *p)
{
    if (p->n_processes > 1)
        note(p->notes, sizeof(p->notes), "Kernels of %zu processes (\"Process ID\"); each "
             "launch is its process's ID, and the totals add every process. ", p->n_processes);
    if (r->no_units)
        note(p->notes, sizeof(p->notes), "The raw page has no row of units: values read in "
             "Nsight Compute's base units (nsecond, byte, cycle/second). ");
    if (r->rule_rows)
        note(p->notes, sizeof(p->notes), "Skipped %zu rule rows (the guidance of ncu's rules, "
             "no metric). ", r->rule_rows);
    if (r->unnamed_rows)
        note(p->notes, sizeof(p->notes), "Skipped %zu rows with neither a metric name nor a "
             "rule (the first at line %d). ", r->unnamed_rows, r->first_unnamed_line);
    if (r->na_values)
        note(p->notes, sizeof(p->notes), "%zu value%s of metrics flopmeter reads %s n/a or "
             "empty (the first: %s at line %d): those figures are unknown, not 0. ",
             r->na_values, r->na_values == 1 ? "" : "s", r->na_values == 1 ? "is" : "are",
             r->first_na, r->first_na_line);
    if (r->n_ignored)
        note(p->notes, sizeof(p->notes), "Ignored %zu column%s of no Nsight Compute version "
             "flopmeter knows: %s%s. ", r->n_ignored, r->n_ignored == 1 ? "" : "s", r->ignored,
             r->n_ignored > r->n_listed ? " and more" : "");
}

static enum fm_status build(struct reader *r, struct fm_ncu_profile *p)
{
    struct missing mi;
    memset(&mi, 0, sizeof(mi));
    p->kernels = fm_alloc(r->ctx, r->n * sizeof(*p->kernels));
    if (!p->kernels)
        return fm_error(r->ctx, FM_ERR_NOMEM, "out of memory reading %s", r->name);
    for (size_t i = 0; i < r->n; i++) {
        struct fm_ncu_kernel *k = &p->kernels[i];
        struct kbuild *b = &r->k[i];
        k->id = b->id;
        k->name = b->name;
        k->nvtx = b->nvtx;
        k->nvtx_stack = b->nvtx_stack;
        k->process = b->process;
        k->line = b->line;
        b->name = b->nvtx = b->nvtx_stack = b->process = NULL;   /* owned by the profile now */
        size_t q = 0;
        while (q < i && strcmp(p->kernels[q].process, k->process) != 0)
            q++;
        if (q == i)
            p->n_processes++;
        p->n_kernels = i + 1;
        figures(b, &k->fig, &mi);
        fm_ncu_figures_add(&p->totals, &k->fig, i == 0);
    }
    if (p->has_nvtx) {
        p->groups = fm_alloc(r->ctx, p->n_kernels * sizeof(*p->groups));
        if (!p->groups)
            return fm_error(r->ctx, FM_ERR_NOMEM, "out of memory reading %s", r->name);
        for (size_t i = 0; i < p->n_kernels; i++) {
            const struct fm_ncu_kernel *k = &p->kernels[i];
            size_t g = 0;
            while (g < p->n_groups && strcmp(p->groups[g].nvtx, k->nvtx) != 0)
                g++;
            if (g == p->n_groups) {
                p->groups[g].nvtx = k->nvtx;
                p->n_groups++;
            }
            fm_ncu_figures_add(&p->groups[g].fig, &k->fig, p->groups[g].kernels == 0);
            p->groups[g].kernels++;
        }
    }
    static const char *const what[] = {"FP64 FLOPs", "FP32 FLOPs", "FP16 FLOPs", "DRAM bytes",
                                       "time"};
    for (int i = 0; i < 5; i++)
        if (mi.kernels[i])
            note(p->notes, sizeof(p->notes), "%s missing for %zu of %zu kernels (the file lacks "
                 "%s). ", what[i], mi.kernels[i], p->n_kernels, mi.what[i]);
    if (mi.time_from_cycles)
        note(p->notes, sizeof(p->notes), "Time = cycles_elapsed.avg / cycles_elapsed.avg."
             "per_second (no gpu__time_duration.sum), as the NERSC roofline method does. ");
    if (mi.flops_derived || mi.dram_derived)
        note(p->notes, sizeof(p->notes), "Some %s%s%s are derived as rate x time from per-second "
             "or per-cycle metrics (rates are never summed as counts); not exact. ",
             mi.flops_derived ? "FLOPs" : "", mi.flops_derived && mi.dram_derived ? " and " : "",
             mi.dram_derived ? "DRAM bytes" : "");
    if (mi.ffma_x2)
        note(p->notes, sizeof(p->notes), "FMA counts from ncu's derived ..._pred_on_x2 metrics "
             "are already doubled. ");
    if (mi.tensor_inst_only)
        note(p->notes, sizeof(p->notes), "Tensor-pipe FLOPs unknown: the file counts tensor "
             "instructions (inst_executed_pipe_tensor), whose FLOPs depend on each instruction's "
             "shape; flopmeter does not guess a factor. FP FLOPs leave that work out. ");
    read_notes(r, p);
    return FM_OK;
}

static enum fm_status no_table(struct reader *r, bool no_kernels, bool nsys, bool empty,
                               const char *err_line)
{
    if (empty)
        return fm_error(r->ctx, FM_ERR_PARSE, "%s:1:1: the file is empty: no Nsight Compute "
                        "table", r->name);
    if (nsys)
        return fm_error(r->ctx, FM_ERR_PARSE, "%s:1:1: this is an Nsight Systems summary "
                        "(`nsys stats`), not Nsight Compute CSV: read it with `flopmeter nsys`",
                        r->name);
    return fm_error(r->ctx, FM_ERR_PARSE, "%s:%d:1: no Nsight Compute table (no header line "
                    "starting with \"ID\"): %s%s%s", r->name, r->csv.line,
                    no_kernels ? "ncu profiled no kernels (its ==WARNING== says so)" :
                    "not `ncu --csv` output",
                    err_line ? "; ncu reported: " : "", err_line ? err_line : "");
}

enum fm_status fm_ncu_read_buffer(struct fm_ctx *ctx, const char *data, size_t len,
                                  const char *name, struct fm_ncu_profile **out)
{
    if (!ctx || !out || (!data && len))
        return ctx ? fm_error(ctx, FM_ERR_INVALID, "fm_ncu_read_buffer: NULL argument")
                   : FM_ERR_INVALID;
    *out = NULL;
    struct reader r;
    memset(&r, 0, sizeof(r));
    r.ctx = ctx;
    r.name = name ? name : "ncu csv";
    r.c_id = r.c_kname = r.c_mname = r.c_munit = r.c_mval = r.c_pushpop = r.c_startstop = -1;
    r.c_pid = r.c_rule[0] = r.c_rule[1] = r.c_rule[2] = -1;
    fm_csv_init(&r.csv, ctx, r.name, data ? data : "", len);
    enum fm_status st = FM_OK;
    struct fm_ncu_profile *p = NULL;
    /* find the header: the first line that starts with "ID" */
    bool no_kernels = false, nsys = false, any = false;
    char errbuf[256] = "";
    for (;;) {
        if (fm_csv_eof(&r.csv)) {
            st = no_table(&r, no_kernels, nsys, !any, errbuf[0] ? errbuf : NULL);
            goto out;
        }
        size_t n;
        const char *s = fm_csv_peek_line(&r.csv, &n);
        any = any || n > 0 || r.csv.p + 1 < r.csv.end;
        if (n >= 4 && strncmp(s, "\"ID\"", 4) == 0)
            break;
        if (n >= 8 && (strncmp(s, "Time (%)", 8) == 0 || strncmp(s, "Time(%)", 7) == 0))
            nsys = true;
        if (n >= 11 && strncmp(s, "==WARNING==", 11) == 0 && contains(s, n, "No kernels"))
            no_kernels = true;
        if (n >= 9 && strncmp(s, "==ERROR==", 9) == 0 && !errbuf[0])
            snprintf(errbuf, sizeof(errbuf), "%.*s", (int)(n > 200 ? 200 : n), s);
        fm_csv_skip_line(&r.csv);
    }
    if ((st = fm_csv_next(&r.csv, &r.hdr)))
        goto out;
    r.c_id = find_col(&r.hdr, "ID");
    r.c_kname = find_col(&r.hdr, "Kernel Name");
    r.c_mname = find_col(&r.hdr, "Metric Name");
    r.c_munit = find_col(&r.hdr, "Metric Unit");
    r.c_mval = find_col(&r.hdr, "Metric Value");
    for (size_t i = 0; i < r.hdr.n; i++) {
        const char *h = fm_csv_str(&r.hdr, i);
        if (strstr(h, "Push/Pop_Range") && r.c_pushpop < 0)
            r.c_pushpop = (int)i;
        else if (strstr(h, "Start/Stop_Range") && r.c_startstop < 0)
            r.c_startstop = (int)i;
    }
    r.c_pid = find_col(&r.hdr, "Process ID");
    r.c_rule[0] = find_col(&r.hdr, "Rule Name");
    r.c_rule[1] = find_col(&r.hdr, "Rule Type");
    r.c_rule[2] = find_col(&r.hdr, "Rule Description");
    r.min_fields = r.hdr.n;
    while (r.min_fields > 1 && tail_column(fm_csv_str(&r.hdr, r.min_fields - 1)))
        r.min_fields--;
    header_known(&r);
    if (find_col(&r.hdr, "Minimum") >= 0 && find_col(&r.hdr, "Average") >= 0) {
        st = perr(&r, r.hdr.line, 1, "this is ncu's --print-summary table (minimum, maximum, "
                  "average per kernel name): flopmeter reads one row per launch; run "
                  "ncu without --print-summary", NULL, NULL);
        goto out;
    }
    if (r.c_id < 0) {   /* every row is a kernel launch, named by its ID */
        st = perr(&r, r.hdr.line, 1, "the header has no \"ID\" column (ncu --csv writes one, "
                  "the launch's number): not ncu's CSV", NULL, NULL);
        goto out;
    }
    r.raw = r.c_mname < 0;
    if (!r.raw && r.c_mval < 0) {
        st = perr(&r, r.hdr.line, r.hdr.end_col, "a \"Metric Name\" column without \"Metric "
                  "Value\": not ncu's details form", NULL, NULL);
        goto out;
    }
    if (r.raw) {
        bool metric = false;
        for (size_t i = 0; i < r.hdr.n && !metric; i++)
            metric = strstr(fm_csv_str(&r.hdr, i), "__") != NULL;
        if (!metric) {
            st = perr(&r, r.hdr.line, r.hdr.end_col, "the header names no metric (no \"Metric "
                      "Name\" column and no column such as dram__bytes.sum): not ncu's CSV",
                      NULL, NULL);
            goto out;
        }
    }
    st = r.raw ? read_raw(&r) : read_details(&r);
    if (st)
        goto out;
    if (r.n == 0) {
        st = perr(&r, r.hdr.line, 1, "the table has a header but no kernel rows", NULL, NULL);
        goto out;
    }
    p = fm_alloc(ctx, sizeof(*p));
    if (!p || !(p->source = fm_strdup(ctx, r.name))) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory reading %s", r.name);
        goto out;
    }
    p->ctx = ctx;
    p->raw_page = r.raw;
    p->has_nvtx = r.c_pushpop >= 0 || r.c_startstop >= 0;
    st = build(&r, p);
out:
    for (size_t i = 0; i < r.n; i++) {
        fm_dealloc(ctx, r.k[i].process);
        fm_dealloc(ctx, r.k[i].name);
        fm_dealloc(ctx, r.k[i].nvtx);
        fm_dealloc(ctx, r.k[i].nvtx_stack);
    }
    fm_dealloc(ctx, r.k);
    fm_csv_rec_release(ctx, &r.rec);
    fm_csv_rec_release(ctx, &r.hdr);
    if (st) {
        fm_ncu_profile_free(p);
        return st;
    }
    *out = p;
    return FM_OK;
}

enum fm_status fm_ncu_read_file(struct fm_ctx *ctx, const char *path, struct fm_ncu_profile **out)
{
    if (!ctx || !path || !out)
        return ctx ? fm_error(ctx, FM_ERR_INVALID, "fm_ncu_read_file: NULL argument")
                   : FM_ERR_INVALID;
    *out = NULL;
    char *text;
    size_t len;
    enum fm_status st = fm_read_text(ctx, path, "Nsight Compute CSV", FM_READ_MAX_PROFILE_MB, &text,
                                     &len);
    if (st)
        return st;
    st = fm_ncu_read_buffer(ctx, text, len, path, out);
    fm_dealloc(ctx, text);
    return st;
}

void fm_ncu_profile_free(struct fm_ncu_profile *p)
{
    if (!p)
        return;
    struct fm_ctx *ctx = p->ctx;
    for (size_t i = 0; i < p->n_kernels; i++) {
        fm_dealloc(ctx, (char *)p->kernels[i].name);
        fm_dealloc(ctx, (char *)p->kernels[i].process);
        fm_dealloc(ctx, (char *)p->kernels[i].nvtx);
        fm_dealloc(ctx, (char *)p->kernels[i].nvtx_stack);
    }
    fm_dealloc(ctx, p->kernels);
    fm_dealloc(ctx, p->groups);
    fm_dealloc(ctx, (char *)p->source);
    fm_dealloc(ctx, p);
}

const char *fm_ncu_prec_name(enum fm_ncu_prec p)
{
    static const char *const names[FM_NCU_PREC_COUNT] = {"fp64", "fp32", "fp16"};
    return (unsigned)p < FM_NCU_PREC_COUNT ? names[p] : "?";
}

bool fm_ncu_counter_flops(const struct fm_ncu_figures *f, double *out)
{
    double v = 0;
    for (int p = 0; p < FM_NCU_PREC_COUNT; p++) {
        if (!f->flops[p].known)
            return false;
        v += f->flops[p].value;
    }
    if (f->tensor_flops.known)
        v += f->tensor_flops.value;
    *out = v;
    return true;
}
