/* ops/elementwise.c — the broadcast walker and small helpers shared by the
 * elementwise, comparison, cast, softmax and reduction families (see
 * ops/elementwise-impl.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"

void ew_plan_init(struct ew_plan *p, const struct tensor *out, const struct tensor *const *in,
                  int n_in)
{
    int64_t full[EW_MAX_OPERANDS][TENSOR_MAX_RANK];
    memset(p, 0, sizeof *p);
    p->n_ops = n_in + 1;
    p->numel = tensor_numel(out);
    broadcast_strides(out, out, full[0]);
    p->elem_size[0] = onnx_dtype_size(out->dtype);
    for (int k = 0; k < n_in; k++) {
        broadcast_strides(in[k], out, full[k + 1]);
        p->elem_size[k + 1] = onnx_dtype_size(in[k]->dtype);
    }
    /* Axes of size 1 contribute nothing; two neighbouring axes merge when
     * every operand steps through them as through one (stride of the outer
     * equals stride times extent of the inner), so a same-shape operation
     * becomes one flat run and a bias add becomes [outer, C, inner]. */
    int r = 0;
    for (int i = 0; i < out->rank; i++) {
        int64_t d = out->dims[i];
        if (d == 1)
            continue;
        int merge = r > 0;
        for (int k = 0; merge && k < p->n_ops; k++)
            if (p->strides[k][r - 1] != full[k][i] * d)
                merge = 0;
        if (merge) {
            p->dims[r - 1] *= d;
            for (int k = 0; k < p->n_ops; k++)
                p->strides[k][r - 1] = full[k][i];
        } else {
            p->dims[r] = d;
            for (int k = 0; k < p->n_ops; k++)
                p->strides[k][r] = full[k][i];
            r++;
        }
    }
    if (r == 0) {
        p->dims[0] = 1;
        for (int k = 0; k < p->n_ops; k++)
            p->strides[k][0] = 0;
        r = 1;
    }
    p->rank = r;
}

/* Task t of a plan: chunk t % chunks of row t / chunks. */
static inline void ew_task(const struct ew_plan *p, ew_inner_fn fn, const void *ctx, void *const *base,
                           const int64_t *step, int64_t chunks, int64_t t)
{
    const int r = p->rank;
    const int64_t inner = p->dims[r - 1];
    int64_t row = t / chunks, first = (t % chunks) * EW_CHUNK;
    int64_t n = inner - first < EW_CHUNK ? inner - first : EW_CHUNK;
    int64_t off[EW_MAX_OPERANDS] = { 0 };
    for (int d = r - 2; d >= 0; d--) {
        int64_t idx = row % p->dims[d];
        row /= p->dims[d];
        for (int k = 0; k < p->n_ops; k++)
            off[k] += idx * p->strides[k][d];
    }
    void *ptr[EW_MAX_OPERANDS];
    for (int k = 0; k < p->n_ops; k++)
        ptr[k] = (char *)base[k] + (size_t)(off[k] + first * step[k]) * p->elem_size[k];
    fn(ctx, n, ptr, step);
}

void ew_plan_run(const struct ew_plan *p, ew_inner_fn fn, const void *ctx, void *const *base)
{
    if (p->numel <= 0)
        return;
    const int r = p->rank;
    const int64_t inner = p->dims[r - 1];
    const int64_t rows = p->numel / inner;
    const int64_t chunks = (inner + EW_CHUNK - 1) / EW_CHUNK;
    const int64_t tasks = rows * chunks;
    int64_t step[EW_MAX_OPERANDS];
    for (int k = 0; k < p->n_ops; k++)
        step[k] = p->strides[k][r - 1] ? 1 : 0;
    step[0] = 1;
    /* A small tensor runs without entering OpenMP at all: a parallel region
     * whose `if` is false still costs libgomp a team and a futex wake, more
     * than the arithmetic of a tiny call. */
    if (p->numel >= EW_PARALLEL_MIN && tasks > 1) {
#pragma omp parallel for schedule(static)
        for (int64_t t = 0; t < tasks; t++)
            ew_task(p, fn, ctx, base, step, chunks, t);
    } else {
        for (int64_t t = 0; t < tasks; t++)
            ew_task(p, fn, ctx, base, step, chunks, t);
    }
}

void ew_apply(const struct tensor *out, const struct tensor *const *in, int n_in, ew_inner_fn fn,
              const void *ctx)
{
    struct ew_plan plan;
    void *base[EW_MAX_OPERANDS];
    ew_plan_init(&plan, out, in, n_in);
    base[0] = out->data;
    for (int k = 0; k < n_in; k++)
        base[k + 1] = in[k]->data;
    ew_plan_run(&plan, fn, ctx, base);
}

