/* ops/misc-params.h — the parsed attributes of the operators of issue 18: what their
 * op_def.parse produces and their kernels read, on the host (ops/along_axis.c, bitwise.c, depth_space.c, eye_nonzero.c, local_norm.c, select_axis.c, upsample.c, unary_trig.c, affine_grid.c, grid_sample.c)
 * and on the device (ops/cuda/misc*.c). Not for use outside ops/. */
#ifndef DTRX_OPS_MISC_PARAMS_H
#define DTRX_OPS_MISC_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

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

#endif
