/* runtime/inputs.c — seeded random data for inputs the user did not give:
 * floats uniform in [-1, 1) (float16/bfloat16 rounded from them), integers in a range that keeps index inputs
 * valid (below the table they index), booleans fair coins. */
#include <stdlib.h>
#include <string.h>

#include "runtime/session.h"
#include "runtime/status.h"

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Integer inputs that index a Gather table stay below its first dimension. */
static int64_t index_bound(const struct dtrx_session *s, int value_id)
{
    int64_t bound = 0;
    for (int k = 0; k < s->n_calls; k++) {
        const struct rt_call *c = &s->calls[k];
        if (strcmp(c->def->name, "Gather") || c->n_in < 2 || c->in[1] != value_id || c->in[0] < 0)
            continue;
        const struct rt_value *table = s->values[c->in[0]];
        if (table->kind == RT_VALUE_INITIALIZER && table->t.rank > 0 &&
            (!bound || table->t.dims[0] < bound))
            bound = table->t.dims[0];
    }
    return bound ? bound : 10;
}

static void fill_random(struct tensor *t, uint64_t seed, int64_t int_bound)
{
    uint64_t state = seed;
    int64_t n = tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = splitmix64(&state);
        double u = (double)(r >> 11) * 0x1.0p-53;
        switch (t->dtype) {
        case ONNX_DTYPE_FLOAT: ((float *)t->data)[i] = (float)(2 * u - 1); break;
        case ONNX_DTYPE_DOUBLE: ((double *)t->data)[i] = 2 * u - 1; break;
        case ONNX_DTYPE_FLOAT16:
        case ONNX_DTYPE_BFLOAT16:
            ((uint16_t *)t->data)[i] = onnx_float_to_half((float)(2 * u - 1), t->dtype);
            break;
        case ONNX_DTYPE_INT64: ((int64_t *)t->data)[i] = (int64_t)(r % (uint64_t)int_bound); break;
        case ONNX_DTYPE_INT32: ((int32_t *)t->data)[i] = (int32_t)(r % (uint64_t)int_bound); break;
        case ONNX_DTYPE_BOOL: ((uint8_t *)t->data)[i] = (uint8_t)(r & 1); break;
        default: memset((char *)t->data + (size_t)i * onnx_dtype_size(t->dtype), 0,
                        onnx_dtype_size(t->dtype));
        }
    }
}

enum dtrx_status dtrx_session_fill_inputs(struct dtrx_session *s)
{
    for (int i = 0; i < s->n_inputs; i++) {
        if (s->input_set[i])
            continue;
        const struct dtrx_value_desc *d = &s->input_desc[i];
        if (d->rank < 0)
            return rt_fail(DTRX_ERR_INPUT, "input '%s' declares no shape: give it with --input", d->name);
        struct dtrx_tensor t = { .dtype = d->dtype, .rank = d->rank };
        for (int k = 0; k < d->rank; k++) {
            t.dims[k] = d->dims[k];
            if (t.dims[k] >= 0)
                continue;
            for (int b = 0; b < s->n_dims && d->dim_names[k]; b++)
                if (!strcmp(s->dims[b].name, d->dim_names[k]))
                    t.dims[k] = s->dims[b].value;
            if (t.dims[k] < 0 && d->dim_names[k])
                return rt_fail(DTRX_ERR_INPUT, "input '%s': dimension %d ('%s') is symbolic: bind it with --dim %s=N",
                               d->name, k, d->dim_names[k], d->dim_names[k]);
            if (t.dims[k] < 0)
                return rt_fail(DTRX_ERR_INPUT, "input '%s': dimension %d has neither a size nor a name: give the "
                               "input with --input %s=FILE", d->name, k, d->name);
        }
        if (!onnx_dtype_size(t.dtype) || t.dtype == ONNX_DTYPE_STRING)
            return rt_fail(DTRX_ERR_INPUT, "input '%s': cannot make random data of type %s%s", d->name,
                           onnx_dtype_name(t.dtype), t.dtype == ONNX_DTYPE_STRING ? ": give it with --input" : "");
        struct tensor tmp = { .dtype = t.dtype, .rank = t.rank };
        memcpy(tmp.dims, t.dims, sizeof tmp.dims);
        char msg[400];
        if (tensor_check_size(&tmp, msg, sizeof msg))
            return rt_fail(DTRX_ERR_INPUT, "input '%s': %s", d->name, msg);
        size_t bytes = tensor_size_bytes(&tmp);
        tmp.data = malloc(bytes ? bytes : 1);
        if (!tmp.data)
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory: %zu bytes for random data of input '%s'", bytes,
                           d->name);
        fill_random(&tmp, s->opts.seed * 1000003u + (uint64_t)i + 1 + s->input_round * 0x9e3779b97f4a7c15ull,
                    index_bound(s, s->input_values[i]));
        t.data = tmp.data;
        enum dtrx_status st = dtrx_session_set_input(s, i, &t);
        free(tmp.data);
        if (st)
            return st;
        s->input_set[i] = 0;   /* still "not given": a later --dim may reshape it */
    }
    return DTRX_OK;
}

enum dtrx_status dtrx_session_redraw_inputs(struct dtrx_session *s, uint64_t round)
{
    s->input_round = round;
    return dtrx_session_fill_inputs(s);
}
