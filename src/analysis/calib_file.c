/* The calibration's files (docs/calibration.md): the calibration file, JSON written with the
 * streaming writer (17 significant digits, so a file read back gives identical doubles) and read
 * with the JSON reader of src/core/json_read.h, every field checked, a message naming the file,
 * the line:column, the entry and the field; and the samples CSV of `flopmeter calibrate --samples`, read back to refit without timing again.
 * A build without cJSON can write calibrations but not read them. The fit is calib_model.c's. */
#include "../core/internal.h"
#include "../core/json_read.h"
#include "../core/jsonw.h"
#include "analysis.h"
#include "calib_common.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

#define FM_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
#define CALIB_FORMAT "flopmeter-calibration"

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
            !fm_calib_kind_valid(e->kind))
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

/* What a negative coefficient of an entry means, added to its refusal. */
static const char entry_below_zero[] =
    ": a fitted time never falls with more work (recalibrate, or fix the hand edit)";

static const char known_header[] =
    "format, version, flopmeter, model, comment, device, backend, threads, precision, date, "
    "peak_flops, bandwidth_bytes_per_s, step_overhead_s, rounds, left_out, eviction, entries";
static const char known_entry[] =
    "class, kind, phase, cache, fixed_s, s_per_flop, s_per_byte, points, rel_rms, comment";

