/* The device table a program works with: the built-ins, then the user's files ($FLOPMETER_DEVICES,
 * $XDG_CONFIG_HOME/flopmeter/devices.json, --devices FILE), later entries overriding earlier
 * ones; lookup by name or alias; and which ceiling applies to an op class at a precision.
 * Parsing the files is device_json.c's job; this file never touches JSON text. */
#include "hw.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define FM_COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- precisions ---- */

static const char *const precision_names[] = {
    [FM_PREC_FP64] = "fp64", [FM_PREC_FP32] = "fp32", [FM_PREC_TF32] = "tf32",
    [FM_PREC_FP16] = "fp16", [FM_PREC_BF16] = "bf16", [FM_PREC_FP8] = "fp8",
    [FM_PREC_INT8] = "int8",
};
_Static_assert(FM_COUNT_OF(precision_names) == FM_PREC_COUNT,
               "precision_names must cover enum fm_precision");

const char *fm_precision_name(enum fm_precision p)
{
    return (unsigned)p < FM_PREC_COUNT ? precision_names[p] : "?";
}

bool fm_precision_parse(const char *s, enum fm_precision *out)
{
    static const struct {
        const char *alias;
        enum fm_precision p;
    } aliases[] = {
        {"float64", FM_PREC_FP64}, {"double", FM_PREC_FP64},   {"float32", FM_PREC_FP32},
        {"float", FM_PREC_FP32},   {"single", FM_PREC_FP32},   {"float16", FM_PREC_FP16},
        {"half", FM_PREC_FP16},    {"bfloat16", FM_PREC_BF16}, {"e4m3", FM_PREC_FP8},
    };
    if (!s)
        return false;
    for (int i = 0; i < FM_PREC_COUNT; i++) {
        if (strcasecmp(s, precision_names[i]) == 0) {
            *out = (enum fm_precision)i;
            return true;
        }
    }
    for (size_t i = 0; i < FM_COUNT_OF(aliases); i++) {
        if (strcasecmp(s, aliases[i].alias) == 0) {
            *out = aliases[i].p;
            return true;
        }
    }
    return false;
}

bool fm_precision_tensor_class(enum fm_class cls)
{
    return cls == FM_CLASS_CONV || cls == FM_CLASS_MATMUL || cls == FM_CLASS_ATTENTION;
}

/* ---- ceilings ---- */

/* Which ceiling applies (DESIGN.md, "Precision"; reference/devices.md):
 *  - conv, matmul and attention use the matrix units of that precision when the device has
 *    them (fp64 too: A100/H100 run DGEMM on fp64 tensor cores);
 *  - otherwise the vector units of that precision (P100 runs fp16 at twice its fp32 rate);
 *  - tf32 exists only on matrix units: elsewhere it is fp32 arithmetic;
 *  - fp16 and bf16 without a vector figure run at the fp32 vector rate: frameworks compute
 *    reduced-precision elementwise ops in fp32 ("opmath") and Kepler has no fp16 math;
 *  - fp8 and int8 are matrix-unit formats: a conv/matmul without such units has no ceiling
 *    (0: the caller reports it), and every other op computes in fp32 on the vector units. */
double fm_device_ceiling(const struct fm_device *dev, enum fm_class cls, enum fm_precision prec,
                         enum fm_precision *applied, bool *tensor)
{
    enum fm_precision used = prec;
    bool on_tensor = false;
    double peak = 0.0;
    if (dev && (unsigned)prec < FM_PREC_COUNT) {
        bool matrix_op = fm_precision_tensor_class(cls);
        if (matrix_op && dev->peak_tensor[prec] > 0) {
            peak = dev->peak_tensor[prec];
            on_tensor = true;
        } else {
            switch (prec) {
            case FM_PREC_FP64:
                break;
            case FM_PREC_TF32:
                used = FM_PREC_FP32;
                break;
            case FM_PREC_FP16:
            case FM_PREC_BF16:
                if (!(dev->peak_vector[prec] > 0))
                    used = FM_PREC_FP32;
                break;
            case FM_PREC_FP8:
            case FM_PREC_INT8:
                if (!matrix_op)
                    used = FM_PREC_FP32;
                break;
            default:
                break;
            }
            peak = dev->peak_vector[used];
        }
    }
    if (applied)
        *applied = used;
    if (tensor)
        *tensor = on_tensor;
    return peak;
}

double fm_device_peak(const struct fm_device *dev, enum fm_class cls, enum fm_precision prec)
{
    return fm_device_ceiling(dev, cls, prec, NULL, NULL);
}

/* The ridge point of Williams, Waterman and Patterson's roofline: the intensity at which the
 * memory slope (intensity x bandwidth) meets the flat compute roof. */
double fm_device_ridge(const struct fm_device *dev, enum fm_class cls, enum fm_precision prec)
{
    double peak = fm_device_peak(dev, cls, prec);
    if (peak <= 0 || !dev || dev->mem_bw <= 0)
        return 0.0;
    return peak / dev->mem_bw;
}

