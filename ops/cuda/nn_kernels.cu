/* ops/cuda/nn_kernels.cu — our own CUDA kernels of the nn family; see
 * nn-kernels.h for what each computes.
 *
 * Determinism: no atomics. Reductions run in a fixed tree (warp butterflies
 * and fixed shared-memory sums) over a split of the data that depends on the
 * shapes only, so a recomputation reproduces every bit. Pooling gradients
 * gather instead of scatter: each input position sums, in output order, the
 * contributions of the windows that cover it — the order the CPU loops add
 * them in.
 *
 * Elementwise kernels use grid-stride loops over int64 indices; the batch
 * normalization sums divide flat indices in 32 bits when the tensor allows
 * (64-bit division would make those passes compute-bound): below 2^31
 * elements, so that no index sum can wrap. */
#include <cfloat>
#include <cstdint>

#include "ops/cuda/nn-kernels.h"

#define NN_THREADS 256
#define NN_MAX_BLOCKS (1 << 20)

/* enum onnx_dtype values (onnx/onnx.h is C and not needed here otherwise) */
#define NN_DTYPE_FLOAT 1
#define NN_DTYPE_UINT8 2
#define NN_DTYPE_INT8 3

static unsigned nn_blocks(int64_t n, int threads = NN_THREADS)
{
    int64_t b = (n + threads - 1) / threads;
    if (b < 1)
        b = 1;
    return (unsigned)(b > NN_MAX_BLOCKS ? NN_MAX_BLOCKS : b);
}

#define GRID_STRIDE(i, n)                                                              \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);          \
         i += (int64_t)gridDim.x * blockDim.x)

/* ---- reductions ------------------------------------------------------------ */

/* Butterfly sum over the 32 lanes: every lane ends with the same value
 * (each step adds the same two operands, in either order). */
template <typename T>
__device__ __forceinline__ T warp_sum(T v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Sum over a block of NN_THREADS threads; every thread gets the result.
 * `sh` holds NN_THREADS / 32 values; callers may reuse it right after. */
template <typename T>
__device__ __forceinline__ T block_sum(T v, T *sh)
{
    v = warp_sum(v);
    int w = threadIdx.x >> 5;
    if ((threadIdx.x & 31) == 0)
        sh[w] = v;
    __syncthreads();
    T s = sh[0];
    for (int i = 1; i < NN_THREADS / 32; i++)
        s += sh[i];
    __syncthreads();
    return s;
}

/* ---- window copies, bias, channel sums ------------------------------------------ */

__global__ void window_copy_kernel(int64_t total, int64_t s0, int64_t s1, int64_t s2, int64_t d0,
                                   int64_t d1, int64_t d2, int64_t o0, int64_t o1, int64_t o2,
                                   const float *src, float *dst)
{
    GRID_STRIDE(e, total)
    {
        int64_t w = e % d2, t = e / d2;
        int64_t h = t % d1;
        t /= d1;
        int64_t d = t % d0, p = t / d0;
        int64_t sd = d - o0, sh = h - o1, sw = w - o2;
        float v = 0.0f;
        if (sd >= 0 && sd < s0 && sh >= 0 && sh < s1 && sw >= 0 && sw < s2)
            v = src[((p * s0 + sd) * s1 + sh) * s2 + sw];
        dst[e] = v;
    }
}

extern "C" cudaError_t nn_cuda_window_copy(cudaStream_t stream, int64_t planes,
                                           const int64_t src_dims[3], const int64_t dst_dims[3],
                                           const int64_t off[3], const float *src, float *dst)
{
    int64_t total = planes * dst_dims[0] * dst_dims[1] * dst_dims[2];
    if (total > 0)
        window_copy_kernel<<<nn_blocks(total), NN_THREADS, 0, stream>>>(
            total, src_dims[0], src_dims[1], src_dims[2], dst_dims[0], dst_dims[1], dst_dims[2],
            off[0], off[1], off[2], src, dst);
    return cudaGetLastError();
}

/* blockIdx.y strides over the planes, x over a plane's elements */
__global__ void channel_bias_kernel(int64_t planes, int64_t ch, int64_t spatial, const float *b,
                                    float *y)
{
    for (int64_t p = blockIdx.y; p < planes; p += gridDim.y) {
        float bv = b[p % ch];
        float *yp = y + p * spatial;
        for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < spatial;
             i += (int64_t)gridDim.x * blockDim.x)
            yp[i] += bv;
    }
}

extern "C" cudaError_t nn_cuda_channel_bias_add(cudaStream_t stream, int64_t n, int64_t ch,
                                                int64_t spatial, const float *b, float *y)
{
    int64_t planes = n * ch;
    if (planes > 0 && spatial > 0) {
        unsigned gx = nn_blocks(spatial);
        if (gx > 64)
            gx = 64;
        dim3 grid(gx, (unsigned)(planes < 65535 ? planes : 65535));
        channel_bias_kernel<<<grid, NN_THREADS, 0, stream>>>(planes, ch, spatial, b, y);
    }
    return cudaGetLastError();
}

/* Element t of channel c, counting over (batch, spatial): index I is 32-bit
 * when the whole tensor fits (fast division). */
template <typename I>
__device__ __forceinline__ int64_t chan_index(I t, I spatial, I ch, I c)
{
    I b = t / spatial, i = t - b * spatial;
    return (int64_t)((b * ch + c) * spatial + i);
}

