/* ops/backend_cpu.c — the host backend: aligned malloc and memcpy. */
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

#define CPU_ALIGN 64

static void *cpu_alloc(void *ctx, size_t bytes)
{
    void *p = NULL;
    size_t rounded = (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    if (posix_memalign(&p, CPU_ALIGN, rounded ? rounded : CPU_ALIGN))
        return NULL;
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

const struct backend backend_cpu = {
    .kind = BACKEND_CPU,
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy_to_device = cpu_copy,
    .copy_to_host = cpu_copy,
    .copy = cpu_copy,
    .synchronize = cpu_sync,
};
