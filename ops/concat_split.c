/* ops/concat_split.c — Concat (opset 4, 11, 13) and Split (2, 11, 13, 18).
 *
 * Both view every tensor as [outer, axis * inner]: each outer row of the
 * output (Concat) or input (Split) is the pieces' rows side by side, so the
 * kernels are one memcpy per (row, piece). Split's sizes come from the
 * `split` attribute (before 13), the `split` input (from 13), `num_outputs`
 * (from 18: ceil-sized chunks, the last one smaller), or equal parts. */
#include <stdlib.h>

#include "ops/shape-impl.h"
#include "ops/shape-params.h"

static void axis_params_free(void *params)
{
    struct axis_params *p = params;
    if (p)
        free(p->split);
    free(p);
}

/* ---- Concat --------------------------------------------------------------- */

static int concat_parse(const struct onnx_node *node, int version, void **params,
                        char *err, size_t err_size)
{
    if (!onnx_node_attr(node, "axis"))
        return shape_parse_error(err, err_size, node, "the axis attribute is required");
    int64_t axis = onnx_node_attr_int(node, "axis", 0);
    if (version < 11 && axis < 0)
        return shape_parse_error(err, err_size, node,
                                 "axis %lld is negative, which Concat allows only from opset 11",
                                 (long long)axis);
    struct axis_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->axis = axis;
    *params = p;
    return 0;
}

static int concat_infer(struct op_call *c)
{
    const struct axis_params *p = c->params;
    const struct tensor *x0 = c->in[0];
    if (!x0)
        return op_error(c, "input 0 is missing");
    int axis = op_axis(p->axis, x0->rank);
    if (axis < 0)
        return op_error(c, "axis %lld is out of range for rank %d", (long long)p->axis, x0->rank);
    struct tensor *y = c->out[0];
    y->dtype = x0->dtype;
    y->rank = x0->rank;
    memcpy(y->dims, x0->dims, sizeof y->dims);
    y->dims[axis] = 0;
    for (int k = 0; k < c->n_in; k++) {
        const struct tensor *x = c->in[k];
        if (!x)
            return op_error(c, "input %d is missing", k);
        if (x->dtype != x0->dtype)
            return op_error(c, "input %d is %s but input 0 is %s", k, onnx_dtype_name(x->dtype),
                            onnx_dtype_name(x0->dtype));
        int bad = x->rank != x0->rank;
        for (int i = 0; !bad && i < x->rank; i++)
            bad = i != axis && x->dims[i] != x0->dims[i];
        if (bad) {
            char a[128], b[128];
            return op_error(c, "input %d %s does not match input 0 %s outside axis %d", k,
                            tensor_describe(x, a, sizeof a), tensor_describe(x0, b, sizeof b), axis);
        }
        y->dims[axis] += x->dims[axis];
    }
    return 0;
}

static int concat_cpu(struct op_call *c)
{
    const struct axis_params *p = c->params;
    struct tensor *y = c->out[0];
    int axis = op_axis(p->axis, y->rank);
    size_t esize = onnx_dtype_size(y->dtype);
    int64_t outer = shape_prod(y->dims, 0, axis);
    int64_t inner = shape_prod(y->dims, axis + 1, y->rank);
    size_t row = (size_t)(y->dims[axis] * inner) * esize;
    size_t offset = 0;
    int par = tensor_size_bytes(y) > SHAPE_PARALLEL_BYTES;
    for (int k = 0; k < c->n_in; k++) {
        const struct tensor *x = c->in[k];
        size_t chunk = (size_t)(x->dims[axis] * inner) * esize;
        if (chunk == 0)
            continue;
        char *dst = (char *)y->data + offset;
        const char *src = x->data;
        #pragma omp parallel for schedule(static) if(par)
        for (int64_t o = 0; o < outer; o++)
            memcpy(dst + (size_t)o * row, src + (size_t)o * chunk, chunk);
        offset += chunk;
    }
    return 0;
}

