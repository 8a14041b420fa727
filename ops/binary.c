/* ops/binary.c — numpy-broadcasting arithmetic: Add, Sub, Mul, Div (opsets
 * 7, 13, 14), Pow (7, 12, 13, 15; base and exponent types may differ) and the
 * variadic Max, Min (6, 8, 12, 13) and Sum (6, 8, 13), which fold their inputs
 * left to right. Integer arithmetic wraps like numpy; integer division
 * truncates toward zero, and x/0 gives 0 instead of a trap. Versions differ
 * only in the types they admit, and every version here admits float, double
 * and int8..uint64 (opset 6 Max/Min/Sum also accept broadcasting inputs).
 *
 * Gradients (float and double): Add/Sum/Sub pass dy on; Mul and Div emit
 * Mul/Div plus DivGrad; Pow emits PowGrad per input; Max/Min emit
 * MaxMinGrad, which routes dy to the first input equal to the output. Every
 * input gradient is summed back to its input's shape by
 * grad_add_dx_broadcast. */
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

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

/* ---- gradient kernels (domain dtrexec) --------------------------------------
 * DivGrad(dy, A, B) and PowGrad(dy, A, B) give one input's gradient in the
 * broadcast output shape; the emitter sums it back to the input's shape. */

#define POW_F_FLOAT(x, y) powf(x, y)
#define POW_F_DOUBLE(x, y) pow(x, y)
#define LOG_F_FLOAT(x) logf(x)
#define LOG_F_DOUBLE(x) log(x)

/* d(A / B)/dB = -A / B^2 */
#define DIV_GRAD_DEF(op, D) EW_TERNARY_INNER(op##_##D, EW_T_##D, -d * (a / b) / b)
/* d(A^B)/dA = B A^(B-1), taken as 0 where B == 0 (A^0 is constant, also at A = 0) */
#define POW_GRAD_A_DEF(op, D) EW_TERNARY_INNER(op##_##D, EW_T_##D,                     \
                                               b == 0 ? (EW_T_##D)0                    \
                                                      : d * b * POW_F_##D(a, b - 1))
/* d(A^B)/dB = A^B log A, taken as 0 where A == 0 and B >= 0 (the limit from
 * the right; 0 * -inf would give NaN) */
#define POW_GRAD_B_DEF(op, D) EW_TERNARY_INNER(op##_##D, EW_T_##D,                     \
                                               a == 0 && b >= 0 ? (EW_T_##D)0          \
                                                   : d * POW_F_##D(a, b) * LOG_F_##D(a))
EW_FLOAT_TYPES(DIV_GRAD_DEF, div_grad)
EW_FLOAT_TYPES(POW_GRAD_A_DEF, pow_grad_a)
EW_FLOAT_TYPES(POW_GRAD_B_DEF, pow_grad_b)
static const ew_inner_fn div_grad_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, div_grad) };
static const ew_inner_fn pow_grad_a_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, pow_grad_a) };
static const ew_inner_fn pow_grad_b_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, pow_grad_b) };

/* dy, A, B of one float dtype; the output takes the broadcast shape. */
static int bgrad_infer(struct op_call *c)
{
    int dtype = c->in[0]->dtype;
    for (int i = 1; i < c->n_in; i++)
        if (c->in[i]->dtype != dtype)
            return op_error(c, "input %d has dtype %s but dy has %s; they must match", i,
                            onnx_dtype_name(c->in[i]->dtype), onnx_dtype_name(dtype));
    if (!EW_LOOKUP(div_grad_fns, dtype))
        return ew_dtype_error(c, "dy", dtype, "float, double");
    return ew_infer_broadcast(c, dtype);
}

static int bgrad_run(struct op_call *c, const ew_inner_fn *table)
{
    ew_inner_fn fn = EW_LOOKUP(table, c->in[0]->dtype);
    if (!fn)
        return ew_dtype_error(c, "dy", c->in[0]->dtype, "float, double");
    ew_apply(c->out[0], c->in, 3, fn, NULL);
    return 0;
}

