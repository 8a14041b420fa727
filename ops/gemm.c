/* ops/gemm.c — Gemm (opset 7, 9, 11, 13) and MatMul (opset 1, 9, 13), float32
 * (MatMul and MatMulTrans also float64, through OpenBLAS's cblas_dgemm).
 *
 * Gemm: Y = alpha * op(A) op(B) + beta * C, C unidirectionally broadcast to
 * [M, N] (Gemm-7 made C optional in practice from 11; it is optional here at
 * every version, a missing C meaning zero).
 * MatMul: numpy matmul — 1-D operands promoted to a matrix and the added axis
 * dropped again, leading (batch) axes broadcast.
 *
 * Both go through nn_sgemm: oneDNN's dnnl_sgemm, with OpenBLAS's cblas_sgemm
 * as the fallback should oneDNN refuse. Measured (one thread, ms, OpenBLAS
 * 0.3.21 / dnnl_sgemm): 128x768x768 1.14/0.92, 128x3072x768 4.72/4.24,
 * 128x768x3072 6.46/4.91, 12 x 128x128x64 0.29/0.22, 1024x768x768
 * 11.2/9.5, 3136x64x576 2.69/2.18, 1x1000x2048 0.65/0.34. oneDNN is faster on
 * every BERT/ResNet shape tried, and it threads through the same OpenMP pool
 * as the rest of the kernels: OpenBLAS's own pthreads would compete with
 * spinning OpenMP workers. For a given shape and thread count the work split
 * is fixed, so repeated calls are bit-identical (DTR recomputation needs it).
 *
 * Gradients: Gemm's are Gemm calls with the transposes rearranged; MatMul's
 * go through MatMulTrans (domain dtrexec), the same batched GEMM reading
 * either operand transposed in place. Measured like the forward (one
 * thread, ms): [8,128,768] x [768,3072] forward 47.4, dA 47.7, dB 43.8;
 * attention [8,12,128,64] x [8,12,64,128] forward 2.0, dA 2.4, dB 2.1.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"
#include "ops/nn-params.h"

void nn_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
              float *cm, int64_t ldc)
{
    if (m <= 0 || n <= 0)
        return;
    if (k <= 0) {
        /* BLAS leaves C * beta for k == 0, but some builds skip the scaling. */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                cm[i * ldc + j] = beta == 0.0f ? 0.0f : beta * cm[i * ldc + j];
        return;
    }
    if (dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb,
                   beta, cm, ldc) == dnnl_success)
        return;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n, (blasint)k,
                alpha, a, (blasint)lda, b, (blasint)ldb, beta, cm, (blasint)ldc);
}

/* ---- Gemm ---------------------------------------------------------------- */

static int gemm_parse(const struct onnx_node *node, int version, void **params,
                      char *err, size_t err_size)
{
    struct gemm_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (Gemm): out of memory", node->name);
        return -1;
    }
    p->alpha = onnx_node_attr_float(node, "alpha", 1.0f);
    p->beta = onnx_node_attr_float(node, "beta", 1.0f);
    p->trans_a = onnx_node_attr_int(node, "transA", 0) != 0;
    p->trans_b = onnx_node_attr_int(node, "transB", 0) != 0;
    *params = p;
    return 0;
}

static int gemm_dims(const struct op_call *c, int64_t *m, int64_t *n, int64_t *k)
{
    const struct gemm_params *p = c->params;
    const struct tensor *a = c->in[0], *b = c->in[1];
    if (a->rank != 2 || b->rank != 2)
        return op_error(c, "A and B must be matrices, got ranks %d and %d", a->rank, b->rank);
    if (a->dtype != ONNX_DTYPE_FLOAT || b->dtype != ONNX_DTYPE_FLOAT)
        return op_error(c, "only float32 is supported, got %s and %s",
                        onnx_dtype_name(a->dtype), onnx_dtype_name(b->dtype));
    *m = p->trans_a ? a->dims[1] : a->dims[0];
    *k = p->trans_a ? a->dims[0] : a->dims[1];
    int64_t kb = p->trans_b ? b->dims[1] : b->dims[0];
    *n = p->trans_b ? b->dims[0] : b->dims[1];
    if (kb != *k)
        return op_error(c, "inner dimensions differ: op(A) is [%lld,%lld], op(B) is [%lld,%lld]",
                        (long long)*m, (long long)*k, (long long)kb, (long long)*n);
    return 0;
}

