/* ops/cuda/attn.c — the CUDA kernels of the attn family: Attention,
 * AttentionGrad and RotaryEmbedding, following ops/attention.c and
 * ops/rotary.c to the letter (the geometry comes from the CPU files'
 * resolvers in ops/nn-impl.h).
 *
 * Attention is computed unfused: the scores of every (batch, query head)
 * into one [B * Hq, Sq, T] scratch matrix by cuBLAS (strided-batched GEMMs
 * over the key/value heads, reading Q, K, V in place with their row
 * strides: 3-D and 4-D alike, query head h reading key head h / group for
 * grouped-query attention), the masked, soft-capped
 * softmax of its rows by our kernel (attn_kernels.cu), then P V by cuBLAS
 * into Y. A past cache is first concatenated with the new keys and values
 * (into present_key/present_value when asked, else scratch). The gradient
 * recomputes P and runs dP = dY V^T, dS (our kernel), dQ = scale dS K,
 * dK += scale dS^T Q and dV += P^T dY, the last two over the query heads of
 * a group in order with beta = 1 on one stream: deterministic.
 *
 * A family apart from nn because it needs no cuDNN: tests/cuda_emu runs it
 * on the host. */
#include <limits.h>

#include "ops/cuda/attn-kernels.h"
#include "ops/cuda/cuda-impl.h"
#include "ops/nn-impl.h"
#include "ops/attn-params.h"

static cudaStream_t attn_stream(const struct op_call *c)
{
    return cuda_ctx_of(c)->stream;
}

static int attn_scratch(const struct op_call *c, size_t bytes, const char *what, void **p)
{
    *p = nn_scratch_alloc(c, bytes);
    if (!*p)
        return op_error(c, "cannot get %zu bytes of device scratch for %s", bytes, what);
    return 0;
}

static struct attn_cuda_layout attn_layout(struct nn_att_layout l)
{
    return (struct attn_cuda_layout){ .sb = l.sb, .sh = l.sh, .ss = l.ss };
}

/* ---- RotaryEmbedding ---------------------------------------------------------------- */

static int cuda_rotary(struct op_call *c)
{
    const struct rotary_params *p = c->params;
    struct nn_rope_dims g;
    if (nn_rope_dims(c, &g))
        return -1;
    struct attn_cuda_rope r = { .b = g.b, .s = g.s, .h = g.h, .d = g.d, .rd = g.rd, .sb = g.sb, .ss = g.ss,
                                .sh = g.sh, .npos = c->in[1]->dims[0], .interleaved = p->interleaved };
    const struct tensor *pos = c->n_in > 3 ? c->in[3] : NULL;
    if (!pos)
        r.npos = g.b * g.s;
    CUDA_TRY(c, attn_cuda_rope(attn_stream(c), &r, c->in[0]->data, c->in[1]->data, c->in[2]->data,
                               pos ? pos->data : NULL, c->out[0]->data));
    return 0;
}

/* ---- GEMMs ------------------------------------------------------------------------------ *
 * Row-major y[m, n] = alpha op(a) op(b) + beta y as cuBLAS's column-major
 * y^T = op(b)^T op(a)^T: the same buffers, operands swapped, no copies. */

/* An operand of the per-head products: head h of batch b starts at
 * p + b * sb + h * sh, rows ld apart; per_q says whether h is the query
 * head (Q, dQ, Y, dY, the score matrices) or its key/value head. */
struct attn_opnd {
    const float *p;
    int64_t ld, sb, sh;
    int per_q;
};

/* y = alpha op(a) op(b) + beta y for every (batch, query head), query head
 * h = kh * group + gi reading key/value head kh: for each batch and gi, one
 * strided-batched GEMM over kh (every operand's offset is linear in kh).
 * The calls follow gi in order, so a key/value operand y accumulates its
 * group's query heads in head order: deterministic. */
static int attn_heads_gemm(const struct op_call *c, const struct nn_att_geom *g, int trans_a, int trans_b,
                           int64_t m, int64_t n, int64_t k, float alpha, struct attn_opnd a, struct attn_opnd b,
                           float beta, struct attn_opnd y)
{
    const int64_t group = g->hq / g->hkv;
    if (m <= 0 || n <= 0 || g->hkv <= 0)
        return 0;
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || a.ld > INT_MAX || b.ld > INT_MAX || y.ld > INT_MAX
        || g->hkv > INT_MAX)
        return op_error(c, "GEMM of %lld x %lld x %lld exceeds cuBLAS's 32-bit sizes", (long long)m,
                        (long long)n, (long long)k);
    for (int64_t bi = 0; bi < g->b; bi++)
        for (int64_t gi = 0; gi < group; gi++) {
            const struct attn_opnd *o[3] = { &a, &b, &y };
            const float *base[3];
            long long stride[3];
            for (int j = 0; j < 3; j++) {
                base[j] = o[j]->p + bi * o[j]->sb + (o[j]->per_q ? gi * o[j]->sh : 0);
                stride[j] = o[j]->per_q ? group * o[j]->sh : o[j]->sh;
            }
            CUBLAS_TRY(c, cublasSgemmStridedBatched(cuda_ctx_of(c)->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                                    trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k,
                                                    &alpha, base[1], (int)b.ld, stride[1], base[0], (int)a.ld,
                                                    stride[0], &beta, (float *)base[2], (int)y.ld, stride[2],
                                                    (int)g->hkv));
        }
    return 0;
}

