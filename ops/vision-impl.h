/* ops/vision-impl.h — what the CPU files of the vision operators
 * (ops/center_crop_pad.c, tensor_scatter.c, roi_align.c, deform_conv.c)
 * share with their CUDA kernels (ops/cuda/vision.c, vision_kernels.cu):
 * the geometry both backends read, and the per-point arithmetic written once
 * for the host and the device, so that the two make the same operations in
 * the same order (bit-identical results, as DTR's recomputation needs).
 *
 * The arithmetic part includes nothing of ours and compiles under nvcc; the
 * plan functions below it are host-only. Not part of the ops/ interface. */
#ifndef DTRX_OPS_VISION_IMPL_H
#define DTRX_OPS_VISION_IMPL_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define VIS_FN __host__ __device__ static inline
#else
#define VIS_FN static inline
#endif

#define VIS_MAX_RANK 8

/* ---- CenterCropPad: output index o along axis a reads input o + shift[a]
 * when that lies inside the input, else the output is 0. */
struct vis_crop {
    int rank;
    int64_t numel;                             /* of the output */
    int64_t out_dims[VIS_MAX_RANK], in_dims[VIS_MAX_RANK], shift[VIS_MAX_RANK];
};

/* The input offset output element i reads, or -1 for a padded zero. */
VIS_FN int64_t vis_crop_source(const struct vis_crop *g, int64_t i)
{
    int64_t off = 0, stride = 1;
    for (int a = g->rank - 1; a >= 0; a--) {
        int64_t o = i % g->out_dims[a];
        i /= g->out_dims[a];
        int64_t s = o + g->shift[a];
        if (s < 0 || s >= g->in_dims[a])
            return -1;
        off += s * stride;
        stride *= g->in_dims[a];
    }
    return off;
}

/* ---- TensorScatter: the cache is [outer, max_seq, inner], update [outer,
 * seq, inner], seq <= max_seq; row o belongs to batch entry o / per_batch,
 * whose write index is w[b]. Row s of the update lands on row w[b] + s (mod
 * max_seq when circular: distinct rows still). */
struct vis_scatter {
    int circular;
    int64_t outer, per_batch, max_seq, seq, inner;
};

VIS_FN int64_t vis_scatter_row(const struct vis_scatter *g, int64_t w, int64_t s)
{
    int64_t r = w + s;
    if (g->circular) {
        r %= g->max_seq;
        if (r < 0)
            r += g->max_seq;
    }
    return r;
}

/* ---- RoiAlign: X [n, c, h, w], rois [r, 4] (x1, y1, x2, y2), Y [r, c,
 * out_h, out_w]. Geometry in double, as onnx's reference computes it. */
struct vis_roi {
    int max_mode, half_pixel;
    int64_t n, c, h, w, rois, out_h, out_w, sampling_ratio;
    double spatial_scale;
};

struct vis_roi_box {
    double start_h, start_w, bin_h, bin_w;
    int64_t grid_h, grid_w;
    double count;
};

VIS_FN void vis_roi_box_of(const struct vis_roi *g, double x1, double y1, double x2, double y2,
                        struct vis_roi_box *b)
{
    double off = g->half_pixel ? 0.5 : 0.0;
    b->start_w = x1 * g->spatial_scale - off;
    b->start_h = y1 * g->spatial_scale - off;
    double rw = x2 * g->spatial_scale - off - b->start_w;
    double rh = y2 * g->spatial_scale - off - b->start_h;
    if (!g->half_pixel) {
        rw = rw > 1.0 ? rw : 1.0;
        rh = rh > 1.0 ? rh : 1.0;
    }
    b->bin_h = rh / (double)g->out_h;
    b->bin_w = rw / (double)g->out_w;
    b->grid_h = g->sampling_ratio > 0 ? g->sampling_ratio : (int64_t)ceil(rh / (double)g->out_h);
    b->grid_w = g->sampling_ratio > 0 ? g->sampling_ratio : (int64_t)ceil(rw / (double)g->out_w);
    int64_t cnt = b->grid_h * b->grid_w;
    b->count = (double)(cnt > 1 ? cnt : 1);
}

