/* ops/cuda/elem_reduce_kernels.cu — ReduceSum/Mean/Max/Min and
 * ReduceSelectGrad.
 *
 * One reduction kernel serves every layout. A block of TX x TY threads takes
 * TX consecutive outputs; thread (tx, ty) folds the elements r = lo + ty,
 * lo + ty + TY, ... of its output's segment [lo, hi) serially, then the TY
 * partial results are folded by a tree in shared memory. The host-side
 * choice of TX, TY and the number of segments S depends on the shape alone:
 *   - innermost axis reduced, long groups: TX = 1, TY = 256 (a block per
 *     output, reading contiguous runs);
 *   - innermost axis reduced, short groups: a warp, or a thread, per output;
 *   - innermost axis kept: TX = 32 consecutive outputs, TY = 8.
 * Neighbouring threads read neighbouring elements either way: they share
 * an output in the first two cases and take neighbouring outputs in the
 * last. With S > 1 each segment writes a partial result to scratch and a second
 * kernel folds the S partials of each output in segment order. So every
 * output's elements are combined in one fixed order: bit-identical reruns,
 * no atomics. Integer sums wrap, so their order does not even matter. */
#include "ops/cuda/elem-device.cuh"

namespace {

template <int D, int KIND> struct reducer {
    typedef typename dt<D>::T T;
    __device__ static T identity()
    {
        if constexpr (KIND == CUDA_REDUCE_SUM)
            return (T)0;
        else if constexpr (KIND == CUDA_REDUCE_MAX)
            return ew_lowest<T>();
        else if constexpr (D == ONNX_DTYPE_BOOL)
            return (T)1;
        else
            return ew_highest<T>();
    }
    __device__ static T combine(T acc, T x)
    {
        if constexpr (KIND == CUDA_REDUCE_SUM) {
            if constexpr (std::is_floating_point<T>::value)
                return acc + x;
            else
                return (T)((typename wrap_of<T>::W)acc + (typename wrap_of<T>::W)x);
        } else if constexpr (KIND == CUDA_REDUCE_MAX) {
            return ew_max(acc, x);
        } else {
            return ew_min(acc, x);
        }
    }
    /* The mean: sum / count in double, stored back as ops/reduce.c does. */
    __device__ static T finish(T acc, int mean, int64_t count)
    {
        if constexpr (KIND == CUDA_REDUCE_SUM && D != ONNX_DTYPE_BOOL)
            if (mean)
                return ew_store<D>((double)acc / (double)count);
        return acc;
    }
};

template <typename I> struct red_geom_t {
    int n_kept, n_red;
    I n_out, count;
    I kept_dims[CUDA_EW_MAX_RANK], kept_st[CUDA_EW_MAX_RANK];
    I red_dims[CUDA_EW_MAX_RANK], red_st[CUDA_EW_MAX_RANK];
};

template <typename I> red_geom_t<I> red_geom_convert(const struct cuda_reduce_geom *g)
{
    red_geom_t<I> r;
    memset(&r, 0, sizeof r);
    r.n_kept = g->n_kept;
    r.n_red = g->n_red;
    r.n_out = (I)g->n_out;
    r.count = (I)g->count;
    for (int d = 0; d < CUDA_EW_MAX_RANK; d++) {
        r.kept_dims[d] = (I)(d < g->n_kept ? g->kept_dims[d] : 1);
        r.kept_st[d] = (I)(d < g->n_kept ? g->kept_strides[d] : 0);
        r.red_dims[d] = (I)(d < g->n_red ? g->red_dims[d] : 1);
        r.red_st[d] = (I)(d < g->n_red ? g->red_strides[d] : 0);
    }
    return r;
}

/* sum over axes of (index of v along dims) * strides, v row-major over n axes */
template <typename I>
__device__ __forceinline__ I red_offset(I v, int n, const I *dims, const I *st)
{
    if (n == 1)
        return v * st[0];
    I off = 0;
#pragma unroll
    for (int d = CUDA_EW_MAX_RANK - 1; d >= 0; d--) {
        if (d < n) {
            I q = v / dims[d];
            off += (v - q * dims[d]) * st[d];
            v = q;
        }
    }
    return off;
}

/* Stage 1: TX * TY threads, grid (ceil(n_out / TX), S). Consecutive threads
 * share an output when ty_fast (the innermost axis is reduced: they read
 * neighbouring elements), else they take neighbouring outputs. Writes
 * out[j] finished when S == 1, else part[s * n_out + j]. */
template <int D, int KIND, typename I>
__global__ void reduce_kernel(red_geom_t<I> g, const typename dt<D>::T *x,
                              typename dt<D>::T *out, typename dt<D>::T *part, I seg_len,
                              unsigned TX, unsigned TY, int ty_fast, int mean)
{
    typedef reducer<D, KIND> R;
    typedef typename dt<D>::T T;
    extern __shared__ unsigned char red_smem[];
    T *sh = (T *)red_smem;
    const unsigned tx = ty_fast ? threadIdx.x / TY : threadIdx.x % TX;
    const unsigned ty = ty_fast ? threadIdx.x % TY : threadIdx.x / TX;
    const I j = (I)blockIdx.x * TX + tx;
    const I lo = (I)blockIdx.y * seg_len;
    const I hi = lo + seg_len < g.count ? lo + seg_len : g.count;
    T acc = R::identity();
    if (j < g.n_out) {
        const I base = g.n_kept ? red_offset<I>(j, g.n_kept, g.kept_dims, g.kept_st) : 0;
        for (I r = lo + ty; r < hi; r += TY)
            acc = R::combine(acc, x[base + red_offset<I>(r, g.n_red, g.red_dims, g.red_st)]);
    }
    if (TY > 1) {
        sh[ty * TX + tx] = acc;
        __syncthreads();
        for (unsigned w = TY / 2; w > 0; w /= 2) {
            if (ty < w)
                sh[ty * TX + tx] = R::combine(sh[ty * TX + tx], sh[(ty + w) * TX + tx]);
            __syncthreads();
        }
        acc = sh[tx];
    }
    if (ty == 0 && j < g.n_out) {
        if (gridDim.y == 1)
            out[j] = R::finish(acc, mean, (int64_t)g.count);
        else
            part[(I)blockIdx.y * g.n_out + j] = acc;
    }
}

/* Stage 2: out[j] = the fold of the S partials of output j, in order. */
template <int D, int KIND>
__global__ void reduce_parts_kernel(int64_t n_out, int S, const typename dt<D>::T *part,
                                    typename dt<D>::T *out, int mean, int64_t count)
{
    typedef reducer<D, KIND> R;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < n_out; j += stride) {
        typename dt<D>::T acc = R::identity();
        for (int s = 0; s < S; s++)
            acc = R::combine(acc, part[s * n_out + j]);
        out[j] = R::finish(acc, mean, count);
    }
}

