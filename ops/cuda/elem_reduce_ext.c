/* ops/cuda/elem_reduce_ext.c — CUDA kernels of ReduceProd, ReduceL1,
 * ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp and their
 * gradient ReduceExtGrad (ops/reduce_ext.c).
 *
 * The axes come from the attribute or from input 1, a host tensor
 * (op_def.host_inputs), through ew_reduce_mask as on the CPU; with
 * noop_with_empty_axes nothing is reduced but the element map applies. The
 * kept axes index the outputs and the reduced axes the elements of each
 * group (struct cuda_reduce_geom); the device folds every group in a fixed
 * tree (ops/cuda/elem_reduce_ext_kernels.cu). */
#include <string.h>

#include "ops/cuda/elem-impl.h"
#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

#define RX_TYPES "float, double, int32, int64, uint32, uint64"

/* The groups of x under mask: kept and reduced axes with x's strides. */
static void rx_geom(struct cuda_reduce_geom *g, const struct tensor *x, const int *mask)
{
    int64_t st[TENSOR_MAX_RANK], s = 1;
    for (int i = x->rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= x->dims[i];
    }
    memset(g, 0, sizeof *g);
    g->n_out = 1;
    g->count = 1;
    for (int i = 0; i < x->rank; i++) {
        if (mask[i]) {
            g->red_dims[g->n_red] = x->dims[i];
            g->red_strides[g->n_red++] = st[i];
            g->count *= x->dims[i];
        } else {
            g->kept_dims[g->n_kept] = x->dims[i];
            g->kept_strides[g->n_kept++] = st[i];
            g->n_out *= x->dims[i];
        }
    }
}

int cuda_elem_reduce_ext(struct op_call *c)
{
    const struct reduce_params *p = c->params;
    const struct tensor *x = c->in[0];
    int mask[TENSOR_MAX_RANK], noop;
    if (!p)
        return op_error(c, "called without parsed attributes");
    if (ew_reduce_mask(c, mask, &noop))
        return -1;
    for (int i = 0; noop && i < x->rank; i++)
        mask[i] = 0;
    struct cuda_reduce_geom g;
    rx_geom(&g, x, mask);
    if (g.n_out != tensor_numel(c->out[0]))
        return op_error(c, "internal: %lld outputs planned for %lld", (long long)g.n_out,
                        (long long)tensor_numel(c->out[0]));
    cudaError_t e = cuda_reduce_ext_launch(cuda_ctx_of(c)->stream, p->kind, x->dtype, &g, x->data, c->out[0]->data);
    if (e == cudaErrorNotSupported)
        return ew_dtype_error(c, "input 0", x->dtype, RX_TYPES);
    CUDA_TRY(c, e);
    return 0;
}

/* ReduceExtGrad(dy, X[, Y]) -> dX, dy and Y in the keepdims shape. */
int cuda_elem_reduce_ext_grad(struct op_call *c)
{
    const struct reduce_ext_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *x = c->in[1];
    const struct tensor *y = c->n_in > 2 ? c->in[2] : NULL;
    int mask[TENSOR_MAX_RANK] = { 0 };
    for (int i = 0; i < x->rank; i++)
        mask[i] = dy->dims[i] == 1;
    struct cuda_reduce_geom g;
    rx_geom(&g, x, mask);
    cudaError_t e = cuda_reduce_ext_grad_launch(cuda_ctx_of(c)->stream, p->kind, x->dtype, &g, dy->data, x->data,
                                                y ? y->data : NULL, c->out[0]->data);
    if (e == cudaErrorNotSupported)
        return ew_dtype_error(c, "X", x->dtype, "float, double");
    CUDA_TRY(c, e);
    return 0;
}
