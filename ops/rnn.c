/* ops/rnn.c — LSTM, GRU and RNN (opsets 7, 14, 22; 14 adds the batch-first
 * `layout`, 22 only widens the types).
 *
 * One forward routine serves the three layers: per direction, the input
 * projection X·W^T of every time step is a single GEMM, then each step does
 * one recurrent GEMM H_{t-1}·R^T over the batch and the gate arithmetic row by
 * row. The routine can save gate values, cell and hidden states into
 * caller-provided buffers (struct rnn_saved): the gradient kernels LSTMGrad,
 * GRUGrad and RNNGrad (domain dtrexec, at the end of this file) replay
 * exactly this code, then run backpropagation through time.
 *
 * Float32 only: OpenBLAS sgemm does the heavy lifting, and every recurrent
 * model in scope is float32; other types are refused with a message.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/rnn-impl.h"

/* Below this many gate values per step the elementwise work is not worth
 * waking OpenMP threads for. */
#define RNN_PARALLEL_MIN 8192

void *rnn_scratch_alloc(const struct op_call *c, size_t bytes)
{
    void *ptr = NULL;
    size_t rounded = (bytes + 63) / 64 * 64;
    if (!rounded)
        rounded = 64;
    if (c->env && c->env->scratch_alloc)
        ptr = c->env->scratch_alloc(c->env->ctx, rounded);
    else
        ptr = aligned_alloc(64, rounded);
    if (!ptr)
        op_error(c, "cannot get %zu bytes of kernel workspace", rounded);
    return ptr;
}

void rnn_scratch_free(const struct op_call *c, void *ptr)
{
    if (!ptr)
        return;
    if (c->env && c->env->scratch_alloc) {
        if (c->env->scratch_free)
            c->env->scratch_free(c->env->ctx, ptr);
    } else {
        free(ptr);
    }
}

/* ---- activations ------------------------------------------------------ */

static const struct {
    const char *name;
    int kind;
    float alpha, beta;         /* defaults when the lists run short */
    int uses_alpha, uses_beta;
} rnn_act_table[] = {
    { "Sigmoid", RNN_ACT_SIGMOID, 0.0f, 0.0f, 0, 0 },
    { "Tanh", RNN_ACT_TANH, 0.0f, 0.0f, 0, 0 },
    { "Relu", RNN_ACT_RELU, 0.0f, 0.0f, 0, 0 },
    { "Affine", RNN_ACT_AFFINE, 1.0f, 0.0f, 1, 1 },
    { "LeakyRelu", RNN_ACT_LEAKY_RELU, 0.01f, 0.0f, 1, 0 },
    { "ThresholdedRelu", RNN_ACT_THRESHOLDED_RELU, 1.0f, 0.0f, 1, 0 },
    { "ScaledTanh", RNN_ACT_SCALED_TANH, 1.0f, 1.0f, 1, 1 },
    { "HardSigmoid", RNN_ACT_HARD_SIGMOID, 0.2f, 0.5f, 1, 1 },
    { "Elu", RNN_ACT_ELU, 1.0f, 0.0f, 1, 0 },
    { "Softsign", RNN_ACT_SOFTSIGN, 0.0f, 0.0f, 0, 0 },
    { "Softplus", RNN_ACT_SOFTPLUS, 0.0f, 0.0f, 0, 0 },
};

static int name_equal_nocase(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char ca = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
        char cb = *b >= 'A' && *b <= 'Z' ? (char)(*b - 'A' + 'a') : *b;
        if (ca != cb)
            return 0;
    }
    return *a == *b;
}

const char *rnn_act_name(int kind)
{
    for (size_t i = 0; i < sizeof rnn_act_table / sizeof rnn_act_table[0]; i++)
        if (rnn_act_table[i].kind == kind)
            return rnn_act_table[i].name;
    return "Tanh";
}

int rnn_act_parse(const char *name, struct rnn_act *out, int *uses_alpha, int *uses_beta)
{
    for (size_t i = 0; i < sizeof rnn_act_table / sizeof rnn_act_table[0]; i++) {
        if (!name_equal_nocase(name, rnn_act_table[i].name))
            continue;
        out->kind = rnn_act_table[i].kind;
        out->alpha = rnn_act_table[i].alpha;
        out->beta = rnn_act_table[i].beta;
        *uses_alpha = rnn_act_table[i].uses_alpha;
        *uses_beta = rnn_act_table[i].uses_beta;
        return 0;
    }
    return -1;
}

void rnn_act_apply(const struct rnn_act *a, float *x, int64_t n)
{
    /* The switch sits outside the loops so that each loop vectorises. */
    switch (a->kind) {
    case RNN_ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++)
            x[i] = 1.0f / (1.0f + expf(-x[i]));
        return;
    case RNN_ACT_TANH:
        for (int64_t i = 0; i < n; i++)
            x[i] = tanhf(x[i]);
        return;
    case RNN_ACT_RELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] > 0.0f ? x[i] : 0.0f;
        return;
    default:
        for (int64_t i = 0; i < n; i++)
            x[i] = rnn_act_eval(a, x[i]);
        return;
    }
}

static void rnn_clip(float *x, int64_t n, float clip)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = x[i] < -clip ? -clip : x[i] > clip ? clip : x[i];
}

/* ---- attributes ------------------------------------------------------- */

static int rnn_parse(const struct onnx_node *node, int version, int kind, void **out,
                     char *err, size_t err_size)
{
    struct rnn_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (%s): out of memory", node->name, node->op_type);
        return -1;
    }
    p->kind = kind;

    const char *dir = onnx_node_attr_string(node, "direction", "forward");
    if (!strcmp(dir, "forward")) {
        p->direction = RNN_DIRECTION_FORWARD;
    } else if (!strcmp(dir, "reverse")) {
        p->direction = RNN_DIRECTION_REVERSE;
    } else if (!strcmp(dir, "bidirectional")) {
        p->direction = RNN_DIRECTION_BIDIRECTIONAL;
    } else {
        snprintf(err, err_size, "node '%s' (%s): direction '%s' is not one of forward, reverse, bidirectional",
                 node->name, node->op_type, dir);
        goto fail;
    }
    p->num_directions = p->direction == RNN_DIRECTION_BIDIRECTIONAL ? 2 : 1;

    p->hidden_size = onnx_node_attr_int(node, "hidden_size", 0);
    if (p->hidden_size < 0) {
        snprintf(err, err_size, "node '%s' (%s): hidden_size %lld is negative",
                 node->name, node->op_type, (long long)p->hidden_size);
        goto fail;
    }
    /* layout arrived with opset 14; older models cannot mean batch-first. */
    int64_t layout = version >= 14 ? onnx_node_attr_int(node, "layout", 0) : 0;
    if (layout != 0 && layout != 1) {
        snprintf(err, err_size, "node '%s' (%s): layout %lld is not 0 or 1",
                 node->name, node->op_type, (long long)layout);
        goto fail;
    }
    p->layout = (int)layout;

    const struct onnx_attr *clip = onnx_node_attr(node, "clip");
    if (clip) {
        if (!(clip->f > 0.0f)) {
            snprintf(err, err_size, "node '%s' (%s): clip %g must be positive",
                     node->name, node->op_type, (double)clip->f);
            goto fail;
        }
        p->has_clip = 1;
        p->clip = clip->f;
    }
    if (kind == RNN_KIND_LSTM)
        p->input_forget = onnx_node_attr_int(node, "input_forget", 0) != 0;
    if (kind == RNN_KIND_GRU)
        p->linear_before_reset = onnx_node_attr_int(node, "linear_before_reset", 0) != 0;

    static const char *const defaults[3][3] = {
        [RNN_KIND_RNN] = { "Tanh" },
        [RNN_KIND_GRU] = { "Sigmoid", "Tanh" },
        [RNN_KIND_LSTM] = { "Sigmoid", "Tanh", "Tanh" },
    };
    p->acts_per_dir = kind == RNN_KIND_LSTM ? 3 : kind == RNN_KIND_GRU ? 2 : 1;
    int want = p->acts_per_dir * p->num_directions;
    const struct onnx_attr *acts = onnx_node_attr(node, "activations");
    const struct onnx_attr *alphas = onnx_node_attr(node, "activation_alpha");
    const struct onnx_attr *betas = onnx_node_attr(node, "activation_beta");
    int n_acts = acts ? acts->n : 0;
    if (acts && n_acts != p->acts_per_dir && n_acts != want) {
        snprintf(err, err_size, "node '%s' (%s): %d activations given, expected %d (or %d per direction)",
                 node->name, node->op_type, n_acts, want, p->acts_per_dir);
        goto fail;
    }
    /* activation_alpha / activation_beta are consumed in list order by the
     * functions that take them (onnxruntime's reading of the spec); functions
     * past the end of a list keep their defaults. */
    int next_alpha = 0, next_beta = 0;
    for (int i = 0; i < want; i++) {
        const char *name = i < n_acts ? acts->strings[i] : NULL;
        if (!name) {
            if (n_acts) {   /* one list for both directions */
                p->acts[i] = p->acts[i - p->acts_per_dir];
                continue;
            }
            name = defaults[kind][i % p->acts_per_dir];
        }
        int ua, ub;
        if (rnn_act_parse(name, &p->acts[i], &ua, &ub)) {
            snprintf(err, err_size, "node '%s' (%s): activation '%s' is not one of Sigmoid, Tanh, Relu, "
                     "Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus",
                     node->name, node->op_type, name);
            goto fail;
        }
        if (ua && alphas && next_alpha < alphas->n)
            p->acts[i].alpha = alphas->floats[next_alpha++];
        if (ub && betas && next_beta < betas->n)
            p->acts[i].beta = betas->floats[next_beta++];
    }
    *out = p;
    return 0;
fail:
    free(p);
    return -1;
}

static int lstm_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    return rnn_parse(node, version, RNN_KIND_LSTM, params, err, err_size);
}

static int gru_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    return rnn_parse(node, version, RNN_KIND_GRU, params, err, err_size);
}

static int simple_rnn_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    return rnn_parse(node, version, RNN_KIND_RNN, params, err, err_size);
}

/* ---- shapes ----------------------------------------------------------- */

enum { RNN_IN_X, RNN_IN_W, RNN_IN_R, RNN_IN_B, RNN_IN_SEQ_LENS, RNN_IN_INITIAL_H,
       RNN_IN_INITIAL_C, RNN_IN_P };