int ew_infer_broadcast(struct op_call *c, int dtype)
{
    struct tensor shape;
    char msg[256];
    memset(&shape, 0, sizeof shape);
    if (broadcast_shape(c->in, c->n_in, &shape, msg, sizeof msg))
        return op_error(c, "%s", msg);
    struct tensor *o = c->out[0];
    if (!o)
        return 0;
    o->dtype = dtype;
    o->rank = shape.rank;
    memcpy(o->dims, shape.dims, sizeof o->dims);
    return 0;
}

int ew_dtype_error(const struct op_call *c, const char *what, int dtype, const char *supported)
{
    const char *name = onnx_dtype_name(dtype);
    return op_error(c, "unsupported dtype %s (%d) for %s (supported: %s)",
                    name ? name : "?", dtype, what, supported);
}

#define EW_LANES 16

/* One definition for both widths: the lane split and the pairwise fold fix
 * the order of the additions, which the reductions' determinism depends on,
 * so the two must not drift apart. */
#define EW_SUM(T, NAME)                                                \
    T NAME(const T *x, int64_t n)                                      \
    {                                                                  \
        T acc[EW_LANES] = { 0 };                                       \
        int64_t i = 0;                                                 \
        for (; i + EW_LANES <= n; i += EW_LANES)                       \
            for (int j = 0; j < EW_LANES; j++)                         \
                acc[j] += x[i + j];                                    \
        for (int j = 0; i < n; i++, j++)                               \
            acc[j] += x[i];                                            \
        for (int w = EW_LANES / 2; w > 0; w /= 2)                      \
            for (int j = 0; j < w; j++)                                \
                acc[j] += acc[j + w];                                  \
        return acc[0];                                                 \
    }

EW_SUM(float, ew_sum_f32)
EW_SUM(double, ew_sum_f64)

struct op_cost ew_cost_scaled(const struct op_call *c, double flops_per_elem)
{
    struct op_cost cost = cost_memory(c);
    double n = 0;
    for (int i = 0; i < c->n_out; i++)
        if (c->out[i])
            n += (double)tensor_numel(c->out[i]);
    cost.flops = n * flops_per_elem;
    return cost;
}

int ew_parse_error(char *err, size_t err_size, const char *fmt, ...)
{
    if (!err || !err_size)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
    return -1;
}

void *ew_params_new(size_t size, void **params, char *err, size_t err_size)
{
    void *p = calloc(1, size);
    if (!p)
        ew_parse_error(err, err_size, "out of memory for %zu bytes of attributes", size);
    *params = p;
    return p;
}

int ew_unary_infer(struct op_call *c, const ew_inner_fn *table, const char *supported,
                   int out_dtype)
{
    const struct tensor *x = c->in[0];
    if (!EW_LOOKUP(table, x->dtype))
        return ew_dtype_error(c, "input 0", x->dtype, supported);
    struct tensor *y = c->out[0];
    y->dtype = out_dtype ? out_dtype : x->dtype;
    y->rank = x->rank;
    memcpy(y->dims, x->dims, sizeof y->dims);
    return 0;
}

int ew_ugrad_infer(struct op_call *c, const ew_inner_fn *table, const char *supported)
{
    const struct tensor *dy = c->in[0], *z = c->in[1];
    if (z->dtype != dy->dtype)
        return op_error(c, "input 1 has dtype %s but dy has %s; they must match",
                        onnx_dtype_name(z->dtype), onnx_dtype_name(dy->dtype));
    if (!tensor_same_shape(dy, z)) {
        char a[128], b[128];
        return op_error(c, "dy %s and input 1 %s must have the same shape",
                        tensor_describe(dy, a, sizeof a), tensor_describe(z, b, sizeof b));
    }
    return ew_unary_infer(c, table, supported, 0);
}

int ew_table_run(struct op_call *c, const ew_inner_fn *table, const char *supported, int n_in,
                 const void *ctx)
{
    ew_inner_fn fn = EW_LOOKUP(table, c->in[0]->dtype);
    if (!fn)
        return ew_dtype_error(c, "input 0", c->in[0]->dtype, supported);
    if (tensor_numel(c->out[0]) == 0)
        return 0;
    ew_apply(c->out[0], c->in, n_in, fn, ctx);
    return 0;
}

int ew_ugrad_emit(struct grad_ctx *g, const char *kernel, const struct onnx_attr *attrs,
                  int n_attrs, int z)
{
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    int dx, in[2] = { g->dy[0], z };
    if (g->emit(g, kernel, attrs, n_attrs, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}
