/* ops/col2im.c — Col2Im (opset 18): input [N, C * prod(block_shape), L]
 * with image_shape and block_shape (int64 [S] host inputs, S >= 1 spatial
 * axes) and dilations, pads, strides gives [N, C, image_shape...]: each of
 * the L sliding blocks adds its C * prod(block_shape) values back into the
 * image (overlaps sum, what falls into the padding is dropped). L must be
 * the number of blocks, prod over axes of (img + pads - dil * (blk - 1) -
 * 1) / stride + 1. float32 and double.
 *
 * Gradient: Col2Im is linear, and its adjoint is Im2Col: Col2ImGrad(dY,
 * image_shape, block_shape) -> dX (domain dtrexec, same attributes), each
 * column entry read from its image pixel (0 in the padding).
 *
 * The forward gathers: each output pixel sums the column entries that land
 * on it in ascending kernel order (the reference's order), in double, so no
 * zeroing, atomics or scatter races on either backend; the arithmetic is
 * ops/pool-window.h's, which the CUDA kernels (ops/cuda/window.c) share.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/pool-window.h"

struct col2im_params {
    int n_dil, n_pads, n_strides;
    int64_t dil[PW_MAX_AXES], pads[2 * PW_MAX_AXES], strides[PW_MAX_AXES];
};

static int col2im_parse(const struct onnx_node *node, int version, void **params, char *err,
                        size_t err_size)
{
    (void)version;
    struct col2im_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->n_dil = onnx_node_attr_ints(node, "dilations", p->dil, PW_MAX_AXES);
    p->n_pads = onnx_node_attr_ints(node, "pads", p->pads, 2 * PW_MAX_AXES);
    p->n_strides = onnx_node_attr_ints(node, "strides", p->strides, PW_MAX_AXES);
    const char *bad = p->n_dil == -2 ? "dilations" : p->n_pads == -2 ? "pads"
                    : p->n_strides == -2 ? "strides" : NULL;
    if (bad) {
        ew_parse_error(err, err_size, "attribute %s has more than %d spatial entries", bad, PW_MAX_AXES);
        free(p);
        *params = NULL;
        return -1;
    }
    return 0;
}

/* The geometry from the host inputs 1, 2 and the attributes; the column
 * tensor is input 0 (Col2Im) or the output (Col2ImGrad, cols unchecked). */
int col2im_geom(const struct op_call *c, struct col2im_geom *g)
{
    const struct col2im_params *p = c->params;
    const int grad = c->def && !strcmp(c->def->name, "Col2ImGrad");
    const struct tensor *x = c->in[0], *is = c->in[1], *bs = c->in[2];
    char d1[128], d2[128];
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, grad ? "dY" : "input", x->dtype, "float, double");
    if (is->dtype != ONNX_DTYPE_INT64 || is->rank != 1 || bs->dtype != ONNX_DTYPE_INT64 ||
        bs->rank != 1 || is->dims[0] != bs->dims[0] || is->dims[0] < 1 || is->dims[0] > PW_MAX_AXES)
        return op_error(c, "image_shape %s and block_shape %s must be int64 [S] with 1 <= S <= %d",
                        tensor_describe(is, d1, sizeof d1), tensor_describe(bs, d2, sizeof d2),
                        PW_MAX_AXES);
    int s = (int)is->dims[0];
    if ((p->n_dil > 0 && p->n_dil != s) || (p->n_strides > 0 && p->n_strides != s) ||
        (p->n_pads > 0 && p->n_pads != 2 * s))
        return op_error(c, "dilations (%d), strides (%d) and pads (%d) must have %d, %d and %d entries",
                        p->n_dil, p->n_strides, p->n_pads, s, s, 2 * s);
    memset(g, 0, sizeof *g);
    g->nsp = s;
    g->kernel = g->cols = g->pixels = 1;
    for (int d = 0; d < s; d++) {
        g->img[d] = tensor_get_int(is, d);
        g->blk[d] = tensor_get_int(bs, d);
        g->dil[d] = p->n_dil > 0 ? p->dil[d] : 1;
        g->stride[d] = p->n_strides > 0 ? p->strides[d] : 1;
        g->pad[d] = p->n_pads > 0 ? p->pads[d] : 0;
        int64_t pad_hi = p->n_pads > 0 ? p->pads[s + d] : 0;
        if (g->img[d] < 1 || g->blk[d] < 1 || g->dil[d] < 1 || g->stride[d] < 1 || g->pad[d] < 0 ||
            pad_hi < 0)
            return op_error(c, "axis %d: image %lld, block %lld, dilation %lld, stride %lld, pads "
                            "%lld, %lld must be positive (pads non-negative)", d,
                            (long long)g->img[d], (long long)g->blk[d], (long long)g->dil[d],
                            (long long)g->stride[d], (long long)g->pad[d], (long long)pad_hi);
        int64_t span = g->img[d] + g->pad[d] + pad_hi - g->dil[d] * (g->blk[d] - 1) - 1;
        if (span < 0)
            return op_error(c, "axis %d: the dilated block (%lld) is larger than the padded image (%lld)",
                            d, (long long)(g->dil[d] * (g->blk[d] - 1) + 1),
                            (long long)(g->img[d] + g->pad[d] + pad_hi));
        g->col[d] = span / g->stride[d] + 1;
        g->kernel *= g->blk[d];
        g->cols *= g->col[d];
        g->pixels *= g->img[d];
    }
    if (grad) {
        if (x->rank != s + 2)
            return op_error(c, "dY %s must be [N, C, image_shape...] of %d axes",
                            tensor_describe(x, d1, sizeof d1), s + 2);
        for (int d = 0; d < s; d++)
            if (x->dims[2 + d] != g->img[d])
                return op_error(c, "dY %s does not have image_shape's axis %d (%lld)",
                                tensor_describe(x, d1, sizeof d1), d, (long long)g->img[d]);
        g->n = x->dims[0];
        g->c = x->dims[1];
        return 0;
    }
    if (x->rank != 3 || x->dims[1] % g->kernel || x->dims[2] != g->cols)
        return op_error(c, "input %s must be [N, C * %lld (block_shape's size), %lld (blocks)]",
                        tensor_describe(x, d1, sizeof d1), (long long)g->kernel, (long long)g->cols);
    g->n = x->dims[0];
    g->c = x->dims[1] / g->kernel;
    return 0;
}

