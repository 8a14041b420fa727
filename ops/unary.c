/* ops/unary.c — one-input elementwise operators: Sqrt, Exp, Log, Neg, Abs,
 * Reciprocal, Relu, LeakyRelu, Sigmoid, Tanh, Gelu, Erf, Clip and Not.
 * Output has the input's shape and dtype. Across opsets 6..25 these ops only
 * widened their type lists (Relu-14 added signed integers, Clip-12 all
 * numeric types) except Clip, whose bounds are attributes before opset 11 and
 * optional scalar inputs from 11 on. float and double are computed in their
 * own precision through <tgmath.h>.
 *
 * Gradients: one dtrexec-domain kernel per op (ReluGrad, SigmoidGrad, ...,
 * ClipGrad) over (dy, Y) where Y gives the derivative, else (dy, X); Exp,
 * Log and Neg reuse Mul, Div and Neg. Not has none. */
/* Lets GCC if-convert the clamps in ew_expf and vectorise the loops around
 * it: with trapping math on, speculating an FP op that "might trap" is not
 * allowed. We never unmask FP exceptions, so results are unchanged. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <float.h>
#include <string.h>
#include <tgmath.h>

#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

#define FLOATS_LIST "float, double"
#define SIGNED_LIST "float, double, int8, int16, int32, int64"
#define NUMERIC_LIST "float, double, int8, int16, int32, int64, uint8, uint16, uint32, uint64"

/* ---- inner loops -------------------------------------------------------- */

#define T_(D) EW_T_##D
#define SQRT_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), sqrt(x))
#define EXP_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), EW_EXP_##D(x))
#define LOG_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), log(x))
#define TANH_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), tanh(x))
#define ERF_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), erf(x))
#define RECIP_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), (T_(D))1 / x)
/* For very negative x, exp(-x) overflows to inf and the result is 0, as it
 * should be; there is no cancellation anywhere in this form. */
#define SIGMOID_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D),                       \
                                          (T_(D))1 / ((T_(D))1 + EW_EXP_##D(-x)))
#define NEGF_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), -x)
#define NEGI_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), (T_(D))(0 - (EW_W_##D)x))
#define ABSF_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), fabs(x))
#define ABSS_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), \
                                       x < 0 ? (T_(D))(0 - (EW_W_##D)x) : x)
#define ABSU_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), x)
/* x < 0 ? 0 : x keeps NaN, like numpy.maximum(x, 0). */
#define RELU_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), x < 0 ? (T_(D))0 : x)
#define LEAKY_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), \
                                        x < 0 ? (T_(D)) * (const float *)ctx * x : x)
/* 0.5 * (1 + erf(z)) is written 0.5 * erfc(-z) and 0.5 * (1 + tanh(u)) as
 * 1 / (1 + exp(-2u)): the same values without the cancellation that loses
 * most float digits for negative x. */
#define GELU_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D),                          \
                                       (T_(D))0.5 * x *                                 \
                                           erfc(-x * (T_(D))0.70710678118654752440))
#define GELU_TANH_DEF(op, D)                                                            \
    EW_UNARY_INNER(op##_##D, T_(D), T_(D),                                              \
                   x / ((T_(D))1 + EW_EXP_##D((T_(D))-1.59576912160573071176 *          \
                                       (x + (T_(D))0.044715 * x * x * x))))
/* min(max(x, lo), hi) as numpy.clip: hi wins when lo > hi, NaN stays NaN. */
#define CLIP_DEF(op, D)                                                                 \
    EW_UNARY_INNER(op##_##D, T_(D), T_(D),                                              \
                   (x < ((const T_(D) *)ctx)[0] ? ((const T_(D) *)ctx)[0] : x) >        \
                           ((const T_(D) *)ctx)[1]                                      \
                       ? ((const T_(D) *)ctx)[1]                                        \
                       : (x < ((const T_(D) *)ctx)[0] ? ((const T_(D) *)ctx)[0] : x))

