/* tests/test_dtr.c — the DTR core on small graphs whose scores, evictions
 * and costs are worked out by hand, the linear-chain bound of the paper, a
 * 100,000-call chain (explicit stack), out-of-memory results, deallocation
 * policies and the allocator hooks. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/dtr.h"
#include "dtr/dtr-impl.h"   /* dtr_score_reference: the caches against a fresh computation */
#include "dtr_test_util.h"
#include "testutil.h"

/* ---- a byte-counting allocator, as the simulator's ---- */

struct mem {
    struct dtr *d;
    uint64_t used, peak, budget;    /* budget 0: unlimited */
    int allocs, frees, scratch_allocs, scratch_frees, adopts;
    int evict_in_alloc;             /* test hook: evict this storage from inside alloc */
};

static int mem_alloc(void *ctx, dtr_storage s, uint64_t bytes, unsigned flags)
{
    struct mem *m = ctx;
    if (m->evict_in_alloc >= 0 && dtr_storage_is_evictable(m->d, (dtr_storage)m->evict_in_alloc)) {
        dtr_storage victim = (dtr_storage)m->evict_in_alloc;
        m->evict_in_alloc = -1;
        ck_assert_int_eq(dtr_storage_evict(m->d, victim), DTR_OK);
    }
    if (m->budget && m->used + bytes > m->budget)
        return 1;
    m->used += bytes;
    if (m->used > m->peak)
        m->peak = m->used;
    m->allocs++;
    if (flags & DTR_ALLOC_SCRATCH)
        m->scratch_allocs++;
    return 0;
}

static void mem_free(void *ctx, dtr_storage s, unsigned flags)
{
    struct mem *m = ctx;
    m->used -= dtr_storage_bytes(m->d, s);
    m->frees++;
    if (flags & DTR_ALLOC_SCRATCH)
        m->scratch_frees++;
}

static void mem_adopt(void *ctx, dtr_storage s)
{
    ((struct mem *)ctx)->adopts++;
}

struct compute_log {
    int n;
    dtr_op ops[64];
    int remat[64];
};

static int log_compute(void *ctx, dtr_op op, void *closure, int rematerialize)
{
    struct compute_log *l = ctx;
    if (l->n < 64) {
        l->ops[l->n] = op;
        l->remat[l->n] = rematerialize;
    }
    l->n++;
    return 0;
}

static struct dtr *make(struct mem *m, enum dtr_heuristic h, enum dtr_dealloc p, uint64_t budget,
                        struct compute_log *log)
{
    struct dtr_config c;
    dtr_config_default(&c);
    c.heuristic = h;
    c.dealloc = p;
    memset(m, 0, sizeof *m);
    m->budget = budget;
    m->evict_in_alloc = -1;
    struct dtr_memory_ops mo = { .ctx = m, .alloc = mem_alloc, .free = mem_free, .adopt = mem_adopt };
    struct dtr_compute_ops co = { .ctx = log, .compute = log ? log_compute : NULL };
    struct dtr *d = dtr_create(&c, &mo, &co);
    ck_assert_ptr_nonnull(d);
    m->d = d;
    return d;
}

/* One call with one non-view output; returns the output tensor. */
static dtr_tensor call1(struct dtr *d, const dtr_tensor *in, uint32_t n_in, uint64_t bytes, double cost)
{
    dtr_tensor out;
    struct dtr_call_desc c = { .inputs = in, .n_inputs = n_in, .output_bytes = &bytes, .n_outputs = 1, .cost = cost };
    enum dtr_status st = dtr_call(d, &c, &out, NULL);
    ck_assert_msg(st == DTR_OK, "call failed: %s", dtr_error(d));
    return out;
}

#define ASSERT_NEAR(got, want) \
    ck_assert_msg(fabs((double)(got) - (double)(want)) <= 1e-12 * fmax(1, fabs((double)(want))), \
                  "expected %.17g, got %.17g", (double)(want), (double)(got))

static double score(struct dtr *d, dtr_tensor t)
{
    double s;
    enum dtr_status st = dtr_storage_score(d, dtr_tensor_storage(d, t), &s);
    ck_assert_msg(st == DTR_OK, "score: %s", dtr_error(d));
    return s;
}

/* ---- which storage each heuristic evicts ----
 * a (30 B, cost 60), b (40 B, cost 100), c (20 B, cost 5), then x (0 B,
 * cost 20) advances the clock: a, b, c were last used at 60, 160, 165, and
 * the clock is 185. A new 20-byte output overflows the 100-byte budget by
 * one storage. By hand, at clock 185 (staleness 125, 25, 20):
 *   lru: last access 60 < 160 < 165                          -> a
 *   size: 1/m = 1/30, 1/40, 1/20                             -> b
 *   dtr-local = dtr = dtr-eq (nothing evicted yet): c/(m*staleness)
 *     = 60/3750 = 0.016, 100/1000 = 0.1, 5/400 = 0.0125       -> c
 *   msps: c/m = 2, 2.5, 0.25                                  -> c */