static const struct tensor *rnn_input(const struct op_call *c, int i)
{
    return i < c->n_in ? c->in[i] : NULL;
}

static int rnn_check_dims(const struct op_call *c, const struct tensor *t, const char *what,
                          int rank, const int64_t *dims)
{
    int ok = t->rank == rank;
    for (int i = 0; ok && i < rank; i++)
        ok = t->dims[i] == dims[i];
    if (ok)
        return 0;
    char got[96], want[96] = "[";
    size_t used = 1;
    for (int i = 0; i < rank; i++)
        used += (size_t)snprintf(want + used, sizeof want - used, i ? ",%lld" : "%lld", (long long)dims[i]);
    snprintf(want + used, sizeof want - used, "]");
    return op_error(c, "%s is %s, expected shape %s", what, tensor_describe(t, got, sizeof got), want);
}

/* Validates every input against X, W and R and the attributes; fills d. */
int rnn_dims_get(const struct op_call *c, struct rnn_dims *d)
{
    const struct rnn_params *p = c->params;
    const struct tensor *x = rnn_input(c, RNN_IN_X), *w = rnn_input(c, RNN_IN_W),
                        *r = rnn_input(c, RNN_IN_R);
    char buf[96];
    if (!x || !w || !r)
        return op_error(c, "inputs X, W and R are required");
    if (x->dtype != ONNX_DTYPE_FLOAT)
        return op_error(c, "X is %s; only float32 recurrent layers are implemented",
                        tensor_describe(x, buf, sizeof buf));
    if (x->rank != 3)
        return op_error(c, "X is %s, expected rank 3", tensor_describe(x, buf, sizeof buf));
    const int g = rnn_gate_count(p->kind);
    d->dirs = p->num_directions;
    d->seq = x->dims[p->layout ? 1 : 0];
    d->batch = x->dims[p->layout ? 0 : 1];
    d->input = x->dims[2];
    if (r->rank != 3)
        return op_error(c, "R is %s, expected rank 3", tensor_describe(r, buf, sizeof buf));
    d->hidden = p->hidden_size ? p->hidden_size : r->dims[2];

    const int64_t h = d->hidden, dirs = d->dirs;
    const struct { int idx; const char *name; int rank; int64_t dims[3]; } shapes[] = {
        { RNN_IN_W, "W", 3, { dirs, g * h, d->input } },
        { RNN_IN_R, "R", 3, { dirs, g * h, h } },
        { RNN_IN_B, "B", 2, { dirs, 2 * g * h } },
        { RNN_IN_SEQ_LENS, "sequence_lens", 1, { d->batch } },
        { RNN_IN_INITIAL_H, "initial_h", 3,
          { p->layout ? d->batch : dirs, p->layout ? dirs : d->batch, h } },
        { RNN_IN_INITIAL_C, "initial_c", 3,
          { p->layout ? d->batch : dirs, p->layout ? dirs : d->batch, h } },
        { RNN_IN_P, "P", 2, { dirs, 3 * h } },
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const struct tensor *t = rnn_input(c, shapes[i].idx);
        if (!t)
            continue;
        if (rnn_check_dims(c, t, shapes[i].name, shapes[i].rank, shapes[i].dims))
            return -1;
        if (shapes[i].idx == RNN_IN_SEQ_LENS) {
            if (t->dtype != ONNX_DTYPE_INT32 && t->dtype != ONNX_DTYPE_INT64)
                return op_error(c, "sequence_lens is %s, expected int32",
                                tensor_describe(t, buf, sizeof buf));
        } else if (t->dtype != x->dtype) {
            return op_error(c, "%s is %s, expected the type of X (%s)", shapes[i].name,
                            tensor_describe(t, buf, sizeof buf), onnx_dtype_name(x->dtype));
        }
    }
    return 0;
}

static void rnn_set_shape(struct tensor *t, int dtype, int rank, const int64_t *dims)
{
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
}

static int rnn_infer(struct op_call *c)
{
    const struct rnn_params *p = c->params;
    struct rnn_dims d;
    if (rnn_dims_get(c, &d))
        return -1;
    int dtype = c->in[RNN_IN_X]->dtype;
    if (c->n_out > 0 && c->out[0]) {
        int64_t y0[4] = { d.seq, d.dirs, d.batch, d.hidden };
        int64_t y1[4] = { d.batch, d.seq, d.dirs, d.hidden };
        rnn_set_shape(c->out[0], dtype, 4, p->layout ? y1 : y0);
    }
    int64_t s0[3] = { d.dirs, d.batch, d.hidden };
    int64_t s1[3] = { d.batch, d.dirs, d.hidden };
    for (int i = 1; i < c->n_out && i < 3; i++)
        if (c->out[i])
            rnn_set_shape(c->out[i], dtype, 3, p->layout ? s1 : s0);
    return 0;
}

static struct op_cost rnn_cost(const struct op_call *c)
{
    const struct rnn_params *p = c->params;
    struct op_cost cost = cost_memory(c);
    struct rnn_dims d;
    if (!c->in || c->n_in < 3 || !c->in[0] || !c->in[2] || c->in[0]->rank != 3 || c->in[2]->rank != 3)
        return cost;
    d.seq = c->in[0]->dims[p->layout ? 1 : 0];
    d.batch = c->in[0]->dims[p->layout ? 0 : 1];
    d.input = c->in[0]->dims[2];
    d.hidden = c->in[2]->dims[2];
    double gh = (double)rnn_gate_count(p->kind) * (double)d.hidden;
    double rows = (double)d.seq * (double)d.batch * p->num_directions;
    /* two GEMMs (input and recurrent) plus about ten flops per gate value */
    cost.flops = rows * gh * (2.0 * (double)d.input + 2.0 * (double)d.hidden + 10.0);
    return cost;
}

/* ---- the forward pass ------------------------------------------------- */

size_t rnn_work_floats(const struct rnn_params *p, const struct rnn_dims *d)
{
    size_t gh = (size_t)rnn_gate_count(p->kind) * (size_t)d->hidden;
    size_t b = (size_t)d->batch, bh = b * (size_t)d->hidden;
    return (size_t)d->seq * b * gh   /* input projection of every step */
           + b * gh                  /* recurrent projection of one step, then the gates */
           + gh                      /* summed biases */
           + 4 * bh;                 /* H, C, and GRU's r ⊙ H and R_h products */
}

struct rnn_step_ctx {
    const struct rnn_params *p;
    const struct rnn_dims *d;
    const struct rnn_io *io;
    struct rnn_saved *save;
    int dir, reverse;
    const struct rnn_act *acts;
    const float *xp, *wb, *rb, *peep;
    float *hr, *h, *c, *tmp, *rh;
    /* chunked (the gradients' replay): xp and the saved arrays hold only
     * the steps from s0 on, one direction, indexed by step (rnn_chunk_row) */
    int chunked;
    int64_t s0;
};

/* Time index of batch row b at step s, or -1 when its sequence has ended. */
static int64_t rnn_time(const struct rnn_step_ctx *k, int64_t s, int64_t b)
{
    int64_t len = k->io->seq_lens ? k->io->seq_lens[b] : k->d->seq;
    if (s >= len)
        return -1;
    return k->reverse ? len - 1 - s : s;
}

static int64_t rnn_x_row(const struct rnn_step_ctx *k, int64_t t, int64_t b)
{
    return k->p->layout ? b * k->d->seq + t : t * k->d->batch + b;
}

/* The row of (t, b) in a chunk that starts at step s0: step-major, so that
 * the steps of a chunk are contiguous whatever the direction, layout and
 * sequence lengths (time t of row b is step t, or len - 1 - t reversed). */
static int64_t rnn_chunk_row(const struct rnn_dims *d, const int32_t *lens, int reverse, int64_t s0, int64_t t,
                             int64_t b)
{
    int64_t len = lens ? lens[b] : d->seq;
    int64_t s = reverse ? len - 1 - t : t;
    return (s - s0) * d->batch + b;
}

/* Row of the input projection xp for (t, b). */
static int64_t rnn_xp_row(const struct rnn_step_ctx *k, int64_t t, int64_t b)
{
    return k->chunked ? rnn_chunk_row(k->d, k->io->seq_lens, k->reverse, k->s0, t, b) : rnn_x_row(k, t, b);
}

static float *rnn_saved_row(const struct rnn_step_ctx *k, float *base, int64_t t, int64_t b, int64_t width)
{
    if (k->chunked)
        return base + rnn_chunk_row(k->d, k->io->seq_lens, k->reverse, k->s0, t, b) * width;
    return base + (((int64_t)k->dir * k->d->seq + t) * k->d->batch + b) * width;
}

static void rnn_write_y(const struct rnn_step_ctx *k, int64_t t, int64_t b, const float *hb)
{
    const struct rnn_dims *d = k->d;
    if (k->save && k->save->hiddens)
        memcpy(rnn_saved_row(k, k->save->hiddens, t, b, d->hidden), hb, (size_t)d->hidden * sizeof(float));
    if (!k->io->y)
        return;
    int64_t off = k->p->layout ? ((b * d->seq + t) * d->dirs + k->dir) * d->hidden
                               : ((t * d->dirs + k->dir) * d->batch + b) * d->hidden;
    memcpy(k->io->y + off, hb, (size_t)d->hidden * sizeof(float));
}

static void rnn_save(const struct rnn_step_ctx *k, float *base, int64_t t, int64_t b, int64_t width,
                     int64_t offset, const float *src, int64_t n)
{
    if (base)
        memcpy(rnn_saved_row(k, base, t, b, width) + offset, src, (size_t)n * sizeof(float));
}

