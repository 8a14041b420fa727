/* ops/einsum-impl.h — Einsum's evaluation (ops/einsum.c) with its two
 * primitives supplied by a backend, so that the CPU and CUDA kernels run
 * the same plan: the same steps, the same packs, the same GEMM shapes.
 * Not for use outside ops/. */
#ifndef DTRX_OPS_EINSUM_IMPL_H
#define DTRX_OPS_EINSUM_IMPL_H

#include <stdint.h>

#include "ops/ops.h"

/* 52 letters and up to TENSOR_MAX_RANK ellipsis dims. */
#define EINSUM_MAXL 60

/* A loop nest: axes with extents and source strides (elements). */
struct einsum_loop {
    int n;
    int64_t dim[EINSUM_MAXL], str[EINSUM_MAXL];
};

struct einsum_backend {
    /* dst (contiguous over `out`) = src summed over `sum` (accumulated in
     * double for float and double). */
    int (*pack)(struct op_call *c, int dtype, const void *src, void *dst, const struct einsum_loop *out,
                const struct einsum_loop *sum);
    /* C[b] (m x n, contiguous) = op(A[b]) op(B[b]) for b < batch; A[b] is
     * m x k (k x m when ta), B[b] k x n (n x k when tb), all contiguous. */
    int (*gemm)(struct op_call *c, int dtype, int64_t batch, int64_t m, int64_t n, int64_t k, const void *a,
                int ta, const void *b, int tb, void *cm);
};

/* Evaluates the call on inputs data[i] (the call's input shapes, element
 * type dtype) into `final` (contiguous, the output's shape), with
 * intermediates from the call's scratch allocator; 0 or -1 after op_error(). */
int einsum_eval(struct op_call *c, const struct einsum_backend *be, int dtype, const void *const *data,
                void *final);

#endif
