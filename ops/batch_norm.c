/* ops/batch_norm.c — BatchNormalization (opset 7, 9, 14, 15), float32, input
 * [N, C, spatial...] (rank >= 2).
 *
 * Inference: y = (x - mean) / sqrt(var + eps) * scale + bias, folded into one
 * multiply-add per element. Training (training_mode = 1 from opset 14; before
 * 14, asking for more than the Y output): batch statistics over N and the
 * spatial axes (biased variance, as onnx's reference), Y normalised with
 * them, and running_mean/running_var = input * momentum + batch * (1 - momentum)
 * as outputs 1 and 2 (opset 7/9 add saved_mean/saved_var as outputs 3 and 4).
 *
 * Our own loops: a memory-bound multiply-add per element, parallel over
 * channels (training) or planes (inference); statistics accumulate in double
 * in a fixed order per channel, so results are deterministic.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops/nn-impl.h"

void nn_batchnorm_inference(int64_t n, int64_t ch, int64_t spatial, const float *x,
                            const float *scale, const float *bias, const float *mean,
                            const float *var, float eps, float *y)
{
    const int64_t planes = n * ch;
#pragma omp parallel for schedule(static) if (planes * spatial > 65536)
    for (int64_t p = 0; p < planes; p++) {
        int64_t cc = p % ch;
        float a = scale[cc] / sqrtf(var[cc] + eps);
        float b = bias[cc] - mean[cc] * a;
        const float *xp = x + p * spatial;
        float *yp = y + p * spatial;
        for (int64_t i = 0; i < spatial; i++)
            yp[i] = xp[i] * a + b;
    }
}

void nn_batchnorm_training(int64_t n, int64_t ch, int64_t spatial, const float *x,
                           const float *scale, const float *bias, float eps, float *y,
                           float *batch_mean, float *batch_var)
{
#pragma omp parallel for schedule(static) if (n * ch * spatial > 65536)
    for (int64_t cc = 0; cc < ch; cc++) {
        double sum = 0.0;
        for (int64_t b = 0; b < n; b++) {
            const float *xp = x + (b * ch + cc) * spatial;
            for (int64_t i = 0; i < spatial; i++)
                sum += xp[i];
        }
        double count = (double)(n * spatial);
        double mu = count > 0 ? sum / count : 0.0;
        double sq = 0.0;
        for (int64_t b = 0; b < n; b++) {
            const float *xp = x + (b * ch + cc) * spatial;
            for (int64_t i = 0; i < spatial; i++) {
                double d = xp[i] - mu;
                sq += d * d;
            }
        }
        double v = count > 0 ? sq / count : 0.0;
        batch_mean[cc] = (float)mu;
        batch_var[cc] = (float)v;
        float a = (float)(scale[cc] / sqrt(v + eps));
        float bb = (float)(bias[cc] - mu * a);
        for (int64_t b = 0; b < n; b++) {
            const float *xp = x + (b * ch + cc) * spatial;
            float *yp = y + (b * ch + cc) * spatial;
            for (int64_t i = 0; i < spatial; i++)
                yp[i] = xp[i] * a + bb;
        }
    }
}

struct batch_norm_params {
    float epsilon, momentum;
    int training_mode;                 /* the attribute (opset >= 14) */
};

static int bn_parse(const struct onnx_node *node, int version, void **params,
                    char *err, size_t err_size)
{
    struct batch_norm_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (BatchNormalization): out of memory", node->name);
        return -1;
    }
    p->epsilon = onnx_node_attr_float(node, "epsilon", 1e-5f);
    p->momentum = onnx_node_attr_float(node, "momentum", 0.9f);
    p->training_mode = version >= 14 && onnx_node_attr_int(node, "training_mode", 0) != 0;
    if (version < 9 && onnx_node_attr_int(node, "spatial", 1) == 0) {
        snprintf(err, err_size, "node '%s' (BatchNormalization): spatial = 0 (per-activation "
                 "statistics) is not supported", node->name);
        free(p);
        return -1;
    }
    *params = p;
    return 0;
}

