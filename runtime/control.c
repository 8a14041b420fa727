/* runtime/control.c — control flow and list values, executed by the runtime.
 *
 * If, Loop and Scan run by instantiating their subgraph each time it runs:
 * every node becomes an ordinary call (rt_call_build in a scope whose parent
 * is the enclosing graph), its outputs new values, and the calls run through
 * rt_run_call like the main graph's. Training's tape therefore records the
 * calls that actually ran — the branch taken, every iteration — and neither
 * the backward pass nor DTR needs anything special: a value made inside an
 * iteration is recomputed, after the loop has ended, by replaying that
 * iteration's call.
 *
 * Results reach a control node's outputs through Identity calls (views);
 * loop-carried values pass from one iteration to the next as they are; scan
 * inputs are sliced with Gather and scan outputs stacked with Unsqueeze and
 * Concat. Every such call is recorded and differentiable.
 *
 * Sequences and optionals are lists of values (rt_value.list), each element
 * held once while the list lives; their operators only rearrange lists, and
 * the tensors inside move through Identity, Split and Concat calls.
 * SequenceMap instantiates its body once per element, as Loop does.
 *
 * FlexAttention (ai.onnx.preview) is made of ordinary calls in the same way
 * — Mul by sqrt(scale), the grouped-query expansion of K and V, the two
 * products as Einsum, Softmax, Cast to and from the softmax precision — with its
 * score_mod and prob_mod subgraphs instantiated between them, so that it
 * trains, recomputes and runs on every backend its parts run on.
 *
 * Reference counting: every value made here is held once by this file while
 * it is needed (rt_value_hold) and let go with rt_value_unhold.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/attn-params.h"
#include "runtime/call.h"
#include "runtime/control.h"
#include "runtime/emit.h"
#include "runtime/memory.h"
#include "runtime/names.h"
#include "runtime/plan.h"
#include "runtime/run.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/values.h"

/* A loop whose condition never turns false is refused, not run forever. */
#define CONTROL_MAX_ITERATIONS 10000000LL

/* One instantiation of a subgraph. */
struct instance {
    struct rt_scope scope;
    int n_calls;
    struct rt_call **calls;
    int n_out;
    int *out;                      /* the subgraph's outputs, each held once */
};

static const struct rt_scope *scope_of(const struct dtrx_session *s, const struct rt_call *c)
{
    return c->scope ? c->scope : &s->main_scope;
}

static const char *container_name(int kind)
{
    return kind == RT_SEQUENCE ? "sequence" : kind == RT_OPTIONAL ? "optional" : "tensor";
}

/* ---- values made here ---------------------------------------------------- */

/* A held constant. */
static int constant_held(struct dtrx_session *s, const struct tensor *t, const char *tag)
{
    int id = rt_constant(s, t, tag);
    if (id < 0) {
        rt_fail(DTRX_ERR_BUDGET, "%s: no memory for a constant", tag);
        return -1;
    }
    rt_value_hold(s, id);
    return id;
}

static int const_i64(struct dtrx_session *s, int rank, int n, const int64_t *v, const char *tag)
{
    struct tensor t = { .dtype = ONNX_DTYPE_INT64, .rank = rank, .data = (void *)v };
    if (rank)
        t.dims[0] = n;
    return constant_held(s, &t, tag);
}

static int const_bool(struct dtrx_session *s, int value, const char *tag)
{
    uint8_t b = value != 0;
    struct tensor t = { .dtype = ONNX_DTYPE_BOOL, .rank = 0, .data = &b };
    return constant_held(s, &t, tag);
}

/* Builds and runs a call of `op`. Inputs are held for the call; outputs
 * with out[i] == -1 are made new and returned held once (the caller lets go),
 * others are existing values it writes. */
static enum dtrx_status emit_run(struct dtrx_session *s, const char *op, const struct onnx_attr *attrs,
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
static enum dtrx_status container_set(struct dtrx_session *s, int dst, int kind, int n, const int *elems)
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
static enum dtrx_status assign(struct dtrx_session *s, const struct rt_call *c, int src, int dst)
{
    if (dst < 0)
        return DTRX_OK;
    const struct rt_value *v = s->values[src];
    if (v->list.container)
        return container_set(s, dst, v->list.container, v->list.n_elems, v->list.elems);
    int in[1] = { src }, out[1] = { dst };
    return emit_run(s, "Identity", NULL, 0, 1, in, 1, out, c->name);
}

/* Reads a one-element integer or bool tensor on the host. */
static enum dtrx_status read_scalar(struct dtrx_session *s, const struct rt_call *c, int id, const char *what,
                                    int want_bool, int64_t *value)
{
    struct rt_value *v = s->values[id];
    if (v->list.container)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): %s is a %s, not a tensor", c->name, c->def->name, what,
                       container_name(v->list.container));
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
static enum dtrx_status join(struct dtrx_session *s, const struct rt_call *c, int dst, const int *vals, int count,
                             int64_t axis, int new_axis)
{
    if (dst < 0)
        return DTRX_OK;
    if (!count) {
        /* No iterations: an empty float tensor, the element shape unknown. */
        float none = 0;
        struct tensor t = { .dtype = ONNX_DTYPE_FLOAT, .rank = 1, .dims = { 0 }, .data = &none };
        int id = constant_held(s, &t, c->name);
        if (id < 0)
            return DTRX_ERR_BUDGET;
        enum dtrx_status st = assign(s, c, id, dst);
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
        if (!st && (axes = const_i64(s, 1, 1, &a, c->name)) < 0)
            st = DTRX_ERR_BUDGET;
        for (; !st && made < count; made++) {
            int in[2] = { vals[made], axes }, out[1] = { -1 };
            st = emit_run(s, "Unsqueeze", NULL, 0, 2, in, 1, out, c->name);
            parts[made] = out[0];
        }
    } else {
        memcpy(parts, vals, sizeof(int) * (size_t)count);
    }
    if (!st) {
        struct onnx_attr attr = { .name = "axis", .type = ONNX_ATTR_INT, .i = axis };
        int out[1] = { dst };
        st = emit_run(s, "Concat", &attr, 1, count, parts, 1, out, c->name);
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

static enum dtrx_status check_input_type(struct dtrx_session *s, const struct rt_call *c,
                                         const struct onnx_value_info *vi, int id)
{
    const struct rt_value *v = s->values[id];
    int kind = vi->kind == ONNX_VALUE_SEQUENCE ? RT_SEQUENCE : vi->kind == ONNX_VALUE_OPTIONAL ? RT_OPTIONAL : RT_TENSOR;
    /* An optional slot also takes a plain value (it then has an element). */
    if (vi->kind != ONNX_VALUE_OTHER && kind != v->list.container && kind != RT_OPTIONAL)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): subgraph input '%s' is declared a %s but receives a %s",
                       c->name, c->def->name, vi->name, container_name(kind), container_name(v->list.container));
    if (kind == RT_TENSOR && vi->elem_type && vi->elem_type != v->t.dtype)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): subgraph input '%s' is declared %s but receives %s",
                       c->name, c->def->name, vi->name, onnx_dtype_name(vi->elem_type), onnx_dtype_name(v->t.dtype));
    return DTRX_OK;
}

static void instance_free(struct instance *in)
{
    rt_names_free(&in->scope.names);
    free(in->calls);
    free(in->out);
    memset(in, 0, sizeof *in);
}

