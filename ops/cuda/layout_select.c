/* ops/cuda/layout_select.c — CUDA kernels of ArgMax, ArgMin, TopK (ops/topk.c),
 * OneHot (ops/onehot.c), CumSum and Trilu (ops/cumsum_trilu.c).
 *
 * Axes, k, depth and the diagonal offset come from the CPU files' plan
 * functions (ops/shape-impl.h), which read the host copies of the inputs
 * flagged in op_def.host_inputs. Each device thread does one line (ArgMax,
 * TopK, CumSum) or one element (OneHot, Trilu) exactly as the CPU does, so
 * the results are the CPU's bits; TopK's merge sort keeps two int64 arrays
 * per line in scratch memory. */
#include "ops/cuda/index-kernels.h"
#include "ops/cuda/layout-impl.h"
#include "ops/elementwise-impl.h"
#include "ops/shape-params.h"
#include "ops/shape-impl.h"

#define SELECT_TYPES "float, double, int8, int16, int32, int64, uint8, uint16, uint32, uint64"

static int launched(struct op_call *c, cudaError_t e)
{
    if (e == cudaErrorInvalidValue)
        return op_error(c, "CUDA: unsupported dtype %s for this kernel", onnx_dtype_name(c->in[0]->dtype));
    CUDA_TRY(c, e);
    return 0;
}

int cuda_arg_select(struct op_call *c)
{
    const struct arg_params *p = c->params;
    const struct tensor *x = c->in[0];
    int axis = arg_plan(c);
    if (axis < 0)
        return -1;
    int64_t outer = shape_prod(x->dims, 0, axis), n = x->dims[axis];
    int64_t inner = shape_prod(x->dims, axis + 1, x->rank);
    return launched(c, index_arg_launch(c->out[0]->data, x->data, x->dtype, outer, n, inner, p->min, p->last,
                                        cuda_ctx_of(c)->stream));
}

int cuda_topk(struct op_call *c)
{
    const struct topk_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *v = c->out[0], *ix = c->n_out > 1 ? c->out[1] : NULL;
    int axis = 0;
    int64_t k = 0;
    if (topk_plan(c, &axis, &k))
        return -1;
    int64_t outer = shape_prod(x->dims, 0, axis), n = x->dims[axis];
    int64_t inner = shape_prod(x->dims, axis + 1, x->rank);
    if (k == 0 || outer * inner == 0)
        return 0;
    int64_t *work = layout_scratch(c, sizeof(int64_t) * 2 * (size_t)n * (size_t)(outer * inner));
    if (!work)
        return -1;
    int rc = launched(c, index_topk_launch(v ? v->data : NULL, ix ? ix->data : NULL, x->data, x->dtype, outer, n,
                                           inner, k, p->largest, work, cuda_ctx_of(c)->stream));
    layout_scratch_free(c, work);
    return rc;
}

int cuda_onehot(struct op_call *c)
{
    const struct tensor *idx = c->in[0], *vals = c->in[2];
    int axis = 0;
    int64_t depth = 0;
    if (onehot_plan(c, &axis, &depth))
        return -1;
    if (idx->dtype == ONNX_DTYPE_FLOAT16 || idx->dtype == ONNX_DTYPE_BFLOAT16)
        return op_error(c, "CUDA: %s indices are not supported (cast them to int64)", onnx_dtype_name(idx->dtype));
    size_t es = onnx_dtype_size(vals->dtype);
    int64_t outer = shape_prod(idx->dims, 0, axis), inner = shape_prod(idx->dims, axis, idx->rank);
    return launched(c, index_onehot_launch(c->out[0]->data, idx->data, idx->dtype, vals->data, outer, depth, inner,
                                           es, cuda_ctx_of(c)->stream));
}

int cuda_cumsum(struct op_call *c)
{
    const struct cumsum_params *p = c->params;
    const struct tensor *x = c->in[0];
    int axis = 0;
    if (cumsum_plan(c, &axis))
        return -1;
    int64_t outer = shape_prod(x->dims, 0, axis), n = x->dims[axis];
    int64_t inner = shape_prod(x->dims, axis + 1, x->rank);
    return launched(c, index_cumsum_launch(c->out[0]->data, x->data, x->dtype, outer, n, inner,
                                           p ? p->exclusive : 0, p ? p->reverse : 0, cuda_ctx_of(c)->stream));
}

int cuda_trilu(struct op_call *c)
{
    const struct trilu_params *p = c->params;
    const struct tensor *x = c->in[0];
    int64_t k = 0;
    if (trilu_plan(c, &k))
        return -1;
    int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
    int64_t mats = shape_prod(x->dims, 0, x->rank - 2);
    return launched(c, index_trilu_launch(c->out[0]->data, x->data, mats, rows, cols, p ? p->upper : 1, k,
                                          onnx_dtype_size(x->dtype), cuda_ctx_of(c)->stream));
}
