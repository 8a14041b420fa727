/* ops/cuda/layout.c — CUDA kernels of the data-movement operators that are
 * strided copies or fills: Transpose, Concat, Split, Slice (+ SliceGrad),
 * Expand, Tile, Range, Shape, Size, Constant, ConstantOfShape, Pad (+
 * PadGrad); the helpers layout-impl.h declares; and the family's table,
 * cuda_kernels_layout[], which also lists the kernels of layout_index.c
 * (Gather family), layout_scatter.c (GatherND and the scatters),
 * layout_select.c (ArgMax/ArgMin, TopK, OneHot, CumSum, Trilu),
 * layout_einsum.c, layout_resize.c and recurrent.c.
 *
 * Plans (axes, starts, pads, split sizes) come from the same functions the
 * CPU kernels use (ops/shape-impl.h), reading the host copies of the inputs
 * flagged in op_def.host_inputs; element data stays on the device. The
 * Identity/Reshape/Flatten/Squeeze/Unsqueeze views are alias ops and run
 * no kernel. */
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/layout-impl.h"
#include "ops/cuda/layout-kernels.h"
#include "ops/shape-params.h"
#include "ops/shape-impl.h"

/* ---- shared helpers -------------------------------------------------------- */

void *layout_scratch(struct op_call *c, size_t bytes)
{
    void *p = NULL;
    if (!bytes)
        bytes = 1;
    if (c->env && c->env->scratch_alloc)
        p = c->env->scratch_alloc(c->env->ctx, bytes);
    if (!p)
        op_error(c, "cannot get %zu bytes of device workspace", bytes);
    return p;
}

void layout_scratch_free(struct op_call *c, void *ptr)
{
    if (ptr && c->env && c->env->scratch_free)
        c->env->scratch_free(c->env->ctx, ptr);
}

static void CUDART_CB layout_host_free(void *ptr)
{
    free(ptr);
}

void *layout_upload(struct op_call *c, void *host, size_t bytes)
{
    cudaStream_t s = cuda_ctx_of(c)->stream;
    void *dev = layout_scratch(c, bytes);
    if (!dev) {
        free(host);
        return NULL;
    }
    cudaError_t e = cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess)
        e = cudaLaunchHostFunc(s, layout_host_free, host);
    if (e != cudaSuccess) {
        /* the copy may be queued: wait before the buffer goes */
        cudaStreamSynchronize(s);
        free(host);
        layout_scratch_free(c, dev);
        op_error(c, "CUDA: %s (uploading %zu bytes of tables)", cudaGetErrorString(e), bytes);
        return NULL;
    }
    return dev;
}

int layout_index_dtype(struct op_call *c, const struct tensor *idx)
{
    if (idx->dtype != ONNX_DTYPE_INT64 && idx->dtype != ONNX_DTYPE_INT32)
        return op_error(c, "indices must be int32 or int64, got %s", onnx_dtype_name(idx->dtype));
    return 0;
}

int layout_index_report(struct op_call *c, const unsigned long long *bad, const struct tensor *idx, int64_t d)
{
    cudaStream_t s = cuda_ctx_of(c)->stream;
    unsigned long long pos = 0;
    CUDA_TRY(c, cudaMemcpyAsync(&pos, bad, sizeof pos, cudaMemcpyDeviceToHost, s));
    CUDA_TRY(c, cudaStreamSynchronize(s));
    if (pos == ~0ull)
        return 0;
    int64_t v = 0;
    if (idx->dtype == ONNX_DTYPE_INT64) {
        CUDA_TRY(c, cudaMemcpyAsync(&v, (const int64_t *)idx->data + pos, sizeof v, cudaMemcpyDeviceToHost, s));
    } else {
        int32_t v32 = 0;
        CUDA_TRY(c, cudaMemcpyAsync(&v32, (const int32_t *)idx->data + pos, sizeof v32, cudaMemcpyDeviceToHost, s));
        CUDA_TRY(c, cudaStreamSynchronize(s));
        v = v32;
    }
    CUDA_TRY(c, cudaStreamSynchronize(s));
    return op_error(c, "index %lld at position %llu is out of range for an axis of size %lld (expected %lld..%lld)",
                    (long long)v, pos, (long long)d, (long long)-d, (long long)(d - 1));
}

