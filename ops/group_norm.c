/* ops/group_norm.c — GroupNormalization (opset 18, 21) and
 * InstanceNormalization (opset 1, 6, 22), float32, over X [N, C, spatial...]:
 * the statistics are taken per instance and group of C / G channels
 * (InstanceNormalization: one group per channel), y = (x - mean) * inv_std *
 * scale[c] + bias[c]. GroupNormalization-18 has Scale and B per group
 * (shape [G]), 21 per channel ([C]; also accepted under 18, as some
 * exporters wrote it); stash_type 1 (float32) only.
 *
 * A group of one instance is a contiguous row of (C / G) * spatial values:
 * mean and biased variance by two passes in double, in a fixed order, rows
 * split across threads — deterministic.
 *
 * Gradient: GroupNormGrad (domain dtrexec) serves both operators.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"
#include "ops/attn-params.h"

static int gn_parse(const struct onnx_node *node, int version, void **params,
                    char *err, size_t err_size)
{
    struct group_norm_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (%s): out of memory", node->name, node->op_type);
        return -1;
    }
    int instance = !strcmp(node->op_type, "InstanceNormalization");
    int grad = !strcmp(node->op_type, "GroupNormGrad");
    p->epsilon = onnx_node_attr_float(node, "epsilon", 1e-5f);
    if (!instance && !grad) {
        p->num_groups = onnx_node_attr_int(node, "num_groups", 0);
        if (!onnx_node_attr(node, "num_groups") || p->num_groups <= 0) {
            snprintf(err, err_size, "node '%s' (%s): num_groups must be given and positive",
                     node->name, node->op_type);
            free(p);
            return -1;
        }
    }
    p->scale_per_group = grad ? onnx_node_attr_int(node, "scale_per_group", 0) != 0
                              : !instance && version < 21;
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

int nn_group_norm_dims(const struct op_call *c, const struct tensor *x, const struct tensor *s,
                       const struct tensor *b, struct nn_gn_dims *d)
{
    const struct group_norm_params *p = c->params;
    char d1[128];
    if (x->dtype != ONNX_DTYPE_FLOAT)
        return op_error(c, "only float32 is supported, X is %s", onnx_dtype_name(x->dtype));
    if (x->rank < 2)
        return op_error(c, "X must be [N, C, ...], got %s", tensor_describe(x, d1, sizeof d1));
    d->n = x->dims[0];
    d->ch = x->dims[1];
    d->spatial = 1;
    for (int i = 2; i < x->rank; i++)
        d->spatial *= x->dims[i];
    d->groups = p->num_groups ? p->num_groups : d->ch;
    if (d->ch % d->groups)
        return op_error(c, "num_groups %lld does not divide the %lld channels", (long long)d->groups,
                        (long long)d->ch);
    /* GroupNormalization-18's Scale/B are per group; exporters that wrote
     * per-channel ones under opset 18 (before 21 fixed the spec) are read
     * as 21 — the shape says which, except when G == C, where both agree */
    d->per_group = p->scale_per_group && !(s && s->rank == 1 && s->dims[0] == d->ch);
    int64_t want = d->per_group ? d->groups : d->ch;
    const struct tensor *pt[2] = { s, b };
    const char *names[2] = { "scale", "bias" };
    for (int i = 0; i < 2; i++) {
        if (!pt[i])
            continue;
        if (pt[i]->dtype != ONNX_DTYPE_FLOAT)
            return op_error(c, "%s must be float32, got %s", names[i], onnx_dtype_name(pt[i]->dtype));
        if (pt[i]->rank != 1 || pt[i]->dims[0] != want)
            return op_error(c, "%s must be [%lld] (one per %s), got %s", names[i], (long long)want,
                            d->per_group ? "group" : "channel",
                            tensor_describe(pt[i], d1, sizeof d1));
    }
    return 0;
}

static int gn_infer(struct op_call *c)
{
    struct nn_gn_dims d;
    if (nn_group_norm_dims(c, c->in[0], c->in[1], c->in[2], &d))
        return -1;
    *c->out[0] = *c->in[0];
    c->out[0]->data = NULL;
    return 0;
}

static struct op_cost gn_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = 8.0 * (double)tensor_numel(c->in[0]);
    return cost;
}

