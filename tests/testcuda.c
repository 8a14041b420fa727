/* tests/testcuda.c — the CUDA suites' shared harness (see testcuda.h). */
#include "testcuda.h"

#include <check.h>
#include <string.h>

#include "testops.h"

struct onnx_attr a_int(const char *name, int64_t v)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_INT, .i = v };
}

struct onnx_attr a_float(const char *name, float v)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_FLOAT, .f = v };
}

struct onnx_attr a_str(const char *name, const char *v)
{
    return (struct onnx_attr){ .name = (char *)name, .type = ONNX_ATTR_STRING, .s = (char *)v,
                               .s_len = strlen(v) };
}

/* ---- the CUDA module ---- */

const struct backend *testcuda_open(char *why, size_t why_size)
{
    const struct backend_module *m = testcuda_module(why, why_size);
    return m ? m->open(why, why_size) : NULL;
}

void testcuda_close(const struct backend *b)
{
    if (b && b->close)
        b->close(b);
}

op_kernel_fn testcuda_kernel(const char *domain, const char *op)
{
    const struct backend_module *m = testcuda_module(NULL, 0);
    int version = 0;
    const struct op_def *def = op_registry_find(domain, op, 100000, &version);
    return m && def ? m->kernel(def) : NULL;
}

const char *testcuda_kernel_name_at(int index, const char **domain)
{
    const struct backend_module *m = testcuda_module(NULL, 0);
    return m && m->kernel_name_at ? m->kernel_name_at(index, domain) : NULL;
}

/* ---- device memory ---- */

const struct backend *testcuda_dev;
int testcuda_scratch_live;
int testcuda_scratch_refuse;
int testcuda_sync_frees;

void *testcuda_scratch_alloc(void *ctx, size_t bytes)
{
    (void)ctx;
    if (testcuda_scratch_refuse)
        return NULL;
    void *p = testcuda_dev->alloc(testcuda_dev->ctx, bytes ? bytes : 1);
    ck_assert_msg(p != NULL, "device allocation of %zu bytes failed", bytes);
    testcuda_scratch_live++;
    return p;
}

void testcuda_scratch_free(void *ctx, void *ptr)
{
    (void)ctx;
    testcuda_scratch_live--;
    if (testcuda_sync_frees)
        ck_assert(!testcuda_dev->synchronize(testcuda_dev->ctx));
    testcuda_dev->free(testcuda_dev->ctx, ptr);
}

#define MAX_DEV 128
static void *dev_blocks[MAX_DEV];
static int n_dev_blocks;

void *testcuda_alloc(size_t bytes)
{
    void *p = testcuda_dev->alloc(testcuda_dev->ctx, bytes ? bytes : 1);
    ck_assert_msg(p != NULL, "device allocation of %zu bytes failed", bytes);
    ck_assert_int_lt(n_dev_blocks, MAX_DEV);
    dev_blocks[n_dev_blocks++] = p;
    return p;
}

void testcuda_free_all(void)
{
    if (testcuda_sync_frees)
        ck_assert(!testcuda_dev->synchronize(testcuda_dev->ctx));
    for (int i = 0; i < n_dev_blocks; i++)
        testcuda_dev->free(testcuda_dev->ctx, dev_blocks[i]);
    n_dev_blocks = 0;
}

struct tensor *testcuda_to_dev(const struct tensor *t)
{
    if (!t)
        return NULL;
    struct tensor *d = testops_alloc(sizeof *d);
    *d = *t;
    size_t bytes = tensor_size_bytes(t);
    d->data = testcuda_alloc(bytes);
    if (bytes)
        ck_assert(!testcuda_dev->copy_to_device(testcuda_dev->ctx, d->data, t->data, bytes));
    return d;
}

void *testcuda_to_host(const struct tensor *d)
{
    size_t bytes = tensor_size_bytes(d);
    void *h = testops_alloc(bytes);
    ck_assert(!testcuda_dev->synchronize(testcuda_dev->ctx));
    if (bytes)
        ck_assert(!testcuda_dev->copy_to_host(testcuda_dev->ctx, h, d->data, bytes));
    return h;
}

/* ---- operators ---- */

const struct op_def *testcuda_find_def(const char *domain, const char *op, int opset, const char *node_name,
                                       int n_in, int n_out, const struct onnx_attr *attrs, int n_attrs,
                                       const char *what, int *version, void **params, char *err,
                                       size_t err_size)
{
    const struct op_def *def = op_registry_find(domain, op, opset, version);
    ck_assert_msg(def != NULL, "%s not registered at opset %d", op, opset);
    struct onnx_node node = { .name = (char *)(node_name ? node_name : "n0"), .op_type = (char *)op,
                              .domain = (char *)domain, .n_inputs = n_in, .n_outputs = n_out,
                              .n_attrs = n_attrs, .attrs = (struct onnx_attr *)attrs };
    *params = NULL;
    int rc = def->parse ? def->parse(&node, *version, params, err, err_size) : 0;
    ck_assert_msg(rc == 0, "%s (%s): parse: %s", op, what ? what : node.name, err);
    return def;
}

int testcuda_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed;
}
