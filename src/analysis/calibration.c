/* Calibration (docs/calibration.md): a device's time model fitted from timings of single layers,
 * one entry per op class, kind and phase,
 *     t = fixed_s + flops x s_per_flop + bytes x s_per_byte,
 * fitted by non-negative least squares on relative residuals; the lookup a prediction makes; the
 * check that a calibration was made where it is used; and its file: JSON written with the
 * streaming writer (17 significant digits, so a file read back gives identical doubles), read
 * with cJSON with every field checked, a message naming the file, the line and the field. A
 * build without cJSON can fit and write calibrations but not read them. */
#include "../core/internal.h"
#include "../core/jsonw.h"
#include "analysis.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

#define FM_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
#define CALIB_FORMAT "flopmeter-calibration"

/* ---- kinds ---- */

/* The kinds of convolutions fm_calib_kind gives; every other op's kind is its display name
 * ("BatchNorm", "LayerNorm", "GELU"), and "" is the whole class. */
enum { KIND_DENSE, KIND_POINTWISE, KIND_DEPTHWISE, KIND_GROUPED };
static const char *const kinds[] = {[KIND_DENSE] = "dense", [KIND_POINTWISE] = "pointwise",
                                    [KIND_DEPTHWISE] = "depthwise", [KIND_GROUPED] = "grouped"};
static const char known_kinds[] =
    "\"\", dense, pointwise, depthwise, grouped or an op's name: letters, digits and _";

/* One of the convolutions' kinds. */
static bool conv_kind(const char *kind)
{
    for (size_t i = 0; i < FM_COUNT_OF(kinds); i++) {
        if (strcmp(kind, kinds[i]) == 0)
            return true;
    }
    return false;
}

static bool kind_valid(const char *kind)
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

/* Elements of t, or -1 when its shape is not known. */
static double elements(const struct fm_tensor *t)
{
    if (!t || !t->shape_known)
        return -1;
    double e = 1;
    for (int d = 0; d < t->shape.rank; d++)
        e *= (double)t->shape.dims[d];
    return e;
}

/* Whether binary elementwise node n has an operand smaller than its output that takes a
 * gradient in training (an activation, or a trainable parameter): its backward reduces. */
static bool reduces_broadcast(const struct fm_graph *g, const struct fm_node *n)
{
    if ((n->op != FM_OP_ADD && n->op != FM_OP_SUB && n->op != FM_OP_MUL && n->op != FM_OP_DIV) ||
        n->n_in != 2 || n->n_out < 1)
        return false;
    double out = elements(fm_graph_tensor(g, n->out[0]));
    for (int i = 0; i < 2; i++) {
        const struct fm_tensor *t = fm_graph_tensor(g, n->in[i]);
        double e = elements(t);
        bool grad = t && (t->producer != FM_NONE || (t->role == FM_ROLE_PARAM && t->trainable));
        if (grad && e >= 0 && out >= 0 && e < out)
            return true;
    }
    return false;
}

