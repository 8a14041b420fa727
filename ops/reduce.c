/* ops/reduce.c — ReduceSum (opsets 1, 11, 13), ReduceMean (1, 11, 13, 18),
 * ReduceMax and ReduceMin (1, 11, 12, 13, 18, 20).
 *
 * The reduced axes come from the `axes` attribute before ReduceSum-13 and
 * before ReduceMean/Max/Min-18, and from the optional second input after
 * (its values are read at infer time: host_inputs bit 1). Empty or absent
 * axes reduce everything, unless noop_with_empty_axes=1, which makes the op
 * an identity. An empty reduction gives the identity of the operation: 0 for
 * Sum, NaN (0/0) for Mean, the lowest value (-inf for floats) for Max.
 *
 * The kernel collapses the input into groups of neighbouring axes that are
 * all reduced or all kept (axes of extent 1 dropped), then walks the prefix
 * groups in row-major order. When the last group is reduced each step folds
 * one contiguous run into one output; when it is kept each step accumulates
 * a contiguous run of inputs into a contiguous run of outputs. Every output
 * is accumulated in increasing input order whatever the thread split, so the
 * result is deterministic.
 *
 * Gradients: ReduceSum/ReduceMean reshape dy to the keepdims shape and
 * Expand it (the mean scales dy by 1/count first, while it is small);
 * ReduceMax/ReduceMin emit ReduceSelectGrad, which gives each output's dy
 * to the first element of its group equal to the output. */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

#define NUMERIC_LIST "float, double, int8, int16, int32, int64, uint8, uint16, uint32, uint64"

enum reduce_kind { REDUCE_SUM, REDUCE_MAX, REDUCE_MIN };

/* ---- typed inner steps -------------------------------------------------- */

/* One step of the walk: fold x[0..n) into y[0] (last_reduced) or
 * accumulate x[0..n) elementwise into y[0..n). */
typedef void (*reduce_step_fn)(int kind, int64_t n, const void *x, void *y, int last_reduced);

