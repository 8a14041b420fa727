/* ops/cuda/norm_kernels.cu — the norm family's CUDA kernels; see
 * norm-kernels.h for what each computes.
 *
 * Determinism: no atomics and no warp shuffles. A row is one block's: every
 * thread sums a fixed stride of it, then a shared-memory tree of fixed shape
 * adds the partial sums (so the host emulator, tests/cuda_emu, can run these
 * kernels with plain barriers). Parameter gradients are summed one thread
 * per parameter, over the rows in order. */
#include <cmath>
#include <cstdint>

#include "ops/cuda/norm-kernels.h"

#define NORM_THREADS 256
#define NORM_MAX_BLOCKS (1 << 16)

static unsigned norm_blocks(int64_t n)
{
    return (unsigned)(n < 1 ? 1 : n > NORM_MAX_BLOCKS ? NORM_MAX_BLOCKS : n);
}

static unsigned norm_elem_blocks(int64_t n)
{
    return norm_blocks((n + NORM_THREADS - 1) / NORM_THREADS);
}

/* The block's sum of v, in every thread; sh holds NORM_THREADS values and
 * may be reused right after. */
template <typename T>
__device__ __forceinline__ T norm_block_sum(T v, T *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = NORM_THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s)
            sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    T r = sh[0];
    __syncthreads();
    return r;
}

/* ---- RMS normalization ---------------------------------------------------------------- */

__global__ void rms_fwd_rows_kernel(int64_t rows, int64_t cols, const float *x, const float *scale,
                                    float eps, float *y)
{
    __shared__ float sh[NORM_THREADS];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float s = 0.0f;
        for (int64_t j = threadIdx.x; j < cols; j += NORM_THREADS)
            s += xr[j] * xr[j];
        s = norm_block_sum(s, sh);
        float inv = 1.0f / sqrtf((cols ? s / (float)cols : 0.0f) + eps);
        for (int64_t j = threadIdx.x; j < cols; j += NORM_THREADS)
            yr[j] = xr[j] * inv * scale[j];
    }
}

extern "C" cudaError_t norm_cuda_rms_forward(cudaStream_t stream, int64_t rows, int64_t cols,
                                             const float *x, const float *scale, float eps, float *y)
{
    if (rows > 0 && cols > 0)
        rms_fwd_rows_kernel<<<norm_blocks(rows), NORM_THREADS, 0, stream>>>(rows, cols, x, scale, eps, y);
    return cudaGetLastError();
}

/* dx = inv * (g - x * inv^2 * mean(g * x)), g = dy * scale. */
__global__ void rms_bwd_rows_kernel(int64_t rows, int64_t cols, const float *dy, const float *x,
                                    const float *scale, float eps, float *dx, float *inv_out)
{
    __shared__ float sh[NORM_THREADS];
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + r * cols, *gr = dy + r * cols;
        float *dr = dx + r * cols;
        float s = 0.0f, sgx = 0.0f;
        for (int64_t j = threadIdx.x; j < cols; j += NORM_THREADS) {
            s += xr[j] * xr[j];
            sgx += gr[j] * scale[j] * xr[j];
        }
        s = norm_block_sum(s, sh);
        sgx = norm_block_sum(sgx, sh);
        float inv = 1.0f / sqrtf((cols ? s / (float)cols : 0.0f) + eps);
        float m = cols ? sgx * inv * inv / (float)cols : 0.0f;
        for (int64_t j = threadIdx.x; j < cols; j += NORM_THREADS)
            dr[j] = inv * (gr[j] * scale[j] - xr[j] * m);
        if (threadIdx.x == 0)
            inv_out[r] = inv;
    }
}

__global__ void rms_bwd_cols_kernel(int64_t rows, int64_t cols, const float *dy, const float *x,
                                    const float *inv, float *dscale)
{
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < cols;
         j += (int64_t)gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (int64_t r = 0; r < rows; r++)
            s += dy[r * cols + j] * (x[r * cols + j] * inv[r]);
        dscale[j] = s;
    }
}

