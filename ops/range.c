/* ops/range.c — Range (opsets 11, 27): y = [start, start + delta, ...) up to
 * limit, for float, double, int16, int32 and int64 scalars, and from opset
 * 27 float16 and bfloat16, computed in the precision of `stash_type` (float,
 * the default, or double) and rounded to the output type once per element.
 * The length, max(ceil((limit - start) / delta), 0), is computed in integers
 * for integer types so that large int64 ranges are exact. */
#include <math.h>
#include <stdlib.h>

#include "ops/elementwise-impl.h"
#include "ops/shape-impl.h"

struct range_params {
    int stash_double;              /* stash_type DOUBLE: compute half types in double */
};

static int range_parse(const struct onnx_node *node, int version, void **params, char *err,
                       size_t err_size)
{
    int64_t stash = version >= 27 ? onnx_node_attr_int(node, "stash_type", ONNX_DTYPE_FLOAT)
                                  : ONNX_DTYPE_FLOAT;
    if (stash != ONNX_DTYPE_FLOAT && stash != ONNX_DTYPE_DOUBLE) {
        snprintf(err, err_size, "%s (Range): stash_type %lld is not FLOAT (1) or DOUBLE (11)",
                 node->name, (long long)stash);
        return -1;
    }
    struct range_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "%s (Range): out of memory", node->name);
        return -1;
    }
    p->stash_double = stash == ONNX_DTYPE_DOUBLE;
    *params = p;
    return 0;
}

static int range_is_half(int dtype)
{
    return dtype == ONNX_DTYPE_FLOAT16 || dtype == ONNX_DTYPE_BFLOAT16;
}

static double range_get(const struct tensor *t)
{
    uint16_t h = *(const uint16_t *)t->data;
    if (t->dtype == ONNX_DTYPE_FLOAT16)
        return ew_f16_to_f32(h);
    if (t->dtype == ONNX_DTYPE_BFLOAT16)
        return ew_bf16_to_f32(h);
    return tensor_get_double(t, 0);
}

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
    int half = range_is_half(dtype) && c->version >= 27;
    if (dtype != ONNX_DTYPE_FLOAT && dtype != ONNX_DTYPE_DOUBLE && !half)
        return op_error(c, "unsupported type %s (expected float, double, int16, int32 or int64%s)",
                        onnx_dtype_name(dtype), c->version >= 27 ? ", float16 or bfloat16" : "");
    double s = range_get(c->in[0]), l = range_get(c->in[1]), d = range_get(c->in[2]);
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
    case ONNX_DTYPE_FLOAT16:
    case ONNX_DTYPE_BFLOAT16: {
        const struct range_params *p = c->params;
        int f16 = y->dtype == ONNX_DTYPE_FLOAT16;
        uint16_t *out = y->data;
        double s = range_get(c->in[0]), d = range_get(c->in[2]);
        for (int64_t i = 0; i < n; i++) {
            if (p && p->stash_double) {
                double v = s + (double)i * d;
                out[i] = f16 ? ew_f64_to_f16(v) : ew_f64_to_bf16(v);
            } else {
                float v = (float)s + (float)i * (float)d;
                out[i] = f16 ? ew_f32_to_f16(v) : ew_f32_to_bf16(v);
            }
        }
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
    .since = { 11, 27 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = range_parse,
    .infer = range_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = range_cpu },
    .host_inputs = (1u << 0) | (1u << 1) | (1u << 2),
};
