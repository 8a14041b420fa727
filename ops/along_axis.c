/* ops/along_axis.c — operators that work on the lines of a tensor along one
 * axis, each line independently:
 *
 *  - Hardmax (opsets 1, 11, 13): 1 at the first maximum of the line, 0
 *    elsewhere (a NaN counts as the maximum, as in numpy.argmax). Before 13
 *    the input is seen as 2-D, [prod(dims[:axis]), prod(dims[axis:])], and
 *    the "line" is the whole second dimension; axis defaults to 1, from 13
 *    to -1. Not differentiable (piecewise constant).
 *  - LpNormalization (1, 22; p 1 or 2, axis default -1): x / ||x||_p over
 *    the line, 0 where the norm is 0 (as the reference). Gradient:
 *    LpNormalizationGrad(dy, X): dx = (dy - s * sum(dy * y)) / ||x||, s = y
 *    for p = 2 and sign(x) for p = 1 (0 on a line of zeros).
 *  - CumProd (26; attributes exclusive, reverse; axis from input 1, a
 *    host scalar): the running product, float, double, int32, int64,
 *    uint32, uint64 (integers wrap). Gradient: CumProdGrad(dy, X, axis),
 *    without division so that zeros in X are exact: with P_t the exclusive
 *    prefix product in scan order, dx_t = P_t * R_t, R_t = dy_t + x_{t+1}
 *    R_{t+1} (inclusive; exclusive: dy_{t+1} + x_{t+1} R_{t+1}, R_last = 0).
 *
 * Every line is folded in index order: deterministic. The CUDA kernels
 * (ops/cuda/misc.c) run one thread per line with the same arithmetic and
 * the same geometry (misc_axis_geom). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/misc-impl.h"
#include "ops/misc-params.h"

#define FLOATS_LIST "float, double"
#define CUMPROD_LIST "float, double, int32, int64, uint32, uint64"
#define T_(D) EW_T_##D

/* ---- geometry ------------------------------------------------------------------ */

int misc_axis_geom(const struct op_call *c, struct misc_axis_geom *g)
{
    const struct along_axis_params *p = c->params;
    const struct tensor *x = c->in[p->kind == ALONG_CUMPROD_GRAD ? 1 : 0];
    int64_t axis = p->axis;
    if (p->kind == ALONG_CUMPROD || p->kind == ALONG_CUMPROD_GRAD) {
        const struct tensor *a = c->in[p->kind == ALONG_CUMPROD ? 1 : 2];
        if ((a->dtype != ONNX_DTYPE_INT32 && a->dtype != ONNX_DTYPE_INT64) || tensor_numel(a) != 1)
            return op_error(c, "axis must be one int32 or int64 value, got %s with %lld elements",
                            onnx_dtype_name(a->dtype), (long long)tensor_numel(a));
        axis = tensor_get_int(a, 0);
    }
    int rank = x->rank;
    int ax = op_axis(axis, rank);
    if (ax < 0 && !(p->coerce_2d && axis == rank))
        return op_error(c, "axis %lld is out of range for an input of rank %d", (long long)axis,
                        rank);
    if (ax < 0)
        ax = rank;                 /* coerced to [numel, 1] */
    g->outer = g->n = g->inner = 1;
    for (int i = 0; i < rank; i++) {
        if (i < ax)
            g->outer *= x->dims[i];
        else if (i == ax || p->coerce_2d)
            g->n *= x->dims[i];
        else
            g->inner *= x->dims[i];
    }
    return 0;
}

/* ---- kernels per dtype: one line at base, stride `inner` ------------------------ */

#define HARDMAX_DEF(unused, D)                                                          \
    static void hardmax_line_##D(int64_t n, int64_t st, const T_(D) *x, T_(D) *y)       \
    {                                                                                   \
        int64_t best = 0;                                                               \
        T_(D) bv = x[0];                                                                \
        for (int64_t k = 1; k < n; k++) {                                               \
            T_(D) v = x[k * st];                                                        \
            if (v > bv || (v != v && bv == bv)) {                                       \
                best = k;                                                               \
                bv = v;                                                                 \
            }                                                                           \
        }                                                                               \
        for (int64_t k = 0; k < n; k++)                                                 \
            y[k * st] = k == best ? (T_(D))1 : (T_(D))0;                                \
    }

