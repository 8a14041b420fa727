/* runtime/interp.c — runs the plan: calls in topological order, each value
 * released after its last consumer, graph outputs kept until the next run. */
#include <stdlib.h>
#include <string.h>

#include "runtime/budget.h"
#include "runtime/call.h"
#include "runtime/clock.h"
#include "runtime/device.h"
#include "runtime/emit.h"
#include "runtime/fuse.h"
#include "runtime/interp.h"
#include "runtime/memory.h"
#include "runtime/run.h"
#include "runtime/session.h"
#include "runtime/status.h"
#include "runtime/trace.h"
#include "runtime/values.h"

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
        if (s->values[i]->mem.storage && !s->values[i]->marks.trace_id)
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
        if (v->list.container)
            continue;   /* sequences and optionals are read element by element */
        void *p = realloc(s->output_host[i], tensor_size_bytes(&v->t) + 1);
        if (!p)
            return rt_fail(DTRX_ERR_BUDGET, "out of host memory");
        s->output_host[i] = p;
        enum dtrx_status st = s->memory->read(s, v, p);
        if (st)
            return st;
    }
    return DTRX_OK;
}

/* A graph output of another element type than the model declares is a
 * broken model, as onnxruntime holds at load; a half output of a widened
 * model is computed in float and narrowed when read. A declared shape that
 * differs is only a note (onnxruntime warns and uses the computed one). */
static enum dtrx_status check_output_types(const struct dtrx_session *s)
{
    for (int i = 0; i < s->n_outputs; i++) {
        const struct rt_value *v = s->values[s->output_values[i]];
        const struct dtrx_value_desc *d = &s->output_desc[i];
        if (v->list.container || d->kind != DTRX_VALUE_TENSOR || !d->dtype)
            continue;
        int want = s->output_half[i] ? ONNX_DTYPE_FLOAT : d->dtype;
        if (v->t.dtype != want)
            return rt_fail(DTRX_ERR_INPUT, "graph output '%s' is declared %s, but the graph computes %s",
                           d->name, onnx_dtype_name(d->dtype), onnx_dtype_name(v->t.dtype));
    }
    return DTRX_OK;
}

void rt_release_copied_outputs(struct dtrx_session *s)
{
    if (!rt_budget_active(s) || s->plan || s->recorder)
        return;
    for (int i = 0; i < s->n_outputs; i++) {
        struct rt_value *v = s->values[s->output_values[i]];
        if (v->list.container || !v->use.kept)
            continue;
        v->use.kept = 0;
        rt_value_drop_if_unused(s, v);
    }
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

enum dtrx_status rt_forward(struct dtrx_session *s, int training)
{
    /* Calls and values a previous run instantiated from subgraphs go first. */
    if (!training)
        rt_emitted_free(s);
    /* Training: the exporter's decomposed GELU as one call (fuse.c). */
    if (training) {
        enum dtrx_status fst = rt_fuse_train(s);
        if (fst)
            return fst;
    }
    for (int i = 0; i < s->n_inputs; i++)
        if (!s->values[s->input_values[i]]->mem.storage && !s->input_set[i])
            return rt_fail(DTRX_ERR_INPUT, "graph input '%s' has no value (give it with --input)",
                           s->values[s->input_values[i]]->name);
    enum dtrx_status st = begin_run(s);
    if (st)
        return st;
    for (int i = 0; i < s->n_values; i++) {
        s->values[i]->use.remaining = s->values[i]->use.consumers;
        s->values[i]->use.kept = s->values[i]->use.is_output;
    }
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
        st = check_output_types(s);
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
