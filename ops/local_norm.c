/* ops/local_norm.c — the normalizations that ops/batch_norm.c and
 * layer_norm.c do not hold:
 *
 *  - LRN (opsets 1, 13): local response normalization across channels,
 *    y = x / (bias + alpha / size * S)^beta with S the sum of x^2 over the
 *    channels c - floor((size-1)/2) .. c + ceil((size-1)/2) that exist;
 *    input N x C x D1 ... (rank >= 3). Gradient LRNGrad(dy, X):
 *    dx_i = dy_i t_i^-beta - 2 alpha beta / size * x_i * sum over the j
 *    whose window holds i of dy_j x_j t_j^(-beta-1), t = bias + alpha/size S.
 *  - MeanVarianceNormalization (9, 13): over `axes` (default 0, 2, 3),
 *    y = (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9), the ONNX function's
 *    own formula (the epsilon outside the root). Gradient
 *    MeanVarianceNormalizationGrad(dy, X): with c = x - E[x], s the root
 *    and d = s + 1e-9, dx = (dy - E[dy]) / d - c E[dy c] / (s d^2) (the
 *    second term 0 where s = 0).
 *
 * float and double; statistics accumulate in double, in index order, so
 * the result is deterministic and the CUDA kernels (ops/cuda/misc.c, one
 * thread per line or group) compute the same sums in the same order. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/misc-impl.h"
#include "ops/misc-params.h"

#define FLOATS_LIST "float, double"

/* ---- LRN ------------------------------------------------------------------------- */

static int lrn_parse(const struct onnx_node *node, int version, void **params, char *err,
                     size_t err_size)
{
    (void)version;
    const struct onnx_attr *sz = onnx_node_attr(node, "size");
    if (!sz || sz->type != ONNX_ATTR_INT || sz->i < 1)
        return ew_parse_error(err, err_size, "attribute size (a positive int) is required");
    struct lrn_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->size = sz->i;
    p->alpha = onnx_node_attr_float(node, "alpha", 1e-4f);
    p->beta = onnx_node_attr_float(node, "beta", 0.75f);
    p->bias = onnx_node_attr_float(node, "bias", 1.0f);
    return 0;
}

void misc_lrn_geom(const struct op_call *c, int64_t *n, int64_t *ch, int64_t *inner)
{
    const struct tensor *x = c->in[c->n_in - 1];
    *n = x->dims[0];
    *ch = x->dims[1];
    *inner = 1;
    for (int i = 2; i < x->rank; i++)
        *inner *= x->dims[i];
}

/* t_j = bias + alpha / size * (sum of x^2 over j's window), x a channel
 * line of stride st */
