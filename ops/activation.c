/* ops/activation.c — the activations beside Relu and Gelu (ops/unary.c):
 * HardSigmoid (opsets 1, 6, 22; alpha, beta), HardSwish (14, 22), Softplus
 * (1, 22), Elu (1, 6, 22; alpha), Selu (1, 6, 22; alpha, gamma), Celu
 * (12, 28; alpha), Mish (18, 22), Swish (24; alpha), SwiGLU (28; alpha:
 * Y = Swish_alpha(A) * B over two inputs of one shape, no broadcasting), and
 * PRelu (1, 6, 7, 9, 16) whose slope broadcasts into X (numpy-style,
 * unidirectionally; a one-element slope in every version). The versions only widened the type
 * lists; opset 1's consumed_inputs is a legacy hint and is ignored. Types:
 * float, double, float16, bfloat16 (the 16-bit ones computed in float), and
 * for PRelu also int32, int64, uint32, uint64.
 *
 * Gradients follow PyTorch's derivative formulas, kinks included: one
 * dtrexec-domain kernel per op over (dy, X) — HardSigmoidGrad (alpha where
 * 0 < alpha x + beta < 1, else 0), HardSwishGrad (0 below -3, x/3 + 1/2 on
 * [-3, 3], 1 above), SoftplusGrad (sigmoid x), EluGrad, SeluGrad, CeluGrad
 * (the exponential branch for x <= 0), MishGrad, SwishGrad — SwiGLU's
 * made of those (dA = SwishGrad(dy * B, A), dB = dy * Swish(A)), and
 * PReluGrad(dy, X, slope) with wrt = 0 (dy where x > 0, else slope dy) or
 * 1 (x dy where x <= 0, else 0), summed back to the slope's shape. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <string.h>
#include <tgmath.h>

#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

#define REAL_LIST "float, double, float16, bfloat16"
#define PRELU_LIST REAL_LIST ", int32, int64, uint32, uint64"

#define T_(D) EW_T_##D
#define C_(D) EW_C_##D

/* ---- scalar formulas ------------------------------------------------------
 * Each is written once over its compute type C, as <name>_f32 and _f64;
 * <name>_s(D) picks the one a dtype computes in. v is x, d is dy. */
#define S_FLOAT f32
#define S_DOUBLE f64
#define S_FLOAT16 f32
#define S_BFLOAT16 f32
#define SCAL3_(name, s) name##_##s
#define SCAL2_(name, s) SCAL3_(name, s)
#define SCAL_(name, D) SCAL2_(name, S_##D)

#define ACT_FWD_SCALAR(name, ...)                                                       \
    static inline float name##_f32(float v, const struct act_params *p)                 \
    {                                                                                   \
        typedef float C;                                                                \
        (void)p;                                                                        \
        (void)sizeof(C);                                                                \
        __VA_ARGS__                                                                     \
    }                                                                                   \
    static inline double name##_f64(double v, const struct act_params *p)               \
    {                                                                                   \
        typedef double C;                                                               \
        (void)p;                                                                        \
        (void)sizeof(C);                                                                \
        __VA_ARGS__                                                                     \
    }
#define ACT_BWD_SCALAR(name, ...)                                                       \
    static inline float name##_f32(float d, float v, const struct act_params *p)        \
    {                                                                                   \
        typedef float C;                                                                \
        (void)p;                                                                        \
        (void)sizeof(C);                                                                \
        __VA_ARGS__                                                                     \
    }                                                                                   \
    static inline double name##_f64(double d, double v, const struct act_params *p)     \
    {                                                                                   \
        typedef double C;                                                               \
        (void)p;                                                                        \
        (void)sizeof(C);                                                                \
        __VA_ARGS__                                                                     \
    }

/* Comparisons keep NaN: every branch below is false for NaN, and the
 * fall-through expression propagates it. */
ACT_FWD_SCALAR(hardsigmoid, C t = (C)p->alpha * v + (C)p->beta;
               return t < 0 ? (C)0 : t > 1 ? (C)1 : t;)
ACT_FWD_SCALAR(hardswish, C t = v * (C)(1.0 / 6.0) + (C)0.5;
               return v * (t < 0 ? (C)0 : t > 1 ? (C)1 : t);)
