/* cli/main.c — dispatches `dtrexec SUBCOMMAND …` to its cmd_* function; a
 * first argument that is no subcommand is a model to run. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "ops/ops.h"

struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct subcommand subcommands[] = {
    { "check", cmd_check, "run ONNX test-data folders (model.onnx + test_data_set_*)" },
    { "ops", cmd_ops, "list the operators and opset versions implemented" },
    { "export", cmd_export, "write a model's training step as a static graph (Checkmate layout)" },
    { "params", cmd_params, "list the initializers: which train with --train, and why" },
    { "gradcheck", cmd_gradcheck, "compare the generated gradients with finite differences" },
    { "sim", cmd_sim, "replay an op log or graph under DTR with a simulated clock" },
    { "bench", cmd_bench, "budget sweeps of op logs or graphs in the simulator (CSV, SVG)" },
    { "plan", cmd_plan, "make a static checkpointing schedule of a graph (Chen, Griewank, Checkmate MILP)" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: dtrexec MODEL.onnx [options]   run one inference (or train with --train)\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(f, "       dtrexec %-6s ...            %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(f, "       dtrexec --version\n"
               "Run `dtrexec SUBCOMMAND --help` for a subcommand's options, `dtrexec --help-run` (or\n"
               "`dtrexec MODEL.onnx --help`) for the options of a run.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(argv[1], "--list-options")) {
        /* For tests/docs_check.py: what docs/DESIGN.md must document. */
        printf("command\trun\n");
        for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
            printf("command\t%s\n", subcommands[i].name);
        printf("same\texport\trun\n");   /* export parses the options of a run */
        cli_options_list(stdout);
        static const struct { int code; const char *name; } codes[] = {
            { CLI_EXIT_OK, "ok" }, { CLI_EXIT_USAGE, "usage" }, { CLI_EXIT_OOM, "oom" },
            { CLI_EXIT_INTERNAL, "internal" }, { CLI_EXIT_NONFINITE, "nonfinite" },
        };
        for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
            printf("exit\t%d\t%s\n", codes[i].code, codes[i].name);
        return CLI_EXIT_OK;
    }
    if (!strcmp(argv[1], "--help-run")) {
        char *run_help[] = { argv[0], (char *)"--help", NULL };
        return cmd_run(2, run_help);
    }
    if (!strcmp(argv[1], "--version")) {
        /* A device backend is listed when its module is found; it is not
         * loaded (that is what `--device` does). */
        char module[4096];
        printf("dtrexec %s\nbackends: cpu%s\n", DTRX_VERSION,
               backend_module_find("cuda", module, sizeof module) ? "" : ", cuda");
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (!strcmp(argv[1], subcommands[i].name))
            return subcommands[i].run(argc - 1, argv + 1);
    return cmd_run(argc, argv);
}
