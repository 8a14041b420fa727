/* ops/cuda/elem_activation.c — CUDA kernels of ops/unary_math.c (Sin, Cos,
 * Sign, Floor, Ceil, Round, IsNaN, IsInf), ops/activation.c (HardSigmoid
 * ... Swish, SwiGLU, PRelu and their gradient kernels), ops/mod.c (Mod, ModGrad)
 * and ops/logical.c (And, Or, Xor), through the family's broadcasting
 * kernel (functors in elem_activation_kernels.cu). Attributes come from the
 * CPU op_def's parse (struct act_params, isinf_params, mod_params,
 * prelu_grad_params, logical_params), as do the checks of infer(). */
#include <string.h>

#include "ops/cuda/elem-impl.h"
#include "ops/elementwise-impl.h"
#include "ops/elementwise-params.h"

#define REAL_LIST "float, double, float16, bfloat16"
#define INT_LIST "int8, int16, int32, int64, uint8, uint16, uint32, uint64"

static int unary_run(struct op_call *c, int op, const char *supported,
                     const struct cuda_ew_consts *k)
{
    return cuda_elem_run(c, op, c->in[0]->dtype, 0, c->out[0], c->in, 1, k, supported);
}

/* The activations' alpha, beta, gamma. */
static struct cuda_ew_consts act_consts(const struct op_call *c)
{
    const struct act_params *p = c->params;
    struct cuda_ew_consts k;
    memset(&k, 0, sizeof k);
    if (p) {
        k.alpha = p->alpha;
        k.beta = p->beta;
        k.gamma = p->gamma;
    }
    return k;
}

#define CUDA_UNARY(fn, op, supported)                                                 \
    int fn(struct op_call *c)                                                          \
    {                                                                                  \
        struct cuda_ew_consts k = act_consts(c);                                       \
        return unary_run(c, op, supported, &k);                                        \
    }

CUDA_UNARY(cuda_elem_sin, CUDA_EW_SIN, REAL_LIST)
CUDA_UNARY(cuda_elem_cos, CUDA_EW_COS, REAL_LIST)
CUDA_UNARY(cuda_elem_floor, CUDA_EW_FLOOR, REAL_LIST)
CUDA_UNARY(cuda_elem_ceil, CUDA_EW_CEIL, REAL_LIST)
CUDA_UNARY(cuda_elem_round, CUDA_EW_ROUND, REAL_LIST)
CUDA_UNARY(cuda_elem_sign, CUDA_EW_SIGN, REAL_LIST ", " INT_LIST)
CUDA_UNARY(cuda_elem_isnan, CUDA_EW_ISNAN, REAL_LIST)
CUDA_UNARY(cuda_elem_hardsigmoid, CUDA_EW_HARDSIGMOID, REAL_LIST)
CUDA_UNARY(cuda_elem_hardswish, CUDA_EW_HARDSWISH, REAL_LIST)
CUDA_UNARY(cuda_elem_softplus, CUDA_EW_SOFTPLUS, REAL_LIST)
CUDA_UNARY(cuda_elem_elu, CUDA_EW_ELU, REAL_LIST)
CUDA_UNARY(cuda_elem_selu, CUDA_EW_SELU, REAL_LIST)
CUDA_UNARY(cuda_elem_celu, CUDA_EW_CELU, REAL_LIST)
CUDA_UNARY(cuda_elem_mish, CUDA_EW_MISH, REAL_LIST)
CUDA_UNARY(cuda_elem_swish, CUDA_EW_SWISH, REAL_LIST)

int cuda_elem_isinf(struct op_call *c)
{
    const struct isinf_params *p = c->params;
    struct cuda_ew_consts k;
    memset(&k, 0, sizeof k);
    k.detect_negative = p ? p->detect[0] : 1;
    k.detect_positive = p ? p->detect[1] : 1;
    return unary_run(c, CUDA_EW_ISINF, REAL_LIST, &k);
}

/* ---- gradients over (dy, X) ------------------------------------------------------ */

