/* ops/cuda/registry.c — the CUDA kernels of every family, found by the
 * operator's domain and name.
 *
 * A family's table is listed here when the build has found its definition
 * (CMake scans the ops/cuda C files for "cuda_kernels_<family>[] =" and defines
 * DTRX_CUDA_HAS_<FAMILY>), so the backend links with whichever families
 * exist. The references are ordinary ones on purpose: a weak reference would
 * not pull a family's object out of the static library, and its kernels
 * would silently go missing from the dtrexec binary. */
#include <string.h>

#include "ops/cuda/cuda-impl.h"

#ifdef DTRX_CUDA_HAS_NN
extern const struct cuda_kernel_entry cuda_kernels_nn[];
#endif
#ifdef DTRX_CUDA_HAS_ELEM
extern const struct cuda_kernel_entry cuda_kernels_elem[];
#endif
#ifdef DTRX_CUDA_HAS_LAYOUT
extern const struct cuda_kernel_entry cuda_kernels_layout[];
#endif
#ifdef DTRX_CUDA_HAS_MISC
extern const struct cuda_kernel_entry cuda_kernels_misc[];
#endif
#ifdef DTRX_CUDA_HAS_BLAS
extern const struct cuda_kernel_entry cuda_kernels_blas[];
#endif
#ifdef DTRX_CUDA_HAS_NORM
extern const struct cuda_kernel_entry cuda_kernels_norm[];
#endif
#ifdef DTRX_CUDA_HAS_ATTN
extern const struct cuda_kernel_entry cuda_kernels_attn[];
#endif
#ifdef DTRX_CUDA_HAS_QUANT
extern const struct cuda_kernel_entry cuda_kernels_quant[];
#endif
#ifdef DTRX_CUDA_HAS_VISION
extern const struct cuda_kernel_entry cuda_kernels_vision[];
#endif
#ifdef DTRX_CUDA_HAS_WINDOW
extern const struct cuda_kernel_entry cuda_kernels_window[];
#endif

static const struct cuda_kernel_entry *const families[] = {
#ifdef DTRX_CUDA_HAS_BLAS
    cuda_kernels_blas,
#endif
#ifdef DTRX_CUDA_HAS_NN
    cuda_kernels_nn,
#endif
#ifdef DTRX_CUDA_HAS_ELEM
    cuda_kernels_elem,
#endif
#ifdef DTRX_CUDA_HAS_LAYOUT
    cuda_kernels_layout,
#endif
#ifdef DTRX_CUDA_HAS_NORM
    cuda_kernels_norm,
#endif
#ifdef DTRX_CUDA_HAS_ATTN
    cuda_kernels_attn,
#endif
#ifdef DTRX_CUDA_HAS_MISC
    cuda_kernels_misc,
#endif
#ifdef DTRX_CUDA_HAS_QUANT
    cuda_kernels_quant,
#endif
#ifdef DTRX_CUDA_HAS_VISION
    cuda_kernels_vision,
#endif
#ifdef DTRX_CUDA_HAS_WINDOW
    cuda_kernels_window,
#endif
    NULL,
};

static const struct cuda_kernel_entry *entry_at(int index)
{
    if (index < 0)
        return NULL;
    for (int f = 0; families[f]; f++)
        for (const struct cuda_kernel_entry *e = families[f]; e->name; e++)
            if (index-- == 0)
                return e;
    return NULL;
}

cuda_kernel_fn cuda_kernel_find(const char *domain, const char *name)
{
    if (!domain)
        domain = "";
    for (int f = 0; families[f]; f++)
        for (const struct cuda_kernel_entry *e = families[f]; e->name; e++)
            if (!strcmp(e->name, name) && !strcmp(e->domain ? e->domain : "", domain))
                return e->kernel;
    return NULL;
}

const char *cuda_kernel_name_at(int index, const char **domain)
{
    const struct cuda_kernel_entry *e = entry_at(index);
    if (e && domain)
        *domain = e->domain ? e->domain : "";
    return e ? e->name : NULL;
}
