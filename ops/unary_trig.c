/* ops/unary_trig.c — the one-input math operators that ops/unary.c does not
 * hold: Tan, Asin, Acos, Atan (opsets 7, 22), Sinh, Cosh, Asinh, Acosh,
 * Atanh (9, 22), Softsign (1, 22), ThresholdedRelu (10, 22; alpha, default
 * 1) and Shrink (9; lambd, default 0.5, and bias, default 0). Output has the
 * input's shape and dtype. Version 22 only widened the type lists to
 * bfloat16 and float16, which dtrexec computes nowhere (as ops/unary.c):
 * float and double here, each in its own precision through <tgmath.h>, and
 * for Shrink also every integer type (computed in double, stored with the
 * saturating conversion of ops/elementwise-impl.h). Out-of-domain inputs
 * (asin(2), acosh(0.5), atanh(1)) give NaN or inf as in numpy.
 *
 * Gradient: one dtrexec-domain kernel, UnaryMathGrad(dy, X) -> dX, whose
 * `op` attribute names the forward operator (and alpha / lambd carry its
 * attributes): dX = dy * f'(X). ThresholdedRelu and Shrink take 0 at and
 * inside their thresholds, where they are flat or jump. */
/* As ops/unary.c: lets GCC vectorise the conditional expressions. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>

#include "ops/elementwise-impl.h"
#include "ops/misc-params.h"

#define FLOATS_LIST "float, double"
#define NUMERIC_LIST "float, double, int8, int16, int32, int64, uint8, uint16, uint32, uint64"

static const char *const umath_names[UMATH_COUNT] = {
    [UMATH_TAN] = "Tan", [UMATH_ASIN] = "Asin", [UMATH_ACOS] = "Acos",
    [UMATH_ATAN] = "Atan", [UMATH_SINH] = "Sinh", [UMATH_COSH] = "Cosh",
    [UMATH_ASINH] = "Asinh", [UMATH_ACOSH] = "Acosh", [UMATH_ATANH] = "Atanh",
    [UMATH_SOFTSIGN] = "Softsign", [UMATH_THRESHOLDED_RELU] = "ThresholdedRelu",
    [UMATH_SHRINK] = "Shrink",
};

/* Flops per element: a transcendental counts as a handful of arithmetic ops. */
static const double umath_flops[UMATH_COUNT] = {
    [UMATH_TAN] = 10, [UMATH_ASIN] = 10, [UMATH_ACOS] = 10, [UMATH_ATAN] = 10,
    [UMATH_SINH] = 10, [UMATH_COSH] = 10, [UMATH_ASINH] = 12, [UMATH_ACOSH] = 12,
    [UMATH_ATANH] = 12, [UMATH_SOFTSIGN] = 3, [UMATH_THRESHOLDED_RELU] = 1, [UMATH_SHRINK] = 2,
};

/* ---- forward inner loops (ctx: the call's struct unary_math_params) ------ */

#define T_(D) EW_T_##D
#define P_ ((const struct unary_math_params *)ctx)
#define TAN_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), tan(x))
#define ASIN_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), asin(x))
#define ACOS_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), acos(x))
#define ATAN_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), atan(x))
#define SINH_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), sinh(x))
#define COSH_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), cosh(x))
#define ASINH_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), asinh(x))
#define ACOSH_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), acosh(x))
#define ATANH_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), atanh(x))
#define SOFTSIGN_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), x / ((T_(D))1 + fabs(x)))
/* x > alpha ? x : 0, as numpy.where: NaN gives 0. */
#define THRELU_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), \
                                         x > (T_(D))P_->alpha ? x : (T_(D))0)
#define SHRINKF_DEF(op, D)                                                              \
    EW_UNARY_INNER(op##_##D, T_(D), T_(D),                                              \
                   x < -(T_(D))P_->lambd ? x + (T_(D))P_->bias                          \
                   : x > (T_(D))P_->lambd ? x - (T_(D))P_->bias : (T_(D))0)
#define SHRINKI_DEF(op, D)                                                              \
    EW_UNARY_INNER(op##_##D, T_(D), T_(D),                                              \
                   EW_ST_##D((double)x < -(double)P_->lambd ? (double)x + P_->bias      \
                             : (double)x > (double)P_->lambd ? (double)x - P_->bias     \
                                                             : 0.0))

