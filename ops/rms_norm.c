/* ops/rms_norm.c — RMSNormalization (opset 23), float32: normalise over the
 * axes from `axis` on by the root mean square, y = x * inv_rms * Scale with
 * inv_rms = 1 / sqrt(mean(x^2) + epsilon); Scale broadcasts to
 * X.shape[axis:]. stash_type 1 (float32 statistics) only, as
 * LayerNormalization (layer_norm.c, whose split/check/expand helpers this
 * file shares through ops/nn-impl.h).
 *
 * The sum of squares per row has eight fixed partial sums combined in a
 * fixed order, rows split across threads: deterministic.
 *
 * Gradient: RMSNormGrad (domain dtrexec) at the end of the file.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops/nn-impl.h"
#include "ops/nn-params.h"

static float row_sum_sq(const float *x, int64_t n)
{
    float acc[8] = { 0 };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            acc[l] += x[i + l] * x[i + l];
    for (int l = 0; i < n; i++, l++)
        acc[l] += x[i] * x[i];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

static float row_inv_rms(const float *x, int64_t cols, float eps)
{
    float ms = cols ? row_sum_sq(x, cols) / (float)cols : 0.0f;
    return 1.0f / sqrtf(ms + eps);
}

static int rms_parse(const struct onnx_node *node, int version, void **params,
                     char *err, size_t err_size)
{
    (void)version;
    struct layer_norm_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (%s): out of memory", node->name, node->op_type);
        return -1;
    }
    p->axis = onnx_node_attr_int(node, "axis", -1);
    p->epsilon = onnx_node_attr_float(node, "epsilon", 1e-5f);
    int64_t stash = onnx_node_attr_int(node, "stash_type", 1);
    if (stash != 1) {
        snprintf(err, err_size, "node '%s' (%s): stash_type %lld is not supported (only 1, "
                 "float32)", node->name, node->op_type, (long long)stash);
        free(p);
        return -1;
    }
    *params = p;
    return 0;
}

static int rms_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    if (x->dtype != ONNX_DTYPE_FLOAT)
        return op_error(c, "only float32 is supported, X is %s", onnx_dtype_name(x->dtype));
    int axis;
    int64_t rows, cols;
    struct tensor norm = { .dtype = ONNX_DTYPE_FLOAT };
    if (nn_norm_split(c, &axis, &rows, &cols, &norm)
        || nn_norm_check_param(c, c->in[1], "scale", &norm))
        return -1;
    *c->out[0] = *x;
    c->out[0]->data = NULL;
    return 0;
}

static struct op_cost rms_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = 4.0 * (double)tensor_numel(c->in[0]);
    return cost;
}

static int rms_cpu(struct op_call *c)
{
    const struct layer_norm_params *p = c->params;
    int axis;
    int64_t rows, cols;
    struct tensor norm = { .dtype = ONNX_DTYPE_FLOAT };
    if (nn_norm_split(c, &axis, &rows, &cols, &norm))
        return -1;
    const struct tensor *st = c->in[1];
    float *tmp = NULL;
    if (tensor_numel(st) != cols && !(tmp = nn_scratch_alloc(c, sizeof(float) * (size_t)cols)))
        return op_error(c, "cannot get scratch to broadcast scale");
    const float *scale = nn_norm_expand(st, &norm, cols, tmp);
    const float *x = c->in[0]->data;
    float *y = c->out[0]->data;
    const float eps = p->epsilon;
#pragma omp parallel for schedule(static) if (rows * cols > 32768)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float inv = row_inv_rms(xr, cols, eps);
        for (int64_t i = 0; i < cols; i++)
            yr[i] = xr[i] * inv * scale[i];
    }
    nn_scratch_free(c, tmp);
    return 0;
}

/* ---- gradient -------------------------------------------------------------------
 * RMSNormGrad(dY, X, Scale; axis, epsilon) -> dX, dScale, dScale of the
 * normalised shape X.shape[axis:] (the emitter reduces it to Scale's
 * broadcast shape). 1/rms is recomputed from X. Per row, with
 * g = dy * scale and xhat = x * inv:
 *   dx = inv * (g - xhat * mean(g * xhat));
 * per column, summed over rows in row order: dScale = sum dy * xhat. Rows
 * are split across threads for dX and columns for dScale: deterministic. */
