/* runtime/control_util.c — values, calls and subgraph instances made on
 * the fly by the control-flow, sequence and FlexAttention executors
 * (runtime/control_util.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/call.h"
#include "runtime/control_util.h"
#include "runtime/emit.h"
#include "runtime/memory.h"
#include "runtime/names.h"
#include "runtime/plan.h"
#include "runtime/run.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/values.h"

static const struct rt_scope *scope_of(const struct dtrx_session *s, const struct rt_call *c)
{
    return c->scope ? c->scope : &s->main_scope;
}

/* ---- values made here ---------------------------------------------------- */

/* A held constant. */
int rt_ctl_constant_held(struct dtrx_session *s, const struct tensor *t, const char *tag)
{
    int id = rt_constant(s, t, tag);
    if (id < 0) {
        rt_fail(DTRX_ERR_BUDGET, "%s: no memory for a constant", tag);
        return -1;
    }
    rt_value_hold(s, id);
    return id;
}

int rt_ctl_const_i64(struct dtrx_session *s, int rank, int n, const int64_t *v, const char *tag)
{
    struct tensor t = { .dtype = ONNX_DTYPE_INT64, .rank = rank, .data = (void *)v };
    if (rank)
        t.dims[0] = n;
    return rt_ctl_constant_held(s, &t, tag);
}

int rt_ctl_const_bool(struct dtrx_session *s, int value, const char *tag)
{
    uint8_t b = value != 0;
    struct tensor t = { .dtype = ONNX_DTYPE_BOOL, .rank = 0, .data = &b };
    return rt_ctl_constant_held(s, &t, tag);
}

/* Builds and runs a call of `op`. Inputs are held for the call; outputs
 * with out[i] == -1 are made new and returned held once (the caller lets go),
 * others are existing values it writes. */
enum dtrx_status rt_ctl_emit_run(struct dtrx_session *s, const char *op, const struct onnx_attr *attrs,
                                 int n_attrs, int n_in, const int *in, int n_out, int *out, const char *tag)
{
    uint8_t made_inline[64], *made = n_out > 64 ? malloc((size_t)n_out) : made_inline;
    if (!made)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    for (int i = 0; i < n_out; i++)
        made[i] = out[i] < 0;
    struct rt_call *call = NULL;
    enum dtrx_status st = rt_emit_build(s, op, attrs, n_attrs, n_in, in, n_out, out, tag, &call);
    if (!st) {
        for (int i = 0; i < n_in; i++)
            if (in[i] >= 0)
                rt_value_hold(s, in[i]);
        for (int i = 0; i < n_out; i++)
            if (made[i])
                rt_value_hold(s, out[i]);
        st = rt_run_call(s, call);
    }
    if (made != made_inline)
        free(made);
    return st;
}

/* dst becomes a sequence or optional holding `elems`. */
enum dtrx_status rt_ctl_container_set(struct dtrx_session *s, int dst, int kind, int n, const int *elems)
{
    struct rt_value *v = s->values[dst];
    int *copy = malloc(sizeof(int) * (size_t)(n + 1));
    if (!copy)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    if (n)
        memcpy(copy, elems, sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        rt_value_hold(s, copy[i]);
    free(v->list.elems);
    v->list.container = kind;
    v->list.elems = copy;
    v->list.n_elems = n;
    return DTRX_OK;
}

/* Makes value dst equal to value src: an Identity view for tensors, a copy
 * of the list for sequences and optionals. */
enum dtrx_status rt_ctl_assign(struct dtrx_session *s, const struct rt_call *c, int src, int dst)
{
    if (dst < 0)
        return DTRX_OK;
    const struct rt_value *v = s->values[src];
    if (v->list.container)
        return rt_ctl_container_set(s, dst, v->list.container, v->list.n_elems, v->list.elems);
    int in[1] = { src }, out[1] = { dst };
    return rt_ctl_emit_run(s, "Identity", NULL, 0, 1, in, 1, out, c->name);
}

/* Reads a one-element integer or bool tensor on the host. */
enum dtrx_status rt_ctl_read_scalar(struct dtrx_session *s, const struct rt_call *c, int id, const char *what,
                                    int want_bool, int64_t *value)
{
    struct rt_value *v = s->values[id];
    if (v->list.container)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): %s is a %s, not a tensor", c->name, c->def->name, what,
                       rt_ctl_container_name(v->list.container));
    char shape[128];
    if (tensor_numel(&v->t) != 1)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): %s must hold one element, not %s", c->name, c->def->name,
                       what, tensor_describe(&v->t, shape, sizeof shape));
    int dt = v->t.dtype;
    int ok = want_bool ? dt == ONNX_DTYPE_BOOL : (dt == ONNX_DTYPE_INT64 || dt == ONNX_DTYPE_INT32);
    if (!ok)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): %s must be %s, not %s", c->name, c->def->name, what,
                       want_bool ? "a bool" : "an int32 or int64", onnx_dtype_name(dt));
    int64_t host[2] = { 0, 0 };
    enum dtrx_status st = s->memory->read(s, v, host);
    if (st)
        return st;
    struct tensor t = v->t;
    t.data = host;
    *value = tensor_get_int(&t, 0);
    return DTRX_OK;
}

