/* ops/cuda/layout_index.c — CUDA kernels of Gather and GatherElements and of
 * their gradients GatherGrad and GatherElementsGrad (ops/gather.c).
 *
 * The indices are device memory here (they are not host inputs), so they
 * are checked on the device while the kernel reads them: an out-of-range
 * index is read as 0 and its position recorded, and the call then fails
 * with the CPU kernel's message. That costs one wait for the stream per
 * call. The gradients are scatter-adds made deterministic by a stable sort
 * of the destinations (see layout-kernels.h): the same sums in the same
 * order as the CPU's, on every run. */
#include "ops/cuda/layout-impl.h"
#include "ops/shape-params.h"
#include "ops/shape-impl.h"

/* Widest unit (<= 16 bytes) that divides a run of `bytes` and both bases. */
static size_t run_unit(size_t esize, size_t bytes, const void *a, const void *b)
{
    for (size_t u = 16; u > esize; u /= 2)
        if (bytes % u == 0 && (uintptr_t)a % u == 0 && (uintptr_t)b % u == 0)
            return u;
    return esize;
}

static int index_esize(struct op_call *c, int dtype, size_t *esize)
{
    size_t e = onnx_dtype_size(dtype);
    if (e != 1 && e != 2 && e != 4 && e != 8 && e != 16)
        return op_error(c, "unsupported element type %s", onnx_dtype_name(dtype));
    *esize = e;
    return 0;
}

/* The normalized axis of a forward call, -1 after a message. */
static int forward_axis(struct op_call *c, int rank)
{
    const struct gather_params *p = c->params;
    int64_t axis = p ? p->axis : 0;
    int a = op_axis(axis, rank);
    if (a < 0)
        op_error(c, "axis %lld is out of range for data of rank %d", (long long)axis, rank);
    return a;
}

/* A flag for the index check: scratch, reset on the stream. */
static unsigned long long *bad_flag(struct op_call *c)
{
    unsigned long long *bad = layout_scratch(c, sizeof *bad);
    if (!bad)
        return NULL;
    cudaError_t e = layout_bad_reset_launch(bad, cuda_ctx_of(c)->stream);
    if (e != cudaSuccess) {
        layout_scratch_free(c, bad);
        op_error(c, "CUDA: %s (resetting the index check)", cudaGetErrorString(e));
        return NULL;
    }
    return bad;
}

/* Reports the check's outcome and frees the flag. */
static int bad_finish(struct op_call *c, unsigned long long *bad, cudaError_t launched, const struct tensor *idx,
                      int64_t d)
{
    int rc = 0;
    if (launched != cudaSuccess)
        rc = op_error(c, "CUDA: %s (launching the kernel)", cudaGetErrorString(launched));
    else
        rc = layout_index_report(c, bad, idx, d);
    layout_scratch_free(c, bad);
    return rc;
}

/* Every index checked even when nothing is gathered, as the CPU does. */
static cudaError_t check_only(const struct tensor *idx, int64_t d, unsigned long long *bad, cudaStream_t s)
{
    return layout_index_check_launch(idx->data, idx->dtype == ONNX_DTYPE_INT64, tensor_numel(idx), d, bad, s);
}

int cuda_gather(struct op_call *c)
{
    const struct tensor *x = c->in[0], *idx = c->in[1];
    struct tensor *y = c->out[0];
    size_t esize = 0;
    int axis = forward_axis(c, x->rank);
    if (axis < 0 || layout_index_dtype(c, idx) || index_esize(c, x->dtype, &esize))
        return -1;
    int64_t d = x->dims[axis], n = tensor_numel(idx);
    int64_t outer = shape_prod(x->dims, 0, axis), inner = shape_prod(x->dims, axis + 1, x->rank);
    if (n == 0)
        return 0;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    unsigned long long *bad = bad_flag(c);
    if (!bad)
        return -1;
    cudaError_t e;
    if (outer == 0 || inner == 0) {
        e = check_only(idx, d, bad, s);
    } else {
        size_t unit = run_unit(esize, (size_t)inner * esize, x->data, y->data);
        e = layout_gather_launch(y->data, x->data, idx->data, idx->dtype == ONNX_DTYPE_INT64, outer, n, d,
                                 inner * (int64_t)esize / (int64_t)unit, unit, bad, s);
    }
    return bad_finish(c, bad, e, idx, d);
}

