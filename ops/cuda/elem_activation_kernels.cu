/* ops/cuda/elem_activation_kernels.cu — the functors of ops/unary_math.c,
 * activation.c, mod.c and logical.c for the broadcasting kernel: Sin ...
 * Round, HardSigmoid ... Swish and their (dy, X) gradients, Sign, IsNaN,
 * IsInf, PRelu and PReluGrad, SwiGLU, Mod and ModGrad, And, Or, Xor. Each is the CPU
 * kernel's expression over the same compute type: float and double in
 * their own precision, float16 and bfloat16 loaded into float and stored
 * back with round-to-nearest-even, as the CPU does. */
#include "ops/cuda/elem-device.cuh"

namespace {

/* The type an element of dtype D is computed in. */
template <int D> struct ctype { typedef typename dt<D>::T C; };
template <> struct ctype<ONNX_DTYPE_FLOAT16> { typedef float C; };
template <> struct ctype<ONNX_DTYPE_BFLOAT16> { typedef float C; };

#define DS_REAL (DS_FLOATS | DS_(ONNX_DTYPE_FLOAT16) | DS_(ONNX_DTYPE_BFLOAT16))
#define DS_REAL_INT (DS_REAL | DS_SINTS | DS_UINTS)
#define DS_PRELU (DS_REAL | DS_(ONNX_DTYPE_INT32) | DS_(ONNX_DTYPE_INT64) | \
                  DS_(ONNX_DTYPE_UINT32) | DS_(ONNX_DTYPE_UINT64))

/* Float and double math by overload. */
#define M_OVL(name)                                                                    \
    __device__ inline float m_##name(float x) { return name##f(x); }                   \
    __device__ inline double m_##name(double x) { return name(x); }
M_OVL(sin)
M_OVL(cos)
M_OVL(floor)
M_OVL(ceil)
M_OVL(rint)
M_OVL(exp)
M_OVL(expm1)
M_OVL(log1p)
M_OVL(tanh)
M_OVL(trunc)
#undef M_OVL
__device__ inline float m_fmod(float x, float y) { return fmodf(x, y); }
__device__ inline double m_fmod(double x, double y) { return fmod(x, y); }
__device__ inline float m_copysign(float x, float y) { return copysignf(x, y); }
__device__ inline double m_copysign(double x, double y) { return copysign(x, y); }

/* The activations' attributes (struct act_params on the host). */
struct act_consts {
    float alpha, beta, gamma;
    __host__ explicit act_consts(const struct cuda_ew_consts &k)
        : alpha(k.alpha), beta(k.beta), gamma(k.gamma) {}
};

/* ---- one input: v is x in the compute type C -------------------------------------- */

#define FWD_FUNCTOR(name, ...)                                                         \
    template <typename C> struct name : act_consts {                                   \
        __host__ explicit name(const struct cuda_ew_consts &k) : act_consts(k) {}      \
        __device__ C operator()(C v) const { __VA_ARGS__ }                             \
    };

FWD_FUNCTOR(sin_f, return m_sin(v);)
FWD_FUNCTOR(cos_f, return m_cos(v);)
FWD_FUNCTOR(floor_f, return m_floor(v);)
FWD_FUNCTOR(ceil_f, return m_ceil(v);)
/* halves to even */
FWD_FUNCTOR(round_f, return m_rint(v);)
/* Comparisons keep NaN: every branch is false for NaN and the fall-through
 * expression propagates it. */
FWD_FUNCTOR(hardsigmoid_f, C t = (C)alpha * v + (C)beta;
            return t < 0 ? (C)0 : t > 1 ? (C)1 : t;)
FWD_FUNCTOR(hardswish_f, C t = v * (C)(1.0 / 6.0) + (C)0.5;
            return v * (t < 0 ? (C)0 : t > 1 ? (C)1 : t);)
