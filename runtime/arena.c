/* runtime/arena.c — tensor memory accounting. Every byte of tensor memory the
 * runtime holds is allocated here, so the high-water mark is the peak. */
#include "runtime/runtime-impl.h"

void *rt_arena_alloc(struct rt_arena *a, size_t bytes)
{
    if (a->budget_bytes && a->in_use_bytes + bytes > a->budget_bytes)
        return NULL;
    void *p = a->backend->alloc(a->backend->ctx, bytes);
    if (!p)
        return NULL;
    a->in_use_bytes += bytes;
    if (a->in_use_bytes > a->peak_bytes)
        a->peak_bytes = a->in_use_bytes;
    return p;
}

void rt_arena_free(struct rt_arena *a, void *ptr, size_t bytes)
{
    if (!ptr)
        return;
    a->backend->free(a->backend->ctx, ptr);
    a->in_use_bytes -= bytes;
}