static void run_choice(enum dtr_heuristic h, int expect)
{
    struct mem m;
    struct dtr *d = make(&m, h, DTR_DEALLOC_EAGER, 100, NULL);
    dtr_tensor t[3];
    t[0] = call1(d, NULL, 0, 30, 60);
    t[1] = call1(d, NULL, 0, 40, 100);
    t[2] = call1(d, NULL, 0, 20, 5);
    call1(d, NULL, 0, 0, 20);
    if (h == DTR_HEURISTIC_LOCAL || h == DTR_HEURISTIC_DTR || h == DTR_HEURISTIC_EQ) {
        ASSERT_NEAR(score(d, t[0]), 60.0 / (30 * 125));
        ASSERT_NEAR(score(d, t[1]), 100.0 / (40 * 25));
        ASSERT_NEAR(score(d, t[2]), 5.0 / (20 * 20));
    }
    call1(d, NULL, 0, 20, 1);
    for (int i = 0; i < 3; i++)
        ck_assert_msg(dtr_tensor_is_resident(d, t[i]) == (i != expect), "%s: storage %d %s",
                      dtr_heuristic_name(h), i, i == expect ? "should have been evicted" : "was evicted");
    struct dtr_stats st;
    dtr_stats_get(d, &st);
    ck_assert_uint_eq(st.evictions, 1);
    ck_assert_uint_eq(m.used, 90 - (expect == 0 ? 30 : expect == 1 ? 40 : 20) + 20);
    ASSERT_NEAR(st.clock, 186);
    dtr_destroy(d);
}

START_TEST(test_choice_per_heuristic)
{
    run_choice(DTR_HEURISTIC_LRU, 0);
    run_choice(DTR_HEURISTIC_SIZE, 1);
    run_choice(DTR_HEURISTIC_LOCAL, 2);
    run_choice(DTR_HEURISTIC_DTR, 2);
    run_choice(DTR_HEURISTIC_EQ, 2);
    run_choice(DTR_HEURISTIC_MSPS, 2);
}
END_TEST

/* ---- evicted neighbourhoods: exact (dtr), union-find (dtr-eq), msps ----
 * w (cost 1) -> x (2) -> y (4), x -> z (8); all 10 bytes, no budget.
 * Clock after each: 1, 3, 7, 15. Last access: w 1, x 7 (z's call), y 7, z 15.
 * Evict x. At clock 15:
 *   y: dtr (4 + 2)/(10*8); dtr-local 4/80; dtr-eq (4 + 2)/80; msps (4+2)/10
 *   w: dtr (1 + 2)/(10*14) (x is its evicted child); msps 1/10
 *   z: staleness 0 -> infinite for dtr; msps (8 + 2)/10 */
START_TEST(test_neighbourhood_scores)
{
    for (int h = 0; h < DTR_HEURISTIC_COUNT; h++) {
        if (h == DTR_HEURISTIC_RANDOM)
            continue;
        struct mem m;
        struct dtr *d = make(&m, (enum dtr_heuristic)h, DTR_DEALLOC_EAGER, 0, NULL);
        dtr_tensor w = call1(d, NULL, 0, 10, 1);
        dtr_tensor x = call1(d, &w, 1, 10, 2);
        dtr_tensor y = call1(d, &x, 1, 10, 4);
        dtr_tensor z = call1(d, &x, 1, 10, 8);
        ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, x)), DTR_OK);
        ck_assert(!dtr_tensor_is_resident(d, x));
        ck_assert_uint_eq(m.used, 30);
        switch (h) {
        case DTR_HEURISTIC_DTR:
        case DTR_HEURISTIC_EQ:
            ASSERT_NEAR(score(d, y), 6.0 / 80);
            ASSERT_NEAR(score(d, w), 3.0 / 140);
            ck_assert(isinf(score(d, z)));
            break;
        case DTR_HEURISTIC_LOCAL:
            ASSERT_NEAR(score(d, y), 4.0 / 80);
            ASSERT_NEAR(score(d, w), 1.0 / 140);
            break;
        case DTR_HEURISTIC_MSPS:
            ASSERT_NEAR(score(d, y), 0.6);
            ASSERT_NEAR(score(d, w), 0.1);
            ASSERT_NEAR(score(d, z), 1.0);
            break;
        case DTR_HEURISTIC_LRU:
            ASSERT_NEAR(score(d, y), 7);
            ASSERT_NEAR(score(d, w), 1);
            break;
        case DTR_HEURISTIC_SIZE:
            ASSERT_NEAR(score(d, y), 0.1);
            break;
        }
        dtr_destroy(d);
    }
}
END_TEST

