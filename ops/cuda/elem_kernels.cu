/* ops/cuda/elem_kernels.cu — the binary functors of the broadcasting kernel
 * (arithmetic, comparisons, Pow, Where, DivGrad, PowGrad), the dispatch of
 * cuda_ew_launch over every op, and MaxMinGrad. Each functor is the
 * expression of the CPU kernel in ops/binary.c or ops/compare.c. */
#include "ops/cuda/elem-device.cuh"

namespace {

/* Functors take the call's constants; most ignore them. */
#define EW_NO_CONSTS(name) \
    __host__ explicit name(const struct cuda_ew_consts &) {}

template <typename T> struct add_f {
    EW_NO_CONSTS(add_f)
    __device__ T operator()(T x, T y) const
    {
        typedef typename wrap_of<T>::W W;
        return (T)((W)x + (W)y);
    }
};

template <typename T> struct sub_f {
    EW_NO_CONSTS(sub_f)
    __device__ T operator()(T x, T y) const
    {
        typedef typename wrap_of<T>::W W;
        return (T)((W)x - (W)y);
    }
};

template <typename T> struct mul_f {
    EW_NO_CONSTS(mul_f)
    __device__ T operator()(T x, T y) const
    {
        typedef typename wrap_of<T>::W W;
        return (T)((W)x * (W)y);
    }
};

/* Integer division truncates, x / 0 is 0, and signed x / -1 is a wrapping
 * negation (INT_MIN / -1 would trap). */
template <typename T> struct div_f {
    EW_NO_CONSTS(div_f)
    __device__ T operator()(T x, T y) const
    {
        typedef typename wrap_of<T>::W W;
        if constexpr (std::is_floating_point<T>::value)
            return x / y;
        else if constexpr (std::is_signed<T>::value)
            return y == 0 ? (T)0 : y == (T)-1 ? (T)((W)0 - (W)x) : (T)(x / y);
        else
            return y == 0 ? (T)0 : (T)(x / y);
    }
};

template <typename T> struct max_f {
    EW_NO_CONSTS(max_f)
    __device__ T operator()(T x, T y) const { return (x >= y || x != x) ? x : y; }
};

template <typename T> struct min_f {
    EW_NO_CONSTS(min_f)
    __device__ T operator()(T x, T y) const { return (x <= y || x != x) ? x : y; }
};

#define CMP_FUNCTOR(name, EXPR)                                                        \
    template <typename T> struct name {                                                \
        EW_NO_CONSTS(name)                                                             \
        __device__ uint8_t operator()(T x, T y) const { return (uint8_t)(EXPR); }      \
    };
CMP_FUNCTOR(eq_f, x == y)
CMP_FUNCTOR(lt_f, x < y)
CMP_FUNCTOR(gt_f, x > y)
CMP_FUNCTOR(le_f, x <= y)
CMP_FUNCTOR(ge_f, x >= y)

/* Integer power by squaring, wrapping; a negative exponent gives the
 * integer part of the true result. */
__device__ inline int64_t pow_int(int64_t base, int64_t e)
{
    if (e < 0)
        return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)base;
    while (e) {
        if (e & 1)
            r *= b;
        b *= b;
        e >>= 1;
    }
    return (int64_t)r;
}

/* The result has the base's type; mixed types go through double. */
template <typename TB, typename TE> struct pow_f {
    EW_NO_CONSTS(pow_f)
    __device__ TB operator()(TB x, TE y) const
    {
        if constexpr (std::is_same<TB, float>::value && std::is_same<TE, float>::value)
            return powf(x, y);
        else if constexpr (std::is_floating_point<TB>::value)
            return (TB)pow((double)x, (double)y);
        else if constexpr (std::is_floating_point<TE>::value)
            return ew_sat<TB>(pow((double)x, (double)y));
        else
            return (TB)pow_int((int64_t)x, (int64_t)y);
    }
};

/* Selection copies bits: T is an unsigned type of the element's size. */
template <typename T> struct where_f {
    EW_NO_CONSTS(where_f)
    __device__ T operator()(uint8_t c, T x, T y) const { return c ? x : y; }
};

