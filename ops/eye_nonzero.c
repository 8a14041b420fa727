/* ops/eye_nonzero.c — two operators that make index patterns:
 *
 *  - EyeLike (opsets 9, 22): a 2-D tensor of the input's shape with ones on
 *    the k-th diagonal (k > 0 above the main one) and zeros elsewhere, of
 *    dtype `dtype` (default: the input's); every fixed-size numeric dtype,
 *    bool, float16 and bfloat16. The input's values are never read.
 *  - NonZero (9, 13): the indices of the nonzero elements of any fixed-size
 *    dtype, row-major, as an int64 [rank, count] tensor. The count depends
 *    on the values, so infer reads them on the host (host_inputs) and the
 *    kernel writes the indices from the host copy (ops/cuda/misc.c uploads
 *    them). NaN counts as nonzero and -0.0 as zero, as in numpy.
 *
 * Neither is differentiable: EyeLike's output does not depend on the input's
 * values and NonZero's is integer. */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/misc-impl.h"
#include "ops/misc-params.h"

#define EYE_LIST "float, double, int8, int16, int32, int64, uint8, uint16, uint32, uint64, " \
                 "bool, float16, bfloat16"

/* ---- EyeLike ---------------------------------------------------------------- */

static int eye_dtype_ok(int dtype)
{
    return dtype > 0 && dtype < EW_DTYPE_COUNT && dtype != ONNX_DTYPE_STRING &&
           onnx_dtype_size(dtype) > 0;
}

static int eye_like_parse(const struct onnx_node *node, int version, void **params, char *err,
                          size_t err_size)
{
    (void)version;
    struct eye_like_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->dtype = (int)onnx_node_attr_int(node, "dtype", 0);
    p->k = onnx_node_attr_int(node, "k", 0);
    if (p->dtype && !eye_dtype_ok(p->dtype)) {
        free(*params);
        *params = NULL;
        return ew_parse_error(err, err_size, "dtype %d is not one of " EYE_LIST, (int)p->dtype);
    }
    return 0;
}

static int eye_like_infer(struct op_call *c)
{
    const struct eye_like_params *p = c->params;
    const struct tensor *x = c->in[0];
    char d[128];
    if (x->rank != 2)
        return op_error(c, "input %s must have rank 2", tensor_describe(x, d, sizeof d));
    int dtype = p->dtype ? p->dtype : x->dtype;
    if (!eye_dtype_ok(dtype))
        return ew_dtype_error(c, "output", dtype, EYE_LIST);
    struct tensor *y = c->out[0];
    y->dtype = dtype;
    y->rank = 2;
    y->dims[0] = x->dims[0];
    y->dims[1] = x->dims[1];
    return 0;
}

int misc_eye_like_diagonal(const struct op_call *c, int64_t *start, int64_t *step, int64_t *count,
                         uint64_t *one)
{
    const struct eye_like_params *p = c->params;
    const struct tensor *y = c->out[0];
    const int64_t rows = y->dims[0], cols = y->dims[1], k = p->k;
    int64_t r0 = k >= 0 ? 0 : -k, c0 = k >= 0 ? k : 0;
    *count = 0;
    if (r0 < rows && c0 < cols)
        *count = rows - r0 < cols - c0 ? rows - r0 : cols - c0;
    *start = r0 * cols + c0;
    *step = cols + 1;
    *one = 0;
    switch (y->dtype) {
    case ONNX_DTYPE_FLOAT: { float v = 1; memcpy(one, &v, sizeof v); break; }
    case ONNX_DTYPE_DOUBLE: { double v = 1; memcpy(one, &v, sizeof v); break; }
    case ONNX_DTYPE_FLOAT16: { uint16_t v = 0x3c00; memcpy(one, &v, sizeof v); break; }
    case ONNX_DTYPE_BFLOAT16: { uint16_t v = 0x3f80; memcpy(one, &v, sizeof v); break; }
    default: {
        /* integers and bool: 1 in the low byte of a little-endian element */
        uint8_t v = 1;
        memcpy(one, &v, 1);
    }
    }
    return 0;
}

static int eye_like_cpu(struct op_call *c)
{
    struct tensor *y = c->out[0];
    int64_t start, step, count;
    uint64_t one;
    misc_eye_like_diagonal(c, &start, &step, &count, &one);
    size_t es = onnx_dtype_size(y->dtype);
    memset(y->data, 0, tensor_size_bytes(y));
    for (int64_t i = 0; i < count; i++)
        memcpy((char *)y->data + (size_t)(start + i * step) * es, &one, es);
    return 0;
}

const struct op_def op_eye_like = {
    .domain = "", .name = "EyeLike", .since = { 9, 22 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = eye_like_parse, .infer = eye_like_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = eye_like_cpu },
};

/* ---- NonZero ----------------------------------------------------------------- */

/* Element i of x is nonzero (by its bits for floats: only +-0 are zero). */
static int nz_at(const struct tensor *x, int64_t i)
{
    switch (x->dtype) {
    case ONNX_DTYPE_FLOAT: return ((const float *)x->data)[i] != 0;
    case ONNX_DTYPE_DOUBLE: return ((const double *)x->data)[i] != 0;
    case ONNX_DTYPE_FLOAT16:
    case ONNX_DTYPE_BFLOAT16: return (((const uint16_t *)x->data)[i] & 0x7fffu) != 0;
    default: break;
    }
    size_t es = onnx_dtype_size(x->dtype);
    const uint8_t *b = (const uint8_t *)x->data + (size_t)i * es;
    for (size_t k = 0; k < es; k++)
        if (b[k])
            return 1;
    return 0;
}

static int nonzero_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    if (x->dtype == ONNX_DTYPE_STRING || onnx_dtype_size(x->dtype) == 0)
        return op_error(c, "dtype %s has no fixed element size", onnx_dtype_name(x->dtype));
    int64_t n = tensor_numel(x), count = 0;
    for (int64_t i = 0; i < n; i++)
        count += nz_at(x, i);
    struct tensor *y = c->out[0];
    y->dtype = ONNX_DTYPE_INT64;
    y->rank = 2;
    y->dims[0] = x->rank;
    y->dims[1] = count;
    return 0;
}

void misc_nonzero_fill(const struct tensor *x, int64_t count, int64_t *out)
{
    int64_t n = tensor_numel(x), idx[TENSOR_MAX_RANK] = { 0 }, j = 0;
    for (int64_t i = 0; i < n && j < count; i++) {
        if (nz_at(x, i)) {
            for (int a = 0; a < x->rank; a++)
                out[a * count + j] = idx[a];
            j++;
        }
        for (int a = x->rank - 1; a >= 0; a--) {
            if (++idx[a] < x->dims[a])
                break;
            idx[a] = 0;
        }
    }
}

static int nonzero_cpu(struct op_call *c)
{
    misc_nonzero_fill(c->in[0], c->out[0]->dims[1], c->out[0]->data);
    return 0;
}

const struct op_def op_nonzero = {
    .domain = "", .name = "NonZero", .since = { 9, 13 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .infer = nonzero_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = nonzero_cpu },
    .host_inputs = 1u,
};
