/* ops/attention.c — Attention (opset 23, 24, 25): scaled dot-product
 * attention as PyTorch's exporter emits it for scaled_dot_product_attention,
 * Y = softmax(softcap(scale * Q K^T) + bias) V per batch and query head.
 *
 * Q, K, V are 4-D [B, H, S, D] or 3-D [B, S, H * D] (then q_num_heads and
 * kv_num_heads say how to split); K and V may have fewer heads than Q
 * (grouped-query / multi-query attention): query head h reads key/value
 * head h / (Hq / Hkv). past_key/past_value [B, Hkv, P, D] are put before K
 * and V (present_key/present_value give the concatenation back, 4-D). The
 * bias of query i and key j adds, in this order: attn_mask (bool: false is
 * -inf; float: added; a mask shorter than the keys counts as -inf beyond its
 * end; broadcast to [B, Hq, Sq, keys]), is_causal (j <= i + offset), the
 * sliding window of opset 25 (offset + i - left <= j <= offset + i + right)
 * and nonpad_kv_seqlen (j < nonpad[b]), where offset is P with a past
 * cache, nonpad[b] - Sq with nonpad_kv_seqlen, else 0. A query whose bias
 * is -inf for every key gets zero probabilities and a zero output row.
 * qk_matmul_output is the scores before softcap (mode 0), after it (1),
 * with the bias (2) or the probabilities (3). softmax_precision is accepted
 * and the softmax computed in float32. float32 only: float16 and bfloat16
 * models are widened to float32 at load (onnx/half.c).
 *
 * One task per (batch, query head), one thread each: the two products go
 * through nn_sgemm (gemm.c) reading Q, K, V in place with their row strides
 * (a past cache and the new keys are two GEMMs into one score matrix), the
 * softmax subtracts the row maximum. Every task's arithmetic is the same
 * whichever thread runs it: deterministic.
 *
 * Gradient: AttentionGrad (domain dtrexec) at the end of the file.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/nn-impl.h"
#include "ops/attn-params.h"

enum {
    ATT_Q, ATT_K, ATT_V, ATT_MASK, ATT_PAST_K, ATT_PAST_V, ATT_NONPAD, ATT_N_IN
};

static int att_parse(const struct onnx_node *node, int version, void **params,
                     char *err, size_t err_size)
{
    struct attention_params *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, err_size, "node '%s' (%s): out of memory", node->name, node->op_type);
        return -1;
    }
    p->scale = onnx_node_attr_float(node, "scale", 0.0f);
    p->softcap = onnx_node_attr_float(node, "softcap", 0.0f);
    p->is_causal = onnx_node_attr_int(node, "is_causal", 0) != 0;
    p->q_num_heads = onnx_node_attr_int(node, "q_num_heads", 0);
    p->kv_num_heads = onnx_node_attr_int(node, "kv_num_heads", 0);
    int64_t mode = onnx_node_attr_int(node, "qk_matmul_output_mode", 0);
    int64_t prec = onnx_node_attr_int(node, "softmax_precision", 1);
    /* the windows exist from opset 25; AttentionGrad carries them as well */
    int windows = version >= 25 || !strcmp(node->op_type, "AttentionGrad");
    p->left_window = windows ? onnx_node_attr_int(node, "left_window_size", -1) : -1;
    p->right_window = windows ? onnx_node_attr_int(node, "right_window_size", -1) : -1;
    const char *bad = NULL;
    if (onnx_node_attr(node, "scale") && !(p->scale > 0.0f) && !(p->scale < 0.0f))
        bad = "scale must be nonzero";
    else if (p->softcap < 0.0f || !isfinite(p->softcap))
        bad = "softcap must be 0 (none) or positive";
    else if (mode < 0 || mode > 3)
        bad = "qk_matmul_output_mode must be 0, 1, 2 or 3";
    else if (prec != 1 && prec != 10 && prec != 11 && prec != 16)
        bad = "softmax_precision must be 1 (float), 10 (float16), 11 (double) or 16 (bfloat16)";
    else if (p->q_num_heads < 0 || p->kv_num_heads < 0)
        bad = "q_num_heads and kv_num_heads must not be negative";
    else if (p->left_window < -1 || p->right_window < -1)
        bad = "left_window_size and right_window_size must be -1 or nonnegative";
    if (bad) {
        snprintf(err, err_size, "node '%s' (%s): %s", node->name, node->op_type, bad);
        free(p);
        return -1;
    }
    p->qk_mode = (int)mode;
    *params = p;
    return 0;
}

static struct nn_att_layout layout4(int64_t h, int64_t s, int64_t d)
{
    return (struct nn_att_layout){ .sb = h * s * d, .sh = s * d, .ss = d };
}

