/* ops/cuda/elem_loss_kernels.cu — the losses of ops/loss.c
 * (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss and their gradients),
 * Dropout's counter-based mask (ops/dropout.c) and the optimizer steps of
 * ops/optimizer.c.
 *
 * Losses see scores as [n, c, d] (classes strided by d) and work per
 * position (n*d of them) in double, as the CPU does. The log-sum-exp of a
 * position is folded by a warp when the classes are contiguous (d == 1),
 * else by one thread (neighbouring threads then read neighbouring
 * positions); warps fold with a fixed shuffle tree. The sum and mean
 * reductions run in one block with a fixed tree. All deterministic. */
#include "ops/cuda/elem-device.cuh"

namespace {

/* ---- losses ------------------------------------------------------------------ */

template <typename T, typename TT> struct loss_view {
    int64_t n, c, d, count;
    int has_ignore;
    int64_t ignore_index;
    const T *x, *weight;
    const TT *target;

    /* Position i's class (-1 when ignored) and weight (0 when ignored). */
    __device__ double weight_of(int64_t i, int64_t *cls) const
    {
        int64_t t = (int64_t)target[i];
        if (has_ignore && t == ignore_index) {
            *cls = -1;
            return 0.0;
        }
        *cls = t;
        return weight ? (double)weight[t] : 1.0;
    }
    /* Flat index of (position i, class k). */
    __device__ int64_t at(int64_t i, int64_t k) const
    {
        return (i / d) * c * d + k * d + i % d;
    }
};

template <typename T, typename TT> loss_view<T, TT> loss_view_of(const struct cuda_loss_args *a)
{
    loss_view<T, TT> v;
    v.n = a->n;
    v.c = a->c;
    v.d = a->d;
    v.count = a->n * a->d;
    v.has_ignore = a->has_ignore;
    v.ignore_index = a->ignore_index;
    v.x = (const T *)a->x;
    v.weight = (const T *)a->weight;
    v.target = (const TT *)a->target;
    return v;
}

template <typename T, typename TT>
__global__ void loss_check_kernel(loss_view<T, TT> v, unsigned long long *bad)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < v.count; i += stride) {
        int64_t t = (int64_t)v.target[i];
        if (v.has_ignore && t == v.ignore_index)
            continue;
        if (t < 0 || t >= v.c)
            atomicMin(bad, (unsigned long long)i);
    }
}

/* Folds v over the P lanes of a group (P = 1 or 32, a whole warp) with a
 * fixed tree; every lane gets lane 0's result. */
template <int P, typename V, typename Op> __device__ inline V group_fold(V v, Op op)
{
    if constexpr (P > 1) {
        for (int w = P / 2; w > 0; w /= 2)
            v = op(v, __shfl_down_sync(0xffffffffu, v, w));
        v = __shfl_sync(0xffffffffu, v, 0);
    }
    return v;
}

struct max_op {
    __device__ double operator()(double a, double b) const { return b > a ? b : a; }
};
struct add_op {
    __device__ double operator()(double a, double b) const { return a + b; }
};

/* lse[i] = max + log(sum exp(x - max)); sdlp[i] = sum of dlp (when given). */
template <int P, typename T, typename TT>
__global__ void __launch_bounds__(EW_THREADS)
    loss_stats_kernel(loss_view<T, TT> v, const T *dlp, double *lse, double *sdlp)
{
    const int per_block = EW_THREADS / P, lane = threadIdx.x % P;
    const int64_t stride = (int64_t)gridDim.x * per_block;
    /* Every lane of a group runs the same iterations, so the shuffles of
     * group_fold always see the whole warp. */
    const int64_t first = (int64_t)blockIdx.x * per_block + threadIdx.x / P;
    const int64_t rounds = (v.count + stride - 1) / stride;
    for (int64_t r = 0; r < rounds; r++) {
        const int64_t i = first + r * stride;
        const bool live = i < v.count;
        double mx = -INFINITY, sum = 0.0, sd = 0.0;
        if (live)
            for (int64_t k = lane; k < v.c; k += P) {
                double x = (double)v.x[v.at(i, k)];
                if (x > mx)
                    mx = x;
            }
        mx = group_fold<P>(mx, max_op());
        if (live)
            for (int64_t k = lane; k < v.c; k += P) {
                sum += exp((double)v.x[v.at(i, k)] - mx);
                if (dlp)
                    sd += (double)dlp[v.at(i, k)];
            }
        sum = group_fold<P>(sum, add_op());
        if (dlp)
            sd = group_fold<P>(sd, add_op());
        if (live && lane == 0) {
            lse[i] = mx + log(sum);
            if (dlp)
                sdlp[i] = sd;
        }
    }
}

