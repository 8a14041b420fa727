/* ops/cuda/misc.c — the "misc" family's CUDA kernels: the operators of
 * issue 18's long tail that belong to no older family, and the family's
 * table, cuda_kernels_misc. By CPU file:
 *  - ops/unary_trig.c: Tan ... Shrink and UnaryMathGrad;
 *  - ops/bitwise.c: BitwiseAnd/Or/Xor/Not, BitShift, BitCast;
 *  - ops/mean_max.c: Mean and GlobalMaxPool, made of the elementwise
 *    family's Sum and ReduceMax as on the CPU;
 *  - ops/depth_space.c: DepthToSpace, SpaceToDepth (the layout family's
 *    strided copy through the CPU's plan);
 *  - ops/eye_nonzero.c: EyeLike, NonZero;
 *  - ops/along_axis.c: Hardmax, LpNormalization, CumProd and gradients;
 *  - ops/select_axis.c: Compress (the layout family's Gather over uploaded
 *    indices), ReverseSequence;
 *  - ops/local_norm.c: LRN, MeanVarianceNormalization and gradients;
 *  - ops/det.c: Det, DetGrad;
 *  - ops/upsample.c: Upsample (the layout family's Resize);
 *  - ops/affine_grid.c, ops/grid_sample.c: AffineGrid, GridSample and
 *    their gradients;
 *  - ops/causal_conv.c, ops/linear_attention.c: CausalConvWithState,
 *    LinearAttention and their gradients (host code in ops/cuda/misc_seq.c).
 *
 * Shapes, dtypes and attributes have been checked by the CPU op_def's
 * infer() before a kernel runs; the parameters are the ones its parse()
 * made (ops/misc-params.h). Device code: ops/cuda/misc_kernels.cu. */
#include <stdlib.h>
#include <string.h>

#include "ops/cuda/elem-impl.h"
#include "ops/cuda/layout-impl.h"
#include "ops/cuda/misc-kernels.h"
#include "ops/elementwise-impl.h"
#include "ops/grid_sample-impl.h"
#include "ops/misc-impl.h"
#include "ops/misc-params.h"

/* ---- one-input math (ops/unary_trig.c) ----------------------------------- */

static struct cuda_umath_consts umath_consts(const struct unary_math_params *p)
{
    struct cuda_umath_consts k = { .alpha = p->alpha, .lambd = p->lambd, .bias = p->bias };
    return k;
}

static int cuda_misc_unary_math(struct op_call *c)
{
    const struct unary_math_params *p = c->params;
    const struct tensor *x = c->in[0];
    struct cuda_umath_consts k = umath_consts(p);
    cudaError_t e = cuda_umath_launch(cuda_ctx_of(c)->stream, p->fn, x->dtype, tensor_numel(x),
                                      x->data, c->out[0]->data, &k);
    if (e == cudaErrorNotSupported)
        return ew_dtype_error(c, "input 0", x->dtype,
                              p->fn == UMATH_SHRINK ? "float, double, int8, int16, int32, int64, "
                                                      "uint8, uint16, uint32, uint64"
                                                    : "float, double");
    CUDA_TRY(c, e);
    return 0;
}

static int cuda_misc_unary_math_grad(struct op_call *c)
{
    const struct unary_math_params *p = c->params;
    const struct tensor *dy = c->in[0];
    struct cuda_umath_consts k = umath_consts(p);
    cudaError_t e = cuda_umath_grad_launch(cuda_ctx_of(c)->stream, p->fn, dy->dtype,
                                           tensor_numel(dy), dy->data, c->in[1]->data,
                                           c->out[0]->data, &k);
    if (e == cudaErrorNotSupported)
        return ew_dtype_error(c, "dy", dy->dtype, "float, double");
    CUDA_TRY(c, e);
    return 0;
}

/* ---- bitwise (ops/bitwise.c) ------------------------------------------------ */

