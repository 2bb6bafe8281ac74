/* Internal to src/frontend/profile: the CSV tokenizer the Nsight readers share (RFC 4180 with
 * the line and column of every field, for messages) and the number format the Nsight tools
 * write ("1,234,567.00", "n/a"). Nothing here is API; the readers are declared in flopmeter.h. */
#ifndef FM_PROFILE_H
#define FM_PROFILE_H

#include "../../core/internal.h"

/* One field of a record: its text (unquoted, "" unescaped, NUL-terminated in the record's
 * buffer) and where it starts in the file. */
struct fm_csv_field {
    size_t off, len;
    int line, col;
    bool quoted;
};

/* A record, reused from one call of fm_csv_next to the next (free with fm_csv_rec_release). */
struct fm_csv_rec {
    struct fm_csv_field *f;
    size_t n, cap;
    char *buf;
    size_t blen, bcap;
    int line;          /* the line the record starts on */
    int end_col;       /* the column just past its last character */
};

struct fm_csv {
    struct fm_ctx *ctx;
    const char *name;  /* the file, for messages */
    const char *p, *end;
    int line;          /* 1-based line of p */
    const char *line_start;
};

void fm_csv_init(struct fm_csv *c, struct fm_ctx *ctx, const char *name, const char *data,
                 size_t len);
/* The text of the current line (up to its newline) without consuming it; *len its length. */
const char *fm_csv_peek_line(const struct fm_csv *c, size_t *len);
/* Skips the current line. */
void fm_csv_skip_line(struct fm_csv *c);
bool fm_csv_eof(const struct fm_csv *c);
/* Reads one record (one line, or more when a quoted field holds a newline). A quote opened and
 * never closed, or text after a closing quote, is FM_ERR_PARSE naming the line and column. */
enum fm_status fm_csv_next(struct fm_csv *c, struct fm_csv_rec *r);
static inline const char *fm_csv_str(const struct fm_csv_rec *r, size_t i)
{
    return r->buf + r->f[i].off;
}
void fm_csv_rec_release(struct fm_ctx *ctx, struct fm_csv_rec *r);

/* A number as Nsight tools print it: optional sign, digits with or without thousands
 * separators (groups of exactly three: "1,234,567"), an optional fraction and exponent. */
struct fm_prof_number {
    double value;
    uint64_t count;    /* the integer, when exact */
    bool exact;        /* a non-negative integer (a zero fraction allowed) that fits 64 bits */
};
enum fm_prof_num_result { FM_NUM_OK = 0, FM_NUM_MISSING, FM_NUM_BAD };
/* FM_NUM_MISSING for "", "n/a", "N/A", "-"; FM_NUM_BAD for anything else that is not a number
 * (a decimal comma such as "9,00" included: the groups would not be of three). */
enum fm_prof_num_result fm_prof_number(const char *text, struct fm_prof_number *out);

/* ---- shared by the Nsight Compute reader, the matching (src/analysis) and the report ---- */

/* dst += src, figure by figure (first: dst = src). A sum is known only when both are; it
 * stays exact while both are exact and it fits 64 bits. */
void fm_ncu_figures_add(struct fm_ncu_figures *dst, const struct fm_ncu_figures *src, bool first);
/* The counter's FLOPs: every precision's FP FLOPs, plus tensor FLOPs when an op counter gives
 * them. false when a precision is unknown. */
bool fm_ncu_counter_flops(const struct fm_ncu_figures *f, double *out);

#endif
