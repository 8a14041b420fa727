/* ops/cast.c — Cast (opsets 6, 9, 13, 19, 21, 23, 24, 25, 28) and CastLike (15,
 * 19, 21, 23, 24, 25) between float, double, float16, bfloat16, int8..uint64
 * and bool. Floating to integer saturates (NaN gives 0) where C would be
 * undefined; integer to integer wraps like numpy's astype; to bool is
 * "!= 0"; to float16/bfloat16 rounds to nearest even. Later versions only add
 * types we do not hold in memory: string and the packed FLOAT8, INT4/UINT4,
 * INT2/UINT2 and FLOAT4 formats, which are refused with an "unsupported"
 * error (so is the float8-only `saturate` attribute's effect, which never
 * applies to the types here). Between floating types the gradient casts dy
 * back; casts through integers or bool pass none. */
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

#define CAST_LIST "float, double, float16, bfloat16, int8..int64, uint8..uint64, bool"

#define CAST_FN(S, D)                                                                  \
    static void cast_##S##_to_##D(const void *ctx, int64_t n, void *const *ptr,        \
                                  const int64_t *step)                                 \
    {                                                                                  \
        EW_T_##D *o = ptr[0];                                                          \
        const EW_T_##S *a = ptr[1];                                                    \
        (void)ctx;                                                                     \
        (void)step;                                                                    \
        for (int64_t i = 0; i < n; i++)                                                \
            o[i] = EW_ST_##D(EW_LD_##S(a[i]));                                         \
    }
#define CAST_INNER(D, S) CAST_FN(S, D)
#define CAST_OUTER(unused, D) EW_CAST_TYPES_B(CAST_INNER, D)
EW_CAST_TYPES_A(CAST_OUTER, _)

#define CAST_ENTRY_INNER(D, S) [ONNX_DTYPE_##S] = cast_##S##_to_##D,
#define CAST_ENTRY_OUTER(unused, D) [ONNX_DTYPE_##D] = { EW_CAST_TYPES_B(CAST_ENTRY_INNER, D) },
/* cast_fns[to][from] */
static const ew_inner_fn cast_fns[EW_DTYPE_COUNT][EW_DTYPE_COUNT] = {
    EW_CAST_TYPES_A(CAST_ENTRY_OUTER, _)
};

static int cast_supported(int dtype)
{
    return dtype > 0 && dtype < EW_DTYPE_COUNT && cast_fns[dtype][dtype];
}

/* Names for the types onnx_dtype_name may not know. */
static const char *cast_dtype_name(int dtype)
{
    static const char *const exotic[] = {
        [17] = "FLOAT8E4M3FN", [18] = "FLOAT8E4M3FNUZ", [19] = "FLOAT8E5M2",
        [20] = "FLOAT8E5M2FNUZ", [21] = "UINT4", [22] = "INT4", [23] = "FLOAT4E2M1",
        [24] = "FLOAT8E8M0", [25] = "UINT2", [26] = "INT2",
    };
    if (dtype >= 17 && dtype <= 26)
        return exotic[dtype];
    const char *name = onnx_dtype_name(dtype);
    return name ? name : "unknown";
}

static int cast_parse(const struct onnx_node *node, int version, void **params, char *err,
                      size_t err_size)
{
    const struct onnx_attr *a = onnx_node_attr(node, "to");
    if (!a || a->type != ONNX_ATTR_INT)
        return ew_parse_error(err, err_size, "missing integer attribute 'to'");
    if (!cast_supported((int)a->i))
        return ew_parse_error(err, err_size,
                              "unsupported target type %s (%lld); supported: " CAST_LIST,
                              cast_dtype_name((int)a->i), (long long)a->i);
    struct cast_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->to = (int)a->i;
    return 0;
}

static int cast_infer_to(struct op_call *c, int to)
{
    const struct tensor *x = c->in[0];
    if (!cast_supported(x->dtype))
        return op_error(c, "unsupported input type %s (%d); supported: " CAST_LIST,
                        cast_dtype_name(x->dtype), x->dtype);
    if (!cast_supported(to))
        return op_error(c, "unsupported target type %s (%d); supported: " CAST_LIST,
                        cast_dtype_name(to), to);
    struct tensor *y = c->out[0];
    y->dtype = to;
    y->rank = x->rank;
    memcpy(y->dims, x->dims, sizeof y->dims);
    return 0;
}

static int cast_run(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    if (!cast_supported(x->dtype) || !cast_supported(y->dtype))
        return op_error(c, "unsupported cast %s -> %s; supported: " CAST_LIST,
                        cast_dtype_name(x->dtype), cast_dtype_name(y->dtype));
    if (tensor_numel(y) == 0)
        return 0;
    if (x->dtype == y->dtype) {
        memcpy(y->data, x->data, tensor_size_bytes(y));
        return 0;
    }
    ew_apply(y, c->in, 1, cast_fns[y->dtype][x->dtype], NULL);
    return 0;
}

static int cast_infer(struct op_call *c)
{
    const struct cast_params *p = c->params;
    if (!p)
        return op_error(c, "Cast called without parsed attributes");
    return cast_infer_to(c, p->to);
}

static int cast_like_infer(struct op_call *c) { return cast_infer_to(c, c->in[1]->dtype); }

/* Between floating types the cast is differentiable: dy is cast back to the
 * input's type. Casts from or to integers and bool pass no gradient. CastLike's
 * second input only lends its dtype. */
static int cast_is_float(int dtype)
{
    return dtype == ONNX_DTYPE_FLOAT || dtype == ONNX_DTYPE_DOUBLE ||
           dtype == ONNX_DTYPE_FLOAT16 || dtype == ONNX_DTYPE_BFLOAT16;
}

static int cast_grad(struct grad_ctx *g)
{
    const struct tensor *x = g->fwd->in[0], *y = g->fwd->out[0];
    if (g->dy[0] < 0 || !g->need_dx[0] || !cast_is_float(x->dtype) || !cast_is_float(y->dtype))
        return 0;
    int dx = g->dy[0];
    if (x->dtype != y->dtype) {
        struct onnx_attr to = { .name = "to", .type = ONNX_ATTR_INT, .i = x->dtype };
        if (g->emit(g, "Cast", &to, 1, 1, &g->dy[0], 1, &dx))
            return -1;
    }
    return g->add_dx(g, 0, dx);
}

const struct op_def op_cast = {
    .domain = "", .name = "Cast", .since = { 6, 9, 13, 19, 21, 23, 24, 25, 28 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = cast_parse, .infer = cast_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = cast_run },
    .grad = cast_grad,
};

const struct op_def op_cast_like = {
    .domain = "", .name = "CastLike", .since = { 15, 19, 21, 23, 24, 25 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = cast_like_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = cast_run },
    .grad = cast_grad,
};
