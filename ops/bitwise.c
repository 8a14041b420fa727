/* ops/bitwise.c — the bitwise operators on integers: BitwiseAnd, BitwiseOr,
 * BitwiseXor (opset 18; numpy broadcasting), BitwiseNot (18) and BitShift
 * (11: unsigned integers; 28: every integer type, with the results of
 * out-of-range shifts defined). Output has the (broadcast) shape and dtype
 * of the inputs.
 *
 * BitShift follows opset 28's rules for every version (opset 11 left them
 * undefined): a shift amount below 0 or at least the width of T gives what
 * sign extension alone gives (-1 for a right shift of a negative X, else
 * 0); a right shift of a signed X is arithmetic; a left shift of a signed X
 * shifts its two's-complement bits and keeps the low ones (computed in the
 * unsigned type, as signed overflow is undefined in C).
 *
 * BitCast (26) reinterprets the bytes of a tensor as another dtype of the
 * same width (little-endian, as dtrexec stores every tensor): a copy.
 *
 * None of them is differentiable. */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/misc-params.h"

#define INT_LIST "int8, int16, int32, int64, uint8, uint16, uint32, uint64"
#define UINT_LIST "uint8, uint16, uint32, uint64"

#define T_(D) EW_T_##D
#define BITS_(D) ((int)(sizeof(T_(D)) * 8))

#define AND_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), (T_(D))(x & y))
#define OR_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), (T_(D))(x | y))
#define XOR_DEF(op, D) EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D), (T_(D))(x ^ y))
#define NOT_DEF(op, D) EW_UNARY_INNER(op##_##D, T_(D), T_(D), (T_(D))~x)
/* Unsigned amounts cannot be negative. */
#define SHLU_DEF(op, D)                                                                 \
    EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D),                                      \
                    (uint64_t)y >= (uint64_t)BITS_(D) ? (T_(D))0                        \
                        : (T_(D))((EW_W_##D)x << (unsigned)y))
#define SHRU_DEF(op, D)                                                                 \
    EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D),                                      \
                    (uint64_t)y >= (uint64_t)BITS_(D) ? (T_(D))0 : (T_(D))(x >> (unsigned)y))