/* The four taps of sample (iy, ix) of bin (ph, pw): offsets into a plane
 * and bilinear weights (all 0, offsets 0, outside the feature map). */
VIS_FN void vis_roi_taps(const struct vis_roi *g, const struct vis_roi_box *b, int64_t ph,
                         int64_t pw, int64_t iy, int64_t ix, int64_t *pos, double *wt)
{
    double y = b->start_h + (double)ph * b->bin_h + ((double)iy + 0.5) * b->bin_h / (double)b->grid_h;
    double x = b->start_w + (double)pw * b->bin_w + ((double)ix + 0.5) * b->bin_w / (double)b->grid_w;
    if (y < -1.0 || y > (double)g->h || x < -1.0 || x > (double)g->w) {
        for (int k = 0; k < 4; k++) {
            pos[k] = 0;
            wt[k] = 0;
        }
        return;
    }
    y = y > 0 ? y : 0;
    x = x > 0 ? x : 0;
    int64_t yl = (int64_t)y, xl = (int64_t)x, yh, xh;
    if (yl >= g->h - 1) {
        yh = yl = g->h - 1;
        y = (double)yl;
    } else {
        yh = yl + 1;
    }
    if (xl >= g->w - 1) {
        xh = xl = g->w - 1;
        x = (double)xl;
    } else {
        xh = xl + 1;
    }
    double ly = y - (double)yl, lx = x - (double)xl, hy = 1.0 - ly, hx = 1.0 - lx;
    pos[0] = yl * g->w + xl;
    pos[1] = yl * g->w + xh;
    pos[2] = yh * g->w + xl;
    pos[3] = yh * g->w + xh;
    wt[0] = hy * hx;
    wt[1] = hy * lx;
    wt[2] = ly * hx;
    wt[3] = ly * lx;
}

/* Y at bin (ph, pw) of one channel plane x. For max mode, *arg receives the
 * plane offset whose weighted value won and *arg_w its weight (-1 and 0
 * when there is no sample); the gradient routes dy there. */
#define VIS_ROI_DEF(T)                                                                    \
    VIS_FN double vis_roi_bin_##T(const struct vis_roi *g, const struct vis_roi_box *b,   \
                                  const T *x, int64_t ph, int64_t pw, int64_t *arg,        \
                                  double *arg_w)                                          \
    {                                                                                     \
        double acc = 0;                                                                   \
        int have = 0;                                                                     \
        int64_t pos[4];                                                                   \
        double wt[4];                                                                     \
        *arg = -1;                                                                        \
        *arg_w = 0;                                                                       \
        for (int64_t iy = 0; iy < b->grid_h; iy++)                                        \
            for (int64_t ix = 0; ix < b->grid_w; ix++) {                                  \
                vis_roi_taps(g, b, ph, pw, iy, ix, pos, wt);                              \
                if (!g->max_mode) {                                                       \
                    acc += wt[0] * (double)x[pos[0]] + wt[1] * (double)x[pos[1]] +        \
                           wt[2] * (double)x[pos[2]] + wt[3] * (double)x[pos[3]];         \
                    continue;                                                             \
                }                                                                         \
                for (int k = 0; k < 4; k++) {                                             \
                    double v = wt[k] * (double)x[pos[k]];                                 \
                    if (!have || v > acc) {                                               \
                        acc = v;                                                          \
                        *arg = pos[k];                                                    \
                        *arg_w = wt[k];                                                   \
                        have = 1;                                                         \
                    }                                                                     \
                }                                                                         \
            }                                                                             \
        return g->max_mode ? acc : acc / b->count;                                        \
    }
VIS_ROI_DEF(float)
VIS_ROI_DEF(double)

/* ---- DeformConv (2-D): X [n, ic, h, w], W [oc, ic / group, kh, kw], offset
 * [n, offset_group * kh * kw * 2, oh, ow] (dy, dx per kernel tap), mask [n,
 * offset_group * kh * kw, oh, ow], B [oc], Y [n, oc, oh, ow]. A tap samples
 * its channel plane bilinearly at a real position; taps of the four
 * neighbours outside the plane read 0. */
