/* tests/test_sim_api.c — the simulator's and planners' public C API
 * (dtr/sim/dtrx_sim_api.h) against the functions it wraps: the JSON it
 * returns carries sim_run's and the planners' numbers, each error is its
 * status with a message naming the input and no JSON, and the solver
 * front end's environment is set for the call only. Linked statically
 * here (the API is in dtrx_sim too), so the sanitized tree checks it;
 * tests/python/test_sim.py checks libdtrexec_sim.so against the command. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtr/sim/dtrx_sim_api.h"
#include "dtr/sim/sim.h"
#include "dtr/format/json.h"
#include "testutil.h"

#define LOG DTRX_DATA_DIR "/dtr-logs/resnet32-56.log"
#define N100 DTRX_DATA_DIR "/checkmate-graphs/random-layered-n100.json"
#define RESNET18 DTRX_SOURCE_DIR "/bench/results/zoo-resnet18.json"

static char tmpdir[256];

static void parse(const char *text, struct json_value *v)
{
    char err[300];
    ck_assert_msg(text != NULL, "no JSON: %s", dtrx_sim_last_error());
    ck_assert_msg(json_parse(text, strlen(text), v, err, sizeof err) == 0, "%s in %.200s", err, text);
}

static double num(const struct json_value *o, const char *key)
{
    double x;
    ck_assert_msg(json_as_double(json_get(o, key), &x) == 0, "no number '%s'", key);
    return x;
}

/* Three budgets (ratio, bare ratio, bytes) and an unlimited one: one object
 * each, in order, with sim_run's numbers for the same options. */