/* out = in[0] op in[1] (NOT: op in[0]) over numpy broadcasting. */
static int bitwise_run(struct op_call *c, int op)
{
    struct tensor *out = c->out[0];
    if (out->rank > CUDA_MISC_MAX_RANK)
        return op_error(c, "rank %d is above the %d the CUDA kernel handles", out->rank,
                        CUDA_MISC_MAX_RANK);
    struct cuda_misc_bcast g;
    memset(&g, 0, sizeof g);
    g.rank = out->rank;
    g.numel = tensor_numel(out);
    for (int d = 0; d < out->rank; d++)
        g.dims[d] = out->dims[d];
    broadcast_strides(c->in[0], out, g.sa);
    if (c->n_in > 1)
        broadcast_strides(c->in[1], out, g.sb);
    cudaError_t e = cuda_bitwise_launch(cuda_ctx_of(c)->stream, op, out->dtype, &g,
                                        c->in[0]->data, c->n_in > 1 ? c->in[1]->data : NULL,
                                        out->data);
    if (e == cudaErrorNotSupported)
        return ew_dtype_error(c, "input 0", out->dtype,
                              "int8, int16, int32, int64, uint8, uint16, uint32, uint64");
    CUDA_TRY(c, e);
    return 0;
}

static int cuda_misc_bitwise_and(struct op_call *c) { return bitwise_run(c, CUDA_BITWISE_AND); }
static int cuda_misc_bitwise_or(struct op_call *c) { return bitwise_run(c, CUDA_BITWISE_OR); }
static int cuda_misc_bitwise_xor(struct op_call *c) { return bitwise_run(c, CUDA_BITWISE_XOR); }
static int cuda_misc_bitwise_not(struct op_call *c) { return bitwise_run(c, CUDA_BITWISE_NOT); }

static int cuda_misc_bitshift(struct op_call *c)
{
    const struct bitshift_params *p = c->params;
    return bitwise_run(c, p->right ? CUDA_BITWISE_SHR : CUDA_BITWISE_SHL);
}

/* BitCast: the bytes, copied. */
static int cuda_misc_bitcast(struct op_call *c)
{
    return cuda_elem_copy(c, c->out[0]->data, c->in[0]->data, tensor_size_bytes(c->in[0]));
}

/* ---- Mean and GlobalMaxPool (ops/mean_max.c) -------------------------------- */

/* Sum's fold into the output, then the division by the input count. */
static int cuda_misc_mean(struct op_call *c)
{
    struct tensor *y = c->out[0];
    if (y->dtype != ONNX_DTYPE_FLOAT && y->dtype != ONNX_DTYPE_DOUBLE)
        return ew_dtype_error(c, "input 0", y->dtype, "float, double");
    if (cuda_elem_sum(c))
        return -1;
    CUDA_TRY(c, cuda_misc_div_launch(cuda_ctx_of(c)->stream, y->dtype, tensor_numel(y), y->data,
                                     (double)c->n_in));
    return 0;
}

static int cuda_misc_global_max_pool(struct op_call *c)
{
    struct op_call r;
    struct tensor axes;
    int64_t ax[TENSOR_MAX_RANK];
    const struct tensor *in[2];
    if (misc_global_max_pool_call(c, &r, &axes, ax, in))
        return -1;
    return cuda_elem_reduce(&r);
}

/* ---- DepthToSpace, SpaceToDepth (ops/depth_space.c) ---------------------------- */

static int cuda_misc_depth_space(struct op_call *c)
{
    int64_t dims[6], st[6];
    if (tensor_numel(c->out[0]) == 0)
        return 0;
    misc_depth_space_plan(c, dims, st);
    return layout_copy_to_contiguous(c, c->out[0]->data, c->in[0]->data,
                                     onnx_dtype_size(c->in[0]->dtype), 6, dims, st);
}

/* ---- EyeLike, NonZero (ops/eye_nonzero.c) -------------------------------------- */

static int cuda_misc_eye_like(struct op_call *c)
{
    struct tensor *y = c->out[0];
    cudaStream_t s = cuda_ctx_of(c)->stream;
    int64_t start, step, count;
    uint64_t one;
    if (tensor_numel(y) == 0)
        return 0;
    misc_eye_like_diagonal(c, &start, &step, &count, &one);
    CUDA_TRY(c, cudaMemsetAsync(y->data, 0, tensor_size_bytes(y), s));
    CUDA_TRY(c, cuda_misc_fill_strided_launch(s, onnx_dtype_size(y->dtype), y->data, start, step,
                                              count, one));
    return 0;
}

