/* ops/cuda/elem-kernels.h — the launchers of the elementwise, reduction,
 * loss, dropout and optimizer kernels (ops/cuda/elem_*.cu), called by the
 * host code in ops/cuda/elem*.c. Plain C types only: dtypes are enum
 * onnx_dtype values, shapes are int64 arrays. Every launcher queues its
 * kernels on `stream` and returns cudaSuccess, the launch error, or
 * cudaErrorNotSupported when no kernel exists for the dtypes given (the host
 * asks first with a NULL geometry, see cuda_ew_launch).
 *
 * Everything here is deterministic: no floating-point atomics, and every
 * reduction combines its elements in an order fixed by the shapes alone, so
 * a recomputation gives the same bits. */
#ifndef DTRX_OPS_CUDA_ELEM_KERNELS_H
#define DTRX_OPS_CUDA_ELEM_KERNELS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUDA_EW_MAX_RANK 8
#define CUDA_EW_MAX_IN 3

/* The elementwise operations of the one broadcasting kernel. */
enum cuda_ew_op {
    /* out T = f(A T, B T) */
    CUDA_EW_ADD, CUDA_EW_SUB, CUDA_EW_MUL, CUDA_EW_DIV, CUDA_EW_MAX, CUDA_EW_MIN,
    /* out bool = f(A T, B T) */
    CUDA_EW_EQ, CUDA_EW_LT, CUDA_EW_GT, CUDA_EW_LE, CUDA_EW_GE,
    /* out A = A ^ B, B of dtype_b */
    CUDA_EW_POW,
    /* out T = f(X T) */
    CUDA_EW_SQRT, CUDA_EW_EXP, CUDA_EW_LOG, CUDA_EW_TANH, CUDA_EW_ERF, CUDA_EW_RECIP,
    CUDA_EW_SIGMOID, CUDA_EW_NEG, CUDA_EW_ABS, CUDA_EW_RELU, CUDA_EW_LEAKY, CUDA_EW_GELU,
    CUDA_EW_GELU_TANH, CUDA_EW_CLIP, CUDA_EW_NOT,
    /* out T = f(dy T, z T) */
    CUDA_EW_RELU_GRAD, CUDA_EW_LEAKY_GRAD, CUDA_EW_SIGMOID_GRAD, CUDA_EW_TANH_GRAD,
    CUDA_EW_SQRT_GRAD, CUDA_EW_RECIP_GRAD, CUDA_EW_ABS_GRAD, CUDA_EW_ERF_GRAD,
    CUDA_EW_GELU_GRAD, CUDA_EW_GELU_TANH_GRAD, CUDA_EW_CLIP_GRAD,
    /* out T = f(dy T, A T, B T) */
    CUDA_EW_DIV_GRAD, CUDA_EW_POW_GRAD_A, CUDA_EW_POW_GRAD_B,
    /* out T = cond ? X : Y; dtype_a is X's */
    CUDA_EW_WHERE,
    /* out dtype_b = X dtype_a, converted as ops/cast.c does */
    CUDA_EW_CAST,
    /* ops/cuda/elem_activation_kernels.cu; "real" is float, double, float16
     * and bfloat16 (the 16-bit types computed in float).
     * out T = f(X T), T real */
    CUDA_EW_SIN, CUDA_EW_COS, CUDA_EW_FLOOR, CUDA_EW_CEIL, CUDA_EW_ROUND, CUDA_EW_HARDSIGMOID,
    CUDA_EW_HARDSWISH, CUDA_EW_SOFTPLUS, CUDA_EW_ELU, CUDA_EW_SELU, CUDA_EW_CELU, CUDA_EW_MISH,
    CUDA_EW_SWISH,
    /* out T = sign(X T), T real or integer */
    CUDA_EW_SIGN,
    /* out bool = f(X T), T real */
    CUDA_EW_ISNAN, CUDA_EW_ISINF,
    /* out T = f(dy T, X T), T real */
    CUDA_EW_HARDSIGMOID_GRAD, CUDA_EW_HARDSWISH_GRAD, CUDA_EW_SOFTPLUS_GRAD, CUDA_EW_ELU_GRAD,
    CUDA_EW_SELU_GRAD, CUDA_EW_CELU_GRAD, CUDA_EW_MISH_GRAD, CUDA_EW_SWISH_GRAD,
    /* out T = f(A T, B T), broadcasting: PRelu (real, int32, int64, uint32,
     * uint64), Mod floored and truncated (real, every integer), SwiGLU
     * (real; A and B of one shape) */
    CUDA_EW_PRELU, CUDA_EW_MOD, CUDA_EW_FMOD, CUDA_EW_SWIGLU,
    /* out bool = f(A bool, B bool) */
    CUDA_EW_AND, CUDA_EW_OR, CUDA_EW_XOR,
    /* out T = f(dy T, A T, B T), T real: PReluGrad (A = X, B = slope),
     * ModGrad (floored, truncated) */
    CUDA_EW_PRELU_GRAD_X, CUDA_EW_PRELU_GRAD_SLOPE, CUDA_EW_MOD_GRAD, CUDA_EW_FMOD_GRAD,
    CUDA_EW_OP_COUNT
};

