/* ops/cuda/elem_unary.c — CUDA kernels of the one-input operators of
 * ops/unary.c (Sqrt ... Not, Clip), their dtrexec-domain gradients over
 * (dy, z), and Dropout with DropoutGrad (ops/dropout.c).
 *
 * Dropout draws element i's mask from a pure function of the call's key and
 * i (ops/dropout.c's counter-based generator, reproduced on the device bit
 * for bit), so CPU and CUDA give the same mask, and a DTR recomputation or
 * DropoutGrad regenerates it exactly. */
#include <string.h>

#include "ops/cuda/elem-impl.h"
#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

#define FLOATS_LIST "float, double"
#define SIGNED_LIST "float, double, int8, int16, int32, int64"
#define NUMERIC_LIST "float, double, int8, int16, int32, int64, uint8, uint16, uint32, uint64"

static int unary_run(struct op_call *c, int op, const char *supported,
                     const struct cuda_ew_consts *k)
{
    return cuda_elem_run(c, op, c->in[0]->dtype, 0, c->out[0], c->in, 1, k, supported);
}

int cuda_elem_sqrt(struct op_call *c) { return unary_run(c, CUDA_EW_SQRT, FLOATS_LIST, NULL); }
int cuda_elem_exp(struct op_call *c) { return unary_run(c, CUDA_EW_EXP, FLOATS_LIST, NULL); }
int cuda_elem_log(struct op_call *c) { return unary_run(c, CUDA_EW_LOG, FLOATS_LIST, NULL); }
int cuda_elem_tanh(struct op_call *c) { return unary_run(c, CUDA_EW_TANH, FLOATS_LIST, NULL); }
int cuda_elem_erf(struct op_call *c) { return unary_run(c, CUDA_EW_ERF, FLOATS_LIST, NULL); }
int cuda_elem_reciprocal(struct op_call *c)
{
    return unary_run(c, CUDA_EW_RECIP, FLOATS_LIST, NULL);
}
int cuda_elem_sigmoid(struct op_call *c)
{
    return unary_run(c, CUDA_EW_SIGMOID, FLOATS_LIST, NULL);
}
int cuda_elem_neg(struct op_call *c) { return unary_run(c, CUDA_EW_NEG, SIGNED_LIST, NULL); }
int cuda_elem_abs(struct op_call *c) { return unary_run(c, CUDA_EW_ABS, NUMERIC_LIST, NULL); }
int cuda_elem_relu(struct op_call *c) { return unary_run(c, CUDA_EW_RELU, SIGNED_LIST, NULL); }
int cuda_elem_not(struct op_call *c) { return unary_run(c, CUDA_EW_NOT, "bool", NULL); }

int cuda_elem_leaky_relu(struct op_call *c)
{
    const struct leaky_relu_params *p = c->params;
    struct cuda_ew_consts k = { .alpha = p ? p->alpha : 0.01f };
    return unary_run(c, CUDA_EW_LEAKY, FLOATS_LIST, &k);
}

int cuda_elem_gelu(struct op_call *c)
{
    const struct gelu_params *p = c->params;
    return unary_run(c, p && p->tanh_approx ? CUDA_EW_GELU_TANH : CUDA_EW_GELU, FLOATS_LIST,
                     NULL);
}

/* ---- Clip ------------------------------------------------------------------ */

/* Bounds of Clip (and ClipGrad): device scalars lo / hi where given; else,
 * as elements of the dtype in the constants, the attributes (from_attrs)
 * or the dtype's whole range. */
#define CLIP_HOST_BOUNDS(unused, D)                                                    \
    case ONNX_DTYPE_##D: {                                                             \
        EW_T_##D l = EW_LOWEST_##D, h = EW_HIGHEST_##D;                                \
        if (p) {                                                                       \
            l = EW_ST_##D((double)p->min);                                             \
            h = EW_ST_##D((double)p->max);                                             \
        }                                                                              \
        memcpy(&k->lo_bits, &l, sizeof l);                                             \
        memcpy(&k->hi_bits, &h, sizeof h);                                             \
        break;                                                                         \
    }

static int clip_consts(struct op_call *c, const struct clip_params *p, const struct tensor *lo,
                       const struct tensor *hi, struct cuda_ew_consts *k)
{
    memset(k, 0, sizeof *k);
    switch (c->in[0]->dtype) {
        EW_NUMERIC_TYPES(CLIP_HOST_BOUNDS, _)
    default:
        return ew_dtype_error(c, "input 0", c->in[0]->dtype, NUMERIC_LIST);
    }
    if (!p) {
        k->lo = lo ? lo->data : NULL;
        k->hi = hi ? hi->data : NULL;
    }
    return 0;
}

