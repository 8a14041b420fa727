/* ops/cuda/misc-kernels.h — the launchers of ops/cuda/misc_kernels.cu, the
 * device code of the "misc" family (ops/cuda/misc.c): the operators of
 * issue 18's long tail. Plain C types only: dtypes are enum onnx_dtype
 * values, functions enum unary_math_fn values (ops/misc-params.h). Every launcher
 * queues its kernel on `stream` and returns cudaSuccess, the launch error,
 * or cudaErrorNotSupported when no kernel exists for the dtype. All of them
 * are deterministic: each output element is computed by one thread from
 * its inputs alone. */
#ifndef DTRX_OPS_CUDA_MISC_KERNELS_H
#define DTRX_OPS_CUDA_MISC_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The attributes a unary-math function reads (struct unary_math_params). */
struct cuda_umath_consts {
    float alpha, lambd, bias;
};

/* out[i] = f(x[i]) over n contiguous elements (ops/unary_trig.c's forward
 * functions; Shrink also for integer dtypes). */
cudaError_t cuda_umath_launch(cudaStream_t stream, int fn, int dtype, int64_t n, const void *x,
                              void *out, const struct cuda_umath_consts *k);
/* dx[i] = dy[i] * f'(x[i]) (UnaryMathGrad), float and double. */
cudaError_t cuda_umath_grad_launch(cudaStream_t stream, int fn, int dtype, int64_t n,
                                   const void *dy, const void *x, void *dx,
                                   const struct cuda_umath_consts *k);

/* x[i] = x[i] / divisor (the divisor rounded to T first), float and double:
 * Mean's last step. */
cudaError_t cuda_misc_div_launch(cudaStream_t stream, int dtype, int64_t n, void *x,
                                 double divisor);

/* out element start + i * step (elements of esize bytes: 1, 2, 4 or 8)
 * receives the low esize bytes of `bits`, for i < count: EyeLike's ones. */
cudaError_t cuda_misc_fill_strided_launch(cudaStream_t stream, size_t esize, void *out,
                                          int64_t start, int64_t step, int64_t count,
                                          uint64_t bits);

/* ---- along one axis (ops/along_axis.c) ---- */

/* One line per thread: element k of line (o, i) at (o * n + k) * inner + i.
 * kind is an enum along_axis_kind; a is X (dy for the gradients), b is X
 * for the gradients (else unused). */
struct cuda_along_args {
    int kind, dtype;
    int64_t outer, n, inner;
    int p, exclusive, reverse;
    const void *a, *b;
    void *out;
};

cudaError_t cuda_along_launch(cudaStream_t stream, const struct cuda_along_args *a);

/* ReverseSequence over x seen as [d0, d1, inner] elements of esize bytes
 * (1, 2, 4 or 8): row (i0, i1) of y is row (i0, t') of x for batch_axis 1,
 * (t', i1) for 0, with t' = len - 1 - t when t < len (lens: device int64,
 * one per batch entry, already checked against the time extent). */
cudaError_t cuda_reverse_seq_launch(cudaStream_t stream, size_t esize, int64_t d0, int64_t d1,
                                    int64_t inner, int batch_axis, const int64_t *lens,
                                    const void *x, void *y);

/* ---- LRN, MeanVarianceNormalization (ops/local_norm.c) ---- */

/* One thread per channel line of x seen as [n, ch, inner]; dy NULL for
 * the forward, given for LRNGrad. */
struct cuda_lrn_args {
    int dtype;
    int64_t n, ch, inner, size;
    float alpha, beta, bias;
    const void *dy, *x;
    void *y;
};
cudaError_t cuda_lrn_launch(cudaStream_t stream, const struct cuda_lrn_args *a);

/* One thread per group of struct misc_groups (ops/misc-impl.h), passed as
 * `groups`; dy NULL for the forward. */
struct misc_groups;
cudaError_t cuda_mvn_launch(cudaStream_t stream, int dtype, const struct misc_groups *groups,
                            const void *dy, const void *x, void *y);

/* Det (dy NULL: y[b] = det of matrix b) and DetGrad (y = dy[b] * the
 * cofactors of matrix b) over `batch` m x m matrices, one thread each, with
 * ops/det-impl.h's arithmetic; work holds batch * (2 m^2 + 1) doubles. */