/* Drops unit axes and merges neighbours that are contiguous on both sides;
 * returns the new rank. */
static int copy_merge(int rank, const int64_t *dims_in, const int64_t *ss_in, const int64_t *ds_in,
                      int64_t *dims, int64_t *ss, int64_t *ds)
{
    int r = 0;
    for (int i = 0; i < rank; i++) {
        if (dims_in[i] == 1)
            continue;
        if (r > 0 && ss[r - 1] == ss_in[i] * dims_in[i] && ds[r - 1] == ds_in[i] * dims_in[i]) {
            dims[r - 1] *= dims_in[i];
            ss[r - 1] = ss_in[i];
            ds[r - 1] = ds_in[i];
            continue;
        }
        dims[r] = dims_in[i];
        ss[r] = ss_in[i];
        ds[r] = ds_in[i];
        r++;
    }
    return r;
}

/* The widest unit (<= 16 bytes) that contiguous innermost runs of esize
 * elements can move in: it must divide the run, every other stride and both
 * base addresses. */
static size_t copy_unit(size_t esize, int r, const int64_t *dims, const int64_t *ss, const int64_t *ds,
                        const void *dst, const void *src)
{
    if (r == 0 || ss[r - 1] != 1 || ds[r - 1] != 1)
        return esize;
    size_t best = esize;
    for (size_t u = 16; u > esize; u /= 2) {
        int ok = (size_t)dims[r - 1] * esize % u == 0 && (uintptr_t)dst % u == 0 && (uintptr_t)src % u == 0;
        for (int a = 0; ok && a < r - 1; a++) {
            int64_t sb = ss[a] * (int64_t)esize, db = ds[a] * (int64_t)esize;
            ok = sb % (int64_t)u == 0 && db % (int64_t)u == 0;
        }
        if (ok) {
            best = u;
            break;
        }
    }
    return best;
}

int layout_copy_strided(struct op_call *c, void *dst, const void *src, size_t esize, int rank,
                        const int64_t *dims_in, const int64_t *ss_in, const int64_t *ds_in)
{
    cudaStream_t stream = cuda_ctx_of(c)->stream;
    int64_t total = 1;
    for (int i = 0; i < rank; i++)
        total *= dims_in[i];
    if (total == 0)
        return 0;
    if (rank > LAYOUT_MAX_AXES)
        return op_error(c, "a copy over %d axes (at most %d)", rank, LAYOUT_MAX_AXES);
    struct layout_copy cp;
    int r = copy_merge(rank, dims_in, ss_in, ds_in, cp.dims, cp.src_strides, cp.dst_strides);
    if (r == 0) {
        CUDA_TRY(c, cudaMemcpyAsync(dst, src, esize, cudaMemcpyDeviceToDevice, stream));
        return 0;
    }
    if (r == 1 && cp.src_strides[0] == 1 && cp.dst_strides[0] == 1) {
        CUDA_TRY(c, cudaMemcpyAsync(dst, src, (size_t)total * esize, cudaMemcpyDeviceToDevice, stream));
        return 0;
    }
    size_t unit = copy_unit(esize, r, cp.dims, cp.src_strides, cp.dst_strides, dst, src);
    if (unit != esize) {
        int64_t f = (int64_t)(unit / esize);
        cp.dims[r - 1] /= f;
        for (int a = 0; a < r - 1; a++) {
            cp.src_strides[a] /= f;
            cp.dst_strides[a] /= f;
        }
    }
    cp.rank = r;
    /* dst contiguous (row-major) and the source's unit stride on the next to
     * last axis: reads would stride across every write, so go through tiles. */
    int dst_dense = 1;
    int64_t expect = 1;
    for (int a = r - 1; a >= 0 && dst_dense; a--) {
        dst_dense = cp.dst_strides[a] == expect;
        expect *= cp.dims[a];
    }
    cudaError_t e;
    if (dst_dense && r >= 2 && cp.src_strides[r - 2] == 1 && cp.src_strides[r - 1] != 1 && cp.src_strides[r - 1] != 0)
        e = layout_transpose_launch(dst, src, unit, &cp, stream);
    else
        e = layout_copy_launch(dst, src, unit, &cp, stream);
    CUDA_TRY(c, e);
    return 0;
}

