/* ops/cuda/quant_kernels.cu — device code of the "quant" family
 * (ops/cuda/quant.c): one thread per element through the per-element
 * functions the CPU kernels use (ops/quant-impl.h), and
 * DynamicQuantizeLinear's range as one block's min/max fold (min and max
 * are exact, so the fold order cannot change a bit) whose thread 0 also
 * computes the scale and zero point the element kernel then reads. */
#include "ops/cuda/quant-kernels.h"

namespace {

constexpr int THREADS = 256;

inline unsigned blocks_for(int64_t n)
{
    int64_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b > 65535 ? 65535 : b < 1 ? 1 : b);
}

__global__ void quantize_kernel(quant_args a, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        quant_quantize_elem(&a, i);
}

__global__ void dequantize_kernel(quant_args a, int64_t n)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        quant_dequantize_elem(&a, i);
}

/* One block: the range of x widened to 0 (NaN skipped, as on the CPU),
 * then the scale and zero point. */
__global__ void dynq_range_block_kernel(int64_t n, const float *x, float *scale, uint8_t *zero_point)
{
    __shared__ float smn[THREADS], smx[THREADS];
    float mn = 0.0f, mx = 0.0f;
    for (int64_t i = threadIdx.x; i < n; i += THREADS) {
        float v = x[i];
        mx = v > mx ? v : mx;
        mn = v < mn ? v : mn;
    }
    smn[threadIdx.x] = mn;
    smx[threadIdx.x] = mx;
    __syncthreads();
    for (int half = THREADS / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) {
            float a = smn[threadIdx.x + half], b = smx[threadIdx.x + half];
            smn[threadIdx.x] = a < smn[threadIdx.x] ? a : smn[threadIdx.x];
            smx[threadIdx.x] = b > smx[threadIdx.x] ? b : smx[threadIdx.x];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        float s, z;
        quant_dynamic_from_range(smn[0], smx[0], &s, &z);
        *scale = s;
        *zero_point = (uint8_t)z;
    }
}

__global__ void dynq_apply_kernel(int64_t n, const float *x, uint8_t *y, const float *scale,
                                  const uint8_t *zero_point)
{
    float s = *scale, z = (float)*zero_point;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = quant_dynamic_elem(x[i], s, z);
}

}  // namespace

extern "C" cudaError_t cuda_quantize_launch(cudaStream_t stream, const struct quant_args *a, int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    quantize_kernel<<<blocks_for(n), THREADS, 0, stream>>>(*a, n);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_dequantize_launch(cudaStream_t stream, const struct quant_args *a, int64_t n)
{
    if (n <= 0)
        return cudaSuccess;
    dequantize_kernel<<<blocks_for(n), THREADS, 0, stream>>>(*a, n);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_dynamic_quantize_launch(cudaStream_t stream, int64_t n, const float *x, uint8_t *y,
                                                    float *scale, uint8_t *zero_point)
{
    dynq_range_block_kernel<<<1, THREADS, 0, stream>>>(n, x, scale, zero_point);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || n <= 0)
        return e;
    dynq_apply_kernel<<<blocks_for(n), THREADS, 0, stream>>>(n, x, y, scale, zero_point);
    return cudaGetLastError();
}
