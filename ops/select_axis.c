/* ops/select_axis.c — two operators that pick or reorder slices of their
 * input by a host-side integer input:
 *
 *  - Compress (opsets 9, 11, 28): the slices along `axis` whose entry of
 *    the bool condition is true (a shorter condition leaves the rest out;
 *    without axis the input is flattened first). Opset 11 added negative
 *    axes; 28 only types. The output's extent depends on the condition's
 *    values, which infer reads on the host (host_inputs). It is Gather with
 *    the indices of the true entries: the CPU and CUDA kernels run Gather's
 *    (misc_compress_call); its gradient is GatherGrad over NonZero of the
 *    condition, with a Reshape around it when there is no axis.
 *  - ReverseSequence (10, 28): for every batch entry b (along batch_axis),
 *    the first sequence_lens[b] elements along time_axis reversed and the
 *    rest copied; sequence_lens is read on the host and checked against the
 *    time extent. It is its own inverse, so its gradient is ReverseSequence
 *    of dy with the same lengths.
 *
 * Both move elements by size: every fixed-size dtype. */
#include <stdlib.h>
#include <string.h>

#include "ops/misc-impl.h"
#include "ops/misc-params.h"
#include "ops/shape-impl.h"

extern const struct op_def op_gather;

/* ---- Compress ---------------------------------------------------------------- */

static int compress_parse(const struct onnx_node *node, int version, void **params, char *err,
                          size_t err_size)
{
    (void)version;
    struct compress_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->has_axis = onnx_node_attr(node, "axis") != NULL;
    p->axis = onnx_node_attr_int(node, "axis", 0);
    *params = p;
    return 0;
}

/* The axis (0 for the flattened input) and, when idx is not NULL, the
 * indices of the true entries of the condition; their count in *k. */
static int compress_scan(const struct op_call *c, int *axis, int64_t *k, int64_t *idx)
{
    const struct compress_params *p = c->params;
    const struct tensor *x = c->in[0], *cond = c->in[1];
    if (cond->dtype != ONNX_DTYPE_BOOL || cond->rank != 1) {
        char d[128];
        return op_error(c, "condition %s must be a 1-D bool tensor",
                        tensor_describe(cond, d, sizeof d));
    }
    int64_t extent = tensor_numel(x);
    *axis = 0;
    if (p->has_axis) {
        *axis = op_axis(p->axis, x->rank);
        if (*axis < 0)
            return op_error(c, "axis %lld is out of range for an input of rank %d",
                            (long long)p->axis, x->rank);
        extent = x->dims[*axis];
    }
    const uint8_t *b = cond->data;
    *k = 0;
    for (int64_t i = 0; i < cond->dims[0]; i++) {
        if (!b[i])
            continue;
        if (i >= extent)
            return op_error(c, "condition is true at %lld, past the input's extent %lld",
                            (long long)i, (long long)extent);
        if (idx)
            idx[*k] = i;
        (*k)++;
    }
    return 0;
}

static int compress_infer(struct op_call *c)
{
    const struct compress_params *p = c->params;
    const struct tensor *x = c->in[0];
    int axis = 0;
    int64_t k = 0;
    if (onnx_dtype_size(x->dtype) == 0)
        return op_error(c, "dtype %s has no fixed element size", onnx_dtype_name(x->dtype));
    if (compress_scan(c, &axis, &k, NULL))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    if (!p->has_axis) {
        y->rank = 1;
        y->dims[0] = k;
        return 0;
    }
    y->rank = x->rank;
    memcpy(y->dims, x->dims, sizeof y->dims);
    y->dims[axis] = k;
    return 0;
}

int misc_compress_call(const struct op_call *c, struct misc_compress *m)
{
    const struct compress_params *p = c->params;
    const struct tensor *x = c->in[0];
    int axis = 0;
    int64_t k = 0;
    if (compress_scan(c, &axis, &k, NULL))
        return -1;
    m->idx_data = malloc(sizeof(int64_t) * (size_t)(k ? k : 1));
    if (!m->idx_data)
        return op_error(c, "out of memory for %lld indices", (long long)k);
    compress_scan(c, &axis, &k, m->idx_data);
    m->x = *x;
    if (!p->has_axis) {
        m->x.rank = 1;
        m->x.dims[0] = tensor_numel(x);
    }
    memset(&m->idx, 0, sizeof m->idx);
    m->idx.dtype = ONNX_DTYPE_INT64;
    m->idx.rank = 1;
    m->idx.dims[0] = k;
    m->idx.data = m->idx_data;
    m->params.axis = axis;
    m->in[0] = &m->x;
    m->in[1] = &m->idx;
    m->call = *c;
    m->call.def = &op_gather;
    m->call.version = 13;
    m->call.params = &m->params;
    m->call.in = m->in;
    return 0;
}

static int compress_cpu(struct op_call *c)
{
    struct misc_compress m;
    if (misc_compress_call(c, &m))
        return -1;
    int rc = op_gather.kernel[BACKEND_CPU](&m.call);
    free(m.idx_data);
    return rc;
}

/* GatherGrad(dy, NonZero(condition) as 1-D) into the input's shape, or
 * into the flattened input's and reshaped. */