static struct nn_att_layout layout3(int64_t h, int64_t s, int64_t d)
{
    return (struct nn_att_layout){ .sb = s * h * d, .sh = d, .ss = h * d };
}

/* in: Q, K, V, attn_mask, past_key, past_value, nonpad_kv_seqlen (the
 * optional ones NULL when omitted). */
static int att_geom_in(const struct op_call *c, const struct tensor *const *in, struct nn_att_geom *g)
{
    const struct attention_params *p = c->params;
    const struct tensor *q = in[ATT_Q], *k = in[ATT_K], *v = in[ATT_V];
    const struct tensor *mask = in[ATT_MASK], *pk = in[ATT_PAST_K], *pv = in[ATT_PAST_V];
    const struct tensor *np = in[ATT_NONPAD];
    char d1[128], d2[128], d3[128];
    memset(g, 0, sizeof *g);
    /* float16/bfloat16 models are widened to float32 at load (onnx/half.c) */
    const int dt = ONNX_DTYPE_FLOAT;
    if (q->dtype != dt || k->dtype != dt || v->dtype != dt)
        return op_error(c, "only float32 is supported, got Q %s, K %s, V %s", onnx_dtype_name(q->dtype),
                        onnx_dtype_name(k->dtype), onnx_dtype_name(v->dtype));
    if (q->rank != k->rank || q->rank != v->rank || (q->rank != 3 && q->rank != 4))
        return op_error(c, "Q %s, K %s and V %s must all be 3-D or all 4-D",
                        tensor_describe(q, d1, sizeof d1), tensor_describe(k, d2, sizeof d2),
                        tensor_describe(v, d3, sizeof d3));
    g->rank3 = q->rank == 3;
    g->b = q->dims[0];
    if (k->dims[0] != g->b || v->dims[0] != g->b)
        return op_error(c, "Q %s, K %s and V %s differ in batch size", tensor_describe(q, d1, sizeof d1),
                        tensor_describe(k, d2, sizeof d2), tensor_describe(v, d3, sizeof d3));
    if (g->rank3) {
        if (!p->q_num_heads || !p->kv_num_heads)
            return op_error(c, "3-D inputs need the q_num_heads and kv_num_heads attributes");
        g->hq = p->q_num_heads;
        g->hkv = p->kv_num_heads;
        if (q->dims[2] % g->hq || k->dims[2] % g->hkv || v->dims[2] % g->hkv)
            return op_error(c, "hidden sizes of Q %s, K %s, V %s are not multiples of q_num_heads %lld "
                            "and kv_num_heads %lld", tensor_describe(q, d1, sizeof d1),
                            tensor_describe(k, d2, sizeof d2), tensor_describe(v, d3, sizeof d3),
                            (long long)g->hq, (long long)g->hkv);
        g->sq = q->dims[1];
        g->skv = k->dims[1];
        g->d = q->dims[2] / g->hq;
        g->dv = v->dims[2] / g->hkv;
        if (k->dims[2] / g->hkv != g->d || v->dims[1] != g->skv)
            return op_error(c, "K %s must have Q's head size %lld and V %s K's sequence length",
                            tensor_describe(k, d1, sizeof d1), (long long)g->d, tensor_describe(v, d2, sizeof d2));
    } else {
        if (c->version >= 25 && (p->q_num_heads || p->kv_num_heads))
            return op_error(c, "q_num_heads and kv_num_heads must not be given with 4-D inputs");
        g->hq = q->dims[1];
        g->hkv = k->dims[1];
        g->sq = q->dims[2];
        g->skv = k->dims[2];
        g->d = q->dims[3];
        g->dv = v->dims[3];
        if (k->dims[3] != g->d || v->dims[1] != g->hkv || v->dims[2] != g->skv)
            return op_error(c, "K %s must match Q %s in head size and V %s in heads and sequence length",
                            tensor_describe(k, d1, sizeof d1), tensor_describe(q, d2, sizeof d2),
                            tensor_describe(v, d3, sizeof d3));
    }
    if (g->hkv <= 0 || g->hq % g->hkv)
        return op_error(c, "the %lld query heads are not a multiple of the %lld key/value heads",
                        (long long)g->hq, (long long)g->hkv);
    if (!pk != !pv)
        return op_error(c, "past_key and past_value must be given together");
    if (pk) {
        if (np)
            return op_error(c, "nonpad_kv_seqlen cannot be combined with past_key/past_value");
        if (pk->dtype != dt || pv->dtype != dt || pk->rank != 4 || pv->rank != 4
            || pk->dims[0] != g->b || pk->dims[1] != g->hkv || pk->dims[3] != g->d || pv->dims[0] != g->b
            || pv->dims[1] != g->hkv || pv->dims[2] != pk->dims[2] || pv->dims[3] != g->dv)
            return op_error(c, "past_key %s and past_value %s must be float32 [%lld, %lld, past, %lld] "
                            "and [%lld, %lld, past, %lld]", tensor_describe(pk, d1, sizeof d1),
                            tensor_describe(pv, d2, sizeof d2), (long long)g->b, (long long)g->hkv,
                            (long long)g->d, (long long)g->b, (long long)g->hkv, (long long)g->dv);
        g->past = pk->dims[2];
    }
    if (np && (np->dtype != ONNX_DTYPE_INT64 || np->rank != 1 || np->dims[0] != g->b))
        return op_error(c, "nonpad_kv_seqlen must be int64 [%lld], got %s", (long long)g->b,
                        tensor_describe(np, d1, sizeof d1));
    g->t = g->past + g->skv;
    if (g->rank3) {
        g->q = layout3(g->hq, g->sq, g->d);
        g->k = layout3(g->hkv, g->skv, g->d);
        g->v = layout3(g->hkv, g->skv, g->dv);
        g->y = layout3(g->hq, g->sq, g->dv);
    } else {
        g->q = layout4(g->hq, g->sq, g->d);
        g->k = layout4(g->hkv, g->skv, g->d);
        g->v = layout4(g->hkv, g->skv, g->dv);
        g->y = layout4(g->hq, g->sq, g->dv);
    }
    g->pk = layout4(g->hkv, g->past, g->d);
    g->pv = layout4(g->hkv, g->past, g->dv);
    g->prk = layout4(g->hkv, g->t, g->d);
    g->prv = layout4(g->hkv, g->t, g->dv);
    if (mask) {
        if (mask->dtype != ONNX_DTYPE_BOOL && mask->dtype != dt)
            return op_error(c, "attn_mask must be bool or float32 (Q's type), got %s",
                            onnx_dtype_name(mask->dtype));
        if (mask->rank < 1 || mask->rank > 4)
            return op_error(c, "attn_mask %s must have rank 1 to 4", tensor_describe(mask, d1, sizeof d1));
        g->mask_bool = mask->dtype == ONNX_DTYPE_BOOL;
        g->mask_len = mask->dims[mask->rank - 1];
        const int64_t want[3] = { g->b, g->hq, g->sq };
        int64_t strides[3] = { 0, 0, 0 }, stride = g->mask_len;
        int ok = g->mask_len >= 1 && g->mask_len <= g->t;
        for (int i = mask->rank - 2, j = 2; i >= 0 && ok; i--, j--) {
            if (mask->dims[i] != 1 && mask->dims[i] != want[j])
                ok = 0;
            strides[j] = mask->dims[i] == 1 ? 0 : stride;
            stride *= mask->dims[i];
        }
        if (!ok)
            return op_error(c, "attn_mask %s does not broadcast to [%lld, %lld, %lld, <= %lld]",
                            tensor_describe(mask, d1, sizeof d1), (long long)g->b, (long long)g->hq,
                            (long long)g->sq, (long long)g->t);
        g->m_sb = strides[0];
        g->m_sh = strides[1];
        g->m_ss = strides[2];
    }
    g->scale = p->scale != 0.0f ? p->scale : (float)(1.0 / sqrt((double)g->d));
    return 0;
}