/* Builds the calls of graph g for one execution of control call c; the
 * subgraph's inputs are the values `inputs`. Names its calls
 * "<label>/<node>". */
static enum dtrx_status instance_build(struct dtrx_session *s, const struct rt_call *c, const struct onnx_graph *g,
                                       const int *inputs, const char *label, struct instance *in)
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
        enum dtrx_status st = check_input_type(s, c, &g->inputs[i], inputs[i]);
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

static enum dtrx_status instance_run(struct dtrx_session *s, struct instance *in)
{
    for (int k = 0; k < in->n_calls; k++) {
        enum dtrx_status st = rt_run_call(s, in->calls[k]);
        if (st)
            return st;
    }
    return DTRX_OK;
}

/* Builds and runs; on failure the instance is freed. */
static enum dtrx_status instance_exec(struct dtrx_session *s, const struct rt_call *c, const struct onnx_graph *g,
                                      const int *inputs, const char *label, struct instance *in)
{
    enum dtrx_status st = instance_build(s, c, g, inputs, label, in);
    if (!st)
        st = instance_run(s, in);
    if (st)
        instance_free(in);
    return st;
}

static const struct onnx_graph *graph_attr(const struct rt_call *c, const char *name)
{
    const struct onnx_attr *a = onnx_node_attr(c->node, name);
    return a && a->type == ONNX_ATTR_GRAPH ? a->g : NULL;
}

/* ---- If, Loop, Scan ------------------------------------------------------ */

static enum dtrx_status exec_if(struct dtrx_session *s, struct rt_call *c)
{
    int64_t cond = 0;
    enum dtrx_status st = read_scalar(s, c, c->in[0], "the condition", 1, &cond);
    if (st)
        return st;
    const struct onnx_graph *g = graph_attr(c, cond ? "then_branch" : "else_branch");
    char label[512];
    snprintf(label, sizeof label, "%s/%s", c->name, cond ? "then" : "else");
    struct instance in;
    if ((st = instance_exec(s, c, g, NULL, label, &in)))
        return st;
    for (int j = 0; j < in.n_out && !st; j++)
        st = assign(s, c, in.out[j], j < c->n_out ? c->out[j] : -1);
    for (int j = 0; j < in.n_out; j++)
        rt_value_unhold(s, in.out[j]);
    instance_free(&in);
    return st;
}

/* Per-output lists of per-iteration values (Loop and Scan outputs). */
struct scan_lists {
    int n;
    int count, capacity;
    int *ids;                      /* [iteration][output] */
};

static enum dtrx_status lists_add(struct scan_lists *l, const int *vals)
{
    if (l->count == l->capacity) {
        int cap = l->capacity ? l->capacity * 2 : 16;
        int *grown = realloc(l->ids, sizeof(int) * (size_t)cap * (size_t)(l->n ? l->n : 1));
        if (!grown)
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory collecting scan outputs");
        l->ids = grown;
        l->capacity = cap;
    }
    memcpy(l->ids + (size_t)l->count * (size_t)l->n, vals, sizeof(int) * (size_t)l->n);
    l->count++;
    return DTRX_OK;
}

/* Stacks the lists into outputs first_out.. of c along `axes` (reversed
 * where `reverse`), and lets go of every element. */
static enum dtrx_status lists_stack(struct dtrx_session *s, const struct rt_call *c, struct scan_lists *l,
                                    int first_out, const int64_t *axes, const int64_t *reverse)
{
    enum dtrx_status st = DTRX_OK;
    int *col = malloc(sizeof(int) * (size_t)(l->count + 1));
    if (!col)
        st = rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    for (int k = 0; k < l->n && !st; k++) {
        for (int t = 0; t < l->count; t++)
            col[t] = l->ids[(size_t)(reverse && reverse[k] ? l->count - 1 - t : t) * (size_t)l->n + (size_t)k];
        int out = first_out + k < c->n_out ? c->out[first_out + k] : -1;
        st = join(s, c, out, col, l->count, axes ? axes[k] : 0, 1);
    }
    for (size_t i = 0; i < (size_t)l->count * (size_t)l->n; i++)
        rt_value_unhold(s, l->ids[i]);
    free(col);
    free(l->ids);
    l->ids = NULL;
    l->count = 0;
    return st;
}

/* Lets go of every element without stacking (a failed or unused list). */
static void lists_release(struct dtrx_session *s, struct scan_lists *l)
{
    for (size_t i = 0; i < (size_t)l->count * (size_t)l->n; i++)
        if (l->ids[i] >= 0)
            rt_value_unhold(s, l->ids[i]);
    free(l->ids);
    l->ids = NULL;
    l->count = 0;
}

/* Output k of every step in l stacked along a new axis 0 and padded with
 * zeros to `length` rows of elem's type and shape (Scan-8's short
 * sequences); *dst becomes a new value, held once. */
static enum dtrx_status stack_padded(struct dtrx_session *s, const struct rt_call *c, const struct scan_lists *l,
                                     int k, int64_t length, const struct tensor *elem, int *dst)
{
    struct tensor pad = *elem;
    if (pad.rank + 1 > TENSOR_MAX_RANK)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (Scan): scan output %d has too many dimensions", c->name, k);
    memmove(pad.dims + 1, pad.dims, sizeof(int64_t) * (size_t)pad.rank);
    pad.rank++;
    pad.dims[0] = length - l->count;
    int *parts = malloc(sizeof(int) * (size_t)(l->count + 1));
    void *zeros = NULL;
    int64_t zero_axis = 0;
    int axes = -1, made = 0;
    enum dtrx_status st = DTRX_OK;
    if (!parts)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    if ((axes = const_i64(s, 1, 1, &zero_axis, c->name)) < 0)
        st = DTRX_ERR_BUDGET;
    for (; !st && made < l->count; made++) {
        int in[2] = { l->ids[(size_t)made * (size_t)l->n + (size_t)k], axes }, out[1] = { -1 };
        st = emit_run(s, "Unsqueeze", NULL, 0, 2, in, 1, out, c->name);
        parts[made] = out[0];
        if (st)
            break;
    }
    if (!st && pad.dims[0] > 0) {
        size_t bytes = tensor_size_bytes(&pad);
        if (!(zeros = calloc(1, bytes ? bytes : 1)))
            st = rt_fail(DTRX_ERR_BUDGET, "out of host memory");
        pad.data = zeros;
        if (!st && (parts[made] = constant_held(s, &pad, c->name)) < 0)
            st = DTRX_ERR_BUDGET;
        if (!st)
            made++;
    }
    if (!st) {
        struct onnx_attr attr = { .name = "axis", .type = ONNX_ATTR_INT, .i = 0 };
        st = emit_run(s, "Concat", &attr, 1, made, parts, 1, dst, c->name);
    }
    for (int i = 0; i < made; i++)
        if (parts[i] >= 0)
            rt_value_unhold(s, parts[i]);
    if (axes >= 0)
        rt_value_unhold(s, axes);
    free(zeros);
    free(parts);
    return st;
}

/* Binds the final loop-carried values to outputs 0.. and lets them go. */
static enum dtrx_status finish_carried(struct dtrx_session *s, const struct rt_call *c, int *carried, int n,
                                       enum dtrx_status st)
{
    for (int i = 0; i < n; i++) {
        if (!st && carried[i] >= 0)
            st = assign(s, c, carried[i], i < c->n_out ? c->out[i] : -1);
        if (carried[i] >= 0)
            rt_value_unhold(s, carried[i]);
    }
    return st;
}