FWD_FUNCTOR(softplus_f, return v > 0 ? v + m_log1p(m_exp(-v)) : m_log1p(m_exp(v));)
FWD_FUNCTOR(elu_f, return v < 0 ? (C)alpha * m_expm1(v) : v;)
FWD_FUNCTOR(selu_f, return v <= 0 ? (C)gamma * ((C)alpha * m_expm1(v)) : (C)gamma * v;)
FWD_FUNCTOR(celu_f, return v > 0 ? v : (C)alpha * m_expm1(v / (C)alpha);)
FWD_FUNCTOR(mish_f, C sp = v > 0 ? v + m_log1p(m_exp(-v)) : m_log1p(m_exp(v));
            return v * m_tanh(sp);)
FWD_FUNCTOR(swish_f, return v / ((C)1 + m_exp(-(C)alpha * v));)

/* NaN and signed zeros come back as they are; integers give -1, 0, 1. */
template <typename C> struct sign_f {
    __host__ explicit sign_f(const struct cuda_ew_consts &) {}
    __device__ C operator()(C v) const
    {
        if constexpr (std::is_floating_point<C>::value)
            return v > 0 ? (C)1 : v < 0 ? (C)-1 : v;
        else if constexpr (std::is_signed<C>::value)
            return (C)((v > 0) - (v < 0));
        else
            return (C)(v > 0);
    }
};

/* ---- gradients over (dy, X): d is dy, v is x ---------------------------------------- */

#define BWD_FUNCTOR(name, ...)                                                         \
    template <typename C> struct name : act_consts {                                   \
        __host__ explicit name(const struct cuda_ew_consts &k) : act_consts(k) {}      \
        __device__ C operator()(C d, C v) const { __VA_ARGS__ }                        \
    };

BWD_FUNCTOR(hardsigmoid_grad_f, C t = (C)alpha * v + (C)beta;
            return t > 0 && t < 1 ? (C)alpha * d : (C)0;)
BWD_FUNCTOR(hardswish_grad_f, return v < -3 ? (C)0 : v <= 3 ? d * (v / (C)3 + (C)0.5) : d;)
BWD_FUNCTOR(softplus_grad_f, return d / ((C)1 + m_exp(-v));)
BWD_FUNCTOR(elu_grad_f, return v <= 0 ? d * (C)alpha * m_exp(v) : d;)
BWD_FUNCTOR(selu_grad_f, return v <= 0 ? d * (C)gamma * (C)alpha * m_exp(v) : d * (C)gamma;)
BWD_FUNCTOR(celu_grad_f, return v <= 0 ? d * m_exp(v / (C)alpha) : d;)
BWD_FUNCTOR(mish_grad_f, C sp = v > 0 ? v + m_log1p(m_exp(-v)) : m_log1p(m_exp(v));
            C t = m_tanh(sp);
            C s = (C)1 / ((C)1 + m_exp(-v));
            return d * (t + v * s * ((C)1 - t * t));)
BWD_FUNCTOR(swish_grad_f, C a = (C)alpha;
            C s = (C)1 / ((C)1 + m_exp(-a * v));
            return d * (s + a * v * s * ((C)1 - s));)

/* ---- two inputs, broadcasting ----------------------------------------------------- */

/* x < 0 ? slope x : x; integers multiply wrapping, unsigned never take the slope. */
template <typename C> struct prelu_f {
    __host__ explicit prelu_f(const struct cuda_ew_consts &) {}
    __device__ C operator()(C x, C s) const
    {
        if constexpr (std::is_floating_point<C>::value)
            return x < 0 ? s * x : x;
        else if constexpr (std::is_signed<C>::value)
            return x < 0 ? (C)((typename wrap_of<C>::W)s * (typename wrap_of<C>::W)x) : x;
        else
            return x;
    }
};

/* SwiGLU: Swish_alpha(x) * y, the gate as swish_f computes it. */
template <typename C> struct swiglu_f : act_consts {
    __host__ explicit swiglu_f(const struct cuda_ew_consts &k) : act_consts(k) {}
    __device__ C operator()(C x, C y) const { return x / ((C)1 + m_exp(-(C)alpha * x)) * y; }
};

