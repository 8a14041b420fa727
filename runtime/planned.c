/* runtime/planned.c — training by a static schedule (--plan) instead of
 * DTR's heuristic. The schedule is a list of run / recompute / free steps
 * over the names `dtrexec export` gives the step's calls. The step runs
 * under a DTR instance as usual; before each call the schedule's steps up
 * to its run are applied in order: a free evicts the named node's outputs,
 * a recomputation recomputes them there and then (not when a later call
 * needs them: by then the schedule may have freed their inputs). A call
 * that is not the schedule's next run is an error naming the schedule
 * step. Values the program drops stay resident until the schedule frees
 * them (dealloc "ignore"), as the schedule counts them. A freed value that
 * is resident again before its next run in the schedule (it could not go
 * at its free: a running call held it; or DTR recomputed it beside a
 * sibling output another call needed) is evicted again before the next
 * call, so that it does not stay resident beyond the schedule's
 * accounting. With the graph's accounting equal to the arena's
 * (runtime/export.c), a schedule within its budget then runs with exactly
 * its recomputations, plus the replays of views read after their source
 * was recomputed (zero cost; --stats view_remats); runtime/budget.c moves
 * blocks rather than evict a window when the arena is fragmented. */
#include <stdlib.h>
#include <string.h>

#include "runtime/budget.h"
#include "runtime/planned.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/stepnames.h"

struct rt_plan {
    int n;
    int *kind;                     /* enum dtrx_plan_kind */
    char **node;
    int cursor;
    long long plan_evictions;
    int *pending;                  /* values freed by the schedule, not run again since */
    enum dtr_dealloc dealloc;      /* the session's policy, restored when the schedule goes */
    int n_pending, cap_pending;
};

static enum dtrx_status plan_before_call(struct dtrx_session *s, const struct rt_call *c);
/* The schedule's call hook: before each call, the schedule's frees and
 * recomputations up to that call's step, and the check that it is the
 * step the schedule runs next. */
static const struct rt_call_hook plan_hook = { .before = plan_before_call };

void rt_plan_free(struct dtrx_session *s)
{
    struct rt_plan *p = s->plan;
    if (!p)
        return;
    for (int i = 0; i < p->n; i++)
        free(p->node[i]);
    free(p->node);
    free(p->kind);
    free(p->pending);
    s->budget.config.dealloc = p->dealloc;
    free(p);
    s->plan = NULL;
    s->hooks[RT_HOOK_PLAN] = NULL;
}

enum dtrx_status dtrx_session_set_plan(struct dtrx_session *s, const struct dtrx_plan_step *steps, int n)
{
    if (!s->arena.budget_bytes)
        return rt_fail(DTRX_ERR_INPUT, "a schedule needs a memory budget (its budget_bytes, or --budget)");
    rt_plan_free(s);
    struct rt_plan *p = calloc(1, sizeof *p);
    if (!p || !(p->kind = calloc((size_t)n + 1, sizeof *p->kind)) ||
        !(p->node = calloc((size_t)n + 1, sizeof *p->node))) {
        if (p)
            free(p->kind);
        free(p);
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    }
    s->plan = p;
    s->hooks[RT_HOOK_PLAN] = &plan_hook;
    /* A value the program drops stays until the schedule frees it: the
     * schedule counts it resident until then, and may recompute from it. */
    p->dealloc = s->budget.config.dealloc;
    s->budget.config.dealloc = DTR_DEALLOC_IGNORE;
    for (int i = 0; i < n; i++) {
        p->kind[i] = steps[i].kind;
        if (!(p->node[i] = strdup(steps[i].node ? steps[i].node : ""))) {
            p->n = i;
            rt_plan_free(s);
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
        }
        p->n = i + 1;
    }
    return DTRX_OK;
}

/* 1 when the schedule still keeps storage `st`: it has not freed the call
 * output that owns it (whether the program still holds that value or
 * not: the schedule may recompute from it). A view (an alias output, such
 * as a Reshape's) has no say: the exported graph gives a view no bytes and
 * makes every reader of a view read its source too (runtime/export.c), so
 * the schedule keeps or recomputes the source wherever the view is read,
 * and the shared bytes go when the source is freed; a view read after
 * that is replayed from the recomputed source, at no cost (--stats
 * view_remats). A storage no step call owns (a view of a constant) is
 * kept while the program holds an unfreed value on it. */
