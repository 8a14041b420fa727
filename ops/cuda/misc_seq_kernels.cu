/* ops/cuda/misc_seq_kernels.cu — device code of the misc family's sequence
 * mixers (host code: ops/cuda/misc_seq.c): CausalConvWithState and
 * LinearAttention (ops/causal_conv.c, ops/linear_attention.c) with their
 * gradient kernels, float32, each thread doing what one CPU loop does with
 * the CPU's expressions and summation order:
 *  - CausalConvWithState: one thread per output element (and per
 *    present_state element); its gradient one thread per element of dInput
 *    and dPastState (dz recomputed for the K positions it reads) and one per
 *    (channel, tap) of dWeight, and per channel of dBias, over the batch and
 *    the tokens in the CPU's order;
 *  - LinearAttention: the recurrence is separable by state column, so one
 *    thread per (batch, key/value head, value column) carries its column of
 *    S through the tokens; its gradient sums across columns, so one thread
 *    per (batch, key/value head) runs the CPU's backward walk over states
 *    it recomputes into scratch.
 * No atomics and no thread reads another's result: deterministic. */
#include <stdint.h>

#include <cuda_runtime.h>

#include "ops/cuda/misc-kernels.h"

namespace {

const int SEQ_THREADS = 128;

unsigned seq_blocks(int64_t n)
{
    int64_t b = (n + SEQ_THREADS - 1) / SEQ_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

/* ---- CausalConvWithState ----------------------------------------------------- */

__device__ inline float cc_pad(const float *xr, const float *pr, int64_t k, int64_t i)
{
    return i < k - 1 ? (pr ? pr[i] : 0.0f) : xr[i - (k - 1)];
}

__device__ inline float cc_z(const float *xr, const float *pr, const float *wr, float bias, int64_t k,
                             int64_t t)
{
    float acc = 0.0f;
    for (int64_t j = 0; j < k; j++)
        acc += wr[j] * cc_pad(xr, pr, k, t + j);
    return acc + bias;
}

/* dy * act'(z) at token t of row r (b * C + c). */
__device__ inline float cc_dz(const cuda_causal_conv_args &a, int64_t r, int64_t t)
{
    const int64_t s = a.k - 1, ci = r % a.c;
    float d = a.dy ? a.dy[r * a.len + t] : 0.0f;
    if (a.silu && d != 0.0f) {
        const float *xr = a.x + r * a.len, *pr = a.past ? a.past + r * s : nullptr;
        float z = cc_z(xr, pr, a.w + ci * a.k, a.bias ? a.bias[ci] : 0.0f, a.k, t);
        float sg = 1.0f / (1.0f + expf(-z));
        d *= sg * (1.0f + z * (1.0f - sg));
    }
    return d;
}

__global__ void cc_fwd_kernel(cuda_causal_conv_args a)
{
    const int64_t s = a.k - 1, n = a.b * a.c * (a.len + s);
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        int64_t r = e / (a.len + s), i = e % (a.len + s), ci = r % a.c;
        const float *xr = a.x + r * a.len, *pr = a.past ? a.past + r * s : nullptr;
        if (i < a.len) {
            float z = cc_z(xr, pr, a.w + ci * a.k, a.bias ? a.bias[ci] : 0.0f, a.k, i);
            a.y[r * a.len + i] = a.silu ? z / (1.0f + expf(-z)) : z;
        } else if (a.present) {
            a.present[r * s + (i - a.len)] = cc_pad(xr, pr, a.k, i);
        }
    }
}

/* One thread per element i of the padded row: dPastState for i < K - 1,
 * else dInput. */
__global__ void cc_grad_data_kernel(cuda_causal_conv_args a)
{
    const int64_t s = a.k - 1, n = a.b * a.c * (a.len + s);
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        int64_t r = e / (a.len + s), i = e % (a.len + s), ci = r % a.c;
        const float *wr = a.w + ci * a.k;
        int64_t j0 = i - a.len + 1 > 0 ? i - a.len + 1 : 0, j1 = i < s ? i : s;
        float acc = 0.0f;
        for (int64_t j = j0; j <= j1; j++)
            acc += wr[j] * cc_dz(a, r, i - j);
        if (a.dpresent && i >= a.len)
            acc += a.dpresent[r * s + (i - a.len)];
        if (i < s) {
            if (a.dpast)
                a.dpast[r * s + i] = acc;
        } else if (a.dx) {
            a.dx[r * a.len + (i - s)] = acc;
        }
    }
}

