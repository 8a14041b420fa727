/* ops/cuda/vision_kernels.cu — device code of the "vision" family
 * (ops/cuda/vision.c): CenterCropPad's copy, TensorScatter's row writes and
 * its gradient, RoiAlign and its avg gradient, DeformConv and its gradient, all
 * over ops/vision-impl.h, whose per-point functions the CPU kernels call
 * too (same operations, same order). */
#include "ops/cuda/elem-device.cuh"
#include "ops/cuda/vision-kernels.h"

namespace {

template <typename E>
__global__ void __launch_bounds__(EW_THREADS) crop_kernel(vis_crop g, const E *x, E *y)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.numel; i += stride) {
        const int64_t s = vis_crop_source(&g, i);
        y[i] = s < 0 ? E(0) : x[s];
    }
}

/* One thread per element of the update: (o, s, k); the update is never
 * longer than the cache, so no two threads write one element. */
template <typename E>
__global__ void __launch_bounds__(EW_THREADS)
    scatter_kernel(vis_scatter g, const int64_t *idx, const E *upd, const E *dy, E *out, E *dupd)
{
    const int64_t total = g.outer * g.seq * g.inner, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
        const int64_t k = e % g.inner, s = e / g.inner % g.seq, o = e / (g.inner * g.seq);
        const int64_t r = vis_scatter_row(&g, idx[o / g.per_batch], s);
        const int64_t at = (o * g.max_seq + r) * g.inner + k;
        if (upd) {
            out[at] = upd[e];
            continue;
        }
        if (dupd)
            dupd[e] = dy[at];
        if (out)
            out[at] = E(0);
    }
}

__device__ inline double roi_bin(const vis_roi *g, const vis_roi_box *b, const float *x, int64_t ph,
                                 int64_t pw, int64_t *arg, double *aw)
{
    return vis_roi_bin_float(g, b, x, ph, pw, arg, aw);
}
__device__ inline double roi_bin(const vis_roi *g, const vis_roi_box *b, const double *x, int64_t ph,
                                 int64_t pw, int64_t *arg, double *aw)
{
    return vis_roi_bin_double(g, b, x, ph, pw, arg, aw);
}

template <typename T>
__global__ void __launch_bounds__(EW_THREADS)
    roi_forward_kernel(vis_roi g, const int64_t *bi, const T *x, const T *rois, T *y)
{
    const int64_t bins = g.out_h * g.out_w, total = g.rois * g.c * bins;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
        const int64_t bin = e % bins, ch = e / bins % g.c, r = e / (bins * g.c);
        const T *q = rois + r * 4;
        vis_roi_box box;
        int64_t arg;
        double aw;
        vis_roi_box_of(&g, (double)q[0], (double)q[1], (double)q[2], (double)q[3], &box);
        const T *plane = x + (bi[r] * g.c + ch) * g.h * g.w;
        y[e] = (T)roi_bin(&g, &box, plane, bin / g.out_w, bin % g.out_w, &arg, &aw);
    }
}

/* One thread per (image, channel) plane of dX, over the rois of that image
 * in order: the CPU's accumulation order into each element. */
template <typename T>
__global__ void __launch_bounds__(64)
    roi_backward_kernel(vis_roi g, const int64_t *bi, const T *rois, const T *dy, T *dx)
{
    const int64_t planes = g.n * g.c, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t pl = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; pl < planes; pl += stride) {
        const int64_t b = pl / g.c, ch = pl % g.c;
        T *plane = dx + pl * g.h * g.w;
        for (int64_t i = 0; i < g.h * g.w; i++)
            plane[i] = T(0);
        int64_t pos[4];
        double wt[4];
        vis_roi_box box;
        for (int64_t r = 0; r < g.rois; r++) {
            if (bi[r] != b)
                continue;
            const T *q = rois + r * 4;
            vis_roi_box_of(&g, (double)q[0], (double)q[1], (double)q[2], (double)q[3], &box);
            const T *d = dy + (r * g.c + ch) * g.out_h * g.out_w;
            for (int64_t ph = 0; ph < g.out_h; ph++)
                for (int64_t pw = 0; pw < g.out_w; pw++) {
                    const double v = (double)d[ph * g.out_w + pw] / box.count;
                    for (int64_t iy = 0; iy < box.grid_h; iy++)
                        for (int64_t ix = 0; ix < box.grid_w; ix++) {
                            vis_roi_taps(&g, &box, ph, pw, iy, ix, pos, wt);
                            for (int k = 0; k < 4; k++)
                                plane[pos[k]] = (T)((double)plane[pos[k]] + v * wt[k]);
                        }
                }
        }
    }
}

