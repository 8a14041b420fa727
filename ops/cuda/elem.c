/* ops/cuda/elem.c — the elementwise family's CUDA kernels: numpy-broadcasting
 * arithmetic (Add, Sub, Mul, Div, Pow, variadic Max, Min, Sum),
 * comparisons, Where, Cast and CastLike, DivGrad, PowGrad and MaxMinGrad;
 * the launch helpers the family's other host files share; and the family's
 * table, cuda_kernels_elem (which also lists the kernels of elem_unary.c,
 * elem_activation.c, elem_reduce.c and elem_loss.c).
 *
 * Shapes, dtypes and attributes have been checked by the op's infer() (the
 * CPU op_def's, in ops/) before a kernel runs; each kernel here plans the
 * broadcast on the host with ew_plan_init, exactly as the CPU kernels do,
 * and launches one grid-stride kernel per pass (ops/cuda/elem_kernels.cu).
 * Semantics are the CPU's, expression for expression. */
#include <string.h>

#include "ops/cuda/elem-impl.h"
#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

#define NUMERIC_LIST "float, double, int8, int16, int32, int64, uint8, uint16, uint32, uint64"

/* ---- shared helpers ------------------------------------------------------ */

int cuda_elem_supported(int op, int dtype_a, int dtype_b)
{
    return cuda_ew_launch(NULL, op, dtype_a, dtype_b, NULL, NULL, NULL, NULL) == cudaSuccess;
}

int cuda_elem_run(struct op_call *c, int op, int dtype_a, int dtype_b, struct tensor *out,
                  const struct tensor *const *in, int n_in, const struct cuda_ew_consts *k,
                  const char *supported)
{
    if (!cuda_elem_supported(op, dtype_a, dtype_b))
        return ew_dtype_error(c, "input 0", dtype_a, supported);
    if (n_in < 1 || n_in > CUDA_EW_MAX_IN)
        return op_error(c, "internal: %d inputs for the broadcasting kernel", n_in);
    if (tensor_numel(out) == 0)
        return 0;
    struct ew_plan plan;
    ew_plan_init(&plan, out, in, n_in);
    struct cuda_ew_geom g;
    memset(&g, 0, sizeof g);
    g.rank = plan.rank;
    g.n_in = n_in;
    g.numel = plan.numel;
    for (int d = 0; d < plan.rank; d++) {
        g.dims[d] = plan.dims[d];
        for (int j = 0; j < n_in; j++)
            g.strides[j][d] = plan.strides[j + 1][d];
    }
    const void *ptr[CUDA_EW_MAX_IN] = { 0 };
    for (int j = 0; j < n_in; j++)
        ptr[j] = in[j]->data;
    CUDA_TRY(c, cuda_ew_launch(cuda_ctx_of(c)->stream, op, dtype_a, dtype_b, &g, out->data, ptr,
                               k));
    return 0;
}

int cuda_elem_copy(struct op_call *c, void *dst, const void *src, size_t bytes)
{
    if (bytes && dst != src)
        CUDA_TRY(c, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                                    cuda_ctx_of(c)->stream));
    return 0;
}

void *cuda_elem_scratch(struct op_call *c, size_t bytes)
{
    struct op_env *env = c->env;
    void *p = env && env->scratch_alloc ? env->scratch_alloc(env->ctx, bytes ? bytes : 1) : NULL;
    if (!p)
        op_error(c, "no device scratch memory for %zu bytes", bytes);
    return p;
}

void cuda_elem_scratch_free(struct op_call *c, void *p)
{
    if (p)
        c->env->scratch_free(c->env->ctx, p);
}

/* ---- arithmetic ------------------------------------------------------------ */

/* Binary ops, and variadic ones folded left to right into the output, which
 * is safe in place: each element is read before it is written, by the same
 * thread, and the passes are ordered on the stream. */
