/* tests/test_sim_schedule.c — DTR's simulated run recorded as a static
 * schedule (dtr/sim/sim_schedule.c): the schedule replays with
 * schedule_simulate at the run's budget with the same compute and peak;
 * its stage mapping is a valid stage schedule; the planners' memory
 * accounting; the MIP start search; and `dtrexec sim --schedule-out`
 * checked by `dtrexec sim --plan`. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtr/sim/sim.h"
#include "testutil.h"
#include "dtr/format/json.h"

#define N100 DTRX_DATA_DIR "/checkmate-graphs/random-layered-n100.json"
#define RESNET18 DTRX_SOURCE_DIR "/bench/results/zoo-resnet18.json"

static char tmpdir[256];

static void load(const char *path, struct fmt_graph *g, struct sim_program *p, struct sim_baseline *b)
{
    char err[600];
    ck_assert_msg(fmt_graph_read(path, g, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(sim_program_load_graph(path, p, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(sim_baseline_run(p, b, err, sizeof err) == 0, "%s", err);
}

static int close_to(double a, double b) { return fabs(a - b) <= 1e-9 * fmax(1, fabs(b)); }

/* Every passing DTR run on the graph, at several budgets and heuristics:
 * the recorded schedule is valid within the run's budget, runs as many
 * calls and costs and peaks exactly as the run; its stage form is valid
 * and costs no more (a stage recomputes a node once). */
START_TEST(test_record_replays)
{
    static const enum dtr_heuristic hs[] = { DTR_HEURISTIC_EQ, DTR_HEURISTIC_DTR, DTR_HEURISTIC_LRU };
    static const double ratios[] = { 1.0, 0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5 };
    struct fmt_graph g;
    struct sim_program p;
    struct sim_baseline b;
    char err[600];
    load(N100, &g, &p, &b);
    int passed = 0, with_remats = 0;
    for (size_t h = 0; h < sizeof hs / sizeof hs[0]; h++)
        for (size_t k = 0; k < sizeof ratios / sizeof ratios[0]; k++) {
            struct sim_options o;
            struct sim_result r, plain;
            struct schedule s, st;
            struct schedule_result sr, tr;
            sim_options_default(&o);
            o.heuristic = hs[h];
            o.budget_ratio = ratios[k];
            o.remat_limit = -1;
            schedule_init(&s);
            ck_assert_msg(sim_schedule_record(&g, &p, &b, &o, &r, &s, err, sizeof err) == 0, "%s", err);
            /* recording changes nothing in the run */
            ck_assert_int_eq(sim_run(&p, &b, &o, &plain), 0);
            ck_assert_int_eq(plain.outcome, r.outcome);
            ck_assert(plain.total_compute == r.total_compute && plain.peak_bytes == r.peak_bytes);
            if (r.outcome != SIM_PASS) {
                schedule_free(&s);
                continue;
            }
            passed++;
            with_remats += r.remats > 0;
            ck_assert_msg(schedule_simulate(&g, &s, r.budget_bytes, &sr, err, sizeof err) == 0,
                          "%s at %g: %s", dtr_heuristic_name(hs[h]), ratios[k], err);
            ck_assert_msg(close_to(sr.total_compute, r.total_compute), "%.17g vs %.17g", sr.total_compute,
                          r.total_compute);
            ck_assert_uint_eq(sr.peak_bytes, r.peak_bytes);
            ck_assert_uint_le(sr.peak_bytes, r.budget_bytes);
            ck_assert_uint_eq(sr.runs, r.executions);
            ck_assert_uint_eq(sr.recomputes, r.remats);
            ck_assert_msg(sim_schedule_to_stages(&g, &s, &st, err, sizeof err) == 0, "%s", err);
            ck_assert_msg(schedule_simulate(&g, &st, 0, &tr, err, sizeof err) == 0, "stages: %s", err);
            ck_assert(tr.total_compute <= sr.total_compute + 1e-9);
            for (uint32_t i = 0; i < st.n_steps; i++)
                ck_assert(st.steps[i].kind == SCHEDULE_FREE || st.steps[i].stage >= 0);
            schedule_free(&s);
            schedule_free(&st);
        }
    ck_assert_int_ge(passed, 6);
    ck_assert_int_ge(with_remats, 3);
    sim_program_free(&p);
    fmt_graph_free(&g);
}
END_TEST

