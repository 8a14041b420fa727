/* runtime/emit.c — calls the runtime creates itself (loss, gradients,
 * optimizer steps): each is built like a model node, from attributes parsed
 * by the op's own parse(), and executed through rt_call_exec like any other.
 * Emitted calls and their values live until the end of the training step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/arena.h"
#include "runtime/budget.h"
#include "runtime/call.h"
#include "runtime/emit.h"
#include "runtime/exec.h"
#include "runtime/memory.h"
#include "runtime/params.h"
#include "runtime/run.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/trace.h"
#include "runtime/values.h"

#define EMIT_OPSET 25
#define EMIT_DOMAIN "dtrexec"

static void free_attrs(struct onnx_attr *attrs, int n)
{
    for (int i = 0; attrs && i < n; i++) {
        free(attrs[i].name);
        free(attrs[i].s);
        free(attrs[i].ints);
        free(attrs[i].floats);
        for (int k = 0; attrs[i].strings && k < attrs[i].n; k++)
            free(attrs[i].strings[k]);
        free(attrs[i].strings);
    }
    free(attrs);
}

/* Emitted nodes keep their own copy of the attributes, so that a gradient
 * emitter reading g->node sees them as for a model node. Tensor and graph
 * attributes are not copied: no emitter passes them. */
static struct onnx_attr *copy_attrs(const struct onnx_attr *attrs, int n)
{
    struct onnx_attr *out = calloc((size_t)n + 1, sizeof *out);
    for (int i = 0; out && i < n; i++) {
        const struct onnx_attr *a = &attrs[i];
        struct onnx_attr *c = &out[i];
        c->type = a->type;
        c->f = a->f;
        c->i = a->i;
        c->n = a->n;
        c->name = strdup(a->name ? a->name : "");
        if (a->s)
            c->s = strdup(a->s);
        c->s_len = a->s_len;
        if (a->n && a->ints && (c->ints = malloc(sizeof *c->ints * (size_t)a->n)))
            memcpy(c->ints, a->ints, sizeof *c->ints * (size_t)a->n);
        if (a->n && a->floats && (c->floats = malloc(sizeof *c->floats * (size_t)a->n)))
            memcpy(c->floats, a->floats, sizeof *c->floats * (size_t)a->n);
        int strings_ok = 1;
        if (a->n && a->strings && (c->strings = calloc((size_t)a->n, sizeof *c->strings)))
            for (int k = 0; k < a->n; k++)
                strings_ok &= (c->strings[k] = strdup(a->strings[k] ? a->strings[k] : "")) != NULL;
        if (!c->name || (a->s && !c->s) || (a->n && a->ints && !c->ints) || (a->n && a->floats && !c->floats) ||
            (a->n && a->strings && !c->strings) || !strings_ok) {
            free_attrs(out, i + 1);
            return NULL;
        }
    }
    return out;
}

static void free_node(struct onnx_node *n)
{
    if (!n)
        return;
    free_attrs(n->attrs, n->n_attrs);
    free(n->op_type);
    free(n->name);
    free(n->inputs);
    free(n->outputs);
    free(n);
}

void rt_call_clear(struct rt_call *c)
{
    if (c->params) {
        if (c->def->params_free)
            c->def->params_free(c->params);
        else
            free(c->params);
    }
    free(c->in);
    free(c->out);
    free_node(c->emitted);
    free(c->owned_name);
}

static void free_call(struct rt_call *c)
{
    rt_call_clear(c);
    free(c);
}

int rt_track_call(struct dtrx_session *s, struct rt_call *c)
{
    struct rt_train *t = &s->train;
    if (t->n_emitted == t->emitted_capacity) {
        int cap = t->emitted_capacity ? t->emitted_capacity * 2 : 256;
        struct rt_call **grown = realloc(t->emitted, sizeof *grown * (size_t)cap);
        if (!grown)
            return -1;
        t->emitted = grown;
        t->emitted_capacity = cap;
    }
    t->emitted[t->n_emitted++] = c;
    return 0;
}

static int named_value(struct dtrx_session *s, const char *base, int k)
{
    char name[512];
    snprintf(name, sizeof name, "%s:%d", base, k);
    char *owned = strdup(name);
    int id = owned ? rt_value_new(s, owned, RT_VALUE_INTERMEDIATE) : -1;
    if (id < 0) {
        free(owned);
        return -1;
    }
    s->values[id]->owned_name = owned;
    s->values[id]->train.grad = -1;
    return id;
}