static int arith_run(struct op_call *c, int op)
{
    struct tensor *out = c->out[0];
    if (!cuda_elem_supported(op, out->dtype, 0))
        return ew_dtype_error(c, "output", out->dtype, NUMERIC_LIST);
    if (tensor_numel(out) == 0)
        return 0;
    if (c->n_in == 1)
        return cuda_elem_copy(c, out->data, c->in[0]->data, tensor_size_bytes(out));
    const struct tensor *pair[2] = { c->in[0], c->in[1] };
    if (cuda_elem_run(c, op, out->dtype, 0, out, pair, 2, NULL, NUMERIC_LIST))
        return -1;
    for (int k = 2; k < c->n_in; k++) {
        pair[0] = out;
        pair[1] = c->in[k];
        if (cuda_elem_run(c, op, out->dtype, 0, out, pair, 2, NULL, NUMERIC_LIST))
            return -1;
    }
    return 0;
}

int cuda_elem_add(struct op_call *c) { return arith_run(c, CUDA_EW_ADD); }
int cuda_elem_sub(struct op_call *c) { return arith_run(c, CUDA_EW_SUB); }
int cuda_elem_mul(struct op_call *c) { return arith_run(c, CUDA_EW_MUL); }
int cuda_elem_div(struct op_call *c) { return arith_run(c, CUDA_EW_DIV); }
int cuda_elem_max(struct op_call *c) { return arith_run(c, CUDA_EW_MAX); }
int cuda_elem_min(struct op_call *c) { return arith_run(c, CUDA_EW_MIN); }
int cuda_elem_sum(struct op_call *c) { return arith_run(c, CUDA_EW_ADD); }

int cuda_elem_pow(struct op_call *c)
{
    int bt = c->in[0]->dtype, et = c->in[1]->dtype;
    if (!cuda_elem_supported(CUDA_EW_POW, bt, et))
        return op_error(c, "unsupported dtypes %s ^ %s", onnx_dtype_name(bt), onnx_dtype_name(et));
    return cuda_elem_run(c, CUDA_EW_POW, bt, et, c->out[0], c->in, 2, NULL, NUMERIC_LIST);
}

/* ---- comparisons and Where --------------------------------------------------- */

static int compare_run(struct op_call *c, int op, const char *supported)
{
    return cuda_elem_run(c, op, c->in[0]->dtype, 0, c->out[0], c->in, 2, NULL, supported);
}

int cuda_elem_equal(struct op_call *c)
{
    if (c->in[0]->dtype == ONNX_DTYPE_STRING)   /* strings: bytes on the host (ops/string-impl.h) */
        return op_host_bridge(c);
    return compare_run(c, CUDA_EW_EQ, NUMERIC_LIST ", bool");
}
int cuda_elem_less(struct op_call *c) { return compare_run(c, CUDA_EW_LT, NUMERIC_LIST); }
int cuda_elem_greater(struct op_call *c) { return compare_run(c, CUDA_EW_GT, NUMERIC_LIST); }
int cuda_elem_less_or_equal(struct op_call *c) { return compare_run(c, CUDA_EW_LE, NUMERIC_LIST); }
int cuda_elem_greater_or_equal(struct op_call *c)
{
    return compare_run(c, CUDA_EW_GE, NUMERIC_LIST);
}

int cuda_elem_where(struct op_call *c)
{
    return cuda_elem_run(c, CUDA_EW_WHERE, c->in[1]->dtype, 0, c->out[0], c->in, 3, NULL,
                         "any fixed-size dtype");
}

/* ---- Cast and CastLike (the target is the output's dtype) ---------------------- */

int cuda_elem_cast(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    if (!cuda_elem_supported(CUDA_EW_CAST, x->dtype, y->dtype))
        return op_error(c, "unsupported cast %s -> %s", onnx_dtype_name(x->dtype),
                        onnx_dtype_name(y->dtype));
    if (tensor_numel(y) == 0)
        return 0;
    if (x->dtype == y->dtype)
        return cuda_elem_copy(c, y->data, x->data, tensor_size_bytes(y));
    return cuda_elem_run(c, CUDA_EW_CAST, x->dtype, y->dtype, y, c->in, 1, NULL, "");
}

/* ---- gradients ------------------------------------------------------------------ */

int cuda_elem_div_grad(struct op_call *c)
{
    return cuda_elem_run(c, CUDA_EW_DIV_GRAD, c->in[0]->dtype, 0, c->out[0], c->in, 3, NULL,
                         "float, double");
}

