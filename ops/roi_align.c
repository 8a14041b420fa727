/* ops/roi_align.c — RoiAlign (opsets 10, 16, 22): pools X [N, C, H, W] over
 * each region of interest rois[r] = (x1, y1, x2, y2) (scaled by
 * spatial_scale) of image batch_indices[r] into Y [R, C, output_height,
 * output_width]; each bin averages (mode avg) or takes the largest
 * (mode max, as onnx's reference and onnxruntime: the largest weighted tap
 * w * x) of sampling_ratio^2 bilinear samples (0: ceil(roi / bins) per
 * axis). coordinate_transformation_mode (from 16, default half_pixel)
 * half_pixel shifts by -0.5 pixel; output_half_pixel (opset 10's only
 * behaviour) does not and makes every roi at least 1 x 1. float and double;
 * version 22 only added types. batch_indices is read on the host
 * (host_inputs) and checked against N. The arithmetic is ops/vision-impl.h's.
 *
 * Gradient (X only; rois are not differentiated: the sample grid moves in
 * steps): RoiAlignGrad(dy, rois, batch_indices) -> dX scatters dy with each
 * tap's weight / count (avg) or to the winning tap (max), roi by roi in
 * order: deterministic. */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/vision-params.h"
#include "ops/shape-impl.h"
#include "ops/vision-impl.h"

#define FLOATS_LIST "float, double"

static int roi_is_grad(const struct op_call *c)
{
    return !strcmp(c->def->name, "RoiAlignGrad");
}

/* RoiAlignGrad's parameters: the forward's and X's shape (attribute `shape`). */
struct roi_grad_params {
    struct roi_align_params p;
    struct tensor x;
};

static int roi_parse_into(const struct onnx_node *node, int version, struct roi_align_params *p,
                          char *err, size_t err_size)
{
    const char *mode = onnx_node_attr_string(node, "mode", "avg");
    const char *ctm = onnx_node_attr_string(node, "coordinate_transformation_mode",
                                            version >= 16 ? "half_pixel" : "output_half_pixel");
    if (!strcmp(mode, "avg"))
        p->max_mode = 0;
    else if (!strcmp(mode, "max"))
        p->max_mode = 1;
    else
        return ew_parse_error(err, err_size, "mode '%s' is not one of avg, max", mode);
    if (version < 16 && onnx_node_attr(node, "coordinate_transformation_mode"))
        return ew_parse_error(err, err_size,
                              "coordinate_transformation_mode is an attribute from opset 16 on");
    if (!strcmp(ctm, "half_pixel"))
        p->half_pixel = 1;
    else if (!strcmp(ctm, "output_half_pixel"))
        p->half_pixel = 0;
    else
        return ew_parse_error(err, err_size, "coordinate_transformation_mode '%s' is not one of "
                              "half_pixel, output_half_pixel", ctm);
    p->out_h = onnx_node_attr_int(node, "output_height", 1);
    p->out_w = onnx_node_attr_int(node, "output_width", 1);
    p->sampling_ratio = onnx_node_attr_int(node, "sampling_ratio", 0);
    p->spatial_scale = onnx_node_attr_float(node, "spatial_scale", 1.0f);
    if (p->out_h < 1 || p->out_w < 1)
        return ew_parse_error(err, err_size, "output_height %lld and output_width %lld must be >= 1",
                              (long long)p->out_h, (long long)p->out_w);
    if (p->sampling_ratio < 0)
        return ew_parse_error(err, err_size, "sampling_ratio %lld must be >= 0",
                              (long long)p->sampling_ratio);
    return 0;
}

static int roi_parse(const struct onnx_node *node, int version, void **params, char *err,
                     size_t err_size)
{
    struct roi_align_params p = { 0 };
    if (roi_parse_into(node, version, &p, err, err_size))
        return -1;
    struct roi_align_params *q = ew_params_new(sizeof *q, params, err, err_size);
    if (!q)
        return -1;
    *q = p;
    return 0;
}

/* The gradient kernel is emitted with every attribute spelled out, at the
 * opset-16 meaning. */
static int roi_grad_parse(const struct onnx_node *node, int version, void **params, char *err,
                          size_t err_size)
{
    (void)version;
    struct roi_align_params p = { 0 };
    struct tensor x;
    if (roi_parse_into(node, 16, &p, err, err_size) || shape_parse_target(node, &x, err, err_size))
        return -1;
    if (x.rank != 4)
        return ew_parse_error(err, err_size, "shape must have 4 dims, got %d", x.rank);
    struct roi_grad_params *q = ew_params_new(sizeof *q, params, err, err_size);
    if (!q)
        return -1;
    q->p = p;
    q->x = x;
    return 0;
}

