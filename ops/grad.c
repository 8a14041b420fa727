/* ops/grad.c — helpers shared by every gradient emitter: the broadcasting
 * reduction and small constants. */
#include <stdio.h>
#include <string.h>

#include "ops/ops.h"

int grad_error(struct grad_ctx *g, const char *fmt, ...)
{
    if (!g->err || !g->err_size)
        return -1;
    int used = snprintf(g->err, g->err_size, "gradient of node '%s' (%s): ",
                        g->fwd && g->fwd->node_name ? g->fwd->node_name : "?",
                        g->fwd && g->fwd->def ? g->fwd->def->name : "?");
    if (used < 0 || (size_t)used >= g->err_size)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->err + used, g->err_size - (size_t)used, fmt, ap);
    va_end(ap);
    return -1;
}

int grad_const_i64(struct grad_ctx *g, int n, const int64_t *values)
{
    struct tensor t = { .dtype = ONNX_DTYPE_INT64, .rank = 1, .dims = { n }, .data = (void *)values };
    return g->constant(g, &t);
}

int grad_reduce_to(struct grad_ctx *g, int h, const struct tensor *target, int *out)
{
    const struct tensor *src = g->shape(g, h);
    if (!src)
        return grad_error(g, "no shape for handle %d", h);
    int64_t axes[TENSOR_MAX_RANK];
    int n_axes = 0;
    int lead = src->rank - target->rank;
    if (lead < 0)
        return grad_error(g, "cannot reduce rank %d to rank %d", src->rank, target->rank);
    for (int i = 0; i < src->rank; i++) {
        int ti = i - lead;
        if (ti < 0 || (target->dims[ti] == 1 && src->dims[i] != 1))
            axes[n_axes++] = i;
        else if (target->dims[ti] != src->dims[i])
            return grad_error(g, "gradient shape does not broadcast to its input");
    }
    if (!n_axes) {
        *out = h;
        return 0;
    }
    int axes_h = grad_const_i64(g, n_axes, axes);
    if (axes_h < 0)
        return -1;
    struct onnx_attr keep = { .name = "keepdims", .type = ONNX_ATTR_INT, .i = 0 };
    int summed;
    int in[2] = { h, axes_h };
    if (g->emit(g, "ReduceSum", &keep, 1, 2, in, 1, &summed))
        return -1;
    int64_t dims[TENSOR_MAX_RANK];
    for (int i = 0; i < target->rank; i++)
        dims[i] = target->dims[i];
    int shape_h = grad_const_i64(g, target->rank, dims);
    if (shape_h < 0)
        return -1;
    int rs_in[2] = { summed, shape_h };
    return g->emit(g, "Reshape", NULL, 0, 2, rs_in, 1, out);
}

int grad_add_dx_broadcast(struct grad_ctx *g, int i, int h)
{
    if (!g->need_dx[i])
        return 0;
    const struct tensor *target = g->shape(g, g->in[i]);
    int reduced;
    if (!target || grad_reduce_to(g, h, target, &reduced))
        return -1;
    return g->add_dx(g, i, reduced);
}