template <typename T, typename TT>
__global__ void loss_log_prob_kernel(loss_view<T, TT> v, const double *lse, T *out)
{
    const int64_t total = v.count * v.c, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
        int64_t i = e / (v.c * v.d) * v.d + e % v.d;
        out[e] = (T)((double)v.x[e] - lse[i]);
    }
}

/* Position i's loss -logp[cls] * w, logp rounded to T when computed from lse
 * (the CPU stores the log-probabilities in T before reading them). */
template <typename T, typename TT>
__device__ inline double loss_at(const loss_view<T, TT> &v, const double *lse, int64_t i,
                                 double *w)
{
    int64_t cls;
    *w = v.weight_of(i, &cls);
    if (cls < 0)
        return 0.0;
    double xv = (double)v.x[v.at(i, cls)];
    double logp = lse ? (double)(T)(xv - lse[i]) : xv;
    return -logp * *w;
}

template <typename T, typename TT>
__global__ void loss_none_kernel(loss_view<T, TT> v, const double *lse, T *out)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < v.count; i += stride) {
        double w;
        out[i] = (T)loss_at(v, lse, i, &w);
    }
}

#define LOSS_REDUCE_THREADS 1024

/* One block: the total loss and weight, folded in a fixed order. */
template <typename T, typename TT>
__global__ void __launch_bounds__(LOSS_REDUCE_THREADS)
    loss_reduce_kernel(loss_view<T, TT> v, const double *lse, int mean, T *out, double *weight_sum)
{
    __shared__ double sl[LOSS_REDUCE_THREADS], sw[LOSS_REDUCE_THREADS];
    double l = 0.0, ws = 0.0;
    for (int64_t i = threadIdx.x; i < v.count; i += LOSS_REDUCE_THREADS) {
        double w;
        l += loss_at(v, lse, i, &w);
        ws += w;
    }
    sl[threadIdx.x] = l;
    sw[threadIdx.x] = ws;
    __syncthreads();
    for (int w = LOSS_REDUCE_THREADS / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) {
            sl[threadIdx.x] += sl[threadIdx.x + w];
            sw[threadIdx.x] += sw[threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        /* all positions ignored under mean: 0/0 = NaN, as ONNX's reference */
        if (out)
            out[0] = (T)(mean ? sl[0] / sw[0] : sl[0]);
        if (weight_sum)
            *weight_sum = sw[0];
    }
}

/* dx for every element e of x: the target's share -w u at its class, and
 * for SCE the log-softmax's chain dlogp - softmax(x) * sum_k dlogp. */
template <typename T, typename TT>
__global__ void loss_grad_kernel(loss_view<T, TT> v, int reduction, const T *dy, const T *dlp,
                                 const double *lse, const double *sdlp, const double *weight_sum,
                                 T *dx)
{
    const int64_t total = v.count * v.c, stride = (int64_t)gridDim.x * blockDim.x;
    const double scale = reduction == 2 ? 1.0 / *weight_sum : 1.0;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += stride) {
        const int64_t k = e / v.d % v.c, i = e / (v.c * v.d) * v.d + e % v.d;
        int64_t cls;
        double w = v.weight_of(i, &cls);
        double g_cls = 0.0;
        if (cls >= 0 && dy)
            g_cls = -w * scale * (double)dy[reduction == 0 ? i : 0];
        double g = k == cls ? g_cls : 0.0;
        if (!lse) {
            dx[e] = (T)g;
            continue;
        }
        double sum_dlp = dlp ? sdlp[i] : 0.0;
        if (dlp)
            g += (double)dlp[e];
        dx[e] = (T)(g - exp((double)v.x[e] - lse[i]) * (g_cls + sum_dlp));
    }
}

/* fn(loss_view<T, TT>) for the scores' and targets' dtypes. */
template <typename Fn> cudaError_t loss_visit(const struct cuda_loss_args *a, Fn &&fn)
{
    return dtype_visit<DS_FLOATS>(a->dtype, [&](auto xt) {
        typedef typename dt<decltype(xt)::value>::T T;
        return dtype_visit<DS_(ONNX_DTYPE_INT32) | DS_(ONNX_DTYPE_INT64)>(
            a->target_dtype, [&](auto tt) {
                typedef typename dt<decltype(tt)::value>::T TT;
                return fn(loss_view_of<T, TT>(a));
            });
    });
}

