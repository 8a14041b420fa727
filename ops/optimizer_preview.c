/* ops/optimizer_preview.c — the optimizers of the ai.onnx.preview.training
 * domain (version 1): Adam, Adagrad and Momentum, as ONNX defines them: one
 * step on n tensors per call, inputs (R, T, X_1..X_n, G_1..G_n, state...)
 * and outputs (X_1_new..X_n_new, state_new...), each tensor updated on its
 * own with the same scalar learning rate R (float or double, one element)
 * and update count T (int64, one element):
 *   Adam:     g = norm_coefficient X + G; V' = alpha V + (1 - alpha) g;
 *             H' = beta H + (1 - beta) g^2; r = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R;
 *             X' = (1 - norm_coefficient_post) (X - r V' / (sqrt(H') + epsilon))
 *   Adagrad:  r = R / (1 + T decay_factor); g = norm_coefficient X + G; H' = H + g^2;
 *             X' = X - r g / (sqrt(H') + epsilon)
 *   Momentum: g = norm_coefficient X + G; V' = alpha V + (T > 0 ? beta : 1) g;
 *             X' = X - R V' (standard) or X - R (g + alpha V') (nesterov)
 * Tensors are float32 or float64, every state shaped and typed like its X;
 * each element is computed in double and rounded once to the tensor's type.
 *
 * dtrexec's own optimizer steps (ops/optimizer.c) are not reused: they
 * update float32 parameters in place with PyTorch's conventions (Adam's
 * bias correction on sqrt(v), no T = 0 rule, no beta on the gradient), while
 * these are pure functions with ONNX's. They are inference-time operators:
 * no gradient, and no CUDA kernel of their own: on --device
 * cuda they run on host copies (op_host_bridge). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/train-params.h"
#include "ops/shape-impl.h"

enum preview_kind { PREVIEW_ADAM, PREVIEW_ADAGRAD, PREVIEW_MOMENTUM };

/* Per optimized tensor: inputs X, G and states; outputs X' and states. */
static const int preview_inputs[] = { 4, 3, 3 };

/* A float attribute: its value, dflt when absent and not required; -1 after
 * a message when required and absent or of another type. */
static int preview_float(const struct onnx_node *node, const char *name, int required, float dflt, float *out,
                         char *err, size_t err_size)
{
    const struct onnx_attr *a = onnx_node_attr(node, name);
    if (!a) {
        if (required)
            return shape_parse_error(err, err_size, node, "attribute %s is required", name);
        *out = dflt;
        return 0;
    }
    if (a->type != ONNX_ATTR_FLOAT)
        return shape_parse_error(err, err_size, node, "attribute %s must be a float", name);
    if (!isfinite(a->f))
        return shape_parse_error(err, err_size, node, "attribute %s is %g; expected a finite value", name, a->f);
    *out = a->f;
    return 0;
}

static int preview_parse(const struct onnx_node *node, enum preview_kind kind, void **params, char *err,
                         size_t err_size)
{
    int per = preview_inputs[kind];
    int n_in = node->n_inputs - 2;
    if (n_in < per || n_in % per)
        return shape_parse_error(err, err_size, node, "%d inputs; expected R, T and %d per optimized tensor",
                                 node->n_inputs, per);
    int n = n_in / per;
    if (node->n_outputs != (per - 1) * n)
        return shape_parse_error(err, err_size, node, "%d outputs for %d optimized tensors; expected %d",
                                 node->n_outputs, n, (per - 1) * n);
    struct preview_optimizer_params *p = calloc(1, sizeof *p);
    if (!p)
        return shape_parse_error(err, err_size, node, "out of memory");
    p->n_tensors = n;
    int rc = 0;
    switch (kind) {
    case PREVIEW_ADAM:
        rc = preview_float(node, "alpha", 0, 0.9f, &p->alpha, err, err_size) ||
             preview_float(node, "beta", 0, 0.999f, &p->beta, err, err_size) ||
             preview_float(node, "epsilon", 0, 1e-6f, &p->epsilon, err, err_size) ||
             preview_float(node, "norm_coefficient", 0, 0, &p->norm_coefficient, err, err_size) ||
             preview_float(node, "norm_coefficient_post", 0, 0, &p->norm_coefficient_post, err, err_size);
        break;
    case PREVIEW_ADAGRAD:
        rc = preview_float(node, "decay_factor", 0, 0, &p->decay_factor, err, err_size) ||
             preview_float(node, "epsilon", 0, 1e-6f, &p->epsilon, err, err_size) ||
             preview_float(node, "norm_coefficient", 0, 0, &p->norm_coefficient, err, err_size);
        break;
    case PREVIEW_MOMENTUM: {
        rc = preview_float(node, "alpha", 1, 0, &p->alpha, err, err_size) ||
             preview_float(node, "beta", 1, 0, &p->beta, err, err_size) ||
             preview_float(node, "norm_coefficient", 1, 0, &p->norm_coefficient, err, err_size);
        const struct onnx_attr *mode = onnx_node_attr(node, "mode");
        if (!rc && (!mode || mode->type != ONNX_ATTR_STRING))
            rc = shape_parse_error(err, err_size, node, "attribute mode is required: \"standard\" or \"nesterov\"");
        else if (!rc && strcmp(mode->s, "standard") && strcmp(mode->s, "nesterov"))
            rc = shape_parse_error(err, err_size, node, "mode is \"%s\"; expected \"standard\" or \"nesterov\"",
                                   mode->s);
        else if (!rc)
            p->nesterov = !strcmp(mode->s, "nesterov");
        break;
    }
    }
    if (rc) {
        free(p);
        return -1;
    }
    *params = p;
    return 0;
}

