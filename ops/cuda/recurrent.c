/* ops/cuda/recurrent.c — CUDA kernels of LSTM, GRU and RNN and of their
 * gradients LSTMGrad, GRUGrad and RNNGrad (ops/rnn.c).
 *
 * The same algorithm as the CPU's, step for step: per direction one cuBLAS
 * GEMM projects the input of every time step, then each step runs one
 * recurrent GEMM and the gate kernels of ops/cuda/rnn_kernels.cu. The
 * gradients replay the forward pass saving gates, cells and hidden states
 * into scratch memory (the CPU's workspace, laid out the same), then walk
 * the steps backwards with the CPU's GEMMs and row arithmetic. Float32 only,
 * as on the CPU. sequence_lens is device memory here: it is copied to the
 * host once per call to be checked, and its int32 form copied back. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/layout-impl.h"
#include "ops/rnn-impl.h"

enum { RNN_IN_X, RNN_IN_W, RNN_IN_R, RNN_IN_B, RNN_IN_SEQ_LENS, RNN_IN_INITIAL_H, RNN_IN_INITIAL_C, RNN_IN_P,
       RNN_IN_DY, RNN_IN_DY_H, RNN_IN_DY_C };
enum { RNN_OUT_DX, RNN_OUT_DW, RNN_OUT_DR, RNN_OUT_DB, RNN_OUT_DINITIAL_H, RNN_OUT_DINITIAL_C, RNN_OUT_DP };

static const float *input_data(const struct op_call *c, int i)
{
    return i < c->n_in && c->in[i] ? (const float *)c->in[i]->data : NULL;
}

/* C = op(A) · op(B) + beta C for row-major matrices, through cuBLAS's
 * column-major view (C^T = op(B)^T · op(A)^T). With an empty inner dimension
 * C becomes beta C: zeros for beta 0 (as the CPU's rnn_gemm_nt), untouched
 * for 1 (as its bptt_gemm). */
static int gemm(struct op_call *c, int ta, int tb, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                const float *b, int64_t ldb, float beta, float *out, int64_t ldc)
{
    struct cuda_ctx *ctx = cuda_ctx_of(c);
    if (m <= 0 || n <= 0)
        return 0;
    if (k <= 0) {
        if (beta == 0.0f)
            CUDA_TRY(c, cudaMemset2DAsync(out, (size_t)ldc * sizeof(float), 0, (size_t)n * sizeof(float), (size_t)m,
                                          ctx->stream));
        return 0;
    }
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX)
        return op_error(c, "a %lld x %lld x %lld GEMM exceeds cuBLAS's int sizes", (long long)m, (long long)n,
                        (long long)k);
    const float one = 1.0f;
    CUBLAS_TRY(c, cublasSgemm(ctx->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n,
                              (int)m, (int)k, &one, b, (int)ldb, a, (int)lda, &beta, out, (int)ldc));
    return 0;
}

static int zero(struct op_call *c, void *p, size_t bytes)
{
    if (p && bytes)
        CUDA_TRY(c, cudaMemsetAsync(p, 0, bytes, cuda_ctx_of(c)->stream));
    return 0;
}

/* sequence_lens checked on the host and copied back as int32 scratch
 * (*lens; NULL when the input is omitted). */
