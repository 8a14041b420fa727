/* ops/gather.c — Gather (opset 1, 11, 13) and GatherElements (11, 13).
 *
 * Indices are int32 or int64 and may be negative (counted from the end, as
 * opset 11 allows). Every index is checked before any element is read: an
 * out-of-range index fails the call with a message naming its position and
 * value, never a read outside the data. */
#include <stdlib.h>

#include "ops/shape-impl.h"
#include "ops/shape-params.h"

static int gather_parse(const struct onnx_node *node, int version, void **params,
                        char *err, size_t err_size)
{
    struct gather_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->axis = onnx_node_attr_int(node, "axis", 0);
    *params = p;
    return 0;
}

static int gather_axis(const struct op_call *c, int rank)
{
    const struct gather_params *p = c->params;
    int64_t axis = p ? p->axis : 0;
    int a = op_axis(axis, rank);
    if (a < 0)
        op_error(c, "axis %lld is out of range for data of rank %d", (long long)axis, rank);
    return a;
}

static int check_index_dtype(const struct op_call *c, const struct tensor *idx)
{
    if (idx->dtype != ONNX_DTYPE_INT64 && idx->dtype != ONNX_DTYPE_INT32)
        return op_error(c, "indices must be int32 or int64, got %s", onnx_dtype_name(idx->dtype));
    return 0;
}

/* Every index must lie in [-d, d): the first that does not fails the call. */
static int check_indices(const struct op_call *c, const struct tensor *idx, int64_t d)
{
    int64_t n = tensor_numel(idx);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = tensor_get_int(idx, i);
        if (v < -d || v >= d)
            return op_error(c, "index %lld at position %lld is out of range for an axis of "
                            "size %lld (expected %lld..%lld)", (long long)v, (long long)i,
                            (long long)d, (long long)-d, (long long)(d - 1));
    }
    return 0;
}

/* The kernels' axis, once every index has been checked against its size;
 * -1 with a message. */
static int gather_axis_checked(const struct op_call *c)
{
    const struct tensor *x = c->in[0];
    int axis = gather_axis(c, x->rank);
    if (axis < 0 || check_indices(c, c->in[1], x->dims[axis]))
        return -1;
    return axis;
}

static inline int64_t read_index(const struct tensor *idx, int64_t i, int64_t d)
{
    int64_t v = idx->dtype == ONNX_DTYPE_INT64 ? ((const int64_t *)idx->data)[i]
                                                : ((const int32_t *)idx->data)[i];
    return v < 0 ? v + d : v;
}

/* ---- Gather --------------------------------------------------------------- */

static int gather_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0], *idx = c->in[1];
    int axis = gather_axis(c, x->rank);
    if (axis < 0 || check_index_dtype(c, idx))
        return -1;
    int rank = x->rank - 1 + idx->rank;
    if (rank > TENSOR_MAX_RANK)
        return op_error(c, "output rank %d exceeds the maximum %d", rank, TENSOR_MAX_RANK);
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = rank;
    int k = 0;
    for (int i = 0; i < axis; i++)
        y->dims[k++] = x->dims[i];
    for (int i = 0; i < idx->rank; i++)
        y->dims[k++] = idx->dims[i];
    for (int i = axis + 1; i < x->rank; i++)
        y->dims[k++] = x->dims[i];
    return 0;
}

static int gather_cpu(struct op_call *c)
{
    const struct tensor *x = c->in[0], *idx = c->in[1];
    int axis = gather_axis_checked(c);
    if (axis < 0)
        return -1;
    int64_t d = x->dims[axis];
    size_t esize = onnx_dtype_size(x->dtype);
    int64_t outer = shape_prod(x->dims, 0, axis);
    int64_t inner = shape_prod(x->dims, axis + 1, x->rank);
    int64_t n = tensor_numel(idx);
    size_t chunk = (size_t)inner * esize;
    if (outer * n == 0 || chunk == 0)
        return 0;
    const char *src = x->data;
    char *dst = c->out[0]->data;
    int par = tensor_size_bytes(c->out[0]) > SHAPE_PARALLEL_BYTES;
    #pragma omp parallel for schedule(static) if(par)
    for (int64_t w = 0; w < outer * n; w++) {
        int64_t o = w / n, j = w % n;
        memcpy(dst + (size_t)w * chunk, src + (size_t)(o * d + read_index(idx, j, d)) * chunk,
               chunk);
    }
    return 0;
}

