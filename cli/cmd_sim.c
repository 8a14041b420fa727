/* cli/cmd_sim.c — `dtrexec sim TRACE|GRAPH`: replay an op log or a static
 * graph under DTR with a simulated clock and memory counter (dtr/sim/sim.c);
 * with --plan, replay and check a static schedule on a graph instead
 * (dtr/sim/schedule.c). */
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/sim/sim.h"
#include "dtr/format/json.h"
#include "cli/cli.h"

static void sim_usage(FILE *f)
{
    fprintf(f,
            "usage: dtrexec sim TRACE|GRAPH [options]\n"
            "  Replays a DTR op log (JSON lines) or a Checkmate node-link graph under DTR,\n"
            "  with kernels replaced by a clock and memory by a byte counter.\n"
            "  --budget R|BYTES      R: ratio of the unbudgeted peak (0.5 or 0.5x);\n"
            "                        BYTES: with a unit (4GB, 512MiB) or an integer >= 16.\n"
            "                        Default: unlimited.\n"
            "  --heuristic H         dtr|dtr-eq|dtr-local|lru|size|msps|random (default dtr)\n"
            "  --dealloc P           eager|banish|ignore (default eager)\n"
            "  --remat-limit X       fail once recomputation exceeds X x baseline compute\n"
            "                        (default 1, as the DTR authors; 'none' for no limit)\n"
            "  --min-evict BYTES     do not score storages smaller than this\n"
            "  --sample-sqrt         score about sqrt(n) random candidates per eviction\n"
            "  --seed N              seed of random choices (default 1)\n"
            "  --json                one JSON object on stdout\n"
            "  --plan SCHEDULE.json  replay a static schedule on GRAPH: compute, peak and overhead\n"
            "                        against checkpoint-all, with the schedule's checks (inputs\n"
            "                        resident, no double free, outputs kept, peak within its\n"
            "                        budget_bytes or --budget); errors name the step\n"
            "  --schedule-out S.json  (GRAPH) write the run as a static schedule, steps form:\n"
            "                        every run (first or again) and every free in order; it is\n"
            "                        checked as --plan would check it (peak in the planners'\n"
            "                        accounting, which adds workspaces and kept bytes)\n"
            "  --planners-memory     (GRAPH) count memory as the static planners do: a node's\n"
            "                        workspace_ram while it runs, its kept_ram from its first\n"
            "                        run on (the unbudgeted baseline still leaves them out)\n"
            "  --staged              with --schedule-out: mapped to Checkmate's stages first\n"
            "                        with --plan: replay the schedule mapped to the stages (S kept\n"
            "                        at each stage's start, R the closure): is it in the MILP's space?\n"
            "                        (stage t ends with node t's first run; a MIP start)\n"
            "Exit status: 0 completed, 1 bad input (or an invalid schedule), 2 out of memory or\n"
            "remat limit exceeded, 3 internal.\n");
}

/* "0.5", "0.5x" -> ratio; "4GB", "1000000" -> bytes. Returns -1 when neither. */
int cli_sim_parse_budget(const char *text, double *ratio, uint64_t *bytes);
int cli_sim_parse_budget(const char *text, double *ratio, uint64_t *bytes)
{
    char *end;
    double v = strtod(text, &end);
    *ratio = 0;
    *bytes = 0;
    if (end != text && !*end && v > 0 && v < 16) {
        *ratio = v;
        return 0;
    }
    double b, r;
    if (cli_parse_size(text, &b, &r))
        return -1;
    if (r > 0) {
        *ratio = r;
        return 0;
    }
    if (!(b >= 1) || b > 1.8e19)
        return -1;
    *bytes = (uint64_t)b;
    return 0;
}

