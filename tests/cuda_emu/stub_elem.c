/* tests/cuda_emu/stub_elem.c — the elementwise family's launchers that
 * run_elem.sh does not emulate (reductions, losses, dropout, optimizers:
 * their kernels use warp shuffles and shared memory across threads). Each
 * says so by failing; run_elem.sh runs only the test case whose kernels
 * all go through the one broadcasting kernel. */
#include <string.h>

#include "ops/cuda/elem-kernels.h"

size_t cuda_reduce_scratch_bytes(int dtype, const struct cuda_reduce_geom *g) { return 0; }
cudaError_t cuda_reduce_launch(cudaStream_t s, int kind, int mean, int dtype, const struct cuda_reduce_geom *g,
                               const void *x, void *y, void *scratch) { return cudaErrorNotSupported; }
cudaError_t cuda_select_grad_launch(cudaStream_t s, int dtype, int rank, const int64_t *dims, const int64_t *y_strides,
                                    int64_t n_out, const void *x, const void *y, const void *dy, void *dx,
                                    unsigned long long *first) { return cudaErrorNotSupported; }
cudaError_t cuda_loss_check_launch(cudaStream_t s, const struct cuda_loss_args *a, unsigned long long *bad)
{ return cudaErrorNotSupported; }
cudaError_t cuda_loss_stats_launch(cudaStream_t s, const struct cuda_loss_args *a, const void *dlp, double *lse,
                                   double *sdlp) { return cudaErrorNotSupported; }
cudaError_t cuda_loss_log_prob_launch(cudaStream_t s, const struct cuda_loss_args *a, const double *lse,
                                      void *log_prob) { return cudaErrorNotSupported; }
cudaError_t cuda_loss_nll_launch(cudaStream_t s, const struct cuda_loss_args *a, const double *lse, int reduction,
                                 void *out, double *weight_sum) { return cudaErrorNotSupported; }
cudaError_t cuda_loss_grad_launch(cudaStream_t s, const struct cuda_loss_args *a, int reduction, const void *dy,
                                  const void *dlp, const double *lse, const double *sdlp, const double *weight_sum,
                                  void *dx) { return cudaErrorNotSupported; }
cudaError_t cuda_dropout_launch(cudaStream_t s, int dtype, int64_t n, uint64_t key, double ratio, const void *x,
                                void *y, int mask_dtype, void *mask) { return cudaErrorNotSupported; }
cudaError_t cuda_dropout_mask_ones_launch(cudaStream_t s, int mask_dtype, int64_t n, void *mask)
{ return cudaErrorNotSupported; }
cudaError_t cuda_optim_launch(cudaStream_t s, const struct cuda_optim_args *a) { return cudaErrorNotSupported; }
/* elem_loss.c reads a flag back synchronously */
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k) { memmove(d, s, n); return cudaSuccess; }