EW_FLOAT_TYPES(TAN_DEF, tan)
EW_FLOAT_TYPES(ASIN_DEF, asin)
EW_FLOAT_TYPES(ACOS_DEF, acos)
EW_FLOAT_TYPES(ATAN_DEF, atan)
EW_FLOAT_TYPES(SINH_DEF, sinh)
EW_FLOAT_TYPES(COSH_DEF, cosh)
EW_FLOAT_TYPES(ASINH_DEF, asinh)
EW_FLOAT_TYPES(ACOSH_DEF, acosh)
EW_FLOAT_TYPES(ATANH_DEF, atanh)
EW_FLOAT_TYPES(SOFTSIGN_DEF, softsign)
EW_FLOAT_TYPES(THRELU_DEF, threlu)
EW_FLOAT_TYPES(SHRINKF_DEF, shrink)
EW_INT_TYPES(SHRINKI_DEF, shrink)

static const ew_inner_fn umath_fns[UMATH_COUNT][EW_DTYPE_COUNT] = {
    [UMATH_TAN] = { EW_FLOAT_TYPES(EW_ENTRY, tan) },
    [UMATH_ASIN] = { EW_FLOAT_TYPES(EW_ENTRY, asin) },
    [UMATH_ACOS] = { EW_FLOAT_TYPES(EW_ENTRY, acos) },
    [UMATH_ATAN] = { EW_FLOAT_TYPES(EW_ENTRY, atan) },
    [UMATH_SINH] = { EW_FLOAT_TYPES(EW_ENTRY, sinh) },
    [UMATH_COSH] = { EW_FLOAT_TYPES(EW_ENTRY, cosh) },
    [UMATH_ASINH] = { EW_FLOAT_TYPES(EW_ENTRY, asinh) },
    [UMATH_ACOSH] = { EW_FLOAT_TYPES(EW_ENTRY, acosh) },
    [UMATH_ATANH] = { EW_FLOAT_TYPES(EW_ENTRY, atanh) },
    [UMATH_SOFTSIGN] = { EW_FLOAT_TYPES(EW_ENTRY, softsign) },
    [UMATH_THRESHOLDED_RELU] = { EW_FLOAT_TYPES(EW_ENTRY, threlu) },
    [UMATH_SHRINK] = { EW_NUMERIC_TYPES(EW_ENTRY, shrink) },
};

/* ---- gradient inner loops: x is dy, y is X -------------------------------- */

#define TAN_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), \
                                            x * ((T_(D))1 + tan(y) * tan(y)))
#define ASIN_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), \
                                             x / sqrt((T_(D))1 - y * y))
#define ACOS_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), \
                                             -x / sqrt((T_(D))1 - y * y))
#define ATAN_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), \
                                             x / ((T_(D))1 + y * y))
#define SINH_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), x * cosh(y))
#define COSH_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), x * sinh(y))
#define ASINH_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), \
                                              x / sqrt(y * y + (T_(D))1))
#define ACOSH_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), \
                                              x / sqrt(y * y - (T_(D))1))
#define ATANH_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), \
                                              x / ((T_(D))1 - y * y))
#define SOFTSIGN_GRAD_DEF(op, D)                                                        \
    EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D),                                      \
                    x / (((T_(D))1 + fabs(y)) * ((T_(D))1 + fabs(y))))
#define THRELU_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), \
                                               y > (T_(D))P_->alpha ? x : (T_(D))0)
#define SHRINK_GRAD_DEF(op, D)                                                          \
    EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D),                                      \
                    (y < -(T_(D))P_->lambd || y > (T_(D))P_->lambd) ? x : (T_(D))0)

EW_FLOAT_TYPES(TAN_GRAD_DEF, tan_grad)
EW_FLOAT_TYPES(ASIN_GRAD_DEF, asin_grad)
EW_FLOAT_TYPES(ACOS_GRAD_DEF, acos_grad)
EW_FLOAT_TYPES(ATAN_GRAD_DEF, atan_grad)
EW_FLOAT_TYPES(SINH_GRAD_DEF, sinh_grad)
EW_FLOAT_TYPES(COSH_GRAD_DEF, cosh_grad)
EW_FLOAT_TYPES(ASINH_GRAD_DEF, asinh_grad)
EW_FLOAT_TYPES(ACOSH_GRAD_DEF, acosh_grad)
EW_FLOAT_TYPES(ATANH_GRAD_DEF, atanh_grad)
EW_FLOAT_TYPES(SOFTSIGN_GRAD_DEF, softsign_grad)
EW_FLOAT_TYPES(THRELU_GRAD_DEF, threlu_grad)
EW_FLOAT_TYPES(SHRINK_GRAD_DEF, shrink_grad)

