/* ops/tensor_scatter.c — TensorScatter (opset 24), the KV-cache update:
 * present = past_cache with the rows of `update` written along `axis`
 * (default -2, never the batch axis 0) from row write_indices[b] of batch
 * entry b (default 0); mode "linear" requires every written row to lie
 * inside the cache, "circular" wraps modulo max_sequence_length (any
 * index, as Python's % does). Any
 * fixed-size dtype (the bytes are copied). write_indices is read on the
 * host (host_inputs) so that a bad index is an error, not a stray write.
 *
 * The update is never longer than the cache, so the written rows are
 * distinct in either mode and the order of the writes does not matter.
 *
 * Gradient: TensorScatterGrad(dy, write_indices) -> (dpast, dupdate): dpast
 * is dy with the written rows zeroed, dupdate the rows of dy each update
 * row landed on. */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/vision-params.h"
#include "ops/shape-impl.h"
#include "ops/vision-impl.h"

static int ts_parse(const struct onnx_node *node, int version, void **params, char *err,
                    size_t err_size)
{
    (void)version;
    const char *mode = onnx_node_attr_string(node, "mode", "linear");
    int circular;
    if (!strcmp(mode, "linear"))
        circular = 0;
    else if (!strcmp(mode, "circular"))
        circular = 1;
    else
        return ew_parse_error(err, err_size, "mode '%s' is not one of linear, circular", mode);
    struct tensor_scatter_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->circular = circular;
    p->axis = onnx_node_attr_int(node, "axis", -2);
    return 0;
}

/* The forward's call has (past, update, write_indices); the gradient's
 * (dy, write_indices) and the update's shape in its `shape` attribute,
 * which parse keeps in a tensor_scatter_params' trailing target. */
struct ts_grad_params {
    struct tensor_scatter_params p;
    struct tensor update;              /* rank and dims only */
};

static int ts_grad_parse(const struct onnx_node *node, int version, void **params, char *err,
                         size_t err_size)
{
    void *base = NULL;
    if (ts_parse(node, version, &base, err, err_size))
        return -1;
    struct ts_grad_params *q = ew_params_new(sizeof *q, params, err, err_size);
    if (!q) {
        free(base);
        return -1;
    }
    q->p = *(struct tensor_scatter_params *)base;
    free(base);
    if (shape_parse_target(node, &q->update, err, err_size)) {
        free(*params);
        *params = NULL;
        return -1;
    }
    return 0;
}

static int ts_is_grad(const struct op_call *c)
{
    return !strcmp(c->def->name, "TensorScatterGrad");
}

int vision_scatter_geom(const struct op_call *c, struct vis_scatter *g, int64_t *idx)
{
    const int grad = ts_is_grad(c);
    const struct tensor_scatter_params *p = c->params;
    const struct tensor *past = c->in[0];
    struct tensor shape_only;
    const struct tensor *upd = c->in[1];
    if (grad) {
        shape_only = ((const struct ts_grad_params *)c->params)->update;
        shape_only.dtype = past->dtype;
        upd = &shape_only;
    }
    const struct tensor *wi = c->n_in > (grad ? 1 : 2) ? c->in[grad ? 1 : 2] : NULL;
    char a[128], b[128];
    if (past->dtype == ONNX_DTYPE_STRING || onnx_dtype_size(past->dtype) == 0)
        return op_error(c, "dtype %s has no fixed element size", onnx_dtype_name(past->dtype));
    if (!grad && upd->dtype != past->dtype)
        return op_error(c, "update has dtype %s but past_cache has %s; they must match",
                        onnx_dtype_name(upd->dtype), onnx_dtype_name(past->dtype));
    int axis = op_axis(p->axis, past->rank);
    if (past->rank < 2 || axis < 0)
        return op_error(c, "axis %lld is out of range for past_cache %s", (long long)p->axis,
                        tensor_describe(past, a, sizeof a));
    if (axis == 0)
        return op_error(c, "axis %lld is the batch axis; the sequence axis must be another",
                        (long long)p->axis);
    int ok = upd->rank == past->rank;
    for (int d = 0; ok && d < past->rank; d++)
        ok = d == axis ? upd->dims[d] <= past->dims[d] : upd->dims[d] == past->dims[d];
    if (!ok)
        return op_error(c, "update %s must match past_cache %s except along axis %d, where it "
                        "may be shorter", tensor_describe(upd, a, sizeof a),
                        tensor_describe(past, b, sizeof b), axis);
    memset(g, 0, sizeof *g);
    g->circular = p->circular;
    g->outer = shape_prod(past->dims, 0, axis);
    g->per_batch = shape_prod(past->dims, 1, axis);
    g->max_seq = past->dims[axis];
    g->seq = upd->dims[axis];
    g->inner = shape_prod(past->dims, axis + 1, past->rank);
    const int64_t batch = past->dims[0];
    if (wi) {
        if (wi->dtype != ONNX_DTYPE_INT64 || wi->rank != 1 || wi->dims[0] != batch)
            return op_error(c, "write_indices %s must be int64[%lld]", tensor_describe(wi, a, sizeof a),
                            (long long)batch);
        if (batch > 0 && !wi->data)
            return op_error(c, "write_indices has no host data");
    }
    for (int64_t i = 0; i < batch; i++) {
        int64_t w = wi ? tensor_get_int(wi, i) : 0;
        if (!g->circular && (w < 0 || w + g->seq > g->max_seq))
            return op_error(c, "write_indices[%lld] = %lld: writing %lld rows from there leaves "
                            "the %lld rows of the cache (mode linear)", (long long)i, (long long)w,
                            (long long)g->seq, (long long)g->max_seq);
        if (g->circular && g->max_seq == 0 && g->seq > 0)
            return op_error(c, "a circular write into a cache of 0 rows");
        idx[i] = w;
    }
    return 0;
}

