/* ops/scatter_gather_nd.c — GatherND (opsets 11, 12, 13), ScatterND (11,
 * 13, 16, 18) and their gradient kernels GatherNDGrad and ScatterGrad
 * (domain dtrexec; ScatterGrad also serves ScatterElements and Scatter,
 * ops/scatter_elements.c), with the helpers of ops/scatter-impl.h.
 *
 * GatherND: the last axis of `indices` (m values) addresses data axes
 * b..b+m-1 after the batch_dims b leading axes, which data and indices
 * share; each index tuple copies one contiguous slice of data's trailing
 * axes. ScatterND: output = data, then for each index tuple in order the
 * slice it addresses is replaced by (or combined under `reduction` with) the
 * matching slice of `updates`. Indices are int32 or int64, negative counted
 * from the end, and all are checked before anything is written.
 *
 * Updates are applied sequentially in index order, so duplicate indices give
 * one well-defined result (the last update for reduction "none"), and every
 * run the same bits.
 *
 * Gradients: GatherND's is GatherNDGrad, zeros of data's shape with each dy
 * slice added at its tuple's place, in tuple order (a deterministic
 * scatter-add). ScatterND's and ScatterElements' are one ScatterGrad call
 * giving both dData and dUpdates from the data position of every update
 * element: "none" passes dy to the last writer of a position and zeroes
 * dData there; "add" passes dy to every writer; "mul" gives each writer dy
 * times data and the other writers' product (prefix and suffix products, so
 * zeros are handled exactly); "max"/"min" give dy to whichever of data and
 * the writers (first in order on ties) was selected. */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/scatter-impl.h"
#include "ops/shape-impl.h"

/* ---- shared helpers ----------------------------------------------------------- */

int scatter_parse_common(const struct onnx_node *node, int version, void **params, char *err,
                         size_t err_size)
{
    struct scatter_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->axis = onnx_node_attr_int(node, "axis", 0);
    const char *r = onnx_node_attr_string(node, "reduction", "none");
    static const struct { const char *name; int since; } names[] = {
        [SCATTER_NONE] = { "none", 1 }, [SCATTER_ADD] = { "add", 16 }, [SCATTER_MUL] = { "mul", 16 },
        [SCATTER_MAX] = { "max", 18 }, [SCATTER_MIN] = { "min", 18 },
    };
    int found = -1;
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(r, names[i].name))
            found = i;
    if (found < 0 || version < names[found].since) {
        free(p);
        if (found < 0)
            return shape_parse_error(err, err_size, node,
                                     "reduction '%s' is not one of none, add, mul, max, min", r);
        return shape_parse_error(err, err_size, node, "reduction '%s' needs opset %d, the model has %d",
                                 r, names[found].since, version);
    }
    p->reduction = found;
    *params = p;
    return 0;
}

#define SCATTER_COMBINE_DEF(unused, D)                                                    \
    static void scatter_combine_##D(int red, void *dv, const void *sv, int64_t n)         \
    {                                                                                     \
        typedef EW_T_##D T;                                                               \
        typedef EW_W_##D W;                                                               \
        T *d = dv;                                                                        \
        const T *s = sv;                                                                  \
        switch (red) {                                                                    \
        case SCATTER_ADD:                                                                 \
            for (int64_t i = 0; i < n; i++)                                               \
                d[i] = (T)((W)d[i] + (W)s[i]);                                            \
            break;                                                                        \
        case SCATTER_MUL:                                                                 \
            for (int64_t i = 0; i < n; i++)                                               \
                d[i] = (T)((W)d[i] * (W)s[i]);                                            \
            break;                                                                        \
        case SCATTER_MAX:                                                                 \
            for (int64_t i = 0; i < n; i++)                                               \
                d[i] = s[i] > d[i] ? s[i] : d[i];                                         \
            break;                                                                        \
        default:                                                                          \
            for (int64_t i = 0; i < n; i++)                                               \
                d[i] = s[i] < d[i] ? s[i] : d[i];                                         \
            break;                                                                        \
        }                                                                                 \
    }