/* The output (contiguous, numel elements) seen as a row-major array of
 * `dims` after ew_plan_init collapsed it; strides[k] are input k's element
 * strides along those axes (0 where it is broadcast). */
struct cuda_ew_geom {
    int rank;                      /* >= 1 */
    int n_in;
    int64_t numel;
    int64_t dims[CUDA_EW_MAX_RANK];
    int64_t strides[CUDA_EW_MAX_IN][CUDA_EW_MAX_RANK];
};

/* Per-call constants: LeakyRelu's alpha; Clip's bounds as elements of the
 * input's dtype, each either a device scalar (lo, hi) or, when that is NULL,
 * the bits in lo_bits / hi_bits; the activations' alpha, beta, gamma (as
 * struct act_params); IsInf's detect_negative and detect_positive. */
struct cuda_ew_consts {
    float alpha;
    const void *lo, *hi;
    uint64_t lo_bits, hi_bits;
    float beta, gamma;
    int detect_negative, detect_positive;
};

/* out = op(in[0], ..., in[n_in - 1]) over the geometry. With g == NULL it
 * launches nothing and says whether (op, dtype_a, dtype_b) has a kernel;
 * dtype_b matters only for POW (the exponent) and CAST (the target). */
cudaError_t cuda_ew_launch(cudaStream_t stream, int op, int dtype_a, int dtype_b,
                           const struct cuda_ew_geom *g, void *out, const void *const *in,
                           const struct cuda_ew_consts *k);

/* ---- MaxMinGrad ---------------------------------------------------------- */

#define CUDA_MAXMIN_MAX_IN 32

/* dy and Y have `dims`; x[k] is seen through x_strides[k]; out[k] (dy's
 * shape) receives dy where x[k] is the first input equal to Y, else 0. */
struct cuda_maxmin_args {
    int n, rank;
    int64_t numel;
    int64_t dims[CUDA_EW_MAX_RANK];
    int64_t x_strides[CUDA_MAXMIN_MAX_IN][CUDA_EW_MAX_RANK];
    const void *x[CUDA_MAXMIN_MAX_IN];
    void *out[CUDA_MAXMIN_MAX_IN];
};

cudaError_t cuda_maxmin_grad_launch(cudaStream_t stream, int dtype, const void *dy, const void *y,
                                    const struct cuda_maxmin_args *a);

/* ---- reductions ----------------------------------------------------------- */

enum cuda_reduce_kind { CUDA_REDUCE_SUM, CUDA_REDUCE_MAX, CUDA_REDUCE_MIN };

/* Input element of output j and reduction index r: the kept axes (outer to
 * inner, in output order) and the reduced axes (outer to inner, in the
 * input's row-major order) with their input strides. */
struct cuda_reduce_geom {
    int n_kept, n_red;
    int64_t n_out, count;
    int64_t kept_dims[CUDA_EW_MAX_RANK], kept_strides[CUDA_EW_MAX_RANK];
    int64_t red_dims[CUDA_EW_MAX_RANK], red_strides[CUDA_EW_MAX_RANK];
};

/* Bytes of device scratch cuda_reduce_launch needs for this geometry and
 * dtype (0: none). */
size_t cuda_reduce_scratch_bytes(int dtype, const struct cuda_reduce_geom *g);
/* y[j] = the kind's fold over group j of x (divided by count when mean), in
 * a fixed order; scratch holds cuda_reduce_scratch_bytes(). g == NULL: only
 * says whether (kind, dtype) has a kernel. */
cudaError_t cuda_reduce_launch(cudaStream_t stream, int kind, int mean, int dtype,
                               const struct cuda_reduce_geom *g, const void *x, void *y,
                               void *scratch);

/* ReduceSelectGrad: dx[i] = dy[o(i)] for the first i (row-major) of each
 * group with x[i] equal to y[o(i)], else 0. o(i) = sum over axes of idx *
 * y_strides (x's rank and dims); first: n_out uint64 of scratch. */
cudaError_t cuda_select_grad_launch(cudaStream_t stream, int dtype, int rank,
                                    const int64_t *dims, const int64_t *y_strides,
                                    int64_t n_out, const void *x, const void *y, const void *dy,
                                    void *dx, unsigned long long *first);

