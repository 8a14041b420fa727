/* ops/cuda/nn_norm.c — BatchNormalization (inference, ONNX training mode,
 * PyTorch-style training of an inference-exported node), BatchNormGrad,
 * LayerNormalization and LayerNormGrad on the GPU, with our own kernels
 * (nn_kernels.cu), following ops/batch_norm.c and ops/layer_norm.c to the
 * letter: biased batch variance in ONNX's outputs, the unbiased one in
 * PyTorch's running variance, running statistics updated once per step
 * (never while DTR recomputes the call), statistics recomputed from X in the
 * gradients.
 *
 * Why not cuDNN's batch normalization: its running variance is always the
 * unbiased one and its exponential average is PyTorch's, so ONNX's training
 * outputs would differ, and its backward reads the saved mean and inverse
 * deviation of one forward call where BatchNormGrad recomputes them from X
 * (one fewer tensor kept alive for DTR). cuDNN 9 has layer normalization only
 * in its graph API. The kernels are memory-bound passes whose sums are split
 * by shape only (deterministic, double accumulation per channel). */
#include "ops/cuda/nn-cuda.h"
#include "ops/nn-params.h"

/* ---- BatchNormalization ------------------------------------------------------ */

/* The node asks for batch statistics (ops/batch_norm.c: bn_training). */
static int bn_onnx_training(const struct op_call *c)
{
    const struct batch_norm_params *p = c->params;
    if (c->version >= 14)
        return p->training_mode;
    for (int i = 1; i < c->n_out; i++)
        if (c->out[i])
            return 1;
    return 0;
}

static void bn_dims(const struct tensor *x, int64_t *n, int64_t *ch, int64_t *sp)
{
    *n = x->dims[0];
    *ch = x->dims[1];
    *sp = (*n * *ch) != 0 ? tensor_numel(x) / (*n * *ch) : 0;
}

int cuda_batch_norm(struct op_call *c)
{
    const struct batch_norm_params *p = c->params;
    const struct tensor *x = c->in[0];
    int64_t n, ch, sp;
    bn_dims(x, &n, &ch, &sp);
    const float *scale = c->in[1]->data, *bias = c->in[2]->data;
    float *mean = c->in[3]->data, *var = c->in[4]->data;
    cudaStream_t st = nn_cuda_stream(c);
    int onnx_training = bn_onnx_training(c);
    int torch_training = !onnx_training && c->env && c->env->training;
    if (!onnx_training && !torch_training) {
        CUDA_TRY(c, nn_cuda_bn_inference(st, n, ch, sp, x->data, scale, bias, mean, var,
                                         p->epsilon, c->out[0]->data));
        return 0;
    }
    void *scratch;
    if (nn_cuda_scratch(c, nn_cuda_bn_scratch_bytes(n, ch, sp), "batch statistics", &scratch))
        return -1;
    int rc = 0;
    cudaError_t e = nn_cuda_bn_training(st, n, ch, sp, x->data, scale, bias, p->epsilon,
                                        c->out[0]->data, scratch);
    float mom = p->momentum;
    if (e == cudaSuccess && torch_training && !c->env->recomputing) {
        /* the inputs themselves: the model's running statistics */
        double cnt = (double)n * (double)sp;
        double unbias = cnt > 1 ? cnt / (cnt - 1) : 1.0;
        e = nn_cuda_bn_stat_out(st, 5, ch, scratch, mean, mom, unbias, mean);
        if (e == cudaSuccess)
            e = nn_cuda_bn_stat_out(st, 6, ch, scratch, var, mom, unbias, var);
    }
    for (int i = 1; e == cudaSuccess && !torch_training && i < c->n_out; i++) {
        float *o = c->out[i] ? c->out[i]->data : NULL;
        if (!o)
            continue;
        /* running statistics updated in place already hold the result when
         * DTR replays the call: updating again would apply the momentum twice */
        if (c->env && c->env->recomputing && ((i == 1 && o == mean) || (i == 2 && o == var)))
            continue;
        e = nn_cuda_bn_stat_out(st, i, ch, scratch, i == 1 ? mean : var, mom, 1.0, o);
    }
    if (e != cudaSuccess)
        rc = op_error(c, "CUDA: %s (batch normalization kernels)", cudaGetErrorString(e));
    nn_scratch_free(c, scratch);
    return rc;
}

int cuda_batch_norm_grad(struct op_call *c)
{
    const struct bn_grad_params *p = c->params;
    const struct tensor *x = c->in[1];
    int64_t n, ch, sp;
    bn_dims(x, &n, &ch, &sp);
    void *scratch;
    if (nn_cuda_scratch(c, nn_cuda_bn_scratch_bytes(n, ch, sp), "batch-norm gradient sums", &scratch))
        return -1;
    cudaError_t e = nn_cuda_bn_backward(nn_cuda_stream(c), n, ch, sp, c->in[0]->data, x->data,
                                        c->in[2]->data, c->in[3]->data, c->in[4]->data,
                                        p->epsilon, p->batch_stats, c->out[0]->data,
                                        c->out[1] ? c->out[1]->data : NULL,
                                        c->out[2] ? c->out[2]->data : NULL, scratch);
    nn_scratch_free(c, scratch);
    CUDA_TRY(c, e);
    return 0;
}

