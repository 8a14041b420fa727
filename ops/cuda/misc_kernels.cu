/* ops/cuda/misc_kernels.cu — device code of the "misc" family
 * (ops/cuda/misc.c): the functions of ops/unary_math.c and their
 * derivatives, expression for expression as the CPU's (float math in
 * float, double in double), and the bitwise operators of ops/bitwise.c
 * over a broadcast geometry, Mean's division, EyeLike's diagonal, and the
 * line kernels of ops/along_axis.c (Hardmax, LpNormalization, CumProd and
 * their gradients), one thread per line with the CPU's arithmetic, and
 * ReverseSequence's permutation of rows, and LRN and
 * MeanVarianceNormalization with their gradients (ops/local_norm.c), and
 * Det / DetGrad over ops/det-impl.h, AffineGrid with its gradient, and
 * GridSample with its gradient over ops/grid_sample-impl.h. */
#include "ops/cuda/elem-device.cuh"
#include "ops/cuda/misc-kernels.h"
#include "ops/det-impl.h"
#include "ops/grid_sample-impl.h"
#include "ops/misc-impl.h"
#include "ops/misc-params.h"

namespace {

/* Float and double math by overload, so each function is written once. */
#define M_FN(name, f32)                                                                \
    __device__ inline float m_##name(float x) { return f32(x); }                       \
    __device__ inline double m_##name(double x) { return name(x); }
M_FN(tan, tanf)
M_FN(asin, asinf)
M_FN(acos, acosf)
M_FN(atan, atanf)
M_FN(sinh, sinhf)
M_FN(cosh, coshf)
M_FN(asinh, asinhf)
M_FN(acosh, acoshf)
M_FN(atanh, atanhf)
M_FN(sqrt, sqrtf)
M_FN(fabs, fabsf)
__device__ inline float m_pow(float x, float y) { return powf(x, y); }
__device__ inline double m_pow(double x, double y) { return pow(x, y); }
#undef M_FN

template <typename T> __device__ inline T umath_f(int fn, T x, const cuda_umath_consts &k)
{
    if constexpr (std::is_floating_point<T>::value) {
        switch (fn) {
        case UMATH_TAN: return m_tan(x);
        case UMATH_ASIN: return m_asin(x);
        case UMATH_ACOS: return m_acos(x);
        case UMATH_ATAN: return m_atan(x);
        case UMATH_SINH: return m_sinh(x);
        case UMATH_COSH: return m_cosh(x);
        case UMATH_ASINH: return m_asinh(x);
        case UMATH_ACOSH: return m_acosh(x);
        case UMATH_ATANH: return m_atanh(x);
        case UMATH_SOFTSIGN: return x / ((T)1 + m_fabs(x));
        /* as numpy.where: NaN gives 0 */
        case UMATH_THRESHOLDED_RELU: return x > (T)k.alpha ? x : (T)0;
        default:
            return x < -(T)k.lambd ? x + (T)k.bias : x > (T)k.lambd ? x - (T)k.bias : (T)0;
        }
    } else {
        /* Shrink of an integer: in double, stored saturating */
        const double v = (double)x;
        return ew_sat<T>(v < -(double)k.lambd ? v + k.bias
                         : v > (double)k.lambd ? v - k.bias : 0.0);
    }
}

template <typename T> __device__ inline T umath_df(int fn, T x, const cuda_umath_consts &k)
{
    switch (fn) {
    case UMATH_TAN: return (T)1 + m_tan(x) * m_tan(x);
    case UMATH_ASIN: return (T)1 / m_sqrt((T)1 - x * x);
    case UMATH_ACOS: return (T)-1 / m_sqrt((T)1 - x * x);
    case UMATH_ATAN: return (T)1 / ((T)1 + x * x);
    case UMATH_SINH: return m_cosh(x);
    case UMATH_COSH: return m_sinh(x);
    case UMATH_ASINH: return (T)1 / m_sqrt(x * x + (T)1);
    case UMATH_ACOSH: return (T)1 / m_sqrt(x * x - (T)1);
    case UMATH_ATANH: return (T)1 / ((T)1 - x * x);
    case UMATH_SOFTSIGN: return (T)1 / (((T)1 + m_fabs(x)) * ((T)1 + m_fabs(x)));
    case UMATH_THRESHOLDED_RELU: return x > (T)k.alpha ? (T)1 : (T)0;
    default: return (x < -(T)k.lambd || x > (T)k.lambd) ? (T)1 : (T)0;
    }
}

/* The function is uniform across the grid, so the switch does not diverge. */
template <typename T>
__global__ void __launch_bounds__(EW_THREADS)
    umath_kernel(int fn, int64_t n, const T *x, T *o, cuda_umath_consts k)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        o[i] = umath_f<T>(fn, x[i], k);
}

