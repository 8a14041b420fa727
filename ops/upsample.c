/* ops/upsample.c — Upsample (opsets 1, 7, 9, 10; deprecated since 10): the
 * Resize of opset 10, which is Upsample under another name, run as that
 * op's own code (ops/resize.c; on the device ops/cuda/layout_resize.c):
 * asymmetric coordinates, nearest (floor) or linear interpolation. The
 * scale factors come from input 1 (9, 10), the attribute `scales` (7), or
 * height_scale and width_scale of a 4-D input (1, whose mode "bilinear" is
 * linear). Gradient: Resize's own, ResizeGrad. */
#include <stdlib.h>
#include <string.h>

#include "ops/misc-impl.h"
#include "ops/misc-params.h"
#include "ops/shape-impl.h"

extern const struct op_def op_resize;

static void upsample_params_free(void *params)
{
    struct upsample_params *p = params;
    if (p)
        free(p->resize);
    free(p);
}

static int upsample_parse(const struct onnx_node *node, int version, void **params, char *err,
                          size_t err_size)
{
    struct upsample_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    const char *mode = onnx_node_attr_string(node, "mode", "nearest");
    if (version < 7 && !strcmp(mode, "bilinear"))
        mode = "linear";
    if (strcmp(mode, "nearest") && strcmp(mode, "linear")) {
        free(p);
        return shape_parse_error(err, err_size, node, "mode '%s' is neither nearest nor %s", mode,
                                 version < 7 ? "bilinear" : "linear");
    }
    p->scales_from_input = version >= 9;
    if (version >= 7 && version < 9) {
        p->n_scales = onnx_node_attr_floats(node, "scales", p->scales, TENSOR_MAX_RANK);
        if (p->n_scales < 0) {
            free(p);
            return shape_parse_error(err, err_size, node,
                                     "attribute scales (one float per axis, at most %d) is required",
                                     TENSOR_MAX_RANK);
        }
    } else if (version < 7) {
        const struct onnx_attr *h = onnx_node_attr(node, "height_scale");
        const struct onnx_attr *w = onnx_node_attr(node, "width_scale");
        if (!h || !w) {
            free(p);
            return shape_parse_error(err, err_size, node,
                                     "attributes height_scale and width_scale are required");
        }
        p->n_scales = 4;
        p->scales[0] = p->scales[1] = 1;
        p->scales[2] = onnx_node_attr_float(node, "height_scale", 1);
        p->scales[3] = onnx_node_attr_float(node, "width_scale", 1);
    }
    struct onnx_attr a = { .name = "mode", .type = ONNX_ATTR_STRING, .s = (char *)mode,
                           .s_len = strlen(mode) };
    struct onnx_node r = { .name = node->name, .op_type = "Resize", .domain = "", .n_attrs = 1,
                           .attrs = &a };
    if (op_resize.parse(&r, 10, &p->resize, err, err_size)) {
        free(p);
        return -1;
    }
    *params = p;
    return 0;
}

int misc_upsample_call(const struct op_call *c, struct misc_upsample *u)
{
    const struct upsample_params *p = c->params;
    u->call = *c;
    u->call.def = &op_resize;
    u->call.version = 10;
    u->call.params = p->resize;
    u->in[0] = c->in[0];
    if (p->scales_from_input) {
        if (c->n_in < 2)
            return op_error(c, "input 1 (scales) is required from opset 9");
        u->in[1] = c->in[1];
    } else {
        if (p->n_scales != c->in[0]->rank)
            return op_error(c, "%d scales for an input of rank %d", p->n_scales, c->in[0]->rank);
        memset(&u->scales, 0, sizeof u->scales);
        u->scales.dtype = ONNX_DTYPE_FLOAT;
        u->scales.rank = 1;
        u->scales.dims[0] = p->n_scales;
        u->scales.data = (void *)p->scales;
        u->in[1] = &u->scales;
    }
    u->call.in = u->in;
    u->call.n_in = 2;
    return 0;
}

static int upsample_infer(struct op_call *c)
{
    struct misc_upsample u;
    if (misc_upsample_call(c, &u))
        return -1;
    return op_resize.infer(&u.call);
}

static int upsample_cpu(struct op_call *c)
{
    struct misc_upsample u;
    if (misc_upsample_call(c, &u))
        return -1;
    return op_resize.kernel[BACKEND_CPU](&u.call);
}

/* Resize's emitter reads only g->fwd (its plan) and dy: it runs with the
 * Resize call in g->fwd for the time of the call. */
static int upsample_grad(struct grad_ctx *g)
{
    struct misc_upsample u;
    if (misc_upsample_call(g->fwd, &u))
        return -1;
    const struct op_call *fwd = g->fwd;
    g->fwd = &u.call;
    int rc = op_resize.grad(g);
    g->fwd = fwd;
    return rc;
}

static struct op_cost upsample_cost(const struct op_call *c)
{
    struct misc_upsample u;
    if (misc_upsample_call(c, &u))
        return cost_memory(c);
    return op_resize.cost(&u.call);
}

const struct op_def op_upsample = {
    .domain = "", .name = "Upsample", .since = { 1, 7, 9, 10 },
    .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = upsample_parse, .params_free = upsample_params_free,
    .infer = upsample_infer, .cost = upsample_cost,
    .kernel = { [BACKEND_CPU] = upsample_cpu },
    .host_inputs = 2u,
    .grad = upsample_grad, .grad_saves_in = 2u,
};
