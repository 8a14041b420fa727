/* ops/quant-params.h — the parsed attributes of QuantizeLinear and DequantizeLinear: what their
 * op_def.parse produces and their kernels read, on the host (ops/quant_linear.c)
 * and on the device (ops/cuda/quant.c). Not for use outside ops/. */
#ifndef DTRX_OPS_QUANT_PARAMS_H
#define DTRX_OPS_QUANT_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

/* ops/quant_linear.c: QuantizeLinear, DequantizeLinear; attributes a
 * version does not define hold their defaults. */
struct quant_params {
    int64_t axis;
    int64_t block_size;            /* 0: not blocked */
    int saturate;
    int output_dtype;              /* 0: from the zero point / scale */
    int precision;                 /* 0: the reference's default */
};

#endif