/* sum |x|^p, then the p-th root */
#define LPNORM_DEF(unused, D)                                                           \
    static T_(D) lp_norm_##D(int p, int64_t n, int64_t st, const T_(D) *x)              \
    {                                                                                   \
        T_(D) s = 0;                                                                    \
        for (int64_t k = 0; k < n; k++)                                                 \
            s += p == 1 ? (T_(D))fabs(x[k * st]) : x[k * st] * x[k * st];               \
        return p == 1 ? s : (T_(D))sqrt(s);                                             \
    }                                                                                   \
    static void lpnorm_line_##D(int p, int64_t n, int64_t st, const T_(D) *x, T_(D) *y) \
    {                                                                                   \
        const T_(D) nrm = lp_norm_##D(p, n, st, x);                                     \
        for (int64_t k = 0; k < n; k++)                                                 \
            y[k * st] = nrm == 0 ? (T_(D))0 : x[k * st] / nrm;                          \
    }                                                                                   \
    static void lpnorm_grad_line_##D(int p, int64_t n, int64_t st, const T_(D) *dy,     \
                                     const T_(D) *x, T_(D) *dx)                         \
    {                                                                                   \
        const T_(D) nrm = lp_norm_##D(p, n, st, x);                                     \
        if (nrm == 0) {                                                                 \
            for (int64_t k = 0; k < n; k++)                                             \
                dx[k * st] = 0;                                                         \
            return;                                                                     \
        }                                                                               \
        T_(D) dot = 0;                                                                  \
        for (int64_t k = 0; k < n; k++)                                                 \
            dot += dy[k * st] * (x[k * st] / nrm);                                      \
        for (int64_t k = 0; k < n; k++) {                                               \
            const T_(D) v = x[k * st];                                                  \
            const T_(D) s = p == 2 ? v / nrm : (T_(D))((v > 0) - (v < 0));              \
            dx[k * st] = (dy[k * st] - s * dot) / nrm;                                  \
        }                                                                               \
    }

/* Element t of the scan is k = t, or n - 1 - t when reversed. Integers
 * multiply in their wrapping type (EW_W_). */