template <typename I>
__global__ void channel_sum_kernel(I count, I ch, I spatial, const float *dy, float *db)
{
    __shared__ double sh[NN_THREADS / 32];
    I c = blockIdx.x;
    double acc = 0.0;
    for (I t = threadIdx.x; t < count; t += NN_THREADS)
        acc += dy[chan_index<I>(t, spatial, ch, c)];
    acc = block_sum(acc, sh);
    if (threadIdx.x == 0)
        db[c] = (float)acc;
}

extern "C" cudaError_t nn_cuda_channel_sum(cudaStream_t stream, int64_t n, int64_t ch,
                                           int64_t spatial, const float *dy, float *db)
{
    if (ch <= 0)
        return cudaGetLastError();
    int64_t count = n * spatial;
    if (n * ch * spatial < ((int64_t)1 << 31))
        channel_sum_kernel<uint32_t><<<(unsigned)ch, NN_THREADS, 0, stream>>>(
            (uint32_t)count, (uint32_t)ch, (uint32_t)(spatial ? spatial : 1), dy, db);
    else
        channel_sum_kernel<uint64_t><<<(unsigned)ch, NN_THREADS, 0, stream>>>(
            (uint64_t)count, (uint64_t)ch, (uint64_t)spatial, dy, db);
    return cudaGetLastError();
}

/* ---- pooling --------------------------------------------------------------------- */

/* Taps [*lo, *hi) of a window starting at `start` that fall inside [0, n). */
__device__ __forceinline__ void tap_range(int64_t start, int64_t dil, int64_t k, int64_t n,
                                          int64_t *lo, int64_t *hi)
{
    int64_t a = start >= 0 ? 0 : (-start + dil - 1) / dil;
    int64_t b = start >= n ? 0 : (n - 1 - start) / dil + 1;
    if (b > k)
        b = k;
    if (a > b)
        a = b;
    *lo = a;
    *hi = b;
}

struct win_axis {
    int64_t start, lo, hi;             /* first position; taps inside the input */
    int64_t plo, phi;                  /* taps inside the padded input */
};

__device__ __forceinline__ win_axis window_axis(const nn_cuda_window &w, int j, int64_t o)
{
    win_axis a;
    a.start = o * w.stride[j] - w.pad_lo[j];
    tap_range(a.start, w.dil[j], w.k[j], w.in[j], &a.lo, &a.hi);
    tap_range(a.start + w.pad_lo[j], w.dil[j], w.k[j], w.in[j] + w.pad_lo[j] + w.pad_hi[j],
              &a.plo, &a.phi);
    return a;
}

/* The window of output (od, oh, ow) in its plane: its first maximum in
 * window order (later taps win only when strictly greater), as a position
 * in the plane; -1 when no tap lies inside the input. */
template <typename T>
__device__ int64_t window_argmax(const nn_cuda_window &w, const T *xp, int64_t od, int64_t oh,
                                 int64_t ow, T *best_out)
{
    win_axis ad = window_axis(w, 0, od), ah = window_axis(w, 1, oh), aw = window_axis(w, 2, ow);
    int64_t arg = -1;
    T best = T();
    for (int64_t kd = ad.lo; kd < ad.hi; kd++) {
        int64_t id = ad.start + kd * w.dil[0];
        for (int64_t kh = ah.lo; kh < ah.hi; kh++) {
            int64_t row = (id * w.in[1] + ah.start + kh * w.dil[1]) * w.in[2];
            for (int64_t kw = aw.lo; kw < aw.hi; kw++) {
                int64_t i = row + aw.start + kw * w.dil[2];
                T v = xp[i];
                if (arg < 0 || v > best) {
                    best = v;
                    arg = i;
                }
            }
        }
    }
    *best_out = best;
    return arg;
}

template <typename T>
__global__ void maxpool_fwd_kernel(nn_cuda_window w, const T *x, T *y, int64_t *ind,
                                   int storage_order, T lowest)
{
    const int64_t insz = w.in[0] * w.in[1] * w.in[2], outsz = w.out[0] * w.out[1] * w.out[2];
    GRID_STRIDE(e, w.planes * outsz)
    {
        int64_t p = e / outsz, o = e - p * outsz;
        int64_t ow = o % w.out[2], oh = (o / w.out[2]) % w.out[1], od = o / (w.out[2] * w.out[1]);
        T best;
        int64_t arg = window_argmax(w, x + p * insz, od, oh, ow, &best);
        y[e] = arg < 0 ? lowest : best;
        if (ind) {
            int64_t s = -1;
            if (arg >= 0) {
                int64_t bw = arg % w.in[2], bh = (arg / w.in[2]) % w.in[1];
                int64_t bd = arg / (w.in[2] * w.in[1]);
                s = p * insz + (storage_order ? (bw * w.in[1] + bh) * w.in[0] + bd : arg);
            }
            ind[e] = s;
        }
    }
}

