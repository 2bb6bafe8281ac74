/* The calibration model (docs/calibration.md): a device's time model fitted from timings of
 * single layers, one entry per op class, kind and phase,
 *     t = fixed_s + flops x s_per_flop + bytes x s_per_byte,
 * fitted by non-negative least squares on relative residuals; the lookup a prediction makes
 * (with the eviction curve that blends warm and cold fits); and the check that a calibration
 * was made where it is used. What kind of op a node is, the ops say (fm_op_kind). The file
 * format is calib_file.c's, the sweep that times the layers calib_sweep.c's. */
#include "../core/internal.h"
#include "../ops/ops.h"
#include "analysis.h"
#include "calib_common.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FM_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* fm_op_kind (src/ops) says what kind of op a node is: a convolution's one of
 * enum fm_conv_kind, every other op its display name ("BatchNorm", "LayerNorm", "GELU"), and ""
 * is the whole class. */
const char fm_calib_known_kinds[] =
    "\"\", dense, pointwise, depthwise, grouped or an op's name: letters, digits and _";

/* One of the convolutions' kinds. */
static bool conv_kind(const char *kind)
{
    for (int i = 0; i < FM_CONV_KIND_COUNT; i++) {
        if (strcmp(kind, fm_conv_kind_name((enum fm_conv_kind)i)) == 0)
            return true;
    }
    return false;
}

bool fm_calib_kind_valid(const char *kind)
{
    if (!memchr(kind, '\0', FM_CALIB_KIND_MAX))
        return false;
    for (const char *p = kind; *p; p++) {
        bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                  (*p >= '0' && *p <= '9') || *p == '_';
        if (!ok)
            return false;
    }
    return true;
}

/* The op's own fit where the sweep timed it, the class's where it did not; a kind a file could
 * not hold is the whole class. */
void fm_calib_kind(const struct fm_graph *graph, fm_nid node, char kind[FM_CALIB_KIND_MAX])
{
    fm_op_kind(graph, node, kind, FM_CALIB_KIND_MAX);
    if (!fm_calib_kind_valid(kind))
        kind[0] = '\0';
}

/* ---- the fit ---- */

/* The three terms of the model: column j of a sample's row. */
enum { TERM_FIXED = 0, TERM_FLOPS, TERM_BYTES, TERMS };

static double term(const struct fm_calib_sample *s, int j)
{
    return j == TERM_FIXED ? 1.0 : j == TERM_FLOPS ? s->flops : s->bytes;
}

/* The model's time; fm_calibration_time evaluates the same expression in the same order. */
static double model_s(const double coef[TERMS], double flops, double bytes)
{
    return coef[TERM_FIXED] + flops * coef[TERM_FLOPS] + bytes * coef[TERM_BYTES];
}

/* Solves a x = b (k x k, k <= 3) by Gaussian elimination with partial pivoting; false when a
 * pivot falls to 1e-12 or below. a has unit diagonal (columns scaled to unit norm), so the
 * threshold is relative: two columns that agree to within about 1e-6 radians are one. */
static bool gauss(double a_in[TERMS][TERMS], const double b_in[TERMS], int k, double x[TERMS])
{
    double a[TERMS][TERMS + 1];
    for (int i = 0; i < k; i++) {
        for (int j = 0; j < k; j++)
            a[i][j] = a_in[i][j];
        a[i][k] = b_in[i];
    }
    for (int c = 0; c < k; c++) {
        int piv = c;
        for (int r = c + 1; r < k; r++) {
            if (fabs(a[r][c]) > fabs(a[piv][c]))
                piv = r;
        }
        if (!(fabs(a[piv][c]) > 1e-12))
            return false;
        if (piv != c) {
            for (int j = 0; j <= k; j++) {
                double t = a[c][j];
                a[c][j] = a[piv][j];
                a[piv][j] = t;
            }
        }
        for (int r = c + 1; r < k; r++) {
            double f = a[r][c] / a[c][c];
            for (int j = c; j <= k; j++)
                a[r][j] -= f * a[c][j];
        }
    }
    for (int i = k - 1; i >= 0; i--) {
        double s = a[i][k];
        for (int j = i + 1; j < k; j++)
            s -= a[i][j] * x[j];
        x[i] = s / a[i][i];
    }
    return true;
}

