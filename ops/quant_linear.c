/* ops/quant_linear.c — QuantizeLinear and DequantizeLinear (opsets 10, 13,
 * 19, 21, 23, 24, 25, 28) and DynamicQuantizeLinear (11).
 *
 * QuantizeLinear: y = saturate(rint(x / y_scale) + y_zero_point), rint
 * rounding half to even, saturated to the range of y's type: int8, uint8,
 * int16 or uint16 (y_zero_point's type, else `output_dtype`, else uint8).
 * DequantizeLinear: y = (x - x_zero_point) * x_scale for x of int8, uint8,
 * int16, uint16 or int32, y of x_scale's type or `output_dtype`. Scales are
 * per tensor (one element), per axis (1-D along `axis`, opset >= 13) or
 * blocked (`block_size`, opset >= 21; see ops/quant-impl.h).
 *
 * Arithmetic is the ONNX reference's (numpy's types): the quotient x / scale
 * in float32, or in float64 where x or the scale is int32; `precision`
 * (opset >= 23) float16 / bfloat16 divides values rounded to that type and
 * rounds the quotient to it (a float32 quotient rounded once more is the
 * correctly rounded half quotient). A float16 model is widened to float32
 * at load (onnx/half.c), so there a division without `precision` is done in
 * float32 where the reference divides in float16. NaN quantizes to the zero
 * point; +-inf and out-of-range values saturate. Dequantizing int32 with a
 * zero point subtracts in float64 as numpy does (float32(x) - int32).
 *
 * DynamicQuantizeLinear: uint8 with a scale and zero point from the range
 * of x (including 0), exactly the reference's float32 steps. NaN elements
 * are skipped by the min/max.
 *
 * `saturate` only concerns the float8 types, which dtrexec does not hold
 * (nor int4/int2/float4): those types get a clear error. The outputs are
 * integers or are computed from integers: none of these ops has a gradient
 * (runtime/params.c stops gradients at them). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/quant-params.h"
#include "ops/quant-impl.h"

#define Q_PARALLEL_ELEMS 65536

int quant_range(int dtype, int32_t *qmin, int32_t *qmax)
{
    switch (dtype) {
    case ONNX_DTYPE_INT8: *qmin = -128, *qmax = 127; return 1;
    case ONNX_DTYPE_UINT8: *qmin = 0, *qmax = 255; return 1;
    case ONNX_DTYPE_INT16: *qmin = -32768, *qmax = 32767; return 1;
    case ONNX_DTYPE_UINT16: *qmin = 0, *qmax = 65535; return 1;
    default: return 0;
    }
}

/* ONNX element types dtrexec does not hold, by number, for messages. */
static const char *exotic_name(int64_t dt)
{
    switch (dt) {
    case 17: return "float8e4m3fn";
    case 18: return "float8e4m3fnuz";
    case 19: return "float8e5m2";
    case 20: return "float8e5m2fnuz";
    case 21: return "uint4";
    case 22: return "int4";
    case 23: return "float4e2m1";
    case 24: return "float8e8m0";
    case 25: return "uint2";
    case 26: return "int2";
    case 27: return "float6e2m3";
    case 28: return "float6e3m2";
    default: return NULL;
    }
}

/* The caller prefixes the node's name and op. */
static int parse_fail(char *err, size_t err_size, const char *msg, int64_t v)
{
    const char *ex = exotic_name(v);
    if (ex)
        snprintf(err, err_size, "%s (got %lld, %s)", msg, (long long)v, ex);
    else
        snprintf(err, err_size, "%s (got %lld)", msg, (long long)v);
    return -1;
}