/* The union-find approximation keeps "phantom" members. Same graph; evict
 * y, x, z (one class {x,y,z}, value 14). Acquiring y recomputes x (clock
 * 15 -> 17) then y (-> 21): the class value drops by 2 and 4 to 8 (z's).
 * Evict x again: its new class merges with z's, value 2 + 8 = 10. Now y
 * (last access 7, staleness 14): dtr-eq sees x's class, 10, so
 * (4 + 10)/(10*14) = 0.1, while the exact dtr sees only x:
 * (4 + 2)/140. */
START_TEST(test_eq_phantom)
{
    for (int h = 0; h < 2; h++) {
        struct mem m;
        struct compute_log log = { 0 };
        struct dtr *d = make(&m, h ? DTR_HEURISTIC_EQ : DTR_HEURISTIC_DTR, DTR_DEALLOC_EAGER, 0, &log);
        dtr_tensor w = call1(d, NULL, 0, 10, 1);
        dtr_tensor x = call1(d, &w, 1, 10, 2);
        dtr_tensor y = call1(d, &x, 1, 10, 4);
        dtr_tensor z = call1(d, &x, 1, 10, 8);
        ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, y)), DTR_OK);
        ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, x)), DTR_OK);
        ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, z)), DTR_OK);
        ck_assert_int_eq(dtr_tensor_acquire(d, y), DTR_OK);
        ck_assert_int_eq(log.n, 6);
        ck_assert_int_eq(log.remat[4], 1);   /* x, then y, both replays */
        ck_assert_int_eq(log.remat[5], 1);
        ck_assert_uint_eq(log.ops[4], 1);
        ck_assert_uint_eq(log.ops[5], 2);
        ck_assert_int_eq(dtr_tensor_unacquire(d, y), DTR_OK);
        struct dtr_stats st;
        dtr_stats_get(d, &st);
        ASSERT_NEAR(st.clock, 21);
        ASSERT_NEAR(st.remat_compute, 6);
        ck_assert_uint_eq(st.remats, 2);
        ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, x)), DTR_OK);
        ASSERT_NEAR(score(d, y), h ? 14.0 / 140 : 6.0 / 140);
        dtr_destroy(d);
    }
}
END_TEST

/* Multi-output calls recompute all their outputs; an output still resident
 * gets a scratch buffer that is dropped afterwards. p -> (u, v) with u 10 B
 * and v 20 B (cost 5). Evict u; acquiring u replays the call once: v's copy
 * goes to scratch (allocated, then freed). */
START_TEST(test_multi_output)
{
    struct mem m;
    struct compute_log log = { 0 };
    struct dtr *d = make(&m, DTR_HEURISTIC_DTR, DTR_DEALLOC_EAGER, 0, &log);
    dtr_tensor p = call1(d, NULL, 0, 8, 1);
    uint64_t bytes[2] = { 10, 20 };
    dtr_tensor out[2];
    struct dtr_call_desc c = { .inputs = &p, .n_inputs = 1, .output_bytes = bytes, .n_outputs = 2, .cost = 5 };
    ck_assert_int_eq(dtr_call(d, &c, out, NULL), DTR_OK);
    ck_assert_uint_eq(m.used, 38);
    ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, out[0])), DTR_OK);
    ck_assert_uint_eq(m.used, 28);
    ck_assert_int_eq(dtr_tensor_acquire(d, out[0]), DTR_OK);
    ck_assert_int_eq(m.scratch_allocs, 1);
    ck_assert_int_eq(m.scratch_frees, 1);
    ck_assert_uint_eq(m.used, 38);
    ck_assert_uint_eq(m.peak, 58);   /* 28 + 10 + the 20-byte scratch */
    ck_assert_int_eq(log.n, 3);
    ck_assert(dtr_tensor_is_resident(d, out[1]));
    ck_assert_int_eq(dtr_tensor_unacquire(d, out[0]), DTR_OK);
    /* both evicted: one replay brings both back, no scratch */
    ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, out[0])), DTR_OK);
    ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, out[1])), DTR_OK);
    ck_assert_int_eq(dtr_tensor_acquire(d, out[1]), DTR_OK);
    ck_assert(dtr_tensor_is_resident(d, out[0]));
    ck_assert_int_eq(log.n, 4);
    ck_assert_int_eq(m.scratch_allocs, 1);
    dtr_destroy(d);
}
END_TEST