static enum dtrx_status exec_loop(struct dtrx_session *s, struct rt_call *c)
{
    const struct onnx_node *n = c->node;
    const struct onnx_graph *body = graph_attr(c, "body");
    int n_carried = n->n_inputs - 2;
    int64_t trip = 0, cond = 1;
    int has_trip = c->in[0] >= 0;
    enum dtrx_status st = DTRX_OK;
    if (has_trip && (st = read_scalar(s, c, c->in[0], "the trip count M", 0, &trip)))
        return st;
    if (c->in[1] >= 0 && (st = read_scalar(s, c, c->in[1], "the condition", 1, &cond)))
        return st;
    int *inputs = calloc((size_t)n_carried + 3, sizeof(int));
    int *carried = inputs ? inputs + 2 : NULL;
    struct scan_lists scans = { .n = n->n_outputs - n_carried };
    if (!inputs)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    for (int i = 0; i < n_carried; i++) {
        carried[i] = c->in[2 + i];
        if (carried[i] < 0) {
            for (int k = 0; k < i; k++)
                rt_value_unhold(s, carried[k]);
            free(inputs);
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (Loop): loop-carried input %d is empty", c->name, i + 1);
        }
        rt_value_hold(s, carried[i]);
    }
    for (int64_t it = 0; !st && (!has_trip || it < trip) && cond; it++) {
        if (it >= CONTROL_MAX_ITERATIONS) {
            st = rt_fail(DTRX_ERR_INPUT, "node '%s' (Loop): still running after %lld iterations (no trip count, and "
                         "the condition never turned false)", c->name, CONTROL_MAX_ITERATIONS);
            break;
        }
        char label[512];
        snprintf(label, sizeof label, "%s/%lld", c->name, (long long)it);
        inputs[0] = const_i64(s, 0, 1, &it, label);
        inputs[1] = inputs[0] < 0 ? -1 : const_bool(s, 1, label);
        if (inputs[1] < 0) {
            if (inputs[0] >= 0)
                rt_value_unhold(s, inputs[0]);
            st = DTRX_ERR_BUDGET;
            break;
        }
        struct instance in;
        st = instance_exec(s, c, body, inputs, label, &in);
        rt_value_unhold(s, inputs[0]);
        rt_value_unhold(s, inputs[1]);
        if (st)
            break;
        st = read_scalar(s, c, in.out[0], "the body's condition output", 1, &cond);
        for (int i = 0; i < n_carried; i++) {
            rt_value_unhold(s, carried[i]);
            carried[i] = in.out[1 + i];   /* the instance's hold passes to us */
        }
        if (!st)
            st = lists_add(&scans, in.out + 1 + n_carried);
        else
            for (int k = 0; k < scans.n; k++)
                rt_value_unhold(s, in.out[1 + n_carried + k]);
        rt_value_unhold(s, in.out[0]);
        instance_free(&in);
    }
    st = finish_carried(s, c, carried, n_carried, st);
    enum dtrx_status st2 = lists_stack(s, c, &scans, n_carried, NULL, NULL);
    free(inputs);
    return st ? st : st2;
}

#define SCAN_MAX_IO 64

/* Runs `body` over the first `steps` slices of the tensors xs along in_axes
 * (each of length `length` there; reversed where in_dirs): state[] holds the
 * n_state initial values (held) and receives the final ones (held); every
 * step's scan outputs are added to `scans`. Steps are labelled
 * "<prefix>/<t>". */
static enum dtrx_status scan_run(struct dtrx_session *s, const struct rt_call *c, const struct onnx_graph *body,
                                 const char *prefix, int n_state, int *state, int n_scan, const int *xs,
                                 const int64_t *in_axes, const int64_t *in_dirs, int64_t steps, int64_t length,
                                 struct scan_lists *scans)
{
    if (steps <= 0)
        return DTRX_OK;
    int inputs[SCAN_MAX_IO];
    /* Each scan input is cut once into its steps (one Split, whose gradient
     * is one Concat), plus the unread rest when steps < length; step t reads
     * piece t (or steps-1-t) through a Squeeze. */
    enum dtrx_status st = DTRX_OK;
    int extra = length > steps;
    int *pieces = calloc((size_t)n_scan * (size_t)(steps + extra) + 1, sizeof(int));
    int axes_ids[SCAN_MAX_IO];
    for (int j = 0; j < n_scan; j++)
        axes_ids[j] = -1;
    if (!pieces)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    for (size_t i = 0; i < (size_t)n_scan * (size_t)(steps + extra); i++)
        pieces[i] = -1;
    for (int j = 0; !st && j < n_scan; j++) {
        int64_t *sizes_v = malloc(sizeof(int64_t) * (size_t)(steps + extra));
        int sizes = -1;
        if (!sizes_v)
            st = rt_fail(DTRX_ERR_BUDGET, "out of host memory");
        for (int64_t t = 0; !st && t < steps; t++)
            sizes_v[t] = 1;
        if (!st && extra)
            sizes_v[steps] = length - steps;
        if (!st && ((sizes = const_i64(s, 1, (int)(steps + extra), sizes_v, c->name)) < 0 ||
                    (axes_ids[j] = const_i64(s, 1, 1, &in_axes[j], c->name)) < 0))
            st = DTRX_ERR_BUDGET;
        free(sizes_v);
        int *mine = pieces + (size_t)j * (size_t)(steps + extra);
        struct onnx_attr axis = { .name = "axis", .type = ONNX_ATTR_INT, .i = in_axes[j] };
        int in2[2] = { xs[j], sizes };
        if (!st)
            st = emit_run(s, "Split", &axis, 1, 2, in2, (int)(steps + extra), mine, c->name);
        if (sizes >= 0)
            rt_value_unhold(s, sizes);
        if (!st && extra) {
            rt_value_unhold(s, mine[steps]);
            mine[steps] = -1;
        }
    }
    for (int64_t t = 0; !st && t < steps; t++) {
        char label[512];
        snprintf(label, sizeof label, "%s/%lld", prefix, (long long)t);
        for (int i = 0; i < n_state; i++)
            inputs[i] = state[i];
        int made = 0;
        for (; !st && made < n_scan; made++) {
            int64_t index = in_dirs[made] ? steps - 1 - t : t;
            int *piece = &pieces[(size_t)made * (size_t)(steps + extra) + (size_t)index];
            int in2[2] = { *piece, axes_ids[made] }, out[1] = { -1 };
            st = emit_run(s, "Squeeze", NULL, 0, 2, in2, 1, out, label);
            inputs[n_state + made] = out[0];
            rt_value_unhold(s, *piece);
            *piece = -1;
            if (st)
                break;
        }
        struct instance in;
        if (!st)
            st = instance_exec(s, c, body, inputs, label, &in);
        for (int j = 0; j < made; j++)
            if (inputs[n_state + j] >= 0)
                rt_value_unhold(s, inputs[n_state + j]);
        if (st)
            break;
        for (int i = 0; i < n_state; i++) {
            rt_value_unhold(s, state[i]);
            state[i] = in.out[i];   /* the instance's hold passes to us */
        }
        st = lists_add(scans, in.out + n_state);
        if (st)
            for (int k = 0; k < scans->n; k++)
                rt_value_unhold(s, in.out[n_state + k]);
        instance_free(&in);
    }
    for (size_t i = 0; i < (size_t)n_scan * (size_t)(steps + extra); i++)
        if (pieces[i] >= 0)
            rt_value_unhold(s, pieces[i]);
    free(pieces);
    for (int j = 0; j < n_scan; j++)
        if (axes_ids[j] >= 0)
            rt_value_unhold(s, axes_ids[j]);
    return st;
}

