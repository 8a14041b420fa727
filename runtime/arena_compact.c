/* runtime/arena_compact.c — making one hole of a requested size by moving
 * blocks rather than evicting them (see arena.h): sliding the used blocks
 * of the cheapest span together, or relocating the used blocks of the
 * cheapest window into holes outside it. */
#include <stdlib.h>
#include <string.h>

#include "runtime/arena-impl.h"

/* Takes free block m out of both lists and recycles its record. */
static void unlink_free(struct arena *a, struct arena_block *m)
{
    arena_free_list_remove(a, m);
    if (m->prev)
        m->prev->next = m->next;
    else
        a->blocks = m->next;
    if (m->next)
        m->next->prev = m->prev;
    arena_block_put(a, m);
    a->n_blocks--;
}

/* The span a compaction for `need` bytes moves least in: [first, last] is
 * a run of free and movable blocks ending at a free block, holding `need`
 * free bytes, with the fewest bytes in its used blocks (the lowest such run
 * on ties). Two pointers, as the window search: the cheapest fitting run
 * ending at a block is the shortest. Returns those bytes, SIZE_MAX if no
 * run holds `need` free bytes. */
static size_t compact_span(struct arena *a, size_t need, arena_movable_fn movable, void *ctx,
                           struct arena_block **span_first, struct arena_block **span_last)
{
    struct arena_block *first = a->blocks;
    size_t free_bytes = 0, used_bytes = 0, best = SIZE_MAX;
    *span_first = *span_last = NULL;
    for (struct arena_block *b = a->blocks; b; b = b->next) {
        if (!b->is_free && (!b->owner || !movable(ctx, b->owner, a->base + b->offset))) {
            if (!b->owner)
                b = arena_skip_unowned(b);
            first = b->next;
            free_bytes = used_bytes = 0;
            continue;
        }
        if (!b->is_free) {
            used_bytes += b->size;
            continue;
        }
        free_bytes += b->size;
        while (first != b && (!first->is_free || free_bytes - first->size >= need)) {
            if (first->is_free)
                free_bytes -= first->size;
            else
                used_bytes -= first->size;
            first = first->next;
        }
        if (free_bytes >= need && used_bytes < best) {
            best = used_bytes;
            *span_first = first;
            *span_last = b;
        }
    }
    return best;
}

size_t arena_compact_cost(struct arena *a, size_t bytes, arena_movable_fn movable, void *ctx)
{
    struct arena_block *first, *last;
    return a->budget_bytes ? compact_span(a, arena_rounded(bytes), movable, ctx, &first, &last) : SIZE_MAX;
}

/* Slides the used blocks of the cheapest span down to its start; the
 * span's last (free) block becomes the one hole above them. */
static int compact_for(struct arena *a, size_t bytes, arena_movable_fn movable, arena_moved_fn moved, void *ctx)
{
    struct arena_block *span_first, *span_last;
    if (compact_span(a, arena_rounded(bytes), movable, ctx, &span_first, &span_last) == SIZE_MAX)
        return -1;
    size_t write = span_first->offset, end = span_last->offset + span_last->size;
    for (struct arena_block *m = span_first, *next; m != span_last; m = next) {
        next = m->next;
        if (m->is_free) {
            unlink_free(a, m);
            continue;
        }
        if (m->offset != write) {
            void *old = a->base + m->offset;
            arena_hash_take(a, old, 1);
            a->backend->copy(a->backend->ctx, a->base + write, old, m->size);   /* memmove semantics */
            m->offset = write;
            arena_hash_put(a, m);
            moved(ctx, m->owner, old, a->base + write);
        }
        write += m->size;
    }
    arena_free_list_remove(a, span_last);
    span_last->offset = write;
    span_last->size = end - write;
    arena_free_list_add(a, span_last);
    return 0;
}

int arena_compact(struct arena *a, size_t bytes, arena_movable_fn movable, arena_moved_fn moved, void *ctx)
{
    if (!a->budget_bytes)
        return 0;
    if (bytes)
        return compact_for(a, bytes, movable, moved, ctx);
    /* Slide, dropping the free blocks on the way... */
    size_t write = 0;
    for (struct arena_block *b = a->blocks, *next; b; b = next) {
        next = b->next;
        if (b->is_free) {
            unlink_free(a, b);
            continue;
        }
        void *old = a->base + b->offset;
        if (b->offset > write && b->owner && movable(ctx, b->owner, old)) {
            arena_hash_take(a, old, 1);
            a->backend->copy(a->backend->ctx, a->base + write, old, b->size);   /* memmove semantics */
            b->offset = write;
            arena_hash_put(a, b);
            moved(ctx, b->owner, old, a->base + write);
        }
        write = b->offset + b->size;
    }
    /* ...then one free block per gap, in address order (best fit breaks
     * ties by the free list's order, and this is the order it had). */
    size_t at = 0;
    struct arena_block *prev = NULL;
    for (struct arena_block *b = a->blocks;; b = b->next) {
        size_t end = b ? b->offset : a->budget_bytes;
        if (end > at) {
            /* Sliding keeps each segment between immovable blocks its free
             * bytes, so there are no more gaps than free blocks were
             * recycled above: this takes no new memory. */
            struct arena_block *gap = arena_block_new(a);
            if (!gap)
                return -1;
            gap->offset = at;
            gap->size = end - at;
            gap->is_free = 1;
            gap->prev = prev;
            gap->next = b;
            if (prev)
                prev->next = gap;
            else
                a->blocks = gap;
            if (b)
                b->prev = gap;
            arena_free_list_add(a, gap);
            a->n_blocks++;
        }
        if (!b)
            break;
        prev = b;
        at = b->offset + b->size;
    }
    return 0;
}

