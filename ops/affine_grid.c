/* ops/affine_grid.c — AffineGrid (opset 20): the sampling grid of a batch
 * of affine maps, theta [N, 2, 3] with size [N, C, H, W] giving a grid
 * [N, H, W, 2], or theta [N, 3, 4] with size [N, C, D, H, W] giving
 * [N, D, H, W, 3]; float and double. grid[n, p, j] = sum_k theta[n, j, k]
 * * b_k(p) over the homogeneous base point b = (x, y[, z], 1) of output
 * position p, whose coordinates run over [-1, 1] along W, H (and D): at
 * -1 + i * 2 / (len - 1) with align_corners, else at (2 i + 1) / len - 1 (the
 * reference's numpy.arange, start + i * step in double). size is read on the
 * host. The sums run in double, in k order.
 *
 * Gradient: AffineGridGrad(dgrid, size) -> dtheta, dtheta[n, j, k] = sum over
 * p (in order) of dgrid[n, p, j] b_k(p); size is not differentiable. The
 * CUDA kernels (ops/cuda/misc.c) take the same per-axis start and step. */
#include <stdlib.h>
#include <string.h>

#include "ops/elementwise-impl.h"
#include "ops/misc-impl.h"
#include "ops/misc-params.h"

#define FLOATS_LIST "float, double"

static int affine_parse(const struct onnx_node *node, int version, void **params, char *err,
                        size_t err_size)
{
    (void)version;
    struct affine_grid_params *p = ew_params_new(sizeof *p, params, err, err_size);
    if (!p)
        return -1;
    p->align_corners = onnx_node_attr_int(node, "align_corners", 0) != 0;
    return 0;
}

int misc_affine_geom(const struct op_call *c, struct misc_affine *a)
{
    const struct affine_grid_params *p = c->params;
    const struct tensor *size = c->in[1];
    char d[128];
    if (size->dtype != ONNX_DTYPE_INT64 || size->rank != 1 ||
        (size->dims[0] != 4 && size->dims[0] != 5))
        return op_error(c, "size %s must be int64 [N, C, H, W] or [N, C, D, H, W]",
                        tensor_describe(size, d, sizeof d));
    a->r = (int)size->dims[0] - 2;
    a->n = tensor_get_int(size, 0);
    a->points = 1;
    for (int i = 0; i < a->r; i++) {
        int64_t len = tensor_get_int(size, 2 + i);
        if (len < 0 || a->n < 0)
            return op_error(c, "size has a negative extent (%lld at %d)", (long long)len, 2 + i);
        a->dims[i] = len;
        a->points *= len;
        /* the i-th spatial axis (D, H, W order) holds coordinate r - 1 - i */
        if (p->align_corners) {
            a->start[i] = -1;
            a->step[i] = len > 1 ? 2.0 / (double)(len - 1) : 0;
        } else {
            a->step[i] = len > 0 ? 2.0 / (double)len : 0;
            a->start[i] = -1 + a->step[i] / 2;
        }
    }
    return 0;
}

static int affine_infer(struct op_call *c)
{
    const int grad = c->def && !strcmp(c->def->name, "AffineGridGrad");
    const struct tensor *t = c->in[0];
    struct misc_affine a;
    char d[128];
    if (t->dtype != ONNX_DTYPE_FLOAT && t->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, grad ? "dgrid" : "theta", t->dtype, FLOATS_LIST);
    if (misc_affine_geom(c, &a))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = t->dtype;
    if (grad) {
        int ok = t->rank == a.r + 2 && t->dims[0] == a.n && t->dims[a.r + 1] == a.r;
        for (int i = 0; ok && i < a.r; i++)
            ok = t->dims[1 + i] == a.dims[i];
        if (!ok)
            return op_error(c, "dgrid %s does not match the grid of size", tensor_describe(t, d, sizeof d));
        y->rank = 3;
        y->dims[0] = a.n;
        y->dims[1] = a.r;
        y->dims[2] = a.r + 1;
        return 0;
    }
    if (t->rank != 3 || t->dims[0] != a.n || t->dims[1] != a.r || t->dims[2] != a.r + 1)
        return op_error(c, "theta %s must be [%lld, %d, %d] for size of %d entries",
                        tensor_describe(t, d, sizeof d), (long long)a.n, a.r, a.r + 1, a.r + 2);
    y->rank = a.r + 2;
    y->dims[0] = a.n;
    for (int i = 0; i < a.r; i++)
        y->dims[1 + i] = a.dims[i];
    y->dims[a.r + 1] = a.r;
    return 0;
}