static enum fm_status read_entry(struct fm_json_doc *w, const cJSON *obj, struct fm_calib_entry *e)
{
    if (!cJSON_IsObject(obj))
        return fm_json_fail(w, obj, "expected an entry object {\"class\": ..., \"phase\": ..., ...}, "
                            "got %s",
                   fm_json_type_name(obj));
    enum { F_CLASS = 1, F_PHASE = 2, F_FIXED = 4, F_FLOP = 8, F_BYTE = 16 };
    unsigned seen = 0;
    enum fm_status st = FM_OK;
    for (const cJSON *v = obj->child; v && !st; v = v->next) {
        const char *k = v->string;
        if (cJSON_GetObjectItemCaseSensitive(obj, k) != v)
            return fm_json_fail(w, v, "field \"%s\" appears twice", k);
        if (strcmp(k, "class") == 0) {
            if (!cJSON_IsString(v) || !fm_calib_class_parse(v->valuestring, &e->cls))
                return fm_json_fail(w, v, "field \"class\" must be one of conv, matmul, norm, "
                                 "activation, pool, elementwise, reduction, data_movement, "
                                 "embedding, attention, loss, other; got %s%s%s",
                           cJSON_IsString(v) ? "\"" : fm_json_type_name(v),
                           cJSON_IsString(v) ? v->valuestring : "",
                           cJSON_IsString(v) ? "\"" : "");
            seen |= F_CLASS;
        } else if (strcmp(k, "kind") == 0) {
            st = fm_json_string_to(w, v, true, e->kind, sizeof(e->kind));
            if (!st && !fm_calib_kind_valid(e->kind))
                return fm_json_fail(w, v, "field \"kind\": unknown kind \"%s\" (expected %s)", e->kind,
                           fm_calib_known_kinds);
        } else if (strcmp(k, "phase") == 0) {
            if (!cJSON_IsString(v) || !fm_calib_phase_parse(v->valuestring, &e->phase))
                return fm_json_fail(w, v, "field \"phase\" must be one of fwd, bwd_data, bwd_weight, "
                                 "optimizer; got %s%s%s",
                           cJSON_IsString(v) ? "\"" : fm_json_type_name(v),
                           cJSON_IsString(v) ? v->valuestring : "",
                           cJSON_IsString(v) ? "\"" : "");
            seen |= F_PHASE;
        } else if (strcmp(k, "fixed_s") == 0) {
            st = fm_json_number(w, v, "seconds per kernel", entry_below_zero, &e->fixed_s);
            seen |= F_FIXED;
        } else if (strcmp(k, "s_per_flop") == 0) {
            st = fm_json_number(w, v, "seconds per FLOP", entry_below_zero, &e->s_per_flop);
            seen |= F_FLOP;
        } else if (strcmp(k, "s_per_byte") == 0) {
            st = fm_json_number(w, v, "seconds per byte", entry_below_zero, &e->s_per_byte);
            seen |= F_BYTE;
        } else if (strcmp(k, "cache") == 0) {
            if (!cJSON_IsString(v) ||
                (strcmp(v->valuestring, "warm") != 0 && strcmp(v->valuestring, "cold") != 0))
                return fm_json_fail(w, v, "field \"cache\" must be \"warm\" or \"cold\"; got %s%s%s",
                           cJSON_IsString(v) ? "\"" : fm_json_type_name(v),
                           cJSON_IsString(v) ? v->valuestring : "",
                           cJSON_IsString(v) ? "\"" : "");
            e->cold = strcmp(v->valuestring, "cold") == 0;
        } else if (strcmp(k, "points") == 0) {
            st = fm_json_count(w, v, "samples fitted", &e->points);
        } else if (strcmp(k, "rel_rms") == 0) {
            st = fm_json_number(w, v, "relative RMS error of the fit", entry_below_zero, &e->rel_rms);
        } else if (strcmp(k, "comment") == 0) {
            continue;
        } else {
            return fm_json_fail(w, v, "unknown field \"%s\" (known fields of an entry: %s)", k,
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
            return fm_json_fail(w, obj, "missing field \"%s\"", required[i].name);
    }
    return FM_OK;
}

/* "eviction": [{"bytes": B, "fraction": F}, ...], bytes increasing, fractions in [0, 1] and
 * not decreasing. */
static enum fm_status read_eviction(struct fm_json_doc *w, const cJSON *v, struct fm_calibration *c)
{
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 ||
        cJSON_GetArraySize(v) > FM_CALIB_EVICT_MAX)
        return fm_json_fail(w, v, "field \"eviction\" must be an array of 1 to %d "
                                  "{\"bytes\": ..., \"fraction\": ...} objects",
                   FM_CALIB_EVICT_MAX);
    size_t i = 0;
    for (const cJSON *p = v->child; p; p = p->next, i++) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(p, "bytes");
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(p, "fraction");
        if (!cJSON_IsObject(p) || cJSON_GetArraySize(p) != 2 || !cJSON_IsNumber(b) ||
            !cJSON_IsNumber(f))
            return fm_json_fail(w, v, "eviction[%zu] must be {\"bytes\": number, "
                                      "\"fraction\": number}",
                       i);
        c->evict_bytes[i] = b->valuedouble;
        c->evict_frac[i] = f->valuedouble;
        if (!(b->valuedouble >= 0) || !isfinite(b->valuedouble) ||
            (i && !(b->valuedouble > c->evict_bytes[i - 1])))
            return fm_json_fail(w, v, "eviction[%zu]: bytes %g must be >= 0 and above the "
                                      "point before",
                       i, b->valuedouble);
        if (!(f->valuedouble >= 0 && f->valuedouble <= 1) ||
            (i && f->valuedouble < c->evict_frac[i - 1]))
            return fm_json_fail(w, v, "eviction[%zu]: fraction %g must lie in [0, 1] and not "
                                      "fall below the point before",
                       i, f->valuedouble);
    }
    c->n_evict = i;
    return FM_OK;
}