static int lens_load(struct op_call *c, const struct rnn_dims *d, int32_t **lens)
{
    const struct tensor *t = RNN_IN_SEQ_LENS < c->n_in ? c->in[RNN_IN_SEQ_LENS] : NULL;
    *lens = NULL;
    if (!t)
        return 0;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    struct tensor host = *t;
    size_t bytes = tensor_size_bytes(t);
    host.data = malloc(bytes ? bytes : 1);
    int32_t *l32 = malloc(sizeof(int32_t) * (size_t)(d->batch ? d->batch : 1));
    if (!host.data || !l32) {
        free(host.data);
        free(l32);
        return op_error(c, "out of host memory for %lld sequence lengths", (long long)d->batch);
    }
    cudaError_t e = cudaMemcpyAsync(host.data, t->data, bytes, cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(s);
    int rc = e != cudaSuccess ? op_error(c, "CUDA: %s (reading sequence_lens)", cudaGetErrorString(e))
                              : rnn_lens_load(c, d, &host, l32);
    free(host.data);
    if (rc) {
        free(l32);
        return -1;
    }
    *lens = layout_upload(c, l32, sizeof(int32_t) * (size_t)(d->batch ? d->batch : 1));
    return *lens ? 0 : -1;
}

static int launched(struct op_call *c, cudaError_t e)
{
    return e == cudaSuccess ? 0 : op_error(c, "CUDA: %s (launching a recurrent kernel)", cudaGetErrorString(e));
}

static int reverse_of(const struct rnn_params *p, int dir)
{
    return p->direction == RNN_DIRECTION_REVERSE || (p->direction == RNN_DIRECTION_BIDIRECTIONAL && dir == 1);
}

/* What every step kernel of a direction reads, but the buffers. */
static void step_setup(struct rnn_dev_step *k, const struct rnn_params *p, const struct rnn_dims *d,
                       const int32_t *lens, int dir)
{
    k->kind = p->kind;
    k->layout = p->layout;
    k->dirs = d->dirs;
    k->dir = dir;
    k->reverse = reverse_of(p, dir);
    k->has_clip = p->has_clip;
    k->clip = p->clip;
    k->input_forget = p->input_forget;
    k->linear_before_reset = p->linear_before_reset;
    k->seq = d->seq;
    k->batch = d->batch;
    k->input = d->input;
    k->hidden = d->hidden;
    for (int i = 0; i < p->acts_per_dir && i < 3; i++)
        k->acts[i] = p->acts[dir * p->acts_per_dir + i];
    k->lens = lens;
}

/* rnn_forward_f32 on the device; `work` holds rnn_work_floats() floats. */
static int forward(struct op_call *c, const struct rnn_params *p, const struct rnn_dims *d, const struct rnn_io *io,
                   const int32_t *lens, const struct rnn_saved *save, float *work)
{
    cudaStream_t s = cuda_ctx_of(c)->stream;
    const int64_t g = rnn_gate_count(p->kind), h = d->hidden, gh = g * h, rows = d->seq * d->batch;
    const int lstm = p->kind == RNN_KIND_LSTM, gru = p->kind == RNN_KIND_GRU, lbr = p->linear_before_reset;
    float *xp = work, *hr = xp + rows * gh, *bias = hr + d->batch * gh, *hb = bias + gh;
    float *cb = hb + d->batch * h, *tmp = cb + d->batch * h, *rh = tmp + d->batch * h;

    /* Rows past a sequence's end are never visited; their Y must read 0. */
    if (io->y && lens && zero(c, io->y, sizeof(float) * (size_t)(rows * d->dirs * h)))
        return -1;
    for (int dir = 0; dir < d->dirs; dir++) {
        struct rnn_dev_step k = { 0 };
        step_setup(&k, p, d, lens, dir);
        const float *w = io->w + dir * gh * d->input, *r = io->r + dir * gh * h;
        const float *wb = io->b ? io->b + dir * 2 * gh : NULL, *rb = wb ? wb + gh : NULL;
        k.xp = xp;
        k.peep = io->p ? io->p + dir * 3 * h : NULL;
        k.rb = rb;
        k.hr = hr;
        k.h = hb;
        k.c = cb;
        k.tmp = tmp;
        k.rh = rh;
        k.y = io->y;
        if (save) {
            k.gates = save->gates;
            k.gates_pre = save->gates_pre;
            k.cells = save->cells;
            k.hiddens = save->hiddens;
            k.gru_rh = save->gru_rh;
        }
        if (gh && launched(c, rnn_bias_launch(bias, wb, rb, gh, h, gru, s)))
            return -1;
        if (gemm(c, 0, 1, rows, gh, d->input, io->x, d->input, w, d->input, 0.0f, xp, gh) ||
            launched(c, rnn_add_bias_launch(xp, bias, rows, gh, s)) ||
            launched(c, rnn_state_init_launch(&k, io->initial_h, hb, s)) ||
            (lstm && launched(c, rnn_state_init_launch(&k, io->initial_c, cb, s))))
            return -1;
        for (int64_t st = 0; st < d->seq; st++) {
            if (!gru) {
                if (gemm(c, 0, 1, d->batch, gh, h, hb, h, r, h, 0.0f, hr, gh) ||
                    launched(c, rnn_step_launch(&k, st, 0, s)))
                    return -1;
                continue;
            }
            /* With linear_before_reset the candidate's R_h product needs
             * only H_{t-1} and joins the z, r GEMM; without, it needs
             * r ⊙ H_{t-1} and so waits for r. */
            if (gemm(c, 0, 1, d->batch, lbr ? gh : 2 * h, h, hb, h, r, h, 0.0f, hr, gh) ||
                launched(c, rnn_step_launch(&k, st, 0, s)) ||
                (!lbr && gemm(c, 0, 1, d->batch, h, h, tmp, h, r + 2 * h * h, h, 0.0f, rh, h)) ||
                launched(c, rnn_step_launch(&k, st, 1, s)))
                return -1;
        }
        if (launched(c, rnn_state_store_launch(&k, hb, io->y_h, s)) ||
            (lstm && launched(c, rnn_state_store_launch(&k, cb, io->y_c, s))))
            return -1;
    }
    return 0;
}

static struct rnn_io io_of(const struct op_call *c, const struct rnn_params *p, const int32_t *lens)
{
    const int lstm = p->kind == RNN_KIND_LSTM;
    struct rnn_io io = {
        .x = input_data(c, RNN_IN_X),
        .w = input_data(c, RNN_IN_W),
        .r = input_data(c, RNN_IN_R),
        .b = input_data(c, RNN_IN_B),
        .seq_lens = lens,
        .initial_h = input_data(c, RNN_IN_INITIAL_H),
        .initial_c = lstm ? input_data(c, RNN_IN_INITIAL_C) : NULL,
        .p = lstm ? input_data(c, RNN_IN_P) : NULL,
    };
    return io;
}

/* cuBLAS reads alpha and beta from the host here. */
static int pointer_mode_host(struct op_call *c, cublasPointerMode_t *old)
{
    cublasHandle_t blas = cuda_ctx_of(c)->blas;
    CUBLAS_TRY(c, cublasGetPointerMode(blas, old));
    if (*old != CUBLAS_POINTER_MODE_HOST)
        CUBLAS_TRY(c, cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_HOST));
    return 0;
}