/* d(A / B)/dB = -A / B^2 */
template <typename T> struct div_grad_f {
    EW_NO_CONSTS(div_grad_f)
    __device__ T operator()(T d, T a, T b) const { return -d * (a / b) / b; }
};

/* B A^(B-1), 0 where B == 0 */
template <typename T> struct pow_grad_a_f {
    EW_NO_CONSTS(pow_grad_a_f)
    __device__ T operator()(T d, T a, T b) const
    {
        return b == 0 ? (T)0 : d * b * pow(a, b - (T)1);
    }
};

/* A^B log A, 0 where A == 0 and B >= 0 */
template <typename T> struct pow_grad_b_f {
    EW_NO_CONSTS(pow_grad_b_f)
    __device__ T operator()(T d, T a, T b) const
    {
        return a == 0 && b >= 0 ? (T)0 : d * pow(a, b) * log(a);
    }
};

/* Same dtype for both inputs and the output (bool output when CMP). */
template <template <typename> class F, unsigned SET, bool CMP>
cudaError_t run_binary(cudaStream_t s, int dtype, const struct cuda_ew_geom *g, void *out,
                       const void *const *in, const struct cuda_ew_consts *k)
{
    return dtype_visit<SET>(dtype, [&](auto tag) {
        typedef typename dt<decltype(tag)::value>::T T;
        typedef typename std::conditional<CMP, uint8_t, T>::type TO;
        return ew_run<2, TO, T, T, T, F<T>>(s, g, out, in, k);
    });
}

template <template <typename> class F>
cudaError_t run_ternary_float(cudaStream_t s, int dtype, const struct cuda_ew_geom *g,
                              void *out, const void *const *in, const struct cuda_ew_consts *k)
{
    return dtype_visit<DS_FLOATS>(dtype, [&](auto tag) {
        typedef typename dt<decltype(tag)::value>::T T;
        return ew_run<3, T, T, T, T, F<T>>(s, g, out, in, k);
    });
}

#define DS_POW_BASES (DS_FLOATS | DS_(ONNX_DTYPE_INT32) | DS_(ONNX_DTYPE_INT64))

cudaError_t run_pow(cudaStream_t s, int base, int expo, const struct cuda_ew_geom *g, void *out,
                    const void *const *in, const struct cuda_ew_consts *k)
{
    return dtype_visit<DS_POW_BASES>(base, [&](auto btag) {
        typedef typename dt<decltype(btag)::value>::T TB;
        return dtype_visit<DS_NUMERIC>(expo, [&](auto etag) {
            typedef typename dt<decltype(etag)::value>::T TE;
            return ew_run<2, TB, TB, TE, TE, pow_f<TB, TE>>(s, g, out, in, k);
        });
    });
}

template <typename T>
cudaError_t run_where_bits(cudaStream_t s, const struct cuda_ew_geom *g, void *out,
                           const void *const *in, const struct cuda_ew_consts *k)
{
    return ew_run<3, T, uint8_t, T, T, where_f<T>>(s, g, out, in, k);
}

cudaError_t run_where(cudaStream_t s, int dtype, const struct cuda_ew_geom *g, void *out,
                      const void *const *in, const struct cuda_ew_consts *k)
{
    switch (ew_dtype_bytes(dtype)) {
    case 1: return run_where_bits<uint8_t>(s, g, out, in, k);
    case 2: return run_where_bits<uint16_t>(s, g, out, in, k);
    case 4: return run_where_bits<uint32_t>(s, g, out, in, k);
    case 8: return run_where_bits<uint64_t>(s, g, out, in, k);
    default: return cudaErrorNotSupported;
    }
}

/* ---- MaxMinGrad ------------------------------------------------------------ */

template <typename T>
__global__ void __launch_bounds__(EW_THREADS)
    maxmin_grad_kernel(struct cuda_maxmin_args a, const T *dy, const T *y)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.numel; i += stride) {
        int64_t idx[CUDA_EW_MAX_RANK], rem = i;
        for (int d = a.rank - 1; d >= 0; d--) {
            idx[d] = rem % a.dims[d];
            rem /= a.dims[d];
        }
        const T yi = y[i];
        int first = -1;
        for (int k = 0; k < a.n && first < 0; k++) {
            int64_t off = 0;
            for (int d = 0; d < a.rank; d++)
                off += idx[d] * a.x_strides[k][d];
            const T v = ((const T *)a.x[k])[off];
            if (v == yi || (v != v && yi != yi))
                first = k;
        }
        const T d = dy[i];
        for (int k = 0; k < a.n; k++)
            ((T *)a.out[k])[i] = k == first ? d : (T)0;
    }
}

} // namespace