/* dy * f'(x), except where the CPU writes the quotient dy / g(x) directly:
 * the same value to the last bit only if written the same way. */
template <typename T>
__global__ void __launch_bounds__(EW_THREADS)
    umath_grad_kernel(int fn, int64_t n, const T *dy, const T *x, T *o, cuda_umath_consts k)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const T d = dy[i], v = x[i];
        T r;
        switch (fn) {
        case UMATH_ASIN: r = d / m_sqrt((T)1 - v * v); break;
        case UMATH_ACOS: r = -d / m_sqrt((T)1 - v * v); break;
        case UMATH_ATAN: r = d / ((T)1 + v * v); break;
        case UMATH_ASINH: r = d / m_sqrt(v * v + (T)1); break;
        case UMATH_ACOSH: r = d / m_sqrt(v * v - (T)1); break;
        case UMATH_ATANH: r = d / ((T)1 - v * v); break;
        case UMATH_SOFTSIGN: r = d / (((T)1 + m_fabs(v)) * ((T)1 + m_fabs(v))); break;
        case UMATH_THRESHOLDED_RELU: r = v > (T)k.alpha ? d : (T)0; break;
        case UMATH_SHRINK: r = (v < -(T)k.lambd || v > (T)k.lambd) ? d : (T)0; break;
        default: r = d * umath_df<T>(fn, v, k); break;
        }
        o[i] = r;
    }
}

/* ---- bitwise ------------------------------------------------------------ */

template <typename T> __device__ inline T bitwise_f(int op, T x, T y)
{
    typedef typename wrap_of<T>::W W;           /* unsigned, at least as wide as T */
    const int bits = (int)sizeof(T) * 8;
    bool out_of_range;
    if constexpr (std::is_signed<T>::value)
        out_of_range = y < 0 || y >= bits;
    else
        out_of_range = (uint64_t)y >= (uint64_t)bits;
    switch (op) {
    case CUDA_BITWISE_AND: return (T)(x & y);
    case CUDA_BITWISE_OR: return (T)(x | y);
    case CUDA_BITWISE_XOR: return (T)(x ^ y);
    case CUDA_BITWISE_NOT: return (T)~x;
    case CUDA_BITWISE_SHL: return out_of_range ? (T)0 : (T)((W)x << (unsigned)y);
    default:
        if (!out_of_range)
            return (T)(x >> (unsigned)y);
        if constexpr (std::is_signed<T>::value)
            return (T)(x < 0 ? -1 : 0);
        else
            return (T)0;
    }
}

template <typename T>
__global__ void __launch_bounds__(EW_THREADS)
    bitwise_kernel(int op, cuda_misc_bcast g, const T *a, const T *b, T *o)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.numel; i += stride) {
        int64_t rem = i, ia = 0, ib = 0;
        for (int d = g.rank - 1; d >= 0; d--) {
            const int64_t k = rem % g.dims[d];
            rem /= g.dims[d];
            ia += k * g.sa[d];
            ib += k * g.sb[d];
        }
        o[i] = bitwise_f<T>(op, a[ia], b ? b[ib] : (T)0);
    }
}

template <typename T>
__global__ void __launch_bounds__(EW_THREADS) div_kernel(int64_t n, T *x, T d)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        x[i] = x[i] / d;
}

template <typename E>
__global__ void __launch_bounds__(EW_THREADS)
    fill_strided_kernel(E *o, int64_t start, int64_t step, int64_t count, E v)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride)
        o[start + i * step] = v;
}