static void CUDART_CB misc_host_free(void *ptr)
{
    free(ptr);
}

/* The input is a host tensor (op_def.host_inputs): the indices are found on
 * the host, as infer counted them, and copied into the output; the host
 * buffer is freed once the queued copy has run. */
static int cuda_misc_nonzero(struct op_call *c)
{
    struct tensor *y = c->out[0];
    size_t bytes = tensor_size_bytes(y);
    if (bytes == 0)
        return 0;
    int64_t *host = malloc(bytes);
    if (!host)
        return op_error(c, "out of host memory for %zu bytes of indices", bytes);
    misc_nonzero_fill(c->in[0], y->dims[1], host);
    cudaStream_t s = cuda_ctx_of(c)->stream;
    cudaError_t e = cudaMemcpyAsync(y->data, host, bytes, cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess)
        e = cudaLaunchHostFunc(s, misc_host_free, host);
    if (e != cudaSuccess) {
        cudaStreamSynchronize(s);  /* the copy may be queued: wait before the buffer goes */
        free(host);
        return op_error(c, "CUDA: %s (copying %zu bytes of indices)", cudaGetErrorString(e), bytes);
    }
    return 0;
}

/* ---- Hardmax, LpNormalization, CumProd (ops/along_axis.c) ------------------------ */

static int cuda_misc_along(struct op_call *c)
{
    const struct along_axis_params *p = c->params;
    const int grad = p->kind == ALONG_LPNORM_GRAD || p->kind == ALONG_CUMPROD_GRAD;
    struct misc_axis_geom g;
    if (misc_axis_geom(c, &g))
        return -1;
    struct cuda_along_args a = {
        .kind = p->kind, .dtype = c->in[grad ? 1 : 0]->dtype,
        .outer = g.outer, .n = g.n, .inner = g.inner,
        .p = p->p, .exclusive = p->exclusive, .reverse = p->reverse,
        .a = c->in[0]->data, .b = grad ? c->in[1]->data : NULL, .out = c->out[0]->data,
    };
    cudaError_t e = cuda_along_launch(cuda_ctx_of(c)->stream, &a);
    if (e == cudaErrorNotSupported)
        return ew_dtype_error(c, "input", a.dtype,
                              p->kind == ALONG_CUMPROD
                                  ? "float, double, int32, int64, uint32, uint64" : "float, double");
    CUDA_TRY(c, e);
    return 0;
}

/* ---- Compress, ReverseSequence (ops/select_axis.c) -------------------------------- */

/* The condition is a host tensor (op_def.host_inputs); its true entries
 * become device indices for Gather's kernel. */
static int cuda_misc_compress(struct op_call *c)
{
    struct misc_compress m;
    if (misc_compress_call(c, &m))
        return -1;
    if (m.idx.dims[0] == 0) {
        free(m.idx_data);
        return 0;
    }
    void *dev = layout_upload(c, m.idx_data, sizeof(int64_t) * (size_t)m.idx.dims[0]);
    if (!dev)
        return -1;
    m.idx.data = dev;
    int rc = cuda_gather(&m.call);
    layout_scratch_free(c, dev);
    return rc;
}

/* sequence_lens is a host tensor, checked by infer; uploaded as int64. */
static int cuda_misc_reverse_sequence(struct op_call *c)
{
    const struct reverse_sequence_params *p = c->params;
    const struct tensor *x = c->in[0], *lens = c->in[1];
    int64_t d0, d1, inner, nb = tensor_numel(lens);
    if (tensor_numel(x) == 0)
        return 0;
    int64_t *host = malloc(sizeof(int64_t) * (size_t)(nb ? nb : 1));
    if (!host)
        return op_error(c, "out of host memory for %lld lengths", (long long)nb);
    for (int64_t b = 0; b < nb; b++)
        host[b] = tensor_get_int(lens, b);
    int64_t *dev = layout_upload(c, host, sizeof(int64_t) * (size_t)(nb ? nb : 1));
    if (!dev)
        return -1;
    misc_reverse_sequence_geom(c, &d0, &d1, &inner);
    cudaError_t e = cuda_reverse_seq_launch(cuda_ctx_of(c)->stream, onnx_dtype_size(x->dtype), d0,
                                            d1, inner, p->batch_axis, dev, x->data,
                                            c->out[0]->data);
    layout_scratch_free(c, dev);
    if (e == cudaErrorNotSupported)
        return op_error(c, "elements of %zu bytes are not supported", onnx_dtype_size(x->dtype));
    CUDA_TRY(c, e);
    return 0;
}