EW_FLOAT_TYPES(SQRT_DEF, sqrt)
EW_FLOAT_TYPES(EXP_DEF, exp)
EW_FLOAT_TYPES(LOG_DEF, log)
EW_FLOAT_TYPES(TANH_DEF, tanh)
EW_FLOAT_TYPES(ERF_DEF, erf)
EW_FLOAT_TYPES(RECIP_DEF, recip)
EW_FLOAT_TYPES(SIGMOID_DEF, sigmoid)
EW_FLOAT_TYPES(NEGF_DEF, neg)
EW_SINT_TYPES(NEGI_DEF, neg)
EW_FLOAT_TYPES(ABSF_DEF, abs)
EW_SINT_TYPES(ABSS_DEF, abs)
EW_UINT_TYPES(ABSU_DEF, abs)
EW_SIGNED_TYPES(RELU_DEF, relu)
EW_FLOAT_TYPES(LEAKY_DEF, leaky)
EW_FLOAT_TYPES(GELU_DEF, gelu)
EW_FLOAT_TYPES(GELU_TANH_DEF, gelu_tanh)
EW_NUMERIC_TYPES(CLIP_DEF, clip)
EW_UNARY_INNER(not_BOOL, uint8_t, uint8_t, (uint8_t)(x == 0))

static const ew_inner_fn sqrt_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, sqrt) };
static const ew_inner_fn exp_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, exp) };
static const ew_inner_fn log_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, log) };
static const ew_inner_fn tanh_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, tanh) };
static const ew_inner_fn erf_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, erf) };
static const ew_inner_fn recip_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, recip) };
static const ew_inner_fn sigmoid_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, sigmoid) };
static const ew_inner_fn neg_fns[EW_DTYPE_COUNT] = { EW_SIGNED_TYPES(EW_ENTRY, neg) };
static const ew_inner_fn abs_fns[EW_DTYPE_COUNT] = { EW_NUMERIC_TYPES(EW_ENTRY, abs) };
static const ew_inner_fn relu_fns[EW_DTYPE_COUNT] = { EW_SIGNED_TYPES(EW_ENTRY, relu) };
static const ew_inner_fn leaky_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, leaky) };
static const ew_inner_fn gelu_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, gelu) };
static const ew_inner_fn gelu_tanh_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, gelu_tanh) };
static const ew_inner_fn clip_fns[EW_DTYPE_COUNT] = { EW_NUMERIC_TYPES(EW_ENTRY, clip) };
static const ew_inner_fn not_fns[EW_DTYPE_COUNT] = { [ONNX_DTYPE_BOOL] = not_BOOL };

/* ---- shared infer / kernel ---------------------------------------------- */

static int unary_infer(struct op_call *c, const ew_inner_fn *table, const char *supported)
{
    const struct tensor *x = c->in[0];
    if (!EW_LOOKUP(table, x->dtype))
        return ew_dtype_error(c, "input 0", x->dtype, supported);
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = x->rank;
    memcpy(y->dims, x->dims, sizeof y->dims);
    return 0;
}

static int unary_run(struct op_call *c, const ew_inner_fn *table, const char *supported,
                     const void *ctx)
{
    ew_inner_fn fn = EW_LOOKUP(table, c->in[0]->dtype);
    if (!fn)
        return ew_dtype_error(c, "input 0", c->in[0]->dtype, supported);
    ew_apply(c->out[0], c->in, 1, fn, ctx);
    return 0;
}

/* Gradient emitters, defined with the gradient kernels at the end. */
static int sqrt_grad(struct grad_ctx *g);
static int exp_grad(struct grad_ctx *g);
static int log_grad(struct grad_ctx *g);
static int tanh_grad(struct grad_ctx *g);
static int erf_grad(struct grad_ctx *g);
static int reciprocal_grad(struct grad_ctx *g);
static int sigmoid_grad(struct grad_ctx *g);
static int neg_grad(struct grad_ctx *g);
static int abs_grad(struct grad_ctx *g);
static int relu_grad(struct grad_ctx *g);
static int leaky_relu_grad(struct grad_ctx *g);
static int gelu_grad(struct grad_ctx *g);
static int clip_grad(struct grad_ctx *g);