/* dx = zeros of the data's shape with dy rows added back at their indices
 * (GatherGrad). Reads the indices, hence grad_saves_in. */
static int gather_grad_emit(struct grad_ctx *g, const char *op)
{
    if (!g->need_dx[0] || g->dy[0] < 0)
        return 0;
    const struct tensor *x = g->fwd->in[0];
    int axis = gather_axis(g->fwd, x->rank);
    if (axis < 0)
        return shape_grad_fwd_error(g);
    int64_t dims[TENSOR_MAX_RANK];
    for (int a = 0; a < x->rank; a++)
        dims[a] = x->dims[a];
    struct onnx_attr attrs[2] = { shape_attr_int("axis", axis),
                                  shape_attr_ints("shape", x->rank, dims) };
    int in[2] = { g->dy[0], g->in[1] }, dx;
    if (g->emit(g, op, attrs, 2, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

static int gather_grad(struct grad_ctx *g)
{
    return gather_grad_emit(g, "GatherGrad");
}

const struct op_def op_gather = {
    .domain = "", .name = "Gather",
    .since = { 1, 11, 13 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = gather_parse,
    .infer = gather_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = gather_cpu },
    .grad = gather_grad,
    .grad_saves_in = 1u << 1,
};

/* ---- GatherElements --------------------------------------------------------- */

static int gather_elements_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0], *idx = c->in[1];
    int axis = gather_axis(c, x->rank);
    if (axis < 0 || check_index_dtype(c, idx))
        return -1;
    if (idx->rank != x->rank)
        return op_error(c, "indices have rank %d but data has rank %d; they must match",
                        idx->rank, x->rank);
    /* Outside the axis an index position addresses the data directly. */
    for (int i = 0; i < x->rank; i++)
        if (i != axis && idx->dims[i] > x->dims[i])
            return op_error(c, "indices dim %d is %lld, larger than data's %lld", i,
                            (long long)idx->dims[i], (long long)x->dims[i]);
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = idx->rank;
    memcpy(y->dims, idx->dims, sizeof y->dims);
    return 0;
}

static int gather_elements_cpu(struct op_call *c)
{
    const struct tensor *x = c->in[0], *idx = c->in[1];
    int axis = gather_axis_checked(c);
    if (axis < 0)
        return -1;
    int64_t d = x->dims[axis];
    size_t esize = onnx_dtype_size(x->dtype);
    int rank = x->rank;
    int64_t xs[TENSOR_MAX_RANK];
    shape_strides(x, xs);
    int64_t n = tensor_numel(idx);
    int64_t inner = rank ? idx->dims[rank - 1] : 1;
    if (n == 0 || inner == 0)
        return 0;
    int64_t rows = n / inner;
    const char *src = x->data;
    char *dst = c->out[0]->data;
    int par = tensor_size_bytes(c->out[0]) > SHAPE_PARALLEL_BYTES;
    /* Rows of the last axis: the data offset of a row is fixed except along
     * `axis`, which each element replaces with its index. */
    #pragma omp parallel for schedule(static) if(par)
    for (int64_t row = 0; row < rows; row++) {
        int64_t rem = row, base = 0;
        for (int k = rank - 2; k >= 0; k--) {
            int64_t q = rem / idx->dims[k];
            if (k != axis)
                base += (rem - q * idx->dims[k]) * xs[k];
            rem = q;
        }
        for (int64_t j = 0; j < inner; j++) {
            int64_t e = row * inner + j;
            int64_t v = read_index(idx, e, d);
            int64_t off = base + v * xs[axis] + (axis == rank - 1 ? 0 : j);
            memcpy(dst + (size_t)e * esize, src + (size_t)off * esize, esize);
        }
    }
    return 0;
}

static int gather_elements_grad(struct grad_ctx *g)
{
    return gather_grad_emit(g, "GatherElementsGrad");
}

const struct op_def op_gather_elements = {
    .domain = "", .name = "GatherElements",
    .since = { 11, 13 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = gather_parse,
    .infer = gather_elements_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = gather_elements_cpu },
    .grad = gather_elements_grad,
    .grad_saves_in = 1u << 1,
};

/* ---- GatherGrad and GatherElementsGrad (domain dtrexec) ---------------------
 * y = zeros of `shape` (the data's), then every dy element is added to the
 * data position its gather read: a scatter-add. Repeated indices accumulate,
 * always in index order, so the sums are bit-identical from run to run:
 * GatherGrad splits the work by outer row and by column block, and each
 * worker walks the indices in order; GatherElementsGrad walks dy in order. */

static int gather_grad_parse(const struct onnx_node *node, int version, void **params,
                             char *err, size_t err_size)
{
    (void)version;
    struct gather_grad_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    if (shape_parse_target(node, &p->target, err, err_size)) {
        free(p);
        return -1;
    }
    p->axis = onnx_node_attr_int(node, "axis", 0);
    if (op_axis(p->axis, p->target.rank) < 0) {
        int rank = p->target.rank;
        free(p);
        return shape_parse_error(err, err_size, node, "axis is out of range for shape of rank %d",
                                 rank);
    }
    p->axis = op_axis(p->axis, p->target.rank);
    *params = p;
    return 0;
}

/* Checks dy against the gather of `shape` by the indices. */
static int gather_grad_infer(struct op_call *c)
{
    const struct gather_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *idx = c->in[1];
    if (check_index_dtype(c, idx))
        return -1;
    int axis = (int)p->axis, rank = p->target.rank;
    int ok = dy->rank == rank - 1 + idx->rank;
    for (int i = 0, k = 0; ok && i < rank; i++) {
        if (i == axis) {
            for (int j = 0; ok && j < idx->rank; j++)
                ok = dy->dims[k++] == idx->dims[j];
        } else {
            ok = dy->dims[k++] == p->target.dims[i];
        }
    }
    if (!ok) {
        char a[128], b[128];
        return op_error(c, "dy %s is not the gather of shape by indices %s along axis %d",
                        tensor_describe(dy, a, sizeof a), tensor_describe(idx, b, sizeof b), axis);
    }
    struct tensor *y = c->out[0];
    *y = p->target;
    y->dtype = dy->dtype;
    y->data = NULL;
    return 0;
}

#define GATHER_GRAD_BLOCK 256

/* What both gradient kernels do first: zero dX (indices scatter-add into
 * it), then check dY's type and every index against the axis size d. */
static int gather_grad_begin(struct op_call *c, int64_t d)
{
    const struct tensor *dy = c->in[0];
    struct tensor *y = c->out[0];
    memset(y->data, 0, tensor_size_bytes(y));
    if (dy->dtype != ONNX_DTYPE_FLOAT && dy->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "dy must be float or double, got %s", onnx_dtype_name(dy->dtype));
    return check_indices(c, c->in[1], d);
}

static int gather_grad_cpu(struct op_call *c)
{
    const struct gather_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *idx = c->in[1];
    struct tensor *y = c->out[0];
    int axis = (int)p->axis;
    int64_t d = y->dims[axis];
    if (gather_grad_begin(c, d))
        return -1;
    int64_t outer = shape_prod(y->dims, 0, axis);
    int64_t inner = shape_prod(y->dims, axis + 1, y->rank);
    int64_t n = tensor_numel(idx);
    if (outer * n == 0 || inner == 0)
        return 0;
    int64_t blocks = (inner + GATHER_GRAD_BLOCK - 1) / GATHER_GRAD_BLOCK;
    int dbl = dy->dtype == ONNX_DTYPE_DOUBLE;
    int par = (double)outer * (double)n * (double)inner > 65536;
    #pragma omp parallel for schedule(static) if(par)
    for (int64_t w = 0; w < outer * blocks; w++) {
        int64_t o = w / blocks, c0 = (w % blocks) * GATHER_GRAD_BLOCK;
        int64_t c1 = c0 + GATHER_GRAD_BLOCK < inner ? c0 + GATHER_GRAD_BLOCK : inner;
        for (int64_t j = 0; j < n; j++) {
            int64_t src = (o * n + j) * inner, dst = (o * d + read_index(idx, j, d)) * inner;
            if (dbl) {
                const double *s = (const double *)dy->data + src;
                double *t = (double *)y->data + dst;
                for (int64_t k = c0; k < c1; k++)
                    t[k] += s[k];
            } else {
                const float *s = (const float *)dy->data + src;
                float *t = (float *)y->data + dst;
                for (int64_t k = c0; k < c1; k++)
                    t[k] += s[k];
            }
        }
    }
    return 0;
}

static struct op_cost gather_grad_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = (double)tensor_numel(c->in[0]);
    return cost;
}