/* ---- LRN, MeanVarianceNormalization (ops/local_norm.c) ------------------------------ */

static int cuda_misc_lrn(struct op_call *c)
{
    const struct lrn_params *p = c->params;
    const struct tensor *x = c->in[c->n_in - 1];
    struct cuda_lrn_args a = {
        .dtype = x->dtype, .size = p->size, .alpha = p->alpha, .beta = p->beta, .bias = p->bias,
        .dy = c->n_in == 2 ? c->in[0]->data : NULL, .x = x->data, .y = c->out[0]->data,
    };
    misc_lrn_geom(c, &a.n, &a.ch, &a.inner);
    cudaError_t e = cuda_lrn_launch(cuda_ctx_of(c)->stream, &a);
    if (e == cudaErrorNotSupported)
        return ew_dtype_error(c, "X", x->dtype, "float, double");
    CUDA_TRY(c, e);
    return 0;
}

static int cuda_misc_mvn(struct op_call *c)
{
    const struct tensor *x = c->in[c->n_in - 1];
    struct misc_groups g;
    if (misc_mvn_groups(c, &g))
        return -1;
    cudaError_t e = cuda_mvn_launch(cuda_ctx_of(c)->stream, x->dtype, &g,
                                    c->n_in == 2 ? c->in[0]->data : NULL, x->data,
                                    c->out[0]->data);
    if (e == cudaErrorNotSupported)
        return ew_dtype_error(c, "X", x->dtype, "float, double");
    CUDA_TRY(c, e);
    return 0;
}

/* ---- Det, DetGrad (ops/det.c) ----------------------------------------------------- */

static int cuda_misc_det(struct op_call *c)
{
    const int grad = c->n_in == 2;
    const struct tensor *x = c->in[grad ? 1 : 0];
    const int64_t m = x->dims[x->rank - 1], mm = m * m;
    const int64_t batch = mm ? tensor_numel(x) / mm : tensor_numel(c->out[0]);
    if (batch == 0)
        return 0;
    size_t bytes = sizeof(double) * (size_t)batch * (size_t)(2 * mm + 1);
    double *work = cuda_elem_scratch(c, bytes);
    if (!work)
        return -1;
    cudaError_t e = cuda_det_launch(cuda_ctx_of(c)->stream, x->dtype, batch, m,
                                    grad ? c->in[0]->data : NULL, x->data, c->out[0]->data, work);
    cuda_elem_scratch_free(c, work);
    if (e == cudaErrorNotSupported)
        return ew_dtype_error(c, "X", x->dtype, "float, double");
    CUDA_TRY(c, e);
    return 0;
}

/* ---- Upsample (ops/upsample.c) --------------------------------------------------- */

static int cuda_misc_upsample(struct op_call *c)
{
    struct misc_upsample u;
    if (misc_upsample_call(c, &u))
        return -1;
    return cuda_resize(&u.call);
}

/* ---- AffineGrid, AffineGridGrad (ops/affine_grid.c) ------------------------------ */

static int cuda_misc_affine_grid(struct op_call *c)
{
    const int grad = !strcmp(c->def->name, "AffineGridGrad");
    struct misc_affine g;
    if (misc_affine_geom(c, &g))
        return -1;
    const struct tensor *t = c->in[0];
    cudaError_t e = cuda_affine_grid_launch(cuda_ctx_of(c)->stream, t->dtype, &g,
                                            grad ? NULL : t->data, grad ? t->data : NULL,
                                            c->out[0]->data);
    if (e == cudaErrorNotSupported)
        return ew_dtype_error(c, "input 0", t->dtype, "float, double");
    CUDA_TRY(c, e);
    return 0;
}

/* ---- GridSample, GridSampleGrad (ops/grid_sample.c) ------------------------------ */

