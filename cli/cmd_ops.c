/* cli/cmd_ops.c — `dtrexec ops`: the operator registry, one line per
 * operator: domain, name, the since-versions implemented, backends. A
 * backend is listed where its kernel lookup (struct backend.kernel) answers
 * for the op; the CUDA module is loaded for that when it can be. Views
 * (alias ops) run no kernel, so they run on every backend present. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "ops/ops.h"

#define OPS_USAGE "usage: dtrexec ops   (one line per operator: domain, name, since-versions, backends)\n"

int cmd_ops(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(OPS_USAGE, stdout);
            return CLI_EXIT_OK;
        }
        fprintf(stderr, "dtrexec ops: takes no arguments: unexpected argument '%s'\n" OPS_USAGE, argv[i]);
        return CLI_EXIT_USAGE;
    }
    char why[1024];
    char path[4096];
    const struct backend_module *cuda = backend_module_load("cuda", why, sizeof why);
    /* Silent in a build without the module; a broken one is reported. */
    if (!cuda && (getenv("DTRX_CUDA_MODULE") || !backend_module_find("cuda", path, sizeof path)))
        fprintf(stderr, "dtrexec ops: the cuda backend is left out: %s\n", why);
    for (int i = 0;; i++) {
        const struct op_def *d = op_registry_at(i);
        if (!d)
            break;
        printf("%s\t%s\t", d->domain[0] ? d->domain : "ai.onnx", d->name);
        for (int v = 0; v < OP_MAX_VERSIONS && d->since[v]; v++)
            printf(v ? ",%d" : "%d", d->since[v]);
        int on_cpu = d->alias || backend_cpu.kernel(d);
        int on_cuda = cuda && (d->alias || cuda->kernel(d));
        printf("\t%s%s\n", on_cpu ? "cpu" : "", on_cuda ? ",cuda" : "");
    }
    return CLI_EXIT_OK;
}
