/* ops/cuda/elem_loss.c — CUDA kernels of SoftmaxCrossEntropyLoss,
 * NegativeLogLikelihoodLoss and their dtrexec-domain gradients (ops/loss.c),
 * and of the optimizer steps SGDUpdate, MomentumUpdate and AdamUpdate
 * (ops/optimizer.c), which update their mutated inputs in place.
 *
 * Targets are checked on the device as the CPU checks them on the host (a
 * label outside [0, C) that is not ignore_index is an error naming it); the
 * host waits for that one flag, so a loss call synchronises the stream once.
 * SCE never stores its log-probabilities unless they are an output: each
 * position's log-sum-exp is computed once and the loss, log_prob and the
 * gradient are formed from it. */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "ops/cuda/elem-impl.h"
#include "ops/train-params.h"
#include "ops/rnn-impl.h"

enum { LOSS_IN_SCORES, LOSS_IN_TARGET, LOSS_IN_WEIGHT, LOSS_IN_DY, LOSS_IN_DLOG_PROB };

static const struct tensor *loss_input(const struct op_call *c, int i)
{
    return i < c->n_in ? c->in[i] : NULL;
}

static int loss_args(const struct op_call *c, struct cuda_loss_args *a)
{
    const struct loss_params *p = c->params;
    const struct tensor *x = loss_input(c, LOSS_IN_SCORES), *t = loss_input(c, LOSS_IN_TARGET);
    const struct tensor *w = loss_input(c, LOSS_IN_WEIGHT);
    if (!x || !t || x->rank < 2)
        return op_error(c, "the scores [N, C, ...] and target inputs are required");
    if (x->dtype != ONNX_DTYPE_FLOAT && x->dtype != ONNX_DTYPE_DOUBLE)
        return op_error(c, "scores are %s; float32 and float64 are implemented",
                        onnx_dtype_name(x->dtype));
    if (t->dtype != ONNX_DTYPE_INT32 && t->dtype != ONNX_DTYPE_INT64)
        return op_error(c, "target is %s, expected int32 or int64", onnx_dtype_name(t->dtype));
    memset(a, 0, sizeof *a);
    a->dtype = x->dtype;
    a->target_dtype = t->dtype;
    a->n = x->dims[0];
    a->c = x->dims[1];
    a->d = 1;
    for (int i = 2; i < x->rank; i++)
        a->d *= x->dims[i];
    a->has_ignore = p->has_ignore_index;
    a->ignore_index = p->ignore_index;
    a->x = x->data;
    a->target = t->data;
    a->weight = w ? w->data : NULL;
    return 0;
}

/* Device scratch of a loss call: two flags, then two doubles per position. */
struct loss_scratch {
    void *block;
    unsigned long long *bad;
    double *weight_sum, *lse, *sdlp;
};

static int loss_scratch_get(struct op_call *c, const struct cuda_loss_args *a,
                            struct loss_scratch *s)
{
    int64_t count = a->n * a->d;
    s->block = cuda_elem_scratch(c, 16 + (size_t)count * 2 * sizeof(double));
    if (!s->block)
        return -1;
    s->bad = s->block;
    s->weight_sum = (double *)((char *)s->block + 8);
    s->lse = (double *)((char *)s->block + 16);
    s->sdlp = s->lse + count;
    return 0;
}

/* The CPU's loss_targets_check on the device: the first bad position, read
 * back with its label for the message. */
static int loss_targets_check_cuda(struct op_call *c, const struct cuda_loss_args *a,
                                   unsigned long long *bad_dev)
{
    const struct loss_params *p = c->params;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    unsigned long long bad;
    CUDA_TRY(c, cudaMemsetAsync(bad_dev, 0xff, sizeof bad, s));
    CUDA_TRY(c, cuda_loss_check_launch(s, a, bad_dev));
    CUDA_TRY(c, cudaMemcpyAsync(&bad, bad_dev, sizeof bad, cudaMemcpyDeviceToHost, s));
    CUDA_TRY(c, cudaStreamSynchronize(s));
    if (bad == ULLONG_MAX)
        return 0;
    int64_t label;
    if (a->target_dtype == ONNX_DTYPE_INT32) {
        int32_t v;
        CUDA_TRY(c, cudaMemcpy(&v, (const int32_t *)a->target + bad, sizeof v,
                               cudaMemcpyDeviceToHost));
        label = v;
    } else {
        CUDA_TRY(c, cudaMemcpy(&label, (const int64_t *)a->target + bad, sizeof label,
                               cudaMemcpyDeviceToHost));
    }
    if (p->has_ignore_index)
        return op_error(c, "target label %lld at flat index %lld is outside [0, %lld) "
                        "and is not ignore_index (%lld)", (long long)label, (long long)bad,
                        (long long)a->c, (long long)p->ignore_index);
    return op_error(c, "target label %lld at flat index %lld is outside [0, %lld)",
                    (long long)label, (long long)bad, (long long)a->c);
}