/* log(1 + e^x) without overflow for large x or loss for very negative x. */
ACT_FWD_SCALAR(softplus, return v > 0 ? v + log1p(exp(-v)) : log1p(exp(v));)
ACT_FWD_SCALAR(elu, return v < 0 ? (C)p->alpha * expm1(v) : v;)
ACT_FWD_SCALAR(selu, return v <= 0 ? (C)p->gamma * ((C)p->alpha * expm1(v)) : (C)p->gamma * v;)
ACT_FWD_SCALAR(celu, return v > 0 ? v : (C)p->alpha * expm1(v / (C)p->alpha);)
ACT_FWD_SCALAR(mish, C sp = v > 0 ? v + log1p(exp(-v)) : log1p(exp(v));
               return v * tanh(sp);)
ACT_FWD_SCALAR(swish, return v / ((C)1 + exp(-(C)p->alpha * v));)

ACT_BWD_SCALAR(hardsigmoid_d, C t = (C)p->alpha * v + (C)p->beta;
               return t > 0 && t < 1 ? (C)p->alpha * d : (C)0;)
ACT_BWD_SCALAR(hardswish_d,
               return v < -3 ? (C)0 : v <= 3 ? d * (v / (C)3 + (C)0.5) : d;)
ACT_BWD_SCALAR(softplus_d, return d / ((C)1 + exp(-v));)
ACT_BWD_SCALAR(elu_d, return v <= 0 ? d * (C)p->alpha * exp(v) : d;)
ACT_BWD_SCALAR(selu_d, return v <= 0 ? d * (C)p->gamma * (C)p->alpha * exp(v) : d * (C)p->gamma;)
ACT_BWD_SCALAR(celu_d, return v <= 0 ? d * exp(v / (C)p->alpha) : d;)
/* d/dx x tanh(sp(x)) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2) */
ACT_BWD_SCALAR(mish_d, C sp = v > 0 ? v + log1p(exp(-v)) : log1p(exp(v));
               C t = tanh(sp);
               C s = (C)1 / ((C)1 + exp(-v));
               return d * (t + v * s * ((C)1 - t * t));)
/* d/dx x s(a x) = s + a x s (1 - s) */
ACT_BWD_SCALAR(swish_d, C a = (C)p->alpha;
               C s = (C)1 / ((C)1 + exp(-a * v));
               return d * (s + a * v * s * ((C)1 - s));)

/* ---- inner loops and tables ------------------------------------------------ */

#define ACT_FWD_DEF(op, D) \
    EW_UNARY_INNER(op##_##D, T_(D), T_(D), EW_ST_##D(SCAL_(op, D)(EW_LD_##D(x), ctx)))
/* x is dy, y is X */
#define ACT_BWD_DEF(op, D)                                                              \
    EW_BINARY_INNER(op##_grad_##D, T_(D), T_(D), T_(D),                                 \
                    EW_ST_##D(SCAL_(op##_d, D)(EW_LD_##D(x), EW_LD_##D(y), ctx)))
#define ACT_GRAD_ENTRY(op, D) [ONNX_DTYPE_##D] = op##_grad_##D,

#define ACT_TABLES(op)                                                                  \
    EW_REAL_TYPES(ACT_FWD_DEF, op)                                                      \
    EW_REAL_TYPES(ACT_BWD_DEF, op)                                                      \
    static const ew_inner_fn op##_fns[EW_DTYPE_COUNT] = { EW_REAL_TYPES(EW_ENTRY, op) }; \
    static const ew_inner_fn op##_grad_fns[EW_DTYPE_COUNT] = {                          \
        EW_REAL_TYPES(ACT_GRAD_ENTRY, op)                                               \
    };

ACT_TABLES(hardsigmoid)
ACT_TABLES(hardswish)
ACT_TABLES(softplus)
ACT_TABLES(elu)
ACT_TABLES(selu)
ACT_TABLES(celu)
ACT_TABLES(mish)
ACT_TABLES(swish)

/* ---- attributes ------------------------------------------------------------ */

static int act_parse_with(const struct onnx_node *node, void **params, char *err,
                          size_t err_size, float alpha, float beta, float gamma)
{
    struct act_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->alpha = onnx_node_attr_float(node, "alpha", alpha);
    p->beta = onnx_node_attr_float(node, "beta", beta);
    p->gamma = onnx_node_attr_float(node, "gamma", gamma);
    return 0;
}

#define ACT_PARSE(op, alpha, beta, gamma)                                               \
    static int op##_parse(const struct onnx_node *node, int version, void **params,     \
                          char *err, size_t err_size)                                   \
    {                                                                                   \
        (void)version;                                                                  \
        return act_parse_with(node, params, err, err_size, alpha, beta, gamma);         \
    }
ACT_PARSE(hardsigmoid, 0.2f, 0.5f, 0.0f)
ACT_PARSE(elu, 1.0f, 0.0f, 0.0f)
ACT_PARSE(selu, 1.67326319217681884765625f, 0.0f, 1.05070102214813232421875f)
ACT_PARSE(swish, 1.0f, 0.0f, 0.0f)