/* saves_in / saves_out: what the gradient emitter reads (input X, output Y). */
#define UNARY_DEF(sym, opname, table, supported, flops, grad_fn, saves_in, saves_out, ...) \
    static int sym##_infer(struct op_call *c) { return unary_infer(c, table, supported); } \
    static int sym##_cpu(struct op_call *c) { return unary_run(c, table, supported, NULL); } \
    static struct op_cost sym##_cost(const struct op_call *c) { return ew_cost_scaled(c, flops); } \
    const struct op_def sym = {                                                         \
        .domain = "", .name = opname, .since = { __VA_ARGS__ },                         \
        .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,                           \
        .infer = sym##_infer, .cost = sym##_cost,                                       \
        .kernel = { [BACKEND_CPU] = sym##_cpu },                                        \
        .grad = grad_fn, .grad_saves_in = saves_in, .grad_saves_out = saves_out,        \
        .in_place = 1,                                                                  \
    };

/* Flop weights: a transcendental counts as a handful of arithmetic ops. */
UNARY_DEF(op_sqrt, "Sqrt", sqrt_fns, FLOATS_LIST, 4, sqrt_grad, 0, 1, 6, 13)
UNARY_DEF(op_exp, "Exp", exp_fns, FLOATS_LIST, 8, exp_grad, 0, 1, 6, 13)
UNARY_DEF(op_log, "Log", log_fns, FLOATS_LIST, 8, log_grad, 1, 0, 6, 13)
UNARY_DEF(op_tanh, "Tanh", tanh_fns, FLOATS_LIST, 10, tanh_grad, 0, 1, 6, 13)
UNARY_DEF(op_erf, "Erf", erf_fns, FLOATS_LIST, 10, erf_grad, 1, 0, 9, 13)
UNARY_DEF(op_reciprocal, "Reciprocal", recip_fns, FLOATS_LIST, 1, reciprocal_grad, 0, 1, 6, 13)
UNARY_DEF(op_sigmoid, "Sigmoid", sigmoid_fns, FLOATS_LIST, 10, sigmoid_grad, 0, 1, 6, 13)
UNARY_DEF(op_neg, "Neg", neg_fns, SIGNED_LIST, 1, neg_grad, 0, 0, 6, 13)
UNARY_DEF(op_abs, "Abs", abs_fns, NUMERIC_LIST, 1, abs_grad, 1, 0, 6, 13)
UNARY_DEF(op_relu, "Relu", relu_fns, SIGNED_LIST, 1, relu_grad, 0, 1, 6, 13, 14)
UNARY_DEF(op_not, "Not", not_fns, "bool", 1, NULL, 0, 0, 1)

/* ---- LeakyRelu ---------------------------------------------------------- */

static int leaky_relu_parse(const struct onnx_node *node, int version, void **params, char *err,
                            size_t err_size)
{
    struct leaky_relu_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->alpha = onnx_node_attr_float(node, "alpha", 0.01f);
    return 0;
}

static int leaky_relu_infer(struct op_call *c) { return unary_infer(c, leaky_fns, FLOATS_LIST); }

static int leaky_relu_cpu(struct op_call *c)
{
    const struct leaky_relu_params *p = c->params;
    return unary_run(c, leaky_fns, FLOATS_LIST, &p->alpha);
}

const struct op_def op_leaky_relu = {
    .domain = "", .name = "LeakyRelu", .since = { 6, 16 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = leaky_relu_parse, .infer = leaky_relu_infer, .cost = cost_elementwise,
    .kernel = { [BACKEND_CPU] = leaky_relu_cpu },
    .grad = leaky_relu_grad, .grad_saves_in = 1u,
};

/* ---- Gelu --------------------------------------------------------------- */

static int gelu_parse(const struct onnx_node *node, int version, void **params, char *err,
                      size_t err_size)
{
    const char *mode = onnx_node_attr_string(node, "approximate", "none");
    if (strcmp(mode, "none") && strcmp(mode, "tanh"))
        return ew_parse_error(err, err_size, "approximate='%s' (expected 'none' or 'tanh')", mode);
    struct gelu_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->tanh_approx = !strcmp(mode, "tanh");
    return 0;
}

static const ew_inner_fn *gelu_table(const struct op_call *c)
{
    const struct gelu_params *p = c->params;
    return p && p->tanh_approx ? gelu_tanh_fns : gelu_fns;
}

static int gelu_infer(struct op_call *c) { return unary_infer(c, gelu_table(c), FLOATS_LIST); }
static int gelu_cpu(struct op_call *c) { return unary_run(c, gelu_table(c), FLOATS_LIST, NULL); }
static struct op_cost gelu_cost(const struct op_call *c) { return ew_cost_scaled(c, 14); }

const struct op_def op_gelu = {
    .domain = "", .name = "Gelu", .since = { 20 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = gelu_parse, .infer = gelu_infer, .cost = gelu_cost,
    .kernel = { [BACKEND_CPU] = gelu_cpu },
    .grad = gelu_grad, .grad_saves_in = 1u,
};

/* ---- Clip --------------------------------------------------------------- */

static int clip_parse(const struct onnx_node *node, int version, void **params, char *err,
                      size_t err_size)
{
    struct clip_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->from_inputs = version >= 11;
    p->min = onnx_node_attr_float(node, "min", -FLT_MAX);
    p->max = onnx_node_attr_float(node, "max", FLT_MAX);
    return 0;
}

static int clip_infer(struct op_call *c)
{
    const struct clip_params *p = c->params;
    const struct tensor *x = c->in[0];
    if (p && !p->from_inputs && c->n_in > 1)
        return op_error(c, "Clip before opset 11 takes one input, got %d", c->n_in);
    for (int i = 1; i < c->n_in && i < 3; i++) {
        const struct tensor *b = c->in[i];
        if (!b)
            continue;
        if (b->dtype != x->dtype)
            return op_error(c, "input %d (%s) has dtype %s, expected %s like input 0", i,
                            i == 1 ? "min" : "max", onnx_dtype_name(b->dtype),
                            onnx_dtype_name(x->dtype));
        if (tensor_numel(b) != 1)
            return op_error(c, "input %d (%s) must be a scalar, has %lld elements", i,
                            i == 1 ? "min" : "max", (long long)tensor_numel(b));
    }
    return unary_infer(c, clip_fns, NUMERIC_LIST);
}

/* Writes the two bounds as elements of x's dtype into lim. */
#define CLIP_BOUNDS(unused, D)                                                          \
    case ONNX_DTYPE_##D: {                                                              \
        T_(D) *l = (T_(D) *)lim;                                                        \
        if (p && !p->from_inputs) {                                                     \
            l[0] = EW_ST_##D((double)p->min);                                           \
            l[1] = EW_ST_##D((double)p->max);                                           \
        } else {                                                                        \
            l[0] = lo ? *(const T_(D) *)lo->data : EW_LOWEST_##D;                       \
            l[1] = hi ? *(const T_(D) *)hi->data : EW_HIGHEST_##D;                      \
        }                                                                               \
        break;                                                                          \
    }

static int clip_cpu(struct op_call *c)
{
    const struct clip_params *p = c->params;
    const struct tensor *lo = c->n_in > 1 ? c->in[1] : NULL;
    const struct tensor *hi = c->n_in > 2 ? c->in[2] : NULL;
    uint64_t lim[2];               /* room for two elements of any dtype, aligned */
    switch (c->in[0]->dtype) {
        EW_NUMERIC_TYPES(CLIP_BOUNDS, _)
    default:
        return ew_dtype_error(c, "input 0", c->in[0]->dtype, NUMERIC_LIST);
    }
    return unary_run(c, clip_fns, NUMERIC_LIST, lim);
}

const struct op_def op_clip = {
    .domain = "", .name = "Clip", .since = { 6, 11, 12, 13 },
    .min_in = 1, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = clip_parse, .infer = clip_infer, .cost = cost_elementwise,
    .kernel = { [BACKEND_CPU] = clip_cpu },
    .grad = clip_grad, .grad_saves_in = 7u,
};

/* ---- gradients ------------------------------------------------------------
 * Gradient kernels live in the "dtrexec" domain and take (dy, z), where z is
 * the one forward tensor the derivative needs: the output Y where it gives
 * the derivative directly (Relu, Sigmoid, Tanh, Sqrt, Reciprocal), else the
 * input X. Same shapes, same dtype; each is one vectorisable pass through
 * the same walker as the forward ops. x below is dy, y is z. */

#define RELU_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), \
                                             y > 0 ? x : (T_(D))0)
#define LEAKY_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D),           \
                                              y < 0 ? (T_(D)) * (const float *)ctx * x : x)
