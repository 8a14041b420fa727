/* cli/options.c — parsing helpers shared by the subcommands. */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "runtime/dtrexec.h"

/* The runtime's parser (runtime/budget_text.c), so that the Python package
 * takes the same budgets. */
int cli_parse_size(const char *text, double *bytes, double *ratio)
{
    return dtrx_parse_budget(text, bytes, ratio) ? -1 : 0;
}

int cli_parse_number(const char *cmd, const char *opt, const char *text, double min, double max, double *out)
{
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v) || v < min || v > max) {
        fprintf(stderr, "%s: %s expects a finite number from %g to %g, got '%s'\n", cmd, opt, min, max, text);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_parse_int(const char *cmd, const char *opt, const char *text, long long min, long long max, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max) {
        fprintf(stderr, "%s: %s expects an integer from %lld to %lld, got '%s'\n", cmd, opt, min, max, text);
        return -1;
    }
    *out = v;
    return 0;
}

int cli_patterns_add(char **list, const char *pattern)
{
    size_t old = *list ? strlen(*list) : 0;
    char *grown = realloc(*list, old + strlen(pattern) + 2);
    if (!grown)
        return -1;
    if (old)
        grown[old++] = ',';
    strcpy(grown + old, pattern);
    *list = grown;
    return 0;
}

void cli_patterns_warn_unmatched(const char *option, const char *patterns, const struct dtrx_param_info *p, int n)
{
    for (const char *at = patterns; at && *at;) {
        size_t len = strcspn(at, ",");
        char pattern[512];
        snprintf(pattern, sizeof pattern, "%.*s", (int)len, at);
        int hit = 0;
        for (int i = 0; i < n && !hit; i++)
            hit = !fnmatch(pattern, p[i].name, 0);
        if (!hit && pattern[0])
            fprintf(stderr, "dtrexec: warning: %s '%s' matches no initializer\n", option, pattern);
        at += len + (at[len] == ',');
    }
}

/* Every option of every subcommand, for `dtrexec --list-options` (a
 * machine-readable list that tests/docs_check.py holds against
 * docs/DESIGN.md, against the option literals of the cli/ sources and what
 * the binary accepts). value: the placeholder of the option's value, NULL
 * for a flag; example: a value the option accepts. Keep it beside the
 * parsers: an option added to one and not here fails that test. */