int vision_roi_geom(const struct op_call *c, struct vis_roi *g)
{
    const int grad = roi_is_grad(c);
    const struct roi_align_params *p = c->params;
    const struct tensor *x = grad ? &((const struct roi_grad_params *)c->params)->x : c->in[0];
    const struct tensor *rois = c->in[1], *bi = c->in[2], *ref = c->in[grad ? 1 : 0];
    char a[128], b[128];
    if (ref->dtype != ONNX_DTYPE_FLOAT && ref->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, grad ? "rois" : "X", ref->dtype, FLOATS_LIST);
    if (x->rank != 4)
        return op_error(c, "X %s must be [N, C, H, W]", tensor_describe(x, a, sizeof a));
    if (rois->dtype != ref->dtype || rois->rank != 2 || rois->dims[1] != 4)
        return op_error(c, "rois %s must be %s[num_rois, 4]", tensor_describe(rois, a, sizeof a),
                        onnx_dtype_name(ref->dtype));
    if (bi->dtype != ONNX_DTYPE_INT64 || bi->rank != 1 || bi->dims[0] != rois->dims[0])
        return op_error(c, "batch_indices %s must be int64[%lld] (one per roi)",
                        tensor_describe(bi, b, sizeof b), (long long)rois->dims[0]);
    for (int64_t r = 0; r < bi->dims[0]; r++) {
        int64_t v = tensor_get_int(bi, r);
        if (v < 0 || v >= x->dims[0])
            return op_error(c, "batch_indices[%lld] = %lld is outside X's %lld images",
                            (long long)r, (long long)v, (long long)x->dims[0]);
    }
    memset(g, 0, sizeof *g);
    g->max_mode = p->max_mode;
    g->half_pixel = p->half_pixel;
    g->n = x->dims[0];
    g->c = x->dims[1];
    g->h = x->dims[2];
    g->w = x->dims[3];
    g->rois = rois->dims[0];
    g->out_h = p->out_h;
    g->out_w = p->out_w;
    g->sampling_ratio = p->sampling_ratio;
    g->spatial_scale = (double)p->spatial_scale;
    if ((g->h == 0 || g->w == 0) && g->rois > 0 && g->c > 0)
        return op_error(c, "X %s has an empty feature map", tensor_describe(x, a, sizeof a));
    if (grad) {
        const struct tensor *dy = c->in[0];
        if (dy->dtype != ref->dtype || dy->rank != 4 || dy->dims[0] != g->rois ||
            dy->dims[1] != g->c || dy->dims[2] != g->out_h || dy->dims[3] != g->out_w)
            return op_error(c, "dy %s does not match RoiAlign's output",
                            tensor_describe(dy, a, sizeof a));
    }
    return 0;
}

static int roi_infer(struct op_call *c)
{
    struct vis_roi g;
    if (vision_roi_geom(c, &g))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = c->in[1]->dtype;
    y->rank = 4;
    if (roi_is_grad(c)) {
        memcpy(y->dims, ((const struct roi_grad_params *)c->params)->x.dims, sizeof y->dims);
        return 0;
    }
    y->dims[0] = g.rois;
    y->dims[1] = g.c;
    y->dims[2] = g.out_h;
    y->dims[3] = g.out_w;
    return 0;
}