static int gemm_infer(struct op_call *c)
{
    int64_t m = 0, n = 0, k = 0;
    if (gemm_dims(c, &m, &n, &k))
        return -1;
    const struct tensor *bias = c->n_in > 2 ? c->in[2] : NULL;
    if (bias) {
        if (bias->rank > 2)
            return op_error(c, "C must have rank <= 2, got %d", bias->rank);
        int64_t cm = bias->rank == 2 ? bias->dims[0] : 1;
        int64_t cn = bias->rank >= 1 ? bias->dims[bias->rank - 1] : 1;
        if ((cm != 1 && cm != m) || (cn != 1 && cn != n))
            return op_error(c, "C of shape [%lld,%lld] does not broadcast to [%lld,%lld]",
                            (long long)cm, (long long)cn, (long long)m, (long long)n);
    }
    struct tensor *y = c->out[0];
    y->dtype = ONNX_DTYPE_FLOAT;
    y->rank = 2;
    y->dims[0] = m;
    y->dims[1] = n;
    return 0;
}

static struct op_cost gemm_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    int64_t m = 0, n = 0, k = 0;
    const struct gemm_params *p = c->params;
    const struct tensor *a = c->in[0], *b = c->in[1];
    if (a->rank == 2 && b->rank == 2) {
        m = p->trans_a ? a->dims[1] : a->dims[0];
        k = p->trans_a ? a->dims[0] : a->dims[1];
        n = p->trans_b ? b->dims[0] : b->dims[1];
        cost.flops = 2.0 * (double)m * (double)n * (double)k + 2.0 * (double)m * (double)n;
    }
    return cost;
}

static int gemm_cpu(struct op_call *c)
{
    const struct gemm_params *p = c->params;
    int64_t m = 0, n = 0, k = 0;
    if (gemm_dims(c, &m, &n, &k))
        return -1;
    const struct tensor *bias = c->n_in > 2 ? c->in[2] : NULL;
    float *y = c->out[0]->data;
    float beta = 0.0f;
    if (bias && p->beta != 0.0f) {
        const float *cv = bias->data;
        int64_t cm = bias->rank == 2 ? bias->dims[0] : 1;
        int64_t cn = bias->rank >= 1 ? bias->dims[bias->rank - 1] : 1;
        for (int64_t i = 0; i < m; i++) {
            const float *row = cv + (cm == 1 ? 0 : i * cn);
            for (int64_t j = 0; j < n; j++)
                y[i * n + j] = row[cn == 1 ? 0 : j];
        }
        beta = p->beta;
    }
    nn_sgemm(p->trans_a, p->trans_b, m, n, k, p->alpha, c->in[0]->data,
             c->in[0]->dims[1], c->in[1]->data, c->in[1]->dims[1], beta, y, n);
    return 0;
}


/* ---- MatMul -------------------------------------------------------------- */

/* Shapes of a matmul after 1-D promotion: op(a) is [batch..., m, k], op(b)
 * is [batch..., k, n], op transposing the last two axes when asked
 * (MatMulTrans); out carries the broadcast batch dims. */
struct matmul_shape {
    int64_t m, n, k;
    int trans_a, trans_b;
    struct tensor batch;               /* broadcast batch shape (dims only) */
    int64_t a_strides[TENSOR_MAX_RANK], b_strides[TENSOR_MAX_RANK]; /* in matrices */
};