void fm_calib_kind(const struct fm_graph *graph, fm_nid node, char kind[FM_CALIB_KIND_MAX])
{
    kind[0] = '\0';
    const struct fm_node *n = graph ? fm_graph_node(graph, node) : NULL;
    if (!n)
        return;
    if (n->op != FM_OP_CONV && n->op != FM_OP_CONV_TRANSPOSE) {
        /* the op's own fit where the sweep timed it (BatchNorm and LayerNorm, ReLU and GELU
         * cost differently per byte); the class's where it did not. A binary op whose
         * broadcast operand takes a gradient (a bias, a per-channel scale, a squeeze-excitation
         * gate) reduces that gradient over the broadcast dims: a kind of its own, 2-4 times
         * dearer per byte than the same op on two whole tensors (GELU's and SiLU's products) */
        const char *name = n->op == FM_OP_UNKNOWN ? "" : fm_op_name(n->op);
        snprintf(kind, FM_CALIB_KIND_MAX, "%s%s", name ? name : "",
                 reduces_broadcast(graph, n) ? "_bcast" : "");
        if (!kind_valid(kind))
            kind[0] = '\0';
        return;
    }
    const struct fm_tensor *x = n->n_in > 0 ? fm_graph_tensor(graph, n->in[0]) : NULL;
    const struct fm_tensor *w = n->n_in > 1 ? fm_graph_tensor(graph, n->in[1]) : NULL;
    bool w_known = w && w->shape_known && w->shape.rank >= 3;
    int64_t groups = n->attrs.groups;
    /* input channels: the input's, else what the weight implies (conv: (Cout, Cin/g, ...),
     * transposed: (Cin, Cout/g, ...)) */
    int64_t cin = -1;
    if (x && x->shape_known && x->shape.rank >= 2)
        cin = x->shape.dims[1];
    else if (w_known)
        cin = n->op == FM_OP_CONV ? w->shape.dims[1] * groups : w->shape.dims[0];
    if (groups > 1) {
        int k = groups == cin ? KIND_DEPTHWISE : KIND_GROUPED;
        snprintf(kind, FM_CALIB_KIND_MAX, "%s", kinds[k]);
        return;
    }
    /* the window: the weight's trailing dims (what the shape rule uses), else the attribute */
    bool one_by_one = true;
    if (w_known) {
        for (int d = 2; d < w->shape.rank; d++)
            one_by_one = one_by_one && w->shape.dims[d] == 1;
    } else {
        one_by_one = n->attrs.kernel[0] == 1 && n->attrs.kernel[1] == 1 &&
                     n->attrs.kernel_d == 1;
    }
    snprintf(kind, FM_CALIB_KIND_MAX, "%s", kinds[one_by_one ? KIND_POINTWISE : KIND_DENSE]);
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
static int key_cmp(enum fm_class ca, const char *ka, enum fm_phase pa, bool cold_a,
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
    int k = key_cmp(x->cls, x->kind, x->phase, x->cold, y->cls, y->kind, y->phase, y->cold);
    if (k)
        return k;
    return x < y ? -1 : x > y ? 1 : 0;   /* input order within a group: a deterministic sum */
}

static bool same_key(const struct fm_calib_sample *x, const struct fm_calib_sample *y)
{
    return key_cmp(x->cls, x->kind, x->phase, x->cold, y->cls, y->kind, y->phase, y->cold) == 0;
}

static enum fm_status check_sample(struct fm_ctx *ctx, const struct fm_calib_sample *s, size_t i)
{
    if ((unsigned)s->cls >= FM_CLASS_COUNT)
        return fm_error(ctx, FM_ERR_INVALID, "calibration sample %zu: unknown class %d", i,
                        (int)s->cls);
    if ((unsigned)s->phase >= FM_PHASE_COUNT)
        return fm_error(ctx, FM_ERR_INVALID, "calibration sample %zu: unknown phase %d", i,
                        (int)s->phase);
    if (!kind_valid(s->kind))
        return fm_error(ctx, FM_ERR_INVALID,
                        "calibration sample %zu: unknown kind \"%.*s\" (expected %s)", i,
                        FM_CALIB_KIND_MAX - 1, s->kind, known_kinds);
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
static enum fm_status calib_new(struct fm_ctx *ctx, const struct fm_calibration *meta, size_t n,
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
    enum fm_status st = calib_new(ctx, meta, groups, &c);
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
                               const char *field, const char *made, const char *used)
{
    char what[600];
    if (c->source[0])
        snprintf(what, sizeof(what), "calibration %s", c->source);
    else
        snprintf(what, sizeof(what), "the calibration");
    if (force) {
        fm_log(ctx, "warning: %s was made for %s %s, this run uses %s; used anyway "
                    "(fm_session_opts.force_calibration)",
               what, field, made, used);
        return FM_OK;
    }
    return fm_error(ctx, FM_ERR_INVALID,
                    "%s was made for %s %s, this run uses %s (pass "
                    "fm_session_opts.force_calibration to use it anyway)",
                    what, field, made, used);
}

enum fm_status fm_calibration_check(struct fm_ctx *ctx, const struct fm_calibration *c,
                                    const char *device, const char *backend, int threads,
                                    enum fm_precision precision, bool force)
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
        if ((st = mismatch(ctx, c, force, "device", made, used)))
            return st;
    }
    if (strcmp(c->backend, backend) != 0) {
        snprintf(made, sizeof(made), "%s", c->backend[0] ? c->backend : "(none)");
        snprintf(used, sizeof(used), "%s", backend[0] ? backend : "(none)");
        if ((st = mismatch(ctx, c, force, "backend", made, used)))
            return st;
    }
    /* threads are a CPU's: a GPU calibration has 0, and the host threads of a GPU run do not
     * change its kernels */
    if (strcmp(c->backend, "cpu") == 0 && strcmp(backend, "cpu") == 0 && c->threads != threads) {
        snprintf(made, sizeof(made), "%d", c->threads);
        snprintf(used, sizeof(used), "%d", threads);
        if ((st = mismatch(ctx, c, force, "threads", made, used)))
            return st;
    }
    if (c->precision != precision) {
        snprintf(made, sizeof(made), "%s", fm_precision_name(c->precision));
        snprintf(used, sizeof(used), "%s", fm_precision_name(precision));
        if ((st = mismatch(ctx, c, force, "precision", made, used)))
            return st;
    }
    return FM_OK;
}

/* ---- writing ---- */