/* Scan from opset 9: scan axes and directions per input and output, no batch. */
static enum dtrx_status exec_scan9(struct dtrx_session *s, struct rt_call *c)
{
    const struct onnx_node *n = c->node;
    const struct onnx_graph *body = graph_attr(c, "body");
    int n_scan = (int)onnx_node_attr_int(n, "num_scan_inputs", 1);
    int n_state = n->n_inputs - n_scan, n_scan_out = n->n_outputs - n_state;
    if (n_state < 0 || n_scan_out < 0 || n->n_inputs > SCAN_MAX_IO || n->n_outputs > SCAN_MAX_IO)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (Scan): %d inputs and %d outputs do not fit num_scan_inputs %d",
                       c->name, n->n_inputs, n->n_outputs, n_scan);
    int64_t in_axes[SCAN_MAX_IO] = { 0 }, in_dirs[SCAN_MAX_IO] = { 0 };
    int64_t out_axes[SCAN_MAX_IO] = { 0 }, out_dirs[SCAN_MAX_IO] = { 0 };
    onnx_node_attr_ints(n, "scan_input_axes", in_axes, SCAN_MAX_IO);
    onnx_node_attr_ints(n, "scan_input_directions", in_dirs, SCAN_MAX_IO);
    onnx_node_attr_ints(n, "scan_output_axes", out_axes, SCAN_MAX_IO);
    onnx_node_attr_ints(n, "scan_output_directions", out_dirs, SCAN_MAX_IO);
    int64_t steps = -1;
    for (int j = 0; j < n_scan; j++) {
        int id = c->in[n_state + j];
        if (id < 0 || s->values[id]->list.container)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (Scan): scan input %d must be a tensor", c->name, j);
        const struct tensor *t = &s->values[id]->t;
        int64_t a = in_axes[j] < 0 ? in_axes[j] + t->rank : in_axes[j];
        if (a < 0 || a >= t->rank)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (Scan): scan axis %lld is out of range for input %d of rank %d",
                           c->name, (long long)in_axes[j], j, t->rank);
        in_axes[j] = a;
        if (steps >= 0 && t->dims[a] != steps)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (Scan): scan inputs have %lld and %lld steps", c->name,
                           (long long)steps, (long long)t->dims[a]);
        steps = t->dims[a];
    }
    int state[SCAN_MAX_IO];
    for (int i = 0; i < n_state; i++) {
        if ((state[i] = c->in[i]) < 0) {
            for (int k = 0; k < i; k++)
                rt_value_unhold(s, state[k]);
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (Scan): state input %d is empty", c->name, i);
        }
        rt_value_hold(s, state[i]);
    }
    struct scan_lists scans = { .n = n_scan_out };
    enum dtrx_status st = scan_run(s, c, body, c->name, n_state, state, n_scan, c->in + n_state, in_axes, in_dirs,
                                   steps, steps, &scans);
    st = finish_carried(s, c, state, n_state, st);
    for (int k = 0; k < n_scan_out; k++) {
        int out = c->out[n_state + k];
        int rank = scans.count && out >= 0 ? s->values[scans.ids[k]]->t.rank + 1 : 1;
        if (out_axes[k] < 0)
            out_axes[k] += rank;
    }
    enum dtrx_status st2 = lists_stack(s, c, &scans, n_state, out_axes, out_dirs);
    return st ? st : st2;
}

/* Scan-8's batched form: inputs (sequence_lens, states..., scans...), every
 * state and scan input with the batch on axis 0, scan inputs with their
 * steps on axis 1. Each batch entry is its own scan over its slices (Gather),
 * of sequence_lens[b] steps; its scan outputs are padded with zeros to the
 * longest sequence, then everything is stacked along the batch (Unsqueeze,
 * Concat). All of it is recorded calls, so training differentiates it as it
 * does the later Scans. */
