/* ops/cuda/attn_kernels.cu — the attn family's CUDA kernels; see
 * attn-kernels.h for what each computes.
 *
 * Determinism: no atomics and no warp shuffles. A score row is one block's:
 * every thread takes a fixed stride of it, then a shared-memory tree of
 * fixed shape combines the partial maxima and sums (so the host emulator,
 * tests/cuda_emu, can run these kernels with plain barriers). */
#include <cmath>
#include <cstdint>

#include "ops/cuda/attn-kernels.h"

#define ATTN_THREADS 256
#define ATTN_MAX_BLOCKS (1 << 16)

static unsigned attn_blocks(int64_t n)
{
    return (unsigned)(n < 1 ? 1 : n > ATTN_MAX_BLOCKS ? ATTN_MAX_BLOCKS : n);
}

static unsigned attn_elem_blocks(int64_t n)
{
    return attn_blocks((n + ATTN_THREADS - 1) / ATTN_THREADS);
}

#define ATTN_GRID_STRIDE(i, n)                                                            \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);           \
         i += (int64_t)gridDim.x * blockDim.x)

/* The block's sum (max when is_max) of v, in every thread; sh holds
 * ATTN_THREADS values and may be reused right after. */
__device__ __forceinline__ float attn_block_reduce(float v, float *sh, bool is_max)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = ATTN_THREADS / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) {
            float o = sh[threadIdx.x + s];
            sh[threadIdx.x] = is_max ? (o > sh[threadIdx.x] ? o : sh[threadIdx.x]) : sh[threadIdx.x] + o;
        }
        __syncthreads();
    }
    float r = sh[0];
    __syncthreads();
    return r;
}

/* ---- rotary embedding ------------------------------------------------------------------- */

/* One thread per (token, head, slot): slots below rd / 2 rotate a pair,
 * the rest copy the values past rd. */
__global__ void rope_kernel(struct attn_cuda_rope g, const float *x, const float *cc, const float *sc,
                            const int64_t *pos, float *y)
{
    const int64_t half = g.rd / 2, slots = half + (g.d - g.rd), total = g.b * g.s * g.h * slots;
    const int64_t pair = g.interleaved ? 1 : half, step = g.interleaved ? 2 : 1;
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        int64_t slot = t % slots, r = t / slots;
        int64_t h = r % g.h, s = (r / g.h) % g.s, b = r / (g.h * g.s);
        const float *xr = x + b * g.sb + s * g.ss + h * g.sh;
        float *yr = y + b * g.sb + s * g.ss + h * g.sh;
        if (slot >= half) {
            int64_t i = g.rd + slot - half;
            yr[i] = xr[i];
            continue;
        }
        int64_t row = pos ? pos[b * g.s + s] : b * g.s + s;
        float x1 = xr[slot * step], x2 = xr[slot * step + pair];
        if (row < 0 || row >= g.npos) {
            yr[slot * step] = yr[slot * step + pair] = NAN;
            continue;
        }
        float c = cc[row * half + slot], sn = sc[row * half + slot];
        yr[slot * step] = c * x1 - sn * x2;
        yr[slot * step + pair] = sn * x1 + c * x2;
    }
}

extern "C" cudaError_t attn_cuda_rope(cudaStream_t stream, const struct attn_cuda_rope *g, const float *x,
                                      const float *cos_cache, const float *sin_cache, const int64_t *pos,
                                      float *y)
{
    int64_t total = g->b * g->s * g->h * (g->rd / 2 + g->d - g->rd);
    if (total > 0)
        rope_kernel<<<attn_elem_blocks(total), ATTN_THREADS, 0, stream>>>(*g, x, cos_cache, sin_cache, pos, y);
    return cudaGetLastError();
}

/* ---- key/value caches ----------------------------------------------------------------- */

__global__ void attn_concat_kernel(int64_t b, int64_t h, int64_t t, int64_t past, int64_t width,
                                   const float *pastv, attn_cuda_layout lp, const float *cur,
                                   attn_cuda_layout lc, float *out)
{
    ATTN_GRID_STRIDE(e, b * h * t * width)
    {
        int64_t w = e % width, s = (e / width) % t, hh = (e / (width * t)) % h, bb = e / (width * t * h);
        out[e] = s < past ? pastv[bb * lp.sb + hh * lp.sh + s * lp.ss + w]
                          : cur[bb * lc.sb + hh * lc.sh + (s - past) * lc.ss + w];
    }
}

extern "C" cudaError_t attn_cuda_concat(cudaStream_t stream, int64_t b, int64_t h, int64_t t, int64_t past,
                                        int64_t width, const float *pastv, struct attn_cuda_layout lp,
                                        const float *cur, struct attn_cuda_layout lc, float *out)
{
    int64_t n = b * h * t * width;
    if (n > 0)
        attn_concat_kernel<<<attn_elem_blocks(n), ATTN_THREADS, 0, stream>>>(b, h, t, past, width, pastv, lp,
                                                                             cur, lc, out);
    return cudaGetLastError();
}

__global__ void attn_split_kernel(int64_t b, int64_t h, int64_t t, int64_t past, int64_t width,
                                  const float *all, float *dpast, attn_cuda_layout lp, float *dcur,
                                  attn_cuda_layout lc)
{
    ATTN_GRID_STRIDE(e, b * h * t * width)
    {
        int64_t w = e % width, s = (e / width) % t, hh = (e / (width * t)) % h, bb = e / (width * t * h);
        if (s < past) {
            if (dpast)
                dpast[bb * lp.sb + hh * lp.sh + s * lp.ss + w] = all[e];
        } else if (dcur) {
            dcur[bb * lc.sb + hh * lc.sh + (s - past) * lc.ss + w] = all[e];
        }
    }
}