static enum fm_status read_header(struct fm_json_doc *w, const cJSON *root, struct fm_calibration *c,
                                  const cJSON **entries)
{
    enum { H_DEVICE = 1, H_BACKEND = 2, H_THREADS = 4, H_PRECISION = 8, H_ENTRIES = 16 };
    unsigned seen = 0;
    enum fm_status st = FM_OK;
    for (const cJSON *v = root->child; v && !st; v = v->next) {
        const char *k = v->string;
        if (cJSON_GetObjectItemCaseSensitive(root, k) != v)
            return fm_json_fail(w, v, "field \"%s\" appears twice", k);
        if (strcmp(k, "format") == 0 || strcmp(k, "version") == 0) {
            continue;   /* checked first, by the caller */
        } else if (strcmp(k, "flopmeter") == 0 || strcmp(k, "model") == 0 ||
                   strcmp(k, "comment") == 0) {
            continue;   /* informative */
        } else if (strcmp(k, "device") == 0) {
            st = fm_json_string_to(w, v, false, c->device, sizeof(c->device));
            seen |= H_DEVICE;
        } else if (strcmp(k, "backend") == 0) {
            st = fm_json_string_to(w, v, false, c->backend, sizeof(c->backend));
            seen |= H_BACKEND;
        } else if (strcmp(k, "threads") == 0) {
            st = fm_json_count(w, v, "CPU threads; 0 on a GPU", &c->threads);
            seen |= H_THREADS;
        } else if (strcmp(k, "precision") == 0) {
            if (!cJSON_IsString(v) || !precision_parse_exact(v->valuestring, &c->precision))
                return fm_json_fail(w, v, "field \"precision\" must be one of fp64, fp32, tf32, fp16, "
                                 "bf16, fp8, int8; got %s%s%s",
                           cJSON_IsString(v) ? "\"" : fm_json_type_name(v),
                           cJSON_IsString(v) ? v->valuestring : "",
                           cJSON_IsString(v) ? "\"" : "");
            seen |= H_PRECISION;
        } else if (strcmp(k, "date") == 0) {
            st = fm_json_string_to(w, v, true, c->date, sizeof(c->date));
        } else if (strcmp(k, "rounds") == 0) {
            st = fm_json_count(w, v, "rounds of the sweep", &c->rounds);
        } else if (strcmp(k, "left_out") == 0) {
            st = fm_json_string_to(w, v, true, c->left_out, sizeof(c->left_out));
        } else if (strcmp(k, "peak_flops") == 0) {
            st = fm_json_number(w, v, "FLOP/s", NULL, &c->peak);
        } else if (strcmp(k, "bandwidth_bytes_per_s") == 0) {
            st = fm_json_number(w, v, "bytes/s", NULL, &c->bandwidth);
        } else if (strcmp(k, "step_overhead_s") == 0) {
            st = fm_json_number(w, v, "seconds per training step", NULL, &c->step_overhead_s);
        } else if (strcmp(k, "eviction") == 0) {
            st = read_eviction(w, v, c);
        } else if (strcmp(k, "entries") == 0) {
            if (!cJSON_IsArray(v))
                return fm_json_fail(w, v, "field \"entries\" must be an array of entry objects, got %s",
                           fm_json_type_name(v));
            *entries = v;
            seen |= H_ENTRIES;
        } else {
            return fm_json_fail(w, v, "unknown field \"%s\" (known fields: %s)", k, known_header);
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
            return fm_json_fail(w, root, "missing field \"%s\"", required[i].name);
    }
    return FM_OK;
}

/* "format" and "version": a file that is not a calibration, or one a newer flopmeter wrote, is
 * refused before any other field is read. */
static enum fm_status read_format(struct fm_json_doc *w, const cJSON *root)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (!f)
        return fm_json_fail(w, root, "not a flopmeter calibration file (no field \"format\": \"%s\"; "
                            "`flopmeter calibrate` writes one)",
                   CALIB_FORMAT);
    if (!cJSON_IsString(f) || strcmp(f->valuestring, CALIB_FORMAT) != 0)
        return fm_json_fail(w, f, "not a flopmeter calibration file (field \"format\" is %s%s%s, "
                                "expected \"%s\")",
                   cJSON_IsString(f) ? "\"" : fm_json_type_name(f),
                   cJSON_IsString(f) ? f->valuestring : "", cJSON_IsString(f) ? "\"" : "",
                   CALIB_FORMAT);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!v)
        return fm_json_fail(w, root, "missing field \"version\" (this flopmeter writes version %d)",
                   FM_CALIB_VERSION);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1)
        return fm_json_fail(w, v, "field \"version\" must be a whole number >= 1, got %s",
                   cJSON_IsNumber(v) ? "a fraction or a number below 1" : fm_json_type_name(v));
    if (v->valuedouble > FM_CALIB_VERSION)
        return fm_json_fail(w, v, "calibration format version %.0f is newer than this flopmeter "
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
    struct fm_json_doc w;
    st = fm_json_parse(ctx, path, text, len, true,
                       "a calibration file is {\"format\": \"" CALIB_FORMAT "\", ..., "
                       "\"entries\": [...]}, see docs/calibration.md",
                       &w);
    if (st)
        goto out;
    const cJSON *root = w.root;
    if (!cJSON_IsObject(root)) {
        st = fm_json_fail(&w, root, "not a flopmeter calibration file (expected an object, got "
                                    "%s)",
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
    if ((st = fm_calib_new(ctx, NULL, n, &c)))
        goto out;
    if ((st = read_header(&w, root, c, &entries)))
        goto out;
    if (!n) {
        st = fm_json_fail(&w, entries, "field \"entries\" is empty: a calibration without "
                                       "entries calibrates nothing");
        goto out;
    }
    char where[48];
    w.where = where;
    size_t i = 0;
    for (const cJSON *e = entries->child; e && i < n; e = e->next, i++) {
        snprintf(where, sizeof(where), "entries[%zu]", i);
        if ((st = read_entry(&w, e, &c->entries[i])))
            goto out;
        for (size_t j = 0; j < i; j++) {
            const struct fm_calib_entry *a = &c->entries[j], *b = &c->entries[i];
            if (fm_calib_key_cmp(a->cls, a->kind, a->phase, a->cold, b->cls, b->kind, b->phase,
                                 b->cold) == 0) {
                st = fm_json_fail(&w, e, "repeats entries[%zu] (%s \"%s\" %s%s): one entry per "
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
    fm_json_release(&w);
    fm_dealloc(ctx, text);
    return st;
}

#endif

/* ---- the samples CSV, read back ---- */

enum { SAMPLE_FIELDS = 8 };

/* Splits line (its newline removed) at commas into at most SAMPLE_FIELDS fields; the count. */
static int split_fields(char *line, char **f)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    f[n++] = line;
    for (char *c = line; *c; c++) {
        if (*c != ',')
            continue;
        if (n == SAMPLE_FIELDS)
            return SAMPLE_FIELDS + 1;
        *c = '\0';
        f[n++] = c + 1;
    }
    return n;
}

static bool number_field(const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    return end != s && *end == '\0' && isfinite(*out) && *out >= 0;
}

/* One data line into x; NULL when it reads, else the name of the field that does not. families
 * gets the line's families with ',' for '+' ("" for a generic shape or an old file). */
static const char *parse_sample(char **f, int nf, struct fm_calib_sample *x, char *families,
                                size_t families_size)
{
    memset(x, 0, sizeof(*x));
    if (!fm_calib_class_parse(f[0], &x->cls))
        return "class";
    if (strlen(f[1]) >= sizeof(x->kind))
        return "kind";
    snprintf(x->kind, sizeof(x->kind), "%s", f[1]);
    if (!fm_calib_phase_parse(f[2], &x->phase))
        return "phase";
    if (strcmp(f[3], "warm") != 0 && strcmp(f[3], "cold") != 0)
        return "cache";
    x->cold = f[3][0] == 'c';
    if (!number_field(f[4], &x->flops))
        return "flops";
    if (!number_field(f[5], &x->bytes))
        return "bytes";
    if (!number_field(f[6], &x->seconds) || !(x->seconds > 0))
        return "seconds";
    snprintf(families, families_size, "%s", nf > 7 ? f[7] : "");
    for (char *c = families; *c; c++)
        *c = *c == '+' ? ',' : *c;
    return NULL;
}

enum fm_status fm_calib_samples_load(struct fm_ctx *ctx, const char *path, const char *leave_out,
                                     struct fm_calib_sample **out, size_t *n, size_t *dropped)
{
    static const char *const names[SAMPLE_FIELDS] = {"class", "kind",  "phase",   "cache",
                                                     "flops", "bytes", "seconds", "families"};
    *out = NULL;
    *n = *dropped = 0;
    if (leave_out && !*leave_out)
        leave_out = NULL;
    FILE *fp = fopen(path, "r");
    if (!fp)
        return fm_error(ctx, FM_ERR_IO, "%s: cannot open the samples file: %s", path,
                        strerror(errno));
    char line[1024], *f[SAMPLE_FIELDS + 1];
    enum fm_status st = FM_OK;
    int nf = fgets(line, sizeof(line), fp) ? split_fields(line, f) : 0;
    bool ok = nf == SAMPLE_FIELDS || nf == SAMPLE_FIELDS - 1;
    for (int i = 0; ok && i < nf; i++)
        ok = strcmp(f[i], names[i]) == 0;
    const int want = nf;
    if (!ok)
        st = fm_error(ctx, FM_ERR_PARSE, "%s, line 1: not a samples file of fm_calib_samples_load "
                      "(its header is class,kind,phase,cache,flops,bytes,seconds,families)", path);
    if (!st && leave_out && want < SAMPLE_FIELDS)
        st = fm_error(ctx, FM_ERR_INVALID, "%s has no families column (a file of an older "
                      "flopmeter): its samples cannot be left out by family", path);
    size_t cap = 0, line_no = 1;
    char known[512] = "", fam[256];
    size_t used = 0;
    while (!st && fgets(line, sizeof(line), fp)) {
        line_no++;
        if (!strchr(line, '\n') && !feof(fp)) {
            st = fm_error(ctx, FM_ERR_PARSE, "%s, line %zu: longer than %zu characters", path,
                          line_no, sizeof(line) - 2);
            break;
        }
        if (line[0] == '\n' || (line[0] == '\r' && line[1] == '\n'))
            continue;
        int got = split_fields(line, f);
        if (got != want) {
            st = fm_error(ctx, FM_ERR_PARSE, "%s, line %zu: %d fields, the header has %d", path,
                          line_no, got > SAMPLE_FIELDS ? got - 1 : got, want);
            break;
        }
        struct fm_calib_sample x;
        const char *bad = parse_sample(f, got, &x, fam, sizeof(fam));
        if (bad) {
            int k = 0;
            while (strcmp(names[k], bad) != 0)
                k++;
            st = fm_error(ctx, FM_ERR_PARSE, "%s, line %zu: field '%s' is '%s'", path, line_no,
                          bad, f[k]);
            break;
        }
        const char *p = fam, *item;
        size_t len;
        while (fm_calib_list_next(&p, &item, &len)) {
            if (len && !fm_calib_list_has(known, item, len) && used + len + 2 < sizeof(known))
                used += (size_t)snprintf(known + used, sizeof(known) - used, "%s%.*s",
                                         used ? "," : "", (int)len, item);
        }
        if (leave_out && fm_calib_left_out(fam, leave_out)) {
            (*dropped)++;
            continue;
        }
        if (*n == cap) {
            size_t nc = cap ? 2 * cap : 256;
            struct fm_calib_sample *v = fm_alloc(ctx, nc * sizeof(*v));
            if (!v) {
                st = fm_error(ctx, FM_ERR_NOMEM, "out of memory reading %s", path);
                break;
            }
            if (*n)
                memcpy(v, *out, *n * sizeof(*v));
            fm_dealloc(ctx, *out);
            *out = v;
            cap = nc;
        }
        (*out)[(*n)++] = x;
    }
    fclose(fp);
    const char *p = leave_out, *item;
    size_t len;
    while (!st && fm_calib_list_next(&p, &item, &len)) {
        if (!fm_calib_list_has(known, item, len))
            st = fm_error(ctx, FM_ERR_INVALID, "fm_calibrate_opts.leave_out: no sample in %s is "
                          "taken from '%.*s' (the families its shapes are taken from: %s)",
                          path, (int)len, item, known[0] ? known : "none");
    }
    if (!st && *n == 0)
        st = fm_error(ctx, FM_ERR_PARSE, "%s: no samples%s", path,
                      *dropped ? " left after fm_calibrate_opts.leave_out" : "");
    if (st) {
        fm_dealloc(ctx, *out);
        *out = NULL;
        *n = 0;
    }
    return st;
}