static int quant_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    int is_q = !strcmp(node->op_type, "QuantizeLinear");
    struct quant_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->axis = version >= 13 ? onnx_node_attr_int(node, "axis", 1) : 1;
    p->block_size = version >= 21 ? onnx_node_attr_int(node, "block_size", 0) : 0;
    p->saturate = is_q && version >= 19 ? (int)onnx_node_attr_int(node, "saturate", 1) : 1;
    int64_t od = (is_q && version >= 21) || (!is_q && version >= 23)
                     ? onnx_node_attr_int(node, "output_dtype", 0) : 0;
    int64_t prec = is_q && version >= 23 ? onnx_node_attr_int(node, "precision", 0) : 0;
    const char *bad = NULL;
    int64_t v = 0;
    int32_t lo, hi;
    if (p->block_size < 0)
        bad = "block_size must be positive (or 0: not blocked)", v = p->block_size;
    else if (p->saturate != 0 && p->saturate != 1)
        bad = "saturate must be 0 or 1", v = p->saturate;
    else if (exotic_name(od))
        bad = "output_dtype names an element type dtrexec does not hold (float8/int4/int2/float4/float6 are out of scope)", v = od;
    else if (is_q && od && !quant_range((int)od, &lo, &hi))
        bad = "output_dtype must be int8 (3), uint8 (2), int16 (5) or uint16 (4)", v = od;
    else if (!is_q && od && od != ONNX_DTYPE_FLOAT && od != ONNX_DTYPE_FLOAT16 && od != ONNX_DTYPE_BFLOAT16)
        bad = "output_dtype must be float (1), float16 (10) or bfloat16 (16)", v = od;
    else if (prec && prec != ONNX_DTYPE_FLOAT && prec != ONNX_DTYPE_FLOAT16 && prec != ONNX_DTYPE_BFLOAT16 &&
             prec != ONNX_DTYPE_DOUBLE)
        bad = "precision must be float (1), float16 (10), bfloat16 (16) or double (11)", v = prec;
    if (bad) {
        free(p);
        *params = NULL;
        return parse_fail(err, err_size, bad, v);
    }
    p->output_dtype = (int)od;
    p->precision = (int)prec;
    return 0;
}

int quant_layout_resolve(const struct op_call *c, const struct tensor *x, const struct tensor *scale,
                         const struct tensor *zp, int64_t axis, int64_t block_size, struct quant_layout *l)
{
    char d1[128], d2[128];
    const char *sname = c->def->name[0] == 'Q' ? "y_scale" : "x_scale";
    memset(l, 0, sizeof *l);
    l->outer = l->axis_dim = l->inner = l->block_size = l->n_blocks = 1;
    if (zp) {
        int same = zp->rank == scale->rank;
        for (int i = 0; same && i < zp->rank; i++)
            same = zp->dims[i] == scale->dims[i];
        if (!same && !(tensor_numel(zp) == 1 && tensor_numel(scale) == 1 && zp->rank <= 1 && scale->rank <= 1))
            return op_error(c, "the zero point %s must have the shape of %s %s", tensor_describe(zp, d1, sizeof d1),
                            sname, tensor_describe(scale, d2, sizeof d2));
    }
    if (tensor_numel(scale) == 1 && scale->rank <= 1) {
        l->mode = QUANT_PER_TENSOR;
        return 0;
    }
    if (c->version < 13)
        return op_error(c, "%s %s must be a scalar at opset 10 (per-tensor quantization only)", sname,
                        tensor_describe(scale, d1, sizeof d1));
    int a = op_axis(axis, x->rank);
    if (a < 0)
        return op_error(c, "axis %lld is out of range for x %s", (long long)axis, tensor_describe(x, d1, sizeof d1));
    l->axis_dim = x->dims[a];
    for (int i = 0; i < a; i++)
        l->outer *= x->dims[i];
    for (int i = a + 1; i < x->rank; i++)
        l->inner *= x->dims[i];
    if (!block_size) {
        if (scale->rank != 1 || scale->dims[0] != x->dims[a])
            return op_error(c, "%s %s must be a scalar or 1-D of x's dimension %d (%lld) for per-axis quantization; "
                            "x is %s%s", sname, tensor_describe(scale, d1, sizeof d1), a, (long long)x->dims[a],
                            tensor_describe(x, d2, sizeof d2),
                            c->version >= 21 ? " (blocked quantization needs block_size)" : "");
        l->mode = QUANT_PER_AXIS;
        return 0;
    }
    int64_t nb = (x->dims[a] + block_size - 1) / block_size;
    int ok = scale->rank == x->rank;
    for (int i = 0; ok && i < x->rank; i++)
        ok = scale->dims[i] == (i == a ? nb : x->dims[i]);
    if (!ok)
        return op_error(c, "%s %s must have x's shape %s with dimension %d cut to ceil(%lld / block_size %lld) = %lld "
                        "for blocked quantization", sname, tensor_describe(scale, d1, sizeof d1),
                        tensor_describe(x, d2, sizeof d2), a, (long long)x->dims[a], (long long)block_size,
                        (long long)nb);
    l->mode = QUANT_BLOCKED;
    l->block_size = block_size;
    l->n_blocks = nb;
    return 0;
}

