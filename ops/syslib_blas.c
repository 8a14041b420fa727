/* ops/syslib_blas.c — forwarding definitions of the OpenBLAS functions ops/
 * calls (ops/syslib.h): cblas_sgemm and cblas_dgemm (ops/gemm.c, einsum.c,
 * rnn.c) and the thread count the session sets. */
#include <cblas.h>

#include "ops/syslib-impl.h"

SYSLIB_FN_VOID(SYSLIB_OPENBLAS, cblas_dgemm,
               (const enum CBLAS_ORDER Order, const enum CBLAS_TRANSPOSE TransA, const enum CBLAS_TRANSPOSE TransB,
                const blasint M, const blasint N, const blasint K, const double alpha, const double *A,
                const blasint lda, const double *B, const blasint ldb, const double beta, double *C, const blasint ldc),
               (Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
SYSLIB_FN_VOID(SYSLIB_OPENBLAS, cblas_sgemm,
               (const enum CBLAS_ORDER Order, const enum CBLAS_TRANSPOSE TransA, const enum CBLAS_TRANSPOSE TransB,
                const blasint M, const blasint N, const blasint K, const float alpha, const float *A, const blasint lda,
                const float *B, const blasint ldb, const float beta, float *C, const blasint ldc),
               (Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
SYSLIB_FN_VOID(SYSLIB_OPENBLAS, openblas_set_num_threads, (int num_threads), (num_threads))
