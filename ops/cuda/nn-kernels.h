/* ops/cuda/nn-kernels.h — the launchers of our own CUDA kernels for the nn
 * family (ops/cuda/nn_kernels.cu): window copies that pad or crop for
 * cuDNN's symmetric padding, per-channel bias and sums, pooling forward and
 * backward (every ONNX mode, with MaxPool's Indices), GlobalAveragePool,
 * batch and layer normalization with their gradients.
 *
 * Every launcher queues work on `stream` and returns the launch status
 * (cudaGetLastError()). Every reduction has a fixed order that depends on
 * the shapes only — no atomics — so results are bit-identical from run to
 * run, as DTR's recomputation needs. Plain C types: included by the host .c
 * files and by the .cu file. Not for use outside ops/cuda/. */
#ifndef DTRX_OPS_CUDA_NN_KERNELS_H
#define DTRX_OPS_CUDA_NN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Window geometry of pooling, 3-D (a 1-D or 2-D op has leading unit axes,
 * as struct nn_geom in ops/nn-impl.h); `planes` = N * C. */
struct nn_cuda_window {
    int64_t planes;
    int64_t in[3], k[3], out[3];
    int64_t stride[3], dil[3], pad_lo[3], pad_hi[3];
};

/* dst[p, d] = src[p, d - off] where that lies inside src, else 0, per
 * spatial axis (3-D dims, `planes` planes each): zero padding (off > 0) or a
 * crop (off < 0) of every plane. */
cudaError_t nn_cuda_window_copy(cudaStream_t stream, int64_t planes, const int64_t src_dims[3],
                                const int64_t dst_dims[3], const int64_t off[3], const float *src,
                                float *dst);

/* y[n, c, i] += b[c] over [n, ch, spatial]. */
cudaError_t nn_cuda_channel_bias_add(cudaStream_t stream, int64_t n, int64_t ch, int64_t spatial,
                                     const float *b, float *y);
/* db[c] = sum over n and spatial of dy[n, c, i]. */
cudaError_t nn_cuda_channel_sum(cudaStream_t stream, int64_t n, int64_t ch, int64_t spatial,
                                const float *dy, float *db);

/* ---- pooling ------------------------------------------------------------- */

/* dtype: enum onnx_dtype of x and y (float, int8, uint8). indices (may be
 * NULL) receive the flattened input index of each maximum, -1 for a window
 * with no tap inside the input; storage_order 1 numbers a plane's positions
 * column-major (ONNX's storage_order). Ties go to the first tap in window
 * order, as ops/pool.c. */
cudaError_t nn_cuda_maxpool_forward(cudaStream_t stream, const struct nn_cuda_window *w, int dtype,
                                    const void *x, void *y, int64_t *indices, int storage_order);
cudaError_t nn_cuda_avgpool_forward(cudaStream_t stream, const struct nn_cuda_window *w,
                                    int count_include_pad, const float *x, float *y);
/* dx overwritten; each input position gathers, in output order, what the
 * windows covering it send: exactly the CPU loops' sums. */
cudaError_t nn_cuda_maxpool_backward(cudaStream_t stream, const struct nn_cuda_window *w,
                                     const float *x, const float *dy, float *dx);
cudaError_t nn_cuda_avgpool_backward(cudaStream_t stream, const struct nn_cuda_window *w,
                                     int count_include_pad, const float *dy, float *dx);
/* y[p] = mean of x[p, 0..spatial). */
cudaError_t nn_cuda_global_avgpool(cudaStream_t stream, int64_t planes, int64_t spatial,
                                   const float *x, float *y);

/* ---- batch normalization over [n, ch, spatial] ----------------------------- */

/* Partial sums per channel: how many chunks each channel's n * spatial
 * elements are split into (a function of the shape only), and the scratch
 * (bytes) that the statistics launchers need. The scratch starts with the
 * batch mean and biased variance per channel (2 * ch doubles), which the
 * launchers below leave there. */
int nn_cuda_bn_chunks(int64_t n, int64_t spatial);
size_t nn_cuda_bn_scratch_bytes(int64_t n, int64_t ch, int64_t spatial);

cudaError_t nn_cuda_bn_inference(cudaStream_t stream, int64_t n, int64_t ch, int64_t spatial,
                                 const float *x, const float *scale, const float *bias,
                                 const float *mean, const float *var, float eps, float *y);
/* Batch mean and biased variance (double, two passes, left at the start of
 * scratch); then y normalised with them. */
cudaError_t nn_cuda_bn_training(cudaStream_t stream, int64_t n, int64_t ch, int64_t spatial,
                                const float *x, const float *scale, const float *bias, float eps,
                                float *y, void *scratch);
/* The statistics outputs from the scratch nn_cuda_bn_training filled:
 * kind 1: out = in * momentum + batch_mean * (1 - momentum) (float);
 * kind 2: the same for the variance; kind 3: batch mean; kind 4: batch
 * variance; kind 5 (in == out, PyTorch's running mean, in double):
 * out = momentum * in + (1 - momentum) * batch_mean; kind 6: the running
 * variance with the unbiased batch variance (times unbias). */
cudaError_t nn_cuda_bn_stat_out(cudaStream_t stream, int kind, int64_t ch, const void *scratch,
                                const float *in, float momentum, double unbias, float *out);
/* BatchNormGrad: batch 1 recomputes mean and variance from x, batch 0 uses
 * mean/var as given. dscale, dbias may be NULL. */
cudaError_t nn_cuda_bn_backward(cudaStream_t stream, int64_t n, int64_t ch, int64_t spatial,
                                const float *dy, const float *x, const float *scale,
                                const float *mean, const float *var, float eps, int batch,
                                float *dx, float *dscale, float *dbias, void *scratch);

/* ---- layer normalization over rows of `cols` ---------------------------------- */

/* dst[i] = src[sum_d ((i / inner_d) % dims[d]) * strides[d]]: Scale or B
 * broadcast to the normalised shape (rank <= 8, strides 0 on broadcast axes). */
cudaError_t nn_cuda_broadcast_expand(cudaStream_t stream, int rank, const int64_t *dims,
                                     const int64_t *strides, int64_t n, const float *src,
                                     float *dst);
/* bias, mean, inv_std may be NULL. */
cudaError_t nn_cuda_ln_forward(cudaStream_t stream, int64_t rows, int64_t cols, const float *x,
                               const float *scale, const float *bias, float eps, float *y,
                               float *mean, float *inv_std);
/* Row chunks of the column sums (a function of the shape only) and the
 * scratch in bytes nn_cuda_ln_backward needs: mean and 1/std per row plus
 * the partial column sums. */
int nn_cuda_ln_row_chunks(int64_t rows);
size_t nn_cuda_ln_scratch_bytes(int64_t rows, int64_t cols);
/* dx, and dscale/dbias (either may be NULL) of the normalised shape. */
cudaError_t nn_cuda_ln_backward(cudaStream_t stream, int64_t rows, int64_t cols, const float *dy,
                                const float *x, const float *scale, float eps, float *dx,
                                float *dscale, float *dbias, void *scratch);

#ifdef __cplusplus
}
#endif

#endif
