/* ops/cuda/cuda-impl.h — what the CUDA kernel files share: the backend
 * context behind op_env.backend->ctx, error checks that turn CUDA, cuBLAS
 * and cuDNN failures into op_error() messages, and the kernel tables.
 *
 * Layout of a family: host code in ops/cuda/<family>.c (plain C: shapes,
 * parameters from the family's ops/ header, library calls, launches), device
 * code in ops/cuda/<family>_kernels.cu exposing extern "C" launchers declared
 * in ops/cuda/<family>-kernels.h. Each host file with kernels defines one
 * table, ending with a zero entry:
 *     CUDA_KERNEL_TABLE(family) = { { "", "Op", cuda_op }, ..., { 0 } };
 * which registers itself (module.c finds every table in the link); nothing
 * else lists it. Not for use outside ops/cuda/. */
#ifndef DTRX_OPS_CUDA_IMPL_H
#define DTRX_OPS_CUDA_IMPL_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "ops/cuda/cuda.h"
#include "ops/ops.h"

struct cuda_ctx {
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    cudaEvent_t start, stop;       /* kernel timing for measured costs */
};

static inline struct cuda_ctx *cuda_ctx_of(const struct op_call *c)
{
    return (struct cuda_ctx *)c->env->backend->ctx;
}

struct cuda_kernel_entry {
    const char *domain;            /* "" for ai.onnx, "dtrexec" for gradient and optimizer ops */
    const char *name;
    cuda_kernel_fn kernel;
};

/* Defines the table cuda_kernels_<family>[] and registers it: a pointer to
 * it goes into the linker section dtrx_cuda_kernels, which module.c walks
 * (__start_/__stop_dtrx_cuda_kernels). Sanitizers leave variables in named
 * sections unpadded, so the section stays an array. */
#define CUDA_KERNEL_TABLE(family)                                                             \
    extern const struct cuda_kernel_entry cuda_kernels_##family[];                            \
    __attribute__((used, section("dtrx_cuda_kernels")))                                       \
    const struct cuda_kernel_entry *const cuda_kernel_table_##family = cuda_kernels_##family; \
    const struct cuda_kernel_entry cuda_kernels_##family[]

/* Each returns op_error(c, ...) (-1) on failure, 0 on success. */
#define CUDA_TRY(c, expr)                                                                  \
    do {                                                                                   \
        cudaError_t cuda_try_e_ = (expr);                                                  \
        if (cuda_try_e_ != cudaSuccess)                                                    \
            return op_error((c), "CUDA: %s (%s)", cudaGetErrorString(cuda_try_e_), #expr); \
    } while (0)
#define CUBLAS_TRY(c, expr)                                                                     \
    do {                                                                                        \
        cublasStatus_t cublas_try_s_ = (expr);                                                  \
        if (cublas_try_s_ != CUBLAS_STATUS_SUCCESS)                                             \
            return op_error((c), "cuBLAS: %s (%s)", cublasGetStatusString(cublas_try_s_), #expr); \
    } while (0)
#define CUDNN_TRY(c, expr)                                                                      \
    do {                                                                                        \
        cudnnStatus_t cudnn_try_s_ = (expr);                                                    \
        if (cudnn_try_s_ != CUDNN_STATUS_SUCCESS)                                               \
            return op_error((c), "cuDNN: %s (%s)", cudnnGetErrorString(cudnn_try_s_), #expr);  \
    } while (0)
/* After a launch from .cu code: reports launch-configuration errors. */
#define CUDA_LAUNCHED(c) CUDA_TRY(c, cudaGetLastError())

#endif
