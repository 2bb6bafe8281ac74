/* The summaries `nsys stats --format csv` writes that say where GPU time went: the CUDA kernel
 * summary (cuda_gpu_kern_sum, older gpukernsum) and the NVTX range summary (nvtx_sum, older
 * nvtxsum / nvtxppsum). Columns are found by name, as NVIDIA's report scripts and the
 * Nsight Systems Post-Collection Analysis Guide name them; other reports are refused. */
#include "profile.h"

#include <math.h>
#include <string.h>

enum col { C_PCT, C_TOTAL, C_INST, C_AVG, C_MED, C_MIN, C_MAX, C_STD, C_NAME, C_STYLE, C_N };

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

static int which(const char *h)
{
    if (strcmp(h, "Time (%)") == 0 || strcmp(h, "Time(%)") == 0 || strcmp(h, "Time") == 0)
        return C_PCT;
    if (is(h, "Total Time"))
        return C_TOTAL;
    if (strcmp(h, "Instances") == 0 || strcmp(h, "Calls") == 0)
        return C_INST;
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
    if (strcmp(h, "Name") == 0 || strcmp(h, "Range") == 0)
        return C_NAME;
    if (strcmp(h, "Style") == 0)
        return C_STYLE;
    return -1;
}

static bool skip_text(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t')
            return false;
    return true;
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
    /* the header: the first line starting with "Time"; before it, nsys's own lines
     * ("Generating SQLite file ...", "Processing [...] with [.../nvtx_sum.py]...") */
    for (;;) {
        if (fm_csv_eof(&c)) {
            st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:1: %s", name, c.line,
                          len == 0 ? "the file is empty: no Nsight Systems summary"
                                   : "no `nsys stats` summary table (no header line starting "
                                     "with \"Time (%)\")");
            goto out;
        }
        size_t n;
        const char *l = fm_csv_peek_line(&c, &n);
        if ((n >= 4 && strncmp(l, "Time", 4) == 0) || (n >= 5 && strncmp(l, "\"Time", 5) == 0))
            break;
        if (n >= 4 && strncmp(l, "\"ID\"", 4) == 0) {
            st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:1: this is Nsight Compute CSV (`ncu --csv`), "
                          "not an Nsight Systems summary: read it with `flopmeter ncu`", name,
                          c.line);
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
    int col[C_N];
    double unit[C_N];
    for (int k = 0; k < C_N; k++)
        col[k] = -1, unit[k] = 1e-9;
    bool range = false, calls_api = false, operation = false;
    for (size_t i = 0; i < h.n; i++) {
        const char *t = fm_csv_str(&h, i);
        int k = which(t);
        if (strcmp(t, "Range") == 0)
            range = true;
        if (strcmp(t, "Num Calls") == 0)
            calls_api = true;
        if (strcmp(t, "Operation") == 0)
            operation = true;
        if (k < 0 || col[k] >= 0)
            continue;
        col[k] = (int)i;
        if (k == C_PCT || k == C_INST || k == C_NAME || k == C_STYLE)
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
                      "(cuda_gpu_kern_sum) or the NVTX summary (nvtx_sum)%s%s", name, h.line,
                      operation ? "a memory-operation summary" : "an API-call summary "
                      "(cuda_api_sum, osrt_sum: \"Num Calls\")", script[0] ? "; nsys ran " : "",
                      script);
        goto out;
    }
    if (col[C_TOTAL] < 0 || col[C_NAME] < 0 || col[C_INST] < 0) {
        st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:%d: the header lacks %s: not a kernel or NVTX "
                      "summary of `nsys stats`", name, h.line, h.end_col,
                      col[C_TOTAL] < 0 ? "\"Total Time (ns)\"" : col[C_NAME] < 0 ?
                      "\"Name\" or \"Range\"" : "\"Instances\"");
        goto out;
    }
    if (script[0] && strstr(script, "kern") == NULL && strstr(script, "nvtx") == NULL) {
        st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:1: nsys ran the '%s' report; flopmeter reads "
                      "cuda_gpu_kern_sum and nvtx_sum", name, h.line, script);
        goto out;
    }
    if (script[0] && strstr(script, "nvtx") && strstr(script, "kern")) {
        st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:1: nsys ran the '%s' report (kernels per NVTX "
                      "range); flopmeter reads cuda_gpu_kern_sum and nvtx_sum", name, h.line,
                      script);
        goto out;
    }
    s = fm_alloc(ctx, sizeof(*s));
    if (!s || !(s->source = fm_strdup(ctx, name))) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory reading %s", name);
        goto out;
    }
    s->ctx = ctx;
    s->kind = range ? FM_NSYS_NVTX : FM_NSYS_KERNELS;
    bool old = col[C_AVG] >= 0 && strcmp(fm_csv_str(&h, (size_t)col[C_AVG]), "Average") == 0;
    snprintf(s->report, sizeof(s->report), "%s",
             script[0] ? script : range ? (old ? "nvtxsum" : "nvtx_sum")
                                        : (old ? "gpukernsum" : "cuda_gpu_kern_sum"));
    size_t cap = 0;
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
        s->n_rows++;
        if (!row->name || !row->style) {
            st = fm_error(ctx, FM_ERR_NOMEM, "out of memory reading %s", name);
            goto out;
        }
        double *dst[C_N] = {&row->time_pct, &row->total_s, NULL, &row->avg_s, &row->med_s,
                            &row->min_s, &row->max_s, &row->stddev_s, NULL, NULL};
        for (int k = 0; k < C_N; k++) {
            if (k == C_NAME || k == C_STYLE)
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
            if (nr != FM_NUM_OK || num.value < 0 || (k == C_INST && !num.exact)) {
                st = fm_error(ctx, FM_ERR_PARSE, "%s:%d:%d: \"%s\" is not %s", name,
                              r.f[col[k]].line, r.f[col[k]].col, t,
                              k == C_INST ? "a count of instances" : "a non-negative number");
                goto out;
            }
            if (k == C_INST)
                row->instances = num.count;
            else
                *dst[k] = k == C_PCT ? num.value : num.value * unit[k];
        }
        s->total_s += row->total_s;
        if (!fm_add_ok(s->instances, row->instances, &s->instances)) {
            st = fm_error(ctx, FM_ERR_PARSE, "%s:%d: the instances add up beyond 64 bits",
                          name, r.line);
            goto out;
        }
    }
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
    }
    fm_dealloc(s->ctx, s->rows);
    fm_dealloc(s->ctx, (char *)s->source);
    fm_dealloc(s->ctx, s);
}

const char *fm_nsys_kind_name(enum fm_nsys_kind k)
{
    return k == FM_NSYS_NVTX ? "nvtx" : k == FM_NSYS_KERNELS ? "kernels" : "?";
}
