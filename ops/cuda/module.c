/* ops/cuda/module.c — the module's entry (the one symbol it exports,
 * dtrx_backend_module, see "backend modules" in ops/ops.h) and the
 * backend's kernel lookup over the kernel tables.
 *
 * The tables are the ones every host file defines with CUDA_KERNEL_TABLE
 * (cuda-impl.h); the linker gathers a pointer to each into the section
 * dtrx_cuda_kernels, so a family added to the build is found without being
 * listed anywhere. */
#include <string.h>

#include "ops/cuda/cuda-impl.h"

extern const struct cuda_kernel_entry *const __start_dtrx_cuda_kernels[];
extern const struct cuda_kernel_entry *const __stop_dtrx_cuda_kernels[];

static const struct cuda_kernel_entry *entry_at(int index)
{
    if (index < 0)
        return NULL;
    for (const struct cuda_kernel_entry *const *t = __start_dtrx_cuda_kernels; t < __stop_dtrx_cuda_kernels; t++)
        for (const struct cuda_kernel_entry *e = *t; e->name; e++)
            if (index-- == 0)
                return e;
    return NULL;
}

cuda_kernel_fn cuda_kernel_find(const char *domain, const char *name)
{
    if (!domain)
        domain = "";
    for (const struct cuda_kernel_entry *const *t = __start_dtrx_cuda_kernels; t < __stop_dtrx_cuda_kernels; t++)
        for (const struct cuda_kernel_entry *e = *t; e->name; e++)
            if (!strcmp(e->name, name) && !strcmp(e->domain ? e->domain : "", domain))
                return e->kernel;
    return NULL;
}

cuda_kernel_fn cuda_kernel_of(const struct op_def *def)
{
    if (def->kernel[BACKEND_CUDA])
        return def->kernel[BACKEND_CUDA];
    return cuda_kernel_find(def->domain, def->name);
}

const char *cuda_kernel_name_at(int index, const char **domain)
{
    const struct cuda_kernel_entry *e = entry_at(index);
    if (e && domain)
        *domain = e->domain ? e->domain : "";
    return e ? e->name : NULL;
}

__attribute__((visibility("default"))) const struct backend_module dtrx_backend_module = {
    .abi = BACKEND_MODULE_ABI,
    .name = "cuda",
    .open = cuda_backend_open,
    .kernel = cuda_kernel_of,
    .kernel_name_at = cuda_kernel_name_at,
};
