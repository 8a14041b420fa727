/* ops/reduce_ext.c — the reductions beyond Sum/Mean/Max/Min (ops/reduce.c):
 * ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare (opsets 1, 11, 13, 18) and
 * ReduceLogSum, ReduceLogSumExp (1, 11, 13, 18, 28).
 *
 * Axes, keepdims and noop_with_empty_axes are read as ops/reduce.c reads
 * them (ew_reduce_mask: the attribute before opset 18, input 1 from 18). With
 * noop_with_empty_axes and no axes nothing is combined but the element map
 * still applies, as in the ONNX reference (ReduceSumSquare squares, ReduceL1
 * takes |x|, ReduceLogSum the log). An empty reduction gives the identity:
 * 1 for Prod, 0 for the sums, log 0 = -inf for LogSum and LogSumExp.
 *
 * Each output is one sequential walk over its reduced elements in row-major
 * order, accumulated in double for floating inputs (in wrapping 64-bit
 * integers for integer Prod/L1/SumSquare); outputs are independent, so the
 * thread split never changes a bit. LogSumExp subtracts the group's maximum
 * first, so large inputs do not overflow.
 *
 * Gradients go through one kernel, ReduceExtGrad (domain dtrexec), with dy
 * and Y reshaped to the keepdims shape: dx = dy * d(kind), where d is 2x for
 * SumSquare, sign(x) for L1, x / y for L2 (0 where y = 0, as PyTorch's
 * norm), 1 / sum = exp(-y) for LogSum, exp(x - y) for LogSumExp, and for
 * Prod the product of the group's other elements, computed from the count of
 * zeros and the product of the non-zero ones (no division by a zero).
 * CUDA kernels: ops/cuda/elem_reduce_ext.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

/* The values are ABI: the CUDA kernels (ops/cuda/elem_reduce_ext_kernels.cu)
 * and the ReduceExtGrad `kind` attribute use them. */
enum rx_kind { RX_PROD, RX_L1, RX_L2, RX_SUM_SQUARE, RX_LOG_SUM, RX_LOG_SUM_EXP, RX_KIND_COUNT };

static const char *const rx_names[RX_KIND_COUNT] = {
    "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp",
};

#define RX_TYPES "float, double, int32, int64, uint32, uint64"

static int rx_dtype_ok(int dtype)
{
    return dtype == ONNX_DTYPE_FLOAT || dtype == ONNX_DTYPE_DOUBLE || dtype == ONNX_DTYPE_INT32 ||
           dtype == ONNX_DTYPE_INT64 || dtype == ONNX_DTYPE_UINT32 || dtype == ONNX_DTYPE_UINT64;
}

/* ---- geometry: kept and reduced axes ------------------------------------- */

/* The outputs are the kept coordinates in row-major order; `red_off` lists
 * the element offsets (from a group's first element) of the reduced ones,
 * in row-major order, `count` of them. */
struct rx_geom {
    int nk;
    int64_t kdims[TENSOR_MAX_RANK], kstrides[TENSOR_MAX_RANK];
    int64_t count;
    int64_t *red_off;
};

static int rx_geom_init(const struct op_call *c, struct rx_geom *g, const struct tensor *x,
                        const int *mask)
{
    int64_t st[TENSOR_MAX_RANK], s = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= x->dims[i];
    }
    memset(g, 0, sizeof *g);
    g->count = 1;
    int nr = 0;
    int64_t rdims[TENSOR_MAX_RANK], rstr[TENSOR_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        if (mask[i]) {
            rdims[nr] = x->dims[i];
            rstr[nr++] = st[i];
            g->count *= x->dims[i];
        } else {
            g->kdims[g->nk] = x->dims[i];
            g->kstrides[g->nk++] = st[i];
        }
    }
    size_t bytes = sizeof(int64_t) * (size_t)(g->count ? g->count : 1);
    g->red_off = c->env && c->env->scratch_alloc ? c->env->scratch_alloc(c->env->ctx, bytes) : NULL;
    if (!g->red_off)
        return op_error(c, "no scratch memory for %zu bytes of reduction offsets", bytes);
    int64_t idx[TENSOR_MAX_RANK] = { 0 }, off = 0;
    for (int64_t k = 0; k < g->count; k++) {
        g->red_off[k] = off;
        for (int a = nr - 1; a >= 0; a--) {
            off += rstr[a];
            if (++idx[a] < rdims[a])
                break;
            off -= rstr[a] * rdims[a];
            idx[a] = 0;
        }
    }
    return 0;
}