/* The weighted least-squares fit of the terms in mask to rows[0..m): each row divided by its
 * time, so the residuals are (fit - t) / t. Columns are scaled to unit norm before the normal
 * equations are formed (FLOPs, bytes and 1 differ by ten orders of magnitude), and two steps
 * of iterative refinement, with residuals computed from the rows rather than from the normal
 * equations, take the solution to the accuracy of the rows. False when the system is singular
 * or a coefficient comes out negative; else coef (the terms outside mask 0) and the weighted
 * sum of squared residuals. */
static bool fit_terms(const struct fm_calib_sample *const *rows, size_t m, unsigned mask,
                      double coef[TERMS], double *sse)
{
    int cols[TERMS], k = 0;
    for (int j = 0; j < TERMS; j++) {
        if (mask & (1u << j))
            cols[k++] = j;
    }
    double scale[TERMS] = {0};
    for (size_t i = 0; i < m; i++) {
        for (int c = 0; c < k; c++) {
            double v = term(rows[i], cols[c]) / rows[i]->seconds;
            scale[c] += v * v;
        }
    }
    for (int c = 0; c < k; c++) {
        if (!(scale[c] > 0) || !isfinite(scale[c]))
            return false;
        scale[c] = sqrt(scale[c]);
    }
    double g[TERMS][TERMS] = {{0}}, rhs[TERMS] = {0};
    for (size_t i = 0; i < m; i++) {
        double u[TERMS];
        for (int c = 0; c < k; c++)
            u[c] = term(rows[i], cols[c]) / rows[i]->seconds / scale[c];
        for (int a = 0; a < k; a++) {
            rhs[a] += u[a];
            for (int b = 0; b < k; b++)
                g[a][b] += u[a] * u[b];
        }
    }
    double q[TERMS] = {0};
    if (!gauss(g, rhs, k, q))
        return false;
    for (int it = 0; it < 2; it++) {
        double r[TERMS] = {0}, d[TERMS] = {0};
        for (size_t i = 0; i < m; i++) {
            double u[TERMS], res = 1.0;
            for (int c = 0; c < k; c++) {
                u[c] = term(rows[i], cols[c]) / rows[i]->seconds / scale[c];
                res -= u[c] * q[c];
            }
            for (int a = 0; a < k; a++)
                r[a] += u[a] * res;
        }
        if (!gauss(g, r, k, d))
            return false;
        for (int c = 0; c < k; c++)
            q[c] += d[c];
    }
    for (int j = 0; j < TERMS; j++)
        coef[j] = 0.0;
    for (int c = 0; c < k; c++) {
        double v = q[c] / scale[c];
        if (!(v >= 0) || !isfinite(v))
            return false;
        coef[cols[c]] = v;
    }
    double s = 0;
    for (size_t i = 0; i < m; i++) {
        double e = (model_s(coef, rows[i]->flops, rows[i]->bytes) - rows[i]->seconds) /
                   rows[i]->seconds;
        s += e * e;
    }
    *sse = s;
    return true;
}

/* Non-negative least squares with three unknowns, exactly: the optimum has some set of terms
 * at zero and is the unconstrained fit of the others, so the best feasible fit over the 7
 * non-empty sets of terms is the answer. Sets are tried fewest terms first, and a later set
 * wins only when its error is smaller by more than rounding (1e-24 per sample: a relative RMS
 * of 1e-12), so a term the data does not need stays exactly 0. Among sets of one size the order
 * is: the FLOP rate, the byte rate, the constant; then constant + FLOPs, constant + bytes,
 * FLOPs + bytes; so a lone sample gives its effective FLOP rate, as PALEO would. A set needs as
 * many samples as terms; a term whose column is all zero is left out. */