template <typename E>
cudaError_t fill_strided(cudaStream_t s, void *out, int64_t start, int64_t step, int64_t count,
                         uint64_t bits)
{
    E v;
    memcpy(&v, &bits, sizeof v);   /* little-endian: the low bytes */
    fill_strided_kernel<E><<<ew_blocks(count, EW_THREADS), EW_THREADS, 0, s>>>(
        (E *)out, start, step, count, v);
    return cudaGetLastError();
}

/* ---- along one axis: the CPU's line functions -------------------------------- */

template <typename T> __device__ void hardmax_line(int64_t n, int64_t st, const T *x, T *y)
{
    int64_t best = 0;
    T bv = x[0];
    for (int64_t k = 1; k < n; k++) {
        T v = x[k * st];
        if (v > bv || (v != v && bv == bv)) {
            best = k;
            bv = v;
        }
    }
    for (int64_t k = 0; k < n; k++)
        y[k * st] = k == best ? (T)1 : (T)0;
}

template <typename T> __device__ T lp_norm(int p, int64_t n, int64_t st, const T *x)
{
    T s = 0;
    for (int64_t k = 0; k < n; k++)
        s += p == 1 ? m_fabs(x[k * st]) : x[k * st] * x[k * st];
    return p == 1 ? s : m_sqrt(s);
}

template <typename T> __device__ void lpnorm_line(int p, int64_t n, int64_t st, const T *x, T *y)
{
    const T nrm = lp_norm<T>(p, n, st, x);
    for (int64_t k = 0; k < n; k++)
        y[k * st] = nrm == 0 ? (T)0 : x[k * st] / nrm;
}

template <typename T>
__device__ void lpnorm_grad_line(int p, int64_t n, int64_t st, const T *dy, const T *x, T *dx)
{
    const T nrm = lp_norm<T>(p, n, st, x);
    if (nrm == 0) {
        for (int64_t k = 0; k < n; k++)
            dx[k * st] = 0;
        return;
    }
    T dot = 0;
    for (int64_t k = 0; k < n; k++)
        dot += dy[k * st] * (x[k * st] / nrm);
    for (int64_t k = 0; k < n; k++) {
        const T v = x[k * st];
        const T s = p == 2 ? v / nrm : (T)((v > 0) - (v < 0));
        dx[k * st] = (dy[k * st] - s * dot) / nrm;
    }
}

template <typename T>
__device__ void cumprod_line(int excl, int rev, int64_t n, int64_t st, const T *x, T *y)
{
    typedef typename wrap_of<T>::W W;
    W acc = 1;
    for (int64_t t = 0; t < n; t++) {
        const int64_t k = (rev ? n - 1 - t : t) * st;
        if (excl) {
            y[k] = (T)acc;
            acc = (W)(acc * (W)x[k]);
        } else {
            acc = (W)(acc * (W)x[k]);
            y[k] = (T)acc;
        }
    }
}

template <typename T>
__device__ void cumprod_grad_line(int excl, int rev, int64_t n, int64_t st, const T *dy,
                                  const T *x, T *dx)
{
    T r = 0, next = 0;
    for (int64_t t = n - 1; t >= 0; t--) {
        const int64_t k = (rev ? n - 1 - t : t) * st;
        if (excl) {
            dx[k] = r;
            r = dy[k] + x[k] * r;
        } else {
            r = dy[k] + next * r;
            dx[k] = r;
            next = x[k];
        }
    }
    T pre = 1;
    for (int64_t t = 0; t < n; t++) {
        const int64_t k = (rev ? n - 1 - t : t) * st;
        dx[k] *= pre;
        pre *= x[k];
    }
}