static void rx_geom_free(const struct op_call *c, struct rx_geom *g)
{
    if (g->red_off)
        c->env->scratch_free(c->env->ctx, g->red_off);
    g->red_off = NULL;
}

/* Offset in x of the first element of output o's group. */
static inline int64_t rx_base(const struct rx_geom *g, int64_t o)
{
    int64_t base = 0;
    for (int a = g->nk - 1; a >= 0; a--) {
        int64_t q = o / g->kdims[a];
        base += (o - q * g->kdims[a]) * g->kstrides[a];
        o = q;
    }
    return base;
}

/* ---- forward ---------------------------------------------------------------- */

static double rx_load(const void *x, int dtype, int64_t i)
{
    switch (dtype) {
    case ONNX_DTYPE_FLOAT: return ((const float *)x)[i];
    case ONNX_DTYPE_DOUBLE: return ((const double *)x)[i];
    case ONNX_DTYPE_INT32: return ((const int32_t *)x)[i];
    case ONNX_DTYPE_INT64: return (double)((const int64_t *)x)[i];
    case ONNX_DTYPE_UINT32: return ((const uint32_t *)x)[i];
    default: return (double)((const uint64_t *)x)[i];
    }
}

static uint64_t rx_load_int(const void *x, int dtype, int64_t i)
{
    switch (dtype) {
    case ONNX_DTYPE_INT32: return (uint64_t)(int64_t)((const int32_t *)x)[i];
    case ONNX_DTYPE_INT64: return (uint64_t)((const int64_t *)x)[i];
    case ONNX_DTYPE_UINT32: return ((const uint32_t *)x)[i];
    default: return ((const uint64_t *)x)[i];
    }
}

static void rx_store(void *y, int dtype, int64_t o, double v)
{
    switch (dtype) {
    case ONNX_DTYPE_FLOAT: ((float *)y)[o] = (float)v; break;
    case ONNX_DTYPE_DOUBLE: ((double *)y)[o] = v; break;
    case ONNX_DTYPE_INT32: ((int32_t *)y)[o] = ew_sat_i32(v); break;
    case ONNX_DTYPE_INT64: ((int64_t *)y)[o] = ew_sat_i64(v); break;
    case ONNX_DTYPE_UINT32: ((uint32_t *)y)[o] = ew_sat_u32(v); break;
    default: ((uint64_t *)y)[o] = ew_sat_u64(v); break;
    }
}

static void rx_store_int(void *y, int dtype, int64_t o, uint64_t v)
{
    switch (dtype) {
    case ONNX_DTYPE_INT32: ((int32_t *)y)[o] = (int32_t)(uint32_t)v; break;
    case ONNX_DTYPE_INT64: ((int64_t *)y)[o] = (int64_t)v; break;
    case ONNX_DTYPE_UINT32: ((uint32_t *)y)[o] = (uint32_t)v; break;
    default: ((uint64_t *)y)[o] = v; break;
    }
}

/* One output: its group is x[base + red_off[k]], k < count. */
static double rx_group(int kind, const void *x, int dtype, int64_t base, const int64_t *off,
                       int64_t n)
{
    double acc = kind == RX_PROD ? 1.0 : 0.0;
    switch (kind) {
    case RX_PROD:
        for (int64_t k = 0; k < n; k++)
            acc *= rx_load(x, dtype, base + off[k]);
        return acc;
    case RX_L1:
        for (int64_t k = 0; k < n; k++)
            acc += fabs(rx_load(x, dtype, base + off[k]));
        return acc;
    case RX_L2:
    case RX_SUM_SQUARE:
        for (int64_t k = 0; k < n; k++) {
            double v = rx_load(x, dtype, base + off[k]);
            acc += v * v;
        }
        return kind == RX_L2 ? sqrt(acc) : acc;
    case RX_LOG_SUM:
        for (int64_t k = 0; k < n; k++)
            acc += rx_load(x, dtype, base + off[k]);
        return log(acc);
    default: {
        double m = -INFINITY;
        for (int64_t k = 0; k < n; k++) {
            double v = rx_load(x, dtype, base + off[k]);
            if (v > m || v != v)
                m = v;
        }
        if (isinf(m) || m != m)
            return m;
        for (int64_t k = 0; k < n; k++)
            acc += exp(rx_load(x, dtype, base + off[k]) - m);
        return m + log(acc);
    }
    }
}