static int grad_run(struct op_call *c, int op)
{
    struct cuda_ew_consts k = act_consts(c);
    const struct tensor *pair[2] = { c->in[0], c->in[1] };
    return cuda_elem_run(c, op, c->in[0]->dtype, 0, c->out[0], pair, 2, &k, REAL_LIST);
}

int cuda_elem_hardsigmoid_grad(struct op_call *c) { return grad_run(c, CUDA_EW_HARDSIGMOID_GRAD); }
int cuda_elem_hardswish_grad(struct op_call *c) { return grad_run(c, CUDA_EW_HARDSWISH_GRAD); }
int cuda_elem_softplus_grad(struct op_call *c) { return grad_run(c, CUDA_EW_SOFTPLUS_GRAD); }
int cuda_elem_elu_grad(struct op_call *c) { return grad_run(c, CUDA_EW_ELU_GRAD); }
int cuda_elem_selu_grad(struct op_call *c) { return grad_run(c, CUDA_EW_SELU_GRAD); }
int cuda_elem_celu_grad(struct op_call *c) { return grad_run(c, CUDA_EW_CELU_GRAD); }
int cuda_elem_mish_grad(struct op_call *c) { return grad_run(c, CUDA_EW_MISH_GRAD); }
int cuda_elem_swish_grad(struct op_call *c) { return grad_run(c, CUDA_EW_SWISH_GRAD); }

/* ---- PRelu, SwiGLU, Mod, logical ops (broadcasting) ----------------------------------- */

/* A and B have one shape (the CPU's infer checked it). */
int cuda_elem_swiglu(struct op_call *c)
{
    struct cuda_ew_consts k = act_consts(c);
    return cuda_elem_run(c, CUDA_EW_SWIGLU, c->in[0]->dtype, 0, c->out[0], c->in, 2, &k,
                         REAL_LIST);
}

int cuda_elem_prelu(struct op_call *c)
{
    return cuda_elem_run(c, CUDA_EW_PRELU, c->in[0]->dtype, 0, c->out[0], c->in, 2, NULL,
                         REAL_LIST ", int32, int64, uint32, uint64");
}

int cuda_elem_prelu_grad(struct op_call *c)
{
    const struct prelu_grad_params *p = c->params;
    int op = p && p->wrt ? CUDA_EW_PRELU_GRAD_SLOPE : CUDA_EW_PRELU_GRAD_X;
    return cuda_elem_run(c, op, c->in[0]->dtype, 0, c->out[0], c->in, 3, NULL, REAL_LIST);
}

int cuda_elem_mod(struct op_call *c)
{
    const struct mod_params *p = c->params;
    return cuda_elem_run(c, p && p->fmod ? CUDA_EW_FMOD : CUDA_EW_MOD, c->in[0]->dtype, 0,
                         c->out[0], c->in, 2, NULL, INT_LIST ", " REAL_LIST);
}

int cuda_elem_mod_grad(struct op_call *c)
{
    const struct mod_params *p = c->params;
    return cuda_elem_run(c, p && p->fmod ? CUDA_EW_FMOD_GRAD : CUDA_EW_MOD_GRAD,
                         c->in[0]->dtype, 0, c->out[0], c->in, 3, NULL, REAL_LIST);
}

/* Opset 1's legacy broadcasting is a view of B with A's rank. */
static int logical_run(struct op_call *c, int op)
{
    struct tensor bv;
    if (ew_logical_b_view(c, &bv))
        return -1;
    const struct tensor *in[2] = { c->in[0], &bv };
    return cuda_elem_run(c, op, c->in[0]->dtype, 0, c->out[0], in, 2, NULL, "bool");
}

int cuda_elem_and(struct op_call *c) { return logical_run(c, CUDA_EW_AND); }
int cuda_elem_or(struct op_call *c) { return logical_run(c, CUDA_EW_OR); }
int cuda_elem_xor(struct op_call *c) { return logical_run(c, CUDA_EW_XOR); }