__device__ inline double dconv_point(const vis_dconv *g, const float *x, const float *w,
                                     const float *off, const float *mask, const float *bias,
                                     int64_t b, int64_t o, int64_t p)
{
    return vis_dconv_point_float(g, x, w, off, mask, bias, b, o, p);
}
__device__ inline double dconv_point(const vis_dconv *g, const double *x, const double *w,
                                     const double *off, const double *mask, const double *bias,
                                     int64_t b, int64_t o, int64_t p)
{
    return vis_dconv_point_double(g, x, w, off, mask, bias, b, o, p);
}

template <typename T>
__global__ void __launch_bounds__(EW_THREADS)
    dconv_kernel(vis_dconv g, const T *x, const T *w, const T *off, const T *mask, const T *bias, T *y)
{
    const int64_t pts = g.oh * g.ow, total = g.n * g.oc * pts;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
        const int64_t p = e % pts, o = e / pts % g.oc, b = e / (pts * g.oc);
        y[e] = (T)dconv_point(&g, x, w, off, mask, bias, b, o, p);
    }
}

/* DeformConvGrad: one thread per element of dB, dW, (doffset, dmask), and
 * one per dX plane, each running ops/vision-impl.h's function for it. */
#define DCONV_OVERLOADS(T)                                                                     \
    __device__ inline T dconv_db(const vis_dconv *g, const T *dy, int64_t o)                   \
    {                                                                                          \
        return vis_dconv_db_##T(g, dy, o);                                                     \
    }                                                                                          \
    __device__ inline T dconv_dw(const vis_dconv *g, const T *dy, const T *x, const T *off,    \
                                 const T *mask, int64_t o, int64_t cl, int64_t k)              \
    {                                                                                          \
        return vis_dconv_dw_##T(g, dy, x, off, mask, o, cl, k);                                \
    }                                                                                          \
    __device__ inline void dconv_doff(const vis_dconv *g, const T *dy, const T *x, const T *w, \
                                      const T *off, const T *mask, int64_t b, int64_t og,      \
                                      int64_t k, int64_t p, double *gy, double *gx, double *gm) \
    {                                                                                          \
        vis_dconv_doff_##T(g, dy, x, w, off, mask, b, og, k, p, gy, gx, gm);                   \
    }                                                                                          \
    __device__ inline void dconv_dx_plane(const vis_dconv *g, const T *dy, const T *w,         \
                                          const T *off, const T *mask, int64_t b, int64_t ch,  \
                                          T *plane)                                            \
    {                                                                                          \
        vis_dconv_dx_plane_##T(g, dy, w, off, mask, b, ch, plane);                             \
    }
DCONV_OVERLOADS(float)
DCONV_OVERLOADS(double)
#undef DCONV_OVERLOADS

template <typename T>
__global__ void __launch_bounds__(EW_THREADS)
    dconv_grad_wb_kernel(vis_dconv g, const T *dy, const T *x, const T *off, const T *mask, T *dw, T *db)
{
    const int64_t kk = g.kh * g.kw, nw = dw ? g.oc * g.icg * kk : 0, total = nw + (db ? g.oc : 0);
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
        if (e < nw)
            dw[e] = dconv_dw(&g, dy, x, off, mask, e / (g.icg * kk), e / kk % g.icg, e % kk);
        else
            db[e - nw] = dconv_db(&g, dy, e - nw);
    }
}

template <typename T>
__global__ void __launch_bounds__(EW_THREADS)
    dconv_grad_off_kernel(vis_dconv g, const T *dy, const T *x, const T *w, const T *off, const T *mask,
                          T *doff, T *dmask)
{
    const int64_t kk = g.kh * g.kw, pts = g.oh * g.ow, total = g.n * g.offset_group * kk * pts;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
        const int64_t p = e % pts, base = e / pts, k = base % kk, og = base / kk % g.offset_group;
        const int64_t b = base / (kk * g.offset_group);
        double gy, gx, gm;
        dconv_doff(&g, dy, x, w, off, mask, b, og, k, p, &gy, &gx, &gm);
        if (doff) {
            doff[base * 2 * pts + p] = (T)gy;
            doff[(base * 2 + 1) * pts + p] = (T)gx;
        }
        if (dmask)
            dmask[base * pts + p] = (T)gm;
    }
}

template <typename T>
__global__ void __launch_bounds__(64)
    dconv_grad_dx_kernel(vis_dconv g, const T *dy, const T *w, const T *off, const T *mask, T *dx)
{
    const int64_t planes = g.n * g.ic, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t pl = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; pl < planes; pl += stride)
        dconv_dx_plane(&g, dy, w, off, mask, pl / g.ic, pl % g.ic, dx + pl * g.h * g.w);
}

