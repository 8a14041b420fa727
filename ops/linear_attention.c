/* ops/linear_attention.c — LinearAttention (opset 27): the recurrent
 * linear attention of DeltaNet, Gated DeltaNet, GLA and RetNet, for prefill
 * (T > 1) and decoding (T = 1) alike.
 *
 * query (B, T, Hq*dk), key (B, T, Hkv*dk), value (B, T, Hkv*dv) carry their
 * heads packed in the last axis; the state S of each (batch, key/value
 * head) is (dk, dv), from past_state (B, Hkv, dk, dv) or zeros. Per token,
 * with a = exp(decay) (per key dimension, decay (B, T, Hkv*dk), or per
 * head, (B, T, Hkv)) and beta (B, T, Hkv) or (B, T, 1):
 *   linear:      S = S + k v^T
 *   gated:       S = a * S + k v^T
 *   delta:       S = S + k (beta (v - S^T k))^T
 *   gated_delta: S = a * S + k (beta (v - (a * S)^T k))^T
 *   o_h = scale S^T q_h for each query head h of the group (h / (Hq / Hkv)
 *   is its key/value head), scale = 1/sqrt(dk) unless given.
 * output is (B, T, Hq*dv), present_state the last S. chunk_size is a tuning
 * hint of chunked GPU algorithms: the result is the sequential recurrence's
 * whatever it says, so it is accepted and ignored. float32 only: float16
 * and bfloat16 models are widened to float32 at load (onnx/half.c), the
 * state included. One task per (batch, key/value head), each in token order
 * with sums in a fixed order: deterministic.
 *
 * Gradient: LinearAttentionGrad (domain dtrexec) at the end of the file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"
#include "ops/attn-params.h"

enum { LA_Q, LA_K, LA_V, LA_PAST, LA_DECAY, LA_BETA, LA_N_IN };

static int la_parse(const struct onnx_node *node, int version, void **params, char *err,
                    size_t err_size)
{
    (void)version;
    const char *rule = onnx_node_attr_string(node, "update_rule", "gated_delta");
    int gated, delta;
    if (!strcmp(rule, "linear"))
        gated = 0, delta = 0;
    else if (!strcmp(rule, "gated"))
        gated = 1, delta = 0;
    else if (!strcmp(rule, "delta"))
        gated = 0, delta = 1;
    else if (!strcmp(rule, "gated_delta"))
        gated = 1, delta = 1;
    else {
        snprintf(err, err_size, "update_rule '%s' is not one of 'linear', "
                 "'gated', 'delta', 'gated_delta'", rule);
        return -1;
    }
    if (!onnx_node_attr(node, "q_num_heads") || !onnx_node_attr(node, "kv_num_heads")) {
        snprintf(err, err_size, "the attributes q_num_heads and kv_num_heads "
                 "are required");
        return -1;
    }
    int64_t hq = onnx_node_attr_int(node, "q_num_heads", 0);
    int64_t hkv = onnx_node_attr_int(node, "kv_num_heads", 0);
    if (hq <= 0 || hkv <= 0 || hq % hkv) {
        snprintf(err, err_size, "q_num_heads=%lld must be a positive multiple "
                 "of kv_num_heads=%lld", (long long)hq,
                 (long long)hkv);
        return -1;
    }
    int64_t chunk = onnx_node_attr_int(node, "chunk_size", 64);
    if (chunk <= 0) {
        snprintf(err, err_size, "chunk_size=%lld must be positive", (long long)chunk);
        return -1;
    }
    float scale = onnx_node_attr_float(node, "scale", 0.0f);
    if (!(scale == scale) || isinf(scale)) {
        snprintf(err, err_size, "scale=%g is not finite", (double)scale);
        return -1;
    }
    struct linear_attention_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    p->gated = gated;
    p->delta = delta;
    p->q_num_heads = hq;
    p->kv_num_heads = hkv;
    p->scale = scale;
    *params = p;
    return 0;
}

static const char *la_rule(const struct linear_attention_params *p)
{
    return p->gated ? (p->delta ? "gated_delta" : "gated") : (p->delta ? "delta" : "linear");
}

int la_geom_check(const struct op_call *c, const struct tensor *const *in,
                  struct la_geom *g)
{
    static const char *const names[LA_N_IN] = { "query", "key", "value", "past_state",
                                                "decay", "beta" };
    const struct linear_attention_params *p = c->params;
    char d1[128], d2[128];
    for (int i = 0; i < LA_N_IN; i++)
        if (in[i] && in[i]->dtype != ONNX_DTYPE_FLOAT)
            return op_error(c, "%s is %s; only float32 is supported (float16 and bfloat16 "
                            "models run in float32)", names[i], onnx_dtype_name(in[i]->dtype));
    for (int i = LA_Q; i <= LA_V; i++)
        if (in[i]->rank != 3)
            return op_error(c, "%s %s must be rank 3 (batch, tokens, heads * head size)",
                            names[i], tensor_describe(in[i], d1, sizeof d1));
    const struct tensor *q = in[LA_Q], *k = in[LA_K], *v = in[LA_V];
    g->b = q->dims[0];
    g->t = q->dims[1];
    g->hq = p->q_num_heads;
    g->hkv = p->kv_num_heads;
    if (q->dims[2] % g->hq || v->dims[2] % g->hkv)
        return op_error(c, "query %s must split into q_num_heads=%lld and value %s into "
                        "kv_num_heads=%lld heads", tensor_describe(q, d1, sizeof d1),
                        (long long)g->hq, tensor_describe(v, d2, sizeof d2), (long long)g->hkv);
    g->dk = q->dims[2] / g->hq;
    g->dv = v->dims[2] / g->hkv;
    if (k->dims[0] != g->b || k->dims[1] != g->t || k->dims[2] != g->hkv * g->dk)
        return op_error(c, "key %s must be (%lld, %lld, kv_num_heads * dk = %lld) for query %s",
                        tensor_describe(k, d1, sizeof d1), (long long)g->b, (long long)g->t,
                        (long long)(g->hkv * g->dk), tensor_describe(q, d2, sizeof d2));
    if (v->dims[0] != g->b || v->dims[1] != g->t)
        return op_error(c, "value %s must have query's batch and tokens (%lld, %lld)",
                        tensor_describe(v, d1, sizeof d1), (long long)g->b, (long long)g->t);
    const struct tensor *past = in[LA_PAST], *decay = in[LA_DECAY], *beta = in[LA_BETA];
    if (past && (past->rank != 4 || past->dims[0] != g->b || past->dims[1] != g->hkv
                 || past->dims[2] != g->dk || past->dims[3] != g->dv))
        return op_error(c, "past_state %s must be (%lld, %lld, %lld, %lld)",
                        tensor_describe(past, d1, sizeof d1), (long long)g->b,
                        (long long)g->hkv, (long long)g->dk, (long long)g->dv);
    if (p->gated != (decay != NULL))
        return op_error(c, "update_rule '%s' %s the decay input", la_rule(p),
                        p->gated ? "requires" : "forbids");
    if (p->delta != (beta != NULL))
        return op_error(c, "update_rule '%s' %s the beta input", la_rule(p),
                        p->delta ? "requires" : "forbids");
    g->decay_per_key = 0;
    if (decay) {
        if (decay->rank != 3 || decay->dims[0] != g->b || decay->dims[1] != g->t
            || (decay->dims[2] != g->hkv && decay->dims[2] != g->hkv * g->dk))
            return op_error(c, "decay %s must be (%lld, %lld, kv_num_heads = %lld or "
                            "kv_num_heads * dk = %lld)", tensor_describe(decay, d1, sizeof d1),
                            (long long)g->b, (long long)g->t, (long long)g->hkv,
                            (long long)(g->hkv * g->dk));
        g->decay_per_key = decay->dims[2] == g->hkv * g->dk && g->dk != 1;
    }
    g->beta_shared = 0;
    if (beta) {
        if (beta->rank != 3 || beta->dims[0] != g->b || beta->dims[1] != g->t
            || (beta->dims[2] != g->hkv && beta->dims[2] != 1))
            return op_error(c, "beta %s must be (%lld, %lld, kv_num_heads = %lld or 1)",
                            tensor_describe(beta, d1, sizeof d1), (long long)g->b,
                            (long long)g->t, (long long)g->hkv);
        g->beta_shared = beta->dims[2] == 1;
    }
    g->scale = p->scale != 0.0f ? p->scale : 1.0f / sqrtf((float)g->dk);
    g->gated = p->gated;
    g->delta = p->delta;
    return 0;
}

static const struct tensor *la_in(const struct op_call *c, int i)
{
    return i < c->n_in ? c->in[i] : NULL;
}

static int la_infer(struct op_call *c)
{
    const struct tensor *in[LA_N_IN];
    for (int i = 0; i < LA_N_IN; i++)
        in[i] = la_in(c, i);
    struct la_geom g;
    if (la_geom_check(c, in, &g))
        return -1;
    struct tensor *o = c->out[0];
    o->dtype = ONNX_DTYPE_FLOAT;
    o->rank = 3;
    o->dims[0] = g.b;
    o->dims[1] = g.t;
    o->dims[2] = g.hq * g.dv;
    if (c->n_out > 1 && c->out[1]) {
        struct tensor *s = c->out[1];
        s->dtype = ONNX_DTYPE_FLOAT;
        s->rank = 4;
        s->dims[0] = g.b;
        s->dims[1] = g.hkv;
        s->dims[2] = g.dk;
        s->dims[3] = g.dv;
    }
    return 0;
}

static struct op_cost la_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct tensor *q = c->in[LA_Q], *v = c->in[LA_V];
    /* per token and query head a (dk x dv) read, per key/value head one or
     * two (dk x dv) updates: about 6 flops per state element */
    double n = (double)tensor_numel(q) * (double)(v->rank == 3 ? v->dims[2] : 1);
    const struct linear_attention_params *p = c->params;
    cost.flops = 6.0 * n / (double)(p && p->kv_num_heads ? p->kv_num_heads : 1);
    return cost;
}

