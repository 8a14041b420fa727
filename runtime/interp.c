/* runtime/interp.c — runs the plan: calls in topological order, each value
 * released after its last consumer, graph outputs kept until the next run. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/runtime-impl.h"

void rt_value_destroy(struct dtrx_session *s, struct rt_value *v)
{
    /* Teardown: the elements of a sequence are destroyed on their own. */
    free(v->elems);
    v->elems = NULL;
    v->n_elems = 0;
    rt_value_release(s, v);
    free(v->owned_name);
    free(v);
}

int rt_persistent_new(struct dtrx_session *s, const struct tensor *t, const char *name)
{
    char *owned = strdup(name);
    int id = owned ? rt_value_new(s, owned, RT_VALUE_INITIALIZER) : -1;
    if (id < 0) {
        free(owned);
        rt_fail(DTRX_ERR_BUDGET, "out of host memory for '%s'", name);
        return -1;
    }
    struct rt_value *v = s->values[id];
    v->owned_name = owned;
    v->grad = -1;
    v->dt = DTR_NONE;
    v->made_in_step = rt_budget_active(s);
    v->t = *t;
    v->t.data = NULL;
    if (rt_value_alloc(s, v))
        return -1;
    if (rt_to_device(s, v->t.data, t->data, tensor_size_bytes(t)))
        return -1;
    if (s->trace_started)
        rt_trace_constant(s, v);   /* else the next run's START lists it */
    if (rt_budget_register(s, v))
        return -1;
    return id;
}

int rt_value_new(struct dtrx_session *s, const char *name, int kind)
{
    if (s->n_values == s->values_capacity) {
        int cap = s->values_capacity ? s->values_capacity * 2 : 256;
        struct rt_value **grown = realloc(s->values, sizeof *grown * (size_t)cap);
        if (!grown)
            return -1;
        s->values = grown;
        s->values_capacity = cap;
    }
    struct rt_value *v = calloc(1, sizeof *v);
    if (!v)
        return -1;
    v->name = name;
    v->kind = kind;
    v->dt = DTR_NONE;
    v->grad = -1;
    s->values[s->n_values] = v;
    return s->n_values++;
}

enum dtrx_status rt_value_alloc(struct dtrx_session *s, struct rt_value *v)
{
    size_t bytes = tensor_size_bytes(&v->t);
    struct rt_storage *st = calloc(1, sizeof *st);
    /* Under a budget only persistent tensors come here: they go high, and
     * one made during a step (drawn targets) may evict to fit. */
    void *data = !st ? NULL : rt_budget_active(s) ? rt_budget_scratch_alloc(s, bytes) : arena_alloc_high(&s->arena, bytes, NULL);
    if (!data) {
        free(st);
        /* While the plan is built everything in the arena is pinned. */
        size_t pinned = s->stats.pinned_bytes ? s->stats.pinned_bytes : s->arena.in_use_bytes;
        if (s->arena.budget_bytes)
            return rt_fail(DTRX_ERR_BUDGET,
                           "budget of %zu bytes is infeasible: '%s' needs %zu bytes that are never evicted, "
                           "with %zu bytes already pinned (weights, inputs, optimizer state); the budget must "
                           "be above %zu bytes plus the largest operator call",
                           s->arena.budget_bytes, v->name, arena_rounded(bytes), pinned, pinned + arena_rounded(bytes));
        return rt_fail(DTRX_ERR_BUDGET, "out of memory allocating %zu bytes for '%s' (%zu bytes in use)",
                       bytes, v->name, s->arena.in_use_bytes);
    }
    st->data = data;
    st->size_bytes = bytes;
    st->refs = 1;
    v->storage = st;
    v->t.data = data;
    return DTRX_OK;
}

size_t rt_value_bytes(const struct dtrx_session *s, const struct rt_value *v)
{
    size_t bytes = 0;
    for (int i = 0; i < v->n_elems; i++)
        bytes += rt_value_bytes(s, s->values[v->elems[i]]);
    if (!v->container && v->t.data)
        bytes += arena_rounded(tensor_size_bytes(&v->t));
    return bytes;
}

void rt_value_release(struct dtrx_session *s, struct rt_value *v)
{
    if (v->container) {
        /* A sequence or optional lets go of its elements. */
        int n = v->n_elems;
        int *elems = v->elems;
        v->n_elems = 0;
        v->elems = NULL;
        for (int i = 0; i < n; i++)
            rt_value_unhold(s, elems[i]);
        free(elems);
        return;
    }
    rt_trace_release(s, v);
    rt_budget_release(s, v);
    struct rt_storage *st = v->storage;
    if (!st)
        return;
    v->storage = NULL;
    v->t.data = NULL;
    if (--st->refs == 0) {
        arena_free(&s->arena, st->data);
        free(st);
    }
}