static void fit_group(const struct fm_calib_sample *const *rows, size_t m,
                      struct fm_calib_entry *e)
{
    static const unsigned order[] = {
        1u << TERM_FLOPS,
        1u << TERM_BYTES,
        1u << TERM_FIXED,
        (1u << TERM_FIXED) | (1u << TERM_FLOPS),
        (1u << TERM_FIXED) | (1u << TERM_BYTES),
        (1u << TERM_FLOPS) | (1u << TERM_BYTES),
        (1u << TERM_FIXED) | (1u << TERM_FLOPS) | (1u << TERM_BYTES),
    };
    unsigned present = 1u << TERM_FIXED;
    for (size_t i = 0; i < m; i++) {
        if (rows[i]->flops != 0)
            present |= 1u << TERM_FLOPS;
        if (rows[i]->bytes != 0)
            present |= 1u << TERM_BYTES;
    }
    double best[TERMS] = {0}, best_sse = INFINITY;
    bool found = false;
    double tol = 1e-24 * (double)m;
    for (size_t o = 0; o < FM_COUNT_OF(order); o++) {
        unsigned mask = order[o];
        size_t nterms = (size_t)__builtin_popcount(mask);
        if ((mask & ~present) || nterms > m)
            continue;
        double coef[TERMS], sse;
        if (!fit_terms(rows, m, mask, coef, &sse))
            continue;
        if (!found || sse < best_sse - tol) {
            memcpy(best, coef, sizeof(best));
            best_sse = sse;
            found = true;
        }
    }
    if (!found) {
        /* cannot happen (the constant alone is always a feasible fit of positive times), but
         * keep the result defined: the mean time as a constant */
        double s = 0;
        for (size_t i = 0; i < m; i++)
            s += rows[i]->seconds;
        best[TERM_FIXED] = s / (double)m;
        best_sse = 0;
        for (size_t i = 0; i < m; i++) {
            double r = (best[TERM_FIXED] - rows[i]->seconds) / rows[i]->seconds;
            best_sse += r * r;
        }
    }
    e->fixed_s = best[TERM_FIXED];
    e->s_per_flop = best[TERM_FLOPS];
    e->s_per_byte = best[TERM_BYTES];
    e->points = m > INT_MAX ? INT_MAX : (int)m;
    e->rel_rms = sqrt(best_sse / (double)m);
}

/* Order of entries (and of groups of samples): class, kind, phase, warm before cold. */
int fm_calib_key_cmp(enum fm_class ca, const char *ka, enum fm_phase pa, bool cold_a,
                     enum fm_class cb, const char *kb, enum fm_phase pb, bool cold_b)
{
    if (ca != cb)
        return ca < cb ? -1 : 1;
    int k = strcmp(ka, kb);
    if (k)
        return k < 0 ? -1 : 1;
    if (pa != pb)
        return pa < pb ? -1 : 1;
    if (cold_a != cold_b)
        return cold_a ? 1 : -1;
    return 0;
}

static int sample_cmp(const void *a, const void *b)
{
    const struct fm_calib_sample *x = *(const struct fm_calib_sample *const *)a;
    const struct fm_calib_sample *y = *(const struct fm_calib_sample *const *)b;
    int k = fm_calib_key_cmp(x->cls, x->kind, x->phase, x->cold, y->cls, y->kind, y->phase, y->cold);
    if (k)
        return k;
    return x < y ? -1 : x > y ? 1 : 0;   /* input order within a group: a deterministic sum */
}

static bool same_key(const struct fm_calib_sample *x, const struct fm_calib_sample *y)
{
    return fm_calib_key_cmp(x->cls, x->kind, x->phase, x->cold, y->cls, y->kind, y->phase, y->cold) == 0;
}

static enum fm_status check_sample(struct fm_ctx *ctx, const struct fm_calib_sample *s, size_t i)
{
    if ((unsigned)s->cls >= FM_CLASS_COUNT)
        return fm_error(ctx, FM_ERR_INVALID, "calibration sample %zu: unknown class %d", i,
                        (int)s->cls);
    if ((unsigned)s->phase >= FM_PHASE_COUNT)
        return fm_error(ctx, FM_ERR_INVALID, "calibration sample %zu: unknown phase %d", i,
                        (int)s->phase);
    if (!fm_calib_kind_valid(s->kind))
        return fm_error(ctx, FM_ERR_INVALID,
                        "calibration sample %zu: unknown kind \"%.*s\" (expected %s)", i,
                        FM_CALIB_KIND_MAX - 1, s->kind, fm_calib_known_kinds);
    if (!(s->seconds > 0) || !isfinite(s->seconds))
        return fm_error(ctx, FM_ERR_INVALID,
                        "calibration sample %zu (%s %s %s): time %g s must be a positive, finite "
                        "number of seconds",
                        i, fm_class_name(s->cls), s->kind, fm_phase_name(s->phase), s->seconds);
    if (!(s->flops >= 0) || !isfinite(s->flops) || !(s->bytes >= 0) || !isfinite(s->bytes))
        return fm_error(ctx, FM_ERR_INVALID,
                        "calibration sample %zu (%s %s %s): FLOPs %g and bytes %g must be finite "
                        "and >= 0",
                        i, fm_class_name(s->cls), s->kind, fm_phase_name(s->phase), s->flops,
                        s->bytes);
    return FM_OK;
}