static void lstm_step_row(const struct rnn_step_ctx *k, int64_t t, int64_t b)
{
    const int64_t h = k->d->hidden, gh = 4 * h;
    float *g = k->hr + b * gh;
    const float *xr = k->xp + rnn_xp_row(k, t, b) * gh;
    float *gi = g, *go = g + h, *gf = g + 2 * h, *gc = g + 3 * h;
    float *cb = k->c + b * h, *hb = k->h + b * h;
    float *pre = k->save ? k->save->gates_pre : NULL;

    for (int64_t j = 0; j < gh; j++)
        g[j] += xr[j];
    if (k->peep) {
        /* P is [i, o, f]; the input and forget peepholes see C_{t-1}. */
        for (int64_t j = 0; j < h; j++) {
            gi[j] += k->peep[j] * cb[j];
            gf[j] += k->peep[2 * h + j] * cb[j];
        }
    }
    rnn_save(k, pre, t, b, gh, 0, gi, h);
    rnn_save(k, pre, t, b, gh, 2 * h, gf, 2 * h);
    if (k->p->has_clip) {
        rnn_clip(gi, h, k->p->clip);
        rnn_clip(gf, 2 * h, k->p->clip);
    }
    rnn_act_apply(&k->acts[0], gi, h);
    if (k->p->input_forget) {
        for (int64_t j = 0; j < h; j++)
            gf[j] = 1.0f - gi[j];
    } else {
        rnn_act_apply(&k->acts[0], gf, h);
    }
    rnn_act_apply(&k->acts[1], gc, h);
    for (int64_t j = 0; j < h; j++)
        cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
    if (k->peep)   /* the output peephole sees the new C_t */
        for (int64_t j = 0; j < h; j++)
            go[j] += k->peep[h + j] * cb[j];
    rnn_save(k, pre, t, b, gh, h, go, h);
    if (k->p->has_clip)
        rnn_clip(go, h, k->p->clip);
    rnn_act_apply(&k->acts[0], go, h);
    memcpy(hb, cb, (size_t)h * sizeof(float));
    rnn_act_apply(&k->acts[2], hb, h);
    for (int64_t j = 0; j < h; j++)
        hb[j] *= go[j];
    if (k->save) {
        rnn_save(k, k->save->gates, t, b, gh, 0, g, gh);
        rnn_save(k, k->save->cells, t, b, h, 0, cb, h);
    }
    rnn_write_y(k, t, b, hb);
}

/* GRU, first half: z and r, then what the candidate's R_h product needs. */
static void gru_gates_row(const struct rnn_step_ctx *k, int64_t t, int64_t b)
{
    const int64_t h = k->d->hidden, gh = 3 * h;
    float *g = k->hr + b * gh;
    const float *xr = k->xp + rnn_xp_row(k, t, b) * gh;
    for (int64_t j = 0; j < 2 * h; j++)
        g[j] += xr[j];
    if (k->save)
        rnn_save(k, k->save->gates_pre, t, b, gh, 0, g, 2 * h);
    if (k->p->has_clip)
        rnn_clip(g, 2 * h, k->p->clip);
    rnn_act_apply(&k->acts[0], g, 2 * h);
    const float *r = g + h, *hb = k->h + b * h;
    if (!k->p->linear_before_reset) {
        float *tb = k->tmp + b * h;
        for (int64_t j = 0; j < h; j++)
            tb[j] = r[j] * hb[j];
    }
}

/* GRU, second half: the candidate h~ and the new state. rh holds the R_h
 * product (with Rb_h added) of this row. */
static void gru_update_row(const struct rnn_step_ctx *k, int64_t t, int64_t b)
{
    const int64_t h = k->d->hidden, gh = 3 * h;
    float *g = k->hr + b * gh;
    const float *xr = k->xp + rnn_xp_row(k, t, b) * gh;
    const float *z = g, *r = g + h, *rh = k->rh + b * h;
    float *gc = g + 2 * h, *hb = k->h + b * h;
    if (k->p->linear_before_reset)
        for (int64_t j = 0; j < h; j++)
            gc[j] = xr[2 * h + j] + r[j] * rh[j];
    else
        for (int64_t j = 0; j < h; j++)
            gc[j] = xr[2 * h + j] + rh[j];
    if (k->save) {
        rnn_save(k, k->save->gates_pre, t, b, gh, 2 * h, gc, h);
        rnn_save(k, k->save->gru_rh, t, b, h, 0, rh, h);
    }
    if (k->p->has_clip)
        rnn_clip(gc, h, k->p->clip);
    rnn_act_apply(&k->acts[1], gc, h);
    for (int64_t j = 0; j < h; j++)
        hb[j] = (1.0f - z[j]) * gc[j] + z[j] * hb[j];
    if (k->save)
        rnn_save(k, k->save->gates, t, b, gh, 0, g, gh);
    rnn_write_y(k, t, b, hb);
}

static void simple_rnn_step_row(const struct rnn_step_ctx *k, int64_t t, int64_t b)
{
    const int64_t h = k->d->hidden;
    float *g = k->hr + b * h;
    const float *xr = k->xp + rnn_xp_row(k, t, b) * h;
    float *hb = k->h + b * h;
    for (int64_t j = 0; j < h; j++)
        g[j] += xr[j];
    if (k->save)
        rnn_save(k, k->save->gates_pre, t, b, h, 0, g, h);
    if (k->p->has_clip)
        rnn_clip(g, h, k->p->clip);
    rnn_act_apply(&k->acts[0], g, h);
    memcpy(hb, g, (size_t)h * sizeof(float));
    if (k->save)
        rnn_save(k, k->save->gates, t, b, h, 0, g, h);
    rnn_write_y(k, t, b, hb);
}

/* C = A · B^T for row-major A [m, kdim] and B [n, kdim]; ldc is C's row stride. */
static void rnn_gemm_nt(int64_t m, int64_t n, int64_t kdim, const float *a, const float *b, float *c,
                        int64_t ldc)
{
    if (m <= 0 || n <= 0)
        return;
    if (kdim <= 0) {
        for (int64_t i = 0; i < m; i++)
            memset(c + i * ldc, 0, (size_t)n * sizeof(float));
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)n, (int)kdim, 1.0f, a, (int)kdim,
                b, (int)kdim, 0.0f, c, (int)ldc);
}

/* Copies the initial state of direction `dir` (or zeros) into the
 * seq-major working buffer [batch, hidden]. */
static void rnn_state_init(const struct rnn_params *p, const struct rnn_dims *d, int dir,
                           const float *init, float *state)
{
    const size_t row = (size_t)d->hidden * sizeof(float);
    for (int64_t b = 0; b < d->batch; b++) {
        float *dst = state + b * d->hidden;
        if (!init) {
            memset(dst, 0, row);
            continue;
        }
        int64_t off = p->layout ? (b * d->dirs + dir) * d->hidden : ((int64_t)dir * d->batch + b) * d->hidden;
        memcpy(dst, init + off, row);
    }
}

/* A sequence of length 0 ends in state 0, not in its initial state: that is
 * what onnxruntime does, and the spec says nothing either way. */
static void rnn_state_store(const struct rnn_params *p, const struct rnn_dims *d, int dir,
                            const int32_t *seq_lens, const float *state, float *out)
{
    if (!out)
        return;
    for (int64_t b = 0; b < d->batch; b++) {
        int64_t off = p->layout ? (b * d->dirs + dir) * d->hidden : ((int64_t)dir * d->batch + b) * d->hidden;
        if (seq_lens && seq_lens[b] == 0)
            memset(out + off, 0, (size_t)d->hidden * sizeof(float));
        else
            memcpy(out + off, state + b * d->hidden, (size_t)d->hidden * sizeof(float));
    }
}

/* Points k's working buffers into work: the input projection of `rows`
 * rows, then the per-step buffers (rnn_work_floats' layout for rows =
 * seq * batch). Returns the summed-bias buffer. */
static float *rnn_work_split(struct rnn_step_ctx *k, float *work, int64_t rows)
{
    const struct rnn_dims *d = k->d;
    const int64_t gh = rnn_gate_count(k->p->kind) * d->hidden, h = d->hidden;
    float *xp = work;
    k->xp = xp;
    k->hr = xp + rows * gh;
    float *bias = k->hr + d->batch * gh;
    k->h = bias + gh;
    k->c = k->h + d->batch * h;
    k->tmp = k->c + d->batch * h;
    k->rh = k->tmp + d->batch * h;
    return bias;
}

/* Direction dir into k (activations, peepholes, whether reversed) and its
 * summed biases into bias. Both biases fold into the input projection,
 * except GRU's Rb_h, which belongs inside r ⊙ (...) with linear_before_reset
 * and is added to the R_h product in either case. */
static void rnn_dir_begin(struct rnn_step_ctx *k, int dir, float *bias)
{
    const struct rnn_params *p = k->p;
    const int64_t h = k->d->hidden, gh = rnn_gate_count(p->kind) * h;
    k->dir = dir;
    k->reverse = p->direction == RNN_DIRECTION_REVERSE || (p->direction == RNN_DIRECTION_BIDIRECTIONAL && dir == 1);
    k->acts = p->acts + dir * p->acts_per_dir;
    k->peep = k->io->p ? k->io->p + dir * 3 * h : NULL;
    const float *wb = k->io->b ? k->io->b + dir * 2 * gh : NULL;
    const float *rb = wb ? wb + gh : NULL;
    k->wb = wb;
    k->rb = rb;
    for (int64_t j = 0; j < gh; j++)
        bias[j] = wb ? wb[j] + (p->kind == RNN_KIND_GRU && j >= 2 * h ? 0.0f : rb[j]) : 0.0f;
}

/* xp = x · W^T + bias for `rows` rows of x (in xp's row order). */
static void rnn_project(const struct rnn_step_ctx *k, const float *x, int64_t rows, const float *bias)
{
    const int64_t gh = rnn_gate_count(k->p->kind) * k->d->hidden;
    const float *w = k->io->w + k->dir * gh * k->d->input;
    float *xp = (float *)k->xp;
    rnn_gemm_nt(rows, gh, k->d->input, x, w, xp, gh);
#pragma omp parallel for schedule(static) if (rows * gh >= RNN_PARALLEL_MIN)
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < gh; j++)
            xp[i * gh + j] += bias[j];
}