cudaError_t cuda_det_launch(cudaStream_t stream, int dtype, int64_t batch, int64_t m,
                            const void *dy, const void *x, void *y, double *work);

/* AffineGrid (dgrid NULL: out = the grid of theta) and AffineGridGrad (out
 * = dtheta of dgrid) over struct misc_affine's geometry (ops/misc-impl.h),
 * with the CPU's sums in double and in the same order: one thread per grid
 * point, or per entry of dtheta. */
struct misc_affine;
cudaError_t cuda_affine_grid_launch(cudaStream_t stream, int dtype, const struct misc_affine *g,
                                    const void *theta, const void *dgrid, void *out);

/* GridSample over struct gs_geom (ops/grid_sample-impl.h): dy NULL for the
 * forward (one thread per output element), else GridSampleGrad: dx (may be
 * NULL; one thread per channel plane, points in order) and dgrid (may be
 * NULL; one thread per grid point, channels in order). */
struct gs_geom;
cudaError_t cuda_grid_sample_launch(cudaStream_t stream, int dtype, const struct gs_geom *g,
                                    const void *dy, const void *x, const void *grid, void *y,
                                    void *dx, void *dgrid);

/* ---- sequence mixers (ops/causal_conv.c, ops/linear_attention.c), float32;
 * device code in ops/cuda/misc_seq_kernels.cu ---- */

/* CausalConvWithState over x (b, c, len) and w (c, 1, k); bias and past
 * may be NULL. grad 0: y and present (may be NULL). grad 1: the gradient
 * kernel from dy and dpresent (either may be NULL) into dx, dw, dbias,
 * dpast (each may be NULL). */
struct cuda_causal_conv_args {
    int64_t b, c, len, k;
    int silu, grad;
    const float *x, *w, *bias, *past;
    float *y, *present;
    const float *dy, *dpresent;
    float *dx, *dw, *dbias, *dpast;
};
cudaError_t cuda_causal_conv_launch(cudaStream_t stream, const struct cuda_causal_conv_args *a);

/* LinearAttention over the geometry of struct la_geom (ops/nn-impl.h).
 * Forward (work NULL): out and state (B, Hkv, dk, dv; present_state or
 * scratch). Gradient (work: cuda_linear_attention_work_floats() floats):
 * from dout and dstate (either may be NULL) into dq, dk_out, dv_out, dpast,
 * ddecay, dbeta (each may be NULL). */
struct cuda_linear_attention_args {
    int64_t b, t, hq, hkv, dk, dv;
    int gated, delta, decay_per_key, beta_shared;
    float scale;
    const float *q, *k, *v, *past, *decay, *beta;
    float *out, *state;
    const float *dout, *dstate;
    float *dq, *dk_out, *dv_out, *dpast, *ddecay, *dbeta;
};
cudaError_t cuda_linear_attention_launch(cudaStream_t stream, const struct cuda_linear_attention_args *a,
                                         float *work);
size_t cuda_linear_attention_work_floats(const struct cuda_linear_attention_args *a);

/* ---- broadcasting binary integer ops (ops/bitwise.c) ---- */

#define CUDA_MISC_MAX_RANK 8

enum cuda_bitwise_op {
    CUDA_BITWISE_AND, CUDA_BITWISE_OR, CUDA_BITWISE_XOR, CUDA_BITWISE_NOT,
    CUDA_BITWISE_SHL, CUDA_BITWISE_SHR,
};

/* The output (contiguous, numel elements, row-major over dims) and each
 * input's element strides along those axes (0 where broadcast). */
struct cuda_misc_bcast {
    int rank;
    int64_t numel;
    int64_t dims[CUDA_MISC_MAX_RANK];
    int64_t sa[CUDA_MISC_MAX_RANK], sb[CUDA_MISC_MAX_RANK];
};

/* out = a op b (b unused by NOT) for integer dtypes, with ops/bitwise.c's
 * rules for shifts out of range. */
cudaError_t cuda_bitwise_launch(cudaStream_t stream, int op, int dtype,
                                const struct cuda_misc_bcast *g, const void *a, const void *b,
                                void *out);

#ifdef __cplusplus
}
#endif

#endif
