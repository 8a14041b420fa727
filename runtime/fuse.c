/* runtime/fuse.c — the inference graph optimization: rewrites a session's
 * calls so that each Conv, with the BatchNormalization (inference form), the
 * residual Add and the activation (Relu, LeakyRelu, Clip) that follow it
 * alone, becomes one dtrexec:FusedConv call (ops/fused_conv.c), and lets
 * chains of convolutions keep oneDNN's channel-blocked layout between them.
 *
 * When: once, before the second run of a session created with
 * optimize_inference that is not training, unbudgeted, on the host. After
 * one run every value has its shape, which the rewrite needs: a residual is
 * fused only when it has the convolution's shape (no broadcasting), and
 * FusedConv rechecks that on every later run. Training never sees fused
 * calls: dtrx_session_train_begin refuses a fused session, since folding
 * changes what the parameters mean.
 *
 * What the rewrite keeps true: calls stay in an order where every input is
 * computed first (a fused call takes the place of the last call it
 * replaces, so the residual exists by then); the consumer counts of values
 * are those of the new calls (values only the removed calls read drop to
 * none); graph outputs are never fused away; the weights themselves are
 * untouched — FusedConv folds them into its weight cache, a persistent
 * arena tensor per call, on its first execution.
 *
 * Layouts: a fused call's output is kept channel-blocked when only fused
 * convolutions (group 1 or depthwise) read it, as input or residual, and its
 * channels are a multiple of FUSE_BLOCK; reader and writer are told through
 * the x_blocked / y_blocked / r_blocked attributes. The bytes are those of
 * the NCHW tensor, so memory, DTR and tracing see no difference.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"
#include "runtime/emit.h"
#include "runtime/fuse.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/values.h"

/* Channel multiple of the blocked layouts: AVX-512's 16 (AVX2's 8 divides it). */
#define FUSE_BLOCK 16
#define FUSE_MAX_ATTRS 24

struct fuse_chain {
    int conv, bn, add, act;        /* call indices, -1 when absent */
    int last;                      /* the last of them: where the fused call runs */
    int res;                       /* value id of the residual, -1 */
    int out;                       /* value id of the result */
    int group;
    int depthwise;                 /* one input and one output channel per group */
    int64_t m;                     /* output channels */
    const char *act_name;          /* "" or the activation's op */
    float alpha, beta;
    int x_blocked, y_blocked, r_blocked;
};

static int is_op(const struct rt_call *c, const char *domain, const char *name)
{
    return c->def && !strcmp(c->def->domain, domain) && !strcmp(c->def->name, name);
}

static int is_model_op(const struct rt_call *c, const char *name)
{
    return c->node && !c->scope && is_op(c, "", name);
}

static int float_initializer(const struct dtrx_session *s, int id, int64_t numel)
{
    if (id < 0)
        return 0;
    const struct rt_value *v = s->values[id];
    return v->kind == RT_VALUE_INITIALIZER && v->mem.storage && v->t.dtype == ONNX_DTYPE_FLOAT
           && (numel < 0 || tensor_numel(&v->t) == numel);
}

/* The one call after `from` that reads value v, or -1 when v has other
 * readers (graph output, more consumers, a subgraph) or is claimed. */
static int sole_consumer(const struct dtrx_session *s, int v, int from, const uint8_t *claimed)
{
    const struct rt_value *val = s->values[v];
    if (val->use.is_output || val->use.consumers != 1 || val->list.container != RT_TENSOR)
        return -1;
    for (int k = from + 1; k < s->n_calls; k++)
        for (int i = 0; i < s->calls[k].n_in; i++)
            if (s->calls[k].in[i] == v)
                return claimed[k] ? -1 : k;
    return -1;
}

static int same_dims(const struct tensor *a, const struct tensor *b)
{
    return a->dtype == b->dtype && tensor_same_shape(a, b);
}

/* Clip's bounds: attributes before opset 11, constant inputs from 11. */
static int clip_bounds(const struct dtrx_session *s, const struct rt_call *c, float *lo, float *hi)
{
    *lo = -FLT_MAX;
    *hi = FLT_MAX;
    if (c->version < 11) {
        *lo = onnx_node_attr_float(c->node, "min", -FLT_MAX);
        *hi = onnx_node_attr_float(c->node, "max", FLT_MAX);
        return 1;
    }
    for (int i = 1; i < c->n_in; i++) {
        if (c->in[i] < 0)
            continue;
        if (!float_initializer(s, c->in[i], 1))
            return 0;
        float v = *(const float *)s->values[c->in[i]]->t.data;
        *(i == 1 ? lo : hi) = v;
    }
    return 1;
}

