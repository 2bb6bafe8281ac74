/* Device JSON files: reading them with the JSON reader of src/core/json_read.h (every field
 * checked for its type and range, the message naming the file, the line:column, the entry and
 * the field) and writing them with the streaming writer
 * (numbers printed with 17 significant digits, so a file read back gives identical doubles).
 * The format is documented in docs/devices.md. A build without cJSON can write but not read. */
#include "hw.h"
#include "../core/json_read.h"
#include "../core/jsonw.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef FM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

#define FM_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- unverified-field keys ---- */

static const struct {
    unsigned bit;
    const char *name;
} devf_names[] = {
    {FM_DEVF_PEAK, "peak"},   {FM_DEVF_BANDWIDTH, "bandwidth"}, {FM_DEVF_MEMORY, "memory"},
    {FM_DEVF_L2, "l2"},       {FM_DEVF_CLOCK, "clock"},         {FM_DEVF_TDP, "tdp"},
    {FM_DEVF_UNITS, "units"}, {FM_DEVF_INTERCONNECT, "interconnect"},
};

static const char *devf_name(unsigned bit)
{
    for (size_t i = 0; i < FM_COUNT_OF(devf_names); i++) {
        if (devf_names[i].bit == bit)
            return devf_names[i].name;
    }
    return NULL;
}

#ifdef FM_HAVE_CJSON
static bool devf_parse(const char *s, unsigned *bit)
{
    for (size_t i = 0; i < FM_COUNT_OF(devf_names); i++) {
        if (strcasecmp(s, devf_names[i].name) == 0) {
            *bit = devf_names[i].bit;
            return true;
        }
    }
    return false;
}
#endif

/* ---- writing ---- */

static void write_peaks(struct fm_jw *w, const char *key, const double *peaks)
{
    fm_jw_object(w, key, true);
    for (int p = 0; p < FM_PREC_COUNT; p++) {
        if (peaks[p] > 0)
            fm_jw_double(w, fm_precision_name((enum fm_precision)p), peaks[p]);
    }
    fm_jw_end(w);
}

static void write_device(struct fm_jw *w, const struct fm_device *d)
{
    fm_jw_object(w, NULL, false);
    fm_jw_string(w, "name", d->name);
    if (d->aliases)
        fm_jw_string(w, "aliases", d->aliases);
    if (d->kind)
        fm_jw_string(w, "kind", d->kind);
    if (d->arch)
        fm_jw_string(w, "arch", d->arch);
    write_peaks(w, "peak_vector_flops", d->peak_vector);
    write_peaks(w, "peak_tensor_flops", d->peak_tensor);
    fm_jw_double(w, "mem_bw_bytes_per_s", d->mem_bw);
    fm_jw_double(w, "mem_bytes", d->mem_bytes);
    fm_jw_double(w, "l2_bytes", d->l2_bytes);
    fm_jw_double(w, "boost_mhz", d->boost_mhz);
    fm_jw_i64(w, "units", d->units);
    fm_jw_double(w, "tdp_w", d->tdp_w);
    if (d->interconnect)
        fm_jw_string(w, "interconnect", d->interconnect);
    fm_jw_double(w, "interconnect_bw_bytes_per_s", d->interconnect_bw);
    if (d->source)
        fm_jw_string(w, "source", d->source);
    fm_jw_array(w, "unverified", true);
    for (unsigned bit = 1; bit <= FM_DEVF_INTERCONNECT; bit <<= 1) {
        if ((d->unverified & bit) && devf_name(bit))
            fm_jw_string(w, NULL, devf_name(bit));
    }
    for (int p = 0; p < FM_PREC_COUNT; p++) {
        char key[32];
        if (d->unverified_vector & (1u << p)) {
            snprintf(key, sizeof(key), "vector.%s", fm_precision_name((enum fm_precision)p));
            fm_jw_string(w, NULL, key);
        }
        if (d->unverified_tensor & (1u << p)) {
            snprintf(key, sizeof(key), "tensor.%s", fm_precision_name((enum fm_precision)p));
            fm_jw_string(w, NULL, key);
        }
    }
    fm_jw_end(w);
    fm_jw_bool(w, "measured", d->measured);
    fm_jw_end(w);
}

