/* ops/layer_norm.c — LayerNormalization (opset 17), float32: normalise over
 * the axes from `axis` on, y = (x - mean) * inv_std * Scale + B, with the
 * optional Mean and InvStdDev outputs of shape X.shape[:axis] + [1, ...].
 * Scale and B broadcast to X.shape[axis:].
 *
 * Through oneDNN's layer_normalization primitive (cached per shape): measured
 * one thread, ms, own loop / oneDNN: [128,768] 0.079/0.022, [1024,768]
 * 0.671/0.233, [4096,768] 2.83/1.02 — oneDNN's JIT code is AVX-512 where our
 * portable build is SSE2. Its training-mode variant gives the variance, from
 * which InvStdDev is derived. Our own loop (nn_layernorm_forward, kept for the
 * gradient kernels and as the fallback) is parallel over rows: a mean pass, a
 * variance pass (two-pass, so no cancellation) and the output pass, with
 * eight fixed partial sums combined in a fixed order — deterministic.
 *
 * Gradient: LayerNormGrad (domain dtrexec) at the end of the file; [8,128,768]
 * takes 2.2 ms against 0.36 ms forward (one thread).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"
#include "ops/nn-params.h"

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

/* The normalised shape X.shape[axis:] as a tensor (dims only); also RMSNormalization's
 * (rms_norm.c), whose params begin as struct layer_norm_params. */