#define ROI_CPU_DEF(T)                                                                      \
    static void roi_forward_##T(const struct vis_roi *g, const T *x, const T *rois,         \
                                const struct tensor *bi, T *y)                              \
    {                                                                                       \
        struct vis_roi_box box;                                                             \
        int64_t arg;                                                                        \
        double aw;                                                                          \
        for (int64_t r = 0; r < g->rois; r++) {                                             \
            const T *q = rois + r * 4;                                                      \
            vis_roi_box_of(g, (double)q[0], (double)q[1], (double)q[2], (double)q[3], &box);   \
            const int64_t b = tensor_get_int(bi, r);                                        \
            for (int64_t ch = 0; ch < g->c; ch++) {                                         \
                const T *plane = x + (b * g->c + ch) * g->h * g->w;                         \
                T *out = y + (r * g->c + ch) * g->out_h * g->out_w;                         \
                for (int64_t ph = 0; ph < g->out_h; ph++)                                   \
                    for (int64_t pw = 0; pw < g->out_w; pw++)                               \
                        out[ph * g->out_w + pw] =                                           \
                            (T)vis_roi_bin_##T(g, &box, plane, ph, pw, &arg, &aw);          \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    /* dX += the taps' share of dy; max mode needs X for the winner, which the              \
     * backward call does not have, so it is only offered for avg (see grad). */          \
    static void roi_backward_##T(const struct vis_roi *g, const T *dy, const T *rois,       \
                                 const struct tensor *bi, T *dx)                            \
    {                                                                                       \
        struct vis_roi_box box;                                                             \
        int64_t pos[4];                                                                     \
        double wt[4];                                                                       \
        memset(dx, 0, sizeof(T) * (size_t)(g->n * g->c * g->h * g->w));                     \
        for (int64_t r = 0; r < g->rois; r++) {                                             \
            const T *q = rois + r * 4;                                                      \
            vis_roi_box_of(g, (double)q[0], (double)q[1], (double)q[2], (double)q[3], &box);   \
            const int64_t b = tensor_get_int(bi, r);                                        \
            for (int64_t ch = 0; ch < g->c; ch++) {                                         \
                T *plane = dx + (b * g->c + ch) * g->h * g->w;                              \
                const T *d = dy + (r * g->c + ch) * g->out_h * g->out_w;                    \
                for (int64_t ph = 0; ph < g->out_h; ph++)                                   \
                    for (int64_t pw = 0; pw < g->out_w; pw++) {                             \
                        const double v = (double)d[ph * g->out_w + pw] / box.count;         \
                        for (int64_t iy = 0; iy < box.grid_h; iy++)                         \
                            for (int64_t ix = 0; ix < box.grid_w; ix++) {                   \
                                vis_roi_taps(g, &box, ph, pw, iy, ix, pos, wt);             \
                                for (int k = 0; k < 4; k++)                                 \
                                    plane[pos[k]] = (T)((double)plane[pos[k]] + v * wt[k]); \
                            }                                                               \
                    }                                                                       \
            }                                                                               \
        }                                                                                   \
    }
ROI_CPU_DEF(float)
ROI_CPU_DEF(double)

static int roi_cpu(struct op_call *c)
{
    struct vis_roi g;
    if (vision_roi_geom(c, &g))
        return -1;
    const int grad = roi_is_grad(c);
    const struct tensor *rois = c->in[1], *bi = c->in[2];
    if (grad && g.max_mode)
        return op_error(c, "the gradient of mode max is not implemented");
    if (rois->dtype == ONNX_DTYPE_FLOAT) {
        if (grad)
            roi_backward_float(&g, c->in[0]->data, rois->data, bi, c->out[0]->data);
        else
            roi_forward_float(&g, c->in[0]->data, rois->data, bi, c->out[0]->data);
    } else {
        if (grad)
            roi_backward_double(&g, c->in[0]->data, rois->data, bi, c->out[0]->data);
        else
            roi_forward_double(&g, c->in[0]->data, rois->data, bi, c->out[0]->data);
    }
    return 0;
}

/* About 4 taps of 2 flops per sample, and sampling_ratio^2 samples (2 x 2
 * assumed when adaptive). */
static struct op_cost roi_cost(const struct op_call *c)
{
    const struct roi_align_params *p = c->params;
    double s = p->sampling_ratio > 0 ? (double)(p->sampling_ratio * p->sampling_ratio) : 4.0;
    return ew_cost_scaled(c, 10.0 * s);
}

static int roi_grad(struct grad_ctx *g)
{
    const struct roi_align_params *p = g->fwd->params;
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    if (p->max_mode)
        return grad_error(g, "RoiAlign's gradient is implemented for mode avg only, not max");
    const struct tensor *x = g->shape(g, g->in[0]);
    if (!x)
        return grad_error(g, "no shape for input 0");
    struct onnx_attr a[7] = {
        { .name = "mode", .type = ONNX_ATTR_STRING, .s = (char *)"avg" },
        { .name = "coordinate_transformation_mode", .type = ONNX_ATTR_STRING,
          .s = (char *)(p->half_pixel ? "half_pixel" : "output_half_pixel") },
        shape_attr_int("output_height", p->out_h),
        shape_attr_int("output_width", p->out_w),
        shape_attr_int("sampling_ratio", p->sampling_ratio),
        { .name = "spatial_scale", .type = ONNX_ATTR_FLOAT, .f = p->spatial_scale },
        shape_attr_ints("shape", x->rank, x->dims),
    };
    a[0].s_len = strlen(a[0].s);
    a[1].s_len = strlen(a[1].s);
    int in[3] = { g->dy[0], g->in[1], g->in[2] }, out;
    if (g->emit(g, "RoiAlignGrad", a, 7, 3, in, 1, &out))
        return -1;
    return g->add_dx(g, 0, out);
}

const struct op_def op_roi_align = {
    .domain = "", .name = "RoiAlign", .since = { 10, 16, 22 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = roi_parse, .infer = roi_infer, .cost = roi_cost,
    .kernel = { [BACKEND_CPU] = roi_cpu },
    .host_inputs = 4u,
    .grad = roi_grad, .grad_saves_in = 6u,
};

const struct op_def op_roi_align_grad = {
    .domain = "dtrexec", .name = "RoiAlignGrad", .since = { 1 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = roi_grad_parse, .infer = roi_infer, .cost = roi_cost,
    .kernel = { [BACKEND_CPU] = roi_cpu },
    .host_inputs = 4u,
};