enum fm_status fm_devices_write_json(FILE *f, const struct fm_device *const *devs, size_t n)
{
    struct fm_jw w;
    fm_jw_init(&w, f);
    fm_jw_object(&w, NULL, false);
    fm_jw_string(&w, "flopmeter", FM_VERSION);
    fm_jw_string(&w, "units", "FLOP/s (ops/s for int8), bytes, bytes/s, MHz, W");
    fm_jw_array(&w, "devices", false);
    for (size_t i = 0; i < n; i++)
        write_device(&w, devs[i]);
    fm_jw_end(&w);
    fm_jw_end(&w);
    fm_jw_finish(&w);
    return ferror(f) ? FM_ERR_IO : FM_OK;
}

enum fm_status fm_device_save_json(struct fm_ctx *ctx, const struct fm_device *dev,
                                   const char *path)
{
    if (!dev || !dev->name || !*dev->name)
        return fm_error(ctx, FM_ERR_INVALID, "cannot save a device without a name");
    FILE *f = fopen(path, "w");
    if (!f)
        return fm_error(ctx, FM_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    enum fm_status st = fm_devices_write_json(f, &dev, 1);
    if (fclose(f) != 0 || st)
        return fm_error(ctx, FM_ERR_IO, "writing %s failed: %s", path, strerror(errno));
    return FM_OK;
}

/* ---- reading ---- */

enum fm_status fm_devices_add_file(struct fm_devices *devs, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    enum fm_status st = fm_read_text(devs->ctx, path, "device file", FM_READ_MAX_CONFIG_MB, &text,
                                     &len);
    if (st)
        return st;
    st = fm_devices_add_json(devs, text, len, path);
    fm_dealloc(devs->ctx, text);
    return st;
}

#ifndef FM_HAVE_CJSON

enum fm_status fm_devices_add_json(struct fm_devices *devs, const char *text, size_t len,
                                   const char *origin)
{
    (void)text;
    (void)len;
    return fm_error(devs->ctx, FM_ERR_UNSUPPORTED,
                    "%s: this build of flopmeter cannot read device files (it was built without "
                    "cJSON; install libcjson-dev and rebuild)",
                    origin ? origin : "device file");
}

#else

/* The entry being read, for messages: "devices[N]", then "devices[N] (\"NAME\")" once its name is
 * known. */
static void set_where(char *buf, size_t size, size_t index, const char *name)
{
    if (name)
        snprintf(buf, size, "devices[%zu] (\"%.120s\")", index, name);
    else
        snprintf(buf, size, "devices[%zu]", index);
}

static enum fm_status get_string(const struct fm_json_doc *w, const cJSON *v,
                                 struct fm_arena *arena, const char **out)
{
    const char *text;
    enum fm_status st = fm_json_string(w, v, true, &text);
    if (st)
        return st;
    const char *s = fm_arena_strdup(arena, text);
    if (!s)
        return fm_error(w->ctx, FM_ERR_NOMEM, "out of memory reading %s", w->path);
    *out = s;
    return FM_OK;
}

static enum fm_status get_peaks(const struct fm_json_doc *w, const cJSON *v, double *peaks)
{
    if (!cJSON_IsObject(v))
        return fm_json_fail(w, v, "field \"%s\" must be an object of precision: FLOP/s, got %s",
                            v->string, fm_json_type_name(v));
    for (const cJSON *e = v->child; e; e = e->next) {
        enum fm_precision p;
        if (!fm_precision_parse(e->string, &p) || strcmp(e->string, fm_precision_name(p)) != 0) {
            return fm_json_fail(w, e, "field \"%s\": unknown precision \"%s\" (expected fp64, "
                                      "fp32, tf32, fp16, bf16, fp8 or int8)",
                                v->string, e->string);
        }
        if (!cJSON_IsNumber(e)) {
            return fm_json_fail(w, e, "field \"%s.%s\" must be a number (FLOP/s), got %s",
                                v->string, e->string, fm_json_type_name(e));
        }
        if (!isfinite(e->valuedouble) || e->valuedouble < 0) {
            return fm_json_fail(w, e, "field \"%s.%s\" must be >= 0 (FLOP/s), got %g", v->string,
                                e->string, e->valuedouble);
        }
        peaks[p] = e->valuedouble;
    }
    return FM_OK;
}

static enum fm_status get_unverified(const struct fm_json_doc *w, const cJSON *v,
                                     struct fm_device *d)
{
    if (!cJSON_IsArray(v))
        return fm_json_fail(w, v, "field \"%s\" must be an array of strings, got %s", v->string,
                            fm_json_type_name(v));
    unsigned flags = 0, vec = 0, ten = 0;
    for (const cJSON *e = v->child; e; e = e->next) {
        if (!cJSON_IsString(e))
            return fm_json_fail(w, e, "field \"unverified\" must hold strings, got %s",
                                fm_json_type_name(e));
        const char *s = e->valuestring;
        unsigned bit;
        enum fm_precision p;
        if (devf_parse(s, &bit)) {
            flags |= bit;
        } else if (strncmp(s, "vector.", 7) == 0 && fm_precision_parse(s + 7, &p)) {
            vec |= 1u << p;
            flags |= FM_DEVF_PEAK;
        } else if (strncmp(s, "tensor.", 7) == 0 && fm_precision_parse(s + 7, &p)) {
            ten |= 1u << p;
            flags |= FM_DEVF_PEAK;
        } else {
            return fm_json_fail(w, e, "field \"unverified\": unknown entry \"%s\" (expected "
                                      "peak, bandwidth, memory, l2, clock, tdp, units, "
                                      "interconnect, vector.PREC or tensor.PREC)",
                                s);
        }
    }
    d->unverified = flags;
    d->unverified_vector = vec;
    d->unverified_tensor = ten;
    return FM_OK;
}

static const char known_fields[] =
    "name, aliases, kind, arch, peak_vector_flops, peak_tensor_flops, mem_bw_bytes_per_s, "
    "mem_bytes, l2_bytes, boost_mhz, units, tdp_w, interconnect, interconnect_bw_bytes_per_s, "
    "source, unverified, measured";

/* Applies the fields of one entry object onto d. */
static enum fm_status apply_fields(const struct fm_json_doc *w, const cJSON *obj, struct fm_arena *arena,
                                   struct fm_device *d)
{
    enum fm_status st = FM_OK;
    for (const cJSON *v = obj->child; v && !st; v = v->next) {
        const char *k = v->string;
        if (strcmp(k, "name") == 0) {
            continue;   /* handled by the caller */
        } else if (strcmp(k, "aliases") == 0) {
            if (cJSON_IsArray(v)) {
                /* ["a", "b"] is joined to "a,b" */
                size_t total = 1;
                for (const cJSON *e = v->child; e; e = e->next) {
                    if (!cJSON_IsString(e))
                        return fm_json_fail(w, e, "field \"aliases\" must hold strings, got %s",
                                            fm_json_type_name(e));
                    total += strlen(e->valuestring) + 1;
                }
                char *s = fm_arena_alloc(arena, total);
                if (!s)
                    return fm_error(w->ctx, FM_ERR_NOMEM, "out of memory reading %s", w->path);
                for (const cJSON *e = v->child; e; e = e->next) {
                    if (*s)
                        strcat(s, ",");
                    strcat(s, e->valuestring);
                }
                d->aliases = s;
            } else if (cJSON_IsString(v)) {
                st = get_string(w, v, arena, &d->aliases);
            } else {
                return fm_json_fail(w, v, "field \"aliases\" must be a string (\"a,b\") or an "
                                          "array of strings, got %s",
                                    fm_json_type_name(v));
            }
        } else if (strcmp(k, "kind") == 0) {
            st = get_string(w, v, arena, &d->kind);
        } else if (strcmp(k, "arch") == 0) {
            st = get_string(w, v, arena, &d->arch);
        } else if (strcmp(k, "interconnect") == 0) {
            st = get_string(w, v, arena, &d->interconnect);
        } else if (strcmp(k, "source") == 0) {
            st = get_string(w, v, arena, &d->source);
        } else if (strcmp(k, "peak_vector_flops") == 0) {
            st = get_peaks(w, v, d->peak_vector);
        } else if (strcmp(k, "peak_tensor_flops") == 0) {
            st = get_peaks(w, v, d->peak_tensor);
        } else if (strcmp(k, "mem_bw_bytes_per_s") == 0) {
            st = fm_json_number(w, v, "bytes/s", NULL, &d->mem_bw);
        } else if (strcmp(k, "mem_bytes") == 0) {
            st = fm_json_number(w, v, "bytes", NULL, &d->mem_bytes);
        } else if (strcmp(k, "l2_bytes") == 0) {
            st = fm_json_number(w, v, "bytes", NULL, &d->l2_bytes);
        } else if (strcmp(k, "boost_mhz") == 0) {
            st = fm_json_number(w, v, "MHz", NULL, &d->boost_mhz);
        } else if (strcmp(k, "tdp_w") == 0) {
            st = fm_json_number(w, v, "W", NULL, &d->tdp_w);
        } else if (strcmp(k, "interconnect_bw_bytes_per_s") == 0) {
            st = fm_json_number(w, v, "bytes/s, bidirectional per GPU", NULL,
                                &d->interconnect_bw);
        } else if (strcmp(k, "units") == 0) {
            double u = 0;
            st = fm_json_number(w, v, "SMs, CUs or cores", NULL, &u);
            if (!st && (u != floor(u) || u > 1e9))
                return fm_json_fail(w, v, "field \"units\" must be a whole number (SMs, CUs or "
                                          "cores), got %g",
                                    u);
            d->units = (int)u;
        } else if (strcmp(k, "unverified") == 0) {
            st = get_unverified(w, v, d);
        } else if (strcmp(k, "measured") == 0) {
            st = fm_json_bool(w, v, &d->measured);
        } else if (strcmp(k, "flopmeter") == 0 || strcmp(k, "comment") == 0) {
            continue;
        } else {
            return fm_json_fail(w, v, "unknown field \"%s\" (known fields: %s)", k, known_fields);
        }
    }
    return st;
}

static bool any_peak(const struct fm_device *d)
{
    for (int p = 0; p < FM_PREC_COUNT; p++) {
        if (d->peak_vector[p] > 0 || d->peak_tensor[p] > 0)
            return true;
    }
    return false;
}

/* A calibration file (flopmeter calibrate, docs/calibration.md) read as a device file is one
 * device: the machine it was made on, with the peak and bandwidth its probe measured. Only the
 * header is read here; using the file as a calibration reads (and checks) all of it. */
static enum fm_status add_calibration(struct fm_devices *devs, const struct fm_json_doc *w)
{
    const cJSON *root = w->root;
    const char *org = w->path;
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(root, "device");
    const cJSON *backend = cJSON_GetObjectItemCaseSensitive(root, "backend");
    const cJSON *threads = cJSON_GetObjectItemCaseSensitive(root, "threads");
    const cJSON *prec = cJSON_GetObjectItemCaseSensitive(root, "precision");
    const cJSON *date = cJSON_GetObjectItemCaseSensitive(root, "date");
    const cJSON *peak = cJSON_GetObjectItemCaseSensitive(root, "peak_flops");
    const cJSON *bw = cJSON_GetObjectItemCaseSensitive(root, "bandwidth_bytes_per_s");
    enum fm_precision p = FM_PREC_FP32;
    if (!cJSON_IsString(dev) || !*dev->valuestring || !cJSON_IsString(backend) ||
        !cJSON_IsNumber(threads) || !cJSON_IsString(prec) ||
        !fm_precision_parse(prec->valuestring, &p))
        return fm_json_fail(w, root, "a calibration file needs \"device\", \"backend\" and "
                                     "\"precision\" strings and a \"threads\" number to be read "
                                     "as a device (docs/calibration.md)");
    if (!cJSON_IsNumber(peak) || !(peak->valuedouble > 0) || !cJSON_IsNumber(bw) ||
        !(bw->valuedouble > 0))
        return fm_json_fail(w, root, "a calibration file read as a device needs \"peak_flops\" "
                                     "and \"bandwidth_bytes_per_s\" above 0 (the probe's "
                                     "figures flopmeter calibrate writes)");
    char source[400];
    snprintf(source, sizeof(source), "flopmeter calibrate on %s (%s, %d threads, %s): peak and "
             "bandwidth as its probe measured them",
             cJSON_IsString(date) ? date->valuestring : "an unknown date", backend->valuestring,
             (int)threads->valuedouble, fm_precision_name(p));
    struct fm_device d;
    memset(&d, 0, sizeof(d));
    d.name = dev->valuestring;
    d.aliases = "";
    d.kind = strcmp(backend->valuestring, "cpu") == 0 ? "cpu" : "gpu";
    d.peak_vector[p] = peak->valuedouble;
    d.peak_vector[FM_PREC_FP32] = peak->valuedouble;
    d.mem_bw = bw->valuedouble;
    d.source = source;
    d.measured = true;
    struct fm_device owned;
    enum fm_status st = fm_hw_copy(&devs->arena, &d, org, &owned);
    return st ? st : fm_hw_put(devs, fm_hw_lookup(devs, d.name), &owned);
}

enum fm_status fm_devices_add_json(struct fm_devices *devs, const char *text, size_t len,
                                   const char *origin)
{
    struct fm_ctx *ctx = devs->ctx;
    enum fm_status st = FM_OK;
    const char *org = origin ? origin : "device file";
    struct fm_device *parsed = NULL;
    size_t n = 0;
    struct fm_json_doc w;
    st = fm_json_parse(ctx, org, text, len, false,
                       "a device file is {\"devices\": [{\"name\": ...}, ...]}, see "
                       "docs/devices.md",
                       &w);
    if (st)
        return st;
    const cJSON *root = w.root;
    char where[160];
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    if (cJSON_IsString(fmt) && strcmp(fmt->valuestring, "flopmeter-calibration") == 0) {
        st = add_calibration(devs, &w);
        goto out;
    }
    const cJSON *list = root;
    if (cJSON_IsObject(root)) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "devices");
        if (d) {
            list = d;
            if (!cJSON_IsArray(d)) {
                st = fm_json_fail(&w, d, "field \"devices\" must be an array of device objects, "
                                         "got %s",
                                  fm_json_type_name(d));
                goto out;
            }
        }
    } else if (!cJSON_IsArray(root)) {
        st = fm_json_fail(&w, root, "expected an object {\"devices\": [...]}, one device object "
                                    "or an array of device objects, got %s",
                          fm_json_type_name(root));
        goto out;
    }
    size_t count = cJSON_IsArray(list) ? (size_t)cJSON_GetArraySize(list) : 1;
    parsed = fm_alloc(ctx, (count ? count : 1) * sizeof(*parsed));
    if (!parsed) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory reading %s", org);
        goto out;
    }
    const cJSON *entry = cJSON_IsArray(list) ? list->child : list;
    for (; entry; entry = cJSON_IsArray(list) ? entry->next : NULL, n++) {
        set_where(where, sizeof(where), n, NULL);
        w.where = where;
        if (!cJSON_IsObject(entry)) {
            st = fm_json_fail(&w, entry, "expected a device object, got %s",
                              fm_json_type_name(entry));
            goto out;
        }
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(entry, "name");
        if (!name) {
            st = fm_json_fail(&w, entry, "missing field \"name\" (a string: the device's name)");
            goto out;
        }
        if (!cJSON_IsString(name) || !*name->valuestring) {
            st = fm_json_fail(&w, name, "field \"name\" must be a non-empty string, got %s",
                              cJSON_IsString(name) ? "\"\"" : fm_json_type_name(name));
            goto out;
        }
        set_where(where, sizeof(where), n, name->valuestring);
        /* An entry naming an existing device (by name or alias) overrides the fields it gives;
         * a repeat within this file builds on the earlier entry. */
        long at = fm_hw_lookup(devs, name->valuestring);
        const char *canonical = at >= 0 ? devs->items[at].name : name->valuestring;
        struct fm_device d;
        memset(&d, 0, sizeof(d));
        long prev = -1;
        for (size_t i = 0; i < n; i++) {
            if (strcasecmp(parsed[i].name, canonical) == 0)
                prev = (long)i;
        }
        if (prev >= 0)
            d = parsed[prev];
        else if (at >= 0)
            d = devs->items[at];
        st = apply_fields(&w, entry, &devs->arena, &d);
        if (st)
            goto out;
        if (at < 0 && prev < 0 &&
            !(d.name = fm_arena_strdup(&devs->arena, name->valuestring))) {
            st = fm_error(ctx, FM_ERR_NOMEM, "out of memory reading %s", org);
            goto out;
        }
        /* checked after every entry of a new device, not only its first: a repeat that zeroes
         * the bandwidth was accepted, and the file it saved would not load (fuzz_device_json) */
        if (at < 0 && (d.mem_bw <= 0 || !any_peak(&d))) {
            st = fm_json_fail(&w, entry, "a new device needs \"mem_bw_bytes_per_s\" and at least "
                                         "one peak in \"peak_vector_flops\" or "
                                         "\"peak_tensor_flops\" (its name matches no existing "
                                         "device, so it overrides nothing)");
            goto out;
        }
        if (!(d.origin = fm_arena_strdup(&devs->arena, org))) {
            st = fm_error(ctx, FM_ERR_NOMEM, "out of memory reading %s", org);
            goto out;
        }
        parsed[n] = d;
    }
    /* Everything parsed and checked: only now touch the table, in file order (later entries
     * win; an entry's name is its target's canonical name, so lookup finds the target). */
    for (size_t i = 0; i < n; i++) {
        if (fm_hw_put(devs, fm_hw_lookup(devs, parsed[i].name), &parsed[i])) {
            st = fm_error(ctx, FM_ERR_NOMEM, "out of memory reading %s", org);
            goto out;
        }
    }
out:
    fm_dealloc(ctx, parsed);
    fm_json_release(&w);
    return st;
}

#endif
