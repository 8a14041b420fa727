/* ops/max_unpool.c — MaxUnpool (opset 9, 11, 22): X and I [N, C, spatial...]
 * (I int64, MaxPool's Indices: flat offsets over the whole unpooled
 * tensor) with kernel_shape, pads, strides, and the optional output_shape
 * (int64 host input 2). The unpooled shape is (in - 1) * stride - pads +
 * kernel per spatial axis; Y of that shape is zero but Y[I[j]] = X[j] (the
 * last j wins where indices repeat), and with output_shape it sits in the
 * leading corner of a zero tensor of that (no smaller) shape, as the ONNX
 * reference places it. Any element type (the kernels move bytes).
 *
 * Gradient: MaxUnpoolGrad(dY, I) -> dX (domain dtrexec, the forward's
 * attributes): dX[j] = dY[place(I[j])] where j is the writer that won, else
 * 0 — a gather; the winners are found by walking j backwards with a bitmap
 * of taken places (budgeted scratch).
 *
 * The index checks (0 <= I[j] < the unpooled size) run in the kernels: an
 * out-of-range index is an error naming it, never a stray write.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/nn-impl.h"
#include "ops/pool-window.h"

struct unpool_params {
    int n_kernel, n_pads, n_strides;
    int64_t kernel[PW_MAX_AXES], pads[2 * PW_MAX_AXES], strides[PW_MAX_AXES];
};

static int unpool_parse(const struct onnx_node *node, int version, void **params, char *err,
                        size_t err_size)
{
    (void)version;
    struct unpool_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->n_kernel = onnx_node_attr_ints(node, "kernel_shape", p->kernel, PW_MAX_AXES);
    p->n_pads = onnx_node_attr_ints(node, "pads", p->pads, 2 * PW_MAX_AXES);
    p->n_strides = onnx_node_attr_ints(node, "strides", p->strides, PW_MAX_AXES);
    const char *bad = p->n_kernel < 1 ? "kernel_shape is required and" : NULL;
    if (!bad && ((p->n_pads > 0 && p->n_pads != 2 * p->n_kernel) || p->n_pads == -2 ||
                 (p->n_strides > 0 && p->n_strides != p->n_kernel) || p->n_strides == -2))
        bad = "pads (2 per axis) and strides (1 per axis)";
    for (int i = 0; !bad && i < p->n_kernel; i++)
        if (p->kernel[i] < 1 || (p->n_strides > 0 && p->strides[i] < 1) ||
            (p->n_pads > 0 && (p->pads[i] < 0 || p->pads[p->n_kernel + i] < 0)))
            bad = "kernel_shape, strides (positive) and pads (non-negative)";
    if (bad) {
        ew_parse_error(err, err_size, "%s must have one entry per spatial axis (at most %d)", bad,
                       PW_MAX_AXES);
        free(p);
        *params = NULL;
        return -1;
    }
    return 0;
}

/* The unpooled (inferred) and output shapes. X is input 0 for MaxUnpool;
 * for MaxUnpoolGrad X's shape is I's (input 1) and dY (input 0) must have
 * the output shape, which is either the inferred one or larger. */
int max_unpool_geom(const struct op_call *c, struct unpool_geom *g)
{
    const struct unpool_params *p = c->params;
    const int grad = !strcmp(c->def->name, "MaxUnpoolGrad");
    const struct tensor *x = grad ? c->in[1] : c->in[0], *ind = c->in[1];
    const struct tensor *os = !grad && c->n_in > 2 ? c->in[2] : NULL;
    char d1[128], d2[128];
    if (x->rank != p->n_kernel + 2)
        return op_error(c, "X %s must have N, C and %d spatial axes (kernel_shape)",
                        tensor_describe(x, d1, sizeof d1), p->n_kernel);
    if (ind->dtype != ONNX_DTYPE_INT64 || !tensor_same_shape(ind, x))
        return op_error(c, "I %s must be int64 of X's shape %s", tensor_describe(ind, d1, sizeof d1),
                        tensor_describe(x, d2, sizeof d2));
    memset(g, 0, sizeof *g);
    g->rank = x->rank;
    g->inf[0] = x->dims[0];
    g->inf[1] = x->dims[1];
    for (int i = 0; i < p->n_kernel; i++) {
        int64_t st = p->n_strides > 0 ? p->strides[i] : 1;
        int64_t pads = p->n_pads > 0 ? p->pads[i] + p->pads[p->n_kernel + i] : 0;
        g->inf[2 + i] = (x->dims[2 + i] - 1) * st - pads + p->kernel[i];
        if (g->inf[2 + i] < 0)
            return op_error(c, "the unpooled axis %d would have %lld elements", 2 + i,
                            (long long)g->inf[2 + i]);
    }
    memcpy(g->out, g->inf, sizeof g->out);
    const struct tensor *given = grad ? c->in[0] : NULL;
    if (os) {
        if ((os->dtype != ONNX_DTYPE_INT64 && os->dtype != ONNX_DTYPE_INT32) || os->rank != 1 ||
            os->dims[0] != x->rank)
            return op_error(c, "output_shape %s must be int64 [%d]", tensor_describe(os, d1, sizeof d1),
                            x->rank);
        for (int i = 0; i < x->rank; i++)
            g->out[i] = tensor_get_int(os, i);
    } else if (given) {
        if (given->rank != x->rank)
            return op_error(c, "dY %s must have X's rank %d", tensor_describe(given, d1, sizeof d1), x->rank);
        memcpy(g->out, given->dims, sizeof(int64_t) * (size_t)x->rank);
    }
    for (int i = 0; i < x->rank; i++)
        if (g->out[i] < g->inf[i] || (i < 2 && g->out[i] != g->inf[i]))
            return op_error(c, "output shape axis %d is %lld, below the unpooled %lld (or a batch or "
                            "channel count that differs from X's)", i, (long long)g->out[i],
                            (long long)g->inf[i]);
    g->inf_numel = 1;
    for (int i = 0; i < x->rank; i++)
        g->inf_numel *= g->inf[i];
    return 0;
}