int cuda_gather_elements(struct op_call *c)
{
    const struct tensor *x = c->in[0], *idx = c->in[1];
    struct tensor *y = c->out[0];
    size_t esize = 0;
    int axis = forward_axis(c, x->rank);
    if (axis < 0 || layout_index_dtype(c, idx) || index_esize(c, x->dtype, &esize))
        return -1;
    if (tensor_numel(idx) == 0)
        return 0;
    int64_t xs[TENSOR_MAX_RANK];
    shape_strides(x, xs);
    unsigned long long *bad = bad_flag(c);
    if (!bad)
        return -1;
    cudaError_t e = layout_gather_elements_launch(y->data, x->data, idx->data, idx->dtype == ONNX_DTYPE_INT64,
                                                  idx->rank, idx->dims, xs, axis, x->dims[axis], esize, bad,
                                                  cuda_ctx_of(c)->stream);
    return bad_finish(c, bad, e, idx, x->dims[axis]);
}

/* What both gradients share: dtype checks, then scratch for the flag and
 * the sort (flag first, 256 bytes apart). */
static int grad_begin(struct op_call *c, int64_t n, int64_t max_key, unsigned long long **bad, void **sort,
                      size_t *sort_bytes)
{
    const struct tensor *dy = c->in[0];
    if (dy->dtype != ONNX_DTYPE_FLOAT && dy->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "dy must be float or double, got %s", onnx_dtype_name(dy->dtype));
    if (layout_index_dtype(c, c->in[1]))
        return -1;
    if (n > INT32_MAX)
        return op_error(c, "%lld indices; at most %d are supported", (long long)n, INT32_MAX);
    *sort_bytes = layout_sort_scratch_bytes(n, max_key);
    char *block = layout_scratch(c, 256 + *sort_bytes);
    if (!block)
        return -1;
    *bad = (unsigned long long *)block;
    *sort = block + 256;
    cudaError_t e = layout_bad_reset_launch(*bad, cuda_ctx_of(c)->stream);
    if (e != cudaSuccess) {
        layout_scratch_free(c, block);
        return op_error(c, "CUDA: %s (resetting the index check)", cudaGetErrorString(e));
    }
    return 0;
}

int cuda_gather_grad(struct op_call *c)
{
    const struct gather_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *idx = c->in[1];
    struct tensor *y = c->out[0];
    int axis = (int)p->axis;
    int64_t d = y->dims[axis], n = tensor_numel(idx);
    int64_t outer = shape_prod(y->dims, 0, axis), inner = shape_prod(y->dims, axis + 1, y->rank);
    unsigned long long *bad;
    void *sort;
    size_t sort_bytes;
    if (grad_begin(c, n, d - 1, &bad, &sort, &sort_bytes))
        return -1;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    cudaError_t e;
    if (tensor_numel(y) == 0)
        e = check_only(idx, d, bad, s);
    else
        e = layout_gather_grad_launch(y->data, dy->data, idx->data, idx->dtype == ONNX_DTYPE_INT64, outer, n, d,
                                      inner, dy->dtype == ONNX_DTYPE_DOUBLE, sort, sort_bytes, bad, s);
    return bad_finish(c, bad, e, idx, d);
}

int cuda_gather_elements_grad(struct op_call *c)
{
    const struct gather_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *idx = c->in[1];
    struct tensor *y = c->out[0];
    int axis = (int)p->axis;
    int64_t d = y->dims[axis], n = tensor_numel(idx), ynumel = tensor_numel(y);
    unsigned long long *bad;
    void *sort;
    size_t sort_bytes;
    if (grad_begin(c, n, ynumel - 1, &bad, &sort, &sort_bytes))
        return -1;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    int64_t ys[TENSOR_MAX_RANK];
    shape_strides(y, ys);
    cudaError_t e;
    if (ynumel == 0)
        e = check_only(idx, d, bad, s);
    else
        e = layout_gather_elements_grad_launch(y->data, ynumel, dy->data, idx->data, idx->dtype == ONNX_DTYPE_INT64,
                                               idx->rank, idx->dims, ys, axis, d, dy->dtype == ONNX_DTYPE_DOUBLE,
                                               sort, sort_bytes, bad, s);
    return bad_finish(c, bad, e, idx, d);
}
