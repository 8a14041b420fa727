/* ops/mod.c — Mod (opsets 10, 13, 28), numpy-broadcasting remainder of A by
 * B. fmod = 0 floors the quotient (Python's %, numpy.mod: the result takes
 * B's sign), fmod = 1 truncates it (C's fmod and %: A's sign). Opset 28
 * defines both for floating types; earlier opsets required fmod = 1 there,
 * and we give every version opset 28's meaning (the floored form for
 * floats is numpy.mod, including its signed zeros and infinities). Types:
 * int8..uint64, float, double, float16, bfloat16 (those two computed in
 * float). An integer remainder by 0 is 0 (like numpy, without the trap),
 * and x mod -1 is 0 (INT_MIN % -1 would trap).
 *
 * Gradient (floating types), as PyTorch's remainder and fmod: dA = dy and
 * dB = -dy q with q = floor(A / B) or trunc(A / B), from the kernel
 * dtrexec:ModGrad(dy, A, B; fmod), each summed back to its input's shape. */
#include <string.h>
#include <tgmath.h>

#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

#define MOD_LIST "int8, int16, int32, int64, uint8, uint16, uint32, uint64, float, double, " \
                 "float16, bfloat16"
#define REAL_LIST "float, double, float16, bfloat16"

#define T_(D) EW_T_##D
#define C_(D) EW_C_##D

/* numpy's npy_divmod remainder: fmod, moved into B's sign when it is not
 * already there, and a zero result carrying B's sign. fmod(x, 0) and
 * fmod(inf, y) are NaN as they should be. */
#define FLOOR_MOD_F(C, name)                                                            \
    static inline C name(C x, C y)                                                      \
    {                                                                                   \
        C r = fmod(x, y);                                                               \
        if (y == 0)                                                                     \
            return r;                                                                   \
        if (r != 0)                                                                     \
            return (r < 0) != (y < 0) ? r + y : r;                                      \
        return copysign((C)0, y);                                                       \
    }
FLOOR_MOD_F(float, floor_mod_f32)
FLOOR_MOD_F(double, floor_mod_f64)
#define FMOD_F32(x, y) fmod(x, y)
#define FMOD_F64(x, y) fmod(x, y)
#define FLOORMOD_F32(x, y) floor_mod_f32(x, y)
#define FLOORMOD_F64(x, y) floor_mod_f64(x, y)
#define S_FLOAT F32
#define S_DOUBLE F64
#define S_FLOAT16 F32
#define S_BFLOAT16 F32
#define MODF3_(kind, s) kind##_##s
#define MODF2_(kind, s) MODF3_(kind, s)
#define MODF_(kind, D) MODF2_(kind, S_##D)

