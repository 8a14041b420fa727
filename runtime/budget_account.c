/* runtime/budget_account.c — where the arena's bytes are, in one snapshot,
 * for the messages of infeasible budgets (budget.h, rt_budget_account): the
 * persistent tensors by role, then the step's values by what holds them in
 * the DTR instance, then what is left (workspace, scratch copies) and what
 * is free. The parts add up to the arena's size, so a message built from
 * them cannot contradict itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/arena.h"
#include "runtime/budget.h"
#include "runtime/session.h"
#include "runtime/train.h"
#include "runtime/value.h"

static int is_state(const struct dtrx_session *s, int id)
{
    const struct rt_train *t = &s->train;
    for (int p = 0; t->active && t->state && p < 2 * t->n_params; p++)
        if (t->state[p] == id)
            return 1;
    return 0;
}

/* Persistent tensors: one arena block each (views share theirs: counted once). */
static void persistent(const struct dtrx_session *s, struct rt_budget_account *a)
{
    void **seen = malloc(sizeof *seen * ((size_t)s->n_values + 1));
    int n_seen = 0;
    for (int i = 0; i < s->n_values; i++) {
        const struct rt_value *v = s->values[i];
        if (!v->mem.storage || !v->mem.storage->data)
            continue;
        void *p = v->mem.storage->data;
        if (seen) {
            int dup = 0;
            for (int k = 0; k < n_seen && !dup; k++)
                dup = seen[k] == p;
            if (dup)
                continue;
            seen[n_seen++] = p;
        }
        size_t bytes = arena_size_of(&s->arena, p);
        if (v->kind == RT_VALUE_INPUT)
            a->inputs += bytes;
        else if (s->train.active && i == s->train.labels)
            a->targets += bytes;
        else if (is_state(s, i))
            a->state += bytes;
        else
            a->weights += bytes;
    }
    free(seen);
}

void rt_budget_account(const struct dtrx_session *s, struct rt_budget_account *a)
{
    memset(a, 0, sizeof *a);
    a->budget = s->arena.budget_bytes;
    a->in_use = s->arena.in_use_bytes;
    a->largest_hole = arena_largest_free(&s->arena);
    persistent(s, a);
    const struct rt_budget *b = &s->budget;
    if (b->dtr) {
        struct dtr_stats ds;
        dtr_stats_get(b->dtr, &ds);
        for (dtr_storage st = 0; st < ds.storages && st < b->capacity; st++) {
            struct dtr_storage_info in;
            if (dtr_storage_info(b->dtr, st, &in) || !b->ptr[st] || !b->owned[st])
                continue;   /* no buffer, or a persistent tensor's block (counted above) */
            size_t bytes = arena_size_of(&s->arena, b->ptr[st]);
            if (in.resident && in.pinned)
                a->pinned_step += bytes;
            else if (in.resident && in.frozen)
                a->frozen += bytes;
            else if (!in.resident || in.locked)
                a->locked += bytes;   /* being computed, or an input of the call in progress */
            else if (in.evictable)
                a->evictable += bytes;
            else
                a->locked += bytes;
        }
    }
    size_t counted = a->weights + a->state + a->inputs + a->targets + a->pinned_step + a->frozen + a->locked +
                     a->evictable;
    a->other = a->in_use > counted ? a->in_use - counted : 0;
}

size_t rt_budget_account_fixed(const struct rt_budget_account *a)
{
    return a->weights + a->state + a->inputs + a->targets + a->pinned_step + a->frozen;
}

static void part(char *buf, size_t n, size_t *at, const char *fmt, size_t bytes, int always)
{
    if ((!bytes && !always) || *at >= n)
        return;
    int k = snprintf(buf + *at, n - *at, fmt, bytes);
    if (k > 0)
        *at += (size_t)k;
}

void rt_budget_account_text(const struct rt_budget_account *a, char *buf, size_t n)
{
    size_t at = 0;
    part(buf, n, &at, "the arena of %zu bytes held ", a->budget, 1);
    size_t persistent = a->weights + a->state + a->inputs + a->targets;
    part(buf, n, &at, "%zu bytes that are never evicted (", persistent, 1);
    part(buf, n, &at, "weights %zu", a->weights, 1);
    part(buf, n, &at, ", optimizer state %zu", a->state, 0);
    part(buf, n, &at, ", inputs %zu", a->inputs, 0);
    part(buf, n, &at, ", targets %zu", a->targets, 0);
    part(buf, n, &at, ")", 0, 1);
    part(buf, n, &at, ", %zu pinned for the step (final gradients, step constants)", a->pinned_step, 0);
    part(buf, n, &at, ", %zu frozen (values computed from a parameter already updated in this backward pass)",
         a->frozen, 0);
    part(buf, n, &at, ", %zu locked by the calls in progress (inputs and outputs)", a->locked, 0);
    part(buf, n, &at, ", %zu evictable", a->evictable, 0);
    part(buf, n, &at, ", %zu kernel workspace and scratch", a->other, 0);
    part(buf, n, &at, ", %zu free", a->budget > a->in_use ? a->budget - a->in_use : 0, 1);
    part(buf, n, &at, " (the largest hole %zu)", a->largest_hole, 1);
}
