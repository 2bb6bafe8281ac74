/* Reading a whole text file into memory through the context's allocator, for the readers of
 * JSON files (device files in src/hw, calibration files in src/analysis): one loop, one size
 * limit and the same messages for every kind of file. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifdef FM_HAVE_CJSON
#include <cjson/cJSON.h>

const char *fm_json_type_name(const void *cjson_item)
{
    const cJSON *v = cjson_item;
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsBool(v))
        return "true/false";
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsArray(v))
        return "an array";
    if (cJSON_IsObject(v))
        return "an object";
    return "something else";
}
#endif

enum fm_status fm_read_text(struct fm_ctx *ctx, const char *path, const char *what,
                            size_t max_mb, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return fm_error(ctx, FM_ERR_IO, "cannot read %s %s: %s", what, path, strerror(errno));
    enum fm_status st = FM_OK;
    size_t cap = 4096, n = 0;
    char *buf = fm_alloc(ctx, cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
        if (n > (max_mb << 20)) {
            st = fm_error(ctx, FM_ERR_PARSE, "%s: larger than %zu MB; not a %s", path, max_mb,
                          what);
            goto out;
        }
        if (cap - n < 2) {
            char *nb = fm_realloc(ctx, buf, cap * 2);
            if (!nb)
                break;
            buf = nb;
            cap *= 2;
        }
    }
    if (!buf || (cap - n < 2 && !feof(f))) {
        st = fm_error(ctx, FM_ERR_NOMEM, "out of memory reading %s", path);
        goto out;
    }
    if (ferror(f)) {
        st = fm_error(ctx, FM_ERR_IO, "error reading %s", path);
        goto out;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    buf = NULL;
out:
    fm_dealloc(ctx, buf);
    fclose(f);
    return st;
}