static int matmul_shape_get(const struct op_call *c, int trans_a, int trans_b, struct matmul_shape *s)
{
    const struct tensor *a = c->in[0], *b = c->in[1];
    if (a->dtype != b->dtype || (a->dtype != ONNX_DTYPE_FLOAT && a->dtype != ONNX_DTYPE_DOUBLE))
        return op_error(c, "only float32 and float64 (both operands the same) are supported, got %s and %s",
                        onnx_dtype_name(a->dtype), onnx_dtype_name(b->dtype));
    int min_rank = trans_a || trans_b ? 2 : 1;
    if (a->rank < min_rank || b->rank < min_rank)
        return op_error(c, "operands must have rank >= %d, got %d and %d", min_rank, a->rank, b->rank);
    struct tensor ab = { .rank = a->rank > 2 ? a->rank - 2 : 0 };
    struct tensor bb = { .rank = b->rank > 2 ? b->rank - 2 : 0 };
    memcpy(ab.dims, a->dims, sizeof(int64_t) * ab.rank);
    memcpy(bb.dims, b->dims, sizeof(int64_t) * bb.rank);
    s->trans_a = trans_a;
    s->trans_b = trans_b;
    int ra = a->rank, rb = b->rank;
    s->m = ra == 1 ? 1 : a->dims[ra - (trans_a ? 1 : 2)];
    s->k = ra == 1 ? a->dims[0] : a->dims[ra - (trans_a ? 2 : 1)];
    int64_t kb = rb == 1 ? b->dims[0] : b->dims[rb - (trans_b ? 1 : 2)];
    s->n = rb == 1 ? 1 : b->dims[rb - (trans_b ? 2 : 1)];
    if (kb != s->k) {
        char x[128], y[128];
        return op_error(c, "inner dimensions differ: A is %s, B is %s%s",
                        tensor_describe(a, x, sizeof x), tensor_describe(b, y, sizeof y),
                        trans_a || trans_b ? " (after transposition)" : "");
    }
    const struct tensor *bt[2] = { &ab, &bb };
    char msg[256];
    if (broadcast_shape(bt, 2, &s->batch, msg, sizeof msg))
        return op_error(c, "batch dimensions: %s", msg);
    broadcast_strides(&ab, &s->batch, s->a_strides);
    broadcast_strides(&bb, &s->batch, s->b_strides);
    return 0;
}

static int matmul_infer(struct op_call *c)
{
    struct matmul_shape s;
    if (matmul_shape_get(c, 0, 0, &s))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = c->in[0]->dtype;
    y->rank = s.batch.rank;
    memcpy(y->dims, s.batch.dims, sizeof(int64_t) * s.batch.rank);
    if (c->in[0]->rank != 1)
        y->dims[y->rank++] = s.m;
    if (c->in[1]->rank != 1)
        y->dims[y->rank++] = s.n;
    if (y->rank > TENSOR_MAX_RANK)
        return op_error(c, "result rank %d exceeds %d", y->rank, TENSOR_MAX_RANK);
    return 0;
}

static struct op_cost matmul_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct tensor *a = c->in[0], *b = c->in[1], *y = c->out[0];
    if (a->rank >= 1 && b->rank >= 1 && y) {
        double k = (double)a->dims[a->rank - 1];
        cost.flops = 2.0 * k * (double)tensor_numel(y);
    }
    return cost;
}

/* float64: one cblas_dgemm per product, in batch order. */
static int matmul_run_double(struct op_call *c, const struct matmul_shape *s)
{
    const double *a = c->in[0]->data, *b = c->in[1]->data;
    double *y = c->out[0]->data;
    int64_t batches = tensor_numel(&s->batch), mn = s->m * s->n;
    int64_t lda = s->trans_a ? s->m : s->k, ldb = s->trans_b ? s->k : s->n;
    for (int64_t bi = 0; bi < batches; bi++) {
        int64_t rem = bi, aoff = 0, boff = 0;
        for (int i = s->batch.rank - 1; i >= 0; i--) {
            int64_t idx = rem % s->batch.dims[i];
            rem /= s->batch.dims[i];
            aoff += idx * s->a_strides[i];
            boff += idx * s->b_strides[i];
        }
        if (mn == 0)
            continue;
        if (s->k == 0) {
            memset(y + bi * mn, 0, sizeof(double) * (size_t)mn);
            continue;
        }
        cblas_dgemm(CblasRowMajor, s->trans_a ? CblasTrans : CblasNoTrans,
                    s->trans_b ? CblasTrans : CblasNoTrans, (blasint)s->m, (blasint)s->n, (blasint)s->k, 1.0,
                    a + aoff * s->m * s->k, (blasint)lda, b + boff * s->k * s->n, (blasint)ldb, 0.0,
                    y + bi * mn, (blasint)s->n);
    }
    return 0;
}