#define LRN_T(D) EW_T_##D
#define LRN_DEF(unused, D)                                                              \
    static LRN_T(D) lrn_t_##D(const struct lrn_params *p, int64_t ch, int64_t st,       \
                              const LRN_T(D) *x, int64_t j)                             \
    {                                                                                   \
        const int64_t lo = (p->size - 1) / 2, hi = p->size - 1 - lo;                    \
        const int64_t b = j - lo < 0 ? 0 : j - lo, e = j + hi >= ch ? ch - 1 : j + hi;  \
        LRN_T(D) s = 0;                                                                 \
        for (int64_t k = b; k <= e; k++)                                                \
            s += x[k * st] * x[k * st];                                                 \
        return (LRN_T(D))p->bias + (LRN_T(D))p->alpha / (LRN_T(D))p->size * s;          \
    }                                                                                   \
    static void lrn_line_##D(const struct lrn_params *p, int64_t ch, int64_t st,        \
                             const LRN_T(D) *x, LRN_T(D) *y)                            \
    {                                                                                   \
        for (int64_t j = 0; j < ch; j++)                                                \
            y[j * st] = x[j * st] / pow(lrn_t_##D(p, ch, st, x, j), (LRN_T(D))p->beta); \
    }                                                                                   \
    static void lrn_grad_line_##D(const struct lrn_params *p, int64_t ch, int64_t st,   \
                                  const LRN_T(D) *dy, const LRN_T(D) *x, LRN_T(D) *dx)  \
    {                                                                                   \
        const int64_t lo = (p->size - 1) / 2, hi = p->size - 1 - lo;                    \
        const LRN_T(D) beta = (LRN_T(D))p->beta;                                        \
        const LRN_T(D) k2 = (LRN_T(D))2 * (LRN_T(D))p->alpha * beta / (LRN_T(D))p->size; \
        for (int64_t i = 0; i < ch; i++) {                                              \
            const int64_t b = i - hi < 0 ? 0 : i - hi, e = i + lo >= ch ? ch - 1 : i + lo; \
            LRN_T(D) acc = 0;                                                           \
            for (int64_t j = b; j <= e; j++)                                            \
                acc += dy[j * st] * x[j * st] *                                         \
                       pow(lrn_t_##D(p, ch, st, x, j), -beta - (LRN_T(D))1);            \
            dx[i * st] = dy[i * st] * pow(lrn_t_##D(p, ch, st, x, i), -beta) -          \
                         k2 * x[i * st] * acc;                                          \
        }                                                                               \
    }
EW_FLOAT_TYPES(LRN_DEF, _)

static int lrn_infer(struct op_call *c)
{
    const struct tensor *x = c->in[c->n_in - 1];
    char d[128];
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "X", x->dtype, FLOATS_LIST);
    if (x->rank < 3)
        return op_error(c, "input %s must be N x C x D1 ... (rank 3 or more)",
                        tensor_describe(x, d, sizeof d));
    if (c->n_in == 2 && (c->in[0]->dtype != x->dtype || !tensor_same_shape(c->in[0], x)))
        return op_error(c, "dy %s must have X's dtype and shape",
                        tensor_describe(c->in[0], d, sizeof d));
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = x->rank;
    memcpy(y->dims, x->dims, sizeof y->dims);
    return 0;
}

static int lrn_cpu(struct op_call *c)
{
    const struct lrn_params *p = c->params;
    const int grad = c->n_in == 2;
    const struct tensor *x = c->in[c->n_in - 1];
    int64_t n, ch, inner;
    misc_lrn_geom(c, &n, &ch, &inner);
    for (int64_t b = 0; b < n; b++)
        for (int64_t i = 0; i < inner; i++) {
            const int64_t base = b * ch * inner + i;
            if (x->dtype == ONNX_DTYPE_FLOAT) {
                const float *xs = (const float *)x->data + base;
                float *y = (float *)c->out[0]->data + base;
                if (grad)
                    lrn_grad_line_FLOAT(p, ch, inner, (const float *)c->in[0]->data + base, xs, y);
                else
                    lrn_line_FLOAT(p, ch, inner, xs, y);
            } else {
                const double *xs = (const double *)x->data + base;
                double *y = (double *)c->out[0]->data + base;
                if (grad)
                    lrn_grad_line_DOUBLE(p, ch, inner, (const double *)c->in[0]->data + base, xs,
                                         y);
                else
                    lrn_line_DOUBLE(p, ch, inner, xs, y);
            }
        }
    return 0;
}

static struct op_cost lrn_cost(const struct op_call *c)
{
    const struct lrn_params *p = c->params;
    return ew_cost_scaled(c, (double)(c->n_in == 2 ? p->size * p->size : p->size) * 2 + 10);
}

static int lrn_grad(struct grad_ctx *g)
{
    const struct lrn_params *p = g->fwd->params;
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    struct onnx_attr a[4] = {
        { .name = "size", .type = ONNX_ATTR_INT, .i = p->size },
        { .name = "alpha", .type = ONNX_ATTR_FLOAT, .f = p->alpha },
        { .name = "beta", .type = ONNX_ATTR_FLOAT, .f = p->beta },
        { .name = "bias", .type = ONNX_ATTR_FLOAT, .f = p->bias },
    };
    int dx, in[2] = { g->dy[0], g->in[0] };
    if (g->emit(g, "LRNGrad", a, 4, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_lrn = {
    .domain = "", .name = "LRN", .since = { 1, 13 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = lrn_parse, .infer = lrn_infer, .cost = lrn_cost,
    .kernel = { [BACKEND_CPU] = lrn_cpu },
    .grad = lrn_grad, .grad_saves_in = 1u,
};

const struct op_def op_lrn_grad = {
    .domain = "dtrexec", .name = "LRNGrad", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = lrn_parse, .infer = lrn_infer, .cost = lrn_cost,
    .kernel = { [BACKEND_CPU] = lrn_cpu },
};

/* ---- MeanVarianceNormalization ----------------------------------------------------- */

static int mvn_parse(const struct onnx_node *node, int version, void **params, char *err,
                     size_t err_size)
{
    (void)version;
    struct mvn_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    int n = onnx_node_attr_ints(node, "axes", p->axes, TENSOR_MAX_RANK);
    if (n == -2) {
        free(*params);
        *params = NULL;
        return ew_parse_error(err, err_size, "axes has more than %d entries", TENSOR_MAX_RANK);
    }
    if (n < 0) {
        p->axes[0] = 0;
        p->axes[1] = 2;
        p->axes[2] = 3;
        n = 3;
    }
    p->n_axes = n;
    return 0;
}

int misc_mvn_groups(const struct op_call *c, struct misc_groups *g)
{
    const struct mvn_params *p = c->params;
    const struct tensor *x = c->in[c->n_in - 1];
    int red[TENSOR_MAX_RANK] = { 0 };
    for (int i = 0; i < p->n_axes; i++) {
        int a = op_axis(p->axes[i], x->rank);
        if (a < 0)
            return op_error(c, "axis %lld is out of range for an input of rank %d",
                            (long long)p->axes[i], x->rank);
        if (red[a])
            return op_error(c, "axis %lld is listed twice", (long long)p->axes[i]);
        red[a] = 1;
    }
    int64_t st[TENSOR_MAX_RANK], s = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= x->dims[i];
    }
    memset(g, 0, sizeof *g);
    g->groups = g->count = 1;
    for (int i = 0; i < x->rank; i++) {
        if (red[i]) {
            g->red_dims[g->n_red] = x->dims[i];
            g->red_st[g->n_red++] = st[i];
            g->count *= x->dims[i];
        } else {
            g->kept_dims[g->n_kept] = x->dims[i];
            g->kept_st[g->n_kept++] = st[i];
            g->groups *= x->dims[i];
        }
    }
    return 0;
}

/* Offset of element r of group gi. */
static int64_t group_offset(const struct misc_groups *g, int64_t gi, int64_t r)
{
    int64_t off = 0;
    for (int k = g->n_kept - 1; k >= 0; k--) {
        off += (gi % g->kept_dims[k]) * g->kept_st[k];
        gi /= g->kept_dims[k];
    }
    for (int k = g->n_red - 1; k >= 0; k--) {
        off += (r % g->red_dims[k]) * g->red_st[k];
        r /= g->red_dims[k];
    }
    return off;
}

#define MVN_DEF(unused, D)                                                              \
    static void mvn_group_##D(const struct misc_groups *g, int64_t gi, const EW_T_##D *dy, \
                              const EW_T_##D *x, EW_T_##D *y)                           \
    {                                                                                   \
        double s1 = 0, s2 = 0;                                                          \
        for (int64_t r = 0; r < g->count; r++) {                                        \
            double v = x[group_offset(g, gi, r)];                                       \
            s1 += v;                                                                    \
            s2 += v * v;                                                                \
        }                                                                               \
        const double m = s1 / (double)g->count, var = s2 / (double)g->count - m * m;     \
        const double sd = sqrt(var > 0 ? var : 0), d = sd + 1e-9;                       \
        if (!dy) {                                                                      \
            for (int64_t r = 0; r < g->count; r++) {                                    \
                int64_t o = group_offset(g, gi, r);                                     \
                y[o] = (EW_T_##D)((x[o] - m) / d);                                      \
            }                                                                           \
            return;                                                                     \
        }                                                                               \
        double sdy = 0, sdyc = 0;                                                       \
        for (int64_t r = 0; r < g->count; r++) {                                        \
            int64_t o = group_offset(g, gi, r);                                         \
            sdy += dy[o];                                                               \
            sdyc += dy[o] * (x[o] - m);                                                 \
        }                                                                               \
        const double mdy = sdy / (double)g->count, mdyc = sdyc / (double)g->count;      \
        const double k2 = sd > 0 ? mdyc / (sd * d * d) : 0;                             \
        for (int64_t r = 0; r < g->count; r++) {                                        \
            int64_t o = group_offset(g, gi, r);                                         \
            y[o] = (EW_T_##D)((dy[o] - mdy) / d - (x[o] - m) * k2);                     \
        }                                                                               \
    }
EW_FLOAT_TYPES(MVN_DEF, _)

static int mvn_infer(struct op_call *c)
{
    const struct tensor *x = c->in[c->n_in - 1];
    char d[128];
    struct misc_groups g;
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "X", x->dtype, FLOATS_LIST);
    if (c->n_in == 2 && (c->in[0]->dtype != x->dtype || !tensor_same_shape(c->in[0], x)))
        return op_error(c, "dy %s must have X's dtype and shape",
                        tensor_describe(c->in[0], d, sizeof d));
    if (misc_mvn_groups(c, &g))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = x->rank;
    memcpy(y->dims, x->dims, sizeof y->dims);
    return 0;
}

static int mvn_cpu(struct op_call *c)
{
    const struct tensor *x = c->in[c->n_in - 1];
    const void *dy = c->n_in == 2 ? c->in[0]->data : NULL;
    struct misc_groups g;
    if (misc_mvn_groups(c, &g))
        return -1;
    if (g.count == 0)
        return 0;
    for (int64_t gi = 0; gi < g.groups; gi++) {
        if (x->dtype == ONNX_DTYPE_FLOAT)
            mvn_group_FLOAT(&g, gi, dy, x->data, c->out[0]->data);
        else
            mvn_group_DOUBLE(&g, gi, dy, x->data, c->out[0]->data);
    }
    return 0;
}

static int mvn_grad(struct grad_ctx *g)
{
    const struct mvn_params *p = g->fwd->params;
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    struct onnx_attr a = { .name = "axes", .type = ONNX_ATTR_INTS, .n = p->n_axes,
                           .ints = (int64_t *)p->axes };
    int dx, in[2] = { g->dy[0], g->in[0] };
    if (g->emit(g, "MeanVarianceNormalizationGrad", &a, 1, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

static struct op_cost mvn_cost(const struct op_call *c)
{
    return ew_cost_scaled(c, c->n_in == 2 ? 8 : 5);
}

const struct op_def op_mean_variance_normalization = {
    .domain = "", .name = "MeanVarianceNormalization", .since = { 9, 13 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = mvn_parse, .infer = mvn_infer, .cost = mvn_cost,
    .kernel = { [BACKEND_CPU] = mvn_cpu },
    .grad = mvn_grad, .grad_saves_in = 1u,
};

const struct op_def op_mean_variance_normalization_grad = {
    .domain = "dtrexec", .name = "MeanVarianceNormalizationGrad", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = mvn_parse, .infer = mvn_infer, .cost = mvn_cost,
    .kernel = { [BACKEND_CPU] = mvn_cpu },
};
