/* ops/cuda/elem-device.cuh — device code shared by the elementwise family's
 * .cu files (ops/cuda/elem_*.cu); not for host C code.
 *
 *  - dtype traits: the element type of each enum onnx_dtype value, the type
 *    integer +, -, * wrap in (as ops/elementwise-impl.h: numpy semantics
 *    without signed overflow), and a visitor that turns a runtime dtype into
 *    a compile-time one for the dtypes an operation admits;
 *  - the conversions of ops/elementwise-impl.h (float16 and bfloat16 with
 *    round-to-nearest-even, saturating float-to-integer), written out again
 *    for the device so that Cast gives the CPU's bits;
 *  - the one broadcasting kernel: a grid-stride loop over the output's
 *    elements that finds each input's element through the collapsed
 *    geometry of ew_plan_init and applies a functor. 32-bit index arithmetic
 *    whenever the tensor allows it (64-bit division is slow on the GPU). */
#ifndef DTRX_OPS_CUDA_ELEM_DEVICE_CUH
#define DTRX_OPS_CUDA_ELEM_DEVICE_CUH

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include <cuda_runtime.h>

#include "onnx/onnx.h"
#include "ops/cuda/elem-kernels.h"

/* ---- dtype traits --------------------------------------------------------- */

template <int D> struct dt;
#define DT_DEF(D, TYPE, WRAP)                                                          \
    template <> struct dt<D> {                                                         \
        typedef TYPE T;                                                                \
        typedef WRAP W;                                                                \
    };
DT_DEF(ONNX_DTYPE_FLOAT, float, float)
DT_DEF(ONNX_DTYPE_DOUBLE, double, double)
DT_DEF(ONNX_DTYPE_INT8, int8_t, uint32_t)
DT_DEF(ONNX_DTYPE_INT16, int16_t, uint32_t)
DT_DEF(ONNX_DTYPE_INT32, int32_t, uint32_t)
DT_DEF(ONNX_DTYPE_INT64, int64_t, uint64_t)
DT_DEF(ONNX_DTYPE_UINT8, uint8_t, uint32_t)
DT_DEF(ONNX_DTYPE_UINT16, uint16_t, uint32_t)
DT_DEF(ONNX_DTYPE_UINT32, uint32_t, uint32_t)
DT_DEF(ONNX_DTYPE_UINT64, uint64_t, uint64_t)
DT_DEF(ONNX_DTYPE_BOOL, uint8_t, uint32_t)
DT_DEF(ONNX_DTYPE_FLOAT16, uint16_t, float)
DT_DEF(ONNX_DTYPE_BFLOAT16, uint16_t, float)
#undef DT_DEF

/* Wrapping type of an element type (bool shares uint8's). */
template <typename T> struct wrap_of { typedef T W; };
template <> struct wrap_of<int8_t> { typedef uint32_t W; };
template <> struct wrap_of<int16_t> { typedef uint32_t W; };
template <> struct wrap_of<int32_t> { typedef uint32_t W; };
template <> struct wrap_of<int64_t> { typedef uint64_t W; };
template <> struct wrap_of<uint8_t> { typedef uint32_t W; };
template <> struct wrap_of<uint16_t> { typedef uint32_t W; };
template <> struct wrap_of<uint32_t> { typedef uint32_t W; };
template <> struct wrap_of<uint64_t> { typedef uint64_t W; };

/* Sets of dtypes: bit d for enum onnx_dtype value d. */
#define DS_(d) (1u << (d))
#define DS_FLOATS (DS_(ONNX_DTYPE_FLOAT) | DS_(ONNX_DTYPE_DOUBLE))
#define DS_SINTS (DS_(ONNX_DTYPE_INT8) | DS_(ONNX_DTYPE_INT16) | DS_(ONNX_DTYPE_INT32) | \
                  DS_(ONNX_DTYPE_INT64))
#define DS_UINTS (DS_(ONNX_DTYPE_UINT8) | DS_(ONNX_DTYPE_UINT16) | DS_(ONNX_DTYPE_UINT32) | \
                  DS_(ONNX_DTYPE_UINT64))
