/* ops/cuda/vision.c — the "vision" family's CUDA kernels and its table,
 * cuda_kernels_vision. By CPU file:
 *  - ops/center_crop_pad.c: CenterCropPad;
 *  - ops/tensor_scatter.c: TensorScatter, TensorScatterGrad (the cache is
 *    copied, then the update's rows written; write_indices, a host input,
 *    is uploaded);
 *  - ops/roi_align.c: RoiAlign, RoiAlignGrad (avg; batch_indices uploaded);
 *  - ops/deform_conv.c: DeformConv, DeformConvGrad;
 *  - ops/nms.c, ops/unique.c: NonMaxSuppression and Unique, whose output
 *    shapes depend on the values: their inputs are host tensors
 *    (op_def.host_inputs), so the selection is made on the host, as infer
 *    counted it, and uploaded, as NonZero's kernel does (ops/cuda/misc.c).
 *
 * Shapes, dtypes and attributes have been checked by the CPU op_def's infer()
 * before a kernel runs. Device code: ops/cuda/vision_kernels.cu. */
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/cuda-impl.h"
#include "ops/cuda/layout-impl.h"
#include "ops/cuda/vision-kernels.h"
#include "ops/elementwise-impl.h"
#include "ops/vision-impl.h"

#define FLOATS_LIST "float, double"

static int vision_size_error(const struct op_call *c, size_t es)
{
    return op_error(c, "elements of %zu bytes are not supported", es);
}

/* ---- CenterCropPad --------------------------------------------------------------- */

static int cuda_vision_center_crop_pad(struct op_call *c)
{
    struct vis_crop g;
    if (vision_crop_geom(c, &g))
        return -1;
    size_t es = onnx_dtype_size(c->in[0]->dtype);
    cudaError_t e = cuda_vis_crop_launch(cuda_ctx_of(c)->stream, es, &g, c->in[0]->data,
                                         c->out[0]->data);
    if (e == cudaErrorNotSupported)
        return vision_size_error(c, es);
    CUDA_TRY(c, e);
    return 0;
}

/* ---- TensorScatter, TensorScatterGrad ---------------------------------------------- */

static int cuda_vision_tensor_scatter(struct op_call *c)
{
    const int grad = !strcmp(c->def->name, "TensorScatterGrad");
    const struct tensor *src = c->in[0];
    const int64_t batch = src->dims[0];
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(batch > 0 ? batch : 1));
    struct vis_scatter g;
    if (!idx)
        return op_error(c, "out of host memory for %lld write indices", (long long)batch);
    if (vision_scatter_geom(c, &g, idx)) {
        free(idx);
        return -1;
    }
    cudaStream_t s = cuda_ctx_of(c)->stream;
    void *out = c->out[0] ? c->out[0]->data : NULL;
    void *dupd = grad && c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL;
    if (out && tensor_size_bytes(src)) {
        cudaError_t e = cudaMemcpyAsync(out, src->data, tensor_size_bytes(src),
                                        cudaMemcpyDeviceToDevice, s);
        if (e != cudaSuccess) {
            free(idx);
            CUDA_TRY(c, e);
        }
    }
    if (g.outer * g.seq * g.inner == 0) {
        free(idx);
        return 0;
    }
    int64_t *dev = layout_upload(c, idx, sizeof(int64_t) * (size_t)(batch > 0 ? batch : 1));
    if (!dev)
        return -1;
    size_t es = onnx_dtype_size(src->dtype);
    cudaError_t e = cuda_vis_scatter_launch(s, es, &g, dev, grad ? NULL : c->in[1]->data,
                                            grad ? src->data : NULL, out, dupd);
    layout_scratch_free(c, dev);
    if (e == cudaErrorNotSupported)
        return vision_size_error(c, es);
    CUDA_TRY(c, e);
    return 0;
}

/* ---- RoiAlign, RoiAlignGrad -------------------------------------------------------- */

static int cuda_vision_roi_align(struct op_call *c)
{
    const int grad = !strcmp(c->def->name, "RoiAlignGrad");
    struct vis_roi g;
    if (vision_roi_geom(c, &g))
        return -1;
    if (grad && g.max_mode)
        return op_error(c, "the gradient of mode max is not implemented");
    const struct tensor *bi = c->in[2];
    if (tensor_numel(c->out[0]) == 0)
        return 0;
    size_t bytes = sizeof(int64_t) * (size_t)(g.rois > 0 ? g.rois : 1);
    int64_t *host = malloc(bytes);
    if (!host)
        return op_error(c, "out of host memory for %lld batch indices", (long long)g.rois);
    for (int64_t r = 0; r < g.rois; r++)
        host[r] = tensor_get_int(bi, r);
    int64_t *dev = layout_upload(c, host, bytes);
    if (!dev)
        return -1;
    const struct tensor *rois = c->in[1];
    cudaError_t e = cuda_vis_roi_launch(cuda_ctx_of(c)->stream, rois->dtype, &g, dev,
                                        grad ? NULL : c->in[0]->data, rois->data,
                                        grad ? c->in[0]->data : NULL, c->out[0]->data);
    layout_scratch_free(c, dev);
    if (e == cudaErrorNotSupported)
        return ew_dtype_error(c, "X", rois->dtype, FLOATS_LIST);
    CUDA_TRY(c, e);
    return 0;
}

/* ---- DeformConv -------------------------------------------------------------------- */