/* The operands by role. */
static struct attn_opnd opnd_q(const float *p, struct nn_att_layout l)
{
    return (struct attn_opnd){ .p = p, .ld = l.ss, .sb = l.sb, .sh = l.sh, .per_q = 1 };
}

static struct attn_opnd opnd_kv(const float *p, struct nn_att_layout l)
{
    return (struct attn_opnd){ .p = p, .ld = l.ss, .sb = l.sb, .sh = l.sh, .per_q = 0 };
}

/* A [B * Hq, Sq, T] score matrix. */
static struct attn_opnd opnd_scores(const struct nn_att_geom *g, const float *p)
{
    int64_t per = g->sq * g->t;
    return (struct attn_opnd){ .p = p, .ld = g->t, .sb = g->hq * per, .sh = per, .per_q = 1 };
}

/* ---- Attention ------------------------------------------------------------------------------ */

/* The keys and values all heads read: K/V themselves (their layout), or the
 * past cache and K/V concatenated into `kbuf`/`vbuf` (dense 4-D). */
struct attn_kv {
    const float *k, *v;
    struct nn_att_layout kl, vl;
};

static int attn_kv_get(struct op_call *c, const struct nn_att_geom *g, const struct tensor *const *in,
                       float *kbuf, float *vbuf, struct attn_kv *kv)
{
    kv->k = in[1]->data;
    kv->v = in[2]->data;
    kv->kl = g->k;
    kv->vl = g->v;
    if (!g->past)
        return 0;
    const float *pk = in[4]->data, *pv = in[5]->data;
    CUDA_TRY(c, attn_cuda_concat(attn_stream(c), g->b, g->hkv, g->t, g->past, g->d, pk, attn_layout(g->pk),
                                 kv->k, attn_layout(g->k), kbuf));
    CUDA_TRY(c, attn_cuda_concat(attn_stream(c), g->b, g->hkv, g->t, g->past, g->dv, pv, attn_layout(g->pv),
                                 kv->v, attn_layout(g->v), vbuf));
    kv->k = kbuf;
    kv->v = vbuf;
    kv->kl = g->prk;
    kv->vl = g->prv;
    return 0;
}

static struct attn_cuda_rows attn_rows(const struct op_call *c, const struct nn_att_geom *g)
{
    const struct attention_params *p = c->params;
    return (struct attn_cuda_rows){
        .b = g->b, .hq = g->hq, .sq = g->sq, .t = g->t, .past = g->past, .mask_len = g->mask_len,
        .m_sb = g->m_sb, .m_sh = g->m_sh, .m_ss = g->m_ss, .mask_bool = g->mask_bool,
        .is_causal = p->is_causal, .qk_mode = p->qk_mode, .left = p->left_window, .right = p->right_window,
        .softcap = p->softcap,
    };
}

/* s [B * Hq, Sq, T] = scale Q K_all^T. */
static int attn_scores(struct op_call *c, const struct nn_att_geom *g, const float *q, const struct attn_kv *kv,
                       float *s)
{
    return attn_heads_gemm(c, g, 0, 1, g->sq, g->t, g->d, g->scale, opnd_q(q, g->q), opnd_kv(kv->k, kv->kl), 0.0f,
                           opnd_scores(g, s));
}

/* The call's inputs by role (Q, K, V, mask, past_key, past_value, nonpad). */
static void attn_inputs(const struct op_call *c, int first, const struct tensor *in[7])
{
    for (int i = 0; i < 7; i++)
        in[i] = first + i < c->n_in ? c->in[first + i] : NULL;
}