static void pointer_mode_restore(struct op_call *c, cublasPointerMode_t old)
{
    if (old != CUBLAS_POINTER_MODE_HOST)
        cublasSetPointerMode(cuda_ctx_of(c)->blas, old);
}

int cuda_rnn(struct op_call *c)
{
    const struct rnn_params *p = c->params;
    struct rnn_dims d;
    if (rnn_dims_get(c, &d))
        return -1;
    int32_t *lens;
    if (lens_load(c, &d, &lens))
        return -1;
    float *work = layout_scratch(c, rnn_work_floats(p, &d) * sizeof(float));
    if (!work) {
        layout_scratch_free(c, lens);
        return -1;
    }
    struct tensor *y = c->n_out > 0 ? c->out[0] : NULL;
    struct tensor *y_h = c->n_out > 1 ? c->out[1] : NULL;
    struct tensor *y_c = c->n_out > 2 && p->kind == RNN_KIND_LSTM ? c->out[2] : NULL;
    struct rnn_io io = io_of(c, p, lens);
    io.y = y ? y->data : NULL;
    io.y_h = y_h ? y_h->data : NULL;
    io.y_c = y_c ? y_c->data : NULL;
    cublasPointerMode_t mode;
    int rc = pointer_mode_host(c, &mode);
    if (!rc) {
        rc = forward(c, p, &d, &io, lens, NULL, work);
        pointer_mode_restore(c, mode);
    }
    layout_scratch_free(c, work);
    layout_scratch_free(c, lens);
    return rc;
}

/* ---- gradients ---------------------------------------------------------------- */

