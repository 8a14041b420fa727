/* ops/unary.c — one-input elementwise operators: Sqrt, Exp, Log, Neg, Abs,
 * Reciprocal, Relu, LeakyRelu, Sigmoid, Tanh, Gelu, Erf, Clip and Not.
 * Output has the input's shape and dtype. Across opsets 6..25 these ops only
 * widened their type lists (Relu-14 added signed integers, Clip-12 all
 * numeric types) except Clip, whose bounds are attributes before opset 11 and
 * optional scalar inputs from 11 on. float and double are computed in their
 * own precision through <tgmath.h>. */
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

#define UNARY_DEF(sym, opname, table, supported, flops, ...)                            \
    static int sym##_infer(struct op_call *c) { return unary_infer(c, table, supported); } \
    static int sym##_cpu(struct op_call *c) { return unary_run(c, table, supported, NULL); } \
    static struct op_cost sym##_cost(const struct op_call *c) { return ew_cost_scaled(c, flops); } \
    const struct op_def sym = {                                                         \
        .domain = "", .name = opname, .since = { __VA_ARGS__ },                         \
        .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,                           \
        .infer = sym##_infer, .cost = sym##_cost,                                       \
        .kernel = { [BACKEND_CPU] = sym##_cpu },                                        \
    };

/* Flop weights: a transcendental counts as a handful of arithmetic ops. */
UNARY_DEF(op_sqrt, "Sqrt", sqrt_fns, FLOATS_LIST, 4, 6, 13)
UNARY_DEF(op_exp, "Exp", exp_fns, FLOATS_LIST, 8, 6, 13)
UNARY_DEF(op_log, "Log", log_fns, FLOATS_LIST, 8, 6, 13)
UNARY_DEF(op_tanh, "Tanh", tanh_fns, FLOATS_LIST, 10, 6, 13)
UNARY_DEF(op_erf, "Erf", erf_fns, FLOATS_LIST, 10, 9, 13)
UNARY_DEF(op_reciprocal, "Reciprocal", recip_fns, FLOATS_LIST, 1, 6, 13)
UNARY_DEF(op_sigmoid, "Sigmoid", sigmoid_fns, FLOATS_LIST, 10, 6, 13)
UNARY_DEF(op_neg, "Neg", neg_fns, SIGNED_LIST, 1, 6, 13)
UNARY_DEF(op_abs, "Abs", abs_fns, NUMERIC_LIST, 1, 6, 13)
UNARY_DEF(op_relu, "Relu", relu_fns, SIGNED_LIST, 1, 6, 13, 14)
UNARY_DEF(op_not, "Not", not_fns, "bool", 1, 1)

/* ---- LeakyRelu ---------------------------------------------------------- */

struct leaky_relu_params {
    float alpha;
};

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
};

/* ---- Gelu --------------------------------------------------------------- */

struct gelu_params {
    int tanh_approx;               /* approximate="tanh" */
};

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
};

/* ---- Clip --------------------------------------------------------------- */

struct clip_params {
    int from_inputs;               /* opset >= 11: bounds are inputs 1 and 2 */
    float min, max;                /* opset < 11: the attributes */
};

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
};