/* Steps s0 .. s1 - 1 of k's direction, from the state in k->h (and k->c). */
static void rnn_steps(struct rnn_step_ctx *k, int64_t s0, int64_t s1)
{
    const struct rnn_params *p = k->p;
    const struct rnn_dims *d = k->d;
    const int64_t h = d->hidden, gh = rnn_gate_count(p->kind) * h;
    const float *r = k->io->r + k->dir * gh * h, *rb = k->rb;
    const int parallel = d->batch * gh >= RNN_PARALLEL_MIN;
    for (int64_t s = s0; s < s1; s++) {
        if (p->kind == RNN_KIND_LSTM) {
            rnn_gemm_nt(d->batch, gh, h, k->h, r, k->hr, gh);
#pragma omp parallel for schedule(static) if (parallel)
            for (int64_t b = 0; b < d->batch; b++) {
                int64_t t = rnn_time(k, s, b);
                if (t >= 0)
                    lstm_step_row(k, t, b);
            }
        } else if (p->kind == RNN_KIND_RNN) {
            rnn_gemm_nt(d->batch, gh, h, k->h, r, k->hr, gh);
#pragma omp parallel for schedule(static) if (parallel)
            for (int64_t b = 0; b < d->batch; b++) {
                int64_t t = rnn_time(k, s, b);
                if (t >= 0)
                    simple_rnn_step_row(k, t, b);
            }
        } else {
            const int lbr = p->linear_before_reset;
            /* With linear_before_reset the candidate's R_h product needs
             * only H_{t-1} and joins the z, r GEMM; without, it needs
             * r ⊙ H_{t-1} and so waits for r. */
            rnn_gemm_nt(d->batch, lbr ? gh : 2 * h, h, k->h, r, k->hr, gh);
#pragma omp parallel for schedule(static) if (parallel)
            for (int64_t b = 0; b < d->batch; b++) {
                int64_t t = rnn_time(k, s, b);
                if (t >= 0)
                    gru_gates_row(k, t, b);
                else if (!lbr)
                    memset(k->tmp + b * h, 0, (size_t)h * sizeof(float));
            }
            if (!lbr)
                rnn_gemm_nt(d->batch, h, h, k->tmp, r + 2 * h * h, k->rh, h);
            for (int64_t b = 0; b < d->batch; b++) {
                float *rhb = k->rh + b * h;
                const float *src = lbr ? k->hr + b * gh + 2 * h : rhb;
                for (int64_t j = 0; j < h; j++)
                    rhb[j] = src[j] + (rb ? rb[2 * h + j] : 0.0f);
            }
#pragma omp parallel for schedule(static) if (parallel)
            for (int64_t b = 0; b < d->batch; b++) {
                int64_t t = rnn_time(k, s, b);
                if (t >= 0)
                    gru_update_row(k, t, b);
            }
        }
    }
}

void rnn_forward_f32(const struct rnn_params *p, const struct rnn_dims *d,
                     const struct rnn_io *io, struct rnn_saved *save, float *work)
{
    const int64_t rows = d->seq * d->batch;
    struct rnn_step_ctx k = { .p = p, .d = d, .io = io, .save = save };
    float *bias = rnn_work_split(&k, work, rows);

    /* Rows past a sequence's end are never visited; their Y must read 0. */
    if (io->y && io->seq_lens)
        memset(io->y, 0, (size_t)(rows * d->dirs * d->hidden) * sizeof(float));
    for (int dir = 0; dir < d->dirs; dir++) {
        rnn_dir_begin(&k, dir, bias);
        rnn_project(&k, io->x, rows, bias);
        rnn_state_init(p, d, dir, io->initial_h, k.h);
        if (p->kind == RNN_KIND_LSTM)
            rnn_state_init(p, d, dir, io->initial_c, k.c);
        rnn_steps(&k, 0, d->seq);
        rnn_state_store(p, d, dir, io->seq_lens, k.h, io->y_h);
        if (p->kind == RNN_KIND_LSTM)
            rnn_state_store(p, d, dir, io->seq_lens, k.c, io->y_c);
    }
}

/* Steps per chunk of time. The forward kernels projected the input of
 * every step before the first (seq * batch * gates * hidden floats), and
 * the gradient kernels saved every step's gates for the backward walk:
 * an LSTM language model (batch 32, 128 steps, hidden 256) asked 17 MB of
 * workspace for LSTM and 76 MB for LSTMGrad, and no budget below 0.7x of
 * its peak trained. Now the forward projects one chunk of steps at a time;
 * the gradients' replayed forward keeps only the states at chunk starts,
 * and each chunk, last first, is replayed again from its start with its
 * gates saved, then walked back: buffers O(chunk), at the cost of a second
 * forward pass (whatever the chunk count: more chunks only make the dX/dW
 * GEMMs shorter). Chunks hold at most 1/32 of the whole sequence's buffers,
 * or 1 MiB where that is more (one chunk for small layers, which then cost
 * no second pass); from the shapes alone, so a recomputation takes the
 * same chunks and gives the same bits. */
#define RNN_CHUNK_PARTS 32
#define RNN_CHUNK_MIN_BYTES ((int64_t)1 << 20)
static int64_t rnn_chunk_steps_forced;

int64_t rnn_chunk_steps_set(int64_t steps)
{
    int64_t old = rnn_chunk_steps_forced;
    rnn_chunk_steps_forced = steps > 0 ? steps : 0;
    return old;
}

/* Floats per step of the chunk buffers: the input projection, gates,
 * gates_pre and their gradients (4 gh), the saved states and GRU's R_h
 * products and their gradients, and a gathered X and dX. */
static int64_t rnn_chunk_step_floats(const struct rnn_params *p, const struct rnn_dims *d)
{
    const int64_t h = d->hidden, gh = rnn_gate_count(p->kind) * h;
    const int64_t states = p->kind == RNN_KIND_LSTM ? 2 * h : p->kind == RNN_KIND_GRU ? 3 * h : h;
    return d->batch * (4 * gh + states + 2 * d->input);
}

/* Steps per chunk for buffers of per_step_floats floats a step. */
static int64_t rnn_chunk_steps(const struct rnn_dims *d, int64_t per_step_floats)
{
    if (d->seq < 1)
        return 1;
    if (rnn_chunk_steps_forced)
        return rnn_chunk_steps_forced < d->seq ? rnn_chunk_steps_forced : d->seq;
    return op_chunk_items(d->seq, (int64_t)sizeof(float) * per_step_floats, RNN_CHUNK_PARTS, RNN_CHUNK_MIN_BYTES);
}

int64_t rnn_grad_chunk_steps(const struct rnn_params *p, const struct rnn_dims *d)
{
    return rnn_chunk_steps(d, rnn_chunk_step_floats(p, d));
}

/* The forward's: the input projection and a gathered X. */
int64_t rnn_forward_chunk_steps(const struct rnn_params *p, const struct rnn_dims *d)
{
    return rnn_chunk_steps(d, d->batch * (rnn_gate_count(p->kind) * d->hidden + d->input));
}

/* Gathers the X rows of steps s0 .. s0 + steps - 1 into step-major order
 * (zeros for rows whose sequence has ended), or scatters a chunk's dX rows
 * back, adding them in. */
static void rnn_chunk_gather(const struct rnn_step_ctx *k, int64_t s0, int64_t steps, const float *x, float *xg)
{
    const struct rnn_dims *d = k->d;
    const size_t row = (size_t)d->input * sizeof(float);
    for (int64_t s = s0; s < s0 + steps; s++)
        for (int64_t b = 0; b < d->batch; b++) {
            int64_t t = rnn_time(k, s, b);
            float *dst = xg + ((s - s0) * d->batch + b) * d->input;
            if (t >= 0)
                memcpy(dst, x + rnn_x_row(k, t, b) * d->input, row);
            else
                memset(dst, 0, row);
        }
}

static void rnn_chunk_scatter_add(const struct rnn_step_ctx *k, int64_t s0, int64_t steps, const float *dxg,
                                  float *dx)
{
    const struct rnn_dims *d = k->d;
    for (int64_t s = s0; s < s0 + steps; s++)
        for (int64_t b = 0; b < d->batch; b++) {
            int64_t t = rnn_time(k, s, b);
            if (t < 0)
                continue;
            const float *src = dxg + ((s - s0) * d->batch + b) * d->input;
            float *dst = dx + rnn_x_row(k, t, b) * d->input;
            for (int64_t j = 0; j < d->input; j++)
                dst[j] += src[j];
        }
}

/* The input projection of steps s0 .. s0 + steps - 1 into k->xp: of X's
 * own rows where the chunk is a block of them (seq-major, forward, full
 * lengths), else of the rows gathered into xg. Returns the rows used. */
static const float *rnn_chunk_project(const struct rnn_step_ctx *k, int gather, int64_t s0, int64_t steps,
                                      float *xg, const float *bias)
{
    const float *rows = k->io->x + s0 * k->d->batch * k->d->input;
    if (gather) {
        rnn_chunk_gather(k, s0, steps, k->io->x, xg);
        rows = xg;
    }
    rnn_project(k, rows, steps * k->d->batch, bias);
    return rows;
}

/* rnn_forward_f32 (without saving) one chunk of `steps` steps at a time:
 * work holds rnn_work_floats() floats for a sequence of `steps`, xg
 * steps * batch * input floats for the gathered rows of X. */
static void rnn_forward_chunked(const struct rnn_params *p, const struct rnn_dims *d, const struct rnn_io *io,
                                int64_t steps, float *work, float *xg)
{
    struct rnn_step_ctx k = { .p = p, .d = d, .io = io, .chunked = 1 };
    float *bias = rnn_work_split(&k, work, steps * d->batch);
    if (io->y && io->seq_lens)
        memset(io->y, 0, (size_t)(d->seq * d->batch * d->dirs * d->hidden) * sizeof(float));
    for (int dir = 0; dir < d->dirs; dir++) {
        rnn_dir_begin(&k, dir, bias);
        const int gather = p->layout || k.reverse || io->seq_lens;
        rnn_state_init(p, d, dir, io->initial_h, k.h);
        if (p->kind == RNN_KIND_LSTM)
            rnn_state_init(p, d, dir, io->initial_c, k.c);
        for (k.s0 = 0; k.s0 < d->seq; k.s0 += steps) {
            int64_t s1 = k.s0 + steps < d->seq ? k.s0 + steps : d->seq;
            rnn_chunk_project(&k, gather, k.s0, s1 - k.s0, xg, bias);
            rnn_steps(&k, k.s0, s1);
        }
        rnn_state_store(p, d, dir, io->seq_lens, k.h, io->y_h);
        if (p->kind == RNN_KIND_LSTM)
            rnn_state_store(p, d, dir, io->seq_lens, k.c, io->y_c);
    }
}

/* ---- the kernel ------------------------------------------------------- */

