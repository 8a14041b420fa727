/* ops/gemm.c — Gemm (opset 7, 9, 11, 13) and MatMul (opset 1, 9, 13), float32.
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
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"

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

struct gemm_params {
    float alpha, beta;
    int trans_a, trans_b;
};

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

const struct op_def op_gemm = {
    .domain = "", .name = "Gemm", .since = { 7, 9, 11, 13 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = gemm_parse, .infer = gemm_infer, .cost = gemm_cost,
    .kernel = { [BACKEND_CPU] = gemm_cpu },
};

/* ---- MatMul -------------------------------------------------------------- */

/* Shapes of a matmul after 1-D promotion: a is [batch..., m, k], b is
 * [batch..., k, n]; out carries the broadcast batch dims. */
struct matmul_shape {
    int64_t m, n, k;
    struct tensor batch;               /* broadcast batch shape (dims only) */
    int64_t a_strides[TENSOR_MAX_RANK], b_strides[TENSOR_MAX_RANK]; /* in matrices */
};

static int matmul_shape_get(const struct op_call *c, struct matmul_shape *s)
{
    const struct tensor *a = c->in[0], *b = c->in[1];
    if (a->dtype != ONNX_DTYPE_FLOAT || b->dtype != ONNX_DTYPE_FLOAT)
        return op_error(c, "only float32 is supported, got %s and %s",
                        onnx_dtype_name(a->dtype), onnx_dtype_name(b->dtype));
    if (a->rank < 1 || b->rank < 1)
        return op_error(c, "operands must have rank >= 1, got %d and %d", a->rank, b->rank);
    struct tensor ab = { .rank = a->rank > 2 ? a->rank - 2 : 0 };
    struct tensor bb = { .rank = b->rank > 2 ? b->rank - 2 : 0 };
    memcpy(ab.dims, a->dims, sizeof(int64_t) * ab.rank);
    memcpy(bb.dims, b->dims, sizeof(int64_t) * bb.rank);
    s->m = a->rank == 1 ? 1 : a->dims[a->rank - 2];
    s->k = a->dims[a->rank - 1];
    int64_t kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    s->n = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (kb != s->k) {
        char x[128], y[128];
        return op_error(c, "inner dimensions differ: A is %s, B is %s",
                        tensor_describe(a, x, sizeof x), tensor_describe(b, y, sizeof y));
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
    if (matmul_shape_get(c, &s))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = ONNX_DTYPE_FLOAT;
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

static int matmul_cpu(struct op_call *c)
{
    struct matmul_shape s;
    if (matmul_shape_get(c, &s))
        return -1;
    const float *a = c->in[0]->data, *b = c->in[1]->data;
    float *y = c->out[0]->data;
    int64_t batches = tensor_numel(&s.batch);
    int64_t mk = s.m * s.k, kn = s.k * s.n, mn = s.m * s.n;
    /* When only A has batch axes and B is one matrix, the batch folds into M:
     * one large GEMM instead of many small ones (the Transformer case). */
    int b_shared = 1;
    for (int i = 0; i < s.batch.rank; i++)
        if (s.b_strides[i] != 0)
            b_shared = 0;
    int a_full = 1;                    /* A's batch is dense and not broadcast */
    for (int i = 0; i < s.batch.rank; i++)
        if (s.a_strides[i] == 0 && s.batch.dims[i] != 1)
            a_full = 0;
    if (b_shared && a_full) {
        nn_sgemm(0, 0, batches * s.m, s.n, s.k, 1.0f, a, s.k, b, s.n, 0.0f, y, s.n);
        return 0;
    }
    /* Many small products (attention heads): one product per thread, each
     * single-threaded (oneDNN runs sequentially inside a parallel region),
     * instead of a fork/join per product. Each product's arithmetic is the
     * same whichever thread runs it, so the result stays bit-identical. */
    int small = (double)s.m * (double)s.n * (double)s.k < 4.0 * 1024 * 1024;
#pragma omp parallel for schedule(static) if (small && batches > 1)
    for (int64_t bi = 0; bi < batches; bi++) {
        int64_t rem = bi, aoff = 0, boff = 0;
        for (int i = s.batch.rank - 1; i >= 0; i--) {
            int64_t idx = rem % s.batch.dims[i];
            rem /= s.batch.dims[i];
            aoff += idx * s.a_strides[i];
            boff += idx * s.b_strides[i];
        }
        nn_sgemm(0, 0, s.m, s.n, s.k, 1.0f, a + aoff * mk, s.k, b + boff * kn, s.n, 0.0f,
                 y + bi * mn, s.n);
    }
    return 0;
}

const struct op_def op_matmul = {
    .domain = "", .name = "MatMul", .since = { 1, 9, 13 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = matmul_infer, .cost = matmul_cost,
    .kernel = { [BACKEND_CPU] = matmul_cpu },
};
