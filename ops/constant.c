/* ops/constant.c — Constant (opset 1, 9, 11, 12, 13, 19, 21, 23, 24, 25) and
 * ConstantOfShape (9, 20, 21, 23, 24, 25).
 *
 * Constant's value is copied out of the node at parse time (from `value`, or
 * from 12 `value_float(s)` / `value_int(s)`), so the call never depends on the
 * IR staying alive. String and sparse constants have no in-memory form here
 * and are refused with a message naming the attribute. */
#include <stdlib.h>

#include "ops/shape-impl.h"
#include "ops/shape-params.h"

static void constant_params_free(void *params)
{
    struct constant_params *p = params;
    if (p)
        free(p->data);
    free(p);
}

/* Fills p from `bytes` (n elements of dtype); bytes may be NULL when n == 0. */
static int constant_set(struct constant_params *p, int dtype, int rank, const int64_t *dims,
                        const void *bytes, size_t size_bytes)
{
    p->dtype = dtype;
    p->rank = rank;
    for (int i = 0; i < rank; i++)
        p->dims[i] = dims[i];
    p->size_bytes = size_bytes;
    /* One byte at least, so that an empty constant still owns a pointer. */
    p->data = malloc(size_bytes ? size_bytes : 1);
    if (!p->data)
        return -1;
    if (size_bytes)
        memcpy(p->data, bytes, size_bytes);
    return 0;
}

/* Copies an attribute tensor; `what` names the attribute in messages. */
static int constant_from_tensor(const struct onnx_node *node, const char *what,
                                const struct onnx_tensor *t, struct constant_params *p,
                                char *err, size_t err_size)
{
    size_t esize = onnx_dtype_size(t->dtype);
    if (!esize)
        return shape_parse_error(err, err_size, node, "%s holds %s tensors, which are unsupported",
                                 what, onnx_dtype_name(t->dtype));
    if (t->rank > TENSOR_MAX_RANK)
        return shape_parse_error(err, err_size, node, "%s has rank %d (at most %d)", what, t->rank,
                                 TENSOR_MAX_RANK);
    size_t bytes = (size_t)onnx_tensor_numel(t) * esize;
    if (bytes && (!t->data || t->size_bytes < bytes))
        return shape_parse_error(err, err_size, node, "%s holds %zu bytes of data, expected %zu",
                                 what, t->data ? t->size_bytes : 0, bytes);
    if (constant_set(p, t->dtype, t->rank, t->dims, t->data, bytes))
        return shape_parse_error(err, err_size, node, "out of memory");
    return 0;
}

static int constant_parse(const struct onnx_node *node, int version, void **params,
                          char *err, size_t err_size)
{
    static const char *const unsupported[] = { "sparse_value", "value_string", "value_strings" };
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (onnx_node_attr(node, unsupported[i]))
            return shape_parse_error(err, err_size, node,
                                     "attribute '%s' is unsupported (only numeric dense constants: "
                                     "value, value_float(s), value_int(s))", unsupported[i]);
    struct constant_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    const struct onnx_attr *a;
    int rc = 0, found = 0, oom = 0;
    if ((a = onnx_node_attr(node, "value"))) {
        found++;
        if (a->type != ONNX_ATTR_TENSOR || !a->t)
            rc = shape_parse_error(err, err_size, node, "attribute 'value' must be a tensor");
        else
            rc = constant_from_tensor(node, "attribute 'value'", a->t, p, err, err_size);
    }
    if (version >= 12 && !rc) {
        if ((a = onnx_node_attr(node, "value_float")) && !found++) {
            float v = a->f;
            oom |= constant_set(p, ONNX_DTYPE_FLOAT, 0, NULL, &v, sizeof v);
        }
        if ((a = onnx_node_attr(node, "value_int")) && !found++) {
            int64_t v = a->i;
            oom |= constant_set(p, ONNX_DTYPE_INT64, 0, NULL, &v, sizeof v);
        }
        if ((a = onnx_node_attr(node, "value_floats")) && !found++) {
            int64_t n = a->n;
            oom |= constant_set(p, ONNX_DTYPE_FLOAT, 1, &n, a->floats, sizeof(float) * (size_t)n);
        }
        if ((a = onnx_node_attr(node, "value_ints")) && !found++) {
            int64_t n = a->n;
            oom |= constant_set(p, ONNX_DTYPE_INT64, 1, &n, a->ints, sizeof(int64_t) * (size_t)n);
        }
        if (oom)
            rc = shape_parse_error(err, err_size, node, "out of memory");
    }
    if (!rc && found != 1)
        rc = shape_parse_error(err, err_size, node,
                               found ? "more than one value attribute is set; exactly one is allowed"
                                     : "no value attribute (value, value_float(s), value_int(s))");
    if (rc) {
        constant_params_free(p);
        return -1;
    }
    *params = p;
    return 0;
}

