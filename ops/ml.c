/* ops/ml.c — the numeric ai.onnx.ml operators that plain tensors can carry
 * (the rest of that domain takes maps, sequences of maps or strings, which
 * dtrexec does not have); TreeEnsemble is in ml_tree.c, LabelEncoder in
 * ml_label_encoder.c:
 *
 *  - Binarizer (ai.onnx.ml 1): Y = X > threshold ? 1 : 0 in X's type
 *    (float, double, int32, int64); NaN is not greater, so it gives 0, as
 *    the reference's numpy comparison does.
 *  - ArrayFeatureExtractor (ai.onnx.ml 1): the elements of X's last axis
 *    at the int64 indices Y, in Y's order (Y of any shape, flattened):
 *    shape X.shape[:-1] + [count], a 1-D X giving [1, count], as
 *    onnxruntime and onnx.reference do. An index outside [0, last dim) is
 *    an error; negative indices are refused, as onnxruntime refuses them.
 * Neither is differentiable (a step function; an integer selection), nor
 * is any ai.onnx.ml op (runtime/params.c). On a device all run on host
 * copies (op_host_bridge). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"

#define ML_LIST "float, double, int32, int64"

struct binarizer_params {
    float threshold;
};

static int ml_dtype_ok(int dtype)
{
    return dtype == ONNX_DTYPE_FLOAT || dtype == ONNX_DTYPE_DOUBLE || dtype == ONNX_DTYPE_INT32 ||
           dtype == ONNX_DTYPE_INT64;
}

/* ---- Binarizer ----------------------------------------------------------- */

static int binarizer_parse(const struct onnx_node *node, int version, void **params, char *err,
                           size_t err_size)
{
    (void)version;
    struct binarizer_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->threshold = onnx_node_attr_float(node, "threshold", 0.0f);
    if (!isfinite(p->threshold)) {
        free(*params);
        *params = NULL;
        return ew_parse_error(err, err_size, "threshold must be finite, got %g", (double)p->threshold);
    }
    return 0;
}

static int binarizer_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    if (!ml_dtype_ok(x->dtype))
        return ew_dtype_error(c, "X", x->dtype, ML_LIST);
    *c->out[0] = *x;
    c->out[0]->data = NULL;
    return 0;
}

static int binarizer_cpu(struct op_call *c)
{
    const struct binarizer_params *p = c->params;
    const struct tensor *x = c->in[0];
    int64_t n = tensor_numel(x);
    switch (x->dtype) {
    case ONNX_DTYPE_FLOAT: {
        const float *a = x->data;
        float *y = c->out[0]->data;
        for (int64_t i = 0; i < n; i++)
            y[i] = a[i] > p->threshold ? 1.0f : 0.0f;
        break;
    }
    case ONNX_DTYPE_DOUBLE: {
        const double *a = x->data;
        double *y = c->out[0]->data;
        for (int64_t i = 0; i < n; i++)
            y[i] = a[i] > (double)p->threshold ? 1.0 : 0.0;
        break;
    }
    case ONNX_DTYPE_INT32: {
        const int32_t *a = x->data;
        int32_t *y = c->out[0]->data;
        for (int64_t i = 0; i < n; i++)
            y[i] = (double)a[i] > (double)p->threshold;
        break;
    }
    default: {
        const int64_t *a = x->data;
        int64_t *y = c->out[0]->data;
        for (int64_t i = 0; i < n; i++)
            y[i] = (long double)a[i] > (long double)p->threshold;
        break;
    }
    }
    return 0;
}

const struct op_def op_binarizer = {
    .domain = "ai.onnx.ml", .name = "Binarizer", .since = { 1 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = binarizer_parse, .infer = binarizer_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = binarizer_cpu, [BACKEND_CUDA] = op_host_bridge },
};

/* ---- ArrayFeatureExtractor --------------------------------------------------- */

static int afe_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0], *idx = c->in[1];
    char d[128];
    if (!ml_dtype_ok(x->dtype))
        return ew_dtype_error(c, "X", x->dtype, ML_LIST);
    if (idx->dtype != ONNX_DTYPE_INT64)
        return op_error(c, "Y (the indices) must be int64, got %s", onnx_dtype_name(idx->dtype));
    if (x->rank < 1)
        return op_error(c, "X %s must have rank >= 1", tensor_describe(x, d, sizeof d));
    int64_t count = tensor_numel(idx), last = x->dims[x->rank - 1];
    if (count < 1)
        return op_error(c, "Y (the indices) is empty");
    if (idx->data) {
        const int64_t *ix = idx->data;
        for (int64_t i = 0; i < count; i++)
            if (ix[i] < 0 || ix[i] >= last)
                return op_error(c, "index %lld (Y[%lld]) is outside [0, %lld), X's last dimension",
                                (long long)ix[i], (long long)i, (long long)last);
    }
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    if (x->rank == 1) {
        y->rank = 2;
        y->dims[0] = 1;
        y->dims[1] = count;
    } else {
        y->rank = x->rank;
        memcpy(y->dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
        y->dims[x->rank - 1] = count;
    }
    return 0;
}

static int afe_cpu(struct op_call *c)
{
    const struct tensor *x = c->in[0], *idx = c->in[1];
    const int64_t *ix = idx->data;
    int64_t count = tensor_numel(idx), last = x->dims[x->rank - 1];
    int64_t rows = last ? tensor_numel(x) / last : 0;
    size_t es = onnx_dtype_size(x->dtype);
    const char *src = x->data;
    char *dst = c->out[0]->data;
    for (int64_t i = 0; i < count; i++)
        if (ix[i] < 0 || ix[i] >= last)
            return op_error(c, "index %lld (Y[%lld]) is outside [0, %lld), X's last dimension",
                            (long long)ix[i], (long long)i, (long long)last);
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < count; i++)
            memcpy(dst + (size_t)(r * count + i) * es, src + (size_t)(r * last + ix[i]) * es, es);
    return 0;
}

const struct op_def op_array_feature_extractor = {
    .domain = "ai.onnx.ml", .name = "ArrayFeatureExtractor", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = afe_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = afe_cpu, [BACKEND_CUDA] = op_host_bridge },
    .host_inputs = 1u << 1,
};
