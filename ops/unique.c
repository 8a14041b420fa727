/* ops/unique.c — Unique (opsets 11, 28): the distinct elements of X
 * (flattened), or with `axis` its distinct slices along that axis, in
 * ascending order (sorted = 1, the default; slices compare
 * lexicographically in row-major order) or in order of first occurrence;
 * with the optional outputs indices (first occurrence of each in X),
 * inverse_indices (for each element or slice of X, its place in Y) and
 * counts, all int64, as numpy.unique. Floats compare by value (-0 equals
 * 0; NaNs equal each other and sort last); bool, integers, float, double.
 * The count depends on the values, so X is read on the host (host_inputs)
 * and infer finds the distinct values; the CUDA kernel (ops/cuda/vision.c)
 * uploads the host result, as NonZero's does. Not differentiable: the
 * selection moves in steps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/vision-params.h"
#include "ops/shape-impl.h"
#include "ops/vision-impl.h"

#define UNIQUE_LIST "bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float, double"

static int unique_parse(const struct onnx_node *node, int version, void **params, char *err,
                        size_t err_size)
{
    (void)version;
    struct unique_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->sorted = onnx_node_attr_int(node, "sorted", 1) != 0;
    p->has_axis = onnx_node_attr(node, "axis") != NULL;
    p->axis = onnx_node_attr_int(node, "axis", 0);
    return 0;
}

/* Sorting context: X seen as [outer, n, inner]; slice i is x[:, i, :]. */
struct unique_view {
    const struct tensor *x;
    int64_t outer, n, inner;
};

/* -1, 0, 1 comparing elements a and b of x by value. */
static int unique_elem_cmp(const struct tensor *x, int64_t a, int64_t b)
{
    switch (x->dtype) {
    case ONNX_DTYPE_FLOAT:
    case ONNX_DTYPE_DOUBLE: {
        double u = tensor_get_double(x, a), v = tensor_get_double(x, b);
        int un = isnan(u), vn = isnan(v);
        if (un || vn)
            return un - vn;
        return (u > v) - (u < v);
    }
    case ONNX_DTYPE_UINT64: {
        uint64_t u = ((const uint64_t *)x->data)[a], v = ((const uint64_t *)x->data)[b];
        return (u > v) - (u < v);
    }
    default: {
        int64_t u = tensor_get_int(x, a), v = tensor_get_int(x, b);
        return (u > v) - (u < v);
    }
    }
}

static int unique_slice_cmp(const struct unique_view *v, int64_t i, int64_t j)
{
    for (int64_t o = 0; o < v->outer; o++)
        for (int64_t k = 0; k < v->inner; k++) {
            int r = unique_elem_cmp(v->x, (o * v->n + i) * v->inner + k, (o * v->n + j) * v->inner + k);
            if (r)
                return r;
        }
    return 0;
}

/* Stable merge sort of slice indices (qsort has no context argument and no
 * stability). */
static void unique_sort(const struct unique_view *v, int64_t *a, int64_t *tmp, int64_t n)
{
    if (n < 2)
        return;
    int64_t h = n / 2;
    unique_sort(v, a, tmp, h);
    unique_sort(v, a + h, tmp, n - h);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = unique_slice_cmp(v, a[j], a[i]) < 0 ? a[j++] : a[i++];
    while (i < h)
        tmp[k++] = a[i++];
    while (j < n)
        tmp[k++] = a[j++];
    memcpy(a, tmp, sizeof *a * (size_t)n);
}

static int unique_view_of(const struct op_call *c, struct unique_view *v, int *axis)
{
    const struct unique_params *p = c->params;
    const struct tensor *x = c->in[0];
    switch (x->dtype) {
    case ONNX_DTYPE_BOOL: case ONNX_DTYPE_INT8: case ONNX_DTYPE_INT16: case ONNX_DTYPE_INT32:
    case ONNX_DTYPE_INT64: case ONNX_DTYPE_UINT8: case ONNX_DTYPE_UINT16: case ONNX_DTYPE_UINT32:
    case ONNX_DTYPE_UINT64: case ONNX_DTYPE_FLOAT: case ONNX_DTYPE_DOUBLE:
        break;
    default:
        return ew_dtype_error(c, "X", x->dtype, UNIQUE_LIST);
    }
    v->x = x;
    *axis = -1;
    if (!p->has_axis) {
        v->outer = v->inner = 1;
        v->n = tensor_numel(x);
        return 0;
    }
    *axis = op_axis(p->axis, x->rank);
    if (*axis < 0)
        return op_error(c, "axis %lld is out of range for rank %d", (long long)p->axis, x->rank);
    v->outer = shape_prod(x->dims, 0, *axis);
    v->n = x->dims[*axis];
    v->inner = shape_prod(x->dims, *axis + 1, x->rank);
    return 0;
}

void vision_unique_free(struct vision_unique *u)
{
    free(u->first);
    free(u->inverse);
    free(u->counts);
    memset(u, 0, sizeof *u);
}