double rt_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Drops the results of the previous run so that every run starts from the
 * constants alone. Under a budget the whole DTR instance goes at once. */
static void release_intermediates(struct dtrx_session *s)
{
    if (rt_budget_active(s))
        for (int i = 0; i < s->n_values; i++)
            if (s->values[i]->kind == RT_VALUE_INTERMEDIATE)
                rt_trace_release(s, s->values[i]);
    rt_budget_end(s);
    for (int i = 0; i < s->n_values; i++)
        if (s->values[i]->kind == RT_VALUE_INTERMEDIATE)
            rt_value_release(s, s->values[i]);
}

/* Under a budget every run gets a fresh DTR instance with the persistent
 * tensors as its constants. */
static enum dtrx_status begin_run(struct dtrx_session *s)
{
    release_intermediates(s);
    rt_trace_annotate(s, "START");
    s->trace_started = 1;
    for (int i = 0; i < s->n_values; i++)
        if (s->values[i]->storage && !s->values[i]->trace_id)
            rt_trace_constant(s, s->values[i]);
    return rt_device_before_run(s) ? DTRX_ERR_INTERNAL : rt_budget_begin(s);
}

/* Host copies of the graph outputs of a budgeted run: reading them must not
 * pin anything in the arena. */
static enum dtrx_status copy_outputs(struct dtrx_session *s)
{
    if (!rt_budget_active(s) && rt_device_on_host(s))
        return DTRX_OK;
    if (!s->output_host && !(s->output_host = calloc((size_t)s->n_outputs + 1, sizeof *s->output_host)))
        return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
    for (int i = 0; i < s->n_outputs; i++) {
        struct rt_value *v = s->values[s->output_values[i]];
        if (v->container)
            continue;   /* sequences and optionals are read element by element */
        void *p = realloc(s->output_host[i], tensor_size_bytes(&v->t) + 1);
        if (!p)
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
        s->output_host[i] = p;
        enum dtrx_status st = rt_budget_read(s, v, p);
        if (st)
            return st;
    }
    return DTRX_OK;
}

enum dtrx_status rt_record_step(struct dtrx_session *s, double seconds, double loss)
{
    if (s->stats.runs == s->step_capacity) {
        int cap = s->step_capacity ? s->step_capacity * 2 : 16;
        double *p = realloc(s->stats.step_seconds, sizeof *p * (size_t)cap);
        if (p)
            s->stats.step_seconds = p;
        double *l = p ? realloc(s->stats.losses, sizeof *l * (size_t)cap) : NULL;
        if (!p || !l)
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory recording step times");
        s->stats.losses = l;
        s->step_capacity = cap;
    }
    s->stats.step_seconds[s->stats.runs] = seconds;
    s->stats.losses[s->stats.runs++] = loss;
    return DTRX_OK;
}

static void drop_if_unused(struct dtrx_session *s, struct rt_value *v)
{
    if (v->remaining <= 0 && v->kind == RT_VALUE_INTERMEDIATE && !v->is_output)
        rt_value_release(s, v);
}

void rt_value_hold(struct dtrx_session *s, int id)
{
    s->values[id]->remaining++;
}

void rt_value_unhold(struct dtrx_session *s, int id)
{
    struct rt_value *v = s->values[id];
    v->remaining--;
    drop_if_unused(s, v);
}

enum dtrx_status rt_tape_push(struct dtrx_session *s, struct rt_call *c)
{
    if (s->n_tape == s->tape_capacity) {
        int cap = s->tape_capacity ? s->tape_capacity * 2 : 256;
        struct rt_call **grown = realloc(s->tape, sizeof *grown * (size_t)cap);
        if (!grown)
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory recording the tape");
        s->tape = grown;
        s->tape_capacity = cap;
    }
    /* The first call reading a parameter: its gradient is final once the
     * backward pass has passed it (train.c, pin_final_grads). */
    for (int i = 0; s->train.first_use && i < c->n_in; i++)
        if (c->in[i] >= 0 && c->in[i] < s->train.n_first_use && s->train.first_use[c->in[i]] < 0)
            s->train.first_use[c->in[i]] = s->n_tape;
    s->tape[s->n_tape++] = c;
    return DTRX_OK;
}

/* In training, a call computed from a parameter will be differentiated: its
 * saved inputs and outputs are held (one extra count each) until its
 * gradient has been emitted — only those its gradient will read: Mul's dA
 * reads B and dB reads A, Div's dA reads B alone, so an activation scaled
 * by a constant (attention scores times 1/sqrt(d)) is not kept for a
 * gradient nobody wants. */