static enum dtrx_status exec_scan8(struct dtrx_session *s, struct rt_call *c)
{
    const struct onnx_node *n = c->node;
    const struct onnx_graph *body = graph_attr(c, "body");
    int n_scan = (int)onnx_node_attr_int(n, "num_scan_inputs", 1);
    int n_state = n->n_inputs - 1 - n_scan, n_scan_out = n->n_outputs - n_state;
    if (n_state < 0 || n_scan_out < 0 || n->n_inputs > SCAN_MAX_IO || n->n_outputs > SCAN_MAX_IO)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (Scan): %d inputs and %d outputs do not fit num_scan_inputs %d",
                       c->name, n->n_inputs, n->n_outputs, n_scan);
    int64_t dirs[SCAN_MAX_IO] = { 0 }, axes[SCAN_MAX_IO] = { 0 };
    onnx_node_attr_ints(n, "directions", dirs, SCAN_MAX_IO);
    const int *states = c->in + 1, *xs = c->in + 1 + n_state;
    int64_t batch = -1, length = -1;
    for (int j = 0; j < n_scan; j++) {
        if (xs[j] < 0 || s->values[xs[j]]->list.container)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (Scan): scan input %d must be a tensor", c->name, j);
        const struct tensor *t = &s->values[xs[j]]->t;
        char shape[128];
        if (t->rank < 2)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (Scan): scan input %d is %s; opset 8 needs [batch, sequence, "
                           "...]", c->name, j, tensor_describe(t, shape, sizeof shape));
        if (batch >= 0 && (t->dims[0] != batch || t->dims[1] != length))
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (Scan): scan input %d is %s, another [%lld, %lld, ...]",
                           c->name, j, tensor_describe(t, shape, sizeof shape), (long long)batch, (long long)length);
        batch = t->dims[0];
        length = t->dims[1];
    }
    for (int i = 0; i < n_state; i++) {
        if (states[i] < 0 || s->values[states[i]]->list.container)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (Scan): state input %d must be a tensor", c->name, i);
        const struct tensor *t = &s->values[states[i]]->t;
        char shape[128];
        if (t->rank < 1 || t->dims[0] != batch)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (Scan): state input %d is %s; opset 8 needs the batch of %lld "
                           "on axis 0", c->name, i, tensor_describe(t, shape, sizeof shape), (long long)batch);
    }
    int64_t *lens = calloc((size_t)batch + 1, sizeof(int64_t));
    if (!lens)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    enum dtrx_status st = DTRX_OK;
    for (int64_t b = 0; b < batch; b++)
        lens[b] = length;
    if (c->in[0] >= 0) {
        struct rt_value *v = s->values[c->in[0]];
        char shape[128];
        if (v->list.container || (v->t.dtype != ONNX_DTYPE_INT64 && v->t.dtype != ONNX_DTYPE_INT32) ||
            v->t.rank != 1 || v->t.dims[0] != batch)
            st = rt_fail(DTRX_ERR_INPUT, "node '%s' (Scan): sequence_lens must be int64[%lld], not %s", c->name,
                         (long long)batch, v->list.container ? container_name(v->list.container)
                                                        : tensor_describe(&v->t, shape, sizeof shape));
        void *host = st ? NULL : malloc(sizeof(int64_t) * (size_t)(batch + 1));
        if (!st && !host)
            st = rt_fail(DTRX_ERR_BUDGET, "out of host memory");
        if (!st)
            st = s->memory->read(s, v, host);
        struct tensor h = v->t;
        h.data = host;
        for (int64_t b = 0; !st && b < batch; b++) {
            lens[b] = tensor_get_int(&h, b);
            if (lens[b] < 0 || lens[b] > length)
                st = rt_fail(DTRX_ERR_INPUT, "node '%s' (Scan): sequence_lens[%lld] is %lld; expected 0..%lld",
                             c->name, (long long)b, (long long)lens[b], (long long)length);
        }
        free(host);
    }
    /* finals: [batch][state]; per_step: [batch][step][scan output]. */
    struct scan_lists finals = { .n = n_state };
    struct scan_lists *per_batch = calloc((size_t)batch + 1, sizeof *per_batch);
    if (!st && !per_batch)
        st = rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    int64_t b = 0;
    for (; !st && b < batch; b++) {
        per_batch[b].n = n_scan_out;
        char prefix[512];
        snprintf(prefix, sizeof prefix, "%s/%lld", c->name, (long long)b);
        int index = const_i64(s, 0, 1, &b, prefix);
        int state[SCAN_MAX_IO], slices[SCAN_MAX_IO], n_state_made = 0, n_slices = 0;
        if (index < 0)
            st = DTRX_ERR_BUDGET;
        for (; !st && n_state_made < n_state; n_state_made++) {
            int in2[2] = { states[n_state_made], index }, out[1] = { -1 };
            st = emit_run(s, "Gather", NULL, 0, 2, in2, 1, out, prefix);
            state[n_state_made] = out[0];
            if (st)
                break;
        }
        for (; !st && n_slices < n_scan; n_slices++) {
            int in2[2] = { xs[n_slices], index }, out[1] = { -1 };
            st = emit_run(s, "Gather", NULL, 0, 2, in2, 1, out, prefix);
            slices[n_slices] = out[0];
            if (st)
                break;
        }
        if (!st)
            st = scan_run(s, c, body, prefix, n_state, state, n_scan, slices, axes, dirs, lens[b], length,
                          &per_batch[b]);
        if (!st)
            st = lists_add(&finals, state);
        if (st)
            for (int i = 0; i < n_state_made; i++)
                if (state[i] >= 0)
                    rt_value_unhold(s, state[i]);
        for (int j = 0; j < n_slices; j++)
            if (slices[j] >= 0)
                rt_value_unhold(s, slices[j]);
        if (index >= 0)
            rt_value_unhold(s, index);
    }
    /* Every batch entry's scan output k: its steps stacked, then zeros up to
     * the longest sequence (in the element shape of an entry with a step). */
    struct scan_lists outs = { .n = n_scan_out };
    int64_t filled = -1;
    for (int64_t e = 0; !st && e < batch; e++)
        if (per_batch[e].count)
            filled = e;
    int row[SCAN_MAX_IO];
    for (int64_t e = 0; !st && filled >= 0 && e < batch; e++) {
        int k = 0;
        for (; !st && k < n_scan_out; k++) {
            struct tensor elem = s->values[per_batch[filled].ids[k]]->t;
            row[k] = -1;
            st = stack_padded(s, c, &per_batch[e], k, length, &elem, &row[k]);
        }
        if (!st)
            st = lists_add(&outs, row);
        if (st)
            for (int j = 0; j < k; j++)
                if (row[j] >= 0)
                    rt_value_unhold(s, row[j]);
    }
    for (int64_t e = 0; per_batch && e < batch; e++)
        lists_release(s, &per_batch[e]);
    free(per_batch);
    free(lens);
    if (st) {
        lists_release(s, &finals);
        lists_release(s, &outs);
        return st;
    }
    st = lists_stack(s, c, &finals, 0, NULL, NULL);
    if (filled >= 0) {
        enum dtrx_status st2 = lists_stack(s, c, &outs, n_state, NULL, NULL);
        return st ? st : st2;
    }
    for (int k = 0; !st && k < n_scan_out; k++)   /* no step anywhere: an empty tensor, as Scan-9 gives */
        st = join(s, c, c->out[n_state + k], NULL, 0, 0, 1);
    return st;
}

static enum dtrx_status exec_scan(struct dtrx_session *s, struct rt_call *c)
{
    return c->version < 9 ? exec_scan8(s, c) : exec_scan9(s, c);
}

/* ---- sequences and optionals -------------------------------------------- */

static enum dtrx_status need_sequence(struct dtrx_session *s, const struct rt_call *c, int id)
{
    if (id < 0 || s->values[id]->list.container != RT_SEQUENCE)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): input must be a sequence, not a %s", c->name, c->def->name,
                       id < 0 ? "missing value" : container_name(s->values[id]->list.container));
    return DTRX_OK;
}

/* A position into a sequence of n elements (negative from the end);
 * `insert` allows n itself. */
static enum dtrx_status read_position(struct dtrx_session *s, const struct rt_call *c, int id, int n, int insert,
                                      int64_t dflt, int *pos)
{
    int64_t p = dflt;
    if (id >= 0) {
        enum dtrx_status st = read_scalar(s, c, id, "the position", 0, &p);
        if (st)
            return st;
        if (p < 0)
            p += n;
    }
    if (p < 0 || p > n - (insert ? 0 : 1))
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): position %lld is out of range for a sequence of %d", c->name,
                       c->def->name, (long long)p, n);
    *pos = (int)p;
    return DTRX_OK;
}

static enum dtrx_status exec_sequence_empty(struct dtrx_session *s, struct rt_call *c)
{
    return container_set(s, c->out[0], RT_SEQUENCE, 0, NULL);
}

static enum dtrx_status exec_sequence_construct(struct dtrx_session *s, struct rt_call *c)
{
    int n = c->node ? c->node->n_inputs : c->n_in;
    for (int i = 0; i < n; i++)
        if (c->in[i] < 0 || s->values[c->in[i]]->list.container)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (SequenceConstruct): input %d must be a tensor", c->name, i);
    return container_set(s, c->out[0], RT_SEQUENCE, n, c->in);
}

static enum dtrx_status exec_sequence_insert(struct dtrx_session *s, struct rt_call *c)
{
    enum dtrx_status st = need_sequence(s, c, c->in[0]);
    const struct rt_value *seq = s->values[c->in[0]];
    int pos = 0;
    if (!st && (c->in[1] < 0 || s->values[c->in[1]]->list.container))
        st = rt_fail(DTRX_ERR_INPUT, "node '%s' (SequenceInsert): the inserted value must be a tensor", c->name);
    if (!st)
        st = read_position(s, c, c->n_in > 2 ? c->in[2] : -1, seq->list.n_elems, 1, seq->list.n_elems, &pos);
    if (st)
        return st;
    int *elems = malloc(sizeof(int) * (size_t)(seq->list.n_elems + 1));
    if (!elems)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    memcpy(elems, seq->list.elems, sizeof(int) * (size_t)pos);
    elems[pos] = c->in[1];
    memcpy(elems + pos + 1, seq->list.elems + pos, sizeof(int) * (size_t)(seq->list.n_elems - pos));
    st = container_set(s, c->out[0], RT_SEQUENCE, seq->list.n_elems + 1, elems);
    free(elems);
    return st;
}

