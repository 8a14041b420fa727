/* runtime/exec.c — the one interposition point. Every operator call the
 * runtime makes runs through rt_call_exec(): shape inference, output
 * allocation, the kernel, and the statistics every caller sees. DTR,
 * tracing and recomputation hook in here and nowhere else. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime-impl.h"

#define EXEC_MAX_INLINE_ARGS 16

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

enum dtrx_status rt_call_exec(struct dtrx_session *s, struct rt_call *c)
{
    const struct tensor *in_inline[EXEC_MAX_INLINE_ARGS];
    struct tensor *out_inline[EXEC_MAX_INLINE_ARGS];
    const struct tensor **in = in_inline;
    struct tensor **out = out_inline;
    if (c->n_in > EXEC_MAX_INLINE_ARGS)
        in = malloc(sizeof *in * (size_t)c->n_in);
    if (c->n_out > EXEC_MAX_INLINE_ARGS)
        out = malloc(sizeof *out * (size_t)c->n_out);
    enum dtrx_status st = DTRX_OK;
    if (!in || !out) {
        st = rt_fail(DTRX_ERR_INTERNAL, "out of host memory calling node '%s'", c->name);
        goto done;
    }
    for (int i = 0; i < c->n_in; i++) {
        if (c->in[i] < 0) {
            in[i] = NULL;
            continue;
        }
        struct rt_value *v = s->values[c->in[i]];
        if (!v->storage) {
            st = rt_fail(DTRX_ERR_INTERNAL, "node '%s': input '%s' is not resident", c->name, v->name);
            goto done;
        }
        in[i] = &v->t;
    }
    for (int i = 0; i < c->n_out; i++) {
        out[i] = c->out[i] < 0 ? NULL : &s->values[c->out[i]]->t;
        if (out[i])
            memset(out[i], 0, sizeof *out[i]);
    }

    s->op_err[0] = 0;
    s->env.seed = c->seed;
    struct op_call call = {
        .def = c->def, .version = c->version, .params = c->params, .node_name = c->name,
        .n_in = c->n_in, .in = in, .n_out = c->n_out, .out = out, .env = &s->env,
    };
    if (c->def->infer && c->def->infer(&call)) {
        st = rt_fail(DTRX_ERR_INPUT, "%s", s->op_err[0] ? s->op_err : "shape inference failed");
        goto done;
    }
    for (int i = 0; i < c->n_out && !st; i++) {
        if (!out[i])
            continue;
        struct rt_value *v = s->values[c->out[i]];
        st = c->def->alias && i == 0 ? alias_output(s, c, in[0], v) : rt_value_alloc(s, v);
    }
    if (st)
        goto done;
    if (!c->def->alias) {
        int (*kernel)(struct op_call *) = c->def->kernel[s->env.backend->kind];
        if (!kernel) {
            st = rt_fail(DTRX_ERR_INPUT, "node '%s': operator %s has no %s kernel", c->name,
                         c->def->name, s->env.backend->name);
            goto done;
        }
        if (kernel(&call)) {
            st = rt_fail(DTRX_ERR_INPUT, "%s", s->op_err[0] ? s->op_err : "kernel failed");
            goto done;
        }
    }
    c->cost_flops = c->def->cost ? c->def->cost(&call).flops : 0;
    s->stats.total_compute += c->cost_flops;
    s->stats.op_calls++;
done:
    if (in != in_inline)
        free(in);
    if (out != out_inline)
        free(out);
    return st;
}