int layout_copy_to_contiguous(struct op_call *c, void *dst, const void *src, size_t esize, int rank,
                              const int64_t *dims, const int64_t *src_strides)
{
    int64_t ds[LAYOUT_MAX_AXES], s = 1;
    if (rank > LAYOUT_MAX_AXES)
        return op_error(c, "a copy over %d axes (at most %d)", rank, LAYOUT_MAX_AXES);
    for (int i = rank - 1; i >= 0; i--) {
        ds[i] = s;
        s *= dims[i];
    }
    return layout_copy_strided(c, dst, src, esize, rank, dims, src_strides, ds);
}

static size_t esize_of(struct op_call *c, int dtype)
{
    size_t e = onnx_dtype_size(dtype);
    if (e != 1 && e != 2 && e != 4 && e != 8 && e != 16)
        op_error(c, "unsupported element type %s", onnx_dtype_name(dtype));
    return e == 1 || e == 2 || e == 4 || e == 8 || e == 16 ? e : 0;
}

/* ---- Transpose, Slice, Expand, Tile ------------------------------------------ */

static int cuda_transpose(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    int perm[TENSOR_MAX_RANK];
    size_t esize = esize_of(c, x->dtype);
    if (!esize || transpose_perm(c, perm))
        return -1;
    int64_t xs[TENSOR_MAX_RANK], dims[TENSOR_MAX_RANK], st[TENSOR_MAX_RANK];
    shape_strides(x, xs);
    for (int i = 0; i < x->rank; i++) {
        dims[i] = x->dims[perm[i]];
        st[i] = xs[perm[i]];
    }
    return layout_copy_to_contiguous(c, c->out[0]->data, x->data, esize, x->rank, dims, st);
}

static int cuda_slice(struct op_call *c)
{
    struct slice_plan pl;
    const struct tensor *x = c->in[0];
    size_t esize = esize_of(c, x->dtype);
    if (!esize || slice_make_plan(c, &pl))
        return -1;
    if (tensor_numel(c->out[0]) == 0)
        return 0;
    int64_t xs[TENSOR_MAX_RANK], st[TENSOR_MAX_RANK], base = 0;
    shape_strides(x, xs);
    for (int a = 0; a < x->rank; a++) {
        base += pl.start[a] * xs[a];
        st[a] = pl.step[a] * xs[a];
    }
    return layout_copy_to_contiguous(c, c->out[0]->data, (const char *)x->data + base * (int64_t)esize, esize,
                                     x->rank, pl.dims, st);
}

/* SliceGrad: y = 0, then dy into the positions the slice read. */
static int cuda_slice_grad(struct op_call *c)
{
    const struct slice_grad_params *p = c->params;
    const struct tensor *dy = c->in[0];
    struct tensor *y = c->out[0];
    size_t esize = esize_of(c, dy->dtype);
    if (!esize)
        return -1;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    CUDA_TRY(c, cudaMemsetAsync(y->data, 0, tensor_size_bytes(y), s));
    if (tensor_numel(dy) == 0)
        return 0;
    int64_t ys[TENSOR_MAX_RANK], dys[TENSOR_MAX_RANK], st[TENSOR_MAX_RANK], base = 0;
    shape_strides(y, ys);
    shape_strides(dy, dys);
    for (int a = 0; a < dy->rank; a++) {
        base += p->start[a] * ys[a];
        st[a] = p->step[a] * ys[a];
    }
    return layout_copy_strided(c, (char *)y->data + base * (int64_t)esize, dy->data, esize, dy->rank, dy->dims,
                               dys, st);
}

