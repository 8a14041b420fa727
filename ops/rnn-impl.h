/* ops/rnn-impl.h — internals of the recurrent (LSTM, GRU, RNN) and loss
 * (SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss) operator files.
 *
 * Kept apart from ops.h because only this family uses it: the forward kernels
 * here are called by the operators in ops/rnn.c and ops/loss.c, and the
 * gradient kernels beside them call the same code to replay a forward pass
 * while saving what the backward pass needs (gate activations, cell states,
 * hidden states). Nothing here allocates: callers hand in their
 * workspace, because kernel temporaries must come from the budgeted scratch
 * allocator of struct op_env.
 */
#ifndef DTRX_OPS_RNN_IMPL_H
#define DTRX_OPS_RNN_IMPL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "ops/ops.h"

/* Kernel workspace from the runtime's budgeted scratch allocator (plain
 * aligned malloc when the caller provides none, as unit tests do); NULL and a
 * message naming the bytes when it cannot be had. */
void *rnn_scratch_alloc(const struct op_call *c, size_t bytes);
void rnn_scratch_free(const struct op_call *c, void *ptr);

/* ---- recurrent layers ------------------------------------------------- */

enum rnn_kind {
    RNN_KIND_RNN = 0,
    RNN_KIND_GRU = 1,
    RNN_KIND_LSTM = 2,
};

enum rnn_direction {
    RNN_DIRECTION_FORWARD = 0,
    RNN_DIRECTION_REVERSE = 1,
    RNN_DIRECTION_BIDIRECTIONAL = 2,
};

/* The activation functions ONNX allows in its recurrent operators. */
enum rnn_act_kind {
    RNN_ACT_SIGMOID = 0,
    RNN_ACT_TANH,
    RNN_ACT_RELU,
    RNN_ACT_AFFINE,            /* alpha * x + beta */
    RNN_ACT_LEAKY_RELU,        /* x >= 0 ? x : alpha * x */
    RNN_ACT_THRESHOLDED_RELU,  /* x > alpha ? x : 0 */
    RNN_ACT_SCALED_TANH,       /* alpha * tanh(beta * x) */
    RNN_ACT_HARD_SIGMOID,      /* max(0, min(1, alpha * x + beta)) */
    RNN_ACT_ELU,               /* x >= 0 ? x : alpha * (exp(x) - 1) */
    RNN_ACT_SOFTSIGN,          /* x / (1 + |x|) */
    RNN_ACT_SOFTPLUS,          /* log(1 + exp(x)) */
};

struct rnn_act {
    int kind;                  /* enum rnn_act_kind */
    float alpha, beta;
};

/* Gates per kind, in ONNX's order within W, R and B:
 * LSTM i, o, f, c; GRU z, r, h; RNN the single one. */
#define RNN_MAX_GATES 4
/* Activations per direction: LSTM f, g, h; GRU f, g; RNN f. Two directions. */
#define RNN_MAX_ACTS 6

struct rnn_params {
    int kind;                  /* enum rnn_kind */
    int direction;             /* enum rnn_direction */
    int num_directions;        /* 2 for bidirectional, else 1 */
    int64_t hidden_size;       /* 0 when absent: taken from R's last dimension */
    int layout;                /* 0: X [seq, batch, in]; 1: X [batch, seq, in] (opset 14+) */
    int has_clip;
    float clip;                /* gate pre-activations are clipped to [-clip, clip] */
    int input_forget;          /* LSTM: couple the forget gate to 1 - input gate */
    int linear_before_reset;   /* GRU: apply R_h before multiplying by r */
    int acts_per_dir;
    struct rnn_act acts[RNN_MAX_ACTS];   /* [direction][acts_per_dir] */
};

static inline int rnn_gate_count(int kind)
{
    return kind == RNN_KIND_LSTM ? 4 : kind == RNN_KIND_GRU ? 3 : 1;
}

/* Sizes of one call, validated by the operator's infer. */
struct rnn_dims {
    int64_t seq, batch, input, hidden;
    int dirs;
};

/* Where one forward pass reads and writes. Inputs other than x, w, r may be
 * NULL (ONNX's omitted optional inputs: zero bias, zero initial state, no
 * peepholes, full-length sequences); so may each of y, y_h, y_c. All tensors
 * are in the operator's layout (params->layout). */
struct rnn_io {
    const float *x, *w, *r, *b;
    const int32_t *seq_lens;   /* [batch], each in [0, seq] (checked by the caller) */
    const float *initial_h, *initial_c, *p;
    float *y, *y_h, *y_c;
};

