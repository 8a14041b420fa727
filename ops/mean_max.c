/* ops/mean_max.c — two operators made of kernels that exist already:
 *
 *  - Mean (opsets 1, 6, 8, 13): the elementwise mean of 1..N inputs with
 *    numpy broadcasting (opset 8 on; earlier versions want equal shapes,
 *    which broadcasting covers), float and double: Sum's fold of the inputs
 *    into the output in input order, then one division by N — the ONNX
 *    reference's order of operations, so the rounding agrees. Gradient: dy
 *    / N to every input, summed back over its broadcast axes.
 *
 *  - GlobalMaxPool (1, 22): the maximum over every spatial axis of an
 *    N x C x D1 x ... tensor, kept as extent-1 axes; float and double (NaN
 *    propagates). It is ReduceMax-18 over the axes 2..rank-1 with keepdims,
 *    run as that op's own kernel (ops/reduce.c, and ops/cuda/elem_reduce.c
 *    on the device) with the axes as a host tensor. Gradient: ReduceMax's
 *    ReduceSelectGrad(dy, X, Y), which gives each output's dy to the first
 *    element of its window equal to the maximum.
 *
 * The CUDA kernels (ops/cuda/misc.c) reuse the same pieces on the device. */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/misc-impl.h"

#define FLOATS_LIST "float, double"

extern const struct op_def op_sum;
extern const struct op_def op_reduce_max;

/* ---- Mean ----------------------------------------------------------------- */

#define MEAN_DIV_DEF(op, D)                                                             \
    EW_UNARY_INNER(op##_##D, EW_T_##D, EW_T_##D, x / (EW_T_##D) * (const double *)ctx)
EW_FLOAT_TYPES(MEAN_DIV_DEF, mean_div)
static const ew_inner_fn mean_div_fns[EW_DTYPE_COUNT] = { EW_FLOAT_TYPES(EW_ENTRY, mean_div) };

static int mean_infer(struct op_call *c)
{
    if (!EW_LOOKUP(mean_div_fns, c->in[0]->dtype))
        return ew_dtype_error(c, "input 0", c->in[0]->dtype, FLOATS_LIST);
    return op_sum.infer(c);
}

static int mean_cpu(struct op_call *c)
{
    ew_inner_fn fn = EW_LOOKUP(mean_div_fns, c->out[0]->dtype);
    if (!fn)
        return ew_dtype_error(c, "output", c->out[0]->dtype, FLOATS_LIST);
    if (op_sum.kernel[BACKEND_CPU](c))
        return -1;
    double n = c->n_in;
    const struct tensor *self[1] = { c->out[0] };
    ew_apply(c->out[0], self, 1, fn, &n);
    return 0;
}

static int mean_grad(struct grad_ctx *g)
{
    const struct tensor *y = g->fwd->out[0];
    if (g->dy[0] < 0)
        return 0;
    float nf = (float)g->fwd->n_in;
    double nd = g->fwd->n_in;
    struct tensor n = { .dtype = y->dtype, .rank = 0,
                        .data = y->dtype == ONNX_DTYPE_DOUBLE ? (void *)&nd : (void *)&nf };
    int hn = g->constant(g, &n), h, in[2];
    if (hn < 0)
        return -1;
    in[0] = g->dy[0];
    in[1] = hn;
    if (g->emit(g, "Div", NULL, 0, 2, in, 1, &h))
        return -1;
    for (int i = 0; i < g->fwd->n_in; i++)
        if (g->in[i] >= 0 && grad_add_dx_broadcast(g, i, h))
            return -1;
    return 0;
}

static struct op_cost mean_cost(const struct op_call *c)
{
    return ew_cost_scaled(c, c->n_in);
}

const struct op_def op_mean = {
    .domain = "", .name = "Mean", .since = { 1, 6, 8, 13 },
    .min_in = 1, .max_in = OP_VARIADIC, .min_out = 1, .max_out = 1,
    .infer = mean_infer, .cost = mean_cost,
    .kernel = { [BACKEND_CPU] = mean_cpu },
    .grad = mean_grad,
};

/* ---- GlobalMaxPool ----------------------------------------------------------- */

/* ReduceMax-18's parameters: keepdims, axes from input 1, and an empty axes
 * list (a rank-2 input has no spatial axes) leaving the data unchanged. */
static int gmp_parse(const struct onnx_node *node, int version, void **params, char *err,
                     size_t err_size)
{
    (void)version;
    struct onnx_attr a[2] = {
        { .name = "keepdims", .type = ONNX_ATTR_INT, .i = 1 },
        { .name = "noop_with_empty_axes", .type = ONNX_ATTR_INT, .i = 1 },
    };
    struct onnx_node r = { .name = node->name, .op_type = "ReduceMax", .domain = "",
                           .n_attrs = 2, .attrs = a };
    return op_reduce_max.parse(&r, 18, params, err, err_size);
}

/* The ReduceMax call a GlobalMaxPool call c runs (ops/misc-impl.h). */
int misc_global_max_pool_call(const struct op_call *c, struct op_call *r, struct tensor *axes,
                            int64_t *axes_data, const struct tensor **in)
{
    const struct tensor *x = c->in[0];
    if (x->rank < 2)
        return op_error(c, "input X has rank %d; GlobalMaxPool takes N x C x D1 x ...",
                        x->rank);
    memset(axes, 0, sizeof *axes);
    axes->dtype = ONNX_DTYPE_INT64;
    axes->rank = 1;
    axes->dims[0] = x->rank - 2;
    axes->data = axes_data;
    for (int i = 2; i < x->rank; i++)
        axes_data[i - 2] = i;
    *r = *c;
    r->def = &op_reduce_max;
    r->version = 18;
    in[0] = x;
    in[1] = axes;
    r->in = in;
    r->n_in = 2;
    return 0;
}

static int gmp_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "input 0", x->dtype, FLOATS_LIST);
    struct op_call r;
    struct tensor axes;
    int64_t ax[TENSOR_MAX_RANK];
    const struct tensor *in[2];
    if (misc_global_max_pool_call(c, &r, &axes, ax, in))
        return -1;
    return op_reduce_max.infer(&r);
}

static int gmp_cpu(struct op_call *c)
{
    struct op_call r;
    struct tensor axes;
    int64_t ax[TENSOR_MAX_RANK];
    const struct tensor *in[2];
    if (misc_global_max_pool_call(c, &r, &axes, ax, in))
        return -1;
    return op_reduce_max.kernel[BACKEND_CPU](&r);
}

static int gmp_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    if (g->fwd->in[0]->rank == 2)
        return g->add_dx(g, 0, g->dy[0]);
    int dx, in[3] = { g->dy[0], g->in[0], g->out[0] };
    if (g->emit(g, "ReduceSelectGrad", NULL, 0, 3, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

/* One comparison per input element. */
static struct op_cost gmp_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    cost.flops = (double)tensor_numel(c->in[0]);
    return cost;
}

const struct op_def op_global_max_pool = {
    .domain = "", .name = "GlobalMaxPool", .since = { 1, 22 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .parse = gmp_parse, .infer = gmp_infer, .cost = gmp_cost,
    .kernel = { [BACKEND_CPU] = gmp_cpu },
    .grad = gmp_grad, .grad_saves_in = 1u, .grad_saves_out = 1u,
};