/* The call's inputs by role (index ATT_*), NULL where omitted; first = the
 * index of Q in c->in (1 for AttentionGrad, whose input 0 is dY). */
static void att_inputs(const struct op_call *c, int first, const struct tensor *in[ATT_N_IN])
{
    for (int i = 0; i < ATT_N_IN; i++)
        in[i] = first + i < c->n_in ? c->in[first + i] : NULL;
}

int nn_attention_geom(const struct op_call *c, int first, struct nn_att_geom *g)
{
    const struct tensor *in[ATT_N_IN];
    att_inputs(c, first, in);
    return att_geom_in(c, in, g);
}

static int att_infer(struct op_call *c)
{
    const struct tensor *in[ATT_N_IN];
    att_inputs(c, 0, in);
    struct nn_att_geom g;
    if (att_geom_in(c, in, &g))
        return -1;
    struct tensor *y = c->out[0];
    y->dtype = ONNX_DTYPE_FLOAT;
    y->rank = g.rank3 ? 3 : 4;
    if (g.rank3) {
        y->dims[0] = g.b;
        y->dims[1] = g.sq;
        y->dims[2] = g.hq * g.dv;
    } else {
        int64_t dims[4] = { g.b, g.hq, g.sq, g.dv };
        memcpy(y->dims, dims, sizeof dims);
    }
    const int64_t last[3] = { g.d, g.dv, g.t };
    for (int o = 1; o < 4 && o < c->n_out; o++) {
        struct tensor *t = c->out[o];
        if (!t)
            continue;
        *t = (struct tensor){ .dtype = ONNX_DTYPE_FLOAT, .rank = 4 };
        int64_t dims[4] = { g.b, o == 3 ? g.hq : g.hkv, o == 3 ? g.sq : g.t, last[o - 1] };
        memcpy(t->dims, dims, sizeof dims);
    }
    return 0;
}

