/* ops/layer_norm.c — LayerNormalization (opset 17), float32: normalise over
 * the axes from `axis` on, y = (x - mean) * inv_std * Scale + B, with the
 * optional Mean and InvStdDev outputs of shape X.shape[:axis] + [1, ...].
 * Scale and B broadcast to X.shape[axis:].
 *
 * Our own loop, parallel over rows: per row a mean pass, a variance pass
 * (two-pass, so no cancellation) and the output pass. The reductions use
 * eight fixed partial sums combined in a fixed order: vectorisable without
 * -ffast-math, and deterministic.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"

static float row_sum(const float *x, int64_t n)
{
    float acc[8] = { 0 };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            acc[l] += x[i + l];
    for (int l = 0; i < n; i++, l++)
        acc[l] += x[i];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

static float row_sq_dev(const float *x, int64_t n, float mean)
{
    float acc[8] = { 0 };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) {
            float d = x[i + l] - mean;
            acc[l] += d * d;
        }
    for (int l = 0; i < n; i++, l++) {
        float d = x[i] - mean;
        acc[l] += d * d;
    }
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

void nn_layernorm_forward(int64_t rows, int64_t cols, const float *x, const float *scale,
                          const float *bias, float eps, float *y, float *mean, float *inv_std)
{
#pragma omp parallel for schedule(static) if (rows * cols > 32768)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mu = cols ? row_sum(xr, cols) / (float)cols : 0.0f;
        float var = cols ? row_sq_dev(xr, cols, mu) / (float)cols : 0.0f;
        float inv = 1.0f / sqrtf(var + eps);
        if (bias)
            for (int64_t i = 0; i < cols; i++)
                yr[i] = (xr[i] - mu) * inv * scale[i] + bias[i];
        else
            for (int64_t i = 0; i < cols; i++)
                yr[i] = (xr[i] - mu) * inv * scale[i];
        if (mean)
            mean[r] = mu;
        if (inv_std)
            inv_std[r] = inv;
    }
}

struct layer_norm_params {
    int64_t axis;
    float epsilon;
};

static int ln_parse(const struct onnx_node *node, int version, void **params,
                    char *err, size_t err_size)
{
    struct layer_norm_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (LayerNormalization): out of memory", node->name);
        return -1;
    }
    p->axis = onnx_node_attr_int(node, "axis", -1);
    p->epsilon = onnx_node_attr_float(node, "epsilon", 1e-5f);
    int64_t stash = onnx_node_attr_int(node, "stash_type", 1);
    if (stash != 1) {
        snprintf(err, err_size, "node '%s' (LayerNormalization): stash_type %lld is not "
                 "supported (only 1, float32)", node->name, (long long)stash);
        free(p);
        return -1;
    }
    *params = p;
    return 0;
}

/* The normalised shape X.shape[axis:] as a tensor (dims only). */
static int ln_split(const struct op_call *c, int *axis, int64_t *rows, int64_t *cols,
                    struct tensor *norm)
{
    const struct layer_norm_params *p = c->params;
    const struct tensor *x = c->in[0];
    *axis = op_axis(p->axis, x->rank);
    if (*axis < 0)
        return op_error(c, "axis %lld is out of range for rank %d", (long long)p->axis, x->rank);
    *rows = 1;
    *cols = 1;
    norm->rank = x->rank - *axis;
    for (int i = 0; i < x->rank; i++) {
        if (i < *axis)
            *rows *= x->dims[i];
        else {
            *cols *= x->dims[i];
            norm->dims[i - *axis] = x->dims[i];
        }
    }
    return 0;
}

static int ln_check_param(const struct op_call *c, const struct tensor *t, const char *what,
                          const struct tensor *norm)
{
    char d1[128], d2[128];
    if (t->dtype != ONNX_DTYPE_FLOAT)
        return op_error(c, "%s must be float32, got %s", what, onnx_dtype_name(t->dtype));
    if (t->rank > norm->rank)
        goto bad;
    for (int i = 0; i < t->rank; i++) {
        int64_t td = t->dims[t->rank - 1 - i], nd = norm->dims[norm->rank - 1 - i];
        if (td != nd && td != 1)
            goto bad;
    }
    return 0;
bad:
    return op_error(c, "%s %s does not broadcast to the normalised shape %s", what,
                    tensor_describe(t, d1, sizeof d1), tensor_describe(norm, d2, sizeof d2));
}

static int ln_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    if (x->dtype != ONNX_DTYPE_FLOAT)
        return op_error(c, "only float32 is supported, X is %s", onnx_dtype_name(x->dtype));
    int axis;
    int64_t rows, cols;
    struct tensor norm = { .dtype = ONNX_DTYPE_FLOAT };
    if (ln_split(c, &axis, &rows, &cols, &norm) || ln_check_param(c, c->in[1], "Scale", &norm)
        || (c->n_in > 2 && c->in[2] && ln_check_param(c, c->in[2], "B", &norm)))
        return -1;
    for (int o = 0; o < c->n_out; o++) {
        struct tensor *y = c->out[o];
        if (!y)
            continue;
        y->dtype = ONNX_DTYPE_FLOAT;
        y->rank = x->rank;
        for (int i = 0; i < x->rank; i++)
            y->dims[i] = o == 0 || i < axis ? x->dims[i] : 1;
    }
    return 0;
}

static struct op_cost ln_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = 8.0 * (double)tensor_numel(c->in[0]);
    return cost;
}

/* Scale or B as `cols` contiguous values: the tensor itself when it already
 * is, else broadcast into dst. */
static const float *ln_expand(const struct tensor *t, const struct tensor *norm, int64_t cols,
                              float *dst)
{
    if (tensor_numel(t) == cols)
        return t->data;
    int64_t strides[TENSOR_MAX_RANK];
    broadcast_strides(t, norm, strides);
    const float *src = t->data;
    for (int64_t i = 0; i < cols; i++) {
        int64_t rem = i, off = 0;
        for (int d = norm->rank - 1; d >= 0; d--) {
            off += (rem % norm->dims[d]) * strides[d];
            rem /= norm->dims[d];
        }
        dst[i] = src[off];
    }
    return dst;
}

static int ln_cpu(struct op_call *c)
{
    const struct layer_norm_params *p = c->params;
    int axis;
    int64_t rows, cols;
    struct tensor norm = { .dtype = ONNX_DTYPE_FLOAT };
    if (ln_split(c, &axis, &rows, &cols, &norm))
        return -1;
    const struct tensor *st = c->in[1], *bt = c->n_in > 2 ? c->in[2] : NULL;
    float *tmp = NULL;
    if (tensor_numel(st) != cols || (bt && tensor_numel(bt) != cols)) {
        tmp = nn_scratch_alloc(c, sizeof(float) * 2 * (size_t)cols);
        if (!tmp)
            return op_error(c, "cannot get scratch to broadcast Scale/B");
    }
    const float *scale = ln_expand(st, &norm, cols, tmp);
    const float *bias = bt ? ln_expand(bt, &norm, cols, tmp ? tmp + cols : NULL) : NULL;
    nn_layernorm_forward(rows, cols, c->in[0]->data, scale, bias, p->epsilon, c->out[0]->data,
                         c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL,
                         c->n_out > 2 && c->out[2] ? c->out[2]->data : NULL);
    nn_scratch_free(c, tmp);
    return 0;
}

const struct op_def op_layer_normalization = {
    .domain = "", .name = "LayerNormalization", .since = { 17 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 3,
    .parse = ln_parse, .infer = ln_infer, .cost = ln_cost,
    .kernel = { [BACKEND_CPU] = ln_cpu },
};