static const ew_inner_fn umath_grad_fns[UMATH_COUNT][EW_DTYPE_COUNT] = {
    [UMATH_TAN] = { EW_FLOAT_TYPES(EW_ENTRY, tan_grad) },
    [UMATH_ASIN] = { EW_FLOAT_TYPES(EW_ENTRY, asin_grad) },
    [UMATH_ACOS] = { EW_FLOAT_TYPES(EW_ENTRY, acos_grad) },
    [UMATH_ATAN] = { EW_FLOAT_TYPES(EW_ENTRY, atan_grad) },
    [UMATH_SINH] = { EW_FLOAT_TYPES(EW_ENTRY, sinh_grad) },
    [UMATH_COSH] = { EW_FLOAT_TYPES(EW_ENTRY, cosh_grad) },
    [UMATH_ASINH] = { EW_FLOAT_TYPES(EW_ENTRY, asinh_grad) },
    [UMATH_ACOSH] = { EW_FLOAT_TYPES(EW_ENTRY, acosh_grad) },
    [UMATH_ATANH] = { EW_FLOAT_TYPES(EW_ENTRY, atanh_grad) },
    [UMATH_SOFTSIGN] = { EW_FLOAT_TYPES(EW_ENTRY, softsign_grad) },
    [UMATH_THRESHOLDED_RELU] = { EW_FLOAT_TYPES(EW_ENTRY, threlu_grad) },
    [UMATH_SHRINK] = { EW_FLOAT_TYPES(EW_ENTRY, shrink_grad) },
};

/* ---- attributes ------------------------------------------------------------ */

static int umath_params_new(const struct onnx_node *node, int fn, void **params, char *err,
                            size_t err_size)
{
    struct unary_math_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->fn = fn;
    p->alpha = onnx_node_attr_float(node, "alpha", 1.0f);
    p->lambd = onnx_node_attr_float(node, "lambd", 0.5f);
    p->bias = onnx_node_attr_float(node, "bias", 0.0f);
    if (p->lambd != p->lambd || p->alpha != p->alpha || p->bias != p->bias) {
        free(*params);
        *params = NULL;
        return ew_parse_error(err, err_size, "alpha, lambd and bias must not be NaN");
    }
    return 0;
}

static const char *umath_supported(int fn)
{
    return fn == UMATH_SHRINK ? NUMERIC_LIST : FLOATS_LIST;
}

/* ---- forward ---------------------------------------------------------------- */

static int umath_infer(struct op_call *c)
{
    const struct unary_math_params *p = c->params;
    const struct tensor *x = c->in[0];
    if (!EW_LOOKUP(umath_fns[p->fn], x->dtype))
        return ew_dtype_error(c, "input 0", x->dtype, umath_supported(p->fn));
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = x->rank;
    memcpy(y->dims, x->dims, sizeof y->dims);
    return 0;
}

static int umath_cpu(struct op_call *c)
{
    const struct unary_math_params *p = c->params;
    ew_inner_fn fn = EW_LOOKUP(umath_fns[p->fn], c->in[0]->dtype);
    if (!fn)
        return ew_dtype_error(c, "input 0", c->in[0]->dtype, umath_supported(p->fn));
    ew_apply(c->out[0], c->in, 1, fn, p);
    return 0;
}

static struct op_cost umath_cost(const struct op_call *c)
{
    const struct unary_math_params *p = c->params;
    return ew_cost_scaled(c, umath_flops[p->fn]);
}