struct vis_dconv {
    int has_mask, has_bias;
    int64_t n, ic, h, w, oc, oh, ow, kh, kw;
    int64_t group, offset_group, icg, ocg, ic_per_og;
    int64_t pad_h, pad_w, stride_h, stride_w, dil_h, dil_w;
};

/* The four bilinear neighbours of (y, x): plane offsets (-1 outside) and
 * weights, in the order (y0, x0), (y0, x0 + 1), (y0 + 1, x0), (y0 + 1, x0 + 1). */
VIS_FN void vis_dconv_taps(const struct vis_dconv *g, double y, double x, int64_t *pos, double *wt)
{
    const double y0 = floor(y), x0 = floor(x), ty = y - y0, tx = x - x0;
    const int64_t iy = (int64_t)y0, ix = (int64_t)x0;
    for (int k = 0; k < 4; k++) {
        int64_t yy = iy + (k >> 1), xx = ix + (k & 1);
        pos[k] = yy >= 0 && yy < g->h && xx >= 0 && xx < g->w ? yy * g->w + xx : -1;
    }
    wt[0] = (1 - ty) * (1 - tx);
    wt[1] = (1 - ty) * tx;
    wt[2] = ty * (1 - tx);
    wt[3] = ty * tx;
}

/* The sampling position of tap k (= ki * kw + kj) of output point p (= i *
 * ow + j) of offset group og of image b, and the tap's mask value. */
#define VIS_DCONV_DEF(T)                                                                  \
    VIS_FN void vis_dconv_pos_##T(const struct vis_dconv *g, const T *offset, const T *mask, \
                                  int64_t b, int64_t og, int64_t k, int64_t p, double *y,  \
                                  double *x, double *m)                                   \
    {                                                                                     \
        const int64_t kk = g->kh * g->kw, pts = g->oh * g->ow;                            \
        const int64_t i = p / g->ow, j = p % g->ow, ki = k / g->kw, kj = k % g->kw;       \
        const T *o = offset + ((b * g->offset_group + og) * kk + k) * 2 * pts;            \
        *y = (double)(-g->pad_h + g->stride_h * i + g->dil_h * ki) + (double)o[p];        \
        *x = (double)(-g->pad_w + g->stride_w * j + g->dil_w * kj) + (double)o[pts + p];  \
        *m = g->has_mask ? (double)mask[((b * g->offset_group + og) * kk + k) * pts + p] : 1.0; \
    }                                                                                     \
    /* The bilinear value of plane x at (y, x) and its derivatives in y and x;        \
     * pos/wt receive the four taps' offsets (-1 outside) and weights. */             \
    VIS_FN double vis_dconv_sample_##T(const struct vis_dconv *g, const T *plane, double y, \
                                       double x, double *dvy, double *dvx, int64_t *pos,   \
                                       double *wt)                                        \
    {                                                                                     \
        const double ty = y - floor(y), tx = x - floor(x);                                \
        double v[4];                                                                      \
        vis_dconv_taps(g, y, x, pos, wt);                                                 \
        for (int k = 0; k < 4; k++)                                                       \
            v[k] = pos[k] >= 0 ? (double)plane[pos[k]] : 0.0;                             \
        *dvy = (1 - tx) * (v[2] - v[0]) + tx * (v[3] - v[1]);                             \
        *dvx = (1 - ty) * (v[1] - v[0]) + ty * (v[3] - v[2]);                             \
        return wt[0] * v[0] + wt[1] * v[1] + wt[2] * v[2] + wt[3] * v[3];                 \
    }                                                                                     \
    /* Y at output point p of channel oc of image b. */                               \
    VIS_FN double vis_dconv_point_##T(const struct vis_dconv *g, const T *x, const T *w,  \
                                      const T *offset, const T *mask, const T *bias,       \
                                      int64_t b, int64_t oc, int64_t p)                    \
    {                                                                                     \
        const int64_t kk = g->kh * g->kw, grp = oc / g->ocg;                              \
        double acc = g->has_bias ? (double)bias[oc] : 0.0, py, px, m, dvy, dvx, wt[4];    \
        int64_t pos[4];                                                                   \
        for (int64_t cl = 0; cl < g->icg; cl++) {                                         \
            const int64_t ch = grp * g->icg + cl, og = ch / g->ic_per_og;                 \
            const T *plane = x + (b * g->ic + ch) * g->h * g->w;                          \
            for (int64_t k = 0; k < kk; k++) {                                            \
                vis_dconv_pos_##T(g, offset, mask, b, og, k, p, &py, &px, &m);            \
                double v = vis_dconv_sample_##T(g, plane, py, px, &dvy, &dvx, pos, wt);   \
                acc += (double)w[(oc * g->icg + cl) * kk + k] * (v * m);                  \
            }                                                                             \
        }                                                                                 \
        return acc;                                                                       \
    }
