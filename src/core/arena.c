/* A bump allocator for graph metadata (names, id lists, integer constants). Everything it hands
 * out lives until the graph is freed; nothing is freed one by one. */
#include "internal.h"

#include <string.h>

#define FM_ARENA_CHUNK (64 * 1024)

struct fm_arena_chunk {
    struct fm_arena_chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

void fm_arena_init(struct fm_arena *arena, struct fm_ctx *ctx)
{
    arena->ctx = ctx;
    arena->head = NULL;
}

void fm_arena_release(struct fm_arena *arena)
{
    struct fm_arena_chunk *c = arena->head;
    while (c) {
        struct fm_arena_chunk *next = c->next;
        fm_dealloc(arena->ctx, c);
        c = next;
    }
    arena->head = NULL;
}

void *fm_arena_alloc(struct fm_arena *arena, size_t size)
{
    size_t need = (size + 15) & ~(size_t)15;
    if (need < size)
        return NULL;
    struct fm_arena_chunk *c = arena->head;
    if (!c || c->size - c->used < need) {
        size_t csize = need > FM_ARENA_CHUNK ? need : FM_ARENA_CHUNK;
        if (csize > SIZE_MAX - sizeof(*c))
            return NULL;
        c = fm_alloc(arena->ctx, sizeof(*c) + csize);
        if (!c)
            return NULL;
        c->size = csize;
        c->used = 0;
        c->next = arena->head;
        arena->head = c;
    }
    void *p = c->data + c->used;
    c->used += need;
    memset(p, 0, size);
    return p;
}

char *fm_arena_strdup(struct fm_arena *arena, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = fm_arena_alloc(arena, n);
    if (d)
        memcpy(d, s, n);
    return d;
}