EW_NUMERIC_TYPES(SCATTER_COMBINE_DEF, _)

typedef void (*scatter_combine_fn)(int, void *, const void *, int64_t);
static const scatter_combine_fn scatter_combines[EW_DTYPE_COUNT] = {
    EW_NUMERIC_TYPES(EW_ENTRY, scatter_combine)
};

void scatter_combine(int reduction, int dtype, void *dst, const void *src, int64_t n)
{
    if (reduction == SCATTER_NONE) {
        memcpy(dst, src, (size_t)n * onnx_dtype_size(dtype));
        return;
    }
    scatter_combines[dtype](reduction, dst, src, n);
}

int scatter_check_dtype(const struct op_call *c, int reduction, int dtype)
{
    if (onnx_dtype_size(dtype) == 0)
        return op_error(c, "unsupported element type %s", onnx_dtype_name(dtype));
    if (reduction != SCATTER_NONE && !EW_LOOKUP(scatter_combines, dtype))
        return ew_dtype_error(c, "data", dtype,
                              "float, double, int8, int16, int32, int64, uint8, uint16, uint32, uint64");
    return 0;
}

int scatter_index_dtype(const struct op_call *c, const struct tensor *idx)
{
    if (idx->dtype != ONNX_DTYPE_INT64 && idx->dtype != ONNX_DTYPE_INT32)
        return op_error(c, "indices must be int32 or int64, got %s", onnx_dtype_name(idx->dtype));
    return 0;
}

int64_t scatter_read_index(const struct tensor *idx, int64_t i)
{
    return idx->dtype == ONNX_DTYPE_INT64 ? ((const int64_t *)idx->data)[i]
                                           : ((const int32_t *)idx->data)[i];
}

/* v normalised against extent d, or -1 after a message naming position i. */
static int64_t nd_index(const struct op_call *c, int64_t v, int64_t i, int axis, int64_t d)
{
    if (v < -d || v >= d) {
        op_error(c, "index %lld at position %lld is out of range for data axis %d of size %lld "
                 "(expected %lld..%lld)", (long long)v, (long long)i, axis, (long long)d,
                 (long long)-d, (long long)(d - 1));
        return -1;
    }
    return v < 0 ? v + d : v;
}

static int64_t data_strides(const struct tensor *t, int64_t *st)
{
    shape_strides(t, st);
    return tensor_numel(t);
}

/* ---- GatherND ----------------------------------------------------------------- */

static int gather_nd_parse(const struct onnx_node *node, int version, void **params, char *err,
                           size_t err_size)
{
    struct gather_nd_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->batch_dims = onnx_node_attr_int(node, "batch_dims", 0);
    if (p->batch_dims < 0 || (version < 12 && p->batch_dims)) {
        int64_t b = p->batch_dims;
        free(p);
        return shape_parse_error(err, err_size, node, "batch_dims is %lld; expected >= 0 (and 0 before opset 12)",
                                 (long long)b);
    }
    *params = p;
    return 0;
}

int gather_nd_geom(const struct op_call *c, int64_t batch_dims, const struct tensor *data,
                          const struct tensor *idx, struct scatter_nd_geom *g)
{
    if (scatter_index_dtype(c, idx))
        return -1;
    int r = data->rank, q = idx->rank;
    if (r < 1 || q < 1)
        return op_error(c, "data and indices must have rank >= 1 (got %d and %d)", r, q);
    if (batch_dims >= (q < r ? q : r))
        return op_error(c, "batch_dims %lld must be less than the ranks of data (%d) and indices (%d)",
                        (long long)batch_dims, r, q);
    g->b = (int)batch_dims;
    int64_t m = idx->dims[q - 1];
    if (m < 1 || m > r - g->b)
        return op_error(c, "the last axis of indices is %lld; it must be 1..%d (data rank %d minus "
                        "batch_dims %d)", (long long)m, r - g->b, r, g->b);
    g->m = (int)m;
    for (int i = 0; i < g->b; i++)
        if (data->dims[i] != idx->dims[i])
            return op_error(c, "batch axis %d: data has %lld, indices %lld; they must match", i,
                            (long long)data->dims[i], (long long)idx->dims[i]);
    g->batches = shape_prod(data->dims, 0, g->b);
    g->per_batch = shape_prod(idx->dims, g->b, q - 1);
    g->slice = shape_prod(data->dims, g->b + g->m, r);
    g->batch_stride = shape_prod(data->dims, g->b, r);
    data_strides(data, g->st);
    return 0;
}