#define SHLS_DEF(op, D)                                                                 \
    EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D),                                      \
                    y < 0 || y >= BITS_(D) ? (T_(D))0                                   \
                        : (T_(D))((EW_W_##D)x << (unsigned)y))
/* >> of a negative signed value is arithmetic in GCC and Clang. */
#define SHRS_DEF(op, D)                                                                 \
    EW_BINARY_INNER(op##_##D, T_(D), T_(D), T_(D),                                      \
                    y < 0 || y >= BITS_(D) ? (T_(D))(x < 0 ? -1 : 0)                    \
                        : (T_(D))(x >> (unsigned)y))

EW_INT_TYPES(AND_DEF, band)
EW_INT_TYPES(OR_DEF, bor)
EW_INT_TYPES(XOR_DEF, bxor)
EW_INT_TYPES(NOT_DEF, bnot)
EW_UINT_TYPES(SHLU_DEF, shl)
EW_UINT_TYPES(SHRU_DEF, shr)
EW_SINT_TYPES(SHLS_DEF, shl)
EW_SINT_TYPES(SHRS_DEF, shr)

static const ew_inner_fn and_fns[EW_DTYPE_COUNT] = { EW_INT_TYPES(EW_ENTRY, band) };
static const ew_inner_fn or_fns[EW_DTYPE_COUNT] = { EW_INT_TYPES(EW_ENTRY, bor) };
static const ew_inner_fn xor_fns[EW_DTYPE_COUNT] = { EW_INT_TYPES(EW_ENTRY, bxor) };
static const ew_inner_fn not_fns[EW_DTYPE_COUNT] = { EW_INT_TYPES(EW_ENTRY, bnot) };
static const ew_inner_fn shl_fns[EW_DTYPE_COUNT] = { EW_INT_TYPES(EW_ENTRY, shl) };
static const ew_inner_fn shr_fns[EW_DTYPE_COUNT] = { EW_INT_TYPES(EW_ENTRY, shr) };

static int is_unsigned(int dtype)
{
    return dtype == ONNX_DTYPE_UINT8 || dtype == ONNX_DTYPE_UINT16 ||
           dtype == ONNX_DTYPE_UINT32 || dtype == ONNX_DTYPE_UINT64;
}

/* Both inputs of one integer dtype (of `list`), broadcast together. */
static int bitwise_infer_list(struct op_call *c, const ew_inner_fn *table, const char *list)
{
    for (int i = 0; i < c->n_in; i++) {
        if (!EW_LOOKUP(table, c->in[i]->dtype))
            return ew_dtype_error(c, i ? "input 1" : "input 0", c->in[i]->dtype, list);
        if (c->in[i]->dtype != c->in[0]->dtype)
            return op_error(c, "input %d has dtype %s but input 0 has %s; they must match", i,
                            onnx_dtype_name(c->in[i]->dtype), onnx_dtype_name(c->in[0]->dtype));
    }
    return ew_infer_broadcast(c, c->in[0]->dtype);
}

static int bitwise_run(struct op_call *c, const ew_inner_fn *table)
{
    ew_inner_fn fn = EW_LOOKUP(table, c->in[0]->dtype);
    if (!fn)
        return ew_dtype_error(c, "input 0", c->in[0]->dtype, INT_LIST);
    ew_apply(c->out[0], c->in, c->n_in, fn, NULL);
    return 0;
}

#define BITWISE_DEF(sym, opname, table, n)                                              \
    static int sym##_infer(struct op_call *c) { return bitwise_infer_list(c, table, INT_LIST); } \
    static int sym##_cpu(struct op_call *c) { return bitwise_run(c, table); }            \
    const struct op_def sym = {                                                         \
        .domain = "", .name = opname, .since = { 18 },                                  \
        .min_in = n, .max_in = n, .min_out = 1, .max_out = 1,                           \
        .infer = sym##_infer, .cost = cost_elementwise,                                 \
        .kernel = { [BACKEND_CPU] = sym##_cpu },                                        \
    };

BITWISE_DEF(op_bitwise_and, "BitwiseAnd", and_fns, 2)
BITWISE_DEF(op_bitwise_or, "BitwiseOr", or_fns, 2)
BITWISE_DEF(op_bitwise_xor, "BitwiseXor", xor_fns, 2)
BITWISE_DEF(op_bitwise_not, "BitwiseNot", not_fns, 1)

/* ---- BitShift --------------------------------------------------------------- */

static int bitshift_parse(const struct onnx_node *node, int version, void **params, char *err,
                          size_t err_size)
{
    (void)version;
    const char *dir = onnx_node_attr_string(node, "direction", NULL);
    if (!dir)
        return ew_parse_error(err, err_size, "attribute direction (LEFT or RIGHT) is required");
    if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
        return ew_parse_error(err, err_size, "direction '%s' is neither LEFT nor RIGHT", dir);
    struct bitshift_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->right = !strcmp(dir, "RIGHT");
    return 0;
}

static int bitshift_infer(struct op_call *c)
{
    const struct bitshift_params *p = c->params;
    const ew_inner_fn *table = p->right ? shr_fns : shl_fns;
    if (c->version < 28 && !is_unsigned(c->in[0]->dtype))
        return op_error(c, "dtype %s needs opset 28; BitShift-%d takes %s",
                        onnx_dtype_name(c->in[0]->dtype), c->version, UINT_LIST);
    return bitwise_infer_list(c, table, INT_LIST);
}

static int bitshift_cpu(struct op_call *c)
{
    const struct bitshift_params *p = c->params;
    return bitwise_run(c, p->right ? shr_fns : shl_fns);
}

const struct op_def op_bitshift = {
    .domain = "", .name = "BitShift", .since = { 11, 28 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = bitshift_parse, .infer = bitshift_infer, .cost = cost_elementwise,
    .kernel = { [BACKEND_CPU] = bitshift_cpu },
};

/* ---- BitCast ------------------------------------------------------------------- */

static int bitcast_parse(const struct onnx_node *node, int version, void **params, char *err,
                         size_t err_size)
{
    (void)version;
    const struct onnx_attr *to = onnx_node_attr(node, "to");
    if (!to || to->type != ONNX_ATTR_INT)
        return ew_parse_error(err, err_size, "attribute to (the target dtype) is required");
    if (to->i <= 0 || to->i == ONNX_DTYPE_STRING || onnx_dtype_size((int)to->i) == 0)
        return ew_parse_error(err, err_size, "to = %lld is not a fixed-size dtype dtrexec holds",
                              (long long)to->i);
    struct bitcast_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->to = (int)to->i;
    return 0;
}

static int bitcast_infer(struct op_call *c)
{
    const struct bitcast_params *p = c->params;
    const struct tensor *x = c->in[0];
    size_t from = onnx_dtype_size(x->dtype), to = onnx_dtype_size(p->to);
    if (from == 0 || x->dtype == ONNX_DTYPE_STRING)
        return op_error(c, "dtype %s has no fixed element size", onnx_dtype_name(x->dtype));
    if (from != to)
        return op_error(c, "%s has %zu bytes per element but %s has %zu; BitCast needs equal widths",
                        onnx_dtype_name(x->dtype), from, onnx_dtype_name(p->to), to);
    struct tensor *y = c->out[0];
    *y = (struct tensor){ .dtype = p->to, .rank = x->rank, .data = y->data };
    memcpy(y->dims, x->dims, sizeof y->dims);
    return 0;
}

static int bitcast_cpu(struct op_call *c)
{
    if (c->out[0]->data != c->in[0]->data)
        memcpy(c->out[0]->data, c->in[0]->data, tensor_size_bytes(c->in[0]));
    return 0;
}

const struct op_def op_bitcast = {
    .domain = "", .name = "BitCast", .since = { 26 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = bitcast_parse, .infer = bitcast_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = bitcast_cpu },
};