/* What every file must satisfy, checked before writing so that every file written loads. */
static enum fm_status check_for_save(struct fm_ctx *ctx, const struct fm_calibration *c)
{
    if (!c)
        return fm_error(ctx, FM_ERR_INVALID, "no calibration to save");
    if (!memchr(c->device, '\0', sizeof(c->device)) || !c->device[0] ||
        !memchr(c->backend, '\0', sizeof(c->backend)) || !c->backend[0] ||
        !memchr(c->date, '\0', sizeof(c->date)) ||
        !memchr(c->left_out, '\0', sizeof(c->left_out)))
        return fm_error(ctx, FM_ERR_INVALID,
                        "cannot save a calibration without its device and backend");
    if (c->threads < 0 || (unsigned)c->precision >= FM_PREC_COUNT)
        return fm_error(ctx, FM_ERR_INVALID,
                        "cannot save a calibration with threads %d and precision %d", c->threads,
                        (int)c->precision);
    const double head[] = {c->peak, c->bandwidth, c->step_overhead_s};
    for (size_t i = 0; i < FM_COUNT_OF(head); i++) {
        if (!(head[i] >= 0) || !isfinite(head[i]))
            return fm_error(ctx, FM_ERR_INVALID,
                            "cannot save a calibration with a negative or non-finite peak, "
                            "bandwidth or step overhead");
    }
    if (!c->n || !c->entries)
        return fm_error(ctx, FM_ERR_INVALID, "cannot save a calibration without entries");
    if (c->n_evict > FM_CALIB_EVICT_MAX)
        return fm_error(ctx, FM_ERR_INVALID, "cannot save an eviction curve of %zu points (at "
                                             "most %d)",
                        c->n_evict, FM_CALIB_EVICT_MAX);
    for (size_t i = 0; i < c->n_evict; i++) {
        if (!(c->evict_bytes[i] >= 0) || !isfinite(c->evict_bytes[i]) ||
            (i && !(c->evict_bytes[i] > c->evict_bytes[i - 1])) || !(c->evict_frac[i] >= 0) ||
            !(c->evict_frac[i] <= 1) || (i && c->evict_frac[i] < c->evict_frac[i - 1]))
            return fm_error(ctx, FM_ERR_INVALID,
                            "cannot save eviction point %zu (%g bytes, %g): bytes must "
                            "increase and fractions lie in [0, 1] without decreasing",
                            i, c->evict_bytes[i], c->evict_frac[i]);
    }
    for (size_t i = 0; i < c->n; i++) {
        const struct fm_calib_entry *e = &c->entries[i];
        if ((unsigned)e->cls >= FM_CLASS_COUNT || (unsigned)e->phase >= FM_PHASE_COUNT ||
            !kind_valid(e->kind))
            return fm_error(ctx, FM_ERR_INVALID,
                            "calibration entry %zu has an unknown class, kind or phase", i);
        const double v[] = {e->fixed_s, e->s_per_flop, e->s_per_byte, e->rel_rms};
        for (size_t j = 0; j < FM_COUNT_OF(v); j++) {
            if (!(v[j] >= 0) || !isfinite(v[j]))
                return fm_error(ctx, FM_ERR_INVALID,
                                "calibration entry %zu (%s %s %s) has a negative or non-finite "
                                "coefficient",
                                i, fm_class_name(e->cls), e->kind, fm_phase_name(e->phase));
        }
        if (e->points < 0)
            return fm_error(ctx, FM_ERR_INVALID, "calibration entry %zu has %d points", i,
                            e->points);
    }
    return FM_OK;
}

