/* runtime/arena-impl.h — the arena's block records and the helpers that
 * arena.c (allocation, the window search) and arena_compact.c (making a hole
 * by moving blocks) share. Nothing outside those two files includes it. */
#ifndef DTRX_RUNTIME_ARENA_IMPL_H
#define DTRX_RUNTIME_ARENA_IMPL_H

#include "runtime/arena.h"

/* The fields a window search reads come first: it walks every block, and
 * one cache line per block is what it costs. */
struct arena_block {
    size_t offset, size;
    void *owner;
    struct arena_block *prev, *next;       /* address order */
    struct arena_block *skip;               /* see arena_skip_unowned() */
    double window_cost;                     /* scratch of arena_find_window */
    int is_free;
    struct arena_block *free_prev, *free_next; /* the free list (free blocks only) */
    struct arena_block *hash_next;          /* bucket chain of used blocks / unlimited allocations */
    void *ptr;                              /* unlimited mode: the backend allocation */
};

/* Records: a new one (NULL without memory), and one given back. */
struct arena_block *arena_block_new(struct arena *a);
void arena_block_put(struct arena *a, struct arena_block *b);
/* The list of free blocks. */
void arena_free_list_add(struct arena *a, struct arena_block *b);
void arena_free_list_remove(struct arena *a, struct arena_block *b);
/* Used blocks by address: add, and find (and with remove, take out). */
void arena_hash_put(struct arena *a, struct arena_block *b);
struct arena_block *arena_hash_take(struct arena *a, const void *ptr, int remove);
/* The last block of the run of blocks without owner starting at b. */
struct arena_block *arena_skip_unowned(struct arena_block *b);
/* Free block b keeps `need` bytes, at its low (or high) end; the rest
 * becomes a free block of its own. -1 without memory for the record. */
int arena_block_split(struct arena *a, struct arena_block *b, size_t need, int high);
/* Used block b (already out of the hash) becomes free space, merged with
 * free neighbours. */
void arena_block_release(struct arena *a, struct arena_block *b);
/* b and the free block after it become one (b stays on the free list). */
void arena_merge_next(struct arena *a, struct arena_block *b);

#endif