/* Celu divides by alpha. */
static int celu_parse(const struct onnx_node *node, int version, void **params, char *err,
                      size_t err_size)
{
    (void)version;
    float alpha = onnx_node_attr_float(node, "alpha", 1.0f);
    if (alpha == 0 || alpha != alpha)
        return ew_parse_error(err, err_size, "alpha=%g (Celu divides by alpha; it must be "
                              "nonzero)", (double)alpha);
    return act_parse_with(node, params, err, err_size, 1.0f, 0.0f, 0.0f);
}

#define softplus_parse NULL
#define hardswish_parse NULL
#define mish_parse NULL

/* ---- operator definitions ---------------------------------------------------- */

/* The gradient kernel gets the forward's attributes back by value. */
static int act_grad_emit(struct grad_ctx *g, const char *kernel)
{
    const struct act_params *p = g->fwd->params;
    struct onnx_attr a[3] = {
        { .name = "alpha", .type = ONNX_ATTR_FLOAT, .f = p ? p->alpha : 0 },
        { .name = "beta", .type = ONNX_ATTR_FLOAT, .f = p ? p->beta : 0 },
        { .name = "gamma", .type = ONNX_ATTR_FLOAT, .f = p ? p->gamma : 0 },
    };
    return ew_ugrad_emit(g, kernel, a, p ? 3 : 0, g->in[0]);
}

