/* ops/cuda/elem-impl.h — what the host files of the elementwise family
 * share (ops/cuda/elem.c, elem_unary.c, elem_activation.c, elem_reduce.c,
 * elem_reduce_ext.c, elem_loss.c): the launch helpers and the kernels each
 * file defines, which elem.c lists in the family's one table,
 * cuda_kernels_elem. Not for use outside ops/cuda/. */
#ifndef DTRX_OPS_CUDA_ELEM_IMPL_H
#define DTRX_OPS_CUDA_ELEM_IMPL_H

#include "ops/cuda/cuda-impl.h"
#include "ops/cuda/elem-kernels.h"

/* out = op(in[0..n_in)) through the broadcasting kernel (numpy
 * broadcasting of the inputs into out's shape); dtype_a and dtype_b as for
 * cuda_ew_launch. A dtype without a kernel is reported naming `supported`;
 * k may be NULL. */
int cuda_elem_run(struct op_call *c, int op, int dtype_a, int dtype_b, struct tensor *out,
                  const struct tensor *const *in, int n_in, const struct cuda_ew_consts *k,
                  const char *supported);
/* Whether (op, dtype_a, dtype_b) has a kernel. */
int cuda_elem_supported(int op, int dtype_a, int dtype_b);
/* A device-to-device copy on the call's stream. */
int cuda_elem_copy(struct op_call *c, void *dst, const void *src, size_t bytes);
/* Device scratch that counts against the budget; NULL after op_error(). */
void *cuda_elem_scratch(struct op_call *c, size_t bytes);
void cuda_elem_scratch_free(struct op_call *c, void *p);

/* ops/cuda/elem.c: arithmetic, comparisons, Where, Cast and their gradients */
int cuda_elem_add(struct op_call *c);
int cuda_elem_sub(struct op_call *c);
int cuda_elem_mul(struct op_call *c);
int cuda_elem_div(struct op_call *c);
int cuda_elem_max(struct op_call *c);
int cuda_elem_min(struct op_call *c);
int cuda_elem_sum(struct op_call *c);
int cuda_elem_pow(struct op_call *c);
int cuda_elem_equal(struct op_call *c);
int cuda_elem_less(struct op_call *c);
int cuda_elem_greater(struct op_call *c);
int cuda_elem_less_or_equal(struct op_call *c);
int cuda_elem_greater_or_equal(struct op_call *c);
int cuda_elem_where(struct op_call *c);
int cuda_elem_cast(struct op_call *c);
int cuda_elem_div_grad(struct op_call *c);
int cuda_elem_pow_grad(struct op_call *c);
int cuda_elem_max_min_grad(struct op_call *c);

/* ops/cuda/elem_unary.c: one-input ops, their gradients, Dropout */
int cuda_elem_sqrt(struct op_call *c);
int cuda_elem_exp(struct op_call *c);
int cuda_elem_log(struct op_call *c);
int cuda_elem_neg(struct op_call *c);
int cuda_elem_abs(struct op_call *c);
int cuda_elem_reciprocal(struct op_call *c);
int cuda_elem_relu(struct op_call *c);
int cuda_elem_leaky_relu(struct op_call *c);
int cuda_elem_sigmoid(struct op_call *c);
int cuda_elem_tanh(struct op_call *c);
int cuda_elem_gelu(struct op_call *c);
int cuda_elem_erf(struct op_call *c);
int cuda_elem_clip(struct op_call *c);
int cuda_elem_not(struct op_call *c);
int cuda_elem_relu_grad(struct op_call *c);
int cuda_elem_leaky_relu_grad(struct op_call *c);
int cuda_elem_sigmoid_grad(struct op_call *c);
int cuda_elem_tanh_grad(struct op_call *c);
int cuda_elem_sqrt_grad(struct op_call *c);
int cuda_elem_reciprocal_grad(struct op_call *c);
int cuda_elem_abs_grad(struct op_call *c);
int cuda_elem_erf_grad(struct op_call *c);
int cuda_elem_gelu_grad(struct op_call *c);
int cuda_elem_clip_grad(struct op_call *c);
int cuda_elem_dropout(struct op_call *c);
int cuda_elem_dropout_grad(struct op_call *c);

/* ops/cuda/elem_activation.c: Sin ... IsInf, the activations with PRelu,
 * Mod, And/Or/Xor and their gradient kernels */
int cuda_elem_sin(struct op_call *c);
int cuda_elem_cos(struct op_call *c);
int cuda_elem_sign(struct op_call *c);
int cuda_elem_floor(struct op_call *c);
int cuda_elem_ceil(struct op_call *c);
int cuda_elem_round(struct op_call *c);
int cuda_elem_isnan(struct op_call *c);
int cuda_elem_isinf(struct op_call *c);
int cuda_elem_hardsigmoid(struct op_call *c);
int cuda_elem_hardswish(struct op_call *c);
int cuda_elem_softplus(struct op_call *c);
int cuda_elem_elu(struct op_call *c);
int cuda_elem_selu(struct op_call *c);
int cuda_elem_celu(struct op_call *c);
int cuda_elem_mish(struct op_call *c);
int cuda_elem_swish(struct op_call *c);
int cuda_elem_swiglu(struct op_call *c);
int cuda_elem_prelu(struct op_call *c);
int cuda_elem_mod(struct op_call *c);
int cuda_elem_and(struct op_call *c);
int cuda_elem_or(struct op_call *c);
int cuda_elem_xor(struct op_call *c);
int cuda_elem_hardsigmoid_grad(struct op_call *c);
int cuda_elem_hardswish_grad(struct op_call *c);
int cuda_elem_softplus_grad(struct op_call *c);
int cuda_elem_elu_grad(struct op_call *c);
int cuda_elem_selu_grad(struct op_call *c);
int cuda_elem_celu_grad(struct op_call *c);
int cuda_elem_mish_grad(struct op_call *c);
int cuda_elem_swish_grad(struct op_call *c);
int cuda_elem_prelu_grad(struct op_call *c);
int cuda_elem_mod_grad(struct op_call *c);

/* ops/cuda/elem_reduce.c */
int cuda_elem_reduce(struct op_call *c);
int cuda_elem_reduce_select_grad(struct op_call *c);

/* ops/cuda/elem_reduce_ext.c: ReduceProd, L1, L2, SumSquare, LogSum,
 * LogSumExp and ReduceExtGrad */
int cuda_elem_reduce_ext(struct op_call *c);
int cuda_elem_reduce_ext_grad(struct op_call *c);

/* ops/cuda/elem_loss.c: losses and optimizer steps */
int cuda_elem_softmax_cross_entropy_loss(struct op_call *c);
int cuda_elem_negative_log_likelihood_loss(struct op_call *c);
int cuda_elem_softmax_cross_entropy_loss_grad(struct op_call *c);
int cuda_elem_negative_log_likelihood_loss_grad(struct op_call *c);
int cuda_elem_sgd_update(struct op_call *c);
int cuda_elem_momentum_update(struct op_call *c);
int cuda_elem_adam_update(struct op_call *c);

#endif