/* What a training version keeps for the backward pass; every pointer may be
 * NULL. Arrays are [dirs][seq][batch][...], indexed by the real time index t
 * of the input (not by the step count, which differs for reverse), and only
 * positions with t < seq_lens[b] are written.
 *   gates      activated gate values, G*hidden per row (LSTM i,o,f,c~; GRU z,r,h~;
 *              RNN H_t). With input_forget, f holds 1 - i.
 *   gates_pre  the same before clipping and activation (peepholes included),
 *              so the backward pass can tell clipped entries and evaluate the
 *              derivative of any activation.
 *   cells      LSTM cell state C_t, hidden per row.
 *   hiddens    H_t, hidden per row (what Y holds, but always seq-major).
 *   gru_rh     GRU: H_{t-1}·R_h^T + Rb_h, hidden per row (with
 *              linear_before_reset it is multiplied by r; without, the
 *              product is (r ⊙ H_{t-1})·R_h^T + Rb_h). */
struct rnn_saved {
    float *gates;
    float *gates_pre;
    float *cells;
    float *hiddens;
    float *gru_rh;
};

/* Validates every input of a recurrent call (forward or gradient) against
 * X, W and R and the attributes; fills d. */
int rnn_dims_get(const struct op_call *c, struct rnn_dims *d);
/* rnn_dims_get for a gradient call, which must also request every output
 * (7 for LSTM, 5 otherwise). */
int rnn_grad_dims_get(const struct op_call *c, struct rnn_dims *d);
/* Reads sequence_lens (int32 or int64, host memory) into lens, checking
 * each is in [0, seq]. */
int rnn_lens_load(const struct op_call *c, const struct rnn_dims *d, const struct tensor *lens_t,
                  int32_t *lens);

/* Floats of workspace rnn_forward_f32 needs. */
size_t rnn_work_floats(const struct rnn_params *p, const struct rnn_dims *d);

/* One forward pass of the layer described by p over the whole sequence:
 * the input projection of all time steps is one GEMM per direction, then one
 * recurrent GEMM per step. `work` holds rnn_work_floats() floats. Outputs at
 * time steps past a sequence's length are zero, and so are the final states
 * of a length-0 sequence (as in onnxruntime). Deterministic. */
void rnn_forward_f32(const struct rnn_params *p, const struct rnn_dims *d,
                     const struct rnn_io *io, struct rnn_saved *save, float *work);

/* The forward kernels (LSTM, GRU, RNN) project the input this many steps
 * at a time, and the gradient kernels (LSTMGrad, GRUGrad, RNNGrad) walk
 * back through time in chunks of this many steps, each replayed from the
 * state at its start (rnn.c says why and how many). From the shapes alone. */
int64_t rnn_forward_chunk_steps(const struct rnn_params *p, const struct rnn_dims *d);
int64_t rnn_grad_chunk_steps(const struct rnn_params *p, const struct rnn_dims *d);
/* Tests and measurements: chunks of `steps` steps for both instead (0: the
 * rules); returns the previous setting. Results depend on it in the last
 * bits: never change it while a model runs. */
int64_t rnn_chunk_steps_set(int64_t steps);

/* Applies an activation to n values in place. */
void rnn_act_apply(const struct rnn_act *a, float *x, int64_t n);

/* Scalar form, the definition the array form follows. */
static inline float rnn_act_eval(const struct rnn_act *a, float x)
{
    switch (a->kind) {
    case RNN_ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case RNN_ACT_TANH: return tanhf(x);
    case RNN_ACT_RELU: return x > 0.0f ? x : 0.0f;
    case RNN_ACT_AFFINE: return a->alpha * x + a->beta;
    case RNN_ACT_LEAKY_RELU: return x >= 0.0f ? x : a->alpha * x;
    case RNN_ACT_THRESHOLDED_RELU: return x > a->alpha ? x : 0.0f;
    case RNN_ACT_SCALED_TANH: return a->alpha * tanhf(a->beta * x);
    case RNN_ACT_HARD_SIGMOID: {
        float v = a->alpha * x + a->beta;
        return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    }
    case RNN_ACT_ELU: return x >= 0.0f ? x : a->alpha * (expf(x) - 1.0f);
    case RNN_ACT_SOFTSIGN: return x / (1.0f + fabsf(x));
    case RNN_ACT_SOFTPLUS: return x > 20.0f ? x : log1pf(expf(x));
    }
    return x;
}