/* Views share their storage: evicting the storage undefines the view, and
 * bringing the view back replays the base call and then the view call. */
START_TEST(test_views)
{
    struct mem m;
    struct compute_log log = { 0 };
    struct dtr *d = make(&m, DTR_HEURISTIC_LRU, DTR_DEALLOC_EAGER, 0, &log);
    dtr_tensor a = call1(d, NULL, 0, 100, 10);
    uint64_t zero = 0;
    int32_t alias = 0;
    dtr_tensor v;
    struct dtr_call_desc c = { .inputs = &a, .n_inputs = 1, .output_bytes = &zero, .output_alias = &alias,
                               .n_outputs = 1, .cost = 1 };
    ck_assert_int_eq(dtr_call(d, &c, &v, NULL), DTR_OK);
    ck_assert_uint_eq(dtr_tensor_storage(d, v), dtr_tensor_storage(d, a));
    ck_assert_uint_eq(m.used, 100);
    /* the program drops a; the view keeps the storage alive */
    ck_assert_int_eq(dtr_tensor_release(d, a), DTR_OK);
    ck_assert(dtr_tensor_is_resident(d, v));
    ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, v)), DTR_OK);
    ck_assert(!dtr_tensor_is_resident(d, v) && !dtr_tensor_is_resident(d, a));
    ck_assert_int_eq(dtr_tensor_pin(d, v), DTR_OK);
    ck_assert_int_eq(log.n, 4);
    ck_assert(log.remat[2] && log.remat[3]);
    struct dtr_stats st;
    dtr_stats_get(d, &st);
    ASSERT_NEAR(st.remat_compute, 11);
    ck_assert_uint_eq(st.pinned_bytes, 100);
    /* pinned: nothing can evict it */
    ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, v)), DTR_ERR_INVALID);
    dtr_destroy(d);
}
END_TEST

/* Eager eviction frees at the last release but keeps the metadata; banish
 * frees for good once no evicted child needs it and pins its children;
 * ignore leaves the storage to the heuristic. */
START_TEST(test_dealloc_policies)
{
    for (int p = 0; p < DTR_DEALLOC_COUNT; p++) {
        struct mem m;
        struct dtr *d = make(&m, DTR_HEURISTIC_DTR, (enum dtr_dealloc)p, 0, NULL);
        dtr_tensor a = call1(d, NULL, 0, 10, 1);
        dtr_tensor b = call1(d, &a, 1, 20, 1);
        ck_assert_int_eq(dtr_tensor_retain(d, a), DTR_OK);
        ck_assert_int_eq(dtr_tensor_release(d, a), DTR_OK);
        ck_assert_uint_eq(m.used, 30);   /* one reference left */
        ck_assert_int_eq(dtr_tensor_release(d, a), DTR_OK);
        struct dtr_stats st;
        dtr_stats_get(d, &st);
        if (p == DTR_DEALLOC_IGNORE) {
            ck_assert_uint_eq(m.used, 30);
            ck_assert(dtr_storage_is_evictable(d, dtr_tensor_storage(d, a)));
        } else {
            ck_assert_uint_eq(m.used, 20);
            ck_assert(!dtr_tensor_is_resident(d, a));
        }
        if (p == DTR_DEALLOC_BANISH) {
            ck_assert_uint_eq(st.banishes, 1);
            /* b can no longer be recomputed, so it is pinned */
            ck_assert_uint_eq(st.pinned_bytes, 20);
            ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, b)), DTR_ERR_INVALID);
        }
        if (p == DTR_DEALLOC_EAGER) {
            ck_assert_uint_eq(st.dealloc_evictions, 1);
            /* b can still be recomputed from a, which would come back first */
            ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, b)), DTR_OK);
            ck_assert_int_eq(dtr_tensor_acquire(d, b), DTR_OK);
            dtr_stats_get(d, &st);
            ck_assert_uint_eq(st.remats, 2);
        }
        ck_assert_int_eq(dtr_tensor_release(d, a), DTR_ERR_INVALID);   /* no references left */
        dtr_destroy(d);
    }
}
END_TEST

/* dtr_tensor_mutate: before w changes in place, what the program holds
 * that descends from w (y, evicted: recomputed first, from the old w) is
 * made resident and frozen; a storage that does not descend from w (u)
 * stays evictable; a later call reading a frozen storage makes a frozen
 * output; a frozen storage is freed for good when released, and no
 * recomputation of anything computed from w happens after the mutation. */
