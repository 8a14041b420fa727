/* ops/depth_space.c — DepthToSpace (opsets 1, 11, 13, 28; `mode` DCR or CRD
 * from 11) and SpaceToDepth (1, 13, 28; `mode` from 28): a rank-4 tensor
 * N x C x H x W rearranged between its channels and blocksize x blocksize
 * spatial blocks, any fixed-size dtype. Each is one strided copy: the input
 * seen as a rank-6 array and read through the op's permutation (the
 * numpy reshape / transpose / reshape of the ONNX definition), as
 * Transpose reads its input (shape_copy_strided; on the device the layout
 * family's copy, ops/cuda/misc.c).
 *
 * Gradient: the other operator with the same blocksize and mode, which is
 * the inverse permutation. Versions differ only in the attribute `mode`
 * and in type lists. */
#include <stdlib.h>
#include <string.h>

#include "ops/shape-impl.h"
#include "ops/misc-impl.h"
#include "ops/misc-params.h"

static int depth_space_parse(const struct onnx_node *node, int version, void **params,
                             char *err, size_t err_size, int to_space)
{
    const struct onnx_attr *bs = onnx_node_attr(node, "blocksize");
    if (!bs || bs->type != ONNX_ATTR_INT) {
        snprintf(err, err_size, "attribute blocksize (an int) is required");
        return -1;
    }
    if (bs->i < 1) {
        snprintf(err, err_size, "blocksize %lld must be at least 1", (long long)bs->i);
        return -1;
    }
    /* `mode` exists from DepthToSpace-11 and SpaceToDepth-28 but is read at
     * every version: gradients are emitted at the runtime's gradient opset
     * (runtime/emit.c), below 28, and DepthToSpace CRD's is SpaceToDepth CRD. */
    (void)version;
    const char *mode = onnx_node_attr_string(node, "mode", "DCR");
    if (strcmp(mode, "DCR") && strcmp(mode, "CRD")) {
        snprintf(err, err_size, "mode '%s' is neither DCR nor CRD", mode);
        return -1;
    }
    struct depth_space_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    p->blocksize = bs->i;
    p->crd = !strcmp(mode, "CRD");
    p->to_space = to_space;
    *params = p;
    return 0;
}

static int d2s_parse(const struct onnx_node *node, int version, void **params, char *err,
                     size_t err_size)
{
    return depth_space_parse(node, version, params, err, err_size, 1);
}

static int s2d_parse(const struct onnx_node *node, int version, void **params, char *err,
                     size_t err_size)
{
    return depth_space_parse(node, version, params, err, err_size, 0);
}

static int depth_space_infer(struct op_call *c)
{
    const struct depth_space_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    int64_t bs = p->blocksize;
    char d[128];
    if (x->rank != 4)
        return op_error(c, "input %s must have rank 4 (N x C x H x W)",
                        tensor_describe(x, d, sizeof d));
    if (onnx_dtype_size(x->dtype) == 0)
        return op_error(c, "dtype %s has no fixed element size", onnx_dtype_name(x->dtype));
    y->dtype = x->dtype;
    y->rank = 4;
    y->dims[0] = x->dims[0];
    if (p->to_space) {
        if (x->dims[1] % (bs * bs))
            return op_error(c, "channels of %s are not divisible by blocksize^2 = %lld",
                            tensor_describe(x, d, sizeof d), (long long)(bs * bs));
        y->dims[1] = x->dims[1] / (bs * bs);
        y->dims[2] = x->dims[2] * bs;
        y->dims[3] = x->dims[3] * bs;
    } else {
        if (x->dims[2] % bs || x->dims[3] % bs)
            return op_error(c, "height and width of %s are not divisible by blocksize %lld",
                            tensor_describe(x, d, sizeof d), (long long)bs);
        y->dims[1] = x->dims[1] * bs * bs;
        y->dims[2] = x->dims[2] / bs;
        y->dims[3] = x->dims[3] / bs;
    }
    return 0;
}

void misc_depth_space_plan(const struct op_call *c, int64_t *dims, int64_t *strides)
{
    const struct depth_space_params *p = c->params;
    const struct tensor *x = c->in[0];
    const int64_t b = x->dims[0], ch = x->dims[1], h = x->dims[2], w = x->dims[3];
    const int64_t bs = p->blocksize;
    int64_t view[6];
    int perm[6];
    if (p->to_space) {
        const int64_t cq = ch / (bs * bs);
        static const int dcr[6] = { 0, 3, 4, 1, 5, 2 }, crd[6] = { 0, 1, 4, 2, 5, 3 };
        if (p->crd) {
            int64_t v[6] = { b, cq, bs, bs, h, w };
            memcpy(view, v, sizeof view);
        } else {
            int64_t v[6] = { b, bs, bs, cq, h, w };
            memcpy(view, v, sizeof view);
        }
        memcpy(perm, p->crd ? crd : dcr, sizeof perm);
    } else {
        static const int dcr[6] = { 0, 3, 5, 1, 2, 4 }, crd[6] = { 0, 1, 3, 5, 2, 4 };
        int64_t v[6] = { b, ch, h / bs, bs, w / bs, bs };
        memcpy(view, v, sizeof view);
        memcpy(perm, p->crd ? crd : dcr, sizeof perm);
    }
    int64_t vs[6], s = 1;
    for (int i = 5; i >= 0; i--) {
        vs[i] = s;
        s *= view[i];
    }
    for (int i = 0; i < 6; i++) {
        dims[i] = view[perm[i]];
        strides[i] = vs[perm[i]];
    }
}

static int depth_space_cpu(struct op_call *c)
{
    int64_t dims[6], st[6];
    if (tensor_numel(c->out[0]) == 0)
        return 0;
    misc_depth_space_plan(c, dims, st);
    shape_copy_strided(c->out[0]->data, c->in[0]->data, onnx_dtype_size(c->in[0]->dtype), 6,
                       dims, st);
    return 0;
}

/* The other operator, same blocksize and mode: the inverse permutation. */
static int depth_space_grad(struct grad_ctx *g)
{
    const struct depth_space_params *p = g->fwd->params;
    if (!g->need_dx[0] || g->dy[0] < 0)
        return 0;
    struct onnx_attr a[2] = {
        { .name = "blocksize", .type = ONNX_ATTR_INT, .i = p->blocksize },
        { .name = "mode", .type = ONNX_ATTR_STRING, .s = (char *)(p->crd ? "CRD" : "DCR"),
          .s_len = 3 },
    };
    int dx;
    if (g->emit(g, p->to_space ? "SpaceToDepth" : "DepthToSpace", a, 2, 1, &g->dy[0], 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_depth_to_space = {
    .domain = "", .name = "DepthToSpace", .since = { 1, 11, 13, 28 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = d2s_parse, .infer = depth_space_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = depth_space_cpu },
    .grad = depth_space_grad,
};

const struct op_def op_space_to_depth = {
    .domain = "", .name = "SpaceToDepth", .since = { 1, 13, 28 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = s2d_parse, .infer = depth_space_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = depth_space_cpu },
    .grad = depth_space_grad,
};