#define DS_SIGNED (DS_FLOATS | DS_SINTS)
#define DS_NUMERIC (DS_SIGNED | DS_UINTS)
#define DS_BOOL DS_(ONNX_DTYPE_BOOL)
#define DS_CAST (DS_NUMERIC | DS_BOOL | DS_(ONNX_DTYPE_FLOAT16) | DS_(ONNX_DTYPE_BFLOAT16))

template <int D> using dtag = std::integral_constant<int, D>;

/* fn(dtag<d>{}) for the runtime dtype d when SET admits it, else
 * cudaErrorNotSupported. Only the admitted dtypes are instantiated. */
template <unsigned SET, typename Fn> static cudaError_t dtype_visit(int dtype, Fn &&fn)
{
#define DV_CASE(D)                                                                     \
    case D:                                                                            \
        if constexpr ((SET >> D) & 1u)                                                 \
            return fn(dtag<D>{});                                                      \
        break;
    switch (dtype) {
        DV_CASE(ONNX_DTYPE_FLOAT)
        DV_CASE(ONNX_DTYPE_UINT8)
        DV_CASE(ONNX_DTYPE_INT8)
        DV_CASE(ONNX_DTYPE_UINT16)
        DV_CASE(ONNX_DTYPE_INT16)
        DV_CASE(ONNX_DTYPE_INT32)
        DV_CASE(ONNX_DTYPE_INT64)
        DV_CASE(ONNX_DTYPE_BOOL)
        DV_CASE(ONNX_DTYPE_FLOAT16)
        DV_CASE(ONNX_DTYPE_DOUBLE)
        DV_CASE(ONNX_DTYPE_UINT32)
        DV_CASE(ONNX_DTYPE_UINT64)
        DV_CASE(ONNX_DTYPE_BFLOAT16)
    default:
        break;
    }
#undef DV_CASE
    return cudaErrorNotSupported;
}

/* Bytes of one element (onnx_dtype_size, which has C linkage and is not
 * declared for C++). */
static inline size_t ew_dtype_bytes(int dtype)
{
    switch (dtype) {
    case ONNX_DTYPE_BOOL: case ONNX_DTYPE_INT8: case ONNX_DTYPE_UINT8:
        return 1;
    case ONNX_DTYPE_INT16: case ONNX_DTYPE_UINT16: case ONNX_DTYPE_FLOAT16:
    case ONNX_DTYPE_BFLOAT16:
        return 2;
    case ONNX_DTYPE_FLOAT: case ONNX_DTYPE_INT32: case ONNX_DTYPE_UINT32:
        return 4;
    case ONNX_DTYPE_DOUBLE: case ONNX_DTYPE_INT64: case ONNX_DTYPE_UINT64:
    case ONNX_DTYPE_COMPLEX64:
        return 8;
    case ONNX_DTYPE_COMPLEX128:
        return 16;
    default:
        return 0;
    }
}

/* Lowest and highest element (identities of Max and Min). */
template <typename T> struct ew_limits;
#define EW_LIMITS_DEF(T, LO, HI)                                                       \
    template <> struct ew_limits<T> {                                                  \
        __device__ __host__ static inline T lowest() { return LO; }                    \
        __device__ __host__ static inline T highest() { return HI; }                   \
    };
EW_LIMITS_DEF(float, -INFINITY, INFINITY)
EW_LIMITS_DEF(double, -(double)INFINITY, (double)INFINITY)
EW_LIMITS_DEF(int8_t, INT8_MIN, INT8_MAX)
EW_LIMITS_DEF(int16_t, INT16_MIN, INT16_MAX)
EW_LIMITS_DEF(int32_t, INT32_MIN, INT32_MAX)
EW_LIMITS_DEF(int64_t, INT64_MIN, INT64_MAX)
EW_LIMITS_DEF(uint8_t, 0, UINT8_MAX)
EW_LIMITS_DEF(uint16_t, 0, UINT16_MAX)
EW_LIMITS_DEF(uint32_t, 0, UINT32_MAX)
EW_LIMITS_DEF(uint64_t, 0, UINT64_MAX)
#undef EW_LIMITS_DEF