/* Truncated remainder; integer y of 0 (or -1, signed) gives 0. */
template <typename C> struct fmod_f {
    __host__ explicit fmod_f(const struct cuda_ew_consts &) {}
    __device__ C operator()(C x, C y) const
    {
        if constexpr (std::is_floating_point<C>::value)
            return m_fmod(x, y);
        else if constexpr (std::is_signed<C>::value)
            return (y == 0 || y == (C)-1) ? (C)0 : (C)((int64_t)x % (int64_t)y);
        else
            return y == 0 ? (C)0 : (C)(x % y);
    }
};

/* Floored remainder (numpy.mod): into y's sign, a zero result with y's sign. */
template <typename C> struct mod_f {
    __host__ explicit mod_f(const struct cuda_ew_consts &) {}
    __device__ C operator()(C x, C y) const
    {
        if constexpr (std::is_floating_point<C>::value) {
            C r = m_fmod(x, y);
            if (y == 0)
                return r;
            if (r != 0)
                return (r < 0) != (y < 0) ? r + y : r;
            return m_copysign((C)0, y);
        } else if constexpr (std::is_signed<C>::value) {
            if (y == 0 || y == (C)-1)
                return 0;
            int64_t r = (int64_t)x % (int64_t)y;
            return (C)(r != 0 && ((r < 0) != (y < 0)) ? r + y : r);
        } else {
            return y == 0 ? (C)0 : (C)(x % y);
        }
    }
};

#define LOGIC_FUNCTOR(name, EXPR)                                                      \
    struct name {                                                                      \
        __host__ explicit name(const struct cuda_ew_consts &) {}                       \
        __device__ uint8_t operator()(uint8_t x, uint8_t y) const { return (uint8_t)(EXPR); } \
    };
LOGIC_FUNCTOR(and_f, (x != 0) & (y != 0))
LOGIC_FUNCTOR(or_f, (x != 0) | (y != 0))
LOGIC_FUNCTOR(xor_f, (x != 0) ^ (y != 0))

/* ---- three inputs (d = dy, a, b) ----------------------------------------------------- */

/* PReluGrad, as PyTorch: x > 0 is the identity side, x = 0 the slope's. */
template <typename C> struct prelu_grad_x_f {
    __host__ explicit prelu_grad_x_f(const struct cuda_ew_consts &) {}
    __device__ C operator()(C d, C a, C b) const { return a > 0 ? d : b * d; }
};
template <typename C> struct prelu_grad_s_f {
    __host__ explicit prelu_grad_s_f(const struct cuda_ew_consts &) {}
    __device__ C operator()(C d, C a, C) const { return a > 0 ? (C)0 : a * d; }
};
/* dB of Mod: -dy q with q the rounded quotient */
template <typename C> struct mod_grad_f {
    __host__ explicit mod_grad_f(const struct cuda_ew_consts &) {}
    __device__ C operator()(C d, C a, C b) const { return -d * m_floor(a / b); }
};
template <typename C> struct fmod_grad_f {
    __host__ explicit fmod_grad_f(const struct cuda_ew_consts &) {}
    __device__ C operator()(C d, C a, C b) const { return -d * m_trunc(a / b); }
};

/* ---- lifting a compute-type functor to a dtype's elements ---------------------------- */

template <template <typename> class F, int D> struct lift1 {
    typedef typename dt<D>::T T;
    F<typename ctype<D>::C> f;
    __host__ explicit lift1(const struct cuda_ew_consts &k) : f(k) {}
    __device__ T operator()(T x) const { return ew_store<D>(f(ew_load<D>(x))); }
};

template <template <typename> class F, int D> struct lift2 {
    typedef typename dt<D>::T T;
    F<typename ctype<D>::C> f;
    __host__ explicit lift2(const struct cuda_ew_consts &k) : f(k) {}
    __device__ T operator()(T x, T y) const { return ew_store<D>(f(ew_load<D>(x), ew_load<D>(y))); }
};