static int constant_infer(struct op_call *c)
{
    const struct constant_params *p = c->params;
    struct tensor *y = c->out[0];
    y->dtype = p->dtype;
    y->rank = p->rank;
    memcpy(y->dims, p->dims, sizeof(int64_t) * (size_t)p->rank);
    return 0;
}

static int constant_cpu(struct op_call *c)
{
    const struct constant_params *p = c->params;
    if (p->size_bytes)
        memcpy(c->out[0]->data, p->data, p->size_bytes);
    return 0;
}

const struct op_def op_constant = {
    .domain = "", .name = "Constant",
    .since = { 1, 9, 11, 12, 13, 19, 21, 23, 24, 25 },
    .min_in = 0, .max_in = 0, .min_out = 1, .max_out = 1,
    .parse = constant_parse,
    .params_free = constant_params_free,
    .infer = constant_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = constant_cpu },
};

/* ---- ConstantOfShape ---------------------------------------------------------- */

static int constant_of_shape_parse(const struct onnx_node *node, int version, void **params,
                                   char *err, size_t err_size)
{
    struct constant_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    const struct onnx_attr *a = onnx_node_attr(node, "value");
    int rc;
    if (!a) {
        float zero = 0;
        rc = constant_set(p, ONNX_DTYPE_FLOAT, 0, NULL, &zero, sizeof zero);
        if (rc)
            shape_parse_error(err, err_size, node, "out of memory");
    } else if (a->type != ONNX_ATTR_TENSOR || !a->t || onnx_tensor_numel(a->t) != 1) {
        rc = shape_parse_error(err, err_size, node, "attribute 'value' must be a one-element tensor");
    } else {
        rc = constant_from_tensor(node, "attribute 'value'", a->t, p, err, err_size);
    }
    if (rc) {
        constant_params_free(p);
        return -1;
    }
    *params = p;
    return 0;
}

static int constant_of_shape_infer(struct op_call *c)
{
    const struct constant_params *p = c->params;
    struct tensor *y = c->out[0];
    int n = shape_read_ints(c, c->in[0], "input", y->dims, TENSOR_MAX_RANK);
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (y->dims[i] < 0)
            return op_error(c, "input[%d] is %lld; dims must be >= 0", i, (long long)y->dims[i]);
    y->dtype = p->dtype;
    y->rank = n;
    return 0;
}

static int constant_of_shape_cpu(struct op_call *c)
{
    const struct constant_params *p = c->params;
    struct tensor *y = c->out[0];
    int64_t n = tensor_numel(y);
    size_t esize = p->size_bytes;
    if (n == 0)
        return 0;
    int zero = 1;
    for (size_t i = 0; i < esize; i++)
        zero &= ((const unsigned char *)p->data)[i] == 0;
    if (zero) {
        memset(y->data, 0, (size_t)n * esize);
        return 0;
    }
    char *d = y->data;
    /* Doubling copies: each memcpy duplicates what is already written. */
    memcpy(d, p->data, esize);
    size_t done = esize, total = (size_t)n * esize;
    while (done < total) {
        size_t chunk = done < total - done ? done : total - done;
        memcpy(d + done, d, chunk);
        done += chunk;
    }
    return 0;
}

const struct op_def op_constant_of_shape = {
    .domain = "", .name = "ConstantOfShape",
    .since = { 9, 20, 21, 23, 24, 25 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = constant_of_shape_parse,
    .params_free = constant_params_free,
    .infer = constant_of_shape_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = constant_of_shape_cpu },
    .host_inputs = 1u << 0,
};
