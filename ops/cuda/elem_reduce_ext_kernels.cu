/* ops/cuda/elem_reduce_ext_kernels.cu — device code of ReduceProd, ReduceL1,
 * ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp and
 * ReduceExtGrad (ops/reduce_ext.c); see elem-kernels.h.
 *
 * One block per output (grid-stride over outputs): each thread folds the
 * group elements k = t, t + 256, ... in order, then the block combines the
 * 256 partial results through a fixed binary tree in shared memory. The
 * order depends on the shape alone, so every run gives the same bits; they
 * differ from the CPU's sequential double sums in the last bits only. The
 * block kernels synchronise, which the host emulator (tests/cuda_emu) runs
 * on real threads for kernels named *_block_kernel. */
#include <cmath>
#include <type_traits>

#include "ops/cuda/elem-kernels.h"
#include "onnx/onnx.h"

namespace {

const int THREADS = 256;

enum { RX_PROD, RX_L1, RX_L2, RX_SUM_SQUARE, RX_LOG_SUM, RX_LOG_SUM_EXP };

__device__ __forceinline__ int64_t group_base(const cuda_reduce_geom &g, int64_t o)
{
    int64_t base = 0;
    for (int a = g.n_kept - 1; a >= 0; a--) {
        int64_t q = o / g.kept_dims[a];
        base += (o - q * g.kept_dims[a]) * g.kept_strides[a];
        o = q;
    }
    return base;
}

__device__ __forceinline__ int64_t group_off(const cuda_reduce_geom &g, int64_t k)
{
    int64_t off = 0;
    for (int a = g.n_red - 1; a >= 0; a--) {
        int64_t q = k / g.red_dims[a];
        off += (k - q * g.red_dims[a]) * g.red_strides[a];
        k = q;
    }
    return off;
}

/* op 0: sum, 1: product, 2: max with NaN winning. */
__device__ __forceinline__ double combine(int op, double a, double b)
{
    if (op == 0)
        return __dadd_rn(a, b);
    if (op == 1)
        return __dmul_rn(a, b);
    return (b > a || b != b) ? b : a;
}

/* The block's fold of v (thread values) by op, in a fixed tree; every
 * thread gets the result. */
__device__ double block_fold(double *sh, double v, int op)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w)
            sh[threadIdx.x] = combine(op, sh[threadIdx.x], sh[threadIdx.x + w]);
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

__device__ __forceinline__ unsigned long long ufold(int op, unsigned long long a, unsigned long long b)
{
    return op == 1 ? a * b : a + b;
}

__device__ unsigned long long block_fold_u(unsigned long long *sh, unsigned long long v, int op)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w)
            sh[threadIdx.x] = ufold(op, sh[threadIdx.x], sh[threadIdx.x + w]);
        __syncthreads();
    }
    unsigned long long r = sh[0];
    __syncthreads();
    return r;
}

/* double to the element type as the CPU stores it (ew_sat_*: integers
 * saturate, NaN gives 0). */
template <typename T>
__device__ __forceinline__ T store_as(double v)
{
    return (T)v;
}
template <>
__device__ __forceinline__ int32_t store_as<int32_t>(double v)
{
    return v != v ? 0 : v <= -2147483648.0 ? INT32_MIN : v >= 2147483647.0 ? INT32_MAX : (int32_t)v;
}
template <>
__device__ __forceinline__ uint32_t store_as<uint32_t>(double v)
{
    return v != v || v <= 0 ? 0u : v >= 4294967295.0 ? UINT32_MAX : (uint32_t)v;
}
template <>
__device__ __forceinline__ int64_t store_as<int64_t>(double v)
{
    return v != v ? 0 : v >= 9223372036854775808.0 ? INT64_MAX : v <= -9223372036854775808.0 ? INT64_MIN : (int64_t)v;
}
template <>
__device__ __forceinline__ uint64_t store_as<uint64_t>(double v)
{
    return v != v || v <= 0 ? 0u : v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
}

