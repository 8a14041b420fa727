/* ops/center_crop_pad.c — CenterCropPad (opset 18): crops or zero-pads the
 * input along `axes` (default: all, in order) to the host int64 input
 * `shape`, centred; a crop starts at floor((in - out) / 2), a pad puts
 * floor((out - in) / 2) zeros before the input and the rest after. Any
 * fixed-size dtype (the bytes are copied).
 *
 * Gradient: the adjoint of a centred crop is the centred pad with the same
 * split and the other way round, so dX = CenterCropPad(dy, shape of X) over
 * the same axes. */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/vision-params.h"
#include "ops/shape-impl.h"
#include "ops/vision-impl.h"

static int ccp_parse(const struct onnx_node *node, int version, void **params, char *err,
                     size_t err_size)
{
    (void)version;
    struct center_crop_pad_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->n_axes = -1;
    if (onnx_node_attr(node, "axes")) {
        p->n_axes = onnx_node_attr_ints(node, "axes", p->axes, TENSOR_MAX_RANK);
        if (p->n_axes < 0) {
            free(*params);
            *params = NULL;
            return ew_parse_error(err, err_size, "axes must be a list of at most %d ints",
                                  TENSOR_MAX_RANK);
        }
    }
    return 0;
}

int vision_crop_geom(const struct op_call *c, struct vis_crop *g)
{
    const struct center_crop_pad_params *p = c->params;
    const struct tensor *x = c->in[0];
    int64_t shape[TENSOR_MAX_RANK], axes[TENSOR_MAX_RANK];
    if (x->dtype == ONNX_DTYPE_STRING || onnx_dtype_size(x->dtype) == 0)
        return op_error(c, "dtype %s has no fixed element size", onnx_dtype_name(x->dtype));
    if (x->rank > VIS_MAX_RANK)
        return op_error(c, "rank %d is above the %d supported", x->rank, VIS_MAX_RANK);
    if (c->in[1]->dtype != ONNX_DTYPE_INT64)
        return op_error(c, "input 'shape' must be int64, got %s", onnx_dtype_name(c->in[1]->dtype));
    int n = shape_read_ints(c, c->in[1], "shape", shape, TENSOR_MAX_RANK);
    if (n < 0)
        return -1;
    int n_axes = p->n_axes < 0 ? x->rank : p->n_axes;
    if (p->n_axes < 0)
        for (int a = 0; a < x->rank; a++)
            axes[a] = a;
    else
        memcpy(axes, p->axes, sizeof axes);
    if (shape_normalize_axes(c, axes, n_axes, x->rank))
        return -1;
    if (n != n_axes)
        return op_error(c, "input 'shape' has %d values for %d axes", n, n_axes);
    memset(g, 0, sizeof *g);
    g->rank = x->rank;
    for (int a = 0; a < x->rank; a++)
        g->in_dims[a] = g->out_dims[a] = x->dims[a];
    for (int i = 0; i < n; i++) {
        int a = (int)axes[i];
        int64_t in = x->dims[a], out = shape[i];
        if (out < 0)
            return op_error(c, "shape[%d] is %lld; expected >= 0", i, (long long)out);
        g->out_dims[a] = out;
        g->shift[a] = out <= in ? (in - out) / 2 : -((out - in) / 2);
    }
    g->numel = 1;
    for (int a = 0; a < x->rank; a++)
        g->numel *= g->out_dims[a];
    return 0;
}

static int ccp_infer(struct op_call *c)
{
    struct vis_crop g;
    if (vision_crop_geom(c, &g))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = c->in[0]->dtype;
    y->rank = g.rank;
    for (int a = 0; a < g.rank; a++)
        y->dims[a] = g.out_dims[a];
    return 0;
}

static int ccp_cpu(struct op_call *c)
{
    struct vis_crop g;
    if (vision_crop_geom(c, &g))
        return -1;
    const size_t es = onnx_dtype_size(c->in[0]->dtype);
    const char *x = c->in[0]->data;
    char *y = c->out[0]->data;
    for (int64_t i = 0; i < g.numel; i++) {
        int64_t s = vis_crop_source(&g, i);
        if (s < 0)
            memset(y + (size_t)i * es, 0, es);
        else
            memcpy(y + (size_t)i * es, x + (size_t)s * es, es);
    }
    return 0;
}

/* Every axis of X is named by the shape constant (unlisted ones keep their
 * extent), so the backward call needs no axes attribute. */
static int ccp_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    const struct tensor *x = g->shape(g, g->in[0]);
    if (!x)
        return grad_error(g, "no shape for input 0");
    int shape_h = shape_grad_dims_const(g, x);
    if (shape_h < 0)
        return -1;
    int in[2] = { g->dy[0], shape_h }, out;
    if (g->emit(g, "CenterCropPad", NULL, 0, 2, in, 1, &out))
        return -1;
    return g->add_dx(g, 0, out);
}

const struct op_def op_center_crop_pad = {
    .domain = "", .name = "CenterCropPad", .since = { 18 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = ccp_parse, .infer = ccp_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = ccp_cpu },
    .host_inputs = 2u,
    .grad = ccp_grad,
};
