/* ops/deform_conv.c — DeformConv (opsets 19, 22), 2-D: Y[b, o, p] = B[o] +
 * sum over the channels c of o's group and the kernel taps k of W[o, c, k]
 * * mask[b, g, k, p] * X[b, c](pos), where pos is tap k's place in the
 * ordinary convolution window of output point p (pads, strides,
 * dilations) moved by offset[b, g, k, (dy, dx), p], g = c's offset group,
 * and X[b, c](pos) is bilinear with zeros outside the plane (onnx's
 * reference samples with GridSample, align_corners, zeros padding). float
 * and double; version 22 only added types. Inputs of other ranks (1-D,
 * 3-D deformable convolution) are refused with a message: onnx's reference
 * implements 2-D only. The arithmetic is ops/vision-impl.h's; sums run in
 * double, channel by channel, tap by tap.
 *
 * Gradient: DeformConvGrad(dy, X, W, offset[, mask]) -> (dX, dW, doffset,
 * dmask, dB), each output element (dX: each channel plane) computed by one
 * function of ops/vision-impl.h in a fixed order (deterministic, and the
 * same on the device): dB sums dy; per tap and channel, with s the sample
 * and G = sum over o of dy[b, o, p] W[o, c, k]: dW sums dy m s, dmask G s,
 * doffset G m ds/dpos, and dX's four taps G m w_tap. */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/vision-params.h"
#include "ops/shape-impl.h"
#include "ops/vision-impl.h"

#define FLOATS_LIST "float, double"

static int dconv_ints(const struct onnx_node *node, const char *name, int64_t *out, int want,
                      int *n, char *err, size_t err_size)
{
    *n = -1;
    if (!onnx_node_attr(node, name))
        return 0;
    *n = onnx_node_attr_ints(node, name, out, want);
    if (*n != want)
        return ew_parse_error(err, err_size, "%s must have %d values (2-D DeformConv)", name, want);
    for (int i = 0; i < want; i++)
        if (out[i] < (strcmp(name, "pads") ? 1 : 0))
            return ew_parse_error(err, err_size, "%s[%d] is %lld; expected >= %d", name, i,
                                  (long long)out[i], strcmp(name, "pads") ? 1 : 0);
    return 0;
}

static int dconv_parse(const struct onnx_node *node, int version, void **params, char *err,
                       size_t err_size)
{
    (void)version;
    struct deform_conv_params p = { 0 };
    if (dconv_ints(node, "kernel_shape", p.kernel, 2, &p.n_kernel, err, err_size) ||
        dconv_ints(node, "pads", p.pads, 4, &p.n_pads, err, err_size) ||
        dconv_ints(node, "strides", p.strides, 2, &p.n_strides, err, err_size) ||
        dconv_ints(node, "dilations", p.dilations, 2, &p.n_dilations, err, err_size))
        return -1;
    p.group = onnx_node_attr_int(node, "group", 1);
    p.offset_group = onnx_node_attr_int(node, "offset_group", 1);
    if (p.group < 1 || p.offset_group < 1)
        return ew_parse_error(err, err_size, "group %lld and offset_group %lld must be >= 1",
                              (long long)p.group, (long long)p.offset_group);
    struct deform_conv_params *q = ew_params_new(sizeof *q, params, err, err_size);
    if (!q)
        return -1;
    *q = p;
    return 0;
}

