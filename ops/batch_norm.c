/* ops/batch_norm.c — BatchNormalization (opset 7, 9, 14, 15), float32, input
 * [N, C, spatial...] (rank >= 2), and its gradient BatchNormGrad.
 *
 * Three modes:
 *  - inference (the runtime is not training): y = (x - mean) / sqrt(var + eps)
 *    * scale + bias, folded into one multiply-add per element;
 *  - onnx training (training_mode = 1 from opset 14; before 14, asking for
 *    more than the Y output): batch statistics over N and the spatial axes
 *    (biased variance, as onnx's reference), Y normalised with them, and
 *    running_mean/running_var = input * momentum + batch * (1 - momentum) as
 *    outputs 1 and 2 (opset 7/9 add saved_mean/saved_var as outputs 3 and 4);
 *  - PyTorch-style training: a node exported for inference (Y only,
 *    training_mode absent or 0) run while the runtime trains
 *    (env->training) behaves like torch.nn.BatchNorm2d in train(): Y uses the
 *    batch statistics, and the running_mean/running_var INPUTS are updated in
 *    place — running = momentum * running + (1 - momentum) * batch, with the
 *    UNBIASED batch variance for running_var, as PyTorch stores it (onnx's
 *    momentum m is PyTorch's 1 - momentum). Not while DTR recomputes the call
 *    (env->recomputing): the update must happen once per step.
 *
 * Why .mutates is not set for the in-place update: ops.h defines mutating
 * ops as output-less calls that run after the backward pass (optimizer
 * steps), and BatchNormalization is neither; its outputs do not depend on
 * the values it updates (training uses the batch statistics), so replaying
 * the call — recomputation, the backward pass — reads nothing it wrote.
 *
 * Our own loops: a memory-bound multiply-add per element, parallel over
 * channels (training) or planes (inference); statistics accumulate in double
 * in a fixed order per channel, so results are deterministic.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ops/nn-impl.h"
#include "ops/nn-params.h"

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

/* Sums over one plane in eight float lanes (vectorisable, a fixed order),
 * combined in double by the callers across planes: as accurate as the
 * double loop it replaced at a fraction of its time (that loop's single
 * dependency chain was the cost of the whole BN). */
#define BN_LANES 8

static double bn_plane_sum(const float *x, int64_t n)
{
    float acc[BN_LANES] = { 0 };
    int64_t i = 0;
    for (; i + BN_LANES <= n; i += BN_LANES)
        for (int l = 0; l < BN_LANES; l++)
            acc[l] += x[i + l];
    for (int l = 0; i < n; i++, l++)
        acc[l] += x[i];
    double s = 0.0;
    for (int l = 0; l < BN_LANES; l++)
        s += acc[l];
    return s;
}

static double bn_plane_sq_dev(const float *x, int64_t n, float mu)
{
    float acc[BN_LANES] = { 0 };
    int64_t i = 0;
    for (; i + BN_LANES <= n; i += BN_LANES)
        for (int l = 0; l < BN_LANES; l++) {
            float d = x[i + l] - mu;
            acc[l] += d * d;
        }
    for (int l = 0; i < n; i++, l++) {
        float d = x[i] - mu;
        acc[l] += d * d;
    }
    double s = 0.0;
    for (int l = 0; l < BN_LANES; l++)
        s += acc[l];
    return s;
}

/* One pass for the gradient: sum (x - mu)^2, sum dy, sum dy * (x - mu). */
static void bn_plane_grad_sums(const float *x, const float *dy, int64_t n, float mu, double *sq,
                               double *sdy, double *sdyx)
{
    float a[BN_LANES] = { 0 }, b[BN_LANES] = { 0 }, c[BN_LANES] = { 0 };
    int64_t i = 0;
    for (; i + BN_LANES <= n; i += BN_LANES)
        for (int l = 0; l < BN_LANES; l++) {
            float d = x[i + l] - mu, g = dy[i + l];
            a[l] += d * d;
            b[l] += g;
            c[l] += g * d;
        }
    for (int l = 0; i < n; i++, l++) {
        float d = x[i] - mu, g = dy[i];
        a[l] += d * d;
        b[l] += g;
        c[l] += g * d;
    }
    for (int l = 0; l < BN_LANES; l++) {
        *sq += a[l];
        *sdy += b[l];
        *sdyx += c[l];
    }
}