/* UnaryMathGrad(dy, X) with the forward's attributes. */
static int umath_grad(struct grad_ctx *g)
{
    const struct unary_math_params *p = g->fwd->params;
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    struct onnx_attr a[3] = {
        { .name = "op", .type = ONNX_ATTR_STRING, .s = (char *)umath_names[p->fn] },
        { .name = "alpha", .type = ONNX_ATTR_FLOAT, .f = p->alpha },
        { .name = "lambd", .type = ONNX_ATTR_FLOAT, .f = p->lambd },
    };
    a[0].s_len = strlen(a[0].s);
    int dx, in[2] = { g->dy[0], g->in[0] };
    if (g->emit(g, "UnaryMathGrad", a, 3, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

#define UMATH_OP(sym, opname, fn_, ...)                                                  \
    static int sym##_parse(const struct onnx_node *node, int version, void **params,     \
                           char *err, size_t err_size)                                   \
    {                                                                                    \
        (void)version;                                                                   \
        return umath_params_new(node, fn_, params, err, err_size);                       \
    }                                                                                    \
    const struct op_def sym = {                                                          \
        .domain = "", .name = opname, .since = { __VA_ARGS__ },                          \
        .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,                            \
        .parse = sym##_parse, .infer = umath_infer, .cost = umath_cost,                  \
        .kernel = { [BACKEND_CPU] = umath_cpu },                                         \
        .grad = umath_grad, .grad_saves_in = 1u,                                         \
    };

UMATH_OP(op_tan, "Tan", UMATH_TAN, 7, 22)
UMATH_OP(op_asin, "Asin", UMATH_ASIN, 7, 22)
UMATH_OP(op_acos, "Acos", UMATH_ACOS, 7, 22)
UMATH_OP(op_atan, "Atan", UMATH_ATAN, 7, 22)
UMATH_OP(op_sinh, "Sinh", UMATH_SINH, 9, 22)
UMATH_OP(op_cosh, "Cosh", UMATH_COSH, 9, 22)
UMATH_OP(op_asinh, "Asinh", UMATH_ASINH, 9, 22)
UMATH_OP(op_acosh, "Acosh", UMATH_ACOSH, 9, 22)
UMATH_OP(op_atanh, "Atanh", UMATH_ATANH, 9, 22)
UMATH_OP(op_softsign, "Softsign", UMATH_SOFTSIGN, 1, 22)
UMATH_OP(op_thresholded_relu, "ThresholdedRelu", UMATH_THRESHOLDED_RELU, 10, 22)
UMATH_OP(op_shrink, "Shrink", UMATH_SHRINK, 9)

/* ---- UnaryMathGrad (dtrexec) ------------------------------------------------- */

static int umath_grad_parse(const struct onnx_node *node, int version, void **params,
                            char *err, size_t err_size)
{
    (void)version;
    const char *op = onnx_node_attr_string(node, "op", NULL);
    if (!op)
        return ew_parse_error(err, err_size, "attribute op (the forward operator) is required");
    for (int fn = 0; fn < UMATH_COUNT; fn++)
        if (!strcmp(op, umath_names[fn]))
            return umath_params_new(node, fn, params, err, err_size);
    return ew_parse_error(err, err_size, "op '%s' is not one of Tan, Asin, Acos, Atan, Sinh, "
                          "Cosh, Asinh, Acosh, Atanh, Softsign, ThresholdedRelu, Shrink", op);
}

/* dy and X: the same float dtype and shape; dX is like them. */
static int umath_grad_infer(struct op_call *c)
{
    const struct unary_math_params *p = c->params;
    const struct tensor *dy = c->in[0], *x = c->in[1];
    if (!EW_LOOKUP(umath_grad_fns[p->fn], dy->dtype))
        return ew_dtype_error(c, "dy", dy->dtype, FLOATS_LIST);
    if (x->dtype != dy->dtype)
        return op_error(c, "input 1 has dtype %s but dy has %s; they must match",
                        onnx_dtype_name(x->dtype), onnx_dtype_name(dy->dtype));
    if (!tensor_same_shape(dy, x)) {
        char a[128], b[128];
        return op_error(c, "dy %s and input 1 %s must have the same shape",
                        tensor_describe(dy, a, sizeof a), tensor_describe(x, b, sizeof b));
    }
    struct tensor *dx = c->out[0];
    dx->dtype = dy->dtype;
    dx->rank = dy->rank;
    memcpy(dx->dims, dy->dims, sizeof dx->dims);
    return 0;
}

static int umath_grad_cpu(struct op_call *c)
{
    const struct unary_math_params *p = c->params;
    ew_inner_fn fn = EW_LOOKUP(umath_grad_fns[p->fn], c->in[0]->dtype);
    if (!fn)
        return ew_dtype_error(c, "dy", c->in[0]->dtype, FLOATS_LIST);
    ew_apply(c->out[0], c->in, 2, fn, p);
    return 0;
}

static struct op_cost umath_grad_cost(const struct op_call *c)
{
    const struct unary_math_params *p = c->params;
    return ew_cost_scaled(c, umath_flops[p->fn] + 2);
}

const struct op_def op_unary_math_grad = {
    .domain = "dtrexec", .name = "UnaryMathGrad", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = umath_grad_parse, .infer = umath_grad_infer, .cost = umath_grad_cost,
    .kernel = { [BACKEND_CPU] = umath_grad_cpu },
};
