/* ops/cuda/layout-impl.h — what the host files of the CUDA data-movement and
 * recurrent kernels share (layout.c, layout_index.c, layout_scatter.c,
 * layout_select.c, layout_einsum.c, layout_resize.c, recurrent.c): the
 * strided copy every movement kernel goes through, workspace and host-table
 * uploads, the index-error report, and the kernel functions the one table
 * cuda_kernels_layout[] (in layout.c) lists.
 * Not for use outside ops/cuda/. */
#ifndef DTRX_OPS_CUDA_LAYOUT_IMPL_H
#define DTRX_OPS_CUDA_LAYOUT_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "ops/cuda/cuda-impl.h"
#include "ops/cuda/layout-kernels.h"

/* dst[sum i_a * dst_strides[a]] = src[sum i_a * src_strides[a]] (strides in
 * elements of esize bytes). Unit axes are dropped and axes contiguous on both
 * sides merged; contiguous runs move in the widest unit that divides them
 * and their alignment; a plain run is one cudaMemcpyAsync, two swapped
 * innermost axes a tiled transpose. */
int layout_copy_strided(struct op_call *c, void *dst, const void *src, size_t esize, int rank,
                        const int64_t *dims, const int64_t *src_strides, const int64_t *dst_strides);

/* Same, into a contiguous dst (row-major over dims). */
int layout_copy_to_contiguous(struct op_call *c, void *dst, const void *src, size_t esize, int rank,
                              const int64_t *dims, const int64_t *src_strides);

/* Device workspace from the budgeted scratch allocator; NULL after
 * op_error() naming the bytes. Freeing while queued kernels still use it is
 * safe: whatever reuses the memory is queued behind them on the one stream. */
void *layout_scratch(struct op_call *c, size_t bytes);
void layout_scratch_free(struct op_call *c, void *ptr);

/* Copies `bytes` of the malloc'ed host buffer `host` into new scratch
 * memory (returned) and takes ownership of `host`: it is freed once the copy
 * has run. NULL after op_error() (host freed as well). */
void *layout_upload(struct op_call *c, void *host, size_t bytes);

/* After an index-reading kernel: waits for the stream, and when the device
 * flag `bad` holds a position, fails the call with the CPU's message
 * (index value, position, axis size). */
int layout_index_report(struct op_call *c, const unsigned long long *bad, const struct tensor *idx, int64_t d);

/* The gradient scatters of Pad and Resize: for source index o along axis
 * a, src_of gives up to two destination indices and their mask bits (see
 * struct layout_scatter) and returns how many (0..2). */
struct scatter_axis_fn {
    int (*src_of)(const void *ctx, int a, int64_t o, int64_t *dst, int *mask);
    const void *ctx;
};

/* Builds the per-axis CSR lists of a scatter from dy's axes to t's, copies
 * them to scratch memory (*dev, for layout_scratch_free) and fills s
 * (destination dims, dy's strides, list offsets; k and active are left 0). */
int layout_scatter_upload(struct op_call *c, const struct tensor *t, const struct tensor *dy,
                          const struct scatter_axis_fn *fn, struct layout_scatter *s, int64_t **dev,
                          const int64_t **csr, const int64_t **ent);

/* 0 when t's dtype is int32 or int64, else op_error(). */
int layout_index_dtype(struct op_call *c, const struct tensor *idx);

/* ---- kernels listed in cuda_kernels_layout[] ------------------------------- */

int cuda_gather(struct op_call *c);
int cuda_gather_elements(struct op_call *c);
int cuda_gather_grad(struct op_call *c);
int cuda_gather_elements_grad(struct op_call *c);
int cuda_gather_nd(struct op_call *c);
int cuda_gather_nd_grad(struct op_call *c);
int cuda_scatter_nd(struct op_call *c);
int cuda_scatter_elements(struct op_call *c);
int cuda_scatter_grad(struct op_call *c);
int cuda_arg_select(struct op_call *c);
int cuda_topk(struct op_call *c);
int cuda_onehot(struct op_call *c);
int cuda_cumsum(struct op_call *c);
int cuda_trilu(struct op_call *c);
int cuda_einsum(struct op_call *c);
int cuda_resize(struct op_call *c);
int cuda_resize_grad(struct op_call *c);
int cuda_rnn(struct op_call *c);
int cuda_rnn_grad(struct op_call *c);

#endif