/* With workspaces and kept bytes (the exported ResNet-18): DTR counting
 * memory as the planners do keeps its recorded schedule within the budget
 * in their accounting, at the same peak. */
START_TEST(test_planners_memory)
{
    struct fmt_graph g;
    struct sim_program p;
    struct sim_baseline b;
    struct schedule all;
    struct schedule_result base;
    char err[600];
    load(RESNET18, &g, &p, &b);
    uint64_t *ws, *kept;
    ck_assert_msg(sim_schedule_planners_memory(&g, &p, &ws, &kept, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(plan_make(&g, PLAN_CHECKPOINT_ALL, 0, NULL, &all, err, sizeof err), PLAN_OK);
    ck_assert_int_eq(schedule_simulate(&g, &all, 0, &base, err, sizeof err), 0);
    schedule_free(&all);
    /* unbudgeted: the planners' checkpoint-all peak */
    struct sim_options o;
    struct sim_result r;
    struct schedule s;
    struct schedule_result sr;
    sim_options_default(&o);
    o.step_workspace = ws;
    o.step_kept = kept;
    ck_assert_int_eq(sim_run(&p, &b, &o, &r), 0);
    ck_assert_uint_eq(r.peak_bytes, base.peak_bytes);
    ck_assert_uint_gt(base.peak_bytes, b.peak_bytes);
    int passed = 0;
    for (double ratio = 0.9; ratio > 0.55; ratio -= 0.1) {
        o.heuristic = DTR_HEURISTIC_EQ;
        o.remat_limit = -1;
        o.budget_bytes = (uint64_t)(ratio * (double)base.peak_bytes);
        schedule_init(&s);
        ck_assert_msg(sim_schedule_record(&g, &p, &b, &o, &r, &s, err, sizeof err) == 0, "%s", err);
        if (r.outcome == SIM_PASS) {
            passed++;
            ck_assert_msg(schedule_simulate(&g, &s, o.budget_bytes, &sr, err, sizeof err) == 0, "%g: %s", ratio, err);
            ck_assert_uint_eq(sr.peak_bytes, r.peak_bytes);
            ck_assert(close_to(sr.total_compute, r.total_compute));
        }
        schedule_free(&s);
    }
    ck_assert_int_ge(passed, 2);
    free(ws);
    free(kept);
    sim_program_free(&p);
    fmt_graph_free(&g);
}
END_TEST

static int always(void *ctx, const struct schedule *sc)
{
    (*(int *)ctx)++;
    return 1;
}

/* The MIP start: a valid stage schedule within the budget. */
START_TEST(test_start)
{
    struct fmt_graph g;
    struct schedule all, s;
    struct schedule_result base, sr;
    char err[600], label[32];
    ck_assert_msg(fmt_graph_read(N100, &g, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(plan_make(&g, PLAN_CHECKPOINT_ALL, 0, NULL, &all, err, sizeof err), PLAN_OK);
    ck_assert_int_eq(schedule_simulate(&g, &all, 0, &base, err, sizeof err), 0);
    schedule_free(&all);
    uint64_t budget = (uint64_t)(0.9 * (double)base.peak_bytes);
    double cost;
    int asked = 0;
    schedule_init(&s);
    ck_assert_int_eq(sim_schedule_start(&g, budget, always, &asked, &s, &cost, label, sizeof label), PLAN_OK);
    ck_assert_int_gt(asked, 0);
    ck_assert_msg(strstr(label, "dtr") != NULL, "%s", label);
    ck_assert_msg(schedule_simulate(&g, &s, budget, &sr, err, sizeof err) == 0, "%s", err);
    ck_assert(close_to(sr.total_compute, cost));
    ck_assert(cost > base.total_compute);   /* 0.9 needs recomputation */
    for (uint32_t i = 0; i < s.n_steps; i++)
        ck_assert(s.steps[i].kind == SCHEDULE_FREE || s.steps[i].stage >= 0);
    schedule_free(&s);
    /* a budget below any schedule's: none */
    schedule_init(&s);
    ck_assert_int_eq(sim_schedule_start(&g, plan_graph_min_peak(&g) / 2, NULL, NULL, &s, &cost, label, sizeof label),
                     PLAN_INFEASIBLE);
    schedule_free(&s);
    fmt_graph_free(&g);
}
END_TEST

static double field(const char *json, const char *key)
{
    struct json_value v;
    char err[200];
    double x = NAN;
    ck_assert_msg(json_parse(json, strlen(json), &v, err, sizeof err) == 0, "%s: %s", err, json);
    ck_assert_msg(json_as_double(json_get(&v, key), &x) == 0, "no %s in %s", key, json);
    json_free(&v);
    return x;
}

/* `sim --schedule-out` then `sim --plan`: same compute, peak within the
 * budget, for the steps form and the staged one. */
START_TEST(test_cli)
{
    char out[8192], args[2048], sched[600];
    for (int staged = 0; staged < 2; staged++) {
        snprintf(sched, sizeof sched, "%s/dtr%d.json", tmpdir, staged);
        snprintf(args, sizeof args, "sim %s --budget 0.9 --heuristic dtr-eq --remat-limit none --json --schedule-out %s%s",
                 N100, sched, staged ? " --staged" : "");
        ck_assert_msg(testutil_run_cli(args, out, sizeof out) == 0, "%s", out);
        double compute = field(out, "total_compute"), budget = field(out, "budget_bytes");
        ck_assert(field(out, "remats") > 0);
        snprintf(args, sizeof args, "sim %s --plan %s --json", N100, sched);
        ck_assert_msg(testutil_run_cli(args, out, sizeof out) == 0, "%s", out);
        ck_assert_msg(staged ? field(out, "total_compute") <= compute + 1e-9
                             : close_to(field(out, "total_compute"), compute),
                      "%s", out);
        ck_assert(field(out, "peak_bytes") <= budget);
        ck_assert(field(out, "budget_bytes") == budget);
    }
    /* --plan --staged replays a steps schedule mapped to the stages: DTR's
     * run so mapped is the one --schedule-out --staged wrote */
    snprintf(args, sizeof args, "sim %s --plan %s/dtr1.json --json", N100, tmpdir);
    ck_assert_msg(testutil_run_cli(args, out, sizeof out) == 0, "%s", out);
    double staged_compute = field(out, "total_compute"), staged_peak = field(out, "peak_bytes");
    snprintf(args, sizeof args, "sim %s --plan %s/dtr0.json --staged --json", N100, tmpdir);
    ck_assert_msg(testutil_run_cli(args, out, sizeof out) == 0, "%s", out);
    ck_assert_msg(close_to(field(out, "total_compute"), staged_compute) && field(out, "peak_bytes") == staged_peak,
                  "%s", out);
    /* a schedule whose first runs leave node order has no stages */
    snprintf(sched, sizeof sched, "%s/order.json", tmpdir);
    FILE *f = fopen(sched, "w");
    ck_assert(f != NULL);
    fputs("{\"format\": \"dtrexec-schedule\", \"version\": 1, \"steps\": [{\"run\": \"1\"}]}", f);
    fclose(f);
    snprintf(args, sizeof args, "sim %s --plan %s --staged", N100, sched);
    ck_assert_int_ne(testutil_run_cli(args, out, sizeof out), 0);
    ck_assert_msg(strstr(out, "not in node order") != NULL, "%s", out);
    /* a trace is no graph */
    snprintf(args, sizeof args, "sim %s/none.json --schedule-out %s/x.json", tmpdir, tmpdir);
    ck_assert_int_ne(testutil_run_cli(args, out, sizeof out), 0);
}
END_TEST

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/dtrx-simsched-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    TCase *tc;
    Suite *su = testutil_suite("sim_schedule", "sim_schedule", 120, &tc);
    tcase_add_test(tc, test_record_replays);
    tcase_add_test(tc, test_planners_memory);
    tcase_add_test(tc, test_start);
    tcase_add_test(tc, test_cli);
    int failed = testutil_run(su);
    testutil_remove_dir(tmpdir);
    return failed;
}