static int loss_forward(struct op_call *c, int softmax)
{
    const struct loss_params *p = c->params;
    struct cuda_loss_args a;
    struct loss_scratch sc;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    if (loss_args(c, &a) || loss_scratch_get(c, &a, &sc))
        return -1;
    int rc = loss_targets_check_cuda(c, &a, sc.bad);
    struct tensor *out = c->n_out > 0 ? c->out[0] : NULL;
    struct tensor *log_prob = softmax && c->n_out > 1 ? c->out[1] : NULL;
    cudaError_t e = cudaSuccess;
    if (!rc && softmax)
        e = cuda_loss_stats_launch(s, &a, NULL, sc.lse, NULL);
    if (!rc && e == cudaSuccess && log_prob)
        e = cuda_loss_log_prob_launch(s, &a, sc.lse, log_prob->data);
    if (!rc && e == cudaSuccess && out)
        e = cuda_loss_nll_launch(s, &a, softmax ? sc.lse : NULL, p->reduction, out->data, NULL);
    cuda_elem_scratch_free(c, sc.block);
    if (rc)
        return -1;
    CUDA_TRY(c, e);
    return 0;
}

int cuda_elem_softmax_cross_entropy_loss(struct op_call *c) { return loss_forward(c, 1); }
int cuda_elem_negative_log_likelihood_loss(struct op_call *c) { return loss_forward(c, 0); }

/* (scores, target, weight?, dloss?, dlog_prob?) -> d scores */
static int loss_backward(struct op_call *c, int softmax)
{
    const struct loss_params *p = c->params;
    struct cuda_loss_args a;
    struct loss_scratch sc;
    cudaStream_t s = cuda_ctx_of(c)->stream;
    const struct tensor *dy = loss_input(c, LOSS_IN_DY);
    const struct tensor *dlp = softmax ? loss_input(c, LOSS_IN_DLOG_PROB) : NULL;
    if (loss_args(c, &a) || loss_scratch_get(c, &a, &sc))
        return -1;
    int rc = loss_targets_check_cuda(c, &a, sc.bad);
    cudaError_t e = cudaSuccess;
    if (!rc && softmax)
        e = cuda_loss_stats_launch(s, &a, dlp ? dlp->data : NULL, sc.lse, sc.sdlp);
    if (!rc && e == cudaSuccess && p->reduction == LOSS_REDUCTION_MEAN)
        e = cuda_loss_nll_launch(s, &a, NULL, LOSS_REDUCTION_MEAN, NULL, sc.weight_sum);
    if (!rc && e == cudaSuccess)
        e = cuda_loss_grad_launch(s, &a, p->reduction, dy ? dy->data : NULL,
                                  dlp ? dlp->data : NULL, softmax ? sc.lse : NULL, sc.sdlp,
                                  sc.weight_sum, c->out[0]->data);
    cuda_elem_scratch_free(c, sc.block);
    if (rc)
        return -1;
    CUDA_TRY(c, e);
    return 0;
}

int cuda_elem_softmax_cross_entropy_loss_grad(struct op_call *c) { return loss_backward(c, 1); }
int cuda_elem_negative_log_likelihood_loss_grad(struct op_call *c) { return loss_backward(c, 0); }

/* ---- optimizers ------------------------------------------------------------------ */

static int optim_run(struct op_call *c, int kind, int n_state)
{
    const struct optimizer_params *p = c->params;
    if (c->n_in < 2 + n_state)
        return op_error(c, "needs the parameter, its gradient and %d state buffer(s)", n_state);
    for (int i = 0; i < 2 + n_state; i++)
        if (c->in[i]->dtype != ONNX_DTYPE_FLOAT || !tensor_same_shape(c->in[i], c->in[0]))
            return op_error(c, "input %d must be float32 shaped like the parameter", i);
    struct cuda_optim_args a = {
        .kind = kind, .n = tensor_numel(c->in[0]),
        .lr = p->lr, .momentum = p->momentum, .beta1 = p->beta1, .beta2 = p->beta2,
        .epsilon = p->epsilon, .weight_decay = p->weight_decay,
        .nesterov = p->nesterov, .decoupled = p->decoupled,
        .hf_bias_correction = p->hf_bias_correction,
        .w = c->in[0]->data, .g = c->in[1]->data,
    };
    if (kind == CUDA_OPTIM_MOMENTUM)
        a.b = c->in[2]->data;
    if (kind == CUDA_OPTIM_ADAM) {
        a.m = c->in[2]->data;
        a.v = c->in[3]->data;
        /* the bias corrections exactly as ops/optimizer.c computes them */
        double bc1 = 1 - pow(p->beta1, (double)p->step), bc2 = 1 - pow(p->beta2, (double)p->step);
        if (p->hf_bias_correction) {
            a.step_size = (float)(p->lr * sqrt(bc2) / bc1);
            a.denom_scale = 1;
        } else {
            a.step_size = (float)(p->lr / bc1);
            a.denom_scale = (float)(1 / sqrt(bc2));
        }
    }
    CUDA_TRY(c, cuda_optim_launch(cuda_ctx_of(c)->stream, &a));
    return 0;
}

int cuda_elem_sgd_update(struct op_call *c) { return optim_run(c, CUDA_OPTIM_SGD, 0); }
int cuda_elem_momentum_update(struct op_call *c) { return optim_run(c, CUDA_OPTIM_MOMENTUM, 1); }
int cuda_elem_adam_update(struct op_call *c) { return optim_run(c, CUDA_OPTIM_ADAM, 2); }
