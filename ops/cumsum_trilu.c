/* ops/cumsum_trilu.c — CumSum (opsets 11, 14) and Trilu (14): the two
 * position-wise "prefix" ops of transformer masks and running sums.
 *
 * CumSum: y[..., j, ...] = sum of x along `axis` (input 1, a host scalar)
 * up to j (exclusive: before j; reverse: from the end). Sums are kept in the
 * element type, in axis order, as numpy's cumsum does; every (outer, inner)
 * line is independent, so the split over threads changes no bit. Integers
 * wrap. Gradient: the cumulative sum of dy the other way round, with the
 * same exclusive flag.
 *
 * Trilu: keeps the upper (upper=1, default) or lower triangle of the last
 * two axes, shifted by the diagonal offset k (optional input 1, host scalar,
 * default 0), and zeroes the rest; any dtype (elements move by size and the
 * zeros are zero bytes). Gradient: the same Trilu of dy. */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/shape-params.h"
#include "ops/shape-impl.h"

/* A host scalar (or 1-element tensor) of an integer type; -1 after a message. */
static int read_scalar(const struct op_call *c, const struct tensor *t, const char *what,
                       int64_t *v)
{
    if (t->dtype != ONNX_DTYPE_INT64 && t->dtype != ONNX_DTYPE_INT32)
        return op_error(c, "input '%s' must be int32 or int64, got %s", what,
                        onnx_dtype_name(t->dtype));
    if (tensor_numel(t) != 1 || t->rank > 1)
        return op_error(c, "input '%s' must be a scalar, got %lld elements of rank %d", what,
                        (long long)tensor_numel(t), t->rank);
    if (!t->data)
        return op_error(c, "input '%s' has no host data", what);
    *v = tensor_get_int(t, 0);
    return 0;
}

/* ---- CumSum ------------------------------------------------------------------ */

static int cumsum_parse(const struct onnx_node *node, int version, void **params, char *err,
                        size_t err_size)
{
    (void)version;
    struct cumsum_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    int64_t e = onnx_node_attr_int(node, "exclusive", 0), r = onnx_node_attr_int(node, "reverse", 0);
    if ((e != 0 && e != 1) || (r != 0 && r != 1)) {
        free(p);
        return shape_parse_error(err, err_size, node, "exclusive (%lld) and reverse (%lld) must be 0 or 1",
                                 (long long)e, (long long)r);
    }
    p->exclusive = (int)e;
    p->reverse = (int)r;
    *params = p;
    return 0;
}

#define CUMSUM_TYPES "float, double, int32, int64, uint32, uint64"

int cumsum_plan(const struct op_call *c, int *axis)
{
    const struct tensor *x = c->in[0];
    int64_t a = 0;
    if (read_scalar(c, c->in[1], "axis", &a))
        return -1;
    *axis = op_axis(a, x->rank);
    if (*axis < 0)
        return op_error(c, "axis %lld is out of range for input of rank %d", (long long)a, x->rank);
    return 0;
}

static int cumsum_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    int axis;
    int dt = x->dtype;
    if (dt != ONNX_DTYPE_FLOAT && dt != ONNX_DTYPE_DOUBLE && dt != ONNX_DTYPE_INT32 &&
        dt != ONNX_DTYPE_INT64 && dt != ONNX_DTYPE_UINT32 && dt != ONNX_DTYPE_UINT64)
        return ew_dtype_error(c, "input 0", dt, CUMSUM_TYPES);
    if (x->rank < 1)
        return op_error(c, "input 0 must have rank >= 1, got a scalar");
    if (cumsum_plan(c, &axis))
        return -1;
    struct tensor *y = c->out[0];
    *y = *x;
    y->data = NULL;
    return 0;
}

/* One line of the walk: n positions `inner` elements apart, each step adding
 * a contiguous run of `inner`. */
#define CUMSUM_DEF(T, W, SFX)                                                           \
    static void cumsum_##SFX(const T *x, T *y, int64_t n, int64_t inner, int excl,       \
                             int rev)                                                    \
    {                                                                                    \
        for (int64_t s = 0; s < n; s++) {                                                \
            int64_t j = rev ? n - 1 - s : s, pj = rev ? j + 1 : j - 1;                   \
            T *yr = y + j * inner;                                                       \
            if (s == 0) {                                                                \
                for (int64_t k = 0; k < inner; k++)                                      \
                    yr[k] = excl ? (T)0 : x[j * inner + k];                              \
                continue;                                                                \
            }                                                                            \
            const T *yp = y + pj * inner, *xs = x + (excl ? pj : j) * inner;             \
            for (int64_t k = 0; k < inner; k++)                                          \
                yr[k] = (T)((W)yp[k] + (W)xs[k]);                                        \
        }                                                                                \
    }
CUMSUM_DEF(float, float, f32)
CUMSUM_DEF(double, double, f64)
CUMSUM_DEF(int32_t, uint32_t, i32)
CUMSUM_DEF(int64_t, uint64_t, i64)
CUMSUM_DEF(uint32_t, uint32_t, u32)
CUMSUM_DEF(uint64_t, uint64_t, u64)