/* rnn_bptt_direction on the device: one direction's walk, accumulating into
 * the gradient outputs (dx is shared by the directions). */
static int bptt_direction(struct op_call *c, struct rnn_dev_bptt *k, const float *x, const float *w, const float *r,
                          float *dx, float *dw, float *dr, float *db, float *dinit_h, float *dinit_c, float *dp)
{
    cudaStream_t s = cuda_ctx_of(c)->stream;
    const struct rnn_dev_step *f = &k->f;
    const int64_t h = f->hidden, gh = (int64_t)rnn_gate_count(f->kind) * h, rows = f->seq * f->batch;
    const int64_t batch = f->batch, input = f->input;
    const int gru = f->kind == RNN_KIND_GRU, lbr = f->linear_before_reset;
    const size_t fl = sizeof(float);

    if (zero(c, k->dg_all, fl * (size_t)(rows * gh)) || (gru && zero(c, k->drh_all, fl * (size_t)(rows * h))) ||
        zero(c, k->dp_rows, fl * (size_t)(batch * 3 * h)) || launched(c, rnn_bptt_init_launch(k, s)))
        return -1;
    for (int64_t st = f->seq - 1; st >= 0; st--) {
        if (zero(c, k->dgs, fl * (size_t)(batch * gh)) || zero(c, k->hprev, fl * (size_t)(batch * h)) ||
            zero(c, k->hin, fl * (size_t)(batch * h)) || zero(c, k->tmp, fl * (size_t)(batch * h)))
            return -1;
        int64_t k_rec = gh;   /* columns of dgs that reach H_{t-1} through R */
        if (launched(c, rnn_bptt_step_launch(k, st, 0, s)))
            return -1;
        if (gru) {
            if (!lbr) {
                if (gemm(c, 0, 0, batch, h, h, k->dgs + 2 * h, gh, r + 2 * h * h, h, 0.0f, k->tmp2, h))
                    return -1;
                k_rec = 2 * h;   /* H_{t-1} reached R_h only through r ⊙ H_{t-1} */
            }
            if (launched(c, rnn_bptt_step_launch(k, st, 1, s)))
                return -1;
            /* dR += dgs^T · H_{t-1}; the R_h block · the R_h product's operand */
            if (gemm(c, 1, 0, 2 * h, h, batch, k->dgs, gh, k->hprev, h, 1.0f, dr, h) ||
                gemm(c, 1, 0, h, h, batch, k->dgs + 2 * h, gh, k->hin, h, 1.0f, dr + 2 * h * h, h))
                return -1;
        } else if (gemm(c, 1, 0, gh, h, batch, k->dgs, gh, k->hprev, h, 1.0f, dr, h)) {
            return -1;
        }
        /* dH_{t-1} = dgs · R (+ GRU's direct part) for rows that ran */
        if (gemm(c, 0, 0, batch, h, k_rec, k->dgs, gh, r, h, 0.0f, k->tmp, h) ||
            launched(c, rnn_bptt_carry_launch(k, st, s)))
            return -1;
    }
    if (gemm(c, 0, 0, rows, input, gh, k->dg_all, gh, w, input, 1.0f, dx, input) ||
        gemm(c, 1, 0, gh, input, rows, k->dg_all, gh, x, input, 1.0f, dw, input))
        return -1;
    return launched(c, rnn_bptt_finish_launch(k, db, dinit_h, dinit_c, dp, s));
}

