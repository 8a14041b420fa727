/* ops/cuda/layout_scatter.c — CUDA kernels of GatherND, ScatterND,
 * ScatterElements and Scatter, and of their gradients GatherNDGrad and
 * ScatterGrad (ops/scatter_gather_nd.c, ops/scatter_elements.c).
 *
 * Shapes are checked by the CPU files' own functions (ops/scatter-impl.h).
 * The indices are device memory: one kernel turns them into the data
 * offset of every update (or gathered) element, checking each index as it
 * reads it, and the call fails with the CPU's message if one was out of
 * range (one wait for the stream). The scatters and scatter-adds then walk
 * units of updates that share no destination, each in the CPU's order
 * (index-kernels.h), so duplicates resolve as on the CPU and every run
 * gives the CPU's bits. */
#include <string.h>

#include "ops/cuda/index-kernels.h"
#include "ops/cuda/layout-impl.h"
#include "ops/shape-params.h"
#include "ops/scatter-impl.h"
#include "ops/shape-impl.h"

/* A flag for the index check (first 256 bytes) and `bytes` of workspace
 * after it, reset on the stream; NULL after a message. */
static char *scratch_with_flag(struct op_call *c, size_t bytes)
{
    char *block = layout_scratch(c, 256 + bytes);
    if (!block)
        return NULL;
    cudaError_t e = layout_bad_reset_launch((unsigned long long *)block, cuda_ctx_of(c)->stream);
    if (e != cudaSuccess) {
        layout_scratch_free(c, block);
        op_error(c, "CUDA: %s (resetting the index check)", cudaGetErrorString(e));
        return NULL;
    }
    return block;
}

/* Waits for the stream; when an index was out of range, fails with the CPU
 * kernel's message. ND tuples (elements = 0): position i is component i % m
 * of its tuple, for data axis b + i % m. ScatterElements (elements = 1): axis. */
static int report(struct op_call *c, cudaError_t launched, const unsigned long long *bad, const struct tensor *idx,
                  const struct tensor *data, int elements, int b, int m, int axis)
{
    if (launched != cudaSuccess)
        return op_error(c, "CUDA: %s (launching the kernel)", cudaGetErrorString(launched));
    cudaStream_t s = cuda_ctx_of(c)->stream;
    unsigned long long pos = 0;
    CUDA_TRY(c, cudaMemcpyAsync(&pos, bad, sizeof pos, cudaMemcpyDeviceToHost, s));
    CUDA_TRY(c, cudaStreamSynchronize(s));
    if (pos == ~0ull)
        return 0;
    int64_t v = 0;
    int32_t v32 = 0;
    if (idx->dtype == ONNX_DTYPE_INT64)
        CUDA_TRY(c, cudaMemcpyAsync(&v, (const int64_t *)idx->data + pos, sizeof v, cudaMemcpyDeviceToHost, s));
    else
        CUDA_TRY(c, cudaMemcpyAsync(&v32, (const int32_t *)idx->data + pos, sizeof v32, cudaMemcpyDeviceToHost, s));
    CUDA_TRY(c, cudaStreamSynchronize(s));
    if (idx->dtype != ONNX_DTYPE_INT64)
        v = v32;
    int a = elements ? axis : b + (int)(pos % (unsigned long long)m);
    int64_t d = data->dims[a];
    if (elements)
        return op_error(c, "index %lld at position %llu is out of range for axis %d of size %lld "
                        "(expected %lld..%lld)", (long long)v, pos, a, (long long)d, (long long)-d,
                        (long long)(d - 1));
    return op_error(c, "index %lld at position %llu is out of range for data axis %d of size %lld "
                    "(expected %lld..%lld)", (long long)v, pos, a, (long long)d, (long long)-d, (long long)(d - 1));
}

static int nd_table(struct op_call *c, const struct scatter_nd_geom *g, const struct tensor *data,
                    struct index_nd *t)
{
    if (g->m > INDEX_MAX_AXES)
        return op_error(c, "index tuples of %d values; at most %d are supported", g->m, INDEX_MAX_AXES);
    memset(t, 0, sizeof *t);
    t->m = g->m;
    t->per_batch = g->per_batch;
    t->batch_stride = g->batch_stride;
    t->slice = g->slice;
    for (int i = 0; i < g->m; i++) {
        t->dims[i] = data->dims[g->b + i];
        t->strides[i] = g->st[g->b + i];
    }
    return 0;
}

/* ---- GatherND and GatherNDGrad --------------------------------------------------- */

