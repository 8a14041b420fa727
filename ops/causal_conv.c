/* ops/causal_conv.c — CausalConvWithState (opset 27): the stateful causal
 * depthwise 1-D convolution of Gated DeltaNet and Mamba. Per batch b and
 * channel c, with K = weight.shape[2] and the padded sequence
 * p = concat(past_state or zeros [K-1], input [L]):
 *   z[t] = sum_{j<K} w[c, j] p[t + j] + bias[c],  t < L;
 *   output = z, or z * sigmoid(z) for activation "silu"/"swish";
 *   present_state = the last K - 1 values of p.
 * float32 only: float16 and bfloat16 models are widened to float32 at load
 * (onnx/half.c). One task per (b, c), each summing its K products in order:
 * deterministic.
 *
 * Gradient: CausalConvWithStateGrad (domain dtrexec) at the end of the file,
 * over (dY, dPresentState, input, weight, bias, past_state) with z
 * recomputed from the inputs; past_state gets a gradient too, so decode
 * steps chained through their states train end to end. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"
#include "ops/attn-params.h"

enum { CC_X, CC_W, CC_BIAS, CC_PAST, CC_N_IN };

static int cc_parse(const struct onnx_node *node, int version, void **params, char *err,
                    size_t err_size)
{
    (void)version;
    const char *act = onnx_node_attr_string(node, "activation", "none");
    int silu;
    if (!strcmp(act, "none"))
        silu = 0;
    else if (!strcmp(act, "silu") || !strcmp(act, "swish"))
        silu = 1;
    else {
        snprintf(err, err_size, "activation '%s' is not one of 'none', 'silu', "
                 "'swish'", act);
        return -1;
    }
    struct causal_conv_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    p->silu = silu;
    *params = p;
    return 0;
}

/* Checks the four inputs (in[CC_X..CC_PAST], the optional ones NULL) and
 * gives B, C, L, K. Shared by the forward op and its gradient kernel. */
static int cc_check(const struct op_call *c, const struct tensor *const *in, int64_t *b,
                    int64_t *ch, int64_t *len, int64_t *k)
{
    static const char *const names[CC_N_IN] = { "input", "weight", "bias", "past_state" };
    char d1[128], d2[128];
    for (int i = 0; i < CC_N_IN; i++)
        if (in[i] && in[i]->dtype != ONNX_DTYPE_FLOAT)
            return op_error(c, "%s is %s; only float32 is supported (float16 and bfloat16 "
                            "models run in float32)", names[i], onnx_dtype_name(in[i]->dtype));
    const struct tensor *x = in[CC_X], *w = in[CC_W];
    if (x->rank != 3)
        return op_error(c, "input %s must be rank 3 (batch_size, channels, length)",
                        tensor_describe(x, d1, sizeof d1));
    if (w->rank != 3 || w->dims[0] != x->dims[1] || w->dims[1] != 1 || w->dims[2] < 1)
        return op_error(c, "weight %s must be (channels, 1, k) with k >= 1 for input %s",
                        tensor_describe(w, d1, sizeof d1), tensor_describe(x, d2, sizeof d2));
    *b = x->dims[0];
    *ch = x->dims[1];
    *len = x->dims[2];
    *k = w->dims[2];
    const struct tensor *bias = in[CC_BIAS], *past = in[CC_PAST];
    if (bias && (bias->rank != 1 || bias->dims[0] != *ch))
        return op_error(c, "bias %s must be (channels) = (%lld)",
                        tensor_describe(bias, d1, sizeof d1), (long long)*ch);
    if (past && (past->rank != 3 || past->dims[0] != *b || past->dims[1] != *ch
                 || past->dims[2] != *k - 1))
        return op_error(c, "past_state %s must be (batch_size, channels, k - 1) = "
                        "(%lld, %lld, %lld)", tensor_describe(past, d1, sizeof d1),
                        (long long)*b, (long long)*ch, (long long)(*k - 1));
    return 0;
}

