/* ops/quant-impl.h — what the quantization operators of ops/quant_linear.c
 * share with their CUDA kernels (ops/cuda/quant.c): how a scale / zero-point
 * element is found for an element of x, and the rounding and saturation
 * rules. The index arithmetic is written once here so that the host and
 * device paths cannot disagree: the per-element arithmetic below is
 * compiled both for the host (ops/quant_linear.c) and for the device
 * (ops/cuda/quant_kernels.cu).
 *
 * Layout of x seen by the scale: x = [outer, axis_dim, inner] around the
 * quantization axis. Per-tensor: one scale. Per-axis: scale[d], d the
 * coordinate along the axis. Blocked (block_size B > 0): scale has x's shape
 * with the axis cut to ceil(axis_dim / B), and element (o, d, n) reads
 * scale[o, d / B, n]. Not for use outside ops/. */
#ifndef DTRX_OPS_QUANT_IMPL_H
#define DTRX_OPS_QUANT_IMPL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/ops.h"

enum quant_mode {
    QUANT_PER_TENSOR = 0,
    QUANT_PER_AXIS = 1,
    QUANT_BLOCKED = 2,
};

struct quant_layout {
    int mode;                      /* enum quant_mode */
    int64_t outer, axis_dim, inner;
    int64_t block_size;            /* QUANT_BLOCKED only */
    int64_t n_blocks;              /* ceil(axis_dim / block_size) */
};

#ifdef __CUDACC__
#define QUANT_HD __host__ __device__
#else
#define QUANT_HD
#endif

/* The scale / zero-point element that element i of x reads. */
QUANT_HD static inline int64_t quant_param_index(const struct quant_layout *l, int64_t i)
{
    if (l->mode == QUANT_PER_TENSOR)
        return 0;
    int64_t d = (i / l->inner) % l->axis_dim;
    if (l->mode == QUANT_PER_AXIS)
        return d;
    int64_t o = i / (l->inner * l->axis_dim), n = i % l->inner;
    return (o * l->n_blocks + d / l->block_size) * l->inner + n;
}

/* One Quantize/DequantizeLinear call, all a thread needs for one element. */
struct quant_args {
    struct quant_layout l;
    int x_dtype, s_dtype, zp_dtype;    /* zp_dtype 0: no zero point */
    int y_dtype;
    int precision;                     /* QuantizeLinear's attribute, 0 if absent */
    int wide;                          /* divide (subtract) in float64: int32 operands */
    int32_t lo, hi;                    /* QuantizeLinear's output range */
    const void *x, *scale, *zp;
    void *y;
};

/* float16 / bfloat16 from and to float, round to nearest even: the same
 * bits as ops/elementwise-impl.h's ew_ conversions, here for device code. */
QUANT_HD static inline float quant_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

QUANT_HD static inline float quant_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return quant_bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return quant_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

QUANT_HD static inline uint64_t quant_round_shift(uint64_t m, int shift)
{
    uint64_t q = m >> shift, rem = m & ((UINT64_C(1) << shift) - 1), half = UINT64_C(1) << (shift - 1);
    return rem > half || (rem == half && (q & 1)) ? q + 1 : q;
}

QUANT_HD static inline uint16_t quant_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return sign | 0x7e00u | (uint16_t)((ax >> 13) & 0x1ffu);
    if (ax >= 0x47800000u)
        return sign | 0x7c00u;
    if (ax >= 0x38800000u)
        return sign | (uint16_t)quant_round_shift(ax - 0x38000000u, 13);
    if (ax < 0x33000000u)
        return sign;
    uint32_t e = ax >> 23;
    return sign | (uint16_t)quant_round_shift((ax & 0x7fffffu) | 0x800000u, (int)(126 - e));
}

QUANT_HD static inline float quant_bf16_to_f32(uint16_t b) { return quant_bits_f32((uint32_t)b << 16); }

QUANT_HD static inline uint16_t quant_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* Element i of a tensor of dtype dt (float, 16-bit floats, the integers
 * up to 32 bits) as double. */
QUANT_HD static inline double quant_load(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case ONNX_DTYPE_FLOAT: return ((const float *)p)[i];
    case ONNX_DTYPE_DOUBLE: return ((const double *)p)[i];
    case ONNX_DTYPE_FLOAT16: return quant_f16_to_f32(((const uint16_t *)p)[i]);
    case ONNX_DTYPE_BFLOAT16: return quant_bf16_to_f32(((const uint16_t *)p)[i]);
    case ONNX_DTYPE_INT8: return ((const int8_t *)p)[i];
    case ONNX_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case ONNX_DTYPE_INT16: return ((const int16_t *)p)[i];
    case ONNX_DTYPE_UINT16: return ((const uint16_t *)p)[i];
    case ONNX_DTYPE_INT32: return ((const int32_t *)p)[i];
    default: return 0;
    }
}

