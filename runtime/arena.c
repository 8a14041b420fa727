/* runtime/arena.c — the session's tensor memory (see arena.h). Budgeted
 * arenas keep every block, free or used, in one address-ordered list that
 * covers the whole budget, plus a hash from address to block; frees
 * coalesce with free neighbours at once, so no two free blocks touch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/arena.h"

struct arena_block {
    size_t offset, size;
    int is_free;
    void *owner;
    struct arena_block *prev, *next;       /* address order */
    struct arena_block *free_prev, *free_next; /* the free list (free blocks only) */
    struct arena_block *hash_next;          /* bucket chain of used blocks / unlimited allocations */
    void *ptr;                              /* unlimited mode: the backend allocation */
    double window_cost;                     /* scratch of arena_find_window */
};

#define ARENA_BUCKETS 4096

/* Used blocks (and unlimited allocations) by address; in unlimited mode,
 * freed backend allocations by size, kept for reuse: a training step
 * allocates the same sizes every time, and fresh pages cost page faults. */
struct arena_hash {
    struct arena_block *bucket[ARENA_BUCKETS];
    struct arena_block *cached[ARENA_BUCKETS];
};

static size_t size_bucket(size_t size) { return (size / ARENA_ALIGN * 2654435761u) % ARENA_BUCKETS; }

static size_t bucket_of(const void *p) { return ((uintptr_t)p / ARENA_ALIGN * 2654435761u) % ARENA_BUCKETS; }

static struct arena_hash *hash_of(const struct arena *a) { return a->hash; }