bool fm_device_has_tensor(const struct fm_device *dev)
{
    for (int p = 0; p < FM_PREC_COUNT; p++) {
        if (dev->peak_tensor[p] > 0)
            return true;
    }
    return false;
}

/* ---- unverified-field keys ---- */

static const struct {
    unsigned bit;
    const char *name;
} devf_names[] = {
    {FM_DEVF_PEAK, "peak"},   {FM_DEVF_BANDWIDTH, "bandwidth"}, {FM_DEVF_MEMORY, "memory"},
    {FM_DEVF_L2, "l2"},       {FM_DEVF_CLOCK, "clock"},         {FM_DEVF_TDP, "tdp"},
    {FM_DEVF_UNITS, "units"}, {FM_DEVF_INTERCONNECT, "interconnect"},
};

const char *fm_hw_devf_name(unsigned bit)
{
    for (size_t i = 0; i < FM_COUNT_OF(devf_names); i++) {
        if (devf_names[i].bit == bit)
            return devf_names[i].name;
    }
    return NULL;
}

bool fm_hw_devf_parse(const char *s, unsigned *bit)
{
    for (size_t i = 0; i < FM_COUNT_OF(devf_names); i++) {
        if (strcasecmp(s, devf_names[i].name) == 0) {
            *bit = devf_names[i].bit;
            return true;
        }
    }
    return false;
}

/* ---- links ---- */

const struct fm_link *fm_link_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < fm_link_count(); i++) {
        const struct fm_link *l = fm_link_get(i);
        if (strcasecmp(l->name, name) == 0)
            return l;
    }
    return NULL;
}

/* ---- the table ---- */

static const char *arena_dup(struct fm_arena *arena, const char *s, bool *nomem)
{
    if (!s)
        return NULL;
    char *d = fm_arena_strdup(arena, s);
    if (!d)
        *nomem = true;
    return d;
}

enum fm_status fm_hw_copy(struct fm_arena *arena, const struct fm_device *src, const char *origin,
                          struct fm_device *out)
{
    bool nomem = false;
    struct fm_device d = *src;
    d.name = arena_dup(arena, src->name, &nomem);
    d.aliases = arena_dup(arena, src->aliases, &nomem);
    d.kind = arena_dup(arena, src->kind, &nomem);
    d.arch = arena_dup(arena, src->arch, &nomem);
    d.interconnect = arena_dup(arena, src->interconnect, &nomem);
    d.source = arena_dup(arena, src->source, &nomem);
    d.origin = arena_dup(arena, origin ? origin : src->origin, &nomem);
    if (nomem)
        return FM_ERR_NOMEM;
    *out = d;
    return FM_OK;
}

/* Whether name equals one of the comma-separated aliases (case-insensitive, spaces trimmed). */
static bool alias_match(const char *aliases, const char *name)
{
    size_t nl = strlen(name);
    const char *p = aliases;
    while (p && *p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len && p[len - 1] == ' ')
            len--;
        if (len && len == nl && strncasecmp(p, name, len) == 0)
            return true;
        p = end;
    }
    return false;
}

long fm_hw_lookup(const struct fm_devices *devs, const char *name)
{
    for (size_t i = 0; i < devs->n; i++) {
        if (strcasecmp(devs->items[i].name, name) == 0)
            return (long)i;
    }
    for (size_t i = 0; i < devs->n; i++) {
        if (devs->items[i].aliases && alias_match(devs->items[i].aliases, name))
            return (long)i;
    }
    return -1;
}

enum fm_status fm_hw_put(struct fm_devices *devs, long at, const struct fm_device *dev)
{
    if (at >= 0) {
        devs->items[at] = *dev;
        return FM_OK;
    }
    enum fm_status st = fm_grow(devs->ctx, (void **)&devs->items, &devs->cap, devs->n + 1,
                                sizeof(*devs->items));
    if (st)
        return st;
    devs->items[devs->n++] = *dev;
    return FM_OK;
}

enum fm_status fm_devices_builtin(struct fm_ctx *ctx, struct fm_devices **out)
{
    *out = NULL;
    struct fm_devices *devs = fm_alloc(ctx, sizeof(*devs));
    if (!devs)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory for the device table");
    devs->ctx = ctx;
    fm_arena_init(&devs->arena, ctx);
    size_t n = fm_hw_builtin_count();
    enum fm_status st = fm_grow(ctx, (void **)&devs->items, &devs->cap, n, sizeof(*devs->items));
    if (st) {
        fm_devices_free(devs);
        return fm_error(ctx, st, "out of memory for the device table");
    }
    for (size_t i = 0; i < n; i++) {
        devs->items[i] = *fm_hw_builtin(i);
        devs->items[i].origin = "built-in";
    }
    devs->n = n;
    *out = devs;
    return FM_OK;
}

static bool file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

