/* ops/compare.c — numpy-broadcasting comparisons with a bool output (Equal,
 * Less, Greater, LessOrEqual, GreaterOrEqual) and Where. Versions only widen
 * the admitted types; every version here accepts float, double,
 * int8..uint64, and bool for Equal; Equal-19 adds string (compared by
 * content, ops/string.c). Where selects by element size, so it serves every dtype.
 * Comparisons are not differentiable; Where's gradient selects dy into the
 * branch that was taken (the condition gets none). */
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/string-impl.h"

#define NUMERIC_LIST "float, double, int8, int16, int32, int64, uint8, uint16, uint32, uint64"

#define CMP_DEF_(op, D, EXPR) \
    EW_BINARY_INNER(op##_##D, EW_T_##D, EW_T_##D, uint8_t, (uint8_t)(EXPR))
#define EQ_DEF(op, D) CMP_DEF_(op, D, x == y)
#define LT_DEF(op, D) CMP_DEF_(op, D, x < y)
#define GT_DEF(op, D) CMP_DEF_(op, D, x > y)
#define LE_DEF(op, D) CMP_DEF_(op, D, x <= y)
#define GE_DEF(op, D) CMP_DEF_(op, D, x >= y)

EW_NUMERIC_TYPES(EQ_DEF, eq)
EQ_DEF(eq, BOOL)
EW_NUMERIC_TYPES(LT_DEF, lt)
EW_NUMERIC_TYPES(GT_DEF, gt)
EW_NUMERIC_TYPES(LE_DEF, le)
EW_NUMERIC_TYPES(GE_DEF, ge)

static const ew_inner_fn eq_fns[EW_DTYPE_COUNT] = { EW_NUMERIC_TYPES(EW_ENTRY, eq)
                                                    EW_ENTRY(eq, BOOL) };
static const ew_inner_fn lt_fns[EW_DTYPE_COUNT] = { EW_NUMERIC_TYPES(EW_ENTRY, lt) };
static const ew_inner_fn gt_fns[EW_DTYPE_COUNT] = { EW_NUMERIC_TYPES(EW_ENTRY, gt) };
static const ew_inner_fn le_fns[EW_DTYPE_COUNT] = { EW_NUMERIC_TYPES(EW_ENTRY, le) };
static const ew_inner_fn ge_fns[EW_DTYPE_COUNT] = { EW_NUMERIC_TYPES(EW_ENTRY, ge) };

static int compare_infer(struct op_call *c, const ew_inner_fn *table, const char *supported)
{
    int dtype = c->in[0]->dtype;
    if (c->in[1]->dtype != dtype)
        return op_error(c, "input 1 has dtype %s but input 0 has %s; they must match",
                        onnx_dtype_name(c->in[1]->dtype), onnx_dtype_name(dtype));
    if (dtype == ONNX_DTYPE_STRING && table == eq_fns && c->version >= 19)
        return ew_infer_broadcast(c, ONNX_DTYPE_BOOL);
    if (!EW_LOOKUP(table, dtype))
        return ew_dtype_error(c, "input 0", dtype, supported);
    return ew_infer_broadcast(c, ONNX_DTYPE_BOOL);
}

static int compare_cpu(struct op_call *c, const ew_inner_fn *table, const char *supported)
{
    if (c->in[0]->dtype == ONNX_DTYPE_STRING && table == eq_fns)
        return op_string_equal_cpu(c);
    ew_inner_fn fn = EW_LOOKUP(table, c->in[0]->dtype);
    if (!fn)
        return ew_dtype_error(c, "input 0", c->in[0]->dtype, supported);
    ew_apply(c->out[0], c->in, 2, fn, NULL);
    return 0;
}

#define COMPARE_DEF(sym, opname, table, supported, ...)                                 \
    static int sym##_infer(struct op_call *c) { return compare_infer(c, table, supported); } \
    static int sym##_cpu(struct op_call *c) { return compare_cpu(c, table, supported); } \
    const struct op_def sym = {                                                         \
        .domain = "", .name = opname, .since = { __VA_ARGS__ },                         \
        .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,                           \
        .infer = sym##_infer, .cost = cost_elementwise,                                 \
        .kernel = { [BACKEND_CPU] = sym##_cpu },                                        \
    };

COMPARE_DEF(op_equal, "Equal", eq_fns, NUMERIC_LIST ", bool (string from version 19)", 7, 11, 13, 19)
COMPARE_DEF(op_less, "Less", lt_fns, NUMERIC_LIST, 7, 9, 13)
COMPARE_DEF(op_greater, "Greater", gt_fns, NUMERIC_LIST, 7, 9, 13)
COMPARE_DEF(op_less_or_equal, "LessOrEqual", le_fns, NUMERIC_LIST, 12, 16)
COMPARE_DEF(op_greater_or_equal, "GreaterOrEqual", ge_fns, NUMERIC_LIST, 12, 16)

/* ---- Where -------------------------------------------------------------- */

/* Element types only matter by size here: selection copies bits. */
#define WHERE_DEF(bits)                                                                 \
    static void where_##bits(const void *ctx, int64_t n, void *const *ptr,              \
                             const int64_t *step)                                       \
    {                                                                                   \
        uint##bits##_t *o = ptr[0];                                                     \
        const uint8_t *cond = ptr[1];                                                   \
        const uint##bits##_t *x = ptr[2], *y = ptr[3];                                  \
        const int64_t sc = step[1], sx = step[2], sy = step[3];                         \
        if (sc && sx && sy) {                                                           \
            for (int64_t i = 0; i < n; i++)                                             \
                o[i] = cond[i] ? x[i] : y[i];                                           \
        } else {                                                                        \
            for (int64_t i = 0; i < n; i++)                                             \
                o[i] = cond[i * sc] ? x[i * sx] : y[i * sy];                            \
        }                                                                               \
    }
WHERE_DEF(8)
WHERE_DEF(16)
WHERE_DEF(32)
WHERE_DEF(64)

static ew_inner_fn where_fn(int dtype)
{
    switch (onnx_dtype_size(dtype)) {
    case 1: return where_8;
    case 2: return where_16;
    case 4: return where_32;
    case 8: return where_64;
    default: return NULL;
    }
}

static int where_infer(struct op_call *c)
{
    const struct tensor *cond = c->in[0], *x = c->in[1], *y = c->in[2];
    if (cond->dtype != ONNX_DTYPE_BOOL)
        return op_error(c, "input 0 (condition) has dtype %s, expected bool",
                        onnx_dtype_name(cond->dtype));
    if (x->dtype != y->dtype)
        return op_error(c, "inputs X (%s) and Y (%s) must have the same dtype",
                        onnx_dtype_name(x->dtype), onnx_dtype_name(y->dtype));
    if (!where_fn(x->dtype))
        return ew_dtype_error(c, "input X", x->dtype, "any fixed-size dtype");
    return ew_infer_broadcast(c, x->dtype);
}

static int where_cpu(struct op_call *c)
{
    ew_inner_fn fn = where_fn(c->in[1]->dtype);
    if (!fn)
        return ew_dtype_error(c, "input X", c->in[1]->dtype, "any fixed-size dtype");
    ew_apply(c->out[0], c->in, 3, fn, NULL);
    return 0;
}

/* dX = Where(cond, dy, 0), dY = Where(cond, 0, dy), each summed back to its
 * input's shape; the condition is not differentiable. */
static int where_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0 || (!g->need_dx[1] && !g->need_dx[2]))
        return 0;
    const struct tensor *dy = g->shape(g, g->dy[0]);
    uint64_t zero_bits = 0;        /* all-zero bits are 0.0 in every float type */
    struct tensor zt = { .dtype = dy->dtype, .rank = 0, .data = &zero_bits };
    int zero = g->constant(g, &zt);
    if (zero < 0)
        return -1;
    for (int i = 1; i < 3; i++) {
        if (!g->need_dx[i])
            continue;
        int h, in[3] = { g->in[0], i == 1 ? g->dy[0] : zero, i == 1 ? zero : g->dy[0] };
        if (g->emit(g, "Where", NULL, 0, 3, in, 1, &h) || grad_add_dx_broadcast(g, i, h))
            return -1;
    }
    return 0;
}

const struct op_def op_where = {
    .domain = "", .name = "Where", .since = { 9, 16 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .infer = where_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = where_cpu },
    .grad = where_grad, .grad_saves_in = 1u,
};