#define CUMPROD_DEF(unused, D)                                                          \
    static void cumprod_line_##D(int excl, int rev, int64_t n, int64_t st,              \
                                 const T_(D) *x, T_(D) *y)                              \
    {                                                                                   \
        EW_W_##D acc = 1;                                                               \
        for (int64_t t = 0; t < n; t++) {                                               \
            const int64_t k = (rev ? n - 1 - t : t) * st;                               \
            if (excl) {                                                                 \
                y[k] = (T_(D))acc;                                                      \
                acc = (EW_W_##D)(acc * (EW_W_##D)x[k]);                                 \
            } else {                                                                    \
                acc = (EW_W_##D)(acc * (EW_W_##D)x[k]);                                 \
                y[k] = (T_(D))acc;                                                      \
            }                                                                           \
        }                                                                               \
    }
#define CUMPROD_GRAD_DEF(unused, D)                                                     \
    static void cumprod_grad_line_##D(int excl, int rev, int64_t n, int64_t st,         \
                                      const T_(D) *dy, const T_(D) *x, T_(D) *dx)       \
    {                                                                                   \
        T_(D) r = 0, next = 0;                                                          \
        for (int64_t t = n - 1; t >= 0; t--) {                                          \
            const int64_t k = (rev ? n - 1 - t : t) * st;                               \
            if (excl) {                                                                 \
                dx[k] = r;                                                              \
                r = dy[k] + x[k] * r;                                                   \
            } else {                                                                    \
                r = dy[k] + next * r;                                                   \
                dx[k] = r;                                                              \
                next = x[k];                                                            \
            }                                                                           \
        }                                                                               \
        T_(D) pre = 1;                                                                  \
        for (int64_t t = 0; t < n; t++) {                                               \
            const int64_t k = (rev ? n - 1 - t : t) * st;                               \
            dx[k] *= pre;                                                               \
            pre *= x[k];                                                                \
        }                                                                               \
    }

EW_FLOAT_TYPES(HARDMAX_DEF, _)
EW_FLOAT_TYPES(LPNORM_DEF, _)
EW_FLOAT_TYPES(CUMPROD_DEF, _)
CUMPROD_DEF(_, INT32)
CUMPROD_DEF(_, INT64)
CUMPROD_DEF(_, UINT32)
CUMPROD_DEF(_, UINT64)
EW_FLOAT_TYPES(CUMPROD_GRAD_DEF, _)

/* Runs LINE over every (outer, inner) line; the arguments after the
 * pointers' element type are passed through. */
#define FOR_LINES(g, BODY)                                                              \
    for (int64_t o = 0; o < (g).outer; o++)                                             \
        for (int64_t i = 0; i < (g).inner; i++) {                                       \
            const int64_t base = o * (g).n * (g).inner + i;                             \
            BODY;                                                                       \
        }

static int along_run(struct op_call *c)
{
    const struct along_axis_params *p = c->params;
    struct misc_axis_geom g;
    if (misc_axis_geom(c, &g))
        return -1;
    if (g.n == 0 || g.outer == 0 || g.inner == 0)
        return 0;
    const int grad = p->kind == ALONG_LPNORM_GRAD || p->kind == ALONG_CUMPROD_GRAD;
    const int dtype = c->in[grad ? 1 : 0]->dtype;
    const void *a = c->in[0]->data, *b = grad ? c->in[1]->data : NULL;
    void *out = c->out[0]->data;
#define LINES(D, CALL)                                                                  \
    case ONNX_DTYPE_##D: {                                                              \
        const T_(D) *xa = a, *xb = b;                                                   \
        T_(D) *y = out;                                                                 \
        (void)xb;                                                                       \
        FOR_LINES(g, CALL);                                                             \
        return 0;                                                                       \
    }
    switch (p->kind) {
    case ALONG_HARDMAX:
        switch (dtype) {
            LINES(FLOAT, hardmax_line_FLOAT(g.n, g.inner, xa + base, y + base))
            LINES(DOUBLE, hardmax_line_DOUBLE(g.n, g.inner, xa + base, y + base))
        }
        break;
    case ALONG_LPNORM:
        switch (dtype) {
            LINES(FLOAT, lpnorm_line_FLOAT(p->p, g.n, g.inner, xa + base, y + base))
            LINES(DOUBLE, lpnorm_line_DOUBLE(p->p, g.n, g.inner, xa + base, y + base))
        }
        break;
    case ALONG_LPNORM_GRAD:
        switch (dtype) {
            LINES(FLOAT, lpnorm_grad_line_FLOAT(p->p, g.n, g.inner, xa + base, xb + base, y + base))
            LINES(DOUBLE, lpnorm_grad_line_DOUBLE(p->p, g.n, g.inner, xa + base, xb + base,
                                                  y + base))
        }
        break;
    case ALONG_CUMPROD:
#define CP(D) LINES(D, cumprod_line_##D(p->exclusive, p->reverse, g.n, g.inner, xa + base, y + base))
        switch (dtype) {
            CP(FLOAT) CP(DOUBLE) CP(INT32) CP(INT64) CP(UINT32) CP(UINT64)
        }
#undef CP
        break;
    case ALONG_CUMPROD_GRAD:
        switch (dtype) {
            LINES(FLOAT, cumprod_grad_line_FLOAT(p->exclusive, p->reverse, g.n, g.inner,
                                                 xa + base, xb + base, y + base))
            LINES(DOUBLE, cumprod_grad_line_DOUBLE(p->exclusive, p->reverse, g.n, g.inner,
                                                   xa + base, xb + base, y + base))
        }
        break;
    }
#undef LINES
    return ew_dtype_error(c, "input", dtype,
                          p->kind == ALONG_CUMPROD ? CUMPROD_LIST : FLOATS_LIST);
}

/* ---- parse, infer, cost ------------------------------------------------------------ */

static int along_parse(const struct onnx_node *node, int version, void **params, char *err,
                       size_t err_size, int kind)
{
    struct along_axis_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->kind = kind;
    switch (kind) {
    case ALONG_HARDMAX:
        p->coerce_2d = version < 13;
        p->axis = onnx_node_attr_int(node, "axis", version < 13 ? 1 : -1);
        break;
    case ALONG_LPNORM:
    case ALONG_LPNORM_GRAD:
        p->axis = onnx_node_attr_int(node, "axis", -1);
        p->p = (int)onnx_node_attr_int(node, "p", 2);
        if (p->p != 1 && p->p != 2) {
            free(*params);
            *params = NULL;
            return ew_parse_error(err, err_size, "p must be 1 or 2, got %d", p->p);
        }
        break;
    default:
        p->exclusive = onnx_node_attr_int(node, "exclusive", 0) != 0;
        p->reverse = onnx_node_attr_int(node, "reverse", 0) != 0;
    }
    return 0;
}

#define PARSE_FN(name, kind)                                                            \
    static int name(const struct onnx_node *node, int version, void **params, char *err, \
                    size_t err_size)                                                    \
    {                                                                                   \
        return along_parse(node, version, params, err, err_size, kind);                 \
    }