size_t arena_rounded(size_t bytes)
{
    if (!bytes)
        bytes = 1;
    return (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
}

static struct arena_block *block_new(void) { return calloc(1, sizeof(struct arena_block)); }

/* Free blocks are also on a list of their own, so that a search for a hole
 * looks at the few holes rather than at every block. */
static void free_list_add(struct arena *a, struct arena_block *b)
{
    b->free_prev = NULL;
    b->free_next = a->free_head;
    if (a->free_head)
        a->free_head->free_prev = b;
    a->free_head = b;
}

static void free_list_remove(struct arena *a, struct arena_block *b)
{
    if (b->free_prev)
        b->free_prev->free_next = b->free_next;
    else
        a->free_head = b->free_next;
    if (b->free_next)
        b->free_next->free_prev = b->free_prev;
    b->free_prev = b->free_next = NULL;
}

int arena_init(struct arena *a, const struct backend *backend, size_t budget_bytes)
{
    memset(a, 0, sizeof *a);
    const char *poison = getenv("DTRX_POISON");
    a->poison = poison && *poison && *poison != '0';
    a->backend = backend;
    a->budget_bytes = budget_bytes;
    struct arena_hash *h = calloc(1, sizeof *h);
    if (!h)
        return -1;
    a->hash = h;
    if (!budget_bytes)
        return 0;
    a->budget_bytes = budget_bytes / ARENA_ALIGN * ARENA_ALIGN;
    a->base = backend->alloc(backend->ctx, a->budget_bytes ? a->budget_bytes : ARENA_ALIGN);
    a->blocks = block_new();
    if (!a->base || !a->blocks || !a->budget_bytes) {
        arena_release(a);
        return -1;
    }
    a->blocks->size = a->budget_bytes;
    a->blocks->is_free = 1;
    a->n_blocks = 1;
    free_list_add(a, a->blocks);
    return 0;
}

void arena_release(struct arena *a)
{
    struct arena_hash *h = hash_of(a);
    if (!a->budget_bytes && h)
        for (size_t i = 0; i < ARENA_BUCKETS; i++)
            for (int list = 0; list < 2; list++)
                for (struct arena_block *b = list ? h->cached[i] : h->bucket[i], *n; b; b = n) {
                    n = b->hash_next;
                    a->backend->free(a->backend->ctx, b->ptr);
                    free(b);
                }
    for (struct arena_block *b = a->blocks, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    if (a->base)
        a->backend->free(a->backend->ctx, a->base);
    free(h);
    memset(a, 0, sizeof *a);
}

static void *block_ptr(const struct arena *a, const struct arena_block *b)
{
    return a->budget_bytes ? a->base + b->offset : b->ptr;
}

static void hash_put(struct arena *a, struct arena_block *b)
{
    struct arena_hash *h = hash_of(a);
    size_t i = bucket_of(block_ptr(a, b));
    b->hash_next = h->bucket[i];
    h->bucket[i] = b;
}

static struct arena_block *hash_take(struct arena *a, const void *ptr, int remove)
{
    struct arena_hash *h = hash_of(a);
    struct arena_block **pp = &h->bucket[bucket_of(ptr)];
    for (; *pp; pp = &(*pp)->hash_next)
        if (block_ptr(a, *pp) == ptr) {
            struct arena_block *b = *pp;
            if (remove)
                *pp = b->hash_next;
            return b;
        }
    return NULL;
}

static void account(struct arena *a, size_t bytes)
{
    a->in_use_bytes += bytes;
    if (a->in_use_bytes > a->peak_bytes)
        a->peak_bytes = a->in_use_bytes;
}

static void *alloc_budgeted(struct arena *a, size_t need, void *owner, int high);

/* 0xff over a new block, on whichever device holds it. */
static void poison_block(const struct arena *a, void *p, size_t bytes)
{
    if (a->backend->kind == BACKEND_CPU) {
        memset(p, 0xff, bytes);
        return;
    }
    static unsigned char ones[1 << 16];
    if (!ones[0])
        memset(ones, 0xff, sizeof ones);
    for (size_t at = 0; at < bytes; at += sizeof ones)
        a->backend->copy_to_device(a->backend->ctx, (char *)p + at, ones,
                                   bytes - at < sizeof ones ? bytes - at : sizeof ones);
}

void *arena_alloc_high(struct arena *a, size_t bytes, void *owner)
{
    if (!a->budget_bytes)
        return arena_alloc(a, bytes, owner);
    return alloc_budgeted(a, arena_rounded(bytes), owner, 1);
}

void *arena_alloc(struct arena *a, size_t bytes, void *owner)
{
    size_t need = arena_rounded(bytes);
    if (!a->budget_bytes) {
        struct arena_block **pp = &a->hash->cached[size_bucket(need)];
        while (*pp && (*pp)->size != need)
            pp = &(*pp)->hash_next;
        struct arena_block *b = *pp;
        if (b)
            *pp = b->hash_next;
        else if (!(b = block_new()) || !(b->ptr = a->backend->alloc(a->backend->ctx, need))) {
            free(b);
            return NULL;
        }
        b->size = need;
        b->owner = owner;
        hash_put(a, b);
        account(a, need);
        if (a->poison)
            poison_block(a, b->ptr, need);
        return b->ptr;
    }
    return alloc_budgeted(a, need, owner, 0);
}

static void *alloc_budgeted(struct arena *a, size_t need, void *owner, int high)
{
    /* Low: best fit. High: the highest hole that fits, so that long-lived
     * blocks pile up at the top instead of filling holes among activations,
     * where they would split the space compaction can join. */
    struct arena_block *best = NULL;
    for (struct arena_block *b = a->free_head; b; b = b->free_next)
        if (b->size >= need && (high ? !best || b->offset > best->offset : !best || b->size < best->size)) {
            best = b;
            if (b->size == need && !high)
                break;
        }
    if (!best)
        return NULL;
    if (best->size > need) {
        /* Split: the used part takes the low (or high) addresses. */
        struct arena_block *rest = block_new();
        if (!rest)
            return NULL;
        rest->is_free = 1;
        if (high) {
            rest->offset = best->offset;
            rest->size = best->size - need;
            rest->prev = best->prev;
            rest->next = best;
            if (best->prev)
                best->prev->next = rest;
            else
                a->blocks = rest;
            best->prev = rest;
            best->offset += rest->size;
        } else {
            rest->offset = best->offset + need;
            rest->size = best->size - need;
            rest->prev = best;
            rest->next = best->next;
            if (best->next)
                best->next->prev = rest;
            best->next = rest;
        }
        best->size = need;
        a->n_blocks++;
        free_list_add(a, rest);
    }
    free_list_remove(a, best);
    best->is_free = 0;
    best->owner = owner;
    hash_put(a, best);
    account(a, need);
    if (best->offset + need > a->high_water_offset)
        a->high_water_offset = best->offset + need;
    if (a->poison)
        poison_block(a, a->base + best->offset, need);
    return a->base + best->offset;
}

/* b and the free block after it become one (b stays on the free list). */
static void merge_next(struct arena *a, struct arena_block *b)
{
    struct arena_block *n = b->next;
    free_list_remove(a, n);
    b->size += n->size;
    b->next = n->next;
    if (n->next)
        n->next->prev = b;
    free(n);
    a->n_blocks--;
}

void arena_free(struct arena *a, void *ptr)
{
    if (!ptr)
        return;
    struct arena_block *b = hash_take(a, ptr, 1);
    if (!b)
        return;
    a->in_use_bytes -= b->size;
    if (!a->budget_bytes) {
        struct arena_block **slot = &a->hash->cached[size_bucket(b->size)];
        b->owner = NULL;
        b->hash_next = *slot;
        *slot = b;
        return;
    }
    b->is_free = 1;
    b->owner = NULL;
    free_list_add(a, b);
    if (b->next && b->next->is_free)
        merge_next(a, b);
    if (b->prev && b->prev->is_free)
        merge_next(a, b->prev);
}

size_t arena_size_of(const struct arena *a, const void *ptr)
{
    struct arena_block *b = hash_take((struct arena *)a, ptr, 0);
    return b ? b->size : 0;
}

size_t arena_largest_free(const struct arena *a)
{
    if (!a->budget_bytes)
        return SIZE_MAX;
    size_t best = 0;
    for (struct arena_block *b = a->free_head; b; b = b->free_next)
        if (b->size > best)
            best = b->size;
    return best;
}

int arena_find_window(const struct arena *a, size_t bytes, arena_score_fn score, void *ctx,
                      void **owners, size_t max_owners, size_t *n_owners)
{
    *n_owners = 0;
    if (!a->budget_bytes)
        return -1;
    size_t need = arena_rounded(bytes);
    const struct arena_block *best_first = NULL, *best_last = NULL;
    double best_cost = INFINITY;
    /* Two pointers over the address-ordered blocks: [first, b] is a run of
     * usable blocks; it is shrunk from the left while it still fits. Costs
     * are non-negative, so the cheapest fitting run ending at b is the
     * shortest one. */
    const struct arena_block *first = a->blocks;
    size_t run_bytes = 0;
    double run_cost = 0;
    for (struct arena_block *b = a->blocks; b; b = b->next) {
        double c = b->is_free ? 0 : score(ctx, b->owner);
        b->window_cost = c;
        if (c < 0) {
            first = b->next;
            run_bytes = 0;
            run_cost = 0;
            continue;
        }
        run_bytes += b->size;
        run_cost += c;
        while (first != b) {
            if (run_bytes - first->size < need)
                break;
            run_bytes -= first->size;
            run_cost -= first->window_cost;
            first = first->next;
        }
        if (run_bytes >= need && run_cost < best_cost) {
            best_cost = run_cost;
            best_first = first;
            best_last = b;
        }
    }
    if (!best_first)
        return -1;
    for (const struct arena_block *b = best_first;; b = b->next) {
        if (!b->is_free) {
            if (*n_owners == max_owners)
                return -1;
            owners[(*n_owners)++] = b->owner;
        }
        if (b == best_last)
            break;
    }
    return 0;
}

int arena_compact(struct arena *a, arena_movable_fn movable, arena_moved_fn moved, void *ctx)
{
    if (!a->budget_bytes)
        return 0;
    /* Gap records first, so that nothing changes if they cannot be had. */
    size_t n_used = 0;
    for (struct arena_block *b = a->blocks; b; b = b->next)
        n_used += !b->is_free;
    struct arena_block **gaps = calloc(n_used + 1, sizeof *gaps);
    for (size_t i = 0; gaps && i <= n_used; i++)
        if (!(gaps[i] = block_new())) {
            for (size_t k = 0; k < i; k++)
                free(gaps[k]);
            free(gaps);
            gaps = NULL;
        }
    if (!gaps)
        return -1;
    size_t write = 0;
    for (struct arena_block *b = a->blocks; b; b = b->next) {
        if (b->is_free)
            continue;
        void *old = a->base + b->offset;
        if (b->offset > write && movable(ctx, b->owner, old)) {
            hash_take(a, old, 1);
            a->backend->copy(a->backend->ctx, a->base + write, old, b->size);   /* memmove semantics */
            b->offset = write;
            hash_put(a, b);
            moved(ctx, b->owner, old, a->base + write);
        }
        write = b->offset + b->size;
    }
    /* Rebuild the list: used blocks in address order, free gaps between. */
    struct arena_block *used = NULL, **tail = &used;
    for (struct arena_block *b = a->blocks, *n; b; b = n) {
        n = b->next;
        if (b->is_free) {
            free(b);
            continue;
        }
        *tail = b;
        tail = &b->next;
    }
    *tail = NULL;
    struct arena_block *head = NULL, *prev = NULL;
    size_t at = 0, count = 0, next_gap = 0;
    a->free_head = NULL;
    for (struct arena_block *b = used, *n;; b = n) {
        size_t end = b ? b->offset : a->budget_bytes;
        if (end > at) {
            struct arena_block *gap = gaps[next_gap++];
            gap->offset = at;
            gap->size = end - at;
            gap->is_free = 1;
            free_list_add(a, gap);
            gap->prev = prev;
            if (prev)
                prev->next = gap;
            else
                head = gap;
            prev = gap;
            count++;
        }
        if (!b)
            break;
        n = b->next;
        b->prev = prev;
        b->next = NULL;
        if (prev)
            prev->next = b;
        else
            head = b;
        prev = b;
        count++;
        at = b->offset + b->size;
    }
    for (size_t i = next_gap; i <= n_used; i++)
        free(gaps[i]);
    free(gaps);
    a->blocks = head;
    a->n_blocks = count;
    return 0;
}
