/* runtime/exec.c — the one interposition point. Every operator call the
 * runtime makes (forward, loss, backward, optimizer) enters through
 * rt_call_exec(): shape inference, output memory, the kernel and the
 * statistics. Under a budget the call goes to the DTR bridge, which runs the
 * kernel through rt_call_kernel() — the same closure execution DTR replays
 * when it recomputes an evicted value. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime-impl.h"

#define EXEC_MAX_INLINE_ARGS 16

/* The tensor pointer arrays of a call, inline for the common small case. */
struct call_args {
    const struct tensor *in_inline[EXEC_MAX_INLINE_ARGS];
    struct tensor *out_inline[EXEC_MAX_INLINE_ARGS];
    const struct tensor **in;
    struct tensor **out;
};

static enum dtrx_status args_build(struct dtrx_session *s, const struct rt_call *c, struct call_args *a,
                                   struct op_call *call)
{
    a->in = c->n_in > EXEC_MAX_INLINE_ARGS ? malloc(sizeof *a->in * (size_t)c->n_in) : a->in_inline;
    a->out = c->n_out > EXEC_MAX_INLINE_ARGS ? malloc(sizeof *a->out * (size_t)c->n_out) : a->out_inline;
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

static void args_free(struct call_args *a)
{
    if (a->in && a->in != a->in_inline)
        free(a->in);
    if (a->out && a->out != a->out_inline)
        free(a->out);
}

static enum dtrx_status run_kernel(struct dtrx_session *s, const struct rt_call *c, struct op_call *call)
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
    struct call_args a = { 0 };
    struct op_call call;
    enum dtrx_status st = args_build(s, c, &a, &call);
    if (!st)
        st = run_kernel(s, c, &call);
    args_free(&a);
    return st;
}

static enum dtrx_status alias_output(struct dtrx_session *s, struct rt_call *c,
                                     const struct tensor *src, struct rt_value *dst)
{
    if (tensor_numel(&dst->t) != tensor_numel(src) || dst->t.dtype != src->dtype)
        return rt_fail(DTRX_ERR_INTERNAL, "node '%s' (%s): view changes the element count or type",
                       c->name, c->def->name);
    struct rt_value *owner = s->values[c->in[0]];
    dst->storage = owner->storage;
    if (dst->storage)
        dst->storage->refs++;
    dst->t.data = src->data;
    return DTRX_OK;
}

double rt_call_cost(const struct rt_call *c, const struct op_call *call)
{
    if (!c->def->cost)
        return 0;
    struct op_cost cost = c->def->cost(call);
    /* a view moves no data */
    return cost.flops + (c->def->alias ? 0 : RT_COST_FLOPS_PER_BYTE * cost.bytes);
}

static enum dtrx_status exec_unbudgeted(struct dtrx_session *s, struct rt_call *c, struct op_call *call)
{
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] >= 0 && !s->values[c->in[i]]->storage)
            return rt_fail(DTRX_ERR_INTERNAL, "node '%s': input '%s' is not resident", c->name,
                           s->values[c->in[i]]->name);
    if (c->def->infer && rt_call_infer(s, call))
        return rt_fail(DTRX_ERR_INPUT, "%s", s->op_err[0] ? s->op_err : "shape inference failed");
    for (int i = 0; i < c->n_out; i++) {
        if (!call->out[i])
            continue;
        struct rt_value *v = s->values[c->out[i]];
        enum dtrx_status st = c->def->alias && i == 0 ? alias_output(s, c, call->in[0], v) : rt_value_alloc(s, v);
        if (st)
            return st;
    }
    double t0 = rt_kernel_timer_begin(s);
    enum dtrx_status st = run_kernel(s, c, call);
    c->measured_seconds = rt_kernel_timer_end(s, t0);
    if (!st)
        c->cost_flops = rt_call_cost(c, call);
    return st;
}

enum dtrx_status rt_call_exec(struct dtrx_session *s, struct rt_call *c)
{
    struct call_args a = { 0 };
    struct op_call call;
    enum dtrx_status st = args_build(s, c, &a, &call);
    if (!st) {
        for (int i = 0; i < c->n_out; i++)
            if (a.out[i]) {
                memset(a.out[i], 0, sizeof *a.out[i]);
                s->values[c->out[i]]->dt = DTR_NONE;
            }
        if (s->plan)
            st = rt_plan_before_call(s, c);
        if (s->recorder)
            rt_record_begin(s);
        if (!st)
            st = rt_budget_active(s) ? rt_budget_exec(s, c, &call) : exec_unbudgeted(s, c, &call);
    }
    args_free(&a);
    if (st)
        return st;
    s->stats.total_compute += c->cost_flops;
    s->stats.op_calls++;
    rt_trace_call(s, c);
    if (s->check_finite)
        rt_check_finite(s, c);
    if (s->recorder)
        rt_record_call(s, c, rt_step_name(s, c), c->measured_seconds);
    return DTRX_OK;
}
