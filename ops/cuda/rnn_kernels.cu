/* ops/cuda/rnn_kernels.cu — device code of LSTM, GRU and RNN and of their
 * gradients: the per-step gate arithmetic of ops/rnn.c (lstm_step_row,
 * gru_gates_row, gru_update_row, simple_rnn_step_row and the BPTT rows),
 * one thread per (batch row, hidden unit). Every value a thread reads or
 * writes belongs to its own (row, unit) or was made by an earlier launch, so
 * the kernels are deterministic; the GEMMs between them are cuBLAS calls
 * issued by ops/cuda/recurrent.c. See layout-kernels.h for the launchers. */
#include "ops/cuda/layout-kernels.h"

namespace {

const int THREADS = 256;

inline unsigned blocks_for(int64_t n)
{
    int64_t b = (n + THREADS - 1) / THREADS;
    if (b < 1)
        b = 1;
    return (unsigned)(b < (1 << 20) ? b : (1 << 20));
}

#define GRID_LOOP(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)blockDim.x * gridDim.x)

/* rnn_act_eval and rnn_act_grad of ops/rnn-impl.h, on the device. */
__device__ float act_eval(const struct rnn_act &a, float x)
{
    switch (a.kind) {
    case RNN_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case RNN_ACT_TANH: return tanhf(x);
    case RNN_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case RNN_ACT_AFFINE: return a.alpha * x + a.beta;
    case RNN_ACT_LEAKY_RELU: return x >= 0.0f ? x : a.alpha * x;
    case RNN_ACT_THRESHOLDED_RELU: return x > a.alpha ? x : 0.0f;
    case RNN_ACT_SCALED_TANH: return a.alpha * tanhf(a.beta * x);
    case RNN_ACT_HARD_SIGMOID: {
        float v = a.alpha * x + a.beta;
        return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    }
    case RNN_ACT_ELU: return x >= 0.0f ? x : a.alpha * (expf(x) - 1.0f);
    case RNN_ACT_SOFTSIGN: return x / (1.0f + fabsf(x));
    case RNN_ACT_SOFTPLUS: return x > 20.0f ? x : log1pf(expf(x));
    }
    return x;
}

__device__ float act_grad(const struct rnn_act &a, float x)
{
    switch (a.kind) {
    case RNN_ACT_SIGMOID: {
        float s = 1.0f / (1.0f + expf(-x));
        return s * (1.0f - s);
    }
    case RNN_ACT_TANH: {
        float t = tanhf(x);
        return 1.0f - t * t;
    }
    case RNN_ACT_RELU: return x > 0.0f ? 1.0f : 0.0f;
    case RNN_ACT_AFFINE: return a.alpha;
    case RNN_ACT_LEAKY_RELU: return x >= 0.0f ? 1.0f : a.alpha;
    case RNN_ACT_THRESHOLDED_RELU: return x > a.alpha ? 1.0f : 0.0f;
    case RNN_ACT_SCALED_TANH: {
        float t = tanhf(a.beta * x);
        return a.alpha * a.beta * (1.0f - t * t);
    }
    case RNN_ACT_HARD_SIGMOID: {
        float v = a.alpha * x + a.beta;
        return v > 0.0f && v < 1.0f ? a.alpha : 0.0f;
    }
    case RNN_ACT_ELU: return x >= 0.0f ? 1.0f : a.alpha * expf(x);
    case RNN_ACT_SOFTSIGN: {
        float d = 1.0f + fabsf(x);
        return 1.0f / (d * d);
    }
    case RNN_ACT_SOFTPLUS: return x > 20.0f ? 1.0f : 1.0f / (1.0f + expf(-x));
    }
    return 1.0f;
}

__device__ __forceinline__ float clip_to(const struct rnn_dev_step &k, float x)
{
    if (!k.has_clip)
        return x;
    return x < -k.clip ? -k.clip : x > k.clip ? k.clip : x;
}

__device__ __forceinline__ int64_t seq_len(const struct rnn_dev_step &k, int64_t b)
{
    return k.lens ? (int64_t)k.lens[b] : k.seq;
}

/* Time index of batch row b at step s, or -1 when its sequence has ended. */
__device__ __forceinline__ int64_t time_of(const struct rnn_dev_step &k, int64_t s, int64_t b)
{
    int64_t len = seq_len(k, b);
    if (s >= len)
        return -1;
    return k.reverse ? len - 1 - s : s;
}

__device__ __forceinline__ int64_t x_row(const struct rnn_dev_step &k, int64_t t, int64_t b)
{
    return k.layout ? b * k.seq + t : t * k.batch + b;
}

/* Saved arrays are [dirs][seq][batch][width] by real time index. */
__device__ __forceinline__ int64_t saved_row(const struct rnn_dev_step &k, int64_t t, int64_t b, int64_t width)
{
    return (((int64_t)k.dir * k.seq + t) * k.batch + b) * width;
}

__device__ __forceinline__ int64_t state_off(const struct rnn_dev_step &k, int64_t b)
{
    return k.layout ? (b * k.dirs + k.dir) * k.hidden : ((int64_t)k.dir * k.batch + b) * k.hidden;
}

__device__ __forceinline__ int64_t y_off(const struct rnn_dev_step &k, int64_t t, int64_t b)
{
    return k.layout ? ((b * k.seq + t) * k.dirs + k.dir) * k.hidden
                    : ((t * k.dirs + k.dir) * k.batch + b) * k.hidden;
}

/* H_t of row b, unit j: state, saved copy and Y. */
__device__ __forceinline__ void write_h(const struct rnn_dev_step &k, int64_t t, int64_t b, int64_t j, float v)
{
    k.h[b * k.hidden + j] = v;
    if (k.hiddens)
        k.hiddens[saved_row(k, t, b, k.hidden) + j] = v;
    if (k.y)
        k.y[y_off(k, t, b) + j] = v;
}

/* ---- forward ----------------------------------------------------------------- */

__global__ void bias_kernel(float *bias, const float *wb, const float *rb, int64_t gh, int64_t h, int gru)
{
    GRID_LOOP(j, gh)
        bias[j] = wb ? wb[j] + (gru && j >= 2 * h ? 0.0f : rb[j]) : 0.0f;
}

__global__ void add_bias_kernel(float *xp, const float *bias, int64_t rows, int64_t gh)
{
    GRID_LOOP(i, rows * gh)
        xp[i] += bias[i % gh];
}

__global__ void state_init_kernel(struct rnn_dev_step k, const float *init, float *state)
{
    GRID_LOOP(e, k.batch * k.hidden) {
        int64_t b = e / k.hidden, j = e - b * k.hidden;
        state[e] = init ? init[state_off(k, b) + j] : 0.0f;
    }
}

__global__ void state_store_kernel(struct rnn_dev_step k, const float *state, float *out)
{
    GRID_LOOP(e, k.batch * k.hidden) {
        int64_t b = e / k.hidden, j = e - b * k.hidden;
        out[state_off(k, b) + j] = k.lens && k.lens[b] == 0 ? 0.0f : state[e];
    }
}

__global__ void lstm_step_kernel(struct rnn_dev_step k, int64_t s)
{
    const int64_t h = k.hidden, gh = 4 * h;
    GRID_LOOP(e, k.batch * h) {
        int64_t b = e / h, j = e - b * h;
        int64_t t = time_of(k, s, b);
        if (t < 0)
            continue;
        const float *g = k.hr + b * gh, *xr = k.xp + x_row(k, t, b) * gh;
        float gi = g[j] + xr[j], go = g[h + j] + xr[h + j];
        float gf = g[2 * h + j] + xr[2 * h + j], gc = g[3 * h + j] + xr[3 * h + j];
        float cp = k.c[e];
        if (k.peep) {   /* P is [i, o, f]; the input and forget peepholes see C_{t-1} */
            gi += k.peep[j] * cp;
            gf += k.peep[2 * h + j] * cp;
        }
        float *pre = k.gates_pre ? k.gates_pre + saved_row(k, t, b, gh) : NULL;
        if (pre) {
            pre[j] = gi;
            pre[2 * h + j] = gf;
            pre[3 * h + j] = gc;
        }
        gi = act_eval(k.acts[0], clip_to(k, gi));
        gf = k.input_forget ? 1.0f - gi : act_eval(k.acts[0], clip_to(k, gf));
        gc = act_eval(k.acts[1], clip_to(k, gc));
        float cn = gf * cp + gi * gc;
        if (k.peep)   /* the output peephole sees the new C_t */
            go += k.peep[h + j] * cn;
        if (pre)
            pre[h + j] = go;
        go = act_eval(k.acts[0], clip_to(k, go));
        float hn = act_eval(k.acts[2], cn) * go;
        k.c[e] = cn;
        if (k.gates) {
            float *gs = k.gates + saved_row(k, t, b, gh);
            gs[j] = gi;
            gs[h + j] = go;
            gs[2 * h + j] = gf;
            gs[3 * h + j] = gc;
        }
        if (k.cells)
            k.cells[saved_row(k, t, b, h) + j] = cn;
        write_h(k, t, b, j, hn);
    }
}

__global__ void simple_rnn_step_kernel(struct rnn_dev_step k, int64_t s)
{
    const int64_t h = k.hidden;
    GRID_LOOP(e, k.batch * h) {
        int64_t b = e / h, j = e - b * h;
        int64_t t = time_of(k, s, b);
        if (t < 0)
            continue;
        float g = k.hr[e] + k.xp[x_row(k, t, b) * h + j];
        if (k.gates_pre)
            k.gates_pre[saved_row(k, t, b, h) + j] = g;
        g = act_eval(k.acts[0], clip_to(k, g));
        if (k.gates)
            k.gates[saved_row(k, t, b, h) + j] = g;
        write_h(k, t, b, j, g);
    }
}

/* GRU, first half: z and r (activated in place in hr), then r ⊙ H_{t-1}
 * for the candidate's R_h GEMM (zero for ended rows). */
__global__ void gru_gates_kernel(struct rnn_dev_step k, int64_t s)
{
    const int64_t h = k.hidden, gh = 3 * h;
    GRID_LOOP(e, k.batch * h) {
        int64_t b = e / h, j = e - b * h;
        int64_t t = time_of(k, s, b);
        if (t < 0) {
            if (!k.linear_before_reset)
                k.tmp[e] = 0.0f;
            continue;
        }
        float *g = k.hr + b * gh;
        const float *xr = k.xp + x_row(k, t, b) * gh;
        float z = g[j] + xr[j], r = g[h + j] + xr[h + j];
        if (k.gates_pre) {
            float *pre = k.gates_pre + saved_row(k, t, b, gh);
            pre[j] = z;
            pre[h + j] = r;
        }
        z = act_eval(k.acts[0], clip_to(k, z));
        r = act_eval(k.acts[0], clip_to(k, r));
        g[j] = z;
        g[h + j] = r;
        if (!k.linear_before_reset)
            k.tmp[e] = r * k.h[e];
    }
}

/* GRU, second half: the R_h product (hr's third block with
 * linear_before_reset, else rh) plus Rb_h, the candidate and the new state. */
__global__ void gru_update_kernel(struct rnn_dev_step k, int64_t s)
{
    const int64_t h = k.hidden, gh = 3 * h;
    GRID_LOOP(e, k.batch * h) {
        int64_t b = e / h, j = e - b * h;
        int64_t t = time_of(k, s, b);
        if (t < 0)
            continue;
        const float *g = k.hr + b * gh, *xr = k.xp + x_row(k, t, b) * gh;
        float rh = (k.linear_before_reset ? g[2 * h + j] : k.rh[e]) + (k.rb ? k.rb[2 * h + j] : 0.0f);
        float z = g[j], r = g[h + j];
        float gc = k.linear_before_reset ? xr[2 * h + j] + r * rh : xr[2 * h + j] + rh;
        if (k.gates_pre)
            k.gates_pre[saved_row(k, t, b, gh) + 2 * h + j] = gc;
        if (k.gru_rh)
            k.gru_rh[saved_row(k, t, b, h) + j] = rh;
        gc = act_eval(k.acts[1], clip_to(k, gc));
        float hn = (1.0f - z) * gc + z * k.h[e];
        if (k.gates) {
            float *gs = k.gates + saved_row(k, t, b, gh);
            gs[j] = z;
            gs[h + j] = r;
            gs[2 * h + j] = gc;
        }
        write_h(k, t, b, j, hn);
    }
}

/* ---- backward ------------------------------------------------------------------ */

/* Derivative of a gate's clip-then-activate at its pre-clip value. */
__device__ __forceinline__ float gate_grad(const struct rnn_dev_step &k, const struct rnn_act &a, float pre)
{
    if (k.has_clip && (pre < -k.clip || pre > k.clip))
        return 0.0f;
    return act_grad(a, pre);
}

/* The state before time t of row b: the neighbouring step's saved state,
 * else the initial state (zeros when omitted). */
__device__ __forceinline__ const float *prev_state(const struct rnn_dev_bptt &k, const float *saved,
                                                   const float *init, int64_t t, int64_t b)
{
    int64_t tp = k.f.reverse ? t + 1 : t - 1;
    if (tp >= 0 && tp < seq_len(k.f, b))
        return saved + saved_row(k.f, tp, b, k.f.hidden);
    return init ? init + state_off(k.f, b) : k.zeros;
}

__device__ __forceinline__ float dy_at(const struct rnn_dev_bptt &k, int64_t t, int64_t b, int64_t j)
{
    return k.dy ? k.dy[y_off(k.f, t, b) + j] : 0.0f;
}

__global__ void bptt_init_kernel(struct rnn_dev_bptt k)
{
    GRID_LOOP(e, k.f.batch * k.f.hidden) {
        int64_t b = e / k.f.hidden, j = e - b * k.f.hidden;
        int live = seq_len(k.f, b) > 0;
        int64_t off = state_off(k.f, b) + j;
        k.dh[e] = live && k.dy_h ? k.dy_h[off] : 0.0f;
        k.dc[e] = live && k.dy_c ? k.dy_c[off] : 0.0f;
    }
}

__global__ void lstm_back_kernel(struct rnn_dev_bptt k, int64_t s)
{
    const struct rnn_dev_step &f = k.f;
    const int64_t h = f.hidden, gh = 4 * h;
    GRID_LOOP(e, f.batch * h) {
        int64_t b = e / h, j = e - b * h;
        int64_t t = time_of(f, s, b);
        if (t < 0)
            continue;
        const float *g = f.gates + saved_row(f, t, b, gh), *pre = f.gates_pre + saved_row(f, t, b, gh);
        const float *ct = f.cells + saved_row(f, t, b, h);
        const float *cp = prev_state(k, f.cells, k.initial_c, t, b);
        const float *hp = prev_state(k, f.hiddens, k.initial_h, t, b);
        const float *peep = f.peep;
        float *dpr = k.dp_rows + b * 3 * h;
        float *dg = k.dg_all + x_row(f, t, b) * gh;
        const struct rnn_act &fa = f.acts[0], &ga = f.acts[1], &ha = f.acts[2];
        float dhj = k.dh[e] + dy_at(k, t, b, j);
        float gi = g[j], go = g[h + j], gf = g[2 * h + j], gc = g[3 * h + j];
        float d_o = dhj * act_eval(ha, ct[j]);
        float dpo = d_o * gate_grad(f, fa, pre[h + j]);
        float dct = k.dc[e] + dhj * go * act_grad(ha, ct[j]);
        if (peep)   /* the output peephole read C_t */
            dct += dpo * peep[h + j];
        float di = dct * gc, dgc = dct * gi, df = dct * cp[j], dcp = dct * gf, dpf = 0.0f;
        if (f.input_forget)   /* f = 1 - i */
            di -= df;
        else
            dpf = df * gate_grad(f, fa, pre[2 * h + j]);
        float dpi = di * gate_grad(f, fa, pre[j]);
        float dpc = dgc * gate_grad(f, ga, pre[3 * h + j]);
        if (peep) {
            dcp += dpi * peep[j] + dpf * peep[2 * h + j];
            dpr[j] += dpi * cp[j];
            dpr[h + j] += dpo * ct[j];
            dpr[2 * h + j] += dpf * cp[j];
        }
        k.dc[e] = dcp;
        float *dgs = k.dgs + b * gh;
        dg[j] = dgs[j] = dpi;
        dg[h + j] = dgs[h + j] = dpo;
        dg[2 * h + j] = dgs[2 * h + j] = dpf;
        dg[3 * h + j] = dgs[3 * h + j] = dpc;
        k.hprev[e] = hp[j];
    }
}

__global__ void simple_rnn_back_kernel(struct rnn_dev_bptt k, int64_t s)
{
    const struct rnn_dev_step &f = k.f;
    const int64_t h = f.hidden;
    GRID_LOOP(e, f.batch * h) {
        int64_t b = e / h, j = e - b * h;
        int64_t t = time_of(f, s, b);
        if (t < 0)
            continue;
        const float *pre = f.gates_pre + saved_row(f, t, b, h);
        const float *hp = prev_state(k, f.hiddens, k.initial_h, t, b);
        float v = (k.dh[e] + dy_at(k, t, b, j)) * gate_grad(f, f.acts[0], pre[j]);
        k.dg_all[x_row(f, t, b) * h + j] = v;
        k.dgs[e] = v;
        k.hprev[e] = hp[j];
    }
}

/* GRU, first half: everything up to the candidate's R_h product. dgs holds
 * [dz, dr (linear_before_reset only), d rh] until the second half. */
__global__ void gru_back_candidate_kernel(struct rnn_dev_bptt k, int64_t s)
{
    const struct rnn_dev_step &f = k.f;
    const int64_t h = f.hidden, gh = 3 * h;
    const int lbr = f.linear_before_reset;
    GRID_LOOP(e, f.batch * h) {
        int64_t b = e / h, j = e - b * h;
        int64_t t = time_of(f, s, b);
        if (t < 0)
            continue;
        const float *g = f.gates + saved_row(f, t, b, gh), *pre = f.gates_pre + saved_row(f, t, b, gh);
        const float *rh = f.gru_rh + saved_row(f, t, b, h);
        const float *hp = prev_state(k, f.hiddens, k.initial_h, t, b);
        float *dg = k.dg_all + x_row(f, t, b) * gh, *drh = k.drh_all + x_row(f, t, b) * h;
        float *dgs = k.dgs + b * gh;
        float dhj = k.dh[e] + dy_at(k, t, b, j);
        float z = g[j], r = g[h + j], hc = g[2 * h + j];
        float dph = dhj * (1.0f - z) * gate_grad(f, f.acts[1], pre[2 * h + j]);
        k.part[e] = dhj * z;
        dgs[j] = dhj * (hp[j] - hc);
        dgs[h + j] = lbr ? dph * rh[j] : 0.0f;
        dgs[2 * h + j] = drh[j] = lbr ? dph * r : dph;
        k.hin[e] = lbr ? hp[j] : r * hp[j];
        dg[2 * h + j] = dph;
        k.hprev[e] = hp[j];
    }
}

/* GRU, second half: z and r through their activations. tmp2 holds
 * d(r ⊙ H_{t-1}) = d rh · R_h without linear_before_reset. */
__global__ void gru_back_gates_kernel(struct rnn_dev_bptt k, int64_t s)
{
    const struct rnn_dev_step &f = k.f;
    const int64_t h = f.hidden, gh = 3 * h;
    GRID_LOOP(e, f.batch * h) {
        int64_t b = e / h, j = e - b * h;
        int64_t t = time_of(f, s, b);
        if (t < 0)
            continue;
        const float *g = f.gates + saved_row(f, t, b, gh), *pre = f.gates_pre + saved_row(f, t, b, gh);
        float *dg = k.dg_all + x_row(f, t, b) * gh;
        float *dgs = k.dgs + b * gh;
        if (!f.linear_before_reset) {
            dgs[h + j] = k.tmp2[e] * k.hprev[e];
            k.part[e] += k.tmp2[e] * g[h + j];
        }
        dgs[j] *= gate_grad(f, f.acts[0], pre[j]);
        dgs[h + j] *= gate_grad(f, f.acts[0], pre[h + j]);
        dg[j] = dgs[j];
        dg[h + j] = dgs[h + j];
    }
}

__global__ void bptt_carry_kernel(struct rnn_dev_bptt k, int64_t s)
{
    const int gru = k.f.kind == RNN_KIND_GRU;
    GRID_LOOP(e, k.f.batch * k.f.hidden) {
        int64_t b = e / k.f.hidden;
        if (time_of(k.f, s, b) < 0)
            continue;
        k.dh[e] = k.tmp[e] + (gru ? k.part[e] : 0.0f);
    }
}

/* Biases: both halves see the x-side gate gradients, except GRU's Rb_h,
 * which sits inside the R_h product; each column summed in row order. */
__global__ void bptt_bias_kernel(struct rnn_dev_bptt k, float *db)
{
    const int64_t h = k.f.hidden, gh = (int64_t)(k.f.kind == RNN_KIND_LSTM ? 4 : k.f.kind == RNN_KIND_GRU ? 3 : 1) * h;
    const int64_t rows = k.f.seq * k.f.batch;
    const int gru = k.f.kind == RNN_KIND_GRU;
    GRID_LOOP(j, gh) {
        float acc = db[j];
        for (int64_t i = 0; i < rows; i++)
            acc += k.dg_all[i * gh + j];
        db[j] = acc;
        if (gru && j >= 2 * h) {
            float r = 0.0f;
            for (int64_t i = 0; i < rows; i++)
                r += k.drh_all[i * h + j - 2 * h];
            db[gh + j] = r;
        } else {
            db[gh + j] = acc;
        }
    }
}

__global__ void bptt_states_kernel(struct rnn_dev_bptt k, float *dinit_h, float *dinit_c)
{
    GRID_LOOP(e, k.f.batch * k.f.hidden) {
        int64_t b = e / k.f.hidden, j = e - b * k.f.hidden;
        int live = seq_len(k.f, b) > 0;
        int64_t off = state_off(k.f, b) + j;
        dinit_h[off] = live ? k.dh[e] : 0.0f;
        if (dinit_c)
            dinit_c[off] = live ? k.dc[e] : 0.0f;
    }
}

__global__ void bptt_peep_kernel(struct rnn_dev_bptt k, float *dp)
{
    const int64_t w = 3 * k.f.hidden;
    GRID_LOOP(j, w) {
        float acc = dp[j];
        for (int64_t b = 0; b < k.f.batch; b++)
            acc += k.dp_rows[b * w + j];
        dp[j] = acc;
    }
}

} // namespace

