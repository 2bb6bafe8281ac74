/* The context: allocator, last error message and log sink. Every other part of the library
 * reaches memory and reports failures through it; nothing here is global. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const status_names[] = {
    [FM_OK] = "ok",
    [FM_ERR_NOMEM] = "out of memory",
    [FM_ERR_INVALID] = "invalid argument",
    [FM_ERR_GRAPH] = "malformed graph",
    [FM_ERR_SHAPE] = "shape error",
    [FM_ERR_OVERFLOW] = "count overflow",
    [FM_ERR_UNSUPPORTED] = "unsupported",
    [FM_ERR_NOT_FOUND] = "not found",
    [FM_ERR_IO] = "i/o error",
    [FM_ERR_PARSE] = "parse error",
    [FM_ERR_BACKEND] = "backend error",
    [FM_ERR_DEVICE] = "device error",
};
_Static_assert(sizeof(status_names) / sizeof(status_names[0]) == FM_STATUS_COUNT,
               "status_names must name every enum fm_status");

const char *fm_status_to_string(enum fm_status status)
{
    if ((unsigned)status >= FM_STATUS_COUNT)
        return "unknown status";
    return status_names[status];
}

/* the numbers spelled as the string, so that the two cannot drift apart */
#define FM_STR2_(x) #x
#define FM_STR_(x) FM_STR2_(x)
_Static_assert(sizeof(FM_VERSION) == sizeof(FM_STR_(FM_VERSION_MAJOR) "." FM_STR_(FM_VERSION_MINOR)
                                              "." FM_STR_(FM_VERSION_PATCH)),
               "FM_VERSION must be FM_VERSION_MAJOR.FM_VERSION_MINOR.FM_VERSION_PATCH");

const char *fm_version(void)
{
    return FM_STR_(FM_VERSION_MAJOR) "." FM_STR_(FM_VERSION_MINOR) "." FM_STR_(FM_VERSION_PATCH);
}

static void *default_malloc(size_t size, void *user)
{
    (void)user;
    return malloc(size);
}
static void *default_realloc(void *ptr, size_t size, void *user)
{
    (void)user;
    return realloc(ptr, size);
}
static void default_free(void *ptr, void *user)
{
    (void)user;
    free(ptr);
}

enum fm_status fm_ctx_new(const struct fm_allocator *alloc, struct fm_ctx **out)
{
    struct fm_allocator a = {default_malloc, default_realloc, default_free, NULL};
    if (alloc)
        a = *alloc;
    *out = NULL;
    if (!a.malloc_fn || !a.realloc_fn || !a.free_fn)
        return FM_ERR_INVALID;
    struct fm_ctx *ctx = a.malloc_fn(sizeof(*ctx), a.user);
    if (!ctx)
        return FM_ERR_NOMEM;
    memset(ctx, 0, sizeof(*ctx));
    ctx->alloc = a;
    *out = ctx;
    return FM_OK;
}

void fm_ctx_free(struct fm_ctx *ctx)
{
    if (!ctx)
        return;
    ctx->alloc.free_fn(ctx, ctx->alloc.user);
}

const char *fm_ctx_error(const struct fm_ctx *ctx)
{
    return ctx ? ctx->errmsg : "no context";
}

enum fm_status fm_errorv(struct fm_ctx *ctx, enum fm_status status, const char *fmt, va_list ap)
{
    if (ctx)
        vsnprintf(ctx->errmsg, sizeof(ctx->errmsg), fmt, ap);
    return status;
}

enum fm_status fm_error(struct fm_ctx *ctx, enum fm_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fm_errorv(ctx, status, fmt, ap);
    va_end(ap);
    return status;
}

void fm_ctx_set_log(struct fm_ctx *ctx, fm_log_fn fn, void *user)
{
    ctx->log_fn = fn;
    ctx->log_user = user;
}

void fm_log(struct fm_ctx *ctx, const char *fmt, ...)
{
    if (!ctx || !ctx->log_fn)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    ctx->log_fn(ctx->log_user, buf);
}

void *fm_alloc(struct fm_ctx *ctx, size_t size)
{
    if (size == 0)
        size = 1;
    void *p = ctx->alloc.malloc_fn(size, ctx->alloc.user);
    if (p)
        memset(p, 0, size);
    return p;
}

void *fm_realloc(struct fm_ctx *ctx, void *ptr, size_t size)
{
    if (size == 0)
        size = 1;
    if (!ptr)
        return ctx->alloc.malloc_fn(size, ctx->alloc.user);
    return ctx->alloc.realloc_fn(ptr, size, ctx->alloc.user);
}

void fm_dealloc(struct fm_ctx *ctx, void *ptr)
{
    if (ptr)
        ctx->alloc.free_fn(ptr, ctx->alloc.user);
}

char *fm_strdup(struct fm_ctx *ctx, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = fm_alloc(ctx, n);
    if (d)
        memcpy(d, s, n);
    return d;
}

enum fm_status fm_grow(struct fm_ctx *ctx, void **items, size_t *cap, size_t need, size_t elem_size)
{
    if (need <= *cap)
        return FM_OK;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return fm_error(ctx, FM_ERR_NOMEM, "array of %zu elements is too large", need);
        ncap *= 2;
    }
    size_t bytes;
    if (__builtin_mul_overflow(ncap, elem_size, &bytes))
        return fm_error(ctx, FM_ERR_NOMEM, "array of %zu elements is too large", need);
    void *p = fm_realloc(ctx, *items, bytes);
    if (!p)
        return fm_error(ctx, FM_ERR_NOMEM, "out of memory growing an array to %zu elements", need);
    memset((char *)p + *cap * elem_size, 0, (ncap - *cap) * elem_size);
    *items = p;
    *cap = ncap;
    return FM_OK;
}
