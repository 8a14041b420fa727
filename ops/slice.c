/* ops/slice.c — Slice (opset 1, 10, 11, 13). Before 10 starts/ends/axes are
 * attributes; from 10 they are inputs, with optional axes and steps (steps
 * may be negative). Starts and ends are clamped as the spec says, so any
 * int64 (INT64_MAX for "to the end") is accepted and nothing is read out of
 * bounds. The kernel is one strided copy (memcpy of contiguous runs). */
#include <stdint.h>
#include <stdlib.h>

#include "ops/shape-impl.h"
#include "ops/shape-params.h"

static int slice_parse(const struct onnx_node *node, int version, void **params,
                       char *err, size_t err_size)
{
    struct slice_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->n = p->n_axes = -1;
    if (version < 10) {
        int ns = onnx_node_attr_ints(node, "starts", p->starts, TENSOR_MAX_RANK);
        int ne = onnx_node_attr_ints(node, "ends", p->ends, TENSOR_MAX_RANK);
        p->n_axes = onnx_node_attr_ints(node, "axes", p->axes, TENSOR_MAX_RANK);
        if (ns < 0 || ne < 0 || ns != ne || p->n_axes == -2 || (p->n_axes >= 0 && p->n_axes != ns)) {
            free(p);
            return shape_parse_error(err, err_size, node,
                                     "starts and ends (and axes, if given) must be int lists of "
                                     "the same length, at most %d", TENSOR_MAX_RANK);
        }
        p->n = ns;
    }
    *params = p;
    return 0;
}

int slice_make_plan(const struct op_call *c, struct slice_plan *pl)
{
    const struct slice_params *p = c->params;
    const struct tensor *x = c->in[0];
    int64_t starts[TENSOR_MAX_RANK], ends[TENSOR_MAX_RANK], axes[TENSOR_MAX_RANK],
        steps[TENSOR_MAX_RANK];
    int n, n_axes = -1, n_steps = -1;
    if (c->version < 10) {
        n = p->n;
        memcpy(starts, p->starts, sizeof starts);
        memcpy(ends, p->ends, sizeof ends);
        if (p->n_axes >= 0) {
            n_axes = p->n_axes;
            memcpy(axes, p->axes, sizeof axes);
        }
    } else {
        if (c->n_in < 3 || !c->in[1] || !c->in[2])
            return op_error(c, "inputs 'starts' and 'ends' are required");
        n = shape_read_ints(c, c->in[1], "starts", starts, TENSOR_MAX_RANK);
        if (n < 0)
            return -1;
        int ne = shape_read_ints(c, c->in[2], "ends", ends, TENSOR_MAX_RANK);
        if (ne < 0)
            return -1;
        if (ne != n)
            return op_error(c, "starts has %d values but ends has %d", n, ne);
        if (c->n_in > 3 && c->in[3] &&
            (n_axes = shape_read_ints(c, c->in[3], "axes", axes, TENSOR_MAX_RANK)) < 0)
            return -1;
        if (c->n_in > 4 && c->in[4] &&
            (n_steps = shape_read_ints(c, c->in[4], "steps", steps, TENSOR_MAX_RANK)) < 0)
            return -1;
    }
    if (n_axes >= 0 && n_axes != n)
        return op_error(c, "axes has %d values but starts has %d", n_axes, n);
    if (n_steps >= 0 && n_steps != n)
        return op_error(c, "steps has %d values but starts has %d", n_steps, n);
    if (n_axes < 0) {
        if (n > x->rank)
            return op_error(c, "%d starts given for an input of rank %d", n, x->rank);
        for (int i = 0; i < n; i++)
            axes[i] = i;
    } else if (shape_normalize_axes(c, axes, n, x->rank)) {
        return -1;
    }
    for (int a = 0; a < x->rank; a++) {
        pl->start[a] = 0;
        pl->step[a] = 1;
        pl->dims[a] = x->dims[a];
    }
    for (int i = 0; i < n; i++) {
        int a = (int)axes[i];
        int64_t d = x->dims[a], s = starts[i], e = ends[i];
        int64_t step = n_steps >= 0 ? steps[i] : 1;
        if (step == 0)
            return op_error(c, "steps[%d] is 0", i);
        if (s < 0)
            s += d;
        if (e < 0)
            e += d;
        int64_t len;
        if (step > 0) {
            s = s < 0 ? 0 : s > d ? d : s;
            e = e < 0 ? 0 : e > d ? d : e;
            len = e > s ? (e - s - 1) / step + 1 : 0;
        } else {
            s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
            e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
            len = s > e ? (s - e - 1) / -(step == INT64_MIN ? INT64_MIN + 1 : step) + 1 : 0;
        }
        pl->start[a] = len > 0 ? s : 0;
        /* A huge step that takes one element must not overflow the stride. */
        pl->step[a] = len > 1 ? step : 1;
        pl->dims[a] = len;
    }
    return 0;
}

static int slice_infer(struct op_call *c)
{
    struct slice_plan pl;
    if (slice_make_plan(c, &pl))
        return -1;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = x->rank;
    memcpy(y->dims, pl.dims, sizeof(int64_t) * (size_t)x->rank);
    return 0;
}

static int slice_cpu(struct op_call *c)
{
    struct slice_plan pl;
    if (slice_make_plan(c, &pl))
        return -1;
    const struct tensor *x = c->in[0];
    if (tensor_numel(c->out[0]) == 0)
        return 0;
    size_t esize = onnx_dtype_size(x->dtype);
    int64_t xs[TENSOR_MAX_RANK], st[TENSOR_MAX_RANK], base = 0;
    shape_strides(x, xs);
    for (int a = 0; a < x->rank; a++) {
        base += pl.start[a] * xs[a];
        st[a] = pl.step[a] * xs[a];
    }
    shape_copy_strided(c->out[0]->data, (const char *)x->data + (size_t)base * esize, esize,
                       x->rank, pl.dims, st);
    return 0;
}

