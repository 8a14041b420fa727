/* ops/softmax.c — Softmax and LogSoftmax (opsets 1, 11, 13) for float and
 * double. Before opset 13 the input is coerced to 2-D at `axis` (default 1):
 * each row is everything from `axis` on, flattened. From 13 the operation
 * runs along the single axis `axis` (default -1). Both forms become
 * [outer, len, inner] with the reduction over len: inner == 1 is a
 * contiguous row; otherwise columns are processed in blocks of SM_BLOCK so
 * that the loops over a block stay contiguous and vectorise. The maximum is
 * subtracted first, so large inputs do not overflow. The gradient kernels
 * SoftmaxGrad and LogSoftmaxGrad read the output Y and use the same rows. */
/* Lets GCC if-convert the clamps in ew_expf and vectorise the loops around
 * it: with trapping math on, speculating an FP op that "might trap" is not
 * allowed. We never unmask FP exceptions, so results are unchanged. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
#include <string.h>
#include <tgmath.h>

#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

#define SM_BLOCK 64

#define SM_LANES 16

#define SOFTMAX_IMPL(T, SUFFIX, SUM, EXP)                                              \
    /* Row maximum in SM_LANES independent lanes, so that the loop vectorises. */      \
    static T softmax_max_##SUFFIX(const T *x, int64_t len)                             \
    {                                                                                  \
        T lane[SM_LANES];                                                              \
        for (int j = 0; j < SM_LANES; j++)                                             \
            lane[j] = x[0];                                                            \
        int64_t i = 0;                                                                 \
        for (; i + SM_LANES <= len; i += SM_LANES)                                     \
            for (int j = 0; j < SM_LANES; j++)                                         \
                lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];                     \
        for (; i < len; i++)                                                           \
            lane[0] = x[i] > lane[0] ? x[i] : lane[0];                                 \
        T m = lane[0];                                                                 \
        for (int j = 1; j < SM_LANES; j++)                                             \
            m = lane[j] > m ? lane[j] : m;                                             \
        return m;                                                                      \
    }                                                                                  \
    static void softmax_rows_##SUFFIX(const T *x, T *y, int64_t len, int log_out)      \
    {                                                                                  \
        T m = softmax_max_##SUFFIX(x, len);                                            \
        for (int64_t i = 0; i < len; i++)                                              \
            y[i] = EXP(x[i] - m);                                                      \
        T s = SUM(y, len);                                                             \
        if (log_out) {                                                                 \
            T shift = m + log(s);                                                      \
            for (int64_t i = 0; i < len; i++)                                          \
                y[i] = x[i] - shift;                                                   \
        } else {                                                                       \
            for (int64_t i = 0; i < len; i++)                                          \
                y[i] = y[i] / s;                                                       \
        }                                                                              \
    }                                                                                  \
    /* Columns [j0, j0+w) of one [len, inner] slab. */                                 \
    static void softmax_cols_##SUFFIX(const T *x, T *y, int64_t len, int64_t inner,    \
                                      int64_t w, int log_out)                          \
    {                                                                                  \
        T m[SM_BLOCK], s[SM_BLOCK];                                                    \
        for (int64_t j = 0; j < w; j++) {                                              \
            m[j] = x[j];                                                               \
            s[j] = 0;                                                                  \
        }                                                                              \
        for (int64_t k = 1; k < len; k++)                                              \
            for (int64_t j = 0; j < w; j++)                                            \
                m[j] = x[k * inner + j] > m[j] ? x[k * inner + j] : m[j];              \
        for (int64_t k = 0; k < len; k++)                                              \
            for (int64_t j = 0; j < w; j++) {                                          \
                T e = EXP(x[k * inner + j] - m[j]);                                    \
                y[k * inner + j] = e;                                                  \
                s[j] += e;                                                             \
            }                                                                          \
        if (log_out) {                                                                 \
            for (int64_t j = 0; j < w; j++)                                            \
                m[j] += log(s[j]);                                                     \
            for (int64_t k = 0; k < len; k++)                                          \
                for (int64_t j = 0; j < w; j++)                                        \
                    y[k * inner + j] = x[k * inner + j] - m[j];                        \
        } else {                                                                       \
            for (int64_t k = 0; k < len; k++)                                          \
                for (int64_t j = 0; j < w; j++)                                        \
                    y[k * inner + j] = y[k * inner + j] / s[j];                        \
        }                                                                              \
    }                                                                                  \
    static void softmax_run_##SUFFIX(const T *x, T *y, int64_t outer, int64_t len,     \
                                     int64_t inner, int log_out)                       \
    {                                                                                  \
        int64_t total = outer * len * inner;                                           \
        if (inner == 1) {                                                              \
            _Pragma("omp parallel for schedule(static) if (total >= EW_PARALLEL_MIN)") \
            for (int64_t o = 0; o < outer; o++)                                        \
                softmax_rows_##SUFFIX(x + o * len, y + o * len, len, log_out);         \
            return;                                                                    \
        }                                                                              \
        int64_t blocks = (inner + SM_BLOCK - 1) / SM_BLOCK;                            \
        _Pragma("omp parallel for schedule(static) if (total >= EW_PARALLEL_MIN)")     \
        for (int64_t t = 0; t < outer * blocks; t++) {                                 \
            int64_t o = t / blocks, j0 = (t % blocks) * SM_BLOCK;                      \
            int64_t w = inner - j0 < SM_BLOCK ? inner - j0 : SM_BLOCK;                 \
            size_t base = (size_t)(o * len * inner + j0);                              \
            softmax_cols_##SUFFIX(x + base, y + base, len, inner, w, log_out);         \
        }                                                                              \
    }

