/* ops/tensor.c — tensor helpers, op_error, broadcasting and cost helpers
 * shared by every operator file. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/ops.h"

/* Saturates at INT64_MAX rather than overflowing: shapes that large are
 * refused by tensor_check_size before anything is allocated for them. */
int64_t tensor_numel(const struct tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (__builtin_mul_overflow(n, t->dims[i], &n))
            return INT64_MAX;
    return n;
}

size_t tensor_size_bytes(const struct tensor *t)
{
    size_t bytes;
    int64_t n = tensor_numel(t);
    if (n < 0 || __builtin_mul_overflow((size_t)n, onnx_dtype_size(t->dtype), &bytes))
        return SIZE_MAX;
    return bytes;
}

int tensor_check_size(const struct tensor *t, char *msg, size_t size)
{
    char shape[256];
    int64_t n = 1, bytes;
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] < 0) {
            snprintf(msg, size, "shape %s: dimension %d is %lld, not a size", tensor_describe(t, shape, sizeof shape),
                     i, (long long)t->dims[i]);
            return -1;
        }
    /* zero dimensions skipped: kernels multiply subsets of the dimensions
     * (outer and inner extents), which must not overflow either */
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i] && (__builtin_mul_overflow(n, t->dims[i], &n) || n > TENSOR_MAX_BYTES))
            goto too_big;
    if (__builtin_mul_overflow(n, (int64_t)onnx_dtype_size(t->dtype), &bytes) || bytes > TENSOR_MAX_BYTES)
        goto too_big;
    return 0;
too_big:
    snprintf(msg, size, "shape %s has more than 2^62 bytes (4 EiB), the largest tensor dtrexec can hold",
             tensor_describe(t, shape, sizeof shape));
    return -1;
}

int tensor_same_shape(const struct tensor *a, const struct tensor *b)
{
    if (a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

const char *tensor_describe(const struct tensor *t, char *buf, size_t size)
{
    size_t used = (size_t)snprintf(buf, size, "%s[", onnx_dtype_name(t->dtype));
    for (int i = 0; i < t->rank && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ",%lld" : "%lld", (long long)t->dims[i]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

int64_t op_chunk_items(int64_t n, int64_t per_item, int64_t parts, int64_t min_bytes)
{
    if (n < 1)
        return 0;
    int64_t bound = per_item * n / parts;
    if (bound < min_bytes)
        bound = min_bytes;
    int64_t nb = per_item > 0 ? bound / per_item : n;
    if (nb < 1)
        nb = 1;
    if (nb >= n)
        return n;
    int64_t chunks = (n + nb - 1) / nb;
    return (n + chunks - 1) / chunks;
}

int op_error(const struct op_call *c, const char *fmt, ...)
{
    if (!c->env || !c->env->err || !c->env->err_size)
        return -1;
    int used = snprintf(c->env->err, c->env->err_size, "node '%s' (%s): ",
                        c->node_name ? c->node_name : "?", c->def ? c->def->name : "?");
    if (used < 0 || (size_t)used >= c->env->err_size)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->env->err + used, c->env->err_size - (size_t)used, fmt, ap);
    va_end(ap);
    return -1;
}

int broadcast_shape(const struct tensor *const *ts, int n, struct tensor *out,
                    char *err, size_t err_size)
{
    int rank = 0;
    for (int k = 0; k < n; k++)
        if (ts[k] && ts[k]->rank > rank)
            rank = ts[k]->rank;
    out->rank = rank;
    for (int i = 0; i < rank; i++)
        out->dims[i] = 1;
    for (int k = 0; k < n; k++) {
        const struct tensor *t = ts[k];
        if (!t)
            continue;
        for (int i = 0; i < t->rank; i++) {
            int64_t d = t->dims[t->rank - 1 - i];
            int64_t *o = &out->dims[rank - 1 - i];
            if (d == *o || d == 1)
                continue;
            if (*o == 1) {
                *o = d;
                continue;
            }
            if (err) {
                char a[128], b[128];
                snprintf(err, err_size, "shapes %s and %s do not broadcast",
                         tensor_describe(ts[0], a, sizeof a), tensor_describe(t, b, sizeof b));
            }
            return -1;
        }
    }
    return 0;
}

void broadcast_strides(const struct tensor *t, const struct tensor *out, int64_t *strides)
{
    int64_t s = 1;
    for (int i = out->rank - 1; i >= 0; i--) {
        int ti = i - (out->rank - t->rank);
        if (ti < 0) {
            strides[i] = 0;
            continue;
        }
        strides[i] = t->dims[ti] == 1 ? 0 : s;
        s *= t->dims[ti];
    }
}

static double io_bytes(const struct op_call *c)
{
    double bytes = 0;
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i])
            bytes += (double)tensor_size_bytes(c->in[i]);
    for (int i = 0; i < c->n_out; i++)
        if (c->out[i])
            bytes += (double)tensor_size_bytes(c->out[i]);
    return bytes;
}

struct op_cost cost_elementwise(const struct op_call *c)
{
    double flops = 0;
    for (int i = 0; i < c->n_out; i++)
        if (c->out[i])
            flops += (double)tensor_numel(c->out[i]);
    return (struct op_cost){ .flops = flops, .bytes = io_bytes(c) };
}

struct op_cost cost_memory(const struct op_call *c)
{
    return (struct op_cost){ .flops = 0, .bytes = io_bytes(c) };
}

int op_axis(int64_t axis, int rank)
{
    if (axis < 0)
        axis += rank;
    if (axis < 0 || axis >= rank)
        return -1;
    return (int)axis;
}

int64_t tensor_get_int(const struct tensor *t, int64_t i)
{
    switch (t->dtype) {
    case ONNX_DTYPE_INT64: return ((const int64_t *)t->data)[i];
    case ONNX_DTYPE_INT32: return ((const int32_t *)t->data)[i];
    case ONNX_DTYPE_INT16: return ((const int16_t *)t->data)[i];
    case ONNX_DTYPE_INT8: return ((const int8_t *)t->data)[i];
    case ONNX_DTYPE_UINT64: return (int64_t)((const uint64_t *)t->data)[i];
    case ONNX_DTYPE_UINT32: return ((const uint32_t *)t->data)[i];
    case ONNX_DTYPE_UINT16: return ((const uint16_t *)t->data)[i];
    case ONNX_DTYPE_UINT8:
    case ONNX_DTYPE_BOOL: return ((const uint8_t *)t->data)[i];
    default: return (int64_t)tensor_get_double(t, i);
    }
}

double tensor_get_double(const struct tensor *t, int64_t i)
{
    switch (t->dtype) {
    case ONNX_DTYPE_FLOAT: return ((const float *)t->data)[i];
    case ONNX_DTYPE_DOUBLE: return ((const double *)t->data)[i];
    case ONNX_DTYPE_FLOAT16: return ew_f16_to_f32(((const uint16_t *)t->data)[i]);
    case ONNX_DTYPE_BFLOAT16: return ew_bf16_to_f32(((const uint16_t *)t->data)[i]);
    case ONNX_DTYPE_STRING:
    case ONNX_DTYPE_UNDEFINED:
        return 0;
    default: return (double)tensor_get_int(t, i);
    }
}