int nn_norm_split(const struct op_call *c, int *axis, int64_t *rows, int64_t *cols,
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

int nn_norm_check_param(const struct op_call *c, const struct tensor *t, const char *what,
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
    if (nn_norm_split(c, &axis, &rows, &cols, &norm) || nn_norm_check_param(c, c->in[1], "Scale", &norm)
        || (c->n_in > 2 && c->in[2] && nn_norm_check_param(c, c->in[2], "B", &norm)))
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
const float *nn_norm_expand(const struct tensor *t, const struct tensor *norm, int64_t cols,
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

struct ln_dnnl_key {
    int64_t rows, cols;
    float epsilon;
    int32_t has_bias, stats;
};

static dnnl_status_t ln_dnnl_build(const void *key, dnnl_engine_t eng,
                                   const_dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd)
{
    const struct ln_dnnl_key *k = key;
    dnnl_memory_desc_t data, stat;
    dnnl_dims_t dd = { k->rows, k->cols }, sd = { k->rows };
    dnnl_memory_desc_init_by_tag(&data, 2, dd, dnnl_f32, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&stat, 1, sd, dnnl_f32, dnnl_a);
    dnnl_layer_normalization_desc_t ld;
    dnnl_status_t st = dnnl_layer_normalization_forward_desc_init(
        &ld, k->stats ? dnnl_forward_training : dnnl_forward_inference, &data, &stat, k->epsilon,
        dnnl_use_scale | (k->has_bias ? dnnl_use_shift : 0));
    if (st != dnnl_success)
        return st;
    return dnnl_primitive_desc_create(pd, &ld, attr, eng, NULL);
}

/* 0 when oneDNN did it; -1 to fall back to our loop. */
static int ln_dnnl(struct op_call *c, int64_t rows, int64_t cols, const float *scale,
                   const float *bias, float eps, float *y, float *mean, float *inv_std)
{
    struct ln_dnnl_key key;
    memset(&key, 0, sizeof key);
    key.rows = rows;
    key.cols = cols;
    key.epsilon = eps;
    key.has_bias = bias != NULL;
    key.stats = mean || inv_std;
    float *stats = NULL;
    if (key.stats) {
        stats = nn_scratch_alloc(c, sizeof(float) * 2 * (size_t)rows);
        if (!stats)
            return -1;
    }
    struct nn_dnnl_arg args[6] = {
        { DNNL_ARG_SRC, NULL, (void *)c->in[0]->data },
        { DNNL_ARG_DST, NULL, y },
        { DNNL_ARG_SCALE, NULL, (void *)scale },
    };
    int n = 3;
    if (bias)
        args[n++] = (struct nn_dnnl_arg){ DNNL_ARG_SHIFT, NULL, (void *)bias };
    if (stats) {
        args[n++] = (struct nn_dnnl_arg){ DNNL_ARG_MEAN, NULL, stats };
        args[n++] = (struct nn_dnnl_arg){ DNNL_ARG_VARIANCE, NULL, stats + rows };
    }
    int rc = nn_dnnl_run(c, &key, sizeof key, ln_dnnl_build, n, args);
    if (rc == 0 && stats)
        for (int64_t r = 0; r < rows; r++) {
            if (mean)
                mean[r] = stats[r];
            if (inv_std)
                inv_std[r] = 1.0f / sqrtf(stats[rows + r] + eps);
        }
    nn_scratch_free(c, stats);
    return rc;
}

static int ln_cpu(struct op_call *c)
{
    const struct layer_norm_params *p = c->params;
    int axis;
    int64_t rows, cols;
    struct tensor norm = { .dtype = ONNX_DTYPE_FLOAT };
    if (nn_norm_split(c, &axis, &rows, &cols, &norm))
        return -1;
    const struct tensor *st = c->in[1], *bt = c->n_in > 2 ? c->in[2] : NULL;
    float *tmp = NULL;
    if (tensor_numel(st) != cols || (bt && tensor_numel(bt) != cols)) {
        tmp = nn_scratch_alloc(c, sizeof(float) * 2 * (size_t)cols);
        if (!tmp)
            return op_error(c, "cannot get scratch to broadcast Scale/B");
    }
    const float *scale = nn_norm_expand(st, &norm, cols, tmp);
    const float *bias = bt ? nn_norm_expand(bt, &norm, cols, tmp ? tmp + cols : NULL) : NULL;
    float *mean = c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL;
    float *inv_std = c->n_out > 2 && c->out[2] ? c->out[2]->data : NULL;
    int rc = rows * cols == 0 ? -1 : ln_dnnl(c, rows, cols, scale, bias, p->epsilon, c->out[0]->data, mean, inv_std);
    if (nn_may_fall_back(c, rc)) {
        nn_layernorm_forward(rows, cols, c->in[0]->data, scale, bias, p->epsilon, c->out[0]->data,
                             mean, inv_std);
        rc = 0;
    }
    nn_scratch_free(c, tmp);
    return rc;
}

/* ---- gradient -------------------------------------------------------------------
 * LayerNormGrad(dY, X, Scale; axis, epsilon) -> dX, dScale, dB, the last two
 * of the normalised shape X.shape[axis:] (the emitter reduces them to
 * Scale's and B's broadcast shapes). Mean and 1/std are recomputed from X
 * (one pass, cheaper than keeping two more tensors alive). Per row, with
 * g = dy * scale and xhat = (x - mean) * inv:
 *   dx = inv * (g - mean(g) - xhat * mean(g * xhat));
 * per column, summed over rows in row order: dScale = sum dy * xhat,
 * dB = sum dy. Rows are split across threads for dX and columns for
 * dScale/dB, so no sum is shared between threads: deterministic.
 * Only Y's gradient flows back: the Mean/InvStdDev outputs get none. */
static int ln_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    const struct layer_norm_params *p = g->fwd->params;
    int has_b = g->fwd->n_in > 2 && g->fwd->in[2];
    int axis = op_axis(p->axis, g->fwd->in[0]->rank);
    struct onnx_attr at[2] = {
        { .name = "axis", .type = ONNX_ATTR_INT, .i = axis },
        { .name = "epsilon", .type = ONNX_ATTR_FLOAT, .f = p->epsilon },
    };
    int in[3] = { g->dy[0], g->in[0], g->in[1] }, out[3];
    if (g->emit(g, "LayerNormGrad", at, 2, 3, in, 3, out))
        return -1;
    if ((g->need_dx[0] && g->add_dx(g, 0, out[0])) || grad_add_dx_broadcast(g, 1, out[1]))
        return -1;
    return has_b ? grad_add_dx_broadcast(g, 2, out[2]) : 0;
}

static int ln_grad_infer(struct op_call *c)
{
    const struct tensor *dy = c->in[0], *x = c->in[1];
    char d1[128], d2[128];
    if (dy->dtype != ONNX_DTYPE_FLOAT || x->dtype != ONNX_DTYPE_FLOAT || !tensor_same_shape(dy, x))
        return op_error(c, "dY %s and X %s must be float32 of one shape",
                        tensor_describe(dy, d1, sizeof d1), tensor_describe(x, d2, sizeof d2));
    struct op_call fwd = *c;           /* ln_split reads in[0] as X */
    const struct tensor *fin[2] = { x, c->in[2] };
    fwd.in = fin;
    int axis;
    int64_t rows, cols;
    struct tensor norm = { .dtype = ONNX_DTYPE_FLOAT };
    if (nn_norm_split(&fwd, &axis, &rows, &cols, &norm) || nn_norm_check_param(c, c->in[2], "Scale", &norm))
        return -1;
    *c->out[0] = *x;
    c->out[0]->data = NULL;
    for (int i = 1; i < 3; i++)
        if (c->out[i])
            *c->out[i] = norm;
    return 0;
}

static struct op_cost ln_grad_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = 12.0 * (double)tensor_numel(c->in[1]);
    return cost;
}

#define NORM_GRAD_COL_BLOCK 64

void nn_norm_param_grads(const float *x, const float *dy, const float *mean, const float *inv, int64_t rows,
                         int64_t cols, float *dscale, float *dbias)
{
    if (!dscale && !dbias)
        return;
    const int64_t blocks = (cols + NORM_GRAD_COL_BLOCK - 1) / NORM_GRAD_COL_BLOCK;
#pragma omp parallel for schedule(static) if (rows * cols > 32768)
    for (int64_t b = 0; b < blocks; b++) {
        int64_t j0 = b * NORM_GRAD_COL_BLOCK, j1 = j0 + NORM_GRAD_COL_BLOCK < cols ? j0 + NORM_GRAD_COL_BLOCK : cols;
        float as[NORM_GRAD_COL_BLOCK] = { 0 }, ab[NORM_GRAD_COL_BLOCK] = { 0 };
        for (int64_t r = 0; r < rows; r++) {
            const float *xr = x + r * cols, *gr = dy + r * cols;
            float mu = mean ? mean[r] : 0.0f, iv = inv[r];
            for (int64_t j = j0; j < j1; j++) {
                as[j - j0] += gr[j] * ((xr[j] - mu) * iv);
                ab[j - j0] += gr[j];
            }
        }
        for (int64_t j = j0; j < j1; j++) {
            if (dscale)
                dscale[j] = as[j - j0];
            if (dbias)
                dbias[j] = ab[j - j0];
        }
    }
}

static int ln_grad_cpu(struct op_call *c)
{
    const struct layer_norm_params *p = c->params;
    const struct tensor *x = c->in[1], *st = c->in[2];
    const struct op_call fwd = { .params = c->params, .in = (const struct tensor *const[]){ x }, .env = c->env };
    int axis;
    int64_t rows, cols;
    struct tensor norm = { .dtype = ONNX_DTYPE_FLOAT };
    if (nn_norm_split(&fwd, &axis, &rows, &cols, &norm))
        return op_error(c, "axis %lld is out of range for rank %d", (long long)p->axis, x->rank);
    size_t need = sizeof(float) * (size_t)(2 * rows + (tensor_numel(st) != cols ? cols : 0));
    float *tmp = nn_scratch_alloc(c, need);
    if (!tmp)
        return op_error(c, "cannot get %zu bytes of scratch", need);
    float *mean = tmp, *inv = tmp + rows;
    const float *scale = nn_norm_expand(st, &norm, cols, tmp + 2 * rows);
    const float *xd = x->data, *dy = c->in[0]->data;
    float *dx = c->out[0]->data;
    float *dscale = c->out[1] ? c->out[1]->data : NULL, *dbias = c->out[2] ? c->out[2]->data : NULL;
    const float eps = p->epsilon;
#pragma omp parallel for schedule(static) if (rows * cols > 32768)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = xd + r * cols, *gr = dy + r * cols;
        float *dr = dx + r * cols;
        float mu = cols ? row_sum(xr, cols) / (float)cols : 0.0f;
        float var = cols ? row_sq_dev(xr, cols, mu) / (float)cols : 0.0f;
        float iv = 1.0f / sqrtf(var + eps);
        mean[r] = mu;
        inv[r] = iv;
        /* eight lanes each, as row_sum: vectorisable, a fixed order */
        float a1[8] = { 0 }, a2[8] = { 0 };
        int64_t j = 0;
        for (; j + 8 <= cols; j += 8)
            for (int l = 0; l < 8; l++) {
                float gj = gr[j + l] * scale[j + l];
                a1[l] += gj;
                a2[l] += gj * (xr[j + l] - mu);
            }
        for (int l = 0; j < cols; j++, l++) {
            float gj = gr[j] * scale[j];
            a1[l] += gj;
            a2[l] += gj * (xr[j] - mu);
        }
        float s1 = ((a1[0] + a1[4]) + (a1[1] + a1[5])) + ((a1[2] + a1[6]) + (a1[3] + a1[7]));
        float s2 = ((a2[0] + a2[4]) + (a2[1] + a2[5])) + ((a2[2] + a2[6]) + (a2[3] + a2[7]));
        float m1 = cols ? s1 / (float)cols : 0.0f, m2 = cols ? s2 * iv / (float)cols : 0.0f;
        for (int64_t j = 0; j < cols; j++) {
            float xh = (xr[j] - mu) * iv;
            dr[j] = iv * (gr[j] * scale[j] - m1 - xh * m2);
        }
    }
    nn_norm_param_grads(xd, dy, mean, inv, rows, cols, dscale, dbias);
    nn_scratch_free(c, tmp);
    return 0;
}

const struct op_def op_layer_normalization = {
    .domain = "", .name = "LayerNormalization", .since = { 17 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 3,
    .parse = ln_parse, .infer = ln_infer, .cost = ln_cost,
    .kernel = { [BACKEND_CPU] = ln_cpu },
    .grad = ln_grad,
    .grad_saves_in = (1u << 0) | (1u << 1),
};

const struct op_def op_layer_norm_grad = {
    .domain = "dtrexec", .name = "LayerNormGrad", .since = { 1 },
    .min_in = 3, .max_in = 3, .min_out = 3, .max_out = 3,
    .parse = ln_parse, .infer = ln_grad_infer, .cost = ln_grad_cost,
    .kernel = { [BACKEND_CPU] = ln_grad_cpu },
};