VIS_DCONV_DEF(float)
VIS_DCONV_DEF(double)

/* DeformConvGrad, one output element (or dX plane) per call, so that the
 * CPU's loops and the device's threads compute each the same way: G is
 * sum over o of ch's group of dy[b, o, p] W[o, c, k]; sums in double, in
 * the loop orders written here. */
#define VIS_DCONV_GRAD_DEF(T)                                                             \
    VIS_FN double vis_dconv_g_##T(const struct vis_dconv *g, const T *dy, const T *w,     \
                                  int64_t b, int64_t ch, int64_t k, int64_t p)             \
    {                                                                                     \
        const int64_t kk = g->kh * g->kw, pts = g->oh * g->ow, grp = ch / g->icg;         \
        const int64_t cl = ch % g->icg;                                                   \
        double G = 0;                                                                     \
        for (int64_t o = grp * g->ocg; o < (grp + 1) * g->ocg; o++)                       \
            G += (double)dy[(b * g->oc + o) * pts + p] *                                  \
                 (double)w[(o * g->icg + cl) * kk + k];                                   \
        return G;                                                                         \
    }                                                                                     \
    /* dB[o]: dy summed over images and points */                                     \
    VIS_FN T vis_dconv_db_##T(const struct vis_dconv *g, const T *dy, int64_t o)          \
    {                                                                                     \
        const int64_t pts = g->oh * g->ow;                                                \
        double s = 0;                                                                     \
        for (int64_t b = 0; b < g->n; b++)                                                \
            for (int64_t p = 0; p < pts; p++)                                             \
                s += (double)dy[(b * g->oc + o) * pts + p];                               \
        return (T)s;                                                                      \
    }                                                                                     \
    /* dW[o, cl, k]: dy times the masked sample, over images and points */            \
    VIS_FN T vis_dconv_dw_##T(const struct vis_dconv *g, const T *dy, const T *x,         \
                              const T *off, const T *mask, int64_t o, int64_t cl,          \
                              int64_t k)                                                  \
    {                                                                                     \
        const int64_t pts = g->oh * g->ow, ch = (o / g->ocg) * g->icg + cl;               \
        const int64_t og = ch / g->ic_per_og;                                             \
        double acc = 0, py, px, m, dvy, dvx, wt[4];                                       \
        int64_t pos[4];                                                                   \
        for (int64_t b = 0; b < g->n; b++) {                                              \
            const T *plane = x + (b * g->ic + ch) * g->h * g->w;                          \
            for (int64_t p = 0; p < pts; p++) {                                           \
                vis_dconv_pos_##T(g, off, mask, b, og, k, p, &py, &px, &m);               \
                double v = vis_dconv_sample_##T(g, plane, py, px, &dvy, &dvx, pos, wt);   \
                acc += (double)dy[(b * g->oc + o) * pts + p] * (v * m);                   \
            }                                                                             \
        }                                                                                 \
        return (T)acc;                                                                    \
    }                                                                                     \
    /* doffset (y, x) and dmask of tap k at point p of offset group og of image b */  \
    VIS_FN void vis_dconv_doff_##T(const struct vis_dconv *g, const T *dy, const T *x,    \
                                   const T *w, const T *off, const T *mask, int64_t b,     \
                                   int64_t og, int64_t k, int64_t p, double *gy,           \
                                   double *gx, double *gm)                                 \
    {                                                                                     \
        double py, px, m, dvy, dvx, wt[4];                                                \
        int64_t pos[4];                                                                   \
        vis_dconv_pos_##T(g, off, mask, b, og, k, p, &py, &px, &m);                       \
        *gy = *gx = *gm = 0;                                                              \
        for (int64_t ch = og * g->ic_per_og; ch < (og + 1) * g->ic_per_og; ch++) {        \
            const T *plane = x + (b * g->ic + ch) * g->h * g->w;                          \
            double v = vis_dconv_sample_##T(g, plane, py, px, &dvy, &dvx, pos, wt);       \
            double G = vis_dconv_g_##T(g, dy, w, b, ch, k, p);                            \
            *gm += G * v;                                                                 \
            *gy += G * m * dvy;                                                           \
            *gx += G * m * dvx;                                                           \
        }                                                                                 \
    }                                                                                     \
    /* The dX plane of channel ch of image b (h * w elements, overwritten): each      \
     * tap's bilinear weights times G m, tap by tap, point by point. */                \
    VIS_FN void vis_dconv_dx_plane_##T(const struct vis_dconv *g, const T *dy, const T *w, \
                                       const T *off, const T *mask, int64_t b, int64_t ch, \
                                       T *plane)                                          \
    {                                                                                     \
        const int64_t kk = g->kh * g->kw, pts = g->oh * g->ow, og = ch / g->ic_per_og;    \
        double py, px, m, wt[4];                                                          \
        int64_t pos[4];                                                                   \
        for (int64_t i = 0; i < g->h * g->w; i++)                                         \
            plane[i] = (T)0;                                                              \
        for (int64_t k = 0; k < kk; k++)                                                  \
            for (int64_t p = 0; p < pts; p++) {                                           \
                vis_dconv_pos_##T(g, off, mask, b, og, k, p, &py, &px, &m);               \
                vis_dconv_taps(g, py, px, pos, wt);                                       \
                const double G = vis_dconv_g_##T(g, dy, w, b, ch, k, p) * m;              \
                for (int t = 0; t < 4; t++)                                               \
                    if (pos[t] >= 0)                                                      \
                        plane[pos[t]] = (T)((double)plane[pos[t]] + G * wt[t]);           \
            }                                                                             \
    }