/* dy split back into the inputs' extents along the axis. */
static int concat_grad(struct grad_ctx *g)
{
    const struct axis_params *p = g->fwd->params;
    const struct tensor *y = g->fwd->out[0];
    int axis = op_axis(p->axis, y->rank);
    int n = g->fwd->n_in;
    if (g->dy[0] < 0)
        return 0;
    if (n == 1)
        return g->need_dx[0] ? g->add_dx(g, 0, g->dy[0]) : 0;
    int64_t *sizes = malloc(sizeof(int64_t) * (size_t)n);
    int *pieces = malloc(sizeof(int) * (size_t)n);
    int rc = -1;
    if (!sizes || !pieces) {
        grad_error(g, "out of host memory for %d pieces", n);
        goto done;
    }
    for (int k = 0; k < n; k++)
        sizes[k] = g->fwd->in[k]->dims[axis];
    struct onnx_attr attr = shape_attr_int("axis", axis);
    int in[2] = { g->dy[0], grad_const_i64(g, n, sizes) };
    if (in[1] < 0 || g->emit(g, "Split", &attr, 1, 2, in, n, pieces))
        goto done;
    rc = 0;
    for (int k = 0; k < n && !rc; k++)
        if (g->need_dx[k])
            rc = g->add_dx(g, k, pieces[k]);
done:
    free(sizes);
    free(pieces);
    return rc;
}

const struct op_def op_concat = {
    .domain = "", .name = "Concat",
    .since = { 4, 11, 13 },
    .min_in = 1, .max_in = OP_VARIADIC, .min_out = 1, .max_out = 1,
    .parse = concat_parse,
    .params_free = axis_params_free,
    .infer = concat_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = concat_cpu },
    .grad = concat_grad,
};

/* ---- Split ---------------------------------------------------------------- */

static int split_parse(const struct onnx_node *node, int version, void **params,
                       char *err, size_t err_size)
{
    int64_t axis = onnx_node_attr_int(node, "axis", 0);
    int64_t num_outputs = version >= 18 ? onnx_node_attr_int(node, "num_outputs", 0) : 0;
    if (version < 11 && axis < 0)
        return shape_parse_error(err, err_size, node,
                                 "axis %lld is negative, which Split allows only from opset 11",
                                 (long long)axis);
    if (version >= 18 && onnx_node_attr(node, "num_outputs") && num_outputs < 1)
        return shape_parse_error(err, err_size, node, "num_outputs is %lld; expected >= 1",
                                 (long long)num_outputs);
    struct axis_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->axis = axis;
    p->num_outputs = num_outputs;
    p->n_split = -1;
    if (version < 13) {
        const struct onnx_attr *a = onnx_node_attr(node, "split");
        if (a && a->type == ONNX_ATTR_INTS && a->n > 0) {
            p->split = malloc(sizeof(int64_t) * (size_t)a->n);
            if (!p->split) {
                free(p);
                return shape_parse_error(err, err_size, node, "out of memory");
            }
            memcpy(p->split, a->ints, sizeof(int64_t) * (size_t)a->n);
            p->n_split = a->n;
        }
    }
    *params = p;
    return 0;
}

/* Start and length along the axis of output k; -1 after op_error(). Checks
 * the whole split on k == 0, so later calls only index it. */
int split_piece(const struct op_call *c, int k, int64_t d, int64_t *start, int64_t *len)
{
    const struct axis_params *p = c->params;
    int n = c->n_out;
    const struct tensor *s = c->version >= 13 && c->n_in > 1 ? c->in[1] : NULL;
    if (s && tensor_numel(s) == 0)
        s = NULL;
    if (s || p->n_split >= 0) {
        int64_t count = s ? tensor_numel(s) : p->n_split;
        if (s && s->dtype != ONNX_DTYPE_INT64 && s->dtype != ONNX_DTYPE_INT32)
            return op_error(c, "input 'split' must be int64, got %s", onnx_dtype_name(s->dtype));
        if (count != n)
            return op_error(c, "split has %lld entries but the node has %d outputs",
                            (long long)count, n);
        int64_t sum = 0;
        *start = 0;
        for (int i = 0; i < n; i++) {
            int64_t v = s ? tensor_get_int(s, i) : p->split[i];
            if (v < 0)
                return op_error(c, "split[%d] is %lld; expected >= 0", i, (long long)v);
            if (i == k) {
                *start = sum;
                *len = v;
            }
            sum += v;
        }
        if (sum != d)
            return op_error(c, "split sums to %lld but the axis has %lld", (long long)sum,
                            (long long)d);
        return 0;
    }
    int64_t chunk;
    if (p->num_outputs > 0) {
        if (p->num_outputs != n)
            return op_error(c, "num_outputs is %lld but the node has %d outputs",
                            (long long)p->num_outputs, n);
        chunk = (d + n - 1) / n;
        if (n > 1 && chunk * (n - 1) > d)
            return op_error(c, "cannot split an axis of %lld into %d chunks of %lld", (long long)d,
                            n, (long long)chunk);
    } else {
        if (d % n)
            return op_error(c, "cannot split an axis of %lld into %d equal parts (give split%s)",
                            (long long)d, n, c->version >= 18 ? " or num_outputs" : "");
        chunk = d / n;
    }
    *start = chunk * k;
    *len = k == n - 1 ? d - chunk * (n - 1) : chunk;
    return 0;
}