int vision_dconv_geom(const struct op_call *c, struct vis_dconv *g)
{
    const struct deform_conv_params *p = c->params;
    const int grad = c->n_in >= 4 && !strcmp(c->def->name, "DeformConvGrad");
    const struct tensor *x = c->in[grad], *w = c->in[grad + 1], *off = c->in[grad + 2];
    const struct tensor *bias = grad ? NULL : c->n_in > 3 ? c->in[3] : NULL;
    const struct tensor *mask = c->n_in > 4 ? c->in[4] : NULL;
    char a[128], b[128];
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "X", x->dtype, FLOATS_LIST);
    if (x->rank != 4)
        return op_error(c, "X %s: only 2-D DeformConv ([N, C, H, W]) is implemented",
                        tensor_describe(x, a, sizeof a));
    const struct tensor *all[5] = { w, off, bias, mask, grad ? c->in[0] : NULL };
    for (int i = 0; i < 5; i++)
        if (all[i] && all[i]->dtype != x->dtype)
            return op_error(c, "input %s has dtype %s but X has %s; they must match",
                            i == 0 ? "W" : i == 1 ? "offset" : i == 2 ? "B" : i == 3 ? "mask" : "dy",
                            onnx_dtype_name(all[i]->dtype), onnx_dtype_name(x->dtype));
    memset(g, 0, sizeof *g);
    g->n = x->dims[0];
    g->ic = x->dims[1];
    g->h = x->dims[2];
    g->w = x->dims[3];
    g->group = p->group;
    g->offset_group = p->offset_group;
    if (w->rank != 4 || w->dims[0] % p->group || w->dims[1] * p->group != g->ic)
        return op_error(c, "W %s must be [M, C / group, kH, kW] with M divisible by group %lld "
                        "for X %s", tensor_describe(w, a, sizeof a), (long long)p->group,
                        tensor_describe(x, b, sizeof b));
    if (p->n_kernel >= 0 && (p->kernel[0] != w->dims[2] || p->kernel[1] != w->dims[3]))
        return op_error(c, "kernel_shape (%lld, %lld) differs from W %s",
                        (long long)p->kernel[0], (long long)p->kernel[1],
                        tensor_describe(w, a, sizeof a));
    if (g->ic % p->offset_group)
        return op_error(c, "X's %lld channels are not divisible by offset_group %lld",
                        (long long)g->ic, (long long)p->offset_group);
    g->oc = w->dims[0];
    g->kh = w->dims[2];
    g->kw = w->dims[3];
    g->icg = w->dims[1];
    g->ocg = g->oc / p->group;
    g->ic_per_og = g->ic / p->offset_group;
    g->pad_h = p->n_pads >= 0 ? p->pads[0] : 0;
    g->pad_w = p->n_pads >= 0 ? p->pads[1] : 0;
    g->stride_h = p->n_strides >= 0 ? p->strides[0] : 1;
    g->stride_w = p->n_strides >= 0 ? p->strides[1] : 1;
    g->dil_h = p->n_dilations >= 0 ? p->dilations[0] : 1;
    g->dil_w = p->n_dilations >= 0 ? p->dilations[1] : 1;
    const int64_t pb = p->n_pads >= 0 ? p->pads[2] : 0, pr = p->n_pads >= 0 ? p->pads[3] : 0;
    const int64_t eh = g->h + g->pad_h + pb - ((g->kh - 1) * g->dil_h + 1);
    const int64_t ew = g->w + g->pad_w + pr - ((g->kw - 1) * g->dil_w + 1);
    if (eh < 0 || ew < 0)
        return op_error(c, "the dilated kernel %lldx%lld does not fit the padded input %s",
                        (long long)((g->kh - 1) * g->dil_h + 1), (long long)((g->kw - 1) * g->dil_w + 1),
                        tensor_describe(x, a, sizeof a));
    g->oh = eh / g->stride_h + 1;
    g->ow = ew / g->stride_w + 1;
    const int64_t kk = g->kh * g->kw;
    if (off->rank != 4 || off->dims[0] != g->n || off->dims[1] != p->offset_group * kk * 2 ||
        off->dims[2] != g->oh || off->dims[3] != g->ow)
        return op_error(c, "offset %s must be [%lld, %lld, %lld, %lld] (offset_group * kH * kW * 2 "
                        "channels over the output)", tensor_describe(off, a, sizeof a),
                        (long long)g->n, (long long)(p->offset_group * kk * 2), (long long)g->oh,
                        (long long)g->ow);
    if (bias && (bias->rank != 1 || bias->dims[0] != g->oc))
        return op_error(c, "B %s must be [%lld]", tensor_describe(bias, a, sizeof a), (long long)g->oc);
    if (mask && (mask->rank != 4 || mask->dims[0] != g->n || mask->dims[1] != p->offset_group * kk ||
                 mask->dims[2] != g->oh || mask->dims[3] != g->ow))
        return op_error(c, "mask %s must be [%lld, %lld, %lld, %lld]", tensor_describe(mask, a, sizeof a),
                        (long long)g->n, (long long)(p->offset_group * kk), (long long)g->oh,
                        (long long)g->ow);
    if (grad) {
        const struct tensor *dy = c->in[0];
        if (dy->rank != 4 || dy->dims[0] != g->n || dy->dims[1] != g->oc || dy->dims[2] != g->oh ||
            dy->dims[3] != g->ow)
            return op_error(c, "dy %s does not match DeformConv's output",
                            tensor_describe(dy, a, sizeof a));
    }
    g->has_mask = mask != NULL;
    g->has_bias = bias != NULL;
    return 0;
}