/* The per-token pieces of one (batch, key/value head) task. */
struct la_task {
    const struct la_geom *g;
    const float *q, *k, *v, *decay, *beta;
    int64_t b, h;                      /* batch, key/value head */
};

static inline const float *la_q(const struct la_task *w, int64_t t, int64_t hq)
{
    const struct la_geom *g = w->g;
    return w->q + ((w->b * g->t + t) * g->hq + hq) * g->dk;
}

static inline const float *la_k(const struct la_task *w, int64_t t)
{
    const struct la_geom *g = w->g;
    return w->k + ((w->b * g->t + t) * g->hkv + w->h) * g->dk;
}

static inline const float *la_v(const struct la_task *w, int64_t t)
{
    const struct la_geom *g = w->g;
    return w->v + ((w->b * g->t + t) * g->hkv + w->h) * g->dv;
}

/* exp(decay) of key dimension d at token t. */
static inline float la_a(const struct la_task *w, int64_t t, int64_t d)
{
    const struct la_geom *g = w->g;
    if (!g->gated)
        return 1.0f;
    int64_t row = w->b * g->t + t;
    return expf(g->decay_per_key ? w->decay[(row * g->hkv + w->h) * g->dk + d]
                                 : w->decay[row * g->hkv + w->h]);
}

static inline float la_beta(const struct la_task *w, int64_t t)
{
    const struct la_geom *g = w->g;
    int64_t row = w->b * g->t + t;
    return w->beta[g->beta_shared ? row : row * g->hkv + w->h];
}

