/* ops/elementwise-impl.h — helpers shared by the elementwise, comparison,
 * cast, softmax and reduction operator files (ops/unary.c, binary.c,
 * compare.c, cast.c, softmax.c, reduce.c); not part of the ops/ interface.
 *
 * Three things live here:
 *  - per-dtype type information as token-pasted macros (EW_T_FLOAT is float,
 *    EW_W_INT8 the type int8 arithmetic wraps in, EW_LD_/EW_ST_ convert to and
 *    from a compute value) and X-macro dtype lists, so that each operator
 *    instantiates one tight, vectorisable loop per dtype and a table indexed
 *    by dtype;
 *  - the broadcast walker (ops/elementwise.c): it collapses the broadcast
 *    shape so that every operand's innermost run has element stride 0 or 1 and
 *    calls a typed inner loop once per run, in parallel chunks for big tensors;
 *  - float16/bfloat16 conversions with round-to-nearest-even, and saturating
 *    float-to-integer conversions (a plain C cast of an out-of-range or NaN
 *    value is undefined behaviour).
 *
 * Kernels keep gradient-friendly pieces (inner loops, the walker) reusable
 * so that gradient kernels can sit beside them later.
 */
#ifndef DTRX_OPS_ELEMENTWISE_IMPL_H
#define DTRX_OPS_ELEMENTWISE_IMPL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ops/ops.h"

/* Dtype tables are indexed by enum onnx_dtype up to BFLOAT16. */
#define EW_DTYPE_COUNT 17

/* Elements below which a walk stays on one thread; above it, work is split
 * into fixed chunks so the result never depends on the thread count. */
#define EW_PARALLEL_MIN 65536
#define EW_CHUNK 16384

/* ---- per-dtype type information ---------------------------------------- */

/* C type holding one element. */
#define EW_T_FLOAT float
#define EW_T_DOUBLE double
#define EW_T_INT8 int8_t
#define EW_T_INT16 int16_t
#define EW_T_INT32 int32_t
#define EW_T_INT64 int64_t
#define EW_T_UINT8 uint8_t
#define EW_T_UINT16 uint16_t
#define EW_T_UINT32 uint32_t
#define EW_T_UINT64 uint64_t
#define EW_T_BOOL uint8_t
#define EW_T_FLOAT16 uint16_t
#define EW_T_BFLOAT16 uint16_t

/* Type that +, -, * are computed in: integers wrap modulo 2^bits like numpy
 * (via unsigned arithmetic, because signed overflow is undefined in C and
 * uint16*uint16 would overflow int after promotion). */
#define EW_W_FLOAT float
#define EW_W_DOUBLE double
#define EW_W_INT8 uint32_t
#define EW_W_INT16 uint32_t
#define EW_W_INT32 uint32_t
#define EW_W_INT64 uint64_t
#define EW_W_UINT8 uint32_t
#define EW_W_UINT16 uint32_t
#define EW_W_UINT32 uint32_t
#define EW_W_UINT64 uint64_t
#define EW_W_BOOL uint32_t

/* Lowest and highest value (the identity of Max and Min reductions). */
#define EW_LOWEST_FLOAT (-INFINITY)
#define EW_LOWEST_DOUBLE (-(double)INFINITY)
#define EW_LOWEST_INT8 INT8_MIN
#define EW_LOWEST_INT16 INT16_MIN
#define EW_LOWEST_INT32 INT32_MIN
#define EW_LOWEST_INT64 INT64_MIN
#define EW_LOWEST_UINT8 0
#define EW_LOWEST_UINT16 0
#define EW_LOWEST_UINT32 0
#define EW_LOWEST_UINT64 0
#define EW_LOWEST_BOOL 0

#define EW_HIGHEST_FLOAT INFINITY
#define EW_HIGHEST_DOUBLE ((double)INFINITY)
#define EW_HIGHEST_INT8 INT8_MAX
#define EW_HIGHEST_INT16 INT16_MAX
#define EW_HIGHEST_INT32 INT32_MAX
#define EW_HIGHEST_INT64 INT64_MAX
#define EW_HIGHEST_UINT8 UINT8_MAX
#define EW_HIGHEST_UINT16 UINT16_MAX
#define EW_HIGHEST_UINT32 UINT32_MAX
#define EW_HIGHEST_UINT64 UINT64_MAX
#define EW_HIGHEST_BOOL 1

