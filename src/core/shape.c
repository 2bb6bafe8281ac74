/* Shapes: element counts (checked), formatting and parsing of "CxHxW" strings. Shape rules of
 * individual ops live with the ops (src/ops/). */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum fm_status fm_shape_numel(const struct fm_shape *shape, uint64_t *out)
{
    uint64_t n = 1;
    for (int i = 0; i < shape->rank; i++) {
        if (shape->dims[i] < 0)
            return FM_ERR_SHAPE;
        if (!fm_mul_ok(n, (uint64_t)shape->dims[i], &n))
            return FM_ERR_OVERFLOW;
    }
    *out = n;
    return FM_OK;
}

char *fm_shape_format(const struct fm_shape *shape, char *buf, size_t size)
{
    if (size == 0)
        return buf;
    buf[0] = '\0';
    if (shape->rank == 0) {
        snprintf(buf, size, "scalar");
        return buf;
    }
    size_t len = 0;
    for (int i = 0; i < shape->rank && len < size; i++) {
        int n = snprintf(buf + len, size - len, i ? "x%lld" : "%lld", (long long)shape->dims[i]);
        if (n < 0)
            break;
        len += (size_t)n;
    }
    return buf;
}

enum fm_status fm_shape_parse(struct fm_ctx *ctx, const char *text, struct fm_shape *out)
{
    struct fm_shape s = {0};
    const char *p = text;
    if (!text || !*text)
        return fm_error(ctx, FM_ERR_INVALID, "empty shape: expected dims like 3x224x224");
    for (;;) {
        if (s.rank == FM_MAX_DIMS)
            return fm_error(ctx, FM_ERR_INVALID, "shape '%s' has more than %d dims", text,
                            FM_MAX_DIMS);
        if (*p < '0' || *p > '9')
            return fm_error(ctx, FM_ERR_INVALID,
                            "shape '%s': expected a positive integer at '%s' (write dims like "
                            "3x224x224)",
                            text, p);
        errno = 0;
        char *end;
        long long v = strtoll(p, &end, 10);
        if (errno == ERANGE || v > ((int64_t)1 << 40))
            return fm_error(ctx, FM_ERR_INVALID, "shape '%s': dim %d is absurdly large", text,
                            s.rank);
        if (v <= 0)
            return fm_error(ctx, FM_ERR_INVALID, "shape '%s': dim %d must be positive", text,
                            s.rank);
        s.dims[s.rank++] = v;
        p = end;
        if (*p == '\0')
            break;
        if (*p != 'x' && *p != 'X' && *p != ',')
            return fm_error(ctx, FM_ERR_INVALID,
                            "shape '%s': unexpected '%c' (separate dims with 'x')", text, *p);
        p++;
    }
    uint64_t n;
    if (fm_shape_numel(&s, &n) != FM_OK)
        return fm_error(ctx, FM_ERR_OVERFLOW, "shape '%s' has too many elements to count", text);
    *out = s;
    return FM_OK;
}
