/* cli/cmd_plan.c — `dtrexec plan GRAPH --solver S --budget B -o SCHEDULE.json`:
 * a static checkpointing schedule of a graph (dtr/sim/planners.c, milp.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/sim/sim.h"
#include "dtr/format/json.h"
#include "cli/cli.h"

int cli_sim_parse_budget(const char *text, double *ratio, uint64_t *bytes);

static void plan_usage(FILE *f)
{
    fprintf(f,
            "usage: dtrexec plan GRAPH --solver S [--budget B] -o SCHEDULE.json [options]\n"
            "  Makes a static checkpointing schedule of a Checkmate node-link graph.\n"
            "  --solver S          checkpoint-all | chen-sqrtn | chen-greedy | griewank |\n"
            "                      checkmate (the exact MILP, HiGHS) | checkmate-lp (LP relaxation + rounding)\n"
            "  --budget B          bytes (4GB, 512MiB, 3000000) or a ratio of checkpoint-all's peak\n"
            "                      (0.5x or 0.5); default: none\n"
            "  -o, --output FILE   the schedule (DESIGN.md \"Schedule\", steps form)\n"
            "  --time-limit SEC    MILP/LP solver time limit (default 600; 0: none)\n"
            "  --threads N         solver threads\n"
            "  --keep-model FILE   also write the MILP/LP model (CPLEX LP format)\n"
            "  --start FILE        checkmate: a schedule (steps or stages form, e.g. from another\n"
            "                      solver or an earlier run) offered as the MIP start; it must fit\n"
            "                      the budget and map onto Checkmate's stages\n"
            "  --verbose           the solver's log on stdout\n"
            "  --json              a JSON summary on stdout\n"
            "Exit status: 0 done, 1 bad input, 2 no schedule fits the budget, 3 internal error.\n");
}

/* --start FILE: read and checked against g (exit 1 on any problem), in
 * Checkmate's stages, and within the budget. */
static int load_start(const char *path, const struct fmt_graph *g, uint64_t budget, struct schedule *out)
{
    char err[600];
    struct schedule s;
    struct schedule_result r;
    if (schedule_load(path, g, &s, err, sizeof err)) {
        fprintf(stderr, "dtrexec plan: --start %s: %s\n", path, err);
        return -1;
    }
    int rc = sim_schedule_to_stages(g, &s, out, err, sizeof err);
    schedule_free(&s);
    if (rc) {
        fprintf(stderr, "dtrexec plan: --start %s: not mappable to Checkmate's stages: %s\n", path, err);
        return -1;
    }
    if (schedule_simulate(g, out, budget, &r, err, sizeof err)) {
        fprintf(stderr, "dtrexec plan: --start %s, in Checkmate's stages: %s\n", path, err);
        schedule_free(out);
        return -1;
    }
    return 0;
}