/* Element offset in data of tuple t's slice; -1 after a message. */
static int64_t nd_tuple_base(const struct op_call *c, const struct scatter_nd_geom *g,
                             const struct tensor *data, const struct tensor *idx, int64_t t)
{
    int64_t base = (g->per_batch ? t / g->per_batch : 0) * g->batch_stride;
    for (int i = 0; i < g->m; i++) {
        int64_t v = nd_index(c, scatter_read_index(idx, t * g->m + i), t * g->m + i, g->b + i,
                             data->dims[g->b + i]);
        if (v < 0)
            return -1;
        base += v * g->st[g->b + i];
    }
    return base;
}

static int gather_nd_infer(struct op_call *c)
{
    const struct gather_nd_params *p = c->params;
    const struct tensor *x = c->in[0], *idx = c->in[1];
    struct scatter_nd_geom g;
    if (gather_nd_geom(c, p->batch_dims, x, idx, &g))
        return -1;
    int rank = idx->rank - 1 + x->rank - g.b - g.m;
    if (rank > TENSOR_MAX_RANK)
        return op_error(c, "output rank %d exceeds the maximum %d", rank, TENSOR_MAX_RANK);
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = 0;
    for (int i = 0; i < idx->rank - 1; i++)
        y->dims[y->rank++] = idx->dims[i];
    for (int i = g.b + g.m; i < x->rank; i++)
        y->dims[y->rank++] = x->dims[i];
    return 0;
}

/* Every tuple's base offset (tuples of idx in order) into a new scratch
 * array; NULL after a message. */
static int64_t *nd_bases(const struct op_call *c, const struct scatter_nd_geom *g,
                         const struct tensor *data, const struct tensor *idx, int64_t tuples)
{
    size_t bytes = sizeof(int64_t) * (size_t)(tuples ? tuples : 1);
    int64_t *b = c->env && c->env->scratch_alloc ? c->env->scratch_alloc(c->env->ctx, bytes) : NULL;
    if (!b) {
        op_error(c, "no scratch memory for %zu bytes of index offsets", bytes);
        return NULL;
    }
    for (int64_t t = 0; t < tuples; t++)
        if ((b[t] = nd_tuple_base(c, g, data, idx, t)) < 0) {
            c->env->scratch_free(c->env->ctx, b);
            return NULL;
        }
    return b;
}

static int gather_nd_cpu(struct op_call *c)
{
    const struct gather_nd_params *p = c->params;
    const struct tensor *x = c->in[0], *idx = c->in[1];
    struct scatter_nd_geom g;
    if (gather_nd_geom(c, p->batch_dims, x, idx, &g))
        return -1;
    int64_t tuples = g.batches * g.per_batch;
    int64_t *bases = nd_bases(c, &g, x, idx, tuples);
    if (!bases)
        return -1;
    size_t es = onnx_dtype_size(x->dtype), chunk = (size_t)g.slice * es;
    int par = tensor_size_bytes(c->out[0]) > SHAPE_PARALLEL_BYTES;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t t = 0; t < tuples; t++)
        memcpy((char *)c->out[0]->data + (size_t)t * chunk,
               (const char *)x->data + (size_t)bases[t] * es, chunk);
    c->env->scratch_free(c->env->ctx, bases);
    return 0;
}

