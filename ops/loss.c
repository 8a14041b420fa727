/* ops/loss.c — SoftmaxCrossEntropyLoss (opsets 12, 13) and
 * NegativeLogLikelihoodLoss (opsets 12, 13, 22; later versions only widen
 * the types).
 *
 * Inputs [N, C, d1..dk] are handled as [N, C, D] with the class axis strided
 * by D. SoftmaxCrossEntropyLoss is LogSoftmax over C followed by the NLL loss,
 * exactly as ONNX's function body defines it; both share the helpers declared
 * in rnn-impl.h. Their gradient kernels (SoftmaxCrossEntropyLossGrad,
 * NegativeLogLikelihoodLossGrad, domain dtrexec) sit at the end of the file.
 * Per-position losses are computed in double and reduced in index order, so
 * results do not depend on the thread count. Float32 and float64 inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/rnn-impl.h"

#define LOSS_PARALLEL_MIN 16384

enum { LOSS_IN_SCORES, LOSS_IN_TARGET, LOSS_IN_WEIGHT };

static int loss_parse(const struct onnx_node *node, int version, void **out, char *err, size_t err_size)
{
    struct loss_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (%s): out of memory", node->name, node->op_type);
        return -1;
    }
    const char *reduction = onnx_node_attr_string(node, "reduction", "mean");
    if (!strcmp(reduction, "none")) {
        p->reduction = LOSS_REDUCTION_NONE;
    } else if (!strcmp(reduction, "sum")) {
        p->reduction = LOSS_REDUCTION_SUM;
    } else if (!strcmp(reduction, "mean")) {
        p->reduction = LOSS_REDUCTION_MEAN;
    } else {
        snprintf(err, err_size, "node '%s' (%s): reduction '%s' is not one of none, sum, mean",
                 node->name, node->op_type, reduction);
        free(p);
        return -1;
    }
    const struct onnx_attr *ii = onnx_node_attr(node, "ignore_index");
    if (ii) {
        p->has_ignore_index = 1;
        p->ignore_index = ii->i;
    }
    *out = p;
    return 0;
}

static double loss_load(const struct tensor *t, int64_t i)
{
    return t->dtype == ONNX_DTYPE_FLOAT ? (double)((const float *)t->data)[i] : ((const double *)t->data)[i];
}

static void loss_store(struct tensor *t, int64_t i, double v)
{
    if (t->dtype == ONNX_DTYPE_FLOAT)
        ((float *)t->data)[i] = (float)v;
    else
        ((double *)t->data)[i] = v;
}

int loss_targets_check(const struct op_call *call, const struct loss_params *p,
                       const struct tensor *target, int64_t classes)
{
    int64_t n = tensor_numel(target);
    for (int64_t i = 0; i < n; i++) {
        int64_t t = tensor_get_int(target, i);
        if (p->has_ignore_index && t == p->ignore_index)
            continue;
        if (t < 0 || t >= classes) {
            if (p->has_ignore_index)
                return op_error(call, "target label %lld at flat index %lld is outside [0, %lld) "
                                "and is not ignore_index (%lld)", (long long)t, (long long)i,
                                (long long)classes, (long long)p->ignore_index);
            return op_error(call, "target label %lld at flat index %lld is outside [0, %lld)",
                            (long long)t, (long long)i, (long long)classes);
        }
    }
    return 0;
}

/* The positions' weights summed serially, in index order, for determinism. */
static double weight_sum_of(const struct loss_params *p, const struct loss_dims *d, const struct tensor *target,
                            const struct tensor *weight)
{
    double ws = 0.0;
    for (int64_t i = 0; i < d->n * d->d; i++) {
        int64_t cls;
        ws += loss_position_weight(p, target, weight, i, &cls);
    }
    return ws;
}

/* log(sum exp) over the classes of the position at `base` (stride d->d). */
static double row_lse(const struct loss_dims *d, const struct tensor *x, int64_t base)
{
    double mx = -INFINITY;
    for (int64_t c = 0; c < d->c; c++) {
        double v = loss_load(x, base + c * d->d);
        if (v > mx)
            mx = v;
    }
    double sum = 0.0;
    for (int64_t c = 0; c < d->c; c++)
        sum += exp(loss_load(x, base + c * d->d) - mx);
    return mx + log(sum);
}