extern "C" cudaError_t nn_cuda_maxpool_forward(cudaStream_t stream, const struct nn_cuda_window *w,
                                               int dtype, const void *x, void *y,
                                               int64_t *indices, int storage_order)
{
    int64_t total = w->planes * w->out[0] * w->out[1] * w->out[2];
    if (total <= 0)
        return cudaGetLastError();
    unsigned blocks = nn_blocks(total);
    switch (dtype) {
    case NN_DTYPE_FLOAT:
        maxpool_fwd_kernel<float><<<blocks, NN_THREADS, 0, stream>>>(
            *w, (const float *)x, (float *)y, indices, storage_order, -FLT_MAX);
        break;
    case NN_DTYPE_INT8:
        maxpool_fwd_kernel<int8_t><<<blocks, NN_THREADS, 0, stream>>>(
            *w, (const int8_t *)x, (int8_t *)y, indices, storage_order, (int8_t)INT8_MIN);
        break;
    case NN_DTYPE_UINT8:
        maxpool_fwd_kernel<uint8_t><<<blocks, NN_THREADS, 0, stream>>>(
            *w, (const uint8_t *)x, (uint8_t *)y, indices, storage_order, (uint8_t)0);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

__device__ __forceinline__ int64_t avg_count(const win_axis &d, const win_axis &h,
                                             const win_axis &w, int include_pad)
{
    return include_pad ? (d.phi - d.plo) * (h.phi - h.plo) * (w.phi - w.plo)
                       : (d.hi - d.lo) * (h.hi - h.lo) * (w.hi - w.lo);
}

__global__ void avgpool_fwd_kernel(nn_cuda_window w, int include_pad, const float *x, float *y)
{
    const int64_t insz = w.in[0] * w.in[1] * w.in[2], outsz = w.out[0] * w.out[1] * w.out[2];
    GRID_STRIDE(e, w.planes * outsz)
    {
        int64_t p = e / outsz, o = e - p * outsz;
        int64_t ow = o % w.out[2], oh = (o / w.out[2]) % w.out[1], od = o / (w.out[2] * w.out[1]);
        win_axis ad = window_axis(w, 0, od), ah = window_axis(w, 1, oh), aw = window_axis(w, 2, ow);
        const float *xp = x + p * insz;
        float sum = 0.0f;
        for (int64_t kd = ad.lo; kd < ad.hi; kd++) {
            int64_t id = ad.start + kd * w.dil[0];
            for (int64_t kh = ah.lo; kh < ah.hi; kh++) {
                const float *row = xp + (id * w.in[1] + ah.start + kh * w.dil[1]) * w.in[2];
                for (int64_t kw = aw.lo; kw < aw.hi; kw++)
                    sum += row[aw.start + kw * w.dil[2]];
            }
        }
        int64_t count = avg_count(ad, ah, aw, include_pad);
        y[e] = count > 0 ? sum / (float)count : 0.0f;
    }
}

extern "C" cudaError_t nn_cuda_avgpool_forward(cudaStream_t stream, const struct nn_cuda_window *w,
                                               int count_include_pad, const float *x, float *y)
{
    int64_t total = w->planes * w->out[0] * w->out[1] * w->out[2];
    if (total > 0)
        avgpool_fwd_kernel<<<nn_blocks(total), NN_THREADS, 0, stream>>>(*w, count_include_pad, x, y);
    return cudaGetLastError();
}

/* Outputs [*lo, *hi] along axis j whose windows may cover input position i
 * (a tap there needs o*s <= i + pad_lo <= o*s + (k-1)*dil). */
__device__ __forceinline__ void covering(const nn_cuda_window &w, int j, int64_t i, int64_t *lo,
                                         int64_t *hi)
{
    int64_t q = i + w.pad_lo[j];
    int64_t a = q - (w.k[j] - 1) * w.dil[j];
    *lo = a <= 0 ? 0 : (a + w.stride[j] - 1) / w.stride[j];
    int64_t b = q / w.stride[j];
    *hi = b < w.out[j] - 1 ? b : w.out[j] - 1;
}

/* Whether output o's window along axis j has a tap exactly at input i. */
__device__ __forceinline__ bool taps(const nn_cuda_window &w, int j, int64_t o, int64_t i)
{
    return (i + w.pad_lo[j] - o * w.stride[j]) % w.dil[j] == 0;
}

template <bool MAX>
__global__ void pool_bwd_kernel(nn_cuda_window w, int include_pad, const float *x, const float *dy,
                                float *dx)
{
    const int64_t insz = w.in[0] * w.in[1] * w.in[2], outsz = w.out[0] * w.out[1] * w.out[2];
    GRID_STRIDE(e, w.planes * insz)
    {
        int64_t p = e / insz, pos = e - p * insz;
        int64_t iw = pos % w.in[2], ih = (pos / w.in[2]) % w.in[1], id = pos / (w.in[2] * w.in[1]);
        int64_t dlo, dhi, hlo, hhi, wlo, whi;
        covering(w, 0, id, &dlo, &dhi);
        covering(w, 1, ih, &hlo, &hhi);
        covering(w, 2, iw, &wlo, &whi);
        const float *dyp = dy + p * outsz;
        float sum = 0.0f;
        for (int64_t od = dlo; od <= dhi; od++) {
            if (!taps(w, 0, od, id))
                continue;
            for (int64_t oh = hlo; oh <= hhi; oh++) {
                if (!taps(w, 1, oh, ih))
                    continue;
                for (int64_t ow = wlo; ow <= whi; ow++) {
                    if (!taps(w, 2, ow, iw))
                        continue;
                    float g = dyp[(od * w.out[1] + oh) * w.out[2] + ow];
                    if (MAX) {
                        float best;
                        if (window_argmax(w, x + p * insz, od, oh, ow, &best) == pos)
                            sum += g;
                    } else {
                        win_axis ad = window_axis(w, 0, od), ah = window_axis(w, 1, oh),
                                 aw = window_axis(w, 2, ow);
                        int64_t count = avg_count(ad, ah, aw, include_pad);
                        if (count > 0)
                            sum += g / (float)count;
                    }
                }
            }
        }
        dx[e] = sum;
    }
}

extern "C" cudaError_t nn_cuda_maxpool_backward(cudaStream_t stream, const struct nn_cuda_window *w,
                                                const float *x, const float *dy, float *dx)
{
    int64_t total = w->planes * w->in[0] * w->in[1] * w->in[2];
    if (total > 0)
        pool_bwd_kernel<true><<<nn_blocks(total), NN_THREADS, 0, stream>>>(*w, 0, x, dy, dx);
    return cudaGetLastError();
}

extern "C" cudaError_t nn_cuda_avgpool_backward(cudaStream_t stream, const struct nn_cuda_window *w,
                                                int count_include_pad, const float *dy, float *dx)
{
    int64_t total = w->planes * w->in[0] * w->in[1] * w->in[2];
    if (total > 0)
        pool_bwd_kernel<false><<<nn_blocks(total), NN_THREADS, 0, stream>>>(
            *w, count_include_pad, nullptr, dy, dx);
    return cudaGetLastError();
}

/* One warp per plane. */
__global__ void global_avgpool_kernel(int64_t planes, int64_t spatial, const float *x, float *y)
{
    int64_t warps = ((int64_t)gridDim.x * blockDim.x) >> 5;
    int lane = threadIdx.x & 31;
    for (int64_t p = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; p < planes; p += warps) {
        const float *xp = x + p * spatial;
        double acc = 0.0;
        for (int64_t i = lane; i < spatial; i += 32)
            acc += xp[i];
        acc = warp_sum(acc);
        if (lane == 0)
            y[p] = spatial ? (float)(acc / (double)spatial) : 0.0f;
    }
}

extern "C" cudaError_t nn_cuda_global_avgpool(cudaStream_t stream, int64_t planes, int64_t spatial,
                                              const float *x, float *y)
{
    if (planes > 0)
        global_avgpool_kernel<<<nn_blocks(planes * 32), NN_THREADS, 0, stream>>>(planes, spatial, x, y);
    return cudaGetLastError();
}

/* ---- batch normalization ------------------------------------------------------------
 * Per channel, its n * spatial elements split into `chunks` ranges; one
 * block per (chunk, channel) sums its range in double and a one-thread-per-
 * channel pass adds the chunks in order. Scratch layout (doubles): batch
 * mean [ch], batch variance [ch], partial sums [ch][chunks][3], then the
 * per-channel float coefficients [ch][4] of the elementwise pass. */

#define BN_CHUNK_ELEMS 16384
#define BN_MAX_CHUNKS 128

extern "C" int nn_cuda_bn_chunks(int64_t n, int64_t spatial)
{
    int64_t c = (n * spatial + BN_CHUNK_ELEMS - 1) / BN_CHUNK_ELEMS;
    return (int)(c < 1 ? 1 : c > BN_MAX_CHUNKS ? BN_MAX_CHUNKS : c);
}

extern "C" size_t nn_cuda_bn_scratch_bytes(int64_t n, int64_t ch, int64_t spatial)
{
    size_t chunks = (size_t)nn_cuda_bn_chunks(n, spatial);
    return sizeof(double) * (size_t)ch * (2 + 3 * chunks) + sizeof(float) * 4 * (size_t)ch;
}

struct bn_layout {
    double *mean, *var, *part;
    float *coef;
    int chunks;
};

static bn_layout bn_layout_of(void *scratch, int64_t n, int64_t ch, int64_t spatial)
{
    bn_layout l;
    l.chunks = nn_cuda_bn_chunks(n, spatial);
    l.mean = (double *)scratch;
    l.var = l.mean + ch;
    l.part = l.var + ch;
    l.coef = (float *)(l.part + (size_t)ch * 3 * l.chunks);
    return l;
}

enum bn_pass { BN_SUM_X = 0, BN_SQ_DEV, BN_GRAD };

/* mu: the batch mean (double, mu_d) or the given mean (float, mu_f), as the
 * float the CPU kernel centres with. */
template <typename I, int PASS>
__global__ void bn_partial_kernel(I count, I ch, I spatial, int chunks, const float *x,
                                  const float *dy, const double *mu_d, const float *mu_f,
                                  double *part)
{
    __shared__ double sh[NN_THREADS / 32];
    I c = blockIdx.x;
    I per = (count + chunks - 1) / chunks;
    I t0 = per * blockIdx.y, t1 = t0 + per < count ? t0 + per : count;
    float mu = PASS == BN_SUM_X ? 0.0f : mu_d ? (float)mu_d[c] : mu_f[c];
    double a0 = 0.0, a1 = 0.0, a2 = 0.0;
    for (I t = t0 + threadIdx.x; t < t1; t += NN_THREADS) {
        int64_t k = chan_index<I>(t, spatial, ch, c);
        float v = x[k];
        if (PASS == BN_SUM_X) {
            a0 += v;
        } else {
            float d = v - mu;
            a0 += d * d;
            if (PASS == BN_GRAD) {
                float g = dy[k];
                a1 += g;
                a2 += g * d;
            }
        }
    }
    double *out = part + ((size_t)c * chunks + blockIdx.y) * 3;
    a0 = block_sum(a0, sh);
    if (PASS == BN_GRAD) {
        a1 = block_sum(a1, sh);
        a2 = block_sum(a2, sh);
    }
    if (threadIdx.x == 0) {
        out[0] = a0;
        out[1] = a1;
        out[2] = a2;
    }
}

template <int PASS>
static void bn_partial(cudaStream_t stream, int64_t n, int64_t ch, int64_t spatial, int chunks,
                       const float *x, const float *dy, const double *mu_d, const float *mu_f,
                       double *part)
{
    dim3 grid((unsigned)ch, (unsigned)chunks);   /* channels may exceed gridDim.y's 65535 */
    int64_t count = n * spatial;
    if (n * ch * spatial < ((int64_t)1 << 31))
        bn_partial_kernel<uint32_t, PASS><<<grid, NN_THREADS, 0, stream>>>(
            (uint32_t)count, (uint32_t)ch, (uint32_t)spatial, chunks, x, dy, mu_d, mu_f, part);
    else
        bn_partial_kernel<uint64_t, PASS><<<grid, NN_THREADS, 0, stream>>>(
            (uint64_t)count, (uint64_t)ch, (uint64_t)spatial, chunks, x, dy, mu_d, mu_f, part);
}

/* The chunks of channel c added in order; component j of 3. */
__device__ __forceinline__ double bn_chunk_sum(const double *part, int64_t c, int chunks, int j)
{
    double s = 0.0;
    for (int k = 0; k < chunks; k++)
        s += part[((size_t)c * chunks + k) * 3 + j];
    return s;
}

/* After BN_SUM_X: the mean. After BN_SQ_DEV: the variance and y = x * a + b's
 * coefficients, a = scale / sqrt(var + eps), b = bias - mean * a. */
__global__ void bn_finish_kernel(int pass, int64_t ch, double count, int chunks, bn_layout l,
                                 const float *scale, const float *bias, float eps)
{
    GRID_STRIDE(c, ch)
    {
        if (pass == BN_SUM_X) {
            double s = bn_chunk_sum(l.part, c, chunks, 0);
            l.mean[c] = count > 0 ? s / count : 0.0;
        } else {
            double q = bn_chunk_sum(l.part, c, chunks, 0);
            double v = count > 0 ? q / count : 0.0;
            l.var[c] = v;
            float a = (float)((double)scale[c] / sqrt(v + (double)eps));
            l.coef[4 * c] = a;
            l.coef[4 * c + 1] = (float)((double)bias[c] - l.mean[c] * (double)a);
        }
    }
}

/* y = x * coef[0] + coef[1] per channel (coef from the scratch or, for
 * inference, computed here from the given statistics). */
__global__ void bn_apply_kernel(int64_t planes, int64_t ch, int64_t spatial, const float *x,
                                const float *coef, const float *scale, const float *bias,
                                const float *mean, const float *var, float eps, float *y)
{
    for (int64_t p = blockIdx.y; p < planes; p += gridDim.y) {
        int64_t c = p % ch;
        float a, b;
        if (coef) {
            a = coef[4 * c];
            b = coef[4 * c + 1];
        } else {
            a = scale[c] / sqrtf(var[c] + eps);
            b = bias[c] - mean[c] * a;
        }
        const float *xp = x + p * spatial;
        float *yp = y + p * spatial;
        for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < spatial;
             i += (int64_t)gridDim.x * blockDim.x)
            yp[i] = xp[i] * a + b;
    }
}

static dim3 plane_grid(int64_t planes, int64_t spatial)
{
    unsigned gx = nn_blocks(spatial);
    if (gx > 64)
        gx = 64;
    return dim3(gx, (unsigned)(planes < 65535 ? planes : 65535));
}

extern "C" cudaError_t nn_cuda_bn_inference(cudaStream_t stream, int64_t n, int64_t ch,
                                            int64_t spatial, const float *x, const float *scale,
                                            const float *bias, const float *mean, const float *var,
                                            float eps, float *y)
{
    if (n * ch * spatial > 0)
        bn_apply_kernel<<<plane_grid(n * ch, spatial), NN_THREADS, 0, stream>>>(
            n * ch, ch, spatial, x, nullptr, scale, bias, mean, var, eps, y);
    return cudaGetLastError();
}

extern "C" cudaError_t nn_cuda_bn_training(cudaStream_t stream, int64_t n, int64_t ch,
                                           int64_t spatial, const float *x, const float *scale,
                                           const float *bias, float eps, float *y, void *scratch)
{
    if (ch <= 0)
        return cudaGetLastError();
    bn_layout l = bn_layout_of(scratch, n, ch, spatial);
    double count = (double)n * (double)spatial;
    unsigned fb = nn_blocks(ch);
    bn_partial<BN_SUM_X>(stream, n, ch, spatial, l.chunks, x, nullptr, nullptr, nullptr, l.part);
    bn_finish_kernel<<<fb, NN_THREADS, 0, stream>>>(BN_SUM_X, ch, count, l.chunks, l, scale, bias, eps);
    bn_partial<BN_SQ_DEV>(stream, n, ch, spatial, l.chunks, x, nullptr, l.mean, nullptr, l.part);
    bn_finish_kernel<<<fb, NN_THREADS, 0, stream>>>(BN_SQ_DEV, ch, count, l.chunks, l, scale, bias, eps);
    if (n * spatial > 0)
        bn_apply_kernel<<<plane_grid(n * ch, spatial), NN_THREADS, 0, stream>>>(
            n * ch, ch, spatial, x, l.coef, nullptr, nullptr, nullptr, nullptr, eps, y);
    return cudaGetLastError();
}

__global__ void bn_stat_kernel(int kind, int64_t ch, const double *mean, const double *var,
                               const float *in, float mom, double unbias, float *out)
{
    GRID_STRIDE(c, ch)
    {
        switch (kind) {
        case 1: out[c] = in[c] * mom + (float)mean[c] * (1.0f - mom); break;
        case 2: out[c] = in[c] * mom + (float)var[c] * (1.0f - mom); break;
        case 3: out[c] = (float)mean[c]; break;
        case 4: out[c] = (float)var[c]; break;
        case 5:
            out[c] = (float)((double)mom * (double)in[c] + (1.0 - (double)mom) * (double)(float)mean[c]);
            break;
        default:
            out[c] = (float)((double)mom * (double)in[c]
                             + (1.0 - (double)mom) * (double)(float)var[c] * unbias);
            break;
        }
    }
}

extern "C" cudaError_t nn_cuda_bn_stat_out(cudaStream_t stream, int kind, int64_t ch,
                                           const void *scratch, const float *in, float momentum,
                                           double unbias, float *out)
{
    const double *mean = (const double *)scratch, *var = mean + ch;
    if (ch > 0)
        bn_stat_kernel<<<nn_blocks(ch), NN_THREADS, 0, stream>>>(kind, ch, mean, var, in, momentum,
                                                                 unbias, out);
    return cudaGetLastError();
}

/* BatchNormGrad's per-channel results from the BN_GRAD sums: dscale, dbias
 * and dx = fa * dy + fb * (x - mu) + fd's coefficients (ops/batch_norm.c). */
__global__ void bn_grad_finish_kernel(int64_t ch, double count, int batch, bn_layout l,
                                      const float *scale, const float *mean, const float *var,
                                      float eps, float *dscale, float *dbias)
{
    GRID_STRIDE(c, ch)
    {
        double sq = bn_chunk_sum(l.part, c, l.chunks, 0);
        double sdy = bn_chunk_sum(l.part, c, l.chunks, 1);
        double sdyx = bn_chunk_sum(l.part, c, l.chunks, 2);
        double mu = batch ? l.mean[c] : (double)mean[c];
        double v = batch ? (count > 0 ? sq / count : 0.0) : (double)var[c];
        double inv = 1.0 / sqrt(v + (double)eps);
        sdyx *= inv;
        if (dscale)
            dscale[c] = (float)sdyx;
        if (dbias)
            dbias[c] = (float)sdy;
        double k = (double)scale[c] * inv, bx = 0.0, d0 = 0.0;
        if (batch && count > 0) {
            bx = -k * inv * sdyx / count;
            d0 = -k * sdy / count;
        }
        l.coef[4 * c] = (float)k;
        l.coef[4 * c + 1] = (float)bx;
        l.coef[4 * c + 2] = (float)d0;
        l.coef[4 * c + 3] = (float)mu;
    }
}

__global__ void bn_grad_apply_kernel(int64_t planes, int64_t ch, int64_t spatial, const float *dy,
                                     const float *x, const float *coef, float *dx)
{
    for (int64_t p = blockIdx.y; p < planes; p += gridDim.y) {
        const float *cf = coef + 4 * (p % ch);
        float fa = cf[0], fb = cf[1], fd = cf[2], fmu = cf[3];
        const float *xp = x + p * spatial, *gp = dy + p * spatial;
        float *op = dx + p * spatial;
        for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < spatial;
             i += (int64_t)gridDim.x * blockDim.x)
            op[i] = fa * gp[i] + fb * (xp[i] - fmu) + fd;
    }
}

