/* tests/testops.c — see testops.h. */
#include "testops.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#define TESTOPS_POOL_MAX 8192
static void *pool[TESTOPS_POOL_MAX];
static int pool_n;

void *testops_alloc(size_t bytes)
{
    void *p = calloc(1, bytes ? bytes : 1);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_lt(pool_n, TESTOPS_POOL_MAX);
    pool[pool_n++] = p;
    return p;
}

void testops_free_all(void)
{
    for (int i = 0; i < pool_n; i++)
        free(pool[i]);
    pool_n = 0;
}

struct tensor *testops_tensor(int dtype, int rank, const int64_t *dims, const void *data)
{
    struct tensor *t = testops_alloc(sizeof *t);
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->data = testops_alloc(tensor_size_bytes(t));
    if (data)
        memcpy(t->data, data, tensor_size_bytes(t));
    return t;
}

float testops_frand(uint32_t *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)(*state >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
}

struct tensor *testops_tensor_rand(uint32_t *state, int rank, const int64_t *dims)
{
    struct tensor *t = testops_tensor(ONNX_DTYPE_FLOAT, rank, dims, NULL);
    float *d = t->data;
    for (int64_t i = 0; i < tensor_numel(t); i++)
        d[i] = testops_frand(state);
    return t;
}

int testops_scratch_live;

void *testops_scratch_alloc(void *ctx, size_t bytes)
{
    (void)ctx;
    testops_scratch_live++;
    return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

void testops_scratch_free(void *ctx, void *ptr)
{
    (void)ctx;
    testops_scratch_live--;
    free(ptr);
}
