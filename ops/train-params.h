/* ops/train-params.h — the parsed attributes of the optimizer and random operators: what their
 * op_def.parse produces and their kernels read, on the host (ops/optimizer.c, optimizer_preview.c, random.c)
 * and on the device (ops/cuda/elem_loss.c). Not for use outside ops/. */
#ifndef DTRX_OPS_TRAIN_PARAMS_H
#define DTRX_OPS_TRAIN_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

/* ops/optimizer.c */
struct optimizer_params {
    float lr, momentum, beta1, beta2, epsilon, weight_decay;
    int nesterov, decoupled, hf_bias_correction;
    int64_t step;
};

/* ops/random.c: Bernoulli, RandomUniformLike */
struct random_params {
    int dtype;                     /* 0: the input's */
    int has_seed;
    double seed;
    double low, high;              /* RandomUniformLike */
};

/* ops/optimizer_preview.c: Adam, Adagrad, Momentum of ai.onnx.preview.training */
struct preview_optimizer_params {
    int n_tensors;                 /* tensors optimized by one call */
    float alpha, beta, epsilon, norm_coefficient, norm_coefficient_post, decay_factor;
    int nesterov;                  /* Momentum's mode */
};

#endif
