/* ops/cuda/elem_unary_kernels.cu — the one-input functors of the
 * broadcasting kernel (Sqrt ... Not, Clip) and the two-input gradient
 * functors of ops/unary.c (ReluGrad ... ClipGrad, over dy and z). Each is
 * the CPU kernel's expression; float math in float, double in double. */
#include "ops/cuda/elem-device.cuh"

namespace {

/* Float and double math by overload, so functors are written once. */
__device__ inline float m_sqrt(float x) { return sqrtf(x); }
__device__ inline double m_sqrt(double x) { return sqrt(x); }
__device__ inline float m_exp(float x) { return expf(x); }
__device__ inline double m_exp(double x) { return exp(x); }
__device__ inline float m_log(float x) { return logf(x); }
__device__ inline double m_log(double x) { return log(x); }
__device__ inline float m_tanh(float x) { return tanhf(x); }
__device__ inline double m_tanh(double x) { return tanh(x); }
__device__ inline float m_erf(float x) { return erff(x); }
__device__ inline double m_erf(double x) { return erf(x); }
__device__ inline float m_erfc(float x) { return erfcf(x); }
__device__ inline double m_erfc(double x) { return erfc(x); }
__device__ inline float m_fabs(float x) { return fabsf(x); }
__device__ inline double m_fabs(double x) { return fabs(x); }

#define UNARY_FUNCTOR(name, EXPR)                                                      \
    template <typename T> struct name {                                                \
        __host__ explicit name(const struct cuda_ew_consts &) {}                       \
        __device__ T operator()(T x) const { return (EXPR); }                          \
    };

UNARY_FUNCTOR(sqrt_f, m_sqrt(x))
UNARY_FUNCTOR(exp_f, m_exp(x))
UNARY_FUNCTOR(log_f, m_log(x))
UNARY_FUNCTOR(tanh_f, m_tanh(x))
UNARY_FUNCTOR(erf_f, m_erf(x))
UNARY_FUNCTOR(recip_f, (T)1 / x)
/* exp(-x) overflows to inf for very negative x, giving 0 as it should. */
UNARY_FUNCTOR(sigmoid_f, (T)1 / ((T)1 + m_exp(-x)))
/* 0.5 x erfc(-x / sqrt 2): no cancellation for negative x. */
UNARY_FUNCTOR(gelu_f, (T)0.5 * x * m_erfc(-x * (T)0.70710678118654752440))
/* 0.5 x (1 + tanh u) = x / (1 + exp(-2u)) */
UNARY_FUNCTOR(gelu_tanh_f, x / ((T)1 + m_exp((T)-1.59576912160573071176 *
                                             (x + (T)0.044715 * x * x * x))))
/* x < 0 ? 0 : x keeps NaN. */
UNARY_FUNCTOR(relu_f, x < 0 ? (T)0 : x)
UNARY_FUNCTOR(not_f, (T)(x == 0))

template <typename T> struct neg_f {
    __host__ explicit neg_f(const struct cuda_ew_consts &) {}
    __device__ T operator()(T x) const
    {
        if constexpr (std::is_floating_point<T>::value)
            return -x;
        else
            return (T)((typename wrap_of<T>::W)0 - (typename wrap_of<T>::W)x);
    }
};

template <typename T> struct abs_f {
    __host__ explicit abs_f(const struct cuda_ew_consts &) {}
    __device__ T operator()(T x) const
    {
        if constexpr (std::is_floating_point<T>::value)
            return m_fabs(x);
        else if constexpr (std::is_signed<T>::value)
            return x < 0 ? (T)((typename wrap_of<T>::W)0 - (typename wrap_of<T>::W)x) : x;
        else
            return x;
    }
};

template <typename T> struct leaky_f {
    float alpha;
    __host__ explicit leaky_f(const struct cuda_ew_consts &k) : alpha(k.alpha) {}
    __device__ T operator()(T x) const { return x < 0 ? (T)alpha * x : x; }
};

/* Bounds of Clip and ClipGrad: a device scalar when given, else the value
 * the host wrote in the constants. */
template <typename T> struct clip_bounds {
    const T *plo, *phi;
    T lo, hi;
    __host__ explicit clip_bounds(const struct cuda_ew_consts &k)
        : plo((const T *)k.lo), phi((const T *)k.hi)
    {
        memcpy(&lo, &k.lo_bits, sizeof lo);
        memcpy(&hi, &k.hi_bits, sizeof hi);
    }
    __device__ T get_lo() const { return plo ? *plo : lo; }
    __device__ T get_hi() const { return phi ? *phi : hi; }
};

/* min(max(x, lo), hi) as numpy.clip: hi wins when lo > hi, NaN stays NaN. */
template <typename T> struct clip_f : clip_bounds<T> {
    __host__ explicit clip_f(const struct cuda_ew_consts &k) : clip_bounds<T>(k) {}
    __device__ T operator()(T x) const
    {
        const T lo = this->get_lo(), hi = this->get_hi();
        const T v = x < lo ? lo : x;
        return v > hi ? hi : v;
    }
};

/* ---- gradients: x is dy, y is z (the forward output or input) ---------------- */

#define GRAD_FUNCTOR(name, EXPR)                                                       \
    template <typename T> struct name {                                                \
        __host__ explicit name(const struct cuda_ew_consts &) {}                       \
        __device__ T operator()(T x, T y) const { return (EXPR); }                     \
    };

GRAD_FUNCTOR(relu_grad_f, y > 0 ? x : (T)0)
GRAD_FUNCTOR(sigmoid_grad_f, x * y * ((T)1 - y))
GRAD_FUNCTOR(tanh_grad_f, x * ((T)1 - y * y))
GRAD_FUNCTOR(sqrt_grad_f, (T)0.5 * x / y)
GRAD_FUNCTOR(recip_grad_f, -x * y * y)
/* 0 at the kink, like sign(x) * dy. */
GRAD_FUNCTOR(abs_grad_f, y > 0 ? x : y < 0 ? -x : (T)0)
/* d erf(x)/dx = 2 / sqrt(pi) exp(-x^2) */
GRAD_FUNCTOR(erf_grad_f, x * (T)1.12837916709551257390 * m_exp(-y * y))
/* d/dx x Phi(x) = Phi(x) + x phi(x) */
GRAD_FUNCTOR(gelu_grad_f, x * ((T)0.5 * m_erfc(-y * (T)0.70710678118654752440) +
                               y * (T)0.39894228040143267794 * m_exp((T)-0.5 * y * y)))

/* s = 1 / (1 + exp(-2u)), u = k (x + a x^3): s + 2 x s (1 - s) k (1 + 3 a x^2). */
template <typename T> __device__ inline T gelu_tanh_deriv(T x)
{
    T s = (T)1 / ((T)1 + m_exp((T)-1.59576912160573071176 * (x + (T)0.044715 * x * x * x)));
    return s + (T)2 * x * s * ((T)1 - s) * (T)0.79788456080286535588 *
                   ((T)1 + (T)0.134145 * x * x);
}
GRAD_FUNCTOR(gelu_tanh_grad_f, x * gelu_tanh_deriv(y))

template <typename T> struct leaky_grad_f {
    float alpha;
    __host__ explicit leaky_grad_f(const struct cuda_ew_consts &k) : alpha(k.alpha) {}
    __device__ T operator()(T x, T y) const { return y < 0 ? (T)alpha * x : x; }
};

/* Pass-through where lo <= z <= hi (NaN and clipped elements get 0). */
template <typename T> struct clip_grad_f : clip_bounds<T> {
    __host__ explicit clip_grad_f(const struct cuda_ew_consts &k) : clip_bounds<T>(k) {}
    __device__ T operator()(T x, T y) const
    {
        return (y >= this->get_lo() && y <= this->get_hi()) ? x : (T)0;
    }
};

template <template <typename> class F, unsigned SET>
cudaError_t run_unary(cudaStream_t s, int dtype, const struct cuda_ew_geom *g, void *out,
                      const void *const *in, const struct cuda_ew_consts *k)
{
    return dtype_visit<SET>(dtype, [&](auto tag) {
        typedef typename dt<decltype(tag)::value>::T T;
        return ew_run_flat<1, T, T, T, F<T>>(s, g, out, in, k);
    });
}

template <template <typename> class F>
cudaError_t run_grad(cudaStream_t s, int dtype, const struct cuda_ew_geom *g, void *out,
                     const void *const *in, const struct cuda_ew_consts *k)
{
    return dtype_visit<DS_FLOATS>(dtype, [&](auto tag) {
        typedef typename dt<decltype(tag)::value>::T T;
        return ew_run_flat<2, T, T, T, F<T>>(s, g, out, in, k);
    });
}

} // namespace

