/* ops/cuda/blas.c — the GEMM family on cuBLAS: Gemm, MatMul and the
 * gradient product dtrexec:MatMulTrans, float32, with the CPU kernels'
 * semantics (ops/gemm.c): Gemm's C broadcast to [M, N], MatMul's 1-D
 * promotion and broadcast batch axes, MatMulTrans reading either operand
 * transposed in place.
 *
 * cuBLAS is column-major: a row-major product Y = op(A) op(B) is computed as
 * the column-major Y^T = op(B)^T op(A)^T, which reads the same buffers with
 * the operands swapped and no copies.
 *
 * Batches take the first of: one GEMM (a single matrix, or a shared B under
 * a dense A folded into M rows, as on the CPU); one strided-batched GEMM when
 * both operands' batch offsets are linear in the batch index (every dense or
 * fully broadcast case); else one GEMM per batch entry. Which path runs
 * depends on the shapes alone, and the handle allows no atomics, so a
 * recomputation repeats the first execution bit for bit. */
#include <limits.h>
#include <string.h>

#include "ops/cuda/blas-kernels.h"
#include "ops/cuda/cuda-impl.h"
#include "ops/nn-params.h"

/* One row-major product y[m, n] = alpha op(a) op(b) + beta y, with
 * lda/ldb the row lengths of a and b as stored. */
struct blas_gemm {
    int trans_a, trans_b;
    int64_t m, n, k, lda, ldb;
    float alpha, beta;
};

static int fits_int(const struct op_call *c, const struct blas_gemm *g)
{
    if (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX || g->lda > INT_MAX || g->ldb > INT_MAX)
        return op_error(c, "GEMM of %lld x %lld x %lld exceeds cuBLAS's 32-bit sizes", (long long)g->m,
                        (long long)g->n, (long long)g->k);
    return 0;
}

static int gemm_one(const struct op_call *c, const struct blas_gemm *g, const float *a, const float *b, float *y)
{
    if (fits_int(c, g))
        return -1;
    CUBLAS_TRY(c, cublasSgemm(cuda_ctx_of(c)->blas, g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                              g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)g->n, (int)g->m, (int)g->k, &g->alpha,
                              b, (int)g->ldb, a, (int)g->lda, &g->beta, y, (int)g->n));
    return 0;
}

static int gemm_strided(const struct op_call *c, const struct blas_gemm *g, const float *a, int64_t stride_a,
                        const float *b, int64_t stride_b, float *y, int64_t batches)
{
    if (fits_int(c, g))
        return -1;
    if (batches > INT_MAX)
        return op_error(c, "%lld batched products exceed cuBLAS's 32-bit count", (long long)batches);
    CUBLAS_TRY(c, cublasSgemmStridedBatched(cuda_ctx_of(c)->blas, g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                            g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)g->n, (int)g->m,
                                            (int)g->k, &g->alpha, b, (int)g->ldb, stride_b, a, (int)g->lda,
                                            stride_a, &g->beta, y, (int)g->n, g->m * g->n, (int)batches));
    return 0;
}

static int zero_fill(const struct op_call *c, void *y, size_t bytes)
{
    if (bytes)
        CUDA_TRY(c, cudaMemsetAsync(y, 0, bytes, cuda_ctx_of(c)->stream));
    return 0;
}

/* ---- Gemm ----------------------------------------------------------------- */

static int gemm_cuda(struct op_call *c)
{
    const struct gemm_params *p = c->params;
    const struct tensor *a = c->in[0], *b = c->in[1];
    const struct tensor *bias = c->n_in > 2 ? c->in[2] : NULL;
    struct tensor *y = c->out[0];
    if (a->rank != 2 || b->rank != 2 || a->dtype != ONNX_DTYPE_FLOAT || b->dtype != ONNX_DTYPE_FLOAT)
        return op_error(c, "float32 matrices expected");
    struct blas_gemm g = {
        .trans_a = p->trans_a, .trans_b = p->trans_b,
        .m = p->trans_a ? a->dims[1] : a->dims[0], .k = p->trans_a ? a->dims[0] : a->dims[1],
        .n = p->trans_b ? b->dims[0] : b->dims[1], .lda = a->dims[1], .ldb = b->dims[1],
        .alpha = p->alpha, .beta = 0.0f,
    };
    if (g.m <= 0 || g.n <= 0)
        return 0;
    int with_bias = bias && p->beta != 0.0f;
    if (with_bias) {
        if (bias->dtype != ONNX_DTYPE_FLOAT)
            return op_error(c, "C must be float32, got %s", onnx_dtype_name(bias->dtype));
        int64_t cm = bias->rank == 2 ? bias->dims[0] : 1;
        int64_t cn = bias->rank >= 1 ? bias->dims[bias->rank - 1] : 1;
        /* K = 0: the product is empty and Y = beta C (the CPU's reading of BLAS). */
        CUDA_TRY(c, blas_bias_fill_launch(cuda_ctx_of(c)->stream, y->data, bias->data, g.m, g.n, cm, cn,
                                          g.k > 0 ? 1.0f : p->beta));
        g.beta = p->beta;
    }
    if (g.k <= 0)
        return with_bias ? 0 : zero_fill(c, y->data, tensor_size_bytes(y));
    return gemm_one(c, &g, a->data, b->data, y->data);
}

/* ---- MatMul and MatMulTrans --------------------------------------------------- */

/* After 1-D promotion: op(a) is [batch..., m, k], op(b) [batch..., k, n];
 * the batch axes broadcast, with element strides in matrices per operand. */
