/* tests/test_runtime_arena.c — the budgeted arena: exact budget, best fit,
 * coalescing, high-water mark, the cheapest eviction window and compaction,
 * the last two on random layouts against references that read a plain
 * array of the blocks (the arena's skips, pooled records and relayouts must
 * not change a single choice). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/arena.h"

START_TEST(test_budget_is_a_hard_bound)
{
    struct arena a;
    ck_assert_int_eq(arena_init(&a, &backend_cpu, 1024), 0);
    void *p = arena_alloc(&a, 512, NULL), *q = arena_alloc(&a, 512, NULL);
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(q);
    ck_assert_ptr_null(arena_alloc(&a, 1, NULL));
    ck_assert_uint_eq(a.in_use_bytes, 1024);
    arena_free(&a, p);
    ck_assert_uint_eq(a.in_use_bytes, 512);
    ck_assert_ptr_null(arena_alloc(&a, 513, NULL));
    ck_assert_ptr_eq(arena_alloc(&a, 500, NULL), p);
    ck_assert_uint_eq(a.peak_bytes, 1024);
    arena_release(&a);
}
END_TEST

START_TEST(test_free_neighbours_coalesce)
{
    struct arena a;
    ck_assert_int_eq(arena_init(&a, &backend_cpu, 64 * 4), 0);
    void *p[4];
    for (int i = 0; i < 4; i++)
        ck_assert_ptr_nonnull(p[i] = arena_alloc(&a, 64, NULL));
    arena_free(&a, p[1]);
    arena_free(&a, p[2]);
    ck_assert_uint_eq(arena_largest_free(&a), 128);
    ck_assert_uint_eq(a.n_blocks, 3);
    ck_assert_ptr_eq(arena_alloc(&a, 128, NULL), p[1]);
    arena_free(&a, p[0]);
    arena_free(&a, p[3]);
    arena_free(&a, p[1]);
    ck_assert_uint_eq(a.n_blocks, 1);
    ck_assert_uint_eq(arena_largest_free(&a), 256);
    arena_release(&a);
}
END_TEST

START_TEST(test_best_fit_prefers_the_tightest_hole)
{
    struct arena a;
    ck_assert_int_eq(arena_init(&a, &backend_cpu, 64 * 8), 0);
    void *p[8];
    for (int i = 0; i < 8; i++)
        p[i] = arena_alloc(&a, 64, NULL);
    arena_free(&a, p[1]);               /* a one-block hole */
    arena_free(&a, p[3]);
    arena_free(&a, p[4]);               /* a two-block hole */
    ck_assert_ptr_eq(arena_alloc(&a, 64, NULL), p[1]);
    ck_assert_ptr_eq(arena_alloc(&a, 100, NULL), p[3]);
    arena_release(&a);
}
END_TEST

static double score_by_owner(void *ctx, void *owner)
{
    const double *scores = ctx;
    return scores[(intptr_t)owner - 1];
}

