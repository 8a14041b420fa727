/* ops/shape-params.h — the parsed attributes of the shape and data-movement family: what their
 * op_def.parse produces and their kernels read, on the host (ops/reshape.c, transpose.c, concat_split.c, slice.c, gather.c, pad.c, resize.c, shape.c, constant.c, cumsum_trilu.c, einsum.c, onehot.c, scatter_gather_nd.c, scatter_elements.c, topk.c)
 * and on the device (ops/cuda/layout*.c). Not for use outside ops/. */
#ifndef DTRX_OPS_SHAPE_PARAMS_H
#define DTRX_OPS_SHAPE_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

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

/* ops/gather.c */
struct gather_params {
    int64_t axis;
};

struct gather_grad_params {
    int64_t axis;
    struct tensor target;
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

/* ops/transpose.c */
struct transpose_params {
    int n_perm;                    /* -1: reverse the axes */
    int64_t perm[TENSOR_MAX_RANK];
};

#endif