/* ---- LayerNormalization -------------------------------------------------------- */

/* Rows, columns and the normalised shape X.shape[axis:] (ops/layer_norm.c). */
static int ln_split(const struct op_call *c, const struct tensor *x, int64_t *rows, int64_t *cols,
                    struct tensor *norm)
{
    const struct layer_norm_params *p = c->params;
    int axis = op_axis(p->axis, x->rank);
    if (axis < 0)
        return op_error(c, "axis %lld is out of range for rank %d", (long long)p->axis, x->rank);
    *rows = *cols = 1;
    *norm = (struct tensor){ .dtype = ONNX_DTYPE_FLOAT, .rank = x->rank - axis };
    for (int i = 0; i < x->rank; i++) {
        if (i < axis)
            *rows *= x->dims[i];
        else
            *cols *= (norm->dims[i - axis] = x->dims[i]);
    }
    return 0;
}

/* Scale or B as `cols` contiguous values: the tensor itself, or broadcast
 * into dst (cols floats of scratch). */
static int ln_expand(struct op_call *c, const struct tensor *t, const struct tensor *norm,
                     int64_t cols, float *dst, const float **out)
{
    if (tensor_numel(t) == cols) {
        *out = t->data;
        return 0;
    }
    int64_t strides[TENSOR_MAX_RANK];
    broadcast_strides(t, norm, strides);
    CUDA_TRY(c, nn_cuda_broadcast_expand(nn_cuda_stream(c), norm->rank, norm->dims, strides, cols,
                                         t->data, dst));
    *out = dst;
    return 0;
}

int cuda_layer_norm(struct op_call *c)
{
    const struct layer_norm_params *p = c->params;
    const struct tensor *x = c->in[0], *st = c->in[1], *bt = c->n_in > 2 ? c->in[2] : NULL;
    int64_t rows, cols;
    struct tensor norm;
    if (ln_split(c, x, &rows, &cols, &norm))
        return -1;
    float *tmp = NULL;
    if (tensor_numel(st) != cols || (bt && tensor_numel(bt) != cols))
        if (nn_cuda_scratch(c, sizeof(float) * 2 * (size_t)cols, "broadcasting Scale/B", (void **)&tmp))
            return -1;
    const float *scale = NULL, *bias = NULL;
    int rc = ln_expand(c, st, &norm, cols, tmp, &scale);
    if (!rc && bt)
        rc = ln_expand(c, bt, &norm, cols, tmp ? tmp + cols : NULL, &bias);
    if (!rc) {
        float *mean = c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL;
        float *inv_std = c->n_out > 2 && c->out[2] ? c->out[2]->data : NULL;
        cudaError_t e = nn_cuda_ln_forward(nn_cuda_stream(c), rows, cols, x->data, scale, bias,
                                           p->epsilon, c->out[0]->data, mean, inv_std);
        if (e != cudaSuccess)
            rc = op_error(c, "CUDA: %s (layer normalization)", cudaGetErrorString(e));
    }
    nn_scratch_free(c, tmp);
    return rc;
}

int cuda_layer_norm_grad(struct op_call *c)
{
    const struct layer_norm_params *p = c->params;
    const struct tensor *x = c->in[1], *st = c->in[2];
    int64_t rows, cols;
    struct tensor norm;
    if (ln_split(c, x, &rows, &cols, &norm))
        return -1;
    size_t sums = nn_cuda_ln_scratch_bytes(rows, cols);
    size_t expand = tensor_numel(st) != cols ? sizeof(float) * (size_t)cols : 0;
    char *tmp;
    if (nn_cuda_scratch(c, sums + expand, "layer-norm gradient sums", (void **)&tmp))
        return -1;
    const float *scale = NULL;
    int rc = ln_expand(c, st, &norm, cols, (float *)(tmp + sums), &scale);
    if (!rc) {
        cudaError_t e = nn_cuda_ln_backward(nn_cuda_stream(c), rows, cols, c->in[0]->data, x->data,
                                            scale, p->epsilon, c->out[0]->data,
                                            c->out[1] ? c->out[1]->data : NULL,
                                            c->out[2] ? c->out[2]->data : NULL, tmp);
        if (e != cudaSuccess)
            rc = op_error(c, "CUDA: %s (layer normalization gradient)", cudaGetErrorString(e));
    }
    nn_scratch_free(c, tmp);
    return rc;
}