enum fm_status fm_calibration_save(struct fm_ctx *ctx, const struct fm_calibration *c,
                                   const char *path)
{
    enum fm_status st = check_for_save(ctx, c);
    if (st)
        return st;
    FILE *f = fopen(path, "w");
    if (!f)
        return fm_error(ctx, FM_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    struct fm_jw w;
    fm_jw_init(&w, f);
    fm_jw_object(&w, NULL, false);
    fm_jw_string(&w, "format", CALIB_FORMAT);
    fm_jw_i64(&w, "version", FM_CALIB_VERSION);
    fm_jw_string(&w, "flopmeter", FM_VERSION);
    fm_jw_string(&w, "model", "t = fixed_s + flops x s_per_flop + bytes x s_per_byte per class, "
                              "kind, phase and cache (warm, cold), blended by the eviction "
                              "curve (docs/calibration.md)");
    fm_jw_string(&w, "device", c->device);
    fm_jw_string(&w, "backend", c->backend);
    fm_jw_i64(&w, "threads", c->threads);
    fm_jw_string(&w, "precision", fm_precision_name(c->precision));
    fm_jw_string(&w, "date", c->date);
    fm_jw_double(&w, "peak_flops", c->peak);
    fm_jw_double(&w, "bandwidth_bytes_per_s", c->bandwidth);
    fm_jw_double(&w, "step_overhead_s", c->step_overhead_s);
    if (c->rounds > 0)
        fm_jw_i64(&w, "rounds", c->rounds);
    fm_jw_string(&w, "left_out", c->left_out);
    if (c->n_evict) {
        fm_jw_array(&w, "eviction", false);
        for (size_t i = 0; i < c->n_evict; i++) {
            fm_jw_object(&w, NULL, true);
            fm_jw_double(&w, "bytes", c->evict_bytes[i]);
            fm_jw_double(&w, "fraction", c->evict_frac[i]);
            fm_jw_end(&w);
        }
        fm_jw_end(&w);
    }
    fm_jw_array(&w, "entries", false);
    for (size_t i = 0; i < c->n; i++) {
        const struct fm_calib_entry *e = &c->entries[i];
        fm_jw_object(&w, NULL, true);
        fm_jw_string(&w, "class", fm_class_name(e->cls));
        fm_jw_string(&w, "kind", e->kind);
        fm_jw_string(&w, "phase", fm_phase_name(e->phase));
        if (e->cold)
            fm_jw_string(&w, "cache", "cold");
        fm_jw_double(&w, "fixed_s", e->fixed_s);
        fm_jw_double(&w, "s_per_flop", e->s_per_flop);
        fm_jw_double(&w, "s_per_byte", e->s_per_byte);
        fm_jw_i64(&w, "points", e->points);
        fm_jw_double(&w, "rel_rms", e->rel_rms);
        fm_jw_end(&w);
    }
    fm_jw_end(&w);
    fm_jw_end(&w);
    fm_jw_finish(&w);
    bool failed = ferror(f) != 0;
    if (fclose(f) != 0 || failed)
        return fm_error(ctx, FM_ERR_IO, "writing %s failed: %s", path, strerror(errno));
    return FM_OK;
}

/* ---- reading ---- */

/* Inverse lookups of fm_class_name and fm_phase_name (the file and the samples CSV hold what
 * they wrote). */
bool fm_calib_class_parse(const char *s, enum fm_class *out)
{
    for (int i = 0; i < FM_CLASS_COUNT; i++) {
        if (strcmp(s, fm_class_name((enum fm_class)i)) == 0) {
            *out = (enum fm_class)i;
            return true;
        }
    }
    return false;
}

bool fm_calib_phase_parse(const char *s, enum fm_phase *out)
{
    for (int i = 0; i < FM_PHASE_COUNT; i++) {
        if (strcmp(s, fm_phase_name((enum fm_phase)i)) == 0) {
            *out = (enum fm_phase)i;
            return true;
        }
    }
    return false;
}

#ifndef FM_HAVE_CJSON

enum fm_status fm_calibration_load(struct fm_ctx *ctx, const char *path,
                                   struct fm_calibration **out)
{
    *out = NULL;
    return fm_error(ctx, FM_ERR_UNSUPPORTED,
                    "%s: this build of flopmeter cannot read calibration files (it was built "
                    "without cJSON; install libcjson-dev and rebuild)",
                    path);
}

#else

/* Inverse lookup of fm_precision_name (fm_calib_class_parse, fm_calib_phase_parse: above). */
/* Exact names only ("fp32", not "float"): the file holds what fm_precision_name wrote. */
static bool precision_parse_exact(const char *s, enum fm_precision *out)
{
    for (int i = 0; i < FM_PREC_COUNT; i++) {
        if (strcmp(s, fm_precision_name((enum fm_precision)i)) == 0) {
            *out = (enum fm_precision)i;
            return true;
        }
    }
    return false;
}

/* Where a field is in the text. cJSON keeps no positions, but the text has parsed as JSON, so a
 * scanner that skips strings and counts brackets walks it safely: enough to name the line of a
 * field the checks refuse. */
static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end && *p != '"'; p++) {
        if (*p == '\\')
            p++;
    }
    return p < end ? p + 1 : end;
}

static const char *skip_value(const char *p, const char *end)
{
    p = skip_ws(p, end);
    if (p < end && *p == '"')
        return skip_string(p, end);
    if (p < end && (*p == '{' || *p == '[')) {
        int depth = 0;
        while (p < end) {
            if (*p == '"') {
                p = skip_string(p, end);
                continue;
            }
            if (*p == '{' || *p == '[')
                depth++;
            else if ((*p == '}' || *p == ']') && --depth == 0)
                return p + 1;
            p++;
        }
        return end;
    }
    while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' &&
           *p != '\n' && *p != '\r')
        p++;
    return p;
}

/* In the object at p, where member key starts (its quote); NULL when absent. */
static const char *find_member(const char *p, const char *end, const char *key)
{
    p = skip_ws(p, end);
    if (p >= end || *p != '{')
        return NULL;
    size_t klen = strlen(key);
    for (p++;;) {
        p = skip_ws(p, end);
        if (p >= end || *p != '"')
            return NULL;
        const char *at = p, *after = skip_string(p, end);
        p = skip_ws(after, end);
        if (p >= end || *p != ':')
            return NULL;
        if ((size_t)(after - at) == klen + 2 && memcmp(at + 1, key, klen) == 0)
            return at;
        p = skip_ws(skip_value(p + 1, end), end);
        if (p >= end || *p != ',')
            return NULL;
        p++;
    }
}

