/* runtime/control_seq.c — sequences and optionals: lists of values
 * (rt_value.list), each element held once while the list lives; the
 * operators rearrange lists and move tensors through Identity, Split and
 * Concat calls; SequenceMap instantiates its body once per element. See
 * control.c. */
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

/* ---- sequences and optionals -------------------------------------------- */

static enum dtrx_status need_sequence(struct dtrx_session *s, const struct rt_call *c, int id)
{
    if (id < 0 || s->values[id]->list.container != RT_SEQUENCE)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): input must be a sequence, not a %s", c->name, c->def->name,
                       id < 0 ? "missing value" : rt_ctl_container_name(s->values[id]->list.container));
    return DTRX_OK;
}

/* A position into a sequence of n elements (negative from the end);
 * `insert` allows n itself. */
static enum dtrx_status read_position(struct dtrx_session *s, const struct rt_call *c, int id, int n, int insert,
                                      int64_t dflt, int *pos)
{
    int64_t p = dflt;
    if (id >= 0) {
        enum dtrx_status st = rt_ctl_read_scalar(s, c, id, "the position", 0, &p);
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
    return rt_ctl_container_set(s, c->out[0], RT_SEQUENCE, 0, NULL);
}

static enum dtrx_status exec_sequence_construct(struct dtrx_session *s, struct rt_call *c)
{
    int n = c->node ? c->node->n_inputs : c->n_in;
    for (int i = 0; i < n; i++)
        if (c->in[i] < 0 || s->values[c->in[i]]->list.container)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (SequenceConstruct): input %d must be a tensor", c->name, i);
    return rt_ctl_container_set(s, c->out[0], RT_SEQUENCE, n, c->in);
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
    st = rt_ctl_container_set(s, c->out[0], RT_SEQUENCE, seq->list.n_elems + 1, elems);
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
    st = rt_ctl_container_set(s, c->out[0], RT_SEQUENCE, seq->list.n_elems - 1, elems);
    free(elems);
    return st;
}

static enum dtrx_status exec_sequence_at(struct dtrx_session *s, struct rt_call *c)
{
    enum dtrx_status st = need_sequence(s, c, c->in[0]);
    int pos = 0;
    if (!st)
        st = read_position(s, c, c->in[1], s->values[c->in[0]]->list.n_elems, 0, 0, &pos);
    return st ? st : rt_ctl_assign(s, c, s->values[c->in[0]]->list.elems[pos], c->out[0]);
}

static enum dtrx_status exec_sequence_length(struct dtrx_session *s, struct rt_call *c)
{
    enum dtrx_status st = need_sequence(s, c, c->in[0]);
    if (st)
        return st;
    int64_t n = s->values[c->in[0]]->list.n_elems;
    int id = rt_ctl_const_i64(s, 0, 1, &n, c->name);
    if (id < 0)
        return DTRX_ERR_BUDGET;
    st = rt_ctl_assign(s, c, id, c->out[0]);
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
        if ((sizes_id = rt_ctl_const_i64(s, 1, count, sizes, c->name)) < 0)
            st = DTRX_ERR_BUDGET;
        int in2[2] = { x, sizes_id };
        if (!st)
            st = rt_ctl_emit_run(s, "Split", &attr, 1, 2, in2, count, parts, c->name);
        if (!st && split < 0 && !keepdims) {
            if ((axes_id = rt_ctl_const_i64(s, 1, 1, &axis, c->name)) < 0)
                st = DTRX_ERR_BUDGET;
            for (int i = 0; !st && i < count; i++) {
                int sq_in[2] = { parts[i], axes_id }, out[1] = { -1 };
                st = rt_ctl_emit_run(s, "Squeeze", NULL, 0, 2, sq_in, 1, out, c->name);
                rt_value_unhold(s, parts[i]);
                parts[i] = out[0];
            }
        }
    }
    if (!st)
        st = rt_ctl_container_set(s, c->out[0], RT_SEQUENCE, count, parts);
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
    return rt_ctl_join(s, c, c->out[0], seq->list.elems, seq->list.n_elems, axis, new_axis);
}

/* SequenceMap: the body once per element of the first sequence, reading
 * element t of every sequence input and the whole of every tensor input;
 * output k is the sequence of the body's output k. */
static enum dtrx_status exec_sequence_map(struct dtrx_session *s, struct rt_call *c)
{
    const struct onnx_node *n = c->node;
    const struct onnx_graph *body = rt_ctl_graph_attr(c, "body");
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
        struct rt_ctl_instance in;
        if ((st = rt_ctl_instance_exec(s, c, body, inputs, label, &in)))
            break;
        for (int k = 0; k < n_out; k++) {
            made[(size_t)k * (size_t)count + (size_t)done] = in.out[k];   /* the instance's hold passes to us */
            if (!st && s->values[in.out[k]]->list.container)
                st = rt_fail(DTRX_ERR_INPUT, "node '%s' (SequenceMap): body output %d is a %s; expected a tensor",
                             c->name, k, rt_ctl_container_name(s->values[in.out[k]]->list.container));
        }
        rt_ctl_instance_free(&in);
        if (st) {
            done++;
            break;
        }
    }
    for (int k = 0; !st && k < n_out; k++)
        if (c->out[k] >= 0)
            st = rt_ctl_container_set(s, c->out[k], RT_SEQUENCE, count, made + (size_t)k * (size_t)count);
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
    return rt_ctl_container_set(s, c->out[0], RT_OPTIONAL, x >= 0, &x);
}

static enum dtrx_status exec_optional_has_element(struct dtrx_session *s, struct rt_call *c)
{
    int x = c->n_in > 0 ? c->in[0] : -1;
    int has = x >= 0 && (s->values[x]->list.container != RT_OPTIONAL || s->values[x]->list.n_elems > 0);
    int id = rt_ctl_const_bool(s, has, c->name);
    if (id < 0)
        return DTRX_ERR_BUDGET;
    enum dtrx_status st = rt_ctl_assign(s, c, id, c->out[0]);
    rt_value_unhold(s, id);
    return st;
}

static enum dtrx_status exec_optional_get_element(struct dtrx_session *s, struct rt_call *c)
{
    const struct rt_value *v = s->values[c->in[0]];
    if (v->list.container != RT_OPTIONAL)
        return rt_ctl_assign(s, c, c->in[0], c->out[0]);
    if (!v->list.n_elems)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (OptionalGetElement): the optional is empty", c->name);
    return rt_ctl_assign(s, c, v->list.elems[0], c->out[0]);
}

const struct rt_ctl_op rt_ctl_seq_ops[] = {
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
};
const int rt_ctl_seq_n_ops = (int)(sizeof rt_ctl_seq_ops / sizeof rt_ctl_seq_ops[0]);
