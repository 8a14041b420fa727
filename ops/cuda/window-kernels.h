/* ops/cuda/window-kernels.h — the launchers of ops/cuda/window_kernels.cu,
 * the device code of the "window" family (ops/cuda/window.c): LpPool,
 * MaxUnpool, Col2Im and their gradients, over the window arithmetic of
 * ops/pool-window.h that the CPU kernels run too. Plain C types only;
 * `f64` selects double over float. Every launcher queues its kernels on
 * `stream` and returns cudaSuccess or the launch error. Each output element
 * is computed by one thread from its inputs alone (MaxUnpool's winners are
 * decided by an atomic minimum, which does not depend on the order of
 * arrival): deterministic. */
#ifndef DTRX_OPS_CUDA_WINDOW_KERNELS_H
#define DTRX_OPS_CUDA_WINDOW_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "ops/pool-window.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[plane, o] = LpPool's window o of x's plane, planes x out-size threads. */
cudaError_t cuda_lp_pool_launch(cudaStream_t stream, int f64, const struct pool_win *w, int64_t planes,
                                double p, const void *x, void *y);
/* dx[plane, i] = LpPoolGrad's sum for input element i. */
cudaError_t cuda_lp_pool_grad_launch(cudaStream_t stream, int f64, const struct pool_win *w,
                                     int64_t planes, double p, const void *dy, const void *x,
                                     const void *y, void *dx);

/* Col2Im: y [n * c, pixels] from x [n * c, kernel * cols]; Im2Col, its
 * adjoint: dx [n * c, kernel * cols] from dy [n * c, pixels]. */
cudaError_t cuda_col2im_launch(cudaStream_t stream, int f64, const struct col2im_geom *g,
                               const void *x, void *y);
cudaError_t cuda_im2col_launch(cudaStream_t stream, int f64, const struct col2im_geom *g,
                               const void *dy, void *dx);

/* MaxUnpool's winners: owner (inf_numel entries, set to all ones by the
 * caller) receives ~j of the last j writing each place; *bad (all ones
 * before) the least j whose index is outside [0, inf_numel). */
cudaError_t cuda_unpool_owner_launch(cudaStream_t stream, const struct unpool_geom *g, int64_t n,
                                     const int64_t *ind, unsigned long long *owner,
                                     unsigned long long *bad);
/* Forward (grad 0): y[place(I[j])] = x[j] for each winning j (y zeroed by
 * the caller). Gradient (grad 1): x[j] = y[place(I[j])] for winners, else 0
 * (x is dX, y is dY). Elements of esize bytes (1, 2, 4 or 8). */
cudaError_t cuda_unpool_move_launch(cudaStream_t stream, int grad, size_t esize,
                                    const struct unpool_geom *g, int64_t n, const int64_t *ind,
                                    const unsigned long long *owner, void *x, void *y);

/* DFT and STFT: one thread per output element (re, im); window NULL for
 * DFT or an STFT without one; frames 0 for DFT. */
cudaError_t cuda_dft_launch(cudaStream_t stream, int f64, const struct dft_geom *g, int64_t frames,
                            int64_t step, const void *x, const void *window, void *y);

/* DFTGrad: dx (X's shape) gathered per element; dw (the window's
 * gradient, may be NULL) per tap. window and x NULL when absent. */
cudaError_t cuda_dft_grad_launch(cudaStream_t stream, int f64, const struct dft_geom *g, int64_t frames,
                                 int64_t step, const void *dy, const void *x, const void *window, void *dx,
                                 void *dw);

#ifdef __cplusplus
}
#endif

#endif
