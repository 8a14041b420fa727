/* ops/elementwise-params.h — the parsed attributes of the elementwise, comparison, cast, dropout, softmax and reduction operators: what their
 * op_def.parse produces and their kernels read, on the host (ops/unary.c, binary.c, activation.c, cast.c, logical.c, mod.c, reduce.c, reduce_ext.c, softmax.c, dropout.c, unary_math.c)
 * and on the device (ops/cuda/elem*.c, nn_softmax.c). Not for use outside ops/. */
#ifndef DTRX_OPS_ELEMENTWISE_PARAMS_H
#define DTRX_OPS_ELEMENTWISE_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

/* ops/activation.c: HardSigmoid (alpha, beta), Elu, Celu, Swish (alpha),
 * Selu (alpha, gamma) and their gradient kernels; unused fields are 0. */
struct act_params {
    float alpha, beta, gamma;
};

struct prelu_grad_params {
    int wrt;                       /* 0: X, 1: the slope */
};

/* ops/binary.c */
struct pow_grad_params {
    int wrt;                       /* 0: the base A, 1: the exponent B */
};

/* ops/cast.c */
struct cast_params {
    int to;
};

/* ops/reduce_ext.c: ReduceExtGrad */
struct reduce_ext_grad_params {
    int kind;                      /* enum rx_kind of ops/reduce_ext.c */
};

/* ops/dropout.c */
struct dropout_params {
    float ratio;                   /* before 12 */
    int has_seed;
    int64_t seed;                  /* the node's `seed` attribute (12+) */
};

struct dropout_grad_params {
    uint64_t key;
};

/* ops/logical.c: And, Or, Xor opset 1 (legacy broadcasting of B into A) */
struct logical_params {
    int broadcast;
    int has_axis;
    int64_t axis;
};

/* ops/mod.c: Mod and ModGrad */
struct mod_params {
    int fmod;                      /* 1: truncated (C fmod, %), 0: floored (Python %) */
};

/* ops/reduce.c */
struct reduce_params {
    int kind;                      /* enum reduce_kind */
    int mean;                      /* divide the sum by the element count */
    int keepdims;
    int noop_with_empty_axes;
    int axes_from_input;
    int n_axes;
    int64_t axes[TENSOR_MAX_RANK];
};

/* ops/softmax.c */
struct softmax_params {
    int axis;
    int coerce_2d;                 /* opset < 13 */
    int log;                       /* LogSoftmax */
};

/* ops/unary_math.c */
struct isinf_params {
    int detect[2];                 /* detect_negative, detect_positive */
};

/* ops/unary.c */
struct leaky_relu_params {
    float alpha;
};

struct gelu_params {
    int tanh_approx;               /* approximate="tanh" */
};

struct clip_params {
    int from_inputs;               /* opset >= 11: bounds are inputs 1 and 2 */
    float min, max;                /* opset < 11: the attributes */
};

#endif
