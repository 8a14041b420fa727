/* dtr/sim/sim_schedule.c — DTR's simulated run on a graph as a static
 * schedule: every run (first or again) and every free in the order the core
 * made them (sim_run_recorded), in the steps form of DESIGN.md; that
 * schedule mapped to Checkmate's frontier-advancing stages; and the
 * cheapest such mapped schedule within a budget, a MIP start for
 * Checkmate's MILP (milp.c). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtr/sim/sim.h"

struct recording {
    const uint32_t *step_node;     /* program step -> graph node (UINT32_MAX: not a call) */
    struct schedule *out;
    int failed;
};

static void on_run(void *ctx, uint32_t step, int remat)
{
    struct recording *rc = ctx;
    if (schedule_push(rc->out, SCHEDULE_RUN, rc->step_node[step], remat))
        rc->failed = 1;
}

static void on_free(void *ctx, uint32_t step)
{
    struct recording *rc = ctx;
    if (schedule_push(rc->out, SCHEDULE_FREE, rc->step_node[step], 0))
        rc->failed = 1;
}

/* step_node[i]: the graph node of program step i (UINT32_MAX: not a
 * call). The program's k-th call is the graph's node k: both take the same
 * topological order (bench.h); checked by cost and size. */
static uint32_t *map_steps(const struct fmt_graph *g, const struct sim_program *p, char *err, size_t err_size)
{
    uint32_t *step_node = malloc(((size_t)p->n_steps + 1) * sizeof *step_node);
    if (!step_node) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < p->n_steps; i++) {
        const struct sim_step *s = &p->steps[i];
        step_node[i] = UINT32_MAX;
        if (s->kind != SIM_STEP_CALL)
            continue;
        if (k >= g->n || s->n_out != 1 || s->cost != g->cost[k] || p->out_bytes[s->out_at] != g->bytes[k]) {
            snprintf(err, err_size, "%s: the simulator's call %u (step %u) is not node %u ('%s') of the graph", g->name,
                     k, i, k, k < g->n ? g->names[k] : "none");
            free(step_node);
            return NULL;
        }
        step_node[i] = k++;
    }
    if (k != g->n) {
        snprintf(err, err_size, "%s: the simulator runs %u calls, the graph has %u nodes", g->name, k, g->n);
        free(step_node);
        return NULL;
    }
    return step_node;
}

int sim_schedule_planners_memory(const struct fmt_graph *g, const struct sim_program *p, uint64_t **workspace,
                                 uint64_t **kept, char *err, size_t err_size)
{
    uint32_t *step_node = map_steps(g, p, err, err_size);
    *workspace = calloc((size_t)p->n_steps + 1, sizeof **workspace);
    *kept = calloc((size_t)p->n_steps + 1, sizeof **kept);
    if (!step_node || !*workspace || !*kept) {
        if (step_node)
            snprintf(err, err_size, "out of memory");
        free(step_node);
        free(*workspace);
        free(*kept);
        *workspace = *kept = NULL;
        return -1;
    }
    for (uint32_t i = 0; i < p->n_steps; i++)
        if (step_node[i] != UINT32_MAX) {
            (*workspace)[i] = g->workspace[step_node[i]];
            (*kept)[i] = g->kept[step_node[i]];
        }
    free(step_node);
    return 0;
}

int sim_schedule_record(const struct fmt_graph *g, const struct sim_program *p, const struct sim_baseline *b,
                        const struct sim_options *o, struct sim_result *r, struct schedule *out, char *err,
                        size_t err_size)
{
    uint32_t *step_node = map_steps(g, p, err, err_size);
    if (!step_node)
        return -1;
    schedule_free(out);
    struct recording rec = { .step_node = step_node, .out = out };
    struct sim_recorder hooks = { .ctx = &rec, .run = on_run, .free = on_free };
    int rc = sim_run_recorded(p, b, o, &hooks, r);
    free(step_node);
    if (rc || rec.failed) {
        snprintf(err, err_size, "%s: %s", g->name, rec.failed ? "out of memory" : r->message);
        return -1;
    }
    out->budget_bytes = r->budget_bytes;
    snprintf(out->graph_file, sizeof out->graph_file, "%s", g->name);
    snprintf(out->graph_sha256, sizeof out->graph_sha256, "%s", g->sha256);
    snprintf(out->solver.name, sizeof out->solver.name, "dtr-sim %s", dtr_heuristic_name(o->heuristic));
    snprintf(out->solver.status, sizeof out->solver.status, "%s",
             r->outcome == SIM_PASS ? "heuristic" : sim_outcome_name(r->outcome));
    out->solver.seconds = r->wall_s;
    out->solver.objective = r->total_compute;
    return 0;
}