template <typename T>
__global__ void rx_block_kernel(T *y, const T *x, cuda_reduce_geom g, int kind)
{
    __shared__ double sh[THREADS];
    __shared__ unsigned long long shu[THREADS];
    const bool integer = !std::is_floating_point<T>::value &&
                         (kind == RX_PROD || kind == RX_L1 || kind == RX_SUM_SQUARE);
    for (int64_t o = blockIdx.x; o < g.n_out; o += gridDim.x) {
        int64_t base = group_base(g, o);
        if (integer) {
            unsigned long long acc = kind == RX_PROD ? 1 : 0;
            for (int64_t k = threadIdx.x; k < g.count; k += THREADS) {
                T xv = x[base + group_off(g, k)];
                unsigned long long v = std::is_signed<T>::value ? (unsigned long long)(long long)xv
                                                                : (unsigned long long)xv;
                if (kind == RX_PROD)
                    acc *= v;
                else if (kind == RX_L1)
                    acc += std::is_signed<T>::value && (long long)v < 0 ? 0ull - v : v;
                else
                    acc += v * v;
            }
            unsigned long long r = block_fold_u(shu, acc, kind == RX_PROD ? 1 : 0);
            if (threadIdx.x == 0)
                y[o] = (T)r;
            continue;
        }
        double m = 0;
        if (kind == RX_LOG_SUM_EXP) {
            double mv = -INFINITY;
            for (int64_t k = threadIdx.x; k < g.count; k += THREADS)
                mv = combine(2, mv, (double)x[base + group_off(g, k)]);
            m = block_fold(sh, mv, 2);
            if (std::isinf(m) || m != m) {
                if (threadIdx.x == 0)
                    y[o] = store_as<T>(m);
                continue;
            }
        }
        double acc = kind == RX_PROD ? 1.0 : 0.0;
        for (int64_t k = threadIdx.x; k < g.count; k += THREADS) {
            double v = (double)x[base + group_off(g, k)];
            switch (kind) {
            case RX_PROD: acc = __dmul_rn(acc, v); break;
            case RX_L1: acc = __dadd_rn(acc, fabs(v)); break;
            case RX_L2: case RX_SUM_SQUARE: acc = __dadd_rn(acc, __dmul_rn(v, v)); break;
            case RX_LOG_SUM: acc = __dadd_rn(acc, v); break;
            default: acc = __dadd_rn(acc, exp(__dsub_rn(v, m))); break;
            }
        }
        double r = block_fold(sh, acc, kind == RX_PROD ? 1 : 0);
        if (threadIdx.x == 0) {
            if (kind == RX_L2)
                r = sqrt(r);
            else if (kind == RX_LOG_SUM)
                r = log(r);
            else if (kind == RX_LOG_SUM_EXP)
                r = __dadd_rn(m, log(r));
            y[o] = store_as<T>(r);
        }
    }
}

template <typename T>
__global__ void rx_grad_block_kernel(T *dx, const T *dy, const T *x, const T *y, cuda_reduce_geom g, int kind)
{
    __shared__ double sh[THREADS];
    for (int64_t o = blockIdx.x; o < g.n_out; o += gridDim.x) {
        int64_t base = group_base(g, o);
        double dyv = (double)dy[o], yv = y ? (double)y[o] : 0.0;
        double zeros = 0, nz = 1;
        if (kind == RX_PROD) {
            double zc = 0, pr = 1;
            for (int64_t k = threadIdx.x; k < g.count; k += THREADS) {
                double v = (double)x[base + group_off(g, k)];
                if (v == 0)
                    zc += 1;
                else
                    pr = __dmul_rn(pr, v);
            }
            zeros = block_fold(sh, zc, 0);
            nz = block_fold(sh, pr, 1);
        }
        double e = kind == RX_LOG_SUM ? exp(-yv) : 0.0;
        for (int64_t k = threadIdx.x; k < g.count; k += THREADS) {
            int64_t at = base + group_off(g, k);
            double v = (double)x[at], d;
            switch (kind) {
            case RX_PROD: d = zeros == 0 ? nz / v : zeros == 1 && v == 0 ? nz : 0.0; break;
            case RX_L1: d = v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; break;
            case RX_L2: d = yv == 0 ? 0.0 : v / yv; break;
            case RX_SUM_SQUARE: d = __dmul_rn(2.0, v); break;
            case RX_LOG_SUM: d = e; break;
            default: d = exp(__dsub_rn(v, yv)); break;
            }
            dx[at] = (T)__dmul_rn(dyv, d);
        }
    }
}

unsigned grid_for(int64_t n_out)
{
    return (unsigned)(n_out < 65535 ? (n_out > 0 ? n_out : 1) : 65535);
}

template <typename F>
cudaError_t by_dtype(int dtype, F f)
{
    switch (dtype) {
    case ONNX_DTYPE_FLOAT: return f((float *)0);
    case ONNX_DTYPE_DOUBLE: return f((double *)0);
    case ONNX_DTYPE_INT32: return f((int32_t *)0);
    case ONNX_DTYPE_INT64: return f((int64_t *)0);
    case ONNX_DTYPE_UINT32: return f((uint32_t *)0);
    case ONNX_DTYPE_UINT64: return f((uint64_t *)0);
    default: return cudaErrorNotSupported;
    }
}

} // namespace

extern "C" cudaError_t cuda_reduce_ext_launch(cudaStream_t stream, int kind, int dtype, const struct cuda_reduce_geom *g,
                                              const void *x, void *y)
{
    if (g->n_out == 0)
        return cudaSuccess;
    cuda_reduce_geom gv = *g;
    return by_dtype(dtype, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        rx_block_kernel<T><<<grid_for(gv.n_out), THREADS, 0, stream>>>((T *)y, (const T *)x, gv, kind);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_reduce_ext_grad_launch(cudaStream_t stream, int kind, int dtype,
                                                   const struct cuda_reduce_geom *g, const void *dy, const void *x,
                                                   const void *y, void *dx)
{
    if (g->n_out == 0 || g->count == 0)
        return cudaSuccess;
    cuda_reduce_geom gv = *g;
    if (dtype == ONNX_DTYPE_DOUBLE)
        rx_grad_block_kernel<double><<<grid_for(gv.n_out), THREADS, 0, stream>>>(
            (double *)dx, (const double *)dy, (const double *)x, (const double *)y, gv, kind);
    else if (dtype == ONNX_DTYPE_FLOAT)
        rx_grad_block_kernel<float><<<grid_for(gv.n_out), THREADS, 0, stream>>>(
            (float *)dx, (const float *)dy, (const float *)x, (const float *)y, gv, kind);
    else
        return cudaErrorNotSupported;
    return cudaGetLastError();
}
