/* ops/scatter_elements.c — ScatterElements (opsets 11, 13, 16, 18) and its
 * deprecated predecessor Scatter (9, 11).
 *
 * output = data, then for every element e of `indices` (row-major order)
 * output[e's coordinates with the `axis` one replaced by indices[e]] is set
 * to (or combined under `reduction`, from opset 16, with) updates[e].
 * Indices and updates have one shape, data's rank, and fit inside data off
 * the axis. Indices are int32 or int64, negative counted from the end, all
 * checked before anything is written. The walk is sequential in element
 * order, so duplicates resolve the same way every run (the last update wins
 * for "none").
 *
 * Gradients: one ScatterGrad call (ops/scatter_gather_nd.c) gives dData and
 * dUpdates from the data position of every update element. */
#include <stdlib.h>
#include <string.h>

#include "ops/scatter-impl.h"
#include "ops/shape-impl.h"

static int scatter_elements_parse(const struct onnx_node *node, int version, void **params,
                                  char *err, size_t err_size)
{
    return scatter_parse_common(node, version, params, err, err_size);
}

int scatter_elements_check(const struct op_call *c, int axis, const struct tensor *data,
                           const struct tensor *idx, const struct tensor *upd)
{
    if (scatter_index_dtype(c, idx))
        return -1;
    if (idx->rank != data->rank || !tensor_same_shape(idx, upd))
        return op_error(c, "indices (rank %d) and updates (rank %d) must share one shape of the "
                        "data's rank %d", idx->rank, upd->rank, data->rank);
    if (upd->dtype != data->dtype)
        return op_error(c, "updates are %s but data is %s", onnx_dtype_name(upd->dtype),
                        onnx_dtype_name(data->dtype));
    for (int i = 0; i < data->rank; i++)
        if (i != axis && idx->dims[i] > data->dims[i])
            return op_error(c, "indices dim %d is %lld, larger than data's %lld", i,
                            (long long)idx->dims[i], (long long)data->dims[i]);
    return 0;
}

int scatter_elements_positions(const struct op_call *c, int axis, const struct tensor *data,
                               const struct tensor *idx, int64_t *pos)
{
    int rank = data->rank;
    int64_t st[TENSOR_MAX_RANK], co[TENSOR_MAX_RANK] = { 0 };
    shape_strides(data, st);
    int64_t n = tensor_numel(idx), d = data->dims[axis];
    for (int64_t e = 0; e < n; e++) {
        int64_t v = scatter_read_index(idx, e);
        if (v < -d || v >= d)
            return op_error(c, "index %lld at position %lld is out of range for axis %d of size %lld "
                            "(expected %lld..%lld)", (long long)v, (long long)e, axis, (long long)d,
                            (long long)-d, (long long)(d - 1));
        int64_t off = 0;
        for (int k = 0; k < rank; k++)
            off += (k == axis ? (v < 0 ? v + d : v) : co[k]) * st[k];
        pos[e] = off;
        for (int k = rank - 1; k >= 0; k--) {
            if (++co[k] < idx->dims[k])
                break;
            co[k] = 0;
        }
    }
    return 0;
}

static int scatter_elements_axis(const struct op_call *c)
{
    const struct scatter_params *p = c->params;
    int a = op_axis(p->axis, c->in[0]->rank);
    if (a < 0)
        return op_error(c, "axis %lld is out of range for data of rank %d", (long long)p->axis,
                        c->in[0]->rank);
    return a;
}

static int scatter_elements_infer(struct op_call *c)
{
    const struct scatter_params *p = c->params;
    const struct tensor *x = c->in[0];
    int axis = scatter_elements_axis(c);
    if (axis < 0 || scatter_elements_check(c, axis, x, c->in[1], c->in[2]) ||
        scatter_check_dtype(c, p->reduction, x->dtype))
        return -1;
    struct tensor *y = c->out[0];
    *y = *x;
    y->data = NULL;
    return 0;
}

static int scatter_elements_cpu(struct op_call *c)
{
    const struct scatter_params *p = c->params;
    const struct tensor *x = c->in[0], *idx = c->in[1], *upd = c->in[2];
    struct tensor *y = c->out[0];
    int axis = scatter_elements_axis(c);
    if (axis < 0 || scatter_elements_check(c, axis, x, idx, upd) ||
        scatter_check_dtype(c, p->reduction, x->dtype))
        return -1;
    int64_t n = tensor_numel(idx);
    size_t bytes = sizeof(int64_t) * (size_t)(n ? n : 1);
    int64_t *pos = c->env && c->env->scratch_alloc ? c->env->scratch_alloc(c->env->ctx, bytes) : NULL;
    if (!pos)
        return op_error(c, "no scratch memory for %zu bytes of scatter positions", bytes);
    if (scatter_elements_positions(c, axis, x, idx, pos)) {
        c->env->scratch_free(c->env->ctx, pos);
        return -1;
    }
    size_t es = onnx_dtype_size(x->dtype);
    memcpy(y->data, x->data, tensor_size_bytes(x));
    for (int64_t e = 0; e < n; e++)
        scatter_combine(p->reduction, x->dtype, (char *)y->data + (size_t)pos[e] * es,
                        (const char *)upd->data + (size_t)e * es, 1);
    c->env->scratch_free(c->env->ctx, pos);
    return 0;
}

static struct op_cost scatter_elements_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = (double)tensor_numel(c->in[2]);
    return cost;
}

static int scatter_elements_grad(struct grad_ctx *g)
{
    const struct scatter_params *p = g->fwd->params;
    int axis = op_axis(p->axis, g->fwd->in[0]->rank);
    if (axis < 0)
        return grad_error(g, "axis %lld is out of range", (long long)p->axis);
    return scatter_grad_emit(g, 1, axis, p->reduction);
}

const struct op_def op_scatter_elements = {
    .domain = "", .name = "ScatterElements",
    .since = { 11, 13, 16, 18 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = scatter_elements_parse,
    .infer = scatter_elements_infer,
    .cost = scatter_elements_cost,
    .kernel = { [BACKEND_CPU] = scatter_elements_cpu },
    .grad = scatter_elements_grad,
    .grad_saves_in = 7u,
};

/* Scatter-9 is ScatterElements without reduction; Scatter-11 only marks it
 * deprecated (negative indices allowed, as here at both). */
const struct op_def op_scatter = {
    .domain = "", .name = "Scatter",
    .since = { 9, 11 },
    .min_in = 3, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = scatter_elements_parse,
    .infer = scatter_elements_infer,
    .cost = scatter_elements_cost,
    .kernel = { [BACKEND_CPU] = scatter_elements_cpu },
    .grad = scatter_elements_grad,
    .grad_saves_in = 7u,
};