/* One step on S (dk x dv, in place): decay, the delta correction, the
 * write; u (dv floats) receives the written vector. */
static void la_step(const struct la_task *w, int64_t t, float *s, float *u)
{
    const struct la_geom *g = w->g;
    const int64_t dk = g->dk, dv = g->dv;
    const float *kt = la_k(w, t), *vt = la_v(w, t);
    if (g->gated)
        for (int64_t d = 0; d < dk; d++) {
            float a = la_a(w, t, d);
            for (int64_t m = 0; m < dv; m++)
                s[d * dv + m] *= a;
        }
    for (int64_t m = 0; m < dv; m++)
        u[m] = vt[m];
    if (g->delta) {
        float bt = la_beta(w, t);
        for (int64_t m = 0; m < dv; m++) {
            float r = 0.0f;
            for (int64_t d = 0; d < dk; d++)
                r += s[d * dv + m] * kt[d];
            u[m] = bt * (vt[m] - r);
        }
    }
    for (int64_t d = 0; d < dk; d++)
        for (int64_t m = 0; m < dv; m++)
            s[d * dv + m] += kt[d] * u[m];
}

/* o[m] = scale * sum_d q[d] S[d, m] */
static void la_read(const struct la_geom *g, const float *s, const float *qh, float *o)
{
    for (int64_t m = 0; m < g->dv; m++) {
        float acc = 0.0f;
        for (int64_t d = 0; d < g->dk; d++)
            acc += qh[d] * s[d * g->dv + m];
        o[m] = g->scale * acc;
    }
}