START_TEST(test_mutate_freezes_descendants)
{
    for (int p = 0; p < DTR_DEALLOC_COUNT; p++) {
        struct mem m;
        struct compute_log log = { 0 };
        struct dtr *d = make(&m, DTR_HEURISTIC_DTR, (enum dtr_dealloc)p, 0, &log);
        dtr_tensor w, u0;
        ck_assert_int_eq(dtr_constant_add(d, 8, NULL, &w), DTR_OK);
        ck_assert_int_eq(dtr_constant_add(d, 8, NULL, &u0), DTR_OK);
        dtr_tensor x = call1(d, &w, 1, 10, 1);
        dtr_tensor y = call1(d, &x, 1, 20, 1);
        dtr_tensor u = call1(d, &u0, 1, 30, 1);
        ck_assert_int_eq(dtr_tensor_release(d, x), DTR_OK);   /* x only an ancestor now */
        if (dtr_storage_is_evictable(d, dtr_tensor_storage(d, x)))
            ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, x)), DTR_OK);
        if (p != DTR_DEALLOC_BANISH)
            ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, y)), DTR_OK);
        int before = log.n;
        ck_assert_int_eq(dtr_tensor_mutate(d, w), DTR_OK);
        /* y came back (x first, unless banish pinned y and it never left) */
        ck_assert(dtr_tensor_is_resident(d, y));
        ck_assert_int_eq(log.n - before, p == DTR_DEALLOC_BANISH ? 0 : 2);
        ck_assert(!dtr_storage_is_evictable(d, dtr_tensor_storage(d, y)));
        ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, y)), DTR_ERR_INVALID);
        ck_assert(dtr_storage_is_evictable(d, dtr_tensor_storage(d, u)));
        struct dtr_stats st;
        dtr_stats_get(d, &st);
        ck_assert_uint_eq(st.frozen_bytes, p == DTR_DEALLOC_BANISH ? 0 : 20);   /* banish had pinned y */
        ck_assert_uint_eq(st.mutations, 1);
        /* z reads frozen y (and evictable u): z is frozen */
        dtr_tensor zin[2] = { y, u };
        dtr_tensor z = call1(d, zin, 2, 40, 1);
        if (p != DTR_DEALLOC_BANISH) {
            ck_assert(!dtr_storage_is_evictable(d, dtr_tensor_storage(d, z)));
            dtr_stats_get(d, &st);
            ck_assert_uint_eq(st.frozen_bytes, 60);
            /* released: freed for good, and its bytes with it */
            uint64_t used = m.used;
            ck_assert_int_eq(dtr_tensor_release(d, y), DTR_OK);
            ck_assert_uint_eq(m.used, used - 20);
            ck_assert(!dtr_tensor_is_resident(d, y));
            dtr_stats_get(d, &st);
            ck_assert_uint_eq(st.frozen_bytes, 40);
            /* the acquire of z needs nothing recomputed */
            int n = log.n;
            ck_assert_int_eq(dtr_tensor_acquire(d, z), DTR_OK);
            ck_assert_int_eq(dtr_tensor_unacquire(d, z), DTR_OK);
            ck_assert_int_eq(dtr_tensor_unacquire(d, z), DTR_ERR_INVALID);   /* the frozen lock is not the program's */
            ck_assert_int_eq(log.n, n);
            ck_assert_int_eq(dtr_tensor_release(d, z), DTR_OK);
            dtr_stats_get(d, &st);
            ck_assert_uint_eq(st.frozen_bytes, 0);
        }
        ck_assert_int_eq(dtr_tensor_mutate(d, 9999), DTR_ERR_INVALID);
        dtr_destroy(d);
    }
}
END_TEST

/* Making the held descendants resident before a mutation must fit: when
 * they cannot all be resident at once, DTR_ERR_OOM. */
START_TEST(test_mutate_oom)
{
    struct mem m;
    struct compute_log log = { 0 };
    struct dtr *d = make(&m, DTR_HEURISTIC_DTR, DTR_DEALLOC_EAGER, 60, &log);
    dtr_tensor w;
    ck_assert_int_eq(dtr_constant_add(d, 10, NULL, &w), DTR_OK);
    dtr_tensor a = call1(d, &w, 1, 30, 1);
    dtr_tensor b = call1(d, &w, 1, 30, 1);   /* evicts a */
    ck_assert(!dtr_tensor_is_resident(d, a));
    ck_assert_int_eq(dtr_tensor_mutate(d, w), DTR_ERR_OOM);
    dtr_destroy(d);
    (void)b;
}
END_TEST

/* A budget below what one call needs ends in DTR_ERR_OOM with a message,
 * and the instance stays spent. */