/* One thread per (channel, tap j), and j = K for dBias: sums over the
 * batch, one partial per batch entry, as the CPU. */
__global__ void cc_grad_param_kernel(cuda_causal_conv_args a)
{
    const int64_t s = a.k - 1, n = a.c * (a.k + 1);
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        int64_t ci = e / (a.k + 1), j = e % (a.k + 1);
        if (j == a.k) {
            if (!a.dbias)
                continue;
            float acc = 0.0f;
            for (int64_t bi = 0; bi < a.b; bi++)
                for (int64_t t = 0; t < a.len; t++)
                    acc += cc_dz(a, bi * a.c + ci, t);
            a.dbias[ci] = acc;
            continue;
        }
        if (!a.dw)
            continue;
        float total = 0.0f;
        for (int64_t bi = 0; bi < a.b; bi++) {
            int64_t r = bi * a.c + ci;
            const float *xr = a.x + r * a.len, *pr = a.past ? a.past + r * s : nullptr;
            float acc = 0.0f;
            for (int64_t t = 0; t < a.len; t++)
                acc += cc_dz(a, r, t) * cc_pad(xr, pr, a.k, t + j);
            total += acc;
        }
        a.dw[ci * a.k + j] = total;
    }
}

/* ---- LinearAttention ------------------------------------------------------------- */

struct la_task {
    const cuda_linear_attention_args *a;
    int64_t b, h;
};

__device__ inline const float *la_q(const cuda_linear_attention_args &a, int64_t b, int64_t t, int64_t hq)
{
    return a.q + ((b * a.t + t) * a.hq + hq) * a.dk;
}

__device__ inline const float *la_k(const cuda_linear_attention_args &a, int64_t b, int64_t h, int64_t t)
{
    return a.k + ((b * a.t + t) * a.hkv + h) * a.dk;
}

__device__ inline const float *la_v(const cuda_linear_attention_args &a, int64_t b, int64_t h, int64_t t)
{
    return a.v + ((b * a.t + t) * a.hkv + h) * a.dv;
}

__device__ inline float la_a(const cuda_linear_attention_args &a, int64_t b, int64_t h, int64_t t, int64_t d)
{
    if (!a.gated)
        return 1.0f;
    int64_t row = b * a.t + t;
    return expf(a.decay_per_key ? a.decay[(row * a.hkv + h) * a.dk + d] : a.decay[row * a.hkv + h]);
}

__device__ inline float la_beta(const cuda_linear_attention_args &a, int64_t b, int64_t h, int64_t t)
{
    int64_t row = b * a.t + t;
    return a.beta[a.beta_shared ? row : row * a.hkv + h];
}

/* Column m of one task's state (stride dv) through the tokens. */
__global__ void la_fwd_kernel(cuda_linear_attention_args a)
{
    const int64_t n = a.b * a.hkv * a.dv, group = a.hq / a.hkv, ss = a.dk * a.dv;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += stride) {
        int64_t task = e / a.dv, m = e % a.dv, b = task / a.hkv, h = task % a.hkv;
        float *s = a.state + task * ss + m;
        for (int64_t d = 0; d < a.dk; d++)
            s[d * a.dv] = a.past ? a.past[task * ss + d * a.dv + m] : 0.0f;
        for (int64_t t = 0; t < a.t; t++) {
            const float *kt = la_k(a, b, h, t), *vt = la_v(a, b, h, t);
            if (a.gated)
                for (int64_t d = 0; d < a.dk; d++)
                    s[d * a.dv] *= la_a(a, b, h, t, d);
            float u = vt[m];
            if (a.delta) {
                float r = 0.0f;
                for (int64_t d = 0; d < a.dk; d++)
                    r += s[d * a.dv] * kt[d];
                u = la_beta(a, b, h, t) * (vt[m] - r);
            }
            for (int64_t d = 0; d < a.dk; d++)
                s[d * a.dv] += kt[d] * u;
            for (int64_t j = 0; j < group; j++) {
                int64_t hq = h * group + j;
                const float *qh = la_q(a, b, t, hq);
                float acc = 0.0f;
                for (int64_t d = 0; d < a.dk; d++)
                    acc += qh[d] * s[d * a.dv];
                a.out[((b * a.t + t) * a.hq + hq) * a.dv + m] = a.scale * acc;
            }
        }
    }
}

