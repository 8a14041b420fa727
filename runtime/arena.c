/* runtime/arena.c — the session's tensor memory (see arena.h). Budgeted
 * arenas keep every block, free or used, in one address-ordered list that
 * covers the whole budget, plus a hash from address to block; frees
 * coalesce with free neighbours at once, so no two free blocks touch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/arena-impl.h"


/* Block records come from chunks the arena keeps; a freed record goes back
 * on a spare list (linked through next), so splits and merges allocate
 * nothing once the arena has seen its largest number of blocks. A window
 * search walks every block in address order, and records scattered over
 * the chunks make that walk a chain of cache misses (kernels run between
 * searches and evict the records), so a budgeted arena lays its records
 * out again in address order once enough have been taken out of order. */
#define ARENA_CHUNK_RECORDS 256

struct arena_chunk {
    struct arena_chunk *next;
    size_t n;
    struct arena_block rec[];
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

/* A chunk of n records, all spare. */
static struct arena_chunk *chunk_add(struct arena *a, size_t n)
{
    struct arena_chunk *c = malloc(sizeof *c + n * sizeof c->rec[0]);
    if (!c)
        return NULL;
    c->next = a->chunks;
    c->n = n;
    a->chunks = c;
    for (size_t i = n; i-- > 0;) {
        c->rec[i].next = a->spare;
        a->spare = &c->rec[i];
    }
    return c;
}

struct arena_block *arena_block_new(struct arena *a)
{
    if (!a->spare && !chunk_add(a, ARENA_CHUNK_RECORDS))
        return NULL;
    struct arena_block *b = a->spare;
    a->spare = b->next;
    a->out_of_order++;
    memset(b, 0, sizeof *b);
    return b;
}

void arena_block_put(struct arena *a, struct arena_block *b)
{
    b->next = a->spare;
    a->spare = b;
}

/* Free blocks are also on a list of their own, so that a search for a hole
 * looks at the few holes rather than at every block. */
void arena_free_list_add(struct arena *a, struct arena_block *b)
{
    b->free_prev = NULL;
    b->free_next = a->free_head;
    if (a->free_head)
        a->free_head->free_prev = b;
    a->free_head = b;
}

void arena_free_list_remove(struct arena *a, struct arena_block *b)
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
    a->blocks = arena_block_new(a);
    if (!a->base || !a->blocks || !a->budget_bytes) {
        arena_release(a);
        return -1;
    }
    a->blocks->size = a->budget_bytes;
    a->blocks->is_free = 1;
    a->n_blocks = 1;
    arena_free_list_add(a, a->blocks);
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
                }
    for (struct arena_chunk *c = a->chunks, *n; c; c = n) {
        n = c->next;
        free(c);
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

void arena_hash_put(struct arena *a, struct arena_block *b)
{
    struct arena_hash *h = hash_of(a);
    size_t i = bucket_of(block_ptr(a, b));
    b->hash_next = h->bucket[i];
    h->bucket[i] = b;
}

/* Copies every block record, in address order, into one new chunk and
 * frees the old ones (budgeted arenas: every record is a block or spare).
 * Nothing changes but where the records live; without host memory the old
 * layout simply stays. */
static void relayout(struct arena *a)
{
    size_t n = a->n_blocks, i = 0;
    struct arena_chunk *c = malloc(sizeof *c + (n + ARENA_CHUNK_RECORDS) * sizeof c->rec[0]);
    if (!c)
        return;
    c->next = NULL;
    c->n = n + ARENA_CHUNK_RECORDS;
    for (struct arena_block *b = a->blocks; b; b = b->next, i++) {
        c->rec[i] = *b;
        b->ptr = &c->rec[i];   /* unused when budgeted: where the record went */
    }
    for (i = 0; i < n; i++) {
        struct arena_block *r = &c->rec[i];
        r->prev = i ? &c->rec[i - 1] : NULL;
        r->next = i + 1 < n ? &c->rec[i + 1] : NULL;
        r->free_prev = r->free_prev ? r->free_prev->ptr : NULL;
        r->free_next = r->free_next ? r->free_next->ptr : NULL;
        r->skip = r->skip ? r->skip->ptr : NULL;
    }
    a->free_head = a->free_head ? a->free_head->ptr : NULL;
    memset(a->hash->bucket, 0, sizeof a->hash->bucket);
    for (i = 0; i < n; i++) {
        c->rec[i].ptr = NULL;
        if (!c->rec[i].is_free)
            arena_hash_put(a, &c->rec[i]);
    }
    for (struct arena_chunk *o = a->chunks, *next; o; o = next) {
        next = o->next;
        free(o);
    }
    a->chunks = c;
    a->blocks = n ? &c->rec[0] : NULL;
    a->spare = NULL;
    for (i = c->n; i-- > n;) {
        c->rec[i].next = a->spare;
        a->spare = &c->rec[i];
    }
    a->out_of_order = 0;
}

struct arena_block *arena_hash_take(struct arena *a, const void *ptr, int remove)
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
        else if (!(b = arena_block_new(a)) || !(b->ptr = a->backend->alloc(a->backend->ctx, need))) {
            if (b)
                arena_block_put(a, b);
            return NULL;
        }
        b->size = need;
        b->owner = owner;
        arena_hash_put(a, b);
        account(a, need);
        if (a->poison)
            poison_block(a, b->ptr, need);
        return b->ptr;
    }
    return alloc_budgeted(a, need, owner, 0);
}

