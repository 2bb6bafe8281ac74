/* The streaming JSON writer (see jsonw.h). It trusts its caller to nest correctly; it does
 * not build a tree, so output of any size streams in constant memory. */
#include "jsonw.h"

#include <math.h>

void fm_jw_init(struct fm_jw *w, FILE *f)
{
    w->f = f;
    w->depth = 0;
    w->first[0] = true;
    w->compact[0] = false;
}

static void indent(struct fm_jw *w)
{
    fputc('\n', w->f);
    for (int i = 0; i < w->depth; i++)
        fputs("  ", w->f);
}

static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* Separator, newline/indent and key before a value. */
static void prefix(struct fm_jw *w, const char *key)
{
    if (w->depth > 0) {
        if (!w->first[w->depth])
            fputc(',', w->f);
        if (w->compact[w->depth]) {
            if (!w->first[w->depth])
                fputc(' ', w->f);
        } else {
            indent(w);
        }
        w->first[w->depth] = false;
    }
    if (key) {
        put_string(w->f, key);
        fputs(": ", w->f);
    }
}

static void open_container(struct fm_jw *w, const char *key, bool compact, char c)
{
    prefix(w, key);
    fputc(c, w->f);
    if (w->depth + 1 < FM_JW_MAX_DEPTH)
        w->depth++;
    w->first[w->depth] = true;
    w->compact[w->depth] = compact || w->compact[w->depth - 1];
    w->close[w->depth] = c == '{' ? '}' : ']';
}

void fm_jw_object(struct fm_jw *w, const char *key, bool compact) { open_container(w, key, compact, '{'); }
void fm_jw_array(struct fm_jw *w, const char *key, bool compact) { open_container(w, key, compact, '['); }

void fm_jw_end(struct fm_jw *w)
{
    bool was_empty = w->first[w->depth];
    bool compact = w->compact[w->depth];
    char c = w->close[w->depth];
    if (w->depth > 0)
        w->depth--;
    if (!was_empty && !compact)
        indent(w);
    fputc(c, w->f);
}

void fm_jw_u64(struct fm_jw *w, const char *key, uint64_t v)
{
    prefix(w, key);
    fprintf(w->f, "%llu", (unsigned long long)v);
}

void fm_jw_i64(struct fm_jw *w, const char *key, int64_t v)
{
    prefix(w, key);
    fprintf(w->f, "%lld", (long long)v);
}

void fm_jw_double(struct fm_jw *w, const char *key, double v)
{
    prefix(w, key);
    if (!isfinite(v))
        fputs("null", w->f);
    else
        fprintf(w->f, "%.17g", v);
}

void fm_jw_string(struct fm_jw *w, const char *key, const char *v)
{
    prefix(w, key);
    if (v)
        put_string(w->f, v);
    else
        fputs("null", w->f);
}

void fm_jw_bool(struct fm_jw *w, const char *key, bool v)
{
    prefix(w, key);
    fputs(v ? "true" : "false", w->f);
}

void fm_jw_null(struct fm_jw *w, const char *key)
{
    prefix(w, key);
    fputs("null", w->f);
}

void fm_jw_finish(struct fm_jw *w)
{
    fputc('\n', w->f);
}
