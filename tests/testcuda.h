/* tests/testcuda.h — the harness the CUDA kernel suites (tests/test_cuda_*.c)
 * share: attribute builders, counted device scratch for op_env, device
 * blocks freed in one call, host/device tensor copies, and the op_def lookup
 * with its attributes parsed. It speaks only to a struct backend (set
 * testcuda_dev once the device is open) and the module's struct
 * backend_module, so it builds without CUDA too.
 * Check assertions fail the running test on any device error. */
#ifndef DTRX_TESTCUDA_H
#define DTRX_TESTCUDA_H

#include <stddef.h>
#include <stdint.h>

#include <check.h>

#include "ops/ops.h"

/* ---- attributes (the name and string are not copied; short names, as the
 * suites build many) ---- */
struct onnx_attr a_int(const char *name, int64_t v);
struct onnx_attr a_float(const char *name, float v);
struct onnx_attr a_str(const char *name, const char *v);

/* ---- device memory ---- */
extern const struct backend *testcuda_dev;
/* scratch blocks handed out and not yet freed */
extern int testcuda_scratch_live;
/* nonzero: testcuda_scratch_alloc returns NULL (a refused allocation) */
extern int testcuda_scratch_refuse;
/* nonzero: synchronize the device before freeing scratch or blocks (kernels
 * that free scratch with work still queued, as the runtime's arena allows) */
extern int testcuda_sync_frees;

void *testcuda_scratch_alloc(void *ctx, size_t bytes);
void testcuda_scratch_free(void *ctx, void *ptr);

/* A device block held until testcuda_free_all(). */
void *testcuda_alloc(size_t bytes);
void testcuda_free_all(void);

/* A device copy of host tensor t in a testcuda_alloc block (NULL stays NULL). */
struct tensor *testcuda_to_dev(const struct tensor *t);
/* A host copy (testops_alloc) of device tensor d's bytes, after a synchronize. */
void *testcuda_to_host(const struct tensor *d);

/* ---- operators ---- */
/* The op_def of domain/op at opset (asserted registered), *version its
 * version, *params its parsed attributes (NULL without a parser); `what`
 * (may be NULL) names the case in the failure message. */
const struct op_def *testcuda_find_def(const char *domain, const char *op, int opset, const char *node_name,
                                       int n_in, int n_out, const struct onnx_attr *attrs, int n_attrs,
                                       const char *what, int *version, void **params, char *err,
                                       size_t err_size);

/* ---- the CUDA module ---- */
/* The CUDA backend module, NULL with the reason in `why` when there is
 * none (a build without CUDA) or it cannot be loaded. From
 * tests/testcuda_module.c (the module the build made, found through
 * DTRX_CUDA_MODULE) or, in the host emulator, tests/cuda_emu/stub.c. */
const struct backend_module *testcuda_module(char *why, size_t why_size);
/* The module's device (shared, reference counted), NULL with the reason in
 * `why` without a module or a usable device. */
const struct backend *testcuda_open(char *why, size_t why_size);
/* Releases what testcuda_open returned (NULL is harmless). */
void testcuda_close(const struct backend *b);
/* The module's kernel for domain/op (the registry's op_def of that name,
 * any version), NULL when the op or its kernel does not exist. */
op_kernel_fn testcuda_kernel(const char *domain, const char *op);
/* The index-th (domain, name) of the module's kernel tables; NULL past the end. */
const char *testcuda_kernel_name_at(int index, const char **domain);

/* ---- running ---- */
/* Runs the suite in this process (a CUDA context does not survive fork())
 * and frees the runner; returns the number of failed tests. */
int testcuda_run(Suite *s);

#endif