VIS_DCONV_GRAD_DEF(float)
VIS_DCONV_GRAD_DEF(double)

/* ---- host plans (the ops/ files above), checked against the call's shapes ---------------- */
#ifndef __CUDACC__
struct op_call;
int vision_crop_geom(const struct op_call *c, struct vis_crop *g);
/* in[2] (write_indices) is a host tensor; idx receives one int64 per batch
 * entry (room for dims[0] values), each checked against the mode. */
int vision_scatter_geom(const struct op_call *c, struct vis_scatter *g, int64_t *idx);
/* RoiAlign / RoiAlignGrad; batch_indices (host) are checked. */
int vision_roi_geom(const struct op_call *c, struct vis_roi *g);
int vision_dconv_geom(const struct op_call *c, struct vis_dconv *g);

/* NonMaxSuppression (ops/nms.c) on host inputs: the number of selected
 * boxes, their (batch, class, box) triples into out when not NULL; -1 after
 * op_error. */
int64_t vision_nms_run(const struct op_call *c, int64_t *out);

/* Unique (ops/unique.c) on a host X: k distinct values (or slices along
 * axis, -1 for none), first occurrences, inverse indices, counts (heap,
 * freed by vision_unique_free); 0 or -1 after op_error. fill_y writes Y. */
struct vision_unique {
    int axis;
    int64_t k;
    int64_t *first, *inverse, *counts;
};
int vision_unique_run(const struct op_call *c, struct vision_unique *u);
void vision_unique_free(struct vision_unique *u);
void vision_unique_fill_y(const struct op_call *c, const struct vision_unique *u, void *y);
#endif

#endif
