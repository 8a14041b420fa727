/* ops/dropout.c — Dropout (opset 7, 10, 12, 13, 22).
 *
 * Inference (the default): y = x and the optional mask is all true. Training
 * — the training_mode input (from 12) when given, otherwise the runtime's
 * env->training — with ratio r > 0: each element is kept when its uniform
 * draw u >= r, and y = x / (1 - r) where kept, 0 elsewhere. The ratio is an
 * attribute before 12 and an input from 12 (default 0.5).
 *
 * The draw for element i is a pure function of (env->seed, the node's seed
 * attribute, or the node's name when it has none, i): a counter-based
 * generator (splitmix64), not a stream. So a DTR recomputation of the same
 * call, which replays the same env->seed, reproduces the mask bit for bit,
 * in any thread schedule; two unseeded Dropout nodes draw different masks.
 * The gradient (DropoutGrad) regenerates the same mask from the same key
 * rather than keeping it, since the mask output is optional. The ONNX node
 * tests test_training_dropout{,_default,_default_mask,_mask} expect numpy's
 * MT19937 stream and cannot match; their ratio-0 variants do.
 *
 * The mask is bool from opset 10 and the input's type before. */
#include <stdlib.h>

#include "ops/elementwise-impl.h"
#include "ops/shape-impl.h"
#include "ops/elementwise-params.h"

static int dropout_parse(const struct onnx_node *node, int version, void **params,
                         char *err, size_t err_size)
{
    struct dropout_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->ratio = 0.5f;
    if (version < 12) {
        p->ratio = onnx_node_attr_float(node, "ratio", 0.5f);
        if (!(p->ratio >= 0 && p->ratio <= 1)) {
            float r = p->ratio;
            free(p);
            return shape_parse_error(err, err_size, node, "ratio is %g; expected 0..1", r);
        }
    } else {
        p->has_seed = onnx_node_attr(node, "seed") != NULL;
        p->seed = onnx_node_attr_int(node, "seed", 0);
    }
    *params = p;
    return 0;
}

static int dropout_infer(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    for (int k = 0; k < c->n_out && k < 2; k++) {
        struct tensor *y = c->out[k];
        if (!y)
            continue;
        y->dtype = k == 1 && c->version >= 10 ? ONNX_DTYPE_BOOL : x->dtype;
        y->rank = x->rank;
        memcpy(y->dims, x->dims, sizeof y->dims);
    }
    return 0;
}

/* The generator key of a call: env->seed mixed with the node's seed, or
 * with a hash of the node's name (FNV-1a) when it has no seed. */
uint64_t ew_dropout_key(const struct op_call *c)
{
    const struct dropout_params *p = c->params;
    uint64_t key = ew_rand_mix(c->env ? c->env->seed : 0);
    if (p->has_seed)
        return ew_rand_mix(key ^ (uint64_t)p->seed);
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *s = c->node_name ? c->node_name : ""; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return ew_rand_mix(key ^ h);
}

/* Ratio and training flag of this call; -1 after op_error(). */
int ew_dropout_mode(const struct op_call *c, double *ratio, int *training)
{
    const struct dropout_params *p = c->params;
    *ratio = p->ratio;
    *training = c->env ? c->env->training : 0;
    if (c->version < 12)
        return 0;
    const struct tensor *r = c->n_in > 1 ? c->in[1] : NULL;
    const struct tensor *t = c->n_in > 2 ? c->in[2] : NULL;
    if (r) {
        if (tensor_numel(r) != 1 ||
            (r->dtype != ONNX_DTYPE_FLOAT && r->dtype != ONNX_DTYPE_DOUBLE))
            return op_error(c, "ratio must be a float or double scalar");
        *ratio = tensor_get_double(r, 0);
        if (!(*ratio >= 0 && *ratio <= 1))
            return op_error(c, "ratio is %g; expected 0..1", *ratio);
    }
    if (t) {
        if (tensor_numel(t) != 1 || t->dtype != ONNX_DTYPE_BOOL)
            return op_error(c, "training_mode must be a bool scalar");
        *training = tensor_get_int(t, 0) != 0;
    }
    return 0;
}

/* Writes 1 or 0 as one element of the mask's type. */
static void dropout_mask_set(struct tensor *m, int64_t i, int keep)
{
    switch (m->dtype) {
    case ONNX_DTYPE_FLOAT: ((float *)m->data)[i] = (float)keep; break;
    case ONNX_DTYPE_DOUBLE: ((double *)m->data)[i] = keep; break;
    case ONNX_DTYPE_FLOAT16: ((uint16_t *)m->data)[i] = keep ? 0x3C00 : 0; break;
    case ONNX_DTYPE_BFLOAT16: ((uint16_t *)m->data)[i] = keep ? 0x3F80 : 0; break;
    default: ((uint8_t *)m->data)[i] = (uint8_t)keep; break;  /* bool */
    }
}

