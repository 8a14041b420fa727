/* tests/test_plan.c — static checkpointing: schedule files (both forms)
 * and their checks with step indices, the static replay's accounting,
 * every planner on hand-made graphs and on the shared Checkmate graphs,
 * the MILP against the baselines, and the CLI's exit codes. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dtr/sim/sim.h"
#include "testutil.h"

#define GRAPHS DTRX_DATA_DIR "/checkmate-graphs/"

static char tmpdir[256];

static const char *tmp_path(const char *name)
{
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}

static const char *write_tmp(const char *name, const char *text)
{
    const char *p = tmp_path(name);
    FILE *f = fopen(p, "w");
    ck_assert_msg(f != NULL, "cannot write %s", p);
    fputs(text, f);
    fclose(f);
    return p;
}

/* A training chain in Checkmate's layout: forward f0..f3 (f3 the loss),
 * backward b3..b0, b_k reads f_k's input (f_{k-1}) and the gradient from
 * above; the last backward node is the output. Sizes 10, cost 1; f2 and f3
 * carry the extra fields given (e.g. ", \"workspace_ram\": 100"). */
static const char *chain_graph_with(const char *file, const char *f2_extra, const char *f3_extra)
{
    static char text[4096];
    snprintf(text, sizeof text,
        "{\"directed\": true, \"multigraph\": true, \"graph\": {\"name\": \"chain\"},\n"
        " \"nodes\": [\n"
        "  {\"id\": 0, \"name\": \"f0\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 10},\n"
        "  {\"id\": 1, \"name\": \"f1\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 10},\n"
        "  {\"id\": 2, \"name\": \"f2\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 10%s},\n"
        "  {\"id\": 3, \"name\": \"f3\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 10%s},\n"
        "  {\"id\": 4, \"name\": \"b3\", \"backward\": true, \"cost_cpu\": 1, \"cost_ram\": 10},\n"
        "  {\"id\": 5, \"name\": \"b2\", \"backward\": true, \"cost_cpu\": 1, \"cost_ram\": 10},\n"
        "  {\"id\": 6, \"name\": \"b1\", \"backward\": true, \"cost_cpu\": 1, \"cost_ram\": 10},\n"
        "  {\"id\": 7, \"name\": \"b0\", \"backward\": true, \"cost_cpu\": 1, \"cost_ram\": 10}],\n"
        " \"links\": [{\"source\": 0, \"target\": 1}, {\"source\": 1, \"target\": 2}, {\"source\": 2, \"target\": 3},\n"
        "  {\"source\": 3, \"target\": 4}, {\"source\": 2, \"target\": 4},\n"
        "  {\"source\": 4, \"target\": 5}, {\"source\": 1, \"target\": 5}, {\"source\": 2, \"target\": 5},\n"
        "  {\"source\": 5, \"target\": 6}, {\"source\": 0, \"target\": 6}, {\"source\": 1, \"target\": 6},\n"
        "  {\"source\": 6, \"target\": 7}, {\"source\": 0, \"target\": 7}]}\n",
        f2_extra, f3_extra);
    return write_tmp(file, text);
}

static const char *chain_graph(void) { return chain_graph_with("chain.json", "", ""); }

static void load_graph(const char *path, struct fmt_graph *g)
{
    char err[600];
    ck_assert_msg(fmt_graph_read(path, g, err, sizeof err) == 0, "%s", err);
}

static int parse(const struct fmt_graph *g, const char *text, struct schedule *s, char *err, size_t n)
{
    return schedule_parse(text, strlen(text), g, s, err, n);
}

#define HEAD "{\"format\": \"dtrexec-schedule\", \"version\": 1, "

START_TEST(test_graph_order_and_names)
{
    struct fmt_graph g;
    load_graph(chain_graph(), &g);
    ck_assert_uint_eq(g.n, 8);
    ck_assert_str_eq(g.names[0], "f0");
    ck_assert_int_eq(fmt_graph_find(&g, "b2"), 5);
    ck_assert_int_eq(fmt_graph_find(&g, "nope"), -1);
    ck_assert_msg(g.sink[7] && !g.sink[3], "b0 is the only output");
    ck_assert_msg(g.backward[4] && !g.backward[3], "backward marks");
    ck_assert_uint_eq(g.n_edges, 13);
    ck_assert_uint_eq(strlen(g.sha256), 64);
    /* the largest node with its inputs: b2 reads b3, f1, f2 */
    ck_assert_uint_eq(plan_graph_min_peak(&g), 40);
    fmt_graph_free(&g);
}
END_TEST

