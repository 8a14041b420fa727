/* cli/cmd_bench.c — `dtrexec bench TRACE|GRAPH...`: budget sweeps in the
 * simulator, written as CSV and as an SVG plot (bench/sweep.c, plot.c). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "cli/cli.h"

static void bench_usage(FILE *f)
{
    fprintf(f,
            "usage: dtrexec bench TRACE|GRAPH... [options]\n"
            "  Simulates every input under every heuristic at every budget ratio.\n"
            "  --budgets A:B:STEP|R,R,...  ratios of the unbudgeted peak (default 0.1:1.0:0.1)\n"
            "  --heuristics H,H,...        default dtr,dtr-eq,dtr-local,lru,size,msps\n"
            "  --dealloc P                 eager|banish|ignore (default eager)\n"
            "  --remat-limit X             fail once recomputation exceeds X x baseline (default 1; 'none')\n"
            "  --csv FILE                  one row per run\n"
            "  --plot FILE.svg             slowdown against budget, a panel per input\n"
            "  --quiet                     no table on stdout\n"
            "Exit status: 0 done, 1 bad input, 3 internal error.\n");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int cmd_bench(int argc, char **argv)
{
    const char *budgets = "0.1:1.0:0.1", *heur = "dtr,dtr-eq,dtr-local,lru,size,msps";
    const char *csv = NULL, *plot = NULL;
    int quiet = 0, n_paths = 0, rc = CLI_EXIT_OK;
    const char **paths = calloc(argc, sizeof *paths);
    struct sim_options o;
    sim_options_default(&o);
    if (!paths)
        return CLI_EXIT_INTERNAL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            bench_usage(stdout);
            free(paths);
            return CLI_EXIT_OK;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--budgets") && v) {
            budgets = argv[++i];
        } else if (!strcmp(a, "--heuristics") && v) {
            heur = argv[++i];
        } else if (!strcmp(a, "--csv") && v) {
            csv = argv[++i];
        } else if (!strcmp(a, "--plot") && v) {
            plot = argv[++i];
        } else if (!strcmp(a, "--dealloc") && v) {
            if (dtr_dealloc_parse(v, &o.dealloc)) {
                fprintf(stderr, "dtrexec bench: unknown dealloc policy '%s'\n", v);
                free(paths);
                return CLI_EXIT_USAGE;
            }
            i++;
        } else if (!strcmp(a, "--remat-limit") && v) {
            char *end;
            o.remat_limit = (!strcmp(v, "none") || !strcmp(v, "inf")) ? -1 : strtod(v, &end);
            if (o.remat_limit != -1 && (end == v || *end || !(o.remat_limit >= 0))) {
                fprintf(stderr, "dtrexec bench: --remat-limit '%s' is not a non-negative number\n", v);
                free(paths);
                return CLI_EXIT_USAGE;
            }
            i++;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "dtrexec bench: unknown option or missing value: %s\n", a);
            bench_usage(stderr);
            free(paths);
            return CLI_EXIT_USAGE;
        } else {
            size_t n = strlen(a);
            if (n > 5 && !strcmp(a + n - 5, ".onnx")) {
                fprintf(stderr, "dtrexec bench: %s: sweeps of ONNX models are not available yet; "
                                "give an op log or a graph\n", a);
                free(paths);
                return CLI_EXIT_USAGE;
            }
            paths[n_paths++] = a;
        }
    }
    if (!n_paths) {
        bench_usage(stderr);
        free(paths);
        return CLI_EXIT_USAGE;
    }
    double *ratios = NULL;
    enum dtr_heuristic *hs = NULL;
    int n_ratios = sweep_parse_ratios(budgets, &ratios);
    int n_hs = sweep_parse_heuristics(heur, &hs);
    if (n_ratios <= 0 || n_hs <= 0) {
        fprintf(stderr, "dtrexec bench: bad %s '%s'\n", n_ratios <= 0 ? "--budgets" : "--heuristics",
                n_ratios <= 0 ? budgets : heur);
        free(ratios);
        free(hs);
        free(paths);
        return CLI_EXIT_USAGE;
    }
    struct sim_program *progs = calloc(n_paths, sizeof *progs);
    struct sim_program **pp = calloc(n_paths, sizeof *pp);
    struct sweep_row *rows = NULL;
    size_t n_rows = 0;
    char err[512];
    int loaded = 0;
    if (!progs || !pp) {
        rc = CLI_EXIT_INTERNAL;
        goto out;
    }
    for (; loaded < n_paths; loaded++) {
        if (sim_program_load(paths[loaded], &progs[loaded], err, sizeof err)) {
            fprintf(stderr, "dtrexec bench: %s\n", err);
            rc = CLI_EXIT_USAGE;
            goto out;
        }
        pp[loaded] = &progs[loaded];
    }
    double t0 = now_s();
    if (sweep_run(pp, n_paths, ratios, n_ratios, hs, n_hs, &o, &rows, &n_rows, err, sizeof err)) {
        fprintf(stderr, "dtrexec bench: %s\n", err);
        rc = CLI_EXIT_USAGE;
        goto out;
    }
    double total = now_s() - t0, runs_s = 0;
    for (size_t i = 0; i < n_rows; i++)
        runs_s += rows[i].result.wall_s;
    if (!quiet) {
        printf("%-22s %-10s %6s %-15s %9s %10s %10s\n", "model", "heuristic", "ratio", "result", "overhead",
               "evictions", "remats");
        for (size_t i = 0; i < n_rows; i++)
            printf("%-22s %-10s %6.3g %-15s %9.5f %10llu %10llu\n", rows[i].model,
                   dtr_heuristic_name(rows[i].heuristic), rows[i].ratio, sim_outcome_name(rows[i].result.outcome),
                   rows[i].result.overhead, (unsigned long long)rows[i].result.evictions,
                   (unsigned long long)rows[i].result.remats);
        printf("%zu runs in %.3f s (%.3f s in the runs themselves)\n", n_rows, total, runs_s);
    }
    if (csv && sweep_write_csv(csv, rows, n_rows, err, sizeof err)) {
        fprintf(stderr, "dtrexec bench: %s\n", err);
        rc = CLI_EXIT_USAGE;
        goto out;
    }
    if (plot && sweep_write_svg(plot, rows, n_rows, err, sizeof err)) {
        fprintf(stderr, "dtrexec bench: %s\n", err);
        rc = CLI_EXIT_USAGE;
        goto out;
    }
out:
    for (int i = 0; i < loaded; i++)
        sim_program_free(&progs[i]);
    free(progs);
    free(pp);
    free(rows);
    free(ratios);
    free(hs);
    free(paths);
    return rc;
}