extern "C" cudaError_t nn_cuda_bn_backward(cudaStream_t stream, int64_t n, int64_t ch,
                                           int64_t spatial, const float *dy, const float *x,
                                           const float *scale, const float *mean, const float *var,
                                           float eps, int batch, float *dx, float *dscale,
                                           float *dbias, void *scratch)
{
    if (ch <= 0)
        return cudaGetLastError();
    bn_layout l = bn_layout_of(scratch, n, ch, spatial);
    double count = (double)n * (double)spatial;
    unsigned fb = nn_blocks(ch);
    if (batch) {
        bn_partial<BN_SUM_X>(stream, n, ch, spatial, l.chunks, x, nullptr, nullptr, nullptr, l.part);
        bn_finish_kernel<<<fb, NN_THREADS, 0, stream>>>(BN_SUM_X, ch, count, l.chunks, l, scale,
                                                        nullptr, eps);
    }
    bn_partial<BN_GRAD>(stream, n, ch, spatial, l.chunks, x, dy, batch ? l.mean : nullptr,
                        batch ? nullptr : mean, l.part);
    bn_grad_finish_kernel<<<fb, NN_THREADS, 0, stream>>>(ch, count, batch, l, scale, mean, var, eps,
                                                         dscale, dbias);
    if (n * spatial > 0)
        bn_grad_apply_kernel<<<plane_grid(n * ch, spatial), NN_THREADS, 0, stream>>>(
            n * ch, ch, spatial, dy, x, l.coef, dx);
    return cudaGetLastError();
}