START_TEST(test_steps_replay_accounting)
{
    struct fmt_graph g;
    load_graph(chain_graph(), &g);
    struct schedule s;
    char err[600];
    struct schedule_result r;
    /* checkpoint-all by hand: peak while b3 runs: f0..f3 + b3 = 50 */
    const char *text = HEAD "\"steps\": [{\"run\": \"f0\"}, {\"run\": \"f1\"}, {\"run\": \"f2\"}, {\"run\": \"f3\"},"
                       "{\"run\": \"b3\"}, {\"free\": [\"f3\"]}, {\"run\": \"b2\"}, {\"free\": [\"b3\", \"f2\"]},"
                       "{\"run\": \"b1\"}, {\"free\": [\"b2\", \"f1\"]}, {\"run\": \"b0\"}, {\"free\": [\"b1\", \"f0\"]}]}";
    ck_assert_msg(parse(&g, text, &s, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(schedule_simulate(&g, &s, 0, &r, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(r.peak_bytes, 50);
    ck_assert_uint_eq(r.peak_step, 4);
    ck_assert_uint_eq(r.runs, 8);
    ck_assert_uint_eq(r.recomputes, 0);
    ck_assert_msg(r.overhead == 1.0, "overhead %g", r.overhead);
    /* the same budget passes, one byte less names the step */
    ck_assert(schedule_simulate(&g, &s, 50, &r, err, sizeof err) == 0);
    ck_assert(schedule_simulate(&g, &s, 49, &r, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "step 4") && strstr(err, "budget"), "%s", err);
    schedule_free(&s);
    /* a recomputation: f1 freed after the forward pass, recomputed */
    text = HEAD "\"budget_bytes\": 50, \"steps\": [{\"run\": \"f0\"}, {\"run\": \"f1\"}, {\"run\": \"f2\"},"
                "{\"free\": [\"f1\"]}, {\"run\": \"f3\"}, {\"run\": \"b3\"}, {\"free\": [\"f3\"]},"
                "{\"run\": \"f1\", \"recompute\": true}, {\"run\": \"b2\"}, {\"free\": [\"b3\", \"f2\"]},"
                "{\"run\": \"b1\"}, {\"free\": [\"b2\", \"f1\"]}, {\"run\": \"b0\"}, {\"free\": [\"b1\", \"f0\"]}]}";
    ck_assert_msg(parse(&g, text, &s, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(s.budget_bytes, 50);
    ck_assert_msg(schedule_simulate(&g, &s, s.budget_bytes, &r, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(r.recomputes, 1);
    /* while b2 runs: f0, f1 (again), f2, b3 and b2 */
    ck_assert_uint_eq(r.peak_bytes, 50);
    ck_assert_msg(r.overhead == 9.0 / 8.0, "overhead %g, expected 1.125", r.overhead);
    /* written and read back: the same steps */
    ck_assert_msg(schedule_save(tmp_path("rt.json"), &g, &s, err, sizeof err) == 0, "%s", err);
    struct schedule t;
    ck_assert_msg(schedule_load(tmp_path("rt.json"), &g, &t, err, sizeof err) == 0, "%s", err);
    ck_assert_uint_eq(t.n_steps, s.n_steps);
    for (uint32_t k = 0; k < s.n_steps; k++)
        ck_assert_msg(t.steps[k].kind == s.steps[k].kind && t.steps[k].node == s.steps[k].node,
                      "step %u differs after a round trip", k);
    ck_assert_str_eq(t.graph_sha256, g.sha256);
    schedule_free(&t);
    schedule_free(&s);
    fmt_graph_free(&g);
}
END_TEST

/* Each bad schedule must fail with its message naming the right step. */
START_TEST(test_bad_schedules)
{
    struct fmt_graph g;
    load_graph(chain_graph(), &g);
    static const struct {
        const char *text, *want1, *want2;
        int at_load;
    } cases[] = {
        { "{not json", "not JSON", "line 1", 1 },
        { "[1, 2]", "JSON object", "", 1 },
        { "{\"format\": \"other\", \"version\": 1, \"steps\": []}", "format", "", 1 },
        { "{\"format\": \"dtrexec-schedule\", \"version\": 2, \"steps\": []}", "version", "", 1 },
        { HEAD "\"budget_bytes\": \"many\", \"steps\": []}", "budget_bytes", "", 1 },
        { HEAD "\"steps\": {}}", "must be a list", "", 1 },
        { HEAD "\"nothing\": []}", "either", "", 1 },
        { HEAD "\"steps\": [{\"run\": \"f0\"}, 7]}", "step 1", "expected", 1 },
        { HEAD "\"steps\": [{\"run\": \"f0\"}, {\"run\": \"conv9\"}]}", "step 1", "conv9", 1 },
        { HEAD "\"steps\": [{\"run\": \"f0\"}, {\"run\": 12}]}", "step 1", "number", 1 },
        { HEAD "\"steps\": [{\"run\": \"f0\", \"recompute\": 1}]}", "step 0", "recompute", 1 },
        { HEAD "\"steps\": [{\"run\": \"f0\"}, {\"free\": [\"f0\", \"zz\"]}]}", "step 1", "zz", 1 },
        { HEAD "\"graph\": {\"file\": \"x\", \"sha256\": \"00\"}, \"steps\": []}", "sha256", "another graph", 1 },
        { HEAD "\"stages\": [{\"R\": [\"f0\"]}, {\"R\": [\"f1\"], \"S\": [\"f9\"]}]}", "stage 1", "f9", 1 },
        { HEAD "\"stages\": [{\"R\": [\"f0\"]}, {\"R\": [\"f2\"], \"S\": [\"f1\"]}]}", "stage 1", "'f1'", 1 },
        /* well-formed, but wrong when replayed */
        { HEAD "\"steps\": [{\"run\": \"f0\"}, {\"run\": \"f2\"}]}", "step 1", "input 'f1' is not resident", 0 },
        { HEAD "\"steps\": [{\"run\": \"f0\"}, {\"free\": [\"f0\"]}, {\"free\": [\"f0\"]}]}", "step 2", "double free", 0 },
        { HEAD "\"steps\": [{\"run\": \"f0\"}, {\"free\": [\"f1\"]}]}", "step 1", "never computed", 0 },
        { HEAD "\"steps\": [{\"run\": \"f0\"}, {\"run\": \"f0\"}]}", "step 1", "still resident", 0 },
        { HEAD "\"steps\": [{\"run\": \"f0\"}, {\"run\": \"f1\"}]}", "step 2", "output 'b0'", 0 },
        { HEAD "\"steps\": [{\"run\": \"f0\"}, {\"run\": \"f1\"}, {\"free\": [\"f0\"]}, {\"run\": \"f0\", \"recompute\": true},"
               " {\"free\": [\"f1\"]}, {\"run\": \"f2\"}]}", "step 5", "input 'f1' is not resident (freed earlier)", 0 },
        { HEAD "\"stages\": [{\"R\": [\"f0\", \"f1\"]}, {\"R\": [\"f2\"], \"S\": [\"f0\"]}]}", "stage 1", "'f1'", 0 },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        struct schedule s;
        struct schedule_result r;
        char err[600] = "";
        int rc = parse(&g, cases[c].text, &s, err, sizeof err);
        if (cases[c].at_load) {
            ck_assert_msg(rc != 0, "case %zu loaded but should not", c);
        } else {
            ck_assert_msg(rc == 0, "case %zu: %s", c, err);
            rc = schedule_simulate(&g, &s, 0, &r, err, sizeof err);
            schedule_free(&s);
            ck_assert_msg(rc != 0, "case %zu replayed without an error", c);
        }
        ck_assert_msg(strstr(err, cases[c].want1) && strstr(err, cases[c].want2),
                      "case %zu: expected '%s' and '%s' in: %s", c, cases[c].want1, cases[c].want2, err);
    }
    fmt_graph_free(&g);
}
END_TEST

START_TEST(test_stages_lowering)
{
    struct fmt_graph g;
    load_graph(chain_graph(), &g);
    char err[600];
    struct schedule s;
    struct schedule_result r;
    /* checkpoint-all as stages, names and a 0/1 row mixed */
    const char *text = HEAD "\"stages\": ["
        "{\"R\": [\"f0\"]}, {\"R\": [\"f1\"], \"S\": [\"f0\"]}, {\"R\": [\"f2\"], \"S\": [\"f0\", \"f1\"]},"
        "{\"R\": [1, 0, 1, 1, 0, 0, 0, 0], \"S\": [\"f0\", \"f1\"]},"
        "{\"R\": [\"b3\"], \"S\": [\"f0\", \"f1\", \"f2\", \"f3\"]},"
        "{\"R\": [\"b2\"], \"S\": [\"f0\", \"f1\", \"f2\", \"b3\"]},"
        "{\"R\": [\"b1\"], \"S\": [\"f0\", \"f1\", \"b2\"]},"
        "{\"R\": [\"b0\"], \"S\": [\"f0\", \"b1\"]}]}";
    ck_assert_msg(parse(&g, text, &s, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(schedule_simulate(&g, &s, 0, &r, err, sizeof err) == 0, "%s", err);
    /* stage 3 computes f0 again although S keeps it: no run for it; f2 is
     * not kept into stage 3 but f3 reads it: recomputed in stage 3 */
    ck_assert_uint_eq(r.runs, 9);
    ck_assert_uint_eq(r.recomputes, 1);
    ck_assert_msg(s.steps[0].stage == 0 && s.steps[s.n_steps - 1].stage == 7, "stage marks");
    /* every step after its stage's runs frees what the next stage drops */
    ck_assert_uint_eq(r.frees, 8);
    schedule_free(&s);
    fmt_graph_free(&g);
}
END_TEST

/* A planner's schedule: valid, within its budget, and what it says. */
static void check_plan(const struct fmt_graph *g, enum plan_solver k, uint64_t budget, struct schedule_result *r)
{
    struct schedule s;
    char err[600];
    struct plan_options o;
    plan_options_default(&o);
    o.time_limit_s = 60;
    enum plan_status st = plan_make(g, k, budget, &o, &s, err, sizeof err);
    ck_assert_msg(st == PLAN_OK, "%s, %s at %llu: %s", g->name, plan_solver_name(k), (unsigned long long)budget, err);
    ck_assert_msg(schedule_simulate(g, &s, budget, r, err, sizeof err) == 0, "%s, %s: %s", g->name,
                  plan_solver_name(k), err);
    /* first computations in the graph's order (an exported graph's is the
     * runtime's call order, which --plan follows): only recomputations are
     * inserted */
    uint8_t *ran = calloc(g->n, 1);
    uint32_t next = 0;
    ck_assert(ran != NULL);
    for (uint32_t i = 0; i < s.n_steps; i++)
        if (s.steps[i].kind == SCHEDULE_RUN && !ran[s.steps[i].node]) {
            ck_assert_msg(s.steps[i].node == next, "%s, %s: step %u computes '%s' first, before '%s'", g->name,
                          plan_solver_name(k), i, g->names[s.steps[i].node], g->names[next]);
            ran[next++] = 1;
        }
    ck_assert_uint_eq(next, g->n);
    free(ran);
    /* and through a file, as a user replays it */
    ck_assert_msg(schedule_save(tmp_path("p.json"), g, &s, err, sizeof err) == 0, "%s", err);
    struct schedule t;
    struct schedule_result r2;
    ck_assert_msg(schedule_load(tmp_path("p.json"), g, &t, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(schedule_simulate(g, &t, budget, &r2, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(r2.total_compute == r->total_compute && r2.peak_bytes == r->peak_bytes, "%s, %s: file differs",
                  g->name, plan_solver_name(k));
    ck_assert_str_eq(t.solver.name, plan_solver_name(k));
    schedule_free(&t);
    schedule_free(&s);
}

/* Forward f0..f3 with a side branch f2 that only the backward pass reads,
 * and a backward node g0 that reads only a gradient but comes after g1,
 * which reads f0: a planner that computes nodes as their readers need them
 * would compute f2 after g3 and g0 before g1, an order the runtime never
 * issues. */
static const char *side_graph(void)
{
    return write_tmp("side.json",
        "{\"directed\": true, \"multigraph\": false, \"graph\": {\"name\": \"side\"},\n"
        " \"nodes\": [\n"
        "  {\"id\": 0, \"name\": \"f0\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 10},\n"
        "  {\"id\": 1, \"name\": \"f1\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 10},\n"
        "  {\"id\": 2, \"name\": \"f2\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 10},\n"
        "  {\"id\": 3, \"name\": \"f3\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 10},\n"
        "  {\"id\": 4, \"name\": \"g3\", \"backward\": true, \"cost_cpu\": 1, \"cost_ram\": 10},\n"
        "  {\"id\": 5, \"name\": \"g2\", \"backward\": true, \"cost_cpu\": 1, \"cost_ram\": 10},\n"
        "  {\"id\": 6, \"name\": \"g1\", \"backward\": true, \"cost_cpu\": 1, \"cost_ram\": 10},\n"
        "  {\"id\": 7, \"name\": \"g0\", \"backward\": true, \"cost_cpu\": 1, \"cost_ram\": 10}],\n"
        " \"links\": [{\"source\": 0, \"target\": 1}, {\"source\": 0, \"target\": 2}, {\"source\": 1, \"target\": 3},\n"
        "  {\"source\": 3, \"target\": 4}, {\"source\": 4, \"target\": 5}, {\"source\": 2, \"target\": 5},\n"
        "  {\"source\": 5, \"target\": 6}, {\"source\": 0, \"target\": 6}, {\"source\": 4, \"target\": 7}]}\n");
}

/* Every classic planner at every budget it can meet keeps the graph's
 * order of first computations (check_plan checks it). */
START_TEST(test_first_computations_in_order)
{
    struct fmt_graph g;
    load_graph(side_graph(), &g);
    struct schedule_result all, r;
    check_plan(&g, PLAN_CHECKPOINT_ALL, 0, &all);
    int planned = 0;
    for (uint64_t budget = all.peak_bytes; budget >= plan_graph_min_peak(&g); budget -= 10)
        for (int k = PLAN_CHEN_SQRTN; k <= PLAN_GRIEWANK; k++) {
            struct schedule s;
            char err[600];
            if (plan_make(&g, (enum plan_solver)k, budget, NULL, &s, err, sizeof err) != PLAN_OK)
                continue;
            schedule_free(&s);
            check_plan(&g, (enum plan_solver)k, budget, &r);
            planned += k == PLAN_GRIEWANK;
        }
    ck_assert_msg(planned > 0, "griewank made no schedule of the side graph");
    fmt_graph_free(&g);
}
END_TEST

static const char *const shared_graphs[] = {
    "vgg16-256-train.json", "mobilenet-512-train.json", "resnet50-256-train.json",
    "random-layered-n100.json", "random-layered-n250.json",
};

START_TEST(test_baselines_on_shared_graphs)
{
    const char *name = shared_graphs[_i];
    char path[512], err[600];
    snprintf(path, sizeof path, GRAPHS "%s", name);
    struct fmt_graph g;
    load_graph(path, &g);
    struct schedule_result all, r;
    check_plan(&g, PLAN_CHECKPOINT_ALL, 0, &all);
    ck_assert_msg(all.recomputes == 0 && all.runs == g.n && all.total_compute == all.baseline_compute,
                  "%s: checkpoint-all recomputes %u", name, all.recomputes);
    /* its peak is the simulator's unbudgeted peak: ratios agree with DTR's */
    struct sim_program p;
    struct sim_baseline b;
    ck_assert_msg(sim_program_load_graph(path, &p, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(sim_baseline_run(&p, &b, err, sizeof err) == 0, "%s", err);
    ck_assert_msg(b.peak_bytes == all.peak_bytes, "%s: checkpoint-all peak %llu, simulator %llu", name,
                  (unsigned long long)all.peak_bytes, (unsigned long long)b.peak_bytes);
    ck_assert_msg(b.compute == all.total_compute, "%s: compute differs from the simulator's", name);
    sim_program_free(&p);
    /* the baselines, unbudgeted and at budgets where they fit */
    for (int k = PLAN_CHEN_SQRTN; k <= PLAN_GRIEWANK; k++) {
        check_plan(&g, (enum plan_solver)k, 0, &r);
        ck_assert_msg(r.peak_bytes <= all.peak_bytes || k == PLAN_CHEN_SQRTN, "%s %s: peak above checkpoint-all",
                      name, plan_solver_name((enum plan_solver)k));
    }
    struct schedule_result sq;
    check_plan(&g, PLAN_CHEN_SQRTN, 0, &sq);
    check_plan(&g, PLAN_CHEN_GREEDY, sq.peak_bytes, &r);
    ck_assert_msg(r.total_compute <= sq.total_compute, "%s: greedy at sqrt(n)'s peak costs more than sqrt(n)", name);
    /* a budget below any schedule is infeasible, never a crash */
    struct schedule s;
    for (int k = 0; k <= PLAN_GRIEWANK; k++)
        ck_assert_int_eq(plan_make(&g, (enum plan_solver)k, plan_graph_min_peak(&g) - 1, NULL, &s, err, sizeof err),
                         PLAN_INFEASIBLE);
    fmt_graph_free(&g);
}
END_TEST

static int have_highs(void)
{
    return system("python3 -c 'import highspy' 2>/dev/null") == 0;
}

/* The MILP's optimum is never worse than a baseline that fits the same
 * budget (graphs small enough to solve in seconds). */
static void milp_vs_baselines(const char *path, const double *ratios, int n_ratios)
{
    if (!have_highs()) {
        fprintf(stderr, "test_plan: highspy missing, MILP checks skipped (pip install highspy)\n");
        return;
    }
    struct fmt_graph g;
    load_graph(path, &g);
    struct schedule_result all, r, m;
    check_plan(&g, PLAN_CHECKPOINT_ALL, 0, &all);
    for (int b = 0; b < n_ratios; b++) {
        uint64_t budget = (uint64_t)((double)all.peak_bytes * ratios[b]);
        check_plan(&g, PLAN_CHECKMATE_MILP, budget, &m);
        ck_assert_msg(m.peak_bytes <= budget, "MILP above its budget");
        for (int k = PLAN_CHECKPOINT_ALL; k <= PLAN_CHECKMATE_LP; k++) {
            if (k == PLAN_CHECKMATE_MILP)
                continue;
            struct schedule s;
            char err[600];
            struct plan_options o;
            plan_options_default(&o);
            o.time_limit_s = 60;
            if (plan_make(&g, (enum plan_solver)k, budget, &o, &s, err, sizeof err) != PLAN_OK)
                continue;
            ck_assert(schedule_simulate(&g, &s, budget, &r, err, sizeof err) == 0);
            ck_assert_msg(m.total_compute <= r.total_compute + 1e-9, "%s at %.2f: MILP %g worse than %s %g", g.name,
                          ratios[b], m.total_compute, plan_solver_name((enum plan_solver)k), r.total_compute);
            schedule_free(&s);
        }
    }
    fmt_graph_free(&g);
}

START_TEST(test_milp_chain)
{
    static const double ratios[] = { 0.8, 0.9, 1.0 };
    milp_vs_baselines(chain_graph(), ratios, 3);
    if (!have_highs())
        return;
    /* on the chain: 40 bytes need one recomputation, the optimum */
    struct fmt_graph g;
    struct schedule_result r;
    load_graph(chain_graph(), &g);
    check_plan(&g, PLAN_CHECKMATE_MILP, 40, &r);
    ck_assert_msg(r.total_compute == 9, "MILP at 40 bytes: compute %g, expected 9", r.total_compute);
    fmt_graph_free(&g);
}
END_TEST

/* The chain with dtrexec export's fields: f2 needs 100 bytes of kernel
 * workspace while it runs, f3 keeps 500 bytes to the end (a final
 * gradient). Checkpoint-all peaks at b3: 5 values + 500 kept = 550 (f2's
 * run: 30 + 100); no schedule goes below f3's kept bytes and the output
 * (510), and the MILP's schedule, validated by the replay, respects both. */
START_TEST(test_workspace_and_kept)
{
    struct fmt_graph g;
    char err[600];
    load_graph(chain_graph_with("ws.json", ", \"workspace_ram\": 100", ", \"kept_ram\": 500"), &g);
    ck_assert_uint_eq(g.workspace[2], 100);
    ck_assert_uint_eq(g.kept[3], 500);
    ck_assert_uint_eq(g.workspace[0] + g.kept[0], 0);
    struct schedule_result all, r;
    check_plan(&g, PLAN_CHECKPOINT_ALL, 0, &all);
    ck_assert_uint_eq(all.peak_bytes, 550);
    ck_assert_uint_eq(plan_graph_min_peak(&g), 510);
    struct schedule s;
    ck_assert_int_eq(plan_make(&g, PLAN_CHECKPOINT_ALL, 549, NULL, &s, err, sizeof err), PLAN_INFEASIBLE);
    ck_assert_int_eq(plan_make(&g, PLAN_CHEN_SQRTN, 509, NULL, &s, err, sizeof err), PLAN_INFEASIBLE);
    /* a workspace over the budget is an error naming the node */
    ck_assert(parse(&g, HEAD "\"steps\": [{\"run\": \"f0\"}, {\"run\": \"f1\"}, {\"run\": \"f2\"}]}", &s, err,
                    sizeof err) == 0);
    ck_assert(schedule_simulate(&g, &s, 125, &r, err, sizeof err) != 0);
    ck_assert_msg(strstr(err, "step 2") && strstr(err, "'f2'") && strstr(err, "workspace"), "%s", err);
    schedule_free(&s);
    if (have_highs()) {
        /* 545: f0 goes before b3 and is recomputed */
        check_plan(&g, PLAN_CHECKMATE_MILP, 545, &r);
        ck_assert_msg(r.peak_bytes <= 545 && r.recomputes >= 1, "MILP: peak %llu, %u recomputations",
                      (unsigned long long)r.peak_bytes, r.recomputes);
    }
    fmt_graph_free(&g);
}
END_TEST

/* Sizes that share no large divisor: the values are 10 bytes, f2's
 * workspace 105 and f3's kept bytes 505. The MILP counts memory in
 * units of the gcd of all three (5 bytes), not of the values alone
 * (10), where rounding the kept bytes up to 510 made 545 bytes look
 * infeasible: at b3 the kept 505 bytes and four values fill it exactly. */
START_TEST(test_milp_exact_units)
{
    if (!have_highs())
        return;
    struct fmt_graph g;
    struct schedule_result r;
    load_graph(chain_graph_with("units.json", ", \"workspace_ram\": 105", ", \"kept_ram\": 505"), &g);
    check_plan(&g, PLAN_CHECKMATE_MILP, 545, &r);
    ck_assert_msg(r.peak_bytes <= 545 && r.recomputes >= 1, "MILP: peak %llu, %u recomputations",
                  (unsigned long long)r.peak_bytes, r.recomputes);
    fmt_graph_free(&g);
}
END_TEST

START_TEST(test_milp_vgg16)
{
    static const double ratios[] = { 0.86, 0.93 };
    milp_vs_baselines(GRAPHS "vgg16-256-train.json", ratios, 2);
}
END_TEST

/* checkmate-lp reports the full-budget LP relaxation's optimum as its
 * bound: at least one pass of every node, at most the MILP's optimum and
 * its own rounded schedule. */
static void lp_bound_check(const char *path, double ratio)
{
    struct fmt_graph g;
    struct schedule_result all, m, r;
    struct schedule s;
    struct plan_options o;
    char err[600];
    load_graph(path, &g);
    check_plan(&g, PLAN_CHECKPOINT_ALL, 0, &all);
    uint64_t budget = (uint64_t)((double)all.peak_bytes * ratio);
    check_plan(&g, PLAN_CHECKMATE_MILP, budget, &m);
    plan_options_default(&o);
    o.time_limit_s = 60;
    ck_assert_int_eq(plan_make(&g, PLAN_CHECKMATE_LP, budget, &o, &s, err, sizeof err), PLAN_OK);
    ck_assert(schedule_simulate(&g, &s, budget, &r, err, sizeof err) == 0);
    double b = s.solver.bound, tol = 1e-6 * all.total_compute;
    ck_assert_msg(isfinite(b), "%s at %.2f: checkmate-lp reports no bound", g.name, ratio);
    ck_assert_msg(b >= all.total_compute - tol && b <= m.total_compute + tol && b <= r.total_compute + tol,
                  "%s at %.2f: LP bound %g outside [%g, min(MILP %g, rounded %g)]", g.name, ratio, b,
                  all.total_compute, m.total_compute, r.total_compute);
    schedule_free(&s);
    fmt_graph_free(&g);
}

START_TEST(test_lp_bound)
{
    if (!have_highs())
        return;
    lp_bound_check(chain_graph(), 0.8);
    lp_bound_check(GRAPHS "vgg16-256-train.json", 0.86);
}
END_TEST

/* Checkmate's published rows (DTRX_MILP_FORM=paper) and the default
 * formulation (one hazard row per free, classic MIP starts) prove the same
 * optimum. */
START_TEST(test_milp_forms_agree)
{
    if (!have_highs())
        return;
    struct fmt_graph g;
    struct schedule_result all, paper, dflt;
    load_graph(GRAPHS "vgg16-256-train.json", &g);
    check_plan(&g, PLAN_CHECKPOINT_ALL, 0, &all);
    uint64_t budget = (uint64_t)((double)all.peak_bytes * 0.84);
    setenv("DTRX_MILP_FORM", "paper", 1);
    check_plan(&g, PLAN_CHECKMATE_MILP, budget, &paper);
    unsetenv("DTRX_MILP_FORM");
    check_plan(&g, PLAN_CHECKMATE_MILP, budget, &dflt);
    ck_assert_msg(paper.total_compute == dflt.total_compute, "paper form %g, default form %g", paper.total_compute,
                  dflt.total_compute);
    ck_assert_msg(paper.total_compute > all.total_compute, "0.84 needs a recomputation");
    fmt_graph_free(&g);
}
END_TEST

/* --start: a schedule made elsewhere as the MIP start. The optimum given
 * back is used (it ties the rounding's, and the user's start wins a tie)
 * and stays optimal; starts that are wrong for the graph, above the budget
 * or given to a heuristic are refused with exit 1. */
START_TEST(test_milp_start)
{
    char out[8192], args[4096], opt[512], chain[512];
    const char *vgg = GRAPHS "vgg16-256-train.json";
    snprintf(chain, sizeof chain, "%s", chain_graph());
    snprintf(opt, sizeof opt, "%s", tmp_path("start-opt.json"));
    snprintf(args, sizeof args, "plan %s --solver chen-greedy --budget 0.9 --start %s -o %s", chain, opt,
             tmp_path("x.json"));
    ck_assert_int_eq(testutil_run_cli(args, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "--start is a MIP start"), "%s", out);
    if (!have_highs())
        return;
    snprintf(args, sizeof args, "plan %s --solver checkmate --budget 0.86 -o %s --json", vgg, opt);
    ck_assert_msg(testutil_run_cli(args, out, sizeof out) == 0, "%s", out);
    const char *c = strstr(out, "\"total_compute\": ");
    ck_assert_msg(c && strstr(out, "\"status\": \"optimal\""), "%s", out);
    double optimum = strtod(c + strlen("\"total_compute\": "), NULL);
    snprintf(args, sizeof args, "plan %s --solver checkmate --budget 0.86 --start %s -o %s --json", vgg, opt,
             tmp_path("again.json"));
    ck_assert_msg(testutil_run_cli(args, out, sizeof out) == 0, "%s", out);
    c = strstr(out, "\"total_compute\": ");
    ck_assert_msg(c && strtod(c + strlen("\"total_compute\": "), NULL) == optimum, "%s", out);
    ck_assert_msg(strstr(out, "start given") && strstr(out, "\"status\": \"optimal\""), "%s", out);
    /* above a smaller budget: refused, the step named */
    snprintf(args, sizeof args, "plan %s --solver checkmate --budget 0.80 --start %s -o %s", vgg, opt,
             tmp_path("x.json"));
    ck_assert_int_eq(testutil_run_cli(args, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "above the budget") && strstr(out, "step "), "%s", out);
    /* a schedule of another graph */
    snprintf(args, sizeof args, "plan %s --solver checkmate --budget 0.9 --start %s -o %s", chain, opt,
             tmp_path("x.json"));
    ck_assert_int_eq(testutil_run_cli(args, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "--start"), "%s", out);
}
END_TEST

START_TEST(test_cli)
{
    char out[8192], args[4096], chain[512], sched[512];
    /* copies: tmp_path's buffers rotate */
    snprintf(chain, sizeof chain, "%s", chain_graph());
    snprintf(sched, sizeof sched, "%s", tmp_path("cli.json"));
    snprintf(args, sizeof args, "plan %s --solver chen-greedy --budget 0.9x -o %s", chain, sched);
    ck_assert_msg(testutil_run_cli(args, out, sizeof out) == 0, "%s", out);
    snprintf(args, sizeof args, "sim %s --plan %s --json", chain, sched);
    ck_assert_msg(testutil_run_cli(args, out, sizeof out) == 0, "%s", out);
    ck_assert_msg(strstr(out, "\"overhead\"") && strstr(out, "\"peak_bytes\": 40"), "%s", out);
    /* infeasible budgets: exit 2 with a message */
    snprintf(args, sizeof args, "plan %s --solver checkpoint-all --budget 45 -o %s", chain, tmp_path("x.json"));
    ck_assert_int_eq(testutil_run_cli(args, out, sizeof out), 2);
    ck_assert_msg(strstr(out, "budget"), "%s", out);
    snprintf(args, sizeof args, "plan %s --solver checkmate --budget 39 -o %s", chain, tmp_path("x.json"));
    ck_assert_int_eq(testutil_run_cli(args, out, sizeof out), 2);
    ck_assert_msg(strstr(out, "below what any schedule"), "%s", out);
    /* bad schedule files: exit 1, the step named */
    const char *bad = write_tmp("bad.json", HEAD "\"steps\": [{\"run\": \"f0\"}, {\"run\": \"f2\"}]}");
    snprintf(args, sizeof args, "sim %s --plan %s", chain, bad);
    ck_assert_int_eq(testutil_run_cli(args, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "step 1"), "%s", out);
    bad = write_tmp("bad2.json", "{\"format\": \"dtrexec-schedule\", \"version\": 1, \"steps\": [");
    snprintf(args, sizeof args, "sim %s --plan %s", chain, bad);
    ck_assert_int_eq(testutil_run_cli(args, out, sizeof out), 1);
    snprintf(args, sizeof args, "sim %s --plan %s --budget 30", chain, sched);
    ck_assert_int_eq(testutil_run_cli(args, out, sizeof out), 1);
    ck_assert_msg(strstr(out, "above the budget"), "%s", out);
    snprintf(args, sizeof args, "plan %s --solver nonsense -o %s", chain, tmp_path("x.json"));
    ck_assert_int_eq(testutil_run_cli(args, out, sizeof out), 1);
    /* the comparison: CSV rows for heuristics and solvers */
    snprintf(args, sizeof args, "bench %s --budgets 0.9,1.0 --heuristics dtr-eq,lru --solvers checkpoint-all,griewank "
             "--csv %s --plot %s --quiet", chain, tmp_path("c.csv"), tmp_path("c.svg"));
    ck_assert_msg(testutil_run_cli(args, out, sizeof out) == 0, "%s", out);
    FILE *f = fopen(tmp_path("c.csv"), "r");
    ck_assert(f != NULL);
    int lines = 0;
    char line[512];
    while (fgets(line, sizeof line, f))
        lines++;
    fclose(f);
    ck_assert_msg(lines == 1 + 2 * 4, "CSV has %d lines", lines);
}
END_TEST

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_plan-XXXXXX");
    if (!mkdtemp(tmpdir))
        return 1;
    Suite *su = suite_create("plan");
    TCase *tc = tcase_create("schedules");
    tcase_add_test(tc, test_graph_order_and_names);
    tcase_add_test(tc, test_steps_replay_accounting);
    tcase_add_test(tc, test_bad_schedules);
    tcase_add_test(tc, test_stages_lowering);
    suite_add_tcase(su, tc);
    tc = tcase_create("planners");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_first_computations_in_order);
    tcase_add_loop_test(tc, test_baselines_on_shared_graphs, 0, sizeof shared_graphs / sizeof shared_graphs[0]);
    tcase_add_test(tc, test_milp_chain);
    tcase_add_test(tc, test_workspace_and_kept);
    tcase_add_test(tc, test_milp_exact_units);
    tcase_add_test(tc, test_milp_vgg16);
    tcase_add_test(tc, test_lp_bound);
    tcase_add_test(tc, test_milp_forms_agree);
    tcase_add_test(tc, test_cli);
    tcase_add_test(tc, test_milp_start);
    suite_add_tcase(su, tc);
    int failed = testutil_run(su);
    testutil_remove_dir(tmpdir);
    return failed;
}