static int cuda_attention(struct op_call *c)
{
    struct nn_att_geom g;
    if (nn_attention_geom(c, 0, &g))
        return -1;
    const struct tensor *in[7];
    attn_inputs(c, 0, in);
    cudaStream_t st = attn_stream(c);
    float *pres[2] = { NULL, NULL };
    for (int o = 1; o < 3 && o < c->n_out; o++)
        pres[o - 1] = c->out[o] ? c->out[o]->data : NULL;
    float *qk = c->n_out > 3 && c->out[3] ? c->out[3]->data : NULL;
    /* scratch: the scores, and the concatenated caches not written to present outputs */
    size_t scores = sizeof(float) * (size_t)(g.b * g.hq * g.sq * g.t);
    size_t kb = g.past && !pres[0] ? sizeof(float) * (size_t)(g.b * g.hkv * g.t * g.d) : 0;
    size_t vb = g.past && !pres[1] ? sizeof(float) * (size_t)(g.b * g.hkv * g.t * g.dv) : 0;
    char *tmp;
    if (attn_scratch(c, scores + kb + vb, "attention scores", (void **)&tmp))
        return -1;
    float *s = (float *)tmp;
    struct attn_kv kv;
    int rc = attn_kv_get(c, &g, in, pres[0] ? pres[0] : (float *)(tmp + scores),
                         pres[1] ? pres[1] : (float *)(tmp + scores + kb), &kv);
    /* present outputs without a past cache: K and V in the 4-D layout */
    for (int i = 0; !rc && !g.past && i < 2; i++)
        if (pres[i]) {
            cudaError_t e = attn_cuda_concat(st, g.b, g.hkv, g.t, 0, i ? g.dv : g.d, NULL, attn_layout(g.pk),
                                             i ? kv.v : kv.k, attn_layout(i ? g.v : g.k), pres[i]);
            if (e != cudaSuccess)
                rc = op_error(c, "CUDA: %s (present %s)", cudaGetErrorString(e), i ? "value" : "key");
        }
    if (!rc)
        rc = attn_scores(c, &g, in[0]->data, &kv, s);
    if (!rc) {
        struct attn_cuda_rows r = attn_rows(c, &g);
        cudaError_t e = attn_cuda_softmax(st, &r, in[3] ? in[3]->data : NULL, in[6] ? in[6]->data : NULL, s,
                                          NULL, qk);
        if (e != cudaSuccess)
            rc = op_error(c, "CUDA: %s (attention softmax)", cudaGetErrorString(e));
    }
    float *y = c->out[0]->data;
    if (!rc && g.t == 0 && cudaMemsetAsync(y, 0, tensor_size_bytes(c->out[0]), st) != cudaSuccess)
        rc = op_error(c, "CUDA: cannot zero an output without keys");
    if (!rc && g.t > 0)
        rc = attn_heads_gemm(c, &g, 0, 0, g.sq, g.dv, g.t, 1.0f, opnd_scores(&g, s), opnd_kv(kv.v, kv.vl), 0.0f,
                             opnd_q(y, g.y));
    nn_scratch_free(c, tmp);
    return rc;
}

/* ---- AttentionGrad ------------------------------------------------------------------------- */

/* Inputs: dY, Q, K, V, mask, past_key, past_value, nonpad, dPresentKey,
 * dPresentValue; outputs dQ, dK, dV, dPastKey, dPastValue (ops/attention.c). */