static int matmul_run(struct op_call *c, const struct matmul_shape *s)
{
    if (c->in[0]->dtype == ONNX_DTYPE_DOUBLE)
        return matmul_run_double(c, s);
    const float *a = c->in[0]->data, *b = c->in[1]->data;
    float *y = c->out[0]->data;
    int64_t batches = tensor_numel(&s->batch);
    int64_t mk = s->m * s->k, kn = s->k * s->n, mn = s->m * s->n;
    int64_t lda = s->trans_a ? s->m : s->k, ldb = s->trans_b ? s->k : s->n;
    /* When only A has batch axes and B is one matrix, the batch folds into M:
     * one large GEMM instead of many small ones (the Transformer case). */
    int b_shared = 1;
    for (int i = 0; i < s->batch.rank; i++)
        if (s->b_strides[i] != 0)
            b_shared = 0;
    int a_full = 1;                    /* A's batch is dense and not broadcast */
    for (int i = 0; i < s->batch.rank; i++)
        if (s->a_strides[i] == 0 && s->batch.dims[i] != 1)
            a_full = 0;
    if (b_shared && a_full && !s->trans_a) {
        nn_sgemm(0, s->trans_b, batches * s->m, s->n, s->k, 1.0f, a, lda, b, ldb, 0.0f, y, s->n);
        return 0;
    }
    /* Many small products (attention heads): one product per thread, each
     * single-threaded (oneDNN runs sequentially inside a parallel region),
     * instead of a fork/join per product. Each product's arithmetic is the
     * same whichever thread runs it, so the result stays bit-identical. */
    int small = (double)s->m * (double)s->n * (double)s->k < 4.0 * 1024 * 1024;
#pragma omp parallel for schedule(static) if (small && batches > 1)
    for (int64_t bi = 0; bi < batches; bi++) {
        int64_t rem = bi, aoff = 0, boff = 0;
        for (int i = s->batch.rank - 1; i >= 0; i--) {
            int64_t idx = rem % s->batch.dims[i];
            rem /= s->batch.dims[i];
            aoff += idx * s->a_strides[i];
            boff += idx * s->b_strides[i];
        }
        nn_sgemm(s->trans_a, s->trans_b, s->m, s->n, s->k, 1.0f, a + aoff * mk, lda, b + boff * kn,
                 ldb, 0.0f, y + bi * mn, s->n);
    }
    return 0;
}

static int matmul_cpu(struct op_call *c)
{
    struct matmul_shape s;
    if (matmul_shape_get(c, 0, 0, &s))
        return -1;
    return matmul_run(c, &s);
}

/* ---- MatMulTrans (domain dtrexec) ----------------------------------------------
 * Y = op(A) op(B), numpy matmul with the last two axes of A (transA = 1)
 * and/or B (transB = 1) transposed; both ranks >= 2, batch axes broadcast.
 * The gradients of MatMul and Gemm are products of this kind, and sgemm
 * reads transposed operands in place, so no Transpose copy is made. */

static int matmul_trans_parse(const struct onnx_node *node, int version, void **params,
                              char *err, size_t err_size)
{
    (void)version;
    struct matmul_trans_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (MatMulTrans): out of memory", node->name);
        return -1;
    }
    p->trans_a = onnx_node_attr_int(node, "transA", 0) != 0;
    p->trans_b = onnx_node_attr_int(node, "transB", 0) != 0;
    *params = p;
    return 0;
}

static int matmul_trans_infer(struct op_call *c)
{
    const struct matmul_trans_params *p = c->params;
    struct matmul_shape s;
    if (c->in[0]->rank < 2 || c->in[1]->rank < 2)
        return op_error(c, "operands must have rank >= 2, got %d and %d", c->in[0]->rank,
                        c->in[1]->rank);
    if (matmul_shape_get(c, p->trans_a, p->trans_b, &s))
        return -1;
    if (s.batch.rank + 2 > TENSOR_MAX_RANK)
        return op_error(c, "result rank %d exceeds %d", s.batch.rank + 2, TENSOR_MAX_RANK);
    struct tensor *y = c->out[0];
    y->dtype = c->in[0]->dtype;
    y->rank = s.batch.rank + 2;
    memcpy(y->dims, s.batch.dims, sizeof(int64_t) * s.batch.rank);
    y->dims[s.batch.rank] = s.m;
    y->dims[s.batch.rank + 1] = s.n;
    return 0;
}

static struct op_cost matmul_trans_cost(const struct op_call *c)
{
    const struct matmul_trans_params *p = c->params;
    struct op_cost cost = cost_memory(c);
    const struct tensor *a = c->in[0], *y = c->out[0];
    if (a->rank >= 2 && y)
        cost.flops = 2.0 * (double)a->dims[a->rank - (p->trans_a ? 2 : 1)] * (double)tensor_numel(y);
    return cost;
}

