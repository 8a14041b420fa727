/* dtr/sim/schedule.c — static checkpointing schedules (dtr/format/schedule.h)
 * replayed on their graph for compute and peak memory with Checkmate's
 * accounting (dtr/sim/sim.h), and frees inserted into a list of runs. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dtr/sim/sim.h"
#include "dtr/format/json.h"

/* ---- replay ---- */

static void where(const struct schedule_step *st, uint32_t k, char *buf, size_t n)
{
    if (st->stage >= 0)
        snprintf(buf, n, "step %u (stage %d)", k, st->stage);
    else
        snprintf(buf, n, "step %u", st->src);
}

int schedule_simulate(const struct fmt_graph *g, const struct schedule *s, uint64_t budget_bytes,
                      struct schedule_result *r, char *err, size_t err_size)
{
    memset(r, 0, sizeof *r);
    r->baseline_compute = plan_graph_compute(g);
    uint8_t *res = calloc(g->n ? g->n : 1, 1), *ever = calloc(g->n ? g->n : 1, 1);
    if (!res || !ever) {
        free(res);
        free(ever);
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    int rc = -1;
    uint64_t used = g->param_bytes;
    char at[64];
    r->peak_bytes = used;
    for (uint32_t k = 0; k < s->n_steps; k++) {
        const struct schedule_step *st = &s->steps[k];
        uint32_t v = st->node;
        if (v >= g->n) {
            snprintf(err, err_size, "step %u: node index %u out of range", k, v);
            goto out;
        }
        where(st, k, at, sizeof at);
        if (st->kind == SCHEDULE_FREE) {
            if (!res[v]) {
                snprintf(err, err_size, "%s: frees '%s', which is not resident (%s)", at, g->names[v],
                         ever[v] ? "a double free" : "never computed");
                goto out;
            }
            res[v] = 0;
            used -= g->bytes[v];
            r->frees++;
            continue;
        }
        for (uint32_t q = g->pred_at[v]; q < g->pred_at[v + 1]; q++)
            if (!res[g->preds[q]]) {
                snprintf(err, err_size, "%s: runs '%s' while its input '%s' is not resident (%s)", at, g->names[v],
                         g->names[g->preds[q]], ever[g->preds[q]] ? "freed earlier" : "never computed");
                goto out;
            }
        if (res[v]) {
            snprintf(err, err_size, "%s: runs '%s' while its output is still resident (free it first)", at,
                     g->names[v]);
            goto out;
        }
        used += g->bytes[v] + (ever[v] ? 0 : g->kept[v]);
        /* the node's workspace only while it runs */
        uint64_t running = used + g->workspace[v];
        if (running > r->peak_bytes) {
            r->peak_bytes = running;
            r->peak_step = k;
        }
        if (budget_bytes && running > budget_bytes) {
            snprintf(err, err_size, "%s: running '%s' needs %llu bytes%s, above the budget of %llu bytes", at,
                     g->names[v], (unsigned long long)running, g->workspace[v] ? " with its workspace" : "",
                     (unsigned long long)budget_bytes);
            goto out;
        }
        res[v] = 1;
        r->runs++;
        r->total_compute += g->cost[v];
        if (ever[v]) {
            r->recomputes++;
            r->remat_compute += g->cost[v];
        }
        ever[v] = 1;
    }
    for (uint32_t v = 0; v < g->n; v++)
        if (g->sink[v] && !res[v]) {
            snprintf(err, err_size, "step %u (the end): output '%s' is %s", s->n_steps, g->names[v],
                     ever[v] ? "not resident any more" : "never computed");
            goto out;
        }
    rc = 0;
out:
    r->overhead = r->baseline_compute > 0 ? r->total_compute / r->baseline_compute : 1.0;
    free(res);
    free(ever);
    return rc;
}

int schedule_insert_frees(const struct fmt_graph *g, struct schedule *s, char *err, size_t err_size)
{
    uint32_t n = g->n, nr = 0;
    for (uint32_t k = 0; k < s->n_steps; k++)
        nr += s->steps[k].kind == SCHEDULE_RUN;
    uint32_t *runs = malloc((nr + 1) * sizeof *runs), *inst = malloc((n + 1) * sizeof *inst);
    uint32_t *lastr = malloc((n + 1) * sizeof *lastr), *free_after = malloc((nr + 1) * sizeof *free_after);
    uint32_t *next = malloc((nr + 1) * sizeof *next), *head = malloc((nr + 1) * sizeof *head);
    uint8_t *ever = calloc(n + 1, 1);
    struct schedule out;
    schedule_init(&out);
    int rc = -1;
    if (!runs || !inst || !lastr || !free_after || !next || !head || !ever)
        goto oom;
    nr = 0;
    for (uint32_t k = 0; k < s->n_steps; k++)
        if (s->steps[k].kind == SCHEDULE_RUN)
            runs[nr++] = s->steps[k].node;
    /* free_after[p]: the run position after which the instance made at p is
     * freed; UINT32_MAX: kept to the end (an output) */
    for (uint32_t v = 0; v < n; v++)
        inst[v] = lastr[v] = UINT32_MAX;
    for (uint32_t p = 0; p < nr; p++) {
        uint32_t v = runs[p];
        for (uint32_t q = g->pred_at[v]; q < g->pred_at[v + 1]; q++) {
            uint32_t u = g->preds[q];
            if (inst[u] != UINT32_MAX)
                lastr[u] = p;
        }
        if (inst[v] != UINT32_MAX)
            free_after[inst[v]] = lastr[v] != UINT32_MAX && lastr[v] > inst[v] ? lastr[v] : inst[v];
        inst[v] = p;
        lastr[v] = UINT32_MAX;
        free_after[p] = UINT32_MAX;
    }
    for (uint32_t v = 0; v < n; v++)
        if (inst[v] != UINT32_MAX && !g->sink[v])
            free_after[inst[v]] = lastr[v] != UINT32_MAX && lastr[v] > inst[v] ? lastr[v] : inst[v];
    /* bucket the frees by position; head/next form per-position lists */
    for (uint32_t p = 0; p < nr; p++)
        head[p] = UINT32_MAX;
    for (uint32_t p = nr; p-- > 0;)
        if (free_after[p] != UINT32_MAX) {
            next[p] = head[free_after[p]];
            head[free_after[p]] = p;
        }
    for (uint32_t p = 0, k = 0; p < nr; p++, k++) {
        while (s->steps[k].kind != SCHEDULE_RUN)
            k++;
        if (schedule_push(&out, SCHEDULE_RUN, runs[p], ever[runs[p]]))
            goto oom;
        /* a planner's stage marks survive (milp.c reads them back) */
        out.steps[out.n_steps - 1].stage = s->steps[k].stage;
        ever[runs[p]] = 1;
        for (uint32_t q = head[p]; q != UINT32_MAX; q = next[q])
            if (schedule_push(&out, SCHEDULE_FREE, runs[q], 0))
                goto oom;
    }
    free(s->steps);
    s->steps = out.steps;
    s->n_steps = out.n_steps;
    s->cap_steps = out.cap_steps;
    out.steps = NULL;
    rc = 0;
    goto done;
oom:
    snprintf(err, err_size, "out of memory");
done:
    schedule_free(&out);
    free(runs);
    free(inst);
    free(lastr);
    free(free_after);
    free(next);
    free(head);
    free(ever);
    return rc;
}
