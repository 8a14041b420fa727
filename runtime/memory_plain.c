/* runtime/memory_plain.c — the plain value memory: every value's buffer a
 * refcounted rt_storage block in the arena (rt_value_alloc), a view sharing
 * its source's, persistent tensors at the arena's high end, nothing ever
 * evicted. The session's memory outside budgeted runs (memory.h). */
#include <string.h>

#include "runtime/arena.h"
#include "runtime/call.h"
#include "runtime/device.h"
#include "runtime/memory.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/values.h"

static enum dtrx_status alias_output(struct dtrx_session *s, struct rt_call *c,
                                     const struct tensor *src, struct rt_value *dst)
{
    if (tensor_numel(&dst->t) != tensor_numel(src) || dst->t.dtype != src->dtype)
        return rt_fail(DTRX_ERR_INTERNAL, "node '%s' (%s): view changes the element count or type",
                       c->name, c->def->name);
    struct rt_value *owner = s->values[c->in[0]];
    dst->mem.storage = owner->mem.storage;
    if (dst->mem.storage)
        dst->mem.storage->refs++;
    dst->t.data = src->data;
    return DTRX_OK;
}

static enum dtrx_status plain_exec(struct dtrx_session *s, struct rt_call *c, struct op_call *call)
{
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] >= 0 && !s->values[c->in[i]]->mem.storage)
            return rt_fail(DTRX_ERR_INTERNAL, "node '%s': input '%s' is not resident", c->name,
                           s->values[c->in[i]]->name);
    if (c->def->infer && rt_call_infer(s, call))
        return rt_fail(DTRX_ERR_INPUT, "%s", s->op_err[0] ? s->op_err : "shape inference failed");
    rt_call_in_place_check(c, call);
    for (int i = 0; i < c->n_out; i++) {
        if (!call->out[i])
            continue;
        struct rt_value *v = s->values[c->out[i]];
        enum dtrx_status st = (c->def->alias || c->in_place) && i == 0 ? alias_output(s, c, call->in[0], v)
                                                                         : rt_value_alloc(s, v);
        if (st)
            return st;
    }
    /* Kernel times are wanted by the export recorder and measured costs
     * alone; two clock reads a call are a visible share of a tiny one. */
    int timed = s->recorder || s->opts.measured_costs;
    double t0 = timed ? rt_kernel_timer_begin(s) : 0;
    enum dtrx_status st = rt_call_run_kernel(s, c, call);
    if (timed)
        c->measured_seconds = rt_kernel_timer_end(s, t0);
    if (!st)
        c->cost_flops = rt_call_cost(c, call);
    return st;
}

static void *plain_persistent_alloc(struct dtrx_session *s, size_t bytes)
{
    return arena_alloc_high(&s->arena, bytes, NULL);
}

static enum dtrx_status plain_persistent_add(struct dtrx_session *s, struct rt_value *v)
{
    (void)s;
    (void)v;
    return DTRX_OK;
}

static enum dtrx_status plain_constant(struct dtrx_session *s, struct rt_value *v, const void *data)
{
    enum dtrx_status st = rt_value_alloc(s, v);
    if (st)
        return st;
    return rt_to_device(s, v->t.data, data, tensor_size_bytes(&v->t));
}

static enum dtrx_status plain_read(struct dtrx_session *s, struct rt_value *v, void *dst)
{
    if (!v->t.data)
        return rt_fail(DTRX_ERR_INPUT, "'%s' has no value", v->name);
    return rt_to_host(s, dst, v->t.data, tensor_size_bytes(&v->t));
}

static enum dtrx_status plain_pin(struct dtrx_session *s, struct rt_value *v)
{
    (void)s;
    (void)v;
    return DTRX_OK;
}

static void plain_release(struct dtrx_session *s, struct rt_value *v)
{
    (void)s;
    (void)v;
}

static int plain_live(const struct dtrx_session *s, const struct rt_value *v)
{
    (void)s;
    return v->mem.storage != NULL;
}

/* Nothing is recomputed: an in-place update changes nothing else. */
static enum dtrx_status plain_mutate(struct dtrx_session *s, struct rt_value *v)
{
    (void)s;
    (void)v;
    return DTRX_OK;
}

static int plain_overwritable(const struct dtrx_session *s, const struct rt_value *v)
{
    (void)s;
    return v->mem.storage && v->mem.storage->refs == 1;
}

const struct rt_memory rt_memory_plain = {
    .name = "plain",
    .evicts = 0,
    .exec = plain_exec,
    .persistent_alloc = plain_persistent_alloc,
    .persistent_add = plain_persistent_add,
    .constant = plain_constant,
    .read = plain_read,
    .pin = plain_pin,
    .mutate = plain_mutate,
    .overwritable = plain_overwritable,
    .reusable = plain_overwritable,   /* nothing is recomputed: the same test */
    .release = plain_release,
    .live = plain_live,
};
