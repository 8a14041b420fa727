/* ops/cuda/nn.c — the CUDA kernels of the nn family, by operator: cuDNN for
 * convolutions (forward, backward data and filter, transposed) and softmax;
 * our own kernels (nn_kernels.cu) for pooling, normalization and the
 * gradients cuDNN has no exact match for. See nn-cuda.h. */
#include "ops/cuda/nn-cuda.h"

CUDA_KERNEL_TABLE(nn) = {
    { "", "Conv", cuda_conv },
    { "dtrexec", "ConvGradData", cuda_conv_grad_data },
    { "dtrexec", "ConvGradWeight", cuda_conv_grad_weight },
    { "", "ConvTranspose", cuda_conv_transpose },
    { "", "MaxPool", cuda_maxpool },
    { "dtrexec", "MaxPoolGrad", cuda_maxpool_grad },
    { "", "AveragePool", cuda_avgpool },
    { "dtrexec", "AveragePoolGrad", cuda_avgpool_grad },
    { "", "GlobalAveragePool", cuda_global_avgpool },
    { "", "BatchNormalization", cuda_batch_norm },
    { "dtrexec", "BatchNormGrad", cuda_batch_norm_grad },
    { "", "LayerNormalization", cuda_layer_norm },
    { "dtrexec", "LayerNormGrad", cuda_layer_norm_grad },
    { "", "Softmax", cuda_softmax },
    { "", "LogSoftmax", cuda_softmax },
    { "dtrexec", "SoftmaxGrad", cuda_softmax_grad },
    { "dtrexec", "LogSoftmaxGrad", cuda_softmax_grad },
    { 0 },
};