static int storage_still_held(struct dtrx_session *s, dtr_storage st)
{
    struct rt_step_names *sn = &s->step_names;
    int owner = 0, owner_freed = 0, unfreed_held = 0;
    for (int i = 0; i < sn->n; i++) {
        const struct rt_call *c = sn->calls[i];
        for (int k = 0; k < c->n_out; k++) {
            const struct rt_value *v = c->out[k] >= 0 ? s->values[c->out[k]] : NULL;
            if (!v || v->mem.dt == DTR_NONE || dtr_tensor_storage(s->budget.dtr, v->mem.dt) != st)
                continue;
            if (!(c->def->alias && k == 0)) {
                owner = 1;
                owner_freed = v->marks.plan_freed;
            }
            unfreed_held |= v->mem.dtr_held && !v->marks.plan_freed;
        }
    }
    return owner ? !owner_freed : unfreed_held;
}

/* Evicts value id's storage when it is resident, evictable and backs
 * nothing the schedule still keeps. Returns 1 when it is gone (evicted now
 * or not resident), 0 when it stays. */
static int evict_freed(struct dtrx_session *s, int id)
{
    const struct rt_value *v = s->values[id];
    if (v->mem.dt == DTR_NONE || !dtr_tensor_is_resident(s->budget.dtr, v->mem.dt))
        return 1;
    dtr_storage st = dtr_tensor_storage(s->budget.dtr, v->mem.dt);
    if (!dtr_storage_is_evictable(s->budget.dtr, st) || storage_still_held(s, st) ||
        dtr_storage_evict(s->budget.dtr, st))
        return 0;
    s->plan->plan_evictions++;
    return 1;
}

static void add_pending(struct rt_plan *p, int id)
{
    for (int i = 0; i < p->n_pending; i++)
        if (p->pending[i] == id)
            return;
    if (p->n_pending == p->cap_pending) {
        int cap = p->cap_pending ? 2 * p->cap_pending : 64;
        int *grown = realloc(p->pending, sizeof *grown * (size_t)cap);
        if (!grown)
            return;   /* it stays resident: DTR evicts it when memory runs out */
        p->pending = grown;
        p->cap_pending = cap;
    }
    p->pending[p->n_pending++] = id;
}

/* The freed values that are resident: those that could not go at their
 * free, and those DTR has recomputed since. */
static void retry_pending(struct dtrx_session *s)
{
    struct rt_plan *p = s->plan;
    int kept = 0;
    for (int i = 0; i < p->n_pending; i++) {
        int id = p->pending[i];
        if (s->values[id]->marks.plan_freed) {
            evict_freed(s, id);
            p->pending[kept++] = id;
        }
    }
    p->n_pending = kept;
}

/* 1 for a value the runtime keeps to the end of the step whatever the
 * schedule frees: a parameter's gradient (pinned for the optimizer once
 * final), a graph output, the loss. The exported graph counts these as
 * its nodes' kept_ram, which frees do not return (runtime/export.c);
 * evicting one before it is pinned would only make DTR recompute it. */
static int runtime_keeps(const struct dtrx_session *s, int id)
{
    const struct rt_value *v = s->values[id];
    if (v->use.is_output || id == s->train.loss)
        return 1;
    for (int p = 0; p < s->train.n_params; p++)
        if (s->values[s->train.params[p]]->train.grad == id)
            return 1;
    return 0;
}

/* Frees the outputs of the step's call named `node`: evicts their storage
 * when resident, evictable (a value a running call holds stays) and backing
 * nothing the schedule still keeps; what stays is tried again later. */
static void free_node(struct dtrx_session *s, const char *node)
{
    struct rt_step_names *sn = &s->step_names;
    for (int i = sn->n - 1; i >= 0; i--) {
        if (strcmp(sn->names[i], node))
            continue;
        const struct rt_call *c = sn->calls[i];
        for (int k = 0; k < c->n_out; k++)
            if (c->out[k] >= 0 && !runtime_keeps(s, c->out[k]))
                s->values[c->out[k]]->marks.plan_freed = 1;
        for (int k = 0; k < c->n_out; k++)
            if (c->out[k] >= 0 && s->values[c->out[k]]->marks.plan_freed) {
                evict_freed(s, c->out[k]);
                add_pending(s->plan, c->out[k]);
            }
        return;
    }
}