static struct op_cost att_cost(const struct op_call *c)
{
    const struct tensor *in[ATT_N_IN];
    att_inputs(c, 0, in);
    struct op_cost cost = cost_memory(c);
    struct nn_att_geom g;
    if (att_geom_in(c, in, &g) == 0)
        cost.flops = 2.0 * (double)(g.b * g.hq) * (double)g.sq * (double)g.t * (double)(g.d + g.dv)
                   + 6.0 * (double)(g.b * g.hq) * (double)g.sq * (double)g.t;
    return cost;
}

/* ---- the shared per-row computation ------------------------------------------- */

/* What a task reads: the geometry and the operands' data. */
struct att_data {
    const struct nn_att_geom *g;
    const struct attention_params *p;
    const float *q, *k, *v, *pk, *pv;
    const void *mask;
    const int64_t *nonpad;
};

/* The additive bias of query i and key j of batch b, head h. */
static float att_bias(const struct att_data *a, int64_t b, int64_t h, int64_t i, int64_t j)
{
    const struct nn_att_geom *g = a->g;
    const struct attention_params *p = a->p;
    float bias = 0.0f;
    if (g->mask_len) {
        if (j >= g->mask_len)
            return -INFINITY;
        int64_t off = b * g->m_sb + h * g->m_sh + i * g->m_ss + j;
        if (g->mask_bool) {
            if (!((const uint8_t *)a->mask)[off])
                return -INFINITY;
        } else {
            bias = ((const float *)a->mask)[off];
        }
    }
    int64_t offset = g->past ? g->past : a->nonpad ? a->nonpad[b] - g->sq : 0;
    int64_t diff = i + offset - j;     /* how far key j lies before the query's position */
    if ((p->is_causal && diff < 0) || (p->left_window >= 0 && diff > p->left_window)
        || (p->right_window >= 0 && -diff > p->right_window)
        || (a->nonpad && j >= a->nonpad[b]))
        return -INFINITY;
    return bias;
}

/* s[Sq, T] = scale * Q_bh K_all^T for query head h (key head h / group). */
static void att_scores(const struct att_data *a, int64_t b, int64_t h, float *s)
{
    const struct nn_att_geom *g = a->g;
    int64_t kh = h / (g->hq / g->hkv);
    const float *qm = a->q + b * g->q.sb + h * g->q.sh;
    if (g->past)
        nn_sgemm(0, 1, g->sq, g->past, g->d, g->scale, qm, g->q.ss, a->pk + b * g->pk.sb + kh * g->pk.sh,
                 g->pk.ss, 0.0f, s, g->t);
    nn_sgemm(0, 1, g->sq, g->skv, g->d, g->scale, qm, g->q.ss, a->k + b * g->k.sb + kh * g->k.sh, g->k.ss,
             0.0f, s + g->past, g->t);
}

/* Row i of the scores s (T values, scaled) to probabilities in place.
 * capped (may be NULL) receives the scores after softcap; qk (may be NULL)
 * the qk_matmul_output row of the mode. */
static void att_softmax_row(const struct att_data *a, int64_t b, int64_t h, int64_t i, float *s,
                            float *capped, float *qk)
{
    const struct nn_att_geom *g = a->g;
    const struct attention_params *p = a->p;
    const int64_t t = g->t;
    const float cap = p->softcap;
    int any = 0;
    float m = -INFINITY;
    for (int64_t j = 0; j < t; j++) {
        float raw = s[j], cv = cap > 0.0f ? cap * tanhf(raw / cap) : raw;
        float bias = att_bias(a, b, h, i, j), z = cv + bias;
        if (capped)
            capped[j] = cv;
        if (qk)
            qk[j] = p->qk_mode == 0 ? raw : p->qk_mode == 1 ? cv : z;
        any |= bias > -INFINITY;
        m = z > m ? z : m;
        s[j] = z;
    }
    if (!any || m == -INFINITY) {
        /* no key may be attended: zero probabilities, as the reference */
        memset(s, 0, sizeof(float) * (size_t)t);
    } else {
        float sum = 0.0f;
        for (int64_t j = 0; j < t; j++) {
            s[j] = expf(s[j] - m);
            sum += s[j];
        }
        float inv = 1.0f / sum;
        for (int64_t j = 0; j < t; j++)
            s[j] *= inv;
    }
    if (qk && p->qk_mode == 3)
        memcpy(qk, s, sizeof(float) * (size_t)t);
}