int arena_block_split(struct arena *a, struct arena_block *b, size_t need, int high)
{
    if (b->size == need)
        return 0;
    struct arena_block *rest = arena_block_new(a);
    if (!rest)
        return -1;
    rest->is_free = 1;
    rest->size = b->size - need;
    if (high) {
        rest->offset = b->offset;
        rest->prev = b->prev;
        rest->next = b;
        if (b->prev)
            b->prev->next = rest;
        else
            a->blocks = rest;
        b->prev = rest;
        b->offset += rest->size;
    } else {
        rest->offset = b->offset + need;
        rest->prev = b;
        rest->next = b->next;
        if (b->next)
            b->next->prev = rest;
        b->next = rest;
    }
    b->size = need;
    a->n_blocks++;
    arena_free_list_add(a, rest);
    return 0;
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
    if (arena_block_split(a, best, need, high))
        return NULL;
    arena_free_list_remove(a, best);
    best->is_free = 0;
    best->owner = owner;
    arena_hash_put(a, best);
    account(a, need);
    if (best->offset + need > a->high_water_offset)
        a->high_water_offset = best->offset + need;
    if (a->poison)
        poison_block(a, a->base + best->offset, need);
    return a->base + best->offset;
}

/* b and the free block after it become one (b stays on the free list). */
void arena_merge_next(struct arena *a, struct arena_block *b)
{
    struct arena_block *n = b->next;
    arena_free_list_remove(a, n);
    b->size += n->size;
    b->next = n->next;
    if (n->next)
        n->next->prev = b;
    arena_block_put(a, n);
    a->n_blocks--;
}

void arena_block_release(struct arena *a, struct arena_block *b)
{
    b->is_free = 1;
    b->owner = NULL;
    b->skip = NULL;
    arena_free_list_add(a, b);
    if (b->next && b->next->is_free)
        arena_merge_next(a, b);
    if (b->prev && b->prev->is_free)
        arena_merge_next(a, b->prev);
}

void arena_free(struct arena *a, void *ptr)
{
    if (!ptr)
        return;
    struct arena_block *b = arena_hash_take(a, ptr, 1);
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
    if (!b->owner)   /* the runs without owner that reached b end before it now */
        for (struct arena_block *r = b; r && !r->is_free && !r->owner; r = r->prev)
            r->skip = NULL;
    arena_block_release(a, b);
}

