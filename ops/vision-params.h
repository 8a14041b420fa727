/* ops/vision-params.h — the parsed attributes of the vision operators: what their
 * op_def.parse produces and their kernels read, on the host (ops/center_crop_pad.c, tensor_scatter.c, roi_align.c, deform_conv.c, nms.c, unique.c)
 * and on the device (ops/cuda/vision.c). Not for use outside ops/. */
#ifndef DTRX_OPS_VISION_PARAMS_H
#define DTRX_OPS_VISION_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

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
