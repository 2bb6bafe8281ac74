/* The device table a program works with: entries (built-in or added), lookup by name or alias,
 * and finding a device the way people name it: a table name or alias, a GPU's own name as
 * nvidia-smi or torch.cuda.get_device_name() print it (matched by words, device_match.c), or
 * the nearest suggestions. Reading files is device_load.c's and device_json.c's job. */
#include "hw.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

enum fm_status fm_devices_match(struct fm_ctx *ctx, const struct fm_devices *devs,
                                const char *gpu_name, const struct fm_device **out)
{
    *out = NULL;
    int best = 0;
    for (size_t i = 0; i < devs->n; i++) {
        int score = fm_hw_match_score(&devs->items[i], gpu_name);
        if (score > best) {
            best = score;
            *out = &devs->items[i];
        }
    }
    if (!*out)
        return fm_error(ctx, FM_ERR_NOT_FOUND, "'%s' is not in the device table (flopmeter "
                        "devices lists it; --devices FILE adds an entry)", gpu_name ? gpu_name : "");
    return FM_OK;
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
    /* a name as the GPU gives it ("NVIDIA A100-SXM4-40GB"): every word of an entry's name or
     * alias in it */
    if (fm_devices_match(ctx, devs, name, out) == FM_OK)
        return FM_OK;
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
