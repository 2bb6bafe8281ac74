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
        return fm_error(ctx, FM_ERR_NOT_FOUND, "'%s' is not in the device table (flopmeter devices "
                        "lists it; fm_session_opts.devices_file FILE adds an entry)",
                        gpu_name ? gpu_name : "");
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
                    "fm_session_opts.devices_file FILE adds your own)",
                    name, hint);
}

/* The stem of a name: its first word ("a100" of "a100-40gb", "h100" of "H100 PCIe 80GB"). */
static void stem(const char *s, char *out, size_t size)
{
    size_t n = 0;
    while (*s == ' ')
        s++;
    while (*s && *s != '-' && *s != ' ' && *s != ',' && n + 1 < size)
        out[n++] = (char)(*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s), s++;
    out[n] = '\0';
}

/* The first name of d that has stem st: an alias, else its name. */
static bool stem_name(const struct fm_device *d, const char *st, char *out, size_t size)
{
    char buf[256], w[64];
    snprintf(buf, sizeof(buf), "%s", d->aliases ? d->aliases : "");
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        stem(tok, w, sizeof(w));
        if (strcmp(w, st) == 0) {
            snprintf(out, size, "%s", tok);
            return true;
        }
    }
    stem(d->name, w, sizeof(w));
    if (strcmp(w, st) != 0)
        return false;
    snprintf(out, size, "'%s'", d->name);
    return true;
}

void fm_device_name_note(const struct fm_devices *devs, const char *query,
                         const struct fm_device *dev, char *note, size_t size,
                         double *named_mem_bytes)
{
    note[0] = '\0';
    *named_mem_bytes = 0;
    if (!query || !dev)
        return;
    size_t len = 0;
    /* a short name several entries share a stem with: say which one it is, and the others */
    char st[64];
    stem(query, st, sizeof(st));
    bool short_name = strchr(query, ' ') == NULL && strchr(query, '-') == NULL;
    if (short_name && fm_hw_lookup(devs, query) >= 0) {
        for (size_t i = 0; i < devs->n && len < size; i++) {
            const struct fm_device *d = &devs->items[i];
            char other[96];
            if (d == dev || !stem_name(d, st, other, sizeof(other)))
                continue;
            len += (size_t)snprintf(note + len, size - len, "%s%s (%s)",
                                    len ? ", " : "", other, d->name);
        }
        if (len) {
            char list[512];
            snprintf(list, sizeof(list), "%s", note);
            snprintf(note, size, "'%s' is the %s; the table also has %s: name one of those to "
                     "use it", query, dev->name, list);
            len = strlen(note);
        }
    }
    /* a part of a board ("K80 (one die)") taken for a name that does not spell it out: a
     * dual-GPU board shows as two devices to nvidia-smi and PyTorch, so the name means one of
     * them; say so, and name the whole board */
    if (!short_name || len == 0) {
        for (size_t i = 0; i < devs->n && len < size; i++) {
            const struct fm_device *d = &devs->items[i];
            size_t n = strlen(d->name);
            if (d == dev || strncmp(dev->name, d->name, n) != 0 || dev->name[n] != ' ' ||
                strstr(query, "die") != NULL)
                continue;
            char board[64];
            snprintf(board, sizeof(board), "%s", d->aliases ? d->aliases : d->name);
            char *comma = strchr(board, ',');
            if (comma)
                *comma = '\0';
            len += (size_t)snprintf(note + len, size - len,
                                    "%s'%s' is the %s, the device nvidia-smi and PyTorch list "
                                    "(each %s board shows as two); fm_session_opts.device %s takes "
                                    "the whole board",
                                    len ? "; " : "", query, dev->name, d->name, board);
            break;
        }
    }
    /* a GPU's own name that fits two entries equally well: the first one is taken, say so */
    if (fm_hw_lookup(devs, query) < 0) {
        int best = fm_hw_match_score(dev, query);
        for (size_t i = 0; best > 0 && i < devs->n && len < size; i++) {
            const struct fm_device *d = &devs->items[i];
            if (d != dev && fm_hw_match_score(d, query) == best) {
                len += (size_t)snprintf(note + len, size - len,
                                        "%s'%s' fits the %s and the %s equally well: the %s is "
                                        "taken (fm_session_opts.device with the other's name picks "
                                        "it)",
                                        len ? "; " : "", query, dev->name, d->name, dev->name);
                break;
            }
        }
    }
    /* a GPU's own name that states its memory ("Tesla V100-SXM2-16GB") when the entry that
     * fits its name has another size: the figures are the entry's, the memory the name's */
    const char *p = query;
    while (*p) {
        while (*p && !(*p >= '0' && *p <= '9'))
            p++;
        const char *start = p;
        double v = 0;
        while (*p >= '0' && *p <= '9')
            v = v * 10 + (*p++ - '0');
        if (p > start && (p[0] == 'G' || p[0] == 'g') && (p[1] == 'B' || p[1] == 'b') &&
            !((p[2] >= 'a' && p[2] <= 'z') || (p[2] >= 'A' && p[2] <= 'Z'))) {
            double bytes = v * 1e9;
            if (dev->mem_bytes > 0 &&
                (bytes < 0.97 * dev->mem_bytes || bytes > 1.03 * dev->mem_bytes)) {
                *named_mem_bytes = bytes;
                len += (size_t)snprintf(note + len, len < size ? size - len : 0,
                                        "%s'%s' is the %s with %.0f GB of memory, as its name "
                                        "says (the table's entry has %.0f GB; its other figures "
                                        "apply)",
                                        len ? "; " : "", query, dev->name, v,
                                        dev->mem_bytes / 1e9);
            }
            break;
        }
        while (*p && !(*p >= '0' && *p <= '9'))
            p++;
    }
}
