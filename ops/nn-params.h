/* ops/nn-params.h — the parsed attributes of the nn family: convolutions, pooling, batch and layer normalization, Gemm and MatMul: what their
 * op_def.parse produces and their kernels read, on the host (ops/conv.c, fused_conv.c, conv_transpose.c, pool.c, lp_pool.c, batch_norm.c, layer_norm.c, rms_norm.c, gemm.c, quant_matmul.c)
 * and on the device (ops/cuda/nn*.c, blas.c, norm.c, window.c). Not for use outside ops/. */
#ifndef DTRX_OPS_NN_PARAMS_H
#define DTRX_OPS_NN_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"
#include "ops/nn-impl.h"

/* ops/batch_norm.c */
struct batch_norm_params {
    float epsilon, momentum;
    int training_mode;                 /* the attribute (opset >= 14) */
};

struct bn_grad_params {
    float epsilon;
    int batch_stats;
};

/* ops/conv.c */
struct conv_params {
    struct nn_window_attrs w;
    int64_t group;
};

struct conv_grad_params {
    struct conv_params conv;
    struct nn_shape_attr shape;
};

/* ops/fused_conv.c: dtrexec:FusedConv, a Conv with a folded
 * BatchNormalization, a residual Add and an activation (runtime/fuse.c). */
enum fused_conv_act {
    FUSED_CONV_ACT_NONE = 0,
    FUSED_CONV_ACT_RELU,
    FUSED_CONV_ACT_LEAKY_RELU,     /* alpha: the slope */
    FUSED_CONV_ACT_CLIP,           /* alpha, beta: the bounds */
};

struct fused_conv_params {
    struct conv_params conv;       /* first: nn_conv_geom() reads the call's params as a Conv's */
    float epsilon;                 /* of the folded BatchNormalization */
    int act;                       /* enum fused_conv_act */
    float alpha, beta;
    /* The tensor holds oneDNN's channel-blocked layout (nC[D][H]W16c, or 8c
     * without AVX-512) instead of NC[D][H]W: X, Y, the residual R. */
    int x_blocked, y_blocked, r_blocked;
};

/* ops/conv_transpose.c */
struct conv_transpose_params {
    struct nn_window_attrs w;
    int64_t group;
    int n_output_padding, n_output_shape;
    int64_t output_padding[NN_MAX_SPATIAL];
    int64_t output_shape[NN_MAX_SPATIAL + 2];
};

/* ops/gemm.c */
struct gemm_params {
    float alpha, beta;
    int trans_a, trans_b;
};

struct matmul_trans_params {
    int trans_a, trans_b;
};

/* ops/layer_norm.c */
struct layer_norm_params {
    int64_t axis;
    float epsilon;
};

/* ops/pool.c */
struct pool_params {
    struct nn_window_attrs w;
    int storage_order;
    int count_include_pad;
};

/* ops/lp_pool.c: LpPool and LpPoolGrad (shape: X's dims, the gradient only) */
struct lp_pool_params {
    struct nn_window_attrs w;
    float p;
    struct nn_shape_attr shape;
};

struct pool_grad_params {
    struct pool_params pool;
    struct nn_shape_attr shape;
};

#endif