/* Mean and 1/std of one row (two passes, double). */
static void gn_row_stats(const float *x, int64_t len, float eps, float *mean, float *inv)
{
    double s = 0.0;
    for (int64_t i = 0; i < len; i++)
        s += x[i];
    double mu = len ? s / (double)len : 0.0, q = 0.0;
    for (int64_t i = 0; i < len; i++) {
        double dv = x[i] - mu;
        q += dv * dv;
    }
    double var = len ? q / (double)len : 0.0;
    *mean = (float)mu;
    *inv = (float)(1.0 / sqrt(var + (double)eps));
}

static int gn_cpu(struct op_call *c)
{
    const struct group_norm_params *p = c->params;
    struct nn_gn_dims d;
    if (nn_group_norm_dims(c, c->in[0], c->in[1], c->in[2], &d))
        return -1;
    const float *x = c->in[0]->data, *scale = c->in[1]->data, *bias = c->in[2]->data;
    float *y = c->out[0]->data;
    const int64_t cpg = d.ch / d.groups, len = cpg * d.spatial, rows = d.n * d.groups;
    const int per_group = d.per_group;
#pragma omp parallel for schedule(static) if (rows * len > 32768)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * len;
        float *yr = y + r * len;
        float mu, inv;
        gn_row_stats(xr, len, p->epsilon, &mu, &inv);
        int64_t g = r % d.groups;
        for (int64_t k = 0; k < cpg; k++) {
            int64_t pi = per_group ? g : g * cpg + k;
            float s = scale[pi] * inv, b = bias[pi];
            const float *xc = xr + k * d.spatial;
            float *yc = yr + k * d.spatial;
            for (int64_t i = 0; i < d.spatial; i++)
                yc[i] = (xc[i] - mu) * s + b;
        }
    }
    return 0;
}

/* ---- gradient -------------------------------------------------------------------
 * GroupNormGrad(dY, X, Scale; num_groups (0: one per channel), epsilon,
 * scale_per_group) -> dX, dScale, dB, the last two of Scale's shape. Mean
 * and 1/std are recomputed from X. Per row (instance, group), with
 * g = dy * scale[c] and xhat = (x - mean) * inv:
 *   dx = inv * (g - mean(g) - xhat * mean(g * xhat));
 * dScale = sum dy * xhat and dB = sum dy, first per (instance, channel) in
 * the row's thread, then over instances in order: deterministic. */
static int gn_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    const struct group_norm_params *p = g->fwd->params;
    struct onnx_attr at[3] = {
        { .name = "num_groups", .type = ONNX_ATTR_INT, .i = p->num_groups },
        { .name = "epsilon", .type = ONNX_ATTR_FLOAT, .f = p->epsilon },
        { .name = "scale_per_group", .type = ONNX_ATTR_INT, .i = p->scale_per_group },
    };
    int in[3] = { g->dy[0], g->in[0], g->in[1] }, out[3];
    if (g->emit(g, "GroupNormGrad", at, 3, 3, in, 3, out))
        return -1;
    for (int i = 0; i < 3; i++)
        if (g->need_dx[i] && g->add_dx(g, i, out[i]))
            return -1;
    return 0;
}

static int gn_grad_parse(const struct onnx_node *node, int version, void **params,
                         char *err, size_t err_size)
{
    if (gn_parse(node, version, params, err, err_size))
        return -1;
    struct group_norm_params *p = *params;
    /* num_groups 0 stands for InstanceNormalization's one group per channel */
    p->num_groups = onnx_node_attr_int(node, "num_groups", 0);
    if (p->num_groups < 0) {
        snprintf(err, err_size, "node '%s' (%s): num_groups %lld is negative", node->name,
                 node->op_type, (long long)p->num_groups);
        free(p);
        return -1;
    }
    return 0;
}

static int gn_grad_infer(struct op_call *c)
{
    const struct tensor *dy = c->in[0], *x = c->in[1];
    char d1[128], d2[128];
    if (dy->dtype != ONNX_DTYPE_FLOAT || !tensor_same_shape(dy, x))
        return op_error(c, "dY %s and X %s must be float32 of one shape",
                        tensor_describe(dy, d1, sizeof d1), tensor_describe(x, d2, sizeof d2));
    struct nn_gn_dims d;
    if (nn_group_norm_dims(c, x, c->in[2], NULL, &d))
        return -1;
    *c->out[0] = *x;
    c->out[0]->data = NULL;
    for (int i = 1; i < 3; i++)
        if (c->n_out > i && c->out[i]) {
            *c->out[i] = *c->in[2];
            c->out[i]->data = NULL;
        }
    return 0;
}

