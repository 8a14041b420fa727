/* ops/onehot.c — OneHot (opsets 9, 11, 28).
 *
 * y has the rank of the indices plus one, the new axis (`axis`, default -1,
 * counted on the output's rank) of extent depth (input 1, a host scalar of
 * any numeric type, truncated to an integer); y = values[1] (on) where the
 * new coordinate equals the index and values[0] (off) elsewhere. Indices of
 * any numeric type; a negative index counts from the end (index + depth),
 * one outside [-depth, depth) gives a line of off values. y takes the dtype
 * of `values` and moves elements by size, so any dtype works.
 *
 * The output is a one-hot encoding: it has no gradient with respect to the
 * indices, and none is offered for `values` (its users feed labels). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/shape-params.h"
#include "ops/shape-impl.h"

static int onehot_parse(const struct onnx_node *node, int version, void **params, char *err,
                        size_t err_size)
{
    (void)version;
    struct onehot_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->axis = onnx_node_attr_int(node, "axis", -1);
    *params = p;
    return 0;
}

static int is_numeric(int dt)
{
    switch (dt) {
    case ONNX_DTYPE_FLOAT: case ONNX_DTYPE_DOUBLE: case ONNX_DTYPE_INT8: case ONNX_DTYPE_INT16:
    case ONNX_DTYPE_INT32: case ONNX_DTYPE_INT64: case ONNX_DTYPE_UINT8: case ONNX_DTYPE_UINT16:
    case ONNX_DTYPE_UINT32: case ONNX_DTYPE_UINT64: case ONNX_DTYPE_FLOAT16: case ONNX_DTYPE_BFLOAT16:
        return 1;
    default:
        return 0;
    }
}

/* Reads element i of a numeric tensor as an integer (floats truncated). */
static int64_t read_int(const struct tensor *t, int64_t i)
{
    switch (t->dtype) {
    case ONNX_DTYPE_FLOAT: case ONNX_DTYPE_DOUBLE: case ONNX_DTYPE_FLOAT16: case ONNX_DTYPE_BFLOAT16: {
        double v = t->dtype == ONNX_DTYPE_FLOAT16    ? ew_f16_to_f32(((const uint16_t *)t->data)[i])
                   : t->dtype == ONNX_DTYPE_BFLOAT16 ? ew_bf16_to_f32(((const uint16_t *)t->data)[i])
                                                     : tensor_get_double(t, i);
        return ew_sat_i64(trunc(v));
    }
    default:
        return tensor_get_int(t, i);
    }
}

/* Output axis and depth; -1 after a message. */
int onehot_plan(const struct op_call *c, int *axis, int64_t *depth)
{
    const struct onehot_params *p = c->params;
    const struct tensor *idx = c->in[0], *d = c->in[1], *vals = c->in[2];
    if (!is_numeric(idx->dtype))
        return op_error(c, "indices must be numeric, got %s", onnx_dtype_name(idx->dtype));
    if (!is_numeric(d->dtype) || tensor_numel(d) != 1 || d->rank > 1)
        return op_error(c, "depth must be one numeric value, got %s of %lld elements",
                        onnx_dtype_name(d->dtype), (long long)tensor_numel(d));
    if (!d->data)
        return op_error(c, "depth has no host data");
    if (tensor_numel(vals) != 2 || vals->rank != 1)
        return op_error(c, "values must be a 1-D tensor [off, on] of 2 elements, got %lld elements of rank %d",
                        (long long)tensor_numel(vals), vals->rank);
    if (idx->rank + 1 > TENSOR_MAX_RANK)
        return op_error(c, "output rank %d exceeds the maximum %d", idx->rank + 1, TENSOR_MAX_RANK);
    *depth = read_int(d, 0);
    if (*depth < 1)
        return op_error(c, "depth is %lld; it must be at least 1", (long long)*depth);
    *axis = op_axis(p ? p->axis : -1, idx->rank + 1);
    if (*axis < 0)
        return op_error(c, "axis %lld is out of range for an output of rank %d",
                        (long long)(p ? p->axis : -1), idx->rank + 1);
    return 0;
}

static int onehot_infer(struct op_call *c)
{
    const struct tensor *idx = c->in[0];
    int axis;
    int64_t depth;
    if (onehot_plan(c, &axis, &depth))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = c->in[2]->dtype;
    y->rank = idx->rank + 1;
    for (int i = 0, k = 0; i < y->rank; i++)
        y->dims[i] = i == axis ? depth : idx->dims[k++];
    return 0;
}

static int onehot_cpu(struct op_call *c)
{
    const struct tensor *idx = c->in[0], *vals = c->in[2];
    struct tensor *y = c->out[0];
    int axis;
    int64_t depth;
    if (onehot_plan(c, &axis, &depth))
        return -1;
    size_t es = onnx_dtype_size(vals->dtype);
    const char *off = vals->data, *on = (const char *)vals->data + es;
    int64_t outer = shape_prod(idx->dims, 0, axis), inner = shape_prod(idx->dims, axis, idx->rank);
    int64_t n = tensor_numel(y);
    if (n == 0)
        return 0;
    int par = tensor_size_bytes(y) > SHAPE_PARALLEL_BYTES;
    /* y [outer, depth, inner]: row (o, j) is off except where idx[o, i] == j. */
#pragma omp parallel for schedule(static) if (par)
    for (int64_t r = 0; r < outer * depth; r++) {
        int64_t o = r / depth, j = r % depth;
        char *row = (char *)y->data + (size_t)(r * inner) * es;
        for (int64_t i = 0; i < inner; i++) {
            int64_t v = read_int(idx, o * inner + i);
            if (v < 0)
                v += depth;
            memcpy(row + (size_t)i * es, v == j ? on : off, es);
        }
    }
    return 0;
}

const struct op_def op_onehot = {
    .domain = "", .name = "OneHot",
    .since = { 9, 11, 28 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = onehot_parse,
    .infer = onehot_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = onehot_cpu },
    .host_inputs = 1u << 1,
};
