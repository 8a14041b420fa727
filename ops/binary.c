/* ops/binary.c — numpy-broadcasting arithmetic: Add, Sub, Mul, Div (opsets
 * 7, 13, 14), Pow (7, 12, 13, 15; base and exponent types may differ) and the
 * variadic Max, Min (6, 8, 12, 13) and Sum (6, 8, 13), which fold their inputs
 * left to right. Integer arithmetic wraps like numpy; integer division
 * truncates toward zero, and x/0 gives 0 instead of a trap. Versions differ
 * only in the types they admit, and every version here admits float, double
 * and int8..uint64 (opset 6 Max/Min/Sum also accept broadcasting inputs). */
#include <string.h>

#include "ops/elementwise-impl.h"

#define NUMERIC_LIST "float, double, int8, int16, int32, int64, uint8, uint16, uint32, uint64"

/* ---- inner loops -------------------------------------------------------- */

#define ADD_DEF(op, D) EW_BINARY_INNER(op##_##D, EW_T_##D, EW_T_##D, EW_T_##D, \
                                       (EW_T_##D)((EW_W_##D)x + (EW_W_##D)y))
#define SUB_DEF(op, D) EW_BINARY_INNER(op##_##D, EW_T_##D, EW_T_##D, EW_T_##D, \
                                       (EW_T_##D)((EW_W_##D)x - (EW_W_##D)y))
#define MUL_DEF(op, D) EW_BINARY_INNER(op##_##D, EW_T_##D, EW_T_##D, EW_T_##D, \
                                       (EW_T_##D)((EW_W_##D)x * (EW_W_##D)y))
/* NaN wins in Max/Min, like numpy.maximum/minimum. */
#define MAX_DEF(op, D) EW_BINARY_INNER(op##_##D, EW_T_##D, EW_T_##D, EW_T_##D, \
                                       (x >= y || x != x) ? x : y)
#define MIN_DEF(op, D) EW_BINARY_INNER(op##_##D, EW_T_##D, EW_T_##D, EW_T_##D, \
                                       (x <= y || x != x) ? x : y)
#define DIVF_DEF(op, D) EW_BINARY_INNER(op##_##D, EW_T_##D, EW_T_##D, EW_T_##D, x / y)
/* Signed: x / -1 is computed as a wrapping negation because INT_MIN / -1 traps. */
#define DIVS_DEF(op, D) EW_BINARY_INNER(op##_##D, EW_T_##D, EW_T_##D, EW_T_##D,            \
                                        y == 0 ? 0                                         \
                                        : y == -1 ? (EW_T_##D)(0 - (EW_W_##D)x)            \
                                                  : (EW_T_##D)(x / y))
#define DIVU_DEF(op, D) EW_BINARY_INNER(op##_##D, EW_T_##D, EW_T_##D, EW_T_##D, \
                                        y == 0 ? 0 : (EW_T_##D)(x / y))

EW_NUMERIC_TYPES(ADD_DEF, add)
EW_NUMERIC_TYPES(SUB_DEF, sub)
EW_NUMERIC_TYPES(MUL_DEF, mul)
EW_NUMERIC_TYPES(MAX_DEF, max)
EW_NUMERIC_TYPES(MIN_DEF, min)
EW_FLOAT_TYPES(DIVF_DEF, div)
EW_SINT_TYPES(DIVS_DEF, div)
EW_UINT_TYPES(DIVU_DEF, div)

static const ew_inner_fn add_fns[EW_DTYPE_COUNT] = { EW_NUMERIC_TYPES(EW_ENTRY, add) };
static const ew_inner_fn sub_fns[EW_DTYPE_COUNT] = { EW_NUMERIC_TYPES(EW_ENTRY, sub) };
static const ew_inner_fn mul_fns[EW_DTYPE_COUNT] = { EW_NUMERIC_TYPES(EW_ENTRY, mul) };
static const ew_inner_fn div_fns[EW_DTYPE_COUNT] = { EW_NUMERIC_TYPES(EW_ENTRY, div) };
static const ew_inner_fn max_fns[EW_DTYPE_COUNT] = { EW_NUMERIC_TYPES(EW_ENTRY, max) };
static const ew_inner_fn min_fns[EW_DTYPE_COUNT] = { EW_NUMERIC_TYPES(EW_ENTRY, min) };

/* Integer power by squaring, wrapping like numpy; a negative exponent gives
 * the integer part of the true result (0 unless the base is 1 or -1). */
static inline int64_t pow_int(int64_t base, int64_t e)
{
    if (e < 0)
        return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)base;
    while (e) {
        if (e & 1)
            r *= b;
        b *= b;
        e >>= 1;
    }
    return (int64_t)r;
}

/* Result has the base's type; mixed types are computed in double. */
#define POW_EXPR_FLOAT(x, y) \
    _Generic((y), float: powf((float)(x), (float)(y)),                                \
             default: (float)pow((double)(x), (double)(y)))
#define POW_EXPR_DOUBLE(x, y) pow((double)(x), (double)(y))
#define POW_EXPR_INT_(T, sat, x, y)                                                   \
    _Generic((y), float: sat(pow((double)(x), (double)(y))),                          \
             double: sat(pow((double)(x), (double)(y))),                              \
             default: (T)pow_int((int64_t)(x), (int64_t)(y)))
#define POW_EXPR_INT32(x, y) POW_EXPR_INT_(int32_t, ew_sat_i32, x, y)
#define POW_EXPR_INT64(x, y) POW_EXPR_INT_(int64_t, ew_sat_i64, x, y)

#define POW_BASES(X, a) X(a, FLOAT) X(a, DOUBLE) X(a, INT32) X(a, INT64)
#define POW_INNER(B, E) EW_BINARY_INNER(pow_##B##_##E, EW_T_##B, EW_T_##E, EW_T_##B, \
                                        POW_EXPR_##B(x, y))
#define POW_OUTER(unused, B) EW_NUMERIC_TYPES(POW_INNER, B)
POW_BASES(POW_OUTER, _)
#define POW_ENTRY_INNER(B, E) [ONNX_DTYPE_##E] = pow_##B##_##E,
#define POW_ENTRY_OUTER(unused, B) [ONNX_DTYPE_##B] = { EW_NUMERIC_TYPES(POW_ENTRY_INNER, B) },
static const ew_inner_fn pow_fns[EW_DTYPE_COUNT][EW_DTYPE_COUNT] = {
    POW_BASES(POW_ENTRY_OUTER, _)
};

/* ---- shared infer / kernel ---------------------------------------------- */

/* Same dtype for every input, a supported one, and the broadcast shape. */
static int arith_infer(struct op_call *c, const ew_inner_fn *table)
{
    int dtype = c->in[0]->dtype;
    for (int i = 1; i < c->n_in; i++)
        if (c->in[i] && c->in[i]->dtype != dtype)
            return op_error(c, "input %d has dtype %s but input 0 has %s; they must match", i,
                            onnx_dtype_name(c->in[i]->dtype), onnx_dtype_name(dtype));
    if (!EW_LOOKUP(table, dtype))
        return ew_dtype_error(c, "input 0", dtype, NUMERIC_LIST);
    return ew_infer_broadcast(c, dtype);
}

/* Binary ops, and variadic ones folded pairwise into the output, which is
 * safe in place because every inner loop reads element i before writing it. */
static int arith_cpu(struct op_call *c, const ew_inner_fn *table)
{
    struct tensor *out = c->out[0];
    ew_inner_fn fn = EW_LOOKUP(table, out->dtype);
    if (!fn)
        return ew_dtype_error(c, "output", out->dtype, NUMERIC_LIST);
    if (tensor_numel(out) == 0)
        return 0;
    if (c->n_in == 1) {
        memcpy(out->data, c->in[0]->data, tensor_size_bytes(out));
        return 0;
    }
    const struct tensor *pair[2] = { c->in[0], c->in[1] };
    ew_apply(out, pair, 2, fn, NULL);
    for (int k = 2; k < c->n_in; k++) {
        pair[0] = out;
        pair[1] = c->in[k];
        ew_apply(out, pair, 2, fn, NULL);
    }
    return 0;
}

static int pow_infer(struct op_call *c)
{
    int bt = c->in[0]->dtype, et = c->in[1]->dtype;
    if (!(bt > 0 && bt < EW_DTYPE_COUNT && et > 0 && et < EW_DTYPE_COUNT && pow_fns[bt][et]))
        return op_error(c, "unsupported dtypes %s ^ %s (supported: base float, double, int32, "
                        "int64; exponent " NUMERIC_LIST ")",
                        onnx_dtype_name(bt), onnx_dtype_name(et));
    return ew_infer_broadcast(c, bt);
}

static int pow_cpu(struct op_call *c)
{
    int bt = c->in[0]->dtype, et = c->in[1]->dtype;
    ew_inner_fn fn = (bt > 0 && bt < EW_DTYPE_COUNT && et > 0 && et < EW_DTYPE_COUNT)
                         ? pow_fns[bt][et] : NULL;
    if (!fn)
        return op_error(c, "unsupported dtypes %s ^ %s", onnx_dtype_name(bt), onnx_dtype_name(et));
    ew_apply(c->out[0], c->in, 2, fn, NULL);
    return 0;
}

static struct op_cost pow_cost(const struct op_call *c) { return ew_cost_scaled(c, 10); }

/* ---- gradients ------------------------------------------------------------
 * Every input gradient is first formed in the broadcast output shape and
 * then summed back to the input's shape by grad_add_dx_broadcast. */

/* Add and Sum: dy goes to every input unchanged. */
static int sum_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    for (int i = 0; i < g->fwd->n_in; i++)
        if (g->in[i] >= 0 && grad_add_dx_broadcast(g, i, g->dy[0]))
            return -1;
    return 0;
}

/* Sub: dA = dy, dB = -dy (negated after the reduction, on fewer elements). */
static int sub_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    if (grad_add_dx_broadcast(g, 0, g->dy[0]))
        return -1;
    if (!g->need_dx[1])
        return 0;
    int reduced, neg;
    if (grad_reduce_to(g, g->dy[0], g->shape(g, g->in[1]), &reduced) ||
        g->emit(g, "Neg", NULL, 0, 1, &reduced, 1, &neg))
        return -1;
    return g->add_dx(g, 1, neg);
}

/* Mul: dA = dy * B, dB = dy * A. */
static int mul_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    for (int i = 0; i < 2; i++) {
        if (!g->need_dx[i])
            continue;
        int prod, in[2] = { g->dy[0], g->in[1 - i] };
        if (g->emit(g, "Mul", NULL, 0, 2, in, 1, &prod) || grad_add_dx_broadcast(g, i, prod))
            return -1;
    }
    return 0;
}