static int dconv_infer(struct op_call *c)
{
    struct vis_dconv g;
    if (vision_dconv_geom(c, &g))
        return -1;
    if (!strcmp(c->def->name, "DeformConvGrad")) {
        for (int k = 0; k < c->n_out; k++) {
            if (!c->out[k])
                continue;
            /* dX, dW, doffset, dmask like X, W, offset, mask; dB [M] */
            const struct tensor *like = k < 3 ? c->in[1 + k] : k == 3 ? (c->n_in > 4 ? c->in[4] : NULL)
                                                                      : NULL;
            c->out[k]->dtype = c->in[1]->dtype;
            if (k == 3 && !like) {
                c->out[k]->rank = 4;
                c->out[k]->dims[0] = g.n;
                c->out[k]->dims[1] = g.offset_group * g.kh * g.kw;
                c->out[k]->dims[2] = g.oh;
                c->out[k]->dims[3] = g.ow;
            } else if (k == 4) {
                c->out[k]->rank = 1;
                c->out[k]->dims[0] = g.oc;
            } else {
                c->out[k]->rank = like->rank;
                memcpy(c->out[k]->dims, like->dims, sizeof like->dims);
            }
        }
        return 0;
    }
    struct tensor *y = c->out[0];
    y->dtype = c->in[0]->dtype;
    y->rank = 4;
    y->dims[0] = g.n;
    y->dims[1] = g.oc;
    y->dims[2] = g.oh;
    y->dims[3] = g.ow;
    return 0;
}

#define DCONV_CPU_DEF(T)                                                                    \
    static void dconv_forward_##T(const struct vis_dconv *g, const T *x, const T *w,        \
                                  const T *off, const T *mask, const T *bias, T *y)         \
    {                                                                                       \
        const int64_t pts = g->oh * g->ow;                                                  \
        for (int64_t b = 0; b < g->n; b++)                                                  \
            for (int64_t o = 0; o < g->oc; o++)                                             \
                for (int64_t p = 0; p < pts; p++)                                           \
                    y[(b * g->oc + o) * pts + p] =                                          \
                        (T)vis_dconv_point_##T(g, x, w, off, mask, bias, b, o, p);          \
    }                                                                                       \
    /* the passes of ops/vision-impl.h's DeformConvGrad functions, element by             \
     * element (the CUDA kernels run the same functions, one thread each) */              \
    static void dconv_backward_##T(const struct vis_dconv *g, const T *dy, const T *x,      \
                                   const T *w, const T *off, const T *mask, T *dx, T *dw,   \
                                   T *doff, T *dmask, T *db)                                \
    {                                                                                       \
        const int64_t pts = g->oh * g->ow, kk = g->kh * g->kw;                              \
        if (db)                                                                             \
            for (int64_t o = 0; o < g->oc; o++)                                             \
                db[o] = vis_dconv_db_##T(g, dy, o);                                         \
        if (dw)                                                                             \
            for (int64_t o = 0; o < g->oc; o++)                                             \
                for (int64_t cl = 0; cl < g->icg; cl++)                                     \
                    for (int64_t k = 0; k < kk; k++)                                        \
                        dw[(o * g->icg + cl) * kk + k] =                                    \
                            vis_dconv_dw_##T(g, dy, x, off, mask, o, cl, k);                \
        if (doff || dmask)                                                                  \
            for (int64_t b = 0; b < g->n; b++)                                              \
                for (int64_t og = 0; og < g->offset_group; og++)                            \
                    for (int64_t k = 0; k < kk; k++)                                        \
                        for (int64_t p = 0; p < pts; p++) {                                 \
                            double gy, gx, gm;                                              \
                            vis_dconv_doff_##T(g, dy, x, w, off, mask, b, og, k, p, &gy,    \
                                               &gx, &gm);                                   \
                            const int64_t base = (b * g->offset_group + og) * kk + k;       \
                            if (doff) {                                                     \
                                doff[base * 2 * pts + p] = (T)gy;                           \
                                doff[(base * 2 + 1) * pts + p] = (T)gx;                     \
                            }                                                               \
                            if (dmask)                                                      \
                                dmask[base * pts + p] = (T)gm;                              \
                        }                                                                   \
        if (dx)                                                                             \
            for (int64_t pl = 0; pl < g->n * g->ic; pl++)                                   \
                vis_dconv_dx_plane_##T(g, dy, w, off, mask, pl / g->ic, pl % g->ic,         \
                                       dx + pl * g->h * g->w);                              \
    }