static const float *rnn_data(const struct op_call *c, int i)
{
    const struct tensor *t = rnn_input(c, i);
    return t ? (const float *)t->data : NULL;
}

/* Reads sequence_lens (int32 or int64) into lens, checking each is in
 * [0, seq]. */
int rnn_lens_load(const struct op_call *c, const struct rnn_dims *d, const struct tensor *lens_t,
                  int32_t *lens)
{
    for (int64_t b = 0; b < d->batch; b++) {
        int64_t v = tensor_get_int(lens_t, b);
        if (v < 0 || v > d->seq)
            return op_error(c, "sequence_lens[%lld] = %lld is outside [0, %lld] (the sequence length of X)",
                            (long long)b, (long long)v, (long long)d->seq);
        lens[b] = (int32_t)v;
    }
    return 0;
}

static int rnn_cpu(struct op_call *c)
{
    const struct rnn_params *p = c->params;
    struct rnn_dims d;
    if (rnn_dims_get(c, &d))
        return -1;
    const struct tensor *lens_t = rnn_input(c, RNN_IN_SEQ_LENS);
    const int64_t steps = rnn_forward_chunk_steps(p, &d);
    struct rnn_dims dc = d;
    dc.seq = steps;
    /* one chunk: the whole sequence projected at once, rnn_forward_f32 */
    size_t n_gather = steps < d.seq ? (size_t)(steps * d.batch * d.input) : 0;
    size_t n_work = rnn_work_floats(p, &dc) + n_gather;
    size_t bytes = n_work * sizeof(float) + (lens_t ? (size_t)d.batch * sizeof(int32_t) : 0);
    float *work = rnn_scratch_alloc(c, bytes);
    if (!work)
        return -1;
    int32_t *lens = NULL;
    if (lens_t) {
        lens = (int32_t *)(work + n_work);
        if (rnn_lens_load(c, &d, lens_t, lens)) {
            rnn_scratch_free(c, work);
            return -1;
        }
    }
    struct tensor *y = c->n_out > 0 ? c->out[0] : NULL;
    struct tensor *y_h = c->n_out > 1 ? c->out[1] : NULL;
    struct tensor *y_c = c->n_out > 2 && p->kind == RNN_KIND_LSTM ? c->out[2] : NULL;
    struct rnn_io io = {
        .x = rnn_data(c, RNN_IN_X),
        .w = rnn_data(c, RNN_IN_W),
        .r = rnn_data(c, RNN_IN_R),
        .b = rnn_data(c, RNN_IN_B),
        .seq_lens = lens,
        .initial_h = rnn_data(c, RNN_IN_INITIAL_H),
        .initial_c = p->kind == RNN_KIND_LSTM ? rnn_data(c, RNN_IN_INITIAL_C) : NULL,
        .p = p->kind == RNN_KIND_LSTM ? rnn_data(c, RNN_IN_P) : NULL,
        .y = y ? y->data : NULL,
        .y_h = y_h ? y_h->data : NULL,
        .y_c = y_c ? y_c->data : NULL,
    };
    if (steps < d.seq)
        rnn_forward_chunked(p, &d, &io, steps, work, work + rnn_work_floats(p, &dc));
    else
        rnn_forward_f32(p, &d, &io, NULL, work);
    rnn_scratch_free(c, work);
    return 0;
}

/* ---- gradients -------------------------------------------------------- *
 * LSTMGrad, GRUGrad and RNNGrad (domain dtrexec) take the forward inputs
 * (X, W, R, B, sequence_lens, initial_h, initial_c, P; omitted ones missing)
 * then dY, dY_h, dY_c, and produce dX, dW, dR, dB, dinitial_h (and for LSTM
 * dinitial_c, dP). They replay the forward pass with rnn_forward_f32 saving
 * gates into scratch memory instead of keeping activations alive between
 * the passes: the closure is then a function of the forward inputs alone,
 * which is what DTR needs to recompute it. Backpropagation through time
 * walks the steps in reverse processing order; per step one GEMM carries the
 * gradient to H_{t-1} and one accumulates dR, and after the walk one GEMM
 * each gives dX and dW from the gate gradients of every step. Clipped gate
 * entries pass no gradient, as the forward's clamp is flat there. */

enum { RNN_GRAD_IN_DY = 8, RNN_GRAD_IN_DY_H = 9, RNN_GRAD_IN_DY_C = 10, RNN_GRAD_N_IN = 11 };
enum { RNN_GRAD_OUT_DX, RNN_GRAD_OUT_DW, RNN_GRAD_OUT_DR, RNN_GRAD_OUT_DB, RNN_GRAD_OUT_DINITIAL_H,
       RNN_GRAD_OUT_DINITIAL_C, RNN_GRAD_OUT_DP };

/* C (+)= op(A) · op(B), row-major, skipped when empty. Always accumulates:
 * the gradient outputs start at zero. */
static void bptt_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t kdim, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float *c, int64_t ldc)
{
    if (m <= 0 || n <= 0 || kdim <= 0)
        return;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans,
                (int)m, (int)n, (int)kdim, 1.0f, a, (int)lda, b, (int)ldb, 1.0f, c, (int)ldc);
}

struct rnn_bptt {
    const struct rnn_params *p;
    const struct rnn_dims *d;
    const struct rnn_io *io;
    const struct rnn_saved *sv;
    const float *dy, *dy_h, *dy_c;
    int dir, reverse;
    const struct rnn_act *acts;
    const float *peep, *zeros;
    /* per chunk of steps: gate gradients in the chunk's step-major row
     * order (rnn_chunk_row; the x side: pre-activation gradients), GRU's
     * R_h-product gradients */
    float *dg_all, *drh_all;
    /* the chunk's first step, and the states before it ([batch, hidden]) */
    int64_t s0;
    const float *ckpt_h, *ckpt_c;
    /* per step, [batch, ...] with zero rows for ended sequences: the
     * recurrent-side gate gradients, H_{t-1}, the R_h GEMM's operand */
    float *dgs, *hprev, *hin;
    /* per batch row: running dH and dC, GEMM results, GRU's direct dH_{t-1}
     * part, peephole gradients summed over that row's steps */
    float *dh, *dc, *tmp, *tmp2, *part, *dp_rows;
};

static int64_t bptt_len(const struct rnn_bptt *k, int64_t b)
{
    return k->io->seq_lens ? k->io->seq_lens[b] : k->d->seq;
}

static int64_t bptt_time(const struct rnn_bptt *k, int64_t s, int64_t b)
{
    int64_t len = bptt_len(k, b);
    if (s >= len)
        return -1;
    return k->reverse ? len - 1 - s : s;
}

/* Row of (t, b) in the chunk's buffers (the saved values, dg_all, drh_all). */
static int64_t bptt_row(const struct rnn_bptt *k, int64_t t, int64_t b)
{
    return rnn_chunk_row(k->d, k->io->seq_lens, k->reverse, k->s0, t, b);
}

static const float *bptt_saved(const struct rnn_bptt *k, const float *base, int64_t t, int64_t b, int64_t width)
{
    return base + bptt_row(k, t, b) * width;
}

static int64_t bptt_state_off(const struct rnn_bptt *k, int64_t b)
{
    const struct rnn_dims *d = k->d;
    return k->p->layout ? (b * d->dirs + k->dir) * d->hidden : ((int64_t)k->dir * d->batch + b) * d->hidden;
}

/* The state before time t of row b: the previous step's saved state, the
 * state the chunk started from (its first step), else the initial state
 * (zeros when omitted). */
static const float *bptt_prev(const struct rnn_bptt *k, const float *saved, const float *ckpt, const float *init,
                              int64_t t, int64_t b)
{
    int64_t s = k->reverse ? bptt_len(k, b) - 1 - t : t;
    if (s > k->s0)
        return bptt_saved(k, saved, k->reverse ? t + 1 : t - 1, b, k->d->hidden);
    if (s > 0)
        return ckpt + b * k->d->hidden;
    return init ? init + bptt_state_off(k, b) : k->zeros;
}

/* dY at (t, b) of this direction, or NULL. */
static const float *bptt_dy(const struct rnn_bptt *k, int64_t t, int64_t b)
{
    const struct rnn_dims *d = k->d;
    if (!k->dy)
        return NULL;
    return k->dy + (k->p->layout ? ((b * d->seq + t) * d->dirs + k->dir) * d->hidden
                                 : ((t * d->dirs + k->dir) * d->batch + b) * d->hidden);
}

/* Derivative of a gate's clip-then-activate at its pre-clip value. */
static float bptt_gate_grad(const struct rnn_bptt *k, const struct rnn_act *a, float pre)
{
    if (k->p->has_clip && (pre < -k->p->clip || pre > k->p->clip))
        return 0.0f;
    return rnn_act_grad(a, pre);
}

static void lstm_back_row(const struct rnn_bptt *k, int64_t t, int64_t b)
{
    const int64_t h = k->d->hidden, gh = 4 * h;
    const float *g = bptt_saved(k, k->sv->gates, t, b, gh), *pre = bptt_saved(k, k->sv->gates_pre, t, b, gh);
    const float *ct = bptt_saved(k, k->sv->cells, t, b, h);
    const float *cp = bptt_prev(k, k->sv->cells, k->ckpt_c, k->io->initial_c, t, b);
    const float *hp = bptt_prev(k, k->sv->hiddens, k->ckpt_h, k->io->initial_h, t, b);
    const float *dy = bptt_dy(k, t, b), *peep = k->peep;
    float *dh = k->dh + b * h, *dc = k->dc + b * h, *dpr = k->dp_rows + b * 3 * h;
    float *dg = k->dg_all + bptt_row(k, t, b) * gh;
    const struct rnn_act *fa = &k->acts[0], *ga = &k->acts[1], *ha = &k->acts[2];
    for (int64_t j = 0; j < h; j++) {
        float dhj = dh[j] + (dy ? dy[j] : 0.0f);
        float gi = g[j], go = g[h + j], gf = g[2 * h + j], gc = g[3 * h + j];
        float d_o = dhj * rnn_act_eval(ha, ct[j]);
        float dpo = d_o * bptt_gate_grad(k, fa, pre[h + j]);
        float dct = dc[j] + dhj * go * rnn_act_grad(ha, ct[j]);
        if (peep)   /* the output peephole read C_t */
            dct += dpo * peep[h + j];
        float di = dct * gc, dgc = dct * gi, df = dct * cp[j], dcp = dct * gf, dpf = 0.0f;
        if (k->p->input_forget)   /* f = 1 - i */
            di -= df;
        else
            dpf = df * bptt_gate_grad(k, fa, pre[2 * h + j]);
        float dpi = di * bptt_gate_grad(k, fa, pre[j]);
        float dpc = dgc * bptt_gate_grad(k, ga, pre[3 * h + j]);
        if (peep) {
            dcp += dpi * peep[j] + dpf * peep[2 * h + j];
            dpr[j] += dpi * cp[j];
            dpr[h + j] += dpo * ct[j];
            dpr[2 * h + j] += dpf * cp[j];
        }
        dc[j] = dcp;
        dg[j] = dpi;
        dg[h + j] = dpo;
        dg[2 * h + j] = dpf;
        dg[3 * h + j] = dpc;
    }
    memcpy(k->dgs + b * gh, dg, (size_t)gh * sizeof(float));
    memcpy(k->hprev + b * h, hp, (size_t)h * sizeof(float));
}