/* The value of member key of the object at p; NULL when absent. */
static const char *member_value(const char *p, const char *end, const char *key)
{
    const char *at = find_member(p, end, key);
    if (!at)
        return NULL;
    p = skip_ws(skip_string(at, end), end);
    return skip_ws(p + 1, end);
}

/* Element index of the array at p; NULL when absent. */
static const char *find_element(const char *p, const char *end, size_t index)
{
    p = skip_ws(p, end);
    if (p >= end || *p != '[')
        return NULL;
    for (size_t i = 0;; i++) {
        p = skip_ws(p + 1, end);   /* past the '[' or the ',' */
        if (p >= end || *p == ']')
            return NULL;
        if (i == index)
            return p;
        p = skip_ws(skip_value(p, end), end);
        if (p >= end || *p != ',')
            return NULL;
    }
}

static int line_at(const char *text, const char *p)
{
    int line = 1;
    for (const char *q = text; q < p; q++)
        line += *q == '\n';
    return line;
}

/* Where a parse is, for messages. */
struct where {
    struct fm_ctx *ctx;
    const char *path;
    const char *text, *end, *root;   /* root: the top-level object in text */
    long entry;                      /* -1: the header */
};

/* FM_ERR_PARSE naming the file, the line of field (of the entry or the header; the object's
 * own line when field is NULL or absent) and the entry. */