#define SIGMOID_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), \
                                                x * y * ((T_(D))1 - y))
#define TANH_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), \
                                             x * ((T_(D))1 - y * y))
#define SQRT_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), \
                                             (T_(D))0.5 * x / y)
#define RECIP_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), -x * y * y)
/* 0 at the kink, like sign(x) * dy. */
#define ABS_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), \
                                            y > 0 ? x : y < 0 ? -x : (T_(D))0)
/* d erf(x) / dx = 2 / sqrt(pi) * exp(-x^2) */
#define ERF_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D),             \
                                            x * (T_(D))1.12837916709551257390 *         \
                                                EW_EXP_##D(-y * y))
/* d/dx x Phi(x) = Phi(x) + x phi(x) */
#define GELU_GRAD_DEF(op, D)                                                            \
    EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D),                                      \
                    x * ((T_(D))0.5 * erfc(-y * (T_(D))0.70710678118654752440) +        \
                         y * (T_(D))0.39894228040143267794 *                             \
                             EW_EXP_##D((T_(D))-0.5 * y * y)))
/* With s = 0.5 (1 + tanh u) = 1 / (1 + exp(-2u)), u = k (x + a x^3):
 * d/dx 0.5 x (1 + tanh u) = s + 2 x s (1 - s) k (1 + 3 a x^2); written with s
 * (as the forward is) to avoid the cancellation of 1 + tanh u. */
#define GELU_TANH_DERIV(D)                                                              \
    static inline T_(D) gelu_tanh_deriv_##D(T_(D) x)                                    \
    {                                                                                   \
        T_(D) s = (T_(D))1 / ((T_(D))1 + EW_EXP_##D((T_(D))-1.59576912160573071176 *    \
                                                    (x + (T_(D))0.044715 * x * x * x))); \
        return s + (T_(D))2 * x * s * ((T_(D))1 - s) * (T_(D))0.79788456080286535588 *  \
                       ((T_(D))1 + (T_(D))0.134145 * x * x);                            \
    }
