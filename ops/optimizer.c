/* ops/optimizer.c — optimizer steps as operators of the "dtrexec" domain, so
 * that updates run through the same execution function as everything else.
 * Each updates its parameter (input 0) and state (inputs 2, 3) in place from
 * the gradient (input 1) and has no outputs.
 *   SGDUpdate:      p -= lr * (g + wd p)
 *   MomentumUpdate: b = mu b + (g + wd p); p -= lr * (nesterov ? g + wd p + mu b : b)   (PyTorch)
 *   AdamUpdate:     Adam (L2 decay) or AdamW (decoupled decay); bias correction as
 *                   PyTorch (lr/bc1, sqrt(v)/sqrt(bc2) + eps) or HuggingFace
 *                   (lr sqrt(bc2)/bc1, sqrt(v) + eps, decay after the step). */
#include <math.h>
#include <stdlib.h>

#include "ops/ops.h"
#include "ops/train-params.h"

static int optimizer_parse(const struct onnx_node *n, int version, void **out, char *err, size_t err_size)
{
    struct optimizer_params *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    p->lr = onnx_node_attr_float(n, "lr", 0.01f);
    p->momentum = onnx_node_attr_float(n, "momentum", 0.9f);
    p->beta1 = onnx_node_attr_float(n, "beta1", 0.9f);
    p->beta2 = onnx_node_attr_float(n, "beta2", 0.999f);
    p->epsilon = onnx_node_attr_float(n, "epsilon", 1e-8f);
    p->weight_decay = onnx_node_attr_float(n, "weight_decay", 0);
    p->nesterov = (int)onnx_node_attr_int(n, "nesterov", 0);
    p->decoupled = (int)onnx_node_attr_int(n, "decoupled", 0);
    p->hf_bias_correction = (int)onnx_node_attr_int(n, "hf_bias_correction", 0);
    p->step = onnx_node_attr_int(n, "step", 1);
    *out = p;
    return 0;
}

static int optimizer_infer(struct op_call *c)
{
    for (int i = 1; i < c->n_in; i++)
        if (c->in[i]->dtype != ONNX_DTYPE_FLOAT || !tensor_same_shape(c->in[i], c->in[0]))
            return op_error(c, "input %d must be float32 shaped like the parameter", i);
    if (c->in[0]->dtype != ONNX_DTYPE_FLOAT)
        return op_error(c, "only float32 parameters are supported");
    return 0;
}

static int sgd_cpu(struct op_call *c)
{
    const struct optimizer_params *p = c->params;
    float *w = c->in[0]->data;
    const float *g = c->in[1]->data;
    int64_t n = tensor_numel(c->in[0]);
    for (int64_t i = 0; i < n; i++)
        w[i] -= p->lr * (g[i] + p->weight_decay * w[i]);
    return 0;
}

static int momentum_cpu(struct op_call *c)
{
    const struct optimizer_params *p = c->params;
    if (c->n_in < 3)
        return op_error(c, "momentum needs its state buffer");
    float *w = c->in[0]->data, *b = c->in[2]->data;
    const float *g = c->in[1]->data;
    int64_t n = tensor_numel(c->in[0]);
    for (int64_t i = 0; i < n; i++) {
        float d = g[i] + p->weight_decay * w[i];
        b[i] = p->momentum * b[i] + d;
        w[i] -= p->lr * (p->nesterov ? d + p->momentum * b[i] : b[i]);
    }
    return 0;
}

static int adam_cpu(struct op_call *c)
{
    const struct optimizer_params *p = c->params;
    if (c->n_in < 4)
        return op_error(c, "Adam needs its two state buffers");
    float *w = c->in[0]->data, *m = c->in[2]->data, *v = c->in[3]->data;
    const float *g = c->in[1]->data;
    int64_t n = tensor_numel(c->in[0]);
    double bc1 = 1 - pow(p->beta1, (double)p->step), bc2 = 1 - pow(p->beta2, (double)p->step);
    float step_size, denom_scale;
    if (p->hf_bias_correction) {
        step_size = (float)(p->lr * sqrt(bc2) / bc1);
        denom_scale = 1;
    } else {
        step_size = (float)(p->lr / bc1);
        denom_scale = (float)(1 / sqrt(bc2));
    }
    for (int64_t i = 0; i < n; i++) {
        float d = g[i];
        if (p->decoupled && !p->hf_bias_correction)
            w[i] *= 1 - p->lr * p->weight_decay;
        else if (!p->decoupled)
            d += p->weight_decay * w[i];
        m[i] = p->beta1 * m[i] + (1 - p->beta1) * d;
        v[i] = p->beta2 * v[i] + (1 - p->beta2) * d * d;
        w[i] -= step_size * m[i] / (sqrtf(v[i]) * denom_scale + p->epsilon);
        if (p->decoupled && p->hf_bias_correction)
            w[i] -= p->lr * p->weight_decay * w[i];
    }
    return 0;
}

static struct op_cost optimizer_cost(const struct op_call *c)
{
    double n = (double)tensor_numel(c->in[0]);
    return (struct op_cost){ .flops = 8 * n, .bytes = 4.0 * n * (2 * c->n_in) };
}

#define OPTIMIZER_OP(sym, opname, nin, kern, mut)                                                   \
    const struct op_def sym = {                                                                  \
        .domain = "dtrexec", .name = opname, .since = { 1 }, .min_in = 2, .max_in = nin,         \
        .min_out = 0, .max_out = 0, .parse = optimizer_parse, .infer = optimizer_infer,          \
        .cost = optimizer_cost, .kernel = { [BACKEND_CPU] = kern }, .mutates = mut,              \
    };

OPTIMIZER_OP(op_sgd_update, "SGDUpdate", 2, sgd_cpu, 0x1)
OPTIMIZER_OP(op_momentum_update, "MomentumUpdate", 3, momentum_cpu, 0x5)
OPTIMIZER_OP(op_adam_update, "AdamUpdate", 4, adam_cpu, 0xd)