static int matmul_trans_cpu(struct op_call *c)
{
    const struct matmul_trans_params *p = c->params;
    struct matmul_shape s;
    if (matmul_shape_get(c, p->trans_a, p->trans_b, &s))
        return -1;
    return matmul_run(c, &s);
}

/* ---- gradients ------------------------------------------------------------------ */

static int nn_grad_reshape(struct grad_ctx *g, int h, int rank, const int64_t *dims, int *out)
{
    int shape = grad_const_i64(g, rank, dims);
    if (shape < 0)
        return -1;
    int in[2] = { h, shape };
    return g->emit(g, "Reshape", NULL, 0, 2, in, 1, out);
}

static int emit_matmul_trans(struct grad_ctx *g, int a, int b, int trans_a, int trans_b, int *out)
{
    struct onnx_attr at[2] = {
        { .name = "transA", .type = ONNX_ATTR_INT, .i = trans_a },
        { .name = "transB", .type = ONNX_ATTR_INT, .i = trans_b },
    };
    int in[2] = { a, b };
    return g->emit(g, "MatMulTrans", at, 2, 2, in, 1, out);
}

/* Y = A B with 1-D operands promoted (A [k] -> [1, k], B [k] -> [k, 1]):
 *   dA = dY B^T, dB = A^T dY, over the broadcast batch, then summed over the
 *   axes along which each operand was broadcast (grad_add_dx_broadcast).
 * B one matrix under a batched A (a Linear layer): A and dY fold their batch
 * into rows and dB is one GEMM, A'^T dY', rather than a batch of products
 * summed afterwards. */
static int matmul_grad_b(struct grad_ctx *g, const struct tensor *a, const struct tensor *b, int ha, int hdy,
                         int64_t k, int64_t n, int64_t *dims);

static int matmul_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    const struct tensor *a = g->fwd->in[0], *b = g->fwd->in[1], *y = g->fwd->out[0];
    int ha = g->in[0], hb = g->in[1], hdy = g->dy[0];
    int64_t k = a->dims[a->rank - 1];
    int64_t m = a->rank == 1 ? 1 : a->dims[a->rank - 2];
    int64_t n = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    int64_t dims[TENSOR_MAX_RANK + 2];
    if (a->rank == 1) {
        int64_t d[2] = { 1, k };
        if (nn_grad_reshape(g, ha, 2, d, &ha))
            return -1;
    }
    if (b->rank == 1) {
        int64_t d[2] = { k, 1 };
        if (nn_grad_reshape(g, hb, 2, d, &hb))
            return -1;
    }
    /* dY with the promoted axes back: [batch..., m, n] */
    int batch_rank = y->rank - (a->rank != 1) - (b->rank != 1);
    if (a->rank == 1 || b->rank == 1) {
        memcpy(dims, y->dims, sizeof(int64_t) * (size_t)batch_rank);
        dims[batch_rank] = m;
        dims[batch_rank + 1] = n;
        if (nn_grad_reshape(g, hdy, batch_rank + 2, dims, &hdy))
            return -1;
    }
    /* dB reads A, dA reads B: the gradient that reads the larger operand
     * first, so that under a budget that operand (an activation, against a
     * weight) can be evicted while the other gradient is computed. */
    int b_first = tensor_numel(a) > tensor_numel(b);
    for (int pass = 0; pass < 2; pass++) {
        if ((pass == 0) == b_first) {
            if (matmul_grad_b(g, a, b, ha, hdy, k, n, dims))
                return -1;
            continue;
        }
        if (!g->need_dx[0])
            continue;
        int da;
        if (emit_matmul_trans(g, hdy, hb, 0, 1, &da))
            return -1;
        if (a->rank == 1) {            /* [batch..., 1, k] -> [batch..., k] */
            memcpy(dims, y->dims, sizeof(int64_t) * (size_t)batch_rank);
            dims[batch_rank] = k;
            if (nn_grad_reshape(g, da, batch_rank + 1, dims, &da))
                return -1;
        }
        if (grad_add_dx_broadcast(g, 0, da))
            return -1;
    }
    return 0;
}