/* Integer Prod, L1 and SumSquare wrap like numpy's integer arithmetic. */
static uint64_t rx_group_int(int kind, const void *x, int dtype, int64_t base, const int64_t *off,
                             int64_t n)
{
    uint64_t acc = kind == RX_PROD ? 1 : 0;
    int sgn = dtype == ONNX_DTYPE_INT32 || dtype == ONNX_DTYPE_INT64;
    for (int64_t k = 0; k < n; k++) {
        uint64_t v = rx_load_int(x, dtype, base + off[k]);
        if (kind == RX_PROD)
            acc *= v;
        else if (kind == RX_L1)
            acc += sgn && (int64_t)v < 0 ? (uint64_t)0 - v : v;
        else
            acc += v * v;
    }
    return acc;
}

static int rx_mask(const struct op_call *c, int *mask)
{
    int noop;
    if (ew_reduce_mask(c, mask, &noop))
        return -1;
    if (noop)
        for (int i = 0; i < c->in[0]->rank; i++)
            mask[i] = 0;
    return 0;
}

static int rx_infer(struct op_call *c)
{
    const struct reduce_params *p = c->params;
    const struct tensor *x = c->in[0];
    int mask[TENSOR_MAX_RANK];
    if (!p)
        return op_error(c, "called without parsed attributes");
    if (!rx_dtype_ok(x->dtype))
        return ew_dtype_error(c, "input 0", x->dtype, RX_TYPES);
    if (rx_mask(c, mask))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (!mask[i])
            y->dims[y->rank++] = x->dims[i];
        else if (p->keepdims)
            y->dims[y->rank++] = 1;
    }
    return 0;
}

static int rx_cpu(struct op_call *c)
{
    const struct reduce_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    int mask[TENSOR_MAX_RANK];
    if (!rx_dtype_ok(x->dtype))
        return ew_dtype_error(c, "input 0", x->dtype, RX_TYPES);
    if (rx_mask(c, mask))
        return -1;
    int64_t out_n = tensor_numel(y);
    if (out_n == 0)
        return 0;
    struct rx_geom g;
    if (rx_geom_init(c, &g, x, mask))
        return -1;
    const int kind = p->kind, dt = x->dtype;
    const int integer = dt != ONNX_DTYPE_FLOAT && dt != ONNX_DTYPE_DOUBLE &&
                        (kind == RX_PROD || kind == RX_L1 || kind == RX_SUM_SQUARE);
    const int big = tensor_numel(x) >= EW_PARALLEL_MIN && out_n > 1;
#pragma omp parallel for schedule(static) if (big)
    for (int64_t o = 0; o < out_n; o++) {
        int64_t base = rx_base(&g, o);
        if (integer)
            rx_store_int(y->data, dt, o, rx_group_int(kind, x->data, dt, base, g.red_off, g.count));
        else
            rx_store(y->data, dt, o, rx_group(kind, x->data, dt, base, g.red_off, g.count));
    }
    rx_geom_free(c, &g);
    return 0;
}

static struct op_cost rx_cost(const struct op_call *c)
{
    const struct reduce_params *p = c->params;
    struct op_cost cost = cost_memory(c);
    int kind = p ? p->kind : RX_PROD;
    double per = kind == RX_LOG_SUM_EXP ? 12.0 : kind == RX_L2 || kind == RX_SUM_SQUARE ? 2.0 : 1.0;
    cost.flops = per * (double)tensor_numel(c->in[0]);
    return cost;
}

/* ---- ReduceExtGrad (domain dtrexec) ------------------------------------------
 * Inputs dy, X and (for L2, LogSum, LogSumExp, Prod) Y, with dy and Y in the
 * keepdims shape; output dX of X's shape and dtype (float or double). */

static int rx_grad_parse(const struct onnx_node *node, int version, void **params, char *err,
                         size_t err_size)
{
    (void)version;
    struct reduce_ext_grad_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    int64_t k = onnx_node_attr_int(node, "kind", -1);
    if (k < 0 || k >= RX_KIND_COUNT) {
        free(p);
        *params = NULL;
        return ew_parse_error(err, err_size, "attribute 'kind' is %lld; expected 0..%d",
                              (long long)k, RX_KIND_COUNT - 1);
    }
    p->kind = (int)k;
    return 0;
}

static int rx_grad_needs_y(int kind)
{
    return kind == RX_L2 || kind == RX_LOG_SUM || kind == RX_LOG_SUM_EXP || kind == RX_PROD;
}