static int ts_geom_alloc(const struct op_call *c, struct vis_scatter *g, int64_t **idx)
{
    int64_t batch = c->in[0]->rank > 0 ? c->in[0]->dims[0] : 0;
    *idx = malloc(sizeof(int64_t) * (size_t)(batch > 0 ? batch : 1));
    if (!*idx)
        return op_error(c, "out of host memory for %lld write indices", (long long)batch);
    if (vision_scatter_geom(c, g, *idx)) {
        free(*idx);
        return -1;
    }
    return 0;
}

static int ts_infer(struct op_call *c)
{
    struct vis_scatter g;
    int64_t *idx;
    if (ts_geom_alloc(c, &g, &idx))
        return -1;
    free(idx);
    const struct tensor *past = c->in[0];
    for (int k = 0; k < c->n_out; k++) {
        if (!c->out[k])
            continue;
        const struct tensor *like = k ? &((const struct ts_grad_params *)c->params)->update : past;
        c->out[k]->dtype = past->dtype;
        c->out[k]->rank = like->rank;
        memcpy(c->out[k]->dims, like->dims, sizeof like->dims);
    }
    return 0;
}

static int ts_cpu(struct op_call *c)
{
    struct vis_scatter g;
    int64_t *idx;
    if (ts_geom_alloc(c, &g, &idx))
        return -1;
    const size_t es = onnx_dtype_size(c->in[0]->dtype), row = (size_t)g.inner * es;
    const char *src = c->in[0]->data;
    char *dst = c->out[0]->data;
    if (!ts_is_grad(c)) {
        const char *upd = c->in[1]->data;
        memcpy(dst, src, tensor_size_bytes(c->in[0]));
        for (int64_t o = 0; o < g.outer; o++)
            for (int64_t s = 0; s < g.seq; s++) {
                int64_t r = vis_scatter_row(&g, idx[o / g.per_batch], s);
                memcpy(dst + (size_t)(o * g.max_seq + r) * row, upd + (size_t)(o * g.seq + s) * row,
                       row);
            }
        free(idx);
        return 0;
    }
    /* dpast: dy with the written rows zeroed; dupdate: those rows of dy */
    char *dupd = c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL;
    if (dst)
        memcpy(dst, src, tensor_size_bytes(c->in[0]));
    for (int64_t o = 0; o < g.outer; o++)
        for (int64_t s = 0; s < g.seq; s++) {
            int64_t r = vis_scatter_row(&g, idx[o / g.per_batch], s);
            if (dupd)
                memcpy(dupd + (size_t)(o * g.seq + s) * row, src + (size_t)(o * g.max_seq + r) * row, row);
            if (dst)
                memset(dst + (size_t)(o * g.max_seq + r) * row, 0, row);
        }
    free(idx);
    return 0;
}

static int ts_grad(struct grad_ctx *g)
{
    const struct tensor_scatter_params *p = g->fwd->params;
    if (g->dy[0] < 0 || (!g->need_dx[0] && !g->need_dx[1]))
        return 0;
    const struct tensor *upd = g->shape(g, g->in[1]);
    if (!upd)
        return grad_error(g, "no shape for input 1");
    struct onnx_attr a[3] = {
        { .name = "mode", .type = ONNX_ATTR_STRING, .s = (char *)(p->circular ? "circular" : "linear") },
        shape_attr_int("axis", p->axis),
        shape_attr_ints("shape", upd->rank, upd->dims),
    };
    a[0].s_len = strlen(a[0].s);
    int wi = g->fwd->n_in > 2 && g->in[2] >= 0 ? g->in[2] : -1;
    int in[2] = { g->dy[0], wi }, out[2];
    if (g->emit(g, "TensorScatterGrad", a, 3, wi >= 0 ? 2 : 1, in, 2, out))
        return -1;
    if (g->need_dx[0] && g->add_dx(g, 0, out[0]))
        return -1;
    if (g->need_dx[1] && g->add_dx(g, 1, out[1]))
        return -1;
    return 0;
}

const struct op_def op_tensor_scatter = {
    .domain = "", .name = "TensorScatter", .since = { 24 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = ts_parse, .infer = ts_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = ts_cpu },
    .host_inputs = 4u,
    .grad = ts_grad, .grad_saves_in = 4u,
};

const struct op_def op_tensor_scatter_grad = {
    .domain = "dtrexec", .name = "TensorScatterGrad", .since = { 1 },
    .min_in = 1, .max_in = 2, .min_out = 1, .max_out = 2,
    .parse = ts_grad_parse, .infer = ts_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = ts_cpu },
    .host_inputs = 2u,
};
