/* ops/cuda/layout_einsum.c — CUDA kernel of Einsum (ops/einsum.c), float
 * and double.
 *
 * The CPU file's plan and evaluation (einsum_eval, ops/einsum-impl.h) run
 * here with two device primitives: the strided pack (index_kernels.cu, one
 * thread per packed element, summing in double as the CPU does) and the
 * batched GEMM (cublasSgemmStridedBatched / cublasDgemmStridedBatched; the
 * row-major product is the column-major one with the operands swapped). So
 * the steps, packs and GEMM shapes are the CPU's, the attention patterns run
 * as one strided-batched GEMM straight into the output, and the handle's
 * pedantic math without atomics repeats its bits on recomputation (they
 * differ from the CPU's by cuBLAS's summation order). float16, bfloat16 and
 * integer inputs run on the CPU only. */
#include <limits.h>
#include <string.h>

#include "ops/cuda/index-kernels.h"
#include "ops/cuda/layout-impl.h"
#include "ops/einsum-impl.h"

static int pack_dev(struct op_call *c, int dtype, const void *src, void *dst, const struct einsum_loop *out,
                    const struct einsum_loop *sum)
{
    struct index_loop o = { .n = out->n }, s = { .n = sum->n };
    if (out->n > INDEX_EIN_MAXL || sum->n > INDEX_EIN_MAXL)
        return op_error(c, "internal: an einsum pack over %d + %d axes", out->n, sum->n);
    memcpy(o.dim, out->dim, sizeof(int64_t) * (size_t)out->n);
    memcpy(o.str, out->str, sizeof(int64_t) * (size_t)out->n);
    memcpy(s.dim, sum->dim, sizeof(int64_t) * (size_t)sum->n);
    memcpy(s.str, sum->str, sizeof(int64_t) * (size_t)sum->n);
    CUDA_TRY(c, index_ein_pack_launch(dst, src, dtype == ONNX_DTYPE_DOUBLE, &o, &s, cuda_ctx_of(c)->stream));
    return 0;
}

static int gemm_dev(struct op_call *c, int dtype, int64_t batch, int64_t m, int64_t n, int64_t k, const void *a,
                    int ta, const void *b, int tb, void *cm)
{
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || batch > INT_MAX)
        return op_error(c, "einsum GEMM of %lld x %lld x %lld (%lld batches) exceeds cuBLAS's 32-bit sizes",
                        (long long)m, (long long)n, (long long)k, (long long)batch);
    if (k == 0) {
        CUDA_TRY(c, cudaMemsetAsync(cm, 0, (size_t)(batch * m * n) * onnx_dtype_size(dtype), cuda_ctx_of(c)->stream));
        return 0;
    }
    cublasHandle_t h = cuda_ctx_of(c)->blas;
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    int lda = (int)(ta ? m : k), ldb = (int)(tb ? k : n);
    if (dtype == ONNX_DTYPE_DOUBLE) {
        const double one = 1.0, zero = 0.0;
        CUBLAS_TRY(c, cublasDgemmStridedBatched(h, ob, oa, (int)n, (int)m, (int)k, &one, b, ldb, k * n, a, lda, m * k,
                                                &zero, cm, (int)n, m * n, (int)batch));
    } else {
        const float one = 1.0f, zero = 0.0f;
        CUBLAS_TRY(c, cublasSgemmStridedBatched(h, ob, oa, (int)n, (int)m, (int)k, &one, b, ldb, k * n, a, lda, m * k,
                                                &zero, cm, (int)n, m * n, (int)batch));
    }
    return 0;
}

static const struct einsum_backend ein_dev = { .pack = pack_dev, .gemm = gemm_dev };

int cuda_einsum(struct op_call *c)
{
    struct tensor *y = c->out[0];
    if (y->dtype != ONNX_DTYPE_FLOAT && y->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "CUDA: einsum of %s is not supported (float and double are)", onnx_dtype_name(y->dtype));
    const void *data[32];
    if (c->n_in > 32)
        return op_error(c, "%d operands; at most 32 are supported", c->n_in);
    for (int i = 0; i < c->n_in; i++)
        data[i] = c->in[i]->data;
    return einsum_eval(c, &ein_dev, y->dtype, data, y->data);
}