DCONV_CPU_DEF(float)
DCONV_CPU_DEF(double)

static void *dconv_data(const struct op_call *c, int i)
{
    return c->n_in > i && c->in[i] ? c->in[i]->data : NULL;
}

static void *dconv_out(const struct op_call *c, int k)
{
    return c->n_out > k && c->out[k] ? c->out[k]->data : NULL;
}

static int dconv_cpu(struct op_call *c)
{
    struct vis_dconv g;
    if (vision_dconv_geom(c, &g))
        return -1;
    if (!strcmp(c->def->name, "DeformConvGrad")) {
        void *dm = dconv_out(c, 3);  /* without a mask: the gradient of the ones it used */
        if (c->in[1]->dtype == ONNX_DTYPE_FLOAT)
            dconv_backward_float(&g, c->in[0]->data, c->in[1]->data, c->in[2]->data,
                                 c->in[3]->data, dconv_data(c, 4), dconv_out(c, 0), dconv_out(c, 1),
                                 dconv_out(c, 2), dm, dconv_out(c, 4));
        else
            dconv_backward_double(&g, c->in[0]->data, c->in[1]->data, c->in[2]->data,
                                  c->in[3]->data, dconv_data(c, 4), dconv_out(c, 0), dconv_out(c, 1),
                                  dconv_out(c, 2), dm, dconv_out(c, 4));
        return 0;
    }
    if (c->in[0]->dtype == ONNX_DTYPE_FLOAT)
        dconv_forward_float(&g, c->in[0]->data, c->in[1]->data, c->in[2]->data, dconv_data(c, 4),
                            dconv_data(c, 3), c->out[0]->data);
    else
        dconv_forward_double(&g, c->in[0]->data, c->in[1]->data, c->in[2]->data, dconv_data(c, 4),
                             dconv_data(c, 3), c->out[0]->data);
    return 0;
}

/* Per output element: C/group * kH * kW taps of about 12 flops. */
static struct op_cost dconv_cost(const struct op_call *c)
{
    const int grad = !strcmp(c->def->name, "DeformConvGrad");
    const struct tensor *w = c->in[grad + 1];
    double taps = (double)(w->dims[1] * w->dims[2] * w->dims[3]);
    struct op_cost k = ew_cost_scaled(c, 12.0 * taps);
    if (grad)
        k.flops = 24.0 * taps * (double)tensor_numel(c->in[0]);
    return k;
}

static int dconv_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    int any = 0;
    for (int i = 0; i < g->fwd->n_in; i++)
        any |= g->need_dx[i] && g->in[i] >= 0;
    if (!any)
        return 0;
    const int has_mask = g->fwd->n_in > 4 && g->in[4] >= 0;
    int in[5] = { g->dy[0], g->in[0], g->in[1], g->in[2], has_mask ? g->in[4] : -1 }, out[5];
    if (g->emit(g, "DeformConvGrad", g->node->attrs, g->node->n_attrs, has_mask ? 5 : 4, in, 5, out))
        return -1;
    /* dX, dW, doffset, dB, dmask: the forward's inputs 0, 1, 2, 3, 4 */
    static const int from[5] = { 0, 1, 2, 4, 3 };
    for (int i = 0; i < 5 && i < g->fwd->n_in; i++)
        if (g->need_dx[i] && g->in[i] >= 0 && g->add_dx(g, i, out[from[i]]))
            return -1;
    return 0;
}

const struct op_def op_deform_conv = {
    .domain = "", .name = "DeformConv", .since = { 19, 22 },
    .min_in = 3, .max_in = 5, .min_out = 1, .max_out = 1,
    .parse = dconv_parse, .infer = dconv_infer, .cost = dconv_cost,
    .kernel = { [BACKEND_CPU] = dconv_cpu },
    .grad = dconv_grad, .grad_saves_in = 0x17u,
};

const struct op_def op_deform_conv_grad = {
    .domain = "dtrexec", .name = "DeformConvGrad", .since = { 1 },
    .min_in = 4, .max_in = 5, .min_out = 1, .max_out = 5,
    .parse = dconv_parse, .infer = dconv_infer, .cost = dconv_cost,
    .kernel = { [BACKEND_CPU] = dconv_cpu },
};