/* Derivative of the activation at x (the one-sided value the forward's
 * comparisons pick at a kink: Relu has slope 0 at 0, LeakyRelu slope 1). */
static inline float rnn_act_grad(const struct rnn_act *a, float x)
{
    switch (a->kind) {
    case RNN_ACT_SIGMOID: {
        float s = 1.0f / (1.0f + expf(-x));
        return s * (1.0f - s);
    }
    case RNN_ACT_TANH: {
        float t = tanhf(x);
        return 1.0f - t * t;
    }
    case RNN_ACT_RELU: return x > 0.0f ? 1.0f : 0.0f;
    case RNN_ACT_AFFINE: return a->alpha;
    case RNN_ACT_LEAKY_RELU: return x >= 0.0f ? 1.0f : a->alpha;
    case RNN_ACT_THRESHOLDED_RELU: return x > a->alpha ? 1.0f : 0.0f;
    case RNN_ACT_SCALED_TANH: {
        float t = tanhf(a->beta * x);
        return a->alpha * a->beta * (1.0f - t * t);
    }
    case RNN_ACT_HARD_SIGMOID: {
        float v = a->alpha * x + a->beta;
        return v > 0.0f && v < 1.0f ? a->alpha : 0.0f;
    }
    case RNN_ACT_ELU: return x >= 0.0f ? 1.0f : a->alpha * expf(x);
    case RNN_ACT_SOFTSIGN: {
        float d = 1.0f + fabsf(x);
        return 1.0f / (d * d);
    }
    case RNN_ACT_SOFTPLUS: return x > 20.0f ? 1.0f : 1.0f / (1.0f + expf(-x));
    }
    return 1.0f;
}

/* ONNX's name of an activation kind, as rnn_act_parse reads it. */
const char *rnn_act_name(int kind);

/* Parses an ONNX activation name (case-insensitive); -1 if unknown. Sets the
 * default alpha/beta and says how many of each the function consumes from
 * the activation_alpha / activation_beta lists. */
int rnn_act_parse(const char *name, struct rnn_act *out, int *uses_alpha, int *uses_beta);

/* ---- losses ----------------------------------------------------------- */

enum loss_reduction {
    LOSS_REDUCTION_NONE = 0,
    LOSS_REDUCTION_SUM = 1,
    LOSS_REDUCTION_MEAN = 2,
};

struct loss_params {
    int reduction;             /* enum loss_reduction */
    int has_ignore_index;
    int64_t ignore_index;
};

/* Input [N, C, d1..dk] seen as [n, c, d] with d = d1*...*dk (1 when k = 0);
 * targets [N, d1..dk] as [n, d]. */
struct loss_dims {
    int64_t n, c, d;
};

/* Checks that every target is in [0, c) or equals ignore_index; on failure
 * writes which position holds which label through op_error and returns -1. */
int loss_targets_check(const struct op_call *call, const struct loss_params *p,
                       const struct tensor *target, int64_t classes);

/* Weight of position i (flat over [n, d]) and its class: 0 for an ignored
 * target, weight[class] with a weight tensor, else 1. *cls receives the
 * class, or -1 when ignored. Targets must have passed loss_targets_check. */
static inline double loss_position_weight(const struct loss_params *p, const struct tensor *target,
                                          const struct tensor *weight, int64_t i, int64_t *cls)
{
    int64_t t = tensor_get_int(target, i);
    if (p->has_ignore_index && t == p->ignore_index) {
        *cls = -1;
        return 0.0;
    }
    *cls = t;
    return weight ? tensor_get_double(weight, t) : 1.0;
}

/* Negative log-likelihood per position from log-probabilities `logp`
 * ([n, c, d], float or double): loss[i] = -logp[n, cls, d] * w(i) into
 * `loss` (n*d doubles), and the sum of w(i) into *weight_sum. */
void loss_nll_positions(const struct loss_params *p, const struct loss_dims *d,
                        const struct tensor *logp, const struct tensor *target,
                        const struct tensor *weight, double *loss, double *weight_sum);

/* Log-softmax over the class axis of x ([n, c, d], float or double) into
 * out (same dtype and shape). */
void loss_log_softmax(const struct loss_dims *d, const struct tensor *x, struct tensor *out);

/* Reduces per-position losses into out (dtype of out): copies for NONE, sums
 * in index order for SUM, divides the sum by weight_sum for MEAN. */
void loss_reduce(const struct loss_params *p, int64_t count, const double *loss,
                 double weight_sum, struct tensor *out);

#endif
