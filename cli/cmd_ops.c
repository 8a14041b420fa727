/* cli/cmd_ops.c — `dtrexec ops`: the operator registry, one line per
 * operator: domain, name, the since-versions implemented, backends. Views
 * (alias ops) run no kernel, so they run on every backend compiled in. */
#include <stdio.h>

#include "cli/cli.h"
#include "ops/ops.h"
#ifdef DTRX_HAVE_CUDA
#include "ops/cuda/cuda.h"
#endif

static int has_cuda(const struct op_def *d)
{
#ifdef DTRX_HAVE_CUDA
    return d->alias || d->kernel[BACKEND_CUDA] || cuda_kernel_find(d->domain, d->name);
#else
    return d->kernel[BACKEND_CUDA] != NULL;
#endif
}

int cmd_ops(int argc, char **argv)
{
    for (int i = 0;; i++) {
        const struct op_def *d = op_registry_at(i);
        if (!d)
            break;
        printf("%s\t%s\t", d->domain[0] ? d->domain : "ai.onnx", d->name);
        for (int v = 0; v < OP_MAX_VERSIONS && d->since[v]; v++)
            printf(v ? ",%d" : "%d", d->since[v]);
        printf("\t%s%s\n", d->alias || d->kernel[BACKEND_CPU] ? "cpu" : "", has_cuda(d) ? ",cuda" : "");
    }
    return CLI_EXIT_OK;
}