static int dropout_cpu(struct op_call *c)
{
    const struct tensor *x = c->in[0];
    struct tensor *y = c->out[0];
    struct tensor *mask = c->n_out > 1 ? c->out[1] : NULL;
    double ratio;
    int training;
    if (ew_dropout_mode(c, &ratio, &training))
        return -1;
    int64_t n = tensor_numel(x);
    if (n == 0)
        return 0;
    if (!training || ratio == 0) {
        memcpy(y->data, x->data, tensor_size_bytes(x));
        if (mask) {
            if (mask->dtype == ONNX_DTYPE_BOOL)
                memset(mask->data, 1, (size_t)n);
            else
                for (int64_t i = 0; i < n; i++)
                    dropout_mask_set(mask, i, 1);
        }
        return 0;
    }
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "training-mode dropout supports float and double, got %s",
                        onnx_dtype_name(x->dtype));
    uint64_t key = ew_dropout_key(c);
    double scale = ratio < 1 ? 1 / (1 - ratio) : 0;
    int par = n > 65536;
    #pragma omp parallel for schedule(static) if(par)
    for (int64_t i = 0; i < n; i++) {
        int keep = ratio < 1 && ew_rand_uniform(key, i) >= ratio;
        if (x->dtype == ONNX_DTYPE_FLOAT)
            ((float *)y->data)[i] = keep ? (float)(((const float *)x->data)[i] * scale) : 0.0f;
        else
            ((double *)y->data)[i] = keep ? ((const double *)x->data)[i] * scale : 0.0;
        if (mask)
            dropout_mask_set(mask, i, keep);
    }
    return 0;
}

/* Inference, or ratio 0: dx = dy. Training: dx = dy * mask / (1 - ratio),
 * the mask regenerated by DropoutGrad from this call's key. Reads ratio and
 * training_mode, hence grad_saves_in. */
static int dropout_grad(struct grad_ctx *g)
{
    if (!g->need_dx[0] || g->dy[0] < 0)
        return 0;
    double ratio;
    int training;
    if (ew_dropout_mode(g->fwd, &ratio, &training))
        return shape_grad_fwd_error(g);
    if (!training || ratio == 0)
        return g->add_dx(g, 0, g->dy[0]);
    struct tensor r = { .dtype = ONNX_DTYPE_DOUBLE, .rank = 0, .data = &ratio };
    struct onnx_attr attr = shape_attr_int("key", (int64_t)ew_dropout_key(g->fwd));
    int in[2] = { g->dy[0], g->constant(g, &r) }, dx;
    if (in[1] < 0 || g->emit(g, "DropoutGrad", &attr, 1, 2, in, 1, &dx))
        return -1;
    return g->add_dx(g, 0, dx);
}

const struct op_def op_dropout = {
    .domain = "", .name = "Dropout",
    .since = { 7, 10, 12, 13, 22 },
    .min_in = 1, .max_in = 3, .min_out = 1, .max_out = 2,
    .parse = dropout_parse,
    .infer = dropout_infer,
    .cost = cost_elementwise,
    .kernel = { [BACKEND_CPU] = dropout_cpu },
    .host_inputs = (1u << 1) | (1u << 2),
    .grad = dropout_grad,
    .grad_saves_in = (1u << 1) | (1u << 2),
};

/* ---- DropoutGrad (domain dtrexec) ------------------------------------------
 * dx[i] = dy[i] / (1 - ratio) where the forward kept element i, else 0.
 * Inputs dy and the ratio (a double scalar, exactly the forward's); the
 * `key` attribute is the forward call's generator key. */

static int dropout_grad_parse(const struct onnx_node *node, int version, void **params,
                              char *err, size_t err_size)
{
    (void)version;
    if (!onnx_node_attr(node, "key"))
        return shape_parse_error(err, err_size, node, "the key attribute is required");
    struct dropout_grad_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->key = (uint64_t)onnx_node_attr_int(node, "key", 0);
    *params = p;
    return 0;
}

static int dropout_grad_infer(struct op_call *c)
{
    const struct tensor *dy = c->in[0], *r = c->in[1];
    if (dy->dtype != ONNX_DTYPE_FLOAT && dy->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "dy must be float or double, got %s", onnx_dtype_name(dy->dtype));
    if (r->dtype != ONNX_DTYPE_DOUBLE || tensor_numel(r) != 1)
        return op_error(c, "ratio must be a double scalar");
    double ratio = tensor_get_double(r, 0);
    if (!(ratio >= 0 && ratio <= 1))
        return op_error(c, "ratio is %g; expected 0..1", ratio);
    struct tensor *y = c->out[0];
    *y = *dy;
    y->data = NULL;
    return 0;
}

static int dropout_grad_cpu(struct op_call *c)
{
    const struct dropout_grad_params *p = c->params;
    const struct tensor *dy = c->in[0];
    struct tensor *dx = c->out[0];
    double ratio = tensor_get_double(c->in[1], 0);
    double scale = ratio < 1 ? 1 / (1 - ratio) : 0;
    int64_t n = tensor_numel(dy);
    int par = n > 65536;
    #pragma omp parallel for schedule(static) if(par)
    for (int64_t i = 0; i < n; i++) {
        int keep = ratio < 1 && ew_rand_uniform(p->key, i) >= ratio;
        if (dy->dtype == ONNX_DTYPE_FLOAT)
            ((float *)dx->data)[i] = keep ? (float)(((const float *)dy->data)[i] * scale) : 0.0f;
        else
            ((double *)dx->data)[i] = keep ? ((const double *)dy->data)[i] * scale : 0.0;
    }
    return 0;
}

const struct op_def op_dropout_grad = {
    .domain = "dtrexec", .name = "DropoutGrad",
    .since = { 1 },
    .min_in = 2, .max_in = 2, .min_out = 1, .max_out = 1,
    .parse = dropout_grad_parse,
    .infer = dropout_grad_infer,
    .cost = cost_elementwise,
    .kernel = { [BACKEND_CPU] = dropout_grad_cpu },
    .host_inputs = 1u << 1,
};