/* ---- dropout ------------------------------------------------------------------- */

/* splitmix64's finaliser and the uniform draw of ops/dropout.c, bit for bit. */
__device__ inline uint64_t dropout_mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

__device__ inline double dropout_uniform(uint64_t key, int64_t i)
{
    return (double)(dropout_mix(key ^ dropout_mix((uint64_t)i)) >> 11) * 0x1.0p-53;
}

/* One element of a mask of dtype md, as dropout_mask_set writes it. */
__device__ inline void dropout_mask_set(int md, void *m, int64_t i, int keep)
{
    switch (md) {
    case ONNX_DTYPE_FLOAT: ((float *)m)[i] = (float)keep; break;
    case ONNX_DTYPE_DOUBLE: ((double *)m)[i] = keep; break;
    case ONNX_DTYPE_FLOAT16: ((uint16_t *)m)[i] = keep ? 0x3C00 : 0; break;
    case ONNX_DTYPE_BFLOAT16: ((uint16_t *)m)[i] = keep ? 0x3F80 : 0; break;
    default: ((uint8_t *)m)[i] = (uint8_t)keep; break;
    }
}

template <typename T>
__global__ void dropout_kernel(int64_t n, uint64_t key, double ratio, double scale, const T *x,
                               T *y, int md, void *mask)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int keep = ratio < 1 && dropout_uniform(key, i) >= ratio;
        y[i] = keep ? (T)((double)x[i] * scale) : (T)0;
        if (mask)
            dropout_mask_set(md, mask, i, keep);
    }
}

__global__ void mask_ones_kernel(int64_t n, int md, void *mask)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dropout_mask_set(md, mask, i, 1);
}

/* ---- optimizers ----------------------------------------------------------------- */

/* The _rn intrinsics keep nvcc from contracting a*b+c into one FMA, so each
 * step rounds as the CPU's float code does. */
__global__ void optim_kernel(struct cuda_optim_args a)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride) {
        float w = a.w[i], g = a.g[i];
        if (a.kind == CUDA_OPTIM_SGD) {
            a.w[i] = __fsub_rn(w, __fmul_rn(a.lr, __fadd_rn(g, __fmul_rn(a.weight_decay, w))));
        } else if (a.kind == CUDA_OPTIM_MOMENTUM) {
            float d = __fadd_rn(g, __fmul_rn(a.weight_decay, w));
            float b = __fadd_rn(__fmul_rn(a.momentum, a.b[i]), d);
            a.b[i] = b;
            float u = a.nesterov ? __fadd_rn(d, __fmul_rn(a.momentum, b)) : b;
            a.w[i] = __fsub_rn(w, __fmul_rn(a.lr, u));
        } else {
            float d = g;
            if (a.decoupled && !a.hf_bias_correction)
                w = __fmul_rn(w, __fsub_rn(1.0f, __fmul_rn(a.lr, a.weight_decay)));
            else if (!a.decoupled)
                d = __fadd_rn(d, __fmul_rn(a.weight_decay, w));
            float m = __fadd_rn(__fmul_rn(a.beta1, a.m[i]), __fmul_rn(__fsub_rn(1.0f, a.beta1), d));
            float v = __fadd_rn(__fmul_rn(a.beta2, a.v[i]),
                                __fmul_rn(__fmul_rn(__fsub_rn(1.0f, a.beta2), d), d));
            a.m[i] = m;
            a.v[i] = v;
            float den = __fadd_rn(__fmul_rn(__fsqrt_rn(v), a.denom_scale), a.epsilon);
            w = __fsub_rn(w, __fdiv_rn(__fmul_rn(a.step_size, m), den));
            if (a.decoupled && a.hf_bias_correction)
                w = __fsub_rn(w, __fmul_rn(__fmul_rn(a.lr, a.weight_decay), w));
            a.w[i] = w;
        }
    }
}

} // namespace

