/* tests/test_runtime_window.c — fragmentation: the DTR core driving the real
 * arena, with and without window eviction. Eight one-block storages fill an
 * arena of eight blocks; the cheap ones sit at even addresses, so evicting
 * by score alone frees scattered single blocks and keeps going until two
 * happen to touch, while window eviction frees the cheapest adjacent pair. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "dtr/dtr.h"
#include "runtime/arena.h"

#define BLOCK 64

struct harness {
    struct arena arena;
    struct dtr *dtr;
    void *ptr[64];
    int window;
    int windows_used;
};

static double score_owner(void *ctx, void *owner)
{
    struct harness *h = ctx;
    double score;
    dtr_storage st = (dtr_storage)((uintptr_t)owner - 1);
    if (!dtr_storage_is_evictable(h->dtr, st) || dtr_storage_score(h->dtr, st, &score))
        return -1;
    return score;
}

static int mem_alloc(void *ctx, dtr_storage st, uint64_t bytes, unsigned flags)
{
    struct harness *h = ctx;
    if (!bytes)
        return 0;   /* the source tensor takes no memory */
    void *p = arena_alloc(&h->arena, bytes, (void *)((uintptr_t)st + 1));
    if (!p && h->window && h->arena.budget_bytes - h->arena.in_use_bytes >= arena_rounded(bytes)) {
        void *owners[8];
        size_t n;
        if (!arena_find_window(&h->arena, bytes, score_owner, NULL, h, owners, 8, &n)) {
            for (size_t i = 0; i < n; i++)
                dtr_storage_evict(h->dtr, (dtr_storage)((uintptr_t)owners[i] - 1));
            h->windows_used++;
            p = arena_alloc(&h->arena, bytes, (void *)((uintptr_t)st + 1));
        }
    }
    if (!p)
        return 1;
    h->ptr[st] = p;
    return 0;
}

static void mem_free(void *ctx, dtr_storage st, unsigned flags)
{
    struct harness *h = ctx;
    arena_free(&h->arena, h->ptr[st]);
    h->ptr[st] = NULL;
}

/* Fills the arena with eight storages computed from one tiny constant kept
 * outside it (costs: cheap at even positions), then asks for two blocks. */
static void run(int window, struct dtr_stats *out)
{
    struct harness h = { .window = window };
    ck_assert_int_eq(arena_init(&h.arena, &backend_cpu, 8 * BLOCK), 0);
    struct dtr_config cfg;
    dtr_config_default(&cfg);
    cfg.heuristic = DTR_HEURISTIC_LOCAL;
    struct dtr_memory_ops mem = { .ctx = &h, .alloc = mem_alloc, .free = mem_free };
    h.dtr = dtr_create(&cfg, &mem, NULL);
    ck_assert_ptr_nonnull(h.dtr);
    /* The source: a constant of zero bytes so that it takes no block. */
    uint64_t zero = 0;
    struct dtr_call_desc src = { .output_bytes = &zero, .n_outputs = 1, .cost = 1 };
    dtr_tensor x, t[8];
    ck_assert_int_eq(dtr_call(h.dtr, &src, &x, NULL), DTR_OK);
    ck_assert_int_eq(dtr_tensor_pin(h.dtr, x), DTR_OK);
    for (int i = 0; i < 8; i++) {
        uint64_t bytes = BLOCK;
        struct dtr_call_desc c = { .inputs = &x, .n_inputs = 1, .output_bytes = &bytes, .n_outputs = 1,
                                   .cost = i % 2 ? 100 : 1 };
        ck_assert_int_eq(dtr_call(h.dtr, &c, &t[i], NULL), DTR_OK);
    }
    ck_assert_uint_eq(h.arena.in_use_bytes, 8 * BLOCK);
    uint64_t two = 2 * BLOCK;
    struct dtr_call_desc big = { .inputs = &x, .n_inputs = 1, .output_bytes = &two, .n_outputs = 1, .cost = 1 };
    dtr_tensor y;
    ck_assert_int_eq(dtr_call(h.dtr, &big, &y, NULL), DTR_OK);
    ck_assert_uint_le(h.arena.peak_bytes, 8 * BLOCK);
    dtr_stats_get(h.dtr, out);
    if (window)
        ck_assert_msg(h.windows_used == 1, "window used %d times, %llu evictions", h.windows_used,
                      (unsigned long long)out->evictions);
    dtr_destroy(h.dtr);
    arena_release(&h.arena);
}

START_TEST(test_window_eviction_frees_one_adjacent_pair)
{
    struct dtr_stats naive, window;
    run(0, &naive);
    run(1, &window);
    /* By score alone: the four cheap, scattered blocks, then an expensive
     * one before two free blocks touch. With windows: two cheap blocks by
     * score until enough bytes are free, then the one neighbour that joins
     * a free block into a hole of two. */
    ck_assert_uint_eq(naive.evictions, 5);
    ck_assert_uint_eq(window.evictions, 3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("window");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_window_eviction_frees_one_adjacent_pair);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