static int rx_grad_infer(struct op_call *c)
{
    const struct reduce_ext_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *x = c->in[1];
    const struct tensor *y = c->n_in > 2 ? c->in[2] : NULL;
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "X", x->dtype, "float, double");
    if (rx_grad_needs_y(p->kind) && !y)
        return op_error(c, "%s's gradient needs Y (input 2)", rx_names[p->kind]);
    if (dy->dtype != x->dtype || (y && y->dtype != x->dtype))
        return op_error(c, "dy, X and Y must share one dtype");
    if (dy->rank != x->rank || (y && !tensor_same_shape(dy, y)))
        return op_error(c, "dy and Y must have X's rank and one shape (the keepdims shape)");
    for (int i = 0; i < x->rank; i++)
        if (dy->dims[i] != 1 && dy->dims[i] != x->dims[i])
            return op_error(c, "dy's axis %d (%lld) is neither 1 nor X's extent %lld", i,
                            (long long)dy->dims[i], (long long)x->dims[i]);
    struct tensor *dx = c->out[0];
    dx->dtype = x->dtype;
    dx->rank = x->rank;
    memcpy(dx->dims, x->dims, sizeof dx->dims);
    return 0;
}

#define RX_GRAD_DEF(T, SFX)                                                             \
    static void rx_grad_group_##SFX(int kind, const T *x, T *dx, double dyv, double yv,  \
                                    int64_t base, const int64_t *off, int64_t n)         \
    {                                                                                    \
        if (kind == RX_PROD) {                                                           \
            int64_t zeros = 0;                                                           \
            double nz = 1.0;                                                             \
            for (int64_t k = 0; k < n; k++) {                                            \
                double v = x[base + off[k]];                                             \
                if (v == 0)                                                              \
                    zeros++;                                                             \
                else                                                                     \
                    nz *= v;                                                             \
            }                                                                            \
            for (int64_t k = 0; k < n; k++) {                                            \
                double v = x[base + off[k]];                                             \
                double others = zeros == 0 ? nz / v : zeros == 1 && v == 0 ? nz : 0.0;   \
                dx[base + off[k]] = (T)(dyv * others);                                   \
            }                                                                            \
            return;                                                                      \
        }                                                                                \
        double e = kind == RX_LOG_SUM ? exp(-yv) : 0.0;                                  \
        for (int64_t k = 0; k < n; k++) {                                                \
            double v = x[base + off[k]], d;                                              \
            switch (kind) {                                                              \
            case RX_L1: d = v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; break;                     \
            case RX_L2: d = yv == 0 ? 0.0 : v / yv; break;                               \
            case RX_SUM_SQUARE: d = 2.0 * v; break;                                      \
            case RX_LOG_SUM: d = e; break;                                               \
            default: d = exp(v - yv); break;                                             \
            }                                                                            \
            dx[base + off[k]] = (T)(dyv * d);                                            \
        }                                                                                \
    }
RX_GRAD_DEF(float, f32)
RX_GRAD_DEF(double, f64)