/* The launch shape; a function of the geometry only (see the file comment). */
struct red_plan {
    unsigned tx, ty;
    int inner;
    int64_t blocks_x, S, seg_len;
};

#define RED_TARGET_BLOCKS 1024
#define RED_MAX_SEGMENTS 1024
#define RED_MIN_PER_THREAD 32

red_plan red_plan_make(const struct cuda_reduce_geom *g)
{
    red_plan p;
    const int inner = g->n_red > 0 && g->red_strides[g->n_red - 1] == 1;
    p.inner = inner;
    if (!inner) {
        p.tx = 32;
        p.ty = 8;
    } else if (g->count >= 1024) {
        p.tx = 1;
        p.ty = 256;
    } else if (g->count >= 64) {
        p.tx = 8;
        p.ty = 32;
    } else {
        p.tx = 256;
        p.ty = 1;
    }
    p.blocks_x = (g->n_out + p.tx - 1) / p.tx;
    int64_t S = 1;
    if (p.blocks_x < RED_TARGET_BLOCKS) {
        S = (RED_TARGET_BLOCKS + p.blocks_x - 1) / p.blocks_x;
        int64_t most = g->count / ((int64_t)p.ty * RED_MIN_PER_THREAD);
        if (S > most)
            S = most;
        if (S > RED_MAX_SEGMENTS)
            S = RED_MAX_SEGMENTS;
        if (S < 1)
            S = 1;
    }
    p.seg_len = S > 1 ? (g->count + S - 1) / S : (g->count > 0 ? g->count : 1);
    p.S = S > 1 ? (g->count + p.seg_len - 1) / p.seg_len : 1;
    return p;
}

template <int D, int KIND>
cudaError_t reduce_run(cudaStream_t s, int mean, const struct cuda_reduce_geom *g, const void *x,
                       void *y, void *scratch)
{
    typedef typename dt<D>::T T;
    if (!g)
        return cudaSuccess;
    if (g->n_out <= 0)
        return cudaSuccess;
    red_plan p = red_plan_make(g);
    if (p.blocks_x > 0x7fffffff)
        return cudaErrorInvalidConfiguration;
    dim3 grid((unsigned)p.blocks_x, (unsigned)p.S), block(p.tx * p.ty);
    size_t smem = (size_t)p.tx * p.ty * sizeof(T);
    T *part = p.S > 1 ? (T *)scratch : nullptr;
    if (p.S > 1 && !scratch)
        return cudaErrorInvalidValue;
    int64_t in_n = g->count;
    for (int d = 0; d < g->n_kept; d++)
        in_n *= g->kept_dims[d];
    if (in_n <= INT32_MAX && (int64_t)p.S * g->n_out <= INT32_MAX)
        reduce_kernel<D, KIND, uint32_t><<<grid, block, smem, s>>>(
            red_geom_convert<uint32_t>(g), (const T *)x, (T *)y, part, (uint32_t)p.seg_len,
            p.tx, p.ty, p.inner, mean);
    else
        reduce_kernel<D, KIND, int64_t><<<grid, block, smem, s>>>(
            red_geom_convert<int64_t>(g), (const T *)x, (T *)y, part, p.seg_len, p.tx, p.ty,
            p.inner, mean);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess || p.S == 1)
        return e;
    reduce_parts_kernel<D, KIND><<<ew_blocks(g->n_out, EW_THREADS), EW_THREADS, 0, s>>>(
        g->n_out, (int)p.S, part, (T *)y, mean, g->count);
    return cudaGetLastError();
}

