/* runtime/arena.h — all tensor memory of a session.
 *
 * Budgeted: one backend block of exactly budget_bytes, sub-allocated
 * best-fit with coalescing of free neighbours, so the budget is a real bound
 * and fragmentation is real. Unlimited (budget 0): each allocation is its
 * own backend allocation, only counted. Either way the arena knows the bytes
 * in use and the high-water mark.
 *
 * Every allocation carries an owner tag. When a request does not fit
 * although enough bytes are free in total, arena_find_window() finds the
 * contiguous run of free and evictable blocks whose eviction costs least
 * (the sliding-window idea of Coop, NeurIPS 2023); the caller evicts those
 * owners and retries. The arena itself never decides what to evict.
 */
#ifndef DTRX_RUNTIME_ARENA_H
#define DTRX_RUNTIME_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

#define ARENA_ALIGN 64

struct arena_block;
struct arena_chunk;
struct arena_hash;

struct arena {
    const struct backend *backend;
    size_t budget_bytes;            /* 0: unlimited */
    size_t in_use_bytes;            /* sum of live allocation sizes (rounded) */
    size_t peak_bytes;              /* high-water mark of in_use_bytes */
    size_t high_water_offset;       /* budgeted: highest end offset ever used */
    char *base;                     /* budgeted: the one block */
    struct arena_block *blocks;     /* budgeted: all blocks in address order */
    struct arena_block *free_head;  /* budgeted: the free blocks */
    struct arena_hash *hash;        /* used blocks by address */
    struct arena_chunk *chunks;     /* where block records come from */
    struct arena_block *spare;      /* records not in use */
    size_t out_of_order;            /* records taken since they were last laid out */
    size_t n_blocks;
    /* Fill every allocation with 0xff bytes (NaN as float): a kernel that
     * reads an output before writing it shows up at once. Set from the
     * DTRX_POISON environment variable; tests turn it on. */
    int poison;
};

int arena_init(struct arena *a, const struct backend *backend, size_t budget_bytes);
void arena_release(struct arena *a);

/* Rounded size an allocation of `bytes` occupies. */
size_t arena_rounded(size_t bytes);
/* NULL when it does not fit (budgeted) or the backend fails. */
void *arena_alloc(struct arena *a, size_t bytes, void *owner);
/* The same, placed at the high end of the highest hole that fits: long-lived
 * blocks (weights, optimizer state) and short-lived kernel workspaces go
 * high, activations low, so that neither splits the other's space. */
void *arena_alloc_high(struct arena *a, size_t bytes, void *owner);
void arena_free(struct arena *a, void *ptr);
/* Size the allocation at ptr occupies. */
size_t arena_size_of(const struct arena *a, const void *ptr);
/* Largest free block (budgeted), or SIZE_MAX (unlimited). */
size_t arena_largest_free(const struct arena *a);

/* Score of evicting the owner of a block: lower is cheaper; a negative
 * value means the block cannot be evicted. Blocks without an owner are
 * never evicted nor moved, and never scored. */
typedef double (*arena_score_fn)(void *ctx, void *owner);

/* Whether a block's owner may be evicted at all, much cheaper than its
 * score; false must mean that its score would be negative. */
typedef int (*arena_evictable_fn)(void *ctx, void *owner);

/* Finds the contiguous run of blocks, each free or evictable, holding at
 * least `bytes`, with the lowest summed score of its evictable owners (as
 * one sliding sum: see arena.c). evictable() may be NULL (then every owner
 * is scored). Writes up to max_owners owners to evict and their count;
 * returns 0, or -1 when no run fits. */
int arena_find_window(struct arena *a, size_t bytes, arena_score_fn score, arena_evictable_fn evictable, void *ctx,
                      void **owners, size_t max_owners, size_t *n_owners);

/* Compaction. With bytes == 0: slides every block that movable() accepts
 * down to the lowest free addresses before the next immovable block, so
 * that the free space between immovable blocks becomes one hole. With
 * bytes > 0: makes one hole of at least `bytes` by sliding the fewest bytes,
 * the used blocks of the cheapest run of free and movable blocks holding
 * that much free space (-1 when none does). moved() learns each new
 * address. Only safe while no kernel holds a pointer to a movable block. */
typedef int (*arena_movable_fn)(void *ctx, void *owner, void *ptr);
typedef void (*arena_moved_fn)(void *ctx, void *owner, void *old_ptr, void *new_ptr);
int arena_compact(struct arena *a, size_t bytes, arena_movable_fn movable, arena_moved_fn moved, void *ctx);
/* Bytes arena_compact(a, bytes, ...) would move; SIZE_MAX when it cannot
 * make the hole. */
size_t arena_compact_cost(struct arena *a, size_t bytes, arena_movable_fn movable, void *ctx);
/* Relocation: makes one hole of at least `bytes` by moving the used blocks
 * of the cheapest window (a shortest run of free and movable blocks that
 * holds `bytes`) into holes outside it, largest block first, each into the
 * tightest hole. It never moves more than the window's used bytes, fewer
 * than `bytes` where the window holds free blocks, where a slide may move
 * a whole span; it fails (-1) where the holes outside cannot take the
 * blocks of any of the cheapest windows tried (see arena_compact.c). */
int arena_relocate(struct arena *a, size_t bytes, arena_movable_fn movable, arena_moved_fn moved, void *ctx);
/* Bytes arena_relocate(a, bytes, ...) would move; SIZE_MAX when it cannot. */
size_t arena_relocate_cost(struct arena *a, size_t bytes, arena_movable_fn movable, void *ctx);

#endif
