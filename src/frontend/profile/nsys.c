/* The summaries `nsys stats --format csv` writes that say where GPU time went: the CUDA kernel
 * summary (cuda_gpu_kern_sum, older gpukernsum), the NVTX range summary (nvtx_sum, older
 * nvtxsum / nvtxppsum, and nvtx_pushpop_sum: the ranges' CPU-side time), the NVTX GPU
 * projection summary (nvtx_gpu_proj_sum: each range's GPU time) and the NVTX range kernel
 * summary (nvtx_kern_sum, older nvtxkernsum: kernels by the range that launched them). Columns
 * are found by name, as NVIDIA's report scripts and the Nsight Systems User Guide's "Report
 * Scripts" section name them; other reports are refused. */
#include "profile.h"

#include <math.h>
#include <string.h>

enum col {
    C_PCT, C_TOTAL, C_INST, C_AVG, C_MED, C_MIN, C_MAX, C_STD, C_NAME, C_STYLE,
    C_RTIME, C_OPS, C_AVGOPS, C_LVL, C_CHILD,    /* nvtx_gpu_proj_sum */
    C_KERNEL, C_RINST, C_PID, C_TID,             /* nvtx_kern_sum */
    C_N
};

static bool col_is_time(int k)
{
    return k == C_TOTAL || k == C_AVG || k == C_MED || k == C_MIN || k == C_MAX || k == C_STD ||
           k == C_RTIME;
}

static bool col_is_count(int k)
{
    return k == C_INST || k == C_OPS || k == C_RINST || k == C_PID || k == C_TID;
}

static bool col_is_text(int k)
{
    return k == C_NAME || k == C_STYLE || k == C_KERNEL;
}

/* Seconds per unit of a column header's "(ns)" style suffix; old headers ("Average") are ns. */
static double col_unit(const char *h)
{
    const char *o = strrchr(h, '(');
    if (!o)
        return 1e-9;
    if (strncmp(o, "(ns)", 4) == 0)
        return 1e-9;
    if (strncmp(o, "(us)", 4) == 0 || strncmp(o, "(\xC2\xB5s)", 5) == 0)
        return 1e-6;
    if (strncmp(o, "(ms)", 4) == 0)
        return 1e-3;
    if (strncmp(o, "(s)", 3) == 0)
        return 1;
    return NAN;
}

static bool is(const char *h, const char *a)
{
    return strncmp(h, a, strlen(a)) == 0;
}

/* The statistics columns of the kernel, NVTX and range-kernel summaries. */
static int which_stat(const char *h)
{
    if (is(h, "Avg") || strcmp(h, "Average") == 0)
        return C_AVG;
    if (is(h, "Med") || strcmp(h, "Median") == 0)
        return C_MED;
    if (is(h, "Min") || strcmp(h, "Minimum") == 0)
        return C_MIN;
    if (is(h, "Max") || strcmp(h, "Maximum") == 0)
        return C_MAX;
    if (is(h, "StdDev"))
        return C_STD;
    return -1;
}

static int which(const char *h, enum fm_nsys_kind form)
{
    if (strcmp(h, "Style") == 0)
        return C_STYLE;
    if (form == FM_NSYS_NVTX_GPU) {
        static const struct { const char *h; int k; } proj[] = {
            {"Total Proj Time", C_TOTAL}, {"Total Range Time", C_RTIME},
            {"Range Instances", C_INST}, {"Proj Avg", C_AVG}, {"Proj Med", C_MED},
            {"Proj Min", C_MIN}, {"Proj Max", C_MAX}, {"Proj StdDev", C_STD},
            {"Total GPU Ops", C_OPS}, {"Avg GPU Ops", C_AVGOPS}, {"Avg Range Lvl", C_LVL},
            {"Avg Num Child", C_CHILD}};
        if (strcmp(h, "Range") == 0)
            return C_NAME;
        for (size_t i = 0; i < sizeof(proj) / sizeof(proj[0]); i++)
            if (is(h, proj[i].h))
                return proj[i].k;
        return -1;
    }
    if (form == FM_NSYS_NVTX_KERNELS) {
        if (strcmp(h, "NVTX Range") == 0 || strcmp(h, "Range") == 0)
            return C_NAME;
        if (strcmp(h, "Kernel Name") == 0)
            return C_KERNEL;
        if (strcmp(h, "NVTX Inst") == 0)
            return C_RINST;
        if (strcmp(h, "Kern Inst") == 0)
            return C_INST;
        if (strcmp(h, "PID") == 0)
            return C_PID;
        if (strcmp(h, "TID") == 0)
            return C_TID;
        if (is(h, "Total Time"))
            return C_TOTAL;
        return which_stat(h);
    }
    if (strcmp(h, "Time (%)") == 0 || strcmp(h, "Time(%)") == 0 || strcmp(h, "Time") == 0)
        return C_PCT;
    if (is(h, "Total Time"))
        return C_TOTAL;
    if (strcmp(h, "Instances") == 0 || strcmp(h, "Calls") == 0)
        return C_INST;
    if (strcmp(h, "Name") == 0 || strcmp(h, "Range") == 0)
        return C_NAME;
    return which_stat(h);
}

