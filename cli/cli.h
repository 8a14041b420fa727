/* cli — the dtrexec command: a thin layer over the runtime API and bench/.
 * Each subcommand lives in its own cli/cmd_*.c and is listed once in main.c.
 * Subcommands return the process exit code of DESIGN.md: 0 success, 1 bad
 * input or usage, 2 budget infeasible / out of memory, 3 internal error,
 * 4 training diverged (a non-finite loss). */
#ifndef DTRX_CLI_H
#define DTRX_CLI_H

#include <stdio.h>

enum cli_exit {
    CLI_EXIT_OK = 0,
    CLI_EXIT_USAGE = 1,
    CLI_EXIT_OOM = 2,
    CLI_EXIT_INTERNAL = 3,
    CLI_EXIT_NONFINITE = 4,    /* training diverged: a non-finite loss (DTRX_ERR_NONFINITE) */
};

int cmd_run(int argc, char **argv);    /* dtrexec MODEL.onnx [options] */
int cmd_check(int argc, char **argv);  /* dtrexec check DIR... */
int cmd_sim(int argc, char **argv);    /* dtrexec sim TRACE|GRAPH ... */
int cmd_bench(int argc, char **argv);  /* dtrexec bench ... */
int cmd_plan(int argc, char **argv);   /* dtrexec plan GRAPH --solver S ... */
int cmd_ops(int argc, char **argv);
int cmd_export(int argc, char **argv); /* dtrexec export MODEL --train -o GRAPH.json */
int cmd_gradcheck(int argc, char **argv); /* dtrexec gradcheck MODEL.onnx: backward vs finite differences */
int cmd_params(int argc, char **argv); /* dtrexec params MODEL.onnx: which initializers train, and why */
/* `dtrexec --list-options`: one tab-separated line per option of every
 * subcommand, "option COMMAND OPTION VALUE EXAMPLE" ("-": a flag). */
void cli_options_list(FILE *f);

/* Parses "4GB", "512MiB", "1000" into bytes; "0.5x" sets *ratio instead
 * (bytes 0). Returns 0, or -1 when the text is not a size or is out of the
 * range below (finite: no inf, NaN or a count past what size_t holds). */
#define CLI_SIZE_MAX 4611686018427387904.0 /* 2^62 bytes (4 EiB) */
#define CLI_RATIO_MIN 1e-6
#define CLI_RATIO_MAX 1e3
#define CLI_SIZE_RANGE "a size from 1 byte to 2^62 bytes (4GB, 512MiB, 1000000) or a ratio from 1e-06x to 1000x"
/* The thread counts accepted by --threads. */
#define CLI_THREADS_MAX 1024
int cli_parse_size(const char *text, double *bytes, double *ratio);
/* Strict number parsing for options: the whole text, finite, within
 * [min, max]; otherwise prints "CMD: OPT expects ... from MIN to MAX, got
 * 'TEXT'" on stderr and returns -1. */
int cli_parse_number(const char *cmd, const char *opt, const char *text, double min, double max, double *out);
int cli_parse_int(const char *cmd, const char *opt, const char *text, long long min, long long max, long long *out);
/* Appends `pattern` to the comma-separated list *list (heap, grown); -1 out of memory. */
int cli_patterns_add(char **list, const char *pattern);
struct dtrx_param_info;
/* Warns on stderr about each pattern of the list that names no initializer. */
void cli_patterns_warn_unmatched(const char *option, const char *patterns, const struct dtrx_param_info *p, int n);

/* While a planner may run an external solver (cli/solver_signals.c):
 * SIGINT/SIGTERM/SIGHUP stop the solver and then dtrexec, by that signal. */
void cli_solver_signals_begin(void);
void cli_solver_signals_end(void);

#endif