static void att_data_of(const struct op_call *c, const struct tensor *const *in, const struct nn_att_geom *g,
                        struct att_data *a)
{
    *a = (struct att_data){
        .g = g, .p = c->params, .q = in[ATT_Q]->data, .k = in[ATT_K]->data, .v = in[ATT_V]->data,
        .pk = in[ATT_PAST_K] ? in[ATT_PAST_K]->data : NULL, .pv = in[ATT_PAST_V] ? in[ATT_PAST_V]->data : NULL,
        .mask = in[ATT_MASK] ? in[ATT_MASK]->data : NULL,
        .nonpad = in[ATT_NONPAD] ? in[ATT_NONPAD]->data : NULL,
    };
}

/* Copies rows of `width` floats: present = past then the new keys/values. */
static void att_present(const struct nn_att_geom *g, int64_t width, const float *past,
                        const struct nn_att_layout *lp, const float *cur, const struct nn_att_layout *lc,
                        const struct nn_att_layout *lo, float *out)
{
    for (int64_t b = 0; b < g->b; b++)
        for (int64_t h = 0; h < g->hkv; h++)
            for (int64_t s = 0; s < g->t; s++) {
                const float *src = s < g->past ? past + b * lp->sb + h * lp->sh + s * lp->ss
                                               : cur + b * lc->sb + h * lc->sh + (s - g->past) * lc->ss;
                memcpy(out + b * lo->sb + h * lo->sh + s * lo->ss, src, sizeof(float) * (size_t)width);
            }
}

/* Threads for `tasks` independent tasks, and the scratch they need. */
static int att_threads(int64_t tasks)
{
    int nt = omp_get_max_threads();
    return tasks < nt ? (int)(tasks > 0 ? tasks : 1) : nt;
}

static int att_cpu(struct op_call *c)
{
    const struct tensor *in[ATT_N_IN];
    att_inputs(c, 0, in);
    struct nn_att_geom g;
    if (att_geom_in(c, in, &g))
        return -1;
    struct att_data a;
    att_data_of(c, in, &g, &a);
    if (a.nonpad)
        for (int64_t b = 0; b < g.b; b++)
            if (a.nonpad[b] < 0 || a.nonpad[b] > g.t)
                return op_error(c, "nonpad_kv_seqlen[%lld] = %lld is outside [0, %lld]", (long long)b,
                                (long long)a.nonpad[b], (long long)g.t);
    float *y = c->out[0]->data;
    float *qk = c->n_out > 3 && c->out[3] ? c->out[3]->data : NULL;
    for (int o = 1; o < 3 && o < c->n_out; o++)
        if (c->out[o])
            att_present(&g, o == 1 ? g.d : g.dv, o == 1 ? a.pk : a.pv, o == 1 ? &g.pk : &g.pv,
                        o == 1 ? a.k : a.v, o == 1 ? &g.k : &g.v, o == 1 ? &g.prk : &g.prv,
                        c->out[o]->data);
    const int64_t tasks = g.b * g.hq, per = g.sq * g.t;
    if (tasks == 0 || g.sq == 0)
        return 0;
    const int nt = att_threads(tasks);
    size_t need = sizeof(float) * (size_t)per * (size_t)nt;
    float *scratch = nn_scratch_alloc(c, need);
    if (!scratch)
        return op_error(c, "cannot get %zu bytes of scratch for the scores", need);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t task = 0; task < tasks; task++) {
        int64_t b = task / g.hq, h = task % g.hq, kh = h / (g.hq / g.hkv);
        float *s = scratch + (size_t)omp_get_thread_num() * (size_t)per;
        att_scores(&a, b, h, s);
        for (int64_t i = 0; i < g.sq; i++)
            att_softmax_row(&a, b, h, i, s + i * g.t, NULL, qk ? qk + (task * g.sq + i) * g.t : NULL);
        float *ym = y + b * g.y.sb + h * g.y.sh;
        if (g.past)
            nn_sgemm(0, 0, g.sq, g.dv, g.past, 1.0f, s, g.t, a.pv + b * g.pv.sb + kh * g.pv.sh, g.pv.ss, 0.0f,
                     ym, g.y.ss);
        nn_sgemm(0, 0, g.sq, g.dv, g.skv, 1.0f, s + g.past, g.t, a.v + b * g.v.sb + kh * g.v.sh, g.v.ss,
                 g.past ? 1.0f : 0.0f, ym, g.y.ss);
    }
    nn_scratch_free(c, scratch);
    return 0;
}

