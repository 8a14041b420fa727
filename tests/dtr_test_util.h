/* tests/dtr_test_util.h — random programs for the DTR core's checks
 * (test_dtr's score caches, test_dtr_choose's choices): a xorshift stream
 * and a driver that issues calls with random inputs (mostly recent
 * tensors, sometimes old ones; now and then a wide concatenation or a
 * view), outputs and costs, drops old tensors and, optionally, reads old
 * ones outside any call. What is checked happens in the tests' allocator
 * hooks. */
#ifndef DTRX_DTR_TEST_UTIL_H
#define DTRX_DTR_TEST_UTIL_H

#include <check.h>
#include <stdint.h>

#include "dtr/dtr.h"

static inline uint64_t dtr_test_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

struct dtr_test_program {
    int live;            /* tensors the program holds at most (4 constants among them), up to 64 */
    int calls;
    int concat_one_in;   /* one call in this many is a concatenation of 8 + [0, concat_extra) inputs */
    int concat_extra;    /* up to 24 */
    int recent;          /* half the inputs are among the last this many tensors */
    int reads;           /* 1: one step in 16 reads an old tensor (a remat outside any call) */
};

/* Runs the program on d until its calls are done or one needs more than
 * the budget (DTR_ERR_OOM: checked up to there). integral: integer costs
 * (else divided by 7: inexact, no batched region refresh). */
static inline void dtr_test_random_program(struct dtr *d, const struct dtr_test_program *p, int integral,
                                           uint64_t *rng)
{
    ck_assert(p->live <= 64 && p->concat_extra <= 24);
    dtr_tensor live[64];
    int n_live = 0;
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(dtr_constant_add(d, 8, NULL, &live[n_live++]), DTR_OK);
    for (int call = 0; call < p->calls; call++) {
        dtr_tensor in[32], out[3];
        uint64_t bytes[3];
        int32_t alias[3] = { -1, -1, -1 };
        uint32_t n_in = 1 + (uint32_t)(dtr_test_rand(rng) % 3), n_out = 1 + (uint32_t)(dtr_test_rand(rng) % 4 == 0);
        if (dtr_test_rand(rng) % (uint64_t)p->concat_one_in == 0)
            n_in = 8 + (uint32_t)(dtr_test_rand(rng) % (uint64_t)p->concat_extra);   /* a DenseNet-like concatenation */
        if (n_in > (uint32_t)n_live)
            n_in = (uint32_t)n_live;
        for (uint32_t k = 0; k < n_in; k++)   /* mostly recent tensors, sometimes old ones */
            in[k] = live[dtr_test_rand(rng) % 2
                             ? n_live - 1 - (int)(dtr_test_rand(rng) % (uint64_t)(n_live < p->recent ? n_live : p->recent))
                             : (int)(dtr_test_rand(rng) % (uint64_t)n_live)];
        for (uint32_t k = 0; k < n_out; k++)
            bytes[k] = 16 + dtr_test_rand(rng) % 120;
        if (dtr_test_rand(rng) % 8 == 0)
            alias[0] = 0;   /* a view of the first input */
        double cost = (double)(1 + dtr_test_rand(rng) % 1000);
        if (!integral)
            cost /= 7.0;   /* inexact costs: no batched region refresh */
        struct dtr_call_desc desc = { .inputs = in, .n_inputs = n_in, .output_bytes = bytes, .output_alias = alias,
                                      .n_outputs = n_out, .cost = cost };
        enum dtr_status st = dtr_call(d, &desc, out, NULL);
        if (st == DTR_ERR_OOM)
            return;   /* this program needs more than the budget: checked up to here */
        ck_assert_msg(st == DTR_OK, "%s", dtr_error(d));
        for (uint32_t k = 0; k < n_out; k++) {
            if (n_live == p->live) {   /* the program drops an old tensor (not a constant) */
                int victim = 4 + (int)(dtr_test_rand(rng) % (uint64_t)(p->live - 4));
                ck_assert_int_eq(dtr_tensor_release(d, live[victim]), DTR_OK);
                live[victim] = live[--n_live];
            }
            live[n_live++] = out[k];
        }
        if (dtr_test_rand(rng) % 4 == 0 && n_live > 8) {
            int victim = 4 + (int)(dtr_test_rand(rng) % (uint64_t)(n_live - 4));
            ck_assert_int_eq(dtr_tensor_release(d, live[victim]), DTR_OK);
            live[victim] = live[--n_live];
        }
        if (p->reads && dtr_test_rand(rng) % 16 == 0) {
            dtr_tensor t = live[dtr_test_rand(rng) % (uint64_t)n_live];
            st = dtr_tensor_acquire(d, t);
            if (st == DTR_ERR_OOM)
                return;
            ck_assert_msg(st == DTR_OK, "%s", dtr_error(d));
            ck_assert_int_eq(dtr_tensor_unacquire(d, t), DTR_OK);
        }
    }
}

/* A DTR with heuristic h, deallocation policy dp and min_evict_bytes
 * min_evict over the memory hooks mo runs the program and is destroyed;
 * *handle (the hooks' pointer to it) is set before the first call. */
static inline void dtr_test_run(enum dtr_heuristic h, enum dtr_dealloc dp, uint64_t min_evict,
                                const struct dtr_memory_ops *mo, struct dtr **handle,
                                const struct dtr_test_program *p, int integral, uint64_t *rng)
{
    struct dtr_config cfg;
    dtr_config_default(&cfg);
    cfg.heuristic = h;
    cfg.dealloc = dp;
    cfg.min_evict_bytes = min_evict;
    struct dtr *d = dtr_create(&cfg, mo, NULL);
    ck_assert_ptr_nonnull(d);
    *handle = d;
    dtr_test_random_program(d, p, integral, rng);
    dtr_destroy(d);
}

#endif