const struct op_def op_gather_grad = {
    .domain = "dtrexec", .name = "GatherGrad",
    .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = gather_grad_parse,
    .infer = gather_grad_infer,
    .cost = gather_grad_cost,
    .kernel = { [BACKEND_CPU] = gather_grad_cpu },
};

static int gather_elements_grad_infer(struct op_call *c)
{
    const struct gather_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *idx = c->in[1];
    if (check_index_dtype(c, idx))
        return -1;
    int ok = tensor_same_shape(dy, idx) && dy->rank == p->target.rank;
    for (int i = 0; ok && i < dy->rank; i++)
        ok = i == p->axis || idx->dims[i] <= p->target.dims[i];
    if (!ok) {
        char a[128], b[128];
        return op_error(c, "dy %s and indices %s must match and fit shape outside axis %lld",
                        tensor_describe(dy, a, sizeof a), tensor_describe(idx, b, sizeof b),
                        (long long)p->axis);
    }
    struct tensor *y = c->out[0];
    *y = p->target;
    y->dtype = dy->dtype;
    y->data = NULL;
    return 0;
}

static int gather_elements_grad_cpu(struct op_call *c)
{
    const struct gather_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *idx = c->in[1];
    struct tensor *y = c->out[0];
    int axis = (int)p->axis, rank = y->rank;
    int64_t d = y->dims[axis];
    if (gather_grad_begin(c, d))
        return -1;
    int64_t ys[TENSOR_MAX_RANK], pos[TENSOR_MAX_RANK] = { 0 };
    shape_strides(y, ys);
    int64_t n = tensor_numel(idx);
    int dbl = dy->dtype == ONNX_DTYPE_DOUBLE;
    /* pos walks the index tensor's coordinates in row-major order. */
    for (int64_t e = 0; e < n; e++) {
        int64_t off = 0;
        for (int k = 0; k < rank; k++)
            off += (k == axis ? read_index(idx, e, d) : pos[k]) * ys[k];
        if (dbl)
            ((double *)y->data)[off] += ((const double *)dy->data)[e];
        else
            ((float *)y->data)[off] += ((const float *)dy->data)[e];
        for (int k = rank - 1; k >= 0; k--) {
            if (++pos[k] < idx->dims[k])
                break;
            pos[k] = 0;
        }
    }
    return 0;
}

const struct op_def op_gather_elements_grad = {
    .domain = "dtrexec", .name = "GatherElementsGrad",
    .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = gather_grad_parse,
    .infer = gather_elements_grad_infer,
    .cost = gather_grad_cost,
    .kernel = { [BACKEND_CPU] = gather_elements_grad_cpu },
};