static int matmul_grad_b(struct grad_ctx *g, const struct tensor *a, const struct tensor *b, int ha, int hdy,
                         int64_t k, int64_t n, int64_t *dims)
{
    if (g->need_dx[1]) {
        int db;
        if (b->rank <= 2 && a->rank > 2) {
            int64_t rows = tensor_numel(a) / k, d2[2];
            int a2, dy2;
            d2[0] = rows;
            d2[1] = k;
            if (nn_grad_reshape(g, ha, 2, d2, &a2))
                return -1;
            d2[1] = n;
            if (nn_grad_reshape(g, hdy, 2, d2, &dy2) || emit_matmul_trans(g, a2, dy2, 1, 0, &db))
                return -1;
        } else if (emit_matmul_trans(g, ha, hdy, 1, 0, &db)) {
            return -1;
        }
        if (b->rank == 1) {            /* [batch..., k, 1] -> [batch..., k] */
            const struct tensor *t = g->shape(g, db);
            if (!t)
                return grad_error(g, "no shape for the gradient of B");
            int r = t->rank - 1;
            memcpy(dims, t->dims, sizeof(int64_t) * (size_t)r);
            if (nn_grad_reshape(g, db, r, dims, &db))
                return -1;
        }
        if (grad_add_dx_broadcast(g, 1, db))
            return -1;
    }
    return 0;
}

static int emit_gemm(struct grad_ctx *g, int a, int b, int trans_a, int trans_b, float alpha, int *out)
{
    struct onnx_attr at[3] = {
        { .name = "transA", .type = ONNX_ATTR_INT, .i = trans_a },
        { .name = "transB", .type = ONNX_ATTR_INT, .i = trans_b },
        { .name = "alpha", .type = ONNX_ATTR_FLOAT, .f = alpha },
    };
    int in[2] = { a, b };
    return g->emit(g, "Gemm", at, 3, 2, in, 1, out);
}

/* Y = alpha op(A) op(B) + beta C:
 *   dA = alpha dY op(B)^T (transposed back when transA), dB likewise,
 *   dC = beta * dY summed over C's broadcast axes. */
static int gemm_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    const struct gemm_params *p = g->fwd->params;
    int dy = g->dy[0], ha = g->in[0], hb = g->in[1], h;
    float alpha = p->alpha;
    /* dB reads A and dA reads B: the one reading the larger operand first
     * (as MatMul's gradient does). */
    int b_first = tensor_numel(g->fwd->in[0]) > tensor_numel(g->fwd->in[1]);
    for (int pass = 0; pass < 2; pass++) {
        int which = (pass == 0) == b_first ? 1 : 0;
        if (!g->need_dx[which])
            continue;
        int rc = which == 0 ? (!p->trans_a ? emit_gemm(g, dy, hb, 0, !p->trans_b, alpha, &h)
                                           : emit_gemm(g, hb, dy, p->trans_b, 1, alpha, &h))
                            : (!p->trans_b ? emit_gemm(g, ha, dy, !p->trans_a, 0, alpha, &h)
                                           : emit_gemm(g, dy, ha, 1, p->trans_a, alpha, &h));
        if (rc || g->add_dx(g, which, h))
            return -1;
    }
    if (g->fwd->n_in > 2 && g->fwd->in[2] && g->need_dx[2]) {
        if (grad_reduce_to(g, dy, g->fwd->in[2], &h))
            return -1;
        if (p->beta != 1.0f) {
            float beta = p->beta;
            struct tensor t = { .dtype = ONNX_DTYPE_FLOAT, .rank = 0, .data = &beta };
            int in[2] = { h, g->constant(g, &t) };
            if (in[1] < 0 || g->emit(g, "Mul", NULL, 0, 2, in, 1, &h))
                return -1;
        }
        if (g->add_dx(g, 2, h))
            return -1;
    }
    return 0;
}

const struct op_def op_gemm = {
    .domain = "", .name = "Gemm", .since = { 7, 9, 11, 13 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = gemm_parse, .infer = gemm_infer, .cost = gemm_cost,
    .kernel = { [BACKEND_CPU] = gemm_cpu },
    .grad = gemm_grad,
    .grad_saves_in = (1u << 0) | (1u << 1),
};

const struct op_def op_matmul = {
    .domain = "", .name = "MatMul", .since = { 1, 9, 13 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = matmul_infer, .cost = matmul_cost,
    .kernel = { [BACKEND_CPU] = matmul_cpu },
    .grad = matmul_grad,
    .grad_saves_in = (1u << 0) | (1u << 1),
};

const struct op_def op_matmul_trans = {
    .domain = "dtrexec", .name = "MatMulTrans", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = matmul_trans_parse, .infer = matmul_trans_infer, .cost = matmul_trans_cost,
    .kernel = { [BACKEND_CPU] = matmul_trans_cpu },
};
