/* ops/cuda/nn-cuda.h — inside the CUDA nn family: the kernel functions that
 * ops/cuda/nn.c lists in cuda_kernels_nn[], and the few helpers its host
 * files (nn_conv.c, nn_pool.c, nn_norm.c, nn_softmax.c) share.
 *
 * The family's CPU semantics are ops/conv.c, conv_transpose.c, pool.c,
 * batch_norm.c, layer_norm.c and softmax.c; parameters come from
 * ops/nn-params.h and geometry from the CPU files' own resolvers
 * (ops/nn-impl.h), so both backends read a node the same way. Scratch is
 * taken with nn_scratch_alloc (device memory from the budget's arena, which
 * sets op_env.scratch_failed when it cannot be had), all of it before the
 * first launch, so that a retry after eviction repeats the call exactly.
 * Not for use outside ops/cuda/. */
#ifndef DTRX_OPS_CUDA_NN_CUDA_H
#define DTRX_OPS_CUDA_NN_CUDA_H

#include "ops/cuda/cuda-impl.h"
#include "ops/cuda/nn-kernels.h"
#include "ops/nn-impl.h"

static inline cudaStream_t nn_cuda_stream(const struct op_call *c)
{
    return cuda_ctx_of(c)->stream;
}

/* Pooling geometry of a resolved nn_geom (planes = N * C). */
static inline struct nn_cuda_window nn_cuda_window_of(const struct nn_geom *g)
{
    struct nn_cuda_window w;
    w.planes = g->n * g->c;
    for (int j = 0; j < 3; j++) {
        w.in[j] = g->in[j];
        w.k[j] = g->k[j];
        w.out[j] = g->out[j];
        w.stride[j] = g->stride[j];
        w.dil[j] = g->dil[j];
        w.pad_lo[j] = g->pad_lo[j];
        w.pad_hi[j] = g->pad_hi[j];
    }
    return w;
}

/* Device scratch of `bytes` for `what`, or -1 with a message naming it. */
static inline int nn_cuda_scratch(const struct op_call *c, size_t bytes, const char *what,
                                  void **p)
{
    *p = nn_scratch_alloc(c, bytes);
    if (!*p)
        return op_error(c, "cannot get %zu bytes of device scratch for %s", bytes, what);
    return 0;
}

/* nn_conv.c */
int cuda_conv(struct op_call *c);
int cuda_conv_grad_data(struct op_call *c);
int cuda_conv_grad_weight(struct op_call *c);
int cuda_conv_transpose(struct op_call *c);

/* nn_pool.c */
int cuda_maxpool(struct op_call *c);
int cuda_avgpool(struct op_call *c);
int cuda_global_avgpool(struct op_call *c);
int cuda_maxpool_grad(struct op_call *c);
int cuda_avgpool_grad(struct op_call *c);

/* nn_norm.c */
int cuda_batch_norm(struct op_call *c);
int cuda_batch_norm_grad(struct op_call *c);
int cuda_layer_norm(struct op_call *c);
int cuda_layer_norm_grad(struct op_call *c);

/* nn_softmax.c */
int cuda_softmax(struct op_call *c);
int cuda_softmax_grad(struct op_call *c);

#endif