int rt_constant(struct dtrx_session *s, const struct tensor *t, const char *tag)
{
    int id = named_value(s, tag ? tag : "constant", s->n_values);
    if (id < 0)
        return -1;
    struct rt_value *v = s->values[id];
    v->t = *t;
    v->t.data = NULL;
    if (s->memory->constant(s, v, t->data))
        return -1;
    rt_trace_constant(s, v);
    return id;
}

enum dtrx_status rt_emit_build(struct dtrx_session *s, const char *op, const struct onnx_attr *attrs, int n_attrs,
                               int n_in, const int *in, int n_out, int *out, const char *tag,
                               struct rt_call **call)
{
    int version = 0;
    const char *domain = "";
    const struct op_def *def = op_registry_find("", op, EMIT_OPSET, &version);
    if (!def) {
        domain = EMIT_DOMAIN;
        def = op_registry_find(EMIT_DOMAIN, op, EMIT_OPSET, &version);
    }
    if (!def)
        return rt_fail(DTRX_ERR_INPUT, "%s: operator %s is not implemented", tag ? tag : "runtime", op);

    struct rt_call *c = calloc(1, sizeof *c);
    struct onnx_node *n = calloc(1, sizeof *n);
    char name[512];
    snprintf(name, sizeof name, "%s/%s#%d", tag ? tag : "runtime", op, s->train.n_emitted);
    if (c)
        c->emitted = n;
    if (!c || !n || !(n->name = strdup(name)) ||
        !(n->inputs = calloc((size_t)n_in + 1, sizeof(char *))) ||
        !(n->outputs = calloc((size_t)n_out + 1, sizeof(char *))) ||
        !(c->in = malloc(sizeof(int) * (size_t)(n_in + 1))) ||
        !(c->out = malloc(sizeof(int) * (size_t)(n_out + 1))) || rt_track_call(s, c)) {
        if (c)
            free_call(c);
        else
            free(n);
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory emitting %s", op);
    }
    n->op_type = strdup(op);
    n->domain = (char *)domain;
    n->n_inputs = n_in;
    n->n_outputs = n_out;
    n->attrs = copy_attrs(attrs, n_attrs);
    if (!n->attrs || !n->op_type)
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory emitting %s", op);
    n->n_attrs = n_attrs;
    for (int i = 0; i < n_in; i++)
        n->inputs[i] = in[i] < 0 ? "" : (char *)s->values[in[i]]->name;
    c->def = def;
    c->version = version;
    c->name = n->name;
    c->origin = tag ? tag : "runtime";
    c->n_in = n_in;
    c->n_out = n_out;
    if (n_in)
        memcpy(c->in, in, sizeof(int) * (size_t)n_in);
    for (int i = 0; i < n_out; i++) {
        c->out[i] = out && out[i] >= 0 ? out[i] : named_value(s, n->name, i);
        if (c->out[i] < 0)
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory emitting %s", op);
        n->outputs[i] = (char *)s->values[c->out[i]]->name;
        if (out)
            out[i] = c->out[i];
    }
    if (def->parse) {
        char err[512] = "";
        if (def->parse(n, version, &c->params, err, sizeof err))
            return rt_fail(DTRX_ERR_INTERNAL, "emitted node '%s' (%s): %s", n->name, op, err);
    }
    c->seed = rt_call_seed(s, (uint64_t)s->n_calls + (uint64_t)s->train.n_emitted);
    *call = c;
    return DTRX_OK;
}