#define ACT_DEF(op, opname, flops, ...)                                                 \
    static int op##_infer(struct op_call *c) { return ew_unary_infer(c, op##_fns, REAL_LIST, 0); } \
    static int op##_cpu(struct op_call *c)                                              \
    {                                                                                   \
        return ew_table_run(c, op##_fns, REAL_LIST, 1, c->params);                      \
    }                                                                                   \
    static struct op_cost op##_cost(const struct op_call *c) { return ew_cost_scaled(c, flops); } \
    static int op##_grad(struct grad_ctx *g) { return act_grad_emit(g, opname "Grad"); } \
    const struct op_def op_##op = {                                                     \
        .domain = "", .name = opname, .since = { __VA_ARGS__ },                         \
        .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,                           \
        .parse = op##_parse, .infer = op##_infer, .cost = op##_cost,                    \
        .kernel = { [BACKEND_CPU] = op##_cpu },                                         \
        .grad = op##_grad, .grad_saves_in = 1u,                                         \
    };                                                                                  \
    static int op##_grad_infer(struct op_call *c)                                       \
    {                                                                                   \
        return ew_ugrad_infer(c, op##_grad_fns, REAL_LIST);                             \
    }                                                                                   \
    static int op##_grad_cpu(struct op_call *c)                                         \
    {                                                                                   \
        return ew_table_run(c, op##_grad_fns, REAL_LIST, 2, c->params);                 \
    }                                                                                   \
    static struct op_cost op##_grad_cost(const struct op_call *c)                       \
    {                                                                                   \
        return ew_cost_scaled(c, (flops) + 2);                                          \
    }                                                                                   \
    const struct op_def op_##op##_grad = {                                              \
        .domain = "dtrexec", .name = opname "Grad", .since = { 1 },                     \
        .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,                           \
        .parse = op##_parse, .infer = op##_grad_infer, .cost = op##_grad_cost,          \
        .kernel = { [BACKEND_CPU] = op##_grad_cpu },                                    \
    };

/* Flop weights: a transcendental counts as a handful of arithmetic ops. */
ACT_DEF(hardsigmoid, "HardSigmoid", 3, 1, 6, 22)
ACT_DEF(hardswish, "HardSwish", 4, 14, 22)
ACT_DEF(softplus, "Softplus", 18, 1, 22)
ACT_DEF(elu, "Elu", 10, 1, 6, 22)
ACT_DEF(selu, "Selu", 11, 1, 6, 22)
ACT_DEF(celu, "Celu", 11, 12, 28)
ACT_DEF(mish, "Mish", 28, 18, 22)
ACT_DEF(swish, "Swish", 11, 24)

/* ---- SwiGLU ------------------------------------------------------------------ */

/* x is A, y is B; the gate is Swish's own formula in the same compute type. */
#define SWIGLU_DEF(op, D)                                                               \
    EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D),                                      \
                    EW_ST_##D(SCAL_(swish, D)(EW_LD_##D(x), ctx) * EW_LD_##D(y)))
EW_REAL_TYPES(SWIGLU_DEF, swiglu)
static const ew_inner_fn swiglu_fns[EW_DTYPE_COUNT] = { EW_REAL_TYPES(EW_ENTRY, swiglu) };

ACT_PARSE(swiglu, 1.0f, 0.0f, 0.0f)

/* The schema forbids broadcasting: A and B must agree in dtype and shape. */
static int swiglu_infer(struct op_call *c)
{
    const struct tensor *a = c->in[0], *b = c->in[1];
    if (!EW_LOOKUP(swiglu_fns, a->dtype))
        return ew_dtype_error(c, "A", a->dtype, REAL_LIST);
    if (b->dtype != a->dtype)
        return op_error(c, "B has dtype %s but A has %s; they must match",
                        onnx_dtype_name(b->dtype), onnx_dtype_name(a->dtype));
    if (!tensor_same_shape(a, b)) {
        char x[128], y[128];
        return op_error(c, "A %s and B %s must have the same shape (SwiGLU does not "
                        "broadcast)", tensor_describe(a, x, sizeof x),
                        tensor_describe(b, y, sizeof y));
    }
    return ew_unary_infer(c, swiglu_fns, REAL_LIST, 0);
}

static int swiglu_cpu(struct op_call *c)
{
    return ew_table_run(c, swiglu_fns, REAL_LIST, 2, c->params);
}

static struct op_cost swiglu_cost(const struct op_call *c) { return ew_cost_scaled(c, 12); }

/* dA = SwishGrad(dy * B, A) and dB = dy * Swish(A), all with the forward's
 * alpha: existing kernels of every backend, nothing SwiGLU-specific. */
static int swiglu_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    const struct act_params *p = g->fwd->params;
    struct onnx_attr alpha = { .name = "alpha", .type = ONNX_ATTR_FLOAT,
                               .f = p ? p->alpha : 1.0f };
    if (g->need_dx[0]) {
        int dyb, da, in[2] = { g->dy[0], g->in[1] };
        if (g->emit(g, "Mul", NULL, 0, 2, in, 1, &dyb))
            return -1;
        int gin[2] = { dyb, g->in[0] };
        if (g->emit(g, "SwishGrad", &alpha, 1, 2, gin, 1, &da) || g->add_dx(g, 0, da))
            return -1;
    }
    if (g->need_dx[1]) {
        int gate, db;
        if (g->emit(g, "Swish", &alpha, 1, 1, &g->in[0], 1, &gate))
            return -1;
        int in[2] = { g->dy[0], gate };
        if (g->emit(g, "Mul", NULL, 0, 2, in, 1, &db) || g->add_dx(g, 1, db))
            return -1;
    }
    return 0;
}

const struct op_def op_swiglu = {
    .domain = "", .name = "SwiGLU", .since = { 28 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = swiglu_parse, .infer = swiglu_infer, .cost = swiglu_cost,
    .kernel = { [BACKEND_CPU] = swiglu_cpu },
    .grad = swiglu_grad, .grad_saves_in = 3u,
};

/* ---- PRelu ------------------------------------------------------------------- */

#define PRELU_REAL_DEF(op, D)                                                           \
    static inline C_(D) op##_v_##D(C_(D) v, C_(D) s) { return v < 0 ? s * v : v; }     \
    EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D),                                      \
                    EW_ST_##D(op##_v_##D(EW_LD_##D(x), EW_LD_##D(y))))
#define PRELU_SINT_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D),            \
                                              x < 0 ? (T_(D))((EW_W_##D)y * (EW_W_##D)x) : x)
#define PRELU_UINT_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), ((void)y, x))
EW_REAL_TYPES(PRELU_REAL_DEF, prelu)
PRELU_SINT_DEF(prelu, INT32)
PRELU_SINT_DEF(prelu, INT64)
PRELU_UINT_DEF(prelu, UINT32)
PRELU_UINT_DEF(prelu, UINT64)
static const ew_inner_fn prelu_fns[EW_DTYPE_COUNT] = {
    EW_REAL_TYPES(EW_ENTRY, prelu) EW_ENTRY(prelu, INT32) EW_ENTRY(prelu, INT64)
    EW_ENTRY(prelu, UINT32) EW_ENTRY(prelu, UINT64)
};

/* PReluGrad over (d = dy, a = X, b = slope), as PyTorch: the x > 0 branch
 * is the identity, so x = 0 takes the slope's side. */
#define PRELU_GRAD_X_DEF(op, D)                                                         \
    EW_TERNARY_INNER(op##_##D, T_(D),                                                   \
                     EW_LD_##D(a) > 0 ? d : EW_ST_##D(EW_LD_##D(b) * EW_LD_##D(d)))
#define PRELU_GRAD_S_DEF(op, D)                                                         \
    EW_TERNARY_INNER(op##_##D, T_(D),                                                   \
                     ((void)b, EW_ST_##D(EW_LD_##D(a) > 0 ? (C_(D))0                   \
                                                           : EW_LD_##D(a) * EW_LD_##D(d))))
EW_REAL_TYPES(PRELU_GRAD_X_DEF, prelu_grad_x)
EW_REAL_TYPES(PRELU_GRAD_S_DEF, prelu_grad_s)
static const ew_inner_fn prelu_grad_x_fns[EW_DTYPE_COUNT] = {
    EW_REAL_TYPES(EW_ENTRY, prelu_grad_x)
};
static const ew_inner_fn prelu_grad_s_fns[EW_DTYPE_COUNT] = {
    EW_REAL_TYPES(EW_ENTRY, prelu_grad_s)
};

/* Inputs of X's dtype; the slope must broadcast into X's shape (so the
 * output is X's shape). Shared by PRelu (X, slope) and PReluGrad (dy, X,
 * slope), whose broadcast output must then be dy's shape. */
static int prelu_check(struct op_call *c, const ew_inner_fn *table, const char *supported)
{
    const struct tensor *x = c->in[0];
    for (int i = 1; i < c->n_in; i++)
        if (c->in[i]->dtype != x->dtype)
            return op_error(c, "input %d has dtype %s but input 0 has %s; they must match", i,
                            onnx_dtype_name(c->in[i]->dtype), onnx_dtype_name(x->dtype));
    if (!EW_LOOKUP(table, x->dtype))
        return ew_dtype_error(c, "input 0", x->dtype, supported);
    if (ew_infer_broadcast(c, x->dtype))
        return -1;
    const struct tensor *target = c->in[c->n_in - 2];   /* X */
    if (!tensor_same_shape(c->out[0], target)) {
        char a[128], b[128];
        return op_error(c, "slope %s does not broadcast into X %s (PRelu's broadcasting is "
                        "unidirectional)", tensor_describe(c->in[c->n_in - 1], a, sizeof a),
                        tensor_describe(target, b, sizeof b));
    }
    if (c->n_in == 3 && !tensor_same_shape(c->in[0], target))
        return op_error(c, "dy and X must have the same shape");
    return 0;
}

static int prelu_infer(struct op_call *c) { return prelu_check(c, prelu_fns, PRELU_LIST); }
static int prelu_cpu(struct op_call *c) { return ew_table_run(c, prelu_fns, PRELU_LIST, 2, NULL); }

static int prelu_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    for (int i = 0; i < 2; i++) {
        if (!g->need_dx[i])
            continue;
        struct onnx_attr wrt = { .name = "wrt", .type = ONNX_ATTR_INT, .i = i };
        int h, in[3] = { g->dy[0], g->in[0], g->in[1] };
        if (g->emit(g, "PReluGrad", &wrt, 1, 3, in, 1, &h) || grad_add_dx_broadcast(g, i, h))
            return -1;
    }
    return 0;
}

const struct op_def op_prelu = {
    .domain = "", .name = "PRelu", .since = { 1, 6, 7, 9, 16 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = prelu_infer, .cost = cost_elementwise,
    .kernel = { [BACKEND_CPU] = prelu_cpu },
    .grad = prelu_grad, .grad_saves_in = 3u,
};

static int prelu_grad_parse(const struct onnx_node *node, int version, void **params, char *err,
                            size_t err_size)
{
    (void)version;
    int64_t wrt = onnx_node_attr_int(node, "wrt", 0);
    if (wrt != 0 && wrt != 1)
        return ew_parse_error(err, err_size, "wrt=%lld (expected 0 for X, 1 for the slope)",
                              (long long)wrt);
    struct prelu_grad_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->wrt = (int)wrt;
    return 0;
}

static const ew_inner_fn *prelu_grad_table(const struct op_call *c)
{
    const struct prelu_grad_params *p = c->params;
    return p && p->wrt ? prelu_grad_s_fns : prelu_grad_x_fns;
}

static int prelu_grad_infer(struct op_call *c)
{
    return prelu_check(c, prelu_grad_table(c), REAL_LIST);
}

static int prelu_grad_cpu(struct op_call *c)
{
    return ew_table_run(c, prelu_grad_table(c), REAL_LIST, 3, NULL);
}

const struct op_def op_prelu_grad = {
    .domain = "dtrexec", .name = "PReluGrad", .since = { 1 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = prelu_grad_parse, .infer = prelu_grad_infer, .cost = cost_elementwise,
    .kernel = { [BACKEND_CPU] = prelu_grad_cpu },
};
