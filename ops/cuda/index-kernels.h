/* ops/cuda/index-kernels.h — the launchers of the index, scatter, selection
 * and prefix kernels (ops/cuda/index_kernels.cu), callable from the plain C
 * host code in ops/cuda/layout_scatter.c, layout_select.c and
 * layout_einsum.c.
 *
 * Every launcher queues work on `stream` and returns the launch status; none
 * allocates or synchronises. Kernels whose updates may meet at one
 * destination (the scatters, the scatter-adds of the gradients) run one
 * thread per "unit": a set of update elements whose destinations no other
 * unit touches (a slice column of ScatterND, a line along the axis of
 * ScatterElements), walked in the CPU kernel's order — no atomics, so every
 * run, and the CPU, give the same bits. Index reads are checked as in
 * layout-kernels.h: the smallest bad position goes to *bad and the element
 * reads index 0. Not for use outside ops/cuda/. */
#ifndef DTRX_OPS_CUDA_INDEX_KERNELS_H
#define DTRX_OPS_CUDA_INDEX_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define INDEX_MAX_AXES 8

/* The data offsets of ND index tuples: tuple t (of `per_batch` per batch)
 * reads m indices idx[t * m + i] against extents dims[i] with element
 * strides strides[i], plus (t / per_batch) * batch_stride; element s of its
 * slice (of `slice` elements) lands at that offset + s. pos[t * slice + s]. */
struct index_nd {
    int m;
    int64_t per_batch, batch_stride, slice;
    int64_t dims[INDEX_MAX_AXES], strides[INDEX_MAX_AXES];
};
cudaError_t index_nd_pos_launch(int64_t *pos, const void *idx, int idx64, int64_t tuples, const struct index_nd *g,
                                unsigned long long *bad, cudaStream_t stream);

/* ScatterElements positions: element e of the indices (dims idims, `rank`
 * axes) lands at its coordinates with the axis one replaced by idx[e],
 * through the data's element strides dstrides; d is the axis extent. */
cudaError_t index_elements_pos_launch(int64_t *pos, const void *idx, int idx64, int rank, const int64_t *idims,
                                      const int64_t *dstrides, int axis, int64_t d, unsigned long long *bad,
                                      cudaStream_t stream);

/* y[e] = x[pos[e]], n elements of `unit` bytes (GatherND). */
cudaError_t index_gather_pos_launch(void *y, const void *x, const int64_t *pos, int64_t n, size_t unit,
                                    cudaStream_t stream);

/* The walk of the scatters: `units` threads; unit u, step j (of `steps`)
 * is update element e = (u / inner) * steps * inner + j * inner + u % inner.
 * out[pos[e]] = combine(out[pos[e]], upd[e]) in step order (reduction as
 * enum scatter_reduction: numeric dtypes; 0 copies elements of esize bytes,
 * any dtype). */
struct index_walk {
    int64_t units, steps, inner;
};
cudaError_t index_scatter_launch(void *out, const void *upd, const int64_t *pos, const struct index_walk *w,
                                 int reduction, int dtype, size_t esize, cudaStream_t stream);

/* ScatterGrad (float or double, `dbl`): dx (already a copy of dy) and du
 * from dy, data x, updates u, with scratch `work` of
 * index_scatter_grad_work_bytes(reduction, numel of x, numel of u) bytes
 * (flags, products or the selected values per destination). dx may be
 * NULL. */
size_t index_scatter_grad_work_bytes(int reduction, int64_t n_data, int64_t n_upd);
cudaError_t index_scatter_grad_launch(void *dx, void *du, const void *dy, const void *x, const void *u,
                                      const int64_t *pos, const struct index_walk *w, int64_t n_data,
                                      int reduction, int dbl, void *work, cudaStream_t stream);

/* ArgMax/ArgMin: y[o * inner + k] = the selected index along n, as ops/topk.c. */
cudaError_t index_arg_launch(int64_t *y, const void *x, int dtype, int64_t outer, int64_t n, int64_t inner,
                             int min, int last, cudaStream_t stream);

/* TopK: per line (o, k) of n elements, a stable merge sort of the positions
 * (scratch: 2 * n int64 per line, lines = outer * inner) and the first kk
 * values (may be NULL) and indices (may be NULL). */
cudaError_t index_topk_launch(void *v, int64_t *ix, const void *x, int dtype, int64_t outer, int64_t n,
                              int64_t inner, int64_t kk, int largest, int64_t *scratch, cudaStream_t stream);

/* OneHot: y [outer, depth, inner] = on where the index (any numeric dtype,
 * negative from the end) equals the depth coordinate, else off; the two
 * values are vals[0] (off) and vals[1] (on), `unit` bytes each. */
cudaError_t index_onehot_launch(void *y, const void *idx, int idx_dtype, const void *vals, int64_t outer,
                                int64_t depth, int64_t inner, size_t unit, cudaStream_t stream);

/* CumSum over the middle axis of [outer, n, inner] (ops/cumsum_trilu.c). */
cudaError_t index_cumsum_launch(void *y, const void *x, int dtype, int64_t outer, int64_t n, int64_t inner,
                                int exclusive, int reverse, cudaStream_t stream);

/* Trilu over the last two axes [mats, rows, cols]. */
cudaError_t index_trilu_launch(void *y, const void *x, int64_t mats, int64_t rows, int64_t cols, int upper,
                               int64_t k, size_t unit, cudaStream_t stream);

/* Einsum's strided pack: dst (contiguous over `out`) = src summed over
 * `sum`, float or double, as ops/einsum.c's ein_pack (accumulated in
 * double). */
#define INDEX_EIN_MAXL 60
struct index_loop {
    int n;
    int64_t dim[INDEX_EIN_MAXL], str[INDEX_EIN_MAXL];
};
cudaError_t index_ein_pack_launch(void *dst, const void *src, int dbl, const struct index_loop *out,
                                  const struct index_loop *sum, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