START_TEST(test_window_picks_the_cheapest_contiguous_run)
{
    struct arena a;
    ck_assert_int_eq(arena_init(&a, &backend_cpu, 64 * 6), 0);
    /* Owners 1..6, one block each; owner 3 is pinned (negative score). */
    double scores[6] = { 5, 1, -1, 2, 2, 9 };
    for (intptr_t i = 1; i <= 6; i++)
        ck_assert_ptr_nonnull(arena_alloc(&a, 64, (void *)i));
    void *owners[8];
    size_t n;
    ck_assert_int_eq(arena_find_window(&a, 128, score_by_owner, NULL, scores, owners, 8, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_ptr_eq(owners[0], (void *)4);
    ck_assert_ptr_eq(owners[1], (void *)5);
    /* Three blocks never fit next to the pinned one except on the right. */
    ck_assert_int_eq(arena_find_window(&a, 192, score_by_owner, NULL, scores, owners, 8, &n), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_ptr_eq(owners[0], (void *)4);
    ck_assert_int_eq(arena_find_window(&a, 256, score_by_owner, NULL, scores, owners, 8, &n), -1);
    arena_release(&a);
}
END_TEST

/* Random allocations, low and high, and frees: every live block keeps the
 * byte pattern written into it, so no two blocks ever overlap, and the
 * bytes in use never pass the budget. */
START_TEST(test_random_low_and_high_blocks_never_overlap)
{
    enum { SLOTS = 64 };
    struct arena a;
    const size_t budget = 64 * 1024;
    ck_assert_int_eq(arena_init(&a, &backend_cpu, budget), 0);
    unsigned char *p[SLOTS] = { 0 };
    size_t n[SLOTS] = { 0 };
    unsigned seed = 12345;
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245u + 12345u;
        int k = (int)(seed >> 8) % SLOTS;
        if (p[k]) {
            size_t bad = n[k];
            for (size_t i = 0; i < n[k] && bad == n[k]; i++)
                if (p[k][i] != (unsigned char)k)
                    bad = i;
            if (bad != n[k])
                ck_abort_msg("block %d byte %zu overwritten at step %d", k, bad, step);
            arena_free(&a, p[k]);
            p[k] = NULL;
            continue;
        }
        n[k] = 1 + (seed >> 4) % 3000;
        p[k] = (seed & 1) ? arena_alloc_high(&a, n[k], NULL) : arena_alloc(&a, n[k], NULL);
        if (p[k]) {
            if ((char *)p[k] < a.base || (char *)p[k] + arena_rounded(n[k]) > a.base + budget)
                ck_abort_msg("block %d outside the arena", k);
            memset(p[k], k, n[k]);
        }
        if (a.in_use_bytes > budget)
            ck_abort_msg("%zu bytes in use past the budget", a.in_use_bytes);
    }
    arena_release(&a);
}
END_TEST

/* ---- random layouts against brute force ---- */

enum { RSLOTS = 40, RUNIT = ARENA_ALIGN, RBUDGET = 256 * ARENA_ALIGN };

/* Slot k's block (owner k + 1, or none) and what the references read. */
struct layout {
    struct arena a;
    unsigned char *p[RSLOTS];
    size_t bytes[RSLOTS];
    int owned[RSLOTS];
    double score[RSLOTS];
    int evictable[RSLOTS];   /* 0 only where the score is negative */
    int movable[RSLOTS];
    unsigned seed;
};

struct ref_block {
    size_t offset, size;
    int slot;   /* -1: free */
};

static unsigned next_rand(struct layout *l)
{
    l->seed = l->seed * 1103515245u + 12345u;
    return l->seed >> 8;
}

static double layout_score(void *ctx, void *owner)
{
    const struct layout *l = ctx;
    return l->score[(intptr_t)owner - 1];
}

static int layout_evictable(void *ctx, void *owner)
{
    const struct layout *l = ctx;
    return l->evictable[(intptr_t)owner - 1];
}

static int layout_movable(void *ctx, void *owner, void *ptr)
{
    const struct layout *l = ctx;
    int k = (int)((intptr_t)owner - 1);
    ck_assert_ptr_eq(ptr, l->p[k]);
    return l->movable[k];
}

static void layout_moved(void *ctx, void *owner, void *old_ptr, void *new_ptr)
{
    struct layout *l = ctx;
    int k = (int)((intptr_t)owner - 1);
    ck_assert_ptr_eq(old_ptr, l->p[k]);
    l->p[k] = new_ptr;
}

/* Every block in address order, free gaps included. */
static size_t layout_blocks(const struct layout *l, struct ref_block *out)
{
    size_t n = 0;
    for (int k = 0; k < RSLOTS; k++)
        if (l->p[k])
            out[n++] = (struct ref_block){ (size_t)((char *)l->p[k] - l->a.base), arena_rounded(l->bytes[k]), k };
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && out[j - 1].offset > out[j].offset; j--) {
            struct ref_block t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    struct ref_block all[2 * RSLOTS + 1];
    size_t m = 0, at = 0;
    for (size_t i = 0; i <= n; i++) {
        size_t end = i < n ? out[i].offset : l->a.budget_bytes;
        if (end > at)
            all[m++] = (struct ref_block){ at, end - at, -1 };
        if (i < n) {
            all[m++] = out[i];
            at = out[i].offset + out[i].size;
        }
    }
    memcpy(out, all, m * sizeof *out);
    return m;
}

static void layout_check_bytes(const struct layout *l, int step)
{
    for (int k = 0; k < RSLOTS; k++)
        for (size_t i = 0; l->p[k] && i < l->bytes[k]; i++)
            if (l->p[k][i] != (unsigned char)(k + 1))
                ck_abort_msg("step %d: slot %d byte %zu overwritten", step, k, i);
}

/* One random allocation or free; a fifth of the blocks have no owner. */
static void layout_churn(struct layout *l)
{
    int k = (int)(next_rand(l) % RSLOTS);
    if (l->p[k]) {
        arena_free(&l->a, l->p[k]);
        l->p[k] = NULL;
        return;
    }
    unsigned r = next_rand(l);
    l->bytes[k] = 1 + r % (12 * RUNIT);
    l->owned[k] = r % 5 != 0;
    void *owner = l->owned[k] ? (void *)(intptr_t)(k + 1) : NULL;
    l->p[k] = (r >> 12) & 1 ? arena_alloc_high(&l->a, l->bytes[k], owner) : arena_alloc(&l->a, l->bytes[k], owner);
    if (l->p[k])
        memset(l->p[k], k + 1, l->bytes[k]);
}

/* Scores with ties, zeros, unevictable (negative) and infinite ones, and
 * magnitudes far apart (the search's sliding sums must not mislead it). */
static void layout_rescore(struct layout *l)
{
    for (int k = 0; k < RSLOTS; k++) {
        unsigned r = next_rand(l) % 16;
        l->score[k] = r == 0 ? -1 : r == 1 ? INFINITY : r == 2 ? 0 : r < 8 ? (double)(r % 3 + 1)
                    : ldexp(1.0 + (double)(next_rand(l) % 1000), (int)(next_rand(l) % 120) - 60);
        l->evictable[k] = l->score[k] >= 0 || next_rand(l) % 2;
        l->movable[k] = next_rand(l) % 4 != 0;
    }
}

/* The reference window: the sliding sum over a plain array of every
 * block, every owned block scored; infinite scores counted apart, so that
 * a run holding one is never chosen and one that dropped it is. */
static size_t ref_window(const struct layout *l, size_t need, void **owners)
{
    struct ref_block b[2 * RSLOTS + 1];
    double cost[2 * RSLOTS + 1];
    size_t n = layout_blocks(l, b), first = 0, run_bytes = 0, best_first = SIZE_MAX, best_last = 0, infinite = 0;
    double best = INFINITY, run_cost = 0;
    for (size_t e = 0; e < n; e++) {
        int k = b[e].slot;
        double c = cost[e] = k < 0 ? 0 : l->owned[k] ? l->score[k] : -1;
        if (c < 0) {
            first = e + 1;
            run_bytes = infinite = 0;
            run_cost = 0;
            continue;
        }
        run_bytes += b[e].size;
        if (isinf(c))
            infinite++;
        else
            run_cost += c;
        while (first != e && run_bytes - b[first].size >= need) {
            run_bytes -= b[first].size;
            if (isinf(cost[first]))
                infinite--;
            else
                run_cost -= cost[first];
            first++;
        }
        if (run_bytes >= need && !infinite && run_cost < best) {
            best = run_cost;
            best_first = first;
            best_last = e;
        }
    }
    size_t count = 0;
    for (size_t i = best_first; best_first != SIZE_MAX && i <= best_last; i++)
        if (b[i].slot >= 0)
            owners[count++] = (void *)(intptr_t)(b[i].slot + 1);
    return best_first == SIZE_MAX ? SIZE_MAX : count;
}

/* Where compaction must leave each block: movable ones slide down to the
 * end of the block before them, which stays where it is if immovable. */
static void ref_compaction(const struct layout *l, unsigned char **where)
{
    struct ref_block b[2 * RSLOTS + 1];
    size_t n = layout_blocks(l, b), write = 0;
    for (size_t i = 0; i < n; i++) {
        int k = b[i].slot;
        if (k < 0)
            continue;
        size_t at = l->owned[k] && l->movable[k] ? write : b[i].offset;
        where[k] = (unsigned char *)l->a.base + at;
        write = at + b[i].size;
    }
}

START_TEST(test_window_matches_the_reference)
{
    struct layout l = { .seed = 777 };
    ck_assert_int_eq(arena_init(&l.a, &backend_cpu, RBUDGET), 0);
    int found = 0;
    for (int step = 0; step < 30000; step++) {
        layout_churn(&l);
        if (step % 7)
            continue;
        layout_rescore(&l);
        size_t need = 1 + next_rand(&l) % (24 * RUNIT);
        void *got[2 * RSLOTS], *want[2 * RSLOTS];
        size_t n_got = 0, n_want = ref_window(&l, need, want);
        int rc = arena_find_window(&l.a, need, layout_score, step % 2 ? layout_evictable : NULL, &l, got, 2 * RSLOTS,
                                   &n_got);
        ck_assert_msg(rc == (n_want == SIZE_MAX ? -1 : 0), "step %d need %zu: rc %d, reference %s", step, need, rc,
                      n_want == SIZE_MAX ? "none" : "a window");
        if (rc)
            continue;
        found++;
        ck_assert_msg(n_got == n_want, "step %d need %zu: %zu owners, reference %zu", step, need, n_got, n_want);
        for (size_t i = 0; i < n_got; i++)
            ck_assert_msg(got[i] == want[i], "step %d need %zu: owner %zu is %p, reference %p", step, need, i,
                          got[i], want[i]);
    }
    ck_assert_int_gt(found, 1000);
    layout_check_bytes(&l, -1);
    arena_release(&l.a);
}
END_TEST

START_TEST(test_compaction_slides_every_movable_block)
{
    struct layout l = { .seed = 4242 };
    ck_assert_int_eq(arena_init(&l.a, &backend_cpu, RBUDGET), 0);
    for (int step = 0; step < 20000; step++) {
        layout_churn(&l);
        if (step % 5)
            continue;
        layout_rescore(&l);
        unsigned char *want[RSLOTS] = { 0 };
        ref_compaction(&l, want);
        size_t in_use = l.a.in_use_bytes, peak = l.a.peak_bytes, free_bytes = l.a.budget_bytes - in_use;
        ck_assert_int_eq(arena_compact(&l.a, 0, layout_movable, layout_moved, &l), 0);
        ck_assert_uint_eq(l.a.in_use_bytes, in_use);
        ck_assert_uint_eq(l.a.peak_bytes, peak);
        for (int k = 0; k < RSLOTS; k++)
            if (l.p[k])
                ck_assert_msg(l.p[k] == want[k], "step %d: slot %d at %td, expected %td", step, k,
                              (char *)l.p[k] - l.a.base, (char *)want[k] - l.a.base);
        layout_check_bytes(&l, step);
        /* the free list holds exactly the free bytes */
        size_t got = 0;
        void *q[2 * RSLOTS];
        int n_q = 0;
        for (size_t hole; (hole = arena_largest_free(&l.a)) > 0 && n_q < 2 * RSLOTS; got += hole)
            ck_assert_ptr_nonnull(q[n_q++] = arena_alloc(&l.a, hole, NULL));
        ck_assert_uint_eq(got, free_bytes);
        while (n_q > 0)
            arena_free(&l.a, q[--n_q]);
    }
    arena_release(&l.a);
}
END_TEST

/* The reference span: over every run of free and movable blocks, the
 * fewest used bytes among those holding `need` free bytes; SIZE_MAX if none. */
static size_t ref_span_cost(const struct layout *l, size_t need)
{
    struct ref_block b[2 * RSLOTS + 1];
    size_t n = layout_blocks(l, b), best = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        size_t free_bytes = 0, used = 0;
        for (size_t j = i; j < n; j++) {
            int k = b[j].slot;
            if (k >= 0 && !(l->owned[k] && l->movable[k]))
                break;
            if (k < 0)
                free_bytes += b[j].size;
            else
                used += b[j].size;
            if (free_bytes >= need && used < best)
                best = used;
        }
    }
    return best;
}

START_TEST(test_compaction_for_a_request_moves_the_fewest_bytes)
{
    struct layout l = { .seed = 99 };
    ck_assert_int_eq(arena_init(&l.a, &backend_cpu, RBUDGET), 0);
    int made = 0;
    for (int step = 0; step < 20000; step++) {
        layout_churn(&l);
        if (step % 5)
            continue;
        layout_rescore(&l);
        size_t need = 1 + next_rand(&l) % (24 * RUNIT), want = ref_span_cost(&l, arena_rounded(need));
        ck_assert_uint_eq(arena_compact_cost(&l.a, need, layout_movable, &l), want);
        size_t in_use = l.a.in_use_bytes;
        int rc = arena_compact(&l.a, need, layout_movable, layout_moved, &l);
        ck_assert_int_eq(rc, want == SIZE_MAX ? -1 : 0);
        ck_assert_uint_eq(l.a.in_use_bytes, in_use);
        layout_check_bytes(&l, step);
        if (rc)
            continue;
        /* the hole is there: an allocation of `need` fits */
        ck_assert_uint_ge(arena_largest_free(&l.a), arena_rounded(need));
        void *q = arena_alloc(&l.a, need, NULL);
        ck_assert_ptr_nonnull(q);
        arena_free(&l.a, q);
        made++;
    }
    ck_assert_int_gt(made, 500);
    arena_release(&l.a);
}
END_TEST

/* The reference relocation: for each block, the shortest run of free and
 * movable blocks ending there that holds `need` bytes; runs in order of
 * fewest used bytes (lowest first on ties), the first of the first 64
 * whose used blocks, largest first (lowest first on ties), each fit the
 * tightest hole outside the run (lowest first on ties), taken from its low
 * end. Returns its used bytes, SIZE_MAX if none. */
struct ref_run {
    size_t first, last, used;
};

static int ref_run_order(const void *x, const void *y)
{
    const struct ref_run *a = x, *b = y;
    if (a->used != b->used)
        return a->used < b->used ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

static size_t ref_relocate_cost(const struct layout *l, size_t need)
{
    struct ref_block b[2 * RSLOTS + 1];
    size_t n = layout_blocks(l, b);
    struct ref_run runs[2 * RSLOTS + 1];
    size_t n_runs = 0;
    for (size_t j = 0; j < n; j++) {
        size_t bytes = 0, used = 0;
        for (size_t i = j + 1; i-- > 0;) {
            int k = b[i].slot;
            if (k >= 0 && !(l->owned[k] && l->movable[k]))
                break;
            bytes += b[i].size;
            used += k >= 0 ? b[i].size : 0;
            if (bytes >= need) {
                runs[n_runs++] = (struct ref_run){ i, j, used };
                break;
            }
        }
    }
    qsort(runs, n_runs, sizeof *runs, ref_run_order);
    for (size_t r = 0; r < n_runs && r < 64; r++) {
        size_t hole_at[2 * RSLOTS + 1], hole_size[2 * RSLOTS + 1], n_holes = 0;
        for (size_t h = 0; h < n; h++)
            if (b[h].slot < 0 && (h < runs[r].first || h > runs[r].last)) {
                hole_at[n_holes] = b[h].offset;
                hole_size[n_holes++] = b[h].size;
            }
        /* the run's used blocks, largest first */
        size_t order[2 * RSLOTS + 1], m = 0;
        for (size_t i = runs[r].first; i <= runs[r].last; i++)
            if (b[i].slot >= 0)
                order[m++] = i;
        for (size_t x = 1; x < m; x++)
            for (size_t y = x; y > 0 && (b[order[y - 1]].size < b[order[y]].size ||
                                         (b[order[y - 1]].size == b[order[y]].size &&
                                          b[order[y - 1]].offset > b[order[y]].offset)); y--) {
                size_t t = order[y];
                order[y] = order[y - 1];
                order[y - 1] = t;
            }
        int fits = 1;
        for (size_t x = 0; x < m && fits; x++) {
            size_t size = b[order[x]].size, best = SIZE_MAX;
            for (size_t h = 0; h < n_holes; h++)
                if (hole_size[h] >= size && (best == SIZE_MAX || hole_size[h] < hole_size[best] ||
                                             (hole_size[h] == hole_size[best] && hole_at[h] < hole_at[best])))
                    best = h;
            if (best == SIZE_MAX)
                fits = 0;
            else {
                hole_at[best] += size;
                hole_size[best] -= size;
            }
        }
        if (fits)
            return runs[r].used;
    }
    return SIZE_MAX;
}

START_TEST(test_relocation_moves_a_windows_blocks_out)
{
    struct layout l = { .seed = 2024 };
    ck_assert_int_eq(arena_init(&l.a, &backend_cpu, RBUDGET), 0);
    int made = 0, cheaper = 0, rescued = 0;
    for (int step = 0; step < 20000; step++) {
        layout_churn(&l);
        if (step % 5)
            continue;
        layout_rescore(&l);
        /* a request that no hole holds, though enough bytes are free */
        size_t largest = arena_largest_free(&l.a), free_bytes = l.a.budget_bytes - l.a.in_use_bytes;
        if (free_bytes <= largest)
            continue;
        size_t need = largest + 1 + next_rand(&l) % (free_bytes - largest);
        size_t want = ref_relocate_cost(&l, arena_rounded(need));
        ck_assert_uint_eq(arena_relocate_cost(&l.a, need, layout_movable, &l), want);
        size_t slide = arena_compact_cost(&l.a, need, layout_movable, &l);
        size_t in_use = l.a.in_use_bytes, peak = l.a.peak_bytes, before = l.a.budget_bytes - in_use;
        int rc = arena_relocate(&l.a, need, layout_movable, layout_moved, &l);
        ck_assert_int_eq(rc, want == SIZE_MAX ? -1 : 0);
        ck_assert_uint_eq(l.a.in_use_bytes, in_use);
        ck_assert_uint_eq(l.a.peak_bytes, peak);
        layout_check_bytes(&l, step);
        if (rc)
            continue;
        /* the hole is there, and the free bytes are all still free */
        ck_assert_uint_ge(arena_largest_free(&l.a), arena_rounded(need));
        size_t got = 0;
        void *q[2 * RSLOTS];
        int n_q = 0;
        for (size_t hole; (hole = arena_largest_free(&l.a)) > 0 && n_q < 2 * RSLOTS; got += hole)
            ck_assert_ptr_nonnull(q[n_q++] = arena_alloc(&l.a, hole, NULL));
        ck_assert_uint_eq(got, before);
        while (n_q > 0)
            arena_free(&l.a, q[--n_q]);
        made++;
        cheaper += want < slide;
        rescued += slide == SIZE_MAX;
    }
    /* relocation is not the slide under another name: it moves fewer bytes
     * than the slide, or makes holes the slide cannot */
    ck_assert_int_gt(made, 500);
    ck_assert_int_gt(cheaper, 50);
    ck_assert_int_gt(rescued, 50);
    arena_release(&l.a);
}
END_TEST

START_TEST(test_unlimited_counts_bytes)
{
    struct arena a;
    ck_assert_int_eq(arena_init(&a, &backend_cpu, 0), 0);
    void *p = arena_alloc(&a, 100, NULL), *q = arena_alloc(&a, 1000, NULL);
    ck_assert_uint_eq(a.in_use_bytes, arena_rounded(100) + arena_rounded(1000));
    ck_assert_uint_eq(arena_size_of(&a, q), arena_rounded(1000));
    arena_free(&a, p);
    arena_free(&a, q);
    ck_assert_uint_eq(a.in_use_bytes, 0);
    ck_assert_uint_eq(a.peak_bytes, arena_rounded(100) + arena_rounded(1000));
    arena_release(&a);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("arena");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_budget_is_a_hard_bound);
    tcase_add_test(tc, test_free_neighbours_coalesce);
    tcase_add_test(tc, test_best_fit_prefers_the_tightest_hole);
    tcase_add_test(tc, test_window_picks_the_cheapest_contiguous_run);
    tcase_add_test(tc, test_unlimited_counts_bytes);
    tcase_add_test(tc, test_random_low_and_high_blocks_never_overlap);
    tcase_add_test(tc, test_window_matches_the_reference);
    tcase_add_test(tc, test_compaction_slides_every_movable_block);
    tcase_add_test(tc, test_compaction_for_a_request_moves_the_fewest_bytes);
    tcase_add_test(tc, test_relocation_moves_a_windows_blocks_out);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