static void simple_rnn_back_row(const struct rnn_bptt *k, int64_t t, int64_t b)
{
    const int64_t h = k->d->hidden;
    const float *pre = bptt_saved(k, k->sv->gates_pre, t, b, h);
    const float *hp = bptt_prev(k, k->sv->hiddens, k->ckpt_h, k->io->initial_h, t, b);
    const float *dy = bptt_dy(k, t, b);
    const float *dh = k->dh + b * h;
    float *dg = k->dg_all + bptt_row(k, t, b) * h;
    for (int64_t j = 0; j < h; j++)
        dg[j] = (dh[j] + (dy ? dy[j] : 0.0f)) * bptt_gate_grad(k, &k->acts[0], pre[j]);
    memcpy(k->dgs + b * h, dg, (size_t)h * sizeof(float));
    memcpy(k->hprev + b * h, hp, (size_t)h * sizeof(float));
}

/* GRU, first half: everything up to the candidate's R_h product. dgs holds
 * [dz, dr (linear_before_reset only), d rh] until gru_back_row_gates. */
static void gru_back_row_candidate(const struct rnn_bptt *k, int64_t t, int64_t b)
{
    const int64_t h = k->d->hidden, gh = 3 * h;
    const int lbr = k->p->linear_before_reset;
    const float *g = bptt_saved(k, k->sv->gates, t, b, gh), *pre = bptt_saved(k, k->sv->gates_pre, t, b, gh);
    const float *rh = bptt_saved(k, k->sv->gru_rh, t, b, h);
    const float *hp = bptt_prev(k, k->sv->hiddens, k->ckpt_h, k->io->initial_h, t, b);
    const float *dy = bptt_dy(k, t, b);
    const float *dh = k->dh + b * h;
    float *dg = k->dg_all + bptt_row(k, t, b) * gh, *drh = k->drh_all + bptt_row(k, t, b) * h;
    float *dgs = k->dgs + b * gh, *part = k->part + b * h, *hin = k->hin + b * h;
    for (int64_t j = 0; j < h; j++) {
        float dhj = dh[j] + (dy ? dy[j] : 0.0f);
        float z = g[j], r = g[h + j], hc = g[2 * h + j];
        float dph = dhj * (1.0f - z) * bptt_gate_grad(k, &k->acts[1], pre[2 * h + j]);
        part[j] = dhj * z;
        dgs[j] = dhj * (hp[j] - hc);
        /* with linear_before_reset h~ = f(xh + r ⊙ rh); without, rh already
         * holds (r ⊙ H_{t-1})·R_h^T and r's gradient needs a GEMM first */
        dgs[h + j] = lbr ? dph * rh[j] : 0.0f;
        dgs[2 * h + j] = drh[j] = lbr ? dph * r : dph;
        hin[j] = lbr ? hp[j] : r * hp[j];
        dg[2 * h + j] = dph;
    }
    memcpy(k->hprev + b * h, hp, (size_t)h * sizeof(float));
}

/* GRU, second half: z and r through their activations. tmp2 holds
 * d(r ⊙ H_{t-1}) = d rh · R_h without linear_before_reset. */
static void gru_back_row_gates(const struct rnn_bptt *k, int64_t t, int64_t b)
{
    const int64_t h = k->d->hidden, gh = 3 * h;
    const float *g = bptt_saved(k, k->sv->gates, t, b, gh), *pre = bptt_saved(k, k->sv->gates_pre, t, b, gh);
    const float *hp = k->hprev + b * h, *tmp2 = k->tmp2 + b * h;
    float *dg = k->dg_all + bptt_row(k, t, b) * gh;
    float *dgs = k->dgs + b * gh, *part = k->part + b * h;
    for (int64_t j = 0; j < h; j++) {
        if (!k->p->linear_before_reset) {
            dgs[h + j] = tmp2[j] * hp[j];
            part[j] += tmp2[j] * g[h + j];
        }
        dgs[j] *= bptt_gate_grad(k, &k->acts[0], pre[j]);
        dgs[h + j] *= bptt_gate_grad(k, &k->acts[0], pre[h + j]);
        dg[j] = dgs[j];
        dg[h + j] = dgs[h + j];
    }
}

/* The start of one direction's walk: dH and dC from dY_h and dY_c (a
 * length-0 sequence's final state is 0 whatever came in: no gradient). */
static void rnn_bptt_begin(struct rnn_bptt *k)
{
    const struct rnn_dims *d = k->d;
    const int64_t h = d->hidden;
    memset(k->dp_rows, 0, (size_t)(d->batch * 3 * h) * sizeof(float));
    for (int64_t b = 0; b < d->batch; b++) {
        int live = bptt_len(k, b) > 0;
        const int64_t off = bptt_state_off(k, b);
        for (int64_t j = 0; j < h; j++) {
            k->dh[b * h + j] = live && k->dy_h ? k->dy_h[off + j] : 0.0f;
            k->dc[b * h + j] = live && k->dy_c ? k->dy_c[off + j] : 0.0f;
        }
    }
}

/* Steps s1 - 1 down to k->s0 of the walk, whose saved values (k->sv) hold
 * those steps; the gate gradients land in k->dg_all (and k->drh_all). */
static void rnn_bptt_steps(struct rnn_bptt *k, const float *r, float *dr, int64_t s1)
{
    const struct rnn_params *p = k->p;
    const struct rnn_dims *d = k->d;
    const int64_t h = d->hidden, gh = rnn_gate_count(p->kind) * h, rows = (s1 - k->s0) * d->batch;
    const int lstm = p->kind == RNN_KIND_LSTM, gru = p->kind == RNN_KIND_GRU;
    const int parallel = d->batch * gh >= RNN_PARALLEL_MIN;

    memset(k->dg_all, 0, (size_t)(rows * gh) * sizeof(float));
    if (gru)
        memset(k->drh_all, 0, (size_t)(rows * h) * sizeof(float));
    for (int64_t s = s1 - 1; s >= k->s0; s--) {
        memset(k->dgs, 0, (size_t)(d->batch * gh) * sizeof(float));
        memset(k->hprev, 0, (size_t)(d->batch * h) * sizeof(float));
        memset(k->hin, 0, (size_t)(d->batch * h) * sizeof(float));
        memset(k->tmp, 0, (size_t)(d->batch * h) * sizeof(float));
        int64_t k_rec = gh;   /* columns of dgs that reach H_{t-1} through R */
        if (lstm) {
#pragma omp parallel for schedule(static) if (parallel)
            for (int64_t b = 0; b < d->batch; b++) {
                int64_t t = bptt_time(k, s, b);
                if (t >= 0)
                    lstm_back_row(k, t, b);
            }
        } else if (!gru) {
#pragma omp parallel for schedule(static) if (parallel)
            for (int64_t b = 0; b < d->batch; b++) {
                int64_t t = bptt_time(k, s, b);
                if (t >= 0)
                    simple_rnn_back_row(k, t, b);
            }
        } else {
#pragma omp parallel for schedule(static) if (parallel)
            for (int64_t b = 0; b < d->batch; b++) {
                int64_t t = bptt_time(k, s, b);
                if (t >= 0)
                    gru_back_row_candidate(k, t, b);
            }
            if (!p->linear_before_reset) {
                memset(k->tmp2, 0, (size_t)(d->batch * h) * sizeof(float));
                bptt_gemm(0, 0, d->batch, h, h, k->dgs + 2 * h, gh, r + 2 * h * h, h, k->tmp2, h);
                k_rec = 2 * h;   /* H_{t-1} reached R_h only through r ⊙ H_{t-1} */
            }
#pragma omp parallel for schedule(static) if (parallel)
            for (int64_t b = 0; b < d->batch; b++) {
                int64_t t = bptt_time(k, s, b);
                if (t >= 0)
                    gru_back_row_gates(k, t, b);
            }
        }
        /* dR += dgs^T · H_{t-1} (GRU's R_h block: · the R_h product's operand) */
        if (gru) {
            bptt_gemm(1, 0, 2 * h, h, d->batch, k->dgs, gh, k->hprev, h, dr, h);
            bptt_gemm(1, 0, h, h, d->batch, k->dgs + 2 * h, gh, k->hin, h, dr + 2 * h * h, h);
        } else {
            bptt_gemm(1, 0, gh, h, d->batch, k->dgs, gh, k->hprev, h, dr, h);
        }
        /* dH_{t-1} = dgs · R (+ GRU's direct part) for rows that ran */
        bptt_gemm(0, 0, d->batch, h, k_rec, k->dgs, gh, r, h, k->tmp, h);
        for (int64_t b = 0; b < d->batch; b++) {
            if (bptt_time(k, s, b) < 0)
                continue;
            for (int64_t j = 0; j < h; j++)
                k->dh[b * h + j] = k->tmp[b * h + j] + (gru ? k->part[b * h + j] : 0.0f);
        }
    }
}

/* The chunk's share of dX, dW and dB from its gate gradients (`rows` rows
 * in step-major order): xg is the chunk's X in that order; dxg, when not
 * NULL, where its dX goes before the rows are added into dx (a gathered
 * chunk), else dx is the chunk's own rows of dX. Biases: both halves see
 * the x-side gate gradients, except GRU's Rb_h, which sits inside the R_h
 * product; summed in row order, chunk by chunk. */