static int div_grad_cpu(struct op_call *c) { return bgrad_run(c, div_grad_fns); }
static struct op_cost div_grad_cost(const struct op_call *c) { return ew_cost_scaled(c, 3); }

const struct op_def op_div_grad = {
    .domain = "dtrexec", .name = "DivGrad", .since = { 1 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .infer = bgrad_infer, .cost = div_grad_cost,
    .kernel = { [BACKEND_CPU] = div_grad_cpu },
};

static int pow_grad_parse(const struct onnx_node *node, int version, void **params, char *err,
                          size_t err_size)
{
    (void)version;
    int64_t wrt = onnx_node_attr_int(node, "wrt", 0);
    if (wrt != 0 && wrt != 1)
        return ew_parse_error(err, err_size, "wrt=%lld (expected 0 for the base, 1 for the "
                              "exponent)", (long long)wrt);
    struct pow_grad_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->wrt = (int)wrt;
    return 0;
}

static int pow_grad_cpu(struct op_call *c)
{
    const struct pow_grad_params *p = c->params;
    return bgrad_run(c, p && p->wrt ? pow_grad_b_fns : pow_grad_a_fns);
}

const struct op_def op_pow_grad = {
    .domain = "dtrexec", .name = "PowGrad", .since = { 1 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = pow_grad_parse, .infer = bgrad_infer, .cost = pow_cost,
    .kernel = { [BACKEND_CPU] = pow_grad_cpu },
};

/* MaxMinGrad(dy, Y, X0, ..., Xn-1) -> dX0..dXn-1, each in dy's shape: dy goes
 * to the first input equal to Y (NaN matching NaN, since NaN wins the
 * forward), zeros elsewhere; so ties go to the first input. */
#define MAXMIN_GRAD_MAX_IN 32

#define MAXMIN_GRAD_DEF(unused, D)                                                     \
    static void maxmin_grad_##D(const struct op_call *c, int64_t lo, int64_t hi,       \
                                const int64_t (*st)[TENSOR_MAX_RANK])                  \
    {                                                                                  \
        typedef EW_T_##D T;                                                            \
        const struct tensor *dy = c->in[0];                                            \
        const int n = c->n_in - 2, r = dy->rank;                                       \
        const T *d = dy->data, *y = c->in[1]->data;                                    \
        int64_t idx[TENSOR_MAX_RANK], off[MAXMIN_GRAD_MAX_IN];                         \
        int64_t rem = lo;                                                              \
        for (int k = 0; k < n; k++)                                                    \
            off[k] = 0;                                                                \
        for (int a = r - 1; a >= 0; a--) {                                             \
            idx[a] = rem % dy->dims[a];                                                \
            rem /= dy->dims[a];                                                        \
            for (int k = 0; k < n; k++)                                                \
                off[k] += idx[a] * st[k][a];                                           \
        }                                                                              \
        for (int64_t i = lo; i < hi; i++) {                                            \
            int first = -1;                                                            \
            for (int k = 0; k < n && first < 0; k++) {                                 \
                T v = ((const T *)c->in[2 + k]->data)[off[k]];                         \
                if (v == y[i] || (v != v && y[i] != y[i]))                             \
                    first = k;                                                         \
            }                                                                          \
            for (int k = 0; k < n; k++)                                                \
                ((T *)c->out[k]->data)[i] = k == first ? d[i] : (T)0;                  \
            for (int a = r - 1; a >= 0; a--) {                                         \
                for (int k = 0; k < n; k++)                                            \
                    off[k] += st[k][a];                                                \
                if (++idx[a] < dy->dims[a])                                            \
                    break;                                                             \
                for (int k = 0; k < n; k++)                                            \
                    off[k] -= st[k][a] * dy->dims[a];                                  \
                idx[a] = 0;                                                            \
            }                                                                          \
        }                                                                              \
    }
EW_FLOAT_TYPES(MAXMIN_GRAD_DEF, _)

static int maxmin_grad_infer(struct op_call *c)
{
    const struct tensor *dy = c->in[0];
    int n = c->n_in - 2;
    if (n < 1 || n > MAXMIN_GRAD_MAX_IN || c->n_out != n)
        return op_error(c, "expected dy, Y and 1..%d inputs with one output each, got %d inputs "
                        "and %d outputs", MAXMIN_GRAD_MAX_IN, c->n_in, c->n_out);
    if (dy->dtype != ONNX_DTYPE_FLOAT && dy->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "dy", dy->dtype, "float, double");
    for (int i = 1; i < c->n_in; i++)
        if (!c->in[i] || c->in[i]->dtype != dy->dtype)
            return op_error(c, "input %d is missing or not of dy's dtype %s", i,
                            onnx_dtype_name(dy->dtype));
    if (!tensor_same_shape(c->in[1], dy))
        return op_error(c, "Y and dy must have the same shape");
    for (int k = 0; k < n; k++) {
        struct tensor *o = c->out[k];
        if (!o)
            continue;
        o->dtype = dy->dtype;
        o->rank = dy->rank;
        memcpy(o->dims, dy->dims, sizeof o->dims);
    }
    return 0;
}

static int maxmin_grad_cpu(struct op_call *c)
{
    const struct tensor *dy = c->in[0];
    int n = c->n_in - 2;
    int64_t st[MAXMIN_GRAD_MAX_IN][TENSOR_MAX_RANK];
    for (int k = 0; k < n; k++) {
        if (!c->out[k])
            return op_error(c, "output %d is omitted; every input's gradient is written", k);
        broadcast_strides(c->in[2 + k], dy, st[k]);
    }
    int64_t total = tensor_numel(dy), chunks = (total + EW_CHUNK - 1) / EW_CHUNK;
    int is_f32 = dy->dtype == ONNX_DTYPE_FLOAT;
#pragma omp parallel for schedule(static) if (total >= EW_PARALLEL_MIN)
    for (int64_t t = 0; t < chunks; t++) {
        int64_t lo = t * EW_CHUNK, hi = lo + EW_CHUNK < total ? lo + EW_CHUNK : total;
        if (is_f32)
            maxmin_grad_FLOAT(c, lo, hi, (const int64_t(*)[TENSOR_MAX_RANK])st);
        else
            maxmin_grad_DOUBLE(c, lo, hi, (const int64_t(*)[TENSOR_MAX_RANK])st);
    }
    return 0;
}

const struct op_def op_max_min_grad = {
    .domain = "dtrexec", .name = "MaxMinGrad", .since = { 1 },
    .min_in = 3, .max_in = OP_VARIADIC, .min_out = 1, .max_out = OP_VARIADIC,
    .infer = maxmin_grad_infer, .cost = cost_elementwise,
    .kernel = { [BACKEND_CPU] = maxmin_grad_cpu },
};

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

/* Div: dA = dy / B, dB = -dy A / B^2. */
static int div_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0)
        return 0;
    int h;
    if (g->need_dx[0]) {
        int in[2] = { g->dy[0], g->in[1] };
        if (g->emit(g, "Div", NULL, 0, 2, in, 1, &h) || grad_add_dx_broadcast(g, 0, h))
            return -1;
    }
    if (g->need_dx[1]) {
        int in[3] = { g->dy[0], g->in[0], g->in[1] };
        if (g->emit(g, "DivGrad", NULL, 0, 3, in, 1, &h) || grad_add_dx_broadcast(g, 1, h))
            return -1;
    }
    return 0;
}