static void la_task_init(struct la_task *w, const struct la_geom *g,
                         const struct tensor *const *in, int64_t task)
{
    w->g = g;
    w->q = in[LA_Q]->data;
    w->k = in[LA_K]->data;
    w->v = in[LA_V]->data;
    w->decay = in[LA_DECAY] ? in[LA_DECAY]->data : NULL;
    w->beta = in[LA_BETA] ? in[LA_BETA]->data : NULL;
    w->b = task / g->hkv;
    w->h = task % g->hkv;
}

static int la_cpu(struct op_call *c)
{
    const struct tensor *in[LA_N_IN];
    for (int i = 0; i < LA_N_IN; i++)
        in[i] = la_in(c, i);
    struct la_geom g;
    if (la_geom_check(c, in, &g))
        return -1;
    const int64_t tasks = g.b * g.hkv, ss = g.dk * g.dv, group = g.hq / g.hkv;
    float *present = c->n_out > 1 && c->out[1] ? c->out[1]->data : NULL;
    /* the state lives in present_state, or in scratch when it is not asked for */
    size_t need = sizeof(float) * (size_t)(tasks * (g.dv + (present ? 0 : ss)) + 1);
    float *tmp = nn_scratch_alloc(c, need);
    if (!tmp)
        return op_error(c, "cannot get %zu bytes of scratch", need);
    float *states = present ? present : tmp + tasks * g.dv;
    const float *past = in[LA_PAST] ? in[LA_PAST]->data : NULL;
    float *out = c->out[0]->data;
#pragma omp parallel for schedule(static) if (tasks * g.t * ss > 32768)
    for (int64_t task = 0; task < tasks; task++) {
        struct la_task w;
        la_task_init(&w, &g, in, task);
        float *s = states + task * ss, *u = tmp + task * g.dv;
        if (past)
            memcpy(s, past + task * ss, sizeof(float) * (size_t)ss);
        else
            memset(s, 0, sizeof(float) * (size_t)ss);
        for (int64_t t = 0; t < g.t; t++) {
            la_step(&w, t, s, u);
            for (int64_t j = 0; j < group; j++) {
                int64_t hq = w.h * group + j;
                la_read(&g, s, la_q(&w, t, hq), out + ((w.b * g.t + t) * g.hq + hq) * g.dv);
            }
        }
    }
    nn_scratch_free(c, tmp);
    return 0;
}

/* ---- gradient -------------------------------------------------------------------
 * LinearAttentionGrad(dOutput, dPresentState, query, key, value, past_state,
 * decay, beta; the forward attributes) -> dQuery, dKey, dValue, dPastState,
 * dDecay, dBeta. dOutput or dPresentState may be omitted; the optional
 * inputs are omitted where the forward call had none, and their gradients
 * are then empty (shape [0]). dBeta is per key/value head, (B, T, Hkv): the
 * emitter sums it to a shared (B, T, 1) beta.
 *
 * Per (batch, key/value head), one task each: the states after every token
 * are recomputed into scratch ((T + 1) dk dv floats per task), then the
 * tokens are walked backwards with G the gradient of the state after token
 * t. With S0 the state before the token, Sa = a * S0, r = Sa^T k,
 * u = beta (v - r) (delta rules) or v, S = Sa + k u^T:
 *   G += scale sum_h q_h do_h^T,  dq_h = scale S do_h,
 *   du = G^T k,  dk = G u,
 *   delta: dv = beta du, dbeta = du . (v - r), dr = -beta du,
 *          G += k dr^T (through Sa), dk += Sa dr;  else dv = du;
 *   gated: da = sum_m G * S0 (per key dimension or summed per head),
 *          ddecay = da * a,  G = a * G;
 * and dPastState is the final G. No two tasks write one value:
 * deterministic. */
