/* ops/cuda/blas-kernels.h — the one device kernel of the GEMM family
 * (ops/cuda/blas_kernels.cu), called from ops/cuda/blas.c. */
#ifndef DTRX_OPS_CUDA_BLAS_KERNELS_H
#define DTRX_OPS_CUDA_BLAS_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y[i, j] = scale * c[i % cm, j % cn] for an [m, n] row-major y: Gemm's C
 * broadcast into the output before cuBLAS adds alpha op(A) op(B) to
 * beta * y (scale 1), or beta * C alone when K is 0 (scale beta). */
cudaError_t blas_bias_fill_launch(cudaStream_t stream, float *y, const float *c, int64_t m, int64_t n,
                                  int64_t cm, int64_t cn, float scale);

#ifdef __cplusplus
}
#endif

#endif