template <typename T> __device__ __host__ inline T ew_lowest() { return ew_limits<T>::lowest(); }
template <typename T> __device__ __host__ inline T ew_highest() { return ew_limits<T>::highest(); }

/* NaN wins in Max and Min (x != x only for NaN), like numpy. */
template <typename T> __device__ inline T ew_max(T acc, T x)
{
    return (x > acc || x != x) ? x : acc;
}

template <typename T> __device__ inline T ew_min(T acc, T x)
{
    return (x < acc || x != x) ? x : acc;
}

/* ---- conversions (ops/elementwise-impl.h, for the device) --------------------- */

__device__ inline float ew_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return __uint_as_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return __uint_as_float(sign | ((e + 112u) << 23) | (m << 13));
}

__device__ inline uint64_t ew_round_shift(uint64_t m, int shift)
{
    uint64_t q = m >> shift, rem = m & ((1ull << shift) - 1);
    uint64_t half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    return q;
}

__device__ inline uint16_t ew_f32_to_f16(float f)
{
    uint32_t x = __float_as_uint(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return sign | 0x7e00u | (uint16_t)((ax >> 13) & 0x1ffu);
    if (ax >= 0x47800000u)
        return sign | 0x7c00u;
    if (ax >= 0x38800000u)
        return sign | (uint16_t)ew_round_shift(ax - 0x38000000u, 13);
    if (ax < 0x33000000u)
        return sign;
    uint32_t e = ax >> 23;
    uint64_t m = (ax & 0x7fffffu) | 0x800000u;
    return sign | (uint16_t)ew_round_shift(m, (int)(126 - e));
}

__device__ inline uint16_t ew_f64_to_f16(double d)
{
    uint64_t x = (uint64_t)__double_as_longlong(d);
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000u);
    uint64_t ax = x & 0x7fffffffffffffffull;
    if (ax > 0x7ff0000000000000ull)
        return sign | 0x7e00u | (uint16_t)((ax >> 42) & 0x1ffu);
    if (ax >= 0x40f0000000000000ull)
        return sign | 0x7c00u;
    if (ax >= 0x3f10000000000000ull)
        return sign | (uint16_t)ew_round_shift(ax - 0x3f00000000000000ull, 42);
    if (ax < 0x3e60000000000000ull)
        return sign;
    uint64_t e = ax >> 52;
    uint64_t m = (ax & 0xfffffffffffffull) | (1ull << 52);
    return sign | (uint16_t)ew_round_shift(m, (int)(1051 - e));
}

__device__ inline float ew_bf16_to_f32(uint16_t b) { return __uint_as_float((uint32_t)b << 16); }