/* Where the header of a summary starts: "Time (%)" (kernel and NVTX summaries), "Range"
 * (nvtx_gpu_proj_sum), "NVTX Range" (nvtx_kern_sum), quoted or not. */
static bool header_line(const char *l, size_t n)
{
    static const char *const starts[] = {"Time", "Range,", "NVTX Range,"};
    if (n > 0 && l[0] == '"')
        l++, n--;
    for (size_t i = 0; i < sizeof(starts) / sizeof(starts[0]); i++) {
        size_t k = strlen(starts[i]);
        if (starts[i][k - 1] == ',') {
            k--;   /* "Range" then a comma, or a closing quote and a comma */
            if (n > k && strncmp(l, starts[i], k) == 0 && (l[k] == ',' || l[k] == '"'))
                return true;
        } else if (n >= k && strncmp(l, starts[i], k) == 0) {
            return true;
        }
    }
    return false;
}

static bool skip_text(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t')
            return false;
    return true;
}

/* Whether the n characters at l hold w (l need not end in a NUL). */
static bool line_has(const char *l, size_t n, const char *w)
{
    size_t k = strlen(w);
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(l + i, w, k) == 0)
            return true;
    return false;
}

/* Adds a row to its range (name and style), found or new. */
static enum fm_status add_to_range(struct fm_nsys_summary *s, size_t *cap,
                                   const struct fm_nsys_row *row)
{
    struct fm_nsys_range *g = NULL;
    for (size_t i = s->n_ranges; i-- > 0;)
        if (strcmp(s->ranges[i].name, row->name) == 0 &&
            strcmp(s->ranges[i].style, row->style) == 0) {
            g = &s->ranges[i];
            break;
        }
    if (!g) {
        enum fm_status st = fm_grow(s->ctx, (void **)&s->ranges, cap, s->n_ranges + 1,
                                    sizeof(*s->ranges));
        if (st)
            return st;
        g = &s->ranges[s->n_ranges++];
        memset(g, 0, sizeof(*g));
        g->name = row->name;
        g->style = row->style;
        g->gpu_ops_known = true;
        g->range_time_s = s->kind == FM_NSYS_NVTX_GPU ? 0 : NAN;
    }
    bool kern = s->kind == FM_NSYS_NVTX_KERNELS;
    g->gpu_s += row->total_s;
    g->rows++;
    uint64_t ops = kern ? row->instances : row->gpu_ops;
    g->gpu_ops_known = g->gpu_ops_known && (kern || row->gpu_ops_known) &&
                       fm_add_ok(g->gpu_ops, ops, &g->gpu_ops);
    if (kern) {
        if (row->range_instances > g->instances)
            g->instances = row->range_instances;
    } else {
        g->range_time_s += row->range_time_s;
        if (!fm_add_ok(g->instances, row->instances, &g->instances))
            g->instances = UINT64_MAX;
    }
    return FM_OK;
}