static int split_infer(struct op_call *c)
{
    const struct axis_params *p = c->params;
    const struct tensor *x = c->in[0];
    int axis = op_axis(p->axis, x->rank);
    if (axis < 0)
        return op_error(c, "axis %lld is out of range for rank %d", (long long)p->axis, x->rank);
    for (int k = 0; k < c->n_out; k++) {
        int64_t start, len;
        if (split_piece(c, k, x->dims[axis], &start, &len))
            return -1;
        struct tensor *y = c->out[k];
        if (!y)
            continue;
        y->dtype = x->dtype;
        y->rank = x->rank;
        memcpy(y->dims, x->dims, sizeof y->dims);
        y->dims[axis] = len;
    }
    return 0;
}

static int split_cpu(struct op_call *c)
{
    const struct axis_params *p = c->params;
    const struct tensor *x = c->in[0];
    int axis = op_axis(p->axis, x->rank);
    size_t esize = onnx_dtype_size(x->dtype);
    int64_t outer = shape_prod(x->dims, 0, axis);
    int64_t inner = shape_prod(x->dims, axis + 1, x->rank);
    size_t row = (size_t)(x->dims[axis] * inner) * esize;
    int par = tensor_size_bytes(x) > SHAPE_PARALLEL_BYTES;
    for (int k = 0; k < c->n_out; k++) {
        int64_t start, len;
        if (split_piece(c, k, x->dims[axis], &start, &len))
            return -1;
        struct tensor *y = c->out[k];
        size_t chunk = (size_t)(len * inner) * esize;
        if (!y || chunk == 0)
            continue;
        const char *src = (const char *)x->data + (size_t)(start * inner) * esize;
        char *dst = y->data;
        #pragma omp parallel for schedule(static) if(par)
        for (int64_t o = 0; o < outer; o++)
            memcpy(dst + (size_t)o * chunk, src + (size_t)o * row, chunk);
    }
    return 0;
}

/* dx = the output gradients concatenated along the axis, zeros standing in
 * for outputs the loss does not reach. Reads the split input (for the
 * extents of omitted outputs), hence grad_saves_in. */
static int split_grad(struct grad_ctx *g)
{
    if (!g->need_dx[0])
        return 0;
    const struct axis_params *p = g->fwd->params;
    const struct tensor *x = g->fwd->in[0];
    int axis = op_axis(p->axis, x->rank);
    int n = g->fwd->n_out;
    int any = 0;
    for (int k = 0; k < n; k++)
        any |= g->dy[k] >= 0;
    if (!any)
        return 0;
    if (n == 1)
        return g->add_dx(g, 0, g->dy[0]);
    int *parts = malloc(sizeof(int) * (size_t)n);
    if (!parts)
        return grad_error(g, "out of host memory for %d pieces", n);
    int rc = 0;
    for (int k = 0; k < n && !rc; k++) {
        parts[k] = g->dy[k];
        if (parts[k] >= 0)
            continue;
        int64_t start, len;
        if (split_piece(g->fwd, k, x->dims[axis], &start, &len)) {
            rc = shape_grad_fwd_error(g);
            break;
        }
        struct tensor z = *x;
        z.dims[axis] = len;
        parts[k] = shape_grad_zeros(g, &z);
        rc = parts[k] < 0 ? -1 : 0;
    }
    struct onnx_attr attr = shape_attr_int("axis", axis);
    int dx;
    if (!rc)
        rc = g->emit(g, "Concat", &attr, 1, n, parts, 1, &dx);
    free(parts);
    return rc ? -1 : g->add_dx(g, 0, dx);
}

const struct op_def op_split = {
    .domain = "", .name = "Split",
    .since = { 2, 11, 13, 18 },
    .min_in = 1, .max_in = 2, .min_out = 1, .max_out = OP_VARIADIC,
    .parse = split_parse,
    .params_free = axis_params_free,
    .infer = split_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = split_cpu },
    .host_inputs = 1u << 1,
    .grad = split_grad,
    .grad_saves_in = 1u << 1,
};
