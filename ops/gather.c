/* ops/gather.c — Gather (opset 1, 11, 13) and GatherElements (11, 13).
 *
 * Indices are int32 or int64 and may be negative (counted from the end, as
 * opset 11 allows). Every index is checked before any element is read: an
 * out-of-range index fails the call with a message naming its position and
 * value, never a read outside the data. */
#include <stdlib.h>

#include "ops/shape-impl.h"

struct gather_params {
    int64_t axis;
};

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
    int axis = gather_axis(c, x->rank);
    if (axis < 0)
        return -1;
    int64_t d = x->dims[axis];
    if (check_indices(c, idx, d))
        return -1;
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

const struct op_def op_gather = {
    .domain = "", .name = "Gather",
    .since = { 1, 11, 13 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = gather_parse,
    .infer = gather_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = gather_cpu },
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
    int axis = gather_axis(c, x->rank);
    if (axis < 0)
        return -1;
    int64_t d = x->dims[axis];
    if (check_indices(c, idx, d))
        return -1;
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

const struct op_def op_gather_elements = {
    .domain = "", .name = "GatherElements",
    .since = { 11, 13 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = gather_parse,
    .infer = gather_elements_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = gather_elements_cpu },
};
