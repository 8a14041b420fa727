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

struct chk {
    struct dtr *d;
    uint64_t used, budget, min_evict;
    uint32_t expect;        /* the victim the brute-force scan chose, DTR_NONE when none is due */
    long checked;
    uint64_t rng;
};

static uint64_t chk_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

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
    struct dtr_config cfg;
    dtr_config_default(&cfg);
    cfg.heuristic = h;
    cfg.dealloc = p;
    cfg.min_evict_bytes = min_evict;
    struct dtr_memory_ops mo = { .ctx = &c, .alloc = chk_alloc, .free = chk_free };
    struct dtr *d = dtr_create(&cfg, &mo, NULL);
    ck_assert_ptr_nonnull(d);
    c.d = d;
    enum { LIVE = 48 };
    dtr_tensor live[LIVE];
    int n_live = 0;
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(dtr_constant_add(d, 8, NULL, &live[n_live++]), DTR_OK);
    for (int call = 0; call < 500; call++) {
        dtr_tensor in[32], out[3];
        uint64_t bytes[3];
        int32_t alias[3] = { -1, -1, -1 };
        uint32_t n_in = 1 + (uint32_t)(chk_rand(&c.rng) % 3), n_out = 1 + (uint32_t)(chk_rand(&c.rng) % 4 == 0);
        if (chk_rand(&c.rng) % 4 == 0)
            n_in = 8 + (uint32_t)(chk_rand(&c.rng) % 24);   /* a DenseNet-like concatenation */
        if (n_in > (uint32_t)n_live)
            n_in = (uint32_t)n_live;
        for (uint32_t k = 0; k < n_in; k++)
            in[k] = live[chk_rand(&c.rng) % 2 ? n_live - 1 - (int)(chk_rand(&c.rng) % (n_live < 8 ? n_live : 8))
                                              : (int)(chk_rand(&c.rng) % n_live)];
        for (uint32_t k = 0; k < n_out; k++)
            bytes[k] = 16 + chk_rand(&c.rng) % 120;
        if (chk_rand(&c.rng) % 8 == 0)
            alias[0] = 0;   /* a view of the first input */
        double cost = (double)(1 + chk_rand(&c.rng) % 1000);
        if (!integral)
            cost /= 7.0;   /* inexact costs: no batched region refresh */
        struct dtr_call_desc desc = { .inputs = in, .n_inputs = n_in, .output_bytes = bytes, .output_alias = alias,
                                      .n_outputs = n_out, .cost = cost };
        enum dtr_status st = dtr_call(d, &desc, out, NULL);
        if (st == DTR_ERR_OOM)
            break;   /* needs more than the budget: checked up to here */
        ck_assert_msg(st == DTR_OK, "%s", dtr_error(d));
        for (uint32_t k = 0; k < n_out; k++) {
            if (n_live == LIVE) {
                int victim = 4 + (int)(chk_rand(&c.rng) % (LIVE - 4));
                ck_assert_int_eq(dtr_tensor_release(d, live[victim]), DTR_OK);
                live[victim] = live[--n_live];
            }
            live[n_live++] = out[k];
        }
        if (chk_rand(&c.rng) % 4 == 0 && n_live > 8) {
            int victim = 4 + (int)(chk_rand(&c.rng) % (uint64_t)(n_live - 4));
            ck_assert_int_eq(dtr_tensor_release(d, live[victim]), DTR_OK);
            live[victim] = live[--n_live];
        }
        /* now and then the program reads an old tensor (a remat outside any call) */
        if (chk_rand(&c.rng) % 16 == 0) {
            dtr_tensor t = live[chk_rand(&c.rng) % (uint64_t)n_live];
            st = dtr_tensor_acquire(d, t);
            if (st == DTR_ERR_OOM)
                break;
            ck_assert_msg(st == DTR_OK, "%s", dtr_error(d));
            ck_assert_int_eq(dtr_tensor_unacquire(d, t), DTR_OK);
        }
    }
    dtr_destroy(d);
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
    Suite *s = suite_create("dtr_choose");
    TCase *tc = tcase_create("choose");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_choice_matches_full_scan);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