/* ---- gradient -------------------------------------------------------------------
 * AttentionGrad(dY, Q, K, V, attn_mask, past_key, past_value,
 * nonpad_kv_seqlen, dPresentKey, dPresentValue; the forward attributes) ->
 * dQ, dK, dV, dPastKey, dPastValue, every optional input omitted where the
 * forward call had none (dY too, when only the present outputs have a
 * gradient). Per (batch, key head), one thread each, over the query heads
 * of its group in order: the probabilities P are recomputed from Q and K
 * (nothing of the forward's [Sq, T] matrices is kept), then
 *   dP = dY V^T, dZ = P * (dP - rowsum(dP * P)), dS = dZ * softcap'(.),
 *   dQ = scale dS K, dK += scale dS^T Q, dV += P^T dY,
 * the key/value rows of the past cache going to dPastKey/dPastValue. No
 * two tasks write one value: deterministic. attn_mask and nonpad_kv_seqlen
 * get no gradient (a float mask is treated as a constant bias), nor does
 * the qk_matmul_output debug output pass any back. */
enum {
    AG_DY, AG_Q, AG_DPRESENT_K = AG_Q + ATT_N_IN, AG_DPRESENT_V, AG_N_IN
};

static int att_grad(struct grad_ctx *g)
{
    const struct op_call *f = g->fwd;
    int dy_pk = f->n_out > 1 ? g->dy[1] : -1, dy_pv = f->n_out > 2 ? g->dy[2] : -1;
    if (g->dy[0] < 0 && dy_pk < 0 && dy_pv < 0)
        return 0;
    const struct attention_params *p = f->params;
    struct onnx_attr at[8] = {
        { .name = "scale", .type = ONNX_ATTR_FLOAT, .f = p->scale },
        { .name = "softcap", .type = ONNX_ATTR_FLOAT, .f = p->softcap },
        { .name = "is_causal", .type = ONNX_ATTR_INT, .i = p->is_causal },
        { .name = "q_num_heads", .type = ONNX_ATTR_INT, .i = p->q_num_heads },
        { .name = "kv_num_heads", .type = ONNX_ATTR_INT, .i = p->kv_num_heads },
        { .name = "left_window_size", .type = ONNX_ATTR_INT, .i = p->left_window },
        { .name = "right_window_size", .type = ONNX_ATTR_INT, .i = p->right_window },
    };
    int n_at = 7;
    if (p->scale == 0.0f)              /* the default: drop it (0 is not a valid scale) */
        at[0] = at[--n_at];
    int in[AG_N_IN];
    in[AG_DY] = g->dy[0];
    for (int i = 0; i < ATT_N_IN; i++)
        in[AG_Q + i] = i < f->n_in && f->in[i] ? g->in[i] : -1;
    in[AG_DPRESENT_K] = dy_pk;
    in[AG_DPRESENT_V] = dy_pv;
    int n_in = AG_N_IN;
    while (n_in > AG_Q + 3 && in[n_in - 1] < 0)
        n_in--;
    int out[5] = { -1, -1, -1, -1, -1 };
    int has_past = f->n_in > ATT_PAST_K && f->in[ATT_PAST_K];
    if (g->emit(g, "AttentionGrad", at, n_at, n_in, in, has_past ? 5 : 3, out))
        return -1;
    const int targets[5] = { ATT_Q, ATT_K, ATT_V, ATT_PAST_K, ATT_PAST_V };
    for (int o = 0; o < (has_past ? 5 : 3); o++)
        if (g->need_dx[targets[o]] && g->add_dx(g, targets[o], out[o]))
            return -1;
    return 0;
}

static int att_grad_infer(struct op_call *c)
{
    const struct tensor *in[ATT_N_IN];
    att_inputs(c, AG_Q, in);
    struct nn_att_geom g;
    if (att_geom_in(c, in, &g))
        return -1;
    char d1[128], d2[128];
    const struct tensor *dy = c->in[AG_DY];
    if (dy) {
        struct tensor want = { .dtype = ONNX_DTYPE_FLOAT, .rank = g.rank3 ? 3 : 4 };
        int64_t d3[3] = { g.b, g.sq, g.hq * g.dv }, d4[4] = { g.b, g.hq, g.sq, g.dv };
        memcpy(want.dims, g.rank3 ? d3 : d4, sizeof(int64_t) * (size_t)want.rank);
        if (dy->dtype != ONNX_DTYPE_FLOAT || !tensor_same_shape(dy, &want))
            return op_error(c, "dY %s must be float32 %s", tensor_describe(dy, d1, sizeof d1),
                            tensor_describe(&want, d2, sizeof d2));
    }
    for (int i = 0; i < 2; i++) {
        const struct tensor *dp = AG_DPRESENT_K + i < c->n_in ? c->in[AG_DPRESENT_K + i] : NULL;
        struct tensor want = { .dtype = ONNX_DTYPE_FLOAT, .rank = 4,
                               .dims = { g.b, g.hkv, g.t, i ? g.dv : g.d } };
        if (dp && (dp->dtype != ONNX_DTYPE_FLOAT || !tensor_same_shape(dp, &want)))
            return op_error(c, "dPresent%s %s must be float32 %s", i ? "Value" : "Key",
                            tensor_describe(dp, d1, sizeof d1), tensor_describe(&want, d2, sizeof d2));
    }
    for (int o = 0; o < c->n_out; o++) {
        const struct tensor *src = in[o < 3 ? ATT_Q + o : ATT_PAST_K + o - 3];
        if (!c->out[o])
            continue;
        if (!src)
            return op_error(c, "output %d needs the forward input it is the gradient of", o);
        *c->out[o] = *src;
        c->out[o]->data = NULL;
    }
    return 0;
}