static int cuda_misc_grid_sample(struct op_call *c)
{
    const int grad = c->n_in == 3;
    struct gs_geom g;
    if (misc_grid_sample_geom(c, &g))
        return -1;
    const struct tensor *x = c->in[grad], *grid = c->in[grad + 1];
    void *o0 = c->out[0] ? c->out[0]->data : NULL;
    void *o1 = grad && c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL;
    cudaError_t e = cuda_grid_sample_launch(cuda_ctx_of(c)->stream, x->dtype, &g,
                                            grad ? c->in[0]->data : NULL, x->data, grid->data,
                                            grad ? NULL : o0, grad ? o0 : NULL, o1);
    if (e == cudaErrorNotSupported)
        return ew_dtype_error(c, "X", x->dtype, "float, double");
    CUDA_TRY(c, e);
    return 0;
}

/* ---- the family's table ---------------------------------------------------- */

/* ops/cuda/misc_seq.c */
int cuda_misc_causal_conv(struct op_call *c);
int cuda_misc_linear_attention(struct op_call *c);

CUDA_KERNEL_TABLE(misc) = {
    { "", "Tan", cuda_misc_unary_math },
    { "", "Asin", cuda_misc_unary_math },
    { "", "Acos", cuda_misc_unary_math },
    { "", "Atan", cuda_misc_unary_math },
    { "", "Sinh", cuda_misc_unary_math },
    { "", "Cosh", cuda_misc_unary_math },
    { "", "Asinh", cuda_misc_unary_math },
    { "", "Acosh", cuda_misc_unary_math },
    { "", "Atanh", cuda_misc_unary_math },
    { "", "Softsign", cuda_misc_unary_math },
    { "", "ThresholdedRelu", cuda_misc_unary_math },
    { "", "Shrink", cuda_misc_unary_math },
    { "", "BitwiseAnd", cuda_misc_bitwise_and },
    { "", "BitwiseOr", cuda_misc_bitwise_or },
    { "", "BitwiseXor", cuda_misc_bitwise_xor },
    { "", "BitwiseNot", cuda_misc_bitwise_not },
    { "", "BitShift", cuda_misc_bitshift },
    { "", "BitCast", cuda_misc_bitcast },
    { "", "Mean", cuda_misc_mean },
    { "", "GlobalMaxPool", cuda_misc_global_max_pool },
    { "", "DepthToSpace", cuda_misc_depth_space },
    { "", "SpaceToDepth", cuda_misc_depth_space },
    { "", "EyeLike", cuda_misc_eye_like },
    { "", "NonZero", cuda_misc_nonzero },
    { "", "Hardmax", cuda_misc_along },
    { "", "LpNormalization", cuda_misc_along },
    { "", "CumProd", cuda_misc_along },
    { "dtrexec", "LpNormalizationGrad", cuda_misc_along },
    { "dtrexec", "CumProdGrad", cuda_misc_along },
    { "", "Compress", cuda_misc_compress },
    { "", "ReverseSequence", cuda_misc_reverse_sequence },
    { "", "LRN", cuda_misc_lrn },
    { "", "MeanVarianceNormalization", cuda_misc_mvn },
    { "dtrexec", "LRNGrad", cuda_misc_lrn },
    { "dtrexec", "MeanVarianceNormalizationGrad", cuda_misc_mvn },
    { "", "Det", cuda_misc_det },
    { "dtrexec", "DetGrad", cuda_misc_det },
    { "", "Upsample", cuda_misc_upsample },
    { "", "AffineGrid", cuda_misc_affine_grid },
    { "dtrexec", "AffineGridGrad", cuda_misc_affine_grid },
    { "", "GridSample", cuda_misc_grid_sample },
    { "dtrexec", "GridSampleGrad", cuda_misc_grid_sample },
    { "dtrexec", "UnaryMathGrad", cuda_misc_unary_math_grad },
    { "", "CausalConvWithState", cuda_misc_causal_conv },
    { "dtrexec", "CausalConvWithStateGrad", cuda_misc_causal_conv },
    { "", "LinearAttention", cuda_misc_linear_attention },
    { "dtrexec", "LinearAttentionGrad", cuda_misc_linear_attention },
    { 0 },
};
