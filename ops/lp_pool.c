/* ops/lp_pool.c — LpPool (opset 1: p a float attribute; 2, 11: p an int;
 * 18: ceil_mode, dilations; 22), float32 and double, NC + 1..3 spatial
 * axes, with auto_pad, pads, strides: y = (sum over the window's taps inside
 * the input of |x|^p)^(1/p) (padding contributes 0, as in the ONNX
 * reference).
 *
 * Gradient: LpPoolGrad(dY, X, Y) -> dX (domain dtrexec) on the forward's
 * resolved geometry pinned as explicit attributes (as ops/pool.c's
 * gradients), dx_i = sum over the windows w holding tap i of
 * dy_w * sign(x_i) |x_i|^(p-1) / y_w^(p-1), and 0 where y_w is 0.
 *
 * Both kernels compute in double, one output (input) element at a time,
 * taps in a fixed order; the gradient gathers per input element (the
 * windows that hold it, in output order) rather than scattering, so that it
 * needs no zeroing or atomics on either backend. The arithmetic is
 * ops/pool-window.h's, which the CUDA kernels compile too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/nn-impl.h"
#include "ops/nn-params.h"
#include "ops/pool-window.h"

static int lp_parse(const struct onnx_node *node, int version, void **params, char *err,
                    size_t err_size)
{
    struct lp_pool_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    if (nn_window_attrs_parse(node, &p->w, err, err_size))
        goto fail;
    if (p->w.n_kernel == 0) {
        ew_parse_error(err, err_size, "attribute kernel_shape is required");
        goto fail;
    }
    /* LpPoolGrad (version 1) always gets them, pinned from the forward */
    if (strcmp(node->op_type, "LpPoolGrad") && version < 18 &&
        (onnx_node_attr(node, "ceil_mode") || onnx_node_attr(node, "dilations"))) {
        ew_parse_error(err, err_size, "ceil_mode and dilations exist from opset 18 (this is opset %d)",
                       version);
        goto fail;
    }
    p->p = onnx_node_attr_float(node, "p", 2.0f);
    if (!(p->p > 0) || !isfinite(p->p)) {
        ew_parse_error(err, err_size, "p = %g must be a positive number", (double)p->p);
        goto fail;
    }
    if (!strcmp(node->op_type, "LpPoolGrad") && nn_shape_attr_parse(node, &p->shape, err, err_size))
        goto fail;
    return 0;
fail:
    free(p);
    *params = NULL;
    return -1;
}

/* The forward's geometry from X; the gradient's from its shape attribute,
 * checked against dY, X and Y. */
static int lp_geom(const struct op_call *c, struct nn_geom *g)
{
    const struct lp_pool_params *p = c->params;
    const int grad = c->n_in == 3;
    const struct tensor *x = grad ? c->in[1] : c->in[0];
    char d1[128], d2[128];
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "X", x->dtype, "float, double");
    if (x->rank < 3 || x->rank > NN_MAX_SPATIAL + 2 || x->rank - 2 != p->w.n_kernel)
        return op_error(c, "X %s must be N, C and %d spatial axes (kernel_shape)",
                        tensor_describe(x, d1, sizeof d1), p->w.n_kernel);
    if (grad) {
        struct tensor xs = nn_shape_attr_tensor(&p->shape);
        if (!tensor_same_shape(x, &xs))
            return op_error(c, "X %s differs from the shape attribute %s",
                            tensor_describe(x, d1, sizeof d1), tensor_describe(&xs, d2, sizeof d2));
    }
    if (nn_geom_resolve(c, &p->w, x, p->w.kernel, 1, g))
        return -1;
    g->n = x->dims[0];
    g->c = g->m = x->dims[1];
    g->group = 1;
    if (grad) {
        for (int k = 0; k < 3; k += 2) {
            const struct tensor *t = c->in[k];
            int ok = t->dtype == x->dtype && t->rank == x->rank && t->dims[0] == g->n &&
                     t->dims[1] == g->c;
            for (int i = 0; ok && i < g->nsp; i++)
                ok = t->dims[2 + i] == g->out[3 - g->nsp + i];
            if (!ok)
                return op_error(c, "%s %s is not the pooled shape of X %s", k ? "Y" : "dY",
                                tensor_describe(t, d1, sizeof d1), tensor_describe(x, d2, sizeof d2));
        }
    }
    return 0;
}

static int lp_infer(struct op_call *c)
{
    struct nn_geom g;
    if (lp_geom(c, &g))
        return -1;
    const int grad = c->n_in == 3;
    const struct tensor *x = grad ? c->in[1] : c->in[0];
    struct tensor *y = c->out[0];
    *y = *x;
    y->data = NULL;
    if (!grad)
        for (int i = 0; i < (int)g.nsp; i++)
            y->dims[2 + i] = g.out[3 - g.nsp + i];
    return 0;
}