/* ---- layer normalization ---------------------------------------------------------------- */

struct bcast_dims {
    int64_t dims[8], strides[8];
};

__global__ void broadcast_expand_kernel(int rank, bcast_dims d, int64_t n, const float *src,
                                        float *dst)
{
    GRID_STRIDE(i, n)
    {
        int64_t rem = i, off = 0;
        for (int k = rank - 1; k >= 0; k--) {
            off += (rem % d.dims[k]) * d.strides[k];
            rem /= d.dims[k];
        }
        dst[i] = src[off];
    }
}

extern "C" cudaError_t nn_cuda_broadcast_expand(cudaStream_t stream, int rank, const int64_t *dims,
                                                const int64_t *strides, int64_t n, const float *src,
                                                float *dst)
{
    if (rank < 0 || rank > 8)
        return cudaErrorInvalidValue;
    bcast_dims d;
    for (int k = 0; k < rank; k++) {
        d.dims[k] = dims[k];
        d.strides[k] = strides[k];
    }
    if (n > 0)
        broadcast_expand_kernel<<<nn_blocks(n), NN_THREADS, 0, stream>>>(rank, d, n, src, dst);
    return cudaGetLastError();
}

/* Sum over the TPR threads of a row: a warp (TPR 32, rows never share a
 * warp) or the whole block (TPR NN_THREADS). */