int cmd_plan(int argc, char **argv)
{
    const char *path = NULL, *out = NULL, *budget_text = NULL, *start_path = NULL;
    enum plan_solver solver = PLAN_CHECKPOINT_ALL;
    int have_solver = 0, json = 0;
    struct plan_options o;
    plan_options_default(&o);
    o.time_limit_s = 600;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            plan_usage(stdout);
            return CLI_EXIT_OK;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--verbose")) {
            o.verbose = 1;
        } else if (!strcmp(a, "--solver") && v) {
            if (plan_solver_parse(v, &solver)) {
                fprintf(stderr, "dtrexec plan: unknown solver '%s' (checkpoint-all, chen-sqrtn, chen-greedy, "
                                "griewank, checkmate, checkmate-lp)\n", v);
                return CLI_EXIT_USAGE;
            }
            have_solver = 1;
            i++;
        } else if (!strcmp(a, "--budget") && v) {
            budget_text = v;
            i++;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && v) {
            out = v;
            i++;
        } else if (!strcmp(a, "--keep-model") && v) {
            o.keep_model = v;
            i++;
        } else if (!strcmp(a, "--start") && v) {
            start_path = v;
            i++;
        } else if (!strcmp(a, "--time-limit") && v) {
            char *end;
            o.time_limit_s = strtod(v, &end);
            if (end == v || *end || !(o.time_limit_s >= 0) || !(o.time_limit_s <= 1e7)) {
                fprintf(stderr, "dtrexec plan: --time-limit '%s' is not a number of seconds from 0 to 1e7\n", v);
                return CLI_EXIT_USAGE;
            }
            i++;
        } else if (!strcmp(a, "--threads") && v) {
            long long n;
            if (cli_parse_int("dtrexec plan", "--threads", v, 1, CLI_THREADS_MAX, &n))
                return CLI_EXIT_USAGE;
            o.threads = (int)n;
            i++;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "dtrexec plan: unknown option or missing value: %s\n", a);
            plan_usage(stderr);
            return CLI_EXIT_USAGE;
        } else if (!path) {
            path = a;
        } else {
            fprintf(stderr, "dtrexec plan: one GRAPH expected, got also '%s'\n", a);
            return CLI_EXIT_USAGE;
        }
    }
    if (!path || !have_solver || !out) {
        fprintf(stderr, "dtrexec plan: %s\n", !path ? "no GRAPH given" : !have_solver ? "--solver is required"
                                                                                      : "-o SCHEDULE.json is required");
        plan_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (start_path && solver != PLAN_CHECKMATE_MILP) {
        fprintf(stderr, "dtrexec plan: --start is a MIP start: it needs --solver checkmate\n");
        return CLI_EXIT_USAGE;
    }
    char err[600];
    struct fmt_graph g;
    if (fmt_graph_read(path, &g, err, sizeof err)) {
        fprintf(stderr, "dtrexec plan: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    int rc = CLI_EXIT_OK;
    struct schedule s;
    schedule_init(&s);
    /* checkpoint-all's peak: what a ratio refers to */
    struct schedule all;
    struct schedule_result base;
    uint64_t budget = 0;
    if (plan_make(&g, PLAN_CHECKPOINT_ALL, 0, &o, &all, err, sizeof err) ||
        schedule_simulate(&g, &all, 0, &base, err, sizeof err)) {
        fprintf(stderr, "dtrexec plan: %s: %s\n", path, err);
        schedule_free(&all);
        fmt_graph_free(&g);
        return CLI_EXIT_INTERNAL;
    }
    schedule_free(&all);
    if (budget_text) {
        double ratio;
        if (cli_sim_parse_budget(budget_text, &ratio, &budget)) {
            fprintf(stderr, "dtrexec plan: --budget '%s' is not " CLI_SIZE_RANGE " (or a bare ratio below 16)\n",
                    budget_text);
            fmt_graph_free(&g);
            return CLI_EXIT_USAGE;
        }
        if (ratio > 0) {
            double b = floor((double)base.peak_bytes * ratio);
            if (!(b >= 1) || b > CLI_SIZE_MAX) {
                fprintf(stderr, "dtrexec plan: --budget %s of checkpoint-all's peak %llu bytes is %.17g bytes, outside "
                                "1 byte to 2^62 bytes\n", budget_text, (unsigned long long)base.peak_bytes, b);
                fmt_graph_free(&g);
                return CLI_EXIT_USAGE;
            }
            budget = (uint64_t)b;
        }
    }
    struct schedule start;
    schedule_init(&start);
    if (start_path && load_start(start_path, &g, budget, &start)) {
        rc = CLI_EXIT_USAGE;
        goto out;
    }
    o.start = start_path ? &start : NULL;
    cli_solver_signals_begin();
    enum plan_status st = plan_make(&g, solver, budget, &o, &s, err, sizeof err);
    cli_solver_signals_end();   /* ends dtrexec by the signal when one stopped the solver */
    if (st == PLAN_INFEASIBLE) {
        fprintf(stderr, "dtrexec plan: %s, %s at %llu bytes: %s\n", g.name, plan_solver_name(solver),
                (unsigned long long)budget, err);
        rc = CLI_EXIT_OOM;
        goto out;
    }
    if (st != PLAN_OK) {
        fprintf(stderr, "dtrexec plan: %s, %s: %s\n", g.name, plan_solver_name(solver), err);
        rc = CLI_EXIT_INTERNAL;
        goto out;
    }
    struct schedule_result r;
    if (schedule_simulate(&g, &s, budget, &r, err, sizeof err)) {
        fprintf(stderr, "dtrexec plan: internal: the schedule does not validate: %s\n", err);
        rc = CLI_EXIT_INTERNAL;
        goto out;
    }
    if (schedule_save(out, &g, &s, err, sizeof err)) {
        fprintf(stderr, "dtrexec plan: %s\n", err);
        rc = CLI_EXIT_USAGE;
        goto out;
    }
    if (json) {
        printf("{\"model\": ");
        json_write_string(stdout, g.name);
        printf(", \"solver\": \"%s\", \"status\": ", plan_solver_name(solver));
        json_write_string(stdout, s.solver.status);
        printf(", \"backend\": ");
        json_write_string(stdout, s.solver.backend);
        printf(", \"budget_bytes\": %llu, \"baseline_peak_bytes\": %llu, \"peak_bytes\": %llu",
               (unsigned long long)budget, (unsigned long long)base.peak_bytes, (unsigned long long)r.peak_bytes);
        printf(", \"baseline_compute\": ");
        json_write_number(stdout, r.baseline_compute);
        printf(", \"total_compute\": ");
        json_write_number(stdout, r.total_compute);
        printf(", \"overhead\": ");
        json_write_number(stdout, r.overhead);
        printf(", \"runs\": %u, \"recomputes\": %u, \"seconds\": ", r.runs, r.recomputes);
        json_write_number(stdout, s.solver.seconds);
        printf(", \"solve_seconds\": ");
        json_write_number(stdout, s.solver.solve_seconds);
        printf(", \"gap\": ");
        json_write_number(stdout, s.solver.gap);
        printf(", \"output\": ");
        json_write_string(stdout, out);
        printf("}\n");
    } else {
        printf("%s: %s schedule, budget %llu bytes (%.4g of checkpoint-all's %llu): %s\n", g.name,
               plan_solver_name(solver), (unsigned long long)budget,
               base.peak_bytes ? (double)budget / (double)base.peak_bytes : 0.0, (unsigned long long)base.peak_bytes,
               s.solver.status);
        printf("  overhead %.5f (compute %.17g of %.17g), peak %llu bytes, %u runs (%u recomputed)\n", r.overhead,
               r.total_compute, r.baseline_compute, (unsigned long long)r.peak_bytes, r.runs, r.recomputes);
        printf("  planned in %.3f s", s.solver.seconds);
        if (s.solver.solve_seconds == s.solver.solve_seconds)
            printf(" (solver %.3f s)", s.solver.solve_seconds);
        if (s.solver.gap == s.solver.gap)
            printf(", optimality gap %.4g", s.solver.gap);
        if (s.solver.backend[0])
            printf(" [%s]", s.solver.backend);
        printf("; written to %s\n", out);
    }
out:
    schedule_free(&start);
    schedule_free(&s);
    fmt_graph_free(&g);
    return rc;
}