GELU_TANH_DERIV(FLOAT)
GELU_TANH_DERIV(DOUBLE)
#define GELU_TANH_GRAD_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), \
                                                  x * gelu_tanh_deriv_##D(y))
/* Pass-through where lo <= x <= hi (NaN and clipped elements get 0). */
#define CLIP_GRAD_DEF(op, D)                                                            \
    EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D),                                      \
                    (y >= ((const T_(D) *)ctx)[0] && y <= ((const T_(D) *)ctx)[1])      \
                        ? x : (T_(D))0)

EW_FLOAT_TYPES(RELU_GRAD_DEF, relu_grad)
EW_FLOAT_TYPES(LEAKY_GRAD_DEF, leaky_grad)
EW_FLOAT_TYPES(SIGMOID_GRAD_DEF, sigmoid_grad)
EW_FLOAT_TYPES(TANH_GRAD_DEF, tanh_grad)
EW_FLOAT_TYPES(SQRT_GRAD_DEF, sqrt_grad)
EW_FLOAT_TYPES(RECIP_GRAD_DEF, recip_grad)
EW_FLOAT_TYPES(ABS_GRAD_DEF, abs_grad)
EW_FLOAT_TYPES(ERF_GRAD_DEF, erf_grad)
EW_FLOAT_TYPES(GELU_GRAD_DEF, gelu_grad)
EW_FLOAT_TYPES(GELU_TANH_GRAD_DEF, gelu_tanh_grad)
EW_FLOAT_TYPES(CLIP_GRAD_DEF, clip_grad)

