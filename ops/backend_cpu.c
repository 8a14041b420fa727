/* ops/backend_cpu.c — the host backend: aligned malloc and memcpy.
 * Blocks of 2 MiB or more (the arena, and an unbudgeted run's large
 * tensors alike, so that budgeted and unbudgeted runs compare like for
 * like) are aligned to 2 MiB and offered to the kernel for transparent huge
 * pages: with 4 KiB pages a ResNet-50 step ran 20-25 % slower from TLB
 * misses on the shared machine (0.17 s against 0.136 s). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ops/ops.h"

#define CPU_ALIGN 64
#define CPU_HUGE_PAGE (2u << 20)

static void *cpu_alloc(void *ctx, size_t bytes)
{
    void *p = NULL;
    size_t huge = bytes >= CPU_HUGE_PAGE;
    size_t rounded = (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    if (posix_memalign(&p, huge ? CPU_HUGE_PAGE : CPU_ALIGN, rounded ? rounded : CPU_ALIGN))
        return NULL;
    if (huge)   /* whole 2 MiB pages only; a tail under one stays on small pages */
        madvise(p, rounded / 4096 * 4096, MADV_HUGEPAGE);
    return p;
}

static void cpu_free(void *ctx, void *ptr) { free(ptr); }

static int cpu_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    if (bytes)
        memmove(dst, src, bytes);
    return 0;
}

static int cpu_sync(void *ctx) { return 0; }

static op_kernel_fn cpu_kernel(const struct op_def *def) { return def->kernel[BACKEND_CPU]; }

static const char *cpu_last_error(const struct backend *b) { return "failed"; }

const struct backend backend_cpu = {
    .kind = BACKEND_CPU,
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy_to_device = cpu_copy,
    .copy_to_host = cpu_copy,
    .copy = cpu_copy,
    .synchronize = cpu_sync,
    .kernel = cpu_kernel,
    .last_error = cpu_last_error,
};
