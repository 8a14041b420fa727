/* ops/shape.c — Shape (opset 1, 13, 15, 19, 21, 23, 24, 25) and Size (1, 13,
 * 19, 21, 23, 24, 25): the input's dims (from 15 only those in [start, end),
 * both clamped to the rank) and its element count, as int64. They read only
 * the input's shape, never its data. */
#include <stdlib.h>

#include "ops/shape-impl.h"
#include "ops/shape-params.h"

static int shape_parse(const struct onnx_node *node, int version, void **params,
                       char *err, size_t err_size)
{
    struct shape_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    if (version >= 15) {
        p->start = onnx_node_attr_int(node, "start", 0);
        p->has_end = onnx_node_attr(node, "end") != NULL;
        p->end = onnx_node_attr_int(node, "end", 0);
    }
    *params = p;
    return 0;
}

static void shape_range(const struct op_call *c, int64_t *start, int64_t *end)
{
    const struct shape_params *p = c->params;
    int64_t r = c->in[0]->rank;
    int64_t s = p ? p->start : 0, e = p && p->has_end ? p->end : r;
    if (s < 0)
        s += r;
    if (e < 0)
        e += r;
    *start = s < 0 ? 0 : s > r ? r : s;
    *end = e < 0 ? 0 : e > r ? r : e;
}

static int shape_infer(struct op_call *c)
{
    int64_t s, e;
    shape_range(c, &s, &e);
    struct tensor *y = c->out[0];
    y->dtype = ONNX_DTYPE_INT64;
    y->rank = 1;
    y->dims[0] = e > s ? e - s : 0;
    return 0;
}

static int shape_cpu(struct op_call *c)
{
    int64_t s, e;
    shape_range(c, &s, &e);
    for (int64_t i = s; i < e; i++)
        ((int64_t *)c->out[0]->data)[i - s] = c->in[0]->dims[i];
    return 0;
}

static struct op_cost shape_cost(const struct op_call *c)
{
    return (struct op_cost){ 0, (double)tensor_size_bytes(c->out[0]) };
}

const struct op_def op_shape = {
    .domain = "", .name = "Shape",
    .since = { 1, 13, 15, 19, 21, 23, 24, 25 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = shape_parse,
    .infer = shape_infer,
    .cost = shape_cost,
    .kernel = { [BACKEND_CPU] = shape_cpu },
};

static int size_infer(struct op_call *c)
{
    struct tensor *y = c->out[0];
    y->dtype = ONNX_DTYPE_INT64;
    y->rank = 0;
    return 0;
}

static int size_cpu(struct op_call *c)
{
    ((int64_t *)c->out[0]->data)[0] = tensor_numel(c->in[0]);
    return 0;
}

const struct op_def op_size = {
    .domain = "", .name = "Size",
    .since = { 1, 13, 19, 21, 23, 24, 25 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .infer = size_infer,
    .cost = shape_cost,
    .kernel = { [BACKEND_CPU] = size_cpu },
};