SOFTMAX_IMPL(float, f32, ew_sum_f32, ew_expf)
SOFTMAX_IMPL(double, f64, ew_sum_f64, exp)

static int softmax_parse(const struct onnx_node *node, int version, void **params, char *err,
                         size_t err_size)
{
    struct softmax_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->coerce_2d = version < 13;
    p->axis = (int)onnx_node_attr_int(node, "axis", p->coerce_2d ? 1 : -1);
    p->log = !strcmp(node->op_type, "LogSoftmax");
    return 0;
}

/* [outer, len, inner] of the call; -1 if the axis is out of range. */
static int softmax_geometry(const struct op_call *c, int64_t *outer, int64_t *len, int64_t *inner)
{
    const struct softmax_params *p = c->params;
    const struct tensor *x = c->in[0];
    int axis = op_axis(p->axis, x->rank);
    if (axis < 0)
        return op_error(c, "axis %d is out of range for input of rank %d", p->axis, x->rank);
    *outer = *len = *inner = 1;
    for (int i = 0; i < axis; i++)
        *outer *= x->dims[i];
    if (p->coerce_2d) {
        for (int i = axis; i < x->rank; i++)
            *len *= x->dims[i];
    } else {
        *len = x->dims[axis];
        for (int i = axis + 1; i < x->rank; i++)
            *inner *= x->dims[i];
    }
    return 0;
}

static int softmax_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    int64_t outer, len, inner;
    if (!c->params)
        return op_error(c, "called without parsed attributes");
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "input 0", x->dtype, "float, double");
    if (softmax_geometry(c, &outer, &len, &inner))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = x->rank;
    memcpy(y->dims, x->dims, sizeof y->dims);
    return 0;
}

static int softmax_cpu(struct op_call *c)
{
    const struct softmax_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    int64_t outer = 1, len = 1, inner = 1;   /* set by softmax_geometry; GCC cannot tell */
    if (softmax_geometry(c, &outer, &len, &inner))
        return -1;
    if (tensor_numel(x) == 0)
        return 0;
    if (x->dtype == ONNX_DTYPE_FLOAT)
        softmax_run_f32(x->data, y->data, outer, len, inner, p->log);
    else if (x->dtype == ONNX_DTYPE_DOUBLE)
        softmax_run_f64(x->data, y->data, outer, len, inner, p->log);
    else
        return ew_dtype_error(c, "input 0", x->dtype, "float, double");
    return 0;
}