template <int TPR>
__device__ __forceinline__ float row_sum(float v, float *sh)
{
    if (TPR == 32)
        return warp_sum(v);
    return block_sum(v, sh);
}

/* Rows of TPR threads each; a block holds NN_THREADS / TPR rows. The loop
 * bound is uniform over the threads of a row (block_sum synchronises). */
template <int TPR>
__global__ void ln_fwd_kernel(int64_t rows, int64_t cols, const float *x, const float *scale,
                              const float *bias, float eps, float *y, float *mean, float *inv_std)
{
    __shared__ float sh[NN_THREADS / 32];
    const int rpb = NN_THREADS / TPR, lane = threadIdx.x % TPR;
    for (int64_t r = (int64_t)blockIdx.x * rpb + threadIdx.x / TPR; r < rows;
         r += (int64_t)gridDim.x * rpb) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float s = 0.0f;
        for (int64_t j = lane; j < cols; j += TPR)
            s += xr[j];
        s = row_sum<TPR>(s, sh);
        float mu = cols ? s / (float)cols : 0.0f;
        float q = 0.0f;
        for (int64_t j = lane; j < cols; j += TPR) {
            float d = xr[j] - mu;
            q += d * d;
        }
        q = row_sum<TPR>(q, sh);
        float var = cols ? q / (float)cols : 0.0f;
        float iv = 1.0f / sqrtf(var + eps);
        for (int64_t j = lane; j < cols; j += TPR) {
            float v = (xr[j] - mu) * iv * scale[j];
            yr[j] = bias ? v + bias[j] : v;
        }
        if (lane == 0) {
            if (mean)
                mean[r] = mu;
            if (inv_std)
                inv_std[r] = iv;
        }
    }
}