static int adam_parse(const struct onnx_node *n, int v, void **p, char *e, size_t s)
{
    (void)v;
    return preview_parse(n, PREVIEW_ADAM, p, e, s);
}

static int adagrad_parse(const struct onnx_node *n, int v, void **p, char *e, size_t s)
{
    (void)v;
    return preview_parse(n, PREVIEW_ADAGRAD, p, e, s);
}

static int momentum_parse(const struct onnx_node *n, int v, void **p, char *e, size_t s)
{
    (void)v;
    return preview_parse(n, PREVIEW_MOMENTUM, p, e, s);
}

static enum preview_kind preview_kind_of(const struct op_call *c)
{
    return !strcmp(c->def->name, "Adam") ? PREVIEW_ADAM : !strcmp(c->def->name, "Adagrad") ? PREVIEW_ADAGRAD
                                                                                           : PREVIEW_MOMENTUM;
}

static int is_float_type(int dt)
{
    return dt == ONNX_DTYPE_FLOAT || dt == ONNX_DTYPE_DOUBLE;
}

/* Input name j of group slot `slot` (0 = X, 1 = G, 2.. = states). */
static const char *slot_name(enum preview_kind kind, int slot)
{
    static const char *const adam[] = { "X", "G", "V", "H" }, *const adagrad[] = { "X", "G", "H" },
                             *const momentum[] = { "X", "G", "V" };
    return kind == PREVIEW_ADAM ? adam[slot] : kind == PREVIEW_ADAGRAD ? adagrad[slot] : momentum[slot];
}

static int preview_infer(struct op_call *c)
{
    const struct preview_optimizer_params *p = c->params;
    enum preview_kind kind = preview_kind_of(c);
    int per = preview_inputs[kind], n = p->n_tensors;
    const struct tensor *r = c->in[0], *t = c->in[1];
    char buf[128];
    if (!r || !is_float_type(r->dtype) || tensor_numel(r) != 1)
        return op_error(c, "R must be one float or double, not %s", r ? tensor_describe(r, buf, sizeof buf) : "empty");
    if (!t || t->dtype != ONNX_DTYPE_INT64 || tensor_numel(t) != 1)
        return op_error(c, "T must be one int64, not %s", t ? tensor_describe(t, buf, sizeof buf) : "empty");
    for (int i = 0; i < n; i++) {
        const struct tensor *x = c->in[2 + i];
        if (!x || !is_float_type(x->dtype))
            return op_error(c, "X_%d must be a float or double tensor, not %s", i + 1,
                            x ? tensor_describe(x, buf, sizeof buf) : "empty");
        for (int slot = 1; slot < per; slot++) {
            const struct tensor *u = c->in[2 + slot * n + i];
            char xb[128];
            if (!u || u->dtype != x->dtype || !tensor_same_shape(u, x))
                return op_error(c, "%s_%d is %s; expected %s like X_%d", slot_name(kind, slot), i + 1,
                                u ? tensor_describe(u, buf, sizeof buf) : "empty",
                                tensor_describe(x, xb, sizeof xb), i + 1);
        }
        /* Outputs: X'_1..n, then each state's new values. */
        for (int slot = 0; slot < per - 1; slot++) {
            struct tensor *y = c->out[slot * n + i];
            if (!y)
                continue;
            y->dtype = x->dtype;
            y->rank = x->rank;
            memcpy(y->dims, x->dims, sizeof y->dims);
        }
    }
    return 0;
}