static int cuda_expand(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    size_t esize = esize_of(c, x->dtype);
    if (!esize)
        return -1;
    int64_t st[TENSOR_MAX_RANK];
    broadcast_strides(x, y, st);
    return layout_copy_to_contiguous(c, y->data, x->data, esize, y->rank, y->dims, st);
}

/* The output as (repeat, dim) axis pairs, the repeat axes of stride 0. */
static int cuda_tile(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    size_t esize = esize_of(c, x->dtype);
    if (!esize)
        return -1;
    if (tensor_numel(y) == 0)
        return 0;
    int64_t repeats[TENSOR_MAX_RANK];
    int n = shape_read_ints(c, c->in[1], "repeats", repeats, TENSOR_MAX_RANK);
    if (n < 0)
        return -1;
    if (n != x->rank)
        return op_error(c, "repeats has %d values but the input has rank %d", n, x->rank);
    int64_t xs[TENSOR_MAX_RANK], dims[LAYOUT_MAX_AXES], st[LAYOUT_MAX_AXES];
    shape_strides(x, xs);
    for (int i = 0; i < x->rank; i++) {
        dims[2 * i] = repeats[i];
        st[2 * i] = 0;
        dims[2 * i + 1] = x->dims[i];
        st[2 * i + 1] = xs[i];
    }
    return layout_copy_to_contiguous(c, y->data, x->data, esize, 2 * x->rank, dims, st);
}

/* ---- Concat and Split: [outer, axis * inner] rows, one copy per piece ---------------- */

static int cuda_concat(struct op_call *c)
{
    const struct axis_params *p = c->params;
    struct tensor *y = c->out[0];
    int axis = op_axis(p->axis, y->rank);
    size_t esize = esize_of(c, y->dtype);
    if (!esize)
        return -1;
    if (axis < 0)
        return op_error(c, "axis %lld is out of range for rank %d", (long long)p->axis, y->rank);
    int64_t outer = shape_prod(y->dims, 0, axis), inner = shape_prod(y->dims, axis + 1, y->rank);
    int64_t row = y->dims[axis] * inner, offset = 0;
    for (int k = 0; k < c->n_in; k++) {
        const struct tensor *x = c->in[k];
        int64_t chunk = x->dims[axis] * inner;
        int64_t dims[2] = { outer, chunk }, ss[2] = { chunk, 1 }, ds[2] = { row, 1 };
        if (layout_copy_strided(c, (char *)y->data + offset * (int64_t)esize, x->data, esize, 2, dims, ss, ds))
            return -1;
        offset += chunk;
    }
    return 0;
}

static int cuda_split(struct op_call *c)
{
    const struct axis_params *p = c->params;
    const struct tensor *x = c->in[0];
    int axis = op_axis(p->axis, x->rank);
    size_t esize = esize_of(c, x->dtype);
    if (!esize)
        return -1;
    if (axis < 0)
        return op_error(c, "axis %lld is out of range for rank %d", (long long)p->axis, x->rank);
    int64_t outer = shape_prod(x->dims, 0, axis), inner = shape_prod(x->dims, axis + 1, x->rank);
    int64_t row = x->dims[axis] * inner;
    for (int k = 0; k < c->n_out; k++) {
        int64_t start, len;
        if (split_piece(c, k, x->dims[axis], &start, &len))
            return -1;
        struct tensor *y = c->out[k];
        int64_t chunk = len * inner;
        if (!y || chunk == 0)
            continue;
        int64_t dims[2] = { outer, chunk }, ss[2] = { row, 1 }, ds[2] = { chunk, 1 };
        if (layout_copy_strided(c, y->data, (const char *)x->data + start * inner * (int64_t)esize, esize, 2, dims,
                                ss, ds))
            return -1;
    }
    return 0;
}

/* ---- Range, Shape, Size, Constant, ConstantOfShape ---------------------------------- */

