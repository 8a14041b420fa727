/* ops/cuda/nn_softmax.c — Softmax and LogSoftmax (opsets 1, 11, 13; float
 * and double) and their gradients SoftmaxGrad and LogSoftmaxGrad through
 * cuDNN's softmax, deterministic in every mode.
 *
 * As in ops/softmax.c the call becomes [outer, len, inner] with the
 * reduction over len (opset < 13, and the gradients' coerce_2d: everything
 * from `axis` on is one row). cuDNN's CHANNEL mode reduces over C of an NCHW
 * tensor: N = outer, C = len, H = inner, W = 1. ACCURATE subtracts the
 * maximum first; LOG gives log-softmax, and its backward is
 * dx = dy - exp(y) * sum(dy), the CPU formula. */
#include <limits.h>

#include "ops/cuda/nn-cuda.h"
#include "ops/elementwise-params.h"

static int softmax_geometry(const struct op_call *c, const struct tensor *x, int64_t dims[3])
{
    const struct softmax_params *p = c->params;
    int axis = op_axis(p->axis, x->rank);
    if (axis < 0)
        return op_error(c, "axis %d is out of range for input of rank %d", p->axis, x->rank);
    dims[0] = dims[1] = dims[2] = 1;
    for (int i = 0; i < axis; i++)
        dims[0] *= x->dims[i];
    if (p->coerce_2d) {
        for (int i = axis; i < x->rank; i++)
            dims[1] *= x->dims[i];
    } else {
        dims[1] = x->dims[axis];
        for (int i = axis + 1; i < x->rank; i++)
            dims[2] *= x->dims[i];
    }
    for (int i = 0; i < 3; i++)
        if (dims[i] > INT_MAX)
            return op_error(c, "[%lld, %lld, %lld] (outer, axis, inner) exceeds cuDNN's int dims",
                            (long long)dims[0], (long long)dims[1], (long long)dims[2]);
    return 0;
}

/* One NCHW descriptor [outer, len, inner, 1] of the element type. */
static int softmax_desc(struct op_call *c, int dtype, const int64_t dims[3],
                        cudnnTensorDescriptor_t *d)
{
    cudnnDataType_t t;
    if (dtype == ONNX_DTYPE_FLOAT)
        t = CUDNN_DATA_FLOAT;
    else if (dtype == ONNX_DTYPE_DOUBLE)
        t = CUDNN_DATA_DOUBLE;
    else
        return op_error(c, "element type %s is not supported (float, double)", onnx_dtype_name(dtype));
    CUDNN_TRY(c, cudnnCreateTensorDescriptor(d));
    cudnnStatus_t s = cudnnSetTensor4dDescriptor(*d, CUDNN_TENSOR_NCHW, t, (int)dims[0], (int)dims[1],
                                                 (int)dims[2], 1);
    if (s != CUDNN_STATUS_SUCCESS) {
        cudnnDestroyTensorDescriptor(*d);
        return op_error(c, "cuDNN: %s (softmax descriptor [%lld, %lld, %lld, 1])",
                        cudnnGetErrorString(s), (long long)dims[0], (long long)dims[1],
                        (long long)dims[2]);
    }
    return 0;
}

/* alpha and beta in the element type's scaling type (double for double). */
static const void *softmax_scalar(int dtype, int one)
{
    static const float f[2] = { 0.0f, 1.0f };
    static const double d[2] = { 0.0, 1.0 };
    return dtype == ONNX_DTYPE_DOUBLE ? (const void *)&d[one] : (const void *)&f[one];
}

int cuda_softmax(struct op_call *c)
{
    const struct softmax_params *p = c->params;
    const struct tensor *x = c->in[0];
    int64_t dims[3];
    cudnnTensorDescriptor_t d;
    if (softmax_geometry(c, x, dims))
        return -1;
    if (tensor_numel(x) == 0)
        return 0;
    if (softmax_desc(c, x->dtype, dims, &d))
        return -1;
    cudnnStatus_t s = cudnnSoftmaxForward(cuda_ctx_of(c)->dnn,
                                          p->log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                          CUDNN_SOFTMAX_MODE_CHANNEL, softmax_scalar(x->dtype, 1), d,
                                          x->data, softmax_scalar(x->dtype, 0), d, c->out[0]->data);
    cudnnDestroyTensorDescriptor(d);
    if (s != CUDNN_STATUS_SUCCESS)
        return op_error(c, "cuDNN: %s (cudnnSoftmaxForward on [%lld, %lld, %lld])",
                        cudnnGetErrorString(s), (long long)dims[0], (long long)dims[1],
                        (long long)dims[2]);
    return 0;
}

int cuda_softmax_grad(struct op_call *c)
{
    const struct softmax_params *p = c->params;
    const struct tensor *dy = c->in[0], *y = c->in[1];
    int64_t dims[3];
    cudnnTensorDescriptor_t d;
    if (softmax_geometry(c, dy, dims))
        return -1;
    if (tensor_numel(dy) == 0)
        return 0;
    if (softmax_desc(c, dy->dtype, dims, &d))
        return -1;
    cudnnStatus_t s = cudnnSoftmaxBackward(cuda_ctx_of(c)->dnn,
                                           p->log ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                                           CUDNN_SOFTMAX_MODE_CHANNEL, softmax_scalar(dy->dtype, 1),
                                           d, y->data, d, dy->data, softmax_scalar(dy->dtype, 0), d,
                                           c->out[0]->data);
    cudnnDestroyTensorDescriptor(d);
    if (s != CUDNN_STATUS_SUCCESS)
        return op_error(c, "cuDNN: %s (cudnnSoftmaxBackward on [%lld, %lld, %lld])",
                        cudnnGetErrorString(s), (long long)dims[0], (long long)dims[1],
                        (long long)dims[2]);
    return 0;
}
