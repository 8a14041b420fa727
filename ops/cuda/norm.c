/* ops/cuda/norm.c — the CUDA kernels of the norm family: RMSNormalization,
 * RMSNormGrad, GroupNormalization, InstanceNormalization and GroupNormGrad,
 * with our own kernels (norm_kernels.cu), following ops/rms_norm.c and
 * ops/group_norm.c to the letter (statistics recomputed from X in the
 * gradients, Scale broadcast to the normalised shape).
 *
 * A family apart from nn (whose BatchNormalization and LayerNormalization
 * sit in nn_norm.c) because it needs no cuDNN: tests/cuda_emu runs these
 * kernels on the host. */
#include "ops/cuda/cuda-impl.h"
#include "ops/cuda/norm-kernels.h"
#include "ops/nn-impl.h"
#include "ops/attn-params.h"
#include "ops/nn-params.h"

static cudaStream_t norm_stream(const struct op_call *c)
{
    return cuda_ctx_of(c)->stream;
}

static int norm_scratch(const struct op_call *c, size_t bytes, const char *what, void **p)
{
    *p = nn_scratch_alloc(c, bytes);
    if (!*p)
        return op_error(c, "cannot get %zu bytes of device scratch for %s", bytes, what);
    return 0;
}

/* Scale as `cols` contiguous values on the device: the tensor itself, or
 * broadcast into dst (cols floats of scratch). */
static int norm_scale_expand(struct op_call *c, const struct tensor *t, const struct tensor *norm,
                             int64_t cols, float *dst, const float **out)
{
    if (tensor_numel(t) == cols) {
        *out = t->data;
        return 0;
    }
    int64_t strides[TENSOR_MAX_RANK];
    broadcast_strides(t, norm, strides);
    CUDA_TRY(c, norm_cuda_expand(norm_stream(c), norm->rank, norm->dims, strides, cols, t->data, dst));
    *out = dst;
    return 0;
}

/* ---- RMSNormalization ------------------------------------------------------------- */

static int cuda_rms_norm(struct op_call *c)
{
    const struct layer_norm_params *p = c->params;
    int axis;
    int64_t rows, cols;
    struct tensor norm = { .dtype = ONNX_DTYPE_FLOAT };
    if (nn_norm_split(c, &axis, &rows, &cols, &norm))
        return -1;
    const struct tensor *st = c->in[1];
    float *tmp = NULL;
    if (tensor_numel(st) != cols && norm_scratch(c, sizeof(float) * (size_t)cols, "broadcasting scale",
                                                 (void **)&tmp))
        return -1;
    const float *scale = NULL;
    int rc = norm_scale_expand(c, st, &norm, cols, tmp, &scale);
    if (!rc) {
        cudaError_t e = norm_cuda_rms_forward(norm_stream(c), rows, cols, c->in[0]->data, scale, p->epsilon,
                                              c->out[0]->data);
        if (e != cudaSuccess)
            rc = op_error(c, "CUDA: %s (RMS normalization)", cudaGetErrorString(e));
    }
    nn_scratch_free(c, tmp);
    return rc;
}

static int cuda_rms_norm_grad(struct op_call *c)
{
    const struct layer_norm_params *p = c->params;
    const struct tensor *x = c->in[1], *st = c->in[2];
    struct op_call fwd = *c;           /* nn_norm_split reads in[0] as X */
    const struct tensor *fin[2] = { x, st };
    fwd.in = fin;
    int axis;
    int64_t rows, cols;
    struct tensor norm = { .dtype = ONNX_DTYPE_FLOAT };
    if (nn_norm_split(&fwd, &axis, &rows, &cols, &norm))
        return -1;
    size_t expand = tensor_numel(st) != cols ? (size_t)cols : 0;
    float *tmp;
    if (norm_scratch(c, sizeof(float) * ((size_t)rows + expand), "RMS-norm gradient", (void **)&tmp))
        return -1;
    const float *scale = NULL;
    int rc = norm_scale_expand(c, st, &norm, cols, tmp + rows, &scale);
    if (!rc) {
        float *dscale = c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL;
        cudaError_t e = norm_cuda_rms_backward(norm_stream(c), rows, cols, c->in[0]->data, x->data, scale,
                                               p->epsilon, c->out[0]->data, dscale, tmp);
        if (e != cudaSuccess)
            rc = op_error(c, "CUDA: %s (RMS normalization gradient)", cudaGetErrorString(e));
    }
    nn_scratch_free(c, tmp);
    return rc;
}

/* ---- GroupNormalization, InstanceNormalization ------------------------------------------ */

static int cuda_group_norm(struct op_call *c)
{
    const struct group_norm_params *p = c->params;
    struct nn_gn_dims d;
    if (nn_group_norm_dims(c, c->in[0], c->in[1], c->in[2], &d))
        return -1;
    CUDA_TRY(c, norm_cuda_gn_forward(norm_stream(c), d.n, d.ch, d.groups, d.spatial, c->in[0]->data,
                                     c->in[1]->data, c->in[2]->data, d.per_group, p->epsilon,
                                     c->out[0]->data));
    return 0;
}

static int cuda_group_norm_grad(struct op_call *c)
{
    const struct group_norm_params *p = c->params;
    struct nn_gn_dims d;
    if (nn_group_norm_dims(c, c->in[1], c->in[2], NULL, &d))
        return -1;
    double *part;
    if (norm_scratch(c, sizeof(double) * 2 * (size_t)(d.n * d.ch), "group-norm gradient sums", (void **)&part))
        return -1;
    cudaError_t e = norm_cuda_gn_backward(norm_stream(c), d.n, d.ch, d.groups, d.spatial, c->in[0]->data,
                                          c->in[1]->data, c->in[2]->data, d.per_group, p->epsilon,
                                          c->out[0]->data, c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL,
                                          c->n_out > 2 && c->out[2] ? c->out[2]->data : NULL, part);
    nn_scratch_free(c, part);
    CUDA_TRY(c, e);
    return 0;
}

CUDA_KERNEL_TABLE(norm) = {
    { "", "RMSNormalization", cuda_rms_norm },
    { "dtrexec", "RMSNormGrad", cuda_rms_norm_grad },
    { "", "GroupNormalization", cuda_group_norm },
    { "", "InstanceNormalization", cuda_group_norm },
    { "dtrexec", "GroupNormGrad", cuda_group_norm_grad },
    { 0 },
};