static int cuda_range(struct op_call *c)
{
    struct tensor *y = c->out[0];
    const struct tensor *s = c->in[0], *d = c->in[2];
    int fp = y->dtype == ONNX_DTYPE_FLOAT || y->dtype == ONNX_DTYPE_DOUBLE;
    CUDA_TRY(c, layout_range_launch(y->data, y->dtype, y->dims[0], fp ? tensor_get_double(s, 0) : 0,
                                    fp ? tensor_get_double(d, 0) : 0, fp ? 0 : tensor_get_int(s, 0),
                                    fp ? 0 : tensor_get_int(d, 0), cuda_ctx_of(c)->stream));
    return 0;
}

/* Shape reads dims [start, end), both clamped to the rank (ops/shape.c). */
static int cuda_shape(struct op_call *c)
{
    const struct shape_params *p = c->params;
    int64_t r = c->in[0]->rank;
    int64_t s = p ? p->start : 0, e = p && p->has_end ? p->end : r;
    if (s < 0)
        s += r;
    if (e < 0)
        e += r;
    s = s < 0 ? 0 : s > r ? r : s;
    e = e < 0 ? 0 : e > r ? r : e;
    int n = e > s ? (int)(e - s) : 0;
    CUDA_TRY(c, layout_write_i64_launch(c->out[0]->data, n, c->in[0]->dims + s, cuda_ctx_of(c)->stream));
    return 0;
}

static int cuda_size(struct op_call *c)
{
    int64_t n = tensor_numel(c->in[0]);
    CUDA_TRY(c, layout_write_i64_launch(c->out[0]->data, 1, &n, cuda_ctx_of(c)->stream));
    return 0;
}

/* The value lives in the parsed parameters for as long as the call can run,
 * so the copy may stay queued. */
static int cuda_constant(struct op_call *c)
{
    const struct constant_params *p = c->params;
    if (p->size_bytes)
        CUDA_TRY(c, cudaMemcpyAsync(c->out[0]->data, p->data, p->size_bytes, cudaMemcpyHostToDevice,
                                    cuda_ctx_of(c)->stream));
    return 0;
}

static int cuda_constant_of_shape(struct op_call *c)
{
    const struct constant_params *p = c->params;
    struct tensor *y = c->out[0];
    int64_t n = tensor_numel(y);
    if (n == 0)
        return 0;
    int zero = 1;
    for (size_t i = 0; i < p->size_bytes; i++)
        zero &= ((const unsigned char *)p->data)[i] == 0;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    if (zero) {
        CUDA_TRY(c, cudaMemsetAsync(y->data, 0, (size_t)n * p->size_bytes, s));
        return 0;
    }
    if (!esize_of(c, p->dtype))
        return -1;
    CUDA_TRY(c, layout_fill_launch(y->data, n, p->data, p->size_bytes, s));
    return 0;
}

/* ---- Pad and PadGrad ---------------------------------------------------------------- */

/* Per axis of y, the input index each output index reads (-1: the constant),
 * back to back; offs[a] is where axis a starts. Host memory (malloc). */
static int64_t *pad_map(struct op_call *c, int mode, int rank, const int64_t *ydims, const int64_t *xdims,
                        const int64_t *begin, int64_t *offs, size_t *bytes)
{
    int64_t n = 0;
    for (int a = 0; a < rank; a++) {
        offs[a] = n;
        n += ydims[a];
    }
    *bytes = sizeof(int64_t) * (size_t)(n ? n : 1);
    int64_t *map = malloc(*bytes);
    if (!map) {
        op_error(c, "out of host memory for %lld index entries", (long long)n);
        return NULL;
    }
    for (int a = 0; a < rank; a++)
        for (int64_t o = 0; o < ydims[a]; o++)
            map[offs[a] + o] = pad_source(mode, o, begin[a], xdims[a]);
    return map;
}