int cuda_elem_pow_grad(struct op_call *c)
{
    const struct pow_grad_params *p = c->params;
    int op = p && p->wrt ? CUDA_EW_POW_GRAD_B : CUDA_EW_POW_GRAD_A;
    return cuda_elem_run(c, op, c->in[0]->dtype, 0, c->out[0], c->in, 3, NULL, "float, double");
}

/* MaxMinGrad(dy, Y, X0..Xn-1) -> dX0..dXn-1 in dy's shape. */
int cuda_elem_max_min_grad(struct op_call *c)
{
    const struct tensor *dy = c->in[0];
    int n = c->n_in - 2;
    if (n < 1 || n > CUDA_MAXMIN_MAX_IN || c->n_out != n)
        return op_error(c, "expected dy, Y and 1..%d inputs with one output each, got %d inputs "
                        "and %d outputs", CUDA_MAXMIN_MAX_IN, c->n_in, c->n_out);
    struct cuda_maxmin_args a;
    memset(&a, 0, sizeof a);
    a.n = n;
    a.rank = dy->rank;
    a.numel = tensor_numel(dy);
    for (int d = 0; d < dy->rank; d++)
        a.dims[d] = dy->dims[d];
    for (int k = 0; k < n; k++) {
        if (!c->out[k])
            return op_error(c, "output %d is omitted; every input's gradient is written", k);
        broadcast_strides(c->in[2 + k], dy, a.x_strides[k]);
        a.x[k] = c->in[2 + k]->data;
        a.out[k] = c->out[k]->data;
    }
    cudaError_t e = cuda_maxmin_grad_launch(cuda_ctx_of(c)->stream, dy->dtype, dy->data,
                                            c->in[1]->data, &a);
    if (e == cudaErrorNotSupported)
        return ew_dtype_error(c, "dy", dy->dtype, "float, double");
    CUDA_TRY(c, e);
    return 0;
}

/* ---- the family's table ------------------------------------------------------------ */

