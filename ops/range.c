/* ops/range.c — Range (opset 11): y = [start, start + delta, ...) up to
 * limit, for float, double, int16, int32 and int64 scalars. The length,
 * max(ceil((limit - start) / delta), 0), is computed in integers for integer
 * types so that large int64 ranges are exact. */
#include <math.h>

#include "ops/shape-impl.h"

static int range_is_int(int dtype)
{
    return dtype == ONNX_DTYPE_INT16 || dtype == ONNX_DTYPE_INT32 || dtype == ONNX_DTYPE_INT64;
}

static int range_length(const struct op_call *c, int64_t *n)
{
    const char *names[3] = { "start", "limit", "delta" };
    int dtype = c->in[0]->dtype;
    for (int i = 0; i < 3; i++) {
        const struct tensor *t = c->in[i];
        if (tensor_numel(t) != 1 || t->rank > 1)
            return op_error(c, "input '%s' must be a scalar", names[i]);
        if (t->dtype != dtype)
            return op_error(c, "input '%s' is %s but start is %s", names[i],
                            onnx_dtype_name(t->dtype), onnx_dtype_name(dtype));
    }
    if (range_is_int(dtype)) {
        int64_t s = tensor_get_int(c->in[0], 0), l = tensor_get_int(c->in[1], 0),
                d = tensor_get_int(c->in[2], 0);
        if (d == 0)
            return op_error(c, "delta is 0");
        /* Unsigned differences: limit - start may not fit in int64. */
        if (d > 0)
            *n = l > s ? (int64_t)(((uint64_t)l - (uint64_t)s - 1) / (uint64_t)d + 1) : 0;
        else
            *n = s > l ? (int64_t)(((uint64_t)s - (uint64_t)l - 1) / (0 - (uint64_t)d) + 1) : 0;
        return 0;
    }
    if (dtype != ONNX_DTYPE_FLOAT && dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "unsupported type %s (expected float, double, int16, int32 or int64)",
                        onnx_dtype_name(dtype));
    double s = tensor_get_double(c->in[0], 0), l = tensor_get_double(c->in[1], 0),
           d = tensor_get_double(c->in[2], 0);
    if (d == 0 || !isfinite(s) || !isfinite(l) || !isfinite(d))
        return op_error(c, "start, limit and delta must be finite and delta non-zero");
    double len = ceil((l - s) / d);
    if (len > 1e12)
        return op_error(c, "the range has %.0f elements", len);
    *n = len > 0 ? (int64_t)len : 0;
    return 0;
}

static int range_infer(struct op_call *c)
{
    int64_t n = 0;
    if (range_length(c, &n))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = c->in[0]->dtype;
    y->rank = 1;
    y->dims[0] = n;
    return 0;
}

static int range_cpu(struct op_call *c)
{
    struct tensor *y = c->out[0];
    int64_t n = y->dims[0];
    switch (y->dtype) {
    case ONNX_DTYPE_FLOAT: {
        float s = ((const float *)c->in[0]->data)[0], d = ((const float *)c->in[2]->data)[0];
        for (int64_t i = 0; i < n; i++)
            ((float *)y->data)[i] = s + (float)i * d;
        break;
    }
    case ONNX_DTYPE_DOUBLE: {
        double s = ((const double *)c->in[0]->data)[0], d = ((const double *)c->in[2]->data)[0];
        for (int64_t i = 0; i < n; i++)
            ((double *)y->data)[i] = s + (double)i * d;
        break;
    }
    default: {
        int64_t s = tensor_get_int(c->in[0], 0), d = tensor_get_int(c->in[2], 0);
        for (int64_t i = 0; i < n; i++) {
            int64_t v = (int64_t)((uint64_t)s + (uint64_t)i * (uint64_t)d);
            if (y->dtype == ONNX_DTYPE_INT64)
                ((int64_t *)y->data)[i] = v;
            else if (y->dtype == ONNX_DTYPE_INT32)
                ((int32_t *)y->data)[i] = (int32_t)v;
            else
                ((int16_t *)y->data)[i] = (int16_t)v;
        }
        break;
    }
    }
    return 0;
}

const struct op_def op_range = {
    .domain = "", .name = "Range",
    .since = { 11 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .infer = range_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = range_cpu },
    .host_inputs = (1u << 0) | (1u << 1) | (1u << 2),
};