/* A new calibration with the header of meta (NULL: an empty header) and n zeroed entries. */
enum fm_status fm_calib_new(struct fm_ctx *ctx, const struct fm_calibration *meta, size_t n,
                             struct fm_calibration **out)
{
    *out = NULL;
    struct fm_calibration *c = fm_alloc(ctx, sizeof(*c));
    if (!c)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory for the calibration");
    if (meta) {
        *c = *meta;
        c->device[sizeof(c->device) - 1] = '\0';
        c->backend[sizeof(c->backend) - 1] = '\0';
        c->date[sizeof(c->date) - 1] = '\0';
        c->left_out[sizeof(c->left_out) - 1] = '\0';
        c->source[sizeof(c->source) - 1] = '\0';
    } else {
        c->precision = FM_PREC_FP32;
    }
    c->ctx = ctx;
    c->version = FM_CALIB_VERSION;
    c->n = n;
    c->entries = NULL;
    if (n) {
        c->entries = fm_alloc(ctx, n * sizeof(*c->entries));
        if (!c->entries) {
            fm_dealloc(ctx, c);
            return fm_error(ctx, FM_ERR_NOMEM, "out of memory for the calibration");
        }
    }
    *out = c;
    return FM_OK;
}

enum fm_status fm_calibration_fit(struct fm_ctx *ctx, const struct fm_calib_sample *samples,
                                  size_t n, const struct fm_calibration *meta,
                                  struct fm_calibration **out)
{
    *out = NULL;
    if (!n || !samples)
        return fm_error(ctx, FM_ERR_INVALID, "no calibration samples to fit");
    if (n > SIZE_MAX / sizeof(const struct fm_calib_sample *))
        return fm_error(ctx, FM_ERR_INVALID, "too many calibration samples (%zu)", n);
    for (size_t i = 0; i < n; i++) {
        enum fm_status st = check_sample(ctx, &samples[i], i);
        if (st)
            return st;
    }
    /* every sample of a kind also counts for its whole class (kind ""): the fallback of an op
     * of the class that the samples have no kind for */
    size_t n_kinded = 0;
    for (size_t i = 0; i < n; i++)
        n_kinded += samples[i].kind[0] != '\0';
    struct fm_calib_sample *whole = n_kinded ? fm_alloc(ctx, n_kinded * sizeof(*whole)) : NULL;
    const struct fm_calib_sample **rows = fm_alloc(ctx, (n + n_kinded) * sizeof(*rows));
    if (!rows || (n_kinded && !whole)) {
        fm_dealloc(ctx, rows);
        fm_dealloc(ctx, whole);
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory fitting the calibration");
    }
    for (size_t i = 0, k = 0; i < n; i++) {
        rows[i] = &samples[i];
        if (samples[i].kind[0]) {
            whole[k] = samples[i];
            whole[k].kind[0] = '\0';
            rows[n + k] = &whole[k];
            k++;
        }
    }
    n += n_kinded;
    qsort(rows, n, sizeof(*rows), sample_cmp);
    /* an op's own kind (not one of the convolutions' four) is fitted only from enough samples
     * to leave the fit a degree of freedom: from three, a three-term fit is exact and
     * extrapolates anywhere; such an op falls back to its whole class */
    size_t kept = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && same_key(rows[i], rows[j]))
            j++;
        bool op_kind = rows[i]->kind[0] && !conv_kind(rows[i]->kind);
        for (size_t k = i; k < j && !(op_kind && j - i < FM_CALIB_MIN_OP_POINTS); k++)
            rows[kept++] = rows[k];
        i = j;
    }
    n = kept;
    size_t groups = 0;
    for (size_t i = 0; i < n; i++)
        groups += i == 0 || !same_key(rows[i - 1], rows[i]);
    struct fm_calibration *c = NULL;
    enum fm_status st = fm_calib_new(ctx, meta, groups, &c);
    if (st) {
        fm_dealloc(ctx, rows);
        fm_dealloc(ctx, whole);
        return st;
    }
    c->source[0] = '\0';   /* fitted, not read from a file */
    size_t g = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && same_key(rows[i], rows[j]))
            j++;
        struct fm_calib_entry *e = &c->entries[g++];
        e->cls = rows[i]->cls;
        memcpy(e->kind, rows[i]->kind, FM_CALIB_KIND_MAX);
        e->phase = rows[i]->phase;
        e->cold = rows[i]->cold;
        fit_group(rows + i, j - i, e);
        i = j;
    }
    fm_dealloc(ctx, rows);
    fm_dealloc(ctx, whole);
    *out = c;
    return FM_OK;
}