void loss_nll_positions(const struct loss_params *p, const struct loss_dims *d,
                        const struct tensor *logp, const struct tensor *target,
                        const struct tensor *weight, double *loss, double *weight_sum)
{
    const int64_t count = d->n * d->d;
#pragma omp parallel for schedule(static) if (count >= LOSS_PARALLEL_MIN)
    for (int64_t i = 0; i < count; i++) {
        int64_t cls;
        double w = loss_position_weight(p, target, weight, i, &cls);
        if (cls < 0) {
            loss[i] = 0.0;
            continue;
        }
        int64_t n = i / d->d, k = i % d->d;
        loss[i] = -loss_load(logp, (n * d->c + cls) * d->d + k) * w;
    }
    *weight_sum = weight_sum_of(p, d, target, weight);
}

void loss_log_softmax(const struct loss_dims *d, const struct tensor *x, struct tensor *out)
{
    const int64_t count = d->n * d->d;
#pragma omp parallel for schedule(static) if (count * d->c >= LOSS_PARALLEL_MIN)
    for (int64_t i = 0; i < count; i++) {
        int64_t n = i / d->d, k = i % d->d;
        int64_t base = n * d->c * d->d + k;
        double lse = row_lse(d, x, base);
        for (int64_t c = 0; c < d->c; c++)
            loss_store(out, base + c * d->d, loss_load(x, base + c * d->d) - lse);
    }
}

void loss_reduce(const struct loss_params *p, int64_t count, const double *loss,
                 double weight_sum, struct tensor *out)
{
    if (p->reduction == LOSS_REDUCTION_NONE) {
        for (int64_t i = 0; i < count; i++)
            loss_store(out, i, loss[i]);
        return;
    }
    double sum = 0.0;
    for (int64_t i = 0; i < count; i++)
        sum += loss[i];
    /* Mean divides by the total weight of the counted positions (their
     * number without a weight input); all positions ignored gives 0/0 = NaN,
     * as in ONNX's reference. */
    loss_store(out, 0, p->reduction == LOSS_REDUCTION_MEAN ? sum / weight_sum : sum);
}

/* ---- shapes ----------------------------------------------------------- */

static const struct tensor *loss_input(const struct op_call *c, int i)
{
    return i < c->n_in ? c->in[i] : NULL;
}

static int loss_dims_get(const struct op_call *c, struct loss_dims *d)
{
    const struct tensor *x = loss_input(c, LOSS_IN_SCORES), *t = loss_input(c, LOSS_IN_TARGET),
                        *w = loss_input(c, LOSS_IN_WEIGHT);
    char a[96], b[96];
    if (!x || !t)
        return op_error(c, "the scores and target inputs are required");
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "input is %s; float32 and float64 are implemented",
                        tensor_describe(x, a, sizeof a));
    if (x->rank < 2)
        return op_error(c, "input is %s, expected [N, C, d1..dk]", tensor_describe(x, a, sizeof a));
    if (t->dtype != ONNX_DTYPE_INT32 && t->dtype != ONNX_DTYPE_INT64)
        return op_error(c, "target is %s, expected int32 or int64", tensor_describe(t, a, sizeof a));
    int ok = t->rank == x->rank - 1 && t->dims[0] == x->dims[0];
    for (int i = 1; ok && i < t->rank; i++)
        ok = t->dims[i] == x->dims[i + 1];
    if (!ok)
        return op_error(c, "target is %s, expected input %s without its class axis",
                        tensor_describe(t, a, sizeof a), tensor_describe(x, b, sizeof b));
    if (w && (w->rank != 1 || w->dims[0] != x->dims[1] || w->dtype != x->dtype))
        return op_error(c, "weight is %s, expected %s[%lld] (one per class)",
                        tensor_describe(w, a, sizeof a), onnx_dtype_name(x->dtype), (long long)x->dims[1]);
    d->n = x->dims[0];
    d->c = x->dims[1];
    d->d = 1;
    for (int i = 2; i < x->rank; i++)
        d->d *= x->dims[i];
    return 0;
}

static int loss_infer(struct op_call *c)
{
    const struct loss_params *p = c->params;
    struct loss_dims d;
    if (loss_dims_get(c, &d))
        return -1;
    const struct tensor *x = c->in[LOSS_IN_SCORES], *t = c->in[LOSS_IN_TARGET];
    struct tensor *out = c->n_out > 0 ? c->out[0] : NULL;
    if (out) {
        out->dtype = x->dtype;
        out->rank = p->reduction == LOSS_REDUCTION_NONE ? t->rank : 0;
        for (int i = 0; i < out->rank; i++)
            out->dims[i] = t->dims[i];
    }
    struct tensor *log_prob = c->n_out > 1 ? c->out[1] : NULL;
    if (log_prob) {
        log_prob->dtype = x->dtype;
        log_prob->rank = x->rank;
        memcpy(log_prob->dims, x->dims, sizeof x->dims);
    }
    return 0;
}

