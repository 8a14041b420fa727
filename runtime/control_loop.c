/* runtime/control_loop.c — If, Loop and Scan (opsets 8 and 9+): each run
 * of the body instantiates its subgraph (control_util.h), so the tape holds
 * the calls that actually ran; loop-carried values pass through Identity
 * views, scan inputs are sliced with Gather and scan outputs stacked with
 * Unsqueeze and Concat. See control.c. */
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

/* A loop whose condition never turns false is refused, not run forever. */
#define CONTROL_MAX_ITERATIONS 10000000LL
/* ---- If, Loop, Scan ------------------------------------------------------ */

static enum dtrx_status exec_if(struct dtrx_session *s, struct rt_call *c)
{
    int64_t cond = 0;
    enum dtrx_status st = rt_ctl_read_scalar(s, c, c->in[0], "the condition", 1, &cond);
    if (st)
        return st;
    const struct onnx_graph *g = rt_ctl_graph_attr(c, cond ? "then_branch" : "else_branch");
    char label[512];
    snprintf(label, sizeof label, "%s/%s", c->name, cond ? "then" : "else");
    struct rt_ctl_instance in;
    if ((st = rt_ctl_instance_exec(s, c, g, NULL, label, &in)))
        return st;
    for (int j = 0; j < in.n_out && !st; j++)
        st = rt_ctl_assign(s, c, in.out[j], j < c->n_out ? c->out[j] : -1);
    for (int j = 0; j < in.n_out; j++)
        rt_value_unhold(s, in.out[j]);
    rt_ctl_instance_free(&in);
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
        st = rt_ctl_join(s, c, out, col, l->count, axes ? axes[k] : 0, 1);
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
    if ((axes = rt_ctl_const_i64(s, 1, 1, &zero_axis, c->name)) < 0)
        st = DTRX_ERR_BUDGET;
    for (; !st && made < l->count; made++) {
        int in[2] = { l->ids[(size_t)made * (size_t)l->n + (size_t)k], axes }, out[1] = { -1 };
        st = rt_ctl_emit_run(s, "Unsqueeze", NULL, 0, 2, in, 1, out, c->name);
        parts[made] = out[0];
        if (st)
            break;
    }
    if (!st && pad.dims[0] > 0) {
        size_t bytes = tensor_size_bytes(&pad);
        if (!(zeros = calloc(1, bytes ? bytes : 1)))
            st = rt_fail(DTRX_ERR_BUDGET, "out of host memory");
        pad.data = zeros;
        if (!st && (parts[made] = rt_ctl_constant_held(s, &pad, c->name)) < 0)
            st = DTRX_ERR_BUDGET;
        if (!st)
            made++;
    }
    if (!st) {
        struct onnx_attr attr = { .name = "axis", .type = ONNX_ATTR_INT, .i = 0 };
        st = rt_ctl_emit_run(s, "Concat", &attr, 1, made, parts, 1, dst, c->name);
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
            st = rt_ctl_assign(s, c, carried[i], i < c->n_out ? c->out[i] : -1);
        if (carried[i] >= 0)
            rt_value_unhold(s, carried[i]);
    }
    return st;
}

static enum dtrx_status exec_loop(struct dtrx_session *s, struct rt_call *c)
{
    const struct onnx_node *n = c->node;
    const struct onnx_graph *body = rt_ctl_graph_attr(c, "body");
    int n_carried = n->n_inputs - 2;
    int64_t trip = 0, cond = 1;
    int has_trip = c->in[0] >= 0;
    enum dtrx_status st = DTRX_OK;
    if (has_trip && (st = rt_ctl_read_scalar(s, c, c->in[0], "the trip count M", 0, &trip)))
        return st;
    if (c->in[1] >= 0 && (st = rt_ctl_read_scalar(s, c, c->in[1], "the condition", 1, &cond)))
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
        inputs[0] = rt_ctl_const_i64(s, 0, 1, &it, label);
        inputs[1] = inputs[0] < 0 ? -1 : rt_ctl_const_bool(s, 1, label);
        if (inputs[1] < 0) {
            if (inputs[0] >= 0)
                rt_value_unhold(s, inputs[0]);
            st = DTRX_ERR_BUDGET;
            break;
        }
        struct rt_ctl_instance in;
        st = rt_ctl_instance_exec(s, c, body, inputs, label, &in);
        rt_value_unhold(s, inputs[0]);
        rt_value_unhold(s, inputs[1]);
        if (st)
            break;
        st = rt_ctl_read_scalar(s, c, in.out[0], "the body's condition output", 1, &cond);
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
        rt_ctl_instance_free(&in);
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
        if (!st && ((sizes = rt_ctl_const_i64(s, 1, (int)(steps + extra), sizes_v, c->name)) < 0 ||
                    (axes_ids[j] = rt_ctl_const_i64(s, 1, 1, &in_axes[j], c->name)) < 0))
            st = DTRX_ERR_BUDGET;
        free(sizes_v);
        int *mine = pieces + (size_t)j * (size_t)(steps + extra);
        struct onnx_attr axis = { .name = "axis", .type = ONNX_ATTR_INT, .i = in_axes[j] };
        int in2[2] = { xs[j], sizes };
        if (!st)
            st = rt_ctl_emit_run(s, "Split", &axis, 1, 2, in2, (int)(steps + extra), mine, c->name);
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
            st = rt_ctl_emit_run(s, "Squeeze", NULL, 0, 2, in2, 1, out, label);
            inputs[n_state + made] = out[0];
            rt_value_unhold(s, *piece);
            *piece = -1;
            if (st)
                break;
        }
        struct rt_ctl_instance in;
        if (!st)
            st = rt_ctl_instance_exec(s, c, body, inputs, label, &in);
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
        rt_ctl_instance_free(&in);
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
    const struct onnx_graph *body = rt_ctl_graph_attr(c, "body");
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
    const struct onnx_graph *body = rt_ctl_graph_attr(c, "body");
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
                         (long long)batch, v->list.container ? rt_ctl_container_name(v->list.container)
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
        int index = rt_ctl_const_i64(s, 0, 1, &b, prefix);
        int state[SCAN_MAX_IO], slices[SCAN_MAX_IO], n_state_made = 0, n_slices = 0;
        if (index < 0)
            st = DTRX_ERR_BUDGET;
        for (; !st && n_state_made < n_state; n_state_made++) {
            int in2[2] = { states[n_state_made], index }, out[1] = { -1 };
            st = rt_ctl_emit_run(s, "Gather", NULL, 0, 2, in2, 1, out, prefix);
            state[n_state_made] = out[0];
            if (st)
                break;
        }
        for (; !st && n_slices < n_scan; n_slices++) {
            int in2[2] = { xs[n_slices], index }, out[1] = { -1 };
            st = rt_ctl_emit_run(s, "Gather", NULL, 0, 2, in2, 1, out, prefix);
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
        st = rt_ctl_join(s, c, c->out[n_state + k], NULL, 0, 0, 1);
    return st;
}

static enum dtrx_status exec_scan(struct dtrx_session *s, struct rt_call *c)
{
    return c->version < 9 ? exec_scan8(s, c) : exec_scan9(s, c);
}

const struct rt_ctl_op rt_ctl_loop_ops[] = {
    { "If", exec_if },
    { "Loop", exec_loop },
    { "Scan", exec_scan },
};
const int rt_ctl_loop_n_ops = (int)(sizeof rt_ctl_loop_ops / sizeof rt_ctl_loop_ops[0]);