int vision_unique_run(const struct op_call *c, struct vision_unique *u)
{
    const struct unique_params *p = c->params;
    struct unique_view v;
    memset(u, 0, sizeof *u);
    if (unique_view_of(c, &v, &u->axis))
        return -1;
    const size_t n1 = (size_t)(v.n > 0 ? v.n : 1);
    int64_t *order = malloc(sizeof(int64_t) * n1), *tmp = malloc(sizeof(int64_t) * n1);
    int64_t *group = malloc(sizeof(int64_t) * n1);
    u->first = malloc(sizeof(int64_t) * n1);
    u->inverse = malloc(sizeof(int64_t) * n1);
    u->counts = malloc(sizeof(int64_t) * n1);
    if (!order || !tmp || !group || !u->first || !u->inverse || !u->counts) {
        free(order), free(tmp), free(group);
        vision_unique_free(u);
        return op_error(c, "out of host memory for %lld slices", (long long)v.n);
    }
    for (int64_t i = 0; i < v.n; i++)
        order[i] = i;
    unique_sort(&v, order, tmp, v.n);
    /* groups in ascending order; the first member of each is its first
     * occurrence (the sort is stable) */
    int64_t k = 0;
    for (int64_t i = 0; i < v.n; i++) {
        if (i == 0 || unique_slice_cmp(&v, order[i - 1], order[i])) {
            u->first[k] = order[i];
            u->counts[k] = 0;
            k++;
        }
        group[order[i]] = k - 1;
        u->counts[k - 1]++;
    }
    u->k = k;
    if (!p->sorted) {
        /* renumber the groups by first occurrence: rank[g] is g's place */
        int64_t *rank = tmp, *gorder = order;
        for (int64_t g = 0; g < k; g++)
            gorder[g] = g;
        /* first occurrences are distinct: sort group numbers by them */
        for (int64_t g = 1; g < k; g++) {
            int64_t x = gorder[g], j = g;
            for (; j > 0 && u->first[gorder[j - 1]] > u->first[x]; j--)
                gorder[j] = gorder[j - 1];
            gorder[j] = x;
        }
        int64_t *first = malloc(sizeof(int64_t) * n1);
        int64_t *counts = malloc(sizeof(int64_t) * n1);
        if (!first || !counts) {
            free(first), free(counts), free(order), free(tmp), free(group);
            vision_unique_free(u);
            return op_error(c, "out of host memory for %lld slices", (long long)v.n);
        }
        for (int64_t g = 0; g < k; g++) {
            rank[gorder[g]] = g;
            first[g] = u->first[gorder[g]];
            counts[g] = u->counts[gorder[g]];
        }
        for (int64_t i = 0; i < v.n; i++)
            group[i] = rank[group[i]];
        free(u->first);
        free(u->counts);
        u->first = first;
        u->counts = counts;
    }
    memcpy(u->inverse, group, sizeof(int64_t) * (size_t)(v.n > 0 ? v.n : 0));
    free(order), free(tmp), free(group);
    return 0;
}

static int unique_infer(struct op_call *c)
{
    struct vision_unique u;
    if (vision_unique_run(c, &u))
        return -1;
    const struct tensor *x = c->in[0];
    int64_t n = u.axis < 0 ? tensor_numel(x) : x->dims[u.axis];
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    if (u.axis < 0) {
        y->rank = 1;
        y->dims[0] = u.k;
    } else {
        y->rank = x->rank;
        memcpy(y->dims, x->dims, sizeof x->dims);
        y->dims[u.axis] = u.k;
    }
    for (int o = 1; o < 4 && o < c->n_out; o++)
        if (c->out[o]) {
            c->out[o]->dtype = ONNX_DTYPE_INT64;
            c->out[o]->rank = 1;
            c->out[o]->dims[0] = o == 2 ? n : u.k;
        }
    vision_unique_free(&u);
    return 0;
}

void vision_unique_fill_y(const struct op_call *c, const struct vision_unique *u, void *y)
{
    const struct tensor *x = c->in[0];
    const size_t es = onnx_dtype_size(x->dtype);
    int64_t outer = 1, n = tensor_numel(x), inner = 1;
    if (u->axis >= 0) {
        outer = shape_prod(x->dims, 0, u->axis);
        n = x->dims[u->axis];
        inner = shape_prod(x->dims, u->axis + 1, x->rank);
    }
    const size_t run = (size_t)inner * es;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t g = 0; g < u->k; g++)
            memcpy((char *)y + (size_t)(o * u->k + g) * run,
                   (const char *)x->data + (size_t)(o * n + u->first[g]) * run, run);
}

static int unique_cpu(struct op_call *c)
{
    struct vision_unique u;
    if (vision_unique_run(c, &u))
        return -1;
    if (u.k != c->out[0]->dims[u.axis < 0 ? 0 : u.axis]) {
        vision_unique_free(&u);
        return op_error(c, "found %lld distinct values where infer found %lld", (long long)u.k,
                        (long long)c->out[0]->dims[u.axis < 0 ? 0 : u.axis]);
    }
    vision_unique_fill_y(c, &u, c->out[0]->data);
    const int64_t *src[4] = { NULL, u.first, u.inverse, u.counts };
    for (int o = 1; o < 4 && o < c->n_out; o++)
        if (c->out[o])
            memcpy(c->out[o]->data, src[o], tensor_size_bytes(c->out[o]));
    vision_unique_free(&u);
    return 0;
}

/* A sort: about n log2 n slice comparisons. */
static struct op_cost unique_cost(const struct op_call *c)
{
    double n = (double)tensor_numel(c->in[0]);
    struct op_cost k = cost_memory(c);
    k.flops = n * (n > 1 ? log2(n) : 1);
    return k;
}

const struct op_def op_unique = {
    .domain = "", .name = "Unique", .since = { 11, 28 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 4,
    .parse = unique_parse, .infer = unique_infer, .cost = unique_cost,
    .kernel = { [BACKEND_CPU] = unique_cpu },
    .host_inputs = 1u,
};