START_TEST(test_oom)
{
    struct mem m;
    struct dtr *d = make(&m, DTR_HEURISTIC_DTR, DTR_DEALLOC_EAGER, 100, NULL);
    dtr_tensor w;
    ck_assert_int_eq(dtr_constant_add(d, 60, NULL, &w), DTR_OK);
    dtr_tensor a = call1(d, &w, 1, 30, 1);
    uint64_t big = 50;
    dtr_tensor out;
    struct dtr_call_desc c = { .inputs = &a, .n_inputs = 1, .output_bytes = &big, .n_outputs = 1, .cost = 1 };
    /* w is pinned and a is an input (locked): nothing can go */
    ck_assert_int_eq(dtr_call(d, &c, &out, NULL), DTR_ERR_OOM);
    ck_assert_msg(strstr(dtr_error(d), "out of memory") && strstr(dtr_error(d), "50 bytes"), "message: %s",
                  dtr_error(d));
    ck_assert_int_eq(dtr_tensor_retain(d, a), DTR_ERR_OOM);
    ck_assert_uint_eq(m.used, 90);
    dtr_destroy(d);
}
END_TEST

/* The allocator may evict a storage it picks (e.g. a neighbour in a
 * fragmented arena) from inside alloc. */
START_TEST(test_allocator_hook)
{
    struct mem m;
    struct dtr *d = make(&m, DTR_HEURISTIC_LRU, DTR_DEALLOC_EAGER, 100, NULL);
    dtr_tensor a = call1(d, NULL, 0, 40, 1);
    dtr_tensor b = call1(d, NULL, 0, 40, 1);
    m.evict_in_alloc = (int)dtr_tensor_storage(d, b);   /* not LRU's pick, a */
    call1(d, NULL, 0, 40, 1);
    ck_assert(dtr_tensor_is_resident(d, a));
    ck_assert(!dtr_tensor_is_resident(d, b));
    struct dtr_stats st;
    dtr_stats_get(d, &st);
    ck_assert_uint_eq(st.evictions, 1);
    dtr_destroy(d);
}
END_TEST

/* ---- the linear chain of the paper ----
 * Forward x1..xN (unit cost and size; the program keeps every activation
 * for the backward pass), then backward gN = f(xN), gi = f(g(i+1), xi),
 * dropping each activation and gradient after its last use; budget
 * 2*sqrt(N) units. DTR needs O(N) executions here (Kirisame et al.,
 * Theorem 3.1, up to the heuristic's constant). */
static uint64_t chain_executions(int n, enum dtr_heuristic h, uint64_t budget, enum dtr_status *status)
{
    struct mem m;
    struct dtr_config c;
    dtr_config_default(&c);
    c.heuristic = h;
    memset(&m, 0, sizeof m);
    m.budget = budget;
    m.evict_in_alloc = -1;
    struct dtr_memory_ops mo = { .ctx = &m, .alloc = mem_alloc, .free = mem_free };
    struct dtr *d = dtr_create(&c, &mo, NULL);
    m.d = d;
    dtr_tensor *x = malloc((n + 1) * sizeof *x);
    uint64_t one = 1;
    enum dtr_status st = DTR_OK;
    struct dtr_call_desc cd = { .output_bytes = &one, .n_outputs = 1, .cost = 1 };
    for (int i = 1; i <= n && !st; i++) {
        cd.inputs = i > 1 ? &x[i - 1] : NULL;
        cd.n_inputs = i > 1;
        st = dtr_call(d, &cd, &x[i], NULL);
    }
    dtr_tensor g = 0, gn;
    if (!st) {
        cd.inputs = &x[n];
        cd.n_inputs = 1;
        st = dtr_call(d, &cd, &g, NULL);
    }
    if (!st)
        st = dtr_tensor_release(d, x[n]);
    for (int i = n - 1; i >= 1 && !st; i--) {
        dtr_tensor in[2] = { g, x[i] };
        cd.inputs = in;
        cd.n_inputs = 2;
        st = dtr_call(d, &cd, &gn, NULL);
        if (!st)
            st = dtr_tensor_release(d, g);
        if (!st)
            st = dtr_tensor_release(d, x[i]);
        g = gn;
    }
    struct dtr_stats s;
    dtr_stats_get(d, &s);
    *status = st;
    dtr_destroy(d);
    free(x);
    return s.ops + s.remats;
}