enum fm_status fm_nsys_read_buffer(struct fm_ctx *ctx, const char *data, size_t len,
                                   const char *name, struct fm_nsys_summary **out)
{
    if (!ctx || !out || (!data && len))
        return ctx ? fm_error(ctx, FM_ERR_INVALID, "fm_nsys_read_buffer: NULL argument")
                   : FM_ERR_INVALID;
    *out = NULL;
    name = name ? name : "nsys csv";
    struct fm_csv c;
    fm_csv_init(&c, ctx, name, data ? data : "", len);
    struct fm_csv_rec h = {0}, r = {0};
    struct fm_nsys_summary *s = NULL;
    enum fm_status st = FM_OK;
    char script[64] = "";
    /* the header: the first line starting with "Time", "Range" or "NVTX Range"; before it,
     * nsys's own lines ("Generating SQLite file ...", "NOTICE: Existing SQLite export found",
     * "Processing [...] with [.../nvtx_sum.py]...") */
    for (;;) {
        if (fm_csv_eof(&c)) {
            st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:1: %s%s%s", name, c.line,
                          len == 0 ? "the file is empty: no Nsight Systems summary"
                                   : "no `nsys stats` summary table (no header line starting "
                                     "with \"Time (%)\", \"Range\" or \"NVTX Range\")",
                          script[0] ? "; nsys ran the report " : "", script);
            goto out;
        }
        size_t n;
        const char *l = fm_csv_peek_line(&c, &n);
        if (header_line(l, n))
            break;
        if (n >= 4 && strncmp(l, "\"ID\"", 4) == 0) {
            st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:1: this is Nsight Compute CSV (`ncu --csv`), "
                          "not an Nsight Systems summary: read it with `flopmeter ncu`", name,
                          c.line);
            goto out;
        }
        if (line_has(l, n, "Projected Start")) {
            st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:1: this is nvtx_gpu_proj_trace, one row per "
                          "range instance; flopmeter reads the summary: "
                          "`nsys stats --report nvtx_gpu_proj_sum --format csv`", name, c.line);
            goto out;
        }
        if (n > 11 && strncmp(l, "Processing ", 11) == 0) {
            /* the report script's name: ".../cuda_gpu_kern_sum.py]" */
            const char *py = NULL;
            for (size_t i = 0; i + 3 <= n; i++)
                if (memcmp(l + i, ".py", 3) == 0)
                    py = l + i;
            if (py) {
                const char *b = py;
                while (b > l && b[-1] != '/' && b[-1] != '\\' && b[-1] != '[')
                    b--;
                snprintf(script, sizeof(script), "%.*s", (int)(py - b), b);
            }
        }
        fm_csv_skip_line(&c);
    }
    if ((st = fm_csv_next(&c, &h)))
        goto out;
    /* which report: the GPU projection has "Total Proj Time", the range-kernel summary
     * "Kernel Name" (or "Kern Inst"), the NVTX summary "Range", the kernel summary "Name" */
    enum fm_nsys_kind form = FM_NSYS_KERNELS;
    bool calls_api = false, operation = false;
    for (size_t i = 0; i < h.n; i++) {
        const char *t = fm_csv_str(&h, i);
        if (is(t, "Total Proj Time"))
            form = FM_NSYS_NVTX_GPU;
        else if ((strcmp(t, "Kernel Name") == 0 || strcmp(t, "Kern Inst") == 0) &&
                 form != FM_NSYS_NVTX_GPU)
            form = FM_NSYS_NVTX_KERNELS;
        else if (strcmp(t, "Range") == 0 && form == FM_NSYS_KERNELS)
            form = FM_NSYS_NVTX;
        if (strcmp(t, "Num Calls") == 0)
            calls_api = true;
        if (strcmp(t, "Operation") == 0)
            operation = true;
    }
    int col[C_N];
    double unit[C_N];
    for (int k = 0; k < C_N; k++)
        col[k] = -1, unit[k] = 1e-9;
    for (size_t i = 0; i < h.n; i++) {
        const char *t = fm_csv_str(&h, i);
        int k = which(t, form);
        if (k < 0 || col[k] >= 0)
            continue;
        col[k] = (int)i;
        if (!col_is_time(k))
            continue;
        unit[k] = col_unit(t);
        if (isnan(unit[k])) {
            st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:%d: the column \"%s\" has a time unit "
                          "flopmeter does not know (ns, us, ms, s)", name, h.f[i].line,
                          h.f[i].col, t);
            goto out;
        }
    }
    if (calls_api || operation) {
        st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:1: this is %s, not the kernel summary "
                      "(cuda_gpu_kern_sum) or an NVTX summary (nvtx_sum, nvtx_gpu_proj_sum)%s%s",
                      name, h.line, operation ? "a memory-operation summary" : "an API-call "
                      "summary (cuda_api_sum, osrt_sum: \"Num Calls\")",
                      script[0] ? "; nsys ran " : "", script);
        goto out;
    }
    const char *lacks = NULL;
    if (form == FM_NSYS_NVTX_GPU)
        lacks = col[C_NAME] < 0 ? "\"Range\"" : col[C_INST] < 0 ? "\"Range Instances\"" : NULL;
    else if (form == FM_NSYS_NVTX_KERNELS)
        lacks = col[C_NAME] < 0 ? "\"NVTX Range\"" : col[C_KERNEL] < 0 ? "\"Kernel Name\""
              : col[C_INST] < 0 ? "\"Kern Inst\"" : col[C_TOTAL] < 0 ? "\"Total Time (ns)\""
              : NULL;
    else
        lacks = col[C_TOTAL] < 0 ? "\"Total Time (ns)\"" : col[C_NAME] < 0 ? "\"Name\" or "
              "\"Range\"" : col[C_INST] < 0 ? "\"Instances\"" : NULL;
    if (lacks) {
        st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:%d: the header lacks %s: not %s of `nsys stats`",
                      name, h.line, h.end_col, lacks,
                      form == FM_NSYS_NVTX_GPU ? "the NVTX GPU projection summary "
                                                 "(nvtx_gpu_proj_sum)"
                      : form == FM_NSYS_NVTX_KERNELS ? "the NVTX range kernel summary "
                                                       "(nvtx_kern_sum)"
                                                     : "a kernel or NVTX summary");
        goto out;
    }
    if (script[0] && strstr(script, "kern") == NULL && strstr(script, "nvtx") == NULL) {
        st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:1: nsys ran the '%s' report; flopmeter reads "
                      "cuda_gpu_kern_sum, nvtx_sum, nvtx_gpu_proj_sum and nvtx_kern_sum", name,
                      h.line, script);
        goto out;
    }
    s = fm_alloc(ctx, sizeof(*s));
    if (!s || !(s->source = fm_strdup(ctx, name))) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory reading %s", name);
        goto out;
    }
    s->ctx = ctx;
    s->kind = form;
    bool old = col[C_AVG] >= 0 && strcmp(fm_csv_str(&h, (size_t)col[C_AVG]), "Average") == 0;
    static const char *const names[FM_NSYS_KIND_COUNT][2] = {
        {"cuda_gpu_kern_sum", "gpukernsum"}, {"nvtx_sum", "nvtxsum"},
        {"nvtx_gpu_proj_sum", "nvtx_gpu_proj_sum"}, {"nvtx_kern_sum", "nvtxkernsum"}};
    snprintf(s->report, sizeof(s->report), "%s", script[0] ? script : names[form][old]);
    bool gpu_ranges = form == FM_NSYS_NVTX_GPU || form == FM_NSYS_NVTX_KERNELS;
    s->top_level_s = form == FM_NSYS_NVTX_GPU && col[C_LVL] >= 0 ? 0 : NAN;
    s->gpu_ops_known = gpu_ranges && (form == FM_NSYS_NVTX_KERNELS || col[C_OPS] >= 0);
    size_t cap = 0, rcap = 0;
    for (;;) {
        if (fm_csv_eof(&c))
            break;
        size_t n;
        const char *l = fm_csv_peek_line(&c, &n);
        if (skip_text(l, n) || (n > 11 && strncmp(l, "Processing ", 11) == 0))
            break;   /* a blank line or the next report ends this one */
        if ((st = fm_csv_next(&c, &r)))
            goto out;
        if (r.n != h.n) {
            st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:%d: a row with %zu fields where the header "
                          "(line %d) has %zu%s", name, r.line,
                          r.n < h.n ? r.end_col : r.f[h.n].col, r.n, h.line, h.n,
                          r.n < h.n ? ": the row is cut short" : "");
            goto out;
        }
        if ((st = fm_grow(ctx, (void **)&s->rows, &cap, s->n_rows + 1, sizeof(*s->rows))))
            goto out;
        struct fm_nsys_row *row = &s->rows[s->n_rows];
        memset(row, 0, sizeof(*row));
        row->line = r.line;
        row->name = fm_strdup(ctx, fm_csv_str(&r, (size_t)col[C_NAME]));
        row->style = fm_strdup(ctx, col[C_STYLE] >= 0 ? fm_csv_str(&r, (size_t)col[C_STYLE]) : "");
        row->kernel = fm_strdup(ctx, col[C_KERNEL] >= 0 ? fm_csv_str(&r, (size_t)col[C_KERNEL])
                                                        : "");
        s->n_rows++;
        if (!row->name || !row->style || !row->kernel) {
            st = fm_error(ctx, FM_ERR_NOMEM, "out of memory reading %s", name);
            goto out;
        }
        row->pid = row->tid = -1;
        double *dst[C_N] = {0};
        dst[C_PCT] = &row->time_pct;
        dst[C_TOTAL] = &row->total_s;
        dst[C_AVG] = &row->avg_s;
        dst[C_MED] = &row->med_s;
        dst[C_MIN] = &row->min_s;
        dst[C_MAX] = &row->max_s;
        dst[C_STD] = &row->stddev_s;
        dst[C_RTIME] = &row->range_time_s;
        dst[C_AVGOPS] = &row->avg_gpu_ops;
        dst[C_LVL] = &row->avg_level;
        dst[C_CHILD] = &row->avg_children;
        for (int k = 0; k < C_N; k++) {
            if (col_is_text(k))
                continue;
            if (dst[k])
                *dst[k] = NAN;
            if (col[k] < 0)
                continue;
            const char *t = fm_csv_str(&r, (size_t)col[k]);
            struct fm_prof_number num;
            enum fm_prof_num_result nr = fm_prof_number(t, &num);
            if (nr == FM_NUM_MISSING && k != C_TOTAL && k != C_INST)
                continue;
            if (nr != FM_NUM_OK || num.value < 0 || (col_is_count(k) && !num.exact) ||
                ((k == C_PID || k == C_TID) && num.count > (uint64_t)INT64_MAX)) {
                st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:%d: \"%s\" is not %s", name,
                              r.f[col[k]].line, r.f[col[k]].col, t,
                              k == C_INST || k == C_RINST ? "a count of instances"
                              : k == C_OPS ? "a count of GPU operations"
                              : k == C_PID || k == C_TID ? "a process or thread id"
                                                         : "a non-negative number");
                goto out;
            }
            if (k == C_INST)
                row->instances = num.count;
            else if (k == C_OPS)
                row->gpu_ops = num.count, row->gpu_ops_known = true;
            else if (k == C_RINST)
                row->range_instances = num.count;
            else if (k == C_PID)
                row->pid = (int64_t)num.count;
            else if (k == C_TID)
                row->tid = (int64_t)num.count;
            else
                *dst[k] = col_is_time(k) ? num.value * unit[k] : num.value;
        }
        s->total_s += row->total_s;
        if (!fm_add_ok(s->instances, row->instances, &s->instances)) {
            st = fm_error(ctx, FM_ERR_PARSE, "%s:%d: the instances add up beyond 64 bits",
                          name, r.line);
            goto out;
        }
        if (!gpu_ranges)
            continue;
        if (form == FM_NSYS_NVTX_GPU && !isnan(s->top_level_s) && row->avg_level == 0)
            s->top_level_s += row->total_s;
        uint64_t ops = form == FM_NSYS_NVTX_KERNELS ? row->instances : row->gpu_ops;
        s->gpu_ops_known = s->gpu_ops_known &&
                           (form == FM_NSYS_NVTX_KERNELS || row->gpu_ops_known) &&
                           fm_add_ok(s->gpu_ops, ops, &s->gpu_ops);
        if ((st = add_to_range(s, &rcap, row))) {
            st = fm_error(ctx, st, "out of memory reading %s", name);
            goto out;
        }
    }
    if (!s->gpu_ops_known)
        s->gpu_ops = 0;
    if (s->n_rows == 0) {
        st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:1: the summary has a header but no rows", name,
                      h.line);
        goto out;
    }
