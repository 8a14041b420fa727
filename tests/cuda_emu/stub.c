/* tests/cuda_emu/stub.c — host stand-ins for the CUDA runtime, cuBLAS and the CUDA backend (see run.sh). */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include "ops/cuda/cuda-impl.h"
#include "tests/testcuda.h"

cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k, cudaStream_t st) { memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t st) { memset(d, v, n); return cudaSuccess; }
cudaError_t cudaMemset2DAsync(void *d, size_t pitch, int v, size_t w, size_t h, cudaStream_t st)
{ for (size_t i = 0; i < h; i++) memset((char *)d + i * pitch, v, w); return cudaSuccess; }
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *data) { fn(data); return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return cudaSuccess; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) { return "emulated error"; }
static cublasPointerMode_t mode = CUBLAS_POINTER_MODE_HOST;
cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t *m) { *m = mode; return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t m) { mode = m; return CUBLAS_STATUS_SUCCESS; }
const char *cublasGetStatusString(cublasStatus_t s) { return "emulated cublas error"; }
cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                              const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                              float *C, int ldc)
{
    cblas_sgemm(CblasColMajor, ta == CUBLAS_OP_T ? CblasTrans : CblasNoTrans, tb == CUBLAS_OP_T ? CblasTrans : CblasNoTrans,
                m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                                         long long sc, int batch)
{
    for (int i = 0; i < batch; i++)
        cblas_sgemm(CblasColMajor, ta == CUBLAS_OP_T ? CblasTrans : CblasNoTrans,
                    tb == CUBLAS_OP_T ? CblasTrans : CblasNoTrans, m, n, k, *alpha, A + i * sa, lda, B + i * sb, ldb,
                    *beta, C + i * sc, ldc);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const double *alpha, const double *A, int lda, long long sa,
                                         const double *B, int ldb, long long sb, const double *beta, double *C,
                                         int ldc, long long sc, int batch)
{
    for (int i = 0; i < batch; i++)
        cblas_dgemm(CblasColMajor, ta == CUBLAS_OP_T ? CblasTrans : CblasNoTrans,
                    tb == CUBLAS_OP_T ? CblasTrans : CblasNoTrans, m, n, k, *alpha, A + i * sa, lda, B + i * sb, ldb,
                    *beta, C + i * sc, ldc);
    return CUBLAS_STATUS_SUCCESS;
}

static struct cuda_ctx ctx = { .blas = (cublasHandle_t)1 };
static void *e_alloc(void *c, size_t n) { void *p = malloc(n ? n : 1); memset(p, 0x5a, n ? n : 1); return p; }
static void e_free(void *c, void *p) { free(p); }
static int e_to_dev(void *c, void *d, const void *s, size_t n) { memcpy(d, s, n); return 0; }
static int e_to_host(void *c, void *d, const void *s, size_t n) { memcpy(d, s, n); return 0; }
static int e_sync(void *c) { return 0; }
static const struct backend emu = { .kind = BACKEND_CUDA, .name = "cuda-emu", .ctx = &ctx, .alloc = e_alloc, .free = e_free,
                                    .copy_to_device = e_to_dev, .copy_to_host = e_to_host, .synchronize = e_sync,
                                    .kernel = cuda_kernel_of };
const struct backend *cuda_backend_open(char *why, size_t n) { return &emu; }
void cuda_backend_close(const struct backend *b) {}
const char *cuda_backend_last_error(const struct backend *b) { return "emulated backend error"; }
/* The module is ops/cuda/module.c itself (linked by run.sh, run_elem.sh)
 * over the kernel tables of the families a suite links. */
extern const struct backend_module dtrx_backend_module;
const struct backend_module *testcuda_module(char *why, size_t why_size) { return &dtrx_backend_module; }
