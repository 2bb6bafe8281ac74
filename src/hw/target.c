/* Where a real run goes: the device strings of measure and probe ("cpu", "cuda", "cuda:N",
 * "gpu"), parsed once here for the driver, the backends, the probes and the session. A device
 * string names hardware to run on; a device-table name (devices.c) names figures to predict
 * with. */
#include "hw.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const kind_names[] = {[FM_TARGET_CPU] = "cpu", [FM_TARGET_CUDA] = "cuda"};
_Static_assert(sizeof(kind_names) / sizeof(kind_names[0]) == FM_TARGET_COUNT,
               "kind_names must name every enum fm_target_kind");

const char *fm_target_kind_name(enum fm_target_kind kind)
{
    return (unsigned)kind < FM_TARGET_COUNT ? kind_names[kind] : "?";
}

enum fm_status fm_target_parse(struct fm_ctx *ctx, const char *text, struct fm_target *out)
{
    struct fm_target t = {FM_TARGET_CPU, 0};
    if (!text || strcasecmp(text, "cpu") == 0) {
        *out = t;
        return FM_OK;
    }
    t.kind = FM_TARGET_CUDA;
    if (strcasecmp(text, "cuda") == 0 || strcasecmp(text, "gpu") == 0) {
        *out = t;
        return FM_OK;
    }
    if (strncasecmp(text, "cuda:", 5) == 0 || strncasecmp(text, "gpu:", 4) == 0) {
        const char *num = strchr(text, ':') + 1;
        char *end = NULL;
        long v = *num >= '0' && *num <= '9' ? strtol(num, &end, 10) : -1;
        if (end && *end == '\0' && v >= 0 && v < 1024) {
            t.ordinal = (int)v;
            *out = t;
            return FM_OK;
        }
        return fm_error(ctx, FM_ERR_INVALID, "bad CUDA device '%s': use cuda or cuda:N (N = 0, "
                        "1, ...)", text);
    }
    return fm_error(ctx, FM_ERR_NOT_FOUND, "'%s' is not a device to run on: use cpu, cuda or "
                    "cuda:N", text);
}