out:
    fm_csv_rec_release(ctx, &h);
    fm_csv_rec_release(ctx, &r);
    if (st) {
        fm_nsys_summary_free(s);
        return st;
    }
    *out = s;
    return FM_OK;
}

enum fm_status fm_nsys_read_file(struct fm_ctx *ctx, const char *path,
                                 struct fm_nsys_summary **out)
{
    if (!ctx || !path || !out)
        return ctx ? fm_error(ctx, FM_ERR_INVALID, "fm_nsys_read_file: NULL argument")
                   : FM_ERR_INVALID;
    *out = NULL;
    char *text;
    size_t len;
    enum fm_status st = fm_read_text(ctx, path, "Nsight Systems summary", FM_READ_MAX_PROFILE_MB,
                                     &text, &len);
    if (st)
        return st;
    st = fm_nsys_read_buffer(ctx, text, len, path, out);
    fm_dealloc(ctx, text);
    return st;
}

void fm_nsys_summary_free(struct fm_nsys_summary *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_rows; i++) {
        fm_dealloc(s->ctx, (char *)s->rows[i].name);
        fm_dealloc(s->ctx, (char *)s->rows[i].style);
        fm_dealloc(s->ctx, (char *)s->rows[i].kernel);
    }
    fm_dealloc(s->ctx, s->rows);
    fm_dealloc(s->ctx, s->ranges);
    fm_dealloc(s->ctx, (char *)s->source);
    fm_dealloc(s->ctx, s);
}

const char *fm_nsys_kind_name(enum fm_nsys_kind k)
{
    return k == FM_NSYS_NVTX ? "nvtx" : k == FM_NSYS_KERNELS ? "kernels"
         : k == FM_NSYS_NVTX_GPU ? "nvtx_gpu" : k == FM_NSYS_NVTX_KERNELS ? "nvtx_kernels" : "?";
}