int sim_schedule_to_stages(const struct fmt_graph *g, const struct schedule *s, struct schedule *out, char *err,
                           size_t err_size)
{
    uint32_t T = g->n, n = s->n_steps;
    /* copy[k]: which copy of its node run step k made (the count of its
     * runs so far); last_read[c]: the last step reading copy c */
    uint32_t *copy = malloc(((size_t)n + 1) * sizeof *copy), *cur = malloc(((size_t)T + 1) * sizeof *cur);
    uint32_t *last_read = malloc(((size_t)n + 1) * sizeof *last_read);
    uint8_t *S = calloc((size_t)T * T + 1, 1), *res = calloc((size_t)T + 1, 1);
    int rc = -1;
    schedule_init(out);
    if (!copy || !cur || !last_read || !S || !res) {
        snprintf(err, err_size, "out of memory");
        goto out;
    }
    for (uint32_t v = 0; v < T; v++)
        cur[v] = UINT32_MAX;
    uint32_t next = 0;
    for (uint32_t k = 0; k < n; k++) {
        const struct schedule_step *st = &s->steps[k];
        copy[k] = last_read[k] = UINT32_MAX;
        if (st->kind != SCHEDULE_RUN)
            continue;
        uint32_t v = st->node;
        if (cur[v] == UINT32_MAX && v != next) {
            snprintf(err, err_size, "step %u: the first run of '%s' comes before node %u's: not in node order", k,
                     g->names[v], next);
            goto out;
        }
        next += v == next;
        for (uint32_t q = g->pred_at[v]; q < g->pred_at[v + 1]; q++)
            if (cur[g->preds[q]] != UINT32_MAX)
                last_read[cur[g->preds[q]]] = k;
        cur[v] = copy[k] = k;
    }
    if (next != T) {
        snprintf(err, err_size, "node %u ('%s') never runs", next, next < T ? g->names[next] : "");
        goto out;
    }
    for (uint32_t v = 0; v < T; v++)
        if (g->sink[v] && cur[v] != UINT32_MAX)
            last_read[cur[v]] = n;   /* outputs stay to the end */
    /* S[t]: at the first run of stage t, what is resident and read again */
    for (uint32_t v = 0; v < T; v++)
        cur[v] = UINT32_MAX;
    uint32_t t = 0;
    int stage_open = 0;
    for (uint32_t k = 0; k < n; k++) {
        const struct schedule_step *st = &s->steps[k];
        if (st->kind == SCHEDULE_FREE) {
            res[st->node] = 0;
            continue;
        }
        if (!stage_open) {
            for (uint32_t i = 0; i < t; i++)
                S[(size_t)t * T + i] = res[i] && last_read[cur[i]] != UINT32_MAX && last_read[cur[i]] >= k;
            stage_open = 1;
        }
        res[st->node] = 1;
        cur[st->node] = copy[k];
        if (st->node == t) {
            t++;
            stage_open = 0;
        }
    }
    if (plan_schedule_from_s(g, S, out, err, err_size))
        goto out;
    out->budget_bytes = s->budget_bytes;
    out->solver = s->solver;
    snprintf(out->graph_file, sizeof out->graph_file, "%s", s->graph_file);
    snprintf(out->graph_sha256, sizeof out->graph_sha256, "%s", s->graph_sha256);
    rc = 0;
out:
    free(copy);
    free(cur);
    free(last_read);
    free(S);
    free(res);
    if (rc)
        schedule_free(out);
    return rc;
}

enum plan_status sim_schedule_start(const struct fmt_graph *g, uint64_t budget_bytes,
                                    int (*fits)(void *ctx, const struct schedule *sc), void *ctx,
                                    struct schedule *out, double *cost, char *label, size_t label_size)
{
    static const enum dtr_heuristic heuristics[] = { DTR_HEURISTIC_EQ, DTR_HEURISTIC_DTR };
    /* DTR counts memory as the planners do here, but the stages run in
     * another order than DTR's, so lower budgets may be the ones that fit */
    static const double factors[] = { 1.0, 0.99, 0.98, 0.96, 0.94, 0.92, 0.9, 0.87, 0.84, 0.8 };
    struct sim_program p;
    struct sim_baseline b;
    char err[600];
    enum plan_status rc = PLAN_INFEASIBLE;
    *cost = INFINITY;
    if (!budget_bytes || sim_program_from_graph(g, &p, err, sizeof err))
        return PLAN_INFEASIBLE;
    uint64_t *ws = NULL, *kept = NULL;
    if (sim_baseline_run(&p, &b, err, sizeof err) || sim_schedule_planners_memory(g, &p, &ws, &kept, err, sizeof err)) {
        sim_program_free(&p);
        return PLAN_INFEASIBLE;
    }
    for (size_t h = 0; h < sizeof heuristics / sizeof heuristics[0]; h++)
        for (size_t f = 0; f < sizeof factors / sizeof factors[0]; f++) {
            struct sim_options o;
            struct sim_result r;
            struct schedule run, staged;
            struct schedule_result sr;
            sim_options_default(&o);
            o.heuristic = heuristics[h];
            o.remat_limit = -1;
            o.budget_bytes = (uint64_t)floor((double)budget_bytes * factors[f]);
            o.step_workspace = ws;
            o.step_kept = kept;
            schedule_init(&run);
            if (sim_schedule_record(g, &p, &b, &o, &r, &run, err, sizeof err) || r.outcome != SIM_PASS) {
                schedule_free(&run);
                continue;
            }
            int ok = !sim_schedule_to_stages(g, &run, &staged, err, sizeof err);
            schedule_free(&run);
            if (!ok)
                continue;
            if (schedule_simulate(g, &staged, budget_bytes, &sr, err, sizeof err) || sr.total_compute >= *cost ||
                (fits && !fits(ctx, &staged))) {
                schedule_free(&staged);
                continue;
            }
            schedule_free(out);
            *out = staged;
            *cost = sr.total_compute;
            snprintf(label, label_size, "%s@%.2f", dtr_heuristic_name(heuristics[h]), factors[f]);
            rc = PLAN_OK;
        }
    sim_program_free(&p);
    free(ws);
    free(kept);
    return rc;
}
