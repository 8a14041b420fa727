/* ops/logical.c — And, Or, Xor over bool tensors (opsets 1, 7). From opset 7
 * they broadcast numpy-style. Opset 1 has the legacy form: without
 * `broadcast` the shapes must be equal; with broadcast = 1, B (a scalar or
 * a tensor whose shape matches a contiguous run of A's dims starting at
 * `axis`, by default the trailing ones) is repeated over A, and the output
 * has A's shape. Bool values are any nonzero byte and come out as 0 or 1.
 * Not differentiable (bool outputs). Not is in ops/unary.c. */
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

#define LOGIC_DEF(op, EXPR) EW_BINARY_INNER(op, uint8_t, uint8_t, uint8_t, (uint8_t)(EXPR))
LOGIC_DEF(and_BOOL, (x != 0) & (y != 0))
LOGIC_DEF(or_BOOL, (x != 0) | (y != 0))
LOGIC_DEF(xor_BOOL, (x != 0) ^ (y != 0))

static const ew_inner_fn and_fns[EW_DTYPE_COUNT] = { [ONNX_DTYPE_BOOL] = and_BOOL };
static const ew_inner_fn or_fns[EW_DTYPE_COUNT] = { [ONNX_DTYPE_BOOL] = or_BOOL };
static const ew_inner_fn xor_fns[EW_DTYPE_COUNT] = { [ONNX_DTYPE_BOOL] = xor_BOOL };

static int logical_parse(const struct onnx_node *node, int version, void **params, char *err,
                         size_t err_size)
{
    if (version >= 7)
        return 0;
    int64_t b = onnx_node_attr_int(node, "broadcast", 0);
    if (b != 0 && b != 1)
        return ew_parse_error(err, err_size, "broadcast=%lld (expected 0 or 1)", (long long)b);
    struct logical_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->broadcast = (int)b;
    p->has_axis = onnx_node_attr(node, "axis") != NULL;
    p->axis = onnx_node_attr_int(node, "axis", 0);
    return 0;
}

/* Opset 1: B seen with A's rank (1 outside the run it matches), so that the
 * ordinary walker repeats it; -1 with op_error if it does not fit. */
static int legacy_view(const struct op_call *c, struct tensor *bv)
{
    const struct logical_params *p = c->params;
    const struct tensor *a = c->in[0], *b = c->in[1];
    char sa[128], sb[128];
    *bv = *b;
    if (!p->broadcast) {
        if (!tensor_same_shape(a, b))
            return op_error(c, "inputs %s and %s differ in shape and broadcast is 0 (opset 1)",
                            tensor_describe(a, sa, sizeof sa), tensor_describe(b, sb, sizeof sb));
        return 0;
    }
    if (tensor_numel(b) == 1 && b->rank <= 1 && !p->has_axis) {
        bv->rank = a->rank;
        for (int d = 0; d < a->rank; d++)
            bv->dims[d] = 1;
        return 0;
    }
    int64_t axis = p->has_axis ? p->axis : a->rank - b->rank;
    if (axis < 0)
        axis += a->rank;
    if (b->rank > a->rank || axis < 0 || axis + b->rank > a->rank)
        return op_error(c, "B %s does not fit A %s at axis %lld (opset 1 broadcasting)",
                        tensor_describe(b, sb, sizeof sb), tensor_describe(a, sa, sizeof sa),
                        (long long)(p->has_axis ? p->axis : axis));
    bv->rank = a->rank;
    for (int d = 0; d < a->rank; d++)
        bv->dims[d] = 1;
    for (int d = 0; d < b->rank; d++) {
        if (b->dims[d] != a->dims[axis + d])
            return op_error(c, "B %s does not match A %s at axis %lld (dim %d: %lld vs %lld)",
                            tensor_describe(b, sb, sizeof sb), tensor_describe(a, sa, sizeof sa),
                            (long long)axis, d, (long long)b->dims[d],
                            (long long)a->dims[axis + d]);
        bv->dims[axis + d] = b->dims[d];
    }
    return 0;
}

static int logical_infer(struct op_call *c)
{
    for (int i = 0; i < 2; i++)
        if (c->in[i]->dtype != ONNX_DTYPE_BOOL)
            return ew_dtype_error(c, i ? "input 1" : "input 0", c->in[i]->dtype, "bool");
    if (!c->params)
        return ew_infer_broadcast(c, ONNX_DTYPE_BOOL);
    struct tensor bv;
    if (legacy_view(c, &bv))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = ONNX_DTYPE_BOOL;
    y->rank = c->in[0]->rank;
    memcpy(y->dims, c->in[0]->dims, sizeof y->dims);
    return 0;
}

static int logical_run(struct op_call *c, const ew_inner_fn *table)
{
    if (c->in[0]->dtype != ONNX_DTYPE_BOOL || c->in[1]->dtype != ONNX_DTYPE_BOOL)
        return op_error(c, "inputs must be bool");
    if (tensor_numel(c->out[0]) == 0)
        return 0;
    struct tensor bv = *c->in[1];
    if (c->params && legacy_view(c, &bv))
        return -1;
    const struct tensor *in[2] = { c->in[0], &bv };
    ew_apply(c->out[0], in, 2, table[ONNX_DTYPE_BOOL], NULL);
    return 0;
}

#define LOGICAL_OP(sym, opname, table)                                                  \
    static int sym##_cpu(struct op_call *c) { return logical_run(c, table); }           \
    const struct op_def sym = {                                                         \
        .domain = "", .name = opname, .since = { 1, 7 },                                \
        .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,                           \
        .parse = logical_parse, .infer = logical_infer, .cost = cost_elementwise,       \
        .kernel = { [BACKEND_CPU] = sym##_cpu },                                        \
    };

LOGICAL_OP(op_and, "And", and_fns)
LOGICAL_OP(op_or, "Or", or_fns)
LOGICAL_OP(op_xor, "Xor", xor_fns)

/* The opset-1 view of B, for the CUDA kernels (ops/cuda/elem_activation.c):
 * B itself from opset 7. */
int ew_logical_b_view(const struct op_call *c, struct tensor *bv)
{
    *bv = *c->in[1];
    return c->params ? legacy_view(c, bv) : 0;
}
