/* cli/cmd_bench.c — `dtrexec bench TRACE|GRAPH...`: budget sweeps in the
 * simulator, written as CSV and as an SVG plot (dtr/sim/sweep.c, plot.c);
 * with --solvers, on graphs, DTR heuristics against static planners at
 * the same budgets (bench/planners*.c). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtr/sim/sim.h"
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
            "  --solvers S,S,...           also plan every graph at every budget with these static planners\n"
            "                              (checkpoint-all, chen-sqrtn, chen-greedy, griewank, checkmate,\n"
            "                              checkmate-lp) and compare: overhead, peak, solve time, per method\n"
            "  --time-limit SEC            MILP/LP time limit per budget (default 600)\n"
            "Exit status: 0 done, 1 bad input, 3 internal error.\n");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_solvers(const char *text, enum plan_solver *out, int max)
{
    int n = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == max || plan_solver_parse(tok, &out[n]))
            return -1;
        n++;
    }
    return n;
}

/* DTR rows from the sweep, then every solver at every ratio; the table,
 * CSV and SVG of the comparison. */
static int bench_compare(struct sim_program *progs, const char **paths, int n_paths, const double *ratios,
                         int n_ratios, const enum dtr_heuristic *hs, int n_hs, const struct sim_options *o,
                         const enum plan_solver *solvers, int n_solvers, const struct plan_options *po,
                         const char *csv, const char *plot, int quiet)
{
    char err[600];
    size_t cap = (size_t)n_paths * n_ratios * (n_hs + n_solvers) + 1, n = 0;
    struct compare_row *rows = calloc(cap, sizeof *rows);
    struct fmt_graph *graphs = calloc(n_paths, sizeof *graphs);
    int loaded = 0, rc = CLI_EXIT_OK;
    if (!rows || !graphs) {
        free(rows);
        free(graphs);
        return CLI_EXIT_INTERNAL;
    }
    for (; loaded < n_paths; loaded++)
        if (fmt_graph_read(paths[loaded], &graphs[loaded], err, sizeof err)) {
            fprintf(stderr, "dtrexec bench: --solvers needs graphs: %s\n", err);
            rc = CLI_EXIT_USAGE;
            goto out;
        }
    for (int p = 0; p < n_paths; p++) {
        struct sim_baseline b;
        if (sim_baseline_run(&progs[p], &b, err, sizeof err)) {
            fprintf(stderr, "dtrexec bench: %s\n", err);
            rc = CLI_EXIT_USAGE;
            goto out;
        }
        for (int r = 0; r < n_ratios; r++) {
            uint64_t budget = (uint64_t)floor((double)b.peak_bytes * ratios[r]);
            if (!budget)
                budget = 1;
            for (int h = 0; h < n_hs; h++) {
                struct compare_row *row = &rows[n++];
                struct sim_options so = *o;
                struct sim_result res;
                so.heuristic = hs[h];
                so.budget_bytes = budget;
                so.budget_ratio = 0;
                row->model = progs[p].name;
                snprintf(row->method, sizeof row->method, "%s", dtr_heuristic_name(hs[h]));
                row->ratio = ratios[r];
                row->budget_bytes = budget;
                row->gap = NAN;
                if (sim_run(&progs[p], &b, &so, &res)) {
                    fprintf(stderr, "dtrexec bench: %s: %s\n", progs[p].name, res.message);
                    rc = CLI_EXIT_USAGE;
                    goto out;
                }
                row->ok = res.outcome == SIM_PASS;
                snprintf(row->outcome, sizeof row->outcome, "%s", sim_outcome_name(res.outcome));
                row->overhead = res.overhead;
                row->peak_bytes = res.peak_bytes;
                row->solve_s = res.wall_s;
            }
            for (int k = 0; k < n_solvers; k++) {
                struct compare_row *row = &rows[n++];
                struct schedule s;
                struct schedule_result res;
                row->model = progs[p].name;
                snprintf(row->method, sizeof row->method, "%s", plan_solver_name(solvers[k]));
                row->is_solver = 1;
                row->ratio = ratios[r];
                row->budget_bytes = budget;
                row->gap = NAN;
                cli_solver_signals_begin();
                enum plan_status st = plan_make(&graphs[p], solvers[k], budget, po, &s, err, sizeof err);
                cli_solver_signals_end();   /* a signal that stopped the solver ends dtrexec */
                if (st == PLAN_ERROR) {
                    fprintf(stderr, "dtrexec bench: %s, %s at %g: %s\n", graphs[p].name, row->method, ratios[r], err);
                    rc = CLI_EXIT_INTERNAL;
                    goto out;
                }
                if (st == PLAN_INFEASIBLE) {
                    snprintf(row->outcome, sizeof row->outcome, "%s",
                             strstr(err, "within") ? "no_solution" : "infeasible");
                    continue;
                }
                if (schedule_simulate(&graphs[p], &s, budget, &res, err, sizeof err)) {
                    fprintf(stderr, "dtrexec bench: internal: %s, %s: %s\n", graphs[p].name, row->method, err);
                    schedule_free(&s);
                    rc = CLI_EXIT_INTERNAL;
                    goto out;
                }
                row->ok = 1;
                snprintf(row->outcome, sizeof row->outcome, "%s", s.solver.status);
                row->overhead = res.overhead;
                row->peak_bytes = res.peak_bytes;
                row->solve_s = s.solver.seconds;
                row->gap = s.solver.gap;
                schedule_free(&s);
                if (!quiet) {
                    fprintf(stderr, "  %s %s %.3g: %.5f (%.1f s)\n", progs[p].name, row->method, ratios[r],
                            row->overhead, row->solve_s);
                }
            }
        }
    }
    if (!quiet) {
        printf("%-24s %-15s %6s %-12s %9s %14s %9s %8s\n", "model", "method", "ratio", "outcome", "overhead",
               "peak_bytes", "time_s", "gap");
        for (size_t i = 0; i < n; i++) {
            const struct compare_row *r = &rows[i];
            printf("%-24s %-15s %6.3g %-12s ", r->model, r->method, r->ratio, r->outcome);
            if (r->ok)
                printf("%9.5f %14llu", r->overhead, (unsigned long long)r->peak_bytes);
            else
                printf("%9s %14s", "-", "-");
            printf(" %9.3f", r->solve_s);
            if (!isnan(r->gap))
                printf(" %8.4g", r->gap);
            printf("\n");
        }
    }
    if (csv && compare_write_csv(csv, rows, n, err, sizeof err)) {
        fprintf(stderr, "dtrexec bench: %s\n", err);
        rc = CLI_EXIT_USAGE;
    }
    if (plot && compare_write_svg(plot, rows, n, err, sizeof err)) {
        fprintf(stderr, "dtrexec bench: %s\n", err);
        rc = CLI_EXIT_USAGE;
    }
out:
    for (int i = 0; i < loaded; i++)
        fmt_graph_free(&graphs[i]);
    free(graphs);
    free(rows);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    const char *budgets = "0.1:1.0:0.1", *heur = "dtr,dtr-eq,dtr-local,lru,size,msps", *solver_text = NULL;
    struct plan_options po;
    plan_options_default(&po);
    po.time_limit_s = 600;
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
        } else if (!strcmp(a, "--solvers") && v) {
            solver_text = argv[++i];
        } else if (!strcmp(a, "--time-limit") && v) {
            char *end;
            po.time_limit_s = strtod(v, &end);
            if (end == v || *end || !(po.time_limit_s >= 0) || !(po.time_limit_s <= 1e7)) {
                fprintf(stderr, "dtrexec bench: --time-limit '%s' is not a number of seconds from 0 to 1e7\n", v);
                free(paths);
                return CLI_EXIT_USAGE;
            }
            i++;
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
    if (solver_text) {
        enum plan_solver solvers[PLAN_SOLVER_COUNT * 2];
        int n_solvers = parse_solvers(solver_text, solvers, PLAN_SOLVER_COUNT * 2);
        if (n_solvers <= 0) {
            fprintf(stderr, "dtrexec bench: bad --solvers '%s' (checkpoint-all, chen-sqrtn, chen-greedy, griewank, "
                            "checkmate, checkmate-lp)\n", solver_text);
            rc = CLI_EXIT_USAGE;
            goto out;
        }
        rc = bench_compare(progs, paths, n_paths, ratios, n_ratios, hs, n_hs, &o, solvers, n_solvers, &po, csv, plot,
                           quiet);
        goto out;
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