static const ew_inner_fn relu_grad_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, relu_grad) };
static const ew_inner_fn leaky_grad_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, leaky_grad) };
static const ew_inner_fn sigmoid_grad_fns[EW_DTYPE_COUNT] = {
    EW_FLOAT_TYPES(EW_ENTRY, sigmoid_grad)
};
static const ew_inner_fn tanh_grad_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, tanh_grad) };
static const ew_inner_fn sqrt_grad_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, sqrt_grad) };
static const ew_inner_fn recip_grad_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, recip_grad) };
static const ew_inner_fn abs_grad_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, abs_grad) };
static const ew_inner_fn erf_grad_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, erf_grad) };
static const ew_inner_fn gelu_grad_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, gelu_grad) };
static const ew_inner_fn gelu_tanh_grad_fns[EW_DTYPE_COUNT] = {
    EW_FLOAT_TYPES(EW_ENTRY, gelu_tanh_grad)
};
static const ew_inner_fn clip_grad_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, clip_grad) };

/* dy and z: same dtype (float or double) and same shape; dx is like them. */
static int ugrad_infer(struct op_call *c, const ew_inner_fn *table)
{
    const struct tensor *dy = c->in[0], *z = c->in[1];
    if (z->dtype != dy->dtype)
        return op_error(c, "input 1 has dtype %s but dy has %s; they must match",
                        onnx_dtype_name(z->dtype), onnx_dtype_name(dy->dtype));
    if (!tensor_same_shape(dy, z)) {
        char a[128], b[128];
        return op_error(c, "dy %s and input 1 %s must have the same shape",
                        tensor_describe(dy, a, sizeof a), tensor_describe(z, b, sizeof b));
    }
    return unary_infer(c, table, FLOATS_LIST);
}

static int ugrad_run(struct op_call *c, const ew_inner_fn *table, const void *ctx)
{
    ew_inner_fn fn = EW_LOOKUP(table, c->in[0]->dtype);
    if (!fn)
        return ew_dtype_error(c, "dy", c->in[0]->dtype, FLOATS_LIST);
    ew_apply(c->out[0], c->in, 2, fn, ctx);
    return 0;
}