CUDA_KERNEL_TABLE(elem) = {
    { "", "Add", cuda_elem_add },
    { "", "Sub", cuda_elem_sub },
    { "", "Mul", cuda_elem_mul },
    { "", "Div", cuda_elem_div },
    { "", "Pow", cuda_elem_pow },
    { "", "Max", cuda_elem_max },
    { "", "Min", cuda_elem_min },
    { "", "Sum", cuda_elem_sum },
    { "", "Equal", cuda_elem_equal },
    { "", "Less", cuda_elem_less },
    { "", "Greater", cuda_elem_greater },
    { "", "LessOrEqual", cuda_elem_less_or_equal },
    { "", "GreaterOrEqual", cuda_elem_greater_or_equal },
    { "", "Where", cuda_elem_where },
    { "", "Cast", cuda_elem_cast },
    { "", "CastLike", cuda_elem_cast },
    { "", "Sqrt", cuda_elem_sqrt },
    { "", "Exp", cuda_elem_exp },
    { "", "Log", cuda_elem_log },
    { "", "Neg", cuda_elem_neg },
    { "", "Abs", cuda_elem_abs },
    { "", "Reciprocal", cuda_elem_reciprocal },
    { "", "Relu", cuda_elem_relu },
    { "", "LeakyRelu", cuda_elem_leaky_relu },
    { "", "Sigmoid", cuda_elem_sigmoid },
    { "", "Tanh", cuda_elem_tanh },
    { "", "Gelu", cuda_elem_gelu },
    { "", "Erf", cuda_elem_erf },
    { "", "Clip", cuda_elem_clip },
    { "", "Not", cuda_elem_not },
    { "", "Sin", cuda_elem_sin },
    { "", "Cos", cuda_elem_cos },
    { "", "Sign", cuda_elem_sign },
    { "", "Floor", cuda_elem_floor },
    { "", "Ceil", cuda_elem_ceil },
    { "", "Round", cuda_elem_round },
    { "", "IsNaN", cuda_elem_isnan },
    { "", "IsInf", cuda_elem_isinf },
    { "", "HardSigmoid", cuda_elem_hardsigmoid },
    { "", "HardSwish", cuda_elem_hardswish },
    { "", "Softplus", cuda_elem_softplus },
    { "", "Elu", cuda_elem_elu },
    { "", "Selu", cuda_elem_selu },
    { "", "Celu", cuda_elem_celu },
    { "", "Mish", cuda_elem_mish },
    { "", "Swish", cuda_elem_swish },
    { "", "SwiGLU", cuda_elem_swiglu },
    { "", "PRelu", cuda_elem_prelu },
    { "", "Mod", cuda_elem_mod },
    { "", "And", cuda_elem_and },
    { "", "Or", cuda_elem_or },
    { "", "Xor", cuda_elem_xor },
    { "", "ReduceSum", cuda_elem_reduce },
    { "", "ReduceMean", cuda_elem_reduce },
    { "", "ReduceMax", cuda_elem_reduce },
    { "", "ReduceMin", cuda_elem_reduce },
    { "", "ReduceProd", cuda_elem_reduce_ext },
    { "", "ReduceL1", cuda_elem_reduce_ext },
    { "", "ReduceL2", cuda_elem_reduce_ext },
    { "", "ReduceSumSquare", cuda_elem_reduce_ext },
    { "", "ReduceLogSum", cuda_elem_reduce_ext },
    { "", "ReduceLogSumExp", cuda_elem_reduce_ext },
    { "", "Dropout", cuda_elem_dropout },
    { "", "SoftmaxCrossEntropyLoss", cuda_elem_softmax_cross_entropy_loss },
    { "", "NegativeLogLikelihoodLoss", cuda_elem_negative_log_likelihood_loss },
    { "dtrexec", "ReluGrad", cuda_elem_relu_grad },
    { "dtrexec", "LeakyReluGrad", cuda_elem_leaky_relu_grad },
    { "dtrexec", "SigmoidGrad", cuda_elem_sigmoid_grad },
    { "dtrexec", "TanhGrad", cuda_elem_tanh_grad },
    { "dtrexec", "SqrtGrad", cuda_elem_sqrt_grad },
    { "dtrexec", "ReciprocalGrad", cuda_elem_reciprocal_grad },
    { "dtrexec", "AbsGrad", cuda_elem_abs_grad },
    { "dtrexec", "ErfGrad", cuda_elem_erf_grad },
    { "dtrexec", "GeluGrad", cuda_elem_gelu_grad },
    { "dtrexec", "ClipGrad", cuda_elem_clip_grad },
    { "dtrexec", "HardSigmoidGrad", cuda_elem_hardsigmoid_grad },
    { "dtrexec", "HardSwishGrad", cuda_elem_hardswish_grad },
    { "dtrexec", "SoftplusGrad", cuda_elem_softplus_grad },
    { "dtrexec", "EluGrad", cuda_elem_elu_grad },
    { "dtrexec", "SeluGrad", cuda_elem_selu_grad },
    { "dtrexec", "CeluGrad", cuda_elem_celu_grad },
    { "dtrexec", "MishGrad", cuda_elem_mish_grad },
    { "dtrexec", "SwishGrad", cuda_elem_swish_grad },
    { "dtrexec", "PReluGrad", cuda_elem_prelu_grad },
    { "dtrexec", "ModGrad", cuda_elem_mod_grad },
    { "dtrexec", "DivGrad", cuda_elem_div_grad },
    { "dtrexec", "PowGrad", cuda_elem_pow_grad },
    { "dtrexec", "MaxMinGrad", cuda_elem_max_min_grad },
    { "dtrexec", "ReduceSelectGrad", cuda_elem_reduce_select_grad },
    { "dtrexec", "ReduceExtGrad", cuda_elem_reduce_ext_grad },
    { "dtrexec", "DropoutGrad", cuda_elem_dropout_grad },
    { "dtrexec", "SoftmaxCrossEntropyLossGrad", cuda_elem_softmax_cross_entropy_loss_grad },
    { "dtrexec", "NegativeLogLikelihoodLossGrad", cuda_elem_negative_log_likelihood_loss_grad },
    { "dtrexec", "SGDUpdate", cuda_elem_sgd_update },
    { "dtrexec", "MomentumUpdate", cuda_elem_momentum_update },
    { "dtrexec", "AdamUpdate", cuda_elem_adam_update },
    { 0 },
};
