/* cli/cmd_params.c — `dtrexec params MODEL.onnx [--trainable P] [--freeze P]`:
 * each initializer of the main graph with its type, shape, whether
 * `--train` trains it and why (the rule of runtime/params.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "onnx/onnx.h"
#include "runtime/dtrexec.h"

static void params_usage(FILE *f)
{
    fprintf(f, "usage: dtrexec params MODEL.onnx [--trainable PATTERN] [--freeze PATTERN]\n"
               "  one line per initializer: name, dtype, shape, train|frozen, the reason;\n"
               "  PATTERN is a glob over initializer names (repeatable, or comma-separated) as for --train\n");
}

int cmd_params(int argc, char **argv)
{
    const char *model = NULL;
    char *freeze = NULL, *trainable = NULL;
    int rc = CLI_EXIT_OK;
    for (int i = 1; i < argc && !rc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            params_usage(stdout);
            goto done;
        }
        if (!strcmp(argv[i], "--freeze") || !strcmp(argv[i], "--trainable")) {
            if (i + 1 == argc) {
                fprintf(stderr, "dtrexec params: option %s needs a value\n", argv[i]);
                rc = CLI_EXIT_USAGE;
            } else if (cli_patterns_add(argv[i][2] == 'f' ? &freeze : &trainable, argv[i + 1])) {
                rc = CLI_EXIT_INTERNAL;
            }
            i++;
        } else if (argv[i][0] == '-' || model) {
            fprintf(stderr, "dtrexec params: unexpected argument '%s'\n", argv[i]);
            rc = CLI_EXIT_USAGE;
        } else {
            model = argv[i];
        }
    }
    if (!rc && !model) {
        params_usage(stderr);
        rc = CLI_EXIT_USAGE;
    }
    if (rc)
        goto done;
    struct dtrx_options opts;
    dtrx_options_init(&opts);
    opts.threads = 1;
    struct dtrx_session *s = NULL;
    struct dtrx_train_options topts;
    dtrx_train_options_init(&topts);
    topts.freeze = freeze;
    topts.trainable = trainable;
    const struct dtrx_param_info *p = NULL;
    int n = 0;
    enum dtrx_status st = dtrx_session_create(model, &opts, &s);
    if (!st)
        st = dtrx_session_params(s, &topts, &p, &n);
    if (st) {
        fprintf(stderr, "dtrexec: %s\n", dtrx_last_error());
        dtrx_session_destroy(s);
        rc = (int)st;
        goto done;
    }
    int trained = 0;
    long long elements = 0;
    size_t width = 4;
    for (int i = 0; i < n; i++)
        if (strlen(p[i].name) > width)
            width = strlen(p[i].name) < 60 ? strlen(p[i].name) : 60;
    printf("%-*s  %-8s  %-16s  %-6s  %s\n", (int)width, "name", "dtype", "shape", "decide", "reason");
    for (int i = 0; i < n; i++) {
        char shape[160] = "[";
        size_t len = 1;
        for (int k = 0; k < p[i].rank && len < sizeof shape; k++)
            len += (size_t)snprintf(shape + len, sizeof shape - len, k ? ",%lld" : "%lld", (long long)p[i].dims[k]);
        if (len < sizeof shape - 1)
            strcat(shape, "]");
        printf("%-*s  %-8s  %-16s  %-6s  %s\n", (int)width, p[i].name, onnx_dtype_name(p[i].dtype), shape,
               p[i].trainable ? "train" : "frozen", p[i].reason);
        if (p[i].trainable) {
            trained++;
            elements += p[i].numel;
        }
    }
    cli_patterns_warn_unmatched("--freeze", freeze, p, n);
    cli_patterns_warn_unmatched("--trainable", trainable, p, n);
    for (int i = 0; i < n; i++)
        if (p[i].warning)
            fprintf(stderr, "dtrexec: warning: %s\n", p[i].warning);
    printf("%d of %d initializers train (%lld elements)\n", trained, n, elements);
    dtrx_session_destroy(s);
done:
    free(freeze);
    free(trainable);
    return rc;
}
