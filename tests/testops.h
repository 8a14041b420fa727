/* tests/testops.h — helpers shared by the operator suites (tests/test_ops_*.c):
 * tensors whose memory a test frees in one call, the suites' small random
 * generator, and a scratch allocator that counts live blocks so that a test
 * can check a kernel gave back all it took. Check assertions fail the
 * running test on exhaustion; nothing here knows an operator. */
#ifndef DTRX_TESTOPS_H
#define DTRX_TESTOPS_H

#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

/* Zeroed memory held until testops_free_all(). */
void *testops_alloc(size_t bytes);
void testops_free_all(void);

/* A tensor (from testops_alloc) with a copy of `data`, or zeros when NULL. */
struct tensor *testops_tensor(int dtype, int rank, const int64_t *dims, const void *data);

/* Uniform in [-2, 2) from a linear congruential generator; each suite keeps
 * its own state, so its data does not depend on the other suites. */
float testops_frand(uint32_t *state);
/* A float32 tensor filled with testops_frand(state). */
struct tensor *testops_tensor_rand(uint32_t *state, int rank, const int64_t *dims);

/* op_env scratch hooks (64-byte aligned); testops_scratch_live counts the
 * blocks handed out and not yet freed. */
extern int testops_scratch_live;
void *testops_scratch_alloc(void *ctx, size_t bytes);
void testops_scratch_free(void *ctx, void *ptr);

#endif
