/* tests/test_dtr_choose.c — dtr_choose passes over candidates that cannot
 * win (bounds from compute and from region caches only evictions made
 * stale) and recomputes only some stale caches: on random programs with
 * wide concatenations, views, releases and every deallocation policy, each
 * storage it evicts must be the one that scoring every candidate afresh
 * (dtr_score_reference, simrd's scan: the last lowest, a 0 stops) picks. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/dtr.h"
#include "dtr/dtr-impl.h"   /* the pool and dtr_score_reference */
#include "dtr_test_util.h"
#include "testutil.h"

struct chk {
    struct dtr *d;
    uint64_t used, budget, min_evict;
    uint32_t expect;        /* the victim the brute-force scan chose, DTR_NONE when none is due */
    long checked;
    uint64_t rng;
};

/* simrd's scan over every candidate, scores computed afresh; with
 * min_evict, small storages only when nothing else is there. */
static uint32_t brute_choice(struct chk *c)
{
    struct dtr *d = c->d;
    for (int pass = 0; pass < 2; pass++) {
        double best = INFINITY;
        uint32_t best_s = DTR_NONE;
        for (uint32_t s = d->pool_head; s != DTR_NONE; s = d->storages[s].pool_next) {
            if (pass == 0 && d->storages[s].bytes < c->min_evict)
                continue;
            double score = dtr_score_reference(d, s);
            if (score <= best) {
                best = score;
                best_s = s;
            }
            if (score == 0)
                break;
        }
        if (best_s != DTR_NONE)
            return best_s;
    }
    return DTR_NONE;
}

static int chk_alloc(void *ctx, dtr_storage s, uint64_t bytes, unsigned flags)
{
    struct chk *c = ctx;
    (void)s;
    (void)flags;
    if (c->used + bytes > c->budget) {
        c->expect = brute_choice(c);
        return 1;
    }
    c->used += bytes;
    return 0;
}

static void chk_free(void *ctx, dtr_storage s, unsigned flags)
{
    struct chk *c = ctx;
    c->used -= dtr_storage_bytes(c->d, s);
    if (!(flags & DTR_ALLOC_SCRATCH) && c->expect != DTR_NONE) {
        ck_assert_msg(s == c->expect, "%s: evicted storage %u, scoring every candidate picks %u",
                      dtr_heuristic_name(c->d->cfg.heuristic), s, c->expect);
        c->expect = DTR_NONE;
        c->checked++;
    }
}

static long run_program(enum dtr_heuristic h, enum dtr_dealloc p, int integral, uint64_t min_evict, uint64_t seed)
{
    struct chk c;
    memset(&c, 0, sizeof c);
    c.rng = seed;
    c.budget = 2400;
    c.min_evict = min_evict;
    c.expect = DTR_NONE;
    const struct dtr_memory_ops mo = { .ctx = &c, .alloc = chk_alloc, .free = chk_free };
    const struct dtr_test_program prog = { .live = 48, .calls = 500, .concat_one_in = 4, .concat_extra = 24,
                                           .recent = 8, .reads = 1 };
    dtr_test_run(h, p, min_evict, &mo, &c.d, &prog, integral, &c.rng);
    return c.checked;
}

START_TEST(test_choice_matches_full_scan)
{
    const enum dtr_heuristic hs[] = { DTR_HEURISTIC_DTR, DTR_HEURISTIC_MSPS, DTR_HEURISTIC_EQ,
                                      DTR_HEURISTIC_LOCAL };
    const enum dtr_dealloc ps[] = { DTR_DEALLOC_EAGER, DTR_DEALLOC_BANISH, DTR_DEALLOC_IGNORE };
    for (int h = 0; h < 4; h++) {
        long checked = 0;
        for (int p = 0; p < 3; p++)
            for (int integral = 0; integral < 2; integral++)
                for (int small = 0; small < 2; small++)
                    for (uint64_t seed = 1; seed <= 4; seed++)
                        checked += run_program(hs[h], ps[p], integral, small ? 64 : 0,
                                               seed * 0x9E3779B97F4A7C15ull);
        /* enough evictions that stale caches and bounds were exercised */
        ck_assert_msg(checked > 3000, "%s: only %ld evictions checked", dtr_heuristic_name(hs[h]), checked);
    }
}
END_TEST

int main(void)
{
    TCase *tc;
    Suite *s = testutil_suite("dtr_choose", "choose", 120, &tc);
    tcase_add_test(tc, test_choice_matches_full_scan);
    return testutil_run(s);
}
