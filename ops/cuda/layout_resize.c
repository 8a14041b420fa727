/* ops/cuda/layout_resize.c — CUDA kernels of Resize (nearest and N-linear,
 * every coordinate transformation the CPU supports) and of ResizeGrad
 * (ops/resize.c).
 *
 * The taps (two source indices and a weight per output index and axis) are
 * computed on the host by the CPU's own resize_taps() and copied to the
 * device, so both backends interpolate from the same bits. ResizeGrad runs
 * one thread per input element, which walks the dy elements and corners
 * that read it in the CPU's order (dy row-major, then corner), found
 * through per-axis lists: no atomics, the CPU's sums bit for bit. */
#include <stdlib.h>

#include "ops/cuda/layout-impl.h"
#include "ops/shape-params.h"
#include "ops/shape-impl.h"

_Static_assert(sizeof(struct resize_tap) == sizeof(struct layout_tap), "resize_tap and layout_tap must match");

/* The taps of every axis back to back (host memory), offs[a] where axis a
 * starts; active[0..*k) the axes along which some output blends. */
static struct resize_tap *taps_make(struct op_call *c, const struct resize_params *p, const double *scale,
                                    int rank, const int64_t *in, const int64_t *out, int64_t *offs, int *active,
                                    int *k, size_t *bytes)
{
    int64_t n = 0;
    for (int a = 0; a < rank; a++) {
        offs[a] = n;
        n += out[a];
    }
    *bytes = sizeof(struct resize_tap) * (size_t)(n ? n : 1);
    struct resize_tap *taps = malloc(*bytes);
    if (!taps) {
        op_error(c, "out of host memory for %lld resize taps", (long long)n);
        return NULL;
    }
    *k = 0;
    for (int a = 0; a < rank; a++) {
        resize_taps(p, scale[a], in[a], out[a], taps + offs[a]);
        int blends = 0;
        for (int64_t o = 0; o < out[a]; o++)
            blends |= taps[offs[a] + o].w != 0;
        if (blends)
            active[(*k)++] = a;
    }
    return taps;
}

int cuda_resize(struct op_call *c)
{
    const struct resize_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    cudaStream_t s = cuda_ctx_of(c)->stream;
    size_t esize = onnx_dtype_size(x->dtype);
    if (p->general)
        return op_error(c, "Resize with mode cubic, antialias, exclude_outside or tf_crop_and_resize runs on "
                           "the CPU only (--device cpu)");
    if (tensor_numel(y) == 0)
        return 0;
    if (p->linear && x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "linear mode supports float and double, got %s", onnx_dtype_name(x->dtype));
    if (esize != 1 && esize != 2 && esize != 4 && esize != 8 && esize != 16)
        return op_error(c, "unsupported element type %s", onnx_dtype_name(x->dtype));
    if (x->rank == 0) {
        CUDA_TRY(c, cudaMemcpyAsync(y->data, x->data, esize, cudaMemcpyDeviceToDevice, s));
        return 0;
    }
    struct resize_plan pl;
    if (resize_make_plan(c, &pl))
        return -1;
    int64_t offs[TENSOR_MAX_RANK], xs[TENSOR_MAX_RANK];
    int active[TENSOR_MAX_RANK], k;
    size_t bytes;
    struct resize_tap *taps = taps_make(c, p, pl.scale, x->rank, x->dims, y->dims, offs, active, &k, &bytes);
    if (!taps)
        return -1;
    /* blending reads numbers; the check above makes them float or double */
    if (k > 0 && x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE) {
        free(taps);
        return op_error(c, "linear mode supports float and double, got %s", onnx_dtype_name(x->dtype));
    }
    struct layout_tap *dtaps = layout_upload(c, taps, bytes);
    if (!dtaps)
        return -1;
    shape_strides(x, xs);
    cudaError_t e = layout_resize_launch(y->data, x->data, x->rank, y->dims, xs, dtaps, offs, k, active,
                                         x->dtype == ONNX_DTYPE_DOUBLE, esize, s);
    layout_scratch_free(c, dtaps);
    CUDA_TRY(c, e);
    return 0;
}

/* Per source index o of axis a: its first tap's target, and its second's
 * where the axis blends (one entry with both bits when they coincide). */
struct resize_grad_ctx {
    const struct resize_tap *taps;
    const int64_t *offs;
    int blends[TENSOR_MAX_RANK];
};

static int resize_grad_src(const void *ctx, int a, int64_t o, int64_t *dst, int *mask)
{
    const struct resize_grad_ctx *k = ctx;
    const struct resize_tap *t = k->taps + k->offs[a] + o;
    dst[0] = t->i0;
    mask[0] = 1;
    if (!k->blends[a])
        return 1;
    if (t->i1 == t->i0) {
        mask[0] = 3;
        return 1;
    }
    dst[1] = t->i1;
    mask[1] = 2;
    return 2;
}

int cuda_resize_grad(struct op_call *c)
{
    const struct resize_grad_params *p = c->params;
    const struct tensor *dy = c->in[0], *scales = c->in[1];
    struct tensor *x = c->out[0];
    cudaStream_t s = cuda_ctx_of(c)->stream;
    int rank = dy->rank, dbl = dy->dtype == ONNX_DTYPE_DOUBLE;
    if (p->mode.general)
        return op_error(c, "the gradient of Resize with mode cubic, antialias, exclude_outside or "
                           "tf_crop_and_resize runs on the CPU only (--device cpu)");
    if (dy->dtype != ONNX_DTYPE_FLOAT && dy->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "dy must be float or double, got %s", onnx_dtype_name(dy->dtype));
    if (tensor_numel(x) == 0)
        return 0;
    if (tensor_numel(dy) == 0) {
        CUDA_TRY(c, cudaMemsetAsync(x->data, 0, tensor_size_bytes(x), s));
        return 0;
    }
    if (rank == 0) {
        CUDA_TRY(c, cudaMemcpyAsync(x->data, dy->data, dbl ? 8 : 4, cudaMemcpyDeviceToDevice, s));
        return 0;
    }
    double scale[TENSOR_MAX_RANK];
    for (int a = 0; a < rank; a++)
        scale[a] = ((const double *)scales->data)[a];
    int64_t offs[TENSOR_MAX_RANK];
    int active[TENSOR_MAX_RANK], k;
    size_t tap_bytes;
    struct resize_tap *taps = taps_make(c, &p->mode, scale, rank, x->dims, dy->dims, offs, active, &k, &tap_bytes);
    if (!taps)
        return -1;
    struct resize_grad_ctx ctx = { .taps = taps, .offs = offs };
    for (int j = 0; j < k; j++)
        ctx.blends[active[j]] = 1;
    struct scatter_axis_fn fn = { resize_grad_src, &ctx };
    struct layout_scatter sc;
    int64_t *dev;
    const int64_t *csr, *ent;
    int rc = layout_scatter_upload(c, x, dy, &fn, &sc, &dev, &csr, &ent);
    struct layout_tap *dtaps = rc ? NULL : layout_upload(c, taps, tap_bytes);
    if (rc)
        free(taps);
    if (!dtaps) {
        if (!rc)
            layout_scratch_free(c, dev);
        return -1;
    }
    sc.k = k;
    for (int a = 0; a < rank; a++)
        sc.toffs[a] = offs[a];
    for (int j = 0; j < k; j++)
        sc.active[j] = active[j];
    cudaError_t e = layout_resize_grad_launch(x->data, dy->data, dbl, &sc, csr, ent, dtaps, s);
    layout_scratch_free(c, dtaps);
    layout_scratch_free(c, dev);
    CUDA_TRY(c, e);
    return 0;
}