static void *vision_out(const struct op_call *c, int k)
{
    return c->n_out > k && c->out[k] ? c->out[k]->data : NULL;
}

static int cuda_vision_deform_conv(struct op_call *c)
{
    struct vis_dconv g;
    if (vision_dconv_geom(c, &g))
        return -1;
    if (!strcmp(c->def->name, "DeformConvGrad")) {
        const struct tensor *x = c->in[1];
        cudaError_t e = cuda_vis_dconv_grad_launch(
            cuda_ctx_of(c)->stream, x->dtype, &g, c->in[0]->data, x->data, c->in[2]->data,
            c->in[3]->data, c->n_in > 4 && c->in[4] ? c->in[4]->data : NULL, vision_out(c, 0),
            vision_out(c, 1), vision_out(c, 2), vision_out(c, 3), vision_out(c, 4));
        if (e == cudaErrorNotSupported)
            return ew_dtype_error(c, "X", x->dtype, FLOATS_LIST);
        CUDA_TRY(c, e);
        return 0;
    }
    const struct tensor *x = c->in[0];
    const void *bias = c->n_in > 3 && c->in[3] ? c->in[3]->data : NULL;
    const void *mask = c->n_in > 4 && c->in[4] ? c->in[4]->data : NULL;
    cudaError_t e = cuda_vis_dconv_launch(cuda_ctx_of(c)->stream, x->dtype, &g, x->data,
                                          c->in[1]->data, c->in[2]->data, mask, bias,
                                          c->out[0]->data);
    if (e == cudaErrorNotSupported)
        return ew_dtype_error(c, "X", x->dtype, FLOATS_LIST);
    CUDA_TRY(c, e);
    return 0;
}

/* ---- NonMaxSuppression, Unique: made on the host, uploaded ---------------------------- */

static void CUDART_CB vision_host_free(void *ptr)
{
    free(ptr);
}

/* Copies the malloc'ed host buffer into dst on the stream; frees it once the
 * copy has run (or now, after waiting, when queueing failed). */
static int vision_upload_to(struct op_call *c, void *dst, void *host, size_t bytes)
{
    cudaStream_t s = cuda_ctx_of(c)->stream;
    cudaError_t e = cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess)
        e = cudaLaunchHostFunc(s, vision_host_free, host);
    if (e != cudaSuccess) {
        cudaStreamSynchronize(s);  /* the copy may be queued: wait before the buffer goes */
        free(host);
        return op_error(c, "CUDA: %s (copying %zu bytes of results)", cudaGetErrorString(e), bytes);
    }
    return 0;
}

static int cuda_vision_nms(struct op_call *c)
{
    struct tensor *y = c->out[0];
    size_t bytes = tensor_size_bytes(y);
    if (bytes == 0)
        return 0;
    int64_t *host = malloc(bytes);
    if (!host)
        return op_error(c, "out of host memory for %zu bytes of indices", bytes);
    int64_t n = vision_nms_run(c, host);
    if (n != y->dims[0]) {
        free(host);
        return n < 0 ? -1 : op_error(c, "selected %lld boxes where infer counted %lld",
                                     (long long)n, (long long)y->dims[0]);
    }
    return vision_upload_to(c, y->data, host, bytes);
}

static int cuda_vision_unique(struct op_call *c)
{
    struct vision_unique u;
    if (vision_unique_run(c, &u))
        return -1;
    struct tensor *y = c->out[0];
    size_t bytes = tensor_size_bytes(y);
    int rc = 0;
    if (u.k != y->dims[u.axis < 0 ? 0 : u.axis]) {
        rc = op_error(c, "found %lld distinct values where infer found %lld", (long long)u.k,
                      (long long)y->dims[u.axis < 0 ? 0 : u.axis]);
    } else if (bytes) {
        void *host = malloc(bytes);
        if (!host)
            rc = op_error(c, "out of host memory for %zu bytes of values", bytes);
        else {
            vision_unique_fill_y(c, &u, host);
            rc = vision_upload_to(c, y->data, host, bytes);
        }
    }
    int64_t *src[4] = { NULL, u.first, u.inverse, u.counts };
    for (int o = 1; rc == 0 && o < 4 && o < c->n_out; o++) {
        if (!c->out[o] || !tensor_size_bytes(c->out[o]))
            continue;
        size_t b = tensor_size_bytes(c->out[o]);
        void *host = malloc(b);
        if (!host) {
            rc = op_error(c, "out of host memory for %zu bytes of indices", b);
            break;
        }
        memcpy(host, src[o], b);
        rc = vision_upload_to(c, c->out[o]->data, host, b);
    }
    vision_unique_free(&u);
    return rc;
}

/* ---- the family's table ---------------------------------------------------- */

CUDA_KERNEL_TABLE(vision) = {
    { "", "CenterCropPad", cuda_vision_center_crop_pad },
    { "", "TensorScatter", cuda_vision_tensor_scatter },
    { "dtrexec", "TensorScatterGrad", cuda_vision_tensor_scatter },
    { "", "RoiAlign", cuda_vision_roi_align },
    { "dtrexec", "RoiAlignGrad", cuda_vision_roi_align },
    { "", "DeformConv", cuda_vision_deform_conv },
    { "dtrexec", "DeformConvGrad", cuda_vision_deform_conv },
    { "", "NonMaxSuppression", cuda_vision_nms },
    { "", "Unique", cuda_vision_unique },
    { 0 },
};