static int cuda_attention_grad(struct op_call *c)
{
    const struct attention_params *p = c->params;
    struct nn_att_geom g;
    if (nn_attention_geom(c, 1, &g))
        return -1;
    const struct tensor *in[7];
    attn_inputs(c, 1, in);
    cudaStream_t st = attn_stream(c);
    const float *dy = c->in[0] ? c->in[0]->data : NULL;
    const float *dpres[2] = { c->n_in > 8 && c->in[8] ? c->in[8]->data : NULL,
                              c->n_in > 9 && c->in[9] ? c->in[9]->data : NULL };
    float *out[5] = { NULL };
    for (int o = 0; o < 5 && o < c->n_out; o++)
        out[o] = c->out[o] ? c->out[o]->data : NULL;
    float *dq = out[0];
    const int64_t per = g.sq * g.t;
    size_t mat = sizeof(float) * (size_t)(g.b * g.hq * per);
    size_t kall = sizeof(float) * (size_t)(g.b * g.hkv * g.t * g.d);
    size_t vall = sizeof(float) * (size_t)(g.b * g.hkv * g.t * g.dv);
    /* P, dP (and the capped scores with softcap); with a past cache the
     * concatenated K/V and their gradients dK_all/dV_all as well */
    size_t n_mat = dy ? (p->softcap > 0.0f ? 3 : 2) : 0;
    size_t need = n_mat * mat + (g.past ? 2 * (kall + vall) : 0);
    char *tmp;
    if (attn_scratch(c, need, "attention gradient", (void **)&tmp))
        return -1;
    float *pm = (float *)tmp, *dpm = (float *)(tmp + mat), *cm = n_mat == 3 ? (float *)(tmp + 2 * mat) : NULL;
    char *rest = tmp + n_mat * mat;
    float *kbuf = (float *)rest, *vbuf = (float *)(rest + kall);
    float *dkall = (float *)(rest + kall + vall), *dvall = (float *)(rest + 2 * kall + vall);
    struct attn_kv kv;
    int rc = attn_kv_get(c, &g, in, kbuf, vbuf, &kv);
    /* where dK/dV accumulate: dK_all/dV_all (4-D) with a past cache, else the outputs */
    float *dkacc[2] = { g.past ? dkall : out[1], g.past ? dvall : out[2] };
    struct nn_att_layout dl[2] = { g.past ? g.prk : g.k, g.past ? g.prv : g.v };
    for (int i = 0; !rc && i < 2; i++) {
        if (!dkacc[i])
            continue;
        int64_t width = i ? g.dv : g.d;
        cudaError_t e;
        if (dpres[i] && g.past)
            e = cudaMemcpyAsync(dkacc[i], dpres[i], i ? vall : kall, cudaMemcpyDeviceToDevice, st);
        else if (dpres[i])
            e = attn_cuda_split(st, g.b, g.hkv, g.t, 0, width, dpres[i], NULL, attn_layout(g.pk), dkacc[i],
                                attn_layout(dl[i]));
        else
            e = cudaMemsetAsync(dkacc[i], 0, i ? vall : kall, st);
        if (e != cudaSuccess)
            rc = op_error(c, "CUDA: %s (initialising d%s)", cudaGetErrorString(e), i ? "V" : "K");
    }
    if (!rc && !dy && dq && cudaMemsetAsync(dq, 0, tensor_size_bytes(c->out[0]), st) != cudaSuccess)
        rc = op_error(c, "CUDA: cannot zero dQ");
    if (!rc && dy && g.t > 0) {
        rc = attn_scores(c, &g, in[0]->data, &kv, pm);
        if (!rc) {
            struct attn_cuda_rows r = attn_rows(c, &g);
            r.qk_mode = 0;
            cudaError_t e = attn_cuda_softmax(st, &r, in[3] ? in[3]->data : NULL, in[6] ? in[6]->data : NULL,
                                              pm, cm, NULL);
            if (e != cudaSuccess)
                rc = op_error(c, "CUDA: %s (attention softmax)", cudaGetErrorString(e));
        }
        /* dP = dY V_all^T */
        if (!rc)
            rc = attn_heads_gemm(c, &g, 0, 1, g.sq, g.t, g.dv, 1.0f, opnd_q(dy, g.y), opnd_kv(kv.v, kv.vl), 0.0f,
                                 opnd_scores(&g, dpm));
        if (!rc) {
            cudaError_t e = attn_cuda_softmax_grad(st, g.b * g.hq * g.sq, g.t, pm, cm, p->softcap, dpm);
            if (e != cudaSuccess)
                rc = op_error(c, "CUDA: %s (attention softmax gradient)", cudaGetErrorString(e));
        }
        /* dQ = scale dS K_all; dK_all += scale dS^T Q; dV_all += P^T dY */
        if (!rc && dq)
            rc = attn_heads_gemm(c, &g, 0, 0, g.sq, g.d, g.t, g.scale, opnd_scores(&g, dpm), opnd_kv(kv.k, kv.kl),
                                 0.0f, opnd_q(dq, g.q));
        if (!rc && dkacc[0])
            rc = attn_heads_gemm(c, &g, 1, 0, g.t, g.d, g.sq, g.scale, opnd_scores(&g, dpm),
                                 opnd_q(in[0]->data, g.q), 1.0f, opnd_kv(dkacc[0], dl[0]));
        if (!rc && dkacc[1])
            rc = attn_heads_gemm(c, &g, 1, 0, g.t, g.dv, g.sq, 1.0f, opnd_scores(&g, pm), opnd_q(dy, g.y), 1.0f,
                                 opnd_kv(dkacc[1], dl[1]));
    } else if (!rc && dy && dq && g.t == 0 && cudaMemsetAsync(dq, 0, tensor_size_bytes(c->out[0]), st)) {
        rc = op_error(c, "CUDA: cannot zero dQ");
    }
    for (int i = 0; !rc && g.past && i < 2; i++) {
        cudaError_t e = attn_cuda_split(st, g.b, g.hkv, g.t, g.past, i ? g.dv : g.d, dkacc[i], out[3 + i],
                                        attn_layout(i ? g.pv : g.pk), out[1 + i], attn_layout(i ? g.v : g.k));
        if (e != cudaSuccess)
            rc = op_error(c, "CUDA: %s (splitting d%s)", cudaGetErrorString(e), i ? "V" : "K");
    }
    nn_scratch_free(c, tmp);
    return rc;
}

CUDA_KERNEL_TABLE(attn) = {
    { "", "Attention", cuda_attention },
    { "dtrexec", "AttentionGrad", cuda_attention_grad },
    { "", "RotaryEmbedding", cuda_rotary },
    { 0 },
};
