/* Internal to src/hw: the built-in table and the pieces the device files share. Nothing here is
 * public API. */
#ifndef FM_HW_H
#define FM_HW_H

#include "../core/internal.h"

size_t fm_hw_builtin_count(void);
const struct fm_device *fm_hw_builtin(size_t i);


/* Copies a device with its strings into arena (origin set to origin). */
enum fm_status fm_hw_copy(struct fm_arena *arena, const struct fm_device *src, const char *origin,
                          struct fm_device *out);

struct fm_devices {
    struct fm_ctx *ctx;
    struct fm_arena arena;           /* strings of added entries */
    struct fm_device *items;
    size_t n, cap;
};

/* How many words of the best-fitting name or alias of d occur in name, 0 when none fits
 * (device_match.c). */
int fm_hw_match_score(const struct fm_device *d, const char *name);

/* Index of the device whose name or an alias equals name (case-insensitive), or -1. */
long fm_hw_lookup(const struct fm_devices *devs, const char *name);
/* Puts dev (already owned by devs->arena) in place of entry `at`, or appends it when at < 0. */
enum fm_status fm_hw_put(struct fm_devices *devs, long at, const struct fm_device *dev);

#endif