/* Rows per block for the 256-thread variant is 1; TPR 32 when rows are short. */
#define LN_BLOCK_ROW_MIN_COLS 1024

extern "C" cudaError_t nn_cuda_ln_forward(cudaStream_t stream, int64_t rows, int64_t cols,
                                          const float *x, const float *scale, const float *bias,
                                          float eps, float *y, float *mean, float *inv_std)
{
    if (rows <= 0)
        return cudaGetLastError();
    if (cols < LN_BLOCK_ROW_MIN_COLS)
        ln_fwd_kernel<32><<<nn_blocks(rows * 32), NN_THREADS, 0, stream>>>(
            rows, cols, x, scale, bias, eps, y, mean, inv_std);
    else
        ln_fwd_kernel<NN_THREADS><<<nn_blocks(rows * NN_THREADS), NN_THREADS, 0, stream>>>(
            rows, cols, x, scale, bias, eps, y, mean, inv_std);
    return cudaGetLastError();
}

#define LN_CHUNK_ROWS 128
#define LN_MAX_CHUNKS 256
#define LN_COL_TILE 32
#define LN_ROW_THREADS 8

extern "C" int nn_cuda_ln_row_chunks(int64_t rows)
{
    int64_t c = (rows + LN_CHUNK_ROWS - 1) / LN_CHUNK_ROWS;
    return (int)(c < 1 ? 1 : c > LN_MAX_CHUNKS ? LN_MAX_CHUNKS : c);
}

extern "C" size_t nn_cuda_ln_scratch_bytes(int64_t rows, int64_t cols)
{
    return sizeof(float) * (size_t)(2 * rows + 2 * (int64_t)nn_cuda_ln_row_chunks(rows) * cols);
}

/* dx per row (the forward's statistics recomputed and kept in mean/inv for
 * the column sums). */