static const struct cli_option_entry {
    const char *command, *option, *value, *example;
} cli_option_table[] = {
    { "dtrexec", "--help", NULL, NULL },
    { "dtrexec", "-h", NULL, NULL },
    { "dtrexec", "--help-run", NULL, NULL },
    { "dtrexec", "--version", NULL, NULL },
    { "dtrexec", "--list-options", NULL, NULL },

    { "run", "--help", NULL, NULL },
    { "run", "-h", NULL, NULL },
    { "run", "--input", "NAME=FILE", "x=in.npy" },
    { "run", "--dim", "NAME=N|NAME=LO:HI", "batch=2" },
    { "run", "--fresh-inputs", NULL, NULL },
    { "run", "--output-dir", "DIR", "out" },
    { "run", "--device", "cpu|cuda", "cpu" },
    { "run", "--threads", "N", "1" },
    { "run", "--seed", "N", "7" },
    { "run", "--repeat", "N", "2" },
    { "run", "--stats", "FILE.json", "stats.json" },
    { "run", "--quiet", NULL, NULL },
    { "run", "--train", NULL, NULL },
    { "run", "--steps", "N", "3" },
    { "run", "--lr", "F", "0.01" },
    { "run", "--optimizer", "sgd|momentum|adam|adamw", "adamw" },
    { "run", "--momentum", "F", "0.9" },
    { "run", "--nesterov", NULL, NULL },
    { "run", "--weight-decay", "F", "0.01" },
    { "run", "--adam-bias-correction", "pytorch|hf", "hf" },
    { "run", "--update", "in-backward|after-backward", "after-backward" },
    { "run", "--loss", "auto|mse|cross-entropy|sum|graph", "mse" },
    { "run", "--labels", "FILE", "y.npy" },
    { "run", "--save", "OUT.onnx", "out.onnx" },
    { "run", "--freeze", "PATTERN", "*.bias" },
    { "run", "--trainable", "PATTERN", "*" },
    { "run", "--grad-dir", "DIR", "grads" },
    { "run", "--budget", "SIZE|Rx", "0.5x" },
    { "run", "--heuristic", "dtr|dtr-eq|dtr-local|lru|size|msps|random", "dtr-eq" },
    { "run", "--dealloc", "eager|banish|ignore", "banish" },
    { "run", "--cost", "flops|measured", "measured" },
    { "run", "--trace", "FILE.jsonl", "run.jsonl" },
    { "run", "--verify-remat", NULL, NULL },
    { "run", "--plan", "SCHEDULE.json", "schedule.json" },
    { "run", "-o", "GRAPH.json", "graph.json" },
    { "run", "--export", "GRAPH.json", "graph.json" },

    { "check", "--help", NULL, NULL },
    { "check", "-h", NULL, NULL },
    { "check", "--rtol", "R", "1e-3" },
    { "check", "--atol", "A", "1e-7" },
    { "check", "--device", "cpu|cuda", "cpu" },
    { "check", "--quiet", NULL, NULL },

    { "ops", "--help", NULL, NULL },
    { "ops", "-h", NULL, NULL },

    { "params", "--help", NULL, NULL },
    { "params", "-h", NULL, NULL },
    { "params", "--freeze", "PATTERN", "*.bias" },
    { "params", "--trainable", "PATTERN", "*" },

    { "gradcheck", "--help", NULL, NULL },
    { "gradcheck", "-h", NULL, NULL },
    { "gradcheck", "--eps", "E", "1e-3" },
    { "gradcheck", "--rtol", "R", "1e-2" },
    { "gradcheck", "--atol", "A", "1e-3" },
    { "gradcheck", "--max-elems", "N", "32" },
    { "gradcheck", "--seed", "N", "7" },
    { "gradcheck", "--no-grad", "NAME,...", "x" },
    { "gradcheck", "--device", "cpu|cuda", "cpu" },
    { "gradcheck", "--dim", "NAME=N", "batch=2" },

    { "sim", "--help", NULL, NULL },
    { "sim", "-h", NULL, NULL },
    { "sim", "--budget", "R|BYTES", "0.5" },
    { "sim", "--heuristic", "H", "dtr-eq" },
    { "sim", "--dealloc", "P", "banish" },
    { "sim", "--remat-limit", "X|none", "none" },
    { "sim", "--min-evict", "BYTES", "1KB" },
    { "sim", "--sample-sqrt", NULL, NULL },
    { "sim", "--seed", "N", "3" },
    { "sim", "--json", NULL, NULL },
    { "sim", "--plan", "SCHEDULE.json", "schedule.json" },
    { "sim", "--schedule-out", "S.json", "out.json" },
    { "sim", "--planners-memory", NULL, NULL },
    { "sim", "--staged", NULL, NULL },

    { "bench", "--help", NULL, NULL },
    { "bench", "-h", NULL, NULL },
    { "bench", "--budgets", "A:B:STEP|R,R,...", "0.5,1" },
    { "bench", "--heuristics", "H,H,...", "dtr,lru" },
    { "bench", "--dealloc", "P", "banish" },
    { "bench", "--remat-limit", "X|none", "none" },
    { "bench", "--csv", "FILE", "out.csv" },
    { "bench", "--plot", "FILE.svg", "out.svg" },
    { "bench", "--quiet", NULL, NULL },
    { "bench", "--solvers", "S,S,...", "chen-sqrtn" },
    { "bench", "--time-limit", "SEC", "10" },

    { "plan", "--help", NULL, NULL },
    { "plan", "-h", NULL, NULL },
    { "plan", "--solver", "S", "checkpoint-all" },
    { "plan", "--budget", "B", "0.5x" },
    { "plan", "-o", "FILE", "schedule.json" },
    { "plan", "--output", "FILE", "schedule.json" },
    { "plan", "--time-limit", "SEC", "10" },
    { "plan", "--threads", "N", "1" },
    { "plan", "--keep-model", "FILE", "model.lp" },
    { "plan", "--start", "FILE", "start.json" },
    { "plan", "--verbose", NULL, NULL },
    { "plan", "--json", NULL, NULL },
};

void cli_options_list(FILE *f)
{
    for (size_t i = 0; i < sizeof cli_option_table / sizeof cli_option_table[0]; i++) {
        const struct cli_option_entry *e = &cli_option_table[i];
        fprintf(f, "option\t%s\t%s\t%s\t%s\n", e->command, e->option, e->value ? e->value : "-",
                e->example ? e->example : "-");
    }
}
