/* ops/reshape.c — the pure views: Reshape, Flatten, Squeeze, Unsqueeze and
 * Identity. Each only gives input 0's bytes a new shape, so they declare
 * `.alias = 1` and have no kernel: the runtime shares the memory. All their
 * work is shape inference, which must reject every shape whose element count
 * differs from the input's (the shared bytes would be read out of bounds). */
#include <stdlib.h>

#include "ops/shape-impl.h"
#include "ops/shape-params.h"

/* The gradient of every view: dy given the input's shape again (itself a
 * view, so no bytes move). Shape and axes inputs get none. */
static int view_grad(struct grad_ctx *g)
{
    if (!g->need_dx[0] || g->dy[0] < 0)
        return 0;
    int dx;
    if (shape_grad_reshape(g, g->dy[0], g->fwd->in[0], &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

/* ---- Reshape (5, 13, 14, 19, 21, 23, 24, 25) ----------------------------- */

static int reshape_parse(const struct onnx_node *node, int version, void **params,
                         char *err, size_t err_size)
{
    struct reshape_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->allowzero = version >= 14 && onnx_node_attr_int(node, "allowzero", 0) != 0;
    *params = p;
    return 0;
}

static int reshape_infer(struct op_call *c)
{
    const struct reshape_params *p = c->params;
    const struct tensor *x = c->in[0];
    int64_t shape[TENSOR_MAX_RANK];
    int n = shape_read_ints(c, c->in[1], "shape", shape, TENSOR_MAX_RANK);
    if (n < 0)
        return -1;
    struct tensor *y = c->out[0];
    int infer_at = -1;
    int64_t known = 1;
    for (int i = 0; i < n; i++) {
        int64_t d = shape[i];
        if (d == 0 && !(p && p->allowzero)) {
            if (i >= x->rank)
                return op_error(c, "shape[%d] is 0 (copy the input's dim) but the input has rank %d",
                                i, x->rank);
            d = x->dims[i];
        } else if (d == -1) {
            if (infer_at >= 0)
                return op_error(c, "shape has more than one -1");
            infer_at = i;
            continue;
        } else if (d < 0) {
            return op_error(c, "shape[%d] is %lld; expected >= -1", i, (long long)d);
        }
        y->dims[i] = d;
        if (__builtin_mul_overflow(known, d, &known))
            return op_error(c, "shape[0..%d] has more elements than int64 holds (limit 2^62 bytes)", i);
    }
    int64_t numel = tensor_numel(x);
    if (infer_at >= 0) {
        if (known == 0 || numel % known)
            return op_error(c, "cannot infer the -1 in shape: %lld elements do not divide into %lld",
                            (long long)numel, (long long)known);
        y->dims[infer_at] = numel / known;
    } else if (known != numel) {
        char buf[128];
        return op_error(c, "shape gives %lld elements but the input %s has %lld", (long long)known,
                        tensor_describe(x, buf, sizeof buf), (long long)numel);
    }
    y->dtype = x->dtype;
    y->rank = n;
    return 0;
}

const struct op_def op_reshape = {
    .domain = "", .name = "Reshape",
    .since = { 5, 13, 14, 19, 21, 23, 24, 25 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = reshape_parse,
    .infer = reshape_infer,
    .cost = shape_cost_view,
    .host_inputs = 1u << 1,
    .alias = 1,
    .grad = view_grad,
};

/* ---- Flatten (1, 9, 11, 13, 21, 23, 24, 25) ------------------------------ */

static int flatten_parse(const struct onnx_node *node, int version, void **params,
                         char *err, size_t err_size)
{
    int64_t axis = onnx_node_attr_int(node, "axis", 1);
    if (version < 11 && axis < 0)
        return shape_parse_error(err, err_size, node,
                                 "axis %lld is negative, which Flatten allows only from opset 11",
                                 (long long)axis);
    struct flatten_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->axis = axis;
    *params = p;
    return 0;
}

static int flatten_infer(struct op_call *c)
{
    const struct flatten_params *p = c->params;
    const struct tensor *x = c->in[0];
    int64_t axis = p ? p->axis : 1;
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis > x->rank)
        return op_error(c, "axis %lld is out of range for rank %d (expected -%d..%d)",
                        (long long)(p ? p->axis : 1), x->rank, x->rank, x->rank);
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = 2;
    y->dims[0] = shape_prod(x->dims, 0, (int)axis);
    y->dims[1] = shape_prod(x->dims, (int)axis, x->rank);
    return 0;
}

const struct op_def op_flatten = {
    .domain = "", .name = "Flatten",
    .since = { 1, 9, 11, 13, 21, 23, 24, 25 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = flatten_parse,
    .infer = flatten_infer,
    .cost = shape_cost_view,
    .alias = 1,
    .grad = view_grad,
};

/* ---- Squeeze and Unsqueeze (1, 11, 13, 21, 23, 24, 25) -------------------- */

static int squeeze_parse(const struct onnx_node *node, int version, void **params,
                         char *err, size_t err_size)
{
    struct squeeze_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->n_axes = -1;
    if (version < 13) {
        p->n_axes = onnx_node_attr_ints(node, "axes", p->axes, TENSOR_MAX_RANK);
        if (p->n_axes == -2) {
            free(p);
            return shape_parse_error(err, err_size, node, "axes has more than %d entries",
                                     TENSOR_MAX_RANK);
        }
        if (p->n_axes < 0 && !strcmp(node->op_type, "Unsqueeze")) {
            free(p);
            return shape_parse_error(err, err_size, node,
                                     "the axes attribute is required before opset 13");
        }
    }
    *params = p;
    return 0;
}

/* The axes of this call, from the attribute or input 1: count, or -1 when
 * none were given, or -2 after op_error(). */
static int squeeze_axes(const struct op_call *c, int64_t *axes)
{
    const struct squeeze_params *p = c->params;
    if (c->version < 13) {
        if (!p || p->n_axes < 0)
            return -1;
        memcpy(axes, p->axes, sizeof(int64_t) * (size_t)p->n_axes);
        return p->n_axes;
    }
    if (c->n_in < 2 || !c->in[1])
        return -1;
    int n = shape_read_ints(c, c->in[1], "axes", axes, TENSOR_MAX_RANK);
    return n < 0 ? -2 : n;
}

static int squeeze_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    int64_t axes[TENSOR_MAX_RANK];
    int n = squeeze_axes(c, axes);
    if (n == -2)
        return -1;
    int drop[TENSOR_MAX_RANK] = { 0 };
    /* No axes, or an empty list (as some exporters write), squeezes every unit dim. */
    if (n <= 0) {
        for (int i = 0; i < x->rank; i++)
            drop[i] = x->dims[i] == 1;
    } else {
        if (shape_normalize_axes(c, axes, n, x->rank))
            return -1;
        for (int i = 0; i < n; i++) {
            if (x->dims[axes[i]] != 1)
                return op_error(c, "cannot squeeze axis %lld of size %lld (must be 1)",
                                (long long)axes[i], (long long)x->dims[axes[i]]);
            drop[axes[i]] = 1;
        }
    }
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = 0;
    for (int i = 0; i < x->rank; i++)
        if (!drop[i])
            y->dims[y->rank++] = x->dims[i];
    return 0;
}

static int unsqueeze_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    int64_t axes[TENSOR_MAX_RANK];
    int n = squeeze_axes(c, axes);
    if (n == -2)
        return -1;
    if (n < 0)
        return op_error(c, "the axes input is required");
    int rank = x->rank + n;
    if (rank > TENSOR_MAX_RANK)
        return op_error(c, "output rank %d exceeds the maximum %d", rank, TENSOR_MAX_RANK);
    if (shape_normalize_axes(c, axes, n, rank))
        return -1;
    int ins[TENSOR_MAX_RANK] = { 0 };
    for (int i = 0; i < n; i++)
        ins[axes[i]] = 1;
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = rank;
    for (int i = 0, k = 0; i < rank; i++)
        y->dims[i] = ins[i] ? 1 : x->dims[k++];
    return 0;
}

const struct op_def op_squeeze = {
    .domain = "", .name = "Squeeze",
    .since = { 1, 11, 13, 21, 23, 24, 25 },
    .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = squeeze_parse,
    .infer = squeeze_infer,
    .cost = shape_cost_view,
    .host_inputs = 1u << 1,
    .alias = 1,
    .grad = view_grad,
};

const struct op_def op_unsqueeze = {
    .domain = "", .name = "Unsqueeze",
    .since = { 1, 11, 13, 21, 23, 24, 25 },
    .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = squeeze_parse,
    .infer = unsqueeze_infer,
    .cost = shape_cost_view,
    .host_inputs = 1u << 1,
    .alias = 1,
    .grad = view_grad,
};

/* ---- Identity (1, 13, 14, 16, 19, 21, 23, 24, 25) ------------------------- */

static int identity_infer(struct op_call *c)
{
    struct tensor *y = c->out[0];
    y->dtype = c->in[0]->dtype;
    y->rank = c->in[0]->rank;
    memcpy(y->dims, c->in[0]->dims, sizeof y->dims);
    return 0;
}

const struct op_def op_identity = {
    .domain = "", .name = "Identity",
    .since = { 1, 13, 14, 16, 19, 21, 23, 24, 25 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .infer = identity_infer,
    .cost = shape_cost_view,
    .alias = 1,
    .grad = view_grad,
};