__device__ inline uint16_t ew_f32_to_bf16(float f)
{
    uint32_t x = __float_as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* double -> integer T, saturating, NaN to 0 (C leaves these undefined). */
template <typename T> __device__ inline T ew_sat(double v)
{
    if (v != v)
        return 0;
    if constexpr (std::is_same<T, int64_t>::value) {
        if (v >= 9223372036854775808.0)
            return INT64_MAX;
        if (v <= -9223372036854775808.0)
            return INT64_MIN;
        return (int64_t)v;
    } else if constexpr (std::is_same<T, uint64_t>::value) {
        if (v <= 0)
            return 0;
        if (v >= 18446744073709551616.0)
            return UINT64_MAX;
        return (uint64_t)v;
    } else {
        if (v <= (double)ew_lowest<T>())
            return ew_lowest<T>();
        if (v >= (double)ew_highest<T>())
            return ew_highest<T>();
        return (T)v;
    }
}

/* Element of dtype D -> its compute value (float16/bfloat16 as float). */
template <int D> __device__ inline auto ew_load(typename dt<D>::T x)
{
    if constexpr (D == ONNX_DTYPE_FLOAT16)
        return ew_f16_to_f32(x);
    else if constexpr (D == ONNX_DTYPE_BFLOAT16)
        return ew_bf16_to_f32(x);
    else
        return x;
}

/* Compute value -> element of dtype D: integers saturate from floating
 * values and wrap from integers, bool is != 0, float16 and bfloat16 round
 * to nearest even (from float directly, from anything else through double,
 * as EW_ST_FLOAT16 / EW_ST_BFLOAT16 choose). */
template <int D, typename V> __device__ inline typename dt<D>::T ew_store(V v)
{
    typedef typename dt<D>::T T;
    if constexpr (D == ONNX_DTYPE_FLOAT || D == ONNX_DTYPE_DOUBLE)
        return (T)v;
    else if constexpr (D == ONNX_DTYPE_BOOL)
        return (T)(v != 0);
    else if constexpr (D == ONNX_DTYPE_FLOAT16)
        return std::is_same<V, float>::value ? ew_f32_to_f16((float)v) : ew_f64_to_f16((double)v);
    else if constexpr (D == ONNX_DTYPE_BFLOAT16)
        /* EW_ST_BFLOAT16: anything but float goes through double, then float */
        return ew_f32_to_bf16(std::is_same<V, float>::value ? (float)v : (float)(double)v);
    else if constexpr (std::is_floating_point<V>::value)
        return ew_sat<T>((double)v);
    else
        return (T)v;
}

/* ---- the broadcasting kernel ------------------------------------------------- */

#define EW_THREADS 256
#define EW_MAX_BLOCKS 32768

static inline unsigned ew_blocks(int64_t n, int threads)
{
    int64_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : b > EW_MAX_BLOCKS ? EW_MAX_BLOCKS : b);
}

template <typename I> struct ew_geom_t {
    int rank;
    I numel;
    I dims[CUDA_EW_MAX_RANK];
    I st[CUDA_EW_MAX_IN][CUDA_EW_MAX_RANK];
};

template <typename I> static ew_geom_t<I> ew_geom_convert(const struct cuda_ew_geom *g)
{
    ew_geom_t<I> r;
    memset(&r, 0, sizeof r);
    r.rank = g->rank;
    r.numel = (I)g->numel;
    for (int d = 0; d < CUDA_EW_MAX_RANK; d++) {
        r.dims[d] = (I)(d < g->rank ? g->dims[d] : 1);
        for (int k = 0; k < CUDA_EW_MAX_IN; k++)
            r.st[k][d] = (I)(d < g->rank ? g->strides[k][d] : 0);
    }
    return r;
}

/* Offsets of output element i in the first N inputs. The axis loop is
 * unrolled so that the geometry stays in the parameter bank. */
template <int N, typename I>
__device__ __forceinline__ void ew_offsets(const ew_geom_t<I> &g, I i, I (&off)[CUDA_EW_MAX_IN])
{
#pragma unroll
    for (int k = 0; k < N; k++)
        off[k] = 0;
    if (g.rank == 1) {
#pragma unroll
        for (int k = 0; k < N; k++)
            off[k] = i * g.st[k][0];
        return;
    }
    I rem = i;
#pragma unroll
    for (int d = CUDA_EW_MAX_RANK - 1; d >= 0; d--) {
        if (d < g.rank) {
            I q = d > 0 ? rem / g.dims[d] : 0;
            I idx = rem - q * g.dims[d];
            rem = q;
#pragma unroll
            for (int k = 0; k < N; k++)
                off[k] += idx * g.st[k][d];
        }
    }
}

/* out[i] = f(a[...]) / f(a[...], b[...]) / f(a[...], b[...], c[...]). The
 * output may alias input a at the same positions (folds of variadic ops):
 * each element is read before it is written, by the same thread. */