static int compress_grad(struct grad_ctx *g)
{
    const struct compress_params *p = g->fwd->params;
    const struct tensor *x = g->fwd->in[0];
    if (!g->need_dx[0] || g->dy[0] < 0)
        return 0;
    int axis = p->has_axis ? op_axis(p->axis, x->rank) : 0;
    if (axis < 0)
        return grad_error(g, "axis %lld is out of range", (long long)p->axis);
    int64_t flat = -1, dims[TENSOR_MAX_RANK];
    int nz, minus1, idx, dx, rank = p->has_axis ? x->rank : 1;
    if (p->has_axis)
        memcpy(dims, x->dims, sizeof dims);
    else
        dims[0] = tensor_numel(x);
    if (g->emit(g, "NonZero", NULL, 0, 1, &g->in[1], 1, &nz) ||
        (minus1 = grad_const_i64(g, 1, &flat)) < 0)
        return -1;
    int rin[2] = { nz, minus1 };
    if (g->emit(g, "Reshape", NULL, 0, 2, rin, 1, &idx))
        return -1;
    struct onnx_attr a[2] = { shape_attr_int("axis", axis), shape_attr_ints("shape", rank, dims) };
    int gin[2] = { g->dy[0], idx };
    if (g->emit(g, "GatherGrad", a, 2, 2, gin, 1, &dx))
        return -1;
    if (!p->has_axis) {
        int shape = grad_const_i64(g, x->rank, x->dims), back, sin[2] = { dx, shape };
        if (shape < 0 || g->emit(g, "Reshape", NULL, 0, 2, sin, 1, &back))
            return -1;
        dx = back;
    }
    return g->add_dx(g, 0, dx);
}

const struct op_def op_compress = {
    .domain = "", .name = "Compress", .since = { 9, 11, 28 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = compress_parse, .infer = compress_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = compress_cpu },
    .host_inputs = 2u,
    .grad = compress_grad, .grad_saves_in = 2u,
};

/* ---- ReverseSequence ------------------------------------------------------------- */

static int revseq_parse(const struct onnx_node *node, int version, void **params, char *err,
                        size_t err_size)
{
    (void)version;
    int64_t b = onnx_node_attr_int(node, "batch_axis", 1), t = onnx_node_attr_int(node, "time_axis", 0);
    if ((b != 0 && b != 1) || (t != 0 && t != 1) || b == t)
        return shape_parse_error(err, err_size, node,
                                 "batch_axis %lld and time_axis %lld must be 0 and 1 in some order",
                                 (long long)b, (long long)t);
    struct reverse_sequence_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->batch_axis = (int)b;
    *params = p;
    return 0;
}

void misc_reverse_sequence_geom(const struct op_call *c, int64_t *d0, int64_t *d1, int64_t *inner)
{
    const struct tensor *x = c->in[0];
    *d0 = x->dims[0];
    *d1 = x->dims[1];
    *inner = 1;
    for (int i = 2; i < x->rank; i++)
        *inner *= x->dims[i];
}

static int revseq_infer(struct op_call *c)
{
    const struct reverse_sequence_params *p = c->params;
    const struct tensor *x = c->in[0], *lens = c->in[1];
    char d[128];
    if (x->rank < 2)
        return op_error(c, "input %s must have rank 2 or more", tensor_describe(x, d, sizeof d));
    if (onnx_dtype_size(x->dtype) == 0)
        return op_error(c, "dtype %s has no fixed element size", onnx_dtype_name(x->dtype));
    int64_t batch = x->dims[p->batch_axis], time = x->dims[1 - p->batch_axis];
    if ((lens->dtype != ONNX_DTYPE_INT64 && lens->dtype != ONNX_DTYPE_INT32) || lens->rank != 1 ||
        lens->dims[0] != batch)
        return op_error(c, "sequence_lens %s must be int64 of shape [%lld] (the batch extent)",
                        tensor_describe(lens, d, sizeof d), (long long)batch);
    for (int64_t b = 0; b < batch; b++) {
        int64_t l = tensor_get_int(lens, b);
        if (l < 0 || l > time)
            return op_error(c, "sequence_lens[%lld] = %lld is outside [0, %lld] (the time extent)",
                            (long long)b, (long long)l, (long long)time);
    }
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    y->rank = x->rank;
    memcpy(y->dims, x->dims, sizeof y->dims);
    return 0;
}

static int revseq_cpu(struct op_call *c)
{
    const struct reverse_sequence_params *p = c->params;
    const struct tensor *x = c->in[0], *lens = c->in[1];
    int64_t d0, d1, inner;
    misc_reverse_sequence_geom(c, &d0, &d1, &inner);
    size_t row = (size_t)inner * onnx_dtype_size(x->dtype);
    const char *src = x->data;
    char *dst = c->out[0]->data;
    for (int64_t i0 = 0; i0 < d0; i0++)
        for (int64_t i1 = 0; i1 < d1; i1++) {
            int64_t b = p->batch_axis ? i1 : i0, t = p->batch_axis ? i0 : i1;
            int64_t l = tensor_get_int(lens, b);
            int64_t ts = t < l ? l - 1 - t : t;
            int64_t s0 = p->batch_axis ? ts : i0, s1 = p->batch_axis ? i1 : ts;
            memcpy(dst + (size_t)(i0 * d1 + i1) * row, src + (size_t)(s0 * d1 + s1) * row, row);
        }
    return 0;
}

static int revseq_grad(struct grad_ctx *g)
{
    const struct reverse_sequence_params *p = g->fwd->params;
    if (!g->need_dx[0] || g->dy[0] < 0)
        return 0;
    struct onnx_attr a[2] = { shape_attr_int("batch_axis", p->batch_axis),
                              shape_attr_int("time_axis", 1 - p->batch_axis) };
    int in[2] = { g->dy[0], g->in[1] }, dx;
    if (g->emit(g, "ReverseSequence", a, 2, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_reverse_sequence = {
    .domain = "", .name = "ReverseSequence", .since = { 10, 28 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = revseq_parse, .infer = revseq_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = revseq_cpu },
    .host_inputs = 2u,
    .grad = revseq_grad, .grad_saves_in = 2u,
};