static struct op_cost nll_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    if (c->n_in > 1 && c->in[1])
        cost.flops = 2.0 * (double)tensor_numel(c->in[1]);
    return cost;
}

static struct op_cost sce_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    if (c->n_in > 0 && c->in[0])   /* max, exp, sum, log, subtract per score */
        cost.flops = 5.0 * (double)tensor_numel(c->in[0]);
    return cost;
}

/* ---- kernels ---------------------------------------------------------- */

/* NLL from log-probabilities logp into out, with per-position scratch.
 * The targets must have been checked. */
static int loss_nll_run(struct op_call *c, const struct loss_dims *d, const struct tensor *logp)
{
    const struct loss_params *p = c->params;
    const struct tensor *t = c->in[LOSS_IN_TARGET], *w = loss_input(c, LOSS_IN_WEIGHT);
    double *loss = rnn_scratch_alloc(c, (size_t)(d->n * d->d) * sizeof(double));
    if (!loss)
        return -1;
    double weight_sum;
    loss_nll_positions(p, d, logp, t, w, loss, &weight_sum);
    if (c->n_out > 0 && c->out[0])
        loss_reduce(p, d->n * d->d, loss, weight_sum, c->out[0]);
    rnn_scratch_free(c, loss);
    return 0;
}

static int nll_cpu(struct op_call *c)
{
    struct loss_dims d;
    if (loss_dims_get(c, &d))
        return -1;
    if (loss_targets_check(c, c->params, c->in[LOSS_IN_TARGET], d.c))
        return -1;
    return loss_nll_run(c, &d, c->in[LOSS_IN_SCORES]);
}

/* log_softmax(x) at each position's target class, exactly as
 * loss_log_softmax then loss_nll_positions compute it (the same maximum,
 * the same sum in the same order, the value rounded to x's type), without
 * the scores' worth of log-probabilities. */
static void sce_positions(const struct loss_params *p, const struct loss_dims *d, const struct tensor *x,
                          const struct tensor *target, const struct tensor *weight, double *loss,
                          double *weight_sum)
{
    const int64_t count = d->n * d->d;
#pragma omp parallel for schedule(static) if (count * d->c >= LOSS_PARALLEL_MIN)
    for (int64_t i = 0; i < count; i++) {
        int64_t cls;
        double w = loss_position_weight(p, target, weight, i, &cls);
        if (cls < 0) {
            loss[i] = 0.0;
            continue;
        }
        int64_t n = i / d->d, k = i % d->d;
        int64_t base = n * d->c * d->d + k;
        double lp = loss_load(x, base + cls * d->d) - row_lse(d, x, base);
        if (x->dtype == ONNX_DTYPE_FLOAT)
            lp = (double)(float)lp;
        loss[i] = -lp * w;
    }
    *weight_sum = weight_sum_of(p, d, target, weight);
}

static int sce_cpu(struct op_call *c)
{
    struct loss_dims d;
    if (loss_dims_get(c, &d))
        return -1;
    const struct tensor *x = c->in[LOSS_IN_SCORES];
    if (loss_targets_check(c, c->params, c->in[LOSS_IN_TARGET], d.c))
        return -1;
    /* The log-probabilities go into the optional output when it is wanted;
     * else each position's target log-probability is computed on its own,
     * with workspace per position rather than per score (a language model's
     * logits: the whole [N*T, V] again). The same arithmetic either way. */
    struct tensor *log_prob = c->n_out > 1 ? c->out[1] : NULL;
    if (log_prob) {
        loss_log_softmax(&d, x, log_prob);
        return loss_nll_run(c, &d, log_prob);
    }
    const struct loss_params *p = c->params;
    double *loss = rnn_scratch_alloc(c, (size_t)(d.n * d.d) * sizeof(double));
    if (!loss)
        return -1;
    double weight_sum;
    sce_positions(p, &d, x, c->in[LOSS_IN_TARGET], loss_input(c, LOSS_IN_WEIGHT), loss, &weight_sum);
    if (c->n_out > 0 && c->out[0])
        loss_reduce(p, d.n * d.d, loss, weight_sum, c->out[0]);
    rnn_scratch_free(c, loss);
    return 0;
}

