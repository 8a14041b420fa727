/* ops/params.h — the parsed attributes of every operator that has any: what
 * op_def.parse produces and the kernels of every backend read (the CPU kernels
 * in ops/ files, the CUDA kernels in ops/cuda/). Not for use outside ops/. */
#ifndef DTRX_OPS_PARAMS_H
#define DTRX_OPS_PARAMS_H

#include <stdint.h>

#include "ops/nn-impl.h"

/* ops/activation.c: HardSigmoid (alpha, beta), Elu, Celu, Swish (alpha),
 * Selu (alpha, gamma) and their gradient kernels; unused fields are 0. */
struct act_params {
    float alpha, beta, gamma;
};

struct prelu_grad_params {
    int wrt;                       /* 0: X, 1: the slope */
};

/* ops/batch_norm.c */
struct batch_norm_params {
    float epsilon, momentum;
    int training_mode;                 /* the attribute (opset >= 14) */
};

struct bn_grad_params {
    float epsilon;
    int batch_stats;
};

/* ops/binary.c */
struct pow_grad_params {
    int wrt;                       /* 0: the base A, 1: the exponent B */
};

/* ops/cast.c */
struct cast_params {
    int to;
};

/* ops/concat_split.c */
struct axis_params {
    int64_t axis;
    int64_t num_outputs;           /* Split 18: 0 when absent */
    int n_split;                   /* Split < 13: the attribute's length, -1 when absent */
    int64_t *split;
};

/* ops/constant.c */
/* A value held by the node: dtype, shape and bytes (owned). */
struct constant_params {
    int dtype;
    int rank;
    int64_t dims[TENSOR_MAX_RANK];
    void *data;
    size_t size_bytes;
};

/* ops/cumsum_trilu.c */
struct cumsum_params {
    int exclusive, reverse;
};

struct trilu_params {
    int upper;
};

/* ops/einsum.c: the equation's terms, spaces removed, "..." kept. */
#define EINSUM_MAX_TERMS 32
struct einsum_params {
    int n_terms;                   /* input terms */
    char *terms[EINSUM_MAX_TERMS];
    char *out;                     /* NULL: implicit output */
};

/* ops/onehot.c */
struct onehot_params {
    int64_t axis;
};

/* ops/quant_linear.c: QuantizeLinear, DequantizeLinear; attributes a
 * version does not define hold their defaults. */
struct quant_params {
    int64_t axis;
    int64_t block_size;            /* 0: not blocked */
    int saturate;
    int output_dtype;              /* 0: from the zero point / scale */
    int precision;                 /* 0: the reference's default */
};

/* ops/reduce_ext.c: ReduceExtGrad */
struct reduce_ext_grad_params {
    int kind;                      /* enum rx_kind of ops/reduce_ext.c */
};

/* ops/scatter_gather_nd.c */
struct gather_nd_params {
    int64_t batch_dims;
    struct tensor target;          /* GatherNDGrad: the data's shape */
};

struct scatter_params {
    int64_t axis;                  /* ScatterElements, Scatter */
    int reduction;                 /* enum scatter_reduction (ops/scatter-impl.h) */
};

struct scatter_grad_params {
    int elements;                  /* 0: ScatterND, 1: ScatterElements */
    int reduction;
    int64_t axis;
};

/* ops/topk.c */
struct arg_params {
    int64_t axis;
    int keepdims, last, min;       /* last: select_last_index; min: ArgMin */
};