static const struct tensor *cc_in(const struct op_call *c, int i, int base)
{
    return base + i < c->n_in ? c->in[base + i] : NULL;
}

static void cc_set(struct tensor *t, int64_t d0, int64_t d1, int64_t d2)
{
    if (!t)
        return;
    t->dtype = ONNX_DTYPE_FLOAT;
    t->rank = 3;
    t->dims[0] = d0;
    t->dims[1] = d1;
    t->dims[2] = d2;
}

static int cc_infer(struct op_call *c)
{
    const struct tensor *in[CC_N_IN];
    for (int i = 0; i < CC_N_IN; i++)
        in[i] = cc_in(c, i, 0);
    int64_t b, ch, len, k;
    if (cc_check(c, in, &b, &ch, &len, &k))
        return -1;
    cc_set(c->out[0], b, ch, len);
    if (c->n_out > 1)
        cc_set(c->out[1], b, ch, k - 1);
    return 0;
}

static struct op_cost cc_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct tensor *w = c->in[CC_W];
    cost.flops = (2.0 * (double)(w->rank == 3 ? w->dims[2] : 1) + 5.0)
                 * (double)tensor_numel(c->in[CC_X]);
    return cost;
}

/* p[i] of row (b, c): the past state (or 0) for i < K - 1, then the input. */
static inline float cc_pad(const float *xr, const float *pr, int64_t k, int64_t i)
{
    return i < k - 1 ? (pr ? pr[i] : 0.0f) : xr[i - (k - 1)];
}

static inline float cc_z(const float *xr, const float *pr, const float *wr, float bias,
                         int64_t k, int64_t t)
{
    float acc = 0.0f;
    for (int64_t j = 0; j < k; j++)
        acc += wr[j] * cc_pad(xr, pr, k, t + j);
    return acc + bias;
}

static int cc_cpu(struct op_call *c)
{
    const struct causal_conv_params *p = c->params;
    const struct tensor *in[CC_N_IN];
    for (int i = 0; i < CC_N_IN; i++)
        in[i] = cc_in(c, i, 0);
    int64_t nb, nc, len, k;
    if (cc_check(c, in, &nb, &nc, &len, &k))
        return -1;
    const float *x = in[CC_X]->data, *w = in[CC_W]->data;
    const float *bias = in[CC_BIAS] ? in[CC_BIAS]->data : NULL;
    const float *past = in[CC_PAST] ? in[CC_PAST]->data : NULL;
    float *y = c->out[0]->data;
    float *present = c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL;
    const int silu = p ? p->silu : 0;
    const int64_t rows = nb * nc, s = k - 1;
#pragma omp parallel for schedule(static) if (rows * len * k > 32768)
    for (int64_t r = 0; r < rows; r++) {
        int64_t ci = r % nc;
        const float *xr = x + r * len, *pr = past ? past + r * s : NULL, *wr = w + ci * k;
        float bv = bias ? bias[ci] : 0.0f;
        float *yr = y + r * len;
        for (int64_t t = 0; t < len; t++) {
            float z = cc_z(xr, pr, wr, bv, k, t);
            yr[t] = silu ? z / (1.0f + expf(-z)) : z;
        }
        if (present)
            for (int64_t i = 0; i < s; i++)
                present[r * s + i] = cc_pad(xr, pr, k, len + i);
    }
    return 0;
}

/* ---- gradient -------------------------------------------------------------------
 * CausalConvWithStateGrad(dY, dPresentState, input, weight, bias,
 * past_state; activation) -> dInput, dWeight, dBias, dPastState; dY or
 * dPresentState may be omitted (no gradient reaches that output), bias and
 * past_state are omitted where the forward call had none (dBias is then
 * still written, of shape (channels), and dropped). With dz = dy * act'(z):
 *   dp[i] = sum_j w[c, j] dz[i - j] + dPresent[i - L] (i >= L),
 *   dInput = dp[K-1 ..], dPastState = dp[.. K-1],
 *   dWeight[c, j] = sum_{b, t} dz p[t + j],  dBias[c] = sum_{b, t} dz.
 * One task per channel, over the batch in order, so dWeight and dBias are
 * summed in a fixed order: deterministic. */