/* Dtype lists: X(arg, DTYPE). Two copies of the full list exist because a
 * macro cannot expand itself, and Cast nests one list inside the other. */
#define EW_FLOAT_TYPES(X, a) X(a, FLOAT) X(a, DOUBLE)
#define EW_SINT_TYPES(X, a) X(a, INT8) X(a, INT16) X(a, INT32) X(a, INT64)
#define EW_UINT_TYPES(X, a) X(a, UINT8) X(a, UINT16) X(a, UINT32) X(a, UINT64)
#define EW_INT_TYPES(X, a) EW_SINT_TYPES(X, a) EW_UINT_TYPES(X, a)
#define EW_SIGNED_TYPES(X, a) EW_FLOAT_TYPES(X, a) EW_SINT_TYPES(X, a)
#define EW_NUMERIC_TYPES(X, a) EW_FLOAT_TYPES(X, a) EW_INT_TYPES(X, a)
#define EW_CAST_TYPES_A(X, a) EW_NUMERIC_TYPES(X, a) X(a, BOOL) X(a, FLOAT16) X(a, BFLOAT16)
#define EW_CAST_TYPES_B(X, a)                                                          \
    X(a, FLOAT) X(a, DOUBLE) X(a, INT8) X(a, INT16) X(a, INT32) X(a, INT64) X(a, UINT8) \
    X(a, UINT16) X(a, UINT32) X(a, UINT64) X(a, BOOL) X(a, FLOAT16) X(a, BFLOAT16)

/* float, double, float16 and bfloat16; the two 16-bit types are computed in
 * float (EW_C_), loaded and stored with EW_LD_ / EW_ST_. */
#define EW_REAL_TYPES(X, a) EW_FLOAT_TYPES(X, a) X(a, FLOAT16) X(a, BFLOAT16)
#define EW_C_FLOAT float
#define EW_C_DOUBLE double
#define EW_C_FLOAT16 float
#define EW_C_BFLOAT16 float

/* Table entry for a function named <op>_<DTYPE>. */
#define EW_ENTRY(op, D) [ONNX_DTYPE_##D] = op##_##D,

/* ---- float16 / bfloat16 ------------------------------------------------ */

static inline uint32_t ew_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float ew_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float ew_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return ew_f32_from_bits(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        /* zero or subnormal: m * 2^-24, exact in float */
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return ew_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

/* Rounds a significand shifted right by `shift` bits to nearest, ties to even. */
static inline uint64_t ew_round_shift(uint64_t m, int shift)
{
    uint64_t q = m >> shift, rem = m & ((UINT64_C(1) << shift) - 1);
    uint64_t half = UINT64_C(1) << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    return q;
}

static inline uint16_t ew_f32_to_f16(float f)
{
    uint32_t x = ew_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)                 /* NaN: stay a (quiet) NaN */
        return sign | 0x7e00u | (uint16_t)((ax >> 13) & 0x1ffu);
    if (ax >= 0x47800000u)                /* >= 65536: infinity */
        return sign | 0x7c00u;
    if (ax >= 0x38800000u)                /* half normal range: rebias 127 -> 15 */
        return sign | (uint16_t)ew_round_shift(ax - 0x38000000u, 13); /* carry may give inf */
    if (ax < 0x33000000u)                 /* below 2^-25: rounds to zero */
        return sign;
    /* half subnormal: value / 2^-24 = significand >> (126 - exponent) */
    uint32_t e = ax >> 23;
    uint64_t m = (ax & 0x7fffffu) | 0x800000u;
    return sign | (uint16_t)ew_round_shift(m, (int)(126 - e));
}