/* The chain that starts at Conv call k; 0 when k does not start one. */
static int chain_find(const struct dtrx_session *s, int k, const uint8_t *claimed, struct fuse_chain *ch)
{
    const struct rt_call *c = &s->calls[k];
    if (!is_model_op(c, "Conv") || c->n_out != 1 || c->out[0] < 0 || c->in[0] < 0)
        return 0;
    const struct rt_value *x = s->values[c->in[0]], *y = s->values[c->out[0]];
    if (!float_initializer(s, c->in[1], -1) || (c->n_in > 2 && c->in[2] >= 0 && !float_initializer(s, c->in[2], -1))
        || x->t.dtype != ONNX_DTYPE_FLOAT || y->t.rank < 3 || y->t.rank > 5 || y->list.container != RT_TENSOR)
        return 0;
    const struct tensor *w = &s->values[c->in[1]]->t;
    *ch = (struct fuse_chain){ .conv = k, .bn = -1, .add = -1, .act = -1, .last = k, .res = -1,
                               .out = c->out[0], .m = w->dims[0], .act_name = "" };
    ch->group = (int)onnx_node_attr_int(c->node, "group", 1);
    ch->depthwise = ch->group > 1 && w->dims[1] == 1 && ch->m == ch->group;

    int j = sole_consumer(s, ch->out, k, claimed);
    const struct rt_call *n = j >= 0 ? &s->calls[j] : NULL;
    if (n && is_model_op(n, "BatchNormalization") && n->n_in == 5 && n->in[0] == ch->out
        && onnx_node_attr_int(n->node, "training_mode", 0) == 0) {
        int ok = 1;
        for (int i = 1; i < 5; i++)
            ok &= float_initializer(s, n->in[i], ch->m);
        for (int i = 1; i < n->n_out; i++)
            ok &= n->out[i] < 0;
        if (ok && n->out[0] >= 0) {
            ch->bn = j;
            ch->out = n->out[0];
            ch->last = j;
            j = sole_consumer(s, ch->out, j, claimed);
            n = j >= 0 ? &s->calls[j] : NULL;
        }
    }
    if (n && is_model_op(n, "Add") && n->n_in == 2 && n->in[0] >= 0 && n->in[1] >= 0 && n->in[0] != n->in[1]
        && n->out[0] >= 0) {
        int r = n->in[0] == ch->out ? n->in[1] : n->in[0];
        const struct rt_value *rv = s->values[r];
        if (rv->list.container == RT_TENSOR && same_dims(&rv->t, &s->values[ch->out]->t)) {
            ch->add = j;
            ch->res = r;
            ch->out = n->out[0];
            ch->last = j;
            j = sole_consumer(s, ch->out, j, claimed);
            n = j >= 0 ? &s->calls[j] : NULL;
        }
    }
    if (n && n->n_in >= 1 && n->in[0] == ch->out && n->n_out == 1 && n->out[0] >= 0) {
        if (is_model_op(n, "Relu")) {
            ch->act_name = "Relu";
        } else if (is_model_op(n, "LeakyRelu")) {
            ch->act_name = "LeakyRelu";
            ch->alpha = onnx_node_attr_float(n->node, "alpha", 0.01f);
        } else if (is_model_op(n, "Clip") && clip_bounds(s, n, &ch->alpha, &ch->beta)) {
            ch->act_name = "Clip";
        }
        if (ch->act_name[0]) {
            ch->act = j;
            ch->out = n->out[0];
            ch->last = j;
        }
    }
    return 1;
}

/* Blocked layouts where every reader of a chain's result is a fused
 * convolution that can take it (see the header comment). */
static void choose_layouts(const struct dtrx_session *s, struct fuse_chain *chains, int n)
{
    for (int a = 0; a < n; a++) {
        int v = chains[a].out;
        const struct rt_value *val = s->values[v];
        if (val->use.is_output || chains[a].m % FUSE_BLOCK || val->use.consumers < 1)
            continue;
        int uses = 0, ok = 1;
        for (int b = 0; b < n && ok; b++) {
            const struct rt_call *c = &s->calls[chains[b].conv];
            if (c->in[0] == v) {
                uses++;
                ok = chains[b].group == 1 || chains[b].depthwise;
            }
            if (chains[b].res == v)
                uses++;
        }
        if (!ok || uses != val->use.consumers)
            continue;
        chains[a].y_blocked = 1;
        for (int b = 0; b < n; b++) {
            if (s->calls[chains[b].conv].in[0] == v)
                chains[b].x_blocked = 1;
            if (chains[b].res == v)
                chains[b].r_blocked = 1;
        }
    }
}

/* ---- building a FusedConv call ------------------------------------------- */