template <typename T> __global__ void __launch_bounds__(EW_THREADS) along_kernel(cuda_along_args a)
{
    const int64_t lines = a.outer * a.inner;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const T *x = (const T *)a.a, *xb = (const T *)a.b;
    T *y = (T *)a.out;
    for (int64_t l = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; l < lines; l += stride) {
        const int64_t o = l / a.inner, i = l % a.inner, base = o * a.n * a.inner + i;
        if constexpr (std::is_floating_point<T>::value) {
            switch (a.kind) {
            case ALONG_HARDMAX: hardmax_line<T>(a.n, a.inner, x + base, y + base); break;
            case ALONG_LPNORM: lpnorm_line<T>(a.p, a.n, a.inner, x + base, y + base); break;
            case ALONG_LPNORM_GRAD:
                lpnorm_grad_line<T>(a.p, a.n, a.inner, x + base, xb + base, y + base);
                break;
            case ALONG_CUMPROD:
                cumprod_line<T>(a.exclusive, a.reverse, a.n, a.inner, x + base, y + base);
                break;
            default:
                cumprod_grad_line<T>(a.exclusive, a.reverse, a.n, a.inner, x + base, xb + base,
                                     y + base);
            }
        } else {
            cumprod_line<T>(a.exclusive, a.reverse, a.n, a.inner, x + base, y + base);
        }
    }
}

/* ---- ReverseSequence ------------------------------------------------------- */

template <typename E>
__global__ void __launch_bounds__(EW_THREADS)
    reverse_seq_kernel(int64_t d0, int64_t d1, int64_t inner, int batch_axis,
                       const int64_t *lens, const E *x, E *y)
{
    const int64_t n = d0 * d1 * inner;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        const int64_t k = e % inner, r = e / inner, i1 = r % d1, i0 = r / d1;
        const int64_t b = batch_axis ? i1 : i0, t = batch_axis ? i0 : i1, l = lens[b];
        const int64_t ts = t < l ? l - 1 - t : t;
        const int64_t s0 = batch_axis ? ts : i0, s1 = batch_axis ? i1 : ts;
        y[e] = x[(s0 * d1 + s1) * inner + k];
    }
}

template <typename E>
cudaError_t reverse_seq(cudaStream_t s, int64_t d0, int64_t d1, int64_t inner, int batch_axis,
                        const int64_t *lens, const void *x, void *y)
{
    const int64_t n = d0 * d1 * inner;
    if (n <= 0)
        return cudaSuccess;
    reverse_seq_kernel<E><<<ew_blocks(n, EW_THREADS), EW_THREADS, 0, s>>>(
        d0, d1, inner, batch_axis, lens, (const E *)x, (E *)y);
    return cudaGetLastError();
}

/* ---- LRN and MeanVarianceNormalization -------------------------------------------- */

template <typename T>
__device__ T lrn_t(const cuda_lrn_args &a, int64_t st, const T *x, int64_t j)
{
    const int64_t lo = (a.size - 1) / 2, hi = a.size - 1 - lo;
    const int64_t b = j - lo < 0 ? 0 : j - lo, e = j + hi >= a.ch ? a.ch - 1 : j + hi;
    T s = 0;
    for (int64_t k = b; k <= e; k++)
        s += x[k * st] * x[k * st];
    return (T)a.bias + (T)a.alpha / (T)a.size * s;
}

template <typename T> __global__ void __launch_bounds__(EW_THREADS) lrn_kernel(cuda_lrn_args a)
{
    const int64_t lines = a.n * a.inner, st = a.inner;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const T beta = (T)a.beta;
    for (int64_t l = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; l < lines; l += stride) {
        const int64_t base = (l / a.inner) * a.ch * a.inner + l % a.inner;
        const T *x = (const T *)a.x + base;
        T *y = (T *)a.y + base;
        if (!a.dy) {
            for (int64_t j = 0; j < a.ch; j++)
                y[j * st] = x[j * st] / m_pow(lrn_t<T>(a, st, x, j), beta);
            continue;
        }
        const T *dy = (const T *)a.dy + base;
        const int64_t lo = (a.size - 1) / 2, hi = a.size - 1 - lo;
        const T k2 = (T)2 * (T)a.alpha * beta / (T)a.size;
        for (int64_t i = 0; i < a.ch; i++) {
            const int64_t b = i - hi < 0 ? 0 : i - hi, e = i + lo >= a.ch ? a.ch - 1 : i + lo;
            T acc = 0;
            for (int64_t j = b; j <= e; j++)
                acc += dy[j * st] * x[j * st] * m_pow(lrn_t<T>(a, st, x, j), -beta - (T)1);
            y[i * st] = dy[i * st] * m_pow(lrn_t<T>(a, st, x, i), -beta) - k2 * x[i * st] * acc;
        }
    }
}