/* Emits kernel(dy, z) and hands the result to input 0. */
static int ugrad_emit(struct grad_ctx *g, const char *kernel, const struct onnx_attr *attrs,
                      int n_attrs, int z)
{
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    int dx, in[2] = { g->dy[0], z };
    if (g->emit_last(g, kernel, attrs, n_attrs, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

#define UGRAD_KERNEL_DEF(sym, opname, table, flops, parse_fn, ctx_expr)                 \
    static int sym##_infer(struct op_call *c) { return ugrad_infer(c, table); }         \
    static int sym##_cpu(struct op_call *c) { return ugrad_run(c, table, ctx_expr); }   \
    static struct op_cost sym##_cost(const struct op_call *c) { return ew_cost_scaled(c, flops); } \
    const struct op_def sym = {                                                         \
        .domain = "dtrexec", .name = opname, .since = { 1 },                            \
        .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,                           \
        .parse = parse_fn, .infer = sym##_infer, .cost = sym##_cost,                    \
        .kernel = { [BACKEND_CPU] = sym##_cpu }, .in_place = 1,                         \
    };

UGRAD_KERNEL_DEF(op_relu_grad, "ReluGrad", relu_grad_fns, 1, NULL, NULL)
UGRAD_KERNEL_DEF(op_sigmoid_grad, "SigmoidGrad", sigmoid_grad_fns, 3, NULL, NULL)
UGRAD_KERNEL_DEF(op_tanh_grad, "TanhGrad", tanh_grad_fns, 3, NULL, NULL)
UGRAD_KERNEL_DEF(op_sqrt_grad, "SqrtGrad", sqrt_grad_fns, 2, NULL, NULL)
UGRAD_KERNEL_DEF(op_reciprocal_grad, "ReciprocalGrad", recip_grad_fns, 3, NULL, NULL)
UGRAD_KERNEL_DEF(op_abs_grad, "AbsGrad", abs_grad_fns, 1, NULL, NULL)
UGRAD_KERNEL_DEF(op_erf_grad, "ErfGrad", erf_grad_fns, 10, NULL, NULL)
UGRAD_KERNEL_DEF(op_leaky_relu_grad, "LeakyReluGrad", leaky_grad_fns, 2, leaky_relu_parse,
                 &((const struct leaky_relu_params *)c->params)->alpha)

/* GeluGrad takes Gelu's `approximate` attribute (none or tanh). */
static int gelu_grad_infer(struct op_call *c)
{
    const struct gelu_params *p = c->params;
    return ugrad_infer(c, p && p->tanh_approx ? gelu_tanh_grad_fns : gelu_grad_fns);
}

static int gelu_grad_cpu(struct op_call *c)
{
    const struct gelu_params *p = c->params;
    return ugrad_run(c, p && p->tanh_approx ? gelu_tanh_grad_fns : gelu_grad_fns, NULL);
}

static struct op_cost gelu_grad_cost(const struct op_call *c) { return ew_cost_scaled(c, 24); }

const struct op_def op_gelu_grad = {
    .domain = "dtrexec", .name = "GeluGrad", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = gelu_parse, .infer = gelu_grad_infer, .cost = gelu_grad_cost,
    .kernel = { [BACKEND_CPU] = gelu_grad_cpu }, .in_place = 1,
};

/* ClipGrad(dy, X, min?, max?): the bounds are optional scalar inputs, as in
 * Clip-11; absent ones are unbounded. */
static int clip_grad_infer(struct op_call *c)
{
    for (int i = 2; i < c->n_in; i++)
        if (c->in[i] && (c->in[i]->dtype != c->in[0]->dtype || tensor_numel(c->in[i]) != 1))
            return op_error(c, "input %d (%s) must be a scalar of dy's dtype %s", i,
                            i == 2 ? "min" : "max", onnx_dtype_name(c->in[0]->dtype));
    return ugrad_infer(c, clip_grad_fns);
}

static int clip_grad_cpu(struct op_call *c)
{
    const struct clip_params *p = NULL;  /* bounds from the inputs (CLIP_BOUNDS) */
    const struct tensor *lo = c->n_in > 2 ? c->in[2] : NULL;
    const struct tensor *hi = c->n_in > 3 ? c->in[3] : NULL;
    uint64_t lim[2];
    switch (c->in[0]->dtype) {
        EW_FLOAT_TYPES(CLIP_BOUNDS, _)
    default:
        return ew_dtype_error(c, "dy", c->in[0]->dtype, FLOATS_LIST);
    }
    const struct tensor *pair[2] = { c->in[0], c->in[1] };
    ew_apply(c->out[0], pair, 2, clip_grad_fns[c->in[0]->dtype], lim);
    return 0;
}

const struct op_def op_clip_grad = {
    .domain = "dtrexec", .name = "ClipGrad", .since = { 1 },
    .min_in = 2, .max_in = 4, .min_out = 1, .max_out = 1,
    .infer = clip_grad_infer, .cost = cost_elementwise,
    .kernel = { [BACKEND_CPU] = clip_grad_cpu },
};

/* ---- emitters ------------------------------------------------------------ */

static int relu_grad(struct grad_ctx *g) { return ugrad_emit(g, "ReluGrad", NULL, 0, g->out[0]); }
static int sigmoid_grad(struct grad_ctx *g)
{
    return ugrad_emit(g, "SigmoidGrad", NULL, 0, g->out[0]);
}
static int tanh_grad(struct grad_ctx *g) { return ugrad_emit(g, "TanhGrad", NULL, 0, g->out[0]); }
static int sqrt_grad(struct grad_ctx *g) { return ugrad_emit(g, "SqrtGrad", NULL, 0, g->out[0]); }
static int reciprocal_grad(struct grad_ctx *g)
{
    return ugrad_emit(g, "ReciprocalGrad", NULL, 0, g->out[0]);
}
static int abs_grad(struct grad_ctx *g) { return ugrad_emit(g, "AbsGrad", NULL, 0, g->in[0]); }
static int erf_grad(struct grad_ctx *g) { return ugrad_emit(g, "ErfGrad", NULL, 0, g->in[0]); }
/* exp' = exp: dy * Y */
static int exp_grad(struct grad_ctx *g) { return ugrad_emit(g, "Mul", NULL, 0, g->out[0]); }
/* log' = 1 / x: dy / X */
static int log_grad(struct grad_ctx *g) { return ugrad_emit(g, "Div", NULL, 0, g->in[0]); }

static int neg_grad(struct grad_ctx *g)
{
    int dx;
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    if (g->emit(g, "Neg", NULL, 0, 1, &g->dy[0], 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

static int leaky_relu_grad(struct grad_ctx *g)
{
    const struct leaky_relu_params *p = g->fwd->params;
    struct onnx_attr a = { .name = "alpha", .type = ONNX_ATTR_FLOAT, .f = p->alpha };
    return ugrad_emit(g, "LeakyReluGrad", &a, 1, g->in[0]);
}

static int gelu_grad(struct grad_ctx *g)
{
    const struct gelu_params *p = g->fwd->params;
    struct onnx_attr a = { .name = "approximate", .type = ONNX_ATTR_STRING,
                           .s = (char *)(p && p->tanh_approx ? "tanh" : "none") };
    a.s_len = strlen(a.s);
    return ugrad_emit(g, "GeluGrad", &a, 1, g->in[0]);
}

/* The bounds are not differentiated. Before opset 11 they are attributes and
 * become scalar constants here. */
static int clip_grad(struct grad_ctx *g)
{
    const struct clip_params *p = g->fwd->params;
    const struct tensor *x = g->fwd->in[0];
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    int in[4] = { g->dy[0], g->in[0], -1, -1 };
    if (p && !p->from_inputs) {
        float f[2] = { p->min, p->max };
        double d[2] = { p->min, p->max };
        for (int k = 0; k < 2; k++) {
            struct tensor s = { .dtype = x->dtype, .rank = 0,
                                .data = x->dtype == ONNX_DTYPE_DOUBLE ? (void *)&d[k]
                                                                      : (void *)&f[k] };
            if ((in[2 + k] = g->constant(g, &s)) < 0)
                return -1;
        }
    } else {
        for (int k = 1; k < 3 && k < g->fwd->n_in; k++)
            in[1 + k] = g->in[k];
    }
    int dx;
    if (g->emit(g, "ClipGrad", NULL, 0, 4, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}