static int rx_grad_cpu(struct op_call *c)
{
    const struct reduce_ext_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *x = c->in[1];
    const struct tensor *y = c->n_in > 2 ? c->in[2] : NULL;
    struct tensor *dx = c->out[0];
    int mask[TENSOR_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        mask[i] = dy->dims[i] == 1;
    int64_t out_n = tensor_numel(dy);
    if (tensor_numel(x) == 0)
        return 0;
    struct rx_geom g;
    if (rx_geom_init(c, &g, x, mask))
        return -1;
    const int dbl = x->dtype == ONNX_DTYPE_DOUBLE;
    const int big = tensor_numel(x) >= EW_PARALLEL_MIN && out_n > 1;
#pragma omp parallel for schedule(static) if (big)
    for (int64_t o = 0; o < out_n; o++) {
        int64_t base = rx_base(&g, o);
        if (dbl)
            rx_grad_group_f64(p->kind, x->data, dx->data, ((const double *)dy->data)[o],
                              y ? ((const double *)y->data)[o] : 0.0, base, g.red_off, g.count);
        else
            rx_grad_group_f32(p->kind, x->data, dx->data, ((const float *)dy->data)[o],
                              y ? ((const float *)y->data)[o] : 0.0, base, g.red_off, g.count);
    }
    rx_geom_free(c, &g);
    return 0;
}

const struct op_def op_reduce_ext_grad = {
    .domain = "dtrexec", .name = "ReduceExtGrad", .since = { 1 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = rx_grad_parse,
    .infer = rx_grad_infer, .cost = cost_elementwise,
    .kernel = { [BACKEND_CPU] = rx_grad_cpu },
};

/* ---- gradient emitter ------------------------------------------------------- */

/* Reshapes h to `rank` dims unless it has them (allowzero keeps 0 extents). */
static int rx_reshape(struct grad_ctx *g, int h, int rank, const int64_t *dims, int *out)
{
    const struct tensor *t = g->shape(g, h);
    if (t && t->rank == rank && !memcmp(t->dims, dims, sizeof(int64_t) * (size_t)rank)) {
        *out = h;
        return 0;
    }
    int shape_h = grad_const_i64(g, rank, dims);
    if (shape_h < 0)
        return -1;
    struct onnx_attr az = { .name = "allowzero", .type = ONNX_ATTR_INT, .i = 1 };
    int in[2] = { h, shape_h };
    return g->emit(g, "Reshape", &az, 1, 2, in, 1, out);
}

static int rx_grad(struct grad_ctx *g)
{
    const struct op_call *c = g->fwd;
    const struct reduce_params *p = c->params;
    const struct tensor *x = c->in[0];
    int mask[TENSOR_MAX_RANK];
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return grad_error(g, "only float and double inputs are differentiable, not %s",
                          onnx_dtype_name(x->dtype));
    if (rx_mask(c, mask))
        return grad_error(g, "%s", c->env && c->env->err ? c->env->err : "bad axes");
    int64_t kept[TENSOR_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        kept[i] = mask[i] ? 1 : x->dims[i];
    int dyk, yk = -1, dx;
    if (rx_reshape(g, g->dy[0], x->rank, kept, &dyk))
        return -1;
    int need_y = rx_grad_needs_y(p->kind);
    if (need_y && rx_reshape(g, g->out[0], x->rank, kept, &yk))
        return -1;
    struct onnx_attr kind = { .name = "kind", .type = ONNX_ATTR_INT, .i = p->kind };
    int in[3] = { dyk, g->in[0], yk };
    if (g->emit(g, "ReduceExtGrad", &kind, 1, need_y ? 3 : 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

/* ---- parsing and definitions ------------------------------------------------ */

static int rx_parse(const struct onnx_node *node, int version, void **params, char *err,
                    size_t err_size, int kind)
{
    struct reduce_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->kind = kind;
    p->keepdims = onnx_node_attr_int(node, "keepdims", 1) != 0;
    p->noop_with_empty_axes = onnx_node_attr_int(node, "noop_with_empty_axes", 0) != 0;
    p->axes_from_input = version >= 18;
    int n = onnx_node_attr_ints(node, "axes", p->axes, TENSOR_MAX_RANK);
    if (n == -2 || (n >= 0 && p->axes_from_input)) {
        free(p);
        *params = NULL;
        if (n == -2)
            return ew_parse_error(err, err_size, "attribute 'axes' has more than %d entries",
                                  TENSOR_MAX_RANK);
        return ew_parse_error(err, err_size, "attribute 'axes' is not allowed from opset 18 on "
                              "(the axes are input 1)");
    }
    p->n_axes = n < 0 ? 0 : n;
    return 0;
}

/* X (bit 0) is read by every gradient but LogSum's, and the axes input (bit
 * 1) is saved too: it is tiny, and without it keepdims=0 shapes are
 * ambiguous. Y is saved where the derivative reads it. */
#define RX_DEF(sym, opname, kind, saves_in, saves_out, ...)                              \
    static int sym##_parse(const struct onnx_node *node, int version, void **params,     \
                           char *err, size_t err_size)                                   \
    {                                                                                    \
        return rx_parse(node, version, params, err, err_size, kind);                     \
    }                                                                                    \
    const struct op_def sym = {                                                          \
        .domain = "", .name = opname, .since = { __VA_ARGS__ },                          \
        .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1,                            \
        .parse = sym##_parse, .infer = rx_infer, .cost = rx_cost,                        \
        .kernel = { [BACKEND_CPU] = rx_cpu },                                            \
        .host_inputs = 1u << 1,                                                          \
        .grad = rx_grad, .grad_saves_in = saves_in, .grad_saves_out = saves_out,         \
    };

RX_DEF(op_reduce_prod, "ReduceProd", RX_PROD, 3u, 1u, 1, 11, 13, 18)
RX_DEF(op_reduce_l1, "ReduceL1", RX_L1, 3u, 0u, 1, 11, 13, 18)
RX_DEF(op_reduce_l2, "ReduceL2", RX_L2, 3u, 1u, 1, 11, 13, 18)
RX_DEF(op_reduce_sum_square, "ReduceSumSquare", RX_SUM_SQUARE, 3u, 0u, 1, 11, 13, 18)
RX_DEF(op_reduce_log_sum, "ReduceLogSum", RX_LOG_SUM, 3u, 1u, 1, 11, 13, 18, 28)
RX_DEF(op_reduce_log_sum_exp, "ReduceLogSumExp", RX_LOG_SUM_EXP, 3u, 1u, 1, 11, 13, 18, 28)