static cudaError_t ew_binary_launch(cudaStream_t s, int op, int da, int db,
                                    const struct cuda_ew_geom *g, void *out,
                                    const void *const *in, const struct cuda_ew_consts *k)
{
    switch (op) {
    case CUDA_EW_ADD: return run_binary<add_f, DS_NUMERIC, false>(s, da, g, out, in, k);
    case CUDA_EW_SUB: return run_binary<sub_f, DS_NUMERIC, false>(s, da, g, out, in, k);
    case CUDA_EW_MUL: return run_binary<mul_f, DS_NUMERIC, false>(s, da, g, out, in, k);
    case CUDA_EW_DIV: return run_binary<div_f, DS_NUMERIC, false>(s, da, g, out, in, k);
    case CUDA_EW_MAX: return run_binary<max_f, DS_NUMERIC, false>(s, da, g, out, in, k);
    case CUDA_EW_MIN: return run_binary<min_f, DS_NUMERIC, false>(s, da, g, out, in, k);
    case CUDA_EW_EQ: return run_binary<eq_f, DS_NUMERIC | DS_BOOL, true>(s, da, g, out, in, k);
    case CUDA_EW_LT: return run_binary<lt_f, DS_NUMERIC, true>(s, da, g, out, in, k);
    case CUDA_EW_GT: return run_binary<gt_f, DS_NUMERIC, true>(s, da, g, out, in, k);
    case CUDA_EW_LE: return run_binary<le_f, DS_NUMERIC, true>(s, da, g, out, in, k);
    case CUDA_EW_GE: return run_binary<ge_f, DS_NUMERIC, true>(s, da, g, out, in, k);
    case CUDA_EW_POW: return run_pow(s, da, db, g, out, in, k);
    case CUDA_EW_DIV_GRAD: return run_ternary_float<div_grad_f>(s, da, g, out, in, k);
    case CUDA_EW_POW_GRAD_A: return run_ternary_float<pow_grad_a_f>(s, da, g, out, in, k);
    case CUDA_EW_POW_GRAD_B: return run_ternary_float<pow_grad_b_f>(s, da, g, out, in, k);
    case CUDA_EW_WHERE: return run_where(s, da, g, out, in, k);
    default: return cudaErrorNotSupported;
    }
}

extern "C" cudaError_t cuda_ew_launch(cudaStream_t stream, int op, int dtype_a, int dtype_b,
                                      const struct cuda_ew_geom *g, void *out,
                                      const void *const *in, const struct cuda_ew_consts *k)
{
    struct cuda_ew_consts none;
    memset(&none, 0, sizeof none);
    if (!k)
        k = &none;
    if (op == CUDA_EW_CAST)
        return ew_cast_launch(stream, dtype_a, dtype_b, g, out, in, k);
    if (op > CUDA_EW_CAST && op < CUDA_EW_OP_COUNT)
        return ew_activation_launch(stream, op, dtype_a, g, out, in, k);
    if (op >= CUDA_EW_SQRT && op <= CUDA_EW_CLIP_GRAD)
        return ew_unary_launch(stream, op, dtype_a, g, out, in, k);
    return ew_binary_launch(stream, op, dtype_a, dtype_b, g, out, in, k);
}

extern "C" cudaError_t cuda_maxmin_grad_launch(cudaStream_t stream, int dtype, const void *dy,
                                               const void *y, const struct cuda_maxmin_args *a)
{
    return dtype_visit<DS_FLOATS>(dtype, [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        if (a->numel <= 0)
            return cudaSuccess;
        maxmin_grad_kernel<T><<<ew_blocks(a->numel, EW_THREADS), EW_THREADS, 0, stream>>>(
            *a, (const T *)dy, (const T *)y);
        return cudaGetLastError();
    });
}