#define MOD_REAL_DEF(kind, D)                                                           \
    EW_BINARY_INNER(kind##_##D, T_(D), T_(D), T_(D),                                    \
                    EW_ST_##D(MODF_(kind, D)(EW_LD_##D(x), EW_LD_##D(y))))
/* Integers: y of 0 or -1 gives 0 (no trap); signed floored results move
 * into y's sign. Computed in int64 / uint64, which holds every operand. */
#define FMOD_SINT_DEF(kind, D)                                                          \
    EW_BINARY_INNER(kind##_##D, T_(D), T_(D), T_(D),                                    \
                    (y == 0 || y == -1) ? (T_(D))0 : (T_(D))((int64_t)x % (int64_t)y))
#define FLOORMOD_SINT_DEF(kind, D)                                                      \
    static inline T_(D) kind##_v_##D(T_(D) x, T_(D) y)                                  \
    {                                                                                   \
        if (y == 0 || y == -1)                                                          \
            return 0;                                                                   \
        int64_t r = (int64_t)x % (int64_t)y;                                            \
        return (T_(D))(r != 0 && ((r < 0) != (y < 0)) ? r + y : r);                     \
    }                                                                                   \
    EW_BINARY_INNER(kind##_##D, T_(D), T_(D), T_(D), kind##_v_##D(x, y))
#define MOD_UINT_DEF(kind, D) EW_BINARY_INNER(kind##_##D, T_(D), T_(D), T_(D), \
                                              y == 0 ? (T_(D))0 : (T_(D))(x % y))

EW_REAL_TYPES(MOD_REAL_DEF, FMOD)
EW_REAL_TYPES(MOD_REAL_DEF, FLOORMOD)
EW_SINT_TYPES(FMOD_SINT_DEF, FMOD)
EW_SINT_TYPES(FLOORMOD_SINT_DEF, FLOORMOD)
EW_UINT_TYPES(MOD_UINT_DEF, FMOD)
EW_UINT_TYPES(MOD_UINT_DEF, FLOORMOD)

static const ew_inner_fn fmod_fns[EW_DTYPE_COUNT] = { EW_REAL_TYPES(EW_ENTRY, FMOD)
                                                      EW_INT_TYPES(EW_ENTRY, FMOD) };
static const ew_inner_fn floormod_fns[EW_DTYPE_COUNT] = { EW_REAL_TYPES(EW_ENTRY, FLOORMOD)
                                                          EW_INT_TYPES(EW_ENTRY, FLOORMOD) };

static int mod_parse(const struct onnx_node *node, int version, void **params, char *err,
                     size_t err_size)
{
    (void)version;
    int64_t f = onnx_node_attr_int(node, "fmod", 0);
    if (f != 0 && f != 1)
        return ew_parse_error(err, err_size, "fmod=%lld (expected 0 or 1)", (long long)f);
    struct mod_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->fmod = (int)f;
    return 0;
}

static const ew_inner_fn *mod_table(const struct op_call *c)
{
    const struct mod_params *p = c->params;
    return p && p->fmod ? fmod_fns : floormod_fns;
}

static int mod_infer(struct op_call *c)
{
    int dtype = c->in[0]->dtype;
    if (c->in[1]->dtype != dtype)
        return op_error(c, "input 1 has dtype %s but input 0 has %s; they must match",
                        onnx_dtype_name(c->in[1]->dtype), onnx_dtype_name(dtype));
    if (!EW_LOOKUP(mod_table(c), dtype))
        return ew_dtype_error(c, "input 0", dtype, MOD_LIST);
    return ew_infer_broadcast(c, dtype);
}

static int mod_cpu(struct op_call *c) { return ew_table_run(c, mod_table(c), MOD_LIST, 2, NULL); }
static struct op_cost mod_cost(const struct op_call *c) { return ew_cost_scaled(c, 4); }

/* ---- gradient --------------------------------------------------------------- */

/* -dy * q, q the rounded quotient of the forward */
#define MODGRAD_DEF(kind, D, ROUND)                                                     \
    EW_TERNARY_INNER(kind##_##D, T_(D),                                                 \
                     EW_ST_##D(-EW_LD_##D(d) * ROUND(EW_LD_##D(a) / EW_LD_##D(b))))
#define FMODGRAD_DEF(kind, D) MODGRAD_DEF(kind, D, trunc)
#define FLOORMODGRAD_DEF(kind, D) MODGRAD_DEF(kind, D, floor)
EW_REAL_TYPES(FMODGRAD_DEF, fmod_grad)
EW_REAL_TYPES(FLOORMODGRAD_DEF, floormod_grad)
static const ew_inner_fn fmod_grad_fns[EW_DTYPE_COUNT] = { EW_REAL_TYPES(EW_ENTRY, fmod_grad) };
static const ew_inner_fn floormod_grad_fns[EW_DTYPE_COUNT] = {
    EW_REAL_TYPES(EW_ENTRY, floormod_grad)
};

static const ew_inner_fn *mod_grad_table(const struct op_call *c)
{
    const struct mod_params *p = c->params;
    return p && p->fmod ? fmod_grad_fns : floormod_grad_fns;
}

static int mod_grad_infer(struct op_call *c)
{
    int dtype = c->in[0]->dtype;
    for (int i = 1; i < 3; i++)
        if (c->in[i]->dtype != dtype)
            return op_error(c, "input %d has dtype %s but dy has %s; they must match", i,
                            onnx_dtype_name(c->in[i]->dtype), onnx_dtype_name(dtype));
    if (!EW_LOOKUP(mod_grad_table(c), dtype))
        return ew_dtype_error(c, "dy", dtype, REAL_LIST);
    return ew_infer_broadcast(c, dtype);
}

static int mod_grad_cpu(struct op_call *c)
{
    return ew_table_run(c, mod_grad_table(c), REAL_LIST, 3, NULL);
}

const struct op_def op_mod_grad = {
    .domain = "dtrexec", .name = "ModGrad", .since = { 1 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = mod_parse, .infer = mod_grad_infer, .cost = mod_cost,
    .kernel = { [BACKEND_CPU] = mod_grad_cpu },
};

static int mod_grad(struct grad_ctx *g)
{
    const struct tensor *a = g->fwd->in[0];
    if (g->dy[0] < 0)
        return 0;
    if (!EW_LOOKUP(fmod_grad_fns, a->dtype))
        return grad_error(g, "Mod is differentiable for " REAL_LIST ", not %s",
                          onnx_dtype_name(a->dtype));
    if (grad_add_dx_broadcast(g, 0, g->dy[0]))
        return -1;
    if (!g->need_dx[1])
        return 0;
    const struct mod_params *p = g->fwd->params;
    struct onnx_attr f = { .name = "fmod", .type = ONNX_ATTR_INT, .i = p ? p->fmod : 0 };
    int h, in[3] = { g->dy[0], g->in[0], g->in[1] };
    if (g->emit(g, "ModGrad", &f, 1, 3, in, 1, &h))
        return -1;
    return grad_add_dx_broadcast(g, 1, h);
}

const struct op_def op_mod = {
    .domain = "", .name = "Mod", .since = { 10, 13, 28 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = mod_parse, .infer = mod_infer, .cost = mod_cost,
    .kernel = { [BACKEND_CPU] = mod_cpu },
    .grad = mod_grad, .grad_saves_in = 3u,
};