/* max, subtract, exp (weighted as 8), sum, divide */
static struct op_cost softmax_cost(const struct op_call *c) { return ew_cost_scaled(c, 12); }

/* ---- gradients --------------------------------------------------------------
 * SoftmaxGrad(dy, Y) = Y * (dy - sum(dy * Y)) and LogSoftmaxGrad(dy, Y) =
 * dy - exp(Y) * sum(dy), the sums over the same rows as the forward (same
 * `axis`, and `coerce_2d` = 1 for the opset < 13 semantics). Rows reuse the
 * output as the buffer of the products so that the sum is the forward's
 * lane-wise deterministic one; column blocks accumulate in row order. */

#define SOFTMAX_GRAD_IMPL(T, SUFFIX, SUM, EXP)                                         \
    static void softmax_grad_rows_##SUFFIX(const T *dy, const T *y, T *dx, int64_t len, \
                                           int log_in)                                 \
    {                                                                                  \
        T s;                                                                           \
        if (log_in) {                                                                  \
            s = SUM(dy, len);                                                          \
            for (int64_t i = 0; i < len; i++)                                          \
                dx[i] = dy[i] - EXP(y[i]) * s;                                         \
        } else {                                                                       \
            for (int64_t i = 0; i < len; i++)                                          \
                dx[i] = dy[i] * y[i];                                                  \
            s = SUM(dx, len);                                                          \
            for (int64_t i = 0; i < len; i++)                                          \
                dx[i] = y[i] * (dy[i] - s);                                            \
        }                                                                              \
    }                                                                                  \
    static void softmax_grad_cols_##SUFFIX(const T *dy, const T *y, T *dx, int64_t len, \
                                           int64_t inner, int64_t w, int log_in)       \
    {                                                                                  \
        T s[SM_BLOCK];                                                                 \
        for (int64_t j = 0; j < w; j++)                                                \
            s[j] = 0;                                                                  \
        for (int64_t k = 0; k < len; k++)                                              \
            for (int64_t j = 0; j < w; j++)                                            \
                s[j] += log_in ? dy[k * inner + j] : dy[k * inner + j] * y[k * inner + j]; \
        for (int64_t k = 0; k < len; k++)                                              \
            for (int64_t j = 0; j < w; j++) {                                          \
                int64_t e = k * inner + j;                                             \
                dx[e] = log_in ? dy[e] - EXP(y[e]) * s[j] : y[e] * (dy[e] - s[j]);     \
            }                                                                          \
    }                                                                                  \
    static void softmax_grad_run_##SUFFIX(const T *dy, const T *y, T *dx, int64_t outer, \
                                          int64_t len, int64_t inner, int log_in)      \
    {                                                                                  \
        int64_t total = outer * len * inner;                                           \
        if (inner == 1) {                                                              \
            _Pragma("omp parallel for schedule(static) if (total >= EW_PARALLEL_MIN)") \
            for (int64_t o = 0; o < outer; o++)                                        \
                softmax_grad_rows_##SUFFIX(dy + o * len, y + o * len, dx + o * len, len, \
                                           log_in);                                    \
            return;                                                                    \
        }                                                                              \
        int64_t blocks = (inner + SM_BLOCK - 1) / SM_BLOCK;                            \
        _Pragma("omp parallel for schedule(static) if (total >= EW_PARALLEL_MIN)")     \
        for (int64_t t = 0; t < outer * blocks; t++) {                                 \
            int64_t o = t / blocks, j0 = (t % blocks) * SM_BLOCK;                      \
            int64_t w = inner - j0 < SM_BLOCK ? inner - j0 : SM_BLOCK;                 \
            size_t base = (size_t)(o * len * inner + j0);                              \
            softmax_grad_cols_##SUFFIX(dy + base, y + base, dx + base, len, inner, w,   \
                                       log_in);                                        \
        }                                                                              \
    }