static struct op_cost att_grad_cost(const struct op_call *c)
{
    const struct tensor *in[ATT_N_IN];
    att_inputs(c, AG_Q, in);
    struct op_cost cost = cost_memory(c);
    struct nn_att_geom g;
    if (att_geom_in(c, in, &g) == 0)
        cost.flops = 2.0 * (double)(g.b * g.hq) * (double)g.sq * (double)g.t * (2.0 * (double)g.d
                   + 3.0 * (double)g.dv) + 10.0 * (double)(g.b * g.hq) * (double)g.sq * (double)g.t;
    return cost;
}

/* The dK/dV (or dPastKey/dPastValue) rows of one (batch, key head) start
 * from dPresent (or zero), so the products below can all accumulate. */
static void att_grad_init(const struct nn_att_geom *g, int64_t b, int64_t kh, int64_t width,
                          const float *dpresent, const struct nn_att_layout *lpr, float *dpast,
                          const struct nn_att_layout *lp, float *dcur, const struct nn_att_layout *lc)
{
    for (int64_t s = 0; s < g->t; s++) {
        float *dst = s < g->past ? (dpast ? dpast + b * lp->sb + kh * lp->sh + s * lp->ss : NULL)
                                 : (dcur ? dcur + b * lc->sb + kh * lc->sh + (s - g->past) * lc->ss : NULL);
        if (!dst)
            continue;
        if (dpresent)
            memcpy(dst, dpresent + b * lpr->sb + kh * lpr->sh + s * lpr->ss, sizeof(float) * (size_t)width);
        else
            memset(dst, 0, sizeof(float) * (size_t)width);
    }
}