/* ---- gradients -------------------------------------------------------- *
 * SoftmaxCrossEntropyLossGrad (scores, target, weight?, dloss?, dlog_prob?)
 * and NegativeLogLikelihoodLossGrad (input, target, weight?, dloss?) give
 * the gradient of the first input (domain dtrexec). Only that input is
 * differentiable: targets are indices, and class weights are treated as
 * constants. Position i with class k and weight w(i) contributes
 * -u(i) * w(i) to d logp[k], where u(i) is dloss[i] (none), dloss (sum) or
 * dloss / sum of weights (mean); SCE then goes through log-softmax:
 * dx = dlogp - softmax(x) * sum_c dlogp. The log-softmax is recomputed, not
 * kept from the forward pass. */

enum { LOSS_GRAD_IN_DY = 3, LOSS_GRAD_IN_DLOG_PROB = 4 };

static int loss_grad_infer(struct op_call *c)
{
    const struct loss_params *p = c->params;
    struct loss_dims d;
    if (loss_dims_get(c, &d))
        return -1;
    const struct tensor *x = c->in[LOSS_IN_SCORES], *t = c->in[LOSS_IN_TARGET];
    const struct tensor *dy = loss_input(c, LOSS_GRAD_IN_DY), *dlp = loss_input(c, LOSS_GRAD_IN_DLOG_PROB);
    char a[96], b[96];
    if (dy) {
        int ok = dy->dtype == x->dtype && (p->reduction == LOSS_REDUCTION_NONE ? tensor_same_shape(dy, t)
                                                                               : tensor_numel(dy) == 1);
        if (!ok)
            return op_error(c, "loss gradient is %s, expected %s shaped like the loss (%s)",
                            tensor_describe(dy, a, sizeof a), onnx_dtype_name(x->dtype),
                            p->reduction == LOSS_REDUCTION_NONE ? tensor_describe(t, b, sizeof b) : "a scalar");
    }
    if (dlp && (dlp->dtype != x->dtype || !tensor_same_shape(dlp, x)))
        return op_error(c, "log_prob gradient is %s, expected %s like the scores",
                        tensor_describe(dlp, a, sizeof a), tensor_describe(x, b, sizeof b));
    if (c->n_out > 0 && c->out[0]) {
        *c->out[0] = *x;
        c->out[0]->data = NULL;
    }
    return 0;
}

static int loss_grad_run(struct op_call *c, int softmax)
{
    const struct loss_params *p = c->params;
    struct loss_dims d;
    if (loss_dims_get(c, &d))
        return -1;
    const struct tensor *x = c->in[LOSS_IN_SCORES], *t = c->in[LOSS_IN_TARGET], *w = loss_input(c, LOSS_IN_WEIGHT);
    const struct tensor *dy = loss_input(c, LOSS_GRAD_IN_DY);
    const struct tensor *dlp = softmax ? loss_input(c, LOSS_GRAD_IN_DLOG_PROB) : NULL;
    struct tensor *out = c->out[0];
    if (loss_targets_check(c, p, t, d.c))
        return -1;
    const int64_t count = d.n * d.d;
    double scale = 1.0;
    if (p->reduction == LOSS_REDUCTION_MEAN) {
        /* the same serial, index-order sum as the forward's */
        double ws = 0.0;
        for (int64_t i = 0; i < count; i++) {
            int64_t cls;
            ws += loss_position_weight(p, t, w, i, &cls);
        }
        scale = 1.0 / ws;
    }
#pragma omp parallel for schedule(static) if (count * d.c >= LOSS_PARALLEL_MIN)
    for (int64_t i = 0; i < count; i++) {
        const int64_t base = i / d.d * d.c * d.d + i % d.d;
        int64_t cls;
        double wgt = loss_position_weight(p, t, w, i, &cls);
        /* the gradient of the loss with respect to logp[cls] */
        double g_cls = 0.0;
        if (cls >= 0 && dy)
            g_cls = -wgt * scale * loss_load(dy, p->reduction == LOSS_REDUCTION_NONE ? i : 0);
        if (!softmax) {
            for (int64_t k = 0; k < d.c; k++)
                loss_store(out, base + k * d.d, k == cls ? g_cls : 0.0);
            continue;
        }
        double mx = -INFINITY, sum = 0.0, total = g_cls;
        for (int64_t k = 0; k < d.c; k++) {
            double v = loss_load(x, base + k * d.d);
            if (v > mx)
                mx = v;
        }
        for (int64_t k = 0; k < d.c; k++)
            sum += exp(loss_load(x, base + k * d.d) - mx);
        double lse = mx + log(sum);
        for (int64_t k = 0; dlp && k < d.c; k++)
            total += loss_load(dlp, base + k * d.d);
        for (int64_t k = 0; k < d.c; k++) {
            double g = (k == cls ? g_cls : 0.0) + (dlp ? loss_load(dlp, base + k * d.d) : 0.0);
            loss_store(out, base + k * d.d, g - exp(loss_load(x, base + k * d.d) - lse) * total);
        }
    }
    return 0;
}

