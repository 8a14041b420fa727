/* ops/unary_math.c — one-input elementwise math beside ops/unary.c: Sin, Cos
 * (opsets 7, 22), Sign (9, 13), Floor, Ceil (1, 6, 13), Round (11, 22:
 * halves to even, as numpy.round and the C rint), and the bool-valued IsNaN
 * (9, 13, 20) and IsInf (10, 20; detect_negative, detect_positive). The
 * versions only widened the type lists (opset 1's consumed_inputs is a
 * legacy hint and is ignored). float, double, float16 and bfloat16 are
 * admitted everywhere (the 16-bit types computed in float); Sign also takes
 * every integer type.
 *
 * Gradients, as PyTorch's autograd gives them: Sin' = Cos, Cos' = -Sin,
 * emitted as Cos/Sin and Mul (and Neg); Sign, Floor, Ceil and Round have a
 * zero gradient everywhere (PyTorch's zeros_like), so their emitters add
 * nothing, which the runtime treats as a zero gradient; IsNaN and IsInf have
 * bool outputs and no gradient. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <string.h>
#include <tgmath.h>

#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

#define REAL_LIST "float, double, float16, bfloat16"
#define SIGN_LIST REAL_LIST ", int8, int16, int32, int64, uint8, uint16, uint32, uint64"

/* ---- inner loops -------------------------------------------------------- */