/* ---- relocation ----
 *
 * A window is a run of free and movable blocks holding at least `need`
 * bytes that cannot lose its first block and still hold them (the shortest
 * run ending at its last block). Relocating it moves each of its used blocks, largest
 * first, into the tightest hole outside it (the lowest on ties), at that
 * hole's low end; the window then frees into one hole. Its cost is the
 * bytes of its used blocks. Windows are tried from the cheapest (the lowest
 * on ties), at most ARENA_RELOCATE_TRIES of them, until the holes outside
 * one take all its blocks. */

#define ARENA_RELOCATE_TRIES 64

struct reloc_window {
    struct arena_block *first, *last;
    size_t used;
};

struct reloc_plan {
    struct reloc_window *windows;
    size_t n_windows;
    struct arena_block **blocks;   /* the chosen window's used blocks, largest first */
    size_t n_blocks;
    size_t *hole_offset, *hole_size;   /* the holes outside it, as the moves leave them */
    size_t n_holes;
    size_t lo, hi;                     /* its bounds */
};

static void plan_free(struct reloc_plan *p)
{
    free(p->windows);
    free(p->blocks);
    free(p->hole_offset);
    free(p->hole_size);
    memset(p, 0, sizeof *p);
}

static int by_used(const void *x, const void *y)
{
    const struct reloc_window *a = x, *b = y;
    if (a->used != b->used)
        return a->used < b->used ? -1 : 1;
    return a->first->offset < b->first->offset ? -1 : a->first->offset > b->first->offset;
}

