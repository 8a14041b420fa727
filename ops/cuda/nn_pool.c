/* ops/cuda/nn_pool.c — MaxPool (float, int8, uint8; Indices and
 * storage_order), AveragePool, GlobalAveragePool, MaxPoolGrad and
 * AveragePoolGrad on the GPU, with our own kernels (nn_kernels.cu).
 *
 * Why not cuDNN's pooling: it has neither the Indices output nor int8/uint8
 * max pooling, pads symmetrically and floors the output size (ceil_mode and
 * asymmetric pads would need a padded copy), divides include-padding
 * averages by the whole kernel where ONNX counts only the taps inside the
 * padded input, and its max backward need not route ties to the first
 * maximum the way ops/pool.c does. Pooling is memory-bound; one kernel that
 * reads the CPU semantics directly is as fast and exact in every mode. */
#include "ops/cuda/nn-cuda.h"
#include "ops/nn-params.h"

int cuda_maxpool(struct op_call *c)
{
    const struct pool_params *p = c->params;
    struct nn_geom g;
    if (nn_pool_geom(c, &g))
        return -1;
    const struct tensor *x = c->in[0];
    struct tensor *ind = c->n_out > 1 ? c->out[1] : NULL;
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_INT8 && x->dtype != ONNX_DTYPE_UINT8)
        return op_error(c, "element type %s is not supported (float, int8, uint8)",
                        onnx_dtype_name(x->dtype));
    struct nn_cuda_window w = nn_cuda_window_of(&g);
    CUDA_TRY(c, nn_cuda_maxpool_forward(nn_cuda_stream(c), &w, x->dtype, x->data, c->out[0]->data,
                                        ind ? ind->data : NULL, p->storage_order));
    return 0;
}

int cuda_avgpool(struct op_call *c)
{
    const struct pool_params *p = c->params;
    struct nn_geom g;
    if (nn_pool_geom(c, &g))
        return -1;
    if (c->in[0]->dtype != ONNX_DTYPE_FLOAT)
        return op_error(c, "element type %s is not supported (float)",
                        onnx_dtype_name(c->in[0]->dtype));
    struct nn_cuda_window w = nn_cuda_window_of(&g);
    CUDA_TRY(c, nn_cuda_avgpool_forward(nn_cuda_stream(c), &w, p->count_include_pad,
                                        c->in[0]->data, c->out[0]->data));
    return 0;
}

int cuda_global_avgpool(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    if (x->dtype != ONNX_DTYPE_FLOAT || x->rank < 3)
        return op_error(c, "X must be float32 of rank >= 3, got %s of rank %d",
                        onnx_dtype_name(x->dtype), x->rank);
    int64_t planes = x->dims[0] * x->dims[1];
    int64_t spatial = planes ? tensor_numel(x) / planes : 0;
    CUDA_TRY(c, nn_cuda_global_avgpool(nn_cuda_stream(c), planes, spatial, x->data, c->out[0]->data));
    return 0;
}

int cuda_maxpool_grad(struct op_call *c)
{
    struct nn_geom g;
    if (nn_pool_grad_geom(c, &g))
        return -1;
    struct nn_cuda_window w = nn_cuda_window_of(&g);
    CUDA_TRY(c, nn_cuda_maxpool_backward(nn_cuda_stream(c), &w, c->in[1]->data, c->in[0]->data,
                                         c->out[0]->data));
    return 0;
}

int cuda_avgpool_grad(struct op_call *c)
{
    const struct pool_grad_params *p = c->params;
    struct nn_geom g;
    if (nn_pool_grad_geom(c, &g))
        return -1;
    struct nn_cuda_window w = nn_cuda_window_of(&g);
    CUDA_TRY(c, nn_cuda_avgpool_backward(nn_cuda_stream(c), &w, p->pool.count_include_pad,
                                         c->in[0]->data, c->out[0]->data));
    return 0;
}