static enum fm_status bad(const struct where *w, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static enum fm_status bad(const struct where *w, const char *field, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    const char *obj = w->root;
    if (w->entry >= 0) {
        const char *list = member_value(w->root, w->end, "entries");
        const char *e = list ? find_element(list, w->end, (size_t)w->entry) : NULL;
        obj = e ? e : list ? list : w->root;
    }
    const char *at = field ? find_member(obj, w->end, field) : NULL;
    int line = line_at(w->text, at ? at : obj);
    if (w->entry >= 0)
        return fm_error(w->ctx, FM_ERR_PARSE, "%s, line %d: entries[%ld]: %s", w->path, line,
                        w->entry, what);
    return fm_error(w->ctx, FM_ERR_PARSE, "%s, line %d: %s", w->path, line, what);
}


/* A string field into buf (size bytes with the NUL); empty refused unless allow_empty. */
static enum fm_status get_string(const struct where *w, const cJSON *v, char *buf, size_t size,
                                 bool allow_empty)
{
    if (!cJSON_IsString(v))
        return bad(w, v->string, "field \"%s\" must be a string, got %s", v->string,
                   fm_json_type_name(v));
    size_t len = strlen(v->valuestring);
    if (len >= size)
        return bad(w, v->string, "field \"%s\" is %zu characters long; at most %zu fit",
                   v->string, len, size - 1);
    if (!len && !allow_empty)
        return bad(w, v->string, "field \"%s\" must not be empty", v->string);
    memcpy(buf, v->valuestring, len + 1);
    return FM_OK;
}

/* A finite number >= 0. */
static enum fm_status get_number(const struct where *w, const cJSON *v, const char *unit,
                                 double *out)
{
    if (!cJSON_IsNumber(v))
        return bad(w, v->string, "field \"%s\" must be a number (%s), got %s", v->string, unit,
                   fm_json_type_name(v));
    if (!isfinite(v->valuedouble) || v->valuedouble < 0)
        return bad(w, v->string, "field \"%s\" must be >= 0 (%s), got %g%s", v->string, unit,
                   v->valuedouble,
                   v->valuedouble < 0 && w->entry >= 0
                       ? ": a fitted time never falls with more work (recalibrate, or fix the "
                         "hand edit)"
                       : "");
    *out = v->valuedouble;
    return FM_OK;
}

/* A whole number in [0, INT_MAX]. */
static enum fm_status get_count(const struct where *w, const cJSON *v, const char *unit, int *out)
{
    if (!cJSON_IsNumber(v))
        return bad(w, v->string, "field \"%s\" must be a whole number >= 0 (%s), got %s",
                   v->string, unit, fm_json_type_name(v));
    if (!(v->valuedouble >= 0) || v->valuedouble > INT_MAX ||
        v->valuedouble != floor(v->valuedouble))
        return bad(w, v->string, "field \"%s\" must be a whole number >= 0 (%s), got %g",
                   v->string, unit, v->valuedouble);
    *out = (int)v->valuedouble;
    return FM_OK;
}

static const char known_header[] =
    "format, version, flopmeter, model, comment, device, backend, threads, precision, date, "
    "peak_flops, bandwidth_bytes_per_s, step_overhead_s, rounds, left_out, eviction, entries";
static const char known_entry[] =
    "class, kind, phase, cache, fixed_s, s_per_flop, s_per_byte, points, rel_rms, comment";

static enum fm_status read_entry(struct where *w, const cJSON *obj, struct fm_calib_entry *e)
{
    if (!cJSON_IsObject(obj))
        return bad(w, NULL, "expected an entry object {\"class\": ..., \"phase\": ..., ...}, "
                            "got %s",
                   fm_json_type_name(obj));
    enum { F_CLASS = 1, F_PHASE = 2, F_FIXED = 4, F_FLOP = 8, F_BYTE = 16 };
    unsigned seen = 0;
    enum fm_status st = FM_OK;
    for (const cJSON *v = obj->child; v && !st; v = v->next) {
        const char *k = v->string;
        if (cJSON_GetObjectItemCaseSensitive(obj, k) != v)
            return bad(w, k, "field \"%s\" appears twice", k);
        if (strcmp(k, "class") == 0) {
            if (!cJSON_IsString(v) || !fm_calib_class_parse(v->valuestring, &e->cls))
                return bad(w, k, "field \"class\" must be one of conv, matmul, norm, "
                                 "activation, pool, elementwise, reduction, data_movement, "
                                 "embedding, attention, loss, other; got %s%s%s",
                           cJSON_IsString(v) ? "\"" : fm_json_type_name(v),
                           cJSON_IsString(v) ? v->valuestring : "",
                           cJSON_IsString(v) ? "\"" : "");
            seen |= F_CLASS;
        } else if (strcmp(k, "kind") == 0) {
            st = get_string(w, v, e->kind, sizeof(e->kind), true);
            if (!st && !kind_valid(e->kind))
                return bad(w, k, "field \"kind\": unknown kind \"%s\" (expected %s)", e->kind,
                           known_kinds);
        } else if (strcmp(k, "phase") == 0) {
            if (!cJSON_IsString(v) || !fm_calib_phase_parse(v->valuestring, &e->phase))
                return bad(w, k, "field \"phase\" must be one of fwd, bwd_data, bwd_weight, "
                                 "optimizer; got %s%s%s",
                           cJSON_IsString(v) ? "\"" : fm_json_type_name(v),
                           cJSON_IsString(v) ? v->valuestring : "",
                           cJSON_IsString(v) ? "\"" : "");
            seen |= F_PHASE;
        } else if (strcmp(k, "fixed_s") == 0) {
            st = get_number(w, v, "seconds per kernel", &e->fixed_s);
            seen |= F_FIXED;
        } else if (strcmp(k, "s_per_flop") == 0) {
            st = get_number(w, v, "seconds per FLOP", &e->s_per_flop);
            seen |= F_FLOP;
        } else if (strcmp(k, "s_per_byte") == 0) {
            st = get_number(w, v, "seconds per byte", &e->s_per_byte);
            seen |= F_BYTE;
        } else if (strcmp(k, "cache") == 0) {
            if (!cJSON_IsString(v) ||
                (strcmp(v->valuestring, "warm") != 0 && strcmp(v->valuestring, "cold") != 0))
                return bad(w, k, "field \"cache\" must be \"warm\" or \"cold\"; got %s%s%s",
                           cJSON_IsString(v) ? "\"" : fm_json_type_name(v),
                           cJSON_IsString(v) ? v->valuestring : "",
                           cJSON_IsString(v) ? "\"" : "");
            e->cold = strcmp(v->valuestring, "cold") == 0;
        } else if (strcmp(k, "points") == 0) {
            st = get_count(w, v, "samples fitted", &e->points);
        } else if (strcmp(k, "rel_rms") == 0) {
            st = get_number(w, v, "relative RMS error of the fit", &e->rel_rms);
        } else if (strcmp(k, "comment") == 0) {
            continue;
        } else {
            return bad(w, k, "unknown field \"%s\" (known fields of an entry: %s)", k,
                       known_entry);
        }
    }
    if (st)
        return st;
    static const struct {
        unsigned bit;
        const char *name;
    } required[] = {{F_CLASS, "class"},     {F_PHASE, "phase"},       {F_FIXED, "fixed_s"},
                    {F_FLOP, "s_per_flop"}, {F_BYTE, "s_per_byte"}};
    for (size_t i = 0; i < FM_COUNT_OF(required); i++) {
        if (!(seen & required[i].bit))
            return bad(w, NULL, "missing field \"%s\"", required[i].name);
    }
    return FM_OK;
}

/* "eviction": [{"bytes": B, "fraction": F}, ...], bytes increasing, fractions in [0, 1] and
 * not decreasing. */
static enum fm_status read_eviction(struct where *w, const cJSON *v, struct fm_calibration *c)
{
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 ||
        cJSON_GetArraySize(v) > FM_CALIB_EVICT_MAX)
        return bad(w, "eviction", "field \"eviction\" must be an array of 1 to %d "
                                  "{\"bytes\": ..., \"fraction\": ...} objects",
                   FM_CALIB_EVICT_MAX);
    size_t i = 0;
    for (const cJSON *p = v->child; p; p = p->next, i++) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(p, "bytes");
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(p, "fraction");
        if (!cJSON_IsObject(p) || cJSON_GetArraySize(p) != 2 || !cJSON_IsNumber(b) ||
            !cJSON_IsNumber(f))
            return bad(w, "eviction", "eviction[%zu] must be {\"bytes\": number, "
                                      "\"fraction\": number}",
                       i);
        c->evict_bytes[i] = b->valuedouble;
        c->evict_frac[i] = f->valuedouble;
        if (!(b->valuedouble >= 0) || !isfinite(b->valuedouble) ||
            (i && !(b->valuedouble > c->evict_bytes[i - 1])))
            return bad(w, "eviction", "eviction[%zu]: bytes %g must be >= 0 and above the "
                                      "point before",
                       i, b->valuedouble);
        if (!(f->valuedouble >= 0 && f->valuedouble <= 1) ||
            (i && f->valuedouble < c->evict_frac[i - 1]))
            return bad(w, "eviction", "eviction[%zu]: fraction %g must lie in [0, 1] and not "
                                      "fall below the point before",
                       i, f->valuedouble);
    }
    c->n_evict = i;
    return FM_OK;
}