/* Emits Cast(h, to) into *out, or passes h through when it has that dtype. */
static int grad_cast(struct grad_ctx *g, int h, int to, int *out)
{
    const struct tensor *t = g->shape(g, h);
    if (t && t->dtype == to) {
        *out = h;
        return 0;
    }
    struct onnx_attr a = { .name = "to", .type = ONNX_ATTR_INT, .i = to };
    return g->emit(g, "Cast", &a, 1, 1, &h, 1, out);
}

/* Pow: computed in the base's dtype; an exponent of another dtype is cast to
 * it, and its gradient cast back. */
static int pow_grad(struct grad_ctx *g)
{
    const struct tensor *a = g->fwd->in[0], *b = g->fwd->in[1];
    if (g->dy[0] < 0)
        return 0;
    if (a->dtype != ONNX_DTYPE_FLOAT && a->dtype != ONNX_DTYPE_DOUBLE)
        return grad_error(g, "only float and double bases are differentiable, not %s",
                          onnx_dtype_name(a->dtype));
    int bc;
    if (grad_cast(g, g->in[1], a->dtype, &bc))
        return -1;
    for (int i = 0; i < 2; i++) {
        if (!g->need_dx[i])
            continue;
        struct onnx_attr wrt = { .name = "wrt", .type = ONNX_ATTR_INT, .i = i };
        int in[3] = { g->dy[0], g->in[0], bc }, h, hc;
        if (g->emit(g, "PowGrad", &wrt, 1, 3, in, 1, &h) ||
            grad_cast(g, h, i ? b->dtype : a->dtype, &hc) || grad_add_dx_broadcast(g, i, hc))
            return -1;
    }
    return 0;
}