extern "C" cudaError_t norm_cuda_rms_backward(cudaStream_t stream, int64_t rows, int64_t cols,
                                              const float *dy, const float *x, const float *scale,
                                              float eps, float *dx, float *dscale, float *inv)
{
    if (cols <= 0)
        return cudaGetLastError();
    if (rows > 0)
        rms_bwd_rows_kernel<<<norm_blocks(rows), NORM_THREADS, 0, stream>>>(rows, cols, dy, x, scale, eps,
                                                                          dx, inv);
    if (dscale) {
        if (rows > 0)
            rms_bwd_cols_kernel<<<norm_elem_blocks(cols), NORM_THREADS, 0, stream>>>(rows, cols, dy, x, inv,
                                                                                   dscale);
        else
            cudaMemsetAsync(dscale, 0, sizeof(float) * (size_t)cols, stream);
    }
    return cudaGetLastError();
}

/* ---- group normalization ---------------------------------------------------------------- */

/* Mean and 1/std of one row of len values, in double (two passes). */
__device__ void gn_row_stats(const float *xr, int64_t len, float eps, double *sh, float *mean, float *inv)
{
    double s = 0.0;
    for (int64_t i = threadIdx.x; i < len; i += NORM_THREADS)
        s += xr[i];
    s = norm_block_sum(s, sh);
    double mu = len ? s / (double)len : 0.0, q = 0.0;
    for (int64_t i = threadIdx.x; i < len; i += NORM_THREADS) {
        double d = xr[i] - mu;
        q += d * d;
    }
    q = norm_block_sum(q, sh);
    double var = len ? q / (double)len : 0.0;
    *mean = (float)mu;
    *inv = (float)(1.0 / sqrt(var + (double)eps));
}

__global__ void gn_fwd_rows_kernel(int64_t n, int64_t ch, int64_t groups, int64_t spatial, const float *x,
                                   const float *scale, const float *bias, int per_group, float eps, float *y)
{
    __shared__ double sh[NORM_THREADS];
    const int64_t cpg = ch / groups, len = cpg * spatial, rows = n * groups;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + r * len;
        float *yr = y + r * len;
        float mu, inv;
        gn_row_stats(xr, len, eps, sh, &mu, &inv);
        int64_t g = r % groups;
        for (int64_t i = threadIdx.x; i < len; i += NORM_THREADS) {
            int64_t pi = per_group ? g : g * cpg + i / spatial;
            yr[i] = (xr[i] - mu) * (scale[pi] * inv) + bias[pi];
        }
    }
}

extern "C" cudaError_t norm_cuda_gn_forward(cudaStream_t stream, int64_t n, int64_t ch, int64_t groups,
                                            int64_t spatial, const float *x, const float *scale,
                                            const float *bias, int per_group, float eps, float *y)
{
    if (n * ch * spatial > 0)
        gn_fwd_rows_kernel<<<norm_blocks(n * groups), NORM_THREADS, 0, stream>>>(
            n, ch, groups, spatial, x, scale, bias, per_group, eps, y);
    return cudaGetLastError();
}

/* Per row: the statistics, the per-(instance, channel) sums of dy and
 * dy * xhat into part, then dx. */