static void rnn_bptt_chunk_params(const struct rnn_bptt *k, int64_t rows, const float *xg, const float *w,
                                  float *dxg, float *dx, float *dw, float *db)
{
    const struct rnn_params *p = k->p;
    const struct rnn_dims *d = k->d;
    const int64_t h = d->hidden, gh = rnn_gate_count(p->kind) * h;
    if (dxg) {
        memset(dxg, 0, (size_t)(rows * d->input) * sizeof(float));
        bptt_gemm(0, 0, rows, d->input, gh, k->dg_all, gh, w, d->input, dxg, d->input);
    } else {
        bptt_gemm(0, 0, rows, d->input, gh, k->dg_all, gh, w, d->input, dx, d->input);
    }
    bptt_gemm(1, 0, gh, d->input, rows, k->dg_all, gh, xg, d->input, dw, d->input);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < gh; j++)
            db[j] += k->dg_all[i * gh + j];
    if (p->kind == RNN_KIND_GRU)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < h; j++)
                db[gh + 2 * h + j] += k->drh_all[i * h + j];
}

/* The end of one direction's walk: the recurrent bias halves, the initial
 * states' and the peepholes' gradients. */
static void rnn_bptt_end(const struct rnn_bptt *k, float *db, float *dinit_h, float *dinit_c, float *dp)
{
    const struct rnn_dims *d = k->d;
    const int64_t h = d->hidden, gh = rnn_gate_count(k->p->kind) * h;
    const int64_t copied = k->p->kind == RNN_KIND_GRU ? 2 * h : gh;
    for (int64_t j = 0; j < copied; j++)
        db[gh + j] = db[j];
    for (int64_t b = 0; b < d->batch; b++) {
        const int64_t off = bptt_state_off(k, b);
        int live = bptt_len(k, b) > 0;
        for (int64_t j = 0; j < h; j++) {
            dinit_h[off + j] = live ? k->dh[b * h + j] : 0.0f;
            if (dinit_c)
                dinit_c[off + j] = live ? k->dc[b * h + j] : 0.0f;
        }
        for (int64_t j = 0; dp && j < 3 * h; j++)
            dp[j] += k->dp_rows[b * 3 * h + j];
    }
}

/* Checks a gradient input against the shape of the forward output it
 * belongs to. */
static int rnn_grad_check(const struct op_call *c, int idx, const char *what, int rank, const int64_t *dims)
{
    const struct tensor *t = rnn_input(c, idx);
    if (!t)
        return 0;
    if (t->dtype != ONNX_DTYPE_FLOAT) {
        char buf[96];
        return op_error(c, "%s is %s, expected float32", what, tensor_describe(t, buf, sizeof buf));
    }
    return rnn_check_dims(c, t, what, rank, dims);
}

static int rnn_grad_infer(struct op_call *c)
{
    const struct rnn_params *p = c->params;
    struct rnn_dims d;
    if (rnn_dims_get(c, &d))
        return -1;
    const int64_t gh = rnn_gate_count(p->kind) * d.hidden;
    int64_t y0[4] = { d.seq, d.dirs, d.batch, d.hidden }, y1[4] = { d.batch, d.seq, d.dirs, d.hidden };
    int64_t s0[3] = { d.dirs, d.batch, d.hidden }, s1[3] = { d.batch, d.dirs, d.hidden };
    const int64_t *ys = p->layout ? y1 : y0, *ss = p->layout ? s1 : s0;
    if (rnn_grad_check(c, RNN_GRAD_IN_DY, "dY", 4, ys) || rnn_grad_check(c, RNN_GRAD_IN_DY_H, "dY_h", 3, ss) ||
        rnn_grad_check(c, RNN_GRAD_IN_DY_C, "dY_c", 3, ss))
        return -1;
    const int64_t b_dims[2] = { d.dirs, 2 * gh }, p_dims[2] = { d.dirs, 3 * d.hidden };
    for (int i = 0; i < c->n_out; i++) {
        if (!c->out[i])
            continue;
        switch (i) {
        case RNN_GRAD_OUT_DX: *c->out[i] = *c->in[RNN_IN_X]; break;
        case RNN_GRAD_OUT_DW: *c->out[i] = *c->in[RNN_IN_W]; break;
        case RNN_GRAD_OUT_DR: *c->out[i] = *c->in[RNN_IN_R]; break;
        case RNN_GRAD_OUT_DB: rnn_set_shape(c->out[i], ONNX_DTYPE_FLOAT, 2, b_dims); break;
        case RNN_GRAD_OUT_DP: rnn_set_shape(c->out[i], ONNX_DTYPE_FLOAT, 2, p_dims); break;
        default: rnn_set_shape(c->out[i], ONNX_DTYPE_FLOAT, 3, ss); break;
        }
        c->out[i]->data = NULL;
    }
    return 0;
}

static struct op_cost rnn_grad_cost(const struct op_call *c)
{
    struct op_cost cost = rnn_cost(c);
    cost.flops *= 3.0;   /* the replayed forward, then about twice its work backwards */
    return cost;
}

int rnn_grad_dims_get(const struct op_call *c, struct rnn_dims *d)
{
    const struct rnn_params *p = c->params;
    if (rnn_dims_get(c, d))
        return -1;
    for (int i = 0; i < (p->kind == RNN_KIND_LSTM ? 7 : 5); i++)
        if (i >= c->n_out || !c->out[i])
            return op_error(c, "gradient output %d is missing; every output is required", i);
    return 0;
}

static int rnn_grad_cpu(struct op_call *c)
{
    const struct rnn_params *p = c->params;
    struct rnn_dims d;
    if (rnn_grad_dims_get(c, &d))
        return -1;
    const int lstm = p->kind == RNN_KIND_LSTM, gru = p->kind == RNN_KIND_GRU;
    const size_t h = (size_t)d.hidden, gh = (size_t)rnn_gate_count(p->kind) * h, batch = (size_t)d.batch;
    const int64_t steps = rnn_grad_chunk_steps(p, &d), n_chunks = (d.seq + steps - 1) / steps;
    const size_t rows = (size_t)steps * batch;
    struct rnn_dims dc = d;
    dc.seq = steps;
    const size_t sizes[] = {
        rnn_work_floats(p, &dc),            /* one chunk's input projection, the step buffers */
        rows * gh, rows * gh,               /* gates, gates_pre */
        lstm ? rows * h : 0,                /* cells */
        rows * h,                           /* hiddens */
        gru ? rows * h : 0,                 /* gru_rh */
        rows * gh, gru ? rows * h : 0,      /* dg_all, drh_all */
        batch * gh, batch * h, batch * h,   /* dgs, hprev, hin */
        batch * h, batch * h, batch * h, batch * h, batch * h,   /* dh, dc, tmp, tmp2, part */
        batch * 3 * h, h,                   /* dp_rows, zeros */
        rows * (size_t)d.input, rows * (size_t)d.input,          /* gathered X and dX */
        (size_t)n_chunks * batch * h * (lstm ? 2 : 1),           /* states at chunk starts */
        batch,                              /* sequence lengths (int32) */
    };
    enum { N_BUF = sizeof sizes / sizeof sizes[0] };
    size_t total = 0;
    for (int i = 0; i < N_BUF; i++)
        total += sizes[i];
    float *block = rnn_scratch_alloc(c, total * sizeof(float));
    if (!block)
        return -1;
    float *buf[N_BUF];
    size_t off = 0;
    for (int i = 0; i < N_BUF; off += sizes[i], i++)
        buf[i] = block + off;
    memset(buf[17], 0, h * sizeof(float));

    const struct tensor *lens_t = rnn_input(c, RNN_IN_SEQ_LENS);
    int32_t *lens = NULL;
    if (lens_t) {
        lens = (int32_t *)buf[21];
        if (rnn_lens_load(c, &d, lens_t, lens)) {
            rnn_scratch_free(c, block);
            return -1;
        }
    }
    struct rnn_io io = {
        .x = rnn_data(c, RNN_IN_X),
        .w = rnn_data(c, RNN_IN_W),
        .r = rnn_data(c, RNN_IN_R),
        .b = rnn_data(c, RNN_IN_B),
        .seq_lens = lens,
        .initial_h = rnn_data(c, RNN_IN_INITIAL_H),
        .initial_c = lstm ? rnn_data(c, RNN_IN_INITIAL_C) : NULL,
        .p = lstm ? rnn_data(c, RNN_IN_P) : NULL,
    };
    struct rnn_saved sv = { .gates = buf[1], .gates_pre = buf[2], .cells = lstm ? buf[3] : NULL,
                            .hiddens = buf[4], .gru_rh = gru ? buf[5] : NULL };

    float *out[7] = { 0 };
    for (int i = 0; i < c->n_out && i < 7; i++) {
        out[i] = c->out[i] ? c->out[i]->data : NULL;
        if (out[i])
            memset(out[i], 0, tensor_size_bytes(c->out[i]));
    }
    struct rnn_bptt k = {
        .p = p, .d = &d, .io = &io, .sv = &sv,
        .dy = rnn_data(c, RNN_GRAD_IN_DY), .dy_h = rnn_data(c, RNN_GRAD_IN_DY_H),
        .dy_c = lstm ? rnn_data(c, RNN_GRAD_IN_DY_C) : NULL,
        .zeros = buf[17], .dg_all = buf[6], .drh_all = buf[7], .dgs = buf[8], .hprev = buf[9], .hin = buf[10],
        .dh = buf[11], .dc = buf[12], .tmp = buf[13], .tmp2 = buf[14], .part = buf[15], .dp_rows = buf[16],
    };
    struct rnn_step_ctx f = { .p = p, .d = &d, .io = &io, .chunked = 1 };
    float *bias = rnn_work_split(&f, buf[0], (int64_t)rows);
    float *xg = buf[18], *dxg = buf[19], *ckpt = buf[20];
    const size_t state = batch * h;
    for (int dir = 0; dir < d.dirs; dir++) {
        rnn_dir_begin(&f, dir, bias);
        const int gather = p->layout || f.reverse || lens;
        const float *w = io.w + dir * gh * (size_t)d.input, *r = io.r + dir * gh * h;
        float *dw = out[RNN_GRAD_OUT_DW] + dir * gh * (size_t)d.input, *dr = out[RNN_GRAD_OUT_DR] + dir * gh * h;
        float *db = out[RNN_GRAD_OUT_DB] + dir * 2 * gh;
        /* The replayed forward, keeping the states at every chunk's start
         * (one chunk: just the initial states, and no pass of its own). */
        rnn_state_init(p, &d, dir, io.initial_h, f.h);
        if (lstm)
            rnn_state_init(p, &d, dir, io.initial_c, f.c);
        f.save = NULL;
        for (int64_t i = 0; i < n_chunks; i++) {
            float *ch = ckpt + (size_t)i * state * (lstm ? 2 : 1);
            memcpy(ch, f.h, state * sizeof(float));
            if (lstm)
                memcpy(ch + state, f.c, state * sizeof(float));
            if (n_chunks == 1)
                break;
            f.s0 = i * steps;
            int64_t s1 = f.s0 + steps < d.seq ? f.s0 + steps : d.seq;
            rnn_chunk_project(&f, gather, f.s0, s1 - f.s0, xg, bias);
            rnn_steps(&f, f.s0, s1);
        }
        /* Backwards, chunk by chunk: replay it with its gates saved, walk it. */
        k.dir = dir;
        k.reverse = f.reverse;
        k.acts = f.acts;
        k.peep = f.peep;
        rnn_bptt_begin(&k);
        f.save = &sv;
        for (int64_t i = n_chunks - 1; i >= 0; i--) {
            const float *ch = ckpt + (size_t)i * state * (lstm ? 2 : 1);
            f.s0 = k.s0 = i * steps;
            int64_t s1 = f.s0 + steps < d.seq ? f.s0 + steps : d.seq, n_rows = (s1 - f.s0) * d.batch;
            memcpy(f.h, ch, state * sizeof(float));
            if (lstm)
                memcpy(f.c, ch + state, state * sizeof(float));
            k.ckpt_h = ch;
            k.ckpt_c = lstm ? ch + state : NULL;
            const float *xrows = rnn_chunk_project(&f, gather, f.s0, s1 - f.s0, xg, bias);
            rnn_steps(&f, f.s0, s1);
            rnn_bptt_steps(&k, r, dr, s1);
            float *dx = out[RNN_GRAD_OUT_DX];
            rnn_bptt_chunk_params(&k, n_rows, xrows, w, gather ? dxg : NULL,
                                  gather ? dx : dx + f.s0 * d.batch * d.input, dw, db);
            if (gather)
                rnn_chunk_scatter_add(&f, f.s0, s1 - f.s0, dxg, dx);
        }
        rnn_bptt_end(&k, db, out[RNN_GRAD_OUT_DINITIAL_H], out[RNN_GRAD_OUT_DINITIAL_C],
                     out[RNN_GRAD_OUT_DP] ? out[RNN_GRAD_OUT_DP] + dir * 3 * h : NULL);
    }
    rnn_scratch_free(c, block);
    return 0;
}