/* Stacks tensors along a new axis (Unsqueeze each, then Concat) or joins
 * them along an existing one, into dst. */
enum dtrx_status rt_ctl_join(struct dtrx_session *s, const struct rt_call *c, int dst, const int *vals, int count,
                             int64_t axis, int new_axis)
{
    if (dst < 0)
        return DTRX_OK;
    if (!count) {
        /* No iterations: an empty float tensor, the element shape unknown. */
        float none = 0;
        struct tensor t = { .dtype = ONNX_DTYPE_FLOAT, .rank = 1, .dims = { 0 }, .data = &none };
        int id = rt_ctl_constant_held(s, &t, c->name);
        if (id < 0)
            return DTRX_ERR_BUDGET;
        enum dtrx_status st = rt_ctl_assign(s, c, id, dst);
        rt_value_unhold(s, id);
        return st;
    }
    int *parts = malloc(sizeof(int) * (size_t)count);
    if (!parts)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    enum dtrx_status st = DTRX_OK;
    int axes = -1, made = 0;
    if (new_axis) {
        int rank = s->values[vals[0]]->t.rank + 1;
        int64_t a = axis < 0 ? axis + rank : axis;
        if (a < 0 || a >= rank)
            st = rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): axis %lld is out of range for rank %d", c->name,
                         c->def->name, (long long)axis, rank);
        axis = a;
        if (!st && (axes = rt_ctl_const_i64(s, 1, 1, &a, c->name)) < 0)
            st = DTRX_ERR_BUDGET;
        for (; !st && made < count; made++) {
            int in[2] = { vals[made], axes }, out[1] = { -1 };
            st = rt_ctl_emit_run(s, "Unsqueeze", NULL, 0, 2, in, 1, out, c->name);
            parts[made] = out[0];
        }
    } else {
        memcpy(parts, vals, sizeof(int) * (size_t)count);
    }
    if (!st) {
        struct onnx_attr attr = { .name = "axis", .type = ONNX_ATTR_INT, .i = axis };
        int out[1] = { dst };
        st = rt_ctl_emit_run(s, "Concat", &attr, 1, count, parts, 1, out, c->name);
    }
    for (int i = 0; new_axis && i < made; i++)
        if (parts[i] >= 0)
            rt_value_unhold(s, parts[i]);
    if (axes >= 0)
        rt_value_unhold(s, axes);
    free(parts);
    return st;
}

/* ---- subgraph instances -------------------------------------------------- */

enum dtrx_status rt_ctl_check_input_type(struct dtrx_session *s, const struct rt_call *c,
                                         const struct onnx_value_info *vi, int id)
{
    const struct rt_value *v = s->values[id];
    int kind = vi->kind == ONNX_VALUE_SEQUENCE ? RT_SEQUENCE : vi->kind == ONNX_VALUE_OPTIONAL ? RT_OPTIONAL : RT_TENSOR;
    /* An optional slot also takes a plain value (it then has an element). */
    if (vi->kind != ONNX_VALUE_OTHER && kind != v->list.container && kind != RT_OPTIONAL)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): subgraph input '%s' is declared a %s but receives a %s",
                       c->name, c->def->name, vi->name, rt_ctl_container_name(kind), rt_ctl_container_name(v->list.container));
    if (kind == RT_TENSOR && vi->elem_type && vi->elem_type != v->t.dtype)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): subgraph input '%s' is declared %s but receives %s",
                       c->name, c->def->name, vi->name, onnx_dtype_name(vi->elem_type), onnx_dtype_name(v->t.dtype));
    return DTRX_OK;
}