static enum dtrx_status exec_sequence_erase(struct dtrx_session *s, struct rt_call *c)
{
    enum dtrx_status st = need_sequence(s, c, c->in[0]);
    int pos = 0;
    if (!st)
        st = read_position(s, c, c->n_in > 1 ? c->in[1] : -1, s->values[c->in[0]]->list.n_elems, 0,
                           s->values[c->in[0]]->list.n_elems - 1, &pos);
    if (st)
        return st;
    const struct rt_value *seq = s->values[c->in[0]];
    int *elems = malloc(sizeof(int) * (size_t)(seq->list.n_elems + 1));
    if (!elems)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    memcpy(elems, seq->list.elems, sizeof(int) * (size_t)pos);
    memcpy(elems + pos, seq->list.elems + pos + 1, sizeof(int) * (size_t)(seq->list.n_elems - pos - 1));
    st = container_set(s, c->out[0], RT_SEQUENCE, seq->list.n_elems - 1, elems);
    free(elems);
    return st;
}

static enum dtrx_status exec_sequence_at(struct dtrx_session *s, struct rt_call *c)
{
    enum dtrx_status st = need_sequence(s, c, c->in[0]);
    int pos = 0;
    if (!st)
        st = read_position(s, c, c->in[1], s->values[c->in[0]]->list.n_elems, 0, 0, &pos);
    return st ? st : assign(s, c, s->values[c->in[0]]->list.elems[pos], c->out[0]);
}

static enum dtrx_status exec_sequence_length(struct dtrx_session *s, struct rt_call *c)
{
    enum dtrx_status st = need_sequence(s, c, c->in[0]);
    if (st)
        return st;
    int64_t n = s->values[c->in[0]]->list.n_elems;
    int id = const_i64(s, 0, 1, &n, c->name);
    if (id < 0)
        return DTRX_ERR_BUDGET;
    st = assign(s, c, id, c->out[0]);
    rt_value_unhold(s, id);
    return st;
}

static enum dtrx_status exec_split_to_sequence(struct dtrx_session *s, struct rt_call *c)
{
    int x = c->in[0];
    if (x < 0 || s->values[x]->list.container)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (SplitToSequence): input must be a tensor", c->name);
    const struct tensor *xt = &s->values[x]->t;
    int64_t axis = onnx_node_attr_int(c->node, "axis", 0);
    int keepdims = (int)onnx_node_attr_int(c->node, "keepdims", 1);
    if (axis < 0)
        axis += xt->rank;
    if (axis < 0 || axis >= xt->rank)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (SplitToSequence): axis out of range for rank %d", c->name, xt->rank);
    int64_t len = xt->dims[axis];
    int64_t *sizes = malloc(sizeof(int64_t) * (size_t)(len + 1));
    if (!sizes)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    int count = 0;
    enum dtrx_status st = DTRX_OK;
    int split = c->n_in > 1 ? c->in[1] : -1;
    if (split < 0) {
        for (; count < len; count++)
            sizes[count] = 1;
    } else {
        const struct tensor *sp = &s->values[split]->t;
        int64_t n = tensor_numel(sp);
        int64_t *host = malloc(sizeof(int64_t) * (size_t)(n + 1));
        struct tensor h = *sp;
        h.data = host;
        if (!host || s->values[split]->list.container || (sp->dtype != ONNX_DTYPE_INT64 && sp->dtype != ONNX_DTYPE_INT32))
            st = rt_fail(DTRX_ERR_INPUT, "node '%s' (SplitToSequence): split must be an int32 or int64 tensor", c->name);
        if (!st)
            st = s->memory->read(s, s->values[split], host);
        if (!st && sp->rank == 0) {
            int64_t chunk = tensor_get_int(&h, 0);
            if (chunk <= 0)
                st = rt_fail(DTRX_ERR_INPUT, "node '%s' (SplitToSequence): split must be positive", c->name);
            for (int64_t done = 0; !st && done < len; done += chunk)
                sizes[count++] = done + chunk <= len ? chunk : len - done;
        } else if (!st) {
            int64_t total = 0;
            for (int64_t i = 0; i < n && i <= len; i++) {
                sizes[count++] = tensor_get_int(&h, i);
                total += sizes[count - 1];
            }
            if (total != len || n > len)
                st = rt_fail(DTRX_ERR_INPUT, "node '%s' (SplitToSequence): split sizes add up to %lld, axis has %lld",
                             c->name, (long long)total, (long long)len);
        }
        free(host);
    }
    int *parts = calloc((size_t)count + 1, sizeof(int));
    int sizes_id = -1, axes_id = -1;
    if (!st && !parts)
        st = rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    if (!st && count) {
        for (int i = 0; i < count; i++)
            parts[i] = -1;
        struct onnx_attr attr = { .name = "axis", .type = ONNX_ATTR_INT, .i = axis };
        if ((sizes_id = const_i64(s, 1, count, sizes, c->name)) < 0)
            st = DTRX_ERR_BUDGET;
        int in2[2] = { x, sizes_id };
        if (!st)
            st = emit_run(s, "Split", &attr, 1, 2, in2, count, parts, c->name);
        if (!st && split < 0 && !keepdims) {
            if ((axes_id = const_i64(s, 1, 1, &axis, c->name)) < 0)
                st = DTRX_ERR_BUDGET;
            for (int i = 0; !st && i < count; i++) {
                int sq_in[2] = { parts[i], axes_id }, out[1] = { -1 };
                st = emit_run(s, "Squeeze", NULL, 0, 2, sq_in, 1, out, c->name);
                rt_value_unhold(s, parts[i]);
                parts[i] = out[0];
            }
        }
    }
    if (!st)
        st = container_set(s, c->out[0], RT_SEQUENCE, count, parts);
    for (int i = 0; parts && i < count; i++)
        if (parts[i] >= 0)
            rt_value_unhold(s, parts[i]);
    if (sizes_id >= 0)
        rt_value_unhold(s, sizes_id);
    if (axes_id >= 0)
        rt_value_unhold(s, axes_id);
    free(parts);
    free(sizes);
    return st;
}

static enum dtrx_status exec_concat_from_sequence(struct dtrx_session *s, struct rt_call *c)
{
    enum dtrx_status st = need_sequence(s, c, c->in[0]);
    if (st)
        return st;
    const struct rt_value *seq = s->values[c->in[0]];
    if (!seq->list.n_elems)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (ConcatFromSequence): the sequence is empty", c->name);
    int64_t axis = onnx_node_attr_int(c->node, "axis", 0);
    int new_axis = (int)onnx_node_attr_int(c->node, "new_axis", 0);
    return join(s, c, c->out[0], seq->list.elems, seq->list.n_elems, axis, new_axis);
}

/* SequenceMap: the body once per element of the first sequence, reading
 * element t of every sequence input and the whole of every tensor input;
 * output k is the sequence of the body's output k. */