extern "C" cudaError_t cuda_loss_check_launch(cudaStream_t stream, const struct cuda_loss_args *a,
                                              unsigned long long *bad)
{
    return loss_visit(a, [&](auto v) -> cudaError_t {
        if (v.count <= 0)
            return cudaSuccess;
        loss_check_kernel<<<ew_blocks(v.count, EW_THREADS), EW_THREADS, 0, stream>>>(v, bad);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_loss_stats_launch(cudaStream_t stream, const struct cuda_loss_args *a,
                                              const void *dlp, double *lse, double *sdlp)
{
    return loss_visit(a, [&](auto v) -> cudaError_t {
        typedef typename std::remove_pointer<decltype(v.x)>::type CT;
        typedef typename std::remove_const<CT>::type T;
        if (v.count <= 0)
            return cudaSuccess;
        if (v.d == 1)
            loss_stats_kernel<32><<<ew_blocks(v.count * 32, EW_THREADS), EW_THREADS, 0, stream>>>(
                v, (const T *)dlp, lse, sdlp);
        else
            loss_stats_kernel<1><<<ew_blocks(v.count, EW_THREADS), EW_THREADS, 0, stream>>>(
                v, (const T *)dlp, lse, sdlp);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_loss_log_prob_launch(cudaStream_t stream,
                                                 const struct cuda_loss_args *a,
                                                 const double *lse, void *log_prob)
{
    return loss_visit(a, [&](auto v) -> cudaError_t {
        typedef typename std::remove_const<
            typename std::remove_pointer<decltype(v.x)>::type>::type T;
        int64_t total = v.count * v.c;
        if (total <= 0)
            return cudaSuccess;
        loss_log_prob_kernel<<<ew_blocks(total, EW_THREADS), EW_THREADS, 0, stream>>>(
            v, lse, (T *)log_prob);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_loss_nll_launch(cudaStream_t stream, const struct cuda_loss_args *a,
                                            const double *lse, int reduction, void *out,
                                            double *weight_sum)
{
    return loss_visit(a, [&](auto v) -> cudaError_t {
        typedef typename std::remove_const<
            typename std::remove_pointer<decltype(v.x)>::type>::type T;
        if (reduction == 0) {
            if (v.count <= 0)
                return cudaSuccess;
            loss_none_kernel<<<ew_blocks(v.count, EW_THREADS), EW_THREADS, 0, stream>>>(
                v, lse, (T *)out);
        } else {
            loss_reduce_kernel<<<1, LOSS_REDUCE_THREADS, 0, stream>>>(v, lse, reduction == 2,
                                                                      (T *)out, weight_sum);
        }
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_loss_grad_launch(cudaStream_t stream, const struct cuda_loss_args *a,
                                             int reduction, const void *dy, const void *dlp,
                                             const double *lse, const double *sdlp,
                                             const double *weight_sum, void *dx)
{
    return loss_visit(a, [&](auto v) -> cudaError_t {
        typedef typename std::remove_const<
            typename std::remove_pointer<decltype(v.x)>::type>::type T;
        int64_t total = v.count * v.c;
        if (total <= 0)
            return cudaSuccess;
        loss_grad_kernel<<<ew_blocks(total, EW_THREADS), EW_THREADS, 0, stream>>>(
            v, reduction, (const T *)dy, (const T *)dlp, lse, sdlp, weight_sum, (T *)dx);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_dropout_launch(cudaStream_t stream, int dtype, int64_t n, uint64_t key,
                                           double ratio, const void *x, void *y, int mask_dtype,
                                           void *mask)
{
    return dtype_visit<DS_FLOATS>(dtype, [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        if (n <= 0)
            return cudaSuccess;
        double scale = ratio < 1 ? 1 / (1 - ratio) : 0;
        dropout_kernel<T><<<ew_blocks(n, EW_THREADS), EW_THREADS, 0, stream>>>(
            n, key, ratio, scale, (const T *)x, (T *)y, mask_dtype, mask);
        return cudaGetLastError();
    });
}

extern "C" cudaError_t cuda_dropout_mask_ones_launch(cudaStream_t stream, int mask_dtype,
                                                     int64_t n, void *mask)
{
    if (n <= 0)
        return cudaSuccess;
    mask_ones_kernel<<<ew_blocks(n, EW_THREADS), EW_THREADS, 0, stream>>>(n, mask_dtype, mask);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_optim_launch(cudaStream_t stream, const struct cuda_optim_args *a)
{
    if (a->n <= 0)
        return cudaSuccess;
    optim_kernel<<<ew_blocks(a->n, EW_THREADS), EW_THREADS, 0, stream>>>(*a);
    return cudaGetLastError();
}
