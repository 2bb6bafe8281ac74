/* The JSON reader every file reader shares (json_read.h): parsing with cJSON, positions found
 * by walking the text alongside the parsed tree, and typed fields with one wording of every
 * refusal. It does not know any file's fields: the readers (src/hw/device_json.c,
 * src/analysis/calib_file.c, src/frontend/profile/trace.c) do. */
#include "json_read.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void fm_text_position(const char *text, size_t len, size_t off, size_t *line, size_t *col)
{
    size_t l = 1, c = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

#ifdef FM_HAVE_CJSON
#include <cjson/cJSON.h>

/* ---- positions: the text has parsed as JSON, so a scanner that skips strings and counts
 * brackets walks it safely, member by member and element by element as cJSON stored them ---- */

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

/* The value v starts at p: when target is v's member or element, or inside one, *found gets its
 * start. Returns the end of v's text. */
static const char *walk(const cJSON *v, const char *p, const char *end, const cJSON *target,
                        const char **found)
{
    bool object = cJSON_IsObject(v);
    if (!object && !cJSON_IsArray(v))
        return skip_value(p, end);
    p = skip_ws(p, end);
    if (p >= end)
        return end;
    p++;   /* past '{' or '[' */
    for (const cJSON *c = v->child; c && !*found; c = c->next) {
        p = skip_ws(p, end);
        const char *at = p;
        if (object) {
            p = skip_ws(skip_string(p, end), end);   /* the key, then ':' */
            p = skip_ws(p < end ? p + 1 : end, end);
        }
        if (c == target) {
            *found = at;
            break;
        }
        p = walk(c, p, end, target, found);
        p = skip_ws(p, end);
        if (p < end && *p == ',')
            p++;
    }
    return *found ? *found : skip_ws(p, end) < end ? skip_ws(p, end) + 1 : end;
}

static const char *root_start(const struct fm_json_doc *doc)
{
    const char *p = doc->text, *end = doc->text + doc->len;
    if (doc->len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
        p += 3;   /* cJSON skips a UTF-8 byte-order mark */
    return skip_ws(p, end);
}

void fm_json_position(const struct fm_json_doc *doc, const cJSON *item, size_t *line, size_t *col)
{
    const char *start = root_start(doc), *found = NULL;
    if (item && item != doc->root && doc->root)
        walk(doc->root, start, doc->text + doc->len, item, &found);
    fm_text_position(doc->text, doc->len, (size_t)((found ? found : start) - doc->text), line,
                     col);
}

enum fm_status fm_json_fail(const struct fm_json_doc *doc, const cJSON *item, const char *fmt,
                            ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    size_t line, col;
    fm_json_position(doc, item, &line, &col);
    bool where = doc->where && *doc->where;
    return fm_error(doc->ctx, FM_ERR_PARSE, "%s, line %zu, column %zu: %s%s%s", doc->path, line,
                    col, where ? doc->where : "", where ? ": " : "", what);
}

/* ---- parsing ---- */

enum fm_status fm_json_parse(struct fm_ctx *ctx, const char *path, const char *text, size_t len,
                             bool whole, const char *hint, struct fm_json_doc *doc)
{
    memset(doc, 0, sizeof(*doc));
    doc->ctx = ctx;
    doc->path = path;
    doc->text = text;
    doc->len = len;
    const char *end = NULL;
    doc->root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    const char *at = NULL;
    if (!doc->root) {
        /* cJSON stops where the text stops being JSON */
        at = end;
        if (!at) {
            const char *ep = cJSON_GetErrorPtr();
            at = ep && ep >= text && ep <= text + len ? ep : text;
        }
    } else if (whole) {
        /* text after the document (a second object, a stray brace) is an error, not ignored */
        const char *rest = skip_ws(end ? end : text + len, text + len);
        if (rest < text + len && *rest)
            at = rest;
    }
    if (!at)
        return FM_OK;
    if (at < text || at > text + len)
        at = text + len;
    fm_json_release(doc);
    size_t line, col;
    fm_text_position(text, len, (size_t)(at - text), &line, &col);
    return fm_error(ctx, FM_ERR_PARSE,
                    "%s, line %zu, column %zu: not valid JSON (the error is on or before this "
                    "point; a truncated file ends early); %s",
                    path, line, col, hint);
}

void fm_json_release(struct fm_json_doc *doc)
{
    cJSON_Delete(doc->root);
    doc->root = NULL;
}

/* ---- typed fields ---- */

enum fm_status fm_json_string(const struct fm_json_doc *doc, const cJSON *item, bool allow_empty,
                              const char **out)
{
    if (!cJSON_IsString(item))
        return fm_json_fail(doc, item, "field \"%s\" must be a string, got %s", item->string,
                            fm_json_type_name(item));
    if (!allow_empty && !*item->valuestring)
        return fm_json_fail(doc, item, "field \"%s\" must not be empty", item->string);
    *out = item->valuestring;
    return FM_OK;
}

enum fm_status fm_json_string_to(const struct fm_json_doc *doc, const cJSON *item,
                                 bool allow_empty, char *buf, size_t size)
{
    if (!cJSON_IsString(item))
        return fm_json_fail(doc, item, "field \"%s\" must be a string, got %s", item->string,
                            fm_json_type_name(item));
    size_t len = strlen(item->valuestring);
    if (len >= size)
        return fm_json_fail(doc, item, "field \"%s\" is %zu characters long; at most %zu fit",
                            item->string, len, size - 1);
    if (!len && !allow_empty)
        return fm_json_fail(doc, item, "field \"%s\" must not be empty", item->string);
    memcpy(buf, item->valuestring, len + 1);
    return FM_OK;
}

enum fm_status fm_json_number(const struct fm_json_doc *doc, const cJSON *item, const char *unit,
                              const char *below_zero, double *out)
{
    if (!cJSON_IsNumber(item))
        return fm_json_fail(doc, item, "field \"%s\" must be a number (%s), got %s", item->string,
                            unit, fm_json_type_name(item));
    double v = item->valuedouble;
    if (!isfinite(v) || v < 0)
        return fm_json_fail(doc, item, "field \"%s\" must be >= 0 (%s), got %g%s", item->string,
                            unit, v, v < 0 && below_zero ? below_zero : "");
    *out = v;
    return FM_OK;
}

enum fm_status fm_json_count(const struct fm_json_doc *doc, const cJSON *item, const char *unit,
                             int *out)
{
    if (!cJSON_IsNumber(item))
        return fm_json_fail(doc, item, "field \"%s\" must be a whole number >= 0 (%s), got %s",
                            item->string, unit, fm_json_type_name(item));
    double v = item->valuedouble;
    if (!(v >= 0) || v > INT_MAX || v != floor(v))
        return fm_json_fail(doc, item, "field \"%s\" must be a whole number >= 0 (%s), got %g",
                            item->string, unit, v);
    *out = (int)v;
    return FM_OK;
}

enum fm_status fm_json_bool(const struct fm_json_doc *doc, const cJSON *item, bool *out)
{
    if (!cJSON_IsBool(item))
        return fm_json_fail(doc, item, "field \"%s\" must be true or false, got %s", item->string,
                            fm_json_type_name(item));
    *out = cJSON_IsTrue(item);
    return FM_OK;
}

#endif