/* The reductions of ops/reduce_ext.c (kind: its enum rx_kind, 0 Prod, 1 L1,
 * 2 L2, 3 SumSquare, 4 LogSum, 5 LogSumExp) over float, double, int32,
 * int64, uint32, uint64 (ops/cuda/elem_reduce_ext_kernels.cu): one block
 * per output folds its group in double (integer Prod/L1/SumSquare in
 * wrapping 64-bit integers) through a fixed tree. g->n_out outputs. */
cudaError_t cuda_reduce_ext_launch(cudaStream_t stream, int kind, int dtype, const struct cuda_reduce_geom *g,
                                   const void *x, void *y);
/* ReduceExtGrad: dx over every group of g (float or double) from dy and y
 * (one per group, y may be NULL where the kind does not read it). */
cudaError_t cuda_reduce_ext_grad_launch(cudaStream_t stream, int kind, int dtype,
                                        const struct cuda_reduce_geom *g, const void *dy, const void *x,
                                        const void *y, void *dx);

/* ---- losses --------------------------------------------------------------- */

/* Scores [n, c, d] of dtype (float or double); targets [n, d] of
 * target_dtype (int32 or int64); weight [c] or NULL. */
struct cuda_loss_args {
    int dtype, target_dtype;
    int64_t n, c, d;
    int has_ignore;
    int64_t ignore_index;
    const void *x, *target, *weight;
};

/* *bad = the smallest flat target index whose label is outside [0, c) and
 * not ignore_index, or ULLONG_MAX (*bad must hold ULLONG_MAX on entry). */
cudaError_t cuda_loss_check_launch(cudaStream_t stream, const struct cuda_loss_args *a,
                                   unsigned long long *bad);
/* Per position (n*d of them): lse = log-sum-exp of x over the classes
 * (double), and sdlp = the sum of dlp over the classes when dlp != NULL. */
cudaError_t cuda_loss_stats_launch(cudaStream_t stream, const struct cuda_loss_args *a,
                                   const void *dlp, double *lse, double *sdlp);
/* log_prob = x - lse, as dtype. */
cudaError_t cuda_loss_log_prob_launch(cudaStream_t stream, const struct cuda_loss_args *a,
                                      const double *lse, void *log_prob);
/* The NLL of each position: -logp[cls] * w, where logp is x itself
 * (lse == NULL) or x - lse rounded to dtype. reduction 0 writes each into
 * out (dtype, n*d); 1 (sum) and 2 (mean: divided by the total weight)
 * write one scalar; weight_sum (may be NULL) receives the total weight. */
cudaError_t cuda_loss_nll_launch(cudaStream_t stream, const struct cuda_loss_args *a,
                                 const double *lse, int reduction, void *out, double *weight_sum);
/* The gradient with respect to x of NLL (lse == NULL) or SCE (lse given):
 * u = dy[i] (reduction none), dy (sum) or dy / *weight_sum (mean); dy and
 * dlp may be NULL; sdlp as from the stats launch. */
cudaError_t cuda_loss_grad_launch(cudaStream_t stream, const struct cuda_loss_args *a,
                                  int reduction, const void *dy, const void *dlp,
                                  const double *lse, const double *sdlp,
                                  const double *weight_sum, void *dx);

/* ---- dropout and optimizers ------------------------------------------------ */

/* y = keep ? x * scale : 0 with keep = ratio < 1 && uniform(key, i) >= ratio
 * (ops/dropout.c's counter-based generator); mask (may be NULL) of
 * mask_dtype gets keep. x and y float or double. */
cudaError_t cuda_dropout_launch(cudaStream_t stream, int dtype, int64_t n, uint64_t key,
                                double ratio, const void *x, void *y, int mask_dtype, void *mask);
/* Writes 1 into n elements of a mask of mask_dtype (inference mode). */
cudaError_t cuda_dropout_mask_ones_launch(cudaStream_t stream, int mask_dtype, int64_t n,
                                          void *mask);

enum cuda_optim_kind { CUDA_OPTIM_SGD, CUDA_OPTIM_MOMENTUM, CUDA_OPTIM_ADAM };

/* Float32 in place, the formulas of ops/optimizer.c; step_size and
 * denom_scale are Adam's bias corrections computed on the host. */
struct cuda_optim_args {
    int kind;
    int64_t n;
    float lr, momentum, beta1, beta2, epsilon, weight_decay;
    float step_size, denom_scale;
    int nesterov, decoupled, hf_bias_correction;
    float *w, *b, *m, *v;
    const float *g;
};

cudaError_t cuda_optim_launch(cudaStream_t stream, const struct cuda_optim_args *a);

#ifdef __cplusplus
}
#endif

#endif