size_t arena_size_of(const struct arena *a, const void *ptr)
{
    struct arena_block *b = arena_hash_take((struct arena *)a, ptr, 0);
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

/* Skips a run of blocks without owner: such blocks never move and are
 * never evicted, and the weights at the top of the arena are a long run
 * of them. b->skip, when set, is the last block of a run starting at b. */
struct arena_block *arena_skip_unowned(struct arena_block *b)
{
    struct arena_block *last = b;
    for (;;) {
        if (last->skip)
            last = last->skip;
        struct arena_block *n = last->next;
        if (!n || n->is_free || n->owner)
            break;
        last = n;
    }
    b->skip = last;
    return last;
}

/* Whether a block may be part of a window. */
static int usable(const struct arena_block *b, arena_evictable_fn evictable, void *ctx)
{
    return b->is_free || (b->owner && (!evictable || evictable(ctx, b->owner)));
}

/* Two pointers over the address-ordered blocks: [first, b] is a run of
 * usable blocks, shrunk from the left while it still fits. Costs are
 * non-negative, so the cheapest fitting run ending at b is the shortest
 * one. The run's cost is one sliding sum of its finite scores plus a count
 * of its infinite ones (storages accessed at this very tick): a run holding
 * one is never chosen, and one that has dropped it is costed again (a plain
 * sliding sum turned NaN there and hid every later run of the stretch).
 * Scores are what a search costs, and it asks none it does not need: runs
 * of blocks without owner are skipped whole, and the blocks of a stretch
 * between unevictable ones that holds fewer than `bytes` in all (no window
 * can end in it) are never scored, only tested with evictable(). */
int arena_find_window(struct arena *a, size_t bytes, arena_score_fn score, arena_evictable_fn evictable, void *ctx,
                      void **owners, size_t max_owners, size_t *n_owners)
{
    *n_owners = 0;
    if (!a->budget_bytes)
        return -1;
    if (a->out_of_order > a->n_blocks / 8 + 16)
        relayout(a);
    size_t need = arena_rounded(bytes);
    const struct arena_block *best_first = NULL, *best_last = NULL;
    double best_cost = INFINITY;
    for (struct arena_block *b = a->blocks; b;) {
        if (!usable(b, evictable, ctx)) {
            b = (b->owner ? b : arena_skip_unowned(b))->next;
            continue;
        }
        /* Does the stretch of usable blocks from b reach `bytes`? */
        size_t stretch_bytes = 0;
        struct arena_block *m = b;
        while (m && usable(m, evictable, ctx) && (stretch_bytes += m->size) < need)
            m = m->next;
        if (stretch_bytes < need) {
            b = m;   /* the unusable block that ends it, or the end */
            continue;
        }
        /* Then slide over it, scoring, until a block cannot be evicted
         * (evictable() only asks what the score would say anyway, and asks
         * each storage once where a stretch is long: each first touch of a
         * storage's record is a cache miss, after kernels ran). */
        struct arena_block *first = b;
        size_t run_bytes = 0, run_infinite = 0;
        double run_cost = 0;
        for (m = b; m; m = m->next) {
            double c = m->is_free ? 0 : m->owner ? score(ctx, m->owner) : -1;
            if (c < 0)
                break;
            m->window_cost = c;
            run_bytes += m->size;
            if (isinf(c))
                run_infinite++;
            else
                run_cost += c;
            while (first != m && run_bytes - first->size >= need) {
                run_bytes -= first->size;
                if (isinf(first->window_cost))
                    run_infinite--;
                else
                    run_cost -= first->window_cost;
                first = first->next;
            }
            if (run_bytes >= need && !run_infinite && run_cost < best_cost) {
                best_cost = run_cost;
                best_first = first;
                best_last = m;
            }
        }
        b = m ? (m->owner ? m : arena_skip_unowned(m))->next : NULL;
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