static int cuda_pad(struct op_call *c)
{
    const struct pad_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    int64_t begin[TENSOR_MAX_RANK], end[TENSOR_MAX_RANK];
    if (pad_amounts(c, begin, end))
        return -1;
    if (tensor_numel(y) == 0)
        return 0;
    size_t esize = esize_of(c, x->dtype);
    if (!esize)
        return -1;
    unsigned char cval[16];
    if (pad_constant(c, cval, esize))
        return -1;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    if (y->rank == 0) {
        CUDA_TRY(c, cudaMemcpyAsync(y->data, x->data, esize, cudaMemcpyDeviceToDevice, s));
        return 0;
    }
    int64_t offs[TENSOR_MAX_RANK], xs[TENSOR_MAX_RANK];
    size_t bytes;
    int64_t *map = pad_map(c, p->mode, y->rank, y->dims, x->dims, begin, offs, &bytes);
    if (!map)
        return -1;
    int64_t *dmap = layout_upload(c, map, bytes);
    if (!dmap)
        return -1;
    shape_strides(x, xs);
    cudaError_t e = layout_pad_launch(y->data, x->data, y->rank, y->dims, xs, dmap, offs, cval, esize, s);
    layout_scratch_free(c, dmap);
    CUDA_TRY(c, e);
    return 0;
}

/* The sources of every destination index along each axis, as CSR lists
 * (see struct layout_scatter). Host memory: the offsets of all axes, then
 * the entries; *n_csr counts the offsets. */
static int64_t *scatter_tables(struct op_call *c, int rank, const int64_t *tdims, const int64_t *sdims,
                               const struct scatter_axis_fn *fn, struct layout_scatter *s, size_t *bytes,
                               int64_t *n_csr)
{
    int64_t ncsr = 0, nent = 0;
    for (int a = 0; a < rank; a++) {
        s->cs[a] = ncsr;
        ncsr += tdims[a] + 1;
        nent += 2 * sdims[a];
    }
    *bytes = sizeof(int64_t) * (size_t)(ncsr + nent + 1);
    int64_t *tab = calloc(1, *bytes);
    if (!tab) {
        op_error(c, "out of host memory for %lld table entries", (long long)(ncsr + nent));
        return NULL;
    }
    int64_t *csr = tab, *ent = tab + ncsr, used = 0;
    for (int a = 0; a < rank; a++) {
        int64_t *off = csr + s->cs[a], dst[2];
        int mask[2];
        /* count per destination, then prefix sums, then fill in source order */
        for (int64_t o = 0; o < sdims[a]; o++) {
            int n = fn->src_of(fn->ctx, a, o, dst, mask);
            for (int j = 0; j < n; j++)
                off[dst[j] + 1]++;
        }
        off[0] = used;
        for (int64_t i = 0; i < tdims[a]; i++)
            off[i + 1] += off[i];
        int64_t *fill = malloc(sizeof(int64_t) * (size_t)(tdims[a] ? tdims[a] : 1));
        if (!fill) {
            free(tab);
            op_error(c, "out of host memory for %lld table entries", (long long)tdims[a]);
            return NULL;
        }
        memcpy(fill, off, sizeof(int64_t) * (size_t)tdims[a]);
        for (int64_t o = 0; o < sdims[a]; o++) {
            int n = fn->src_of(fn->ctx, a, o, dst, mask);
            for (int j = 0; j < n; j++)
                ent[fill[dst[j]]++] = o << 2 | mask[j];
        }
        used = off[tdims[a]];
        free(fill);
    }
    *n_csr = ncsr;
    s->rank = rank;
    for (int a = 0; a < rank; a++)
        s->tdims[a] = tdims[a];
    return tab;
}

struct pad_grad_ctx {
    const struct pad_grad_params *p;
    const int64_t *ydims;
};

static int pad_grad_src(const void *ctx, int a, int64_t o, int64_t *dst, int *mask)
{
    const struct pad_grad_ctx *k = ctx;
    int64_t i = pad_source(k->p->mode, o, k->p->begin[a], k->ydims[a]);
    if (i < 0)
        return 0;
    dst[0] = i;
    mask[0] = 1;
    return 1;
}

int layout_scatter_upload(struct op_call *c, const struct tensor *t, const struct tensor *dy,
                          const struct scatter_axis_fn *fn, struct layout_scatter *s, int64_t **dev,
                          const int64_t **csr, const int64_t **ent)
{
    memset(s, 0, sizeof *s);
    size_t bytes;
    int64_t n_csr;
    int64_t *tab = scatter_tables(c, t->rank, t->dims, dy->dims, fn, s, &bytes, &n_csr);
    if (!tab)
        return -1;
    shape_strides(dy, s->sstrides);
    *dev = layout_upload(c, tab, bytes);
    if (!*dev)
        return -1;
    *csr = *dev;
    *ent = *dev + n_csr;
    return 0;
}