extern "C" cudaError_t attn_cuda_split(cudaStream_t stream, int64_t b, int64_t h, int64_t t, int64_t past,
                                       int64_t width, const float *all, float *dpast,
                                       struct attn_cuda_layout lp, float *dcur, struct attn_cuda_layout lc)
{
    int64_t n = b * h * t * width;
    if (n > 0)
        attn_split_kernel<<<attn_elem_blocks(n), ATTN_THREADS, 0, stream>>>(b, h, t, past, width, all, dpast,
                                                                            lp, dcur, lc);
    return cudaGetLastError();
}

/* ---- the softmax of the score rows -------------------------------------------------------- */

/* The additive bias of query i and key j (ops/attention.c: att_bias). */
__device__ float attn_bias(const attn_cuda_rows &r, const void *mask, const int64_t *nonpad, int64_t b,
                           int64_t h, int64_t i, int64_t j)
{
    float bias = 0.0f;
    if (r.mask_len) {
        if (j >= r.mask_len)
            return -INFINITY;
        int64_t off = b * r.m_sb + h * r.m_sh + i * r.m_ss + j;
        if (r.mask_bool) {
            if (!((const uint8_t *)mask)[off])
                return -INFINITY;
        } else {
            bias = ((const float *)mask)[off];
        }
    }
    int64_t np = -1;
    if (nonpad) {
        np = nonpad[b];
        np = np < 0 ? 0 : np > r.t ? r.t : np;
    }
    int64_t offset = r.past ? r.past : nonpad ? np - r.sq : 0;
    int64_t diff = i + offset - j;
    if ((r.is_causal && diff < 0) || (r.left >= 0 && diff > r.left) || (r.right >= 0 && -diff > r.right)
        || (nonpad && j >= np))
        return -INFINITY;
    return bias;
}

__global__ void attn_softmax_kernel(attn_cuda_rows r, const void *mask, const int64_t *nonpad, float *s,
                                    float *capped, float *qk)
{
    __shared__ float sh[ATTN_THREADS];
    const int64_t rows = r.b * r.hq * r.sq, t = r.t;
    const float cap = r.softcap;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        int64_t i = row % r.sq, h = (row / r.sq) % r.hq, b = row / (r.sq * r.hq);
        float *sr = s + row * t, *cr = capped ? capped + row * t : nullptr, *qr = qk ? qk + row * t : nullptr;
        float m = -INFINITY, any = 0.0f;
        for (int64_t j = threadIdx.x; j < t; j += ATTN_THREADS) {
            float raw = sr[j], cv = cap > 0.0f ? cap * tanhf(raw / cap) : raw;
            float bias = attn_bias(r, mask, nonpad, b, h, i, j), z = cv + bias;
            if (cr)
                cr[j] = cv;
            if (qr && r.qk_mode < 3)
                qr[j] = r.qk_mode == 0 ? raw : r.qk_mode == 1 ? cv : z;
            if (bias > -INFINITY)
                any = 1.0f;
            m = z > m ? z : m;
            sr[j] = z;
        }
        m = attn_block_reduce(m, sh, true);
        any = attn_block_reduce(any, sh, true);
        bool masked = any == 0.0f || m == -INFINITY;
        float sum = 0.0f;
        for (int64_t j = threadIdx.x; j < t; j += ATTN_THREADS) {
            float e = masked ? 0.0f : expf(sr[j] - m);
            sr[j] = e;
            sum += e;
        }
        sum = attn_block_reduce(sum, sh, false);
        float inv = masked ? 0.0f : 1.0f / sum;
        for (int64_t j = threadIdx.x; j < t; j += ATTN_THREADS) {
            float p = sr[j] * inv;
            sr[j] = p;
            if (qr && r.qk_mode == 3)
                qr[j] = p;
        }
    }
}

extern "C" cudaError_t attn_cuda_softmax(cudaStream_t stream, const struct attn_cuda_rows *r, const void *mask,
                                         const int64_t *nonpad, float *s, float *capped, float *qk)
{
    int64_t rows = r->b * r->hq * r->sq;
    if (rows > 0 && r->t > 0)
        attn_softmax_kernel<<<attn_blocks(rows), ATTN_THREADS, 0, stream>>>(*r, mask, nonpad, s, capped, qk);
    return cudaGetLastError();
}

__global__ void attn_softmax_grad_kernel(int64_t rows, int64_t t, const float *p, const float *capped,
                                         float softcap, float *dp)
{
    __shared__ float sh[ATTN_THREADS];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const float *pr = p + row * t, *cr = capped ? capped + row * t : nullptr;
        float *dr = dp + row * t;
        float dot = 0.0f;
        for (int64_t j = threadIdx.x; j < t; j += ATTN_THREADS)
            dot += pr[j] * dr[j];
        dot = attn_block_reduce(dot, sh, false);
        for (int64_t j = threadIdx.x; j < t; j += ATTN_THREADS) {
            float dz = pr[j] * (dr[j] - dot);
            if (softcap > 0.0f) {
                float th = cr[j] / softcap;
                dz *= 1.0f - th * th;
            }
            dr[j] = dz;
        }
    }
}

extern "C" cudaError_t attn_cuda_softmax_grad(cudaStream_t stream, int64_t rows, int64_t t, const float *p,
                                              const float *capped, float softcap, float *dp)
{
    if (rows > 0 && t > 0)
        attn_softmax_grad_kernel<<<attn_blocks(rows), ATTN_THREADS, 0, stream>>>(rows, t, p, capped, softcap,
                                                                                 dp);
    return cudaGetLastError();
}