static double load(const struct tensor *t, int64_t i)
{
    return t->dtype == ONNX_DTYPE_FLOAT ? (double)((const float *)t->data)[i] : ((const double *)t->data)[i];
}

static void store(struct tensor *t, int64_t i, double v)
{
    if (!t)
        return;
    if (t->dtype == ONNX_DTYPE_FLOAT)
        ((float *)t->data)[i] = (float)v;
    else
        ((double *)t->data)[i] = v;
}

static int preview_cpu(struct op_call *c)
{
    const struct preview_optimizer_params *p = c->params;
    enum preview_kind kind = preview_kind_of(c);
    int n = p->n_tensors;
    double r = tensor_get_double(c->in[0], 0);
    int64_t t = tensor_get_int(c->in[1], 0);
    double nc = p->norm_coefficient, alpha = p->alpha, beta = p->beta, eps = p->epsilon;
    double rate = r;
    if (kind == PREVIEW_ADAM && t > 0)
        rate = r * sqrt(1 - pow(beta, (double)t)) / (1 - pow(alpha, (double)t));
    else if (kind == PREVIEW_ADAGRAD)
        rate = r / (1 + (double)t * p->decay_factor);
    double beta_adjusted = t > 0 ? beta : 1;
    for (int i = 0; i < n; i++) {
        const struct tensor *x = c->in[2 + i], *g = c->in[2 + n + i], *s1 = c->in[2 + 2 * n + i];
        const struct tensor *s2 = kind == PREVIEW_ADAM ? c->in[2 + 3 * n + i] : NULL;
        struct tensor *xo = c->out[i], *s1o = c->out[n + i];
        struct tensor *s2o = kind == PREVIEW_ADAM ? c->out[2 * n + i] : NULL;
        int64_t count = tensor_numel(x);
        for (int64_t k = 0; k < count; k++) {
            double xv = load(x, k), gr = nc * xv + load(g, k), a = load(s1, k);
            switch (kind) {
            case PREVIEW_ADAM: {
                double v = alpha * a + (1 - alpha) * gr;
                double h = beta * load(s2, k) + (1 - beta) * gr * gr;
                store(xo, k, (1 - p->norm_coefficient_post) * (xv - rate * (v / (sqrt(h) + eps))));
                store(s1o, k, v);
                store(s2o, k, h);
                break;
            }
            case PREVIEW_ADAGRAD: {
                double h = a + gr * gr;
                store(xo, k, xv - rate * gr / (sqrt(h) + eps));
                store(s1o, k, h);
                break;
            }
            case PREVIEW_MOMENTUM: {
                double v = alpha * a + beta_adjusted * gr;
                store(xo, k, xv - rate * (p->nesterov ? gr + alpha * v : v));
                store(s1o, k, v);
                break;
            }
            }
        }
    }
    return 0;
}

static struct op_cost preview_cost(const struct op_call *c)
{
    double elems = 0, bytes = 0;
    for (int i = 2; i < c->n_in; i++)
        bytes += (double)tensor_size_bytes(c->in[i]);
    for (int i = 0; i < c->n_out; i++)
        if (c->out[i]) {
            elems += (double)tensor_numel(c->out[i]);
            bytes += (double)tensor_size_bytes(c->out[i]);
        }
    return (struct op_cost){ .flops = 6 * elems, .bytes = bytes };
}

#define PREVIEW_OP(sym, opname, per, parse_fn)                                                                  \
    const struct op_def sym = {                                                                                 \
        .domain = "ai.onnx.preview.training", .name = opname, .since = { 1 },                                   \
        .min_in = 2 + (per), .max_in = OP_VARIADIC, .min_out = (per) - 1, .max_out = OP_VARIADIC,               \
        .parse = parse_fn, .params_free = free, .infer = preview_infer, .cost = preview_cost,                   \
        .kernel = { [BACKEND_CPU] = preview_cpu, [BACKEND_CUDA] = op_host_bridge },                             \
    };

PREVIEW_OP(op_preview_adam, "Adam", 4, adam_parse)
PREVIEW_OP(op_preview_adagrad, "Adagrad", 3, adagrad_parse)
PREVIEW_OP(op_preview_momentum, "Momentum", 3, momentum_parse)