/* Max, Min: dy to the first input that equals the output; one input is an
 * identity. */
static int max_min_grad(struct grad_ctx *g)
{
    int n = g->fwd->n_in;
    if (g->dy[0] < 0)
        return 0;
    if (n == 1)
        return g->need_dx[0] ? g->add_dx(g, 0, g->dy[0]) : 0;
    if (n > MAXMIN_GRAD_MAX_IN)
        return grad_error(g, "more than %d inputs", MAXMIN_GRAD_MAX_IN);
    int in[MAXMIN_GRAD_MAX_IN + 2], out[MAXMIN_GRAD_MAX_IN];
    in[0] = g->dy[0];
    in[1] = g->out[0];
    for (int k = 0; k < n; k++)
        in[2 + k] = g->in[k];
    if (g->emit(g, "MaxMinGrad", NULL, 0, n + 2, in, n, out))
        return -1;
    for (int k = 0; k < n; k++)
        if (grad_add_dx_broadcast(g, k, out[k]))
            return -1;
    return 0;
}

#define ARITH_DEF(sym, opname, table, lo_in, hi_in, grad_fn, saves_in, saves_out, ...) \
    static int sym##_infer(struct op_call *c) { return arith_infer(c, table); }         \
    static int sym##_cpu(struct op_call *c) { return arith_cpu(c, table); }             \
    const struct op_def sym = {                                                        \
        .domain = "", .name = opname, .since = { __VA_ARGS__ },                        \
        .min_in = lo_in, .max_in = hi_in, .min_out = 1, .max_out = 1,                  \
        .infer = sym##_infer, .cost = cost_elementwise,                                \
        .kernel = { [BACKEND_CPU] = sym##_cpu },                                       \
        .grad = grad_fn, .grad_saves_in = saves_in,                                    \
        .grad_saves_out = saves_out,                                                   \
        .in_place = hi_in == 2, /* the variadic ones fold into their output */         \
    };

ARITH_DEF(op_add, "Add", add_fns, 2, 2, sum_grad, 0, 0u, 7, 13, 14)
ARITH_DEF(op_sub, "Sub", sub_fns, 2, 2, sub_grad, 0, 0u, 7, 13, 14)
ARITH_DEF(op_mul, "Mul", mul_fns, 2, 2, mul_grad, 3u, 0u, 7, 13, 14)
ARITH_DEF(op_div, "Div", div_fns, 2, 2, div_grad, 3u, 0u, 7, 13, 14)
/* Max, Min: saves every input (up to 32) and the output. */
ARITH_DEF(op_max, "Max", max_fns, 1, OP_VARIADIC, max_min_grad, ~0u, 1u, 6, 8, 12, 13)
ARITH_DEF(op_min, "Min", min_fns, 1, OP_VARIADIC, max_min_grad, ~0u, 1u, 6, 8, 12, 13)
ARITH_DEF(op_sum, "Sum", add_fns, 1, OP_VARIADIC, sum_grad, 0, 0u, 6, 8, 13)

const struct op_def op_pow = {
    .domain = "", .name = "Pow", .since = { 7, 12, 13, 15 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = pow_infer, .cost = pow_cost,
    .kernel = { [BACKEND_CPU] = pow_cpu },
    .grad = pow_grad, .grad_saves_in = 3u,
};