#define T_(D) EW_T_##D
#define C_(D) EW_C_##D
/* o = store(EXPR(v)) with v the element loaded into its compute type. */
#define REAL_DEF_(op, D, EXPR)                                                          \
    static inline C_(D) op##_v_##D(C_(D) v) { return (EXPR); }                          \
    EW_UNARY_INNER(op##_##D, T_(D), T_(D), EW_ST_##D(op##_v_##D(EW_LD_##D(x))))
#define SIN_DEF(op, D) REAL_DEF_(op, D, sin(v))
#define COS_DEF(op, D) REAL_DEF_(op, D, cos(v))
#define FLOOR_DEF(op, D) REAL_DEF_(op, D, floor(v))
#define CEIL_DEF(op, D) REAL_DEF_(op, D, ceil(v))
/* rint rounds halves to even in the default rounding mode, which we never change. */
#define ROUND_DEF(op, D) REAL_DEF_(op, D, rint(v))
/* NaN and signed zeros come back as they are, like numpy.sign. */
#define SIGNF_DEF(op, D) REAL_DEF_(op, D, v > 0 ? (C_(D))1 : v < 0 ? (C_(D))-1 : v)
#define SIGNS_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), (T_(D))((x > 0) - (x < 0)))
#define SIGNU_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), (T_(D))(x > 0))
#define ISNAN_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), uint8_t, \
                                        (uint8_t)(EW_LD_##D(x) != EW_LD_##D(x)))
/* ctx: two ints, detect_negative and detect_positive. */
#define ISINF_DEF(op, D)                                                                \
    EW_UNARY_INNER(op##_##D, T_(D), uint8_t,                                            \
                   (uint8_t)((EW_LD_##D(x) == (C_(D))INFINITY && ((const int *)ctx)[1]) || \
                             (EW_LD_##D(x) == -(C_(D))INFINITY && ((const int *)ctx)[0])))

EW_REAL_TYPES(SIN_DEF, sin)
EW_REAL_TYPES(COS_DEF, cos)
EW_REAL_TYPES(FLOOR_DEF, floor)
EW_REAL_TYPES(CEIL_DEF, ceil)
EW_REAL_TYPES(ROUND_DEF, round)
EW_REAL_TYPES(SIGNF_DEF, sign)
EW_SINT_TYPES(SIGNS_DEF, sign)
EW_UINT_TYPES(SIGNU_DEF, sign)
EW_REAL_TYPES(ISNAN_DEF, isnan)
EW_REAL_TYPES(ISINF_DEF, isinf)

static const ew_inner_fn sin_fns[EW_DTYPE_COUNT] = { EW_REAL_TYPES(EW_ENTRY, sin) };
static const ew_inner_fn cos_fns[EW_DTYPE_COUNT] = { EW_REAL_TYPES(EW_ENTRY, cos) };
static const ew_inner_fn floor_fns[EW_DTYPE_COUNT] = { EW_REAL_TYPES(EW_ENTRY, floor) };
static const ew_inner_fn ceil_fns[EW_DTYPE_COUNT] = { EW_REAL_TYPES(EW_ENTRY, ceil) };
static const ew_inner_fn round_fns[EW_DTYPE_COUNT] = { EW_REAL_TYPES(EW_ENTRY, round) };
static const ew_inner_fn sign_fns[EW_DTYPE_COUNT] = { EW_REAL_TYPES(EW_ENTRY, sign)
                                                      EW_INT_TYPES(EW_ENTRY, sign) };
static const ew_inner_fn isnan_fns[EW_DTYPE_COUNT] = { EW_REAL_TYPES(EW_ENTRY, isnan) };
static const ew_inner_fn isinf_fns[EW_DTYPE_COUNT] = { EW_REAL_TYPES(EW_ENTRY, isinf) };

/* ---- gradients ------------------------------------------------------------ */

/* Sin: dx = dy * Cos(X); Cos: dx = -(dy * Sin(X)). */
static int trig_grad(struct grad_ctx *g, const char *deriv, int negate)
{
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    int d, prod, neg;
    if (g->emit(g, deriv, NULL, 0, 1, &g->in[0], 1, &d))
        return -1;
    int in[2] = { g->dy[0], d };
    if (g->emit(g, "Mul", NULL, 0, 2, in, 1, &prod))
        return -1;
    if (!negate)
        return g->add_dx(g, 0, prod);
    if (g->emit(g, "Neg", NULL, 0, 1, &prod, 1, &neg))
        return -1;
    return g->add_dx(g, 0, neg);
}

static int sin_grad(struct grad_ctx *g) { return trig_grad(g, "Cos", 0); }
static int cos_grad(struct grad_ctx *g) { return trig_grad(g, "Sin", 1); }

/* Piecewise constant: the derivative is 0 wherever it exists, and PyTorch
 * defines it as 0 at the jumps too. Adding nothing is that zero. */
static int zero_grad(struct grad_ctx *g)
{
    (void)g;
    return 0;
}

/* ---- operator definitions ------------------------------------------------- */

#define UMATH_DEF(sym, opname, table, supported, out_dtype, flops, grad_fn, saves_in, ...)   \
    static int sym##_infer(struct op_call *c)                                           \
    {                                                                                   \
        return ew_unary_infer(c, table, supported, out_dtype);                          \
    }                                                                                   \
    static int sym##_cpu(struct op_call *c) { return ew_table_run(c, table, supported, 1, NULL); } \
    static struct op_cost sym##_cost(const struct op_call *c) { return ew_cost_scaled(c, flops); } \
    const struct op_def sym = {                                                         \
        .domain = "", .name = opname, .since = { __VA_ARGS__ },                         \
        .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,                           \
        .infer = sym##_infer, .cost = sym##_cost,                                       \
        .kernel = { [BACKEND_CPU] = sym##_cpu },                                        \
        .grad = grad_fn, .grad_saves_in = saves_in,                                     \
    };

UMATH_DEF(op_sin, "Sin", sin_fns, REAL_LIST, 0, 10, sin_grad, 1u, 7, 22)
UMATH_DEF(op_cos, "Cos", cos_fns, REAL_LIST, 0, 10, cos_grad, 1u, 7, 22)
UMATH_DEF(op_sign, "Sign", sign_fns, SIGN_LIST, 0, 1, zero_grad, 0, 9, 13)
UMATH_DEF(op_floor, "Floor", floor_fns, REAL_LIST, 0, 1, zero_grad, 0, 1, 6, 13)
UMATH_DEF(op_ceil, "Ceil", ceil_fns, REAL_LIST, 0, 1, zero_grad, 0, 1, 6, 13)
UMATH_DEF(op_round, "Round", round_fns, REAL_LIST, 0, 1, zero_grad, 0, 11, 22)
UMATH_DEF(op_isnan, "IsNaN", isnan_fns, REAL_LIST, ONNX_DTYPE_BOOL, 1, NULL, 0, 9, 13, 20)

/* ---- IsInf ---------------------------------------------------------------- */

static int isinf_parse(const struct onnx_node *node, int version, void **params, char *err,
                       size_t err_size)
{
    (void)version;
    int64_t neg = onnx_node_attr_int(node, "detect_negative", 1);
    int64_t pos = onnx_node_attr_int(node, "detect_positive", 1);
    if ((neg != 0 && neg != 1) || (pos != 0 && pos != 1))
        return ew_parse_error(err, err_size, "detect_negative=%lld, detect_positive=%lld "
                              "(each must be 0 or 1)", (long long)neg, (long long)pos);
    struct isinf_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->detect[0] = (int)neg;
    p->detect[1] = (int)pos;
    return 0;
}

static int isinf_infer(struct op_call *c)
{
    return ew_unary_infer(c, isinf_fns, REAL_LIST, ONNX_DTYPE_BOOL);
}

static int isinf_cpu(struct op_call *c)
{
    const struct isinf_params *p = c->params;
    static const int both[2] = { 1, 1 };
    return ew_table_run(c, isinf_fns, REAL_LIST, 1, p ? p->detect : both);
}

const struct op_def op_isinf = {
    .domain = "", .name = "IsInf", .since = { 10, 20 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = isinf_parse, .infer = isinf_infer, .cost = cost_elementwise,
    .kernel = { [BACKEND_CPU] = isinf_cpu },
};