template <int N, typename I, typename TO, typename TA, typename TB, typename TC, typename F>
__global__ void __launch_bounds__(EW_THREADS)
    ew_kernel(ew_geom_t<I> g, TO *o, const TA *a, const TB *b, const TC *c, F f)
{
    const I stride = (I)gridDim.x * (I)blockDim.x;
    for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < g.numel; i += stride) {
        I off[CUDA_EW_MAX_IN];
        ew_offsets<N, I>(g, i, off);
        if constexpr (N == 1)
            o[i] = f(a[off[0]]);
        else if constexpr (N == 2)
            o[i] = f(a[off[0]], b[off[1]]);
        else
            o[i] = f(a[off[0]], b[off[1]], c[off[2]]);
    }
}

/* Launches ew_kernel with functor F (constructed from the call's constants)
 * over the geometry; g == NULL only confirms the instantiation exists. */
template <int N, typename TO, typename TA, typename TB, typename TC, typename F>
static cudaError_t ew_run(cudaStream_t s, const struct cuda_ew_geom *g, void *out,
                          const void *const *in, const struct cuda_ew_consts *k)
{
    if (!g)
        return cudaSuccess;
    if (g->numel <= 0)
        return cudaSuccess;
    F f(*k);
    const unsigned blocks = ew_blocks(g->numel, EW_THREADS);
    const TA *a = (const TA *)in[0];
    const TB *b = N > 1 ? (const TB *)in[1] : nullptr;
    const TC *c = N > 2 ? (const TC *)in[2] : nullptr;
    /* 32-bit indices when every offset fits: inputs are never larger than
     * the output they broadcast into. */
    if (g->numel <= INT32_MAX)
        ew_kernel<N, uint32_t, TO, TA, TB, TC, F><<<blocks, EW_THREADS, 0, s>>>(
            ew_geom_convert<uint32_t>(g), (TO *)out, a, b, c, f);
    else
        ew_kernel<N, int64_t, TO, TA, TB, TC, F><<<blocks, EW_THREADS, 0, s>>>(
            ew_geom_convert<int64_t>(g), (TO *)out, a, b, c, f);
    return cudaGetLastError();
}

/* The same for inputs of the output's own shape (unary ops, their
 * gradients, Cast): no index arithmetic at all. */
template <int N, typename TO, typename TA, typename TB, typename F>
__global__ void __launch_bounds__(EW_THREADS)
    ew_flat_kernel(int64_t n, TO *o, const TA *a, const TB *b, F f)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        if constexpr (N == 1)
            o[i] = f(a[i]);
        else
            o[i] = f(a[i], b[i]);
    }
}

/* Runs F over a geometry whose inputs are all contiguous in the output's
 * shape (cudaErrorInvalidValue otherwise: the caller chose the wrong path). */
template <int N, typename TO, typename TA, typename TB, typename F>
static cudaError_t ew_run_flat(cudaStream_t s, const struct cuda_ew_geom *g, void *out,
                               const void *const *in, const struct cuda_ew_consts *k)
{
    if (!g)
        return cudaSuccess;
    if (g->numel <= 0)
        return cudaSuccess;
    for (int j = 0; j < N; j++)
        if (g->numel > 1 && (g->rank != 1 || g->strides[j][0] != 1))
            return cudaErrorInvalidValue;
    F f(*k);
    ew_flat_kernel<N, TO, TA, TB, F><<<ew_blocks(g->numel, EW_THREADS), EW_THREADS, 0, s>>>(
        g->numel, (TO *)out, (const TA *)in[0], N > 1 ? (const TB *)in[1] : nullptr, f);
    return cudaGetLastError();
}

/* The launchers of the other .cu files, called by cuda_ew_launch. */
cudaError_t ew_unary_launch(cudaStream_t s, int op, int dtype, const struct cuda_ew_geom *g,
                            void *out, const void *const *in, const struct cuda_ew_consts *k);
cudaError_t ew_activation_launch(cudaStream_t s, int op, int dtype, const struct cuda_ew_geom *g,
                                 void *out, const void *const *in,
                                 const struct cuda_ew_consts *k);
cudaError_t ew_cast_launch(cudaStream_t s, int from, int to, const struct cuda_ew_geom *g,
                           void *out, const void *const *in, const struct cuda_ew_consts *k);

#endif