__global__ void gn_bwd_rows_kernel(int64_t n, int64_t ch, int64_t groups, int64_t spatial, const float *dy,
                                   const float *x, const float *scale, int per_group, float eps, float *dx,
                                   double *part)
{
    __shared__ double sh[NORM_THREADS];
    const int64_t cpg = ch / groups, len = cpg * spatial, rows = n * groups;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *xr = x + r * len, *gr = dy + r * len;
        float *dr = dx + r * len;
        float mu, inv;
        gn_row_stats(xr, len, eps, sh, &mu, &inv);
        int64_t g = r % groups, b = r / groups;
        double s1 = 0.0, s2 = 0.0;
        for (int64_t k = 0; k < cpg; k++) {
            int64_t c = g * cpg + k;
            double sy = 0.0, syx = 0.0;
            for (int64_t i = k * spatial + threadIdx.x; i < (k + 1) * spatial; i += NORM_THREADS) {
                double xh = (double)((xr[i] - mu) * inv);
                sy += gr[i];
                syx += gr[i] * xh;
            }
            sy = norm_block_sum(sy, sh);
            syx = norm_block_sum(syx, sh);
            if (threadIdx.x == 0) {
                part[2 * (b * ch + c)] = sy;
                part[2 * (b * ch + c) + 1] = syx;
            }
            double sc = scale[per_group ? g : c];
            s1 += sy * sc;
            s2 += syx * sc;
        }
        float m1 = len ? (float)(s1 / (double)len) : 0.0f, m2 = len ? (float)(s2 / (double)len) : 0.0f;
        for (int64_t i = threadIdx.x; i < len; i += NORM_THREADS) {
            float sc = scale[per_group ? g : g * cpg + i / spatial];
            float xh = (xr[i] - mu) * inv;
            dr[i] = inv * (gr[i] * sc - m1 - xh * m2);
        }
    }
}

__global__ void gn_bwd_params_kernel(int64_t n, int64_t ch, int64_t np, int64_t per, const double *part,
                                     float *dscale, float *dbias)
{
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < np;
         j += (int64_t)gridDim.x * blockDim.x) {
        double sb = 0.0, ss = 0.0;
        for (int64_t b = 0; b < n; b++)
            for (int64_t k = 0; k < per; k++) {
                const double *pp = part + 2 * (b * ch + j * per + k);
                sb += pp[0];
                ss += pp[1];
            }
        if (dscale)
            dscale[j] = (float)ss;
        if (dbias)
            dbias[j] = (float)sb;
    }
}

extern "C" cudaError_t norm_cuda_gn_backward(cudaStream_t stream, int64_t n, int64_t ch, int64_t groups,
                                             int64_t spatial, const float *dy, const float *x,
                                             const float *scale, int per_group, float eps, float *dx,
                                             float *dscale, float *dbias, double *part)
{
    if (n * ch == 0)
        return cudaGetLastError();
    if (spatial > 0)
        gn_bwd_rows_kernel<<<norm_blocks(n * groups), NORM_THREADS, 0, stream>>>(
            n, ch, groups, spatial, dy, x, scale, per_group, eps, dx, part);
    else
        cudaMemsetAsync(part, 0, sizeof(double) * 2 * (size_t)(n * ch), stream);
    if (dscale || dbias) {
        int64_t np = per_group ? groups : ch, per = per_group ? ch / groups : 1;
        gn_bwd_params_kernel<<<norm_elem_blocks(np), NORM_THREADS, 0, stream>>>(n, ch, np, per, part, dscale,
                                                                              dbias);
    }
    return cudaGetLastError();
}

/* ---- Scale broadcast to the normalised shape -------------------------------------------- */

struct norm_bcast {
    int64_t dims[8], strides[8];
};

__global__ void norm_expand_kernel(int rank, norm_bcast d, int64_t n, const float *src, float *dst)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t rem = i, off = 0;
        for (int k = rank - 1; k >= 0; k--) {
            off += (rem % d.dims[k]) * d.strides[k];
            rem /= d.dims[k];
        }
        dst[i] = src[off];
    }
}

extern "C" cudaError_t norm_cuda_expand(cudaStream_t stream, int rank, const int64_t *dims,
                                        const int64_t *strides, int64_t n, const float *src, float *dst)
{
    if (rank < 0 || rank > 8)
        return cudaErrorInvalidValue;
    norm_bcast d;
    for (int k = 0; k < rank; k++) {
        d.dims[k] = dims[k];
        d.strides[k] = strides[k];
    }
    if (n > 0)
        norm_expand_kernel<<<norm_elem_blocks(n), NORM_THREADS, 0, stream>>>(rank, d, n, src, dst);
    return cudaGetLastError();
}