/* dx = zeros of the input's shape with dy written back where the slice
 * read: one SliceGrad call carrying the plan (start and step per axis).
 * Reads starts/ends/axes/steps, hence grad_saves_in. */
static int slice_grad(struct grad_ctx *g)
{
    if (!g->need_dx[0] || g->dy[0] < 0)
        return 0;
    struct slice_plan pl;
    if (slice_make_plan(g->fwd, &pl))
        return shape_grad_fwd_error(g);
    const struct tensor *x = g->fwd->in[0];
    int64_t dims[TENSOR_MAX_RANK];
    for (int a = 0; a < x->rank; a++)
        dims[a] = x->dims[a];
    struct onnx_attr attrs[3] = {
        shape_attr_ints("shape", x->rank, dims),
        shape_attr_ints("starts", x->rank, pl.start),
        shape_attr_ints("steps", x->rank, pl.step),
    };
    int dx;
    if (g->emit(g, "SliceGrad", attrs, 3, 1, &g->dy[0], 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_slice = {
    .domain = "", .name = "Slice",
    .since = { 1, 10, 11, 13 },
    .min_in = 1, .max_in = 5, .min_out = 1, .max_out = 1,
    .parse = slice_parse,
    .infer = slice_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = slice_cpu },
    .host_inputs = (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4),
    .grad = slice_grad,
    .grad_saves_in = (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4),
};

/* ---- SliceGrad (domain dtrexec) --------------------------------------------
 * y = zeros of `shape`, then y[start + i * step] = dy[i] along every axis:
 * the transpose of Slice. Every dy element has its own destination (a slice
 * never reads an element twice), so rows may be written in parallel. */

static int slice_grad_parse(const struct onnx_node *node, int version, void **params,
                            char *err, size_t err_size)
{
    (void)version;
    struct slice_grad_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    if (shape_parse_target(node, &p->target, err, err_size)) {
        free(p);
        return -1;
    }
    int ns = onnx_node_attr_ints(node, "starts", p->start, TENSOR_MAX_RANK);
    int nt = onnx_node_attr_ints(node, "steps", p->step, TENSOR_MAX_RANK);
    int rank = p->target.rank;
    if (ns != rank || nt != rank) {
        free(p);
        return shape_parse_error(err, err_size, node,
                                 "starts and steps must have one value per axis of shape (%d)",
                                 rank);
    }
    *params = p;
    return 0;
}

static int slice_grad_infer(struct op_call *c)
{
    const struct slice_grad_params *p = c->params;
    const struct tensor *dy = c->in[0];
    if (dy->rank != p->target.rank)
        return op_error(c, "dy has rank %d but shape has %d", dy->rank, p->target.rank);
    for (int a = 0; a < dy->rank; a++) {
        int64_t d = p->target.dims[a], n = dy->dims[a], s = p->start[a], st = p->step[a];
        /* First and last destination must lie inside the axis. */
        int64_t last = s + (n - 1) * st;
        if (n > 0 && (st == 0 || s < 0 || s >= d || last < 0 || last >= d))
            return op_error(c, "axis %d: %lld elements from %lld by step %lld leave 0..%lld", a,
                            (long long)n, (long long)s, (long long)st, (long long)(d - 1));
    }
    struct tensor *y = c->out[0];
    *y = p->target;
    y->dtype = dy->dtype;
    y->data = NULL;
    return 0;
}

static int slice_grad_cpu(struct op_call *c)
{
    const struct slice_grad_params *p = c->params;
    const struct tensor *dy = c->in[0];
    struct tensor *y = c->out[0];
    size_t esize = onnx_dtype_size(dy->dtype);
    memset(y->data, 0, tensor_size_bytes(y));
    int64_t total = tensor_numel(dy);
    if (total == 0)
        return 0;
    int rank = dy->rank;
    if (rank == 0) {
        memcpy(y->data, dy->data, esize);
        return 0;
    }
    int64_t ys[TENSOR_MAX_RANK], base = 0;
    shape_strides(y, ys);
    for (int a = 0; a < rank; a++)
        base += p->start[a] * ys[a];
    int last = rank - 1;
    int64_t w = dy->dims[last], rows = total / w, step = p->step[last] * ys[last];
    const char *src = dy->data;
    char *dst = y->data;
    int par = (double)total * (double)esize > SHAPE_PARALLEL_BYTES;
    #pragma omp parallel for schedule(static) if(par)
    for (int64_t row = 0; row < rows; row++) {
        int64_t rem = row, off = base;
        for (int a = last - 1; a >= 0; a--) {
            int64_t q = rem / dy->dims[a];
            off += (rem - q * dy->dims[a]) * p->step[a] * ys[a];
            rem = q;
        }
        const char *sp = src + (size_t)(row * w) * esize;
        if (step == 1) {
            memcpy(dst + (size_t)off * esize, sp, (size_t)w * esize);
            continue;
        }
        for (int64_t j = 0; j < w; j++)
            memcpy(dst + (size_t)(off + j * step) * esize, sp + (size_t)j * esize, esize);
    }
    return 0;
}

const struct op_def op_slice_grad = {
    .domain = "dtrexec", .name = "SliceGrad",
    .since = { 1 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = slice_grad_parse,
    .infer = slice_grad_infer,
    .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = slice_grad_cpu },
};