static int gather_nd_grad(struct grad_ctx *g)
{
    if (!g->need_dx[0] || g->dy[0] < 0)
        return 0;
    const struct gather_nd_params *p = g->fwd->params;
    const struct tensor *x = g->fwd->in[0];
    int64_t dims[TENSOR_MAX_RANK];
    for (int a = 0; a < x->rank; a++)
        dims[a] = x->dims[a];
    struct onnx_attr attrs[2] = { shape_attr_int("batch_dims", p->batch_dims),
                                  shape_attr_ints("shape", x->rank, dims) };
    int in[2] = { g->dy[0], g->in[1] }, dx;
    if (g->emit(g, "GatherNDGrad", attrs, 2, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_gather_nd = {
    .domain = "", .name = "GatherND",
    .since = { 11, 12, 13 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = gather_nd_parse,
    .infer = gather_nd_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = gather_nd_cpu },
    .grad = gather_nd_grad,
    .grad_saves_in = 1u << 1,
};

/* ---- GatherNDGrad (domain dtrexec) --------------------------------------------- */

static int gather_nd_grad_parse(const struct onnx_node *node, int version, void **params,
                                char *err, size_t err_size)
{
    if (gather_nd_parse(node, 12, params, err, err_size))
        return -1;
    struct gather_nd_params *p = *params;
    if (shape_parse_target(node, &p->target, err, err_size)) {
        free(p);
        *params = NULL;
        return -1;
    }
    (void)version;
    return 0;
}

static int gather_nd_grad_infer(struct op_call *c)
{
    const struct gather_nd_params *p = c->params;
    const struct tensor *dy = c->in[0], *idx = c->in[1];
    struct tensor t = p->target;
    t.dtype = dy->dtype;
    struct scatter_nd_geom g;
    if (dy->dtype != ONNX_DTYPE_FLOAT && dy->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "dy must be float or double, got %s", onnx_dtype_name(dy->dtype));
    if (gather_nd_geom(c, p->batch_dims, &t, idx, &g))
        return -1;
    if (tensor_numel(dy) != g.batches * g.per_batch * g.slice)
        return op_error(c, "dy has %lld elements; the gather it stands for has %lld",
                        (long long)tensor_numel(dy), (long long)(g.batches * g.per_batch * g.slice));
    struct tensor *y = c->out[0];
    *y = t;
    y->data = NULL;
    return 0;
}

static int gather_nd_grad_cpu(struct op_call *c)
{
    const struct gather_nd_params *p = c->params;
    const struct tensor *dy = c->in[0], *idx = c->in[1];
    struct tensor *y = c->out[0];
    struct scatter_nd_geom g;
    memset(y->data, 0, tensor_size_bytes(y));
    if (gather_nd_geom(c, p->batch_dims, y, idx, &g))
        return -1;
    int64_t tuples = g.batches * g.per_batch;
    int64_t *bases = nd_bases(c, &g, y, idx, tuples);
    if (!bases)
        return -1;
    /* In tuple order: repeated tuples add up the same way on every run. */
    for (int64_t t = 0; t < tuples; t++)
        scatter_combine(SCATTER_ADD, dy->dtype,
                        (char *)y->data + (size_t)bases[t] * onnx_dtype_size(dy->dtype),
                        (const char *)dy->data + (size_t)(t * g.slice) * onnx_dtype_size(dy->dtype),
                        g.slice);
    c->env->scratch_free(c->env->ctx, bases);
    return 0;
}

static struct op_cost scatter_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = (double)tensor_numel(c->in[c->n_in > 2 ? 2 : 0]);
    return cost;
}

const struct op_def op_gather_nd_grad = {
    .domain = "dtrexec", .name = "GatherNDGrad",
    .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = gather_nd_grad_parse,
    .infer = gather_nd_grad_infer,
    .cost = scatter_cost,
    .kernel = { [BACKEND_CPU] = gather_nd_grad_cpu },
};

/* ---- ScatterND ----------------------------------------------------------------- */

int scatter_nd_check(const struct op_call *c, const struct tensor *data,
                     const struct tensor *idx, const struct tensor *upd)
{
    if (scatter_index_dtype(c, idx))
        return -1;
    int r = data->rank, q = idx->rank;
    if (r < 1 || q < 1)
        return op_error(c, "data and indices must have rank >= 1 (got %d and %d)", r, q);
    int64_t k = idx->dims[q - 1];
    if (k < 1 || k > r)
        return op_error(c, "the last axis of indices is %lld; it must be 1..%d (the data's rank)",
                        (long long)k, r);
    int ok = upd->rank == q - 1 + r - (int)k && upd->dtype == data->dtype;
    for (int i = 0; ok && i < q - 1; i++)
        ok = upd->dims[i] == idx->dims[i];
    for (int i = (int)k; ok && i < r; i++)
        ok = upd->dims[q - 1 + i - (int)k] == data->dims[i];
    if (!ok) {
        char a[128], b[128], u[128];
        return op_error(c, "updates %s do not match indices %s and data %s (expected "
                        "indices.shape[:-1] + data.shape[k:] and data's dtype)",
                        tensor_describe(upd, u, sizeof u), tensor_describe(idx, b, sizeof b),
                        tensor_describe(data, a, sizeof a));
    }
    return 0;
}

int scatter_nd_positions(const struct op_call *c, const struct tensor *data,
                         const struct tensor *idx, const struct tensor *upd, int64_t *pos)
{
    struct scatter_nd_geom g;
    memset(&g, 0, sizeof g);
    g.m = (int)idx->dims[idx->rank - 1];
    g.per_batch = shape_prod(idx->dims, 0, idx->rank - 1);
    g.batch_stride = 0;
    data_strides(data, g.st);
    int64_t slice = shape_prod(data->dims, g.m, data->rank);
    for (int64_t t = 0; t < g.per_batch; t++) {
        int64_t base = nd_tuple_base(c, &g, data, idx, t);
        if (base < 0)
            return -1;
        for (int64_t s = 0; s < slice; s++)
            pos[t * slice + s] = base + s;
    }
    (void)upd;
    return 0;
}

static int scatter_nd_infer(struct op_call *c)
{
    const struct scatter_params *p = c->params;
    const struct tensor *x = c->in[0];
    if (scatter_nd_check(c, x, c->in[1], c->in[2]) || scatter_check_dtype(c, p->reduction, x->dtype))
        return -1;
    struct tensor *y = c->out[0];
    *y = *x;
    y->data = NULL;
    return 0;
}

static int scatter_nd_cpu(struct op_call *c)
{
    const struct scatter_params *p = c->params;
    const struct tensor *x = c->in[0], *idx = c->in[1], *upd = c->in[2];
    struct tensor *y = c->out[0];
    if (scatter_nd_check(c, x, idx, upd) || scatter_check_dtype(c, p->reduction, x->dtype))
        return -1;
    struct scatter_nd_geom g;
    memset(&g, 0, sizeof g);
    g.m = (int)idx->dims[idx->rank - 1];
    g.batches = 1;
    g.per_batch = shape_prod(idx->dims, 0, idx->rank - 1);
    data_strides(x, g.st);
    int64_t *bases = nd_bases(c, &g, x, idx, g.per_batch);
    if (!bases)
        return -1;
    size_t es = onnx_dtype_size(x->dtype);
    int64_t slice = shape_prod(x->dims, g.m, x->rank);
    memcpy(y->data, x->data, tensor_size_bytes(x));
    for (int64_t t = 0; t < g.per_batch; t++)
        scatter_combine(p->reduction, x->dtype, (char *)y->data + (size_t)bases[t] * es,
                        (const char *)upd->data + (size_t)(t * slice) * es, slice);
    c->env->scratch_free(c->env->ctx, bases);
    return 0;
}

static int scatter_nd_parse(const struct onnx_node *node, int version, void **params, char *err,
                            size_t err_size)
{
    return scatter_parse_common(node, version, params, err, err_size);
}

static int scatter_nd_grad(struct grad_ctx *g)
{
    const struct scatter_params *p = g->fwd->params;
    return scatter_grad_emit(g, 0, 0, p->reduction);
}

const struct op_def op_scatter_nd = {
    .domain = "", .name = "ScatterND",
    .since = { 11, 13, 16, 18 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = scatter_nd_parse,
    .infer = scatter_nd_infer,
    .cost = scatter_cost,
    .kernel = { [BACKEND_CPU] = scatter_nd_cpu },
    .grad = scatter_nd_grad,
    .grad_saves_in = 7u,
};

/* ---- ScatterGrad (domain dtrexec) -------------------------------------------------
 * Inputs dy, data, indices, updates of the forward call; outputs dData and
 * dUpdates. Attributes: elements (0: ScatterND, 1: ScatterElements), axis,
 * reduction (enum scatter_reduction). */

static int scatter_grad_parse(const struct onnx_node *node, int version, void **params,
                              char *err, size_t err_size)
{
    (void)version;
    struct scatter_grad_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->elements = onnx_node_attr_int(node, "elements", 0) != 0;
    p->axis = onnx_node_attr_int(node, "axis", 0);
    int64_t r = onnx_node_attr_int(node, "reduction", 0);
    if (r < SCATTER_NONE || r > SCATTER_MIN) {
        free(p);
        return shape_parse_error(err, err_size, node, "reduction %lld is not 0..4", (long long)r);
    }
    p->reduction = (int)r;
    *params = p;
    return 0;
}

static int scatter_grad_infer(struct op_call *c)
{
    const struct scatter_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *x = c->in[1], *idx = c->in[2], *upd = c->in[3];
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "data must be float or double, got %s", onnx_dtype_name(x->dtype));
    if (!tensor_same_shape(dy, x) || dy->dtype != x->dtype)
        return op_error(c, "dy must have data's shape and dtype");
    int axis = op_axis(p->axis, x->rank);
    if (p->elements ? axis < 0 || scatter_elements_check(c, axis, x, idx, upd)
                    : scatter_nd_check(c, x, idx, upd))
        return axis < 0 ? op_error(c, "axis %lld is out of range", (long long)p->axis) : -1;
    if (c->out[0]) {
        *c->out[0] = *x;
        c->out[0]->data = NULL;
    }
    if (c->n_out > 1 && c->out[1]) {
        *c->out[1] = *upd;
        c->out[1]->data = NULL;
    }
    return 0;
}

/* Stable merge sort of ord[0..n) by key[ord[i]]. */
static void sort_by_key(int64_t *ord, int64_t *tmp, const int64_t *key, int64_t n)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                tmp[o++] = key[ord[j]] < key[ord[i]] ? ord[j++] : ord[i++];
            while (i < mid)
                tmp[o++] = ord[i++];
            while (j < hi)
                tmp[o++] = ord[j++];
        }
        memcpy(ord, tmp, sizeof *ord * (size_t)n);
    }
}