SOFTMAX_GRAD_IMPL(float, f32, ew_sum_f32, ew_expf)
SOFTMAX_GRAD_IMPL(double, f64, ew_sum_f64, exp)

static int softmax_grad_parse(const struct onnx_node *node, int version, void **params,
                              char *err, size_t err_size)
{
    (void)version;
    struct softmax_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->coerce_2d = onnx_node_attr_int(node, "coerce_2d", 0) != 0;
    p->axis = (int)onnx_node_attr_int(node, "axis", -1);
    p->log = !strcmp(node->op_type, "LogSoftmaxGrad");
    return 0;
}

static int softmax_grad_infer(struct op_call *c)
{
    const struct tensor *dy = c->in[0], *y = c->in[1];
    if (y->dtype != dy->dtype || !tensor_same_shape(dy, y))
        return op_error(c, "dy and Y must have the same dtype and shape");
    return softmax_infer(c);
}

static int softmax_grad_cpu(struct op_call *c)
{
    const struct softmax_params *p = c->params;
    const struct tensor *dy = c->in[0], *y = c->in[1];
    struct tensor *dx = c->out[0];
    int64_t outer = 1, len = 1, inner = 1;   /* set by softmax_geometry; GCC cannot tell */
    if (softmax_geometry(c, &outer, &len, &inner))
        return -1;
    if (tensor_numel(dy) == 0)
        return 0;
    if (dy->dtype == ONNX_DTYPE_FLOAT)
        softmax_grad_run_f32(dy->data, y->data, dx->data, outer, len, inner, p->log);
    else if (dy->dtype == ONNX_DTYPE_DOUBLE)
        softmax_grad_run_f64(dy->data, y->data, dx->data, outer, len, inner, p->log);
    else
        return ew_dtype_error(c, "dy", dy->dtype, "float, double");
    return 0;
}

static struct op_cost softmax_grad_cost(const struct op_call *c) { return ew_cost_scaled(c, 4); }

const struct op_def op_softmax_grad = {
    .domain = "dtrexec", .name = "SoftmaxGrad", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = softmax_grad_parse, .infer = softmax_grad_infer, .cost = softmax_grad_cost,
    .kernel = { [BACKEND_CPU] = softmax_grad_cpu },
};

const struct op_def op_log_softmax_grad = {
    .domain = "dtrexec", .name = "LogSoftmaxGrad", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = softmax_grad_parse, .infer = softmax_grad_infer, .cost = softmax_grad_cost,
    .kernel = { [BACKEND_CPU] = softmax_grad_cpu },
};

/* Both read the output Y only. */
static int softmax_grad(struct grad_ctx *g)
{
    const struct softmax_params *p = g->fwd->params;
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    struct onnx_attr a[2] = {
        { .name = "axis", .type = ONNX_ATTR_INT, .i = p->axis },
        { .name = "coerce_2d", .type = ONNX_ATTR_INT, .i = p->coerce_2d },
    };
    int dx, in[2] = { g->dy[0], g->out[0] };
    if (g->emit(g, p->log ? "LogSoftmaxGrad" : "SoftmaxGrad", a, 2, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_softmax = {
    .domain = "", .name = "Softmax", .since = { 1, 11, 13 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = softmax_parse, .infer = softmax_infer, .cost = softmax_cost,
    .kernel = { [BACKEND_CPU] = softmax_cpu },
    .grad = softmax_grad, .grad_saves_out = 1u,
};

const struct op_def op_log_softmax = {
    .domain = "", .name = "LogSoftmax", .since = { 1, 11, 13 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = softmax_parse, .infer = softmax_infer, .cost = softmax_cost,
    .kernel = { [BACKEND_CPU] = softmax_cpu },
    .grad = softmax_grad, .grad_saves_out = 1u,
};