/* The CPU's backward walk (ops/linear_attention.c, lg_cpu), one thread per
 * task; work holds per task (T + 2) dk dv + 3 dv + 2 dk floats. */
__global__ void la_grad_kernel(cuda_linear_attention_args a, float *work)
{
    const int64_t tasks = a.b * a.hkv, ss = a.dk * a.dv, group = a.hq / a.hkv;
    const int64_t per = (a.t + 2) * ss + 3 * a.dv + 2 * a.dk, dkn = a.dk, dvn = a.dv;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t task = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; task < tasks; task += stride) {
        const int64_t b = task / a.hkv, h = task % a.hkv;
        float *st = work + task * per, *G = st + (a.t + 1) * ss, *u = G + ss, *du = u + a.dv;
        float *dr = du + a.dv, *da = dr + a.dv, *av = da + a.dk;
        for (int64_t i = 0; i < ss; i++)
            st[i] = a.past ? a.past[task * ss + i] : 0.0f;
        for (int64_t t = 0; t < a.t; t++) {
            float *s = st + (t + 1) * ss;
            const float *kt = la_k(a, b, h, t), *vt = la_v(a, b, h, t);
            for (int64_t i = 0; i < ss; i++)
                s[i] = s[i - ss];
            if (a.gated)
                for (int64_t d = 0; d < dkn; d++) {
                    float ad = la_a(a, b, h, t, d);
                    for (int64_t m = 0; m < dvn; m++)
                        s[d * dvn + m] *= ad;
                }
            for (int64_t m = 0; m < dvn; m++)
                u[m] = vt[m];
            if (a.delta) {
                float bt = la_beta(a, b, h, t);
                for (int64_t m = 0; m < dvn; m++) {
                    float r = 0.0f;
                    for (int64_t d = 0; d < dkn; d++)
                        r += s[d * dvn + m] * kt[d];
                    u[m] = bt * (vt[m] - r);
                }
            }
            for (int64_t d = 0; d < dkn; d++)
                for (int64_t m = 0; m < dvn; m++)
                    s[d * dvn + m] += kt[d] * u[m];
        }
        for (int64_t i = 0; i < ss; i++)
            G[i] = a.dstate ? a.dstate[task * ss + i] : 0.0f;
        for (int64_t t = a.t - 1; t >= 0; t--) {
            const float *s1 = st + (t + 1) * ss, *s0 = st + t * ss;
            const float *kt = la_k(a, b, h, t), *vt = la_v(a, b, h, t);
            const int64_t row = b * a.t + t;
            for (int64_t d = 0; d < dkn; d++)
                av[d] = la_a(a, b, h, t, d);
            for (int64_t j = 0; j < group; j++) {
                int64_t hq = h * group + j;
                const float *qh = la_q(a, b, t, hq);
                const float *doh = a.dout ? a.dout + (row * a.hq + hq) * dvn : nullptr;
                float *dqh = a.dq ? a.dq + (row * a.hq + hq) * dkn : nullptr;
                for (int64_t d = 0; d < dkn; d++) {
                    float acc = 0.0f;
                    for (int64_t m = 0; m < dvn; m++) {
                        float dom = doh ? doh[m] : 0.0f;
                        acc += s1[d * dvn + m] * dom;
                        G[d * dvn + m] += a.scale * qh[d] * dom;
                    }
                    if (dqh)
                        dqh[d] = a.scale * acc;
                }
            }
            float bt = a.delta ? la_beta(a, b, h, t) : 1.0f;
            for (int64_t m = 0; m < dvn; m++) {
                float r = 0.0f;
                if (a.delta)
                    for (int64_t d = 0; d < dkn; d++)
                        r += av[d] * s0[d * dvn + m] * kt[d];
                dr[m] = r;
                u[m] = a.delta ? bt * (vt[m] - r) : vt[m];
            }
            for (int64_t m = 0; m < dvn; m++) {
                float acc = 0.0f;
                for (int64_t d = 0; d < dkn; d++)
                    acc += G[d * dvn + m] * kt[d];
                du[m] = acc;
            }
            float *dkt = a.dk_out ? a.dk_out + (row * a.hkv + h) * dkn : nullptr;
            float *dvt = a.dv_out ? a.dv_out + (row * a.hkv + h) * dvn : nullptr;
            for (int64_t d = 0; d < dkn; d++) {
                float acc = 0.0f;
                for (int64_t m = 0; m < dvn; m++)
                    acc += G[d * dvn + m] * u[m];
                da[d] = acc;
            }
            if (a.delta) {
                float db = 0.0f;
                for (int64_t m = 0; m < dvn; m++) {
                    db += du[m] * (vt[m] - dr[m]);
                    if (dvt)
                        dvt[m] = bt * du[m];
                    dr[m] = -bt * du[m];
                }
                if (a.dbeta)
                    a.dbeta[row * a.hkv + h] = db;
                for (int64_t d = 0; d < dkn; d++) {
                    float ad = av[d], acc = 0.0f;
                    for (int64_t m = 0; m < dvn; m++) {
                        acc += ad * s0[d * dvn + m] * dr[m];
                        G[d * dvn + m] += kt[d] * dr[m];
                    }
                    da[d] += acc;
                }
            } else if (dvt) {
                for (int64_t m = 0; m < dvn; m++)
                    dvt[m] = du[m];
            }
            if (dkt)
                for (int64_t d = 0; d < dkn; d++)
                    dkt[d] = da[d];
            if (a.gated) {
                float dsum = 0.0f;
                for (int64_t d = 0; d < dkn; d++) {
                    float ad = av[d], acc = 0.0f;
                    for (int64_t m = 0; m < dvn; m++) {
                        acc += G[d * dvn + m] * s0[d * dvn + m];
                        G[d * dvn + m] *= ad;
                    }
                    if (a.decay_per_key) {
                        if (a.ddecay)
                            a.ddecay[(row * a.hkv + h) * dkn + d] = acc * ad;
                    } else {
                        dsum += acc * ad;
                    }
                }
                if (!a.decay_per_key && a.ddecay)
                    a.ddecay[row * a.hkv + h] = dsum;
            }
        }
        if (a.dpast)
            for (int64_t i = 0; i < ss; i++)
                a.dpast[task * ss + i] = G[i];
    }
}

} // namespace

