/* ops/cuda/norm-kernels.h — the launchers of the norm family's CUDA kernels
 * (ops/cuda/norm_kernels.cu): RMS normalization over rows and group
 * normalization over (instance, group) rows, forward and backward (the
 * host code is ops/cuda/norm.c).
 *
 * Every launcher queues work on `stream` and returns the launch status; none
 * allocates or synchronises. A row is reduced by one block in a fixed
 * shared-memory tree (no warp shuffles, no atomics), parameter sums run one
 * thread per parameter over the rows in order: results depend on the shapes
 * only, so a recomputation gives the same bits. Plain C types: included by
 * the host .c files and by the .cu file. Not for use outside ops/cuda/. */
#ifndef DTRX_OPS_CUDA_NORM_KERNELS_H
#define DTRX_OPS_CUDA_NORM_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- RMS normalization over rows of `cols` (scale: cols values) ---------------- */

cudaError_t norm_cuda_rms_forward(cudaStream_t stream, int64_t rows, int64_t cols, const float *x,
                                  const float *scale, float eps, float *y);
/* dx (and dscale, cols values, when not NULL); inv: `rows` floats of scratch. */
cudaError_t norm_cuda_rms_backward(cudaStream_t stream, int64_t rows, int64_t cols, const float *dy,
                                   const float *x, const float *scale, float eps, float *dx,
                                   float *dscale, float *inv);

/* ---- group normalization over X [n, ch, spatial], `groups` groups ------------- */

/* scale/bias per channel, or per group when per_group. */
cudaError_t norm_cuda_gn_forward(cudaStream_t stream, int64_t n, int64_t ch, int64_t groups,
                                 int64_t spatial, const float *x, const float *scale,
                                 const float *bias, int per_group, float eps, float *y);
/* dscale/dbias (either may be NULL) of scale's shape; part: 2 * n * ch
 * doubles of scratch. */
cudaError_t norm_cuda_gn_backward(cudaStream_t stream, int64_t n, int64_t ch, int64_t groups,
                                  int64_t spatial, const float *dy, const float *x,
                                  const float *scale, int per_group, float eps, float *dx,
                                  float *dscale, float *dbias, double *part);

/* dst[i] = src[sum_d ((i / inner_d) % dims[d]) * strides[d]]: Scale
 * broadcast to the normalised shape (rank <= 8, strides 0 on broadcast axes). */
cudaError_t norm_cuda_expand(cudaStream_t stream, int rank, const int64_t *dims, const int64_t *strides,
                             int64_t n, const float *src, float *dst);

#ifdef __cplusplus
}
#endif

#endif