int cuda_gather_nd(struct op_call *c)
{
    const struct gather_nd_params *p = c->params;
    const struct tensor *x = c->in[0], *idx = c->in[1];
    struct scatter_nd_geom g;
    struct index_nd t;
    if (gather_nd_geom(c, p->batch_dims, x, idx, &g) || nd_table(c, &g, x, &t))
        return -1;
    int64_t n = g.batches * g.per_batch * g.slice;
    char *block = scratch_with_flag(c, sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!block)
        return -1;
    unsigned long long *bad = (unsigned long long *)block;
    int64_t *pos = (int64_t *)(block + 256);
    cudaStream_t s = cuda_ctx_of(c)->stream;
    /* Extent-0 slices still have their indices checked, as on the CPU. */
    struct index_nd t1 = t;
    t1.slice = 1;
    cudaError_t e = g.slice ? index_nd_pos_launch(pos, idx->data, idx->dtype == ONNX_DTYPE_INT64,
                                                  g.batches * g.per_batch, &t, bad, s)
                            : index_nd_pos_launch(pos, idx->data, idx->dtype == ONNX_DTYPE_INT64,
                                                  g.batches * g.per_batch, &t1, bad, s);
    if (e == cudaSuccess && g.slice)
        e = index_gather_pos_launch(c->out[0]->data, x->data, pos, n, onnx_dtype_size(x->dtype), s);
    int rc = report(c, e, bad, idx, x, 0, g.b, g.m, 0);
    layout_scratch_free(c, block);
    return rc;
}

int cuda_gather_nd_grad(struct op_call *c)
{
    const struct gather_nd_params *p = c->params;
    const struct tensor *dy = c->in[0], *idx = c->in[1];
    struct tensor *y = c->out[0];
    struct scatter_nd_geom g;
    struct index_nd t;
    if (dy->dtype != ONNX_DTYPE_FLOAT && dy->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "dy must be float or double, got %s", onnx_dtype_name(dy->dtype));
    if (gather_nd_geom(c, p->batch_dims, y, idx, &g) || nd_table(c, &g, y, &t))
        return -1;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    CUDA_TRY(c, cudaMemsetAsync(y->data, 0, tensor_size_bytes(y), s));
    int64_t tuples = g.batches * g.per_batch, n = tuples * g.slice;
    char *block = scratch_with_flag(c, sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!block)
        return -1;
    unsigned long long *bad = (unsigned long long *)block;
    int64_t *pos = (int64_t *)(block + 256);
    struct index_nd t1 = t;
    t1.slice = 1;
    cudaError_t e = index_nd_pos_launch(pos, idx->data, idx->dtype == ONNX_DTYPE_INT64, tuples,
                                        g.slice ? &t : &t1, bad, s);
    /* Units: a slice column of one batch; tuples of a batch add in order. */
    struct index_walk w = { .units = g.batches * g.slice, .steps = g.per_batch, .inner = g.slice };
    if (e == cudaSuccess && g.slice)
        e = index_scatter_launch(y->data, dy->data, pos, &w, SCATTER_ADD, dy->dtype, onnx_dtype_size(dy->dtype), s);
    int rc = report(c, e, bad, idx, y, 0, g.b, g.m, 0);
    layout_scratch_free(c, block);
    return rc;
}

/* ---- the scatters ------------------------------------------------------------------ */

/* Positions of every update element into `pos`, and the walk's units: ND
 * slice columns (tuples in order), or lines of ScatterElements along the
 * axis. The launch status; *w filled. */
static cudaError_t positions(struct op_call *c, int elements, int axis, const struct tensor *x,
                             const struct tensor *idx, const struct tensor *upd, int64_t *pos,
                             unsigned long long *bad, struct index_walk *w, struct index_nd *t)
{
    cudaStream_t s = cuda_ctx_of(c)->stream;
    int idx64 = idx->dtype == ONNX_DTYPE_INT64;
    if (elements) {
        int64_t st[TENSOR_MAX_RANK];
        shape_strides(x, st);
        w->steps = idx->dims[axis];
        w->inner = shape_prod(idx->dims, axis + 1, idx->rank);
        w->units = w->steps ? tensor_numel(idx) / w->steps : 0;
        return index_elements_pos_launch(pos, idx->data, idx64, idx->rank, idx->dims, st, axis, x->dims[axis],
                                         bad, s);
    }
    int64_t tuples = shape_prod(idx->dims, 0, idx->rank - 1);
    w->units = t->slice;
    w->steps = tuples;
    w->inner = t->slice;
    struct index_nd t1 = *t;
    t1.slice = 1;
    return index_nd_pos_launch(pos, idx->data, idx64, tuples, t->slice ? t : &t1, bad, s);
}

/* The ScatterND table of data x by idx (no batch axes). */
static int scatter_nd_table(struct op_call *c, const struct tensor *x, const struct tensor *idx,
                            struct index_nd *t)
{
    struct scatter_nd_geom g;
    memset(&g, 0, sizeof g);
    g.m = (int)idx->dims[idx->rank - 1];
    g.per_batch = shape_prod(idx->dims, 0, idx->rank - 1);
    g.slice = shape_prod(x->dims, g.m, x->rank);
    shape_strides(x, g.st);
    return nd_table(c, &g, x, t);
}