extern "C" cudaError_t cuda_causal_conv_launch(cudaStream_t stream, const struct cuda_causal_conv_args *a)
{
    const int64_t rows = a->b * a->c, n = rows * (a->len + a->k - 1);
    if (!a->grad) {
        if (n > 0)
            cc_fwd_kernel<<<seq_blocks(n), SEQ_THREADS, 0, stream>>>(*a);
        return cudaGetLastError();
    }
    if (n > 0)
        cc_grad_data_kernel<<<seq_blocks(n), SEQ_THREADS, 0, stream>>>(*a);
    if (a->c > 0)
        cc_grad_param_kernel<<<seq_blocks(a->c * (a->k + 1)), SEQ_THREADS, 0, stream>>>(*a);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_linear_attention_launch(cudaStream_t stream,
                                                    const struct cuda_linear_attention_args *a, float *work)
{
    const int64_t tasks = a->b * a->hkv;
    if (tasks <= 0)
        return cudaSuccess;
    if (!work) {
        if (a->dv > 0)
            la_fwd_kernel<<<seq_blocks(tasks * a->dv), SEQ_THREADS, 0, stream>>>(*a);
        return cudaGetLastError();
    }
    la_grad_kernel<<<seq_blocks(tasks), SEQ_THREADS, 0, stream>>>(*a, work);
    return cudaGetLastError();
}

extern "C" size_t cuda_linear_attention_work_floats(const struct cuda_linear_attention_args *a)
{
    const int64_t ss = a->dk * a->dv;
    return (size_t)(a->b * a->hkv * ((a->t + 2) * ss + 3 * a->dv + 2 * a->dk)) + 1;
}