cudaError_t ew_unary_launch(cudaStream_t s, int op, int dtype, const struct cuda_ew_geom *g,
                            void *out, const void *const *in, const struct cuda_ew_consts *k)
{
    switch (op) {
    case CUDA_EW_SQRT: return run_unary<sqrt_f, DS_FLOATS>(s, dtype, g, out, in, k);
    case CUDA_EW_EXP: return run_unary<exp_f, DS_FLOATS>(s, dtype, g, out, in, k);
    case CUDA_EW_LOG: return run_unary<log_f, DS_FLOATS>(s, dtype, g, out, in, k);
    case CUDA_EW_TANH: return run_unary<tanh_f, DS_FLOATS>(s, dtype, g, out, in, k);
    case CUDA_EW_ERF: return run_unary<erf_f, DS_FLOATS>(s, dtype, g, out, in, k);
    case CUDA_EW_RECIP: return run_unary<recip_f, DS_FLOATS>(s, dtype, g, out, in, k);
    case CUDA_EW_SIGMOID: return run_unary<sigmoid_f, DS_FLOATS>(s, dtype, g, out, in, k);
    case CUDA_EW_NEG: return run_unary<neg_f, DS_SIGNED>(s, dtype, g, out, in, k);
    case CUDA_EW_ABS: return run_unary<abs_f, DS_NUMERIC>(s, dtype, g, out, in, k);
    case CUDA_EW_RELU: return run_unary<relu_f, DS_SIGNED>(s, dtype, g, out, in, k);
    case CUDA_EW_LEAKY: return run_unary<leaky_f, DS_FLOATS>(s, dtype, g, out, in, k);
    case CUDA_EW_GELU: return run_unary<gelu_f, DS_FLOATS>(s, dtype, g, out, in, k);
    case CUDA_EW_GELU_TANH: return run_unary<gelu_tanh_f, DS_FLOATS>(s, dtype, g, out, in, k);
    case CUDA_EW_CLIP: return run_unary<clip_f, DS_NUMERIC>(s, dtype, g, out, in, k);
    case CUDA_EW_NOT: return run_unary<not_f, DS_BOOL>(s, dtype, g, out, in, k);
    case CUDA_EW_RELU_GRAD: return run_grad<relu_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_LEAKY_GRAD: return run_grad<leaky_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_SIGMOID_GRAD: return run_grad<sigmoid_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_TANH_GRAD: return run_grad<tanh_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_SQRT_GRAD: return run_grad<sqrt_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_RECIP_GRAD: return run_grad<recip_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_ABS_GRAD: return run_grad<abs_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_ERF_GRAD: return run_grad<erf_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_GELU_GRAD: return run_grad<gelu_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_GELU_TANH_GRAD: return run_grad<gelu_tanh_grad_f>(s, dtype, g, out, in, k);
    case CUDA_EW_CLIP_GRAD: return run_grad<clip_grad_f>(s, dtype, g, out, in, k);
    default: return cudaErrorNotSupported;
    }
}