__device__ int64_t group_offset(const misc_groups &g, int64_t gi, int64_t r)
{
    int64_t off = 0;
    for (int k = g.n_kept - 1; k >= 0; k--) {
        off += (gi % g.kept_dims[k]) * g.kept_st[k];
        gi /= g.kept_dims[k];
    }
    for (int k = g.n_red - 1; k >= 0; k--) {
        off += (r % g.red_dims[k]) * g.red_st[k];
        r /= g.red_dims[k];
    }
    return off;
}

template <typename T>
__global__ void __launch_bounds__(EW_THREADS)
    mvn_kernel(misc_groups g, const T *dy, const T *x, T *y)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t gi = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; gi < g.groups;
         gi += stride) {
        double s1 = 0, s2 = 0;
        for (int64_t r = 0; r < g.count; r++) {
            double v = x[group_offset(g, gi, r)];
            s1 += v;
            s2 += v * v;
        }
        const double m = s1 / (double)g.count, var = s2 / (double)g.count - m * m;
        const double sd = sqrt(var > 0 ? var : 0), d = sd + 1e-9;
        if (!dy) {
            for (int64_t r = 0; r < g.count; r++) {
                int64_t o = group_offset(g, gi, r);
                y[o] = (T)((x[o] - m) / d);
            }
            continue;
        }
        double sdy = 0, sdyc = 0;
        for (int64_t r = 0; r < g.count; r++) {
            int64_t o = group_offset(g, gi, r);
            sdy += dy[o];
            sdyc += dy[o] * (x[o] - m);
        }
        const double mdy = sdy / (double)g.count, mdyc = sdyc / (double)g.count;
        const double k2 = sd > 0 ? mdyc / (sd * d * d) : 0;
        for (int64_t r = 0; r < g.count; r++) {
            int64_t o = group_offset(g, gi, r);
            y[o] = (T)((dy[o] - mdy) / d - (x[o] - m) * k2);
        }
    }
}

/* ---- Det ----------------------------------------------------------------------- */

template <typename T> __device__ inline void det_cof(const T *x, int64_t n, T *c, double *w);
template <> __device__ inline void det_cof<float>(const float *x, int64_t n, float *c, double *w)
{
    det_cofactors_float(x, n, c, w);
}
template <> __device__ inline void det_cof<double>(const double *x, int64_t n, double *c, double *w)
{
    det_cofactors_double(x, n, c, w);
}

template <typename T>
__global__ void __launch_bounds__(EW_THREADS)
    det_kernel(int64_t batch, int64_t m, const T *dy, const T *x, T *y, double *work)
{
    const int64_t mm = m * m, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b < batch; b += stride) {
        double *w = work + b * (2 * mm + 1);
        const T *xs = x + b * mm;
        if (dy) {
            T *dx = y + b * mm;
            det_cof<T>(xs, m, dx, w);
            for (int64_t i = 0; i < mm; i++)
                dx[i] *= dy[b];
        } else {
            for (int64_t i = 0; i < mm; i++)
                w[i] = (double)xs[i];
            y[b] = (T)det_lu(w, m);
        }
    }
}

/* ---- AffineGrid ------------------------------------------------------------------- */

__device__ void affine_base_point(const misc_affine &a, int64_t p, double *b)
{
    for (int i = a.r - 1; i >= 0; i--) {
        int64_t idx = p % a.dims[i];
        p /= a.dims[i];
        b[a.r - 1 - i] = a.start[i] + (double)idx * a.step[i];
    }
    b[a.r] = 1;
}

template <typename T>
__global__ void __launch_bounds__(EW_THREADS) affine_kernel(misc_affine a, const T *theta, T *grid)
{
    const int r = a.r;
    const int64_t total = a.n * a.points, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
        const int64_t n = e / a.points, p = e % a.points;
        double b[4];
        affine_base_point(a, p, b);
        for (int j = 0; j < r; j++) {
            double s = 0;
            for (int k = 0; k <= r; k++)
                s += (double)theta[(n * r + j) * (r + 1) + k] * b[k];
            grid[e * r + j] = (T)s;
        }
    }
}