#define RSUM_INT(unused, D)                                                            \
    static inline EW_T_##D rsum_##D(const EW_T_##D *x, int64_t n)                      \
    {                                                                                  \
        EW_W_##D s = 0;                                                                \
        for (int64_t i = 0; i < n; i++)                                                \
            s += (EW_W_##D)x[i];                                                       \
        return (EW_T_##D)s;                                                            \
    }
EW_INT_TYPES(RSUM_INT, _)
static inline float rsum_FLOAT(const float *x, int64_t n) { return ew_sum_f32(x, n); }
static inline double rsum_DOUBLE(const double *x, int64_t n) { return ew_sum_f64(x, n); }
static inline uint8_t rsum_BOOL(const uint8_t *x, int64_t n) { return rsum_UINT8(x, n); }

/* NaN propagates through Max and Min (x != x is only true for NaN). */
#define REDUCE_STEP(unused, D)                                                         \
    static void reduce_step_##D(int kind, int64_t n, const void *xv, void *yv,          \
                                int last_reduced)                                      \
    {                                                                                  \
        typedef EW_T_##D T;                                                            \
        typedef EW_W_##D W;                                                            \
        const T *x = xv;                                                               \
        T *y = yv;                                                                     \
        if (last_reduced) {                                                            \
            T acc = y[0];                                                              \
            if (kind == REDUCE_SUM)                                                    \
                acc = (T)((W)acc + (W)rsum_##D(x, n));                                 \
            else if (kind == REDUCE_MAX)                                               \
                for (int64_t i = 0; i < n; i++)                                        \
                    acc = (x[i] > acc || x[i] != x[i]) ? x[i] : acc;                   \
            else                                                                       \
                for (int64_t i = 0; i < n; i++)                                        \
                    acc = (x[i] < acc || x[i] != x[i]) ? x[i] : acc;                   \
            y[0] = acc;                                                                \
        } else if (kind == REDUCE_SUM) {                                               \
            for (int64_t i = 0; i < n; i++)                                            \
                y[i] = (T)((W)y[i] + (W)x[i]);                                         \
        } else if (kind == REDUCE_MAX) {                                               \
            for (int64_t i = 0; i < n; i++)                                            \
                y[i] = (x[i] > y[i] || x[i] != x[i]) ? x[i] : y[i];                    \
        } else {                                                                       \
            for (int64_t i = 0; i < n; i++)                                            \
                y[i] = (x[i] < y[i] || x[i] != x[i]) ? x[i] : y[i];                    \
        }                                                                              \
    }                                                                                  \
    static void reduce_init_##D(int kind, int64_t n, void *yv)                          \
    {                                                                                  \
        EW_T_##D *y = yv;                                                              \
        EW_T_##D v = kind == REDUCE_SUM   ? (EW_T_##D)0                                \
                     : kind == REDUCE_MAX ? (EW_T_##D)EW_LOWEST_##D                    \
                                          : (EW_T_##D)EW_HIGHEST_##D;                  \
        for (int64_t i = 0; i < n; i++)                                                \
            y[i] = v;                                                                  \
    }                                                                                  \
    static void reduce_div_##D(int64_t n, void *yv, int64_t count)                      \
    {                                                                                  \
        EW_T_##D *y = yv;                                                              \
        for (int64_t i = 0; i < n; i++)                                                \
            y[i] = EW_ST_##D((double)y[i] / (double)count);                            \
    }
EW_NUMERIC_TYPES(REDUCE_STEP, _)
REDUCE_STEP(_, BOOL)

struct reduce_typed {
    reduce_step_fn step;
    void (*init)(int kind, int64_t n, void *y);
    void (*div)(int64_t n, void *y, int64_t count);
};
#define REDUCE_ENTRY(unused, D) \
    [ONNX_DTYPE_##D] = { reduce_step_##D, reduce_init_##D, reduce_div_##D },
static const struct reduce_typed reduce_types[EW_DTYPE_COUNT] = {
    EW_NUMERIC_TYPES(REDUCE_ENTRY, _) REDUCE_ENTRY(_, BOOL)
};

/* ---- axes ---------------------------------------------------------------- */

int ew_reduce_mask(const struct op_call *c, int *mask, int *noop)
{
    const struct reduce_params *p = c->params;
    const struct tensor *x = c->in[0];
    int64_t axes[TENSOR_MAX_RANK];
    int n_axes = 0;
    *noop = 0;
    if (p->axes_from_input) {
        const struct tensor *a = c->n_in > 1 ? c->in[1] : NULL;
        if (a) {
            if (a->dtype != ONNX_DTYPE_INT64 && a->dtype != ONNX_DTYPE_INT32)
                return op_error(c, "input 1 (axes) has dtype %s, expected int64",
                                onnx_dtype_name(a->dtype));
            int64_t n = tensor_numel(a);
            if (n > x->rank || n > TENSOR_MAX_RANK)
                return op_error(c, "input 1 (axes) has %lld entries for an input of rank %d",
                                (long long)n, x->rank);
            for (int64_t i = 0; i < n; i++)
                axes[n_axes++] = tensor_get_int(a, i);
        }
    } else {
        n_axes = p->n_axes;
        memcpy(axes, p->axes, sizeof axes);
    }
    for (int i = 0; i < x->rank; i++)
        mask[i] = n_axes == 0;
    if (n_axes == 0) {
        *noop = p->noop_with_empty_axes;
        return 0;
    }
    for (int i = 0; i < n_axes; i++) {
        int ax = op_axis(axes[i], x->rank);
        if (ax < 0)
            return op_error(c, "axis %lld is out of range for input of rank %d",
                            (long long)axes[i], x->rank);
        mask[ax] = 1;
    }
    return 0;
}

static int reduce_infer(struct op_call *c)
{
    const struct reduce_params *p = c->params;
    const struct tensor *x = c->in[0];
    int mask[TENSOR_MAX_RANK], noop;
    if (!p)
        return op_error(c, "called without parsed attributes");
    if (!(x->dtype > 0 && x->dtype < EW_DTYPE_COUNT && reduce_types[x->dtype].step) ||
        (x->dtype == ONNX_DTYPE_BOOL && p->kind == REDUCE_SUM))
        return ew_dtype_error(c, "input 0", x->dtype, NUMERIC_LIST);
    if (ew_reduce_mask(c, mask, &noop))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (noop || !mask[i])
            y->dims[y->rank++] = x->dims[i];
        else if (p->keepdims)
            y->dims[y->rank++] = 1;
    }
    return 0;
}

/* ---- the walk ------------------------------------------------------------ */

struct reduce_geom {
    int ng;                                    /* groups of axes */
    int64_t ext[TENSOR_MAX_RANK];
    int red[TENSOR_MAX_RANK];
    int64_t in_stride[TENSOR_MAX_RANK];        /* elements */
    int64_t out_stride[TENSOR_MAX_RANK];       /* 0 for reduced groups */
};

static void reduce_geom_init(struct reduce_geom *g, const struct tensor *x, const int *mask)
{
    memset(g, 0, sizeof *g);
    for (int i = 0; i < x->rank; i++) {
        if (x->dims[i] == 1)
            continue;
        if (g->ng > 0 && g->red[g->ng - 1] == mask[i]) {
            g->ext[g->ng - 1] *= x->dims[i];
        } else {
            g->ext[g->ng] = x->dims[i];
            g->red[g->ng] = mask[i];
            g->ng++;
        }
    }
    int64_t si = 1, so = 1;
    for (int k = g->ng - 1; k >= 0; k--) {
        g->in_stride[k] = si;
        si *= g->ext[k];
        g->out_stride[k] = g->red[k] ? 0 : so;
        if (!g->red[k])
            so *= g->ext[k];
    }
}

/* Steps over group-0 indices [i0_lo, i0_hi) and columns [c_lo, c_hi) of the
 * last group (the whole last group when it is reduced). */
static void reduce_walk(const struct reduce_geom *g, reduce_step_fn step, int kind,
                        const char *x, char *y, size_t es, int64_t i0_lo, int64_t i0_hi,
                        int64_t c_lo, int64_t c_hi)
{
    const int last = g->ng - 1;
    const int lr = g->red[last];
    const int64_t yc = lr ? 0 : c_lo;
    if (last == 0) {
        step(kind, c_hi - c_lo, x + (size_t)c_lo * es, y + (size_t)yc * es, lr);
        return;
    }
    for (int64_t i0 = i0_lo; i0 < i0_hi; i0++) {
        int64_t idx[TENSOR_MAX_RANK] = { 0 };
        int64_t xo = i0 * g->in_stride[0], yo = i0 * g->out_stride[0];
        for (;;) {
            step(kind, c_hi - c_lo, x + (size_t)(xo + c_lo) * es, y + (size_t)(yo + yc) * es, lr);
            int d = last - 1;
            for (; d >= 1; d--) {
                idx[d]++;
                xo += g->in_stride[d];
                yo += g->out_stride[d];
                if (idx[d] < g->ext[d])
                    break;
                xo -= g->in_stride[d] * g->ext[d];
                yo -= g->out_stride[d] * g->ext[d];
                idx[d] = 0;
            }
            if (d < 1)
                break;
        }
    }
}

#define REDUCE_COLS 1024

static int reduce_cpu(struct op_call *c)
{
    const struct reduce_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    int mask[TENSOR_MAX_RANK], noop;
    const struct reduce_typed *t =
        x->dtype > 0 && x->dtype < EW_DTYPE_COUNT ? &reduce_types[x->dtype] : NULL;
    if (!t || !t->step)
        return ew_dtype_error(c, "input 0", x->dtype, NUMERIC_LIST);
    if (ew_reduce_mask(c, mask, &noop))
        return -1;
    int64_t in_n = tensor_numel(x), out_n = tensor_numel(y), count = 1;
    for (int i = 0; i < x->rank; i++)
        if (mask[i] && !noop)
            count *= x->dims[i];
    if (out_n == 0)
        return 0;
    if (noop || count == 1) {      /* nothing is combined: the data is unchanged */
        memcpy(y->data, x->data, tensor_size_bytes(y));
        return 0;
    }
    t->init(p->kind, out_n, y->data);
    if (in_n > 0) {
        struct reduce_geom g;
        reduce_geom_init(&g, x, mask);
        const size_t es = onnx_dtype_size(x->dtype);
        const int last = g.ng - 1;
        const int64_t cols = g.ext[last];
        const int big = in_n >= EW_PARALLEL_MIN;
        if (last > 0 && !g.red[0]) {
            /* disjoint output slabs per group-0 index */
#pragma omp parallel for schedule(static) if (big)
            for (int64_t i0 = 0; i0 < g.ext[0]; i0++)
                reduce_walk(&g, t->step, p->kind, x->data, y->data, es, i0, i0 + 1, 0, cols);
        } else if (!g.red[last]) {
            /* disjoint column ranges of the kept last group */
            int64_t chunks = (cols + REDUCE_COLS - 1) / REDUCE_COLS;
#pragma omp parallel for schedule(static) if (big && chunks > 1)
            for (int64_t k = 0; k < chunks; k++) {
                int64_t hi = (k + 1) * REDUCE_COLS < cols ? (k + 1) * REDUCE_COLS : cols;
                reduce_walk(&g, t->step, p->kind, x->data, y->data, es, 0, g.ext[0],
                            k * REDUCE_COLS, hi);
            }
        } else {
            reduce_walk(&g, t->step, p->kind, x->data, y->data, es, 0, last > 0 ? g.ext[0] : 1,
                        0, cols);
        }
    }
    if (p->mean)
        t->div(out_n, y->data, count);
    return 0;
}

static struct op_cost reduce_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = (double)tensor_numel(c->in[0]);
    return cost;
}

/* ---- gradients ------------------------------------------------------------ */

/* Reshapes h to `rank` dims (skipped when it already has them) through a
 * constant shape; allowzero so that a 0 extent stays 0. */
static int reduce_grad_reshape(struct grad_ctx *g, int h, int rank, const int64_t *dims, int *out)
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

/* What every reduction's gradient emitter checks first: 0 when no gradient
 * is wanted, -1 with a message for an input that is not float/double or
 * axes that do not resolve, else 1 with the reduced-axes mask. */
static int reduce_grad_begin(struct grad_ctx *g, int *mask, int *noop)
{
    const struct op_call *c = g->fwd;
    const struct tensor *x = c->in[0];
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return grad_error(g, "only float and double inputs are differentiable, not %s",
                          onnx_dtype_name(x->dtype));
    if (ew_reduce_mask(c, mask, noop))
        return grad_error(g, "%s", c->env && c->env->err ? c->env->err : "bad axes");
    return 1;
}

/* ReduceSum and ReduceMean: dy (scaled by 1/count for the mean, while it is
 * still small) is reshaped to the keepdims shape and expanded over the
 * reduced axes. */
static int reduce_sum_grad(struct grad_ctx *g)
{
    const struct op_call *c = g->fwd;
    const struct reduce_params *p = c->params;
    const struct tensor *x = c->in[0];
    int mask[TENSOR_MAX_RANK], noop;
    int rc = reduce_grad_begin(g, mask, &noop);
    if (rc <= 0)
        return rc;
    int h = g->dy[0];
    int64_t count = 1, kept[TENSOR_MAX_RANK];
    for (int i = 0; i < x->rank; i++) {
        int red = mask[i] && !noop;
        count *= red ? x->dims[i] : 1;
        kept[i] = red ? 1 : x->dims[i];
    }
    if (p->mean && count > 1) {
        float f = (float)(1.0 / (double)count);
        double d = 1.0 / (double)count;
        struct tensor s = { .dtype = x->dtype, .rank = 0,
                            .data = x->dtype == ONNX_DTYPE_FLOAT ? (void *)&f : (void *)&d };
        int sh = g->constant(g, &s), scaled, in[2] = { h, sh };
        if (sh < 0 || g->emit(g, "Mul", NULL, 0, 2, in, 1, &scaled))
            return -1;
        h = scaled;
    }
    int r;
    if (reduce_grad_reshape(g, h, x->rank, kept, &r))
        return -1;
    if (!memcmp(kept, x->dims, sizeof(int64_t) * (size_t)x->rank))
        return g->add_dx(g, 0, r);
    int shape_h = grad_const_i64(g, x->rank, x->dims), e;
    if (shape_h < 0)
        return -1;
    int in[2] = { r, shape_h };
    if (g->emit(g, "Expand", NULL, 0, 2, in, 1, &e))
        return -1;
    return g->add_dx(g, 0, e);
}

/* ReduceSelectGrad(dy, X, Y) -> dX for ReduceMax and ReduceMin, with dy and
 * Y in the keepdims shape: each output's dy goes to the first element of its
 * reduced group (row-major order) that equals Y, the others get 0. One
 * sequential walk over X with a "taken" flag per output: deterministic, and
 * first in row-major order over X is first within every group. */
#define SELECT_GRAD_DEF(unused, D)                                                     \
    static void select_grad_##D(int rank, const int64_t *dims, const void *xv,         \
                                const void *dyv, const void *yv, void *dxv,            \
                                uint8_t *taken, const int64_t *st)                     \
    {                                                                                  \
        typedef EW_T_##D T;                                                            \
        const T *xs = xv, *dy = dyv, *y = yv;                                          \
        T *dx = dxv;                                                                   \
        int64_t idx[TENSOR_MAX_RANK] = { 0 }, o = 0, n = 1;                            \
        for (int a = 0; a < rank; a++)                                                 \
            n *= dims[a];                                                              \
        for (int64_t i = 0; i < n; i++) {                                              \
            T v = xs[i];                                                               \
            if (!taken[o] && (v == y[o] || (v != v && y[o] != y[o]))) {                \
                dx[i] = dy[o];                                                         \
                taken[o] = 1;                                                          \
            } else {                                                                   \
                dx[i] = 0;                                                             \
            }                                                                          \
            for (int a = rank - 1; a >= 0; a--) {                                      \
                o += st[a];                                                            \
                if (++idx[a] < dims[a])                                                \
                    break;                                                             \
                o -= st[a] * dims[a];                                                  \
                idx[a] = 0;                                                            \
            }                                                                          \
        }                                                                              \
    }
EW_FLOAT_TYPES(SELECT_GRAD_DEF, _)

static int select_grad_infer(struct op_call *c)
{
    const struct tensor *dy = c->in[0], *x = c->in[1], *y = c->in[2];
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "X", x->dtype, "float, double");
    if (dy->dtype != x->dtype || y->dtype != x->dtype)
        return op_error(c, "dy, X and Y must share one dtype");
    if (!tensor_same_shape(dy, y) || dy->rank != x->rank)
        return op_error(c, "dy and Y must have X's rank and one shape (the keepdims shape)");
    for (int i = 0; i < x->rank; i++)
        if (y->dims[i] != 1 && y->dims[i] != x->dims[i])
            return op_error(c, "Y's axis %d (%lld) is neither 1 nor X's extent %lld", i,
                            (long long)y->dims[i], (long long)x->dims[i]);
    struct tensor *dx = c->out[0];
    dx->dtype = x->dtype;
    dx->rank = x->rank;
    memcpy(dx->dims, x->dims, sizeof dx->dims);
    return 0;
}

static int select_grad_cpu(struct op_call *c)
{
    const struct tensor *dy = c->in[0], *x = c->in[1], *y = c->in[2];
    int64_t n_out = tensor_numel(y), st[TENSOR_MAX_RANK];
    if (tensor_numel(x) == 0)
        return 0;
    uint8_t *taken = c->env && c->env->scratch_alloc
                         ? c->env->scratch_alloc(c->env->ctx, (size_t)n_out) : NULL;
    if (!taken)
        return op_error(c, "no scratch memory for %lld flags", (long long)n_out);
    memset(taken, 0, (size_t)n_out);
    broadcast_strides(y, x, st);
    /* When axis 0 is kept its slabs touch disjoint outputs: one task each. */
    int split = x->rank > 1 && st[0] != 0;
    int64_t slabs = split ? x->dims[0] : 1, slab_n = tensor_numel(x) / slabs;
    size_t es = onnx_dtype_size(x->dtype);
    const char *xd = x->data, *dyd = dy->data, *yd = y->data;
    char *dxd = c->out[0]->data;
#pragma omp parallel for schedule(static) if (split && tensor_numel(x) >= EW_PARALLEL_MIN)
    for (int64_t i0 = 0; i0 < slabs; i0++) {
        int r = x->rank - split;
        const int64_t *dims = x->dims + split, *sts = st + split;
        size_t xo = (size_t)(i0 * slab_n) * es, yo = (size_t)(i0 * st[0]) * es;
        if (x->dtype == ONNX_DTYPE_FLOAT)
            select_grad_FLOAT(r, dims, xd + xo, dyd + yo, yd + yo, dxd + xo,
                              taken + i0 * st[0], sts);
        else
            select_grad_DOUBLE(r, dims, xd + xo, dyd + yo, yd + yo, dxd + xo,
                               taken + i0 * st[0], sts);
    }
    c->env->scratch_free(c->env->ctx, taken);
    return 0;
}

const struct op_def op_reduce_select_grad = {
    .domain = "dtrexec", .name = "ReduceSelectGrad", .since = { 1 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .infer = select_grad_infer, .cost = cost_elementwise,
    .kernel = { [BACKEND_CPU] = select_grad_cpu },
};

static int reduce_select_grad(struct grad_ctx *g)
{
    const struct op_call *c = g->fwd;
    const struct tensor *x = c->in[0];
    int mask[TENSOR_MAX_RANK], noop;
    int rc = reduce_grad_begin(g, mask, &noop);
    if (rc <= 0)
        return rc;
    if (noop)
        return g->add_dx(g, 0, g->dy[0]);
    int64_t kept[TENSOR_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        kept[i] = mask[i] ? 1 : x->dims[i];
    int dyk, yk, dx;
    if (reduce_grad_reshape(g, g->dy[0], x->rank, kept, &dyk) ||
        reduce_grad_reshape(g, g->out[0], x->rank, kept, &yk))
        return -1;
    int in[3] = { dyk, g->in[0], yk };
    if (g->emit(g, "ReduceSelectGrad", NULL, 0, 3, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

/* ---- parsing and definitions ---------------------------------------------- */

static int reduce_parse(const struct onnx_node *node, int version, void **params, char *err,
                        size_t err_size, int kind, int mean, int axes_input_since)
{
    struct reduce_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->kind = kind;
    p->mean = mean;
    p->keepdims = onnx_node_attr_int(node, "keepdims", 1) != 0;
    p->noop_with_empty_axes = onnx_node_attr_int(node, "noop_with_empty_axes", 0) != 0;
    p->axes_from_input = version >= axes_input_since;
    int n = onnx_node_attr_ints(node, "axes", p->axes, TENSOR_MAX_RANK);
    if (n == -2 || (n >= 0 && p->axes_from_input)) {
        free(p);
        *params = NULL;
        if (n == -2)
            return ew_parse_error(err, err_size, "attribute 'axes' has more than %d entries",
                                  TENSOR_MAX_RANK);
        return ew_parse_error(err, err_size, "attribute 'axes' is not allowed from opset %d on "
                              "(the axes are input 1)", axes_input_since);
    }
    p->n_axes = n < 0 ? 0 : n;
    return 0;
}

#define REDUCE_DEF(sym, opname, kind, mean, axes_input_since, grad_fn, saves_in, saves_out,    \
                   ...)                                                                \
    static int sym##_parse(const struct onnx_node *node, int version, void **params,   \
                           char *err, size_t err_size)                                 \
    {                                                                                  \
        return reduce_parse(node, version, params, err, err_size, kind, mean,          \
                            axes_input_since);                                         \
    }                                                                                  \
    const struct op_def sym = {                                                        \
        .domain = "", .name = opname, .since = { __VA_ARGS__ },                        \
        .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 1,                          \
        .parse = sym##_parse, .infer = reduce_infer, .cost = reduce_cost,              \
        .kernel = { [BACKEND_CPU] = reduce_cpu },                                      \
        .host_inputs = 1u << 1,                                                        \
        .grad = grad_fn, .grad_saves_in = saves_in, .grad_saves_out = saves_out,        \
    };

/* The axes input (1) is saved by every gradient: it is tiny, and without it
 * keepdims=0 shapes are ambiguous. */
REDUCE_DEF(op_reduce_sum, "ReduceSum", REDUCE_SUM, 0, 13, reduce_sum_grad, 2u, 0u, 1, 11, 13)
REDUCE_DEF(op_reduce_mean, "ReduceMean", REDUCE_SUM, 1, 18, reduce_sum_grad, 2u, 0u,
           1, 11, 13, 18)
REDUCE_DEF(op_reduce_max, "ReduceMax", REDUCE_MAX, 0, 18, reduce_select_grad, 3u, 1u,
           1, 11, 12, 13, 18, 20)
REDUCE_DEF(op_reduce_min, "ReduceMin", REDUCE_MIN, 0, 18, reduce_select_grad, 3u, 1u,
           1, 11, 12, 13, 18, 20)