/* The gradient op's attributes, rebuilt from the parsed forward parameters
 * so that they do not depend on how the forward node spelled them. */
static int rnn_grad(struct grad_ctx *g)
{
    const struct rnn_params *p = g->fwd->params;
    const int lstm = p->kind == RNN_KIND_LSTM;
    static const char *const dir_names[] = { "forward", "reverse", "bidirectional" };
    static const char *const op_names[] = { [RNN_KIND_RNN] = "RNNGrad", [RNN_KIND_GRU] = "GRUGrad",
                                            [RNN_KIND_LSTM] = "LSTMGrad" };
    char *act_names[RNN_MAX_ACTS];
    float alphas[RNN_MAX_ACTS], betas[RNN_MAX_ACTS];
    int n_acts = p->acts_per_dir * p->num_directions, n_alpha = 0, n_beta = 0;
    for (int i = 0; i < n_acts; i++) {
        struct rnn_act probe;
        int ua, ub;
        act_names[i] = (char *)rnn_act_name(p->acts[i].kind);
        rnn_act_parse(act_names[i], &probe, &ua, &ub);
        if (ua)
            alphas[n_alpha++] = p->acts[i].alpha;
        if (ub)
            betas[n_beta++] = p->acts[i].beta;
    }
    struct onnx_attr attrs[9];
    int n = 0;
    attrs[n++] = (struct onnx_attr){ .name = "direction", .type = ONNX_ATTR_STRING,
                                     .s = (char *)dir_names[p->direction] };
    attrs[n++] = (struct onnx_attr){ .name = "hidden_size", .type = ONNX_ATTR_INT, .i = p->hidden_size };
    attrs[n++] = (struct onnx_attr){ .name = "layout", .type = ONNX_ATTR_INT, .i = p->layout };
    attrs[n++] = (struct onnx_attr){ .name = "activations", .type = ONNX_ATTR_STRINGS, .n = n_acts,
                                     .strings = act_names };
    if (n_alpha)
        attrs[n++] = (struct onnx_attr){ .name = "activation_alpha", .type = ONNX_ATTR_FLOATS, .n = n_alpha,
                                         .floats = alphas };
    if (n_beta)
        attrs[n++] = (struct onnx_attr){ .name = "activation_beta", .type = ONNX_ATTR_FLOATS, .n = n_beta,
                                         .floats = betas };
    if (p->has_clip)
        attrs[n++] = (struct onnx_attr){ .name = "clip", .type = ONNX_ATTR_FLOAT, .f = p->clip };
    if (lstm)
        attrs[n++] = (struct onnx_attr){ .name = "input_forget", .type = ONNX_ATTR_INT, .i = p->input_forget };
    if (p->kind == RNN_KIND_GRU)
        attrs[n++] = (struct onnx_attr){ .name = "linear_before_reset", .type = ONNX_ATTR_INT,
                                         .i = p->linear_before_reset };

    const int n_fwd = lstm ? 8 : 6, n_dy = lstm ? 3 : 2;
    int in[RNN_GRAD_N_IN];
    for (int i = 0; i < RNN_GRAD_IN_DY; i++)
        in[i] = i < n_fwd && i < g->fwd->n_in ? g->in[i] : -1;
    for (int j = 0; j < 3; j++)
        in[RNN_GRAD_IN_DY + j] = j < n_dy && j < g->fwd->n_out && g->out[j] >= 0 ? g->dy[j] : -1;
    int out[7];
    const int n_out = lstm ? 7 : 5;
    if (g->emit(g, op_names[p->kind], attrs, n, RNN_GRAD_N_IN, in, n_out, out))
        return -1;
    for (int i = 0; i < n_fwd && i < g->fwd->n_in; i++) {
        if (i == RNN_IN_SEQ_LENS || g->in[i] < 0 || !g->need_dx[i])
            continue;
        if (g->add_dx(g, i, out[i < RNN_IN_SEQ_LENS ? i : i - 1]))
            return -1;
    }
    return 0;
}

/* Gradient ops parse the attributes rnn_grad writes, at the newest
 * semantics (layout included). */
static int lstm_grad_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    return rnn_parse(node, 22, RNN_KIND_LSTM, params, err, err_size);
}

static int gru_grad_parse(const struct onnx_node *node, int version, void **params, char *err, size_t err_size)
{
    return rnn_parse(node, 22, RNN_KIND_GRU, params, err, err_size);
}

static int simple_rnn_grad_parse(const struct onnx_node *node, int version, void **params, char *err,
                                 size_t err_size)
{
    return rnn_parse(node, 22, RNN_KIND_RNN, params, err, err_size);
}

/* The backward kernel replays the forward from the inputs, so it keeps every
 * input and no output. */
#define RNN_GRAD_SAVES_IN 0xffu

const struct op_def op_lstm_grad = {
    .domain = "dtrexec", .name = "LSTMGrad", .since = { 1 },
    .min_in = 3, .max_in = RNN_GRAD_N_IN, .min_out = 7, .max_out = 7,
    .parse = lstm_grad_parse, .infer = rnn_grad_infer, .cost = rnn_grad_cost,
    .kernel = { [BACKEND_CPU] = rnn_grad_cpu },
};

const struct op_def op_gru_grad = {
    .domain = "dtrexec", .name = "GRUGrad", .since = { 1 },
    .min_in = 3, .max_in = RNN_GRAD_N_IN, .min_out = 5, .max_out = 5,
    .parse = gru_grad_parse, .infer = rnn_grad_infer, .cost = rnn_grad_cost,
    .kernel = { [BACKEND_CPU] = rnn_grad_cpu },
};

const struct op_def op_rnn_grad = {
    .domain = "dtrexec", .name = "RNNGrad", .since = { 1 },
    .min_in = 3, .max_in = RNN_GRAD_N_IN, .min_out = 5, .max_out = 5,
    .parse = simple_rnn_grad_parse, .infer = rnn_grad_infer, .cost = rnn_grad_cost,
    .kernel = { [BACKEND_CPU] = rnn_grad_cpu },
};

const struct op_def op_lstm = {
    .domain = "", .name = "LSTM", .since = { 7, 14, 22 },
    .min_in = 3, .max_in = 8, .min_out = 0, .max_out = 3,
    .parse = lstm_parse, .infer = rnn_infer, .cost = rnn_cost,
    .kernel = { [BACKEND_CPU] = rnn_cpu },
    .grad = rnn_grad, .grad_saves_in = RNN_GRAD_SAVES_IN,
};

const struct op_def op_gru = {
    .domain = "", .name = "GRU", .since = { 7, 14, 22 },
    .min_in = 3, .max_in = 6, .min_out = 0, .max_out = 2,
    .parse = gru_parse, .infer = rnn_infer, .cost = rnn_cost,
    .kernel = { [BACKEND_CPU] = rnn_cpu },
    .grad = rnn_grad, .grad_saves_in = RNN_GRAD_SAVES_IN,
};

const struct op_def op_rnn = {
    .domain = "", .name = "RNN", .since = { 7, 14, 22 },
    .min_in = 3, .max_in = 6, .min_out = 0, .max_out = 2,
    .parse = simple_rnn_parse, .infer = rnn_infer, .cost = rnn_cost,
    .kernel = { [BACKEND_CPU] = rnn_cpu },
    .grad = rnn_grad, .grad_saves_in = RNN_GRAD_SAVES_IN,
};
