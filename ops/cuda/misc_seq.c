/* ops/cuda/misc_seq.c — host code of the misc family's sequence mixers:
 * CausalConvWithState and CausalConvWithStateGrad (ops/causal_conv.c),
 * LinearAttention and LinearAttentionGrad (ops/linear_attention.c), listed
 * in cuda_kernels_misc (ops/cuda/misc.c). The CPU op_def's infer() has
 * checked shapes and dtypes (float32) before a kernel runs; the parameters
 * are its parse()'s. Device code: ops/cuda/misc_seq_kernels.cu. */
#include <string.h>

#include "ops/cuda/cuda-impl.h"
#include "ops/cuda/elem-impl.h"
#include "ops/cuda/misc-kernels.h"
#include "ops/nn-impl.h"
#include "ops/attn-params.h"

static const float *in_or_null(const struct op_call *c, int i)
{
    return i < c->n_in && c->in[i] ? c->in[i]->data : NULL;
}

/* An output's data, NULL when it is not asked for or empty. */
static float *out_or_null(const struct op_call *c, int i)
{
    return i < c->n_out && c->out[i] && tensor_numel(c->out[i]) ? c->out[i]->data : NULL;
}

/* Inputs: (input, weight, bias, past_state), or for the gradient (dY,
 * dPresentState, input, weight, bias, past_state). */
int cuda_misc_causal_conv(struct op_call *c)
{
    const struct causal_conv_params *p = c->params;
    int grad = strcmp(c->def->name, "CausalConvWithState") != 0, base = grad ? 2 : 0;
    const struct tensor *x = c->in[base], *w = c->in[base + 1];
    struct cuda_causal_conv_args a = {
        .b = x->dims[0], .c = x->dims[1], .len = x->dims[2], .k = w->dims[2],
        .silu = p ? p->silu : 0, .grad = grad,
        .x = x->data, .w = w->data, .bias = in_or_null(c, base + 2), .past = in_or_null(c, base + 3),
    };
    if (grad) {
        a.dy = in_or_null(c, 0);
        a.dpresent = in_or_null(c, 1);
        a.dx = out_or_null(c, 0);
        a.dw = out_or_null(c, 1);
        a.dbias = out_or_null(c, 2);
        a.dpast = out_or_null(c, 3);
    } else {
        a.y = c->out[0]->data;
        a.present = out_or_null(c, 1);
    }
    CUDA_TRY(c, cuda_causal_conv_launch(cuda_ctx_of(c)->stream, &a));
    return 0;
}

/* Inputs: (query, key, value, past_state, decay, beta), or for the gradient
 * (dOutput, dPresentState, then those six). */
int cuda_misc_linear_attention(struct op_call *c)
{
    int grad = strcmp(c->def->name, "LinearAttention") != 0, base = grad ? 2 : 0;
    const struct tensor *in[6];
    for (int i = 0; i < 6; i++)
        in[i] = base + i < c->n_in ? c->in[base + i] : NULL;
    struct la_geom g;
    if (la_geom_check(c, in, &g))
        return -1;
    struct cuda_linear_attention_args a = {
        .b = g.b, .t = g.t, .hq = g.hq, .hkv = g.hkv, .dk = g.dk, .dv = g.dv,
        .gated = g.gated, .delta = g.delta, .decay_per_key = g.decay_per_key,
        .beta_shared = g.beta_shared, .scale = g.scale,
        .q = in[0]->data, .k = in[1]->data, .v = in[2]->data, .past = in_or_null(c, base + 3),
        .decay = in_or_null(c, base + 4), .beta = in_or_null(c, base + 5),
    };
    float *work = NULL;
    if (grad) {
        a.dout = in_or_null(c, 0);
        a.dstate = in_or_null(c, 1);
        a.dq = out_or_null(c, 0);
        a.dk_out = out_or_null(c, 1);
        a.dv_out = out_or_null(c, 2);
        a.dpast = out_or_null(c, 3);
        a.ddecay = out_or_null(c, 4);
        a.dbeta = out_or_null(c, 5);
        if (!(work = cuda_elem_scratch(c, sizeof(float) * cuda_linear_attention_work_floats(&a))))
            return -1;
    } else {
        a.out = c->out[0]->data;
        a.state = out_or_null(c, 1);
        if (!a.state) {
            size_t bytes = sizeof(float) * (size_t)(g.b * g.hkv * g.dk * g.dv + 1);
            if (!(work = cuda_elem_scratch(c, bytes)))
                return -1;
            a.state = work;
        }
    }
    cudaError_t e = cuda_linear_attention_launch(cuda_ctx_of(c)->stream, &a, grad ? work : NULL);
    cuda_elem_scratch_free(c, work);
    CUDA_TRY(c, e);
    return 0;
}