template <template <typename> class F, int D> struct lift3 {
    typedef typename dt<D>::T T;
    F<typename ctype<D>::C> f;
    __host__ explicit lift3(const struct cuda_ew_consts &k) : f(k) {}
    __device__ T operator()(T d, T a, T b) const
    {
        return ew_store<D>(f(ew_load<D>(d), ew_load<D>(a), ew_load<D>(b)));
    }
};

/* IsNaN and IsInf: bool out. */
template <int D> struct isnan_f {
    __host__ explicit isnan_f(const struct cuda_ew_consts &) {}
    __device__ uint8_t operator()(typename dt<D>::T x) const
    {
        typename ctype<D>::C v = ew_load<D>(x);
        return (uint8_t)(v != v);
    }
};

template <int D> struct isinf_f {
    int neg, pos;
    __host__ explicit isinf_f(const struct cuda_ew_consts &k)
        : neg(k.detect_negative), pos(k.detect_positive) {}
    __device__ uint8_t operator()(typename dt<D>::T x) const
    {
        typedef typename ctype<D>::C C;
        C v = ew_load<D>(x);
        return (uint8_t)((v == (C)INFINITY && pos) || (v == -(C)INFINITY && neg));
    }
};

/* ---- runners ---------------------------------------------------------------------------- */

template <template <typename> class F, unsigned SET>
cudaError_t run_unary(cudaStream_t s, int dtype, const struct cuda_ew_geom *g, void *out,
                      const void *const *in, const struct cuda_ew_consts *k)
{
    return dtype_visit<SET>(dtype, [&](auto tag) {
        constexpr int D = decltype(tag)::value;
        typedef typename dt<D>::T T;
        return ew_run_flat<1, T, T, T, lift1<F, D>>(s, g, out, in, k);
    });
}

template <template <int> class F>
cudaError_t run_predicate(cudaStream_t s, int dtype, const struct cuda_ew_geom *g, void *out,
                          const void *const *in, const struct cuda_ew_consts *k)
{
    return dtype_visit<DS_REAL>(dtype, [&](auto tag) {
        constexpr int D = decltype(tag)::value;
        typedef typename dt<D>::T T;
        return ew_run_flat<1, uint8_t, T, T, F<D>>(s, g, out, in, k);
    });
}

template <template <typename> class F>
cudaError_t run_grad(cudaStream_t s, int dtype, const struct cuda_ew_geom *g, void *out,
                     const void *const *in, const struct cuda_ew_consts *k)
{
    return dtype_visit<DS_REAL>(dtype, [&](auto tag) {
        constexpr int D = decltype(tag)::value;
        typedef typename dt<D>::T T;
        return ew_run_flat<2, T, T, T, lift2<F, D>>(s, g, out, in, k);
    });
}

template <template <typename> class F, unsigned SET>
cudaError_t run_binary(cudaStream_t s, int dtype, const struct cuda_ew_geom *g, void *out,
                       const void *const *in, const struct cuda_ew_consts *k)
{
    return dtype_visit<SET>(dtype, [&](auto tag) {
        constexpr int D = decltype(tag)::value;
        typedef typename dt<D>::T T;
        return ew_run<2, T, T, T, T, lift2<F, D>>(s, g, out, in, k);
    });
}

template <typename F>
cudaError_t run_logic(cudaStream_t s, int dtype, const struct cuda_ew_geom *g, void *out,
                      const void *const *in, const struct cuda_ew_consts *k)
{
    if (dtype != ONNX_DTYPE_BOOL)
        return cudaErrorNotSupported;
    return ew_run<2, uint8_t, uint8_t, uint8_t, uint8_t, F>(s, g, out, in, k);
}

template <template <typename> class F>
cudaError_t run_ternary(cudaStream_t s, int dtype, const struct cuda_ew_geom *g, void *out,
                        const void *const *in, const struct cuda_ew_consts *k)
{
    return dtype_visit<DS_REAL>(dtype, [&](auto tag) {
        constexpr int D = decltype(tag)::value;
        typedef typename dt<D>::T T;
        return ew_run<3, T, T, T, T, lift3<F, D>>(s, g, out, in, k);
    });
}

} // namespace