extern "C" cudaError_t rnn_bias_launch(float *bias, const float *wb, const float *rb, int64_t gh, int64_t h, int gru,
                                       cudaStream_t stream)
{
    bias_kernel<<<blocks_for(gh), THREADS, 0, stream>>>(bias, wb, rb, gh, h, gru);
    return cudaGetLastError();
}

extern "C" cudaError_t rnn_add_bias_launch(float *xp, const float *bias, int64_t rows, int64_t gh, cudaStream_t stream)
{
    if (rows * gh == 0)
        return cudaSuccess;
    add_bias_kernel<<<blocks_for(rows * gh), THREADS, 0, stream>>>(xp, bias, rows, gh);
    return cudaGetLastError();
}

extern "C" cudaError_t rnn_state_init_launch(const struct rnn_dev_step *k, const float *init, float *state,
                                             cudaStream_t stream)
{
    if (k->batch * k->hidden == 0)
        return cudaSuccess;
    state_init_kernel<<<blocks_for(k->batch * k->hidden), THREADS, 0, stream>>>(*k, init, state);
    return cudaGetLastError();
}

extern "C" cudaError_t rnn_state_store_launch(const struct rnn_dev_step *k, const float *state, float *out,
                                              cudaStream_t stream)
{
    if (!out || k->batch * k->hidden == 0)
        return cudaSuccess;
    state_store_kernel<<<blocks_for(k->batch * k->hidden), THREADS, 0, stream>>>(*k, state, out);
    return cudaGetLastError();
}