static int is_real(int dt)
{
    return dt == ONNX_DTYPE_FLOAT || dt == ONNX_DTYPE_FLOAT16 || dt == ONNX_DTYPE_BFLOAT16;
}

static int is_qint(int dt)
{
    int32_t lo, hi;
    return quant_range(dt, &lo, &hi);
}

static int dtype_error(const struct op_call *c, const char *what, int dt, const char *supported)
{
    const char *ex = exotic_name(dt);
    if (ex)
        return op_error(c, "%s has element type %s, which dtrexec does not hold (float8/int4/int2/float4/float6 "
                        "are out of scope)", what, ex);
    return ew_dtype_error(c, what, dt, supported);
}

/* QuantizeLinear's output type: y_zero_point's, else output_dtype, else
 * uint8; -1 when the two disagree. */
static int quantize_out_dtype(const struct op_call *c)
{
    const struct quant_params *p = c->params;
    const struct tensor *zp = c->n_in > 2 ? c->in[2] : NULL;
    if (zp && p->output_dtype && zp->dtype != p->output_dtype)
        return op_error(c, "output_dtype %s differs from y_zero_point's type %s", onnx_dtype_name(p->output_dtype),
                        onnx_dtype_name(zp->dtype));
    return zp ? zp->dtype : p->output_dtype ? p->output_dtype : ONNX_DTYPE_UINT8;
}

int quant_args_init(const struct op_call *c, int quantize, struct quant_args *a)
{
    const struct quant_params *p = c->params;
    const struct tensor *x = c->in[0], *s = c->in[1], *zp = c->n_in > 2 ? c->in[2] : NULL;
    memset(a, 0, sizeof *a);
    if (quantize) {
        if (!is_real(x->dtype) && x->dtype != ONNX_DTYPE_INT32)
            return dtype_error(c, "x", x->dtype, "float, float16, bfloat16, int32");
        if (!is_real(s->dtype) && s->dtype != ONNX_DTYPE_INT32)
            return dtype_error(c, "y_scale", s->dtype, "float, float16, bfloat16, int32");
        if (zp && !is_qint(zp->dtype))
            return dtype_error(c, "y_zero_point", zp->dtype, "int8, uint8, int16, uint16");
        a->y_dtype = quantize_out_dtype(c);
        if (a->y_dtype < 0)
            return -1;
        quant_range(a->y_dtype, &a->lo, &a->hi);
        a->precision = p->precision;
        a->wide = x->dtype == ONNX_DTYPE_INT32 || s->dtype == ONNX_DTYPE_INT32;
    } else {
        if (!is_qint(x->dtype) && x->dtype != ONNX_DTYPE_INT32)
            return dtype_error(c, "x", x->dtype, "int8, uint8, int16, uint16, int32");
        if (!is_real(s->dtype))
            return dtype_error(c, "x_scale", s->dtype, "float, float16, bfloat16");
        if (zp && zp->dtype != x->dtype)
            return op_error(c, "x_zero_point has type %s but x has %s; they must match", onnx_dtype_name(zp->dtype),
                            onnx_dtype_name(x->dtype));
        a->y_dtype = p->output_dtype ? p->output_dtype : s->dtype;
        a->wide = x->dtype == ONNX_DTYPE_INT32 && zp;
    }
    a->x_dtype = x->dtype, a->s_dtype = s->dtype, a->zp_dtype = zp ? zp->dtype : 0;
    a->x = x->data, a->scale = s->data, a->zp = zp ? zp->data : NULL;
    a->y = c->n_out > 0 && c->out[0] ? c->out[0]->data : NULL;
    return quant_layout_resolve(c, x, s, zp, p->axis, p->block_size, &a->l);
}