static void print_json(const char *model, const struct sim_options *o, const struct sim_baseline *b,
                       const struct sim_result *r)
{
    printf("{\"model\": ");
    json_write_string(stdout, model);
    printf(", \"heuristic\": \"%s\", \"dealloc\": \"%s\"", dtr_heuristic_name(o->heuristic),
           dtr_dealloc_name(o->dealloc));
    printf(", \"outcome\": \"%s\", \"oom\": %s, \"remat_exceeded\": %s", sim_outcome_name(r->outcome),
           r->outcome == SIM_OOM ? "true" : "false", r->outcome == SIM_REMAT_EXCEEDED ? "true" : "false");
    printf(", \"budget_bytes\": %llu, \"budget_ratio\": ", (unsigned long long)r->budget_bytes);
    json_write_number(stdout, b->peak_bytes ? (double)r->budget_bytes / (double)b->peak_bytes : 0);
    printf(", \"baseline_peak_bytes\": %llu, \"peak_bytes\": %llu, \"pinned_bytes\": %llu",
           (unsigned long long)b->peak_bytes, (unsigned long long)r->peak_bytes,
           (unsigned long long)r->pinned_bytes);
    printf(", \"baseline_compute\": ");
    json_write_number(stdout, b->compute);
    printf(", \"total_compute\": ");
    json_write_number(stdout, r->total_compute);
    printf(", \"remat_compute\": ");
    json_write_number(stdout, r->remat_compute);
    printf(", \"overhead\": ");
    json_write_number(stdout, r->overhead);
    printf(", \"evictions\": %llu, \"dealloc_evictions\": %llu, \"remats\": %llu, \"banishes\": %llu",
           (unsigned long long)r->evictions, (unsigned long long)r->dealloc_evictions,
           (unsigned long long)r->remats, (unsigned long long)r->banishes);
    printf(", \"executions\": %llu, \"heuristic_evaluations\": %llu, \"metadata_accesses\": %llu",
           (unsigned long long)r->executions, (unsigned long long)r->heuristic_evaluations,
           (unsigned long long)r->metadata_accesses);
    printf(", \"wall_s\": ");
    json_write_number(stdout, r->wall_s);
    printf(", \"dtr_overhead_seconds\": ");
    json_write_number(stdout, r->wall_s);
    printf(", \"message\": ");
    json_write_string(stdout, r->message);
    printf("}\n");
}

/* `sim GRAPH --plan SCHEDULE.json`: the schedule's compute and peak;
 * with staged, those of the schedule mapped to Checkmate's stages first
 * (whether it lies in the MILP's space at that cost and peak). */