static int sce_grad_cpu(struct op_call *c)
{
    return loss_grad_run(c, 1);
}

static int nll_grad_cpu(struct op_call *c)
{
    return loss_grad_run(c, 0);
}

static int loss_grad_emit(struct grad_ctx *g, const char *op, int softmax)
{
    const struct loss_params *p = g->fwd->params;
    if (!g->need_dx[LOSS_IN_SCORES])
        return 0;
    static const char *const reductions[] = { "none", "sum", "mean" };
    struct onnx_attr attrs[2] = {
        { .name = "reduction", .type = ONNX_ATTR_STRING, .s = (char *)reductions[p->reduction] },
        { .name = "ignore_index", .type = ONNX_ATTR_INT, .i = p->ignore_index },
    };
    int in[5] = {
        g->in[LOSS_IN_SCORES], g->in[LOSS_IN_TARGET],
        g->fwd->n_in > LOSS_IN_WEIGHT ? g->in[LOSS_IN_WEIGHT] : -1,
        g->fwd->n_out > 0 ? g->dy[0] : -1,
        softmax && g->fwd->n_out > 1 ? g->dy[1] : -1,
    };
    int dx;
    if (g->emit(g, op, attrs, p->has_ignore_index ? 2 : 1, softmax ? 5 : 4, in, 1, &dx))
        return -1;
    return g->add_dx(g, LOSS_IN_SCORES, dx);
}

static int sce_grad(struct grad_ctx *g)
{
    return loss_grad_emit(g, "SoftmaxCrossEntropyLossGrad", 1);
}

static int nll_grad(struct grad_ctx *g)
{
    return loss_grad_emit(g, "NegativeLogLikelihoodLossGrad", 0);
}

/* The gradients read scores, targets and weights; nothing of the outputs. */
#define LOSS_GRAD_SAVES_IN 0x7u

const struct op_def op_softmax_cross_entropy_loss_grad = {
    .domain = "dtrexec", .name = "SoftmaxCrossEntropyLossGrad", .since = { 1 },
    .min_in = 2, .max_in = 5, .min_out = 1, .max_out = 1,
    .parse = loss_parse, .infer = loss_grad_infer, .cost = sce_cost,
    .kernel = { [BACKEND_CPU] = sce_grad_cpu },
};

const struct op_def op_negative_log_likelihood_loss_grad = {
    .domain = "dtrexec", .name = "NegativeLogLikelihoodLossGrad", .since = { 1 },
    .min_in = 2, .max_in = 4, .min_out = 1, .max_out = 1,
    .parse = loss_parse, .infer = loss_grad_infer, .cost = nll_cost,
    .kernel = { [BACKEND_CPU] = nll_grad_cpu },
};

const struct op_def op_softmax_cross_entropy_loss = {
    .domain = "", .name = "SoftmaxCrossEntropyLoss", .since = { 12, 13 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 2,
    .parse = loss_parse, .infer = loss_infer, .cost = sce_cost,
    .kernel = { [BACKEND_CPU] = sce_cpu },
    .grad = sce_grad, .grad_saves_in = LOSS_GRAD_SAVES_IN,
};

const struct op_def op_negative_log_likelihood_loss = {
    .domain = "", .name = "NegativeLogLikelihoodLoss", .since = { 12, 13, 22 },
    .min_in = 2, .max_in = 3, .min_out = 1, .max_out = 1,
    .parse = loss_parse, .infer = loss_infer, .cost = nll_cost,
    .kernel = { [BACKEND_CPU] = nll_cpu },
    .grad = nll_grad, .grad_saves_in = LOSS_GRAD_SAVES_IN,
};