void fm_calibration_free(struct fm_calibration *c)
{
    if (!c)
        return;
    struct fm_ctx *ctx = c->ctx;
    fm_dealloc(ctx, c->entries);
    fm_dealloc(ctx, c);
}

void fm_calibration_info(const struct fm_calibration *c, struct fm_calibration_info *out)
{
    *out = (struct fm_calibration_info){
        .device = c->device,
        .backend = c->backend,
        .threads = c->threads,
        .precision = c->precision,
        .date = c->date,
        .peak = c->peak,
        .bandwidth = c->bandwidth,
        .step_overhead_s = c->step_overhead_s,
        .rounds = c->rounds,
        .left_out = c->left_out,
        .source = c->source,
        .n_entries = c->n,
        .entries = c->entries,
        .n_evict = c->n_evict,
        .evict_bytes = c->evict_bytes,
        .evict_frac = c->evict_frac,
    };
}

enum fm_status fm_calibration_refit(struct fm_ctx *ctx, const struct fm_calibration *like,
                                    const struct fm_calib_sample *samples, size_t n,
                                    const char *left_out, struct fm_calibration **out)
{
    *out = NULL;
    if (left_out && strlen(left_out) >= sizeof(like->left_out))
        return fm_error(ctx, FM_ERR_INVALID, "left_out: a list of %zu characters is too long "
                                             "(the file records it in at most %zu)",
                        strlen(left_out), sizeof(like->left_out) - 1);
    struct fm_calibration meta = *like;
    meta.entries = NULL;
    meta.n = 0;
    snprintf(meta.left_out, sizeof(meta.left_out), "%s", left_out ? left_out : "");
    return fm_calibration_fit(ctx, samples, n, &meta, out);
}

/* ---- lookup ---- */

static const struct fm_calib_entry *find_entry(const struct fm_calibration *c, enum fm_class cls,
                                               const char *kind, enum fm_phase phase, bool cold)
{
    for (size_t i = 0; i < c->n; i++) {
        const struct fm_calib_entry *e = &c->entries[i];
        if (e->cls == cls && e->phase == phase && e->cold == cold && strcmp(e->kind, kind) == 0)
            return e;
    }
    return NULL;
}

bool fm_calibration_time(const struct fm_calibration *c, enum fm_class cls, const char *kind,
                         enum fm_phase phase, double flops, double bytes, double *seconds)
{
    return fm_calibration_time_at(c, cls, kind, phase, flops, bytes, false, seconds);
}

bool fm_calibration_time_at(const struct fm_calibration *c, enum fm_class cls, const char *kind,
                            enum fm_phase phase, double flops, double bytes, bool cold,
                            double *seconds)
{
    if (!c)
        return false;
    if (!kind)
        kind = "";
    const struct fm_calib_entry *e = find_entry(c, cls, kind, phase, cold);
    if (!e && *kind)
        e = find_entry(c, cls, "", phase, cold);
    if (!e)
        return false;
    double coef[TERMS] = {[TERM_FIXED] = e->fixed_s, [TERM_FLOPS] = e->s_per_flop,
                          [TERM_BYTES] = e->s_per_byte};
    *seconds = model_s(coef, flops, bytes);
    return true;
}