START_TEST(test_simulate_equals_sim_run)
{
    struct dtrx_sim_options o;
    dtrx_sim_options_init(&o);
    o.heuristic = "dtr-eq";
    const char *budgets[] = { "0.5x", "0.3", "64MiB", NULL };
    char *json = NULL;
    ck_assert_int_eq(dtrx_sim_simulate(LOG, &o, budgets, 4, &json), DTRX_OK);
    struct json_value v;
    parse(json, &v);
    ck_assert_int_eq(v.type, JSON_ARRAY);
    ck_assert_int_eq(v.u.array.n, 4);

    char err[600];
    struct sim_program p;
    struct sim_baseline b;
    ck_assert_msg(sim_program_load(LOG, &p, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(sim_baseline_run(&p, &b, err, sizeof err) == 0, "%s", err);
    const double ratios[] = { 0.5, 0.3, 0, 0 };
    const uint64_t bytes[] = { 0, 0, 64ull << 20, 0 };
    for (int i = 0; i < 4; i++) {
        struct sim_options so;
        struct sim_result r;
        sim_options_default(&so);
        so.heuristic = DTR_HEURISTIC_EQ;
        so.budget_ratio = ratios[i];
        so.budget_bytes = bytes[i];
        ck_assert_int_eq(sim_run(&p, &b, &so, &r), 0);
        const struct json_value *row = &v.u.array.items[i];
        ck_assert_str_eq(json_string(json_get(row, "outcome")), sim_outcome_name(r.outcome));
        ck_assert_str_eq(json_string(json_get(row, "heuristic")), "dtr-eq");
        ck_assert_msg(num(row, "budget_bytes") == (double)r.budget_bytes, "row %d: budget %.17g, want %llu", i,
                      num(row, "budget_bytes"), (unsigned long long)r.budget_bytes);
        ck_assert_msg(num(row, "total_compute") == r.total_compute, "row %d: compute %.17g, want %.17g", i,
                      num(row, "total_compute"), r.total_compute);
        ck_assert_msg(num(row, "evictions") == (double)r.evictions && num(row, "remats") == (double)r.remats,
                      "row %d: evictions/remats differ", i);
        ck_assert_msg(num(row, "baseline_peak_bytes") == (double)b.peak_bytes, "row %d: baseline peak", i);
    }
    ck_assert_msg(num(&v.u.array.items[3], "budget_bytes") == 0, "unlimited row has a budget");
    sim_program_free(&p);
    json_free(&v);
    dtrx_sim_json_free(json);

    /* no options and no budgets: one unlimited replay with the defaults */
    ck_assert_int_eq(dtrx_sim_simulate(LOG, NULL, NULL, 0, &json), DTRX_OK);
    parse(json, &v);
    ck_assert_int_eq(v.u.array.n, 1);
    ck_assert_str_eq(json_string(json_get(&v.u.array.items[0], "heuristic")), "dtr");
    ck_assert_str_eq(json_string(json_get(&v.u.array.items[0], "outcome")), "pass");
    json_free(&v);
    dtrx_sim_json_free(json);
}
END_TEST

/* Called as expect_error(CALL(..., &json), want, &json, needle): json is
 * read after the call (argument evaluation order is unspecified). */
static void expect_error(enum dtrx_status got, enum dtrx_status want, char **jsonp, const char *needle)
{
    char *json = *jsonp;
    ck_assert_msg(got == want, "status %d, want %d (%s)", got, want, dtrx_sim_last_error());
    ck_assert_msg(json == NULL, "JSON returned with an error (%s)", needle);
    ck_assert_msg(strstr(dtrx_sim_last_error(), needle), "'%s' not in the message: %s", needle,
                  dtrx_sim_last_error());
}

START_TEST(test_errors)
{
    struct dtrx_sim_options o;
    dtrx_sim_options_init(&o);
    char *json = (char *)1;
    const char *lots[] = { "lots" };
    expect_error(dtrx_sim_simulate(DTRX_DATA_DIR "/missing.log", &o, NULL, 0, &json), DTRX_ERR_INPUT, &json,
                 "missing.log: No such file");
    expect_error(dtrx_sim_simulate(LOG, &o, lots, 1, &json), DTRX_ERR_INPUT, &json, "budget 'lots'");
    o.heuristic = "best";
    expect_error(dtrx_sim_simulate(LOG, &o, NULL, 0, &json), DTRX_ERR_INPUT, &json, "unknown heuristic 'best'");
    o.heuristic = NULL;
    o.dealloc = "never";
    expect_error(dtrx_sim_simulate(LOG, &o, NULL, 0, &json), DTRX_ERR_INPUT, &json, "unknown dealloc policy");
    o.dealloc = NULL;
    o.planners_memory = 1;   /* an op log has no workspaces */
    expect_error(dtrx_sim_simulate(LOG, &o, NULL, 0, &json), DTRX_ERR_INPUT, &json, "planners_memory needs a graph");

    struct dtrx_sim_plan_options po;
    dtrx_sim_plan_options_init(&po);
    po.solver = "magic";
    expect_error(dtrx_sim_plan(N100, &po, &json), DTRX_ERR_INPUT, &json, "unknown solver 'magic'");
    po.solver = "chen-sqrtn";
    po.budget = "0.01x";
    expect_error(dtrx_sim_plan(N100, &po, &json), DTRX_ERR_BUDGET, &json, "chen-sqrtn at ");
    po.budget = "0.8x";
    expect_error(dtrx_sim_plan(LOG, &po, &json), DTRX_ERR_INPUT, &json, "resnet32-56.log");
    po.start = LOG;
    expect_error(dtrx_sim_plan(N100, &po, &json), DTRX_ERR_INPUT, &json, "MIP start");
    expect_error(dtrx_sim_schedule_check(DTRX_DATA_DIR "/none.json", NULL, NULL, 0, &json), DTRX_ERR_INPUT, &json,
                 "none.json");
}
END_TEST

/* plan (ResNet-18's training graph): the planner's schedule and numbers; the embedded schedule is the
 * file schedule_save writes, and checking it gives the same peak. */
START_TEST(test_plan_and_check)
{
    struct dtrx_sim_plan_options po;
    dtrx_sim_plan_options_init(&po);
    po.solver = "chen-greedy";
    po.budget = "0.8x";
    char *json = NULL;
    ck_assert_int_eq(dtrx_sim_plan(RESNET18, &po, &json), DTRX_OK);
    struct json_value v;
    parse(json, &v);

    char err[600];
    struct fmt_graph g;
    struct schedule all, s;
    struct schedule_result base, r;
    ck_assert_msg(fmt_graph_read(RESNET18, &g, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(plan_make(&g, PLAN_CHECKPOINT_ALL, 0, NULL, &all, err, sizeof err), PLAN_OK);
    ck_assert_int_eq(schedule_simulate(&g, &all, 0, &base, err, sizeof err), 0);
    uint64_t budget = (uint64_t)(0.8 * (double)base.peak_bytes);
    ck_assert_msg(num(&v, "budget_bytes") == (double)budget, "budget %.17g, want %llu", num(&v, "budget_bytes"),
                  (unsigned long long)budget);
    ck_assert_int_eq(plan_make(&g, PLAN_CHEN_GREEDY, budget, NULL, &s, err, sizeof err), PLAN_OK);
    ck_assert_int_eq(schedule_simulate(&g, &s, budget, &r, err, sizeof err), 0);
    ck_assert_msg(num(&v, "total_compute") == r.total_compute && num(&v, "peak_bytes") == (double)r.peak_bytes,
                  "plan's numbers differ from plan_make's");
    const struct json_value *steps = json_get(json_get(&v, "schedule"), "steps");
    ck_assert_msg(steps && steps->type == JSON_ARRAY && steps->u.array.n > 0, "no schedule steps");

    /* the schedule as its own file: what schedule_save writes */
    char path[300];
    snprintf(path, sizeof path, "%s/schedule.json", tmpdir);
    const char *at = strstr(json, "\"schedule\": ");
    ck_assert_ptr_nonnull(at);
    at += strlen("\"schedule\": ");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fwrite(at, 1, strlen(at) - 2, f);   /* without the outer "}\n" */
    fclose(f);
    struct schedule back;
    ck_assert_msg(schedule_load(path, &g, &back, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(back.n_steps, s.n_steps);
    for (uint32_t i = 0; i < s.n_steps; i++)
        ck_assert_msg(back.steps[i].kind == s.steps[i].kind && back.steps[i].node == s.steps[i].node,
                      "step %u differs", i);

    char *check = NULL;
    ck_assert_int_eq(dtrx_sim_schedule_check(path, RESNET18, NULL, 0, &check), DTRX_OK);
    struct json_value c;
    parse(check, &c);
    ck_assert_msg(num(&c, "peak_bytes") == (double)r.peak_bytes, "check's peak differs");
    ck_assert_msg(num(&c, "budget_bytes") == (double)budget, "check's budget is not the schedule's");
    json_free(&c);
    dtrx_sim_json_free(check);
    char bytes[32];
    snprintf(bytes, sizeof bytes, "%lluB", (unsigned long long)r.peak_bytes - 1);
    ck_assert_int_eq(dtrx_sim_schedule_check(path, RESNET18, bytes, 0, &check), DTRX_ERR_INPUT);
    ck_assert_msg(strstr(dtrx_sim_last_error(), "step "), "no step named: %s", dtrx_sim_last_error());

    unlink(path);
    schedule_free(&back);
    schedule_free(&s);
    schedule_free(&all);
    fmt_graph_free(&g);
    json_free(&v);
    dtrx_sim_json_free(json);
}
END_TEST

/* solvers_dir names the front end for the call while DTRX_MILP_SCRIPT is
 * unset; afterwards the variable is unset again; a set one wins. */
START_TEST(test_solver_environment)
{
    char script[300];
    const char *dir = tmpdir;
    snprintf(script, sizeof script, "%s/milp_highs.py", dir);
    FILE *f = fopen(script, "w");
    ck_assert_ptr_nonnull(f);
    fputs("import sys\nsys.exit(7)\n", f);
    fclose(f);
    unsetenv("DTRX_MILP_SCRIPT");
    unsetenv("DTRX_MILP_SOLVER");
    struct dtrx_sim_plan_options po;
    dtrx_sim_plan_options_init(&po);
    po.solver = "checkmate-lp";
    po.budget = "0.8x";
    po.solvers_dir = dir;
    po.python = "python3";
    char *json = NULL;
    expect_error(dtrx_sim_plan(N100, &po, &json), DTRX_ERR_INTERNAL, &json, script);
    ck_assert_msg(strstr(dtrx_sim_last_error(), "exit 7"), "%s", dtrx_sim_last_error());
    ck_assert_msg(getenv("DTRX_MILP_SCRIPT") == NULL && getenv("DTRX_PYTHON") == NULL,
                  "the call left its environment behind");
    setenv("DTRX_MILP_SCRIPT", "/nonexistent/solver.py", 1);
    expect_error(dtrx_sim_plan(N100, &po, &json), DTRX_ERR_INTERNAL, &json, "/nonexistent/solver.py");
    ck_assert_str_eq(getenv("DTRX_MILP_SCRIPT"), "/nonexistent/solver.py");
    unsetenv("DTRX_MILP_SCRIPT");
    unlink(script);
}
END_TEST

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/dtrx-simapi-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    TCase *tc;
    Suite *su = testutil_suite("sim_api", "sim_api", 120, &tc);
    tcase_add_test(tc, test_simulate_equals_sim_run);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_plan_and_check);
    tcase_add_test(tc, test_solver_environment);
    int failed = testutil_run(su);
    testutil_remove_dir(tmpdir);
    return failed;
}