void rt_ctl_instance_free(struct rt_ctl_instance *in)
{
    rt_names_free(&in->scope.names);
    free(in->calls);
    free(in->out);
    memset(in, 0, sizeof *in);
}

/* Builds the calls of graph g for one execution of control call c; the
 * subgraph's inputs are the values `inputs`. Names its calls
 * "<label>/<node>". */
enum dtrx_status rt_ctl_instance_build(struct dtrx_session *s, const struct rt_call *c, const struct onnx_graph *g,
                                       const int *inputs, const char *label, struct rt_ctl_instance *in)
{
    memset(in, 0, sizeof *in);
    int cap = g->n_inputs + g->n_initializers + 1;
    for (int k = 0; k < g->n_nodes; k++)
        cap += g->nodes[k].n_outputs;
    in->scope.parent = scope_of(s, c);
    in->calls = calloc((size_t)g->n_nodes + 1, sizeof *in->calls);
    in->out = calloc((size_t)g->n_outputs + 1, sizeof(int));
    if (!in->calls || !in->out || rt_names_init(&in->scope.names, cap))
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory instantiating a subgraph of '%s'", c->name);
    for (int i = 0; i < g->n_inputs; i++) {
        if (inputs[i] < 0)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): subgraph input '%s' receives no value", c->name,
                           c->def->name, g->inputs[i].name);
        enum dtrx_status st = rt_ctl_check_input_type(s, c, &g->inputs[i], inputs[i]);
        if (st)
            return st;
        rt_names_put(&in->scope.names, g->inputs[i].name, inputs[i]);
    }
    for (int i = 0; i < g->n_initializers; i++) {
        int id = rt_subgraph_initializer(s, &g->initializers[i]);
        if (id < 0)
            return rt_fail(DTRX_ERR_INTERNAL, "node '%s': subgraph initializer '%s' was not loaded", c->name,
                           g->initializers[i].name);
        rt_names_put(&in->scope.names, g->initializers[i].name, id);
    }
    for (int k = 0; k < g->n_nodes; k++) {
        struct rt_call *call = calloc(1, sizeof *call);
        if (!call || rt_track_call(s, call)) {
            free(call);
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory instantiating a subgraph of '%s'", c->name);
        }
        in->calls[in->n_calls++] = call;
        enum dtrx_status st = rt_call_build(s, &in->scope, &g->nodes[k], call, 1);
        if (st)
            return st;
        size_t len = strlen(label) + strlen(g->nodes[k].name) + 2;
        if (!(call->owned_name = malloc(len)))
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
        snprintf(call->owned_name, len, "%s/%s", label, g->nodes[k].name);
        call->name = call->owned_name;
        call->scope = &in->scope;
        call->seed = rt_call_seed(s, (uint64_t)s->n_calls + (uint64_t)s->train.n_emitted);
    }
    for (int j = 0; j < g->n_outputs; j++) {
        int id = rt_scope_lookup(&in->scope, g->outputs[j].name);
        if (id < 0)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): subgraph output '%s' is produced by no node",
                           c->name, c->def->name, g->outputs[j].name);
        rt_value_hold(s, id);
        in->out[in->n_out++] = id;
    }
    return DTRX_OK;
}

enum dtrx_status rt_ctl_instance_run(struct dtrx_session *s, struct rt_ctl_instance *in)
{
    for (int k = 0; k < in->n_calls; k++) {
        enum dtrx_status st = rt_run_call(s, in->calls[k]);
        if (st)
            return st;
    }
    return DTRX_OK;
}

/* Builds and runs; on failure the instance is freed. */
enum dtrx_status rt_ctl_instance_exec(struct dtrx_session *s, const struct rt_call *c, const struct onnx_graph *g,
                                      const int *inputs, const char *label, struct rt_ctl_instance *in)
{
    enum dtrx_status st = rt_ctl_instance_build(s, c, g, inputs, label, in);
    if (!st)
        st = rt_ctl_instance_run(s, in);
    if (st)
        rt_ctl_instance_free(in);
    return st;
}

const struct onnx_graph *rt_ctl_graph_attr(const struct rt_call *c, const char *name)
{
    const struct onnx_attr *a = onnx_node_attr(c->node, name);
    return a && a->type == ONNX_ATTR_GRAPH ? a->g : NULL;
}