static int scatter_forward(struct op_call *c, int elements)
{
    const struct scatter_params *p = c->params;
    const struct tensor *x = c->in[0], *idx = c->in[1], *upd = c->in[2];
    struct tensor *y = c->out[0];
    int axis = 0;
    struct index_nd t;
    if (elements) {
        axis = op_axis(p->axis, x->rank);
        if (axis < 0)
            return op_error(c, "axis %lld is out of range for data of rank %d", (long long)p->axis, x->rank);
        if (scatter_elements_check(c, axis, x, idx, upd))
            return -1;
    } else if (scatter_nd_check(c, x, idx, upd) || scatter_nd_table(c, x, idx, &t)) {
        return -1;
    }
    if (scatter_check_dtype(c, p->reduction, x->dtype))
        return -1;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    CUDA_TRY(c, cudaMemcpyAsync(y->data, x->data, tensor_size_bytes(x), cudaMemcpyDeviceToDevice, s));
    int64_t n = tensor_numel(upd);
    int64_t n_pos = elements ? n : shape_prod(idx->dims, 0, idx->rank - 1) * (t.slice ? t.slice : 1);
    char *block = scratch_with_flag(c, sizeof(int64_t) * (size_t)(n_pos ? n_pos : 1));
    if (!block)
        return -1;
    unsigned long long *bad = (unsigned long long *)block;
    int64_t *pos = (int64_t *)(block + 256);
    struct index_walk w;
    cudaError_t e = positions(c, elements, axis, x, idx, upd, pos, bad, &w, &t);
    /* Nothing is written before every index has been checked. */
    int rc = report(c, e, bad, idx, x, elements, 0, elements ? 1 : t.m, axis);
    if (!rc && n) {
        e = index_scatter_launch(y->data, upd->data, pos, &w, p->reduction, x->dtype, onnx_dtype_size(x->dtype), s);
        if (e != cudaSuccess)
            rc = op_error(c, "CUDA: %s (launching the scatter)", cudaGetErrorString(e));
    }
    layout_scratch_free(c, block);
    return rc;
}

int cuda_scatter_nd(struct op_call *c)
{
    return scatter_forward(c, 0);
}

int cuda_scatter_elements(struct op_call *c)
{
    return scatter_forward(c, 1);
}

/* ScatterGrad(dy, data, indices, updates) -> dData, dUpdates. */
int cuda_scatter_grad(struct op_call *c)
{
    const struct scatter_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *x = c->in[1], *idx = c->in[2], *upd = c->in[3];
    struct tensor *dx = c->out[0], *du = c->n_out > 1 ? c->out[1] : NULL;
    int axis = p->elements ? op_axis(p->axis, x->rank) : 0;
    struct index_nd t;
    memset(&t, 0, sizeof t);
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "data must be float or double, got %s", onnx_dtype_name(x->dtype));
    if (axis < 0)
        return op_error(c, "axis %lld is out of range", (long long)p->axis);
    if (!p->elements && scatter_nd_table(c, x, idx, &t))
        return -1;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    if (dx)
        CUDA_TRY(c, cudaMemcpyAsync(dx->data, dy->data, tensor_size_bytes(dy), cudaMemcpyDeviceToDevice, s));
    int64_t n = tensor_numel(upd), n_data = tensor_numel(x);
    int64_t n_pos = p->elements ? n : shape_prod(idx->dims, 0, idx->rank - 1) * (t.slice ? t.slice : 1);
    size_t es = onnx_dtype_size(x->dtype);
    size_t pos_bytes = (sizeof(int64_t) * (size_t)(n_pos ? n_pos : 1) + 255) & ~(size_t)255;
    size_t du_bytes = du ? 0 : (es * (size_t)(n ? n : 1) + 255) & ~(size_t)255;
    size_t work_bytes = index_scatter_grad_work_bytes(p->reduction, n_data, n);
    char *block = scratch_with_flag(c, pos_bytes + du_bytes + work_bytes);
    if (!block)
        return -1;
    unsigned long long *bad = (unsigned long long *)block;
    int64_t *pos = (int64_t *)(block + 256);
    void *du_data = du ? du->data : block + 256 + pos_bytes;   /* dUpdates not wanted: scratch */
    void *work = block + 256 + pos_bytes + du_bytes;
    struct index_walk w;
    cudaError_t e = positions(c, p->elements, axis, x, idx, upd, pos, bad, &w, &t);
    int rc = report(c, e, bad, idx, x, p->elements, 0, p->elements ? 1 : t.m, axis);
    if (!rc && n) {
        e = index_scatter_grad_launch(dx ? dx->data : NULL, du_data, dy->data, x->data, upd->data, pos, &w, n_data,
                                      p->reduction, x->dtype == ONNX_DTYPE_DOUBLE, work, s);
        if (e != cudaSuccess)
            rc = op_error(c, "CUDA: %s (launching the scatter gradient)", cudaGetErrorString(e));
    }
    layout_scratch_free(c, block);
    return rc;
}