static void hold_saved(struct dtrx_session *s, struct rt_call *c)
{
    int from_param = 0, differentiated = 0;
    uint32_t need = 0;
    c->held_in = c->held_out = 0;
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] >= 0 && s->values[c->in[i]]->requires_grad &&
            rt_input_differentiable(c->def->domain, c->def->name, i)) {
            from_param = 1;
            need |= i < 32 ? 1u << i : 0;
        }
    /* No gradient flows through integers or bools: Shape(x) and what is
     * made of it (ConstantOfShape, masks) are constants of the step. */
    for (int i = 0; i < c->n_out; i++)
        if (c->out[i] >= 0) {
            struct rt_value *y = s->values[c->out[i]];
            y->requires_grad = from_param && !y->container && rt_dtype_is_float(y->t.dtype);
            differentiated |= y->requires_grad;
        }
    if (!differentiated)
        return;
    uint32_t saves_in = c->def->grad_saves_in;
    if (!c->def->domain[0] && !strcmp(c->def->name, "Mul"))
        saves_in &= (need & 2u ? 1u : 0) | (need & 1u ? 2u : 0);
    else if (!c->def->domain[0] && !strcmp(c->def->name, "Div"))
        saves_in &= 2u | (need & 2u ? 1u : 0);
    c->held_in = saves_in;
    c->held_out = c->def->grad_saves_out;
    for (int i = 0; i < c->n_in && i < 32; i++)
        if (c->in[i] >= 0 && (saves_in >> i & 1))
            s->values[c->in[i]]->remaining++;
    for (int i = 0; i < c->n_out && i < 32; i++)
        if (c->out[i] >= 0 && (c->def->grad_saves_out >> i & 1))
            s->values[c->out[i]]->remaining++;
}

uint64_t rt_call_seed(const struct dtrx_session *s, uint64_t index)
{
    uint64_t z = s->opts.seed * 0x9e3779b97f4a7c15ull + (uint64_t)s->train.step * 0xbf58476d1ce4e5b9ull + index;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

enum dtrx_status rt_run_call(struct dtrx_session *s, struct rt_call *c)
{
    enum dtrx_status st;
    int container_in = c->n_in > 0 && c->in[0] >= 0 && s->values[c->in[0]]->container;
    if (c->def->runtime || (container_in && !strcmp(c->def->name, "Identity"))) {
        st = rt_control_exec(s, c);
    } else {
        for (int i = 0; i < c->n_in; i++)
            if (c->in[i] >= 0 && s->values[c->in[i]]->container)
                return rt_fail(DTRX_ERR_INPUT, "node '%s' (%s): input '%s' is a %s, not a tensor", c->name,
                               c->def->name, s->values[c->in[i]]->name,
                               s->values[c->in[i]]->container == RT_SEQUENCE ? "sequence" : "optional");
        st = rt_call_exec(s, c);
        if (!st && s->taping) {
            hold_saved(s, c);
            st = rt_tape_push(s, c);
        }
    }
    if (st)
        return st;
    for (int i = 0; i < c->n_in; i++)
        if (c->in[i] >= 0)
            rt_value_unhold(s, c->in[i]);
    for (int i = 0; i < c->n_out; i++)
        if (c->out[i] >= 0)
            drop_if_unused(s, s->values[c->out[i]]);
    return DTRX_OK;
}

enum dtrx_status rt_forward(struct dtrx_session *s, int training)
{
    /* Calls and values a previous run instantiated from subgraphs go first. */
    if (!training)
        rt_emitted_free(s);
    for (int i = 0; i < s->n_inputs; i++)
        if (!s->values[s->input_values[i]]->storage && !s->input_set[i])
            return rt_fail(DTRX_ERR_INPUT, "graph input '%s' has no value (give it with --input)",
                           s->values[s->input_values[i]]->name);
    enum dtrx_status st = begin_run(s);
    if (st)
        return st;
    for (int i = 0; i < s->n_values; i++)
        s->values[i]->remaining = s->values[i]->consumers;
    s->env.training = training;
    s->taping = training;
    s->n_tape = 0;
    for (int i = 0; training && s->train.first_use && i < s->train.n_first_use; i++)
        s->train.first_use[i] = -1;

    for (int k = 0; k < s->n_calls && !st; k++) {
        struct rt_call *c = &s->calls[k];
        c->seed = rt_call_seed(s, (uint64_t)k);
        st = rt_run_call(s, c);
    }
    if (!st)
        st = copy_outputs(s);
    if (st)
        release_intermediates(s);
    return st;
}

enum dtrx_status dtrx_session_run(struct dtrx_session *s)
{
    enum dtrx_status st = rt_fuse_inference(s);
    if (st)
        return st;
    double compute_before = s->stats.total_compute;
    double t0 = rt_now_seconds();
    st = rt_forward(s, s->train.active);
    s->taping = 0;
    if (st)
        return st;
    s->stats.baseline_compute = s->stats.total_compute - compute_before;
    return rt_record_step(s, rt_now_seconds() - t0, 0);
}
