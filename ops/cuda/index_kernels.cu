/* ops/cuda/index_kernels.cu — device code of GatherND, ScatterND,
 * ScatterElements/Scatter and their gradients, ArgMax/ArgMin, TopK, OneHot,
 * CumSum, Trilu and Einsum's strided pack. See index-kernels.h for what
 * each launcher does.
 *
 * Each kernel does, per thread, exactly what the CPU kernel does per
 * element, line or unit, in the same order, and floating-point arithmetic
 * goes through the _rn intrinsics so that nvcc cannot contract it into fused
 * multiply-adds: the results are the CPU's bits. */
#include <type_traits>

#include "ops/cuda/index-kernels.h"
#include "onnx/onnx.h"

namespace {

const int THREADS = 256;
const int64_t MAX_BLOCKS = 1 << 20;

inline unsigned blocks_for(int64_t n)
{
    int64_t b = (n + THREADS - 1) / THREADS;
    if (b < 1)
        b = 1;
    return (unsigned)(b < MAX_BLOCKS ? b : MAX_BLOCKS);
}

#define GRID_LOOP(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)blockDim.x * gridDim.x)

struct u128 {
    unsigned long long a, b;
};

template <typename F>
cudaError_t by_unit(size_t unit, F f)
{
    switch (unit) {
    case 1: return f((uint8_t *)0);
    case 2: return f((uint16_t *)0);
    case 4: return f((uint32_t *)0);
    case 8: return f((unsigned long long *)0);
    case 16: return f((u128 *)0);
    default: return cudaErrorInvalidValue;
    }
}

/* f((T *)0) for the numeric dtypes. */
template <typename F>
cudaError_t by_dtype(int dtype, F f)
{
    switch (dtype) {
    case ONNX_DTYPE_FLOAT: return f((float *)0);
    case ONNX_DTYPE_DOUBLE: return f((double *)0);
    case ONNX_DTYPE_INT8: return f((int8_t *)0);
    case ONNX_DTYPE_INT16: return f((int16_t *)0);
    case ONNX_DTYPE_INT32: return f((int32_t *)0);
    case ONNX_DTYPE_INT64: return f((int64_t *)0);
    case ONNX_DTYPE_UINT8: return f((uint8_t *)0);
    case ONNX_DTYPE_UINT16: return f((uint16_t *)0);
    case ONNX_DTYPE_UINT32: return f((uint32_t *)0);
    case ONNX_DTYPE_UINT64: return f((uint64_t *)0);
    default: return cudaErrorInvalidValue;
    }
}

/* + and * as the CPU computes them: integers wrap, floats round once. */
template <typename T>
__device__ __forceinline__ T add_op(T a, T b)
{
    return (T)((unsigned long long)a + (unsigned long long)b);
}
template <>
__device__ __forceinline__ float add_op<float>(float a, float b) { return __fadd_rn(a, b); }
template <>
__device__ __forceinline__ double add_op<double>(double a, double b) { return __dadd_rn(a, b); }

template <typename T>
__device__ __forceinline__ T mul_op(T a, T b)
{
    return (T)((unsigned long long)a * (unsigned long long)b);
}
template <>
__device__ __forceinline__ float mul_op<float>(float a, float b) { return __fmul_rn(a, b); }
template <>
__device__ __forceinline__ double mul_op<double>(double a, double b) { return __dmul_rn(a, b); }

__device__ __forceinline__ int64_t index_at(const void *idx, int idx64, int64_t i)
{
    return idx64 ? ((const int64_t *)idx)[i] : (int64_t)((const int32_t *)idx)[i];
}

__device__ __forceinline__ int64_t index_checked(const void *idx, int idx64, int64_t i, int64_t d,
                                                 unsigned long long *bad)
{
    int64_t v = index_at(idx, idx64, i);
    if (v < -d || v >= d) {
        atomicMin(bad, (unsigned long long)i);
        return 0;
    }
    return v < 0 ? v + d : v;
}

struct dims8 {
    int64_t v[8];
};

dims8 to_dims8(const int64_t *p, int n)
{
    dims8 d = {};
    for (int i = 0; i < n && i < 8; i++)
        d.v[i] = p[i];
    return d;
}

/* ---- positions ------------------------------------------------------------------ */

__global__ void nd_pos_kernel(int64_t *pos, const void *idx, int idx64, int64_t n, index_nd g,
                              unsigned long long *bad)
{
    GRID_LOOP(e, n) {
        int64_t t = e / g.slice, s = e - t * g.slice;
        int64_t base = (g.per_batch ? t / g.per_batch : 0) * g.batch_stride;
        for (int i = 0; i < g.m; i++)
            base += index_checked(idx, idx64, t * g.m + i, g.dims[i], bad) * g.strides[i];
        pos[e] = base + s;
    }
}

__global__ void elements_pos_kernel(int64_t *pos, const void *idx, int idx64, int rank, dims8 idims,
                                    dims8 ds, int axis, int64_t d, int64_t n, unsigned long long *bad)
{
    GRID_LOOP(e, n) {
        int64_t rem = e, off = 0;
        for (int k = rank - 1; k >= 0; k--) {
            int64_t q = rem / idims.v[k], c = rem - q * idims.v[k];
            off += (k == axis ? index_checked(idx, idx64, e, d, bad) : c) * ds.v[k];
            rem = q;
        }
        pos[e] = off;
    }
}

template <typename T>
__global__ void gather_pos_kernel(T *y, const T *x, const int64_t *pos, int64_t n)
{
    GRID_LOOP(e, n)
        y[e] = x[pos[e]];
}

/* ---- the scatter walks ------------------------------------------------------------ */

__device__ __forceinline__ int64_t walk_elem(const index_walk &w, int64_t u, int64_t j)
{
    return (u / w.inner) * w.steps * w.inner + j * w.inner + u % w.inner;
}

template <typename T>
__global__ void scatter_copy_kernel(T *out, const T *upd, const int64_t *pos, index_walk w)
{
    GRID_LOOP(u, w.units)
        for (int64_t j = 0; j < w.steps; j++) {
            int64_t e = walk_elem(w, u, j);
            out[pos[e]] = upd[e];
        }
}

/* reduction: 1 add, 2 mul, 3 max, 4 min (enum scatter_reduction). */
template <typename T>
__global__ void scatter_reduce_kernel(T *out, const T *upd, const int64_t *pos, index_walk w, int red)
{
    GRID_LOOP(u, w.units)
        for (int64_t j = 0; j < w.steps; j++) {
            int64_t e = walk_elem(w, u, j);
            T d = out[pos[e]], s = upd[e];
            out[pos[e]] = red == 1 ? add_op(d, s) : red == 2 ? mul_op(d, s) : red == 3 ? (s > d ? s : d)
                                                                                      : (s < d ? s : d);
        }
}

/* none: the last writer of a destination gets dy, and dx there is 0. */
template <typename T>
__global__ void sgrad_none_kernel(T *dx, T *du, const T *dy, const int64_t *pos, index_walk w,
                                  unsigned char *taken)
{
    GRID_LOOP(u, w.units)
        for (int64_t j = w.steps - 1; j >= 0; j--) {
            int64_t e = walk_elem(w, u, j), p = pos[e];
            if (!taken[p]) {
                taken[p] = 1;
                du[e] = (T)(double)dy[p];
                if (dx)
                    dx[p] = 0;
            } else {
                du[e] = 0;
            }
        }
}

template <typename T>
__global__ void sgrad_add_kernel(T *du, const T *dy, const int64_t *pos, int64_t n)
{
    GRID_LOOP(e, n)
        du[e] = dy[pos[e]];
}

template <typename T>
__global__ void sgrad_init_kernel(double *a, double *b, long long *win, const T *x, int64_t n, int red)
{
    GRID_LOOP(p, n) {
        a[p] = (double)x[p];
        if (red == 2)
            b[p] = 1.0;
        else
            win[p] = -1;
    }
}

/* mul: each writer gets dy * data * the other writers' product, dx gets dy
 * * the writers' product; in the CPU's multiplication order. */
template <typename T>
__global__ void sgrad_mul_kernel(T *dx, T *du, const T *dy, const T *u_, const int64_t *pos, index_walk w,
                                 double *acc, double *suf, double *pre)
{
    GRID_LOOP(u, w.units) {
        for (int64_t j = 0; j < w.steps; j++) {
            int64_t e = walk_elem(w, u, j), p = pos[e];
            pre[e] = acc[p];
            acc[p] = __dmul_rn(acc[p], (double)u_[e]);
        }
        for (int64_t j = w.steps - 1; j >= 0; j--) {
            int64_t e = walk_elem(w, u, j), p = pos[e];
            double g = (double)dy[p];
            du[e] = (T)__dmul_rn(__dmul_rn(g, pre[e]), suf[p]);
            suf[p] = __dmul_rn(suf[p], (double)u_[e]);
        }
        if (dx)
            for (int64_t j = 0; j < w.steps; j++) {
                int64_t p = pos[walk_elem(w, u, j)];
                dx[p] = (T)__dmul_rn((double)dy[p], suf[p]);
            }
    }
}

/* max/min: dy goes to whichever of data and the writers was selected (the
 * first strictly better in order). */
template <typename T>
__global__ void sgrad_select_kernel(T *dx, T *du, const T *dy, const T *u_, const int64_t *pos, index_walk w,
                                    double *best, long long *win, int is_max)
{
    GRID_LOOP(u, w.units) {
        for (int64_t j = 0; j < w.steps; j++) {
            int64_t e = walk_elem(w, u, j), p = pos[e];
            double v = (double)u_[e];
            if (is_max ? v > best[p] : v < best[p]) {
                best[p] = v;
                win[p] = j;
            }
        }
        for (int64_t j = 0; j < w.steps; j++) {
            int64_t e = walk_elem(w, u, j), p = pos[e];
            du[e] = win[p] == j ? dy[p] : (T)0;
            if (dx && win[p] >= 0)
                dx[p] = 0;
        }
    }
}

/* ---- ArgMax / ArgMin, TopK --------------------------------------------------------- */

template <typename T>
__global__ void arg_kernel(int64_t *y, const T *x, int64_t outer, int64_t n, int64_t inner, int min, int last)
{
    GRID_LOOP(w, outer * inner) {
        int64_t o = w / inner, k = w - o * inner;
        const T *l = x + o * n * inner + k;
        T b = l[0];
        int64_t bi = 0;
        for (int64_t j = 1; j < n; j++) {
            T v = l[j * inner];
            int vn = v != v, bn = b != b, take;
            if (vn || bn)
                take = vn && (!bn || last);
            else if (v == b)
                take = last;
            else
                take = min ? v < b : v > b;
            if (take) {
                b = v;
                bi = j;
            }
        }
        y[w] = bi;
    }
}

template <typename T>
__device__ __forceinline__ int topk_before(const T *l, int64_t inner, int largest, int64_t a, int64_t b)
{
    T va = l[a * inner], vb = l[b * inner];
    int an = va != va, bn = vb != vb;
    if (an || bn)
        return largest ? an && !bn : bn && !an;
    return largest ? va > vb : va < vb;
}

template <typename T>
__global__ void topk_kernel(T *v, int64_t *ix, const T *x, int64_t outer, int64_t n, int64_t inner, int64_t kk,
                            int largest, int64_t *scratch)
{
    GRID_LOOP(line, outer * inner) {
        int64_t o = line / inner, in = line - o * inner;
        const T *l = x + o * n * inner + in;
        int64_t *pos = scratch + line * 2 * n, *tmp = pos + n;
        for (int64_t j = 0; j < n; j++)
            pos[j] = j;
        for (int64_t w = 1; w < n; w *= 2) {
            for (int64_t lo = 0; lo < n; lo += 2 * w) {
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
                int64_t i = lo, j = mid, q = lo;
                while (i < mid && j < hi)
                    tmp[q++] = topk_before(l, inner, largest, pos[j], pos[i]) ? pos[j++] : pos[i++];
                while (i < mid)
                    tmp[q++] = pos[i++];
                while (j < hi)
                    tmp[q++] = pos[j++];
            }
            for (int64_t j = 0; j < n; j++)
                pos[j] = tmp[j];
        }
        for (int64_t j = 0; j < kk; j++) {
            int64_t dst = o * kk * inner + j * inner + in;
            if (v)
                v[dst] = l[pos[j] * inner];
            if (ix)
                ix[dst] = pos[j];
        }
    }
}

/* ---- OneHot, CumSum, Trilu ------------------------------------------------------------ */

__device__ __forceinline__ int64_t sat_trunc(double v)
{
    if (v != v)
        return 0;
    if (v >= 9223372036854775808.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

__device__ __forceinline__ int64_t read_any(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case ONNX_DTYPE_FLOAT: return sat_trunc((double)((const float *)p)[i]);
    case ONNX_DTYPE_DOUBLE: return sat_trunc(((const double *)p)[i]);
    case ONNX_DTYPE_INT8: return ((const int8_t *)p)[i];
    case ONNX_DTYPE_INT16: return ((const int16_t *)p)[i];
    case ONNX_DTYPE_INT32: return ((const int32_t *)p)[i];
    case ONNX_DTYPE_INT64: return ((const int64_t *)p)[i];
    case ONNX_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case ONNX_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case ONNX_DTYPE_UINT32: return ((const uint32_t *)p)[i];
    default: return (int64_t)((const uint64_t *)p)[i];
    }
}

template <typename T>
__global__ void onehot_kernel(T *y, const void *idx, int dt, const T *vals, int64_t outer, int64_t depth,
                              int64_t inner)
{
    GRID_LOOP(e, outer * depth * inner) {
        int64_t i = e % inner, r = e / inner, j = r % depth, o = r / depth;
        int64_t v = read_any(idx, dt, o * inner + i);
        if (v < 0)
            v += depth;
        y[e] = v == j ? vals[1] : vals[0];
    }
}

template <typename T>
__global__ void cumsum_kernel(T *y, const T *x, int64_t outer, int64_t n, int64_t inner, int excl, int rev)
{
    GRID_LOOP(line, outer * inner) {
        int64_t o = line / inner, k = line - o * inner;
        const T *xl = x + o * n * inner + k;
        T *yl = y + o * n * inner + k;
        for (int64_t s = 0; s < n; s++) {
            int64_t j = rev ? n - 1 - s : s, pj = rev ? j + 1 : j - 1;
            if (s == 0)
                yl[j * inner] = excl ? (T)0 : xl[j * inner];
            else
                yl[j * inner] = add_op(yl[pj * inner], xl[(excl ? pj : j) * inner]);
        }
    }
}

template <typename T>
__global__ void trilu_kernel(T *y, const T *x, int64_t n, int64_t rows, int64_t cols, int upper, int64_t k)
{
    GRID_LOOP(e, n) {
        int64_t j = e % cols, i = (e / cols) % rows;
        int keep = upper ? j - i >= k : j - i <= k;
        y[e] = keep ? x[e] : T();
    }
}

/* ---- Einsum's pack -------------------------------------------------------------------- */

template <typename T>
__global__ void ein_pack_kernel(T *dst, const T *src, int64_t n_out, int64_t n_sum, index_loop out,
                                index_loop sum)
{
    GRID_LOOP(o, n_out) {
        int64_t r = o, base = 0;
        for (int a = out.n - 1; a >= 0; a--) {
            int64_t q = r / out.dim[a];
            base += (r - q * out.dim[a]) * out.str[a];
            r = q;
        }
        if (sum.n == 0) {
            dst[o] = src[base];
            continue;
        }
        double acc = 0;
        for (int64_t s = 0; s < n_sum; s++) {
            int64_t rem = s, off = base;
            for (int a = sum.n - 1; a >= 0; a--) {
                int64_t q = rem / sum.dim[a];
                off += (rem - q * sum.dim[a]) * sum.str[a];
                rem = q;
            }
            acc = __dadd_rn(acc, (double)src[off]);
        }
        dst[o] = (T)acc;
    }
}

size_t align256(size_t n)
{
    return (n + 255) & ~(size_t)255;
}

} // namespace

/* ---- launchers -------------------------------------------------------------------------- */

extern "C" cudaError_t index_nd_pos_launch(int64_t *pos, const void *idx, int idx64, int64_t tuples,
                                           const struct index_nd *g, unsigned long long *bad, cudaStream_t stream)
{
    int64_t n = tuples * g->slice;
    if (n == 0)
        return cudaSuccess;
    nd_pos_kernel<<<blocks_for(n), THREADS, 0, stream>>>(pos, idx, idx64, n, *g, bad);
    return cudaGetLastError();
}

extern "C" cudaError_t index_elements_pos_launch(int64_t *pos, const void *idx, int idx64, int rank,
                                                 const int64_t *idims, const int64_t *dstrides, int axis, int64_t d,
                                                 unsigned long long *bad, cudaStream_t stream)
{
    int64_t n = 1;
    for (int a = 0; a < rank; a++)
        n *= idims[a];
    if (n == 0)
        return cudaSuccess;
    elements_pos_kernel<<<blocks_for(n), THREADS, 0, stream>>>(pos, idx, idx64, rank, to_dims8(idims, rank),
                                                                 to_dims8(dstrides, rank), axis, d, n, bad);
    return cudaGetLastError();
}

extern "C" cudaError_t index_gather_pos_launch(void *y, const void *x, const int64_t *pos, int64_t n, size_t unit,
                                               cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    return by_unit(unit, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        gather_pos_kernel<T><<<blocks_for(n), THREADS, 0, stream>>>((T *)y, (const T *)x, pos, n);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t index_scatter_launch(void *out, const void *upd, const int64_t *pos,
                                            const struct index_walk *w, int reduction, int dtype, size_t esize,
                                            cudaStream_t stream)
{
    if (w->units * w->steps == 0)
        return cudaSuccess;
    index_walk wv = *w;
    if (reduction == 0) {
        return by_unit(esize, [&](auto *tag) {
            typedef typename std::remove_pointer<decltype(tag)>::type T;
            scatter_copy_kernel<T><<<blocks_for(wv.units), THREADS, 0, stream>>>((T *)out, (const T *)upd, pos, wv);
            return cudaGetLastError();
        });
    }
    return by_dtype(dtype, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        scatter_reduce_kernel<T><<<blocks_for(wv.units), THREADS, 0, stream>>>((T *)out, (const T *)upd, pos, wv,
                                                                                 reduction);
        return cudaGetLastError();
    });
}

extern "C" size_t index_scatter_grad_work_bytes(int reduction, int64_t n_data, int64_t n_upd)
{
    size_t n = (size_t)(n_data > 0 ? n_data : 1), m = (size_t)(n_upd > 0 ? n_upd : 1);
    switch (reduction) {
    case 0: return align256(n);
    case 1: return 0;
    case 2: return 2 * align256(8 * n) + align256(8 * m);
    default: return 2 * align256(8 * n);
    }
}

extern "C" cudaError_t index_scatter_grad_launch(void *dx, void *du, const void *dy, const void *x, const void *u,
                                                 const int64_t *pos, const struct index_walk *w, int64_t n_data,
                                                 int reduction, int dbl, void *work, cudaStream_t stream)
{
    index_walk wv = *w;
    int64_t n_upd = wv.units * wv.steps;
    if (n_upd == 0)
        return cudaSuccess;
    size_t half = align256(8 * (size_t)(n_data > 0 ? n_data : 1));
    double *a = (double *)work, *b = (double *)((char *)work + half);
    auto run = [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        T *tdx = (T *)dx, *tdu = (T *)du;
        const T *tdy = (const T *)dy, *tx = (const T *)x, *tu = (const T *)u;
        switch (reduction) {
        case 0:
            cudaMemsetAsync(work, 0, (size_t)n_data, stream);
            sgrad_none_kernel<T><<<blocks_for(wv.units), THREADS, 0, stream>>>(tdx, tdu, tdy, pos, wv,
                                                                                (unsigned char *)work);
            break;
        case 1:
            sgrad_add_kernel<T><<<blocks_for(n_upd), THREADS, 0, stream>>>(tdu, tdy, pos, n_upd);
            break;
        case 2:
            /* work: acc and suf per destination, then pre per update */
            sgrad_init_kernel<T><<<blocks_for(n_data), THREADS, 0, stream>>>(a, b, NULL, tx, n_data, 2);
            sgrad_mul_kernel<T><<<blocks_for(wv.units), THREADS, 0, stream>>>(
                tdx, tdu, tdy, tu, pos, wv, a, b, (double *)((char *)work + 2 * half));
            break;
        default:
            sgrad_init_kernel<T><<<blocks_for(n_data), THREADS, 0, stream>>>(a, NULL, (long long *)b, tx, n_data,
                                                                               reduction);
            sgrad_select_kernel<T><<<blocks_for(wv.units), THREADS, 0, stream>>>(
                tdx, tdu, tdy, tu, pos, wv, a, (long long *)b, reduction == 3);
            break;
        }
        return cudaGetLastError();
    };
    return dbl ? run((double *)0) : run((float *)0);
}

extern "C" cudaError_t index_arg_launch(int64_t *y, const void *x, int dtype, int64_t outer, int64_t n, int64_t inner,
                                        int min, int last, cudaStream_t stream)
{
    if (outer * inner == 0)
        return cudaSuccess;
    return by_dtype(dtype, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        arg_kernel<T><<<blocks_for(outer * inner), THREADS, 0, stream>>>(y, (const T *)x, outer, n, inner, min, last);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t index_topk_launch(void *v, int64_t *ix, const void *x, int dtype, int64_t outer, int64_t n,
                                         int64_t inner, int64_t kk, int largest, int64_t *scratch,
                                         cudaStream_t stream)
{
    if (outer * inner == 0 || kk == 0)
        return cudaSuccess;
    return by_dtype(dtype, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        topk_kernel<T><<<blocks_for(outer * inner), THREADS, 0, stream>>>((T *)v, ix, (const T *)x, outer, n, inner,
                                                                            kk, largest, scratch);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t index_onehot_launch(void *y, const void *idx, int idx_dtype, const void *vals, int64_t outer,
                                           int64_t depth, int64_t inner, size_t unit, cudaStream_t stream)
{
    if (outer * depth * inner == 0)
        return cudaSuccess;
    return by_unit(unit, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        onehot_kernel<T><<<blocks_for(outer * depth * inner), THREADS, 0, stream>>>((T *)y, idx, idx_dtype,
                                                                                      (const T *)vals, outer, depth,
                                                                                      inner);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t index_cumsum_launch(void *y, const void *x, int dtype, int64_t outer, int64_t n, int64_t inner,
                                           int exclusive, int reverse, cudaStream_t stream)
{
    if (outer * n * inner == 0)
        return cudaSuccess;
    return by_dtype(dtype, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        cumsum_kernel<T><<<blocks_for(outer * inner), THREADS, 0, stream>>>((T *)y, (const T *)x, outer, n, inner,
                                                                              exclusive, reverse);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t index_trilu_launch(void *y, const void *x, int64_t mats, int64_t rows, int64_t cols, int upper,
                                          int64_t k, size_t unit, cudaStream_t stream)
{
    int64_t n = mats * rows * cols;
    if (n == 0)
        return cudaSuccess;
    return by_unit(unit, [&](auto *tag) {
        typedef typename std::remove_pointer<decltype(tag)>::type T;
        trilu_kernel<T><<<blocks_for(n), THREADS, 0, stream>>>((T *)y, (const T *)x, n, rows, cols, upper, k);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t index_ein_pack_launch(void *dst, const void *src, int dbl, const struct index_loop *out,
                                             const struct index_loop *sum, cudaStream_t stream)
{
    int64_t n_out = 1, n_sum = 1;
    for (int a = 0; a < out->n; a++)
        n_out *= out->dim[a];
    for (int a = 0; a < sum->n; a++)
        n_sum *= sum->dim[a];
    if (n_out == 0)
        return cudaSuccess;
    if (dbl)
        ein_pack_kernel<double><<<blocks_for(n_out), THREADS, 0, stream>>>((double *)dst, (const double *)src, n_out,
                                                                             n_sum, *out, *sum);
    else
        ein_pack_kernel<float><<<blocks_for(n_out), THREADS, 0, stream>>>((float *)dst, (const float *)src, n_out,
                                                                            n_sum, *out, *sum);
    return cudaGetLastError();
}
