/* runtime/values_io.c — graph inputs and outputs that are sequences or
 * optionals: bound as lists of input values, read back as deep host copies. */
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"
#include "runtime/emit.h"
#include "runtime/memory.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/strings.h"
#include "runtime/values.h"

void dtrx_value_clear(struct dtrx_value *v)
{
    if (!v)
        return;
    free(v->tensor.data);
    for (int i = 0; i < v->n_elems; i++)
        dtrx_value_clear(&v->elems[i]);
    free(v->elems);
    memset(v, 0, sizeof *v);
}

/* Drops what an input held before being bound again. */
static void input_clear(struct dtrx_session *s, struct rt_value *v)
{
    for (int i = 0; i < v->list.n_elems; i++)
        input_clear(s, s->values[v->list.elems[i]]);
    free(v->list.elems);
    v->list.elems = NULL;
    v->list.n_elems = 0;
    v->list.container = RT_TENSOR;
    rt_value_release(s, v);
}

/* Fills value `id` (an input-kind value) with `src`, making input-kind
 * values for the elements of a list. */
static enum dtrx_status value_fill(struct dtrx_session *s, int id, const struct dtrx_value *src, const char *name)
{
    if (src->kind == DTRX_VALUE_TENSOR) {
        struct rt_value *v = s->values[id];
        const struct dtrx_tensor *t = &src->tensor;
        if (t->rank < 0 || t->rank > DTRX_MAX_RANK || !onnx_dtype_size(t->dtype))
            return rt_fail(DTRX_ERR_INPUT, "input '%s': an element has an unsupported type or rank", name);
        v->t.dtype = t->dtype;
        v->t.rank = t->rank;
        memcpy(v->t.dims, t->dims, sizeof v->t.dims);
        void *strings;
        enum dtrx_status st = rt_strings_stable(s, t->dtype, t->data, tensor_numel(&v->t), &strings);
        if (!st)
            st = rt_value_alloc(s, v);
        if (!st)
            st = rt_to_device(s, v->t.data, strings ? strings : t->data, tensor_size_bytes(&v->t));
        free(strings);
        return st;
    }
    if (src->kind != DTRX_VALUE_SEQUENCE && src->kind != DTRX_VALUE_OPTIONAL)
        return rt_fail(DTRX_ERR_INPUT, "input '%s': unknown value kind %d", name, src->kind);
    if (src->kind == DTRX_VALUE_OPTIONAL && src->n_elems > 1)
        return rt_fail(DTRX_ERR_INPUT, "input '%s': an optional holds at most one value", name);
    int *elems = calloc((size_t)src->n_elems + 1, sizeof(int));
    if (!elems)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    struct rt_value *v = s->values[id];
    v->list.container = src->kind == DTRX_VALUE_SEQUENCE ? RT_SEQUENCE : RT_OPTIONAL;
    v->list.elems = elems;
    for (int i = 0; i < src->n_elems; i++) {
        int e = rt_value_new(s, name, RT_VALUE_INPUT);
        if (e < 0)
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
        v = s->values[id];
        v->list.elems[v->list.n_elems++] = e;
        s->values[e]->use.remaining = 1;   /* held by the list; inputs are never released anyway */
        enum dtrx_status st = value_fill(s, e, &src->elems[i], name);
        if (st)
            return st;
    }
    return DTRX_OK;
}

enum dtrx_status dtrx_session_set_input_value(struct dtrx_session *s, int index, const struct dtrx_value *v)
{
    if (index < 0 || index >= s->n_inputs)
        return rt_fail(DTRX_ERR_INPUT, "input index %d out of range (the model has %d inputs)", index, s->n_inputs);
    const struct dtrx_value_desc *d = &s->input_desc[index];
    if (v->kind != d->kind) {
        static const char *const kinds[] = { "tensor", "sequence", "optional" };
        return rt_fail(DTRX_ERR_INPUT, "input '%s': a %s given, the model declares a %s", d->name,
                       kinds[v->kind >= 0 && v->kind <= 2 ? v->kind : 0], kinds[d->kind]);
    }
    if (v->kind == DTRX_VALUE_TENSOR)
        return dtrx_session_set_input(s, index, &v->tensor);
    /* The previous run's subgraph values go first: the elements made here
     * must sit below base_values, which lasts across runs. */
    rt_emitted_free(s);
    struct rt_value *in = s->values[s->input_values[index]];
    size_t old_bytes = rt_value_bytes(s, in);
    input_clear(s, in);
    enum dtrx_status st = value_fill(s, s->input_values[index], v, d->name);
    s->train.base_values = s->n_values;
    if (st)
        return st;
    s->input_set[index] = 1;
    s->stats.pinned_bytes += rt_value_bytes(s, s->values[s->input_values[index]]) - old_bytes;
    return DTRX_OK;
}

static enum dtrx_status value_copy(struct dtrx_session *s, int id, struct dtrx_value *out)
{
    struct rt_value *v = s->values[id];
    memset(out, 0, sizeof *out);
    if (v->list.container) {
        out->kind = v->list.container == RT_SEQUENCE ? DTRX_VALUE_SEQUENCE : DTRX_VALUE_OPTIONAL;
        out->elems = calloc((size_t)v->list.n_elems + 1, sizeof *out->elems);
        if (!out->elems)
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
        for (int i = 0; i < v->list.n_elems; i++) {
            out->n_elems++;
            enum dtrx_status st = value_copy(s, s->values[id]->list.elems[i], &out->elems[i]);
            if (st)
                return st;
        }
        return DTRX_OK;
    }
    out->kind = DTRX_VALUE_TENSOR;
    out->tensor.dtype = v->t.dtype;
    out->tensor.rank = v->t.rank;
    memcpy(out->tensor.dims, v->t.dims, sizeof out->tensor.dims);
    size_t bytes = tensor_size_bytes(&v->t);
    if (!(out->tensor.data = malloc(bytes ? bytes : 1)))
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    if (!bytes)
        return DTRX_OK;
    if (!s->memory->live(s, v))
        return rt_fail(DTRX_ERR_INPUT, "'%s' has no value: run the session first", v->name);
    return s->memory->read(s, v, out->tensor.data);
}

enum dtrx_status dtrx_session_get_output_value(struct dtrx_session *s, int index, struct dtrx_value *out)
{
    memset(out, 0, sizeof *out);
    if (index < 0 || index >= s->n_outputs)
        return rt_fail(DTRX_ERR_INPUT, "output index %d out of range", index);
    enum dtrx_status st = value_copy(s, s->output_values[index], out);
    if (st) {
        dtrx_value_clear(out);
        return st;
    }
    int half = s->output_half[index];
    if (half && out->kind == DTRX_VALUE_TENSOR && out->tensor.dtype == ONNX_DTYPE_FLOAT) {
        /* A widened model's half output, rounded in place (each float is
         * read before its slot's first half is overwritten). */
        int64_t n = dtrx_tensor_numel(&out->tensor);
        const float *f = out->tensor.data;
        uint16_t *h = out->tensor.data;
        for (int64_t i = 0; i < n; i++) {
            float x = f[i];
            h[i] = onnx_float_to_half(x, half);
        }
        out->tensor.dtype = half;
    }
    return DTRX_OK;
}