enum { LG_DOUT, LG_DPRESENT, LG_X, LG_N_IN = LG_X + LA_N_IN };

static int la_grad(struct grad_ctx *g)
{
    const struct op_call *f = g->fwd;
    int dy_state = f->n_out > 1 ? g->dy[1] : -1;
    if (g->dy[0] < 0 && dy_state < 0)
        return 0;
    const struct linear_attention_params *p = f->params;
    struct onnx_attr at[4] = {
        { .name = "q_num_heads", .type = ONNX_ATTR_INT, .i = p->q_num_heads },
        { .name = "kv_num_heads", .type = ONNX_ATTR_INT, .i = p->kv_num_heads },
        { .name = "scale", .type = ONNX_ATTR_FLOAT, .f = p->scale },
        { .name = "update_rule", .type = ONNX_ATTR_STRING, .s = (char *)la_rule(p) },
    };
    at[3].s_len = strlen(at[3].s);
    int in[LG_N_IN] = { g->dy[0], dy_state };
    for (int i = 0; i < LA_N_IN; i++)
        in[LG_X + i] = i < f->n_in && f->in[i] ? g->in[i] : -1;
    int n_in = LG_N_IN;
    while (n_in > LG_X + 3 && in[n_in - 1] < 0)
        n_in--;
    int out[LA_N_IN];
    if (g->emit(g, "LinearAttentionGrad", at, 4, n_in, in, LA_N_IN, out))
        return -1;
    for (int i = 0; i < LA_N_IN; i++) {
        if (i >= f->n_in || !f->in[i] || !g->need_dx[i])
            continue;
        if (i == LA_BETA ? grad_add_dx_broadcast(g, i, out[i]) : g->add_dx(g, i, out[i]))
            return -1;
    }
    return 0;
}

static void la_shape(struct tensor *t, int rank, const int64_t *dims)
{
    if (!t)
        return;
    t->dtype = ONNX_DTYPE_FLOAT;
    t->rank = rank;
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
}

static int lg_infer(struct op_call *c)
{
    const struct tensor *in[LA_N_IN];
    for (int i = 0; i < LA_N_IN; i++)
        in[i] = la_in(c, LG_X + i);
    struct la_geom g;
    if (la_geom_check(c, in, &g))
        return -1;
    const struct tensor *dout = la_in(c, LG_DOUT), *dst = la_in(c, LG_DPRESENT);
    char d1[128];
    if (dout && (dout->dtype != ONNX_DTYPE_FLOAT || dout->rank != 3 || dout->dims[0] != g.b
                 || dout->dims[1] != g.t || dout->dims[2] != g.hq * g.dv))
        return op_error(c, "dOutput %s must be float32 (%lld, %lld, %lld)",
                        tensor_describe(dout, d1, sizeof d1), (long long)g.b, (long long)g.t,
                        (long long)(g.hq * g.dv));
    if (dst && (dst->dtype != ONNX_DTYPE_FLOAT || dst->rank != 4 || dst->dims[0] != g.b
                || dst->dims[1] != g.hkv || dst->dims[2] != g.dk || dst->dims[3] != g.dv))
        return op_error(c, "dPresentState %s must be float32 (%lld, %lld, %lld, %lld)",
                        tensor_describe(dst, d1, sizeof d1), (long long)g.b, (long long)g.hkv,
                        (long long)g.dk, (long long)g.dv);
    const int64_t empty[1] = { 0 };
    const int64_t state[4] = { g.b, g.hkv, g.dk, g.dv }, dbeta[3] = { g.b, g.t, g.hkv };
    for (int i = 0; i < LA_N_IN && i < c->n_out; i++) {
        if (i == LA_BETA && in[i])
            la_shape(c->out[i], 3, dbeta);
        else if (i == LA_PAST && in[i])
            la_shape(c->out[i], 4, state);
        else if (in[i])
            la_shape(c->out[i], in[i]->rank, in[i]->dims);
        else
            la_shape(c->out[i], 1, empty);
    }
    return 0;
}