enum { CG_DY, CG_DPRESENT, CG_X, CG_N_IN = CG_X + CC_N_IN };

static int cc_grad(struct grad_ctx *g)
{
    const struct op_call *f = g->fwd;
    int dy_present = f->n_out > 1 ? g->dy[1] : -1;
    if (g->dy[0] < 0 && dy_present < 0)
        return 0;
    const struct causal_conv_params *p = f->params;
    struct onnx_attr at = { .name = "activation", .type = ONNX_ATTR_STRING,
                            .s = (char *)(p && p->silu ? "silu" : "none") };
    at.s_len = strlen(at.s);
    int in[CG_N_IN] = { g->dy[0], dy_present };
    for (int i = 0; i < CC_N_IN; i++)
        in[CG_X + i] = i < f->n_in && f->in[i] ? g->in[i] : -1;
    int n_in = CG_N_IN;
    while (n_in > CG_X + 2 && in[n_in - 1] < 0)
        n_in--;
    int out[4] = { -1, -1, -1, -1 };
    if (g->emit(g, "CausalConvWithStateGrad", &at, 1, n_in, in, 4, out))
        return -1;
    for (int i = 0; i < CC_N_IN; i++)
        if (i < f->n_in && f->in[i] && g->need_dx[i] && g->add_dx(g, i, out[i]))
            return -1;
    return 0;
}

static const struct tensor *cg_in(const struct op_call *c, int i)
{
    return i < c->n_in ? c->in[i] : NULL;
}

static int cg_infer(struct op_call *c)
{
    const struct tensor *in[CC_N_IN];
    for (int i = 0; i < CC_N_IN; i++)
        in[i] = cg_in(c, CG_X + i);
    int64_t b, ch, len, k;
    if (cc_check(c, in, &b, &ch, &len, &k))
        return -1;
    const struct tensor *dy = cg_in(c, CG_DY), *dp = cg_in(c, CG_DPRESENT);
    char d1[128];
    if (dy && (dy->dtype != ONNX_DTYPE_FLOAT || dy->rank != 3 || dy->dims[0] != b
               || dy->dims[1] != ch || dy->dims[2] != len))
        return op_error(c, "dY %s must be float32 of the input's shape",
                        tensor_describe(dy, d1, sizeof d1));
    if (dp && (dp->dtype != ONNX_DTYPE_FLOAT || dp->rank != 3 || dp->dims[0] != b
               || dp->dims[1] != ch || dp->dims[2] != k - 1))
        return op_error(c, "dPresentState %s must be float32 (batch_size, channels, k - 1)",
                        tensor_describe(dp, d1, sizeof d1));
    cc_set(c->out[0], b, ch, len);
    if (c->n_out > 1)
        cc_set(c->out[1], ch, 1, k);
    if (c->n_out > 2 && c->out[2]) {
        c->out[2]->dtype = ONNX_DTYPE_FLOAT;
        c->out[2]->rank = 1;
        c->out[2]->dims[0] = ch;
    }
    if (c->n_out > 3)
        cc_set(c->out[3], b, ch, k - 1);
    return 0;
}

static struct op_cost cg_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct tensor *w = c->in[CG_X + CC_W];
    cost.flops = (6.0 * (double)(w->rank == 3 ? w->dims[2] : 1) + 10.0)
                 * (double)tensor_numel(c->in[CG_X]);
    return cost;
}

