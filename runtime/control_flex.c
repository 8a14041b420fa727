/* runtime/control_flex.c — FlexAttention (ai.onnx.preview) as ordinary
 * calls: Mul by sqrt(scale), the grouped-query expansion of K and V, the
 * two products as Einsum, Softmax, Cast to and from the softmax precision,
 * with its score_mod and prob_mod subgraphs instantiated between them. See
 * control.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/attn-params.h"
#include "runtime/call.h"
#include "runtime/control_util.h"
#include "runtime/emit.h"
#include "runtime/memory.h"
#include "runtime/names.h"
#include "runtime/plan.h"
#include "runtime/run.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/values.h"

/* ---- FlexAttention -------------------------------------------------------- */

/* One step of a chain: out[0] (made here, held once) = op(in). */
static enum dtrx_status flex_step(struct dtrx_session *s, const struct rt_call *c, const char *op,
                                  const struct onnx_attr *attrs, int n_attrs, int n_in, const int *in, int *out)
{
    *out = -1;
    return rt_ctl_emit_run(s, op, attrs, n_attrs, n_in, in, 1, out, c->name);
}

/* Replaces *id (held) by the result of op(*id, extra...), letting *id go. */
static enum dtrx_status flex_then(struct dtrx_session *s, const struct rt_call *c, const char *op,
                                  const struct onnx_attr *attrs, int n_attrs, int *id, int extra)
{
    int in[2] = { *id, extra }, out;
    enum dtrx_status st = flex_step(s, c, op, attrs, n_attrs, extra >= 0 ? 2 : 1, in, &out);
    rt_value_unhold(s, *id);
    *id = st ? -1 : out;
    return st;
}

static enum dtrx_status flex_cast(struct dtrx_session *s, const struct rt_call *c, int *id, int dtype)
{
    if (s->values[*id]->t.dtype == dtype)
        return DTRX_OK;
    struct onnx_attr to = { .name = "to", .type = ONNX_ATTR_INT, .i = dtype };
    return flex_then(s, c, "Cast", &to, 1, id, -1);
}

/* K or V [B, Hkv, S, D] with each head repeated `group` times in place:
 * Unsqueeze to [B, Hkv, 1, S, D], Expand, Reshape to [B, Hkv*group, S, D]. */
static enum dtrx_status flex_repeat(struct dtrx_session *s, const struct rt_call *c, int *id, int64_t group)
{
    const struct tensor *t = &s->values[*id]->t;
    int64_t axis = 2, big[5] = { t->dims[0], t->dims[1], group, t->dims[2], t->dims[3] };
    int64_t flat[4] = { t->dims[0], t->dims[1] * group, t->dims[2], t->dims[3] };
    int ax = rt_ctl_const_i64(s, 1, 1, &axis, c->name), ex = rt_ctl_const_i64(s, 1, 5, big, c->name);
    int rs = rt_ctl_const_i64(s, 1, 4, flat, c->name);
    enum dtrx_status st = ax < 0 || ex < 0 || rs < 0 ? DTRX_ERR_BUDGET : DTRX_OK;
    if (!st)
        st = flex_then(s, c, "Unsqueeze", NULL, 0, id, ax);
    if (!st)
        st = flex_then(s, c, "Expand", NULL, 0, id, ex);
    if (!st)
        st = flex_then(s, c, "Reshape", NULL, 0, id, rs);
    for (int k = 0; k < 3; k++) {
        int h = k == 0 ? ax : k == 1 ? ex : rs;
        if (h >= 0)
            rt_value_unhold(s, h);
    }
    return st;
}

/* Runs modifier subgraph `attr` (if the node has one) on *id, which it
 * replaces; the result must keep the input's dtype and shape. */
static enum dtrx_status flex_mod(struct dtrx_session *s, const struct rt_call *c, const char *attr, int *id)
{
    const struct onnx_graph *g = rt_ctl_graph_attr(c, attr);
    if (!g)
        return DTRX_OK;
    char label[512];
    snprintf(label, sizeof label, "%s/%s", c->name, attr);
    struct rt_ctl_instance in;
    enum dtrx_status st = rt_ctl_instance_exec(s, c, g, id, label, &in);
    if (st)
        return st;
    const struct tensor *a = &s->values[*id]->t, *b = &s->values[in.out[0]]->t;
    if (s->values[in.out[0]]->list.container || b->dtype != a->dtype || !tensor_same_shape(a, b)) {
        char da[128], db[128];
        st = rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): subgraph %s turns %s into %s; it must keep the dtype and "
                     "shape", c->name, c->def->name, attr, tensor_describe(a, da, sizeof da),
                     tensor_describe(b, db, sizeof db));
    }
    rt_value_unhold(s, *id);
    *id = in.out[0];
    rt_ctl_instance_free(&in);
    if (st) {
        rt_value_unhold(s, *id);
        *id = -1;
    }
    return st;
}

