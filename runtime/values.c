/* runtime/values.c — the life of a value: made (rt_value_new), given
 * memory (rt_value_alloc: a refcounted rt_storage in the arena; under a
 * budget the DTR bridge in budget.c places it), held by its pending readers
 * (rt_value_hold / rt_value_unhold) and released when none is left. */
#include <stdlib.h>
#include <string.h>

#include "runtime/arena.h"
#include "runtime/budget.h"
#include "runtime/device.h"
#include "runtime/memory.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/trace.h"
#include "runtime/values.h"

void rt_value_destroy(struct dtrx_session *s, struct rt_value *v)
{
    /* Teardown: the elements of a sequence are destroyed on their own. */
    free(v->list.elems);
    v->list.elems = NULL;
    v->list.n_elems = 0;
    rt_value_release(s, v);
    free(v->owned_name);
    free(v);
}

int rt_persistent_new(struct dtrx_session *s, const struct tensor *t, const char *name)
{
    char *owned = strdup(name);
    int id = owned ? rt_value_new(s, owned, RT_VALUE_INITIALIZER) : -1;
    if (id < 0) {
        free(owned);
        rt_fail(DTRX_ERR_BUDGET, "out of host memory for '%s'", name);
        return -1;
    }
    struct rt_value *v = s->values[id];
    v->owned_name = owned;
    v->train.grad = -1;
    v->mem.dt = DTR_NONE;
    v->mem.made_in_step = s->memory->evicts;
    v->t = *t;
    v->t.data = NULL;
    if (rt_value_alloc(s, v))
        return -1;
    if (rt_to_device(s, v->t.data, t->data, tensor_size_bytes(t)))
        return -1;
    if (s->trace_started)
        rt_trace_constant(s, v);   /* else the next run's START lists it */
    if (s->memory->persistent_add(s, v))
        return -1;
    return id;
}

int rt_value_new(struct dtrx_session *s, const char *name, int kind)
{
    if (s->n_values == s->values_capacity) {
        int cap = s->values_capacity ? s->values_capacity * 2 : 256;
        struct rt_value **grown = realloc(s->values, sizeof *grown * (size_t)cap);
        if (!grown)
            return -1;
        s->values = grown;
        s->values_capacity = cap;
    }
    struct rt_value *v = calloc(1, sizeof *v);
    if (!v)
        return -1;
    v->name = name;
    v->kind = kind;
    v->mem.dt = DTR_NONE;
    v->train.grad = -1;
    s->values[s->n_values] = v;
    return s->n_values++;
}

enum dtrx_status rt_value_alloc(struct dtrx_session *s, struct rt_value *v)
{
    size_t bytes = tensor_size_bytes(&v->t);
    struct rt_storage *st = calloc(1, sizeof *st);
    /* Under a budget only persistent tensors come here: they go high, and
     * one made during a step (drawn targets) may evict to fit. */
    void *data = !st ? NULL : s->memory->persistent_alloc(s, bytes);
    if (!data) {
        free(st);
        if (s->arena.budget_bytes) {
            struct rt_budget_account a;
            char held[1024];
            rt_budget_account(s, &a);
            rt_budget_account_text(&a, held, sizeof held);
            return rt_fail(DTRX_ERR_BUDGET,
                           "budget of %zu bytes is infeasible: '%s' needs %zu bytes that are never evicted, and %s",
                           s->arena.budget_bytes, v->name, arena_rounded(bytes), held);
        }
        return rt_fail(DTRX_ERR_BUDGET, "out of memory allocating %zu bytes for '%s' (%zu bytes in use)",
                       bytes, v->name, s->arena.in_use_bytes);
    }
    st->data = data;
    st->size_bytes = bytes;
    st->refs = 1;
    v->mem.storage = st;
    v->t.data = data;
    return DTRX_OK;
}

size_t rt_value_bytes(const struct dtrx_session *s, const struct rt_value *v)
{
    size_t bytes = 0;
    for (int i = 0; i < v->list.n_elems; i++)
        bytes += rt_value_bytes(s, s->values[v->list.elems[i]]);
    if (!v->list.container && v->t.data)
        bytes += arena_rounded(tensor_size_bytes(&v->t));
    return bytes;
}

void rt_value_release(struct dtrx_session *s, struct rt_value *v)
{
    if (v->list.container) {
        /* A sequence or optional lets go of its elements. */
        int n = v->list.n_elems;
        int *elems = v->list.elems;
        v->list.n_elems = 0;
        v->list.elems = NULL;
        for (int i = 0; i < n; i++)
            rt_value_unhold(s, elems[i]);
        free(elems);
        return;
    }
    rt_trace_release(s, v);
    s->memory->release(s, v);
    struct rt_storage *st = v->mem.storage;
    if (!st)
        return;
    v->mem.storage = NULL;
    v->t.data = NULL;
    if (--st->refs == 0) {
        arena_free(&s->arena, st->data);
        free(st);
    }
}

void rt_value_drop_if_unused(struct dtrx_session *s, struct rt_value *v)
{
    if (v->use.remaining <= 0 && v->kind == RT_VALUE_INTERMEDIATE && !v->use.kept)
        rt_value_release(s, v);
}

void rt_value_hold(struct dtrx_session *s, int id)
{
    s->values[id]->use.remaining++;
}

void rt_value_unhold(struct dtrx_session *s, int id)
{
    struct rt_value *v = s->values[id];
    v->use.remaining--;
    rt_value_drop_if_unused(s, v);
}
