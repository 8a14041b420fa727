/* ops/cuda/vision-kernels.h — the launchers of ops/cuda/vision_kernels.cu,
 * the device code of the "vision" family (ops/cuda/vision.c): CenterCropPad,
 * TensorScatter, RoiAlign and DeformConv over the geometry and arithmetic of
 * ops/vision-impl.h. Plain C types only; dtypes are enum onnx_dtype values.
 * Every launcher queues its kernel on `stream` and returns cudaSuccess, the
 * launch error, or cudaErrorNotSupported when no kernel exists for the
 * dtype (or element size). All of them are deterministic: each output
 * element is written by one thread, and the gradients that scatter do so
 * one thread per target plane, in the CPU's order. */
#ifndef DTRX_OPS_CUDA_VISION_KERNELS_H
#define DTRX_OPS_CUDA_VISION_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "ops/vision-impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[i] = x[vis_crop_source(i)] or 0, elements of esize bytes (1, 2, 4, 8). */
cudaError_t cuda_vis_crop_launch(cudaStream_t stream, size_t esize, const struct vis_crop *g,
                                 const void *x, void *y);

/* TensorScatter's rows (out already holds a copy of the cache): each update
 * row is written to its cache row (distinct rows: seq <= max_seq); idx holds
 * one device int64 write index per batch entry. With grad set, `update` is
 * NULL: out (dpast, holding dy) gets those rows zeroed after dupdate (if
 * not NULL) has read them from dy. */
cudaError_t cuda_vis_scatter_launch(cudaStream_t stream, size_t esize, const struct vis_scatter *g,
                                    const int64_t *idx, const void *update, const void *dy,
                                    void *out, void *dupdate);

/* RoiAlign forward (dy NULL: y from x) or the avg gradient (dx from dy,
 * one thread per image plane over the rois in order); float and double.
 * bi: device int64 batch indices. */
cudaError_t cuda_vis_roi_launch(cudaStream_t stream, int dtype, const struct vis_roi *g,
                                const int64_t *bi, const void *x, const void *rois, const void *dy,
                                void *out);

/* DeformConv forward: one thread per output element; mask and bias may be
 * NULL (g->has_mask, g->has_bias say so). float and double. */
cudaError_t cuda_vis_dconv_launch(cudaStream_t stream, int dtype, const struct vis_dconv *g,
                                  const void *x, const void *w, const void *offset,
                                  const void *mask, const void *bias, void *y);

/* DeformConvGrad: dB, dW (one thread per element), doffset and dmask (one
 * per (image, offset group, tap, point)), dX (one per channel plane); any
 * output may be NULL. */
cudaError_t cuda_vis_dconv_grad_launch(cudaStream_t stream, int dtype, const struct vis_dconv *g,
                                       const void *dy, const void *x, const void *w,
                                       const void *offset, const void *mask, void *dx, void *dw,
                                       void *doffset, void *dmask, void *db);

#ifdef __cplusplus
}
#endif

#endif
