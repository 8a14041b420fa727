/* runtime/call.c — the closure execution itself: a call's tensor arguments
 * built from its value indices, its kernel run on the session's device, its
 * cost on its shapes, and its random seed. What rt_call_exec runs once and
 * what DTR (budget.c) replays to recompute an evicted value. */
#include <stdlib.h>
#include <string.h>

#include "runtime/call.h"
#include "runtime/device.h"
#include "runtime/session.h"
#include "runtime/status.h"

#define CALL_MAX_INLINE_ARGS 16

enum dtrx_status rt_call_args_build(struct dtrx_session *s, const struct rt_call *c, struct rt_call_args *a,
                                    struct op_call *call)
{
    a->in = c->n_in > CALL_MAX_INLINE_ARGS ? malloc(sizeof *a->in * (size_t)c->n_in) : a->in_inline;
    a->out = c->n_out > CALL_MAX_INLINE_ARGS ? malloc(sizeof *a->out * (size_t)c->n_out) : a->out_inline;
    if (!a->in || !a->out)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory calling node '%s'", c->name);
    for (int i = 0; i < c->n_in; i++)
        a->in[i] = c->in[i] < 0 ? NULL : &s->values[c->in[i]]->t;
    for (int i = 0; i < c->n_out; i++)
        a->out[i] = c->out[i] < 0 ? NULL : &s->values[c->out[i]]->t;
    s->op_err[0] = 0;
    s->env.seed = c->seed;
    s->env.scratch_failed = 0;
    *call = (struct op_call){
        .def = c->def, .version = c->version, .params = c->params, .node_name = c->name,
        .n_in = c->n_in, .in = a->in, .n_out = c->n_out, .out = a->out, .env = &s->env,
    };
    return DTRX_OK;
}

void rt_call_args_free(struct rt_call_args *a)
{
    if (a->in && a->in != a->in_inline)
        free(a->in);
    if (a->out && a->out != a->out_inline)
        free(a->out);
}

enum dtrx_status rt_call_run_kernel(struct dtrx_session *s, const struct rt_call *c, struct op_call *call)
{
    if (c->def->alias)
        return DTRX_OK;
    int (*kernel)(struct op_call *) = rt_kernel_of(s, c->def);
    if (!kernel)
        return rt_fail(DTRX_ERR_INPUT, "node '%s': operator %s has no %s kernel", c->name, c->def->name,
                       s->env.backend->name);
    if (rt_kernel_run(s, kernel, call))
        return rt_fail(DTRX_ERR_INPUT, "%s", s->op_err[0] ? s->op_err : "kernel failed");
    return DTRX_OK;
}

enum dtrx_status rt_call_kernel(struct dtrx_session *s, struct rt_call *c)
{
    struct rt_call_args a = { 0 };
    struct op_call call;
    enum dtrx_status st = rt_call_args_build(s, c, &a, &call);
    if (!st)
        st = rt_call_run_kernel(s, c, &call);
    rt_call_args_free(&a);
    return st;
}

void rt_call_in_place_check(struct rt_call *c, const struct op_call *call)
{
    if (!c->in_place)
        return;
    const struct tensor *a = call->n_in > 0 ? call->in[0] : NULL, *y = call->n_out > 0 ? call->out[0] : NULL;
    int same = a && y && a->dtype == y->dtype && a->rank == y->rank;
    for (int k = 0; same && k < y->rank; k++)
        same = a->dims[k] == y->dims[k];
    if (!same)
        c->in_place = 0;
}

double rt_call_cost(const struct rt_call *c, const struct op_call *call)
{
    if (!c->def->cost)
        return 0;
    struct op_cost cost = c->def->cost(call);
    /* a view moves no data */
    return cost.flops + (c->def->alias ? 0 : RT_COST_FLOPS_PER_BYTE * cost.bytes);
}

uint64_t rt_call_seed(const struct dtrx_session *s, uint64_t index)
{
    uint64_t z = s->opts.seed * 0x9e3779b97f4a7c15ull + (uint64_t)s->train.step * 0xbf58476d1ce4e5b9ull + index;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