static int cumsum_cpu(struct op_call *c)
{
    const struct cumsum_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    int axis;
    if (cumsum_plan(c, &axis))
        return -1;
    int64_t outer = shape_prod(x->dims, 0, axis), n = x->dims[axis];
    int64_t inner = shape_prod(x->dims, axis + 1, x->rank);
    if (tensor_numel(x) == 0)
        return 0;
    size_t es = onnx_dtype_size(x->dtype);
    int excl = p ? p->exclusive : 0, rev = p ? p->reverse : 0;
    int par = tensor_numel(x) >= EW_PARALLEL_MIN && outer > 1;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t o = 0; o < outer; o++) {
        const char *xs = (const char *)x->data + (size_t)(o * n * inner) * es;
        char *ys = (char *)y->data + (size_t)(o * n * inner) * es;
        switch (x->dtype) {
        case ONNX_DTYPE_FLOAT: cumsum_f32((const void *)xs, (void *)ys, n, inner, excl, rev); break;
        case ONNX_DTYPE_DOUBLE: cumsum_f64((const void *)xs, (void *)ys, n, inner, excl, rev); break;
        case ONNX_DTYPE_INT32: cumsum_i32((const void *)xs, (void *)ys, n, inner, excl, rev); break;
        case ONNX_DTYPE_INT64: cumsum_i64((const void *)xs, (void *)ys, n, inner, excl, rev); break;
        case ONNX_DTYPE_UINT32: cumsum_u32((const void *)xs, (void *)ys, n, inner, excl, rev); break;
        default: cumsum_u64((const void *)xs, (void *)ys, n, inner, excl, rev); break;
        }
    }
    return 0;
}

static int cumsum_grad(struct grad_ctx *g)
{
    const struct cumsum_params *p = g->fwd->params;
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    struct onnx_attr attrs[2] = { shape_attr_int("exclusive", p ? p->exclusive : 0),
                                  shape_attr_int("reverse", p ? !p->reverse : 1) };
    int in[2] = { g->dy[0], g->in[1] }, dx;
    if (g->emit(g, "CumSum", attrs, 2, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_cumsum = {
    .domain = "", .name = "CumSum",
    .since = { 11, 14 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = cumsum_parse,
    .infer = cumsum_infer,
    .cost = cost_elementwise,
    .kernel = { [BACKEND_CPU] = cumsum_cpu },
    .host_inputs = 1u << 1,
    .grad = cumsum_grad,
    .grad_saves_in = 1u << 1,
};

/* ---- Trilu ------------------------------------------------------------------- */

static int trilu_parse(const struct onnx_node *node, int version, void **params, char *err,
                       size_t err_size)
{
    (void)version;
    struct trilu_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    int64_t u = onnx_node_attr_int(node, "upper", 1);
    if (u != 0 && u != 1) {
        free(p);
        return shape_parse_error(err, err_size, node, "upper is %lld; expected 0 or 1", (long long)u);
    }
    p->upper = (int)u;
    *params = p;
    return 0;
}

int trilu_plan(const struct op_call *c, int64_t *k)
{
    *k = 0;
    if (c->n_in > 1 && c->in[1])
        return read_scalar(c, c->in[1], "k", k);
    return 0;
}

static int trilu_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    int64_t k;
    if (x->rank < 2)
        return op_error(c, "input 0 must have rank >= 2, got %d", x->rank);
    if (onnx_dtype_size(x->dtype) == 0)
        return op_error(c, "unsupported element type %s", onnx_dtype_name(x->dtype));
    if (trilu_plan(c, &k))
        return -1;
    struct tensor *y = c->out[0];
    *y = *x;
    y->data = NULL;
    return 0;
}

/* First kept column of row i, and one past the last: upper keeps j >= i + k,
 * lower keeps j <= i + k. Clamped to [0, cols]. */
static void trilu_row_span(int upper, int64_t k, int64_t i, int64_t cols, int64_t *lo, int64_t *hi)
{
    int64_t a = upper ? i + k : 0, b = upper ? cols : i + k + 1;
    *lo = a < 0 ? 0 : a > cols ? cols : a;
    *hi = b < 0 ? 0 : b > cols ? cols : b;
    if (*hi < *lo)
        *hi = *lo;
}

static int trilu_cpu(struct op_call *c)
{
    const struct trilu_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    int64_t k;
    if (trilu_plan(c, &k))
        return -1;
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    int64_t mats = shape_prod(x->dims, 0, x->rank - 2);
    size_t es = onnx_dtype_size(x->dtype);
    int upper = p ? p->upper : 1;
    if (tensor_numel(x) == 0)
        return 0;
    int par = tensor_size_bytes(x) > SHAPE_PARALLEL_BYTES;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t r = 0; r < mats * rows; r++) {
        int64_t i = r % rows, lo, hi;
        trilu_row_span(upper, k, i, cols, &lo, &hi);
        const char *xs = (const char *)x->data + (size_t)(r * cols) * es;
        char *ys = (char *)y->data + (size_t)(r * cols) * es;
        memset(ys, 0, (size_t)lo * es);
        memcpy(ys + (size_t)lo * es, xs + (size_t)lo * es, (size_t)(hi - lo) * es);
        memset(ys + (size_t)hi * es, 0, (size_t)(cols - hi) * es);
    }
    return 0;
}

static int trilu_grad(struct grad_ctx *g)
{
    const struct trilu_params *p = g->fwd->params;
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    struct onnx_attr a = shape_attr_int("upper", p ? p->upper : 1);
    int has_k = g->fwd->n_in > 1 && g->in[1] >= 0;
    int in[2] = { g->dy[0], has_k ? g->in[1] : -1 }, dx;
    if (g->emit(g, "Trilu", &a, 1, has_k ? 2 : 1, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_trilu = {
    .domain = "", .name = "Trilu",
    .since = { 14 },
    .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = trilu_parse,
    .infer = trilu_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = trilu_cpu },
    .host_inputs = 1u << 1,
    .grad = trilu_grad,
    .grad_saves_in = 1u << 1,
};