template <typename T>
__global__ void __launch_bounds__(EW_THREADS)
    affine_grad_kernel(misc_affine a, const T *dgrid, T *dtheta)
{
    const int r = a.r;
    const int64_t total = a.n * r * (r + 1), stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
        const int k = (int)(e % (r + 1)), j = (int)((e / (r + 1)) % r);
        const int64_t n = e / (r * (r + 1));
        double s = 0, b[4];
        for (int64_t p = 0; p < a.points; p++) {
            affine_base_point(a, p, b);
            s += (double)dgrid[(n * a.points + p) * r + j] * b[k];
        }
        dtheta[e] = (T)s;
    }
}

/* ---- GridSample -------------------------------------------------------------------- */

template <typename T> __device__ inline void gs_point_t(const gs_geom *g, const T *gv, gs_point *pt);
template <> __device__ inline void gs_point_t<float>(const gs_geom *g, const float *gv, gs_point *pt)
{
    gs_point_float(g, gv, pt);
}
template <> __device__ inline void gs_point_t<double>(const gs_geom *g, const double *gv, gs_point *pt)
{
    gs_point_double(g, gv, pt);
}
__device__ inline float gs_sample_t(const gs_geom *g, const gs_point *pt, const float *x)
{
    return gs_sample_float(g, pt, x);
}
__device__ inline double gs_sample_t(const gs_geom *g, const gs_point *pt, const double *x)
{
    return gs_sample_double(g, pt, x);
}
__device__ inline void gs_dgrid_t(const gs_geom *g, const gs_point *pt, const float *x, double *dg)
{
    gs_dgrid_float(g, pt, x, dg);
}
__device__ inline void gs_dgrid_t(const gs_geom *g, const gs_point *pt, const double *x, double *dg)
{
    gs_dgrid_double(g, pt, x, dg);
}

template <typename T>
__global__ void __launch_bounds__(EW_THREADS) gs_forward_kernel(gs_geom g, const T *x, const T *grid, T *y)
{
    const int64_t total = g.n * g.c * g.points, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
        const int64_t p = e % g.points, pl = e / g.points, n = pl / g.c;
        gs_point pt;
        gs_point_t<T>(&g, grid + (n * g.points + p) * g.r, &pt);
        y[e] = gs_sample_t(&g, &pt, x + pl * g.in_points);
    }
}

template <typename T>
__global__ void __launch_bounds__(EW_THREADS)
    gs_dx_kernel(gs_geom g, const T *dy, const T *grid, T *dx)
{
    const int64_t planes = g.n * g.c, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t pl = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; pl < planes; pl += stride) {
        T *d = dx + pl * g.in_points;
        const int64_t n = pl / g.c;
        int k[GS_MAX_R];
        gs_point pt;
        for (int64_t i = 0; i < g.in_points; i++)
            d[i] = 0;
        for (int64_t p = 0; p < g.points; p++) {
            gs_point_t<T>(&g, grid + (n * g.points + p) * g.r, &pt);
            const double v = (double)dy[pl * g.points + p];
            for (int tap = 0, nt = gs_tap_count(&g, &pt); tap < nt; tap++) {
                int64_t off = gs_tap(&g, &pt, tap, k);
                double w = v;
                for (int e = 0; e < g.r; e++)
                    w *= pt.w[e][k[e]];
                if (off >= 0)
                    d[off] = (T)((double)d[off] + w);
            }
        }
    }
}

template <typename T>
__global__ void __launch_bounds__(EW_THREADS)
    gs_dgrid_kernel(gs_geom g, const T *dy, const T *x, const T *grid, T *dgrid)
{
    const int64_t total = g.n * g.points, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
        const int64_t n = e / g.points, p = e % g.points;
        double tot[GS_MAX_R] = { 0 }, dg[GS_MAX_R];
        gs_point pt;
        gs_point_t<T>(&g, grid + e * g.r, &pt);
        for (int64_t ch = 0; ch < g.c; ch++) {
            gs_dgrid_t(&g, &pt, x + (n * g.c + ch) * g.in_points, dg);
            const double v = (double)dy[(n * g.c + ch) * g.points + p];
            for (int d = 0; d < g.r; d++)
                tot[d] += v * dg[d];
        }
        for (int d = 0; d < g.r; d++)
            dgrid[e * g.r + g.r - 1 - d] = (T)tot[d];
    }
}

} // namespace

