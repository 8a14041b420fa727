/* ops/cuda/elem_reduce.c — CUDA kernels of ReduceSum, ReduceMean, ReduceMax,
 * ReduceMin and ReduceSelectGrad (ops/reduce.c).
 *
 * The axes come from the attribute or from input 1, which the runtime hands
 * over as a host tensor (op_def.host_inputs). As on the CPU, the input is
 * collapsed into groups of neighbouring axes that are all reduced or all
 * kept (extent-1 axes dropped); the kept groups index the outputs and the
 * reduced groups the elements of each, and the device folds each output's
 * elements in an order fixed by the shape (ops/cuda/elem_reduce_kernels.cu). */
#include <string.h>

#include "ops/cuda/elem-impl.h"
#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

#define NUMERIC_LIST "float, double, int8, int16, int32, int64, uint8, uint16, uint32, uint64"

/* reduce_params.kind holds ops/reduce.c's enum reduce_kind, whose values
 * are those of enum cuda_reduce_kind: SUM 0, MAX 1, MIN 2. */

/* Groups of neighbouring axes alike in being reduced, with contiguous input
 * strides, split into the kept and the reduced ones. */
static void reduce_geom_init(struct cuda_reduce_geom *g, const struct tensor *x, const int *mask)
{
    int64_t ext[TENSOR_MAX_RANK], st[TENSOR_MAX_RANK];
    int red[TENSOR_MAX_RANK], ng = 0;
    for (int i = 0; i < x->rank; i++) {
        if (x->dims[i] == 1)
            continue;
        if (ng > 0 && red[ng - 1] == mask[i]) {
            ext[ng - 1] *= x->dims[i];
        } else {
            ext[ng] = x->dims[i];
            red[ng] = mask[i];
            ng++;
        }
    }
    int64_t s = 1;
    for (int k = ng - 1; k >= 0; k--) {
        st[k] = s;
        s *= ext[k];
    }
    memset(g, 0, sizeof *g);
    g->n_out = 1;
    g->count = 1;
    for (int k = 0; k < ng; k++) {
        if (red[k]) {
            g->red_dims[g->n_red] = ext[k];
            g->red_strides[g->n_red++] = st[k];
            g->count *= ext[k];
        } else {
            g->kept_dims[g->n_kept] = ext[k];
            g->kept_strides[g->n_kept++] = st[k];
            g->n_out *= ext[k];
        }
    }
}

int cuda_elem_reduce(struct op_call *c)
{
    const struct reduce_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    int mask[TENSOR_MAX_RANK], noop;
    if (!p)
        return op_error(c, "called without parsed attributes");
    if (cuda_reduce_launch(NULL, p->kind, p->mean, x->dtype, NULL, NULL, NULL, NULL) !=
        cudaSuccess)
        return ew_dtype_error(c, "input 0", x->dtype, NUMERIC_LIST);
    if (ew_reduce_mask(c, mask, &noop))
        return -1;
    int64_t count = 1;
    for (int i = 0; i < x->rank; i++)
        if (mask[i] && !noop)
            count *= x->dims[i];
    if (tensor_numel(y) == 0)
        return 0;
    if (noop || count == 1)        /* nothing is combined: the data is unchanged */
        return cuda_elem_copy(c, y->data, x->data, tensor_size_bytes(y));
    struct cuda_reduce_geom g;
    reduce_geom_init(&g, x, mask);
    if (g.n_out != tensor_numel(y))
        return op_error(c, "internal: %lld outputs planned for %lld", (long long)g.n_out,
                        (long long)tensor_numel(y));
    size_t bytes = cuda_reduce_scratch_bytes(x->dtype, &g);
    void *scratch = NULL;
    if (bytes && !(scratch = cuda_elem_scratch(c, bytes)))
        return -1;
    cudaError_t e = cuda_reduce_launch(cuda_ctx_of(c)->stream, p->kind, p->mean, x->dtype, &g,
                                       x->data, y->data, scratch);
    cuda_elem_scratch_free(c, scratch);
    CUDA_TRY(c, e);
    return 0;
}

/* ReduceSelectGrad(dy, X, Y) -> dX, dy and Y in the keepdims shape. */
int cuda_elem_reduce_select_grad(struct op_call *c)
{
    const struct tensor *dy = c->in[0], *x = c->in[1], *y = c->in[2];
    int64_t n_out = tensor_numel(y), st[TENSOR_MAX_RANK];
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "X", x->dtype, "float, double");
    if (tensor_numel(x) == 0)
        return 0;
    broadcast_strides(y, x, st);
    unsigned long long *first = cuda_elem_scratch(c, (size_t)n_out * sizeof *first);
    if (!first)
        return -1;
    cudaError_t e = cuda_select_grad_launch(cuda_ctx_of(c)->stream, x->dtype, x->rank, x->dims,
                                            st, n_out, x->data, y->data, dy->data,
                                            c->out[0]->data, first);
    cuda_elem_scratch_free(c, first);
    CUDA_TRY(c, e);
    return 0;
}