static int cg_cpu(struct op_call *c)
{
    const struct causal_conv_params *p = c->params;
    const struct tensor *in[CC_N_IN];
    for (int i = 0; i < CC_N_IN; i++)
        in[i] = cg_in(c, CG_X + i);
    int64_t nb, nc, len, k;
    if (cc_check(c, in, &nb, &nc, &len, &k))
        return -1;
    const struct tensor *tdy = cg_in(c, CG_DY), *tdp = cg_in(c, CG_DPRESENT);
    const float *x = in[CC_X]->data, *w = in[CC_W]->data;
    const float *bias = in[CC_BIAS] ? in[CC_BIAS]->data : NULL;
    const float *past = in[CC_PAST] ? in[CC_PAST]->data : NULL;
    const float *dy = tdy ? tdy->data : NULL, *dpres = tdp ? tdp->data : NULL;
    float *dx = c->out[0] ? c->out[0]->data : NULL;
    float *dw = c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL;
    float *db = c->n_out > 2 && c->out[2] ? c->out[2]->data : NULL;
    float *dpast = c->n_out > 3 && c->out[3] ? c->out[3]->data : NULL;
    const int silu = p ? p->silu : 0;
    const int64_t s = k - 1;
    size_t need = sizeof(float) * (size_t)(nc * (len + k) + 1);
    float *tmp = nn_scratch_alloc(c, need);
    if (!tmp)
        return op_error(c, "cannot get %zu bytes of scratch", need);
#pragma omp parallel for schedule(static) if (nb * nc * len * k > 32768)
    for (int64_t ci = 0; ci < nc; ci++) {
        float *dz = tmp + ci * (len + k), *dwc = dz + len;
        const float *wr = w + ci * k;
        float bv = bias ? bias[ci] : 0.0f, dbc = 0.0f;
        for (int64_t j = 0; j < k; j++)
            dwc[j] = 0.0f;
        for (int64_t bi = 0; bi < nb; bi++) {
            int64_t r = bi * nc + ci;
            const float *xr = x + r * len, *pr = past ? past + r * s : NULL;
            for (int64_t t = 0; t < len; t++) {
                float d = dy ? dy[r * len + t] : 0.0f;
                if (silu && d != 0.0f) {
                    float z = cc_z(xr, pr, wr, bv, k, t);
                    float sg = 1.0f / (1.0f + expf(-z));
                    d *= sg * (1.0f + z * (1.0f - sg));
                }
                dz[t] = d;
                dbc += d;
            }
            for (int64_t j = 0; j < k; j++) {
                float a = 0.0f;
                for (int64_t t = 0; t < len; t++)
                    a += dz[t] * cc_pad(xr, pr, k, t + j);
                dwc[j] += a;
            }
            for (int64_t i = 0; i < len + s; i++) {
                int64_t j0 = i - len + 1 > 0 ? i - len + 1 : 0, j1 = i < s ? i : s;
                float a = 0.0f;
                for (int64_t j = j0; j <= j1; j++)
                    a += wr[j] * dz[i - j];
                if (dpres && i >= len)
                    a += dpres[r * s + (i - len)];
                if (i < s) {
                    if (dpast)
                        dpast[r * s + i] = a;
                } else if (dx) {
                    dx[r * len + (i - s)] = a;
                }
            }
        }
        if (dw)
            memcpy(dw + ci * k, dwc, sizeof(float) * (size_t)k);
        if (db)
            db[ci] = dbc;
    }
    nn_scratch_free(c, tmp);
    return 0;
}

const struct op_def op_causal_conv_with_state = {
    .domain = "", .name = "CausalConvWithState", .since = { 27 },
    .min_in = 2, .max_in = 4, .min_out = 1, .max_out = 2,
    .parse = cc_parse, .infer = cc_infer, .cost = cc_cost,
    .kernel = { [BACKEND_CPU] = cc_cpu },
    .grad = cc_grad,
    .grad_saves_in = (1u << CC_N_IN) - 1,
};

const struct op_def op_causal_conv_with_state_grad = {
    .domain = "dtrexec", .name = "CausalConvWithStateGrad", .since = { 1 },
    .min_in = CG_X + 2, .max_in = CG_N_IN, .min_out = 1, .max_out = 4,
    .parse = cc_parse, .infer = cg_infer, .cost = cg_cost,
    .kernel = { [BACKEND_CPU] = cg_cpu },
};
