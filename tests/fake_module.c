/* tests/fake_module.c — a backend module of another ABI (test_cuda_module:
 * the loader must refuse it by its ABI, not call into it). */
#include "ops/ops.h"

const struct backend_module dtrx_backend_module = { .abi = BACKEND_MODULE_ABI + 1, .name = "cuda" };
