/* A small RFC 4180 tokenizer for the CSV that Nsight Compute and Nsight Systems write, keeping
 * the line and column of every field so that a reader can say where a file is wrong; and the
 * numbers those tools print. It knows nothing of either tool's columns (ncu.c, nsys.c). */
#include "profile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void fm_csv_init(struct fm_csv *c, struct fm_ctx *ctx, const char *name, const char *data,
                 size_t len)
{
    c->ctx = ctx;
    c->name = name;
    c->p = data;
    c->end = data + len;
    c->line = 1;
    c->line_start = data;
    /* a UTF-8 byte-order mark (Windows builds of the tools write one) is not part of the text */
    if (len >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0) {
        c->p += 3;
        c->line_start = c->p;
    }
}

bool fm_csv_eof(const struct fm_csv *c)
{
    return c->p >= c->end;
}

const char *fm_csv_peek_line(const struct fm_csv *c, size_t *len)
{
    const char *q = c->p;
    while (q < c->end && *q != '\n')
        q++;
    *len = (size_t)(q - c->p);
    if (*len && q[-1] == '\r')
        (*len)--;
    return c->p;
}

void fm_csv_skip_line(struct fm_csv *c)
{
    while (c->p < c->end && *c->p != '\n')
        c->p++;
    if (c->p < c->end)
        c->p++;
    c->line++;
    c->line_start = c->p;
}

static enum fm_status put(struct fm_csv *c, struct fm_csv_rec *r, char ch)
{
    if (r->blen + 1 >= r->bcap) {
        enum fm_status st = fm_grow(c->ctx, (void **)&r->buf, &r->bcap, r->blen + 2, 1);
        if (st)
            return st;
    }
    r->buf[r->blen++] = ch;
    return FM_OK;
}

static int col_of(const struct fm_csv *c, const char *q)
{
    return (int)(q - c->line_start) + 1;
}

enum fm_status fm_csv_next(struct fm_csv *c, struct fm_csv_rec *r)
{
    enum fm_status st;
    r->n = 0;
    r->blen = 0;
    r->line = c->line;
    for (;;) {
        if (r->n == r->cap &&
            (st = fm_grow(c->ctx, (void **)&r->f, &r->cap, r->n + 1, sizeof(*r->f))))
            return st;
        struct fm_csv_field *f = &r->f[r->n++];
        f->off = r->blen;
        f->line = c->line;
        f->col = col_of(c, c->p);
        f->quoted = c->p < c->end && *c->p == '"';
        if (f->quoted) {
            c->p++;
            for (;;) {
                if (c->p >= c->end)
                    return fm_error(c->ctx, FM_ERR_PARSE,
                                    "%s:%d:%d: a quoted field opened here is never closed (the "
                                    "file is cut short?)",
                                    c->name, f->line, f->col);
                char ch = *c->p++;
                if (ch == '"') {
                    if (c->p < c->end && *c->p == '"') {
                        c->p++;
                    } else {
                        break;
                    }
                } else if (ch == '\n') {
                    c->line++;
                    c->line_start = c->p;
                }
                if ((st = put(c, r, ch)))
                    return st;
            }
            if (c->p < c->end && *c->p != ',' && *c->p != '\n' && *c->p != '\r')
                return fm_error(c->ctx, FM_ERR_PARSE,
                                "%s:%d:%d: text after the closing quote of a field (a quote "
                                "inside a field must be doubled)",
                                c->name, c->line, col_of(c, c->p));
        } else {
            while (c->p < c->end && *c->p != ',' && *c->p != '\n' &&
                   !(*c->p == '\r' && (c->p + 1 == c->end || c->p[1] == '\n'))) {
                if ((st = put(c, r, *c->p)))
                    return st;
                c->p++;
            }
        }
        f->len = r->blen - f->off;
        if ((st = put(c, r, '\0')))
            return st;
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        r->end_col = col_of(c, c->p);
        if (c->p < c->end && *c->p == '\r')
            c->p++;
        if (c->p < c->end && *c->p == '\n')
            c->p++;
        c->line++;
        c->line_start = c->p;
        return FM_OK;
    }
}

void fm_csv_rec_release(struct fm_ctx *ctx, struct fm_csv_rec *r)
{
    fm_dealloc(ctx, r->f);
    fm_dealloc(ctx, r->buf);
    memset(r, 0, sizeof(*r));
}

enum fm_prof_num_result fm_prof_number(const char *text, struct fm_prof_number *out)
{
    memset(out, 0, sizeof(*out));
    while (*text == ' ' || *text == '\t')
        text++;
    size_t n = strlen(text);
    while (n && (text[n - 1] == ' ' || text[n - 1] == '\t'))
        n--;
    if (n == 0 || (n == 3 && (strncmp(text, "n/a", 3) == 0 || strncmp(text, "N/A", 3) == 0)) ||
        (n == 1 && text[0] == '-'))
        return FM_NUM_MISSING;
    if (n > 120)
        return FM_NUM_BAD;
    /* copy without the separators, checking that every group after a comma has 3 digits */
    char buf[128];
    size_t k = 0, i = 0;
    bool neg = false;
    if (text[i] == '+' || text[i] == '-') {
        neg = text[i] == '-';
        buf[k++] = text[i++];
    }
    size_t digits = 0, group = 0;
    bool commas = false;
    for (; i < n && ((text[i] >= '0' && text[i] <= '9') || text[i] == ','); i++) {
        if (text[i] == ',') {
            if (digits == 0 || (commas && group != 3) || (!commas && group > 3))
                return FM_NUM_BAD;
            commas = true;
            group = 0;
            continue;
        }
        buf[k++] = text[i];
        digits++;
        group++;
    }
    if (commas && group != 3)
        return FM_NUM_BAD;
    bool frac_zero = true, has_exp = false;
    size_t frac_digits = 0;
    if (i < n && text[i] == '.') {
        buf[k++] = text[i++];
        for (; i < n && text[i] >= '0' && text[i] <= '9'; i++) {
            frac_zero = frac_zero && text[i] == '0';
            buf[k++] = text[i];
            frac_digits++;
        }
    }
    if (digits == 0 && frac_digits == 0)
        return FM_NUM_BAD;
    if (i < n && (text[i] == 'e' || text[i] == 'E')) {
        has_exp = true;
        buf[k++] = text[i++];
        if (i < n && (text[i] == '+' || text[i] == '-'))
            buf[k++] = text[i++];
        size_t e0 = i;
        for (; i < n && text[i] >= '0' && text[i] <= '9'; i++)
            buf[k++] = text[i];
        if (i == e0)
            return FM_NUM_BAD;
    }
    if (i != n)
        return FM_NUM_BAD;
    buf[k] = '\0';
    errno = 0;
    char *endp = NULL;
    double v = strtod(buf, &endp);
    if (!endp || *endp || !isfinite(v))
        return FM_NUM_BAD;
    out->value = v;
    if (!neg && !has_exp && frac_zero && digits > 0) {
        /* the integer part exactly, in 64 bits */
        uint64_t x = 0;
        bool ok = true;
        for (const char *q = buf + (buf[0] == '+'); *q && *q != '.'; q++)
            ok = ok && fm_mul_ok(x, 10, &x) && fm_add_ok(x, (uint64_t)(*q - '0'), &x);
        if (ok) {
            out->exact = true;
            out->count = x;
        }
    }
    if (neg && v == 0)
        out->value = 0;
    return FM_NUM_OK;
}