static int by_size_down(const void *x, const void *y)
{
    const struct arena_block *a = *(struct arena_block *const *)x, *b = *(struct arena_block *const *)y;
    if (a->size != b->size)
        return a->size > b->size ? -1 : 1;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static int block_movable(struct arena *a, struct arena_block *b, arena_movable_fn movable, void *ctx)
{
    return b->is_free || (b->owner && movable(ctx, b->owner, a->base + b->offset));
}

/* Keeps the ARENA_RELOCATE_TRIES cheapest windows seen, in by_used order. */
static void keep_window(struct reloc_plan *p, struct reloc_window w)
{
    size_t n = p->n_windows;
    if (n == ARENA_RELOCATE_TRIES && by_used(&w, &p->windows[n - 1]) >= 0)
        return;
    size_t at = n < ARENA_RELOCATE_TRIES ? n : n - 1;
    while (at > 0 && by_used(&w, &p->windows[at - 1]) < 0) {
        p->windows[at] = p->windows[at - 1];
        at--;
    }
    p->windows[at] = w;
    if (n < ARENA_RELOCATE_TRIES)
        p->n_windows++;
}

/* The cheapest windows, cheapest first. */
static int collect_windows(struct arena *a, size_t need, arena_movable_fn movable, void *ctx, struct reloc_plan *p)
{
    if (!(p->windows = malloc(ARENA_RELOCATE_TRIES * sizeof *p->windows)))
        return -1;
    struct arena_block *first = a->blocks;
    size_t bytes = 0, used = 0;
    for (struct arena_block *b = a->blocks; b; b = b->next) {
        if (!block_movable(a, b, movable, ctx)) {
            if (!b->owner)
                b = arena_skip_unowned(b);
            first = b->next;
            bytes = used = 0;
            continue;
        }
        bytes += b->size;
        used += b->is_free ? 0 : b->size;
        /* the window that ends at b: the shortest run ending here */
        while (bytes >= need) {
            if (bytes - first->size < need)
                keep_window(p, (struct reloc_window){ first, b, used });
            bytes -= first->size;
            used -= first->is_free ? 0 : first->size;
            first = first->next;
        }
    }
    return 0;
}

/* Whether the holes outside w take its used blocks; fills p->blocks and
 * the holes as the moves would leave them. */
static int window_fits(struct arena *a, const struct reloc_window *w, struct reloc_plan *p, size_t max_blocks,
                       size_t max_holes)
{
    p->n_blocks = p->n_holes = 0;
    for (struct arena_block *b = w->first;; b = b->next) {
        if (!b->is_free) {
            if (p->n_blocks == max_blocks)
                return 0;
            p->blocks[p->n_blocks++] = b;
        }
        if (b == w->last)
            break;
    }
    size_t lo = p->lo = w->first->offset, hi = p->hi = w->last->offset + w->last->size;
    for (struct arena_block *h = a->free_head; h; h = h->free_next)
        if ((h->offset < lo || h->offset >= hi) && p->n_holes < max_holes) {
            p->hole_offset[p->n_holes] = h->offset;
            p->hole_size[p->n_holes++] = h->size;
        }
    qsort(p->blocks, p->n_blocks, sizeof *p->blocks, by_size_down);
    for (size_t i = 0; i < p->n_blocks; i++) {
        size_t best = SIZE_MAX, size = p->blocks[i]->size;
        for (size_t h = 0; h < p->n_holes; h++)
            if (p->hole_size[h] >= size &&
                (best == SIZE_MAX || p->hole_size[h] < p->hole_size[best] ||
                 (p->hole_size[h] == p->hole_size[best] && p->hole_offset[h] < p->hole_offset[best])))
                best = h;
        if (best == SIZE_MAX)
            return 0;
        p->hole_offset[best] += size;
        p->hole_size[best] -= size;
    }
    return 1;
}

/* The cheapest window whose blocks fit outside it: its used bytes, with
 * p->blocks set; SIZE_MAX when none of those tried does. */
static size_t relocate_plan(struct arena *a, size_t need, arena_movable_fn movable, void *ctx,
                            struct reloc_plan *p)
{
    memset(p, 0, sizeof *p);
    size_t n_free = 0;
    for (struct arena_block *h = a->free_head; h; h = h->free_next)
        n_free++;
    if (!a->budget_bytes || collect_windows(a, need, movable, ctx, p) || !p->n_windows)
        return SIZE_MAX;
    size_t max_blocks = a->n_blocks;
    p->blocks = malloc(max_blocks * sizeof *p->blocks);
    p->hole_offset = malloc((n_free + 1) * sizeof *p->hole_offset);
    p->hole_size = malloc((n_free + 1) * sizeof *p->hole_size);
    if (!p->blocks || !p->hole_offset || !p->hole_size)
        return SIZE_MAX;
    for (size_t i = 0; i < p->n_windows; i++)
        if (window_fits(a, &p->windows[i], p, max_blocks, n_free + 1))
            return p->windows[i].used;
    return SIZE_MAX;
}

size_t arena_relocate_cost(struct arena *a, size_t bytes, arena_movable_fn movable, void *ctx)
{
    struct reloc_plan p;
    size_t cost = relocate_plan(a, arena_rounded(bytes), movable, ctx, &p);
    plan_free(&p);
    return cost;
}

/* The tightest free block outside [lo, hi) that holds `size` (the lowest
 * on ties), as window_fits chose it. */
static struct arena_block *hole_for(struct arena *a, size_t size, size_t lo, size_t hi)
{
    struct arena_block *best = NULL;
    for (struct arena_block *h = a->free_head; h; h = h->free_next)
        if ((h->offset < lo || h->offset >= hi) && h->size >= size &&
            (!best || h->size < best->size || (h->size == best->size && h->offset < best->offset)))
            best = h;
    return best;
}

/* Moves used block m into the low end of free block h; m's record stays,
 * out of the hash, until arena_block_release() frees it. */
static int move_block(struct arena *a, struct arena_block *m, struct arena_block *h, arena_moved_fn moved,
                      void *ctx)
{
    if (arena_block_split(a, h, m->size, 0))
        return -1;
    arena_free_list_remove(a, h);
    h->is_free = 0;
    h->owner = m->owner;
    h->skip = NULL;
    if (h->offset + h->size > a->high_water_offset)
        a->high_water_offset = h->offset + h->size;
    void *old = a->base + m->offset, *now = a->base + h->offset;
    a->backend->copy(a->backend->ctx, now, old, m->size);
    arena_hash_take(a, old, 1);
    arena_hash_put(a, h);
    moved(ctx, m->owner, old, now);
    return 0;
}

int arena_relocate(struct arena *a, size_t bytes, arena_movable_fn movable, arena_moved_fn moved, void *ctx)
{
    struct reloc_plan p;
    if (relocate_plan(a, arena_rounded(bytes), movable, ctx, &p) == SIZE_MAX) {
        plan_free(&p);
        return -1;
    }
    /* Every block moves before any frees, so the holes are the ones the
     * plan saw, and the window frees into one hole at the end. */
    size_t moved_blocks = 0;
    int rc = 0;
    for (; moved_blocks < p.n_blocks && !rc; moved_blocks++) {
        struct arena_block *h = hole_for(a, p.blocks[moved_blocks]->size, p.lo, p.hi);
        rc = !h ? -1 : move_block(a, p.blocks[moved_blocks], h, moved, ctx);
        if (rc)
            break;
    }
    for (size_t i = 0; i < moved_blocks; i++)
        arena_block_release(a, p.blocks[i]);   /* the records of the blocks that moved away */
    plan_free(&p);
    return rc;
}