#define ARITH_DEF(sym, opname, table, lo_in, hi_in, grad_fn, saves_in, ...)            \
    static int sym##_infer(struct op_call *c) { return arith_infer(c, table); }         \
    static int sym##_cpu(struct op_call *c) { return arith_cpu(c, table); }             \
    const struct op_def sym = {                                                        \
        .domain = "", .name = opname, .since = { __VA_ARGS__ },                        \
        .min_in = lo_in, .max_in = hi_in, .min_out = 1, .max_out = 1,                  \
        .infer = sym##_infer, .cost = cost_elementwise,                                \
        .kernel = { [BACKEND_CPU] = sym##_cpu },                                       \
        .grad = grad_fn, .grad_saves_in = saves_in,                                    \
    };

ARITH_DEF(op_add, "Add", add_fns, 2, 2, sum_grad, 0, 7, 13, 14)
ARITH_DEF(op_sub, "Sub", sub_fns, 2, 2, sub_grad, 0, 7, 13, 14)
ARITH_DEF(op_mul, "Mul", mul_fns, 2, 2, mul_grad, 3u, 7, 13, 14)
ARITH_DEF(op_div, "Div", div_fns, 2, 2, NULL, 0, 7, 13, 14)
ARITH_DEF(op_max, "Max", max_fns, 1, OP_VARIADIC, NULL, 0, 6, 8, 12, 13)
ARITH_DEF(op_min, "Min", min_fns, 1, OP_VARIADIC, NULL, 0, 6, 8, 12, 13)
ARITH_DEF(op_sum, "Sum", add_fns, 1, OP_VARIADIC, sum_grad, 0, 6, 8, 13)

const struct op_def op_pow = {
    .domain = "", .name = "Pow", .since = { 7, 12, 13, 15 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = pow_infer, .cost = pow_cost,
    .kernel = { [BACKEND_CPU] = pow_cpu },
};