void nn_batchnorm_training(int64_t n, int64_t ch, int64_t spatial, const float *x,
                           const float *scale, const float *bias, float eps, float *y,
                           float *batch_mean, float *batch_var)
{
#pragma omp parallel for schedule(static) if (n * ch * spatial > 65536)
    for (int64_t cc = 0; cc < ch; cc++) {
        double sum = 0.0;
        for (int64_t b = 0; b < n; b++)
            sum += bn_plane_sum(x + (b * ch + cc) * spatial, spatial);
        double count = (double)(n * spatial);
        double mu = count > 0 ? sum / count : 0.0;
        double sq = 0.0;
        for (int64_t b = 0; b < n; b++)
            sq += bn_plane_sq_dev(x + (b * ch + cc) * spatial, spatial, (float)mu);
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

/* Onnx training semantics: the node itself asks for batch statistics. */
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

/* An inference-exported node while the runtime trains (PyTorch's train()). */
static int bn_torch_training(const struct op_call *c)
{
    return !bn_training(c) && c->env && c->env->training;
}

static int bn_batch_stats(const struct op_call *c)
{
    return bn_training(c) || bn_torch_training(c);
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
    cost.flops = (bn_batch_stats(c) ? 5.0 : 2.0) * (double)tensor_numel(c->in[0]);
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
    if (!bn_batch_stats(c)) {
        nn_batchnorm_inference(n, ch, spatial, x->data, scale, bias, mean, var, p->epsilon, y);
        return 0;
    }
    float *stats = nn_scratch_alloc(c, sizeof(float) * 2 * (size_t)(ch ? ch : 1));
    if (!stats)
        return op_error(c, "cannot get scratch for batch statistics");
    float *bmean = stats, *bvar = stats + ch;
    nn_batchnorm_training(n, ch, spatial, x->data, scale, bias, p->epsilon, y, bmean, bvar);
    float mom = p->momentum;
    if (bn_torch_training(c)) {
        if (!c->env->recomputing) {
            /* the inputs themselves: the model's running statistics */
            float *rmean = (float *)c->in[3]->data, *rvar = (float *)c->in[4]->data;
            double cnt = (double)n * (double)spatial;
            double unbias = cnt > 1 ? cnt / (cnt - 1) : 1.0;
            for (int64_t k = 0; k < ch; k++) {
                rmean[k] = (float)(mom * (double)rmean[k] + (1.0 - mom) * (double)bmean[k]);
                rvar[k] = (float)(mom * (double)rvar[k] + (1.0 - mom) * (double)bvar[k] * unbias);
            }
        }
        nn_scratch_free(c, stats);
        return 0;
    }
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

/* ---- gradient -------------------------------------------------------------------
 * BatchNormGrad(dY, X, scale, mean, var; epsilon, batch_stats) -> dX, dscale, dB.
 * With batch statistics (every training forward) mean/var are recomputed
 * from X (X is saved anyway; two extra passes instead of two more saved
 * tensors) and
 *   xhat = (x - mu) * inv, inv = 1 / sqrt(var_batch + eps), per channel c:
 *   dB = sum dy, dscale = sum dy * xhat,
 *   dx = scale * inv * (dy - dB / count - xhat * dscale / count);
 * with the given statistics (inference) dx = dy * scale * inv. The running
 * statistics get no gradient, nor do the extra outputs of onnx training
 * (running and saved statistics): only Y's gradient flows back. */
static int bn_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0 || !(g->need_dx[0] || g->need_dx[1] || g->need_dx[2]))
        return 0;
    const struct batch_norm_params *p = g->fwd->params;
    struct onnx_attr at[2] = {
        { .name = "epsilon", .type = ONNX_ATTR_FLOAT, .f = p->epsilon },
        { .name = "batch_stats", .type = ONNX_ATTR_INT, .i = bn_batch_stats(g->fwd) },
    };
    int in[5] = { g->dy[0], g->in[0], g->in[1], g->in[3], g->in[4] }, out[3];
    if (g->emit(g, "BatchNormGrad", at, 2, 5, in, 3, out))
        return -1;
    for (int i = 0; i < 3; i++)
        if (g->need_dx[i] && g->add_dx(g, i, out[i]))
            return -1;
    return 0;
}

static int bn_grad_parse(const struct onnx_node *node, int version, void **params,
                         char *err, size_t err_size)
{
    (void)version;
    struct bn_grad_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (BatchNormGrad): out of memory", node->name);
        return -1;
    }
    p->epsilon = onnx_node_attr_float(node, "epsilon", 1e-5f);
    p->batch_stats = onnx_node_attr_int(node, "batch_stats", 1) != 0;
    *params = p;
    return 0;
}