static struct op_cost gn_grad_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = 12.0 * (double)tensor_numel(c->in[1]);
    return cost;
}

static int gn_grad_cpu(struct op_call *c)
{
    const struct group_norm_params *p = c->params;
    struct nn_gn_dims d;
    const struct tensor *x = c->in[1];
    if (nn_group_norm_dims(c, x, c->in[2], NULL, &d))
        return -1;
    const int64_t cpg = d.ch / d.groups, len = cpg * d.spatial, rows = d.n * d.groups;
    const int per_group = d.per_group;
    size_t need = sizeof(double) * 2 * (size_t)(d.n * d.ch);
    double *part = nn_scratch_alloc(c, need);
    if (!part)
        return op_error(c, "cannot get %zu bytes of scratch", need);
    const float *xd = x->data, *dy = c->in[0]->data, *scale = c->in[2]->data;
    float *dx = c->out[0]->data;
    float *dscale = c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL;
    float *dbias = c->n_out > 2 && c->out[2] ? c->out[2]->data : NULL;
#pragma omp parallel for schedule(static) if (rows * len > 32768)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = xd + r * len, *gr = dy + r * len;
        float *dr = dx + r * len;
        float mu, inv;
        gn_row_stats(xr, len, p->epsilon, &mu, &inv);
        int64_t g = r % d.groups, n = r / d.groups;
        double s1 = 0.0, s2 = 0.0;
        for (int64_t k = 0; k < cpg; k++) {
            int64_t ch = g * cpg + k;
            float sc = scale[per_group ? g : ch];
            double sy = 0.0, syx = 0.0;
            for (int64_t i = k * d.spatial; i < (k + 1) * d.spatial; i++) {
                double xh = (double)((xr[i] - mu) * inv);
                sy += gr[i];
                syx += gr[i] * xh;
            }
            part[2 * (n * d.ch + ch)] = sy;
            part[2 * (n * d.ch + ch) + 1] = syx;
            s1 += sy * sc;
            s2 += syx * sc;
        }
        float m1 = len ? (float)(s1 / (double)len) : 0.0f, m2 = len ? (float)(s2 / (double)len) : 0.0f;
        for (int64_t k = 0; k < cpg; k++) {
            float sc = scale[per_group ? g : g * cpg + k];
            for (int64_t i = k * d.spatial; i < (k + 1) * d.spatial; i++) {
                float xh = (xr[i] - mu) * inv;
                dr[i] = inv * (gr[i] * sc - m1 - xh * m2);
            }
        }
    }
    int64_t np = per_group ? d.groups : d.ch, per = per_group ? cpg : 1;
    for (int64_t j = 0; j < np; j++) {
        double sb = 0.0, ss = 0.0;
        for (int64_t n = 0; n < d.n; n++)
            for (int64_t k = 0; k < per; k++) {
                const double *pp = part + 2 * (n * d.ch + j * per + k);
                sb += pp[0];
                ss += pp[1];
            }
        if (dscale)
            dscale[j] = (float)ss;
        if (dbias)
            dbias[j] = (float)sb;
    }
    nn_scratch_free(c, part);
    return 0;
}

const struct op_def op_group_normalization = {
    .domain = "", .name = "GroupNormalization", .since = { 18, 21 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = gn_parse, .infer = gn_infer, .cost = gn_cost,
    .kernel = { [BACKEND_CPU] = gn_cpu },
    .grad = gn_grad,
    .grad_saves_in = (1u << 0) | (1u << 1),
};

const struct op_def op_instance_normalization = {
    .domain = "", .name = "InstanceNormalization", .since = { 1, 6, 22 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = gn_parse, .infer = gn_infer, .cost = gn_cost,
    .kernel = { [BACKEND_CPU] = gn_cpu },
    .grad = gn_grad,
    .grad_saves_in = (1u << 0) | (1u << 1),
};

const struct op_def op_group_norm_grad = {
    .domain = "dtrexec", .name = "GroupNormGrad", .since = { 1 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 3,
    .parse = gn_grad_parse, .infer = gn_grad_infer, .cost = gn_grad_cost,
    .kernel = { [BACKEND_CPU] = gn_grad_cpu },
};