struct blas_batch {
    struct blas_gemm g;
    struct tensor batch;
    int64_t a_strides[TENSOR_MAX_RANK], b_strides[TENSOR_MAX_RANK];
};

static int batch_get(const struct op_call *c, int trans_a, int trans_b, struct blas_batch *s)
{
    const struct tensor *a = c->in[0], *b = c->in[1];
    if (a->dtype != ONNX_DTYPE_FLOAT || b->dtype != ONNX_DTYPE_FLOAT)
        return op_error(c, "only float32 is supported, got %s and %s", onnx_dtype_name(a->dtype),
                        onnx_dtype_name(b->dtype));
    if (a->rank < 1 || b->rank < 1)
        return op_error(c, "operands must have rank >= 1");
    struct tensor ab = { .rank = a->rank > 2 ? a->rank - 2 : 0 }, bb = { .rank = b->rank > 2 ? b->rank - 2 : 0 };
    memcpy(ab.dims, a->dims, sizeof(int64_t) * (size_t)ab.rank);
    memcpy(bb.dims, b->dims, sizeof(int64_t) * (size_t)bb.rank);
    int ra = a->rank, rb = b->rank;
    struct blas_gemm *g = &s->g;
    *g = (struct blas_gemm){ .trans_a = trans_a, .trans_b = trans_b, .alpha = 1.0f, .beta = 0.0f };
    g->m = ra == 1 ? 1 : a->dims[ra - (trans_a ? 1 : 2)];
    g->k = ra == 1 ? a->dims[0] : a->dims[ra - (trans_a ? 2 : 1)];
    int64_t kb = rb == 1 ? b->dims[0] : b->dims[rb - (trans_b ? 1 : 2)];
    g->n = rb == 1 ? 1 : b->dims[rb - (trans_b ? 2 : 1)];
    if (kb != g->k)
        return op_error(c, "inner dimensions differ: %lld and %lld", (long long)g->k, (long long)kb);
    g->lda = trans_a ? g->m : g->k;
    g->ldb = trans_b ? g->k : g->n;
    const struct tensor *bt[2] = { &ab, &bb };
    char msg[256];
    if (broadcast_shape(bt, 2, &s->batch, msg, sizeof msg))
        return op_error(c, "batch dimensions: %s", msg);
    broadcast_strides(&ab, &s->batch, s->a_strides);
    broadcast_strides(&bb, &s->batch, s->b_strides);
    return 0;
}

/* Matrix offset of batch entry bi in an operand with the given strides. */
static int64_t batch_offset(const struct blas_batch *s, const int64_t *strides, int64_t bi)
{
    int64_t off = 0;
    for (int i = s->batch.rank - 1; i >= 0; i--) {
        off += bi % s->batch.dims[i] * strides[i];
        bi /= s->batch.dims[i];
    }
    return off;
}

/* 1 when offset(bi) = bi * offset(1) for every entry: one strided batch. */
static int batch_linear(const struct blas_batch *s, const int64_t *strides, int64_t batches)
{
    int64_t step = batches > 1 ? batch_offset(s, strides, 1) : 0;
    for (int64_t bi = 2; bi < batches; bi++)
        if (batch_offset(s, strides, bi) != bi * step)
            return 0;
    return 1;
}

static int matmul_run(struct op_call *c, struct blas_batch *s)
{
    const float *a = c->in[0]->data, *b = c->in[1]->data;
    float *y = c->out[0]->data;
    struct blas_gemm *g = &s->g;
    int64_t batches = tensor_numel(&s->batch);
    if (batches <= 0 || g->m <= 0 || g->n <= 0)
        return 0;
    if (g->k <= 0)
        return zero_fill(c, y, tensor_size_bytes(c->out[0]));
    int64_t mk = g->m * g->k, kn = g->k * g->n, mn = g->m * g->n;
    int b_shared = 1, a_full = 1;
    for (int i = 0; i < s->batch.rank; i++) {
        b_shared &= s->b_strides[i] == 0;
        a_full &= !(s->a_strides[i] == 0 && s->batch.dims[i] != 1);
    }
    if (batches == 1 || (b_shared && a_full && !g->trans_a)) {
        struct blas_gemm folded = *g;
        folded.m = batches * g->m;
        return gemm_one(c, &folded, a, b, y);
    }
    if (batch_linear(s, s->a_strides, batches) && batch_linear(s, s->b_strides, batches))
        return gemm_strided(c, g, a, batch_offset(s, s->a_strides, 1) * mk, b, batch_offset(s, s->b_strides, 1) * kn,
                            y, batches);
    for (int64_t bi = 0; bi < batches; bi++)
        if (gemm_one(c, g, a + batch_offset(s, s->a_strides, bi) * mk, b + batch_offset(s, s->b_strides, bi) * kn,
                     y + bi * mn))
            return -1;
    return 0;
}

static int matmul_cuda(struct op_call *c)
{
    struct blas_batch s;
    if (batch_get(c, 0, 0, &s))
        return -1;
    return matmul_run(c, &s);
}

static int matmul_trans_cuda(struct op_call *c)
{
    const struct matmul_trans_params *p = c->params;
    struct blas_batch s;
    if (c->in[0]->rank < 2 || c->in[1]->rank < 2)
        return op_error(c, "operands must have rank >= 2, got %d and %d", c->in[0]->rank, c->in[1]->rank);
    if (batch_get(c, p->trans_a, p->trans_b, &s))
        return -1;
    return matmul_run(c, &s);
}

CUDA_KERNEL_TABLE(blas) = {
    { "", "Gemm", gemm_cuda },
    { "", "MatMul", matmul_cuda },
    { "dtrexec", "MatMulTrans", matmul_trans_cuda },
    { 0 },
};