static int bn_grad_infer(struct op_call *c)
{
    const struct tensor *dy = c->in[0], *x = c->in[1];
    char d1[128], d2[128];
    for (int i = 0; i < 5; i++)
        if (c->in[i]->dtype != ONNX_DTYPE_FLOAT)
            return op_error(c, "only float32 is supported, input %d is %s", i,
                            onnx_dtype_name(c->in[i]->dtype));
    if (x->rank < 2 || !tensor_same_shape(dy, x))
        return op_error(c, "dY %s and X %s must have one shape of rank >= 2",
                        tensor_describe(dy, d1, sizeof d1), tensor_describe(x, d2, sizeof d2));
    for (int i = 2; i < 5; i++)
        if (tensor_numel(c->in[i]) != x->dims[1])
            return op_error(c, "input %d %s must have C = %lld elements", i,
                            tensor_describe(c->in[i], d1, sizeof d1), (long long)x->dims[1]);
    *c->out[0] = *x;
    c->out[0]->data = NULL;
    for (int i = 1; i < 3; i++)
        if (c->out[i])
            *c->out[i] = *c->in[2];    /* the scale's shape (B has it too) */
    for (int i = 1; i < 3; i++)
        if (c->out[i])
            c->out[i]->data = NULL;
    return 0;
}

static struct op_cost bn_grad_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = 8.0 * (double)tensor_numel(c->in[1]);
    return cost;
}

static int bn_grad_cpu(struct op_call *c)
{
    const struct bn_grad_params *p = c->params;
    const struct tensor *x = c->in[1];
    const float *dy = c->in[0]->data, *xd = x->data, *scale = c->in[2]->data;
    const float *rmean = c->in[3]->data, *rvar = c->in[4]->data;
    float *dx = c->out[0]->data;
    float *dscale = c->out[1] ? c->out[1]->data : NULL, *dbias = c->out[2] ? c->out[2]->data : NULL;
    const int64_t n = x->dims[0], ch = x->dims[1];
    const int64_t sp = (n * ch) != 0 ? tensor_numel(x) / (n * ch) : 0;
    const double count = (double)n * (double)sp;
    const int batch = p->batch_stats;
#pragma omp parallel for schedule(static) if (n * ch * sp > 65536)
    for (int64_t cc = 0; cc < ch; cc++) {
        double mu = rmean[cc], var = rvar[cc], sq = 0.0, sdy = 0.0, sdyx = 0.0;
        if (batch) {
            double sum = 0.0;
            for (int64_t b = 0; b < n; b++)
                sum += bn_plane_sum(xd + (b * ch + cc) * sp, sp);
            mu = count > 0 ? sum / count : 0.0;
        }
        for (int64_t b = 0; b < n; b++)
            bn_plane_grad_sums(xd + (b * ch + cc) * sp, dy + (b * ch + cc) * sp, sp, (float)mu, &sq,
                               &sdy, &sdyx);
        if (batch)
            var = count > 0 ? sq / count : 0.0;
        double inv = 1.0 / sqrt(var + p->epsilon);
        sdyx *= inv;                   /* sum dy * xhat */
        if (dscale)
            dscale[cc] = (float)sdyx;
        if (dbias)
            dbias[cc] = (float)sdy;
        /* dx = a * dy + b * (x - mu) + d, per channel (centred: no cancellation) */
        double k = scale[cc] * inv;
        double a = k, bx = 0.0, d0 = 0.0;
        if (batch && count > 0) {
            bx = -k * inv * sdyx / count;
            d0 = -k * sdy / count;
        }
        float fa = (float)a, fb = (float)bx, fd = (float)d0, fmu = (float)mu;
        for (int64_t b = 0; b < n; b++) {
            const float *xp = xd + (b * ch + cc) * sp, *gp = dy + (b * ch + cc) * sp;
            float *op = dx + (b * ch + cc) * sp;
            for (int64_t i = 0; i < sp; i++)
                op[i] = fa * gp[i] + fb * (xp[i] - fmu) + fd;
        }
    }
    return 0;
}

const struct op_def op_batch_normalization = {
    .domain = "", .name = "BatchNormalization", .since = { 7, 9, 14, 15 },
    .min_in = 5, .max_in = 5, .min_out = 1, .max_out = 5,
    .parse = bn_parse, .infer = bn_infer, .cost = bn_cost,
    .kernel = { [BACKEND_CPU] = bn_cpu },
    .grad = bn_grad,
    .grad_saves_in = (1u << 0) | (1u << 1) | (1u << 3) | (1u << 4),
};

const struct op_def op_batch_norm_grad = {
    .domain = "dtrexec", .name = "BatchNormGrad", .since = { 1 },
    .min_in = 5, .max_in = 5, .min_out = 3, .max_out = 3,
    .parse = bn_grad_parse, .infer = bn_grad_infer, .cost = bn_grad_cost,
    .kernel = { [BACKEND_CPU] = bn_grad_cpu },
};