/* A recomputation step: the node's outputs are recomputed now, where the
 * schedule puts it (its inputs are resident here by the schedule's own
 * validation; later, after the frees that follow, they may not be, and
 * DTR would recompute them too), and kept again to their next free. An
 * output still resident is not recomputed: one the runtime keeps whatever
 * the schedule frees (a graph output, a final gradient: kept_ram in the
 * graph), or one a free could not evict. */
static enum dtrx_status recompute_node(struct dtrx_session *s, const char *node)
{
    struct rt_step_names *sn = &s->step_names;
    for (int i = sn->n - 1; i >= 0; i--) {
        if (strcmp(sn->names[i], node))
            continue;
        const struct rt_call *c = sn->calls[i];
        for (int k = 0; k < c->n_out; k++)
            if (c->out[k] >= 0)
                s->values[c->out[k]]->marks.plan_freed = 0;
        for (int k = 0; k < c->n_out; k++) {
            const struct rt_value *v = c->out[k] >= 0 ? s->values[c->out[k]] : NULL;
            if (!v || v->mem.dt == DTR_NONE || dtr_tensor_is_resident(s->budget.dtr, v->mem.dt))
                continue;
            if (dtr_tensor_acquire(s->budget.dtr, v->mem.dt))
                return rt_fail(DTRX_ERR_BUDGET, "schedule step %d recomputes '%s' and cannot: %s", s->plan->cursor,
                               node, dtr_error(s->budget.dtr));
            dtr_tensor_unacquire(s->budget.dtr, v->mem.dt);
        }
        return DTRX_OK;
    }
    return DTRX_OK;
}

static enum dtrx_status plan_before_call(struct dtrx_session *s, const struct rt_call *c)
{
    struct rt_plan *p = s->plan;
    if (!p || !rt_budget_active(s) || !c->n_out)
        return DTRX_OK;   /* optimizer updates are outside the schedule */
    const char *name = rt_step_name(s, c);
    if (!name)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    for (; p->cursor < p->n; p->cursor++) {
        if (p->kind[p->cursor] == DTRX_PLAN_FREE) {
            free_node(s, p->node[p->cursor]);
            continue;
        }
        if (p->kind[p->cursor] == DTRX_PLAN_RECOMPUTE) {
            enum dtrx_status st = recompute_node(s, p->node[p->cursor]);
            if (st)
                return st;
            continue;
        }
        if (strcmp(p->node[p->cursor], name))
            return rt_fail(DTRX_ERR_INPUT,
                           "schedule step %d runs '%s', but the training step's next call is '%s' "
                           "(was the schedule made for this model's exported graph?)",
                           p->cursor, p->node[p->cursor], name);
        retry_pending(s);
        p->cursor++;
        return DTRX_OK;
    }
    return rt_fail(DTRX_ERR_INPUT, "the schedule ends before the training step's call '%s'", name);
}

/* The schedule's trailing frees, and the check that it ran every step. */
enum dtrx_status rt_plan_step_end(struct dtrx_session *s)
{
    struct rt_plan *p = s->plan;
    if (!p || !rt_budget_active(s))
        return DTRX_OK;
    for (; p->cursor < p->n; p->cursor++) {
        if (p->kind[p->cursor] == DTRX_PLAN_FREE)
            free_node(s, p->node[p->cursor]);
        else if (p->kind[p->cursor] == DTRX_PLAN_RUN)
            return rt_fail(DTRX_ERR_INPUT, "schedule step %d runs '%s', which the training step never calls",
                           p->cursor, p->node[p->cursor]);
    }
    return DTRX_OK;
}

void rt_plan_step_begin(struct dtrx_session *s)
{
    if (!s->plan)
        return;
    s->plan->cursor = 0;
    s->plan->n_pending = 0;
    rt_step_names_reset(s);
    for (int i = 0; i < s->n_values; i++)
        s->values[i]->marks.plan_freed = 0;
}
