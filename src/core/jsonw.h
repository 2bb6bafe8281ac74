/* A minimal streaming JSON writer: exact 64-bit integers (cJSON stores numbers as doubles, which
 * cannot hold every count), escaped strings, two-space indentation. It lives in core because
 * both device files (src/hw) and every report (src/report) write JSON with it; it reads no
 * JSON (cJSON does that, in src/hw/device_json.c). */
#ifndef FM_JSONW_H
#define FM_JSONW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define FM_JW_MAX_DEPTH 32

struct fm_jw {
    FILE *f;
    int depth;
    bool first[FM_JW_MAX_DEPTH];
    bool compact[FM_JW_MAX_DEPTH];   /* this container is written on one line */
    char close[FM_JW_MAX_DEPTH];     /* '}' or ']' */
};

void fm_jw_init(struct fm_jw *w, FILE *f);
/* key is NULL inside arrays and at the top level. compact writes the container on one line. */
void fm_jw_object(struct fm_jw *w, const char *key, bool compact);
void fm_jw_array(struct fm_jw *w, const char *key, bool compact);
void fm_jw_end(struct fm_jw *w);   /* closes the innermost container */
void fm_jw_u64(struct fm_jw *w, const char *key, uint64_t v);
void fm_jw_i64(struct fm_jw *w, const char *key, int64_t v);
void fm_jw_double(struct fm_jw *w, const char *key, double v);   /* NaN/inf -> null */
void fm_jw_string(struct fm_jw *w, const char *key, const char *v); /* NULL -> null */
void fm_jw_bool(struct fm_jw *w, const char *key, bool v);
void fm_jw_null(struct fm_jw *w, const char *key);
/* Ends the document with a newline. */
void fm_jw_finish(struct fm_jw *w);

#endif