static int rms_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    const struct layer_norm_params *p = g->fwd->params;
    int axis = op_axis(p->axis, g->fwd->in[0]->rank);
    struct onnx_attr at[2] = {
        { .name = "axis", .type = ONNX_ATTR_INT, .i = axis },
        { .name = "epsilon", .type = ONNX_ATTR_FLOAT, .f = p->epsilon },
    };
    int in[3] = { g->dy[0], g->in[0], g->in[1] }, out[2];
    if (g->emit(g, "RMSNormGrad", at, 2, 3, in, 2, out))
        return -1;
    if (g->need_dx[0] && g->add_dx(g, 0, out[0]))
        return -1;
    return grad_add_dx_broadcast(g, 1, out[1]);
}

static int rms_grad_infer(struct op_call *c)
{
    const struct tensor *dy = c->in[0], *x = c->in[1];
    char d1[128], d2[128];
    if (dy->dtype != ONNX_DTYPE_FLOAT || x->dtype != ONNX_DTYPE_FLOAT || !tensor_same_shape(dy, x))
        return op_error(c, "dY %s and X %s must be float32 of one shape",
                        tensor_describe(dy, d1, sizeof d1), tensor_describe(x, d2, sizeof d2));
    struct op_call fwd = *c;           /* nn_norm_split reads in[0] as X */
    const struct tensor *fin[2] = { x, c->in[2] };
    fwd.in = fin;
    int axis;
    int64_t rows, cols;
    struct tensor norm = { .dtype = ONNX_DTYPE_FLOAT };
    if (nn_norm_split(&fwd, &axis, &rows, &cols, &norm)
        || nn_norm_check_param(c, c->in[2], "scale", &norm))
        return -1;
    *c->out[0] = *x;
    c->out[0]->data = NULL;
    if (c->n_out > 1 && c->out[1])
        *c->out[1] = norm;
    return 0;
}

static struct op_cost rms_grad_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = 8.0 * (double)tensor_numel(c->in[1]);
    return cost;
}

static int rms_grad_cpu(struct op_call *c)
{
    const struct layer_norm_params *p = c->params;
    const struct tensor *x = c->in[1], *st = c->in[2];
    const struct op_call fwd = { .params = c->params, .in = (const struct tensor *const[]){ x },
                                 .node_name = c->node_name, .def = c->def, .env = c->env };
    int axis;
    int64_t rows, cols;
    struct tensor norm = { .dtype = ONNX_DTYPE_FLOAT };
    if (nn_norm_split(&fwd, &axis, &rows, &cols, &norm))
        return -1;
    size_t need = sizeof(float) * (size_t)(rows + (tensor_numel(st) != cols ? cols : 0));
    float *tmp = nn_scratch_alloc(c, need);
    if (!tmp)
        return op_error(c, "cannot get %zu bytes of scratch", need);
    float *inv = tmp;
    const float *scale = nn_norm_expand(st, &norm, cols, tmp + rows);
    const float *xd = x->data, *dy = c->in[0]->data;
    float *dx = c->out[0]->data;
    float *dscale = c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL;
    const float eps = p->epsilon;
#pragma omp parallel for schedule(static) if (rows * cols > 32768)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = xd + r * cols, *gr = dy + r * cols;
        float *dr = dx + r * cols;
        float iv = row_inv_rms(xr, cols, eps);
        inv[r] = iv;
        float a[8] = { 0 };
        int64_t j = 0;
        for (; j + 8 <= cols; j += 8)
            for (int l = 0; l < 8; l++)
                a[l] += gr[j + l] * scale[j + l] * xr[j + l];
        for (int l = 0; j < cols; j++, l++)
            a[l] += gr[j] * scale[j] * xr[j];
        float s = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
        /* mean(g * xhat) * inv = s * inv^2 / cols, applied to xhat = x * inv */
        float m = cols ? s * iv * iv / (float)cols : 0.0f;
        for (int64_t k = 0; k < cols; k++)
            dr[k] = iv * (gr[k] * scale[k] - xr[k] * m);
    }
    nn_norm_param_grads(xd, dy, NULL, inv, rows, cols, dscale, NULL);
    nn_scratch_free(c, tmp);
    return 0;
}

const struct op_def op_rms_normalization = {
    .domain = "", .name = "RMSNormalization", .since = { 23 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = rms_parse, .infer = rms_infer, .cost = rms_cost,
    .kernel = { [BACKEND_CPU] = rms_cpu },
    .grad = rms_grad,
    .grad_saves_in = (1u << 0) | (1u << 1),
};

const struct op_def op_rms_norm_grad = {
    .domain = "dtrexec", .name = "RMSNormGrad", .since = { 1 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 2,
    .parse = rms_parse, .infer = rms_grad_infer, .cost = rms_grad_cost,
    .kernel = { [BACKEND_CPU] = rms_grad_cpu },
};