int cuda_elem_clip(struct op_call *c)
{
    const struct clip_params *p = c->params;
    const struct tensor *lo = c->n_in > 1 ? c->in[1] : NULL;
    const struct tensor *hi = c->n_in > 2 ? c->in[2] : NULL;
    struct cuda_ew_consts k;
    if (clip_consts(c, p && !p->from_inputs ? p : NULL, lo, hi, &k))
        return -1;
    return unary_run(c, CUDA_EW_CLIP, NUMERIC_LIST, &k);
}

/* ---- gradients over (dy, z) --------------------------------------------------- */

static int grad_run(struct op_call *c, int op, const struct cuda_ew_consts *k)
{
    const struct tensor *pair[2] = { c->in[0], c->in[1] };
    return cuda_elem_run(c, op, c->in[0]->dtype, 0, c->out[0], pair, 2, k, FLOATS_LIST);
}

int cuda_elem_relu_grad(struct op_call *c) { return grad_run(c, CUDA_EW_RELU_GRAD, NULL); }
int cuda_elem_sigmoid_grad(struct op_call *c) { return grad_run(c, CUDA_EW_SIGMOID_GRAD, NULL); }
int cuda_elem_tanh_grad(struct op_call *c) { return grad_run(c, CUDA_EW_TANH_GRAD, NULL); }
int cuda_elem_sqrt_grad(struct op_call *c) { return grad_run(c, CUDA_EW_SQRT_GRAD, NULL); }
int cuda_elem_reciprocal_grad(struct op_call *c) { return grad_run(c, CUDA_EW_RECIP_GRAD, NULL); }
int cuda_elem_abs_grad(struct op_call *c) { return grad_run(c, CUDA_EW_ABS_GRAD, NULL); }
int cuda_elem_erf_grad(struct op_call *c) { return grad_run(c, CUDA_EW_ERF_GRAD, NULL); }

int cuda_elem_leaky_relu_grad(struct op_call *c)
{
    const struct leaky_relu_params *p = c->params;
    struct cuda_ew_consts k = { .alpha = p ? p->alpha : 0.01f };
    return grad_run(c, CUDA_EW_LEAKY_GRAD, &k);
}

int cuda_elem_gelu_grad(struct op_call *c)
{
    const struct gelu_params *p = c->params;
    return grad_run(c, p && p->tanh_approx ? CUDA_EW_GELU_TANH_GRAD : CUDA_EW_GELU_GRAD, NULL);
}

/* ClipGrad(dy, X, min?, max?): absent bounds are unbounded. */
int cuda_elem_clip_grad(struct op_call *c)
{
    const struct tensor *lo = c->n_in > 2 ? c->in[2] : NULL;
    const struct tensor *hi = c->n_in > 3 ? c->in[3] : NULL;
    struct cuda_ew_consts k;
    if (clip_consts(c, NULL, lo, hi, &k))
        return -1;
    return grad_run(c, CUDA_EW_CLIP_GRAD, &k);
}

/* ---- Dropout ----------------------------------------------------------------- */

/* The key and mode are ops/dropout.c's (ew_dropout_key, ew_dropout_mode). */
int cuda_elem_dropout(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    struct tensor *mask = c->n_out > 1 ? c->out[1] : NULL;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    double ratio;
    int training;
    if (ew_dropout_mode(c, &ratio, &training))
        return -1;
    int64_t n = tensor_numel(x);
    if (n == 0)
        return 0;
    if (!training || ratio == 0) {
        if (cuda_elem_copy(c, y->data, x->data, tensor_size_bytes(x)))
            return -1;
        if (mask && mask->dtype == ONNX_DTYPE_BOOL)
            CUDA_TRY(c, cudaMemsetAsync(mask->data, 1, (size_t)n, s));
        else if (mask)
            CUDA_TRY(c, cuda_dropout_mask_ones_launch(s, mask->dtype, n, mask->data));
        return 0;
    }
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "training-mode dropout supports float and double, got %s",
                        onnx_dtype_name(x->dtype));
    CUDA_TRY(c, cuda_dropout_launch(s, x->dtype, n, ew_dropout_key(c), ratio, x->data, y->data,
                                    mask ? mask->dtype : 0, mask ? mask->data : NULL));
    return 0;
}

/* DropoutGrad(dy, ratio): the forward's mask from the key attribute. */
int cuda_elem_dropout_grad(struct op_call *c)
{
    const struct dropout_grad_params *p = c->params;
    const struct tensor *dy = c->in[0];
    double ratio = tensor_get_double(c->in[1], 0);
    if (dy->dtype != ONNX_DTYPE_FLOAT && dy->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "dy", dy->dtype, FLOATS_LIST);
    CUDA_TRY(c, cuda_dropout_launch(cuda_ctx_of(c)->stream, dy->dtype, tensor_numel(dy), p->key,
                                    ratio, dy->data, c->out[0]->data, 0, NULL));
    return 0;
}