/* Direct from double (not through float) so that no double rounding occurs. */
static inline uint16_t ew_f64_to_f16(double d)
{
    uint64_t x;
    memcpy(&x, &d, sizeof x);
    uint16_t sign = (uint16_t)((x >> 48) & 0x8000u);
    uint64_t ax = x & UINT64_C(0x7fffffffffffffff);
    if (ax > UINT64_C(0x7ff0000000000000))
        return sign | 0x7e00u | (uint16_t)((ax >> 42) & 0x1ffu);
    if (ax >= UINT64_C(0x40f0000000000000))
        return sign | 0x7c00u;
    if (ax >= UINT64_C(0x3f10000000000000))
        return sign | (uint16_t)ew_round_shift(ax - UINT64_C(0x3f00000000000000), 42);
    if (ax < UINT64_C(0x3e60000000000000))
        return sign;
    uint64_t e = ax >> 52;
    uint64_t m = (ax & UINT64_C(0xfffffffffffff)) | (UINT64_C(1) << 52);
    return sign | (uint16_t)ew_round_shift(m, (int)(1051 - e));
}

static inline float ew_bf16_to_f32(uint16_t b)
{
    return ew_f32_from_bits((uint32_t)b << 16);
}

static inline uint16_t ew_f32_to_bf16(float f)
{
    uint32_t x = ew_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static inline uint16_t ew_f64_to_bf16(double d) { return ew_f32_to_bf16((float)d); }

/* ---- a vectorisable expf ----------------------------------------------- */

/* exp(x) for float, within 2 ulp of the correctly rounded result, written
 * without calls or branches so that loops over it vectorise (libm's expf
 * does not, without -ffast-math). exp(x) = 2^n * exp(r) with n = round(x /
 * ln 2) and |r| <= ln2 / 2; exp(r) = 1 + r + r^2 q(r), q a degree-5 fit on
 * Chebyshev nodes; 2^n is applied in two halves so that results in the
 * subnormal range and up to FLT_MAX come out right. NaN stays NaN, large
 * inputs give inf and 0. Files that use it in hot loops compile with
 * -fno-trapping-math (see ops/unary.c) so that GCC vectorises it. */
static inline float ew_expf(float x)
{
    float xc = x < 88.8f ? x : 88.8f;     /* NaN takes this bound, fixed up below */
    xc = xc > -104.0f ? xc : -104.0f;
    float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest */
    float r = xc - n * 0.693359375f;      /* ln 2 in two parts: the first exact in n * hi */
    r = r + n * 2.12194440e-4f;
    float q = 1.9899275503e-04f;
    q = q * r + 1.3933643932e-03f;
    q = q * r + 8.3332983777e-03f;
    q = q * r + 4.1666466743e-02f;
    q = q * r + 1.6666667163e-01f;
    q = q * r + 5.0000000000e-01f;
    float p = 1.0f + r + r * r * q;
    int32_t ni = (int32_t)n;              /* in [-150, 128] */
    int32_t n1 = ni >> 1, n2 = ni - n1;   /* arithmetic shift (GCC, Clang) */
    float s1 = ew_f32_from_bits((uint32_t)(n1 + 127) << 23);
    float s2 = ew_f32_from_bits((uint32_t)(n2 + 127) << 23);
    float y = p * s1 * s2;
    return x != x ? x : y;
}

/* exp by dtype: the vectorisable one for float, libm's for double. */
#define EW_EXP_FLOAT(x) ew_expf(x)
#define EW_EXP_DOUBLE(x) exp(x)

/* ---- saturating conversions from double to integers -------------------- */

#define EW_SAT_DEF(name, T, lo, hi)                                                    \
    static inline T name(double v)                                                     \
    {                                                                                  \
        if (v != v)                                                                    \
            return 0;                                                                  \
        if (v <= (double)(lo))                                                         \
            return (lo);                                                               \
        if (v >= (double)(hi))                                                         \
            return (hi);                                                               \
        return (T)v;                                                                   \
    }
EW_SAT_DEF(ew_sat_i8, int8_t, INT8_MIN, INT8_MAX)
EW_SAT_DEF(ew_sat_i16, int16_t, INT16_MIN, INT16_MAX)
EW_SAT_DEF(ew_sat_i32, int32_t, INT32_MIN, INT32_MAX)
EW_SAT_DEF(ew_sat_u8, uint8_t, 0, UINT8_MAX)
EW_SAT_DEF(ew_sat_u16, uint16_t, 0, UINT16_MAX)
EW_SAT_DEF(ew_sat_u32, uint32_t, 0, UINT32_MAX)
#undef EW_SAT_DEF

/* 2^63 and 2^64 are exact in double; INT64_MAX and UINT64_MAX are not. */
static inline int64_t ew_sat_i64(double v)
{
    if (v != v)
        return 0;
    if (v >= 9223372036854775808.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

static inline uint64_t ew_sat_u64(double v)
{
    if (v != v || v <= 0)
        return 0;
    if (v >= 18446744073709551616.0)
        return UINT64_MAX;
    return (uint64_t)v;
}

/* ---- load (element -> compute value) and store (value -> element) ------- */

#define EW_LD_FLOAT(x) (x)
#define EW_LD_DOUBLE(x) (x)
#define EW_LD_INT8(x) (x)
#define EW_LD_INT16(x) (x)
#define EW_LD_INT32(x) (x)
#define EW_LD_INT64(x) (x)
#define EW_LD_UINT8(x) (x)
#define EW_LD_UINT16(x) (x)
#define EW_LD_UINT32(x) (x)
#define EW_LD_UINT64(x) (x)
#define EW_LD_BOOL(x) (x)
#define EW_LD_FLOAT16(x) ew_f16_to_f32(x)
#define EW_LD_BFLOAT16(x) ew_bf16_to_f32(x)

/* Stores into integers saturate from floating values and wrap (like numpy's
 * astype) from integer values. */
#define EW_ST_INTEGER_(T, sat, v) \
    _Generic((v), float: sat((double)(v)), double: sat((double)(v)), default: (T)(v))
#define EW_ST_FLOAT(v) ((float)(v))
#define EW_ST_DOUBLE(v) ((double)(v))
#define EW_ST_INT8(v) EW_ST_INTEGER_(int8_t, ew_sat_i8, v)
#define EW_ST_INT16(v) EW_ST_INTEGER_(int16_t, ew_sat_i16, v)
#define EW_ST_INT32(v) EW_ST_INTEGER_(int32_t, ew_sat_i32, v)
#define EW_ST_INT64(v) EW_ST_INTEGER_(int64_t, ew_sat_i64, v)
#define EW_ST_UINT8(v) EW_ST_INTEGER_(uint8_t, ew_sat_u8, v)
#define EW_ST_UINT16(v) EW_ST_INTEGER_(uint16_t, ew_sat_u16, v)
#define EW_ST_UINT32(v) EW_ST_INTEGER_(uint32_t, ew_sat_u32, v)
#define EW_ST_UINT64(v) EW_ST_INTEGER_(uint64_t, ew_sat_u64, v)
#define EW_ST_BOOL(v) ((uint8_t)((v) != 0))
#define EW_ST_FLOAT16(v) _Generic((v), float: ew_f32_to_f16, default: ew_f64_to_f16)(v)
#define EW_ST_BFLOAT16(v) _Generic((v), float: ew_f32_to_bf16, default: ew_f64_to_bf16)(v)

/* ---- the broadcast walker (ops/elementwise.c) -------------------------- */

#define EW_MAX_OPERANDS 4

/* A typed inner loop over one run of n elements: ptr[0] is the output,
 * ptr[1..] the inputs; step[k] is 0 (operand k repeats one element) or 1
 * (contiguous). `ctx` carries per-call constants (alpha, clip bounds...). */
typedef void (*ew_inner_fn)(const void *ctx, int64_t n, void *const *ptr, const int64_t *step);

/* Operand 0 is the output (contiguous, shape `out`); operands 1..n_in are
 * the inputs seen through numpy broadcasting into `out`. */
struct ew_plan {
    int n_ops;
    int rank;                                   /* collapsed rank, >= 1 */
    int64_t dims[TENSOR_MAX_RANK];
    int64_t strides[EW_MAX_OPERANDS][TENSOR_MAX_RANK];
    size_t elem_size[EW_MAX_OPERANDS];
    int64_t numel;
};

void ew_plan_init(struct ew_plan *p, const struct tensor *out, const struct tensor *const *in,
                  int n_in);
/* Runs fn over every run of the plan; base[k] is operand k's data. */
void ew_plan_run(const struct ew_plan *p, ew_inner_fn fn, const void *ctx, void *const *base);

/* Shortcut: plans and runs out = fn(in[0], ..., in[n_in-1]). */
void ew_apply(const struct tensor *out, const struct tensor *const *in, int n_in, ew_inner_fn fn,
              const void *ctx);

/* The shared infer for ops whose output takes the broadcast shape of the
 * inputs (NULL inputs are skipped) and the given dtype. */
int ew_infer_broadcast(struct op_call *c, int dtype);

/* Defines `static void fname(...)`, an ew_inner_fn computing o = EXPR from
 * x (an A element) and y (a B element) with the four stride cases written
 * out, so that each is a plain loop the compiler vectorises. `ctx` is in
 * scope for EXPR. */
#define EW_BINARY_INNER(fname, TA, TB, TO, EXPR)                                        \
    static void fname(const void *ctx, int64_t n, void *const *ptr, const int64_t *step) \
    {                                                                                   \
        TO *o = ptr[0];                                                                 \
        const TA *a = ptr[1];                                                           \
        const TB *b = ptr[2];                                                           \
        (void)ctx;                                                                      \
        if (step[1] && step[2]) {                                                       \
            for (int64_t i = 0; i < n; i++) {                                           \
                const TA x = a[i];                                                      \
                const TB y = b[i];                                                      \
                o[i] = (EXPR);                                                          \
            }                                                                           \
        } else if (step[1]) {                                                           \
            const TB y = b[0];                                                          \
            for (int64_t i = 0; i < n; i++) {                                           \
                const TA x = a[i];                                                      \
                o[i] = (EXPR);                                                          \
            }                                                                           \
        } else if (step[2]) {                                                           \
            const TA x = a[0];                                                          \
            for (int64_t i = 0; i < n; i++) {                                           \
                const TB y = b[i];                                                      \
                o[i] = (EXPR);                                                          \
            }                                                                           \
        } else {                                                                        \
            const TA x = a[0];                                                          \
            const TB y = b[0];                                                          \
            const TO v = (EXPR);                                                        \
            for (int64_t i = 0; i < n; i++)                                             \
                o[i] = v;                                                               \
        }                                                                               \
    }

/* The same for one contiguous input: o = EXPR(x). */
#define EW_UNARY_INNER(fname, TA, TO, EXPR)                                             \
    static void fname(const void *ctx, int64_t n, void *const *ptr, const int64_t *step) \
    {                                                                                   \
        TO *o = ptr[0];                                                                 \
        const TA *a = ptr[1];                                                           \
        (void)ctx;                                                                      \
        if (step[1]) {                                                                  \
            for (int64_t i = 0; i < n; i++) {                                           \
                const TA x = a[i];                                                      \
                o[i] = (EXPR);                                                          \
            }                                                                           \
        } else {                                                                        \
            const TA x = a[0];                                                          \
            const TO v = (EXPR);                                                        \
            for (int64_t i = 0; i < n; i++)                                             \
                o[i] = v;                                                               \
        }                                                                               \
    }

/* Three inputs of one type T: o = EXPR of d, a, b (gradient kernels: d is
 * dy, a and b the forward inputs). The all-contiguous run is a plain loop;
 * runs with a repeated operand index through the 0/1 steps. */
#define EW_TERNARY_INNER(fname, T, EXPR)                                                \
    static void fname(const void *ctx, int64_t n, void *const *ptr, const int64_t *step) \
    {                                                                                   \
        T *o = ptr[0];                                                                  \
        const T *dp = ptr[1], *ap = ptr[2], *bp = ptr[3];                               \
        const int64_t sd = step[1], sa = step[2], sb = step[3];                         \
        (void)ctx;                                                                      \
        if (sd && sa && sb) {                                                           \
            for (int64_t i = 0; i < n; i++) {                                           \
                const T d = dp[i], a = ap[i], b = bp[i];                                \
                o[i] = (EXPR);                                                          \
            }                                                                           \
        } else {                                                                        \
            for (int64_t i = 0; i < n; i++) {                                           \
                const T d = dp[i * sd], a = ap[i * sa], b = bp[i * sb];                 \
                o[i] = (EXPR);                                                          \
            }                                                                           \
        }                                                                               \
    }

/* table[dtype], or NULL when dtype is outside the table. */
#define EW_LOOKUP(table, dtype) \
    ((dtype) > 0 && (dtype) < EW_DTYPE_COUNT ? (table)[(dtype)] : NULL)

/* Writes "unsupported dtype <d> for <what> (supported: <list>)"; returns -1. */
int ew_dtype_error(const struct op_call *c, const char *what, int dtype, const char *supported);

/* Sum of x[0..n) with 16 interleaved partial sums combined in a fixed order:
 * vectorisable without -ffast-math and deterministic. */
float ew_sum_f32(const float *x, int64_t n);
double ew_sum_f64(const double *x, int64_t n);

/* Parse-time error message into err (the caller prefixes the node); -1. */
int ew_parse_error(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One-input ops and their (dy, z) gradient kernels (ops/unary_math.c,
 * activation.c): the output has input 0's shape and `out_dtype` (0: input
 * 0's dtype) when `table` has input 0's dtype. ew_ugrad_infer also checks
 * that dy (input 0) and z (input 1) agree in dtype and shape. */
int ew_unary_infer(struct op_call *c, const ew_inner_fn *table, const char *supported,
                   int out_dtype);
int ew_ugrad_infer(struct op_call *c, const ew_inner_fn *table, const char *supported);
/* out[0] = table[dtype of input 0](in[0..n_in)) through the walker. */
int ew_table_run(struct op_call *c, const ew_inner_fn *table, const char *supported, int n_in,
                 const void *ctx);
/* Emits kernel(dy, z) with the attributes and adds the result to input 0's
 * gradient (nothing when there is no dy or input 0 needs no gradient). */
int ew_ugrad_emit(struct grad_ctx *g, const char *kernel, const struct onnx_attr *attrs,
                  int n_attrs, int z);

/* And, Or, Xor (ops/logical.c): input 1 as the kernel sees it, reshaped to
 * input 0's rank under opset 1's legacy broadcasting; 0, or -1 with
 * op_error. */
int ew_logical_b_view(const struct op_call *c, struct tensor *bv);

/* Allocates a zeroed params struct of `size` bytes into *params. */
void *ew_params_new(size_t size, void **params, char *err, size_t err_size);

/* Shared cost: `flops_per_elem` per output element, bytes of all operands. */
struct op_cost ew_cost_scaled(const struct op_call *c, double flops_per_elem);

/* The reductions' axes (ops/reduce.c; c->params a struct reduce_params, the
 * axes from the attribute or host input 1): mask[i] = 1 for each reduced
 * axis of input 0, *noop = 1 for an identity; 0, or -1 with op_error. */
int ew_reduce_mask(const struct op_call *c, int *mask, int *noop);

/* The counter-based generator of Dropout, Bernoulli and RandomUniformLike
 * (splitmix64's finalizer): draw i under `key` is a pure function of the
 * two, so a recomputation reproduces it in any thread schedule. */
static inline uint64_t ew_rand_mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 53 random bits, for element i under `key`. */
static inline double ew_rand_uniform(uint64_t key, int64_t i)
{
    return (double)(ew_rand_mix(key ^ ew_rand_mix((uint64_t)i)) >> 11) * 0x1.0p-53;
}

/* Dropout's mask generator (ops/dropout.c), which every backend shares so
 * that their masks agree bit for bit: the key of a call (env->seed mixed with
 * the node's seed, or with a hash of its name), and the call's ratio and
 * training flag (from the attributes or host inputs 1 and 2; -1 after
 * op_error). */
uint64_t ew_dropout_key(const struct op_call *c);
int ew_dropout_mode(const struct op_call *c, double *ratio, int *training);

#endif