START_TEST(test_linear_chain)
{
    const int sizes[2] = { 1000, 10000 };
    /* measured: 2.96N (N=1000) and 3.09N (N=10000) for dtr and dtr-eq,
     * while dtr-local and lru need 28N and 224N: staleness alone is not
     * enough on a chain */
    for (int k = 0; k < 2; k++)
        for (int h = 0; h < 2; h++) {
            int n = sizes[k];
            enum dtr_heuristic heur = h ? DTR_HEURISTIC_EQ : DTR_HEURISTIC_DTR;
            uint64_t budget = (uint64_t)ceil(2 * sqrt((double)n));
            enum dtr_status st;
            uint64_t ex = chain_executions(n, heur, budget, &st);
            ck_assert_msg(st == DTR_OK, "N=%d: status %s", n, dtr_status_name(st));
            /* 2N calls of the program itself; the bound allows 2N more */
            ck_assert_msg(ex <= 4 * (uint64_t)n, "%s, N=%d, budget %llu: %llu executions > 4N",
                          dtr_heuristic_name(heur), n, (unsigned long long)budget, (unsigned long long)ex);
            ck_assert_uint_ge(ex, 2 * (uint64_t)n);
        }
}
END_TEST

/* 100,000 calls in a chain, all but the last dropped (eager: evicted),
 * then the last one evicted and asked for: one rematerialization 100,000
 * calls deep, on the explicit stack, evicting as it climbs (16 bytes).
 * dtr-eq: the exact dtr score walks the evicted chain below each candidate,
 * quadratic here (as in the authors' simulator). */
START_TEST(test_deep_chain)
{
    const int n = 100000;
    struct mem m;
    struct dtr *d = make(&m, DTR_HEURISTIC_EQ, DTR_DEALLOC_EAGER, 16, NULL);
    dtr_tensor prev = 0, cur;
    for (int i = 0; i < n; i++) {
        cur = call1(d, i ? &prev : NULL, i ? 1 : 0, 1, 1);
        if (i)
            ck_assert_int_eq(dtr_tensor_release(d, prev), DTR_OK);
        prev = cur;
    }
    ck_assert_uint_eq(m.used, 1);
    ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, cur)), DTR_OK);
    ck_assert_int_eq(dtr_tensor_acquire(d, cur), DTR_OK);
    struct dtr_stats st;
    dtr_stats_get(d, &st);
    ck_assert_uint_eq(st.remats, (uint64_t)n);
    ASSERT_NEAR(st.remat_compute, n);
    ck_assert_uint_le(m.peak, 16);
    dtr_destroy(d);
}
END_TEST

/* The remat limit stops a run once recomputation exceeds it. */
START_TEST(test_remat_limit)
{
    struct mem m;
    struct dtr_config c;
    dtr_config_default(&c);
    c.remat_limit = 2.5;
    memset(&m, 0, sizeof m);
    m.evict_in_alloc = -1;
    struct dtr_memory_ops mo = { .ctx = &m, .alloc = mem_alloc, .free = mem_free };
    struct dtr *d = dtr_create(&c, &mo, NULL);
    m.d = d;
    dtr_tensor a = call1(d, NULL, 0, 1, 2);
    dtr_tensor b = call1(d, &a, 1, 1, 1);
    ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, b)), DTR_OK);
    ck_assert_int_eq(dtr_tensor_acquire(d, b), DTR_OK);    /* 1 <= 2.5 */
    ck_assert_int_eq(dtr_tensor_unacquire(d, b), DTR_OK);
    ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, a)), DTR_OK);
    ck_assert_int_eq(dtr_storage_evict(d, dtr_tensor_storage(d, b)), DTR_OK);
    ck_assert_int_eq(dtr_tensor_acquire(d, b), DTR_ERR_REMAT_LIMIT);   /* a: 1 + 2 > 2.5 */
    ck_assert_ptr_nonnull(strstr(dtr_error(d), "exceeded"));
    dtr_destroy(d);
}
END_TEST

/* The random heuristic is reproducible from its seed; invalid use is an
 * error, not a crash. */
START_TEST(test_random_and_invalid)
{
    int victims[2];
    for (int r = 0; r < 2; r++) {
        struct mem m;
        struct dtr *d = make(&m, DTR_HEURISTIC_RANDOM, DTR_DEALLOC_EAGER, 50, NULL);
        dtr_tensor t[5];
        for (int i = 0; i < 5; i++)
            t[i] = call1(d, NULL, 0, 10, 1);
        call1(d, NULL, 0, 10, 1);
        victims[r] = -1;
        for (int i = 0; i < 5; i++)
            if (!dtr_tensor_is_resident(d, t[i]))
                victims[r] = i;
        ck_assert_int_ge(victims[r], 0);
        ck_assert_int_eq(dtr_tensor_release(d, 12345), DTR_ERR_INVALID);
        dtr_tensor bad = 999, out;
        uint64_t one = 1;
        struct dtr_call_desc c = { .inputs = &bad, .n_inputs = 1, .output_bytes = &one, .n_outputs = 1 };
        ck_assert_int_eq(dtr_call(d, &c, &out, NULL), DTR_ERR_INVALID);
        dtr_destroy(d);
    }
    ck_assert_int_eq(victims[0], victims[1]);
    enum dtr_heuristic h;
    ck_assert_int_eq(dtr_heuristic_parse("dtr-eq", &h), 0);
    ck_assert_int_eq(h, DTR_HEURISTIC_EQ);
    ck_assert_int_eq(dtr_heuristic_parse("nope", &h), -1);
}
END_TEST