static int sim_plan(const char *graph_path, const char *plan_path, const char *budget_text, int json, int staged)
{
    char err[600];
    struct fmt_graph g;
    if (fmt_graph_read(graph_path, &g, err, sizeof err)) {
        fprintf(stderr, "dtrexec sim: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    struct schedule s, all;
    struct schedule_result r, base;
    int rc = CLI_EXIT_OK;
    schedule_init(&s);
    if (plan_make(&g, PLAN_CHECKPOINT_ALL, 0, NULL, &all, err, sizeof err) ||
        schedule_simulate(&g, &all, 0, &base, err, sizeof err)) {
        fprintf(stderr, "dtrexec sim: %s: %s\n", graph_path, err);
        schedule_free(&all);
        fmt_graph_free(&g);
        return CLI_EXIT_INTERNAL;
    }
    schedule_free(&all);
    if (schedule_load(plan_path, &g, &s, err, sizeof err)) {
        fprintf(stderr, "dtrexec sim: %s\n", err);
        rc = CLI_EXIT_USAGE;
        goto out;
    }
    if (staged) {
        struct schedule st;
        if (sim_schedule_to_stages(&g, &s, &st, err, sizeof err)) {
            fprintf(stderr, "dtrexec sim: %s: not mappable to Checkmate's stages: %s\n", plan_path, err);
            rc = CLI_EXIT_USAGE;
            goto out;
        }
        schedule_free(&s);
        s = st;
    }
    uint64_t budget = s.budget_bytes;
    if (budget_text) {
        double ratio;
        if (cli_sim_parse_budget(budget_text, &ratio, &budget)) {
            fprintf(stderr, "dtrexec sim: --budget '%s' is not " CLI_SIZE_RANGE " (or a bare ratio below 16)\n", budget_text);
            rc = CLI_EXIT_USAGE;
            goto out;
        }
        if (ratio > 0) {
            double b = floor((double)base.peak_bytes * ratio);
            if (!(b >= 1) || b > CLI_SIZE_MAX) {
                fprintf(stderr, "dtrexec sim: --budget %s of the peak %llu bytes is %.17g bytes, outside 1 byte to "
                                "2^62 bytes\n", budget_text, (unsigned long long)base.peak_bytes, b);
                rc = CLI_EXIT_USAGE;
                goto out;
            }
            budget = (uint64_t)b;
        }
    }
    if (schedule_simulate(&g, &s, budget, &r, err, sizeof err)) {
        fprintf(stderr, "dtrexec sim: %s: %s\n", plan_path, err);
        rc = CLI_EXIT_USAGE;
        goto out;
    }
    if (json) {
        printf("{\"model\": ");
        json_write_string(stdout, g.name);
        printf(", \"schedule\": ");
        json_write_string(stdout, plan_path);
        printf(", \"solver\": ");
        json_write_string(stdout, s.solver.name);
        printf(", \"staged\": %s", staged ? "true" : "false");
        printf(", \"outcome\": \"pass\", \"oom\": false, \"remat_exceeded\": false");
        printf(", \"budget_bytes\": %llu, \"baseline_peak_bytes\": %llu, \"peak_bytes\": %llu, \"peak_step\": %u",
               (unsigned long long)budget, (unsigned long long)base.peak_bytes, (unsigned long long)r.peak_bytes,
               r.peak_step);
        printf(", \"pinned_bytes\": %llu, \"baseline_compute\": ", (unsigned long long)g.param_bytes);
        json_write_number(stdout, r.baseline_compute);
        printf(", \"total_compute\": ");
        json_write_number(stdout, r.total_compute);
        printf(", \"remat_compute\": ");
        json_write_number(stdout, r.remat_compute);
        printf(", \"overhead\": ");
        json_write_number(stdout, r.overhead);
        printf(", \"runs\": %u, \"remats\": %u, \"frees\": %u, \"steps\": %u}\n", r.runs, r.recomputes, r.frees,
               s.n_steps);
    } else {
        printf("%s: schedule %s (%s)%s is valid\n", g.name, plan_path, s.solver.name[0] ? s.solver.name : "no solver named",
               staged ? ", mapped to Checkmate's stages," : "");
        printf("  overhead %.5f (compute %.17g of checkpoint-all's %.17g, recomputed %.17g)\n", r.overhead,
               r.total_compute, r.baseline_compute, r.remat_compute);
        printf("  peak %llu bytes at step %u (%.4g of checkpoint-all's %llu)", (unsigned long long)r.peak_bytes,
               r.peak_step, base.peak_bytes ? (double)r.peak_bytes / (double)base.peak_bytes : 0.0,
               (unsigned long long)base.peak_bytes);
        if (budget)
            printf(", budget %llu", (unsigned long long)budget);
        printf("\n  %u steps: %u runs (%u recomputations), %u frees\n", s.n_steps, r.runs, r.recomputes, r.frees);
    }
out:
    schedule_free(&s);
    fmt_graph_free(&g);
    return rc;
}

/* `sim GRAPH --schedule-out S.json`: the run recorded as a schedule
 * (dtr/sim/sim_schedule.c), checked and written; prints the check. */
static int sim_schedule_out(const char *path, const struct sim_program *prog, const struct sim_baseline *base,
                            const struct sim_options *o, const char *out_path, int staged, struct sim_result *r,
                            char *note, size_t note_size)
{
    char err[600];
    struct fmt_graph g;
    struct schedule s, st;
    struct schedule_result sr;
    if (fmt_graph_read(path, &g, err, sizeof err)) {
        fprintf(stderr, "dtrexec sim: --schedule-out needs a graph: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    schedule_init(&s);
    int rc = CLI_EXIT_USAGE;
    if (sim_schedule_record(&g, prog, base, o, r, &s, err, sizeof err)) {
        fprintf(stderr, "dtrexec sim: %s\n", err);
        goto out;
    }
    if (staged && r->outcome == SIM_PASS) {
        if (sim_schedule_to_stages(&g, &s, &st, err, sizeof err)) {
            fprintf(stderr, "dtrexec sim: %s: cannot map to stages: %s\n", path, err);
            goto out;
        }
        schedule_free(&s);
        s = st;
    }
    int valid = r->outcome == SIM_PASS && !schedule_simulate(&g, &s, r->budget_bytes, &sr, err, sizeof err);
    if (schedule_save(out_path, &g, &s, err, sizeof err)) {
        fprintf(stderr, "dtrexec sim: %s\n", err);
        goto out;
    }
    if (!valid && r->outcome == SIM_PASS)
        fprintf(stderr, "dtrexec sim: %s: the schedule written to %s does not check: %s\n", path, out_path, err);
    else if (valid)
        snprintf(note, note_size, "  schedule %s%s: %u steps, compute %.17g, peak %llu bytes (planners' accounting)\n",
                 out_path, staged ? " (staged)" : "", s.n_steps, sr.total_compute, (unsigned long long)sr.peak_bytes);
    rc = CLI_EXIT_OK;
out:
    schedule_free(&s);
    fmt_graph_free(&g);
    return rc;
}

int cmd_sim(int argc, char **argv)
{
    const char *plan = NULL, *budget_text = NULL, *schedule_out = NULL;
    int staged = 0, planners_memory = 0;
    const char *path = NULL;
    int json = 0;
    struct sim_options o;
    sim_options_default(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            sim_usage(stdout);
            return CLI_EXIT_OK;
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (!strcmp(a, "--sample-sqrt")) {
            o.sample_sqrt = 1;
        } else if (!strcmp(a, "--planners-memory")) {
            planners_memory = 1;
        } else if (!strcmp(a, "--staged")) {
            staged = 1;
        } else if (!strcmp(a, "--schedule-out") && v) {
            schedule_out = v;
            i++;
        } else if (!strcmp(a, "--plan") && v) {
            plan = v;
            i++;
        } else if (!strcmp(a, "--budget") && v) {
            budget_text = v;
            if (cli_sim_parse_budget(v, &o.budget_ratio, &o.budget_bytes)) {
                fprintf(stderr, "dtrexec sim: --budget '%s' is not " CLI_SIZE_RANGE " (or a bare ratio below 16)\n", v);
                return CLI_EXIT_USAGE;
            }
            i++;
        } else if (!strcmp(a, "--heuristic") && v) {
            if (dtr_heuristic_parse(v, &o.heuristic)) {
                fprintf(stderr, "dtrexec sim: unknown heuristic '%s' (dtr, dtr-eq, dtr-local, lru, size, msps, random)\n", v);
                return CLI_EXIT_USAGE;
            }
            i++;
        } else if (!strcmp(a, "--dealloc") && v) {
            if (dtr_dealloc_parse(v, &o.dealloc)) {
                fprintf(stderr, "dtrexec sim: unknown dealloc policy '%s' (eager, banish, ignore)\n", v);
                return CLI_EXIT_USAGE;
            }
            i++;
        } else if (!strcmp(a, "--remat-limit") && v) {
            char *end;
            if (!strcmp(v, "none") || !strcmp(v, "inf")) {
                o.remat_limit = -1;
            } else {
                o.remat_limit = strtod(v, &end);
                if (end == v || *end || !(o.remat_limit >= 0)) {
                    fprintf(stderr, "dtrexec sim: --remat-limit '%s' is not a non-negative number\n", v);
                    return CLI_EXIT_USAGE;
                }
            }
            i++;
        } else if (!strcmp(a, "--min-evict") && v) {
            double b, r;
            if (cli_parse_size(v, &b, &r) || r > 0) {
                fprintf(stderr, "dtrexec sim: --min-evict '%s' is not a size\n", v);
                return CLI_EXIT_USAGE;
            }
            o.min_evict_bytes = (uint64_t)b;
            i++;
        } else if (!strcmp(a, "--seed") && v) {
            long long seed;
            if (cli_parse_int("dtrexec sim", "--seed", v, 0, LLONG_MAX, &seed))
                return CLI_EXIT_USAGE;
            o.seed = (unsigned long long)seed;
            i++;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "dtrexec sim: unknown option or missing value: %s\n", a);
            sim_usage(stderr);
            return CLI_EXIT_USAGE;
        } else if (!path) {
            path = a;
        } else {
            fprintf(stderr, "dtrexec sim: one TRACE or GRAPH expected, got also '%s'\n", a);
            return CLI_EXIT_USAGE;
        }
    }
    if (!path) {
        sim_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (plan)
        return sim_plan(path, plan, budget_text, json, staged);
    char err[512];
    struct sim_program prog;
    if (sim_program_load(path, &prog, err, sizeof err)) {
        fprintf(stderr, "dtrexec sim: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    struct sim_baseline base;
    if (sim_baseline_run(&prog, &base, err, sizeof err)) {
        fprintf(stderr, "dtrexec sim: %s\n", err);
        sim_program_free(&prog);
        return CLI_EXIT_USAGE;
    }
    uint64_t *ws = NULL, *kept = NULL;
    if (planners_memory) {
        struct fmt_graph g;
        int bad = fmt_graph_read(path, &g, err, sizeof err) ||
                  sim_schedule_planners_memory(&g, &prog, &ws, &kept, err, sizeof err);
        fmt_graph_free(&g);   /* zeroed by a failed load */
        if (bad) {
            fprintf(stderr, "dtrexec sim: --planners-memory needs a graph: %s\n", err);
            sim_program_free(&prog);
            return CLI_EXIT_USAGE;
        }
        o.step_workspace = ws;
        o.step_kept = kept;
    }
    struct sim_result r;
    int rc = 0;
    char note[1200] = "";
    if (schedule_out) {
        int src = sim_schedule_out(path, &prog, &base, &o, schedule_out, staged, &r, note, sizeof note);
        if (src) {
            sim_program_free(&prog);
            free(ws);
            free(kept);
            return src;
        }
    } else {
        rc = sim_run(&prog, &base, &o, &r);
    }
    free(ws);
    free(kept);
    if (rc || r.outcome == SIM_ERROR) {
        fprintf(stderr, "dtrexec sim: %s: %s\n", path, r.message);
        sim_program_free(&prog);
        return CLI_EXIT_USAGE;
    }
    if (json) {
        print_json(prog.name, &o, &base, &r);
    } else {
        printf("%s: %s under %s, dealloc %s, budget %llu bytes (%.4g of the %llu-byte baseline peak)\n", prog.name,
               sim_outcome_name(r.outcome), dtr_heuristic_name(o.heuristic), dtr_dealloc_name(o.dealloc),
               (unsigned long long)r.budget_bytes,
               base.peak_bytes ? (double)r.budget_bytes / (double)base.peak_bytes : 0.0,
               (unsigned long long)base.peak_bytes);
        printf("  overhead %.5f (compute %.17g of baseline %.17g, recomputed %.17g)\n", r.overhead, r.total_compute,
               base.compute, r.remat_compute);
        printf("  peak %llu bytes, pinned %llu; %llu evictions, %llu eager evictions, %llu remats\n",
               (unsigned long long)r.peak_bytes, (unsigned long long)r.pinned_bytes,
               (unsigned long long)r.evictions, (unsigned long long)r.dealloc_evictions,
               (unsigned long long)r.remats);
        printf("  %llu heuristic evaluations, %llu metadata accesses, %.3f s\n",
               (unsigned long long)r.heuristic_evaluations, (unsigned long long)r.metadata_accesses, r.wall_s);
        if (r.outcome != SIM_PASS)
            printf("  %s\n", r.message);
        fputs(note, stdout);
    }
    sim_program_free(&prog);
    return r.outcome == SIM_PASS ? CLI_EXIT_OK : CLI_EXIT_OOM;
}