static struct op_cost lp_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct lp_pool_params *p = c->params;
    double k = 1.0;
    for (int i = 0; i < p->w.n_kernel; i++)
        k *= (double)p->w.kernel[i];
    cost.flops = 4.0 * k * (double)tensor_numel(c->in[0]);
    return cost;
}

/* The window of g as the shared arithmetic of ops/pool-window.h sees it. */
void nn_lp_pool_win(const struct nn_geom *g, struct pool_win *w)
{
    for (int j = 0; j < 3; j++) {
        w->in[j] = g->in[j];
        w->out[j] = g->out[j];
        w->k[j] = g->k[j];
        w->stride[j] = g->stride[j];
        w->dil[j] = g->dil[j];
        w->pad[j] = g->pad_lo[j];
    }
}

static int lp_cpu(struct op_call *c)
{
    const struct lp_pool_params *p = c->params;
    struct nn_geom g;
    if (lp_geom(c, &g))
        return -1;
    struct pool_win w;
    nn_lp_pool_win(&g, &w);
    const int f32 = c->in[0]->dtype == ONNX_DTYPE_FLOAT;
    const int64_t planes = g.n * g.c, insz = nn_geom_in_size(&g), outsz = nn_geom_out_size(&g);
    const float *xf = c->in[0]->data;
    const double *xd = c->in[0]->data;
    float *yf = c->out[0]->data;
    double *yd = c->out[0]->data;
#pragma omp parallel for schedule(static) if (planes * outsz > 32768)
    for (int64_t pl = 0; pl < planes; pl++)
        for (int64_t o = 0; o < outsz; o++) {
            double v = pw_lp_forward(&w, p->p, f32 ? xf + pl * insz : NULL,
                                     f32 ? NULL : xd + pl * insz, o);
            if (f32)
                yf[pl * outsz + o] = (float)v;
            else
                yd[pl * outsz + o] = v;
        }
    return 0;
}

static int lp_grad_cpu(struct op_call *c)
{
    const struct lp_pool_params *p = c->params;
    struct nn_geom g;
    if (lp_geom(c, &g))
        return -1;
    struct pool_win w;
    nn_lp_pool_win(&g, &w);
    const int f32 = c->in[1]->dtype == ONNX_DTYPE_FLOAT;
    const int64_t planes = g.n * g.c, insz = nn_geom_in_size(&g), outsz = nn_geom_out_size(&g);
    const void *dy = c->in[0]->data, *x = c->in[1]->data, *y = c->in[2]->data;
    void *dx = c->out[0]->data;
#pragma omp parallel for schedule(static) if (planes * insz > 32768)
    for (int64_t pl = 0; pl < planes; pl++)
        for (int64_t i = 0; i < insz; i++) {
            if (f32) {
                ((float *)dx)[pl * insz + i] = (float)pw_lp_backward(
                    &w, p->p, (const float *)dy + pl * outsz, (const float *)x + pl * insz,
                    (const float *)y + pl * outsz, NULL, NULL, NULL, i);
            } else {
                ((double *)dx)[pl * insz + i] = pw_lp_backward(
                    &w, p->p, NULL, NULL, NULL, (const double *)dy + pl * outsz,
                    (const double *)x + pl * insz, (const double *)y + pl * outsz, i);
            }
        }
    return 0;
}

static int lp_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    const struct op_call *f = g->fwd;
    const struct lp_pool_params *p = f->params;
    const struct tensor *x = f->in[0];
    struct nn_geom geo;
    if (lp_geom(f, &geo))
        return grad_error(g, "%s", f->env && f->env->err ? f->env->err : "bad geometry");
    struct nn_geom_attrs at;
    nn_geom_attrs_make(&geo, x->rank, x->dims, &at);
    struct onnx_attr a[8];
    memcpy(a, at.a, sizeof(struct onnx_attr) * (size_t)at.n);
    int n = at.n;
    a[n++] = (struct onnx_attr){ .name = "ceil_mode", .type = ONNX_ATTR_INT, .i = p->w.ceil_mode };
    a[n++] = (struct onnx_attr){ .name = "p", .type = ONNX_ATTR_FLOAT, .f = p->p };
    int in[3] = { g->dy[0], g->in[0], g->out[0] }, dx;
    if (g->emit(g, "LpPoolGrad", a, n, 3, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_lp_pool = {
    .domain = "", .name = "LpPool", .since = { 1, 2, 11, 18, 22 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = lp_parse, .infer = lp_infer, .cost = lp_cost,
    .kernel = { [BACKEND_CPU] = lp_cpu },
    .grad = lp_grad,
    .grad_saves_in = 1u << 0, .grad_saves_out = 1u << 0,
};

const struct op_def op_lp_pool_grad = {
    .domain = "dtrexec", .name = "LpPoolGrad", .since = { 1 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = lp_parse, .infer = lp_infer, .cost = lp_cost,
    .kernel = { [BACKEND_CPU] = lp_grad_cpu },
};
