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

/* ---- training: the exporter's decomposed GELU --------------------------------
 *
 * PyTorch's TorchScript exporter writes nn.GELU (erf form) at opsets below 20
 * as Div(x, sqrt 2) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5). Taped as
 * five calls, the backward pass keeps x, x/sqrt 2 (Erf's gradient) and
 * erf(.)+1 (Mul's) alive through the whole forward pass, where PyTorch's
 * GELU saves x alone. The chain becomes one Gelu call (ops/unary.c; its
 * gradient reads x only), computing the same function. Only when each
 * intermediate is read by the next link alone, is no graph output, and the
 * constants are Constant nodes' scalars with exactly those values (within
 * float rounding of sqrt 2). */

/* The float scalar a Constant call writes into value v; 0 when v is not one. */
static int const_scalar(const struct dtrx_session *s, const int *producer, int v, double *out)
{
    if (v < 0 || producer[v] < 0)
        return 0;
    const struct rt_call *c = &s->calls[producer[v]];
    if (!c->node || !is_op(c, "", "Constant"))
        return 0;
    for (int i = 0; i < c->node->n_attrs; i++) {
        const struct onnx_attr *a = &c->node->attrs[i];
        if (!strcmp(a->name, "value_float")) {
            *out = a->f;
            return 1;
        }
        if (strcmp(a->name, "value") || !a->t || onnx_tensor_numel(a->t) != 1 || !a->t->data)
            continue;
        if (a->t->dtype == ONNX_DTYPE_FLOAT) {
            float f;
            memcpy(&f, a->t->data, sizeof f);
            *out = f;
            return 1;
        }
        if (a->t->dtype == ONNX_DTYPE_DOUBLE) {
            memcpy(out, a->t->data, sizeof *out);
            return 1;
        }
    }
    return 0;
}

/* The single model call reading value v (and it no graph output), or -1. */
static int sole_reader(const struct dtrx_session *s, const int *reader, int v)
{
    if (v < 0 || s->values[v]->use.is_output || s->values[v]->use.consumers != 1)
        return -1;
    return reader[v];
}

/* The other input of a two-input call than value v, -1 when v is not one of them. */
static int other_input(const struct rt_call *c, int v)
{
    if (c->n_in != 2)
        return -1;
    return c->in[0] == v ? c->in[1] : c->in[1] == v ? c->in[0] : -1;
}

static int near(double a, double b) { return a > b - 1e-6 * b && a < b + 1e-6 * b; }

/* The chain ending calls[k] = Div: fills links[5] (Div, Erf, Add, Mul, Mul) and *x. */
static int gelu_chain(const struct dtrx_session *s, const int *producer, const int *reader, int k,
                      int links[5], int *x)
{
    const struct rt_call *div = &s->calls[k];
    double c;
    if (!is_op(div, "", "Div") || div->n_in != 2 || div->n_out != 1 || div->in[0] < 0
        || !const_scalar(s, producer, div->in[1], &c) || !near(c, 1.4142135623730951))
        return 0;
    *x = div->in[0];
    int erf = sole_reader(s, reader, div->out[0]);
    if (erf < 0 || !is_op(&s->calls[erf], "", "Erf") || s->calls[erf].n_out != 1)
        return 0;
    int add = sole_reader(s, reader, s->calls[erf].out[0]);
    if (add < 0 || !is_op(&s->calls[add], "", "Add") || s->calls[add].n_out != 1
        || !const_scalar(s, producer, other_input(&s->calls[add], s->calls[erf].out[0]), &c) || c != 1.0)
        return 0;
    int mul = sole_reader(s, reader, s->calls[add].out[0]);
    if (mul < 0 || !is_op(&s->calls[mul], "", "Mul") || s->calls[mul].n_out != 1
        || other_input(&s->calls[mul], s->calls[add].out[0]) != *x)
        return 0;
    int half = sole_reader(s, reader, s->calls[mul].out[0]);
    if (half < 0 || !is_op(&s->calls[half], "", "Mul") || s->calls[half].n_out != 1
        || !const_scalar(s, producer, other_input(&s->calls[half], s->calls[mul].out[0]), &c) || c != 0.5)
        return 0;
    links[0] = k, links[1] = erf, links[2] = add, links[3] = mul, links[4] = half;
    /* Calls run in order: every link after the previous one, x before the Div. */
    for (int i = 1; i < 5; i++)
        if (links[i] <= links[i - 1])
            return 0;
    return 1;
}

/* Dropout of ratio 0 (transformers' and timm's dropout layers set to 0 for
 * training, exported as Dropout with a Constant ratio of 0): its output is
 * its input, yet as a call it copies it, and the copy is what the next
 * MatMul saves while the input is saved too (Softmax's gradient reads its
 * output). It becomes an Identity, a view of x; only when its mask output
 * is absent or read by nothing. */
static int dropout_nothing(const struct dtrx_session *s, const int *producer, int k, int *x)
{
    const struct rt_call *c = &s->calls[k];
    double ratio;
    if (!is_op(c, "", "Dropout") || c->n_in < 2 || c->in[0] < 0 || c->n_out < 1 || c->out[0] < 0
        || !const_scalar(s, producer, c->in[1], &ratio) || ratio != 0.0)
        return 0;
    for (int i = 1; i < c->n_out; i++)
        if (c->out[i] >= 0 && (s->values[c->out[i]]->use.consumers || s->values[c->out[i]]->use.is_output))
            return 0;
    *x = c->in[0];
    return 1;
}