static enum dtrx_status exec_sequence_map(struct dtrx_session *s, struct rt_call *c)
{
    const struct onnx_node *n = c->node;
    const struct onnx_graph *body = graph_attr(c, "body");
    enum dtrx_status st = need_sequence(s, c, c->in[0]);
    if (st)
        return st;
    int count = s->values[c->in[0]]->list.n_elems;
    for (int j = 1; j < n->n_inputs; j++) {
        const struct rt_value *v = c->in[j] >= 0 ? s->values[c->in[j]] : NULL;
        if (!v)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (SequenceMap): input %d is empty", c->name, j);
        if (v->list.container == RT_OPTIONAL)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (SequenceMap): input %d is an optional; expected a tensor or "
                           "a sequence", c->name, j);
        if (v->list.container == RT_SEQUENCE && v->list.n_elems != count)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (SequenceMap): input %d is a sequence of %d, input 0 one of %d",
                           c->name, j, v->list.n_elems, count);
    }
    int n_out = n->n_outputs;
    int *inputs = calloc((size_t)n->n_inputs + 1, sizeof(int));
    int *made = calloc((size_t)n_out * (size_t)count + 1, sizeof(int));   /* [output][element] */
    int done = 0;
    if (!inputs || !made)
        st = rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    for (; !st && done < count; done++) {
        for (int j = 0; j < n->n_inputs; j++) {
            const struct rt_value *v = s->values[c->in[j]];
            inputs[j] = v->list.container == RT_SEQUENCE ? v->list.elems[done] : c->in[j];
        }
        char label[512];
        snprintf(label, sizeof label, "%s/%d", c->name, done);
        struct instance in;
        if ((st = instance_exec(s, c, body, inputs, label, &in)))
            break;
        for (int k = 0; k < n_out; k++) {
            made[(size_t)k * (size_t)count + (size_t)done] = in.out[k];   /* the instance's hold passes to us */
            if (!st && s->values[in.out[k]]->list.container)
                st = rt_fail(DTRX_ERR_INPUT, "node '%s' (SequenceMap): body output %d is a %s; expected a tensor",
                             c->name, k, container_name(s->values[in.out[k]]->list.container));
        }
        instance_free(&in);
        if (st) {
            done++;
            break;
        }
    }
    for (int k = 0; !st && k < n_out; k++)
        if (c->out[k] >= 0)
            st = container_set(s, c->out[k], RT_SEQUENCE, count, made + (size_t)k * (size_t)count);
    for (int k = 0; made && k < n_out; k++)
        for (int t = 0; t < done; t++)
            rt_value_unhold(s, made[(size_t)k * (size_t)count + (size_t)t]);
    free(made);
    free(inputs);
    return st;
}

static enum dtrx_status exec_optional(struct dtrx_session *s, struct rt_call *c)
{
    int x = c->n_in > 0 ? c->in[0] : -1;
    return container_set(s, c->out[0], RT_OPTIONAL, x >= 0, &x);
}

static enum dtrx_status exec_optional_has_element(struct dtrx_session *s, struct rt_call *c)
{
    int x = c->n_in > 0 ? c->in[0] : -1;
    int has = x >= 0 && (s->values[x]->list.container != RT_OPTIONAL || s->values[x]->list.n_elems > 0);
    int id = const_bool(s, has, c->name);
    if (id < 0)
        return DTRX_ERR_BUDGET;
    enum dtrx_status st = assign(s, c, id, c->out[0]);
    rt_value_unhold(s, id);
    return st;
}

static enum dtrx_status exec_optional_get_element(struct dtrx_session *s, struct rt_call *c)
{
    const struct rt_value *v = s->values[c->in[0]];
    if (v->list.container != RT_OPTIONAL)
        return assign(s, c, c->in[0], c->out[0]);
    if (!v->list.n_elems)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (OptionalGetElement): the optional is empty", c->name);
    return assign(s, c, v->list.elems[0], c->out[0]);
}

/* ---- FlexAttention -------------------------------------------------------- */

/* One step of a chain: out[0] (made here, held once) = op(in). */
static enum dtrx_status flex_step(struct dtrx_session *s, const struct rt_call *c, const char *op,
                                  const struct onnx_attr *attrs, int n_attrs, int n_in, const int *in, int *out)
{
    *out = -1;
    return emit_run(s, op, attrs, n_attrs, n_in, in, 1, out, c->name);
}

/* Replaces *id (held) by the result of op(*id, extra...), letting *id go. */
static enum dtrx_status flex_then(struct dtrx_session *s, const struct rt_call *c, const char *op,
                                  const struct onnx_attr *attrs, int n_attrs, int *id, int extra)
{
    int in[2] = { *id, extra }, out;
    enum dtrx_status st = flex_step(s, c, op, attrs, n_attrs, extra >= 0 ? 2 : 1, in, &out);
    rt_value_unhold(s, *id);
    *id = st ? -1 : out;
    return st;
}

static enum dtrx_status flex_cast(struct dtrx_session *s, const struct rt_call *c, int *id, int dtype)
{
    if (s->values[*id]->t.dtype == dtype)
        return DTRX_OK;
    struct onnx_attr to = { .name = "to", .type = ONNX_ATTR_INT, .i = dtype };
    return flex_then(s, c, "Cast", &to, 1, id, -1);
}

/* K or V [B, Hkv, S, D] with each head repeated `group` times in place:
 * Unsqueeze to [B, Hkv, 1, S, D], Expand, Reshape to [B, Hkv*group, S, D]. */
static enum dtrx_status flex_repeat(struct dtrx_session *s, const struct rt_call *c, int *id, int64_t group)
{
    const struct tensor *t = &s->values[*id]->t;
    int64_t axis = 2, big[5] = { t->dims[0], t->dims[1], group, t->dims[2], t->dims[3] };
    int64_t flat[4] = { t->dims[0], t->dims[1] * group, t->dims[2], t->dims[3] };
    int ax = const_i64(s, 1, 1, &axis, c->name), ex = const_i64(s, 1, 5, big, c->name);
    int rs = const_i64(s, 1, 4, flat, c->name);
    enum dtrx_status st = ax < 0 || ex < 0 || rs < 0 ? DTRX_ERR_BUDGET : DTRX_OK;
    if (!st)
        st = flex_then(s, c, "Unsqueeze", NULL, 0, id, ax);
    if (!st)
        st = flex_then(s, c, "Expand", NULL, 0, id, ex);
    if (!st)
        st = flex_then(s, c, "Reshape", NULL, 0, id, rs);
    for (int k = 0; k < 3; k++) {
        int h = k == 0 ? ax : k == 1 ? ex : rs;
        if (h >= 0)
            rt_value_unhold(s, h);
    }
    return st;
}

/* Runs modifier subgraph `attr` (if the node has one) on *id, which it
 * replaces; the result must keep the input's dtype and shape. */
static enum dtrx_status flex_mod(struct dtrx_session *s, const struct rt_call *c, const char *attr, int *id)
{
    const struct onnx_graph *g = graph_attr(c, attr);
    if (!g)
        return DTRX_OK;
    char label[512];
    snprintf(label, sizeof label, "%s/%s", c->name, attr);
    struct instance in;
    enum dtrx_status st = instance_exec(s, c, g, id, label, &in);
    if (st)
        return st;
    const struct tensor *a = &s->values[*id]->t, *b = &s->values[in.out[0]]->t;
    if (s->values[in.out[0]]->list.container || b->dtype != a->dtype || !tensor_same_shape(a, b)) {
        char da[128], db[128];
        st = rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): subgraph %s turns %s into %s; it must keep the dtype and "
                     "shape", c->name, c->def->name, attr, tensor_describe(a, da, sizeof da),
                     tensor_describe(b, db, sizeof db));
    }
    rt_value_unhold(s, *id);
    *id = in.out[0];
    instance_free(&in);
    if (st) {
        rt_value_unhold(s, *id);
        *id = -1;
    }
    return st;
}