static enum fm_status read_header(struct where *w, const cJSON *root, struct fm_calibration *c,
                                  const cJSON **entries)
{
    enum { H_DEVICE = 1, H_BACKEND = 2, H_THREADS = 4, H_PRECISION = 8, H_ENTRIES = 16 };
    unsigned seen = 0;
    enum fm_status st = FM_OK;
    for (const cJSON *v = root->child; v && !st; v = v->next) {
        const char *k = v->string;
        if (cJSON_GetObjectItemCaseSensitive(root, k) != v)
            return bad(w, k, "field \"%s\" appears twice", k);
        if (strcmp(k, "format") == 0 || strcmp(k, "version") == 0) {
            continue;   /* checked first, by the caller */
        } else if (strcmp(k, "flopmeter") == 0 || strcmp(k, "model") == 0 ||
                   strcmp(k, "comment") == 0) {
            continue;   /* informative */
        } else if (strcmp(k, "device") == 0) {
            st = get_string(w, v, c->device, sizeof(c->device), false);
            seen |= H_DEVICE;
        } else if (strcmp(k, "backend") == 0) {
            st = get_string(w, v, c->backend, sizeof(c->backend), false);
            seen |= H_BACKEND;
        } else if (strcmp(k, "threads") == 0) {
            st = get_count(w, v, "CPU threads; 0 on a GPU", &c->threads);
            seen |= H_THREADS;
        } else if (strcmp(k, "precision") == 0) {
            if (!cJSON_IsString(v) || !precision_parse_exact(v->valuestring, &c->precision))
                return bad(w, k, "field \"precision\" must be one of fp64, fp32, tf32, fp16, "
                                 "bf16, fp8, int8; got %s%s%s",
                           cJSON_IsString(v) ? "\"" : fm_json_type_name(v),
                           cJSON_IsString(v) ? v->valuestring : "",
                           cJSON_IsString(v) ? "\"" : "");
            seen |= H_PRECISION;
        } else if (strcmp(k, "date") == 0) {
            st = get_string(w, v, c->date, sizeof(c->date), true);
        } else if (strcmp(k, "rounds") == 0) {
            st = get_count(w, v, "rounds of the sweep", &c->rounds);
        } else if (strcmp(k, "left_out") == 0) {
            st = get_string(w, v, c->left_out, sizeof(c->left_out), true);
        } else if (strcmp(k, "peak_flops") == 0) {
            st = get_number(w, v, "FLOP/s", &c->peak);
        } else if (strcmp(k, "bandwidth_bytes_per_s") == 0) {
            st = get_number(w, v, "bytes/s", &c->bandwidth);
        } else if (strcmp(k, "step_overhead_s") == 0) {
            st = get_number(w, v, "seconds per training step", &c->step_overhead_s);
        } else if (strcmp(k, "eviction") == 0) {
            st = read_eviction(w, v, c);
        } else if (strcmp(k, "entries") == 0) {
            if (!cJSON_IsArray(v))
                return bad(w, k, "field \"entries\" must be an array of entry objects, got %s",
                           fm_json_type_name(v));
            *entries = v;
            seen |= H_ENTRIES;
        } else {
            return bad(w, k, "unknown field \"%s\" (known fields: %s)", k, known_header);
        }
    }
    if (st)
        return st;
    static const struct {
        unsigned bit;
        const char *name;
    } required[] = {{H_DEVICE, "device"},
                    {H_BACKEND, "backend"},
                    {H_THREADS, "threads"},
                    {H_PRECISION, "precision"},
                    {H_ENTRIES, "entries"}};
    for (size_t i = 0; i < FM_COUNT_OF(required); i++) {
        if (!(seen & required[i].bit))
            return bad(w, NULL, "missing field \"%s\"", required[i].name);
    }
    return FM_OK;
}