static enum dtrx_status exec_flex_attention(struct dtrx_session *s, struct rt_call *c)
{
    const struct flex_attention_params *p = c->params;
    const struct tensor *q = &s->values[c->in[0]]->t, *k = &s->values[c->in[1]]->t;
    const struct tensor *v = &s->values[c->in[2]]->t;
    char dq[128], dk[128], dv[128];
    tensor_describe(q, dq, sizeof dq);
    tensor_describe(k, dk, sizeof dk);
    tensor_describe(v, dv, sizeof dv);
    for (int i = 0; i < 3; i++)
        if (s->values[c->in[i]]->list.container)
            return rt_fail(DTRX_ERR_INPUT, "node '%s' (FlexAttention): input %d is not a tensor", c->name, i);
    if (q->rank != 4 || k->rank != 4 || v->rank != 4)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (FlexAttention): Q %s, K %s and V %s must be rank 4", c->name,
                       dq, dk, dv);
    if ((q->dtype != ONNX_DTYPE_FLOAT && q->dtype != ONNX_DTYPE_DOUBLE) || k->dtype != q->dtype
        || v->dtype != q->dtype)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (FlexAttention): Q %s, K %s and V %s must share one float or "
                       "double type (float16 and bfloat16 models run in float32)", c->name, dq, dk, dv);
    if (k->dims[0] != q->dims[0] || v->dims[0] != q->dims[0] || k->dims[3] != q->dims[3]
        || v->dims[1] != k->dims[1] || v->dims[2] != k->dims[2])
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (FlexAttention): Q %s, K %s, V %s do not fit (B, Hq, L, E), "
                       "(B, Hkv, S, E), (B, Hkv, S, Ev)", c->name, dq, dk, dv);
    int64_t hq = q->dims[1], hkv = k->dims[1];
    if (hkv <= 0 || hq % hkv)
        return rt_fail(DTRX_ERR_INPUT, "node '%s' (FlexAttention): Q's %lld heads are not a multiple of K's %lld",
                       c->name, (long long)hq, (long long)hkv);
    int in_dtype = q->dtype;
    int sm_dtype = p->softmax_precision == ONNX_DTYPE_DOUBLE ? ONNX_DTYPE_DOUBLE
                   : p->softmax_precision ? ONNX_DTYPE_FLOAT : in_dtype;
    /* As the reference: scale in float32, its square root applied to Q and K. */
    double scale = p->has_scale ? (double)p->scale : 1.0 / sqrt((double)q->dims[3]);
    float root_f = sqrtf((float)scale);
    double root_d = root_f;
    struct tensor rt = { .dtype = in_dtype, .rank = 0,
                         .data = in_dtype == ONNX_DTYPE_DOUBLE ? (void *)&root_d : (void *)&root_f };
    int root = rt_ctl_constant_held(s, &rt, c->name);
    if (root < 0)
        return DTRX_ERR_BUDGET;
    int qs = -1, ks = -1, vv = c->in[2], scores = -1, out = -1;
    rt_value_hold(s, vv);
    int in2[2] = { c->in[0], root };
    enum dtrx_status st = flex_step(s, c, "Mul", NULL, 0, 2, in2, &qs);
    if (!st) {
        in2[0] = c->in[1];
        st = flex_step(s, c, "Mul", NULL, 0, 2, in2, &ks);
    }
    rt_value_unhold(s, root);
    if (!st && hq != hkv)
        st = flex_repeat(s, c, &ks, hq / hkv);
    if (!st && hq != hkv)
        st = flex_repeat(s, c, &vv, hq / hkv);
    /* Einsum, not MatMul: it takes double as well, and these two patterns
     * are one batched GEMM each, K read transposed in place. */
    static char qk_eq[] = "bhld,bhsd->bhls", pv_eq[] = "bhls,bhsd->bhld";
    struct onnx_attr qk = { .name = "equation", .type = ONNX_ATTR_STRING, .s = qk_eq, .s_len = sizeof qk_eq - 1 };
    struct onnx_attr pv = { .name = "equation", .type = ONNX_ATTR_STRING, .s = pv_eq, .s_len = sizeof pv_eq - 1 };
    if (!st) {
        int mm[2] = { qs, ks };
        st = flex_step(s, c, "Einsum", &qk, 1, 2, mm, &scores);
    }
    if (!st)
        st = flex_cast(s, c, &scores, sm_dtype);
    if (!st)
        st = flex_mod(s, c, "score_mod", &scores);
    if (!st) {
        struct onnx_attr a = { .name = "axis", .type = ONNX_ATTR_INT, .i = -1 };
        st = flex_then(s, c, "Softmax", &a, 1, &scores, -1);
    }
    if (!st)
        st = flex_mod(s, c, "prob_mod", &scores);
    if (!st)
        st = flex_cast(s, c, &vv, sm_dtype);
    if (!st) {
        int mm[2] = { scores, vv };
        st = flex_step(s, c, "Einsum", &pv, 1, 2, mm, &out);
    }
    if (!st)
        st = flex_cast(s, c, &out, in_dtype);
    if (!st)
        st = rt_ctl_assign(s, c, out, c->out[0]);
    int held[5] = { qs, ks, vv, scores, out };
    for (int i = 0; i < 5; i++)
        if (held[i] >= 0)
            rt_value_unhold(s, held[i]);
    return st;
}

const struct rt_ctl_op rt_ctl_flex_ops[] = {
    { "FlexAttention", exec_flex_attention },
};
const int rt_ctl_flex_n_ops = (int)(sizeof rt_ctl_flex_ops / sizeof rt_ctl_flex_ops[0]);
