/* tests/testcuda_module.c — testcuda_module() for the CTest suites: the
 * module the build made, loaded as the runtime loads it
 * (backend_module_load; CTest points DTRX_CUDA_MODULE at it). */
#include "testcuda.h"

const struct backend_module *testcuda_module(char *why, size_t why_size)
{
    char scratch[1024];
    if (!why || !why_size) {
        why = scratch;
        why_size = sizeof scratch;
    }
    return backend_module_load("cuda", why, why_size);
}
