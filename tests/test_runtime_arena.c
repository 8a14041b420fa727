/* tests/test_runtime_arena.c — the budgeted arena: exact budget, best fit,
 * coalescing, high-water mark, and the cheapest eviction window. */
#include <check.h>
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
    ck_assert_int_eq(arena_find_window(&a, 128, score_by_owner, scores, owners, 8, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_ptr_eq(owners[0], (void *)4);
    ck_assert_ptr_eq(owners[1], (void *)5);
    /* Three blocks never fit next to the pinned one except on the right. */
    ck_assert_int_eq(arena_find_window(&a, 192, score_by_owner, scores, owners, 8, &n), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_ptr_eq(owners[0], (void *)4);
    ck_assert_int_eq(arena_find_window(&a, 256, score_by_owner, scores, owners, 8, &n), -1);
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
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
