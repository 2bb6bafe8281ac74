/* The one reader of the JSON files flopmeter reads (device files, calibration files, profiler
 * traces): cJSON parses, and this says where an item is in the text (line and column: cJSON
 * keeps no positions) and checks typed fields, every refusal FM_ERR_PARSE naming the file, the
 * line:column, the part of the file being read and the field. Only files built with cJSON
 * include it; the header itself needs no cJSON. */
#ifndef FM_JSON_READ_H
#define FM_JSON_READ_H

#include "internal.h"

struct cJSON;

struct fm_json_doc {
    struct fm_ctx *ctx;
    const char *path;          /* names the file in messages */
    const char *text;          /* the text parsed (not owned) */
    size_t len;
    struct cJSON *root;        /* owned: fm_json_release */
    const char *where;         /* the part being read, for messages ("entries[2]"), or NULL */
};

/* Line and column (both from 1, the column in bytes) of offset off of text. */
void fm_text_position(const char *text, size_t len, size_t off, size_t *line, size_t *col);

/* Parses text[0..len) (it need not end with a NUL) into doc. whole: text after the value is an
 * error too. A syntax error is FM_ERR_PARSE "PATH, line L, column C: not valid JSON (the error
 * is on or before this point; a truncated file ends early); HINT", HINT saying what such a file
 * looks like; doc->root is then NULL. */
enum fm_status fm_json_parse(struct fm_ctx *ctx, const char *path, const char *text, size_t len,
                             bool whole, const char *hint, struct fm_json_doc *doc);
void fm_json_release(struct fm_json_doc *doc);

/* Where item of doc's tree starts: a member's key (its quote), an element's first character;
 * the document's value for NULL or an item not in the tree. */
void fm_json_position(const struct fm_json_doc *doc, const struct cJSON *item, size_t *line,
                      size_t *col);

/* FM_ERR_PARSE "PATH, line L, column C: WHERE: message" at item (NULL: the document). */
enum fm_status fm_json_fail(const struct fm_json_doc *doc, const struct cJSON *item,
                            const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Typed fields: item is a member of an object (its key names it in the messages). */
/* A string; *out points into the tree (valid until fm_json_release). */
enum fm_status fm_json_string(const struct fm_json_doc *doc, const struct cJSON *item,
                              bool allow_empty, const char **out);
/* A string copied into buf (size bytes with the NUL); longer is refused. */
enum fm_status fm_json_string_to(const struct fm_json_doc *doc, const struct cJSON *item,
                                 bool allow_empty, char *buf, size_t size);
/* A finite number >= 0 in unit; below_zero (or "") is added to the message of a negative. */
enum fm_status fm_json_number(const struct fm_json_doc *doc, const struct cJSON *item,
                              const char *unit, const char *below_zero, double *out);
/* A whole number in [0, INT_MAX]. */
enum fm_status fm_json_count(const struct fm_json_doc *doc, const struct cJSON *item,
                             const char *unit, int *out);
/* true or false. */
enum fm_status fm_json_bool(const struct fm_json_doc *doc, const struct cJSON *item, bool *out);

#endif