double fm_calibration_evicted(const struct fm_calibration *c, double reuse_bytes)
{
    if (!c || !c->n_evict || !(reuse_bytes > 0))
        return 0.0;
    size_t n = c->n_evict < FM_CALIB_EVICT_MAX ? c->n_evict : FM_CALIB_EVICT_MAX;
    if (reuse_bytes <= c->evict_bytes[0])
        return c->evict_bytes[0] > 0 ? c->evict_frac[0] * reuse_bytes / c->evict_bytes[0]
                                     : c->evict_frac[0];
    for (size_t i = 1; i < n; i++) {
        if (reuse_bytes <= c->evict_bytes[i]) {
            double a = c->evict_bytes[i - 1], b = c->evict_bytes[i];
            double u = a > 0 ? (log(reuse_bytes) - log(a)) / (log(b) - log(a))
                             : (reuse_bytes - a) / (b - a);
            return c->evict_frac[i - 1] + u * (c->evict_frac[i] - c->evict_frac[i - 1]);
        }
    }
    return c->evict_frac[n - 1];
}

/* ---- the check ---- */

static enum fm_status mismatch(struct fm_ctx *ctx, const struct fm_calibration *c, bool force,
                               const char *force_field, const char *field, const char *made,
                               const char *used)
{
    char what[600];
    if (c->source[0])
        snprintf(what, sizeof(what), "calibration %s", c->source);
    else
        snprintf(what, sizeof(what), "the calibration");
    if (force) {
        fm_log(ctx, "warning: %s was made for %s %s, this run uses %s; used anyway (%s)",
               what, field, made, used, force_field);
        return FM_OK;
    }
    return fm_error(ctx, FM_ERR_INVALID,
                    "%s was made for %s %s, this run uses %s (pass %s to use it anyway)",
                    what, field, made, used, force_field);
}

enum fm_status fm_calibration_check(struct fm_ctx *ctx, const struct fm_calibration *c,
                                    const char *device, const char *backend, int threads,
                                    enum fm_precision precision, bool force)
{
    return fm_calibration_check_as(ctx, c, device, backend, threads, precision, force,
                                   "fm_session_opts.force_calibration");
}

enum fm_status fm_calibration_check_as(struct fm_ctx *ctx, const struct fm_calibration *c,
                                       const char *device, const char *backend, int threads,
                                       enum fm_precision precision, bool force,
                                       const char *force_field)
{
    if (!c)
        return fm_error(ctx, FM_ERR_INVALID, "no calibration to check");
    char made[200], used[200];
    if (!device)
        device = "";
    if (!backend)
        backend = "";
    enum fm_status st = FM_OK;
    if (strcmp(c->device, device) != 0) {
        snprintf(made, sizeof(made), "\"%s\"", c->device);
        snprintf(used, sizeof(used), "\"%s\"", device);
        if ((st = mismatch(ctx, c, force, force_field, "device", made, used)))
            return st;
    }
    if (strcmp(c->backend, backend) != 0) {
        snprintf(made, sizeof(made), "%s", c->backend[0] ? c->backend : "(none)");
        snprintf(used, sizeof(used), "%s", backend[0] ? backend : "(none)");
        if ((st = mismatch(ctx, c, force, force_field, "backend", made, used)))
            return st;
    }
    /* threads are a CPU's: a GPU calibration has 0, and the host threads of a GPU run do not
     * change its kernels */
    if (strcmp(c->backend, "cpu") == 0 && strcmp(backend, "cpu") == 0 && c->threads != threads) {
        snprintf(made, sizeof(made), "%d", c->threads);
        snprintf(used, sizeof(used), "%d", threads);
        if ((st = mismatch(ctx, c, force, force_field, "threads", made, used)))
            return st;
    }
    if (c->precision != precision) {
        snprintf(made, sizeof(made), "%s", fm_precision_name(c->precision));
        snprintf(used, sizeof(used), "%s", fm_precision_name(precision));
        if ((st = mismatch(ctx, c, force, force_field, "precision", made, used)))
            return st;
    }
    return FM_OK;
}