enum fm_status fm_devices_load(struct fm_ctx *ctx, const char *user_file, struct fm_devices **out)
{
    struct fm_devices *devs = NULL;
    enum fm_status st = fm_devices_builtin(ctx, &devs);
    if (st)
        return st;
    /* $FLOPMETER_DEVICES names a file the user asked for: it must exist. */
    const char *env = getenv("FLOPMETER_DEVICES");
    if (env && *env) {
        if (!file_exists(env)) {
            st = fm_error(ctx, FM_ERR_IO,
                          "FLOPMETER_DEVICES=%s: no such file (unset it or point it at a device "
                          "JSON file, see docs/devices.md)",
                          env);
            goto fail;
        }
        st = fm_devices_add_file(devs, env);
        if (st)
            goto fail;
    }
    /* The XDG config file is optional: read it only when it is there. */
    char path[4096];
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    path[0] = '\0';
    if (xdg && *xdg)
        snprintf(path, sizeof(path), "%s/flopmeter/devices.json", xdg);
    else if (home && *home)
        snprintf(path, sizeof(path), "%s/.config/flopmeter/devices.json", home);
    if (path[0] && file_exists(path)) {
        st = fm_devices_add_file(devs, path);
        if (st)
            goto fail;
    }
    if (user_file) {
        st = fm_devices_add_file(devs, user_file);
        if (st)
            goto fail;
    }
    *out = devs;
    return FM_OK;
fail:
    fm_devices_free(devs);
    *out = NULL;
    return st;
}

void fm_devices_free(struct fm_devices *devs)
{
    if (!devs)
        return;
    struct fm_ctx *ctx = devs->ctx;
    fm_arena_release(&devs->arena);
    fm_dealloc(ctx, devs->items);
    fm_dealloc(ctx, devs);
}

size_t fm_devices_count(const struct fm_devices *devs)
{
    return devs ? devs->n : 0;
}

const struct fm_device *fm_devices_get(const struct fm_devices *devs, size_t i)
{
    return devs && i < devs->n ? &devs->items[i] : NULL;
}

enum fm_status fm_devices_add(struct fm_devices *devs, const struct fm_device *dev)
{
    if (!dev || !dev->name || !*dev->name)
        return fm_error(devs->ctx, FM_ERR_INVALID, "a device needs a name");
    struct fm_device copy;
    if (fm_hw_copy(&devs->arena, dev, dev->origin ? dev->origin : "added", &copy))
        return fm_error(devs->ctx, FM_ERR_NOMEM, "out of memory adding device %s", dev->name);
    long at = fm_hw_lookup(devs, dev->name);
    if (at < 0 && dev->aliases) {
        /* any of its aliases naming an existing device replaces that device */
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", dev->aliases);
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && at < 0;
             tok = strtok_r(NULL, ",", &save)) {
            while (*tok == ' ')
                tok++;
            if (*tok)
                at = fm_hw_lookup(devs, tok);
        }
    }
    if (fm_hw_put(devs, at, &copy))
        return fm_error(devs->ctx, FM_ERR_NOMEM, "out of memory adding device %s", dev->name);
    return FM_OK;
}

/* ---- lookup with suggestions ---- */

/* The smallest distance from name to a device's name or any alias. */
static int device_distance(const struct fm_device *d, const char *name)
{
    int best = (int)fm_edit_distance(d->name, name);
    if (!d->aliases)
        return best;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", d->aliases);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int e = (int)fm_edit_distance(tok, name);
        if (e < best)
            best = e;
    }
    return best;
}

enum fm_status fm_devices_find(struct fm_ctx *ctx, const struct fm_devices *devs, const char *name,
                               const struct fm_device **out)
{
    if (!name || !*name)
        return fm_error(ctx, FM_ERR_INVALID, "no device name given (see flopmeter devices)");
    long at = fm_hw_lookup(devs, name);
    if (at >= 0) {
        *out = &devs->items[at];
        return FM_OK;
    }
    /* the three nearest entries, by their nearest name or alias */
    size_t best[3] = {0, 0, 0};
    int dist[3] = {1 << 30, 1 << 30, 1 << 30};
    for (size_t i = 0; i < devs->n; i++) {
        int d = device_distance(&devs->items[i], name);
        for (int k = 0; k < 3; k++) {
            if (d < dist[k]) {
                for (int m = 2; m > k; m--) {
                    dist[m] = dist[m - 1];
                    best[m] = best[m - 1];
                }
                dist[k] = d;
                best[k] = i;
                break;
            }
        }
    }
    char hint[512] = "";
    int len = 0;
    for (int k = 0; k < 3 && (size_t)k < devs->n; k++) {
        const struct fm_device *d = &devs->items[best[k]];
        char first[64];
        snprintf(first, sizeof(first), "%s", d->aliases ? d->aliases : d->name);
        char *comma = strchr(first, ',');
        if (comma)
            *comma = '\0';
        len += snprintf(hint + len, sizeof(hint) - (size_t)len, "%s%s (%s)", k ? ", " : "", first,
                        d->name);
        if (len >= (int)sizeof(hint))
            break;
    }
    return fm_error(ctx, FM_ERR_NOT_FOUND,
                    "unknown device '%s'; nearest: %s (flopmeter devices lists them all, "
                    "--devices FILE adds your own)",
                    name, hint);
}