/* A one-input call of op (ONNX domain, at `version`) reading x and writing last's first output. */
static enum dtrx_status single_call(struct dtrx_session *s, const struct rt_call *last, const char *op, int version,
                                    int x, struct rt_call *out)
{
    memset(out, 0, sizeof *out);
    struct onnx_node *n = calloc(1, sizeof *n);
    out->emitted = n;
    out->in = malloc(sizeof(int));
    out->out = malloc(sizeof(int));
    if (n) {
        n->domain = "";
        n->name = strdup(last->name);
        n->op_type = strdup(op);
        n->inputs = malloc(sizeof(char *));
        n->outputs = malloc(sizeof(char *));
    }
    if (!n || !n->name || !n->op_type || !n->inputs || !n->outputs || !out->in || !out->out) {
        rt_call_clear(out);
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory fusing node '%s'", last->name);
    }
    n->n_inputs = n->n_outputs = 1;
    n->inputs[0] = (char *)s->values[x]->name;
    n->outputs[0] = (char *)s->values[last->out[0]]->name;
    out->def = op_registry_find("", op, version, &out->version);
    out->node = n;
    out->name = n->name;
    out->origin = "fuse";
    out->n_in = out->n_out = 1;
    out->in[0] = x;
    out->out[0] = last->out[0];
    char err[512] = "";
    if (!out->def || (out->def->parse && out->def->parse(n, out->version, &out->params, err, sizeof err))) {
        enum dtrx_status st = rt_fail(DTRX_ERR_INTERNAL, "fusing node '%s': %s", last->name,
                                      out->def ? err : "no such operator");
        rt_call_clear(out);
        return st;
    }
    return DTRX_OK;
}

int rt_fuse_train_count(const struct dtrx_session *s, const char *op)
{
    int n = 0;
    for (int k = 0; k < s->n_calls; k++)
        n += s->calls[k].origin && !strcmp(s->calls[k].origin, "fuse") && is_op(&s->calls[k], "", op);
    return n;
}

enum dtrx_status rt_fuse_train(struct dtrx_session *s)
{
    /* Before the first taped step only: the tape points into s->calls, and a
     * plan's schedule is by call index. */
    if (s->n_tape || s->plan || !rt_device_on_host(s))
        return DTRX_OK;
    int n = s->n_calls;
    int *producer = malloc(sizeof(int) * ((size_t)s->n_values + 1));
    int *reader = malloc(sizeof(int) * ((size_t)s->n_values + 1));
    int *gelu_of_last = malloc(sizeof(int) * ((size_t)n + 1));
    int *xs = malloc(sizeof(int) * ((size_t)n + 1));
    uint8_t *claimed = calloc((size_t)n + 1, 1);
    struct rt_call *fused = NULL, *calls = NULL;
    enum dtrx_status st = DTRX_OK;
    if (!producer || !reader || !gelu_of_last || !xs || !claimed) {
        st = rt_fail(DTRX_ERR_BUDGET, "out of host memory optimizing the graph");
        goto out;
    }
    for (int v = 0; v < s->n_values; v++)
        producer[v] = reader[v] = -1;
    for (int k = 0; k < n; k++) {
        const struct rt_call *c = &s->calls[k];
        gelu_of_last[k] = -1;
        for (int i = 0; i < c->n_out; i++)
            if (c->out[i] >= 0)
                producer[c->out[i]] = k;
        for (int i = 0; i < c->n_in; i++)
            if (c->in[i] >= 0)
                reader[c->in[i]] = k;
    }
    int n_chains = 0;
    int (*links)[5] = malloc(sizeof *links * ((size_t)n + 1));
    if (!links) {
        st = rt_fail(DTRX_ERR_BUDGET, "out of host memory optimizing the graph");
        goto out;
    }
    for (int k = 0; k < n; k++) {
        int x;
        if (!claimed[k] && dropout_nothing(s, producer, k, &x)) {
            links[n_chains][0] = links[n_chains][1] = links[n_chains][2] = links[n_chains][3] = -1;
            links[n_chains][4] = k;
            claimed[k] = 1;
            xs[n_chains] = x;
            gelu_of_last[k] = n_chains;
            n_chains++;
        } else if (!claimed[k] && gelu_chain(s, producer, reader, k, links[n_chains], &x)) {
            for (int i = 0; i < 5; i++)
                claimed[links[n_chains][i]] = 1;
            xs[n_chains] = x;
            gelu_of_last[links[n_chains][4]] = n_chains;
            n_chains++;
        }
    }
    if (!n_chains) {
        free(links);
        goto out;
    }
    fused = calloc((size_t)n_chains, sizeof *fused);
    calls = calloc((size_t)n + 1, sizeof *calls);
    if (!fused || !calls) {
        free(links);
        st = rt_fail(DTRX_ERR_BUDGET, "out of host memory optimizing the graph");
        goto out;
    }
    for (int a = 0; a < n_chains && !st; a++)
        st = links[a][1] < 0 ? single_call(s, &s->calls[links[a][4]], "Identity", 16, xs[a], &fused[a])
                             : single_call(s, &s->calls[links[a][4]], "Gelu", 20, xs[a], &fused[a]);
    free(links);
    if (st) {
        for (int a = 0; a < n_chains; a++)
            rt_call_clear(&fused[a]);
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
        if (gelu_of_last[k] >= 0) {
            calls[m] = fused[gelu_of_last[k]];
            count_inputs(s, &calls[m], +1);
            m++;
        }
    }
    free(s->calls);
    s->calls = calls;
    s->n_calls = m;
    calls = NULL;
out:
    free(producer);
    free(reader);
    free(gelu_of_last);
    free(xs);
    free(claimed);
    free(fused);
    free(calls);
    return st;
}