static int attr_copy(struct onnx_attr *d, const struct onnx_attr *a)
{
    memset(d, 0, sizeof *d);
    d->type = a->type;
    d->f = a->f;
    d->i = a->i;
    d->n = a->n;
    d->name = strdup(a->name);
    if (!d->name)
        return -1;
    if (a->s && !(d->s = strdup(a->s)))
        return -1;
    d->s_len = a->s_len;
    if (a->type == ONNX_ATTR_INTS && a->n) {
        if (!(d->ints = malloc(sizeof *d->ints * (size_t)a->n)))
            return -1;
        memcpy(d->ints, a->ints, sizeof *d->ints * (size_t)a->n);
    }
    return 0;
}

static int attr_int(struct onnx_attr *d, const char *name, int64_t v)
{
    *d = (struct onnx_attr){ .name = strdup(name), .type = ONNX_ATTR_INT, .i = v };
    return d->name ? 0 : -1;
}

static int attr_float(struct onnx_attr *d, const char *name, float v)
{
    *d = (struct onnx_attr){ .name = strdup(name), .type = ONNX_ATTR_FLOAT, .f = v };
    return d->name ? 0 : -1;
}

static int attr_string(struct onnx_attr *d, const char *name, const char *v)
{
    *d = (struct onnx_attr){ .name = strdup(name), .type = ONNX_ATTR_STRING, .s = strdup(v), .s_len = strlen(v) };
    return d->name && d->s ? 0 : -1;
}

/* The node behind a fused call (owned by the call, freed by rt_call_clear):
 * Conv's window attributes, then what the fused ops add. */
static struct onnx_node *fused_node(const struct dtrx_session *s, const struct fuse_chain *ch)
{
    const struct onnx_node *conv = s->calls[ch->conv].node;
    struct onnx_node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->domain = "dtrexec";
    n->name = strdup(conv->name);
    n->op_type = strdup("FusedConv");
    n->inputs = calloc(1, sizeof(char *));
    n->outputs = calloc(1, sizeof(char *));
    n->attrs = calloc(FUSE_MAX_ATTRS, sizeof *n->attrs);
    int bad = !n->name || !n->op_type || !n->inputs || !n->outputs || !n->attrs;
    static const char *const window[] = { "auto_pad", "kernel_shape", "strides", "dilations", "pads", "group" };
    for (int i = 0; !bad && i < conv->n_attrs; i++)
        for (int k = 0; k < 6; k++)
            if (!strcmp(conv->attrs[i].name, window[k]) && n->n_attrs < FUSE_MAX_ATTRS - 8)
                bad |= attr_copy(&n->attrs[n->n_attrs++], &conv->attrs[i]);
    if (!bad && ch->bn >= 0)
        bad |= attr_float(&n->attrs[n->n_attrs++], "epsilon",
                          onnx_node_attr_float(s->calls[ch->bn].node, "epsilon", 1e-5f));
    if (!bad)
        bad |= attr_string(&n->attrs[n->n_attrs++], "activation", ch->act_name)
               || attr_float(&n->attrs[n->n_attrs++], "alpha", ch->alpha)
               || attr_float(&n->attrs[n->n_attrs++], "beta", ch->beta)
               || attr_int(&n->attrs[n->n_attrs++], "x_blocked", ch->x_blocked)
               || attr_int(&n->attrs[n->n_attrs++], "y_blocked", ch->y_blocked)
               || attr_int(&n->attrs[n->n_attrs++], "r_blocked", ch->r_blocked);
    if (bad) {
        struct rt_call tmp = { .emitted = n };
        rt_call_clear(&tmp);
        return NULL;
    }
    return n;
}

/* A persistent, zeroed weight cache for the chain's call; -1 without one
 * (the call then folds into scratch each time). */
static int weight_cache(struct dtrx_session *s, const struct fuse_chain *ch)
{
    const struct tensor *w = &s->values[s->calls[ch->conv].in[1]]->t;
    size_t bytes = op_fused_conv_cache_bytes(w, ch->group);
    if (!bytes)
        return -1;
    struct tensor t = { .dtype = ONNX_DTYPE_FLOAT, .rank = 1, .dims = { (int64_t)(bytes / sizeof(float)) } };
    t.data = calloc(1, bytes);
    char name[512];
    snprintf(name, sizeof name, "%s.fused_weights", s->calls[ch->conv].node->name);
    int id = t.data ? rt_persistent_new(s, &t, name) : -1;
    free(t.data);
    if (id >= 0)
        s->stats.pinned_bytes += bytes;
    return id;
}