static enum dtrx_status emit(struct dtrx_session *s, const char *op, const struct onnx_attr *attrs,
                             int n_attrs, int n_in, const int *in, int n_out, int *out, const char *tag, int in_place)
{
    struct rt_call *c = NULL;
    for (int i = 0; out && i < n_out; i++)
        out[i] = -1;
    enum dtrx_status st = rt_emit_build(s, op, attrs, n_attrs, n_in, in, n_out, out, tag, &c);
    if (!st) {
        c->in_place = (uint8_t)(in_place && c->def->in_place && n_out >= 1 && n_in >= 1);
        st = rt_call_exec(s, c);
    }
    if (!st && s->taping)
        st = rt_tape_push(s, c);
    if (st)
        return st;
    /* A taped call (the loss) holds what its gradient reads, as the model's
     * calls do (run.c, hold_saved), until its gradient has run (train.c,
     * release_saved): the graph outputs the loss reads need not stay for
     * any other reason. */
    for (int i = 0; s->taping && i < n_in && i < 32; i++)
        if (in[i] >= 0 && (c->def->grad_saves_in >> i & 1))
            s->values[in[i]]->use.remaining++;
    for (int i = 0; s->taping && i < n_out && i < 32; i++)
        if (c->out[i] >= 0 && (c->def->grad_saves_out >> i & 1))
            s->values[c->out[i]]->use.remaining++;
    /* The loss is differentiated like the model: its outputs need gradients
     * when any input does. */
    int requires_grad = 0;
    for (int i = 0; i < n_in; i++)
        requires_grad |= in[i] >= 0 && s->values[in[i]]->train.requires_grad;
    for (int i = 0; i < n_out; i++)
        s->values[c->out[i]]->train.requires_grad = requires_grad && rt_dtype_is_float(s->values[c->out[i]]->t.dtype);
    return DTRX_OK;
}

enum dtrx_status rt_emit(struct dtrx_session *s, const char *op, const struct onnx_attr *attrs,
                         int n_attrs, int n_in, const int *in, int n_out, int *out, const char *tag)
{
    return emit(s, op, attrs, n_attrs, n_in, in, n_out, out, tag, 0);
}

enum dtrx_status rt_emit_in_place(struct dtrx_session *s, const char *op, const struct onnx_attr *attrs,
                                  int n_attrs, int n_in, const int *in, int n_out, int *out, const char *tag)
{
    return emit(s, op, attrs, n_attrs, n_in, in, n_out, out, tag, 1);
}

/* Frees what the step emitted: calls, and values from base_values on. */
/* A persistent value made during a step went into the highest hole that
 * fitted then, which may lie among the step's activations; left there it
 * would split the space activations and compaction use in every later
 * step. Now that the step's buffers are gone it moves up beside the
 * other persistent blocks, where a hole has opened. */
static void move_high(struct dtrx_session *s, struct rt_value *v)
{
    struct rt_storage *st = v->mem.storage;
    if (!s->arena.budget_bytes || !st || st->refs != 1 || !st->data)
        return;
    void *p = arena_alloc_high(&s->arena, st->size_bytes, NULL);
    if (!p)
        return;
    if ((char *)p < (char *)st->data ||
        s->arena.backend->copy(s->arena.backend->ctx, p, st->data, st->size_bytes)) {
        arena_free(&s->arena, p);
        return;
    }
    arena_free(&s->arena, st->data);
    st->data = v->t.data = p;
}

void rt_emitted_free(struct dtrx_session *s)
{
    struct rt_train *t = &s->train;
    if (t->n_emitted || s->n_values > t->base_values) {
        /* The step is over: its DTR instance goes first, all at once. */
        for (int i = 0; rt_budget_active(s) && i < s->n_values; i++)
            if (s->values[i]->kind == RT_VALUE_INTERMEDIATE)
                rt_trace_release(s, s->values[i]);
        rt_budget_end(s);
    }
    for (int i = 0; i < t->n_emitted; i++)
        free_call(t->emitted[i]);
    t->n_emitted = 0;
    /* Persistent values made during the step (drawn targets) stay: they move
     * down to base_values, and the slot naming them follows. */
    int keep = t->base_values;
    for (int i = t->base_values; i < s->n_values; i++) {
        struct rt_value *v = s->values[i];
        if (v->kind != RT_VALUE_INITIALIZER) {
            rt_value_destroy(s, v);
            continue;
        }
        if (t->labels == i)
            t->labels = keep;
        s->values[keep++] = v;
    }
    t->base_values = keep;
    if (s->n_values > keep)
        s->n_values = keep;
    for (int i = 0; i < s->n_values; i++)
        if (s->values[i]->mem.made_in_step && !rt_budget_active(s)) {
            move_high(s, s->values[i]);
            s->values[i]->mem.made_in_step = 0;
        }
}