static int unpool_infer(struct op_call *c)
{
    const int grad = !strcmp(c->def->name, "MaxUnpoolGrad");
    struct unpool_geom g;
    if (max_unpool_geom(c, &g))
        return -1;
    struct tensor *y = c->out[0];
    if (grad) {
        *y = *c->in[1];
        y->dtype = c->in[0]->dtype;
    } else {
        *y = (struct tensor){ .dtype = c->in[0]->dtype, .rank = g.rank };
        memcpy(y->dims, g.out, sizeof(int64_t) * (size_t)g.rank);
    }
    y->data = NULL;
    return 0;
}

/* The first index outside [0, inf_numel), or -1 when all are inside. */
int64_t max_unpool_bad_index(const struct unpool_geom *g, const int64_t *ind, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        if (ind[j] < 0 || ind[j] >= g->inf_numel)
            return j;
    return -1;
}

static int index_error(const struct op_call *c, const struct unpool_geom *g, const int64_t *ind,
                       int64_t j)
{
    return op_error(c, "index I[%lld] = %lld is outside the unpooled tensor of %lld elements",
                    (long long)j, (long long)ind[j], (long long)g->inf_numel);
}

static int unpool_cpu(struct op_call *c)
{
    struct unpool_geom g;
    if (max_unpool_geom(c, &g))
        return -1;
    const struct tensor *x = c->in[0];
    const int64_t *ind = c->in[1]->data, n = tensor_numel(x);
    int64_t bad = max_unpool_bad_index(&g, ind, n);
    if (bad >= 0)
        return index_error(c, &g, ind, bad);
    size_t es = tensor_size_bytes(x) / (size_t)(n ? n : 1);
    char *y = c->out[0]->data;
    const char *xs = x->data;
    memset(y, 0, tensor_size_bytes(c->out[0]));
    for (int64_t j = 0; j < n; j++)
        memcpy(y + (size_t)pw_unpool_dst(&g, ind[j]) * es, xs + (size_t)j * es, es);
    return 0;
}

static int unpool_grad_cpu(struct op_call *c)
{
    struct unpool_geom g;
    if (max_unpool_geom(c, &g))
        return -1;
    const int64_t *ind = c->in[1]->data, n = tensor_numel(c->in[1]);
    int64_t bad = max_unpool_bad_index(&g, ind, n);
    if (bad >= 0)
        return index_error(c, &g, ind, bad);
    uint8_t *taken = nn_scratch_alloc(c, (size_t)(g.inf_numel / 8 + 1));
    if (!taken)
        return op_error(c, "no scratch memory for %lld bits", (long long)g.inf_numel);
    memset(taken, 0, (size_t)(g.inf_numel / 8 + 1));
    size_t es = tensor_size_bytes(c->out[0]) / (size_t)(n ? n : 1);
    const char *dy = c->in[0]->data;
    char *dx = c->out[0]->data;
    for (int64_t j = n - 1; j >= 0; j--) {
        int64_t q = ind[j];
        if (taken[q >> 3] & (1u << (q & 7))) {
            memset(dx + (size_t)j * es, 0, es);
        } else {
            taken[q >> 3] |= (uint8_t)(1u << (q & 7));
            memcpy(dx + (size_t)j * es, dy + (size_t)pw_unpool_dst(&g, q) * es, es);
        }
    }
    nn_scratch_free(c, taken);
    return 0;
}

static int unpool_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    int in[2] = { g->dy[0], g->in[1] }, dx;
    if (g->emit(g, "MaxUnpoolGrad", g->node->attrs, g->node->n_attrs, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_max_unpool = {
    .domain = "", .name = "MaxUnpool", .since = { 9, 11, 22 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = unpool_parse, .infer = unpool_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = unpool_cpu },
    .host_inputs = 1u << 2,
    .grad = unpool_grad, .grad_saves_in = 1u << 1,
};

const struct op_def op_max_unpool_grad = {
    .domain = "dtrexec", .name = "MaxUnpoolGrad", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = unpool_parse, .infer = unpool_infer, .cost = cost_memory,
    .kernel = { [BACKEND_CPU] = unpool_grad_cpu },
};