/* ---- ReduceSelectGrad -------------------------------------------------------- */

struct select_geom {
    int rank;
    int64_t numel;
    int64_t dims[CUDA_EW_MAX_RANK], y_st[CUDA_EW_MAX_RANK];
};

__device__ inline int64_t select_out(const select_geom &g, int64_t i)
{
    int64_t o = 0;
    for (int d = g.rank - 1; d >= 0; d--) {
        int64_t q = i / g.dims[d];
        o += (i - q * g.dims[d]) * g.y_st[d];
        i = q;
    }
    return o;
}

/* first[o] = the smallest flat index i of group o with x[i] equal to y[o]
 * (NaN matching NaN). An integer minimum: the same whatever the order. */
template <typename T>
__global__ void select_first_kernel(select_geom g, const T *x, const T *y,
                                    unsigned long long *first)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.numel; i += stride) {
        const int64_t o = select_out(g, i);
        const T v = x[i], w = y[o];
        if (v == w || (v != v && w != w))
            atomicMin(first + o, (unsigned long long)i);
    }
}

template <typename T>
__global__ void select_write_kernel(select_geom g, const T *dy, const unsigned long long *first,
                                    T *dx)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < g.numel; i += stride) {
        const int64_t o = select_out(g, i);
        dx[i] = first[o] == (unsigned long long)i ? dy[o] : (T)0;
    }
}

#define DS_REDUCE (DS_NUMERIC | DS_BOOL)

} // namespace

extern "C" size_t cuda_reduce_scratch_bytes(int dtype, const struct cuda_reduce_geom *g)
{
    if (g->n_out <= 0)
        return 0;
    red_plan p = red_plan_make(g);
    return p.S > 1 ? (size_t)p.S * (size_t)g->n_out * ew_dtype_bytes(dtype) : 0;
}

extern "C" cudaError_t cuda_reduce_launch(cudaStream_t stream, int kind, int mean, int dtype,
                                          const struct cuda_reduce_geom *g, const void *x, void *y,
                                          void *scratch)
{
    if (dtype == ONNX_DTYPE_BOOL && kind == CUDA_REDUCE_SUM)
        return cudaErrorNotSupported;
    return dtype_visit<DS_REDUCE>(dtype, [&](auto tag) -> cudaError_t {
        constexpr int D = decltype(tag)::value;
        switch (kind) {
        case CUDA_REDUCE_SUM: return reduce_run<D, CUDA_REDUCE_SUM>(stream, mean, g, x, y, scratch);
        case CUDA_REDUCE_MAX: return reduce_run<D, CUDA_REDUCE_MAX>(stream, mean, g, x, y, scratch);
        case CUDA_REDUCE_MIN: return reduce_run<D, CUDA_REDUCE_MIN>(stream, mean, g, x, y, scratch);
        default: return cudaErrorNotSupported;
        }
    });
}

extern "C" cudaError_t cuda_select_grad_launch(cudaStream_t stream, int dtype, int rank,
                                               const int64_t *dims, const int64_t *y_strides,
                                               int64_t n_out, const void *x, const void *y,
                                               const void *dy, void *dx,
                                               unsigned long long *first)
{
    return dtype_visit<DS_FLOATS>(dtype, [&](auto tag) -> cudaError_t {
        typedef typename dt<decltype(tag)::value>::T T;
        select_geom g;
        memset(&g, 0, sizeof g);
        g.rank = rank;
        g.numel = 1;
        for (int d = 0; d < rank; d++) {
            g.dims[d] = dims[d];
            g.y_st[d] = y_strides[d];
            g.numel *= dims[d];
        }
        if (g.numel <= 0 || n_out <= 0)
            return cudaSuccess;
        cudaError_t e = cudaMemsetAsync(first, 0xff, (size_t)n_out * sizeof *first, stream);
        if (e != cudaSuccess)
            return e;
        const unsigned blocks = ew_blocks(g.numel, EW_THREADS);
        select_first_kernel<T><<<blocks, EW_THREADS, 0, stream>>>(g, (const T *)x, (const T *)y,
                                                                  first);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return e;
        select_write_kernel<T><<<blocks, EW_THREADS, 0, stream>>>(g, (const T *)dy, first,
                                                                  (T *)dx);
        return cudaGetLastError();
    });
}