extern "C" cudaError_t rnn_step_launch(const struct rnn_dev_step *k, int64_t s, int stage, cudaStream_t stream)
{
    int64_t n = k->batch * k->hidden;
    if (n == 0)
        return cudaSuccess;
    unsigned b = blocks_for(n);
    switch (k->kind) {
    case RNN_KIND_LSTM: lstm_step_kernel<<<b, THREADS, 0, stream>>>(*k, s); break;
    case RNN_KIND_RNN: simple_rnn_step_kernel<<<b, THREADS, 0, stream>>>(*k, s); break;
    default:
        if (stage == 0)
            gru_gates_kernel<<<b, THREADS, 0, stream>>>(*k, s);
        else
            gru_update_kernel<<<b, THREADS, 0, stream>>>(*k, s);
        break;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t rnn_bptt_init_launch(const struct rnn_dev_bptt *k, cudaStream_t stream)
{
    int64_t n = k->f.batch * k->f.hidden;
    if (n == 0)
        return cudaSuccess;
    bptt_init_kernel<<<blocks_for(n), THREADS, 0, stream>>>(*k);
    return cudaGetLastError();
}

extern "C" cudaError_t rnn_bptt_step_launch(const struct rnn_dev_bptt *k, int64_t s, int stage, cudaStream_t stream)
{
    int64_t n = k->f.batch * k->f.hidden;
    if (n == 0)
        return cudaSuccess;
    unsigned b = blocks_for(n);
    switch (k->f.kind) {
    case RNN_KIND_LSTM: lstm_back_kernel<<<b, THREADS, 0, stream>>>(*k, s); break;
    case RNN_KIND_RNN: simple_rnn_back_kernel<<<b, THREADS, 0, stream>>>(*k, s); break;
    default:
        if (stage == 0)
            gru_back_candidate_kernel<<<b, THREADS, 0, stream>>>(*k, s);
        else
            gru_back_gates_kernel<<<b, THREADS, 0, stream>>>(*k, s);
        break;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t rnn_bptt_carry_launch(const struct rnn_dev_bptt *k, int64_t s, cudaStream_t stream)
{
    int64_t n = k->f.batch * k->f.hidden;
    if (n == 0)
        return cudaSuccess;
    bptt_carry_kernel<<<blocks_for(n), THREADS, 0, stream>>>(*k, s);
    return cudaGetLastError();
}

extern "C" cudaError_t rnn_bptt_finish_launch(const struct rnn_dev_bptt *k, float *db, float *dinit_h, float *dinit_c,
                                              float *dp, cudaStream_t stream)
{
    const int64_t h = k->f.hidden;
    const int64_t gh = (int64_t)(k->f.kind == RNN_KIND_LSTM ? 4 : k->f.kind == RNN_KIND_GRU ? 3 : 1) * h;
    if (gh > 0) {
        bptt_bias_kernel<<<blocks_for(gh), THREADS, 0, stream>>>(*k, db);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return e;
    }
    if (k->f.batch * h > 0) {
        bptt_states_kernel<<<blocks_for(k->f.batch * h), THREADS, 0, stream>>>(*k, dinit_h, dinit_c);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return e;
    }
    if (dp && h > 0) {
        bptt_peep_kernel<<<blocks_for(3 * h), THREADS, 0, stream>>>(*k, dp);
        return cudaGetLastError();
    }
    return cudaSuccess;
}