static int att_grad_cpu(struct op_call *c)
{
    const struct tensor *in[ATT_N_IN];
    att_inputs(c, AG_Q, in);
    struct nn_att_geom g;
    if (att_geom_in(c, in, &g))
        return -1;
    struct att_data a;
    att_data_of(c, in, &g, &a);
    if (a.nonpad)
        for (int64_t b = 0; b < g.b; b++)
            if (a.nonpad[b] < 0 || a.nonpad[b] > g.t)
                return op_error(c, "nonpad_kv_seqlen[%lld] = %lld is outside [0, %lld]", (long long)b,
                                (long long)a.nonpad[b], (long long)g.t);
    const float *dy = c->in[AG_DY] ? c->in[AG_DY]->data : NULL;
    const float *dpk = AG_DPRESENT_K < c->n_in && c->in[AG_DPRESENT_K] ? c->in[AG_DPRESENT_K]->data : NULL;
    const float *dpv = AG_DPRESENT_V < c->n_in && c->in[AG_DPRESENT_V] ? c->in[AG_DPRESENT_V]->data : NULL;
    float *dout[5] = { NULL };
    for (int o = 0; o < c->n_out && o < 5; o++)
        dout[o] = c->out[o] ? c->out[o]->data : NULL;
    float *dq = dout[0], *dk = dout[1], *dv = dout[2], *dpast_k = dout[3], *dpast_v = dout[4];
    const float cap = a.p->softcap, scale = g.scale;
    const int64_t group = g.hq / g.hkv, tasks = g.b * g.hkv, per = g.sq * g.t;
    if (tasks == 0)
        return 0;
    const int nt = att_threads(tasks);
    /* P and dP per thread, and the capped scores when softcap needs them */
    const size_t mats = cap > 0.0f ? 3 : 2;
    size_t need = sizeof(float) * mats * (size_t)per * (size_t)nt;
    float *scratch = nn_scratch_alloc(c, need);
    if (!scratch)
        return op_error(c, "cannot get %zu bytes of scratch for the probabilities", need);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t task = 0; task < tasks; task++) {
        int64_t b = task / g.hkv, kh = task % g.hkv;
        float *pm = scratch + (size_t)omp_get_thread_num() * mats * (size_t)per, *dpm = pm + per;
        float *cm = mats == 3 ? dpm + per : NULL;
        const float *km = a.k + b * g.k.sb + kh * g.k.sh, *vm = a.v + b * g.v.sb + kh * g.v.sh;
        const float *pkm = g.past ? a.pk + b * g.pk.sb + kh * g.pk.sh : NULL;
        const float *pvm = g.past ? a.pv + b * g.pv.sb + kh * g.pv.sh : NULL;
        float *dkm = dk ? dk + b * g.k.sb + kh * g.k.sh : NULL, *dvm = dv ? dv + b * g.v.sb + kh * g.v.sh : NULL;
        float *dpkm = dpast_k ? dpast_k + b * g.pk.sb + kh * g.pk.sh : NULL;
        float *dpvm = dpast_v ? dpast_v + b * g.pv.sb + kh * g.pv.sh : NULL;
        att_grad_init(&g, b, kh, g.d, dpk, &g.prk, dpast_k, &g.pk, dk, &g.k);
        att_grad_init(&g, b, kh, g.dv, dpv, &g.prv, dpast_v, &g.pv, dv, &g.v);
        for (int64_t h = kh * group; h < (kh + 1) * group; h++) {
            const float *qm = a.q + b * g.q.sb + h * g.q.sh;
            float *dqm = dq ? dq + b * g.q.sb + h * g.q.sh : NULL;
            if (!dy) {
                if (dqm)
                    for (int64_t i = 0; i < g.sq; i++)
                        memset(dqm + i * g.q.ss, 0, sizeof(float) * (size_t)g.d);
                continue;
            }
            const float *dym = dy + b * g.y.sb + h * g.y.sh;
            att_scores(&a, b, h, pm);
            for (int64_t i = 0; i < g.sq; i++)
                att_softmax_row(&a, b, h, i, pm + i * g.t, cm ? cm + i * g.t : NULL, NULL);
            /* dP = dY V_all^T */
            if (g.past)
                nn_sgemm(0, 1, g.sq, g.past, g.dv, 1.0f, dym, g.y.ss, pvm, g.pv.ss, 0.0f, dpm, g.t);
            nn_sgemm(0, 1, g.sq, g.skv, g.dv, 1.0f, dym, g.y.ss, vm, g.v.ss, 0.0f, dpm + g.past, g.t);
            /* dV_all += P^T dY */
            if (g.past && dpvm)
                nn_sgemm(1, 0, g.past, g.dv, g.sq, 1.0f, pm, g.t, dym, g.y.ss, 1.0f, dpvm, g.pv.ss);
            if (dvm)
                nn_sgemm(1, 0, g.skv, g.dv, g.sq, 1.0f, pm + g.past, g.t, dym, g.y.ss, 1.0f, dvm, g.v.ss);
            /* dP -> dS in place */
            for (int64_t i = 0; i < g.sq; i++) {
                float *pr = pm + i * g.t, *dr = dpm + i * g.t, *cr = cm ? cm + i * g.t : NULL;
                float dot = 0.0f;
                for (int64_t j = 0; j < g.t; j++)
                    dot += pr[j] * dr[j];
                for (int64_t j = 0; j < g.t; j++) {
                    float dz = pr[j] * (dr[j] - dot);
                    if (cap > 0.0f) {
                        float th = cr[j] / cap;
                        dz *= 1.0f - th * th;
                    }
                    dr[j] = dz;
                }
            }
            /* dQ = scale dS K_all; dK_all += scale dS^T Q */
            if (dqm) {
                if (g.past)
                    nn_sgemm(0, 0, g.sq, g.d, g.past, scale, dpm, g.t, pkm, g.pk.ss, 0.0f, dqm, g.q.ss);
                nn_sgemm(0, 0, g.sq, g.d, g.skv, scale, dpm + g.past, g.t, km, g.k.ss, g.past ? 1.0f : 0.0f,
                         dqm, g.q.ss);
            }
            if (g.past && dpkm)
                nn_sgemm(1, 0, g.past, g.d, g.sq, scale, dpm, g.t, qm, g.q.ss, 1.0f, dpkm, g.pk.ss);
            if (dkm)
                nn_sgemm(1, 0, g.skv, g.d, g.sq, scale, dpm + g.past, g.t, qm, g.q.ss, 1.0f, dkm, g.k.ss);
        }
    }
    nn_scratch_free(c, scratch);
    return 0;
}

const struct op_def op_attention = {
    .domain = "", .name = "Attention", .since = { 23, 24, 25 },
    .min_in = 3, .max_in = 7, .min_out = 1, .max_out = 4,
    .parse = att_parse, .infer = att_infer, .cost = att_cost,
    .kernel = { [BACKEND_CPU] = att_cpu },
    .grad = att_grad,
    .grad_saves_in = 0x7fu,
};

const struct op_def op_attention_grad = {
    .domain = "dtrexec", .name = "AttentionGrad", .since = { 1 },
    .min_in = AG_Q + 3, .max_in = AG_N_IN, .min_out = 1, .max_out = 5,
    .parse = att_parse, .infer = att_grad_infer, .cost = att_grad_cost,
    .kernel = { [BACKEND_CPU] = att_grad_cpu },
};