#define SCATTER_GRAD_DEF(T, SFX)                                                          \
    static void scatter_grad_##SFX(int red, const T *dy, const T *x, const T *u,          \
                                   const int64_t *pos, const int64_t *ord, int64_t n,      \
                                   double *suf, T *dx, T *du)                              \
    {                                                                                     \
        for (int64_t a = 0; a < n;) {                                                     \
            int64_t p = pos[ord[a]], b = a;                                               \
            while (b < n && pos[ord[b]] == p)                                             \
                b++;                                                                      \
            double g = dy[p];                                                             \
            switch (red) {                                                                \
            case SCATTER_NONE:                                                            \
                for (int64_t i = a; i < b; i++)                                           \
                    du[ord[i]] = (T)(i == b - 1 ? g : 0.0);                               \
                if (dx)                                                                   \
                    dx[p] = 0;                                                            \
                break;                                                                    \
            case SCATTER_ADD:                                                             \
                for (int64_t i = a; i < b; i++)                                           \
                    du[ord[i]] = (T)g;                                                    \
                break;                                                                    \
            case SCATTER_MUL: {                                                           \
                double s = 1.0;                                                           \
                for (int64_t i = b - 1; i >= a; i--) {                                    \
                    suf[i] = s;                                                           \
                    s *= u[ord[i]];                                                       \
                }                                                                         \
                double pre = x[p];                                                        \
                for (int64_t i = a; i < b; i++) {                                         \
                    du[ord[i]] = (T)(g * pre * suf[i]);                                   \
                    pre *= u[ord[i]];                                                     \
                }                                                                         \
                if (dx)                                                                   \
                    dx[p] = (T)(g * s);                                                   \
                break;                                                                    \
            }                                                                             \
            default: {                                                                    \
                T best = x[p];                                                            \
                int64_t w = -1;                                                           \
                for (int64_t i = a; i < b; i++) {                                         \
                    T v = u[ord[i]];                                                      \
                    if (red == SCATTER_MAX ? v > best : v < best) {                       \
                        best = v;                                                         \
                        w = i;                                                            \
                    }                                                                     \
                }                                                                         \
                for (int64_t i = a; i < b; i++)                                           \
                    du[ord[i]] = (T)(i == w ? g : 0.0);                                   \
                if (dx && w >= 0)                                                         \
                    dx[p] = 0;                                                            \
                break;                                                                    \
            }                                                                             \
            }                                                                             \
            a = b;                                                                        \
        }                                                                                 \
    }