/* The element type of esize bytes, for the copies. */
template <typename F> cudaError_t by_size(size_t esize, F f)
{
    switch (esize) {
    case 1: return f((uint8_t)0);
    case 2: return f((uint16_t)0);
    case 4: return f((uint32_t)0);
    case 8: return f((uint64_t)0);
    default: return cudaErrorNotSupported;
    }
}

} // namespace

extern "C" cudaError_t cuda_vis_crop_launch(cudaStream_t stream, size_t esize, const struct vis_crop *g,
                                            const void *x, void *y)
{
    return by_size(esize, [&](auto tag) -> cudaError_t {
        typedef decltype(tag) E;
        if (g->numel > 0)
            crop_kernel<E><<<ew_blocks(g->numel, EW_THREADS), EW_THREADS, 0, stream>>>(
                *g, (const E *)x, (E *)y);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_vis_scatter_launch(cudaStream_t stream, size_t esize,
                                               const struct vis_scatter *g, const int64_t *idx,
                                               const void *update, const void *dy, void *out,
                                               void *dupdate)
{
    return by_size(esize, [&](auto tag) -> cudaError_t {
        typedef decltype(tag) E;
        const int64_t total = g->outer * g->seq * g->inner;
        if (total > 0)
            scatter_kernel<E><<<ew_blocks(total, EW_THREADS), EW_THREADS, 0, stream>>>(
                *g, idx, (const E *)update, (const E *)dy, (E *)out, (E *)dupdate);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_vis_roi_launch(cudaStream_t stream, int dtype, const struct vis_roi *g,
                                           const int64_t *bi, const void *x, const void *rois,
                                           const void *dy, void *out)
{
    return dtype_visit<DS_FLOATS>(dtype, [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        if (!dy) {
            const int64_t total = g->rois * g->c * g->out_h * g->out_w;
            if (total > 0)
                roi_forward_kernel<T><<<ew_blocks(total, EW_THREADS), EW_THREADS, 0, stream>>>(
                    *g, bi, (const T *)x, (const T *)rois, (T *)out);
        } else if (g->n * g->c > 0) {
            roi_backward_kernel<T><<<ew_blocks(g->n * g->c, 64), 64, 0, stream>>>(
                *g, bi, (const T *)rois, (const T *)dy, (T *)out);
        }
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_vis_dconv_launch(cudaStream_t stream, int dtype, const struct vis_dconv *g,
                                             const void *x, const void *w, const void *offset,
                                             const void *mask, const void *bias, void *y)
{
    return dtype_visit<DS_FLOATS>(dtype, [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        const int64_t total = g->n * g->oc * g->oh * g->ow;
        if (total > 0)
            dconv_kernel<T><<<ew_blocks(total, EW_THREADS), EW_THREADS, 0, stream>>>(
                *g, (const T *)x, (const T *)w, (const T *)offset, (const T *)mask,
                (const T *)bias, (T *)y);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_vis_dconv_grad_launch(cudaStream_t stream, int dtype,
                                                  const struct vis_dconv *g, const void *dy,
                                                  const void *x, const void *w, const void *offset,
                                                  const void *mask, void *dx, void *dw,
                                                  void *doffset, void *dmask, void *db)
{
    return dtype_visit<DS_FLOATS>(dtype, [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        const int64_t kk = g->kh * g->kw;
        const int64_t nwb = (dw ? g->oc * g->icg * kk : 0) + (db ? g->oc : 0);
        const int64_t noff = doffset || dmask ? g->n * g->offset_group * kk * g->oh * g->ow : 0;
        if (nwb > 0)
            dconv_grad_wb_kernel<T><<<ew_blocks(nwb, EW_THREADS), EW_THREADS, 0, stream>>>(
                *g, (const T *)dy, (const T *)x, (const T *)offset, (const T *)mask, (T *)dw,
                (T *)db);
        if (noff > 0)
            dconv_grad_off_kernel<T><<<ew_blocks(noff, EW_THREADS), EW_THREADS, 0, stream>>>(
                *g, (const T *)dy, (const T *)x, (const T *)w, (const T *)offset,
                (const T *)mask, (T *)doffset, (T *)dmask);
        if (dx && g->n * g->ic > 0)
            dconv_grad_dx_kernel<T><<<ew_blocks(g->n * g->ic, 64), 64, 0, stream>>>(
                *g, (const T *)dy, (const T *)w, (const T *)offset, (const T *)mask, (T *)dx);
        return cudaGetLastError();
    });
}