extern "C" cudaError_t cuda_grid_sample_launch(cudaStream_t stream, int dtype,
                                               const struct gs_geom *g, const void *dy,
                                               const void *x, const void *grid, void *y, void *dx,
                                               void *dgrid)
{
    return dtype_visit<DS_FLOATS>(dtype, [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        if (!dy) {
            const int64_t total = g->n * g->c * g->points;
            if (total > 0)
                gs_forward_kernel<T><<<ew_blocks(total, EW_THREADS), EW_THREADS, 0, stream>>>(
                    *g, (const T *)x, (const T *)grid, (T *)y);
            return cudaGetLastError();
        }
        if (dx && g->n * g->c > 0)
            gs_dx_kernel<T><<<ew_blocks(g->n * g->c, 64), 64, 0, stream>>>(
                *g, (const T *)dy, (const T *)grid, (T *)dx);
        if (dgrid && g->n * g->points > 0)
            gs_dgrid_kernel<T><<<ew_blocks(g->n * g->points, EW_THREADS), EW_THREADS, 0, stream>>>(
                *g, (const T *)dy, (const T *)x, (const T *)grid, (T *)dgrid);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_affine_grid_launch(cudaStream_t stream, int dtype,
                                               const struct misc_affine *g, const void *theta,
                                               const void *dgrid, void *out)
{
    return dtype_visit<DS_FLOATS>(dtype, [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        const int64_t total = dgrid ? g->n * g->r * (g->r + 1) : g->n * g->points;
        if (total <= 0)
            return cudaSuccess;
        if (dgrid)
            affine_grad_kernel<T><<<ew_blocks(total, EW_THREADS), EW_THREADS, 0, stream>>>(
                *g, (const T *)dgrid, (T *)out);
        else
            affine_kernel<T><<<ew_blocks(total, EW_THREADS), EW_THREADS, 0, stream>>>(
                *g, (const T *)theta, (T *)out);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_det_launch(cudaStream_t stream, int dtype, int64_t batch, int64_t m,
                                       const void *dy, const void *x, void *y, double *work)
{
    return dtype_visit<DS_FLOATS>(dtype, [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        if (batch <= 0)
            return cudaSuccess;
        det_kernel<T><<<ew_blocks(batch, 64), 64, 0, stream>>>(batch, m, (const T *)dy,
                                                               (const T *)x, (T *)y, work);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_lrn_launch(cudaStream_t stream, const struct cuda_lrn_args *a)
{
    return dtype_visit<DS_FLOATS>(a->dtype, [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        const int64_t lines = a->n * a->inner;
        if (lines <= 0 || a->ch <= 0)
            return cudaSuccess;
        lrn_kernel<T><<<ew_blocks(lines, EW_THREADS), EW_THREADS, 0, stream>>>(*a);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_mvn_launch(cudaStream_t stream, int dtype,
                                       const struct misc_groups *groups, const void *dy,
                                       const void *x, void *y)
{
    return dtype_visit<DS_FLOATS>(dtype, [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        if (groups->groups <= 0 || groups->count <= 0)
            return cudaSuccess;
        mvn_kernel<T><<<ew_blocks(groups->groups, EW_THREADS), EW_THREADS, 0, stream>>>(
            *groups, (const T *)dy, (const T *)x, (T *)y);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_reverse_seq_launch(cudaStream_t stream, size_t esize, int64_t d0,
                                               int64_t d1, int64_t inner, int batch_axis,
                                               const int64_t *lens, const void *x, void *y)
{
    switch (esize) {
    case 1: return reverse_seq<uint8_t>(stream, d0, d1, inner, batch_axis, lens, x, y);
    case 2: return reverse_seq<uint16_t>(stream, d0, d1, inner, batch_axis, lens, x, y);
    case 4: return reverse_seq<uint32_t>(stream, d0, d1, inner, batch_axis, lens, x, y);
    case 8: return reverse_seq<uint64_t>(stream, d0, d1, inner, batch_axis, lens, x, y);
    default: return cudaErrorNotSupported;
    }
}

extern "C" cudaError_t cuda_along_launch(cudaStream_t stream, const struct cuda_along_args *a)
{
    auto go = [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        const int64_t lines = a->outer * a->inner;
        if (lines <= 0 || a->n <= 0)
            return cudaSuccess;
        along_kernel<T><<<ew_blocks(lines, EW_THREADS), EW_THREADS, 0, stream>>>(*a);
        return cudaGetLastError();
    };
    if (a->kind == ALONG_CUMPROD)
        return dtype_visit<DS_FLOATS | DS_(ONNX_DTYPE_INT32) | DS_(ONNX_DTYPE_INT64) |
                           DS_(ONNX_DTYPE_UINT32) | DS_(ONNX_DTYPE_UINT64)>(a->dtype, go);
    return dtype_visit<DS_FLOATS>(a->dtype, go);
}

extern "C" cudaError_t cuda_misc_fill_strided_launch(cudaStream_t stream, size_t esize, void *out,
                                                     int64_t start, int64_t step, int64_t count,
                                                     uint64_t bits)
{
    if (count <= 0)
        return cudaSuccess;
    switch (esize) {
    case 1: return fill_strided<uint8_t>(stream, out, start, step, count, bits);
    case 2: return fill_strided<uint16_t>(stream, out, start, step, count, bits);
    case 4: return fill_strided<uint32_t>(stream, out, start, step, count, bits);
    case 8: return fill_strided<uint64_t>(stream, out, start, step, count, bits);
    default: return cudaErrorNotSupported;
    }
}

extern "C" cudaError_t cuda_misc_div_launch(cudaStream_t stream, int dtype, int64_t n, void *x,
                                            double divisor)
{
    return dtype_visit<DS_FLOATS>(dtype, [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        if (n <= 0)
            return cudaSuccess;
        div_kernel<T><<<ew_blocks(n, EW_THREADS), EW_THREADS, 0, stream>>>(n, (T *)x, (T)divisor);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_bitwise_launch(cudaStream_t stream, int op, int dtype,
                                           const struct cuda_misc_bcast *g, const void *a,
                                           const void *b, void *out)
{
    return dtype_visit<DS_SINTS | DS_UINTS>(dtype, [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        if (g->numel <= 0)
            return cudaSuccess;
        bitwise_kernel<T><<<ew_blocks(g->numel, EW_THREADS), EW_THREADS, 0, stream>>>(
            op, *g, (const T *)a, (const T *)b, (T *)out);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_umath_launch(cudaStream_t stream, int fn, int dtype, int64_t n,
                                         const void *x, void *out,
                                         const struct cuda_umath_consts *k)
{
    if (fn < 0 || fn >= UMATH_COUNT)
        return cudaErrorNotSupported;
    auto go = [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        if (n <= 0)
            return cudaSuccess;
        umath_kernel<T><<<ew_blocks(n, EW_THREADS), EW_THREADS, 0, stream>>>(
            fn, n, (const T *)x, (T *)out, *k);
        return cudaGetLastError();
    };
    if (fn == UMATH_SHRINK)
        return dtype_visit<DS_NUMERIC>(dtype, go);
    return dtype_visit<DS_FLOATS>(dtype, go);
}

extern "C" cudaError_t cuda_umath_grad_launch(cudaStream_t stream, int fn, int dtype, int64_t n,
                                              const void *dy, const void *x, void *dx,
                                              const struct cuda_umath_consts *k)
{
    if (fn < 0 || fn >= UMATH_COUNT)
        return cudaErrorNotSupported;
    return dtype_visit<DS_FLOATS>(dtype, [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        if (n <= 0)
            return cudaSuccess;
        umath_grad_kernel<T><<<ew_blocks(n, EW_THREADS), EW_THREADS, 0, stream>>>(
            fn, n, (const T *)dy, (const T *)x, (T *)dx, *k);
        return cudaGetLastError();
    });
}
