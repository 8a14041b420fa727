/* ops/cuda/quant-kernels.h — the launchers of ops/cuda/quant_kernels.cu, the
 * device code of the "quant" family (ops/cuda/quant.c): QuantizeLinear,
 * DequantizeLinear and DynamicQuantizeLinear. Plain C types only. Every
 * launcher queues its kernels on `stream` and returns cudaSuccess or the
 * launch error. Deterministic: each element is computed by one thread with
 * the CPU's per-element functions (ops/quant-impl.h); DynamicQuantizeLinear's
 * min/max is exact in any order. */
#ifndef DTRX_OPS_CUDA_QUANT_KERNELS_H
#define DTRX_OPS_CUDA_QUANT_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "ops/quant-impl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[i] for i < n; the pointers in *a are device pointers. */
cudaError_t cuda_quantize_launch(cudaStream_t stream, const struct quant_args *a, int64_t n);
cudaError_t cuda_dequantize_launch(cudaStream_t stream, const struct quant_args *a, int64_t n);
/* y (uint8 [n]), scale (one float) and zero_point (one uint8) from x [n]. */
cudaError_t cuda_dynamic_quantize_launch(cudaStream_t stream, int64_t n, const float *x, uint8_t *y,
                                         float *scale, uint8_t *zero_point);

#ifdef __cplusplus
}
#endif

#endif
