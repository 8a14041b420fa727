// ops/cuda/blas_kernels.cu — Gemm's bias broadcast (see blas-kernels.h).
#include "ops/cuda/blas-kernels.h"

static __global__ void bias_fill(float *y, const float *c, int64_t m, int64_t n, int64_t cm, int64_t cn,
                                 float scale)
{
    int64_t total = m * n;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < total;
         k += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = k / n, j = k % n;
        float v = c[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)];
        y[k] = scale == 1.0f ? v : scale * v;
    }
}

extern "C" cudaError_t blas_bias_fill_launch(cudaStream_t stream, float *y, const float *c, int64_t m, int64_t n,
                                             int64_t cm, int64_t cn, float scale)
{
    int64_t total = m * n;
    if (total <= 0)
        return cudaSuccess;
    int threads = 256;
    int64_t blocks = (total + threads - 1) / threads;
    if (blocks > 65535)
        blocks = 65535;
    bias_fill<<<(unsigned)blocks, threads, 0, stream>>>(y, c, m, n, cm, cn, scale);
    return cudaGetLastError();
}