template <int TPR>
__global__ void ln_bwd_rows_kernel(int64_t rows, int64_t cols, const float *dy, const float *x,
                                   const float *scale, float eps, float *dx, float *mean, float *inv)
{
    __shared__ float sh[NN_THREADS / 32];
    const int rpb = NN_THREADS / TPR, lane = threadIdx.x % TPR;
    for (int64_t r = (int64_t)blockIdx.x * rpb + threadIdx.x / TPR; r < rows;
         r += (int64_t)gridDim.x * rpb) {
        const float *xr = x + r * cols, *gr = dy + r * cols;
        float *dr = dx + r * cols;
        float s = 0.0f;
        for (int64_t j = lane; j < cols; j += TPR)
            s += xr[j];
        s = row_sum<TPR>(s, sh);
        float mu = cols ? s / (float)cols : 0.0f;
        float q = 0.0f;
        for (int64_t j = lane; j < cols; j += TPR) {
            float d = xr[j] - mu;
            q += d * d;
        }
        q = row_sum<TPR>(q, sh);
        float var = cols ? q / (float)cols : 0.0f;
        float iv = 1.0f / sqrtf(var + eps);
        float s1 = 0.0f, s2 = 0.0f;
        for (int64_t j = lane; j < cols; j += TPR) {
            float g = gr[j] * scale[j];
            s1 += g;
            s2 += g * (xr[j] - mu);
        }
        s1 = row_sum<TPR>(s1, sh);
        s2 = row_sum<TPR>(s2, sh);
        float m1 = cols ? s1 / (float)cols : 0.0f, m2 = cols ? s2 * iv / (float)cols : 0.0f;
        for (int64_t j = lane; j < cols; j += TPR) {
            float xh = (xr[j] - mu) * iv;
            dr[j] = iv * (gr[j] * scale[j] - m1 - xh * m2);
        }
        if (lane == 0) {
            mean[r] = mu;
            inv[r] = iv;
        }
    }
}

/* Column sums over one chunk of rows: a tile of LN_COL_TILE columns, the
 * chunk's rows split over LN_ROW_THREADS thread rows, combined in order. */
__global__ void ln_bwd_cols_kernel(int64_t rows, int64_t cols, int chunks, const float *dy,
                                   const float *x, const float *mean, const float *inv, float *part)
{
    __shared__ float ss[LN_ROW_THREADS][LN_COL_TILE + 1], sb[LN_ROW_THREADS][LN_COL_TILE + 1];
    int64_t j = (int64_t)blockIdx.x * LN_COL_TILE + threadIdx.x;
    int64_t per = (rows + chunks - 1) / chunks;
    int64_t r0 = per * blockIdx.y, r1 = r0 + per < rows ? r0 + per : rows;
    float as = 0.0f, ab = 0.0f;
    if (j < cols)
        for (int64_t r = r0 + threadIdx.y; r < r1; r += LN_ROW_THREADS) {
            float g = dy[r * cols + j];
            as += g * ((x[r * cols + j] - mean[r]) * inv[r]);
            ab += g;
        }
    ss[threadIdx.y][threadIdx.x] = as;
    sb[threadIdx.y][threadIdx.x] = ab;
    __syncthreads();
    if (threadIdx.y == 0 && j < cols) {
        float ts = ss[0][threadIdx.x], tb = sb[0][threadIdx.x];
        for (int k = 1; k < LN_ROW_THREADS; k++) {
            ts += ss[k][threadIdx.x];
            tb += sb[k][threadIdx.x];
        }
        part[(int64_t)blockIdx.y * 2 * cols + j] = ts;
        part[((int64_t)blockIdx.y * 2 + 1) * cols + j] = tb;
    }
}

__global__ void ln_bwd_cols_finish_kernel(int64_t cols, int chunks, const float *part,
                                          float *dscale, float *dbias)
{
    GRID_STRIDE(j, cols)
    {
        float ts = 0.0f, tb = 0.0f;
        for (int k = 0; k < chunks; k++) {
            ts += part[(int64_t)k * 2 * cols + j];
            tb += part[((int64_t)k * 2 + 1) * cols + j];
        }
        if (dscale)
            dscale[j] = ts;
        if (dbias)
            dbias[j] = tb;
    }
}

extern "C" cudaError_t nn_cuda_ln_backward(cudaStream_t stream, int64_t rows, int64_t cols,
                                           const float *dy, const float *x, const float *scale,
                                           float eps, float *dx, float *dscale, float *dbias,
                                           void *scratch)
{
    float *mean = (float *)scratch, *inv = mean + rows, *part = inv + rows;
    if (rows > 0) {
        if (cols < LN_BLOCK_ROW_MIN_COLS)
            ln_bwd_rows_kernel<32><<<nn_blocks(rows * 32), NN_THREADS, 0, stream>>>(
                rows, cols, dy, x, scale, eps, dx, mean, inv);
        else
            ln_bwd_rows_kernel<NN_THREADS><<<nn_blocks(rows * NN_THREADS), NN_THREADS, 0, stream>>>(
                rows, cols, dy, x, scale, eps, dx, mean, inv);
    }
    if ((dscale || dbias) && cols > 0) {
        int chunks = nn_cuda_ln_row_chunks(rows);
        if (rows > 0) {
            int64_t tiles = (cols + LN_COL_TILE - 1) / LN_COL_TILE;
            if (tiles > 0x7fffffff)
                return cudaErrorInvalidValue;
            dim3 grid((unsigned)tiles, (unsigned)chunks), block(LN_COL_TILE, LN_ROW_THREADS);
            ln_bwd_cols_kernel<<<grid, block, 0, stream>>>(rows, cols, chunks, dy, x, mean, inv, part);
        } else {
            cudaMemsetAsync(part, 0, sizeof(float) * 2 * (size_t)chunks * (size_t)cols, stream);
        }
        ln_bwd_cols_finish_kernel<<<nn_blocks(cols), NN_THREADS, 0, stream>>>(cols, chunks, part,
                                                                             dscale, dbias);
    }
    return cudaGetLastError();
}