/* "format" and "version": a file that is not a calibration, or one a newer flopmeter wrote, is
 * refused before any other field is read. */
static enum fm_status read_format(struct where *w, const cJSON *root)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!f)
        return bad(w, NULL, "not a flopmeter calibration file (no field \"format\": \"%s\"; "
                            "`flopmeter calibrate` writes one)",
                   CALIB_FORMAT);
    if (!cJSON_IsString(f) || strcmp(f->valuestring, CALIB_FORMAT) != 0)
        return bad(w, "format", "not a flopmeter calibration file (field \"format\" is %s%s%s, "
                                "expected \"%s\")",
                   cJSON_IsString(f) ? "\"" : fm_json_type_name(f),
                   cJSON_IsString(f) ? f->valuestring : "", cJSON_IsString(f) ? "\"" : "",
                   CALIB_FORMAT);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!v)
        return bad(w, NULL, "missing field \"version\" (this flopmeter writes version %d)",
                   FM_CALIB_VERSION);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1)
        return bad(w, "version", "field \"version\" must be a whole number >= 1, got %s",
                   cJSON_IsNumber(v) ? "a fraction or a number below 1" : fm_json_type_name(v));
    if (v->valuedouble > FM_CALIB_VERSION)
        return bad(w, "version", "calibration format version %.0f is newer than this flopmeter "
                                 "reads (version %d): update flopmeter, or recalibrate with "
                                 "this one",
                   v->valuedouble, FM_CALIB_VERSION);
    return FM_OK;
}

enum fm_status fm_calibration_load(struct fm_ctx *ctx, const char *path,
                                   struct fm_calibration **out)
{
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    enum fm_status st = fm_read_text(ctx, path, "calibration file", FM_READ_MAX_CONFIG_MB, &text,
                                     &len);
    if (st)
        return st;
    struct fm_calibration *c = NULL;
    const char *end = NULL;
    /* length len + 1: the terminating NUL is in the buffer, so that text after the document
     * (a second object, a stray brace) is an error, not silently ignored */
    cJSON *root = cJSON_ParseWithLengthOpts(text, len + 1, &end, true);
    if (!root) {
        /* cJSON stops where the text stops being JSON: name the line */
        const char *at = end;
        if (!at) {
            const char *ep = cJSON_GetErrorPtr();
            at = ep && ep >= text && ep <= text + len ? ep : text;
        }
        if (at < text || at > text + len)
            at = text + len;
        st = fm_error(ctx, FM_ERR_PARSE,
                      "%s, line %d: not valid JSON (the error is on or before this line; a "
                      "truncated file ends early); a calibration file is {\"format\": \"%s\", "
                      "..., \"entries\": [...]}, see docs/calibration.md",
                      path, line_at(text, at), CALIB_FORMAT);
        goto out;
    }
    const char *start = text;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        start += 3;   /* cJSON skips a UTF-8 byte-order mark */
    struct where w = {ctx, path, text, text + len, skip_ws(start, text + len), -1};
    if (!cJSON_IsObject(root)) {
        st = bad(&w, NULL, "not a flopmeter calibration file (expected an object, got %s)",
                 fm_json_type_name(root));
        goto out;
    }
    if ((st = read_format(&w, root)))
        goto out;
    const cJSON *entries = NULL;
    size_t n = 0;
    {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "entries");
        n = cJSON_IsArray(list) ? (size_t)cJSON_GetArraySize(list) : 0;
    }
    if ((st = calib_new(ctx, NULL, n, &c)))
        goto out;
    if ((st = read_header(&w, root, c, &entries)))
        goto out;
    if (!n) {
        st = bad(&w, "entries", "field \"entries\" is empty: a calibration without entries "
                                "calibrates nothing");
        goto out;
    }
    size_t i = 0;
    for (const cJSON *e = entries->child; e && i < n; e = e->next, i++) {
        w.entry = (long)i;
        if ((st = read_entry(&w, e, &c->entries[i])))
            goto out;
        for (size_t j = 0; j < i; j++) {
            const struct fm_calib_entry *a = &c->entries[j], *b = &c->entries[i];
            if (key_cmp(a->cls, a->kind, a->phase, a->cold, b->cls, b->kind, b->phase,
                        b->cold) == 0) {
                st = bad(&w, NULL, "repeats entries[%zu] (%s \"%s\" %s%s): one entry per "
                                   "class, kind, phase and cache",
                         j, fm_class_name(b->cls), b->kind, fm_phase_name(b->phase),
                         b->cold ? " cold" : "");
                goto out;
            }
        }
    }
    snprintf(c->source, sizeof(c->source), "%s", path);
    *out = c;
    c = NULL;
out:
    fm_calibration_free(c);
    cJSON_Delete(root);
    fm_dealloc(ctx, text);
    return st;
}

#endif