struct topk_params {
    int64_t axis;
    int64_t k;                     /* opset 1: the attribute */
    int largest, sorted;
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

/* ops/dropout.c */
struct dropout_params {
    float ratio;                   /* before 12 */
    int has_seed;
    int64_t seed;                  /* the node's `seed` attribute (12+) */
};

struct dropout_grad_params {
    uint64_t key;
};

/* ops/gather.c */
struct gather_params {
    int64_t axis;
};

struct gather_grad_params {
    int64_t axis;
    struct tensor target;
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

/* ops/group_norm.c: GroupNormalization, InstanceNormalization (num_groups 0:
 * one group per channel) and GroupNormGrad */
struct group_norm_params {
    int64_t num_groups;
    float epsilon;
    int scale_per_group;               /* GroupNormalization-18: Scale/B of shape [G] */
};

/* ops/rotary.c */
struct rotary_params {
    int interleaved;
    int64_t rotary_dim;                /* 0: the head size */
    int64_t num_heads;                 /* 0: absent (4-D input) */
};

/* ops/attention.c: Attention and AttentionGrad */
struct attention_params {
    float scale;                       /* 0: 1 / sqrt(head size) */
    float softcap;                     /* 0: none */
    int is_causal;
    int64_t q_num_heads, kv_num_heads; /* 0: absent (4-D inputs) */
    int qk_mode;                       /* qk_matmul_output_mode 0..3 */
    int64_t left_window, right_window; /* -1: unbounded (Attention-25) */
};

/* ops/causal_conv.c: CausalConvWithState and its gradient kernel */
struct causal_conv_params {
    int silu;                          /* activation "silu" or "swish" */
};

/* ops/linear_attention.c: LinearAttention and its gradient kernel */
struct linear_attention_params {
    int gated, delta;                  /* update_rule: linear 0 0 ... gated_delta 1 1 */
    int64_t q_num_heads, kv_num_heads;
    float scale;                       /* 0: 1 / sqrt(dk) */
};

/* ops/control.c: FlexAttention (executed by runtime/control.c) */
struct flex_attention_params {
    int has_scale;
    float scale;                       /* when has_scale; else 1 / sqrt(head size) */
    int softmax_precision;             /* an onnx dtype; 0: absent */
};

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

/* ops/pad.c */
struct pad_params {
    int mode;                      /* enum pad_mode */
    int n_pads;                    /* opset 2: the attribute's length */
    int64_t pads[2 * TENSOR_MAX_RANK];
    double value;                  /* opset 2 */
};

struct pad_grad_params {
    int mode;
    struct tensor target;
    int64_t begin[TENSOR_MAX_RANK], end[TENSOR_MAX_RANK];
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

/* ops/reshape.c */
struct reshape_params {
    int allowzero;                 /* 1: a 0 in `shape` means 0, not "copy" (opset 14+) */
};

struct flatten_params {
    int64_t axis;
};

/* Before opset 13 the axes are an attribute; from 13 they are input 1. */
struct squeeze_params {
    int n_axes;                    /* -1: none given */
    int64_t axes[TENSOR_MAX_RANK];
};

/* ops/resize.c */
struct resize_params {
    int linear;                    /* 0: nearest */
    int coord;                     /* enum resize_coord */
    int nearest;                   /* enum resize_nearest */
    int n_axes;                    /* -1: all axes */
    int64_t axes[TENSOR_MAX_RANK];
    /* The separable path of ops/resize_general.c: cubic, antialias,
     * tf_crop_and_resize and exclude_outside (general = 1); the 2-tap
     * kernels of resize.c take the rest. */
    int general;
    int cubic;                     /* mode cubic */
    double cubic_a;                /* cubic_coeff_a */
    int antialias, exclude_outside;
    float extrapolation;           /* tf_crop_and_resize outside the roi */
    int policy;                    /* keep_aspect_ratio_policy: 0 stretch, 1 not_larger, 2 not_smaller */
};

struct resize_grad_params {
    struct resize_params mode;
    struct tensor target;
};

/* ops/shape.c */
struct shape_params {
    int64_t start, end;
    int has_end;
};

/* ops/slice.c */
struct slice_params {
    int n;                         /* opset 1: number of starts/ends, -1 from opset 10 */
    int n_axes;                    /* opset 1: -1 when axes is absent */
    int64_t starts[TENSOR_MAX_RANK], ends[TENSOR_MAX_RANK], axes[TENSOR_MAX_RANK];
};

struct slice_grad_params {
    struct tensor target;
    int64_t start[TENSOR_MAX_RANK], step[TENSOR_MAX_RANK];
};

/* ops/softmax.c */
struct softmax_params {
    int axis;
    int coerce_2d;                 /* opset < 13 */
    int log;                       /* LogSoftmax */
};

/* ops/transpose.c */
struct transpose_params {
    int n_perm;                    /* -1: reverse the axes */
    int64_t perm[TENSOR_MAX_RANK];
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

/* ops/along_axis.c */
enum along_axis_kind {
    ALONG_HARDMAX, ALONG_LPNORM, ALONG_LPNORM_GRAD, ALONG_CUMPROD, ALONG_CUMPROD_GRAD,
};

struct along_axis_params {
    int kind;                      /* enum along_axis_kind */
    int64_t axis;                  /* Hardmax, LpNormalization (CumProd: input 1) */
    int coerce_2d;                 /* Hardmax < 13 */
    int p;                         /* LpNormalization: 1 or 2 */
    int exclusive, reverse;        /* CumProd */
};


/* ops/bitwise.c */
struct bitshift_params {
    int right;                     /* direction="RIGHT" */
};

/* ops/depth_space.c */
struct depth_space_params {
    int64_t blocksize;
    int crd;                       /* mode="CRD" (else DCR) */
    int to_space;                  /* 1: DepthToSpace, 0: SpaceToDepth */
};

/* ops/eye_nonzero.c */
struct eye_like_params {
    int dtype;                     /* 0: the input's */
    int64_t k;                     /* the diagonal: > 0 above the main one */
};

/* ops/local_norm.c */
struct lrn_params {
    int64_t size;
    float alpha, beta, bias;
};

struct mvn_params {
    int n_axes;
    int64_t axes[TENSOR_MAX_RANK];
};

/* ops/select_axis.c */
struct compress_params {
    int has_axis;                  /* 0: the input is flattened */
    int64_t axis;
};

struct reverse_sequence_params {
    int batch_axis;                /* 0 or 1; time_axis is the other */
};

/* ops/upsample.c */
struct upsample_params {
    void *resize;                  /* Resize-10's struct resize_params */
    int scales_from_input;         /* opset 9 and 10 */
    int n_scales;                  /* else the attribute(s) */
    float scales[TENSOR_MAX_RANK];
};

/* ops/unary_trig.c: the trigonometric and hyperbolic functions, Softsign,
 * ThresholdedRelu, Shrink, and their one gradient kernel UnaryMathGrad. */
enum unary_math_fn {
    UMATH_TAN, UMATH_ASIN, UMATH_ACOS, UMATH_ATAN, UMATH_SINH, UMATH_COSH, UMATH_ASINH,
    UMATH_ACOSH, UMATH_ATANH, UMATH_SOFTSIGN, UMATH_THRESHOLDED_RELU, UMATH_SHRINK,
    UMATH_COUNT
};

struct unary_math_params {
    int fn;                        /* enum unary_math_fn */
    float alpha;                   /* ThresholdedRelu */
    float lambd, bias;             /* Shrink */
};

/* ops/affine_grid.c */
struct affine_grid_params {
    int align_corners;
};

/* ops/bitwise.c: BitCast */
struct bitcast_params {
    int to;                        /* enum onnx_dtype */
};

/* ops/grid_sample.c */
struct grid_sample_params {
    int mode;                      /* enum gs_mode (ops/grid_sample-impl.h) */
    int padding;                   /* enum gs_padding */
    int align;                     /* align_corners */
    int only_2d;                   /* GridSample-16 */
};

/* ops/center_crop_pad.c, tensor_scatter.c, roi_align.c, deform_conv.c,
 * nms.c, unique.c: the vision and data-dependent operators (ops/vision-impl.h) */
struct center_crop_pad_params {
    int n_axes;                    /* -1: the axes attribute is absent (all axes) */
    int64_t axes[TENSOR_MAX_RANK];
};

struct tensor_scatter_params {
    int circular;                  /* mode "circular" (else "linear") */
    int64_t axis;
};

struct roi_align_params {
    int max_mode;                  /* mode "max" (else "avg") */
    int half_pixel;                /* coordinate_transformation_mode */
    int64_t out_h, out_w, sampling_ratio;
    float spatial_scale;
};

struct deform_conv_params {
    int n_kernel, n_pads, n_strides, n_dilations;   /* -1: attribute absent */
    int64_t group, offset_group;
    int64_t kernel[2], pads[4], strides[2], dilations[2];
};

struct nms_params {
    int center_point_box;
};

struct unique_params {
    int sorted;
    int has_axis;
    int64_t axis;
};

#endif