int cuda_rnn_grad(struct op_call *c)
{
    const struct rnn_params *p = c->params;
    struct rnn_dims d;
    if (rnn_grad_dims_get(c, &d))
        return -1;
    const int lstm = p->kind == RNN_KIND_LSTM, gru = p->kind == RNN_KIND_GRU;
    const size_t h = (size_t)d.hidden, gh = (size_t)rnn_gate_count(p->kind) * h, batch = (size_t)d.batch;
    const size_t rows = (size_t)(d.seq * d.batch), saved = (size_t)d.dirs * rows;
    /* the CPU's workspace, piece for piece (ops/rnn.c, rnn_grad_cpu) */
    const size_t sizes[] = {
        rnn_work_floats(p, &d),
        saved * gh, saved * gh,             /* gates, gates_pre */
        lstm ? saved * h : 0,               /* cells */
        saved * h,                          /* hiddens */
        gru ? saved * h : 0,                /* gru_rh */
        rows * gh, gru ? rows * h : 0,      /* dg_all, drh_all */
        batch * gh, batch * h, batch * h,   /* dgs, hprev, hin */
        batch * h, batch * h, batch * h, batch * h, batch * h,   /* dh, dc, tmp, tmp2, part */
        batch * 3 * h, h,                   /* dp_rows, zeros */
    };
    enum { N_BUF = sizeof sizes / sizeof sizes[0] };
    size_t total = 0;
    for (int i = 0; i < N_BUF; i++)
        total += sizes[i];
    int32_t *lens;
    if (lens_load(c, &d, &lens))
        return -1;
    float *block = layout_scratch(c, total * sizeof(float));
    if (!block) {
        layout_scratch_free(c, lens);
        return -1;
    }
    float *buf[N_BUF];
    size_t off = 0;
    for (int i = 0; i < N_BUF; off += sizes[i], i++)
        buf[i] = block + off;

    struct rnn_io io = io_of(c, p, lens);
    struct rnn_saved sv = { .gates = buf[1], .gates_pre = buf[2], .cells = lstm ? buf[3] : NULL,
                            .hiddens = buf[4], .gru_rh = gru ? buf[5] : NULL };
    float *out[7] = { 0 };
    cublasPointerMode_t mode;
    int rc = zero(c, buf[17], h * sizeof(float)) || pointer_mode_host(c, &mode);
    if (rc)
        goto done;
    rc = forward(c, p, &d, &io, lens, &sv, buf[0]);
    for (int i = 0; !rc && i < c->n_out && i < 7; i++) {
        out[i] = c->out[i] ? c->out[i]->data : NULL;
        rc = out[i] ? zero(c, out[i], tensor_size_bytes(c->out[i])) : 0;
    }
    for (int dir = 0; !rc && dir < d.dirs; dir++) {
        struct rnn_dev_bptt k = { 0 };
        step_setup(&k.f, p, &d, lens, dir);
        k.f.peep = io.p ? io.p + dir * 3 * (int64_t)h : NULL;
        k.f.gates = sv.gates;
        k.f.gates_pre = sv.gates_pre;
        k.f.cells = sv.cells;
        k.f.hiddens = sv.hiddens;
        k.f.gru_rh = sv.gru_rh;
        k.initial_h = io.initial_h;
        k.initial_c = io.initial_c;
        k.dy = input_data(c, RNN_IN_DY);
        k.dy_h = input_data(c, RNN_IN_DY_H);
        k.dy_c = lstm ? input_data(c, RNN_IN_DY_C) : NULL;
        k.zeros = buf[17];
        k.dg_all = buf[6];
        k.drh_all = buf[7];
        k.dgs = buf[8];
        k.hprev = buf[9];
        k.hin = buf[10];
        k.dh = buf[11];
        k.dc = buf[12];
        k.tmp = buf[13];
        k.tmp2 = buf[14];
        k.part = buf[15];
        k.dp_rows = buf[16];
        rc = bptt_direction(c, &k, io.x, io.w + dir * gh * (size_t)d.input, io.r + dir * gh * h, out[RNN_OUT_DX],
                            out[RNN_OUT_DW] + dir * gh * (size_t)d.input, out[RNN_OUT_DR] + dir * gh * h,
                            out[RNN_OUT_DB] + dir * 2 * gh, out[RNN_OUT_DINITIAL_H],
                            lstm ? out[RNN_OUT_DINITIAL_C] : NULL,
                            lstm && out[RNN_OUT_DP] ? out[RNN_OUT_DP] + dir * 3 * h : NULL);
    }
    pointer_mode_restore(c, mode);
done:
    layout_scratch_free(c, block);
    layout_scratch_free(c, lens);
    return rc ? -1 : 0;
}