static enum dtrx_status exec_flex_attention(struct dtrx_session *s, struct rt_call *c)
{
    const struct flex_attention_params *p = c->params;
    const struct tensor *q = &s->values[c->in[0]]->t, *k = &s->values[c->in[1]]->t;
    const struct tensor *v = &s->values[c->in[2]]->t;
    char dq[128], dk[128], dv[128];
    tensor_describe(q, dq, sizeof dq);
    tensor_describe(k, dk, sizeof dk);
    tensor_describe(v, dv, sizeof dv);
    for (int i = 0; i < 3; i++)
        if (s->values[c->in[i]]->list.container)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (FlexAttention): input %d is not a tensor", c->name, i);
    if (q->rank != 4 || k->rank != 4 || v->rank != 4)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (FlexAttention): Q %s, K %s and V %s must be rank 4", c->name,
                       dq, dk, dv);
    if ((q->dtype != ONNX_DTYPE_FLOAT && q->dtype != ONNX_DTYPE_DOUBLE) || k->dtype != q->dtype
        || v->dtype != q->dtype)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (FlexAttention): Q %s, K %s and V %s must share one float or "
                       "double type (float16 and bfloat16 models run in float32)", c->name, dq, dk, dv);
    if (k->dims[0] != q->dims[0] || v->dims[0] != q->dims[0] || k->dims[3] != q->dims[3]
        || v->dims[1] != k->dims[1] || v->dims[2] != k->dims[2])
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (FlexAttention): Q %s, K %s, V %s do not fit (B, Hq, L, E), "
                       "(B, Hkv, S, E), (B, Hkv, S, Ev)", c->name, dq, dk, dv);
    int64_t hq = q->dims[1], hkv = k->dims[1];
    if (hkv <= 0 || hq % hkv)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (FlexAttention): Q's %lld heads are not a multiple of K's %lld",
                       c->name, (long long)hq, (long long)hkv);
    int in_dtype = q->dtype;
    int sm_dtype = p->softmax_precision == ONNX_DTYPE_DOUBLE ? ONNX_DTYPE_DOUBLE
                   : p->softmax_precision ? ONNX_DTYPE_FLOAT : in_dtype;
    /* As the reference: scale in float32, its square root applied to Q and K. */
    double scale = p->has_scale ? (double)p->scale : 1.0 / sqrt((double)q->dims[3]);
    float root_f = sqrtf((float)scale);
    double root_d = root_f;
    struct tensor rt = { .dtype = in_dtype, .rank = 0,
                         .data = in_dtype == ONNX_DTYPE_DOUBLE ? (void *)&root_d : (void *)&root_f };
    int root = constant_held(s, &rt, c->name);
    if (root < 0)
        return DTRX_ERR_BUDGET;
    int qs = -1, ks = -1, vv = c->in[2], scores = -1, out = -1;
    rt_value_hold(s, vv);
    int in2[2] = { c->in[0], root };
    enum dtrx_status st = flex_step(s, c, "Mul", NULL, 0, 2, in2, &qs);
    if (!st) {
        in2[0] = c->in[1];
        st = flex_step(s, c, "Mul", NULL, 0, 2, in2, &ks);
    }
    rt_value_unhold(s, root);
    if (!st && hq != hkv)
        st = flex_repeat(s, c, &ks, hq / hkv);
    if (!st && hq != hkv)
        st = flex_repeat(s, c, &vv, hq / hkv);
    /* Einsum, not MatMul: it takes double as well, and these two patterns
     * are one batched GEMM each, K read transposed in place. */
    static char qk_eq[] = "bhld,bhsd->bhls", pv_eq[] = "bhls,bhsd->bhld";
    struct onnx_attr qk = { .name = "equation", .type = ONNX_ATTR_STRING, .s = qk_eq, .s_len = sizeof qk_eq - 1 };
    struct onnx_attr pv = { .name = "equation", .type = ONNX_ATTR_STRING, .s = pv_eq, .s_len = sizeof pv_eq - 1 };
    if (!st) {
        int mm[2] = { qs, ks };
        st = flex_step(s, c, "Einsum", &qk, 1, 2, mm, &scores);
    }
    if (!st)
        st = flex_cast(s, c, &scores, sm_dtype);
    if (!st)
        st = flex_mod(s, c, "score_mod", &scores);
    if (!st) {
        struct onnx_attr a = { .name = "axis", .type = ONNX_ATTR_INT, .i = -1 };
        st = flex_then(s, c, "Softmax", &a, 1, &scores, -1);
    }
    if (!st)
        st = flex_mod(s, c, "prob_mod", &scores);
    if (!st)
        st = flex_cast(s, c, &vv, sm_dtype);
    if (!st) {
        int mm[2] = { scores, vv };
        st = flex_step(s, c, "Einsum", &pv, 1, 2, mm, &out);
    }
    if (!st)
        st = flex_cast(s, c, &out, in_dtype);
    if (!st)
        st = assign(s, c, out, c->out[0]);
    int held[5] = { qs, ks, vv, scores, out };
    for (int i = 0; i < 5; i++)
        if (held[i] >= 0)
            rt_value_unhold(s, held[i]);
    return st;
}

static enum dtrx_status exec_identity(struct dtrx_session *s, struct rt_call *c)
{
    return assign(s, c, c->in[0], c->out[0]);
}

static const struct {
    const char *op;
    enum dtrx_status (*exec)(struct dtrx_session *s, struct rt_call *c);
} control_ops[] = {
    { "If", exec_if },
    { "Loop", exec_loop },
    { "Scan", exec_scan },
    { "SequenceEmpty", exec_sequence_empty },
    { "SequenceConstruct", exec_sequence_construct },
    { "SequenceInsert", exec_sequence_insert },
    { "SequenceErase", exec_sequence_erase },
    { "SequenceAt", exec_sequence_at },
    { "SequenceLength", exec_sequence_length },
    { "SplitToSequence", exec_split_to_sequence },
    { "ConcatFromSequence", exec_concat_from_sequence },
    { "SequenceMap", exec_sequence_map },
    { "Optional", exec_optional },
    { "OptionalHasElement", exec_optional_has_element },
    { "OptionalGetElement", exec_optional_get_element },
    { "Identity", exec_identity },
    { "FlexAttention", exec_flex_attention },
};

enum dtrx_status rt_control_exec(struct dtrx_session *s, struct rt_call *c)
{
    for (size_t i = 0; i < sizeof control_ops / sizeof control_ops[0]; i++)
        if (!strcmp(c->def->name, control_ops[i].op)) {
            if (!c->node && c->def->runtime)
                return rt_fail(DTRX_ERR_INTERNAL, "'%s': %s needs its model node", c->name, c->def->name);
            return control_ops[i].exec(s, c);
        }
    return rt_fail(DTRX_ERR_INTERNAL, "node '%s': the runtime does not execute %s", c->name, c->def->name);
}
