/* cli/cmd_ops.c — `dtrexec ops`: the operator registry, one line per
 * operator: domain, name, the since-versions implemented, backends. */
#include <stdio.h>

#include "cli/cli.h"
#include "ops/ops.h"

int cmd_ops(int argc, char **argv)
{
    for (int i = 0;; i++) {
        const struct op_def *d = op_registry_at(i);
        if (!d)
            break;
        printf("%s\t%s\t", d->domain[0] ? d->domain : "ai.onnx", d->name);
        for (int v = 0; v < OP_MAX_VERSIONS && d->since[v]; v++)
            printf(v ? ",%d" : "%d", d->since[v]);
        printf("\t%s%s\n", d->alias || d->kernel[BACKEND_CPU] ? "cpu" : "",
               d->kernel[BACKEND_CUDA] ? ",cuda" : "");
    }
    return CLI_EXIT_OK;
}