/* b_k of point p: coordinate k (x, y, z) is the spatial axis r - 1 - k. */
static void base_point(const struct misc_affine *a, int64_t p, double *b)
{
    for (int i = a->r - 1; i >= 0; i--) {
        int64_t idx = p % a->dims[i];
        p /= a->dims[i];
        b[a->r - 1 - i] = a->start[i] + (double)idx * a->step[i];
    }
    b[a->r] = 1;
}

#define AFFINE_DEF(unused, D)                                                           \
    static void affine_##D(const struct misc_affine *a, const EW_T_##D *theta,          \
                           EW_T_##D *grid)                                              \
    {                                                                                   \
        const int r = a->r;                                                             \
        for (int64_t n = 0; n < a->n; n++)                                              \
            for (int64_t p = 0; p < a->points; p++) {                                   \
                double b[4];                                                            \
                base_point(a, p, b);                                                    \
                for (int j = 0; j < r; j++) {                                           \
                    double s = 0;                                                       \
                    for (int k = 0; k <= r; k++)                                        \
                        s += (double)theta[(n * r + j) * (r + 1) + k] * b[k];           \
                    grid[(n * a->points + p) * r + j] = (EW_T_##D)s;                    \
                }                                                                       \
            }                                                                           \
    }                                                                                   \
    static void affine_grad_##D(const struct misc_affine *a, const EW_T_##D *dgrid,     \
                                EW_T_##D *dtheta)                                       \
    {                                                                                   \
        const int r = a->r;                                                             \
        for (int64_t n = 0; n < a->n; n++)                                              \
            for (int j = 0; j < r; j++)                                                 \
                for (int k = 0; k <= r; k++) {                                          \
                    double s = 0, b[4];                                                 \
                    for (int64_t p = 0; p < a->points; p++) {                           \
                        base_point(a, p, b);                                            \
                        s += (double)dgrid[(n * a->points + p) * r + j] * b[k];         \
                    }                                                                   \
                    dtheta[(n * r + j) * (r + 1) + k] = (EW_T_##D)s;                    \
                }                                                                       \
    }
EW_FLOAT_TYPES(AFFINE_DEF, _)

static int affine_cpu(struct op_call *c)
{
    const int grad = c->def && !strcmp(c->def->name, "AffineGridGrad");
    struct misc_affine a;
    if (misc_affine_geom(c, &a))
        return -1;
    const void *in = c->in[0]->data;
    void *out = c->out[0]->data;
    if (c->in[0]->dtype == ONNX_DTYPE_FLOAT) {
        if (grad)
            affine_grad_FLOAT(&a, in, out);
        else
            affine_FLOAT(&a, in, out);
    } else {
        if (grad)
            affine_grad_DOUBLE(&a, in, out);
        else
            affine_DOUBLE(&a, in, out);
    }
    return 0;
}

static struct op_cost affine_cost(const struct op_call *c)
{
    return ew_cost_scaled(c, 8);
}

static int affine_grad(struct grad_ctx *g)
{
    const struct affine_grid_params *p = g->fwd->params;
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    struct onnx_attr a = { .name = "align_corners", .type = ONNX_ATTR_INT, .i = p->align_corners };
    int dx, in[2] = { g->dy[0], g->in[1] };
    if (g->emit(g, "AffineGridGrad", &a, 1, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_affine_grid = {
    .domain = "", .name = "AffineGrid", .since = { 20 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = affine_parse, .infer = affine_infer, .cost = affine_cost,
    .kernel = { [BACKEND_CPU] = affine_cpu },
    .host_inputs = 2u,
    .grad = affine_grad, .grad_saves_in = 2u,
};

const struct op_def op_affine_grid_grad = {
    .domain = "dtrexec", .name = "AffineGridGrad", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = affine_parse, .infer = affine_infer, .cost = affine_cost,
    .kernel = { [BACKEND_CPU] = affine_cpu },
    .host_inputs = 2u,
};