cudaError_t ew_activation_launch(cudaStream_t s, int op, int dtype, const struct cuda_ew_geom *g,
                                 void *out, const void *const *in, const struct cuda_ew_consts *k)
{
    switch (op) {
    case CUDA_EW_SIN: return run_unary<sin_f, DS_REAL>(s, dtype, g, out, in, k);
    case CUDA_EW_COS: return run_unary<cos_f, DS_REAL>(s, dtype, g, out, in, k);
    case CUDA_EW_FLOOR: return run_unary<floor_f, DS_REAL>(s, dtype, g, out, in, k);
    case CUDA_EW_CEIL: return run_unary<ceil_f, DS_REAL>(s, dtype, g, out, in, k);
    case CUDA_EW_ROUND: return run_unary<round_f, DS_REAL>(s, dtype, g, out, in, k);
    case CUDA_EW_HARDSIGMOID: return run_unary<hardsigmoid_f, DS_REAL>(s, dtype, g, out, in, k);
    case CUDA_EW_HARDSWISH: return run_unary<hardswish_f, DS_REAL>(s, dtype, g, out, in, k);
    case CUDA_EW_SOFTPLUS: return run_unary<softplus_f, DS_REAL>(s, dtype, g, out, in, k);
    case CUDA_EW_ELU: return run_unary<elu_f, DS_REAL>(s, dtype, g, out, in, k);
    case CUDA_EW_SELU: return run_unary<selu_f, DS_REAL>(s, dtype, g, out, in, k);
    case CUDA_EW_CELU: return run_unary<celu_f, DS_REAL>(s, dtype, g, out, in, k);
    case CUDA_EW_MISH: return run_unary<mish_f, DS_REAL>(s, dtype, g, out, in, k);
    case CUDA_EW_SWISH: return run_unary<swish_f, DS_REAL>(s, dtype, g, out, in, k);
    case CUDA_EW_SIGN: return run_unary<sign_f, DS_REAL_INT>(s, dtype, g, out, in, k);
    case CUDA_EW_ISNAN: return run_predicate<isnan_f>(s, dtype, g, out, in, k);
    case CUDA_EW_ISINF: return run_predicate<isinf_f>(s, dtype, g, out, in, k);
    case CUDA_EW_HARDSIGMOID_GRAD: return run_grad<hardsigmoid_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_HARDSWISH_GRAD: return run_grad<hardswish_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_SOFTPLUS_GRAD: return run_grad<softplus_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_ELU_GRAD: return run_grad<elu_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_SELU_GRAD: return run_grad<selu_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_CELU_GRAD: return run_grad<celu_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_MISH_GRAD: return run_grad<mish_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_SWISH_GRAD: return run_grad<swish_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_PRELU: return run_binary<prelu_f, DS_PRELU>(s, dtype, g, out, in, k);
    case CUDA_EW_MOD: return run_binary<mod_f, DS_REAL_INT>(s, dtype, g, out, in, k);
    case CUDA_EW_FMOD: return run_binary<fmod_f, DS_REAL_INT>(s, dtype, g, out, in, k);
    case CUDA_EW_SWIGLU: return run_binary<swiglu_f, DS_REAL>(s, dtype, g, out, in, k);
    case CUDA_EW_AND: return run_logic<and_f>(s, dtype, g, out, in, k);
    case CUDA_EW_OR: return run_logic<or_f>(s, dtype, g, out, in, k);
    case CUDA_EW_XOR: return run_logic<xor_f>(s, dtype, g, out, in, k);
    case CUDA_EW_PRELU_GRAD_X: return run_ternary<prelu_grad_x_f>(s, dtype, g, out, in, k);
    case CUDA_EW_PRELU_GRAD_SLOPE: return run_ternary<prelu_grad_s_f>(s, dtype, g, out, in, k);
    case CUDA_EW_MOD_GRAD: return run_ternary<mod_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_FMOD_GRAD: return run_ternary<fmod_grad_f>(s, dtype, g, out, in, k);
    default: return cudaErrorNotSupported;
    }
}