SCATTER_GRAD_DEF(float, f32)
SCATTER_GRAD_DEF(double, f64)

static int scatter_grad_cpu(struct op_call *c)
{
    const struct scatter_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *x = c->in[1], *idx = c->in[2], *upd = c->in[3];
    struct tensor *dx = c->out[0], *du = c->n_out > 1 ? c->out[1] : NULL;
    int64_t n = tensor_numel(upd);
    if (dx)
        memcpy(dx->data, dy->data, tensor_size_bytes(dy));
    size_t bytes = sizeof(int64_t) * 3 * (size_t)(n ? n : 1) + sizeof(double) * (size_t)(n ? n : 1);
    int64_t *pos = c->env && c->env->scratch_alloc ? c->env->scratch_alloc(c->env->ctx, bytes) : NULL;
    if (!pos)
        return op_error(c, "no scratch memory for %zu bytes of scatter positions", bytes);
    int64_t *ord = pos + n, *tmp = ord + n;
    double *suf = (double *)(tmp + n);
    int rc = p->elements ? scatter_elements_positions(c, op_axis(p->axis, x->rank), x, idx, pos)
                         : scatter_nd_positions(c, x, idx, upd, pos);
    if (!rc) {
        for (int64_t i = 0; i < n; i++)
            ord[i] = i;
        sort_by_key(ord, tmp, pos, n);
        void *du_data = du ? du->data : tmp;   /* tmp is free again after the sort */
        if (x->dtype == ONNX_DTYPE_DOUBLE)
            scatter_grad_f64(p->reduction, dy->data, x->data, upd->data, pos, ord, n, suf,
                             dx ? dx->data : NULL, du_data);
        else
            scatter_grad_f32(p->reduction, dy->data, x->data, upd->data, pos, ord, n, suf,
                             dx ? dx->data : NULL, du_data);
    }
    c->env->scratch_free(c->env->ctx, pos);
    return rc;
}

const struct op_def op_scatter_grad = {
    .domain = "dtrexec", .name = "ScatterGrad",
    .since = { 1 },
    .min_in = 4, .max_in = 4, .min_out = 1, .max_out = 2,
    .parse = scatter_grad_parse,
    .infer = scatter_grad_infer,
    .cost = scatter_cost,
    .kernel = { [BACKEND_CPU] = scatter_grad_cpu },
};

int scatter_grad_emit(struct grad_ctx *g, int elements, int axis, int reduction)
{
    int want_x = g->need_dx[0], want_u = g->fwd->n_in > 2 && g->need_dx[2];
    if (g->dy[0] < 0 || (!want_x && !want_u))
        return 0;
    struct onnx_attr attrs[3] = { shape_attr_int("elements", elements), shape_attr_int("axis", axis),
                                  shape_attr_int("reduction", reduction) };
    int in[4] = { g->dy[0], g->in[0], g->in[1], g->in[2] }, out[2];
    if (g->emit(g, "ScatterGrad", attrs, 3, 4, in, 2, out))
        return -1;
    if (want_x && g->add_dx(g, 0, out[0]))
        return -1;
    return want_u ? g->add_dx(g, 2, out[1]) : 0;
}