static struct op_cost lg_cost(const struct op_call *c)
{
    struct op_cost cost = cost_memory(c);
    const struct tensor *q = c->in[LG_X + LA_Q], *v = c->in[LG_X + LA_V];
    const struct linear_attention_params *p = c->params;
    double n = (double)tensor_numel(q) * (double)(v->rank == 3 ? v->dims[2] : 1);
    cost.flops = 20.0 * n / (double)(p && p->kv_num_heads ? p->kv_num_heads : 1);
    return cost;
}

static float *lg_out(const struct op_call *c, int i)
{
    return i < c->n_out && c->out[i] && tensor_numel(c->out[i]) ? c->out[i]->data : NULL;
}

static int lg_cpu(struct op_call *c)
{
    const struct tensor *in[LA_N_IN];
    for (int i = 0; i < LA_N_IN; i++)
        in[i] = la_in(c, LG_X + i);
    struct la_geom g;
    if (la_geom_check(c, in, &g))
        return -1;
    const struct tensor *tdo = la_in(c, LG_DOUT), *tds = la_in(c, LG_DPRESENT);
    const float *dout = tdo ? tdo->data : NULL, *dstate = tds ? tds->data : NULL;
    const float *past = in[LA_PAST] ? in[LA_PAST]->data : NULL;
    float *dq = lg_out(c, LA_Q), *dk = lg_out(c, LA_K), *dv = lg_out(c, LA_V);
    float *dpast = lg_out(c, LA_PAST), *ddecay = lg_out(c, LA_DECAY), *dbeta = lg_out(c, LA_BETA);
    const int64_t tasks = g.b * g.hkv, ss = g.dk * g.dv, group = g.hq / g.hkv;
    /* per task: T + 1 states, G, u, du, dr, da, a */
    const int64_t per = (g.t + 2) * ss + 3 * g.dv + 2 * g.dk;
    size_t need = sizeof(float) * (size_t)(tasks * per + 1);
    float *tmp = nn_scratch_alloc(c, need);
    if (!tmp)
        return op_error(c, "cannot get %zu bytes of scratch", need);
#pragma omp parallel for schedule(static) if (tasks * g.t * ss > 8192)
    for (int64_t task = 0; task < tasks; task++) {
        struct la_task w;
        la_task_init(&w, &g, in, task);
        float *st = tmp + task * per, *G = st + (g.t + 1) * ss, *u = G + ss, *du = u + g.dv;
        float *dr = du + g.dv, *da = dr + g.dv, *av = da + g.dk;
        const int64_t dkn = g.dk, dvn = g.dv;
        if (past)
            memcpy(st, past + task * ss, sizeof(float) * (size_t)ss);
        else
            memset(st, 0, sizeof(float) * (size_t)ss);
        for (int64_t t = 0; t < g.t; t++) {
            memcpy(st + (t + 1) * ss, st + t * ss, sizeof(float) * (size_t)ss);
            la_step(&w, t, st + (t + 1) * ss, u);
        }
        if (dstate)
            memcpy(G, dstate + task * ss, sizeof(float) * (size_t)ss);
        else
            memset(G, 0, sizeof(float) * (size_t)ss);
        for (int64_t t = g.t - 1; t >= 0; t--) {
            const float *s1 = st + (t + 1) * ss, *s0 = st + t * ss;
            const float *kt = la_k(&w, t), *vt = la_v(&w, t);
            int64_t row = w.b * g.t + t;
            for (int64_t d = 0; d < dkn; d++)
                av[d] = la_a(&w, t, d);
            /* the reads of the group's query heads */
            for (int64_t j = 0; j < group; j++) {
                int64_t hq = w.h * group + j;
                const float *qh = la_q(&w, t, hq);
                const float *doh = dout ? dout + (row * g.hq + hq) * dvn : NULL;
                float *dqh = dq ? dq + (row * g.hq + hq) * dkn : NULL;
                for (int64_t d = 0; d < dkn; d++) {
                    float acc = 0.0f;
                    for (int64_t m = 0; m < dvn; m++) {
                        float dom = doh ? doh[m] : 0.0f;
                        acc += s1[d * dvn + m] * dom;
                        G[d * dvn + m] += g.scale * qh[d] * dom;
                    }
                    if (dqh)
                        dqh[d] = g.scale * acc;
                }
            }
            /* the written vector u again, from Sa = a * S0 */
            float bt = g.delta ? la_beta(&w, t) : 1.0f;
            for (int64_t m = 0; m < dvn; m++) {
                float r = 0.0f;
                if (g.delta)
                    for (int64_t d = 0; d < dkn; d++)
                        r += av[d] * s0[d * dvn + m] * kt[d];
                dr[m] = r;                     /* r for now */
                u[m] = g.delta ? bt * (vt[m] - r) : vt[m];
            }
            for (int64_t m = 0; m < dvn; m++) {
                float acc = 0.0f;
                for (int64_t d = 0; d < dkn; d++)
                    acc += G[d * dvn + m] * kt[d];
                du[m] = acc;
            }
            float *dkt = dk ? dk + (row * g.hkv + w.h) * dkn : NULL;
            float *dvt = dv ? dv + (row * g.hkv + w.h) * dvn : NULL;
            for (int64_t d = 0; d < dkn; d++) {
                float acc = 0.0f;
                for (int64_t m = 0; m < dvn; m++)
                    acc += G[d * dvn + m] * u[m];
                da[d] = acc;                   /* dk for now */
            }
            if (g.delta) {
                float db = 0.0f;
                for (int64_t m = 0; m < dvn; m++) {
                    db += du[m] * (vt[m] - dr[m]);
                    if (dvt)
                        dvt[m] = bt * du[m];
                    dr[m] = -bt * du[m];
                }
                if (dbeta)
                    dbeta[row * g.hkv + w.h] = db;
                for (int64_t d = 0; d < dkn; d++) {
                    float a = av[d], acc = 0.0f;
                    for (int64_t m = 0; m < dvn; m++) {
                        acc += a * s0[d * dvn + m] * dr[m];
                        G[d * dvn + m] += kt[d] * dr[m];
                    }
                    da[d] += acc;
                }
            } else if (dvt) {
                memcpy(dvt, du, sizeof(float) * (size_t)dvn);
            }
            if (dkt)
                memcpy(dkt, da, sizeof(float) * (size_t)dkn);
            if (g.gated) {
                float dsum = 0.0f;
                for (int64_t d = 0; d < dkn; d++) {
                    float a = av[d], acc = 0.0f;
                    for (int64_t m = 0; m < dvn; m++) {
                        acc += G[d * dvn + m] * s0[d * dvn + m];
                        G[d * dvn + m] *= a;
                    }
                    if (g.decay_per_key) {
                        if (ddecay)
                            ddecay[(row * g.hkv + w.h) * dkn + d] = acc * a;
                    } else {
                        dsum += acc * a;
                    }
                }
                if (!g.decay_per_key && ddecay)
                    ddecay[row * g.hkv + w.h] = dsum;
            }
        }
        if (dpast)
            memcpy(dpast + task * ss, G, sizeof(float) * (size_t)ss);
    }
    nn_scratch_free(c, tmp);
    return 0;
}

const struct op_def op_linear_attention = {
    .domain = "", .name = "LinearAttention", .since = { 27 },
    .min_in = 3, .max_in = LA_N_IN, .min_out = 1, .max_out = 2,
    .parse = la_parse, .infer = la_infer, .cost = la_cost,
    .kernel = { [BACKEND_CPU] = la_cpu },
    .grad = la_grad,
    .grad_saves_in = (1u << LA_N_IN) - 1,
};

const struct op_def op_linear_attention_grad = {
    .domain = "dtrexec", .name = "LinearAttentionGrad", .since = { 1 },
    .min_in = LG_X + 3, .max_in = LG_N_IN, .min_out = 1, .max_out = LA_N_IN,
    .parse = la_parse, .infer = lg_infer, .cost = lg_cost,
    .kernel = { [BACKEND_CPU] = lg_cpu },
};