static int bn_training(const struct op_call *c)
{
    const struct batch_norm_params *p = c->params;
    if (c->version >= 14)
        return p->training_mode;
    for (int i = 1; i < c->n_out; i++)
        if (c->out[i])
            return 1;
    return 0;
}

static int bn_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    char d[128];
    if (x->rank < 2)
        return op_error(c, "X %s must have rank >= 2", tensor_describe(x, d, sizeof d));
    for (int i = 0; i < 5; i++)
        if (c->in[i]->dtype != ONNX_DTYPE_FLOAT)
            return op_error(c, "only float32 is supported, input %d is %s", i,
                            onnx_dtype_name(c->in[i]->dtype));
    for (int i = 1; i < 5; i++)
        if (tensor_numel(c->in[i]) != x->dims[1])
            return op_error(c, "input %d %s must have C = %lld elements", i,
                            tensor_describe(c->in[i], d, sizeof d), (long long)x->dims[1]);
    if (c->version >= 14 && !bn_training(c))
        for (int i = 1; i < c->n_out; i++)
            if (c->out[i])
                return op_error(c, "output %d (running statistics) exists only with "
                                "training_mode = 1", i);
    struct tensor *y = c->out[0];
    *y = (struct tensor){ .dtype = x->dtype, .rank = x->rank, .data = y->data };
    for (int i = 0; i < x->rank; i++)
        y->dims[i] = x->dims[i];
    for (int i = 1; i < c->n_out; i++) {
        struct tensor *o = c->out[i];
        if (!o)
            continue;
        o->dtype = ONNX_DTYPE_FLOAT;
        o->rank = 1;
        o->dims[0] = x->dims[1];
    }
    return 0;
}

static struct op_cost bn_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = (bn_training(c) ? 5.0 : 2.0) * (double)tensor_numel(c->in[0]);
    return cost;
}

static int bn_cpu(struct op_call *c)
{
    const struct batch_norm_params *p = c->params;
    const struct tensor *x = c->in[0];
    int64_t n = x->dims[0], ch = x->dims[1];
    int64_t spatial = (n * ch) != 0 ? tensor_numel(x) / (n * ch) : 0;
    const float *scale = c->in[1]->data, *bias = c->in[2]->data;
    const float *mean = c->in[3]->data, *var = c->in[4]->data;
    float *y = c->out[0]->data;
    if (!bn_training(c)) {
        nn_batchnorm_inference(n, ch, spatial, x->data, scale, bias, mean, var, p->epsilon, y);
        return 0;
    }
    float *stats = nn_scratch_alloc(c, sizeof(float) * 2 * (size_t)(ch ? ch : 1));
    if (!stats)
        return op_error(c, "cannot get scratch for batch statistics");
    float *bmean = stats, *bvar = stats + ch;
    nn_batchnorm_training(n, ch, spatial, x->data, scale, bias, p->epsilon, y, bmean, bvar);
    float mom = p->momentum;
    for (int i = 1; i < c->n_out; i++) {
        float *o = c->out[i] ? c->out[i]->data : NULL;
        if (!o)
            continue;
        /* Running statistics updated in place (output sharing the input's
         * memory) already hold the result when DTR replays this call:
         * updating again would apply the momentum twice. */
        if (c->env && c->env->recomputing && ((i == 1 && o == mean) || (i == 2 && o == var)))
            continue;
        for (int64_t k = 0; k < ch; k++) {
            switch (i) {
            case 1: o[k] = mean[k] * mom + bmean[k] * (1.0f - mom); break;
            case 2: o[k] = var[k] * mom + bvar[k] * (1.0f - mom); break;
            case 3: o[k] = bmean[k]; break;
            default: o[k] = bvar[k]; break;
            }
        }
    }
    nn_scratch_free(c, stats);
    return 0;
}

const struct op_def op_batch_normalization = {
    .domain = "", .name = "BatchNormalization", .since = { 7, 9, 14, 15 },
    .min_in = 5, .max_in = 5, .min_out = 1, .max_out = 5,
    .parse = bn_parse, .infer = bn_infer, .cost = bn_cost,
    .kernel = { [BACKEND_CPU] = bn_cpu },
};