static int col2im_infer(struct op_call *c)
{
    const int grad = !strcmp(c->def->name, "Col2ImGrad");
    struct col2im_geom g;
    if (col2im_geom(c, &g))
        return -1;
    struct tensor *y = c->out[0];
    *y = (struct tensor){ .dtype = c->in[0]->dtype };
    if (grad) {
        y->rank = 3;
        y->dims[0] = g.n;
        y->dims[1] = g.c * g.kernel;
        y->dims[2] = g.cols;
        return 0;
    }
    y->rank = g.nsp + 2;
    y->dims[0] = g.n;
    y->dims[1] = g.c;
    for (int d = 0; d < g.nsp; d++)
        y->dims[2 + d] = g.img[d];
    return 0;
}

static struct op_cost col2im_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    struct col2im_geom g;
    if (!col2im_geom(c, &g))
        cost.flops = (double)(g.n * g.c) * (double)g.kernel * (double)(g.pixels > g.cols ? g.pixels : g.cols);
    return cost;
}

static int col2im_cpu(struct op_call *c)
{
    struct col2im_geom g;
    if (col2im_geom(c, &g))
        return -1;
    const int f32 = c->in[0]->dtype == ONNX_DTYPE_FLOAT;
    const int64_t planes = g.n * g.c, plane_in = g.kernel * g.cols;
    const float *xf = c->in[0]->data;
    const double *xd = c->in[0]->data;
#pragma omp parallel for schedule(static) if (planes * g.pixels > 32768)
    for (int64_t pl = 0; pl < planes; pl++)
        for (int64_t q = 0; q < g.pixels; q++) {
            double v = pw_col2im_pixel(&g, f32 ? xf + pl * plane_in : NULL,
                                       f32 ? NULL : xd + pl * plane_in, q);
            if (f32)
                ((float *)c->out[0]->data)[pl * g.pixels + q] = (float)v;
            else
                ((double *)c->out[0]->data)[pl * g.pixels + q] = v;
        }
    return 0;
}

static int col2im_grad_cpu(struct op_call *c)
{
    struct col2im_geom g;
    if (col2im_geom(c, &g))
        return -1;
    const int f32 = c->in[0]->dtype == ONNX_DTYPE_FLOAT;
    const int64_t planes = g.n * g.c, plane_out = g.kernel * g.cols;
#pragma omp parallel for schedule(static) if (planes * plane_out > 32768)
    for (int64_t pl = 0; pl < planes; pl++)
        for (int64_t e = 0; e < plane_out; e++) {
            int64_t q = pw_im2col_src(&g, e);
            if (f32)
                ((float *)c->out[0]->data)[pl * plane_out + e] =
                    q < 0 ? 0.0f : ((const float *)c->in[0]->data)[pl * g.pixels + q];
            else
                ((double *)c->out[0]->data)[pl * plane_out + e] =
                    q < 0 ? 0.0 : ((const double *)c->in[0]->data)[pl * g.pixels + q];
        }
    return 0;
}

static int col2im_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    int in[3] = { g->dy[0], g->in[1], g->in[2] }, dx;
    if (g->emit(g, "Col2ImGrad", g->node->attrs, g->node->n_attrs, 3, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_col2im = {
    .domain = "", .name = "Col2Im", .since = { 18 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = col2im_parse, .infer = col2im_infer, .cost = col2im_cost,
    .kernel = { [BACKEND_CPU] = col2im_cpu },
    .host_inputs = (1u << 1) | (1u << 2),
    .grad = col2im_grad, .grad_saves_in = (1u << 1) | (1u << 2),
};

const struct op_def op_col2im_grad = {
    .domain = "dtrexec", .name = "Col2ImGrad", .since = { 1 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = col2im_parse, .infer = col2im_infer, .cost = col2im_cost,
    .kernel = { [BACKEND_CPU] = col2im_grad_cpu },
    .host_inputs = (1u << 1) | (1u << 2),
};