PARSE_FN(hardmax_parse, ALONG_HARDMAX)
PARSE_FN(lpnorm_parse, ALONG_LPNORM)
PARSE_FN(lpnorm_grad_parse, ALONG_LPNORM_GRAD)
PARSE_FN(cumprod_parse, ALONG_CUMPROD)
PARSE_FN(cumprod_grad_parse, ALONG_CUMPROD_GRAD)

static int along_infer(struct op_call *c)
{
    const struct along_axis_params *p = c->params;
    const int grad = p->kind == ALONG_LPNORM_GRAD || p->kind == ALONG_CUMPROD_GRAD;
    const struct tensor *x = c->in[grad ? 1 : 0];
    int t = x->dtype;
    int ok = t == ONNX_DTYPE_FLOAT || t == ONNX_DTYPE_DOUBLE;
    if (p->kind == ALONG_CUMPROD)
        ok = ok || t == ONNX_DTYPE_INT32 || t == ONNX_DTYPE_INT64 || t == ONNX_DTYPE_UINT32 ||
             t == ONNX_DTYPE_UINT64;
    if (!ok)
        return ew_dtype_error(c, grad ? "input 1" : "input 0", t,
                              p->kind == ALONG_CUMPROD ? CUMPROD_LIST : FLOATS_LIST);
    if (grad && (c->in[0]->dtype != t || !tensor_same_shape(c->in[0], x))) {
        char a[128], b[128];
        return op_error(c, "dy %s and X %s must have the same dtype and shape",
                        tensor_describe(c->in[0], a, sizeof a), tensor_describe(x, b, sizeof b));
    }
    struct misc_axis_geom g;
    if (misc_axis_geom(c, &g))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = t;
    y->rank = x->rank;
    memcpy(y->dims, x->dims, sizeof y->dims);
    return 0;
}

static struct op_cost along_cost(const struct op_call *c)
{
    const struct along_axis_params *p = c->params;
    static const double flops[] = { [ALONG_HARDMAX] = 2, [ALONG_LPNORM] = 3,
                                    [ALONG_LPNORM_GRAD] = 8, [ALONG_CUMPROD] = 1,
                                    [ALONG_CUMPROD_GRAD] = 4 };
    return ew_cost_scaled(c, flops[p->kind]);
}

/* ---- gradients -------------------------------------------------------------------- */

static int lpnorm_grad(struct grad_ctx *g)
{
    const struct along_axis_params *p = g->fwd->params;
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    struct onnx_attr a[2] = {
        { .name = "axis", .type = ONNX_ATTR_INT, .i = p->axis },
        { .name = "p", .type = ONNX_ATTR_INT, .i = p->p },
    };
    int dx, in[2] = { g->dy[0], g->in[0] };
    if (g->emit(g, "LpNormalizationGrad", a, 2, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

static int cumprod_grad(struct grad_ctx *g)
{
    const struct along_axis_params *p = g->fwd->params;
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    struct onnx_attr a[2] = {
        { .name = "exclusive", .type = ONNX_ATTR_INT, .i = p->exclusive },
        { .name = "reverse", .type = ONNX_ATTR_INT, .i = p->reverse },
    };
    int dx, in[3] = { g->dy[0], g->in[0], g->in[1] };
    if (g->emit(g, "CumProdGrad", a, 2, 3, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_hardmax = {
    .domain = "", .name = "Hardmax", .since = { 1, 11, 13 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = hardmax_parse, .infer = along_infer, .cost = along_cost,
    .kernel = { [BACKEND_CPU] = along_run },
};

const struct op_def op_lp_normalization = {
    .domain = "", .name = "LpNormalization", .since = { 1, 22 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = lpnorm_parse, .infer = along_infer, .cost = along_cost,
    .kernel = { [BACKEND_CPU] = along_run },
    .grad = lpnorm_grad, .grad_saves_in = 1u,
};

const struct op_def op_lp_normalization_grad = {
    .domain = "dtrexec", .name = "LpNormalizationGrad", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = lpnorm_grad_parse, .infer = along_infer, .cost = along_cost,
    .kernel = { [BACKEND_CPU] = along_run },
};

const struct op_def op_cumprod = {
    .domain = "", .name = "CumProd", .since = { 26 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = cumprod_parse, .infer = along_infer, .cost = along_cost,
    .kernel = { [BACKEND_CPU] = along_run },
    .host_inputs = 2u,
    .grad = cumprod_grad, .grad_saves_in = 3u,
};

const struct op_def op_cumprod_grad = {
    .domain = "dtrexec", .name = "CumProdGrad", .since = { 1 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = cumprod_grad_parse, .infer = along_infer, .cost = along_cost,
    .kernel = { [BACKEND_CPU] = along_run },
    .host_inputs = 4u,
};