static int cuda_pad_grad(struct op_call *c)
{
    const struct pad_grad_params *p = c->params;
    const struct tensor *dy = c->in[0];
    struct tensor *y = c->out[0];
    cudaStream_t s = cuda_ctx_of(c)->stream;
    if (dy->dtype != ONNX_DTYPE_FLOAT && dy->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "dy must be float or double, got %s", onnx_dtype_name(dy->dtype));
    int dbl = dy->dtype == ONNX_DTYPE_DOUBLE;
    if (tensor_numel(y) == 0)
        return 0;
    if (tensor_numel(dy) == 0) {
        CUDA_TRY(c, cudaMemsetAsync(y->data, 0, tensor_size_bytes(y), s));
        return 0;
    }
    if (dy->rank == 0) {
        CUDA_TRY(c, cudaMemcpyAsync(y->data, dy->data, dbl ? 8 : 4, cudaMemcpyDeviceToDevice, s));
        return 0;
    }
    struct pad_grad_ctx k = { p, y->dims };
    struct scatter_axis_fn fn = { pad_grad_src, &k };
    struct layout_scatter sc;
    int64_t *dev;
    const int64_t *csr, *ent;
    if (layout_scatter_upload(c, y, dy, &fn, &sc, &dev, &csr, &ent))
        return -1;
    cudaError_t e = layout_pad_grad_launch(y->data, dy->data, dbl, &sc, csr, ent, s);
    layout_scratch_free(c, dev);
    CUDA_TRY(c, e);
    return 0;
}

/* ---- the family's table ------------------------------------------------------------ */

CUDA_KERNEL_TABLE(layout) = {
    { "", "Transpose", cuda_transpose },
    { "", "Concat", cuda_concat },
    { "", "Split", cuda_split },
    { "", "Slice", cuda_slice },
    { "dtrexec", "SliceGrad", cuda_slice_grad },
    { "", "Gather", cuda_gather },
    { "dtrexec", "GatherGrad", cuda_gather_grad },
    { "", "GatherElements", cuda_gather_elements },
    { "dtrexec", "GatherElementsGrad", cuda_gather_elements_grad },
    { "", "GatherND", cuda_gather_nd },
    { "dtrexec", "GatherNDGrad", cuda_gather_nd_grad },
    { "", "ScatterND", cuda_scatter_nd },
    { "", "ScatterElements", cuda_scatter_elements },
    { "", "Scatter", cuda_scatter_elements },
    { "dtrexec", "ScatterGrad", cuda_scatter_grad },
    { "", "ArgMax", cuda_arg_select },
    { "", "ArgMin", cuda_arg_select },
    { "", "TopK", cuda_topk },
    { "", "OneHot", cuda_onehot },
    { "", "CumSum", cuda_cumsum },
    { "", "Trilu", cuda_trilu },
    { "", "Einsum", cuda_einsum },
    { "", "Expand", cuda_expand },
    { "", "Tile", cuda_tile },
    { "", "Range", cuda_range },
    { "", "Shape", cuda_shape },
    { "", "Size", cuda_size },
    { "", "Constant", cuda_constant },
    { "", "ConstantOfShape", cuda_constant_of_shape },
    { "", "Pad", cuda_pad },
    { "dtrexec", "PadGrad", cuda_pad_grad },
    { "", "Resize", cuda_resize },
    { "dtrexec", "ResizeGrad", cuda_resize_grad },
    { "", "LSTM", cuda_rnn },
    { "", "GRU", cuda_rnn },
    { "", "RNN", cuda_rnn },
    { "dtrexec", "LSTMGrad", cuda_rnn_grad },
    { "dtrexec", "GRUGrad", cuda_rnn_grad },
    { "dtrexec", "RNNGrad", cuda_rnn_grad },
    { 0 },
};