static int quant_infer(struct op_call *c)
{
    struct quant_args a;
    if (quant_args_init(c, c->def->name[0] == 'Q', &a))
        return -1;
    struct tensor *y = c->out[0];
    *y = *c->in[0];
    y->dtype = a.y_dtype;
    y->data = NULL;
    return 0;
}

static int quantize_cpu(struct op_call *c)
{
    struct quant_args a;
    if (quant_args_init(c, 1, &a))
        return -1;
    int64_t n = tensor_numel(c->in[0]);
#pragma omp parallel for schedule(static) if (n > Q_PARALLEL_ELEMS)
    for (int64_t i = 0; i < n; i++)
        quant_quantize_elem(&a, i);
    return 0;
}

static int dequantize_cpu(struct op_call *c)
{
    struct quant_args a;
    if (quant_args_init(c, 0, &a))
        return -1;
    int64_t n = tensor_numel(c->in[0]);
#pragma omp parallel for schedule(static) if (n > Q_PARALLEL_ELEMS)
    for (int64_t i = 0; i < n; i++)
        quant_dequantize_elem(&a, i);
    return 0;
}

/* ---- DynamicQuantizeLinear ------------------------------------------------------ */

static int dynq_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    if (x->dtype != ONNX_DTYPE_FLOAT)
        return dtype_error(c, "x", x->dtype, "float");
    struct tensor *y = c->out[0];
    *y = *x;
    y->dtype = ONNX_DTYPE_UINT8;
    y->data = NULL;
    for (int k = 1; k < 3; k++)
        if (c->n_out > k && c->out[k]) {
            c->out[k]->dtype = k == 1 ? ONNX_DTYPE_FLOAT : ONNX_DTYPE_UINT8;
            c->out[k]->rank = 0;
        }
    return 0;
}

static int dynq_cpu(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    if (x->dtype != ONNX_DTYPE_FLOAT)
        return dtype_error(c, "x", x->dtype, "float");
    const float *xv = x->data;
    int64_t n = tensor_numel(x);
    float mx = 0.0f, mn = 0.0f, s, z;
    for (int64_t i = 0; i < n; i++) {
        mx = xv[i] > mx ? xv[i] : mx;
        mn = xv[i] < mn ? xv[i] : mn;
    }
    quant_dynamic_from_range(mn, mx, &s, &z);
    uint8_t *y = c->out[0]->data;
#pragma omp parallel for schedule(static) if (n > Q_PARALLEL_ELEMS)
    for (int64_t i = 0; i < n; i++)
        y[i] = quant_dynamic_elem(xv[i], s, z);
    if (c->n_out > 1 && c->out[1])
        *(float *)c->out[1]->data = s;
    if (c->n_out > 2 && c->out[2])
        *(uint8_t *)c->out[2]->data = (uint8_t)z;
    return 0;
}

static struct op_cost quant_cost(const struct op_call *c) { return ew_cost_scaled(c, 3); }

const struct op_def op_quantize_linear = {
    .domain = "", .name = "QuantizeLinear",
    .since = { 10, 13, 19, 21, 23, 24, 25, 28 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = quant_parse,
    .infer = quant_infer,
    .cost = quant_cost,
    .kernel = { [BACKEND_CPU] = quantize_cpu },
};

const struct op_def op_dequantize_linear = {
    .domain = "", .name = "DequantizeLinear",
    .since = { 10, 13, 19, 21, 23, 24, 25, 28 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = quant_parse,
    .infer = quant_infer,
    .cost = quant_cost,
    .kernel = { [BACKEND_CPU] = dequantize_cpu },
};

const struct op_def op_dynamic_quantize_linear = {
    .domain = "", .name = "DynamicQuantizeLinear",
    .since = { 11 },
    .min_in = 1, .max_in = 1, .min_out = 3, .max_out = 3,
    .infer = dynq_infer,
    .cost = quant_cost,
    .kernel = { [BACKEND_CPU] = dynq_cpu },
};
