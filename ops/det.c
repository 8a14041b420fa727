/* ops/det.c — Det (opsets 11, 22): the determinants of the square matrices
 * in the last two axes of a [..., M, M] tensor, float and double, computed
 * in double by LU decomposition with partial pivoting (ops/det-impl.h,
 * shared with the CUDA kernel). Version 22 only added bfloat16 and float16.
 *
 * Gradient: DetGrad(dy, X): dX = dy * cofactor(X), which is det * X^-T
 * where X is invertible and the signed minors where it is not. */
#include <stdlib.h>
#include <string.h>

#include "ops/det-impl.h"
#include "ops/elementwise-impl.h"

#define FLOATS_LIST "float, double"

static int det_infer(struct op_call *c)
{
    const int grad = c->n_in == 2;
    const struct tensor *x = c->in[grad ? 1 : 0];
    char d[128];
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "X", x->dtype, FLOATS_LIST);
    if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
        return op_error(c, "input %s must be [..., M, M]", tensor_describe(x, d, sizeof d));
    struct tensor *y = c->out[0];
    y->dtype = x->dtype;
    if (grad) {
        const struct tensor *dy = c->in[0];
        if (dy->dtype != x->dtype || dy->rank != x->rank - 2 ||
            memcmp(dy->dims, x->dims, sizeof(int64_t) * (size_t)dy->rank))
            return op_error(c, "dy %s must be X's dtype and X's shape without the last two axes",
                            tensor_describe(dy, d, sizeof d));
        y->rank = x->rank;
        memcpy(y->dims, x->dims, sizeof y->dims);
        return 0;
    }
    y->rank = x->rank - 2;
    memcpy(y->dims, x->dims, sizeof(int64_t) * (size_t)y->rank);
    return 0;
}

static int det_cpu(struct op_call *c)
{
    const int grad = c->n_in == 2;
    const struct tensor *x = c->in[grad ? 1 : 0];
    const int64_t m = x->dims[x->rank - 1], mm = m * m;
    const int64_t batch = mm ? tensor_numel(x) / mm : tensor_numel(c->out[0]);
    struct op_env *env = c->env;
    double *w = env->scratch_alloc(env->ctx, sizeof(double) * (size_t)(2 * mm + 1));
    if (!w)
        return op_error(c, "no scratch memory for %lld doubles", (long long)(2 * mm + 1));
    for (int64_t b = 0; b < batch; b++) {
        if (x->dtype == ONNX_DTYPE_FLOAT) {
            const float *xs = (const float *)x->data + b * mm;
            if (grad) {
                float *dx = (float *)c->out[0]->data + b * mm;
                const float g = ((const float *)c->in[0]->data)[b];
                det_cofactors_float(xs, m, dx, w);
                for (int64_t i = 0; i < mm; i++)
                    dx[i] *= g;
            } else {
                for (int64_t i = 0; i < mm; i++)
                    w[i] = xs[i];
                ((float *)c->out[0]->data)[b] = (float)det_lu(w, m);
            }
        } else {
            const double *xs = (const double *)x->data + b * mm;
            if (grad) {
                double *dx = (double *)c->out[0]->data + b * mm;
                const double g = ((const double *)c->in[0]->data)[b];
                det_cofactors_double(xs, m, dx, w);
                for (int64_t i = 0; i < mm; i++)
                    dx[i] *= g;
            } else {
                memcpy(w, xs, sizeof(double) * (size_t)mm);
                ((double *)c->out[0]->data)[b] = det_lu(w, m);
            }
        }
    }
    env->scratch_free(env->ctx, w);
    return 0;
}

static struct op_cost det_cost(const struct op_call *c)
{
    const struct tensor *x = c->in[c->n_in - 1];
    struct op_cost cost = cost_memory(c);
    double m = (double)x->dims[x->rank - 1];
    cost.flops = (double)tensor_numel(x) * m * (c->n_in == 2 ? 3 : 1);
    return cost;
}

static int det_grad(struct grad_ctx *g)
{
    if (g->dy[0] < 0 || !g->need_dx[0])
        return 0;
    int dx, in[2] = { g->dy[0], g->in[0] };
    if (g->emit(g, "DetGrad", NULL, 0, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_det = {
    .domain = "", .name = "Det", .since = { 11, 22 },
    .min_in = 1, .max_in = 1, .min_out = 1, .max_out = 1,
    .infer = det_infer, .cost = det_cost,
    .kernel = { [BACKEND_CPU] = det_cpu },
    .grad = det_grad, .grad_saves_in = 1u,
};

const struct op_def op_det_grad = {
    .domain = "dtrexec", .name = "DetGrad", .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .infer = det_infer, .cost = det_cost,
    .kernel = { [BACKEND_CPU] = det_cpu },
};