QUANT_HD static inline float quant_round_half(float v, int dt)
{
    return dt == ONNX_DTYPE_FLOAT16 ? quant_f16_to_f32(quant_f32_to_f16(v)) : quant_bf16_to_f32(quant_f32_to_bf16(v));
}

/* rint(q) + zp saturated to [lo, hi]; NaN gives the zero point. */
QUANT_HD static inline int32_t quant_saturate(double q, int32_t zp, int32_t lo, int32_t hi)
{
    if (q != q)
        return zp;
    double v = nearbyint(q) + zp;
    return v <= lo ? lo : v >= hi ? hi : (int32_t)v;
}

/* y[i] of QuantizeLinear. */
QUANT_HD static inline void quant_quantize_elem(const struct quant_args *a, int64_t i)
{
    int64_t k = quant_param_index(&a->l, i);
    double xv = quant_load(a->x, a->x_dtype, i), sv = quant_load(a->scale, a->s_dtype, k), q;
    int32_t z = a->zp_dtype ? (int32_t)quant_load(a->zp, a->zp_dtype, k) : 0;
    int prec = a->precision;
    if (prec == ONNX_DTYPE_FLOAT16 || prec == ONNX_DTYPE_BFLOAT16)
        q = quant_round_half(quant_round_half((float)xv, prec) / quant_round_half((float)sv, prec), prec);
    else if (prec == ONNX_DTYPE_DOUBLE || (!prec && a->wide))
        q = xv / sv;
    else
        q = (float)xv / (float)sv;
    int32_t v = quant_saturate(q, z, a->lo, a->hi);
    switch (a->y_dtype) {
    case ONNX_DTYPE_INT8: ((int8_t *)a->y)[i] = (int8_t)v; break;
    case ONNX_DTYPE_UINT8: ((uint8_t *)a->y)[i] = (uint8_t)v; break;
    case ONNX_DTYPE_INT16: ((int16_t *)a->y)[i] = (int16_t)v; break;
    default: ((uint16_t *)a->y)[i] = (uint16_t)v; break;
    }
}

/* y[i] of DequantizeLinear: (x - zp) * scale in float32, or for int32 x
 * with a zero point in float64 as numpy's float32(x) - int32. */
QUANT_HD static inline void quant_dequantize_elem(const struct quant_args *a, int64_t i)
{
    int64_t k = quant_param_index(&a->l, i);
    float sv = (float)quant_load(a->scale, a->s_dtype, k), v;
    if (a->wide)
        v = (float)(((double)(float)((const int32_t *)a->x)[i] - quant_load(a->zp, a->zp_dtype, k)) * sv);
    else
        v = ((float)quant_load(a->x, a->x_dtype, i) - (a->zp_dtype ? (float)quant_load(a->zp, a->zp_dtype, k) : 0.0f)) *
            sv;
    if (a->y_dtype == ONNX_DTYPE_FLOAT)
        ((float *)a->y)[i] = v;
    else
        ((uint16_t *)a->y)[i] = a->y_dtype == ONNX_DTYPE_FLOAT16 ? quant_f32_to_f16(v) : quant_f32_to_bf16(v);
}

/* DynamicQuantizeLinear's y for x given the scale s and zero point z. */
QUANT_HD static inline uint8_t quant_dynamic_elem(float x, float s, float z)
{
    float v = nearbyintf(x / s) + z;
    return v != v ? (uint8_t)z : v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)v;
}

/* DynamicQuantizeLinear's scale and zero point from the range [mn, mx] of
 * x widened to include 0, the reference's float32 steps. */
QUANT_HD static inline void quant_dynamic_from_range(float mn, float mx, float *scale, float *zero_point)
{
    float s = (mx == mn ? 1.0f : mx - mn) / 255.0f;
    float z0 = 0.0f - mn / s;
    *scale = s;
    *zero_point = nearbyintf(z0 < 0.0f ? 0.0f : z0 > 255.0f ? 255.0f : z0);
}

/* Checks scale (and zero point, may be NULL) against x for `axis` and
 * `block_size` (0: none) and fills *l; -1 with a message naming the input.
 * `version` is the resolved since-version: opset 10 allows only a
 * per-tensor scale, 13..19 per-tensor and per-axis. */
int quant_layout_resolve(const struct op_call *c, const struct tensor *x, const struct tensor *scale,
                         const struct tensor *zp, int64_t axis, int64_t block_size, struct quant_layout *l);

/* Integer range of a quantized element type; 0 if it is not one dtrexec
 * holds (int8, uint8, int16, uint16). */
int quant_range(int dtype, int32_t *qmin, int32_t *qmax);

/* Fills *a for the QuantizeLinear (quantize 1) or DequantizeLinear call c
 * after checking its inputs; -1 with a message. */
int quant_args_init(const struct op_call *c, int quantize, struct quant_args *a);

#endif