/* ---- the score caches against scores computed afresh ----
 * Random programs shaped like DenseNet and ResNet (many-input calls,
 * long fan-outs, views, multi-output calls) under a budget, with costs that
 * are integers (the batched region sums) or not (region walks): every time
 * the allocator refuses a buffer, which is when the core is about to score
 * the pool, every evictable storage's score must equal, bit for bit, the
 * score computed from scratch. */
struct cache_check {
    struct mem m;
    uint64_t rng;
    long checked;
};

static int cc_alloc(void *ctx, dtr_storage s, uint64_t bytes, unsigned flags)
{
    struct cache_check *cc = ctx;
    int rc = mem_alloc(&cc->m, s, bytes, flags);
    if (rc) {
        struct dtr_stats st;
        dtr_stats_get(cc->m.d, &st);
        for (dtr_storage x = 0; x < st.storages; x++) {
            double got, want;
            if (!dtr_storage_is_evictable(cc->m.d, x))
                continue;
            ck_assert_int_eq(dtr_storage_score(cc->m.d, x, &got), DTR_OK);
            want = dtr_score_reference(cc->m.d, x);
            ck_assert_msg(got == want || (isnan(got) && isnan(want)),
                          "%s: storage %u scored %.17g, afresh %.17g", dtr_heuristic_name(cc->m.d->cfg.heuristic), x,
                          got, want);
            cc->checked++;
        }
    }
    return rc;
}

static void cc_free(void *ctx, dtr_storage s, unsigned flags) { mem_free(&((struct cache_check *)ctx)->m, s, flags); }

static long run_cache_check(enum dtr_heuristic h, enum dtr_dealloc p, int integral, uint64_t seed)
{
    struct cache_check cc;
    memset(&cc, 0, sizeof cc);
    cc.rng = seed;
    cc.m.evict_in_alloc = -1;
    cc.m.budget = 2600;
    const struct dtr_memory_ops mo = { .ctx = &cc, .alloc = cc_alloc, .free = cc_free };
    const struct dtr_test_program prog = { .live = 40, .calls = 400, .concat_one_in = 6, .concat_extra = 16,
                                           .recent = 6, .reads = 0 };
    dtr_test_run(h, p, 0, &mo, &cc.m.d, &prog, integral, &cc.rng);
    return cc.checked;
}

START_TEST(test_score_caches)
{
    const enum dtr_heuristic hs[] = { DTR_HEURISTIC_DTR, DTR_HEURISTIC_EQ, DTR_HEURISTIC_MSPS };
    const enum dtr_dealloc ps[] = { DTR_DEALLOC_EAGER, DTR_DEALLOC_BANISH, DTR_DEALLOC_IGNORE };
    for (int h = 0; h < 3; h++) {
        long checked = 0;
        for (int p = 0; p < 3; p++)
            for (int integral = 0; integral < 2; integral++)
                for (uint64_t seed = 1; seed <= 6; seed++)
                    checked += run_cache_check(hs[h], ps[p], integral, seed * 0x9E3779B97F4A7C15ull);
        /* enough pressure that the caches were exercised */
        ck_assert_msg(checked > 10000, "%s: only %ld scores checked", dtr_heuristic_name(hs[h]), checked);
    }
}
END_TEST

int main(void)
{
    TCase *tc;
    Suite *s = testutil_suite("dtr", "core", 120, &tc);
    tcase_add_test(tc, test_choice_per_heuristic);
    tcase_add_test(tc, test_neighbourhood_scores);
    tcase_add_test(tc, test_eq_phantom);
    tcase_add_test(tc, test_multi_output);
    tcase_add_test(tc, test_views);
    tcase_add_test(tc, test_dealloc_policies);
    tcase_add_test(tc, test_oom);
    tcase_add_test(tc, test_mutate_freezes_descendants);
    tcase_add_test(tc, test_mutate_oom);
    tcase_add_test(tc, test_allocator_hook);
    tcase_add_test(tc, test_linear_chain);
    tcase_add_test(tc, test_deep_chain);
    tcase_add_test(tc, test_remat_limit);
    tcase_add_test(tc, test_random_and_invalid);
    tcase_add_test(tc, test_score_caches);
    return testutil_run(s);
}