static enum dtrx_status fused_call(struct dtrx_session *s, const struct fuse_chain *ch, struct rt_call *out)
{
    const struct rt_call *conv = &s->calls[ch->conv];
    memset(out, 0, sizeof *out);
    out->emitted = fused_node(s, ch);
    out->in = malloc(sizeof(int) * 9);
    out->out = malloc(sizeof(int));
    if (!out->emitted || !out->in || !out->out) {
        rt_call_clear(out);
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory fusing node '%s'", conv->name);
    }
    out->def = op_registry_find("dtrexec", "FusedConv", 1, &out->version);
    out->name = out->emitted->name;
    out->origin = "fuse";
    out->n_in = 9;
    out->n_out = 1;
    int *in = out->in;
    in[0] = conv->in[0];
    in[1] = conv->in[1];
    in[2] = conv->n_in > 2 ? conv->in[2] : -1;
    for (int i = 0; i < 4; i++)
        in[3 + i] = ch->bn >= 0 ? s->calls[ch->bn].in[1 + i] : -1;
    in[7] = ch->res;
    in[8] = weight_cache(s, ch);
    out->out[0] = ch->out;
    char err[512] = "";
    if (!out->def || out->def->parse(out->emitted, out->version, &out->params, err, sizeof err)) {
        enum dtrx_status st = rt_fail(DTRX_ERR_INTERNAL, "fusing node '%s': %s", conv->name,
                                      out->def ? err : "no FusedConv operator");
        rt_call_clear(out);
        return st;
    }
    return DTRX_OK;
}

static void count_inputs(struct dtrx_session *s, const struct rt_call *c, int delta)
{
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] >= 0)
            s->values[c->in[i]]->use.consumers += delta;
}

/* ---- the pass ---------------------------------------------------------------- */

int rt_fuse_applied(const struct dtrx_session *s)
{
    for (int k = 0; k < s->n_calls; k++)
        if (is_op(&s->calls[k], "dtrexec", "FusedConv"))
            return 1;
    return 0;
}

enum dtrx_status rt_fuse_inference(struct dtrx_session *s)
{
    if (!s->opts.optimize_inference || s->train.active || s->stats.runs < 1 || s->opts.budget_bytes
        || s->plan || !rt_device_on_host(s) || rt_fuse_applied(s))
        return DTRX_OK;
    int n = s->n_calls;
    uint8_t *claimed = calloc((size_t)n + 1, 1);
    int *chain_of_last = malloc(sizeof(int) * ((size_t)n + 1));
    struct fuse_chain *chains = malloc(sizeof *chains * ((size_t)n + 1));
    struct rt_call *calls = calloc((size_t)n + 1, sizeof *calls);
    enum dtrx_status st = DTRX_OK;
    if (!claimed || !chain_of_last || !chains || !calls) {
        st = rt_fail(DTRX_ERR_BUDGET, "out of host memory optimizing the graph");
        goto out;
    }
    int n_chains = 0;
    for (int k = 0; k < n; k++) {
        chain_of_last[k] = -1;
        struct fuse_chain *ch = &chains[n_chains];
        if (claimed[k] || !chain_find(s, k, claimed, ch))
            continue;
        int members[4] = { ch->conv, ch->bn, ch->add, ch->act };
        for (int i = 0; i < 4; i++)
            if (members[i] >= 0)
                claimed[members[i]] = 1;
        n_chains++;
    }
    if (!n_chains)
        goto out;
    for (int a = 0; a < n_chains; a++)
        chain_of_last[chains[a].last] = a;
    choose_layouts(s, chains, n_chains);

    /* The caches are persistent values: they must sit below base_values,
     * above which each run's subgraph instances are freed (as in
     * set_persistent, train.c). */
    rt_emitted_free(s);
    /* Build every fused call first, so that a failure leaves the calls as they were. */
    struct rt_call *fused = calloc((size_t)n_chains, sizeof *fused);
    if (!fused) {
        st = rt_fail(DTRX_ERR_BUDGET, "out of host memory optimizing the graph");
        goto out;
    }
    for (int a = 0; a < n_chains && !st; a++)
        st = fused_call(s, &chains[a], &fused[a]);
    if (st) {
        for (int a = 0; a < n_chains; a++)
            rt_call_clear(&fused[a]);
        free(fused);
        goto out;
    }
    int m = 0;
    for (int k = 0; k < n; k++) {
        if (!claimed[k]) {
            calls[m++] = s->calls[k];
            continue;
        }
        count_inputs(s, &s->calls[k], -1);
        rt_call_clear(&s->calls[k]);
        if (chain_of_last[k] >= 0) {
            calls[m] = fused[chain_of_last[k]];
            count_inputs(s, &calls[m], +1);
            m++;
        }
    }
    free(fused);
    s->train.base_values = s->n_values;
    free(s->calls);
    s->calls = calls;
    s->n_calls = m;
    calls = NULL;
out:
    free(claimed);
    free(chain_of_last);
    free(chains);
    free(calls);
    return st;
}
